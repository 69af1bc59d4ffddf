//! The list family: pushes and pops at both ends, ranges, indexes, LINSERT,
//! LREM, LTRIM, LPOS, the moves between lists, and the blocking pops
//! (Redis's t_list.c).
//!
//! The value type is `keyspace::List` (a chain of packed nodes, see its
//! overview). Each command parses its arguments, runs an operation on the
//! store, and replies; the operations (`push`, `pop_range`, `move_element`,
//! ...) are public so that other hosts of the same semantics (scripts, the
//! embedded API) call them directly. The blocking commands find their data
//! as their non-blocking twins do and, when there is none, block through
//! `Ctx::block_on` (see `crate::blocking`): when a key becomes ready the
//! same command runs again on the waiter's behalf, restricted to that key.
//!
//! Every change calls `ctx.changed(key, ..)` (WATCH, dirty counter, the
//! keyspace event); every push `ctx.pushed(key, ..)` so that blocked clients are
//! served. A list that loses its last element is deleted.

use crate::blocking::{parse_timeout, BlockRequest};
use crate::command::args::Args;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::list::{End, Fill, List};
use crate::keyspace::{Object, Value, ValueType};
use crate::protocol::ReplyWriter;
use crate::pubsub::notify;
use crate::util::number::{arg_i64, parse_i64};
use crate::Error;
use std::sync::atomic::Ordering;

// ---------------------------------------------------------------------------
// Arguments.

/// LEFT / RIGHT, taken from `args` (Redis's
/// getListPositionFromObjectOrReply): anything else is a syntax error.
pub fn take_end(args: &mut Args) -> Result<End, Error> {
    if args.flag("LEFT") {
        Ok(End::Head)
    } else if args.flag("RIGHT") {
        Ok(End::Tail)
    } else {
        Err(Error::SYNTAX)
    }
}

/// Redis's getRangeLongFromObjectOrReply(..., 1, LONG_MAX, msg).
fn positive_arg(arg: &[u8], msg: &'static str) -> Result<i64, Error> {
    parse_i64(arg)
        .filter(|v| *v >= 1)
        .ok_or_else(|| Error::err(msg))
}

/// Redis's getPositiveLongFromObjectOrReply: 0 or more; `msg` replaces the
/// default error text.
fn non_negative_arg(arg: &[u8], msg: Option<&'static str>) -> Result<i64, Error> {
    parse_i64(arg).filter(|v| *v >= 0).ok_or_else(|| match msg {
        Some(m) => Error::err(m),
        None => Error::NOT_POSITIVE,
    })
}

/// LMPOP / BLMPOP after the numkeys argument at `numkeys_idx`: the keys,
/// the end and the count (1 when not given).
pub struct MpopArgs<'a> {
    pub keys: Vec<&'a [u8]>,
    pub end: End,
    pub count: usize,
}

pub fn parse_mpop<'a>(args: &[&'a [u8]], numkeys_idx: usize) -> Result<MpopArgs<'a>, Error> {
    let numkeys = positive_arg(args[numkeys_idx], "numkeys should be greater than 0")?;
    let where_idx = match (numkeys as u64).checked_add(numkeys_idx as u64 + 1) {
        Some(i) if i < args.len() as u64 => i as usize,
        _ => return Err(Error::SYNTAX),
    };
    let mut a = Args::new(&args[where_idx..]);
    let end = take_end(&mut a)?;
    let mut count: Option<i64> = None;
    while !a.is_empty() {
        // COUNT once: a second one is a syntax error.
        match a.option("COUNT") {
            Some(n) if count.is_none() => {
                count = Some(positive_arg(n, "count should be greater than 0")?)
            }
            _ => return Err(Error::SYNTAX),
        }
    }
    Ok(MpopArgs {
        keys: args[numkeys_idx + 1..where_idx].to_vec(),
        end,
        count: count.unwrap_or(1) as usize,
    })
}

/// LPOS options.
#[derive(Debug, PartialEq, Eq)]
pub struct LposOptions {
    /// 1 = first match; negative = searching from the tail.
    pub rank: i64,
    /// None: COUNT not given (reply one index); Some(0): all matches.
    pub count: Option<usize>,
    /// 0 = scan the whole list.
    pub maxlen: usize,
}

