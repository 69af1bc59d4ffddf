//! Replication, Redis 7.0's protocol: an engine is a primary ("master")
//! that any number of replicas follow, or the replica of one.
//!
//! - **The stream** (`backlog.rs`): the records the append-only file gets,
//!   as RESP commands; its offset is master_repl_offset. A replica passes
//!   its primary's stream on to its own replicas byte for byte, so a chain
//!   shares one history and one offset.
//! - **History ids**: `replid` names the history the stream belongs to;
//!   `replid2` and `second_offset` the one before it, up to where they
//!   agree (a promoted replica still serves partial resynchronizations of
//!   its old primary's replicas).
//! - **Replicas of this engine** ([`Replica`]): a connection that sent
//!   PSYNC or SYNC becomes the feeder of one (in the server). A partial
//!   resynchronization starts it at its offset in the backlog; a full one
//!   waits for a snapshot (`sync.rs`) that writes the keyspace to disk or
//!   straight to the replicas' sockets, without a fork and without a copy
//!   of the data (see persist/snapshot.rs), and starts its stream at the
//!   snapshot's instant.
//! - **The primary of this engine**: REPLICAOF records it here; the
//!   server's link thread connects to it, loads its snapshot and applies
//!   its stream through a session flagged as the master client.
//!
//! The engine knows no socket: the server does the I/O, and calls in here
//! for every decision.

pub mod backlog;
pub mod failover;
mod role;
pub mod sync;

pub use role::{info, restore_on_start, set_master, unset_master};

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, ReentrantMutex, ReentrantMutexGuard};

use crate::client::ClientInfo;
use crate::util::time::now_ms;

/// The id of no history (master_replid2 before any promotion).
pub const NULL_ID: &str = "0000000000000000000000000000000000000000";

/// A fresh history id: 40 random hex digits.
pub fn random_id() -> String {
    (0..40)
        .map(|_| std::char::from_digit(fastrand::u32(0..16), 16).unwrap())
        .collect()
}

/// The histories this engine's stream belongs to.
#[derive(Clone, Debug)]
pub struct Ids {
    pub replid: String,
    pub replid2: String,
    /// The offset up to which `replid2`'s history is this one's (+1, as
    /// Redis's second_replid_offset); -1 when there is none.
    pub second_offset: i64,
}

/// A replica's state, as INFO shows it.
pub mod state {
    /// Waits for a full synchronization's snapshot to start.
    pub const WAIT_BGSAVE_START: u8 = 0;
    /// Its snapshot is being written (to disk, or to its socket).
    pub const WAIT_BGSAVE_END: u8 = 1;
    /// The snapshot file is being sent to it.
    pub const SEND_BULK: u8 = 2;
    /// It follows the stream.
    pub const ONLINE: u8 = 3;

    pub fn name(s: u8) -> &'static str {
        match s {
            WAIT_BGSAVE_START | WAIT_BGSAVE_END => "wait_bgsave",
            SEND_BULK => "send_bulk",
            _ => "online",
        }
    }
}

/// What REPLCONF told about a replica before its PSYNC.
#[derive(Clone, Debug, Default)]
pub struct ReplConf {
    pub listening_port: u16,
    pub ip: Option<String>,
    /// It reads a snapshot delimited by an EOF mark (diskless).
    pub capa_eof: bool,
    /// It understands +CONTINUE with a new id.
    pub capa_psync2: bool,
    /// It wants the snapshot only, not the stream (redis-cli --rdb).
    pub rdb_only: bool,
    /// The snapshot leaves out the keys / the functions (rdb-filter-only).
    pub exclude_data: bool,
    pub exclude_functions: bool,
}

