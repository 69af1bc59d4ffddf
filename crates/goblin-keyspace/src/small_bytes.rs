//! `SmallBytes`: a 16-byte byte-string handle, for the fields stored in the
//! tables of large hashes.
//!
//! A hash-table entry holds its chain link, the field and the value (a
//! one-word `ThinBytes`). With this 16-byte field handle the entry is 32
//! bytes, the size of Redis's dictEntry. Fields of up to
//! [`SMALL_INLINE_CAP`] bytes live in the handle itself; longer ones are
//! one exact-size heap allocation, like Redis's sds strings but without a
//! header.
//!
//! Layout: 16 bytes. The last byte is the tag: `0..=15` is the length of an
//! inline string stored in bytes `0..15`; `HEAP_TAG` (0xFF) means bytes `0..8`
//! hold the pointer of a boxed slice and bytes `8..15` its length (56 bits,
//! little endian).

use std::mem::MaybeUninit;
use std::ptr;

/// Longest string stored inline.
pub const SMALL_INLINE_CAP: usize = 15;
const HEAP_TAG: u8 = 0xFF;
/// Lengths must fit the 7 length bytes of the heap form.
const MAX_LEN: usize = (1 << 56) - 1;

#[repr(C, align(8))]
pub struct SmallBytes {
    /// Heap form: the data pointer (kept as a pointer so that it keeps its
    /// provenance). Inline form: the first 8 data bytes.
    word: MaybeUninit<*mut u8>,
    /// Heap form: the length. Inline form: data bytes 8..15.
    rest: [u8; 7],
    tag: u8,
}

// SAFETY: a `SmallBytes` owns its heap slice exclusively (like a `Box<[u8]>`)
// and offers only `&[u8]` through shared references.
unsafe impl Send for SmallBytes {}
// SAFETY: as above; no interior mutability.
unsafe impl Sync for SmallBytes {}

impl SmallBytes {
    pub fn from_slice(s: &[u8]) -> SmallBytes {
        if s.len() <= SMALL_INLINE_CAP {
            let mut v = SmallBytes {
                word: MaybeUninit::new(ptr::null_mut()),
                rest: [0; 7],
                tag: s.len() as u8,
            };
            // SAFETY: `word` and `rest` are the first 15 bytes of the repr(C)
            // struct, contiguous, and s.len() <= 15.
            unsafe {
                ptr::copy_nonoverlapping(s.as_ptr(), &mut v as *mut SmallBytes as *mut u8, s.len())
            };
            v
        } else {
            assert!(s.len() <= MAX_LEN, "string too long for SmallBytes");
            let boxed: Box<[u8]> = s.into();
            let len = boxed.len();
            let p = Box::into_raw(boxed) as *mut u8;
            let mut rest = [0u8; 7];
            rest.copy_from_slice(&(len as u64).to_le_bytes()[..7]);
            SmallBytes {
                word: MaybeUninit::new(p),
                rest,
                tag: HEAP_TAG,
            }
        }
    }

    #[inline]
    fn is_heap(&self) -> bool {
        self.tag == HEAP_TAG
    }

    #[inline]
    fn heap_len(&self) -> usize {
        let mut b = [0u8; 8];
        b[..7].copy_from_slice(&self.rest);
        u64::from_le_bytes(b) as usize
    }

    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        if self.is_heap() {
            // SAFETY: in the heap form `word` holds the pointer of a live
            // boxed slice of `heap_len()` bytes owned by `self`.
            unsafe { std::slice::from_raw_parts(self.word.assume_init(), self.heap_len()) }
        } else {
            // SAFETY: in the inline form the first `tag` (<= 15) bytes of the
            // struct are initialised data bytes.
            unsafe {
                std::slice::from_raw_parts(
                    self as *const SmallBytes as *const u8,
                    self.tag as usize,
                )
            }
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        if self.is_heap() {
            self.heap_len()
        } else {
            self.tag as usize
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes owned beyond the handle.
    pub fn heap_size(&self) -> usize {
        if self.is_heap() {
            self.heap_len()
        } else {
            0
        }
    }
}

impl super::dict::DictKey for SmallBytes {
    #[inline]
    fn from_slice(s: &[u8]) -> Self {
        SmallBytes::from_slice(s)
    }
}

impl Drop for SmallBytes {
    fn drop(&mut self) {
        if self.is_heap() {
            // SAFETY: the heap form owns a slice made by Box::into_raw in
            // `from_slice`, with this pointer and length; it is freed once.
            unsafe {
                let p = self.word.assume_init();
                drop(Box::from_raw(ptr::slice_from_raw_parts_mut(
                    p,
                    self.heap_len(),
                )));
            }
        }
    }
}

impl Clone for SmallBytes {
    fn clone(&self) -> Self {
        SmallBytes::from_slice(self.as_slice())
    }
}

impl std::ops::Deref for SmallBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for SmallBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for SmallBytes {}

impl std::fmt::Debug for SmallBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_is_two_words() {
        assert_eq!(std::mem::size_of::<SmallBytes>(), 16);
    }

    #[test]
    fn inline_and_heap_round_trip() {
        for len in [0usize, 1, 7, 8, 14, 15, 16, 17, 100, 70000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let b = SmallBytes::from_slice(&data);
            assert_eq!(b.as_slice(), &data[..]);
            assert_eq!(b.len(), len);
            assert_eq!(b.is_heap(), len > SMALL_INLINE_CAP);
            let c = b.clone();
            drop(b);
            assert_eq!(c.as_slice(), &data[..]);
        }
    }
}
