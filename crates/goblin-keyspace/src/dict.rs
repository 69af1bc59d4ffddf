//! `Dict`: a chained hash table keyed by byte strings, after Redis's `dict.c`.
//!
//! Why not `std::collections::HashMap`? Two Redis guarantees need control over
//! the bucket layout:
//! - SCAN must return every key that is present for the whole iteration,
//!   even when the table grows or shrinks between calls. Redis achieves this
//!   with a power-of-two bucket array and a cursor that counts in reverse
//!   binary ("dictScan"); open addressing cannot give it.
//! - Memory per key: a bucket is one pointer and each entry one allocation
//!   holding key, value and chain link, with short keys stored inline.
//!
//! **Incremental rehashing**, as Redis's: a resize allocates the new bucket
//! array and then moves the entries over a little at a time, so that no
//! single command pays for moving a whole table (a shard of a keyspace of
//! millions of keys would stall for a tenth of a second). While a resize
//! runs there are two tables: `table`, being emptied from bucket 0 upwards
//! (buckets below `rehash_idx` are empty), and `next`, which receives the
//! moved entries and every new one. Each insertion and removal moves at
//! most [`STEP_ENTRIES`] entries, and [`Dict::rehash_step`] lets a cron
//! move more. Look-ups search both tables; SCAN visits a bucket of the
//! smaller table and every bucket of the larger one that it expands to
//! (Redis's dictScan), so its guarantee holds across a resize. The old
//! array is freed as soon as the last entry has left it.
//!
//! A running snapshot needs bucket positions that do not move: the
//! `_fixed` operations neither start a resize nor move entries, and
//! [`Dict::walk_position`] numbers the buckets of both tables in one
//! sequence (`table`'s, then `next`'s) that the snapshot's walk follows.
//!
//! Every operation takes the key's 64-bit hash, computed once by the caller
//! with [`hash_key`]; the low bits choose the bucket, the high bits the shard.

use super::bytes::CompactBytes;
use std::hash::BuildHasher;
use std::sync::OnceLock;

/// The process-wide keyed hash of a key (random seed per process, as Redis
/// seeds siphash, so that clients cannot aim keys at one bucket).
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    static STATE: OnceLock<foldhash::fast::RandomState> = OnceLock::new();
    STATE
        .get_or_init(foldhash::fast::RandomState::default)
        .hash_one(key)
}

/// What a [`Dict`] key can be: a byte-string handle built from and read
/// back as bytes. The keyspace uses `CompactBytes` (22 bytes inline); the
/// tables of large hashes use the smaller `SmallBytes` so that an entry
/// fits in 32 bytes.
pub trait DictKey: std::ops::Deref<Target = [u8]> {
    fn from_slice(s: &[u8]) -> Self;
}

impl DictKey for CompactBytes {
    #[inline]
    fn from_slice(s: &[u8]) -> Self {
        CompactBytes::from_slice(s)
    }
}

type Link<V, K> = Option<Box<Node<V, K>>>;

pub struct Node<V, K: DictKey = CompactBytes> {
    next: Link<V, K>,
    pub key: K,
    pub value: V,
}

pub struct Dict<V, K: DictKey = CompactBytes> {
    /// The table in use; while rehashing, the one being emptied.
    table: Box<[Link<V, K>]>,
    len: usize,
    /// The resize that runs, if any: boxed, so that the many small tables
    /// (those of hashes and sets) stay four words.
    rehash: Option<Box<Rehash<V, K>>>,
}

/// A resize in progress.
struct Rehash<V, K: DictKey> {
    /// The table entries move to, and new entries go to.
    next: Box<[Link<V, K>]>,
    /// The first bucket of `table` not yet emptied.
    idx: usize,
    /// Entries in `next`.
    used: usize,
}

#[cfg(test)]
thread_local! {
    /// Entries moved by the resizes of this thread's tables, for the tests
    /// that bound the work of one operation.
    static MOVED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

const MIN_BUCKETS: usize = 4;

/// Entries one insertion or removal moves at most while a resize runs
/// (Redis moves one bucket; a bound on entries also holds when chains are
/// long, as they get under a dataset limit or after a snapshot).
pub const STEP_ENTRIES: usize = 4;

/// Empty buckets a step may pass per entry it may move (Redis's
/// `empty_visits = n * 10`), so a step on a sparse table stays short.
const EMPTY_VISITS: usize = 10;

fn empty_table<V, K: DictKey>(size: usize) -> Box<[Link<V, K>]> {
    (0..size).map(|_| None).collect()
}

/// Redis's reverse-binary increment of a SCAN cursor over the bits of `mask`.
#[inline]
fn next_cursor(cursor: u64, mask: u64) -> u64 {
    (cursor | !mask)
        .reverse_bits()
        .wrapping_add(1)
        .reverse_bits()
}

#[inline]
fn chain_find<'a, V, K: DictKey>(link: &'a Link<V, K>, key: &[u8]) -> Option<&'a Node<V, K>> {
    let mut cur = link.as_deref();
    while let Some(node) = cur {
        if *node.key == *key {
            return Some(node);
        }
        cur = node.next.as_deref();
    }
    None
}

