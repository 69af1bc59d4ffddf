//! The redis-cell family: CL.THROTTLE, rate limiting with the generic cell
//! rate algorithm (GCRA), as the redis-cell module defines it and
//! Dragonfly ships it built in.
//!
//! The state of a limiter is one string key holding its theoretical
//! arrival time (TAT) in Unix nanoseconds, expiring when the limiter is
//! back to full capacity; a client that knows redis-cell reads and writes
//! the same data. `gcra` is redis-cell's `RateLimiter::rate_limit` step for
//! step (nanosecond durations, truncating conversions, the rounding of the
//! replies), so the same calls at the same times give the same replies,
//! errors included.

use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::keyspace::{CompactBytes, Object, Value};
use crate::pubsub::notify;
use crate::util::time::now_ns;
use crate::Error;

const NS_PER_SEC: i128 = 1_000_000_000;

/// A CL.THROTTLE request: `count` actions per `period` seconds, with
/// bursts of up to `max_burst` more, for `quantity` actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    pub max_burst: i64,
    pub count: i64,
    pub period: i64,
    pub quantity: i64,
}

/// What one CL.THROTTLE call decides. Durations are in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub limited: bool,
    pub limit: i64,
    pub remaining: i64,
    /// Until the request would be allowed; -1 s when it was allowed (or
    /// can never be, being larger than the burst).
    pub retry_after: i128,
    /// Until the limiter is back to full capacity (the key's TTL).
    pub reset_after: i128,
    /// The TAT to store, when the request was allowed.
    pub new_tat: Option<i64>,
}

/// redis-cell's error replies carry their own code ("Cell error: ...").
fn cell_error(msg: impl std::fmt::Display) -> Error {
    Error::raw(format!("Cell error: {msg}"))
}

/// redis-cell's generic errors read "Store error: <message>".
fn store_error(msg: impl std::fmt::Display) -> Error {
    cell_error(format_args!("Store error: {msg}"))
}

/// An argument parsed as Rust's `i64::from_str` parses it (redis-cell's
/// rule: a leading '+' is fine, spaces are not).
fn parse_arg(arg: &[u8]) -> Result<i64, Error> {
    let text = String::from_utf8_lossy(arg);
    text.parse::<i64>()
        .map_err(|_| store_error(format_args!("Couldn't parse as integer: {text}")))
}

/// Parses `key max_burst count period [quantity]` (argv without the name).
pub fn parse_throttle(args: &[&[u8]]) -> Result<Throttle, Error> {
    if args.len() != 4 && args.len() != 5 {
        return Err(store_error(
            "Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]",
        ));
    }
    Ok(Throttle {
        max_burst: parse_arg(args[1])?,
        count: parse_arg(args[2])?,
        period: parse_arg(args[3])?,
        quantity: match args.get(4) {
            Some(q) => parse_arg(q)?,
            None => 1,
        },
    })
}

/// The stored TAT, read as redis-cell reads it: a value that is not an
/// integer (another type reads as an empty string) is Rust's parse error.
pub fn parse_tat(stored: &[u8]) -> Result<i64, Error> {
    String::from_utf8_lossy(stored)
        .parse::<i64>()
        .map_err(cell_error)
}

