//! `Reply`: a decoded RESP2/RESP3 reply, for callers that want values rather
//! than bytes (the embedded API, scripts, tests).

use std::fmt;

#[derive(Clone, PartialEq)]
pub enum Reply {
    Status(String),
    Error(ErrorText),
    Int(i64),
    Bulk(Vec<u8>),
    /// RESP2 null bulk / null array, RESP3 null.
    Nil,
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
    Set(Vec<Reply>),
    Double(f64),
    Bool(bool),
    BigNumber(String),
    Verbatim {
        format: String,
        text: Vec<u8>,
    },
    Push(Vec<Reply>),
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Status(s) => write!(f, "Status({s:?})"),
            Reply::Error(s) => write!(f, "Error({s:?})"),
            Reply::Int(n) => write!(f, "Int({n})"),
            Reply::Bulk(b) => write!(f, "Bulk({:?})", String::from_utf8_lossy(b)),
            Reply::Nil => write!(f, "Nil"),
            Reply::Array(a) => f.debug_tuple("Array").field(a).finish(),
            Reply::Map(m) => f.debug_tuple("Map").field(m).finish(),
            Reply::Set(s) => f.debug_tuple("Set").field(s).finish(),
            Reply::Double(d) => write!(f, "Double({d})"),
            Reply::Bool(b) => write!(f, "Bool({b})"),
            Reply::BigNumber(s) => write!(f, "BigNumber({s})"),
            Reply::Verbatim { format, text } => {
                write!(f, "Verbatim({format}:{:?})", String::from_utf8_lossy(text))
            }
            Reply::Push(a) => f.debug_tuple("Push").field(a).finish(),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    Incomplete,
    Invalid,
}

impl Reply {
    /// Decodes one reply from the front of `buf`; returns it and the bytes used.
    pub fn decode(buf: &[u8]) -> Result<(Reply, usize), DecodeError> {
        let mut pos = 0;
        let r = decode_at(buf, &mut pos, 0)?;
        Ok((r, pos))
    }

    /// Decodes every reply in `buf`.
    pub fn decode_all(mut buf: &[u8]) -> Result<Vec<Reply>, DecodeError> {
        let mut out = Vec::new();
        while !buf.is_empty() {
            let (r, n) = Reply::decode(buf)?;
            out.push(r);
            buf = &buf[n..];
        }
        Ok(out)
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Reply::Int(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Reply::Bulk(b) => Some(b),
            Reply::Status(s) => Some(s.as_bytes()),
            Reply::Verbatim { text, .. } => Some(text),
            _ => None,
        }
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }
}

/// The text of an error reply after the '-', code first (`ERR syntax
/// error`), exactly as the server sent it. It is usually UTF-8, but not
/// always: Redis echoes a client's bytes into its errors unchanged (an
/// unknown command's name, a script's `redis.error_reply` text), so the
/// text is bytes. `Display` shows it with U+FFFD for bytes that are not
/// UTF-8; [`ErrorText::as_bytes`] gives it whole.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct ErrorText(Vec<u8>);

impl ErrorText {
    pub fn new(text: impl Into<Vec<u8>>) -> ErrorText {
        ErrorText(text.into())
    }

    /// The text as the server sent it.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The text when it is UTF-8.
    pub fn to_str(&self) -> Result<&str, std::str::Utf8Error> {
        std::str::from_utf8(&self.0)
    }

    /// The text, with U+FFFD for bytes that are not UTF-8.
    pub fn to_string_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }

    /// The error code: the text up to its first space (`ERR`, `WRONGTYPE`,
    /// `NOSCRIPT`...).
    pub fn code(&self) -> &[u8] {
        let end = memchr::memchr(b' ', &self.0).unwrap_or(self.0.len());
        &self.0[..end]
    }

    pub fn starts_with(&self, prefix: impl AsRef<[u8]>) -> bool {
        self.0.starts_with(prefix.as_ref())
    }

    pub fn contains(&self, part: impl AsRef<[u8]>) -> bool {
        let part = part.as_ref();
        part.is_empty() || self.0.windows(part.len()).any(|w| w == part)
    }
}

impl fmt::Display for ErrorText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_lossy())
    }
}

impl fmt::Debug for ErrorText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_str() {
            Ok(s) => write!(f, "{s:?}"),
            Err(_) => write!(f, "b\"{}\"", self.0.escape_ascii()),
        }
    }
}

