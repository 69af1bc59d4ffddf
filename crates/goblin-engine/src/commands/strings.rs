//! The string family: SET and its variants, GET and its variants, counters,
//! ranges, LCS (Redis's t_string.c).
//!
//! Each command parses its arguments into a small request, runs an
//! operation on the store, and writes the reply. The operations
//! (`incr_by`, `set_with`, ...) are public so that other hosts of the
//! same semantics (scripts, the embedded API) call them directly.

use crate::command::args::Args;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::{CompactBytes, Object, Value};
use crate::pubsub::notify;
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
pub enum SetCondition<'a> {
    #[default]
    Always,
    IfAbsent,
    IfPresent,
    /// IFEQ / IFNE / IFDEQ / IFDNE (Redis 8.4): a comparison with the
    /// current string value.
    Value(ValueCondition<'a>),
}

/// A comparison with a key's current string value, by value or by XXH3
/// digest: the conditions of SET and DELEX (Redis 8.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueCondition<'a> {
    Eq(&'a [u8]),
    Ne(&'a [u8]),
    DigestEq(&'a [u8]),
    DigestNe(&'a [u8]),
}

impl<'a> ValueCondition<'a> {
    /// IFEQ, IFNE, IFDEQ or IFDNE with its argument, taken from `args`.
    pub fn take(args: &mut Args<'_, 'a>) -> Option<ValueCondition<'a>> {
        let (i, arg) = args.option_of(&["IFEQ", "IFNE", "IFDEQ", "IFDNE"])?;
        Some(match i {
            0 => ValueCondition::Eq(arg),
            1 => ValueCondition::Ne(arg),
            2 => ValueCondition::DigestEq(arg),
            _ => ValueCondition::DigestNe(arg),
        })
    }

    /// Whether a missing key satisfies the condition: it equals nothing,
    /// so IFNE and IFDNE hold (SET creates the key) and IFEQ and IFDEQ
    /// do not.
    pub fn holds_when_absent(&self) -> bool {
        matches!(self, ValueCondition::Ne(_) | ValueCondition::DigestNe(_))
    }

    /// Whether `current` satisfies the condition. A digest argument must
    /// be 16 hexadecimal characters and compares case-insensitively, as
    /// Redis checks it (validateHexDigest, strcasecmp).
    pub fn holds(&self, current: &[u8]) -> Result<bool, Error> {
        Ok(match *self {
            ValueCondition::Eq(v) => current == v,
            ValueCondition::Ne(v) => current != v,
            ValueCondition::DigestEq(d) => digest_matches(current, d)?,
            ValueCondition::DigestNe(d) => !digest_matches(current, d)?,
        })
    }
}

/// Length of a DIGEST reply: a 64-bit hash in hex, zero-padded.
const DIGEST_HEX_LEN: usize = 16;

/// DIGEST's value: the XXH3-64 hash of the string, as 16 lowercase hex
/// characters with leading zeros (Redis 8.4).
pub fn string_digest(value: &[u8]) -> [u8; DIGEST_HEX_LEN] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let h = xxhash_rust::xxh3::xxh3_64(value);
    let mut out = [0u8; DIGEST_HEX_LEN];
    for (i, o) in out.iter_mut().enumerate() {
        *o = HEX[((h >> (60 - 4 * i)) & 0xF) as usize];
    }
    out
}

fn digest_matches(value: &[u8], digest: &[u8]) -> Result<bool, Error> {
    if digest.len() != DIGEST_HEX_LEN {
        return Err(Error::err("must be exactly 16 hexadecimal characters"));
    }
    Ok(string_digest(value).eq_ignore_ascii_case(digest))
}

/// SET's parsed options (Redis's parseExtendedStringArgumentsOrReply).
#[derive(Debug, Default)]
pub struct SetOptions<'a> {
    pub condition: SetCondition<'a>,
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

/// EX, PX, EXAT or PXAT with its value, taken from `args`: SET's and
/// GETEX's expiry options. A bad number is Redis's integer error.
fn take_expire(args: &mut Args) -> Option<Result<ExpireArg, Error>> {
    let (i, value) = args.option_of(EXPIRE_OPTIONS)?;
    Some(arg_i64(value).map(EXPIRE_KINDS[i]))
}

const EXPIRE_OPTIONS: &[&str] = &["EX", "PX", "EXAT", "PXAT"];
const EXPIRE_KINDS: [fn(i64) -> ExpireArg; 4] = [
    ExpireArg::Ex,
    ExpireArg::Px,
    ExpireArg::ExAt,
    ExpireArg::PxAt,
];

pub fn parse_set_options<'a>(args: &[&'a [u8]]) -> Result<SetOptions<'a>, Error> {
    let mut o = SetOptions::default();
    let mut a = Args::new(args);
    // NX and XX may repeat (Redis accepts "NX NX"); any other mix of
    // conditions, or a repeated expiry, is a syntax error.
    let set_condition = |o: &mut SetOptions<'a>, c: SetCondition<'a>| {
        let same_flag = o.condition == c && !matches!(c, SetCondition::Value(_));
        if o.condition != SetCondition::Always && !same_flag {
            return Err(Error::SYNTAX);
        }
        o.condition = c;
        Ok(())
    };
    while !a.is_empty() {
        if a.flag("NX") {
            set_condition(&mut o, SetCondition::IfAbsent)?;
        } else if a.flag("XX") {
            set_condition(&mut o, SetCondition::IfPresent)?;
        } else if let Some(c) = ValueCondition::take(&mut a) {
            set_condition(&mut o, SetCondition::Value(c))?;
        } else if a.flag("GET") {
            o.get = true;
        } else if a.flag("KEEPTTL") {
            if o.expire.is_some() {
                return Err(Error::SYNTAX);
            }
            o.keep_ttl = true;
        } else if let Some(e) = take_expire(&mut a) {
            if o.keep_ttl || o.expire.is_some() {
                return Err(Error::SYNTAX);
            }
            // The value is parsed after all options (Redis validates the
            // syntax first), but a bad number is still this command's error.
            o.expire = Some(e.map_err(|_| Error::NOT_INTEGER)?);
        } else {
            return Err(Error::SYNTAX);
        }
    }
    Ok(o)
}

