//! The generic key commands: DEL, EXISTS, TYPE, KEYS, SCAN, RANDOMKEY,
//! RENAME, COPY, MOVE, the EXPIRE/TTL family, TOUCH, OBJECT (Redis's db.c
//! and expire.c).

use crate::command::args::Args;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::{hash_key, CompactBytes, ValueType};
use crate::pubsub::notify;
use crate::util::glob_match;
use crate::util::number::{arg_i64, parse_i64};
use crate::Error;
use std::sync::atomic::Ordering;

// ---------------------------------------------------------------------------
// Operations.

/// Expiry condition of EXPIRE and friends (NX | XX | GT | LT).
#[derive(Clone, Copy, Debug, Default)]
pub struct ExpireCondition {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
}

/// EXPIRE's NX, XX, GT and LT, each accepted any number of times; the
/// conflicts are checked once all are read (Redis's
/// parseExtendedExpireArgumentsOrReply).
pub fn parse_expire_condition(args: &[&[u8]]) -> Result<ExpireCondition, Error> {
    let mut c = ExpireCondition::default();
    let mut a = Args::new(args);
    while let Some(opt) = a.peek() {
        if a.flag("NX") {
            c.nx = true;
        } else if a.flag("XX") {
            c.xx = true;
        } else if a.flag("GT") {
            c.gt = true;
        } else if a.flag("LT") {
            c.lt = true;
        } else {
            return Err(Error::concat_trimmed(&[
                b"ERR Unsupported option ",
                crate::error::printf_s(opt, usize::MAX),
            ]));
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Err(Error::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if c.gt && c.lt {
        return Err(Error::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    Ok(c)
}

/// Redis's expireGenericCommand after argument parsing: `when_ms` is the
/// absolute time. Returns whether the expiry was set (or the key deleted
/// because the time is already past).
pub fn expire_at(ctx: &mut Ctx, key: &[u8], when_ms: i64, cond: ExpireCondition) -> bool {
    let Some(obj) = ctx.lookup_write(key) else {
        return false;
    };
    let current = obj.expire_at().map(|t| t as i64);
    if cond.nx && current.is_some() {
        return false;
    }
    if cond.xx && current.is_none() {
        return false;
    }
    if cond.gt && current.is_none_or(|c| when_ms <= c) {
        return false;
    }
    if cond.lt && current.is_some_and(|c| when_ms >= c) {
        return false;
    }
    ctx.set_expire_at(key, when_ms)
}

/// TTL / PTTL / EXPIRETIME / PEXPIRETIME: -2 absent, -1 persistent.
pub fn ttl_of(ctx: &mut Ctx, key: &[u8], millis: bool, absolute: bool) -> i64 {
    let now = ctx.now_ms as i64;
    let Some(obj) = ctx.lookup_no_touch(key) else {
        return -2;
    };
    let Some(at) = obj.expire_at() else { return -1 };
    let ttl = if absolute {
        at as i64
    } else {
        (at as i64 - now).max(0)
    };
    if millis {
        ttl
    } else {
        (ttl + 500) / 1000
    }
}

/// Redis's strtoul-based cursor parsing for SCAN and its siblings.
pub fn parse_cursor(s: &[u8]) -> Result<u64, Error> {
    let err = || Error::err("invalid cursor");
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(err());
    }
    let v: u64 = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse().ok())
        .ok_or_else(err)?;
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// Options common to SCAN, SSCAN, HSCAN and ZSCAN.
pub struct ScanOptions<'a> {
    pub count: usize,
    pub pattern: Option<&'a [u8]>,
    pub type_filter: Option<&'a [u8]>,
}

/// SCAN's options; `allow_type`: TYPE, which only SCAN takes (Redis's
/// scanGenericCommand accepts it only for the keyspace). Each may repeat,
/// the last one counting.
pub fn parse_scan_options<'a>(
    args: &[&'a [u8]],
    allow_type: bool,
) -> Result<ScanOptions<'a>, Error> {
    let mut o = ScanOptions {
        count: 10,
        pattern: None,
        type_filter: None,
    };
    let mut a = Args::new(args);
    while !a.is_empty() {
        if let Some(n) = a.option("COUNT") {
            let n = arg_i64(n)?;
            if n < 1 {
                return Err(Error::SYNTAX);
            }
            o.count = n as usize;
        } else if let Some(p) = a.option("MATCH") {
            // "*" matches everything: no pattern at all.
            o.pattern = if p == b"*" { None } else { Some(p) };
        } else if let Some(t) = allow_type.then(|| a.option("TYPE")).flatten() {
            o.type_filter = Some(t);
        } else {
            return Err(Error::SYNTAX);
        }
    }
    Ok(o)
}

// ---------------------------------------------------------------------------
// Commands.

fn del_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let lazy = ctx.engine.config().lazyfree_lazy_user_del();
    delete_keys(ctx, &args[1..], lazy)
}

/// UNLINK: DEL whose large values are freed by the lazy-free worker.
fn unlink_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    delete_keys(ctx, &args[1..], true)
}

