//! `goblin_family::Store` over the Redis module API: the key a command
//! names, opened with RedisModule_OpenKey, read and written through the
//! module API's string, hash, sorted-set and expiry functions.
//!
//! A `KeyStore` lives for one command call. It remembers whether the call
//! changed anything and the effects the family reported, so that the
//! command handler replicates what Redis's own commands would: nothing for
//! a call that changed nothing, the call itself when replaying it is
//! deterministic, its effects when it read the clock.
//!
//! Each change announces the keyspace event of the Redis command it stands
//! for, as goblin-server's host does (the module API announces none
//! itself): a counter step is "incrby", a deadline "expire", a hash field
//! "hset" or "hdel", a lease "zadd", a lease cleanup "zremrangebyscore",
//! and a key that goes "del".

use crate::api::{self, ModuleString};
use goblin_family::{Error, Store};
use redis_module::raw::{self, RedisModuleCtx, RedisModuleKey};
use std::ffi::{c_int, CStr};
use std::ptr;

/// One open key: its name (kept to signal the change) and its handle.
struct OpenKey {
    name: Vec<u8>,
    string: ModuleString,
    handle: *mut RedisModuleKey,
    changed: bool,
}

/// What the family needs, at the command's database and clock.
pub struct KeyStore {
    ctx: *mut RedisModuleCtx,
    /// The clock, read once for the whole call (the family reads it
    /// several times and must see one instant).
    now_ms: i64,
    key: Option<OpenKey>,
    changed: bool,
    effects: Vec<Vec<Vec<u8>>>,
}

/// The key types the family cares about, from RedisModule_KeyType.
#[derive(PartialEq, Eq)]
enum Type {
    Empty,
    String,
    Hash,
    ZSet,
    Other,
}

impl KeyStore {
    /// # Safety
    /// `ctx` is the context of the running command.
    pub unsafe fn new(ctx: *mut RedisModuleCtx) -> KeyStore {
        KeyStore {
            ctx,
            now_ms: unsafe { api::f(raw::RedisModule_Milliseconds)() },
            key: None,
            changed: false,
            effects: Vec::new(),
        }
    }

    /// The handle of `name`, opened for reading and writing on first use.
    /// Every family command touches one key; a second name closes the
    /// first.
    fn open(&mut self, name: &[u8]) -> *mut RedisModuleKey {
        if let Some(key) = &self.key {
            if key.name == name {
                return key.handle;
            }
        }
        self.close();
        let string = ModuleString::new(self.ctx, name);
        // Opening for writing deletes a key whose time has passed, as
        // Redis's own write commands do, so an expired key reads as empty.
        let mode = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as i32;
        let handle = unsafe { api::f(raw::RedisModule_OpenKey)(self.ctx, string.ptr(), mode) };
        self.key = Some(OpenKey {
            name: name.to_vec(),
            string,
            handle,
            changed: false,
        });
        handle
    }

    /// Closes the open key; a key the call changed is signalled as
    /// modified (WATCH, client-side caching), and only then: the module
    /// turns Redis's implicit signal on every key opened for writing off.
    fn close(&mut self) {
        if let Some(key) = self.key.take() {
            unsafe {
                if key.changed {
                    api::f(raw::RedisModule_SignalModifiedKey)(self.ctx, key.string.ptr());
                }
                api::f(raw::RedisModule_CloseKey)(key.handle);
            }
        }
    }

    /// Announces `event` of class `class` (a REDISMODULE_NOTIFY_* bit) for
    /// the open key.
    fn notify(&self, class: c_int, event: &CStr) {
        if let Some(key) = &self.key {
            unsafe {
                api::f(raw::RedisModule_NotifyKeyspaceEvent)(
                    self.ctx,
                    class,
                    event.as_ptr(),
                    key.string.ptr(),
                );
            }
        }
    }

    /// Whether the open key `name` is gone (the module API deletes a hash
    /// or sorted set when its last element goes).
    fn emptied(&mut self, name: &[u8]) -> bool {
        self.kind(name).1 == Type::Empty
    }

    fn changed(&mut self) {
        self.changed = true;
        if let Some(key) = &mut self.key {
            key.changed = true;
        }
    }

    fn kind(&mut self, name: &[u8]) -> (*mut RedisModuleKey, Type) {
        let handle = self.open(name);
        let t = unsafe { api::f(raw::RedisModule_KeyType)(handle) } as isize;
        let kind = match t {
            raw::REDISMODULE_KEYTYPE_EMPTY => Type::Empty,
            raw::REDISMODULE_KEYTYPE_STRING => Type::String,
            raw::REDISMODULE_KEYTYPE_HASH => Type::Hash,
            raw::REDISMODULE_KEYTYPE_ZSET => Type::ZSet,
            _ => Type::Other,
        };
        (handle, kind)
    }

    /// The open sorted set at `name`, if that is what it holds.
    fn zset(&mut self, name: &[u8]) -> Option<*mut RedisModuleKey> {
        match self.kind(name) {
            (handle, Type::ZSet) => Some(handle),
            _ => None,
        }
    }

