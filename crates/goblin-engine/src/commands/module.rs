//! MODULE (Redis's module.c): Goblin's own commands (the GOBLIN.* family)
//! are built in, and it loads no Redis module, so MODULE LIST is empty and
//! LOAD / LOADEX / UNLOAD answer as Redis answers a module that fails to
//! load or a name that is not loaded, with the reason in the log.

use crate::command::args::Args;
use crate::command::spec::{flag, CmdResult, CommandSpec, Group};
use crate::command::Ctx;
use crate::Error;

const LOAD_FAILED: &str = "ERR Error loading the extension. Please check the server logs.";

/// Redis's parseLoadexArguments: CONFIG name value pairs, then ARGS and
/// the module's arguments; anything else is a syntax error (logged).
/// Returns the module's arguments.
pub fn parse_loadex<'a>(args: &[&'a [u8]]) -> Result<Vec<&'a [u8]>, String> {
    let mut a = Args::new(args);
    while let Some(next) = a.peek() {
        if a.option_n("CONFIG", 2).is_some() {
            continue;
        }
        if a.flag("ARGS") {
            return Ok(a.rest().to_vec());
        }
        if next.eq_ignore_ascii_case(b"CONFIG") {
            return Err("CONFIG specified without name value pair".into());
        }
        return Err(format!(
            "Syntax Error from arguments to loadex around {}.",
            String::from_utf8_lossy(next)
        ));
    }
    Ok(Vec::new())
}

/// What Redis's moduleLoad logs for `path`, here where nothing can load:
/// its own texts for a file that is not executable or not there, and for
/// any other file the reason Goblin has.
fn load_failure(path: &[u8]) -> String {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let shown = String::from_utf8_lossy(path);
    let os_path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
    match std::fs::metadata(os_path) {
        Ok(m) if m.permissions().mode() & 0o111 == 0 => {
            format!("Module {shown} failed to load: It does not have execute permissions.")
        }
        Ok(_) => format!(
            "Module {shown} failed to load: Goblin loads no Redis modules (its own commands are built in)"
        ),
        Err(e) => format!("Module {shown} failed to load: {shown}: cannot open shared object file: {}", io_text(&e)),
    }
}

/// An I/O error's text as strerror gives it (without Rust's " (os error N)").
fn io_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn module_load(_ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    crate::log::warning(&load_failure(args[2]));
    Err(Error::raw(LOAD_FAILED))
}

fn module_loadex(_ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let parsed = parse_loadex(&args[3..]);
    match parsed {
        Err(syntax) => crate::log::notice(&syntax),
        Ok(_) => crate::log::warning(&load_failure(args[2])),
    }
    Err(Error::raw(LOAD_FAILED))
}

fn module_unload(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    // No module is loaded, so no name is one (Redis's ENOENT).
    Err(Error::raw(
        "ERR Error unloading module: no such module with that name",
    ))
}

fn module_list(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.array(0);
    Ok(())
}

fn module_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "MODULE",
        &[
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
        ],
    );
    Ok(())
}

static MODULE_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        handler: module_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "list",
        arity: 2,
        flags: flag::ADMIN | flag::NOSCRIPT,
        group: Group::Server,
        since: "4.0.0",
        summary: "List all modules loaded by the server",
        complexity: "O(N) where N is the number of loaded modules.",
        tips: &["nondeterministic_output_order"],
        handler: module_list,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "load",
        protected_by: Some(crate::config::Param::EnableModuleCommand),
        arity: -3,
        flags: flag::NO_ASYNC_LOADING | flag::ADMIN | flag::NOSCRIPT,
        group: Group::Server,
        since: "4.0.0",
        summary: "Load a module",
        syntax: "path:string [arg:string...]",
        handler: module_load,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "loadex",
        protected_by: Some(crate::config::Param::EnableModuleCommand),
        arity: -3,
        flags: flag::NO_ASYNC_LOADING | flag::ADMIN | flag::NOSCRIPT,
        group: Group::Server,
        since: "7.0.0",
        summary: "Load a module with extended parameters",
        syntax: "path:string [CONFIG configs:block(name:string value:string)...]{multiple_token} [ARGS args:block(arg:string)...]",
        handler: module_loadex,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "unload",
        protected_by: Some(crate::config::Param::EnableModuleCommand),
        arity: 3,
        flags: flag::NO_ASYNC_LOADING | flag::ADMIN | flag::NOSCRIPT,
        group: Group::Server,
        since: "4.0.0",
        summary: "Unload a module",
        syntax: "name:string",
        handler: module_unload,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "module",
    arity: -2,
    group: Group::Server,
    since: "4.0.0",
    summary: "A container for module commands",
    complexity: "Depends on subcommand.",
    subcommands: MODULE_SUBCOMMANDS,
    ..CommandSpec::DEFAULT
}];

#[cfg(test)]
mod tests {
    use super::parse_loadex;

    #[test]
    fn loadex_arguments_as_redis_reads_them() {
        let args: &[&[u8]] = &[b"CONFIG", b"a", b"1", b"ARGS", b"x", b"y"];
        assert_eq!(parse_loadex(args).unwrap(), vec![&b"x"[..], b"y"]);
        assert!(parse_loadex(&[b"CONFIG", b"a"]).is_err());
        assert_eq!(
            parse_loadex(&[b"bogus"]).unwrap_err(),
            "Syntax Error from arguments to loadex around bogus."
        );
        assert!(parse_loadex(&[]).unwrap().is_empty());
    }
}
