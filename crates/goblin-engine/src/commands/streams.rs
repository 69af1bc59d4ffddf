//! The stream family (Redis's t_stream.c): XADD, XLEN, XRANGE, XREVRANGE,
//! XDEL, XTRIM, XREAD, the consumer groups (XGROUP, XREADGROUP, XACK,
//! XPENDING, XCLAIM, XAUTOCLAIM), XINFO and XSETID.
//!
//! The value type is `keyspace::stream::Stream`. Commands parse their
//! arguments in Redis's order (which decides which error a bad call gets),
//! then run on the stream and reply.
//!
//! **Blocking.** XREAD and XREADGROUP with BLOCK that find nothing block
//! through `Ctx::block_on`; XREAD's `$` is resolved to the stream's last ID
//! in the arguments kept for the wait, as Redis remembers the ID it blocked
//! for. When a key is ready (XADD, a stream moved or deleted, a group
//! destroyed) the command runs again for the waiter (`ctx.serving`), as
//! Redis's serveClientsBlockedOnStreamKey: it serves the waiter when the
//! stream's last ID passed the waiter's, fails an XREADGROUP whose stream or
//! group went away, and otherwise declines (`Ctx::keep_waiting`).
//!
//! **The append-only file.** What could replay differently is logged as
//! Redis propagates it: XADD with the ID it chose and `~` trimming made
//! exact; XREADGROUP, XCLAIM and XAUTOCLAIM as one XCLAIM ... FORCE JUSTID
//! LASTID per entry they handed out or dropped, plus XGROUP SETID (and
//! XGROUP CREATECONSUMER) for NOACK reads.

use std::sync::atomic::Ordering::Relaxed;

use crate::blocking::BlockRequest;
use crate::command::args::Args;
use crate::command::spec::{
    flag, kflag, BeginSearch, CmdResult, CommandSpec, FindKeys, Group, KeySpec,
};
use crate::command::Ctx;
use crate::engine::Engine;
use crate::error::printf_s;
use crate::keyspace::stream::{
    AppendError, ConsumerGroup, EntryRef, NewId, NodeLimits, Stream, StreamId, Trim, TrimStrategy,
};
use crate::keyspace::{CompactBytes, Object, Value, ValueType};
use crate::persist::packed::Elem;
use crate::protocol::ReplyWriter;
use crate::pubsub::notify;
use crate::util::number::{arg_i64, parse_i64};
use crate::Error;

const INVALID_ID: Error =
    Error::constant("ERR Invalid stream ID specified as stream command argument");

/// XREAD_BLOCKED_DEFAULT_COUNT: a blocked read without COUNT is served at
/// most this many entries.
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// Commands to log in place of the call (see `Ctx::propagate_as`).
type Propagated = Vec<Vec<Vec<u8>>>;

// ---------------------------------------------------------------------------
// Shared helpers.

/// The node limits from the configuration.
pub fn node_limits(engine: &Engine) -> NodeLimits {
    NodeLimits {
        max_bytes: engine.config().stream_node_max_bytes.load(Relaxed),
        max_entries: engine.config().stream_node_max_entries.load(Relaxed),
    }
}

/// The clock for delivery and seen times and new IDs: the command's, or
/// the wall clock while the append-only file is replayed (which runs
/// with the command clock stopped at 0; Redis reads mstime() there too).
fn now(ctx: &Ctx) -> i64 {
    if ctx.now_ms == 0 {
        crate::util::time::now_ms() as i64
    } else {
        ctx.now_ms as i64
    }
}

fn as_stream(obj: Option<&mut Object>) -> Result<Option<&mut Stream>, Error> {
    match obj {
        None => Ok(None),
        Some(Object {
            value: Value::Stream(s),
            ..
        }) => Ok(Some(s)),
        Some(_) => Err(Error::WRONGTYPE),
    }
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// The argument as C sees it: up to its first NUL byte.
fn c_str(arg: &[u8]) -> &[u8] {
    match arg.iter().position(|&b| b == 0) {
        Some(i) => &arg[..i],
        None => arg,
    }
}

/// Takes the next argument when it is the symbol `word` as C compares it
/// (strcmp: up to a NUL byte), as Redis matches XADD's `*`, the trim
/// operators `~` and `=`, and XGROUP's `$`.
fn take_symbol(args: &mut Args, word: &'static str) -> bool {
    if args.flag(word) {
        return true;
    }
    let matches = args.peek().is_some_and(|arg| c_str(arg) == word.as_bytes());
    matches && args.next_arg().is_ok()
}

/// glibc's strtoull in base 10 over a whole string: leading white space,
/// an optional sign (a '-' negates, modulo 2^64), digits to the end.
fn strtoull(s: &[u8]) -> Option<u64> {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Redis's string2ull: a string2ll number that is not negative, or
/// whatever strtoull accepts.
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(v) = parse_i64(s) {
        return (v >= 0).then_some(v as u64);
    }
    strtoull(s)
}

/// Redis's streamGenericParseIDOrReply: `<ms>-<seq>`, `<ms>` (the sequence
/// is `missing_seq`), `-` and `+` unless `strict`, and `<ms>-*` when
/// `seq_star` (then the second value is false: the sequence is to be
/// generated).
fn parse_id_full(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    seq_star: bool,
) -> Result<(StreamId, bool), Error> {
    if arg.len() > 127 {
        return Err(INVALID_ID);
    }
    let buf = c_str(arg);
    if strict && (buf == b"-" || buf == b"+") {
        return Err(INVALID_ID);
    }
    if buf == b"-" {
        return Ok((StreamId::MIN, true));
    }
    if buf == b"+" {
        return Ok((StreamId::MAX, true));
    }
    let (ms_part, seq_part) = match buf.iter().position(|&c| c == b'-') {
        Some(i) => (&buf[..i], Some(&buf[i + 1..])),
        None => (buf, None),
    };
    let ms = string2ull(ms_part).ok_or(INVALID_ID)?;
    let mut seq_given = true;
    let seq = match seq_part {
        Some(b"*") if seq_star => {
            seq_given = false;
            0
        }
        Some(p) => string2ull(p).ok_or(INVALID_ID)?,
        None => missing_seq,
    };
    Ok((StreamId::new(ms, seq), seq_given))
}

/// streamParseIDOrReply: `-` and `+` allowed.
fn parse_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, Error> {
    parse_id_full(arg, missing_seq, false, false).map(|(id, _)| id)
}

/// streamParseStrictIDOrReply: `-` and `+` refused.
fn parse_strict_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, Error> {
    parse_id_full(arg, missing_seq, true, false).map(|(id, _)| id)
}

/// streamParseIntervalIDOrReply: an ID, or `(ID` for an exclusive bound
/// (then strict). Returns the ID and whether it was exclusive.
fn parse_interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), Error> {
    if arg.len() > 1 && arg[0] == b'(' {
        Ok((parse_strict_id(&arg[1..], missing_seq)?, true))
    } else {
        Ok((parse_id(arg, missing_seq)?, false))
    }
}

/// An interval's start: `(` moves it to the next ID.
fn interval_start(arg: &[u8]) -> Result<StreamId, Error> {
    let (mut id, exclusive) = parse_interval_id(arg, 0)?;
    if exclusive && !id.incr() {
        return Err(Error::err("invalid start ID for the interval"));
    }
    Ok(id)
}

/// An interval's end: `(` moves it to the previous ID.
fn interval_end(arg: &[u8]) -> Result<StreamId, Error> {
    let (mut id, exclusive) = parse_interval_id(arg, u64::MAX)?;
    if exclusive && !id.decr() {
        return Err(Error::err("invalid end ID for the interval"));
    }
    Ok(id)
}

fn reply_id(out: &mut ReplyWriter, id: StreamId) {
    out.bulk(id.to_string().as_bytes());
}

fn reply_elem(out: &mut ReplyWriter, e: Elem<'_>) {
    match e {
        Elem::Str(s) => out.bulk(s),
        Elem::Int(v) => out.bulk_i64(v),
    }
}

/// One entry: [ID, [field, value, ...]].
fn reply_entry(out: &mut ReplyWriter, e: &EntryRef<'_>) {
    out.array(2);
    reply_id(out, e.id);
    out.array(e.num_fields() * 2);
    for (f, v) in e.fields() {
        reply_elem(out, f);
        reply_elem(out, v);
    }
}

/// Plain ranges (XRANGE, XREVRANGE, XINFO): entries from `start` to `end`,
/// at most `count` (0 = all), as an array unless `raw`.
fn reply_range(
    out: &mut ReplyWriter,
    s: &Stream,
    start: Option<StreamId>,
    end: Option<StreamId>,
    count: usize,
    rev: bool,
    raw: bool,
) -> usize {
    let d = (!raw).then(|| out.begin_deferred());
    let mut n = 0;
    for e in s.entries.range(start, end, rev) {
        reply_entry(out, &e);
        n += 1;
        if count != 0 && n == count {
            break;
        }
    }
    if let Some(d) = d {
        out.end_array(d, n);
    }
    n
}

/// XCLAIM <key> <group> <consumer> 0 <id> TIME <ms> RETRYCOUNT <count>
/// FORCE JUSTID LASTID <group-last-id>: how Redis propagates a change of
/// a pending entry (streamPropagateXCLAIM), idempotent on replay.
fn xclaim_record(
    key: &[u8],
    group: &[u8],
    g: &ConsumerGroup,
    id_arg: &[u8],
    id: StreamId,
) -> Vec<Vec<u8>> {
    let (consumer, time, count) = match g.pel.get(&id) {
        Some(n) => (n.consumer.to_vec(), n.delivery_time, n.delivery_count),
        None => (Vec::new(), 0, 0),
    };
    vec![
        b"XCLAIM".to_vec(),
        key.to_vec(),
        group.to_vec(),
        consumer,
        b"0".to_vec(),
        id_arg.to_vec(),
        b"TIME".to_vec(),
        time.to_string().into_bytes(),
        b"RETRYCOUNT".to_vec(),
        count.to_string().into_bytes(),
        b"FORCE".to_vec(),
        b"JUSTID".to_vec(),
        b"LASTID".to_vec(),
        g.last_id.to_bytes(),
    ]
}

