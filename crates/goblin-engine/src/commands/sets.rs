//! The set family: SADD, SREM, membership, SPOP / SRANDMEMBER, SMOVE, the
//! set algebra (SINTER, SUNION, SDIFF and their STORE and CARD variants)
//! and SSCAN (Redis's t_set.c).
//!
//! The operations (`sadd`, `smove`, `sinter`...) are public so that other
//! hosts of the same semantics call them directly; the handlers parse
//! arguments and write the replies. The data structure and its
//! intset/table representations are in `keyspace::set`.

use super::hashes::{empty_scan, parse_random_count, RANDOM_REPLY_LIMIT};
use super::keys::{parse_cursor, parse_scan_options};
use crate::command::args::Args;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::{CompactBytes, Member, Object, Set, Value};
use crate::protocol::ReplyWriter;
use crate::pubsub::notify;
use crate::util::glob_match;
use crate::util::number::arg_i64;
use crate::Error;
use std::sync::atomic::Ordering::Relaxed;

// ---------------------------------------------------------------------------
// Access to the sets at keys.

/// The set at `key` for reading (a keyspace hit or miss is counted), with
/// the reply writer so that members are copied straight into the reply.
fn read_set<'c>(
    ctx: &'c mut Ctx,
    key: &[u8],
) -> Result<(Option<&'c Set>, &'c mut ReplyWriter), Error> {
    match ctx.lookup_read_and_out(key) {
        (None, out) => Ok((None, out)),
        (
            Some(Object {
                value: Value::Set(s),
                ..
            }),
            out,
        ) => Ok((Some(&**s), out)),
        (Some(_), _) => Err(Error::WRONGTYPE),
    }
}

/// The set at `key` for writing.
fn write_set<'c>(ctx: &'c mut Ctx, key: &[u8]) -> Result<Option<&'c mut Set>, Error> {
    match ctx.lookup_write(key) {
        None => Ok(None),
        Some(Object {
            value: Value::Set(s),
            ..
        }) => Ok(Some(&mut **s)),
        Some(_) => Err(Error::WRONGTYPE),
    }
}

/// Several sets at once, for the set algebra. Each key is looked up for
/// reading in order (counting hits and misses, expiring lazily, stopping at
/// the first key of another type, as Redis's lookupKeyRead loop does);
/// absent keys are `None`, that is empty sets.
fn read_sets<'c>(ctx: &'c mut Ctx, keys: &[&[u8]]) -> Result<Vec<Option<&'c Set>>, Error> {
    for key in keys {
        if let Some(obj) = ctx.lookup_read(key) {
            if !matches!(obj.value, Value::Set(_)) {
                return Err(Error::WRONGTYPE);
            }
        }
    }
    let ctx: &'c Ctx = ctx;
    Ok(keys
        .iter()
        .map(|key| match ctx.peek(key) {
            Some(Object {
                value: Value::Set(s),
                ..
            }) => Some(&**s),
            _ => None,
        })
        .collect())
}

/// Removes a key that a command emptied (Redis deletes empty collections).
fn remove_key(ctx: &mut Ctx, key: &[u8]) {
    let (db, h) = ctx.locate(key);
    db.remove(h, key);
}

/// set-max-intset-entries.
fn max_intset(ctx: &Ctx) -> usize {
    ctx.engine.config().set_max_intset_entries.load(Relaxed)
}

fn reply_member(out: &mut ReplyWriter, m: Member<'_>) {
    match m {
        Member::Int(v) => out.bulk_i64(v),
        Member::Str(s) => out.bulk(s),
    }
}

/// Stores the result of a *STORE command: the set when it is not empty,
/// otherwise deletes the destination (Redis's setKey / dbDelete). Returns
/// the cardinality.
fn store_set(ctx: &mut Ctx, dst: &[u8], set: Set, event: &str) -> usize {
    let n = set.len();
    if n > 0 {
        ctx.store(dst, Value::Set(Box::new(set)), false, notify::SET, event);
    } else {
        ctx.delete_key(dst);
    }
    n
}

// ---------------------------------------------------------------------------
// Operations.

/// SADD: adds the members and returns how many were new.
pub fn sadd(ctx: &mut Ctx, key: &[u8], members: &[&[u8]]) -> Result<usize, Error> {
    let max = max_intset(ctx);
    let now = ctx.now_ms;
    let set = match write_set(ctx, key)? {
        Some(set) => set,
        None => {
            let Some(first) = members.first() else {
                return Ok(0);
            };
            let (db, h) = ctx.locate(key);
            match &mut db
                .insert_new(h, key, Value::Set(Box::new(Set::for_member(first))), now)
                .value
            {
                Value::Set(s) => &mut **s,
                _ => unreachable!(),
            }
        }
    };
    let added = members.iter().filter(|m| set.add(m, max)).count();
    if added > 0 {
        ctx.add_dirty(added as u64 - 1);
        ctx.changed(key, notify::SET, "sadd");
    }
    Ok(added)
}

