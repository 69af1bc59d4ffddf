//! The Lua side of the host: the `redis` table (script_lua.c's luaRedis*
//! functions), Redis's replacements of pcall, unpack and math.random, and
//! the sandbox's wrappers of the builtins that bypass metatables.
//!
//! Every function here is a Lua C function. Each one finishes its Rust work
//! (and drops what it owns) before it raises a Lua error, because raising
//! leaves by `longjmp` (see `lua.rs`).

use super::host::{ArgRef, Host, RunCtx, VmKind};
use super::lua::*;
use super::sandbox;
use crate::command::spec::flag;
use crate::command::table;
use crate::engine::Engine;
use mlua::ffi::{self, lua_State};
use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

/// Redis's log levels (LL_DEBUG .. LL_WARNING).
const LOG_LEVELS: &[(&str, f64)] = &[
    ("LOG_DEBUG", 0.0),
    ("LOG_VERBOSE", 1.0),
    ("LOG_NOTICE", 2.0),
    ("LOG_WARNING", 3.0),
];

/// Redis's PROPAGATE_AOF / PROPAGATE_REPL.
const PROPAGATE_AOF: u8 = 1;
const PROPAGATE_REPL: u8 = 2;

/// The host behind the light-userdata upvalue.
#[inline]
unsafe fn host<'a>(l: *mut lua_State) -> &'a mut Host {
    &mut *(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut Host)
}

// ---------------------------------------------------------------------------
// Error tables
// ---------------------------------------------------------------------------

/// Redis's luaPushErrorBuff: pushes {err="CODE msg"}. A text starting with
/// '-' carries its own code ("-OOM ..."); any other text gets "ERR".
pub unsafe fn push_error(l: *mut lua_State, text: &[u8]) {
    let (code, msg): (&[u8], &[u8]) = match text.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&c| c == b' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", text),
    };
    let mut msg = msg;
    while let [rest @ .., b'\r' | b'\n'] = msg {
        msg = rest;
    }
    while let [b'\r' | b'\n', rest @ ..] = msg {
        msg = rest;
    }
    ffi::lua_createtable(l, 0, 1);
    push_str(l, "err");
    push_bytes(l, code);
    push_str(l, " ");
    push_bytes(l, msg);
    ffi::lua_concat(l, 3);
    ffi::lua_rawset(l, -3);
}

/// Marks the error table on top as already counted in the error stats.
unsafe fn mark_error_counted(l: *mut lua_State) {
    push_str(l, "ignore_error_stats_update");
    ffi::lua_pushboolean(l, 1);
    ffi::lua_rawset(l, -3);
}

// ---------------------------------------------------------------------------
// redis.call / redis.pcall
// ---------------------------------------------------------------------------

enum CallOutcome {
    /// A value (the reply, or with pcall an error table) is on top.
    Value,
    /// An error table is on top; raise it with redis.call.
    Error,
    /// An error table is on top; raise it in any case.
    Fatal,
}

unsafe extern "C-unwind" fn redis_call(l: *mut lua_State) -> c_int {
    match generic_call(l) {
        CallOutcome::Value => 1,
        CallOutcome::Error | CallOutcome::Fatal => raise(l),
    }
}

unsafe extern "C-unwind" fn redis_pcall_command(l: *mut lua_State) -> c_int {
    match generic_call(l) {
        CallOutcome::Value | CallOutcome::Error => 1,
        CallOutcome::Fatal => raise(l),
    }
}