/// redis-cell's `RateLimiter::rate_limit`, from the stored TAT (None when
/// the key is absent) and the current time.
pub fn gcra(t: &Throttle, tat: Option<i64>, now: i64) -> Result<Decision, Error> {
    // Rate::per_period: the period in nanoseconds (truncated to 64 bits,
    // as `whole_nanoseconds() as i64` does), divided in floating point.
    let period_ns = ((t.period as i128) * NS_PER_SEC) as i64;
    let emission = if t.count == 0 || period_ns == 0 {
        0
    } else {
        ((period_ns as f64) / (t.count as f64)) as i64
    };
    // The limiter's arithmetic is i64 nanoseconds, which wraps in a
    // release build of redis-cell; it is reproduced so.
    let limit = t.max_burst.wrapping_add(1);
    let tolerance = emission.wrapping_mul(limit) as i128;
    if emission == 0 {
        return Err(store_error("Zero rates are not supported"));
    }
    let increment = emission.wrapping_mul(t.quantity) as i128;
    let now = now as i128;
    let tat = tat.map_or(now, |v| v as i128);
    let new_tat = now.max(tat) + increment;
    let diff = now - (new_tat - tolerance);
    let mut retry_after = -NS_PER_SEC;
    let (limited, ttl, stored) = if diff < 0 {
        if increment <= tolerance {
            retry_after = -diff;
        }
        (true, tat - now, None)
    } else {
        let stored = i64::try_from(new_tat).map_err(|_| store_error("Time out of range"))?;
        (false, new_tat - now, Some(stored))
    };
    let next = tolerance - ttl;
    let remaining = if next > -(emission as i128) {
        // Whole microseconds, divided in floating point and truncated.
        ((next / 1000) as f64 / (emission as i128 / 1000) as f64) as i64
    } else {
        0
    };
    Ok(Decision {
        limited,
        limit,
        remaining,
        retry_after,
        reset_after: ttl,
        new_tat: stored,
    })
}

/// A duration in whole seconds, one more when it has a partial
/// millisecond or more (redis-cell rounds up so that a fast client does
/// not retry too early; sub-millisecond parts and negative ones do not
/// round).
pub fn round_up_seconds(ns: i128) -> i64 {
    let whole = ns / NS_PER_SEC;
    let millis = (ns % NS_PER_SEC) / 1_000_000;
    (whole + (millis > 0) as i128) as i64
}

/// CL.THROTTLE on the keyspace: reads the TAT, decides, stores the new TAT
/// with the TTL redis-cell gives it. `now` is in Unix nanoseconds.
pub fn throttle(ctx: &mut Ctx, key: &[u8], t: &Throttle, now: i64) -> Result<Decision, Error> {
    let tat = match ctx.lookup_write(key) {
        None => None,
        Some(Object {
            value: Value::Str(s),
            ..
        }) => Some(parse_tat(s)?),
        Some(_) => Some(parse_tat(b"")?),
    };
    let d = gcra(t, tat, now)?;
    if let Some(new_tat) = d.new_tat {
        // The module writes the value (which clears the TTL), then sets
        // the TTL in whole milliseconds: a negative one (a negative
        // quantity) fails after the write, a zero one expires the key.
        // The natural events of the write (redis-cell's module writes
        // notify nothing themselves).
        let tat = Value::Str(CompactBytes::from_i64(new_tat));
        ctx.store(key, tat, false, notify::STRING, "set");
        let ttl_ms = d.reset_after / 1_000_000;
        if ttl_ms < 0 {
            return Err(store_error("Error while setting key expire"));
        }
        let at = (ctx.now_ms as i128 + ttl_ms).min(i64::MAX as i128) as i64;
        ctx.set_expire_at(key, at);
        let event = if at <= ctx.now_ms as i64 {
            "del"
        } else {
            "expire"
        };
        ctx.notify(notify::GENERIC, event, key);
    }
    Ok(d)
}