fn delete_keys(ctx: &mut Ctx, keys: &[&[u8]], lazy: bool) -> CmdResult {
    let mut n = 0;
    for key in keys {
        let Some(obj) = ctx.take(key) else {
            continue;
        };
        ctx.notify(crate::pubsub::notify::GENERIC, "del", key);
        if lazy {
            let bytes = obj.value.charge() as u64;
            ctx.engine.lazyfree().free(obj.value, bytes);
        }
        n += 1;
    }
    ctx.out.int(n as i64);
    Ok(())
}

fn exists_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = args[1..]
        .iter()
        .filter(|k| ctx.lookup_no_touch(k).is_some())
        .count();
    ctx.out.int(n as i64);
    Ok(())
}

fn type_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = ctx.type_of(args[1]).map_or("none", ValueType::name);
    ctx.out.simple(name);
    Ok(())
}

fn touch_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // TOUCH touches even for a CLIENT NO-TOUCH client (Redis's lookupKey
    // exempts touchCommand).
    ctx.no_touch = false;
    let n = args[1..]
        .iter()
        .filter(|k| ctx.lookup_read(k).is_some())
        .count();
    ctx.out.int(n as i64);
    Ok(())
}

fn keys_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pattern = args[1];
    let all = pattern == b"*";
    let now = ctx.now_ms;
    let db = ctx.client.db;
    let mut found: Vec<CompactBytes> = Vec::new();
    for shard in ctx.locks.held() {
        for (k, obj) in shard.dbs[db].iter() {
            if (all || glob_match(pattern, k, false)) && !obj.is_expired(now) {
                found.push(k.clone());
            }
        }
    }
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
    Ok(())
}

fn scan_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = parse_cursor(args[1])?;
    let opts = parse_scan_options(&args[2..], true)?;
    let type_filter = opts.type_filter.map(ValueType::parse);
    let nshards = ctx.engine.keyspace().shard_count();
    let bits = nshards.trailing_zeros();
    let mut shard = (cursor & (nshards as u64 - 1)) as usize;
    let mut bucket = if bits == 0 { cursor } else { cursor >> bits };
    let now = ctx.now_ms;
    let db = ctx.client.db;
    let look = ctx.now();
    let mut keys: Vec<CompactBytes> = Vec::new();
    let mut expired: Vec<CompactBytes> = Vec::new();
    let mut iterations = opts.count * 10;
    let next = loop {
        let table = &ctx.locks.shard_ref(shard).dbs[db];
        bucket = table.scan(bucket, |k, obj| {
            if let Some(p) = opts.pattern {
                if !glob_match(p, k, false) {
                    return;
                }
            }
            if obj.is_expired(now) {
                expired.push(k.clone());
                return;
            }
            if let Some(t) = type_filter {
                if Some(obj.value.value_type()) != t {
                    return;
                }
            }
            keys.push(k.clone());
        });
        // The expired keys met are deleted as a look-up deletes them (a
        // replica leaves them to its primary's DEL), as Redis's SCAN does.
        if !expired.is_empty() {
            let table = &mut ctx.locks.shard(shard).dbs[db];
            for k in expired.drain(..) {
                table.lookup(hash_key(&k), &k, look);
            }
            ctx.effects.unwrapped = true;
        }
        if bucket == 0 {
            shard += 1;
            if shard == nshards {
                break 0;
            }
        }
        iterations = iterations.saturating_sub(1);
        if keys.len() >= opts.count || iterations == 0 {
            break (bucket << bits) | shard as u64;
        }
    };
    ctx.out.array(2);
    ctx.out.bulk_str(&next.to_string());
    ctx.out.array(keys.len());
    for k in &keys {
        ctx.out.bulk(k);
    }
    Ok(())
}

