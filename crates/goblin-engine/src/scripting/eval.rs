//! EVAL scripts (Redis's eval.c): the script cache, shebang flags, and the
//! invocation of a compiled script or function (luaCallFunction), shared
//! with FCALL.

use super::convert;
use super::host::{Host, RunCtx, VmKind};
use super::lua::*;
use super::{sandbox, RunInfo};
use crate::client::ClientRegistry;
use crate::command::Ctx;
use crate::error::printf_s;
use crate::Error;
use mlua::ffi::{self, lua_State};
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Script flags (Redis's SCRIPT_FLAG_*), from an EVAL shebang or
/// register_function's `flags`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptFlags(pub u32);

impl ScriptFlags {
    pub const NO_WRITES: u32 = 1 << 0;
    pub const ALLOW_OOM: u32 = 1 << 1;
    pub const ALLOW_STALE: u32 = 1 << 2;
    pub const NO_CLUSTER: u32 = 1 << 3;
    /// A script without shebang: Redis's backwards-compatible mode.
    pub const EVAL_COMPAT_MODE: u32 = 1 << 4;
    pub const ALLOW_CROSS_SLOT: u32 = 1 << 5;

    /// Names, in Redis's order (scripts_flags_def).
    pub const NAMES: &'static [(u32, &'static str)] = &[
        (Self::NO_WRITES, "no-writes"),
        (Self::ALLOW_OOM, "allow-oom"),
        (Self::ALLOW_STALE, "allow-stale"),
        (Self::NO_CLUSTER, "no-cluster"),
        (Self::ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
    ];

    pub fn has(self, f: u32) -> bool {
        self.0 & f != 0
    }

    pub fn compat(self) -> bool {
        self.has(Self::EVAL_COMPAT_MODE)
    }

    /// Redis's scriptFlagsToCmdFlags: the command flags a script with
    /// declared flags runs under (for the OOM and write checks made before
    /// it runs).
    pub fn command_flags(self, cmd_flags: u32) -> u32 {
        use crate::command::spec::flag;
        if self.compat() {
            return cmd_flags;
        }
        let mut f = cmd_flags & !(flag::STALE | flag::DENYOOM | flag::WRITE);
        if !self.has(Self::ALLOW_OOM | Self::NO_WRITES) {
            f |= flag::DENYOOM;
        }
        if !self.has(Self::NO_WRITES) {
            f |= flag::WRITE;
        }
        if self.has(Self::ALLOW_STALE) {
            f |= flag::STALE;
        }
        f & !flag::MAY_REPLICATE
    }
}

/// The language a script or library is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Lua,
    /// `#!js`: JavaScript (see `super::js`).
    Js,
}

/// The language a body's shebang names (`#!js`, else Lua: `#!lua` and
/// bodies without a shebang, as Redis 7 reads them).
pub fn lang_of(body: &[u8]) -> Lang {
    match body.strip_prefix(b"#!js") {
        Some(rest) if rest.first().is_none_or(|c| c.is_ascii_whitespace()) => Lang::Js,
        _ => Lang::Lua,
    }
}

/// Redis's evalExtractShebangFlags: the flags of a script and the length
/// of its shebang line (0 without one). `#!js` is read as `#!lua` is.
pub fn parse_shebang(body: &[u8]) -> Result<(ScriptFlags, usize), Error> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags(ScriptFlags::EVAL_COMPAT_MODE), 0));
    }
    let Some(end) = memchr::memchr(b'\n', body) else {
        return Err(Error::err("Invalid script shebang"));
    };
    let parts = match crate::protocol::split_args(&body[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err(Error::err("Invalid engine in script shebang")),
    };
    let lang_name = match &parts[0][..] {
        b"#!lua" => "lua",
        b"#!js" => "js",
        _ => "",
    };
    if lang_name.is_empty() {
        return Err(Error::concat(&[
            b"ERR Unexpected engine in script shebang: ",
            printf_s(&parts[0], usize::MAX),
        ]));
    }
    let mut flags = 0;
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(Error::concat(&[
                b"ERR Unknown ",
                lang_name.as_bytes(),
                b" shebang option: ",
                printf_s(part, usize::MAX),
            ]));
        };
        if list.is_empty() {
            continue;
        }
        for name in list.split(|&c| c == b',') {
            match ScriptFlags::NAMES
                .iter()
                .find(|(_, n)| n.as_bytes() == name)
            {
                Some((f, _)) => flags |= f,
                None => {
                    return Err(Error::concat(&[
                        b"ERR Unexpected flag in script shebang: ",
                        printf_s(name, usize::MAX),
                    ]))
                }
            }
        }
    }
    Ok((ScriptFlags(flags), end))
}

