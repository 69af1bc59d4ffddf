//! Eviction under `maxmemory` (Redis's evict.c): when the engine's
//! used_memory is over the limit, keys chosen by `maxmemory-policy` are
//! deleted before a command runs, until it is under again.
//!
//! used_memory is the engine's own (see [`Engine::used_memory`]): what its
//! keys, clients and scripts hold, so two engines in one process never
//! evict for each other.
//!
//! The LRU, LFU and TTL policies are Redis's approximations: each round
//! samples `maxmemory-samples` keys of every database from a random shard
//! and offers them to a pool of the 16 best candidates seen so far (the
//! longest idle, the least frequently used, the nearest expiry), and the
//! best of the pool still present is deleted. The random policies delete a
//! random key of each database in turn. The volatile policies only look at
//! keys with a TTL.
//!
//! Eviction never stalls a command for long: after
//! `maxmemory-eviction-tenacity`'s time limit (500 µs at the default 10),
//! the command runs and the engine's eviction worker goes on in the
//! background (Redis's eviction time proc), as it does after CONFIG SET
//! lowered maxmemory. A large collection evicted under
//! `lazyfree-lazy-eviction` is freed by the engine's lazy-free worker
//! ([`crate::lazyfree`]).

use crate::engine::Engine;
use crate::keyspace::{CompactBytes, Object};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// `maxmemory-policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Policy {
    NoEviction,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
    AllKeysLru,
    AllKeysLfu,
    AllKeysRandom,
    /// Goblin's: any key, the one asked for least often, with a frequency
    /// sketch that remembers keys no longer held (docs/EVICTION.md).
    AllKeysTinyLfu,
}

impl Policy {
    const ALL: [Policy; 9] = [
        Policy::NoEviction,
        Policy::VolatileLru,
        Policy::VolatileLfu,
        Policy::VolatileRandom,
        Policy::VolatileTtl,
        Policy::AllKeysLru,
        Policy::AllKeysLfu,
        Policy::AllKeysRandom,
        Policy::AllKeysTinyLfu,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::NoEviction => "noeviction",
            Policy::VolatileLru => "volatile-lru",
            Policy::VolatileLfu => "volatile-lfu",
            Policy::VolatileRandom => "volatile-random",
            Policy::VolatileTtl => "volatile-ttl",
            Policy::AllKeysLru => "allkeys-lru",
            Policy::AllKeysLfu => "allkeys-lfu",
            Policy::AllKeysRandom => "allkeys-random",
            Policy::AllKeysTinyLfu => "allkeys-tinylfu",
        }
    }

    pub fn parse(name: &str) -> Option<Policy> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// Only keys with a TTL may go.
    fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    fn random(self) -> bool {
        matches!(self, Policy::VolatileRandom | Policy::AllKeysRandom)
    }

    /// Whether the policy ranks keys by their accesses (Redis's
    /// MAXMEMORY_FLAG_NO_SHARED_INTEGERS: the LRU and LFU policies).
    pub fn tracks_access(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::AllKeysLru
                | Policy::AllKeysLfu
                | Policy::AllKeysTinyLfu
        )
    }

    /// Whether keys keep an access count rather than an access time.
    pub fn lfu(self) -> bool {
        matches!(
            self,
            Policy::VolatileLfu | Policy::AllKeysLfu | Policy::AllKeysTinyLfu
        )
    }
}

/// How keys record their accesses under the configured policy, with its
/// lfu-log-factor and lfu-decay-time.
pub fn access_policy(config: &crate::config::Config) -> crate::keyspace::AccessPolicy {
    let policy = Policy::parse(&config.get("maxmemory-policy")).unwrap_or(Policy::NoEviction);
    crate::keyspace::AccessPolicy {
        lfu: policy.lfu(),
        tinylfu: policy == Policy::AllKeysTinyLfu,
        log_factor: config.get_i64("lfu-log-factor").clamp(0, u32::MAX as i64) as u32,
        decay_minutes: config.get_i64("lfu-decay-time").clamp(0, u32::MAX as i64) as u32,
    }
}

/// What `perform_evictions` found (Redis's EVICT_OK, EVICT_RUNNING,
/// EVICT_FAIL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Under the limit (or no limit).
    Ok,
    /// Over the limit, and the eviction worker goes on.
    Running,
    /// Over the limit with nothing left that the policy may evict.
    Fail,
}

/// Redis's EVPOOL_SIZE.
const POOL_SIZE: usize = 16;

struct Candidate {
    /// Higher is a better victim: idle time, 255 minus the LFU counter,
    /// or the distance of the expiry from the end of time.
    score: u64,
    db: usize,
    key: CompactBytes,
}

