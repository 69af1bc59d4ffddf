//! The bitmap family: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and
//! BITFIELD_RO (Redis's bitops.c).
//!
//! Bitmaps are not a type of their own: they are string values seen as
//! arrays of bits, bit 0 being the most significant bit of the first byte.
//! A string is zero-padded on the right as far as any write reaches, and
//! reads past its end see zeros.
//!
//! The file has three layers. The bit primitives (`popcount`,
//! `count_bits`, `first_bit`, the bitfield integer accessors and overflow
//! checks) work on plain byte slices, so that every host of these semantics
//! shares them. The operations (`setbit`, `bitop`, `bitfield`...) apply them
//! to the store. The handlers parse arguments in the order Redis does, so
//! that the same mistakes produce the same errors, and write the replies.

use crate::command::args::Args;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::{CompactBytes, Value};
use crate::pubsub::notify;
use crate::util::number::{arg_i64, parse_i64};
use crate::Error;

const BIT_OFFSET_ERR: &str = "bit offset is not an integer or out of range";
const SETBIT_VALUE_ERR: &str = "bit is not an integer or out of range";
const BITFIELD_TYPE_ERR: &str =
    "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

// ---------------------------------------------------------------------------
// Bit primitives on byte strings.

/// Number of set bits in `s`, a 64-bit word at a time.
pub fn popcount(s: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // BITCOUNT over a large bitmap is the hot path: where the CPU has
        // AVX2, the same loop compiled for it counts 32 bytes per step.
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: both features were just detected on this CPU.
            return unsafe { popcount_avx2(s) };
        }
    }
    popcount_words(s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn popcount_avx2(s: &[u8]) -> u64 {
    popcount_words(s)
}

#[inline(always)]
fn popcount_words(s: &[u8]) -> u64 {
    let words = s.chunks_exact(8);
    let tail: u64 = words
        .remainder()
        .iter()
        .map(|b| b.count_ones() as u64)
        .sum();
    let body: u64 = words
        .map(|w| u64::from_ne_bytes(w.try_into().unwrap()).count_ones() as u64)
        .sum();
    body + tail
}

/// Position of the first bit equal to `bit` in `s`, skipping whole 64-bit
/// words that cannot contain it (Redis's redisBitpos, without its
/// zero-padding convention, which the callers apply).
fn find_bit(s: &[u8], bit: bool) -> Option<u64> {
    // Searching for a 0 is searching for a 1 in the complemented bytes.
    let (flip, flip_word) = if bit { (0u8, 0u64) } else { (0xffu8, u64::MAX) };
    let mut words = s.chunks_exact(8);
    let mut base = 0u64;
    for w in words.by_ref() {
        // Big-endian, so that the string's first bit is the word's highest.
        let v = u64::from_be_bytes(w.try_into().unwrap()) ^ flip_word;
        if v != 0 {
            return Some(base + v.leading_zeros() as u64);
        }
        base += 64;
    }
    for &b in words.remainder() {
        let v = b ^ flip;
        if v != 0 {
            return Some(base + v.leading_zeros() as u64);
        }
        base += 8;
    }
    None
}

/// Mask of the bits `from..=to` (0 = most significant) of one byte.
fn byte_mask(from: u64, to: u64) -> u8 {
    (0xffu8 >> (from & 7)) & (0xffu8 << (7 - (to & 7)))
}

/// Set bits among bits `first..=last` of `s` (`last` inside `s`).
fn count_bit_range(s: &[u8], first: u64, last: u64) -> u64 {
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    if fb == lb {
        return (s[fb] & byte_mask(first, last)).count_ones() as u64;
    }
    (s[fb] & byte_mask(first, 7)).count_ones() as u64
        + popcount(&s[fb + 1..lb])
        + (s[lb] & byte_mask(0, last)).count_ones() as u64
}

/// The first bit equal to `bit` among bits `first..=last` of `s`.
fn find_bit_in_range(s: &[u8], bit: bool, first: u64, last: u64) -> Option<u64> {
    let flip: u8 = if bit { 0 } else { 0xff };
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    let in_byte = |i: usize, mask: u8| {
        let v = (s[i] ^ flip) & mask;
        (v != 0).then(|| i as u64 * 8 + v.leading_zeros() as u64)
    };
    if fb == lb {
        return in_byte(fb, byte_mask(first, last));
    }
    in_byte(fb, byte_mask(first, 7))
        .or_else(|| find_bit(&s[fb + 1..lb], bit).map(|p| (fb as u64 + 1) * 8 + p))
        .or_else(|| in_byte(lb, byte_mask(0, last)))
}

/// Whether BITCOUNT / BITPOS indexes count bytes or bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RangeUnit {
    #[default]
    Byte,
    Bit,
}

/// Redis's index conversion for BITCOUNT and BITPOS: negative indexes count
/// from the end, both ends are clamped to the string. Returns the inclusive
/// range in bits, or None when it is empty.
fn resolve_range(len: usize, start: i64, end: i64, unit: RangeUnit) -> Option<(u64, u64)> {
    let mut total = len as i64;
    if unit == RangeUnit::Bit {
        total <<= 3;
    }
    let start = if start < 0 { total + start } else { start }.max(0);
    let end = if end < 0 { total + end } else { end }.max(0);
    let end = end.min(total - 1);
    if start > end {
        return None;
    }
    let (start, end) = (start as u64, end as u64);
    Some(match unit {
        RangeUnit::Byte => (start * 8, end * 8 + 7),
        RangeUnit::Bit => (start, end),
    })
}

/// A BITCOUNT / BITPOS range as given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitRange {
    pub start: i64,
    /// None: to the end of the string (BITPOS with only a start).
    pub end: Option<i64>,
    pub unit: RangeUnit,
}

/// BITCOUNT: the set bits of `s`, in the whole string or in a range.
pub fn count_bits(s: &[u8], range: Option<BitRange>) -> u64 {
    let Some(r) = range else {
        return popcount(s);
    };
    let end = r.end.unwrap_or(-1);
    // Both ends negative and crossed: empty, even though clamping would
    // otherwise turn them into byte 0.
    if r.start < 0 && end < 0 && r.start > end {
        return 0;
    }
    match resolve_range(s.len(), r.start, end, r.unit) {
        Some((first, last)) => count_bit_range(s, first, last),
        None => 0,
    }
}