/// A cached script (the cache is shared by every EVAL interpreter, see
/// [`super::Scripting`]).
pub struct Script {
    pub body: Vec<u8>,
    pub flags: ScriptFlags,
    /// Length of the shebang line: the code starts there.
    pub shebang_len: usize,
    /// Touches only its declared keys (see [`super::keyed`]).
    pub keyed: bool,
    pub lang: Lang,
}

impl Script {
    /// Reads a script's shebang and looks at its code; the code is not
    /// compiled here.
    pub fn new(body: &[u8]) -> Result<Script, Error> {
        let (flags, shebang_len) = parse_shebang(body)?;
        let lang = lang_of(body);
        Ok(Script {
            body: body.to_vec(),
            flags,
            shebang_len,
            // The look at the source reads Lua only.
            keyed: lang == Lang::Lua && super::keyed::is_keyed(&body[shebang_len..]),
            lang,
        })
    }

    pub fn memory(&self) -> u64 {
        (self.body.len() + 40 + 64) as u64
    }
}

/// An EVAL interpreter and the scripts compiled in it.
pub struct EvalVm {
    pub host: Box<Host>,
    /// SHA → registry reference of the compiled function, and the
    /// script's flags.
    compiled: HashMap<[u8; 40], (Target, ScriptFlags), foldhash::fast::RandomState>,
    /// The script cache's generation this interpreter was made in (a
    /// pooled interpreter from before a SCRIPT FLUSH is dropped).
    pub generation: u64,
}

impl EvalVm {
    pub fn new(clients: &ClientRegistry, generation: u64) -> EvalVm {
        let mut host = Host::new(VmKind::Eval, clients);
        sandbox::init(&mut host);
        host.publish_memory();
        EvalVm {
            host,
            compiled: HashMap::default(),
            generation,
        }
    }

    /// A script this interpreter compiled: its function and flags.
    #[inline]
    pub fn compiled(&self, sha: &[u8; 40]) -> Option<(Target, ScriptFlags)> {
        self.compiled.get(sha).copied()
    }

    /// The compiled function of a script (luaCreateFunction), compiling it
    /// the first time this interpreter runs it.
    pub fn function(&mut self, sha: &[u8; 40], script: &Script) -> Result<Target, Error> {
        if let Some(&(r, _)) = self.compiled.get(sha) {
            return Ok(r);
        }
        if script.lang == Lang::Js {
            // Keep the shebang's newline so line numbers stay right.
            let code = &script.body[script.shebang_len..];
            let f = self.host.js_engine()?.compile_script(code)?;
            self.host.publish_memory();
            self.compiled.insert(*sha, (Target::Js(f), script.flags));
            return Ok(Target::Js(f));
        }
        let l = self.host.state.ptr();
        // SAFETY: the state is ours (we hold the scripting mutex, or took
        // this interpreter out of the pool).
        let func_ref = unsafe {
            // Keep the shebang's newline so line numbers stay right.
            let code = &script.body[script.shebang_len..];
            if let Err(msg) = load_text(l, code, c"@user_script") {
                return Err(Error::concat(&[
                    b"ERR Error compiling script (new function): ",
                    printf_s(&msg, usize::MAX),
                ]));
            }
            ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX)
        };
        self.compiled
            .insert(*sha, (Target::Lua(func_ref), script.flags));
        Ok(Target::Lua(func_ref))
    }
}

/// Loads source text (never a binary chunk, as in Redis) and pushes the
/// function.
pub unsafe fn load_text(
    l: *mut lua_State,
    code: &[u8],
    name: &std::ffi::CStr,
) -> Result<(), Vec<u8>> {
    if code.first() == Some(&0x1b) {
        let mut text = Vec::with_capacity(code.len() + 1);
        text.push(b' ');
        text.extend_from_slice(code);
        load(l, &text, name)
    } else {
        load(l, code, name)
    }
}

