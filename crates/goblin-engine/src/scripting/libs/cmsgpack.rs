//! lua-cmsgpack 0.4.0 (`cmsgpack`), as Redis bundles it: MessagePack
//! encoding of Lua values (cmsgpack.pack) and decoding (unpack,
//! unpack_one, unpack_limit).
//!
//! Encoding rules of that version: numbers that are exact 64-bit integers
//! become the smallest integer type, others a float when the value
//! survives the round trip through `float`, else a double; strings use the
//! str8/16/32 types; a table whose keys are exactly 1..n is an array, any
//! other a map; tables nested deeper than 16 levels encode as nil (so
//! circular references end).

use super::super::lua::*;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

const MAX_NESTING: usize = 16;

fn encode_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        buf.push(0xa0 | len as u8);
    } else if len <= 0xff {
        buf.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        buf.push(0xda);
        buf.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        buf.push(0xdb);
        buf.extend_from_slice(&(len as u32).to_be_bytes());
    }
    buf.extend_from_slice(s);
}

fn encode_double(buf: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if d == f as f64 {
        buf.push(0xca);
        buf.extend_from_slice(&f.to_be_bytes());
    } else {
        buf.push(0xcb);
        buf.extend_from_slice(&d.to_be_bytes());
    }
}

fn encode_int(buf: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            buf.push(n as u8);
        } else if n <= 0xff {
            buf.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            buf.push(0xcd);
            buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            buf.push(0xce);
            buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            buf.push(0xcf);
            buf.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        buf.push(n as i8 as u8);
    } else if n >= -128 {
        buf.extend_from_slice(&[0xd0, n as u8]);
    } else if n >= -32768 {
        buf.push(0xd1);
        buf.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2147483648 {
        buf.push(0xd2);
        buf.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        buf.push(0xd3);
        buf.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_len(buf: &mut Vec<u8>, n: usize, fix: u8, b16: u8, b32: u8) {
    if n <= 15 {
        buf.push(fix | n as u8);
    } else if n <= 0xffff {
        buf.push(b16);
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        buf.push(b32);
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// Keys exactly 1..n (table_is_an_array).
unsafe fn is_array(l: *mut lua_State) -> bool {
    let top = ffi::lua_gettop(l);
    let (mut count, mut max) = (0i64, 0i64);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, top) != 0 {
        pop(l, 1);
        if ffi::lua_type(l, -1) != ffi::LUA_TNUMBER {
            ffi::lua_settop(l, top);
            return false;
        }
        let n = ffi::lua_tonumber(l, -1);
        if n <= 0.0 || n.is_infinite() || (n as i32) as f64 != n {
            ffi::lua_settop(l, top);
            return false;
        }
        max = max.max(n as i64);
        count += 1;
    }
    max == count
}

/// Encodes the value on top of the stack and pops it (mp_encode_lua_type).
unsafe fn encode(l: *mut lua_State, buf: &mut Vec<u8>, level: usize) {
    let mut t = ffi::lua_type(l, -1);
    if t == ffi::LUA_TTABLE && level == MAX_NESTING {
        t = ffi::LUA_TNIL;
    }
    match t {
        ffi::LUA_TSTRING => encode_bytes(buf, to_bytes(l, -1).unwrap_or(b"")),
        ffi::LUA_TBOOLEAN => buf.push(if ffi::lua_toboolean(l, -1) != 0 {
            0xc3
        } else {
            0xc2
        }),
        ffi::LUA_TNUMBER => {
            let n = ffi::lua_tonumber(l, -1);
            if !n.is_infinite() && (n as i64) as f64 == n {
                encode_int(buf, n as i64);
            } else {
                encode_double(buf, n);
            }
        }
        ffi::LUA_TTABLE => {
            ffi::lua_checkstack(l, 3);
            let tbl = ffi::lua_gettop(l);
            if is_array(l) {
                let len = ffi::lua_objlen(l, tbl);
                encode_len(buf, len, 0x90, 0xdc, 0xdd);
                for j in 1..=len {
                    ffi::lua_rawgeti_(l, tbl, j as c_int);
                    encode(l, buf, level + 1);
                }
            } else {
                let mut len = 0;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, tbl) != 0 {
                    pop(l, 1);
                    len += 1;
                }
                encode_len(buf, len, 0x80, 0xde, 0xdf);
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, tbl) != 0 {
                    ffi::lua_pushvalue(l, -2);
                    encode(l, buf, level + 1); // key
                    encode(l, buf, level + 1); // value
                }
            }
        }
        _ => buf.push(0xc0),
    }
    pop(l, 1);
}

unsafe extern "C-unwind" fn mp_pack(l: *mut lua_State) -> c_int {
    let nargs = ffi::lua_gettop(l);
    if nargs == 0 {
        return ffi::luaL_argerror(l, 0, c"MessagePack pack needs input.".as_ptr());
    }
    if ffi::lua_checkstack(l, nargs + 4) == 0 {
        return ffi::luaL_argerror(l, 0, c"Too many arguments for MessagePack pack.".as_ptr());
    }
    let mut buf = Vec::new();
    for i in 1..=nargs {
        ffi::lua_pushvalue(l, i);
        encode(l, &mut buf, 0);
    }
    push_buffer(l, buf)
}

#[derive(PartialEq, Eq, Debug)]
enum DecodeError {
    Eof,
    BadFormat,
    Stack,
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    fn need(&self, n: usize) -> Result<&[u8], DecodeError> {
        self.data
            .get(self.pos..self.pos.checked_add(n).ok_or(DecodeError::Eof)?)
            .ok_or(DecodeError::Eof)
    }
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |acc, &x| (acc << 8) | x as u64)
}

