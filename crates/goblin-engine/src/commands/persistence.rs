//! Persistence commands: SAVE, BGSAVE, LASTSAVE, BGREWRITEAOF (Redis's
//! rdb.c and aof.c) and DUMP / RESTORE (cluster.c). The machinery lives in
//! `persist`; these parse, call it and reply.

use crate::command::args::Args;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::{AccessPolicy, Object};
use crate::persist::{self, rdb, JobKind};
use crate::util::number::{arg_i64, parse_i64};
use crate::Error;
use std::sync::atomic::Ordering;

const BGSAVE_RUNNING: Error = Error::constant("ERR Background save already in progress");

fn save_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let engine = ctx.engine;
    if engine.persist().running() == Some(JobKind::Rdb) {
        return Err(BGSAVE_RUNNING);
    }
    engine.persist().rdb_saves.fetch_add(1, Ordering::Relaxed);
    persist::save_locked(engine, ctx.locks).map_err(|_| Error::constant("ERR"))?;
    ctx.out.ok();
    Ok(())
}

fn bgsave_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let schedule = match args {
        [_] => false,
        [_, s] if s.eq_ignore_ascii_case(b"schedule") => true,
        _ => return Err(Error::SYNTAX),
    };
    let p = &ctx.engine.persist();
    match p.running() {
        Some(JobKind::Rdb) => return Err(BGSAVE_RUNNING),
        Some(JobKind::AofRewrite) => {
            if schedule || ctx.in_multi {
                p.bgsave_scheduled.store(true, Ordering::Relaxed);
                ctx.out.simple("Background saving scheduled");
                return Ok(());
            }
            return Err(Error::err(
                "Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.",
            ));
        }
        None => {}
    }
    if ctx.in_multi || !ctx.locks.holds_all() {
        // Starting needs every shard; inside a transaction they are not
        // all held, so the cron starts it (Redis schedules it too).
        p.bgsave_scheduled.store(true, Ordering::Relaxed);
        ctx.out.simple("Background saving scheduled");
        return Ok(());
    }
    let engine = ctx.engine.arc();
    persist::start_job(&engine, ctx.locks, JobKind::Rdb).map_err(|_| Error::constant("ERR"))?;
    ctx.out.simple("Background saving started");
    Ok(())
}

fn bgrewriteaof_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let p = &ctx.engine.persist();
    match p.running() {
        Some(JobKind::AofRewrite) => {
            return Err(Error::err(
                "Background append only file rewriting already in progress",
            ))
        }
        Some(JobKind::Rdb) => {
            p.aof_rewrite_scheduled.store(true, Ordering::Relaxed);
            p.aof_rewrite_failures.store(0, Ordering::Relaxed);
            ctx.out
                .simple("Background append only file rewriting scheduled");
            return Ok(());
        }
        None => {}
    }
    if ctx.in_multi || !ctx.locks.holds_all() {
        p.aof_rewrite_scheduled.store(true, Ordering::Relaxed);
        ctx.out
            .simple("Background append only file rewriting scheduled");
        return Ok(());
    }
    let engine = ctx.engine.arc();
    persist::start_job(&engine, ctx.locks, JobKind::AofRewrite).map_err(|_| {
        Error::err("Can't execute an AOF background rewriting. Please check the server logs for more information.")
    })?;
    ctx.out
        .simple("Background append only file rewriting started");
    Ok(())
}

fn lastsave_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int((ctx.engine.last_save_ms() / 1000) as i64);
    Ok(())
}

// ---------------------------------------------------------------------------
// DUMP / RESTORE

fn dump_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let opts = rdb::SaveOptions::from_config(ctx.engine.config());
    let payload = match ctx.lookup_read(args[1]) {
        Some(obj) => rdb::dump_payload(&obj.value, &opts),
        None => {
            ctx.out.null();
            return Ok(());
        }
    };
    ctx.out.bulk(&payload);
    Ok(())
}

