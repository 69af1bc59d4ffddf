//! # goblin-num
//!
//! Numbers parsed and printed exactly as Redis parses and prints them.
//!
//! Clients depend on these details: "+1" or " 1" is not an integer,
//! "0x10" is a float but not an integer, scores print with 17 significant
//! digits, INCRBYFLOAT keeps long double precision.

use std::ffi::{c_char, c_int};

/// Redis's `string2ll`: an optional '-', no leading zeros, no '+', no
/// spaces, within i64.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let len = s.len();
    if len == 0 || len >= 21 {
        return None;
    }
    if len == 1 && s[0] == b'0' {
        return Some(0);
    }
    let (neg, digits) = if s[0] == b'-' {
        (true, &s[1..])
    } else {
        (false, s)
    };
    let first = *digits.first()?;
    if !(b'1'..=b'9').contains(&first) {
        return None;
    }
    let mut v: u64 = (first - b'0') as u64;
    for &c in &digits[1..] {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        if v > i64::MAX as u64 {
            return None;
        }
        Some(v as i64)
    }
}

/// Redis's `string2d`: `strtod` on the whole string, no leading space, no
/// trailing bytes, no NaN, no overflow to infinity from a finite literal.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s[0].is_ascii_whitespace() || s[0] == 0x0b || s[0] == 0x0c {
        return None;
    }
    if let Some(v) = parse_decimal(s) {
        return v;
    }
    parse_f64_libc(s)
}

/// `parse_f64` through glibc's strtod, for the forms `parse_decimal`
/// leaves to it (hex floats, inf, infinity...).
fn parse_f64_libc(s: &[u8]) -> Option<f64> {
    // strtod needs a NUL-terminated string: short ones on the stack.
    let mut stack = [0u8; 128];
    let heap;
    let buf: &[u8] = if s.len() < stack.len() {
        stack[..s.len()].copy_from_slice(s);
        &stack
    } else {
        heap = [s, b"\0"].concat();
        &heap
    };
    let start = buf.as_ptr() as *const c_char;
    let mut end: *mut c_char = std::ptr::null_mut();
    // SAFETY: buf is NUL-terminated after s.len() bytes.
    let (v, errno) = unsafe {
        errno::set_errno(errno::Errno(0));
        let v = libc::strtod(start, &mut end);
        (v, errno::errno().0)
    };
    let consumed = end as usize - start as usize;
    if consumed != s.len() || v.is_nan() {
        return None;
    }
    if errno == libc::ERANGE && (v.is_infinite() || v == 0.0) {
        return None;
    }
    Some(v)
}

/// The fast path of `parse_f64`: a plain decimal literal
/// (`[+-]digits[.digits][e[+-]digits]`, the form nearly every client
/// sends) parsed by Rust's float parser, which rounds correctly as glibc's
/// strtod does, so both give the same bits. Outer `None`: not handled here
/// (other bytes, or a form Rust refuses), so strtod decides. strtod's
/// ERANGE cases are mapped as `parse_f64` maps them: overflow to infinity
/// and underflow of nonzero digits to zero are refused.
fn parse_decimal(s: &[u8]) -> Option<Option<f64>> {
    // Integers of up to 15 digits (leading zeros and a sign included, which
    // parse_i64 refuses) are below 2^53, so their double is exact.
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if !digits.is_empty() && digits.len() <= 15 {
        let mut v = 0u64;
        let mut all_digits = true;
        for &d in digits {
            let x = d.wrapping_sub(b'0');
            all_digits &= x <= 9;
            v = v * 10 + x as u64;
        }
        if all_digits {
            let v = v as f64;
            return Some(Some(if neg { -v } else { v }));
        }
    }
    let mut nonzero = false;
    let mut in_exponent = false;
    for &c in s {
        match c {
            b'1'..=b'9' if !in_exponent => nonzero = true,
            b'0'..=b'9' | b'+' | b'-' | b'.' => {}
            b'e' | b'E' => in_exponent = true,
            _ => return None,
        }
    }
    // SAFETY: every byte was checked to be ASCII above.
    let text = unsafe { std::str::from_utf8_unchecked(s) };
    let v: f64 = text.parse().ok()?;
    if v.is_infinite() || (v == 0.0 && nonzero) {
        return Some(None);
    }
    Some(Some(v))
}

