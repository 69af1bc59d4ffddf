//! Redis's compact encodings, as they appear inside snapshots and DUMP
//! payloads: listpack (written and read), and the older ziplist, intset and
//! zipmap (intset written and read; ziplist and zipmap read only, for files
//! from older Redis versions).
//!
//! Goblin's own in-memory forms differ (see keyspace/listpack.rs); these
//! functions translate at the edge. Readers check every length against the
//! blob they were given, so a corrupt payload is an error, never a read
//! out of bounds.

use goblin_num::parse_i64;

/// One element of a listpack or ziplist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl Elem<'_> {
    /// The element as Redis would hand it to a command: integers in decimal.
    pub fn to_vec(self) -> Vec<u8> {
        match self {
            Elem::Int(v) => itoa::Buffer::new().format(v).as_bytes().to_vec(),
            Elem::Str(s) => s.to_vec(),
        }
    }

    pub fn with_bytes<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Elem::Int(v) => f(itoa::Buffer::new().format(v).as_bytes()),
            Elem::Str(s) => f(s),
        }
    }
}

/// Redis's lpStringToInt64 / string2ll over at most 20 bytes: the strings
/// a listpack stores as integers.
#[inline]
fn as_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= 21 {
        return None;
    }
    parse_i64(s)
}

// ---------------------------------------------------------------------------
// Listpack

/// Builds a listpack blob: `<total-bytes u32><count u16> entries... 0xFF`.
pub struct ListpackWriter {
    buf: Vec<u8>,
    count: usize,
}

impl Default for ListpackWriter {
    fn default() -> Self {
        ListpackWriter::new()
    }
}

/// Size of the backlen field for an entry of `l` bytes (lpEncodeBacklen).
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

fn put_backlen(out: &mut Vec<u8>, l: usize) {
    let l = l as u64;
    match backlen_size(l as usize) {
        1 => out.push(l as u8),
        2 => out.extend_from_slice(&[(l >> 7) as u8, ((l & 127) | 128) as u8]),
        3 => out.extend_from_slice(&[
            (l >> 14) as u8,
            (((l >> 7) & 127) | 128) as u8,
            ((l & 127) | 128) as u8,
        ]),
        4 => out.extend_from_slice(&[
            (l >> 21) as u8,
            (((l >> 14) & 127) | 128) as u8,
            (((l >> 7) & 127) | 128) as u8,
            ((l & 127) | 128) as u8,
        ]),
        _ => out.extend_from_slice(&[
            (l >> 28) as u8,
            (((l >> 21) & 127) | 128) as u8,
            (((l >> 14) & 127) | 128) as u8,
            (((l >> 7) & 127) | 128) as u8,
            ((l & 127) | 128) as u8,
        ]),
    }
}

/// Encoded size of a string entry (header + data + backlen), as Redis
/// would encode it: an integer-looking string takes the integer form.
pub fn listpack_entry_size(s: &[u8]) -> usize {
    let enc = match as_int(s) {
        Some(v) => int_encoded_len(v),
        None => str_header_len(s.len()) + s.len(),
    };
    enc + backlen_size(enc)
}

fn int_encoded_len(v: i64) -> usize {
    if (0..=127).contains(&v) {
        1
    } else if (-4096..=4095).contains(&v) {
        2
    } else if (-32768..=32767).contains(&v) {
        3
    } else if (-8388608..=8388607).contains(&v) {
        4
    } else if (-2147483648..=2147483647).contains(&v) {
        5
    } else {
        9
    }
}

fn str_header_len(n: usize) -> usize {
    if n < 64 {
        1
    } else if n < 4096 {
        2
    } else {
        5
    }
}

/// Appends one listpack entry holding `s` (encoding, data, backlen), as
/// Redis's lpAppend encodes it: an integer-looking string takes the
/// integer form.
pub fn encode_entry(out: &mut Vec<u8>, s: &[u8]) {
    match as_int(s) {
        Some(v) => encode_int(out, v),
        None => encode_str(out, s),
    }
}

