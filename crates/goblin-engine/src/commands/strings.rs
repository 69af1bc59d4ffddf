//! The string family: SET and its variants, GET and its variants, counters,
//! ranges, LCS (Redis's t_string.c).
//!
//! Each command parses its arguments into a small request, runs an
//! operation on the store, and writes the reply. The operations
//! (`incr_by`, `set_with`, ...) are public so that other hosts of the
//! same semantics (scripts, the embedded API) call them directly.

use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::{CompactBytes, Object, Value};
use crate::util::number::{arg_i64, parse_i64, LongDouble};
use crate::Error;

// ---------------------------------------------------------------------------
// Expiry arguments shared by SET and GETEX.

/// An expiry option as given: relative or absolute, seconds or milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpireArg {
    Ex(i64),
    Px(i64),
    ExAt(i64),
    PxAt(i64),
}

impl ExpireArg {
    /// Redis's getExpireMillisecondsOrReply: the absolute time in ms, or the
    /// "invalid expire time" error for non-positive or overflowing values.
    pub fn to_absolute_ms(self, now_ms: u64, cmd: &str) -> Result<i64, Error> {
        let (mut ms, seconds, relative) = match self {
            ExpireArg::Ex(v) => (v, true, true),
            ExpireArg::Px(v) => (v, false, true),
            ExpireArg::ExAt(v) => (v, true, false),
            ExpireArg::PxAt(v) => (v, false, false),
        };
        if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
            return Err(Error::expire_time(cmd));
        }
        if seconds {
            ms *= 1000;
        }
        if relative {
            ms = ms
                .checked_add(now_ms as i64)
                .ok_or_else(|| Error::expire_time(cmd))?;
        }
        if ms <= 0 {
            return Err(Error::expire_time(cmd));
        }
        Ok(ms)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SetCondition {
    #[default]
    Always,
    IfAbsent,
    IfPresent,
}

/// SET's parsed options (Redis's parseExtendedStringArgumentsOrReply).
#[derive(Debug, Default)]
pub struct SetOptions {
    pub condition: SetCondition,
    pub get: bool,
    pub keep_ttl: bool,
    pub expire: Option<ExpireArg>,
}

/// GETEX's parsed options.
#[derive(Debug, Default)]
pub struct GetExOptions {
    pub persist: bool,
    pub expire: Option<ExpireArg>,
}

fn expire_opt(opt: &[u8], next: Option<&&[u8]>) -> Option<Result<ExpireArg, Error>> {
    let make: fn(i64) -> ExpireArg = if opt.eq_ignore_ascii_case(b"EX") {
        ExpireArg::Ex
    } else if opt.eq_ignore_ascii_case(b"PX") {
        ExpireArg::Px
    } else if opt.eq_ignore_ascii_case(b"EXAT") {
        ExpireArg::ExAt
    } else if opt.eq_ignore_ascii_case(b"PXAT") {
        ExpireArg::PxAt
    } else {
        return None;
    };
    let next = next?;
    Some(arg_i64(next).map(make))
}

pub fn parse_set_options(args: &[&[u8]]) -> Result<SetOptions, Error> {
    let mut o = SetOptions::default();
    let mut j = 0;
    while j < args.len() {
        let opt = args[j];
        let next = args.get(j + 1);
        if opt.eq_ignore_ascii_case(b"NX") && o.condition != SetCondition::IfPresent {
            o.condition = SetCondition::IfAbsent;
        } else if opt.eq_ignore_ascii_case(b"XX") && o.condition != SetCondition::IfAbsent {
            o.condition = SetCondition::IfPresent;
        } else if opt.eq_ignore_ascii_case(b"GET") {
            o.get = true;
        } else if opt.eq_ignore_ascii_case(b"KEEPTTL") && o.expire.is_none() {
            o.keep_ttl = true;
        } else if let Some(e) = expire_opt(opt, next).filter(|_| !o.keep_ttl && o.expire.is_none())
        {
            // The value is parsed after all options (Redis validates the
            // syntax first), but a bad number is still this command's error.
            o.expire = Some(e.map_err(|_| Error::NOT_INTEGER)?);
            j += 1;
        } else {
            return Err(Error::SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

pub fn parse_getex_options(args: &[&[u8]]) -> Result<GetExOptions, Error> {
    let mut o = GetExOptions::default();
    let mut j = 0;
    while j < args.len() {
        let opt = args[j];
        let next = args.get(j + 1);
        if opt.eq_ignore_ascii_case(b"PERSIST") && o.expire.is_none() && !o.persist {
            o.persist = true;
        } else if let Some(e) = expire_opt(opt, next).filter(|_| !o.persist && o.expire.is_none()) {
            o.expire = Some(e?);
            j += 1;
        } else {
            return Err(Error::SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

// ---------------------------------------------------------------------------
// Operations.

/// The outcome of `set_with`.
pub struct SetOutcome {
    pub written: bool,
    /// The previous value when GET was asked for.
    pub old: Option<CompactBytes>,
}

/// Redis's setGenericCommand: the condition, the optional GET of the old
/// value (WRONGTYPE if it is not a string), the write, and the expiry.
pub fn set_with(
    ctx: &mut Ctx,
    key: &[u8],
    value: &[u8],
    opts: &SetOptions,
    cmd: &str,
) -> Result<SetOutcome, Error> {
    let expire_at = match opts.expire {
        Some(e) => Some(e.to_absolute_ms(ctx.now_ms, cmd)?),
        None => None,
    };
    let mut old = None;
    if opts.get {
        if let Some(s) = ctx.read_string(key)? {
            old = Some(s.clone());
        }
    }
    let blocked = match opts.condition {
        SetCondition::Always => false,
        SetCondition::IfAbsent => ctx.lookup_write(key).is_some(),
        SetCondition::IfPresent => ctx.lookup_write(key).is_none(),
    };
    if blocked {
        return Ok(SetOutcome {
            written: false,
            old,
        });
    }
    ctx.set_value(key, Value::str(value), opts.keep_ttl);
    if let Some(at) = expire_at {
        ctx.set_expire_at(key, at);
        // A relative expiry is logged as the absolute time it gave, so a
        // replay sets the same deadline (Redis logs SET ... PXAT).
        if !matches!(opts.expire, Some(ExpireArg::PxAt(_))) {
            let at = at.to_string();
            ctx.log_as(&[b"SET", key, value, b"PXAT", at.as_bytes()]);
        }
    }
    Ok(SetOutcome { written: true, old })
}

/// INCRBY semantics: an absent key counts as 0; the TTL is kept; overflow
/// and non-integer values are errors that change nothing.
pub fn incr_by(ctx: &mut Ctx, key: &[u8], delta: i64) -> Result<i64, Error> {
    match ctx.write_string(key)? {
        Some(s) => {
            let current = parse_i64(s).ok_or(Error::NOT_INTEGER)?;
            let next = current.checked_add(delta).ok_or(Error::OVERFLOW)?;
            *s = CompactBytes::from_i64(next);
            ctx.modified(key);
            Ok(next)
        }
        None => {
            let now = ctx.now_ms;
            let (db, h) = ctx.locate(key);
            db.insert_new(h, key, Value::Str(CompactBytes::from_i64(delta)), now);
            ctx.modified(key);
            Ok(delta)
        }
    }
}

/// INCRBYFLOAT semantics, in long double precision as Redis computes it.
/// Returns the stored text.
pub fn incr_by_float(ctx: &mut Ctx, key: &[u8], incr: &[u8]) -> Result<Vec<u8>, Error> {
    let current = match ctx.write_string(key)? {
        Some(s) => LongDouble::parse(s).ok_or(Error::NOT_FLOAT)?,
        None => LongDouble::from_i64(0),
    };
    let incr = LongDouble::parse(incr).ok_or(Error::NOT_FLOAT)?;
    let value = current.add(&incr);
    if !value.is_finite() {
        return Err(Error::err("increment would produce NaN or Infinity"));
    }
    let text = value.to_human_string();
    match ctx.lookup_write(key) {
        Some(obj) => obj.value = Value::str(&text),
        None => {
            let now = ctx.now_ms;
            let (db, h) = ctx.locate(key);
            db.insert_new(h, key, Value::str(&text), now);
        }
    }
    ctx.modified(key);
    Ok(text)
}

fn check_string_length(ctx: &Ctx, size: u64, append: u64) -> Result<(), Error> {
    let max = ctx
        .engine
        .config
        .proto_max_bulk_len
        .load(std::sync::atomic::Ordering::Relaxed);
    match size.checked_add(append) {
        Some(total) if total <= max => Ok(()),
        _ => Err(Error::STRING_TOO_LONG),
    }
}

// ---------------------------------------------------------------------------
// Commands.

fn set_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let opts = parse_set_options(&args[3..])?;
    let outcome = set_with(ctx, args[1], args[2], &opts, "set")?;
    if opts.get {
        match outcome.old {
            Some(v) => ctx.out.bulk(&v),
            None => ctx.out.null(),
        }
    } else if outcome.written {
        ctx.out.ok();
    } else {
        ctx.out.null();
    }
    Ok(())
}

fn setnx_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let opts = SetOptions {
        condition: SetCondition::IfAbsent,
        ..Default::default()
    };
    let outcome = set_with(ctx, args[1], args[2], &opts, "setnx")?;
    ctx.out.int(outcome.written as i64);
    Ok(())
}

fn setex_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let opts = SetOptions {
        expire: Some(ExpireArg::Ex(arg_i64(args[2])?)),
        ..Default::default()
    };
    set_with(ctx, args[1], args[3], &opts, "setex")?;
    ctx.out.ok();
    Ok(())
}

fn psetex_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let opts = SetOptions {
        expire: Some(ExpireArg::Px(arg_i64(args[2])?)),
        ..Default::default()
    };
    set_with(ctx, args[1], args[3], &opts, "psetex")?;
    ctx.out.ok();
    Ok(())
}

fn get_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match ctx.lookup_read_and_out(args[1]) {
        (
            Some(Object {
                value: Value::Str(s),
                ..
            }),
            out,
        ) => out.bulk(s),
        (Some(_), _) => return Err(Error::WRONGTYPE),
        (None, out) => out.null(),
    }
    Ok(())
}

fn getex_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let opts = parse_getex_options(&args[2..])?;
    let key = args[1];
    let Some(value) = ctx.read_string(key)?.map(|s| s.clone()) else {
        ctx.out.null();
        return Ok(());
    };
    let expire_at = match opts.expire {
        Some(e) => Some(e.to_absolute_ms(ctx.now_ms, "getex")?),
        None => None,
    };
    ctx.out.bulk(&value);
    if let Some(at) = expire_at {
        ctx.set_expire_at(key, at);
        if at <= ctx.now_ms as i64 {
            ctx.log_as(&[b"DEL", key]);
        } else {
            let at = at.to_string();
            ctx.log_as(&[b"PEXPIREAT", key, at.as_bytes()]);
        }
    } else if opts.persist && ctx.persist(key) {
        ctx.log_as(&[b"PERSIST", key]);
    }
    Ok(())
}

fn getdel_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(value) = ctx.read_string(args[1])?.map(|s| s.clone()) else {
        ctx.out.null();
        return Ok(());
    };
    ctx.out.bulk(&value);
    ctx.delete(args[1]);
    Ok(())
}

fn getset_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let old = ctx.read_string(args[1])?.map(|s| s.clone());
    ctx.set_value(args[1], Value::str(args[2]), false);
    match old {
        Some(v) => ctx.out.bulk(&v),
        None => ctx.out.null(),
    }
    Ok(())
}

fn mget_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.out.array(args.len() - 1);
    for key in &args[1..] {
        match ctx.lookup_read_and_out(key) {
            (
                Some(Object {
                    value: Value::Str(s),
                    ..
                }),
                out,
            ) => out.bulk(s),
            (_, out) => out.null(),
        }
    }
    Ok(())
}