pub fn parse_getex_options(args: &[&[u8]]) -> Result<GetExOptions, Error> {
    let mut o = GetExOptions::default();
    let mut a = Args::new(args);
    while !a.is_empty() {
        if a.flag("PERSIST") {
            if o.expire.is_some() || o.persist {
                return Err(Error::SYNTAX);
            }
            o.persist = true;
        } else if let Some(e) = take_expire(&mut a) {
            if o.persist || o.expire.is_some() {
                return Err(Error::SYNTAX);
            }
            o.expire = Some(e?);
        } else {
            return Err(Error::SYNTAX);
        }
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
        // A comparison needs a string to compare with: another type is
        // WRONGTYPE even without GET (Redis's checkType in setGenericCommand).
        SetCondition::Value(c) => match ctx.write_string(key)? {
            None => !c.holds_when_absent(),
            Some(current) => !c.holds(current)?,
        },
    };
    if blocked {
        return Ok(SetOutcome {
            written: false,
            old,
        });
    }
    let value_stored = Value::Str(ctx.adopt(value));
    // The value and its expiry are one change (Redis's setGenericCommand).
    ctx.as_one_change(|ctx| {
        ctx.store(key, value_stored, opts.keep_ttl, notify::STRING, "set");
        if let Some(at) = expire_at {
            ctx.set_expire_at(key, at);
        }
    });
    if let Some(at) = expire_at {
        ctx.notify(notify::GENERIC, "expire", key);
        // Any expiry is logged as the absolute time it gave, so a replay
        // sets the same deadline (Redis rewrites SET ... EX/PX/EXAT/PXAT to
        // SET key value PXAT <ms>).
        let at = at.to_string();
        ctx.propagate_as(&[b"SET", key, value, b"PXAT", at.as_bytes()]);
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
            ctx.changed(key, notify::STRING, "incrby");
            Ok(next)
        }
        None => {
            let now = ctx.now_ms;
            let (db, h) = ctx.locate(key);
            db.insert_new(h, key, Value::Str(CompactBytes::from_i64(delta)), now);
            ctx.changed(key, notify::STRING, "incrby");
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
    ctx.changed(key, notify::STRING, "incrbyfloat");
    Ok(text)
}

/// DELEX: deletes the key when the condition holds (any type when there
/// is no condition, as DEL); true when deleted. A condition needs a string
/// value: another type is WRONGTYPE.
pub fn delete_if(ctx: &mut Ctx, key: &[u8], cond: Option<ValueCondition>) -> Result<bool, Error> {
    Ok(match cond {
        None => ctx.delete_key(key),
        Some(cond) => {
            let holds = match ctx.write_string(key)? {
                None => return Ok(false),
                Some(current) => cond.holds(current)?,
            };
            holds && ctx.delete_key(key)
        }
    })
}

/// INCREX's parsed request (Redis 8.8; NX and XX are Valkey 9.2's).
#[derive(Debug)]
pub struct IncrExOptions {
    pub by: IncrBy,
    pub lower: Option<IncrNum>,
    pub upper: Option<IncrNum>,
    pub saturate: bool,
    pub expire: IncrExExpire,
    /// ENX: set the expiry only when the key has none.
    pub only_if_no_ttl: bool,
    /// NX (true) or XX (false): only when the key is absent / present.
    pub existence: Option<bool>,
}

/// The increment: an integer, or a long double (BYFLOAT).
#[derive(Debug, Clone, Copy)]
pub enum IncrBy {
    Int(i64),
    Float(LongDouble),
}

/// A bound, in the mode of the increment.
#[derive(Debug, Clone, Copy)]
pub enum IncrNum {
    Int(i64),
    Float(LongDouble),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncrExExpire {
    /// Keep whatever TTL the key has.
    Keep,
    Persist,
    At(ExpireArg),
}

/// Parses INCREX's options. Every token may appear once, in any order;
/// repeated or conflicting tokens are a syntax error, as is an unknown
/// one. Numbers are read after the whole line parsed, so a syntax error
/// wins over a bad number (Redis's order).
pub fn parse_increx_options(args: &[&[u8]]) -> Result<IncrExOptions, Error> {
    let (mut by_int, mut by_float) = (None, None);
    let (mut lower, mut upper) = (None, None);
    let mut saturate = false;
    type ExpireOpt<'a> = Option<(fn(i64) -> ExpireArg, &'a [u8])>;
    let mut expire: ExpireOpt = None;
    let mut persist = false;
    let mut enx = false;
    let mut existence = None;
    let mut a = Args::new(args);
    // Each option once; a repeated or conflicting one is a syntax error.
    let once = |free: bool| if free { Ok(()) } else { Err(Error::SYNTAX) };
    while !a.is_empty() {
        if let Some((i, value)) = a.option_of(EXPIRE_OPTIONS) {
            once(expire.is_none() && !persist)?;
            expire = Some((EXPIRE_KINDS[i], value));
        } else if let Some(n) = a.option("BYINT") {
            once(by_int.is_none() && by_float.is_none())?;
            by_int = Some(n);
        } else if let Some(f) = a.option("BYFLOAT") {
            once(by_int.is_none() && by_float.is_none())?;
            by_float = Some(f);
        } else if let Some(l) = a.option("LBOUND") {
            once(lower.is_none())?;
            lower = Some(l);
        } else if let Some(u) = a.option("UBOUND") {
            once(upper.is_none())?;
            upper = Some(u);
        } else if a.flag("SATURATE") {
            once(!saturate)?;
            saturate = true;
        } else if a.flag("PERSIST") {
            once(!persist && expire.is_none() && !enx)?;
            persist = true;
        } else if a.flag("ENX") {
            once(!enx && !persist)?;
            enx = true;
        } else if a.flag("NX") {
            once(existence.is_none())?;
            existence = Some(true);
        } else if a.flag("XX") {
            once(existence.is_none())?;
            existence = Some(false);
        } else {
            return Err(Error::SYNTAX);
        }
    }
    if enx && expire.is_none() {
        return Err(Error::err("ENX flag requires an expiration"));
    }
    let float = by_float.is_some();
    let by = match (by_int, by_float) {
        (Some(n), _) => IncrBy::Int(
            parse_i64(n)
                .ok_or_else(|| Error::err("Increment is not an integer or out of range"))?,
        ),
        (_, Some(f)) => {
            let f =
                LongDouble::parse(f).ok_or_else(|| Error::err("Increment is not a valid float"))?;
            if f.is_infinite() {
                return Err(Error::err("BYFLOAT increment cannot be Infinity"));
            }
            IncrBy::Float(f)
        }
        _ => IncrBy::Int(1),
    };
    let bound = |arg: Option<&[u8]>, name: &str| -> Result<Option<IncrNum>, Error> {
        let Some(arg) = arg else { return Ok(None) };
        if float {
            LongDouble::parse(arg)
                .map(|v| Some(IncrNum::Float(v)))
                .ok_or_else(|| Error::err(format_args!("{name} is not a valid float")))
        } else {
            parse_i64(arg)
                .map(|v| Some(IncrNum::Int(v)))
                .ok_or_else(|| Error::err(format_args!("{name} is not an integer or out of range")))
        }
    };
    let lower = bound(lower, "LBOUND")?;
    let upper = bound(upper, "UBOUND")?;
    let inverted = match (lower, upper) {
        (Some(IncrNum::Int(l)), Some(IncrNum::Int(u))) => l > u,
        (Some(IncrNum::Float(l)), u) => {
            // An infinite LBOUND is above the default UBOUND (LDBL_MAX).
            let u = match u {
                Some(IncrNum::Float(u)) => u,
                _ => LongDouble::max(false),
            };
            l.cmp(&u) == std::cmp::Ordering::Greater
        }
        (None, Some(IncrNum::Float(u))) => {
            LongDouble::max(true).cmp(&u) == std::cmp::Ordering::Greater
        }
        _ => false,
    };
    if inverted {
        return Err(Error::err("LBOUND can't be greater than UBOUND"));
    }
    let expire = match expire {
        Some((kind, n)) => IncrExExpire::At(kind(arg_i64(n)?)),
        None if persist => IncrExExpire::Persist,
        None => IncrExExpire::Keep,
    };
    Ok(IncrExOptions {
        by,
        lower,
        upper,
        saturate,
        expire,
        only_if_no_ttl: enx,
        existence,
    })
}

/// INCREX's outcome: the value after the call and the increment applied
/// (0 when the call was refused), as integers or as long doubles.
#[derive(Debug, Clone, Copy)]
pub enum IncrExOutcome {
    Int(i64, i64),
    Float(LongDouble, LongDouble),
}

/// INCREX (Redis 8.8): INCRBY / INCRBYFLOAT with bounds and an expiry in
/// one step. An absent key counts as 0. A result outside the bounds (or
/// the type's range) is refused: the reply is [current, 0] and neither
/// the value nor the TTL changes, and an absent key stays absent, unless
/// SATURATE clamps the result to the bound. Without an expiry option the
/// key keeps its TTL; ENX sets the expiry only on a key that has none.
pub fn increx(ctx: &mut Ctx, key: &[u8], opts: &IncrExOptions) -> Result<IncrExOutcome, Error> {
    // The expiry is validated before the key is looked at.
    let expire_at = match opts.expire {
        IncrExExpire::At(e) => Some(e.to_absolute_ms(ctx.now_ms, "increx")?),
        _ => None,
    };
    let (current, had_ttl) = match ctx.lookup_write(key) {
        None => (None, false),
        Some(obj) => match &obj.value {
            Value::Str(s) => (Some(s.to_vec()), obj.expire_at().is_some()),
            _ => return Err(Error::WRONGTYPE),
        },
    };
    let exists = current.is_some();
    let (outcome, write) = match opts.by {
        IncrBy::Int(incr) => {
            let cur = match &current {
                Some(s) => parse_i64(s).ok_or(Error::NOT_INTEGER)?,
                None => 0,
            };
            let lb = match opts.lower {
                Some(IncrNum::Int(l)) => l,
                _ => i64::MIN,
            };
            let ub = match opts.upper {
                Some(IncrNum::Int(u)) => u,
                _ => i64::MAX,
            };
            let target = match cur.checked_add(incr) {
                Some(v) => Some(v),
                None if opts.saturate => Some(if incr > 0 { i64::MAX } else { i64::MIN }),
                None => None,
            };
            let value = target.and_then(|v| {
                if v > ub {
                    opts.saturate.then_some(ub)
                } else if v < lb {
                    opts.saturate.then_some(lb)
                } else {
                    Some(v)
                }
            });
            match value {
                Some(v) => {
                    let delta = v
                        .checked_sub(cur)
                        .ok_or_else(|| Error::err("applied increment would overflow"))?;
                    (IncrExOutcome::Int(v, delta), true)
                }
                None => (IncrExOutcome::Int(cur, 0), false),
            }
        }
        IncrBy::Float(incr) => {
            let cur = match &current {
                Some(s) => LongDouble::parse(s).ok_or(Error::NOT_FLOAT)?,
                None => LongDouble::from_i64(0),
            };
            if cur.is_infinite() {
                return Err(Error::err("value cannot be Infinity"));
            }
            let lb = match opts.lower {
                Some(IncrNum::Float(l)) => l,
                _ => LongDouble::max(true),
            };
            let ub = match opts.upper {
                Some(IncrNum::Float(u)) => u,
                _ => LongDouble::max(false),
            };
            let sum = cur.add(&incr);
            let target = if sum.is_finite() {
                Some(sum)
            } else if opts.saturate {
                Some(LongDouble::max(sum.cmp(&cur) == std::cmp::Ordering::Less))
            } else {
                None
            };
            use std::cmp::Ordering::{Greater, Less};
            let value = target.and_then(|v| {
                if v.cmp(&ub) == Greater {
                    opts.saturate.then_some(ub)
                } else if v.cmp(&lb) == Less {
                    opts.saturate.then_some(lb)
                } else {
                    Some(v)
                }
            });
            match value {
                Some(v) => {
                    let delta = v.sub(&cur);
                    if !delta.is_finite() {
                        return Err(Error::err("applied increment would be Infinity"));
                    }
                    (IncrExOutcome::Float(v, delta), true)
                }
                None => (IncrExOutcome::Float(cur, LongDouble::from_i64(0)), false),
            }
        }
    };
    // NX / XX refuse like an out-of-bounds result: [current, 0].
    let refused_by_existence = opts.existence.is_some_and(|nx| nx == exists);
    if !write || refused_by_existence {
        return Ok(match outcome {
            IncrExOutcome::Int(..) => {
                let cur = match &current {
                    Some(s) => parse_i64(s).unwrap_or(0),
                    None => 0,
                };
                IncrExOutcome::Int(cur, 0)
            }
            IncrExOutcome::Float(..) => {
                let cur = match &current {
                    Some(s) => LongDouble::parse(s).unwrap_or(LongDouble::from_i64(0)),
                    None => LongDouble::from_i64(0),
                };
                IncrExOutcome::Float(cur, LongDouble::from_i64(0))
            }
        });
    }
    let text = match outcome {
        IncrExOutcome::Int(v, _) => CompactBytes::from_i64(v),
        IncrExOutcome::Float(v, _) => CompactBytes::from_slice(&v.to_human_string()),
    };
    let event = match outcome {
        IncrExOutcome::Int(..) => "incrby",
        IncrExOutcome::Float(..) => "incrbyfloat",
    };
    ctx.store(key, Value::Str(text), true, notify::STRING, event);
    match (opts.expire, expire_at) {
        (IncrExExpire::Persist, _) if ctx.persist(key) => {
            ctx.notify(notify::GENERIC, "persist", key);
        }
        (IncrExExpire::Persist, _) => {}
        (_, Some(at)) if !(opts.only_if_no_ttl && had_ttl) => {
            ctx.set_expire_at(key, at);
            ctx.notify(notify::GENERIC, "expire", key);
        }
        _ => {}
    }
    Ok(outcome)
}

fn check_string_length(ctx: &Ctx, size: u64, append: u64) -> Result<(), Error> {
    let max = ctx
        .engine
        .config()
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
    // Propagated without GET (Redis's setGenericCommand) and without the
    // comparison that decided it (IFEQ and friends, which a Redis replica
    // does not know): what was written.
    let conditional = !matches!(opts.condition, SetCondition::Always);
    if outcome.written && (opts.get || conditional) && !ctx.effects.replaced {
        let mut argv: Vec<&[u8]> = vec![b"SET", args[1], args[2]];
        if opts.keep_ttl {
            argv.push(b"KEEPTTL");
        }
        let at;
        if let Some(ExpireArg::PxAt(ms)) = opts.expire {
            at = ms.to_string();
            argv.extend([b"PXAT".as_slice(), at.as_bytes()]);
        }
        ctx.propagate_as(&argv);
    }
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
            ctx.propagate_as(&[b"DEL", key]);
            ctx.notify(notify::GENERIC, "del", key);
        } else {
            let at = at.to_string();
            ctx.propagate_as(&[b"PEXPIREAT", key, at.as_bytes()]);
            ctx.notify(notify::GENERIC, "expire", key);
        }
    } else if opts.persist && ctx.persist(key) {
        ctx.propagate_as(&[b"PERSIST", key]);
        ctx.notify(notify::GENERIC, "persist", key);
    }
    Ok(())
}

