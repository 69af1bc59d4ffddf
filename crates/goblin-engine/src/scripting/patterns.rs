//! The string library's pattern functions (`string.find`, `match`,
//! `gmatch`, `gsub`) on a C stack sized to their pattern.
//!
//! Lua 5.1 matches a pattern by recursing in C, about one level per
//! pattern item, with no bound (5.2 added one of 200, which Redis's 5.1
//! lacks): `string.find(s, string.rep('a?', 60000))` went 60,000 frames
//! deep and overflowed the thread's stack, which aborts the process. Redis,
//! on an 8 MiB main thread, survives 100,000.
//!
//! So each of them is wrapped: the wrapper checks the arguments as the
//! original does (so its error texts, which name the function, stay
//! Lua's), then calls the original directly when the stack left covers the
//! pattern's depth, or on a fresh stack segment of that size when it does
//! not (`stacker::grow`; the segment's memory is reserved, and only what
//! the recursion touches is used). A pattern too long for any segment
//! Goblin gives (`MAX_PATTERN` bytes) is refused with Lua 5.2's "pattern
//! too complex". gmatch's iterator, which matches later, is wrapped the
//! same way.
//!
//! A Lua error cannot cross a stack segment (its `longjmp` would skip the
//! segment's release), so on a segment the original runs under
//! `lua_pcall`, and its error is raised again once back (a memory error
//! as a memory error, see `lua::raise_memory_error`).
//!
//! `string.rep` is wrapped too, for memory rather than stack: a result
//! larger than the interpreter may still allocate (`lua::MEMORY_LIMIT`)
//! fails at once with Lua's memory error, where the original would copy
//! byte after byte for seconds before failing the same way.

use super::api::wrap;
use super::lua::{may_allocate, raise, raise_memory_error, raise_plain};
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

/// The C stack one level of Lua 5.1's `match` may use, with room to spare
/// (a level is a `match` frame, or `min_expand`'s or `start_capture`'s
/// and the `match` it calls).
const LEVEL_STACK: usize = 512;

/// Stack kept free beyond the pattern's levels, for the frames around the
/// match and for a Lua error raised at the deepest level.
const MARGIN: usize = 256 << 10;

/// The longest pattern matched: its levels need a 2 GiB segment.
pub const MAX_PATTERN: usize = 4 << 20;

/// The stack a pattern of `len` bytes may need.
fn stack_for(len: usize) -> usize {
    len * LEVEL_STACK + MARGIN
}

/// Installs the wrappers in the `string` table.
///
/// # Safety
/// `l` is a valid state with the string library open.
pub unsafe fn install(l: *mut lua_State) {
    wrap(l, Some("string"), "find", guarded_find);
    wrap(l, Some("string"), "match", guarded_match);
    wrap(l, Some("string"), "gmatch", guarded_gmatch);
    wrap(l, Some("string"), "gsub", guarded_gsub);
    wrap(l, Some("string"), "rep", guarded_rep);
}

/// string.rep(s, n): the original (str_rep), unless its result cannot fit.
unsafe extern "C-unwind" fn guarded_rep(l: *mut lua_State) -> c_int {
    let mut len = 0usize;
    ffi::luaL_checklstring(l, 1, &mut len);
    // str_rep reads the count with luaL_checkint: truncated to an int.
    let n = ffi::luaL_checkinteger(l, 2) as c_int;
    if n > 0 && !may_allocate(l, len.saturating_mul(n as usize)) {
        return raise_memory_error(l);
    }
    call_original(l, 0)
}

/// The original function, the wrapper's first upvalue (`api::wrap`).
const UP_ORIG: c_int = ffi::lua_upvalueindex(1);

unsafe extern "C-unwind" fn guarded_find(l: *mut lua_State) -> c_int {
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    let len = pattern_len(l);
    ffi::luaL_optinteger(l, 3, 1);
    // A plain find compares bytes: no recursion. str_find_aux finds
    // plainly too when the pattern has none of the special characters
    // (before a NUL: it looks with strpbrk).
    let pattern = super::lua::to_bytes(l, 2).unwrap_or_default();
    let pattern = &pattern[..memchr::memchr(0, pattern).unwrap_or(pattern.len())];
    let plain = ffi::lua_toboolean(l, 4) != 0 || !pattern.iter().any(|c| b"^$*+?.([%-".contains(c));
    call_original(l, if plain { 0 } else { len })
}

unsafe extern "C-unwind" fn guarded_match(l: *mut lua_State) -> c_int {
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    let len = pattern_len(l);
    ffi::luaL_optinteger(l, 3, 1);
    call_original(l, len)
}

unsafe extern "C-unwind" fn guarded_gsub(l: *mut lua_State) -> c_int {
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    let len = pattern_len(l);
    // str_gsub reads the count before it checks the replacement.
    let tr = ffi::lua_type(l, 3);
    ffi::luaL_optinteger(l, 4, 0);
    if !matches!(
        tr,
        ffi::LUA_TNUMBER | ffi::LUA_TSTRING | ffi::LUA_TFUNCTION | ffi::LUA_TTABLE
    ) {
        return ffi::luaL_argerror(l, 3, c"string/function/table expected".as_ptr());
    }
    call_original(l, len)
}

/// gmatch returns the original's iterator wrapped, with the pattern's
/// length, for the stack its calls need.
unsafe extern "C-unwind" fn guarded_gmatch(l: *mut lua_State) -> c_int {
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    let len = pattern_len(l);
    call_original(l, 0);
    ffi::lua_pushinteger(l, len as ffi::lua_Integer);
    ffi::lua_pushcclosure(l, guarded_gmatch_step, 2);
    1
}

unsafe extern "C-unwind" fn guarded_gmatch_step(l: *mut lua_State) -> c_int {
    let len = ffi::lua_tointeger(l, ffi::lua_upvalueindex(2)) as usize;
    call_original(l, len)
}

/// The pattern's length (argument 2, which must be a string).
unsafe fn pattern_len(l: *mut lua_State) -> usize {
    let mut len = 0usize;
    ffi::luaL_checklstring(l, 2, &mut len);
    len
}

/// Calls the original (upvalue 1) with the arguments on the stack and
/// returns its results, on a stack segment of its own when the stack left
/// does not cover a pattern of `pattern_len` bytes.
unsafe fn call_original(l: *mut lua_State, pattern_len: usize) -> c_int {
    if pattern_len > MAX_PATTERN {
        // Lua 5.2's text for its bound on a pattern's recursion.
        return raise_plain(l, "pattern too complex");
    }
    let n = ffi::lua_gettop(l);
    ffi::lua_pushvalue(l, UP_ORIG);
    ffi::lua_insert(l, 1);
    let need = stack_for(pattern_len);
    if stacker::remaining_stack().is_some_and(|left| left >= need) {
        ffi::lua_call(l, n, ffi::LUA_MULTRET);
        return ffi::lua_gettop(l);
    }
    // SAFETY (of the closure): the state is this thread's; the original
    // runs under lua_pcall, so no error leaves the segment.
    let status = stacker::grow(need, || unsafe {
        ffi::lua_pcall(l, n, ffi::LUA_MULTRET, 0)
    });
    if status == ffi::LUA_ERRMEM {
        return raise_memory_error(l);
    }
    if status != 0 {
        return raise(l);
    }
    ffi::lua_gettop(l)
}