/// SREM: removes the members, deleting the key when none is left; returns
/// how many were removed.
pub fn srem(ctx: &mut Ctx, key: &[u8], members: &[&[u8]]) -> Result<usize, Error> {
    let Some(set) = write_set(ctx, key)? else {
        return Ok(0);
    };
    let mut removed = 0;
    let mut emptied = false;
    for m in members {
        if set.remove(m) {
            removed += 1;
            if set.is_empty() {
                emptied = true;
                break;
            }
        }
    }
    if emptied {
        remove_key(ctx, key);
    }
    if removed > 0 {
        ctx.add_dirty(removed as u64 - 1);
        ctx.changed(key, notify::SET, "srem");
        if emptied {
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    Ok(removed)
}

/// SMOVE: moves `member` from `src` to `dst`; true when it was in `src`.
pub fn smove(ctx: &mut Ctx, src: &[u8], dst: &[u8], member: &[u8]) -> Result<bool, Error> {
    let is_set = |o: &Object| matches!(o.value, Value::Set(_));
    // Both keys are looked up first (expiring them lazily), then an absent
    // source answers 0 before any type check, as in Redis.
    let src_kind = ctx.lookup_write(src).map(|o| is_set(o));
    let dst_kind = ctx.lookup_write(dst).map(|o| is_set(o));
    let Some(src_is_set) = src_kind else {
        return Ok(false);
    };
    if !src_is_set || dst_kind == Some(false) {
        return Err(Error::WRONGTYPE);
    }
    if src == dst {
        return Ok(write_set(ctx, src)?.is_some_and(|s| s.contains(member)));
    }
    let set = write_set(ctx, src)?.expect("source exists");
    if !set.remove(member) {
        return Ok(false);
    }
    let emptied = set.is_empty();
    ctx.changed(src, notify::SET, "srem");
    if emptied {
        remove_key(ctx, src);
        ctx.notify(notify::GENERIC, "del", src);
    }
    // The destination counts as changed only when the member is new there.
    let max = max_intset(ctx);
    let added = match write_set(ctx, dst)? {
        Some(d) => d.add(member, max),
        None => {
            let mut d = Set::for_member(member);
            d.add(member, max);
            let now = ctx.now_ms;
            let (db, h) = ctx.locate(dst);
            db.insert_new(h, dst, Value::Set(Box::new(d)), now);
            true
        }
    };
    if added {
        ctx.changed(dst, notify::SET, "sadd");
    }
    Ok(true)
}

/// SPOP without a count: removes and returns one random member.
pub fn spop(ctx: &mut Ctx, key: &[u8]) -> Result<Option<CompactBytes>, Error> {
    let mut rng = fastrand::Rng::new();
    let Some(set) = write_set(ctx, key)? else {
        return Ok(None);
    };
    let Some(member) = set.random(&mut rng).map(|m| m.to_compact()) else {
        return Ok(None);
    };
    set.remove(&member);
    let emptied = set.is_empty();
    ctx.changed(key, notify::SET, "spop");
    if emptied {
        remove_key(ctx, key);
        ctx.notify(notify::GENERIC, "del", key);
    }
    Ok(Some(member))
}

/// How many times bigger than the count the rest of the set must be for
/// SPOP to draw members one by one (Redis's SPOP_MOVE_STRATEGY_MUL).
const SPOP_MOVE_STRATEGY_MUL: u64 = 5;

/// SPOP with a count: removes and returns up to `count` random members
/// (None when the key is absent). Redis's spopWithCountCommand, with its
/// three cases.
pub fn spop_count(
    ctx: &mut Ctx,
    key: &[u8],
    count: u64,
) -> Result<Option<Vec<CompactBytes>>, Error> {
    let max = max_intset(ctx);
    let mut rng = fastrand::Rng::new();
    let Some(set) = write_set(ctx, key)? else {
        return Ok(None);
    };
    if count == 0 {
        return Ok(Some(Vec::new()));
    }
    let size = set.len() as u64;
    // CASE 1: everything goes.
    if count >= size {
        let all: Vec<CompactBytes> = set.iter().map(|m| m.to_compact()).collect();
        ctx.changed(key, notify::SET, "spop");
        remove_key(ctx, key);
        ctx.notify(notify::GENERIC, "del", key);
        ctx.add_dirty(size - 1);
        return Ok(Some(all));
    }
    let remaining = size - count;
    let popped: Vec<CompactBytes> = if remaining * SPOP_MOVE_STRATEGY_MUL > count {
        // CASE 2: few members go: draw and remove them one by one.
        (0..count)
            .map(|_| {
                let m = set.random(&mut rng).expect("non-empty").to_compact();
                set.remove(&m);
                m
            })
            .collect()
    } else {
        // CASE 3: most members go: move the few that stay to a new set and
        // hand out the old one (the new set starts as Redis's
        // setTypeCreate of its first member, so its encoding matches).
        let mut kept: Option<Set> = None;
        for _ in 0..remaining {
            let m = set.random(&mut rng).expect("non-empty").to_compact();
            kept.get_or_insert_with(|| Set::for_member(&m)).add(&m, max);
            set.remove(&m);
        }
        let popped = set.iter().map(|m| m.to_compact()).collect();
        *set = kept.expect("remaining > 0");
        popped
    };
    ctx.changed(key, notify::SET, "spop");
    ctx.add_dirty(count - 1);
    Ok(Some(popped))
}

/// Sorts the sets of an intersection smallest first (Redis's
/// qsortCompareSetsByCardinality); None when one of them is absent.
fn present_by_size<'s>(sets: &[Option<&'s Set>]) -> Option<Vec<&'s Set>> {
    let mut present: Vec<&Set> = sets.iter().copied().collect::<Option<_>>()?;
    present.sort_by_key(|s| s.len());
    Some(present)
}

