//! The HyperLogLog family: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST
//! (Redis's hyperloglog.c). The representation, kept in string values
//! exactly as Redis writes it, is `keyspace::hyperloglog`.
//!
//! What changes a value, and so what counts as a write (WATCH, the save
//! rules, the append-only file), follows Redis: PFADD when a register
//! changed or the key was created; PFMERGE always; PFCOUNT of one key when
//! it refreshes the cached cardinality in the header (a read-only command
//! that logs itself then, as Redis propagates it); PFDEBUG GETREG and
//! TODENSE when they convert a sparse value to dense (counted and logged,
//! but, as in Redis, without touching WATCHes).

use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::hyperloglog::{self as hll, Registers};
use crate::keyspace::{CompactBytes, Object, Value};
use crate::pubsub::notify;
use crate::Error;

const NOT_HLL: Error = Error::constant("WRONGTYPE Key is not a valid HyperLogLog string value.");
const INVALID_HLL: Error = Error::constant("INVALIDOBJ Corrupted HLL object detected");

fn corrupt(_: hll::Corrupt) -> Error {
    INVALID_HLL
}

fn sparse_max_bytes(ctx: &Ctx) -> usize {
    ctx.engine
        .config()
        .hll_sparse_max_bytes
        .load(std::sync::atomic::Ordering::Relaxed)
}

/// Redis's isHLLObjectOrReply for a value that was found.
fn check_hll(value: &Value) -> Result<&CompactBytes, Error> {
    match value {
        Value::Str(s) if hll::is_hll(s) => Ok(s),
        Value::Str(_) => Err(NOT_HLL),
        #[allow(unreachable_patterns)] // strings are one value type among several
        _ => Err(Error::WRONGTYPE),
    }
}

/// The HLL at `key` for reading (lookupKeyRead, then the HLL check).
fn read_hll<'c>(ctx: &'c mut Ctx, key: &[u8]) -> Result<Option<&'c [u8]>, Error> {
    match ctx.lookup_read(key) {
        None => Ok(None),
        Some(obj) => check_hll(&obj.value).map(|s| Some(s.as_slice())),
    }
}

/// The HLL at `key` for changing in place (lookupKeyWrite, then the HLL
/// check), created empty when missing; the flag says it was created.
fn write_hll<'c>(ctx: &'c mut Ctx, key: &[u8]) -> Result<(&'c mut Vec<u8>, bool), Error> {
    let now = ctx.now();
    let (db, h) = ctx.locate(key);
    let created = match db.lookup(h, key, now) {
        None => true,
        Some(obj) => {
            check_hll(&obj.value)?;
            false
        }
    };
    if created {
        db.insert_new(
            h,
            key,
            Value::Str(CompactBytes::from_vec(hll::new_sparse())),
            now.ms,
        );
    }
    match db.lookup(h, key, now) {
        Some(Object {
            value: Value::Str(s),
            ..
        }) => Ok((s.make_growable(), created)),
        _ => unreachable!("the key holds a string: it was just checked or created"),
    }
}

// ---------------------------------------------------------------------------
// Operations on the store.

/// PFADD: adds `elements` to the HLL at `key`, creating it if needed; true
/// when the key was created or a register changed. A corrupted value
/// fails at the first element that reaches the damage, keeping what the
/// elements before it changed (and counting no change), as Redis does.
pub fn pfadd(ctx: &mut Ctx, key: &[u8], elements: &[&[u8]]) -> Result<bool, Error> {
    let max_bytes = sparse_max_bytes(ctx);
    let (v, created) = write_hll(ctx, key)?;
    let mut updated = created as u64;
    for ele in elements {
        if hll::add(v, ele, max_bytes).map_err(corrupt)? {
            updated += 1;
        }
    }
    if updated == 0 {
        return Ok(false);
    }
    hll::invalidate_cache(v);
    ctx.changed(key, notify::STRING, "pfadd");
    ctx.add_dirty(updated - 1);
    Ok(true)
}

