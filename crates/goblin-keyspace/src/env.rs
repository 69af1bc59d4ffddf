//! What a keyspace takes from the engine that owns it.
//!
//! A `Db` does a few things on its own that depend on settings of the
//! engine around it: it records expired keys for the append-only file
//! while that is on, records key creations and expiries while keyspace
//! notifications want them, keeps a key's access word under the LRU or
//! LFU rule that maxmemory-policy chooses, and counts what a running
//! snapshot copies aside. Those settings live in one [`KeyspaceEnv`] per
//! keyspace, which every `Db` of it shares; two engines in one process
//! have two, so one engine's switches never reach the other's keys.
//!
//! What differs between commands rather than engines comes with each
//! look-up instead: the command's clock and whether its look-ups leave
//! expired keys in place ([`Now`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};

/// One keyspace's settings and counters, shared by its databases.
pub struct KeyspaceEnv {
    /// Expired keys (and hash fields) are recorded in `Db::expired_records`,
    /// for the append-only file, which logs each expiry as a DEL, as Redis
    /// propagates them.
    record_expired: AtomicBool,
    /// Which [`DbEvent`](crate::db::DbEvent)s keyspace notifications want
    /// (`WANTS_NEW`, `WANTS_EXPIRED`): while none, a `Db` records nothing.
    wants: AtomicU8,
    /// Events recorded in the databases and not yet taken: while zero,
    /// nobody needs to look for them.
    pending: AtomicU64,
    /// Bytes the running snapshot copied aside (INFO's current_cow_size:
    /// the counterpart of the pages a forked child copies on write).
    snapshot_copied: AtomicU64,
    /// The access rule, packed as `AccessPolicy::pack` does, so that a
    /// look-up reads it in one load.
    access: AtomicU64,
    /// Called once by a thread that has waited long for a shard (behind a
    /// script): the engine lets its runtime go on serving other clients.
    long_wait: fn(),
    /// Bytes charged for every database's data (see [`crate::memory`]):
    /// the dataset part of the engine's used_memory.
    dataset: AtomicU64,
    /// What `dataset` may reach before a key table may no longer grow
    /// (maxmemory less what else the engine holds; 0: no bound), as
    /// Redis's dictExpandAllowed refuses a rehash that would pass
    /// maxmemory.
    dataset_limit: AtomicU64,
}

const WANTS_NEW: u8 = 1;
const WANTS_EXPIRED: u8 = 2;
/// Expiries are wanted by client-side caching (its invalidations), apart
/// from keyspace notifications.
const WANTS_EXPIRED_TRACKING: u8 = 4;

impl Default for KeyspaceEnv {
    fn default() -> Self {
        KeyspaceEnv::new(|| {})
    }
}

impl KeyspaceEnv {
    /// An environment with every switch off and the LRU access rule;
    /// `long_wait` as described on the field.
    pub fn new(long_wait: fn()) -> KeyspaceEnv {
        KeyspaceEnv {
            record_expired: AtomicBool::new(false),
            wants: AtomicU8::new(0),
            pending: AtomicU64::new(0),
            snapshot_copied: AtomicU64::new(0),
            access: AtomicU64::new(AccessPolicy::default().pack()),
            long_wait,
            dataset: AtomicU64::new(0),
            dataset_limit: AtomicU64::new(0),
        }
    }

    /// Turns the recording of expired keys on or off (for the
    /// append-only file and the replication stream, which log each expiry
    /// as a DEL).
    pub fn set_record_expired(&self, on: bool) {
        self.record_expired.store(on, Relaxed);
    }

    #[inline]
    pub(crate) fn record_expired(&self) -> bool {
        self.record_expired.load(Relaxed)
    }

    /// Which events keyspace notifications want: key creations ("new")
    /// and expiries ("expired", "hexpired").
    pub fn want_events(&self, new: bool, expired: bool) {
        let bits = if new { WANTS_NEW } else { 0 } | if expired { WANTS_EXPIRED } else { 0 };
        let keep = self.wants.load(Relaxed) & WANTS_EXPIRED_TRACKING;
        self.wants.store(bits | keep, Relaxed);
    }

    /// Whether expiries are recorded for client-side caching (while some
    /// client tracks keys), whatever keyspace notifications want.
    pub fn want_events_for_tracking(&self, on: bool) {
        if on {
            self.wants.fetch_or(WANTS_EXPIRED_TRACKING, Relaxed);
        } else {
            self.wants.fetch_and(!WANTS_EXPIRED_TRACKING, Relaxed);
        }
    }

    #[inline]
    pub(crate) fn wants_new(&self) -> bool {
        self.wants.load(Relaxed) & WANTS_NEW != 0
    }

    #[inline]
    pub(crate) fn wants_expired(&self) -> bool {
        self.wants.load(Relaxed) & (WANTS_EXPIRED | WANTS_EXPIRED_TRACKING) != 0
    }