#[inline]
fn chain_find_mut<'a, V, K: DictKey>(
    link: &'a mut Link<V, K>,
    key: &[u8],
) -> Option<&'a mut Node<V, K>> {
    let mut cur = link.as_deref_mut();
    while let Some(node) = cur {
        if *node.key == *key {
            return Some(node);
        }
        cur = node.next.as_deref_mut();
    }
    None
}

/// Unlinks the entry for `key` from a chain.
#[inline]
fn chain_remove<V, K: DictKey>(link: &mut Link<V, K>, key: &[u8]) -> Option<Box<Node<V, K>>> {
    let mut cur = link;
    while cur.as_ref().is_some_and(|n| *n.key != *key) {
        cur = &mut cur.as_mut().unwrap().next;
    }
    let mut node = cur.take()?;
    *cur = node.next.take();
    Some(node)
}

/// Drops a chain iteratively: dropping a long chain recursively could
/// overflow the stack.
fn drop_chains<V, K: DictKey>(table: &mut [Link<V, K>]) {
    for link in table.iter_mut() {
        let mut cur = link.take();
        while let Some(mut node) = cur {
            cur = node.next.take();
        }
    }
}

impl<V, K: DictKey> Default for Dict<V, K> {
    fn default() -> Self {
        Dict::new()
    }
}