/// Redis's luaRedisGenericCommand: arguments to argv, the script checks of
/// scriptCall, the call itself through `Engine::call`, and the reply back
/// to a Lua value.
unsafe fn generic_call(l: *mut lua_State) -> CallOutcome {
    let host = host(l);
    if host.run.is_null() {
        push_error(
            l,
            b"redis.call/pcall can only be called inside a script invocation",
        );
        return CallOutcome::Fatal;
    }
    let argc = ffi::lua_gettop(l);
    if argc == 0 {
        push_error(
            l,
            b"Please specify at least one argument for this redis lib call",
        );
        return CallOutcome::Error;
    }

    // Arguments: strings as they are, numbers as "%.17g" (Lua's own
    // conversion would lose precision).
    host.arg_refs.clear();
    host.numbuf.clear();
    for i in 1..=argc {
        if ffi::lua_type(l, i) == ffi::LUA_TNUMBER {
            let start = host.numbuf.len();
            format_number(ffi::lua_tonumber(l, i), &mut host.numbuf);
            host.arg_refs
                .push(ArgRef::Num(start, host.numbuf.len() - start));
        } else {
            match string_at(l, i) {
                Some(s) => host.arg_refs.push(ArgRef::Lua(s.as_ptr(), s.len())),
                None => {
                    push_error(
                        l,
                        b"Lua redis lib command arguments must be strings or integers",
                    );
                    return CallOutcome::Error;
                }
            }
        }
    }
    host.argv.clear();
    for r in &host.arg_refs {
        // SAFETY: Lua strings stay alive on the stack for the whole call;
        // numbuf is not touched again until the argv is cleared.
        let s: &'static [u8] = match *r {
            ArgRef::Lua(p, n) => std::slice::from_raw_parts(p, n),
            ArgRef::Num(start, n) => std::slice::from_raw_parts(host.numbuf.as_ptr().add(start), n),
        };
        host.argv.push(s);
    }

    let argv = std::mem::take(&mut host.argv);
    let outcome = run_command(host, &argv);
    // The arguments' strings were needed only by the call: free their
    // stack slots for the reply, as Redis pops them (a call with ~8000
    // arguments fills a C function's stack).
    ffi::lua_settop(l, 0);
    // Nothing this frame owns may be alive while the reply is pushed: a
    // reply past the interpreter's memory bound raises the memory error
    // from inside.
    let mut argv = argv;
    argv.clear();
    host.argv = argv;
    match outcome {
        CommandOutcome::Rejected(err) => {
            push_error(l, err.as_bytes());
            mark_error_counted(l);
            CallOutcome::Error
        }
        CommandOutcome::Failed => {
            push_error(l, b"-ERR internal error while running the command");
            CallOutcome::Error
        }
        CommandOutcome::Reply { is_error } => {
            super::convert::push_reply(l, &host.out.buf);
            host.out.buf.clear();
            // Keep the buffer for the next call, unless a large reply
            // made it large.
            if host.out.buf.capacity() > 1 << 16 {
                host.out.buf = Vec::new();
            }
            if is_error {
                CallOutcome::Error
            } else {
                CallOutcome::Value
            }
        }
    }
}

/// What became of a command a script called (whatever its language).
pub(crate) enum CommandOutcome {
    /// Refused before running (scriptCall's checks), already counted in
    /// the error stats: the error text.
    Rejected(std::borrow::Cow<'static, str>),
    /// The command panicked; nothing is in the reply buffer.
    Failed,
    /// The command ran; its reply is in `host.out.buf`.
    Reply { is_error: bool },
}

/// The language-independent half of redis.call (scriptCall): the checks
/// (command, arity, noscript, ACL, read-only, replicas, OOM), the write
/// mark SCRIPT KILL reads, the shards a keyed script lacks, and the call
/// through `Engine::call` on the script's own client. The reply is left
/// in `host.out.buf` for the language to read back.
///
/// # Safety
/// `host.run` is non-null and points to the running script's context.
pub(crate) unsafe fn run_command(host: &mut Host, argv: &[&[u8]]) -> CommandOutcome {
    let run = &mut *host.run;
    let engine = &*run.engine;
    let stats = &*run.stats;
    match check_command(engine, run, argv) {
        Err((cmd_id, err)) => {
            // Rejected before running: counted as Redis's afterErrorReply
            // and incrCommandStatsOnError(REJECTED) do.
            engine.count_script_rejection(stats, cmd_id, &err);
            CommandOutcome::Rejected(err.into())
        }
        Ok(id) => {
            let spec = table().get(id).spec;
            if spec.has(flag::WRITE) {
                run.wrote = true;
                // What SCRIPT KILL reads of the tracked script (a keyed
                // one is not tracked, and need not write a shared line).
                if !run.keyed {
                    engine.scripting().run.wrote.store(true, Ordering::Release);
                }
            }
            host.out.buf.clear();
            let logged = host.client.pending_propagation.len();
            let locks = &mut *run.locks;
            if run.keyed && !locks.holds_all() {
                if let Err(e) = take_undeclared(engine, locks, spec, argv) {
                    engine.count_script_rejection(stats, Some(id), e);
                    return CommandOutcome::Rejected(e.into());
                }
            }
            let call = std::panic::AssertUnwindSafe(|| {
                engine.call(
                    &mut host.client,
                    &mut host.out,
                    locks,
                    stats,
                    id,
                    argv,
                    run.now_ms,
                    run.in_multi,
                    true,
                )
            });
            let result = std::panic::catch_unwind(call);
            if run.repl_flags & PROPAGATE_AOF == 0 {
                // redis.set_repl without REPL_AOF: the call's writes stay
                // out of the log.
                host.client.pending_propagation.truncate(logged);
            }
            match result {
                Ok(_) => CommandOutcome::Reply {
                    is_error: host.out.buf.first() == Some(&b'-'),
                },
                Err(_) => {
                    host.out.buf.clear();
                    CommandOutcome::Failed
                }
            }
        }
    }
}

/// A keyed script holds only the shards of its KEYS, and the look at its
/// source showed that each command it runs passes KEYS entries as keys. A
/// command that touches another shard all the same (the script rewrote an
/// entry of KEYS) takes that shard if it is free now; it cannot wait for
/// it, which could deadlock against a holder waiting for this script's.
fn take_undeclared<'a>(
    engine: &'a Engine,
    locks: &mut crate::keyspace::ShardLocks<'a>,
    spec: &crate::command::CommandSpec,
    argv: &[&[u8]],
) -> Result<(), &'static str> {
    const BUSY: &str = "ERR a script that holds only the shards of its declared keys \
                        touched another key whose shard is in use; pass every key in KEYS";
    let ks = &engine.keyspace();
    if spec.has(flag::ALL_SHARDS) || spec.locks_fn.is_some() {
        return Err(BUSY);
    }
    let keys = crate::command::keys::key_positions(spec, argv).ok_or(BUSY)?;
    for (i, _) in keys {
        if !ks.try_add(locks, ks.shard_of_key(argv[i])) {
            return Err(BUSY);
        }
    }
    Ok(())
}

