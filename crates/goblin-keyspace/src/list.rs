//! `List`: the list value type, a chain of packed nodes (Redis's quicklist).
//!
//! A list is a deque of nodes; each node packs a run of elements into one
//! byte buffer, every element framed by its length before and after it
//! (a varint forward, the same varint mirrored backward), so a node can be
//! walked in both directions without an index, as Redis's listpack can.
//!
//! Why this shape:
//! - **O(1) at both ends.** Pushing and popping touch only the first or last
//!   node. A node keeps a gap in front of its entries, so popping from the
//!   head advances an offset and pushing at the head usually writes into
//!   the gap: neither moves the rest of the node.
//! - **Lean when large.** An element costs its bytes plus two length bytes
//!   (up to 127 bytes long), against 24 bytes or more for a pointer-per-element
//!   deque; a million small elements take a few megabytes, not dozens.
//! - **Compact when small.** A short list is one node: one allocation.
//! - **Bounded nodes.** `list-max-listpack-size` bounds a node as Redis
//!   bounds a quicklist node (entries, or bytes when negative), so inserting
//!   or deleting inside a node moves at most a few kilobytes. An element
//!   bigger than the bound lives alone in its node.
//!
//! Index access walks node counts from the nearer end, then entries inside
//! one node, like Redis. Redis 7.0 reports every list as `quicklist`
//! (OBJECT ENCODING), whatever its size; `encoding()` in object.rs does too.
//! Compression of inner nodes (`list-compress-depth`) is not done: the
//! parameter is accepted and has no effect.

use std::collections::VecDeque;

/// Redis's per-node bound when `list-max-listpack-size` is positive (its
/// SIZE_SAFETY_LIMIT): a count-bounded node still stays under 8 KiB.
const SIZE_SAFETY_LIMIT: usize = 8192;

/// The node bound from `list-max-listpack-size` (Redis's quicklist `fill`):
/// positive = at most that many entries per node (and at most 8 KiB);
/// -1..-5 = at most 4, 8, 16, 32 or 64 KiB per node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fill(i32);

impl Fill {
    /// Clamped as Redis's quicklistSetFill clamps it.
    pub fn new(v: i64) -> Fill {
        Fill(v.clamp(-5, (1 << 15) - 1) as i32)
    }

    /// The byte bound of a node.
    fn byte_limit(self) -> usize {
        if self.0 < 0 {
            4096 << (-self.0 - 1)
        } else {
            SIZE_SAFETY_LIMIT
        }
    }

    /// Whether a node of `size` bytes and `count` entries may take one more
    /// entry of `add` encoded bytes (Redis's _quicklistNodeAllowInsert).
    fn allows(self, size: usize, count: u32, add: usize) -> bool {
        let new_size = size + add;
        if new_size > self.byte_limit() {
            return false;
        }
        self.0 < 0 || (count as i64) < self.0 as i64
    }

    /// Whether a node within these bounds (a single entry always fits).
    fn fits(self, size: usize, count: u32) -> bool {
        count <= 1 || (size <= self.byte_limit() && (self.0 < 0 || count as i64 <= self.0 as i64))
    }
}

impl Default for Fill {
    fn default() -> Fill {
        Fill(-2)
    }
}

// ---------------------------------------------------------------------------
// Entry framing: [varint len][bytes][varint len, mirrored].

#[inline]
fn varint_len(n: usize) -> usize {
    match n {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        _ => (usize::BITS - n.leading_zeros()).div_ceil(7) as usize,
    }
}

#[inline]
fn encoded_len(n: usize) -> usize {
    n + 2 * varint_len(n)
}

/// Writes the framed entry into `out`, which is exactly `encoded_len` long.
fn write_entry(out: &mut [u8], v: &[u8]) {
    let h = varint_len(v.len());
    let mut n = v.len();
    for i in 0..h {
        let more = if i + 1 < h { 0x80 } else { 0 };
        let b = (n & 0x7f) as u8 | more;
        out[i] = b;
        // The mirror: read backward from the end it gives the same bytes.
        out[out.len() - 1 - i] = b;
        n >>= 7;
    }
    out[h..h + v.len()].copy_from_slice(v);
}

