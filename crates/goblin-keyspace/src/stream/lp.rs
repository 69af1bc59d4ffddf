//! The listpack of one stream node, in Redis's own byte format
//! (listpack.c): `<total-bytes u32 LE><count u16 LE> entries... 0xFF`,
//! every entry its encoding, its data and a back-length so that it can be
//! walked in both directions.
//!
//! Stream nodes keep Redis's format in memory (rather than Goblin's
//! `keyspace::listpack`) because a stream's behaviour depends on its
//! nodes' byte sizes: a node is closed when it reaches
//! `stream-node-max-bytes`, and approximate trimming removes whole nodes,
//! so XTRIM MAXLEN ~ leaves exactly as many entries as on Redis only if
//! the nodes are the same. The same bytes also make the node's RDB form
//! (written and loaded verbatim) and its memory cost Redis's.
//!
//! Positions are byte offsets of entries. Every function here expects a
//! well-formed listpack: nodes are built by `Entries` or checked by
//! `validate_node` when loaded.

use crate::packed::{self, Elem};
use goblin_num::parse_i64;

/// Size of the header (total bytes, element count).
pub const HEADER: usize = 6;
const EOF: u8 = 0xFF;
/// The element count of a listpack too long to count in the header.
const COUNT_UNKNOWN: u16 = u16::MAX;

/// An empty listpack with room for `prealloc` bytes (lpNew).
pub fn new(prealloc: usize) -> Vec<u8> {
    let mut lp = Vec::with_capacity(prealloc.max(HEADER + 1));
    lp.extend_from_slice(&[(HEADER + 1) as u8, 0, 0, 0, 0, 0, EOF]);
    lp
}

/// Size of an entry's encoding and data (without its back-length).
#[inline]
fn encoded_size(lp: &[u8], p: usize) -> usize {
    let b = lp[p];
    if b & 0x80 == 0 {
        1
    } else if b & 0xC0 == 0x80 {
        1 + (b & 0x3F) as usize
    } else if b & 0xE0 == 0xC0 {
        2
    } else if b & 0xF0 == 0xE0 {
        2 + ((((b & 0x0F) as usize) << 8) | lp[p + 1] as usize)
    } else {
        match b {
            0xF0 => 5 + u32::from_le_bytes([lp[p + 1], lp[p + 2], lp[p + 3], lp[p + 4]]) as usize,
            0xF1 => 3,
            0xF2 => 4,
            0xF3 => 5,
            _ => 9,
        }
    }
}

#[inline]
fn backlen_size(l: usize) -> usize {
    if l <= 127 {
        1
    } else if l < 16383 {
        2
    } else if l < 2097151 {
        3
    } else if l < 268435455 {
        4
    } else {
        5
    }
}

/// The whole size of the entry at `p`.
#[inline]
fn entry_size(lp: &[u8], p: usize) -> usize {
    let enc = encoded_size(lp, p);
    enc + backlen_size(enc)
}

/// The first entry, if any.
#[inline]
pub fn first(lp: &[u8]) -> Option<usize> {
    (lp[HEADER] != EOF).then_some(HEADER)
}

/// The entry after `p`, if any.
#[inline]
pub fn next(lp: &[u8], p: usize) -> Option<usize> {
    let q = p + entry_size(lp, p);
    (lp[q] != EOF).then_some(q)
}

/// The entry before `p` (which may be the terminator's position), if any.
#[inline]
pub fn prev(lp: &[u8], p: usize) -> Option<usize> {
    if p <= HEADER {
        return None;
    }
    // The back-length ends right before `p`: its last byte holds the low
    // seven bits, and bit 7 says that more bytes precede (lpDecodeBacklen,
    // at most five bytes). The entry starts that many bytes, and the
    // back-length's own size, before `p` (lpPrev).
    let mut q = p - 1;
    let mut len = 0usize;
    let mut shift = 0;
    loop {
        let b = lp[q];
        len |= ((b & 127) as usize) << shift;
        if b & 128 == 0 || shift == 28 {
            break;
        }
        q -= 1;
        shift += 7;
    }
    Some(p - backlen_size(len) - len)
}

/// The last entry, if any.
#[inline]
pub fn last(lp: &[u8]) -> Option<usize> {
    prev(lp, lp.len() - 1)
}

