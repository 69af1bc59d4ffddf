//! Lua CJSON 2.1.0 (`cjson`), as Redis bundles it: cjson.encode and
//! cjson.decode with the configuration functions (encode_sparse_array,
//! encode_max_depth, decode_max_depth, encode_number_precision,
//! encode_keep_buffer, encode_invalid_numbers, decode_invalid_numbers),
//! cjson.new and cjson.null.
//!
//! Behaviour kept from that version because scripts observe it: numbers
//! are written with "%.14g"; '/' is escaped; tables whose keys are all
//! positive integers are arrays (unless excessively sparse), other tables
//! objects, an empty table `{}`; JSON null decodes to cjson.null (a null
//! light userdata); decoding accepts what strtod accepts (hexadecimal,
//! inf, nan, leading '+' or zeros) unless decode_invalid_numbers is off.
//! The encode buffer kept between calls is only a memory optimisation of
//! the C code; here the setting is just remembered and reported.

use super::super::lua::*;
use mlua::ffi::{self, lua_State};
use std::ffi::{c_char, c_int};

/// Per-module configuration, a userdata shared by the module's functions
/// as their first upvalue. Plain data: Lua frees it without a finaliser.
#[derive(Clone, Copy)]
struct Config {
    encode_sparse_convert: c_int,
    encode_sparse_ratio: c_int,
    encode_sparse_safe: c_int,
    encode_max_depth: c_int,
    encode_invalid_numbers: c_int,
    encode_number_precision: c_int,
    encode_keep_buffer: c_int,
    decode_invalid_numbers: c_int,
    decode_max_depth: c_int,
}

const DEFAULT: Config = Config {
    encode_sparse_convert: 0,
    encode_sparse_ratio: 2,
    encode_sparse_safe: 10,
    encode_max_depth: 1000,
    encode_invalid_numbers: 0,
    encode_number_precision: 14,
    encode_keep_buffer: 1,
    decode_invalid_numbers: 1,
    decode_max_depth: 1000,
};

unsafe fn config<'a>(l: *mut lua_State) -> &'a mut Config {
    &mut *(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut Config)
}

// ----------------------------------------------------------------------------
// Configuration functions
// ----------------------------------------------------------------------------

/// json_arg_init: at most `args` arguments, padded with nils.
unsafe fn arg_init(l: *mut lua_State, args: c_int) {
    if ffi::lua_gettop(l) > args {
        ffi::luaL_argerror(l, args + 1, c"found too many arguments".as_ptr());
    }
    while ffi::lua_gettop(l) < args {
        ffi::lua_pushnil(l);
    }
}

unsafe fn integer_option(
    l: *mut lua_State,
    idx: c_int,
    setting: &mut c_int,
    min: c_int,
    max: c_int,
) {
    if ffi::lua_isnil(l, idx) == 0 {
        let value = ffi::luaL_checkinteger(l, idx) as c_int;
        if !(min <= value && value <= max) {
            let msg = format!("expected integer between {min} and {max}");
            push_str(l, &msg);
            drop(msg);
            ffi::luaL_argerror(l, 1, ffi::lua_tolstring(l, -1, std::ptr::null_mut()));
        }
        *setting = value;
    }
    ffi::lua_pushinteger(l, *setting as i64);
}