/// scriptCall's checks: the command exists with a valid arity, may run from
/// a script, and may write now. Returns the command id, or the error text
/// (Redis's `err`, with the command when known).
fn check_command(
    engine: &Engine,
    run: &RunCtx,
    argv: &[&[u8]],
) -> Result<usize, (Option<usize>, String)> {
    let t = table();
    let unknown = || (None, "Unknown Redis command called from script".to_string());
    let mut id = t.lookup(argv[0]).ok_or_else(unknown)?;
    if !t.get(id).spec.subcommands.is_empty() && argv.len() >= 2 {
        id = t.subcommand(id, argv[1]).ok_or_else(unknown)?;
    }
    let spec = t.get(id).spec;
    if !spec.arity_ok(argv.len()) {
        return Err((
            None,
            "Wrong number of args calling Redis command from script".to_string(),
        ));
    }
    if spec.has(flag::NOSCRIPT)
        && !engine
            .scripting()
            .disable_deny_script
            .load(Ordering::Relaxed)
    {
        return Err((
            Some(id),
            "This Redis command is not allowed from script".to_string(),
        ));
    }
    if let Some(caller) = &run.caller {
        if let Err(denied) = caller.user.check(id, argv) {
            use crate::acl::{Denied, LogReason};
            let (reason, object) = match denied {
                Denied::Command => (LogReason::Command, t.get(id).fullname.as_bytes()),
                Denied::Key(i) => (LogReason::Key, argv[i]),
                Denied::Channel(i) => (LogReason::Channel, argv[i]),
            };
            engine.acl_log(
                &caller.info,
                reason,
                crate::acl::LogContext::Lua,
                object,
                caller.name.clone(),
            );
            return Err((
                Some(id),
                format!("The user executing the script {}", denied.message()),
            ));
        }
    }
    if run.read_only && spec.has(flag::WRITE | flag::MAY_REPLICATE) {
        return Err((
            Some(id),
            "Write commands are not allowed from read-only scripts.".to_string(),
        ));
    }
    // Redis's scriptVerifyWriteCommandAllow: once the script wrote, its
    // writes go on whatever happens meanwhile.
    if spec.has(flag::WRITE) && !run.wrote && !run.obeyed {
        if let Some(denied) = engine.persist().write_denial() {
            return Err((Some(id), format!("-{}", denied.message())));
        }
    }
    if spec.has(flag::WRITE) && !run.wrote && !engine.good_replicas_ok() {
        return Err((
            Some(id),
            "-NOREPLICAS Not enough good replicas to write.".to_string(),
        ));
    }
    if !run.allow_oom
        && !run.wrote
        && run.oom_at_start
        && spec.has(flag::DENYOOM)
        && engine.config().maxmemory.load(Ordering::Relaxed) != 0
    {
        return Err((
            Some(id),
            "-OOM command not allowed when used memory > 'maxmemory'.".to_string(),
        ));
    }
    Ok(id)
}