/// Calls `f` for each member of the intersection, in the order of the
/// smallest set, until `f` returns false.
fn for_each_common(sets: &[&Set], mut f: impl FnMut(Member<'_>) -> bool) {
    let Some((first, rest)) = sets.split_first() else {
        return;
    };
    for m in first.iter() {
        let in_all = rest
            .iter()
            .all(|s| std::ptr::eq(*s, *first) || s.contains_member(m));
        if in_all && !f(m) {
            break;
        }
    }
}

/// SINTER: the members common to every set, in the order of the smallest.
pub fn sinter(ctx: &mut Ctx, keys: &[&[u8]]) -> Result<Vec<CompactBytes>, Error> {
    let sets = read_sets(ctx, keys)?;
    let mut out = Vec::new();
    if let Some(sets) = present_by_size(&sets) {
        for_each_common(&sets, |m| {
            out.push(m.to_compact());
            true
        });
    }
    Ok(out)
}

/// SINTERCARD: the size of the intersection, counting stops at `limit`
/// (0 = no limit).
pub fn sintercard(ctx: &mut Ctx, keys: &[&[u8]], limit: u64) -> Result<u64, Error> {
    let sets = read_sets(ctx, keys)?;
    let mut n = 0u64;
    if let Some(sets) = present_by_size(&sets) {
        for_each_common(&sets, |_| {
            n += 1;
            limit == 0 || n < limit
        });
    }
    Ok(n)
}

/// SINTERSTORE: stores the intersection at `dst` (deleting `dst` when it is
/// empty) and returns its size.
pub fn sinterstore(ctx: &mut Ctx, dst: &[u8], keys: &[&[u8]]) -> Result<usize, Error> {
    let max = max_intset(ctx);
    let sets = read_sets(ctx, keys)?;
    // The result starts as an intset, as Redis's does.
    let mut result = Set::new_intset();
    if let Some(sets) = present_by_size(&sets) {
        for_each_common(&sets, |m| {
            result.add_member(m, max);
            true
        });
    }
    Ok(store_set(ctx, dst, result, "sinterstore"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Diff,
}

/// SUNION / SDIFF (Redis's sunionDiffGenericCommand): the result as a new
/// set that starts as an intset, built the way Redis builds it (including
/// its choice between the two difference algorithms), so that a stored
/// result has Redis's encoding.
pub fn sunion_diff(ctx: &mut Ctx, keys: &[&[u8]], op: SetOp) -> Result<Set, Error> {
    let max = max_intset(ctx);
    let mut sets = read_sets(ctx, keys)?;
    let mut result = Set::new_intset();
    match op {
        SetOp::Union => {
            for s in sets.iter().flatten() {
                for m in s.iter() {
                    result.add_member(m, max);
                }
            }
        }
        SetOp::Diff => {
            let Some(first) = sets[0] else {
                return Ok(result);
            };
            // The same key given again as a later set: the result is empty.
            if sets[1..].iter().flatten().any(|s| std::ptr::eq(*s, first)) {
                return Ok(result);
            }
            // Algorithm 1 is O(N*M) over the first set's N members and M
            // sets; algorithm 2 is O(total members). Redis picks by this
            // estimate, giving algorithm 1 an advantage.
            let present = sets.iter().flatten().count() as u64;
            let algo_one = present * first.len() as u64 / 2;
            let algo_two: u64 = sets.iter().flatten().map(|s| s.len() as u64).sum();
            if algo_one <= algo_two {
                // Subtract the largest sets first: duplicates are found sooner.
                sets[1..].sort_by_key(|s| std::cmp::Reverse(s.map_or(0, |s| s.len())));
                for m in first.iter() {
                    if !sets[1..].iter().flatten().any(|s| s.contains_member(m)) {
                        result.add_member(m, max);
                    }
                }
            } else {
                for m in first.iter() {
                    result.add_member(m, max);
                }
                for s in sets[1..].iter().flatten() {
                    if result.is_empty() {
                        break;
                    }
                    for m in s.iter() {
                        result.remove_member(m);
                    }
                }
            }
        }
    }
    Ok(result)
}

/// SUNIONSTORE / SDIFFSTORE: stores the result at `dst` (deleting `dst`
/// when it is empty) and returns its size.
pub fn sunion_diff_store(
    ctx: &mut Ctx,
    dst: &[u8],
    keys: &[&[u8]],
    op: SetOp,
) -> Result<usize, Error> {
    let result = sunion_diff(ctx, keys, op)?;
    let event = match op {
        SetOp::Union => "sunionstore",
        SetOp::Diff => "sdiffstore",
    };
    Ok(store_set(ctx, dst, result, event))
}

// ---------------------------------------------------------------------------
// Commands.

fn sadd_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = sadd(ctx, args[1], &args[2..])?;
    ctx.out.int(n as i64);
    Ok(())
}

fn srem_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = srem(ctx, args[1], &args[2..])?;
    ctx.out.int(n as i64);
    Ok(())
}

fn smove_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let moved = smove(ctx, args[1], args[2], args[3])?;
    ctx.out.int(moved as i64);
    Ok(())
}

