//! `ThinBytes`: a one-word byte-string handle, for the values stored in the
//! tables of large hashes.
//!
//! With a 16-byte field handle and this 8-byte value handle, a hash-table
//! entry (chain link, field, value) is 32 bytes: the size of Redis's
//! dictEntry, which holds only pointers. Every string then costs at most
//! what Redis's sds string costs, so a large Goblin hash never needs more
//! memory than Redis's for the same data, and short values cost nothing:
//! - up to [`THIN_INLINE_CAP`] bytes (7 on 64-bit) live in the word
//!   itself, tagged by its low bit (counters, flags, small numbers);
//! - longer strings are one heap block holding a LEB128 length and the
//!   bytes, a header of 1-3 bytes where sds needs 2-9.
//!
//! The inline form relies on little-endian byte order to hand out its bytes
//! as a slice; on big-endian targets every string takes the heap form.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::{self, NonNull};

/// Longest string stored in the word itself.
pub const THIN_INLINE_CAP: usize = if cfg!(target_endian = "little") {
    std::mem::size_of::<usize>() - 1
} else {
    0
};

/// Heap blocks are 2-aligned so that a heap pointer's low bit is clear.
const BLOCK_ALIGN: usize = 2;

pub struct ThinBytes(NonNull<u8>);

// SAFETY: a `ThinBytes` owns its heap block exclusively (like a `Box`) and
// offers only `&[u8]` through shared references.
unsafe impl Send for ThinBytes {}
// SAFETY: as above; no interior mutability.
unsafe impl Sync for ThinBytes {}

fn varint_len(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

impl ThinBytes {
    pub fn from_slice(s: &[u8]) -> ThinBytes {
        if s.len() <= THIN_INLINE_CAP {
            // Byte 0 (the low byte on little-endian): tag bit and length;
            // bytes 1..: the data.
            let mut word = [0u8; std::mem::size_of::<usize>()];
            word[0] = 1 | ((s.len() as u8) << 1);
            word[1..1 + s.len()].copy_from_slice(s);
            let bits = usize::from_le_bytes(word);
            let p = ptr::without_provenance_mut::<u8>(bits);
            return ThinBytes(NonNull::new(p).expect("tag bit set"));
        }
        let header = varint_len(s.len());
        let layout = Layout::from_size_align(header + s.len(), BLOCK_ALIGN).expect("string size");
        // SAFETY: the layout has a non-zero size (s.len() > THIN_INLINE_CAP
        // >= 0, plus a header byte).
        let p = unsafe { alloc(layout) };
        let Some(block) = NonNull::new(p) else {
            handle_alloc_error(layout)
        };
        // SAFETY: the block holds header + s.len() bytes; we write exactly
        // the varint header then the data.
        unsafe {
            let mut v = s.len();
            let mut q = p;
            while v >= 0x80 {
                *q = (v as u8) | 0x80;
                q = q.add(1);
                v >>= 7;
            }
            *q = v as u8;
            ptr::copy_nonoverlapping(s.as_ptr(), q.add(1), s.len());
        }
        ThinBytes(block)
    }

    #[inline]
    fn is_inline(&self) -> bool {
        self.0.as_ptr().addr() & 1 == 1
    }

    /// Length and offset of the data in the heap block.
    #[inline]
    fn heap_header(&self) -> (usize, usize) {
        let p = self.0.as_ptr();
        let mut len = 0usize;
        let mut shift = 0;
        let mut i = 0;
        loop {
            // SAFETY: the block starts with a complete varint (written by
            // `from_slice`).
            let b = unsafe { *p.add(i) };
            i += 1;
            len |= ((b & 0x7F) as usize) << shift;
            if b < 0x80 {
                return (len, i);
            }
            shift += 7;
        }
    }

    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        if self.is_inline() {
            let len = (self.0.as_ptr().addr() & 0xFF) >> 1;
            // SAFETY: the inline form exists only on little-endian targets,
            // where bytes 1..=len of the word's memory are the data.
            unsafe {
                std::slice::from_raw_parts((&self.0 as *const NonNull<u8> as *const u8).add(1), len)
            }
        } else {
            let (len, offset) = self.heap_header();
            // SAFETY: the block holds `len` data bytes after the header.
            unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(offset), len) }
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        if self.is_inline() {
            (self.0.as_ptr().addr() & 0xFF) >> 1
        } else {
            self.heap_header().0
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes owned beyond the handle.
    pub fn heap_size(&self) -> usize {
        if self.is_inline() {
            0
        } else {
            let (len, offset) = self.heap_header();
            len + offset
        }
    }
}

impl Drop for ThinBytes {
    fn drop(&mut self) {
        if !self.is_inline() {
            let (len, offset) = self.heap_header();
            // SAFETY: the heap form owns a block allocated in `from_slice`
            // with exactly this layout; it is freed once.
            unsafe {
                dealloc(
                    self.0.as_ptr(),
                    Layout::from_size_align_unchecked(offset + len, BLOCK_ALIGN),
                )
            };
        }
    }
}

impl Clone for ThinBytes {
    fn clone(&self) -> Self {
        ThinBytes::from_slice(self.as_slice())
    }
}

impl std::ops::Deref for ThinBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for ThinBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for ThinBytes {}

impl std::fmt::Debug for ThinBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_is_one_word() {
        assert_eq!(
            std::mem::size_of::<ThinBytes>(),
            std::mem::size_of::<usize>()
        );
        assert_eq!(
            std::mem::size_of::<Option<ThinBytes>>(),
            std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn inline_and_heap_round_trip() {
        for len in [
            0usize, 1, 6, 7, 8, 9, 127, 128, 129, 300, 16383, 16384, 70000,
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i * 13 + 1) as u8).collect();
            let b = ThinBytes::from_slice(&data);
            assert_eq!(b.as_slice(), &data[..], "len {len}");
            assert_eq!(b.len(), len);
            assert_eq!(b.is_inline(), len <= THIN_INLINE_CAP);
            let c = b.clone();
            drop(b);
            assert_eq!(&*c, &data[..]);
        }
        // Bytes with the high bit set and zero bytes inline.
        let b = ThinBytes::from_slice(&[0xFF, 0, 0x80, 1]);
        assert_eq!(&*b, &[0xFF, 0, 0x80, 1]);
    }
}