/// Redis's luaRedisPcall: the builtin pcall, except that an error table
/// {err=...} is handed to the caller as its message string.
unsafe extern "C-unwind" fn redis_pcall(l: *mut lua_State) -> c_int {
    let argc = ffi::lua_gettop(l);
    ffi::lua_pushboolean(l, 1);
    ffi::lua_insert(l, 1);
    if ffi::lua_pcall(l, argc - 1, ffi::LUA_MULTRET, 0) != 0 {
        ffi::lua_remove(l, 1);
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            push_str(l, "err");
            ffi::lua_gettable_(l, -2);
            if ffi::lua_isstring(l, -1) != 0 {
                ffi::lua_replace(l, -2);
            } else {
                pop(l, 1);
            }
        }
        ffi::lua_pushboolean(l, 0);
        ffi::lua_insert(l, 1);
    }
    ffi::lua_gettop(l)
}

// ---------------------------------------------------------------------------
// The other redis.* functions
// ---------------------------------------------------------------------------

unsafe extern "C-unwind" fn redis_sha1hex(l: *mut lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        push_error(l, b"wrong number of arguments");
        return raise(l);
    }
    let hex = super::sha1_hex(to_bytes(l, 1).unwrap_or(b""));
    push_bytes(l, &hex);
    1
}

unsafe extern "C-unwind" fn redis_error_reply(l: *mut lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
        push_error(l, b"wrong number or type of arguments");
        return 1;
    }
    let s = to_bytes(l, -1).unwrap_or(b"");
    // Redis's C string: the text ends at a NUL byte.
    let s = &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())];
    if s.first() == Some(&b'-') {
        push_error(l, s);
    } else {
        let mut t = Vec::with_capacity(s.len() + 1);
        t.push(b'-');
        t.extend_from_slice(s);
        push_error(l, &t);
    }
    1
}

unsafe extern "C-unwind" fn redis_status_reply(l: *mut lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
        push_error(l, b"wrong number or type of arguments");
        return 1;
    }
    ffi::lua_createtable(l, 0, 1);
    push_str(l, "ok");
    ffi::lua_pushvalue(l, -3);
    ffi::lua_rawset(l, -3);
    1
}

unsafe extern "C-unwind" fn redis_log(l: *mut lua_State) -> c_int {
    let argc = ffi::lua_gettop(l);
    if argc < 2 {
        push_error(l, b"redis.log() requires two arguments or more.");
        return raise(l);
    }
    if ffi::lua_isnumber(l, 1) == 0 {
        push_error(l, b"First argument must be a number (log level).");
        return raise(l);
    }
    let level = ffi::lua_tonumber(l, 1) as c_int;
    if !(0..=3).contains(&level) {
        push_error(l, b"Invalid debug level.");
        return raise(l);
    }
    let mut line = Vec::new();
    for j in 2..=argc {
        if let Some(s) = to_bytes(l, j) {
            if j != 2 {
                line.push(b' ');
            }
            line.extend_from_slice(s);
        }
    }
    super::log(level as u8, &String::from_utf8_lossy(&line));
    0
}

unsafe extern "C-unwind" fn redis_setresp(l: *mut lua_State) -> c_int {
    let host = host(l);
    if host.run.is_null() {
        push_error(
            l,
            b"redis.setresp can only be called inside a script invocation",
        );
        return raise(l);
    }
    if ffi::lua_gettop(l) != 1 {
        push_error(l, b"redis.setresp() requires one argument.");
        return raise(l);
    }
    let resp = ffi::lua_tonumber(l, 1) as c_int;
    if resp != 2 && resp != 3 {
        push_error(l, b"RESP version must be 2 or 3.");
        return raise(l);
    }
    host.client.resp = resp as u8;
    host.out.set_resp(resp as u8);
    0
}

unsafe extern "C-unwind" fn redis_set_repl(l: *mut lua_State) -> c_int {
    let host = host(l);
    if host.run.is_null() {
        push_error(
            l,
            b"redis.set_repl can only be called inside a script invocation",
        );
        return raise(l);
    }
    if ffi::lua_gettop(l) != 1 {
        push_error(l, b"redis.set_repl() requires two arguments.");
        return raise(l);
    }
    let flags = ffi::lua_tonumber(l, -1) as c_int;
    if flags & !((PROPAGATE_AOF | PROPAGATE_REPL) as c_int) != 0 {
        push_error(
            l,
            b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        );
        return raise(l);
    }
    (*host.run).repl_flags = flags as u8;
    0
}

/// redis.replicate_commands(): deprecated, always true.
unsafe extern "C-unwind" fn redis_replicate_commands(l: *mut lua_State) -> c_int {
    ffi::lua_pushboolean(l, 1);
    1
}

/// redis.breakpoint(): false, since no debugging session is ever active.
unsafe extern "C-unwind" fn redis_breakpoint(l: *mut lua_State) -> c_int {
    ffi::lua_pushboolean(l, 0);
    1
}