fn randomkey_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let db = ctx.client.db;
    let look = ctx.now();
    let now = look.ms;
    let mut rng = fastrand::Rng::new();
    // Try a bounded number of times to find a key that has not expired
    // (Redis deletes the expired ones it meets and tries again).
    for _ in 0..100 {
        let sizes: Vec<usize> = ctx.locks.held().map(|s| s.dbs[db].len()).collect();
        let total: usize = sizes.iter().sum();
        if total == 0 {
            ctx.out.null();
            return Ok(());
        }
        let mut pick = rng.usize(..total);
        let mut shard_pos = 0;
        while pick >= sizes[shard_pos] {
            pick -= sizes[shard_pos];
            shard_pos += 1;
        }
        let shard = ctx.locks.held_mut().nth(shard_pos).expect("shard held");
        let table = &mut shard.dbs[db];
        let (key, expired) = match table.random_key(&mut rng) {
            Some((k, o)) => (k.clone(), o.is_expired(now)),
            None => continue,
        };
        if expired {
            // Lazily expire it, as a look-up would; its DEL is logged on
            // its own, as Redis's CMD_TOUCHES_ARBITRARY_KEYS.
            table.lookup(hash_key(&key), &key, look);
            ctx.effects.unwrapped = true;
            continue;
        }
        ctx.out.bulk(&key);
        return Ok(());
    }
    ctx.out.null();
    Ok(())
}

fn rename_generic(ctx: &mut Ctx, args: &[&[u8]], nx: bool) -> CmdResult {
    let (src, dst) = (args[1], args[2]);
    if ctx.lookup_write(src).is_none() {
        return Err(Error::NO_SUCH_KEY);
    }
    if src == dst {
        if nx {
            ctx.out.int(0);
        } else {
            ctx.out.ok();
        }
        return Ok(());
    }
    if nx && ctx.lookup_write(dst).is_some() {
        ctx.out.int(0);
        return Ok(());
    }
    // Both keys are signalled, but a rename is one change, as Redis counts.
    ctx.as_one_change(|ctx| {
        if ctx.lookup_write(dst).is_some() {
            ctx.delete(dst);
        }
        let (db, h) = ctx.locate(src);
        let obj = db.remove(h, src).expect("source exists");
        let (db, h) = ctx.locate(dst);
        db.insert_object(h, dst, obj);
        ctx.changed(src, notify::GENERIC, "rename_from");
        // A list (or other awaited value) moved into place serves its
        // waiters.
        ctx.pushed(dst, notify::GENERIC, "rename_to");
    });
    if nx {
        ctx.out.int(1);
    } else {
        ctx.out.ok();
    }
    Ok(())
}

fn rename_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    rename_generic(ctx, args, false)
}

fn renamenx_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    rename_generic(ctx, args, true)
}

