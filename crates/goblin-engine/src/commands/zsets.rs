//! The sorted set family (Redis's t_zset.c): ZADD and ZINCRBY, removals,
//! rank / score / lex ranges and their STORE form, pops, random members,
//! the set algebra (ZUNION, ZINTER, ZDIFF, ZINTERCARD and STORE forms),
//! ZSCAN.
//!
//! The value type itself is `keyspace::zset::ZSet`. Each command parses
//! its arguments (the `parse_*` functions), runs an operation on the store
//! (the public functions such as `zadd`, `zpop`, `zrange`, `set_op`) and
//! replies. Parsing reports errors in the order Redis does, which
//! sometimes means a type check sits between two parsing steps (ZUNION
//! checks its keys before its options, ZSCAN before its options).
//!
//! The pop itself (`zpop`) neither blocks nor replies, so the blocking
//! forms (BZPOPMIN, BZPOPMAX, BZMPOP) can call it once a key is ready and
//! share the reply functions (`reply_mpop`).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;

use crate::blocking::{parse_timeout, BlockRequest};
use crate::command::args::Args;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::commands::keys::{parse_cursor, parse_scan_options};
use crate::engine::Engine;
use crate::keyspace::zset::{
    packed, AddFlags, AddOutcome, End, LexBound, LexRange, Limits, ScoreRange,
};
use crate::keyspace::{CompactBytes, Object, Set, Value, ValueType, ZSet};
use crate::protocol::ReplyWriter;
use crate::pubsub::notify;
use crate::util::glob_match;
use crate::util::number::{arg_i64, format_g17, parse_f64, parse_i64};
use crate::Error;

const NAN_RESULT: &str = "resulting score is not a number (NaN)";
const NOT_FLOAT_RANGE: &str = "min or max is not a float";
const NOT_LEX_RANGE: &str = "min or max not valid string range item";

/// Above this many reply bytes a single ZRANDMEMBER stops and the
/// connection is closed, as Redis closes a client whose output buffer
/// overflows (a count of -2^62 would otherwise exhaust memory).
const REPLY_HARD_LIMIT: usize = 512 << 20;

// ---------------------------------------------------------------------------
// Shared helpers.

/// The packed-form limits from the configuration.
pub fn zset_limits(engine: &Engine) -> Limits {
    Limits {
        entries: engine.config().zset_max_listpack_entries.load(Relaxed),
        value: engine.config().zset_max_listpack_value.load(Relaxed),
    }
}

fn as_zset(obj: Option<&mut Object>) -> Result<Option<&mut ZSet>, Error> {
    match obj {
        None => Ok(None),
        Some(Object {
            value: Value::ZSet(z),
            ..
        }) => Ok(Some(z)),
        Some(_) => Err(Error::WRONGTYPE),
    }
}

/// The sorted set at `key` for reading (Redis's lookupKeyRead + checkType).
pub(crate) fn read_zset<'c>(ctx: &'c mut Ctx, key: &[u8]) -> Result<Option<&'c mut ZSet>, Error> {
    as_zset(ctx.lookup_read(key))
}

/// The sorted set at `key` for writing (lookupKeyWrite + checkType).
fn write_zset<'c>(ctx: &'c mut Ctx, key: &[u8]) -> Result<Option<&'c mut ZSet>, Error> {
    as_zset(ctx.lookup_write(key))
}

/// The sorted set at `key` for reading, with the reply writer, so a range
/// can be written out while the set is borrowed.
pub(crate) fn read_zset_and_out<'c>(
    ctx: &'c mut Ctx,
    key: &[u8],
) -> (Result<Option<&'c ZSet>, Error>, &'c mut ReplyWriter) {
    let (obj, out) = ctx.lookup_read_and_out(key);
    (as_zset(obj).map(|z| z.map(|z| &*z)), out)
}

/// After a change: deletes the key when the set became empty, counts the
/// changes (Redis adds each changed member to the dirty counter), and
/// notifies `event` (and "del" for an emptied key) when something changed.
fn finish_write(ctx: &mut Ctx, key: &[u8], changes: usize, emptied: bool, event: &str) {
    if emptied {
        let (db, h) = ctx.locate(key);
        db.remove(h, key);
    }
    if changes > 0 {
        ctx.add_dirty(changes as u64 - 1);
        ctx.changed(key, notify::ZSET, event);
        if emptied {
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
}

/// Stores a computed sorted set at `dst` (Redis's setKey: replaces any
/// value and its TTL), or deletes `dst` when the result is empty. Returns
/// the stored length.
pub(crate) fn store_result(
    ctx: &mut Ctx,
    dst: &[u8],
    entries: Vec<(CompactBytes, f64)>,
    event: &str,
) -> usize {
    if entries.is_empty() {
        ctx.delete_key(dst);
        return 0;
    }
    let z = ZSet::from_entries(entries, zset_limits(ctx.engine));
    let n = z.len();
    ctx.store(dst, Value::ZSet(Box::new(z)), false, notify::ZSET, event);
    n
}

/// One element of a reply: the member, and with scores its score (a
/// [member, score] pair in RESP3, two flat items in RESP2).
#[inline]
fn reply_element(out: &mut ReplyWriter, member: &[u8], score: f64, withscores: bool) {
    if withscores && out.is_resp3() {
        out.array(2);
    }
    out.bulk(member);
    if withscores {
        out.double(score);
    }
}

/// The array header for `n` elements.
#[inline]
fn reply_elements_len(out: &mut ReplyWriter, n: usize, withscores: bool) {
    out.array(if withscores && !out.is_resp3() {
        n * 2
    } else {
        n
    });
}

/// Redis's getPositiveLongFromObjectOrReply with no message of its own.
fn arg_positive(arg: &[u8]) -> Result<i64, Error> {
    match parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(Error::NOT_POSITIVE),
    }
}

// ---------------------------------------------------------------------------
// Ranges.

/// One end of a score range as Redis's zslParseRange reads it: an optional
/// '(' for an open end, then C's strtod over the whole text (so a leading
/// space is allowed and an empty string reads as 0, unlike a ZADD score),
/// NaN refused.
fn parse_score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    let (text, exclusive) = match arg.first() {
        Some(b'(') => (&arg[1..], true),
        _ => (arg, false),
    };
    // strtod stops at a NUL, and Redis only checks that it stopped at one.
    let text = match memchr::memchr(0, text) {
        Some(i) => &text[..i],
        None => text,
    };
    let mut buf = Vec::with_capacity(text.len() + 1);
    buf.extend_from_slice(text);
    buf.push(0);
    let start = buf.as_ptr() as *const libc::c_char;
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: `buf` is NUL-terminated and outlives the call.
    let v = unsafe { libc::strtod(start, &mut end) };
    let consumed = end as usize - start as usize;
    (consumed == text.len() && !v.is_nan()).then_some((v, exclusive))
}

/// A ZRANGEBYSCORE-style interval.
pub fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Error> {
    match (parse_score_bound(min), parse_score_bound(max)) {
        (Some((min, minex)), Some((max, maxex))) => Ok(ScoreRange {
            min,
            max,
            minex,
            maxex,
        }),
        _ => Err(Error::err(NOT_FLOAT_RANGE)),
    }
}

fn parse_lex_bound(arg: &[u8]) -> Option<LexBound> {
    match arg.first()? {
        b'+' if arg.len() == 1 => Some(LexBound::Max),
        b'-' if arg.len() == 1 => Some(LexBound::Min),
        b'(' => Some(LexBound::Exclusive(arg[1..].to_vec())),
        b'[' => Some(LexBound::Inclusive(arg[1..].to_vec())),
        _ => None,
    }
}

