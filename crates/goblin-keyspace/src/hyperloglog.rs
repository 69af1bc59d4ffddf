//! HyperLogLog: Redis 7.0's representation (hyperloglog.c), byte for byte.
//!
//! An HLL is not a type of its own: it is a string value that starts with
//! a 16-byte header, so GET, SET, DUMP/RESTORE and RDB files carry it
//! unchanged between Redis and Goblin, and every operation here must leave
//! exactly the bytes Redis leaves.
//!
//! ```text
//! +------+---+-----+----------+--------------------------------+
//! | HYLL | E | N/U | Cardin.  | registers...                   |
//! +------+---+-----+----------+--------------------------------+
//! ```
//!
//! - `E`, the encoding: 0 dense, 1 sparse (`N/U`: three unused zero bytes).
//! - The cached cardinality, 8 bytes little endian; the top bit of its last
//!   byte set means the cache is stale (PFADD sets it, PFCOUNT recomputes
//!   and clears it).
//! - Dense: 16384 registers of 6 bits, 12288 bytes, least significant bits
//!   first within each byte.
//! - Sparse: a run-length code of the registers with three opcodes. ZERO
//!   (`00xxxxxx`) is a run of 1..=64 zero registers, XZERO (`01xxxxxx
//!   xxxxxxxx`) a run of 1..=16384 zero registers, VAL (`1vvvvvxx`) a run of
//!   1..=4 registers holding the value 1..=32. A new HLL is sparse (two
//!   XZERO bytes); it turns dense when a register needs a value above 32 or
//!   the string would grow past `hll-sparse-max-bytes`.
//!
//! Multi-key PFCOUNT and PFMERGE merge into a plain array of 16384 one-byte
//! registers (Redis's internal "raw" encoding), [`Registers`].
//!
//! Elements are hashed with MurmurHash64A and Redis's seed: the low 14 bits
//! pick the register, the run of zeros above them (plus one) is the value.
//! The cardinality is estimated from the histogram of register values with
//! Ertl's improved estimator (hllSigma/hllTau), as Redis 7.0 does.
//!
//! A corrupted sparse representation (a value set by hand) is detected
//! where Redis detects it and reported as [`Corrupt`]; reads past the end
//! of a truncated opcode see a zero byte, the NUL terminator Redis's sds
//! strings keep there.

/// Bytes of the header before the registers.
pub const HDR_SIZE: usize = 16;
/// Index bits of the hash (Redis's HLL_P).
const P: u32 = 14;
/// Hash bits left for the run of zeros (HLL_Q).
const Q: usize = 64 - P as usize;
/// Registers of an HLL.
pub const REGISTERS: usize = 1 << P;
const P_MASK: u64 = REGISTERS as u64 - 1;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Length of a dense HLL, header included.
pub const DENSE_SIZE: usize = HDR_SIZE + (REGISTERS * BITS).div_ceil(8);

/// Encoding byte values.
pub const DENSE: u8 = 0;
pub const SPARSE: u8 = 1;
const MAX_ENCODING: u8 = SPARSE;

const SPARSE_XZERO_BIT: u8 = 0x40;
const SPARSE_VAL_BIT: u8 = 0x80;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;

/// The seed Redis hashes elements with.
const SEED: u32 = 0xadc83b19;
/// 0.5 / ln(2), written as Redis writes it (the same double).
#[allow(clippy::excessive_precision)]
const ALPHA_INF: f64 = 0.721347520444481703680;

/// The registers as one byte each: the accumulator of PFMERGE and
/// multi-key PFCOUNT.
pub type Registers = [u8; REGISTERS];

/// A sparse representation whose opcodes do not add up to 16384 registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

// ---------------------------------------------------------------------------
// The header.

/// Redis's isHLLObjectOrReply check on a string's bytes: the magic, a known
/// encoding, and the exact length of a dense HLL. (A sparse body is only
/// checked when it is read.)
pub fn is_hll(v: &[u8]) -> bool {
    v.len() >= HDR_SIZE
        && &v[..4] == b"HYLL"
        && v[4] <= MAX_ENCODING
        && (v[4] != DENSE || v.len() == DENSE_SIZE)
}

/// The encoding byte of a value that passed [`is_hll`].
pub fn encoding(v: &[u8]) -> u8 {
    v[4]
}

