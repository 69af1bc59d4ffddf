//! Conversions between replies and Lua values, as Redis documents them
//! (script_lua.c's redisProtocolToLuaType_* and luaReplyToRedisReply).
//!
//! Reply to Lua (what redis.call returns), RESP2 and RESP3:
//! integer → number; bulk → string; null bulk / null array → false;
//! array → table; status → {ok=...}; error → {err=...}; RESP3 null → nil;
//! map → {map={k=v...}}; set → {set={member=true...}}; boolean → boolean;
//! double → {double=n}; big number → {big_number=s}; verbatim string →
//! {verbatim_string={format=..., string=...}}; attributes are skipped.
//!
//! The reply is read straight from the bytes the command wrote into the
//! script client's buffer (no intermediate tree), which is what Redis does
//! with its fake client's output buffer.
//!
//! Lua to reply (what the script returns) is `write_reply`.

use super::api::push_error;
use super::lua::*;
use crate::protocol::ReplyWriter;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

/// Pushes the Lua value of the complete reply in `buf`.
pub unsafe fn push_reply(l: *mut lua_State, buf: &[u8]) {
    let mut pos = 0;
    ffi::lua_checkstack(l, 8);
    if !parse(l, buf, &mut pos, true) {
        // Only the engine writes this buffer, so it is always complete.
        ffi::lua_pushboolean(l, 0);
    }
}

fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let start = *pos;
    let end = start + memchr::memchr(b'\r', buf.get(start..)?)?;
    *pos = end + 2;
    Some(&buf[start..end])
}

fn int_of(s: &[u8]) -> i64 {
    crate::util::number::parse_i64(s).unwrap_or(0)
}

/// Parses one reply at `pos`; pushes its value when `push` (attributes are
/// parsed with `push` false and leave nothing).
unsafe fn parse(l: *mut lua_State, buf: &[u8], pos: &mut usize, push: bool) -> bool {
    let Some(&kind) = buf.get(*pos) else {
        return false;
    };
    *pos += 1;
    let Some(text) = line(buf, pos) else {
        return false;
    };
    if push && ffi::lua_checkstack(l, 4) == 0 {
        // Redis panics here; a reply this deep cannot come from a command.
        return false;
    }
    match kind {
        b':' => {
            if push {
                ffi::lua_pushnumber(l, int_of(text) as f64);
            }
        }
        b'$' => {
            let n = int_of(text);
            if n < 0 {
                if push {
                    ffi::lua_pushboolean(l, 0);
                }
            } else {
                let n = n as usize;
                let Some(data) = buf.get(*pos..*pos + n) else {
                    return false;
                };
                if push {
                    push_bytes(l, data);
                }
                *pos += n + 2;
            }
        }
        b'+' => {
            if push {
                ffi::lua_createtable(l, 0, 1);
                push_str(l, "ok");
                push_bytes(l, text);
                ffi::lua_rawset(l, -3);
            }
        }
        b'-' => {
            if push {
                let mut e = Vec::with_capacity(text.len() + 1);
                e.push(b'-');
                e.extend_from_slice(text);
                push_error(l, &e);
                // Already counted when the command replied.
                push_str(l, "ignore_error_stats_update");
                ffi::lua_pushboolean(l, 1);
                ffi::lua_rawset(l, -3);
            }
        }
        b'*' | b'>' => {
            let n = int_of(text);
            if n < 0 {
                if push {
                    ffi::lua_pushboolean(l, 0);
                }
            } else {
                if push {
                    ffi::lua_createtable(l, n.min(1 << 16) as c_int, 0);
                }
                for j in 0..n {
                    if push {
                        ffi::lua_pushnumber(l, (j + 1) as f64);
                    }
                    if !parse(l, buf, pos, push) {
                        return false;
                    }
                    if push {
                        ffi::lua_settable(l, -3);
                    }
                }
            }
        }
        b'%' => {
            let n = int_of(text).max(0);
            if push {
                ffi::lua_createtable(l, 0, 1);
                push_str(l, "map");
                // No preallocation: the iteration order of the table must
                // be the one Redis's scripts see (lua_newtable).
                ffi::lua_createtable(l, 0, 0);
            }
            for _ in 0..n {
                if !parse(l, buf, pos, push) || !parse(l, buf, pos, push) {
                    return false;
                }
                if push {
                    ffi::lua_settable(l, -3);
                }
            }
            if push {
                ffi::lua_settable(l, -3);
            }
        }
        b'~' => {
            let n = int_of(text).max(0);
            if push {
                ffi::lua_createtable(l, 0, 1);
                push_str(l, "set");
                ffi::lua_createtable(l, 0, 0);
            }
            for _ in 0..n {
                if !parse(l, buf, pos, push) {
                    return false;
                }
                if push {
                    ffi::lua_pushboolean(l, 1);
                    ffi::lua_settable(l, -3);
                }
            }
            if push {
                ffi::lua_settable(l, -3);
            }
        }
        b'|' => {
            // Attributes are not exposed to scripts: skip them and parse
            // the reply they decorate.
            let n = int_of(text).max(0);
            for _ in 0..n * 2 {
                if !parse(l, buf, pos, false) {
                    return false;
                }
            }
            return parse(l, buf, pos, push);
        }
        b'_' => {
            if push {
                ffi::lua_pushnil(l);
            }
        }
        b'#' => {
            if push {
                ffi::lua_pushboolean(l, (text == b"t") as c_int);
            }
        }
        b',' => {
            if push {
                let d = std::str::from_utf8(text)
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .unwrap_or(0.0);
                ffi::lua_createtable(l, 0, 1);
                push_str(l, "double");
                ffi::lua_pushnumber(l, d);
                ffi::lua_rawset(l, -3);
            }
        }
        b'(' => {
            if push {
                ffi::lua_createtable(l, 0, 1);
                push_str(l, "big_number");
                push_bytes(l, text);
                ffi::lua_rawset(l, -3);
            }
        }
        b'=' => {
            let n = int_of(text).max(0) as usize;
            let Some(data) = buf.get(*pos..*pos + n) else {
                return false;
            };
            *pos += n + 2;
            if push {
                let (format, s) = if n >= 4 {
                    (&data[..3], &data[4..])
                } else {
                    (&b""[..], data)
                };
                ffi::lua_createtable(l, 0, 1);
                push_str(l, "verbatim_string");
                ffi::lua_createtable(l, 0, 2);
                push_str(l, "string");
                push_bytes(l, s);
                ffi::lua_rawset(l, -3);
                push_str(l, "format");
                push_bytes(l, format);
                ffi::lua_rawset(l, -3);
                ffi::lua_rawset(l, -3);
            }
        }
        _ => return false,
    }
    true
}

