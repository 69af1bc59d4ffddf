//! The hash family: HSET and its variants, field reads, counters,
//! HRANDFIELD and HSCAN (Redis's t_hash.c).
//!
//! The operations (`hset`, `hdel`, `hincrby`...) are public so that other
//! hosts of the same semantics (scripts, the embedded API) call them
//! directly; the handlers parse arguments and write the replies. The data
//! structure and its compact/table representations are in
//! `keyspace::hash`.

use super::keys::{parse_cursor, parse_scan_options};
use crate::command::args::Args;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::{
    hash_key, Hash, HashLimits, HashLookup, Object, SetTtl, TtlCondition, Value,
};
use crate::protocol::ReplyWriter;
use crate::pubsub::notify;
use crate::util::glob_match;
use crate::util::number::{arg_i64, parse_i64, LongDouble};
use crate::Error;

// ---------------------------------------------------------------------------
// Access to the hash at a key.

fn not_hash() -> Error {
    Error::WRONGTYPE
}

/// The hash at `key` for reading (a keyspace hit or miss is counted), with
/// the reply writer so that values are copied straight into the reply.
/// Fields whose TTL has passed are deleted first (and the key with the
/// last of them): no command sees an expired field.
fn read_hash<'c>(
    ctx: &'c mut Ctx,
    key: &[u8],
) -> Result<(Option<&'c Hash>, &'c mut ReplyWriter), Error> {
    if ctx.notifies(notify::KEY_MISS) && ctx.type_of(key).is_none() {
        // A miss: counted and notified as "keymiss" by the read.
        ctx.lookup_read(key);
        return Ok((None, &mut *ctx.out));
    }
    let now = ctx.now();
    let h = hash_key(key);
    let idx = ctx.engine.keyspace().shard_of(h);
    let dbi = ctx.client.db;
    // Field by field, so that the hash and the reply writer are borrowed
    // together.
    let (found, reaped) = ctx.locks.shard(idx).dbs[dbi].lookup_hash(h, key, now, true);
    ctx.dirty += reaped as u64;
    ctx.stats
        .hit(!matches!(found, HashLookup::Absent) || reaped > 0);
    match found {
        HashLookup::Absent => Ok((None, &mut *ctx.out)),
        HashLookup::WrongType => Err(not_hash()),
        HashLookup::Found(h) => Ok((Some(&*h), &mut *ctx.out)),
    }
}

/// Like `read_hash`, for the commands that change the fields while they
/// reply (HGETEX, HGETDEL). No keyspace hit or miss is counted (a write).
fn access_hash<'c>(
    ctx: &'c mut Ctx,
    key: &[u8],
) -> Result<(Option<&'c mut Hash>, &'c mut ReplyWriter), Error> {
    let now = ctx.now();
    let h = hash_key(key);
    let idx = ctx.engine.keyspace().shard_of(h);
    let dbi = ctx.client.db;
    let slice = &mut ctx.locks.shard(idx).dbs[dbi];
    // A change follows: a running snapshot keeps the hash as it was.
    slice.preserve(h, key);
    let (found, reaped) = slice.lookup_hash(h, key, now, true);
    ctx.dirty += reaped as u64;
    match found {
        HashLookup::Absent => Ok((None, &mut *ctx.out)),
        HashLookup::WrongType => Err(not_hash()),
        HashLookup::Found(h) => Ok((Some(h), &mut *ctx.out)),
    }
}

/// `Db::lookup_hash` in the command's database and clock; the deleted
/// fields count as changes.
fn lookup_hash<'c>(ctx: &'c mut Ctx, key: &[u8]) -> (HashLookup<'c>, usize) {
    let now = ctx.now();
    let h = hash_key(key);
    let idx = ctx.engine.keyspace().shard_of(h);
    let dbi = ctx.client.db;
    let writes = ctx.writes;
    let slice = &mut ctx.locks.shard(idx).dbs[dbi];
    if writes {
        slice.preserve(h, key);
    }
    let (found, reaped) = slice.lookup_hash(h, key, now, true);
    ctx.dirty += reaped as u64;
    (found, reaped)
}

/// The hash at `key` for writing (expired fields deleted first); with
/// `create`, an absent key becomes an empty hash (the caller adds a field
/// at once, so it never stays empty).
fn write_hash<'c>(
    ctx: &'c mut Ctx,
    key: &[u8],
    create: bool,
) -> Result<Option<&'c mut Hash>, Error> {
    let exists = match lookup_hash(ctx, key).0 {
        HashLookup::Absent => false,
        HashLookup::WrongType => return Err(not_hash()),
        HashLookup::Found(_) => true,
    };
    if !exists && !create {
        return Ok(None);
    }
    let now = ctx.now();
    let (db, h) = ctx.locate(key);
    let obj = if exists {
        db.lookup_no_touch(h, key, now)
    } else {
        Some(db.insert_new(h, key, Value::Hash(Box::default()), now.ms))
    };
    match obj {
        Some(Object {
            value: Value::Hash(hash),
            ..
        }) => Ok(Some(&mut **hash)),
        _ => Ok(None),
    }
}

/// Calls `f` with the hash at `key` (None when absent) after deleting its
/// expired fields: the read access other families use (GOBLIN.HCAD...).
pub fn with_hash<R>(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(Option<&Hash>) -> R,
) -> Result<R, Error> {
    let (hash, _) = read_hash(ctx, key)?;
    Ok(f(hash))
}

/// Registers `key` in the index of hashes with field TTLs when its hash
/// has some.
fn track_field_expiry(ctx: &mut Ctx, key: &[u8]) {
    let now = ctx.now_ms;
    let (db, h) = ctx.locate(key);
    if let Some(Object {
        value: Value::Hash(hash),
        ..
    }) = db.peek_mut(h, key, now)
    {
        if hash.has_field_ttls() {
            db.track_field_expiry(h, key);
        }
    }
}

/// Removes a key that a command emptied (Redis deletes empty collections).
fn remove_key(ctx: &mut Ctx, key: &[u8]) {
    let (db, h) = ctx.locate(key);
    db.remove(h, key);
}

fn limits(ctx: &Ctx) -> HashLimits {
    ctx.engine.config().hash_limits()
}

// ---------------------------------------------------------------------------
// Operations.

/// HSET: sets each field/value pair (`pairs` alternates them) and returns
/// how many fields were new.
pub fn hset(ctx: &mut Ctx, key: &[u8], pairs: &[&[u8]]) -> Result<usize, Error> {
    let limits = limits(ctx);
    let hash = write_hash(ctx, key, true)?.expect("created");
    hash.prepare_write(pairs, &limits);
    let created = pairs
        .chunks_exact(2)
        .filter(|kv| hash.set(kv[0], kv[1], &limits))
        .count();
    ctx.changed(key, notify::HASH, "hset");
    ctx.add_dirty((pairs.len() / 2).saturating_sub(1) as u64);
    Ok(created)
}

/// Sets one field keeping its TTL (the GOBLIN.* family's writes: a
/// compare-and-set is not a new field); true when the field is new.
pub fn hset_keep_ttl(ctx: &mut Ctx, key: &[u8], field: &[u8], value: &[u8]) -> Result<bool, Error> {
    let limits = limits(ctx);
    let hash = write_hash(ctx, key, true)?.expect("created");
    hash.prepare_write(&[field, value], &limits);
    let created = hash.set_keep_ttl(field, value, &limits);
    ctx.modified(key);
    Ok(created)
}

/// Reads one field and, when `decide` returns a value, sets the field to
/// it keeping its TTL, in one look-up (the GOBLIN.* compare-and-set
/// commands). Counted as a read, a keyspace hit or miss, as the HGET of
/// the scripts they replace. Returns whether the field was written, and
/// `decide`'s result.
pub fn update_field_keep_ttl<'v, R>(
    ctx: &mut Ctx,
    key: &[u8],
    field: &[u8],
    decide: impl FnOnce(Option<&[u8]>) -> (Option<&'v [u8]>, R),
) -> Result<(bool, R), Error> {
    if ctx.notifies(notify::KEY_MISS) && ctx.type_of(key).is_none() {
        // A miss: counted and notified as "keymiss" by the read.
        ctx.lookup_read(key);
        return create_decided(ctx, key, field, decide(None));
    }
    let limits = limits(ctx);
    let (found, reaped) = lookup_hash(ctx, key);
    let hit = !matches!(found, HashLookup::Absent) || reaped > 0;
    let hash = match found {
        HashLookup::Absent => {
            ctx.stats.hit(hit);
            return create_decided(ctx, key, field, decide(None));
        }
        HashLookup::WrongType => {
            ctx.stats.hit(hit);
            return Err(not_hash());
        }
        HashLookup::Found(hash) => hash,
    };
    let (new, result) = decide(hash.get(field));
    if let Some(value) = new {
        hash.prepare_write(&[field, value], &limits);
        hash.set_keep_ttl(field, value, &limits);
    }
    ctx.stats.hit(hit);
    if new.is_some() {
        ctx.modified(key);
    }
    Ok((new.is_some(), result))
}

/// `update_field_keep_ttl` on an absent key: creates it when the decision
/// was to write.
fn create_decided<R>(
    ctx: &mut Ctx,
    key: &[u8],
    field: &[u8],
    (new, result): (Option<&[u8]>, R),
) -> Result<(bool, R), Error> {
    match new {
        Some(value) => hset_keep_ttl(ctx, key, field, value).map(|_| (true, result)),
        None => Ok((false, result)),
    }
}

/// HSETNX: sets the field only when it is absent; true when set.
pub fn hsetnx(ctx: &mut Ctx, key: &[u8], field: &[u8], value: &[u8]) -> Result<bool, Error> {
    let limits = limits(ctx);
    let hash = write_hash(ctx, key, true)?.expect("created");
    if hash.contains(field) {
        return Ok(false);
    }
    hash.prepare_write(&[field, value], &limits);
    hash.set(field, value, &limits);
    ctx.changed(key, notify::HASH, "hset");
    Ok(true)
}

