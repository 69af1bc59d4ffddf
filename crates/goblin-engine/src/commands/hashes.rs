//! The hash family: HSET and its variants, field reads, counters,
//! HRANDFIELD and HSCAN (Redis's t_hash.c).
//!
//! The operations (`hset`, `hdel`, `hincrby`...) are public so that other
//! hosts of the same semantics (scripts, the embedded API) call them
//! directly; the handlers parse arguments and write the replies. The data
//! structure and its compact/table representations are in
//! `keyspace::hash`.

use super::keys::{parse_cursor, parse_scan_options};
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::{Hash, HashLimits, Object, Value};
use crate::protocol::ReplyWriter;
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
fn read_hash<'c>(
    ctx: &'c mut Ctx,
    key: &[u8],
) -> Result<(Option<&'c Hash>, &'c mut ReplyWriter), Error> {
    match ctx.lookup_read_and_out(key) {
        (None, out) => Ok((None, out)),
        (
            Some(Object {
                value: Value::Hash(h),
                ..
            }),
            out,
        ) => Ok((Some(&**h), out)),
        (Some(_), _) => Err(not_hash()),
    }
}

/// The hash at `key` for writing; with `create`, an absent key becomes an
/// empty hash (the caller adds a field at once, so it never stays empty).
fn write_hash<'c>(
    ctx: &'c mut Ctx,
    key: &[u8],
    create: bool,
) -> Result<Option<&'c mut Hash>, Error> {
    let now = ctx.now_ms;
    let (db, h) = ctx.locate(key);
    let exists = match db.lookup(h, key, now) {
        None => false,
        Some(Object {
            value: Value::Hash(_),
            ..
        }) => true,
        Some(_) => return Err(not_hash()),
    };
    let obj = if exists {
        db.lookup_no_touch(h, key, now)
    } else if create {
        Some(db.insert_new(h, key, Value::Hash(Box::default()), now))
    } else {
        None
    };
    match obj {
        Some(Object {
            value: Value::Hash(hash),
            ..
        }) => Ok(Some(&mut **hash)),
        _ => Ok(None),
    }
}

/// Removes a key that a command emptied (Redis deletes empty collections).
fn remove_key(ctx: &mut Ctx, key: &[u8]) {
    let (db, h) = ctx.locate(key);
    db.remove(h, key);
}

fn limits(ctx: &Ctx) -> HashLimits {
    HashLimits::from_config(&ctx.engine.config)
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
    ctx.modified(key);
    ctx.add_dirty((pairs.len() / 2).saturating_sub(1) as u64);
    Ok(created)
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
    ctx.modified(key);
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
        ctx.modified(key);
        ctx.add_dirty(deleted as u64 - 1);
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
    hash.set(field, itoa::Buffer::new().format(value).as_bytes(), &limits);
    ctx.modified(key);
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
    hash.set(field, &text, &limits);
    ctx.modified(key);
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
    ctx.log_as(&[b"HSET", args[1], args[2], &text]);
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

fn hrandfield_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() >= 3 {
        let l = parse_random_count(args[2])?;
        let withvalues = match args.len() {
            3 => false,
            4 if args[3].eq_ignore_ascii_case(b"withvalues") => true,
            _ => return Err(Error::SYNTAX),
        };
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
        syntax: "key:key (field:string value:string)...",
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
        syntax: "key:key (field:string value:string)...",
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
        syntax: "key:key [count:integer [WITHVALUES]]",
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
];

#[cfg(test)]
pub(crate) mod tests {
    use crate::{Config, ConnInfo, Engine, Session};

    /// A session on a fresh engine (DEBUG allowed).
    pub(crate) fn session() -> Session {
        let config = Config::new();
        config
            .set_initial("enable-debug-command", "yes")
            .expect("valid");
        Engine::new(config).session(ConnInfo::embedded())
    }

    /// Runs one command (arguments separated by single spaces) and returns
    /// its raw reply.
    pub(crate) fn run(s: &mut Session, line: &str) -> String {
        let argv: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        run_args(s, &argv)
    }

    pub(crate) fn run_args(s: &mut Session, argv: &[&[u8]]) -> String {
        s.execute(argv);
        String::from_utf8_lossy(&s.out.take()).into_owned()
    }

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
}
