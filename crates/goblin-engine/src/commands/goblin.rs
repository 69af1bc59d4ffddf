//! The GOBLIN.* family on Goblin's own server: the command table entries,
//! and the keyspace as a `goblin_family::Store`. The semantics themselves
//! live in the `goblin-family` crate, shared with every other host.

use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::commands::{hashes, zsets};
use crate::keyspace::zset::ScoreRange;
use crate::keyspace::{CompactBytes, Object, Value};
use crate::pubsub::notify;
use crate::Error;
use goblin_family::{self as family, Reply, Store};

/// The keyspace, at the running command's database and clock. Its writes
/// notify the events of the Redis commands they stand for: a counter step
/// is "incrby", a deadline "expire", a hash field "hset", a lease
/// cleanup "zremrangebyscore", deletions "del" / "hdel".
pub struct CtxStore<'c, 'a, 'l>(pub &'c mut Ctx<'a, 'l>);

fn zset_of(obj: Option<&mut Object>) -> Option<&mut crate::keyspace::ZSet> {
    match obj {
        Some(Object {
            value: Value::ZSet(z),
            ..
        }) => Some(z),
        _ => None,
    }
}

impl Store for CtxStore<'_, '_, '_> {
    fn now_ms(&self) -> i64 {
        self.0.now_ms as i64
    }

    fn read_string<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, goblin_family::Error> {
        match self.0.lookup_read(key) {
            None => Ok(f(None)),
            Some(Object {
                value: Value::Str(s),
                ..
            }) => Ok(f(Some(s))),
            Some(_) => Err(goblin_family::Error::WrongType),
        }
    }

    fn write_string(&mut self, key: &[u8], value: &[u8]) {
        // Keeps the key's TTL: the value is replaced in place. Every
        // string the family writes is a counter's new value.
        self.0.set_value(key, Value::str(value), true);
        self.0.notify(notify::STRING, "incrby", key);
    }

    fn write_integer(&mut self, key: &[u8], value: i64) {
        // In place, as INCR writes: the entry and its TTL stay.
        match self.0.write_string(key) {
            Ok(Some(s)) => {
                *s = CompactBytes::from_i64(value);
                self.0.modified(key);
            }
            _ => self
                .0
                .set_value(key, Value::Str(CompactBytes::from_i64(value)), true),
        }
        self.0.notify(notify::STRING, "incrby", key);
    }

    fn delete(&mut self, key: &[u8]) -> bool {
        let deleted = self.0.delete(key);
        if deleted {
            self.0.notify(notify::GENERIC, "del", key);
        }
        deleted
    }

    fn expire_at(&mut self, key: &[u8]) -> Option<Option<i64>> {
        self.0
            .lookup_no_touch(key)
            .map(|o| o.expire_at().map(|t| t as i64))
    }

    fn set_expire_at(&mut self, key: &[u8], at_ms: i64) {
        if self.0.set_expire_at(key, at_ms) {
            let event = if at_ms <= self.0.now_ms as i64 {
                "del"
            } else {
                "expire"
            };
            self.0.notify(notify::GENERIC, event, key);
        }
    }

    fn read_hash_field<R>(
        &mut self,
        key: &[u8],
        field: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, goblin_family::Error> {
        // Expired fields are deleted first, as for every hash access.
        hashes::with_hash(self.0, key, |h| f(h.and_then(|h| h.get(field))))
            .map_err(|_| goblin_family::Error::WrongType)
    }

    fn write_hash_field(&mut self, key: &[u8], field: &[u8], value: &[u8]) {
        // The contract keeps the field's own TTL. The type was checked by
        // the read that decided to write.
        if hashes::hset_keep_ttl(self.0, key, field, value).is_ok() {
            self.0.notify(notify::HASH, "hset", key);
        }
    }

    fn delete_hash_field(&mut self, key: &[u8], field: &[u8]) -> bool {
        hashes::hdel(self.0, key, &[field]).is_ok_and(|n| n == 1)
    }

    fn check_sorted_set(&mut self, key: &[u8]) -> Result<(), goblin_family::Error> {
        match self.0.lookup_write(key) {
            None
            | Some(Object {
                value: Value::ZSet(_),
                ..
            }) => Ok(()),
            Some(_) => Err(goblin_family::Error::WrongType),
        }
    }

    fn remove_scores_up_to(&mut self, key: &[u8], max: f64) -> usize {
        let range = ScoreRange {
            min: f64::NEG_INFINITY,
            max,
            minex: false,
            maxex: false,
        };
        let Some(z) = zset_of(self.0.lookup_write(key)) else {
            return 0;
        };
        let removed = z.remove_range(&range);
        let emptied = z.is_empty();
        if emptied {
            self.0.delete(key);
        } else if removed > 0 {
            self.0.modified(key);
        }
        if removed > 0 {
            self.0.notify(notify::ZSET, "zremrangebyscore", key);
            if emptied {
                self.0.notify(notify::GENERIC, "del", key);
            }
        }
        removed
    }

    fn score(&mut self, key: &[u8], member: &[u8]) -> Option<f64> {
        zset_of(self.0.lookup_write(key)).and_then(|z| z.score(member))
    }

    fn cardinality(&mut self, key: &[u8]) -> usize {
        zset_of(self.0.lookup_write(key)).map_or(0, |z| z.len())
    }

    fn set_score(&mut self, key: &[u8], member: &[u8], score: f64) {
        let _ = zsets::zadd(
            self.0,
            key,
            &zsets::ZAddOptions::default(),
            &[(score, member)],
        );
    }

    /// The commands that read the clock describe their changes as
    /// commands; they are logged instead of the call.
    fn effect(&mut self, argv: &[&[u8]]) {
        self.0.log_as(argv);
    }

    fn max_score(&mut self, key: &[u8]) -> Option<f64> {
        zset_of(self.0.lookup_write(key))
            .filter(|z| !z.is_empty())
            .map(|z| z.at_rank(z.len() - 1).1)
    }
}