fn mset_generic(ctx: &mut Ctx, args: &[&[u8]], nx: bool) -> CmdResult {
    if args.len() % 2 == 0 {
        return Err(Error::arity(ctx.command_name()));
    }
    if nx
        && args[1..]
            .chunks(2)
            .any(|kv| ctx.lookup_write(kv[0]).is_some())
    {
        ctx.out.int(0);
        return Ok(());
    }
    for kv in args[1..].chunks(2) {
        ctx.set_value(kv[0], Value::str(kv[1]), false);
    }
    if nx {
        ctx.out.int(1);
    } else {
        ctx.out.ok();
    }
    Ok(())
}

fn mset_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    mset_generic(ctx, args, false)
}

fn msetnx_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    mset_generic(ctx, args, true)
}

fn incr_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let v = incr_by(ctx, args[1], 1)?;
    ctx.out.int(v);
    Ok(())
}

fn decr_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let v = incr_by(ctx, args[1], -1)?;
    ctx.out.int(v);
    Ok(())
}

fn incrby_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let delta = arg_i64(args[2])?;
    let v = incr_by(ctx, args[1], delta)?;
    ctx.out.int(v);
    Ok(())
}

fn decrby_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let delta = arg_i64(args[2])?;
    if delta == i64::MIN {
        return Err(Error::err("decrement would overflow"));
    }
    let v = incr_by(ctx, args[1], -delta)?;
    ctx.out.int(v);
    Ok(())
}

