//! `Error`: a command's error reply, with Redis's texts byte for byte.

use std::borrow::Cow;
use std::fmt;

/// The full text of an error reply after the '-', code included.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(pub Cow<'static, str>);

impl Error {
    pub const WRONGTYPE: Error =
        Error::constant("WRONGTYPE Operation against a key holding the wrong kind of value");
    pub const NOT_INTEGER: Error = Error::constant("ERR value is not an integer or out of range");
    pub const NOT_FLOAT: Error = Error::constant("ERR value is not a valid float");
    pub const SYNTAX: Error = Error::constant("ERR syntax error");
    pub const OVERFLOW: Error = Error::constant("ERR increment or decrement would overflow");
    pub const NO_SUCH_KEY: Error = Error::constant("ERR no such key");
    pub const OUT_OF_RANGE: Error = Error::constant("ERR index out of range");
    pub const DB_INDEX: Error = Error::constant("ERR DB index is out of range");
    pub const NOAUTH: Error = Error::constant("NOAUTH Authentication required.");
    pub const NOT_POSITIVE: Error = Error::constant("ERR value is out of range, must be positive");
    pub const STRING_TOO_LONG: Error =
        Error::constant("ERR string exceeds maximum allowed size (proto-max-bulk-len)");

    pub const fn constant(s: &'static str) -> Error {
        Error(Cow::Borrowed(s))
    }

    /// "ERR " followed by `msg`.
    pub fn err(msg: impl fmt::Display) -> Error {
        Error(Cow::Owned(format!("ERR {msg}")))
    }

    /// A full error text with its own code.
    pub fn raw(msg: impl Into<String>) -> Error {
        Error(Cow::Owned(msg.into()))
    }

    /// Redis's addReplyErrorArity text.
    pub fn arity(fullname: &str) -> Error {
        Error::err(format_args!(
            "wrong number of arguments for '{fullname}' command"
        ))
    }

    /// Redis's addReplyErrorExpireTime text.
    pub fn expire_time(cmd: &str) -> Error {
        Error::err(format_args!("invalid expire time in '{cmd}' command"))
    }

    pub fn text(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?})", self.0)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}
