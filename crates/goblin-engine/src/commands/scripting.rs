//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO,
//! SCRIPT and FUNCTION (Redis's eval.c and functions.c). The Lua host is
//! in `crate::scripting`; this file parses arguments and replies.
//!
//! The commands that run scripts hold every shard (`flag::ALL_SHARDS`):
//! a script may touch any key, and nothing may interleave with it. Keyed
//! EVAL scripts (`crate::scripting::keyed`) hold only their KEYS' shards.

use crate::client::ClientState;
use crate::command::args::Args;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::scripting::eval::{self, normalize_sha, parse_numkeys, Invocation};
use crate::scripting::functions::RestorePolicy;
use crate::scripting::host::{Host, VmKind};
use crate::scripting::ScriptFlags;
use crate::scripting::Vms;
use crate::util::glob::glob_match;
use crate::Error;

const NOSCRIPT: Error = Error::constant("NOSCRIPT No matching script. Please use EVAL.");

fn not_from_script() -> Error {
    Error::err("This Redis command is not allowed from script")
}

use super::help::subcommand_syntax_error;

// ---------------------------------------------------------------------------
// EVAL and friends

/// EVAL / EVALSHA / EVAL_RO / EVALSHA_RO (evalGenericCommand).
///
/// A call holding every shard runs on the main EVAL interpreter, under
/// the scripting mutex; one holding fewer runs a keyed script (the
/// dispatcher took only its KEYS' shards, see `Scripting::runs_keyed`) on
/// an interpreter of the pool.
fn eval_generic(ctx: &mut Ctx, args: &[&[u8]], evalsha: bool, ro: bool) -> CmdResult {
    if ctx.in_script {
        return Err(not_from_script());
    }
    if evalsha && args[1].len() != 40 {
        return Err(NOSCRIPT);
    }
    let numkeys = parse_numkeys(args, Error::NOT_INTEGER)?;
    let engine = ctx.engine;
    let scripting = &engine.scripting();
    if !ctx.locks.holds_all() {
        let mut vm = scripting.take_vm(engine.clients());
        let r = eval_on(ctx, &mut vm, args, numkeys, evalsha, ro, true);
        if std::mem::take(&mut vm.host.collect_requested) {
            vm.host.gc_epoch = scripting.collect_all(None, &*vm.host);
        }
        scripting.give_back(vm);
        return r;
    }
    let mut vms = scripting.lock()?;
    let r = eval_on(ctx, &mut vms.eval, args, numkeys, evalsha, ro, false);
    collect_if_asked(scripting, &mut vms, VmKind::Eval);
    r
}

/// After a script that called collectgarbage("collect"): every other
/// interpreter is collected too (`Scripting::collect_all`).
fn collect_if_asked(scripting: &crate::scripting::Scripting, vms: &mut Vms, kind: VmKind) {
    let host = match kind {
        VmKind::Eval => &mut vms.eval.host,
        VmKind::Functions => &mut vms.functions.host,
    };
    if std::mem::take(&mut host.collect_requested) {
        let except: *const Host = &**host;
        scripting.collect_all(Some(vms), except);
    }
}

/// Runs an EVAL-family call on `vm`.
fn eval_on(
    ctx: &mut Ctx,
    vm: &mut eval::EvalVm,
    args: &[&[u8]],
    numkeys: usize,
    evalsha: bool,
    ro: bool,
    keyed: bool,
) -> CmdResult {
    let scripting = &ctx.engine.scripting();
    let sha = if evalsha {
        normalize_sha(args[1]).ok_or(NOSCRIPT)?
    } else {
        crate::scripting::sha1_hex(args[1])
    };
    // Compiled in this interpreter already, or from the cache (EVALSHA)
    // or the body (EVAL).
    let (target, flags) = match vm.compiled(&sha) {
        Some(known) => known,
        None if evalsha => {
            let script = scripting.script(&sha).ok_or(NOSCRIPT)?;
            (vm.function(&sha, &script)?, script.flags)
        }
        None => {
            let (sha, script, _) = scripting.create(vm, args[1])?;
            (vm.function(&sha, &script)?, script.flags)
        }
    };
    let inv = Invocation {
        target,
        keys: &args[3..3 + numkeys],
        args: &args[3 + numkeys..],
        flags,
        ro,
        name: std::str::from_utf8(&sha).unwrap_or(""),
        keyed,
    };
    // SAFETY: `vm` is borrowed mutably for the call (under the scripting
    // mutex, or taken out of the pool); no other reference to its host
    // exists during the call.
    unsafe { eval::run(ctx, &mut *vm.host as *mut _, inv, args) }
}