/// The entry at `p`.
#[inline]
pub fn get(lp: &[u8], p: usize) -> Elem<'_> {
    let b = lp[p];
    if b & 0x80 == 0 {
        Elem::Int((b & 0x7F) as i64)
    } else if b & 0xC0 == 0x80 {
        let n = (b & 0x3F) as usize;
        Elem::Str(&lp[p + 1..p + 1 + n])
    } else if b & 0xE0 == 0xC0 {
        let u = (((b & 0x1F) as u16) << 8) | lp[p + 1] as u16;
        Elem::Int(if u >= 1 << 12 {
            u as i64 - (1 << 13)
        } else {
            u as i64
        })
    } else if b & 0xF0 == 0xE0 {
        let n = (((b & 0x0F) as usize) << 8) | lp[p + 1] as usize;
        Elem::Str(&lp[p + 2..p + 2 + n])
    } else {
        match b {
            0xF0 => {
                let n = u32::from_le_bytes([lp[p + 1], lp[p + 2], lp[p + 3], lp[p + 4]]) as usize;
                Elem::Str(&lp[p + 5..p + 5 + n])
            }
            0xF1 => Elem::Int(i16::from_le_bytes([lp[p + 1], lp[p + 2]]) as i64),
            0xF2 => {
                let u = (lp[p + 1] as u32) | ((lp[p + 2] as u32) << 8) | ((lp[p + 3] as u32) << 16);
                Elem::Int(((u << 8) as i32 >> 8) as i64)
            }
            0xF3 => {
                Elem::Int(i32::from_le_bytes([lp[p + 1], lp[p + 2], lp[p + 3], lp[p + 4]]) as i64)
            }
            _ => Elem::Int(i64::from_le_bytes(
                lp[p + 1..p + 9].try_into().expect("eight bytes"),
            )),
        }
    }
}

/// The entry at `p` as an integer (Redis's lpGetInteger: a string entry is
/// parsed; `validate_node` made sure it parses).
#[inline]
pub fn get_int(lp: &[u8], p: usize) -> i64 {
    int_of(get(lp, p))
}

/// An element as an integer, if it is one (lpGetIntegerIfValid).
pub fn int_if_valid(e: Elem<'_>) -> Option<i64> {
    match e {
        Elem::Int(v) => Some(v),
        Elem::Str(s) => parse_i64(s),
    }
}

#[inline]
fn int_of(e: Elem<'_>) -> i64 {
    int_if_valid(e).unwrap_or(0)
}

fn set_total(lp: &mut [u8]) {
    let total = lp.len() as u32;
    lp[0..4].copy_from_slice(&total.to_le_bytes());
}

/// Appends an entry written by `encode` (which pushes exactly one entry).
fn append_with(lp: &mut Vec<u8>, encode: impl FnOnce(&mut Vec<u8>)) {
    lp.pop();
    encode(lp);
    lp.push(EOF);
    set_total(lp);
    let count = u16::from_le_bytes([lp[4], lp[5]]);
    if count != COUNT_UNKNOWN {
        lp[4..6].copy_from_slice(&(count + 1).to_le_bytes());
    }
}

/// Appends a string, as an integer when it is one (lpAppend).
pub fn append(lp: &mut Vec<u8>, s: &[u8]) {
    append_with(lp, |out| packed::encode_entry(out, s));
}

/// Appends an integer (lpAppendInteger).
pub fn append_int(lp: &mut Vec<u8>, v: i64) {
    append_with(lp, |out| packed::encode_int(out, v));
}

/// Replaces the entry at `p` with an integer (lpReplaceInteger). The
/// entry may change size; positions after it move accordingly.
pub fn replace_int(lp: &mut Vec<u8>, p: usize, v: i64) {
    let mut enc = Vec::with_capacity(10);
    packed::encode_int(&mut enc, v);
    let old = entry_size(lp, p);
    if enc.len() == old {
        lp[p..p + old].copy_from_slice(&enc);
    } else {
        lp.splice(p..p + old, enc);
        set_total(lp);
    }
}

/// Checks a listpack loaded from a file or payload entry by entry (Redis's
/// lpValidateIntegrity with deep checking): every entry inside the blob,
/// its back-length right, the header's size and count.
pub fn validate(blob: &[u8]) -> bool {
    packed::Listpack::parse(blob).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_both_ways_and_replaces() {
        let mut lp = new(64);
        let long = vec![b'x'; 300];
        append_int(&mut lp, 1);
        append(&mut lp, b"field");
        append(&mut lp, &long);
        append(&mut lp, b"-12345");
        append_int(&mut lp, 1 << 40);
        assert!(validate(&lp));
        let mut fwd = Vec::new();
        let mut p = first(&lp);
        while let Some(q) = p {
            fwd.push(get(&lp, q).to_vec());
            p = next(&lp, q);
        }
        let mut back = Vec::new();
        let mut p = last(&lp);
        while let Some(q) = p {
            back.push(get(&lp, q).to_vec());
            p = prev(&lp, q);
        }
        back.reverse();
        assert_eq!(fwd, back);
        assert_eq!(fwd[3], b"-12345");
        assert_eq!(get_int(&lp, last(&lp).unwrap()), 1 << 40);
        // Growing the first integer past one byte moves everything after it.
        replace_int(&mut lp, HEADER, 100_000);
        assert!(validate(&lp));
        assert_eq!(get_int(&lp, HEADER), 100_000);
        assert_eq!(get(&lp, next(&lp, HEADER).unwrap()), Elem::Str(b"field"));
        replace_int(&mut lp, HEADER, 3);
        assert!(validate(&lp));
        assert_eq!(u16::from_le_bytes([lp[4], lp[5]]), 5);
    }
}
