//! Commands: their declarative specs, the table, key extraction, and the
//! execution context (`Ctx`) every command implementation receives.

pub mod args;
pub mod flags;
pub mod keys;
pub mod keyspec;
pub mod spec;
pub mod syntax;
pub mod table;

pub use spec::{
    chflag, flag, kflag, BeginSearch, ChannelSpec, CmdResult, CommandSpec, FindKeys, Group,
    KeySpec, LocksFn,
};
pub use table::{table, CommandTable};

#[cfg(test)]
mod options_tests;
#[cfg(test)]
mod watch_tests;

use crate::client::ClientState;
use crate::engine::Engine;
use crate::keyspace::{hash_key, CompactBytes, Db, Now, Object, ShardLocks, Value, ValueType};
use crate::protocol::ReplyWriter;
use crate::stats::ThreadStats;
use crate::Error;

/// Everything a running command may touch: the engine, the calling
/// client's state, the reply buffer, and the shards it holds.
pub struct Ctx<'a, 'l> {
    pub engine: &'a Engine,
    pub client: &'a mut ClientState,
    pub out: &'a mut ReplyWriter,
    pub locks: &'a mut ShardLocks<'l>,
    pub stats: &'a ThreadStats,
    /// The command's clock: fixed for the whole command (and for a whole
    /// transaction or script), so every expiry check inside it agrees.
    pub now_ms: u64,
    /// Look-ups leave expired keys in place (they read as absent): the
    /// engine's clients are paused and the command does not write (see
    /// `crate::pause`).
    pub keep_expired: bool,
    /// Look-ups leave the keys' access time (LRU/LFU) as it was: the
    /// client asked for CLIENT NO-TOUCH (TOUCH clears it for itself).
    pub no_touch: bool,
    /// Changes made (for `save` rules and INFO's rdb_changes_since_last_save).
    pub dirty: u64,
    /// Id of the running command in the table.
    pub cmd_id: usize,
    /// Running inside MULTI/EXEC.
    pub in_multi: bool,
    /// Running inside a script (redis.call).
    pub in_script: bool,
    /// The command may change keys (its spec has the WRITE flag): keys it
    /// locates are copied aside for a running snapshot first.
    pub writes: bool,
    /// What the command propagates (see `crate::propagate`), when not the
    /// call itself.
    pub effects: Effects,
    /// Set while the command runs on behalf of a blocked client being
    /// served: the key that became ready. A blocking command then takes its
    /// data from this key only, and never blocks again.
    pub serving: Option<&'a [u8]>,
}

/// What a command propagates to the append-only file and the replicas
/// when that is not simply the call itself.
///
/// A command whose replay could turn out differently (it reads the clock
/// or randomness) describes its effect as deterministic commands instead:
/// `SET k v EX 10` is propagated as `SET k v PXAT <ms>`, SPOP as the SREM
/// of what it popped. Scripts propagate the commands they ran: `Engine::call`
/// gathers the records of commands run inside a script or a transaction
/// and propagates them together when the outermost command ends.
#[derive(Default, Debug)]
pub struct Effects {
    /// Propagate `commands` (database, argv) instead of the call.
    pub replaced: bool,
    pub commands: Vec<(usize, Vec<Vec<u8>>)>,
    /// Propagate the call even though it changed nothing (FLUSHDB on an empty
    /// database, as Redis's forceCommandPropagation).
    pub forced: bool,
    /// With `forced`: to the replicas only, not to the append-only file
    /// (PUBLISH, as Redis's PROPAGATE_REPL).
    pub repl_only: bool,
    /// Propagate several records one by one, not wrapped in MULTI/EXEC: the
    /// expired keys a command that touches arbitrary keys met (SCAN,
    /// RANDOMKEY), as Redis's CMD_TOUCHES_ARBITRARY_KEYS.
    pub unwrapped: bool,
}

/// Redis's allowProtectedAction: `setting`, the value of
/// enable-protected-configs, enable-debug-command..., is yes, or local and
/// the client is (or the engine itself runs the command).
pub fn allows_protected(setting: &str, client: &ClientState) -> bool {
    match setting {
        "yes" => true,
        "local" => client.internal || client.info.is_local(),
        _ => false,
    }
}

