//! `Set`: the value of a set key.
//!
//! Two representations, switched exactly where Redis 7.0 switches its
//! encodings, so that OBJECT ENCODING reports what Redis would:
//! - "intset": a sorted array of integers in the narrowest width that
//!   holds them all (16, 32 or 64 bits), like Redis's intset. A set whose
//!   first member is an integer (Redis's string2ll rules) starts here.
//! - "hashtable": a [`Dict`] of members with no values; an entry is 32
//!   bytes with members of up to 22 bytes stored inline.
//!
//! An intset becomes a table when a member that is not an integer is
//! added or when it would hold more than `set-max-intset-entries` members
//! (capped at 2^30, as Redis caps it), and never goes back.

use super::bytes::CompactBytes;
use super::dict::{hash_key, Dict};
use goblin_num::parse_i64;
use std::borrow::Cow;

/// Redis limits intsets to 1G entries whatever the configuration says.
const INTSET_HARD_LIMIT: usize = 1 << 30;

/// A member as stored: an integer of an intset, or bytes of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Member<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl<'a> Member<'a> {
    /// The member's bytes (an integer in decimal).
    pub fn to_bytes(self) -> Cow<'a, [u8]> {
        match self {
            Member::Int(v) => Cow::Owned(itoa::Buffer::new().format(v).as_bytes().to_vec()),
            Member::Str(s) => Cow::Borrowed(s),
        }
    }

    pub fn to_compact(self) -> CompactBytes {
        match self {
            Member::Int(v) => CompactBytes::from_i64(v),
            Member::Str(s) => CompactBytes::from_slice(s),
        }
    }
}

/// A sorted array of distinct integers, in the narrowest width that holds
/// them all (Redis's intset; the width only ever grows).
#[derive(Clone, Debug)]
pub enum IntSet {
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

/// Inserts `v` into a sorted vector, growing it by exactly one slot: small
/// sets are many, and a doubling vector would waste up to half of each.
fn insert_sorted<T: Ord + Copy>(vec: &mut Vec<T>, v: T) -> bool {
    match vec.binary_search(&v) {
        Ok(_) => false,
        Err(pos) => {
            vec.reserve_exact(1);
            vec.insert(pos, v);
            true
        }
    }
}

fn remove_sorted<T: Ord + Copy>(vec: &mut Vec<T>, v: T) -> bool {
    match vec.binary_search(&v) {
        Ok(pos) => {
            vec.remove(pos);
            if vec.capacity() > 16 && vec.capacity() > vec.len() * 2 {
                vec.shrink_to_fit();
            }
            true
        }
        Err(_) => false,
    }
}

impl IntSet {
    pub const fn new() -> IntSet {
        IntSet::I16(Vec::new())
    }

