//! Command implementations, one family per file (as Redis keeps
//! `t_string.c`, `t_hash.c`...). Each file exports `COMMANDS`, its part of
//! the command table.

pub mod bitmaps;
pub mod cell;
pub mod connection;
pub mod goblin;
pub mod hashes;
pub mod keys;
pub mod lists;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod sort;
pub mod strings;
pub mod transactions;
pub mod zsets;

use crate::command::spec::CommandSpec;
use crate::command::Ctx;

/// Every family's table, in the order COMMAND lists them.
pub static FAMILIES: &[&[CommandSpec]] = &[
    strings::COMMANDS,
    bitmaps::COMMANDS,
    lists::COMMANDS,
    keys::COMMANDS,
    connection::COMMANDS,
    server::COMMANDS,
    transactions::COMMANDS,
    scripting::COMMANDS,
    zsets::COMMANDS,
    hashes::COMMANDS,
    sets::COMMANDS,
    sort::COMMANDS,
    goblin::COMMANDS,
    cell::COMMANDS,
];

/// Redis's addReplyHelp: a header line, the given lines, and HELP.
pub fn reply_help(ctx: &mut Ctx, command: &str, lines: &[&str]) {
    ctx.out.array(lines.len() + 3);
    ctx.out.simple(&format!(
        "{command} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for l in lines {
        ctx.out.simple(l);
    }
    ctx.out.simple("HELP");
    ctx.out.simple("    Print this help.");
}
