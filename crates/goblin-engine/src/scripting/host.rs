//! `Host`: one Lua interpreter and what its C functions reach.
//!
//! The C functions registered in Lua (redis.call, the hook...) receive the
//! host's address as a light-userdata upvalue (or find it in the registry).
//! While a script runs, `Host::run` points at its [`RunCtx`], which lives on
//! the stack of the command that runs the script; it is null otherwise, so
//! redis.call outside a script invocation (e.g. while FUNCTION LOAD runs
//! the library's top level) is refused as in Redis.

use super::lua::LuaState;
use crate::client::{ClientRegistry, ClientState, ConnInfo};
use crate::engine::Engine;
use crate::keyspace::ShardLocks;
use crate::protocol::ReplyWriter;
use crate::stats::ThreadStats;
use mlua::ffi;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Which interpreter a host is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum VmKind {
    Eval,
    Functions,
}

/// The context of one script invocation (Redis's scriptRunCtx).
pub struct RunCtx {
    pub engine: *const Engine,
    pub locks: *mut ShardLocks<'static>,
    pub stats: *const ThreadStats,
    pub now_ms: u64,
    pub in_multi: bool,
    /// Write commands are refused (EVAL_RO, FCALL_RO, no-writes scripts).
    pub read_only: bool,
    /// The allow-oom flag: deny-oom commands run even when out of memory.
    pub allow_oom: bool,
    /// Out of memory when the script started (Redis's pre_command_oom_state).
    pub oom_at_start: bool,
    /// The script already wrote (Redis's SCRIPT_WRITE_DIRTY).
    pub wrote: bool,
    /// redis.set_repl flags.
    pub repl_flags: u8,
    pub start: Instant,
    /// The runtime worker was handed to another thread (see
    /// `util::blocking`).
    pub released: bool,
    /// A keyed script (see `super::keyed`): it holds only its keys' shards.
    pub keyed: bool,
    /// Run for the primary or a replay (Redis's mustObeyClient): its
    /// writes are not refused for a disk error.
    pub obeyed: bool,
    /// The calling client's ACL user when it may not run everything: each
    /// command the script runs is checked against it.
    pub caller: Option<ScriptCaller>,
}

/// Who runs the script, for ACL checks and the ACL log.
pub struct ScriptCaller {
    pub user: std::sync::Arc<crate::acl::User>,
    pub name: Vec<u8>,
    pub info: std::sync::Arc<crate::client::ClientInfo>,
}

pub struct Host {
    pub state: LuaState,
    pub kind: VmKind,
    pub run: *mut RunCtx,
    /// FUNCTION LOAD in progress: the library being registered.
    pub loading: *mut super::functions::LoadCtx,
    /// The script's client: its own database and RESP version, as Redis's
    /// lua_client.
    pub client: ClientState,
    /// Replies of the commands the script calls.
    pub out: ReplyWriter,
    /// Scratch space for redis.call arguments, reused across calls.
    pub(crate) arg_refs: Vec<ArgRef>,
    pub(crate) numbuf: Vec<u8>,
    pub(crate) argv: Vec<&'static [u8]>,
    /// Registry reference of the real globals table (EVAL sets KEYS and
    /// ARGV in it).
    pub globals_ref: c_int,
    /// Registry reference of the error handler passed to lua_pcall.
    pub errh_ref: c_int,
    /// Functions only: the globals' metatable, whose __index switches to
    /// the library API while FUNCTION LOAD runs the library's code.
    pub globals_mt_ref: c_int,
    pub lib_api_ref: c_int,
    /// Runs since the last incremental GC step.
    pub gc_count: u32,
    /// The interpreter's memory as INFO reads it (published after each
    /// script and collection; the scripting engine sums these).
    pub figure: Arc<AtomicU64>,
    /// The collection epoch this interpreter was last fully collected in
    /// (`Scripting::collect_all`).
    pub gc_epoch: u64,
    /// The running script called collectgarbage("collect"): once it ends,
    /// every other interpreter is collected too, as Redis's one
    /// interpreter would be.
    pub collect_requested: bool,
    /// The JavaScript engine, made when this interpreter first meets a
    /// `#!js` script or library (see `super::js`).
    pub js: Option<Box<super::js::JsEngine>>,
}