/// BITPOS: the position of the first bit equal to `bit`, or -1.
///
/// Looking for a 0 without an explicit end treats the string as padded with
/// zeros on the right, so an all-ones string answers its length in bits;
/// with an explicit end (and always in BIT units) the search stops at the
/// range and answers -1. An empty string or range has neither bit: -1.
pub fn first_bit(s: &[u8], bit: bool, range: Option<BitRange>) -> i64 {
    let r = range.unwrap_or(BitRange {
        start: 0,
        end: None,
        unit: RangeUnit::Byte,
    });
    let end = r.end.unwrap_or(s.len() as i64 - 1);
    let Some((first, last)) = resolve_range(s.len(), r.start, end, r.unit) else {
        return -1;
    };
    match find_bit_in_range(s, bit, first, last) {
        Some(pos) => pos as i64,
        None if !bit && r.end.is_none() => last as i64 + 1,
        None => -1,
    }
}

// ---------------------------------------------------------------------------
// Bitfield integers: up to 64 bits at any bit offset, most significant bit
// first, in the same bit order as SETBIT.

/// The `bits`-wide unsigned integer at bit `offset`; bits past the end of
/// `s` read as zeros.
pub fn get_unsigned(s: &[u8], offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for pos in offset..offset + bits as u64 {
        let bit = usize::try_from(pos >> 3)
            .ok()
            .and_then(|i| s.get(i))
            .map_or(0, |b| (b >> (7 - (pos & 7))) & 1);
        value = (value << 1) | bit as u64;
    }
    value
}

/// The `bits`-wide two's complement integer at bit `offset`.
pub fn get_signed(s: &[u8], offset: u64, bits: u32) -> i64 {
    let value = get_unsigned(s, offset, bits);
    if bits < 64 && value & (1u64 << (bits - 1)) != 0 {
        // Propagate the sign bit to the high bits.
        (value | (u64::MAX << bits)) as i64
    } else {
        value as i64
    }
}

/// Stores the low `bits` bits of `value` at bit `offset`; the caller has
/// made `s` long enough.
pub fn set_bits(s: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..bits as u64 {
        let bit = (value >> (bits as u64 - 1 - j)) & 1;
        let pos = offset + j;
        let mask = 0x80u8 >> (pos & 7);
        if let Some(b) = usize::try_from(pos >> 3).ok().and_then(|i| s.get_mut(i)) {
            *b = if bit == 1 { *b | mask } else { *b & !mask };
        }
    }
}

/// BITFIELD's OVERFLOW behaviours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overflow {
    /// Wrap around (modulo arithmetic; for signed types, two's complement).
    #[default]
    Wrap,
    /// Saturate at the type's minimum or maximum.
    Sat,
    /// Refuse the operation: nothing is written and the reply is null.
    Fail,
}

/// Redis's checkUnsignedBitfieldOverflow: does `value + incr` fit in an
/// unsigned integer of `bits` bits? None when it does; otherwise the value
/// to store instead (for WRAP and SAT; FAIL stores nothing).
pub fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> Option<u64> {
    let max = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    // As Redis computes them: signed differences, compared as signed.
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = value.wrapping_neg() as i64;
    let limit = if value > max || (incr > 0 && incr > max_incr) {
        max
    } else if incr < 0 && incr < min_incr {
        0
    } else {
        return None;
    };
    Some(match ow {
        Overflow::Wrap => {
            let sum = value.wrapping_add(incr as u64);
            if bits >= 64 {
                sum
            } else {
                sum & !(u64::MAX << bits)
            }
        }
        Overflow::Sat => limit,
        Overflow::Fail => 0,
    })
}

/// Redis's checkSignedBitfieldOverflow, the signed counterpart of
/// `unsigned_overflow`.
///
/// The arithmetic follows Redis's step by step, wrapping where C wraps, so
/// that even out-of-range SET values saturate as Redis saturates them (a
/// value close to i64::MIN saturates a narrow type at its maximum, because
/// Redis's `max - value` wraps negative and is tested first).
pub fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> Option<i64> {
    let max: i64 = if bits >= 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let limit = if value > max
        || (bits != 64 && incr > max_incr)
        || (value >= 0 && incr > 0 && incr > max_incr)
    {
        max
    } else if value < min
        || (bits != 64 && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        min
    } else {
        return None;
    };
    Some(match ow {
        Overflow::Wrap => {
            let mut c = (value as u64).wrapping_add(incr as u64);
            if bits < 64 {
                let mask = u64::MAX << bits;
                if c & (1u64 << (bits - 1)) != 0 {
                    c |= mask;
                } else {
                    c &= !mask;
                }
            }
            c as i64
        }
        Overflow::Sat => limit,
        Overflow::Fail => 0,
    })
}

// ---------------------------------------------------------------------------
// Argument parsing.

/// The argument as C's string functions see it: up to the first NUL byte.
/// Redis compares keywords and bitfield types with strcasecmp / strlen.
fn c_str(arg: &[u8]) -> &[u8] {
    match memchr::memchr(0, arg) {
        Some(n) => &arg[..n],
        None => arg,
    }
}

fn keyword(arg: &[u8], word: &str) -> bool {
    c_str(arg).eq_ignore_ascii_case(word.as_bytes())
}

/// Redis's getBitOffsetFromArgument: a non-negative bit offset whose byte
/// lies below proto-max-bulk-len. With `hash_bits` > 0 (BITFIELD), the
/// `#N` form means N * hash_bits.
pub fn parse_bit_offset(arg: &[u8], hash_bits: u32, max_bulk_len: u64) -> Result<u64, Error> {
    let err = || Error::err(BIT_OFFSET_ERR);
    let hash = hash_bits > 0 && arg.first() == Some(&b'#');
    let mut offset = parse_i64(if hash { &arg[1..] } else { arg }).ok_or_else(err)?;
    if hash {
        // Redis's multiplication wraps on overflow (so `#2305843009213693952`
        // of an i64 is offset 0); the range check below still applies.
        offset = offset.wrapping_mul(hash_bits as i64);
    }
    if offset < 0 || (offset as u64 >> 3) >= max_bulk_len {
        return Err(err());
    }
    Ok(offset as u64)
}

/// A bitfield integer type: `i1`..`i64` or `u1`..`u63` (u64 could not be
/// returned as a RESP integer).
pub fn parse_bitfield_type(arg: &[u8]) -> Result<(bool, u32), Error> {
    let err = || Error::err(BITFIELD_TYPE_ERR);
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(err()),
    };
    let bits = parse_i64(c_str(&arg[1..])).ok_or_else(err)?;
    if bits < 1 || bits > if signed { 64 } else { 63 } {
        return Err(err());
    }
    Ok((signed, bits as u32))
}

/// The BYTE|BIT argument of BITCOUNT and BITPOS.
fn parse_unit(arg: &[u8]) -> Result<RangeUnit, Error> {
    match Args::c_strings(&[arg]).flag_of(&["BYTE", "BIT"]) {
        Some(0) => Ok(RangeUnit::Byte),
        Some(_) => Ok(RangeUnit::Bit),
        None => Err(Error::SYNTAX),
    }
}