/// HDEL: removes the fields, deleting the key when none is left; returns
/// how many were removed.
pub fn hdel(ctx: &mut Ctx, key: &[u8], fields: &[&[u8]]) -> Result<usize, Error> {
    let Some(hash) = write_hash(ctx, key, false)? else {
        return Ok(0);
    };
    let mut deleted = 0;
    let mut emptied = false;
    for field in fields {
        if hash.remove(field) {
            deleted += 1;
            if hash.is_empty() {
                emptied = true;
                break;
            }
        }
    }
    if emptied {
        remove_key(ctx, key);
    }
    if deleted > 0 {
        ctx.add_dirty(deleted as u64 - 1);
        ctx.changed(key, notify::HASH, "hdel");
        if emptied {
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    Ok(deleted)
}

/// HINCRBY: adds `incr` to the integer in the field (0 when absent).
/// Nothing changes on error.
pub fn hincrby(ctx: &mut Ctx, key: &[u8], field: &[u8], incr: i64) -> Result<i64, Error> {
    let current = match write_hash(ctx, key, false)?.and_then(|h| h.get(field)) {
        Some(v) => parse_i64(v).ok_or_else(|| Error::err("hash value is not an integer"))?,
        None => 0,
    };
    let value = current.checked_add(incr).ok_or(Error::OVERFLOW)?;
    let limits = limits(ctx);
    let hash = write_hash(ctx, key, true)?.expect("created");
    // The field keeps its TTL, as in Redis 8 (HASH_SET_KEEP_TTL).
    hash.set_keep_ttl(field, itoa::Buffer::new().format(value).as_bytes(), &limits);
    ctx.changed(key, notify::HASH, "hincrby");
    Ok(value)
}

/// HINCRBYFLOAT: adds `incr` in long double precision, as Redis does, and
/// returns the stored text. Nothing changes on error.
pub fn hincrbyfloat(
    ctx: &mut Ctx,
    key: &[u8],
    field: &[u8],
    incr: &[u8],
) -> Result<Vec<u8>, Error> {
    let incr = LongDouble::parse(incr).ok_or(Error::NOT_FLOAT)?;
    if !incr.is_finite() {
        return Err(Error::err("value is NaN or Infinity"));
    }
    let current = match write_hash(ctx, key, false)?.and_then(|h| h.get(field)) {
        Some(v) => LongDouble::parse(v).ok_or_else(|| Error::err("hash value is not a float"))?,
        None => LongDouble::from_i64(0),
    };
    let value = current.add(&incr);
    if !value.is_finite() {
        return Err(Error::err("increment would produce NaN or Infinity"));
    }
    let text = value.to_human_string();
    let limits = limits(ctx);
    let hash = write_hash(ctx, key, true)?.expect("created");
    hash.set_keep_ttl(field, &text, &limits);
    ctx.changed(key, notify::HASH, "hincrbyfloat");
    Ok(text)
}

// ---------------------------------------------------------------------------
// Commands.

fn hset_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() % 2 == 1 {
        return Err(Error::arity(ctx.command_name()));
    }
    let created = hset(ctx, args[1], &args[2..])?;
    // HMSET (deprecated) answers OK instead of the count.
    if args[0][1].eq_ignore_ascii_case(&b's') {
        ctx.out.int(created as i64);
    } else {
        ctx.out.ok();
    }
    Ok(())
}

fn hsetnx_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let set = hsetnx(ctx, args[1], args[2], args[3])?;
    ctx.out.int(set as i64);
    Ok(())
}

fn hget_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match read_hash(ctx, args[1])? {
        (Some(hash), out) => match hash.get(args[2]) {
            Some(v) => out.bulk(v),
            None => out.null(),
        },
        (None, out) => out.null(),
    }
    Ok(())
}

fn hmget_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // A missing key is an empty hash: one null per field.
    let (hash, out) = read_hash(ctx, args[1])?;
    out.array(args.len() - 2);
    for field in &args[2..] {
        match hash.and_then(|h| h.get(field)) {
            Some(v) => out.bulk(v),
            None => out.null(),
        }
    }
    Ok(())
}

fn hdel_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = hdel(ctx, args[1], &args[2..])?;
    ctx.out.int(n as i64);
    Ok(())
}

fn hlen_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (hash, out) = read_hash(ctx, args[1])?;
    out.int(hash.map_or(0, |h| h.len()) as i64);
    Ok(())
}

fn hstrlen_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (hash, out) = read_hash(ctx, args[1])?;
    out.int(hash.and_then(|h| h.get(args[2])).map_or(0, |v| v.len()) as i64);
    Ok(())
}

fn hexists_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (hash, out) = read_hash(ctx, args[1])?;
    out.int(hash.is_some_and(|h| h.contains(args[2])) as i64);
    Ok(())
}

/// HKEYS, HVALS and HGETALL (Redis's genericHgetallCommand): HGETALL
/// answers a map, the others a flat array.
fn hgetall_generic(ctx: &mut Ctx, key: &[u8], fields: bool, values: bool) -> CmdResult {
    let (hash, out) = read_hash(ctx, key)?;
    let len = hash.map_or(0, |h| h.len());
    if fields && values {
        out.map(len);
    } else {
        out.array(len);
    }
    for (f, v) in hash.into_iter().flat_map(|h| h.iter()) {
        if fields {
            out.bulk(f);
        }
        if values {
            out.bulk(v);
        }
    }
    Ok(())
}

fn hkeys_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    hgetall_generic(ctx, args[1], true, false)
}

fn hvals_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    hgetall_generic(ctx, args[1], false, true)
}

fn hgetall_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    hgetall_generic(ctx, args[1], true, true)
}

fn hincrby_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let incr = arg_i64(args[3])?;
    let v = hincrby(ctx, args[1], args[2], incr)?;
    ctx.out.int(v);
    Ok(())
}

fn hincrbyfloat_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let text = hincrbyfloat(ctx, args[1], args[2], args[3])?;
    // Logged as the value it produced (Redis logs HSET).
    ctx.propagate_as(&[b"HSET", args[1], args[2], &text]);
    ctx.out.bulk(&text);
    Ok(())
}

/// Parses a count of HRANDFIELD or SRANDMEMBER: an integer in
/// [-LONG_MAX, LONG_MAX] (Redis's getRangeLongFromObjectOrReply).
pub fn parse_random_count(arg: &[u8]) -> Result<i64, Error> {
    let l = arg_i64(arg)?;
    if l == i64::MIN {
        return Err(Error::err(format_args!(
            "value is out of range, value must between {} and {}",
            -i64::MAX,
            i64::MAX
        )));
    }
    Ok(l)
}

/// How many times bigger than the count a hash must be for HRANDFIELD to
/// draw random fields rather than copy the hash and remove some (Redis's
/// HRANDFIELD_SUB_STRATEGY_MUL).
const SUB_STRATEGY_MUL: u64 = 3;

/// Random draws stop when the reply grows past this, and the client is
/// closed as Redis closes a client over its output buffer limit: a huge
/// negative count must not exhaust the server's memory.
pub const RANDOM_REPLY_LIMIT: usize = 512 << 20;

/// HRANDFIELD key [count [WITHVALUES]]
fn hrandfield_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut a = Args::new(&args[2..]);
    if let Ok(count) = a.next_arg() {
        let l = parse_random_count(count)?;
        let withvalues = a.flag("WITHVALUES");
        a.finish()?;
        if withvalues && !(-i64::MAX / 2..=i64::MAX / 2).contains(&l) {
            return Err(Error::err("value is out of range"));
        }
        return hrandfield_with_count(ctx, args[1], l, withvalues);
    }
    let mut rng = fastrand::Rng::new();
    match read_hash(ctx, args[1])? {
        (Some(hash), out) => match hash.random(&mut rng) {
            Some((f, _)) => out.bulk(f),
            None => out.null(),
        },
        (None, out) => out.null(),
    }
    Ok(())
}

/// Redis's hrandfieldWithCountCommand, with its four cases.
fn hrandfield_with_count(ctx: &mut Ctx, key: &[u8], l: i64, withvalues: bool) -> CmdResult {
    let (hash, out) = read_hash(ctx, key)?;
    let Some(hash) = hash else {
        out.array(0);
        return Ok(());
    };
    let (count, unique) = if l >= 0 {
        (l as u64, true)
    } else {
        (l.unsigned_abs(), false)
    };
    if count == 0 {
        out.array(0);
        return Ok(());
    }
    let resp3 = out.is_resp3();
    let emit = |out: &mut ReplyWriter, f: &[u8], v: &[u8]| {
        if withvalues && resp3 {
            out.array(2);
        }
        out.bulk(f);
        if withvalues {
            out.bulk(v);
        }
    };
    let header = |out: &mut ReplyWriter, n: u64| {
        if withvalues && !resp3 {
            out.array(n as usize * 2);
        } else {
            out.array(n as usize);
        }
    };
    let mut rng = fastrand::Rng::new();
    let size = hash.len() as u64;

    // CASE 1: a negative count (or 1) draws with repetitions.
    if !unique || count == 1 {
        header(out, count);
        let sampler = hash.sampler();
        let mut overflow = false;
        for _ in 0..count {
            let (f, v) = sampler.pick(&mut rng);
            emit(out, f, v);
            if out.len() > RANDOM_REPLY_LIMIT {
                overflow = true;
                break;
            }
        }
        if overflow {
            ctx.client.close_after_reply = true;
        }
        return Ok(());
    }

    // CASE 2: the count covers the whole hash.
    if count >= size {
        header(out, size);
        for (f, v) in hash.iter() {
            emit(out, f, v);
        }
        return Ok(());
    }

    header(out, count);
    if count * SUB_STRATEGY_MUL > size {
        // CASE 3: the count is close to the size: copy the pairs and
        // remove random ones until `count` are left.
        let mut pairs: Vec<(&[u8], &[u8])> = hash.iter().collect();
        while pairs.len() as u64 > count {
            let i = rng.usize(..pairs.len());
            pairs.swap_remove(i);
        }
        for (f, v) in pairs {
            emit(out, f, v);
        }
    } else if hash.is_compact() {
        // CASE 4, compact: selection sampling over the pairs, in order.
        let mut needed = count;
        let mut left = size;
        for (f, v) in hash.iter() {
            if rng.u64(..left) < needed {
                emit(out, f, v);
                needed -= 1;
                if needed == 0 {
                    break;
                }
            }
            left -= 1;
        }
    } else {
        // CASE 4, table: draw until `count` distinct fields were seen.
        let mut seen: std::collections::HashSet<&[u8]> =
            std::collections::HashSet::with_capacity(count as usize);
        let sampler = hash.sampler();
        while (seen.len() as u64) < count {
            let (f, v) = sampler.pick(&mut rng);
            if seen.insert(f) {
                emit(out, f, v);
            }
        }
    }
    Ok(())
}