/// Decodes one value at the cursor and pushes it (mp_decode_to_lua_type).
unsafe fn decode(l: *mut lua_State, c: &mut Cursor) -> Result<(), DecodeError> {
    let b0 = c.need(1)?[0];
    if ffi::lua_checkstack(l, 2) == 0 {
        return Err(DecodeError::Stack);
    }
    match b0 {
        0xcc => {
            let b = c.need(2)?;
            ffi::lua_pushnumber(l, b[1] as f64);
            c.pos += 2;
        }
        0xd0 => {
            let b = c.need(2)?;
            ffi::lua_pushnumber(l, b[1] as i8 as f64);
            c.pos += 2;
        }
        0xcd => {
            let b = c.need(3)?;
            ffi::lua_pushnumber(l, be(&b[1..3]) as f64);
            c.pos += 3;
        }
        0xd1 => {
            let b = c.need(3)?;
            ffi::lua_pushnumber(l, be(&b[1..3]) as u16 as i16 as f64);
            c.pos += 3;
        }
        0xce => {
            let b = c.need(5)?;
            ffi::lua_pushnumber(l, be(&b[1..5]) as f64);
            c.pos += 5;
        }
        0xd2 => {
            let b = c.need(5)?;
            ffi::lua_pushnumber(l, be(&b[1..5]) as u32 as i32 as f64);
            c.pos += 5;
        }
        0xcf => {
            // Pushed as a lua_Integer: values past 2^63 wrap, as in Redis.
            let b = c.need(9)?;
            ffi::lua_pushnumber(l, be(&b[1..9]) as i64 as f64);
            c.pos += 9;
        }
        0xd3 => {
            let b = c.need(9)?;
            ffi::lua_pushnumber(l, be(&b[1..9]) as i64 as f64);
            c.pos += 9;
        }
        0xc0 => {
            ffi::lua_pushnil(l);
            c.pos += 1;
        }
        0xc2..=0xc3 => {
            ffi::lua_pushboolean(l, (b0 == 0xc3) as c_int);
            c.pos += 1;
        }
        0xca => {
            let b = c.need(5)?;
            let f = f32::from_be_bytes([b[1], b[2], b[3], b[4]]);
            ffi::lua_pushnumber(l, f as f64);
            c.pos += 5;
        }
        0xcb => {
            let b = c.need(9)?;
            let d = f64::from_be_bytes(b[1..9].try_into().unwrap_or([0; 8]));
            ffi::lua_pushnumber(l, d);
            c.pos += 9;
        }
        0xd9..=0xdb => {
            let hdr = match b0 {
                0xd9 => 2,
                0xda => 3,
                _ => 5,
            };
            let n = be(&c.need(hdr)?[1..hdr]) as usize;
            let s = c.need(hdr + n)?;
            push_bytes(l, &s[hdr..]);
            c.pos += hdr + n;
        }
        0xdc | 0xdd => {
            let hdr = if b0 == 0xdc { 3 } else { 5 };
            let n = be(&c.need(hdr)?[1..hdr]) as usize;
            c.pos += hdr;
            decode_array(l, c, n)?;
        }
        0xde | 0xdf => {
            let hdr = if b0 == 0xde { 3 } else { 5 };
            let n = be(&c.need(hdr)?[1..hdr]) as usize;
            c.pos += hdr;
            decode_map(l, c, n)?;
        }
        _ if b0 & 0x80 == 0 => {
            ffi::lua_pushnumber(l, b0 as f64);
            c.pos += 1;
        }
        _ if b0 & 0xe0 == 0xe0 => {
            ffi::lua_pushnumber(l, b0 as i8 as f64);
            c.pos += 1;
        }
        _ if b0 & 0xe0 == 0xa0 => {
            let n = (b0 & 0x1f) as usize;
            let s = c.need(1 + n)?;
            push_bytes(l, &s[1..]);
            c.pos += 1 + n;
        }
        _ if b0 & 0xf0 == 0x90 => {
            c.pos += 1;
            decode_array(l, c, (b0 & 0xf) as usize)?;
        }
        _ if b0 & 0xf0 == 0x80 => {
            c.pos += 1;
            decode_map(l, c, (b0 & 0xf) as usize)?;
        }
        _ => return Err(DecodeError::BadFormat),
    }
    Ok(())
}

