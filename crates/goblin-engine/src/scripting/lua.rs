//! A thin layer over Lua 5.1's C API (`mlua::ffi`): the owned state, and
//! the small helpers every part of the host uses.
//!
//! Redis's scripting is specified in terms of this API (errors are Lua
//! values raised with `lua_error`, often tables; `redis.pcall` is a C
//! function around `lua_pcall`; scripts are stopped from an instruction
//! hook), so the host speaks it directly rather than through a higher-level
//! binding.
//!
//! # Raising errors
//!
//! `lua_error` and `luaL_error` leave a C function with a `longjmp`, which
//! skips the Rust frames in between without running destructors. Every C
//! function here therefore computes its outcome in ordinary Rust first,
//! drops what it owns, and raises only as its very last step (see
//! [`raise`] and [`raise_str`]): no value with a destructor is alive in a
//! frame that a raise unwinds.

use mlua::ffi::{self, lua_State};
use std::ffi::{c_char, c_int, c_void, CStr};

pub use mlua::ffi::lua_CFunction;

/// The C stack a script runs with. Lua bounds its own C recursion: 200
/// nested C calls or syntax levels (LUAI_MAXCCALLS), and 8,000 stack
/// slots (LUAI_MAXCSTACK), which bound how deep cjson and cmsgpack nest;
/// at up to a few KiB a level, 16 MiB covers them with room. Pattern
/// matching, which Lua does not bound, sizes its own stack
/// (`scripting::patterns`).
pub const SCRIPT_STACK: usize = 16 << 20;

/// The stack of threads that run commands, scripts included: the script's
/// stack and the frames of the command path above it. The server's I/O
/// threads are started with it, so that scripts run on them directly.
pub const THREAD_STACK: usize = SCRIPT_STACK + (4 << 20);

/// Runs `f` with at least `SCRIPT_STACK` of C stack: on the current one
/// when it has that much left, else on a fresh segment (an embedded
/// `Store` runs scripts on its caller's thread, whose stack may be 2 MiB).
/// No Lua error may leave `f` (it runs Lua under `lua_pcall`).
pub fn with_script_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(SCRIPT_STACK, SCRIPT_STACK + (1 << 20), f)
}

/// The most memory one interpreter may hold: an allocation that would take
/// it past this fails, and Lua raises "not enough memory" in the script
/// (a C function such as `string.rep` or `gsub` building gigabytes inside
/// one call cannot be stopped any other way: no hook runs inside it).
/// Redis has no such bound; 1 GiB is the bound Redis puts on one client's
/// query buffer (client-query-buffer-limit), twice the largest value a
/// command accepts (proto-max-bulk-len): a script may hold the largest
/// value and build a copy of it. It also bounds how long a runaway call
/// stalls the server: building 1 GiB one byte at a time takes seconds.
pub const MEMORY_LIMIT: usize = 1 << 30;

/// The event of a hook called by a C function as it runs (the pattern
/// matcher of c/lpattern.c, `GOBLIN_HOOK_C_CALL` there) rather than by the
/// virtual machine.
pub const C_CALL_HOOK_EVENT: c_int = 16;

/// For a hook that is about to stop the script (SCRIPT KILL, a FUNCTION
/// LOAD timeout): when a C function called it as it runs, arms `hook` for
/// the virtual machine's very next instruction and returns true; the C
/// function sees the count of 1 and returns at once (c/lpattern.c), and
/// the hook then stops the script from the machine, as for a loop in Lua
/// (hooks off while the error handler runs, the error naming the script's
/// line, a line hook against `pcall`). False when the machine called it:
/// stop now.
///
/// # Safety
/// `l` is a valid state; `ar` is the hook's argument.
pub unsafe fn stop_at_next_instruction(
    l: *mut lua_State,
    ar: *const ffi::lua_Debug,
    hook: ffi::lua_Hook,
) -> bool {
    if ar.is_null() || (*ar).event != C_CALL_HOOK_EVENT {
        return false;
    }
    ffi::lua_sethook(l, Some(hook), ffi::LUA_MASKCOUNT, 1);
    true
}

/// What an interpreter's allocator keeps (its `ud`): the bytes the state
/// holds and its bound. The state is only ever used by one thread at a
/// time, so plain fields.
struct Budget {
    used: usize,
    limit: usize,
}