/// The cached cardinality, unless the cache is stale.
pub fn cached_cardinality(v: &[u8]) -> Option<u64> {
    if v[15] & 0x80 != 0 {
        return None;
    }
    Some(u64::from_le_bytes(v[8..16].try_into().unwrap()))
}

pub fn set_cached_cardinality(v: &mut [u8], card: u64) {
    v[8..16].copy_from_slice(&card.to_le_bytes());
}

/// Marks the cached cardinality stale (HLL_INVALIDATE_CACHE).
pub fn invalidate_cache(v: &mut [u8]) {
    v[15] |= 0x80;
}

/// A new, empty HLL: sparse, one XZERO opcode covering every register
/// (Redis's createHLLObject).
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR_SIZE + 2);
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.resize(HDR_SIZE, 0);
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(SPARSE_XZERO_MAX_LEN);
        v.extend_from_slice(&xzero(run));
        left -= run;
    }
    v
}

// ---------------------------------------------------------------------------
// Hashing.

/// MurmurHash2, 64-bit version, as Redis has it (endian neutral: the input
/// is read as little-endian words on every machine).
pub fn murmurhash64a(key: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4a7935bd1e995;
    const R: u32 = 47;
    let mut h = seed as u64 ^ (key.len() as u64).wrapping_mul(M);
    let mut words = key.chunks_exact(8);
    for w in words.by_ref() {
        let mut k = u64::from_le_bytes(w.try_into().unwrap());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element lands in and the value it offers: the length of
/// the "000..1" pattern above the index bits (Redis's hllPatLen), 1..=51.
pub fn pattern(ele: &[u8]) -> (usize, u8) {
    let hash = murmurhash64a(ele, SEED);
    let index = (hash & P_MASK) as usize;
    // The bit set at Q stops the count at Q + 1.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

// ---------------------------------------------------------------------------
// Dense registers. `regs` is the body after the header; the last register's
// neighbour byte, past the end, reads as zero (Redis's sds terminator) and is
// never written with anything but zero bits.

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = regs[byte] as u32;
    let b1 = regs.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & REGISTER_MAX as u32) as u8
}

fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = val as u32;
    let max = REGISTER_MAX as u32;
    regs[byte] &= !((max << fb) as u8);
    regs[byte] |= (v << fb) as u8;
    if let Some(b) = regs.get_mut(byte + 1) {
        *b &= !((max >> (8 - fb)) as u8);
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// Raises dense register `i` to `count` if that is more (hllDenseSet);
/// true when it changed.
fn dense_set(v: &mut [u8], i: usize, count: u8) -> bool {
    let regs = &mut v[HDR_SIZE..];
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

/// A dense value's registers, one byte each.
pub fn dense_registers(v: &[u8]) -> Box<Registers> {
    let mut out = Box::new([0u8; REGISTERS]);
    let regs = &v[HDR_SIZE..];
    for (i, r) in out.iter_mut().enumerate() {
        *r = dense_get(regs, i);
    }
    out
}

// ---------------------------------------------------------------------------
// Sparse opcodes.

fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

fn is_xzero(b: u8) -> bool {
    b & 0xc0 == SPARSE_XZERO_BIT
}

fn is_val(b: u8) -> bool {
    b & SPARSE_VAL_BIT != 0
}

fn zero_len(b: u8) -> usize {
    (b & 0x3f) as usize + 1
}

fn xzero_len(b0: u8, b1: u8) -> usize {
    ((((b0 & 0x3f) as usize) << 8) | b1 as usize) + 1
}

fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

fn val_len(b: u8) -> usize {
    (b & 0x3) as usize + 1
}

fn val(value: u8, len: usize) -> u8 {
    ((value - 1) << 2 | (len as u8 - 1)) | SPARSE_VAL_BIT
}

fn zero(len: usize) -> u8 {
    (len - 1) as u8
}

fn xzero(len: usize) -> [u8; 2] {
    let l = len - 1;
    [(l >> 8) as u8 | SPARSE_XZERO_BIT, (l & 0xff) as u8]
}

/// One decoded sparse opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Zero(usize),
    XZero(usize),
    Val(u8, usize),
}

/// The opcodes of a sparse body, in order. An XZERO cut short by the end
/// reads its missing byte as zero, as Redis reads its string's terminator.
fn opcodes(body: &[u8]) -> impl Iterator<Item = Op> + '_ {
    let mut p = 0;
    std::iter::from_fn(move || {
        let &b = body.get(p)?;
        Some(if is_zero(b) {
            p += 1;
            Op::Zero(zero_len(b))
        } else if is_xzero(b) {
            let b1 = body.get(p + 1).copied().unwrap_or(0);
            p += 2;
            Op::XZero(xzero_len(b, b1))
        } else {
            p += 1;
            Op::Val(val_value(b), val_len(b))
        })
    })
}

/// Walks a sparse body's runs, handing each (first register, length,
/// value) to `f`; fails as soon as the runs pass 16384 registers, or when
/// they end short of it.
fn for_each_run(body: &[u8], mut f: impl FnMut(usize, usize, u8)) -> Result<(), Corrupt> {
    let mut idx = 0usize;
    for op in opcodes(body) {
        let (len, value) = match op {
            Op::Zero(len) | Op::XZero(len) => (len, 0),
            Op::Val(value, len) => (len, value),
        };
        if idx + len > REGISTERS {
            return Err(Corrupt);
        }
        f(idx, len, value);
        idx += len;
    }
    if idx != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

/// The dense form of a sparse HLL, header (cached cardinality included)
/// copied (hllSparseToDense).
pub fn sparse_to_dense(v: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR_SIZE].copy_from_slice(&v[..HDR_SIZE]);
    dense[4] = DENSE;
    let regs = &mut dense[HDR_SIZE..];
    for_each_run(&v[HDR_SIZE..], |first, len, value| {
        if value != 0 {
            for i in first..first + len {
                dense_put(regs, i, value);
            }
        }
    })?;
    Ok(dense)
}

/// Converts `v` to the dense encoding in place if it is sparse; true when
/// it was.
pub fn to_dense(v: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if encoding(v) == DENSE {
        return Ok(false);
    }
    *v = sparse_to_dense(v)?;
    Ok(true)
}

/// Raises sparse register `index` to `count` if that is more (Redis's
/// hllSparseSet), splitting the opcode that covers it and merging equal
/// neighbours afterwards exactly as Redis does, so that the bytes stay
/// Redis's. Promotes `v` to dense when `count` exceeds what VAL holds or
/// the string would grow past `max_bytes`. True when a register changed.
fn sparse_set(v: &mut Vec<u8>, index: usize, count: u8, max_bytes: usize) -> Result<bool, Corrupt> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(v, index, count);
    }
    let byte_at = |v: &Vec<u8>, i: usize| v.get(i).copied().unwrap_or(0);

    // Step 1: find the opcode covering `index`.
    let end = v.len();
    let mut p = HDR_SIZE;
    let mut first = 0usize;
    let mut prev = None;
    let mut span = 0usize;
    while p < end {
        let b = v[p];
        let oplen;
        if is_zero(b) {
            span = zero_len(b);
            oplen = 1;
        } else if is_val(b) {
            span = val_len(b);
            oplen = 1;
        } else {
            span = xzero_len(b, byte_at(v, p + 1));
            oplen = 2;
        }
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupt);
    }
    let b = v[p];
    let (op_is_zero, op_is_xzero) = (is_zero(b), is_xzero(b));
    let runlen = if op_is_zero {
        zero_len(b)
    } else if op_is_xzero {
        xzero_len(b, byte_at(v, p + 1))
    } else {
        val_len(b)
    };

    // Step 2: the trivial cases update the opcode in place.
    let updated_in_place = if !op_is_zero && !op_is_xzero {
        // A: the register already holds as much; B: a VAL of one register.
        if val_value(b) >= count {
            return Ok(false);
        }
        runlen == 1
    } else {
        // C: a ZERO of one register.
        op_is_zero && runlen == 1
    };
    if updated_in_place {
        v[p] = val(count, 1);
    } else {
        // D: split the opcode into up to three (XZERO-VAL-XZERO at worst).
        let mut seq = [0u8; 5];
        let mut n = 0;
        let last = first + span - 1;
        fn push_zeros(seq: &mut [u8; 5], n: &mut usize, len: usize) {
            if len > SPARSE_ZERO_MAX_LEN {
                seq[*n..*n + 2].copy_from_slice(&xzero(len));
                *n += 2;
            } else {
                seq[*n] = zero(len);
                *n += 1;
            }
        }
        if op_is_zero || op_is_xzero {
            if index != first {
                push_zeros(&mut seq, &mut n, index - first);
            }
            seq[n] = val(count, 1);
            n += 1;
            if index != last {
                push_zeros(&mut seq, &mut n, last - index);
            }
        } else {
            let curval = val_value(b);
            if index != first {
                seq[n] = val(curval, index - first);
                n += 1;
            }
            seq[n] = val(count, 1);
            n += 1;
            if index != last {
                seq[n] = val(curval, last - index);
                n += 1;
            }
        }
        // Step 3: put the new sequence in place of the old opcode.
        let oldlen = if op_is_xzero { 2 } else { 1 };
        if n > oldlen && end + (n - oldlen) > max_bytes {
            return promote(v, index, count);
        }
        // An XZERO cut short by the end loses what Redis writes past the
        // string's new length.
        let new_len = end + n - oldlen;
        v.splice(p..(p + oldlen).min(end), seq[..n].iter().copied());
        v.truncate(new_len);
    }

    // Step 4: merge adjacent VAL opcodes of the same value, scanning up to
    // five opcodes from the one before the change.
    let mut p = prev.unwrap_or(HDR_SIZE);
    let mut scan = 5;
    while p < v.len() && scan > 0 {
        scan -= 1;
        let b = v[p];
        if is_xzero(b) {
            p += 2;
            continue;
        }
        if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < v.len() && is_val(v[p + 1]) {
            let (v1, v2) = (val_value(b), val_value(v[p + 1]));
            let len = val_len(b) + val_len(v[p + 1]);
            if v1 == v2 && len <= SPARSE_VAL_MAX_LEN {
                v[p + 1] = val(v1, len);
                v.remove(p);
                // Try the merged opcode with its right neighbour too.
                continue;
            }
        }
        p += 1;
    }
    invalidate_cache(v);
    Ok(true)
}

