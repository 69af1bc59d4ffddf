//! `Tree`: the indexed form of a sorted set (Redis's "skiplist" encoding).
//!
//! Three views of the same nodes:
//!
//! - **A slab.** Every member is one fixed-size `Node` (64 bytes, one
//!   cache line) in a chunked array and is named by its 32-bit index.
//!   Chunks hold 4096 nodes, so a large set never reallocates (and
//!   copies) its whole storage, and at most one chunk is partly empty. Freed slots are
//!   chained into a free list and reused; when fewer than a quarter of the
//!   slots are live the slab is rebuilt compactly.
//! - **A treap ordered by (score, member)**, linked through `left` /
//!   `right` and carrying each subtree's `size`. Sizes give rank, select
//!   by rank and score / lex bounds in O(log n), like the spans of Redis's
//!   skiplist; in-order walks from any rank serve ranges in O(log n + m).
//!   The heap priority is the member's hash (seeded per process, so
//!   clients cannot choose it), which keeps the expected depth at
//!   O(log n) without storing anything extra.
//! - **A chained hash table** (member -> node) over the same nodes through
//!   `next`, with a power-of-two bucket array of u32 heads, for O(1)
//!   ZSCORE and membership tests. Its buckets are walked with Redis's
//!   reverse-binary cursor, so ZSCAN keeps SCAN's guarantees across
//!   resizes.
//!
//! Per member this costs the node plus 4 to 8 bytes of buckets (about
//! 70 bytes for members up to 22 bytes, which are stored inline); Redis's
//! skiplist node, dict entry, bucket and sds cost about 110.

use std::cmp::Ordering;

use crate::bytes::CompactBytes;
use crate::dict::hash_key;

use super::cmp_entries;

pub const NIL: u32 = u32::MAX;
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
const MIN_BUCKETS: usize = 4;
/// Below this many slots the slab is never compacted.
const COMPACT_MIN_SLOTS: u32 = 256;

/// Aligned to a cache line: a walk down the treap reads one line per node
/// (at 56 bytes most nodes would straddle two), which is most of what a
/// large set's ZADD or ZRANK costs.
#[derive(Clone, Debug)]
#[repr(align(64))]
struct Node {
    member: CompactBytes,
    score: f64,
    left: u32,
    right: u32,
    /// Size of the subtree rooted here; 0 marks a free slot.
    size: u32,
    /// Next node in the hash chain, or next free slot.
    next: u32,
    /// Low 32 bits of the member's hash: bucket index and heap priority.
    hash: u32,
}

#[derive(Clone, Debug)]
pub struct Tree {
    chunks: Vec<Vec<Node>>,
    root: u32,
    free: u32,
    slots: u32,
    buckets: Vec<u32>,
    /// Heap bytes of members too long to be stored inline.
    member_heap: usize,
}

impl Default for Tree {
    fn default() -> Self {
        Tree::new()
    }
}

#[inline]
fn member_hash(member: &[u8]) -> u32 {
    hash_key(member) as u32
}

impl Tree {
    pub fn new() -> Tree {
        Tree {
            chunks: Vec::new(),
            root: NIL,
            free: NIL,
            slots: 0,
            buckets: Vec::new(),
            member_heap: 0,
        }
    }

    /// Builds a tree from entries sorted by (score, member), members unique.
    pub fn from_sorted(entries: impl IntoIterator<Item = (CompactBytes, f64)>) -> Tree {
        let mut t = Tree::new();
        let mut ids = Vec::new();
        for (member, score) in entries {
            let hash = member_hash(&member);
            ids.push(t.alloc(member, score, hash));
        }
        debug_assert!(ids
            .windows(2)
            .all(|w| t.cmp_nodes(w[0], w[1]) == Ordering::Less));
        t.resize_buckets(ids.len().next_power_of_two().max(MIN_BUCKETS));
        for &id in &ids {
            t.link(id);
        }
        t.root = t.build(&ids);
        t
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.sz(self.root) as usize
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.root == NIL
    }

    pub fn heap_size(&self) -> usize {
        self.chunks
            .iter()
            .map(|c| c.capacity() * std::mem::size_of::<Node>())
            .sum::<usize>()
            + self.chunks.capacity() * std::mem::size_of::<Vec<Node>>()
            + self.buckets.capacity() * 4
            + self.member_heap
    }

    // -- Slab ---------------------------------------------------------------

    #[inline]
    fn n(&self, id: u32) -> &Node {
        &self.chunks[(id >> CHUNK_BITS) as usize][id as usize & (CHUNK - 1)]
    }