/// The length and header size of the entry starting at `off`.
#[inline]
fn read_forward(buf: &[u8], off: usize) -> (usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    let mut i = off;
    loop {
        let b = buf[i];
        n |= ((b & 0x7f) as usize) << shift;
        i += 1;
        if b & 0x80 == 0 {
            return (n, i - off);
        }
        shift += 7;
    }
}

/// The length and trailer size of the entry ending at `end` (exclusive).
#[inline]
fn read_backward(buf: &[u8], end: usize) -> (usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    let mut i = end;
    loop {
        i -= 1;
        let b = buf[i];
        n |= ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            return (n, end - i);
        }
        shift += 7;
    }
}

// ---------------------------------------------------------------------------
// Nodes.

#[derive(Clone, Debug, Default)]
struct Node {
    /// Entries live in `buf[head..]`; `buf[..head]` is free room for pushes
    /// at the front.
    buf: Vec<u8>,
    head: usize,
    count: u32,
}

impl Node {
    fn with(v: &[u8]) -> Node {
        let mut n = Node::default();
        n.push_back(v, usize::MAX);
        n
    }

    #[inline]
    fn size(&self) -> usize {
        self.buf.len() - self.head
    }

    /// The entry starting at `off`: (data range start, data len, end offset).
    #[inline]
    fn entry_at(&self, off: usize) -> (usize, usize, usize) {
        let (n, h) = read_forward(&self.buf, off);
        (off + h, n, off + h + n + h)
    }

    /// The entry ending at `end`: (start offset, data start, data len).
    #[inline]
    fn entry_before(&self, end: usize) -> (usize, usize, usize) {
        let (n, h) = read_backward(&self.buf, end);
        let data = end - h - n;
        (data - h, data, n)
    }

    #[inline]
    fn data(&self, start: usize, len: usize) -> &[u8] {
        &self.buf[start..start + len]
    }

    /// Grows the buffer for `add` more bytes at the end, by a quarter at a
    /// time up to `limit` (so a full node wastes little room).
    fn reserve_back(&mut self, add: usize, limit: usize) {
        if self.buf.capacity() - self.buf.len() >= add {
            return;
        }
        let need = self.buf.len() + add;
        let mut target = (self.buf.capacity() + self.buf.capacity() / 4)
            .max(need)
            .max(16);
        if need <= limit {
            target = target.min(limit.max(need));
        } else {
            target = need;
        }
        self.buf.reserve_exact(target - self.buf.len());
    }

    fn push_back(&mut self, v: &[u8], limit: usize) {
        let add = encoded_len(v.len());
        self.reserve_back(add, limit);
        let old = self.buf.len();
        self.buf.resize(old + add, 0);
        write_entry(&mut self.buf[old..], v);
        self.count += 1;
    }

    fn push_front(&mut self, v: &[u8]) {
        let add = encoded_len(v.len());
        if self.head < add {
            // Rebuild with room in front: the new entry plus a quarter of
            // the node, so a run of front pushes moves the node rarely.
            let size = self.size();
            let gap = add + size / 4;
            let mut buf = Vec::with_capacity(gap + size);
            buf.resize(gap, 0);
            buf.extend_from_slice(&self.buf[self.head..]);
            self.buf = buf;
            self.head = gap;
        }
        self.head -= add;
        let head = self.head;
        write_entry(&mut self.buf[head..head + add], v);
        self.count += 1;
    }

    /// Removes the bytes `start..end` holding `n` entries.
    fn remove_bytes(&mut self, start: usize, end: usize, n: u32) {
        self.count -= n;
        if start == self.head {
            self.head = end;
            if self.head == self.buf.len() {
                self.buf.clear();
                self.head = 0;
            } else if self.head > self.size() && self.head > 64 {
                // More free room in front than data: give it back.
                self.buf.drain(..self.head);
                self.head = 0;
            }
        } else if end == self.buf.len() {
            self.buf.truncate(start);
        } else {
            self.buf.copy_within(end.., start);
            self.buf.truncate(self.buf.len() - (end - start));
        }
        self.maybe_shrink();
    }