/// How a full synchronization's snapshot reaches a replica.
pub enum Transfer {
    /// Written to its socket as it is produced (`$EOF:<mark>`, the
    /// snapshot, the mark): chunks, then the end (Ok) or a failure (Err).
    Socket {
        mark: [u8; 40],
        chunks: tokio::sync::mpsc::Receiver<Result<bytes::Bytes, ()>>,
    },
    /// Saved to dump.rdb first, then sent as `$<len>` and the file: the
    /// save's result when it ends.
    Disk {
        done: tokio::sync::watch::Receiver<Option<bool>>,
    },
    /// Made already (a snapshot of functions only, or of nothing, for
    /// rdb-filter-only): sent as a diskless one.
    Inline(Vec<u8>),
}

/// The start of a replica's full synchronization.
pub struct SyncStart {
    pub replid: String,
    /// The stream offset at the snapshot's instant: the replica's stream
    /// continues after it.
    pub offset: u64,
    pub transfer: Transfer,
}

/// A replica of this engine (Redis's client with CLIENT_SLAVE).
pub struct Replica {
    pub info: Arc<ClientInfo>,
    pub reader: Arc<backlog::Reader>,
    pub conf: ReplConf,
    pub state: AtomicU8,
    /// The offset it last acknowledged (REPLCONF ACK), and when (Unix ms).
    pub ack: AtomicU64,
    /// The offset its append-only file has on disk, as its REPLCONF ACK's
    /// FACK said (Redis 7.2; WAITAOF).
    pub fack: AtomicU64,
    pub ack_ms: AtomicU64,
    /// Sent SYNC rather than PSYNC: no +FULLRESYNC line.
    pub old_protocol: bool,
    /// When it started waiting for a snapshot (Unix ms).
    pub wait_since_ms: u64,
    /// Set when its full synchronization starts.
    pub start: Mutex<Option<SyncStart>>,
    /// The snapshot it waits for failed: the connection closes.
    pub failed: AtomicBool,
    /// REPLCONF ACKs received: after a diskless transfer the stream
    /// starts with the first one (the replica has found the end of the
    /// snapshot; nothing may follow its mark before).
    pub acks: AtomicU64,
}

impl Replica {
    pub fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// Its address as INFO and ROLE show it: what it announced, or its
    /// connection's.
    pub fn ip(&self) -> String {
        self.conf.ip.clone().unwrap_or_else(|| {
            self.info
                .addr
                .rsplit_once(':')
                .map(|(ip, _)| ip.trim_start_matches('[').trim_end_matches(']').to_string())
                .unwrap_or_default()
        })
    }
}

/// What PSYNC decided for a replica: the connection takes it from there.
pub struct Attach {
    pub replica: Arc<Replica>,
    /// A partial resynchronization: +CONTINUE was answered and the stream
    /// continues after this offset. None: a full one, which waits for
    /// `Replica::start`.
    pub continue_from: Option<u64>,
}

/// The state of the link to this engine's primary (replica side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// Not connected (waiting to connect again).
    Down,
    /// Connecting.
    Connecting,
    /// Connected, in the handshake (PING, AUTH, REPLCONF, PSYNC).
    Handshake,
    /// Receiving the primary's snapshot.
    Transfer,
    /// Following the stream.
    Up,
}

/// The replica side's view of its primary (INFO's master_* fields).
#[derive(Clone)]
pub struct Link {
    pub state: LinkState,
    pub last_io_ms: u64,
    /// When the link went down (0: never up since REPLICAOF).
    pub down_since_ms: u64,
    pub transfer_size: i64,
    pub transfer_read: u64,
    pub transfer_last_io_ms: u64,
    /// The master client, while the link is up (CLIENT KILL TYPE MASTER
    /// reaches it through the registry; REPLICAOF kills it here).
    pub client: Option<Arc<ClientInfo>>,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            state: LinkState::Down,
            last_io_ms: 0,
            down_since_ms: 0,
            transfer_size: -1,
            transfer_read: 0,
            transfer_last_io_ms: 0,
            client: None,
        }
    }
}

/// The primary a replica follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MasterAddr {
    pub host: String,
    pub port: u16,
}

/// A history to resume with PSYNC: the primary's id and the offset
/// processed (Redis's cached master).
#[derive(Clone, Debug)]
pub struct Resume {
    pub replid: String,
    pub offset: u64,
}