impl<'a, 'l> Ctx<'a, 'l> {
    /// The stored form of the argument `arg`: the very buffer it was
    /// received in when it is one of the command's big bulks (Redis
    /// stores a big argument's sds as the object itself), a copy
    /// otherwise.
    pub fn adopt(&self, arg: &[u8]) -> CompactBytes {
        if let Some(b) = self
            .client
            .lent
            .iter()
            .find(|b| b.as_ptr() == arg.as_ptr() && b.len() == arg.len())
        {
            return CompactBytes::from_bytes(b.clone());
        }
        CompactBytes::from_slice(arg)
    }

    /// Whether this client may take a protected action (Redis's
    /// allowProtectedAction): `setting`, the value of
    /// enable-protected-configs, enable-debug-command..., is yes, or local
    /// and the client is.
    pub fn allows_protected(&self, setting: &str) -> bool {
        allows_protected(setting, self.client)
    }

    /// How this command's look-ups treat keys: its clock, and whether an
    /// expired key stays (CLIENT PAUSE).
    #[inline]
    pub fn now(&self) -> Now {
        Now {
            ms: self.now_ms,
            keep_expired: self.keep_expired,
            no_touch: self.no_touch,
        }
    }

    /// The current database's slice of the shard that owns `key`, and the key's hash.
    #[inline]
    pub fn locate(&mut self, key: &[u8]) -> (&mut Db, u64) {
        let db = self.client.db;
        self.locate_in(db, key)
    }

    #[inline]
    pub fn locate_in(&mut self, db: usize, key: &[u8]) -> (&mut Db, u64) {
        let h = hash_key(key);
        let idx = self.engine.keyspace().shard_of(h);
        let writes = self.writes;
        let slice = &mut self.locks.shard(idx).dbs[db];
        // The one place where in-place changes of values are announced to
        // a running snapshot (see persist/snapshot.rs).
        if writes {
            slice.preserve(h, key);
        }
        (slice, h)
    }

    /// Whether this command's changes are being propagated (to the
    /// append-only file or the replication stream).
    #[inline]
    pub fn propagating(&self) -> bool {
        (self.engine.persist().aof.is_on() || self.engine.repl().stream.feeding())
            && !self.client.replaying
    }

    /// Propagates `argv` (in the current database) in place of this call; may be
    /// called several times. See [`Effects`].
    pub fn propagate_as(&mut self, argv: &[&[u8]]) {
        if !self.propagating() {
            return;
        }
        self.effects.replaced = true;
        self.effects
            .commands
            .push((self.client.db, argv.iter().map(|a| a.to_vec()).collect()));
    }

    /// Propagates nothing for this call even though it counted changes.
    pub fn propagate_nothing(&mut self) {
        self.effects.replaced = true;
    }

    /// Propagates this call even if it changed nothing.
    pub fn force_propagation(&mut self) {
        self.effects.forced = true;
    }

    /// Read-only view of a key's value for commands that hold several at
    /// once; expired keys read as absent but are not deleted.
    pub fn peek(&self, key: &[u8]) -> Option<&Object> {
        let h = hash_key(key);
        let idx = self.engine.keyspace().shard_of(h);
        self.locks.shard_ref(idx).dbs[self.client.db].peek(h, key, self.now_ms)
    }

    /// Looks up a key for reading (Redis's lookupKeyRead): counts a
    /// keyspace hit or miss and refreshes the access time.
    #[inline]
    pub fn lookup_read(&mut self, key: &[u8]) -> Option<&mut Object> {
        let now = self.now();
        let stats = self.stats;
        if self.key_miss(key) {
            return None;
        }
        let (db, h) = self.locate(key);
        let found = db.lookup(h, key, now);
        stats.hit(found.is_some());
        found
    }

    /// With the 'm' class of keyspace notifications on, a read that finds
    /// no key publishes "keymiss" (Redis's lookupKeyReadWithFlags); true
    /// then, the miss counted. Otherwise one relaxed load.
    #[inline]
    fn key_miss(&mut self, key: &[u8]) -> bool {
        if !self.notifies(crate::pubsub::notify::KEY_MISS) {
            return false;
        }
        let now = self.now();
        let (db, h) = self.locate(key);
        if db.lookup(h, key, now).is_some() {
            return false;
        }
        self.stats.hit(false);
        self.notify(crate::pubsub::notify::KEY_MISS, "keymiss", key);
        true
    }