    #[inline]
    fn nm(&mut self, id: u32) -> &mut Node {
        &mut self.chunks[(id >> CHUNK_BITS) as usize][id as usize & (CHUNK - 1)]
    }

    fn alloc(&mut self, member: CompactBytes, score: f64, hash: u32) -> u32 {
        self.member_heap += member.heap_size();
        let node = Node {
            member,
            score,
            left: NIL,
            right: NIL,
            size: 1,
            next: NIL,
            hash,
        };
        if self.free != NIL {
            let id = self.free;
            let slot = self.nm(id);
            let next_free = slot.next;
            *slot = node;
            self.free = next_free;
            return id;
        }
        // u32::MAX is NIL: a set is limited to 2^32 - 1 slots (over 200 GB).
        assert!(self.slots < NIL - 1, "sorted set too large");
        let id = self.slots;
        self.slots += 1;
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => {
                if c.len() == c.capacity() {
                    // Grow by doubling up to one full chunk, never beyond.
                    let target = (c.capacity() * 2).clamp(4, CHUNK);
                    c.reserve_exact(target - c.len());
                }
                c.push(node);
            }
            _ => {
                let cap = if self.chunks.is_empty() { 4 } else { CHUNK };
                let mut c = Vec::with_capacity(cap);
                c.push(node);
                self.chunks.push(c);
            }
        }
        id
    }

    fn release(&mut self, id: u32) -> CompactBytes {
        let free = self.free;
        let node = self.nm(id);
        let member = std::mem::take(&mut node.member);
        node.size = 0;
        node.left = NIL;
        node.right = NIL;
        node.next = free;
        self.free = id;
        self.member_heap -= member.heap_size();
        member
    }

    // -- Hash index -----------------------------------------------------------

    #[inline]
    fn mask(&self) -> usize {
        self.buckets.len().wrapping_sub(1)
    }

    /// The node holding `member`, or NIL.
    pub fn find(&self, member: &[u8]) -> u32 {
        if self.buckets.is_empty() {
            return NIL;
        }
        let h = member_hash(member);
        let mut cur = self.buckets[h as usize & self.mask()];
        while cur != NIL {
            let n = self.n(cur);
            if n.hash == h && n.member.as_slice() == member {
                return cur;
            }
            cur = n.next;
        }
        NIL
    }

    fn link(&mut self, id: u32) {
        let b = self.n(id).hash as usize & self.mask();
        let head = self.buckets[b];
        self.nm(id).next = head;
        self.buckets[b] = id;
    }

    fn unlink(&mut self, id: u32) {
        let b = self.n(id).hash as usize & self.mask();
        if self.buckets[b] == id {
            self.buckets[b] = self.n(id).next;
            return;
        }
        let mut cur = self.buckets[b];
        while cur != NIL {
            let next = self.n(cur).next;
            if next == id {
                let after = self.n(id).next;
                self.nm(cur).next = after;
                return;
            }
            cur = next;
        }
        debug_assert!(false, "node {id} not in its bucket");
    }

    fn resize_buckets(&mut self, size: usize) {
        let mut live = Vec::with_capacity(self.len());
        for &head in &self.buckets {
            let mut cur = head;
            while cur != NIL {
                live.push(cur);
                cur = self.n(cur).next;
            }
        }
        self.buckets = vec![NIL; size];
        for id in live {
            self.link(id);
        }
    }

    /// Grows the table to keep chains short (Redis grows at load 1).
    fn grow_if_needed(&mut self) {
        let len = self.len();
        if len >= self.buckets.len() {
            self.resize_buckets((len + 1).next_power_of_two().max(MIN_BUCKETS));
        }
    }

    /// After removals: shrink the bucket array when under 1/8 full (as
    /// `Dict` does), and rebuild the slab when most slots are free.
    fn after_removal(&mut self) {
        let len = self.len();
        if self.slots >= COMPACT_MIN_SLOTS && (len as u32) < self.slots / 4 {
            self.compact();
            return;
        }
        let n = self.buckets.len();
        if n > MIN_BUCKETS && len * 8 < n {
            self.resize_buckets(len.next_power_of_two().max(MIN_BUCKETS));
        }
    }

    /// Rebuilds the slab with only live nodes, in order.
    fn compact(&mut self) {
        let mut entries = Vec::with_capacity(self.len());
        let mut it = self.iter_from(0, false);
        while let Some(id) = it.next_id() {
            entries.push(id);
        }
        let entries: Vec<(CompactBytes, f64)> = entries
            .into_iter()
            .map(|id| {
                let n = self.nm(id);
                (std::mem::take(&mut n.member), n.score)
            })
            .collect();
        *self = Tree::from_sorted(entries);
    }

    /// One step of Redis's reverse-binary SCAN over the hash buckets:
    /// calls `f` for the members of the bucket the cursor designates and
    /// returns the next cursor (0 when done).
    pub fn scan<'a>(&'a self, cursor: u64, mut f: impl FnMut(&'a [u8], f64)) -> u64 {
        if self.buckets.is_empty() || self.root == NIL {
            return 0;
        }
        let mask = self.mask() as u64;
        let mut cur = self.buckets[(cursor & mask) as usize];
        while cur != NIL {
            let n = self.n(cur);
            f(&n.member, n.score);
            cur = n.next;
        }
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    // -- Treap ------------------------------------------------------------------

    #[inline]
    fn sz(&self, t: u32) -> u32 {
        if t == NIL {
            0
        } else {
            self.n(t).size
        }
    }

    #[inline]
    fn fix(&mut self, t: u32) {
        let n = self.n(t);
        let s = 1 + self.sz(n.left) + self.sz(n.right);
        self.nm(t).size = s;
    }

    #[inline]
    fn cmp_nodes(&self, a: u32, b: u32) -> Ordering {
        let (a, b) = (self.n(a), self.n(b));
        // cmp_entries, with the members (an inline-or-heap branch each)
        // read only on a tie of scores: most comparisons end at the score.
        if a.score < b.score {
            Ordering::Less
        } else if a.score > b.score {
            Ordering::Greater
        } else {
            cmp_entries(a.score, &a.member, b.score, &b.member)
        }
    }

    #[inline]
    fn prio(&self, t: u32) -> u32 {
        self.n(t).hash
    }

    /// Splits `t` around the key of node `id` (not in `t`): (smaller, larger).
    fn split(&mut self, t: u32, id: u32) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.cmp_nodes(t, id) == Ordering::Less {
            let (l, r) = self.split(self.n(t).right, id);
            self.nm(t).right = l;
            self.fix(t);
            (t, r)
        } else {
            let (l, r) = self.split(self.n(t).left, id);
            self.nm(t).left = r;
            self.fix(t);
            (l, t)
        }
    }

    /// Joins two treaps whose keys are all ordered `a` before `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.prio(a) > self.prio(b) {
            let r = self.merge(self.n(a).right, b);
            self.nm(a).right = r;
            self.fix(a);
            a
        } else {
            let l = self.merge(a, self.n(b).left);
            self.nm(b).left = l;
            self.fix(b);
            b
        }
    }

    /// Splits off the first `k` elements of `t`: (first k, rest).
    fn split_rank(&mut self, t: u32, k: u32) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let ls = self.sz(self.n(t).left);
        if k <= ls {
            let (a, b) = self.split_rank(self.n(t).left, k);
            self.nm(t).left = b;
            self.fix(t);
            (a, t)
        } else {
            let (a, b) = self.split_rank(self.n(t).right, k - ls - 1);
            self.nm(t).right = a;
            self.fix(t);
            (t, b)
        }
    }

    /// Inserts node `id` (a single node, not in the tree). Iterative: walk
    /// down from the root while the nodes on the way outrank `id`'s
    /// priority, counting `id` into each subtree it enters, then split the
    /// subtree found there around `id` and hang `id` in its place.
    fn insert_node(&mut self, id: u32) {
        let (prio, score) = (self.prio(id), self.n(id).score);
        let mut parent = NIL;
        let mut left = false;
        let mut t = self.root;
        while t != NIL && prio <= self.prio(t) {
            self.nm(t).size += 1;
            parent = t;
            left = self.before(id, score, t);
            t = if left {
                self.n(t).left
            } else {
                self.n(t).right
            };
        }
        let (l, r) = self.split(t, id);
        let n = self.nm(id);
        n.left = l;
        n.right = r;
        self.fix(id);
        self.set_child(parent, left, id);
    }

    /// Removes node `id` (present) from the treap. Iterative: walk down to
    /// it, uncounting it from each subtree on the way, and replace it with
    /// the merge of its children.
    fn remove_node(&mut self, id: u32) {
        let score = self.n(id).score;
        let mut parent = NIL;
        let mut left = false;
        let mut t = self.root;
        while t != id {
            debug_assert!(t != NIL);
            self.nm(t).size -= 1;
            parent = t;
            left = self.before(id, score, t);
            t = if left {
                self.n(t).left
            } else {
                self.n(t).right
            };
        }
        let (l, r) = (self.n(id).left, self.n(id).right);
        let merged = self.merge(l, r);
        self.set_child(parent, left, merged);
    }

    /// Whether node `id`, whose score is `score`, orders before node `t`:
    /// the walks above compare one node against many, so its score is read
    /// once and its member only on a tie.
    #[inline]
    fn before(&self, id: u32, score: f64, t: u32) -> bool {
        let other = self.n(t).score;
        if score != other {
            return score < other;
        }
        self.cmp_nodes(id, t) == Ordering::Less
    }

    /// Points `parent`'s left or right link at `child` (the root when
    /// `parent` is NIL).
    #[inline]
    fn set_child(&mut self, parent: u32, left: bool, child: u32) {
        if parent == NIL {
            self.root = child;
        } else if left {
            self.nm(parent).left = child;
        } else {
            self.nm(parent).right = child;
        }
    }

    /// Builds a treap from ids sorted by key (a Cartesian tree on the
    /// priorities, in O(n) with a stack of the right spine).
    fn build(&mut self, ids: &[u32]) -> u32 {
        let mut spine: Vec<u32> = Vec::new();
        for &id in ids {
            let mut last = NIL;
            while let Some(&top) = spine.last() {
                if self.prio(top) >= self.prio(id) {
                    break;
                }
                spine.pop();
                self.fix(top);
                last = top;
            }
            self.nm(id).left = last;
            if let Some(&top) = spine.last() {
                self.nm(top).right = id;
            }
            spine.push(id);
        }
        // The bottom of the spine, fixed last, is the root.
        let mut root = NIL;
        while let Some(top) = spine.pop() {
            self.fix(top);
            root = top;
        }
        root
    }

    // -- Queries --------------------------------------------------------------

    pub fn member(&self, id: u32) -> &[u8] {
        &self.n(id).member
    }

    pub fn score_of(&self, id: u32) -> f64 {
        self.n(id).score
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        let id = self.find(member);
        (id != NIL).then(|| self.n(id).score)
    }

    /// 0-based rank of node `id`.
    pub fn rank_of(&self, id: u32) -> usize {
        let mut r = 0;
        let mut t = self.root;
        while t != NIL {
            match self.cmp_nodes(id, t) {
                Ordering::Less => t = self.n(t).left,
                Ordering::Greater => {
                    r += self.sz(self.n(t).left) as usize + 1;
                    t = self.n(t).right;
                }
                Ordering::Equal => return r + self.sz(self.n(t).left) as usize,
            }
        }
        unreachable!("node not in its tree")
    }

    /// The node at 0-based rank `k` (< len).
    pub fn select(&self, mut k: usize) -> u32 {
        let mut t = self.root;
        while t != NIL {
            let ls = self.sz(self.n(t).left) as usize;
            match k.cmp(&ls) {
                Ordering::Less => t = self.n(t).left,
                Ordering::Equal => return t,
                Ordering::Greater => {
                    k -= ls + 1;
                    t = self.n(t).right;
                }
            }
        }
        NIL
    }

    /// The number of elements, from the smallest, for which `pred` holds,
    /// found by descending the tree as if `pred` held for a prefix.
    pub fn count_prefix(&self, pred: impl Fn(&[u8], f64) -> bool) -> usize {
        let mut count = 0;
        let mut t = self.root;
        while t != NIL {
            let n = self.n(t);
            if pred(n.member.as_slice(), n.score) {
                count += self.sz(n.left) as usize + 1;
                t = n.right;
            } else {
                t = n.left;
            }
        }
        count
    }

    /// Walks in order from rank `rank`, ascending or descending.
    pub fn iter_from(&self, rank: usize, rev: bool) -> Iter<'_> {
        let mut stack = Vec::with_capacity(48);
        let mut r = rank;
        let mut t = self.root;
        if rank < self.len() {
            while t != NIL {
                let n = self.n(t);
                let ls = self.sz(n.left) as usize;
                if r < ls {
                    if !rev {
                        stack.push(t);
                    }
                    t = n.left;
                } else if r == ls {
                    stack.push(t);
                    break;
                } else {
                    if rev {
                        stack.push(t);
                    }
                    r -= ls + 1;
                    t = n.right;
                }
            }
        }
        Iter {
            tree: self,
            stack,
            rev,
        }
    }

    // -- Changes --------------------------------------------------------------

    /// Adds a member known to be absent.
    pub fn insert(&mut self, member: &[u8], score: f64) {
        let hash = member_hash(member);
        let id = self.alloc(CompactBytes::from_slice(member), score, hash);
        self.grow_if_needed();
        self.link(id);
        self.insert_node(id);
    }

    /// Changes the score of node `id`, moving it to its new place.
    pub fn set_score(&mut self, id: u32, score: f64) {
        self.remove_node(id);
        let n = self.nm(id);
        n.score = score;
        n.left = NIL;
        n.right = NIL;
        n.size = 1;
        self.insert_node(id);
    }

    /// Removes node `id`, returning its member and score.
    pub fn remove_id(&mut self, id: u32) -> (CompactBytes, f64) {
        self.remove_node(id);
        self.unlink(id);
        let score = self.n(id).score;
        let member = self.release(id);
        self.after_removal();
        (member, score)
    }

    pub fn remove(&mut self, member: &[u8]) -> bool {
        let id = self.find(member);
        if id == NIL {
            return false;
        }
        self.remove_id(id);
        true
    }

    /// Removes the elements of ranks `start..end` (0-based, exclusive end).
    pub fn remove_rank_range(&mut self, start: usize, end: usize) -> usize {
        if start >= end {
            return 0;
        }
        let (l, rest) = self.split_rank(self.root, start as u32);
        let (mid, r) = self.split_rank(rest, (end - start) as u32);
        self.root = self.merge(l, r);
        let removed = self.sz(mid) as usize;
        let mut stack = vec![mid];
        while let Some(t) = stack.pop() {
            if t == NIL {
                continue;
            }
            let (a, b) = (self.n(t).left, self.n(t).right);
            stack.push(a);
            stack.push(b);
            self.unlink(t);
            self.release(t);
        }
        self.after_removal();
        removed
    }

    /// Moves every element out, in order (for conversion to the packed form).
    pub fn into_sorted(mut self) -> Vec<(CompactBytes, f64)> {
        let mut ids = Vec::with_capacity(self.len());
        let mut it = self.iter_from(0, false);
        while let Some(id) = it.next_id() {
            ids.push(id);
        }
        ids.into_iter()
            .map(|id| {
                let n = self.nm(id);
                (std::mem::take(&mut n.member), n.score)
            })
            .collect()
    }

    #[cfg(test)]
    fn check(&self) {
        fn walk(t: &Tree, id: u32, depth: usize, max_depth: &mut usize) -> u32 {
            if id == NIL {
                return 0;
            }
            *max_depth = (*max_depth).max(depth);
            let n = t.n(id);
            for c in [n.left, n.right] {
                if c != NIL {
                    assert!(t.prio(c) <= n.hash, "heap order");
                }
            }
            if n.left != NIL {
                assert_eq!(t.cmp_nodes(n.left, id), Ordering::Less);
            }
            if n.right != NIL {
                assert_eq!(t.cmp_nodes(id, n.right), Ordering::Less);
            }
            let s =
                1 + walk(t, n.left, depth + 1, max_depth) + walk(t, n.right, depth + 1, max_depth);
            assert_eq!(s, n.size, "subtree size");
            s
        }
        let mut depth = 0;
        let total = walk(self, self.root, 0, &mut depth);
        let mut chained = 0;
        for &head in &self.buckets {
            let mut cur = head;
            while cur != NIL {
                chained += 1;
                assert_eq!(self.find(&self.n(cur).member), cur);
                cur = self.n(cur).next;
            }
        }
        assert_eq!(chained, total, "hash index and tree agree");
        if total > 1000 {
            assert!(depth < 8 * (total as f64).log2() as usize, "depth {depth}");
        }
    }
}