    pub fn len(&self) -> usize {
        match self {
            IntSet::I16(v) => v.len(),
            IntSet::I32(v) => v.len(),
            IntSet::I64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The member at `i` in ascending order.
    pub fn get(&self, i: usize) -> i64 {
        match self {
            IntSet::I16(v) => v[i] as i64,
            IntSet::I32(v) => v[i] as i64,
            IntSet::I64(v) => v[i],
        }
    }

    pub fn contains(&self, x: i64) -> bool {
        match self {
            IntSet::I16(v) => i16::try_from(x).is_ok_and(|x| v.binary_search(&x).is_ok()),
            IntSet::I32(v) => i32::try_from(x).is_ok_and(|x| v.binary_search(&x).is_ok()),
            IntSet::I64(v) => v.binary_search(&x).is_ok(),
        }
    }

    /// Adds `x`, widening the array first when `x` does not fit its width.
    pub fn insert(&mut self, x: i64) -> bool {
        let need_wider = match self {
            IntSet::I16(_) => i16::try_from(x).is_err(),
            IntSet::I32(_) => i32::try_from(x).is_err(),
            IntSet::I64(_) => false,
        };
        if need_wider {
            self.widen(i32::try_from(x).is_err());
        }
        match self {
            IntSet::I16(v) => insert_sorted(v, x as i16),
            IntSet::I32(v) => insert_sorted(v, x as i32),
            IntSet::I64(v) => insert_sorted(v, x),
        }
    }

    fn widen(&mut self, to_64: bool) {
        let all: Vec<i64> = self.iter().collect();
        *self = if to_64 {
            IntSet::I64(all)
        } else {
            IntSet::I32(all.into_iter().map(|x| x as i32).collect())
        };
    }

    pub fn remove(&mut self, x: i64) -> bool {
        match self {
            IntSet::I16(v) => i16::try_from(x).is_ok_and(|x| remove_sorted(v, x)),
            IntSet::I32(v) => i32::try_from(x).is_ok_and(|x| remove_sorted(v, x)),
            IntSet::I64(v) => remove_sorted(v, x),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    pub fn heap_size(&self) -> usize {
        match self {
            IntSet::I16(v) => v.capacity() * 2,
            IntSet::I32(v) => v.capacity() * 4,
            IntSet::I64(v) => v.capacity() * 8,
        }
    }
}

impl Default for IntSet {
    fn default() -> Self {
        IntSet::new()
    }
}

pub struct Set {
    repr: Repr,
}

enum Repr {
    Ints(IntSet),
    Table(Dict<()>),
}

impl Set {
    /// An empty intset (Redis's createIntsetObject, the start of the
    /// result of SINTERSTORE, SUNIONSTORE and SDIFFSTORE).
    pub const fn new_intset() -> Set {
        Set {
            repr: Repr::Ints(IntSet::new()),
        }
    }

    /// An empty table.
    pub fn new_table() -> Set {
        Set {
            repr: Repr::Table(Dict::new()),
        }
    }

    /// An empty set able to hold `first` (Redis's setTypeCreate): an intset
    /// when it is an integer, a table otherwise.
    pub fn for_member(first: &[u8]) -> Set {
        if parse_i64(first).is_some() {
            Set::new_intset()
        } else {
            Set::new_table()
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Ints(s) => s.len(),
            Repr::Table(d) => d.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Redis's name for the representation (OBJECT ENCODING).
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Ints(_) => "intset",
            Repr::Table(_) => "hashtable",
        }
    }

    pub fn is_intset(&self) -> bool {
        matches!(self.repr, Repr::Ints(_))
    }

    /// Adds a member (Redis's setTypeAdd); true when it is new.
    /// `max_intset` is set-max-intset-entries.
    pub fn add(&mut self, member: &[u8], max_intset: usize) -> bool {
        if self.is_intset() {
            match parse_i64(member) {
                Some(v) => return self.add_int_to_intset(v, max_intset),
                None => self.convert(),
            }
        }
        self.add_to_table(member)
    }

    /// Adds a member taken from another set, without formatting integers
    /// when both are intsets.
    pub fn add_member(&mut self, member: Member<'_>, max_intset: usize) -> bool {
        match (member, &self.repr) {
            (Member::Int(v), Repr::Ints(_)) => self.add_int_to_intset(v, max_intset),
            (Member::Int(v), Repr::Table(_)) => {
                self.add_to_table(itoa::Buffer::new().format(v).as_bytes())
            }
            (Member::Str(s), _) => self.add(s, max_intset),
        }
    }

    fn add_int_to_intset(&mut self, v: i64, max_intset: usize) -> bool {
        let Repr::Ints(ints) = &mut self.repr else {
            unreachable!("intset expected");
        };
        if !ints.insert(v) {
            return false;
        }
        if ints.len() > max_intset.min(INTSET_HARD_LIMIT) {
            self.convert();
        }
        true
    }

    fn add_to_table(&mut self, member: &[u8]) -> bool {
        let Repr::Table(d) = &mut self.repr else {
            unreachable!("table expected");
        };
        let h = hash_key(member);
        if d.get(h, member).is_some() {
            return false;
        }
        d.insert_new(h, CompactBytes::from_slice(member), ());
        true
    }

    /// Removes a member; true when it was there. The caller deletes the key
    /// when the set becomes empty.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Ints(ints) => parse_i64(member).is_some_and(|v| ints.remove(v)),
            Repr::Table(d) => d.remove(hash_key(member), member).is_some(),
        }
    }

    pub fn remove_member(&mut self, member: Member<'_>) -> bool {
        match (member, &mut self.repr) {
            (Member::Int(v), Repr::Ints(ints)) => ints.remove(v),
            (m, _) => self.remove(&m.to_bytes()),
        }
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            Repr::Ints(ints) => parse_i64(member).is_some_and(|v| ints.contains(v)),
            Repr::Table(d) => d.get(hash_key(member), member).is_some(),
        }
    }

    pub fn contains_member(&self, member: Member<'_>) -> bool {
        match (member, &self.repr) {
            (Member::Int(v), Repr::Ints(ints)) => ints.contains(v),
            (Member::Int(v), Repr::Table(_)) => {
                self.contains(itoa::Buffer::new().format(v).as_bytes())
            }
            (Member::Str(s), _) => self.contains(s),
        }
    }

    /// Members: ascending for an intset, table order otherwise.
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Ints(ints) => Iter::Ints(ints, 0),
            Repr::Table(d) => Iter::Table(d.iter()),
        }
    }

