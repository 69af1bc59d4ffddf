//! `Stream`: Redis's stream type (t_stream.c, stream.h).
//!
//! # Layout
//!
//! Entries live in nodes, each one listpack in Redis's own byte format
//! (see `lp`), kept in an ordered map keyed by the node's *master ID*, the
//! ID of the first entry it received. Redis keys a radix tree with the
//! 128-bit big-endian master IDs; a `BTreeMap<StreamId, _>` orders them the
//! same and finds the node holding an ID in O(log n), which is all the
//! radix tree is used for.
//!
//! A node starts with its *master entry*, then the entries, each delta
//! encoded against the master ID:
//!
//! ```text
//! master: count | deleted | num-fields | field_1 ... field_N | 0
//! entry:  flags | ms-diff | seq-diff | num-fields | f_1 v_1 ... f_N v_N | lp-count
//!         flags | ms-diff | seq-diff | v_1 ... v_N | lp-count   (SAMEFIELDS)
//! ```
//!
//! An entry with the master's fields (the common case) stores only its
//! values. `lp-count` is the number of elements before it in the entry, so
//! the node can be walked backwards. Deleting an entry only sets its
//! DELETED flag and moves it from `count` to `deleted`; a node whose last
//! live entry goes is removed. A node is closed when appending would pass
//! `stream-node-max-bytes` or it holds `stream-node-max-entries` entries
//! (live and deleted), exactly as Redis decides, so that nodes, and hence
//! approximate trimming (which removes whole nodes), come out the same.
//!
//! Consumer groups (`group`) sit beside the entries.

pub mod group;
pub mod lp;

use std::collections::BTreeMap;
use std::fmt;

pub use group::{Consumer, ConsumerGroup, Nack};

use crate::packed::Elem;
use crate::CompactBytes;

/// An entry ID: milliseconds and sequence number. The derived order
/// (milliseconds first) is Redis's streamCompareID.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next ID (streamIncrID); false, with the ID wrapped to 0-0, for
    /// the last possible one.
    pub fn incr(&mut self) -> bool {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                *self = StreamId::MIN;
                return false;
            }
            self.ms += 1;
            self.seq = 0;
        } else {
            self.seq += 1;
        }
        true
    }

    /// The previous ID (streamDecrID); false, with the ID wrapped to the
    /// maximum, for 0-0.
    pub fn decr(&mut self) -> bool {
        if self.seq == 0 {
            if self.ms == 0 {
                *self = StreamId::MAX;
                return false;
            }
            self.ms -= 1;
            self.seq = u64::MAX;
        } else {
            self.seq -= 1;
        }
        true
    }

    /// The 128-bit big-endian form of radix tree keys and RDB PELs.
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    pub fn from_be_bytes(b: &[u8; 16]) -> StreamId {
        StreamId {
            ms: u64::from_be_bytes(b[..8].try_into().expect("eight bytes")),
            seq: u64::from_be_bytes(b[8..].try_into().expect("eight bytes")),
        }
    }

    /// `<ms>-<seq>`, as replies show IDs.
    pub fn to_bytes(self) -> Vec<u8> {
        self.to_string().into_bytes()
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Entry flags (STREAM_ITEM_FLAG_*).
pub const FLAG_DELETED: i64 = 1;
pub const FLAG_SAMEFIELDS: i64 = 2;

/// Redis's STREAM_LISTPACK_MAX_SIZE: no node grows past 1 GB whatever the
/// configuration says, and no entry may be larger.
pub const LISTPACK_MAX_SIZE: usize = 1 << 30;
/// STREAM_LISTPACK_MAX_PRE_ALLOCATE: a new node reserves this much.
const MAX_PREALLOC: usize = 4096;

/// The node limits of the configuration (stream-node-max-bytes and
/// stream-node-max-entries, 0 = no limit).
#[derive(Clone, Copy, Debug)]
pub struct NodeLimits {
    pub max_bytes: usize,
    pub max_entries: usize,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// How XADD chose the new entry's ID.
#[derive(Clone, Copy, Debug)]
pub enum NewId {
    /// `*`: from the clock, or the last ID's successor.
    Auto,
    /// `<ms>-*`: the sequence is generated.
    AutoSeq(u64),
    /// `<ms>-<seq>`.
    Explicit(StreamId),
}

/// Why an entry could not be added (streamAppendItem's errno).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendError {
    /// EDOM: the ID is not greater than the stream's last ID.
    IdTooSmall,
    /// ERANGE: the fields and values together are too large.
    TooLarge,
    /// A generated sequence would overflow (Redis returns without setting
    /// errno, see `streams.rs`).
    SeqExhausted,
}

/// How to trim (XADD and XTRIM's MAXLEN / MINID).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimStrategy {
    MaxLen(u64),
    MinId(StreamId),
}