fn eval_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, false, false)
}

fn evalsha_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, true, false)
}

fn eval_ro_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, false, true)
}

fn evalsha_ro_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, true, true)
}

/// FCALL / FCALL_RO (fcallCommandGeneric).
fn fcall_generic(ctx: &mut Ctx, args: &[&[u8]], ro: bool) -> CmdResult {
    if ctx.in_script {
        return Err(not_from_script());
    }
    let engine = ctx.engine;
    let mut vms = engine.scripting().lock()?;
    let vms = &mut *vms;
    let f = vms
        .functions
        .find(args[1])
        .ok_or_else(|| Error::err("Function not found"))?;
    let numkeys = parse_numkeys(args, Error::err("Bad number of keys provided"))?;
    let (target, flags, name) = (f.target, f.flags, f.name.clone());
    let inv = Invocation {
        target,
        keys: &args[3..3 + numkeys],
        args: &args[3 + numkeys..],
        flags,
        ro,
        name: &name,
        keyed: false,
    };
    // SAFETY: as above.
    let r = unsafe { eval::run(ctx, &mut *vms.functions.host as *mut _, inv, args) };
    collect_if_asked(engine.scripting(), vms, VmKind::Functions);
    r
}

fn fcall_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    fcall_generic(ctx, args, false)
}

fn fcall_ro_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    fcall_generic(ctx, args, true)
}

/// The flags an EVAL runs under, from the flags its script declares
/// (Redis's evalGetCommandFlags): admission's OOM, write and pause checks
/// read them (`CommandSpec::flags_fn`).
fn eval_flags(_: &crate::Engine, _: &ClientState, args: &[&[u8]], cmd_flags: u32) -> u32 {
    match args.get(1).map(|body| eval::parse_shebang(body)) {
        Some(Ok((f, _))) => f.command_flags(cmd_flags),
        _ => cmd_flags,
    }
}

/// `eval_flags` for EVALSHA: from the cached script, when there is one.
fn evalsha_flags(engine: &crate::Engine, _: &ClientState, args: &[&[u8]], cmd_flags: u32) -> u32 {
    args.get(1)
        .and_then(|target| normalize_sha(target))
        .and_then(|sha| engine.scripting().script(&sha))
        .map_or(cmd_flags, |s| s.flags.command_flags(cmd_flags))
}

/// The flags an FCALL runs under, from its function's (Redis's
/// fcallGetCommandFlags).
fn fcall_flags(engine: &crate::Engine, _: &ClientState, args: &[&[u8]], cmd_flags: u32) -> u32 {
    let Some(target) = args.get(1) else {
        return cmd_flags;
    };
    match engine.scripting().lock() {
        Ok(vms) => vms
            .functions
            .find(target)
            .map_or(cmd_flags, |f| f.flags.command_flags(cmd_flags)),
        Err(_) => cmd_flags,
    }
}

/// Whether an EVAL holds only the shards of its KEYS (its script is
/// keyed, see `scripting::keyed`) instead of every shard
/// (`CommandSpec::keyed_fn`).
fn eval_keyed(engine: &crate::Engine, args: &[&[u8]]) -> bool {
    args.get(1)
        .is_some_and(|body| engine.scripting().runs_keyed(body, false))
}

/// `eval_keyed` for EVALSHA.
fn evalsha_keyed(engine: &crate::Engine, args: &[&[u8]]) -> bool {
    args.get(1)
        .is_some_and(|sha| engine.scripting().runs_keyed(sha, true))
}

// ---------------------------------------------------------------------------
// SCRIPT

fn script_load(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let engine = ctx.engine;
    let mut vms = engine.scripting().lock()?;
    let (sha, _, _) = engine.scripting().create(&mut vms.eval, args[2])?;
    engine.scripting().refresh_stats(&mut vms);
    ctx.out.bulk(&sha);
    Ok(())
}

fn script_exists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let scripting = &ctx.engine.scripting();
    ctx.out.array(args.len() - 2);
    for a in &args[2..] {
        // Redis looks the argument up as given (its dict ignores case).
        let found = normalize_sha(a).is_some_and(|s| scripting.script_exists(&s));
        ctx.out.int(found as i64);
    }
    Ok(())
}