/// redis.debug(): logs to the debugging client; without one, nothing.
unsafe extern "C-unwind" fn redis_debug(_l: *mut lua_State) -> c_int {
    0
}

/// redis.acl_check_cmd(): whether the calling user may run the command
/// with these arguments (keys included).
unsafe extern "C-unwind" fn redis_acl_check_cmd(l: *mut lua_State) -> c_int {
    let host = host(l);
    if host.run.is_null() {
        push_error(
            l,
            b"redis.acl_check_cmd can only be called inside a script invocation",
        );
        return raise(l);
    }
    let argc = ffi::lua_gettop(l);
    if argc == 0 {
        push_error(
            l,
            b"Please specify at least one argument for this redis lib call",
        );
        return raise(l);
    }
    for i in 1..=argc {
        if ffi::lua_isstring(l, i) == 0 {
            push_error(
                l,
                b"Lua redis lib command arguments must be strings or integers",
            );
            return raise(l);
        }
    }
    let t = table();
    let name = to_bytes(l, 1).unwrap_or(b"");
    let mut found = t.lookup(name);
    if let Some(id) = found {
        if !t.get(id).spec.subcommands.is_empty() && argc >= 2 {
            found = t.subcommand(id, to_bytes(l, 2).unwrap_or(b""));
        }
    }
    let Some(id) = found else {
        push_error(l, b"Invalid command passed to redis.acl_check_cmd()");
        return raise(l);
    };
    let run = &*host.run;
    let allowed = match &run.caller {
        None => true,
        Some(caller) => {
            let argv: Vec<&[u8]> = (1..=argc).map(|i| to_bytes(l, i).unwrap_or(b"")).collect();
            caller.user.check(id, &argv).is_ok()
        }
    };
    ffi::lua_pushboolean(l, allowed as c_int);
    1
}

/// Redis's math.random: Lua's own, over redisLrand48.
unsafe extern "C-unwind" fn math_random(l: *mut lua_State) -> c_int {
    let host = host(l);
    if host.run.is_null() {
        return raise_str(
            l,
            "math.random can only be called inside a script invocation",
        );
    }
    let max = super::rand::LRAND48_MAX;
    let r = (super::rand::lrand48() % max) as f64 / max as f64;
    match ffi::lua_gettop(l) {
        0 => ffi::lua_pushnumber(l, r),
        1 => {
            let u = ffi::luaL_checkinteger(l, 1) as c_int;
            if u < 1 {
                return ffi::luaL_argerror(l, 1, c"interval is empty".as_ptr());
            }
            ffi::lua_pushnumber(l, (r * u as f64).floor() + 1.0);
        }
        2 => {
            let lo = ffi::luaL_checkinteger(l, 1) as c_int;
            let u = ffi::luaL_checkinteger(l, 2) as c_int;
            if lo > u {
                return ffi::luaL_argerror(l, 2, c"interval is empty".as_ptr());
            }
            ffi::lua_pushnumber(l, (r * (u as f64 - lo as f64 + 1.0)).floor() + lo as f64);
        }
        _ => return raise_str(l, "wrong number of arguments"),
    }
    1
}

unsafe extern "C-unwind" fn math_randomseed(l: *mut lua_State) -> c_int {
    let host = host(l);
    if host.run.is_null() {
        return raise_str(
            l,
            "math.randomseed can only be called inside a script invocation",
        );
    }
    super::rand::srand48(ffi::luaL_checkinteger(l, 1) as c_int);
    0
}

/// redis.register_function (FUNCTION LOAD only).
pub unsafe extern "C-unwind" fn register_function(l: *mut lua_State) -> c_int {
    let host = host(l);
    match super::functions::register_function(l, host) {
        Ok(()) => 0,
        Err(()) => raise(l),
    }
}

pub unsafe fn register_log(l: *mut lua_State, t: c_int) {
    let t = abs_index(l, t);
    set_cfunction(l, t, "log", redis_log, std::ptr::null_mut());
    for (name, v) in LOG_LEVELS {
        set_number(l, t, name, *v);
    }
}

pub unsafe fn register_version(l: *mut lua_State, t: c_int) {
    let t = abs_index(l, t);
    set_number(l, t, "REDIS_VERSION_NUM", redis_version_num() as f64);
    push_str(l, crate::REDIS_VERSION);
    rawset_str(l, t, "REDIS_VERSION");
}

/// REDIS_VERSION_NUM: 0x00MMmmpp.
pub(crate) fn redis_version_num() -> u32 {
    let mut parts = crate::REDIS_VERSION
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b, c) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (a << 16) | (b << 8) | c
}