/// Redis's EvictionPoolLRU: the best candidates seen, in ascending order
/// of score.
#[derive(Default)]
struct Pool {
    entries: Vec<Candidate>,
}

impl Pool {
    /// Redis's evictionPoolPopulate step for one sampled key. As in
    /// Redis, a key sampled twice may hold two entries; the second is a
    /// ghost once the first is evicted.
    fn offer(&mut self, score: u64, db: usize, key: &[u8]) {
        let at = self.entries.partition_point(|c| c.score < score);
        if self.entries.len() < POOL_SIZE {
            self.entries.insert(
                at,
                Candidate {
                    score,
                    db,
                    key: CompactBytes::from_slice(key),
                },
            );
        } else if at > 0 {
            // Full: the worst goes to make room.
            self.entries.remove(0);
            self.entries.insert(
                at - 1,
                Candidate {
                    score,
                    db,
                    key: CompactBytes::from_slice(key),
                },
            );
        }
    }

    fn pop_best(&mut self) -> Option<Candidate> {
        self.entries.pop()
    }
}

/// The engine's eviction state and counters.
pub struct Evictor {
    policy: AtomicU8,
    pool: Mutex<Pool>,
    /// Held by the thread that evicts: one eviction cycle at a time.
    cycle: Mutex<()>,
    /// INFO evicted_keys.
    pub evicted_keys: AtomicU64,
    /// INFO total_eviction_exceeded_time, in microseconds.
    exceeded_total_us: AtomicU64,
    /// When used_memory went over maxmemory and stayed (µs since the
    /// evictor was made; 0 while under).
    exceeded_since_us: AtomicU64,
    epoch: Instant,
    /// The random policies' turn over the databases (Redis's next_db).
    next_db: AtomicUsize,
    /// The eviction worker has work (Redis's isEvictionProcRunning).
    running: AtomicBool,
    /// The scripts' memory as last measured (see `memory_use_fast`).
    scripts_memory: AtomicU64,
    /// maxmemory-samples, the time limit maxmemory-eviction-tenacity
    /// gives, lazyfree-lazy-eviction: read on every eviction.
    samples: AtomicUsize,
    time_limit_us: AtomicU64,
    lazy_eviction: AtomicBool,
    worker: std::sync::OnceLock<Mutex<mpsc::Sender<()>>>,
}

impl Default for Evictor {
    fn default() -> Self {
        Evictor {
            policy: AtomicU8::new(Policy::NoEviction as u8),
            pool: Mutex::new(Pool::default()),
            cycle: Mutex::new(()),
            evicted_keys: AtomicU64::new(0),
            exceeded_total_us: AtomicU64::new(0),
            exceeded_since_us: AtomicU64::new(0),
            epoch: Instant::now(),
            next_db: AtomicUsize::new(0),
            running: AtomicBool::new(false),
            scripts_memory: AtomicU64::new(0),
            samples: AtomicUsize::new(5),
            time_limit_us: AtomicU64::new(time_limit_us(10)),
            lazy_eviction: AtomicBool::new(false),
            worker: std::sync::OnceLock::new(),
        }
    }
}

impl Evictor {
    pub fn policy(&self) -> Policy {
        Policy::ALL[self.policy.load(Ordering::Relaxed) as usize]
    }

    /// The eviction settings of the configuration (apply_config).
    pub fn configure(&self, config: &crate::config::Config) {
        let policy = Policy::parse(&config.get("maxmemory-policy")).unwrap_or(Policy::NoEviction);
        self.set_policy(policy);
        self.samples.store(
            config.get_i64("maxmemory-samples").clamp(1, 64) as usize,
            Ordering::Relaxed,
        );
        self.time_limit_us.store(
            time_limit_us(config.get_i64("maxmemory-eviction-tenacity")),
            Ordering::Relaxed,
        );
        self.lazy_eviction
            .store(config.get_bool("lazyfree-lazy-eviction"), Ordering::Relaxed);
    }

