//! ACL: users and their permissions (Redis's aclCommand in acl.c). The
//! rules themselves live in `crate::acl`.

use crate::acl::{has_spaces, LogContext, LogReason, CATEGORIES};
use crate::command::args::Args;
use crate::command::spec::{flag, CmdResult, CommandSpec, Group};
use crate::command::{table, Ctx};
use crate::engine::Engine;
use crate::error::printf_s;
use crate::util::number::arg_i64;
use crate::util::time::now_ms;
use crate::Error;
use std::path::PathBuf;

fn acl_setuser(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = args[2];
    if has_spaces(name) {
        return Err(Error::err(
            "Usernames can't contain spaces or null characters",
        ));
    }
    let before = ctx.engine.acl().user(name).map(|cell| cell.rules());
    ctx.engine
        .acl()
        .set_user(name, &args[3..])
        .map_err(|e| Error::concat(&[b"ERR ", &e]))?;
    if let (Some(before), Some(cell)) = (before, ctx.engine.acl().user(name)) {
        kill_revoked_subscribers(ctx, name, &before, &cell.rules());
    }
    ctx.out.ok();
    Ok(())
}

/// Redis's ACLKillPubsubClientsIfNeeded: the user's rules changed from
/// `before` to `after`; its subscribed clients that now hold a
/// subscription the rules refuse are closed (the current one after its
/// reply).
fn kill_revoked_subscribers(
    ctx: &mut Ctx,
    name: &[u8],
    before: &crate::acl::User,
    after: &crate::acl::User,
) {
    let Some(allowed) = crate::acl::revoked_channels(after, before) else {
        return;
    };
    let violating = ctx
        .engine
        .pubsub()
        .subscribers_violating(name, &|channel, pattern| {
            crate::acl::channel_allowed(&allowed, channel, pattern)
        });
    let me = ctx.client.id();
    for c in violating {
        if c.id == me {
            ctx.client.close_after_reply = true;
        } else {
            c.kill();
        }
    }
}

fn acl_deluser(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args[2..].iter().any(|n| *n == b"default") {
        return Err(Error::err("The 'default' user cannot be removed"));
    }
    let mut deleted = 0;
    for name in &args[2..] {
        if ctx.engine.acl().delete_user(name).is_some() {
            disconnect_user(ctx, name);
            deleted += 1;
        }
    }
    ctx.out.int(deleted);
    Ok(())
}

/// Redis's ACLFreeUserAndKillClients: the connections of a user that is
/// gone are closed; the current one after its reply.
fn disconnect_user(ctx: &mut Ctx, name: &[u8]) {
    let me = ctx.client.id();
    for c in ctx.engine.clients().all() {
        if **c.user.lock() != *name {
            continue;
        }
        if c.id == me {
            super::connection::set_user(ctx, ctx.engine.acl().default_user());
            ctx.client.authenticated = false;
            ctx.client.close_after_reply = true;
        } else {
            c.kill();
        }
    }
}

fn acl_getuser(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(cell) = ctx.engine.acl().user(args[2]) else {
        ctx.out.null();
        return Ok(());
    };
    let user = cell.rules();
    let selectors = user.selector_descriptions();
    ctx.out.map(6);
    ctx.out.bulk(b"flags");
    let flags = user.flag_names();
    ctx.out.set(flags.len());
    for f in flags {
        ctx.out.bulk(f.as_bytes());
    }
    ctx.out.bulk(b"passwords");
    ctx.out.array(user.password_hashes().len());
    for p in user.password_hashes() {
        ctx.out.bulk(p);
    }
    let describe = |ctx: &mut Ctx, [commands, keys, channels]: &[Vec<u8>; 3]| {
        ctx.out.bulk(b"commands");
        ctx.out.bulk(commands);
        ctx.out.bulk(b"keys");
        ctx.out.bulk(keys);
        ctx.out.bulk(b"channels");
        ctx.out.bulk(channels);
    };
    describe(ctx, &selectors[0]);
    ctx.out.bulk(b"selectors");
    ctx.out.array(selectors.len() - 1);
    for s in &selectors[1..] {
        ctx.out.map(3);
        describe(ctx, s);
    }
    Ok(())
}

fn acl_list(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let users = ctx.engine.acl().users();
    ctx.out.array(users.len());
    for cell in users {
        ctx.out.bulk(&user_line(&cell));
    }
    Ok(())
}

/// "user <name> <rules>", as ACL LIST shows a user and the ACL file keeps it.
fn user_line(cell: &crate::acl::UserCell) -> Vec<u8> {
    let mut line = b"user ".to_vec();
    line.extend_from_slice(&cell.name);
    line.push(b' ');
    line.extend_from_slice(&cell.rules().describe());
    line
}