/// BITCOUNT's `[start end [BYTE|BIT]]`, in Redis's order: the numbers,
/// then (unless the range is already known to be empty) the unit.
pub fn parse_bitcount_range(args: &[&[u8]]) -> Result<Option<BitRange>, Error> {
    match args.len() {
        0 => Ok(None),
        2 | 3 => {
            let start = arg_i64(args[0])?;
            let end = arg_i64(args[1])?;
            let unit = if args.len() == 3 && !(start < 0 && end < 0 && start > end) {
                parse_unit(args[2])?
            } else {
                RangeUnit::Byte
            };
            Ok(Some(BitRange {
                start,
                end: Some(end),
                unit,
            }))
        }
        _ => Err(Error::SYNTAX),
    }
}

/// BITPOS's bit argument.
pub fn parse_bit_value(arg: &[u8]) -> Result<bool, Error> {
    match arg_i64(arg)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::err("The bit argument must be 1 or 0.")),
    }
}

/// BITPOS's `[start [end [BYTE|BIT]]]`, in Redis's order: start, unit, end.
pub fn parse_bitpos_range(args: &[&[u8]]) -> Result<Option<BitRange>, Error> {
    if args.is_empty() {
        return Ok(None);
    }
    if args.len() > 3 {
        return Err(Error::SYNTAX);
    }
    let start = arg_i64(args[0])?;
    let unit = match args.get(2) {
        Some(u) => parse_unit(u)?,
        None => RangeUnit::Byte,
    };
    let end = match args.get(1) {
        Some(e) => Some(arg_i64(e)?),
        None => None,
    };
    Ok(Some(BitRange { start, end, unit }))
}

/// BITOP's operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

pub fn parse_bitop(arg: &[u8]) -> Result<BitOp, Error> {
    [
        ("and", BitOp::And),
        ("or", BitOp::Or),
        ("xor", BitOp::Xor),
        ("not", BitOp::Not),
    ]
    .into_iter()
    .find(|(name, _)| keyword(arg, name))
    .map(|(_, op)| op)
    .ok_or(Error::SYNTAX)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitfieldAction {
    Get,
    Set(i64),
    IncrBy(i64),
}

/// One BITFIELD subcommand, with the OVERFLOW mode in force for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitfieldOp {
    pub action: BitfieldAction,
    pub signed: bool,
    pub bits: u32,
    pub offset: u64,
    pub overflow: Overflow,
}

impl BitfieldOp {
    pub fn is_write(&self) -> bool {
        self.action != BitfieldAction::Get
    }
}

/// BITFIELD's subcommands (everything after the key). A subcommand whose
/// arguments are missing is a syntax error, as in Redis.
pub fn parse_bitfield(args: &[&[u8]], max_bulk_len: u64) -> Result<Vec<BitfieldOp>, Error> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut a = Args::c_strings(args);
    while !a.is_empty() {
        let (action, values) = if let Some(values) = a.option_n("GET", 2) {
            (BitfieldAction::Get, values)
        } else if let Some(values) = a.option_n("SET", 3) {
            (BitfieldAction::Set(0), values)
        } else if let Some(values) = a.option_n("INCRBY", 3) {
            (BitfieldAction::IncrBy(0), values)
        } else if let Some(mode) = a.option_among("OVERFLOW", &["WRAP", "SAT", "FAIL"]) {
            let mode = mode.ok_or_else(|| Error::err("Invalid OVERFLOW type specified"))?;
            overflow = [Overflow::Wrap, Overflow::Sat, Overflow::Fail][mode];
            continue;
        } else {
            return Err(Error::SYNTAX);
        };
        // The type, the offset, then the value of SET and INCRBY.
        let (signed, bits) = parse_bitfield_type(values[0])?;
        let offset = parse_bit_offset(values[1], bits, max_bulk_len)?;
        let action = match action {
            BitfieldAction::Get => action,
            BitfieldAction::Set(_) => BitfieldAction::Set(arg_i64(values[2])?),
            BitfieldAction::IncrBy(_) => BitfieldAction::IncrBy(arg_i64(values[2])?),
        };
        ops.push(BitfieldOp {
            action,
            signed,
            bits,
            offset,
            overflow,
        });
    }
    Ok(ops)
}

fn max_bulk_len(ctx: &Ctx) -> u64 {
    ctx.engine
        .config()
        .proto_max_bulk_len
        .load(std::sync::atomic::Ordering::Relaxed)
}

// ---------------------------------------------------------------------------
// Operations on the store.

/// Redis's lookupStringForBitCommand: the string at `key`, created or
/// zero-padded so that bit `max_bit` exists, as a growable buffer. The flag
/// says whether the key was created or lengthened (a change in itself).
///
/// The memory is reserved before anything changes: where Redis would abort
/// on a failed allocation (an offset allowed by a huge proto-max-bulk-len),
/// the command fails and the key is left as it was.
fn string_for_bits<'c>(
    ctx: &'c mut Ctx,
    key: &[u8],
    max_bit: u64,
) -> Result<(&'c mut Vec<u8>, bool), Error> {
    let oom = || Error::constant("OOM command not allowed when used memory > 'maxmemory'.");
    let len = usize::try_from(max_bit >> 3).map_err(|_| oom())? + 1;
    let created = match ctx.write_string(key)? {
        Some(s) => {
            // Written in place from now on, like Redis's raw sds after
            // dbUnshareStringValue.
            let v = s.make_growable();
            if v.len() < len {
                v.try_reserve_exact(len - v.len()).map_err(|_| oom())?;
            }
            false
        }
        None => {
            let mut s = CompactBytes::new();
            let v = s.make_growable();
            v.try_reserve_exact(len).map_err(|_| oom())?;
            v.resize(len, 0);
            let now = ctx.now_ms;
            let (db, h) = ctx.locate(key);
            db.insert_new(h, key, Value::Str(s), now);
            true
        }
    };
    let Some(s) = ctx.write_string(key)? else {
        unreachable!("the key exists: it was just found or created")
    };
    let v = s.make_growable();
    let old_len = v.len();
    if old_len < len {
        v.resize(len, 0);
    }
    let grown = v.len() != old_len;
    Ok((v, created || grown))
}

/// SETBIT: sets or clears one bit; returns its previous value.
pub fn setbit(ctx: &mut Ctx, key: &[u8], offset: u64, on: bool) -> Result<bool, Error> {
    let (v, dirty) = string_for_bits(ctx, key, offset)?;
    let byte = &mut v[(offset >> 3) as usize];
    let mask = 0x80u8 >> (offset & 7);
    let old = *byte & mask != 0;
    // Only a real change (or a new or longer string) counts as a write.
    let changed = dirty || old != on;
    if changed {
        *byte = if on { *byte | mask } else { *byte & !mask };
        ctx.changed(key, notify::STRING, "setbit");
    }
    Ok(old)
}