/// The global `redis` table (luaRegisterRedisAPI, plus the debugging and
/// replicate_commands functions EVAL adds), and math.random.
pub unsafe fn register_redis_api(l: *mut lua_State, hp: *mut c_void, kind: VmKind) {
    ffi::lua_pushcclosure(l, redis_pcall, 0);
    rawset_str(l, ffi::LUA_GLOBALSINDEX, "pcall");

    ffi::lua_createtable(l, 0, 32);
    let t = ffi::lua_gettop(l);
    set_cfunction(l, t, "call", redis_call, hp);
    set_cfunction(l, t, "pcall", redis_pcall_command, hp);
    register_log(l, t);
    register_version(l, t);
    set_cfunction(l, t, "setresp", redis_setresp, hp);
    set_cfunction(l, t, "sha1hex", redis_sha1hex, std::ptr::null_mut());
    set_cfunction(l, t, "error_reply", redis_error_reply, std::ptr::null_mut());
    set_cfunction(
        l,
        t,
        "status_reply",
        redis_status_reply,
        std::ptr::null_mut(),
    );
    set_cfunction(l, t, "set_repl", redis_set_repl, hp);
    set_number(l, t, "REPL_NONE", 0.0);
    set_number(l, t, "REPL_AOF", PROPAGATE_AOF as f64);
    set_number(l, t, "REPL_SLAVE", PROPAGATE_REPL as f64);
    set_number(l, t, "REPL_REPLICA", PROPAGATE_REPL as f64);
    set_number(l, t, "REPL_ALL", (PROPAGATE_AOF | PROPAGATE_REPL) as f64);
    set_cfunction(l, t, "acl_check_cmd", redis_acl_check_cmd, hp);
    if kind == VmKind::Eval {
        set_cfunction(l, t, "breakpoint", redis_breakpoint, std::ptr::null_mut());
        set_cfunction(l, t, "debug", redis_debug, std::ptr::null_mut());
        set_cfunction(
            l,
            t,
            "replicate_commands",
            redis_replicate_commands,
            std::ptr::null_mut(),
        );
    }
    rawset_str(l, ffi::LUA_GLOBALSINDEX, "redis");

    rawget_str(l, ffi::LUA_GLOBALSINDEX, "math");
    set_cfunction(l, -1, "random", math_random, hp);
    set_cfunction(l, -1, "randomseed", math_randomseed, hp);
    pop(l, 1);
}

// ---------------------------------------------------------------------------
// Builtins around read-only tables, binary chunks and unpack
// ---------------------------------------------------------------------------

const READONLY: &str = "Attempt to modify a readonly table";

/// Installs a wrapper of `tbl[name]` (the globals when `tbl` is None)
/// with upvalues: the original function, the read-only registry table and
/// the visible-metatables table.
pub(super) unsafe fn wrap(l: *mut lua_State, tbl: Option<&str>, name: &str, f: lua_CFunction) {
    let t = match tbl {
        Some(lib) => {
            rawget_str(l, ffi::LUA_GLOBALSINDEX, lib);
            ffi::lua_gettop(l)
        }
        None => ffi::LUA_GLOBALSINDEX,
    };
    rawget_str(l, t, name);
    sandbox::push_ro_table(l);
    sandbox::push_visible_mt_table(l);
    ffi::lua_pushcclosure(l, f, 3);
    rawset_str(l, t, name);
    if tbl.is_some() {
        pop(l, 1);
    }
}

const UP_ORIG: c_int = ffi::lua_upvalueindex(1);
const UP_RO: c_int = ffi::lua_upvalueindex(2);
const UP_VISIBLE_MT: c_int = ffi::lua_upvalueindex(3);

pub unsafe fn install_builtin_wrappers(l: *mut lua_State) {
    wrap(l, None, "collectgarbage", wrapped_collectgarbage);
    wrap(l, None, "rawset", wrapped_rawset);
    wrap(l, None, "rawget", wrapped_rawget);
    wrap(l, None, "setmetatable", wrapped_setmetatable);
    wrap(l, None, "getmetatable", wrapped_getmetatable);
    wrap(l, None, "next", wrapped_next);
    // pairs and ipairs return the wrapped iterators.
    rawget_str(l, ffi::LUA_GLOBALSINDEX, "next");
    sandbox::push_ro_table(l);
    ffi::lua_pushcclosure(l, wrapped_pairs, 2);
    rawset_str(l, ffi::LUA_GLOBALSINDEX, "pairs");
    sandbox::push_ro_table(l);
    ffi::lua_pushcclosure(l, ipairs_aux, 1);
    sandbox::push_ro_table(l);
    ffi::lua_pushcclosure(l, wrapped_ipairs, 2);
    rawset_str(l, ffi::LUA_GLOBALSINDEX, "ipairs");
    wrap(l, None, "unpack", redis_unpack);
    wrap(l, None, "loadstring", text_loadstring);
    wrap(l, None, "load", text_load);
    wrap(l, Some("table"), "insert", refuse_readonly_first_arg);
    wrap(l, Some("table"), "remove", refuse_readonly_first_arg);
    wrap(l, Some("table"), "sort", refuse_readonly_first_arg);
    wrap(l, Some("table"), "setn", refuse_readonly_first_arg);
    super::patterns::install(l);
}