/// Writes an empty SCAN reply ("0" and no elements).
pub fn empty_scan(out: &mut ReplyWriter) {
    out.array(2);
    out.bulk(b"0");
    out.array(0);
}

fn hscan_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Redis parses the cursor, then looks the key up, then the options.
    let cursor = parse_cursor(args[2])?;
    let (hash, out) = read_hash(ctx, args[1])?;
    let Some(hash) = hash else {
        empty_scan(out);
        return Ok(());
    };
    let opts = parse_scan_options(&args[3..], false)?;
    // Fields and values both count towards COUNT, as in Redis.
    let count = opts.count.saturating_mul(2);
    let mut iterations = count.saturating_mul(10);
    let mut collected = 0usize;
    let mut items: Vec<&[u8]> = Vec::new();
    let mut cursor = cursor;
    loop {
        cursor = hash.scan(cursor, |f, v| {
            collected += 2;
            if opts.pattern.is_none_or(|p| glob_match(p, f, false)) {
                items.push(f);
                items.push(v);
            }
        });
        if cursor == 0 || iterations == 0 || collected >= count {
            break;
        }
        iterations -= 1;
    }
    out.array(2);
    out.bulk(itoa::Buffer::new().format(cursor).as_bytes());
    out.array(items.len());
    for item in items {
        out.bulk(item);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Field expiry (Redis 7.4 / 8.0): HEXPIRE and its family, HTTL and its
// family, HPERSIST, HSETEX, HGETEX, HGETDEL.

/// The latest deadline a field may have: 2^46 - 1 ms (Redis's
/// HFE_MAX_ABS_TIME_MSEC, a quarter of its 48-bit expiry range).
const FIELD_TTL_MAX_MS: i64 = ((1 << 48) - 1) >> 2;

/// Redis's parseExpireTime for field TTLs: an absolute deadline in ms from
/// a time in seconds or ms, relative to `base` (0 for the *AT forms).
fn parse_field_expire(arg: &[u8], seconds: bool, base: u64, cmd: &str) -> Result<u64, Error> {
    let mut v = arg_i64(arg)?;
    if v < 0 {
        return Err(Error::err("invalid expire time, must be >= 0"));
    }
    if seconds {
        if v > FIELD_TTL_MAX_MS / 1000 {
            return Err(Error::expire_time(cmd));
        }
        v *= 1000;
    }
    if v > FIELD_TTL_MAX_MS - base as i64 {
        return Err(Error::expire_time(cmd));
    }
    Ok((v + base as i64) as u64)
}

const FIELDS_MISSING: &str = "Mandatory argument FIELDS is missing or not at the right position";
const NUMFIELDS_MISMATCH: &str = "The `numfields` parameter must match the number of arguments";

/// `FIELDS numfields field...`, the rest of `args`: the fields, after
/// Redis's checks (the keyword, a count >= 1 reported with `count_error`,
/// a count matching the arguments that follow). A missing count is
/// `command`'s arity error.
fn take_fields<'s, 'a>(
    args: &mut Args<'s, 'a>,
    command: &str,
    count_error: &str,
) -> Result<&'s [&'a [u8]], Error> {
    if !args.flag("FIELDS") {
        return Err(Error::err(FIELDS_MISSING));
    }
    let count = args.next_arg().map_err(|_| Error::arity(command))?;
    let n = parse_i64(count)
        .filter(|n| *n >= 1)
        .ok_or_else(|| Error::err(count_error))?;
    let fields = args.rest();
    if n as u64 != fields.len() as u64 {
        return Err(Error::err(NUMFIELDS_MISMATCH));
    }
    Ok(fields)
}

/// NX, XX, GT or LT, taken from `args`; Always when none is there.
fn take_ttl_condition(args: &mut Args) -> TtlCondition {
    if args.flag("NX") {
        TtlCondition::Nx
    } else if args.flag("XX") {
        TtlCondition::Xx
    } else if args.flag("GT") {
        TtlCondition::Gt
    } else if args.flag("LT") {
        TtlCondition::Lt
    } else {
        TtlCondition::Always
    }
}

/// Settles a hash after its fields or their TTLs changed: deletes the key
/// when no field is left (with its "del" notification, after the
/// caller's), registers it for the active expiry cycle when a field has a
/// TTL, and counts `changes` (WATCH, dirty).
fn settle_hash(ctx: &mut Ctx, key: &[u8], emptied: bool, has_ttls: bool, changes: usize) {
    if emptied {
        remove_key(ctx, key);
        ctx.notify(notify::GENERIC, "del", key);
    } else if has_ttls {
        track_field_expiry(ctx, key);
    }
    if changes > 0 {
        ctx.modified(key);
        ctx.add_dirty(changes as u64 - 1);
    }
}

/// The notifications of field TTL changes (Redis 7.4's): "hexpire" when
/// fields got a deadline, "hdel" when a deadline already past deleted
/// them.
fn ttl_events(ctx: &mut Ctx, key: &[u8], set: bool, deleted: bool) {
    if set {
        ctx.notify(notify::HASH, "hexpire", key);
    }
    if deleted {
        ctx.notify(notify::HASH, "hdel", key);
    }
}

/// Logs field deadlines set (HPEXPIREAT with the absolute time) and
/// fields deleted (HDEL) in place of the call; nothing when neither.
fn log_field_ttls(ctx: &mut Ctx, key: &[u8], at: u64, set: &[&[u8]], deleted: &[&[u8]]) {
    ctx.propagate_nothing();
    if !set.is_empty() {
        let at = at.to_string();
        let n = set.len().to_string();
        let mut argv: Vec<&[u8]> = vec![b"HPEXPIREAT", key, at.as_bytes(), b"FIELDS", n.as_bytes()];
        argv.extend_from_slice(set);
        ctx.propagate_as(&argv);
    }
    if !deleted.is_empty() {
        let mut argv: Vec<&[u8]> = vec![b"HDEL", key];
        argv.extend_from_slice(deleted);
        ctx.propagate_as(&argv);
    }
}

/// HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT (Redis's
/// hexpireGenericCommand): a deadline for each field, under NX | XX | GT |
/// LT; per field -2 (no such field), 0 (condition not met), 1 (set) or 2
/// (deleted: the deadline had passed).
pub fn hexpire(
    ctx: &mut Ctx,
    key: &[u8],
    at_ms: u64,
    cond: TtlCondition,
    fields: &[&[u8]],
) -> Result<Vec<SetTtl>, Error> {
    let now = ctx.now_ms;
    let Some(hash) = write_hash(ctx, key, false)? else {
        return Ok(vec![SetTtl::NoField; fields.len()]);
    };
    hash.enable_field_ttls();
    let results: Vec<SetTtl> = fields
        .iter()
        .map(|f| hash.set_field_expiry(f, at_ms, cond, now))
        .collect();
    let (emptied, has_ttls) = (hash.is_empty(), hash.has_field_ttls());
    let changes = results
        .iter()
        .filter(|r| matches!(r, SetTtl::Set | SetTtl::Deleted))
        .count();
    ttl_events(
        ctx,
        key,
        results.contains(&SetTtl::Set),
        results.contains(&SetTtl::Deleted),
    );
    settle_hash(ctx, key, emptied, has_ttls, changes);
    Ok(results)
}

fn hexpire_generic(ctx: &mut Ctx, args: &[&[u8]], seconds: bool, relative: bool) -> CmdResult {
    let key = args[1];
    // Redis checks the type before the arguments.
    write_hash(ctx, key, false)?;
    let base = if relative { ctx.now_ms } else { 0 };
    let at = parse_field_expire(args[2], seconds, base, ctx.command_name())?;
    let mut a = Args::new(&args[3..]);
    let cond = take_ttl_condition(&mut a);
    let fields = take_fields(
        &mut a,
        ctx.command_name(),
        "Parameter `numFields` should be greater than 0",
    )?;
    let results = hexpire(ctx, key, at, cond, fields)?;
    if ctx.propagating() {
        // Logged as what happened, with an absolute time: the fields that
        // got the deadline, and those it deleted.
        let pick = |want: SetTtl| -> Vec<&[u8]> {
            fields
                .iter()
                .zip(&results)
                .filter(|(_, r)| **r == want)
                .map(|(f, _)| *f)
                .collect()
        };
        log_field_ttls(ctx, key, at, &pick(SetTtl::Set), &pick(SetTtl::Deleted));
    }
    ctx.out.array(results.len());
    for r in results {
        ctx.out.int(r as i64);
    }
    Ok(())
}

fn hexpire_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    hexpire_generic(ctx, args, true, true)
}

fn hpexpire_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    hexpire_generic(ctx, args, false, true)
}

fn hexpireat_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    hexpire_generic(ctx, args, true, false)
}

fn hpexpireat_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    hexpire_generic(ctx, args, false, false)
}

/// HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME (Redis's httlGenericCommand):
/// per field -2 (no such field), -1 (no TTL), or the TTL or deadline;
/// seconds are rounded up, as Redis rounds them.
fn httl_generic(ctx: &mut Ctx, args: &[&[u8]], millis: bool, absolute: bool) -> CmdResult {
    let now = ctx.now_ms;
    let command = ctx.command_name();
    let (hash, out) = read_hash(ctx, args[1])?;
    let fields = take_fields(
        &mut Args::new(&args[2..]),
        command,
        "Number of fields must be a positive integer",
    )?;
    let base = if absolute { 0 } else { now as i64 };
    out.array(fields.len());
    for f in fields {
        match hash.and_then(|h| h.field_expiry(f)) {
            None => out.int(-2),
            Some(None) => out.int(-1),
            Some(Some(at)) if at <= now => out.int(-2),
            Some(Some(at)) if millis => out.int(at as i64 - base),
            Some(Some(at)) => out.int((at as i64 + 999 - base) / 1000),
        }
    }
    Ok(())
}

