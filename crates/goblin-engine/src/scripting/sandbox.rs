//! Building a sandboxed interpreter the way Redis does (luaRegisterRedisAPI,
//! scriptingInit, luaEngineInitEngine).
//!
//! # Globals and read-only tables
//!
//! Redis ships a patched Lua with read-only tables: after setup, the
//! globals and every table reachable from them (string, math, redis,
//! cjson...) refuse any change with "Attempt to modify a readonly table",
//! and reading an undefined global raises "Script attempted to access
//! nonexistent global variable". Stock Lua 5.1 has no such flag, so the
//! same behaviour is built from metatables:
//!
//! - each protected table `t` is replaced, wherever it is reachable, by an
//!   empty *proxy* whose metatable has `__index = t` and a `__newindex` that
//!   raises the error. An empty proxy sends every assignment to
//!   `__newindex`, existing keys included;
//! - the builtins that write around metatables (rawset, setmetatable,
//!   table.insert/remove/sort) refuse proxies, and those that read raw
//!   contents (rawget, next, pairs, ipairs, unpack, getmetatable) look
//!   through them, so a script sees the same tables it would in Redis;
//! - the real globals table carries Redis's error metatable (`__index`
//!   raising the nonexistent-global error) and the running code's globals
//!   are its proxy.
//!
//! Binary chunks are refused as Redis's Lua refuses them: loadstring and
//! load parse every chunk as text.

use super::api;
use super::host::{Host, VmKind};
use super::lua::*;
use mlua::ffi::{self, lua_State};
use std::ffi::{c_int, c_void};

const RO_KEY: &str = "goblin.readonly";
const HOST_KEY: &str = "goblin.host";
const PROXY_KEY: &str = "goblin.proxy_of";
const VISIBLE_MT_KEY: &str = "goblin.visible_mt";

/// Globals scripts may use (Redis's allow lists).
const ALLOWED_GLOBALS: &[&str] = &[
    // libraries
    "string",
    "cjson",
    "bit",
    "cmsgpack",
    "math",
    "table",
    "struct",
    // Redis API
    "redis",
    "__redis__err__handler",
    // Lua builtins
    "xpcall",
    "tostring",
    "setmetatable",
    "next",
    "assert",
    "tonumber",
    "rawequal",
    "collectgarbage",
    "getmetatable",
    "rawset",
    "pcall",
    "coroutine",
    "type",
    "_G",
    "select",
    "unpack",
    "gcinfo",
    "pairs",
    "rawget",
    "loadstring",
    "ipairs",
    "_VERSION",
    "load",
    "error",
];