/// Lower-cases a 40-character SHA given by a client.
pub fn normalize_sha(sha: &[u8]) -> Option<[u8; 40]> {
    let mut out = [0u8; 40];
    if sha.len() != 40 {
        return None;
    }
    for (d, s) in out.iter_mut().zip(sha) {
        *d = s.to_ascii_lowercase();
    }
    Some(out)
}

/// Redis's numkeys check for EVAL (FCALL words its first error
/// differently, see `functions`).
pub fn parse_numkeys(args: &[&[u8]], bad: Error) -> Result<usize, Error> {
    let n = crate::util::number::parse_i64(args[2]).ok_or(bad)?;
    if n > args.len() as i64 - 3 {
        return Err(Error::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    if n < 0 {
        return Err(Error::err("Number of keys can't be negative"));
    }
    Ok(n as usize)
}

/// One invocation of a compiled script or function.
pub struct Invocation<'x> {
    /// The compiled script or function, in its language.
    pub target: Target,
    pub keys: &'x [&'x [u8]],
    pub args: &'x [&'x [u8]],
    pub flags: ScriptFlags,
    /// Invoked by EVAL_RO / EVALSHA_RO / FCALL_RO.
    pub ro: bool,
    /// The SHA (EVAL) or the function name (FCALL), for error messages.
    pub name: &'x str,
    /// A keyed script holding only its keys' shards (see `super::keyed`):
    /// it cannot run long, so it is not tracked as the running script
    /// (never BUSY, nothing for SCRIPT KILL) and has no instruction hook.
    pub keyed: bool,
}

/// A compiled script or function, in the interpreter of its language.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// A registry reference in the Lua interpreter.
    Lua(c_int),
    /// A function of the host's JavaScript runtime (see `super::js`).
    Js(super::js::JsRef),
}

/// Redis's scriptPrepareForRun checks that depend on the script's flags.
fn check_flags(ctx: &Ctx, inv: &Invocation) -> Result<(), Error> {
    if inv.flags.compat() {
        return Ok(());
    }
    if !inv.flags.has(ScriptFlags::NO_WRITES) {
        if !ctx.client.from_master && !ctx.client.replaying {
            if let Some(denied) = ctx.engine.persist().write_denial() {
                return Err(Error::raw(denied.script_message()));
            }
        }
        if inv.ro {
            return Err(Error::err(
                "Can not execute a script with write flag using *_ro command.",
            ));
        }
        if !ctx.engine.good_replicas_ok() {
            return Err(Error::constant(
                "NOREPLICAS Not enough good replicas to write.",
            ));
        }
    }
    if ctx.client.pre_command_oom
        && ctx.engine.config().maxmemory.load(Ordering::Relaxed) != 0
        && !inv
            .flags
            .has(ScriptFlags::ALLOW_OOM | ScriptFlags::NO_WRITES)
    {
        return Err(Error::constant("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"));
    }
    Ok(())
}

/// Runs a script or function and writes its reply (luaCallFunction).
///
/// # Safety
/// `hp` points to a live `Host` whose scripting mutex the caller holds, and
/// no reference to that host is alive during the call: the Lua C functions
/// reach the host through the pointer stored in the interpreter and change
/// it while the script runs, so this function reads it back through the raw
/// pointer after `lua_pcall` rather than through a reference the compiler
/// could assume unchanged.
pub unsafe fn run(
    ctx: &mut Ctx,
    hp: *mut Host,
    inv: Invocation,
    argv: &[&[u8]],
) -> Result<(), Error> {
    // SAFETY: as this function's.
    with_script_stack(|| unsafe { run_here(ctx, hp, inv, argv) })
}