fn incrbyfloat_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let text = incr_by_float(ctx, args[1], args[2])?;
    // Logged as the value it produced: float arithmetic may round
    // differently elsewhere (Redis logs SET ... KEEPTTL).
    ctx.log_as(&[b"SET", args[1], &text, b"KEEPTTL"]);
    ctx.out.bulk(&text);
    Ok(())
}

fn append_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, tail) = (args[1], args[2]);
    let max = ctx
        .engine
        .config
        .proto_max_bulk_len
        .load(std::sync::atomic::Ordering::Relaxed);
    let len = match ctx.write_string(key)? {
        Some(s) => {
            if (s.len() as u64)
                .checked_add(tail.len() as u64)
                .is_none_or(|t| t > max)
            {
                return Err(Error::STRING_TOO_LONG);
            }
            let v = s.make_growable();
            v.extend_from_slice(tail);
            v.len()
        }
        None => {
            ctx.set_value(key, Value::str(tail), false);
            tail.len()
        }
    };
    ctx.modified(key);
    ctx.out.int(len as i64);
    Ok(())
}

fn strlen_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let len = ctx.read_string(args[1])?.map_or(0, |s| s.len());
    ctx.out.int(len as i64);
    Ok(())
}

fn setrange_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, value) = (args[1], args[3]);
    let offset = arg_i64(args[2])?;
    if offset < 0 {
        return Err(Error::err("offset is out of range"));
    }
    let offset = offset as u64;
    let existing_len = match ctx.write_string(key)? {
        None => {
            if value.is_empty() {
                ctx.out.int(0);
                return Ok(());
            }
            None
        }
        Some(s) => Some(s.len()),
    };
    if value.is_empty() {
        ctx.out.int(existing_len.unwrap_or(0) as i64);
        return Ok(());
    }
    check_string_length(ctx, offset, value.len() as u64)?;
    let offset = offset as usize;
    if existing_len.is_none() {
        let mut buf = vec![0u8; offset + value.len()];
        buf[offset..].copy_from_slice(value);
        ctx.set_value(key, Value::Str(CompactBytes::from_vec(buf)), false);
        ctx.out.int((offset + value.len()) as i64);
        return Ok(());
    }
    let Some(s) = ctx.write_string(key)? else {
        unreachable!()
    };
    let v = s.make_growable();
    if v.len() < offset + value.len() {
        v.resize(offset + value.len(), 0);
    }
    v[offset..offset + value.len()].copy_from_slice(value);
    let len = v.len();
    ctx.modified(key);
    ctx.out.int(len as i64);
    Ok(())
}