/// One engine's replication state.
pub struct Replication {
    pub stream: backlog::Stream,
    ids: Mutex<Ids>,
    master: Mutex<Option<MasterAddr>>,
    /// Bumped when the primary changes; the link thread waits on it.
    master_gen: AtomicU64,
    master_changed: Condvar,
    /// Held while the link thread applies what its primary sent (one
    /// command of the stream, a snapshot and the history it starts), and
    /// while REPLICAOF changes the primary: once REPLICAOF has replied, a
    /// command of the old primary was applied whole before it or is never
    /// applied (Redis applies the stream and runs REPLICAOF on one thread,
    /// and frees the master client with its unread input). Reentrant: a
    /// primary's stream may carry REPLICAOF itself.
    applying: ReentrantMutex<()>,
    /// The history to resume after a lost link or a restart.
    pub resume: Mutex<Option<Resume>>,
    pub link: Mutex<Link>,
    replicas: Mutex<Vec<Arc<Replica>>>,
    /// Keys to which this replica's own clients gave a TTL (a writable
    /// replica): the replica expires those itself, as Redis's
    /// slaveKeysWithExpire.
    local_expires: Mutex<std::collections::HashSet<(usize, Vec<u8>)>>,
    /// The database the primary's stream last selected (repl-stream-db).
    pub master_db: std::sync::atomic::AtomicI64,
    /// The primary sent REPLCONF GETACK: the link acknowledges at once.
    pub ack_wanted: AtomicBool,
    /// Woken when a replica acknowledges an offset (WAIT).
    pub acks: tokio::sync::Notify,
    /// A WAIT asked for acknowledgements: REPLCONF GETACK is sent to the
    /// replicas at the end of the turn.
    pub getack_wanted: AtomicBool,
    /// Replicas online and acknowledging within min-replicas-max-lag.
    pub good_replicas: AtomicU32,
    /// When the last replica left (Unix ms), for repl-backlog-ttl.
    pub(crate) no_replicas_since_ms: AtomicU64,
    /// When the engine started (Unix ms): PINGs go on period boundaries
    /// counted from it.
    started_ms: AtomicU64,
    /// The period boundary the cron last saw, and the period then.
    ping_tick: AtomicU64,
    ping_period: AtomicU64,
    /// The coordinated failover (FAILOVER), when one runs.
    pub failover: Mutex<failover::Failover>,
    pub sync_full: AtomicU64,
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
    /// The running full synchronization's senders (sync.rs).
    pub(crate) socket_targets: Mutex<Vec<tokio::sync::mpsc::Sender<Result<bytes::Bytes, ()>>>>,
    pub(crate) disk_done: Mutex<Option<tokio::sync::watch::Sender<Option<bool>>>>,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            stream: Default::default(),
            ids: Mutex::new(Ids {
                replid: random_id(),
                replid2: NULL_ID.to_string(),
                second_offset: -1,
            }),
            master: Mutex::new(None),
            master_gen: AtomicU64::new(0),
            master_changed: Condvar::new(),
            applying: ReentrantMutex::new(()),
            resume: Mutex::new(None),
            link: Mutex::new(Link::default()),
            replicas: Mutex::new(Vec::new()),
            local_expires: Mutex::new(Default::default()),
            master_db: std::sync::atomic::AtomicI64::new(0),
            ack_wanted: AtomicBool::new(false),
            acks: tokio::sync::Notify::new(),
            getack_wanted: AtomicBool::new(false),
            good_replicas: AtomicU32::new(0),
            no_replicas_since_ms: AtomicU64::new(now_ms()),
            // The first PING is a period after the start (Redis pings on
            // its cron's loops: with a period of an hour, none soon).
            started_ms: AtomicU64::new(now_ms()),
            ping_tick: AtomicU64::new(0),
            ping_period: AtomicU64::new(10),
            failover: Mutex::new(Default::default()),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
            socket_targets: Mutex::new(Vec::new()),
            disk_done: Mutex::new(None),
        }
    }
}

