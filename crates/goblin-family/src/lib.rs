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

    /// Calls `decide` with the field's value (None when the key or field
    /// is absent); when it returns a value, sets the field to it as
    /// `write_hash_field` does. A host may do both in one look-up; by
    /// default it reads, then writes.
    fn update_hash_field<'v, R>(
        &mut self,
        key: &[u8],
        field: &[u8],
        decide: impl FnOnce(Option<&[u8]>) -> (Option<&'v [u8]>, R),
    ) -> Result<R, Error> {
        let (new, result) = self.read_hash_field(key, field, decide)?;
        if let Some(value) = new {
            self.write_hash_field(key, field, value);
        }
        Ok(result)
    }

    /// Deletes a hash field; deleting the last field deletes the key.
    fn delete_hash_field(&mut self, key: &[u8], field: &[u8]) -> bool;

    /// Removes the members whose score is <= `max`; removing the last one
    /// deletes the key. Returns how many were removed; WrongType (nothing
    /// removed) when the key exists and is not a sorted set.
    fn remove_scores_up_to(&mut self, key: &[u8], max: f64) -> Result<usize, Error>;

    /// The member's score (None when absent) and the set's size (0 when
    /// the key is absent), read together.
    fn score_and_cardinality(&mut self, key: &[u8], member: &[u8]) -> (Option<f64>, usize);

    /// Adds or updates a member (creating the key); returns the set's
    /// highest score afterwards.
    fn set_score(&mut self, key: &[u8], member: &[u8], score: f64) -> f64;

    /// Records one write as a command, for persistence and replication.
    /// The commands that read the clock (INCRTTL, CAE, ZWINDOW) describe
    /// their changes this way, because replaying the call later would
    /// differ; a host logs these effects instead of the call. The other
    /// commands emit none: replaying them on the same data gives the same
    /// result, so the host logs the call itself. Hosts without a log ignore
    /// it.
    fn effect(&mut self, _argv: &[&[u8]]) {}
}

/// What a command does to its key, for the key specs a host publishes
/// (COMMAND INFO, ACL key permissions, cluster routing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAccess {
    /// Reads and updates the value (Redis's `RW ACCESS UPDATE`).
    Update,
    /// Reads the value and may delete the key (`RW ACCESS DELETE`).
    Delete,
}

/// A family command as a host's command table describes it: the facts
/// every host publishes the same way, stated once here. Every command is
/// a write, `fast`, with its one key at position 1.
#[derive(Debug, Clone, Copy)]
pub struct Command {
    /// The lower-case name, as arity errors spell it.
    pub name: &'static str,
    /// Redis arity: the exact argument count, the name included.
    pub arity: i32,
    /// The command can grow memory, so it is flagged `denyoom` (refused
    /// while used memory is over `maxmemory`); the others only shrink or
    /// rewrite what is there.
    pub deny_oom: bool,
    pub key: KeyAccess,
    /// The ACL category of the data type (beyond `@write` and `@fast`).
    pub acl_category: &'static str,
    pub summary: &'static str,
    pub complexity: &'static str,
    /// The arguments after the name as `name:type` words (COMMAND DOCS).
    pub syntax: &'static str,
    /// The family's version that introduced the command.
    pub since: &'static str,
}

impl Command {
    /// The flags in the words of RedisModule_CreateCommand.
    pub fn module_flags(&self) -> &'static str {
        if self.deny_oom {
            "write deny-oom fast"
        } else {
            "write fast"
        }
    }
}

const fn command(
    name: &'static str,
    arity: i32,
    deny_oom: bool,
    key: KeyAccess,
    acl_category: &'static str,
    summary: &'static str,
    syntax: &'static str,
) -> Command {
    Command {
        name,
        arity,
        deny_oom,
        key,
        acl_category,
        summary,
        complexity: "O(1)",
        syntax,
        since: "0.1.0",
    }
}