    /// Like `lookup_read`, also handing back the reply writer so the value
    /// can be copied into the reply while it is borrowed.
    #[inline]
    pub fn lookup_read_and_out(&mut self, key: &[u8]) -> (Option<&mut Object>, &mut ReplyWriter) {
        if self.key_miss(key) {
            return (None, &mut *self.out);
        }
        let h = hash_key(key);
        let idx = self.engine.keyspace().shard_of(h);
        let now = self.now();
        let found = self.locks.shard(idx).dbs[self.client.db].lookup(h, key, now);
        self.stats.hit(found.is_some());
        (found, &mut *self.out)
    }

    /// Like `lookup_write`, also handing back the reply writer.
    #[inline]
    pub fn lookup_write_and_out(&mut self, key: &[u8]) -> (Option<&mut Object>, &mut ReplyWriter) {
        let h = hash_key(key);
        let idx = self.engine.keyspace().shard_of(h);
        let now = self.now();
        let slice = &mut self.locks.shard(idx).dbs[self.client.db];
        // A change follows: a running snapshot keeps the value as it was
        // (as `locate_in` does for every write).
        if self.writes {
            slice.preserve(h, key);
        }
        let found = slice.lookup(h, key, now);
        (found, &mut *self.out)
    }

    /// Looks up a key for writing (Redis's lookupKeyWrite).
    #[inline]
    pub fn lookup_write(&mut self, key: &[u8]) -> Option<&mut Object> {
        let now = self.now();
        let (db, h) = self.locate(key);
        db.lookup(h, key, now)
    }

    /// Looks a key up without counting an access (TTL, TYPE, EXISTS, OBJECT).
    pub fn lookup_no_touch(&mut self, key: &[u8]) -> Option<&mut Object> {
        let now = self.now();
        let (db, h) = self.locate(key);
        db.lookup_no_touch(h, key, now)
    }

    /// The string at `key` for reading; WRONGTYPE for other types.
    pub fn read_string(&mut self, key: &[u8]) -> Result<Option<&mut CompactBytes>, Error> {
        match self.lookup_read(key) {
            None => Ok(None),
            Some(Object {
                value: Value::Str(s),
                ..
            }) => Ok(Some(s)),
            Some(_) => Err(Error::WRONGTYPE),
        }
    }

    /// The string at `key` for writing; WRONGTYPE for other types.
    pub fn write_string(&mut self, key: &[u8]) -> Result<Option<&mut CompactBytes>, Error> {
        match self.lookup_write(key) {
            None => Ok(None),
            Some(Object {
                value: Value::Str(s),
                ..
            }) => Ok(Some(s)),
            Some(_) => Err(Error::WRONGTYPE),
        }
    }

    /// The type of the value at `key`, if any (no access-time refresh).
    pub fn type_of(&mut self, key: &[u8]) -> Option<ValueType> {
        self.lookup_no_touch(key).map(|o| o.value.value_type())
    }

    /// Stores a value (SET semantics: the TTL is cleared unless `keep_ttl`)
    /// as `event` of `class`: Redis's setKey followed by its
    /// notifyKeyspaceEvent, with what `changed` does. A list, sorted set or
    /// stream stored where clients wait serves them (Redis's dbAdd signals
    /// the key).
    pub fn store(&mut self, key: &[u8], value: Value, keep_ttl: bool, class: u32, event: &str) {
        let awaited = matches!(value, Value::List(_) | Value::ZSet(_) | Value::Stream(_));
        self.set_value(key, value, keep_ttl);
        self.notify(class, event, key);
        if awaited {
            self.signal_ready(key);
        }
    }

    /// Stores a value as `store` does, without announcing it (the caller
    /// announces an event it decides later).
    pub fn set_value(&mut self, key: &[u8], value: Value, keep_ttl: bool) {
        let now = self.now_ms;
        let (db, h) = self.locate(key);
        db.set(h, key, value, keep_ttl, now);
        self.modified(key);
    }

    /// Deletes a key as DEL does: with what `changed` does and the "del"
    /// event; true when it existed (and had not expired).
    pub fn delete_key(&mut self, key: &[u8]) -> bool {
        let deleted = self.delete(key);
        if deleted {
            self.notify(crate::pubsub::notify::GENERIC, "del", key);
        }
        deleted
    }

    /// Deletes a key without announcing it (the caller announces what the
    /// deletion is part of); true when it existed (and had not expired).
    pub fn delete(&mut self, key: &[u8]) -> bool {
        self.take(key).is_some()
    }

    /// `delete`, handing back the value: the caller frees it (UNLINK
    /// gives a large one to the lazy-free worker).
    pub fn take(&mut self, key: &[u8]) -> Option<Object> {
        let now = self.now();
        let (db, h) = self.locate(key);
        db.lookup_no_touch(h, key, now)?;
        let obj = db.remove(h, key);
        self.modified(key);
        obj
    }

