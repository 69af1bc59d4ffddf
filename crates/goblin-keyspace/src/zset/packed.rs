//! `Packed`: the compact form of a small sorted set (Redis's "listpack"
//! encoding).
//!
//! All members live in one byte buffer, sorted by (score, member), each
//! entry laid out as
//!
//! ```text
//! [len][member bytes][score: f64, 8 bytes LE][len, mirrored]
//! ```
//!
//! where `len` is one byte for members shorter than 255 bytes and
//! `0xFF` + a u32 (mirrored: u32 + `0xFF`) otherwise. The mirrored length
//! at the end lets the buffer be walked backwards, as a listpack's
//! back-length does, so ZREVRANGE and ZPOPMAX start at the tail in O(1).
//!
//! Scores read back as Redis reads them back from a listpack: -0 becomes 0
//! (see `encode`), and ZSCAN prints them as the listpack stores them
//! (`score_text`).
//!
//! Every operation is a linear walk: the form is only used while the set
//! is small (zset-max-listpack-entries / zset-max-listpack-value), where a
//! walk over a few kilobytes beats any pointer structure, and it costs
//! 10 bytes per member beyond the member itself.

use std::cmp::Ordering;

use super::cmp_entries;

const LONG_LEN: u8 = 0xFF;

#[derive(Clone, Debug, Default)]
pub struct Packed {
    buf: Vec<u8>,
    len: u32,
}

/// One decoded entry: member, score, and the byte offsets it spans.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    pub member: &'a [u8],
    pub score: f64,
    pub start: usize,
    pub end: usize,
}

#[inline]
fn len_field_size(mlen: usize) -> usize {
    if mlen < LONG_LEN as usize {
        1
    } else {
        5
    }
}

/// Bytes one entry with a member of `mlen` bytes occupies.
#[inline]
pub fn entry_size(mlen: usize) -> usize {
    2 * len_field_size(mlen) + mlen + 8
}

fn encode(out: &mut Vec<u8>, member: &[u8], score: f64) {
    // A listpack stores an integral score as an integer, so -0 comes back
    // as 0 (only the tree form keeps the sign, as Redis's skiplist does).
    let score = if score == 0.0 { 0.0 } else { score };
    let mlen = member.len();
    if mlen < LONG_LEN as usize {
        out.push(mlen as u8);
    } else {
        out.push(LONG_LEN);
        out.extend_from_slice(&(mlen as u32).to_le_bytes());
    }
    out.extend_from_slice(member);
    out.extend_from_slice(&score.to_le_bytes());
    if mlen < LONG_LEN as usize {
        out.push(mlen as u8);
    } else {
        out.extend_from_slice(&(mlen as u32).to_le_bytes());
        out.push(LONG_LEN);
    }
}

/// The text a listpack holds for a score (Redis's zzlInsertAt): integral
/// values within +-2^62 as integers, anything else as "%.17g".
pub fn score_text(score: f64, out: &mut Vec<u8>) {
    const LIMIT: f64 = (i64::MAX / 2) as f64;
    if (-LIMIT..=LIMIT).contains(&score) && (score as i64) as f64 == score {
        let mut b = itoa::Buffer::new();
        out.extend_from_slice(b.format(score as i64).as_bytes());
    } else {
        goblin_num::format_g17(score, out);
    }
}