fn db_index_arg(ctx: &Ctx, arg: &[u8]) -> Result<usize, Error> {
    let id = parse_i64(arg)
        .filter(|v| *v >= i32::MIN as i64 && *v <= i32::MAX as i64)
        .ok_or(Error::NOT_INTEGER)?;
    if id < 0 || id as usize >= ctx.databases() {
        return Err(Error::DB_INDEX);
    }
    Ok(id as usize)
}

fn move_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let dst = db_index_arg(ctx, args[2])?;
    let src = ctx.client.db;
    if src == dst {
        return Err(Error::err("source and destination objects are the same"));
    }
    if ctx.lookup_write(key).is_none() {
        ctx.out.int(0);
        return Ok(());
    }
    let now = ctx.now();
    let (target, h) = ctx.locate_in(dst, key);
    if target.lookup(h, key, now).is_some() {
        ctx.out.int(0);
        return Ok(());
    }
    let (db, h) = ctx.locate(key);
    let obj = db.remove(h, key).expect("key exists");
    let (target, h) = ctx.locate_in(dst, key);
    target.insert_object(h, key, obj);
    // Both keys are signalled, but a move is one change, as Redis counts.
    ctx.as_one_change(|ctx| {
        ctx.changed(key, notify::GENERIC, "move_from");
        ctx.pushed_in(dst, key, notify::GENERIC, "move_to");
    });
    ctx.out.int(1);
    Ok(())
}

/// COPY's options: the destination database (the client's own by
/// default) and REPLACE.
struct CopyOptions {
    db: usize,
    replace: bool,
}

fn parse_copy(ctx: &Ctx, args: &[&[u8]]) -> Result<CopyOptions, Error> {
    let mut o = CopyOptions {
        db: ctx.client.db,
        replace: false,
    };
    let mut a = Args::new(args);
    while !a.is_empty() {
        if a.flag("REPLACE") {
            o.replace = true;
        } else if let Some(db) = a.option("DB") {
            let id = arg_i64(db)?;
            if id < 0 || id as usize >= ctx.databases() || id > i32::MAX as i64 {
                return Err(Error::DB_INDEX);
            }
            o.db = id as usize;
        } else {
            return Err(Error::SYNTAX);
        }
    }
    Ok(o)
}

fn copy_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (src, dst) = (args[1], args[2]);
    let o = parse_copy(ctx, &args[3..])?;
    if o.db == ctx.client.db && src == dst {
        return Err(Error::err("source and destination objects are the same"));
    }
    let Some(obj) = ctx.lookup_read(src).map(|obj| obj.clone()) else {
        ctx.out.int(0);
        return Ok(());
    };
    let now = ctx.now();
    let (target, h) = ctx.locate_in(o.db, dst);
    if target.lookup(h, dst, now).is_some() {
        if !o.replace {
            ctx.out.int(0);
            return Ok(());
        }
        target.remove(h, dst);
    }
    target.insert_object(h, dst, obj);
    ctx.pushed_in(o.db, dst, notify::GENERIC, "copy_to");
    ctx.out.int(1);
    Ok(())
}

/// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT.
fn expire_generic(ctx: &mut Ctx, args: &[&[u8]], seconds: bool, relative: bool) -> CmdResult {
    let cond = parse_expire_condition(&args[3..])?;
    let mut when = arg_i64(args[2])?;
    let cmd = ctx.command_name();
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return Err(Error::expire_time(cmd));
        }
        when *= 1000;
    }
    let base = if relative { ctx.now_ms as i64 } else { 0 };
    if when > i64::MAX - base {
        return Err(Error::expire_time(cmd));
    }
    when += base;
    let done = expire_at(ctx, args[1], when, cond);
    if done {
        // Logged as an absolute time in ms, or as the deletion it caused.
        if when <= ctx.now_ms as i64 {
            ctx.propagate_as(&[b"DEL", args[1]]);
            ctx.notify(notify::GENERIC, "del", args[1]);
        } else {
            if relative || seconds {
                let when = when.to_string();
                ctx.propagate_as(&[b"PEXPIREAT", args[1], when.as_bytes()]);
            }
            ctx.notify(notify::GENERIC, "expire", args[1]);
        }
    }
    ctx.out.int(done as i64);
    Ok(())
}