fn sismember_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (set, out) = read_set(ctx, args[1])?;
    out.int(set.is_some_and(|s| s.contains(args[2])) as i64);
    Ok(())
}

fn smismember_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // A missing key is an empty set: one 0 per member.
    let (set, out) = read_set(ctx, args[1])?;
    out.array(args.len() - 2);
    for m in &args[2..] {
        out.int(set.is_some_and(|s| s.contains(m)) as i64);
    }
    Ok(())
}

fn scard_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (set, out) = read_set(ctx, args[1])?;
    out.int(set.map_or(0, |s| s.len()) as i64);
    Ok(())
}

fn smembers_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (set, out) = read_set(ctx, args[1])?;
    out.set(set.map_or(0, |s| s.len()));
    for m in set.into_iter().flat_map(|s| s.iter()) {
        reply_member(out, m);
    }
    Ok(())
}

fn spop_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => {
            match spop(ctx, args[1])? {
                Some(m) => {
                    // Logged as what it removed: a replay must not draw again.
                    ctx.propagate_as(&[b"SREM", args[1], &m]);
                    ctx.out.bulk(&m)
                }
                None => ctx.out.null(),
            }
            Ok(())
        }
        3 => {
            // Redis's getPositiveLongFromObjectOrReply: one message for a
            // non-integer and for a negative count.
            let count = match arg_i64(args[2]) {
                Ok(n) if n >= 0 => n,
                _ => return Err(Error::NOT_POSITIVE),
            };
            let existed = ctx.propagating() && ctx.type_of(args[1]).is_some();
            let popped = spop_count(ctx, args[1], count as u64)?.unwrap_or_default();
            if existed && !popped.is_empty() {
                if ctx.type_of(args[1]).is_none() {
                    ctx.propagate_as(&[b"DEL", args[1]]);
                } else {
                    // SREM in batches, as Redis propagates SPOP with a count.
                    for chunk in popped.chunks(1024) {
                        let mut argv: Vec<&[u8]> = vec![b"SREM", args[1]];
                        argv.extend(chunk.iter().map(|m| m.as_slice()));
                        ctx.propagate_as(&argv);
                    }
                }
            }
            ctx.out.set(popped.len());
            for m in &popped {
                ctx.out.bulk(m);
            }
            Ok(())
        }
        _ => Err(Error::SYNTAX),
    }
}

/// How many times bigger than the count a set must be for SRANDMEMBER to
/// draw random members rather than copy the set and remove some (Redis's
/// SRANDMEMBER_SUB_STRATEGY_MUL).
const SRANDMEMBER_SUB_STRATEGY_MUL: u64 = 3;

fn srandmember_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => {
            let mut rng = fastrand::Rng::new();
            let (set, out) = read_set(ctx, args[1])?;
            match set.and_then(|s| s.random(&mut rng)) {
                Some(m) => reply_member(out, m),
                None => out.null(),
            }
            Ok(())
        }
        3 => {
            let l = parse_random_count(args[2])?;
            srandmember_with_count(ctx, args[1], l)
        }
        _ => Err(Error::SYNTAX),
    }
}

