//! Eviction under maxmemory, the engine's side of `crate::evict` (which
//! keeps the policy, the pool and the counters): measuring memory,
//! choosing keys by the policy, deleting and propagating them, and the
//! worker that goes on evicting after a command's time limit.

use super::*;
use crate::evict::*;
use crate::keyspace::{CompactBytes, Object};
use parking_lot::Mutex;
use std::sync::mpsc;

impl Engine {
    /// What this engine holds, part by part (see [`MemoryUse`]).
    pub fn memory_use(&self) -> MemoryUse {
        let scripts = self.scripts_memory();
        self.evictor()
            .scripts_memory
            .store(scripts, Ordering::Relaxed);
        MemoryUse {
            scripts,
            ..self.memory_use_fast()
        }
    }

    /// `memory_use` with the scripts' part as last measured (by the cron,
    /// INFO or MEMORY): every other part is a counter, read in one load,
    /// while measuring the interpreters takes a lock. What eviction
    /// checks before each command.
    fn memory_use_fast(&self) -> MemoryUse {
        MemoryUse {
            startup: self.memory_startup(),
            dataset: self.keyspace().env().dataset_bytes(),
            tracking: self.tracking().memory(),
            clients: self.clients().memory_total(),
            scripts: self.evictor().scripts_memory.load(Ordering::Relaxed),
            lazy_pending: self.lazyfree().pending_bytes(),
            replication: self.repl().stream.allocated(),
            not_counted: match self.repl().stream.allocated() {
                0 => 0,
                held => held.saturating_sub(self.config().repl_backlog_size().max(0) as u64),
            },
        }
    }

    /// The scripts' memory as it is now (for used_memory_startup).
    pub(crate) fn scripts_memory_now(&self) -> u64 {
        self.scripts_memory()
    }

    /// Lua interpreters, cached scripts and function libraries.
    fn scripts_memory(&self) -> u64 {
        self.scripts().memory()
    }

    /// INFO used_memory: what this engine's keys, clients and scripts
    /// hold (not the process's allocator, which other engines share).
    pub fn used_memory(&self) -> u64 {
        self.memory_use().total()
    }

    /// Records used_memory for used_memory_peak (with the scripts' part
    /// as last measured): one look at counters, for a connection's turn.
    pub fn note_memory_peak(&self) {
        self.memory_peak(self.memory_use_fast().total());
    }

    /// Redis's getMaxmemoryState: the bytes to free, or None when under
    /// maxmemory (or without one).
    pub fn memory_to_free(&self) -> Option<u64> {
        let max = self.config().maxmemory.load(Ordering::Relaxed);
        if max == 0 {
            return None;
        }
        let figures = self.memory_use_fast();
        let used = figures.total() - figures.not_counted;
        // What the data may reach before tables stop growing, as of now.
        let others = used - figures.dataset;
        self.keyspace()
            .env()
            .set_dataset_limit(max.saturating_sub(others).max(1));
        (used > max).then(|| used - max)
    }

    /// Whether used_memory is over maxmemory (a cheap look before
    /// `perform_evictions`).
    pub fn over_maxmemory(&self) -> bool {
        self.memory_to_free().is_some()
    }

    /// Redis's performEvictions: deletes keys the policy allows until
    /// used_memory is under maxmemory or the time limit is reached. Called
    /// before a command, with no shard held: it locks one shard at a time,
    /// under the pool's lock, which nobody holding a shard takes.
    pub fn perform_evictions(&self) -> Outcome {
        if !self.evictions_allowed() {
            return Outcome::Ok;
        }
        // One cycle at a time, as Redis's single thread runs them: two
        // threads each freeing what was over the limit when they started
        // would free it twice (a command's cycle beside the worker that
        // CONFIG SET maxmemory starts). The one that waited measures anew.
        let one = self.evictor().cycle.lock();
        let outcome = self.evict_until_under();
        self.evictor().note(outcome);
        // Handed to a waiting command rather than taken again at once by
        // the worker's next cycle.
        parking_lot::MutexGuard::unlock_fair(one);
        outcome
    }

