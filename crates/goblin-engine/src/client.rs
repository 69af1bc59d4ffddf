//! Connected clients: the per-connection state a command sees
//! (`ClientState`), and the registry behind CLIENT LIST / KILL / INFO.
//!
//! A connection owns its `ClientState`; the fields other connections need
//! to read (CLIENT LIST) or act on (CLIENT KILL) live in the shared
//! `ClientInfo`, behind atomics or a small mutex.
//!
//! Client memory (Redis's getClientMemoryUsage and client eviction): each
//! `ClientInfo` publishes the sizes of the client's buffers and state in
//! atomics, set where they change (the connection after each turn, the
//! session after each command, a publisher as a message reaches a
//! mailbox). `ClientMemory` keeps the engine's running total of what its
//! clients use and, for `maxmemory-clients`, the evictable clients in
//! buckets by size (powers of two), which `ClientRegistry::evict_over_limit`
//! empties from the largest down until the total is under the limit.

use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
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

/// The bits of `ClientInfo::ending`.
mod ending {
    pub const KILLED: u8 = 1;
    pub const CLOSING: u8 = 2;
}

/// What other connections can see of a client.
pub struct ClientInfo {
    pub id: u64,
    // Boxed strings and bytes rather than String and Vec: every connected
    // client holds one entry, which fits jemalloc's 448-byte class with
    // its Arc's counts (432 bytes at most).
    pub addr: Box<str>,
    pub laddr: Box<str>,
    pub fd: i64,
    pub created_ms: u64,
    pub name: Mutex<Option<Vec<u8>>>,
    /// CLIENT SETINFO's library name and version (CLIENT LIST's lib-name
    /// and lib-ver), boxed: most clients never send them.
    pub lib: Mutex<Option<Box<ClientLib>>>,
    pub last_interaction_ms: AtomicU64,
    pub db: AtomicUsize,
    pub resp: AtomicU8,
    /// The last command's full name, as an index into the command table
    /// (usize::MAX = none yet).
    pub last_cmd: AtomicUsize,
    /// CLIENT LIST's qbuf and qbuf-free. While a big bulk is received
    /// into a buffer of its own, qbuf is what it holds, as Redis's query
    /// buffer then holds the bulk alone.
    pub query_buffer: AtomicUsize,
    pub query_buffer_free: AtomicUsize,
    /// All the memory of the query buffer (the read buffer and a big
    /// bulk's own buffer, whole allocations), for tot-mem.
    pub query_buffer_alloc: AtomicUsize,
    /// The most the query buffer held since the cron last looked (Redis's
    /// querybuf_peak).
    pub query_buffer_peak: AtomicUsize,
    /// A resize the cron asks of the connection (usize::MAX: none).
    query_buffer_resize: AtomicUsize,
    /// Replies its connection has not written yet (the socket did not
    /// take them), as of the connection's last turn.
    pub output_pending: AtomicUsize,
    /// The reply buffer's size (CLIENT LIST's rbs; it holds the pending
    /// output too) and the most it held since the cron last looked (rbp).
    pub reply_buffer_size: AtomicUsize,
    /// (Saturated at 4 GiB: a u32 keeps the entry in jemalloc's 448-byte
    /// class.)
    pub reply_buffer_peak: AtomicU32,
    /// The size the connection keeps its reply buffer at between replies
    /// (Redis's buf_usable_size): the cron shrinks and expands it from
    /// the peak (`cron_reply_buffer`); a larger reply grows the buffer
    /// while it is written.
    pub reply_buffer_target: AtomicU32,
    /// When the peak last restarted, in milliseconds since the client
    /// connected (wrapping).
    reply_peak_reset_at: AtomicU32,
    /// CLIENT NO-TOUCH: the client's reads leave the keys' access time
    /// (LRU/LFU) as it was, TOUCH excepted.
    pub no_touch: AtomicBool,
    /// The arguments of the command in flight, or of the command being
    /// received when a big bulk is (CLIENT LIST's argv-mem, Redis's
    /// argv_len_sum), and their number.
    pub argv_mem: AtomicUsize,
    pub argc: AtomicU32,
    /// The arguments of the commands queued by MULTI, with their
    /// references (multi-mem, Redis's mstate.argv_len_sums), and the rest
    /// of the transaction state: the queue's slots and the watched keys
    /// (the rest of Redis's multiStateMemOverhead).
    pub multi_mem: AtomicUsize,
    pub multi_overhead: AtomicUsize,
    /// What the client counts for in its engine's `ClientMemory` total,
    /// its bucket there (NO_BUCKET: none), and whether it counts at all
    /// (registered clients, until they leave the registry).
    accounted: AtomicU64,
    bucket: AtomicU8,
    counted: AtomicBool,
    pub multi_len: AtomicU64,
    /// Its connection is processing input (from parsing its commands
    /// until it has checked its limits; see `await_turns`).
    pub in_turn: AtomicBool,
    pub in_multi: AtomicBool,
    pub blocked: AtomicBool,
    pub no_evict: AtomicBool,
    /// `ending::KILLED` (see `kill`) and `ending::CLOSING` (see
    /// `mark_closing`), in one byte: the struct keeps to its size class.
    ending: AtomicU8,
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
    /// A replica of this engine, or its primary (see [`repl_kind`]).
    pub repl_kind: AtomicU8,
    /// CLIENT TRACKING: its flags and redirection, packed as
    /// `crate::tracking::bits` says (0: off), read by the writers that
    /// invalidate what it read.
    pub tracking: AtomicU64,
    /// Output produced for this client by others (MONITOR lines), sent
    /// by its connection when woken; `has_pushed` says there is some.
    pushed: Mutex<Vec<u8>>,
    has_pushed: AtomicBool,
}

