//! `Object` and `Value`: what a key maps to.
//!
//! An object is a value plus the metadata Redis keeps per key: the absolute
//! expiry time in Unix milliseconds (0 when the key is persistent) and the
//! last access time (for OBJECT IDLETIME and TOUCH).

use super::bytes::CompactBytes;
use super::hash::Hash;
use super::list::List;
use super::set::Set;
use super::stream::Stream;
use super::zset::ZSet;
use crate::env::AccessPolicy;

/// A key's value. Collections are boxed so that a `Value` stays 24 bytes;
/// a string is stored in the handle itself when short.
#[derive(Clone, Debug)]
pub enum Value {
    Str(CompactBytes),
    ZSet(Box<ZSet>),
    Hash(Box<Hash>),
    Set(Box<Set>),
    List(Box<List>),
    Stream(Box<Stream>),
}

/// The type of a value as TYPE and SCAN TYPE name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    String,
    List,
    Set,
    ZSet,
    Hash,
    Stream,
}

impl ValueType {
    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::List => "list",
            ValueType::Set => "set",
            ValueType::ZSet => "zset",
            ValueType::Hash => "hash",
            ValueType::Stream => "stream",
        }
    }

    /// Parses a SCAN TYPE argument (case-insensitive, as Redis).
    pub fn parse(name: &[u8]) -> Option<ValueType> {
        let all = [
            ValueType::String,
            ValueType::List,
            ValueType::Set,
            ValueType::ZSet,
            ValueType::Hash,
            ValueType::Stream,
        ];
        all.into_iter()
            .find(|t| t.name().as_bytes().eq_ignore_ascii_case(name))
    }
}

impl Value {
    pub fn str(bytes: &[u8]) -> Value {
        Value::Str(CompactBytes::from_slice(bytes))
    }

    /// The hash inside a value known to be one.
    pub(crate) fn as_hash_mut(&mut self) -> &mut Hash {
        match self {
            Value::Hash(h) => h,
            _ => unreachable!("checked to be a hash"),
        }
    }

    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Str(_) => ValueType::String,
            Value::ZSet(_) => ValueType::ZSet,
            Value::Hash(_) => ValueType::Hash,
            Value::Set(_) => ValueType::Set,
            Value::List(_) => ValueType::List,
            Value::Stream(_) => ValueType::Stream,
        }
    }

    /// OBJECT ENCODING's answer. Goblin's representations are its own; this
    /// reports the Redis encoding that the same data would have, derived from
    /// the data, so tools that inspect encodings keep working.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => {
                if s.len() <= 20 && goblin_num::parse_i64(s).is_some() && !s.is_growable() {
                    "int"
                } else if s.len() <= 44 && !s.is_growable() {
                    "embstr"
                } else {
                    "raw"
                }
            }
            Value::ZSet(z) => z.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            // Redis 7.0 stores every list as a quicklist, whatever its size.
            Value::List(_) => "quicklist",
            Value::Stream(_) => "stream",
        }
    }

    /// Approximate bytes owned by the value beyond the entry itself
    /// (MEMORY USAGE, DEBUG OBJECT).
    pub fn heap_size(&self) -> usize {
        self.heap_size_sampled(DEFAULT_SIZE_SAMPLES)
    }

    /// `heap_size` with collections estimated from at most `samples`
    /// elements (0 = all), as Redis's objectComputeSize (MEMORY USAGE).
    pub fn heap_size_sampled(&self, samples: usize) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::ZSet(z) => std::mem::size_of::<ZSet>() + z.heap_size(),
            Value::Hash(h) => std::mem::size_of::<Hash>() + h.heap_size_sampled(samples),
            Value::Set(s) => std::mem::size_of::<Set>() + s.heap_size_sampled(samples),
            Value::List(l) => l.heap_size(),
            Value::Stream(s) => s.heap_size(),
        }
    }
}

impl Value {
    /// The value's bytes as used_memory charges them (see
    /// [`crate::memory`]): `heap_size` with collections estimated from a
    /// few of their elements, so that charging a change costs as much for
    /// a list of ten elements as for one of ten million.
    pub fn charge(&self) -> usize {
        use crate::memory::alloc_size;
        match self {
            Value::Str(s) => alloc_size(s.heap_size()),
            Value::ZSet(z) => alloc_size(std::mem::size_of::<ZSet>()) + z.heap_size(),
            Value::Hash(h) => {
                alloc_size(std::mem::size_of::<Hash>()) + h.heap_size_sampled(DEFAULT_SIZE_SAMPLES)
            }
            Value::Set(s) => {
                alloc_size(std::mem::size_of::<Set>()) + s.heap_size_sampled(DEFAULT_SIZE_SAMPLES)
            }
            Value::List(l) => l.heap_size_sampled(),
            Value::Stream(s) => s.heap_size_sampled(16),
        }
    }
}

/// Redis's OBJ_COMPUTE_SIZE_DEF_SAMPLES.
pub const DEFAULT_SIZE_SAMPLES: usize = 5;

#[derive(Clone, Debug)]
pub struct Object {
    pub value: Value,
    /// Absolute expiry in Unix ms; 0 = no expiry. Kept in sync with the
    /// database's expiry index by `Db`, which is the only writer.
    pub(crate) expire_at: u64,
    /// The access word: last access in Unix seconds under LRU, or
    /// (minutes << 8 | counter) under LFU, see [`AccessPolicy`].
    pub(crate) access: u32,
    /// What the value was charged when it last entered or changed, in
    /// 8-byte units (see [`crate::memory`]); the key leaves with it.
    pub(crate) charged: u32,
}

impl Object {
    /// A persistent key's object, with the access word of a key created
    /// now under `policy`.
    pub fn new(value: Value, policy: AccessPolicy, now_ms: u64) -> Object {
        Object {
            value,
            expire_at: 0,
            access: policy.initial(now_ms),
            charged: 0,
        }
    }

    #[inline]
    pub fn expire_at(&self) -> Option<u64> {
        (self.expire_at != 0).then_some(self.expire_at)
    }

    /// Redis's keyIsExpired: a key lives through the millisecond of its
    /// deadline and is gone after it.
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at < now_ms
    }

    #[inline]
    pub(crate) fn touch(&mut self, policy: AccessPolicy, now_ms: u64) {
        self.access = policy.touched(self.access, now_ms);
    }

    /// Milliseconds since the last access under an LRU policy (Redis's
    /// estimateObjectIdleTime, at the access word's resolution).
    pub fn idle_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.access as u64 * 1000)
    }

    pub fn idle_seconds(&self, now_ms: u64) -> u64 {
        (now_ms / 1000).saturating_sub(self.access as u64)
    }

    /// OBJECT FREQ under an LFU policy.
    pub fn lfu_frequency(&self, policy: AccessPolicy, now_ms: u64) -> u32 {
        policy.lfu_counter(self.access, now_ms)
    }

    /// Sets the absolute expiry (Unix ms, not 0) of an object that is not
    /// in a table yet: `Db::insert_object` indexes it.
    pub fn set_expire_at(&mut self, at_ms: u64) {
        debug_assert!(at_ms != 0);
        self.expire_at = at_ms;
    }

    /// Sets the access word (RESTORE with IDLETIME or FREQ, snapshot loading).
    pub fn set_access(&mut self, word: u32) {
        self.access = word;
    }

    pub fn access_word(&self) -> u32 {
        self.access
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_packs_into_the_string_handle() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
    }

    #[test]
    fn the_charge_fits_in_the_objects_padding() {
        assert_eq!(std::mem::size_of::<Object>(), 40);
    }
}