/// The replication history a snapshot belongs to, as its aux fields
/// record it (Redis's rdbSaveInfo).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaveInfo {
    pub stream_db: i64,
    pub replid: String,
    pub offset: u64,
}

/// REPLCONF GETACK *, as the stream carries it.
pub const GETACK: &[u8] = b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";

impl Replication {
    pub fn ids(&self) -> Ids {
        self.ids.lock().clone()
    }

    /// What a snapshot taken now records of the history (Redis's
    /// rdbPopulateSaveInfo): a primary's while it keeps a backlog, a
    /// replica's primary's; None otherwise.
    pub fn save_info(&self) -> Option<SaveInfo> {
        if self.is_replica() {
            let resume = self.resume.lock().clone();
            let up = self.link.lock().state == LinkState::Up;
            return if up {
                Some(SaveInfo {
                    stream_db: self.master_db.load(Ordering::Relaxed),
                    replid: self.ids().replid,
                    offset: self.stream.offset(),
                })
            } else {
                resume.map(|r| SaveInfo {
                    stream_db: self.master_db.load(Ordering::Relaxed),
                    replid: r.replid,
                    offset: r.offset,
                })
            };
        }
        if !self.stream.is_active() {
            return None;
        }
        Some(SaveInfo {
            stream_db: self.stream.stream_db().unwrap_or(0) as i64,
            replid: self.ids().replid,
            offset: self.stream.offset(),
        })
    }

    /// The primary this engine follows; None when it is one.
    pub fn master(&self) -> Option<MasterAddr> {
        self.master.lock().clone()
    }

    #[inline]
    pub fn is_replica(&self) -> bool {
        self.master_gen.load(Ordering::Relaxed) & 1 == 1
    }

    /// The primary's generation: odd while following one. The link thread
    /// compares it to know its primary is still the one to follow.
    pub fn master_generation(&self) -> u64 {
        self.master_gen.load(Ordering::Acquire)
    }

    /// Waits until the primary's generation differs from `gen` or `timeout`
    /// passes.
    pub fn wait_master_change(&self, gen: u64, timeout: std::time::Duration) {
        let mut m = self.master.lock();
        if self.master_gen.load(Ordering::Acquire) == gen {
            self.master_changed.wait_for(&mut m, timeout);
        }
    }

    /// Runs `apply`, the link thread applying what the primary of
    /// generation `gen` sent (a command of its stream, the history it
    /// continues), if that is still the primary to follow, and while no
    /// change of primary holds the stream (`hold_master_stream`); None,
    /// without running it, when the primary changed. A command waits here
    /// for the shards it needs: whoever holds shards never waits for the
    /// stream (`try_hold_master_stream`).
    pub fn apply_from_master<T>(&self, gen: u64, apply: impl FnOnce() -> T) -> Option<T> {
        let _applying = self.applying.lock();
        (self.master_generation() == gen).then(apply)
    }