fn getdel_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(value) = ctx.read_string(args[1])?.map(|s| s.clone()) else {
        ctx.out.null();
        return Ok(());
    };
    ctx.out.bulk(&value);
    ctx.delete_key(args[1]);
    // Redis propagates GETDEL as DEL.
    ctx.propagate_as(&[b"DEL", args[1]]);
    Ok(())
}

fn getset_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let old = ctx.read_string(args[1])?.map(|s| s.clone());
    ctx.store(args[1], Value::str(args[2]), false, notify::STRING, "set");
    // Redis propagates GETSET as SET.
    ctx.propagate_as(&[b"SET", args[1], args[2]]);
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
        ctx.store(kv[0], Value::str(kv[1]), false, notify::STRING, "set");
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
    ctx.propagate_as(&[b"SET", args[1], &text, b"KEEPTTL"]);
    ctx.out.bulk(&text);
    Ok(())
}

fn delex_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut a = Args::new(&args[2..]);
    let cond = match a.is_empty() {
        true => None,
        false => Some(ValueCondition::take(&mut a).ok_or(Error::SYNTAX)?),
    };
    a.finish()?;
    let deleted = delete_if(ctx, args[1], cond)?;
    ctx.out.int(deleted as i64);
    Ok(())
}

/// DELIFEQ (Valkey 9.0): DELEX key IFEQ value.
fn delifeq_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let deleted = delete_if(ctx, args[1], Some(ValueCondition::Eq(args[2])))?;
    ctx.out.int(deleted as i64);
    Ok(())
}

