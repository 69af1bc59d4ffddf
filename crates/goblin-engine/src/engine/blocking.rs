//! Blocked clients served and resolved (BLPOP, XREAD BLOCK, WAIT...):
//! the engine's side of `crate::blocking`, which keeps the waiting
//! clients' state. A key made ready runs the blocked command again with its
//! shards held; a deadline, CLIENT UNBLOCK or a disconnect resolves it.

use super::*;
use crate::blocking::*;
use crate::command::table;
use crate::keyspace::{hash_key, CompactBytes, ValueType};
use parking_lot::Mutex;
use std::collections::VecDeque;

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
        let mut locks = self.keyspace().lock_set(shards_of(entry, self));
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
                let waiters = self.keyspace().lock(shard).dbs[db]
                    .waiters
                    .waiters_of(key.as_slice());
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
                            self.propagate_expired(locks.shard(shard));
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
                    let stream_waiters = slice.waiters.stream_waiters(key);
                    if current == waiting_for || stream_waiters {
                        ready.push((db, key.clone()));
                    }
                }
            }
        }
    }
}

impl Session {
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

fn shards_of(entry: &BlockedClient, engine: &Engine) -> Vec<usize> {
    entry
        .keys
        .iter()
        .map(|k| engine.keyspace().shard_of_key(k))
        .collect()
}
