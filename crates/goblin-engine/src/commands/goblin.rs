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
///
/// Each write also records the plain Redis command that has its effect
/// (SET ... KEEPTTL, PEXPIREAT, HSET, HDEL, DEL, ZADD, ZREMRANGEBYSCORE):
/// the append-only file and the replication stream get those rather
/// than the call, so that any Redis replica (and Redis itself, reading
/// the file) ends up with the same data. A command that describes its
/// effects itself (`Store::effect`, the clock readers) is logged as it
/// says instead.
pub struct CtxStore<'c, 'a, 'l> {
    ctx: &'c mut Ctx<'a, 'l>,
    /// The effects of the writes so far, while the command is logged.
    writes: Vec<Vec<Vec<u8>>>,
    /// `Store::effect` was called: its effects stand.
    described: bool,
}

impl<'c, 'a, 'l> CtxStore<'c, 'a, 'l> {
    fn new(ctx: &'c mut Ctx<'a, 'l>) -> Self {
        CtxStore {
            ctx,
            writes: Vec::new(),
            described: false,
        }
    }

    /// Records the effect of a write (nothing while nothing is logged).
    fn wrote(&mut self, argv: &[&[u8]]) {
        if self.ctx.propagating() {
            self.writes.push(argv.iter().map(|a| a.to_vec()).collect());
        }
    }

    /// Logs the effects of the command's writes, unless it described them.
    fn finish(self) {
        if self.described {
            return;
        }
        for argv in &self.writes {
            let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_slice()).collect();
            self.ctx.propagate_as(&argv);
        }
    }
}

/// A score as the replica parses it back to the same double.
fn score_text(score: f64) -> String {
    if score.is_infinite() {
        if score > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{score}")
    }
}

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
        self.ctx.now_ms as i64
    }

    fn read_string<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, goblin_family::Error> {
        match self.ctx.lookup_read(key) {
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
        self.ctx
            .store(key, Value::str(value), true, notify::STRING, "incrby");
        self.wrote(&[b"SET", key, value, b"KEEPTTL"]);
    }

    fn write_integer(&mut self, key: &[u8], value: i64) {
        // In place, as INCR writes: the entry and its TTL stay.
        match self.ctx.write_string(key) {
            Ok(Some(s)) => {
                *s = CompactBytes::from_i64(value);
                self.ctx.changed(key, notify::STRING, "incrby");
            }
            _ => {
                let value = Value::Str(CompactBytes::from_i64(value));
                self.ctx.store(key, value, true, notify::STRING, "incrby");
            }
        }
        let text = value.to_string();
        self.wrote(&[b"SET", key, text.as_bytes(), b"KEEPTTL"]);
    }

    fn delete(&mut self, key: &[u8]) -> bool {
        let existed = self.ctx.delete_key(key);
        if existed {
            self.wrote(&[b"DEL", key]);
        }
        existed
    }

    fn expire_at(&mut self, key: &[u8]) -> Option<Option<i64>> {
        self.ctx
            .lookup_no_touch(key)
            .map(|o| o.expire_at().map(|t| t as i64))
    }

    fn set_expire_at(&mut self, key: &[u8], at_ms: i64) {
        let at = at_ms.to_string();
        self.wrote(&[b"PEXPIREAT", key, at.as_bytes()]);
        if self.ctx.set_expire_at(key, at_ms) {
            let event = if at_ms <= self.ctx.now_ms as i64 {
                "del"
            } else {
                "expire"
            };
            self.ctx.notify(notify::GENERIC, event, key);
        }
    }

    fn read_hash_field<R>(
        &mut self,
        key: &[u8],
        field: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, goblin_family::Error> {
        // Expired fields are deleted first, as for every hash access.
        hashes::with_hash(self.ctx, key, |h| f(h.and_then(|h| h.get(field))))
            .map_err(|_| goblin_family::Error::WrongType)
    }

    fn write_hash_field(&mut self, key: &[u8], field: &[u8], value: &[u8]) {
        // The contract keeps the field's own TTL. The type was checked by
        // the read that decided to write.
        if hashes::hset_keep_ttl(self.ctx, key, field, value).is_ok() {
            self.ctx.notify(notify::HASH, "hset", key);
            self.wrote(&[b"HSET", key, field, value]);
        }
    }

    fn update_hash_field<'v, R>(
        &mut self,
        key: &[u8],
        field: &[u8],
        decide: impl FnOnce(Option<&[u8]>) -> (Option<&'v [u8]>, R),
    ) -> Result<R, goblin_family::Error> {
        let mut new_value = None;
        let logging = self.ctx.propagating();
        let decide = |old: Option<&[u8]>| {
            let (new, r) = decide(old);
            if logging {
                new_value = new.map(|v| v.to_vec());
            }
            (new, r)
        };
        let (written, result) = hashes::update_field_keep_ttl(self.ctx, key, field, decide)
            .map_err(|_| goblin_family::Error::WrongType)?;
        if written {
            self.ctx.notify(notify::HASH, "hset", key);
            if let Some(v) = new_value {
                self.wrote(&[b"HSET", key, field, &v]);
            }
        }
        Ok(result)
    }

    fn delete_hash_field(&mut self, key: &[u8], field: &[u8]) -> bool {
        let removed = hashes::hdel(self.ctx, key, &[field]).is_ok_and(|n| n == 1);
        if removed {
            self.wrote(&[b"HDEL", key, field]);
        }
        removed
    }

    fn remove_scores_up_to(&mut self, key: &[u8], max: f64) -> Result<usize, goblin_family::Error> {
        let z = match self.ctx.lookup_write(key) {
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
            self.ctx.delete(key);
        } else {
            self.ctx.modified(key);
        }
        self.ctx.notify(notify::ZSET, "zremrangebyscore", key);
        if emptied {
            self.ctx.notify(notify::GENERIC, "del", key);
        }
        let max = score_text(max);
        self.wrote(&[b"ZREMRANGEBYSCORE", key, b"-inf", max.as_bytes()]);
        Ok(removed)
    }

    fn score_and_cardinality(&mut self, key: &[u8], member: &[u8]) -> (Option<f64>, usize) {
        zset_of(self.ctx.lookup_write(key)).map_or((None, 0), |z| (z.score(member), z.len()))
    }

    fn set_score(&mut self, key: &[u8], member: &[u8], score: f64) -> f64 {
        let _ = zsets::zadd(
            self.ctx,
            key,
            &zsets::ZAddOptions::default(),
            &[(score, member)],
        );
        let text = score_text(score);
        self.wrote(&[b"ZADD", key, text.as_bytes(), member]);
        zset_of(self.ctx.lookup_write(key))
            .and_then(|z| z.last_entry())
            .map_or(score, |(_, highest)| highest)
    }

    /// The commands that read the clock describe their changes as
    /// commands; they are logged instead of the call.
    fn effect(&mut self, argv: &[&[u8]]) {
        self.described = true;
        self.ctx.propagate_as(argv);
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
    let mut store = CtxStore::new(ctx);
    let reply = op(&mut store);
    store.finish();
    let reply = reply.map_err(|e| Error::raw(e.text()))?;
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