/// A ZRANGEBYLEX-style interval: "-", "+", "[member" or "(member".
pub fn parse_lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, Error> {
    match (parse_lex_bound(min), parse_lex_bound(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(Error::err(NOT_LEX_RANGE)),
    }
}

/// Redis's rank sanitizing for ZRANGE and ZREMRANGEBYRANK: negative
/// indexes count from the end; None for an empty range.
fn rank_bounds(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut start = if start < 0 { llen + start } else { start };
    let mut end = if end < 0 { llen + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    if end >= llen {
        end = llen - 1;
    }
    Some((start as usize, end as usize))
}

// ---------------------------------------------------------------------------
// ZADD / ZINCRBY.

/// ZADD's options: the flags of `ZSet::add`, plus CH for the reply.
#[derive(Clone, Copy, Debug, Default)]
pub struct ZAddOptions {
    pub flags: AddFlags,
    pub ch: bool,
}

/// ZADD's (score, member) pairs, borrowed from the arguments.
pub type ScoreMembers<'a> = Vec<(f64, &'a [u8])>;

/// Parses ZADD (and ZINCRBY, which shares its parser in Redis: `incr`
/// preset) from the argument after the key.
pub fn parse_zadd<'a>(
    args: &[&'a [u8]],
    incr: bool,
) -> Result<(ZAddOptions, ScoreMembers<'a>), Error> {
    let mut o = ZAddOptions::default();
    o.flags.incr = incr;
    // The flags come first, in any order and repeated at will; the first
    // other argument starts the pairs.
    let mut a = Args::new(args);
    loop {
        if a.flag("NX") {
            o.flags.nx = true;
        } else if a.flag("XX") {
            o.flags.xx = true;
        } else if a.flag("CH") {
            o.ch = true;
        } else if a.flag("INCR") {
            o.flags.incr = true;
        } else if a.flag("GT") {
            o.flags.gt = true;
        } else if a.flag("LT") {
            o.flags.lt = true;
        } else {
            break;
        }
    }
    let rest = a.rest();
    if rest.is_empty() || rest.len() % 2 != 0 {
        return Err(Error::SYNTAX);
    }
    let f = o.flags;
    if f.nx && f.xx {
        return Err(Error::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(Error::err(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && rest.len() > 2 {
        return Err(Error::err(
            "INCR option supports a single increment-element pair",
        ));
    }
    // Every score is checked before anything changes: all or nothing.
    let pairs = rest
        .chunks(2)
        .map(|p| parse_f64(p[0]).map(|s| (s, p[1])).ok_or(Error::NOT_FLOAT))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((o, pairs))
}

/// What ZADD did.
#[derive(Clone, Copy, Debug, Default)]
pub struct ZAddResult {
    pub added: usize,
    pub updated: usize,
    /// Pairs not skipped by NX / XX / GT / LT.
    pub processed: usize,
    /// The score of the last processed pair (ZINCRBY's reply).
    pub score: f64,
}

/// Redis's zaddGenericCommand after parsing.
pub fn zadd(
    ctx: &mut Ctx,
    key: &[u8],
    opts: &ZAddOptions,
    pairs: &[(f64, &[u8])],
) -> Result<ZAddResult, Error> {
    let mut r = ZAddResult::default();
    let engine = ctx.engine;
    let mut limits: Option<Limits> = None;
    let mut limits = move || *limits.get_or_insert_with(|| zset_limits(engine));
    if write_zset(ctx, key)?.is_none() {
        if opts.flags.xx {
            return Ok(r);
        }
        let z = ZSet::for_first_member(pairs[0].1.len(), limits());
        let now = ctx.now_ms;
        let (db, h) = ctx.locate(key);
        db.insert_new(h, key, Value::ZSet(Box::new(z)), now);
        ctx.signal_ready(key);
    }
    let z = write_zset(ctx, key)?.expect("just created");
    let mut failed = false;
    for &(score, member) in pairs {
        // The limits only matter while the set is packed (read lazily:
        // large sets never look at the configuration).
        let lim = if z.is_packed() {
            limits()
        } else {
            Limits {
                entries: usize::MAX,
                value: usize::MAX,
            }
        };
        match z.add(member, score, opts.flags, lim) {
            Ok(AddOutcome::Added(s)) => {
                r.added += 1;
                r.processed += 1;
                r.score = s;
            }
            Ok(AddOutcome::Updated(s)) => {
                r.updated += 1;
                r.processed += 1;
                r.score = s;
            }
            Ok(AddOutcome::Unchanged(s)) => {
                r.processed += 1;
                r.score = s;
            }
            Ok(AddOutcome::Skipped) => {}
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    let emptied = z.is_empty();
    let event = if opts.flags.incr { "zincr" } else { "zadd" };
    finish_write(ctx, key, r.added + r.updated, emptied, event);
    if failed {
        return Err(Error::err(NAN_RESULT));
    }
    Ok(r)
}

fn zadd_generic(ctx: &mut Ctx, args: &[&[u8]], incr: bool) -> CmdResult {
    let (opts, pairs) = parse_zadd(&args[2..], incr)?;
    let r = zadd(ctx, args[1], &opts, &pairs)?;
    if opts.flags.incr {
        if r.processed > 0 {
            ctx.out.double(r.score);
        } else {
            ctx.out.null();
        }
    } else if opts.ch {
        ctx.out.int((r.added + r.updated) as i64);
    } else {
        ctx.out.int(r.added as i64);
    }
    Ok(())
}

fn zadd_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zadd_generic(ctx, args, false)
}

fn zincrby_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zadd_generic(ctx, args, true)
}

// ---------------------------------------------------------------------------
// Removal.

/// ZREM: removes members; the key goes when its last member does.
pub fn zrem(ctx: &mut Ctx, key: &[u8], members: &[&[u8]]) -> Result<usize, Error> {
    let Some(z) = write_zset(ctx, key)? else {
        return Ok(0);
    };
    let mut deleted = 0;
    for m in members {
        if z.remove(m) {
            deleted += 1;
        }
        if z.is_empty() {
            break;
        }
    }
    let emptied = z.is_empty();
    finish_write(ctx, key, deleted, emptied, "zrem");
    Ok(deleted)
}

fn zrem_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = zrem(ctx, args[1], &args[2..])?;
    ctx.out.int(n as i64);
    Ok(())
}

/// The range of a ZREMRANGEBY* command.
pub enum RemoveRange {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// ZREMRANGEBYRANK / BYSCORE / BYLEX.
pub fn zremrange(ctx: &mut Ctx, key: &[u8], range: &RemoveRange) -> Result<usize, Error> {
    let Some(z) = write_zset(ctx, key)? else {
        return Ok(0);
    };
    let deleted = match range {
        RemoveRange::Rank(start, end) => match rank_bounds(z.len(), *start, *end) {
            Some((s, e)) => z.remove_rank_range(s, e),
            None => 0,
        },
        RemoveRange::Score(r) => z.remove_range(r),
        RemoveRange::Lex(r) => z.remove_range(r),
    };
    let emptied = z.is_empty();
    let event = match range {
        RemoveRange::Rank(..) => "zremrangebyrank",
        RemoveRange::Score(_) => "zremrangebyscore",
        RemoveRange::Lex(_) => "zremrangebylex",
    };
    finish_write(ctx, key, deleted, emptied, event);
    Ok(deleted)
}

fn zremrangebyrank_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = RemoveRange::Rank(arg_i64(args[2])?, arg_i64(args[3])?);
    let n = zremrange(ctx, args[1], &range)?;
    ctx.out.int(n as i64);
    Ok(())
}

fn zremrangebyscore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = RemoveRange::Score(parse_score_range(args[2], args[3])?);
    let n = zremrange(ctx, args[1], &range)?;
    ctx.out.int(n as i64);
    Ok(())
}

fn zremrangebylex_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = RemoveRange::Lex(parse_lex_range(args[2], args[3])?);
    let n = zremrange(ctx, args[1], &range)?;
    ctx.out.int(n as i64);
    Ok(())
}

// ---------------------------------------------------------------------------
// Point queries.

fn zcard_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = read_zset(ctx, args[1])?.map_or(0, |z| z.len());
    ctx.out.int(n as i64);
    Ok(())
}

fn zscore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match read_zset(ctx, args[1])?.and_then(|z| z.score(args[2])) {
        Some(s) => ctx.out.double(s),
        None => ctx.out.null(),
    }
    Ok(())
}

fn zmscore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (z, out) = read_zset_and_out(ctx, args[1]);
    let z = z?;
    out.array(args.len() - 2);
    for m in &args[2..] {
        // A missing key reads as an empty set.
        match z.and_then(|z| z.score(m)) {
            Some(s) => out.double(s),
            None => out.null(),
        }
    }
    Ok(())
}

fn zrank_generic(ctx: &mut Ctx, args: &[&[u8]], rev: bool) -> CmdResult {
    match read_zset(ctx, args[1])?.and_then(|z| z.rank(args[2], rev)) {
        Some(r) => ctx.out.int(r as i64),
        None => ctx.out.null(),
    }
    Ok(())
}

fn zrank_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrank_generic(ctx, args, false)
}

fn zrevrank_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrank_generic(ctx, args, true)
}

fn zcount_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = parse_score_range(args[2], args[3])?;
    let n = read_zset(ctx, args[1])?.map_or(0, |z| z.count_in_range(&range));
    ctx.out.int(n as i64);
    Ok(())
}

fn zlexcount_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = parse_lex_range(args[2], args[3])?;
    let n = read_zset(ctx, args[1])?.map_or(0, |z| z.count_in_range(&range));
    ctx.out.int(n as i64);
    Ok(())
}

// ---------------------------------------------------------------------------
// ZRANGE and its variants.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeKind {
    Rank,
    Score,
    Lex,
}

/// The parsed range of a ZRANGE-family command.
#[derive(Clone, Debug, PartialEq)]
pub enum RangeSpec {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// A parsed ZRANGE / ZRANGESTORE / ZREVRANGE / ZRANGEBYSCORE... request.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeRequest {
    pub spec: RangeSpec,
    pub rev: bool,
    pub withscores: bool,
    pub offset: i64,
    /// Negative: no limit.
    pub limit: i64,
}