/// GETBIT: the bit at `offset`; missing keys and bits past the end are 0.
pub fn getbit(ctx: &mut Ctx, key: &[u8], offset: u64) -> Result<bool, Error> {
    Ok(match ctx.read_string(key)? {
        Some(s) => usize::try_from(offset >> 3)
            .ok()
            .and_then(|i| s.get(i))
            .is_some_and(|b| b & (0x80 >> (offset & 7)) != 0),
        None => false,
    })
}

/// The result of BITOP over `srcs`: missing operands are empty strings and
/// shorter ones are zero-padded to the longest.
pub fn bitop_bytes(op: BitOp, srcs: &[&[u8]]) -> Vec<u8> {
    let max_len = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut res = vec![0u8; max_len];
    let Some((first, rest)) = srcs.split_first() else {
        return res;
    };
    res[..first.len()].copy_from_slice(first);
    // Byte loops over zipped slices: the compiler vectorizes them.
    match op {
        BitOp::Not => res.iter_mut().for_each(|b| *b = !*b),
        BitOp::And => {
            for src in rest {
                res.iter_mut().zip(src.iter()).for_each(|(r, s)| *r &= s);
                res[src.len()..].fill(0);
            }
        }
        BitOp::Or => {
            for src in rest {
                res.iter_mut().zip(src.iter()).for_each(|(r, s)| *r |= s);
            }
        }
        BitOp::Xor => {
            for src in rest {
                res.iter_mut().zip(src.iter()).for_each(|(r, s)| *r ^= s);
            }
        }
    }
    res
}

/// BITOP: stores the result in `dest` (deleting `dest` when every source
/// is empty or missing) and returns its length.
pub fn bitop(ctx: &mut Ctx, op: BitOp, dest: &[u8], srcs: &[&[u8]]) -> Result<usize, Error> {
    if op == BitOp::Not && srcs.len() != 1 {
        return Err(Error::err(
            "BITOP NOT must be called with a single source key.",
        ));
    }
    // Look every source up as a read (statistics, type check) first; the
    // bytes are then borrowed all together, without copying them.
    for key in srcs {
        ctx.read_string(key)?;
    }
    let res = {
        let views: Vec<&[u8]> = srcs
            .iter()
            .map(|key| {
                ctx.peek(key)
                    .map_or(&[][..], |obj| string_bytes(&obj.value))
            })
            .collect();
        bitop_bytes(op, &views)
    };
    let len = res.len();
    if len > 0 {
        ctx.store(
            dest,
            Value::Str(CompactBytes::from_vec(res)),
            false,
            notify::STRING,
            "set",
        );
    } else {
        ctx.delete_key(dest);
    }
    Ok(len)
}

/// The bytes of a string value; any other type (already refused by the
/// caller's type check) reads as empty.
#[allow(irrefutable_let_patterns)] // strings are one value type among several
fn string_bytes(v: &Value) -> &[u8] {
    if let Value::Str(s) = v {
        s
    } else {
        &[]
    }
}

/// BITFIELD / BITFIELD_RO: runs `ops` in order; one reply per op, None
/// where OVERFLOW FAIL refused it. `readonly_command` is BITFIELD_RO,
/// which refuses writes.
pub fn bitfield(
    ctx: &mut Ctx,
    key: &[u8],
    ops: &[BitfieldOp],
    readonly_command: bool,
) -> Result<Vec<Option<i64>>, Error> {
    let highest_write = ops
        .iter()
        .filter(|op| op.is_write())
        .map(|op| op.offset + op.bits as u64 - 1)
        .max();
    let Some(highest_write) = highest_write else {
        // Only GETs: a read, which a missing key answers with zeros.
        let s: &[u8] = ctx.read_string(key)?.map_or(&[], |s| s.as_slice());
        return Ok(ops.iter().map(|op| Some(bitfield_get(s, op))).collect());
    };
    if readonly_command {
        return Err(Error::err("BITFIELD_RO only supports the GET subcommand"));
    }
    let (v, dirty) = string_for_bits(ctx, key, highest_write)?;
    let mut changes = 0u64;
    let mut replies = Vec::with_capacity(ops.len());
    for op in ops {
        let (incr, is_set) = match op.action {
            BitfieldAction::Get => {
                replies.push(Some(bitfield_get(v, op)));
                continue;
            }
            BitfieldAction::Set(value) => (value, true),
            BitfieldAction::IncrBy(incr) => (incr, false),
        };
        // SET answers the old value, INCRBY the new one.
        let outcome = if op.signed {
            let old = get_signed(v, op.offset, op.bits);
            let (new, overflowed) = if is_set {
                match signed_overflow(incr, 0, op.bits, op.overflow) {
                    Some(limit) => (limit, true),
                    None => (incr, false),
                }
            } else {
                match signed_overflow(old, incr, op.bits, op.overflow) {
                    Some(limit) => (limit, true),
                    None => (old.wrapping_add(incr), false),
                }
            };
            let reply = if is_set { old } else { new };
            (old as u64, new as u64, reply, overflowed)
        } else {
            let old = get_unsigned(v, op.offset, op.bits);
            let (new, overflowed) = if is_set {
                match unsigned_overflow(incr as u64, 0, op.bits, op.overflow) {
                    Some(limit) => (limit, true),
                    None => (incr as u64, false),
                }
            } else {
                match unsigned_overflow(old, incr, op.bits, op.overflow) {
                    Some(limit) => (limit, true),
                    None => (old.wrapping_add(incr as u64), false),
                }
            };
            let reply = if is_set { old as i64 } else { new as i64 };
            (old, new, reply, overflowed)
        };
        let (old, new, reply, overflowed) = outcome;
        if overflowed && op.overflow == Overflow::Fail {
            replies.push(None);
            continue;
        }
        set_bits(v, op.offset, op.bits, new);
        if dirty || old != new {
            changes += 1;
        }
        replies.push(Some(reply));
    }
    // Each changing subcommand counts as one change, as in Redis.
    if changes > 0 {
        ctx.add_dirty(changes - 1);
        ctx.changed(key, notify::STRING, "setbit");
    }
    Ok(replies)
}

fn bitfield_get(s: &[u8], op: &BitfieldOp) -> i64 {
    if op.signed {
        get_signed(s, op.offset, op.bits)
    } else {
        get_unsigned(s, op.offset, op.bits) as i64
    }
}

// ---------------------------------------------------------------------------
// Commands.

