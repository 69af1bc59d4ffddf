//! FUNCTION libraries (Redis's functions.c and function_lua.c): loading a
//! library with `#!lua name=<lib>`, redis.register_function, the function
//! index FCALL uses, and the DUMP / RESTORE payload.
//!
//! Library names are case-sensitive; function names are looked up without
//! regard to case, as in Redis.
//!
//! The DUMP payload is Goblin's own: a magic, a format version, the
//! libraries' code (shebang included), and a checksum (the first 8 bytes of
//! the SHA1 of everything before it). RESTORE recompiles the code.

use super::eval::{load_text, Lang, ScriptFlags, Target};
use super::host::{Host, VmKind};
use super::lua::*;
use super::sandbox;
use crate::client::ClientRegistry;
use crate::error::printf_s;
use crate::Error;
use mlua::ffi::{self, lua_State};
use std::collections::HashMap;
use std::ffi::c_int;
use std::time::Instant;

/// FUNCTION LOAD's time limit for running a library's top level.
pub const LOAD_TIMEOUT_MS: u64 = 500;

pub(crate) const NAME_ERROR: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

pub struct Function {
    pub name: String,
    pub desc: Option<Vec<u8>>,
    pub flags: ScriptFlags,
    pub target: Target,
}

pub struct Library {
    pub name: String,
    /// The engine FUNCTION LIST names.
    pub lang: Lang,
    pub code: Vec<u8>,
    pub functions: Vec<Function>,
}

/// What register_function fills while FUNCTION LOAD runs a library.
pub struct LoadCtx {
    pub functions: Vec<Function>,
    pub start: Instant,
    pub timeout_ms: u64,
    pub released: bool,
}

/// RESTORE's policy for libraries that already exist.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RestorePolicy {
    Flush,
    Append,
    Replace,
}

pub struct FunctionVm {
    pub host: Box<Host>,
    /// In load order.
    pub libraries: Vec<Library>,
    /// Lower-case function name → library name.
    index: HashMap<String, String>,
    /// Changes whenever a library is added or removed.
    pub generation: u64,
    /// js-memory-limit, for the top level of JavaScript libraries (set
    /// by the caller from the configuration before it loads).
    pub js_memory_limit: usize,
}

/// Redis's functionsVerifyName.
pub(crate) fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

impl FunctionVm {
    pub fn new(clients: &ClientRegistry) -> FunctionVm {
        let mut host = Host::new(VmKind::Functions, clients);
        sandbox::init(&mut host);
        host.publish_memory();
        FunctionVm {
            host,
            libraries: Vec::new(),
            index: HashMap::new(),
            generation: 0,
            js_memory_limit: 256 << 20,
        }
    }

    pub fn function_count(&self) -> usize {
        self.index.len()
    }

    pub fn memory_overhead(&self) -> u64 {
        self.libraries
            .iter()
            .map(|l| {
                (l.code.len() + l.name.len() + 64) as u64
                    + l.functions
                        .iter()
                        .map(|f| (f.name.len() + 48) as u64)
                        .sum::<u64>()
            })
            .sum()
    }