impl Packed {
    pub fn new() -> Packed {
        Packed::default()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size of the buffer in bytes (the listpack's total size).
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    pub fn heap_size(&self) -> usize {
        self.buf.capacity()
    }

    /// The entry starting at byte `start`.
    #[inline]
    pub fn entry_at(&self, start: usize) -> Entry<'_> {
        let b = &self.buf;
        let (mlen, hdr) = if b[start] != LONG_LEN {
            (b[start] as usize, 1)
        } else {
            let mut l = [0u8; 4];
            l.copy_from_slice(&b[start + 1..start + 5]);
            (u32::from_le_bytes(l) as usize, 5)
        };
        let m = start + hdr;
        let s = m + mlen;
        let mut sc = [0u8; 8];
        sc.copy_from_slice(&b[s..s + 8]);
        Entry {
            member: &b[m..s],
            score: f64::from_le_bytes(sc),
            start,
            end: s + 8 + hdr,
        }
    }

    /// The entry that ends at byte `end`.
    #[inline]
    pub fn entry_before(&self, end: usize) -> Entry<'_> {
        let b = &self.buf;
        let last = b[end - 1];
        let (mlen, hdr) = if last != LONG_LEN {
            (last as usize, 1)
        } else {
            let mut l = [0u8; 4];
            l.copy_from_slice(&b[end - 5..end - 1]);
            (u32::from_le_bytes(l) as usize, 5)
        };
        self.entry_at(end - hdr - 8 - mlen - hdr)
    }

    pub fn first(&self) -> Option<Entry<'_>> {
        (!self.buf.is_empty()).then(|| self.entry_at(0))
    }

    pub fn last(&self) -> Option<Entry<'_>> {
        (!self.buf.is_empty()).then(|| self.entry_before(self.buf.len()))
    }

    /// Entries in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            packed: self,
            front: 0,
            back: self.buf.len(),
        }
    }

    /// Entries from the one starting at byte `start`, in the given direction
    /// (backwards, `start` is included and the walk goes to the head).
    pub fn iter_from(&self, start: usize, rev: bool) -> Iter<'_> {
        if rev {
            let end = if start >= self.buf.len() {
                start
            } else {
                self.entry_at(start).end
            };
            Iter {
                packed: self,
                front: 0,
                back: end,
            }
        } else {
            Iter {
                packed: self,
                front: start,
                back: self.buf.len(),
            }
        }
    }

    /// The start offset of every entry (random access for ZRANDMEMBER).
    pub fn offsets(&self) -> Vec<usize> {
        self.iter().map(|e| e.start).collect()
    }

    /// The byte offset of the entry at `rank` (0-based, < len), walking from
    /// whichever end is closer.
    pub fn offset_of_rank(&self, rank: usize) -> usize {
        debug_assert!(rank < self.len());
        if rank <= self.len() / 2 {
            self.iter().nth(rank).map_or(self.buf.len(), |e| e.start)
        } else {
            self.iter()
                .rev()
                .nth(self.len() - 1 - rank)
                .map_or(self.buf.len(), |e| e.start)
        }
    }

    /// The member's entry, if present.
    pub fn find(&self, member: &[u8]) -> Option<Entry<'_>> {
        self.iter().find(|e| e.member == member)
    }

    /// Inserts a member known to be absent at its sorted position (Redis's
    /// zzlInsert: before the first entry with a greater score, or with an
    /// equal score and a greater member).
    pub fn insert(&mut self, member: &[u8], score: f64) {
        let at = self
            .iter()
            .find(|e| cmp_entries(e.score, e.member, score, member) == Ordering::Greater)
            .map_or(self.buf.len(), |e| e.start);
        // Encoded at the end, then rotated into place: no temporary buffer.
        // The buffer grows to the exact size, as Redis reallocates a
        // listpack (see `Listpack::push`).
        let old_end = self.buf.len();
        self.buf.reserve_exact(entry_size(member.len()));
        encode(&mut self.buf, member, score);
        let size = self.buf.len() - old_end;
        self.buf[at..].rotate_right(size);
        self.len += 1;
    }

    /// Appends a member that sorts after every present one (building from
    /// sorted input).
    pub fn push_back(&mut self, member: &[u8], score: f64) {
        self.buf.reserve_exact(entry_size(member.len()));
        encode(&mut self.buf, member, score);
        self.len += 1;
    }

    /// Removes the run of entries that starts at the first one `from`
    /// accepts and goes on while `to` accepts them, in one walk; returns
    /// how many were removed.
    pub fn remove_run(
        &mut self,
        from: impl Fn(&[u8], f64) -> bool,
        to: impl Fn(&[u8], f64) -> bool,
    ) -> usize {
        let mut run: Option<(usize, usize)> = None;
        let mut count = 0;
        for e in self.iter() {
            if run.is_none() && !from(e.member, e.score) {
                continue;
            }
            if !to(e.member, e.score) {
                break;
            }
            run = Some((run.map_or(e.start, |(start, _)| start), e.end));
            count += 1;
        }
        if let Some((start, end)) = run {
            self.remove_span(start, end, count);
        }
        count
    }

    /// Removes the entry spanning `start..end`.
    pub fn remove_entry(&mut self, start: usize, end: usize) {
        self.remove_span(start, end, 1);
    }

    /// Removes `count` consecutive entries spanning `start..end`.
    pub fn remove_span(&mut self, start: usize, end: usize, count: usize) {
        self.buf.drain(start..end);
        self.len -= count as u32;
        // Give memory back after large removals, as a listpack is
        // reallocated to its exact size.
        if self.buf.capacity() > 64 && self.buf.len() < self.buf.capacity() / 2 {
            self.buf.shrink_to_fit();
        }
    }
}