/// Redis's srandmemberWithCountCommand, with its four cases.
fn srandmember_with_count(ctx: &mut Ctx, key: &[u8], l: i64) -> CmdResult {
    let (set, out) = read_set(ctx, key)?;
    let Some(set) = set else {
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
    let mut rng = fastrand::Rng::new();
    let size = set.len() as u64;

    // CASE 1: a negative count (or 1) draws with repetitions.
    if !unique || count == 1 {
        out.array(count as usize);
        let mut overflow = false;
        for _ in 0..count {
            reply_member(out, set.random(&mut rng).expect("non-empty"));
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

    // CASE 2: the count covers the whole set.
    if count >= size {
        out.array(size as usize);
        for m in set.iter() {
            reply_member(out, m);
        }
        return Ok(());
    }

    out.array(count as usize);
    if count * SRANDMEMBER_SUB_STRATEGY_MUL > size {
        // CASE 3: copy the members and remove random ones until `count`
        // are left.
        let mut members: Vec<Member<'_>> = set.iter().collect();
        while members.len() as u64 > count {
            let i = rng.usize(..members.len());
            members.swap_remove(i);
        }
        for m in members {
            reply_member(out, m);
        }
    } else {
        // CASE 4: draw until `count` distinct members were seen.
        let mut seen: std::collections::HashSet<Member<'_>> =
            std::collections::HashSet::with_capacity(count as usize);
        while (seen.len() as u64) < count {
            let m = set.random(&mut rng).expect("non-empty");
            if seen.insert(m) {
                reply_member(out, m);
            }
        }
    }
    Ok(())
}

fn sinter_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let members = sinter(ctx, &args[1..])?;
    ctx.out.set(members.len());
    for m in &members {
        ctx.out.bulk(m);
    }
    Ok(())
}

fn sintercard_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let numkeys = match arg_i64(args[1]) {
        Ok(n) if n >= 1 => n as u64,
        _ => return Err(Error::err("numkeys should be greater than 0")),
    };
    if numkeys > (args.len() - 2) as u64 {
        return Err(Error::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    let keys_end = 2 + numkeys as usize;
    // LIMIT may repeat, the last one counting.
    let mut limit = 0u64;
    let mut a = Args::new(&args[keys_end..]);
    while !a.is_empty() {
        let n = a.option("LIMIT").ok_or(Error::SYNTAX)?;
        limit = match arg_i64(n) {
            Ok(n) if n >= 0 => n as u64,
            _ => return Err(Error::err("LIMIT can't be negative")),
        };
    }
    let n = sintercard(ctx, &args[2..keys_end], limit)?;
    ctx.out.int(n as i64);
    Ok(())
}

fn sinterstore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = sinterstore(ctx, args[1], &args[2..])?;
    ctx.out.int(n as i64);
    Ok(())
}

fn reply_set(ctx: &mut Ctx, set: &Set) {
    ctx.out.set(set.len());
    for m in set.iter() {
        reply_member(ctx.out, m);
    }
}

fn sunion_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let result = sunion_diff(ctx, &args[1..], SetOp::Union)?;
    reply_set(ctx, &result);
    Ok(())
}

fn sunionstore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = sunion_diff_store(ctx, args[1], &args[2..], SetOp::Union)?;
    ctx.out.int(n as i64);
    Ok(())
}

fn sdiff_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let result = sunion_diff(ctx, &args[1..], SetOp::Diff)?;
    reply_set(ctx, &result);
    Ok(())
}

fn sdiffstore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = sunion_diff_store(ctx, args[1], &args[2..], SetOp::Diff)?;
    ctx.out.int(n as i64);
    Ok(())
}

