//! Connected clients: the per-connection state a command sees
//! (`ClientState`), and the registry behind CLIENT LIST / KILL / INFO.
//!
//! A connection owns its `ClientState`; the fields other connections need
//! to read (CLIENT LIST) or act on (CLIENT KILL) live in the shared
//! `ClientInfo`, behind atomics or a small mutex.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// CLIENT REPLY mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Skip the reply of the next command.
    SkipNext,
    /// Skipping the reply of the current command.
    Skip,
}

/// What other connections can see of a client.
pub struct ClientInfo {
    pub id: u64,
    // Boxed strings and bytes rather than String and Vec: every connected
    // client holds one entry, which fits jemalloc's 384-byte class.
    pub addr: Box<str>,
    pub laddr: Box<str>,
    pub fd: i64,
    pub created_ms: u64,
    pub name: Mutex<Option<Vec<u8>>>,
    pub lib_name: Mutex<Option<String>>,
    pub last_interaction_ms: AtomicU64,
    pub db: AtomicUsize,
    pub resp: AtomicU8,
    /// The last command's full name, as an index into the command table
    /// (usize::MAX = none yet).
    pub last_cmd: AtomicUsize,
    pub query_buffer: AtomicUsize,
    pub query_buffer_free: AtomicUsize,
    /// The most the query buffer held since the cron last looked (Redis's
    /// querybuf_peak).
    pub query_buffer_peak: AtomicUsize,
    /// A resize the cron asks of the connection (usize::MAX: none).
    query_buffer_resize: AtomicUsize,
    /// Replies its connection has not written yet (the socket did not
    /// take them), as of the connection's last turn.
    pub output_pending: AtomicUsize,
    pub multi_len: AtomicU64,
    pub in_multi: AtomicBool,
    pub blocked: AtomicBool,
    pub no_evict: AtomicBool,
    pub killed: AtomicBool,
    /// Woken when the client is killed, and when a message reaches its
    /// mailbox: its connection then writes the message out.
    pub wake: tokio::sync::Notify,
    /// Pub/Sub messages published to the client that its connection has
    /// not written yet (see `crate::pubsub`).
    pub mailbox: crate::pubsub::Mailbox,
    /// What it is subscribed to, counted (CLIENT LIST's sub/psub/ssub).
    pub subscriptions: crate::pubsub::SubscriptionCounts,
    /// The wait in progress while the client is blocked (CLIENT UNBLOCK
    /// finds it here).
    pub block: Mutex<Option<Arc<crate::blocking::BlockedClient>>>,
    /// The ACL user the client is authenticated as (CLIENT LIST's user=,
    /// CLIENT KILL USER, ACL DELUSER).
    pub user: Mutex<Box<[u8]>>,
    /// A MONITOR client (CLIENT LIST flag O).
    pub monitor: AtomicBool,
    /// Output produced for this client by others (MONITOR lines), sent
    /// by its connection when woken; `has_pushed` says there is some.
    pushed: Mutex<Vec<u8>>,
    has_pushed: AtomicBool,
}

impl ClientInfo {
    /// Whether the client connects from this host, as Redis's
    /// islocalClient sees it: from 127.0.0.1 or ::1 exactly, or in-process
    /// (no address; Redis's unix socket).
    pub fn is_local(&self) -> bool {
        self.addr.is_empty()
            || self.addr.starts_with("127.0.0.1:")
            || self.addr.starts_with("[::1]:")
    }

