//! `Db`: one logical database's share of one shard: the key table, the index
//! of keys that carry a TTL, and the lazy and active expiry that keep the two
//! consistent.
//!
//! Every change of a key's expiry goes through `Db`, so the expiry index
//! (`expires`) always holds exactly the keys whose `Object::expire_at` is set.
//! The index exists so the active expiry cycle samples only keys that can
//! expire, as Redis samples its `expires` dict.
//!
//! Hashes whose fields have TTLs have an index of their own
//! (`field_expires`, Redis's `hexpires`), so that the cycle reaps expired
//! fields by visiting only those hashes. It holds at least every such hash:
//! a hash command registers its key when it gives a field a TTL, and an
//! entry whose hash lost its TTLs (or its key) is dropped when the cycle
//! next visits it. Hash accesses go through `lookup_hash`, which deletes
//! the expired fields first, and the key with its last field.

use super::bytes::CompactBytes;
use super::dict::{hash_key, Dict};
use super::hash::Hash;
use super::object::{Object, Value};
use super::watch::WatchRegistry;
use crate::env::{KeyspaceEnv, Now};
use std::sync::Arc;

use crate::memory::{INDEX_NODE, KEY_NODE};
use crate::sketch::FrequencySketch;

/// The fewest keys a frequency sketch is sized for.
const SKETCH_MIN_KEYS: usize = 64;

/// What happened to a key inside the `Db` that keyspace notifications
/// report. Redis notifies these where they happen (dbAdd, the expiry of a
/// key or of hash fields), which a `Db` cannot; it records them, in order,
/// and whoever holds the shard publishes them: the command before its own
/// events (`Ctx::notify`) and when it ends, the active expiry cycle after
/// its pass.
pub enum DbEvent {
    /// A key was created ("new").
    New(CompactBytes),
    /// A key expired ("expired").
    Expired(CompactBytes),
    /// Fields of the hash at the key expired ("hexpired"); `emptied`: the
    /// key went with the last of them ("del").
    FieldsExpired { key: CompactBytes, emptied: bool },
}

/// What expired, for the append-only file: a key, or fields of a hash.
pub enum Expired {
    Key(CompactBytes),
    Fields(CompactBytes, Vec<Vec<u8>>),
}

/// This database's part in a running point-in-time snapshot (see
/// persist/snapshot.rs for the whole model).
///
/// The snapshot walks the key table bucket by bucket; `cursor` is the next
/// bucket it will visit, in the order of `Dict::walk_position` (both
/// tables when a resize was running). The table neither resizes nor moves
/// entries meanwhile, so a key's position tells whether the walk has
/// passed it. Before a key in a bucket
/// not yet visited changes, its object as it was at the start is copied
/// into `saved` (None: the key did not exist then), once; the walk skips
/// the keys found in `saved` and writes `saved` instead.
pub struct DbSnapshot {
    /// The database index this data had when the snapshot started (SWAPDB
    /// moves the state along with the data).
    pub origin: usize,
    pub cursor: usize,
    pub buckets: usize,
    pub saved: Dict<Option<Object>>,
    /// The whole table as it was when FLUSHDB / FLUSHALL emptied the
    /// database mid-snapshot: the walk goes on over it, and the live table
    /// needs no more copies (all its keys are newer than the snapshot).
    pub detached: Option<Dict<Object>>,
}

impl DbSnapshot {
    fn preserve(&mut self, env: &KeyspaceEnv, keys: &Dict<Object>, hash: u64, key: &[u8]) {
        if self.detached.is_some() || self.buckets == 0 {
            return;
        }
        if keys.walk_position(hash, key) < self.cursor || self.saved.get(hash, key).is_some() {
            return;
        }
        let copy = keys.get(hash, key).cloned();
        let bytes = std::mem::size_of::<Object>()
            + key.len()
            + copy.as_ref().map_or(0, |o| o.value.heap_size_sampled(0));
        env.add_snapshot_copied(bytes as u64);
        self.saved
            .insert_new(hash, CompactBytes::from_slice(key), copy);
    }
}

/// What the layers above the keyspace keep beside each database slice:
/// the clients blocked on its keys (BLPOP, XREADGROUP...). It lives in the
/// slice, so under its shard's lock, and stays with the database index
/// when SWAPDB exchanges the data, as Redis's blocking_keys do. The
/// keyspace tells it when values leave their keys, since a client waiting
/// on a stream must hear that the stream went away.
pub trait Waiters: Default {
    /// Whether nobody waits on any key of this slice (then no other method
    /// is called).
    fn is_empty(&self) -> bool;
    /// The value `old` leaves `key`: deleted, expired or replaced.
    fn value_left(&mut self, key: &[u8], old: &Value);
    /// Every key of `table` leaves at once (FLUSHDB, FLUSHALL).
    fn table_emptied(&mut self, table: &Dict<Object>);
}

/// No waiters: a keyspace used on its own.
impl Waiters for () {
    fn is_empty(&self) -> bool {
        true
    }
    fn value_left(&mut self, _: &[u8], _: &Value) {}
    fn table_emptied(&mut self, _: &Dict<Object>) {}
}

