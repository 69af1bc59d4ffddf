//! Roberto Ierusalimschy's `struct` library (0.2, as Redis bundles it):
//! struct.pack, struct.unpack and struct.size over C types of an LP64
//! platform (short 2, int 4, long 8, size_t 8 bytes; maximum alignment 8).

use super::super::lua::*;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

const MAXINTSIZE: usize = 32;
const MAXALIGN: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Endian {
    Big,
    Little,
}

struct Header {
    endian: Endian,
    align: usize,
}

impl Header {
    fn new() -> Header {
        Header {
            endian: Endian::Little,
            align: 1,
        }
    }
}

/// Why an operation failed; raised by the C function once Rust is done.
enum Fail {
    /// luaL_error's message (with the position prefix).
    Msg(String),
    /// luaL_argerror(narg, msg).
    Arg(c_int, String),
    /// Let the standard argument check raise its own message.
    CheckNumber(c_int),
    CheckString(c_int),
}

unsafe fn raise_fail(l: *mut lua_State, f: Fail) -> c_int {
    match f {
        Fail::Msg(m) => {
            ffi::luaL_where(l, 1);
            push_str(l, &m);
            drop(m);
            ffi::lua_concat(l, 2);
            raise(l)
        }
        Fail::Arg(n, m) => {
            push_str(l, &m);
            drop(m);
            let p = ffi::lua_tolstring(l, -1, std::ptr::null_mut());
            ffi::luaL_argerror(l, n, p)
        }
        Fail::CheckNumber(n) => {
            ffi::luaL_checknumber(l, n);
            0
        }
        Fail::CheckString(n) => {
            ffi::luaL_checklstring(l, n, std::ptr::null_mut());
            0
        }
    }
}

fn getnum(fmt: &[u8], i: &mut usize, df: usize) -> Result<usize, Fail> {
    if !fmt.get(*i).is_some_and(u8::is_ascii_digit) {
        return Ok(df);
    }
    let mut a: i64 = 0;
    while let Some(&c) = fmt.get(*i).filter(|c| c.is_ascii_digit()) {
        let d = (c - b'0') as i64;
        if a > (i32::MAX as i64 / 10) || a * 10 > (i32::MAX as i64 - d) {
            return Err(Fail::Msg("integral size overflow".into()));
        }
        a = a * 10 + d;
        *i += 1;
    }
    Ok(a as usize)
}

fn optsize(opt: u8, fmt: &[u8], i: &mut usize) -> Result<usize, Fail> {
    Ok(match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'x' => 1,
        b'c' => getnum(fmt, i, 1)?,
        b'i' | b'I' => {
            let sz = getnum(fmt, i, 4)?;
            if sz > MAXINTSIZE {
                return Err(Fail::Msg(format!(
                    "integral size {sz} is larger than limit of {MAXINTSIZE}"
                )));
            }
            sz
        }
        _ => 0,
    })
}

fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

