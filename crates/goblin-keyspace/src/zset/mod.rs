//! `ZSet`: the sorted set value type.
//!
//! A sorted set has two representations, chosen as Redis chooses between
//! its "listpack" and "skiplist" encodings, so OBJECT ENCODING reports the
//! same name for the same data:
//!
//! - [`Packed`] (reported as "listpack"): one byte buffer of entries sorted
//!   by (score, member). Used while the set has at most
//!   zset-max-listpack-entries members, none longer than
//!   zset-max-listpack-value bytes. Linear operations, minimal memory.
//! - [`Tree`] (reported as "skiplist"): a slab of nodes indexed twice, by a
//!   treap with subtree sizes (order, rank and range queries in O(log n))
//!   and by a hash table (member -> score in O(1)). See `tree.rs` for why a
//!   treap over a slab rather than a skiplist: it answers the same queries
//!   in the same time at about half Redis's memory per member.
//!
//! Conversions follow Redis exactly: a set starts packed unless its first
//! member is already too long (or the entry limit is 0); it converts to the
//! tree when an insertion would break a limit; it never converts back on
//! its own. Commands that build a new set (ZUNIONSTORE, ZRANGESTORE...)
//! choose the form from the final contents (`ZSet::from_entries`).
//!
//! Every operation that depends on the order of members is written once
//! here over both forms, so options such as ZADD's GT cannot behave
//! differently across a change of representation.

pub mod packed;
pub mod tree;

use std::cmp::Ordering;

use super::bytes::CompactBytes;
pub use packed::Packed;
pub use tree::Tree;

/// The order of a sorted set: by score, then by member bytes (memcmp, a
/// shorter prefix first, as Redis's sdscmp). Scores are never NaN; -0 and
/// +0 compare equal, as with C's `<` and `==`.
#[inline]
pub fn cmp_entries(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    if s1 < s2 {
        Ordering::Less
    } else if s1 > s2 {
        Ordering::Greater
    } else {
        m1.cmp(m2)
    }
}

/// The limits of the packed form (zset-max-listpack-entries and
/// zset-max-listpack-value).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub entries: usize,
    pub value: usize,
}

/// Redis refuses to grow a listpack beyond 1 GB (lpSafeToAdd).
const PACKED_SAFETY_SIZE: usize = 1 << 30;

#[derive(Clone, Debug)]
pub enum ZSet {
    Packed(Packed),
    Tree(Box<Tree>),
}

/// ZADD's input flags (Redis's ZADD_IN_*).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddFlags {
    pub incr: bool,
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
}

/// What `ZSet::add` did (Redis's ZADD_OUT_*).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AddOutcome {
    /// A new member, with this score.
    Added(f64),
    /// The member's score changed to this.
    Updated(f64),
    /// The member already had this score.
    Unchanged(f64),
    /// Nothing done because of NX, XX, GT or LT.
    Skipped,
}

/// The increment produced NaN (inf + -inf): nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NanScore;

/// Which end of the set: the lowest scores or the highest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Min,
    Max,
}

/// A range of elements of a sorted set: a score interval or a lex interval.
/// Both are evaluated the way Redis evaluates them: find the first element
/// satisfying the lower bound, then walk while the upper bound holds.
pub trait Bounds {
    fn gte_min(&self, member: &[u8], score: f64) -> bool;
    fn lte_max(&self, member: &[u8], score: f64) -> bool;
    /// True when no element can be in the range (min above max).
    fn is_empty(&self) -> bool;
}

/// A score interval (Redis's zrangespec).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub minex: bool,
    pub maxex: bool,
}

impl Bounds for ScoreRange {
    #[inline]
    fn gte_min(&self, _: &[u8], v: f64) -> bool {
        if self.minex {
            v > self.min
        } else {
            v >= self.min
        }
    }
    #[inline]
    fn lte_max(&self, _: &[u8], v: f64) -> bool {
        if self.maxex {
            v < self.max
        } else {
            v <= self.max
        }
    }
    fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }
}