pub struct Db<W = ()> {
    keys: Dict<Object>,
    expires: Dict<()>,
    /// Reverse-binary cursor of the active expiry cycle over `expires`.
    expire_cursor: u64,
    /// Keys of hashes that have (or recently had) fields with a TTL.
    field_expires: Dict<()>,
    field_expire_cursor: u64,
    /// Keys that expired (lazily or actively) since the last reset; read by INFO.
    pub expired_keys: u64,
    /// Hash fields that expired (Redis's expired_subkeys).
    pub expired_fields: u64,
    /// Clients WATCHing keys of this database. It stays with the database
    /// index when SWAPDB exchanges the data (as in Redis).
    pub watchers: WatchRegistry,
    /// Set while a snapshot is being written.
    pub snapshot: Option<Box<DbSnapshot>>,
    /// Keys (and hash fields) that expired since the last command or
    /// cycle logged them, when the append-only file is on.
    pub expired_records: Vec<Expired>,
    /// Clients blocked on keys of this database (BLPOP...); like
    /// `watchers`, it stays with the index on SWAPDB.
    pub waiters: W,
    /// Key creations and expiries not yet published, when keyspace
    /// notifications want them (see [`DbEvent`]).
    events: Vec<DbEvent>,
    /// The keyspace's settings, shared by all its databases.
    env: Arc<KeyspaceEnv>,
    /// Bytes charged for this slice's data (see [`crate::memory`]); the
    /// keyspace's total is in `env`.
    used: usize,
    /// The part of `used` that is the tables' bucket arrays.
    tables: usize,
    /// How often keys were asked for lately, held or not, under the
    /// TinyLFU policy (see [`crate::sketch`]); made at its first use.
    sketch: Option<Box<FrequencySketch>>,
}

impl<W> Drop for Db<W> {
    fn drop(&mut self) {
        // Events nobody will take no longer count as pending.
        self.take_events();
    }
}

/// A hash looked up for a command, after its expired fields were deleted.
pub enum HashLookup<'a> {
    Absent,
    WrongType,
    Found(&'a mut Hash),
}

/// Outcome of one active-expiry pass over a database slice.
#[derive(Default, Debug, Clone, Copy)]
pub struct ExpireRound {
    pub sampled: usize,
    pub expired: usize,
}

impl<W> Db<W> {
    /// The events recorded since the last call, in order (see `DbEvent`).
    pub fn take_events(&mut self) -> Vec<DbEvent> {
        if self.events.is_empty() {
            return Vec::new();
        }
        self.env.events_taken(self.events.len() as u64);
        std::mem::take(&mut self.events)
    }
}

impl<W: Waiters> Db<W> {
    /// An empty database slice of the keyspace whose settings are `env`.
    pub fn new(env: Arc<KeyspaceEnv>) -> Db<W> {
        Db {
            keys: Dict::default(),
            expires: Dict::default(),
            expire_cursor: 0,
            field_expires: Dict::default(),
            field_expire_cursor: 0,
            expired_keys: 0,
            expired_fields: 0,
            watchers: WatchRegistry::default(),
            snapshot: None,
            expired_records: Vec::new(),
            waiters: W::default(),
            events: Vec::new(),
            env,
            used: 0,
            tables: 0,
            sketch: None,
        }
    }

    /// Counts an access to `key` (held or not) in the frequency sketch,
    /// under the TinyLFU policy.
    #[inline]
    fn count_access(&mut self, hash: u64) {
        if !self.env.access().tinylfu {
            return;
        }
        let keys = self.keys.len();
        let sketch = match &mut self.sketch {
            Some(s) => s,
            None => {
                let s = Box::new(FrequencySketch::new(keys.max(SKETCH_MIN_KEYS)));
                self.charge(s.memory_bytes());
                self.sketch.insert(s)
            }
        };
        sketch.increment(hash);
    }

    /// The sketch's estimate of how often `key` was asked for, sizing the
    /// sketch to the keys held (a larger one starts its counts over).
    fn sketch_estimate(&mut self, hash: u64) -> u8 {
        let keys = self.keys.len();
        let Some(sketch) = self.sketch.as_deref_mut() else {
            return 0;
        };
        let before = sketch.memory_bytes();
        sketch.ensure_capacity(keys);
        let (after, estimate) = (sketch.memory_bytes(), sketch.estimate(hash));
        if after > before {
            self.charge(after - before);
        }
        estimate
    }

    /// Bytes this slice's keys, values, indexes and tables are charged
    /// (see [`crate::memory`]).
    pub fn used_bytes(&self) -> usize {
        self.used
    }

    #[inline]
    fn charge(&mut self, bytes: usize) {
        self.used += bytes;
        self.env.dataset_grew(bytes);
    }

    #[inline]
    fn discharge(&mut self, bytes: usize) {
        let bytes = bytes.min(self.used);
        self.used -= bytes;
        self.env.dataset_shrank(bytes);
    }

    /// Charges the change of the tables' bucket arrays since the last call.
    #[inline]
    fn retable(&mut self) {
        let now = (self.keys.buckets() + self.expires.buckets() + self.field_expires.buckets())
            * std::mem::size_of::<usize>();
        if now != self.tables {
            let was = std::mem::replace(&mut self.tables, now);
            if now > was {
                self.charge(now - was);
            } else {
                self.discharge(was - now);
            }
        }
    }

    /// Charges an object entering the key table under `key`.
    #[inline]
    fn charge_entry(&mut self, key: &[u8], obj: &mut Object) {
        let value = obj.value.charge();
        obj.charged = crate::memory::to_units(value);
        self.charge(
            KEY_NODE + crate::memory::key_heap(key.len()) + crate::memory::from_units(obj.charged),
        );
    }

    /// Discharges an object that left the key table.
    #[inline]
    fn discharge_entry(&mut self, key: &[u8], obj: &Object) {
        self.discharge(
            KEY_NODE + crate::memory::key_heap(key.len()) + crate::memory::from_units(obj.charged),
        );
    }