/// The interpreters' allocator (a `lua_Alloc`): the C library's, as
/// `luaL_newstate`'s (so Lua's memory stays out of the server's allocator
/// figures, as in Redis), counting what the state holds and refusing to
/// grow it past its bound. Lua then raises its memory error (LUA_ERRMEM),
/// which unwinds to the nearest `lua_pcall` like any error.
unsafe extern "C" fn budget_alloc(
    ud: *mut c_void,
    ptr: *mut c_void,
    osize: usize,
    nsize: usize,
) -> *mut c_void {
    let b = &mut *(ud as *mut Budget);
    // Lua passes osize 0 with a null block.
    let osize = if ptr.is_null() { 0 } else { osize };
    if nsize == 0 {
        libc::free(ptr);
        b.used -= osize;
        return std::ptr::null_mut();
    }
    if nsize > osize && nsize - osize > b.limit.saturating_sub(b.used) {
        return std::ptr::null_mut();
    }
    let p = libc::realloc(ptr, nsize);
    if !p.is_null() {
        b.used = b.used - osize + nsize;
    }
    p
}

/// An owned Lua state (closed on drop) with its memory count and bound.
pub struct LuaState(*mut lua_State, *mut Budget);

// SAFETY: a Lua state has no thread affinity; the host only ever uses it
// from one thread at a time (behind the scripting mutex).
unsafe impl Send for LuaState {}

impl Default for LuaState {
    fn default() -> LuaState {
        LuaState::new()
    }
}

impl LuaState {
    pub fn new() -> LuaState {
        LuaState::with_limit(MEMORY_LIMIT)
    }

    /// A state that may hold at most `limit` bytes.
    pub fn with_limit(limit: usize) -> LuaState {
        let budget = Box::into_raw(Box::new(Budget { used: 0, limit }));
        // SAFETY: the allocator and its data outlive the state (freed
        // after lua_close). A null return means out of memory at startup,
        // where stopping is all one can do.
        let l = unsafe { ffi::lua_newstate(budget_alloc, budget.cast()) };
        assert!(!l.is_null(), "cannot create a Lua state");
        // SAFETY: as luaL_newstate does: an error outside any lua_pcall
        // reports and aborts rather than jumping nowhere.
        unsafe { ffi::lua_atpanic(l, at_panic) };
        LuaState(l, budget)
    }

    #[inline]
    pub fn ptr(&self) -> *mut lua_State {
        self.0
    }

    /// Changes the most memory the state may hold.
    pub fn set_limit(&mut self, limit: usize) {
        // SAFETY: the budget lives as long as self, which is borrowed
        // mutably: the state is not running.
        unsafe { (*self.1).limit = limit }
    }

    /// Bytes of memory the state holds (Redis's luaMemory): the
    /// allocator's count, read without entering Lua.
    #[inline]
    pub fn memory(&self) -> u64 {
        // SAFETY: the budget lives as long as self; the state is not
        // running on another thread while self is borrowed.
        unsafe { (*self.1).used as u64 }
    }
}

impl Drop for LuaState {
    fn drop(&mut self) {
        // SAFETY: the state is owned and closed once; its allocator's data
        // is freed after it.
        unsafe {
            ffi::lua_close(self.0);
            drop(Box::from_raw(self.1));
        }
    }
}

/// luaL_newstate's panic function.
unsafe extern "C-unwind" fn at_panic(l: *mut lua_State) -> c_int {
    let msg = to_bytes(l, -1)
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    eprintln!("PANIC: unprotected error in call to Lua API ({msg})");
    0
}

/// Raises Lua's memory error ("not enough memory", status LUA_ERRMEM),
/// as an allocation past the state's bound would: a C function that
/// knows its result cannot fit fails at once rather than after building
/// most of it, and a memory error caught on a stack segment is raised
/// again with its status. Must be the last thing a C function does.
pub unsafe fn raise_memory_error(l: *mut lua_State) -> c_int {
    let mut ud = std::ptr::null_mut();
    ffi::lua_getallocf(l, &mut ud);
    let b = &*(ud as *const Budget);
    // More than the state may still allocate: the allocator refuses it.
    ffi::lua_newuserdata(l, b.limit.saturating_sub(b.used) + 1);
    raise_plain(l, "not enough memory")
}