/// Appends a string entry in string form, whatever it holds.
pub fn encode_str(out: &mut Vec<u8>, s: &[u8]) {
    let start = out.len();
    let n = s.len();
    if n < 64 {
        out.push(0x80 | n as u8);
    } else if n < 4096 {
        out.push(0xE0 | (n >> 8) as u8);
        out.push(n as u8);
    } else {
        out.push(0xF0);
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    out.extend_from_slice(s);
    let enc = out.len() - start;
    put_backlen(out, enc);
}

/// Appends an integer entry in the smallest of Redis's integer encodings.
pub fn encode_int(out: &mut Vec<u8>, v: i64) {
    let start = out.len();
    if (0..=127).contains(&v) {
        out.push(v as u8);
    } else if (-4096..=4095).contains(&v) {
        let u = if v < 0 { (1i64 << 13) + v } else { v } as u16;
        out.push(((u >> 8) as u8) | 0xC0);
        out.push(u as u8);
    } else if (-32768..=32767).contains(&v) {
        out.push(0xF1);
        out.extend_from_slice(&(v as i16).to_le_bytes());
    } else if (-8388608..=8388607).contains(&v) {
        out.push(0xF2);
        out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
    } else if (-2147483648..=2147483647).contains(&v) {
        out.push(0xF3);
        out.extend_from_slice(&(v as i32).to_le_bytes());
    } else {
        out.push(0xF4);
        out.extend_from_slice(&v.to_le_bytes());
    }
    let enc = out.len() - start;
    put_backlen(out, enc);
}

impl ListpackWriter {
    pub fn new() -> ListpackWriter {
        ListpackWriter {
            buf: vec![0; 6],
            count: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes the finished blob will take.
    pub fn bytes(&self) -> usize {
        self.buf.len() + 1
    }

    /// Appends a string, stored as an integer when it is one (lpAppend).
    pub fn push(&mut self, s: &[u8]) {
        encode_entry(&mut self.buf, s);
        self.count += 1;
    }

    pub fn push_int(&mut self, v: i64) {
        encode_int(&mut self.buf, v);
        self.count += 1;
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(0xFF);
        let total = self.buf.len() as u32;
        self.buf[0..4].copy_from_slice(&total.to_le_bytes());
        let count = self.count.min(u16::MAX as usize) as u16;
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

/// A listpack blob whose structure was validated: iterating it cannot fail.
pub struct Listpack<'a> {
    entries: &'a [u8],
    count: usize,
}

/// Why a compact blob was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

fn read_lp_entry(b: &[u8]) -> Result<(Elem<'_>, usize), Corrupt> {
    let first = *b.first().ok_or(Corrupt)?;
    let get = |from: usize, n: usize| b.get(from..from + n).ok_or(Corrupt);
    let (elem, enc) = if first & 0x80 == 0 {
        (Elem::Int((first & 0x7F) as i64), 1)
    } else if first & 0xC0 == 0x80 {
        let n = (first & 0x3F) as usize;
        (Elem::Str(get(1, n)?), 1 + n)
    } else if first & 0xE0 == 0xC0 {
        let u = (((first & 0x1F) as u16) << 8) | *b.get(1).ok_or(Corrupt)? as u16;
        let v = if u >= 1 << 12 {
            u as i64 - (1 << 13)
        } else {
            u as i64
        };
        (Elem::Int(v), 2)
    } else if first & 0xF0 == 0xE0 {
        let n = (((first & 0x0F) as usize) << 8) | *b.get(1).ok_or(Corrupt)? as usize;
        (Elem::Str(get(2, n)?), 2 + n)
    } else {
        match first {
            0xF0 => {
                let n = u32::from_le_bytes(get(1, 4)?.try_into().unwrap()) as usize;
                (Elem::Str(get(5, n)?), 5 + n)
            }
            0xF1 => (
                Elem::Int(i16::from_le_bytes(get(1, 2)?.try_into().unwrap()) as i64),
                3,
            ),
            0xF2 => {
                let p = get(1, 3)?;
                let u = (p[0] as u32) | ((p[1] as u32) << 8) | ((p[2] as u32) << 16);
                let v = ((u << 8) as i32 >> 8) as i64;
                (Elem::Int(v), 4)
            }
            0xF3 => (
                Elem::Int(i32::from_le_bytes(get(1, 4)?.try_into().unwrap()) as i64),
                5,
            ),
            0xF4 => (
                Elem::Int(i64::from_le_bytes(get(1, 8)?.try_into().unwrap())),
                9,
            ),
            _ => return Err(Corrupt),
        }
    };
    // The backlen must be the entry's size as Redis encodes it (its
    // continuation bits included): walking the listpack backwards (stream
    // nodes do) reads it to find where the entry starts.
    let bl = backlen_size(enc);
    let back = b.get(enc..enc + bl).ok_or(Corrupt)?;
    let mut expected = Vec::with_capacity(5);
    put_backlen(&mut expected, enc);
    if back != expected.as_slice() {
        return Err(Corrupt);
    }
    Ok((elem, enc + bl))
}

impl<'a> Listpack<'a> {
    /// Validates a whole listpack blob (header, every entry, terminator).
    pub fn parse(blob: &'a [u8]) -> Result<Listpack<'a>, Corrupt> {
        if blob.len() < 7 {
            return Err(Corrupt);
        }
        let total = u32::from_le_bytes(blob[0..4].try_into().unwrap()) as usize;
        let declared = u16::from_le_bytes(blob[4..6].try_into().unwrap()) as usize;
        if total != blob.len() || blob[total - 1] != 0xFF {
            return Err(Corrupt);
        }
        let entries = &blob[6..total - 1];
        let mut off = 0;
        let mut count = 0;
        while off < entries.len() {
            let (_, size) = read_lp_entry(&entries[off..])?;
            off += size;
            count += 1;
        }
        if declared != u16::MAX as usize && declared != count {
            return Err(Corrupt);
        }
        Ok(Listpack { entries, count })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = Elem<'a>> + 'a {
        let entries = self.entries;
        let mut off = 0;
        std::iter::from_fn(move || {
            if off >= entries.len() {
                return None;
            }
            let (e, size) = read_lp_entry(&entries[off..]).expect("validated listpack");
            off += size;
            Some(e)
        })
    }
}

// ---------------------------------------------------------------------------
// Ziplist (read only)

pub struct Ziplist<'a> {
    entries: Vec<Elem<'a>>,
}

impl<'a> Ziplist<'a> {
    /// Validates a whole ziplist blob as Redis's deep
    /// ziplistValidateIntegrity does: the header's byte count and tail
    /// offset, every entry's encoding and its record of the previous
    /// entry's size, the terminator, and the declared count.
    pub fn parse(blob: &'a [u8]) -> Result<Ziplist<'a>, Corrupt> {
        if blob.len() < 11 {
            return Err(Corrupt);
        }
        let total = u32::from_le_bytes(blob[0..4].try_into().unwrap()) as usize;
        let tail = u32::from_le_bytes(blob[4..8].try_into().unwrap()) as usize;
        let declared = u16::from_le_bytes(blob[8..10].try_into().unwrap()) as usize;
        if total != blob.len() || blob[total - 1] != 0xFF || tail > total - 1 {
            return Err(Corrupt);
        }
        let mut off = 10;
        let mut entries = Vec::new();
        let mut prev_size = 0usize;
        let mut last_start = None;
        let get = |from: usize, n: usize| blob.get(from..from + n).ok_or(Corrupt);
        while blob[off] != 0xFF {
            let start = off;
            let prevlen = if blob[off] < 254 {
                off += 1;
                blob[start] as usize
            } else {
                off += 5;
                u32::from_le_bytes(get(start + 1, 4)?.try_into().unwrap()) as usize
            };
            if prevlen != prev_size {
                return Err(Corrupt);
            }
            let enc = *blob.get(off).ok_or(Corrupt)?;
            let (elem, size) = match enc >> 6 {
                0 => {
                    let n = (enc & 0x3F) as usize;
                    (Elem::Str(get(off + 1, n)?), 1 + n)
                }
                1 => {
                    let n = (((enc & 0x3F) as usize) << 8)
                        | *blob.get(off + 1).ok_or(Corrupt)? as usize;
                    (Elem::Str(get(off + 2, n)?), 2 + n)
                }
                2 => {
                    let n = u32::from_be_bytes(get(off + 1, 4)?.try_into().unwrap()) as usize;
                    (Elem::Str(get(off + 5, n)?), 5 + n)
                }
                _ => match enc {
                    0xC0 => (
                        Elem::Int(i16::from_le_bytes(get(off + 1, 2)?.try_into().unwrap()) as i64),
                        3,
                    ),
                    0xD0 => (
                        Elem::Int(i32::from_le_bytes(get(off + 1, 4)?.try_into().unwrap()) as i64),
                        5,
                    ),
                    0xE0 => (
                        Elem::Int(i64::from_le_bytes(get(off + 1, 8)?.try_into().unwrap())),
                        9,
                    ),
                    0xF0 => {
                        let p = get(off + 1, 3)?;
                        let u = (p[0] as u32) | ((p[1] as u32) << 8) | ((p[2] as u32) << 16);
                        (Elem::Int(((u << 8) as i32 >> 8) as i64), 4)
                    }
                    0xFE => (
                        Elem::Int(*blob.get(off + 1).ok_or(Corrupt)? as i8 as i64),
                        2,
                    ),
                    0xF1..=0xFD => (Elem::Int((enc & 0x0F) as i64 - 1), 1),
                    _ => return Err(Corrupt),
                },
            };
            entries.push(elem);
            off += size;
            if off >= blob.len() {
                return Err(Corrupt);
            }
            prev_size = off - start;
            last_start = Some(start);
        }
        if off != total - 1 || (declared != u16::MAX as usize && declared != entries.len()) {
            return Err(Corrupt);
        }
        if last_start.is_some_and(|l| l != tail) {
            return Err(Corrupt);
        }
        Ok(Ziplist { entries })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = Elem<'a>> + '_ {
        self.entries.iter().copied()
    }
}

// ---------------------------------------------------------------------------
// Intset

/// An intset blob: `<encoding u32><length u32>` then sorted little-endian
/// integers of 2, 4 or 8 bytes.
pub fn intset_write(values: impl ExactSizeIterator<Item = i64> + Clone) -> Vec<u8> {
    let width: usize = values
        .clone()
        .map(|v| {
            if i16::try_from(v).is_ok() {
                2
            } else if i32::try_from(v).is_ok() {
                4
            } else {
                8
            }
        })
        .max()
        .unwrap_or(2);
    let mut out = Vec::with_capacity(8 + width * values.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for v in values {
        match width {
            2 => out.extend_from_slice(&(v as i16).to_le_bytes()),
            4 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            _ => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
    out
}

/// The integers of an intset blob, checked sorted and distinct.
pub fn intset_read(blob: &[u8]) -> Result<Vec<i64>, Corrupt> {
    if blob.len() < 8 {
        return Err(Corrupt);
    }
    let width = u32::from_le_bytes(blob[0..4].try_into().unwrap()) as usize;
    let count = u32::from_le_bytes(blob[4..8].try_into().unwrap()) as usize;
    if !matches!(width, 2 | 4 | 8) || count.checked_mul(width).map(|n| n + 8) != Some(blob.len()) {
        return Err(Corrupt);
    }
    let mut out = Vec::with_capacity(count);
    for chunk in blob[8..].chunks_exact(width) {
        let v = match width {
            2 => i16::from_le_bytes(chunk.try_into().unwrap()) as i64,
            4 => i32::from_le_bytes(chunk.try_into().unwrap()) as i64,
            _ => i64::from_le_bytes(chunk.try_into().unwrap()),
        };
        if out.last().is_some_and(|&last| last >= v) {
            return Err(Corrupt);
        }
        out.push(v);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Zipmap (read only: hashes of Redis 2.4 and older)

/// A field and its value, borrowed from a blob.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// The pairs of a zipmap blob, checked as Redis's deep
/// zipmapValidateIntegrity checks them: lengths inside the blob, a length
/// under 254 never in the 5-byte form, and the count in the header (when
/// under 254) equal to the pairs found. An empty zipmap reads as no pairs.
pub fn zipmap_read(blob: &[u8]) -> Result<Vec<Pair<'_>>, Corrupt> {
    let declared = *blob.first().ok_or(Corrupt)?;
    let mut off = 1; // zmlen
    let mut out = Vec::new();
    let len_at = |off: &mut usize| -> Result<Option<usize>, Corrupt> {
        let b = *blob.get(*off).ok_or(Corrupt)?;
        match b {
            255 => Ok(None),
            254 => {
                let n = u32::from_le_bytes(
                    blob.get(*off + 1..*off + 5)
                        .ok_or(Corrupt)?
                        .try_into()
                        .unwrap(),
                ) as usize;
                if n < 254 {
                    return Err(Corrupt);
                }
                *off += 5;
                Ok(Some(n))
            }
            n => {
                *off += 1;
                Ok(Some(n as usize))
            }
        }
    };
    while let Some(klen) = len_at(&mut off)? {
        let key = blob.get(off..off + klen).ok_or(Corrupt)?;
        off += klen;
        let vlen = len_at(&mut off)?.ok_or(Corrupt)?;
        let free = *blob.get(off).ok_or(Corrupt)? as usize;
        off += 1;
        let value = blob.get(off..off + vlen).ok_or(Corrupt)?;
        off += vlen + free;
        out.push((key, value));
    }
    if off + 1 != blob.len() || (declared < 254 && declared as usize != out.len()) {
        return Err(Corrupt);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_round_trip_every_encoding() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let values: Vec<Vec<u8>> = vec![
            b"0".to_vec(),
            b"127".to_vec(),
            b"128".to_vec(),
            b"-1".to_vec(),
            b"-4096".to_vec(),
            b"4095".to_vec(),
            b"30000".to_vec(),
            b"-32768".to_vec(),
            b"8388607".to_vec(),
            b"-8388608".to_vec(),
            b"2147483647".to_vec(),
            b"-2147483649".to_vec(),
            b"9223372036854775807".to_vec(),
            b"-9223372036854775808".to_vec(),
            b"007".to_vec(),
            b"".to_vec(),
            b"hello".to_vec(),
            mid,
            long,
        ];
        let mut w = ListpackWriter::new();
        for v in &values {
            w.push(v);
        }
        let blob = w.finish();
        let lp = Listpack::parse(&blob).unwrap();
        assert_eq!(lp.len(), values.len());
        let back: Vec<Vec<u8>> = lp.iter().map(|e| e.to_vec()).collect();
        assert_eq!(back, values);
    }

    #[test]
    fn listpack_matches_redis_bytes() {
        // lpAppend of "a", 1, "hello" as Redis writes it.
        let mut w = ListpackWriter::new();
        w.push(b"a");
        w.push(b"1");
        w.push(b"hello");
        let blob = w.finish();
        assert_eq!(
            blob,
            b"\x13\x00\x00\x00\x03\x00\x81a\x02\x01\x01\x85hello\x06\xff".to_vec()
        );
    }

    #[test]
    fn corrupt_listpacks_are_refused() {
        let mut w = ListpackWriter::new();
        w.push(b"abc");
        let blob = w.finish();
        for cut in 0..blob.len() {
            assert!(Listpack::parse(&blob[..cut]).is_err());
        }
        let mut bad = blob.clone();
        bad[6] = 0x85; // string longer than the blob
        assert!(Listpack::parse(&bad).is_err());
    }

    #[test]
    fn intset_round_trip() {
        let v = vec![-70000i64, -5, 0, 12, 40000];
        let blob = intset_write(v.iter().copied());
        assert_eq!(&blob[0..4], &4u32.to_le_bytes());
        assert_eq!(intset_read(&blob).unwrap(), v);
        assert!(intset_read(&blob[..blob.len() - 1]).is_err());
    }

    /// Payloads of the suite's corrupt-dump unit: a length under 254 in
    /// the 5-byte form (of a field, of a value), and a count in the header
    /// that disagrees with the pairs.
    #[test]
    fn zipmap_with_long_form_small_length_or_wrong_count_is_refused() {
        let good = b"\x01\x01k\x04\x00val1\xff";
        assert_eq!(zipmap_read(good).unwrap(), vec![(&b"k"[..], &b"val1"[..])]);
        let small_field = b"\x01\xfe\x04\x00\x00\x00\x01\x00\xff\x00\x04\x00val1\xff";
        assert!(zipmap_read(small_field).is_err());
        let small_value = b"\x01\x01k\xfe\x04\x00\x00\x00\x00val1\xff";
        assert!(zipmap_read(small_value).is_err());
        let count = b"\x02\x01k\x04\x00val1\xff";
        assert!(zipmap_read(count).is_err());
        // 254: the count is not kept in the header.
        let unknown = b"\xfe\x01k\x04\x00val1\xff";
        assert!(zipmap_read(unknown).is_ok());
    }

    /// A ziplist of the given raw entries (encoding and data), with its
    /// prevlen fields, tail offset and count as Redis writes them.
    fn ziplist_of(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut z = vec![0u8; 10];
        let mut prev = 0usize;
        let mut tail = 10usize;
        for e in entries {
            tail = z.len();
            z.push(prev as u8);
            z.extend_from_slice(e);
            prev = 1 + e.len();
        }
        z.push(0xFF);
        let total = z.len() as u32;
        z[0..4].copy_from_slice(&total.to_le_bytes());
        z[4..8].copy_from_slice(&(tail as u32).to_le_bytes());
        z[8..10].copy_from_slice(&(entries.len() as u16).to_le_bytes());
        z
    }

    #[test]
    fn ziplist_reads_every_encoding() {
        // A ziplist of "a", 12 (immediate), 300 (int16), 100000 (int24), "hello".
        let entries: Vec<Vec<u8>> = vec![
            vec![0x01, b'a'],
            vec![0xFD],
            [vec![0xC0], 300i16.to_le_bytes().to_vec()].concat(),
            [vec![0xF0], 100000i32.to_le_bytes()[..3].to_vec()].concat(),
            [vec![0x05], b"hello".to_vec()].concat(),
        ];
        let z = ziplist_of(&entries);
        let zl = Ziplist::parse(&z).unwrap();
        let got: Vec<Vec<u8>> = zl.iter().map(|e| e.to_vec()).collect();
        assert_eq!(
            got,
            vec![
                b"a".to_vec(),
                b"12".to_vec(),
                b"300".to_vec(),
                b"100000".to_vec(),
                b"hello".to_vec()
            ]
        );
    }

    /// Redis's deep check refuses a ziplist whose entries misstate the size
    /// of the entry before them, or whose tail offset is not the last
    /// entry's (payloads of the suite's corrupt-dump unit).
    #[test]
    fn ziplist_with_wrong_prevlen_or_tail_is_refused() {
        let z = ziplist_of(&[vec![0x02, b'a', 0x00], vec![0x02, b'b', 0x00]]);
        assert!(Ziplist::parse(&z).is_ok());
        // "quicklist big ziplist prev len": the second entry claims 14.
        let mut big = z.clone();
        big[14] = 0x0E;
        assert!(Ziplist::parse(&big).is_err());
        // "quicklist small ziplist prev len": it claims 2.
        let mut small = z.clone();
        small[14] = 0x02;
        assert!(Ziplist::parse(&small).is_err());
        // The first entry must claim 0.
        let mut first = z.clone();
        first[10] = 0x01;
        assert!(Ziplist::parse(&first).is_err());
        // A tail offset that is not the last entry's, or past the end.
        let mut tail = z.clone();
        tail[4] = 10;
        assert!(Ziplist::parse(&tail).is_err());
        tail[4] = 0xFF;
        assert!(Ziplist::parse(&tail).is_err());
        // A count that disagrees ("quicklist ziplist wrong count").
        let mut count = z;
        count[8] = 3;
        assert!(Ziplist::parse(&count).is_err());
    }
}
