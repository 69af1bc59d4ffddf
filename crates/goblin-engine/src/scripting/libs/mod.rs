//! The libraries Redis bundles into its Lua: cjson, cmsgpack, bit
//! (LuaBitOp) and struct, written in Rust against the Lua C API to behave as
//! the versions Redis 7.0 ships (deps/lua/src/lua_*.c), bugs and limits
//! included where scripts can observe them.

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod lstruct;

use super::lua::*;
use mlua::ffi::{self, lua_State};

/// Creates the global table `name` with the given functions.
pub(crate) unsafe fn register(l: *mut lua_State, name: &str, funcs: &[(&str, lua_CFunction)]) {
    ffi::lua_createtable(l, 0, funcs.len() as i32);
    for (n, f) in funcs {
        set_cfunction(l, -1, n, *f, std::ptr::null_mut());
    }
    rawset_str(l, ffi::LUA_GLOBALSINDEX, name);
}

/// Opens every bundled library (as globals, like Redis's luaLoadLibraries).
pub unsafe fn open_all(l: *mut lua_State) {
    cjson::open(l);
    lstruct::open(l);
    cmsgpack::open(l);
    bit::open(l);
}