/// PFCOUNT: the estimated cardinality of the union of the HLLs at `keys`
/// (missing keys are empty HLLs). For a single key the cached value is
/// answered, or recomputed and stored in the header.
pub fn pfcount(ctx: &mut Ctx, keys: &[&[u8]]) -> Result<u64, Error> {
    if let [key] = keys {
        return pfcount_one(ctx, key);
    }
    let mut max: Box<Registers> = Box::new([0; hll::REGISTERS]);
    for key in keys {
        if let Some(v) = read_hll(ctx, key)? {
            hll::merge(&mut max, v).map_err(corrupt)?;
        }
    }
    Ok(hll::count_registers(&max))
}

fn pfcount_one(ctx: &mut Ctx, key: &[u8]) -> Result<u64, Error> {
    let Some(v) = read_hll(ctx, key)? else {
        return Ok(0);
    };
    if let Some(card) = hll::cached_cardinality(v) {
        return Ok(card);
    }
    let card = hll::count(v).map_err(corrupt)?;
    // PFCOUNT is not flagged as a write, so the change of the header is
    // announced to a running snapshot here.
    let now = ctx.now();
    let (db, h) = ctx.locate(key);
    db.preserve(h, key);
    if let Some(Object {
        value: Value::Str(s),
        ..
    }) = db.lookup_no_touch(h, key, now)
    {
        hll::set_cached_cardinality(s.make_growable(), card);
    }
    ctx.modified(key);
    Ok(card)
}

/// PFMERGE: stores in `dest` the union of `dest` and `sources`. The
/// destination turns dense when any input is dense, and stays sparse
/// (until it outgrows hll-sparse-max-bytes) otherwise.
pub fn pfmerge(ctx: &mut Ctx, dest: &[u8], sources: &[&[u8]]) -> Result<(), Error> {
    let mut max: Box<Registers> = Box::new([0; hll::REGISTERS]);
    let mut use_dense = false;
    for key in std::iter::once(&dest).chain(sources) {
        if let Some(v) = read_hll(ctx, key)? {
            use_dense |= hll::encoding(v) == hll::DENSE;
            hll::merge(&mut max, v).map_err(corrupt)?;
        }
    }
    let max_bytes = sparse_max_bytes(ctx);
    let (v, _) = write_hll(ctx, dest)?;
    if use_dense {
        hll::to_dense(v).map_err(corrupt)?;
    }
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            // The destination decoded as a source: setting cannot fail.
            let _ = hll::set_register(v, i, m, max_bytes);
        }
    }
    hll::invalidate_cache(v);
    // Redis announces a merge as "pfadd" too.
    ctx.changed(dest, notify::STRING, "pfadd");
    Ok(())
}

/// PFDEBUG's subcommands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebugOp {
    GetReg,
    Decode,
    Encoding,
    ToDense,
}

/// What PFDEBUG answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DebugReply {
    Registers(Box<Registers>),
    Decoded(String),
    Encoding(&'static str),
    Converted(bool),
}

/// The subcommand as C's strcasecmp compares it: up to the first NUL.
fn c_str(arg: &[u8]) -> &[u8] {
    match memchr::memchr(0, arg) {
        Some(n) => &arg[..n],
        None => arg,
    }
}

pub fn parse_debug(sub: &[u8]) -> Result<DebugOp, Error> {
    let name = c_str(sub);
    [
        ("getreg", DebugOp::GetReg),
        ("decode", DebugOp::Decode),
        ("encoding", DebugOp::Encoding),
        ("todense", DebugOp::ToDense),
    ]
    .into_iter()
    .find(|(n, _)| name.eq_ignore_ascii_case(n.as_bytes()))
    .map(|(_, d)| d)
    .ok_or_else(|| {
        Error::concat(&[
            b"ERR Unknown PFDEBUG subcommand '",
            crate::error::printf_s(name, usize::MAX),
            b"'",
        ])
    })
}

