//! `Error`: a command's error reply, with Redis's texts byte for byte.
//!
//! The text is bytes, not `str`: Redis echoes what the client sent (an
//! unknown command's name, a subcommand, a parameter, a script's
//! `redis.error_reply` argument) into the reply unchanged, valid UTF-8 or
//! not. Constant texts are borrowed, so the common errors cost no
//! allocation.

use std::borrow::Cow;
use std::fmt;

/// The full text of an error reply after the '-', code included.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Cow<'static, [u8]>);

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
        Error(Cow::Borrowed(s.as_bytes()))
    }

    /// "ERR " followed by `msg`.
    pub fn err(msg: impl fmt::Display) -> Error {
        Error(Cow::Owned(format!("ERR {msg}").into_bytes()))
    }

    /// A full error text with its own code.
    pub fn raw(msg: impl Into<String>) -> Error {
        Error(Cow::Owned(msg.into().into_bytes()))
    }

    /// A full error text with its own code, as bytes (which need not be
    /// UTF-8).
    pub fn from_bytes(msg: impl Into<Vec<u8>>) -> Error {
        Error(Cow::Owned(msg.into()))
    }

    /// A full error text made of `parts` in order: the way to splice a
    /// client's bytes into a text unchanged, as Redis's `%s` does
    /// (`Error::concat(&[b"ERR unknown subcommand '", sub, b"'..."])`).
    pub fn concat(parts: &[&[u8]]) -> Error {
        Error(Cow::Owned(parts.concat()))
    }

    /// `Error::concat` for a text Redis writes with addReplyErrorFormat,
    /// which trims the newlines at its end (a client's argument spliced
    /// last may end with some); those inside become spaces as in any
    /// error.
    pub fn concat_trimmed(parts: &[&[u8]]) -> Error {
        let mut text = parts.concat();
        while let Some(b'\r' | b'\n') = text.last() {
            text.pop();
        }
        Error(Cow::Owned(text))
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

    /// The text as the reply carries it.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text as the reply carries it.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0.into_owned()
    }

    /// The text for people (logs, tests): bytes that are not UTF-8 become
    /// U+FFFD. Replies use [`Error::bytes`].
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }
}

/// The bytes C's printf writes for `b` under `%.<max>s` (`%s` with
/// `usize::MAX`): up to its first NUL, at most `max`. Redis splices
/// arguments into most of its error texts that way.
pub fn printf_s(b: &[u8], max: usize) -> &[u8] {
    let b = &b[..b.len().min(max)];
    match memchr::memchr(0, b) {
        Some(nul) => &b[..nul],
        None => b,
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(&self.0) {
            Ok(s) => write!(f, "Error({s:?})"),
            Err(_) => write!(f, "Error(b\"{}\")", self.0.escape_ascii()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_keep_bytes_that_are_not_utf8() {
        let e = Error::concat(&[b"ERR unknown command '", b"\xff\xfe", b"'"]);
        assert_eq!(e.bytes(), b"ERR unknown command '\xff\xfe'");
        assert_eq!(e.text(), "ERR unknown command '\u{fffd}\u{fffd}'");
        assert_eq!(
            format!("{e:?}"),
            r#"Error(b"ERR unknown command \'\xff\xfe\'")"#
        );
        assert_eq!(
            format!("{:?}", Error::SYNTAX),
            r#"Error("ERR syntax error")"#
        );
        assert_eq!(
            Error::from_bytes(b"X \x00".to_vec()).into_bytes(),
            b"X \x00"
        );
        assert!(matches!(Error::WRONGTYPE.0, Cow::Borrowed(_)));
        assert_eq!(
            Error::concat_trimmed(&[b"ERR Unsupported option ", b"x\r\ny\n\r\n"]).bytes(),
            b"ERR Unsupported option x\r\ny"
        );
    }

    #[test]
    fn printf_s_stops_at_nul_and_precision() {
        assert_eq!(printf_s(b"a\xff\x00b", usize::MAX), b"a\xff");
        assert_eq!(printf_s(b"abcdef", 3), b"abc");
        assert_eq!(printf_s(b"ab\x00cdef", 5), b"ab");
        assert_eq!(printf_s(b"", 5), b"");
    }
}