pub fn parse_lpos_options(args: &[&[u8]]) -> Result<LposOptions, Error> {
    let mut o = LposOptions {
        rank: 1,
        count: None,
        maxlen: 0,
    };
    let mut a = Args::new(args);
    while !a.is_empty() {
        if let Some(rank) = a.option("RANK") {
            o.rank = arg_i64(rank)?;
            if o.rank == 0 {
                return Err(Error::err(
                    "RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if let Some(count) = a.option("COUNT") {
            o.count = Some(non_negative_arg(count, Some("COUNT can't be negative"))? as usize);
        } else if let Some(maxlen) = a.option("MAXLEN") {
            o.maxlen = non_negative_arg(maxlen, Some("MAXLEN can't be negative"))? as usize;
        } else {
            return Err(Error::SYNTAX);
        }
    }
    Ok(o)
}

// ---------------------------------------------------------------------------
// Operations.

/// The node bound new elements are packed under (list-max-listpack-size).
pub fn fill(ctx: &Ctx) -> Fill {
    Fill::new(
        ctx.engine
            .config()
            .list_max_listpack_size
            .load(Ordering::Relaxed),
    )
}

fn as_list(obj: &mut Object) -> Result<&mut List, Error> {
    match &mut obj.value {
        Value::List(l) => Ok(l),
        _ => Err(Error::WRONGTYPE),
    }
}

/// The list at `key` for writing; WRONGTYPE for other types.
pub fn write_list<'c>(ctx: &'c mut Ctx, key: &[u8]) -> Result<Option<&'c mut List>, Error> {
    ctx.lookup_write(key).map(as_list).transpose()
}

/// The list at `key` for reading; WRONGTYPE for other types.
pub fn read_list<'c>(ctx: &'c mut Ctx, key: &[u8]) -> Result<Option<&'c mut List>, Error> {
    ctx.lookup_read(key).map(as_list).transpose()
}

/// Deletes the list at `key` if it lost its last element, with its "del"
/// notification.
fn delete_if_empty(ctx: &mut Ctx, key: &[u8]) {
    let now = ctx.now();
    let (db, h) = ctx.locate(key);
    if let Some(Object {
        value: Value::List(l),
        ..
    }) = db.lookup_no_touch(h, key, now)
    {
        if l.is_empty() {
            db.remove(h, key);
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
}

/// The notification of a push to an end.
fn push_event(end: End) -> &'static str {
    match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    }
}

/// The notification of a pop from an end.
fn pop_event(end: End) -> &'static str {
    match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    }
}

/// LPUSH / RPUSH / LPUSHX / RPUSHX: the new length, or None when
/// `only_if_exists` and there is no list (Redis's pushGenericCommand).
pub fn push(
    ctx: &mut Ctx,
    key: &[u8],
    elements: &[&[u8]],
    end: End,
    only_if_exists: bool,
) -> Result<Option<usize>, Error> {
    let fill = fill(ctx);
    let len = match write_list(ctx, key)? {
        Some(list) => {
            for e in elements {
                list.push(e, end, fill);
            }
            list.len()
        }
        None if only_if_exists => return Ok(None),
        None => {
            let mut list = List::new();
            for e in elements {
                list.push(e, end, fill);
            }
            let len = list.len();
            let now = ctx.now_ms;
            let (db, h) = ctx.locate(key);
            db.insert_new(h, key, Value::List(Box::new(list)), now);
            len
        }
    };
    ctx.pushed(key, notify::LIST, push_event(end));
    ctx.add_dirty(elements.len() as u64 - 1);
    Ok(Some(len))
}

/// Writes elements `start..=end` (already clamped, start <= end < len) as
/// an array, tail to head when `reverse` (Redis's addListRangeReply).
fn reply_range(out: &mut ReplyWriter, list: &List, start: usize, end: usize, reverse: bool) {
    let n = end - start + 1;
    out.array(n);
    let from = if reverse { end } else { start };
    for e in list.iter_from(from, reverse).take(n) {
        out.bulk(e);
    }
}

/// Redis's range clamping for LRANGE and LTRIM: Some((start, end)) with
/// 0 <= start <= end < len, or None for an empty range.
pub fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