/// Every GOBLIN.* command: the family does the work, this writes the reply.
/// Runs one family operation against the command's store and writes its
/// reply. Each command's handler calls its operation directly: the table
/// has already matched the name and checked the arity (the module host
/// goes through `goblin_family::execute`, which does both by name).
fn run(
    ctx: &mut Ctx,
    op: impl FnOnce(&mut CtxStore) -> Result<Reply, goblin_family::Error>,
) -> CmdResult {
    let reply = op(&mut CtxStore(ctx)).map_err(|e| Error::raw(e.text()))?;
    match reply {
        Reply::Int(n) => ctx.out.int(n),
        Reply::Pair(a, b) => {
            ctx.out.array(2);
            ctx.out.int(a);
            ctx.out.int(b);
        }
    }
    Ok(())
}

const RW: u32 = kflag::RW | kflag::ACCESS | kflag::UPDATE;
const WRITE_FAST: u32 = flag::WRITE | flag::FAST;
const GROWS: u32 = flag::WRITE | flag::DENYOOM | flag::FAST;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "goblin.decrpos",
        arity: 2,
        flags: WRITE_FAST,
        acl: &["string"],
        keys: &[KeySpec::at(1, RW)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Decrements the integer value of a key by one only while it is positive.",
        syntax: "key:key",
        handler: |ctx, a| run(ctx, |s| family::decrpos(s, a[1])),
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "goblin.decrbypos",
        arity: 3,
        flags: WRITE_FAST,
        acl: &["string"],
        keys: &[KeySpec::at(1, RW)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Subtracts an amount from the integer value of a key only when at least that much remains.",
        syntax: "key:key amount:integer",
        handler: |ctx, a| run(ctx, |s| family::decrbypos(s, a[1], a[2])),
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "goblin.decrby",
        arity: 3,
        flags: GROWS,
        acl: &["string"],
        keys: &[KeySpec::at(1, RW)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Subtracts any signed 64-bit integer from the integer value of a key, checked on the mathematical result (DECRBY refuses -9223372036854775808).",
        syntax: "key:key decrement:integer",
        handler: |ctx, a| run(ctx, |s| family::decrby(s, a[1], a[2])),
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "goblin.incrbound",
        arity: 4,
        flags: GROWS,
        acl: &["string"],
        keys: &[KeySpec::at(1, RW)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Increments the integer value of a key only while the result stays at or under a ceiling.",
        syntax: "key:key increment:integer ceiling:integer",
        handler: |ctx, a| run(ctx, |s| family::incrbound(s, a[1], a[2], a[3])),
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "goblin.incrttl",
        arity: 4,
        flags: GROWS,
        acl: &["string"],
        keys: &[KeySpec::at(1, RW)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Increments a counter and makes sure it expires: a new counter, or one without a TTL, gets the given TTL; an expiring one keeps its deadline.",
        syntax: "key:key increment:integer milliseconds:integer",
        handler: |ctx, a| run(ctx, |s| family::incrttl(s, a[1], a[2], a[3])),
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "goblin.cad",
        arity: 3,
        flags: WRITE_FAST,
        acl: &["string"],
        keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Deletes a key only when it holds exactly the expected string (releases a lock still owned).",
        syntax: "key:key expected:string",
        handler: |ctx, a| run(ctx, |s| family::cad(s, a[1], a[2])),
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "goblin.cae",
        arity: 4,
        flags: WRITE_FAST,
        acl: &["string"],
        keys: &[KeySpec::at(1, RW)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Sets a key's time to live only when it holds exactly the expected string (extends a lock still owned).",
        syntax: "key:key expected:string milliseconds:integer",
        handler: |ctx, a| run(ctx, |s| family::cae(s, a[1], a[2], a[3])),
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "goblin.hcad",
        arity: 4,
        flags: WRITE_FAST,
        acl: &["hash"],
        keys: &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Deletes a hash field only when it holds exactly the expected value.",
        syntax: "key:key field:string expected:string",
        handler: |ctx, a| run(ctx, |s| family::hcad(s, a[1], a[2], a[3])),
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "goblin.hcas",
        arity: 5,
        flags: GROWS,
        acl: &["hash"],
        keys: &[KeySpec::at(1, RW)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Sets a hash field to a new value only when it holds exactly the expected value.",
        syntax: "key:key field:string expected:string new:string",
        handler: |ctx, a| run(ctx, |s| family::hcas(s, a[1], a[2], a[3], a[4])),
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "goblin.hsetgt",
        arity: 4,
        flags: GROWS,
        acl: &["hash"],
        keys: &[KeySpec::at(1, RW)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Sets a hash field only when it is absent or holds a smaller number (a high-water mark).",
        syntax: "key:key field:string value:double",
        handler: |ctx, a| run(ctx, |s| family::hsetgt(s, a[1], a[2], a[3])),
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "goblin.zwindow",
        arity: 5,
        flags: GROWS,
        acl: &["sortedset"],
        keys: &[KeySpec::at(1, RW)],
        group: Group::Goblin,
        since: "0.1.0",
        summary: "Acquires or renews a lease in a counting semaphore whose leases expire on their own.",
        complexity: "O(log(N)+M) with N the number of leases and M the number of expired leases removed.",
        syntax: "key:key limit:integer milliseconds:integer holder:string",
        handler: |ctx, a| run(ctx, |s| family::zwindow(s, a[1], a[2], a[3], a[4])),
        ..CommandSpec::DEFAULT
    },
];