fn digest_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match ctx.lookup_read_and_out(args[1]) {
        (
            Some(Object {
                value: Value::Str(s),
                ..
            }),
            out,
        ) => out.bulk(&string_digest(s)),
        (Some(_), _) => return Err(Error::WRONGTYPE),
        (None, out) => out.null(),
    }
    Ok(())
}

/// Logs the string at `key` as it now is, in place of the call: SET with
/// its absolute deadline, or DEL when the key is gone. For commands whose
/// replay could differ (they read the clock, or compute in floating
/// point); a key of another type leaves the call logged as it was.
pub fn log_string_state(ctx: &mut Ctx, key: &[u8]) {
    if !ctx.propagating() || ctx.dirty == 0 {
        return;
    }
    let state = ctx.lookup_no_touch(key).map(|o| match &o.value {
        Value::Str(s) => Some((s.to_vec(), o.expire_at())),
        _ => None,
    });
    match state {
        None => ctx.propagate_as(&[b"DEL", key]),
        Some(Some((v, Some(at)))) => {
            let at = at.to_string();
            ctx.propagate_as(&[b"SET", key, &v, b"PXAT", at.as_bytes()]);
        }
        Some(Some((v, None))) => ctx.propagate_as(&[b"SET", key, &v]),
        Some(None) => {}
    }
}

fn increx_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let opts = parse_increx_options(&args[2..])?;
    let outcome = increx(ctx, args[1], &opts)?;
    // Its expiry options are relative and its floats long doubles: the
    // log gets the result.
    log_string_state(ctx, args[1]);
    match outcome {
        IncrExOutcome::Int(v, d) => {
            ctx.out.array(2);
            ctx.out.int(v);
            ctx.out.int(d);
        }
        // Redis's addReplyHumanLongDouble: bulk strings in RESP2,
        // doubles in RESP3.
        IncrExOutcome::Float(v, d) => {
            ctx.out.array(2);
            ctx.out.double_text(&v.to_human_string());
            ctx.out.double_text(&d.to_human_string());
        }
    }
    Ok(())
}

