//! A canonical byte stream for each value, hashed by DEBUG DIGEST and
//! DEBUG DIGEST-VALUE: equal data gives equal digests whatever the
//! internal representation.

use super::object::Value;
use crate::util::number::format_g17;

pub fn digest_value(value: &Value, feed: &mut dyn FnMut(&[u8])) {
    match value {
        Value::Str(s) => feed(s),
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
    }
}