    /// Charges the value at `key` anew after it changed in place (a
    /// command that pushed, appended, added...); nothing when the key is
    /// absent. The engine calls it where a command reports a changed key.
    pub fn recharge(&mut self, hash: u64, key: &[u8]) {
        let Some(obj) = self.keys.get_mut(hash, key) else {
            return;
        };
        let units = crate::memory::to_units(obj.value.charge());
        let was = std::mem::replace(&mut obj.charged, units);
        if units > was {
            self.charge(crate::memory::from_units(units - was));
        } else if units < was {
            self.discharge(crate::memory::from_units(was - units));
        }
    }

    /// Adds `key` to the expiry index.
    fn index_expiry(&mut self, hash: u64, key: &[u8]) {
        self.expires
            .insert_new(hash, CompactBytes::from_slice(key), ());
        self.charge(INDEX_NODE + crate::memory::key_heap(key.len()));
        self.retable();
    }

    /// Removes `key` from the expiry index, if it is there.
    fn unindex_expiry(&mut self, hash: u64, key: &[u8]) {
        if self.expires.remove(hash, key).is_some() {
            self.discharge(INDEX_NODE + crate::memory::key_heap(key.len()));
            self.retable();
        }
    }

    /// Removes `key` from the index of hashes with field TTLs, if it is there.
    fn unindex_field_expiry(&mut self, hash: u64, key: &[u8]) {
        if self.field_expires.remove(hash, key).is_some() {
            self.discharge(INDEX_NODE + crate::memory::key_heap(key.len()));
            self.retable();
        }
    }

    /// Copies the key's current object aside if a running snapshot has
    /// not written it yet. Every change of a key passes here first (the
    /// `Db` methods below, and `Ctx::locate_in` for write commands, which
    /// change values in place).
    #[inline]
    pub fn preserve(&mut self, hash: u64, key: &[u8]) {
        if let Some(s) = self.snapshot.as_deref_mut() {
            s.preserve(&self.env, &self.keys, hash, key);
        }
    }

    #[inline]
    fn layout_fixed(&self) -> bool {
        self.snapshot
            .as_ref()
            .is_some_and(|s| s.detached.is_none() && s.buckets > 0)
    }

    fn table_insert(&mut self, hash: u64, key: &[u8], mut obj: Object) -> &mut Object {
        if self.env.wants_new() {
            self.record(DbEvent::New(CompactBytes::from_slice(key)));
        }
        if self.env.access().tinylfu {
            // A new key starts with the accesses the sketch remembers.
            let estimate = self.sketch_estimate(hash).max(1);
            obj.access = (obj.access & !255) | estimate as u32;
        }
        self.table_insert_quiet(hash, key, obj)
    }

    /// `table_insert` without a "new" event (loading a snapshot).
    fn table_insert_quiet(&mut self, hash: u64, key: &[u8], mut obj: Object) -> &mut Object {
        self.charge_entry(key, &mut obj);
        if !self.layout_fixed() {
            // A running resize moves a few entries per insertion (here, so
            // that the old array's release is charged at once).
            if self.keys.is_rehashing() {
                self.keys.rehash_step(crate::dict::STEP_ENTRIES);
                self.retable();
            } else if self.keys.wants_growth() {
                // The insertion would grow the table: not while the new
                // bucket array would take the data past maxmemory (the
                // chains grow longer meanwhile), and charged before, as
                // the object cannot be borrowed across the charge.
                let more = 2 * self.keys.table_size() * std::mem::size_of::<usize>();
                if self
                    .env
                    .may_grow(more, self.keys.len(), self.keys.table_size())
                {
                    self.keys.expand(self.keys.len() + 1);
                    self.retable();
                }
            }
        }
        // Growth and moves were decided above.
        self.keys
            .insert_new_fixed(hash, CompactBytes::from_slice(key), obj)
    }

    fn table_remove(&mut self, hash: u64, key: &[u8]) -> Option<Object> {
        let removed = if self.layout_fixed() {
            self.keys.remove_fixed(hash, key).map(|(_, o)| o)
        } else {
            self.keys.remove(hash, key).map(|(_, o)| o)
        };
        if let Some(obj) = &removed {
            self.discharge_entry(key, obj);
            self.retable();
        }
        removed
    }

    /// Starts this database's part of a snapshot.
    pub fn begin_snapshot(&mut self, origin: usize) {
        self.snapshot = Some(Box::new(DbSnapshot {
            origin,
            cursor: 0,
            buckets: self.keys.walk_len(),
            saved: Dict::new(),
            detached: None,
        }));
    }

    /// Ends it (done or abandoned): the table may resize again.
    pub fn end_snapshot(&mut self) -> Option<Box<DbSnapshot>> {
        let s = self.snapshot.take();
        self.keys.fit();
        self.retable();
        s
    }

    /// Moves up to `max_entries` entries of each table's running resize
    /// (Redis's activerehashing, from the cron), except the key table's
    /// while a snapshot needs its layout fixed. Returns whether a resize
    /// that may move still runs.
    pub fn rehash_step(&mut self, max_entries: usize) -> bool {
        let mut running = false;
        if !self.layout_fixed() {
            running |= self.keys.rehash_step(max_entries);
        }
        running |= self.expires.rehash_step(max_entries);
        running |= self.field_expires.rehash_step(max_entries);
        self.retable();
        running
    }

    /// One step of a snapshot's walk: visits up to `max_buckets` buckets
    /// from the cursor, calling `f` for every key the snapshot must write
    /// from the table (those not copied aside). Returns true when the walk
    /// of this table is complete.
    pub fn snapshot_walk(&mut self, max_buckets: usize, mut f: impl FnMut(&[u8], &Object)) -> bool {
        let Some(s) = self.snapshot.as_deref_mut() else {
            return true;
        };
        let table: &Dict<Object> = match &s.detached {
            Some(d) => d,
            None => &self.keys,
        };
        let stop = s.buckets.min(s.cursor.saturating_add(max_buckets));
        while s.cursor < stop {
            for (k, o) in table.walk_bucket(s.cursor) {
                if s.saved.is_empty() || s.saved.get(super::dict::hash_key(k), k).is_none() {
                    f(k, o);
                }
            }
            s.cursor += 1;
        }
        s.cursor >= s.buckets
    }