    /// One line of CLIENT LIST / CLIENT INFO, in Redis 7.0's format.
    pub fn line(&self, now: u64) -> String {
        let info = self;
        let name = info
            .name()
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .unwrap_or_default();
        let mut flags = String::new();
        if info.monitor.load(Ordering::Relaxed) {
            flags.push('O');
        }
        if info.subscriptions.any() {
            flags.push('P');
        }
        if info.in_multi.load(Ordering::Relaxed) {
            flags.push('x');
        }
        if info.blocked.load(Ordering::Relaxed) {
            flags.push('b');
        }
        if info.no_evict.load(Ordering::Relaxed) {
            flags.push('e');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let cmd = match info.last_cmd.load(Ordering::Relaxed) {
            usize::MAX => "NULL".to_string(),
            id => crate::command::table().get(id).fullname.clone(),
        };
        let multi = if info.in_multi.load(Ordering::Relaxed) {
            info.multi_len.load(Ordering::Relaxed) as i64
        } else {
            -1
        };
        let qbuf = info.query_buffer.load(Ordering::Relaxed);
        let qbuf_free = info.query_buffer_free.load(Ordering::Relaxed);
        // Pending output is all counted as the reply list (omem), since the
        // limits measure all of it; obl stays 0.
        let obl = 0;
        let omem = info.output_memory();
        let subs = &info.subscriptions;
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events=r cmd={} user={} redir=-1 resp={}",
            info.id,
            info.addr,
            info.laddr,
            info.fd,
            name,
            now.saturating_sub(info.created_ms) / 1000,
            now.saturating_sub(info.last_interaction_ms.load(Ordering::Relaxed)) / 1000,
            flags,
            info.db.load(Ordering::Relaxed),
            subs.channels.load(Ordering::Relaxed),
            subs.patterns.load(Ordering::Relaxed),
            subs.shard_channels.load(Ordering::Relaxed),
            multi,
            qbuf,
            qbuf_free,
            qbuf + qbuf_free,
            qbuf,
            obl,
            usize::from(omem > 0),
            omem,
            qbuf + qbuf_free + obl + omem,
            cmd,
            String::from_utf8_lossy(&info.user.lock()),
            info.resp.load(Ordering::Relaxed),
        )
    }

    /// CLIENT LIST's omem: the output not written yet, Pub/Sub messages
    /// still in the mailbox included (what the output buffer limits
    /// measure).
    pub fn output_memory(&self) -> usize {
        let pending = self.output_pending.load(Ordering::Relaxed);
        if self.subscriptions.any() {
            pending + self.mailbox.len()
        } else {
            pending
        }
    }

    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Relaxed)
    }

    pub fn name(&self) -> Option<Vec<u8>> {
        self.name.lock().clone()
    }

    /// Redis's clientsCronHandleTimeout: with `timeout` set (`max_idle`
    /// seconds), a client idle for longer is closed, unless it waits in a
    /// blocking command, is subscribed, or is a MONITOR; in-process
    /// sessions have no connection to close. Whether it was closed.
    pub fn cron_timeout(&self, now_ms: u64, max_idle: u64) -> bool {
        if max_idle == 0
            || self.addr.is_empty()
            || self.blocked.load(Ordering::Relaxed)
            || self.subscriptions.any()
            || self.monitor.load(Ordering::Relaxed)
        {
            return false;
        }
        let last = self.last_interaction_ms.load(Ordering::Relaxed) / 1000;
        if (now_ms / 1000).saturating_sub(last) <= max_idle {
            return false;
        }
        crate::log::verbose("Closing idle client");
        self.kill();
        true
    }

    /// The query buffer size the cron asked for, once.
    pub fn take_query_buffer_resize(&self) -> Option<usize> {
        match self.query_buffer_resize.swap(usize::MAX, Ordering::Relaxed) {
            usize::MAX => None,
            size => Some(size),
        }
    }

    /// Redis's clientsCronResizeQueryBuffer, decided here and carried out
    /// by the connection (which owns the buffer): when more than 4 KiB
    /// are free, a client idle for over 2 seconds gives its free space
    /// back, and a buffer over 32 KiB and more than twice the recent peak
    /// shrinks to the peak. The peak restarts from what the buffer holds.
    pub fn cron_query_buffer(&self, now_ms: u64) {
        let len = self.query_buffer.load(Ordering::Relaxed);
        let free = self.query_buffer_free.load(Ordering::Relaxed);
        let size = len + free;
        let peak = self.query_buffer_peak.swap(len, Ordering::Relaxed);
        if free <= 4 * 1024 {
            return;
        }
        let idle = now_ms.saturating_sub(self.last_interaction_ms.load(Ordering::Relaxed)) / 1000;
        let target = if idle > 2 {
            len
        } else if size > 32 * 1024 && size / 2 > peak {
            len.max(peak)
        } else {
            return;
        };
        self.query_buffer_resize.store(target, Ordering::Relaxed);
        self.wake.notify_one();
    }

    /// Queues output for this client and wakes its connection.
    pub fn push(&self, bytes: &[u8]) {
        self.pushed.lock().extend_from_slice(bytes);
        self.has_pushed.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// Moves the output others queued for this client into `out`.
    #[inline]
    pub fn take_pushed(&self, out: &mut Vec<u8>) {
        if self.has_pushed.load(Ordering::Relaxed) {
            self.has_pushed.store(false, Ordering::Relaxed);
            out.append(&mut self.pushed.lock());
        }
    }
}