fn script_flush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // ASYNC or SYNC: either flushes at once here.
    let mut a = Args::new(&args[2..]);
    let _ = a.flag("ASYNC") || a.flag("SYNC");
    if !a.is_empty() {
        return Err(Error::err("SCRIPT FLUSH only support SYNC|ASYNC option"));
    }
    let engine = ctx.engine;
    let mut vms = engine.scripting().lock()?;
    engine.scripting().flush_scripts(&mut vms, engine.clients());
    ctx.out.ok();
    Ok(())
}

fn script_kill(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.engine.scripting().kill(true)?;
    ctx.out.ok();
    Ok(())
}

fn script_debug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match args[2].to_ascii_lowercase().as_slice() {
        b"no" => {
            ctx.out.ok();
            Ok(())
        }
        // The Lua debugger (LDB) is not available.
        b"yes" | b"sync" => Err(Error::err("SCRIPT DEBUG is not supported by this server")),
        _ => Err(Error::err("Use SCRIPT DEBUG YES/SYNC/NO")),
    }
}

fn script_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "SCRIPT",
        &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// FUNCTION

/// FUNCTION LOAD's arguments: the code is the last one, and every one
/// before it is an option (Redis's functionLoadCommand).
struct FunctionLoad<'a> {
    replace: bool,
    code: &'a [u8],
}

fn parse_function_load<'a>(args: &[&'a [u8]]) -> Result<FunctionLoad<'a>, Error> {
    let Some((&code, options)) = args[2..].split_last() else {
        return Err(Error::err("Function code is missing"));
    };
    let mut replace = false;
    let mut a = Args::new(options);
    while let Some(opt) = a.peek() {
        if a.flag("REPLACE") {
            replace = true;
        } else {
            return Err(Error::concat_trimmed(&[
                b"ERR Unknown option given: ",
                crate::error::printf_s(opt, usize::MAX),
            ]));
        }
    }
    Ok(FunctionLoad { replace, code })
}

fn function_load(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let o = parse_function_load(args)?;
    let engine = ctx.engine;
    let mut vms = engine.scripting().lock()?;
    vms.functions.js_memory_limit = crate::scripting::js_memory_limit(ctx.engine.config());
    let name = vms.functions.load(o.code, o.replace)?;
    engine.scripting().refresh_stats(&mut vms);
    ctx.add_dirty(1);
    ctx.out.bulk_str(&name);
    Ok(())
}

fn function_delete(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let engine = ctx.engine;
    let mut vms = engine.scripting().lock()?;
    vms.functions.delete(args[2])?;
    engine.scripting().refresh_stats(&mut vms);
    ctx.add_dirty(1);
    ctx.out.ok();
    Ok(())
}

/// FUNCTION LIST's options. Each may be given once: a second one is an
/// unknown argument, as in Redis's functionListCommand.
struct FunctionList<'a> {
    with_code: bool,
    pattern: Option<&'a [u8]>,
}

fn parse_function_list<'a>(args: &[&'a [u8]]) -> Result<FunctionList<'a>, Error> {
    let mut o = FunctionList {
        with_code: false,
        pattern: None,
    };
    let mut a = Args::new(&args[2..]);
    while let Some(arg) = a.peek() {
        if !o.with_code && a.flag("WITHCODE") {
            o.with_code = true;
        } else if o.pattern.is_none() && a.flag("LIBRARYNAME") {
            let pattern = a
                .next_arg()
                .map_err(|_| Error::err("library name argument was not given"))?;
            o.pattern = Some(pattern);
        } else {
            return Err(Error::concat(&[
                b"ERR Unknown argument ",
                crate::error::printf_s(arg, usize::MAX),
            ]));
        }
    }
    Ok(o)
}