fn throttle_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let t = parse_throttle(&args[1..])?;
    let d = throttle(ctx, args[1], &t, now_ns())?;
    // It reads the clock: the log gets the state it left.
    if d.new_tat.is_some() {
        crate::commands::strings::log_string_state(ctx, args[1]);
    }
    ctx.out.array(5);
    ctx.out.int(d.limited as i64);
    ctx.out.int(d.limit);
    ctx.out.int(d.remaining);
    ctx.out.int(round_up_seconds(d.retry_after));
    ctx.out.int(round_up_seconds(d.reset_after));
    Ok(())
}

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "cl.throttle",
    // The module checks its own arguments (and answers with its usage).
    arity: -1,
    flags: flag::WRITE,
    keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::UPDATE)],
    group: Group::Module,
    since: "0.2.0",
    summary: "Rate-limits an action with the generic cell rate algorithm: replies whether it is limited, the limit, the remaining capacity, and the seconds until a retry and until a full reset.",
    syntax: "key:key max_burst:integer count:integer period:integer [quantity:integer]",
    handler: throttle_command,
    ..CommandSpec::DEFAULT
}];

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    /// redis-cell's own `it_rate_limits` table: 5 per second burst
    /// (max_burst 4, 1 per second), at fixed times.
    #[test]
    fn redis_cell_reference_cases() {
        let start = 1_700_000_000 * S;
        let ms = |n: i64| n * 1_000_000;
        // (now, quantity, remaining, reset_after, retry_after, limited)
        let cases: &[(i64, i64, i64, i64, i64, bool)] = &[
            (start, 6, 5, 0, -S, true),
            (start, 1, 4, S, -S, false),
            (start, 1, 3, 2 * S, -S, false),
            (start, 1, 2, 3 * S, -S, false),
            (start, 1, 1, 4 * S, -S, false),
            (start, 1, 0, 5 * S, -S, false),
            (start, 1, 0, 5 * S, S, true),
            (start + ms(3000), 1, 2, ms(3000), -S, false),
            (start + ms(3100), 1, 1, ms(3900), -S, false),
            (start + ms(4000), 1, 1, ms(4000), -S, false),
            (start + ms(8000), 1, 4, ms(1000), -S, false),
            (start + ms(9500), 1, 4, ms(1000), -S, false),
            (start + ms(9500), 0, 4, S, -S, false),
            (start + ms(9500), 2, 2, 3 * S, -S, false),
            (start + ms(9500), 5, 2, 3 * S, 3 * S, true),
        ];
        let mut tat = None;
        for (i, &(now, quantity, remaining, reset, retry, limited)) in cases.iter().enumerate() {
            let t = Throttle {
                max_burst: 4,
                count: 1,
                period: 1,
                quantity,
            };
            let d = gcra(&t, tat, now).unwrap();
            assert_eq!(d.limited, limited, "case {i}");
            assert_eq!(d.limit, 5, "case {i}");
            assert_eq!(d.remaining, remaining, "case {i}");
            assert_eq!(d.reset_after, reset as i128, "case {i}");
            assert_eq!(d.retry_after, retry as i128, "case {i}");
            if let Some(n) = d.new_tat {
                tat = Some(n);
            }
        }
    }

    #[test]
    fn replies_round_up_partial_seconds() {
        assert_eq!(round_up_seconds(-S as i128), -1);
        assert_eq!(round_up_seconds(0), 0);
        assert_eq!(round_up_seconds(999_999), 0);
        assert_eq!(round_up_seconds(1_000_000), 1);
        assert_eq!(round_up_seconds(3 * S as i128 + 1), 3);
        assert_eq!(round_up_seconds(3 * S as i128 + 2_000_000), 4);
        assert_eq!(round_up_seconds(-2_500_000_000), -2);
    }

    #[test]
    fn argument_errors_are_redis_cells() {
        let usage = "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]";
        assert_eq!(parse_throttle(&[b"k"]).unwrap_err().text(), usage);
        assert_eq!(
            parse_throttle(&[b"k", b"1", b"2", b"3", b"4", b"5"])
                .unwrap_err()
                .text(),
            usage
        );
        assert_eq!(
            parse_throttle(&[b"k", b"x", b"2", b"3"])
                .unwrap_err()
                .text(),
            "Cell error: Store error: Couldn't parse as integer: x"
        );
        // Rust's integer syntax: '+' is accepted.
        assert_eq!(
            parse_throttle(&[b"k", b"+1", b"2", b"3"])
                .unwrap()
                .max_burst,
            1
        );
        let zero = Throttle {
            max_burst: 1,
            count: 0,
            period: 1,
            quantity: 1,
        };
        assert_eq!(
            gcra(&zero, None, 0).unwrap_err().text(),
            "Cell error: Store error: Zero rates are not supported"
        );
        assert_eq!(
            parse_tat(b"").unwrap_err().text(),
            "Cell error: cannot parse integer from empty string"
        );
        assert_eq!(
            parse_tat(b"abc").unwrap_err().text(),
            "Cell error: invalid digit found in string"
        );
    }
}
