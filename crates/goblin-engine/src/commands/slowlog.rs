//! SLOWLOG GET, LEN, RESET and HELP (Redis's slowlog.c). The log itself is
//! `crate::slowlog`; the dispatcher feeds it.

use crate::command::spec::{flag, CmdResult, CommandSpec, Group};
use crate::command::Ctx;
use crate::util::number::parse_i64;
use crate::Error;

/// SLOWLOG GET's count: 10 by default, -1 for every entry.
fn parse_count(args: &[&[u8]]) -> Result<Option<usize>, Error> {
    let Some(arg) = args.get(2) else {
        return Ok(Some(10));
    };
    match parse_i64(arg) {
        Some(-1) => Ok(None),
        Some(n) if n >= 0 => Ok(Some(n as usize)),
        _ => Err(Error::err("count should be greater than or equal to -1")),
    }
}

fn slowlog_get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let count = parse_count(args)?.unwrap_or(usize::MAX);
    let out = &mut *ctx.out;
    ctx.engine.slowlog().with_newest(count, |entries| {
        let entries: Vec<_> = entries.collect();
        out.array(entries.len());
        for e in entries {
            out.array(6);
            out.int(e.id as i64);
            out.int(e.time as i64);
            out.int(e.duration as i64);
            out.array(e.argv.len());
            for a in &e.argv {
                out.bulk(a);
            }
            out.bulk(e.peer.as_bytes());
            out.bulk(&e.name);
        }
    });
    Ok(())
}

fn slowlog_len(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.engine.slowlog().len() as i64);
    Ok(())
}

fn slowlog_reset(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.engine.slowlog().reset();
    ctx.out.ok();
    Ok(())
}

fn slowlog_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    );
    Ok(())
}

const ADMIN: u32 = flag::ADMIN | flag::LOADING | flag::STALE;

static SLOWLOG_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "get",
        arity: -2,
        flags: ADMIN,
        group: Group::Server,
        since: "2.2.12",
        summary: "Get the slow log's entries",
        complexity: "O(N) where N is the number of entries returned",
        history: &[(
            "4.0.0",
            "Added client IP address, port and name to the reply.",
        )],
        syntax: "[count:integer]",
        tips: &["request_policy:all_nodes", "nondeterministic_output"],
        handler: slowlog_get,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "len",
        arity: 2,
        flags: ADMIN,
        group: Group::Server,
        since: "2.2.12",
        summary: "Get the slow log's length",
        complexity: "O(1)",
        tips: &[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ],
        handler: slowlog_len,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "reset",
        arity: 2,
        flags: ADMIN,
        group: Group::Server,
        since: "2.2.12",
        summary: "Clear all entries from the slow log",
        complexity: "O(N) where N is the number of entries in the slowlog",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        handler: slowlog_reset,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "6.2.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: slowlog_help,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "slowlog",
    arity: -2,
    group: Group::Server,
    subcommands: SLOWLOG_SUBCOMMANDS,
    since: "2.2.12",
    summary: "A container for slow log commands",
    complexity: "Depends on subcommand.",
    ..CommandSpec::DEFAULT
}];