/// XGROUP SETID <key> <group> <last-id> ENTRIESREAD <n>
/// (streamPropagateGroupID).
fn setid_record(key: &[u8], group: &[u8], g: &ConsumerGroup) -> Vec<Vec<u8>> {
    vec![
        b"XGROUP".to_vec(),
        b"SETID".to_vec(),
        key.to_vec(),
        group.to_vec(),
        g.last_id.to_bytes(),
        b"ENTRIESREAD".to_vec(),
        g.entries_read.unwrap_or(-1).to_string().into_bytes(),
    ]
}

/// XGROUP CREATECONSUMER <key> <group> <consumer>
/// (streamPropagateConsumerCreation).
fn createconsumer_record(key: &[u8], group: &[u8], consumer: &[u8]) -> Vec<Vec<u8>> {
    vec![
        b"XGROUP".to_vec(),
        b"CREATECONSUMER".to_vec(),
        key.to_vec(),
        group.to_vec(),
        consumer.to_vec(),
    ]
}

fn log_all(ctx: &mut Ctx, records: Propagated) {
    for r in records {
        let argv: Vec<&[u8]> = r.iter().map(|a| a.as_slice()).collect();
        ctx.propagate_as(&argv);
    }
}

/// A read in a consumer group: which group and consumer, NOACK, and the
/// key (for the propagated commands).
struct GroupRead<'a> {
    key: &'a [u8],
    group: &'a [u8],
    consumer: &'a [u8],
    noack: bool,
}

/// streamReplyWithRange for a group read of new entries: replies the
/// entries from `start`, moves the group's last ID and read counter, and
/// without NOACK makes each entry pending for the consumer; records what
/// to propagate.
fn reply_group_range(
    out: &mut ReplyWriter,
    s: &mut Stream,
    start: StreamId,
    count: usize,
    read: &GroupRead<'_>,
    now: i64,
    log: &mut Propagated,
) -> usize {
    let Stream { entries, groups } = s;
    let Some(g) = groups.get_mut(read.group) else {
        out.array(0);
        return 0;
    };
    let d = out.begin_deferred();
    let mut n = 0;
    let mut propagate_last_id = false;
    for e in entries.range(Some(start), None, false) {
        if e.id > g.last_id {
            if g.entries_read.is_some() && !entries.range_has_tombstones(Some(e.id), None) {
                // A valid counter and no tombstone ahead: count the read.
                g.entries_read = g.entries_read.map(|r| r.wrapping_add(1));
            } else if entries.entries_added != 0 {
                g.entries_read = entries.estimate_distance(e.id);
            }
            g.last_id = e.id;
            if read.noack {
                propagate_last_id = true;
            }
        }
        reply_entry(out, &e);
        if !read.noack {
            g.deliver(e.id, read.consumer, now);
            log.push(xclaim_record(
                read.key,
                read.group,
                g,
                &e.id.to_bytes(),
                e.id,
            ));
        }
        n += 1;
        if count != 0 && n == count {
            break;
        }
    }
    if propagate_last_id {
        log.push(setid_record(read.key, read.group, g));
    }
    out.end_array(d, n);
    n
}

/// streamReplyWithRangeFromConsumerPEL: XREADGROUP with an ID other than
/// `>` reads the consumer's own pending entries from `start`: each entry,
/// or [ID, nil] for one deleted since, counting a delivery for those that
/// still exist.
fn reply_consumer_history(
    out: &mut ReplyWriter,
    s: &mut Stream,
    start: StreamId,
    count: usize,
    group: &[u8],
    consumer: &[u8],
    now: i64,
) {
    let Stream { entries, groups } = s;
    let Some(g) = groups.get_mut(group) else {
        out.array(0);
        return;
    };
    let ids: Vec<StreamId> = match g.consumers.get(consumer) {
        Some(c) => c
            .pel
            .range(start..)
            .take(if count == 0 { usize::MAX } else { count })
            .copied()
            .collect(),
        None => Vec::new(),
    };
    out.array(ids.len());
    for id in ids {
        match entries.range(Some(id), Some(id), false).next() {
            Some(e) => {
                reply_entry(out, &e);
                if let Some(nack) = g.pel.get_mut(&id) {
                    nack.delivery_time = now;
                    nack.delivery_count = nack.delivery_count.wrapping_add(1);
                }
            }
            None => {
                out.array(2);
                reply_id(out, id);
                out.null_array();
            }
        }
    }
}

/// Redis's streamReplyWithCGLag: the entries not yet delivered to the
/// group, or null when it cannot be known.
fn reply_lag(out: &mut ReplyWriter, s: &Stream, g: &ConsumerGroup) {
    let e = &s.entries;
    let lag = if e.entries_added == 0 {
        Some(0)
    } else if let (Some(read), false) = (
        g.entries_read,
        e.range_has_tombstones(Some(g.last_id), None),
    ) {
        Some((e.entries_added as i64).wrapping_sub(read))
    } else {
        e.estimate_distance(g.last_id)
            .map(|read| (e.entries_added as i64).wrapping_sub(read))
    };
    match lag {
        Some(l) => out.int(l),
        None => out.null(),
    }
}

// ---------------------------------------------------------------------------
// XADD and XTRIM.

/// The parsed options of XADD / XTRIM (streamAddTrimArgs).
struct AddTrimArgs {
    /// XADD's ID argument position (the number of arguments when missing).
    id_pos: usize,
    id: Option<NewId>,
    nomkstream: bool,
    trim: Option<Trim>,
    /// Position of the MAXLEN / MINID threshold (rewritten for `~`).
    threshold_pos: usize,
}

/// MAXLEN or MINID, taken from `args` when a value follows it (else, as in
/// Redis, the word is XADD's ID or a syntax error): whether it is MINID.
fn take_trim_strategy(args: &mut Args) -> Option<bool> {
    if args.rest().len() < 2 {
        None
    } else if args.flag("MAXLEN") {
        Some(false)
    } else if args.flag("MINID") {
        Some(true)
    } else {
        None
    }
}