/// json_enum_option with the options of `options` (index = value);
/// booleans are accepted and reported when `bool_true` is set.
unsafe fn enum_option(
    l: *mut lua_State,
    idx: c_int,
    setting: &mut c_int,
    options: &[&str],
    bool_true: c_int,
) {
    if ffi::lua_isnil(l, idx) == 0 {
        if bool_true != 0 && ffi::lua_type(l, idx) == ffi::LUA_TBOOLEAN {
            *setting = ffi::lua_toboolean(l, idx) * bool_true;
        } else {
            let given = to_bytes(l, idx);
            match given.and_then(|g| options.iter().position(|o| o.as_bytes() == g)) {
                Some(i) => *setting = i as c_int,
                None => {
                    // luaL_checkoption's errors: a type error, or an
                    // unknown option.
                    ffi::luaL_checklstring(l, idx, std::ptr::null_mut());
                    push_str(l, "invalid option '");
                    ffi::lua_pushvalue(l, idx);
                    push_str(l, "'");
                    ffi::lua_concat(l, 3);
                    ffi::luaL_argerror(l, idx, ffi::lua_tolstring(l, -1, std::ptr::null_mut()));
                }
            }
        }
    }
    if bool_true != 0 && (*setting == 0 || *setting == bool_true) {
        ffi::lua_pushboolean(l, *setting);
    } else {
        push_str(l, options[*setting as usize]);
    }
}

const BOOL_OPTIONS: &[&str] = &["off", "on"];

unsafe extern "C-unwind" fn cfg_encode_sparse_array(l: *mut lua_State) -> c_int {
    arg_init(l, 3);
    let cfg = config(l);
    enum_option(l, 1, &mut cfg.encode_sparse_convert, BOOL_OPTIONS, 1);
    integer_option(l, 2, &mut cfg.encode_sparse_ratio, 0, i32::MAX);
    integer_option(l, 3, &mut cfg.encode_sparse_safe, 0, i32::MAX);
    3
}

unsafe extern "C-unwind" fn cfg_encode_max_depth(l: *mut lua_State) -> c_int {
    arg_init(l, 1);
    let cfg = config(l);
    integer_option(l, 1, &mut cfg.encode_max_depth, 1, i32::MAX);
    1
}

unsafe extern "C-unwind" fn cfg_decode_max_depth(l: *mut lua_State) -> c_int {
    arg_init(l, 1);
    let cfg = config(l);
    integer_option(l, 1, &mut cfg.decode_max_depth, 1, i32::MAX);
    1
}

unsafe extern "C-unwind" fn cfg_encode_number_precision(l: *mut lua_State) -> c_int {
    arg_init(l, 1);
    let cfg = config(l);
    integer_option(l, 1, &mut cfg.encode_number_precision, 1, 14);
    1
}

unsafe extern "C-unwind" fn cfg_encode_keep_buffer(l: *mut lua_State) -> c_int {
    arg_init(l, 1);
    let cfg = config(l);
    enum_option(l, 1, &mut cfg.encode_keep_buffer, BOOL_OPTIONS, 1);
    1
}

unsafe extern "C-unwind" fn cfg_encode_invalid_numbers(l: *mut lua_State) -> c_int {
    arg_init(l, 1);
    let cfg = config(l);
    enum_option(
        l,
        1,
        &mut cfg.encode_invalid_numbers,
        &["off", "on", "null"],
        1,
    );
    1
}

unsafe extern "C-unwind" fn cfg_decode_invalid_numbers(l: *mut lua_State) -> c_int {
    arg_init(l, 1);
    let cfg = config(l);
    enum_option(l, 1, &mut cfg.decode_invalid_numbers, BOOL_OPTIONS, 1);
    1
}

// ----------------------------------------------------------------------------
// Encoding
// ----------------------------------------------------------------------------

fn escape(c: u8) -> Option<&'static [u8]> {
    Some(match c {
        b'\x08' => b"\\b",
        b'\t' => b"\\t",
        b'\n' => b"\\n",
        b'\x0c' => b"\\f",
        b'\r' => b"\\r",
        b'"' => b"\\\"",
        b'/' => b"\\/",
        b'\\' => b"\\\\",
        _ => return None,
    })
}

fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    for &c in s {
        if let Some(e) = escape(c) {
            out.extend_from_slice(e);
        } else if c < 0x20 || c == 0x7f {
            out.extend_from_slice(format!("\\u{:04x}", c).as_bytes());
        } else {
            out.push(c);
        }
    }
    out.push(b'"');
}