/// `strtod` as SORT applies it: leading spaces allowed, the empty string
/// is 0, trailing bytes (before any NUL) and NaN or overflow are refused.
pub fn parse_f64_strtod(s: &[u8]) -> Option<f64> {
    let buf = [s, b"\0"].concat();
    let start = buf.as_ptr() as *const c_char;
    let mut end: *mut c_char = std::ptr::null_mut();
    // SAFETY: buf is NUL-terminated.
    let (v, errno) = unsafe {
        errno::set_errno(errno::Errno(0));
        let v = libc::strtod(start, &mut end);
        (v, errno::errno().0)
    };
    let consumed = end as usize - start as usize;
    if buf[consumed] != 0 || errno == libc::ERANGE || v.is_nan() {
        return None;
    }
    Some(v)
}

/// printf's "%.17g", the format Redis 7.0 uses for doubles in replies.
///
/// Written in Rust (scores go out by the hundred in a ZRANGE reply, and
/// snprintf's arbitrary-precision path costs a microsecond each); the
/// tests hold it to glibc's output, byte for byte.
pub fn format_g17(v: f64, out: &mut Vec<u8>) {
    if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"inf" } else { b"-inf" });
    } else if v.is_nan() {
        format_g17_libc(v, out);
    } else if v == v.trunc() && v.abs() < 1e17 && !(v == 0.0 && v.is_sign_negative()) {
        // An integer of at most 17 digits prints as one, exactly.
        out.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
    } else {
        format_g17_digits(v, out);
    }
}

/// %.17g through 17 correctly rounded significant digits (Rust's exact
/// formatting rounds half to even on the exact value, as glibc does), laid
/// out as %g lays them out: fixed notation for decimal exponents from -4
/// to 16, exponential otherwise, trailing zeros dropped.
fn format_g17_digits(v: f64, out: &mut Vec<u8>) {
    use std::io::Write;
    let mut buf = [0u8; 40];
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    // "-d.dddddddddddddddde-X": at most 26 bytes, so this cannot fail.
    let _ = write!(cursor, "{v:.16e}");
    let len = cursor.position() as usize;
    let text = &buf[..len];
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let e = text.iter().position(|&b| b == b'e').unwrap_or(text.len());
    let exponent: i32 = std::str::from_utf8(&text[e + 1..])
        .ok()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    let mut digits = [0u8; 17];
    let mut n = 0;
    for &b in text[..e].iter().filter(|b| b.is_ascii_digit()) {
        digits[n] = b;
        n += 1;
    }
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    let digits = &digits[..n];
    if negative {
        out.push(b'-');
    }
    if (-4..17).contains(&exponent) {
        if exponent < 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exponent - 1) as usize));
            out.extend_from_slice(digits);
        } else {
            let whole = exponent as usize + 1;
            if digits.len() <= whole {
                out.extend_from_slice(digits);
                out.extend(std::iter::repeat_n(b'0', whole - digits.len()));
            } else {
                out.extend_from_slice(&digits[..whole]);
                out.push(b'.');
                out.extend_from_slice(&digits[whole..]);
            }
        }
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(itoa::Buffer::new().format(magnitude).as_bytes());
    }
}

/// %.17g through glibc's snprintf (NaN's sign, and the tests' oracle).
fn format_g17_libc(v: f64, out: &mut Vec<u8>) {
    let mut buf = [0u8; 64];
    // SAFETY: the format consumes exactly one double; the buffer is large
    // enough for any %.17g output and snprintf never writes past its size.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut c_char,
            buf.len(),
            c"%.17g".as_ptr(),
            v,
        )
    };
    out.extend_from_slice(&buf[..n as usize]);
}

pub fn g17(v: f64) -> String {
    let mut out = Vec::new();
    format_g17(v, &mut out);
    String::from_utf8(out).unwrap()
}

/// A C `long double`, kept opaque: only the C side interprets its bytes.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct LongDouble([u8; 16]);

extern "C" {
    fn goblin_ld_parse(s: *const c_char, len: usize, out: *mut LongDouble) -> c_int;
    fn goblin_ld_from_i64(v: i64, out: *mut LongDouble);
    fn goblin_ld_from_f64(v: f64, out: *mut LongDouble);
    fn goblin_ld_add(a: *const LongDouble, b: *const LongDouble, out: *mut LongDouble);
    fn goblin_ld_sub(a: *const LongDouble, b: *const LongDouble, out: *mut LongDouble);
    fn goblin_ld_is_finite(a: *const LongDouble) -> c_int;
    fn goblin_ld_is_inf(a: *const LongDouble) -> c_int;
    fn goblin_ld_cmp(a: *const LongDouble, b: *const LongDouble) -> c_int;
    fn goblin_ld_max(sign: c_int, out: *mut LongDouble);
    fn goblin_ld_to_f64(a: *const LongDouble) -> f64;
    fn goblin_ld_format(v: *const LongDouble, mode: c_int, buf: *mut c_char, len: usize) -> c_int;
    fn goblin_ld_seconds_to_ms(v: *const LongDouble) -> i64;
}