fn sscan_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Redis parses the cursor, then looks the key up, then the options.
    let cursor = parse_cursor(args[2])?;
    let (set, out) = read_set(ctx, args[1])?;
    let Some(set) = set else {
        empty_scan(out);
        return Ok(());
    };
    let opts = parse_scan_options(&args[3..], false)?;
    let mut iterations = opts.count.saturating_mul(10);
    let mut collected = 0usize;
    let mut items: Vec<CompactBytes> = Vec::new();
    let mut cursor = cursor;
    loop {
        cursor = set.scan(cursor, |m| {
            collected += 1;
            let keep = match (opts.pattern, m) {
                (None, _) => true,
                (Some(p), Member::Str(s)) => glob_match(p, s, false),
                (Some(p), Member::Int(v)) => {
                    glob_match(p, itoa::Buffer::new().format(v).as_bytes(), false)
                }
            };
            if keep {
                items.push(m.to_compact());
            }
        });
        if cursor == 0 || iterations == 0 || collected >= opts.count {
            break;
        }
        iterations -= 1;
    }
    out.array(2);
    out.bulk(itoa::Buffer::new().format(cursor).as_bytes());
    out.array(items.len());
    for item in &items {
        out.bulk(item);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The family's table.

const RO_ACCESS: u32 = kflag::RO | kflag::ACCESS;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "sadd",
        arity: -3,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::INSERT)],
        group: Group::Set,
        since: "1.0.0",
        summary: "Add one or more members to a set",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        history: &[("2.4.0", "Accepts multiple `member` arguments.")],
        syntax: "key:key member:string...",
        handler: sadd_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "srem",
        arity: -3,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::DELETE)],
        group: Group::Set,
        since: "1.0.0",
        summary: "Remove one or more members from a set",
        complexity: "O(N) where N is the number of members to be removed.",
        history: &[("2.4.0", "Accepts multiple `member` arguments.")],
        syntax: "key:key member:string...",
        handler: srem_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sismember",
        arity: 3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO)],
        group: Group::Set,
        since: "1.0.0",
        summary: "Determine if a given value is a member of a set",
        complexity: "O(1)",
        syntax: "key:key member:string",
        handler: sismember_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "smismember",
        arity: -3,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Set,
        since: "6.2.0",
        summary: "Returns the membership associated with the given elements for a set",
        complexity: "O(N) where N is the number of elements being checked for membership",
        syntax: "key:key member:string...",
        handler: smismember_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "smembers",
        arity: 2,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Set,
        since: "1.0.0",
        summary: "Get all the members in a set",
        complexity: "O(N) where N is the set cardinality.",
        syntax: "key:key",
        tips: &["nondeterministic_output_order"],
        handler: smembers_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "scard",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO)],
        group: Group::Set,
        since: "1.0.0",
        summary: "Get the number of members in a set",
        complexity: "O(1)",
        syntax: "key:key",
        handler: scard_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "spop",
        arity: -2,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE)],
        group: Group::Set,
        since: "1.0.0",
        summary: "Remove and return one or multiple random members from a set",
        complexity: "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
        history: &[("3.2.0", "Added the `count` argument.")],
        syntax: "key:key [count:integer]{since:3.2.0}",
        tips: &["nondeterministic_output"],
        handler: spop_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "srandmember",
        arity: -2,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Set,
        since: "1.0.0",
        summary: "Get one or multiple random members from a set",
        complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
        history: &[("2.6.0", "Added the optional `count` argument.")],
        syntax: "key:key [count:integer]{since:2.6.0}",
        tips: &["nondeterministic_output"],
        handler: srandmember_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "smove",
        arity: 4,
        flags: flag::WRITE | flag::FAST,
        keys: &[
            KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE),
            KeySpec::at(2, kflag::RW | kflag::INSERT),
        ],
        group: Group::Set,
        since: "1.0.0",
        summary: "Move a member from one set to another",
        complexity: "O(1)",
        syntax: "source:key destination:key member:string",
        handler: smove_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sinter",
        arity: -2,
        flags: flag::READONLY,
        keys: &[KeySpec::range(1, -1, 1, RO_ACCESS)],
        group: Group::Set,
        since: "1.0.0",
        summary: "Intersect multiple sets",
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        syntax: "key:key...",
        tips: &["nondeterministic_output_order"],
        handler: sinter_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sintercard",
        arity: -3,
        flags: flag::READONLY,
        keys: &[KeySpec::keynum(1, RO_ACCESS)],
        group: Group::Set,
        since: "7.0.0",
        summary: "Intersect multiple sets and return the cardinality of the result",
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        syntax: "numkeys:integer key:key... [LIMIT limit:integer]",
        handler: sintercard_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sinterstore",
        arity: -3,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[
            KeySpec::at(1, kflag::RW | kflag::UPDATE),
            KeySpec::range(2, -1, 1, RO_ACCESS),
        ],
        group: Group::Set,
        since: "1.0.0",
        summary: "Intersect multiple sets and store the resulting set in a key",
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        syntax: "destination:key key:key...",
        handler: sinterstore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sunion",
        arity: -2,
        flags: flag::READONLY,
        keys: &[KeySpec::range(1, -1, 1, RO_ACCESS)],
        group: Group::Set,
        since: "1.0.0",
        summary: "Add multiple sets",
        complexity: "O(N) where N is the total number of elements in all given sets.",
        syntax: "key:key...",
        tips: &["nondeterministic_output_order"],
        handler: sunion_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sunionstore",
        arity: -3,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[
            KeySpec::at(1, kflag::OW | kflag::UPDATE),
            KeySpec::range(2, -1, 1, RO_ACCESS),
        ],
        group: Group::Set,
        since: "1.0.0",
        summary: "Add multiple sets and store the resulting set in a key",
        complexity: "O(N) where N is the total number of elements in all given sets.",
        syntax: "destination:key key:key...",
        handler: sunionstore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sdiff",
        arity: -2,
        flags: flag::READONLY,
        keys: &[KeySpec::range(1, -1, 1, RO_ACCESS)],
        group: Group::Set,
        since: "1.0.0",
        summary: "Subtract multiple sets",
        complexity: "O(N) where N is the total number of elements in all given sets.",
        syntax: "key:key...",
        tips: &["nondeterministic_output_order"],
        handler: sdiff_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sdiffstore",
        arity: -3,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[
            KeySpec::at(1, kflag::OW | kflag::UPDATE),
            KeySpec::range(2, -1, 1, RO_ACCESS),
        ],
        group: Group::Set,
        since: "1.0.0",
        summary: "Subtract multiple sets and store the resulting set in a key",
        complexity: "O(N) where N is the total number of elements in all given sets.",
        syntax: "destination:key key:key...",
        handler: sdiffstore_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sscan",
        arity: -3,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Set,
        since: "2.8.0",
        summary: "Incrementally iterate Set elements",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        syntax: "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]",
        tips: &["nondeterministic_output"],
        handler: sscan_command,
        ..CommandSpec::DEFAULT
    },
];