/// Pops up to `count` elements from one end of the list at `key` and
/// writes them as an array (in popping order); optionally preceded by the
/// key (LMPOP's nested reply). Deletes the list when emptied. The caller
/// checked the key holds a non-empty list.
fn pop_range_reply(ctx: &mut Ctx, key: &[u8], end: End, count: usize, with_key: bool) {
    let (found, out) = ctx.lookup_write_and_out(key);
    let Some(Object {
        value: Value::List(list),
        ..
    }) = found
    else {
        unreachable!("checked by the caller");
    };
    let n = count.min(list.len());
    if with_key {
        out.array(2);
        out.bulk(key);
    }
    let (start, last) = match end {
        End::Head => (0, n - 1),
        End::Tail => (list.len() - n, list.len() - 1),
    };
    reply_range(out, list, start, last, end == End::Tail);
    list.remove_range(start, n);
    // LMPOP and BLMPOP go to the log as the LPOP / RPOP with the count
    // they took (Redis's listPopRangeAndReplyWithKey).
    if with_key {
        let n_text = n.to_string();
        let pop: &[u8] = match end {
            End::Head => b"LPOP",
            End::Tail => b"RPOP",
        };
        ctx.propagate_as(&[pop, key, n_text.as_bytes()]);
    }
    ctx.changed(key, notify::LIST, pop_event(end));
    ctx.add_dirty(n as u64 - 1);
    delete_if_empty(ctx, key);
}

/// Pops one element from an end of the list at `key` and writes it as a
/// bulk reply, with one look-up (LPOP and RPOP are hot). False, with
/// nothing written, when there is no list.
fn pop_one_reply(ctx: &mut Ctx, key: &[u8], end: End) -> Result<bool, Error> {
    let (found, out) = ctx.lookup_write_and_out(key);
    let Some(obj) = found else {
        return Ok(false);
    };
    let list = as_list(obj)?;
    let Some(v) = list.peek(end) else {
        return Ok(false);
    };
    out.bulk(v);
    let start = match end {
        End::Head => 0,
        End::Tail => list.len() - 1,
    };
    list.remove_range(start, 1);
    let emptied = list.is_empty();
    ctx.changed(key, notify::LIST, pop_event(end));
    if emptied {
        let (db, h) = ctx.locate(key);
        db.remove(h, key);
        ctx.notify(notify::GENERIC, "del", key);
    }
    Ok(true)
}

/// Whether `key` holds a list (WRONGTYPE for another type).
fn has_list(ctx: &mut Ctx, key: &[u8]) -> Result<bool, Error> {
    Ok(write_list(ctx, key)?.is_some_and(|l| !l.is_empty()))
}

/// LMOVE semantics (Redis's lmoveGenericCommand): pops from one end of
/// `src`, pushes to one end of `dst`, returns the element; None when `src`
/// does not exist. Errors (WRONGTYPE of either key) change nothing.
pub fn move_element(
    ctx: &mut Ctx,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> Result<Option<Vec<u8>>, Error> {
    if !has_list(ctx, src)? {
        return Ok(None);
    }
    write_list(ctx, dst)?;
    let fill = fill(ctx);
    // Popped without deleting `src` yet: when it is also `dst`, the element
    // goes back into the same list, which then stays.
    let value = write_list(ctx, src)?
        .expect("checked above")
        .pop(from)
        .expect("non-empty list");
    match write_list(ctx, dst)? {
        Some(list) => list.push(&value, to, fill),
        None => {
            let mut list = List::new();
            list.push(&value, to, fill);
            let now = ctx.now_ms;
            let (db, h) = ctx.locate(dst);
            db.insert_new(h, dst, Value::List(Box::new(list)), now);
        }
    }
    // Both keys are signalled, but a move is one change, as Redis counts.
    ctx.as_one_change(|ctx| {
        ctx.pushed(dst, notify::LIST, push_event(to));
        ctx.changed(src, notify::LIST, pop_event(from));
        delete_if_empty(ctx, src);
    });
    Ok(Some(value))
}

// ---------------------------------------------------------------------------
// Commands.

fn push_generic(ctx: &mut Ctx, args: &[&[u8]], end: End, only_if_exists: bool) -> CmdResult {
    let len = push(ctx, args[1], &args[2..], end, only_if_exists)?;
    ctx.out.int(len.unwrap_or(0) as i64);
    Ok(())
}

fn lpush_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Head, false)
}

fn rpush_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Tail, false)
}

fn lpushx_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Head, true)
}

fn rpushx_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Tail, true)
}