impl<V, K: DictKey> Dict<V, K> {
    pub fn new() -> Dict<V, K> {
        Dict {
            table: Box::new([]),
            len: 0,
            rehash: None,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Buckets allocated, in both tables while a resize runs (0 for a table
    /// that never held a key): what the bucket arrays cost in memory.
    pub fn buckets(&self) -> usize {
        self.table.len() + self.next().len()
    }

    /// The table entries move to while a resize runs (empty otherwise).
    #[inline]
    fn next(&self) -> &[Link<V, K>] {
        self.rehash.as_deref().map_or(&[], |r| &r.next)
    }

    /// The first bucket of `table` that may hold entries.
    #[inline]
    fn rehash_idx(&self) -> usize {
        self.rehash.as_deref().map_or(0, |r| r.idx)
    }

    /// Whether a resize is moving entries from one table to the other.
    #[inline]
    pub fn is_rehashing(&self) -> bool {
        self.rehash.is_some()
    }

    /// Whether the next insertion would start growing the table (no
    /// resize runs and the table holds as many keys as buckets), for a
    /// caller that decides whether it may ([`Dict::expand`]) or must not
    /// ([`Dict::insert_new_fixed`]). The new bucket array would take
    /// `2 * self.table_size()` words.
    #[inline]
    pub fn wants_growth(&self) -> bool {
        !self.is_rehashing() && !self.table.is_empty() && self.len() >= self.table.len()
    }

    /// Buckets of the table in use (the one being emptied while rehashing).
    #[inline]
    pub fn table_size(&self) -> usize {
        self.table.len()
    }

    #[inline]
    fn find(&self, hash: u64, key: &[u8]) -> Option<&Node<V, K>> {
        if self.is_empty() {
            return None;
        }
        let idx = hash as usize & (self.table.len() - 1);
        let Some(r) = self.rehash.as_deref() else {
            return chain_find(&self.table[idx], key);
        };
        if idx >= r.idx {
            if let Some(node) = chain_find(&self.table[idx], key) {
                return Some(node);
            }
        }
        chain_find(&r.next[hash as usize & (r.next.len() - 1)], key)
    }

    #[inline]
    pub fn get(&self, hash: u64, key: &[u8]) -> Option<&V> {
        self.find(hash, key).map(|n| &n.value)
    }

    #[inline]
    pub fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut V> {
        self.get_entry_mut(hash, key).map(|n| &mut n.value)
    }

    /// The stored key and value: the key is borrowed from the table (a caller
    /// that must keep the key, such as the expiry index, clones it from here).
    pub fn get_entry_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Node<V, K>> {
        if self.is_empty() {
            return None;
        }
        let idx = hash as usize & (self.table.len() - 1);
        let Some(r) = self.rehash.as_deref_mut() else {
            return chain_find_mut(&mut self.table[idx], key);
        };
        if idx >= r.idx {
            if let Some(node) = chain_find_mut(&mut self.table[idx], key) {
                return Some(node);
            }
        }
        let mask = r.next.len() - 1;
        chain_find_mut(&mut r.next[hash as usize & mask], key)
    }

    /// Starts a resize to `size` buckets: at once for a table without
    /// entries, otherwise incrementally.
    fn resize(&mut self, size: usize) {
        debug_assert!(!self.is_rehashing());
        if self.is_empty() {
            self.table = empty_table(size);
            return;
        }
        self.rehash = Some(Box::new(Rehash {
            next: empty_table(size),
            idx: 0,
            used: 0,
        }));
    }

    /// Moves up to `max_entries` entries to the new table, passing at most
    /// ten empty buckets per entry allowed (Redis's dictRehash). Returns
    /// the entries moved; the old table is freed when the last has left.
    fn rehash_entries(&mut self, max_entries: usize) -> usize {
        let Some(r) = self.rehash.as_deref_mut() else {
            return 0;
        };
        let mask = r.next.len() - 1;
        let mut empty_visits = max_entries.saturating_mul(EMPTY_VISITS);
        let mut moved = 0;
        while moved < max_entries && r.used < self.len {
            let bucket = &mut self.table[r.idx];
            match bucket.take() {
                None => {
                    r.idx += 1;
                    empty_visits -= 1;
                    if empty_visits == 0 {
                        break;
                    }
                }
                Some(mut node) => {
                    *bucket = node.next.take();
                    let idx = hash_key(&node.key) as usize & mask;
                    node.next = r.next[idx].take();
                    r.next[idx] = Some(node);
                    r.used += 1;
                    moved += 1;
                }
            }
        }
        if r.used == self.len {
            let r = self.rehash.take().expect("a resize runs");
            self.table = r.next;
        }
        #[cfg(test)]
        MOVED.with(|m| m.set(m.get() + moved));
        moved
    }

    /// Moves up to `max_entries` entries of a running resize (Redis's
    /// incrementallyRehash, for a cron). Returns whether a resize still
    /// runs afterwards.
    pub fn rehash_step(&mut self, max_entries: usize) -> bool {
        self.rehash_entries(max_entries);
        self.is_rehashing()
    }

    /// Links a new entry into the table that receives new entries.
    #[inline]
    fn link(&mut self, hash: u64, key: K, value: V) -> &mut V {
        let table = match self.rehash.as_deref_mut() {
            Some(r) => {
                r.used += 1;
                &mut r.next
            }
            None => &mut self.table,
        };
        let idx = hash as usize & (table.len() - 1);
        let next = table[idx].take();
        self.len += 1;
        &mut table[idx].insert(Box::new(Node { next, key, value })).value
    }

    /// Inserts a key known to be absent (the caller looked it up first).
    pub fn insert_new(&mut self, hash: u64, key: K, value: V) -> &mut V {
        debug_assert!(self.get(hash, &key).is_none());
        if self.is_rehashing() {
            self.rehash_entries(STEP_ENTRIES);
        } else if self.len() >= self.table.len() {
            let target = (self.len() + 1).next_power_of_two().max(MIN_BUCKETS);
            self.resize(target);
        }
        self.link(hash, key, value)
    }

    /// Inserts a key known to be absent without starting a resize or
    /// moving entries, so that bucket positions stay where a running
    /// snapshot expects them (chains grow longer meanwhile; `fit` resizes
    /// afterwards).
    pub fn insert_new_fixed(&mut self, hash: u64, key: K, value: V) -> &mut V {
        if self.table.is_empty() {
            return self.insert_new(hash, key, value);
        }
        self.link(hash, key, value)
    }

    /// Unlinks the entry for `key` from whichever table holds it.
    fn unlink(&mut self, hash: u64, key: &[u8]) -> Option<(K, V)> {
        if self.is_empty() {
            return None;
        }
        let idx = hash as usize & (self.table.len() - 1);
        let mut node = None;
        if idx >= self.rehash_idx() {
            node = chain_remove(&mut self.table[idx], key);
        }
        if node.is_none() {
            if let Some(r) = self.rehash.as_deref_mut() {
                let mask = r.next.len() - 1;
                node = chain_remove(&mut r.next[hash as usize & mask], key);
                if node.is_some() {
                    r.used -= 1;
                }
            }
        }
        let Node { key, value, .. } = *node?;
        self.len -= 1;
        Some((key, value))
    }

    /// Removes without shrinking or moving entries (see `insert_new_fixed`).
    pub fn remove_fixed(&mut self, hash: u64, key: &[u8]) -> Option<(K, V)> {
        self.unlink(hash, key)
    }

    /// Starts the resize the fill calls for (after fixed-layout changes);
    /// a resize already running goes on.
    pub fn fit(&mut self) {
        if self.is_rehashing() {
            return;
        }
        if self.len() > self.table.len() {
            let target = self.len().next_power_of_two().max(MIN_BUCKETS);
            self.resize(target);
        } else {
            self.maybe_shrink();
        }
    }

    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut V)) {
        let next = match self.rehash.as_deref_mut() {
            Some(r) => &mut r.next[..],
            None => &mut [],
        };
        for link in self.table.iter_mut().chain(next.iter_mut()) {
            let mut cur = link.as_deref_mut();
            while let Some(node) = cur {
                f(&mut node.value);
                cur = node.next.as_deref_mut();
            }
        }
    }

    /// Buckets in the sequence a snapshot walks: `table`'s, then `next`'s.
    /// It only means something while nothing moves (the `_fixed`
    /// operations).
    #[inline]
    pub fn walk_len(&self) -> usize {
        self.buckets()
    }

    /// Where in the walk's sequence the entry for `key` is, or, when it is
    /// absent, where `insert_new_fixed` would put it.
    #[inline]
    pub fn walk_position(&self, hash: u64, key: &[u8]) -> usize {
        let idx = hash as usize & self.table.len().wrapping_sub(1);
        let Some(r) = self.rehash.as_deref() else {
            return idx;
        };
        if idx >= r.idx && chain_find(&self.table[idx], key).is_some() {
            return idx;
        }
        self.table.len() + (hash as usize & (r.next.len() - 1))
    }

    /// The bucket at a position of the walk's sequence.
    #[inline]
    fn slot(&self, pos: usize) -> &Link<V, K> {
        match pos.checked_sub(self.table.len()) {
            None => &self.table[pos],
            Some(i) => &self.next()[i],
        }
    }

    /// The entries of the bucket at a position of the walk's sequence.
    pub fn walk_bucket(&self, pos: usize) -> BucketIter<'_, V, K> {
        BucketIter {
            cur: if pos < self.walk_len() {
                self.slot(pos).as_deref()
            } else {
                None
            },
        }
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, hash: u64, key: &[u8], value: V) -> Option<V> {
        if let Some(v) = self.get_mut(hash, key) {
            return Some(std::mem::replace(v, value));
        }
        self.insert_new(hash, K::from_slice(key), value);
        None
    }

    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<(K, V)> {
        if self.is_empty() {
            return None;
        }
        self.rehash_entries(STEP_ENTRIES);
        let removed = self.unlink(hash, key);
        if removed.is_some() {
            self.maybe_shrink();
        }
        removed
    }