fn httl_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    httl_generic(ctx, args, false, false)
}

fn hpttl_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    httl_generic(ctx, args, true, false)
}

fn hexpiretime_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    httl_generic(ctx, args, false, true)
}

fn hpexpiretime_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    httl_generic(ctx, args, true, true)
}

/// HPERSIST: per field -2 (no such field), -1 (no TTL) or 1 (TTL removed).
pub fn hpersist(ctx: &mut Ctx, key: &[u8], fields: &[&[u8]]) -> Result<Vec<i64>, Error> {
    let Some(hash) = write_hash(ctx, key, false)? else {
        return Ok(vec![-2; fields.len()]);
    };
    let results: Vec<i64> = fields
        .iter()
        .map(|f| match hash.field_expiry(f) {
            None => -2,
            Some(None) => -1,
            Some(Some(_)) => {
                hash.persist_field(f);
                1
            }
        })
        .collect();
    if results.contains(&1) {
        ctx.changed(key, notify::HASH, "hpersist");
    }
    Ok(results)
}

fn hpersist_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    write_hash(ctx, args[1], false)?;
    let fields = take_fields(
        &mut Args::new(&args[2..]),
        ctx.command_name(),
        "Number of fields must be a positive integer",
    )?;
    let results = hpersist(ctx, args[1], fields)?;
    ctx.out.array(results.len());
    for r in results {
        ctx.out.int(r);
    }
    Ok(())
}

/// HSETEX's and HGETEX's expiry option, resolved to a deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldExpiry {
    /// No option: HSETEX clears the fields' TTLs (as HSET), HGETEX leaves
    /// them.
    None,
    KeepTtl,
    Persist,
    At(u64),
}

/// HSETEX's parsed arguments.
#[derive(Debug)]
pub struct HSetExOptions<'a> {
    /// FNX (Some(false): no field may exist) or FXX (Some(true): all must).
    pub existing: Option<bool>,
    pub expiry: FieldExpiry,
    /// Field, value, field, value...
    pub pairs: &'a [&'a [u8]],
}

/// HSETEX's and HGETEX's expiry options, and for each whether its time
/// is in seconds and whether it is relative to now.
const EXPIRE_UNITS: &[&str] = &["EX", "PX", "EXAT", "PXAT"];
const EXPIRE_UNIT_KINDS: [(bool, bool); 4] =
    [(true, true), (false, true), (true, false), (false, false)];

/// EX, PX, EXAT or PXAT, taken from `args` without its time (HSETEX has
/// its own error for a missing time): its kind, as in EXPIRE_UNIT_KINDS.
fn take_expire_unit(args: &mut Args) -> Option<(bool, bool)> {
    for (unit, kind) in EXPIRE_UNITS.iter().zip(EXPIRE_UNIT_KINDS) {
        if args.flag(unit) {
            return Some(kind);
        }
    }
    None
}

/// FXX (true: every field must exist) or FNX (false: none may), taken
/// from `args`.
fn take_field_condition(args: &mut Args) -> Option<bool> {
    if args.flag("FXX") {
        Some(true)
    } else if args.flag("FNX") {
        Some(false)
    } else {
        None
    }
}

/// Redis's hsetexParseArgs.
pub fn parse_hsetex<'a>(ctx: &Ctx, args: &'a [&'a [u8]]) -> Result<HSetExOptions<'a>, Error> {
    let mut existing = None;
    let mut expiry = FieldExpiry::None;
    let one_expiry =
        || Error::err("Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified");
    let one_cond = || Error::err("Only one of FXX or FNX arguments can be specified");
    let arity = || Error::arity(ctx.command_name());
    let mut a = Args::new(&args[2..]);
    while !a.is_empty() {
        if a.flag("FIELDS") {
            // The count and at least one field and its value.
            if a.rest().len() < 3 {
                return Err(arity());
            }
            let n = parse_i64(a.next_arg()?)
                .filter(|n| (1..=i32::MAX as i64).contains(n))
                .ok_or_else(|| Error::err("invalid number of fields"))?;
            let pairs = a.rest();
            if pairs.len() % 2 != 0 || n as usize != pairs.len() / 2 {
                return Err(arity());
            }
            return Ok(HSetExOptions {
                existing,
                expiry,
                pairs,
            });
        } else if let Some((seconds, relative)) = take_expire_unit(&mut a) {
            if expiry != FieldExpiry::None {
                return Err(one_expiry());
            }
            let time = a
                .next_arg()
                .map_err(|_| Error::err("missing expire time"))?;
            let base = if relative { ctx.now_ms } else { 0 };
            expiry = FieldExpiry::At(parse_field_expire(time, seconds, base, ctx.command_name())?);
        } else if a.flag("KEEPTTL") {
            if expiry != FieldExpiry::None {
                return Err(one_expiry());
            }
            expiry = FieldExpiry::KeepTtl;
        } else if let Some(fxx) = take_field_condition(&mut a) {
            if existing.is_some() {
                return Err(one_cond());
            }
            existing = Some(fxx);
        } else {
            return Err(Error::concat(&[
                b"ERR unknown argument: ",
                crate::error::printf_s(a.next_arg()?, usize::MAX),
            ]));
        }
    }
    Err(arity())
}

/// HSETEX (Redis 8.0): sets the fields when FNX / FXX allow it (none /
/// all of them exist), with their TTLs as the expiry option says: a
/// deadline, KEEPTTL, or none (cleared, as HSET clears them). Returns
/// false when the condition refused the call (nothing changes, and FXX
/// never creates the key).
pub fn hsetex(ctx: &mut Ctx, key: &[u8], opts: &HSetExOptions) -> Result<bool, Error> {
    let limits = limits(ctx);
    let now = ctx.now_ms;
    let fields = || opts.pairs.iter().step_by(2);
    if let Some(all) = opts.existing {
        let hash = write_hash(ctx, key, false)?;
        let allowed = match hash {
            None => !all,
            Some(h) => {
                if all {
                    fields().all(|f| h.contains(f))
                } else {
                    !fields().any(|f| h.contains(f))
                }
            }
        };
        if !allowed {
            return Ok(false);
        }
    }
    let hash = write_hash(ctx, key, true)?.expect("created");
    hash.prepare_write(opts.pairs, &limits);
    let keep = !matches!(opts.expiry, FieldExpiry::None);
    for kv in opts.pairs.chunks_exact(2) {
        if keep {
            hash.set_keep_ttl(kv[0], kv[1], &limits);
        } else {
            hash.set(kv[0], kv[1], &limits);
        }
    }
    let (mut expired, mut deleted) = (false, false);
    if let FieldExpiry::At(at) = opts.expiry {
        hash.enable_field_ttls();
        for f in fields() {
            match hash.set_field_expiry(f, at, TtlCondition::Always, now) {
                SetTtl::Set => expired = true,
                SetTtl::Deleted => deleted = true,
                _ => {}
            }
        }
    }
    let (emptied, has_ttls) = (hash.is_empty(), hash.has_field_ttls());
    ctx.notify(notify::HASH, "hset", key);
    ttl_events(ctx, key, expired, deleted);
    settle_hash(ctx, key, emptied, has_ttls, opts.pairs.len() / 2);
    Ok(true)
}

fn hsetex_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let opts = parse_hsetex(ctx, args)?;
    let set = hsetex(ctx, args[1], &opts)?;
    if let (true, FieldExpiry::At(at)) = (set, opts.expiry) {
        // Logged with the absolute deadline (or as the deletion a past
        // one caused), so a replay gives the same fields their time.
        if at <= ctx.now_ms {
            let fields: Vec<&[u8]> = opts.pairs.iter().step_by(2).copied().collect();
            log_field_ttls(ctx, args[1], at, &[], &fields);
        } else {
            let at = at.to_string();
            let n = (opts.pairs.len() / 2).to_string();
            let mut argv: Vec<&[u8]> = vec![
                b"HSETEX",
                args[1],
                b"PXAT",
                at.as_bytes(),
                b"FIELDS",
                n.as_bytes(),
            ];
            argv.extend_from_slice(opts.pairs);
            ctx.propagate_as(&argv);
        }
    }
    ctx.out.int(set as i64);
    Ok(())
}