/// `run`, on the stack it runs on.
///
/// # Safety
/// As `run`'s.
unsafe fn run_here(
    ctx: &mut Ctx,
    hp: *mut Host,
    inv: Invocation,
    argv: &[&[u8]],
) -> Result<(), Error> {
    check_flags(ctx, &inv)?;
    let engine = ctx.engine;
    let scripting = &engine.scripting();
    let is_eval = (*hp).kind == VmKind::Eval;
    let tracked = !inv.keyed;
    let compat = inv.flags.compat();
    let mut run = RunCtx {
        engine,
        // SAFETY (of the cast): the locks outlive the run, which ends
        // before this function returns.
        locks: (ctx.locks as *mut crate::keyspace::ShardLocks<'_>).cast(),
        stats: ctx.stats,
        now_ms: ctx.now_ms,
        in_multi: ctx.in_multi,
        read_only: inv.ro || (!compat && inv.flags.has(ScriptFlags::NO_WRITES)),
        allow_oom: !compat && inv.flags.has(ScriptFlags::ALLOW_OOM),
        oom_at_start: ctx.client.pre_command_oom,
        wrote: false,
        repl_flags: 3,
        start: Instant::now(),
        released: false,
        keyed: inv.keyed,
        obeyed: ctx.client.from_master || ctx.client.replaying,
        caller: ctx.client.user.as_mut().and_then(|u| {
            let user = u.rules().clone();
            (!user.unrestricted).then(|| super::host::ScriptCaller {
                user,
                name: u.name().to_vec(),
                info: ctx.client.info.clone(),
            })
        }),
    };
    (*hp).client.set_db(ctx.client.db);
    (*hp).client.replaying = ctx.client.replaying;
    // Client-side caching: the script's changes are its caller's (for
    // NOLOOP, and messages to the caller follow its reply), and a
    // read-only command of the script makes a tracking caller remember
    // the keys the script declared (Redis's call() with script_caller).
    let tracking = engine.tracking().active();
    if tracking {
        let word = ctx.client.info.tracking.load(Ordering::Relaxed);
        let caching = ctx.client.tracking.as_ref().is_some_and(|t| t.caching);
        let state = (*hp).client.tracking.get_or_insert_with(Default::default);
        state.script_caller = ctx.client.info.id;
        state.script_keys = crate::tracking::may_cache(word, caching)
            .then(|| inv.keys.iter().map(|k| k.to_vec()).collect());
        if state.script_keys.is_some() {
            if let Some(t) = ctx.client.tracking.as_mut() {
                t.remembered = true;
            }
        }
    }
    (*hp).client.resp = 2;
    (*hp).out.set_resp(2);
    if tracked {
        let info = (!is_eval).then(|| RunInfo {
            name: inv.name.to_string(),
            argv: argv.iter().map(|a| a.to_vec()).collect(),
            start: run.start,
        });
        scripting.begin_run(is_eval, info);
    }
    (*hp).run = &mut run;
    let threshold = if tracked {
        engine.config().busy_reply_threshold.load(Ordering::Relaxed)
    } else {
        0
    };
    match inv.target {
        Target::Lua(func_ref) => run_lua(ctx, hp, &inv, func_ref, threshold),
        Target::Js(f) => super::js::run(ctx, hp, &inv, f),
    }
    (*hp).run = std::ptr::null_mut();
    if tracked {
        scripting.end_run(is_eval);
    }
    // A script is logged as its effects: the records of the commands it
    // ran join the caller's, and the call itself is not logged.
    ctx.client
        .pending_propagation
        .append(&mut (*hp).client.pending_propagation);
    ctx.propagate_nothing();
    if let Some(state) = (*hp).client.tracking.as_mut() {
        state.script_caller = 0;
        state.script_keys = None;
        if !state.pending.bcast.is_empty() || !state.pending.own.is_empty() {
            let mine = ctx.client.tracking.get_or_insert_with(Default::default);
            mine.pending.id = ctx.client.info.id;
            mine.pending.bcast.append(&mut state.pending.bcast);
            mine.pending.own.append(&mut state.pending.own);
        }
    }
    // Keys its writes made ready serve their blocked clients once the
    // script's caller is done, as after any command.
    ctx.client.ready_keys.append(&mut (*hp).client.ready_keys);
    (*hp).publish_memory();
    if tracked {
        let mem = (*hp).memory();
        let stat = if is_eval {
            &scripting.stats.eval_vm_memory
        } else {
            &scripting.stats.functions_vm_memory
        };
        stat.store(mem, Ordering::Relaxed);
    }
    Ok(())
}

/// The Lua half of `run_here`: calls the function with KEYS and ARGV and
/// writes its reply or error.
///
/// # Safety
/// As `run`'s, with the run context installed in the host.
unsafe fn run_lua(ctx: &mut Ctx, hp: *mut Host, inv: &Invocation, func_ref: c_int, threshold: i64) {
    let scripting = &ctx.engine.scripting();
    let is_eval = (*hp).kind == VmKind::Eval;
    let l = (*hp).state.ptr();
    // SAFETY: we hold the scripting mutex, the run context outlives the
    // call, and the stack is balanced.
    unsafe {
        ffi::lua_checkstack(l, 8);
        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, (*hp).errh_ref);
        let errh = ffi::lua_gettop(l);
        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, func_ref);
        if threshold > 0 {
            ffi::lua_sethook(l, Some(run_hook), ffi::LUA_MASKCOUNT, 100_000);
        }
        push_array(l, inv.keys);
        if is_eval {
            set_real_global(l, (*hp).globals_ref, "KEYS");
        }
        push_array(l, inv.args);
        if is_eval {
            set_real_global(l, (*hp).globals_ref, "ARGV");
        }
        let nargs = if is_eval { 0 } else { 2 };
        let before = (*hp).state.memory();
        let status = ffi::lua_pcall(l, nargs, 1, errh);

        (*hp).gc_count += 1;
        let epoch = scripting.gc_epoch();
        if (*hp).gc_epoch != epoch {
            // collectgarbage() ran in another interpreter meanwhile.
            (*hp).collect(0);
            (*hp).gc_epoch = epoch;
        } else if (*hp).state.memory() > 2 * before + GC_AFTER_GROWTH {
            // The script left far more than the interpreter held before
            // it, most likely garbage (a table built and dropped): collect
            // it now, since this interpreter may sit idle in the pool and
            // Lua's next cycle only comes with its next allocations.
            (*hp).collect(before + GC_AFTER_GROWTH / 8);
        } else if (*hp).gc_count == 50 {
            ffi::lua_gc(l, ffi::LUA_GCSTEP, 50);
            (*hp).gc_count = 0;
        }
        if status != 0 {
            if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
                // addReplyErrorFormat's "Error running script %s, %.100s\n",
                // the newlines at the end trimmed.
                let msg = to_bytes(l, -1).unwrap_or(b"execution failure");
                let mut text = format!("ERR Error running script {}, ", inv.name).into_bytes();
                text.extend_from_slice(printf_s(msg, 100));
                while let Some(b'\r' | b'\n') = text.last() {
                    text.pop();
                }
                ctx.out.error(&text);
            } else {
                // "-%s script: %s, on %s:%s." of C strings: each part up
                // to a NUL.
                let info = convert::error_info(l);
                let msg = info.msg.unwrap_or_else(|| b"ERR unknown error".to_vec());
                let mut text = printf_s(&msg, usize::MAX).to_vec();
                if let (Some(source), Some(line)) = (&info.source, &info.line) {
                    text.extend_from_slice(b" script: ");
                    text.extend_from_slice(inv.name.as_bytes());
                    text.extend_from_slice(b", on ");
                    text.extend_from_slice(printf_s(source, usize::MAX));
                    text.push(b':');
                    text.extend_from_slice(printf_s(line, usize::MAX));
                    text.push(b'.');
                }
                convert::write_error(ctx.out, &text, info.counted);
            }
            pop(l, 1);
        } else {
            convert::write_reply(l, ctx.out, (*hp).client.resp);
        }
        ffi::lua_settop(l, errh - 1);
        if threshold > 0 {
            ffi::lua_sethook(l, None, 0, 0);
        }
    }
}

