//! Blocking commands: clients that wait for a key to receive data (BLPOP,
//! BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, the sorted-set pops, XREAD and
//! XREADGROUP with BLOCK); Redis's blocked.c.
//!
//! # The model
//!
//! **Blocking.** A blocking command that finds no data (and may block: not
//! inside MULTI/EXEC, a script, or while being served) calls
//! [`Ctx::block_on`](crate::command::Ctx::block_on) and writes no reply. That
//! creates a [`BlockedClient`] entry (the command and its arguments, the
//! client's database, protocol and [`ClientInfo`], the deadline) and appends
//! it, while the command still holds its shards, to the [`BlockingRegistry`]
//! of the database slice of every key it waits on. The entry is shared
//! (`Arc`) by all those keys. `Session::execute` then returns `Flow::Block`
//! and the connection waits on the entry, holding no lock.
//!
//! **Ready keys.** A command that may give data to a waiter (a push, the
//! destination of a move, a rename...) calls
//! [`Ctx::signal_ready`](crate::command::Ctx::signal_ready). When no client is
//! blocked anywhere this costs one relaxed atomic load; otherwise, when the
//! key's registry has waiters, the (database, key) pair is recorded on the
//! calling client. Since the check happens under the key's shard lock, as
//! does registration, a waiter cannot be missed. A stream deleted, expired,
//! overwritten or flushed while clients wait on its key is noted by the
//! `Db` itself (`BlockingRegistry::stream_gone`), and the key is made ready
//! once the command is done, so that XREADGROUP waiters learn that their
//! stream went away (Redis signals such keys from dbDelete and
//! dbOverwrite).
//!
//! **Serving.** After the top-level command finished and released its locks
//! (so after a whole EXEC), the session calls [`Engine::serve_ready`]. For
//! each ready key, first waiter first (FIFO: the longest-waiting client is
//! served first): lock the shards of every key of the waiter's command (a
//! BLMOVE destination may live on another shard), check the waiter is still
//! waiting and the key still holds data of the awaited type, run the
//! waiter's command on its behalf through `Engine::call` (restricted to the
//! ready key, and never blocking again), deliver the reply bytes into the
//! entry, mark it served and wake its connection. Keys that the served
//! command makes ready in turn (BLMOVE pushing to a key others wait on) join
//! the queue. Serving a key continues while it has data and waiters. A
//! stream waiter's command runs whatever the key holds, since only it can
//! tell whether there is something for it (entries past its ID, a group
//! still there): when there is not, it declines (`Ctx::keep_waiting`) and
//! the client goes on waiting.
//!
//! **Timeouts, CLIENT UNBLOCK, disconnects.** Every way out of the wait
//! resolves the entry under the shard locks of its keys, after checking it
//! is still waiting: a timeout (the connection wakes at the deadline), CLIENT
//! UNBLOCK (which holds every shard), a disconnect or CLIENT KILL (the
//! session's drop). Serving checks the same state under the same locks, so
//! exactly one outcome wins, and whichever wins removes the entry from every
//! registry: nothing is left behind.
//!
//! Like WATCH's registry, the blocking registry belongs to the database
//! index, not to its data: SWAPDB leaves it in place and then signals the
//! keys that became ready (Redis's scanDatabaseForReadyKeys).

use crate::client::{ClientInfo, ClientState};
use crate::command::table;
use crate::engine::Engine;
use crate::keyspace::{hash_key, CompactBytes, Dict, Object, ShardLocks, Value, ValueType};
use crate::protocol::ReplyWriter;
use crate::stats::ThreadStats;
use crate::util::number::LongDouble;
use crate::util::time::now_ms;
use crate::Error;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Where a blocked client stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    Waiting,
    /// Its command ran on its behalf; the reply is in the entry.
    Served,
    TimedOut,
    /// CLIENT UNBLOCK.
    Unblocked,
    /// Disconnected or killed while waiting.
    Cancelled,
}

struct Outcome {
    state: BlockState,
    reply: Vec<u8>,
}