fn append_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, tail) = (args[1], args[2]);
    let max = ctx
        .engine
        .config()
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
            let now = ctx.now_ms;
            let (db, h) = ctx.locate(key);
            db.insert_new(h, key, Value::str(tail), now);
            tail.len()
        }
    };
    // One change, whether the key was created or extended, as Redis counts.
    ctx.changed(key, notify::STRING, "append");
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
        ctx.store(
            key,
            Value::Str(CompactBytes::from_vec(buf)),
            false,
            notify::STRING,
            "setrange",
        );
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
    ctx.changed(key, notify::STRING, "setrange");
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
    let mut a = Args::new(args);
    while !a.is_empty() {
        if a.flag("IDX") {
            o.idx = true;
        } else if a.flag("LEN") {
            o.len = true;
        } else if a.flag("WITHMATCHLEN") {
            o.with_match_len = true;
        } else if let Some(n) = a.option("MINMATCHLEN") {
            o.min_match_len = arg_i64(n)?.max(0);
        } else {
            return Err(Error::SYNTAX);
        }
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
        .config()
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

/// SET reads its key only with GET (Redis's setGetKeys).
fn set_key_flags(argv: &[&[u8]]) -> u32 {
    if argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) {
        RW_ACCESS_UPDATE
    } else {
        OW_UPDATE
    }
}

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "set",
        arity: -3,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE | kflag::VARIABLE_FLAGS)],
        key_spec_notes: &[(0, "RW and ACCESS due to the optional `GET` argument")],
        key_flags_fn: Some(set_key_flags),
        group: Group::String,
        since: "1.0.0",
        summary: "Set the string value of a key",
        complexity: "O(1)",
        history: &[("2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."), ("6.0.0", "Added the `KEEPTTL` option."), ("6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."), ("7.0.0", "Allowed the `NX` and `GET` options to be used together.")],
        syntax: "key:key value:string [condition:oneof(NX|XX|IFEQ ifeq-value:string|IFNE ifne-value:string|IFDEQ ifdeq-digest:integer|IFDNE ifdne-digest:integer)]{since:2.6.12} [GET]{since:6.2.0} [expiration:oneof(EX seconds:integer{since:2.6.12}|PX milliseconds:integer{since:2.6.12}|EXAT unix-time-seconds:unix-time{since:6.2.0}|PXAT unix-time-milliseconds:unix-time{since:6.2.0}|KEEPTTL{since:6.0.0})]",
        handler: set_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "setnx",
        arity: 3,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, kflag::OW | kflag::INSERT)],
        group: Group::String,
        since: "1.0.0",
        summary: "Set the value of a key, only if the key does not exist",
        complexity: "O(1)",
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
        summary: "Set the value and expiration of a key",
        complexity: "O(1)",
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
        summary: "Set the value and expiration in milliseconds of a key",
        complexity: "O(1)",
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
        since: "1.0.0",
        summary: "Get the value of a key",
        complexity: "O(1)",
        syntax: "key:key",
        handler: get_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getex",
        arity: -2,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        key_spec_notes: &[(0, "RW and UPDATE because it changes the TTL")],
        group: Group::String,
        since: "6.2.0",
        summary: "Get the value of a key and optionally set its expiration",
        complexity: "O(1)",
        syntax: "key:key [expiration:oneof(EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|PERSIST)]",
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
        summary: "Get the value of a key and delete the key",
        complexity: "O(1)",
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
        since: "1.0.0",
        summary: "Set the string value of a key and return its old value",
        complexity: "O(1)",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`SET` with the `!GET` argument",
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
        since: "1.0.0",
        summary: "Get the values of all the given keys",
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
        summary: "Set multiple keys to multiple values",
        complexity: "O(N) where N is the number of keys to set.",
        syntax: "key_value:block(key:key value:string)...",
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
        summary: "Set multiple keys to multiple values, only if none of the keys exist",
        complexity: "O(N) where N is the number of keys to set.",
        syntax: "key_value:block(key:key value:string)...",
        tips: &["request_policy:multi_shard", "response_policy:agg_min"],
        handler: msetnx_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "incr",
        arity: 2,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::String,
        since: "1.0.0",
        summary: "Increment the integer value of a key by one",
        complexity: "O(1)",
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
        since: "1.0.0",
        summary: "Decrement the integer value of a key by one",
        complexity: "O(1)",
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
        since: "1.0.0",
        summary: "Increment the integer value of a key by the given amount",
        complexity: "O(1)",
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
        since: "1.0.0",
        summary: "Decrement the integer value of a key by the given number",
        complexity: "O(1)",
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
        summary: "Increment the float value of a key by the given amount",
        complexity: "O(1)",
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
        summary: "Append a value to a key",
        complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
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
        summary: "Get the length of the value stored in a key",
        complexity: "O(1)",
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
        summary: "Overwrite part of a string at key starting at the specified offset",
        complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
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
        summary: "Get a substring of the string stored at a key",
        complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
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
        since: "1.0.0",
        summary: "Get a substring of the string stored at a key",
        complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
        doc_flags: &["deprecated"],
        deprecated_since: "2.0.0",
        replaced_by: "`GETRANGE`",
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
        summary: "Find longest common substring",
        complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
        syntax: "key1:key key2:key{key_spec_index:0} [LEN] [IDX] [MINMATCHLEN len:integer] [WITHMATCHLEN]",
        handler: lcs_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "delex",
        arity: -2,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::DELETE)],
        group: Group::String,
        since: "8.4.0",
        summary: "Conditionally removes the specified key based on value or hash digest comparison.",
        complexity: "O(1) for IFEQ/IFNE, O(N) for IFDEQ/IFDNE where N is the length of the string value.",
        syntax: "key:key [IFEQ ifeq-value:string|IFNE ifne-value:string|IFDEQ ifdeq-digest:integer|IFDNE ifdne-digest:integer]",
        handler: delex_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "delifeq",
        arity: 3,
        flags: flag::WRITE | flag::FAST,
        keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE)],
        group: Group::String,
        since: "9.0.0",
        summary: "Delete key if value matches string.",
        syntax: "key:key value:string",
        handler: delifeq_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "digest",
        arity: 2,
        flags: flag::READONLY | flag::FAST,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::String,
        since: "8.4.0",
        summary: "Returns the hash digest of a string value as a hexadecimal string.",
        complexity: "O(N) where N is the length of the string value.",
        syntax: "key:key",
        handler: digest_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "increx",
        arity: -2,
        flags: flag::WRITE | flag::DENYOOM | flag::FAST,
        keys: &[KeySpec::at(1, RW_ACCESS_UPDATE)],
        group: Group::String,
        since: "8.8.0",
        summary: "Increments the numeric value of a key by a number and sets its expiration time. Uses 0 as initial value if the key doesn't exist.",
        syntax: "key:key [BYFLOAT float:double|BYINT integer:integer] [SATURATE] [LBOUND lowerbound:string] [UBOUND upperbound:string] [EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|PERSIST] [ENX] [NX|XX]",
        handler: increx_command,
        ..CommandSpec::DEFAULT
    },
];

#[cfg(test)]
mod tests {
    use crate::test_support::{run, run_args, session};

    const NIL: &str = "$-1\r\n";
    const OK: &str = "+OK\r\n";
    const WRONGTYPE: &str =
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

    fn pttl(s: &mut crate::Session, key: &str) -> i64 {
        let r = run(s, &format!("pttl {key}"));
        r[1..].trim().parse().unwrap()
    }