/// A trim request: the strategy, `~` (whole nodes only) and the most
/// entries one call may remove (0 = no limit).
#[derive(Clone, Copy, Debug)]
pub struct Trim {
    pub strategy: TrimStrategy,
    pub approx: bool,
    pub limit: u64,
}

/// The entries of a stream and its metadata: everything but the groups.
#[derive(Clone, Debug, Default)]
pub struct Entries {
    nodes: BTreeMap<StreamId, Vec<u8>>,
    /// Live entries.
    pub length: u64,
    /// The last ID ever added (or set by XSETID); 0-0 for a new stream.
    pub last_id: StreamId,
    /// The first live entry's ID, 0-0 when empty.
    pub first_id: StreamId,
    /// The greatest ID deleted by XDEL (trimming does not count).
    pub max_deleted_entry_id: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
}

/// A stream: its entries and its consumer groups, by name.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    pub entries: Entries,
    pub groups: BTreeMap<CompactBytes, ConsumerGroup>,
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Approximate bytes owned (MEMORY USAGE): the nodes' allocations, the
    /// map that holds them, and the groups with their PELs and consumers.
    pub fn heap_size(&self) -> usize {
        self.heap_size_with(usize::MAX)
    }

    /// `heap_size` with the entry nodes estimated from at most `samples`
    /// of them (used_memory's charge of a change: a bounded cost).
    pub fn heap_size_sampled(&self, samples: usize) -> usize {
        self.heap_size_with(samples.max(1))
    }

    fn heap_size_with(&self, samples: usize) -> usize {
        // A B-tree entry costs its key and value and about a third more in
        // node slack and edges.
        const MAP_ENTRY: usize = 16 + 24 + 16;
        let count = self.entries.nodes.len();
        let (seen, bytes) = self
            .entries
            .nodes
            .values()
            .take(samples)
            .fold((0usize, 0usize), |(n, b), lp| {
                (n + 1, b + lp.capacity() + MAP_ENTRY)
            });
        let nodes = (bytes * count).checked_div(seen).unwrap_or(0);
        let groups: usize = self
            .groups
            .iter()
            .map(|(name, g)| {
                name.heap_size() + std::mem::size_of::<ConsumerGroup>() + 32 + g.heap_size()
            })
            .sum();
        std::mem::size_of::<Stream>() + nodes + groups
    }
}

/// One entry seen through an iterator: its ID, flags and fields, borrowed
/// from its node.
#[derive(Clone, Copy)]
pub struct EntryRef<'a> {
    pub id: StreamId,
    pub flags: i64,
    lp: &'a [u8],
    /// Where the master fields start (for SAMEFIELDS entries).
    master_fields: usize,
    numfields: usize,
    /// The first field (or, for SAMEFIELDS entries, the first value).
    fields_at: Option<usize>,
}

impl<'a> EntryRef<'a> {
    pub fn num_fields(&self) -> usize {
        self.numfields
    }

    pub fn is_deleted(&self) -> bool {
        self.flags & FLAG_DELETED != 0
    }

    /// The field-value pairs.
    pub fn fields(&self) -> impl Iterator<Item = (Elem<'a>, Elem<'a>)> + 'a {
        let lp = self.lp;
        let same = self.flags & FLAG_SAMEFIELDS != 0;
        let mut master = same.then_some(self.master_fields);
        let mut p = self.fields_at;
        let mut left = self.numfields;
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            left -= 1;
            let field = if same {
                let m = master.expect("master fields for every value");
                master = lp::next(lp, m);
                lp::get(lp, m)
            } else {
                let f = p.expect("a field");
                p = lp::next(lp, f);
                lp::get(lp, f)
            };
            let v = p.expect("a value");
            p = lp::next(lp, v);
            Some((field, lp::get(lp, v)))
        })
    }
}

/// The master entry of a node.
struct Master {
    count: i64,
    deleted: i64,
    num_fields: usize,
    /// Position of the first master field (or of the terminator).
    fields_at: usize,
    /// Position of the zero that ends the master entry.
    terminator: usize,
}