/// Redis's zrangeGenericCommand argument parsing. `args` starts at the
/// min argument (after the source key); `kind` and `rev` are fixed by the
/// legacy commands and chosen by options (BYSCORE, BYLEX, REV) otherwise.
pub fn parse_zrange(
    args: &[&[u8]],
    store: bool,
    kind: Option<RangeKind>,
    rev: Option<bool>,
) -> Result<RangeRequest, Error> {
    let (mut kind_opt, mut rev_opt) = (kind, rev);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut limit_given = false;
    let mut a = Args::new(&args[2..]);
    while !a.is_empty() {
        if !store && a.flag("WITHSCORES") {
            withscores = true;
        } else if let Some(l) = a.option_n("LIMIT", 2) {
            offset = arg_i64(l[0])?;
            limit = arg_i64(l[1])?;
            limit_given = true;
        } else if rev_opt.is_none() && a.flag("REV") {
            // Each of REV, BYSCORE, BYLEX at most once (and not at all
            // when the command fixes it).
            rev_opt = Some(true);
        } else if kind_opt.is_none() && a.flag("BYLEX") {
            kind_opt = Some(RangeKind::Lex);
        } else if kind_opt.is_none() && a.flag("BYSCORE") {
            kind_opt = Some(RangeKind::Score);
        } else {
            return Err(Error::SYNTAX);
        }
    }
    let kind = kind_opt.unwrap_or(RangeKind::Rank);
    let rev = rev_opt.unwrap_or(false);
    // Redis tests "limit != -1", so an explicit LIMIT x -1 passes here.
    if limit_given && limit != -1 && kind == RangeKind::Rank {
        return Err(Error::err(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && kind == RangeKind::Lex {
        return Err(Error::err(
            "syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    // Reverse score and lex ranges are given as max, min.
    let (min, max) = if rev && kind != RangeKind::Rank {
        (args[1], args[0])
    } else {
        (args[0], args[1])
    };
    let spec = match kind {
        RangeKind::Rank => RangeSpec::Rank(arg_i64(min)?, arg_i64(max)?),
        RangeKind::Score => RangeSpec::Score(parse_score_range(min, max)?),
        RangeKind::Lex => RangeSpec::Lex(parse_lex_range(min, max)?),
    };
    Ok(RangeRequest {
        spec,
        rev,
        withscores,
        offset,
        limit,
    })
}

/// The number of elements a rank range selects, known before walking it
/// (score and lex ranges are only counted by walking).
pub fn zrange_len(z: &ZSet, req: &RangeRequest) -> Option<usize> {
    match req.spec {
        RangeSpec::Rank(start, end) => {
            Some(rank_bounds(z.len(), start, end).map_or(0, |(s, e)| e - s + 1))
        }
        _ => None,
    }
}

/// Calls `f` for each element of the requested range, in reply order
/// (Redis's genericZrangebyrank/score/lexCommand); returns the count.
pub fn zrange(z: &ZSet, req: &RangeRequest, mut f: impl FnMut(&[u8], f64)) -> usize {
    let mut n = 0;
    let mut emit = |m: &[u8], s: f64| {
        n += 1;
        f(m, s)
    };
    match &req.spec {
        RangeSpec::Rank(start, end) => {
            if let Some((start, end)) = rank_bounds(z.len(), *start, *end) {
                let from = if req.rev { z.len() - 1 - start } else { start };
                for (m, s) in z.iter_from(from, req.rev).take(end - start + 1) {
                    emit(m, s);
                }
            }
        }
        RangeSpec::Score(r) => {
            for (m, s) in z.range(r, req.rev, req.offset, req.limit) {
                emit(m, s);
            }
        }
        RangeSpec::Lex(r) => {
            for (m, s) in z.range(r, req.rev, req.offset, req.limit) {
                emit(m, s);
            }
        }
    }
    n
}

fn zrange_reply(
    ctx: &mut Ctx,
    args: &[&[u8]],
    kind: Option<RangeKind>,
    rev: Option<bool>,
) -> CmdResult {
    let req = parse_zrange(&args[2..], false, kind, rev)?;
    let (z, out) = read_zset_and_out(ctx, args[1]);
    let Some(z) = z? else {
        out.array(0);
        return Ok(());
    };
    let withscores = req.withscores;
    match zrange_len(z, &req) {
        Some(len) => {
            reply_elements_len(out, len, withscores);
            zrange(z, &req, |m, s| reply_element(out, m, s, withscores));
        }
        None => {
            let d = out.begin_deferred();
            let n = zrange(z, &req, |m, s| reply_element(out, m, s, withscores));
            let items = if withscores && !out.is_resp3() {
                n * 2
            } else {
                n
            };
            out.end_array(d, items);
        }
    }
    Ok(())
}

fn zrange_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_reply(ctx, args, None, None)
}

fn zrevrange_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_reply(ctx, args, Some(RangeKind::Rank), Some(true))
}

fn zrangebyscore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_reply(ctx, args, Some(RangeKind::Score), Some(false))
}

fn zrevrangebyscore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_reply(ctx, args, Some(RangeKind::Score), Some(true))
}

fn zrangebylex_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_reply(ctx, args, Some(RangeKind::Lex), Some(false))
}

fn zrevrangebylex_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zrange_reply(ctx, args, Some(RangeKind::Lex), Some(true))
}

/// ZRANGESTORE: the range of `src` stored at `dst` (deleted when empty).
pub fn zrangestore(
    ctx: &mut Ctx,
    dst: &[u8],
    src: &[u8],
    req: &RangeRequest,
) -> Result<usize, Error> {
    let mut entries = Vec::new();
    if let Some(z) = read_zset(ctx, src)? {
        zrange(z, req, |m, s| {
            entries.push((CompactBytes::from_slice(m), s))
        });
    }
    Ok(store_result(ctx, dst, entries, "zrangestore"))
}

fn zrangestore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let req = parse_zrange(&args[3..], true, None, None)?;
    let n = zrangestore(ctx, args[1], args[2], &req)?;
    ctx.out.int(n as i64);
    Ok(())
}

// ---------------------------------------------------------------------------
// Pops.

/// What a pop took: the index of the key popped from, and the members.
pub type Popped = (usize, Vec<(CompactBytes, f64)>);

/// Redis's genericZpopCommand without the reply: pops up to `count`
/// members from `end` of the first existing sorted set among `keys`
/// (WRONGTYPE stops at the first key of another type). Returns the index
/// of that key and the popped members, or None when no key exists. A
/// count of 0 pops nothing but still reports the key.
pub fn zpop(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    end: End,
    count: usize,
) -> Result<Option<Popped>, Error> {
    for (i, key) in keys.iter().enumerate() {
        let Some(z) = write_zset(ctx, key)? else {
            continue;
        };
        let n = count.min(z.len());
        let mut popped = Vec::with_capacity(n);
        for _ in 0..n {
            match z.pop(end) {
                Some(e) => popped.push(e),
                None => break,
            }
        }
        let emptied = z.is_empty();
        let event = match end {
            End::Min => "zpopmin",
            End::Max => "zpopmax",
        };
        // Every pop (ZPOPMIN/MAX, BZPOPMIN/MAX, ZMPOP, BZMPOP) goes to the
        // log as ZPOPMIN / ZPOPMAX with the count it took (Redis's
        // genericZpopCommand).
        if !popped.is_empty() {
            let n_text = popped.len().to_string();
            ctx.propagate_as(&[
                event.to_ascii_uppercase().as_bytes(),
                key,
                n_text.as_bytes(),
            ]);
        }
        finish_write(ctx, key, popped.len(), emptied, event);
        return Ok(Some((i, popped)));
    }
    Ok(None)
}

fn zpop_minmax(ctx: &mut Ctx, args: &[&[u8]], end: End) -> CmdResult {
    if args.len() > 3 {
        return Err(Error::SYNTAX);
    }
    let count = match args.get(2) {
        Some(c) => Some(arg_positive(c)? as usize),
        None => None,
    };
    let popped = zpop(ctx, &args[1..2], end, count.unwrap_or(1))?;
    let out = &mut *ctx.out;
    let Some((_, popped)) = popped else {
        out.array(0);
        return Ok(());
    };
    // With an explicit count RESP3 nests [member, score] pairs; a plain
    // pop stays one flat pair.
    if out.is_resp3() && count.is_some() {
        out.array(popped.len());
        for (m, s) in &popped {
            out.array(2);
            out.bulk(m);
            out.double(*s);
        }
    } else {
        out.array(popped.len() * 2);
        for (m, s) in &popped {
            out.bulk(m);
            out.double(*s);
        }
    }
    Ok(())
}

fn zpopmin_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zpop_minmax(ctx, args, End::Min)
}

fn zpopmax_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zpop_minmax(ctx, args, End::Max)
}

/// ZMPOP / BZMPOP arguments after the numkeys position: the keys, the end
/// and the count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MPopRequest {
    pub first_key: usize,
    pub numkeys: usize,
    pub end: End,
    pub count: usize,
}

/// Redis's zmpopGenericCommand parsing; `numkeys_idx` is the position of
/// numkeys in `args` (1 for ZMPOP, 2 for BZMPOP).
pub fn parse_zmpop(args: &[&[u8]], numkeys_idx: usize) -> Result<MPopRequest, Error> {
    let numkeys = parse_i64(args[numkeys_idx])
        .filter(|n| *n >= 1)
        .ok_or_else(|| Error::err("numkeys should be greater than 0"))? as u64;
    let where_idx = (numkeys_idx as u64 + 1).saturating_add(numkeys);
    if where_idx >= args.len() as u64 {
        return Err(Error::SYNTAX);
    }
    let mut a = Args::new(&args[where_idx as usize..]);
    let end = match a.flag_of(&["MIN", "MAX"]) {
        Some(0) => End::Min,
        Some(_) => End::Max,
        None => return Err(Error::SYNTAX),
    };
    // COUNT at most once: a second one is left over, a syntax error.
    let count = match a.option("COUNT") {
        Some(c) => parse_i64(c)
            .filter(|n| *n >= 1)
            .ok_or_else(|| Error::err("count should be greater than 0"))?
            as usize,
        None => 1,
    };
    a.finish()?;
    Ok(MPopRequest {
        first_key: numkeys_idx + 1,
        numkeys: numkeys as usize,
        end,
        count,
    })
}

/// The ZMPOP / BZMPOP reply: [key, [[member, score], ...]].
pub fn reply_mpop(out: &mut ReplyWriter, key: &[u8], popped: &[(CompactBytes, f64)]) {
    out.array(2);
    out.bulk(key);
    out.array(popped.len());
    for (m, s) in popped {
        out.array(2);
        out.bulk(m);
        out.double(*s);
    }
}