/// RESTORE's options.
#[derive(Default)]
struct RestoreOptions {
    replace: bool,
    absttl: bool,
    idle: Option<i64>,
    freq: Option<i64>,
}

/// RESTORE's options, after the key, the TTL and the payload (Redis's
/// restoreCommand): IDLETIME and FREQ exclude each other, the second one
/// given being a syntax error.
fn parse_restore(args: &[&[u8]]) -> Result<RestoreOptions, Error> {
    let mut o = RestoreOptions::default();
    let mut a = Args::new(&args[4..]);
    while !a.is_empty() {
        if a.flag("REPLACE") {
            o.replace = true;
        } else if a.flag("ABSTTL") {
            o.absttl = true;
        } else if let Some(v) = a.option("IDLETIME") {
            if o.freq.is_some() {
                return Err(Error::SYNTAX);
            }
            let v = arg_i64(v)?;
            if v < 0 {
                return Err(Error::err("Invalid IDLETIME value, must be >= 0"));
            }
            o.idle = Some(v);
        } else if let Some(v) = a.option("FREQ") {
            if o.idle.is_some() {
                return Err(Error::SYNTAX);
            }
            let v = arg_i64(v)?;
            if !(0..=255).contains(&v) {
                return Err(Error::err("Invalid FREQ value, must be >= 0 and <= 255"));
            }
            o.freq = Some(v);
        } else {
            return Err(Error::SYNTAX);
        }
    }
    Ok(o)
}

fn restore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let o = parse_restore(args)?;
    let key = args[1];
    if !o.replace && ctx.lookup_write(key).is_some() {
        return Err(Error::constant("BUSYKEY Target key name already exists."));
    }
    let ttl = parse_i64(args[2]).ok_or(Error::NOT_INTEGER)?;
    if ttl < 0 {
        return Err(Error::err("Invalid TTL value, must be >= 0"));
    }
    let payload = args[3];
    let skip_checksum = ctx.engine.persist().skip_checksum.load(Ordering::Relaxed);
    if !rdb::verify_dump_payload(payload, skip_checksum) {
        return Err(Error::err("DUMP payload version or checksum are wrong"));
    }
    let limits = rdb::LoadLimits::from_config(ctx.engine.config());
    let value = match rdb::read_dump_payload(payload, &limits) {
        Ok(v) => v,
        Err(why) => {
            // Redis's rdbReportError in a RESTORE: logged at verbose level.
            if let Some(e) = why {
                crate::log::verbose(&format!(
                    "Internal error in RDB reading offset {}, function at rdb.rs -> {}",
                    e.offset, e.message
                ));
            }
            return Err(Error::err("Bad data format"));
        }
    };
    let deleted = o.replace && ctx.delete(key);
    let now = ctx.now_ms;
    let at = if ttl != 0 && !o.absttl {
        ttl.saturating_add(now as i64)
    } else {
        ttl
    };
    if at != 0 && at <= now as i64 {
        // Already expired: the key is not created (Redis's
        // checkAlreadyExpired); a replaced key is logged as deleted.
        if deleted {
            ctx.propagate_as(&[b"DEL", key]);
            ctx.notify(crate::pubsub::notify::GENERIC, "del", key);
        } else {
            ctx.propagate_nothing();
        }
        ctx.out.ok();
        return Ok(());
    }
    let access = ctx.engine.keyspace().env().access();
    let mut obj = Object::new(value, access, now);
    if access.lfu {
        if let Some(f) = o.freq {
            obj.set_access(AccessPolicy::with_counter(f as u8, now));
        }
    } else if let Some(idle) = o.idle {
        obj.set_access(AccessPolicy::idle_for(idle as u64, now));
    }
    if at != 0 {
        obj.set_expire_at(at as u64);
    }
    let field_ttls = matches!(&obj.value, crate::keyspace::Value::Hash(hv) if hv.has_field_ttls());
    let (db, h) = ctx.locate(key);
    db.insert_object(h, key, obj);
    if field_ttls {
        db.track_field_expiry(h, key);
    }
    if at != 0 && !o.absttl {
        // Logged with the absolute time, as Redis propagates it.
        let at = at.to_string();
        let mut argv: Vec<&[u8]> = args.to_vec();
        argv[2] = at.as_bytes();
        argv.push(b"ABSTTL");
        ctx.propagate_as(&argv);
    }
    // A list or stream restored where clients wait serves them (Redis's
    // dbAdd signals the key).
    ctx.pushed(key, crate::pubsub::notify::GENERIC, "restore");
    ctx.out.ok();
    Ok(())
}