/// A reply buffer never shrinks below this (Redis's PROTO_REPLY_MIN_BYTES);
/// it is also its size at a client's first reply.
pub const REPLY_BUFFER_MIN: usize = 1024;
/// Nor does the cron expand it past this (PROTO_REPLY_CHUNK_BYTES).
pub const REPLY_BUFFER_CHUNK: usize = 16 * 1024;
/// How often a reply buffer's peak restarts unless DEBUG REPLYBUFFER
/// PEAK-RESET-TIME says otherwise (REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME).
pub const REPLY_BUFFER_PEAK_RESET_MS: i64 = 5000;

/// What the cron did to a client's reply buffer size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyResize {
    Unchanged,
    Shrunk,
    Expanded,
}

/// CLIENT SETINFO's values (empty: not set).
#[derive(Default, Debug)]
pub struct ClientLib {
    pub name: String,
    pub version: String,
}

/// What a client is to replication (Redis's CLIENT_SLAVE and
/// CLIENT_MASTER flags).
pub mod repl_kind {
    pub const NONE: u8 = 0;
    /// A replica of this engine (CLIENT LIST flag S).
    pub const REPLICA: u8 = 1;
    /// This engine's primary (flag M).
    pub const MASTER: u8 = 2;
}

impl ClientInfo {
    /// Whether the client connects from this host, as Redis's
    /// islocalClient sees it: from 127.0.0.1 or ::1 exactly, over the
    /// unix socket, or in-process (no address).
    pub fn is_local(&self) -> bool {
        self.addr.is_empty()
            || self.is_unix()
            || self.addr.starts_with("127.0.0.1:")
            || self.addr.starts_with("[::1]:")
    }

    /// Whether it connected over the unix socket.
    pub fn is_unix(&self) -> bool {
        &*self.addr == UNIX_ADDR
    }

