//! `FrequencySketch`: how often each key was asked for lately, in a few
//! bits per key, after Caffeine's `FrequencySketch` (TinyLFU, Einziger,
//! Friedman and Manes, "TinyLFU: A Highly Efficient Cache Admission
//! Policy", 2017).
//!
//! A count-min sketch of 4-bit counters: each key hash selects one counter
//! in each of four rows, an access increments the four (each saturates at
//! 15), and the estimate is the smallest of them. Collisions can only add,
//! so an estimate never under-counts until the sketch ages: after
//! `SAMPLE_FACTOR` accesses per key of capacity, every counter is halved,
//! so the counts describe recent popularity, and a key that was hot an
//! hour ago fades.
//!
//! It counts keys that are not in the keyspace too (a GET that misses),
//! which is what lets an eviction policy tell a key asked for again and
//! again, but evicted each time, from a key read once by a scan.
//!
//! The four counters of a key lie in one 64-byte block (eight words), as
//! in Caffeine: one cache line per access.
//!
//! # Ownership: one sketch per shard
//!
//! A sketch is plain memory behind `&mut self`, meant to live inside a
//! shard, beside its tables, under the shard's mutex. Every command that
//! looks a key up already holds that lock, so counting the access costs no
//! atomic operation and no shared cache line between cores; the lock also
//! covers [`FrequencySketch::ensure_capacity`], which replaces the table.
//! A process-wide sketch of atomics would put every core's increments on
//! the same lines and would need a second synchronisation to resize.
//! A key's hash picks its shard from its high bits, so a shard sees an
//! even share of the keys and of the accesses: the estimates of two
//! shards' sketches, sized to their own key counts and aged on their own
//! accesses, rank keys alike, and an eviction pool may compare them.
//!
//! The input is the key's hash ([`crate::hash_key`]); the sketch mixes it
//! again before use, so the bits that chose the shard (the same for all
//! of a shard's keys) do not weaken it.

/// Counters per key of capacity. Caffeine keeps 16 (one word per key);
/// eight do as well for eviction at half the memory, 4 bytes per key,
/// while four lose a point of hit ratio to collisions (the simulator,
/// examples/cachesim.rs).
pub const COUNTERS_PER_KEY: usize = 8;

/// The counters are halved after this many accesses per key of capacity
/// (Caffeine's sample size, 10 × maximum size).
pub const SAMPLE_FACTOR: usize = 10;

/// Words of a block: the four counters of a key lie in one block.
const BLOCK_WORDS: usize = 8;

/// Each nibble at most 15; the mask of every nibble's low three bits,
/// for halving all sixteen counters of a word at once.
const HALVE_MASK: u64 = 0x7777_7777_7777_7777;
const ONE_MASK: u64 = 0x1111_1111_1111_1111;

pub struct FrequencySketch {
    /// Sixteen 4-bit counters per word; a power of two of words, at least
    /// one block.
    table: Box<[u64]>,
    /// Blocks in the table, minus one (a power of two).
    block_mask: usize,
    /// Counted accesses since the last halving (Caffeine's `size`).
    additions: usize,
    /// Additions after which the counters are halved.
    sample_size: usize,
    counters_per_key: usize,
    sample_factor: usize,
}

impl FrequencySketch {
    /// A sketch sized for `expected_keys` keys (at least one block).
    pub fn new(expected_keys: usize) -> FrequencySketch {
        Self::with_shape(expected_keys, COUNTERS_PER_KEY, SAMPLE_FACTOR)
    }

    /// A sketch with `counters_per_key` 4-bit counters per expected key
    /// (rounded up to a power of two of words: more counters, fewer
    /// collisions, more memory) halved every `sample_factor` accesses per
    /// expected key (longer, a longer memory). For measurements; the
    /// keyspace uses [`FrequencySketch::new`].
    pub fn with_shape(
        expected_keys: usize,
        counters_per_key: usize,
        sample_factor: usize,
    ) -> FrequencySketch {
        let words = Self::words_for(expected_keys, counters_per_key);
        FrequencySketch {
            table: vec![0u64; words].into_boxed_slice(),
            block_mask: words / BLOCK_WORDS - 1,
            additions: 0,
            sample_size: expected_keys.max(1).saturating_mul(sample_factor),
            counters_per_key,
            sample_factor,
        }
    }