    /// Whether some database holds events to publish (one relaxed load).
    #[inline]
    pub fn events_pending(&self) -> bool {
        self.pending.load(Relaxed) != 0
    }

    pub(crate) fn events_added(&self, n: u64) {
        self.pending.fetch_add(n, Relaxed);
    }

    pub(crate) fn events_taken(&self, n: u64) {
        self.pending.fetch_sub(n, Relaxed);
    }

    /// Bytes the running snapshot copied aside so far.
    pub fn snapshot_copied(&self) -> u64 {
        self.snapshot_copied.load(Relaxed)
    }

    /// Starts counting a new snapshot's copies from zero.
    pub fn reset_snapshot_copied(&self) {
        self.snapshot_copied.store(0, Relaxed);
    }

    pub(crate) fn add_snapshot_copied(&self, bytes: u64) {
        self.snapshot_copied.fetch_add(bytes, Relaxed);
    }

    /// How keys record their accesses now.
    #[inline]
    pub fn access(&self) -> AccessPolicy {
        AccessPolicy::unpack(self.access.load(Relaxed))
    }

    pub fn set_access(&self, policy: AccessPolicy) {
        self.access.store(policy.pack(), Relaxed);
    }

    /// Bytes the keyspace's data is charged (see [`crate::memory`]).
    #[inline]
    pub fn dataset_bytes(&self) -> u64 {
        self.dataset.load(Relaxed)
    }

    /// Sets what the data may reach before tables stop growing (0: no
    /// bound); the engine keeps it current as maxmemory and its other
    /// memory change.
    pub fn set_dataset_limit(&self, bytes: u64) {
        // Written only when it changes: callers set it before every
        // command, from every thread.
        if self.dataset_limit.load(Relaxed) != bytes {
            self.dataset_limit.store(bytes, Relaxed);
        }
    }

    /// Whether a key table may take `more` bytes to grow: under the
    /// limit, or (Redis's HASHTABLE_MAX_LOAD_FACTOR) once its chains
    /// average more than 1.618 keys, when it grows whatever it costs.
    #[inline]
    pub(crate) fn may_grow(&self, more: usize, keys: usize, buckets: usize) -> bool {
        let limit = self.dataset_limit.load(Relaxed);
        limit == 0 || self.dataset_bytes() + more as u64 <= limit || keys * 1000 > buckets * 1618
    }

    #[inline]
    pub(crate) fn dataset_grew(&self, bytes: usize) {
        self.dataset.fetch_add(bytes as u64, Relaxed);
    }

    #[inline]
    pub(crate) fn dataset_shrank(&self, bytes: usize) {
        self.dataset.fetch_sub(bytes as u64, Relaxed);
    }

    pub(crate) fn long_wait(&self) {
        (self.long_wait)()
    }
}

/// A command's look-ups: its clock, fixed for the whole command, and
/// whether they leave an expired key in place (it then reads as absent).
/// Redis keeps expired keys during CLIENT PAUSE for the commands that do
/// not write, so that the dataset does not change meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Now {
    /// Unix time in milliseconds.
    pub ms: u64,
    pub keep_expired: bool,
    /// The look-up leaves the key's access time (LRU/LFU) as it was
    /// (CLIENT NO-TOUCH).
    pub no_touch: bool,
}

impl Now {
    /// Look-ups at `ms` that delete the expired keys they meet.
    #[inline]
    pub fn at(ms: u64) -> Now {
        Now {
            ms,
            keep_expired: false,
            no_touch: false,
        }
    }
}

/// How keys record their accesses, as Redis's maxmemory-policy decides:
/// the last access time (LRU policies and noeviction), or a logarithmic
/// access counter (LFU policies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessPolicy {
    pub lfu: bool,
    /// TinyLFU's word (see [`crate::sketch::tinylfu`]): a linear count,
    /// started at the shard's frequency sketch estimate (`lfu` is set
    /// too: the word has the LFU layout).
    pub tinylfu: bool,
    /// lfu-log-factor
    pub log_factor: u32,
    /// lfu-decay-time, in minutes
    pub decay_minutes: u32,
}

impl Default for AccessPolicy {
    /// Redis's defaults: LRU, with lfu-log-factor 10 and lfu-decay-time 1.
    fn default() -> Self {
        AccessPolicy {
            lfu: false,
            tinylfu: false,
            log_factor: 10,
            decay_minutes: 1,
        }
    }
}

/// The largest lfu-log-factor the packed policy keeps (a factor past a
/// billion makes the counter as good as frozen either way).
const LOG_FACTOR_MAX: u32 = (1 << 30) - 1;

/// Redis's LFU_INIT_VAL: a new key's counter.
pub const LFU_INIT: u32 = 5;