#[cfg(test)]
mod tests {
    use crate::test_support::{run, session};

    #[test]
    fn spop_count_errors_like_redis() {
        // getPositiveLongFromObjectOrReply: one text for both cases.
        let mut s = session();
        run(&mut s, "sadd s a");
        for count in ["-1", "abc"] {
            assert_eq!(
                run(&mut s, &format!("spop s {count}")),
                "-ERR value is out of range, must be positive\r\n"
            );
        }
        assert_eq!(run(&mut s, "spop s 1 2"), "-ERR syntax error\r\n");
        assert_eq!(run(&mut s, "spop nokey 3"), "*0\r\n");
        assert_eq!(run(&mut s, "spop s 0"), "*0\r\n");
        assert_eq!(run(&mut s, "spop s 5"), "*1\r\n$1\r\na\r\n");
        assert_eq!(run(&mut s, "exists s"), ":0\r\n");
    }

    #[test]
    fn spop_keeping_few_members_rebuilds_an_intset() {
        // SPOP's third strategy moves the members that stay to a new set
        // created for its first member, as Redis does: integers that stay
        // in a table set come back as an intset.
        let mut s = session();
        run(
            &mut s,
            "sadd s 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 x",
        );
        run(&mut s, "srem s x");
        assert_eq!(run(&mut s, "object encoding s"), "$9\r\nhashtable\r\n");
        let reply = run(&mut s, "spop s 18");
        assert!(reply.starts_with("*18\r\n"), "{reply}");
        assert_eq!(run(&mut s, "scard s"), ":2\r\n");
        assert_eq!(run(&mut s, "object encoding s"), "$6\r\nintset\r\n");
    }

    #[test]
    fn intset_conversions() {
        let mut s = session();
        run(&mut s, "sadd s 1 2 3");
        assert_eq!(run(&mut s, "object encoding s"), "$6\r\nintset\r\n");
        assert_eq!(
            run(&mut s, "smembers s"),
            "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n"
        );
        run(&mut s, "sadd s 213244124402402314402033402");
        assert_eq!(run(&mut s, "object encoding s"), "$9\r\nhashtable\r\n");
        run(&mut s, "config set set-max-intset-entries 2");
        run(&mut s, "sadd t 1 2");
        assert_eq!(run(&mut s, "object encoding t"), "$6\r\nintset\r\n");
        run(&mut s, "sadd t 3");
        assert_eq!(run(&mut s, "object encoding t"), "$9\r\nhashtable\r\n");
        assert_eq!(run(&mut s, "sismember t 3"), ":1\r\n");
    }

    #[test]
    fn smove_edge_cases() {
        let mut s = session();
        run(&mut s, "set str x");
        run(&mut s, "sadd a 1 x");
        // An absent source answers 0 before the destination's type is checked.
        assert_eq!(run(&mut s, "smove nokey str x"), ":0\r\n");
        assert_eq!(
            run(&mut s, "smove a str x"),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        );
        assert_eq!(run(&mut s, "smove a a x"), ":1\r\n");
        assert_eq!(run(&mut s, "smove a a y"), ":0\r\n");
        // Moving an integer into a new set creates an intset.
        assert_eq!(run(&mut s, "smove a b 1"), ":1\r\n");
        assert_eq!(run(&mut s, "object encoding b"), "$6\r\nintset\r\n");
        // Moving the last member deletes the source.
        assert_eq!(run(&mut s, "smove a b x"), ":1\r\n");
        assert_eq!(run(&mut s, "exists a"), ":0\r\n");
        assert_eq!(run(&mut s, "object encoding b"), "$9\r\nhashtable\r\n");
        assert_eq!(run(&mut s, "scard b"), ":2\r\n");
    }

    #[test]
    fn sintercard_arguments() {
        let mut s = session();
        run(&mut s, "sadd a 1 2 3");
        run(&mut s, "sadd b 2 3 4");
        assert_eq!(run(&mut s, "sintercard 2 a b"), ":2\r\n");
        assert_eq!(run(&mut s, "sintercard 2 a b limit 1"), ":1\r\n");
        assert_eq!(run(&mut s, "sintercard 2 a b limit 0"), ":2\r\n");
        assert_eq!(run(&mut s, "sintercard 2 a nokey"), ":0\r\n");
        for (cmd, err) in [
            (
                "sintercard 0 a",
                "-ERR numkeys should be greater than 0\r\n",
            ),
            (
                "sintercard x a",
                "-ERR numkeys should be greater than 0\r\n",
            ),
            (
                "sintercard 3 a b",
                "-ERR Number of keys can't be greater than number of args\r\n",
            ),
            ("sintercard 1 a b", "-ERR syntax error\r\n"),
            ("sintercard 1 a limit", "-ERR syntax error\r\n"),
            (
                "sintercard 1 a limit -1",
                "-ERR LIMIT can't be negative\r\n",
            ),
            ("sintercard 1 a limit x", "-ERR LIMIT can't be negative\r\n"),
        ] {
            assert_eq!(run(&mut s, cmd), err, "{cmd}");
        }
    }