/// Redis's error handler: turns any error into a table {err=...} and adds
/// the position of the script code that raised it (skipping a C function,
/// so an error of redis.call points at the script line that called it).
const ERROR_HANDLER: &str = "local dbg = debug
debug = nil
local error_handler = function (err)
  local i = dbg.getinfo(2,'nSl')
  if i and i.what == 'C' then
    i = dbg.getinfo(3,'nSl')
  end
  if type(err) ~= 'table' then
    err = {err='ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
return error_handler";

unsafe fn open_lib(l: *mut lua_State, name: &[u8], f: lua_CFunction) {
    ffi::lua_pushcclosure(l, f, 0);
    push_bytes(l, name);
    ffi::lua_call(l, 1, 0);
}

/// Pushes registry[key].
unsafe fn registry_get(l: *mut lua_State, key: &str) {
    rawget_str(l, ffi::LUA_REGISTRYINDEX, key);
}

/// Creates a new table at registry[key].
unsafe fn registry_new_table(l: *mut lua_State, key: &str) {
    ffi::lua_createtable(l, 0, 0);
    rawset_str(l, ffi::LUA_REGISTRYINDEX, key);
}

/// Builds an interpreter of the given kind for `host`: the libraries, the
/// redis API, the sandbox. Mirrors Redis's initialisation order.
pub fn init(host: &mut Host) {
    let hp = host.ptr();
    let l = host.state.ptr();
    // SAFETY: a fresh state, used by this thread only; every stack
    // operation below is balanced.
    unsafe {
        ffi::lua_checkstack(l, 64);
        open_lib(l, b"", ffi::luaopen_base);
        open_lib(l, b"table", ffi::luaopen_table);
        open_lib(l, b"string", ffi::luaopen_string);
        open_lib(l, b"math", ffi::luaopen_math);
        open_lib(l, b"debug", ffi::luaopen_debug);
        super::libs::open_all(l);

        ffi::lua_pushlightuserdata(l, hp);
        rawset_str(l, ffi::LUA_REGISTRYINDEX, HOST_KEY);
        registry_new_table(l, RO_KEY);
        registry_new_table(l, PROXY_KEY);
        registry_new_table(l, VISIBLE_MT_KEY);

        api::install_builtin_wrappers(l);
        api::register_redis_api(l, hp, host.kind);

        // The error handler, then `debug` goes away.
        load(l, ERROR_HANDLER.as_bytes(), c"@err_handler_def").expect("error handler compiles");
        ffi::lua_call(l, 0, 1);
        if host.kind == VmKind::Eval {
            // EVAL keeps it as a global, as Redis does.
            ffi::lua_pushvalue(l, -1);
            rawset_str(l, ffi::LUA_GLOBALSINDEX, "__redis__err__handler");
        }
        host.errh_ref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);

        // Keep only the allowed globals (Redis never lets the others in).
        remove_unlisted_globals(l);

        if host.kind == VmKind::Functions {
            build_library_api(l, hp);
            host.lib_api_ref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        }

        // Lock the globals: error metatable, then read-only proxies all
        // the way down.
        ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
        set_error_metatable(l);
        ffi::lua_pushvalue(l, -1);
        host.globals_ref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        protect(l, -1); // real globals, proxy
        protect_string_metatable(l);

        if host.kind == VmKind::Functions {
            // Function code runs against a fresh, empty globals table
            // whose metatable reads through to the real globals (or, while
            // FUNCTION LOAD runs the library's top level, to the library
            // API): luaEngineInitEngine.
            ffi::lua_createtable(l, 0, 0); // new globals
            let g = ffi::lua_gettop(l);
            ffi::lua_createtable(l, 0, 3); // its metatable
            let mt = ffi::lua_gettop(l);
            ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, host.globals_ref);
            rawset_str(l, mt, "__index");
            ffi::lua_pushcclosure(l, readonly_newindex, 0);
            rawset_str(l, mt, "__newindex");
            ffi::lua_pushboolean(l, 0);
            rawset_str(l, mt, "__metatable");
            ffi::lua_pushvalue(l, mt);
            host.globals_mt_ref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            ffi::lua_setmetatable(l, g);
            // Register it as read-only, empty to raw readers, with a
            // metatable that shows the (protected) globals.
            registry_get(l, RO_KEY);
            ffi::lua_pushvalue(l, g);
            ffi::lua_createtable(l, 0, 0);
            ffi::lua_rawset(l, -3);
            ffi::lua_settop(l, -2);
            ffi::lua_createtable(l, 0, 1);
            ffi::lua_pushvalue(l, -3); // globals proxy
            rawset_str(l, -2, "__index");
            protect(l, -1);
            registry_get(l, VISIBLE_MT_KEY);
            ffi::lua_pushvalue(l, g);
            ffi::lua_pushvalue(l, -3);
            ffi::lua_rawset(l, -3);
            ffi::lua_settop(l, g);
            // Stack: globals proxy, new globals.
            ffi::lua_replace(l, ffi::LUA_GLOBALSINDEX);
            ffi::lua_settop(l, 0);
        } else {
            ffi::lua_replace(l, ffi::LUA_GLOBALSINDEX);
            ffi::lua_settop(l, 0);
        }
    }
}

unsafe fn remove_unlisted_globals(l: *mut lua_State) {
    let mut remove: Vec<Vec<u8>> = Vec::new();
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, ffi::LUA_GLOBALSINDEX) != 0 {
        if let Some(k) = string_at(l, -2) {
            if !ALLOWED_GLOBALS.iter().any(|a| a.as_bytes() == k) {
                remove.push(k.to_vec());
            }
        }
        pop(l, 1);
    }
    for k in remove {
        push_bytes(l, &k);
        ffi::lua_pushnil(l);
        ffi::lua_rawset(l, ffi::LUA_GLOBALSINDEX);
    }
}