fn minutes(now_ms: u64) -> u32 {
    ((now_ms / 60_000) & 65535) as u32
}

impl AccessPolicy {
    // lfu in bit 63, tinylfu in bit 62, the log factor in bits 32..62
    // (30 bits: Redis's int parameter, clamped), the decay time below.
    fn pack(self) -> u64 {
        ((self.lfu as u64) << 63)
            | ((self.tinylfu as u64) << 62)
            | ((self.log_factor.min(LOG_FACTOR_MAX) as u64) << 32)
            | self.decay_minutes as u64
    }

    fn unpack(word: u64) -> AccessPolicy {
        AccessPolicy {
            lfu: word >> 63 != 0,
            tinylfu: (word >> 62) & 1 != 0,
            log_factor: ((word >> 32) & LOG_FACTOR_MAX as u64) as u32,
            decay_minutes: word as u32,
        }
    }

    /// The access word of a new key.
    pub fn initial(self, now_ms: u64) -> u32 {
        if self.tinylfu {
            // Its own count, until the sketch's estimate replaces it (see
            // `Db::table_insert`).
            crate::sketch::tinylfu::initial(1, now_ms)
        } else if self.lfu {
            (minutes(now_ms) << 8) | LFU_INIT
        } else {
            (now_ms / 1000) as u32
        }
    }

    /// Redis's LFUDecrAndReturn: the counter after decaying one step per
    /// lfu-decay-time minutes since the last access.
    ///
    /// The word may still be an LRU clock (seconds, wider than Redis's 24
    /// bits) from before an LFU policy was set: its access time is then
    /// taken modulo 2^16 minutes, as Redis reads an LRU field it finds.
    pub fn lfu_counter(self, word: u32, now_ms: u64) -> u32 {
        if self.tinylfu {
            return crate::sketch::tinylfu::count(word, now_ms, self.decay_minutes);
        }
        let ldt = (word >> 8) & 65535;
        let counter = word & 255;
        let now = minutes(now_ms);
        let elapsed = if now >= ldt {
            now - ldt
        } else {
            65535 - ldt + now
        };
        let periods = elapsed.checked_div(self.decay_minutes).unwrap_or(0);
        counter.saturating_sub(periods)
    }

    /// The access word after one access (Redis's updateLFU / LRU clock).
    pub fn touched(self, word: u32, now_ms: u64) -> u32 {
        if !self.lfu {
            return (now_ms / 1000) as u32;
        }
        if self.tinylfu {
            return crate::sketch::tinylfu::touched(word, now_ms, self.decay_minutes);
        }
        let mut counter = self.lfu_counter(word, now_ms);
        if counter < 255 {
            // LFULogIncr: the higher the counter, the less likely it grows.
            let base = counter.saturating_sub(LFU_INIT) as f64;
            let p = 1.0 / (base * self.log_factor as f64 + 1.0);
            if fastrand::f64() < p {
                counter += 1;
            }
        }
        (minutes(now_ms) << 8) | counter
    }

    /// An access word holding a given LFU counter (RESTORE ... FREQ).
    pub fn with_counter(counter: u8, now_ms: u64) -> u32 {
        (minutes(now_ms) << 8) | counter as u32
    }

    /// An access word for a key idle for `seconds` (RESTORE ... IDLETIME).
    pub fn idle_for(seconds: u64, now_ms: u64) -> u32 {
        ((now_ms / 1000).saturating_sub(seconds)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_lru_word_read_as_lfu_decays_without_overflow() {
        let policy = AccessPolicy {
            lfu: true,
            tinylfu: false,
            log_factor: 10,
            decay_minutes: 1,
        };
        // An LRU clock of today (seconds since 1970) holds more than 24
        // bits; read as an LFU word its counter decays, and nothing
        // overflows.
        let now_ms = 1_796_342_400_000u64;
        let lru_word = AccessPolicy::idle_for(0, now_ms);
        assert!(lru_word >> 24 != 0);
        assert!(policy.lfu_counter(lru_word, now_ms) <= lru_word & 255);
        let fresh = AccessPolicy::with_counter(5, now_ms);
        assert_eq!(policy.lfu_counter(fresh, now_ms), 5);
        assert_eq!(policy.lfu_counter(fresh, now_ms + 3 * 60_000), 2);
    }

    #[test]
    fn the_access_policy_survives_its_packing() {
        for policy in [
            AccessPolicy::default(),
            AccessPolicy {
                lfu: true,
                tinylfu: false,
                log_factor: LOG_FACTOR_MAX,
                decay_minutes: u32::MAX,
            },
            AccessPolicy {
                lfu: true,
                tinylfu: true,
                log_factor: 0,
                decay_minutes: 0,
            },
        ] {
            let env = KeyspaceEnv::default();
            env.set_access(policy);
            assert_eq!(env.access(), policy);
        }
    }
}