    /// The function FCALL names, with its library.
    pub fn find(&self, name: &[u8]) -> Option<&Function> {
        let lower = String::from_utf8_lossy(name).to_lowercase();
        let lib = self.index.get(&lower)?;
        self.library(lib)?
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(&lower))
    }

    pub fn library(&self, name: &str) -> Option<&Library> {
        self.libraries.iter().find(|l| l.name == name)
    }

    fn free(&mut self, lib: Library) {
        let l = self.host.state.ptr();
        for f in lib.functions {
            match f.target {
                // SAFETY: the reference was taken in this state.
                Target::Lua(r) => unsafe { ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r) },
                Target::Js(r) => {
                    if let Some(js) = self.host.js.as_mut() {
                        js.free(r);
                    }
                }
            }
        }
    }

    fn link(&mut self, lib: Library) {
        self.generation += 1;
        for f in &lib.functions {
            self.index.insert(f.name.to_lowercase(), lib.name.clone());
        }
        self.libraries.push(lib);
    }

    fn unlink(&mut self, name: &str) -> Option<Library> {
        let pos = self.libraries.iter().position(|l| l.name == name)?;
        self.generation += 1;
        let lib = self.libraries.remove(pos);
        for f in &lib.functions {
            self.index.remove(&f.name.to_lowercase());
        }
        Some(lib)
    }

    /// FUNCTION DELETE.
    pub fn delete(&mut self, name: &[u8]) -> Result<(), Error> {
        let name = String::from_utf8_lossy(name);
        let lib = self
            .unlink(&name)
            .ok_or_else(|| Error::err("Library not found"))?;
        self.free(lib);
        Ok(())
    }

    /// FUNCTION FLUSH.
    pub fn flush(&mut self) {
        self.generation += 1;
        for lib in std::mem::take(&mut self.libraries) {
            self.free(lib);
        }
        self.index.clear();
        // What the libraries held is garbage now: gone at once, not with
        // the interpreter's next cycle.
        self.host.collect(0);
    }

    /// FUNCTION LOAD (functionsCreateWithLibraryCtx): returns the name.
    pub fn load(&mut self, code: &[u8], replace: bool) -> Result<String, Error> {
        let meta = parse_metadata(code)?;
        if self.library(&meta.name).is_some() && !replace {
            return Err(Error::err(format_args!(
                "Library '{}' already exists",
                meta.name
            )));
        }
        let old = self.unlink(&meta.name);
        let new = match self.compile(code, &meta) {
            Ok(lib) => lib,
            Err(e) => {
                if let Some(old) = old {
                    self.link(old);
                }
                return Err(e);
            }
        };
        if let Some(f) = new
            .functions
            .iter()
            .find(|f| self.index.contains_key(&f.name.to_lowercase()))
        {
            let e = Error::err(format_args!("Function {} already exists", f.name));
            self.free(new);
            if let Some(old) = old {
                self.link(old);
            }
            return Err(e);
        }
        let name = new.name.clone();
        self.link(new);
        if let Some(old) = old {
            self.free(old);
        }
        Ok(name)
    }

    /// Runs a library's code to collect its functions (luaEngineCreate).
    fn compile(&mut self, code: &[u8], meta: &Metadata) -> Result<Library, Error> {
        if meta.lang == Lang::Js {
            return self.compile_js(code, meta);
        }
        super::lua::with_script_stack(|| self.compile_here(code, meta))
    }

    /// `compile` for a JavaScript library: its body registers functions
    /// through redis.registerFunction.
    fn compile_js(&mut self, code: &[u8], meta: &Metadata) -> Result<Library, Error> {
        let limit = self.js_memory_limit;
        let js = self.host.js_engine()?;
        let loaded = js.load_library(&code[meta.body_start..], LOAD_TIMEOUT_MS, limit)?;
        let functions: Vec<Function> = loaded
            .into_iter()
            .map(|f| Function {
                name: f.name,
                desc: f.desc,
                flags: f.flags,
                target: Target::Js(f.target),
            })
            .collect();
        self.host.publish_memory();
        let lib = Library {
            name: meta.name.clone(),
            lang: Lang::Js,
            code: code.to_vec(),
            functions,
        };
        if lib.functions.is_empty() {
            self.free(lib);
            return Err(Error::err("No functions registered"));
        }
        Ok(lib)
    }

    /// `compile`, on the stack it runs on.
    fn compile_here(&mut self, code: &[u8], meta: &Metadata) -> Result<Library, Error> {
        // The library's code calls redis.register_function, which reaches
        // the host through the pointer stored in the interpreter: use a raw
        // pointer here too, so no reference to the host is held across
        // lua_pcall.
        let hp: *mut Host = &mut *self.host;
        let l = unsafe { (*hp).state.ptr() };
        let mut load = LoadCtx {
            functions: Vec::new(),
            start: Instant::now(),
            timeout_ms: LOAD_TIMEOUT_MS,
            released: false,
        };
        // SAFETY: we hold the scripting mutex; the stack is balanced and
        // the load context outlives the call.
        let result = unsafe {
            set_globals_index(l, (*hp).globals_mt_ref, (*hp).lib_api_ref);
            let r = match load_text(l, &code[meta.body_start..], c"@user_function") {
                Err(msg) => Err(Error::concat(&[
                    b"ERR Error compiling function: ",
                    printf_s(&msg, usize::MAX),
                ])),
                Ok(()) => {
                    (*hp).loading = &mut load;
                    ffi::lua_sethook(l, Some(load_hook), ffi::LUA_MASKCOUNT, 100_000);
                    let status = ffi::lua_pcall(l, 0, 0, 0);
                    ffi::lua_sethook(l, None, 0, 0);
                    (*hp).loading = std::ptr::null_mut();
                    if status != 0 {
                        let info = super::convert::error_info(l);
                        pop(l, 1);
                        Err(Error::concat(&[
                            b"ERR Error registering functions: ",
                            printf_s(&info.msg.unwrap_or_default(), usize::MAX),
                        ]))
                    } else {
                        Ok(())
                    }
                }
            };
            set_globals_index(l, (*hp).globals_mt_ref, (*hp).globals_ref);
            r
        };
        let lib = Library {
            name: meta.name.clone(),
            lang: Lang::Lua,
            code: code.to_vec(),
            functions: std::mem::take(&mut load.functions),
        };
        if let Err(e) = result {
            self.free(lib);
            return Err(e);
        }
        if lib.functions.is_empty() {
            self.free(lib);
            return Err(Error::err("No functions registered"));
        }
        Ok(lib)
    }

    /// FUNCTION DUMP.
    pub fn dump(&self) -> Vec<u8> {
        let mut out = DUMP_MAGIC.to_vec();
        out.push(DUMP_VERSION);
        out.extend_from_slice(&(self.libraries.len() as u32).to_le_bytes());
        for lib in &self.libraries {
            out.extend_from_slice(&(lib.code.len() as u32).to_le_bytes());
            out.extend_from_slice(&lib.code);
        }
        let sum = checksum(&out);
        out.extend_from_slice(&sum);
        out
    }

    /// FUNCTION RESTORE.
    pub fn restore(&mut self, payload: &[u8], policy: RestorePolicy) -> Result<(), Error> {
        let codes = parse_dump(payload)
            .ok_or_else(|| Error::err("DUMP payload version or checksum are wrong"))?;
        // Load every library into a set of its own first.
        let mut fresh: Vec<Library> = Vec::new();
        let mut fresh_index: HashMap<String, ()> = HashMap::new();
        let mut failure = None;
        for code in codes {
            let meta = match parse_metadata(&code) {
                Ok(m) => m,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            if fresh.iter().any(|l| l.name == meta.name) {
                failure = Some(Error::err(format_args!(
                    "Library '{}' already exists",
                    meta.name
                )));
                break;
            }
            match self.compile(&code, &meta) {
                Ok(lib) => {
                    if let Some(f) = lib
                        .functions
                        .iter()
                        .find(|f| fresh_index.contains_key(&f.name.to_lowercase()))
                    {
                        failure = Some(Error::err(format_args!(
                            "Function {} already exists",
                            f.name
                        )));
                        self.free(lib);
                        break;
                    }
                    for f in &lib.functions {
                        fresh_index.insert(f.name.to_lowercase(), ());
                    }
                    fresh.push(lib);
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failure {
            for lib in fresh {
                self.free(lib);
            }
            return Err(e);
        }
        if policy == RestorePolicy::Flush {
            self.flush();
            for lib in fresh {
                self.link(lib);
            }
            return Ok(());
        }
        // libraryJoin: existing libraries of the same name are refused
        // (APPEND) or replaced (REPLACE); function names must not collide.
        let mut replaced = Vec::new();
        let mut err = None;
        for lib in &fresh {
            if self.library(&lib.name).is_some() {
                if policy == RestorePolicy::Append {
                    err = Some(Error::err(format_args!(
                        "Library {} already exists",
                        lib.name
                    )));
                    break;
                }
                replaced.extend(self.unlink(&lib.name));
            }
        }
        if err.is_none() {
            if let Some(f) = fresh
                .iter()
                .flat_map(|l| l.functions.iter())
                .find(|f| self.index.contains_key(&f.name.to_lowercase()))
            {
                err = Some(Error::err(format_args!(
                    "Function {} already exists",
                    f.name
                )));
            }
        }
        if let Some(e) = err {
            for lib in replaced {
                self.link(lib);
            }
            for lib in fresh {
                self.free(lib);
            }
            return Err(e);
        }
        for lib in fresh {
            self.link(lib);
        }
        for lib in replaced {
            self.free(lib);
        }
        Ok(())
    }
}

/// Points the function globals' __index at the table with registry
/// reference `target` (the real globals, or the library API).
unsafe fn set_globals_index(l: *mut lua_State, mt_ref: c_int, target: c_int) {
    ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, mt_ref);
    if target == 0 {
        pop(l, 1);
        return;
    }
    ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, target);
    rawset_str(l, -2, "__index");
    pop(l, 1);
}

/// FUNCTION LOAD's hook: stops a library whose top level runs too long.
unsafe extern "C-unwind" fn load_hook(l: *mut lua_State, ar: *mut ffi::lua_Debug) {
    let host = sandbox::host_of(l);
    if host.is_null() || (*host).loading.is_null() {
        return;
    }
    let load = &mut *(*host).loading;
    if !load.released && load.start.elapsed() >= super::eval::RELEASE_AFTER {
        load.released = true;
        crate::util::blocking::release_worker();
    }
    if load.timeout_ms > 0 && load.start.elapsed().as_millis() as u64 > load.timeout_ms {
        if super::lua::stop_at_next_instruction(l, ar, load_hook) {
            return;
        }
        ffi::lua_sethook(l, Some(load_hook), ffi::LUA_MASKLINE, 0);
        super::api::push_error(l, b"FUNCTION LOAD timeout");
        raise(l);
    }
}

struct Metadata {
    name: String,
    lang: Lang,
    /// Where the code after the shebang line starts (at its newline).
    body_start: usize,
}

/// Redis's functionExtractLibMetaData plus the name and engine checks.
fn parse_metadata(code: &[u8]) -> Result<Metadata, Error> {
    if !code.starts_with(b"#!") {
        return Err(Error::err("Missing library metadata"));
    }
    let Some(end) = memchr::memchr(b'\n', code) else {
        return Err(Error::err("Invalid library metadata"));
    };
    let parts = match crate::protocol::split_args(&code[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err(Error::err("Invalid library metadata")),
    };
    let engine = &parts[0][2..];
    let mut name: Option<Vec<u8>> = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(Error::err(
                    "Invalid metadata value, name argument was given multiple times",
                ));
            }
            name = Some(part[5..].to_vec());
            continue;
        }
        return Err(Error::concat(&[
            b"ERR Invalid metadata value given: ",
            printf_s(part, usize::MAX),
        ]));
    }
    let Some(name) = name else {
        return Err(Error::err("Library name was not given"));
    };
    if !valid_name(&name) {
        return Err(Error::err(NAME_ERROR));
    }
    let lang = if engine.eq_ignore_ascii_case(b"lua") {
        Lang::Lua
    } else if engine.eq_ignore_ascii_case(b"js") {
        Lang::Js
    } else {
        return Err(Error::concat(&[b"ERR Engine '", engine, b"' not found"]));
    };
    Ok(Metadata {
        name: String::from_utf8_lossy(&name).into_owned(),
        lang,
        body_start: end,
    })
}