fn zmpop_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let req = parse_zmpop(args, 1)?;
    let keys = &args[req.first_key..req.first_key + req.numkeys];
    match zpop(ctx, keys, req.end, req.count)? {
        Some((i, popped)) => reply_mpop(ctx.out, keys[i], &popped),
        None => ctx.out.null_array(),
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Blocking pops.

/// BZPOPMIN / BZPOPMAX / BZMPOP (Redis's blockingGenericZpopCommand): pop
/// from the first non-empty sorted set, else block on all the keys. With
/// `mpop` the reply is ZMPOP's, else [key, member, score].
fn blocking_zpop(
    ctx: &mut Ctx,
    args: &[&[u8]],
    keys: &[&[u8]],
    end: End,
    timeout: &[u8],
    mpop: Option<usize>,
) -> CmdResult {
    let deadline = parse_timeout(timeout, ctx.now_ms)?;
    for key in ctx.blocking_keys(keys) {
        match ctx.lookup_write(key) {
            None => continue,
            Some(Object {
                value: Value::ZSet(z),
                ..
            }) if z.is_empty() => continue,
            Some(Object {
                value: Value::ZSet(_),
                ..
            }) => {}
            Some(_) => return Err(Error::WRONGTYPE),
        }
        let Some((_, popped)) = zpop(ctx, &[key], end, mpop.unwrap_or(1))? else {
            continue;
        };
        match mpop {
            Some(_) => reply_mpop(ctx.out, key, &popped),
            None => {
                ctx.out.array(3);
                ctx.out.bulk(key);
                ctx.out.bulk(&popped[0].0);
                ctx.out.double(popped[0].1);
            }
        }
        return Ok(());
    }
    ctx.block_on(
        args,
        BlockRequest {
            keys,
            deadline_ms: deadline,
            value_type: ValueType::ZSet,
        },
        ReplyWriter::null_array,
    );
    Ok(())
}

fn bzpopmin_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = args.len();
    blocking_zpop(ctx, args, &args[1..n - 1], End::Min, args[n - 1], None)
}

fn bzpopmax_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = args.len();
    blocking_zpop(ctx, args, &args[1..n - 1], End::Max, args[n - 1], None)
}

fn bzmpop_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let req = parse_zmpop(args, 2)?;
    let keys = &args[req.first_key..req.first_key + req.numkeys];
    blocking_zpop(ctx, args, keys, req.end, args[1], Some(req.count))
}

// ---------------------------------------------------------------------------
// ZRANDMEMBER.