fn hgetex_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    // Redis checks the type before the arguments.
    write_hash(ctx, key, false)?;
    let now = ctx.now_ms;
    let mut a = Args::new(&args[2..]);
    let expiry = if let Some((unit, time)) = a.option_of(EXPIRE_UNITS) {
        let (seconds, relative) = EXPIRE_UNIT_KINDS[unit];
        let base = if relative { now } else { 0 };
        FieldExpiry::At(parse_field_expire(time, seconds, base, ctx.command_name())?)
    } else if a.flag("PERSIST") {
        FieldExpiry::Persist
    } else {
        FieldExpiry::None
    };
    let fields = take_fields(
        &mut a,
        ctx.command_name(),
        "Number of fields must be a positive integer",
    )?;
    let (hash, out) = access_hash(ctx, key)?;
    out.array(fields.len());
    let Some(hash) = hash else {
        for _ in fields {
            out.null();
        }
        return Ok(());
    };
    if expiry != FieldExpiry::None {
        hash.enable_field_ttls();
    }
    let mut changes = 0;
    // What to log in place of the call: fields given the deadline or
    // persisted, fields deleted.
    let mut touched: Vec<&[u8]> = Vec::new();
    let mut deleted: Vec<&[u8]> = Vec::new();
    for f in fields {
        match hash.get(f) {
            Some(v) => out.bulk(v),
            None => {
                out.null();
                continue;
            }
        }
        match expiry {
            FieldExpiry::Persist if hash.persist_field(f) => {
                changes += 1;
                touched.push(f);
            }
            FieldExpiry::At(at) => match hash.set_field_expiry(f, at, TtlCondition::Always, now) {
                SetTtl::Set => {
                    changes += 1;
                    touched.push(f);
                }
                SetTtl::Deleted => {
                    changes += 1;
                    deleted.push(f);
                }
                _ => {}
            },
            _ => {}
        }
    }
    let (emptied, has_ttls) = (hash.is_empty(), hash.has_field_ttls());
    if expiry == FieldExpiry::Persist && !touched.is_empty() {
        ctx.notify(notify::HASH, "hpersist", key);
    } else {
        ttl_events(ctx, key, !touched.is_empty(), !deleted.is_empty());
    }
    settle_hash(ctx, key, emptied, has_ttls, changes);
    if ctx.propagating() {
        match expiry {
            FieldExpiry::At(at) => log_field_ttls(ctx, key, at, &touched, &deleted),
            FieldExpiry::Persist => {
                ctx.propagate_nothing();
                if !touched.is_empty() {
                    let n = touched.len().to_string();
                    let mut argv: Vec<&[u8]> = vec![b"HPERSIST", key, b"FIELDS", n.as_bytes()];
                    argv.extend_from_slice(&touched);
                    ctx.propagate_as(&argv);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn hgetdel_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    write_hash(ctx, key, false)?;
    let fields = take_fields(
        &mut Args::new(&args[2..]),
        ctx.command_name(),
        "Number of fields must be a positive integer",
    )?;
    let (hash, out) = access_hash(ctx, key)?;
    out.array(fields.len());
    let Some(hash) = hash else {
        for _ in fields {
            out.null();
        }
        return Ok(());
    };
    let mut deleted = 0;
    for f in fields {
        match hash.get(f) {
            Some(v) => out.bulk(v),
            None => {
                out.null();
                continue;
            }
        }
        hash.remove(f);
        deleted += 1;
    }
    let emptied = hash.is_empty();
    if deleted > 0 {
        ctx.notify(notify::HASH, "hdel", key);
    }
    settle_hash(ctx, key, emptied, false, deleted);
    Ok(())
}

// ---------------------------------------------------------------------------
// The family's table.

const RO_ACCESS: u32 = kflag::RO | kflag::ACCESS;
const RW_UPDATE: u32 = kflag::RW | kflag::UPDATE;
const RW_ACCESS_UPDATE: u32 = kflag::RW | kflag::ACCESS | kflag::UPDATE;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "hset",
        arity: -4,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Set the string value of a hash field",
        complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
        history: &[("4.0.0", "Accepts multiple `field` and `value` arguments.")],
        syntax: "key:key field_value:block(field:string value:string)...",
        handler: hset_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hsetnx",
        arity: 4,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::INSERT)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Set the value of a hash field, only if the field does not exist",
        complexity: "O(1)",
        syntax: "key:key field:string value:string",
        handler: hsetnx_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hget",
        arity: 3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Get the value of a hash field",
        complexity: "O(1)",
        syntax: "key:key field:string",
        handler: hget_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hmget",
        arity: -3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Get the values of all the given hash fields",
        complexity: "O(N) where N is the number of fields being requested.",
        syntax: "key:key field:string...",
        handler: hmget_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hmset",
        arity: -4,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Set multiple hash fields to multiple values",
        complexity: "O(N) where N is the number of fields being set.",
        doc_flags: &["deprecated"],
        deprecated_since: "4.0.0",
        replaced_by: "`HSET` with multiple field-value pairs",
        syntax: "key:key field_value:block(field:string value:string)...",
        handler: hset_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hdel",
        arity: -3,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::DELETE)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Delete one or more hash fields",
        complexity: "O(N) where N is the number of fields to be removed.",
        history: &[("2.4.0", "Accepts multiple `field` arguments.")],
        syntax: "key:key field:string...",
        handler: hdel_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hexists",
        arity: 3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Determine if a hash field exists",
        complexity: "O(1)",
        syntax: "key:key field:string",
        handler: hexists_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hlen",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Get the number of fields in a hash",
        complexity: "O(1)",
        syntax: "key:key",
        handler: hlen_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hstrlen",
        arity: 3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO)],
        group: Group::Hash,
        since: "3.2.0",
        summary: "Get the length of the value of a hash field",
        complexity: "O(1)",
        syntax: "key:key field:string",
        handler: hstrlen_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hkeys",
        arity: 2,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Get all the fields in a hash",
        complexity: "O(N) where N is the size of the hash.",
        syntax: "key:key",
        tips: &["nondeterministic_output_order"],
        handler: hkeys_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hvals",
        arity: 2,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Get all the values in a hash",
        complexity: "O(N) where N is the size of the hash.",
        syntax: "key:key",
        tips: &["nondeterministic_output_order"],
        handler: hvals_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hgetall",
        arity: 2,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Get all the fields and values in a hash",
        complexity: "O(N) where N is the size of the hash.",
        syntax: "key:key",
        tips: &["nondeterministic_output_order"],
        handler: hgetall_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hincrby",
        arity: 4,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::Hash,
        since: "2.0.0",
        summary: "Increment the integer value of a hash field by the given number",
        complexity: "O(1)",
        syntax: "key:key field:string increment:integer",
        handler: hincrby_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hincrbyfloat",
        arity: 4,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::Hash,
        since: "2.6.0",
        summary: "Increment the float value of a hash field by the given amount",
        complexity: "O(1)",
        syntax: "key:key field:string increment:double",
        handler: hincrbyfloat_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hrandfield",
        arity: -2,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "6.2.0",
        summary: "Get one or multiple random fields from a hash",
        complexity: "O(N) where N is the number of fields returned",
        syntax: "key:key [options:block(count:integer [WITHVALUES])]",
        tips: &["nondeterministic_output"],
        handler: hrandfield_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hscan",
        arity: -3,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "2.8.0",
        summary: "Incrementally iterate hash fields and associated values",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        syntax: "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]",
        tips: &["nondeterministic_output"],
        handler: hscan_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hexpire",
        arity: -6,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Hash,
        since: "7.4.0",
        summary: "Set expiry for hash field using relative time to expire (seconds)",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key seconds:integer [NX|XX|GT|LT] FIELDS (numfields:integer field:string...)",
        handler: hexpire_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hpexpire",
        arity: -6,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Hash,
        since: "7.4.0",
        summary: "Set expiry for hash field using relative time to expire (milliseconds)",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key milliseconds:integer [NX|XX|GT|LT] FIELDS (numfields:integer field:string...)",
        handler: hpexpire_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hexpireat",
        arity: -6,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Hash,
        since: "7.4.0",
        summary: "Set expiry for hash field using an absolute Unix timestamp (seconds)",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key unix-time-seconds:unix-time [NX|XX|GT|LT] FIELDS (numfields:integer field:string...)",
        handler: hexpireat_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hpexpireat",
        arity: -6,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Hash,
        since: "7.4.0",
        summary: "Set expiry for hash field using an absolute Unix timestamp (milliseconds)",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key unix-time-milliseconds:unix-time [NX|XX|GT|LT] FIELDS (numfields:integer field:string...)",
        handler: hpexpireat_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "httl",
        arity: -5,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "7.4.0",
        summary: "Returns the TTL in seconds of a hash field.",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key FIELDS (numfields:integer field:string...)",
        tips: &["nondeterministic_output"],
        handler: httl_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hpttl",
        arity: -5,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "7.4.0",
        summary: "Returns the TTL in milliseconds of a hash field.",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key FIELDS (numfields:integer field:string...)",
        tips: &["nondeterministic_output"],
        handler: hpttl_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hexpiretime",
        arity: -5,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "7.4.0",
        summary: "Returns the expiration time of a hash field as a Unix timestamp, in seconds.",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key FIELDS (numfields:integer field:string...)",
        handler: hexpiretime_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hpexpiretime",
        arity: -5,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Hash,
        since: "7.4.0",
        summary: "Returns the expiration time of a hash field as a Unix timestamp, in msec.",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key FIELDS (numfields:integer field:string...)",
        handler: hpexpiretime_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hpersist",
        arity: -5,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Hash,
        since: "7.4.0",
        summary: "Removes the expiration time for each specified field",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key FIELDS (numfields:integer field:string...)",
        handler: hpersist_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hsetex",
        arity: -6,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::Hash,
        since: "8.0.0",
        summary: "Set the value of one or more fields of a given hash key, and optionally set their expiration.",
        complexity: "O(N) where N is the number of fields being set.",
        syntax: "key:key [FNX|FXX] [EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|KEEPTTL] FIELDS (numfields:integer (field:string value:string)...)",
        handler: hsetex_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hgetex",
        arity: -5,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::Hash,
        since: "8.0.0",
        summary: "Get the value of one or more fields of a given hash key, and optionally set their expiration.",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key [EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|PERSIST] FIELDS (numfields:integer field:string...)",
        handler: hgetex_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "hgetdel",
        arity: -5,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE)],
        group: Group::Hash,
        since: "8.0.0",
        summary: "Returns the value of a field and deletes it from the hash.",
        complexity: "O(N) where N is the number of specified fields",
        syntax: "key:key FIELDS (numfields:integer field:string...)",
        handler: hgetdel_command,
        ..CommandSpec::DEFAULT
    },
];

#[cfg(test)]
mod tests {
    use crate::test_support::{run, run_args, session};
    use crate::Session;

    #[test]
    fn hset_counts_new_fields_and_hmset_answers_ok() {
        let mut s = session();
        assert_eq!(run(&mut s, "hset h a 1 b 2"), ":2\r\n");
        assert_eq!(run(&mut s, "hset h a 3 c 4"), ":1\r\n");
        assert_eq!(run(&mut s, "hmset h a 5"), "+OK\r\n");
        assert_eq!(
            run(&mut s, "hset h a 1 b"),
            "-ERR wrong number of arguments for 'hset' command\r\n"
        );
        assert_eq!(
            run(&mut s, "hmset h a 1 b"),
            "-ERR wrong number of arguments for 'hmset' command\r\n"
        );
        // Listpack order is insertion order, as in Redis.
        assert_eq!(
            run(&mut s, "hgetall h"),
            "*6\r\n$1\r\na\r\n$1\r\n5\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n4\r\n"
        );
    }