/// An in-order walk from a rank (see `Tree::iter_from`).
pub struct Iter<'a> {
    tree: &'a Tree,
    stack: Vec<u32>,
    rev: bool,
}

impl<'a> Iter<'a> {
    pub fn next_id(&mut self) -> Option<u32> {
        let t = self.stack.pop()?;
        let tree = self.tree;
        if self.rev {
            let mut c = tree.n(t).left;
            while c != NIL {
                self.stack.push(c);
                c = tree.n(c).right;
            }
        } else {
            let mut c = tree.n(t).right;
            while c != NIL {
                self.stack.push(c);
                c = tree.n(c).left;
            }
        }
        Some(t)
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let id = self.next_id()?;
        let n = self.tree.n(id);
        Some((n.member.as_slice(), n.score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(t: &Tree) -> Vec<(Vec<u8>, f64)> {
        t.iter_from(0, false)
            .map(|(m, s)| (m.to_vec(), s))
            .collect()
    }

    #[test]
    fn rank_select_and_order_against_a_model() {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut t = Tree::new();
        let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
        for step in 0..20_000 {
            let m = format!("m{}", rng.u32(..3000)).into_bytes();
            let score = rng.u32(..50) as f64;
            let pos = model.iter().position(|(_, x)| *x == m);
            match (pos, rng.u8(..4)) {
                (Some(p), 0) => {
                    assert!(t.remove(&m));
                    model.remove(p);
                }
                (Some(p), _) => {
                    let id = t.find(&m);
                    t.set_score(id, score);
                    model[p].0 = score;
                }
                (None, _) => {
                    t.insert(&m, score);
                    model.push((score, m));
                }
            }
            if step % 2000 == 0 {
                t.check();
            }
        }
        t.check();
        model.sort_by(|a, b| cmp_entries(a.0, &a.1, b.0, &b.1));
        let got = members(&t);
        assert_eq!(got.len(), model.len());
        for (i, ((m, s), (ms, mm))) in got.iter().zip(&model).enumerate() {
            assert_eq!((m, *s), (mm, *ms));
            let id = t.find(m);
            assert_eq!(t.rank_of(id), i);
            assert_eq!(t.select(i), id);
        }
        // Reverse walks from every 97th rank.
        for start in (0..model.len()).step_by(97) {
            let back: Vec<&[u8]> = t.iter_from(start, true).map(|(m, _)| m).collect();
            let want: Vec<&[u8]> = model[..=start].iter().rev().map(|(_, m)| &m[..]).collect();
            assert_eq!(back, want);
            let fwd = t.iter_from(start, false).count();
            assert_eq!(fwd, model.len() - start);
        }
    }

    #[test]
    fn count_prefix_finds_score_bounds() {
        let entries: Vec<(CompactBytes, f64)> = (0..1000)
            .map(|i| (CompactBytes::from_i64(100_000 + i), (i / 10) as f64))
            .collect();
        let t = Tree::from_sorted(entries);
        t.check();
        assert_eq!(t.count_prefix(|_, s| s < 5.0), 50);
        assert_eq!(t.count_prefix(|_, s| s <= 5.0), 60);
        assert_eq!(t.count_prefix(|_, _| true), 1000);
        assert_eq!(t.count_prefix(|_, _| false), 0);
    }

    #[test]
    fn rank_range_removal_and_compaction() {
        let entries: Vec<(CompactBytes, f64)> = (0..10_000)
            .map(|i| (CompactBytes::from_i64(i), i as f64))
            .collect();
        let mut t = Tree::from_sorted(entries);
        assert_eq!(t.remove_rank_range(100, 9_000), 8_900);
        t.check();
        assert_eq!(t.len(), 1_100);
        // Under a quarter of the slots live: the slab was rebuilt.
        assert!(t.slots as usize == t.len(), "slots {}", t.slots);
        let got: Vec<f64> = t.iter_from(98, false).take(4).map(|(_, s)| s).collect();
        assert_eq!(got, vec![98.0, 99.0, 9000.0, 9001.0]);
        assert!(t.remove(b"9001"));
        assert!(!t.remove(b"9001"));
        assert_eq!(t.score(b"9002"), Some(9002.0));
        t.check();
        // Freed slots are reused.
        let slots = t.slots;
        t.insert(b"new", -1.0);
        assert_eq!(t.slots, slots);
        assert_eq!(t.select(0), t.find(b"new"));
    }

    #[test]
    fn scan_visits_every_member_across_resizes() {
        let mut t = Tree::new();
        for i in 0..500 {
            t.insert(format!("k{i}").as_bytes(), i as f64);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            cursor = t.scan(cursor, |m, _| {
                seen.insert(m.to_vec());
            });
            step += 1;
            if step == 10 {
                for i in 500..4000 {
                    t.insert(format!("k{i}").as_bytes(), i as f64);
                }
            }
            if step == 100 {
                for i in 500..4000 {
                    t.remove(format!("k{i}").as_bytes());
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500 {
            assert!(seen.contains(format!("k{i}").as_bytes()), "k{i} missed");
        }
    }

    #[test]
    fn node_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Node>(), 64);
        assert_eq!(std::mem::align_of::<Node>(), 64);
    }
}