/// The promotion step of hllSparseSet: the dense form, then the register.
fn promote(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(v)?;
    // Redis asserts the register changes: the sparse form could not hold
    // the new value, or a split was needed because it was larger.
    Ok(dense_set(v, index, count))
}

/// Raises register `index` to `count` in either encoding. A sparse `v` may
/// turn dense.
pub fn set_register(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<bool, Corrupt> {
    match encoding(v) {
        DENSE => Ok(dense_set(v, index, count)),
        _ => sparse_set(v, index, count, max_bytes),
    }
}

/// Adds an element (hllAdd): true when a register changed.
pub fn add(v: &mut Vec<u8>, ele: &[u8], max_bytes: usize) -> Result<bool, Corrupt> {
    let (index, count) = pattern(ele);
    set_register(v, index, count, max_bytes)
}

/// Raises each of `max`'s registers to `v`'s where that is more (hllMerge).
pub fn merge(max: &mut Registers, v: &[u8]) -> Result<(), Corrupt> {
    if encoding(v) == DENSE {
        let regs = &v[HDR_SIZE..];
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(dense_get(regs, i));
        }
        return Ok(());
    }
    for_each_run(&v[HDR_SIZE..], |first, len, value| {
        for m in &mut max[first..first + len] {
            *m = (*m).max(value);
        }
    })
}