/// How much a script may grow its interpreter's memory (beyond doubling
/// it) before a full collection follows the script.
const GC_AFTER_GROWTH: u64 = 8 << 20;

unsafe fn push_array(l: *mut lua_State, items: &[&[u8]]) {
    ffi::lua_createtable(l, items.len().min(1 << 20) as c_int, 0);
    for (i, s) in items.iter().enumerate() {
        push_bytes(l, s);
        ffi::lua_rawseti_(l, -2, i as c_int + 1);
    }
}

/// Sets KEYS / ARGV (the value on top) in the real globals table, which
/// scripts cannot write.
unsafe fn set_real_global(l: *mut lua_State, globals_ref: c_int, name: &str) {
    ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, globals_ref);
    ffi::lua_insert(l, -2);
    rawset_str(l, -2, name);
    pop(l, 1);
}

/// How long a script runs before its thread stops serving other clients'
/// tasks (see `util::blocking`).
pub(crate) const RELEASE_AFTER: std::time::Duration = std::time::Duration::from_millis(5);

/// The instruction hook of a running script (luaMaskCountHook with
/// scriptInterrupt): marks the script timed out once it has run past
/// busy-reply-threshold, and stops it when SCRIPT KILL / FUNCTION KILL
/// asked for it.
unsafe extern "C-unwind" fn run_hook(l: *mut lua_State, ar: *mut ffi::lua_Debug) {
    let host = sandbox::host_of(l);
    if host.is_null() || (*host).run.is_null() {
        return;
    }
    if tick(&mut *(*host).run, (*host).kind) {
        if super::lua::stop_at_next_instruction(l, ar, run_hook) {
            return;
        }
        // Fire on every line from now on, so that pcall cannot swallow
        // the error and carry on.
        ffi::lua_sethook(l, Some(run_hook), ffi::LUA_MASKLINE, 0);
        super::api::push_error(l, b"Script killed by user with SCRIPT KILL...");
        raise(l);
    }
}