/// The library API of FUNCTION LOAD: a globals table with only `redis`,
/// itself holding register_function, log and the version fields; both raise
/// the nonexistent-global error for anything else. Pushes its proxy.
unsafe fn build_library_api(l: *mut lua_State, hp: *mut c_void) {
    ffi::lua_createtable(l, 0, 1); // library globals
    ffi::lua_createtable(l, 0, 8); // library `redis`
    set_cfunction(l, -1, "register_function", api::register_function, hp);
    api::register_log(l, -1);
    api::register_version(l, -1);
    set_error_metatable(l);
    rawset_str(l, -2, "redis");
    set_error_metatable(l);
    protect(l, -1);
    ffi::lua_replace(l, -2);
}

/// Redis's luaSetErrorMetatable on the table on top of the stack.
unsafe fn set_error_metatable(l: *mut lua_State) {
    ffi::lua_createtable(l, 0, 1);
    ffi::lua_pushcclosure(l, nonexistent_global, 0);
    rawset_str(l, -2, "__index");
    ffi::lua_setmetatable(l, -2);
}

/// The string metatable (the only basic type with one in Lua 5.1) becomes
/// read-only too: getmetatable('') shows a proxy, and its __index is the
/// protected string library.
unsafe fn protect_string_metatable(l: *mut lua_State) {
    push_str(l, "");
    if ffi::lua_getmetatable(l, -1) != 0 {
        let mt = ffi::lua_gettop(l);
        protect(l, mt);
        rawset_str(l, mt, "__metatable");
        ffi::lua_settop(l, mt - 2);
    } else {
        pop(l, 1);
    }
}

/// Replaces the table at `idx` by its read-only proxy, recursively, and
/// pushes the proxy. Tables already protected (or proxies) are reused, so
/// cycles (`_G._G`) end.
pub unsafe fn protect(l: *mut lua_State, idx: c_int) {
    let t = abs_index(l, idx);
    ffi::lua_checkstack(l, 8);
    // A proxy already?
    registry_get(l, RO_KEY);
    ffi::lua_pushvalue(l, t);
    ffi::lua_rawget_(l, -2);
    let is_proxy = ffi::lua_isnil(l, -1) == 0;
    pop(l, 2);
    if is_proxy {
        ffi::lua_pushvalue(l, t);
        return;
    }
    // Protected before?
    registry_get(l, PROXY_KEY);
    ffi::lua_pushvalue(l, t);
    ffi::lua_rawget_(l, -2);
    if ffi::lua_isnil(l, -1) == 0 {
        ffi::lua_replace(l, -2);
        return;
    }
    pop(l, 1);
    // New proxy p, registered both ways before recursing.
    ffi::lua_createtable(l, 0, 0);
    let p = ffi::lua_gettop(l);
    ffi::lua_pushvalue(l, t);
    ffi::lua_pushvalue(l, p);
    ffi::lua_rawset(l, p - 1); // proxy_of[t] = p
    ffi::lua_remove(l, p - 1);
    let p = ffi::lua_gettop(l);
    registry_get(l, RO_KEY);
    ffi::lua_pushvalue(l, p);
    ffi::lua_pushvalue(l, t);
    ffi::lua_rawset(l, -3); // ro[p] = t
    pop(l, 1);

    // Replace table values by their proxies (changing existing fields
    // during a traversal is allowed).
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, t) != 0 {
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            protect(l, -1); // key, value, proxy
            ffi::lua_pushvalue(l, -3);
            ffi::lua_insert(l, -2); // key, value, key, proxy
            ffi::lua_rawset(l, t);
        }
        pop(l, 1);
    }
    // What getmetatable shows for the proxy: the table's own metatable,
    // protected.
    if ffi::lua_getmetatable(l, t) != 0 {
        protect(l, -1);
        registry_get(l, VISIBLE_MT_KEY);
        ffi::lua_pushvalue(l, p);
        ffi::lua_pushvalue(l, -3);
        ffi::lua_rawset(l, -3);
        pop(l, 3);
    }
    // The proxy's own metatable.
    ffi::lua_createtable(l, 0, 3);
    ffi::lua_pushvalue(l, t);
    rawset_str(l, -2, "__index");
    ffi::lua_pushcclosure(l, readonly_newindex, 0);
    rawset_str(l, -2, "__newindex");
    ffi::lua_pushboolean(l, 0);
    rawset_str(l, -2, "__metatable");
    ffi::lua_setmetatable(l, p);
}