    #[test]
    fn store_commands_replace_or_delete_the_destination() {
        let mut s = session();
        run(&mut s, "set dst x");
        run(&mut s, "expire dst 100");
        assert_eq!(run(&mut s, "sinterstore dst nokey1 nokey2"), ":0\r\n");
        assert_eq!(run(&mut s, "exists dst"), ":0\r\n");
        run(&mut s, "sadd a 1 2 3 4");
        run(&mut s, "sadd b 3 4 5 x");
        run(&mut s, "set dst x");
        run(&mut s, "expire dst 100");
        assert_eq!(run(&mut s, "sinterstore dst a b"), ":2\r\n");
        assert_eq!(run(&mut s, "ttl dst"), ":-1\r\n");
        assert_eq!(run(&mut s, "object encoding dst"), "$6\r\nintset\r\n");
        assert_eq!(run(&mut s, "sunionstore dst a b"), ":6\r\n");
        assert_eq!(run(&mut s, "object encoding dst"), "$9\r\nhashtable\r\n");
        // A difference of intsets stays an intset.
        assert_eq!(run(&mut s, "sdiffstore dst a b"), ":2\r\n");
        assert_eq!(run(&mut s, "smembers dst"), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
        assert_eq!(run(&mut s, "sdiffstore dst a a"), ":0\r\n");
        assert_eq!(run(&mut s, "exists dst"), ":0\r\n");
        // A source that is another type fails and leaves the destination.
        run(&mut s, "sadd dst e");
        run(&mut s, "set str x");
        for cmd in [
            "sinterstore dst a str",
            "sunionstore dst str a",
            "sdiffstore dst a str",
        ] {
            assert_eq!(
                run(&mut s, cmd),
                "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
            );
        }
        assert_eq!(run(&mut s, "smembers dst"), "*1\r\n$1\r\ne\r\n");
    }

    #[test]
    fn set_replies_in_resp3() {
        let mut s = session();
        run(&mut s, "hello 3");
        run(&mut s, "sadd a 1 2");
        assert_eq!(run(&mut s, "smembers a"), "~2\r\n$1\r\n1\r\n$1\r\n2\r\n");
        assert_eq!(run(&mut s, "sinter a nokey"), "~0\r\n");
        assert_eq!(run(&mut s, "sunion a"), "~2\r\n$1\r\n1\r\n$1\r\n2\r\n");
        assert_eq!(run(&mut s, "spop nokey 2"), "~0\r\n");
        assert_eq!(run(&mut s, "srandmember a 0"), "*0\r\n");
        assert_eq!(
            run(&mut s, "srandmember a 5"),
            "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
        );
        assert_eq!(run(&mut s, "srandmember nokey"), "_\r\n");
    }

    #[test]
    fn srandmember_counts() {
        let mut s = session();
        run(&mut s, "sadd a x");
        assert_eq!(
            run(&mut s, "srandmember a -9223372036854775808"),
            "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"
        );
        assert_eq!(
            run(&mut s, "srandmember a -3"),
            "*3\r\n$1\r\nx\r\n$1\r\nx\r\n$1\r\nx\r\n"
        );
        assert_eq!(run(&mut s, "srandmember a 1 2"), "-ERR syntax error\r\n");
        for table in [false, true] {
            run(&mut s, "del b");
            if table {
                run(&mut s, "sadd b x");
            }
            for i in 0..40 {
                run(&mut s, &format!("sadd b {i}"));
            }
            for count in [2, 20, 39, 41, 60] {
                let reply = run(&mut s, &format!("srandmember b {count}"));
                let members: std::collections::HashSet<&str> = reply
                    .split("\r\n")
                    .skip(2)
                    .step_by(2)
                    .filter(|m| !m.is_empty())
                    .collect();
                let size = if table { 41 } else { 40 };
                assert_eq!(members.len(), count.min(size), "{reply}");
            }
        }
    }

    #[test]
    fn sscan_of_an_intset_matches_formatted_members() {
        let mut s = session();
        run(&mut s, "sadd a 1 12 2");
        assert_eq!(
            run(&mut s, "sscan a 0 match 1*"),
            "*2\r\n$1\r\n0\r\n*2\r\n$1\r\n1\r\n$2\r\n12\r\n"
        );
        assert_eq!(run(&mut s, "sscan a 0 type set"), "-ERR syntax error\r\n");
        assert_eq!(
            run(&mut s, "sscan nokey 0 type set"),
            "*2\r\n$1\r\n0\r\n*0\r\n"
        );
    }
}
