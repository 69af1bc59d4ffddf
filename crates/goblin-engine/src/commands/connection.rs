//! Connection commands: PING, ECHO, SELECT, QUIT, RESET, HELLO, AUTH,
//! MONITOR and CLIENT (Redis's networking.c, server.c and replication.c).

use crate::client::ReplyMode;
use crate::command::args::Args;
use crate::command::spec::{flag, CmdResult, CommandSpec, Group};
use crate::command::Ctx;
use crate::error::printf_s;
use crate::util::number::{arg_i64, parse_i64};
use crate::util::time::now_ms;
use crate::Error;
use std::sync::atomic::Ordering;

fn ping_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 2 {
        return Err(Error::arity("ping"));
    }
    // A subscribed RESP2 client reads replies as messages: ["pong", arg].
    if ctx.client.subscribed() && ctx.client.resp == 2 {
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        ctx.out.bulk(args.get(1).copied().unwrap_or(b""));
        return Ok(());
    }
    match args.len() {
        1 => ctx.out.simple("PONG"),
        _ => ctx.out.bulk(args[1]),
    }
    Ok(())
}

fn echo_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.out.bulk(args[1]);
    Ok(())
}

fn select_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let id = parse_i64(args[1])
        .filter(|v| *v >= i32::MIN as i64 && *v <= i32::MAX as i64)
        .ok_or(Error::NOT_INTEGER)?;
    if id < 0 || id as usize >= ctx.databases() {
        return Err(Error::DB_INDEX);
    }
    ctx.client.set_db(id as usize);
    ctx.out.ok();
    Ok(())
}

fn quit_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn reset_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.client.multi = None;
    ctx.client.info.in_multi.store(false, Ordering::Relaxed);
    ctx.engine.unwatch_all(ctx.client, Some(ctx.locks));
    ctx.engine.pubsub().leave_all(ctx.client, Some(ctx.out));
    ctx.client.set_db(0);
    set_resp(ctx, 2);
    ctx.client.reply_mode = ReplyMode::On;
    ctx.client.info.no_evict.store(false, Ordering::Relaxed);
    ctx.client.info.no_touch.store(false, Ordering::Relaxed);
    *ctx.client.info.name.lock() = None;
    if ctx.client.info.monitor.swap(false, Ordering::Relaxed) {
        ctx.engine.monitors().remove(ctx.client.id());
    }
    ctx.engine.disable_tracking(ctx.client);
    set_user(ctx, ctx.engine.acl().default_user());
    ctx.client.authenticated = !ctx.engine.acl().auth_required();
    ctx.out.simple("RESET");
    Ok(())
}

fn set_resp(ctx: &mut Ctx, resp: u8) {
    ctx.client.resp = resp;
    ctx.client.info.resp.store(resp, Ordering::Relaxed);
    ctx.out.set_resp(resp);
}

/// Redis's ACLAuthenticateUser: on success the connection becomes the
/// user's; a failure is recorded in the ACL log (the object is the command
/// name as the client sent it).
fn authenticate(ctx: &mut Ctx, cmd: &[u8], user: &[u8], pass: &[u8]) -> Result<(), Error> {
    match ctx.engine.acl().authenticate(user, pass) {
        Some(cell) => {
            set_user(ctx, cell);
            ctx.client.authenticated = true;
            Ok(())
        }
        None => {
            let context = if ctx.client.multi.is_some() {
                crate::acl::LogContext::Multi
            } else {
                crate::acl::LogContext::Toplevel
            };
            ctx.engine.acl_log(
                &ctx.client.info,
                crate::acl::LogReason::Auth,
                context,
                cmd,
                user.to_vec(),
            );
            Err(WRONGPASS)
        }
    }
}

/// Binds the connection to an ACL user.
pub(crate) fn set_user(ctx: &mut Ctx, cell: std::sync::Arc<crate::acl::UserCell>) {
    *ctx.client.info.user.lock() = cell.name.as_slice().into();
    ctx.client.user = Some(crate::acl::ClientUser::new(cell));
}

const WRONGPASS: Error =
    Error::constant("WRONGPASS invalid username-password pair or user is disabled.");