    fn maybe_shrink(&mut self) {
        // Redis shrinks when the fill drops under 10%; at most 1/8 here so
        // the new size stays a power of two with the same hysteresis.
        let n = self.table.len();
        if !self.is_rehashing() && n > MIN_BUCKETS && self.len() * 8 < n {
            let target = self.len().next_power_of_two().max(MIN_BUCKETS);
            self.resize(target);
        }
    }

    pub fn clear(&mut self) {
        drop_chains(&mut self.table);
        if let Some(mut r) = self.rehash.take() {
            drop_chains(&mut r.next);
        }
        self.table = Box::new([]);
        self.len = 0;
    }

    pub fn iter(&self) -> Iter<'_, V, K> {
        Iter {
            tables: [&self.table, self.next()],
            t: 0,
            idx: 0,
            cur: None,
        }
    }

    /// Calls `f` for each entry of the buckets the cursor designates and
    /// returns the next cursor (0 when the iteration is complete).
    ///
    /// This is Redis's reverse-binary cursor: the high bits of the cursor are
    /// incremented, so a table that doubles or halves between calls still
    /// visits every bucket that holds keys present from start to end. While
    /// a resize runs, a call visits the cursor's bucket in the smaller table
    /// and all the buckets of the larger one that it expands to.
    pub fn scan<'a>(&'a self, cursor: u64, mut f: impl FnMut(&'a K, &'a V)) -> u64 {
        if self.is_empty() {
            return 0;
        }
        let mut emit = |link: &'a Link<V, K>| {
            let mut cur = link.as_deref();
            while let Some(node) = cur {
                f(&node.key, &node.value);
                cur = node.next.as_deref();
            }
        };
        if !self.is_rehashing() {
            let mask = (self.table.len() - 1) as u64;
            emit(&self.table[(cursor & mask) as usize]);
            return next_cursor(cursor, mask);
        }
        let (small, large) = if self.table.len() <= self.next().len() {
            (&self.table[..], self.next())
        } else {
            (self.next(), &self.table[..])
        };
        let m0 = (small.len() - 1) as u64;
        let m1 = (large.len() - 1) as u64;
        let mut v = cursor;
        emit(&small[(v & m0) as usize]);
        loop {
            emit(&large[(v & m1) as usize]);
            v = next_cursor(v, m1);
            if v & (m0 ^ m1) == 0 {
                return v;
            }
        }
    }

    /// The positions of the walk's sequence that can hold entries: those
    /// of `table` below `rehash_idx` are empty.
    #[inline]
    fn live_positions(&self) -> (usize, usize) {
        (self.rehash_idx(), self.buckets())
    }

    /// A random entry: pick random non-empty buckets, then a random element
    /// of the chain (Redis's dictGetRandomKey).
    pub fn random(&self, rng: &mut fastrand::Rng) -> Option<(&K, &V)> {
        if self.is_empty() {
            return None;
        }
        let (lo, hi) = self.live_positions();
        // The table is at least 1/8 full, so this finds a bucket quickly;
        // after many tries, fall back to a linear walk from a random point.
        let mut idx = rng.usize(lo..hi);
        let mut tries = 0;
        while self.slot(idx).is_none() {
            tries += 1;
            idx = if tries < 64 {
                rng.usize(lo..hi)
            } else if idx + 1 == hi {
                lo
            } else {
                idx + 1
            };
        }
        let mut chain_len = 0;
        let mut cur = self.slot(idx).as_deref();
        while let Some(node) = cur {
            chain_len += 1;
            cur = node.next.as_deref();
        }
        let mut pick = rng.usize(..chain_len);
        let mut cur = self.slot(idx).as_deref();
        while let Some(node) = cur {
            if pick == 0 {
                return Some((&node.key, &node.value));
            }
            pick -= 1;
            cur = node.next.as_deref();
        }
        unreachable!()
    }

    /// Up to `count` entries from a run of buckets starting at a random
    /// one (Redis's dictGetSomeKeys): cheaper than `count` random picks,
    /// for the eviction pool's samples. Gives up after visiting ten
    /// buckets per wanted entry.
    pub fn some(&self, count: usize, rng: &mut fastrand::Rng, mut f: impl FnMut(&K, &V)) {
        if self.is_empty() || count == 0 {
            return;
        }
        let count = count.min(self.len());
        let (lo, hi) = self.live_positions();
        let mut idx = rng.usize(lo..hi);
        let (mut stored, mut steps, mut empty_run) = (0usize, count * 10, 0usize);
        while stored < count && steps > 0 {
            steps -= 1;
            let mut cur = self.slot(idx).as_deref();
            if cur.is_none() {
                // A long run of empty buckets: jump elsewhere, as Redis does.
                empty_run += 1;
                if empty_run >= 5 && empty_run > count {
                    idx = rng.usize(lo..hi);
                    empty_run = 0;
                    continue;
                }
            } else {
                empty_run = 0;
            }
            while let Some(node) = cur {
                f(&node.key, &node.value);
                stored += 1;
                if stored == count {
                    return;
                }
                cur = node.next.as_deref();
            }
            idx = if idx + 1 == hi { lo } else { idx + 1 };
        }
    }

    /// Sizes the table for `n` entries, so that filling it does not rehash
    /// (Redis's dictExpand; used when a compact collection is converted):
    /// at once while the table is empty, incrementally otherwise; nothing
    /// while a resize runs.
    pub fn expand(&mut self, n: usize) {
        let target = n.next_power_of_two().max(MIN_BUCKETS);
        if !self.is_rehashing() && target > self.table.len() {
            self.resize(target);
        }
    }

    /// A random entry, fairer than [`Dict::random`] when chains differ in
    /// length (Redis's dictGetFairRandomKey): collect up to 15 entries from
    /// consecutive buckets starting at a random one, then pick one of them.
    /// SRANDMEMBER, SPOP and HRANDFIELD use it, as Redis does.
    pub fn fair_random(&self, rng: &mut fastrand::Rng) -> Option<(&K, &V)> {
        const SAMPLE: usize = 15;
        if self.is_empty() {
            return None;
        }
        let count = SAMPLE.min(self.len());
        let (lo, hi) = self.live_positions();
        let mut picked: [Option<&Node<V, K>>; SAMPLE] = [None; SAMPLE];
        let mut stored = 0usize;
        let mut idx = rng.usize(lo..hi);
        let mut empty_run = 0usize;
        let mut steps = count * 10;
        while stored < count && steps > 0 {
            steps -= 1;
            match self.slot(idx).as_deref() {
                None => {
                    // Jump elsewhere after a long run of empty buckets.
                    empty_run += 1;
                    if empty_run >= 5 && empty_run > count {
                        idx = rng.usize(lo..hi);
                        empty_run = 0;
                    }
                }
                Some(mut node) => {
                    empty_run = 0;
                    // The whole chain takes part, by reservoir sampling, so
                    // that the end of a long chain can be picked too.
                    loop {
                        if stored < count {
                            picked[stored] = Some(node);
                        } else {
                            let r = rng.usize(..=stored);
                            if r < count {
                                picked[r] = Some(node);
                            }
                        }
                        stored += 1;
                        match node.next.as_deref() {
                            Some(n) => node = n,
                            None => break,
                        }
                    }
                    if stored >= count {
                        break;
                    }
                }
            }
            idx = if idx + 1 == hi { lo } else { idx + 1 };
        }
        let got = stored.min(count);
        if got == 0 {
            return self.random(rng);
        }
        let node = picked[rng.usize(..got)].expect("sampled entry");
        Some((&node.key, &node.value))
    }

    /// Drains all entries (used by FLUSHDB ASYNC to free memory elsewhere).
    pub fn take(&mut self) -> Dict<V, K> {
        std::mem::take(self)
    }
}