    /// Redis's isSafeToPerformEvictions: not while loading, not while a
    /// script runs past its busy threshold, not while CLIENT PAUSE holds
    /// the dataset still, not on a replica that leaves memory to its
    /// primary (replica-ignore-maxmemory).
    fn evictions_allowed(&self) -> bool {
        (!self.repl().is_replica() || !self.config().replica_ignore_maxmemory())
            && !self.persist().loading.load(Ordering::Relaxed)
            && self.scripts().busy_error().is_none()
            && !self.pause().expiry_paused()
    }

    fn evict_until_under(&self) -> Outcome {
        let Some(to_free) = self.memory_to_free() else {
            return Outcome::Ok;
        };
        let ev = self.evictor();
        let policy = ev.policy();
        if policy == Policy::NoEviction {
            return Outcome::Fail;
        }
        let limit_us = ev.time_limit_us.load(Ordering::Relaxed);
        let lazy = ev.lazy_eviction.load(Ordering::Relaxed);
        let threshold = self
            .config()
            .latency_monitor_threshold
            .load(Ordering::Relaxed);
        let start = Instant::now();
        let mut rng = fastrand::Rng::new();
        let mut keys_freed = 0u64;
        let mut bytes_freed = 0u64;
        let mut outcome = Outcome::Ok;
        // As Redis's performEvictions, the goal is what was over the limit
        // at the start, counted in what the deletions themselves free: the
        // invalidation messages an eviction sends to tracking clients grow
        // their output buffers, and chasing that growth would evict on and
        // on. The figure is also read each round, since other threads
        // evict, and free, meanwhile.
        while bytes_freed < to_free && self.memory_to_free().is_some() {
            let Some((db, key)) = self.pick_victim(policy, &mut rng) else {
                outcome = Outcome::Fail;
                break;
            };
            // Timed only for the latency monitor, as Redis's
            // latencyStartMonitor.
            let del_start = (threshold != 0).then(Instant::now);
            let Some(freed) = self.evict_key(db, &key, lazy) else {
                continue;
            };
            bytes_freed += freed;
            if let Some(t) = del_start {
                self.latency().add_if_needed(
                    threshold,
                    "eviction-del",
                    t.elapsed().as_millis() as u64,
                );
            }
            keys_freed += 1;
            if keys_freed % 16 == 0 && start.elapsed().as_micros() as u64 > limit_us {
                self.start_eviction_worker();
                break;
            }
        }
        if threshold != 0 {
            self.latency().add_if_needed(
                threshold,
                "eviction-cycle",
                start.elapsed().as_millis() as u64,
            );
        }
        if outcome == Outcome::Fail {
            return Outcome::Fail;
        }
        if ev.running.load(Ordering::Relaxed) {
            Outcome::Running
        } else {
            Outcome::Ok
        }
    }

    /// The key the policy evicts next, with its database: from the pool
    /// (after a round of sampling) or at random. None when no key may go.
    fn pick_victim(
        &self,
        policy: Policy,
        rng: &mut fastrand::Rng,
    ) -> Option<(usize, CompactBytes)> {
        let ks = self.keyspace();
        let shards = ks.shard_count();
        let volatile = policy.volatile();
        if policy.random() {
            let dbs = ks.databases();
            // A random shard first, then the others, so that an empty shard
            // does not end the search.
            let first = rng.usize(..shards);
            let start = self.evictor().next_db.fetch_add(1, Ordering::Relaxed) + 1;
            for turn in 0..dbs {
                let db = (start + turn) % dbs;
                for s in 0..shards {
                    let shard = ks.lock((first + s) % shards);
                    if let Some(key) = shard.dbs[db].random_candidate(volatile, rng) {
                        return Some((db, key));
                    }
                }
            }
            return None;
        }
        let samples = self.evictor().samples.load(Ordering::Relaxed);
        let access = ks.env().access();
        let now = crate::util::time::now_ms();
        let score = |obj: &Object| -> u64 {
            match policy {
                Policy::AllKeysTinyLfu => crate::keyspace::sketch::tinylfu::eviction_score(
                    obj.access_word(),
                    now,
                    access.decay_minutes,
                ),
                Policy::VolatileTtl => u64::MAX - obj.expire_at().unwrap_or(u64::MAX),
                Policy::VolatileLfu | Policy::AllKeysLfu => {
                    255 - obj.lfu_frequency(access, now).min(255) as u64
                }
                _ => obj.idle_ms(now),
            }
        };
        let mut pool = self.evictor().pool.lock();
        // Rounds until the pool yields a key that still exists; a round
        // that finds no key anywhere means there is none to evict.
        for _ in 0..(shards * 4).max(16) {
            let mut found_keys = false;
            // Sample from a random shard with keys (Redis samples every
            // database; a database here is spread over the shards).
            let first = rng.usize(..shards);
            for s in 0..shards {
                let shard = ks.lock((first + s) % shards);
                let mut any = false;
                for (db, slice) in shard.dbs.iter().enumerate() {
                    if slice.candidates_len(volatile) == 0 {
                        continue;
                    }
                    any = true;
                    slice.sample(volatile, samples, rng, |key, obj| {
                        pool.offer(score(obj), db, key)
                    });
                }
                if any {
                    found_keys = true;
                    break;
                }
            }
            if !found_keys {
                pool.entries.clear();
                return None;
            }
            while let Some(c) = pool.pop_best() {
                let shard = ks.lock(ks.shard_of_key(&c.key));
                if shard.dbs[c.db].is_candidate(&c.key, volatile) {
                    return Some((c.db, c.key));
                }
                // A ghost: gone since it was sampled.
            }
        }
        None
    }