/// One blocked client, shared by the registries of every key it waits on.
pub struct BlockedClient {
    pub info: Arc<ClientInfo>,
    /// The blocking command (table id) and its arguments, run again when a
    /// key is ready.
    pub cmd_id: usize,
    pub argv: Vec<Vec<u8>>,
    pub db: usize,
    pub resp: u8,
    /// The distinct keys waited on.
    pub keys: Vec<CompactBytes>,
    /// The type of value that serves it (a list for BLPOP: a string pushed
    /// under the key does not wake it).
    pub value_type: ValueType,
    /// Absolute deadline in Unix ms; None = forever.
    pub deadline_ms: Option<u64>,
    /// Where the served command's records end in the append-only file:
    /// the reply waits for them as any reply does (see connection.rs).
    pub aof_offset: std::sync::atomic::AtomicU64,
    /// When it blocked (monotonic ns): its duration for the statistics
    /// and the slow log runs from here.
    pub since_ns: u64,
    outcome: Mutex<Outcome>,
    wake: tokio::sync::Notify,
}

impl BlockedClient {
    pub fn state(&self) -> BlockState {
        self.outcome.lock().state
    }

    /// Waits until the entry leaves the waiting state.
    pub async fn resolved(&self) {
        loop {
            // A notification sent between this check and the await is kept
            // as a permit by Notify, so it cannot be lost.
            if self.state() != BlockState::Waiting {
                return;
            }
            self.wake.notified().await;
        }
    }

    /// The time left before the deadline (None = no deadline).
    pub fn time_left(&self) -> Option<std::time::Duration> {
        self.deadline_ms
            .map(|d| std::time::Duration::from_millis(d.saturating_sub(now_ms())))
    }

    fn take_reply(&self) -> Vec<u8> {
        std::mem::take(&mut self.outcome.lock().reply)
    }

    fn shards(&self, engine: &Engine) -> Vec<usize> {
        self.keys
            .iter()
            .map(|k| engine.keyspace().shard_of_key(k))
            .collect()
    }
}

/// The clients blocked on the keys of one database slice, per key in
/// arrival order.
#[derive(Default)]
pub struct BlockingRegistry {
    keys: HashMap<CompactBytes, VecDeque<Arc<BlockedClient>>>,
    /// Keys waited on whose stream was deleted or replaced since the
    /// running command started: their XREADGROUP waiters are to be told
    /// (Redis signals a stream key as ready when dbDelete or dbOverwrite
    /// removes it). Collected after the command by `collect_gone_streams`.
    gone: Vec<CompactBytes>,
}

impl BlockingRegistry {
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Notes that the stream at `key` went away (see `gone`).
    pub fn stream_gone(&mut self, key: &[u8]) {
        if self.has_waiters(key) && !self.gone.iter().any(|k| k.as_slice() == key) {
            self.gone.push(CompactBytes::from_slice(key));
        }
    }

    pub fn has_waiters(&self, key: &[u8]) -> bool {
        !self.keys.is_empty() && self.keys.contains_key(key)
    }

    fn add(&mut self, key: &[u8], entry: &Arc<BlockedClient>) {
        self.keys
            .entry(CompactBytes::from_slice(key))
            .or_default()
            .push_back(entry.clone());
    }