    /// Presizes the key table for `n` keys (snapshot loading).
    pub fn reserve(&mut self, n: usize) {
        if self.snapshot.is_none() {
            self.keys.expand(n);
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn volatile_len(&self) -> usize {
        self.expires.len()
    }

    /// Looks a key up for reading or writing. An expired key is deleted on
    /// the spot (Redis's lazy expiry), unless `now` keeps it, and reported
    /// absent.
    #[inline]
    pub fn lookup(&mut self, hash: u64, key: &[u8], now: Now) -> Option<&mut Object> {
        self.count_access(hash);
        let obj: *mut Object = self.keys.get_mut(hash, key)?;
        // SAFETY: `obj` points into `self.keys` and nothing else touches the
        // table between here and either the return or the removal below,
        // after which the pointer is no longer used. (This is the borrow
        // pattern current borrowck cannot express for a conditional return.)
        unsafe {
            if (*obj).is_expired(now.ms) {
                // During CLIENT PAUSE expired keys read as absent but stay.
                if !now.keep_expired {
                    self.remove_expired(hash, key);
                }
                return None;
            }
            if !now.no_touch {
                (*obj).touch(self.env.access(), now.ms);
            }
            Some(&mut *obj)
        }
    }

    /// Like `lookup` but does not refresh the access time (TTL, TYPE, EXISTS
    /// and OBJECT do not count as accesses, as in Redis).
    pub fn lookup_no_touch(&mut self, hash: u64, key: &[u8], now: Now) -> Option<&mut Object> {
        let obj: *mut Object = self.keys.get_mut(hash, key)?;
        // SAFETY: as in `lookup`.
        unsafe {
            if (*obj).is_expired(now.ms) {
                // During CLIENT PAUSE expired keys read as absent but stay.
                if !now.keep_expired {
                    self.remove_expired(hash, key);
                }
                return None;
            }
            Some(&mut *obj)
        }
    }

    /// Mutable look-up that neither touches nor deletes an expired key
    /// (which reads as absent).
    pub fn peek_mut(&mut self, hash: u64, key: &[u8], now_ms: u64) -> Option<&mut Object> {
        self.keys
            .get_mut(hash, key)
            .filter(|o| !o.is_expired(now_ms))
    }

    /// Read-only look-up that treats an expired key as absent without
    /// deleting it; for commands that must hold several values at once.
    pub fn peek(&self, hash: u64, key: &[u8], now_ms: u64) -> Option<&Object> {
        self.keys.get(hash, key).filter(|o| !o.is_expired(now_ms))
    }

    /// Looks up the hash at `key` for a hash command (`touch` for the
    /// commands that count as an access), deleting its fields whose time
    /// has come, and the key if none is left. Returns the hash and the
    /// number of fields deleted (changes the caller counts).
    pub fn lookup_hash(
        &mut self,
        hash: u64,
        key: &[u8],
        now: Now,
        touch: bool,
    ) -> (HashLookup<'_>, usize) {
        let now_ms = now.ms;
        let found = if touch {
            self.lookup(hash, key, now)
        } else {
            self.lookup_no_touch(hash, key, now)
        };
        let obj: *mut Object = match found {
            None => return (HashLookup::Absent, 0),
            Some(o) => o,
        };
        // SAFETY: as in `lookup`: `obj` points into `self.keys`, and the
        // table is not touched between here and the returns below except
        // by `remove`, after which the pointer is no longer used.
        unsafe {
            let Value::Hash(h) = &mut (*obj).value else {
                return (HashLookup::WrongType, 0);
            };
            if !h.has_expired_fields(now_ms) {
                return (HashLookup::Found(h), 0);
            }
            // All of them: a command must not see a field past its time.
            // (A change: a running snapshot keeps the hash as it was.)
            let h: *mut crate::Hash = &mut **h;
            self.preserve(hash, key);
            let h = &mut *h;
            let reaped = self.reap_fields_of(h, key, now_ms);
            let emptied = h.is_empty();
            self.fields_expired_event(key, reaped, emptied);
            self.expired_fields += reaped as u64;
            if emptied {
                self.remove(hash, key);
            }
            self.touch_watched(hash, key);
            if !emptied {
                self.recharge(hash, key);
            }
            if emptied {
                (HashLookup::Absent, reaped)
            } else {
                (HashLookup::Found(&mut *(*obj).value.as_hash_mut()), reaped)
            }
        }
    }

    /// Records that the hash at `key` has fields with a TTL, for the active
    /// expiry cycle.
    pub fn track_field_expiry(&mut self, hash: u64, key: &[u8]) {
        if self.field_expires.get(hash, key).is_none() {
            self.field_expires
                .insert_new(hash, CompactBytes::from_slice(key), ());
            self.charge(INDEX_NODE + crate::memory::key_heap(key.len()));
            self.retable();
        }
    }

    /// Number of hashes known to have fields with a TTL (INFO's subexpiry).
    pub fn field_volatile_len(&self) -> usize {
        self.field_expires.len()
    }

    /// One step of the active expiry of hash fields: visit hashes of the
    /// field expiry index from the saved cursor until `budget` were
    /// examined, and delete their expired fields (and the keys they
    /// empty). `expired` counts the hashes that had some.
    pub fn active_expire_fields(&mut self, now_ms: u64, budget: usize) -> ExpireRound {
        let mut round = ExpireRound::default();
        if self.field_expires.is_empty() {
            return round;
        }
        let mut candidates: Vec<CompactBytes> = Vec::new();
        let mut cursor = self.field_expire_cursor;
        let mut visited_buckets = 0;
        loop {
            cursor = self
                .field_expires
                .scan(cursor, |k, _| candidates.push(k.clone()));
            visited_buckets += 1;
            if cursor == 0 || candidates.len() >= budget || visited_buckets >= budget * 4 {
                break;
            }
        }
        self.field_expire_cursor = cursor;
        round.sampled = candidates.len();
        for key in candidates {
            let h = hash_key(&key);
            let (reaped, emptied, keeps_ttls) = match self.keys.get_mut(h, &key) {
                // An expired key is left to the key cycle.
                Some(obj) if obj.is_expired(now_ms) => continue,
                Some(Object {
                    value: Value::Hash(hv),
                    ..
                }) => {
                    if !hv.has_expired_fields(now_ms) {
                        (0, false, hv.has_field_ttls())
                    } else {
                        let hv: *mut crate::Hash = &mut **hv;
                        self.preserve(h, &key);
                        // SAFETY: `preserve` only reads the key table and
                        // writes the snapshot's side list; the hash is
                        // still where `hv` points.
                        let hv = unsafe { &mut *hv };
                        let n = self.reap_fields_of(hv, &key, now_ms);
                        (n, hv.is_empty(), hv.has_field_ttls())
                    }
                }
                _ => (0, false, false),
            };
            if reaped > 0 {
                round.expired += 1;
                self.expired_fields += reaped as u64;
                self.fields_expired_event(&key, reaped, emptied);
                if emptied {
                    self.remove(h, &key);
                }
                self.touch_watched(h, &key);
            }
            if reaped > 0 && !emptied {
                self.recharge(h, &key);
            }
            if !keeps_ttls {
                self.unindex_field_expiry(h, &key);
            }
        }
        round
    }

    fn fields_expired_event(&mut self, key: &[u8], reaped: usize, emptied: bool) {
        if reaped > 0 && self.env.wants_expired() {
            self.record(DbEvent::FieldsExpired {
                key: CompactBytes::from_slice(key),
                emptied,
            });
        }
    }

    fn record(&mut self, event: DbEvent) {
        self.events.push(event);
        self.env.events_added(1);
    }

    /// Deletes a hash's expired fields, recording them for the log.
    fn reap_fields_of(&mut self, h: &mut crate::Hash, key: &[u8], now_ms: u64) -> usize {
        if self.env.record_expired() {
            let fields = h.reap_fields(now_ms, usize::MAX);
            let n = fields.len();
            if n > 0 {
                self.expired_records
                    .push(Expired::Fields(CompactBytes::from_slice(key), fields));
            }
            n
        } else {
            h.reap(now_ms, usize::MAX)
        }
    }

    fn remove_expired(&mut self, hash: u64, key: &[u8]) {
        self.preserve(hash, key);
        if let Some(old) = self.table_remove(hash, key) {
            self.leaving(key, &old.value);
        }
        self.unindex_expiry(hash, key);
        if !self.field_expires.is_empty() {
            self.unindex_field_expiry(hash, key);
        }
        self.expired_keys += 1;
        if self.env.record_expired() {
            self.expired_records
                .push(Expired::Key(CompactBytes::from_slice(key)));
        }
        if self.env.wants_expired() {
            self.record(DbEvent::Expired(CompactBytes::from_slice(key)));
        }
        // An expiry is a change for WATCH (Redis signals it on deletion).
        if !self.watchers.is_empty() {
            self.watchers.touch(key, false);
        }
    }

    /// The object at a key, expired or not (DEBUG OBJECT looks at the
    /// table as it is, like Redis's dictFind).
    pub fn get_raw(&self, hash: u64, key: &[u8]) -> Option<&Object> {
        self.keys.get(hash, key)
    }

    /// Whether a key is present and expired (not yet deleted).
    pub fn is_expired_key(&self, hash: u64, key: &[u8], now_ms: u64) -> bool {
        self.keys
            .get(hash, key)
            .is_some_and(|o| o.is_expired(now_ms))
    }

    /// Whether a key is in the table, expired or not.
    pub fn contains(&self, hash: u64, key: &[u8]) -> bool {
        self.keys.get(hash, key).is_some()
    }

    /// Marks the watchers of `key` after a change (Redis's touchWatchedKey).
    #[inline]
    pub fn touch_watched(&mut self, hash: u64, key: &[u8]) {
        if !self.watchers.is_empty() {
            let exists = self.keys.get(hash, key).is_some();
            self.watchers.touch(key, exists);
        }
    }

    /// FLUSHDB / FLUSHALL (with `replacement` None) and SWAPDB: marks the
    /// watchers whose keys change because this database's content is
    /// emptied or replaced by `replacement`'s.
    pub fn touch_all_watched(&mut self, replacement: Option<&Db<W>>, now_ms: u64) {
        if self.watchers.is_empty() {
            return;
        }
        let keys = &self.keys;
        self.watchers.touch_all(|key| {
            let h = super::dict::hash_key(key);
            let in_emptied = keys.get(h, key).is_some();
            let replaced = replacement.map(|r| {
                let o = r.keys.get(h, key);
                (o.is_some(), o.is_some_and(|o| o.is_expired(now_ms)))
            });
            (in_emptied, replaced)
        });
    }

    /// Exchanges the data of two databases, leaving each one's watchers
    /// in place (SWAPDB).
    pub fn swap_data(a: &mut Db<W>, b: &mut Db<W>) {
        std::mem::swap(&mut a.keys, &mut b.keys);
        std::mem::swap(&mut a.expires, &mut b.expires);
        std::mem::swap(&mut a.expire_cursor, &mut b.expire_cursor);
        std::mem::swap(&mut a.field_expires, &mut b.field_expires);
        std::mem::swap(&mut a.field_expire_cursor, &mut b.field_expire_cursor);
        // Both belong to one keyspace: its total does not change.
        std::mem::swap(&mut a.used, &mut b.used);
        std::mem::swap(&mut a.tables, &mut b.tables);
        std::mem::swap(&mut a.sketch, &mut b.sketch);
        // A running snapshot follows the data it is writing.
        std::mem::swap(&mut a.snapshot, &mut b.snapshot);
    }

    /// Stores `value` at `key`. With `keep_ttl` an existing key keeps its
    /// expiry; otherwise the key becomes persistent (SET's default).
    pub fn set(&mut self, hash: u64, key: &[u8], value: Value, keep_ttl: bool, now_ms: u64) {
        self.preserve(hash, key);
        if let Some(obj) = self.lookup(hash, key, Now::at(now_ms)) {
            let old = std::mem::replace(&mut obj.value, value);
            let clear_ttl = !keep_ttl && obj.expire_at != 0;
            if clear_ttl {
                obj.expire_at = 0;
                self.unindex_expiry(hash, key);
            }
            self.recharge(hash, key);
            self.leaving(key, &old);
            return;
        }
        let obj = Object::new(value, self.env.access(), now_ms);
        self.table_insert(hash, key, obj);
    }

    /// Inserts a key that `lookup` just reported absent.
    pub fn insert_new(&mut self, hash: u64, key: &[u8], value: Value, now_ms: u64) -> &mut Object {
        self.preserve(hash, key);
        let obj = Object::new(value, self.env.access(), now_ms);
        self.table_insert(hash, key, obj)
    }

    /// Inserts a whole object (with its expiry), replacing any existing key.
    /// Used by RENAME, MOVE, COPY, RESTORE and snapshot loading.
    pub fn insert_object(&mut self, hash: u64, key: &[u8], obj: Object) {
        self.insert_object_as(hash, key, obj, true);
    }

    /// `insert_object` for snapshot loading, which is no key creation for
    /// keyspace notifications (Redis's dbAddRDBLoad).
    pub fn insert_loaded(&mut self, hash: u64, key: &[u8], obj: Object) {
        self.insert_object_as(hash, key, obj, false);
    }

    fn insert_object_as(&mut self, hash: u64, key: &[u8], obj: Object, announce: bool) {
        self.preserve(hash, key);
        let expire_at = obj.expire_at;
        if matches!(&obj.value, Value::Hash(h) if h.has_field_ttls()) {
            self.track_field_expiry(hash, key);
        }
        if let Some(old) = self.keys.get_mut(hash, key) {
            let had_ttl = old.expire_at != 0;
            let previous = std::mem::replace(old, obj);
            // The new object takes the old one's place in the table.
            self.discharge(crate::memory::from_units(previous.charged));
            if let Some(new) = self.keys.get_mut(hash, key) {
                new.charged = 0;
            }
            self.recharge(hash, key);
            self.leaving(key, &previous.value);
            match (had_ttl, expire_at != 0) {
                (true, false) => self.unindex_expiry(hash, key),
                (false, true) => self.index_expiry(hash, key),
                _ => {}
            }
            return;
        }
        if announce {
            self.table_insert(hash, key, obj);
        } else {
            self.table_insert_quiet(hash, key, obj);
        }
        if expire_at != 0 {
            self.index_expiry(hash, key);
        }
    }

    /// Removes a key (expired or not) and returns its object.
    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<Object> {
        self.preserve(hash, key);
        let obj = self.table_remove(hash, key)?;
        self.leaving(key, &obj.value);
        if obj.expire_at != 0 {
            self.unindex_expiry(hash, key);
        }
        if !self.field_expires.is_empty() {
            self.unindex_field_expiry(hash, key);
        }
        Some(obj)
    }

    /// Sets the absolute expiry of an existing key. Returns false when the
    /// key does not exist.
    pub fn set_expire(&mut self, hash: u64, key: &[u8], at_ms: u64) -> bool {
        debug_assert!(at_ms != 0);
        self.preserve(hash, key);
        let Some(obj) = self.keys.get_mut(hash, key) else {
            return false;
        };
        let had = obj.expire_at != 0;
        obj.expire_at = at_ms;
        if !had {
            self.index_expiry(hash, key);
        }
        true
    }

    /// A value leaves `key` (deleted, expired or replaced): the waiters
    /// hear of it.
    #[inline]
    fn leaving(&mut self, key: &[u8], old: &Value) {
        if !self.waiters.is_empty() {
            self.waiters.value_left(key, old);
        }
    }

    /// Removes the expiry of an existing key; true when it had one.
    pub fn persist(&mut self, hash: u64, key: &[u8]) -> bool {
        self.preserve(hash, key);
        let Some(obj) = self.keys.get_mut(hash, key) else {
            return false;
        };
        if obj.expire_at == 0 {
            return false;
        }
        obj.expire_at = 0;
        self.unindex_expiry(hash, key);
        true
    }

    /// Empties the database (FLUSHDB) and hands back its key table, to
    /// be freed by the caller (maybe elsewhere).
    pub fn clear(&mut self) -> Dict<Object> {
        if !self.waiters.is_empty() {
            self.waiters.table_emptied(&self.keys);
        }
        self.expires.clear();
        self.expire_cursor = 0;
        self.field_expires.clear();
        self.field_expire_cursor = 0;
        // The data leaves (to be freed by the caller, maybe elsewhere),
        // and what the sketch knew of it.
        let used = self.used;
        self.discharge(used);
        self.tables = 0;
        self.sketch = None;
        if let Some(s) = self.snapshot.as_deref_mut() {
            if s.detached.is_none() && s.buckets > 0 {
                // The walk goes on over the old table; nothing to free now.
                s.detached = Some(self.keys.take());
                return Dict::new();
            }
        }
        self.keys.take()
    }

    /// Sets every key's access time (after an append-only file replay,
    /// which runs without a clock).
    pub fn touch_all(&mut self, word: u32) {
        self.keys.for_each_mut(|o| o.access = word);
    }

    pub fn iter(&self) -> impl Iterator<Item = (&CompactBytes, &Object)> {
        self.keys.iter()
    }

    /// One SCAN step over this table; see `Dict::scan`.
    pub fn scan(&self, cursor: u64, f: impl FnMut(&CompactBytes, &Object)) -> u64 {
        self.keys.scan(cursor, f)
    }

    pub fn random_key(&self, rng: &mut fastrand::Rng) -> Option<(&CompactBytes, &Object)> {
        self.keys.random(rng)
    }

    /// How many keys an eviction policy may pick from: every key, or
    /// (`volatile`) those with a TTL.
    pub fn candidates_len(&self, volatile: bool) -> usize {
        if volatile {
            self.expires.len()
        } else {
            self.keys.len()
        }
    }

    /// Up to `n` keys an eviction policy may pick, sampled as Redis's
    /// dictGetSomeKeys does (a run of buckets from a random one), each
    /// with its object.
    pub fn sample(
        &self,
        volatile: bool,
        n: usize,
        rng: &mut fastrand::Rng,
        mut f: impl FnMut(&[u8], &Object),
    ) {
        if volatile {
            self.expires.some(n, rng, |key, _| {
                if let Some(obj) = self.keys.get(hash_key(key), key) {
                    f(key, obj);
                }
            });
        } else {
            self.keys.some(n, rng, |key, obj| f(key, obj));
        }
    }

    /// A random key an eviction policy may pick.
    pub fn random_candidate(
        &self,
        volatile: bool,
        rng: &mut fastrand::Rng,
    ) -> Option<CompactBytes> {
        if volatile {
            self.expires.random(rng).map(|(k, _)| k.clone())
        } else {
            self.keys.random(rng).map(|(k, _)| k.clone())
        }
    }

    /// Whether `key` is still there for an eviction policy to pick.
    pub fn is_candidate(&self, key: &[u8], volatile: bool) -> bool {
        let hash = hash_key(key);
        if volatile {
            self.expires.get(hash, key).is_some()
        } else {
            self.keys.get(hash, key).is_some()
        }
    }

    /// One step of Redis's active expiry cycle: visit buckets of the expiry
    /// index from the saved cursor until `budget` keys were examined, and
    /// delete those whose time has come.
    pub fn active_expire(&mut self, now_ms: u64, budget: usize) -> ExpireRound {
        let mut round = ExpireRound::default();
        if self.expires.is_empty() {
            return round;
        }
        let mut candidates: Vec<CompactBytes> = Vec::new();
        let mut cursor = self.expire_cursor;
        let mut visited_buckets = 0;
        loop {
            cursor = self.expires.scan(cursor, |k, _| candidates.push(k.clone()));
            visited_buckets += 1;
            if cursor == 0 || candidates.len() >= budget || visited_buckets >= budget * 4 {
                break;
            }
        }
        self.expire_cursor = cursor;
        round.sampled = candidates.len();
        for key in candidates {
            let h = hash_key(&key);
            if self.keys.get(h, &key).is_some_and(|o| o.is_expired(now_ms)) {
                self.remove_expired(h, &key);
                round.expired += 1;
            }
        }
        round
    }

    /// What the tables themselves are charged, beside the keys' own
    /// bytes and values (INFO used_memory_overhead, MEMORY STATS
    /// overhead.hashtable.*): the nodes and the bucket arrays.
    pub fn overhead_bytes(&self) -> usize {
        self.keys.len() * KEY_NODE
            + (self.expires.len() + self.field_expires.len()) * INDEX_NODE
            + self.tables
    }

    /// `overhead_bytes` of the key table and of the expiry indexes apart
    /// (MEMORY STATS db.N overhead.hashtable.main and .expires).
    pub fn overhead_split(&self) -> (usize, usize) {
        let word = std::mem::size_of::<usize>();
        (
            self.keys.len() * KEY_NODE + self.keys.buckets() * word,
            (self.expires.len() + self.field_expires.len()) * INDEX_NODE
                + (self.expires.buckets() + self.field_expires.buckets()) * word,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HashLimits, SetTtl, TtlCondition};

    fn hash_with_ttls(fields: &[(&str, u64)]) -> Value {
        let mut h = Hash::new();
        let l = HashLimits::default();
        for (f, _) in fields {
            h.set(f.as_bytes(), b"v", &l);
        }
        h.enable_field_ttls();
        for (f, at) in fields {
            if *at != 0 {
                let r = h.set_field_expiry(f.as_bytes(), *at, TtlCondition::Always, 0);
                assert_eq!(r, SetTtl::Set);
            }
        }
        Value::Hash(Box::new(h))
    }

    #[test]
    fn lookup_hash_reaps_and_deletes_the_emptied_key() {
        let mut db: Db = Db::new(Default::default());
        let key = b"h";
        let h = hash_key(key);
        db.insert_new(
            h,
            key,
            hash_with_ttls(&[("a", 100), ("b", 200), ("c", 0)]),
            0,
        );
        db.track_field_expiry(h, key);
        let (found, reaped) = db.lookup_hash(h, key, Now::at(150), true);
        assert!(matches!(found, HashLookup::Found(h) if h.len() == 2));
        assert_eq!(reaped, 1);
        assert_eq!(db.expired_fields, 1);
        db.insert_object(
            h,
            key,
            Object::new(hash_with_ttls(&[("a", 100)]), Default::default(), 0),
        );
        let (found, reaped) = db.lookup_hash(h, key, Now::at(100), false);
        assert!(matches!(found, HashLookup::Absent));
        assert_eq!(reaped, 1);
        assert!(!db.contains(h, key));
        assert_eq!(db.field_volatile_len(), 0);
    }

    #[test]
    fn active_cycle_visits_only_hashes_with_field_ttls() {
        let mut db: Db = Db::new(Default::default());
        for i in 0..50 {
            let key = format!("plain{i}");
            db.insert_new(
                hash_key(key.as_bytes()),
                key.as_bytes(),
                hash_with_ttls(&[("a", 0)]),
                0,
            );
        }
        for i in 0..10 {
            let key = format!("ttl{i}");
            let h = hash_key(key.as_bytes());
            let fields: &[(&str, u64)] = if i % 2 == 0 {
                &[("a", 100), ("b", 0)]
            } else {
                &[("a", 100)]
            };
            db.insert_new(h, key.as_bytes(), hash_with_ttls(fields), 0);
            db.track_field_expiry(h, key.as_bytes());
        }
        assert_eq!(db.field_volatile_len(), 10);
        // Nothing due yet: the ten are sampled, nothing changes.
        let round = db.active_expire_fields(50, 100);
        assert_eq!((round.sampled, round.expired), (10, 0));
        let mut total = 0;
        loop {
            let round = db.active_expire_fields(100, 4);
            total += round.expired;
            if db.field_volatile_len() == 0 {
                break;
            }
        }
        assert_eq!(total, 10);
        // The hashes left empty are gone, the others kept their plain field.
        assert_eq!(db.len(), 55);
        assert_eq!(db.expired_fields, 10);
    }

    fn str_of(v: &Value) -> Vec<u8> {
        match v {
            Value::Str(b) => b.to_vec(),
            _ => panic!("not a string"),
        }
    }

    /// A snapshot that starts while the key table is being resized sees
    /// the data as it was at its start: keys changed, removed and added
    /// during the walk, in either table, neither go missing nor leak in,
    /// and the resize goes on once the snapshot ends.
    #[test]
    fn a_snapshot_during_a_resize_sees_its_starting_point() {
        let mut db: Db = Db::new(Default::default());
        let set = |db: &mut Db, i: u32, v: &str| {
            let key = format!("k{i}");
            db.set(
                hash_key(key.as_bytes()),
                key.as_bytes(),
                Value::str(v.as_bytes()),
                false,
                0,
            );
        };
        for i in 0..1100 {
            set(&mut db, i, "old");
        }
        assert!(db.keys.is_rehashing(), "a resize runs");
        db.begin_snapshot(0);
        let mut written = std::collections::HashMap::new();
        let mut i = 0;
        loop {
            let done = db.snapshot_walk(16, |k, o| {
                assert!(written.insert(k.to_vec(), str_of(&o.value)).is_none());
            });
            // Changes between batches: overwrite, remove, add.
            for _ in 0..20 {
                match i % 3 {
                    0 => set(&mut db, i % 1100, "new"),
                    1 => {
                        let key = format!("k{}", i % 1100);
                        db.remove(hash_key(key.as_bytes()), key.as_bytes());
                    }
                    _ => set(&mut db, 5000 + i, "added"),
                }
                i += 1;
            }
            if done {
                break;
            }
        }
        let s = db.end_snapshot().unwrap();
        for (k, o) in s.saved.iter() {
            if let Some(o) = o {
                assert!(written.insert(k.to_vec(), str_of(&o.value)).is_none());
            }
        }
        assert_eq!(written.len(), 1100);
        for i in 0..1100 {
            assert_eq!(written[format!("k{i}").as_bytes()], b"old", "k{i}");
        }
        while db.rehash_step(1000) {}
        assert!(!db.keys.is_rehashing());
        assert_eq!(db.keys.iter().count(), db.len());
    }

    /// Redis's dictExpandAllowed: under a dataset limit, a key table does
    /// not take a larger bucket array that would pass it; its chains grow
    /// instead, until they average 1.618 keys, when it grows anyway. The
    /// charge follows: the data's total is what the slice holds.
    #[test]
    fn a_table_does_not_grow_past_the_dataset_limit() {
        let env = Arc::new(KeyspaceEnv::default());
        let mut db: Db = Db::new(env.clone());
        let add = |db: &mut Db, keys: std::ops::Range<u32>| {
            for i in keys {
                let key = format!("k{i}");
                db.set(
                    hash_key(key.as_bytes()),
                    key.as_bytes(),
                    Value::str(b"v"),
                    false,
                    0,
                );
            }
        };
        add(&mut db, 0..64);
        assert_eq!(db.keys.buckets(), 64);
        env.set_dataset_limit(env.dataset_bytes());
        add(&mut db, 64..100);
        assert_eq!(db.keys.buckets(), 64, "grown past the limit");
        add(&mut db, 100..110);
        assert!(db.keys.buckets() > 64, "110 keys in 64 buckets");
        assert_eq!(env.dataset_bytes(), db.used_bytes() as u64);
        env.set_dataset_limit(0);
        let before = db.used_bytes();
        db.clear();
        assert_eq!(env.dataset_bytes(), 0);
        assert!(before > 110 * crate::memory::KEY_NODE);
    }
}