/// "%.<precision>g".
fn format_number(out: &mut Vec<u8>, n: f64, precision: c_int) {
    let mut buf = [0u8; 64];
    // SAFETY: one int and one double for "%.*g", into a buffer whose size
    // snprintf respects.
    let len = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut c_char,
            buf.len(),
            c"%.*g".as_ptr(),
            precision,
            n,
        )
    };
    out.extend_from_slice(&buf[..(len.max(0) as usize).min(buf.len() - 1)]);
}

unsafe fn type_name(l: *mut lua_State, idx: c_int) -> String {
    let p = ffi::lua_typename(l, ffi::lua_type(l, idx));
    std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
}

unsafe fn append_number(
    l: *mut lua_State,
    cfg: &Config,
    out: &mut Vec<u8>,
    idx: c_int,
) -> Result<(), String> {
    let n = ffi::lua_tonumber(l, idx);
    match cfg.encode_invalid_numbers {
        0 => {
            if n.is_nan() || n.is_infinite() {
                return Err(format!(
                    "Cannot serialise {}: must not be NaN or Inf",
                    type_name(l, idx)
                ));
            }
        }
        1 => {
            if n.is_nan() {
                out.extend_from_slice(b"nan");
                return Ok(());
            }
        }
        _ => {
            if n.is_nan() || n.is_infinite() {
                out.extend_from_slice(b"null");
                return Ok(());
            }
        }
    }
    format_number(out, n, cfg.encode_number_precision);
    Ok(())
}

/// lua_array_length: the array length of the table on top, or None for an
/// object (or an error for an excessively sparse array when conversion is
/// off).
unsafe fn array_length(l: *mut lua_State, cfg: &Config) -> Result<Option<i64>, String> {
    let t = ffi::lua_gettop(l);
    let (mut max, mut items) = (0i64, 0i64);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, t) != 0 {
        if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER {
            let k = ffi::lua_tonumber(l, -2);
            if k != 0.0 && k.floor() == k && k >= 1.0 {
                if k > max as f64 {
                    max = k as i32 as i64;
                }
                items += 1;
                pop(l, 1);
                continue;
            }
        }
        ffi::lua_settop(l, t);
        return Ok(None);
    }
    if cfg.encode_sparse_ratio > 0
        && max > items * cfg.encode_sparse_ratio as i64
        && max > cfg.encode_sparse_safe as i64
    {
        if cfg.encode_sparse_convert == 0 {
            return Err(format!(
                "Cannot serialise {}: excessively sparse array",
                type_name(l, -1)
            ));
        }
        return Ok(None);
    }
    Ok(Some(max))
}

/// json_append_data for the value on top (left on the stack).
unsafe fn append_data(
    l: *mut lua_State,
    cfg: &Config,
    depth: c_int,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING => append_string(out, to_bytes(l, -1).unwrap_or(b"")),
        ffi::LUA_TNUMBER => append_number(l, cfg, out, -1)?,
        ffi::LUA_TBOOLEAN => out.extend_from_slice(if ffi::lua_toboolean(l, -1) != 0 {
            b"true"
        } else {
            b"false"
        }),
        ffi::LUA_TTABLE => {
            let depth = depth + 1;
            if depth > cfg.encode_max_depth || ffi::lua_checkstack(l, 3) == 0 {
                return Err(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            let t = ffi::lua_gettop(l);
            match array_length(l, cfg)? {
                Some(len) if len > 0 => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        ffi::lua_rawgeti_(l, t, i as c_int);
                        append_data(l, cfg, depth, out)?;
                        pop(l, 1);
                    }
                    out.push(b']');
                }
                _ => {
                    out.push(b'{');
                    let mut comma = false;
                    ffi::lua_pushnil(l);
                    while ffi::lua_next(l, t) != 0 {
                        if comma {
                            out.push(b',');
                        }
                        comma = true;
                        match ffi::lua_type(l, -2) {
                            ffi::LUA_TNUMBER => {
                                out.push(b'"');
                                append_number(l, cfg, out, -2)?;
                                out.extend_from_slice(b"\":");
                            }
                            ffi::LUA_TSTRING => {
                                append_string(out, to_bytes(l, -2).unwrap_or(b""));
                                out.push(b':');
                            }
                            _ => {
                                return Err(format!(
                                    "Cannot serialise {}: table key must be a number or string",
                                    type_name(l, -2)
                                ))
                            }
                        }
                        append_data(l, cfg, depth, out)?;
                        pop(l, 1);
                    }
                    out.push(b'}');
                }
            }
        }
        ffi::LUA_TNIL => out.extend_from_slice(b"null"),
        ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => {
            out.extend_from_slice(b"null")
        }
        _ => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                type_name(l, -1)
            ))
        }
    }
    Ok(())
}