    #[test]
    fn removing_the_last_field_deletes_the_key() {
        let mut s = session();
        run(&mut s, "hset h a 1 b 2 c 3");
        assert_eq!(run(&mut s, "hdel h a b c d e"), ":3\r\n");
        assert_eq!(run(&mut s, "exists h"), ":0\r\n");
        assert_eq!(run(&mut s, "hdel h a"), ":0\r\n");
    }

    #[test]
    fn wrong_type_everywhere() {
        let mut s = session();
        run(&mut s, "set str x");
        let wrongtype = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
        for cmd in [
            "hset str a 1",
            "hsetnx str a 1",
            "hget str a",
            "hmget str a",
            "hdel str a",
            "hlen str",
            "hstrlen str a",
            "hexists str a",
            "hkeys str",
            "hvals str",
            "hgetall str",
            "hincrby str a 1",
            "hincrbyfloat str a 1",
            "hrandfield str",
            "hrandfield str 2",
            "hscan str 0",
        ] {
            assert_eq!(run(&mut s, cmd), wrongtype, "{cmd}");
        }
        assert_eq!(run(&mut s, "get str"), "$1\r\nx\r\n");
    }

    #[test]
    fn counters_fail_without_changing_anything() {
        let mut s = session();
        run_args(
            &mut s,
            &[b"hset", b"h", b"n", b"-9223372036854775484", b"s", b"11 "],
        );
        assert_eq!(run(&mut s, "hincrby h n -1"), ":-9223372036854775485\r\n");
        assert_eq!(
            run(&mut s, "hincrby h n -10000"),
            "-ERR increment or decrement would overflow\r\n"
        );
        assert_eq!(run(&mut s, "hget h n"), "$20\r\n-9223372036854775485\r\n");
        assert_eq!(
            run(&mut s, "hincrby h s 1"),
            "-ERR hash value is not an integer\r\n"
        );
        assert_eq!(
            run(&mut s, "hincrbyfloat h s 1"),
            "-ERR hash value is not a float\r\n"
        );
        assert_eq!(
            run(&mut s, "hincrby h n x"),
            "-ERR value is not an integer or out of range\r\n"
        );
        // NaN and infinity are refused before the key is created.
        assert_eq!(
            run(&mut s, "hincrbyfloat hfoo f +inf"),
            "-ERR value is NaN or Infinity\r\n"
        );
        assert_eq!(run(&mut s, "exists hfoo"), ":0\r\n");
        assert_eq!(run(&mut s, "hincrbyfloat hfoo f 1.23"), "$4\r\n1.23\r\n");
        assert_eq!(run(&mut s, "hincrbyfloat hfoo f 0.77"), "$1\r\n2\r\n");
        run(&mut s, "hset hfoo big 1e4932");
        assert_eq!(
            run(&mut s, "hincrbyfloat hfoo big 1e4932"),
            "-ERR increment would produce NaN or Infinity\r\n"
        );
    }

    #[test]
    fn encoding_follows_redis_thresholds() {
        let mut s = session();
        run(&mut s, "config set hash-max-listpack-value 8");
        run(&mut s, "hincrbyfloat small tmp 0.000005");
        run(&mut s, "hincrbyfloat big tmp 0.0000005");
        assert_eq!(run(&mut s, "object encoding small"), "$8\r\nlistpack\r\n");
        assert_eq!(run(&mut s, "object encoding big"), "$9\r\nhashtable\r\n");
        run(&mut s, "config set hash-max-listpack-entries 2");
        run(&mut s, "hset h3 a 1 b 2");
        assert_eq!(run(&mut s, "object encoding h3"), "$8\r\nlistpack\r\n");
        run(&mut s, "hsetnx h3 c 3");
        assert_eq!(run(&mut s, "object encoding h3"), "$9\r\nhashtable\r\n");
        assert_eq!(run(&mut s, "hlen h3"), ":3\r\n");
    }

    #[test]
    fn hrandfield_reply_shapes() {
        let mut s = session();
        run(&mut s, "hset h a 1");
        assert_eq!(
            run(&mut s, "hrandfield h 1 withvalues"),
            "*2\r\n$1\r\na\r\n$1\r\n1\r\n"
        );
        assert_eq!(
            run(&mut s, "hrandfield h -2"),
            "*2\r\n$1\r\na\r\n$1\r\na\r\n"
        );
        assert_eq!(run(&mut s, "hrandfield h 0"), "*0\r\n");
        assert_eq!(run(&mut s, "hrandfield nokey 3"), "*0\r\n");
        assert_eq!(run(&mut s, "hrandfield nokey"), "$-1\r\n");
        assert_eq!(
            run(&mut s, "hrandfield h 1 withvalue"),
            "-ERR syntax error\r\n"
        );
        assert_eq!(
            run(&mut s, "hrandfield h 1 withvalues withvalues"),
            "-ERR syntax error\r\n"
        );
        // The count is parsed before the rest is looked at.
        assert_eq!(
            run(&mut s, "hrandfield h x y z"),
            "-ERR value is not an integer or out of range\r\n"
        );
        assert_eq!(
            run(&mut s, "hrandfield h -9223372036854775808"),
            "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"
        );
        assert_eq!(
            run(&mut s, "hrandfield h -9223372036854770000 withvalues"),
            "-ERR value is out of range\r\n"
        );
        run(&mut s, "hello 3");
        assert_eq!(
            run(&mut s, "hrandfield h -2 withvalues"),
            "*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"
        );
        assert_eq!(run(&mut s, "hgetall h"), "%1\r\n$1\r\na\r\n$1\r\n1\r\n");
        assert_eq!(run(&mut s, "hgetall nokey"), "%0\r\n");
    }

    #[test]
    fn hrandfield_distinct_counts_return_distinct_fields() {
        let mut s = session();
        for table in [false, true] {
            run(&mut s, "del h");
            if table {
                run(&mut s, "config set hash-max-listpack-entries 0");
            }
            run(&mut s, "hset h a 1 b 2 c 3 d 4 e 5 f 6 g 7 h 8 i 9 j 10");
            for count in [2, 8, 10, 20] {
                let reply = run(&mut s, &format!("hrandfield h {count}"));
                let fields: std::collections::HashSet<&str> = reply
                    .split("\r\n")
                    .skip(2)
                    .step_by(2)
                    .filter(|f| !f.is_empty())
                    .collect();
                assert_eq!(fields.len(), count.min(10), "{reply}");
            }
        }
    }

    #[test]
    fn hscan_checks_the_key_before_the_options() {
        let mut s = session();
        assert_eq!(
            run(&mut s, "hscan nokey 0 count 0"),
            "*2\r\n$1\r\n0\r\n*0\r\n"
        );
        assert_eq!(run(&mut s, "hscan nokey x"), "-ERR invalid cursor\r\n");
        run(&mut s, "hset h f1 v1 f2 v2 g v3");
        assert_eq!(run(&mut s, "hscan h 0 count 0"), "-ERR syntax error\r\n");
        assert_eq!(
            run(&mut s, "hscan h 0 match f*"),
            "*2\r\n$1\r\n0\r\n*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n"
        );
    }

    #[test]
    fn memory_usage_counts_collections() {
        let mut s = session();
        run(&mut s, "hset h a 1");
        let small: i64 = run(&mut s, "memory usage h")[1..].trim().parse().unwrap();
        assert!(small > 0);
        run(&mut s, "config set hash-max-listpack-entries 0");
        run(&mut s, "hset h2 a 1");
        for i in 0..100 {
            run(&mut s, &format!("hset h2 field:{i} value:{i}"));
        }
        let big: i64 = run(&mut s, "memory usage h2 samples 0")[1..]
            .trim()
            .parse()
            .unwrap();
        assert!(big > small + 100 * 48, "{big} vs {small}");
        assert_eq!(run(&mut s, "memory usage nokey"), "$-1\r\n");
        assert_eq!(
            run(&mut s, "memory usage h samples -1"),
            "-ERR syntax error\r\n"
        );
    }

    #[test]
    fn digest_value_is_canonical() {
        let mut s = session();
        run(&mut s, "hset a x 1 y 2");
        run(&mut s, "hset b y 2 x 1");
        run(&mut s, "config set hash-max-listpack-entries 0");
        run(&mut s, "hset c x 1 y 2");
        assert_eq!(run(&mut s, "object encoding c"), "$9\r\nhashtable\r\n");
        let reply = run(&mut s, "debug digest-value a b c");
        let digests: Vec<&str> = reply
            .split("\r\n")
            .skip(1)
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(digests.len(), 3);
        assert!(digests.iter().all(|d| *d == digests[0]), "{reply}");
        run(&mut s, "hset c y 3");
        assert_ne!(
            run(&mut s, "debug digest-value c"),
            run(&mut s, "debug digest-value a")
        );
    }

    fn ints(v: &[i64]) -> String {
        let mut out = format!("*{}\r\n", v.len());
        for n in v {
            out.push_str(&format!(":{n}\r\n"));
        }
        out
    }

    /// Runs `body` on a session twice: hashes in the compact form, then in
    /// the table form.
    fn both_forms(mut body: impl FnMut(&mut Session, &str)) {
        for (entries, encoding) in [("512", "listpackex"), ("0", "hashtable")] {
            let mut s = session();
            run(
                &mut s,
                &format!("config set hash-max-listpack-entries {entries}"),
            );
            body(&mut s, encoding);
        }
    }

    fn secs_from_now(s: &mut Session, n: i64) -> i64 {
        let t = run(s, "time");
        let secs: i64 = t.split("\r\n").nth(2).unwrap().parse().unwrap();
        secs + n
    }