    /// One line of CLIENT LIST / CLIENT INFO, in Redis 7.0's format;
    /// `names` gives each command id's full name (see
    /// `ClientRegistry::command_names`).
    pub fn line(&self, now: u64, names: &[&str]) -> String {
        let info = self;
        let name = info
            .name()
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .unwrap_or_default();
        let mut flags = String::new();
        match info.repl_kind.load(Ordering::Relaxed) {
            repl_kind::REPLICA => flags.push('S'),
            repl_kind::MASTER => flags.push('M'),
            _ => {}
        }
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
        let tracking = info.tracking.load(Ordering::Relaxed);
        if tracking & crate::tracking::bits::ON != 0 {
            flags.push('t');
        }
        if tracking & crate::tracking::bits::BROKEN_REDIR != 0 {
            flags.push('R');
        }
        if tracking & crate::tracking::bits::BCAST != 0 {
            flags.push('B');
        }
        if info.is_unix() {
            flags.push('U');
        }
        if info.no_evict.load(Ordering::Relaxed) {
            flags.push('e');
        }
        if info.no_touch.load(Ordering::Relaxed) {
            flags.push('T');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let cmd = names
            .get(info.last_cmd.load(Ordering::Relaxed))
            .copied()
            .unwrap_or("NULL");
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
        let lib = info.lib.lock();
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events=r cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
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
            info.argv_mem.load(Ordering::Relaxed),
            info.multi_mem.load(Ordering::Relaxed),
            info.reply_buffer_size.load(Ordering::Relaxed),
            info.reply_buffer_peak.load(Ordering::Relaxed),
            obl,
            usize::from(omem > 0),
            omem,
            info.memory_usage(),
            cmd,
            String::from_utf8_lossy(&info.user.lock()),
            if tracking & crate::tracking::bits::ON != 0 {
                (tracking & crate::tracking::bits::REDIRECT) as i64
            } else {
                -1
            },
            info.resp.load(Ordering::Relaxed),
            lib.as_ref().map_or("", |l| l.name.as_str()),
            lib.as_ref().map_or("", |l| l.version.as_str()),
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

    /// Everything the client uses, as Redis's getClientMemoryUsage counts
    /// it (CLIENT LIST's tot-mem): the query buffer's allocation, the
    /// reply buffer (which holds the output not written yet) and the
    /// messages waiting in the mailbox, the arguments of the command in
    /// flight, the transaction state, the Pub/Sub bookkeeping, and the
    /// client's own structures. Read from atomics only: cheap enough for
    /// every turn of the connection.
    pub fn memory_usage(&self) -> u64 {
        let argc = self.argc.load(Ordering::Relaxed) as usize;
        (self.query_buffer_alloc.load(Ordering::Relaxed)
            + self.reply_buffer_size.load(Ordering::Relaxed)
            + self.mailbox.len()
            + self.argv_mem.load(Ordering::Relaxed)
            + argc * std::mem::size_of::<&[u8]>()
            + self.multi_mem.load(Ordering::Relaxed)
            + self.multi_overhead.load(Ordering::Relaxed)
            + self.pubsub_overhead()
            + CLIENT_STRUCT) as u64
    }

    /// Redis's pubsubMemOverhead: the client's own bookkeeping of its
    /// subscriptions (a list node a pattern, a hash entry and slot a
    /// channel), not the names, which the registry shares.
    fn pubsub_overhead(&self) -> usize {
        const LIST_NODE: usize = 24;
        const DICT_ENTRY: usize = 24;
        let dict = |n: u32| match n as usize {
            0 => 0,
            n => n * DICT_ENTRY + n.next_power_of_two().max(4) * 8,
        };
        let s = &self.subscriptions;
        s.patterns.load(Ordering::Relaxed) as usize * LIST_NODE
            + dict(s.channels.load(Ordering::Relaxed))
            + dict(s.shard_channels.load(Ordering::Relaxed))
    }

    /// Sets the arguments of the command in flight (argv-mem): their
    /// bytes and number.
    #[inline]
    pub fn set_argv(&self, bytes: usize, argc: usize) {
        self.argv_mem.store(bytes, Ordering::Relaxed);
        self.argc.store(argc as u32, Ordering::Relaxed);
    }

    pub fn kill(&self) {
        self.ending.fetch_or(ending::KILLED, Ordering::SeqCst);
        self.wake.notify_one();
    }

    pub fn is_killed(&self) -> bool {
        self.ending.load(Ordering::Relaxed) & ending::KILLED != 0
    }

    /// Its last reply is being written and the connection then closes
    /// (QUIT, and the other commands that close after their reply). Redis
    /// frees such a client as soon as the reply is out, before it serves
    /// anyone else; here the connection closes on its own thread, so what
    /// looks a client up (a tracking redirection) treats it as gone already.
    pub fn mark_closing(&self) {
        self.ending.fetch_or(ending::CLOSING, Ordering::Release);
    }

    /// Killed, or closing after its last reply.
    pub fn is_gone(&self) -> bool {
        self.ending.load(Ordering::Acquire) != 0
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

    /// Redis's clientsCronResizeOutputBuffer, decided here and carried out
    /// by the connection: a reply buffer whose peak stayed under half its
    /// size shrinks to the peak (1 KiB at least); one that was filled
    /// doubles (16 KiB at most). With `resizing` off (DEBUG REPLYBUFFER
    /// RESIZING 0) the size stays. The peak restarts every `reset_ms`
    /// (never when negative), so an idle client's buffer shrinks.
    pub fn cron_reply_buffer(&self, now_ms: u64, resizing: bool, reset_ms: i64) -> ReplyResize {
        let size = self.reply_buffer_target.load(Ordering::Relaxed) as usize;
        let peak = self.reply_buffer_peak.load(Ordering::Relaxed) as usize;
        let mut change = ReplyResize::Unchanged;
        let mut new_size = size;
        if resizing {
            if size / 2 >= REPLY_BUFFER_MIN && peak < size / 2 {
                new_size = REPLY_BUFFER_MIN.max(peak + 1);
                change = ReplyResize::Shrunk;
            } else if size * 2 < REPLY_BUFFER_CHUNK * 2 && peak >= size {
                new_size = REPLY_BUFFER_CHUNK.min(size * 2);
                change = ReplyResize::Expanded;
            }
        }
        let since_connect = now_ms.saturating_sub(self.created_ms) as u32;
        let last_reset = self.reply_peak_reset_at.load(Ordering::Relaxed);
        if reset_ms >= 0 && since_connect.wrapping_sub(last_reset) as i64 >= reset_ms {
            let pending = self.output_pending.load(Ordering::Relaxed);
            self.reply_buffer_peak
                .store(pending.min(u32::MAX as usize) as u32, Ordering::Relaxed);
            self.reply_peak_reset_at
                .store(since_connect, Ordering::Relaxed);
        }
        if change != ReplyResize::Unchanged {
            self.reply_buffer_target
                .store(new_size as u32, Ordering::Relaxed);
            self.wake.notify_one();
        }
        change
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
    /// A client of the unix socket (`unixsocket`): its address reads
    /// `/unixsocket:0`, as Redis shows it.
    pub unix: bool,
}

/// The address of every unix socket client (Redis's anetFdToString).
pub const UNIX_ADDR: &str = "/unixsocket:0";

impl ConnInfo {
    pub fn embedded() -> ConnInfo {
        ConnInfo {
            peer: None,
            local: None,
            fd: -1,
            unix: false,
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
    /// The queued commands' arguments, with a reference each (Redis's
    /// mstate.argv_len_sums, CLIENT LIST's multi-mem).
    pub argv_mem: usize,
}

impl MultiState {
    /// Queues a command.
    pub fn push(&mut self, id: usize, argv: &[&[u8]]) {
        self.argv_mem += argv.iter().map(|a| a.len()).sum::<usize>()
            + argv.len() * std::mem::size_of::<Vec<u8>>();
        self.commands.push(QueuedCommand {
            id,
            argv: argv.iter().map(|a| a.to_vec()).collect(),
        });
    }
}

/// The keys a client WATCHes: (database, key) pairs and the shared flag
/// the databases' registries mark.
pub struct Watching {
    pub state: std::sync::Arc<crate::keyspace::watch::WatchState>,
    pub keys: Vec<(usize, Vec<u8>)>,
    /// The bytes of the keys' names (the client keeps a copy of each).
    pub key_bytes: usize,
}

/// What a connection does after a command instead of reading the next
/// one.
pub enum Handoff {
    /// PSYNC or SYNC: the connection is a replica's from now on; it sends
    /// it the stream (and a snapshot first, unless it continues).
    Replica(crate::repl::Attach),
    /// WAIT: the reply waits until `replicas` replicas acknowledged
    /// `offset`, or until `deadline_ms` (Unix ms; None: no limit).
    Wait {
        offset: u64,
        replicas: usize,
        deadline_ms: Option<u64>,
    },
    /// WAITAOF: the reply waits until the append-only file is on disk up
    /// to `aof_offset` (when `local`) and `replicas` replicas have theirs
    /// up to `repl_offset` (REPLCONF ACK's FACK), or until `deadline_ms`.
    WaitAof {
        aof_offset: u64,
        repl_offset: u64,
        local: bool,
        replicas: usize,
        deadline_ms: Option<u64>,
    },
    /// SHUTDOWN waiting for lagging replicas: no reply unless the
    /// shutdown is cancelled (the server stops otherwise).
    Shutdown,
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
    /// The replication stream's offset just past this client's last write
    /// (what WAIT waits for replicas to acknowledge).
    pub repl_offset: u64,
    /// The client is this engine's primary (the replica side's master
    /// client): its commands run whatever the replica's read-only and
    /// memory settings, with nothing expired, and are passed on to this
    /// engine's own replicas as they came.
    pub from_master: bool,
    /// The master client: the bytes of the primary's commands received
    /// and not yet passed on to this engine's replicas.
    pub master_bytes: Vec<u8>,
    /// What REPLCONF said before PSYNC.
    pub repl_conf: Option<Box<crate::repl::ReplConf>>,
    /// The replica this client is, once it sent PSYNC or SYNC.
    pub replica: Option<Arc<crate::repl::Replica>>,
    /// Set by a command after which the connection does something else
    /// than read the next command (see [`Handoff`]).
    pub handoff: Option<Handoff>,
    /// Records of commands run inside a transaction or a script, logged
    /// together when the outermost command ends.
    pub pending_propagation: Vec<crate::propagate::Record>,
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
    /// CLIENT TRACKING's state for this client (None until it is first
    /// needed: a client that never tracks, nor writes while others do,
    /// has none).
    pub tracking: Option<Box<crate::tracking::ClientTracking>>,
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
            repl_offset: 0,
            from_master: false,
            master_bytes: Vec::new(),
            repl_conf: None,
            replica: None,
            handoff: None,
            pending_propagation: Vec::new(),
            lent: Vec::new(),
            tracking: None,
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

    /// Publishes the memory of the transaction state (multi-mem and the
    /// rest of Redis's multiStateMemOverhead): the queue and the watched
    /// keys. O(1): both keep their sums as they grow.
    pub fn publish_multi_memory(&self) {
        let (argv, slots) = self.multi.as_ref().map_or((0, 0), |m| {
            (
                m.argv_mem,
                m.commands.capacity() * std::mem::size_of::<QueuedCommand>(),
            )
        });
        let watched = self.watching.as_ref().map_or(0, |w| {
            w.keys.capacity() * std::mem::size_of::<(usize, Vec<u8>)>() + w.key_bytes
        });
        self.info.multi_mem.store(argv, Ordering::Relaxed);
        self.info
            .multi_overhead
            .store(slots + watched, Ordering::Relaxed);
    }
}

/// The size of a client's own structures in the engine, counted in its
/// memory (Redis counts its client struct).
const CLIENT_STRUCT: usize = std::mem::size_of::<ClientInfo>() + std::mem::size_of::<ClientState>();

/// Redis's client memory usage buckets: bucket i holds the evictable
/// clients using [2^(15+i), 2^(16+i)) bytes, the first those under
/// 32 KiB too, the last those of 4 GiB and more.
const BUCKET_MIN_LOG: u32 = 15;
const BUCKET_MAX_LOG: u32 = 33;
const BUCKETS: usize = (BUCKET_MAX_LOG - BUCKET_MIN_LOG + 1) as usize;
const NO_BUCKET: u8 = u8::MAX;

/// Redis's getMemUsageBucket: log2 of the memory, clamped.
fn bucket_of(mem: u64) -> u8 {
    let bits = u64::BITS - mem.leading_zeros();
    (bits.clamp(BUCKET_MIN_LOG, BUCKET_MAX_LOG) - BUCKET_MIN_LOG) as u8
}

/// The memory of an engine's clients: the running total of what its
/// registered clients use (INFO's mem_clients_normal), the eviction limit
/// from `maxmemory-clients`, and the evictable clients by size.
///
/// A client's share changes by the difference between what it counted
/// for and what it counts for now (`accounted` swapped), so updates from
/// several threads (its connection, a publisher) keep the total exact.
#[derive(Default)]
pub struct ClientMemory {
    total: AtomicU64,
    /// Bytes; 0: no client eviction.
    limit: AtomicU64,
    /// Client ids by bucket (see `bucket_of`); a client moves only when
    /// its memory doubles or halves.
    buckets: Mutex<[BTreeSet<u64>; BUCKETS]>,
    /// Held while evicting, so that clients are evicted once.
    evicting: Mutex<()>,
    /// INFO's evicted_clients.
    pub evicted: AtomicU64,
}

impl ClientMemory {
    /// What the engine's clients use, in bytes.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Whether the clients use more than `maxmemory-clients` allows.
    #[inline]
    pub fn over_limit(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        limit != 0 && self.total.load(Ordering::Relaxed) >= limit
    }

    /// Redis's updateClientMemUsageAndBucket: counts what the client uses
    /// now, and moves it to its bucket (out of them when it may not be
    /// evicted).
    pub fn update(&self, c: &ClientInfo) {
        if !c.counted.load(Ordering::Relaxed) {
            return;
        }
        self.set(c, c.memory_usage());
    }

    /// The client's output grew by `n` bytes (a message reached its
    /// mailbox): counted without looking at the rest.
    pub fn grow(&self, c: &ClientInfo, n: usize) {
        if !c.counted.load(Ordering::Relaxed) {
            return;
        }
        let old = c.accounted.fetch_add(n as u64, Ordering::SeqCst);
        self.total.fetch_add(n as u64, Ordering::Relaxed);
        self.settle(c, old + n as u64);
    }

    fn set(&self, c: &ClientInfo, mem: u64) {
        // The common case, a client whose buffers kept their sizes, writes
        // nothing.
        if c.accounted.load(Ordering::Relaxed) == mem {
            if c.bucket.load(Ordering::Relaxed) != Self::bucket_for(c, mem) {
                self.rebucket(c);
            }
            return;
        }
        let old = c.accounted.swap(mem, Ordering::SeqCst);
        if old != mem {
            self.total
                .fetch_add(mem.wrapping_sub(old), Ordering::Relaxed);
        }
        self.settle(c, mem);
    }

    /// After a change of the client's share: gives it back when the client
    /// left meanwhile, and moves the client between buckets when its size
    /// (or NO-EVICT) says so.
    fn settle(&self, c: &ClientInfo, mem: u64) {
        if !c.counted.load(Ordering::SeqCst) {
            self.forget(c);
            return;
        }
        if Self::bucket_for(c, mem) != c.bucket.load(Ordering::Relaxed) {
            self.rebucket(c);
        }
    }

    /// The bucket a client using `mem` belongs in (NO_BUCKET when it may
    /// not be evicted).
    fn bucket_for(c: &ClientInfo, mem: u64) -> u8 {
        if c.no_evict.load(Ordering::Relaxed) {
            NO_BUCKET
        } else {
            bucket_of(mem)
        }
    }

    /// Puts the client in the bucket its current share calls for, under the
    /// buckets' lock (so two updates of one client cannot cross).
    fn rebucket(&self, c: &ClientInfo) {
        let mut buckets = self.buckets.lock();
        let want = if !c.counted.load(Ordering::SeqCst) || c.no_evict.load(Ordering::Relaxed) {
            NO_BUCKET
        } else {
            bucket_of(c.accounted.load(Ordering::SeqCst))
        };
        let current = c.bucket.load(Ordering::Relaxed);
        if current == want {
            return;
        }
        if current != NO_BUCKET {
            buckets[current as usize].remove(&c.id);
        }
        if want != NO_BUCKET {
            buckets[want as usize].insert(c.id);
        }
        c.bucket.store(want, Ordering::Relaxed);
    }

    /// The client leaves: its share goes, and it leaves its bucket.
    fn forget(&self, c: &ClientInfo) {
        c.counted.store(false, Ordering::SeqCst);
        let old = c.accounted.swap(0, Ordering::SeqCst);
        if old != 0 {
            self.total.fetch_sub(old, Ordering::Relaxed);
        }
        if c.bucket.load(Ordering::Relaxed) != NO_BUCKET {
            self.rebucket(c);
        }
    }

    /// The client to evict next: the first of the largest bucket.
    fn largest(&self) -> Option<u64> {
        let buckets = self.buckets.lock();
        buckets
            .iter()
            .rev()
            .find_map(|clients| clients.first().copied())
    }

    /// Drops an id whose client is gone from the buckets.
    fn drop_id(&self, id: u64) {
        for clients in self.buckets.lock().iter_mut() {
            clients.remove(&id);
        }
    }
}

/// Waits, for at most 10 ms in all, until none of `clients` but `me` has
/// input its connection has not read yet, or is in the middle of
/// processing what it read: what CLIENT LIST reports then includes the
/// effect of the commands those clients sent before it (a limit that
/// closed one, the buffers a big argument took), as Redis's event loop
/// serves every ready client in turn and never shows one halfway through
/// a command. Their connections do that on other threads without waiting
/// for anything this caller holds, so the wait is short; the bound covers
/// a client that does not read (blocked, paused).
pub fn await_turns(clients: &[Arc<ClientInfo>], me: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(10);
    for c in clients {
        if c.id == me {
            continue;
        }
        // The socket first: its connection marks its turn before it reads.
        while (unread_input(c.fd) || c.in_turn.load(Ordering::SeqCst))
            && std::time::Instant::now() < deadline
        {
            // Sleeps rather than spins: the thread waited for may need
            // this core.
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
}

/// Whether the socket `fd` holds input not read yet (FIONREAD).
fn unread_input(fd: i64) -> bool {
    if fd < 0 {
        return false;
    }
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int; a descriptor closed meanwhile (or
    // reused) only makes the answer wrong, which the caller's bound
    // covers.
    let r = unsafe { libc::ioctl(fd as libc::c_int, libc::FIONREAD, &mut n) };
    r == 0 && n > 0
}

/// Redis's getClientEvictionLimit: `maxmemory-clients` as bytes, or as a
/// percentage of `maxmemory` (none while maxmemory is 0); 0 for no limit,
/// and never less than 128 KiB, so that a bad setting cannot cut everyone
/// off.
pub fn eviction_limit(maxmemory_clients: &str, maxmemory: u64) -> u64 {
    let limit = match maxmemory_clients.strip_suffix('%') {
        Some(pct) => {
            let pct: u64 = pct.parse().unwrap_or(0);
            (maxmemory as f64 * pct as f64 / 100.0) as u64
        }
        None => crate::config::parse_memory(maxmemory_clients).unwrap_or(0) as u64,
    };
    match limit {
        0 => 0,
        n => n.max(128 * 1024),
    }
}

#[derive(Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    /// Shared with the Pub/Sub registry, which counts the messages it
    /// leaves in mailboxes.
    memory: Arc<ClientMemory>,
    next_id: AtomicU64,
    pub connected: AtomicUsize,
    /// Clients blocked on keys (INFO blocked_clients). While zero, writes
    /// skip the look-up for waiters.
    pub blocked: AtomicUsize,
    /// Those of them with a deadline (INFO clients_in_timeout_table).
    pub blocked_with_timeout: AtomicUsize,
    /// The largest buffers of the last seconds (INFO clients).
    recent_peaks: RecentPeaks,
    /// Each command id's full name ("config|get"), for CLIENT LIST's
    /// cmd= field: given by the command layer when the engine is built.
    command_names: CommandNames,
}

/// Each command id's full name ("config|get"), for CLIENT LIST's cmd=
/// field and the log lines that describe a client: given by the command
/// layer when the engine is built, shared by the registry and Pub/Sub.
pub type CommandNames = Arc<std::sync::OnceLock<Vec<&'static str>>>;

/// How many seconds the recent largest buffers cover (Redis's
/// CLIENTS_PEAK_MEM_USAGE_SLOTS).
const PEAK_SLOTS: usize = 8;

/// Redis's ClientsPeakMemInput and ClientsPeakMemOutput: the largest query
/// buffer and pending output the clients cron saw in each of the last
/// seconds, one slot a second (INFO's client_recent_max_input_buffer and
/// client_recent_max_output_buffer).
#[derive(Default)]
pub struct RecentPeaks {
    slots: Mutex<[(usize, usize); PEAK_SLOTS]>,
}

impl RecentPeaks {
    fn slot(now_ms: u64) -> usize {
        (now_ms / 1000) as usize % PEAK_SLOTS
    }

    /// Before a cron run: the slot of the second after this one starts
    /// empty, so that what it held ages out.
    pub fn next_second(&self, now_ms: u64) {
        self.slots.lock()[(Self::slot(now_ms) + 1) % PEAK_SLOTS] = (0, 0);
    }

    /// One client's query buffer and pending output, as the cron saw them.
    pub fn record(&self, now_ms: u64, input: usize, output: usize) {
        let mut slots = self.slots.lock();
        let s = &mut slots[Self::slot(now_ms)];
        s.0 = s.0.max(input);
        s.1 = s.1.max(output);
    }

    /// The largest input and output of the recent seconds.
    pub fn max(&self) -> (usize, usize) {
        self.slots
            .lock()
            .iter()
            .fold((0, 0), |(i, o), s| (i.max(s.0), o.max(s.1)))
    }
}

impl ClientRegistry {
    /// Names the command ids (see `ClientInfo::line`); the first call
    /// stands.
    pub fn set_command_names(&self, names: Vec<&'static str>) {
        let _ = self.command_names.set(names);
    }

    /// Each command id's full name (empty before `set_command_names`).
    pub fn command_names(&self) -> &[&'static str] {
        self.command_names.get().map_or(&[], |n| n.as_slice())
    }

    /// The names `set_command_names` gives, shared (Pub/Sub's log lines).
    pub fn command_names_shared(&self) -> CommandNames {
        self.command_names.clone()
    }

    pub fn register(&self, conn: &ConnInfo, now_ms: u64) -> Arc<ClientInfo> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let info = Arc::new(ClientInfo {
            id,
            addr: if conn.unix {
                UNIX_ADDR.into()
            } else {
                conn.peer.map(|a| a.to_string()).unwrap_or_default().into()
            },
            laddr: if conn.unix {
                UNIX_ADDR.into()
            } else {
                conn.local.map(|a| a.to_string()).unwrap_or_default().into()
            },
            fd: conn.fd,
            created_ms: now_ms,
            name: Mutex::new(None),
            lib: Mutex::new(None),
            last_interaction_ms: AtomicU64::new(now_ms),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_cmd: AtomicUsize::new(usize::MAX),
            query_buffer: AtomicUsize::new(0),
            query_buffer_free: AtomicUsize::new(0),
            query_buffer_alloc: AtomicUsize::new(0),
            query_buffer_peak: AtomicUsize::new(0),
            query_buffer_resize: AtomicUsize::new(usize::MAX),
            output_pending: AtomicUsize::new(0),
            reply_buffer_size: AtomicUsize::new(0),
            reply_buffer_peak: AtomicU32::new(0),
            reply_buffer_target: AtomicU32::new(REPLY_BUFFER_MIN as u32),
            reply_peak_reset_at: AtomicU32::new(0),
            no_touch: AtomicBool::new(false),
            argv_mem: AtomicUsize::new(0),
            argc: AtomicU32::new(0),
            multi_mem: AtomicUsize::new(0),
            multi_overhead: AtomicUsize::new(0),
            accounted: AtomicU64::new(0),
            bucket: AtomicU8::new(NO_BUCKET),
            counted: AtomicBool::new(conn.fd >= 0),
            multi_len: AtomicU64::new(0),
            in_turn: AtomicBool::new(false),
            in_multi: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            no_evict: AtomicBool::new(false),
            ending: AtomicU8::new(0),
            wake: tokio::sync::Notify::new(),
            mailbox: Default::default(),
            subscriptions: Default::default(),
            block: Mutex::new(None),
            user: Mutex::new(b"default".as_slice().into()),
            monitor: AtomicBool::new(false),
            repl_kind: AtomicU8::new(repl_kind::NONE),
            tracking: AtomicU64::new(0),
            pushed: Mutex::new(Vec::new()),
            has_pushed: AtomicBool::new(false),
        });
        if conn.fd >= 0 {
            self.clients.lock().insert(id, info.clone());
            self.connected.fetch_add(1, Ordering::Relaxed);
            self.memory.update(&info);
        }
        info
    }

    pub fn unregister(&self, id: u64) {
        let removed = self.clients.lock().remove(&id);
        if let Some(c) = removed {
            self.connected.fetch_sub(1, Ordering::Relaxed);
            self.memory.forget(&c);
        }
    }

    /// The memory accounting of this registry's clients.
    pub fn memory(&self) -> &Arc<ClientMemory> {
        &self.memory
    }

    /// What all connected clients use, in bytes (INFO's
    /// mem_clients_normal): a running total, one atomic load.
    pub fn memory_total(&self) -> u64 {
        self.memory.total()
    }

    /// Clients evicted for maxmemory-clients (INFO's evicted_clients).
    pub fn evicted(&self) -> u64 {
        self.memory.evicted.load(Ordering::Relaxed)
    }

    /// Sets the client eviction limit in bytes (see `eviction_limit`; 0:
    /// none).
    pub fn set_eviction_limit(&self, bytes: u64) {
        self.memory.limit.store(bytes, Ordering::Relaxed);
    }

    /// Counts what the client uses now (see `ClientMemory::update`), then
    /// evicts clients if that takes the total over the limit.
    pub fn update_memory(&self, c: &ClientInfo) {
        self.memory.update(c);
        self.evict_over_limit();
    }

    /// Redis's evictClients: while the clients use more than
    /// `maxmemory-clients` allows, the largest evictable client is closed
    /// (the first of the largest bucket), only until the total is under
    /// the limit. A client with CLIENT NO-EVICT on is never chosen, though
    /// its memory counts. One load when under the limit.
    pub fn evict_over_limit(&self) {
        let memory = &self.memory;
        if !memory.over_limit() {
            return;
        }
        let _one = memory.evicting.lock();
        while memory.over_limit() {
            let Some(id) = memory.largest() else {
                crate::log::warning("Over client maxmemory after evicting all evictable clients");
                break;
            };
            let Some(c) = self.get(id) else {
                memory.drop_id(id);
                continue;
            };
            crate::log::notice(&format!(
                "Evicting client: {}",
                c.line(crate::util::time::now_ms(), self.command_names())
            ));
            self.kill(&c);
            memory.evicted.fetch_add(1, Ordering::Relaxed);
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

    pub fn count(&self) -> usize {
        self.connected.load(Ordering::Relaxed)
    }

    /// The largest buffers of the last seconds.
    pub fn recent_peaks(&self) -> &RecentPeaks {
        &self.recent_peaks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every connected client holds one: its Arc stays in jemalloc's
    /// 448-byte class.
    #[test]
    fn client_info_fits_its_size_class() {
        assert!(
            std::mem::size_of::<ClientInfo>() + 16 <= 448,
            "{}",
            std::mem::size_of::<ClientInfo>()
        );
    }

    #[test]
    fn buckets_are_powers_of_two_from_32_kib() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(32 * 1024 - 1), 0);
        assert_eq!(bucket_of(32 * 1024), 1);
        assert_eq!(bucket_of(64 * 1024 - 1), 1);
        assert_eq!(bucket_of(64 * 1024), 2);
        assert_eq!(bucket_of(u64::MAX), (BUCKETS - 1) as u8);
    }

    #[test]
    fn eviction_limit_reads_bytes_and_percentages() {
        assert_eq!(eviction_limit("0", 1 << 20), 0);
        assert_eq!(eviction_limit("1mb", 0), 1 << 20);
        assert_eq!(eviction_limit("3000000", 0), 3_000_000);
        // Never below 128 KiB.
        assert_eq!(eviction_limit("1", 0), 128 * 1024);
        assert_eq!(eviction_limit("7%", 6 << 20), 440_401);
        // A percentage of no maxmemory is no limit.
        assert_eq!(eviction_limit("50%", 0), 0);
        assert_eq!(eviction_limit("0%", 1 << 30), 0);
    }
}
