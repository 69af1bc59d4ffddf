//! The GOBLIN.* family on Goblin's own server: the command table entries,
//! and the keyspace as a `goblin_family::Store`. The semantics themselves
//! live in the `goblin-family` crate, shared with every other host.

use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, Handler, KeySpec};
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
        self.0
            .store(key, Value::str(value), true, notify::STRING, "incrby");
    }

    fn write_integer(&mut self, key: &[u8], value: i64) {
        // In place, as INCR writes: the entry and its TTL stay.
        match self.0.write_string(key) {
            Ok(Some(s)) => {
                *s = CompactBytes::from_i64(value);
                self.0.changed(key, notify::STRING, "incrby");
            }
            _ => {
                let value = Value::Str(CompactBytes::from_i64(value));
                self.0.store(key, value, true, notify::STRING, "incrby");
            }
        }
    }

    fn delete(&mut self, key: &[u8]) -> bool {
        self.0.delete_key(key)
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

    fn update_hash_field<'v, R>(
        &mut self,
        key: &[u8],
        field: &[u8],
        decide: impl FnOnce(Option<&[u8]>) -> (Option<&'v [u8]>, R),
    ) -> Result<R, goblin_family::Error> {
        let (written, result) = hashes::update_field_keep_ttl(self.0, key, field, decide)
            .map_err(|_| goblin_family::Error::WrongType)?;
        if written {
            self.0.notify(notify::HASH, "hset", key);
        }
        Ok(result)
    }

    fn delete_hash_field(&mut self, key: &[u8], field: &[u8]) -> bool {
        hashes::hdel(self.0, key, &[field]).is_ok_and(|n| n == 1)
    }

    fn remove_scores_up_to(&mut self, key: &[u8], max: f64) -> Result<usize, goblin_family::Error> {
        let z = match self.0.lookup_write(key) {
            None => return Ok(0),
            Some(Object {
                value: Value::ZSet(z),
                ..
            }) => z,
            Some(_) => return Err(goblin_family::Error::WrongType),
        };
        let range = ScoreRange {
            min: f64::NEG_INFINITY,
            max,
            minex: false,
            maxex: false,
        };
        let removed = z.remove_range(&range);
        if removed == 0 {
            return Ok(0);
        }
        let emptied = z.is_empty();
        if emptied {
            self.0.delete(key);
        } else {
            self.0.modified(key);
        }
        self.0.notify(notify::ZSET, "zremrangebyscore", key);
        if emptied {
            self.0.notify(notify::GENERIC, "del", key);
        }
        Ok(removed)
    }

    fn score_and_cardinality(&mut self, key: &[u8], member: &[u8]) -> (Option<f64>, usize) {
        zset_of(self.0.lookup_write(key)).map_or((None, 0), |z| (z.score(member), z.len()))
    }

    fn set_score(&mut self, key: &[u8], member: &[u8], score: f64) -> f64 {
        let _ = zsets::zadd(
            self.0,
            key,
            &zsets::ZAddOptions::default(),
            &[(score, member)],
        );
        zset_of(self.0.lookup_write(key))
            .and_then(|z| z.last_entry())
            .map_or(score, |(_, highest)| highest)
    }

    /// The commands that read the clock describe their changes as
    /// commands; they are logged instead of the call.
    fn effect(&mut self, argv: &[&[u8]]) {
        self.0.log_as(argv);
    }
}

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

const UPDATE: &[KeySpec] = &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::UPDATE)];
const DELETE: &[KeySpec] = &[KeySpec::at(1, kflag::RW | kflag::ACCESS | kflag::DELETE)];

/// A table entry from the family's description of the command (arity,
/// flags, key, category, docs), which every host publishes alike.
const fn spec(c: &'static family::Command, handler: Handler) -> CommandSpec {
    CommandSpec {
        name: c.name,
        arity: c.arity,
        flags: if c.deny_oom {
            flag::WRITE | flag::DENYOOM | flag::FAST
        } else {
            flag::WRITE | flag::FAST
        },
        acl: std::slice::from_ref(&c.acl_category),
        keys: match c.key {
            family::KeyAccess::Update => UPDATE,
            family::KeyAccess::Delete => DELETE,
        },
        group: Group::Goblin,
        since: c.since,
        summary: c.summary,
        complexity: c.complexity,
        syntax: c.syntax,
        handler,
        ..CommandSpec::DEFAULT
    }
}

pub static COMMANDS: &[CommandSpec] = &[
    spec(&family::DECRPOS, |ctx, a| {
        run(ctx, |s| family::decrpos(s, a[1]))
    }),
    spec(&family::DECRBYPOS, |ctx, a| {
        run(ctx, |s| family::decrbypos(s, a[1], a[2]))
    }),
    spec(&family::DECRBY, |ctx, a| {
        run(ctx, |s| family::decrby(s, a[1], a[2]))
    }),
    spec(&family::INCRBOUND, |ctx, a| {
        run(ctx, |s| family::incrbound(s, a[1], a[2], a[3]))
    }),
    spec(&family::INCRTTL, |ctx, a| {
        run(ctx, |s| family::incrttl(s, a[1], a[2], a[3]))
    }),
    spec(&family::CAD, |ctx, a| {
        run(ctx, |s| family::cad(s, a[1], a[2]))
    }),
    spec(&family::CAE, |ctx, a| {
        run(ctx, |s| family::cae(s, a[1], a[2], a[3]))
    }),
    spec(&family::HCAD, |ctx, a| {
        run(ctx, |s| family::hcad(s, a[1], a[2], a[3]))
    }),
    spec(&family::HCAS, |ctx, a| {
        run(ctx, |s| family::hcas(s, a[1], a[2], a[3], a[4]))
    }),
    spec(&family::HSETGT, |ctx, a| {
        run(ctx, |s| family::hsetgt(s, a[1], a[2], a[3]))
    }),
    spec(&family::ZWINDOW, |ctx, a| {
        run(ctx, |s| family::zwindow(s, a[1], a[2], a[3], a[4]))
    }),
];