    /// Holds the primary's stream between two of its commands while the
    /// guard lives, for a change of primary that must fall there
    /// (REPLICAOF): waits for the command being applied, if any. The
    /// caller must hold no shard, which that command may be waiting for.
    pub fn hold_master_stream(&self) -> ReentrantMutexGuard<'_, ()> {
        self.applying.lock()
    }

    /// `hold_master_stream` for a caller that holds shards (REPLICAOF
    /// inside a transaction, PSYNC ... FAILOVER, the link loading a
    /// snapshot): only while no command of the stream is being applied,
    /// as one may be waiting for those shards; None otherwise.
    pub fn try_hold_master_stream(&self) -> Option<ReentrantMutexGuard<'_, ()>> {
        self.applying.try_lock()
    }

    /// Follows `addr` (REPLICAOF host port) or none (REPLICAOF NO ONE).
    /// Returns false when nothing changed.
    pub(crate) fn set_master(&self, addr: Option<MasterAddr>) -> bool {
        let mut m = self.master.lock();
        if *m == addr {
            return false;
        }
        let was = m.is_some();
        let now = addr.is_some();
        // The link to the primary before ends. Taken before the link
        // thread can learn of the new primary: once it knows, the client
        // of its new link could be the one found here.
        let client = {
            let mut l = self.link.lock();
            let c = l.client.take();
            *l = Link {
                down_since_ms: 0,
                ..Link::default()
            };
            c
        };
        *m = addr;
        // Odd while following a primary: one more step when the role
        // changes, two when only the primary does.
        let step = if was == now { 2 } else { 1 };
        self.master_gen.fetch_add(step, Ordering::AcqRel);
        self.master_changed.notify_all();
        drop(m);
        if let Some(c) = client {
            c.kill();
        }
        true
    }

    /// A new history starts here (a replica promoted, or a backlog created
    /// anew after repl-backlog-ttl): the old id stays valid up to the
    /// current offset (Redis's shiftReplicationId).
    pub fn shift_id(&self) {
        let mut ids = self.ids.lock();
        ids.replid2 = std::mem::replace(&mut ids.replid, random_id());
        ids.second_offset = self.stream.offset() as i64 + 1;
    }

    /// A fresh history with no predecessor (Redis's changeReplicationId
    /// and clearReplicationId2).
    pub fn new_id(&self) {
        let mut ids = self.ids.lock();
        ids.replid = random_id();
        ids.replid2 = NULL_ID.to_string();
        ids.second_offset = -1;
    }

    /// The replica takes its primary's history (after a full sync, or a
    /// +CONTINUE naming a new id).
    pub fn adopt_id(&self, replid: &str, offset: u64, keep_old: bool) {
        let mut ids = self.ids.lock();
        if keep_old && ids.replid != replid {
            ids.replid2 = std::mem::replace(&mut ids.replid, replid.to_string());
            ids.second_offset = offset as i64 + 1;
        } else {
            ids.replid = replid.to_string();
            if !keep_old {
                ids.replid2 = NULL_ID.to_string();
                ids.second_offset = -1;
            }
        }
    }

    /// A restarted primary resumes the history its snapshot recorded, as
    /// its second id (Redis's loadDataFromDisk).
    pub fn restore_as_primary(&self, replid: &str, offset: u64, backlog_size: usize) {
        self.stream.activate(backlog_size);
        self.stream.reset(offset);
        let mut ids = self.ids.lock();
        ids.replid2 = replid.to_string();
        ids.second_offset = offset as i64 + 1;
        self.no_replicas_since_ms.store(now_ms(), Ordering::Relaxed);
    }

    /// Whether PSYNC `replid` `offset` (the first byte the replica wants)
    /// can continue from the backlog (Redis's
    /// masterTryPartialResynchronization's checks).
    pub fn can_continue(&self, replid: &str, offset: u64) -> bool {
        let ids = self.ids.lock();
        let same = replid.eq_ignore_ascii_case(&ids.replid);
        let previous = replid.eq_ignore_ascii_case(&ids.replid2)
            && ids.second_offset >= 0
            && offset <= ids.second_offset as u64;
        drop(ids);
        (same || previous) && offset >= 1 && self.stream.holds_from(offset - 1)
    }

    /// The replicas attached, in the order they came.
    pub fn replicas(&self) -> Vec<Arc<Replica>> {
        self.replicas.lock().clone()
    }

    /// The replica at `host` (its address, as INFO shows it; any case)
    /// and `port` (the port it listens on), as FAILOVER TO names it
    /// (Redis's findReplica).
    pub fn find_replica(&self, host: &str, port: i64) -> Option<Arc<Replica>> {
        self.replicas
            .lock()
            .iter()
            .find(|r| r.ip().eq_ignore_ascii_case(host) && r.conf.listening_port as i64 == port)
            .cloned()
    }

    pub fn replica_count(&self) -> usize {
        self.replicas.lock().len()
    }

    pub(crate) fn add_replica(&self, r: Arc<Replica>) {
        self.replicas.lock().push(r);
    }

    /// A replica's connection closed.
    pub fn remove_replica(&self, r: &Arc<Replica>) {
        self.stream.detach(&r.reader);
        let mut list = self.replicas.lock();
        list.retain(|x| !Arc::ptr_eq(x, r));
        if list.is_empty() {
            self.no_replicas_since_ms.store(now_ms(), Ordering::Relaxed);
        }
        drop(list);
        self.acks.notify_waiters();
    }

    /// REPLCONF ACK from a replica.
    pub fn acknowledge(&self, r: &Replica, offset: u64, fack: Option<u64>) {
        r.acks.fetch_add(1, Ordering::AcqRel);
        r.ack.fetch_max(offset, Ordering::AcqRel);
        if let Some(f) = fack {
            r.fack.fetch_max(f, Ordering::AcqRel);
        }
        r.ack_ms.store(now_ms(), Ordering::Relaxed);
        self.acks.notify_waiters();
    }

    /// Replicas whose append-only file has `offset` or later on disk
    /// (WAITAOF; Redis's replicationCountAOFAcksByOffset).
    pub fn aof_acked(&self, offset: u64) -> usize {
        self.replicas
            .lock()
            .iter()
            .filter(|r| r.state() == state::ONLINE && r.fack.load(Ordering::Acquire) >= offset)
            .count()
    }

    /// Replicas that acknowledged `offset` or later (WAIT).
    pub fn acked(&self, offset: u64) -> usize {
        self.replicas
            .lock()
            .iter()
            .filter(|r| r.state() == state::ONLINE && r.ack.load(Ordering::Acquire) >= offset)
            .count()
    }

    /// Recounts the good replicas for min-replicas-to-write (Redis's
    /// refreshGoodSlavesCount): online, and acknowledged within
    /// `max_lag_secs`.
    pub fn refresh_good(&self, max_lag_secs: i64) {
        let now = now_ms();
        let good = self
            .replicas
            .lock()
            .iter()
            .filter(|r| {
                r.state() == state::ONLINE
                    && now.saturating_sub(r.ack_ms.load(Ordering::Relaxed)) / 1000
                        <= max_lag_secs.max(0) as u64
            })
            .count();
        self.good_replicas.store(good as u32, Ordering::Relaxed);
    }

    /// The periodic part (Redis's replicationCron, the primary's side):
    /// pings into the stream every repl-ping-replica-period, and frees a
    /// backlog no replica used for repl-backlog-ttl. `hold_ping`: a
    /// failover keeps the stream still (failover::holds_ping).
    pub fn cron(&self, ping_period_s: i64, backlog_ttl_s: i64, max_lag_s: i64, hold_ping: bool) {
        let now = now_ms();
        let replicas = self.replica_count();
        // Every repl-ping-replica-period seconds counted from the start (as
        // Redis's cron loops count them), when replicas are attached.
        let epoch = self.started_ms.load(Ordering::Relaxed);
        let period = ping_period_s.max(1) as u64;
        let tick = now.saturating_sub(epoch) / (period * 1000);
        // A changed period starts counting anew, without a PING.
        let changed = self.ping_period.swap(period, Ordering::Relaxed) != period;
        if self.ping_tick.swap(tick, Ordering::Relaxed) != tick
            && !changed
            && !self.is_replica()
            && replicas > 0
            && !hold_ping
        {
            let ping = b"*1\r\n$4\r\nPING\r\n";
            // The PING carries no SELECT: it runs in any database.
            self.stream.append_bytes(ping);
        }
        if !self.is_replica() && replicas == 0 && backlog_ttl_s > 0 && self.stream.is_active() {
            let since = self.no_replicas_since_ms.load(Ordering::Relaxed);
            if now.saturating_sub(since) >= backlog_ttl_s as u64 * 1000 {
                // Without the backlog the stream has gaps: a new history.
                self.new_id();
                self.stream.deactivate();
                crate::log::notice(&format!(
                    "Replication backlog freed after {backlog_ttl_s} seconds without connected replicas."
                ));
            }
        }
        self.refresh_good(max_lag_s);
    }

    /// A client of this replica gave `key` a TTL (see `local_expires`).
    pub fn remember_local_expire(&self, db: usize, key: &[u8]) {
        self.local_expires.lock().insert((db, key.to_vec()));
    }

    /// How many keys `local_expires` tracks (INFO's
    /// slave_expires_tracked_keys).
    pub fn local_expires_tracked(&self) -> usize {
        self.local_expires.lock().len()
    }

    /// Deletes the tracked keys that expired, forgets those gone or
    /// without a TTL (Redis's expireSlaveKeys).
    pub fn expire_local_keys(&self, keyspace: &crate::keyspace::Keyspace) {
        let keys: Vec<(usize, Vec<u8>)> = self.local_expires.lock().iter().cloned().collect();
        if keys.is_empty() {
            return;
        }
        let now = now_ms();
        let mut forget = Vec::new();
        for (db, key) in keys {
            let h = crate::keyspace::hash_key(&key);
            let mut shard = keyspace.lock(keyspace.shard_of(h));
            let Some(slice) = shard.dbs.get_mut(db) else {
                forget.push((db, key));
                continue;
            };
            match slice.get_raw(h, &key).map(|o| o.expire_at()) {
                Some(Some(at)) if at <= now => {
                    // A look-up at the real clock deletes it.
                    slice.lookup(h, &key, crate::keyspace::Now::at(now));
                    forget.push((db, key));
                }
                Some(Some(_)) => {}
                _ => forget.push((db, key)),
            }
        }
        let mut set = self.local_expires.lock();
        for k in forget {
            set.remove(&k);
        }
    }

    /// Sends REPLCONF GETACK to the replicas if a WAIT asked for it.
    pub fn flush_getack(&self) {
        if self.getack_wanted.swap(false, Ordering::AcqRel) && !self.is_replica() {
            self.stream.append_bytes(GETACK);
        }
    }
}

