//! # goblin-family
//!
//! The GOBLIN.* commands: each one atomic step that replaces a Lua script
//! people run on Redis today (take one unit of stock while some remain,
//! consume a quota up to a ceiling, release a lock only if still owned,
//! keep a high-water mark, hand out self-healing leases, count in a window
//! that is sure to expire).
//!
//! Their semantics are written here once, against the small [`Store`]
//! interface: the operations on strings, hash fields, sorted sets and TTLs
//! the commands need. Goblin's server implements `Store` over its keyspace;
//! a Redis/Valkey module implements it over the module API. Neither host
//! repeats any of the logic: a host parses nothing, checks nothing, decides
//! nothing; it calls [`execute`] (or one command's function) and sends the
//! [`Reply`] or the [`Error`].
//!
//! The contract every command follows (docs/commands/goblin.*.md):
//! a rejected call changes nothing and never creates a key; a successful
//! call keeps the key's TTL unless setting it is the command's job;
//! integers parse as Redis parses them; arithmetic is checked over signed
//! 64 bits on the mathematical result.

use goblin_num::{parse_f64, parse_i64};

/// A command's error, with the text of the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    WrongType,
    NotInteger,
    Overflow,
    /// `-ERR invalid expire time in '<command>' command`.
    ExpireTime(&'static str),
    /// `-ERR <text>`.
    Message(&'static str),
    /// `-ERR wrong number of arguments for '<command>' command`.
    Arity(&'static str),
    UnknownCommand,
}

impl Error {
    /// The error reply's text (after the '-').
    pub fn text(&self) -> String {
        match self {
            Error::WrongType => {
                "WRONGTYPE Operation against a key holding the wrong kind of value".into()
            }
            Error::NotInteger => "ERR value is not an integer or out of range".into(),
            Error::Overflow => "ERR increment or decrement would overflow".into(),
            Error::ExpireTime(cmd) => format!("ERR invalid expire time in '{cmd}' command"),
            Error::Message(m) => format!("ERR {m}"),
            Error::Arity(cmd) => format!("ERR wrong number of arguments for '{cmd}' command"),
            Error::UnknownCommand => "ERR unknown GOBLIN command".into(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

impl std::error::Error for Error {}

/// A command's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Int(i64),
    /// Two integers (GOBLIN.INCRTTL: value and remaining milliseconds).
    Pair(i64, i64),
}

/// What the family needs from a keyspace. Every method acts on the
/// database the command runs in, at the host's command clock, and must
/// treat an expired key as absent.
pub trait Store {
    /// The clock of the running command, in Unix milliseconds.
    fn now_ms(&self) -> i64;

    /// Calls `f` with the string at `key` (None when absent).
    /// `Err(Error::WrongType)` when the key holds another type.
    fn read_string<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Error>;

    /// Stores a string, keeping the key's TTL (a new key has none).
    fn write_string(&mut self, key: &[u8], value: &[u8]);

    /// Stores an integer as its decimal text, keeping the key's TTL. A
    /// host may store it more cheaply than through `write_string` (in
    /// place, in an integer encoding, as INCR does); by default it writes
    /// the text.
    fn write_integer(&mut self, key: &[u8], value: i64) {
        self.write_string(key, itoa(value).as_bytes());
    }

    /// Deletes a key; true when it existed.
    fn delete(&mut self, key: &[u8]) -> bool;

    /// The key's absolute expiry in Unix ms: `None` when the key is absent,
    /// `Some(None)` when it has no TTL.
    fn expire_at(&mut self, key: &[u8]) -> Option<Option<i64>>;

    /// Sets the absolute expiry of an existing key.
    fn set_expire_at(&mut self, key: &[u8], at_ms: i64);

    /// Calls `f` with the value of a hash field (None when the key or field
    /// is absent). WrongType for a non-hash key.
    fn read_hash_field<R>(
        &mut self,
        key: &[u8],
        field: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Error>;

    /// Sets a hash field (creating the key), keeping the field's own TTL.
    fn write_hash_field(&mut self, key: &[u8], field: &[u8], value: &[u8]);

    /// Deletes a hash field; deleting the last field deletes the key.
    fn delete_hash_field(&mut self, key: &[u8], field: &[u8]) -> bool;

    /// WrongType when the key exists and is not a sorted set.
    fn check_sorted_set(&mut self, key: &[u8]) -> Result<(), Error>;

    /// Removes the members whose score is <= `max`; removing the last one
    /// deletes the key. Returns how many were removed.
    fn remove_scores_up_to(&mut self, key: &[u8], max: f64) -> usize;

    fn score(&mut self, key: &[u8], member: &[u8]) -> Option<f64>;

    fn cardinality(&mut self, key: &[u8]) -> usize;

    /// Adds or updates a member (creating the key).
    fn set_score(&mut self, key: &[u8], member: &[u8], score: f64);

    fn max_score(&mut self, key: &[u8]) -> Option<f64>;

    /// Records one write as a command, for persistence and replication.
    /// The commands that read the clock (INCRTTL, CAE, ZWINDOW) describe
    /// their changes this way, because replaying the call later would
    /// differ; a host logs these effects instead of the call. The other
    /// commands emit none: replaying them on the same data gives the same
    /// result, so the host logs the call itself. Hosts without a log ignore
    /// it.
    fn effect(&mut self, _argv: &[&[u8]]) {}
}

/// The family's commands, for hosts that register them.
pub const COMMANDS: &[&str] = &[
    "goblin.decrpos",
    "goblin.decrbypos",
    "goblin.decrby",
    "goblin.incrbound",
    "goblin.incrttl",
    "goblin.cad",
    "goblin.cae",
    "goblin.hcad",
    "goblin.hcas",
    "goblin.hsetgt",
    "goblin.zwindow",
];

/// Runs a family command by name (case-insensitive). `args` excludes the
/// command name.
pub fn execute<S: Store>(store: &mut S, name: &[u8], args: &[&[u8]]) -> Result<Reply, Error> {
    let mut buf = [0u8; 24];
    let lower = match buf.get_mut(..name.len()) {
        Some(slot) => {
            slot.copy_from_slice(name);
            slot.make_ascii_lowercase();
            &*slot
        }
        None => return Err(Error::UnknownCommand),
    };
    let arity = |n: usize, cmd: &'static str| {
        if args.len() == n {
            Ok(())
        } else {
            Err(Error::Arity(cmd))
        }
    };
    match lower {
        b"goblin.decrpos" => {
            arity(1, "goblin.decrpos")?;
            decrpos(store, args[0])
        }
        b"goblin.decrbypos" => {
            arity(2, "goblin.decrbypos")?;
            decrbypos(store, args[0], args[1])
        }
        b"goblin.decrby" => {
            arity(2, "goblin.decrby")?;
            decrby(store, args[0], args[1])
        }
        b"goblin.incrbound" => {
            arity(3, "goblin.incrbound")?;
            incrbound(store, args[0], args[1], args[2])
        }
        b"goblin.incrttl" => {
            arity(3, "goblin.incrttl")?;
            incrttl(store, args[0], args[1], args[2])
        }
        b"goblin.cad" => {
            arity(2, "goblin.cad")?;
            cad(store, args[0], args[1])
        }
        b"goblin.cae" => {
            arity(3, "goblin.cae")?;
            cae(store, args[0], args[1], args[2])
        }
        b"goblin.hcad" => {
            arity(3, "goblin.hcad")?;
            hcad(store, args[0], args[1], args[2])
        }
        b"goblin.hcas" => {
            arity(4, "goblin.hcas")?;
            hcas(store, args[0], args[1], args[2], args[3])
        }
        b"goblin.hsetgt" => {
            arity(3, "goblin.hsetgt")?;
            hsetgt(store, args[0], args[1], args[2])
        }
        b"goblin.zwindow" => {
            arity(4, "goblin.zwindow")?;
            zwindow(store, args[0], args[1], args[2], args[3])
        }
        _ => Err(Error::UnknownCommand),
    }
}

// ---------------------------------------------------------------------------
// Argument parsing.

fn integer(arg: &[u8]) -> Result<i64, Error> {
    parse_i64(arg).ok_or(Error::NotInteger)
}

/// A TTL argument in milliseconds: an integer (else the integer error),
/// at least 1 (else the command's invalid-expire-time error).
fn milliseconds(arg: &[u8], cmd: &'static str) -> Result<i64, Error> {
    let ms = integer(arg)?;
    if ms < 1 {
        return Err(Error::ExpireTime(cmd));
    }
    Ok(ms)
}

/// now + ms as an absolute time; overflow is an invalid expire time.
fn deadline<S: Store>(store: &S, ms: i64, cmd: &'static str) -> Result<i64, Error> {
    store.now_ms().checked_add(ms).ok_or(Error::ExpireTime(cmd))
}

/// The integer stored at `key` (0 when absent); NotInteger when the string
/// is not an integer Redis would accept.
fn stored_integer<S: Store>(store: &mut S, key: &[u8]) -> Result<Option<i64>, Error> {
    store.read_string(key, |v| {
        v.map(|b| parse_i64(b).ok_or(Error::NotInteger)).transpose()
    })?
}

fn itoa(v: i64) -> String {
    v.to_string()
}

// ---------------------------------------------------------------------------
// The commands.

/// GOBLIN.DECRPOS key: decrement while positive; the new value, or -1.
pub fn decrpos<S: Store>(store: &mut S, key: &[u8]) -> Result<Reply, Error> {
    match stored_integer(store, key)? {
        Some(v) if v > 0 => {
            store.write_integer(key, v - 1);
            Ok(Reply::Int(v - 1))
        }
        _ => Ok(Reply::Int(-1)),
    }
}

/// GOBLIN.DECRBYPOS key amount: subtract `amount` (>= 1) when at least that
/// much remains; the new value, or -1.
pub fn decrbypos<S: Store>(store: &mut S, key: &[u8], amount: &[u8]) -> Result<Reply, Error> {
    let amount = integer(amount)?;
    if amount < 1 {
        return Err(Error::Message("amount must be a positive integer"));
    }
    match stored_integer(store, key)? {
        Some(v) if v >= amount => {
            store.write_integer(key, v - amount);
            Ok(Reply::Int(v - amount))
        }
        _ => Ok(Reply::Int(-1)),
    }
}

/// GOBLIN.DECRBY key decrement: subtract any signed 64-bit `decrement`,
/// checked on the mathematical result. DECRBY refuses a decrement of
/// i64::MIN because it negates its argument before adding; here
/// -9223372036854775807 - i64::MIN = 1 is a subtraction like any other.
/// Absent is 0; an out-of-range result is the overflow error and changes
/// nothing (an absent key stays absent); the TTL is kept.
pub fn decrby<S: Store>(store: &mut S, key: &[u8], decrement: &[u8]) -> Result<Reply, Error> {
    let decrement = integer(decrement)?;
    let current = stored_integer(store, key)?.unwrap_or(0);
    let result = current as i128 - decrement as i128;
    let result = i64::try_from(result).map_err(|_| Error::Overflow)?;
    store.write_integer(key, result);
    Ok(Reply::Int(result))
}

/// GOBLIN.INCRBOUND key increment ceiling: add when the result stays at or
/// under the ceiling; the new value, or -1. Checked on the mathematical
/// result: above the ceiling (even beyond i64) is -1, below i64::MIN is the
/// overflow error.
pub fn incrbound<S: Store>(
    store: &mut S,
    key: &[u8],
    increment: &[u8],
    ceiling: &[u8],
) -> Result<Reply, Error> {
    let increment = integer(increment)?;
    let ceiling = integer(ceiling)?;
    let current = stored_integer(store, key)?.unwrap_or(0);
    let result = current as i128 + increment as i128;
    if result > ceiling as i128 {
        return Ok(Reply::Int(-1));
    }
    if result < i64::MIN as i128 {
        return Err(Error::Overflow);
    }
    let result = result as i64;
    store.write_integer(key, result);
    Ok(Reply::Int(result))
}

/// GOBLIN.INCRTTL key increment milliseconds: a counter that is sure to
/// expire. A new counter gets the TTL; one without a TTL gets it; one with
/// a TTL keeps its deadline (the window never slides). Reply: [value, ms left].
pub fn incrttl<S: Store>(
    store: &mut S,
    key: &[u8],
    increment: &[u8],
    ms: &[u8],
) -> Result<Reply, Error> {
    const CMD: &str = "goblin.incrttl";
    let increment = integer(increment)?;
    let ms = milliseconds(ms, CMD)?;
    let at = deadline(store, ms, CMD)?;
    let current = stored_integer(store, key)?;
    let next = current
        .unwrap_or(0)
        .checked_add(increment)
        .ok_or(Error::Overflow)?;
    let existing_deadline = match current {
        Some(_) => store.expire_at(key).flatten(),
        None => None,
    };
    store.write_integer(key, next);
    let text = itoa(next);
    let at = match existing_deadline {
        Some(d) => d,
        None => {
            store.set_expire_at(key, at);
            at
        }
    };
    let at_text = itoa(at);
    store.effect(&[b"SET", key, text.as_bytes(), b"PXAT", at_text.as_bytes()]);
    Ok(Reply::Pair(next, (at - store.now_ms()).max(0)))
}

/// GOBLIN.CAD key expected: delete the key when it holds exactly `expected`.
pub fn cad<S: Store>(store: &mut S, key: &[u8], expected: &[u8]) -> Result<Reply, Error> {
    if store.read_string(key, |v| v == Some(expected))? {
        store.delete(key);
        Ok(Reply::Int(1))
    } else {
        Ok(Reply::Int(0))
    }
}

/// GOBLIN.CAE key expected milliseconds: extend a lock's TTL when the key
/// still holds `expected`.
pub fn cae<S: Store>(
    store: &mut S,
    key: &[u8],
    expected: &[u8],
    ms: &[u8],
) -> Result<Reply, Error> {
    const CMD: &str = "goblin.cae";
    let ms = milliseconds(ms, CMD)?;
    let at = deadline(store, ms, CMD)?;
    if store.read_string(key, |v| v == Some(expected))? {
        store.set_expire_at(key, at);
        let at_text = itoa(at);
        store.effect(&[b"PEXPIREAT", key, at_text.as_bytes()]);
        Ok(Reply::Int(1))
    } else {
        Ok(Reply::Int(0))
    }
}

/// GOBLIN.HCAD key field expected: delete the field when it holds exactly
/// `expected`.
pub fn hcad<S: Store>(
    store: &mut S,
    key: &[u8],
    field: &[u8],
    expected: &[u8],
) -> Result<Reply, Error> {
    if store.read_hash_field(key, field, |v| v == Some(expected))? {
        store.delete_hash_field(key, field);
        Ok(Reply::Int(1))
    } else {
        Ok(Reply::Int(0))
    }
}

/// GOBLIN.HCAS key field expected new: set the field to `new` when it holds
/// exactly `expected`; an absent field or key is never created.
pub fn hcas<S: Store>(
    store: &mut S,
    key: &[u8],
    field: &[u8],
    expected: &[u8],
    new: &[u8],
) -> Result<Reply, Error> {
    if store.read_hash_field(key, field, |v| v == Some(expected))? {
        store.write_hash_field(key, field, new);
        Ok(Reply::Int(1))
    } else {
        Ok(Reply::Int(0))
    }
}

/// A number as GOBLIN.HSETGT compares them: an exact integer, or a finite
/// double.
#[derive(Debug, Clone, Copy)]
enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn parse(s: &[u8]) -> Option<Number> {
        if let Some(i) = parse_i64(s) {
            return Some(Number::Int(i));
        }
        parse_f64(s).filter(|f| f.is_finite()).map(Number::Float)
    }

    fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }

    /// `self < other`: exact for two integers, as doubles otherwise.
    fn less_than(self, other: Number) -> bool {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => a < b,
            _ => self.as_f64() < other.as_f64(),
        }
    }
}

/// GOBLIN.HSETGT key field value: a high-water mark; set the field when it
/// is absent or holds a smaller number.
pub fn hsetgt<S: Store>(
    store: &mut S,
    key: &[u8],
    field: &[u8],
    value: &[u8],
) -> Result<Reply, Error> {
    let new = Number::parse(value).ok_or(Error::Message("value is not a valid number"))?;
    let current = store.read_hash_field(key, field, |v| v.map(Number::parse))?;
    let higher = match current {
        None => true,
        Some(None) => return Err(Error::Message("hash value is not a valid number")),
        Some(Some(old)) => old.less_than(new),
    };
    if !higher {
        return Ok(Reply::Int(0));
    }
    store.write_hash_field(key, field, value);
    Ok(Reply::Int(1))
}

/// GOBLIN.ZWINDOW key limit milliseconds holder: a counting semaphore with
/// leases that heal when their holder crashes. Expired leases are dropped;
/// a present holder renews; a new one is admitted while fewer than `limit`
/// remain. The key expires with its last lease.
pub fn zwindow<S: Store>(
    store: &mut S,
    key: &[u8],
    limit: &[u8],
    ms: &[u8],
    holder: &[u8],
) -> Result<Reply, Error> {
    const CMD: &str = "goblin.zwindow";
    let limit = integer(limit)?;
    if limit < 1 {
        return Err(Error::Message("limit must be a positive integer"));
    }
    let ms = milliseconds(ms, CMD)?;
    let at = deadline(store, ms, CMD)?;
    store.check_sorted_set(key)?;
    let now = store.now_ms();
    let now_text = itoa(now);
    if store.remove_scores_up_to(key, now as f64) > 0 {
        store.effect(&[b"ZREMRANGEBYSCORE", key, b"-inf", now_text.as_bytes()]);
    }
    let admitted = store.score(key, holder).is_some() || (store.cardinality(key) as i64) < limit;
    if !admitted {
        return Ok(Reply::Int(0));
    }
    store.set_score(key, holder, at as f64);
    let expiry = store.max_score(key).map_or(at, |m| m as i64);
    store.set_expire_at(key, expiry);
    let at_text = itoa(at);
    let expiry_text = itoa(expiry);
    store.effect(&[b"ZADD", key, at_text.as_bytes(), holder]);
    store.effect(&[b"PEXPIREAT", key, expiry_text.as_bytes()]);
    Ok(Reply::Int(1))
}

#[cfg(test)]
mod tests;