impl<V, K: DictKey> Drop for Dict<V, K> {
    fn drop(&mut self) {
        self.clear();
    }
}

pub struct BucketIter<'a, V, K: DictKey = CompactBytes> {
    cur: Option<&'a Node<V, K>>,
}

impl<'a, V, K: DictKey> Iterator for BucketIter<'a, V, K> {
    type Item = (&'a K, &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        let node = self.cur?;
        self.cur = node.next.as_deref();
        Some((&node.key, &node.value))
    }
}

pub struct Iter<'a, V, K: DictKey = CompactBytes> {
    tables: [&'a [Link<V, K>]; 2],
    t: usize,
    idx: usize,
    cur: Option<&'a Node<V, K>>,
}

impl<'a, V, K: DictKey> Iterator for Iter<'a, V, K> {
    type Item = (&'a K, &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(node) = self.cur {
                self.cur = node.next.as_deref();
                return Some((&node.key, &node.value));
            }
            if self.idx >= self.tables[self.t].len() {
                if self.t == 1 {
                    return None;
                }
                self.t = 1;
                self.idx = 0;
                continue;
            }
            self.cur = self.tables[self.t][self.idx].as_deref();
            self.idx += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn k(i: usize) -> Vec<u8> {
        format!("key:{i}").into_bytes()
    }