/// Deepest nesting of a returned value (Redis stops when the Lua stack
/// cannot grow; a fixed depth keeps the native stack bounded too).
const MAX_DEPTH: usize = 1000;

/// Redis's luaReplyToRedisReply: writes the value on top of the stack as
/// a reply and pops it. `script_resp` is the protocol the script chose
/// with redis.setresp (it decides how booleans are sent).
pub unsafe fn write_reply(l: *mut lua_State, out: &mut ReplyWriter, script_resp: u8) {
    write_value(l, out, script_resp, 0);
}

unsafe fn write_value(l: *mut lua_State, out: &mut ReplyWriter, resp: u8, depth: usize) {
    if depth > MAX_DEPTH || ffi::lua_checkstack(l, 4) == 0 {
        out.error("ERR reached lua stack limit");
        pop(l, 1);
        return;
    }
    match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING => out.bulk(to_bytes(l, -1).unwrap_or(b"")),
        ffi::LUA_TBOOLEAN => {
            let b = ffi::lua_toboolean(l, -1) != 0;
            if resp == 2 {
                if b {
                    out.int(1);
                } else {
                    out.null();
                }
            } else {
                out.bool(b);
            }
        }
        ffi::LUA_TNUMBER => out.int(ffi::lua_tonumber(l, -1) as i64),
        ffi::LUA_TTABLE => {
            write_table(l, out, resp, depth);
            return;
        }
        _ => out.null(),
    }
    pop(l, 1);
}

/// The error text of an error table (Redis's luaExtractErrorInformation):
/// its message and, when present, source and line.
pub struct ErrorInfo {
    pub msg: Option<Vec<u8>>,
    pub source: Option<Vec<u8>>,
    pub line: Option<Vec<u8>>,
    pub counted: bool,
}

/// Reads the error object on top of the stack (a string or a table).
pub unsafe fn error_info(l: *mut lua_State) -> ErrorInfo {
    let mut info = ErrorInfo {
        msg: None,
        source: None,
        line: None,
        counted: false,
    };
    if ffi::lua_type(l, -1) == ffi::LUA_TSTRING || ffi::lua_type(l, -1) == ffi::LUA_TNUMBER {
        let mut m = b"ERR ".to_vec();
        m.extend_from_slice(to_bytes(l, -1).unwrap_or(b""));
        info.msg = Some(m);
        return info;
    }
    if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
        return info;
    }
    let field = |name: &str| -> Option<Vec<u8>> {
        rawget_str(l, -1, name);
        let v = if ffi::lua_isstring(l, -1) != 0 {
            to_bytes(l, -1).map(|b| b.to_vec())
        } else {
            None
        };
        pop(l, 1);
        v
    };
    info.msg = field("err");
    info.source = field("source");
    info.line = field("line");
    rawget_str(l, -1, "ignore_error_stats_update");
    info.counted = ffi::lua_type(l, -1) == ffi::LUA_TBOOLEAN && ffi::lua_toboolean(l, -1) != 0;
    pop(l, 1);
    info
}