fn acl_users(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let users = ctx.engine.acl().users();
    ctx.out.array(users.len());
    for cell in users {
        ctx.out.bulk(&cell.name);
    }
    Ok(())
}

fn acl_whoami(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    match &ctx.client.user {
        Some(u) => {
            let name = u.name().to_vec();
            ctx.out.bulk(&name);
        }
        None => ctx.out.null(),
    }
    Ok(())
}

fn acl_cat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => {
            ctx.out.array(CATEGORIES.len());
            for c in CATEGORIES {
                ctx.out.bulk(c.as_bytes());
            }
        }
        3 => {
            let Some(bit) = crate::acl::category_bit(args[2]) else {
                return Err(Error::concat(&[
                    b"ERR Unknown category '",
                    printf_s(args[2], 128),
                    b"'",
                ]));
            };
            let names = crate::acl::commands_in_category(bit);
            ctx.out.array(names.len());
            for id in names {
                ctx.out.bulk(table().get(id).fullname.as_bytes());
            }
        }
        _ => return Err(super::help::subcommand_syntax_error(args, "ACL")),
    }
    Ok(())
}

const GENPASS_MAX_BITS: i64 = 4096;

fn acl_genpass(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let bits = match args.get(2) {
        Some(a) => arg_i64(a)?,
        None => 256,
    };
    if args.len() > 3 {
        return Err(super::help::subcommand_syntax_error(args, "ACL"));
    }
    if bits <= 0 || bits > GENPASS_MAX_BITS {
        return Err(Error::err(format_args!(
            "ACL GENPASS argument must be the number of bits for the output password, a positive number up to {GENPASS_MAX_BITS}"
        )));
    }
    ctx.out
        .bulk(crate::acl::random_hex(bits as usize).as_bytes());
    Ok(())
}

/// ACL LOG's one argument: RESET, or how many entries to show (10 when
/// none is given, none when it is negative).
enum AclLogRequest {
    Reset,
    Show(usize),
}

fn parse_acl_log(args: &[&[u8]]) -> Result<AclLogRequest, Error> {
    if args.len() > 3 {
        return Err(super::help::subcommand_syntax_error(args, "ACL"));
    }
    let mut a = Args::new(&args[2..]);
    if a.flag("RESET") {
        return Ok(AclLogRequest::Reset);
    }
    Ok(AclLogRequest::Show(match a.peek() {
        None => 10,
        Some(count) => arg_i64(count)?.max(0) as usize,
    }))
}

fn acl_log(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let count = match parse_acl_log(args)? {
        AclLogRequest::Reset => {
            ctx.engine.acl().log_reset();
            ctx.out.ok();
            return Ok(());
        }
        AclLogRequest::Show(count) => count,
    };
    let now = now_ms();
    let out = &mut *ctx.out;
    ctx.engine.acl().log_entries(|log| {
        let n = count.min(log.len());
        out.array(n);
        for e in log.iter().take(n) {
            out.map(7);
            out.bulk(b"count");
            out.int(e.count as i64);
            out.bulk(b"reason");
            out.bulk(match e.reason {
                LogReason::Command => b"command".as_slice(),
                LogReason::Key => b"key",
                LogReason::Channel => b"channel",
                LogReason::Auth => b"auth",
            });
            out.bulk(b"context");
            out.bulk(match e.context {
                LogContext::Toplevel => b"toplevel".as_slice(),
                LogContext::Multi => b"multi",
                LogContext::Lua => b"lua",
            });
            out.bulk(b"object");
            out.bulk(&e.object);
            out.bulk(b"username");
            out.bulk(&e.username);
            out.bulk(b"age-seconds");
            out.double(now.saturating_sub(e.ctime_ms) as f64 / 1000.0);
            out.bulk(b"client-info");
            out.bulk(e.client_info.as_bytes());
        }
    });
    Ok(())
}

fn acl_dryrun(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(cell) = ctx.engine.acl().user(args[2]) else {
        return Err(Error::concat(&[
            b"ERR User '",
            printf_s(args[2], usize::MAX),
            b"' not found",
        ]));
    };
    let argv = &args[3..];
    let t = table();
    let Some(id) = t.lookup_call(argv) else {
        return Err(Error::concat(&[
            b"ERR Command '",
            printf_s(argv[0], usize::MAX),
            b"' not found",
        ]));
    };
    if !t.get(id).spec.arity_ok(argv.len()) {
        return Err(Error::err(format_args!(
            "wrong number of arguments for '{}' command",
            t.get(id).fullname
        )));
    }
    match cell.rules().check(id, argv) {
        Ok(()) => ctx.out.ok(),
        Err(denied) => {
            let text = match denied {
                crate::acl::Denied::Command => [
                    b"This user has no permissions to run the '".as_slice(),
                    t.get(id).fullname.as_bytes(),
                    b"' command",
                ]
                .concat(),
                crate::acl::Denied::Key(i) => [
                    b"This user has no permissions to access the '".as_slice(),
                    printf_s(argv[i], usize::MAX),
                    b"' key",
                ]
                .concat(),
                crate::acl::Denied::Channel(i) => [
                    b"This user has no permissions to access the '".as_slice(),
                    printf_s(argv[i], usize::MAX),
                    b"' channel",
                ]
                .concat(),
            };
            ctx.out.bulk(&text);
        }
    }
    Ok(())
}