    /// Sets an absolute expiry (ms) on an existing key. A time already
    /// past deletes the key (Redis's checkAlreadyExpired). Returns false
    /// when the key does not exist.
    pub fn set_expire_at(&mut self, key: &[u8], at_ms: i64) -> bool {
        let now = self.now();
        let (db, h) = self.locate(key);
        if db.lookup_no_touch(h, key, now).is_none() {
            return false;
        }
        if at_ms <= now.ms as i64 {
            db.remove(h, key);
        } else {
            db.set_expire(h, key, at_ms as u64);
            // A writable replica expires what its own clients set.
            if !self.client.from_master && self.engine.repl().is_replica() {
                self.engine
                    .repl()
                    .remember_local_expire(self.client.db, key);
            }
        }
        self.modified(key);
        true
    }

    /// Removes the TTL of a key; true when it had one.
    pub fn persist(&mut self, key: &[u8]) -> bool {
        let now = self.now();
        let (db, h) = self.locate(key);
        if db.lookup_no_touch(h, key, now).is_none() {
            return false;
        }
        let had = db.persist(h, key);
        if had {
            self.modified(key);
        }
        had
    }

    /// A command changed `key` (in the current database) by `event` of
    /// notification class `class`: Redis's signalModifiedKey,
    /// notifyKeyspaceEvent and server.dirty++ as one step. It counts a
    /// change for the save rules (and so the call is logged to the
    /// append-only file), ends the transactions WATCHing the key, and
    /// announces the event to keyspace notifications. A change counting
    /// more than one (SADD of several members) adds the rest with
    /// `add_dirty`.
    #[inline]
    pub fn changed(&mut self, key: &[u8], class: u32, event: &str) {
        let db = self.client.db;
        self.changed_in(db, key, class, event);
    }

    /// `changed` for a key of database `db` (MOVE, COPY ... DB).
    #[inline]
    pub fn changed_in(&mut self, db: usize, key: &[u8], class: u32, event: &str) {
        self.modified_in(db, key);
        self.notify_in(db, class, event, key);
    }

    /// `changed` for a change that gave `key` data blocked clients may
    /// wait for (a push, a value moved into place): they are served once
    /// the command is done (Redis's signalKeyAsReady).
    #[inline]
    pub fn pushed(&mut self, key: &[u8], class: u32, event: &str) {
        let db = self.client.db;
        self.pushed_in(db, key, class, event);
    }

    /// `pushed` for a key of database `db`.
    #[inline]
    pub fn pushed_in(&mut self, db: usize, key: &[u8], class: u32, event: &str) {
        self.changed_in(db, key, class, event);
        self.signal_ready_in(db, key);
    }

    /// Records that `key` changed: counts a change for the save rules and
    /// invalidates WATCHes on it (Redis's signalModifiedKey). Commands
    /// call `changed`, which also announces the event; this is for the
    /// context's own primitives (`set_value`, `delete`...), whose callers
    /// announce what they did, and for PFCOUNT's cached cardinality, which
    /// Redis signals without an event.
    #[inline]
    pub fn modified(&mut self, key: &[u8]) {
        let db = self.client.db;
        self.modified_in(db, key);
    }

    #[inline]
    fn modified_in(&mut self, db: usize, key: &[u8]) {
        self.dirty += 1;
        let watching = self.engine.anyone_watching();
        let (slice, h) = self.locate_in(db, key);
        // What the value holds now is what used_memory charges it.
        slice.recharge(h, key);
        if watching {
            slice.touch_watched(h, key);
        }
        // Client-side caching: the clients that read the key are told
        // (Redis's signalModifiedKey calls trackingInvalidateKey).
        if self.engine.tracking().active() {
            self.track_change(key, true);
        }
    }

    /// The client whose change this is, for tracking: the script's caller
    /// for a script's commands (Redis's server.current_client).
    fn tracking_writer(&self) -> u64 {
        match self.client.tracking.as_ref() {
            Some(t) if t.script_caller != 0 => t.script_caller,
            _ => self.client.info.id,
        }
    }