/// Room kept beyond a buffer's length when checking that it can be pushed
/// (the string's header, a growth of the string table).
const PUSH_MARGIN: usize = 1 << 20;

/// Pushes the bytes of a buffer a C function built (cjson.encode's text,
/// cmsgpack.pack's bytes), freeing it, and returns 1 (the C function's
/// result count). When the copy cannot fit in the state's bound, the
/// buffer is freed first and the memory error raised then: raised from
/// inside the push, the error would leave past the buffer's destructor
/// and leak it. Must be the last thing a C function does.
pub unsafe fn push_buffer(l: *mut lua_State, buf: Vec<u8>) -> c_int {
    if !may_allocate(l, buf.len().saturating_add(PUSH_MARGIN)) {
        drop(buf);
        return raise_memory_error(l);
    }
    push_bytes(l, &buf);
    1
}

/// Whether a state may still allocate `n` more bytes.
pub unsafe fn may_allocate(l: *mut lua_State, n: usize) -> bool {
    let mut ud = std::ptr::null_mut();
    ffi::lua_getallocf(l, &mut ud);
    let b = &*(ud as *const Budget);
    n <= b.limit.saturating_sub(b.used)
}

/// Pushes a byte string.
#[inline]
pub unsafe fn push_bytes(l: *mut lua_State, b: &[u8]) {
    ffi::lua_pushlstring_(l, b.as_ptr() as *const c_char, b.len());
}

#[inline]
pub unsafe fn push_str(l: *mut lua_State, s: &str) {
    push_bytes(l, s.as_bytes());
}

/// The bytes of the string (or number, converted in place, as
/// `lua_tolstring` does) at `idx`; None for other types. The slice lives as
/// long as the value stays on the stack.
#[inline]
pub unsafe fn to_bytes<'a>(l: *mut lua_State, idx: c_int) -> Option<&'a [u8]> {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    if p.is_null() {
        None
    } else {
        Some(std::slice::from_raw_parts(p as *const u8, len))
    }
}

/// Like `to_bytes` but only for actual strings (no number conversion).
#[inline]
pub unsafe fn string_at<'a>(l: *mut lua_State, idx: c_int) -> Option<&'a [u8]> {
    if ffi::lua_type(l, idx) == ffi::LUA_TSTRING {
        to_bytes(l, idx)
    } else {
        None
    }
}

/// `t[key] = value on top` without metamethods; `t` is an absolute index.
#[inline]
pub unsafe fn rawset_str(l: *mut lua_State, t: c_int, key: &str) {
    let t = abs_index(l, t);
    push_str(l, key);
    ffi::lua_insert(l, -2);
    ffi::lua_rawset(l, t);
}

/// Pushes `t[key]` without metamethods; returns its type.
#[inline]
pub unsafe fn rawget_str(l: *mut lua_State, t: c_int, key: &str) -> c_int {
    let t = abs_index(l, t);
    push_str(l, key);
    ffi::lua_rawget_(l, t);
    ffi::lua_type(l, -1)
}

#[inline]
pub unsafe fn abs_index(l: *mut lua_State, idx: c_int) -> c_int {
    if idx > 0 || idx <= ffi::LUA_REGISTRYINDEX {
        idx
    } else {
        ffi::lua_gettop(l) + idx + 1
    }
}

/// Registers a C function with one light-userdata upvalue as `t[name]`.
pub unsafe fn set_cfunction(
    l: *mut lua_State,
    t: c_int,
    name: &str,
    f: lua_CFunction,
    upvalue: *mut std::ffi::c_void,
) {
    let t = abs_index(l, t);
    if upvalue.is_null() {
        ffi::lua_pushcclosure(l, f, 0);
    } else {
        ffi::lua_pushlightuserdata(l, upvalue);
        ffi::lua_pushcclosure(l, f, 1);
    }
    rawset_str(l, t, name);
}

pub unsafe fn set_number(l: *mut lua_State, t: c_int, name: &str, n: f64) {
    let t = abs_index(l, t);
    ffi::lua_pushnumber(l, n);
    rawset_str(l, t, name);
}