    /// Returns memory after large removals (LTRIM, LREM, popping ranges).
    fn maybe_shrink(&mut self) {
        let cap = self.buf.capacity();
        if cap > 256 && self.buf.len() < cap / 4 {
            self.buf.shrink_to(self.buf.len() + self.buf.len() / 4);
        }
    }

    /// Inserts an entry at byte offset `at` (a boundary between entries).
    fn insert_at(&mut self, at: usize, v: &[u8]) {
        let add = encoded_len(v.len());
        let old = self.buf.len();
        self.buf.resize(old + add, 0);
        self.buf.copy_within(at..old, at + add);
        write_entry(&mut self.buf[at..at + add], v);
        self.count += 1;
    }

    /// Replaces the entry at `start..end` with `v`.
    fn replace(&mut self, start: usize, end: usize, v: &[u8]) {
        let add = encoded_len(v.len());
        let old_len = end - start;
        if add != old_len {
            let old = self.buf.len();
            if add > old_len {
                self.buf.resize(old + add - old_len, 0);
                self.buf.copy_within(end..old, start + add);
            } else {
                self.buf.copy_within(end..old, start + add);
                self.buf.truncate(old - (old_len - add));
            }
        }
        write_entry(&mut self.buf[start..start + add], v);
    }

    /// Offset of the entry at `idx` inside this node.
    fn offset_of(&self, idx: u32) -> usize {
        if idx <= self.count / 2 {
            let mut off = self.head;
            for _ in 0..idx {
                off = self.entry_at(off).2;
            }
            off
        } else {
            let mut end = self.buf.len();
            for _ in 0..(self.count - 1 - idx) {
                end = self.entry_before(end).0;
            }
            self.entry_before(end).0
        }
    }

    /// Splits the node into nodes within `fill` (after an insertion or a
    /// replacement made it too big).
    fn split(self, fill: Fill) -> Vec<Node> {
        let limit = fill.byte_limit();
        let mut out: Vec<Node> = Vec::new();
        let mut cur = Node::default();
        let mut off = self.head;
        while off < self.buf.len() {
            let (d, n, end) = self.entry_at(off);
            if cur.count > 0 && !fill.allows(cur.size(), cur.count, end - off) {
                out.push(std::mem::take(&mut cur));
            }
            cur.push_back(&self.buf[d..d + n], limit);
            off = end;
        }
        if cur.count > 0 {
            out.push(cur);
        }
        out
    }
}

// ---------------------------------------------------------------------------
// The list.

#[derive(Clone, Debug, Default)]
pub struct List {
    nodes: VecDeque<Node>,
    len: usize,
}