    /// Invalidates `key` for client-side caching; `by_writer`: changed by
    /// this command itself (not expired under it).
    #[cold]
    #[inline(never)]
    pub(crate) fn track_change(&mut self, key: &[u8], by_writer: bool) {
        let id = self.tracking_writer();
        let state = self.client.tracking.get_or_insert_with(Default::default);
        state.pending.id = id;
        self.engine
            .invalidate_key(key, &mut state.pending, by_writer);
    }

    /// FLUSHDB, FLUSHALL, SWAPDB: every tracking client is told that
    /// every key changed.
    pub(crate) fn track_flush(&mut self) {
        if !self.engine.tracking().active() {
            return;
        }
        let id = self.tracking_writer();
        let state = self.client.tracking.get_or_insert_with(Default::default);
        state.pending.id = id;
        self.engine.invalidate_all(&mut state.pending);
    }

    /// After a READONLY command of a tracking client: remembers the keys
    /// it read, unless it broadcasts or its OPTIN/OPTOUT state says not
    /// to. Inside a script, a read-only command makes the script's caller
    /// remember the keys the script declared.
    #[cold]
    #[inline(never)]
    pub(crate) fn remember_read_keys(&mut self, argv: &[&[u8]]) {
        let spec = table().get(self.cmd_id).spec;
        if spec.has(flag::PUBSUB) {
            return;
        }
        if let Some(t) = self.client.tracking.as_ref() {
            if t.script_caller != 0 {
                if let Some(keys) = &t.script_keys {
                    let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
                    self.engine.remember_for(t.script_caller, &keys);
                }
                return;
            }
        }
        // The scripts' own read-only forms (EVAL_RO, FCALL_RO) remember
        // through the commands they run.
        if spec.group == Group::Scripting {
            return;
        }
        if self
            .client
            .info
            .tracking
            .load(std::sync::atomic::Ordering::Relaxed)
            == 0
        {
            return;
        }
        // Most reads name one key at a fixed place: no list to build.
        if let Some(key) = crate::command::keys::sole_key(spec, argv) {
            if let Some(key) = key {
                self.engine.remember_keys(self.client, &[key]);
            }
            return;
        }
        let Some(positions) = keys::key_positions(spec, argv) else {
            return;
        };
        let keys: Vec<&[u8]> = positions
            .iter()
            .filter_map(|(i, _)| argv.get(*i).copied())
            .collect();
        if !keys.is_empty() {
            self.engine.remember_keys(self.client, &keys);
        }
    }

    /// Redis's notifyKeyspaceEvent: reports that `event` (of class
    /// `class`, a `pubsub::notify` bit) happened to `key` in the current
    /// database. Commands call it where they change data, as Redis does.
    /// Costs one relaxed atomic load while the class is off.
    #[inline]
    pub fn notify(&mut self, class: u32, event: &str, key: &[u8]) {
        let db = self.client.db;
        self.notify_in(db, class, event, key);
    }

    /// Whether notifications of `class` are on (one relaxed load).
    #[inline]
    pub fn notifies(&self, class: u32) -> bool {
        self.engine
            .pubsub()
            .notify_flags
            .load(std::sync::atomic::Ordering::Relaxed)
            & class
            != 0
    }

    /// `notify` for a key of database `db` (MOVE, COPY ... DB).
    #[inline]
    pub fn notify_in(&mut self, db: usize, class: u32, event: &str, key: &[u8]) {
        let flags = self
            .engine
            .pubsub()
            .notify_flags
            .load(std::sync::atomic::Ordering::Relaxed);
        if flags & class != 0 {
            self.publish_event(flags, db, event.as_bytes(), key);
        }
    }

    #[cold]
    #[inline(never)]
    fn publish_event(&mut self, flags: u32, db: usize, event: &[u8], key: &[u8]) {
        // What the databases recorded meanwhile (a key that expired on
        // look-up, one this command created) comes first.
        self.publish_db_events();
        // A subscribed client gets its own messages in its reply buffer.
        let publisher = self.client.subscribed().then(|| crate::pubsub::Publisher {
            info: &self.client.info,
            out: &mut *self.out,
        });
        self.engine
            .pubsub()
            .keyspace_event(flags, db, event, key, publisher);
    }

    /// Publishes the key creations and expiries the held shards' databases
    /// recorded (see `keyspace::db::DbEvent`): before each event of the
    /// command, and when it ends.
    #[inline]
    pub(crate) fn publish_db_events(&mut self) {
        if self.engine.keyspace().env().events_pending() {
            self.publish_pending_db_events();
        }
    }

