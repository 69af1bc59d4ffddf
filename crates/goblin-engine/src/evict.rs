//! Eviction under `maxmemory` (Redis's evict.c): when the engine's
//! used_memory is over the limit, keys chosen by `maxmemory-policy` are
//! deleted before a command runs, until it is under again.
//!
//! used_memory is the engine's own (see [`Engine::used_memory`](crate::Engine::used_memory)): what its
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

use crate::keyspace::CompactBytes;
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
    pub(crate) fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    pub(crate) fn random(self) -> bool {
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
    let policy = Policy::parse(&config.maxmemory_policy()).unwrap_or(Policy::NoEviction);
    crate::keyspace::AccessPolicy {
        lfu: policy.lfu(),
        tinylfu: policy == Policy::AllKeysTinyLfu,
        log_factor: config.lfu_log_factor().clamp(0, u32::MAX as i64) as u32,
        decay_minutes: config.lfu_decay_time().clamp(0, u32::MAX as i64) as u32,
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

pub(crate) struct Candidate {
    /// Higher is a better victim: idle time, 255 minus the LFU counter,
    /// or the distance of the expiry from the end of time.
    pub(crate) score: u64,
    pub(crate) db: usize,
    pub(crate) key: CompactBytes,
}

/// Redis's EvictionPoolLRU: the best candidates seen, in ascending order
/// of score.
#[derive(Default)]
pub(crate) struct Pool {
    pub(crate) entries: Vec<Candidate>,
}

impl Pool {
    /// Redis's evictionPoolPopulate step for one sampled key. As in
    /// Redis, a key sampled twice may hold two entries; the second is a
    /// ghost once the first is evicted.
    pub(crate) fn offer(&mut self, score: u64, db: usize, key: &[u8]) {
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

    pub(crate) fn pop_best(&mut self) -> Option<Candidate> {
        self.entries.pop()
    }
}

/// The engine's eviction state and counters.
pub struct Evictor {
    policy: AtomicU8,
    pub(crate) pool: Mutex<Pool>,
    /// Held by the thread that evicts: one eviction cycle at a time.
    pub(crate) cycle: Mutex<()>,
    /// INFO evicted_keys.
    pub evicted_keys: AtomicU64,
    /// INFO total_eviction_exceeded_time, in microseconds.
    exceeded_total_us: AtomicU64,
    /// When used_memory went over maxmemory and stayed (µs since the
    /// evictor was made; 0 while under).
    exceeded_since_us: AtomicU64,
    epoch: Instant,
    /// The random policies' turn over the databases (Redis's next_db).
    pub(crate) next_db: AtomicUsize,
    /// The eviction worker has work (Redis's isEvictionProcRunning).
    pub(crate) running: AtomicBool,
    /// The scripts' memory as last measured (see `memory_use_fast`).
    pub(crate) scripts_memory: AtomicU64,
    /// maxmemory-samples, the time limit maxmemory-eviction-tenacity
    /// gives, lazyfree-lazy-eviction: read on every eviction.
    pub(crate) samples: AtomicUsize,
    pub(crate) time_limit_us: AtomicU64,
    pub(crate) lazy_eviction: AtomicBool,
    pub(crate) worker: std::sync::OnceLock<Mutex<mpsc::Sender<()>>>,
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
        let policy = Policy::parse(&config.maxmemory_policy()).unwrap_or(Policy::NoEviction);
        self.set_policy(policy);
        self.samples.store(
            config.maxmemory_samples().clamp(1, 64) as usize,
            Ordering::Relaxed,
        );
        self.time_limit_us.store(
            time_limit_us(config.maxmemory_eviction_tenacity()),
            Ordering::Relaxed,
        );
        self.lazy_eviction
            .store(config.lazyfree_lazy_eviction(), Ordering::Relaxed);
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
    pub(crate) fn note(&self, outcome: Outcome) {
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