    #[test]
    fn digest_is_xxh3_64_in_lowercase_hex() {
        let mut s = session();
        // Redis's DIGEST page example.
        run(&mut s, "set key1 Hello");
        run_args(&mut s, &[b"set", b"key1", b"Hello world"]);
        assert_eq!(run(&mut s, "digest key1"), "$16\r\nb6acb9d84a38ff74\r\n");
        // XXH3-64 of the empty input, the reference implementation's vector.
        run_args(&mut s, &[b"set", b"empty", b""]);
        assert_eq!(run(&mut s, "digest empty"), "$16\r\n2d06800538d394c2\r\n");
        // Integers digest as their text.
        run(&mut s, "set n 123");
        run(&mut s, "set t 123");
        run(&mut s, "append t 4");
        run(&mut s, "set t4 1234");
        assert_eq!(run(&mut s, "digest t"), run(&mut s, "digest t4"));
        assert_eq!(run(&mut s, "digest nokey"), NIL);
        run(&mut s, "hset h a 1");
        assert_eq!(run(&mut s, "digest h"), WRONGTYPE);
        assert_eq!(
            run(&mut s, "digest"),
            "-ERR wrong number of arguments for 'digest' command\r\n"
        );
    }

    #[test]
    fn set_value_conditions() {
        let mut s = session();
        run(&mut s, "set k v");
        assert_eq!(run(&mut s, "set k w ifeq x"), NIL);
        assert_eq!(run(&mut s, "get k"), "$1\r\nv\r\n");
        assert_eq!(run(&mut s, "set k w IFEQ v"), OK);
        assert_eq!(run(&mut s, "set k z ifne w"), NIL);
        assert_eq!(run(&mut s, "set k z ifne v"), OK);
        assert_eq!(run(&mut s, "get k"), "$1\r\nz\r\n");
        // A missing key: IFEQ/IFDEQ do not create it, IFNE/IFDNE do.
        assert_eq!(run(&mut s, "set a 1 ifeq x"), NIL);
        assert_eq!(run(&mut s, "set a 1 ifdeq 0000000000000000"), NIL);
        assert_eq!(run(&mut s, "exists a"), ":0\r\n");
        assert_eq!(run(&mut s, "set a 1 ifne x"), OK);
        assert_eq!(run(&mut s, "set b 1 ifdne 0000000000000000"), OK);
        assert_eq!(run(&mut s, "mget a b"), "*2\r\n$1\r\n1\r\n$1\r\n1\r\n");
        // With GET the previous value is returned whether or not the write
        // happened.
        assert_eq!(run(&mut s, "set k y ifeq nope get"), "$1\r\nz\r\n");
        assert_eq!(run(&mut s, "get k"), "$1\r\nz\r\n");
        assert_eq!(run(&mut s, "set k y get ifeq z"), "$1\r\nz\r\n");
        assert_eq!(run(&mut s, "get k"), "$1\r\ny\r\n");
        assert_eq!(run(&mut s, "set new y ifeq z get"), NIL);
        assert_eq!(run(&mut s, "exists new"), ":0\r\n");
        assert_eq!(run(&mut s, "set new y ifne z get"), NIL);
        assert_eq!(run(&mut s, "get new"), "$1\r\ny\r\n");
        // Digests: 16 hex characters, compared without case.
        let d = run(&mut s, "digest k");
        let d = d.split("\r\n").nth(1).unwrap().to_string();
        assert_eq!(run(&mut s, &format!("set k x ifdne {d}")), NIL);
        assert_eq!(
            run(&mut s, &format!("set k x ifdeq {}", d.to_uppercase())),
            OK
        );
        let d = run(&mut s, "digest k");
        let d = d.split("\r\n").nth(1).unwrap().to_string();
        assert_eq!(run(&mut s, &format!("set k x2 ifdeq {d}")), OK);
        assert_eq!(
            run(&mut s, "set k x ifdeq abc"),
            "-ERR must be exactly 16 hexadecimal characters\r\n"
        );
        assert_eq!(
            run(&mut s, "set k x ifdne 00000000000000000"),
            "-ERR must be exactly 16 hexadecimal characters\r\n"
        );
        // Another type is WRONGTYPE for every comparison, GET or not.
        run(&mut s, "hset h f v");
        for c in [
            "ifeq v",
            "ifne v",
            "ifdeq 0000000000000000",
            "ifdne 0000000000000000",
        ] {
            assert_eq!(run(&mut s, &format!("set h x {c}")), WRONGTYPE, "{c}");
        }
        assert_eq!(run(&mut s, "type h"), "+hash\r\n");
        // Conditions exclude each other and need their argument.
        for bad in [
            "set k v nx ifeq v",
            "set k v ifeq v xx",
            "set k v ifeq v ifne w",
            "set k v ifeq",
            "set k v ifdeq",
        ] {
            assert_eq!(run(&mut s, bad), "-ERR syntax error\r\n", "{bad}");
        }
    }

    #[test]
    fn refused_conditional_set_keeps_value_and_ttl() {
        let mut s = session();
        run(&mut s, "set k v px 100000");
        assert_eq!(run(&mut s, "set k w ifeq x px 5"), NIL);
        assert_eq!(run(&mut s, "set k w ifne v keepttl"), NIL);
        assert!(pttl(&mut s, "k") > 50_000);
        assert_eq!(run(&mut s, "get k"), "$1\r\nv\r\n");
        // A successful one applies its expiry option (none: the TTL goes).
        assert_eq!(run(&mut s, "set k w ifeq v keepttl"), OK);
        assert!(pttl(&mut s, "k") > 50_000);
        assert_eq!(run(&mut s, "set k x ifeq w"), OK);
        assert_eq!(pttl(&mut s, "k"), -1);
        assert_eq!(run(&mut s, "set k y ifeq x px 100000"), OK);
        assert!(pttl(&mut s, "k") > 50_000);
    }