#[inline]
unsafe fn is_proxy(l: *mut lua_State, idx: c_int) -> bool {
    if sandbox::push_target(l, idx, UP_RO) {
        pop(l, 1);
        true
    } else {
        false
    }
}

/// Calls the original builtin (the first upvalue of a `wrap` wrapper)
/// with the current arguments.
pub(super) unsafe fn call_original(l: *mut lua_State) -> c_int {
    let n = ffi::lua_gettop(l);
    ffi::lua_pushvalue(l, UP_ORIG);
    ffi::lua_insert(l, 1);
    ffi::lua_call(l, n, ffi::LUA_MULTRET);
    ffi::lua_gettop(l)
}

unsafe extern "C-unwind" fn refuse_readonly_first_arg(l: *mut lua_State) -> c_int {
    if is_proxy(l, 1) {
        return raise_plain(l, READONLY);
    }
    call_original(l)
}

/// collectgarbage(opt): the builtin; a full collection ("collect", the
/// default) also has every other interpreter collected once the script
/// ends (`Host::collect_requested`), as Redis's single one would be. The
/// option is checked here first, so that a bad one is reported as the
/// builtin's error.
unsafe extern "C-unwind" fn wrapped_collectgarbage(l: *mut lua_State) -> c_int {
    let options = [
        c"stop".as_ptr(),
        c"restart".as_ptr(),
        c"collect".as_ptr(),
        c"count".as_ptr(),
        c"step".as_ptr(),
        c"setpause".as_ptr(),
        c"setstepmul".as_ptr(),
        std::ptr::null(),
    ];
    if ffi::luaL_checkoption(l, 1, c"collect".as_ptr(), options.as_ptr()) == 2 {
        let host = sandbox::host_of(l);
        if !host.is_null() {
            (*host).collect_requested = true;
        }
    }
    call_original(l)
}

unsafe extern "C-unwind" fn wrapped_rawset(l: *mut lua_State) -> c_int {
    if is_proxy(l, 1) {
        return raise_plain(l, READONLY);
    }
    call_original(l)
}

unsafe extern "C-unwind" fn wrapped_setmetatable(l: *mut lua_State) -> c_int {
    if is_proxy(l, 1) {
        return raise_plain(l, READONLY);
    }
    call_original(l)
}

unsafe extern "C-unwind" fn wrapped_rawget(l: *mut lua_State) -> c_int {
    if sandbox::push_target(l, 1, UP_RO) {
        ffi::lua_replace(l, 1);
    }
    call_original(l)
}

unsafe extern "C-unwind" fn wrapped_getmetatable(l: *mut lua_State) -> c_int {
    ffi::luaL_checkany(l, 1);
    if is_proxy(l, 1) {
        ffi::lua_pushvalue(l, 1);
        ffi::lua_rawget_(l, UP_VISIBLE_MT);
        return 1;
    }
    call_original(l)
}

unsafe extern "C-unwind" fn wrapped_next(l: *mut lua_State) -> c_int {
    if sandbox::push_target(l, 1, UP_RO) {
        ffi::lua_replace(l, 1);
    }
    call_original(l)
}

/// pairs(t): the wrapped next (upvalue 1), t, nil.
unsafe extern "C-unwind" fn wrapped_pairs(l: *mut lua_State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
    ffi::lua_pushvalue(l, 1);
    ffi::lua_pushnil(l);
    3
}

unsafe extern "C-unwind" fn ipairs_aux(l: *mut lua_State) -> c_int {
    let i = ffi::luaL_checkinteger(l, 2) + 1;
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    if sandbox::push_target(l, 1, ffi::lua_upvalueindex(1)) {
        ffi::lua_replace(l, 1);
    }
    ffi::lua_pushinteger(l, i);
    ffi::lua_rawgeti_(l, 1, i as c_int);
    if ffi::lua_isnil(l, -1) != 0 {
        0
    } else {
        2
    }
}