    #[test]
    fn insert_get_remove() {
        let mut d: Dict<usize> = Dict::new();
        for i in 0..1000 {
            let key = k(i);
            assert!(d.insert(hash_key(&key), &key, i).is_none());
        }
        assert_eq!(d.len(), 1000);
        for i in 0..1000 {
            let key = k(i);
            assert_eq!(d.get(hash_key(&key), &key), Some(&i));
        }
        for i in 0..990 {
            let key = k(i);
            assert_eq!(d.remove(hash_key(&key), &key).map(|(_, v)| v), Some(i));
        }
        assert_eq!(d.len(), 10);
        assert!(d.buckets() <= 128, "table shrank: {}", d.buckets());
        assert_eq!(d.iter().count(), 10);
    }

    #[test]
    fn fair_random_reaches_every_key_evenly() {
        let mut d: Dict<usize> = Dict::new();
        for i in 0..10 {
            let key = k(i);
            d.insert(hash_key(&key), &key, i);
        }
        let mut rng = fastrand::Rng::with_seed(7);
        let mut hits = [0usize; 10];
        for _ in 0..10_000 {
            let (_, v) = d.fair_random(&mut rng).unwrap();
            hits[*v] += 1;
        }
        assert!(hits.iter().all(|&h| (700..1300).contains(&h)), "{hits:?}");
        assert!(Dict::<usize>::new().fair_random(&mut rng).is_none());
    }

    #[test]
    fn expand_presizes_without_losing_keys() {
        let mut d: Dict<usize> = Dict::new();
        d.insert(hash_key(b"a"), b"a", 1);
        d.expand(1000);
        assert_eq!(d.buckets(), 4 + 1024, "both tables while the key moves");
        for i in 0..1000 {
            let key = k(i);
            d.insert(hash_key(&key), &key, i);
        }
        assert_eq!(d.buckets(), 1024);
        assert_eq!(d.get(hash_key(b"a"), b"a"), Some(&1));
        assert_eq!(d.len(), 1001);
    }