impl List {
    pub fn new() -> List {
        List::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of nodes (DEBUG OBJECT's ql_nodes).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes of element data and framing (DEBUG OBJECT's ql_uncompressed_size).
    pub fn packed_size(&self) -> usize {
        self.nodes.iter().map(Node::size).sum()
    }

    /// Approximate heap bytes owned by the list.
    pub fn heap_size(&self) -> usize {
        std::mem::size_of::<List>()
            + self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.nodes.iter().map(|n| n.buf.capacity()).sum::<usize>()
    }

    /// `heap_size` with the nodes' buffers estimated from the first and
    /// last few when there are many: a bounded cost whatever the length.
    pub fn heap_size_sampled(&self) -> usize {
        const ENDS: usize = 8;
        let n = self.nodes.len();
        if n <= 2 * ENDS {
            return self.heap_size();
        }
        let sampled: usize = self
            .nodes
            .iter()
            .take(ENDS)
            .chain(self.nodes.iter().skip(n - ENDS))
            .map(|node| node.buf.capacity())
            .sum();
        std::mem::size_of::<List>()
            + self.nodes.capacity() * std::mem::size_of::<Node>()
            + sampled * n / (2 * ENDS)
    }

    pub fn push_back(&mut self, v: &[u8], fill: Fill) {
        let add = encoded_len(v.len());
        match self.nodes.back_mut() {
            Some(n) if fill.allows(n.size(), n.count, add) => n.push_back(v, fill.byte_limit()),
            _ => self.nodes.push_back(Node::with(v)),
        }
        self.len += 1;
    }

    pub fn push_front(&mut self, v: &[u8], fill: Fill) {
        let add = encoded_len(v.len());
        match self.nodes.front_mut() {
            Some(n) if fill.allows(n.size(), n.count, add) => n.push_front(v),
            _ => self.nodes.push_front(Node::with(v)),
        }
        self.len += 1;
    }

    pub fn push(&mut self, v: &[u8], end: End, fill: Fill) {
        match end {
            End::Head => self.push_front(v, fill),
            End::Tail => self.push_back(v, fill),
        }
    }

    pub fn front(&self) -> Option<&[u8]> {
        let n = self.nodes.front()?;
        let (d, len, _) = n.entry_at(n.head);
        Some(n.data(d, len))
    }

    pub fn back(&self) -> Option<&[u8]> {
        let n = self.nodes.back()?;
        let (_, d, len) = n.entry_before(n.buf.len());
        Some(n.data(d, len))
    }

    /// The element at one end, without removing it.
    pub fn peek(&self, end: End) -> Option<&[u8]> {
        match end {
            End::Head => self.front(),
            End::Tail => self.back(),
        }
    }

    /// Removes and returns the element at one end.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let v = self.peek(end)?.to_vec();
        match end {
            End::Head => self.remove_range(0, 1),
            End::Tail => self.remove_range(self.len - 1, 1),
        }
        Some(v)
    }

    /// Node index and byte offset of the element at `index` (< len).
    fn locate(&self, index: usize) -> (usize, usize) {
        debug_assert!(index < self.len);
        if index < self.len / 2 {
            let mut i = index;
            for (ni, n) in self.nodes.iter().enumerate() {
                if i < n.count as usize {
                    return (ni, n.offset_of(i as u32));
                }
                i -= n.count as usize;
            }
        } else {
            let mut from_end = self.len - 1 - index;
            for (ni, n) in self.nodes.iter().enumerate().rev() {
                if from_end < n.count as usize {
                    return (ni, n.offset_of(n.count - 1 - from_end as u32));
                }
                from_end -= n.count as usize;
            }
        }
        unreachable!("index within the list")
    }

    /// Redis's index rule: negative counts from the tail.
    pub fn resolve_index(&self, index: i64) -> Option<usize> {
        let i = if index < 0 {
            self.len as i64 + index
        } else {
            index
        };
        (i >= 0 && (i as usize) < self.len).then_some(i as usize)
    }

