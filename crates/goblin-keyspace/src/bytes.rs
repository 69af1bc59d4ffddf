//! `CompactBytes`: the byte string used for keys and string values.
//!
//! Most keys and small values are short, so a string of up to
//! [`INLINE_CAP`] bytes lives inside the 24-byte handle itself and costs no
//! allocation (Redis gets the same effect with its "embstr" encoding). Longer
//! strings are a boxed slice; a string that has been grown in place
//! (APPEND, SETRANGE) becomes a growable vector so that repeated appends stay
//! amortised O(1), as Redis's greedy sds growth does. A string made from a
//! large argument keeps the buffer the argument was received in
//! ([`CompactBytes::from_bytes`]), as Redis stores the query buffer's sds
//! of a big bulk as the object itself: the bytes are held once.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Longest string stored inline.
pub const INLINE_CAP: usize = 22;

#[derive(Clone)]
pub struct CompactBytes(Repr);

#[derive(Clone)]
enum Repr {
    Inline {
        len: InlineLen,
        data: [u8; INLINE_CAP],
    },
    Boxed(Box<[u8]>),
    // Boxed so that the enum stays two words.
    #[allow(clippy::box_collection)]
    Growable(Box<Vec<u8>>),
    /// A received buffer, adopted as it is (boxed for the same reason).
    Shared(Box<bytes::Bytes>),
}

/// The inline length as an enum, so that the compiler knows the values
/// 23..=255 are never used and can pack enclosing enums (such as `Value`)
/// into the same 24 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
#[rustfmt::skip]
#[allow(dead_code)] // constructed by transmute from a checked length
enum InlineLen {
    L0, L1, L2, L3, L4, L5, L6, L7, L8, L9, L10, L11, L12, L13, L14, L15, L16,
    L17, L18, L19, L20, L21, L22,
}

impl InlineLen {
    fn new(len: usize) -> InlineLen {
        debug_assert!(len <= INLINE_CAP);
        // SAFETY: InlineLen is repr(u8) with discriminants 0..=22 and len <= 22.
        unsafe { std::mem::transmute::<u8, InlineLen>(len as u8) }
    }
}

impl CompactBytes {
    pub const fn new() -> CompactBytes {
        CompactBytes(Repr::Inline {
            len: InlineLen::L0,
            data: [0; INLINE_CAP],
        })
    }

    pub fn from_slice(s: &[u8]) -> CompactBytes {
        if s.len() <= INLINE_CAP {
            let mut data = [0u8; INLINE_CAP];
            data[..s.len()].copy_from_slice(s);
            CompactBytes(Repr::Inline {
                len: InlineLen::new(s.len()),
                data,
            })
        } else {
            CompactBytes(Repr::Boxed(s.into()))
        }
    }

    /// Adopts `b` without copying it (short strings are still inline).
    /// Until the buffer's other holders let go, it is shared with them.
    pub fn from_bytes(b: bytes::Bytes) -> CompactBytes {
        if b.len() <= INLINE_CAP {
            CompactBytes::from_slice(&b)
        } else {
            CompactBytes(Repr::Shared(Box::new(b)))
        }
    }

    pub fn from_vec(v: Vec<u8>) -> CompactBytes {
        if v.len() <= INLINE_CAP {
            CompactBytes::from_slice(&v)
        } else {
            CompactBytes(Repr::Boxed(v.into_boxed_slice()))
        }
    }

    /// Formats an integer without an intermediate allocation.
    pub fn from_i64(n: i64) -> CompactBytes {
        let mut buf = itoa::Buffer::new();
        CompactBytes::from_slice(buf.format(n).as_bytes())
    }

    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, data } => &data[..*len as usize],
            Repr::Boxed(b) => b,
            Repr::Growable(v) => v,
            Repr::Shared(b) => b,
        }
    }

    /// Mutable access that may grow the string; converts to the growable form.
    pub fn make_growable(&mut self) -> &mut Vec<u8> {
        if !matches!(self.0, Repr::Growable(_)) {
            let v = match std::mem::take(self).0 {
                // The buffer itself when nothing else holds it.
                Repr::Shared(b) => Vec::from(*b),
                other => CompactBytes(other).as_slice().to_vec(),
            };
            self.0 = Repr::Growable(Box::new(v));
        }
        match &mut self.0 {
            Repr::Growable(v) => v,
            _ => unreachable!(),
        }
    }

    /// True when the string was grown in place (Redis reports such strings as "raw").
    pub fn is_growable(&self) -> bool {
        matches!(self.0, Repr::Growable(_))
    }

    /// Bytes of heap memory owned beyond the handle itself.
    pub fn heap_size(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => 0,
            Repr::Boxed(b) => b.len(),
            Repr::Growable(v) => v.capacity() + std::mem::size_of::<Vec<u8>>(),
            Repr::Shared(b) => b.len() + std::mem::size_of::<bytes::Bytes>(),
        }
    }

    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Growable(v) => *v,
            Repr::Boxed(b) => b.into_vec(),
            Repr::Shared(b) => Vec::from(*b),
            Repr::Inline { .. } => self.as_slice().to_vec(),
        }
    }
}

impl Default for CompactBytes {
    fn default() -> Self {
        CompactBytes::new()
    }
}

impl Deref for CompactBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for CompactBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::borrow::Borrow<[u8]> for CompactBytes {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for CompactBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for CompactBytes {}

impl PartialOrd for CompactBytes {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for CompactBytes {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl Hash for CompactBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl From<&[u8]> for CompactBytes {
    fn from(s: &[u8]) -> Self {
        CompactBytes::from_slice(s)
    }
}
impl From<&str> for CompactBytes {
    fn from(s: &str) -> Self {
        CompactBytes::from_slice(s.as_bytes())
    }
}
impl From<Vec<u8>> for CompactBytes {
    fn from(v: Vec<u8>) -> Self {
        CompactBytes::from_vec(v)
    }
}

impl fmt::Debug for CompactBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A received buffer is kept as it is, and given up to the growable
    /// form without a copy once nothing else holds it.
    #[test]
    fn adopted_buffers_are_kept_and_grown_in_place() {
        let b = bytes::Bytes::from(vec![7u8; 100]);
        let at = b.as_ptr();
        let mut s = CompactBytes::from_bytes(b);
        assert_eq!(s.as_ptr(), at);
        assert_eq!(s.as_slice(), &[7u8; 100][..]);
        assert_eq!(s.heap_size(), 100 + std::mem::size_of::<bytes::Bytes>());
        let copy = s.clone();
        s.make_growable().push(8);
        assert_eq!(s.len(), 101);
        assert_eq!(copy.len(), 100);
        drop(copy);
        let mut t = CompactBytes::from_bytes(bytes::Bytes::from(vec![1u8; 50]));
        let at = t.as_ptr();
        assert_eq!(t.make_growable().as_ptr(), at);
        assert_eq!(
            CompactBytes::from_bytes(bytes::Bytes::from_static(b"short")),
            "short".into()
        );
    }

    #[test]
    fn handle_is_three_words() {
        assert_eq!(std::mem::size_of::<CompactBytes>(), 24);
    }

    #[test]
    fn inline_boxed_and_growable_round_trip() {
        for len in [0usize, 1, 21, 22, 23, 100] {
            let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut b = CompactBytes::from_slice(&data);
            assert_eq!(b.as_slice(), &data[..]);
            b.make_growable().extend_from_slice(b"xy");
            assert_eq!(&b[..len], &data[..]);
            assert_eq!(&b[len..], b"xy");
            assert!(b.is_growable());
        }
    }
}