fn expire_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, true, true)
}
fn pexpire_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, false, true)
}
fn expireat_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, true, false)
}
fn pexpireat_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, false, false)
}

fn ttl_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let v = ttl_of(ctx, args[1], false, false);
    ctx.out.int(v);
    Ok(())
}
fn pttl_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let v = ttl_of(ctx, args[1], true, false);
    ctx.out.int(v);
    Ok(())
}
fn expiretime_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let v = ttl_of(ctx, args[1], false, true);
    ctx.out.int(v);
    Ok(())
}
fn pexpiretime_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let v = ttl_of(ctx, args[1], true, true);
    ctx.out.int(v);
    Ok(())
}

fn persist_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let v = ctx.persist(args[1]);
    if v {
        ctx.notify(notify::GENERIC, "persist", args[1]);
    }
    ctx.out.int(v as i64);
    Ok(())
}

const LFU_SELECTED: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
const LFU_NOT_SELECTED: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

fn lfu_policy(ctx: &Ctx) -> bool {
    ctx.engine.config().maxmemory_policy().ends_with("lfu")
}

fn object_encoding(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match ctx.lookup_no_touch(args[2]).map(|o| o.value.encoding()) {
        Some(enc) => ctx.out.bulk_str(enc),
        None => ctx.out.null(),
    }
    Ok(())
}

fn object_refcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Redis shares the objects of the integers 0..9999 (refcount INT_MAX),
    // except under maxmemory with an LRU or LFU policy, where every key
    // needs an access field of its own; report the same so that
    // introspecting clients see what they expect.
    let shared = ctx.engine.config().maxmemory.load(Ordering::Relaxed) == 0
        || !ctx.engine.evictor().policy().tracks_access();
    let rc = ctx.lookup_no_touch(args[2]).map(|o| match &o.value {
        crate::keyspace::Value::Str(s)
            if shared && parse_i64(s).is_some_and(|v| (0..10000).contains(&v)) =>
        {
            i32::MAX as i64
        }
        _ => 1,
    });
    match rc {
        Some(rc) => ctx.out.int(rc),
        None => ctx.out.null(),
    }
    Ok(())
}

fn object_idletime(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now_ms;
    let Some(idle) = ctx.lookup_no_touch(args[2]).map(|o| o.idle_seconds(now)) else {
        ctx.out.null();
        return Ok(());
    };
    if lfu_policy(ctx) {
        return Err(Error::raw(LFU_SELECTED));
    }
    ctx.out.int(idle as i64);
    Ok(())
}

fn object_freq(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now_ms;
    let access = ctx.engine.keyspace().env().access();
    let Some(freq) = ctx
        .lookup_no_touch(args[2])
        .map(|o| o.lfu_frequency(access, now))
    else {
        ctx.out.null();
        return Ok(());
    };
    if !lfu_policy(ctx) {
        return Err(Error::raw(LFU_NOT_SELECTED));
    }
    ctx.out.int(freq as i64);
    Ok(())
}

fn object_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "OBJECT",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// The family's table.

const RO: u32 = kflag::RO;
const RW_DELETE: u32 = kflag::RM | kflag::DELETE;
const RW_UPDATE: u32 = kflag::RW | kflag::UPDATE;