    pub fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let (ni, off) = self.locate(index);
        let n = &self.nodes[ni];
        let (d, len, _) = n.entry_at(off);
        Some(n.data(d, len))
    }

    /// Replaces the element at `index` (< len).
    pub fn set(&mut self, index: usize, v: &[u8], fill: Fill) {
        let (ni, off) = self.locate(index);
        let n = &mut self.nodes[ni];
        let end = n.entry_at(off).2;
        n.replace(off, end, v);
        self.fix_node(ni, fill);
    }

    /// Inserts `v` so that it becomes the element at `index` (<= len).
    pub fn insert(&mut self, index: usize, v: &[u8], fill: Fill) {
        if index == 0 {
            return self.push_front(v, fill);
        }
        if index == self.len {
            return self.push_back(v, fill);
        }
        // Insert after the element before `index`: at the end of its node
        // when the split falls between two nodes.
        let (ni, off) = self.locate(index - 1);
        let add = encoded_len(v.len());
        let n = &self.nodes[ni];
        let at = n.entry_at(off).2;
        if at == n.buf.len() {
            // Between two nodes: prefer one with room (Redis does the same
            // before splitting a full node).
            let next = &self.nodes[ni + 1];
            if fill.allows(n.size(), n.count, add) {
                self.nodes[ni].push_back(v, fill.byte_limit());
            } else if fill.allows(next.size(), next.count, add) {
                self.nodes[ni + 1].push_front(v);
            } else {
                self.nodes.insert(ni + 1, Node::with(v));
            }
            self.len += 1;
            return;
        }
        self.nodes[ni].insert_at(at, v);
        self.len += 1;
        self.fix_node(ni, fill);
    }

    /// Splits node `ni` if a change made it exceed the bounds.
    fn fix_node(&mut self, ni: usize, fill: Fill) {
        let n = &self.nodes[ni];
        if fill.fits(n.size(), n.count) {
            return;
        }
        let node = self.nodes.remove(ni).expect("node exists");
        for (k, part) in node.split(fill).into_iter().enumerate() {
            self.nodes.insert(ni + k, part);
        }
    }

    /// Removes `count` elements starting at `start` (start + count <= len).
    pub fn remove_range(&mut self, start: usize, count: usize) {
        debug_assert!(start + count <= self.len);
        if count == 0 {
            return;
        }
        if count == self.len {
            self.nodes.clear();
            self.len = 0;
            return;
        }
        // Find the first node involved.
        let mut ni = 0;
        let mut s = start;
        while s >= self.nodes[ni].count as usize {
            s -= self.nodes[ni].count as usize;
            ni += 1;
        }
        let mut remaining = count;
        while remaining > 0 {
            let n = &mut self.nodes[ni];
            let take = remaining.min(n.count as usize - s);
            if s == 0 && take == n.count as usize {
                self.nodes.remove(ni);
            } else {
                let from = n.offset_of(s as u32);
                let mut to = from;
                for _ in 0..take {
                    to = n.entry_at(to).2;
                }
                n.remove_bytes(from, to, take as u32);
                ni += 1;
            }
            remaining -= take;
            s = 0;
        }
        self.len -= count;
    }

    /// Keeps only `start..=end` (clamped indexes, as LTRIM computes them).
    pub fn trim(&mut self, ltrim: usize, rtrim: usize) {
        let rtrim = rtrim.min(self.len - ltrim.min(self.len));
        self.remove_range(self.len - rtrim, rtrim);
        let ltrim = ltrim.min(self.len);
        self.remove_range(0, ltrim);
    }

    /// Removes up to `limit` elements equal to `v` (0 = all), from the head
    /// or from the tail; returns how many were removed (LREM).
    pub fn remove_matching(&mut self, v: &[u8], limit: usize, from: End) -> usize {
        let mut removed = 0;
        let order: Vec<usize> = match from {
            End::Head => (0..self.nodes.len()).collect(),
            End::Tail => (0..self.nodes.len()).rev().collect(),
        };
        let mut emptied = Vec::new();
        for ni in order {
            if limit != 0 && removed == limit {
                break;
            }
            let n = &mut self.nodes[ni];
            // Matching entries of this node, as byte ranges.
            let mut hits: Vec<(usize, usize)> = Vec::new();
            let mut off = n.head;
            while off < n.buf.len() {
                let (d, len, end) = n.entry_at(off);
                if n.data(d, len) == v {
                    hits.push((off, end));
                }
                off = end;
            }
            if hits.is_empty() {
                continue;
            }
            if limit != 0 {
                let room = limit - removed;
                if hits.len() > room {
                    match from {
                        End::Head => hits.truncate(room),
                        End::Tail => {
                            hits.drain(..hits.len() - room);
                        }
                    }
                }
            }
            removed += hits.len();
            // Compact the node, skipping the hits.
            let mut write = hits[0].0;
            for (k, &(_, end)) in hits.iter().enumerate() {
                let next = hits.get(k + 1).map_or(n.buf.len(), |h| h.0);
                n.buf.copy_within(end..next, write);
                write += next - end;
            }
            n.buf.truncate(write);
            n.count -= hits.len() as u32;
            if n.count == 0 {
                emptied.push(ni);
            } else {
                n.maybe_shrink();
            }
        }
        emptied.sort_unstable();
        for ni in emptied.into_iter().rev() {
            self.nodes.remove(ni);
        }
        self.len -= removed;
        removed
    }

    /// Elements from `index` (< len) toward the tail, or toward the head
    /// when `reverse`.
    pub fn iter_from(&self, index: usize, reverse: bool) -> Iter<'_> {
        if index >= self.len {
            return Iter {
                list: self,
                node: 0,
                off: 0,
                remaining: 0,
                reverse,
            };
        }
        let (node, off) = self.locate(index);
        let off = if reverse {
            self.nodes[node].entry_at(off).2
        } else {
            off
        };
        Iter {
            list: self,
            node,
            off,
            remaining: if reverse { index + 1 } else { self.len - index },
            reverse,
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0, false)
    }

    pub fn from_elements<'e>(elements: impl IntoIterator<Item = &'e [u8]>, fill: Fill) -> List {
        let mut l = List::new();
        for e in elements {
            l.push_back(e, fill);
        }
        l
    }
}

