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
//! The table resizes all at once (Redis rehashes incrementally). Goblin's
//! keyspace is split into shards, each with its own tables, so one resize
//! touches only a fraction of the keys.
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
    buckets: Vec<Link<V, K>>,
    len: usize,
}

const MIN_BUCKETS: usize = 4;

impl<V, K: DictKey> Default for Dict<V, K> {
    fn default() -> Self {
        Dict::new()
    }
}

impl<V, K: DictKey> Dict<V, K> {
    pub const fn new() -> Dict<V, K> {
        Dict {
            buckets: Vec::new(),
            len: 0,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of buckets (0 for a table that never held a key).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    #[inline]
    fn mask(&self) -> usize {
        self.buckets.len().wrapping_sub(1)
    }

    #[inline]
    pub fn get(&self, hash: u64, key: &[u8]) -> Option<&V> {
        if self.len == 0 {
            return None;
        }
        let mut cur = self.buckets[hash as usize & self.mask()].as_deref();
        while let Some(node) = cur {
            if *node.key == *key {
                return Some(&node.value);
            }
            cur = node.next.as_deref();
        }
        None
    }

    #[inline]
    pub fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut V> {
        self.get_entry_mut(hash, key).map(|n| &mut n.value)
    }

    /// The stored key and value: the key is borrowed from the table (a caller
    /// that must keep the key, such as the expiry index, clones it from here).
    pub fn get_entry_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Node<V, K>> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask();
        let mut cur = self.buckets[hash as usize & mask].as_deref_mut();
        while let Some(node) = cur {
            if *node.key == *key {
                return Some(node);
            }
            cur = node.next.as_deref_mut();
        }
        None
    }

    /// Inserts a key known to be absent (the caller looked it up first).
    pub fn insert_new(&mut self, hash: u64, key: K, value: V) -> &mut V {
        debug_assert!(self.get(hash, &key).is_none());
        if self.len >= self.buckets.len() {
            let target = (self.len + 1).next_power_of_two().max(MIN_BUCKETS);
            self.rehash(target);
        }
        let idx = hash as usize & self.mask();
        let next = self.buckets[idx].take();
        self.buckets[idx] = Some(Box::new(Node { next, key, value }));
        self.len += 1;
        &mut self.buckets[idx].as_mut().unwrap().value
    }

    /// Inserts a key known to be absent without ever resizing, so that
    /// bucket positions stay where a running snapshot expects them (chains
    /// grow longer meanwhile; `fit` resizes afterwards).
    pub fn insert_new_fixed(&mut self, hash: u64, key: K, value: V) -> &mut V {
        if self.buckets.is_empty() {
            return self.insert_new(hash, key, value);
        }
        let idx = hash as usize & self.mask();
        let next = self.buckets[idx].take();
        self.buckets[idx] = Some(Box::new(Node { next, key, value }));
        self.len += 1;
        &mut self.buckets[idx].as_mut().unwrap().value
    }

    /// Removes without shrinking (see `insert_new_fixed`).
    pub fn remove_fixed(&mut self, hash: u64, key: &[u8]) -> Option<(K, V)> {
        if self.len == 0 {
            return None;
        }
        let idx = hash as usize & self.mask();
        let mut cur = &mut self.buckets[idx];
        while cur.as_ref().is_some_and(|n| *n.key != *key) {
            cur = &mut cur.as_mut().unwrap().next;
        }
        let mut node = cur.take()?;
        *cur = node.next.take();
        self.len -= 1;
        let Node { key, value, .. } = *node;
        Some((key, value))
    }

    /// Resizes to the size the fill calls for (after fixed-layout changes).
    pub fn fit(&mut self) {
        if self.len > self.buckets.len() {
            let target = self.len.next_power_of_two().max(MIN_BUCKETS);
            self.rehash(target);
        } else {
            self.maybe_shrink();
        }
    }

    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut V)) {
        for link in self.buckets.iter_mut() {
            let mut cur = link.as_deref_mut();
            while let Some(node) = cur {
                f(&mut node.value);
                cur = node.next.as_deref_mut();
            }
        }
    }

    /// The bucket a hash falls in (only meaningful while the size is fixed).
    #[inline]
    pub fn bucket_of(&self, hash: u64) -> usize {
        hash as usize & self.mask()
    }

    /// The entries of one bucket, by index.
    pub fn bucket_entries(&self, idx: usize) -> BucketIter<'_, V, K> {
        BucketIter {
            cur: self.buckets.get(idx).and_then(|b| b.as_deref()),
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
        if self.len == 0 {
            return None;
        }
        let idx = hash as usize & self.mask();
        let mut cur = &mut self.buckets[idx];
        while cur.as_ref().is_some_and(|n| *n.key != *key) {
            cur = &mut cur.as_mut().unwrap().next;
        }
        let mut node = cur.take()?;
        *cur = node.next.take();
        self.len -= 1;
        self.maybe_shrink();
        let Node { key, value, .. } = *node;
        Some((key, value))
    }

    fn maybe_shrink(&mut self) {
        // Redis shrinks when the fill drops under 10%; at most 1/8 here so
        // the new size stays a power of two with the same hysteresis.
        let n = self.buckets.len();
        if n > MIN_BUCKETS && self.len * 8 < n {
            let target = self.len.next_power_of_two().max(MIN_BUCKETS);
            self.rehash(target);
        }
    }

    fn rehash(&mut self, size: usize) {
        let old = std::mem::take(&mut self.buckets);
        self.buckets.resize_with(size, || None);
        let mask = size - 1;
        for mut link in old {
            while let Some(mut node) = link {
                link = node.next.take();
                let idx = hash_key(&node.key) as usize & mask;
                node.next = self.buckets[idx].take();
                self.buckets[idx] = Some(node);
            }
        }
    }

    pub fn clear(&mut self) {
        // Unlink chains iteratively: dropping a long chain recursively could
        // overflow the stack.
        for link in self.buckets.iter_mut() {
            let mut cur = link.take();
            while let Some(mut node) = cur {
                cur = node.next.take();
            }
        }
        self.buckets = Vec::new();
        self.len = 0;
    }

    pub fn iter(&self) -> Iter<'_, V, K> {
        Iter {
            buckets: &self.buckets,
            idx: 0,
            cur: None,
        }
    }

    /// Calls `f` for each entry of the bucket the cursor designates and
    /// returns the next cursor (0 when the iteration is complete).
    ///
    /// This is Redis's reverse-binary cursor: the high bits of the cursor are
    /// incremented, so a table that doubles or halves between calls still
    /// visits every bucket that holds keys present from start to end.
    pub fn scan<'a>(&'a self, cursor: u64, mut f: impl FnMut(&'a K, &'a V)) -> u64 {
        if self.len == 0 {
            return 0;
        }
        let mask = self.mask() as u64;
        let mut cur = self.buckets[(cursor & mask) as usize].as_deref();
        while let Some(node) = cur {
            f(&node.key, &node.value);
            cur = node.next.as_deref();
        }
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    /// Keys of one bucket (by index), for callers that mutate while walking.
    pub fn bucket_keys(&self, idx: usize, out: &mut Vec<K>)
    where
        K: Clone,
    {
        let mut cur = self.buckets.get(idx).and_then(|b| b.as_deref());
        while let Some(node) = cur {
            out.push(node.key.clone());
            cur = node.next.as_deref();
        }
    }

    /// A random entry: pick random non-empty buckets, then a random element
    /// of the chain (Redis's dictGetRandomKey).
    pub fn random(&self, rng: &mut fastrand::Rng) -> Option<(&K, &V)> {
        if self.len == 0 {
            return None;
        }
        let n = self.buckets.len();
        // The table is at least 1/8 full, so this finds a bucket quickly;
        // after many tries, fall back to a linear walk from a random point.
        let mut idx = rng.usize(..n);
        let mut tries = 0;
        while self.buckets[idx].is_none() {
            tries += 1;
            idx = if tries < 64 {
                rng.usize(..n)
            } else {
                (idx + 1) & (n - 1)
            };
        }
        let mut chain_len = 0;
        let mut cur = self.buckets[idx].as_deref();
        while let Some(node) = cur {
            chain_len += 1;
            cur = node.next.as_deref();
        }
        let mut pick = rng.usize(..chain_len);
        let mut cur = self.buckets[idx].as_deref();
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
        if self.len == 0 || count == 0 {
            return;
        }
        let count = count.min(self.len);
        let mask = self.mask();
        let mut idx = rng.usize(..=mask);
        let (mut stored, mut steps, mut empty_run) = (0usize, count * 10, 0usize);
        while stored < count && steps > 0 {
            steps -= 1;
            let mut cur = self.buckets[idx].as_deref();
            if cur.is_none() {
                // A long run of empty buckets: jump elsewhere, as Redis does.
                empty_run += 1;
                if empty_run >= 5 && empty_run > count {
                    idx = rng.usize(..=mask);
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
            idx = (idx + 1) & mask;
        }
    }

    /// Sizes the table for `n` entries, so that filling it does not rehash
    /// (Redis's dictExpand; used when a compact collection is converted).
    pub fn expand(&mut self, n: usize) {
        let target = n.next_power_of_two().max(MIN_BUCKETS);
        if target > self.buckets.len() {
            self.rehash(target);
        }
    }

    /// A random entry, fairer than [`Dict::random`] when chains differ in
    /// length (Redis's dictGetFairRandomKey): collect up to 15 entries from
    /// consecutive buckets starting at a random one, then pick one of them.
    /// SRANDMEMBER, SPOP and HRANDFIELD use it, as Redis does.
    pub fn fair_random(&self, rng: &mut fastrand::Rng) -> Option<(&K, &V)> {
        const SAMPLE: usize = 15;
        if self.len == 0 {
            return None;
        }
        let count = SAMPLE.min(self.len);
        let mask = self.mask();
        let mut picked: [Option<&Node<V, K>>; SAMPLE] = [None; SAMPLE];
        let mut stored = 0usize;
        let mut idx = rng.usize(..=mask);
        let mut empty_run = 0usize;
        let mut steps = count * 10;
        while stored < count && steps > 0 {
            steps -= 1;
            match self.buckets[idx].as_deref() {
                None => {
                    // Jump elsewhere after a long run of empty buckets.
                    empty_run += 1;
                    if empty_run >= 5 && empty_run > count {
                        idx = rng.usize(..=mask);
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
            idx = (idx + 1) & mask;
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
    buckets: &'a [Link<V, K>],
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
            if self.idx >= self.buckets.len() {
                return None;
            }
            self.cur = self.buckets[self.idx].as_deref();
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
        assert_eq!(d.buckets(), 1024);
        for i in 0..1000 {
            let key = k(i);
            d.insert(hash_key(&key), &key, i);
        }
        assert_eq!(d.buckets(), 1024);
        assert_eq!(d.get(hash_key(b"a"), b"a"), Some(&1));
        assert_eq!(d.len(), 1001);
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
