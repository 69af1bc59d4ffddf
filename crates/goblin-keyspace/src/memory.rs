//! What the keyspace's data holds in memory, as the engine's used_memory
//! counts it.
//!
//! Every key is charged when it enters a table and discharged when it
//! leaves: the table node with the key's own bytes (a fixed function of
//! the key's length), its entry in the expiry index while it has a TTL,
//! and the value's estimate ([`Value::charge`](crate::Value::charge)),
//! which the object remembers so that it leaves with exactly what it was
//! charged, however its value changed meanwhile. A change in place is
//! charged anew by [`Db::recharge`](crate::Db::recharge), which the
//! engine calls where a command reports a changed key. The tables'
//! bucket arrays are charged as they grow and shrink.
//!
//! Sizes are rounded up to the allocator's size classes (jemalloc's, the
//! server's allocator, as Redis's zmalloc counts what malloc really
//! handed out), so that the sum follows the allocator's own figure.

/// The size of the block an allocation of `n` bytes gets from jemalloc:
/// 8, 16, then multiples of 16 up to 128, then four classes between each
/// power of two and the next.
#[inline]
pub const fn alloc_size(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return (n + 15) & !15;
    }
    let lg = usize::BITS - 1 - (n - 1).leading_zeros();
    let step = 1usize << (lg - 2);
    (n + step - 1) & !(step - 1)
}

/// What a key's node in the key table costs.
pub const KEY_NODE: usize = alloc_size(std::mem::size_of::<crate::dict::Node<crate::Object>>());

/// What a key's node in an index (expiry, field expiry) costs.
pub const INDEX_NODE: usize = alloc_size(std::mem::size_of::<crate::dict::Node<()>>());

/// What a key of `key_len` bytes holding `obj` is charged, value aside:
/// its node and own bytes, and its expiry index entry when it has a TTL
/// (MEMORY USAGE adds the value's estimate).
pub fn entry_cost(key_len: usize, obj: &crate::Object) -> usize {
    let ttl = if obj.expire_at().is_some() {
        INDEX_NODE + key_heap(key_len)
    } else {
        0
    };
    KEY_NODE + key_heap(key_len) + ttl
}

/// Bytes a key's own storage costs beyond its node: none while it fits
/// in the handle.
#[inline]
pub const fn key_heap(len: usize) -> usize {
    if len <= crate::bytes::INLINE_CAP {
        0
    } else {
        alloc_size(len)
    }
}

/// A charge as an object keeps it: in 8-byte units, saturating (a value
/// past 32 GiB is charged 32 GiB).
#[inline]
pub(crate) fn to_units(bytes: usize) -> u32 {
    (bytes.div_ceil(8)).min(u32::MAX as usize) as u32
}

#[inline]
pub(crate) fn from_units(units: u32) -> usize {
    units as usize * 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_to_jemalloc_classes() {
        let cases = [
            (1, 8),
            (8, 8),
            (9, 16),
            (17, 32),
            (100, 112),
            (128, 128),
            (129, 160),
            (200, 224),
            (256, 256),
            (257, 320),
            (1000, 1024),
            (1025, 1280),
            (4097, 5120),
            (100_000, 114_688),
        ];
        for (n, class) in cases {
            assert_eq!(alloc_size(n), class, "{n}");
        }
        assert_eq!(alloc_size(0), 0);
    }

    #[test]
    fn units_round_up_and_saturate() {
        assert_eq!(from_units(to_units(1)), 8);
        assert_eq!(from_units(to_units(16)), 16);
        assert_eq!(to_units(usize::MAX / 2), u32::MAX);
    }
}
