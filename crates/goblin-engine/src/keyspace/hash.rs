//! `Hash`: the value of a hash key, a map from fields to values.
//!
//! Two representations, switched exactly where Redis switches its
//! encodings, so that OBJECT ENCODING reports what Redis would:
//! - compact ("listpack"): fields and values as alternating entries of one
//!   [`Listpack`] buffer, in insertion order. A new hash starts here.
//! - table ("hashtable"): a [`Dict`] from [`SmallBytes`] field to
//!   [`ThinBytes`] value. An entry is 32 bytes (link, field handle with up
//!   to 15 bytes inline, value handle with up to 7 bytes inline), the size
//!   of Redis's dictEntry, and a string that does not fit inline costs no
//!   more than Redis's sds: a large hash never takes more memory than
//!   Redis's for the same data.
//!
//! A compact hash becomes a table when it would hold more than
//! `hash-max-listpack-entries` fields, or a field or value longer than
//! `hash-max-listpack-value` bytes (Redis's hashTypeTryConversion and
//! hashTypeSet), and never goes back.
//!
//! Commands reach the fields only through the methods here (get, set,
//! remove, iter, random, scan), never through the representation. That is
//! the seam for per-field expiry (HEXPIRE and friends): a `Hash` will carry
//! an optional side index of field expiry times (absent for hashes without
//! TTLs, as `Db` keeps `expires` beside `keys`), `remove` will drop a
//! field's TTL with it, and the access helpers of commands/hashes.rs, which
//! hold the command's clock, will reap the expired fields before handing
//! the hash to a command. The representations and the commands stay as
//! they are.

use super::dict::{hash_key, Dict};
use super::listpack::Listpack;
use super::small_bytes::SmallBytes;
use super::thin_bytes::ThinBytes;

/// The conversion thresholds, read from the configuration once per command.
#[derive(Clone, Copy, Debug)]
pub struct HashLimits {
    /// hash-max-listpack-entries
    pub max_entries: usize,
    /// hash-max-listpack-value
    pub max_value: usize,
}

impl HashLimits {
    pub fn from_config(config: &crate::config::Config) -> HashLimits {
        HashLimits {
            max_entries: config.get_i64("hash-max-listpack-entries").max(0) as usize,
            max_value: config.get_i64("hash-max-listpack-value").max(0) as usize,
        }
    }
}

impl Default for HashLimits {
    /// Redis's defaults.
    fn default() -> Self {
        HashLimits {
            max_entries: 512,
            max_value: 64,
        }
    }
}

pub struct Hash {
    repr: Repr,
}

enum Repr {
    Compact(Listpack),
    Table(Dict<ThinBytes, SmallBytes>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::new()
    }
}

/// Offsets of a field entry and of its value entry in a compact hash.
fn find_compact(lp: &Listpack, field: &[u8]) -> Option<(usize, usize)> {
    let mut off = 0;
    while off < lp.bytes() {
        let (f, value_off) = lp.entry_at(off);
        if f == field {
            return Some((off, value_off));
        }
        off = lp.entry_at(value_off).1;
    }
    None
}