    fn remove(&mut self, key: &[u8], entry: &Arc<BlockedClient>) {
        if let Some(q) = self.keys.get_mut(key) {
            q.retain(|e| !Arc::ptr_eq(e, entry));
            if q.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    fn first(&self, key: &[u8]) -> Option<Arc<BlockedClient>> {
        self.keys.get(key).and_then(|q| q.front().cloned())
    }

    /// The keys someone waits on.
    pub fn keys(&self) -> impl Iterator<Item = &CompactBytes> {
        self.keys.keys()
    }

    /// Blocked entries over all keys (a client waiting on two keys counts twice).
    pub fn count(&self) -> usize {
        self.keys.values().map(VecDeque::len).sum()
    }
}

/// A stream leaving a key that clients wait on is noted for them (see
/// `gone`): Redis signals a stream key as ready when dbDelete or
/// dbOverwrite removes it.
impl crate::keyspace::Waiters for BlockingRegistry {
    fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn value_left(&mut self, key: &[u8], old: &Value) {
        if matches!(old, Value::Stream(_)) {
            self.stream_gone(key);
        }
    }

    fn table_emptied(&mut self, table: &Dict<Object>) {
        let streams: Vec<CompactBytes> = self
            .keys
            .keys()
            .filter(|k| {
                matches!(
                    table.get(hash_key(k), k),
                    Some(Object {
                        value: Value::Stream(_),
                        ..
                    })
                )
            })
            .cloned()
            .collect();
        for k in streams {
            self.stream_gone(&k);
        }
    }
}

/// Redis's getTimeoutFromObjectOrReply for a timeout in seconds: the
/// absolute deadline in ms, or None for 0 (wait forever).
pub fn parse_timeout(arg: &[u8], now_ms: u64) -> Result<Option<u64>, Error> {
    let secs = LongDouble::parse(arg)
        .ok_or_else(|| Error::err("timeout is not a float or out of range"))?;
    let ms = secs.seconds_to_ms();
    if ms < 0 {
        return Err(Error::err("timeout is negative"));
    }
    if ms == 0 {
        return Ok(None);
    }
    // Redis adds the clock without an overflow check; a sum past the range
    // wraps to a time already gone, so the client times out at once.
    let at = ms.wrapping_add(now_ms as i64);
    Ok(Some(at.max(1) as u64))
}

/// What a blocking command asks for when it finds no data.
pub struct BlockRequest<'k> {
    pub keys: &'k [&'k [u8]],
    pub deadline_ms: Option<u64>,
    pub value_type: ValueType,
}

impl Engine {
    /// Registers a block (called by `Ctx::block_on`, with the shards of
    /// every key held).
    pub(crate) fn register_block(
        &self,
        locks: &mut ShardLocks<'_>,
        client: &mut ClientState,
        cmd_id: usize,
        argv: &[&[u8]],
        req: BlockRequest<'_>,
    ) {
        let mut keys: Vec<CompactBytes> = Vec::with_capacity(req.keys.len());
        for k in req.keys {
            if !keys.iter().any(|have| have.as_slice() == *k) {
                keys.push(CompactBytes::from_slice(k));
            }
        }
        let entry = Arc::new(BlockedClient {
            info: client.info.clone(),
            cmd_id,
            argv: argv.iter().map(|a| a.to_vec()).collect(),
            db: client.db,
            resp: client.resp,
            keys,
            value_type: req.value_type,
            deadline_ms: req.deadline_ms,
            aof_offset: std::sync::atomic::AtomicU64::new(0),
            since_ns: crate::util::time::monotonic_ns(),
            outcome: Mutex::new(Outcome {
                state: BlockState::Waiting,
                reply: Vec::new(),
            }),
            wake: tokio::sync::Notify::new(),
        });
        // Counted before the entry becomes visible, so a writer that sees
        // the entry also sees a non-zero count.
        self.clients().blocked.fetch_add(1, Ordering::SeqCst);
        if entry.deadline_ms.is_some() {
            self.clients()
                .blocked_with_timeout
                .fetch_add(1, Ordering::Relaxed);
        }
        for key in &entry.keys {
            let idx = self.keyspace().shard_of_key(key);
            locks.shard(idx).dbs[entry.db].waiters.add(key, &entry);
        }
        client.info.blocked.store(true, Ordering::Relaxed);
        *client.info.block.lock() = Some(entry.clone());
        client.blocked = Some(entry);
    }