fn controloptions(opt: u8, fmt: &[u8], i: &mut usize, h: &mut Header) -> Result<(), Fail> {
    match opt {
        b' ' => Ok(()),
        b'>' => {
            h.endian = Endian::Big;
            Ok(())
        }
        b'<' => {
            h.endian = Endian::Little;
            Ok(())
        }
        b'!' => {
            let a = getnum(fmt, i, MAXALIGN)?;
            if a == 0 || a & (a - 1) != 0 {
                return Err(Fail::Msg(format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
            Ok(())
        }
        _ => Err(Fail::Arg(
            1,
            format!("invalid format option '{}'", opt as char),
        )),
    }
}

/// The format string: a C string, so it ends at a NUL byte.
unsafe fn format_arg<'a>(l: *mut lua_State) -> Option<&'a [u8]> {
    let f = to_bytes(l, 1)?;
    Some(&f[..memchr::memchr(0, f).unwrap_or(f.len())])
}

/// lua_struct.c's putinteger conversion, `n < 0 ? (Uinttype)(Inttype)n :
/// (Uinttype)n`, with the values x86-64 gives where C leaves the result
/// undefined: a number out of range (or NaN) converts to the "integer
/// indefinite" 0x8000000000000000, and a conversion to unsigned of one at
/// or above 2^63 subtracts 2^63 first and flips the top bit back (so
/// 1e300 packs as 0, where a saturating conversion gives all ones).
fn c_integer(n: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    const INDEFINITE: u64 = 1 << 63;
    let cvttsd2si = |x: f64| {
        if (-TWO_63..TWO_63).contains(&x) {
            x as i64 as u64
        } else {
            INDEFINITE
        }
    };
    if n < TWO_63 {
        cvttsd2si(n)
    } else {
        cvttsd2si(n - TWO_63) ^ INDEFINITE
    }
}

unsafe fn pack(l: *mut lua_State) -> Result<Vec<u8>, Fail> {
    let fmt = format_arg(l).ok_or(Fail::CheckString(1))?;
    let mut h = Header::new();
    let mut arg = 2;
    let mut out = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(opt, fmt, &mut i)?;
        let toalign = gettoalign(out.len(), &h, opt, size);
        out.resize(out.len() + toalign, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                if ffi::lua_isnumber(l, arg) == 0 {
                    return Err(Fail::CheckNumber(arg));
                }
                let n = ffi::lua_tonumber(l, arg);
                arg += 1;
                let mut value = c_integer(n);
                let mut buf = [0u8; MAXINTSIZE];
                match h.endian {
                    Endian::Little => {
                        for b in buf.iter_mut().take(size) {
                            *b = value as u8;
                            value = value.checked_shr(8).unwrap_or(0);
                        }
                    }
                    Endian::Big => {
                        for b in buf[..size].iter_mut().rev() {
                            *b = value as u8;
                            value = value.checked_shr(8).unwrap_or(0);
                        }
                    }
                }
                out.extend_from_slice(&buf[..size]);
            }
            b'x' => out.push(0),
            b'f' => {
                if ffi::lua_isnumber(l, arg) == 0 {
                    return Err(Fail::CheckNumber(arg));
                }
                let f = ffi::lua_tonumber(l, arg) as f32;
                arg += 1;
                out.extend_from_slice(&match h.endian {
                    Endian::Little => f.to_le_bytes(),
                    Endian::Big => f.to_be_bytes(),
                });
            }
            b'd' => {
                if ffi::lua_isnumber(l, arg) == 0 {
                    return Err(Fail::CheckNumber(arg));
                }
                let d = ffi::lua_tonumber(l, arg);
                arg += 1;
                out.extend_from_slice(&match h.endian {
                    Endian::Little => d.to_le_bytes(),
                    Endian::Big => d.to_be_bytes(),
                });
            }
            b'c' | b's' => {
                let Some(s) = to_bytes(l, arg) else {
                    return Err(Fail::CheckString(arg));
                };
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(Fail::Arg(arg, "string too short".into()));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => controloptions(opt, fmt, &mut i, &mut h)?,
        }
    }
    Ok(out)
}

unsafe extern "C-unwind" fn b_pack(l: *mut lua_State) -> c_int {
    match pack(l) {
        Ok(out) => push_buffer(l, out),
        Err(f) => raise_fail(l, f),
    }
}

fn getinteger(buf: &[u8], endian: Endian, signed: bool) -> f64 {
    let mut v: u64 = 0;
    let size = buf.len();
    match endian {
        Endian::Big => {
            for &b in buf {
                v = (v << 8) | b as u64;
            }
        }
        Endian::Little => {
            for &b in buf.iter().rev() {
                v = (v << 8) | b as u64;
            }
        }
    }
    if !signed {
        return v as f64;
    }
    let mask = u64::MAX
        .checked_shl((size * 8).saturating_sub(1) as u32)
        .unwrap_or(0);
    if v & mask != 0 {
        v |= mask;
    }
    v as i64 as f64
}

unsafe fn unpack(l: *mut lua_State) -> Result<c_int, Fail> {
    let fmt = format_arg(l).ok_or(Fail::CheckString(1))?;
    let data = to_bytes(l, 2).ok_or(Fail::CheckString(2))?;
    let ld = data.len();
    let pos: i64 = if ffi::lua_isnoneornil(l, 3) != 0 {
        1
    } else if ffi::lua_isnumber(l, 3) == 0 {
        return Err(Fail::CheckNumber(3));
    } else {
        ffi::lua_tonumber(l, 3) as i64
    };
    let mut pos = pos as u64 as usize;
    if pos == 0 {
        return Err(Fail::Arg(3, "offset must be 1 or greater".into()));
    }
    pos -= 1;
    let mut n = 0;
    let mut h = Header::new();
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(opt, fmt, &mut i)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return Err(Fail::Arg(2, "data string too short".into()));
        }
        if ffi::lua_checkstack(l, 2) == 0 {
            return Err(Fail::Msg("stack overflow (too many results)".into()));
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let v = getinteger(&data[pos..pos + size], h.endian, opt.is_ascii_lowercase());
                ffi::lua_pushnumber(l, v);
                n += 1;
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or([0; 4]);
                let f = match h.endian {
                    Endian::Little => f32::from_le_bytes(b),
                    Endian::Big => f32::from_be_bytes(b),
                };
                ffi::lua_pushnumber(l, f as f64);
                n += 1;
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or([0; 8]);
                let d = match h.endian {
                    Endian::Little => f64::from_le_bytes(b),
                    Endian::Big => f64::from_be_bytes(b),
                };
                ffi::lua_pushnumber(l, d);
                n += 1;
            }
            b'c' => {
                if size == 0 {
                    if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                        return Err(Fail::Msg("format 'c0' needs a previous size".into()));
                    }
                    size = ffi::lua_tonumber(l, -1) as usize;
                    pop(l, 1);
                    n -= 1;
                    if !(size <= ld && pos <= ld - size) {
                        return Err(Fail::Arg(2, "data string too short".into()));
                    }
                }
                push_bytes(l, &data[pos..pos + size]);
                n += 1;
            }
            b's' => {
                let Some(e) = memchr::memchr(0, &data[pos..]) else {
                    return Err(Fail::Msg("unfinished string in data".into()));
                };
                size = e + 1;
                push_bytes(l, &data[pos..pos + e]);
                n += 1;
            }
            _ => controloptions(opt, fmt, &mut i, &mut h)?,
        }
        pos += size;
    }
    ffi::lua_pushinteger(l, (pos + 1) as i64);
    Ok(n + 1)
}