fn auth_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(Error::SYNTAX);
    }
    let (user, pass): (&[u8], &[u8]) = if args.len() == 2 {
        (b"default", args[1])
    } else {
        (args[1], args[2])
    };
    if args.len() == 2 && ctx.engine.acl().default_user().rules().nopass() {
        return Err(Error::err(
            "AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        ));
    }
    authenticate(ctx, args[0], user, pass)?;
    ctx.out.ok();
    Ok(())
}

/// Redis accepts client names of printable characters without spaces.
fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

fn set_name(ctx: &mut Ctx, name: &[u8]) -> Result<(), Error> {
    if !valid_client_name(name) {
        return Err(Error::err(
            "Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    *ctx.client.info.name.lock() = if name.is_empty() {
        None
    } else {
        Some(name.to_vec())
    };
    Ok(())
}

/// HELLO's arguments (Redis's helloCommand): the protocol version, then
/// AUTH and SETNAME, each any number of times, the last one counting.
struct HelloOptions<'a> {
    resp: Option<u8>,
    auth: Option<(&'a [u8], &'a [u8])>,
    name: Option<&'a [u8]>,
}

fn parse_hello<'a>(args: &[&'a [u8]]) -> Result<HelloOptions<'a>, Error> {
    let mut o = HelloOptions {
        resp: None,
        auth: None,
        name: None,
    };
    let mut a = Args::new(&args[1..]);
    if !a.is_empty() {
        let ver = parse_i64(a.next_arg()?)
            .ok_or_else(|| Error::err("Protocol version is not an integer or out of range"))?;
        if !(2..=3).contains(&ver) {
            return Err(Error::constant("NOPROTO unsupported protocol version"));
        }
        o.resp = Some(ver as u8);
    }
    while let Some(opt) = a.peek() {
        let syntax_error = || {
            Error::concat(&[
                b"ERR Syntax error in HELLO option '",
                printf_s(opt, usize::MAX),
                b"'",
            ])
        };
        if let Some(user) = a.option("AUTH") {
            // AUTH without both its values is the same syntax error.
            let pass = a.next_arg().map_err(|_| syntax_error())?;
            o.auth = Some((user, pass));
        } else if let Some(name) = a.option("SETNAME") {
            o.name = Some(name);
        } else {
            return Err(syntax_error());
        }
    }
    Ok(o)
}

fn hello_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let o = parse_hello(args)?;
    if let Some((user, pass)) = o.auth {
        authenticate(ctx, args[0], user, pass)?;
    }
    if !ctx.client.authenticated {
        return Err(Error::constant("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(n) = o.name {
        set_name(ctx, n)?;
    }
    let resp = o.resp.unwrap_or(ctx.client.resp);
    set_resp(ctx, resp);
    ctx.out.map(7);
    ctx.out.bulk(b"server");
    ctx.out.bulk(b"redis");
    ctx.out.bulk(b"version");
    ctx.out.bulk(crate::REDIS_VERSION.as_bytes());
    ctx.out.bulk(b"proto");
    ctx.out.int(resp as i64);
    ctx.out.bulk(b"id");
    ctx.out.int(ctx.client.id() as i64);
    ctx.out.bulk(b"mode");
    ctx.out.bulk(b"standalone");
    ctx.out.bulk(b"role");
    ctx.out.bulk(b"master");
    ctx.out.bulk(b"modules");
    ctx.out.array(0);
    Ok(())
}

/// Redis's monitorCommand: refused inside MULTI and scripts; a client
/// already monitoring stays as it is.
fn monitor_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.in_multi || ctx.in_script {
        return Err(Error::err("MONITOR isn't allowed for DENY BLOCKING client"));
    }
    if !ctx.client.info.monitor.swap(true, Ordering::Relaxed) {
        ctx.engine.monitors().add(&ctx.client.info);
    }
    ctx.out.ok();
    Ok(())
}

// ---------------------------------------------------------------------------
// CLIENT

fn client_id(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.client.id() as i64);
    Ok(())
}

fn client_setname(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    set_name(ctx, args[2])?;
    ctx.out.ok();
    Ok(())
}

fn client_getname(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    match ctx.client.info.name() {
        Some(n) => ctx.out.bulk(&n),
        None => ctx.out.null(),
    }
    Ok(())
}

/// A client type, the value of CLIENT LIST TYPE and CLIENT KILL TYPE
/// (Redis's getClientTypeByName).
#[derive(Clone, Copy)]
enum ClientType {
    Normal,
    PubSub,
    /// REPLICA or SLAVE: this engine's replicas.
    Replica,
    /// MASTER: the link to this engine's primary.
    Master,
}

impl ClientType {
    /// Takes the type after TYPE; one missing is a syntax error.
    fn take(a: &mut Args) -> Result<ClientType, Error> {
        let name = a.peek().ok_or(Error::SYNTAX)?;
        if a.flag("NORMAL") {
            Ok(ClientType::Normal)
        } else if a.flag("PUBSUB") {
            Ok(ClientType::PubSub)
        } else if a.flag("MASTER") {
            Ok(ClientType::Master)
        } else if a.flag("REPLICA") || a.flag("SLAVE") {
            Ok(ClientType::Replica)
        } else {
            Err(Error::concat(&[
                b"ERR Unknown client type '",
                printf_s(name, usize::MAX),
                b"'",
            ]))
        }
    }