/// LINSERT key BEFORE|AFTER pivot element
fn linsert_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut a = Args::new(&args[2..]);
    let after = if a.flag("BEFORE") {
        false
    } else if a.flag("AFTER") {
        true
    } else {
        return Err(Error::SYNTAX);
    };
    let (pivot, element) = (a.next_arg()?, a.next_arg()?);
    a.finish()?;
    let fill = fill(ctx);
    let Some(list) = write_list(ctx, args[1])? else {
        ctx.out.int(0);
        return Ok(());
    };
    let Some(pos) = list.iter().position(|e| e == pivot) else {
        ctx.out.int(-1);
        return Ok(());
    };
    list.insert(pos + after as usize, element, fill);
    let len = list.len();
    ctx.changed(args[1], notify::LIST, "linsert");
    ctx.out.int(len as i64);
    Ok(())
}

fn llen_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let len = read_list(ctx, args[1])?.map_or(0, |l| l.len());
    ctx.out.int(len as i64);
    Ok(())
}

fn lindex_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // The key is looked up before the index is parsed, as in Redis.
    let (found, out) = ctx.lookup_read_and_out(args[1]);
    let Some(obj) = found else {
        out.null();
        return Ok(());
    };
    let list = as_list(obj)?;
    let index = arg_i64(args[2])?;
    match list.resolve_index(index).and_then(|i| list.get(i)) {
        Some(v) => out.bulk(v),
        None => out.null(),
    }
    Ok(())
}

fn lset_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let fill = fill(ctx);
    let Some(list) = write_list(ctx, args[1])? else {
        return Err(Error::NO_SUCH_KEY);
    };
    let index = arg_i64(args[2])?;
    let i = list.resolve_index(index).ok_or(Error::OUT_OF_RANGE)?;
    list.set(i, args[3], fill);
    ctx.changed(args[1], notify::LIST, "lset");
    ctx.out.ok();
    Ok(())
}

fn pop_generic(ctx: &mut Ctx, args: &[&[u8]], end: End) -> CmdResult {
    if args.len() > 3 {
        return Err(Error::arity(ctx.command_name()));
    }
    let count = match args.get(2) {
        Some(a) => Some(non_negative_arg(a, None)? as usize),
        None => None,
    };
    let key = args[1];
    if count.is_none() {
        if !pop_one_reply(ctx, key, end)? {
            ctx.out.null();
        }
        return Ok(());
    }
    if !has_list(ctx, key)? {
        ctx.out.null_array();
        return Ok(());
    }
    match count {
        Some(0) => ctx.out.array(0),
        Some(n) => pop_range_reply(ctx, key, end, n, false),
        None => unreachable!("handled above"),
    }
    Ok(())
}

fn lpop_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pop_generic(ctx, args, End::Head)
}

fn rpop_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    pop_generic(ctx, args, End::Tail)
}

/// LMPOP / non-blocking part of BLMPOP: pops from the first non-empty list
/// among `keys`. False when every list is empty (nothing written).
fn mpop(ctx: &mut Ctx, keys: &[&[u8]], end: End, count: usize) -> Result<bool, Error> {
    for key in keys {
        if has_list(ctx, key)? {
            pop_range_reply(ctx, key, end, count, true);
            return Ok(true);
        }
    }
    Ok(false)
}

fn lmpop_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let a = parse_mpop(args, 1)?;
    if !mpop(ctx, &a.keys, a.end, a.count)? {
        ctx.out.null_array();
    }
    Ok(())
}

fn lrange_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let start = arg_i64(args[2])?;
    let end = arg_i64(args[3])?;
    let (found, out) = ctx.lookup_read_and_out(args[1]);
    let Some(obj) = found else {
        out.array(0);
        return Ok(());
    };
    let list = as_list(obj)?;
    match clamp_range(start, end, list.len()) {
        Some((s, e)) => reply_range(out, list, s, e, false),
        None => out.array(0),
    }
    Ok(())
}

fn ltrim_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let start = arg_i64(args[2])?;
    let end = arg_i64(args[3])?;
    let key = args[1];
    let Some(list) = write_list(ctx, key)? else {
        ctx.out.ok();
        return Ok(());
    };
    let len = list.len();
    let (ltrim, rtrim) = match clamp_range(start, end, len) {
        Some((s, e)) => (s, len - e - 1),
        None => (len, 0),
    };
    list.trim(ltrim, rtrim);
    // Redis signals the key even when nothing was removed.
    ctx.changed(key, notify::LIST, "ltrim");
    // One change per removed element, as Redis counts (changed() counted one).
    ctx.dirty = ctx.dirty + (ltrim + rtrim) as u64 - 1;
    delete_if_empty(ctx, key);
    ctx.out.ok();
    Ok(())
}