pub const DECRPOS: Command = command(
    "goblin.decrpos",
    2,
    false,
    KeyAccess::Update,
    "string",
    "Decrements the integer value of a key by one only while it is positive.",
    "key:key",
);
pub const DECRBYPOS: Command = command(
    "goblin.decrbypos",
    3,
    false,
    KeyAccess::Update,
    "string",
    "Subtracts an amount from the integer value of a key only when at least that much remains.",
    "key:key amount:integer",
);
pub const DECRBY: Command = command(
    "goblin.decrby",
    3,
    true,
    KeyAccess::Update,
    "string",
    "Subtracts any signed 64-bit integer from the integer value of a key, checked on the mathematical result (DECRBY refuses -9223372036854775808).",
    "key:key decrement:integer",
);
pub const INCRBOUND: Command = command(
    "goblin.incrbound",
    4,
    true,
    KeyAccess::Update,
    "string",
    "Increments the integer value of a key only while the result stays at or under a ceiling.",
    "key:key increment:integer ceiling:integer",
);
pub const INCRTTL: Command = command(
    "goblin.incrttl",
    4,
    true,
    KeyAccess::Update,
    "string",
    "Increments a counter and makes sure it expires: a new counter, or one without a TTL, gets the given TTL; an expiring one keeps its deadline.",
    "key:key increment:integer milliseconds:integer",
);
pub const CAD: Command = command(
    "goblin.cad",
    3,
    false,
    KeyAccess::Delete,
    "string",
    "Deletes a key only when it holds exactly the expected string (releases a lock still owned).",
    "key:key expected:string",
);
pub const CAE: Command = command(
    "goblin.cae",
    4,
    false,
    KeyAccess::Update,
    "string",
    "Sets a key's time to live only when it holds exactly the expected string (extends a lock still owned).",
    "key:key expected:string milliseconds:integer",
);
pub const HCAD: Command = command(
    "goblin.hcad",
    4,
    false,
    KeyAccess::Delete,
    "hash",
    "Deletes a hash field only when it holds exactly the expected value.",
    "key:key field:string expected:string",
);
pub const HCAS: Command = command(
    "goblin.hcas",
    5,
    true,
    KeyAccess::Update,
    "hash",
    "Sets a hash field to a new value only when it holds exactly the expected value.",
    "key:key field:string expected:string new:string",
);
pub const HSETGT: Command = command(
    "goblin.hsetgt",
    4,
    true,
    KeyAccess::Update,
    "hash",
    "Sets a hash field only when it is absent or holds a smaller number (a high-water mark).",
    "key:key field:string value:double",
);
pub const ZWINDOW: Command = Command {
    complexity:
        "O(log(N)+M) with N the number of leases and M the number of expired leases removed.",
    ..command(
        "goblin.zwindow",
        5,
        true,
        KeyAccess::Update,
        "sortedset",
        "Acquires or renews a lease in a counting semaphore whose leases expire on their own.",
        "key:key limit:integer milliseconds:integer holder:string",
    )
};

/// The family's commands, for hosts that register them.
pub const COMMANDS: &[Command] = &[
    DECRPOS, DECRBYPOS, DECRBY, INCRBOUND, INCRTTL, CAD, CAE, HCAD, HCAS, HSETGT, ZWINDOW,
];

/// Runs a family command by name (case-insensitive). `args` excludes the
/// command name. The arity is checked here against [`COMMANDS`], for hosts
/// whose command table does not (one that does has already refused a
/// wrong count with the same error).
pub fn execute<S: Store>(store: &mut S, name: &[u8], args: &[&[u8]]) -> Result<Reply, Error> {
    let command = COMMANDS
        .iter()
        .find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
        .ok_or(Error::UnknownCommand)?;
    if args.len() + 1 != command.arity as usize {
        return Err(Error::Arity(command.name));
    }
    let a = args;
    match command.name {
        "goblin.decrpos" => decrpos(store, a[0]),
        "goblin.decrbypos" => decrbypos(store, a[0], a[1]),
        "goblin.decrby" => decrby(store, a[0], a[1]),
        "goblin.incrbound" => incrbound(store, a[0], a[1], a[2]),
        "goblin.incrttl" => incrttl(store, a[0], a[1], a[2]),
        "goblin.cad" => cad(store, a[0], a[1]),
        "goblin.cae" => cae(store, a[0], a[1], a[2]),
        "goblin.hcad" => hcad(store, a[0], a[1], a[2]),
        "goblin.hcas" => hcas(store, a[0], a[1], a[2], a[3]),
        "goblin.hsetgt" => hsetgt(store, a[0], a[1], a[2]),
        "goblin.zwindow" => zwindow(store, a[0], a[1], a[2], a[3]),
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

/// An integer's decimal text, kept on the stack: the commands that read
/// the clock format their effects on every call.
struct Decimal {
    bytes: [u8; 20],
    len: usize,
}

impl Decimal {
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

fn itoa(v: i64) -> Decimal {
    let mut buf = itoa::Buffer::new();
    let text = buf.format(v).as_bytes();
    let mut bytes = [0; 20];
    bytes[..text.len()].copy_from_slice(text);
    Decimal {
        bytes,
        len: text.len(),
    }
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
    store.update_hash_field(key, field, |v| {
        if v == Some(expected) {
            (Some(new), Reply::Int(1))
        } else {
            (None, Reply::Int(0))
        }
    })
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
    store.update_hash_field(key, field, |current| match current.map(Number::parse) {
        None => (Some(value), Ok(Reply::Int(1))),
        Some(None) => (
            None,
            Err(Error::Message("hash value is not a valid number")),
        ),
        Some(Some(old)) if old.less_than(new) => (Some(value), Ok(Reply::Int(1))),
        Some(Some(_)) => (None, Ok(Reply::Int(0))),
    })?
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
    let now = store.now_ms();
    if store.remove_scores_up_to(key, now as f64)? > 0 {
        store.effect(&[b"ZREMRANGEBYSCORE", key, b"-inf", itoa(now).as_bytes()]);
    }
    let (held, leases) = store.score_and_cardinality(key, holder);
    if held.is_none() && leases as i64 >= limit {
        return Ok(Reply::Int(0));
    }
    // The key lives as long as its longest lease.
    let expiry = store.set_score(key, holder, at as f64) as i64;
    store.set_expire_at(key, expiry);
    let at_text = itoa(at);
    let expiry_text = itoa(expiry);
    store.effect(&[b"ZADD", key, at_text.as_bytes(), holder]);
    store.effect(&[b"PEXPIREAT", key, expiry_text.as_bytes()]);
    Ok(Reply::Int(1))
}

#[cfg(test)]
mod tests;
