//! A canonical byte stream for each value, hashed by DEBUG DIGEST and
//! DEBUG DIGEST-VALUE: equal data gives equal digests whatever the
//! internal representation.

use super::object::Value;

pub fn digest_value(value: &Value, feed: &mut dyn FnMut(&[u8])) {
    match value {
        Value::Str(s) => feed(s),
        Value::List(l) => {
            // Each element framed by its length, so that ["ab"] and
            // ["a", "b"] differ.
            for e in l.iter() {
                feed(&(e.len() as u64).to_le_bytes());
                feed(e);
            }
        }
    }
}