    /// The entries the resizes moved during `f`.
    fn moved_by(f: impl FnOnce()) -> usize {
        let before = MOVED.with(|m| m.get());
        f();
        MOVED.with(|m| m.get()) - before
    }

    /// Steps a running resize to its end.
    fn finish(d: &mut Dict<usize>) {
        while d.rehash_step(1000) {}
    }

    #[test]
    fn no_insertion_or_removal_moves_more_than_a_step() {
        // Growing from 4 to 2^17 buckets and shrinking back: each single
        // operation moves at most STEP_ENTRIES entries, yet every resize
        // ends (the old array is freed) well before the next one is due.
        let mut d: Dict<usize> = Dict::new();
        let (mut resizes, mut most) = (0, 0);
        for i in 0..100_000 {
            let key = k(i);
            let was = d.is_rehashing();
            let moved = moved_by(|| {
                d.insert_new(hash_key(&key), CompactBytes::from_slice(&key), i);
            });
            most = most.max(moved);
            if !was && d.is_rehashing() {
                resizes += 1;
            }
            assert!(moved <= STEP_ENTRIES, "insert {i} moved {moved}");
        }
        assert!(resizes >= 10, "{resizes} resizes");
        assert_eq!(most, STEP_ENTRIES, "moves happened");
        assert!(!d.is_rehashing());
        assert_eq!(d.buckets(), 131_072, "one table left");
        for i in 0..99_990 {
            let key = k(i);
            let moved = moved_by(|| {
                assert_eq!(d.remove(hash_key(&key), &key).map(|(_, v)| v), Some(i));
            });
            assert!(moved <= STEP_ENTRIES, "removal {i} moved {moved}");
        }
        finish(&mut d);
        assert!(d.buckets() <= 128, "shrank to {}", d.buckets());
        assert_eq!(d.len(), 10);
    }

    #[test]
    fn a_step_is_bounded_on_long_chains() {
        // Chains grown long while the layout was fixed (a snapshot, a
        // dataset limit): the resize that follows still moves a few
        // entries per operation, not a bucket's whole chain.
        let mut d: Dict<usize> = Dict::new();
        d.expand(4);
        for i in 0..4096 {
            let key = k(i);
            d.insert_new_fixed(hash_key(&key), CompactBytes::from_slice(&key), i);
        }
        assert_eq!(d.buckets(), 4);
        d.fit();
        assert!(d.is_rehashing());
        for i in 4096..5000 {
            let key = k(i);
            let moved = moved_by(|| {
                d.insert_new(hash_key(&key), CompactBytes::from_slice(&key), i);
            });
            assert!(moved <= STEP_ENTRIES);
        }
        finish(&mut d);
        for i in 0..5000 {
            let key = k(i);
            assert_eq!(d.get(hash_key(&key), &key), Some(&i));
        }
    }