fn function_list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let FunctionList { with_code, pattern } = parse_function_list(args)?;
    let vms = ctx.engine.scripting().lock()?;
    let libs: Vec<_> = vms
        .functions
        .libraries
        .iter()
        .filter(|l| pattern.is_none_or(|p| glob_match(p, l.name.as_bytes(), true)))
        .collect();
    let out = &mut *ctx.out;
    out.array(libs.len());
    for lib in libs {
        out.map(if with_code { 4 } else { 3 });
        out.bulk_str("library_name");
        out.bulk_str(&lib.name);
        out.bulk_str("engine");
        out.bulk_str(match lib.lang {
            crate::scripting::eval::Lang::Lua => "LUA",
            crate::scripting::eval::Lang::Js => "JS",
        });
        out.bulk_str("functions");
        out.array(lib.functions.len());
        for f in &lib.functions {
            out.map(3);
            out.bulk_str("name");
            out.bulk_str(&f.name);
            out.bulk_str("description");
            match &f.desc {
                Some(d) => out.bulk(d),
                None => out.null(),
            }
            out.bulk_str("flags");
            reply_flags(out, f.flags);
        }
        if with_code {
            out.bulk_str("library_code");
            out.bulk(&lib.code);
        }
    }
    Ok(())
}

fn reply_flags(out: &mut crate::protocol::ReplyWriter, flags: ScriptFlags) {
    let names: Vec<&str> = ScriptFlags::NAMES
        .iter()
        .filter(|(f, _)| flags.has(*f))
        .map(|(_, n)| *n)
        .collect();
    out.set(names.len());
    for n in names {
        out.simple(n);
    }
}

fn function_dump(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let vms = ctx.engine.scripting().lock()?;
    ctx.out.bulk(&vms.functions.dump());
    Ok(())
}

fn function_restore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 4 {
        return Err(subcommand_syntax_error(args, "FUNCTION"));
    }
    let mut a = Args::new(&args[3..]);
    let policy = if a.is_empty() || a.flag("APPEND") {
        RestorePolicy::Append
    } else if a.flag("REPLACE") {
        RestorePolicy::Replace
    } else if a.flag("FLUSH") {
        RestorePolicy::Flush
    } else {
        return Err(Error::err(
            "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
        ));
    };
    let engine = ctx.engine;
    let mut vms = engine.scripting().lock()?;
    vms.functions.js_memory_limit = crate::scripting::js_memory_limit(ctx.engine.config());
    let r = vms.functions.restore(args[2], policy);
    engine.scripting().refresh_stats(&mut vms);
    r?;
    ctx.add_dirty(1);
    ctx.out.ok();
    Ok(())
}

fn function_flush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(subcommand_syntax_error(args, "FUNCTION"));
    }
    // ASYNC or SYNC: either flushes at once here.
    let mut a = Args::new(&args[2..]);
    let _ = a.flag("ASYNC") || a.flag("SYNC");
    if !a.is_empty() {
        return Err(Error::err("FUNCTION FLUSH only supports SYNC|ASYNC option"));
    }
    let engine = ctx.engine;
    let mut vms = engine.scripting().lock()?;
    vms.functions.flush();
    engine.scripting().refresh_stats(&mut vms);
    ctx.add_dirty(1);
    ctx.out.ok();
    Ok(())
}

fn function_stats(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let scripting = &ctx.engine.scripting();
    if scripting.running_eval() {
        return Err(crate::scripting::BUSY_EVAL);
    }
    let out = &mut *ctx.out;
    out.map(2);
    out.bulk_str("running_script");
    match scripting.running_function() {
        None => out.null(),
        Some(run) => {
            out.map(3);
            out.bulk_str("name");
            out.bulk_str(&run.name);
            out.bulk_str("command");
            out.array(run.argv.len());
            for a in &run.argv {
                out.bulk(a);
            }
            out.bulk_str("duration_ms");
            out.int(run.start.elapsed().as_millis() as i64);
        }
    }
    out.bulk_str("engines");
    let st = &scripting.stats;
    let load =
        |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed) as i64;
    let (js_libs, js_fns) = (load(&st.js_libraries), load(&st.js_functions));
    // JS is listed once it has a library, so that a server without one
    // answers as Redis does.
    out.map(if js_libs > 0 { 2 } else { 1 });
    out.bulk_str("LUA");
    out.map(2);
    out.bulk_str("libraries_count");
    out.int(load(&st.libraries) - js_libs);
    out.bulk_str("functions_count");
    out.int(load(&st.functions) - js_fns);
    if js_libs > 0 {
        out.bulk_str("JS");
        out.map(2);
        out.bulk_str("libraries_count");
        out.int(js_libs);
        out.bulk_str("functions_count");
        out.int(js_fns);
    }
    Ok(())
}

fn function_kill(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.engine.scripting().kill(false)?;
    ctx.out.ok();
    Ok(())
}

fn function_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "FUNCTION",
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// The table

