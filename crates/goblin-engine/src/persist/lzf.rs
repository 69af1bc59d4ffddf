//! LZF, the compression Redis applies to long strings in snapshots and
//! DUMP payloads (Marc Lehmann's liblzf, which Redis vendors as lzf_c.c and
//! lzf_d.c).
//!
//! The stream is a sequence of runs, each led by a control byte:
//! - `000LLLLL`: a literal run of L+1 bytes follows;
//! - `LLLooooo oooooooo` (L < 7) or `111ooooo LLLLLLLL oooooooo`: a back
//!   reference of L+2 bytes (L+7+2 in the long form) starting `o+1` bytes
//!   before the current end of the output.
//!
//! Any stream that follows this grammar decompresses the same everywhere,
//! so the compressor here need not produce liblzf's exact bytes; it uses
//! liblzf's method (a hash of the next three bytes finds earlier matches).

/// Bits of the largest hash table (liblzf's HLOG).
const HLOG: u32 = 14;
/// Bits of the smallest one.
const MIN_HLOG: u32 = 6;
const MAX_LIT: usize = 32;
const MAX_OFF: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);

/// The table's bits for an input of `n` bytes: about one slot per byte, up
/// to liblzf's 2^14. Every call starts from a cleared table (the output is
/// a function of the input alone), and clearing 2^14 slots for a 100-byte
/// value cost a snapshot of small strings most of its time.
fn table_bits(n: usize) -> u32 {
    (usize::BITS - n.leading_zeros()).clamp(MIN_HLOG, HLOG)
}

#[inline]
fn hash3(p: &[u8], bits: u32) -> usize {
    let v = ((p[0] as u32) << 16) | ((p[1] as u32) << 8) | p[2] as u32;
    ((v.wrapping_mul(0x9E37_79B1)) >> (32 - bits)) as usize
}

/// Compresses `input`; `None` when the result would not fit in `max_out`
/// bytes (liblzf returns 0 then, and Redis stores the string as it is).
pub fn compress(input: &[u8], max_out: usize) -> Option<Vec<u8>> {
    let n = input.len();
    if n == 0 {
        return None;
    }
    let bits = table_bits(n);
    let mut table = vec![0usize; 1 << bits];
    let mut out: Vec<u8> = Vec::with_capacity(max_out.min(n + n / 16 + 64));
    // Position of the pending literal run's control byte in `out`.
    let mut lit_start = 0usize;
    let mut lit = 0usize;
    out.push(0);
    let mut i = 0usize;
    while i + 2 < n {
        let h = hash3(&input[i..], bits);
        let cand = table[h];
        table[h] = i + 1; // stored +1 so 0 means "empty"
        if cand > 0 {
            let r = cand - 1;
            let off = i - r - 1;
            if r < i
                && off < MAX_OFF
                && input[r] == input[i]
                && input[r + 1] == input[i + 1]
                && input[r + 2] == input[i + 2]
            {
                // Match length, at most MAX_REF and not past the input.
                let maxlen = (n - i).min(MAX_REF);
                let mut len = 3;
                while len < maxlen && input[r + len] == input[i + len] {
                    len += 1;
                }
                // Close the literal run (or drop its empty control byte).
                if lit > 0 {
                    out[lit_start] = (lit - 1) as u8;
                } else {
                    out.pop();
                }
                let l = len - 2;
                if l < 7 {
                    out.push(((l as u8) << 5) | (off >> 8) as u8);
                } else {
                    out.push((7 << 5) | (off >> 8) as u8);
                    out.push((l - 7) as u8);
                }
                out.push(off as u8);
                if out.len() + 1 > max_out {
                    return None;
                }
                // Index the positions inside the match, as liblzf does in
                // its "ultra" mode, so later repeats find them.
                let end = i + len;
                let mut j = i + 1;
                while j < end && j + 2 < n {
                    table[hash3(&input[j..], bits)] = j + 1;
                    j += 1;
                }
                i = end;
                lit_start = out.len();
                lit = 0;
                out.push(0);
                continue;
            }
        }
        out.push(input[i]);
        lit += 1;
        i += 1;
        if lit == MAX_LIT {
            out[lit_start] = (MAX_LIT - 1) as u8;
            lit_start = out.len();
            lit = 0;
            out.push(0);
        }
        if out.len() > max_out {
            return None;
        }
    }
    while i < n {
        out.push(input[i]);
        lit += 1;
        i += 1;
        if lit == MAX_LIT {
            out[lit_start] = (MAX_LIT - 1) as u8;
            lit_start = out.len();
            lit = 0;
            out.push(0);
        }
    }
    if lit > 0 {
        out[lit_start] = (lit - 1) as u8;
    } else {
        out.pop();
    }
    if out.len() > max_out {
        return None;
    }
    Some(out)
}

/// Decompresses `input` into exactly `out_len` bytes; `None` when the
/// stream is malformed or does not produce exactly that many bytes.
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut i = 0usize;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            if i + run > input.len() || out.len() + run > out_len {
                return None;
            }
            out.extend_from_slice(&input[i..i + run]);
            i += run;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(i)? as usize;
                i += 1;
            }
            len += 2;
            let off = ((ctrl & 0x1f) << 8) + *input.get(i)? as usize + 1;
            i += 1;
            if off > out.len() || out.len() + len > out_len {
                return None;
            }
            let start = out.len() - off;
            // Byte by byte: a reference may overlap the bytes it produces.
            for k in 0..len {
                let b = out[start + k];
                out.push(b);
            }
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: &[u8]) {
        if let Some(c) = compress(data, data.len().saturating_sub(4)) {
            assert!(c.len() <= data.len() - 4);
            assert_eq!(decompress(&c, data.len()).as_deref(), Some(data));
        }
    }

    #[test]
    fn repetitive_data_compresses() {
        let data = vec![b'a'; 1000];
        let c = compress(&data, 996).expect("compressible");
        assert!(c.len() < 50, "{}", c.len());
        assert_eq!(decompress(&c, 1000).unwrap(), data);
    }

    #[test]
    fn round_trips() {
        let mut rng = fastrand::Rng::with_seed(3);
        for n in [5usize, 21, 33, 100, 4096, 70_000] {
            let random: Vec<u8> = (0..n).map(|_| rng.u8(..)).collect();
            round_trip(&random);
            let text: Vec<u8> = (0..n).map(|i| b"abcabdabeab"[i % 11]).collect();
            round_trip(&text);
            let mixed: Vec<u8> = (0..n)
                .map(|i| if i % 50 < 25 { rng.u8(..4) } else { b'x' })
                .collect();
            round_trip(&mixed);
        }
    }

    #[test]
    fn incompressible_data_is_refused() {
        let mut rng = fastrand::Rng::with_seed(9);
        let random: Vec<u8> = (0..200).map(|_| rng.u8(..)).collect();
        assert!(compress(&random, 196).is_none());
    }

    #[test]
    fn malformed_streams_are_rejected() {
        assert!(decompress(&[0x20, 0x05], 10).is_none()); // reference before start
        assert!(decompress(&[5, b'a'], 6).is_none()); // literal past input
        assert!(decompress(&[0, b'a'], 2).is_none()); // wrong length
    }
}