// ---------------------------------------------------------------------------
// Cardinality.

type Histogram = [u64; 64];

/// The estimated cardinality of a dense or sparse HLL (hllCount); a sparse
/// body that does not decode is `Corrupt`.
pub fn count(v: &[u8]) -> Result<u64, Corrupt> {
    let mut histo: Histogram = [0; 64];
    if encoding(v) == DENSE {
        let regs = &v[HDR_SIZE..];
        for i in 0..REGISTERS {
            histo[dense_get(regs, i) as usize] += 1;
        }
    } else {
        for_each_run(&v[HDR_SIZE..], |_, len, value| {
            histo[value as usize] += len as u64;
        })?;
    }
    Ok(estimate(&histo))
}

/// The estimated cardinality of one-byte registers (the raw encoding).
pub fn count_registers(regs: &Registers) -> u64 {
    let mut histo: Histogram = [0; 64];
    for &r in regs.iter() {
        // Dense registers hold 6 bits, so merged values stay below 64.
        histo[(r & 63) as usize] += 1;
    }
    estimate(&histo)
}

/// Ertl's estimator ("New cardinality estimation algorithms for
/// HyperLogLog sketches", arXiv:1702.01284), in Redis's operation order so
/// that the doubles round as Redis's do.
fn estimate(histo: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histo[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    c_estimate_to_u64((ALPHA_INF * m * m / z).round())
}

/// Redis's `(uint64_t) (double) llroundl(e)` on x86-64, for an `e` already
/// rounded (halves away from zero, as llroundl does). An estimate out of
/// range (infinite when every register holds a value past 50, as in a
/// forged dense value) becomes llroundl's "integer indefinite", LLONG_MIN,
/// whose conversion to unsigned answers 2^63: PFCOUNT then replies
/// -9223372036854775808, and the cached value keeps its stale bit.
fn c_estimate_to_u64(e: f64) -> u64 {
    const TWO_63: f64 = 9223372036854775808.0;
    let ll = if (-TWO_63..TWO_63).contains(&e) {
        e as i64
    } else {
        i64::MIN
    };
    let d = ll as f64;
    if d < TWO_63 {
        // cvttsd2si: negative values wrap.
        d as i64 as u64
    } else {
        d as u64
    }
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let z_prime = z;
        z += x * y;
        y += y;
        if z_prime == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let z_prime = z;
        y *= 0.5;
        // Redis writes pow(1 - x, 2), which compilers turn into this product.
        z -= (1.0 - x) * (1.0 - x) * y;
        if z_prime == z {
            return z / 3.0;
        }
    }
}