    #[cold]
    #[inline(never)]
    fn publish_pending_db_events(&mut self) {
        let engine = self.engine;
        let client = &*self.client;
        let out = &mut *self.out;
        let tracking = engine.tracking().active();
        let mut expired = Vec::new();
        for shard in self.locks.held_mut() {
            for (i, db) in shard.dbs.iter_mut().enumerate() {
                let events = db.take_events();
                if events.is_empty() {
                    continue;
                }
                if tracking {
                    crate::tracking::expired_keys(&events, &mut expired);
                }
                let publisher = client.subscribed().then(|| crate::pubsub::Publisher {
                    info: &client.info,
                    out: &mut *out,
                });
                engine.pubsub().db_events(i, events, publisher);
            }
        }
        // Keys that expired under the command: their readers are told
        // (an expiry is nobody's own change, for NOLOOP in BCAST mode).
        for key in expired {
            self.track_change(&key, false);
        }
    }

    /// Records that `key` may now serve clients blocked on it (a push, the
    /// destination of a move...). Costs one relaxed load while nobody is
    /// blocked; see `crate::blocking`.
    #[inline]
    pub fn signal_ready(&mut self, key: &[u8]) {
        let db = self.client.db;
        self.signal_ready_in(db, key);
    }

    pub fn signal_ready_in(&mut self, db: usize, key: &[u8]) {
        if self
            .engine
            .clients()
            .blocked
            .load(std::sync::atomic::Ordering::Relaxed)
            == 0
        {
            return;
        }
        let (slice, _) = self.locate_in(db, key);
        if !slice.waiters.has_waiters(key) {
            return;
        }
        let ready = &mut self.client.ready_keys;
        if !ready.iter().any(|(d, k)| *d == db && k.as_slice() == key) {
            ready.push((db, CompactBytes::from_slice(key)));
        }
    }

    /// Whether the running command may block. Inside MULTI/EXEC or a
    /// script, or while serving a blocked client, a blocking command that
    /// finds no data replies as on timeout at once (Redis's
    /// CLIENT_DENY_BLOCKING).
    pub fn may_block(&self) -> bool {
        !self.in_multi && !self.in_script && self.serving.is_none()
    }

    /// The keys a blocking command should look at: all of `keys`, or only
    /// the ready key when serving a blocked client (Redis serves a waiter
    /// from the key that became ready, not from the first of its keys).
    pub fn blocking_keys<'k>(&self, keys: &[&'k [u8]]) -> Vec<&'k [u8]> {
        match self.serving {
            Some(k) => keys
                .iter()
                .copied()
                .filter(|key| *key == k)
                .take(1)
                .collect(),
            None => keys.to_vec(),
        }
    }

    /// While serving a blocked client: declines to serve it, so that it
    /// goes on waiting (a stream with nothing past its ID). The command
    /// must then have written no reply.
    pub fn keep_waiting(&mut self) {
        self.client.keep_waiting = true;
    }

    /// Blocks the calling client until one of `req.keys` receives data of
    /// `req.value_type`, the deadline passes, or it is unblocked. The
    /// command writes no reply: the reply comes when the client is served
    /// (its command runs again) or times out. When the command may not
    /// block (see `may_block`), `timed_out` writes the timeout's reply now.
    pub fn block_on(
        &mut self,
        argv: &[&[u8]],
        req: crate::blocking::BlockRequest<'_>,
        timed_out: impl FnOnce(&mut ReplyWriter),
    ) {
        if !self.may_block() {
            timed_out(self.out);
            return;
        }
        self.engine
            .register_block(self.locks, self.client, self.cmd_id, argv, req);
    }

    /// Records `n` changes that have no single key (FLUSHDB...).
    pub fn add_dirty(&mut self, n: u64) {
        self.dirty += n;
    }

    /// Runs `f`, whose writes count as one change however many keys they
    /// signal, as Redis counts a command that does server.dirty++ once
    /// (SET with an expiry, RENAME, MOVE, LMOVE): every key is still
    /// signalled (WATCH, client-side caching, keyspace events).
    pub fn as_one_change<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let before = self.dirty;
        let r = f(self);
        if self.dirty > before {
            self.dirty = before + 1;
        }
        r
    }

    pub fn db_index(&self) -> usize {
        self.client.db
    }

    pub fn databases(&self) -> usize {
        self.engine.keyspace().databases()
    }

    /// The running command's full name ("set", "config|get").
    pub fn command_name(&self) -> &'static str {
        table().get(self.cmd_id).fullname.as_str()
    }
}