/// Where a connection comes from (the server fills it; embedded clients
/// use `ConnInfo::embedded()`).
#[derive(Clone, Debug)]
pub struct ConnInfo {
    pub peer: Option<SocketAddr>,
    pub local: Option<SocketAddr>,
    pub fd: i64,
}

impl ConnInfo {
    pub fn embedded() -> ConnInfo {
        ConnInfo {
            peer: None,
            local: None,
            fd: -1,
        }
    }
}

/// A command queued between MULTI and EXEC.
pub struct QueuedCommand {
    pub id: usize,
    pub argv: Vec<Vec<u8>>,
}

/// MULTI state: the queue, and whether an error while queueing already
/// doomed the transaction (Redis's CLIENT_DIRTY_EXEC).
#[derive(Default)]
pub struct MultiState {
    pub commands: Vec<QueuedCommand>,
    pub aborted: bool,
}

/// The keys a client WATCHes: (database, key) pairs and the shared flag
/// the databases' registries mark.
pub struct Watching {
    pub state: std::sync::Arc<crate::keyspace::watch::WatchState>,
    pub keys: Vec<(usize, Vec<u8>)>,
}

/// The per-connection state commands read and change.
pub struct ClientState {
    pub info: Arc<ClientInfo>,
    pub db: usize,
    pub resp: u8,
    /// Authenticated by AUTH or HELLO (Redis's c->authenticated). Whether
    /// a command needs it also depends on the default user
    /// (`Acl::auth_required`).
    pub authenticated: bool,
    /// The ACL user commands are checked against; None for clients inside
    /// the server (loading the log, serving a blocked command), which may
    /// run anything.
    pub user: Option<crate::acl::ClientUser>,
    pub reply_mode: ReplyMode,
    /// Close the connection once the current replies are written (QUIT, protocol errors).
    pub close_after_reply: bool,
    /// Set for clients that run inside the server (scripts, embedded API).
    pub internal: bool,
    pub multi: Option<MultiState>,
    pub watching: Option<Watching>,
    /// Replaying the append-only file: nothing is logged, nothing expires.
    pub replaying: bool,
    /// Offset in the append-only file just past this client's last logged
    /// record; under `appendfsync always` its replies wait until the file
    /// is synced that far.
    pub aof_offset: u64,
    /// Records of commands run inside a transaction or a script, logged
    /// together when the outermost command ends.
    pub pending_log: Vec<crate::persist::aof::Record>,
    /// Keys that this client's commands made ready for blocked clients;
    /// served once the top-level command has released its locks.
    pub ready_keys: Vec<(usize, crate::keyspace::CompactBytes)>,
    /// Set when the last command blocked (see `crate::blocking`).
    pub blocked: Option<Arc<crate::blocking::BlockedClient>>,
    /// Set by a blocking command run for a waiter that finds nothing for
    /// it yet (a stream's new entries not past its ID): the waiter goes on
    /// waiting instead of being served.
    pub keep_waiting: bool,
    /// The server was out of memory when the current command started
    /// (Redis's pre_command_oom_state, set by admission): a
    /// script's deny-oom commands are refused on it.
    pub pre_command_oom: bool,
    /// When a blocked command is served on this client's behalf: when it
    /// blocked (monotonic ns), so that its duration counts the wait, as
    /// Redis's does. 0 otherwise.
    pub blocked_since_ns: u64,
    /// The channels, patterns and shard channels the client subscribes
    /// to; None while it subscribes to nothing (Redis's CLIENT_PUBSUB
    /// flag is whether this is set).
    pub pubsub: Option<Box<crate::pubsub::Subscriptions>>,
    /// The buffers of the running command's big bulk arguments (see
    /// `protocol::parser::BIG_ARG`), which a value it stores may adopt
    /// (`Ctx::adopt`). Empty for any other command.
    pub lent: Vec<bytes::Bytes>,
}

