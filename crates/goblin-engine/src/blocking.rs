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
//! (so after a whole EXEC), the session calls [`Engine::serve_ready`](crate::Engine::serve_ready). For
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

use crate::client::ClientInfo;
use crate::keyspace::{hash_key, CompactBytes, Dict, Object, Value, ValueType};
use crate::util::number::LongDouble;
use crate::util::time::now_ms;
use crate::Error;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
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

pub(crate) struct Outcome {
    pub(crate) state: BlockState,
    pub(crate) reply: Vec<u8>,
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
    pub(crate) outcome: Mutex<Outcome>,
    pub(crate) wake: tokio::sync::Notify,
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

    pub(crate) fn take_reply(&self) -> Vec<u8> {
        std::mem::take(&mut self.outcome.lock().reply)
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

    /// The clients waiting on `key`, in arrival order.
    pub fn waiters_of(&self, key: &[u8]) -> Vec<Arc<BlockedClient>> {
        self.keys
            .get(key)
            .map(|q| q.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether a client waits on the stream at `key` (XREAD, XREADGROUP).
    pub fn stream_waiters(&self, key: &[u8]) -> bool {
        self.keys
            .get(key)
            .is_some_and(|q| q.iter().any(|e| e.value_type == ValueType::Stream))
    }

    pub fn has_waiters(&self, key: &[u8]) -> bool {
        !self.keys.is_empty() && self.keys.contains_key(key)
    }

    pub(crate) fn add(&mut self, key: &[u8], entry: &Arc<BlockedClient>) {
        self.keys
            .entry(CompactBytes::from_slice(key))
            .or_default()
            .push_back(entry.clone());
    }

    pub(crate) fn remove(&mut self, key: &[u8], entry: &Arc<BlockedClient>) {
        if let Some(q) = self.keys.get_mut(key) {
            q.retain(|e| !Arc::ptr_eq(e, entry));
            if q.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    pub(crate) fn first(&self, key: &[u8]) -> Option<Arc<BlockedClient>> {
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
