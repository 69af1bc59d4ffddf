//! WATCH bookkeeping: which clients watch which keys of a database.
//!
//! The registry lives inside each `Db` (so inside a shard, under its lock):
//! a write to a watched key marks its watchers dirty while the writer still
//! holds the shard, and EXEC checks the flag while holding the shards of
//! every watched key, so "check, then run the transaction" is atomic.

use super::bytes::CompactBytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One client's WATCH state, shared with every registry it is listed in.
#[derive(Debug, Default)]
pub struct WatchState {
    pub client_id: u64,
    /// Set when a watched key changes (Redis's CLIENT_DIRTY_CAS).
    pub dirty: AtomicBool,
}

impl WatchState {
    pub fn new(client_id: u64) -> Arc<WatchState> {
        Arc::new(WatchState {
            client_id,
            dirty: AtomicBool::new(false),
        })
    }

    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }

    fn mark(&self) {
        self.dirty.store(true, Ordering::Release);
    }
}

#[derive(Debug)]
struct Watcher {
    state: Arc<WatchState>,
    /// The key had already expired (but was not deleted) when watched:
    /// its deletion is then not a change (Redis's watchedKey.expired).
    expired: bool,
}

#[derive(Default, Debug)]
pub struct WatchRegistry {
    keys: HashMap<CompactBytes, Vec<Watcher>>,
}

impl WatchRegistry {
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn add(&mut self, key: &[u8], state: &Arc<WatchState>, expired: bool) {
        let list = self.keys.entry(CompactBytes::from_slice(key)).or_default();
        if !list.iter().any(|w| Arc::ptr_eq(&w.state, state)) {
            list.push(Watcher {
                state: state.clone(),
                expired,
            });
        }
    }

    pub fn remove(&mut self, key: &[u8], state: &Arc<WatchState>) {
        if let Some(list) = self.keys.get_mut(key) {
            list.retain(|w| !Arc::ptr_eq(&w.state, state));
            if list.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    /// A watched key changed. `exists` tells whether the key is present
    /// after the change (the deletion of an already-expired key is not a
    /// logical change for those who watched it expired).
    pub fn touch(&mut self, key: &[u8], exists: bool) {
        let Some(list) = self.keys.get_mut(key) else {
            return;
        };
        for w in list.iter_mut() {
            if w.expired && !exists {
                w.expired = false;
                continue;
            }
            w.state.mark();
        }
    }

    /// FLUSHDB / FLUSHALL / SWAPDB (Redis's touchAllWatchedKeysInDb).
    /// `state(key)` tells, for each watched key, whether it exists in the
    /// database being emptied, and whether it exists / is expired in the
    /// database replacing it (None for a flush).
    pub fn touch_all(&mut self, mut state: impl FnMut(&[u8]) -> (bool, Option<(bool, bool)>)) {
        for (key, list) in self.keys.iter_mut() {
            let (in_emptied, replaced) = state(key);
            let in_replacement = replaced.is_some_and(|(exists, _)| exists);
            let replacement_expired = replaced.is_some_and(|(_, expired)| expired);
            if !(in_emptied || in_replacement) {
                continue;
            }
            for w in list.iter_mut() {
                if w.expired {
                    if !in_replacement {
                        // An expired key is now gone: no logical change.
                        w.expired = false;
                        continue;
                    } else if replacement_expired {
                        continue;
                    }
                } else if !in_emptied && replacement_expired {
                    // A missing key replaced by an expired one.
                    w.expired = true;
                    continue;
                }
                w.state.mark();
            }
        }
    }

    /// Whether `state` watched `key` when it had already expired.
    pub fn watched_expired(&self, key: &[u8], state: &Arc<WatchState>) -> bool {
        self.keys
            .get(key)
            .is_some_and(|l| l.iter().any(|w| Arc::ptr_eq(&w.state, state) && w.expired))
    }

    pub fn count(&self) -> usize {
        self.keys.values().map(Vec::len).sum()
    }
}