    fn words_for(expected_keys: usize, counters_per_key: usize) -> usize {
        (expected_keys.saturating_mul(counters_per_key) / 16)
            .next_power_of_two()
            .max(BLOCK_WORDS)
    }

    /// Grows the table when the key count has outgrown it (the next power
    /// of two). The counts are lost, as in Caffeine's `ensureCapacity`:
    /// the sketch relearns them within one sample period, and growth is
    /// rare (each time the keys double). Never shrinks.
    pub fn ensure_capacity(&mut self, expected_keys: usize) {
        if Self::words_for(expected_keys, self.counters_per_key) > self.table.len() {
            *self = FrequencySketch::with_shape(
                expected_keys,
                self.counters_per_key,
                self.sample_factor,
            );
        }
    }

    /// The word and the nibble of each of the key's four counters: row `i`
    /// takes a nibble in word `2i` or `2i + 1` of the key's block.
    #[inline]
    fn slots(&self, hash: u64) -> [(usize, u32); 4] {
        let block_hash = mix(hash);
        let counter_hash = mix(block_hash ^ 0x9e37_79b9_7f4a_7c15);
        let block = (block_hash as usize & self.block_mask) * BLOCK_WORDS;
        let mut out = [(0usize, 0u32); 4];
        for (i, slot) in out.iter_mut().enumerate() {
            let h = counter_hash >> (i * 8);
            let word = block + (i << 1) + (h & 1) as usize;
            let nibble = ((h >> 1) & 15) as u32;
            *slot = (word, nibble << 2);
        }
        out
    }

    /// Counts one access of the key whose hash is `hash`; halves every
    /// counter once the sample period is over.
    #[inline]
    pub fn increment(&mut self, hash: u64) {
        let mut added = false;
        for (word, shift) in self.slots(hash) {
            let w = &mut self.table[word];
            if (*w >> shift) & 15 < 15 {
                *w += 1 << shift;
                added = true;
            }
        }
        if added {
            self.additions += 1;
            if self.additions >= self.sample_size {
                self.reset();
            }
        }
    }

    /// How often the key was accessed lately (0 to 15): the smallest of its
    /// counters. Never below the true count of the accesses since the last
    /// halving, capped at 15.
    #[inline]
    pub fn estimate(&self, hash: u64) -> u8 {
        self.slots(hash)
            .into_iter()
            .map(|(word, shift)| ((self.table[word] >> shift) & 15) as u8)
            .min()
            .unwrap_or(0)
    }

    /// Halves every counter (aging). The count of additions is halved too,
    /// less a quarter of the odd counters' lost halves, as Caffeine does.
    pub fn reset(&mut self) {
        let mut odd = 0usize;
        for w in self.table.iter_mut() {
            odd += (*w & ONE_MASK).count_ones() as usize;
            *w = (*w >> 1) & HALVE_MASK;
        }
        self.additions = self.additions.saturating_sub(odd >> 2) >> 1;
    }

    /// Bytes this sketch holds (its table and itself), for used_memory.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + std::mem::size_of_val(&*self.table)
    }

    /// Accesses counted since the last halving.
    pub fn additions(&self) -> usize {
        self.additions
    }

    /// Accesses after which the counters are halved.
    pub fn sample_size(&self) -> usize {
        self.sample_size
    }
}

/// The access word of a key under allkeys-tinylfu, and its rank in the
/// eviction pool.
///
/// ```text
/// bits 24..32  zero (reserved)
/// bits  8..24  the minute of the last access (Unix minutes mod 2^16), as
///              Redis's LFU word keeps it
/// bits  0..8   the key's access count, linear, saturating at 255
/// ```
///
/// Redis's LFU counter starts every new key at 5 and climbs
/// logarithmically, so near the eviction boundary (keys read a few times)
/// it cannot tell them apart, and a key evicted and asked for again starts
/// over. Here the count is linear, and a new key starts at the sketch's
/// estimate, which remembers the accesses of keys that are not held: a
/// popular key that was evicted comes back with its history, a key read
/// once by a scan comes in at 1 or 2. The count halves once per
/// lfu-decay-time minutes without access (Redis's loses one).
///
/// The eviction pool ranks keys by [`tinylfu::eviction_score`], and the
/// key whose creation caused an eviction takes part in it
/// ([`tinylfu::admits`]): TinyLFU's admission filter.
pub mod tinylfu {
    fn minutes(now_ms: u64) -> u32 {
        ((now_ms / 60_000) & 65535) as u32
    }