/// streamParseAddOrTrimArgsOrReply. `obey` is Redis's mustObeyClient (the
/// append-only file being replayed): LIMIT is then not enforced, since the
/// threshold was made exact when it was logged.
fn parse_add_trim(
    args: &[&[u8]],
    xadd: bool,
    obey: bool,
    max_entries: usize,
) -> Result<AddTrimArgs, Error> {
    let mut p = AddTrimArgs {
        id_pos: args.len(),
        id: None,
        nomkstream: false,
        trim: None,
        threshold_pos: 0,
    };
    let mut strategy: Option<TrimStrategy> = None;
    let mut approx = false;
    let mut limit: i64 = 0;
    let mut limit_given = false;
    let incompatible =
        || Error::err("syntax error, MAXLEN and MINID options at the same time are not compatible");
    // Positions in `args` of what the cursor takes next.
    let mut a = Args::new(&args[2..]);
    let pos = |a: &Args| 2 + a.taken();
    while !a.is_empty() {
        if xadd && take_symbol(&mut a, "*") {
            p.id_pos = pos(&a) - 1;
            p.id = Some(NewId::Auto);
            break;
        } else if let Some(minid) = take_trim_strategy(&mut a) {
            if strategy.is_some() {
                return Err(incompatible());
            }
            // The operator, when the threshold follows it.
            approx = false;
            if a.rest().len() >= 2 {
                if take_symbol(&mut a, "~") {
                    approx = true;
                } else {
                    take_symbol(&mut a, "=");
                }
            }
            p.threshold_pos = pos(&a);
            let threshold = a.next_arg()?;
            strategy = Some(if minid {
                TrimStrategy::MinId(parse_strict_id(threshold, 0)?)
            } else {
                let maxlen = arg_i64(threshold)?;
                if maxlen < 0 {
                    return Err(Error::err("The MAXLEN argument must be >= 0."));
                }
                TrimStrategy::MaxLen(maxlen as u64)
            });
        } else if let Some(count) = a.option("LIMIT") {
            limit = arg_i64(count)?;
            if limit < 0 {
                return Err(Error::err("The LIMIT argument must be >= 0."));
            }
            limit_given = true;
        } else if xadd && a.flag("NOMKSTREAM") {
            p.nomkstream = true;
        } else if xadd {
            // A syntax error or the ID.
            p.id_pos = pos(&a);
            let (id, seq_given) = parse_id_full(a.next_arg()?, 0, true, true)?;
            p.id = Some(if seq_given {
                NewId::Explicit(id)
            } else {
                NewId::AutoSeq(id.ms)
            });
            break;
        } else {
            return Err(Error::SYNTAX);
        }
    }
    if limit != 0 && strategy.is_none() {
        return Err(Error::err(
            "syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && strategy.is_none() {
        return Err(Error::err(
            "syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if obey {
        limit = 0;
    } else if limit_given {
        if !approx {
            return Err(Error::err(
                "syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
    } else if approx {
        // At most 100 nodes' worth of work per call, within bounds.
        limit = (100i64).saturating_mul(max_entries as i64);
        if limit <= 0 {
            limit = 10000;
        }
        if limit > 1_000_000 {
            limit = 1_000_000;
        }
    } else {
        limit = 0;
    }
    p.trim = strategy.map(|strategy| Trim {
        strategy,
        approx,
        limit: limit as u64,
    });
    Ok(p)
}

/// After a `~` trim, the logged command gets `=` and the threshold the
/// trim actually reached (streamRewriteTrimArgument), so that a replay
/// trims exactly the same.
fn exact_trim_args(args: &[&[u8]], a: &AddTrimArgs, s: &Stream) -> Vec<Vec<u8>> {
    let mut argv: Vec<Vec<u8>> = args.iter().map(|x| x.to_vec()).collect();
    let Some(t) = a.trim else { return argv };
    argv[a.threshold_pos - 1] = b"=".to_vec();
    argv[a.threshold_pos] = match t.strategy {
        TrimStrategy::MaxLen(_) => s.entries.length.to_string().into_bytes(),
        TrimStrategy::MinId(_) => s
            .entries
            .edge_id(true, false)
            .unwrap_or(StreamId::MAX)
            .to_bytes(),
    };
    argv
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|ID field value ...
fn xadd_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let limits = node_limits(ctx.engine);
    let a = parse_add_trim(args, true, ctx.client.replaying, limits.max_entries)?;
    let field_pos = a.id_pos + 1;
    if args.len() < field_pos + 2 || (args.len() - field_pos) % 2 == 1 {
        return Err(Error::arity("xadd"));
    }
    if let Some(NewId::Explicit(id)) = a.id {
        if id.is_zero() {
            return Err(Error::err(
                "The ID specified in XADD must be greater than 0-0",
            ));
        }
    }
    let key = args[1];
    let now_ms = now(ctx) as u64;
    let stream = match as_stream(ctx.lookup_write(key))? {
        Some(_) => None,
        None if a.nomkstream => {
            ctx.out.null();
            return Ok(());
        }
        None => Some(Value::Stream(Box::default())),
    };
    if let Some(v) = stream {
        // Created before the append, as Redis's dbAdd: a failing append
        // leaves the empty stream.
        let now = ctx.now_ms;
        let (db, h) = ctx.locate(key);
        db.insert_new(h, key, v, now);
    }
    let s = as_stream(ctx.lookup_write(key))?.expect("stream present");
    if s.entries.last_id == StreamId::MAX {
        return Err(Error::err(
            "The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let fields = &args[field_pos..];
    let id = match s
        .entries
        .append(fields, a.id.unwrap_or(NewId::Auto), now_ms, limits)
    {
        Ok(id) => id,
        Err(AppendError::IdTooSmall) => {
            return Err(Error::err(
                "The ID specified in XADD is equal or smaller than the target stream top item",
            ))
        }
        // Redis reports a sequence overflow with whatever errno held: not
        // EDOM, hence this text.
        Err(AppendError::TooLarge) | Err(AppendError::SeqExhausted) => {
            return Err(Error::err("Elements are too large to be stored"))
        }
    };
    let mut logged: Option<Vec<Vec<u8>>> = None;
    let mut trimmed = false;
    if let Some(t) = a.trim {
        trimmed = s.entries.trim(t) > 0;
        if t.approx {
            logged = Some(exact_trim_args(args, &a, s));
        }
    }
    if !matches!(a.id, Some(NewId::Explicit(_))) {
        let argv = logged.get_or_insert_with(|| args.iter().map(|x| x.to_vec()).collect());
        argv[a.id_pos] = id.to_bytes();
    }
    ctx.out.bulk(id.to_string().as_bytes());
    ctx.pushed(key, notify::STREAM, "xadd");
    if trimmed {
        ctx.notify(notify::STREAM, "xtrim", key);
    }
    if let Some(argv) = logged {
        let argv: Vec<&[u8]> = argv.iter().map(|x| x.as_slice()).collect();
        ctx.propagate_as(&argv);
    }
    Ok(())
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
fn xtrim_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let limits = node_limits(ctx.engine);
    let a = parse_add_trim(args, false, ctx.client.replaying, limits.max_entries)?;
    let key = args[1];
    let Some(s) = as_stream(ctx.lookup_write(key))? else {
        ctx.out.int(0);
        return Ok(());
    };
    let t = a.trim.expect("XTRIM has a strategy");
    let deleted = s.entries.trim(t);
    let logged = (deleted > 0 && t.approx).then(|| exact_trim_args(args, &a, s));
    if deleted > 0 {
        ctx.changed(key, notify::STREAM, "xtrim");
        ctx.add_dirty(deleted - 1);
        if let Some(argv) = logged {
            let argv: Vec<&[u8]> = argv.iter().map(|x| x.as_slice()).collect();
            ctx.propagate_as(&argv);
        }
    }
    ctx.out.int(deleted as i64);
    Ok(())
}

// ---------------------------------------------------------------------------
// XLEN, XRANGE, XREVRANGE, XDEL.

fn xlen_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = as_stream(ctx.lookup_read(args[1]))?.map_or(0, |s| s.entries.length);
    ctx.out.int(n as i64);
    Ok(())
}

/// XRANGE / XREVRANGE (xrangeGenericCommand).
fn range_generic(ctx: &mut Ctx, args: &[&[u8]], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev {
        (args[3], args[2])
    } else {
        (args[2], args[3])
    };
    let start = interval_start(start_arg)?;
    let end = interval_end(end_arg)?;
    let mut count: i64 = -1;
    let mut a = Args::new(&args[4..]);
    while !a.is_empty() {
        let Some(n) = a.option("COUNT") else {
            return Err(Error::SYNTAX);
        };
        count = arg_i64(n)?.max(0);
    }
    let (obj, out) = ctx.lookup_read_and_out(args[1]);
    let Some(s) = as_stream(obj)? else {
        out.array(0);
        return Ok(());
    };
    if count == 0 {
        out.null_array();
    } else {
        let count = if count < 0 { 0 } else { count as usize };
        reply_range(out, s, Some(start), Some(end), count, rev, false);
    }
    Ok(())
}

fn xrange_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    range_generic(ctx, args, false)
}

fn xrevrange_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    range_generic(ctx, args, true)
}

/// XDEL key id...: the IDs are all checked before anything is deleted.
fn xdel_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    if as_stream(ctx.lookup_write(key))?.is_none() {
        ctx.out.int(0);
        return Ok(());
    }
    let ids = args[2..]
        .iter()
        .map(|a| parse_strict_id(a, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let s = as_stream(ctx.lookup_write(key))?.expect("checked");
    let e = &mut s.entries;
    let mut deleted = 0u64;
    let mut first_entry = false;
    for id in ids {
        if e.delete(id) {
            if id == e.first_id {
                first_entry = true;
            }
            if id > e.max_deleted_entry_id {
                e.max_deleted_entry_id = id;
            }
            deleted += 1;
        }
    }
    if deleted > 0 {
        if e.length == 0 {
            e.first_id = StreamId::MIN;
        } else if first_entry {
            e.first_id = e.edge_id(true, true).unwrap_or(StreamId::MAX);
        }
        ctx.changed(key, notify::STREAM, "xdel");
        ctx.add_dirty(deleted - 1);
    }
    ctx.out.int(deleted as i64);
    Ok(())
}

// ---------------------------------------------------------------------------
// XREAD and XREADGROUP.

/// The parsed arguments of XREAD / XREADGROUP.
struct ReadArgs<'a> {
    /// BLOCK's deadline: None without BLOCK, Some(None) to wait forever.
    block: Option<Option<u64>>,
    count: usize,
    noack: bool,
    group: Option<(&'a [u8], &'a [u8])>,
    /// Where the keys start.
    streams_at: usize,
    keys: Vec<&'a [u8]>,
    ids: Vec<&'a [u8]>,
}

/// The key positions of XREAD / XREADGROUP: the first half of what
/// follows STREAMS, found by skipping the options as the command parses
/// them (Redis's xreadGetKeys), since "STREAMS" may also name a group or a
/// consumer. These are the keys the command locks and touches. When the
/// arguments do not parse (the command will refuse them before touching a
/// key), the key specs' answer is given, as Redis's COMMAND GETKEYS and
/// ACL checks give it.
fn xread_keys(argv: &[&[u8]]) -> Vec<(usize, u32)> {
    let mut streams_pos = None;
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i];
        if a.eq_ignore_ascii_case(b"block") || a.eq_ignore_ascii_case(b"count") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"group") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"noack") {
        } else if a.eq_ignore_ascii_case(b"streams") {
            streams_pos = Some(i);
            break;
        } else {
            break;
        }
        i += 1;
    }
    let parsed = streams_pos.filter(|pos| {
        let n = argv.len() - pos - 1;
        n != 0 && n % 2 == 0
    });
    let pos = match parsed {
        Some(pos) => pos,
        None => {
            // The key spec: STREAMS searched from argument 1 (XREAD) or 4
            // (XREADGROUP), the last argument excluded.
            let from = if argv[0].len() == 10 { 4 } else { 1 };
            let found = (from..argv.len().saturating_sub(1))
                .find(|&i| argv[i].eq_ignore_ascii_case(b"streams"));
            match found {
                Some(pos) => pos,
                None => return Vec::new(),
            }
        }
    };
    let n = (argv.len() - pos - 1) / 2;
    // XREAD reads; XREADGROUP also moves the group's cursor.
    let flags = if argv[0].len() == 10 {
        kflag::RW | kflag::ACCESS
    } else {
        kflag::RO | kflag::ACCESS
    };
    (pos + 1..pos + 1 + n).map(|i| (i, flags)).collect()
}

/// The refusal of XREAD's or XREADGROUP's unknown arguments `rest`: XREAD
/// names XREADGROUP's options GROUP and NOACK in it (they are not its
/// options, so its parser does not ask the cursor for them); anything else
/// is a syntax error.
fn xread_refusal(rest: &[&[u8]]) -> Error {
    let word = rest.first().copied().unwrap_or_default();
    if word.eq_ignore_ascii_case(b"GROUP") && rest.len() >= 3 {
        Error::err("The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
    } else if word.eq_ignore_ascii_case(b"NOACK") {
        Error::err("The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
    } else {
        Error::SYNTAX
    }
}

/// xreadCommand's argument loop.
fn parse_read<'a>(ctx: &Ctx, args: &[&'a [u8]], xreadgroup: bool) -> Result<ReadArgs<'a>, Error> {
    let mut r = ReadArgs {
        block: None,
        count: 0,
        noack: false,
        group: None,
        streams_at: 0,
        keys: Vec::new(),
        ids: Vec::new(),
    };
    let mut a = Args::new(&args[1..]);
    while !a.is_empty() {
        if let Some(ms) = a.option("BLOCK") {
            if ctx.in_script {
                // Redis refuses it outright in scripts, rather than
                // answering as on a timeout.
                return Err(Error::err(format_args!(
                    "{} command is not allowed with BLOCK option from scripts",
                    lossy(args[0])
                )));
            }
            let ms = parse_i64(ms)
                .ok_or_else(|| Error::err("timeout is not an integer or out of range"))?;
            if ms < 0 {
                return Err(Error::err("timeout is negative"));
            }
            r.block = Some(if ms == 0 {
                None
            } else {
                // Past the range it wraps to a time already gone, as in
                // Redis: the client times out at once.
                Some((ms.wrapping_add(ctx.now_ms as i64)).max(1) as u64)
            });
        } else if let Some(count) = a.option("COUNT") {
            r.count = arg_i64(count)?.max(0) as usize;
        } else if a.flag("STREAMS") {
            let streams = a.rest();
            if streams.is_empty() {
                return Err(Error::SYNTAX);
            }
            if streams.len() % 2 != 0 {
                return Err(Error::err(
                    "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            r.streams_at = 1 + a.taken();
            let (keys, ids) = streams.split_at(streams.len() / 2);
            r.keys = keys.to_vec();
            r.ids = ids.to_vec();
            break;
        } else if xreadgroup && a.rest().len() >= 3 && a.flag("GROUP") {
            r.group = Some((a.next_arg()?, a.next_arg()?));
        } else if xreadgroup && a.flag("NOACK") {
            r.noack = true;
        } else {
            return Err(xread_refusal(a.rest()));
        }
    }
    if r.streams_at == 0 {
        return Err(Error::SYNTAX);
    }
    if xreadgroup && r.group.is_none() {
        return Err(Error::err("Missing GROUP option for XREADGROUP"));
    }
    Ok(r)
}

/// The ID given for one stream: an ID, `$` (XREAD: the stream's last ID)
/// or `>` (XREADGROUP: entries never delivered to the group).
#[derive(Clone, Copy)]
enum ReadFrom {
    After(StreamId),
    New,
}

/// XREAD / XREADGROUP (xreadCommand).
fn read_generic(ctx: &mut Ctx, args: &[&[u8]], xreadgroup: bool) -> CmdResult {
    // The read itself is never logged: XREADGROUP's changes are, as the
    // commands reply_group_range records.
    ctx.propagate_nothing();
    let r = parse_read(ctx, args, xreadgroup)?;
    if let Some(key) = ctx.serving {
        return serve_blocked(ctx, &r, key);
    }
    let mut from: Vec<ReadFrom> = Vec::with_capacity(r.keys.len());
    for (key, id_arg) in r.keys.iter().zip(&r.ids) {
        let s = as_stream(ctx.lookup_read(key))?;
        let last_id = s.as_ref().map(|s| s.entries.last_id);
        if let Some((group, _)) = r.group {
            if !s.is_some_and(|s| s.groups.contains_key(group)) {
                return Err(Error::concat(&[
                    b"NOGROUP No such key '",
                    printf_s(key, usize::MAX),
                    b"' or consumer group '",
                    printf_s(group, usize::MAX),
                    b"' in XREADGROUP with GROUP option",
                ]));
            }
        }
        let raw_id = *id_arg;
        let id_arg = c_str(raw_id);
        if id_arg == b"$" {
            if xreadgroup {
                return Err(Error::err(
                    "The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                ));
            }
            from.push(ReadFrom::After(last_id.unwrap_or(StreamId::MIN)));
        } else if id_arg == b">" {
            if !xreadgroup {
                return Err(Error::err(
                    "The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ));
            }
            from.push(ReadFrom::New);
        } else {
            let id = parse_strict_id(raw_id, 0)?;
            // Redis marks `>` with the maximum ID, so an explicit maximum
            // reads new entries too.
            from.push(if xreadgroup && id == StreamId::MAX {
                ReadFrom::New
            } else {
                ReadFrom::After(id)
            });
        }
    }

    // Serve what can be served now.
    let now = now(ctx);
    let resp3 = ctx.out.is_resp3();
    let mut log: Propagated = Vec::new();
    let mut dirty = 0u64;
    let mut top: Option<crate::protocol::reply::Deferred> = None;
    let mut served = 0;
    let mut new_consumer_in: Vec<&[u8]> = Vec::new();
    for (i, key) in r.keys.iter().enumerate() {
        let (obj, out) = ctx.lookup_read_and_out(key);
        let Ok(Some(s)) = as_stream(obj) else {
            continue;
        };
        // What to serve: entries after `gt`, or the consumer's history.
        let (gt, history) = match (from[i], r.group) {
            (ReadFrom::After(id), Some(_)) => (id, true),
            (ReadFrom::New, Some((group, _))) => {
                let last = s.groups.get(group).map_or(StreamId::MIN, |g| g.last_id);
                if s.entries.length == 0 || s.entries.last_valid_id() <= last {
                    continue;
                }
                (last, false)
            }
            (ReadFrom::After(id), None) => {
                if s.entries.length == 0 || s.entries.last_valid_id() <= id {
                    continue;
                }
                (id, false)
            }
            (ReadFrom::New, None) => continue,
        };
        served += 1;
        if served == 1 {
            top = Some(out.begin_deferred());
        }
        if !resp3 {
            out.array(2);
        }
        out.bulk(key);
        let mut start = gt;
        start.incr();
        match r.group {
            Some((group, consumer)) => {
                let g = s.groups.get_mut(group).expect("group checked");
                if g.lookup_consumer(consumer, Some(now)).is_none() {
                    g.create_consumer(consumer, now);
                    new_consumer_in.push(key);
                    dirty += 1;
                    if r.noack {
                        log.push(createconsumer_record(key, group, consumer));
                    }
                }
                if history {
                    reply_consumer_history(out, s, start, r.count, group, consumer, now);
                } else {
                    let read = GroupRead {
                        key,
                        group,
                        consumer,
                        noack: r.noack,
                    };
                    reply_group_range(out, s, start, r.count, &read, now, &mut log);
                }
            }
            None => {
                reply_range(out, s, Some(start), None, r.count, false, false);
            }
        }
        if r.group.is_some() {
            dirty += 1;
        }
    }
    ctx.add_dirty(dirty);
    for key in new_consumer_in {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    if let Some(d) = top {
        if resp3 {
            ctx.out.end_map(d, served);
        } else {
            ctx.out.end_array(d, served);
        }
        log_all(ctx, log);
        return Ok(());
    }
    log_all(ctx, log);

    let Some(deadline) = r.block else {
        ctx.out.null_array();
        return Ok(());
    };
    // Block. XREAD's `$` becomes the ID it stood for, so that the wait is
    // for entries after the last one of now.
    let mut argv: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    if !xreadgroup {
        let ids_at = r.streams_at + r.keys.len();
        for (i, f) in from.iter().enumerate() {
            if let ReadFrom::After(id) = f {
                argv[ids_at + i] = id.to_bytes();
            }
        }
    }
    let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_slice()).collect();
    ctx.block_on(
        &argv,
        BlockRequest {
            keys: &r.keys,
            deadline_ms: deadline,
            value_type: ValueType::Stream,
        },
        ReplyWriter::null_array,
    );
    Ok(())
}

/// Runs for a client blocked in XREAD / XREADGROUP when `key` is ready
/// (Redis's serveClientsBlockedOnStreamKey and
/// unblockDeletedStreamReadgroupClients).
fn serve_blocked(ctx: &mut Ctx, r: &ReadArgs<'_>, key: &[u8]) -> CmdResult {
    let Some(i) = r.keys.iter().position(|k| *k == key) else {
        ctx.keep_waiting();
        return Ok(());
    };
    let now = now(ctx);
    let resp3 = ctx.out.is_resp3();
    let count = if r.count == 0 {
        BLOCKED_DEFAULT_COUNT
    } else {
        r.count
    };
    let mut log: Propagated = Vec::new();
    let (obj, out) = ctx.lookup_write_and_out(key);
    let s = match obj {
        Some(Object {
            value: Value::Stream(s),
            ..
        }) => s,
        _ => {
            // The stream was deleted or replaced: a group read can never
            // be served again.
            if r.group.is_some() {
                return Err(Error::constant("UNBLOCKED the stream key no longer exists"));
            }
            ctx.keep_waiting();
            return Ok(());
        }
    };
    let gt = match r.group {
        Some((group, _)) => match s.groups.get(group) {
            Some(g) => g.last_id,
            None => {
                return Err(Error::constant(
                    "NOGROUP the consumer group this client was blocked on no longer exists",
                ))
            }
        },
        None => parse_strict_id(r.ids[i], 0).unwrap_or(StreamId::MAX),
    };
    // The stream's last ID, tombstone or not, as Redis compares it.
    if s.entries.last_id <= gt {
        ctx.keep_waiting();
        return Ok(());
    }
    let mut start = gt;
    start.incr();
    if resp3 {
        out.map(1);
    } else {
        out.array(1);
        out.array(2);
    }
    out.bulk(key);
    match r.group {
        Some((group, consumer)) => {
            let g = s.groups.get_mut(group).expect("group checked");
            let mut created = false;
            if g.lookup_consumer(consumer, Some(now)).is_none() {
                g.create_consumer(consumer, now);
                created = true;
                if r.noack {
                    log.push(createconsumer_record(key, group, consumer));
                }
            }
            let read = GroupRead {
                key,
                group,
                consumer,
                noack: r.noack,
            };
            reply_group_range(out, s, start, count, &read, now, &mut log);
            if created {
                ctx.add_dirty(1);
                ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
            }
        }
        None => {
            reply_range(out, s, Some(start), None, count, false, false);
        }
    }
    log_all(ctx, log);
    Ok(())
}

fn xread_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    read_generic(ctx, args, false)
}

fn xreadgroup_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    read_generic(ctx, args, true)
}

// ---------------------------------------------------------------------------
// XGROUP and XSETID.

fn nogroup_for_key(group: &[u8], key: &[u8]) -> Error {
    Error::concat(&[
        b"NOGROUP No such consumer group '",
        printf_s(group, usize::MAX),
        b"' for key name '",
        printf_s(key, usize::MAX),
        b"'",
    ])
}

/// CREATE's and SETID's ID argument: `$` (the stream's last ID) or an ID,
/// parsed once the stream is known.
enum GroupStart<'a> {
    Last,
    Id(&'a [u8]),
}

/// XGROUP's arguments after the group name.
struct GroupArgs<'a> {
    /// CREATE's and SETID's.
    start: Option<GroupStart<'a>>,
    mkstream: bool,
    entries_read: Option<i64>,
}

/// xgroupCommand's option loop, for `create` or `setid`; the other
/// subcommands' fixed arities leave them no options.
fn parse_group_args<'a>(
    args: &[&'a [u8]],
    create: bool,
    setid: bool,
) -> Result<GroupArgs<'a>, Error> {
    let mut g = GroupArgs {
        start: None,
        mkstream: false,
        entries_read: None,
    };
    if !(create || setid) {
        return Ok(g);
    }
    let mut a = Args::new(&args[4..]);
    g.start = Some(if take_symbol(&mut a, "$") {
        GroupStart::Last
    } else {
        GroupStart::Id(a.next_arg()?)
    });
    while !a.is_empty() {
        if create && a.flag("MKSTREAM") {
            g.mkstream = true;
        } else if let Some(v) = a.option("ENTRIESREAD") {
            let v = arg_i64(v)?;
            if v < 0 && v != -1 {
                return Err(Error::err("value for ENTRIESREAD must be positive or -1"));
            }
            g.entries_read = (v >= 0).then_some(v);
        } else {
            return Err(super::help::subcommand_syntax_error(args, "XGROUP"));
        }
    }
    Ok(g)
}

/// XGROUP CREATE / SETID / DESTROY / CREATECONSUMER / DELCONSUMER
/// (xgroupCommand, whose checks come in this order for all of them).
fn xgroup_generic(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    let create = is("create");
    let setid = is("setid");
    let GroupArgs {
        start,
        mkstream,
        entries_read,
    } = parse_group_args(args, create, setid)?;
    let exists = as_stream(ctx.lookup_write(args[2]))?.is_some();
    let key = args[2];
    let group = args[3];
    if !mkstream {
        if !exists {
            return Err(Error::err(
                "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
            ));
        }
        let s = as_stream(ctx.lookup_write(key))?.expect("exists");
        if !s.groups.contains_key(group) && (setid || is("createconsumer") || is("delconsumer")) {
            return Err(nogroup_for_key(group, key));
        }
    }
    let n = args.len();
    let now = now(ctx);
    if create && (5..=8).contains(&n) {
        let id = match start.expect("CREATE's ID") {
            GroupStart::Last => match as_stream(ctx.lookup_write(key))? {
                Some(s) => s.entries.last_id,
                None => StreamId::MIN,
            },
            GroupStart::Id(arg) => parse_strict_id(arg, 0)?,
        };
        let created = !exists;
        if created {
            let t = ctx.now_ms;
            let (db, h) = ctx.locate(key);
            db.insert_new(h, key, Value::Stream(Box::default()), t);
        }
        let s = as_stream(ctx.lookup_write(key))?.expect("exists");
        if s.groups.contains_key(group) {
            return Err(Error::constant(
                "BUSYGROUP Consumer Group name already exists",
            ));
        }
        s.groups.insert(
            CompactBytes::from_slice(group),
            ConsumerGroup::new(id, entries_read),
        );
        ctx.out.ok();
        if created {
            // The new stream is a change WATCH sees (one change in all).
            ctx.modified(key);
        } else {
            ctx.add_dirty(1);
        }
        ctx.notify(notify::STREAM, "xgroup-create", key);
    } else if setid && (n == 5 || n == 7) {
        let s = as_stream(ctx.lookup_write(key))?.expect("exists");
        let id = match start.expect("SETID's ID") {
            GroupStart::Last => s.entries.last_id,
            GroupStart::Id(arg) => parse_id(arg, 0)?,
        };
        let g = s.groups.get_mut(group).expect("checked");
        g.last_id = id;
        g.entries_read = entries_read;
        ctx.out.ok();
        ctx.add_dirty(1);
        ctx.notify(notify::STREAM, "xgroup-setid", key);
    } else if is("destroy") && n == 4 {
        let s = as_stream(ctx.lookup_write(key))?.expect("exists");
        if s.groups.remove(group).is_some() {
            ctx.out.int(1);
            ctx.add_dirty(1);
            ctx.notify(notify::STREAM, "xgroup-destroy", key);
            // Its blocked XREADGROUP clients get -NOGROUP.
            ctx.signal_ready(key);
        } else {
            ctx.out.int(0);
        }
    } else if is("createconsumer") && n == 5 {
        let s = as_stream(ctx.lookup_write(key))?.expect("exists");
        let g = s.groups.get_mut(group).expect("checked");
        let created = g.create_consumer(args[4], now);
        if created {
            ctx.add_dirty(1);
            ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
        }
        ctx.out.int(created as i64);
    } else if is("delconsumer") && n == 5 {
        let s = as_stream(ctx.lookup_write(key))?.expect("exists");
        let g = s.groups.get_mut(group).expect("checked");
        let pending = g.delete_consumer(args[4]);
        if pending.is_some() {
            ctx.add_dirty(1);
            ctx.notify(notify::STREAM, "xgroup-delconsumer", key);
        }
        ctx.out.int(pending.unwrap_or(0) as i64);
    } else {
        return Err(super::help::subcommand_syntax_error(args, "XGROUP"));
    }
    Ok(())
}

fn xgroup_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    );
    Ok(())
}

/// XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id]
fn xsetid_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let id = parse_strict_id(args[2], 0)?;
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::MIN;
    let mut a = Args::new(&args[3..]);
    while !a.is_empty() {
        if let Some(v) = a.option("ENTRIESADDED") {
            let v = arg_i64(v)?;
            if v < 0 {
                return Err(Error::err("entries_added must be positive"));
            }
            entries_added = Some(v as u64);
        } else if let Some(v) = a.option("MAXDELETEDID") {
            max_deleted = parse_strict_id(v, 0)?;
            if id < max_deleted {
                return Err(Error::err(
                    "The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
        } else {
            return Err(Error::SYNTAX);
        }
    }
    let key = args[1];
    let Some(s) = as_stream(ctx.lookup_write(key))? else {
        return Err(Error::NO_SUCH_KEY);
    };
    let e = &mut s.entries;
    if e.length > 0 {
        if id < e.last_valid_id() {
            return Err(Error::err(
                "The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added.is_some_and(|n| e.length > n) {
            return Err(Error::err(
                "The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    e.last_id = id;
    if let Some(n) = entries_added {
        e.entries_added = n;
    }
    if !max_deleted.is_zero() {
        e.max_deleted_entry_id = max_deleted;
    }
    ctx.out.ok();
    // A change, but not one WATCH sees: Redis's XSETID does not signal
    // the key as modified.
    ctx.add_dirty(1);
    ctx.notify(notify::STREAM, "xsetid", key);
    Ok(())
}

// ---------------------------------------------------------------------------
// XACK, XPENDING, XCLAIM, XAUTOCLAIM.

fn nogroup(key: &[u8], group: &[u8]) -> Error {
    Error::concat(&[
        b"NOGROUP No such key '",
        printf_s(key, usize::MAX),
        b"' or consumer group '",
        printf_s(group, usize::MAX),
        b"'",
    ])
}

/// XACK key group id...
fn xack_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, group) = (args[1], args[2]);
    let has_group = as_stream(ctx.lookup_read(key))?.is_some_and(|s| s.groups.contains_key(group));
    if !has_group {
        ctx.out.int(0);
        return Ok(());
    }
    let ids = args[3..]
        .iter()
        .map(|a| parse_strict_id(a, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let s = as_stream(ctx.lookup_write(key))?.expect("checked");
    let g = s.groups.get_mut(group).expect("checked");
    let acked = ids.into_iter().filter(|id| g.ack(*id)).count();
    ctx.add_dirty(acked as u64);
    ctx.out.int(acked as i64);
    Ok(())
}

/// XPENDING key group [[IDLE min-idle] start end count [consumer]]
fn xpending_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, group) = (args[1], args[2]);
    let n = args.len();
    let summary = n == 3;
    if n != 3 && !(6..=9).contains(&n) {
        return Err(Error::SYNTAX);
    }
    let mut range = None;
    let mut min_idle: i64 = 0;
    let mut consumer: Option<&[u8]> = None;
    if n >= 6 {
        let mut a = Args::new(&args[3..]);
        if let Some(idle) = a.option("IDLE") {
            min_idle = arg_i64(idle)?;
            if n < 8 {
                return Err(Error::SYNTAX);
            }
        }
        let (start, end, count) = (a.next_arg()?, a.next_arg()?, a.next_arg()?);
        let count = arg_i64(count)?.max(0) as usize;
        let start = interval_start(start)?;
        let end = interval_end(end)?;
        // Whatever follows the consumer is ignored, as in Redis.
        consumer = a.next_arg().ok();
        range = Some((start, end, count));
    }
    let now = now(ctx);
    let (obj, out) = ctx.lookup_read_and_out(key);
    let s = as_stream(obj)?;
    let Some(g) = s.and_then(|s| s.groups.get_mut(group)) else {
        return Err(nogroup(key, group));
    };
    if summary {
        out.array(4);
        out.int(g.pel.len() as i64);
        match (g.pel.keys().next(), g.pel.keys().next_back()) {
            (Some(first), Some(last)) => {
                reply_id(out, *first);
                reply_id(out, *last);
                let owners: Vec<(&CompactBytes, usize)> = g
                    .consumers
                    .iter()
                    .filter(|(_, c)| !c.pel.is_empty())
                    .map(|(name, c)| (name, c.pel.len()))
                    .collect();
                out.array(owners.len());
                for (name, pending) in owners {
                    out.array(2);
                    out.bulk(name);
                    out.bulk_i64(pending as i64);
                }
            }
            _ => {
                out.null();
                out.null();
                out.null_array();
            }
        }
        return Ok(());
    }
    let (start, end, mut count) = range.expect("extended form");
    // The consumer's own PEL, or the group's, walked until `count` entries
    // were given (entries filtered out by IDLE do not count).
    let ids: Box<dyn Iterator<Item = StreamId> + '_> = match consumer {
        Some(name) => match g.consumers.get(name) {
            Some(c) => Box::new(c.pel.range(start..).copied()),
            None => {
                out.array(0);
                return Ok(());
            }
        },
        None => Box::new(g.pel.range(start..).map(|(id, _)| *id)),
    };
    let d = out.begin_deferred();
    let mut emitted = 0;
    for id in ids {
        if count == 0 || id > end {
            break;
        }
        let Some(nack) = g.pel.get(&id) else { continue };
        if min_idle != 0 && now.saturating_sub(nack.delivery_time) < min_idle {
            continue;
        }
        emitted += 1;
        count -= 1;
        out.array(4);
        reply_id(out, id);
        out.bulk(&nack.consumer);
        out.int(now.saturating_sub(nack.delivery_time).max(0));
        out.int(nack.delivery_count as i64);
    }
    out.end_array(d, emitted);
    Ok(())
}

/// XCLAIM's options.
struct ClaimOptions {
    force: bool,
    justid: bool,
    /// The delivery time IDLE or TIME give the claimed entries, else now.
    delivery_time: i64,
    retry_count: Option<i64>,
    last_id: StreamId,
}

/// XCLAIM's options, the rest of `args`; `now` is the time IDLE counts
/// back from.
fn parse_claim_options(args: &mut Args, now: i64) -> Result<ClaimOptions, Error> {
    let mut o = ClaimOptions {
        force: false,
        justid: false,
        delivery_time: now,
        retry_count: None,
        last_id: StreamId::MIN,
    };
    let mut delivery_time: Option<i64> = None;
    while !args.is_empty() {
        if args.flag("FORCE") {
            o.force = true;
        } else if args.flag("JUSTID") {
            o.justid = true;
        } else if let Some(idle) = args.option("IDLE") {
            let idle = parse_i64(idle)
                .ok_or_else(|| Error::err("Invalid IDLE option argument for XCLAIM"))?;
            delivery_time = Some(now.wrapping_sub(idle));
        } else if let Some(time) = args.option("TIME") {
            delivery_time = Some(
                parse_i64(time)
                    .ok_or_else(|| Error::err("Invalid TIME option argument for XCLAIM"))?,
            );
        } else if let Some(count) = args.option("RETRYCOUNT") {
            o.retry_count = Some(
                parse_i64(count)
                    .ok_or_else(|| Error::err("Invalid RETRYCOUNT option argument for XCLAIM"))?,
            );
        } else if let Some(id) = args.option("LASTID") {
            o.last_id = parse_strict_id(id, 0)?;
        } else {
            return Err(Error::concat(&[
                b"ERR Unrecognized XCLAIM option '",
                printf_s(args.next_arg()?, usize::MAX),
                b"'",
            ]));
        }
    }
    // A delivery time in the future or before the epoch is taken as now:
    // clients compute idle times from their own clocks.
    if let Some(t) = delivery_time.filter(|t| *t >= 0 && *t <= now) {
        o.delivery_time = t;
    }
    Ok(o)
}

/// XCLAIM key group consumer min-idle-time id... [IDLE ms] [TIME ms]
/// [RETRYCOUNT n] [FORCE] [JUSTID] [LASTID id]
fn xclaim_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.propagate_nothing();
    let (key, group, consumer) = (args[1], args[2], args[3]);
    let has_group = as_stream(ctx.lookup_read(key))?.is_some_and(|s| s.groups.contains_key(group));
    if !has_group {
        return Err(nogroup(key, group));
    }
    let min_idle = parse_i64(args[4])
        .ok_or_else(|| Error::err("Invalid min-idle-time argument for XCLAIM"))?
        .max(0);
    // IDs until one does not parse; options from there.
    let mut a = Args::new(&args[5..]);
    let mut ids: Vec<(StreamId, &[u8])> = Vec::new();
    while let Some(arg) = a.peek() {
        let Ok(id) = parse_strict_id(arg, 0) else {
            break;
        };
        ids.push((id, arg));
        a.next_arg()?;
    }
    let now = now(ctx);
    let ClaimOptions {
        force,
        justid,
        delivery_time,
        retry_count,
        last_id,
    } = parse_claim_options(&mut a, now)?;

    let mut log: Propagated = Vec::new();
    let mut dirty = 0u64;
    let (obj, out) = ctx.lookup_write_and_out(key);
    let s = as_stream(obj)?.expect("checked");
    let Stream { entries, groups } = s;
    let g = groups.get_mut(group).expect("checked");
    let mut propagate_last_id = false;
    if last_id > g.last_id {
        g.last_id = last_id;
        propagate_last_id = true;
    }
    let d = out.begin_deferred();
    let mut claimed = 0;
    let mut consumer_ready = false;
    let mut new_consumer = false;
    for (id, id_arg) in ids {
        let pending = g.pel.get(&id).map(|n| n.delivery_time);
        if !entries.contains(id) {
            // The entry is gone: its NACK goes too, and so on replay.
            if pending.is_some() {
                log.push(xclaim_record(key, group, g, id_arg, id));
                propagate_last_id = false;
                dirty += 1;
                g.ack(id);
            }
            continue;
        }
        let fresh = match pending {
            None if force => true,
            None => continue,
            Some(t) => {
                if min_idle != 0 && now.saturating_sub(t) < min_idle {
                    continue;
                }
                false
            }
        };
        if !consumer_ready {
            if g.lookup_consumer(consumer, Some(now)).is_none() {
                g.create_consumer(consumer, now);
                new_consumer = true;
                dirty += 1;
            }
            consumer_ready = true;
        }
        let nack = if fresh {
            g.add_pending(id, consumer, now)
        } else {
            g.claim(id, consumer).expect("pending")
        };
        nack.delivery_time = delivery_time;
        match retry_count {
            Some(n) if n >= 0 => nack.delivery_count = n as u64,
            _ if !justid => nack.delivery_count = nack.delivery_count.wrapping_add(1),
            _ => {}
        }
        if justid {
            reply_id(out, id);
        } else if let Some(e) = entries.range(Some(id), Some(id), false).next() {
            reply_entry(out, &e);
        }
        claimed += 1;
        log.push(xclaim_record(key, group, g, id_arg, id));
        propagate_last_id = false;
        dirty += 1;
    }
    if propagate_last_id {
        log.push(setid_record(key, group, g));
        dirty += 1;
    }
    out.end_array(d, claimed);
    ctx.add_dirty(dirty);
    if new_consumer {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    log_all(ctx, log);
    Ok(())
}

/// XAUTOCLAIM's transient list of deleted IDs would need COUNT * 16 bytes
/// in Redis, which fails to allocate past what the machine can give; Goblin
/// allocates as it goes and refuses counts that would need more than this.
const AUTOCLAIM_MAX_TRANSIENT: u128 = 1 << 36;

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT n] [JUSTID]
fn xautoclaim_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.propagate_nothing();
    let (key, group, consumer) = (args[1], args[2], args[3]);
    let min_idle = parse_i64(args[4])
        .ok_or_else(|| Error::err("Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0);
    let start = interval_start(args[5])?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut a = Args::new(&args[6..]);
    while !a.is_empty() {
        if let Some(n) = a.option("COUNT") {
            // LONG_MAX / max(sizeof(streamID), attempts_factor).
            let max = i64::MAX / 16;
            count = parse_i64(n)
                .filter(|c| (1..=max).contains(c))
                .ok_or_else(|| Error::err("COUNT must be > 0"))?;
        } else if a.flag("JUSTID") {
            justid = true;
        } else {
            return Err(Error::SYNTAX);
        }
    }
    let has_group = as_stream(ctx.lookup_read(key))?.is_some_and(|s| s.groups.contains_key(group));
    if !has_group {
        return Err(nogroup(key, group));
    }
    if count as u128 * 16 > AUTOCLAIM_MAX_TRANSIENT {
        return Err(Error::err(
            "Insufficient memory, failed allocating transient memory, COUNT too high.",
        ));
    }
    let now = now(ctx);
    let mut log: Propagated = Vec::new();
    let mut dirty = 0u64;
    let (obj, out) = ctx.lookup_write_and_out(key);
    let s = as_stream(obj)?.expect("checked");
    let Stream { entries, groups } = s;
    let g = groups.get_mut(group).expect("checked");

    // The claimed entries go to a side buffer: the cursor, known last,
    // comes first in the reply.
    let mut list = ReplyWriter::new(out.resp());
    let mut attempts = count.saturating_mul(10);
    let mut after = std::ops::Bound::Included(start);
    let mut claimed = 0;
    let mut deleted: Vec<StreamId> = Vec::new();
    let mut consumer_ready = false;
    let mut new_consumer = false;
    let next_pending = |g: &ConsumerGroup, after| {
        g.pel
            .range((after, std::ops::Bound::Unbounded))
            .next()
            .map(|(id, n): (&StreamId, &crate::keyspace::stream::Nack)| (*id, n.delivery_time))
    };
    loop {
        // Redis's `attempts-- && count && raxNext(&ri)`.
        if attempts == 0 {
            break;
        }
        attempts -= 1;
        if count == 0 {
            break;
        }
        let Some((id, time)) = next_pending(g, after) else {
            break;
        };
        after = std::ops::Bound::Excluded(id);
        if !entries.contains(id) {
            // The entry is gone: its NACK goes too, and so on replay.
            log.push(xclaim_record(key, group, g, &id.to_bytes(), id));
            dirty += 1;
            g.ack(id);
            deleted.push(id);
            count -= 1;
            continue;
        }
        if min_idle != 0 && now.saturating_sub(time) < min_idle {
            continue;
        }
        if !consumer_ready {
            if g.lookup_consumer(consumer, Some(now)).is_none() {
                g.create_consumer(consumer, now);
                new_consumer = true;
                dirty += 1;
            }
            consumer_ready = true;
        }
        let nack = g.claim(id, consumer).expect("pending");
        nack.delivery_time = now;
        if !justid {
            nack.delivery_count = nack.delivery_count.wrapping_add(1);
        }
        if justid {
            reply_id(&mut list, id);
        } else if let Some(e) = entries.range(Some(id), Some(id), false).next() {
            reply_entry(&mut list, &e);
        }
        claimed += 1;
        count -= 1;
        log.push(xclaim_record(key, group, g, &id.to_bytes(), id));
        dirty += 1;
    }
    // The next pending entry is the cursor of the next call.
    let cursor = next_pending(g, after).map_or(StreamId::MIN, |(id, _)| id);
    out.array(3);
    reply_id(out, cursor);
    out.array(claimed);
    out.raw(&list.buf);
    out.array(deleted.len());
    for id in deleted {
        reply_id(out, id);
    }
    ctx.add_dirty(dirty);
    if new_consumer {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    log_all(ctx, log);
    Ok(())
}

// ---------------------------------------------------------------------------
// XINFO.

/// XINFO STREAM key [FULL [COUNT n]] (xinfoReplyWithStreamInfo).
fn xinfo_stream(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (obj, out) = ctx.lookup_read_and_out(args[2]);
    let Some(s) = as_stream(obj)? else {
        return Err(Error::NO_SUCH_KEY);
    };
    // FULL [COUNT n], all checked before the count is parsed.
    let mut a = Args::new(&args[3..]);
    let full = a.flag("FULL");
    let count = if full { a.option("COUNT") } else { None };
    if !a.is_empty() {
        return Err(super::help::subcommand_syntax_error(args, "XINFO"));
    }
    let count = match count {
        Some(n) => arg_i64(n)?,
        None => 10,
    };
    let count = if count < 0 { 10 } else { count as usize };
    let e = &s.entries;
    out.map(if full { 9 } else { 10 });
    out.bulk_str("length");
    out.int(e.length as i64);
    out.bulk_str("radix-tree-keys");
    out.int(e.node_count() as i64);
    out.bulk_str("radix-tree-nodes");
    out.int(e.radix_tree_nodes() as i64);
    out.bulk_str("last-generated-id");
    reply_id(out, e.last_id);
    out.bulk_str("max-deleted-entry-id");
    reply_id(out, e.max_deleted_entry_id);
    out.bulk_str("entries-added");
    out.int(e.entries_added as i64);
    out.bulk_str("recorded-first-entry-id");
    reply_id(out, e.first_id);
    if !full {
        out.bulk_str("groups");
        out.int(s.groups.len() as i64);
        out.bulk_str("first-entry");
        if reply_range(out, s, None, None, 1, false, true) == 0 {
            out.null();
        }
        out.bulk_str("last-entry");
        if reply_range(out, s, None, None, 1, true, true) == 0 {
            out.null();
        }
        return Ok(());
    }
    out.bulk_str("entries");
    reply_range(out, s, None, None, count, false, false);
    out.bulk_str("groups");
    out.array(s.groups.len());
    let limit = |n: usize| if count == 0 { n } else { n.min(count) };
    for (name, g) in &s.groups {
        out.map(7);
        out.bulk_str("name");
        out.bulk(name);
        out.bulk_str("last-delivered-id");
        reply_id(out, g.last_id);
        out.bulk_str("entries-read");
        match g.entries_read {
            Some(n) => out.int(n),
            None => out.null(),
        }
        out.bulk_str("lag");
        reply_lag(out, s, g);
        out.bulk_str("pel-count");
        out.int(g.pel.len() as i64);
        out.bulk_str("pending");
        out.array(limit(g.pel.len()));
        for (id, nack) in g.pel.iter().take(limit(g.pel.len())) {
            out.array(4);
            reply_id(out, *id);
            out.bulk(&nack.consumer);
            out.int(nack.delivery_time);
            out.int(nack.delivery_count as i64);
        }
        out.bulk_str("consumers");
        out.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            out.map(4);
            out.bulk_str("name");
            out.bulk(cname);
            out.bulk_str("seen-time");
            out.int(c.seen_time);
            out.bulk_str("pel-count");
            out.int(c.pel.len() as i64);
            out.bulk_str("pending");
            out.array(limit(c.pel.len()));
            for id in c.pel.iter().take(limit(c.pel.len())) {
                let (time, deliveries) = g
                    .pel
                    .get(id)
                    .map_or((0, 0), |n| (n.delivery_time, n.delivery_count));
                out.array(3);
                reply_id(out, *id);
                out.int(time);
                out.int(deliveries as i64);
            }
        }
    }
    Ok(())
}

/// XINFO GROUPS key
fn xinfo_groups(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (obj, out) = ctx.lookup_read_and_out(args[2]);
    let Some(s) = as_stream(obj)? else {
        return Err(Error::NO_SUCH_KEY);
    };
    out.array(s.groups.len());
    for (name, g) in &s.groups {
        out.map(6);
        out.bulk_str("name");
        out.bulk(name);
        out.bulk_str("consumers");
        out.int(g.consumers.len() as i64);
        out.bulk_str("pending");
        out.int(g.pel.len() as i64);
        out.bulk_str("last-delivered-id");
        reply_id(out, g.last_id);
        out.bulk_str("entries-read");
        match g.entries_read {
            Some(n) => out.int(n),
            None => out.null(),
        }
        out.bulk_str("lag");
        reply_lag(out, s, g);
    }
    Ok(())
}

/// XINFO CONSUMERS key group
fn xinfo_consumers(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, group) = (args[2], args[3]);
    let now = now(ctx);
    let (obj, out) = ctx.lookup_read_and_out(key);
    let Some(s) = as_stream(obj)? else {
        return Err(Error::NO_SUCH_KEY);
    };
    let Some(g) = s.groups.get(group) else {
        return Err(nogroup_for_key(group, key));
    };
    out.array(g.consumers.len());
    for (name, c) in &g.consumers {
        out.map(3);
        out.bulk_str("name");
        out.bulk(name);
        out.bulk_str("pending");
        out.int(c.pel.len() as i64);
        out.bulk_str("idle");
        out.int(now.saturating_sub(c.seen_time).max(0));
    }
    Ok(())
}

fn xinfo_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "XINFO",
        &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// The table.

const KEY_RO: &[KeySpec] = &[KeySpec::at(1, kflag::RO)];
const KEY_RO_ACCESS: &[KeySpec] = &[KeySpec::at(1, kflag::RO | kflag::ACCESS)];
const KEY_UPDATE: &[KeySpec] = &[KeySpec::at(1, kflag::RW | kflag::UPDATE)];
const KEY_DELETE: &[KeySpec] = &[KeySpec::at(1, kflag::RW | kflag::DELETE)];
const SUB_KEY_RO_ACCESS: &[KeySpec] = &[KeySpec::at(2, kflag::RO | kflag::ACCESS)];
const SUB_KEY_INSERT: &[KeySpec] = &[KeySpec::at(2, kflag::RW | kflag::INSERT)];
const SUB_KEY_UPDATE: &[KeySpec] = &[KeySpec::at(2, kflag::RW | kflag::UPDATE)];
const SUB_KEY_DELETE: &[KeySpec] = &[KeySpec::at(2, kflag::RW | kflag::DELETE)];

/// The keys after STREAMS: the first half of what follows it.
const fn after_streams(start_from: i32) -> KeySpec {
    KeySpec {
        flags: kflag::RO | kflag::ACCESS,
        begin: BeginSearch::Keyword {
            keyword: "STREAMS",
            start_from,
        },
        find: FindKeys::Range {
            lastkey: -1,
            step: 1,
            limit: 2,
        },
    }
}

static XGROUP_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "create",
        arity: -5,
        flags: flag::WRITE | flag::DENYOOM,
        keys: SUB_KEY_INSERT,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Create a consumer group.",
        complexity: "O(1)",
        history: &[("7.0.0", "Added the `entries_read` named argument.")],
        syntax: "key:key groupname:string id:oneof(id:string|${name:new_id}) [MKSTREAM] [ENTRIESREAD entries_read:integer]",
        handler: xgroup_generic,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "createconsumer",
        arity: 5,
        flags: flag::WRITE | flag::DENYOOM,
        keys: SUB_KEY_INSERT,
        group: Group::Stream,
        since: "6.2.0",
        summary: "Create a consumer in a consumer group.",
        complexity: "O(1)",
        syntax: "key:key groupname:string consumername:string",
        handler: xgroup_generic,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "delconsumer",
        arity: 5,
        flags: flag::WRITE,
        keys: SUB_KEY_DELETE,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Delete a consumer from a consumer group.",
        complexity: "O(1)",
        syntax: "key:key groupname:string consumername:string",
        handler: xgroup_generic,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "destroy",
        arity: 4,
        flags: flag::WRITE,
        keys: SUB_KEY_DELETE,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Destroy a consumer group.",
        complexity: "O(N) where N is the number of entries in the group's pending entries list (PEL).",
        syntax: "key:key groupname:string",
        handler: xgroup_generic,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: xgroup_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "setid",
        arity: -5,
        flags: flag::WRITE,
        keys: SUB_KEY_UPDATE,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Set a consumer group to an arbitrary last delivered ID value.",
        complexity: "O(1)",
        history: &[("7.0.0", "Added the optional `entries_read` argument.")],
        syntax: "key:key groupname:string id:oneof(id:string|${name:new_id}) [ENTRIESREAD entries_read:integer]",
        handler: xgroup_generic,
        ..CommandSpec::DEFAULT
    },
];

static XINFO_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "consumers",
        arity: 4,
        flags: flag::READONLY,
        keys: SUB_KEY_RO_ACCESS,
        group: Group::Stream,
        since: "5.0.0",
        summary: "List the consumers in a consumer group",
        complexity: "O(1)",
        syntax: "key:key groupname:string",
        tips: &["nondeterministic_output"],
        handler: xinfo_consumers,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "groups",
        arity: 3,
        flags: flag::READONLY,
        keys: SUB_KEY_RO_ACCESS,
        group: Group::Stream,
        since: "5.0.0",
        summary: "List the consumer groups of a stream",
        complexity: "O(1)",
        history: &[("7.0.0", "Added the `entries-read` and `lag` fields")],
        syntax: "key:key",
        handler: xinfo_groups,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: xinfo_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "stream",
        arity: -3,
        flags: flag::READONLY,
        keys: SUB_KEY_RO_ACCESS,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Get information about a stream",
        complexity: "O(1)",
        history: &[("6.0.0", "Added the `FULL` modifier."), ("7.0.0", "Added the `max-deleted-entry-id`, `entries-added`, `recorded-first-entry-id`, `entries-read` and `lag` fields")],
        syntax: "key:key [FULL full:block([COUNT count:integer])]",
        handler: xinfo_stream,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "xadd",
        arity: -5,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: KEY_UPDATE,
        key_spec_notes: &[(0, "UPDATE instead of INSERT because of the optional trimming feature")],
        group: Group::Stream,
        since: "5.0.0",
        summary: "Appends a new entry to a stream",
        complexity: "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
        history: &[("6.2.0", "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the `LIMIT` option."), ("7.0.0", "Added support for the `<ms>-*` explicit ID form.")],
        syntax: "key:key [NOMKSTREAM]{since:6.2.0} [trim:block(strategy:oneof(MAXLEN|MINID{since:6.2.0}) [operator:oneof(={name:equal}|~{name:approximately})] threshold:string [LIMIT count:integer]{since:6.2.0})] id_or_auto:oneof(*{name:auto_id}|id:string) field_value:block(field:string value:string)...",
        tips: &["nondeterministic_output"],
        handler: xadd_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xtrim",
        arity: -4,
        flags: flag::WRITE,
        keys: KEY_DELETE,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Trims the stream to (approximately if '~' is passed) a certain size",
        complexity: "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
        history: &[("6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option.")],
        syntax: "key:key trim:block(strategy:oneof(MAXLEN|MINID{since:6.2.0}) [operator:oneof(={name:equal}|~{name:approximately})] threshold:string [LIMIT count:integer]{since:6.2.0})",
        tips: &["nondeterministic_output"],
        handler: xtrim_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xlen",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: KEY_RO,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Return the number of entries in a stream",
        complexity: "O(1)",
        syntax: "key:key",
        handler: xlen_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xrange",
        arity: -4,
        flags: flag::READONLY,
        keys: KEY_RO_ACCESS,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval",
        complexity: "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        history: &[("6.2.0", "Added exclusive ranges.")],
        syntax: "key:key start:string end:string [COUNT count:integer]",
        handler: xrange_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xrevrange",
        arity: -4,
        flags: flag::READONLY,
        keys: KEY_RO_ACCESS,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE",
        complexity: "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        history: &[("6.2.0", "Added exclusive ranges.")],
        syntax: "key:key end:string start:string [COUNT count:integer]",
        handler: xrevrange_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xdel",
        arity: -3,
        flags: flag::WRITE | flag::FAST,
        keys: KEY_DELETE,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.",
        complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.",
        syntax: "key:key id:string...",
        handler: xdel_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xread",
        arity: -4,
        flags: flag::READONLY | flag::BLOCKING,
        keys: &[after_streams(1)],
        keys_fn: Some(xread_keys),
        group: Group::Stream,
        since: "5.0.0",
        summary: "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.",
        complexity: "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
        syntax: "[COUNT count:integer] [BLOCK milliseconds:integer] STREAMS streams:block(key:key... id:string...)",
        handler: xread_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xreadgroup",
        arity: -7,
        flags: flag::WRITE | flag::BLOCKING,
        keys: &[after_streams(4)],
        keys_fn: Some(xread_keys),
        group: Group::Stream,
        since: "5.0.0",
        summary: "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.",
        complexity: "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
        syntax: "GROUP group_consumer:block(group:string consumer:string) [COUNT count:integer] [BLOCK milliseconds:integer] [NOACK] STREAMS streams:block(key:key... id:string...)",
        handler: xreadgroup_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xgroup",
        arity: -2,
        group: Group::Stream,
        subcommands: XGROUP_SUBCOMMANDS,
        since: "5.0.0",
        summary: "A container for consumer groups commands",
        complexity: "Depends on subcommand.",
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xsetid",
        arity: -3,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: KEY_UPDATE,
        group: Group::Stream,
        since: "5.0.0",
        summary: "An internal command for replicating stream values",
        complexity: "O(1)",
        history: &[("7.0.0", "Added the `entries_added` and `max_deleted_entry_id` arguments.")],
        syntax: "key:key last-id:string [ENTRIESADDED entries_added:integer]{since:7.0.0} [MAXDELETEDID max_deleted_entry_id:string]{since:7.0.0}",
        handler: xsetid_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xack",
        arity: -4,
        flags: flag::WRITE | flag::FAST,
        keys: KEY_UPDATE,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.",
        complexity: "O(1) for each message ID processed.",
        syntax: "key:key group:string id:string...",
        handler: xack_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xpending",
        arity: -3,
        flags: flag::READONLY,
        keys: KEY_RO_ACCESS,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.",
        complexity: "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
        history: &[("6.2.0", "Added the `IDLE` option and exclusive range intervals.")],
        syntax: "key:key group:string [filters:block([IDLE min-idle-time:integer]{since:6.2.0} start:string end:string count:integer [consumer:string])]",
        tips: &["nondeterministic_output"],
        handler: xpending_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xclaim",
        arity: -6,
        flags: flag::WRITE | flag::FAST,
        keys: KEY_UPDATE,
        group: Group::Stream,
        since: "5.0.0",
        summary: "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.",
        complexity: "O(log N) with N being the number of messages in the PEL of the consumer group.",
        syntax: "key:key group:string consumer:string min-idle-time:string id:string... [IDLE ms:integer] [TIME unix-time-milliseconds:unix-time] [RETRYCOUNT count:integer] [FORCE] [JUSTID] [LASTID id:string]",
        tips: &["nondeterministic_output"],
        handler: xclaim_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xautoclaim",
        arity: -6,
        flags: flag::WRITE | flag::FAST,
        keys: KEY_DELETE,
        group: Group::Stream,
        since: "6.2.0",
        summary: "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.",
        complexity: "O(1) if COUNT is small.",
        history: &[("7.0.0", "Added an element to the reply array, containing deleted entries the command cleared from the PEL")],
        syntax: "key:key group:string consumer:string min-idle-time:string start:string [COUNT count:integer] [JUSTID]",
        tips: &["nondeterministic_output"],
        handler: xautoclaim_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "xinfo",
        arity: -2,
        group: Group::Stream,
        subcommands: XINFO_SUBCOMMANDS,
        since: "5.0.0",
        summary: "A container for stream introspection commands",
        complexity: "Depends on subcommand.",
        ..CommandSpec::DEFAULT
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis_does() {
        let ok = |s: &[u8]| parse_id(s, 7).unwrap();
        assert_eq!(ok(b"5"), StreamId::new(5, 7));
        assert_eq!(ok(b"5-3"), StreamId::new(5, 3));
        assert_eq!(ok(b"-"), StreamId::MIN);
        assert_eq!(ok(b"+"), StreamId::MAX);
        // strtoull's leniency: leading zeros, white space, a sign, and a
        // negated magnitude taken modulo 2^64.
        assert_eq!(ok(b"007-01"), StreamId::new(7, 1));
        assert_eq!(ok(b" 5-+2"), StreamId::new(5, 2));
        assert_eq!(
            ok(b"18446744073709551615-18446744073709551615"),
            StreamId::MAX
        );
        // C sees the argument up to its first NUL.
        assert_eq!(ok(b"9\0junk"), StreamId::new(9, 7));
        for bad in [
            &b"x"[..],
            b"",
            b"5-",
            b"-5",
            b"-0",
            b"5--3",
            b"5-x",
            b"18446744073709551616",
        ] {
            assert_eq!(parse_id(bad, 0), Err(INVALID_ID), "{bad:?}");
        }
        assert_eq!(parse_strict_id(b"-", 0), Err(INVALID_ID));
        assert_eq!(parse_strict_id(b"+", 0), Err(INVALID_ID));
        assert_eq!(
            parse_id_full(b"5-*", 0, true, true),
            Ok((StreamId::new(5, 0), false))
        );
        assert_eq!(parse_id(b"5-*", 0), Err(INVALID_ID));
        assert_eq!(parse_id(&[b'1'; 128], 0), Err(INVALID_ID));
    }

    #[test]
    fn read_keys_follow_streams() {
        let argv: Vec<&[u8]> = vec![
            b"XREADGROUP",
            b"GROUP",
            b"streams",
            b"c",
            b"COUNT",
            b"1",
            b"STREAMS",
            b"a",
            b"b",
            b">",
            b">",
        ];
        // XREADGROUP moves the group's cursor: read-write.
        let rw = kflag::RW | kflag::ACCESS;
        assert_eq!(xread_keys(&argv), vec![(7, rw), (8, rw)]);
        // Arguments the command refuses: the key spec's keys, as Redis's
        // COMMAND GETKEYS reports them.
        let argv: Vec<&[u8]> = vec![b"XREAD", b"STREAMS", b"a", b"0", b"b"];
        assert_eq!(xread_keys(&argv), vec![(2, kflag::RO | kflag::ACCESS)]);
        let argv: Vec<&[u8]> = vec![b"XREAD", b"BLOCK"];
        assert!(xread_keys(&argv).is_empty());
        let argv: Vec<&[u8]> = vec![b"XREAD", b"COUNT", b"1", b"STREAMS"];
        assert!(xread_keys(&argv).is_empty());
    }

    /// The options are read as Redis reads them, each error in Redis's
    /// order (the answers are Redis 7.0.15's).
    #[test]
    fn options_parse_as_redis_does() {
        use crate::test_support::{run, run_args, session};
        let mut s = session();
        let syntax = "-ERR syntax error\r\n";
        let not_integer = "-ERR value is not an integer or out of range\r\n";
        let invalid_id = "-ERR Invalid stream ID specified as stream command argument\r\n";
        run(&mut s, "XADD s 1-1 f v");
        // `*`, `~` and `=` are compared as C strings: a NUL ends them.
        let reply = run_args(&mut s, &[b"XADD", b"s", b"*\0x", b"f", b"v"]);
        assert!(reply.starts_with('$'), "{reply}");
        let reply = run_args(
            &mut s,
            &[b"XADD", b"s", b"MAXLEN", b"~\0", b"5", b"*", b"f", b"v"],
        );
        assert!(reply.starts_with('$'), "{reply}");
        // `~` is the operator only when a threshold follows it.
        assert_eq!(run(&mut s, "XADD s MAXLEN ~ * f v"), not_integer);
        assert_eq!(run(&mut s, "XADD s LIMIT f v"), not_integer);
        assert_eq!(run(&mut s, "XADD s LIMITS f v"), invalid_id);
        assert_eq!(
            run(&mut s, "XADD s MAXLEN 1 MINID 1 * f v"),
            "-ERR syntax error, MAXLEN and MINID options at the same time are not compatible\r\n"
        );
        assert_eq!(run(&mut s, "XTRIM s NOMKSTREAM MAXLEN 1"), syntax);
        assert_eq!(run(&mut s, "XTRIM s * 1"), syntax);
        // XREAD names XREADGROUP's options; GROUP needs its two values.
        assert_eq!(
            run(&mut s, "XREAD GROUP g c STREAMS s 0"),
            "-ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.\r\n"
        );
        assert_eq!(run(&mut s, "XREAD COUNT 1 GROUP g"), syntax);
        assert_eq!(
            run(&mut s, "XREAD NOACK STREAMS s 0"),
            "-ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.\r\n"
        );
        assert_eq!(run(&mut s, "XREAD COUNT 1 STREAMS"), syntax);
        // XGROUP's `$`, and its options before the key's checks.
        run(&mut s, "XGROUP CREATE s g $");
        assert_eq!(
            run_args(&mut s, &[b"XGROUP", b"SETID", b"s", b"g", b"$\0"]),
            "+OK\r\n"
        );
        assert_eq!(
            run(&mut s, "XGROUP SETID nokey g 1-1 ENTRIESREAD x"),
            not_integer
        );
        assert_eq!(
            run(&mut s, "XGROUP SETID s g $ MKSTREAM"),
            "-ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP.\r\n"
        );
        // XPENDING ignores what follows the consumer.
        assert_eq!(run(&mut s, "XPENDING s g - + 10 c x y"), "*0\r\n");
        assert_eq!(run(&mut s, "XPENDING s g IDLE 10 - +"), syntax);
        // XCLAIM's IDs end where one does not parse.
        assert_eq!(
            run(&mut s, "XCLAIM s g c 0 1-1 x 2-1"),
            "-ERR Unrecognized XCLAIM option 'x'\r\n"
        );
        // XINFO STREAM checks FULL [COUNT n] before parsing the count.
        let xinfo_syntax = "-ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.\r\n";
        assert_eq!(run(&mut s, "XINFO STREAM s FULL COUNT x y"), xinfo_syntax);
        assert_eq!(run(&mut s, "XINFO STREAM s COUNT 1"), xinfo_syntax);
        assert_eq!(run(&mut s, "XINFO STREAM s FULL COUNT x"), not_integer);
    }
}