    /// Deletes an evicted key as Redis does: the deletion (lazy for a
    /// large value under lazyfree-lazy-eviction), WATCH and keyspace
    /// event, a DEL for the append-only file. The bytes its deletion
    /// freed, or None when it was no longer there to evict.
    fn evict_key(&self, db: usize, key: &[u8], lazy: bool) -> Option<u64> {
        let ks = self.keyspace();
        let hash = crate::keyspace::hash_key(key);
        let mut shard = ks.lock(ks.shard_of(hash));
        let slice = &mut shard.dbs[db];
        let before = slice.used_bytes();
        let obj = slice.remove(hash, key)?;
        let freed = before.saturating_sub(slice.used_bytes()) as u64;
        slice.touch_watched(hash, key);
        // Client-side caching: its readers are told, while the shard is
        // held (Redis's signalModifiedKey on eviction).
        if self.tracking().active() {
            let mut pending = crate::tracking::Pending::default();
            self.invalidate_key(key, &mut pending, false);
            self.flush_bcast(&mut pending);
        }
        self.evictor().evicted_keys.fetch_add(1, Ordering::Relaxed);
        let records = if self.persist().aof.is_on() || self.repl().stream.feeding() {
            vec![crate::propagate::Record {
                db,
                argv: vec![
                    if lazy {
                        b"UNLINK".to_vec()
                    } else {
                        b"DEL".to_vec()
                    },
                    key.to_vec(),
                ],
            }]
        } else {
            Vec::new()
        };
        self.emit(&records, true);
        drop(shard);
        let flags = self.pubsub().notify_flags.load(Ordering::Relaxed);
        if flags & crate::pubsub::notify::EVICTED != 0 {
            self.pubsub()
                .keyspace_event(flags, db, b"evicted", key, None);
        }
        if lazy {
            self.lazyfree().free(obj.value, freed);
        } else {
            drop(obj);
        }
        Some(freed)
    }

    /// Starts the eviction worker, which goes on evicting while
    /// `perform_evictions` says `Running` (Redis's startEvictionTimeProc):
    /// after a command's time limit, and after CONFIG SET maxmemory.
    pub fn start_eviction_worker(&self) {
        let ev = self.evictor();
        if ev.running.swap(true, Ordering::Relaxed) {
            return;
        }
        let sender = ev.worker.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<()>();
            let me = self.weak();
            let _ = std::thread::Builder::new()
                .name("evict".into())
                .spawn(move || {
                    while rx.recv().is_ok() {
                        let Some(engine) = me.upgrade() else { break };
                        loop {
                            if engine.perform_evictions() != Outcome::Running {
                                engine.evictor().running.store(false, Ordering::Relaxed);
                                // A wake that came meanwhile is the same work.
                                while rx.try_recv().is_ok() {}
                                break;
                            }
                            std::thread::yield_now();
                        }
                    }
                });
            Mutex::new(tx)
        });
        if sender.lock().send(()).is_err() {
            ev.running.store(false, Ordering::Relaxed);
        }
    }
}