/// PFDEBUG on `key`. The key is looked up before the subcommand is read,
/// as in Redis: a missing key is the first error whatever the subcommand.
pub fn pfdebug(ctx: &mut Ctx, sub: &[u8], key: &[u8]) -> Result<DebugReply, Error> {
    let now = ctx.now();
    let (db, h) = ctx.locate(key);
    let v = match db.lookup(h, key, now) {
        None => return Err(Error::err("The specified key does not exist")),
        Some(obj) => {
            check_hll(&obj.value)?;
            let Value::Str(s) = &mut obj.value else {
                unreachable!("checked to be a string")
            };
            s.make_growable()
        }
    };
    let (reply, converted) = match parse_debug(sub)? {
        DebugOp::GetReg => {
            let converted = hll::to_dense(v).map_err(corrupt)?;
            (DebugReply::Registers(hll::dense_registers(v)), converted)
        }
        DebugOp::Decode => {
            if hll::encoding(v) != hll::SPARSE {
                return Err(Error::err("HLL encoding is not sparse"));
            }
            (DebugReply::Decoded(hll::decode_sparse(v)), false)
        }
        DebugOp::Encoding => {
            let name = if hll::encoding(v) == hll::DENSE {
                "dense"
            } else {
                "sparse"
            };
            (DebugReply::Encoding(name), false)
        }
        DebugOp::ToDense => {
            let converted = hll::to_dense(v).map_err(corrupt)?;
            (DebugReply::Converted(converted), converted)
        }
    };
    if converted {
        // Counted and logged so that the conversion reaches the
        // append-only file; Redis signals no modified key here.
        ctx.add_dirty(1);
    }
    Ok(reply)
}

// ---------------------------------------------------------------------------
// Commands.

fn pfadd_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let updated = pfadd(ctx, args[1], &args[2..])?;
    ctx.out.int(updated as i64);
    Ok(())
}

fn pfcount_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let card = pfcount(ctx, &args[1..])?;
    ctx.out.int(card as i64);
    Ok(())
}

fn pfmerge_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pfmerge(ctx, args[1], &args[2..])?;
    ctx.out.ok();
    Ok(())
}

fn pfdebug_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match pfdebug(ctx, args[1], args[2])? {
        DebugReply::Registers(regs) => {
            ctx.out.array(regs.len());
            for r in regs.iter() {
                ctx.out.int(*r as i64);
            }
        }
        DebugReply::Decoded(text) => ctx.out.bulk_str(&text),
        DebugReply::Encoding(name) => ctx.out.simple(name),
        DebugReply::Converted(c) => ctx.out.int(c as i64),
    }
    Ok(())
}

fn pfselftest_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let mut rng = fastrand::Rng::new();
    hll::self_test(sparse_max_bytes(ctx), &mut rng).map_err(Error::raw)?;
    ctx.out.ok();
    Ok(())
}

// ---------------------------------------------------------------------------
// The family's table.

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "pfadd",
        arity: -2,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::INSERT)],
        group: Group::HyperLogLog,
        since: "2.8.9",
        summary: "Adds the specified elements to the specified HyperLogLog.",
        complexity: "O(1) to add every element.",
        syntax: "key:key [element:string...]",
        handler: pfadd_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "pfcount",
        arity: -2,
        flags: flag::READONLY | flag::MAY_REPLICATE,
        keys: &[KeySpec::range(1, -1, 1, kflag::RW | kflag::ACCESS)],
        key_spec_notes: &[(0, "RW because it may change the internal representation of the key, and propagate to replicas")],
        group: Group::HyperLogLog,
        since: "2.8.9",
        summary: "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
        complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
        syntax: "key:key...",
        handler: pfcount_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "pfmerge",
        arity: -2,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[
            KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::INSERT),
            KeySpec::range(2, -1, 1, kflag::RO | kflag::ACCESS),
        ],
        group: Group::HyperLogLog,
        since: "2.8.9",
        summary: "Merge N different HyperLogLogs into a single one.",
        complexity: "O(N) to merge N HyperLogLogs, but with high constant times.",
        syntax: "destkey:key sourcekey:key...",
        handler: pfmerge_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "pfdebug",
        arity: 3,
        flags: flag::WRITE | flag::DENYOOM | flag::ADMIN,
        keys: &[KeySpec::at(2, kflag::RW | kflag::ACCESS)],
        group: Group::HyperLogLog,
        since: "2.8.9",
        summary: "Internal commands for debugging HyperLogLog values",
        complexity: "N/A",
        doc_flags: &["syscmd"],
        syntax: "subcommand:string key:key",
        handler: pfdebug_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "pfselftest",
        arity: 1,
        flags: flag::ADMIN,
        group: Group::HyperLogLog,
        since: "2.8.9",
        summary: "An internal command for testing HyperLogLog values",
        complexity: "N/A",
        doc_flags: &["syscmd"],
        handler: pfselftest_command,
        ..CommandSpec::DEFAULT
    },
];