fn lpos_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let o = parse_lpos_options(&args[3..])?;
    let element = args[2];
    let (found, out) = ctx.lookup_read_and_out(args[1]);
    let Some(obj) = found else {
        if o.count.is_some() {
            out.array(0);
        } else {
            out.null();
        }
        return Ok(());
    };
    let list = as_list(obj)?;
    // A negative rank searches from the tail. Redis negates it as a C
    // long: i64::MIN stays negative, so every match then qualifies.
    let reverse = o.rank < 0;
    let rank = if reverse {
        o.rank.wrapping_neg()
    } else {
        o.rank
    };
    let len = list.len();
    let start = if reverse { len.saturating_sub(1) } else { 0 };
    let mut matches: i64 = 0;
    let mut found_at: Vec<usize> = Vec::new();
    for (scanned, e) in list.iter_from(start, reverse).enumerate() {
        if o.maxlen != 0 && scanned >= o.maxlen {
            break;
        }
        if e != element {
            continue;
        }
        matches += 1;
        if matches < rank {
            continue;
        }
        found_at.push(if reverse { len - scanned - 1 } else { scanned });
        match o.count {
            None => break,
            Some(c) if c != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= c as i64 => break,
            Some(_) => {}
        }
    }
    match o.count {
        Some(_) => {
            out.array(found_at.len());
            for i in found_at {
                out.int(i as i64);
            }
        }
        None => match found_at.first() {
            Some(&i) => out.int(i as i64),
            None => out.null(),
        },
    }
    Ok(())
}

fn lrem_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let count = arg_i64(args[2])?;
    let key = args[1];
    let Some(list) = write_list(ctx, key)? else {
        ctx.out.int(0);
        return Ok(());
    };
    let from = if count < 0 { End::Tail } else { End::Head };
    let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    let removed = list.remove_matching(args[3], limit, from);
    if removed > 0 {
        ctx.changed(key, notify::LIST, "lrem");
        ctx.add_dirty(removed as u64 - 1);
    }
    delete_if_empty(ctx, key);
    ctx.out.int(removed as i64);
    Ok(())
}

fn lmove_reply(ctx: &mut Ctx, moved: Option<Vec<u8>>) {
    match moved {
        Some(v) => ctx.out.bulk(&v),
        None => ctx.out.null(),
    }
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
fn lmove_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut a = Args::new(&args[3..]);
    let (from, to) = (take_end(&mut a)?, take_end(&mut a)?);
    a.finish()?;
    let moved = move_element(ctx, args[1], args[2], from, to)?;
    lmove_reply(ctx, moved);
    Ok(())
}

fn rpoplpush_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let moved = move_element(ctx, args[1], args[2], End::Tail, End::Head)?;
    lmove_reply(ctx, moved);
    Ok(())
}

// ---------------------------------------------------------------------------
// Blocking commands.

/// BLPOP / BRPOP / BLMPOP (Redis's blockingPopGenericCommand): pop from
/// the first non-empty list, else block on all of them. `count` None is
/// the single-element reply of BLPOP/BRPOP.
fn blocking_pop(
    ctx: &mut Ctx,
    args: &[&[u8]],
    keys: &[&[u8]],
    end: End,
    timeout: &[u8],
    count: Option<usize>,
) -> CmdResult {
    let deadline = parse_timeout(timeout, ctx.now_ms)?;
    for key in ctx.blocking_keys(keys) {
        if !has_list(ctx, key)? {
            continue;
        }
        // Logged as the non-blocking pop it turned out to be: a replay
        // must never block (Redis propagates LPOP / RPOP).
        let pop: &[u8] = match end {
            End::Head => b"LPOP",
            End::Tail => b"RPOP",
        };
        match count {
            // Logged by the pop, with the count it took.
            Some(n) => pop_range_reply(ctx, key, end, n, true),
            None => {
                ctx.propagate_as(&[pop, key]);
                ctx.out.array(2);
                ctx.out.bulk(key);
                pop_one_reply(ctx, key, end)?;
            }
        }
        return Ok(());
    }
    ctx.block_on(
        args,
        BlockRequest {
            keys,
            deadline_ms: deadline,
            value_type: ValueType::List,
        },
        ReplyWriter::null_array,
    );
    Ok(())
}