impl AsRef<[u8]> for ErrorText {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl From<&str> for ErrorText {
    fn from(s: &str) -> ErrorText {
        ErrorText(s.as_bytes().to_vec())
    }
}

impl From<String> for ErrorText {
    fn from(s: String) -> ErrorText {
        ErrorText(s.into_bytes())
    }
}

impl From<Vec<u8>> for ErrorText {
    fn from(b: Vec<u8>) -> ErrorText {
        ErrorText(b)
    }
}

impl From<&[u8]> for ErrorText {
    fn from(b: &[u8]) -> ErrorText {
        ErrorText(b.to_vec())
    }
}

impl PartialEq<str> for ErrorText {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for ErrorText {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<String> for ErrorText {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<[u8]> for ErrorText {
    fn eq(&self, other: &[u8]) -> bool {
        self.0 == other
    }
}

impl PartialEq<&[u8]> for ErrorText {
    fn eq(&self, other: &&[u8]) -> bool {
        self.0 == *other
    }
}

fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Result<&'a [u8], DecodeError> {
    let start = *pos;
    let rel = memchr::memchr(b'\r', &buf[start..]).ok_or(DecodeError::Incomplete)?;
    if start + rel + 1 >= buf.len() {
        return Err(DecodeError::Incomplete);
    }
    *pos = start + rel + 2;
    Ok(&buf[start..start + rel])
}

fn int_of(s: &[u8]) -> Result<i64, DecodeError> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(DecodeError::Invalid)
}

fn text(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

fn decode_at(buf: &[u8], pos: &mut usize, depth: usize) -> Result<Reply, DecodeError> {
    if depth > 1000 {
        return Err(DecodeError::Invalid);
    }
    let Some(&kind) = buf.get(*pos) else {
        return Err(DecodeError::Incomplete);
    };
    *pos += 1;
    let l = line(buf, pos)?;
    Ok(match kind {
        b'+' => Reply::Status(text(l)),
        b'-' => Reply::Error(ErrorText(l.to_vec())),
        b':' => Reply::Int(int_of(l)?),
        b'_' => Reply::Nil,
        b'#' => Reply::Bool(l == b"t"),
        b',' => {
            let s = std::str::from_utf8(l).map_err(|_| DecodeError::Invalid)?;
            Reply::Double(match s {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                "nan" => f64::NAN,
                _ => s.parse().map_err(|_| DecodeError::Invalid)?,
            })
        }
        b'(' => Reply::BigNumber(text(l)),
        b'$' | b'=' => {
            let n = int_of(l)?;
            if n < 0 {
                return Ok(Reply::Nil);
            }
            let n = n as usize;
            if buf.len() < *pos + n + 2 {
                return Err(DecodeError::Incomplete);
            }
            let data = &buf[*pos..*pos + n];
            *pos += n + 2;
            if kind == b'=' {
                if data.len() < 4 {
                    return Err(DecodeError::Invalid);
                }
                Reply::Verbatim {
                    format: text(&data[..3]),
                    text: data[4..].to_vec(),
                }
            } else {
                Reply::Bulk(data.to_vec())
            }
        }
        b'*' | b'~' | b'>' => {
            let n = int_of(l)?;
            if n < 0 {
                return Ok(Reply::Nil);
            }
            let mut items = Vec::with_capacity((n as usize).min(1024));
            for _ in 0..n {
                items.push(decode_at(buf, pos, depth + 1)?);
            }
            match kind {
                b'*' => Reply::Array(items),
                b'~' => Reply::Set(items),
                _ => Reply::Push(items),
            }
        }
        b'|' => {
            // Attributes annotate the reply that follows; skip them.
            let n = int_of(l)?;
            for _ in 0..n.max(0) * 2 {
                decode_at(buf, pos, depth + 1)?;
            }
            return decode_at(buf, pos, depth + 1);
        }
        b'%' => {
            let n = int_of(l)?;
            let mut items = Vec::with_capacity((n.max(0) as usize).min(1024));
            for _ in 0..n {
                let k = decode_at(buf, pos, depth + 1)?;
                let v = decode_at(buf, pos, depth + 1)?;
                items.push((k, v));
            }
            Reply::Map(items)
        }
        _ => return Err(DecodeError::Invalid),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ReplyWriter;

    #[test]
    fn writer_output_decodes_back() {
        for resp in [2u8, 3] {
            let mut w = ReplyWriter::new(resp);
            w.array(3);
            w.int(42);
            w.bulk(b"hi");
            w.null();
            w.map(1);
            w.simple("OK");
            w.double(1.5);
            let replies = Reply::decode_all(&w.buf).unwrap();
            assert_eq!(replies.len(), 2);
            assert_eq!(
                replies[0],
                Reply::Array(vec![
                    Reply::Int(42),
                    Reply::Bulk(b"hi".to_vec()),
                    Reply::Nil
                ])
            );
            if resp == 3 {
                assert_eq!(
                    replies[1],
                    Reply::Map(vec![(Reply::Status("OK".into()), Reply::Double(1.5))])
                );
            } else {
                assert_eq!(
                    replies[1],
                    Reply::Array(vec![
                        Reply::Status("OK".into()),
                        Reply::Bulk(b"1.5".to_vec())
                    ])
                );
            }
        }
    }

    #[test]
    fn deferred_lengths() {
        let mut w = ReplyWriter::new(2);
        let d = w.begin_deferred();
        w.int(1);
        w.int(2);
        w.end_array(d, 2);
        assert_eq!(w.buf, b"*2\r\n:1\r\n:2\r\n");
    }
}