    /// A random member (Redis's setTypeRandomElement).
    pub fn random(&self, rng: &mut fastrand::Rng) -> Option<Member<'_>> {
        match &self.repr {
            Repr::Ints(ints) => {
                (!ints.is_empty()).then(|| Member::Int(ints.get(rng.usize(..ints.len()))))
            }
            Repr::Table(d) => d.fair_random(rng).map(|(k, _)| Member::Str(k.as_slice())),
        }
    }

    /// One step of SSCAN from `cursor`; returns the next cursor (0 at the
    /// end). An intset is returned whole in one step, as Redis does.
    pub fn scan<'a>(&'a self, cursor: u64, mut f: impl FnMut(Member<'a>)) -> u64 {
        match &self.repr {
            Repr::Ints(ints) => {
                ints.iter().for_each(|v| f(Member::Int(v)));
                0
            }
            Repr::Table(d) => d.scan(cursor, |k, _| f(Member::Str(k))),
        }
    }

    /// Approximate heap bytes, sampling at most `samples` table entries
    /// (0 = all), as Redis's objectComputeSize does.
    pub fn heap_size_sampled(&self, samples: usize) -> usize {
        match &self.repr {
            Repr::Ints(ints) => ints.heap_size(),
            Repr::Table(d) => {
                let entry = std::mem::size_of::<(usize, CompactBytes)>();
                let base = d.buckets() * std::mem::size_of::<usize>() + d.len() * entry;
                let limit = if samples == 0 { usize::MAX } else { samples };
                let (mut seen, mut extra) = (0usize, 0usize);
                for (k, _) in d.iter().take(limit) {
                    seen += 1;
                    extra += k.heap_size();
                }
                if seen == 0 {
                    return base;
                }
                base + extra * d.len() / seen
            }
        }
    }

    /// Converts an intset into a table sized for its members (Redis's
    /// setTypeConvert).
    fn convert(&mut self) {
        let Repr::Ints(ints) = &self.repr else {
            return;
        };
        let mut d: Dict<()> = Dict::new();
        d.expand(ints.len());
        for v in ints.iter() {
            let s = CompactBytes::from_i64(v);
            d.insert_new(hash_key(&s), s, ());
        }
        self.repr = Repr::Table(d);
    }
}

impl Clone for Set {
    /// A copy in the same representation (COPY keeps the encoding, as
    /// Redis's setTypeDup does).
    fn clone(&self) -> Self {
        match &self.repr {
            Repr::Ints(ints) => Set {
                repr: Repr::Ints(ints.clone()),
            },
            Repr::Table(d) => {
                let mut copy: Dict<()> = Dict::new();
                copy.expand(d.len());
                for (k, _) in d.iter() {
                    copy.insert_new(hash_key(k), k.clone(), ());
                }
                Set {
                    repr: Repr::Table(copy),
                }
            }
        }
    }
}

