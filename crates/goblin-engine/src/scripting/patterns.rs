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
//! Lua's), then runs the matcher in the same call when the stack left
//! covers the pattern's depth (its errors then name the script's line, as
//! Redis's do), or calls itself again on a fresh stack segment of that
//! size when it does not (`stacker::grow`; the segment's memory is
//! reserved, and only what the recursion touches is used). A pattern too
//! long for any segment Goblin gives (`MAX_PATTERN` bytes) is refused with
//! Lua 5.2's "pattern too complex". gmatch's iterator, which matches
//! later, is wrapped the same way.
//!
//! A Lua error cannot cross a stack segment (its `longjmp` would skip the
//! segment's release), so on a segment the call runs under `lua_pcall`,
//! and its error is raised again once back (a memory error as a memory
//! error, see `lua::raise_memory_error`).
//!
//! The matchers are not Lua's own functions but the same code built from
//! c/lpattern.c, which calls the script's hook as it matches. Lua matches
//! in one C call, where no hook runs, so a pattern that backtracks for
//! hours (`string.find(string.rep('a', 70000), '.-.-.-.-b')`) held the
//! server with no BUSY reply and no SCRIPT KILL (and Redis with it). With
//! the hook, it is a slow script like any other. Keyed scripts, which run
//! without the hook, may not call them (`scripting::keyed`).
//!
//! `string.rep` is wrapped too, for memory rather than stack: a result
//! larger than the interpreter may still allocate (`lua::MEMORY_LIMIT`)
//! fails at once with Lua's memory error, where the original would copy
//! byte after byte for seconds before failing the same way.

use super::api::{call_original, wrap};
use super::lua::{
    lua_CFunction, may_allocate, pop, raise, raise_memory_error, raise_plain, rawget_str,
    rawset_str,
};
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

// Lua 5.1's str_find, str_match, gmatch's iterator and str_gsub, built
// from c/lpattern.c (build.rs) with the hook call in `match`.
unsafe extern "C-unwind" {
    fn goblin_str_find(l: *mut lua_State) -> c_int;
    fn goblin_str_match(l: *mut lua_State) -> c_int;
    fn goblin_gmatch_aux(l: *mut lua_State) -> c_int;
    fn goblin_str_gsub(l: *mut lua_State) -> c_int;
}

/// Installs the pattern functions and the wrapper of `string.rep` in the
/// `string` table. `string.gfind`, Lua 5.1's old name of gmatch, is the
/// same function as `string.gmatch`, as in Redis.
///
/// # Safety
/// `l` is a valid state with the string library open.
pub unsafe fn install(l: *mut lua_State) {
    rawget_str(l, ffi::LUA_GLOBALSINDEX, "string");
    rawget_str(l, -1, "gfind");
    let has_gfind = ffi::lua_isnil(l, -1) == 0;
    pop(l, 1);
    for (name, f) in [
        ("find", guarded_find as lua_CFunction),
        ("match", guarded_match),
        ("gmatch", guarded_gmatch),
        ("gsub", guarded_gsub),
    ] {
        ffi::lua_pushcfunction(l, f);
        rawset_str(l, -2, name);
    }
    if has_gfind {
        rawget_str(l, -1, "gmatch");
        rawset_str(l, -2, "gfind");
    }
    pop(l, 1);
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
    call_original(l)
}

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
    call_matcher(l, if plain { 0 } else { len }, goblin_str_find)
}

unsafe extern "C-unwind" fn guarded_match(l: *mut lua_State) -> c_int {
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    let len = pattern_len(l);
    ffi::luaL_optinteger(l, 3, 1);
    call_matcher(l, len, goblin_str_match)
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
    call_matcher(l, len, goblin_str_gsub)
}

/// gmatch: Lua's, whose iterator is a closure of the subject, the
/// pattern and the position (its upvalues 1 to 3, which the matcher reads),
/// here with the pattern's length as a fourth, for the stack its calls need.
unsafe extern "C-unwind" fn guarded_gmatch(l: *mut lua_State) -> c_int {
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    let len = pattern_len(l);
    ffi::lua_settop(l, 2);
    ffi::lua_pushinteger(l, 0);
    ffi::lua_pushinteger(l, len as ffi::lua_Integer);
    ffi::lua_pushcclosure(l, guarded_gmatch_step, 4);
    1
}

unsafe extern "C-unwind" fn guarded_gmatch_step(l: *mut lua_State) -> c_int {
    let len = ffi::lua_tointeger(l, ffi::lua_upvalueindex(4)) as usize;
    call_matcher(l, len, goblin_gmatch_aux)
}

/// The pattern's length (argument 2, which must be a string).
unsafe fn pattern_len(l: *mut lua_State) -> usize {
    let mut len = 0usize;
    ffi::luaL_checklstring(l, 2, &mut len);
    len
}

/// Calls the matcher `f` in this very call (so that its errors name the
/// script's line, as when the script calls Lua's own), when the stack left
/// covers a pattern of `pattern_len` bytes. Otherwise this function calls
/// itself again, under `lua_pcall` on a stack segment of the size needed,
/// where it finds the stack it needs (its errors are raised again once
/// back, with the script's position that `luaL_error` gives them).
unsafe fn call_matcher(l: *mut lua_State, pattern_len: usize, f: lua_CFunction) -> c_int {
    if pattern_len > MAX_PATTERN {
        // Lua 5.2's text for its bound on a pattern's recursion.
        return raise_plain(l, "pattern too complex");
    }
    let need = stack_for(pattern_len);
    if stacker::remaining_stack().is_some_and(|left| left >= need) {
        return f(l);
    }
    let n = ffi::lua_gettop(l);
    // The function running: level 0's.
    let mut ar: ffi::lua_Debug = std::mem::zeroed();
    ffi::lua_getstack(l, 0, &mut ar);
    ffi::lua_getinfo(l, c"f".as_ptr(), &mut ar);
    ffi::lua_insert(l, 1);
    // SAFETY (of the closure): the state is this thread's; the call runs
    // under lua_pcall, so no error leaves the segment.
    let status = stacker::grow(need + MARGIN, || unsafe {
        ffi::lua_pcall(l, n, ffi::LUA_MULTRET, 0)
    });
    if status == ffi::LUA_ERRMEM {
        return raise_memory_error(l);
    }
    if status != 0 {
        if ffi::lua_type(l, -1) == ffi::LUA_TSTRING {
            // luaL_error's position, which inside named no line: the
            // script's, as if the matcher had run in this call.
            ffi::luaL_where(l, 1);
            ffi::lua_insert(l, -2);
            ffi::lua_concat(l, 2);
        }
        return raise(l);
    }
    ffi::lua_gettop(l)
}