const NO_ACL_FILE: &str = "This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

/// The ACL file's path: `aclfile`, relative to `dir` unless absolute (Redis
/// changes into `dir` before it reads the file).
fn acl_file(engine: &Engine) -> Option<PathBuf> {
    let name = engine.config().aclfile();
    if name.is_empty() {
        return None;
    }
    Some(PathBuf::from(engine.config().dir()).join(name))
}

fn acl_load(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let path = acl_file(ctx.engine).ok_or_else(|| Error::err(NO_ACL_FILE))?;
    let default_before = ctx.engine.acl().default_user().rules();
    let gone = load_file(ctx.engine, &path).map_err(Error::err)?;
    for name in gone {
        disconnect_user(ctx, &name);
    }
    // The default user keeps its connections, with its new rules.
    let default_after = ctx.engine.acl().default_user().rules();
    kill_revoked_subscribers(ctx, b"default", &default_before, &default_after);
    ctx.out.ok();
    Ok(())
}

/// Installs the users of the configuration's `user` directives, or of the
/// ACL file (Redis's ACLLoadUsersAtStartup); both at once is an error.
pub fn load_at_startup(engine: &Engine) -> Result<(), String> {
    let configured = engine.config().users.lock().clone();
    let file = acl_file(engine);
    if !configured.is_empty() && file.is_some() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".to_string());
    }
    for user in &configured {
        let name = user[0].as_bytes();
        let mut rules: Vec<&[u8]> = Vec::with_capacity(user.len());
        if name == b"default" {
            rules.push(b"reset");
        }
        rules.extend(user[1..].iter().map(|r| r.as_bytes()));
        engine.acl().set_user(name, &rules).map_err(|e| {
            format!(
                "Error in user declaration '{}': {}",
                user[0],
                String::from_utf8_lossy(&e)
            )
        })?;
    }
    match file {
        Some(path) => load_file(engine, &path).map(|_| ()),
        None => Ok(()),
    }
}

/// The users as `user` directives, for CONFIG REWRITE (none when an ACL
/// file keeps them).
pub fn config_lines(engine: &Engine) -> Vec<Vec<u8>> {
    if acl_file(engine).is_some() {
        return Vec::new();
    }
    engine.acl().users().iter().map(|c| user_line(c)).collect()
}

/// Redis's ACLLoadFromFile: every line "user <name> <rules...>" (blank
/// lines and # comments aside); any error leaves the users as they were.
/// Returns the users replaced, whose connections must close.
fn load_file(engine: &Engine, path: &std::path::Path) -> Result<Vec<Vec<u8>>, String> {
    let text = std::fs::read(path).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{}': {}",
            path.display(),
            e
        )
    })?;
    let mut users: Vec<(Vec<u8>, Vec<Vec<u8>>)> = Vec::new();
    let mut errors = String::new();
    for (i, line) in text.split(|&c| c == b'\n').enumerate() {
        let line = line.trim_ascii();
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let at = format!("{}:{}: ", path.display(), i + 1);
        let Some(argv) = crate::protocol::parser::split_args(line) else {
            errors.push_str(&format!("{at}unbalanced quotes in acl line. "));
            continue;
        };
        if argv.is_empty() {
            continue;
        }
        if argv[0] != b"user" || argv.len() < 2 {
            errors.push_str(&format!("{at}line should start with user keyword. "));
            continue;
        }
        if has_spaces(&argv[1]) {
            errors.push_str(&format!(
                "{at}'{}' is not a valid username. ",
                String::from_utf8_lossy(&argv[1])
            ));
            continue;
        }
        if users.iter().any(|(n, _)| *n == argv[1]) {
            errors.push_str(&format!(
                "{at}Duplicate user '{}' found. ",
                String::from_utf8_lossy(&argv[1])
            ));
            continue;
        }
        users.push((argv[1].clone(), argv[2..].to_vec()));
    }
    let staged = crate::acl::Acl::new();
    staged.set_pubsub_default(engine.config().acl_pubsub_default() == "allchannels");
    for (name, rules) in &users {
        let rules: Vec<&[u8]> = rules.iter().map(|r| r.as_slice()).collect();
        if name != b"default" {
            // Each user starts from a fresh one, as in the file.
            let _ = staged.set_user(name, &[]);
        }
        if let Err(e) = staged.set_user(name, &rules) {
            errors.push_str(&format!(
                "{}: {}. ",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(&e)
            ));
        }
    }
    if !errors.is_empty() {
        errors.pop();
        return Err(errors);
    }
    Ok(engine.acl().replace_all(staged))
}