    #[test]
    fn delex_and_delifeq() {
        let mut s = session();
        run(&mut s, "set k v");
        assert_eq!(run(&mut s, "delex k ifeq x"), ":0\r\n");
        assert_eq!(run(&mut s, "delex k ifne v"), ":0\r\n");
        assert_eq!(run(&mut s, "delex k ifdne 0000000000000000"), ":1\r\n");
        assert_eq!(run(&mut s, "exists k"), ":0\r\n");
        for c in [
            "ifeq v",
            "ifne v",
            "ifdeq 0000000000000000",
            "ifdne 0000000000000000",
        ] {
            assert_eq!(run(&mut s, &format!("delex k {c}")), ":0\r\n", "{c}");
        }
        run(&mut s, "set k v");
        let d = run(&mut s, "digest k");
        let d = d.split("\r\n").nth(1).unwrap().to_string();
        assert_eq!(run(&mut s, &format!("delex k IFDEQ {d}")), ":1\r\n");
        run(&mut s, "set k v");
        assert_eq!(run(&mut s, "delex k ifne w"), ":1\r\n");
        run(&mut s, "set k v");
        assert_eq!(run(&mut s, "delex k ifeq v"), ":1\r\n");
        // Without a condition it is DEL, of any type.
        run(&mut s, "hset h a 1");
        assert_eq!(run(&mut s, "delex h ifeq 1"), WRONGTYPE);
        assert_eq!(run(&mut s, "delex h"), ":1\r\n");
        assert_eq!(run(&mut s, "delex h"), ":0\r\n");
        assert_eq!(run(&mut s, "delex k ifeq"), "-ERR syntax error\r\n");
        assert_eq!(run(&mut s, "delex k ifgt v"), "-ERR syntax error\r\n");
        assert_eq!(run(&mut s, "delex k ifeq v x"), "-ERR syntax error\r\n");
        run(&mut s, "set k v");
        assert_eq!(
            run(&mut s, "delex k ifdeq 12"),
            "-ERR must be exactly 16 hexadecimal characters\r\n"
        );
        // DELIFEQ (Valkey 9.0).
        assert_eq!(run(&mut s, "delifeq k w"), ":0\r\n");
        assert_eq!(run(&mut s, "delifeq k v"), ":1\r\n");
        assert_eq!(run(&mut s, "delifeq k v"), ":0\r\n");
        run(&mut s, "hset h a 1");
        assert_eq!(run(&mut s, "delifeq h 1"), WRONGTYPE);
        assert_eq!(
            run(&mut s, "delifeq k"),
            "-ERR wrong number of arguments for 'delifeq' command\r\n"
        );
    }

    fn pair(a: i64, b: i64) -> String {
        format!("*2\r\n:{a}\r\n:{b}\r\n")
    }

    fn fpair(a: &str, b: &str) -> String {
        format!("*2\r\n${}\r\n{a}\r\n${}\r\n{b}\r\n", a.len(), b.len())
    }

    #[test]
    fn increx_integers_and_bounds() {
        let mut s = session();
        assert_eq!(run(&mut s, "increx c"), pair(1, 1));
        assert_eq!(run(&mut s, "increx c"), pair(2, 1));
        run(&mut s, "set c 100");
        assert_eq!(run(&mut s, "increx c BYINT 5"), pair(105, 5));
        assert_eq!(run(&mut s, "increx c byint -10"), pair(95, -10));
        assert_eq!(run(&mut s, "increx c byint 0"), pair(95, 0));
        // Out of bounds: refused, [current, 0]; SATURATE clamps.
        run(&mut s, "set c 10");
        assert_eq!(run(&mut s, "increx c byint 10 ubound 15"), pair(10, 0));
        assert_eq!(run(&mut s, "get c"), "$2\r\n10\r\n");
        assert_eq!(
            run(&mut s, "increx c byint 10 ubound 15 saturate"),
            pair(15, 5)
        );
        assert_eq!(
            run(&mut s, "increx c byint -20 lbound 5 saturate"),
            pair(5, -10)
        );
        assert_eq!(
            run(&mut s, "increx c byint -20 lbound 0 ubound 10"),
            pair(5, 0)
        );
        assert_eq!(run(&mut s, "increx c byint 5 ubound 10"), pair(10, 5));
        // A value already out of bounds: the result decides.
        run(&mut s, "set c 50");
        assert_eq!(run(&mut s, "increx c byint 5 ubound 30"), pair(50, 0));
        assert_eq!(
            run(&mut s, "increx c byint 5 ubound 30 saturate"),
            pair(30, -20)
        );
        run(&mut s, "set c 50");
        assert_eq!(run(&mut s, "increx c byint -25 ubound 30"), pair(25, -25));
        // Overflow: refused, or clamped to the type's limits.
        run(&mut s, "set c 9223372036854775800");
        assert_eq!(
            run(&mut s, "increx c byint 9223372036854775800"),
            pair(9223372036854775800, 0)
        );
        assert_eq!(
            run(&mut s, "increx c byint 9223372036854775800 saturate"),
            pair(i64::MAX, 7)
        );
        run(&mut s, "set c -9223372036854775800");
        assert_eq!(
            run(
                &mut s,
                "increx c byint -9223372036854775800 lbound -9223372036854775808 saturate"
            ),
            pair(i64::MIN, -8)
        );
        run(&mut s, "set c 9223372036854775800");
        assert_eq!(
            run(
                &mut s,
                "increx c byint 1 saturate ubound -9223372036854775808"
            ),
            "-ERR applied increment would overflow\r\n"
        );
        assert_eq!(run(&mut s, "get c"), "$19\r\n9223372036854775800\r\n");
        // A missing key counts as 0 and is not created when refused.
        assert_eq!(run(&mut s, "increx m byint 5 lbound 10"), pair(0, 0));
        assert_eq!(run(&mut s, "increx m byint 15 ubound 10"), pair(0, 0));
        assert_eq!(run(&mut s, "exists m"), ":0\r\n");
        assert_eq!(run(&mut s, "increx m lbound 5 saturate"), pair(5, 5));
        assert_eq!(run(&mut s, "object encoding m"), "$3\r\nint\r\n");
    }

    #[test]
    fn increx_floats() {
        let mut s = session();
        run(&mut s, "set f 1.5");
        assert_eq!(run(&mut s, "increx f byfloat 0.25"), fpair("1.75", "0.25"));
        assert_eq!(run(&mut s, "increx f byfloat 1"), fpair("2.75", "1"));
        run(&mut s, "set f 10");
        assert_eq!(
            run(&mut s, "increx f byfloat 100 ubound 42.5 saturate"),
            fpair("42.5", "32.5")
        );
        run(&mut s, "set f 0");
        assert_eq!(
            run(&mut s, "increx f byfloat -100 lbound -5.5 saturate"),
            fpair("-5.5", "-5.5")
        );
        run(&mut s, "set f 10");
        assert_eq!(
            run(&mut s, "increx f byfloat 10 ubound 15.5"),
            fpair("10", "0")
        );
        // Long double precision, as INCRBYFLOAT.
        run(&mut s, "set f 10.5");
        assert_eq!(run(&mut s, "increx f byfloat 0.1"), fpair("10.6", "0.1"));
        // Integers stored by BYINT are floats for BYFLOAT, not the reverse.
        assert_eq!(
            run(&mut s, "increx f byint 1"),
            "-ERR value is not an integer or out of range\r\n"
        );
        run(&mut s, "set f inf");
        assert_eq!(
            run(&mut s, "increx f byfloat 1"),
            "-ERR value cannot be Infinity\r\n"
        );
        run(&mut s, "set f 10");
        assert_eq!(
            run(
                &mut s,
                "increx f byfloat 1.0 lbound inf ubound inf saturate"
            ),
            "-ERR applied increment would be Infinity\r\n"
        );
        assert_eq!(
            run(&mut s, "increx f byfloat 1.0 ubound inf"),
            fpair("11", "1")
        );
        assert_eq!(
            run(&mut s, "increx f byfloat 1.0 lbound -inf ubound -inf"),
            fpair("11", "0")
        );
        assert_eq!(
            run(&mut s, "increx m byfloat 15.5 ubound 10"),
            fpair("0", "0")
        );
        assert_eq!(run(&mut s, "exists m"), ":0\r\n");
        // RESP3: doubles.
        run(&mut s, "hello 3");
        run(&mut s, "set f 2");
        assert_eq!(
            run(&mut s, "increx f byfloat 0.5"),
            "*2\r\n,2.5\r\n,0.5\r\n"
        );
        assert_eq!(run(&mut s, "increx i byint 5"), "*2\r\n:5\r\n:5\r\n");
    }