unsafe extern "C-unwind" fn b_unpack(l: *mut lua_State) -> c_int {
    match unpack(l) {
        Ok(n) => n,
        Err(f) => raise_fail(l, f),
    }
}

unsafe fn size(l: *mut lua_State) -> Result<usize, Fail> {
    let fmt = format_arg(l).ok_or(Fail::CheckString(1))?;
    let mut h = Header::new();
    let mut pos = 0usize;
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let size = optsize(opt, fmt, &mut i)?;
        pos += gettoalign(pos, &h, opt, size);
        if opt == b's' {
            return Err(Fail::Arg(1, "option 's' has no fixed size".into()));
        } else if opt == b'c' && size == 0 {
            return Err(Fail::Arg(1, "option 'c0' has no fixed size".into()));
        }
        if !opt.is_ascii_alphanumeric() {
            controloptions(opt, fmt, &mut i, &mut h)?;
        }
        pos += size;
    }
    Ok(pos)
}

unsafe extern "C-unwind" fn b_size(l: *mut lua_State) -> c_int {
    match size(l) {
        Ok(n) => {
            ffi::lua_pushinteger(l, n as i64);
            1
        }
        Err(f) => raise_fail(l, f),
    }
}

pub unsafe fn open(l: *mut lua_State) {
    super::register(
        l,
        "struct",
        &[("pack", b_pack), ("unpack", b_unpack), ("size", b_size)],
    );
}