/// Writes an error reply `-<text>`, newlines made spaces; `counted` errors
/// were already counted by the command that raised them.
pub fn write_error(out: &mut ReplyWriter, text: &[u8], counted: bool) {
    if counted {
        out.error_uncounted(text);
    } else {
        out.error(text);
    }
}

unsafe fn write_table(l: *mut lua_State, out: &mut ReplyWriter, resp: u8, depth: usize) {
    let t = ffi::lua_gettop(l);
    // Error reply.
    if rawget_str(l, t, "err") == ffi::LUA_TSTRING {
        pop(l, 1);
        let info = error_info(l);
        write_error(out, &info.msg.unwrap_or_default(), info.counted);
        ffi::lua_settop(l, t - 1);
        return;
    }
    pop(l, 1);
    // Status reply.
    if rawget_str(l, t, "ok") == ffi::LUA_TSTRING {
        out.simple(to_bytes(l, -1).unwrap_or(b""));
        ffi::lua_settop(l, t - 1);
        return;
    }
    pop(l, 1);
    // Double.
    if rawget_str(l, t, "double") == ffi::LUA_TNUMBER {
        out.double(ffi::lua_tonumber(l, -1));
        ffi::lua_settop(l, t - 1);
        return;
    }
    pop(l, 1);
    // Big number (newlines made spaces).
    if rawget_str(l, t, "big_number") == ffi::LUA_TSTRING {
        let s: String = String::from_utf8_lossy(to_bytes(l, -1).unwrap_or(b""))
            .chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
            .collect();
        out.big_number(&s);
        ffi::lua_settop(l, t - 1);
        return;
    }
    pop(l, 1);
    // Verbatim string.
    if rawget_str(l, t, "verbatim_string") == ffi::LUA_TTABLE {
        let v = ffi::lua_gettop(l);
        if rawget_str(l, v, "format") == ffi::LUA_TSTRING
            && rawget_str(l, v, "string") == ffi::LUA_TSTRING
        {
            let format = to_bytes(l, -2).unwrap_or(b"");
            let mut f = [b' '; 3];
            for (d, s) in f.iter_mut().zip(format) {
                *d = *s;
            }
            let text = to_bytes(l, -1).unwrap_or(b"");
            out.verbatim(text, std::str::from_utf8(&f).unwrap_or("txt"));
            ffi::lua_settop(l, t - 1);
            return;
        }
        ffi::lua_settop(l, t);
    } else {
        pop(l, 1);
    }
    // Map.
    if rawget_str(l, t, "map") == ffi::LUA_TTABLE {
        let m = ffi::lua_gettop(l);
        let mut n = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, m) != 0 {
            n += 1;
            pop(l, 1);
        }
        out.map(n);
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, m) != 0 {
            ffi::lua_pushvalue(l, -2);
            write_value(l, out, resp, depth + 1); // key
            write_value(l, out, resp, depth + 1); // value
        }
        ffi::lua_settop(l, t - 1);
        return;
    }
    pop(l, 1);
    // Set.
    if rawget_str(l, t, "set") == ffi::LUA_TTABLE {
        let s = ffi::lua_gettop(l);
        let mut n = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, s) != 0 {
            n += 1;
            pop(l, 1);
        }
        out.set(n);
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, s) != 0 {
            pop(l, 1);
            ffi::lua_pushvalue(l, -1);
            write_value(l, out, resp, depth + 1);
        }
        ffi::lua_settop(l, t - 1);
        return;
    }
    pop(l, 1);
    // Array: t[1], t[2]... up to the first nil.
    let mut n = 0;
    loop {
        ffi::lua_rawgeti_(l, t, n + 1);
        let nil = ffi::lua_isnil(l, -1) != 0;
        pop(l, 1);
        if nil {
            break;
        }
        n += 1;
    }
    out.array(n as usize);
    for j in 1..=n {
        ffi::lua_rawgeti_(l, t, j);
        write_value(l, out, resp, depth + 1);
    }
    ffi::lua_settop(l, t - 1);
}