#[derive(Clone, Copy)]
pub(crate) enum ArgRef {
    Lua(*const u8, usize),
    Num(usize, usize),
}

// SAFETY: the raw pointers are only set while a script runs on the thread
// that holds the scripting mutex; between runs they are null.
unsafe impl Send for Host {}

impl Host {
    pub fn new(kind: VmKind, clients: &ClientRegistry) -> Box<Host> {
        let info = clients.register(&ConnInfo::embedded(), crate::util::time::now_ms());
        Box::new(Host {
            state: LuaState::new(),
            kind,
            run: std::ptr::null_mut(),
            loading: std::ptr::null_mut(),
            client: ClientState::new(info, 0, 2, true, true),
            out: ReplyWriter::new(2),
            arg_refs: Vec::new(),
            numbuf: Vec::new(),
            argv: Vec::new(),
            globals_ref: 0,
            errh_ref: 0,
            globals_mt_ref: 0,
            lib_api_ref: 0,
            gc_count: 0,
            figure: Arc::new(AtomicU64::new(0)),
            gc_epoch: 0,
            collect_requested: false,
            js: None,
        })
    }

    pub fn ptr(&mut self) -> *mut std::ffi::c_void {
        self as *mut Host as *mut std::ffi::c_void
    }

    /// Publishes the interpreter's memory for INFO.
    #[inline]
    pub fn publish_memory(&self) {
        self.figure.store(self.memory(), Ordering::Relaxed);
    }

    /// The memory of both languages' interpreters.
    #[inline]
    pub fn memory(&self) -> u64 {
        self.state.memory() + self.js.as_ref().map_or(0, |j| j.memory())
    }

    /// The JavaScript engine, made on first use.
    pub fn js_engine(&mut self) -> Result<&mut super::js::JsEngine, crate::Error> {
        if self.js.is_none() {
            self.js = Some(Box::new(super::js::JsEngine::new()?));
        }
        Ok(self.js.as_deref_mut().expect("made above"))
    }

    /// A full collection, repeated while it gives memory back (each one
    /// also halves Lua's concatenation buffer, which a long string left
    /// as long as itself: checkSizes), stopping early once the memory is
    /// down to `enough`. What it frees goes back to the system.
    pub fn collect(&mut self, enough: u64) {
        let l = self.state.ptr();
        let start = self.state.memory();
        let mut last = u64::MAX;
        for _ in 0..32 {
            // SAFETY: the state is ours and idle; lua_cpcall keeps any
            // error (a memory error, say) inside.
            unsafe { ffi::lua_cpcall(l, full_gc, std::ptr::null_mut()) };
            if let Some(js) = self.js.as_mut() {
                js.collect();
            }
            let now = self.state.memory();
            if now >= last || now <= enough {
                break;
            }
            last = now;
        }
        self.gc_count = 0;
        if start.saturating_sub(self.state.memory()) >= TRIM_AFTER {
            trim_heap();
        }
        self.publish_memory();
    }
}

/// One full Lua collection, under `lua_cpcall`.
unsafe extern "C-unwind" fn full_gc(l: *mut ffi::lua_State) -> c_int {
    ffi::lua_gc(l, ffi::LUA_GCCOLLECT, 0);
    0
}

/// Collections that free at least this much hand the C library's free
/// pages back to the system.
const TRIM_AFTER: u64 = 8 << 20;

/// Returns the C heap's free pages to the system. The interpreters
/// allocate from the C library (see `lua::LuaState`), whose arenas keep
/// what small objects freed (a table of a million strings, say) resident
/// until trimmed; large blocks are unmapped when freed.
pub(crate) fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