/// A double-ended walk over the entries between two byte offsets.
pub struct Iter<'a> {
    packed: &'a Packed,
    front: usize,
    back: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Entry<'a>;

    #[inline]
    fn next(&mut self) -> Option<Entry<'a>> {
        if self.front >= self.back {
            return None;
        }
        let e = self.packed.entry_at(self.front);
        self.front = e.end;
        Some(e)
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        let e = self.packed.entry_before(self.back);
        self.back = e.start;
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_insert_find_and_both_directions() {
        let mut p = Packed::new();
        let long = vec![b'x'; 300];
        p.insert(b"b", 2.0);
        p.insert(b"a", 2.0);
        p.insert(&long, 1.0);
        p.insert(b"c", -1.5);
        let fwd: Vec<(Vec<u8>, f64)> = p.iter().map(|e| (e.member.to_vec(), e.score)).collect();
        assert_eq!(
            fwd,
            vec![
                (b"c".to_vec(), -1.5),
                (long.clone(), 1.0),
                (b"a".to_vec(), 2.0),
                (b"b".to_vec(), 2.0)
            ]
        );
        let rev: Vec<Vec<u8>> = p.iter().rev().map(|e| e.member.to_vec()).collect();
        assert_eq!(
            rev,
            vec![b"b".to_vec(), b"a".to_vec(), long.clone(), b"c".to_vec()]
        );
        assert_eq!(p.find(&long).unwrap().score, 1.0);
        assert!(p.find(b"zz").is_none());
        assert_eq!(p.entry_at(p.offset_of_rank(3)).member, b"b");
        assert_eq!(p.entry_at(p.offset_of_rank(1)).member, &long[..]);
        let e = p.find(&long).unwrap();
        let (s, end) = (e.start, e.end);
        p.remove_entry(s, end);
        assert_eq!(p.len(), 3);
        assert_eq!(p.last().unwrap().member, b"b");
        assert_eq!(p.first().unwrap().member, b"c");
    }

    #[test]
    fn iter_from_offset_in_reverse_includes_the_start() {
        let mut p = Packed::new();
        for (i, m) in [b"a", b"b", b"c", b"d"].iter().enumerate() {
            p.push_back(*m, i as f64);
        }
        let off = p.offset_of_rank(2);
        let got: Vec<&[u8]> = p.iter_from(off, true).rev().map(|e| e.member).collect();
        assert_eq!(got, vec![&b"c"[..], b"b", b"a"]);
        let got: Vec<&[u8]> = p.iter_from(off, false).map(|e| e.member).collect();
        assert_eq!(got, vec![&b"c"[..], b"d"]);
    }
}