    /// The word of a new key; `estimate` is the sketch's, read after this
    /// access was counted.
    pub fn initial(estimate: u8, now_ms: u64) -> u32 {
        (minutes(now_ms) << 8) | estimate as u32
    }

    /// The count after decay: halved once per `decay_minutes` since the
    /// last access (never, when `decay_minutes` is 0).
    pub fn count(word: u32, now_ms: u64, decay_minutes: u32) -> u32 {
        let last = (word >> 8) & 65535;
        let now = minutes(now_ms);
        let elapsed = if now >= last {
            now - last
        } else {
            65536 - last + now
        };
        let periods = elapsed.checked_div(decay_minutes).unwrap_or(0);
        (word & 255) >> periods.min(8)
    }

    /// The word after one access.
    pub fn touched(word: u32, now_ms: u64, decay_minutes: u32) -> u32 {
        let count = (count(word, now_ms, decay_minutes) + 1).min(255);
        (minutes(now_ms) << 8) | count
    }

    /// The eviction pool's score (higher is evicted first, as Redis's
    /// `idle`): the fewer accesses, the better a victim.
    pub fn eviction_score(word: u32, now_ms: u64, decay_minutes: u32) -> u64 {
        255 - count(word, now_ms, decay_minutes) as u64
    }

    /// Whether a key just created (`new_word`) stays, against the best
    /// victim the pool found (`victim_score`): it goes itself when it
    /// ranks no better, as TinyLFU rejects a candidate no more frequent
    /// than the victim.
    pub fn admits(new_word: u32, victim_score: u64, now_ms: u64, decay_minutes: u32) -> bool {
        eviction_score(new_word, now_ms, decay_minutes) < victim_score
    }
}

