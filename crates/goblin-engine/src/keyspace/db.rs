//! `Db`: one logical database's share of one shard: the key table, the index
//! of keys that carry a TTL, and the lazy and active expiry that keep the two
//! consistent.
//!
//! Every change of a key's expiry goes through `Db`, so the expiry index
//! (`expires`) always holds exactly the keys whose `Object::expire_at` is set.
//! The index exists so the active expiry cycle samples only keys that can
//! expire, as Redis samples its `expires` dict.

use super::bytes::CompactBytes;
use super::dict::{hash_key, Dict};
use super::object::{Object, Value};
use super::watch::WatchRegistry;

#[derive(Default)]
pub struct Db {
    keys: Dict<Object>,
    expires: Dict<()>,
    /// Reverse-binary cursor of the active expiry cycle over `expires`.
    expire_cursor: u64,
    /// Keys that expired (lazily or actively) since the last reset; read by INFO.
    pub expired_keys: u64,
    /// Clients WATCHing keys of this database. It stays with the database
    /// index when SWAPDB exchanges the data (as in Redis).
    pub watchers: WatchRegistry,
}

/// Outcome of one active-expiry pass over a database slice.
#[derive(Default, Debug, Clone, Copy)]
pub struct ExpireRound {
    pub sampled: usize,
    pub expired: usize,
}

impl Db {
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
    /// the spot (Redis's lazy expiry) and reported absent.
    #[inline]
    pub fn lookup(&mut self, hash: u64, key: &[u8], now_ms: u64) -> Option<&mut Object> {
        let obj: *mut Object = self.keys.get_mut(hash, key)?;
        // SAFETY: `obj` points into `self.keys` and nothing else touches the
        // table between here and either the return or the removal below,
        // after which the pointer is no longer used. (This is the borrow
        // pattern current borrowck cannot express for a conditional return.)
        unsafe {
            if (*obj).is_expired(now_ms) {
                self.remove_expired(hash, key);
                return None;
            }
            (*obj).access = (now_ms / 1000) as u32;
            Some(&mut *obj)
        }
    }

    /// Like `lookup` but does not refresh the access time (TTL, TYPE, EXISTS
    /// and OBJECT do not count as accesses, as in Redis).
    pub fn lookup_no_touch(&mut self, hash: u64, key: &[u8], now_ms: u64) -> Option<&mut Object> {
        let obj: *mut Object = self.keys.get_mut(hash, key)?;
        // SAFETY: as in `lookup`.
        unsafe {
            if (*obj).is_expired(now_ms) {
                self.remove_expired(hash, key);
                return None;
            }
            Some(&mut *obj)
        }
    }

    /// Read-only look-up that treats an expired key as absent without
    /// deleting it; for commands that must hold several values at once.
    pub fn peek(&self, hash: u64, key: &[u8], now_ms: u64) -> Option<&Object> {
        self.keys.get(hash, key).filter(|o| !o.is_expired(now_ms))
    }

    fn remove_expired(&mut self, hash: u64, key: &[u8]) {
        self.keys.remove(hash, key);
        self.expires.remove(hash, key);
        self.expired_keys += 1;
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
    pub fn touch_all_watched(&mut self, replacement: Option<&Db>, now_ms: u64) {
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
    pub fn swap_data(a: &mut Db, b: &mut Db) {
        std::mem::swap(&mut a.keys, &mut b.keys);
        std::mem::swap(&mut a.expires, &mut b.expires);
        std::mem::swap(&mut a.expire_cursor, &mut b.expire_cursor);
    }

    /// Stores `value` at `key`. With `keep_ttl` an existing key keeps its
    /// expiry; otherwise the key becomes persistent (SET's default).
    pub fn set(&mut self, hash: u64, key: &[u8], value: Value, keep_ttl: bool, now_ms: u64) {
        if let Some(obj) = self.lookup(hash, key, now_ms) {
            obj.value = value;
            if !keep_ttl && obj.expire_at != 0 {
                obj.expire_at = 0;
                self.expires.remove(hash, key);
            }
            return;
        }
        self.keys.insert_new(
            hash,
            CompactBytes::from_slice(key),
            Object::new(value, now_ms),
        );
    }

    /// Inserts a key that `lookup` just reported absent.
    pub fn insert_new(&mut self, hash: u64, key: &[u8], value: Value, now_ms: u64) -> &mut Object {
        self.keys.insert_new(
            hash,
            CompactBytes::from_slice(key),
            Object::new(value, now_ms),
        )
    }

    /// Inserts a whole object (with its expiry), replacing any existing key.
    /// Used by RENAME, MOVE, COPY, RESTORE and snapshot loading.
    pub fn insert_object(&mut self, hash: u64, key: &[u8], obj: Object) {
        let expire_at = obj.expire_at;
        if let Some(old) = self.keys.get_mut(hash, key) {
            let had_ttl = old.expire_at != 0;
            *old = obj;
            match (had_ttl, expire_at != 0) {
                (true, false) => {
                    self.expires.remove(hash, key);
                }
                (false, true) => {
                    self.expires
                        .insert_new(hash, CompactBytes::from_slice(key), ());
                }
                _ => {}
            }
            return;
        }
        self.keys
            .insert_new(hash, CompactBytes::from_slice(key), obj);
        if expire_at != 0 {
            self.expires
                .insert_new(hash, CompactBytes::from_slice(key), ());
        }
    }

    /// Removes a key (expired or not) and returns its object.
    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<Object> {
        let (_, obj) = self.keys.remove(hash, key)?;
        if obj.expire_at != 0 {
            self.expires.remove(hash, key);
        }
        Some(obj)
    }

    /// Sets the absolute expiry of an existing key. Returns false when the
    /// key does not exist.
    pub fn set_expire(&mut self, hash: u64, key: &[u8], at_ms: u64) -> bool {
        debug_assert!(at_ms != 0);
        let Some(obj) = self.keys.get_mut(hash, key) else {
            return false;
        };
        let had = obj.expire_at != 0;
        obj.expire_at = at_ms;
        if !had {
            self.expires
                .insert_new(hash, CompactBytes::from_slice(key), ());
        }
        true
    }

    /// Removes the expiry of an existing key; true when it had one.
    pub fn persist(&mut self, hash: u64, key: &[u8]) -> bool {
        let Some(obj) = self.keys.get_mut(hash, key) else {
            return false;
        };
        if obj.expire_at == 0 {
            return false;
        }
        obj.expire_at = 0;
        self.expires.remove(hash, key);
        true
    }

    pub fn clear(&mut self) -> Dict<Object> {
        self.expires.clear();
        self.expire_cursor = 0;
        self.keys.take()
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

    /// Memory held by the two tables' bucket arrays (INFO memory overhead).
    pub fn overhead_bytes(&self) -> usize {
        (self.keys.buckets() + self.expires.buckets()) * std::mem::size_of::<usize>()
    }
}