fn blpop_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = args.len();
    blocking_pop(ctx, args, &args[1..n - 1], End::Head, args[n - 1], None)
}

fn brpop_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = args.len();
    blocking_pop(ctx, args, &args[1..n - 1], End::Tail, args[n - 1], None)
}

fn blmpop_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let a = parse_mpop(args, 2)?;
    blocking_pop(ctx, args, &a.keys, a.end, args[1], Some(a.count))
}

/// BLMOVE / BRPOPLPUSH (Redis's blmoveGenericCommand).
fn blocking_move(ctx: &mut Ctx, args: &[&[u8]], from: End, to: End, timeout: &[u8]) -> CmdResult {
    let deadline = parse_timeout(timeout, ctx.now_ms)?;
    let (src, dst) = (args[1], args[2]);
    if has_list(ctx, src)? {
        let moved = move_element(ctx, src, dst, from, to)?;
        let side = |e: End| -> &'static [u8] {
            match e {
                End::Head => b"LEFT",
                End::Tail => b"RIGHT",
            }
        };
        // Logged as the non-blocking form (Redis's rewrite in
        // lmoveGenericCommand): a replay must never block.
        if args[0].eq_ignore_ascii_case(b"brpoplpush") {
            ctx.propagate_as(&[b"RPOPLPUSH", src, dst]);
        } else {
            ctx.propagate_as(&[b"LMOVE", src, dst, side(from), side(to)]);
        }
        lmove_reply(ctx, moved);
        return Ok(());
    }
    ctx.block_on(
        args,
        BlockRequest {
            keys: &[src],
            deadline_ms: deadline,
            value_type: ValueType::List,
        },
        ReplyWriter::null,
    );
    Ok(())
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
fn blmove_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut a = Args::new(&args[3..]);
    let (from, to) = (take_end(&mut a)?, take_end(&mut a)?);
    let timeout = a.next_arg()?;
    a.finish()?;
    blocking_move(ctx, args, from, to, timeout)
}

fn brpoplpush_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    blocking_move(ctx, args, End::Tail, End::Head, args[3])
}

// ---------------------------------------------------------------------------
// The table.

