//! Replies shared by the families' container commands (CONFIG, CLIENT,
//! OBJECT...): their HELP and their unknown-subcommand error.

use crate::command::Ctx;

/// Redis's addReplySubcommandSyntaxError.
pub fn subcommand_syntax_error(args: &[&[u8]], container: &str) -> crate::Error {
    crate::Error::concat(&[
        b"ERR unknown subcommand or wrong number of arguments for '",
        crate::error::printf_s(args[1], 128),
        b"'. Try ",
        container.as_bytes(),
        b" HELP.",
    ])
}

/// Redis's addReplyHelp: a header line, the given lines, and HELP.
pub fn reply_help(ctx: &mut Ctx, command: &str, lines: &[&str]) {
    ctx.out.array(lines.len() + 3);
    ctx.out.simple(format!(
        "{command} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for l in lines {
        ctx.out.simple(l);
    }
    ctx.out.simple("HELP");
    ctx.out.simple("    Prints this help.");
}