impl Hash {
    /// An empty hash in the compact form.
    pub const fn new() -> Hash {
        Hash {
            repr: Repr::Compact(Listpack::new()),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Compact(lp) => lp.len() / 2,
            Repr::Table(d) => d.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True in the compact form.
    pub fn is_compact(&self) -> bool {
        matches!(self.repr, Repr::Compact(_))
    }

    /// Redis's name for the representation (OBJECT ENCODING).
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Compact(_) => "listpack",
            Repr::Table(_) => "hashtable",
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Compact(lp) => find_compact(lp, field).map(|(_, v)| lp.entry_at(v).0),
            Repr::Table(d) => d.get(hash_key(field), field).map(|v| v.as_slice()),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Redis's hashTypeTryConversion: before a write of `strings` (fields
    /// and values), a compact hash becomes a table when one of them is
    /// longer than the limit or the buffer would grow past its safety size.
    pub fn prepare_write(&mut self, strings: &[&[u8]], limits: &HashLimits) {
        let Repr::Compact(lp) = &self.repr else {
            return;
        };
        let mut sum = 0usize;
        for s in strings {
            if s.len() > limits.max_value {
                self.convert();
                return;
            }
            sum += s.len();
        }
        if !lp.safe_to_add(sum) {
            self.convert();
        }
    }

    /// Sets `field` to `value` (Redis's hashTypeSet); true when the field
    /// is new. Converts to a table when the pair or the new size exceed the
    /// compact limits.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &HashLimits) -> bool {
        if self.is_compact() && (field.len() > limits.max_value || value.len() > limits.max_value) {
            self.convert();
        }
        match &mut self.repr {
            Repr::Compact(lp) => {
                let inserted = match find_compact(lp, field) {
                    Some((_, value_off)) => {
                        lp.replace(value_off, value);
                        false
                    }
                    None => {
                        lp.push(field);
                        lp.push(value);
                        true
                    }
                };
                if lp.len() / 2 > limits.max_entries {
                    self.convert();
                }
                inserted
            }
            Repr::Table(d) => {
                let h = hash_key(field);
                match d.get_mut(h, field) {
                    Some(v) => {
                        *v = ThinBytes::from_slice(value);
                        false
                    }
                    None => {
                        d.insert_new(
                            h,
                            SmallBytes::from_slice(field),
                            ThinBytes::from_slice(value),
                        );
                        true
                    }
                }
            }
        }
    }

    /// Removes a field; true when it was there. The caller deletes the key
    /// when the hash becomes empty.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Compact(lp) => match find_compact(lp, field) {
                Some((off, _)) => {
                    lp.remove(off, 2);
                    true
                }
                None => false,
            },
            Repr::Table(d) => d.remove(hash_key(field), field).is_some(),
        }
    }

    /// Field/value pairs: insertion order when compact, table order otherwise.
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Compact(lp) => Iter::Compact(lp.iter()),
            Repr::Table(d) => Iter::Table(d.iter()),
        }
    }

    /// One random pair (Redis's hashTypeRandomElement).
    pub fn random(&self, rng: &mut fastrand::Rng) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Compact(lp) => {
                if lp.is_empty() {
                    return None;
                }
                let skip = rng.usize(..lp.len() / 2) * 2;
                let mut it = lp.iter().skip(skip);
                Some((it.next()?, it.next()?))
            }
            Repr::Table(d) => d
                .fair_random(rng)
                .map(|(k, v)| (k.as_slice(), v.as_slice())),
        }
    }

    /// A drawer of random pairs for commands that draw many: the compact
    /// form is indexed once instead of walked per draw.
    pub fn sampler(&self) -> Sampler<'_> {
        match &self.repr {
            Repr::Compact(_) => Sampler::Indexed(self.iter().collect()),
            Repr::Table(d) => Sampler::Table(d),
        }
    }

    /// One step of HSCAN from `cursor`, calling `f` for each pair visited;
    /// returns the next cursor (0 at the end). A compact hash is returned
    /// whole in one step, as Redis does.
    pub fn scan<'a>(&'a self, cursor: u64, mut f: impl FnMut(&'a [u8], &'a [u8])) -> u64 {
        match &self.repr {
            Repr::Compact(_) => {
                for (k, v) in self.iter() {
                    f(k, v);
                }
                0
            }
            Repr::Table(d) => d.scan(cursor, |k, v| f(k, v)),
        }
    }

    /// Approximate heap bytes, sampling at most `samples` table entries
    /// (0 = all), as Redis's objectComputeSize does.
    pub fn heap_size_sampled(&self, samples: usize) -> usize {
        match &self.repr {
            Repr::Compact(lp) => lp.heap_size(),
            Repr::Table(d) => {
                let entry = std::mem::size_of::<(usize, SmallBytes, ThinBytes)>();
                let base = d.buckets() * std::mem::size_of::<usize>() + d.len() * entry;
                let limit = if samples == 0 { usize::MAX } else { samples };
                let (mut seen, mut extra) = (0usize, 0usize);
                for (k, v) in d.iter().take(limit) {
                    seen += 1;
                    extra += k.heap_size() + v.heap_size();
                }
                if seen == 0 {
                    return base;
                }
                base + extra * d.len() / seen
            }
        }
    }

    /// Converts the compact form into a table (Redis's hashTypeConvert),
    /// sized for the current fields so that the conversion does not rehash.
    fn convert(&mut self) {
        let Repr::Compact(lp) = &self.repr else {
            return;
        };
        let mut d: Dict<ThinBytes, SmallBytes> = Dict::new();
        d.expand(lp.len() / 2);
        let mut it = lp.iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            d.insert_new(
                hash_key(k),
                SmallBytes::from_slice(k),
                ThinBytes::from_slice(v),
            );
        }
        self.repr = Repr::Table(d);
    }
}

impl Clone for Hash {
    /// A copy in the same representation (COPY keeps the encoding, as
    /// Redis's hashTypeDup does).
    fn clone(&self) -> Self {
        match &self.repr {
            Repr::Compact(lp) => Hash {
                repr: Repr::Compact(lp.clone()),
            },
            Repr::Table(d) => {
                let mut copy: Dict<ThinBytes, SmallBytes> = Dict::new();
                copy.expand(d.len());
                for (k, v) in d.iter() {
                    copy.insert_new(hash_key(k), k.clone(), v.clone());
                }
                Hash {
                    repr: Repr::Table(copy),
                }
            }
        }
    }
}

