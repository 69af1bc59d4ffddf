//! Persistence commands: SAVE, BGSAVE, LASTSAVE, BGREWRITEAOF (Redis's
//! rdb.c and aof.c) and DUMP / RESTORE (cluster.c). The machinery lives in
//! `persist`; these parse, call it and reply.

use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::object::access;
use crate::keyspace::Object;
use crate::persist::{self, rdb, JobKind};
use crate::util::number::{arg_i64, parse_i64};
use crate::Error;
use std::sync::atomic::Ordering;

const BGSAVE_RUNNING: Error = Error::constant("ERR Background save already in progress");

fn save_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let engine = ctx.engine;
    if engine.persist.running() == Some(JobKind::Rdb) {
        return Err(BGSAVE_RUNNING);
    }
    engine.persist.rdb_saves.fetch_add(1, Ordering::Relaxed);
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
    let p = &ctx.engine.persist;
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
    let p = &ctx.engine.persist;
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
    ctx.out
        .int((ctx.engine.last_save_ms.load(Ordering::Relaxed) / 1000) as i64);
    Ok(())
}

// ---------------------------------------------------------------------------
// DUMP / RESTORE

fn dump_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let opts = rdb::SaveOptions::from_config(&ctx.engine.config);
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

fn parse_restore(args: &[&[u8]]) -> Result<RestoreOptions, Error> {
    let mut o = RestoreOptions::default();
    let mut j = 4;
    while j < args.len() {
        let a = args[j];
        let more = j + 1 < args.len();
        if a.eq_ignore_ascii_case(b"replace") {
            o.replace = true;
        } else if a.eq_ignore_ascii_case(b"absttl") {
            o.absttl = true;
        } else if a.eq_ignore_ascii_case(b"idletime") && more && o.freq.is_none() {
            let v = arg_i64(args[j + 1])?;
            if v < 0 {
                return Err(Error::err("Invalid IDLETIME value, must be >= 0"));
            }
            o.idle = Some(v);
            j += 1;
        } else if a.eq_ignore_ascii_case(b"freq") && more && o.idle.is_none() {
            let v = arg_i64(args[j + 1])?;
            if !(0..=255).contains(&v) {
                return Err(Error::err("Invalid FREQ value, must be >= 0 and <= 255"));
            }
            o.freq = Some(v);
            j += 1;
        } else {
            return Err(Error::SYNTAX);
        }
        j += 1;
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
    if !rdb::verify_dump_payload(payload) {
        return Err(Error::err("DUMP payload version or checksum are wrong"));
    }
    let limits = rdb::LoadLimits::from_config(&ctx.engine.config);
    let Some(value) = rdb::read_dump_payload(payload, &limits) else {
        return Err(Error::err("Bad data format"));
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
            ctx.log_as(&[b"DEL", key]);
        } else {
            ctx.log_nothing();
        }
        ctx.out.ok();
        return Ok(());
    }
    let mut obj = Object::new(value, now);
    if access::lfu() {
        if let Some(f) = o.freq {
            obj.set_access(access::with_counter(f as u8, now));
        }
    } else if let Some(idle) = o.idle {
        obj.set_access(access::idle_for(idle as u64, now));
    }
    if at != 0 {
        obj.expire_at = at as u64;
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
        ctx.log_as(&argv);
    }
    ctx.modified(key);
    ctx.out.ok();
    Ok(())
}

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "save",
        arity: 1,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::NO_ASYNC_LOADING | flag::NO_MULTI | flag::ALL_SHARDS,
        group: Group::Server,
        summary: "Synchronously saves the database(s) to disk.",
        complexity: "O(N) where N is the total number of keys in all databases",
        handler: save_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bgsave",
        arity: -1,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::NO_ASYNC_LOADING | flag::ALL_SHARDS,
        group: Group::Server,
        summary: "Asynchronously saves the database(s) to disk.",
        complexity: "O(1)",
        syntax: "[SCHEDULE]",
        handler: bgsave_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bgrewriteaof",
        arity: 1,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::NO_ASYNC_LOADING | flag::ALL_SHARDS,
        group: Group::Server,
        summary: "Asynchronously rewrites the append-only file to disk.",
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
        summary: "Returns the Unix timestamp of the last successful save to disk.",
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
        summary: "Returns a serialized representation of the value stored at a key.",
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
        summary: "Creates a key from the serialized representation of a value.",
        complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        syntax: "key:key ttl:integer serialized-value:string [REPLACE] [ABSTTL] [IDLETIME seconds:integer] [FREQ frequency:integer]",
        handler: restore_command,
        ..CommandSpec::DEFAULT
    },
];