/// One end of a lex interval: "-", "+", "[member" or "(member".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LexBound {
    /// "-": below every string.
    Min,
    /// "+": above every string.
    Max,
    Inclusive(Vec<u8>),
    Exclusive(Vec<u8>),
}

impl LexBound {
    /// Redis's sdscmplex between two bounds.
    fn cmp_bound(&self, other: &LexBound) -> Ordering {
        use LexBound::*;
        match (self, other) {
            (Min, Min) | (Max, Max) => Ordering::Equal,
            (Min, _) | (_, Max) => Ordering::Less,
            (Max, _) | (_, Min) => Ordering::Greater,
            (Inclusive(a) | Exclusive(a), Inclusive(b) | Exclusive(b)) => a.cmp(b),
        }
    }

    /// "-" and "+" count as exclusive, as Redis parses them.
    fn is_exclusive(&self) -> bool {
        !matches!(self, LexBound::Inclusive(_))
    }
}

/// A lex interval (Redis's zlexrangespec).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl Bounds for LexRange {
    fn gte_min(&self, m: &[u8], _: f64) -> bool {
        match &self.min {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Inclusive(s) => m >= s.as_slice(),
            LexBound::Exclusive(s) => m > s.as_slice(),
        }
    }
    fn lte_max(&self, m: &[u8], _: f64) -> bool {
        match &self.max {
            LexBound::Max => true,
            LexBound::Min => false,
            LexBound::Inclusive(s) => m <= s.as_slice(),
            LexBound::Exclusive(s) => m < s.as_slice(),
        }
    }
    fn is_empty(&self) -> bool {
        match self.min.cmp_bound(&self.max) {
            Ordering::Greater => true,
            Ordering::Equal => self.min.is_exclusive() || self.max.is_exclusive(),
            Ordering::Less => false,
        }
    }
}

/// An in-order walk over either form.
pub enum Iter<'a> {
    Packed(packed::Iter<'a>, bool),
    Tree(tree::Iter<'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed(it, false) => it.next().map(|e| (e.member, e.score)),
            Iter::Packed(it, true) => it.next_back().map(|e| (e.member, e.score)),
            Iter::Tree(it) => it.next(),
        }
    }
}

impl ZSet {
    /// The form Redis gives a set created by ZADD / ZINCRBY: the tree when
    /// packing is disabled or the first member is already too long.
    pub fn for_first_member(member_len: usize, limits: Limits) -> ZSet {
        if limits.entries == 0 || limits.value < member_len {
            ZSet::Tree(Box::default())
        } else {
            ZSet::Packed(Packed::new())
        }
    }