fn master_of(lp: &[u8]) -> Master {
    let count_at = lp::first(lp).expect("a node has its master entry");
    let deleted_at = lp::next(lp, count_at).expect("deleted count");
    let nf_at = lp::next(lp, deleted_at).expect("master field count");
    let num_fields = lp::get_int(lp, nf_at).max(0) as usize;
    let fields_at = lp::next(lp, nf_at).expect("master entry terminator");
    let mut terminator = fields_at;
    for _ in 0..num_fields {
        terminator = lp::next(lp, terminator).expect("master field");
    }
    Master {
        count: lp::get_int(lp, count_at),
        deleted: lp::get_int(lp, deleted_at),
        num_fields,
        fields_at,
        terminator,
    }
}

/// Reads the entry whose flags are at `p`; returns it and the position of
/// its lp-count.
fn entry_at<'a>(lp: &'a [u8], p: usize, master_id: StreamId, m: &Master) -> (EntryRef<'a>, usize) {
    let flags = lp::get_int(lp, p);
    let ms_at = lp::next(lp, p).expect("ms delta");
    let seq_at = lp::next(lp, ms_at).expect("seq delta");
    // IDs are deltas from the master ID, stored as int64 (the difference
    // of two u64, so wrapping arithmetic undoes it).
    let id = StreamId {
        ms: master_id.ms.wrapping_add(lp::get_int(lp, ms_at) as u64),
        seq: master_id.seq.wrapping_add(lp::get_int(lp, seq_at) as u64),
    };
    let after_id = lp::next(lp, seq_at);
    let (numfields, fields_at, elements) = if flags & FLAG_SAMEFIELDS != 0 {
        (m.num_fields, after_id, m.num_fields)
    } else {
        let nf_at = after_id.expect("field count");
        let n = lp::get_int(lp, nf_at).max(0) as usize;
        (n, lp::next(lp, nf_at), n * 2)
    };
    let mut end = fields_at.expect("the entry's lp-count");
    for _ in 0..elements {
        end = lp::next(lp, end).expect("entry element");
    }
    (
        EntryRef {
            id,
            flags,
            lp,
            master_fields: m.fields_at,
            numfields,
            fields_at,
        },
        end,
    )
}

/// Iterates the entries between two IDs (both included), forwards or
/// backwards (streamIterator). Tombstones are skipped unless asked for.
pub struct Iter<'a> {
    nodes: std::collections::btree_map::Range<'a, StreamId, Vec<u8>>,
    rev: bool,
    start: StreamId,
    end: StreamId,
    skip_tombstones: bool,
    done: bool,
    cur: Option<NodeCursor<'a>>,
}

struct NodeCursor<'a> {
    master_id: StreamId,
    lp: &'a [u8],
    master: Master,
    /// Forward: the flags of the next entry. Backward: the lp-count of the
    /// next entry (the master's terminator once all are seen).
    pos: Option<usize>,
}

impl<'a> Iter<'a> {
    /// Also yields deleted entries (streamGetEdgeID without skipping).
    pub fn with_tombstones(mut self) -> Iter<'a> {
        self.skip_tombstones = false;
        self
    }

    fn open(&self, master_id: StreamId, lp: &'a [u8]) -> NodeCursor<'a> {
        let master = master_of(lp);
        let pos = if self.rev {
            lp::last(lp)
        } else {
            lp::next(lp, master.terminator)
        };
        NodeCursor {
            master_id,
            lp,
            master,
            pos,
        }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = EntryRef<'a>;

    fn next(&mut self) -> Option<EntryRef<'a>> {
        while !self.done {
            if self.cur.is_none() {
                let node = if self.rev {
                    self.nodes.next_back()
                } else {
                    self.nodes.next()
                };
                let Some((k, lp)) = node else {
                    self.done = true;
                    return None;
                };
                self.cur = Some(self.open(*k, lp));
            }
            let c = self.cur.as_mut().expect("a node is open");
            let lp = c.lp;
            let entry = if !self.rev {
                let Some(p) = c.pos else {
                    self.cur = None;
                    continue;
                };
                let (e, lp_count_at) = entry_at(lp, p, c.master_id, &c.master);
                c.pos = lp::next(lp, lp_count_at);
                e
            } else {
                let Some(p) = c.pos else {
                    self.cur = None;
                    continue;
                };
                let back = lp::get_int(lp, p);
                if back <= 0 {
                    // The master entry's terminator: this node is done.
                    self.cur = None;
                    continue;
                }
                let mut flags_at = p;
                for _ in 0..back {
                    flags_at = lp::prev(lp, flags_at).expect("entry element");
                }
                let (e, _) = entry_at(lp, flags_at, c.master_id, &c.master);
                c.pos = lp::prev(lp, flags_at);
                e
            };
            if self.skip_tombstones && entry.is_deleted() {
                continue;
            }
            if !self.rev {
                if entry.id < self.start {
                    continue;
                }
                if entry.id > self.end {
                    self.done = true;
                    return None;
                }
            } else {
                if entry.id > self.end {
                    continue;
                }
                if entry.id < self.start {
                    self.done = true;
                    return None;
                }
            }
            return Some(entry);
        }
        None
    }
}