/// ZRANDMEMBER's `[count [WITHSCORES]]`: the count and WITHSCORES, or
/// None without a count. Checked in Redis's order: the count, then what
/// follows it, then the count's range with WITHSCORES.
fn parse_zrandmember(args: &[&[u8]]) -> Result<Option<(i64, bool)>, Error> {
    let mut a = Args::new(args);
    if a.is_empty() {
        return Ok(None);
    }
    let count = a.next_arg()?;
    let withscores = a.flag("WITHSCORES");
    let l = parse_i64(count).ok_or(Error::NOT_INTEGER)?;
    if l == i64::MIN {
        return Err(Error::err(
            "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    a.finish()?;
    if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
        return Err(Error::err("value is out of range"));
    }
    Ok(Some((l, withscores)))
}

fn zrandmember_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if let Some((l, withscores)) = parse_zrandmember(&args[2..])? {
        return zrandmember_with_count(ctx, args[1], l, withscores);
    }
    let (z, out) = read_zset_and_out(ctx, args[1]);
    match z? {
        Some(z) => {
            let mut rng = fastrand::Rng::new();
            out.bulk(z.random(&mut rng).0);
        }
        None => out.null(),
    }
    Ok(())
}

/// Redis's zrandmemberWithCountCommand and its four strategies: a negative
/// count samples with repetition; a count covering the set returns it
/// whole; a count close to the size removes random members from a copy;
/// a small count samples without repetition.
fn zrandmember_with_count(ctx: &mut Ctx, key: &[u8], l: i64, withscores: bool) -> CmdResult {
    let (z, out) = read_zset_and_out(ctx, key);
    let Some(z) = z? else {
        out.array(0);
        return Ok(());
    };
    let size = z.len();
    let (count, unique) = (l.unsigned_abs() as usize, l >= 0);
    if count == 0 {
        out.array(0);
        return Ok(());
    }
    let mut rng = fastrand::Rng::new();
    if !unique || count == 1 {
        reply_elements_len(out, count, withscores);
        let mut overflow = false;
        match z {
            ZSet::Packed(p) => {
                let offsets = p.offsets();
                for i in 0..count {
                    let e = p.entry_at(offsets[rng.usize(..offsets.len())]);
                    reply_element(out, e.member, e.score, withscores);
                    if i % 1024 == 0 && out.len() > REPLY_HARD_LIMIT {
                        overflow = true;
                        break;
                    }
                }
            }
            ZSet::Tree(_) => {
                for i in 0..count {
                    let (m, s) = z.random(&mut rng);
                    reply_element(out, m, s, withscores);
                    if i % 1024 == 0 && out.len() > REPLY_HARD_LIMIT {
                        overflow = true;
                        break;
                    }
                }
            }
        }
        if overflow {
            ctx.client.close_after_reply = true;
        }
        return Ok(());
    }
    if count >= size {
        reply_elements_len(out, size, withscores);
        for (m, s) in Input::ZSet(z).iter() {
            reply_element(out, &m, s, withscores);
        }
        return Ok(());
    }
    reply_elements_len(out, count, withscores);
    if count * 3 > size {
        let mut all: Vec<(&[u8], f64)> = z.iter().collect();
        while all.len() > count {
            let i = rng.usize(..all.len());
            all.swap_remove(i);
        }
        for (m, s) in all {
            reply_element(out, m, s, withscores);
        }
    } else if z.is_packed() {
        // Selection sampling in one pass, in set order (as lpRandomPairsUnique).
        let mut need = count;
        for (i, (m, s)) in z.iter().enumerate() {
            if need == 0 {
                break;
            }
            if rng.usize(..size - i) < need {
                reply_element(out, m, s, withscores);
                need -= 1;
            }
        }
    } else {
        let mut picked = HashSet::with_capacity(count);
        while picked.len() < count {
            let r = rng.usize(..size);
            if picked.insert(r) {
                let (m, s) = z.at_rank(r);
                reply_element(out, m, s, withscores);
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// ZUNION, ZINTER, ZDIFF, ZINTERCARD and the STORE forms.

/// One input of the set algebra.
#[derive(Clone, Copy)]
pub enum Input<'a> {
    ZSet(&'a ZSet),
    /// A plain set: every member scores 1, as in Redis.
    Set(&'a Set),
}

impl<'a> Input<'a> {
    fn len(&self) -> usize {
        match self {
            Input::ZSet(z) => z.len(),
            Input::Set(s) => s.len(),
        }
    }

    /// The members, highest score first: Redis walks sorted set inputs
    /// backwards (zuiInitIterator), which orders ZRANDMEMBER's whole-set
    /// reply. Set members come in the set's own order.
    fn iter(&self) -> Box<dyn Iterator<Item = (Cow<'a, [u8]>, f64)> + 'a> {
        match *self {
            Input::ZSet(z) => Box::new(
                z.iter_from(z.len().saturating_sub(1), true)
                    .map(|(m, s)| (Cow::Borrowed(m), s)),
            ),
            Input::Set(s) => Box::new(s.iter().map(|m| (m.to_bytes(), 1.0))),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Input::ZSet(z) => z.score(member),
            Input::Set(s) => s.contains(member).then_some(1.0),
        }
    }

    /// The same value given twice (the same key).
    fn same(&self, other: &Input) -> bool {
        match (self, other) {
            (Input::ZSet(a), Input::ZSet(b)) => std::ptr::eq(*a, *b),
            (Input::Set(a), Input::Set(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

/// Reads one input key of ZUNION / ZINTER / ZDIFF / ZINTERCARD and their
/// STORE forms: a sorted set, or a plain set whose members score 1.
/// Anything else is WRONGTYPE.
pub fn read_zset_input(obj: Option<&Object>) -> Result<Option<Input<'_>>, Error> {
    match obj {
        None => Ok(None),
        Some(Object {
            value: Value::ZSet(z),
            ..
        }) => Ok(Some(Input::ZSet(z))),
        Some(Object {
            value: Value::Set(s),
            ..
        }) => Ok(Some(Input::Set(s))),
        Some(_) => Err(Error::WRONGTYPE),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Aggregate {
    #[default]
    Sum,
    Min,
    Max,
}

/// Options of the set algebra commands.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SetOpOptions {
    /// One per input key (all 1 by default).
    pub weights: Vec<f64>,
    pub aggregate: Aggregate,
    pub withscores: bool,
    /// ZINTERCARD's LIMIT (0: none).
    pub limit: usize,
}

/// The number of input keys of a set algebra command (numkeys at
/// `numkeys_idx`, the keys right after it).
pub fn parse_setop_numkeys(
    args: &[&[u8]],
    numkeys_idx: usize,
    command: &str,
) -> Result<usize, Error> {
    let n = arg_i64(args[numkeys_idx])?;
    if n < 1 {
        return Err(Error::err(format_args!(
            "at least 1 input key is needed for '{command}' command"
        )));
    }
    if n > (args.len() - numkeys_idx - 1) as i64 {
        return Err(Error::SYNTAX);
    }
    Ok(n as usize)
}

/// The options after the keys (Redis's zunionInterDiffGenericCommand).
pub fn parse_setop_options(
    rest: &[&[u8]],
    numkeys: usize,
    op: SetOp,
    store: bool,
    cardinality_only: bool,
) -> Result<SetOpOptions, Error> {
    let mut o = SetOpOptions {
        weights: vec![1.0; numkeys],
        ..Default::default()
    };
    // Each option belongs to some of the commands (Redis tests the command
    // before the keyword), so the cursor is only asked for this one's.
    let mut a = Args::new(rest);
    while !a.is_empty() {
        if cardinality_only {
            let limit = a.option("LIMIT").ok_or(Error::SYNTAX)?;
            o.limit = parse_i64(limit)
                .filter(|n| *n >= 0)
                .ok_or_else(|| Error::err("LIMIT can't be negative"))?
                as usize;
        } else if !store && a.flag("WITHSCORES") {
            o.withscores = true;
        } else if op == SetOp::Diff {
            return Err(Error::SYNTAX);
        } else if let Some(weights) = a.option_n("WEIGHTS", numkeys) {
            for (w, arg) in o.weights.iter_mut().zip(weights) {
                *w = parse_f64(arg).ok_or_else(|| Error::err("weight value is not a float"))?;
            }
        } else if let Some(how) = a.option_among("AGGREGATE", &["SUM", "MIN", "MAX"]) {
            let how = how.ok_or(Error::SYNTAX)?;
            o.aggregate = [Aggregate::Sum, Aggregate::Min, Aggregate::Max][how];
        } else {
            return Err(Error::SYNTAX);
        }
    }
    Ok(o)
}

/// Redis's zunionInterAggregate: a sum of +inf and -inf is 0, MIN and MAX
/// keep the current value when the comparison fails.
#[inline]
fn aggregate(target: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val;
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// The weighted score of an input element (NaN, from 0 * inf, becomes 0).
#[inline]
fn weighted(score: f64, weight: f64) -> f64 {
    let s = weight * score;
    if s.is_nan() {
        0.0
    } else {
        s
    }
}

/// The result of a set algebra operation: members with scores, or only
/// a cardinality (ZINTERCARD).
pub enum SetOpResult {
    Entries(Vec<(CompactBytes, f64)>),
    Cardinality(usize),
}

/// Computes ZUNION / ZINTER / ZDIFF / ZINTERCARD over the inputs (absent
/// keys are None), each paired with its weight.
pub fn set_op(
    inputs: &[Option<Input>],
    op: SetOp,
    opts: &SetOpOptions,
    cardinality_only: bool,
) -> SetOpResult {
    let mut src: Vec<(Option<Input>, f64)> = inputs
        .iter()
        .copied()
        .zip(opts.weights.iter().copied())
        .collect();
    let len = |s: &(Option<Input>, f64)| s.0.map_or(0, |i| i.len());
    match op {
        SetOp::Inter => {
            // Smallest first: fewer look-ups (a stable sort, as glibc's qsort).
            src.sort_by_key(len);
            let mut out = Vec::new();
            let mut card = 0;
            let Some(first) = src[0].0.filter(|i| i.len() > 0) else {
                return if cardinality_only {
                    SetOpResult::Cardinality(0)
                } else {
                    SetOpResult::Entries(out)
                };
            };
            'outer: for (m, s) in first.iter() {
                let mut score = weighted(s, src[0].1);
                for (input, weight) in &src[1..] {
                    let Some(input) = input else { continue 'outer };
                    let value = if input.same(&first) {
                        Some(s)
                    } else {
                        input.score(&m)
                    };
                    match value {
                        Some(v) => aggregate(&mut score, v * weight, opts.aggregate),
                        None => continue 'outer,
                    }
                }
                if cardinality_only {
                    card += 1;
                    if opts.limit > 0 && card >= opts.limit {
                        break;
                    }
                } else {
                    out.push((CompactBytes::from_slice(&m), score));
                }
            }
            if cardinality_only {
                SetOpResult::Cardinality(card)
            } else {
                SetOpResult::Entries(out)
            }
        }
        SetOp::Union => {
            src.sort_by_key(len);
            let largest = src.last().map_or(0, len);
            let mut acc: HashMap<Cow<[u8]>, f64, foldhash::fast::RandomState> =
                HashMap::with_capacity_and_hasher(largest, Default::default());
            for (input, weight) in &src {
                let Some(input) = input else { continue };
                for (m, s) in input.iter() {
                    let score = weighted(s, *weight);
                    acc.entry(m)
                        .and_modify(|t| aggregate(t, score, opts.aggregate))
                        .or_insert(score);
                }
            }
            SetOpResult::Entries(
                acc.into_iter()
                    .map(|(m, s)| (CompactBytes::from_slice(&m), s))
                    .collect(),
            )
        }
        SetOp::Diff => SetOpResult::Entries(diff(&src)),
    }
}

/// ZDIFF with Redis's choice of algorithm: check each member of the first
/// set against the others (O(N*M)), or copy the first set and remove the
/// others' members (O(L)), whichever is estimated cheaper.
fn diff(src: &[(Option<Input>, f64)]) -> Vec<(CompactBytes, f64)> {
    let Some(first) = src[0].0.filter(|i| i.len() > 0) else {
        return Vec::new();
    };
    let mut algo_one: u64 = 0;
    let mut algo_two: u64 = 0;
    for (j, (input, _)) in src.iter().enumerate() {
        if j > 0 && input.is_some_and(|i| i.same(&first)) {
            // A set minus itself.
            return Vec::new();
        }
        algo_one += first.len() as u64;
        algo_two += input.map_or(0, |i| i.len()) as u64;
    }
    let others: Vec<Input> = src[1..].iter().filter_map(|(i, _)| *i).collect();
    if algo_one / 2 <= algo_two {
        // Largest first: a member present elsewhere is found sooner.
        let mut others = others;
        others.sort_by_key(|i| std::cmp::Reverse(i.len()));
        first
            .iter()
            .filter(|(m, _)| !others.iter().any(|o| o.score(m).is_some()))
            .map(|(m, s)| (CompactBytes::from_slice(&m), s))
            .collect()
    } else {
        let mut left: HashMap<Cow<[u8]>, f64, foldhash::fast::RandomState> =
            HashMap::with_capacity_and_hasher(first.len(), Default::default());
        left.extend(first.iter());
        for o in &others {
            for (m, _) in o.iter() {
                left.remove(&m);
                if left.is_empty() {
                    return Vec::new();
                }
            }
        }
        left.into_iter()
            .map(|(m, s)| (CompactBytes::from_slice(&m), s))
            .collect()
    }
}

/// ZUNION, ZINTER, ZDIFF, ZINTERCARD and the STORE forms: numkeys at
/// `numkeys_idx`, the destination (if any) at 1.
fn setop_generic(
    ctx: &mut Ctx,
    args: &[&[u8]],
    numkeys_idx: usize,
    op: SetOp,
    store: bool,
    cardinality_only: bool,
) -> CmdResult {
    let numkeys = parse_setop_numkeys(args, numkeys_idx, ctx.command_name())?;
    let keys = &args[numkeys_idx + 1..numkeys_idx + 1 + numkeys];
    // Every key is looked up (and type checked) before the options.
    for key in keys {
        let obj = ctx.lookup_read(key);
        read_zset_input(obj.map(|o| &*o))?;
    }
    let rest = &args[numkeys_idx + 1 + keys.len()..];
    let opts = parse_setop_options(rest, keys.len(), op, store, cardinality_only)?;
    let result = {
        let ctx_ref: &Ctx = ctx;
        let inputs = keys
            .iter()
            .map(|k| read_zset_input(ctx_ref.peek(k)))
            .collect::<Result<Vec<_>, _>>()?;
        set_op(&inputs, op, &opts, cardinality_only)
    };
    let mut entries = match result {
        SetOpResult::Cardinality(n) => {
            ctx.out.int(n as i64);
            return Ok(());
        }
        SetOpResult::Entries(e) => e,
    };
    if store {
        let event = match op {
            SetOp::Union => "zunionstore",
            SetOp::Inter => "zinterstore",
            SetOp::Diff => "zdiffstore",
        };
        let n = store_result(ctx, args[1], entries, event);
        ctx.out.int(n as i64);
        return Ok(());
    }
    entries.sort_by(|a, b| crate::keyspace::zset::cmp_entries(a.1, &a.0, b.1, &b.0));
    reply_elements_len(ctx.out, entries.len(), opts.withscores);
    for (m, s) in &entries {
        reply_element(ctx.out, m, *s, opts.withscores);
    }
    Ok(())
}

fn zunion_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, 1, SetOp::Union, false, false)
}

fn zinter_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, 1, SetOp::Inter, false, false)
}

fn zdiff_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, 1, SetOp::Diff, false, false)
}

fn zintercard_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, 1, SetOp::Inter, false, true)
}

fn zunionstore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, 2, SetOp::Union, true, false)
}

fn zinterstore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, 2, SetOp::Inter, true, false)
}

fn zdiffstore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    setop_generic(ctx, args, 2, SetOp::Diff, true, false)
}

// ---------------------------------------------------------------------------
// ZSCAN.