    /// Ends a wait (the caller holds the shards of every key of the entry):
    /// removes the entry from every registry, stores its reply and wakes
    /// its connection. False when it was no longer waiting.
    fn resolve(
        &self,
        locks: &mut ShardLocks<'_>,
        entry: &Arc<BlockedClient>,
        state: BlockState,
        reply: Vec<u8>,
    ) -> bool {
        let mut outcome = entry.outcome.lock();
        if outcome.state != BlockState::Waiting {
            return false;
        }
        for key in &entry.keys {
            let idx = self.keyspace().shard_of_key(key);
            locks.shard(idx).dbs[entry.db].waiters.remove(key, entry);
        }
        self.clients().blocked.fetch_sub(1, Ordering::SeqCst);
        if entry.deadline_ms.is_some() {
            self.clients()
                .blocked_with_timeout
                .fetch_sub(1, Ordering::Relaxed);
        }
        entry.info.blocked.store(false, Ordering::Relaxed);
        {
            let mut current = entry.info.block.lock();
            if current.as_ref().is_some_and(|e| Arc::ptr_eq(e, entry)) {
                *current = None;
            }
        }
        outcome.state = state;
        outcome.reply = reply;
        drop(outcome);
        entry.wake.notify_one();
        true
    }

    /// Resolves an entry taking its shards' locks.
    fn resolve_locking(&self, entry: &Arc<BlockedClient>, state: BlockState, reply: Vec<u8>) {
        if entry.state() != BlockState::Waiting {
            return;
        }
        let mut locks = self.keyspace().lock_set(entry.shards(self));
        self.resolve(&mut locks, entry, state, reply);
    }

    /// The reply of a wait that ended without data: a null array, for
    /// every blocking command (Redis's replyToBlockedClientTimedOut).
    fn timeout_reply(resp: u8) -> Vec<u8> {
        let mut out = ReplyWriter::new(resp);
        out.null_array();
        out.buf
    }

    /// CLIENT UNBLOCK: the caller holds every shard. True when the client
    /// was blocked (and now is not).
    pub fn unblock_client(
        &self,
        locks: &mut ShardLocks<'_>,
        stats: &ThreadStats,
        client: &ClientInfo,
        with_error: bool,
    ) -> bool {
        let Some(entry) = client.block.lock().clone() else {
            return false;
        };
        let reply = if with_error {
            let mut out = ReplyWriter::new(entry.resp);
            out.error("UNBLOCKED client unblocked via CLIENT UNBLOCK");
            out.buf
        } else {
            Self::timeout_reply(entry.resp)
        };
        if !self.resolve(locks, &entry, BlockState::Unblocked, reply) {
            return false;
        }
        // Redis counts the unblocked call as failed, and the error reply.
        stats.commands[entry.cmd_id]
            .failed
            .fetch_add(1, Ordering::Relaxed);
        if with_error {
            stats.error_replies.fetch_add(1, Ordering::Relaxed);
            self.stats().record_error(b"UNBLOCKED");
        }
        true
    }

    /// Ends every wait with `error` (Redis's disconnectAllBlockedClients,
    /// when a primary turns replica: the keys they wait on are its
    /// primary's to change now).
    pub fn unblock_all_with(&self, error: &str) {
        let blocked: Vec<_> = self
            .clients()
            .all()
            .into_iter()
            .filter_map(|c| c.block.lock().clone())
            .collect();
        if blocked.is_empty() {
            return;
        }
        let mut locks = self.keyspace().lock_all();
        for entry in blocked {
            let mut out = ReplyWriter::new(entry.resp);
            out.error(error);
            if self.resolve(&mut locks, &entry, BlockState::Unblocked, out.buf) {
                self.stats().record_error(b"UNBLOCKED");
            }
        }
    }

