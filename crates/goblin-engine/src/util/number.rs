//! Redis's number rules (from `goblin-num`) and the argument helpers that
//! map their failures to Redis's error replies.

pub use goblin_num::*;

/// Parses an integer argument: Redis's "value is not an integer or out of
/// range" otherwise.
pub fn arg_i64(s: &[u8]) -> Result<i64, crate::Error> {
    parse_i64(s).ok_or(crate::Error::NOT_INTEGER)
}

/// Parses a float argument: Redis's "value is not a valid float" otherwise.
pub fn arg_f64(s: &[u8]) -> Result<f64, crate::Error> {
    parse_f64(s).ok_or(crate::Error::NOT_FLOAT)
}