/// Raises the value on top of the stack as a Lua error. Must be the last
/// thing a C function does (see the module documentation).
#[inline]
pub unsafe fn raise(l: *mut lua_State) -> c_int {
    ffi::lua_error(l)
}

/// Whether the calling C function's frame has room for the two values a
/// raise pushes (the position and the message). A C function may have
/// used every slot Lua lets it have (cjson's decoder descends until
/// lua_checkstack refuses); Lua's own luaL_error grows the stack past that
/// bound, which the API's pushes may not do.
unsafe fn room_to_raise(l: *mut lua_State) -> bool {
    ffi::lua_checkstack(l, 2) != 0
}

/// Raises `msg` prefixed with the position of the calling Lua code, as
/// `luaL_error` does.
pub unsafe fn raise_str(l: *mut lua_State, msg: &str) -> c_int {
    if !room_to_raise(l) {
        // `msg` may lie in a value of the frame given up.
        return raise_owned(l, msg.to_owned());
    }
    ffi::luaL_where(l, 1);
    push_str(l, msg);
    ffi::lua_concat(l, 2);
    ffi::lua_error(l)
}

/// Like `raise_str` for an owned message, which is freed before the
/// raise leaves the frame.
pub unsafe fn raise_owned(l: *mut lua_State, msg: String) -> c_int {
    if !room_to_raise(l) {
        // The raise leaves this frame: its values may go now.
        ffi::lua_settop(l, 0);
    }
    ffi::luaL_where(l, 1);
    push_str(l, &msg);
    drop(msg);
    ffi::lua_concat(l, 2);
    ffi::lua_error(l)
}

/// Raises `msg` as is (no position).
pub unsafe fn raise_plain(l: *mut lua_State, msg: &str) -> c_int {
    if !room_to_raise(l) {
        let msg = msg.to_owned();
        ffi::lua_settop(l, 0);
        push_str(l, &msg);
        drop(msg);
        ffi::lua_error(l)
    }
    push_str(l, msg);
    ffi::lua_error(l)
}

/// Loads a chunk; on failure returns the error message (popped).
pub unsafe fn load(l: *mut lua_State, code: &[u8], name: &CStr) -> Result<(), Vec<u8>> {
    if ffi::luaL_loadbuffer(l, code.as_ptr() as *const c_char, code.len(), name.as_ptr()) != 0 {
        let msg = to_bytes(l, -1).map(|b| b.to_vec()).unwrap_or_default();
        ffi::lua_settop(l, -2);
        return Err(msg);
    }
    Ok(())
}

/// Redis's "%.17g" conversion of a Lua number into a command argument.
pub fn format_number(n: f64, out: &mut Vec<u8>) {
    crate::util::number::format_g17(n, out);
}