impl std::fmt::Debug for LongDouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_human_string()))
    }
}

impl LongDouble {
    /// Redis's `string2ld`.
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        let mut out = LongDouble([0; 16]);
        // SAFETY: the C side reads `len` bytes and writes one long double.
        let ok = unsafe { goblin_ld_parse(s.as_ptr() as *const c_char, s.len(), &mut out) };
        (ok == 1).then_some(out)
    }

    pub fn from_i64(v: i64) -> LongDouble {
        let mut out = LongDouble([0; 16]);
        // SAFETY: writes one long double into `out`.
        unsafe { goblin_ld_from_i64(v, &mut out) };
        out
    }

    /// A double widened to long double (exact), as Redis passes a double
    /// to addReplyHumanLongDouble (GEOPOS, WITHCOORD).
    pub fn from_f64(v: f64) -> LongDouble {
        let mut out = LongDouble([0; 16]);
        // SAFETY: writes one long double into `out`.
        unsafe { goblin_ld_from_f64(v, &mut out) };
        out
    }

    pub fn add(&self, other: &LongDouble) -> LongDouble {
        let mut out = LongDouble([0; 16]);
        // SAFETY: reads two long doubles, writes one.
        unsafe { goblin_ld_add(self, other, &mut out) };
        out
    }

    pub fn sub(&self, other: &LongDouble) -> LongDouble {
        let mut out = LongDouble([0; 16]);
        // SAFETY: reads two long doubles, writes one.
        unsafe { goblin_ld_sub(self, other, &mut out) };
        out
    }

    /// LDBL_MAX, or -LDBL_MAX when `negative`.
    pub fn max(negative: bool) -> LongDouble {
        let mut out = LongDouble([0; 16]);
        // SAFETY: writes one long double into `out`.
        unsafe { goblin_ld_max(if negative { -1 } else { 1 }, &mut out) };
        out
    }

    /// Ordering of two values that are not NaN (parse never yields NaN).
    #[allow(clippy::should_implement_trait)] // a total order only without NaN
    pub fn cmp(&self, other: &LongDouble) -> std::cmp::Ordering {
        // SAFETY: reads two long doubles.
        match unsafe { goblin_ld_cmp(self, other) } {
            -1 => std::cmp::Ordering::Less,
            0 => std::cmp::Ordering::Equal,
            _ => std::cmp::Ordering::Greater,
        }
    }

    pub fn is_infinite(&self) -> bool {
        // SAFETY: reads one long double.
        unsafe { goblin_ld_is_inf(self) == 1 }
    }

    pub fn is_finite(&self) -> bool {
        // SAFETY: reads one long double.
        unsafe { goblin_ld_is_finite(self) == 1 }
    }

    pub fn to_f64(&self) -> f64 {
        // SAFETY: reads one long double.
        unsafe { goblin_ld_to_f64(self) }
    }

    /// Seconds to whole milliseconds, rounded up, as Redis converts a
    /// blocking timeout (out-of-range values give i64::MIN).
    pub fn seconds_to_ms(&self) -> i64 {
        // SAFETY: reads one long double.
        unsafe { goblin_ld_seconds_to_ms(self) }
    }

    fn format(&self, mode: c_int) -> Vec<u8> {
        let mut buf = vec![0u8; 5 * 1024];
        // SAFETY: the C side writes at most buf.len() bytes.
        let n = unsafe { goblin_ld_format(self, mode, buf.as_mut_ptr() as *mut c_char, buf.len()) };
        buf.truncate(n.max(0) as usize);
        buf
    }

    /// "%.17Lf" without trailing zeroes (Redis's LD_STR_HUMAN): what
    /// INCRBYFLOAT and HINCRBYFLOAT store and reply.
    pub fn to_human_string(&self) -> Vec<u8> {
        self.format(1)
    }

    /// "%.17Lg" (Redis's LD_STR_AUTO).
    pub fn to_auto_string(&self) -> Vec<u8> {
        self.format(0)
    }
}