    /// Serves the clients blocked on the `ready` keys, first come first
    /// served, with no lock held by the caller.
    ///
    /// The waiters of a key are visited in arrival order. A list or sorted
    /// set waiter is served while the key holds its type. A stream waiter's
    /// command always runs, since only it can tell whether the stream has
    /// something for it (entries past its ID, a group that still exists):
    /// when it has not, the command declines (`Ctx::keep_waiting`) and the
    /// client goes on waiting. A pass that served someone is followed by
    /// another, for the waiters that came meanwhile.
    pub fn serve_ready(&self, stats: &ThreadStats, ready: Vec<(usize, CompactBytes)>) {
        let mut queue: VecDeque<(usize, CompactBytes)> = ready.into();
        while let Some((db, key)) = queue.pop_front() {
            let h = hash_key(&key);
            let shard = self.keyspace().shard_of(h);
            loop {
                let waiters: Vec<Arc<BlockedClient>> = self.keyspace().lock(shard).dbs[db]
                    .waiters
                    .keys
                    .get(key.as_slice())
                    .map(|q| q.iter().cloned().collect())
                    .unwrap_or_default();
                let mut served_any = false;
                for entry in waiters {
                    if entry.state() != BlockState::Waiting {
                        continue;
                    }
                    let spec = table().get(entry.cmd_id).spec;
                    let argv: Vec<&[u8]> = entry.argv.iter().map(|a| a.as_slice()).collect();
                    let mut locks = self.locks_for(spec, &argv, false);
                    if !locks.holds(shard) {
                        // Cannot happen for a well-formed command (the key
                        // is one of its keys); never serve without the lock.
                        continue;
                    }
                    if entry.state() != BlockState::Waiting {
                        continue;
                    }
                    if entry.info.is_killed() {
                        // Its connection is going away; do not hand it data.
                        self.resolve(&mut locks, &entry, BlockState::Cancelled, Vec::new());
                        continue;
                    }
                    let now = now_ms();
                    if entry.value_type != ValueType::Stream {
                        let table = &mut locks.shard(shard).dbs[db];
                        let has_data = table
                            .peek(h, &key, now)
                            .is_some_and(|o| o.value.value_type() == entry.value_type);
                        if !has_data {
                            // An expired key is deleted, and its DEL logged
                            // after the command that made it ready, as
                            // Redis's lookupKeyWrite does for the waiters.
                            table.lookup(h, &key, crate::keyspace::Now::at(now));
                            crate::persist::log_expired(self, locks.shard(shard));
                            continue;
                        }
                    }
                    let mut client =
                        ClientState::new(entry.info.clone(), entry.db, entry.resp, true, false);
                    client.blocked_since_ns = entry.since_ns;
                    let mut out = ReplyWriter::new(entry.resp);
                    self.call_with(
                        &mut client,
                        &mut out,
                        &mut locks,
                        stats,
                        entry.cmd_id,
                        &argv,
                        now,
                        false,
                        false,
                        Some(&key),
                    );
                    if client.keep_waiting {
                        continue;
                    }
                    entry.aof_offset.store(client.aof_offset, Ordering::Relaxed);
                    self.resolve(&mut locks, &entry, BlockState::Served, out.buf);
                    served_any = true;
                    drop(locks);
                    for (d, k) in client.ready_keys {
                        if !queue.iter().any(|(qd, qk)| *qd == d && *qk == k) {
                            queue.push_back((d, k));
                        }
                    }
                }
                if !served_any {
                    break;
                }
            }
        }
    }

    /// After a command: the keys of the held shards whose stream went away
    /// while someone waited on them (see `BlockingRegistry::gone`), queued
    /// as ready so that their XREADGROUP waiters learn it.
    pub(crate) fn collect_gone_streams(
        &self,
        locks: &mut ShardLocks<'_>,
        ready: &mut Vec<(usize, CompactBytes)>,
    ) {
        for shard in locks.held_mut() {
            take_gone(shard, ready);
        }
    }

    /// Blocked entries over every database and key (a client waiting on
    /// two keys counts twice); zero when nobody is blocked. Takes each
    /// shard's lock in turn.
    pub fn blocked_entries(&self) -> usize {
        (0..self.keyspace().shard_count())
            .map(|i| {
                self.keyspace()
                    .lock(i)
                    .dbs
                    .iter()
                    .map(|d| d.waiters.count())
                    .sum::<usize>()
            })
            .sum()
    }