    /// Whether a client is of this type (Redis's getClientType: a
    /// replica or master client is that whatever it subscribes to).
    fn matches(self, c: &crate::client::ClientInfo) -> bool {
        let kind = c.repl_kind.load(std::sync::atomic::Ordering::Relaxed);
        match self {
            ClientType::Normal => kind == crate::client::repl_kind::NONE && !c.subscriptions.any(),
            ClientType::PubSub => kind == crate::client::repl_kind::NONE && c.subscriptions.any(),
            ClientType::Replica => kind == crate::client::repl_kind::REPLICA,
            ClientType::Master => kind == crate::client::repl_kind::MASTER,
        }
    }
}

/// CLIENT LIST's filters. TYPE and ID may repeat and combine.
#[derive(Default)]
struct ClientListOptions {
    /// Only these clients.
    ids: Option<Vec<u64>>,
    /// Only the clients of this type.
    client_type: Option<ClientType>,
}

fn parse_client_list(args: &[&[u8]]) -> Result<ClientListOptions, Error> {
    let mut o = ClientListOptions::default();
    let mut a = Args::new(&args[2..]);
    let parse_id = |id: &[u8]| {
        parse_i64(id)
            .filter(|v| *v > 0)
            .map(|v| v as u64)
            .ok_or_else(|| Error::err("Invalid client ID"))
    };
    while !a.is_empty() {
        if a.flag("TYPE") {
            o.client_type = Some(ClientType::take(&mut a)?);
        } else if let Some(first) = a.option("ID") {
            // The IDs run to the end of the command.
            let mut ids = vec![parse_id(first)?];
            while !a.is_empty() {
                ids.push(parse_id(a.next_arg()?)?);
            }
            o.ids = Some(ids);
        } else {
            return Err(Error::SYNTAX);
        }
    }
    Ok(o)
}

fn client_list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let ClientListOptions { ids, client_type } = parse_client_list(args)?;
    // A transaction or a script may hold shards another client's command
    // waits for: no waiting then.
    if !ctx.in_multi && !ctx.in_script {
        crate::client::await_turns(&ctx.engine.clients().all(), ctx.client.id());
    }
    let now = now_ms();
    let mut text = String::new();
    for info in ctx.engine.clients().all() {
        if ids.as_ref().is_some_and(|ids| !ids.contains(&info.id))
            || client_type.is_some_and(|t| !t.matches(&info))
            // Closed already, only not yet gone (Redis frees such clients
            // before it serves the next command).
            || (info.is_killed() && info.id != ctx.client.id())
        {
            continue;
        }
        text.push_str(&info.line(now, ctx.engine.clients().command_names()));
        text.push('\n');
    }
    ctx.out.verbatim(text.as_bytes(), "txt");
    Ok(())
}

fn client_info(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let mut line = ctx
        .client
        .info
        .line(now_ms(), ctx.engine.clients().command_names());
    line.push('\n');
    ctx.out.verbatim(line.as_bytes(), "txt");
    Ok(())
}

/// CLIENT KILL's filters, the new form: a client is killed when it
/// matches every one given. Each may repeat, the last one counting.
struct KillFilters {
    id: Option<u64>,
    addr: Option<String>,
    laddr: Option<String>,
    user: Option<Vec<u8>>,
    client_type: Option<ClientType>,
    /// Whether the calling client is spared (SKIPME yes, the default).
    skipme: bool,
}

fn parse_client_kill(ctx: &Ctx, args: &[&[u8]]) -> Result<KillFilters, Error> {
    let mut f = KillFilters {
        id: None,
        addr: None,
        laddr: None,
        user: None,
        client_type: None,
        skipme: true,
    };
    let mut a = Args::new(&args[2..]);
    while !a.is_empty() {
        if let Some(id) = a.option("ID") {
            let id = parse_i64(id)
                .filter(|v| *v > 0)
                .ok_or_else(|| Error::err("client-id should be greater than 0"))?;
            f.id = Some(id as u64);
        } else if a.flag("TYPE") {
            f.client_type = Some(ClientType::take(&mut a)?);
        } else if let Some(user) = a.option("USER") {
            if ctx.engine.acl().user(user).is_none() {
                return Err(Error::concat(&[
                    b"ERR No such user '",
                    printf_s(user, usize::MAX),
                    b"'",
                ]));
            }
            f.user = Some(user.to_vec());
        } else if let Some(addr) = a.option("ADDR") {
            f.addr = Some(String::from_utf8_lossy(addr).into_owned());
        } else if let Some(laddr) = a.option("LADDR") {
            f.laddr = Some(String::from_utf8_lossy(laddr).into_owned());
        } else if let Some(yes_no) = a.option("SKIPME") {
            f.skipme = match yes_no.to_ascii_lowercase().as_slice() {
                b"yes" => true,
                b"no" => false,
                _ => return Err(Error::SYNTAX),
            };
        } else {
            // An unknown filter, or one without its value.
            return Err(Error::SYNTAX);
        }
    }
    Ok(f)
}