    /// A set built from distinct members in any order, in the form Redis
    /// would end up with (zsetConvertToListpackIfNeeded): packed when the
    /// count and every member's length are within the limits.
    pub fn from_entries(mut entries: Vec<(CompactBytes, f64)>, limits: Limits) -> ZSet {
        entries.sort_by(|a, b| cmp_entries(a.1, &a.0, b.1, &b.0));
        let max_len = entries.iter().map(|e| e.0.len()).max().unwrap_or(0);
        let total: usize = entries.iter().map(|e| packed::entry_size(e.0.len())).sum();
        if entries.len() <= limits.entries && max_len <= limits.value && total <= PACKED_SAFETY_SIZE
        {
            let mut p = Packed::new();
            for (m, s) in &entries {
                p.push_back(m, *s);
            }
            ZSet::Packed(p)
        } else {
            ZSet::Tree(Box::new(Tree::from_sorted(entries)))
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match self {
            ZSet::Packed(p) => p.len(),
            ZSet::Tree(t) => t.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_packed(&self) -> bool {
        matches!(self, ZSet::Packed(_))
    }

    /// OBJECT ENCODING's name for the current form.
    pub fn encoding(&self) -> &'static str {
        match self {
            ZSet::Packed(_) => "listpack",
            ZSet::Tree(_) => "skiplist",
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            ZSet::Packed(p) => p.heap_size(),
            ZSet::Tree(t) => std::mem::size_of::<Tree>() + t.heap_size(),
        }
    }

    /// Converts to the tree form (also what SORT does to a sorted set).
    pub fn convert_to_tree(&mut self) {
        if let ZSet::Packed(p) = self {
            let entries = p
                .iter()
                .map(|e| (CompactBytes::from_slice(e.member), e.score));
            *self = ZSet::Tree(Box::new(Tree::from_sorted(entries)));
        }
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Packed(p) => p.find(member).map(|e| e.score),
            ZSet::Tree(t) => t.score(member),
        }
    }

    /// Redis's zsetAdd: adds `member` or updates its score according to
    /// `flags`. Options are evaluated on the current score whatever the
    /// form; a new member that would break the packed limits converts the
    /// set first.
    pub fn add(
        &mut self,
        member: &[u8],
        score: f64,
        flags: AddFlags,
        limits: Limits,
    ) -> Result<AddOutcome, NanScore> {
        if score.is_nan() {
            return Err(NanScore);
        }
        match self.score(member) {
            Some(current) => {
                if flags.nx {
                    return Ok(AddOutcome::Skipped);
                }
                let mut score = score;
                if flags.incr {
                    score += current;
                    if score.is_nan() {
                        return Err(NanScore);
                    }
                }
                if (flags.lt && score >= current) || (flags.gt && score <= current) {
                    return Ok(AddOutcome::Skipped);
                }
                if score == current {
                    return Ok(AddOutcome::Unchanged(score));
                }
                self.set_score(member, score);
                Ok(AddOutcome::Updated(score))
            }
            None => {
                if flags.xx {
                    return Ok(AddOutcome::Skipped);
                }
                self.insert_new(member, score, limits);
                Ok(AddOutcome::Added(score))
            }
        }
    }

    /// Inserts a member known to be absent, converting to the tree first
    /// when the packed form would exceed its limits.
    pub fn insert_new(&mut self, member: &[u8], score: f64, limits: Limits) {
        if let ZSet::Packed(p) = self {
            if p.len() + 1 > limits.entries
                || member.len() > limits.value
                || p.bytes() + packed::entry_size(member.len()) > PACKED_SAFETY_SIZE
            {
                self.convert_to_tree();
            }
        }
        match self {
            ZSet::Packed(p) => p.insert(member, score),
            ZSet::Tree(t) => t.insert(member, score),
        }
    }

    /// Moves a present member to a new score.
    fn set_score(&mut self, member: &[u8], score: f64) {
        match self {
            ZSet::Packed(p) => {
                if let Some(e) = p.find(member) {
                    let (start, end) = (e.start, e.end);
                    p.remove_entry(start, end);
                    p.insert(member, score);
                }
            }
            ZSet::Tree(t) => {
                let id = t.find(member);
                if id != tree::NIL {
                    t.set_score(id, score);
                }
            }
        }
    }

    /// Removes a member; true when it was present.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            ZSet::Packed(p) => match p.find(member) {
                Some(e) => {
                    let (start, end) = (e.start, e.end);
                    p.remove_entry(start, end);
                    true
                }
                None => false,
            },
            ZSet::Tree(t) => t.remove(member),
        }
    }

    /// 0-based rank of a member, from the lowest score or (`rev`) the highest.
    pub fn rank(&self, member: &[u8], rev: bool) -> Option<usize> {
        let r = match self {
            ZSet::Packed(p) => p.iter().position(|e| e.member == member)?,
            ZSet::Tree(t) => {
                let id = t.find(member);
                if id == tree::NIL {
                    return None;
                }
                t.rank_of(id)
            }
        };
        Some(if rev { self.len() - 1 - r } else { r })
    }

    /// Every element in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0, false)
    }

    /// Walks from the element of ascending rank `rank`, upwards or (`rev`)
    /// downwards. An out-of-range rank yields nothing.
    pub fn iter_from(&self, rank: usize, rev: bool) -> Iter<'_> {
        match self {
            ZSet::Packed(p) => {
                if rank >= p.len() {
                    return Iter::Packed(p.iter_from(p.bytes(), false), false);
                }
                Iter::Packed(p.iter_from(p.offset_of_rank(rank), rev), rev)
            }
            ZSet::Tree(t) => Iter::Tree(t.iter_from(rank, rev)),
        }
    }

    /// The element at ascending rank `rank` (< len).
    pub fn at_rank(&self, rank: usize) -> (&[u8], f64) {
        match self {
            ZSet::Packed(p) => {
                let e = p.entry_at(p.offset_of_rank(rank));
                (e.member, e.score)
            }
            ZSet::Tree(t) => {
                let id = t.select(rank);
                (t.member(id), t.score_of(id))
            }
        }
    }

    fn first_entry(&self) -> Option<(&[u8], f64)> {
        (!self.is_empty()).then(|| self.at_rank(0))
    }

    /// The element of the highest rank.
    pub fn last_entry(&self) -> Option<(&[u8], f64)> {
        (!self.is_empty()).then(|| self.at_rank(self.len() - 1))
    }

    /// Redis's zslIsInRange / zzlIsInRange: false when no element can be
    /// in the range, judged from the bounds and the two ends of the set.
    fn may_intersect(&self, r: &impl Bounds) -> bool {
        if r.is_empty() {
            return false;
        }
        match (self.first_entry(), self.last_entry()) {
            (Some((fm, fs)), Some((lm, ls))) => r.gte_min(lm, ls) && r.lte_max(fm, fs),
            _ => false,
        }
    }

    /// Rank of the first element in the range (Redis's zslFirstInRange).
    pub fn first_in_range(&self, r: &impl Bounds) -> Option<usize> {
        if !self.may_intersect(r) {
            return None;
        }
        let rank = match self {
            // A listpack is scanned from the head, as Redis does.
            ZSet::Packed(p) => p.iter().position(|e| r.gte_min(e.member, e.score))?,
            ZSet::Tree(t) => t.count_prefix(|m, s| !r.gte_min(m, s)),
        };
        if rank >= self.len() {
            return None;
        }
        let (m, s) = self.at_rank(rank);
        r.lte_max(m, s).then_some(rank)
    }

    /// Rank of the last element in the range (Redis's zslLastInRange).
    pub fn last_in_range(&self, r: &impl Bounds) -> Option<usize> {
        if !self.may_intersect(r) {
            return None;
        }
        let rank = match self {
            // A listpack is scanned from the tail, as Redis does.
            ZSet::Packed(p) => {
                let from_end = p.iter().rev().position(|e| r.lte_max(e.member, e.score))?;
                p.len() - 1 - from_end
            }
            ZSet::Tree(t) => t.count_prefix(|m, s| r.lte_max(m, s)).checked_sub(1)?,
        };
        let (m, s) = self.at_rank(rank);
        r.gte_min(m, s).then_some(rank)
    }

    /// The elements of a range, in order or (`rev`) reverse order, after
    /// skipping `offset` of them, at most `limit` (negative: no limit).
    /// A negative offset selects nothing, as in Redis.
    pub fn range<'a, B: Bounds>(
        &'a self,
        r: &'a B,
        rev: bool,
        offset: i64,
        limit: i64,
    ) -> impl Iterator<Item = (&'a [u8], f64)> + 'a {
        let start = if offset < 0 || limit == 0 {
            None
        } else if rev {
            self.last_in_range(r)
                .and_then(|l| l.checked_sub(offset as usize))
        } else {
            self.first_in_range(r)
                .map(|f| f.saturating_add(offset as usize))
                .filter(|&f| f < self.len())
        };
        let take = if limit < 0 {
            usize::MAX
        } else {
            limit as usize
        };
        let it = match start {
            Some(s) => self.iter_from(s, rev),
            None => self.iter_from(usize::MAX, false),
        };
        it.take_while(move |(m, s)| {
            if rev {
                r.gte_min(m, *s)
            } else {
                r.lte_max(m, *s)
            }
        })
        .take(take)
    }

    /// ZCOUNT / ZLEXCOUNT: the number of elements in the range.
    pub fn count_in_range(&self, r: &impl Bounds) -> usize {
        let Some(first) = self.first_in_range(r) else {
            return 0;
        };
        match self {
            ZSet::Packed(_) => self
                .iter_from(first, false)
                .take_while(|(m, s)| r.lte_max(m, *s))
                .count(),
            ZSet::Tree(_) => match self.last_in_range(r) {
                Some(last) => (last + 1).saturating_sub(first),
                None => self.len() - first,
            },
        }
    }

    /// Removes the elements of ascending ranks `start..=end` (valid ranks).
    pub fn remove_rank_range(&mut self, start: usize, end: usize) -> usize {
        if start > end || start >= self.len() {
            return 0;
        }
        let end = end.min(self.len() - 1);
        match self {
            ZSet::Packed(p) => {
                let from = p.offset_of_rank(start);
                let to = p.entry_at(p.offset_of_rank(end)).end;
                p.remove_span(from, to, end - start + 1);
                end - start + 1
            }
            ZSet::Tree(t) => t.remove_rank_range(start, end + 1),
        }
    }

    /// ZREMRANGEBYSCORE / ZREMRANGEBYLEX: removes the run of elements that
    /// starts at the first one satisfying the lower bound and continues
    /// while the upper bound holds.
    pub fn remove_range(&mut self, r: &impl Bounds) -> usize {
        let first = match self {
            ZSet::Packed(p) => {
                return p.remove_run(|m, s| r.gte_min(m, s), |m, s| r.lte_max(m, s));
            }
            ZSet::Tree(t) => t.count_prefix(|m, s| !r.gte_min(m, s)),
        };
        let n = self
            .iter_from(first, false)
            .take_while(|(m, s)| r.lte_max(m, *s))
            .count();
        if n == 0 {
            return 0;
        }
        self.remove_rank_range(first, first + n - 1)
    }

    /// Removes and returns the element at one end.
    pub fn pop(&mut self, end: End) -> Option<(CompactBytes, f64)> {
        match self {
            ZSet::Packed(p) => {
                let e = match end {
                    End::Min => p.first()?,
                    End::Max => p.last()?,
                };
                let out = (CompactBytes::from_slice(e.member), e.score);
                let (start, stop) = (e.start, e.end);
                p.remove_entry(start, stop);
                Some(out)
            }
            ZSet::Tree(t) => {
                if t.is_empty() {
                    return None;
                }
                let rank = match end {
                    End::Min => 0,
                    End::Max => t.len() - 1,
                };
                Some(t.remove_id(t.select(rank)))
            }
        }
    }

    /// A random element, uniformly (the set must not be empty).
    pub fn random(&self, rng: &mut fastrand::Rng) -> (&[u8], f64) {
        self.at_rank(rng.usize(..self.len()))
    }

    /// One ZSCAN step. The packed form is returned whole with cursor 0, as
    /// Redis does for a listpack; the tree scans its hash buckets, visiting
    /// at most 10 buckets per element asked for.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(&'a [u8], f64)) -> u64 {
        match self {
            ZSet::Packed(p) => {
                for e in p.iter() {
                    f(e.member, e.score);
                }
                0
            }
            ZSet::Tree(t) => {
                let mut cursor = cursor;
                let mut found = 0;
                let mut budget = count.saturating_mul(20);
                loop {
                    cursor = t.scan(cursor, |m, s| {
                        found += 1;
                        f(m, s)
                    });
                    if cursor == 0 || budget == 0 || found >= count {
                        break;
                    }
                    budget -= 1;
                }
                cursor
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limits = Limits {
        entries: 4,
        value: 8,
    };

    fn flags(s: &str) -> AddFlags {
        AddFlags {
            incr: s.contains("incr"),
            nx: s.contains("nx"),
            xx: s.contains("xx"),
            gt: s.contains("gt"),
            lt: s.contains("lt"),
        }
    }

    fn both_forms(entries: &[(&str, f64)]) -> [ZSet; 2] {
        let e: Vec<(CompactBytes, f64)> = entries
            .iter()
            .map(|(m, s)| (CompactBytes::from(*m), *s))
            .collect();
        let packed = ZSet::from_entries(
            e.clone(),
            Limits {
                entries: 1000,
                value: 1000,
            },
        );
        let tree = ZSet::from_entries(
            e,
            Limits {
                entries: 0,
                value: 0,
            },
        );
        assert!(packed.is_packed());
        assert!(!tree.is_packed());
        [packed, tree]
    }

    fn contents(z: &ZSet) -> Vec<(String, f64)> {
        z.iter()
            .map(|(m, s)| (String::from_utf8_lossy(m).into_owned(), s))
            .collect()
    }

    #[test]
    fn every_zadd_option_behaves_the_same_in_both_forms() {
        let cases: &[(&str, f64, AddOutcome, f64)] = &[
            ("", 5.0, AddOutcome::Updated(5.0), 5.0),
            ("nx", 5.0, AddOutcome::Skipped, 10.0),
            ("xx", 5.0, AddOutcome::Updated(5.0), 5.0),
            ("gt", 5.0, AddOutcome::Skipped, 10.0),
            ("gt", 15.0, AddOutcome::Updated(15.0), 15.0),
            ("lt", 15.0, AddOutcome::Skipped, 10.0),
            ("lt", 5.0, AddOutcome::Updated(5.0), 5.0),
            ("xx gt", 15.0, AddOutcome::Updated(15.0), 15.0),
            ("incr", 2.5, AddOutcome::Updated(12.5), 12.5),
            ("incr gt", -1.0, AddOutcome::Skipped, 10.0),
            ("incr lt", -1.0, AddOutcome::Updated(9.0), 9.0),
            ("", 10.0, AddOutcome::Unchanged(10.0), 10.0),
        ];
        for (opts, score, outcome, after) in cases {
            for mut z in both_forms(&[("a", 1.0), ("x", 10.0)]) {
                let form = z.encoding();
                let got = z.add(b"x", *score, flags(opts), SMALL).unwrap();
                assert_eq!(got, *outcome, "{opts} {score} on {form}");
                assert_eq!(z.score(b"x"), Some(*after), "{opts} {score} on {form}");
                assert_eq!(z.len(), 2);
            }
        }
        // New members: XX skips, GT / LT / NX add.
        for opts in ["xx", "xx gt", "gt", "lt", "nx", "incr"] {
            for mut z in both_forms(&[("a", 1.0)]) {
                let got = z.add(b"new", 3.0, flags(opts), SMALL).unwrap();
                if opts.contains("xx") {
                    assert_eq!(got, AddOutcome::Skipped);
                    assert_eq!(z.len(), 1);
                } else {
                    assert_eq!(got, AddOutcome::Added(3.0), "{opts}");
                    assert_eq!(z.score(b"new"), Some(3.0));
                }
            }
        }
    }

    #[test]
    fn gt_survives_the_conversion_it_triggers() {
        // The insertion that converts the set runs the same option logic.
        let mut z = ZSet::for_first_member(1, SMALL);
        for (i, m) in ["a", "b", "c", "d"].iter().enumerate() {
            z.add(m.as_bytes(), i as f64, flags("gt"), SMALL).unwrap();
        }
        assert!(z.is_packed());
        assert_eq!(
            z.add(b"e", 9.0, flags("gt ch"), SMALL).unwrap(),
            AddOutcome::Added(9.0)
        );
        assert!(!z.is_packed(), "fifth member exceeds entries=4");
        assert_eq!(
            z.add(b"a", -5.0, flags("gt"), SMALL).unwrap(),
            AddOutcome::Skipped
        );
        assert_eq!(
            z.add(b"a", 50.0, flags("gt"), SMALL).unwrap(),
            AddOutcome::Updated(50.0)
        );
        assert_eq!(z.rank(b"a", false), Some(4));
    }

    #[test]
    fn nan_from_increment_changes_nothing() {
        for mut z in both_forms(&[("a", f64::INFINITY)]) {
            assert_eq!(
                z.add(b"a", f64::NEG_INFINITY, flags("incr"), SMALL),
                Err(NanScore)
            );
            assert_eq!(z.score(b"a"), Some(f64::INFINITY));
        }
    }

    #[test]
    fn conversion_thresholds() {
        assert!(ZSet::for_first_member(8, SMALL).is_packed());
        assert!(!ZSet::for_first_member(9, SMALL).is_packed());
        assert!(!ZSet::for_first_member(
            1,
            Limits {
                entries: 0,
                value: 64
            }
        )
        .is_packed());
        let mut z = ZSet::for_first_member(1, SMALL);
        z.insert_new(b"a", 1.0, SMALL);
        z.insert_new(b"123456789", 2.0, SMALL);
        assert_eq!(z.encoding(), "skiplist", "member longer than value limit");
        // Removing members never converts back.
        z.remove(b"123456789");
        assert_eq!(z.encoding(), "skiplist");
        // A built set picks its form from its contents.
        let e = |n: usize| -> Vec<(CompactBytes, f64)> {
            (0..n)
                .map(|i| (CompactBytes::from_i64(i as i64), i as f64))
                .collect()
        };
        assert!(ZSet::from_entries(e(4), SMALL).is_packed());
        assert!(!ZSet::from_entries(e(5), SMALL).is_packed());
    }

    #[test]
    fn ranks_and_rank_ranges_in_both_forms() {
        for z in both_forms(&[("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)]) {
            assert_eq!(z.rank(b"c", false), Some(2));
            assert_eq!(z.rank(b"c", true), Some(1));
            assert_eq!(z.rank(b"zz", false), None);
            let rev: Vec<&[u8]> = z.iter_from(2, true).map(|(m, _)| m).collect();
            assert_eq!(rev, vec![&b"c"[..], b"b", b"a"]);
            assert_eq!(z.iter_from(4, false).count(), 0);
        }
        for mut z in both_forms(&[("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)]) {
            assert_eq!(z.remove_rank_range(1, 2), 2);
            assert_eq!(contents(&z), vec![("a".into(), 1.0), ("d".into(), 4.0)]);
            assert_eq!(z.pop(End::Max), Some((CompactBytes::from("d"), 4.0)));
            assert_eq!(z.pop(End::Min), Some((CompactBytes::from("a"), 1.0)));
            assert_eq!(z.pop(End::Min), None);
        }
    }

    #[test]
    fn score_ranges_with_offsets_in_both_forms() {
        let data = [
            ("a", f64::NEG_INFINITY),
            ("b", 1.0),
            ("c", 2.0),
            ("d", 3.0),
            ("e", 4.0),
            ("f", 5.0),
            ("g", f64::INFINITY),
        ];
        let r = |min, minex, max, maxex| ScoreRange {
            min,
            max,
            minex,
            maxex,
        };
        for z in both_forms(&data) {
            let names = |range: &ScoreRange, rev, off, lim| -> String {
                z.range(range, rev, off, lim)
                    .map(|(m, _)| String::from_utf8_lossy(m).into_owned())
                    .collect()
            };
            assert_eq!(
                names(&r(f64::NEG_INFINITY, false, 2.0, false), false, 0, -1),
                "abc"
            );
            assert_eq!(
                names(&r(f64::NEG_INFINITY, true, 2.0, true), false, 0, -1),
                "b"
            );
            assert_eq!(names(&r(0.0, false, 10.0, false), false, 2, 3), "def");
            assert_eq!(names(&r(0.0, false, 10.0, false), true, 2, 3), "dcb");
            assert_eq!(names(&r(0.0, false, 10.0, false), false, 20, 10), "");
            assert_eq!(names(&r(0.0, false, 10.0, false), false, -1, 10), "");
            assert_eq!(names(&r(0.0, false, 10.0, false), false, 0, 0), "");
            assert_eq!(names(&r(2.0, false, 2.0, true), false, 0, -1), "");
            assert_eq!(names(&r(4.0, false, 2.0, false), false, 0, -1), "");
            assert_eq!(z.count_in_range(&r(0.0, false, 3.0, false)), 3);
            assert_eq!(z.count_in_range(&r(0.0, true, 3.0, true)), 2);
            assert_eq!(z.count_in_range(&r(2.4, false, 2.6, false)), 0);
        }
    }

    #[test]
    fn lex_ranges_in_both_forms() {
        let data: Vec<(&str, f64)> = [
            "alpha", "bar", "cool", "down", "elephant", "foo", "great", "hill", "omega",
        ]
        .iter()
        .map(|m| (*m, 0.0))
        .collect();
        let inc = |s: &str| LexBound::Inclusive(s.as_bytes().to_vec());
        let exc = |s: &str| LexBound::Exclusive(s.as_bytes().to_vec());
        for mut z in both_forms(&data) {
            let lr = |min, max| LexRange { min, max };
            let names = |z: &ZSet, r: &LexRange, rev| -> Vec<String> {
                z.range(r, rev, 0, -1)
                    .map(|(m, _)| String::from_utf8_lossy(m).into_owned())
                    .collect()
            };
            assert_eq!(
                names(&z, &lr(LexBound::Min, inc("cool")), false),
                ["alpha", "bar", "cool"]
            );
            assert_eq!(names(&z, &lr(exc("bar"), exc("down")), false), ["cool"]);
            assert_eq!(
                names(&z, &lr(exc("great"), LexBound::Max), true),
                ["omega", "hill"]
            );
            assert_eq!(z.count_in_range(&lr(LexBound::Min, LexBound::Max)), 9);
            assert_eq!(z.count_in_range(&lr(LexBound::Max, LexBound::Min)), 0);
            assert_eq!(z.count_in_range(&lr(exc("bar"), inc("foo"))), 4);
            assert_eq!(z.count_in_range(&lr(exc("maxstring"), LexBound::Max)), 1);
            assert_eq!(z.remove_range(&lr(inc("bar"), exc("great"))), 5);
            assert_eq!(
                names(&z, &lr(LexBound::Min, LexBound::Max), false),
                ["alpha", "great", "hill", "omega"]
            );
        }
    }

    #[test]
    fn negative_zero_equals_zero_and_only_the_tree_keeps_its_sign() {
        // A listpack stores an integral score as an integer: -0 reads back
        // as 0. Redis's skiplist keeps the double, sign included.
        let [mut packed, mut tree] = both_forms(&[("a", -0.0)]);
        assert!(packed.score(b"a").unwrap().is_sign_positive());
        assert!(tree.score(b"a").unwrap().is_sign_negative());
        for z in [&mut packed, &mut tree] {
            assert_eq!(
                z.add(b"a", 0.0, AddFlags::default(), SMALL).unwrap(),
                AddOutcome::Unchanged(0.0)
            );
        }
        assert!(tree.score(b"a").unwrap().is_sign_negative());
    }
}