/// Redis's index clamping for GETRANGE; None when the range is empty.
pub fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    if start < 0 {
        start = 0;
    }
    if end < 0 {
        end = 0;
    }
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return None;
    }
    Some((start as usize, end as usize))
}

fn getrange_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let start = arg_i64(args[2])?;
    let end = arg_i64(args[3])?;
    let slice = match ctx.read_string(args[1])? {
        None => None,
        Some(s) => clamp_range(start, end, s.len()).map(|(a, b)| s[a..=b].to_vec()),
    };
    ctx.out.bulk(slice.as_deref().unwrap_or(b""));
    Ok(())
}

struct LcsOptions {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match_len: i64,
}

fn parse_lcs_options(args: &[&[u8]]) -> Result<LcsOptions, Error> {
    let mut o = LcsOptions {
        len: false,
        idx: false,
        with_match_len: false,
        min_match_len: 0,
    };
    let mut j = 0;
    while j < args.len() {
        let opt = args[j];
        if opt.eq_ignore_ascii_case(b"IDX") {
            o.idx = true;
        } else if opt.eq_ignore_ascii_case(b"LEN") {
            o.len = true;
        } else if opt.eq_ignore_ascii_case(b"WITHMATCHLEN") {
            o.with_match_len = true;
        } else if opt.eq_ignore_ascii_case(b"MINMATCHLEN") && j + 1 < args.len() {
            o.min_match_len = arg_i64(args[j + 1])?.max(0);
            j += 1;
        } else {
            return Err(Error::SYNTAX);
        }
        j += 1;
    }
    if o.len && o.idx {
        return Err(Error::err(
            "If you want both the length and indexes, please just use IDX.",
        ));
    }
    Ok(o)
}