/// A 64-bit finaliser (splitmix64's): every output bit depends on every
/// input bit.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash_key;

    fn h(i: usize) -> u64 {
        hash_key(format!("key:{i}").as_bytes())
    }

    #[test]
    fn estimates_never_under_count_before_aging() {
        let keys = 5_000;
        let mut s = FrequencySketch::new(keys);
        // Key i is accessed i % 17 times, well under one sample period.
        let mut total = 0;
        for i in 0..keys {
            for _ in 0..i % 17 {
                s.increment(h(i));
                total += 1;
            }
        }
        assert!(total < s.sample_size());
        for i in 0..keys {
            let truth = (i % 17).min(15) as u8;
            assert!(
                s.estimate(h(i)) >= truth,
                "key {i}: {} < {truth}",
                s.estimate(h(i))
            );
        }
    }

    #[test]
    fn a_key_never_seen_mostly_estimates_zero() {
        let keys = 10_000;
        let mut s = FrequencySketch::new(keys);
        for i in 0..keys {
            s.increment(h(i));
        }
        let unseen = (keys..keys + 10_000)
            .filter(|&i| s.estimate(h(i)) == 0)
            .count();
        assert!(
            unseen > 9_000,
            "only {unseen} of 10000 unseen keys estimate 0"
        );
    }

    #[test]
    fn counters_saturate_at_fifteen() {
        let mut s = FrequencySketch::new(1_000);
        for _ in 0..100 {
            s.increment(h(1));
        }
        assert_eq!(s.estimate(h(1)), 15);
    }

    #[test]
    fn aging_halves_the_counts() {
        let mut s = FrequencySketch::new(1_000);
        for _ in 0..14 {
            s.increment(h(1));
        }
        for _ in 0..5 {
            s.increment(h(2));
        }
        s.reset();
        assert_eq!(s.estimate(h(1)), 7);
        assert_eq!(s.estimate(h(2)), 2);
        assert!(s.additions() <= 19 / 2);
    }

    #[test]
    fn the_sample_period_triggers_aging() {
        let keys = 1_000;
        let mut s = FrequencySketch::new(keys);
        for _ in 0..15 {
            s.increment(h(7));
        }
        // Other keys' accesses until the sample period ends: the count of
        // additions then drops.
        let mut i = 0;
        let mut before = s.additions();
        loop {
            s.increment(h(10_000 + i % 5_000));
            i += 1;
            if s.additions() < before {
                break;
            }
            before = s.additions();
            assert!(
                i <= s.sample_size(),
                "no halving after a whole sample period"
            );
        }
        assert!(s.additions() <= s.sample_size() / 2);
        assert!(
            s.estimate(h(7)) <= 8,
            "a hot key's count was not halved: {}",
            s.estimate(h(7))
        );
    }

    #[test]
    fn hot_keys_outrank_one_time_keys() {
        let keys = 20_000;
        let mut s = FrequencySketch::new(keys);
        // 500 hot keys read 8 times each, interleaved with 20,000 keys read
        // once (a scan).
        for round in 0..8 {
            for i in 0..500 {
                s.increment(h(i));
            }
            for i in 0..2_500 {
                s.increment(h(1_000_000 + round * 2_500 + i));
            }
        }
        let hot_min = (0..500).map(|i| s.estimate(h(i))).min().unwrap();
        assert!(hot_min >= 8);
        let once_above_two = (0..20_000)
            .filter(|&i| s.estimate(h(1_000_000 + i)) > 2)
            .count();
        assert!(
            once_above_two < 200,
            "{once_above_two} one-time keys look frequent"
        );
    }

    #[test]
    fn memory_is_bounded_and_grows_with_the_keys() {
        let small = FrequencySketch::new(1_000);
        assert!(small.memory_bytes() <= 1_000 * COUNTERS_PER_KEY + 128 + 64);
        let mut s = FrequencySketch::new(1_000);
        s.increment(h(1));
        s.ensure_capacity(500);
        assert_eq!(
            s.estimate(h(1)),
            1,
            "a smaller key count must not replace the table"
        );
        s.ensure_capacity(1_000_000);
        // At most twice the counters asked for (a power of two), 4 bits each.
        assert!(s.memory_bytes() <= 2 * 1_000_000 * COUNTERS_PER_KEY / 2 + 128);
        assert!(s.memory_bytes() >= 1_000_000 * COUNTERS_PER_KEY / 2);
        assert_eq!(s.sample_size(), 1_000_000 * SAMPLE_FACTOR);
    }
    #[test]
    fn tinylfu_word_counts_linearly_and_decays_by_halves() {
        let t0 = 1_000 * 60_000;
        let mut w = tinylfu::initial(3, t0);
        assert_eq!(tinylfu::count(w, t0, 1), 3);
        for _ in 0..10 {
            w = tinylfu::touched(w, t0, 1);
        }
        assert_eq!(tinylfu::count(w, t0, 1), 13);
        assert_eq!(tinylfu::count(w, t0 + 60_000, 1), 6);
        assert_eq!(tinylfu::count(w, t0 + 2 * 60_000, 1), 3);
        assert_eq!(
            tinylfu::count(w, t0 + 100 * 60_000, 0),
            13,
            "decay 0 never decays"
        );
        assert_eq!(w >> 24, 0, "the top byte stays free");
        for _ in 0..300 {
            w = tinylfu::touched(w, t0, 1);
        }
        assert_eq!(tinylfu::count(w, t0, 1), 255);
        // The minutes wrap at 2^16, as Redis's do: 65,000 minutes later
        // reads as 65,000 minutes, not as a time before the access.
        let late = t0 + 65_000 * 60_000;
        assert_eq!(tinylfu::count(w, late, 1), 0);
    }

    #[test]
    fn tinylfu_ranks_rare_keys_first_and_admits_only_more_frequent_ones() {
        let now = 5 * 60_000;
        let rare = tinylfu::initial(1, now);
        let hot = tinylfu::initial(9, now);
        let rare_score = tinylfu::eviction_score(rare, now, 1);
        let hot_score = tinylfu::eviction_score(hot, now, 1);
        assert!(rare_score > hot_score);
        assert!(tinylfu::admits(hot, rare_score, now, 1));
        assert!(
            !tinylfu::admits(rare, rare_score, now, 1),
            "a tie does not admit"
        );
        assert!(!tinylfu::admits(rare, hot_score, now, 1));
    }
}