// ---------------------------------------------------------------------------
// Debugging (PFDEBUG, PFSELFTEST).

/// PFDEBUG DECODE's text for a sparse body: "z:N" for ZERO, "Z:N" for
/// XZERO, "v:VALUE,N" for VAL, space separated.
pub fn decode_sparse(v: &[u8]) -> String {
    let mut out = String::new();
    for op in opcodes(&v[HDR_SIZE..]) {
        if !out.is_empty() {
            out.push(' ');
        }
        match op {
            Op::Zero(n) => out.push_str(&format!("z:{n}")),
            Op::XZero(n) => out.push_str(&format!("Z:{n}")),
            Op::Val(value, n) => out.push_str(&format!("v:{value},{n}")),
        }
    }
    out
}

/// PFSELFTEST: Redis's self-test of the register accessors and of the
/// estimator's error, dense and sparse side by side. Err carries the
/// TESTFAILED text.
pub fn self_test(max_bytes: usize, rng: &mut fastrand::Rng) -> Result<(), String> {
    const CYCLES: usize = 1000;
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..4].copy_from_slice(b"HYLL");
    let mut bytes = [0u8; REGISTERS];

    // Test 1: every register keeps its value and leaves its neighbours alone.
    for _ in 0..CYCLES {
        let regs = &mut dense[HDR_SIZE..];
        for (i, b) in bytes.iter_mut().enumerate() {
            let r = rng.u8(..) & REGISTER_MAX;
            *b = r;
            dense_put(regs, i, r);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let got = dense_get(regs, i);
            if got != b {
                return Err(format!(
                    "TESTFAILED Register {i} should be {b} but is {got}"
                ));
            }
        }
    }

    // Test 2: the estimate stays within six standard errors, and the
    // sparse and dense forms agree.
    dense[HDR_SIZE..].fill(0);
    let mut sparse = new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed = rng.u64(..);
    for j in 1..=10_000_000u64 {
        let ele = (j ^ seed).to_ne_bytes();
        let (index, c) = pattern(&ele);
        dense_set(&mut dense, index, c);
        add(&mut sparse, &ele, max_bytes).map_err(|_| "TESTFAILED corrupted sparse".to_string())?;
        if j != checkpoint {
            continue;
        }
        if j < (max_bytes / 2) as u64 && encoding(&sparse) != SPARSE {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let card = count(&dense).unwrap_or(0);
        if card != count(&sparse).unwrap_or(u64::MAX) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = (checkpoint as i64 - card as i64).unsigned_abs();
        // Collisions make a large error at 10 statistically likely enough
        // for Redis to allow one.
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every register of a sparse value, decoded opcode by opcode.
    fn sparse_registers(v: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for_each_run(&v[HDR_SIZE..], |_, len, value| {
            out.extend(std::iter::repeat_n(value, len))
        })
        .unwrap();
        out
    }

    #[test]
    fn a_new_hll_is_one_xzero_run() {
        let v = new_sparse();
        assert_eq!(
            v,
            b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"
        );
        assert!(is_hll(&v));
        assert_eq!(decode_sparse(&v), "Z:16384");
        assert_eq!(count(&v), Ok(0));
        assert_eq!(cached_cardinality(&v), Some(0));
    }

    #[test]
    fn elements_land_where_redis_puts_them() {
        // Redis 7.0.15: PFADD h a b c; PFDEBUG DECODE h answers
        // "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603".
        let mut got: Vec<(usize, u8)> =
            [&b"a"[..], b"b", b"c"].iter().map(|e| pattern(e)).collect();
        got.sort();
        assert_eq!(got, [(8436, 1), (12711, 2), (15780, 1)]);
        let mut v = new_sparse();
        for e in [&b"a"[..], b"b", b"c"] {
            add(&mut v, e, 3000).unwrap();
        }
        assert_eq!(
            decode_sparse(&v),
            "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603"
        );
        assert_eq!(count(&v), Ok(3));
    }

    #[test]
    fn dense_registers_round_trip_without_touching_neighbours() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR_SIZE];
        let mut rng = fastrand::Rng::with_seed(7);
        let values: Vec<u8> = (0..REGISTERS).map(|_| rng.u8(..) & 63).collect();
        for (i, &v) in values.iter().enumerate() {
            dense_put(&mut regs, i, v);
        }
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(dense_get(&regs, i), v, "register {i}");
        }
    }

    #[test]
    fn sparse_and_dense_agree_register_by_register() {
        let mut rng = fastrand::Rng::with_seed(42);
        for n in [0usize, 1, 5, 50, 300, 2000] {
            let mut sparse = new_sparse();
            let mut dense = sparse_to_dense(&sparse).unwrap();
            for _ in 0..n {
                let ele = rng.u64(..).to_string();
                let a = add(&mut sparse, ele.as_bytes(), usize::MAX).unwrap();
                let b = add(&mut dense, ele.as_bytes(), usize::MAX).unwrap();
                assert_eq!(a, b);
            }
            assert_eq!(encoding(&dense), DENSE);
            if encoding(&sparse) == SPARSE {
                assert_eq!(sparse_registers(&sparse), dense_registers(&dense).to_vec());
            }
            assert_eq!(count(&sparse), count(&dense));
        }
    }

    #[test]
    fn sparse_promotes_past_max_bytes_and_for_large_values() {
        let mut v = new_sparse();
        let mut i = 0u64;
        while encoding(&v) == SPARSE {
            add(&mut v, i.to_string().as_bytes(), 100).unwrap();
            assert!(encoding(&v) == DENSE || v.len() <= 100);
            i += 1;
        }
        assert_eq!(v.len(), DENSE_SIZE);
        // A value above 32 cannot be a VAL opcode.
        let mut v = new_sparse();
        assert_eq!(set_register(&mut v, 5, 33, 3000), Ok(true));
        assert_eq!(encoding(&v), DENSE);
        assert_eq!(dense_registers(&v)[5], 33);
    }

    #[test]
    fn adjacent_equal_values_merge() {
        let mut v = new_sparse();
        for i in 0..4 {
            set_register(&mut v, 100 + i, 3, 3000).unwrap();
        }
        assert_eq!(decode_sparse(&v), "Z:100 v:3,4 Z:16280");
        set_register(&mut v, 104, 3, 3000).unwrap();
        assert_eq!(decode_sparse(&v), "Z:100 v:3,4 v:3,1 Z:16279");
    }

    #[test]
    fn corrupted_sparse_bodies_are_detected() {
        let mut v = new_sparse();
        v.extend_from_slice(b"hello");
        assert_eq!(count(&v), Err(Corrupt));
        let mut max = [0u8; REGISTERS];
        assert_eq!(merge(&mut max, &v), Err(Corrupt));
        assert_eq!(sparse_to_dense(&v), Err(Corrupt));
        // Too short: the runs end before the last register.
        let mut v = new_sparse();
        v.truncate(HDR_SIZE);
        assert_eq!(count(&v), Err(Corrupt));
        assert_eq!(add(&mut v, b"a", 3000), Err(Corrupt));
    }

    #[test]
    fn estimates_are_close() {
        let mut v = new_sparse();
        for i in 0..100_000u32 {
            add(&mut v, &i.to_le_bytes(), 3000).unwrap();
        }
        let c = count(&v).unwrap() as f64;
        assert!((c - 100_000.0).abs() < 100_000.0 * 0.05, "{c}");
        let mut max = [0u8; REGISTERS];
        merge(&mut max, &v).unwrap();
        assert_eq!(count_registers(&max), count(&v).unwrap());
    }
}