const RUN_FLAGS: u32 = flag::NOSCRIPT
    | flag::SKIP_MONITOR
    | flag::MAY_REPLICATE
    | flag::NO_MANDATORY_KEYS
    | flag::STALE
    | flag::ALL_SHARDS;
const RUN_RO_FLAGS: u32 = flag::NOSCRIPT
    | flag::SKIP_MONITOR
    | flag::NO_MANDATORY_KEYS
    | flag::STALE
    | flag::READONLY
    | flag::ALL_SHARDS;

const RW_KEYS: &[KeySpec] = &[KeySpec::keynum(
    2,
    kflag::RW | kflag::ACCESS | kflag::UPDATE,
)];
const RO_KEYS: &[KeySpec] = &[KeySpec::keynum(2, kflag::RO | kflag::ACCESS)];

static SCRIPT_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "debug",
        arity: 3,
        flags: flag::NOSCRIPT,
        group: Group::Scripting,
        since: "3.2.0",
        summary: "Set the debug mode for executed scripts.",
        complexity: "O(1)",
        syntax: "mode:oneof(YES|SYNC|NO)",
        handler: script_debug,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "exists",
        arity: -3,
        flags: flag::NOSCRIPT,
        group: Group::Scripting,
        since: "2.6.0",
        summary: "Check existence of scripts in the script cache.",
        complexity: "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
        syntax: "sha1:string...",
        tips: &["request_policy:all_shards", "response_policy:agg_logical_and"],
        handler: script_exists,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "flush",
        arity: -2,
        flags: flag::NOSCRIPT,
        group: Group::Scripting,
        since: "2.6.0",
        summary: "Remove all the scripts from the script cache.",
        complexity: "O(N) with N being the number of scripts in cache",
        history: &[("6.2.0", "Added the `ASYNC` and `SYNC` flushing mode modifiers.")],
        syntax: "[async:oneof(ASYNC|SYNC)]{since:6.2.0}",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        handler: script_flush,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Scripting,
        since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: script_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "kill",
        arity: 2,
        flags: flag::NOSCRIPT | flag::ALLOW_BUSY,
        group: Group::Scripting,
        since: "2.6.0",
        summary: "Kill the script currently in execution.",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"],
        handler: script_kill,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "load",
        arity: 3,
        flags: flag::NOSCRIPT | flag::STALE,
        group: Group::Scripting,
        since: "2.6.0",
        summary: "Load the specified Lua script into the script cache.",
        complexity: "O(N) with N being the length in bytes of the script body.",
        syntax: "script:string",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        handler: script_load,
        ..CommandSpec::DEFAULT
    },
];