unsafe fn decode_array(l: *mut lua_State, c: &mut Cursor, n: usize) -> Result<(), DecodeError> {
    ffi::lua_createtable(l, 0, 0);
    for i in 1..=n {
        ffi::lua_pushnumber(l, i as f64);
        decode(l, c)?;
        ffi::lua_settable(l, -3);
    }
    Ok(())
}

unsafe fn decode_map(l: *mut lua_State, c: &mut Cursor, n: usize) -> Result<(), DecodeError> {
    ffi::lua_createtable(l, 0, 0);
    for _ in 0..n {
        decode(l, c)?;
        decode(l, c)?;
        if ffi::lua_isnil(l, -2) != 0
            || (ffi::lua_type(l, -2) == ffi::LUA_TNUMBER && ffi::lua_tonumber(l, -2).is_nan())
        {
            // A nil key cannot be stored (Redis's Lua raises here).
            return Err(DecodeError::BadFormat);
        }
        ffi::lua_settable(l, -3);
    }
    Ok(())
}

/// mp_unpack_full: decodes up to `limit` values from `offset`; with a
/// limit or an offset, the next offset (-1 at the end) comes first.
unsafe fn unpack_full(l: *mut lua_State, limit: i64, offset: i64) -> c_int {
    let mut len = 0usize;
    let s = ffi::luaL_checklstring(l, 1, &mut len);
    let data = std::slice::from_raw_parts(s as *const u8, len);
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return raise_owned(
            l,
            format!(
                "Invalid request to unpack with offset of {} and limit of {}.",
                offset as i32, len as i32
            ),
        );
    } else if offset as u64 > len as u64 {
        return raise_owned(
            l,
            format!(
                "Start offset {} greater than input length {}.",
                offset as i32, len as i32
            ),
        );
    }
    let limit = if decode_all { i32::MAX as i64 } else { limit };
    let mut c = Cursor {
        data,
        pos: offset as usize,
    };
    let mut cnt = 0;
    let mut failure = None;
    while c.left() > 0 && cnt < limit {
        if let Err(e) = decode(l, &mut c) {
            failure = Some(e);
            break;
        }
        cnt += 1;
    }
    match failure {
        Some(DecodeError::Eof) => return raise_str(l, "Missing bytes in input."),
        Some(DecodeError::BadFormat) => return raise_str(l, "Bad data format in input."),
        Some(DecodeError::Stack) => {
            return raise_str(
                l,
                "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)",
            )
        }
        None => {}
    }
    let mut cnt = cnt as c_int;
    if !decode_all {
        let next = if c.left() == 0 { -1 } else { c.pos as i64 };
        ffi::lua_checkstack(l, 1);
        ffi::lua_pushinteger(l, next);
        ffi::lua_insert(l, 2);
        cnt += 1;
    }
    cnt
}

unsafe extern "C-unwind" fn mp_unpack(l: *mut lua_State) -> c_int {
    unpack_full(l, 0, 0)
}

unsafe extern "C-unwind" fn mp_unpack_one(l: *mut lua_State) -> c_int {
    let offset = if ffi::lua_isnoneornil(l, 2) != 0 {
        0
    } else {
        ffi::luaL_checkinteger(l, 2) as i64
    };
    ffi::lua_settop(l, 1);
    unpack_full(l, 1, offset)
}

unsafe extern "C-unwind" fn mp_unpack_limit(l: *mut lua_State) -> c_int {
    let limit = ffi::luaL_checkinteger(l, 2) as i64;
    let offset = if ffi::lua_isnoneornil(l, 3) != 0 {
        0
    } else {
        ffi::luaL_checkinteger(l, 3) as i64
    };
    ffi::lua_settop(l, 1);
    unpack_full(l, limit, offset)
}

pub unsafe fn open(l: *mut lua_State) {
    super::register(
        l,
        "cmsgpack",
        &[
            ("pack", mp_pack),
            ("unpack", mp_unpack),
            ("unpack_one", mp_unpack_one),
            ("unpack_limit", mp_unpack_limit),
        ],
    );
    rawget_str(l, ffi::LUA_GLOBALSINDEX, "cmsgpack");
    for (k, v) in [
        ("_NAME", "cmsgpack"),
        ("_VERSION", "lua-cmsgpack 0.4.0"),
        ("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo"),
        ("_DESCRIPTION", "MessagePack C implementation for Lua"),
    ] {
        push_str(l, v);
        rawset_str(l, -2, k);
    }
    pop(l, 1);
}