    /// SWAPDB: records the keys of databases `a` and `b` that now hold data
    /// for their waiters (the caller holds every shard).
    pub(crate) fn ready_after_swap(
        &self,
        locks: &mut ShardLocks<'_>,
        dbs: [usize; 2],
        ready: &mut Vec<(usize, CompactBytes)>,
    ) {
        if self.clients().blocked.load(Ordering::Relaxed) == 0 {
            return;
        }
        for shard in locks.held_mut() {
            for db in dbs {
                let slice = &shard.dbs[db];
                for key in slice.waiters.keys() {
                    let waiting_for = slice.waiters.first(key).map(|e| e.value_type);
                    // An expired key counts (read at time 0): serving
                    // deletes it and logs its DEL, as Redis's
                    // scanDatabaseForReadyKeys signals every key present.
                    let current = slice
                        .peek(hash_key(key), key, 0)
                        .map(|o| o.value.value_type());
                    // Stream waiters decide for themselves: new entries
                    // may serve them, a stream gone away ends XREADGROUP
                    // (Redis's scanDatabaseForDeletedStreams).
                    let stream_waiters = slice
                        .waiters
                        .keys
                        .get(key.as_slice())
                        .is_some_and(|q| q.iter().any(|e| e.value_type == ValueType::Stream));
                    if current == waiting_for || stream_waiters {
                        ready.push((db, key.clone()));
                    }
                }
            }
        }
    }
}

/// Moves the gone-stream keys of a shard's databases into `ready`.
pub(crate) fn take_gone(
    shard: &mut crate::keyspace::Shard,
    ready: &mut Vec<(usize, CompactBytes)>,
) {
    for (db, slice) in shard.dbs.iter_mut().enumerate() {
        for key in slice.waiters.gone.drain(..) {
            if !ready.iter().any(|(d, k)| *d == db && *k == key) {
                ready.push((db, key));
            }
        }
    }
}

impl crate::engine::Session {
    /// The wait in progress after `execute` returned `Flow::Block`.
    pub fn blocked(&self) -> Option<&Arc<BlockedClient>> {
        self.state.blocked.as_ref()
    }

    /// Ends the wait in progress and appends its reply to `out`: the reply
    /// of the served command or of CLIENT UNBLOCK when one came, else (the
    /// deadline passed) the timeout reply.
    pub fn finish_block(&mut self) {
        let Some(entry) = self.state.blocked.take() else {
            return;
        };
        let timeout = Engine::timeout_reply(entry.resp);
        self.engine
            .resolve_locking(&entry, BlockState::TimedOut, timeout);
        let reply = entry.take_reply();
        self.state.aof_offset = self
            .state
            .aof_offset
            .max(entry.aof_offset.load(Ordering::Relaxed));
        if !self.block_reply_discarded {
            self.out.raw(&reply);
        }
        self.block_reply_discarded = false;
    }

    /// Gives up a wait in progress (the client disconnected or was killed).
    pub fn cancel_block(&mut self) {
        if let Some(entry) = self.state.blocked.take() {
            self.engine
                .resolve_locking(&entry, BlockState::Cancelled, Vec::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_as_redis_does() {
        assert_eq!(parse_timeout(b"0", 1000).unwrap(), None);
        assert_eq!(parse_timeout(b"1", 1000).unwrap(), Some(2000));
        // Rounded up to the next millisecond.
        assert_eq!(parse_timeout(b"0.0001", 1000).unwrap(), Some(1001));
        assert_eq!(parse_timeout(b"-0.0001", 1000).unwrap(), None);
        for bad in [&b"abc"[..], b"", b" 1", b"nan"] {
            assert_eq!(
                parse_timeout(bad, 0).unwrap_err().text(),
                "ERR timeout is not a float or out of range"
            );
        }
        for neg in [&b"-1"[..], b"inf", b"1e30", b"1e16"] {
            assert_eq!(
                parse_timeout(neg, 0).unwrap_err().text(),
                "ERR timeout is negative"
            );
        }
    }
}
