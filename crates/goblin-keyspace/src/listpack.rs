//! `Listpack`: the compact form of a small collection, after Redis's
//! listpack: every entry in one contiguous buffer, in insertion order.
//!
//! An entry is its length (LEB128 varint) followed by its bytes. A small
//! hash of 20-byte fields and values costs about 22 bytes per string here,
//! against 48 or more per entry in a hash table, and a look-up is a linear
//! scan of one cache-friendly buffer, which for the sizes the
//! `*-max-listpack-*` parameters allow is as fast as hashing.
//!
//! Positions are byte offsets into the buffer; an offset is valid until the
//! next change. Hashes store fields and values as alternating entries.

#[derive(Clone, Default)]
pub struct Listpack {
    buf: Vec<u8>,
    len: usize,
}

/// Redis's LISTPACK_MAX_SAFETY_SIZE: a listpack about to grow beyond this
/// is converted to the large form instead (lpSafeToAdd).
pub const MAX_SAFE_BYTES: usize = 1 << 30;

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: usize) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn varint_len(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

impl Listpack {
    pub const fn new() -> Listpack {
        Listpack {
            buf: Vec::new(),
            len: 0,
        }
    }

    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size of the encoded entries.
    #[inline]
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    pub fn heap_size(&self) -> usize {
        self.buf.capacity()
    }

    /// True when adding `more` bytes keeps the listpack within Redis's
    /// safety limit (lpSafeToAdd).
    pub fn safe_to_add(&self, more: usize) -> bool {
        self.buf.len().saturating_add(more) <= MAX_SAFE_BYTES
    }

    /// The entry at `off` and the offset of the next one.
    #[inline]
    pub fn entry_at(&self, off: usize) -> (&[u8], usize) {
        let mut len = 0usize;
        let mut shift = 0;
        let mut p = off;
        loop {
            let b = self.buf[p];
            p += 1;
            len |= ((b & 0x7F) as usize) << shift;
            if b < 0x80 {
                break;
            }
            shift += 7;
        }
        (&self.buf[p..p + len], p + len)
    }

    /// Appends an entry. The buffer grows to the exact size, as Redis
    /// reallocates a listpack: small collections are many, and a doubling
    /// vector would waste up to half of each.
    pub fn push(&mut self, entry: &[u8]) {
        self.buf
            .reserve_exact(varint_len(entry.len()) + entry.len());
        put_varint(&mut self.buf, entry.len());
        self.buf.extend_from_slice(entry);
        self.len += 1;
    }

    /// Appends two entries (a hash's field and its value), growing the
    /// buffer once.
    pub fn push_pair(&mut self, first: &[u8], second: &[u8]) {
        self.buf.reserve_exact(
            varint_len(first.len()) + first.len() + varint_len(second.len()) + second.len(),
        );
        for entry in [first, second] {
            put_varint(&mut self.buf, entry.len());
            self.buf.extend_from_slice(entry);
        }
        self.len += 2;
    }

    /// Replaces the entry at `off`, in place: the entries after it move
    /// only when its size changes.
    pub fn replace(&mut self, off: usize, entry: &[u8]) {
        let (_, end) = self.entry_at(off);
        let new_size = varint_len(entry.len()) + entry.len();
        let old_size = end - off;
        let tail = self.buf.len();
        if new_size > old_size {
            let grow = new_size - old_size;
            self.buf.reserve_exact(grow);
            self.buf.resize(tail + grow, 0);
            self.buf.copy_within(end..tail, end + grow);
        } else if new_size < old_size {
            self.buf.copy_within(end..tail, off + new_size);
            self.buf.truncate(tail - (old_size - new_size));
        }
        let mut p = off;
        let mut v = entry.len();
        while v >= 0x80 {
            self.buf[p] = (v as u8) | 0x80;
            v >>= 7;
            p += 1;
        }
        self.buf[p] = v as u8;
        self.buf[p + 1..off + new_size].copy_from_slice(entry);
    }

    /// Inserts entries before the entry at `off` (at the end when `off` is
    /// the buffer's size).
    pub fn insert(&mut self, off: usize, entries: &[&[u8]]) {
        let mut encoded = Vec::new();
        for e in entries {
            put_varint(&mut encoded, e.len());
            encoded.extend_from_slice(e);
        }
        self.buf.reserve_exact(encoded.len());
        self.buf.splice(off..off, encoded);
        self.len += entries.len();
    }

    /// Removes `n` consecutive entries starting at `off`.
    pub fn remove(&mut self, off: usize, n: usize) {
        let mut end = off;
        for _ in 0..n {
            end = self.entry_at(end).1;
        }
        self.buf.drain(off..end);
        self.len -= n;
        // Give memory back when the collection shrank a lot.
        if self.buf.capacity() > 64 && self.buf.capacity() > self.buf.len() * 2 {
            self.buf.shrink_to_fit();
        }
    }

    /// Entries in order.
    pub fn iter(&self) -> Entries<'_> {
        Entries { lp: self, off: 0 }
    }

    /// Entries in order with their offsets.
    pub fn iter_offsets(&self) -> impl Iterator<Item = (usize, &[u8])> + '_ {
        let mut off = 0;
        std::iter::from_fn(move || {
            if off >= self.buf.len() {
                return None;
            }
            let at = off;
            let (e, next) = self.entry_at(off);
            off = next;
            Some((at, e))
        })
    }
}

pub struct Entries<'a> {
    lp: &'a Listpack,
    off: usize,
}

impl<'a> Iterator for Entries<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.off >= self.lp.buf.len() {
            return None;
        }
        let (e, next) = self.lp.entry_at(self.off);
        self.off = next;
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_replace_remove() {
        let mut lp = Listpack::new();
        let long = vec![b'x'; 300];
        lp.push(b"a");
        lp.push(&long);
        lp.push(b"");
        lp.push(b"ccc");
        assert_eq!(lp.len(), 4);
        let all: Vec<&[u8]> = lp.iter().collect();
        assert_eq!(all, vec![&b"a"[..], &long[..], &b""[..], &b"ccc"[..]]);
        // Replace the long entry with a short one and back.
        let off = lp.iter_offsets().nth(1).unwrap().0;
        lp.replace(off, b"bb");
        assert_eq!(lp.iter().nth(1), Some(&b"bb"[..]));
        lp.replace(off, &long);
        assert_eq!(lp.iter().nth(1), Some(&long[..]));
        assert_eq!(lp.iter().nth(3), Some(&b"ccc"[..]));
        // Same size: the neighbours stay where they are.
        let last = lp.iter_offsets().nth(3).unwrap().0;
        lp.replace(last, b"ddd");
        assert_eq!(lp.iter_offsets().nth(3).unwrap().0, last);
        lp.replace(last, b"ccc");
        // Remove two entries from the middle.
        lp.remove(off, 2);
        let all: Vec<&[u8]> = lp.iter().collect();
        assert_eq!(all, vec![&b"a"[..], &b"ccc"[..]]);
        assert_eq!(lp.len(), 2);
        lp.push_pair(b"field", &long);
        let all: Vec<&[u8]> = lp.iter().collect();
        assert_eq!(all, vec![&b"a"[..], &b"ccc"[..], &b"field"[..], &long[..]]);
        assert_eq!(lp.bytes(), 2 + 4 + 6 + 2 + long.len());
    }
}