    /// Ends the call: closes the key, and when the call succeeded and
    /// changed something, replicates it (to replicas and the append-only
    /// file): as its effects when the family reported some (the call read
    /// the clock), else verbatim.
    pub fn finish(mut self, succeeded: bool) {
        self.close();
        if !succeeded || !self.changed {
            return;
        }
        if self.effects.is_empty() {
            unsafe { api::f(raw::RedisModule_ReplicateVerbatim)(self.ctx) };
            return;
        }
        for effect in std::mem::take(&mut self.effects) {
            api::replicate(self.ctx, &effect);
        }
    }
}

impl Store for KeyStore {
    fn now_ms(&self) -> i64 {
        self.now_ms
    }

    fn read_string<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Error> {
        match self.kind(key) {
            (_, Type::Empty) => Ok(f(None)),
            (handle, Type::String) => {
                let mut len = 0usize;
                // Read access still decodes an integer- or embstr-encoded
                // value into a plain string (the module API hands out the
                // bytes in place): the value and TTL stay, the encoding is
                // then "raw".
                let p = unsafe {
                    api::f(raw::RedisModule_StringDMA)(
                        handle,
                        &mut len,
                        raw::REDISMODULE_READ as i32,
                    )
                };
                let bytes = unsafe { api::bytes(p as *const u8, len) };
                Ok(f(Some(bytes)))
            }
            _ => Err(Error::WrongType),
        }
    }

    fn write_string(&mut self, key: &[u8], value: &[u8]) {
        let (handle, kind) = self.kind(key);
        unsafe {
            if value.is_empty() {
                if kind == Type::Empty {
                    // StringTruncate does not create an empty string.
                    let empty = ModuleString::new(self.ctx, b"");
                    api::f(raw::RedisModule_StringSet)(handle, empty.ptr());
                } else {
                    api::f(raw::RedisModule_StringTruncate)(handle, 0);
                }
            } else {
                // In place, as INCR writes: an existing key keeps its TTL
                // (StringSet would drop it), a new one has none.
                api::f(raw::RedisModule_StringTruncate)(handle, value.len());
                let mut len = 0usize;
                let p = api::f(raw::RedisModule_StringDMA)(
                    handle,
                    &mut len,
                    raw::REDISMODULE_WRITE as i32,
                );
                if !p.is_null() && len == value.len() {
                    ptr::copy_nonoverlapping(value.as_ptr(), p as *mut u8, len);
                }
            }
        }
        self.changed();
        // Every string the family writes is a counter's new value.
        self.notify(raw::REDISMODULE_NOTIFY_STRING, c"incrby");
    }