/// Which end of a list (Redis's LIST_HEAD / LIST_TAIL, LEFT / RIGHT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Head,
    Tail,
}

pub struct Iter<'a> {
    list: &'a List,
    node: usize,
    /// Forward: offset of the next entry. Reverse: end of the next entry.
    off: usize,
    remaining: usize,
    reverse: bool,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let nodes = &self.list.nodes;
        if self.reverse {
            if self.off == nodes[self.node].head {
                self.node -= 1;
                self.off = nodes[self.node].buf.len();
            }
            let n = &nodes[self.node];
            let (start, d, len) = n.entry_before(self.off);
            self.off = start;
            Some(n.data(d, len))
        } else {
            if self.off == nodes[self.node].buf.len() {
                self.node += 1;
                self.off = nodes[self.node].head;
            }
            let n = &nodes[self.node];
            let (d, len, end) = n.entry_at(self.off);
            self.off = end;
            Some(n.data(d, len))
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(list: &List, model: &VecDeque<Vec<u8>>) {
        assert_eq!(list.len(), model.len());
        let fwd: Vec<&[u8]> = list.iter().collect();
        let want: Vec<&[u8]> = model.iter().map(|v| v.as_slice()).collect();
        assert_eq!(fwd, want);
        if !model.is_empty() {
            let back: Vec<&[u8]> = list.iter_from(model.len() - 1, true).collect();
            let mut rev = want.clone();
            rev.reverse();
            assert_eq!(back, rev);
        }
        for (i, v) in model.iter().enumerate() {
            assert_eq!(list.get(i), Some(v.as_slice()));
        }
        assert_eq!(
            list.nodes.iter().map(|n| n.count as usize).sum::<usize>(),
            list.len
        );
        assert!(list.nodes.iter().all(|n| n.count > 0));
    }

    #[test]
    fn framing_round_trips_all_length_classes() {
        for len in [0usize, 1, 127, 128, 16383, 16384, 70000] {
            let v = vec![b'x'; len];
            let mut buf = vec![0u8; encoded_len(len)];
            write_entry(&mut buf, &v);
            let (n, h) = read_forward(&buf, 0);
            assert_eq!((n, h), (len, varint_len(len)));
            let (n, t) = read_backward(&buf, buf.len());
            assert_eq!((n, t), (len, varint_len(len)));
        }
    }

    #[test]
    fn big_elements_get_their_own_node() {
        let mut l = List::new();
        let fill = Fill::new(-2);
        l.push_back(b"a", fill);
        l.push_back(&vec![b'b'; 10000], fill);
        l.push_back(b"c", fill);
        assert_eq!(l.node_count(), 3);
        assert_eq!(l.get(1).map(|v| v.len()), Some(10000));
    }

    #[test]
    fn count_bounded_nodes() {
        let mut l = List::new();
        let fill = Fill::new(4);
        for i in 0..10 {
            l.push_back(i.to_string().as_bytes(), fill);
        }
        assert_eq!(l.node_count(), 3);
        l.insert(2, b"x", fill);
        assert!(l.nodes.iter().all(|n| n.count <= 4));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(bool, Vec<u8>),
        Pop(bool),
        Set(usize, Vec<u8>),
        Insert(usize, Vec<u8>),
        RemoveRange(usize, usize),
        Trim(usize, usize),
        RemoveMatching(Vec<u8>, usize, bool),
    }

    fn element() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            8 => proptest::collection::vec(b'a'..=b'c', 0..3),
            1 => proptest::collection::vec(any::<u8>(), 100..300),
            1 => proptest::collection::vec(b'z'..=b'z', 5000..9000),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (any::<bool>(), element()).prop_map(|(f, v)| Op::Push(f, v)),
            2 => any::<bool>().prop_map(Op::Pop),
            1 => (any::<usize>(), element()).prop_map(|(i, v)| Op::Set(i, v)),
            1 => (any::<usize>(), element()).prop_map(|(i, v)| Op::Insert(i, v)),
            1 => (any::<usize>(), 0usize..20).prop_map(|(i, c)| Op::RemoveRange(i, c)),
            1 => (0usize..5, 0usize..5).prop_map(|(a, b)| Op::Trim(a, b)),
            1 => (element(), 0usize..3, any::<bool>()).prop_map(|(v, c, t)| Op::RemoveMatching(v, c, t)),
        ]
    }

    proptest! {
        #[test]
        fn behaves_like_a_deque(fill in prop_oneof![Just(-2i64), Just(-1), Just(1), Just(3), Just(16)],
                                ops in proptest::collection::vec(op(), 1..120)) {
            let fill = Fill::new(fill);
            let mut l = List::new();
            let mut m: VecDeque<Vec<u8>> = VecDeque::new();
            for op in ops {
                match op {
                    Op::Push(front, v) => {
                        if front { l.push_front(&v, fill); m.push_front(v); }
                        else { l.push_back(&v, fill); m.push_back(v); }
                    }
                    Op::Pop(front) => {
                        let end = if front { End::Head } else { End::Tail };
                        let want = if front { m.pop_front() } else { m.pop_back() };
                        prop_assert_eq!(l.pop(end), want);
                    }
                    Op::Set(i, v) => {
                        if !m.is_empty() {
                            let i = i % m.len();
                            l.set(i, &v, fill);
                            m[i] = v;
                        }
                    }
                    Op::Insert(i, v) => {
                        let i = i % (m.len() + 1);
                        l.insert(i, &v, fill);
                        m.insert(i, v);
                    }
                    Op::RemoveRange(i, c) => {
                        if !m.is_empty() {
                            let i = i % m.len();
                            let c = c.min(m.len() - i);
                            l.remove_range(i, c);
                            m.drain(i..i + c);
                        }
                    }
                    Op::Trim(a, b) => {
                        let a = a.min(m.len());
                        let b = b.min(m.len() - a);
                        l.trim(a, b);
                        m.drain(m.len() - b..);
                        m.drain(..a);
                    }
                    Op::RemoveMatching(v, limit, tail) => {
                        let from = if tail { End::Tail } else { End::Head };
                        let n = l.remove_matching(&v, limit, from);
                        let mut removed = 0;
                        let idx: Vec<usize> = if tail { (0..m.len()).rev().collect() } else { (0..m.len()).collect() };
                        let mut gone = Vec::new();
                        for i in idx {
                            if limit != 0 && removed == limit { break; }
                            if m[i] == v { gone.push(i); removed += 1; }
                        }
                        gone.sort_unstable();
                        for i in gone.into_iter().rev() { m.remove(i); }
                        prop_assert_eq!(n, removed);
                    }
                }
                check(&l, &m);
                for n in &l.nodes {
                    prop_assert!(fill.fits(n.size(), n.count));
                }
            }
        }
    }
}