impl std::fmt::Debug for Set {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries(
                self.iter()
                    .map(|m| String::from_utf8_lossy(&m.to_bytes()).into_owned()),
            )
            .finish()
    }
}

pub enum Iter<'a> {
    Ints(&'a IntSet, usize),
    Table(super::dict::Iter<'a, ()>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = Member<'a>;
    #[inline]
    fn next(&mut self) -> Option<Member<'a>> {
        match self {
            Iter::Ints(ints, i) => {
                if *i >= ints.len() {
                    return None;
                }
                *i += 1;
                Some(Member::Int(ints.get(*i - 1)))
            }
            Iter::Table(it) => it.next().map(|(k, _)| Member::Str(k.as_slice())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(s: &Set) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = s.iter().map(|m| m.to_bytes().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn intset_widens_and_stays_sorted() {
        let mut s = IntSet::new();
        for x in [5, -3, 40000, 1, i64::MIN, 7, 70000, i64::MAX] {
            assert!(s.insert(x));
        }
        assert!(!s.insert(7));
        assert!(matches!(s, IntSet::I64(_)));
        let all: Vec<i64> = s.iter().collect();
        assert_eq!(all, vec![i64::MIN, -3, 1, 5, 7, 40000, 70000, i64::MAX]);
        assert!(s.contains(40000) && !s.contains(40001));
        assert!(s.remove(i64::MIN) && !s.remove(i64::MIN));
        assert_eq!(s.len(), 7);

        let mut s = IntSet::new();
        s.insert(1);
        s.insert(100_000);
        assert!(matches!(s, IntSet::I32(_)));
        // Out-of-width values are simply absent.
        assert!(!s.contains(1 << 40) && !s.remove(1 << 40));
    }

    #[test]
    fn non_integer_member_converts_to_table() {
        let mut s = Set::for_member(b"1");
        assert_eq!(s.encoding(), "intset");
        s.add(b"1", 512);
        s.add(b"2", 512);
        assert_eq!(s.encoding(), "intset");
        assert!(s.add(b"a", 512));
        assert_eq!(s.encoding(), "hashtable");
        assert_eq!(
            members(&s),
            vec![b"1".to_vec(), b"2".to_vec(), b"a".to_vec()]
        );
        // Removing the non-integer member does not convert back.
        assert!(s.remove(b"a"));
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"1") && s.contains_member(Member::Int(2)));
    }

    #[test]
    fn intset_entry_limit_converts_to_table() {
        let mut s = Set::new_intset();
        for i in 0..4 {
            assert!(s.add(i.to_string().as_bytes(), 4));
        }
        assert_eq!(s.encoding(), "intset");
        assert!(s.add(b"4", 4));
        assert_eq!(s.encoding(), "hashtable");
        assert_eq!(s.len(), 5);
        for i in 0..5 {
            assert!(s.contains(i.to_string().as_bytes()));
        }
    }

    #[test]
    fn integer_lookalikes_are_strings() {
        // string2ll rules: these are not integers, so they convert.
        for m in [&b"01"[..], b"-0", b"+1", b" 1", b"9223372036854775808"] {
            let mut s = Set::for_member(b"1");
            s.add(b"1", 512);
            s.add(m, 512);
            assert_eq!(
                s.encoding(),
                "hashtable",
                "{:?}",
                String::from_utf8_lossy(m)
            );
            assert!(s.contains(m));
            assert!(!s.contains(b"2"));
        }
    }

    #[test]
    fn clone_keeps_representation() {
        let mut s = Set::new_intset();
        s.add(b"3", 512);
        assert_eq!(s.clone().encoding(), "intset");
        s.add(b"x", 512);
        let c = s.clone();
        assert_eq!(c.encoding(), "hashtable");
        assert_eq!(members(&c), members(&s));
    }
}