fn setbit_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let offset = parse_bit_offset(args[2], 0, max_bulk_len(ctx))?;
    let on = match parse_i64(args[3]) {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(Error::err(SETBIT_VALUE_ERR)),
    };
    let old = setbit(ctx, args[1], offset, on)?;
    ctx.out.int(old as i64);
    Ok(())
}

fn getbit_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let offset = parse_bit_offset(args[2], 0, max_bulk_len(ctx))?;
    let bit = getbit(ctx, args[1], offset)?;
    ctx.out.int(bit as i64);
    Ok(())
}

fn bitcount_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Redis looks the key up before reading the range: a missing key
    // answers 0 whatever the other arguments.
    let count = match ctx.read_string(args[1])? {
        None => 0,
        Some(s) => count_bits(s, parse_bitcount_range(&args[2..])?),
    };
    ctx.out.int(count as i64);
    Ok(())
}

fn bitpos_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let bit = parse_bit_value(args[2])?;
    let pos = match ctx.read_string(args[1])? {
        // A missing key is an endless run of zeros.
        None => {
            if bit {
                -1
            } else {
                0
            }
        }
        Some(s) => first_bit(s, bit, parse_bitpos_range(&args[3..])?),
    };
    ctx.out.int(pos);
    Ok(())
}

fn bitop_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let op = parse_bitop(args[1])?;
    let len = bitop(ctx, op, args[2], &args[3..])?;
    ctx.out.int(len as i64);
    Ok(())
}