    #[test]
    fn hexpire_replies_per_field() {
        both_forms(|s, encoding| {
            assert_eq!(run(s, "hexpire nokey 100 fields 2 a b"), ints(&[-2, -2]));
            run(s, "hset h f1 v1 f2 v2 f3 v3");
            assert_eq!(run(s, "hexpire h 1000 nx fields 1 f1"), ints(&[1]));
            assert_eq!(
                run(s, "object encoding h"),
                format!("${}\r\n{encoding}\r\n", encoding.len())
            );
            assert_eq!(run(s, "hexpire h 1000 nx fields 2 f1 f2"), ints(&[0, 1]));
            assert_eq!(run(s, "hexpire h 1000 xx fields 2 f1 f3"), ints(&[1, 0]));
            assert_eq!(
                run(s, "hpexpire h 2000000 gt fields 3 f1 f2 f3"),
                ints(&[1, 1, 0])
            );
            assert_eq!(
                run(s, "hpexpire h 1500000 lt fields 3 f1 f2 f3"),
                ints(&[1, 1, 1])
            );
            assert_eq!(run(s, "hpexpire h 1600000 lt fields 1 f1"), ints(&[0]));
            assert_eq!(run(s, "hpexpire h 1400000 gt fields 1 f1"), ints(&[0]));
            let ttl = run(s, "hpttl h fields 3 f1 nofield f3");
            let parts: Vec<&str> = ttl.split("\r\n").collect();
            let t: i64 = parts[1][1..].parse().unwrap();
            assert!(t > 1_000_000 && t <= 1_500_000, "{ttl}");
            assert_eq!(parts[2], ":-2");
            let httl = run(s, "httl h fields 1 f1");
            assert!(
                httl.starts_with("*1\r\n:1") || httl.starts_with("*1\r\n:14"),
                "{httl}"
            );
            // A deadline in the past deletes the field: 2.
            let past = secs_from_now(s, -1);
            assert_eq!(
                run(s, &format!("hexpireat h {past} fields 2 f2 nofield")),
                ints(&[2, -2])
            );
            assert_eq!(run(s, "hexists h f2"), ":0\r\n");
            // HEXPIRETIME / HPEXPIRETIME: the deadline itself.
            let at = secs_from_now(s, 100);
            assert_eq!(run(s, &format!("hexpireat h {at} fields 1 f1")), ints(&[1]));
            assert_eq!(run(s, "hexpiretime h fields 2 f1 nofield"), ints(&[at, -2]));
            assert_eq!(run(s, "hpexpiretime h fields 1 f1"), ints(&[at * 1000]));
            // The last field deleted deletes the key.
            assert_eq!(
                run(s, "hpexpireat h 1 fields 3 f1 f3 f2"),
                ints(&[2, 2, -2])
            );
            assert_eq!(run(s, "exists h"), ":0\r\n");
        });
    }

    #[test]
    fn httl_and_hpersist() {
        both_forms(|s, _| {
            assert_eq!(run(s, "httl nokey fields 2 a b"), ints(&[-2, -2]));
            assert_eq!(run(s, "hpersist nokey fields 1 a"), ints(&[-2]));
            run(s, "hset h f1 v1 f2 v2");
            assert_eq!(run(s, "httl h fields 2 f1 nofield"), ints(&[-1, -2]));
            assert_eq!(run(s, "hpersist h fields 2 f1 nofield"), ints(&[-1, -2]));
            run(s, "hexpire h 1000 fields 1 f1");
            assert_eq!(run(s, "hpersist h fields 2 f1 f2"), ints(&[1, -1]));
            assert_eq!(run(s, "httl h fields 2 f1 f2"), ints(&[-1, -1]));
            assert_eq!(run(s, "hpersist h fields 1 f1"), ints(&[-1]));
            assert_eq!(run(s, "hlen h"), ":2\r\n");
        });
    }

    #[test]
    fn field_expiry_argument_errors() {
        let mut s = session();
        run(&mut s, "hset h f1 v1");
        let cases = [
            (
                "hexpire h -1 fields 1 f1",
                "ERR invalid expire time, must be >= 0",
            ),
            (
                "hexpire h -9223372036854775808 fields 1 f1",
                "ERR invalid expire time, must be >= 0",
            ),
            (
                "hexpire h 70368744177 fields 1 f1",
                "ERR invalid expire time in 'hexpire' command",
            ),
            (
                "hpexpire h 281474976710656 fields 1 f1",
                "ERR invalid expire time in 'hpexpire' command",
            ),
            (
                "hpexpireat h 70368744177664 fields 1 f1",
                "ERR invalid expire time in 'hpexpireat' command",
            ),
            (
                "hexpire h x fields 1 f1",
                "ERR value is not an integer or out of range",
            ),
            (
                "hpexpire h 1000 nx fields 0 f1 f2 f3",
                "ERR Parameter `numFields` should be greater than 0",
            ),
            (
                "hpexpire h 1000 nx fields x f1",
                "ERR Parameter `numFields` should be greater than 0",
            ),
            (
                "hpexpire h 1000 nx fields 4 f1 f2 f3",
                "ERR The `numfields` parameter must match the number of arguments",
            ),
            (
                "hpexpire h 1000 nx fields 2 f1 f2 f3",
                "ERR The `numfields` parameter must match the number of arguments",
            ),
            (
                "hpexpire h 1000 foo fields 1 f1",
                "ERR Mandatory argument FIELDS is missing or not at the right position",
            ),
            (
                "httl h fields 1 a b",
                "ERR The `numfields` parameter must match the number of arguments",
            ),
            (
                "httl h fields 0 a",
                "ERR Number of fields must be a positive integer",
            ),
            (
                "httl h field 1 a",
                "ERR Mandatory argument FIELDS is missing or not at the right position",
            ),
            (
                "hpersist h fields 2 f1 f2 f3",
                "ERR The `numfields` parameter must match the number of arguments",
            ),
            (
                "hpersist h fields -1 f1",
                "ERR Number of fields must be a positive integer",
            ),
            (
                "hpersist h",
                "ERR wrong number of arguments for 'hpersist' command",
            ),
            (
                "hpersist h fields 1",
                "ERR wrong number of arguments for 'hpersist' command",
            ),
        ];
        for (cmd, err) in cases {
            assert_eq!(run(&mut s, cmd), format!("-{err}\r\n"), "{cmd}");
        }
        // Just under the 2^46 ms limit is fine.
        let t = secs_from_now(&mut s, 0) * 1000;
        assert_eq!(
            run(
                &mut s,
                &format!("hpexpire h {} fields 1 f1", (1i64 << 46) - t - 1000)
            ),
            ints(&[1])
        );
        // The type is checked before the arguments.
        run(&mut s, "set str x");
        let wrongtype = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
        for cmd in [
            "hexpire str 10 fields 1 f1",
            "hexpire str -1 fields 1 f1",
            "hpexpireat str 10 fields 1 f1",
            "httl str fields 1 f1",
            "hpttl str fields 9 f1",
            "hexpiretime str fields 1 f1",
            "hpexpiretime str fields 1 f1",
            "hpersist str fields 1 f1",
            "hgetex str fields 1 f1",
            "hgetdel str fields 1 f1",
            "hsetex str fields 1 f1 v1",
        ] {
            assert_eq!(run(&mut s, cmd), wrongtype, "{cmd}");
        }
    }

    #[test]
    fn compact_form_orders_fields_by_deadline_as_listpackex() {
        let mut s = session();
        run(&mut s, "hset h f1 v1 f2 v2 f3 v3");
        assert_eq!(run(&mut s, "object encoding h"), "$8\r\nlistpack\r\n");
        // Fields with a deadline first, earliest first; persisting or
        // HSET moves a field to the end.
        run(&mut s, "hpexpire h 300000 fields 1 f3");
        run(&mut s, "hpexpire h 200000 fields 1 f2");
        assert_eq!(run(&mut s, "object encoding h"), "$10\r\nlistpackex\r\n");
        assert_eq!(
            run(&mut s, "hkeys h"),
            "*3\r\n$2\r\nf2\r\n$2\r\nf3\r\n$2\r\nf1\r\n"
        );
        run(&mut s, "hpersist h fields 1 f2");
        assert_eq!(
            run(&mut s, "hkeys h"),
            "*3\r\n$2\r\nf3\r\n$2\r\nf1\r\n$2\r\nf2\r\n"
        );
        run(&mut s, "hset h f3 new");
        assert_eq!(
            run(&mut s, "hkeys h"),
            "*3\r\n$2\r\nf1\r\n$2\r\nf2\r\n$2\r\nf3\r\n"
        );
        // Still listpackex without any TTL, as in Redis.
        assert_eq!(run(&mut s, "object encoding h"), "$10\r\nlistpackex\r\n");
        // Growing past the limit keeps the deadlines in the table.
        run(&mut s, "hpexpire h 100000 fields 1 f1");
        run(&mut s, "config set hash-max-listpack-entries 3");
        run(&mut s, "hset h f4 v4");
        assert_eq!(run(&mut s, "object encoding h"), "$9\r\nhashtable\r\n");
        let t = run(&mut s, "hpttl h fields 2 f1 f4");
        let ms: i64 = t.split("\r\n").nth(1).unwrap()[1..].parse().unwrap();
        assert!(
            ms > 90_000 && ms <= 100_000 && t.ends_with(":-1\r\n"),
            "{t}"
        );
    }

    #[test]
    fn writes_and_field_ttls() {
        both_forms(|s, _| {
            run(s, "hset h a 1 b 2 c 3");
            run(s, "hexpire h 1000 fields 3 a b c");
            // HSET clears the TTL, HINCRBY / HINCRBYFLOAT keep it.
            assert_eq!(run(s, "hset h a 10"), ":0\r\n");
            assert_eq!(run(s, "hincrby h b 5"), ":7\r\n");
            assert_eq!(run(s, "hincrbyfloat h c 0.5"), "$3\r\n3.5\r\n");
            let t = run(s, "httl h fields 3 a b c");
            assert!(t.starts_with("*3\r\n:-1\r\n:1"), "{t}");
            assert!(!t.ends_with(":-1\r\n"), "{t}");
            // HSETNX on an existing field changes nothing; a new field has
            // no TTL.
            assert_eq!(run(s, "hsetnx h b x"), ":0\r\n");
            assert_eq!(run(s, "hsetnx h d 4"), ":1\r\n");
            assert_eq!(run(s, "httl h fields 1 d"), ints(&[-1]));
            // HDEL drops the TTL with the field.
            run(s, "hdel h b");
            run(s, "hset h b again");
            assert_eq!(run(s, "httl h fields 1 b"), ints(&[-1]));
            // The GOBLIN.* compare-and-set keeps the field's TTL.
            assert_eq!(run(s, "goblin.hcas h c 3.5 4"), ":1\r\n");
            let t = run(s, "httl h fields 1 c");
            assert_ne!(t, ints(&[-1]), "{t}");
            assert_eq!(run(s, "goblin.hsetgt h c 9"), ":1\r\n");
            assert_ne!(run(s, "httl h fields 1 c"), ints(&[-1]));
        });
    }