#[inline]
pub unsafe fn pop(l: *mut lua_State, n: c_int) {
    ffi::lua_settop(l, -n - 1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientRegistry;
    use crate::scripting::host::{Host, VmKind};

    const LIMIT: usize = 16 << 20;

    /// A sandboxed EVAL interpreter bounded at `LIMIT`.
    fn host(clients: &ClientRegistry) -> Box<Host> {
        let mut host = Host::new(VmKind::Eval, clients);
        crate::scripting::sandbox::init(&mut host);
        host.state.set_limit(LIMIT);
        host
    }

    /// Runs `code` as a script runs: its status and its result or error
    /// message as text.
    fn run(host: &mut Host, code: &str) -> (c_int, String) {
        let l = host.state.ptr();
        // SAFETY: the state is ours; the stack is left as found.
        unsafe {
            load(l, code.as_bytes(), c"@user_script").unwrap();
            let status = ffi::lua_pcall(l, 0, 1, 0);
            let text =
                to_bytes(l, -1).map_or("nil".into(), |b| String::from_utf8_lossy(b).into_owned());
            pop(l, 1);
            (status, text)
        }
    }

    /// cjson's decoder takes every stack slot Lua lets a C function have
    /// before it refuses a nesting: its error is still raised (in builds
    /// with Lua's API checks, a push past the frame aborted the process).
    #[test]
    fn an_error_raised_from_a_full_frame_reaches_the_script() {
        let clients = ClientRegistry::default();
        let mut host = host(&clients);
        // Redis's texts: an object takes more slots a level than an array.
        for (code, depth) in [
            (
                "cjson.decode_max_depth(1000000000) \
                 return cjson.decode(string.rep('[',10000)..string.rep(']',10000))",
                "(7999)",
            ),
            (
                "cjson.decode_max_depth(1000000000) \
                 return cjson.decode(string.rep('{\"a\":',10000)..'1'..string.rep('}',10000))",
                "(4000)",
            ),
        ] {
            let (status, text) = with_script_stack(|| run(&mut host, code));
            assert_eq!(status, ffi::LUA_ERRRUN, "{text}");
            assert!(
                text.contains(&format!("Found too many nested data structures {depth}")),
                "{text}"
            );
            assert_eq!(run(&mut host, "return 'next'"), (0, "next".to_string()));
        }
    }

    fn assert_out_of_memory(code: &str) {
        let clients = ClientRegistry::default();
        let mut host = host(&clients);
        let base = host.state.memory();
        assert_eq!(
            run(&mut host, code),
            (ffi::LUA_ERRMEM, "not enough memory".to_string()),
            "{code}"
        );
        // The interpreter goes on, and what the failed call built is
        // garbage.
        assert_eq!(run(&mut host, "return 1 + 1"), (0, "2".to_string()));
        host.collect(0);
        assert!(
            host.state.memory() < base + (1 << 20),
            "{} left of {base}",
            host.state.memory()
        );
        assert_eq!(
            run(&mut host, "return #string.rep('x', 1000)"),
            (0, "1000".to_string())
        );
    }

    #[test]
    fn a_concatenation_past_the_limit_fails_with_the_memory_error() {
        assert_out_of_memory("local s = string.rep('x', 1048576) local t = {} for i = 1, 64 do t[i] = s .. i end return #t");
    }

    #[test]
    fn string_rep_past_the_limit_fails_at_once() {
        // 2 GiB, refused before a byte is copied.
        assert_out_of_memory("local s = string.rep('x', 1048576) return #string.rep(s, 2048)");
        // 10 MiB fits, but not the pieces it is built from: the original
        // runs, and fails on the way.
        assert_out_of_memory("return #string.rep('xy', 5242880)");
    }

    #[test]
    fn a_gsub_blow_up_fails_with_the_memory_error() {
        // An empty match at every position, each replaced by 1 MiB.
        assert_out_of_memory(
            "return #string.gsub(string.rep('x', 100), '', string.rep('y', 1048576))",
        );
        // The same with a pattern long enough to run on a stack segment
        // of its own: the memory error crosses back as a memory error.
        assert_out_of_memory(
            "return #string.gsub(string.rep('x', 100), string.rep('a?', 20000), string.rep('y', 1048576))",
        );
    }

    #[test]
    fn a_library_s_result_past_the_limit_fails_with_the_memory_error() {
        // 15 MiB of text from a table that holds 1 MiB.
        let t = "local s = string.rep('x', 1048576) local t = {} for i = 1, 15 do t[i] = s end ";
        assert_out_of_memory(&format!("{t} return #cjson.encode(t)"));
        assert_out_of_memory(&format!("{t} return #cmsgpack.pack(t)"));
        assert_out_of_memory(&format!(
            "{t} return #struct.pack(string.rep('s', 15), unpack(t))"
        ));
    }

    #[test]
    fn pcall_catches_the_memory_error() {
        let clients = ClientRegistry::default();
        let mut host = host(&clients);
        assert_eq!(
            run(&mut host, "local ok, err = pcall(string.rep, string.rep('x', 1048576), 64) return tostring(ok) .. ' ' .. err"),
            (0, "false not enough memory".to_string())
        );
    }

    #[test]
    fn memory_counts_what_the_state_holds() {
        let clients = ClientRegistry::default();
        let host = host(&clients);
        let l = host.state.ptr();
        // SAFETY: the state is ours.
        let counted = unsafe {
            ffi::lua_gc(l, ffi::LUA_GCCOUNT, 0) as u64 * 1024
                + ffi::lua_gc(l, ffi::LUA_GCCOUNTB, 0) as u64
        };
        assert_eq!(host.state.memory(), counted);
    }
}