    fn set_policy(&self, policy: Policy) {
        let before = self.policy.swap(policy as u8, Ordering::Relaxed);
        if before != policy as u8 {
            // Scores of one policy mean nothing to another.
            self.pool.lock().entries.clear();
        }
    }

    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64 + 1
    }

    /// INFO total_eviction_exceeded_time and current_eviction_exceeded_time,
    /// in milliseconds.
    pub fn exceeded_ms(&self) -> (u64, u64) {
        let since = self.exceeded_since_us.load(Ordering::Relaxed);
        let current = if since == 0 {
            0
        } else {
            self.now_us().saturating_sub(since)
        };
        (
            (self.exceeded_total_us.load(Ordering::Relaxed) + current) / 1000,
            current / 1000,
        )
    }

    /// CONFIG RESETSTAT.
    pub fn reset_stats(&self) {
        self.evicted_keys.store(0, Ordering::Relaxed);
        self.exceeded_total_us.store(0, Ordering::Relaxed);
        if self.exceeded_since_us.load(Ordering::Relaxed) != 0 {
            self.exceeded_since_us
                .store(self.now_us(), Ordering::Relaxed);
        }
    }

    /// Redis's update_metrics step.
    fn note(&self, outcome: Outcome) {
        let since = self.exceeded_since_us.load(Ordering::Relaxed);
        match outcome {
            Outcome::Running | Outcome::Fail => {
                if since == 0 {
                    self.exceeded_since_us
                        .store(self.now_us(), Ordering::Relaxed);
                }
            }
            Outcome::Ok => {
                if since != 0 && self.exceeded_since_us.swap(0, Ordering::Relaxed) != 0 {
                    self.exceeded_total_us
                        .fetch_add(self.now_us().saturating_sub(since), Ordering::Relaxed);
                }
            }
        }
    }
}

/// Redis's evictionTimeLimitUs: how long one call may evict, from
/// `maxmemory-eviction-tenacity` (0..=100).
fn time_limit_us(tenacity: i64) -> u64 {
    match tenacity {
        t if t <= 10 => 50 * t.max(0) as u64,
        t if t < 100 => (500.0 * 1.15f64.powi(t as i32 - 10)) as u64,
        _ => u64::MAX,
    }
}

/// What used_memory is made of (INFO memory, MEMORY STATS).
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryUse {
    /// The engine's fixed structures (used_memory_startup).
    pub startup: u64,
    /// Keys, values, indexes and tables.
    pub dataset: u64,
    /// Normal clients' buffers and state (mem_clients_normal).
    pub clients: u64,
    /// Lua interpreters, cached scripts and function libraries.
    pub scripts: u64,
    /// Values waiting for the lazy-free worker.
    pub lazy_pending: u64,
    /// The client-side caching tables (CLIENT TRACKING).
    pub tracking: u64,
    /// The replication stream's buffer (mem_total_replication_buffers).
    pub replication: u64,
    /// Of it, what replicas hold beyond repl-backlog-size: not counted
    /// for eviction (Redis's freeMemoryGetNotCountedMemory).
    pub not_counted: u64,
}

impl MemoryUse {
    /// used_memory.
    pub fn total(&self) -> u64 {
        self.startup
            + self.dataset
            + self.clients
            + self.scripts
            + self.lazy_pending
            + self.replication
            + self.tracking
    }
}

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
                held => {
                    held.saturating_sub(self.config().get_i64("repl-backlog-size").max(0) as u64)
                }
            },
        }
    }

    /// The scripts' memory as it is now (for used_memory_startup).
    pub(crate) fn scripts_memory_now(&self) -> u64 {
        self.scripts_memory()
    }

    /// Lua interpreters, cached scripts and function libraries.
    fn scripts_memory(&self) -> u64 {
        let s = &self.scripting().stats;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        self.scripting().eval_vms_memory()
            + get(&s.functions_vm_memory)
            + get(&s.cached_scripts_memory)
            + get(&s.functions_memory)
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
        (!self.repl().is_replica() || !self.config().get_bool("replica-ignore-maxmemory"))
            && !self.persist().loading.load(Ordering::Relaxed)
            && self.scripting().busy_error().is_none()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_keeps_the_best_sixteen_in_order() {
        let mut pool = Pool::default();
        for i in 0..40u64 {
            let score = (i * 7919) % 40;
            pool.offer(score, 0, format!("k{score}").as_bytes());
        }
        assert_eq!(pool.entries.len(), POOL_SIZE);
        let scores: Vec<u64> = pool.entries.iter().map(|c| c.score).collect();
        assert_eq!(scores, (24..40).collect::<Vec<_>>());
        assert_eq!(pool.pop_best().map(|c| c.score), Some(39));
        // Worse than every entry of a full pool: not taken.
        pool.offer(39, 0, b"new");
        pool.offer(0, 0, b"worst");
        assert!(pool.entries.iter().all(|c| c.key.as_slice() != b"worst"));
    }

    #[test]
    fn tenacity_maps_to_redis_time_limits() {
        assert_eq!(time_limit_us(0), 0);
        assert_eq!(time_limit_us(10), 500);
        assert_eq!(time_limit_us(11), 575);
        assert_eq!(time_limit_us(100), u64::MAX);
    }

    #[test]
    fn every_policy_name_parses_back() {
        for p in Policy::ALL {
            assert_eq!(Policy::parse(p.name()), Some(p));
        }
        assert_eq!(Policy::parse("ALLKEYS-LRU"), Some(Policy::AllKeysLru));
        assert_eq!(Policy::parse("lru"), None);
    }
}
