//! A canonical byte stream for each value, hashed by DEBUG DIGEST and
//! DEBUG DIGEST-VALUE: equal data gives equal digests whatever the
//! internal representation.
//!
//! Collections are fed in sorted order (members, or fields with their
//! values), each string preceded by its length so that no two different
//! collections produce the same stream. An intset member is fed as its
//! decimal text, so an intset and a table holding the same members agree.

use super::object::Value;
use goblin_num::format_g17;

fn feed_string(feed: &mut dyn FnMut(&[u8]), s: &[u8]) {
    feed(&(s.len() as u64).to_le_bytes());
    feed(s);
}

pub fn digest_value(value: &Value, feed: &mut dyn FnMut(&[u8])) {
    match value {
        Value::Str(s) => feed(s),
        Value::List(l) => {
            // Each element framed by its length, so that ["ab"] and
            // ["a", "b"] differ.
            for e in l.iter() {
                feed_string(feed, e);
            }
        }
        // Members in (score, member) order, which is the same in both
        // forms; each as its length, its bytes, and the score as "%.17g"
        // (the text Redis digests).
        Value::ZSet(z) => {
            let mut score = Vec::with_capacity(24);
            for (member, s) in z.iter() {
                feed(&(member.len() as u64).to_le_bytes());
                feed(member);
                score.clear();
                format_g17(s, &mut score);
                feed(&(score.len() as u64).to_le_bytes());
                feed(&score);
            }
        }
        Value::Hash(h) => {
            let mut pairs: Vec<(&[u8], &[u8])> = h.iter().collect();
            pairs.sort_unstable();
            feed(&(pairs.len() as u64).to_le_bytes());
            for (field, value) in pairs {
                feed_string(feed, field);
                feed_string(feed, value);
            }
        }
        Value::Set(s) => {
            let mut members: Vec<std::borrow::Cow<'_, [u8]>> =
                s.iter().map(|m| m.to_bytes()).collect();
            members.sort_unstable();
            feed(&(members.len() as u64).to_le_bytes());
            for m in members {
                feed_string(feed, &m);
            }
        }
        // The live entries in order, each its ID and its fields and values
        // (what Redis digests; groups are left out, as there).
        Value::Stream(s) => {
            for e in s.entries.iter() {
                feed_string(feed, format!("{}.{}", e.id.ms, e.id.seq).as_bytes());
                for (f, v) in e.fields() {
                    f.with_bytes(|b| feed_string(feed, b));
                    v.with_bytes(|b| feed_string(feed, b));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Hash, HashLimits, Set};

    fn digest(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        digest_value(v, &mut |b| out.extend_from_slice(b));
        out
    }

    #[test]
    fn hash_digest_ignores_order_and_representation() {
        let small = HashLimits::default();
        let tiny = HashLimits {
            max_entries: 1,
            max_value: 64,
        };
        let mut a = Hash::new();
        let mut b = Hash::new();
        for i in 0..5 {
            a.set(
                format!("f{i}").as_bytes(),
                format!("v{i}").as_bytes(),
                &small,
            );
        }
        for i in (0..5).rev() {
            b.set(
                format!("f{i}").as_bytes(),
                format!("v{i}").as_bytes(),
                &tiny,
            );
        }
        assert_ne!(a.encoding(), b.encoding());
        let (a, b) = (Value::Hash(Box::new(a)), Value::Hash(Box::new(b)));
        assert_eq!(digest(&a), digest(&b));
    }

    #[test]
    fn set_digest_ignores_order_and_representation() {
        let mut a = Set::new_intset();
        let mut b = Set::new_table();
        for i in [3, 1, 2] {
            a.add(i.to_string().as_bytes(), 512);
        }
        for i in [1, 2, 3] {
            b.add(i.to_string().as_bytes(), 512);
        }
        assert_ne!(a.encoding(), b.encoding());
        let (a, b) = (Value::Set(Box::new(a)), Value::Set(Box::new(b)));
        assert_eq!(digest(&a), digest(&b));
    }

    #[test]
    fn different_splits_digest_differently() {
        let l = HashLimits::default();
        let mut a = Hash::new();
        a.set(b"ab", b"c", &l);
        let mut b = Hash::new();
        b.set(b"a", b"bc", &l);
        let (a, b) = (Value::Hash(Box::new(a)), Value::Hash(Box::new(b)));
        assert_ne!(digest(&a), digest(&b));
    }
}