    fn delete(&mut self, key: &[u8]) -> bool {
        let (handle, kind) = self.kind(key);
        if kind == Type::Empty {
            return false;
        }
        unsafe { api::f(raw::RedisModule_DeleteKey)(handle) };
        self.changed();
        self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"del");
        true
    }

    fn expire_at(&mut self, key: &[u8]) -> Option<Option<i64>> {
        let (handle, kind) = self.kind(key);
        if kind == Type::Empty {
            return None;
        }
        let at = unsafe { api::f(raw::RedisModule_GetAbsExpire)(handle) };
        Some((at != raw::REDISMODULE_NO_EXPIRE as i64).then_some(at))
    }

    fn set_expire_at(&mut self, key: &[u8], at_ms: i64) {
        let (handle, kind) = self.kind(key);
        if kind == Type::Empty {
            return;
        }
        // A deadline already past deletes the key, as EXPIRE does (the
        // family's deadlines are at least 1 ms ahead, though).
        if at_ms <= self.now_ms {
            unsafe { api::f(raw::RedisModule_DeleteKey)(handle) };
            self.changed();
            self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"del");
            return;
        }
        unsafe { api::f(raw::RedisModule_SetAbsExpire)(handle, at_ms) };
        self.changed();
        self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"expire");
    }

    fn read_hash_field<R>(
        &mut self,
        key: &[u8],
        field: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Error> {
        match self.kind(key) {
            (_, Type::Empty) => Ok(f(None)),
            (handle, Type::Hash) => {
                let field = ModuleString::new(self.ctx, field);
                let mut value: *mut raw::RedisModuleString = ptr::null_mut();
                unsafe {
                    api::f(raw::RedisModule_HashGet)(
                        handle,
                        raw::REDISMODULE_HASH_NONE as i32,
                        field.ptr(),
                        &mut value as *mut *mut raw::RedisModuleString,
                        ptr::null_mut::<raw::RedisModuleString>(),
                    );
                }
                match ModuleString::adopt(self.ctx, value) {
                    None => Ok(f(None)),
                    Some(value) => Ok(f(Some(value.bytes()))),
                }
            }
            _ => Err(Error::WrongType),
        }
    }

    fn write_hash_field(&mut self, key: &[u8], field: &[u8], value: &[u8]) {
        let handle = self.open(key);
        let field = ModuleString::new(self.ctx, field);
        let value = ModuleString::new(self.ctx, value);
        unsafe {
            api::f(raw::RedisModule_HashSet)(
                handle,
                raw::REDISMODULE_HASH_NONE as i32,
                field.ptr(),
                value.ptr(),
                ptr::null_mut::<raw::RedisModuleString>(),
            );
        }
        self.changed();
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset");
    }

    fn delete_hash_field(&mut self, key: &[u8], field: &[u8]) -> bool {
        let (handle, kind) = self.kind(key);
        if kind != Type::Hash {
            return false;
        }
        let field = ModuleString::new(self.ctx, field);
        // Deleting the last field deletes the key (the module API does).
        let deleted = unsafe {
            api::f(raw::RedisModule_HashSet)(
                handle,
                raw::REDISMODULE_HASH_NONE as i32,
                field.ptr(),
                raw::REDISMODULE_HASH_DELETE,
                ptr::null_mut::<raw::RedisModuleString>(),
            )
        };
        if deleted > 0 {
            self.changed();
            self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hdel");
            if self.emptied(key) {
                self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"del");
            }
        }
        deleted == 1
    }

    fn remove_scores_up_to(&mut self, key: &[u8], max: f64) -> Result<usize, Error> {
        let handle = match self.kind(key) {
            (_, Type::Empty) => return Ok(0),
            (handle, Type::ZSet) => handle,
            _ => return Err(Error::WrongType),
        };
        // The members in [-inf, max], collected first: a member cannot be
        // removed while the range iterator stands on it.
        let mut members = Vec::new();
        unsafe {
            if api::f(raw::RedisModule_ZsetFirstInScoreRange)(handle, f64::NEG_INFINITY, max, 0, 0)
                == raw::REDISMODULE_OK as i32
            {
                while api::f(raw::RedisModule_ZsetRangeEndReached)(handle) == 0 {
                    let mut score = 0.0;
                    let member =
                        api::f(raw::RedisModule_ZsetRangeCurrentElement)(handle, &mut score);
                    members.extend(ModuleString::adopt(self.ctx, member));
                    if api::f(raw::RedisModule_ZsetRangeNext)(handle) == 0 {
                        break;
                    }
                }
                api::f(raw::RedisModule_ZsetRangeStop)(handle);
            }
        }
        let mut removed = 0;
        for member in &members {
            let mut deleted = 0;
            // Removing the last member deletes the key (the module API does).
            unsafe { api::f(raw::RedisModule_ZsetRem)(handle, member.ptr(), &mut deleted) };
            removed += deleted as usize;
        }
        if removed > 0 {
            self.changed();
            self.notify(raw::REDISMODULE_NOTIFY_ZSET, c"zremrangebyscore");
            if self.emptied(key) {
                self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"del");
            }
        }
        Ok(removed)
    }

    fn score_and_cardinality(&mut self, key: &[u8], member: &[u8]) -> (Option<f64>, usize) {
        let Some(handle) = self.zset(key) else {
            return (None, 0);
        };
        let member = ModuleString::new(self.ctx, member);
        let mut score = 0.0;
        let found = unsafe { api::f(raw::RedisModule_ZsetScore)(handle, member.ptr(), &mut score) };
        let len = unsafe { api::f(raw::RedisModule_ValueLength)(handle) };
        ((found == raw::REDISMODULE_OK as i32).then_some(score), len)
    }

    fn set_score(&mut self, key: &[u8], member: &[u8], score: f64) -> f64 {
        let handle = self.open(key);
        let member = ModuleString::new(self.ctx, member);
        let mut flags = 0;
        unsafe { api::f(raw::RedisModule_ZsetAdd)(handle, score, member.ptr(), &mut flags) };
        self.changed();
        // As ZADD: announced when the member was added or its score moved.
        if flags as u32 & (raw::REDISMODULE_ZADD_ADDED | raw::REDISMODULE_ZADD_UPDATED) != 0 {
            self.notify(raw::REDISMODULE_NOTIFY_ZSET, c"zadd");
        }
        let mut highest = score;
        unsafe {
            if api::f(raw::RedisModule_ZsetLastInScoreRange)(
                handle,
                f64::NEG_INFINITY,
                f64::INFINITY,
                0,
                0,
            ) == raw::REDISMODULE_OK as i32
            {
                if api::f(raw::RedisModule_ZsetRangeEndReached)(handle) == 0 {
                    let member =
                        api::f(raw::RedisModule_ZsetRangeCurrentElement)(handle, &mut highest);
                    drop(ModuleString::adopt(self.ctx, member));
                }
                api::f(raw::RedisModule_ZsetRangeStop)(handle);
            }
        }
        highest
    }

    /// Kept for `finish`, which replicates them instead of the call.
    fn effect(&mut self, argv: &[&[u8]]) {
        self.effects.push(argv.iter().map(|a| a.to_vec()).collect());
    }
}

impl Drop for KeyStore {
    fn drop(&mut self) {
        self.close();
    }
}