fn client_kill(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let me = ctx.client.id();
    // Old form: CLIENT KILL addr:port.
    if args.len() == 3 {
        let addr = String::from_utf8_lossy(args[2]).into_owned();
        let target = ctx
            .engine
            .clients()
            .all()
            .into_iter()
            .find(|c| *c.addr == *addr);
        return match target {
            Some(c) => {
                if c.id == me {
                    ctx.client.close_after_reply = true;
                } else {
                    ctx.engine.clients().kill(&c);
                }
                ctx.out.ok();
                Ok(())
            }
            None => Err(Error::err("No such client")),
        };
    }
    let f = parse_client_kill(ctx, args)?;
    let mut killed = 0;
    for c in ctx.engine.clients().all() {
        if f.id.is_some_and(|i| i != c.id)
            || f.addr.as_ref().is_some_and(|a| **a != *c.addr)
            || f.laddr.as_ref().is_some_and(|a| **a != *c.laddr)
            || f.user.as_ref().is_some_and(|u| **u != **c.user.lock())
            || f.client_type.is_some_and(|t| !t.matches(&c))
        {
            continue;
        }
        if c.id == me {
            if f.skipme {
                continue;
            }
            ctx.client.close_after_reply = true;
        } else {
            ctx.engine.clients().kill(&c);
        }
        killed += 1;
    }
    ctx.out.int(killed);
    Ok(())
}

fn client_reply(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut a = Args::new(&args[2..]);
    let mode = if a.flag("ON") {
        ReplyMode::On
    } else if a.flag("OFF") {
        ReplyMode::Off
    } else if a.flag("SKIP") {
        ReplyMode::SkipNext
    } else {
        return Err(Error::SYNTAX);
    };
    match mode {
        ReplyMode::On => {
            ctx.client.reply_mode = ReplyMode::On;
            ctx.out.ok();
        }
        // SKIP while replies are off leaves them off.
        ReplyMode::SkipNext if ctx.client.reply_mode == ReplyMode::Off => {}
        mode => ctx.client.reply_mode = mode,
    }
    Ok(())
}