fn acl_save(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let path = acl_file(ctx.engine).ok_or_else(|| Error::err(NO_ACL_FILE))?;
    let mut text = Vec::new();
    for cell in ctx.engine.acl().users() {
        text.extend_from_slice(&user_line(&cell));
        text.push(b'\n');
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let written = std::fs::write(&tmp, &text).and_then(|_| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        crate::log::warning(&format!("Opening temp ACL file for ACL SAVE: {e}"));
        return Err(Error::err(
            "There was an error trying to save the ACLs. Please check the server logs for more information",
        ));
    }
    ctx.out.ok();
    Ok(())
}

fn acl_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "ACL",
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    );
    Ok(())
}

const SUB: u32 = flag::NOSCRIPT | flag::LOADING | flag::STALE;

static ACL_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "cat",
        arity: -2,
        flags: SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "List the ACL categories or the commands inside a category",
        complexity: "O(1) since the categories and commands are a fixed set.",
        syntax: "[categoryname:string]",
        handler: acl_cat,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "deluser",
        arity: -3,
        flags: flag::ADMIN | SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "Remove the specified ACL users and the associated rules",
        complexity: "O(1) amortized time considering the typical user.",
        syntax: "username:string...",
        handler: acl_deluser,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "dryrun",
        arity: -4,
        flags: flag::ADMIN | SUB,
        group: Group::Server,
        since: "7.0.0",
        summary: "Returns whether the user can execute the given command without executing the command.",
        complexity: "O(1).",
        history: &[],
        syntax: "username:string command:string [arg:string...]",
        handler: acl_dryrun,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "genpass",
        arity: -2,
        flags: SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "Generate a pseudorandom secure password to use for ACL users",
        complexity: "O(1)",
        syntax: "[bits:integer]",
        handler: acl_genpass,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getuser",
        arity: 3,
        flags: flag::ADMIN | SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "Get the rules for a specific ACL user",
        complexity: "O(N). Where N is the number of password, command and pattern rules that the user has.",
        history: &[("6.2.0", "Added Pub/Sub channel patterns."), ("7.0.0", "Added selectors and changed the format of key and channel patterns from a list to their rule representation.")],
        syntax: "username:string",
        handler: acl_getuser,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "6.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: acl_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "list",
        arity: 2,
        flags: flag::ADMIN | SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "List the current ACL rules in ACL config file format",
        complexity: "O(N). Where N is the number of configured users.",
        handler: acl_list,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "load",
        arity: 2,
        flags: flag::ADMIN | SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "Reload the ACLs from the configured ACL file",
        complexity: "O(N). Where N is the number of configured users.",
        handler: acl_load,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "log",
        arity: -2,
        flags: flag::ADMIN | SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "List latest events denied because of ACLs in place",
        complexity: "O(N) with N being the number of entries shown.",
        syntax: "[operation:oneof(count:integer|RESET)]",
        handler: acl_log,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "save",
        arity: 2,
        flags: flag::ADMIN | SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "Save the current ACL rules in the configured ACL file",
        complexity: "O(N). Where N is the number of configured users.",
        handler: acl_save,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "setuser",
        arity: -3,
        flags: flag::ADMIN | SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "Modify or create the rules for a specific ACL user",
        complexity: "O(N). Where N is the number of rules provided.",
        history: &[("6.2.0", "Added Pub/Sub channel patterns."), ("7.0.0", "Added selectors and key based permissions.")],
        syntax: "username:string [rule:string...]",
        handler: acl_setuser,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "users",
        arity: 2,
        flags: flag::ADMIN | SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "List the username of all the configured ACL rules",
        complexity: "O(N). Where N is the number of configured users.",
        handler: acl_users,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "whoami",
        arity: 2,
        flags: SUB,
        group: Group::Server,
        since: "6.0.0",
        summary: "Return the name of the user associated to the current connection",
        complexity: "O(1)",
        handler: acl_whoami,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "acl",
    arity: -2,
    flags: 0,
    group: Group::Server,
    subcommands: ACL_SUBCOMMANDS,
    since: "6.0.0",
    summary: "A container for Access List Control commands ",
    complexity: "Depends on subcommand.",
    ..CommandSpec::DEFAULT
}];