/// Parses REPLICAOF's arguments (also the `replicaof` setting): None for
/// NO ONE.
pub fn parse_master(host: &[u8], port: &[u8]) -> Result<Option<MasterAddr>, crate::Error> {
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        return Ok(None);
    }
    let port = std::str::from_utf8(port)
        .ok()
        .and_then(|p| p.parse::<i64>().ok())
        .filter(|p| (0..=65535).contains(p))
        .ok_or_else(|| crate::Error::constant("ERR Invalid master port"))?;
    Ok(Some(MasterAddr {
        host: String::from_utf8_lossy(host).into_owned(),
        port: port as u16,
    }))
}

/// Where a failover stands (INFO's master_failover_state).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum State {
    #[default]
    None,
    /// Waiting for the target to acknowledge the whole stream.
    WaitForSync,
    /// A replica of the target, waiting for it to accept PSYNC FAILOVER.
    InProgress,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::None => "no-failover",
            State::WaitForSync => "waiting-for-sync",
            State::InProgress => "failover-in-progress",
        }
    }
}

/// A failover's settings and progress.
#[derive(Clone, Debug, Default)]
pub struct Failover {
    pub state: State,
    /// The replica to fail over to: the one FAILOVER TO named, or the
    /// first found caught up.
    pub target: Option<MasterAddr>,
    /// The TIMEOUT's deadline (Unix ms), 0 without one.
    pub end_ms: u64,
    /// FORCE: at the deadline, fail over to the target anyway.
    pub force: bool,
}

impl Failover {
    /// How logs name the target (Redis prints a null host as "(null)").
    pub(crate) fn target_name(&self) -> String {
        match &self.target {
            Some(t) => format!("{}:{}", t.host, t.port),
            None => "(null):0".to_string(),
        }
    }
}