fn lcs_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let fetch = |ctx: &mut Ctx, key: &[u8]| -> Result<Vec<u8>, Error> {
        match ctx.lookup_read(key) {
            None => Ok(Vec::new()),
            Some(Object {
                value: Value::Str(s),
                ..
            }) => Ok(s.to_vec()),
            Some(_) => Err(Error::err("The specified keys must contain string values")),
        }
    };
    let a = fetch(ctx, args[1])?;
    let b = fetch(ctx, args[2])?;
    let o = parse_lcs_options(&args[3..])?;
    if a.len() as u64 >= u32::MAX as u64 - 1 || b.len() as u64 >= u32::MAX as u64 - 1 {
        return Err(Error::err("String too long for LCS"));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    let max = ctx
        .engine
        .config
        .proto_max_bulk_len
        .load(std::sync::atomic::Ordering::Relaxed);
    if cells * 4 > max {
        return Err(Error::err(
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let w = blen + 1;
    let mut t = vec![0u32; cells as usize];
    for i in 1..=alen {
        for j in 1..=blen {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let total = t[alen * w + blen];
    if o.len && !o.idx {
        ctx.out.int(total as i64);
        return Ok(());
    }
    // Walk back through the table, collecting the LCS and its ranges
    // exactly as Redis emits them (from the end of the strings).
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut ranges: Vec<(usize, usize, usize, usize)> = Vec::new();
    let (mut i, mut j) = (alen, blen);
    let unset = alen;
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (unset, 0usize, 0usize, 0usize);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == unset {
                a_start = i - 1;
                a_end = i - 1;
                b_start = j - 1;
                b_end = j - 1;
            } else if a_start == i && b_start == j {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t[(i - 1) * w + j] > t[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != unset {
                emit = true;
            }
        }
        if emit {
            let match_len = a_end - a_start + 1;
            if o.min_match_len == 0 || match_len as i64 >= o.min_match_len {
                ranges.push((a_start, a_end, b_start, b_end));
            }
            a_start = unset;
        }
    }
    if o.idx {
        ctx.out.map(2);
        ctx.out.bulk(b"matches");
        ctx.out.array(ranges.len());
        for (a0, a1, b0, b1) in ranges {
            ctx.out.array(2 + o.with_match_len as usize);
            ctx.out.array(2);
            ctx.out.int(a0 as i64);
            ctx.out.int(a1 as i64);
            ctx.out.array(2);
            ctx.out.int(b0 as i64);
            ctx.out.int(b1 as i64);
            if o.with_match_len {
                ctx.out.int((a1 - a0 + 1) as i64);
            }
        }
        ctx.out.bulk(b"len");
        ctx.out.int(total as i64);
    } else {
        ctx.out.bulk(&result);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The family's table.

const RW_ACCESS_UPDATE: u32 = kflag::RW | kflag::ACCESS | kflag::UPDATE;
const OW_UPDATE: u32 = kflag::OW | kflag::UPDATE;
const RO_ACCESS: u32 = kflag::RO | kflag::ACCESS;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "set",
        arity: -3,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE | kflag::VARIABLE_FLAGS)],
        group: Group::String,
        since: "1.0.0",
        summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
        syntax: "key:key value:string [NX|XX] [GET] [EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|KEEPTTL]",
        handler: set_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "setnx",
        arity: 3,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, kflag::OW | kflag::INSERT)],
        group: Group::String,
        summary: "Set the string value of a key only when the key doesn't exist.",
        syntax: "key:key value:string",
        handler: setnx_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "setex",
        arity: 4,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, OW_UPDATE)],
        group: Group::String,
        since: "2.0.0",
        summary: "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.",
        syntax: "key:key seconds:integer value:string",
        handler: setex_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "psetex",
        arity: 4,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, OW_UPDATE)],
        group: Group::String,
        since: "2.6.0",
        summary: "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.",
        syntax: "key:key milliseconds:integer value:string",
        handler: psetex_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "get",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::String,
        summary: "Returns the string value of a key.",
        syntax: "key:key",
        handler: get_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getex",
        arity: -2,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::String,
        since: "6.2.0",
        summary: "Returns the string value of a key after setting its expiration time.",
        syntax: "key:key [EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|PERSIST]",
        handler: getex_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getdel",
        arity: 2,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE)],
        group: Group::String,
        since: "6.2.0",
        summary: "Returns the string value of a key after deleting the key.",
        syntax: "key:key",
        handler: getdel_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getset",
        arity: 3,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::String,
        summary: "Returns the previous string value of a key after setting it to a new value.",
        syntax: "key:key value:string",
        handler: getset_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "mget",
        arity: -2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::range(1, -1, 1, RO_ACCESS)],
        group: Group::String,
        summary: "Atomically returns the string values of one or more keys.",
        complexity: "O(N) where N is the number of keys to retrieve.",
        syntax: "key:key...",
        tips: &["request_policy:multi_shard"],
        handler: mget_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "mset",
        arity: -3,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::range(1, -1, 2, OW_UPDATE)],
        group: Group::String,
        since: "1.0.1",
        summary: "Atomically creates or modifies the string values of one or more keys.",
        complexity: "O(N) where N is the number of keys to set.",
        syntax: "(key:key value:string)...",
        tips: &["request_policy:multi_shard", "response_policy:all_succeeded"],
        handler: mset_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "msetnx",
        arity: -3,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::range(1, -1, 2, kflag::OW | kflag::INSERT)],
        group: Group::String,
        since: "1.0.1",
        summary: "Atomically modifies the string values of one or more keys only when all keys don't exist.",
        complexity: "O(N) where N is the number of keys to set.",
        syntax: "(key:key value:string)...",
        handler: msetnx_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "incr",
        arity: 2,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::String,
        summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        syntax: "key:key",
        handler: incr_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "decr",
        arity: 2,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::String,
        summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        syntax: "key:key",
        handler: decr_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "incrby",
        arity: 3,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::String,
        summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        syntax: "key:key increment:integer",
        handler: incrby_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "decrby",
        arity: 3,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::String,
        summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.",
        syntax: "key:key decrement:integer",
        handler: decrby_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "incrbyfloat",
        arity: 3,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::String,
        since: "2.6.0",
        summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        syntax: "key:key increment:double",
        handler: incrbyfloat_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "append",
        arity: 3,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::INSERT)],
        group: Group::String,
        since: "2.0.0",
        summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.",
        complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Goblin will double the free space available on every reallocation.",
        syntax: "key:key value:string",
        handler: append_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "strlen",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RO)],
        group: Group::String,
        since: "2.2.0",
        summary: "Returns the length of a string value.",
        syntax: "key:key",
        handler: strlen_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "setrange",
        arity: 4,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, kflag::RW | kflag::UPDATE)],
        group: Group::String,
        since: "2.2.0",
        summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.",
        complexity: "O(1), not counting the time taken to copy the new string in place.",
        syntax: "key:key offset:integer value:string",
        handler: setrange_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getrange",
        arity: 4,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::String,
        since: "2.4.0",
        summary: "Returns a substring of the string stored at a key.",
        complexity: "O(N) where N is the length of the returned string.",
        syntax: "key:key start:integer end:integer",
        handler: getrange_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "substr",
        arity: 4,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::String,
        summary: "Returns a substring from a string value.",
        complexity: "O(N) where N is the length of the returned string.",
        syntax: "key:key start:integer end:integer",
        handler: getrange_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "lcs",
        arity: -3,
        flags: flag::READONLY,
        keys: &[KeySpec::range(1, 1, 1, RO_ACCESS)],
        group: Group::String,
        since: "7.0.0",
        summary: "Finds the longest common substring.",
        complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
        syntax: "key1:key key2:key [LEN] [IDX] [MINMATCHLEN min-match-len:integer] [WITHMATCHLEN]",
        handler: lcs_command,
        ..CommandSpec::DEFAULT
    },
];