static OBJECT_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "encoding",
        arity: 3,
        flags: flag::READONLY,
        keys: &[KeySpec::at(2, RO)],
        group: Group::Generic,
        since: "2.2.3",
        summary: "Inspect the internal encoding of a Redis object",
        complexity: "O(1)",
        syntax: "key:key",
        tips: &["nondeterministic_output"],
        handler: object_encoding,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "freq",
        arity: 3,
        flags: flag::READONLY,
        keys: &[KeySpec::at(2, RO)],
        group: Group::Generic,
        since: "4.0.0",
        summary: "Get the logarithmic access frequency counter of a Redis object",
        complexity: "O(1)",
        syntax: "key:key",
        tips: &["nondeterministic_output"],
        handler: object_freq,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Generic,
        since: "6.2.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: object_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "idletime",
        arity: 3,
        flags: flag::READONLY,
        keys: &[KeySpec::at(2, RO)],
        group: Group::Generic,
        since: "2.2.3",
        summary: "Get the time since a Redis object was last accessed",
        complexity: "O(1)",
        syntax: "key:key",
        tips: &["nondeterministic_output"],
        handler: object_idletime,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "refcount",
        arity: 3,
        flags: flag::READONLY,
        keys: &[KeySpec::at(2, RO)],
        group: Group::Generic,
        since: "2.2.3",
        summary: "Get the number of references to the value of the key",
        complexity: "O(1)",
        syntax: "key:key",
        tips: &["nondeterministic_output"],
        handler: object_refcount,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "del",
        arity: -2,
        flags: flag::WRITE,
        keys: &[KeySpec::range(1, -1, 1, RW_DELETE)],
        group: Group::Generic,
        since: "1.0.0",
        summary: "Delete a key",
        complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
        syntax: "key:key...",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        handler: del_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "unlink",
        arity: -2,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::range(1, -1, 1, RW_DELETE)],
        group: Group::Generic,
        since: "4.0.0",
        summary: "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.",
        complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
        syntax: "key:key...",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        handler: unlink_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "exists",
        arity: -2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::range(1, -1, 1, RO)],
        group: Group::Generic,
        since: "1.0.0",
        summary: "Determine if a key exists",
        complexity: "O(N) where N is the number of keys to check.",
        history: &[("3.0.3", "Accepts multiple `key` arguments.")],
        syntax: "key:key...",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        handler: exists_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "type",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO)],
        group: Group::Generic,
        since: "1.0.0",
        summary: "Determine the type stored at key",
        complexity: "O(1)",
        syntax: "key:key",
        handler: type_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "touch",
        arity: -2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::range(1, -1, 1, RO)],
        group: Group::Generic,
        since: "3.2.1",
        summary: "Alters the last access time of a key(s). Returns the number of existing keys specified.",
        complexity: "O(N) where N is the number of keys that will be touched.",
        syntax: "key:key...",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        handler: touch_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "keys",
        arity: 2,
        flags: flag::READONLY | flag::ALL_SHARDS,
        acl: &["dangerous"],
        group: Group::Generic,
        since: "1.0.0",
        summary: "Find all keys matching the given pattern",
        complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
        syntax: "pattern:pattern",
        tips: &["request_policy:all_shards", "nondeterministic_output_order"],
        handler: keys_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "scan",
        arity: -2,
        flags: flag::READONLY | flag::ALL_SHARDS,
        group: Group::Generic,
        since: "2.8.0",
        summary: "Incrementally iterate the keys space",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        history: &[("6.0.0", "Added the `TYPE` subcommand.")],
        syntax: "cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [TYPE type:string]{since:6.0.0}",
        tips: &["nondeterministic_output", "request_policy:special"],
        handler: scan_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "randomkey",
        arity: 1,
        flags: flag::READONLY | flag::ALL_SHARDS,
        group: Group::Generic,
        since: "1.0.0",
        summary: "Return a random key from the keyspace",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "nondeterministic_output"],
        handler: randomkey_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "rename",
        arity: 3,
        flags: flag::WRITE,
        keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE), KeySpec::at(2, kflag::OW | kflag::UPDATE)],
        group: Group::Generic,
        since: "1.0.0",
        summary: "Rename a key",
        complexity: "O(1)",
        history: &[],
        syntax: "key:key newkey:key",
        handler: rename_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "renamenx",
        arity: 3,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE), KeySpec::at(2, kflag::OW | kflag::INSERT)],
        group: Group::Generic,
        since: "1.0.0",
        summary: "Rename a key, only if the new key does not exist",
        complexity: "O(1)",
        history: &[("3.2.0", "The command no longer returns an error when source and destination names are the same.")],
        syntax: "key:key newkey:key",
        handler: renamenx_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "move",
        arity: 3,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::UPDATE)],
        group: Group::Generic,
        since: "1.0.0",
        summary: "Move a key to another database",
        complexity: "O(1)",
        syntax: "key:key db:integer",
        handler: move_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "copy",
        arity: -3,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, kflag::RO | kflag::ACCESS), KeySpec::at(2, kflag::OW | kflag::UPDATE)],
        group: Group::Generic,
        since: "6.2.0",
        summary: "Copy a key",
        complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
        syntax: "source:key destination:key [DB destination-db:integer] [REPLACE]",
        handler: copy_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "expire",
        arity: -3,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Generic,
        since: "1.0.0",
        summary: "Set a key's time to live in seconds",
        complexity: "O(1)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")],
        syntax: "key:key seconds:integer [condition:oneof(NX|XX|GT|LT)]{since:7.0.0}",
        handler: expire_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "pexpire",
        arity: -3,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Generic,
        since: "2.6.0",
        summary: "Set a key's time to live in milliseconds",
        complexity: "O(1)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")],
        syntax: "key:key milliseconds:integer [condition:oneof(NX|XX|GT|LT)]{since:7.0.0}",
        handler: pexpire_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "expireat",
        arity: -3,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Generic,
        since: "1.2.0",
        summary: "Set the expiration for a key as a UNIX timestamp",
        complexity: "O(1)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")],
        syntax: "key:key unix-time-seconds:unix-time [condition:oneof(NX|XX|GT|LT)]{since:7.0.0}",
        handler: expireat_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "pexpireat",
        arity: -3,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Generic,
        since: "2.6.0",
        summary: "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
        complexity: "O(1)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")],
        syntax: "key:key unix-time-milliseconds:unix-time [condition:oneof(NX|XX|GT|LT)]{since:7.0.0}",
        handler: pexpireat_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "ttl",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO | kflag::ACCESS)],
        group: Group::Generic,
        since: "1.0.0",
        summary: "Get the time to live for a key in seconds",
        complexity: "O(1)",
        history: &[("2.8.0", "Added the -2 reply.")],
        syntax: "key:key",
        tips: &["nondeterministic_output"],
        handler: ttl_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "pttl",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO | kflag::ACCESS)],
        group: Group::Generic,
        since: "2.6.0",
        summary: "Get the time to live for a key in milliseconds",
        complexity: "O(1)",
        history: &[("2.8.0", "Added the -2 reply.")],
        syntax: "key:key",
        tips: &["nondeterministic_output"],
        handler: pttl_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "expiretime",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO | kflag::ACCESS)],
        group: Group::Generic,
        since: "7.0.0",
        summary: "Get the expiration Unix timestamp for a key",
        complexity: "O(1)",
        syntax: "key:key",
        handler: expiretime_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "pexpiretime",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO | kflag::ACCESS)],
        group: Group::Generic,
        since: "7.0.0",
        summary: "Get the expiration Unix timestamp for a key in milliseconds",
        complexity: "O(1)",
        syntax: "key:key",
        handler: pexpiretime_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "persist",
        arity: 2,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Generic,
        since: "2.2.0",
        summary: "Remove the expiration from a key",
        complexity: "O(1)",
        syntax: "key:key",
        handler: persist_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "object",
        arity: -2,
        group: Group::Generic,
        subcommands: OBJECT_SUBCOMMANDS,
        since: "2.2.3",
        summary: "A container for object introspection commands",
        complexity: "Depends on subcommand.",
        ..CommandSpec::DEFAULT
    },
];