impl Entries {
    /// Number of nodes (XINFO STREAM's radix-tree-keys).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The nodes in order: master ID and listpack (RDB writing, DEBUG).
    pub fn nodes(&self) -> impl Iterator<Item = (&StreamId, &Vec<u8>)> {
        self.nodes.iter()
    }

    /// Adds a node loaded from a file; false when its master ID is taken.
    pub fn insert_node(&mut self, master: StreamId, lp: Vec<u8>) -> bool {
        use std::collections::btree_map::Entry;
        match self.nodes.entry(master) {
            Entry::Occupied(_) => false,
            Entry::Vacant(v) => {
                v.insert(lp);
                true
            }
        }
    }

    /// The number of nodes of the radix tree Redis would hold for these
    /// master IDs (XINFO STREAM's radix-tree-nodes): the compressed trie
    /// of their 16-byte big-endian keys, counting the root and one leaf per
    /// key, as rax.c builds it.
    pub fn radix_tree_nodes(&self) -> usize {
        fn count(keys: &[[u8; 16]], depth: usize) -> usize {
            if depth == 16 {
                return 1;
            }
            let first = &keys[0];
            let last = &keys[keys.len() - 1];
            // Keys are sorted: the common prefix of all is that of the
            // first and the last.
            let common = (depth..16).take_while(|&i| first[i] == last[i]).count();
            if common > 0 {
                // One compressed node for the shared bytes.
                return 1 + count(keys, depth + common);
            }
            // A branching node, then each child's subtree.
            let mut n = 1;
            let mut i = 0;
            while i < keys.len() {
                let b = keys[i][depth];
                let j = i + keys[i..].iter().take_while(|k| k[depth] == b).count();
                n += count(&keys[i..j], depth + 1);
                i = j;
            }
            n
        }
        if self.nodes.is_empty() {
            return 1;
        }
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(|k| k.to_be_bytes()).collect();
        count(&keys, 0)
    }

