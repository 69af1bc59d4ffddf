//! Scripting commands. Only FUNCTION FLUSH exists so far: with no way to
//! load functions yet, the function library is always empty.

use crate::command::spec::{flag, CmdResult, CommandSpec, Group};
use crate::command::Ctx;
use crate::Error;

fn function_flush(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match args.get(2).map(|a| a.to_ascii_lowercase()) {
        None => {}
        Some(m) if m == b"async" || m == b"sync" => {}
        Some(_) => return Err(Error::err("FUNCTION FLUSH only supports SYNC|ASYNC option")),
    }
    ctx.out.ok();
    Ok(())
}

static FUNCTION_SUBCOMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "flush",
    arity: -2,
    flags: flag::WRITE | flag::NOSCRIPT,
    group: Group::Scripting,
    since: "7.0.0",
    summary: "Deletes all libraries and functions.",
    complexity: "O(N) where N is the number of functions deleted",
    syntax: "[ASYNC|SYNC]",
    tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
    handler: function_flush,
    ..CommandSpec::DEFAULT
}];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "function",
    arity: -2,
    group: Group::Scripting,
    since: "7.0.0",
    summary: "A container for function commands.",
    complexity: "Depends on subcommand.",
    subcommands: FUNCTION_SUBCOMMANDS,
    ..CommandSpec::DEFAULT
}];
