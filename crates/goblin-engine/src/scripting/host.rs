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
use std::ffi::c_int;
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
        })
    }

    pub fn ptr(&mut self) -> *mut std::ffi::c_void {
        self as *mut Host as *mut std::ffi::c_void
    }
}