unsafe extern "C-unwind" fn json_encode(l: *mut lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        return ffi::luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
    }
    let cfg = *config(l);
    let mut out = Vec::new();
    match append_data(l, &cfg, 0, &mut out) {
        Ok(()) => push_buffer(l, out),
        Err(e) => {
            drop(out);
            raise_owned(l, e)
        }
    }
}

// ----------------------------------------------------------------------------
// Decoding
// ----------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Number(_) => "T_NUMBER",
            Tok::Boolean(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(e) => e,
        }
    }
}

struct Parser<'a> {
    /// The JSON text; a NUL byte (or the end) terminates it, as in C.
    data: &'a [u8],
    /// The text as the NUL-terminated C string Lua keeps (for strtod).
    cstr: *const c_char,
    pos: usize,
    tmp: Vec<u8>,
    cfg: Config,
    depth: c_int,
}

impl Parser<'_> {
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn is_invalid_number(&self) -> bool {
        let mut p = self.pos;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        let c = self.at(p);
        if c == b'0' {
            let c2 = self.at(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        } else if c <= b'9' {
            return false;
        }
        let rest = |s: &[u8]| (0..3).all(|i| self.at(p + i).eq_ignore_ascii_case(&s[i]));
        rest(b"inf") || rest(b"nan")
    }

    fn number(&mut self) -> (Tok, usize) {
        let mut end: *mut c_char = std::ptr::null_mut();
        // SAFETY: `cstr` is the NUL-terminated text and pos is within it.
        let n = unsafe { libc::strtod(self.cstr.add(self.pos), &mut end) };
        let consumed = end as usize - unsafe { self.cstr.add(self.pos) } as usize;
        if consumed == 0 {
            (Tok::Error("invalid number"), self.pos)
        } else {
            let at = self.pos;
            self.pos += consumed;
            (Tok::Number(n), at)
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut v = 0;
        for i in 0..4 {
            let d = (self.at(at + i) as char).to_digit(16)?;
            v = (v << 4) | d;
        }
        Some(v)
    }

    fn unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.pos + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let mut buf = [0u8; 4];
        let n = if cp <= 0x7F {
            buf[0] = cp as u8;
            1
        } else if cp <= 0x7FF {
            buf[0] = (cp >> 6) as u8 | 0xC0;
            buf[1] = (cp & 0x3F) as u8 | 0x80;
            2
        } else if cp <= 0xFFFF {
            buf[0] = (cp >> 12) as u8 | 0xE0;
            buf[1] = ((cp >> 6) & 0x3F) as u8 | 0x80;
            buf[2] = (cp & 0x3F) as u8 | 0x80;
            3
        } else {
            buf[0] = (cp >> 18) as u8 | 0xF0;
            buf[1] = ((cp >> 12) & 0x3F) as u8 | 0x80;
            buf[2] = ((cp >> 6) & 0x3F) as u8 | 0x80;
            buf[3] = (cp & 0x3F) as u8 | 0x80;
            4
        };
        self.tmp.extend_from_slice(&buf[..n]);
        self.pos += len;
        true
    }

    fn string(&mut self) -> Tok {
        self.pos += 1;
        self.tmp.clear();
        loop {
            let ch = self.at(self.pos);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return Tok::Error("unexpected end of string");
            }
            let mut out = ch;
            if ch == b'\\' {
                out = match self.at(self.pos + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'f' => 12,
                    b'r' => b'\r',
                    b'u' => {
                        if self.unicode_escape() {
                            continue;
                        }
                        return Tok::Error("invalid unicode escape code");
                    }
                    _ => return Tok::Error("invalid escape code"),
                };
                self.pos += 1;
            }
            self.tmp.push(out);
            self.pos += 1;
        }
        self.pos += 1;
        Tok::Str
    }

    /// The next token and the index where it starts.
    fn next(&mut self) -> (Tok, usize) {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let at = self.pos;
        let ch = self.at(self.pos);
        let single = match ch {
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return (t, at);
        }
        if ch == 0 {
            return (Tok::End, at);
        }
        let rest = &self.data[self.pos..];
        match ch {
            b'"' => {
                // A bad string reports where the problem is, not where
                // the string starts (json_set_token_error).
                let t = self.string();
                match t {
                    Tok::Error(_) => (t, self.pos),
                    _ => (t, at),
                }
            }
            b'-' | b'0'..=b'9' => {
                if self.cfg.decode_invalid_numbers == 0 && self.is_invalid_number() {
                    return (Tok::Error("invalid number"), at);
                }
                let (t, _) = self.number();
                (t, at)
            }
            b't' if rest.starts_with(b"true") => {
                self.pos += 4;
                (Tok::Boolean(true), at)
            }
            b'f' if rest.starts_with(b"false") => {
                self.pos += 5;
                (Tok::Boolean(false), at)
            }
            b'n' if rest.starts_with(b"null") => {
                self.pos += 4;
                (Tok::Null, at)
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+'
                if self.cfg.decode_invalid_numbers != 0 && self.is_invalid_number() =>
            {
                let (t, _) = self.number();
                (t, at)
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => (Tok::Error("invalid token"), at),
            _ => (Tok::Error("invalid token"), at),
        }
    }
}

fn parse_error(expected: &str, tok: Tok, at: usize) -> String {
    format!(
        "Expected {} but found {} at character {}",
        expected,
        tok.name(),
        at + 1
    )
}

unsafe fn descend(l: *mut lua_State, p: &mut Parser, slots: c_int) -> Result<(), String> {
    p.depth += 1;
    if p.depth <= p.cfg.decode_max_depth && ffi::lua_checkstack(l, slots) != 0 {
        return Ok(());
    }
    Err(format!(
        "Found too many nested data structures ({}) at character {}",
        p.depth, p.pos
    ))
}

unsafe fn value(l: *mut lua_State, p: &mut Parser, tok: Tok, at: usize) -> Result<(), String> {
    match tok {
        Tok::Str => push_bytes(l, &p.tmp),
        Tok::Number(n) => ffi::lua_pushnumber(l, n),
        Tok::Boolean(b) => ffi::lua_pushboolean(l, b as c_int),
        Tok::Null => ffi::lua_pushlightuserdata(l, std::ptr::null_mut()),
        Tok::ObjBegin => {
            descend(l, p, 3)?;
            ffi::lua_createtable(l, 0, 0);
            let (mut tok, mut at) = p.next();
            if tok == Tok::ObjEnd {
                p.depth -= 1;
                return Ok(());
            }
            loop {
                if tok != Tok::Str {
                    return Err(parse_error("object key string", tok, at));
                }
                push_bytes(l, &p.tmp);
                let (t, a) = p.next();
                if t != Tok::Colon {
                    return Err(parse_error("colon", t, a));
                }
                let (t, a) = p.next();
                value(l, p, t, a)?;
                ffi::lua_rawset(l, -3);
                let (t, a) = p.next();
                if t == Tok::ObjEnd {
                    p.depth -= 1;
                    return Ok(());
                }
                if t != Tok::Comma {
                    return Err(parse_error("comma or object end", t, a));
                }
                (tok, at) = p.next();
            }
        }
        Tok::ArrBegin => {
            descend(l, p, 2)?;
            ffi::lua_createtable(l, 0, 0);
            let (mut tok, mut at) = p.next();
            if tok == Tok::ArrEnd {
                p.depth -= 1;
                return Ok(());
            }
            let mut i = 1;
            loop {
                value(l, p, tok, at)?;
                ffi::lua_rawseti_(l, -2, i);
                i += 1;
                let (t, a) = p.next();
                if t == Tok::ArrEnd {
                    p.depth -= 1;
                    return Ok(());
                }
                if t != Tok::Comma {
                    return Err(parse_error("comma or array end", t, a));
                }
                (tok, at) = p.next();
            }
        }
        _ => return Err(parse_error("value", tok, at)),
    }
    Ok(())
}

unsafe fn decode(l: *mut lua_State) -> Result<(), String> {
    let mut len = 0usize;
    let s = ffi::lua_tolstring(l, 1, &mut len);
    let data = std::slice::from_raw_parts(s as *const u8, len);
    if len >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err("JSON parser does not support UTF-16 or UTF-32".into());
    }
    let mut p = Parser {
        data,
        cstr: s,
        pos: 0,
        tmp: Vec::with_capacity(len.min(1 << 16)),
        cfg: *config(l),
        depth: 0,
    };
    let (t, a) = p.next();
    value(l, &mut p, t, a)?;
    let (t, a) = p.next();
    if t != Tok::End {
        return Err(parse_error("the end", t, a));
    }
    Ok(())
}