    #[test]
    fn increx_expiry_options() {
        let mut s = session();
        run(&mut s, "set c 10");
        // No option keeps the TTL; a refused call touches nothing.
        run(&mut s, "pexpire c 100000");
        assert_eq!(
            run(&mut s, "increx c byint 100 ubound 15 ex 5"),
            pair(10, 0)
        );
        assert!(pttl(&mut s, "c") > 50_000);
        assert_eq!(run(&mut s, "increx c byint 1"), pair(11, 1));
        assert!(pttl(&mut s, "c") > 50_000);
        assert_eq!(run(&mut s, "increx c byint 1 persist"), pair(12, 1));
        assert_eq!(pttl(&mut s, "c"), -1);
        assert_eq!(run(&mut s, "increx c byint 1 px 200000"), pair(13, 1));
        assert!(pttl(&mut s, "c") > 150_000);
        // ENX: only a key without TTL gets one.
        assert_eq!(run(&mut s, "increx c byint 1 px 5000 enx"), pair(14, 1));
        assert!(pttl(&mut s, "c") > 150_000);
        run(&mut s, "persist c");
        assert_eq!(run(&mut s, "increx c byint 1 px 5000 enx"), pair(15, 1));
        let t = pttl(&mut s, "c");
        assert!(t > 0 && t <= 5000, "{t}");
        // A deadline in the past deletes the key (ENX on a key with a TTL
        // leaves it).
        assert_eq!(run(&mut s, "increx c byint 1 exat 1 enx"), pair(16, 1));
        assert_eq!(run(&mut s, "exists c"), ":1\r\n");
        assert_eq!(run(&mut s, "increx c byint 1 pxat 1"), pair(17, 1));
        assert_eq!(run(&mut s, "exists c"), ":0\r\n");
        assert_eq!(run(&mut s, "increx n exat 1"), pair(1, 1));
        assert_eq!(run(&mut s, "exists n"), ":0\r\n");
        // Valkey's NX / XX.
        assert_eq!(run(&mut s, "increx x xx"), pair(0, 0));
        assert_eq!(run(&mut s, "exists x"), ":0\r\n");
        assert_eq!(run(&mut s, "increx x nx"), pair(1, 1));
        assert_eq!(run(&mut s, "increx x nx"), pair(1, 0));
        assert_eq!(run(&mut s, "increx x xx byint 2"), pair(3, 2));
    }

    #[test]
    fn increx_argument_errors() {
        let mut s = session();
        run(&mut s, "set c 5");
        let syntax = "-ERR syntax error\r\n";
        for bad in [
            "increx c foo",
            "increx c byint 1 foo",
            "increx c byint 1 byfloat 1.5",
            "increx c byfloat 1.5 byint 1",
            "increx c byint 1 ex 10 px 5000",
            "increx c ex 10 persist",
            "increx c persist ex 10",
            "increx c persist enx",
            "increx c enx persist",
            "increx c byint 1 byint 2",
            "increx c lbound 0 lbound 1",
            "increx c saturate saturate",
            "increx c sat",
            "increx c enx enx ex 10",
            "increx c persist persist",
            "increx c ex 10 ex 20",
            "increx c byint",
            "increx c lbound",
            "increx c nx xx",
        ] {
            assert_eq!(run(&mut s, bad), syntax, "{bad}");
        }
        assert_eq!(
            run(&mut s, "increx c enx"),
            "-ERR ENX flag requires an expiration\r\n"
        );
        assert_eq!(
            run(&mut s, "increx c byint abc"),
            "-ERR Increment is not an integer or out of range\r\n"
        );
        assert_eq!(
            run(&mut s, "increx c byint 1.5"),
            "-ERR Increment is not an integer or out of range\r\n"
        );
        assert_eq!(
            run(&mut s, "increx c byfloat abc"),
            "-ERR Increment is not a valid float\r\n"
        );
        assert_eq!(
            run(&mut s, "increx c byfloat +inf"),
            "-ERR BYFLOAT increment cannot be Infinity\r\n"
        );
        assert_eq!(
            run(&mut s, "increx c ubound abc"),
            "-ERR UBOUND is not an integer or out of range\r\n"
        );
        assert_eq!(
            run(&mut s, "increx c byfloat 1 lbound abc"),
            "-ERR LBOUND is not a valid float\r\n"
        );
        assert_eq!(
            run(&mut s, "increx c byint 1 lbound 10 ubound 5"),
            "-ERR LBOUND can't be greater than UBOUND\r\n"
        );
        assert_eq!(
            run(&mut s, "increx c byfloat 1.0 lbound inf"),
            "-ERR LBOUND can't be greater than UBOUND\r\n"
        );
        assert_eq!(
            run(&mut s, "increx c byint 1 ex 0"),
            "-ERR invalid expire time in 'increx' command\r\n"
        );
        assert_eq!(
            run(&mut s, "increx c byint 1 ex x"),
            "-ERR value is not an integer or out of range\r\n"
        );
        run(&mut s, "set str hello");
        assert_eq!(
            run(&mut s, "increx str byfloat 1.5"),
            "-ERR value is not a valid float\r\n"
        );
        run(&mut s, "hset h a 1");
        assert_eq!(run(&mut s, "increx h"), WRONGTYPE);
        assert_eq!(run(&mut s, "get c"), "$1\r\n5\r\n");
    }
}