    /// Iterates `start..=end` (None: from the first / to the last entry).
    pub fn range(&self, start: Option<StreamId>, end: Option<StreamId>, rev: bool) -> Iter<'_> {
        let start = start.unwrap_or(StreamId::MIN);
        let end = end.unwrap_or(StreamId::MAX);
        // The first node to look at is the last one whose master ID is at
        // most the bound (raxSeek "<="), or the first (last) node.
        let nodes = if !rev {
            match self.nodes.range(..=start).next_back() {
                Some((k, _)) if !start.is_zero() => self.nodes.range(*k..),
                _ => self.nodes.range(..),
            }
        } else {
            self.nodes.range(..=end)
        };
        Iter {
            nodes,
            rev,
            start,
            end,
            skip_tombstones: true,
            done: false,
            cur: None,
        }
    }

    /// All live entries in order.
    pub fn iter(&self) -> Iter<'_> {
        self.range(None, None, false)
    }

    /// The first or last entry, tombstones included or not
    /// (streamGetEdgeID); None for none.
    pub fn edge_id(&self, first: bool, skip_tombstones: bool) -> Option<StreamId> {
        let mut it = self.range(None, None, !first);
        it.skip_tombstones = skip_tombstones;
        it.next().map(|e| e.id)
    }

    /// The last live entry's ID (streamLastValidID); 0-0 when empty.
    pub fn last_valid_id(&self) -> StreamId {
        self.edge_id(false, true).unwrap_or(StreamId::MIN)
    }

    /// Whether a live entry with this ID exists (streamEntryExists).
    pub fn contains(&self, id: StreamId) -> bool {
        self.range(Some(id), Some(id), false).next().is_some()
    }

    /// The ID a new entry gets (the first half of streamAppendItem).
    pub fn next_id(&self, new: NewId, now_ms: u64) -> Result<StreamId, AppendError> {
        let id = match new {
            NewId::Explicit(id) => id,
            NewId::AutoSeq(ms) => {
                if self.last_id.ms == ms {
                    if self.last_id.seq == u64::MAX {
                        return Err(AppendError::SeqExhausted);
                    }
                    StreamId::new(ms, self.last_id.seq + 1)
                } else {
                    StreamId::new(ms, 0)
                }
            }
            // streamNextID: the clock, unless it is behind the last ID.
            NewId::Auto => {
                if now_ms > self.last_id.ms {
                    StreamId::new(now_ms, 0)
                } else {
                    let mut id = self.last_id;
                    id.incr();
                    id
                }
            }
        };
        if id <= self.last_id {
            return Err(AppendError::IdTooSmall);
        }
        Ok(id)
    }

    /// Adds an entry (streamAppendItem); `fields` alternates fields and
    /// values. Returns the new ID.
    pub fn append(
        &mut self,
        fields: &[&[u8]],
        new: NewId,
        now_ms: u64,
        limits: NodeLimits,
    ) -> Result<StreamId, AppendError> {
        let id = self.next_id(new, now_ms)?;
        let total: usize = fields.iter().map(|f| f.len()).sum();
        if total > LISTPACK_MAX_SIZE {
            return Err(AppendError::TooLarge);
        }
        let numfields = fields.len() / 2;

        // Can the tail node take it?
        let mut tail: Option<StreamId> = self.nodes.keys().next_back().copied();
        if let Some(k) = tail {
            let lp = self.nodes.get_mut(&k).expect("tail node");
            let max_bytes = if limits.max_bytes == 0 || limits.max_bytes > LISTPACK_MAX_SIZE {
                LISTPACK_MAX_SIZE
            } else {
                limits.max_bytes
            };
            let full = if lp.len() + total >= max_bytes {
                true
            } else if limits.max_entries != 0 {
                let m = master_of(lp);
                // Live and deleted entries both count.
                m.count.saturating_add(m.deleted) >= limits.max_entries as i64
            } else {
                false
            };
            if full {
                // The node is complete: give back what was reserved.
                lp.shrink_to_fit();
                tail = None;
            }
        }

        let mut flags = 0;
        let master_id = match tail {
            None => {
                let prealloc = if limits.max_bytes > 0 && limits.max_bytes < MAX_PREALLOC {
                    limits.max_bytes
                } else {
                    MAX_PREALLOC
                };
                let mut lp = lp::new(prealloc);
                lp::append_int(&mut lp, 1);
                lp::append_int(&mut lp, 0);
                lp::append_int(&mut lp, numfields as i64);
                for pair in fields.chunks(2) {
                    lp::append(&mut lp, pair[0]);
                }
                lp::append_int(&mut lp, 0);
                self.nodes.insert(id, lp);
                // The first entry has the master's fields by construction.
                flags |= FLAG_SAMEFIELDS;
                id
            }
            Some(k) => {
                let lp = self.nodes.get_mut(&k).expect("tail node");
                let count_at = lp::first(lp).expect("count");
                let count = lp::get_int(lp, count_at);
                lp::replace_int(lp, count_at, count.wrapping_add(1));
                let m = master_of(lp);
                if m.num_fields == numfields {
                    let mut p = Some(m.fields_at);
                    let same = fields.chunks(2).all(|pair| {
                        let at = p.expect("master field");
                        p = lp::next(lp, at);
                        lp::get(lp, at).with_bytes(|f| f == pair[0])
                    });
                    if same {
                        flags |= FLAG_SAMEFIELDS;
                    }
                }
                k
            }
        };

        let lp = self
            .nodes
            .get_mut(&master_id)
            .expect("the node just chosen");
        lp::append_int(lp, flags);
        lp::append_int(lp, id.ms.wrapping_sub(master_id.ms) as i64);
        lp::append_int(lp, id.seq.wrapping_sub(master_id.seq) as i64);
        let same = flags & FLAG_SAMEFIELDS != 0;
        if !same {
            lp::append_int(lp, numfields as i64);
        }
        for pair in fields.chunks(2) {
            if !same {
                lp::append(lp, pair[0]);
            }
            lp::append(lp, pair[1]);
        }
        // lp-count: the elements before it in this entry.
        let mut lp_count = numfields as i64 + 3;
        if !same {
            lp_count += numfields as i64 + 1;
        }
        lp::append_int(lp, lp_count);

        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
        Ok(id)
    }

    /// Marks the live entry `id` deleted (streamDeleteItem); false when
    /// there is none. Does not maintain first_id / max_deleted_entry_id
    /// (XDEL does, as in Redis).
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&master_id, _)) = self.nodes.range(..=id).next_back() else {
            return false;
        };
        let lp = self.nodes.get_mut(&master_id).expect("node found");
        let m = master_of(lp);
        let mut p = lp::next(lp, m.terminator);
        let mut found = None;
        while let Some(at) = p {
            let (e, lp_count_at) = entry_at(lp, at, master_id, &m);
            if e.id == id && !e.is_deleted() {
                found = Some((at, e.flags));
                break;
            }
            if e.id > id {
                break;
            }
            p = lp::next(lp, lp_count_at);
        }
        let Some((flags_at, flags)) = found else {
            return false;
        };
        lp::replace_int(lp, flags_at, flags | FLAG_DELETED);
        if m.count == 1 {
            // Its last live entry: the node goes.
            self.nodes.remove(&master_id);
        } else {
            let count_at = lp::first(lp).expect("count");
            lp::replace_int(lp, count_at, m.count.wrapping_sub(1));
            let deleted_at = lp::next(lp, count_at).expect("deleted");
            lp::replace_int(lp, deleted_at, m.deleted.wrapping_add(1));
        }
        self.length = self.length.saturating_sub(1);
        true
    }

    /// Trims from the oldest entries (streamTrim); returns how many went.
    pub fn trim(&mut self, t: Trim) -> u64 {
        let mut deleted: u64 = 0;
        // Always the first node: a node is either removed whole (the next
        // one is then first) or trimmed from within, which ends the trim.
        while let Some(&master_id) = self.nodes.keys().next() {
            if let TrimStrategy::MaxLen(maxlen) = t.strategy {
                if self.length <= maxlen {
                    break;
                }
            }
            let lp = self.nodes.get_mut(&master_id).expect("node listed");
            let m = master_of(lp);
            let entries = m.count.max(0) as u64;
            if t.limit != 0 && deleted.saturating_add(entries) > t.limit {
                break;
            }
            let remove_node = match t.strategy {
                TrimStrategy::MaxLen(maxlen) => self.length.saturating_sub(entries) >= maxlen,
                TrimStrategy::MinId(min) => {
                    // The node goes when its last entry (tombstone or not)
                    // is older than the minimum.
                    let last = node_last_id(lp, master_id, &m);
                    last.is_some_and(|l| l < min) || last.is_none()
                }
            };
            if remove_node {
                self.nodes.remove(&master_id);
                self.length = self.length.saturating_sub(entries);
                deleted += entries;
                continue;
            }
            if t.approx {
                break;
            }
            // Mark entries deleted from the start of this node.
            let mut removed: i64 = 0;
            let mut p = lp::next(lp, m.terminator);
            while let Some(at) = p {
                let (e, lp_count_at) = entry_at(lp, at, master_id, &m);
                let (id, flags) = (e.id, e.flags);
                let stop = match t.strategy {
                    TrimStrategy::MaxLen(maxlen) => self.length <= maxlen,
                    TrimStrategy::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                let mut next = lp::next(lp, lp_count_at);
                if flags & FLAG_DELETED == 0 {
                    // Setting bit 0 never changes an integer's encoded
                    // size; should it anyway, the positions after move.
                    let before = lp.len();
                    lp::replace_int(lp, at, flags | FLAG_DELETED);
                    if lp.len() != before {
                        next = next.map(|n| n + lp.len() - before);
                    }
                    removed += 1;
                    self.length = self.length.saturating_sub(1);
                }
                p = next;
            }
            deleted += removed as u64;
            let count_at = lp::first(lp).expect("count");
            lp::replace_int(lp, count_at, m.count.wrapping_sub(removed));
            let deleted_at = lp::next(lp, count_at).expect("deleted");
            lp::replace_int(lp, deleted_at, m.deleted.wrapping_add(removed));
            // Enough was removed from this node: later nodes are newer.
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.edge_id(true, true).unwrap_or(StreamId::MAX);
        }
        deleted
    }

    /// Redis's streamRangeHasTombstones: whether deleted entries may lie
    /// between `start` and `end` (None: the stream's edges).
    pub fn range_has_tombstones(&self, start: Option<StreamId>, end: Option<StreamId>) -> bool {
        if self.length == 0 || self.max_deleted_entry_id.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted_entry_id {
            return false;
        }
        let start = start.unwrap_or(StreamId::MIN);
        let end = end.unwrap_or(StreamId::MAX);
        start <= self.max_deleted_entry_id && self.max_deleted_entry_id <= end
    }

    /// Redis's streamEstimateDistanceFromFirstEverEntry: the logical read
    /// counter of `id`, when it can be known (None otherwise, Redis's
    /// SCG_INVALID_ENTRIES_READ).
    pub fn estimate_distance(&self, id: StreamId) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.length == 0 && id <= self.last_id {
            return Some(self.entries_added as i64);
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(self.entries_added as i64),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
        if self.max_deleted_entry_id.is_zero() || self.max_deleted_entry_id < self.first_id {
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => {
                    return Some(self.entries_added.wrapping_sub(self.length) as i64)
                }
                std::cmp::Ordering::Equal => {
                    return Some(self.entries_added.wrapping_sub(self.length).wrapping_add(1) as i64)
                }
                std::cmp::Ordering::Greater => {}
            }
        }
        None
    }
}