const PUSH_FLAGS: u32 = flag::WRITE | flag::DENYOOM | flag::FAST;
const INSERT_KEY: &[KeySpec] = &[KeySpec::at(1, kflag::RW | kflag::INSERT)];
const POP_KEY: &[KeySpec] = &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE)];
const READ_KEY: &[KeySpec] = &[KeySpec::at(1, kflag::RO | kflag::ACCESS)];
const MOVE_KEYS: &[KeySpec] = &[
    KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE),
    KeySpec::at(2, kflag::RW | kflag::INSERT),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "lpush",
        arity: -3,
        flags: PUSH_FLAGS,
        keys: INSERT_KEY,
        group: Group::List,
        since: "1.0.0",
        summary: "Prepend one or multiple elements to a list",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        history: &[("2.4.0", "Accepts multiple `element` arguments.")],
        syntax: "key:key element:string...",
        handler: lpush_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "rpush",
        arity: -3,
        flags: PUSH_FLAGS,
        keys: INSERT_KEY,
        group: Group::List,
        since: "1.0.0",
        summary: "Append one or multiple elements to a list",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        history: &[("2.4.0", "Accepts multiple `element` arguments.")],
        syntax: "key:key element:string...",
        handler: rpush_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lpushx",
        arity: -3,
        flags: PUSH_FLAGS,
        keys: INSERT_KEY,
        group: Group::List,
        since: "2.2.0",
        summary: "Prepend an element to a list, only if the list exists",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        history: &[("4.0.0", "Accepts multiple `element` arguments.")],
        syntax: "key:key element:string...",
        handler: lpushx_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "rpushx",
        arity: -3,
        flags: PUSH_FLAGS,
        keys: INSERT_KEY,
        group: Group::List,
        since: "2.2.0",
        summary: "Append an element to a list, only if the list exists",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        history: &[("4.0.0", "Accepts multiple `element` arguments.")],
        syntax: "key:key element:string...",
        handler: rpushx_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lpop",
        arity: -2,
        flags: flag::WRITE | flag::FAST,
        keys: POP_KEY,
        group: Group::List,
        since: "1.0.0",
        summary: "Remove and get the first elements in a list",
        complexity: "O(N) where N is the number of elements returned",
        history: &[("6.2.0", "Added the `count` argument.")],
        syntax: "key:key [count:integer]{since:6.2.0}",
        handler: lpop_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "rpop",
        arity: -2,
        flags: flag::WRITE | flag::FAST,
        keys: POP_KEY,
        group: Group::List,
        since: "1.0.0",
        summary: "Remove and get the last elements in a list",
        complexity: "O(N) where N is the number of elements returned",
        history: &[("6.2.0", "Added the `count` argument.")],
        syntax: "key:key [count:integer]{since:6.2.0}",
        handler: rpop_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "llen",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO)],
        group: Group::List,
        since: "1.0.0",
        summary: "Get the length of a list",
        complexity: "O(1)",
        syntax: "key:key",
        handler: llen_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lrange",
        arity: 4,
        flags: flag::READONLY,
        keys: READ_KEY,
        group: Group::List,
        since: "1.0.0",
        summary: "Get a range of elements from a list",
        complexity: "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
        syntax: "key:key start:integer stop:integer",
        handler: lrange_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lindex",
        arity: 3,
        flags: flag::READONLY,
        keys: READ_KEY,
        group: Group::List,
        since: "1.0.0",
        summary: "Get an element from a list by its index",
        complexity: "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
        syntax: "key:key index:integer",
        handler: lindex_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lset",
        arity: 4,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, kflag::RW | kflag::UPDATE)],
        group: Group::List,
        since: "1.0.0",
        summary: "Set the value of an element in a list by its index",
        complexity: "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
        syntax: "key:key index:integer element:string",
        handler: lset_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "linsert",
        arity: 5,
        flags: flag::WRITE | flag::DENYOOM,
        keys: INSERT_KEY,
        group: Group::List,
        since: "2.2.0",
        summary: "Insert an element before or after another element in a list",
        complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
        syntax: "key:key where:oneof(BEFORE|AFTER) pivot:string element:string",
        handler: linsert_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lrem",
        arity: 4,
        flags: flag::WRITE,
        keys: &[KeySpec::at(1, kflag::RW | kflag::DELETE)],
        group: Group::List,
        since: "1.0.0",
        summary: "Remove elements from a list",
        complexity: "O(N+M) where N is the length of the list and M is the number of elements removed.",
        syntax: "key:key count:integer element:string",
        handler: lrem_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "ltrim",
        arity: 4,
        flags: flag::WRITE,
        keys: &[KeySpec::at(1, kflag::RW | kflag::DELETE)],
        group: Group::List,
        since: "1.0.0",
        summary: "Trim a list to the specified range",
        complexity: "O(N) where N is the number of elements to be removed by the operation.",
        syntax: "key:key start:integer stop:integer",
        handler: ltrim_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lpos",
        arity: -3,
        flags: flag::READONLY,
        keys: READ_KEY,
        group: Group::List,
        since: "6.0.6",
        summary: "Return the index of matching elements on a list",
        complexity: "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
        syntax: "key:key element:string [RANK rank:integer] [COUNT num-matches:integer] [MAXLEN len:integer]",
        handler: lpos_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lmove",
        arity: 5,
        flags: flag::WRITE | flag::DENYOOM,
        keys: MOVE_KEYS,
        group: Group::List,
        since: "6.2.0",
        summary: "Pop an element from a list, push it to another list and return it",
        complexity: "O(1)",
        syntax: "source:key destination:key wherefrom:oneof(LEFT|RIGHT) whereto:oneof(LEFT|RIGHT)",
        handler: lmove_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "rpoplpush",
        arity: 3,
        flags: flag::WRITE | flag::DENYOOM,
        keys: MOVE_KEYS,
        group: Group::List,
        since: "1.2.0",
        summary: "Remove the last element in a list, prepend it to another list and return it",
        complexity: "O(1)",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`LMOVE` with the `RIGHT` and `LEFT` arguments",
        syntax: "source:key destination:key",
        handler: rpoplpush_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lmpop",
        arity: -4,
        flags: flag::WRITE,
        keys: &[KeySpec::keynum(1, kflag::RW | kflag::ACCESS | kflag::DELETE)],
        group: Group::List,
        since: "7.0.0",
        summary: "Pop elements from a list",
        complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
        syntax: "numkeys:integer key:key... where:oneof(LEFT|RIGHT) [COUNT count:integer]",
        handler: lmpop_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "blpop",
        arity: -3,
        flags: flag::WRITE | flag::NOSCRIPT | flag::BLOCKING,
        keys: &[KeySpec::range(1, -2, 1, kflag::RW | kflag::ACCESS | kflag::DELETE)],
        group: Group::List,
        since: "2.0.0",
        summary: "Remove and get the first element in a list, or block until one is available",
        complexity: "O(N) where N is the number of provided keys.",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        syntax: "key:key... timeout:double",
        handler: blpop_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "brpop",
        arity: -3,
        flags: flag::WRITE | flag::NOSCRIPT | flag::BLOCKING,
        keys: &[KeySpec::range(1, -2, 1, kflag::RW | kflag::ACCESS | kflag::DELETE)],
        group: Group::List,
        since: "2.0.0",
        summary: "Remove and get the last element in a list, or block until one is available",
        complexity: "O(N) where N is the number of provided keys.",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        syntax: "key:key... timeout:double",
        handler: brpop_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "blmove",
        arity: 6,
        flags: flag::WRITE | flag::DENYOOM | flag::NOSCRIPT | flag::BLOCKING,
        keys: MOVE_KEYS,
        group: Group::List,
        since: "6.2.0",
        summary: "Pop an element from a list, push it to another list and return it; or block until one is available",
        complexity: "O(1)",
        syntax: "source:key destination:key wherefrom:oneof(LEFT|RIGHT) whereto:oneof(LEFT|RIGHT) timeout:double",
        handler: blmove_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "brpoplpush",
        arity: 4,
        flags: flag::WRITE | flag::DENYOOM | flag::NOSCRIPT | flag::BLOCKING,
        keys: MOVE_KEYS,
        group: Group::List,
        since: "2.2.0",
        summary: "Pop an element from a list, push it to another list and return it; or block until one is available",
        complexity: "O(1)",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`BLMOVE` with the `RIGHT` and `LEFT` arguments",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        syntax: "source:key destination:key timeout:double",
        handler: brpoplpush_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "blmpop",
        arity: -5,
        flags: flag::WRITE | flag::BLOCKING,
        keys: &[KeySpec::keynum(2, kflag::RW | kflag::ACCESS | kflag::DELETE)],
        group: Group::List,
        since: "7.0.0",
        summary: "Pop elements from a list, or block until one is available",
        complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
        syntax: "timeout:double numkeys:integer key:key... where:oneof(LEFT|RIGHT) [COUNT count:integer]",
        handler: blmpop_command,
        ..CommandSpec::DEFAULT
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_clamp_like_redis() {
        assert_eq!(clamp_range(0, -1, 3), Some((0, 2)));
        assert_eq!(clamp_range(-100, 100, 3), Some((0, 2)));
        assert_eq!(clamp_range(2, 1, 3), None);
        assert_eq!(clamp_range(0, -4, 3), None);
        assert_eq!(clamp_range(3, 5, 3), None);
        assert_eq!(clamp_range(i64::MIN, i64::MAX, 3), Some((0, 2)));
    }

    #[test]
    fn mpop_arguments() {
        let args: Vec<&[u8]> = vec![b"lmpop", b"2", b"a", b"b", b"LEFT", b"COUNT", b"3"];
        let a = parse_mpop(&args, 1).unwrap();
        assert_eq!(a.keys, vec![&b"a"[..], b"b"]);
        assert_eq!((a.end, a.count), (End::Head, 3));
        let err = |v: Vec<&[u8]>| parse_mpop(&v, 1).err().unwrap().text().to_string();
        assert_eq!(
            err(vec![b"lmpop", b"0", b"a", b"LEFT"]),
            "ERR numkeys should be greater than 0"
        );
        assert_eq!(
            err(vec![b"lmpop", b"9223372036854775807", b"a", b"LEFT"]),
            "ERR syntax error"
        );
        assert_eq!(
            err(vec![
                b"lmpop", b"1", b"a", b"LEFT", b"COUNT", b"1", b"COUNT", b"2"
            ]),
            "ERR syntax error"
        );
        assert_eq!(
            err(vec![b"lmpop", b"1", b"a", b"LEFT", b"COUNT", b"0"]),
            "ERR count should be greater than 0"
        );
    }
}
