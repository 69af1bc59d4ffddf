//! LuaBitOp 1.0.2 (`bit`), as Redis bundles it: 32-bit operations on Lua
//! numbers, results as signed 32-bit numbers.

use super::super::lua::*;
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

/// Converts an argument to 32 bits the way LuaBitOp does: adding 2^52+2^51
/// and taking the low word of the double, which rounds to nearest and wraps
/// modulo 2^32.
unsafe fn barg(l: *mut lua_State, idx: c_int) -> Result<u32, ()> {
    let n = ffi::lua_tonumber(l, idx);
    let b = (n + 6755399441055744.0).to_bits() as u32;
    if b == 0 && ffi::lua_isnumber(l, idx) == 0 {
        return Err(());
    }
    Ok(b)
}

unsafe fn ret(l: *mut lua_State, b: u32) -> c_int {
    ffi::lua_pushnumber(l, b as i32 as f64);
    1
}

/// luaL_typerror(L, idx, "number") for a bad argument.
unsafe fn type_error(l: *mut lua_State, idx: c_int) -> c_int {
    ffi::luaL_typerror(l, idx, c"number".as_ptr())
}

macro_rules! arg {
    ($l:expr, $i:expr) => {
        match barg($l, $i) {
            Ok(b) => b,
            Err(()) => return type_error($l, $i),
        }
    };
}

unsafe extern "C-unwind" fn tobit(l: *mut lua_State) -> c_int {
    let b = arg!(l, 1);
    ret(l, b)
}

unsafe extern "C-unwind" fn bnot(l: *mut lua_State) -> c_int {
    let b = arg!(l, 1);
    ret(l, !b)
}

macro_rules! fold_op {
    ($name:ident, $op:tt) => {
        unsafe extern "C-unwind" fn $name(l: *mut lua_State) -> c_int {
            let mut b = arg!(l, 1);
            let mut i = ffi::lua_gettop(l);
            while i > 1 {
                let x = arg!(l, i);
                b $op x;
                i -= 1;
            }
            ret(l, b)
        }
    };
}
fold_op!(band, &=);
fold_op!(bor, |=);
fold_op!(bxor, ^=);

macro_rules! shift_op {
    ($name:ident, |$b:ident, $n:ident| $e:expr) => {
        unsafe extern "C-unwind" fn $name(l: *mut lua_State) -> c_int {
            let $b = arg!(l, 1);
            let $n = arg!(l, 2) & 31;
            ret(l, $e)
        }
    };
}
shift_op!(lshift, |b, n| b << n);
shift_op!(rshift, |b, n| b >> n);
shift_op!(arshift, |b, n| ((b as i32) >> n) as u32);
shift_op!(rol, |b, n| b.rotate_left(n));
shift_op!(ror, |b, n| b.rotate_right(n));

unsafe extern "C-unwind" fn bswap(l: *mut lua_State) -> c_int {
    let b = arg!(l, 1);
    ret(l, b.swap_bytes())
}

unsafe extern "C-unwind" fn tohex(l: *mut lua_State) -> c_int {
    let mut b = arg!(l, 1);
    let mut n: i32 = if ffi::lua_isnone(l, 2) != 0 {
        8
    } else {
        arg!(l, 2) as i32
    };
    let mut digits: &[u8; 16] = b"0123456789abcdef";
    if n == i32::MIN {
        n = i32::MIN + 1;
    }
    if n < 0 {
        n = -n;
        digits = b"0123456789ABCDEF";
    }
    let n = n.min(8) as usize;
    let mut buf = [0u8; 8];
    for i in (0..n).rev() {
        buf[i] = digits[(b & 15) as usize];
        b >>= 4;
    }
    push_bytes(l, &buf[..n]);
    1
}

pub unsafe fn open(l: *mut lua_State) {
    super::register(
        l,
        "bit",
        &[
            ("tobit", tobit),
            ("bnot", bnot),
            ("band", band),
            ("bor", bor),
            ("bxor", bxor),
            ("lshift", lshift),
            ("rshift", rshift),
            ("arshift", arshift),
            ("rol", rol),
            ("ror", ror),
            ("bswap", bswap),
            ("tohex", tohex),
        ],
    );
}