fn client_no_evict(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut a = Args::new(&args[2..]);
    let on = if a.flag("ON") {
        true
    } else if a.flag("OFF") {
        false
    } else {
        return Err(Error::SYNTAX);
    };
    ctx.client.info.no_evict.store(on, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

/// CLIENT NO-TOUCH ON|OFF (Redis 7.2): while on, the client's commands
/// leave the keys' access time (LRU/LFU) as it was, TOUCH excepted.
fn client_no_touch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut a = Args::new(&args[2..]);
    let on = if a.flag("ON") {
        true
    } else if a.flag("OFF") {
        false
    } else {
        return Err(Error::SYNTAX);
    };
    ctx.client.info.no_touch.store(on, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

/// CLIENT SETINFO LIB-NAME|LIB-VER value (Redis 7.2's
/// clientSetinfoCommand): the client library's name or version, shown by
/// CLIENT LIST and INFO; an empty value clears it.
fn client_setinfo(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut a = Args::new(&args[2..]);
    let (is_name, value) = match a.option_of(&["LIB-NAME", "LIB-VER"]) {
        Some((i, v)) => (i == 0, v),
        None => {
            return Err(Error::concat(&[
                b"ERR Unrecognized option '",
                crate::error::printf_s(args[2], usize::MAX),
                b"'",
            ]))
        }
    };
    // Printable ASCII without spaces, so that CLIENT LIST splits on them
    // (validateClientAttr).
    if value.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(Error::concat(&[
            b"ERR ",
            crate::error::printf_s(args[2], usize::MAX),
            b" cannot contain spaces, newlines or special characters.",
        ]));
    }
    let value = String::from_utf8_lossy(value).into_owned();
    let mut lib = ctx.client.info.lib.lock();
    let entry = lib.get_or_insert_with(Default::default);
    if is_name {
        entry.name = value;
    } else {
        entry.version = value;
    }
    if entry.name.is_empty() && entry.version.is_empty() {
        *lib = None;
    }
    drop(lib);
    ctx.out.ok();
    Ok(())
}

/// CLIENT UNBLOCK holds every shard (its spec says ALL_SHARDS), so it can
/// end the target's wait on the spot, exclusively of serving and timeout.
fn client_unblock(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 4 {
        return Err(super::help::subcommand_syntax_error(args, "CLIENT"));
    }
    // The reason is checked before the id, as Redis does.
    let mut a = Args::new(&args[3..]);
    let with_error = if a.is_empty() || a.flag("TIMEOUT") {
        false
    } else if a.flag("ERROR") {
        true
    } else {
        return Err(Error::err(
            "CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
        ));
    };
    let id = arg_i64(args[2])?;
    let unblocked = match ctx.engine.clients().get(id as u64) {
        Some(c) => ctx
            .engine
            .unblock_client(ctx.locks, ctx.stats, &c, with_error),
        None => false,
    };
    ctx.out.int(unblocked as i64);
    Ok(())
}

/// CLIENT PAUSE timeout [WRITE|ALL] (Redis's clientCommand "pause").
fn client_pause(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let timeout = parse_i64(args[2])
        .ok_or_else(|| Error::err("timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Error::err("timeout is negative"));
    }
    let mut a = Args::new(&args[3..]);
    let mode = if a.is_empty() || a.flag("ALL") {
        crate::pause::ALL
    } else if a.flag("WRITE") {
        crate::pause::WRITE
    } else {
        return Err(Error::err("CLIENT PAUSE mode must be WRITE or ALL"));
    };
    let now = now_ms();
    ctx.engine
        .pause()
        .pause(mode, now.saturating_add(timeout as u64), now);
    ctx.out.ok();
    Ok(())
}

fn client_unpause(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.engine.pause().unpause();
    ctx.out.ok();
    Ok(())
}

/// CLIENT TRACKING's request: on (with its options) or off.
pub enum TrackingRequest {
    On(crate::tracking::Options),
    Off,
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX prefix...] [BCAST]
/// [OPTIN] [OPTOUT] [NOLOOP]`, read as Redis's clientCommand reads it:
/// the options first (a redirection to a client that does not exist is
/// refused there), then ON or OFF.
pub fn parse_tracking(ctx: &Ctx, args: &[&[u8]]) -> Result<TrackingRequest, Error> {
    let mut opts = crate::tracking::Options::default();
    let mut a = Args::new(&args[3..]);
    while !a.is_empty() {
        if let Some(id) = a.option("REDIRECT") {
            if opts.redirect != 0 {
                return Err(Error::err(
                    "A client can only redirect to a single other client",
                ));
            }
            let id = parse_i64(id).ok_or(Error::NOT_INTEGER)?;
            if id <= 0 || ctx.engine.clients().get(id as u64).is_none() {
                return Err(Error::err(
                    "The client ID you want redirect to does not exist",
                ));
            }
            opts.redirect = id as u64;
        } else if let Some(p) = a.option("PREFIX") {
            opts.prefixes.push(p.to_vec());
        } else if a.flag("BCAST") {
            opts.bcast = true;
        } else if a.flag("OPTIN") {
            opts.optin = true;
        } else if a.flag("OPTOUT") {
            opts.optout = true;
        } else if a.flag("NOLOOP") {
            opts.noloop = true;
        } else {
            return Err(Error::SYNTAX);
        }
    }
    let mut status = Args::new(&args[2..3]);
    if status.flag("ON") {
        Ok(TrackingRequest::On(opts))
    } else if status.flag("OFF") {
        Ok(TrackingRequest::Off)
    } else {
        Err(Error::SYNTAX)
    }
}

/// Whether the new options fit each other and the client's tracking
/// state, with Redis's errors in its order.
fn check_tracking(ctx: &Ctx, opts: &crate::tracking::Options) -> Result<(), Error> {
    use crate::tracking::bits;
    let word = ctx.client.info.tracking.load(Ordering::Relaxed);
    if !opts.bcast && !opts.prefixes.is_empty() {
        return Err(Error::err(
            "PREFIX option requires BCAST mode to be enabled",
        ));
    }
    if word & bits::ON != 0 && (word & bits::BCAST != 0) != opts.bcast {
        return Err(Error::err("You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if opts.bcast && (opts.optin || opts.optout) {
        return Err(Error::err("OPTIN and OPTOUT are not compatible with BCAST"));
    }
    if opts.optin && opts.optout {
        return Err(Error::err(
            "You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if (opts.optin && word & bits::OPTOUT != 0) || (opts.optout && word & bits::OPTIN != 0) {
        return Err(Error::err("You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if opts.bcast {
        // Redis's checkPrefixCollisionsOrReply: no two prefixes of a
        // client may both match one key.
        let overlap = |a: &[u8], b: &[u8]| {
            let n = a.len().min(b.len());
            a[..n] == b[..n]
        };
        let existing: &[Vec<u8>] = match ctx.client.tracking.as_ref() {
            Some(t) if word & bits::ON != 0 => &t.prefixes,
            _ => &[],
        };
        let tail = b"'. Prefixes for a single client must not overlap.";
        for (i, p) in opts.prefixes.iter().enumerate() {
            if let Some(old) = existing.iter().find(|old| overlap(old, p)) {
                return Err(Error::concat(&[
                    b"ERR Prefix '",
                    printf_s(p, usize::MAX),
                    b"' overlaps with an existing prefix '",
                    printf_s(old, usize::MAX),
                    tail,
                ]));
            }
            if let Some(other) = opts.prefixes[i + 1..].iter().find(|o| overlap(p, o)) {
                return Err(Error::concat(&[
                    b"ERR Prefix '",
                    printf_s(p, usize::MAX),
                    b"' overlaps with another provided prefix '",
                    printf_s(other, usize::MAX),
                    tail,
                ]));
            }
        }
    }
    Ok(())
}

fn client_tracking(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match parse_tracking(ctx, args)? {
        TrackingRequest::On(opts) => {
            check_tracking(ctx, &opts)?;
            ctx.engine.enable_tracking(ctx.client, &opts);
        }
        TrackingRequest::Off => ctx.engine.disable_tracking(ctx.client),
    }
    ctx.out.ok();
    Ok(())
}

/// CLIENT CACHING YES|NO: whether the next command's keys are tracked in
/// OPTIN (yes) or OPTOUT (no) mode.
fn client_caching(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    use crate::tracking::bits;
    let word = ctx.client.info.tracking.load(Ordering::Relaxed);
    let choice = Args::new(&args[2..]).flag_of(&["YES", "NO"]);
    if word & bits::ON == 0 {
        return Err(Error::err("CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"));
    }
    if choice == Some(0) {
        if word & bits::OPTIN == 0 {
            return Err(Error::err(
                "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if choice == Some(1) {
        if word & bits::OPTOUT == 0 {
            return Err(Error::err(
                "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(Error::SYNTAX);
    }
    if let Some(t) = ctx.client.tracking.as_mut() {
        t.caching = true;
    }
    ctx.out.ok();
    Ok(())
}

/// The id invalidations are redirected to (0: none), -1 when tracking is
/// off.
fn tracking_redirect(ctx: &Ctx) -> i64 {
    use crate::tracking::bits;
    let word = ctx.client.info.tracking.load(Ordering::Relaxed);
    if word & bits::ON != 0 {
        (word & bits::REDIRECT) as i64
    } else {
        -1
    }
}

fn client_getredir(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let id = tracking_redirect(ctx);
    ctx.out.int(id);
    Ok(())
}

fn client_trackinginfo(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    use crate::tracking::bits;
    let word = ctx.client.info.tracking.load(Ordering::Relaxed);
    let caching = ctx.client.tracking.as_ref().is_some_and(|t| t.caching);
    let mut flags: Vec<&str> = vec![if word & bits::ON != 0 { "on" } else { "off" }];
    if word & bits::BCAST != 0 {
        flags.push("bcast");
    }
    if word & bits::OPTIN != 0 {
        flags.push("optin");
        if caching {
            flags.push("caching-yes");
        }
    }
    if word & bits::OPTOUT != 0 {
        flags.push("optout");
        if caching {
            flags.push("caching-no");
        }
    }
    if word & bits::NOLOOP != 0 {
        flags.push("noloop");
    }
    if word & bits::BROKEN_REDIR != 0 {
        flags.push("broken_redirect");
    }
    let redirect = tracking_redirect(ctx);
    ctx.out.map(3);
    ctx.out.bulk(b"flags");
    ctx.out.set(flags.len());
    for f in flags {
        ctx.out.bulk(f.as_bytes());
    }
    ctx.out.bulk(b"redirect");
    ctx.out.int(redirect);
    ctx.out.bulk(b"prefixes");
    let prefixes: &[Vec<u8>] = match ctx.client.tracking.as_ref() {
        Some(t) if word & bits::ON != 0 => &t.prefixes,
        _ => &[],
    };
    ctx.out.array(prefixes.len());
    for p in prefixes {
        ctx.out.bulk(p);
    }
    Ok(())
}

fn client_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "CLIENT",
        &[
            "CACHING (YES|NO)",
            "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the client ID we are redirecting to when tracking is enabled.",
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "    * ID <client-id>",
            "      Kill connections by client id.",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    Unblock the specified blocked client.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Suspend all, or just write, clients for <timeout> milliseconds.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "SETINFO <option> <value>",
            "    Set client meta attr. Options are:",
            "    * LIB-NAME: the client lib name.",
            "    * LIB-VER: the client lib version.",
            "UNPAUSE",
            "    Stop the current client pause, resuming traffic.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "TRACKINGINFO",
            "    Report tracking status for the current connection.",
            "NO-EVICT (ON|OFF)",
            "    Protect current client connection from eviction.",
            "NO-TOUCH (ON|OFF)",
            "    Will not touch LRU/LFU stats when this mode is on.",
        ],
    );
    Ok(())
}

const CONN: u32 = flag::NOSCRIPT | flag::LOADING | flag::STALE | flag::KEEPS_CACHING;

static CLIENT_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "id",
        arity: 2,
        flags: CONN,
        group: Group::Connection,
        since: "5.0.0",
        summary: "Returns the client ID for the current connection",
        complexity: "O(1)",
        handler: client_id,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "setname",
        arity: 3,
        flags: CONN,
        group: Group::Connection,
        since: "2.6.9",
        summary: "Set the current connection name",
        complexity: "O(1)",
        syntax: "connection-name:string",
        handler: client_setname,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getname",
        arity: 2,
        flags: CONN,
        group: Group::Connection,
        since: "2.6.9",
        summary: "Get the current connection name",
        complexity: "O(1)",
        handler: client_getname,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "list",
        arity: -2,
        flags: flag::ADMIN | CONN | flag::AFTER_READY,
        group: Group::Connection,
        since: "2.4.0",
        summary: "Get the list of client connections",
        complexity: "O(N) where N is the number of client connections",
        history: &[("2.8.12", "Added unique client `id` field."), ("5.0.0", "Added optional `TYPE` filter."), ("6.0.0", "Added `user` field."), ("6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."), ("7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."), ("7.0.3", "Added `ssub` field.")],
        syntax: "[TYPE normal_master_replica_pubsub:oneof(NORMAL|MASTER|REPLICA|PUBSUB)]{since:5.0.0} [ID id:block(client-id:integer...)]{since:6.2.0}",
        tips: &["nondeterministic_output"],
        handler: client_list,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "info",
        arity: 2,
        flags: CONN,
        group: Group::Connection,
        since: "6.2.0",
        summary: "Returns information about the current client connection.",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        handler: client_info,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "kill",
        arity: -3,
        flags: flag::ADMIN | CONN,
        group: Group::Connection,
        since: "2.4.0",
        summary: "Kill the connection of a client",
        complexity: "O(N) where N is the number of client connections",
        history: &[("2.8.12", "Added new filter format."), ("2.8.12", "`ID` option."), ("3.2.0", "Added `master` type in for `TYPE` option."), ("5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."), ("6.2.0", "`LADDR` option.")],
        syntax: "filter:oneof(ip:port:string{deprecated_since:2.8.12}|new-format:oneof([ID client-id:integer]{since:2.8.12}|[TYPE normal_master_slave_pubsub:oneof(NORMAL|MASTER{since:3.2.0}|SLAVE|REPLICA{since:5.0.0}|PUBSUB)]{since:2.8.12}|[USER username:string]|[ADDR ip:port:string]|[LADDR ip:port:string]{since:6.2.0}|[SKIPME yes/no:string])...)",
        handler: client_kill,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "reply",
        arity: 3,
        flags: CONN,
        group: Group::Connection,
        since: "3.2.0",
        summary: "Instruct the server whether to reply to commands",
        complexity: "O(1)",
        syntax: "on_off_skip:oneof(ON|OFF|SKIP)",
        handler: client_reply,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "no-evict",
        arity: 3,
        flags: flag::ADMIN | CONN,
        group: Group::Connection,
        since: "7.0.0",
        summary: "Set client eviction mode for the current connection",
        complexity: "O(1)",
        syntax: "enabled:oneof(ON|OFF)",
        handler: client_no_evict,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "no-touch",
        arity: 3,
        flags: CONN,
        group: Group::Connection,
        since: "7.2.0",
        summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
        syntax: "ON|OFF",
        handler: client_no_touch,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "setinfo",
        arity: 4,
        flags: CONN,
        group: Group::Connection,
        since: "7.2.0",
        summary: "Sets information specific to the client or connection.",
        syntax: "LIB-NAME libname:string|LIB-VER libver:string",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        handler: client_setinfo,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "unblock",
        arity: -3,
        flags: flag::ADMIN | CONN | flag::ALL_SHARDS,
        group: Group::Connection,
        since: "5.0.0",
        summary: "Unblock a client blocked in a blocking command from a different connection",
        complexity: "O(log N) where N is the number of client connections",
        syntax: "client-id:integer [timeout_error:oneof(TIMEOUT|ERROR)]",
        handler: client_unblock,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "pause",
        arity: -3,
        flags: flag::ADMIN | CONN,
        group: Group::Connection,
        since: "2.9.50",
        summary: "Stop processing commands from clients for some time",
        complexity: "O(1)",
        history: &[("6.2.0", "`CLIENT PAUSE WRITE` mode added along with the `mode` option.")],
        syntax: "timeout:integer [mode:oneof(WRITE|ALL)]{since:6.2.0}",
        handler: client_pause,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "unpause",
        arity: 2,
        flags: flag::ADMIN | CONN,
        group: Group::Connection,
        since: "6.2.0",
        summary: "Resume processing of clients that were paused",
        complexity: "O(N) Where N is the number of paused clients",
        handler: client_unpause,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE | flag::KEEPS_CACHING,
        group: Group::Connection,
        since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: client_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "tracking",
        arity: -3,
        flags: CONN,
        group: Group::Connection,
        since: "6.0.0",
        summary: "Enable or disable server assisted client side caching support",
        complexity: "O(1). Some options may introduce additional complexity.",
        syntax: "status:oneof(ON|OFF) [REDIRECT client-id:integer] [PREFIX prefix:string...]{multiple_token} [BCAST] [OPTIN] [OPTOUT] [NOLOOP]",
        handler: client_tracking,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "caching",
        arity: 3,
        flags: CONN,
        group: Group::Connection,
        since: "6.0.0",
        summary: "Instruct the server about tracking or not keys in the next request",
        complexity: "O(1)",
        syntax: "mode:oneof(YES|NO)",
        handler: client_caching,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getredir",
        arity: 2,
        flags: CONN,
        group: Group::Connection,
        since: "6.0.0",
        summary: "Get tracking notifications redirection client ID if any",
        complexity: "O(1)",
        handler: client_getredir,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "trackinginfo",
        arity: 2,
        flags: CONN,
        group: Group::Connection,
        since: "6.2.0",
        summary: "Return information about server assisted client side caching for the current connection",
        complexity: "O(1)",
        handler: client_trackinginfo,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "ping",
        arity: -1,
        flags: flag::FAST | flag::SUBSCRIBED_OK | flag::DISK_ERROR_REFUSED,
        group: Group::Connection,
        since: "1.0.0",
        summary: "Ping the server",
        complexity: "O(1)",
        syntax: "[message:string]",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        handler: ping_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "echo",
        arity: 2,
        flags: flag::LOADING | flag::STALE | flag::FAST,
        group: Group::Connection,
        since: "1.0.0",
        summary: "Echo the given string",
        complexity: "O(1)",
        syntax: "message:string",
        handler: echo_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "select",
        arity: 2,
        flags: flag::LOADING | flag::STALE | flag::FAST,
        group: Group::Connection,
        since: "1.0.0",
        summary: "Change the selected database for the current connection",
        complexity: "O(1)",
        syntax: "index:integer",
        handler: select_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "quit",
        arity: -1,
        flags: flag::ALLOW_BUSY
            | flag::NOSCRIPT
            | flag::LOADING
            | flag::STALE
            | flag::FAST
            | flag::NO_AUTH
            | flag::TX_CONTROL
            | flag::MULTI_OOM_OK
            | flag::SUBSCRIBED_OK,
        group: Group::Connection,
        since: "1.0.0",
        summary: "Close the connection",
        complexity: "O(1)",
        handler: quit_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "reset",
        arity: 1,
        flags: flag::NOSCRIPT
            | flag::LOADING
            | flag::STALE
            | flag::FAST
            | flag::NO_AUTH
            | flag::ALLOW_BUSY
            | flag::TX_CONTROL
            | flag::MULTI_OOM_OK
            | flag::SUBSCRIBED_OK,
        group: Group::Connection,
        since: "6.2.0",
        summary: "Reset the connection",
        complexity: "O(1)",
        handler: reset_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hello",
        arity: -1,
        flags: flag::NOSCRIPT
            | flag::LOADING
            | flag::STALE
            | flag::FAST
            | flag::NO_AUTH
            | flag::ALLOW_BUSY,
        group: Group::Connection,
        since: "6.0.0",
        summary: "Handshake with Redis",
        complexity: "O(1)",
        history: &[("6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context.")],
        syntax: "[arguments:block(protover:integer [AUTH username_password:block(username:string password:string)] [SETNAME clientname:string])]",
        handler: hello_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "auth",
        arity: -2,
        flags: flag::NOSCRIPT
            | flag::LOADING
            | flag::STALE
            | flag::FAST
            | flag::NO_AUTH
            | flag::ALLOW_BUSY,
        group: Group::Connection,
        since: "1.0.0",
        summary: "Authenticate to the server",
        complexity: "O(N) where N is the number of passwords defined for the user",
        history: &[("6.0.0", "Added ACL style (username and password).")],
        syntax: "[username:string]{since:6.0.0} password:string",
        handler: auth_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "monitor",
        arity: 1,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "1.0.0",
        summary: "Listen for all requests received by the server in real time",
        complexity: "",
        history: &[],
        handler: monitor_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "client",
        arity: -2,
        // Internal only (COMMAND shows no flags for the container).
        flags: flag::KEEPS_CACHING,
        group: Group::Connection,
        subcommands: CLIENT_SUBCOMMANDS,
        since: "2.4.0",
        summary: "A container for client connection commands",
        complexity: "Depends on subcommand.",
        ..CommandSpec::DEFAULT
    },
];