/// What a running script's interpreter does every so often, whatever its
/// language (Redis's scriptInterrupt): hands its runtime worker on once
/// it has run a while, marks itself timed out past busy-reply-threshold
/// (others get BUSY from then on), and says whether SCRIPT KILL or
/// FUNCTION KILL asked it to stop.
pub(crate) fn tick(run: &mut RunCtx, kind: VmKind) -> bool {
    // SAFETY: the engine outlives every script it runs.
    let engine = unsafe { &*run.engine };
    let state = &engine.scripting().run;
    if !run.released && run.start.elapsed() >= RELEASE_AFTER {
        run.released = true;
        crate::util::blocking::release_worker();
    }
    if !state.timed_out.load(Ordering::Relaxed) {
        let elapsed = run.start.elapsed().as_millis() as i64;
        let threshold = engine.config().busy_reply_threshold.load(Ordering::Relaxed);
        if elapsed < threshold {
            return false;
        }
        let is_eval = kind == VmKind::Eval;
        super::log(
            3,
            &format!(
                "Slow script detected: still in execution after {elapsed} milliseconds. You can try killing the script using the {} command.",
                if is_eval { "SCRIPT KILL" } else { "FUNCTION KILL" }
            ),
        );
        state.timed_out.store(true, Ordering::Release);
    }
    if state.killed.load(Ordering::Acquire) {
        super::log(3, "Lua script killed by user with SCRIPT KILL.");
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shebang_names_the_language() {
        assert_eq!(lang_of(b"#!js\nreturn 1"), Lang::Js);
        assert_eq!(lang_of(b"#!js flags=no-writes\nreturn 1"), Lang::Js);
        assert_eq!(lang_of(b"#!js"), Lang::Js);
        assert_eq!(lang_of(b"#!jsx\nreturn 1"), Lang::Lua);
        assert_eq!(lang_of(b"#!lua\nreturn 1"), Lang::Lua);
        assert_eq!(lang_of(b"return 1"), Lang::Lua);
        let (flags, len) = parse_shebang(b"#!js flags=no-writes\nreturn 1").unwrap();
        assert!(flags.has(ScriptFlags::NO_WRITES) && !flags.compat());
        assert_eq!(len, "#!js flags=no-writes".len());
        assert_eq!(
            parse_shebang(b"#!js other\n").unwrap_err().text(),
            "ERR Unknown js shebang option: other"
        );
        assert!(Script::new(b"#!js\nreturn redis.call('get', KEYS[0])")
            .is_ok_and(|s| !s.keyed && s.lang == Lang::Js));
    }
}