/// Pushes the table a proxy stands for and returns true, or pushes nothing
/// and returns false when `idx` is not a proxy. `ro` is the registry's
/// proxy table (an upvalue of the wrappers).
#[inline]
pub unsafe fn push_target(l: *mut lua_State, idx: c_int, ro: c_int) -> bool {
    if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
        return false;
    }
    let idx = abs_index(l, idx);
    ffi::lua_pushvalue(l, idx);
    ffi::lua_rawget_(l, ro);
    if ffi::lua_isnil(l, -1) != 0 {
        pop(l, 1);
        return false;
    }
    true
}

/// The host of a state (for hooks, which get no upvalues).
pub unsafe fn host_of(l: *mut lua_State) -> *mut Host {
    rawget_str(l, ffi::LUA_REGISTRYINDEX, HOST_KEY);
    let p = ffi::lua_touserdata(l, -1) as *mut Host;
    pop(l, 1);
    p
}

/// Pushes the registry's proxy table (for wrappers' upvalues).
pub unsafe fn push_ro_table(l: *mut lua_State) {
    registry_get(l, RO_KEY);
}

pub unsafe fn push_visible_mt_table(l: *mut lua_State) {
    registry_get(l, VISIBLE_MT_KEY);
}

/// __newindex of read-only tables (the message of Redis's patched VM,
/// with the position of the assignment).
pub unsafe extern "C-unwind" fn readonly_newindex(l: *mut lua_State) -> c_int {
    raise_str(l, "Attempt to modify a readonly table")
}

/// Redis's luaProtectedTableError.
unsafe extern "C-unwind" fn nonexistent_global(l: *mut lua_State) -> c_int {
    if ffi::lua_gettop(l) != 2 {
        return raise_str(l, "Wrong number of arguments to luaProtectedTableError");
    }
    if ffi::lua_isstring(l, 2) == 0 {
        return raise_str(
            l,
            "Second argument to luaProtectedTableError must be a string or number",
        );
    }
    ffi::luaL_where(l, 1);
    push_str(
        l,
        "Script attempted to access nonexistent global variable '",
    );
    ffi::lua_pushvalue(l, 2);
    push_str(l, "'");
    ffi::lua_concat(l, 4);
    raise(l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientRegistry;

    /// Runs `code` in a fresh EVAL interpreter; Ok(tostring(result)) or
    /// Err(message).
    fn run(code: &str) -> Result<String, String> {
        let clients = ClientRegistry::default();
        let mut host = Host::new(VmKind::Eval, &clients);
        init(&mut host);
        let l = host.state.ptr();
        unsafe {
            load(l, code.as_bytes(), c"@user_script")
                .map_err(|e| String::from_utf8_lossy(&e).into_owned())?;
            if ffi::lua_pcall(l, 0, 1, 0) != 0 {
                return Err(String::from_utf8_lossy(to_bytes(l, -1).unwrap_or(b"?")).into_owned());
            }
            Ok(to_bytes(l, -1)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_else(|| "nil".into()))
        }
    }

    #[test]
    fn globals_are_read_only() {
        assert_eq!(
            run("a = 1").unwrap_err(),
            "user_script:1: Attempt to modify a readonly table"
        );
        assert_eq!(
            run("redis.call = 1").unwrap_err(),
            "user_script:1: Attempt to modify a readonly table"
        );
        assert_eq!(
            run("return b").unwrap_err(),
            "user_script:1: Script attempted to access nonexistent global variable 'b'"
        );
    }
}