fn zscan_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = parse_cursor(args[2])?;
    let (z, out) = read_zset_and_out(ctx, args[1]);
    let Some(z) = z? else {
        out.array(2);
        out.bulk(b"0");
        out.array(0);
        return Ok(());
    };
    let opts = parse_scan_options(&args[3..], false)?;
    let mut items: Vec<(&[u8], f64)> = Vec::new();
    let next = z.scan(cursor, opts.count, |m, s| {
        if opts.pattern.is_none_or(|p| glob_match(p, m, false)) {
            items.push((m, s));
        }
    });
    out.array(2);
    let mut buf = itoa::Buffer::new();
    out.bulk(buf.format(next).as_bytes());
    out.array(items.len() * 2);
    let mut score = Vec::with_capacity(24);
    for (m, s) in items {
        out.bulk(m);
        score.clear();
        if z.is_packed() {
            packed::score_text(s, &mut score);
        } else {
            format_g17(s, &mut score);
        }
        out.bulk(&score);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The command table.

const RO: u32 = kflag::RO;
const RO_ACCESS: u32 = kflag::RO | kflag::ACCESS;
const RW_UPDATE: u32 = kflag::RW | kflag::UPDATE;
const RW_ACCESS_UPDATE: u32 = kflag::RW | kflag::ACCESS | kflag::UPDATE;
const RW_DELETE: u32 = kflag::RW | kflag::DELETE;
const RW_ACCESS_DELETE: u32 = kflag::RW | kflag::ACCESS | kflag::DELETE;
const OW_UPDATE: u32 = kflag::OW | kflag::UPDATE;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "zadd",
        arity: -4,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_UPDATE)],
        group: Group::SortedSet,
        since: "1.2.0",
        summary: "Add one or more members to a sorted set, or update its score if it already exists",
        complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        history: &[("2.4.0", "Accepts multiple elements."), ("3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."), ("6.2.0", "Added the `GT` and `LT` options.")],
        syntax: "key:key [condition:oneof(NX|XX)]{since:3.0.2} [comparison:oneof(GT|LT)]{since:6.2.0} [CH]{name:change}{since:3.0.2} [INCR]{name:increment}{since:3.0.2} score_member:block(score:double member:string)...",
        handler: zadd_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zincrby",
        arity: 4,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::SortedSet,
        since: "1.2.0",
        summary: "Increment the score of a member in a sorted set",
        complexity: "O(log(N)) where N is the number of elements in the sorted set.",
        syntax: "key:key increment:integer member:string",
        handler: zincrby_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrem",
        arity: -3,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_DELETE)],
        group: Group::SortedSet,
        since: "1.2.0",
        summary: "Remove one or more members from a sorted set",
        complexity: "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
        history: &[("2.4.0", "Accepts multiple elements.")],
        syntax: "key:key member:string...",
        handler: zrem_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zcard",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO)],
        group: Group::SortedSet,
        since: "1.2.0",
        summary: "Get the number of members in a sorted set",
        complexity: "O(1)",
        syntax: "key:key",
        handler: zcard_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zcount",
        arity: 4,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "2.0.0",
        summary: "Count the members in a sorted set with scores within the given values",
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        syntax: "key:key min:double max:double",
        handler: zcount_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zlexcount",
        arity: 4,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "2.8.9",
        summary: "Count the number of members in a sorted set between a given lexicographical range",
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        syntax: "key:key min:string max:string",
        handler: zlexcount_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zscore",
        arity: 3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "1.2.0",
        summary: "Get the score associated with the given member in a sorted set",
        complexity: "O(1)",
        syntax: "key:key member:string",
        handler: zscore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zmscore",
        arity: -3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "6.2.0",
        summary: "Get the score associated with the given members in a sorted set",
        complexity: "O(N) where N is the number of members being requested.",
        syntax: "key:key member:string...",
        handler: zmscore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrank",
        arity: 3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "2.0.0",
        summary: "Determine the index of a member in a sorted set",
        complexity: "O(log(N))",
        syntax: "key:key member:string",
        handler: zrank_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrevrank",
        arity: 3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "2.0.0",
        summary: "Determine the index of a member in a sorted set, with scores ordered from high to low",
        complexity: "O(log(N))",
        syntax: "key:key member:string",
        handler: zrevrank_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrange",
        arity: -4,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "1.2.0",
        summary: "Return a range of members in a sorted set",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        history: &[("6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options.")],
        syntax: "key:key start:string stop:string [sortby:oneof(BYSCORE|BYLEX)]{since:6.2.0} [REV]{since:6.2.0} [LIMIT offset_count:block(offset:integer count:integer)]{since:6.2.0} [WITHSCORES]",
        handler: zrange_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrangestore",
        arity: -5,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, OW_UPDATE), KeySpec::at(2, RO_ACCESS)],
        group: Group::SortedSet,
        since: "6.2.0",
        summary: "Store a range of members from sorted set into another key",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
        syntax: "dst:key src:key min:string max:string [sortby:oneof(BYSCORE|BYLEX)] [REV] [LIMIT offset_count:block(offset:integer count:integer)]",
        handler: zrangestore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrevrange",
        arity: -4,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "1.2.0",
        summary: "Return a range of members in a sorted set, by index, with scores ordered from high to low",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` argument",
        syntax: "key:key start:integer stop:integer [WITHSCORES]",
        handler: zrevrange_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrangebyscore",
        arity: -4,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "1.0.5",
        summary: "Return a range of members in a sorted set, by score",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `BYSCORE` argument",
        history: &[("2.0.0", "Added the `WITHSCORES` modifier.")],
        syntax: "key:key min:double max:double [WITHSCORES]{since:2.0.0} [LIMIT offset_count:block(offset:integer count:integer)]",
        handler: zrangebyscore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrevrangebyscore",
        arity: -4,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "2.2.0",
        summary: "Return a range of members in a sorted set, by score, with scores ordered from high to low",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` and `BYSCORE` arguments",
        history: &[("2.1.6", "`min` and `max` can be exclusive.")],
        syntax: "key:key max:double min:double [WITHSCORES] [LIMIT offset_count:block(offset:integer count:integer)]",
        handler: zrevrangebyscore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrangebylex",
        arity: -4,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "2.8.9",
        summary: "Return a range of members in a sorted set, by lexicographical range",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `BYLEX` argument",
        syntax: "key:key min:string max:string [LIMIT offset_count:block(offset:integer count:integer)]",
        handler: zrangebylex_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrevrangebylex",
        arity: -4,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "2.8.9",
        summary: "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` and `BYLEX` arguments",
        syntax: "key:key max:string min:string [LIMIT offset_count:block(offset:integer count:integer)]",
        handler: zrevrangebylex_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zremrangebyrank",
        arity: 4,
        flags: flag::WRITE,
        keys: &[KeySpec::at(1, RW_DELETE)],
        group: Group::SortedSet,
        since: "2.0.0",
        summary: "Remove all members in a sorted set within the given indexes",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        syntax: "key:key start:integer stop:integer",
        handler: zremrangebyrank_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zremrangebyscore",
        arity: 4,
        flags: flag::WRITE,
        keys: &[KeySpec::at(1, RW_DELETE)],
        group: Group::SortedSet,
        since: "1.2.0",
        summary: "Remove all members in a sorted set within the given scores",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        syntax: "key:key min:double max:double",
        handler: zremrangebyscore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zremrangebylex",
        arity: 4,
        flags: flag::WRITE,
        keys: &[KeySpec::at(1, RW_DELETE)],
        group: Group::SortedSet,
        since: "2.8.9",
        summary: "Remove all members in a sorted set between the given lexicographical range",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        syntax: "key:key min:string max:string",
        handler: zremrangebylex_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zpopmin",
        arity: -2,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_DELETE)],
        group: Group::SortedSet,
        since: "5.0.0",
        summary: "Remove and return members with the lowest scores in a sorted set",
        complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
        syntax: "key:key [count:integer]",
        handler: zpopmin_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zpopmax",
        arity: -2,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_DELETE)],
        group: Group::SortedSet,
        since: "5.0.0",
        summary: "Remove and return members with the highest scores in a sorted set",
        complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
        syntax: "key:key [count:integer]",
        handler: zpopmax_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zmpop",
        arity: -4,
        flags: flag::WRITE,
        keys: &[KeySpec::keynum(1, RW_ACCESS_DELETE)],
        group: Group::SortedSet,
        since: "7.0.0",
        summary: "Remove and return members with scores in a sorted set",
        complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
        syntax: "numkeys:integer key:key... where:oneof(MIN|MAX) [COUNT count:integer]",
        handler: zmpop_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bzpopmin",
        arity: -3,
        flags: flag::WRITE | flag::NOSCRIPT | flag::FAST | flag::BLOCKING,
        keys: &[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)],
        group: Group::SortedSet,
        since: "5.0.0",
        summary: "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available",
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        syntax: "key:key... timeout:double",
        handler: bzpopmin_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bzpopmax",
        arity: -3,
        flags: flag::WRITE | flag::NOSCRIPT | flag::FAST | flag::BLOCKING,
        keys: &[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)],
        group: Group::SortedSet,
        since: "5.0.0",
        summary: "Remove and return the member with the highest score from one or more sorted sets, or block until one is available",
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        syntax: "key:key... timeout:double",
        handler: bzpopmax_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bzmpop",
        arity: -5,
        flags: flag::WRITE | flag::BLOCKING,
        keys: &[KeySpec::keynum(2, RW_ACCESS_DELETE)],
        group: Group::SortedSet,
        since: "7.0.0",
        summary: "Remove and return members with scores in a sorted set or block until one is available",
        complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
        syntax: "timeout:double numkeys:integer key:key... where:oneof(MIN|MAX) [COUNT count:integer]",
        handler: bzmpop_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zrandmember",
        arity: -2,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "6.2.0",
        summary: "Get one or multiple random elements from a sorted set",
        complexity: "O(N) where N is the number of elements returned",
        syntax: "key:key [options:block(count:integer [WITHSCORES])]",
        tips: &["nondeterministic_output"],
        handler: zrandmember_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zunion",
        arity: -3,
        flags: flag::READONLY,
        keys: &[KeySpec::keynum(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "6.2.0",
        summary: "Add multiple sorted sets",
        complexity: "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        syntax: "numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE aggregate:oneof(SUM|MIN|MAX)] [WITHSCORES]",
        handler: zunion_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zinter",
        arity: -3,
        flags: flag::READONLY,
        keys: &[KeySpec::keynum(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "6.2.0",
        summary: "Intersect multiple sorted sets",
        complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
        syntax: "numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE aggregate:oneof(SUM|MIN|MAX)] [WITHSCORES]",
        handler: zinter_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zintercard",
        arity: -3,
        flags: flag::READONLY,
        keys: &[KeySpec::keynum(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "7.0.0",
        summary: "Intersect multiple sorted sets and return the cardinality of the result",
        complexity: "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
        syntax: "numkeys:integer key:key... [LIMIT limit:integer]",
        handler: zintercard_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zdiff",
        arity: -3,
        flags: flag::READONLY,
        keys: &[KeySpec::keynum(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "6.2.0",
        summary: "Subtract multiple sorted sets",
        complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
        syntax: "numkeys:integer key:key... [WITHSCORES]",
        handler: zdiff_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zunionstore",
        arity: -4,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, OW_UPDATE), KeySpec::keynum(2, RO_ACCESS)],
        group: Group::SortedSet,
        since: "2.0.0",
        summary: "Add multiple sorted sets and store the resulting sorted set in a new key",
        complexity: "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        syntax: "destination:key numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE aggregate:oneof(SUM|MIN|MAX)]",
        handler: zunionstore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zinterstore",
        arity: -4,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, OW_UPDATE), KeySpec::keynum(2, RO_ACCESS)],
        group: Group::SortedSet,
        since: "2.0.0",
        summary: "Intersect multiple sorted sets and store the resulting sorted set in a new key",
        complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
        syntax: "destination:key numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE aggregate:oneof(SUM|MIN|MAX)]",
        handler: zinterstore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zdiffstore",
        arity: -4,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, OW_UPDATE), KeySpec::keynum(2, RO_ACCESS)],
        group: Group::SortedSet,
        since: "6.2.0",
        summary: "Subtract multiple sorted sets and store the resulting sorted set in a new key",
        complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
        syntax: "destination:key numkeys:integer key:key...",
        handler: zdiffstore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "zscan",
        arity: -3,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::SortedSet,
        since: "2.8.0",
        summary: "Incrementally iterate sorted sets elements and associated scores",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        syntax: "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]",
        tips: &["nondeterministic_output"],
        handler: zscan_command,
        ..CommandSpec::DEFAULT
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{run, session};
    use crate::Session;

    /// Runs a command and returns the bulk strings and integers of its reply.
    fn items(s: &mut Session, cmd: &str) -> Vec<String> {
        let raw = run(s, cmd);
        let mut out = Vec::new();
        let mut lines = raw.split("\r\n");
        while let Some(l) = lines.next() {
            match l.as_bytes().first() {
                Some(b'$') if l != "$-1" => out.push(lines.next().unwrap().to_string()),
                Some(b':' | b',' | b'-') => out.push(l.to_string()),
                _ => {}
            }
        }
        out
    }

    fn set_packing(s: &mut Session, entries: usize, value: usize) {
        run(
            s,
            &format!("config set zset-max-listpack-entries {entries}"),
        );
        run(s, &format!("config set zset-max-listpack-value {value}"));
    }

    #[test]
    fn every_zadd_option_on_small_and_large_sets() {
        for (entries, encoding) in [(128, "listpack"), (0, "skiplist")] {
            let mut s = session();
            set_packing(&mut s, entries, 64);
            let z = |s: &mut Session, cmd: &str| items(s, cmd);
            run(&mut s, "zadd k 10 x 20 y 30 z");
            assert_eq!(
                run(&mut s, "object encoding k"),
                format!("$8\r\n{encoding}\r\n")
            );
            assert_eq!(z(&mut s, "zadd k gt ch 5 foo 11 x 21 y 29 z"), [":3"]);
            assert_eq!(z(&mut s, "zmscore k x y z foo"), ["11", "21", "30", "5"]);
            assert_eq!(z(&mut s, "zadd k lt ch 4 foo 12 x 1 y"), [":2"]);
            assert_eq!(z(&mut s, "zmscore k x y foo"), ["11", "1", "4"]);
            assert_eq!(z(&mut s, "zadd k xx 100 x 100 new"), [":0"]);
            assert_eq!(z(&mut s, "zscore k new"), Vec::<String>::new());
            assert_eq!(z(&mut s, "zadd k nx 0 x 7 new"), [":1"]);
            assert_eq!(z(&mut s, "zmscore k x new"), ["100", "7"]);
            assert_eq!(z(&mut s, "zadd k xx gt ch 50 x 200 y"), [":1"]);
            assert_eq!(z(&mut s, "zadd k incr gt -1 x"), Vec::<String>::new());
            assert_eq!(z(&mut s, "zadd k incr lt -1 x"), ["99"]);
            assert_eq!(z(&mut s, "zadd k incr nx 1 x"), Vec::<String>::new());
            assert_eq!(z(&mut s, "zadd k ch 99 x"), [":0"]);
            assert_eq!(
                run(&mut s, "object encoding k"),
                format!("$8\r\n{encoding}\r\n")
            );
        }
    }

    #[test]
    fn zadd_option_errors_are_redis_texts() {
        let mut s = session();
        assert_eq!(
            run(&mut s, "zadd k xx nx 1 a"),
            "-ERR XX and NX options at the same time are not compatible\r\n"
        );
        assert_eq!(
            run(&mut s, "zadd k gt lt 1 a"),
            "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"
        );
        assert_eq!(
            run(&mut s, "zadd k incr 1 a 2 b"),
            "-ERR INCR option supports a single increment-element pair\r\n"
        );
        assert_eq!(run(&mut s, "zadd k 1 a 2"), "-ERR syntax error\r\n");
        assert_eq!(
            run(&mut s, "zadd k nan a"),
            "-ERR value is not a valid float\r\n"
        );
        assert_eq!(
            run(&mut s, "zadd k 1 a 2 b x c"),
            "-ERR value is not a valid float\r\n"
        );
        assert_eq!(run(&mut s, "exists k"), ":0\r\n", "all or nothing");
        // ZINCRBY shares ZADD's parser: an option word there breaks the pair.
        assert_eq!(run(&mut s, "zincrby k nx a"), "-ERR syntax error\r\n");
        run(&mut s, "zadd k inf a");
        assert_eq!(
            run(&mut s, "zincrby k -inf a"),
            "-ERR resulting score is not a number (NaN)\r\n"
        );
        assert_eq!(run(&mut s, "zscore k a"), "$3\r\ninf\r\n");
    }

    #[test]
    fn removing_the_last_member_deletes_the_key() {
        let mut s = session();
        for cmd in [
            "zrem k a b",
            "zremrangebyrank k 0 -1",
            "zremrangebyscore k -inf +inf",
            "zremrangebylex k - +",
            "zpopmin k 5",
            "zmpop 1 k max count 5",
        ] {
            run(&mut s, "zadd k 1 a 2 b");
            run(&mut s, cmd);
            assert_eq!(run(&mut s, "exists k"), ":0\r\n", "{cmd}");
        }
    }

    #[test]
    fn wrongtype_everywhere() {
        let mut s = session();
        run(&mut s, "set str x");
        for cmd in [
            "zadd str 1 a",
            "zincrby str 1 a",
            "zrem str a",
            "zcard str",
            "zscore str a",
            "zmscore str a",
            "zrank str a",
            "zcount str 0 1",
            "zlexcount str - +",
            "zrange str 0 1",
            "zrangebyscore str 0 1",
            "zremrangebyrank str 0 1",
            "zpopmin str",
            "zmpop 1 str min",
            "zrandmember str",
            "zrandmember str 2",
            "zunion 1 str",
            "zinterstore d 1 str",
            "zscan str 0",
            "zrangestore d str 0 -1",
        ] {
            assert!(run(&mut s, cmd).starts_with("-WRONGTYPE"), "{cmd}");
        }
        assert_eq!(run(&mut s, "exists d"), ":0\r\n");
    }

    #[test]
    fn zrange_rejects_repeated_rev_byscore_and_bylex() {
        // Regression: REV / BYSCORE / BYLEX were accepted twice.
        let mut s = session();
        run(&mut s, "zadd k 1 a 2 b");
        for cmd in [
            "zrange k 0 -1 rev rev",
            "zrange k 0 1 byscore bylex",
            "zrange k 0 1 byscore byscore",
            "zrevrange k 0 -1 rev",
            "zrangebyscore k 0 1 byscore",
            "zrangestore d k 0 -1 withscores",
        ] {
            assert_eq!(run(&mut s, cmd), "-ERR syntax error\r\n", "{cmd}");
        }
        assert_eq!(
            run(&mut s, "zrange k 0 -1 limit 0 1"),
            "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n"
        );
        assert_eq!(
            run(&mut s, "zrange k - + bylex withscores"),
            "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"
        );
        assert_eq!(items(&mut s, "zrange k 0 -1 rev"), ["b", "a"]);
    }

    #[test]
    fn score_ranges_parse_like_strtod() {
        let ok = |a: &str| parse_score_bound(a.as_bytes());
        assert_eq!(ok(""), Some((0.0, false)));
        assert_eq!(ok("("), Some((0.0, true)));
        assert_eq!(ok(" 1.5"), Some((1.5, false)));
        assert_eq!(ok("(0x10"), Some((16.0, true)));
        assert_eq!(ok("1e400"), Some((f64::INFINITY, false)));
        assert_eq!(ok("-inf"), Some((f64::NEG_INFINITY, false)));
        assert_eq!(ok("1 "), None);
        assert_eq!(ok("nan"), None);
        assert_eq!(ok("(nan"), None);
        assert_eq!(ok("(("), None);
        assert_eq!(ok("abc"), None);
        assert!(parse_lex_range(b"[a", b"(b").is_ok());
        for (min, max) in [("a", "[b"), ("+x", "[b"), ("-x", "[b"), ("[a", "1")] {
            assert_eq!(
                parse_lex_range(min.as_bytes(), max.as_bytes()),
                Err(Error::err(NOT_LEX_RANGE))
            );
        }
    }

    #[test]
    fn listpack_drops_the_sign_of_zero_and_the_tree_keeps_it() {
        // Regression: a listpack stores -0 as the integer 0.
        let mut s = session();
        run(&mut s, "zadd small -0 a");
        assert_eq!(items(&mut s, "zscore small a"), ["0"]);
        set_packing(&mut s, 0, 0);
        run(&mut s, "zadd big -0 a");
        assert_eq!(items(&mut s, "zscore big a"), ["-0"]);
    }

    #[test]
    fn zscan_prints_scores_as_each_form_stores_them() {
        // Regression: a listpack holds integral scores as integers.
        let mut s = session();
        run(&mut s, "zadd small 123456789012345678 a 1.5 b");
        assert_eq!(
            items(&mut s, "zscan small 0"),
            ["0", "b", "1.5", "a", "123456789012345680"]
        );
        set_packing(&mut s, 0, 0);
        run(&mut s, "zadd big 123456789012345678 a");
        assert_eq!(
            items(&mut s, "zscan big 0"),
            ["0", "a", "1.2345678901234568e+17"]
        );
    }

    #[test]
    fn zrandmember_whole_set_comes_highest_first() {
        // Regression: Redis walks set-operation inputs from the tail.
        let mut s = session();
        run(&mut s, "zadd k 1 a 2 b 3 c");
        assert_eq!(items(&mut s, "zrandmember k 10"), ["c", "b", "a"]);
        assert_eq!(
            run(&mut s, "zrandmember k -9223372036854775808"),
            "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"
        );
        assert_eq!(
            run(&mut s, "zrandmember k -4611686018427387904 withscores"),
            "-ERR value is out of range\r\n"
        );
        assert_eq!(items(&mut s, "zrandmember k -5").len(), 5);
        assert_eq!(run(&mut s, "zrandmember k 0"), "*0\r\n");
        assert_eq!(run(&mut s, "zrandmember nokey"), "$-1\r\n");
    }

    #[test]
    fn pops_reply_shapes_and_errors() {
        let mut s = session();
        run(&mut s, "zadd k 1 a 2 b 3 c");
        assert_eq!(
            run(&mut s, "zpopmin k -1"),
            "-ERR value is out of range, must be positive\r\n"
        );
        assert_eq!(
            run(&mut s, "zpopmin k x"),
            "-ERR value is out of range, must be positive\r\n"
        );
        assert_eq!(run(&mut s, "zpopmin k 0"), "*0\r\n");
        assert_eq!(run(&mut s, "zpopmin nokey"), "*0\r\n");
        assert_eq!(run(&mut s, "zmpop 1 nokey min"), "*-1\r\n");
        assert_eq!(
            run(&mut s, "zmpop 0 k min"),
            "-ERR numkeys should be greater than 0\r\n"
        );
        assert_eq!(
            run(&mut s, "zmpop 1 k min count 0"),
            "-ERR count should be greater than 0\r\n"
        );
        assert_eq!(
            run(&mut s, "zmpop 1 k max count 1 count 2"),
            "-ERR syntax error\r\n"
        );
        assert_eq!(run(&mut s, "zmpop 5 k min"), "-ERR syntax error\r\n");
        run(&mut s, "hello 3");
        assert_eq!(run(&mut s, "zpopmax k 1"), "*1\r\n*2\r\n$1\r\nc\r\n,3\r\n");
        assert_eq!(run(&mut s, "zpopmax k"), "*2\r\n$1\r\nb\r\n,2\r\n");
        assert_eq!(
            run(&mut s, "zmpop 2 nokey k min count 9"),
            "*2\r\n$1\r\nk\r\n*1\r\n*2\r\n$1\r\na\r\n,1\r\n"
        );
        assert_eq!(run(&mut s, "zmpop 1 k min"), "_\r\n");
    }

    #[test]
    fn set_algebra_scores_weights_and_errors() {
        let mut s = session();
        run(&mut s, "zadd a 1 x 2 y inf z");
        run(&mut s, "zadd b 1 y 2 w -inf z");
        assert_eq!(
            items(&mut s, "zunion 2 a b withscores"),
            ["z", "0", "x", "1", "w", "2", "y", "3"]
        );
        assert_eq!(
            items(&mut s, "zinter 2 a b weights 2 3 withscores"),
            ["z", "0", "y", "7"]
        );
        assert_eq!(
            items(&mut s, "zinter 2 a b aggregate max withscores"),
            ["y", "2", "z", "inf"]
        );
        assert_eq!(items(&mut s, "zdiff 2 a b withscores"), ["x", "1"]);
        assert_eq!(items(&mut s, "zdiff 2 a a"), Vec::<String>::new());
        assert_eq!(items(&mut s, "zintercard 2 a b limit 1"), [":1"]);
        assert_eq!(items(&mut s, "zunionstore d 1 a weights 0"), [":3"]);
        assert_eq!(items(&mut s, "zscore d z"), ["0"], "0 * inf is 0");
        assert_eq!(items(&mut s, "zinterstore d 2 a nokey"), [":0"]);
        assert_eq!(run(&mut s, "exists d"), ":0\r\n", "empty result deletes");
        assert_eq!(
            run(&mut s, "zunion 0 a"),
            "-ERR at least 1 input key is needed for 'zunion' command\r\n"
        );
        assert_eq!(
            run(&mut s, "zinterstore d 0 a"),
            "-ERR at least 1 input key is needed for 'zinterstore' command\r\n"
        );
        assert_eq!(run(&mut s, "zunion 3 a b"), "-ERR syntax error\r\n");
        assert_eq!(
            run(&mut s, "zunion 2 a b weights nan 1"),
            "-ERR weight value is not a float\r\n"
        );
        assert_eq!(
            run(&mut s, "zunionstore d 2 a b withscores"),
            "-ERR syntax error\r\n"
        );
        assert_eq!(
            run(&mut s, "zintercard 1 a limit -1"),
            "-ERR LIMIT can't be negative\r\n"
        );
        assert_eq!(
            run(&mut s, "zdiff 2 a b weights 1 1"),
            "-ERR syntax error\r\n"
        );
        // Keys are type checked before the options are read.
        run(&mut s, "set str x");
        assert!(run(&mut s, "zunion 2 a str badoption").starts_with("-WRONGTYPE"));
    }

    #[test]
    fn stored_results_choose_their_encoding_from_the_limits() {
        let mut s = session();
        set_packing(&mut s, 2, 64);
        run(&mut s, "zadd src 1 a 2 b 3 c");
        run(&mut s, "zrangestore d1 src 0 1");
        assert_eq!(run(&mut s, "object encoding d1"), "$8\r\nlistpack\r\n");
        run(&mut s, "zrangestore d2 src 0 -1");
        assert_eq!(run(&mut s, "object encoding d2"), "$8\r\nskiplist\r\n");
        run(&mut s, "zunionstore d3 2 d1 d1");
        assert_eq!(run(&mut s, "object encoding d3"), "$8\r\nlistpack\r\n");
        assert_eq!(run(&mut s, "zrangestore d3 src 5 6"), ":0\r\n");
        assert_eq!(run(&mut s, "exists d3"), ":0\r\n");
        set_packing(&mut s, 0, 64);
        assert_eq!(run(&mut s, "zrangestore d4 src 0 0"), ":1\r\n");
        assert_eq!(run(&mut s, "object encoding d4"), "$8\r\nskiplist\r\n");
    }

    #[test]
    fn digest_is_the_same_for_both_encodings() {
        let mut s = session();
        run(&mut s, "zadd small 1 a 2.5 b -inf c");
        set_packing(&mut s, 0, 0);
        run(&mut s, "zadd big 1 a 2.5 b -inf c");
        assert_eq!(run(&mut s, "object encoding big"), "$8\r\nskiplist\r\n");
        let d1 = run(&mut s, "debug digest-value small");
        let d2 = run(&mut s, "debug digest-value big");
        assert!(
            d1.starts_with("*1\r\n+") && d1.len() == 4 + 1 + 40 + 2,
            "{d1}"
        );
        assert_eq!(d1, d2);
        run(&mut s, "zadd big 3 b");
        assert_ne!(run(&mut s, "debug digest-value big"), d1);
    }

    #[test]
    fn zscan_covers_a_large_set() {
        let mut s = session();
        set_packing(&mut s, 0, 0);
        let members: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
        let mut cmd = String::from("zadd k");
        for (i, m) in members.iter().enumerate() {
            cmd.push_str(&format!(" {i} {m}"));
        }
        run(&mut s, &cmd);
        let mut seen = HashSet::new();
        let mut cursor = "0".to_string();
        loop {
            let got = items(&mut s, &format!("zscan k {cursor} count 7"));
            cursor = got[0].clone();
            for pair in got[1..].chunks(2) {
                let i: usize = pair[0][1..].parse().unwrap();
                assert_eq!(pair[1], i.to_string());
                seen.insert(pair[0].clone());
            }
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(seen.len(), 300);
        assert_eq!(
            items(&mut s, "zscan k 0 match m29* count 1000")[1..].len(),
            22
        );
        assert_eq!(run(&mut s, "zscan k 0 count 0"), "-ERR syntax error\r\n");
        assert_eq!(
            run(&mut s, "zscan nokey 0 count 0"),
            "*2\r\n$1\r\n0\r\n*0\r\n"
        );
    }
}