    #[test]
    fn hsetex_options() {
        both_forms(|s, _| {
            assert_eq!(run(s, "hsetex h fields 1 f1 v1"), ":1\r\n");
            assert_eq!(run(s, "hsetex h fields 2 f1 v11 f2 v2"), ":1\r\n");
            assert_eq!(run(s, "hmget h f1 f2"), "*2\r\n$3\r\nv11\r\n$2\r\nv2\r\n");
            // FXX: all fields must exist; a missing key is not created.
            assert_eq!(run(s, "hsetex nokey fxx fields 1 a b"), ":0\r\n");
            assert_eq!(run(s, "exists nokey"), ":0\r\n");
            assert_eq!(run(s, "hsetex h fxx fields 2 f1 x f3 y"), ":0\r\n");
            assert_eq!(run(s, "hget h f1"), "$3\r\nv11\r\n");
            assert_eq!(run(s, "hsetex h ex 100 fxx fields 2 f1 a f2 b"), ":1\r\n");
            let t = run(s, "httl h fields 2 f1 f2");
            assert!(
                t.starts_with("*2\r\n:100\r\n:") || t.starts_with("*2\r\n:99"),
                "{t}"
            );
            // FNX: no field may exist; a refused call keeps values and TTLs.
            assert_eq!(run(s, "hsetex h fnx px 5 fields 2 f1 z f9 z"), ":0\r\n");
            assert_eq!(run(s, "hget h f1"), "$1\r\na\r\n");
            assert!(!run(s, "hpttl h fields 1 f1").contains(":5\r\n"));
            assert_eq!(run(s, "hsetex h px 5000 fnx fields 1 f3 c"), ":1\r\n");
            let t = run(s, "hpttl h fields 1 f3");
            assert!(
                t.starts_with("*1\r\n:4") || t.starts_with("*1\r\n:5000"),
                "{t}"
            );
            // KEEPTTL keeps, no option clears.
            assert_eq!(run(s, "hsetex h keepttl fields 1 f1 k"), ":1\r\n");
            assert_ne!(run(s, "httl h fields 1 f1"), ints(&[-1]));
            assert_eq!(run(s, "hsetex h fields 1 f1 k2"), ":1\r\n");
            assert_eq!(run(s, "httl h fields 1 f1"), ints(&[-1]));
            // A deadline in the past sets then deletes: reply 1, fields gone.
            let past = secs_from_now(s, -1);
            assert_eq!(
                run(s, &format!("hsetex h exat {past} fields 1 f2 x")),
                ":1\r\n"
            );
            assert_eq!(run(s, "hexists h f2"), ":0\r\n");
            assert_eq!(
                run(s, &format!("hsetex gone exat {past} fields 2 a 1 b 2")),
                ":1\r\n"
            );
            assert_eq!(run(s, "exists gone"), ":0\r\n");
            assert_eq!(run(s, "hsetex h2 pxat 1 fields 1 a 1"), ":1\r\n");
            assert_eq!(run(s, "exists h2"), ":0\r\n");
        });
    }

    #[test]
    fn hsetex_argument_errors() {
        let mut s = session();
        let arity = "ERR wrong number of arguments for 'hsetex' command";
        let cases = [
            ("hsetex myhash", arity),
            ("hsetex myhash fields", arity),
            ("hsetex myhash fields 1", arity),
            ("hsetex myhash fields 2 a b", arity),
            ("hsetex myhash fields 2 a b c", arity),
            ("hsetex myhash fields 2 a b c d e", arity),
            ("hsetex myhash fields 3 a b c d", arity),
            ("hsetex myhash fields 1 a b unknown", arity),
            ("hsetex myhash nx fields 1 a b", "ERR unknown argument: nx"),
            ("hsetex myhash 1 fields 1 a b", "ERR unknown argument: 1"),
            (
                "hsetex myhash fxx fxx ex 100 fields 1 a b",
                "ERR Only one of FXX or FNX arguments can be specified",
            ),
            (
                "hsetex myhash fnx fxx ex 100 fields 1 a b",
                "ERR Only one of FXX or FNX arguments can be specified",
            ),
            (
                "hsetex myhash ex 100 px 1000 fields 1 a b",
                "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
            ),
            (
                "hsetex myhash keepttl ex 100 fields 1 a b",
                "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
            ),
            (
                "hsetex myhash keepttl keepttl fields 1 a b",
                "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
            ),
            (
                "hsetex myhash ex fields 1 a b",
                "ERR value is not an integer or out of range",
            ),
            (
                "hsetex myhash exat 281474976710656 1 a b",
                "ERR invalid expire time in 'hsetex' command",
            ),
            (
                "hsetex myhash exat -1 1 a b",
                "ERR invalid expire time, must be >= 0",
            ),
            (
                "hsetex myhash exat 9223372036854775808 1 a b",
                "ERR value is not an integer or out of range",
            ),
            ("hsetex myhash fields x a b", "ERR invalid number of fields"),
            ("hsetex myhash fields 0 a b", "ERR invalid number of fields"),
            (
                "hsetex myhash fields -1 a b",
                "ERR invalid number of fields",
            ),
            (
                "hsetex myhash fields 9223372036854775808 a b",
                "ERR invalid number of fields",
            ),
        ];
        for (cmd, err) in cases {
            assert_eq!(run(&mut s, cmd), format!("-{err}\r\n"), "{cmd}");
        }
        assert_eq!(run(&mut s, "exists myhash"), ":0\r\n");
    }

    #[test]
    fn hgetex_and_hgetdel() {
        both_forms(|s, _| {
            run(s, "hset h a 1 b 2 c strval");
            assert_eq!(
                run(s, "hgetex h fields 2 a b"),
                "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
            );
            assert_eq!(run(s, "httl h fields 2 a b"), ints(&[-1, -1]));
            assert_eq!(
                run(s, "hgetex h ex 10000 fields 2 c nofield"),
                "*2\r\n$6\r\nstrval\r\n$-1\r\n"
            );
            let t = run(s, "httl h fields 2 c nofield");
            assert!(
                t.starts_with("*2\r\n:10000\r\n") || t.starts_with("*2\r\n:9999"),
                "{t}"
            );
            assert_eq!(
                run(s, "hgetex h persist fields 1 c"),
                "*1\r\n$6\r\nstrval\r\n"
            );
            assert_eq!(run(s, "httl h fields 1 c"), ints(&[-1]));
            assert_eq!(
                run(s, "hgetex h persist fields 1 c"),
                "*1\r\n$6\r\nstrval\r\n"
            );
            assert_eq!(
                run(s, "hgetex nokey px 10 fields 2 a b"),
                "*2\r\n$-1\r\n$-1\r\n"
            );
            // A deadline in the past deletes what it reads.
            assert_eq!(run(s, "hgetex h pxat 1 fields 1 a"), "*1\r\n$1\r\n1\r\n");
            assert_eq!(run(s, "hexists h a"), ":0\r\n");
            // HGETDEL.
            assert_eq!(
                run(s, "hgetdel h fields 3 b nofield b"),
                "*3\r\n$1\r\n2\r\n$-1\r\n$-1\r\n"
            );
            assert_eq!(run(s, "hgetdel h fields 1 c"), "*1\r\n$6\r\nstrval\r\n");
            assert_eq!(run(s, "exists h"), ":0\r\n");
            assert_eq!(run(s, "hgetdel h fields 1 c"), "*1\r\n$-1\r\n");
        });
        let mut s = session();
        run(&mut s, "hset h1 a 1");
        let cases = [
            (
                "hgetex",
                "ERR wrong number of arguments for 'hgetex' command",
            ),
            (
                "hgetex h1 fields 1",
                "ERR wrong number of arguments for 'hgetex' command",
            ),
            (
                "hgetex h1 xfieldx 1 a",
                "ERR Mandatory argument FIELDS is missing or not at the right position",
            ),
            (
                "hgetex h1 pxat 1 1",
                "ERR Mandatory argument FIELDS is missing or not at the right position",
            ),
            (
                "hgetex h1 persist 1 fields 1 a",
                "ERR Mandatory argument FIELDS is missing or not at the right position",
            ),
            (
                "hgetex h1 fields 2 a",
                "ERR The `numfields` parameter must match the number of arguments",
            ),
            (
                "hgetex h1 fields 0 a",
                "ERR Number of fields must be a positive integer",
            ),
            (
                "hgetex h1 fields 9223372036854775808 a",
                "ERR Number of fields must be a positive integer",
            ),
            (
                "hgetex h1 ex bla fields 1 a",
                "ERR value is not an integer or out of range",
            ),
            (
                "hgetex h1 px -1 fields 1 a",
                "ERR invalid expire time, must be >= 0",
            ),
            (
                "hgetex h1 ex 281474976710656 fields 1 a",
                "ERR invalid expire time in 'hgetex' command",
            ),
            (
                "hgetdel h1 fields 0 a",
                "ERR Number of fields must be a positive integer",
            ),
            (
                "hgetdel h1 fields 2 a",
                "ERR The `numfields` parameter must match the number of arguments",
            ),
            (
                "hgetdel h1 field 1 a",
                "ERR Mandatory argument FIELDS is missing or not at the right position",
            ),
        ];
        for (cmd, err) in cases {
            assert_eq!(run(&mut s, cmd), format!("-{err}\r\n"), "{cmd}");
        }
        assert_eq!(run(&mut s, "hget h1 a"), "$1\r\n1\r\n");
    }
}