unsafe extern "C-unwind" fn json_decode(l: *mut lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        return ffi::luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
    }
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    match decode(l) {
        Ok(()) => 1,
        Err(e) => raise_owned(l, e),
    }
}

// ----------------------------------------------------------------------------
// Module
// ----------------------------------------------------------------------------

/// lua_cjson_new: a module table with its own configuration.
unsafe extern "C-unwind" fn cjson_new(l: *mut lua_State) -> c_int {
    push_module(l);
    1
}

unsafe fn push_module(l: *mut lua_State) {
    ffi::lua_createtable(l, 0, 12);
    let t = ffi::lua_gettop(l);
    let cfg = ffi::lua_newuserdata(l, std::mem::size_of::<Config>()) as *mut Config;
    cfg.write(DEFAULT);
    let funcs: &[(&str, lua_CFunction)] = &[
        ("encode", json_encode),
        ("decode", json_decode),
        ("encode_sparse_array", cfg_encode_sparse_array),
        ("encode_max_depth", cfg_encode_max_depth),
        ("decode_max_depth", cfg_decode_max_depth),
        ("encode_number_precision", cfg_encode_number_precision),
        ("encode_keep_buffer", cfg_encode_keep_buffer),
        ("encode_invalid_numbers", cfg_encode_invalid_numbers),
        ("decode_invalid_numbers", cfg_decode_invalid_numbers),
        ("new", cjson_new),
    ];
    for (name, f) in funcs {
        ffi::lua_pushvalue(l, t + 1);
        ffi::lua_pushcclosure(l, *f, 1);
        rawset_str(l, t, name);
    }
    pop(l, 1);
    ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
    rawset_str(l, t, "null");
    push_str(l, "cjson");
    rawset_str(l, t, "_NAME");
    push_str(l, "2.1.0");
    rawset_str(l, t, "_VERSION");
}

pub unsafe fn open(l: *mut lua_State) {
    push_module(l);
    rawset_str(l, ffi::LUA_GLOBALSINDEX, "cjson");
}