fn bitfield_generic(ctx: &mut Ctx, args: &[&[u8]], readonly_command: bool) -> CmdResult {
    let ops = parse_bitfield(&args[2..], max_bulk_len(ctx))?;
    let replies = bitfield(ctx, args[1], &ops, readonly_command)?;
    ctx.out.array(replies.len());
    for r in replies {
        match r {
            Some(v) => ctx.out.int(v),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

fn bitfield_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    bitfield_generic(ctx, args, false)
}

fn bitfield_ro_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    bitfield_generic(ctx, args, true)
}

// ---------------------------------------------------------------------------
// The family's table.

const RO_ACCESS: u32 = kflag::RO | kflag::ACCESS;

/// BITFIELD only reads its key when every operation is a GET (Redis's
/// bitfieldGetKeys; a syntax error counts as a write).
fn bitfield_key_flags(argv: &[&[u8]]) -> u32 {
    let mut i = 2;
    while i < argv.len() {
        let rem = argv.len() - i - 1;
        let arg = argv[i];
        if arg.eq_ignore_ascii_case(b"get") && rem >= 2 {
            i += 3;
        } else if arg.eq_ignore_ascii_case(b"overflow") && rem >= 1 {
            i += 2;
        } else {
            return kflag::RW | kflag::ACCESS | kflag::UPDATE;
        }
    }
    kflag::RO | kflag::ACCESS
}

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "setbit",
        arity: 4,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::UPDATE)],
        group: Group::Bitmap,
        since: "2.2.0",
        summary: "Sets or clears the bit at offset in the string value stored at key",
        complexity: "O(1)",
        syntax: "key:key offset:integer value:integer",
        handler: setbit_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getbit",
        arity: 3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Bitmap,
        since: "2.2.0",
        summary: "Returns the bit value at offset in the string value stored at key",
        complexity: "O(1)",
        syntax: "key:key offset:integer",
        handler: getbit_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bitcount",
        arity: -2,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Bitmap,
        since: "2.6.0",
        summary: "Count set bits in a string",
        complexity: "O(N)",
        history: &[("7.0.0", "Added the `BYTE|BIT` option.")],
        syntax: "key:key [index:block(start:integer end:integer [index_unit:oneof(BYTE|BIT)]{since:7.0.0})]",
        handler: bitcount_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bitpos",
        arity: -3,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Bitmap,
        since: "2.8.7",
        summary: "Find first bit set or clear in a string",
        complexity: "O(N)",
        history: &[("7.0.0", "Added the `BYTE|BIT` option.")],
        syntax: "key:key bit:integer [index:block(start:integer [end_index:block(end:integer [index_unit:oneof(BYTE|BIT)]{since:7.0.0})])]",
        handler: bitpos_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bitop",
        arity: -4,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[
            KeySpec::at(2, kflag::OW | kflag::UPDATE),
            KeySpec::range(3, -1, 1, RO_ACCESS),
        ],
        group: Group::Bitmap,
        since: "2.6.0",
        summary: "Perform bitwise operations between strings",
        complexity: "O(N)",
        syntax: "operation:string destkey:key key:key...",
        handler: bitop_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bitfield",
        arity: -2,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(
            1,
            kflag::RW | kflag::UPDATE | kflag::ACCESS | kflag::VARIABLE_FLAGS,
        )],
        key_spec_notes: &[(0, "This command allows both access and modification of the key")],
        key_flags_fn: Some(bitfield_key_flags),
        group: Group::Bitmap,
        since: "3.2.0",
        summary: "Perform arbitrary bitfield integer operations on strings",
        complexity: "O(1) for each subcommand specified",
        syntax: "key:key [operation:oneof(GET encoding_offset:block(encoding:string offset:integer)|write:block([OVERFLOW wrap_sat_fail:oneof(WRAP|SAT|FAIL)] write_operation:oneof(SET encoding_offset_value:block(encoding:string offset:integer value:integer)|INCRBY encoding_offset_increment:block(encoding:string offset:integer increment:integer))))...]",
        handler: bitfield_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bitfield_ro",
        arity: -2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Bitmap,
        since: "6.0.0",
        summary: "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
        complexity: "O(1) for each subcommand specified",
        syntax: "key:key [GET encoding_offset:block(encoding:string offset:integer)...]{multiple_token}",
        handler: bitfield_ro_command,
        ..CommandSpec::DEFAULT
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{run_strs, session};
    use proptest::prelude::*;

    fn bit(s: &[u8], i: u64) -> bool {
        s[(i >> 3) as usize] & (0x80 >> (i & 7)) != 0
    }

    fn byte_range(start: i64, end: Option<i64>) -> Option<BitRange> {
        Some(BitRange {
            start,
            end,
            unit: RangeUnit::Byte,
        })
    }

    fn bit_range(start: i64, end: i64) -> Option<BitRange> {
        Some(BitRange {
            start,
            end: Some(end),
            unit: RangeUnit::Bit,
        })
    }

    #[test]
    fn popcount_counts_every_alignment_and_tail() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 37 + 11) as u8).collect();
        for from in 0..9 {
            for to in [from, from + 1, from + 7, from + 8, from + 63, 300] {
                let s = &data[from..to.min(300)];
                let naive: u64 = s.iter().map(|b| b.count_ones() as u64).sum();
                assert_eq!(popcount(s), naive, "bytes {from}..{to}");
            }
        }
    }

    #[test]
    fn bitpos_zero_on_all_ones_without_end_is_the_length_in_bits() {
        for len in [1usize, 3, 8, 9, 27, 64] {
            let ones = vec![0xffu8; len];
            let bits = len as i64 * 8;
            assert_eq!(first_bit(&ones, false, None), bits);
            assert_eq!(first_bit(&ones, false, byte_range(0, None)), bits);
            assert_eq!(first_bit(&ones, false, byte_range(-1, None)), bits);
            if len > 1 {
                assert_eq!(first_bit(&ones, false, byte_range(1, None)), bits);
            }
            // A start past the end leaves an empty range.
            assert_eq!(first_bit(&ones, false, byte_range(len as i64, None)), -1);
        }
    }

    #[test]
    fn bitpos_zero_on_all_ones_with_an_end_is_not_found() {
        for len in [1usize, 3, 8, 9, 27, 64] {
            let ones = vec![0xffu8; len];
            assert_eq!(first_bit(&ones, false, byte_range(0, Some(-1))), -1);
            assert_eq!(first_bit(&ones, false, byte_range(0, Some(1000))), -1);
            assert_eq!(first_bit(&ones, false, bit_range(0, -1)), -1);
            assert_eq!(first_bit(&ones, false, bit_range(3, 5)), -1);
        }
        // The zero right after the range does not count either.
        assert_eq!(first_bit(b"\xff\x00", false, byte_range(0, Some(0))), -1);
        assert_eq!(first_bit(b"\xff\x7f", false, bit_range(0, 7)), -1);
        assert_eq!(first_bit(b"\xff\x7f", false, bit_range(0, 8)), 8);
    }

    #[test]
    fn bitpos_on_empty_strings_and_ranges() {
        assert_eq!(first_bit(b"", false, None), -1);
        assert_eq!(first_bit(b"", true, None), -1);
        assert_eq!(first_bit(b"", false, byte_range(0, None)), -1);
        assert_eq!(first_bit(b"\x00", true, None), -1);
        assert_eq!(first_bit(b"\x00\x01", true, byte_range(2, Some(1))), -1);
        // Crossed negative indexes clamp to byte 0 (BITCOUNT differs).
        assert_eq!(first_bit(b"\x80", true, byte_range(-100, Some(-200))), 0);
        assert_eq!(count_bits(b"\x80", byte_range(-100, Some(-200))), 0);
    }

    #[test]
    fn bitpos_finds_bits_inside_partial_bytes() {
        // 0x0f = 00001111: the first one is bit 4 of byte 1.
        assert_eq!(first_bit(b"\x00\x0f\x00", true, None), 12);
        assert_eq!(first_bit(b"\x00\x0f\x00", true, bit_range(13, 14)), 13);
        assert_eq!(first_bit(b"\x00\x0f\x00", true, bit_range(5, 11)), -1);
        assert_eq!(first_bit(b"\xff\xf0\xff", false, bit_range(13, 20)), 13);
    }

    #[test]
    fn bitcount_bit_ranges_trim_the_edge_bytes() {
        let s = b"foobar";
        assert_eq!(count_bits(s, None), 26);
        assert_eq!(count_bits(s, bit_range(0, -1)), 26);
        // "f" = 01100110: bits 1..=2 are both ones, bits 3..=4 zeros.
        assert_eq!(count_bits(s, bit_range(1, 2)), 2);
        assert_eq!(count_bits(s, bit_range(3, 4)), 0);
        assert_eq!(count_bits(s, bit_range(-6, -15)), 0);
        assert_eq!(count_bits(s, byte_range(4, Some(10))), 7);
    }

    /// BITPOS as a reader of the documentation would compute it, one bit
    /// at a time.
    fn naive_first_bit(s: &[u8], want: bool, range: Option<BitRange>) -> i64 {
        let (start, end, unit, end_given) = match range {
            None => (0, s.len() as i64 - 1, RangeUnit::Byte, false),
            Some(r) => (
                r.start,
                r.end.unwrap_or(s.len() as i64 - 1),
                r.unit,
                r.end.is_some(),
            ),
        };
        let Some((first, last)) = resolve_range(s.len(), start, end, unit) else {
            return -1;
        };
        for i in first..=last {
            if bit(s, i) == want {
                return i as i64;
            }
        }
        if !want && !end_given {
            last as i64 + 1
        } else {
            -1
        }
    }

    fn naive_count(s: &[u8], range: Option<BitRange>) -> u64 {
        let Some(r) = range else {
            return (0..s.len() as u64 * 8).filter(|&i| bit(s, i)).count() as u64;
        };
        let end = r.end.unwrap();
        if r.start < 0 && end < 0 && r.start > end {
            return 0;
        }
        match resolve_range(s.len(), r.start, end, r.unit) {
            Some((a, b)) => (a..=b).filter(|&i| bit(s, i)).count() as u64,
            None => 0,
        }
    }

    fn bytes_strategy() -> impl Strategy<Value = Vec<u8>> {
        // Runs of 0x00 and 0xff exercise the word skipping.
        prop::collection::vec(prop_oneof![Just(0u8), Just(0xffu8), any::<u8>()], 0..80)
    }

    fn range_strategy() -> impl Strategy<Value = Option<BitRange>> {
        prop::option::of(
            (
                -700i64..700,
                prop::option::of(-700i64..700),
                prop_oneof![Just(RangeUnit::Byte), Just(RangeUnit::Bit)],
            )
                .prop_map(|(start, end, unit)| BitRange { start, end, unit }),
        )
    }

    proptest! {
        #[test]
        fn first_bit_matches_a_bit_by_bit_search(
            s in bytes_strategy(),
            want in any::<bool>(),
            range in range_strategy(),
        ) {
            // BIT units always come with an end.
            let range = range.map(|mut r| {
                if r.unit == RangeUnit::Bit && r.end.is_none() {
                    r.end = Some(-1);
                }
                r
            });
            prop_assert_eq!(first_bit(&s, want, range), naive_first_bit(&s, want, range));
        }

        #[test]
        fn count_bits_matches_a_bit_by_bit_count(s in bytes_strategy(), range in range_strategy()) {
            let range = range.map(|mut r| {
                r.end.get_or_insert(-1);
                r
            });
            prop_assert_eq!(count_bits(&s, range), naive_count(&s, range));
        }

        #[test]
        fn bitfield_integers_round_trip(offset in 0u64..100, bits in 1u32..=64, value in any::<u64>()) {
            let mut s = vec![0u8; 30];
            set_bits(&mut s, offset, bits, value);
            let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            prop_assert_eq!(get_unsigned(&s, offset, bits), value & mask);
            let shift = 64 - bits;
            prop_assert_eq!(get_signed(&s, offset, bits), ((value << shift) as i64) >> shift);
        }
    }

    #[test]
    fn bitfield_reads_past_the_end_as_zeros() {
        assert_eq!(get_unsigned(b"\xff", 4, 8), 0xf0);
        assert_eq!(get_signed(b"\xff", 4, 8), -16);
        assert_eq!(get_unsigned(b"", u64::MAX - 70, 63), 0);
    }

    #[test]
    fn signed_overflow_at_the_type_edges() {
        use Overflow::*;
        // i8: 127 + 1.
        assert_eq!(signed_overflow(127, 1, 8, Wrap), Some(-128));
        assert_eq!(signed_overflow(127, 1, 8, Sat), Some(127));
        assert!(signed_overflow(127, 1, 8, Fail).is_some());
        assert_eq!(signed_overflow(127, 0, 8, Fail), None);
        // i8: -128 - 1.
        assert_eq!(signed_overflow(-128, -1, 8, Wrap), Some(127));
        assert_eq!(signed_overflow(-128, -1, 8, Sat), Some(-128));
        assert_eq!(signed_overflow(-128, 0, 8, Sat), None);
        // i1 holds -1 and 0.
        assert_eq!(signed_overflow(0, 1, 1, Wrap), Some(-1));
        assert_eq!(signed_overflow(-1, -1, 1, Sat), Some(-1));
        assert_eq!(signed_overflow(-1, 1, 1, Sat), None);
        // i64 at both ends.
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Wrap), Some(i64::MIN));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Sat), Some(i64::MAX));
        assert_eq!(signed_overflow(i64::MIN, -1, 64, Wrap), Some(i64::MAX));
        assert_eq!(signed_overflow(i64::MIN, -1, 64, Sat), Some(i64::MIN));
        assert_eq!(signed_overflow(i64::MIN, i64::MAX, 64, Sat), None);
        assert_eq!(signed_overflow(-1, i64::MIN, 64, Sat), Some(i64::MIN));
        assert_eq!(signed_overflow(0, i64::MIN, 64, Fail), None);
        // SET of out-of-range values (increment 0).
        assert_eq!(signed_overflow(200, 0, 8, Wrap), Some(-56));
        assert_eq!(signed_overflow(-1000, 0, 8, Sat), Some(-128));
        // Redis's `max - value` wraps for values near i64::MIN, which then
        // saturate at the maximum.
        assert_eq!(signed_overflow(i64::MIN, 0, 8, Sat), Some(127));
        assert_eq!(signed_overflow(i64::MIN + 128, 0, 8, Sat), Some(-128));
    }

    #[test]
    fn unsigned_overflow_at_the_type_edges() {
        use Overflow::*;
        assert_eq!(unsigned_overflow(255, 1, 8, Wrap), Some(0));
        assert_eq!(unsigned_overflow(255, 1, 8, Sat), Some(255));
        assert!(unsigned_overflow(255, 1, 8, Fail).is_some());
        assert_eq!(unsigned_overflow(0, -1, 8, Wrap), Some(255));
        assert_eq!(unsigned_overflow(0, -1, 8, Sat), Some(0));
        assert_eq!(unsigned_overflow(100, -100, 8, Sat), None);
        assert_eq!(unsigned_overflow(100, 257, 8, Wrap), Some(101));
        // u1.
        assert_eq!(unsigned_overflow(1, 1, 1, Wrap), Some(0));
        assert_eq!(unsigned_overflow(0, -1, 1, Sat), Some(0));
        // u63, the widest unsigned type.
        let max = (1u64 << 63) - 1;
        assert_eq!(unsigned_overflow(max, 0, 63, Fail), None);
        assert_eq!(unsigned_overflow(max, 1, 63, Wrap), Some(0));
        assert_eq!(unsigned_overflow(max, 1, 63, Sat), Some(max));
        assert_eq!(unsigned_overflow(0, i64::MIN, 63, Wrap), Some(0));
        assert_eq!(unsigned_overflow(0, i64::MIN, 63, Sat), Some(0));
        // SET of a negative value: seen as a huge unsigned one.
        assert_eq!(unsigned_overflow(-1i64 as u64, 0, 8, Wrap), Some(255));
        assert_eq!(unsigned_overflow(-1i64 as u64, 0, 8, Sat), Some(255));
    }

    #[test]
    fn bitfield_types_and_offsets() {
        assert_eq!(parse_bitfield_type(b"i64"), Ok((true, 64)));
        assert_eq!(parse_bitfield_type(b"u63"), Ok((false, 63)));
        for bad in [&b"u64"[..], b"i65", b"i0", b"U8", b"i", b"", b"8"] {
            assert_eq!(
                parse_bitfield_type(bad),
                Err(Error::err(BITFIELD_TYPE_ERR)),
                "{bad:?}"
            );
        }
        let max = 512 * 1024 * 1024;
        assert_eq!(parse_bit_offset(b"#3", 8, max), Ok(24));
        assert!(parse_bit_offset(b"#3", 0, max).is_err());
        assert!(parse_bit_offset(b"-1", 0, max).is_err());
        assert_eq!(parse_bit_offset(b"4294967295", 0, max), Ok(4294967295));
        assert!(parse_bit_offset(b"4294967296", 0, max).is_err());
        // The multiplication wraps as Redis's does.
        assert_eq!(parse_bit_offset(b"#2305843009213693952", 64, max), Ok(0));
    }

    #[test]
    fn keywords_end_at_a_nul_as_strcasecmp_sees_them() {
        let max = 512 * 1024 * 1024;
        let ops = parse_bitfield(&[b"overflow\0x", b"SAT\0", b"Get\0", b"u8", b"0"], max);
        assert_eq!(ops.map(|o| o[0].overflow), Ok(Overflow::Sat));
        // Values are whole: an offset with a NUL is no number.
        assert!(parse_bitfield(&[b"get", b"u8", b"0\0"], max).is_err());
        assert_eq!(
            parse_bitpos_range(&[b"0", b"1", b"bit\0byte"]).map(|r| r.unwrap().unit),
            Ok(RangeUnit::Bit)
        );
    }

    #[test]
    fn setbit_grows_the_string_and_answers_the_old_bit() {
        let mut s = session();
        assert_eq!(run_strs(&mut s, &["setbit", "k", "9", "1"]), ":0\r\n");
        assert_eq!(run_strs(&mut s, &["get", "k"]), "$2\r\n\x00\x40\r\n");
        assert_eq!(run_strs(&mut s, &["setbit", "k", "9", "0"]), ":1\r\n");
        assert_eq!(
            run_strs(&mut s, &["setbit", "k", "9", "2"]),
            "-ERR bit is not an integer or out of range\r\n"
        );
        assert_eq!(
            run_strs(&mut s, &["getbit", "k", "-1"]),
            "-ERR bit offset is not an integer or out of range\r\n"
        );
        assert_eq!(run_strs(&mut s, &["getbit", "k", "100000"]), ":0\r\n");
    }

    #[test]
    fn bit_offsets_obey_proto_max_bulk_len() {
        let mut s = session();
        assert_eq!(
            run_strs(&mut s, &["config", "set", "proto-max-bulk-len", "1mb"]),
            "+OK\r\n"
        );
        let last = (1024 * 1024 * 8 - 1).to_string();
        let past = (1024 * 1024 * 8).to_string();
        assert_eq!(run_strs(&mut s, &["setbit", "k", &last, "1"]), ":0\r\n");
        assert_eq!(run_strs(&mut s, &["strlen", "k"]), ":1048576\r\n");
        assert_eq!(
            run_strs(&mut s, &["setbit", "k", &past, "1"]),
            "-ERR bit offset is not an integer or out of range\r\n"
        );
        assert_eq!(
            run_strs(&mut s, &["bitfield", "k", "get", "u8", "#1048576"]),
            "-ERR bit offset is not an integer or out of range\r\n"
        );
    }

    #[test]
    fn an_offset_too_large_to_allocate_fails_without_creating_the_key() {
        let mut s = session();
        let huge = i64::MAX.to_string();
        run_strs(&mut s, &["config", "set", "proto-max-bulk-len", &huge]);
        let oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
        assert_eq!(run_strs(&mut s, &["setbit", "k", &huge, "1"]), oom);
        assert_eq!(
            run_strs(&mut s, &["bitfield", "k", "set", "u8", &huge, "1"]),
            oom
        );
        assert_eq!(run_strs(&mut s, &["exists", "k"]), ":0\r\n");
        run_strs(&mut s, &["set", "k", "abc"]);
        assert_eq!(run_strs(&mut s, &["setbit", "k", &huge, "1"]), oom);
        assert_eq!(run_strs(&mut s, &["get", "k"]), "$3\r\nabc\r\n");
    }

    #[test]
    fn bitop_deletes_the_destination_when_every_source_is_empty() {
        let mut s = session();
        run_strs(&mut s, &["set", "dest", "x"]);
        run_strs(&mut s, &["set", "empty", ""]);
        assert_eq!(
            run_strs(&mut s, &["bitop", "or", "dest", "empty", "nokey"]),
            ":0\r\n"
        );
        assert_eq!(run_strs(&mut s, &["exists", "dest"]), ":0\r\n");
        assert_eq!(
            run_strs(&mut s, &["bitop", "not", "dest", "a", "b"]),
            "-ERR BITOP NOT must be called with a single source key.\r\n"
        );
        assert_eq!(
            run_strs(&mut s, &["bitop", "nand", "dest", "a"]),
            "-ERR syntax error\r\n"
        );
    }

    #[test]
    fn bitop_combines_sources_longer_than_a_word() {
        let mut s = session();
        let a = "\u{1}".repeat(40);
        run_strs(&mut s, &["set", "a", &a]);
        run_strs(&mut s, &["set", "b", "\u{3}\u{3}"]);
        assert_eq!(
            run_strs(&mut s, &["bitop", "and", "d", "a", "b"]),
            ":40\r\n"
        );
        assert_eq!(run_strs(&mut s, &["bitcount", "d"]), ":2\r\n");
        assert_eq!(
            run_strs(&mut s, &["bitop", "xor", "d", "a", "b"]),
            ":40\r\n"
        );
        assert_eq!(run_strs(&mut s, &["bitcount", "d"]), ":40\r\n");
    }

    #[test]
    fn bitfield_fail_answers_null_and_writes_nothing() {
        let mut s = session();
        assert_eq!(
            run_strs(
                &mut s,
                &[
                    "bitfield", "k", "set", "u8", "0", "250", "overflow", "fail", "incrby", "u8",
                    "0", "10", "get", "u8", "0"
                ]
            ),
            "*3\r\n:0\r\n$-1\r\n:250\r\n"
        );
        assert_eq!(
            run_strs(
                &mut s,
                &["bitfield", "k", "overflow", "sat", "incrby", "i8", "0", "-200"]
            ),
            "*1\r\n:-128\r\n"
        );
        assert_eq!(
            run_strs(&mut s, &["bitfield", "k", "overflow", "bad"]),
            "-ERR Invalid OVERFLOW type specified\r\n"
        );
        assert_eq!(
            run_strs(&mut s, &["bitfield", "k", "get", "u8"]),
            "-ERR syntax error\r\n"
        );
    }

    #[test]
    fn bitfield_ro_refuses_writes_after_checking_the_arguments() {
        let mut s = session();
        assert_eq!(
            run_strs(
                &mut s,
                &["bitfield_ro", "k", "get", "u8", "0", "set", "u8", "0", "1"]
            ),
            "-ERR BITFIELD_RO only supports the GET subcommand\r\n"
        );
        assert_eq!(
            run_strs(&mut s, &["bitfield_ro", "k", "set", "u64", "0", "1"]),
            format!("-ERR {BITFIELD_TYPE_ERR}\r\n")
        );
        assert_eq!(
            run_strs(&mut s, &["bitfield_ro", "k", "get", "i64", "0"]),
            "*1\r\n:0\r\n"
        );
        assert_eq!(run_strs(&mut s, &["exists", "k"]), ":0\r\n");
    }

    #[test]
    fn bitcount_and_bitpos_check_the_key_before_the_range() {
        let mut s = session();
        // A missing key answers before the arguments are read.
        assert_eq!(run_strs(&mut s, &["bitcount", "nokey", "0"]), ":0\r\n");
        assert_eq!(
            run_strs(&mut s, &["bitpos", "nokey", "0", "x", "y", "z"]),
            ":0\r\n"
        );
        run_strs(&mut s, &["bitfield", "k", "set", "u8", "0", "255"]);
        assert_eq!(
            run_strs(&mut s, &["bitcount", "k", "0"]),
            "-ERR syntax error\r\n"
        );
        assert_eq!(
            run_strs(&mut s, &["bitcount", "k", "-1", "-2", "nope"]),
            ":0\r\n"
        );
        assert_eq!(
            run_strs(&mut s, &["bitpos", "k", "0", "0", "x", "nope"]),
            "-ERR syntax error\r\n"
        );
        assert_eq!(
            run_strs(&mut s, &["bitpos", "k", "2"]),
            "-ERR The bit argument must be 1 or 0.\r\n"
        );
        assert_eq!(run_strs(&mut s, &["bitpos", "k", "0"]), ":8\r\n");
        assert_eq!(
            run_strs(&mut s, &["bitpos", "k", "0", "0", "-1"]),
            ":-1\r\n"
        );
    }
}