impl std::fmt::Debug for Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(
                self.iter()
                    .map(|(k, v)| (String::from_utf8_lossy(k), String::from_utf8_lossy(v))),
            )
            .finish()
    }
}

pub enum Iter<'a> {
    Compact(super::listpack::Entries<'a>),
    Table(super::dict::Iter<'a, ThinBytes, SmallBytes>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Compact(it) => Some((it.next()?, it.next()?)),
            Iter::Table(it) => it.next().map(|(k, v)| (k.as_slice(), v.as_slice())),
        }
    }
}

pub enum Sampler<'a> {
    Indexed(Vec<(&'a [u8], &'a [u8])>),
    Table(&'a Dict<ThinBytes, SmallBytes>),
}

impl<'a> Sampler<'a> {
    /// A random pair of a non-empty hash.
    pub fn pick(&self, rng: &mut fastrand::Rng) -> (&'a [u8], &'a [u8]) {
        match self {
            Sampler::Indexed(pairs) => pairs[rng.usize(..pairs.len())],
            Sampler::Table(d) => {
                let (k, v) = d.fair_random(rng).expect("non-empty hash");
                (k.as_slice(), v.as_slice())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(entries: usize, value: usize) -> HashLimits {
        HashLimits {
            max_entries: entries,
            max_value: value,
        }
    }

    #[test]
    fn table_entry_is_as_small_as_redis_dict_entry() {
        // link + field + value: 32 bytes, like Redis's dictEntry (three
        // pointers, which jemalloc serves from its 32-byte class).
        assert_eq!(std::mem::size_of::<(usize, SmallBytes, ThinBytes)>(), 32);
    }

    #[test]
    fn compact_until_entry_limit_then_table() {
        let l = limits(4, 64);
        let mut h = Hash::new();
        for i in 0..4 {
            assert!(h.set(format!("f{i}").as_bytes(), b"v", &l));
        }
        assert_eq!(h.encoding(), "listpack");
        assert!(h.set(b"f4", b"v", &l));
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        for i in 0..5 {
            assert_eq!(h.get(format!("f{i}").as_bytes()), Some(&b"v"[..]));
        }
        // Removing fields never converts back.
        for i in 0..4 {
            assert!(h.remove(format!("f{i}").as_bytes()));
        }
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn long_field_or_value_converts() {
        let l = limits(512, 8);
        let mut h = Hash::new();
        h.set(b"abcdefgh", b"12345678", &l);
        assert_eq!(h.encoding(), "listpack");
        h.set(b"x", b"123456789", &l);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"abcdefgh"), Some(&b"12345678"[..]));
        assert_eq!(h.get(b"x"), Some(&b"123456789"[..]));

        let mut h = Hash::new();
        h.prepare_write(&[b"abcdefghi", b"1"], &l);
        assert_eq!(h.encoding(), "hashtable");
    }

    #[test]
    fn compact_update_and_remove_keep_pairs_aligned() {
        let l = HashLimits::default();
        let mut h = Hash::new();
        h.set(b"a", b"1", &l);
        h.set(b"b", b"2", &l);
        h.set(b"c", b"3", &l);
        assert!(!h.set(b"b", b"a much longer value than before", &l));
        assert!(h.remove(b"a"));
        assert!(!h.remove(b"a"));
        let pairs: Vec<(&[u8], &[u8])> = h.iter().collect();
        assert_eq!(
            pairs,
            vec![
                (&b"b"[..], &b"a much longer value than before"[..]),
                (&b"c"[..], &b"3"[..])
            ]
        );
        // A field equal to another's value is still looked up as a field.
        h.set(b"3", b"x", &l);
        assert_eq!(h.get(b"3"), Some(&b"x"[..]));
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn conversion_preserves_every_pair() {
        let mut h = Hash::new();
        let l = limits(1000, 64);
        for i in 0..300 {
            h.set(
                format!("field:{i}").as_bytes(),
                format!("value:{i}").as_bytes(),
                &l,
            );
        }
        let before: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
            h.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        h.convert();
        assert_eq!(h.encoding(), "hashtable");
        let after: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
            h.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        assert_eq!(before, after);
        let copy = h.clone();
        assert_eq!(copy.encoding(), "hashtable");
        assert_eq!(copy.len(), 300);
    }

    #[test]
    fn scan_of_a_table_visits_every_field() {
        let l = limits(0, 64);
        let mut h = Hash::new();
        for i in 0..100 {
            h.set(format!("f{i}").as_bytes(), b"v", &l);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        loop {
            cursor = h.scan(cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen.len(), 100);
    }
}
