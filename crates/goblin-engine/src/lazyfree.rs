//! The engine's lazy-free worker (Redis's BIO_LAZY_FREE thread): values
//! whose freeing takes many allocations (a large list, hash, set, sorted
//! set or stream) are dropped on a thread of their own, so that UNLINK,
//! a DEL under lazyfree-lazy-user-del and an eviction under
//! lazyfree-lazy-eviction return at once. INFO shows
//! lazyfree_pending_objects and lazyfreed_objects; what waits is still
//! counted in used_memory until it is freed.

use crate::keyspace::Value;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// Redis's LAZYFREE_THRESHOLD: values whose freeing costs more than this
/// many allocations go to the lazy-free worker.
const LAZYFREE_THRESHOLD: usize = 64;

/// Redis's lazyfreeGetFreeEffort: about how many allocations freeing the
/// value takes.
fn free_effort(value: &Value) -> usize {
    match value {
        Value::Str(_) => 1,
        Value::List(l) => l.node_count(),
        Value::Hash(h) if h.encoding() == "hashtable" => h.len(),
        Value::Set(s) if s.encoding() == "hashtable" => s.len(),
        Value::ZSet(z) if z.encoding() == "skiplist" => z.len(),
        Value::Stream(s) => s.entries.node_count() + s.groups.len(),
        _ => 1,
    }
}

/// The engine's lazy-free worker: values dropped on a thread of their own
/// (Redis's BIO_LAZY_FREE), with INFO's lazyfree_pending_objects and
/// lazyfreed_objects.
#[derive(Default)]
pub struct LazyFree {
    sender: std::sync::OnceLock<Mutex<mpsc::Sender<(Value, u64)>>>,
    pending: std::sync::Arc<LazyCounts>,
}

#[derive(Default)]
struct LazyCounts {
    objects: AtomicU64,
    bytes: AtomicU64,
    freed: AtomicU64,
}

impl LazyFree {
    /// Frees `value` (charged `bytes`): on the worker when that takes
    /// many allocations, here otherwise (Redis's dbAsyncDelete).
    pub fn free(&self, value: Value, bytes: u64) {
        if free_effort(&value) <= LAZYFREE_THRESHOLD {
            drop(value);
            return;
        }
        let sender = self.sender.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<(Value, u64)>();
            let counts = self.pending.clone();
            let _ = std::thread::Builder::new()
                .name("lazyfree".into())
                .spawn(move || {
                    for (value, bytes) in rx {
                        drop(value);
                        counts.objects.fetch_sub(1, Ordering::Relaxed);
                        counts.bytes.fetch_sub(bytes, Ordering::Relaxed);
                        counts.freed.fetch_add(1, Ordering::Relaxed);
                    }
                });
            Mutex::new(tx)
        });
        self.pending.objects.fetch_add(1, Ordering::Relaxed);
        self.pending.bytes.fetch_add(bytes, Ordering::Relaxed);
        if let Err(mpsc::SendError((value, bytes))) = sender.lock().send((value, bytes)) {
            // No worker (it could not start): freed here.
            drop(value);
            self.pending.objects.fetch_sub(1, Ordering::Relaxed);
            self.pending.bytes.fetch_sub(bytes, Ordering::Relaxed);
        }
    }

    /// INFO lazyfree_pending_objects.
    pub fn pending_objects(&self) -> u64 {
        self.pending.objects.load(Ordering::Relaxed)
    }

    pub fn pending_bytes(&self) -> u64 {
        self.pending.bytes.load(Ordering::Relaxed)
    }

    /// CONFIG RESETSTAT (Redis's lazyfreeResetStats).
    pub fn reset_stats(&self) {
        self.pending.freed.store(0, Ordering::Relaxed);
    }

    /// INFO lazyfreed_objects.
    pub fn freed_objects(&self) -> u64 {
        self.pending.freed.load(Ordering::Relaxed)
    }
}