/// redis.register_function: reads its arguments and records the function
/// in the library being loaded. On error the error table is on the stack
/// (the caller raises it), hence the empty error type.
#[allow(clippy::result_unit_err)]
pub unsafe fn register_function(l: *mut lua_State, host: &mut Host) -> Result<(), ()> {
    if host.loading.is_null() {
        super::api::push_error(
            l,
            b"redis.register_function can only be called on FUNCTION LOAD command",
        );
        return Err(());
    }
    let load = &mut *host.loading;
    let f = match read_register_args(l) {
        Ok(f) => f,
        Err(msg) => {
            super::api::push_error(l, msg.as_bytes());
            return Err(());
        }
    };
    let problem = if !valid_name(f.name.as_bytes()) {
        Some(NAME_ERROR)
    } else if load.functions.iter().any(|g| g.name == f.name) {
        Some("Function already exists in the library")
    } else {
        None
    };
    if let Some(msg) = problem {
        if let Target::Lua(r) = f.target {
            ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
        }
        super::api::push_error(l, msg.as_bytes());
        return Err(());
    }
    load.functions.push(f);
    Ok(())
}

unsafe fn read_register_args(l: *mut lua_State) -> Result<Function, String> {
    let argc = ffi::lua_gettop(l);
    if !(1..=2).contains(&argc) {
        return Err("wrong number of arguments to redis.register_function".into());
    }
    if argc == 2 {
        if ffi::lua_isstring(l, 1) == 0 {
            return Err("first argument to redis.register_function must be a string".into());
        }
        let name = String::from_utf8_lossy(to_bytes(l, 1).unwrap_or(b"")).into_owned();
        if ffi::lua_type(l, 2) != ffi::LUA_TFUNCTION {
            return Err("second argument to redis.register_function must be a function".into());
        }
        let func_ref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        return Ok(Function {
            name,
            desc: None,
            flags: ScriptFlags(0),
            target: Target::Lua(func_ref),
        });
    }
    if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
        return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).".into());
    }
    let mut name = None;
    let mut desc = None;
    let mut func_ref = None;
    let mut flags = 0;
    let mut error = None;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, 1) != 0 {
        if ffi::lua_isstring(l, -2) == 0 {
            error = Some("named argument key given to redis.register_function is not a string");
            pop(l, 2);
            break;
        }
        let key = String::from_utf8_lossy(to_bytes(l, -2).unwrap_or(b"")).to_lowercase();
        match key.as_str() {
            "function_name" => {
                if ffi::lua_isstring(l, -1) == 0 {
                    error = Some(
                        "function_name argument given to redis.register_function must be a string",
                    );
                } else {
                    name =
                        Some(String::from_utf8_lossy(to_bytes(l, -1).unwrap_or(b"")).into_owned());
                }
            }
            "description" => {
                if ffi::lua_isstring(l, -1) == 0 {
                    error = Some(
                        "description argument given to redis.register_function must be a string",
                    );
                } else {
                    desc = Some(to_bytes(l, -1).unwrap_or(b"").to_vec());
                }
            }
            "callback" => {
                if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
                    error = Some(
                        "callback argument given to redis.register_function must be a function",
                    );
                } else {
                    if let Some(old) = func_ref.take() {
                        ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, old);
                    }
                    // Pops the value; the key stays for lua_next.
                    func_ref = Some(ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX));
                    continue;
                }
            }
            "flags" => {
                if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
                    error = Some("flags argument to redis.register_function must be a table representing function flags");
                } else {
                    match read_flags(l) {
                        Some(f) => flags = f,
                        None => error = Some("unknown flag given"),
                    }
                }
            }
            _ => error = Some("unknown argument given to redis.register_function"),
        }
        if error.is_some() {
            pop(l, 2);
            break;
        }
        pop(l, 1);
    }
    let fail = |msg: &str, func_ref: Option<c_int>| {
        if let Some(r) = func_ref {
            ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
        }
        Err(msg.to_string())
    };
    if let Some(e) = error {
        return fail(e, func_ref);
    }
    let Some(name) = name else {
        return fail(
            "redis.register_function must get a function name argument",
            func_ref,
        );
    };
    let Some(func_ref) = func_ref else {
        return fail("redis.register_function must get a callback argument", None);
    };
    Ok(Function {
        name,
        desc,
        flags: ScriptFlags(flags),
        target: Target::Lua(func_ref),
    })
}