/// Number of decimal digits of `v` (Redis's digits10 / sdigits10).
pub fn digits10(v: i64) -> usize {
    let mut buf = itoa::Buffer::new();
    buf.format(v).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for the randomized comparisons.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-0"), None);
        assert_eq!(parse_i64(b"01"), None);
        assert_eq!(parse_i64(b"+1"), None);
        assert_eq!(parse_i64(b" 1"), None);
        assert_eq!(parse_i64(b"1 "), None);
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(parse_i64(b""), None);
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"-9223372036854775809"), None);
        assert_eq!(parse_i64(b"18446744073709551616"), None);
    }

    #[test]
    fn string2d_rules() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"1 "), None);
        assert_eq!(parse_f64(b"1e400"), None);
        assert_eq!(parse_f64(b""), None);
    }

    /// The Rust fast path gives strtod's answer, bit for bit, on random
    /// decimal-looking strings: plain literals, and junk of the same bytes.
    #[test]
    fn decimal_fast_path_matches_strtod() {
        let mut next = xorshift(0x9e3779b97f4a7c15);
        let mut checked = 0;
        for i in 0..200_000 {
            let mut t = String::new();
            if i % 2 == 0 {
                // Structured: sign, digits, fraction, exponent.
                if next() % 3 == 0 {
                    t.push(if next() % 2 == 0 { '-' } else { '+' });
                }
                for _ in 0..next() % 22 {
                    t.push((b'0' + (next() % 10) as u8) as char);
                }
                if next() % 2 == 0 {
                    t.push('.');
                    for _ in 0..next() % 22 {
                        t.push((b'0' + (next() % 10) as u8) as char);
                    }
                }
                if next() % 3 == 0 {
                    t.push(if next() % 2 == 0 { 'e' } else { 'E' });
                    if next() % 2 == 0 {
                        t.push('-');
                    }
                    for _ in 0..next() % 4 {
                        t.push((b'0' + (next() % 10) as u8) as char);
                    }
                }
            } else {
                let alphabet = b"0123456789+-.eE";
                for _ in 0..1 + next() % 8 {
                    t.push(alphabet[(next() % alphabet.len() as u64) as usize] as char);
                }
            }
            if t.is_empty() {
                continue; // refused before either path (string2d_rules)
            }
            let fast = parse_f64(t.as_bytes());
            let libc = parse_f64_libc(t.as_bytes());
            assert_eq!(
                fast.map(f64::to_bits),
                libc.map(f64::to_bits),
                "{t:?}: fast {fast:?}, strtod {libc:?}"
            );
            checked += fast.is_some() as usize;
        }
        assert!(
            checked > 50_000,
            "too few valid literals generated: {checked}"
        );
        for t in [
            "-0", "0e999", "1e-400", "2.4e-320", "1.e5", ".5", "000123", "1e308", "1.8e308",
        ] {
            assert_eq!(
                parse_f64(t.as_bytes()).map(f64::to_bits),
                parse_f64_libc(t.as_bytes()).map(f64::to_bits),
                "{t}"
            );
        }
    }

    /// The Rust %.17g gives glibc's bytes: on random bit patterns (every
    /// exponent, subnormals included), on short decimals and integers (the
    /// usual scores), and on the edges of the integer and notation paths.
    #[test]
    fn g17_matches_snprintf() {
        let mut next = xorshift(0x2545f4914f6cdd1d);
        let check = |v: f64| {
            let (mut ours, mut libc) = (Vec::new(), Vec::new());
            format_g17(v, &mut ours);
            format_g17_libc(v, &mut libc);
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&libc),
                "{v:e} (bits {:#x})",
                v.to_bits()
            );
        };
        for _ in 0..300_000 {
            check(f64::from_bits(next()));
            let scale = 10f64.powi((next() % 40) as i32 - 20);
            check((next() % 2_000_001) as f64 * scale - 1e6 * scale);
            check((next() >> (next() % 64)) as i64 as f64);
        }
        for v in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1e16,
            1e17,
            -1e17,
            99999999999999999.0,
            1e17 - 16.0,
            9007199254740993.0,
            1e-4,
            1e-5,
            0.00012345,
            123456789012345678.0,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            2.5,
            0.125,
            1e22,
            1e21,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            check(v);
        }
    }

    #[test]
    fn g17_format() {
        assert_eq!(g17(1.5), "1.5");
        assert_eq!(g17(0.1), "0.10000000000000001");
        assert_eq!(g17(1e20), "1e+20");
        assert_eq!(g17(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn long_double_keeps_redis_precision() {
        let a = LongDouble::parse(b"10.5").unwrap();
        let b = LongDouble::parse(b"0.1").unwrap();
        assert_eq!(a.add(&b).to_human_string(), b"10.6");
        assert_eq!(LongDouble::parse(b"-0.0").unwrap().to_human_string(), b"0");
        assert!(LongDouble::parse(b"nan").is_none());
        assert!(LongDouble::parse(b" 1").is_none());
    }
}