// ---------------------------------------------------------------------------
// MIGRATE

/// MIGRATE's options (Redis's migrateCommand).
struct MigrateOptions<'a> {
    copy: bool,
    replace: bool,
    /// AUTH password, or AUTH2 username password.
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    /// Argument indexes of the keys to move.
    keys: Vec<usize>,
    db: i64,
    timeout_ms: u64,
}

fn parse_migrate<'a>(args: &[&'a [u8]]) -> Result<MigrateOptions<'a>, Error> {
    let mut o = MigrateOptions {
        copy: false,
        replace: false,
        auth: None,
        keys: vec![3],
        db: 0,
        timeout_ms: 0,
    };
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let a = args[j];
        if a.eq_ignore_ascii_case(b"copy") {
            o.copy = true;
        } else if a.eq_ignore_ascii_case(b"replace") {
            o.replace = true;
        } else if a.eq_ignore_ascii_case(b"auth") {
            if more < 1 {
                return Err(Error::SYNTAX);
            }
            o.auth = Some((None, args[j + 1]));
            j += 1;
        } else if a.eq_ignore_ascii_case(b"auth2") {
            if more < 2 {
                return Err(Error::SYNTAX);
            }
            o.auth = Some((Some(args[j + 1]), args[j + 2]));
            j += 2;
        } else if a.eq_ignore_ascii_case(b"keys") {
            if !args[3].is_empty() {
                return Err(Error::err(
                    "When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            o.keys = (j + 1..args.len()).collect();
            break;
        } else {
            return Err(Error::SYNTAX);
        }
        j += 1;
    }
    let timeout = arg_i64(args[5])?;
    o.db = arg_i64(args[4])?;
    o.timeout_ms = if timeout <= 0 { 1000 } else { timeout as u64 };
    Ok(o)
}

/// Redis's migrateGetKeys: the key, or the keys after KEYS (skipping the
/// AUTH and AUTH2 arguments, which may look like KEYS), each read and
/// deleted.
fn migrate_keys(args: &[&[u8]]) -> Vec<(usize, u32)> {
    const FLAGS: u32 = kflag::RW | kflag::ACCESS | kflag::DELETE;
    let mut j = 6;
    while j < args.len() {
        if args[j].eq_ignore_ascii_case(b"auth") {
            j += 1;
        } else if args[j].eq_ignore_ascii_case(b"auth2") {
            j += 2;
        } else if args[j].eq_ignore_ascii_case(b"keys") {
            if !args[3].is_empty() {
                return Vec::new();
            }
            return (j + 1..args.len()).map(|i| (i, FLAGS)).collect();
        }
        j += 1;
    }
    vec![(3, FLAGS)]
}

fn resp_command(out: &mut Vec<u8>, argv: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", argv.len()).as_bytes());
    for a in argv {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw | AUTH2
/// user pw] [KEYS key...]: sends each key to another server as RESTORE
/// (DUMP's payload, the remaining TTL) and deletes it here unless COPY.
/// The keys' shards stay held during the transfer, as Redis holds its one
/// thread, so nobody sees a key half moved; `timeout` bounds each network
/// step. A connection is opened per call (Redis keeps them for 10 s).
fn migrate_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    use std::io::{BufRead, Write};
    let o = parse_migrate(args)?;
    let opts = rdb::SaveOptions::from_config(ctx.engine.config());
    let now = ctx.now_ms;
    let mut batch: Vec<(usize, Vec<u8>, Vec<u8>)> = Vec::new();
    for &i in &o.keys {
        if let Some(obj) = ctx.lookup_read(args[i]) {
            let ttl = match obj.expire_at() {
                Some(at) if at <= now => continue,
                Some(at) => (at - now).max(1),
                None => 0,
            };
            batch.push((
                i,
                ttl.to_string().into_bytes(),
                rdb::dump_payload(&obj.value, &opts),
            ));
        }
    }
    if batch.is_empty() {
        ctx.out.simple("NOKEY");
        return Ok(());
    }
    let mut request = Vec::new();
    if let Some((user, pass)) = o.auth {
        match user {
            Some(u) => resp_command(&mut request, &[b"AUTH", u, pass]),
            None => resp_command(&mut request, &[b"AUTH", pass]),
        }
    }
    resp_command(&mut request, &[b"SELECT", o.db.to_string().as_bytes()]);
    for (i, ttl, payload) in &batch {
        let mut argv: Vec<&[u8]> = vec![b"RESTORE", args[*i], ttl, payload];
        if o.replace {
            argv.push(b"REPLACE");
        }
        resp_command(&mut request, &argv);
    }

    crate::util::blocking::release_worker();
    let timeout = std::time::Duration::from_millis(o.timeout_ms);
    let host = String::from_utf8_lossy(args[1]).into_owned();
    let port = String::from_utf8_lossy(args[2]).into_owned();
    let connect_error = || Error::constant("IOERR error or timeout connecting to the client");
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&format!("{host}:{port}"))
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(connect_error)?;
    let stream =
        std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|_| connect_error())?;
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let _ = stream.set_nodelay(true);
    (&stream)
        .write_all(&request)
        .map_err(|_| Error::constant("IOERR error or timeout writing to target instance"))?;
    let mut reader = std::io::BufReader::new(&stream);
    let mut read_line = || -> Result<Vec<u8>, Error> {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line) {
            Ok(n) if n > 0 => {
                while line.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
                    line.pop();
                }
                Ok(line)
            }
            _ => Err(Error::constant(
                "IOERR error or timeout reading to target instance",
            )),
        }
    };
    let auth_reply = match o.auth {
        Some(_) => Some(read_line()?),
        None => None,
    };
    let select_reply = read_line()?;
    let mut target_error: Option<Vec<u8>> = None;
    let mut moved: Vec<&[u8]> = vec![b"DEL"];
    let mut io_error = None;
    for (i, _, _) in &batch {
        let reply = match read_line() {
            Ok(r) => r,
            Err(e) => {
                io_error = Some(e);
                break;
            }
        };
        let failed = [
            auth_reply.as_deref(),
            Some(&select_reply[..]),
            Some(&reply[..]),
        ]
        .into_iter()
        .flatten()
        .find(|r| r.first() == Some(&b'-'));
        match failed {
            Some(err) => {
                target_error.get_or_insert_with(|| err[1..].to_vec());
            }
            None if !o.copy => {
                ctx.delete_key(args[*i]);
                ctx.add_dirty(1);
                moved.push(args[*i]);
            }
            None => {}
        }
    }
    // What was moved is logged as its deletion (Redis rewrites the command
    // into DEL).
    if moved.len() > 1 {
        ctx.propagate_as(&moved);
    } else {
        ctx.propagate_nothing();
    }
    if let Some(err) = target_error {
        return Err(Error::concat_trimmed(&[
            b"ERR Target instance replied with error: ",
            crate::error::printf_s(&err, usize::MAX),
        ]));
    }
    if let Some(e) = io_error {
        return Err(e);
    }
    ctx.out.ok();
    Ok(())
}

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "migrate",
        arity: -6,
        flags: flag::WRITE,
        acl: &["keyspace", "dangerous"],
        keys: &[
            KeySpec::at(3, kflag::RW | kflag::ACCESS | kflag::DELETE),
            KeySpec {
                flags: kflag::RW | kflag::ACCESS | kflag::DELETE | kflag::INCOMPLETE,
                begin: crate::command::spec::BeginSearch::Keyword {
                    keyword: "KEYS",
                    start_from: -2,
                },
                find: crate::command::spec::FindKeys::Range {
                    lastkey: -1,
                    step: 1,
                    limit: 0,
                },
            },
        ],
        keys_fn: Some(migrate_keys),
        group: Group::Generic,
        since: "2.6.0",
        summary: "Atomically transfer a key from a Redis instance to another one.",
        complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
        history: &[("3.0.0", "Added the `COPY` and `REPLACE` options."), ("3.0.6", "Added the `KEYS` option."), ("4.0.7", "Added the `AUTH` option."), ("6.0.0", "Added the `AUTH2` option.")],
        syntax: "host:string port:integer key_or_empty_string:oneof(key:key|EMPTY{token:}{name:empty_string}) destination-db:integer timeout:integer [COPY]{since:3.0.0} [REPLACE]{since:3.0.0} [authentication:oneof([AUTH password:string]{since:4.0.7}|[AUTH2 username_password:block(username:string password:string)]{since:6.0.0})] [KEYS key:key...]{since:3.0.6}",
        tips: &["nondeterministic_output"],
        handler: migrate_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "save",
        arity: 1,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::NO_ASYNC_LOADING | flag::NO_MULTI | flag::ALL_SHARDS,
        group: Group::Server,
        since: "1.0.0",
        summary: "Synchronously save the dataset to disk",
        complexity: "O(N) where N is the total number of keys in all databases",
        handler: save_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bgsave",
        arity: -1,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::NO_ASYNC_LOADING | flag::ALL_SHARDS,
        group: Group::Server,
        since: "1.0.0",
        summary: "Asynchronously save the dataset to disk",
        complexity: "O(1)",
        history: &[("3.2.2", "Added the `SCHEDULE` option.")],
        syntax: "[SCHEDULE]{since:3.2.2}",
        handler: bgsave_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bgrewriteaof",
        arity: 1,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::NO_ASYNC_LOADING | flag::ALL_SHARDS,
        group: Group::Server,
        since: "1.0.0",
        summary: "Asynchronously rewrite the append-only file",
        complexity: "O(1)",
        handler: bgrewriteaof_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lastsave",
        arity: 1,
        flags: flag::LOADING | flag::STALE | flag::FAST,
        acl: &["admin", "dangerous"],
        group: Group::Server,
        since: "1.0.0",
        summary: "Get the UNIX time stamp of the last successful save to disk",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        handler: lastsave_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "dump",
        arity: 2,
        flags: flag::READONLY,
        acl: &["keyspace"],
        keys: &[KeySpec::at(1, kflag::RO | kflag::ACCESS)],
        group: Group::Generic,
        since: "2.6.0",
        summary: "Return a serialized version of the value stored at the specified key.",
        complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
        syntax: "key:key",
        tips: &["nondeterministic_output"],
        handler: dump_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "restore",
        arity: -4,
        flags: flag::WRITE | flag::DENYOOM,
        acl: &["keyspace", "dangerous"],
        keys: &[KeySpec::at(1, kflag::OW | kflag::UPDATE)],
        group: Group::Generic,
        since: "2.6.0",
        summary: "Create a key using the provided serialized value, previously obtained using DUMP.",
        complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        history: &[("3.0.0", "Added the `REPLACE` modifier."), ("5.0.0", "Added the `ABSTTL` modifier."), ("5.0.0", "Added the `IDLETIME` and `FREQ` options.")],
        syntax: "key:key ttl:integer serialized-value:string [REPLACE]{since:3.0.0} [ABSTTL]{since:5.0.0} [IDLETIME seconds:integer]{since:5.0.0} [FREQ frequency:integer]{since:5.0.0}",
        handler: restore_command,
        ..CommandSpec::DEFAULT
    },
];