    #[test]
    fn walk_positions_stay_put_while_a_resize_is_paused() {
        // A snapshot walks both tables of a paused resize in one sequence:
        // every key is in the bucket its position names, including keys
        // inserted and removed with the fixed operations meanwhile.
        let mut d: Dict<usize> = Dict::new();
        for i in 0..1025 {
            let key = k(i);
            d.insert_new(hash_key(&key), CompactBytes::from_slice(&key), i);
        }
        for i in 1025..1100 {
            let key = k(i);
            d.insert_new(hash_key(&key), CompactBytes::from_slice(&key), i);
        }
        assert!(d.is_rehashing(), "a resize is running");
        let n = d.walk_len();
        for i in 1100..1300 {
            let key = k(i);
            let h = hash_key(&key);
            let pos = d.walk_position(h, &key);
            d.insert_new_fixed(h, CompactBytes::from_slice(&key), i);
            assert_eq!(d.walk_position(h, &key), pos);
        }
        for i in (0..1300).step_by(3) {
            let key = k(i);
            d.remove_fixed(hash_key(&key), &key);
        }
        assert_eq!(d.walk_len(), n);
        let mut walked = HashSet::new();
        for pos in 0..n {
            for (key, _) in d.walk_bucket(pos) {
                assert_eq!(d.walk_position(hash_key(key), key), pos);
                assert!(walked.insert(key.to_vec()));
            }
        }
        assert_eq!(walked.len(), d.len());
        assert_eq!(d.iter().count(), d.len());
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16),
        Remove(u16),
        Step(u8),
        Scan,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => any::<u16>().prop_map(|k| Op::Insert(k % 3000)),
            3 => any::<u16>().prop_map(|k| Op::Remove(k % 3000)),
            1 => any::<u8>().prop_map(Op::Step),
            2 => Just(Op::Scan),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// The table against a HashMap, through grows, shrinks and the
        /// steps between: look-ups, length, iteration and sampling agree.
        #[test]
        fn behaves_as_a_map(ops in proptest::collection::vec(op(), 1..3000)) {
            let mut d: Dict<usize> = Dict::new();
            let mut model = std::collections::HashMap::new();
            let mut rng = fastrand::Rng::with_seed(1);
            for op in ops {
                match op {
                    Op::Insert(i) => {
                        let key = k(i as usize);
                        let old = d.insert(hash_key(&key), &key, i as usize);
                        proptest::prop_assert_eq!(old, model.insert(i as usize, i as usize));
                    }
                    Op::Remove(i) => {
                        let key = k(i as usize);
                        let got = d.remove(hash_key(&key), &key).map(|(_, v)| v);
                        proptest::prop_assert_eq!(got, model.remove(&(i as usize)));
                    }
                    Op::Step(n) => {
                        d.rehash_step(n as usize);
                    }
                    Op::Scan => {
                        if let Some((key, v)) = d.random(&mut rng) {
                            proptest::prop_assert_eq!(model.get(v), Some(v));
                            proptest::prop_assert_eq!(&**key, &k(*v)[..]);
                        }
                        if let Some((_, v)) = d.fair_random(&mut rng) {
                            proptest::prop_assert!(model.contains_key(v));
                        }
                        let mut some = 0;
                        d.some(5, &mut rng, |_, v| {
                            assert!(model.contains_key(v));
                            some += 1;
                        });
                        proptest::prop_assert!(some <= 5);
                    }
                }
                proptest::prop_assert_eq!(d.len(), model.len());
            }
            for i in 0..3000 {
                let key = k(i);
                proptest::prop_assert_eq!(d.get(hash_key(&key), &key), model.get(&i));
            }
            let mut seen: Vec<usize> = d.iter().map(|(_, v)| *v).collect();
            seen.sort_unstable();
            let mut want: Vec<usize> = model.keys().copied().collect();
            want.sort_unstable();
            proptest::prop_assert_eq!(seen, want);
        }

        /// SCAN's guarantee across resizes: a key present from the first
        /// call to the last is returned, whatever grows, shrinks or moves
        /// between calls; nothing returned was absent for the whole scan.
        #[test]
        fn scan_returns_every_key_present_throughout(
            stable in 0usize..400,
            transient in 0usize..4000,
            ops in proptest::collection::vec(op(), 0..4000),
        ) {
            let mut d: Dict<usize> = Dict::new();
            // Keys below 10_000 stay; the transient ones come and go.
            for i in 0..stable {
                let key = k(i);
                d.insert(hash_key(&key), &key, i);
            }
            for i in 0..transient {
                let key = k(10_000 + i);
                d.insert(hash_key(&key), &key, 10_000 + i);
            }
            let mut seen = HashSet::new();
            let mut ever = HashSet::new();
            ever.extend(d.iter().map(|(_, v)| *v));
            let mut ops = ops.into_iter();
            let mut cursor = 0;
            loop {
                cursor = d.scan(cursor, |_, v| {
                    seen.insert(*v);
                });
                // A few operations between calls.
                for op in ops.by_ref().take(7) {
                    match op {
                        Op::Insert(i) => {
                            let key = k(10_000 + i as usize);
                            d.insert(hash_key(&key), &key, 10_000 + i as usize);
                            ever.insert(10_000 + i as usize);
                        }
                        Op::Remove(i) => {
                            let key = k(10_000 + i as usize);
                            d.remove(hash_key(&key), &key);
                        }
                        Op::Step(n) => {
                            d.rehash_step(n as usize);
                        }
                        Op::Scan => {}
                    }
                }
                if cursor == 0 {
                    break;
                }
            }
            for i in 0..stable {
                proptest::prop_assert!(seen.contains(&i), "key {} missed", i);
            }
            proptest::prop_assert!(seen.is_subset(&ever));
        }
    }

    #[test]
    fn scan_survives_resize() {
        // Keys present for the whole scan are returned even when the table
        // grows and shrinks between calls.
        let mut d: Dict<()> = Dict::new();
        for i in 0..500 {
            let key = k(i);
            d.insert(hash_key(&key), &key, ());
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            cursor = d.scan(cursor, |key, _| {
                seen.insert(key.to_vec());
            });
            step += 1;
            if step == 20 {
                for i in 500..5000 {
                    let key = k(i);
                    d.insert(hash_key(&key), &key, ());
                }
            }
            if step == 200 {
                for i in 500..5000 {
                    let key = k(i);
                    d.remove(hash_key(&key), &key);
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500 {
            assert!(seen.contains(&k(i)), "key {i} missed");
        }
    }
}