static FUNCTION_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "delete",
        arity: 3,
        flags: flag::NOSCRIPT | flag::WRITE,
        group: Group::Scripting,
        since: "7.0.0",
        summary: "Delete a function by name",
        complexity: "O(1)",
        syntax: "library-name:string",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        handler: function_delete,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "dump",
        arity: 2,
        flags: flag::NOSCRIPT,
        group: Group::Scripting,
        since: "7.0.0",
        summary: "Dump all functions into a serialized binary payload",
        complexity: "O(N) where N is the number of functions",
        handler: function_dump,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "flush",
        arity: -2,
        flags: flag::NOSCRIPT | flag::WRITE,
        group: Group::Scripting,
        since: "7.0.0",
        summary: "Deleting all functions",
        complexity: "O(N) where N is the number of functions deleted",
        syntax: "[async:oneof(ASYNC|SYNC)]",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        handler: function_flush,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Scripting,
        since: "7.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: function_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "kill",
        arity: 2,
        flags: flag::NOSCRIPT | flag::ALLOW_BUSY,
        group: Group::Scripting,
        since: "7.0.0",
        summary: "Kill the function currently in execution.",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"],
        handler: function_kill,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "list",
        arity: -2,
        flags: flag::NOSCRIPT,
        group: Group::Scripting,
        since: "7.0.0",
        summary: "List information about all the functions",
        complexity: "O(N) where N is the number of functions",
        syntax: "[LIBRARYNAME library-name-pattern:string] [WITHCODE]",
        tips: &["nondeterministic_output_order"],
        handler: function_list,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "load",
        arity: -3,
        flags: flag::NOSCRIPT | flag::WRITE | flag::DENYOOM,
        group: Group::Scripting,
        since: "7.0.0",
        summary: "Create a function with the given arguments (name, code, description)",
        complexity: "O(1) (considering compilation time is redundant)",
        syntax: "[REPLACE] function-code:string",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        handler: function_load,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "restore",
        arity: -3,
        flags: flag::NOSCRIPT | flag::WRITE | flag::DENYOOM,
        group: Group::Scripting,
        since: "7.0.0",
        summary: "Restore all the functions on the given payload",
        complexity: "O(N) where N is the number of functions on the payload",
        syntax: "serialized-value:string [policy:oneof(FLUSH|APPEND|REPLACE)]",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        handler: function_restore,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "stats",
        arity: 2,
        flags: flag::NOSCRIPT | flag::ALLOW_BUSY,
        group: Group::Scripting,
        since: "7.0.0",
        summary:
            "Return information about the function currently running (name, description, duration)",
        complexity: "O(1)",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
        handler: function_stats,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "eval",
        arity: -3,
        flags: RUN_FLAGS,
        keys: RW_KEYS,
        key_spec_notes: &[(
            0,
            "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
        )],
        group: Group::Scripting,
        flags_fn: Some(eval_flags),
        keyed_fn: Some(eval_keyed),
        since: "2.6.0",
        summary: "Execute a Lua script server side",
        complexity: "Depends on the script that is executed.",
        syntax: "script:string numkeys:integer [key:key...] [arg:string...]",
        handler: eval_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "evalsha",
        arity: -3,
        flags: RUN_FLAGS,
        keys: RW_KEYS,
        group: Group::Scripting,
        flags_fn: Some(evalsha_flags),
        keyed_fn: Some(evalsha_keyed),
        since: "2.6.0",
        summary: "Execute a Lua script server side",
        complexity: "Depends on the script that is executed.",
        syntax: "sha1:string numkeys:integer [key:key...] [arg:string...]",
        handler: evalsha_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "eval_ro",
        arity: -3,
        flags: RUN_RO_FLAGS,
        keys: RO_KEYS,
        key_spec_notes: &[(
            0,
            "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
        )],
        group: Group::Scripting,
        flags_fn: Some(eval_flags),
        keyed_fn: Some(eval_keyed),
        since: "7.0.0",
        summary: "Execute a read-only Lua script server side",
        complexity: "Depends on the script that is executed.",
        syntax: "script:string numkeys:integer [key:key...] [arg:string...]",
        handler: eval_ro_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "evalsha_ro",
        arity: -3,
        flags: RUN_RO_FLAGS,
        keys: RO_KEYS,
        group: Group::Scripting,
        flags_fn: Some(evalsha_flags),
        keyed_fn: Some(evalsha_keyed),
        since: "7.0.0",
        summary: "Execute a read-only Lua script server side",
        complexity: "Depends on the script that is executed.",
        syntax: "sha1:string numkeys:integer [key:key...] [arg:string...]",
        handler: evalsha_ro_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "fcall",
        arity: -3,
        flags: RUN_FLAGS,
        keys: RW_KEYS,
        key_spec_notes: &[(
            0,
            "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
        )],
        group: Group::Scripting,
        flags_fn: Some(fcall_flags),
        since: "7.0.0",
        summary: "Invoke a function",
        complexity: "Depends on the function that is executed.",
        syntax: "function:string numkeys:integer [key:key...] [arg:string...]",
        handler: fcall_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "fcall_ro",
        arity: -3,
        flags: RUN_RO_FLAGS,
        keys: RO_KEYS,
        key_spec_notes: &[(
            0,
            "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
        )],
        group: Group::Scripting,
        flags_fn: Some(fcall_flags),
        since: "7.0.0",
        summary: "Invoke a read-only function",
        complexity: "Depends on the function that is executed.",
        syntax: "function:string numkeys:integer [key:key...] [arg:string...]",
        handler: fcall_ro_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "script",
        arity: -2,
        group: Group::Scripting,
        subcommands: SCRIPT_SUBCOMMANDS,
        since: "2.6.0",
        summary: "A container for Lua scripts management commands",
        complexity: "Depends on subcommand.",
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "function",
        arity: -2,
        group: Group::Scripting,
        subcommands: FUNCTION_SUBCOMMANDS,
        since: "7.0.0",
        summary: "A container for function commands",
        complexity: "Depends on subcommand.",
        ..CommandSpec::DEFAULT
    },
];
