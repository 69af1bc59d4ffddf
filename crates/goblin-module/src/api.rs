//! The few pieces of the raw module API the module shares between its
//! files: a function of the API (checked present when the module loads),
//! a RedisModuleString owned on the Rust side, and RedisModule_Replicate
//! of an argument vector.

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};
use std::ffi::CString;
use std::os::raw::c_char;

/// A function of the module API. `RedisModule_OnLoad` refuses to load on a
/// server that lacks one the module uses (see `lib.rs`), so this holds
/// whenever a command runs.
pub fn f<T>(function: Option<T>) -> T {
    function.expect("module API function checked at load")
}

/// `len` bytes at `p` (an empty slice for a null pointer).
///
/// # Safety
/// `p` points at `len` readable bytes that outlive the slice's use.
pub unsafe fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

/// The bytes of a RedisModuleString.
///
/// # Safety
/// `s` is a live RedisModuleString; the slice is used while it lives.
pub unsafe fn string_bytes<'a>(s: *const RedisModuleString) -> &'a [u8] {
    let mut len = 0usize;
    unsafe {
        let p = f(raw::RedisModule_StringPtrLen)(s, &mut len);
        bytes(p as *const u8, len)
    }
}

/// A RedisModuleString the module created or was handed, freed on drop.
pub struct ModuleString {
    ctx: *mut RedisModuleCtx,
    ptr: *mut RedisModuleString,
}

impl ModuleString {
    pub fn new(ctx: *mut RedisModuleCtx, bytes: &[u8]) -> ModuleString {
        let ptr = unsafe {
            f(raw::RedisModule_CreateString)(ctx, bytes.as_ptr() as *const c_char, bytes.len())
        };
        ModuleString { ctx, ptr }
    }

    /// Takes ownership of a string the API returned (None for null).
    pub fn adopt(ctx: *mut RedisModuleCtx, ptr: *mut RedisModuleString) -> Option<ModuleString> {
        // Not `then_some`: it would build (and drop, freeing) the string
        // for a null pointer too.
        if ptr.is_null() {
            None
        } else {
            Some(ModuleString { ctx, ptr })
        }
    }

    pub fn ptr(&self) -> *mut RedisModuleString {
        self.ptr
    }

    pub fn bytes(&self) -> &[u8] {
        unsafe { string_bytes(self.ptr) }
    }
}

impl Drop for ModuleString {
    fn drop(&mut self) {
        unsafe { f(raw::RedisModule_FreeString)(self.ctx, self.ptr) };
    }
}

/// Replicates one command, `argv[0]` its name, to the replicas and the
/// append-only file (Redis wraps a call's replicated commands in
/// MULTI/EXEC when there are several).
pub fn replicate(ctx: *mut RedisModuleCtx, argv: &[Vec<u8>]) {
    let Some((name, args)) = argv.split_first() else {
        return;
    };
    let Ok(name) = CString::new(name.as_slice()) else {
        return;
    };
    let args: Vec<ModuleString> = args.iter().map(|a| ModuleString::new(ctx, a)).collect();
    let mut ptrs: Vec<*mut RedisModuleString> = args.iter().map(ModuleString::ptr).collect();
    unsafe {
        // "v": an array of RedisModuleString pointers and its length.
        f(raw::RedisModule_Replicate)(
            ctx,
            name.as_ptr(),
            c"v".as_ptr(),
            ptrs.as_mut_ptr(),
            ptrs.len(),
        );
    }
}