/// The last entry of a node, tombstone or not (lpGetEdgeStreamID).
fn node_last_id(lp: &[u8], master_id: StreamId, m: &Master) -> Option<StreamId> {
    let last = lp::last(lp)?;
    let back = lp::get_int(lp, last);
    if back <= 0 {
        return None;
    }
    let mut flags_at = last;
    for _ in 0..back {
        flags_at = lp::prev(lp, flags_at)?;
    }
    Some(entry_at(lp, flags_at, master_id, m).0.id)
}

/// Checks the entry structure of a node loaded from a file or payload
/// (streamValidateListpackIntegrity with deep checking, which Goblin always
/// does), after the listpack itself: the master entry, then count+deleted
/// entries whose lp-counts agree with their shapes, and nothing after.
/// Counts must also be non-negative (Redis would assert on them later).
pub fn validate_node(blob: &[u8]) -> bool {
    if !lp::validate(blob) {
        return false;
    }
    let int_at = |p: Option<usize>| -> Option<i64> { lp::int_if_valid(lp::get(blob, p?)) };
    let mut p = lp::first(blob);
    let Some(count) = int_at(p) else { return false };
    p = p.and_then(|q| lp::next(blob, q));
    let Some(deleted) = int_at(p) else {
        return false;
    };
    p = p.and_then(|q| lp::next(blob, q));
    let Some(master_fields) = int_at(p) else {
        return false;
    };
    if count < 0 || deleted < 0 || master_fields < 0 {
        return false;
    }
    for _ in 0..master_fields {
        p = p.and_then(|q| lp::next(blob, q));
        if p.is_none() {
            return false;
        }
    }
    p = p.and_then(|q| lp::next(blob, q));
    if int_at(p) != Some(0) {
        return false;
    }
    let Some(mut remaining) = count.checked_add(deleted) else {
        return false;
    };
    while remaining > 0 {
        remaining -= 1;
        p = p.and_then(|q| lp::next(blob, q));
        let Some(flags) = int_at(p) else { return false };
        // The ID's two deltas.
        for _ in 0..2 {
            p = p.and_then(|q| lp::next(blob, q));
            if int_at(p).is_none() {
                return false;
            }
        }
        let mut fields = master_fields;
        let mut extra = 3;
        if flags & FLAG_SAMEFIELDS == 0 {
            p = p.and_then(|q| lp::next(blob, q));
            let Some(n) = int_at(p) else { return false };
            if n < 0 {
                return false;
            }
            fields = n;
            for _ in 0..n {
                p = p.and_then(|q| lp::next(blob, q));
                if p.is_none() {
                    return false;
                }
            }
            extra += fields + 1;
        }
        for _ in 0..fields {
            p = p.and_then(|q| lp::next(blob, q));
            if p.is_none() {
                return false;
            }
        }
        p = p.and_then(|q| lp::next(blob, q));
        if int_at(p) != Some(fields + extra) {
            return false;
        }
    }
    // Nothing may follow the last entry.
    p.and_then(|q| lp::next(blob, q)).is_none()
}

#[cfg(test)]
mod tests;