unsafe extern "C-unwind" fn wrapped_ipairs(l: *mut lua_State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
    ffi::lua_pushvalue(l, 1);
    ffi::lua_pushinteger(l, 0);
    3
}

/// Redis's patched luaB_unpack: the element count is computed without
/// overflow, so huge ranges fail with "too many results to unpack".
unsafe extern "C-unwind" fn redis_unpack(l: *mut lua_State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    if sandbox::push_target(l, 1, UP_RO) {
        ffi::lua_replace(l, 1);
    }
    let i = if ffi::lua_isnoneornil(l, 2) != 0 {
        1
    } else {
        ffi::luaL_checkinteger(l, 2) as c_int
    };
    let e = if ffi::lua_isnoneornil(l, 3) != 0 {
        ffi::lua_objlen(l, 1) as c_int
    } else {
        ffi::luaL_checkinteger(l, 3) as c_int
    };
    if i > e {
        return 0;
    }
    let n = (e as u32).wrapping_sub(i as u32);
    if n >= i32::MAX as u32 || ffi::lua_checkstack(l, (n + 1) as c_int) == 0 {
        return raise_str(l, "too many results to unpack");
    }
    let mut k = i;
    ffi::lua_rawgeti_(l, 1, k);
    while k < e {
        k += 1;
        ffi::lua_rawgeti_(l, 1, k);
    }
    (n + 1) as c_int
}

/// Pushes the chunk at `idx` made safe to parse as text: Redis's Lua has no
/// binary chunks, so one starting with the signature byte is read as
/// source (and fails to parse, as it does in Redis).
unsafe fn push_as_text(l: *mut lua_State, idx: c_int) {
    let idx = abs_index(l, idx);
    if to_bytes(l, idx).and_then(|s| s.first().copied()) == Some(0x1b) {
        // A leading space keeps the text on its first line.
        push_str(l, " ");
        ffi::lua_pushvalue(l, idx);
        ffi::lua_concat(l, 2);
    } else {
        ffi::lua_pushvalue(l, idx);
    }
}

/// load_aux: the function, or nil and the message.
unsafe fn load_result(l: *mut lua_State, status: c_int) -> c_int {
    if status == 0 {
        1
    } else {
        ffi::lua_pushnil(l);
        ffi::lua_insert(l, -2);
        2
    }
}

unsafe extern "C-unwind" fn text_loadstring(l: *mut lua_State) -> c_int {
    let mut len = 0usize;
    let s = ffi::luaL_checklstring(l, 1, &mut len);
    let name = if ffi::lua_isnoneornil(l, 2) != 0 {
        s
    } else {
        ffi::luaL_checklstring(l, 2, std::ptr::null_mut())
    };
    ffi::lua_settop(l, 2);
    push_as_text(l, 1);
    let mut tlen = 0usize;
    let text = ffi::lua_tolstring(l, 3, &mut tlen);
    let status = ffi::luaL_loadbuffer(l, text, tlen, name);
    load_result(l, status)
}

unsafe extern "C-unwind" fn text_load(l: *mut lua_State) -> c_int {
    let name = if ffi::lua_isnoneornil(l, 2) != 0 {
        c"=(load)".as_ptr()
    } else {
        ffi::luaL_checklstring(l, 2, std::ptr::null_mut())
    };
    ffi::luaL_checktype(l, 1, ffi::LUA_TFUNCTION);
    ffi::lua_settop(l, 2);
    // Read every piece first (on the Lua stack), then load the whole text.
    let mut pieces = 0;
    loop {
        ffi::luaL_checkstack(l, 2, c"too many nested functions".as_ptr());
        ffi::lua_pushvalue(l, 1);
        ffi::lua_call(l, 0, 1);
        if ffi::lua_isnil(l, -1) != 0 {
            pop(l, 1);
            break;
        }
        if ffi::lua_isstring(l, -1) == 0 {
            return raise_str(l, "reader function must return a string");
        }
        if ffi::lua_objlen(l, -1) == 0 {
            pop(l, 1);
            break;
        }
        pieces += 1;
    }
    if pieces == 0 {
        push_str(l, "");
    } else if pieces > 1 {
        ffi::lua_concat(l, pieces);
    }
    push_as_text(l, -1);
    let mut tlen = 0usize;
    let text = ffi::lua_tolstring(l, -1, &mut tlen);
    let status = ffi::luaL_loadbuffer(l, text, tlen, name);
    load_result(l, status)
}

/// Lua's `host` helper for the engine: the error table for a message.
pub unsafe fn push_error_str(l: *mut lua_State, text: &str) {
    push_error(l, text.as_bytes())
}