impl ClientState {
    /// A fresh client state on database `db`, speaking RESP `resp`.
    pub fn new(
        info: Arc<ClientInfo>,
        db: usize,
        resp: u8,
        authenticated: bool,
        internal: bool,
    ) -> ClientState {
        ClientState {
            info,
            db,
            resp,
            authenticated,
            user: None,
            reply_mode: ReplyMode::On,
            close_after_reply: false,
            internal,
            multi: None,
            watching: None,
            ready_keys: Vec::new(),
            blocked: None,
            keep_waiting: false,
            pre_command_oom: false,
            blocked_since_ns: 0,
            pubsub: None,
            replaying: false,
            aof_offset: 0,
            pending_log: Vec::new(),
            lent: Vec::new(),
        }
    }

    pub fn id(&self) -> u64 {
        self.info.id
    }

    /// Subscribed to some channel, pattern or shard channel.
    #[inline]
    pub fn subscribed(&self) -> bool {
        self.pubsub.is_some()
    }

    pub fn set_db(&mut self, db: usize) {
        self.db = db;
        self.info.db.store(db, Ordering::Relaxed);
    }
}

#[derive(Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    next_id: AtomicU64,
    pub connected: AtomicUsize,
    /// Clients blocked on keys (INFO blocked_clients). While zero, writes
    /// skip the look-up for waiters.
    pub blocked: AtomicUsize,
    /// Those of them with a deadline (INFO clients_in_timeout_table).
    pub blocked_with_timeout: AtomicUsize,
}

impl ClientRegistry {
    pub fn register(&self, conn: &ConnInfo, now_ms: u64) -> Arc<ClientInfo> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let info = Arc::new(ClientInfo {
            id,
            addr: conn.peer.map(|a| a.to_string()).unwrap_or_default().into(),
            laddr: conn.local.map(|a| a.to_string()).unwrap_or_default().into(),
            fd: conn.fd,
            created_ms: now_ms,
            name: Mutex::new(None),
            lib_name: Mutex::new(None),
            last_interaction_ms: AtomicU64::new(now_ms),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_cmd: AtomicUsize::new(usize::MAX),
            query_buffer: AtomicUsize::new(0),
            query_buffer_free: AtomicUsize::new(0),
            query_buffer_peak: AtomicUsize::new(0),
            query_buffer_resize: AtomicUsize::new(usize::MAX),
            output_pending: AtomicUsize::new(0),
            multi_len: AtomicU64::new(0),
            in_multi: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            no_evict: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
            mailbox: Default::default(),
            subscriptions: Default::default(),
            block: Mutex::new(None),
            user: Mutex::new(b"default".as_slice().into()),
            monitor: AtomicBool::new(false),
            pushed: Mutex::new(Vec::new()),
            has_pushed: AtomicBool::new(false),
        });
        if conn.fd >= 0 {
            self.clients.lock().insert(id, info.clone());
            self.connected.fetch_add(1, Ordering::Relaxed);
        }
        info
    }

    pub fn unregister(&self, id: u64) {
        if self.clients.lock().remove(&id).is_some() {
            self.connected.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Kills another client as Redis's CLIENT KILL frees it: it is gone
    /// from the registry (CLIENT LIST, connected_clients) at once, while
    /// its connection closes on its own turn.
    pub fn kill(&self, c: &ClientInfo) {
        c.kill();
        self.unregister(c.id);
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }

    /// All registered clients, by id.
    pub fn all(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().values().cloned().collect()
    }

    /// Calls `f` on up to `n` clients with ids after `after`, wrapping
    /// around; returns the last id visited (Redis's clientsCron walks its
    /// clients a slice per tick this way).
    pub fn visit_some(&self, after: u64, n: usize, mut f: impl FnMut(&ClientInfo)) -> u64 {
        let clients = self.clients.lock();
        let mut last = after;
        for (id, c) in clients
            .range(after + 1..)
            .chain(clients.range(..=after))
            .take(n)
        {
            f(c);
            last = *id;
        }
        last
    }

    /// What the normal clients hold (INFO mem_clients_normal): their
    /// query buffers, pending output and state.
    pub fn memory_total(&self) -> u64 {
        let mut total = 0u64;
        self.visit_some(0, usize::MAX, |c| {
            total += (std::mem::size_of::<ClientInfo>()
                + c.query_buffer.load(Ordering::Relaxed)
                + c.query_buffer_free.load(Ordering::Relaxed)
                + c.output_memory()) as u64;
        });
        total
    }

    pub fn count(&self) -> usize {
        self.connected.load(Ordering::Relaxed)
    }
}