/// The flags table on top of the stack (luaRegisterFunctionReadFlags).
unsafe fn read_flags(l: *mut lua_State) -> Option<u32> {
    let mut flags = 0;
    let mut j = 1;
    loop {
        // Raw reads: a metamethod raising here would leave this frame by
        // longjmp.
        ffi::lua_rawgeti_(l, -1, j);
        j += 1;
        if ffi::lua_isnil(l, -1) != 0 {
            pop(l, 1);
            return Some(flags);
        }
        if ffi::lua_isstring(l, -1) == 0 {
            pop(l, 1);
            return None;
        }
        let name = to_bytes(l, -1).unwrap_or(b"");
        let found = ScriptFlags::NAMES
            .iter()
            .find(|(_, n)| n.as_bytes().eq_ignore_ascii_case(name));
        pop(l, 1);
        flags |= found?.0;
    }
}

const DUMP_MAGIC: &[u8; 8] = b"GOBLINFN";
const DUMP_VERSION: u8 = 1;

fn checksum(data: &[u8]) -> [u8; 8] {
    use sha1::{Digest, Sha1};
    let d = Sha1::digest(data);
    let mut out = [0u8; 8];
    out.copy_from_slice(&d[..8]);
    out
}

/// The libraries' code in a DUMP payload; None when the payload is not one
/// of ours or is damaged.
fn parse_dump(p: &[u8]) -> Option<Vec<Vec<u8>>> {
    if p.len() < DUMP_MAGIC.len() + 1 + 4 + 8 || !p.starts_with(DUMP_MAGIC) {
        return None;
    }
    let (body, sum) = p.split_at(p.len() - 8);
    if checksum(body) != sum || body[8] != DUMP_VERSION {
        return None;
    }
    let mut pos = 9;
    let n = u32::from_le_bytes(body.get(pos..pos + 4)?.try_into().ok()?);
    pos += 4;
    let mut codes = Vec::new();
    for _ in 0..n {
        let len = u32::from_le_bytes(body.get(pos..pos + 4)?.try_into().ok()?) as usize;
        pos += 4;
        codes.push(body.get(pos..pos + len)?.to_vec());
        pos += len;
    }
    (pos == body.len()).then_some(codes)
}
