//! `Object` and `Value`: what a key maps to.
//!
//! An object is a value plus the metadata Redis keeps per key: the absolute
//! expiry time in Unix milliseconds (0 when the key is persistent) and the
//! last access time (for OBJECT IDLETIME and TOUCH).

use super::bytes::CompactBytes;
use super::list::List;

/// A key's value. Collections are boxed so that a `Value` stays 24 bytes;
/// a string is stored in the handle itself when short.
#[derive(Clone, Debug)]
pub enum Value {
    Str(CompactBytes),
    List(Box<List>),
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

    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Str(_) => ValueType::String,
            Value::List(_) => ValueType::List,
        }
    }

    /// OBJECT ENCODING's answer. Goblin's representations are its own; this
    /// reports the Redis encoding that the same data would have, derived from
    /// the data, so tools that inspect encodings keep working.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => {
                if s.len() <= 20 && crate::util::number::parse_i64(s).is_some() && !s.is_growable()
                {
                    "int"
                } else if s.len() <= 44 && !s.is_growable() {
                    "embstr"
                } else {
                    "raw"
                }
            }
            // Redis 7.0 stores every list as a quicklist, whatever its size.
            Value::List(_) => "quicklist",
        }
    }

    /// Approximate bytes owned by the value beyond the entry itself
    /// (MEMORY USAGE, DEBUG OBJECT).
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::List(l) => l.heap_size(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Object {
    pub value: Value,
    /// Absolute expiry in Unix ms; 0 = no expiry. Kept in sync with the
    /// database's expiry index by `Db`, which is the only writer.
    pub(crate) expire_at: u64,
    /// Last access, in Unix seconds (Redis keeps a 24-bit LRU clock).
    pub(crate) access: u32,
}

impl Object {
    pub fn new(value: Value, now_ms: u64) -> Object {
        Object {
            value,
            expire_at: 0,
            access: (now_ms / 1000) as u32,
        }
    }

    #[inline]
    pub fn expire_at(&self) -> Option<u64> {
        (self.expire_at != 0).then_some(self.expire_at)
    }

    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now_ms
    }

    pub fn idle_seconds(&self, now_ms: u64) -> u64 {
        (now_ms / 1000).saturating_sub(self.access as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_packs_into_the_string_handle() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
    }
}
