//! `ReplyWriter`: commands write their replies straight into the client's
//! output buffer in RESP2 or RESP3, as Redis's `addReply*` functions do.
//!
//! One writer serves every caller. The network writes the buffer to the
//! socket; scripts and the embedded API decode it into a typed [`Reply`](super::Reply)
//! (as Redis's scripting engine parses the protocol a fake client produced),
//! so a command has exactly one way of answering.

use crate::util::number::format_g17;

#[derive(Default)]
pub struct ReplyWriter {
    pub buf: Vec<u8>,
    resp3: bool,
    /// Errors written so far (the dispatcher counts failed calls from it).
    pub errors: u64,
    /// Errors written that were already counted in the error statistics
    /// where they arose (a script passing on a command's error): they make
    /// the call failed without being counted twice.
    pub errors_uncounted: u64,
    /// `errors` and `errors_uncounted` as of the last command that
    /// accounted for them: a transaction's commands write their errors
    /// into EXEC's reply and count them themselves, once.
    pub errors_noted: u64,
    pub uncounted_noted: u64,
    /// The code of the last error (see `error_code`), for INFO errorstats.
    pub last_error_code: Option<Vec<u8>>,
    /// Ranges of `buf` written as pushes (Pub/Sub messages and
    /// confirmations) since the last `discard_from`: CLIENT REPLY OFF and
    /// SKIP drop a command's reply but never these (Redis's CLIENT_PUSHING).
    push_marks: Vec<(usize, usize)>,
    /// The size past which `buf` may not grow with a large bulk (the
    /// client's hard output buffer limit beyond what its connection wrote
    /// already; 0: none). Such a bulk is not copied: `over_limit` is set,
    /// and the connection closes the client without its replies, as Redis
    /// closes a client past its hard limit as soon as a reply takes it
    /// there.
    pub limit: usize,
    pub over_limit: bool,
}

/// Bulks from this size on are checked against `ReplyWriter::limit`.
const LIMITED_BULK: usize = 16 * 1024;

/// The code an error text is counted under in INFO errorstats, as
/// Redis's afterErrorReply finds it: the text up to its first space when
/// that space is among the first 31 bytes (32 with the '-'), "ERR"
/// otherwise. A '\r' or '\n' counts as the space it is written as.
pub fn error_code(text: &[u8]) -> &[u8] {
    match memchr::memchr3(b' ', b'\r', b'\n', &text[..text.len().min(31)]) {
        Some(end) => &text[..end],
        None => b"ERR",
    }
}

/// A position in the buffer where an aggregate header will be inserted
/// once its length is known (Redis's deferred length replies).
#[must_use]
pub struct Deferred(usize);

impl ReplyWriter {
    pub fn new(resp: u8) -> ReplyWriter {
        ReplyWriter {
            resp3: resp == 3,
            ..Default::default()
        }
    }

    pub fn resp(&self) -> u8 {
        if self.resp3 {
            3
        } else {
            2
        }
    }

    pub fn set_resp(&mut self, resp: u8) {
        self.resp3 = resp == 3;
    }

    #[inline]
    pub fn is_resp3(&self) -> bool {
        self.resp3
    }

    #[inline]
    fn prefixed(&mut self, prefix: u8, n: i64) {
        self.buf.push(prefix);
        let mut b = itoa::Buffer::new();
        self.buf.extend_from_slice(b.format(n).as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    pub fn simple(&mut self, s: impl AsRef<[u8]>) {
        self.buf.push(b'+');
        self.line_text(s.as_ref());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// The text of a status or error line, which cannot carry newlines
    /// (Redis replaces them with spaces); copied whole when it has none,
    /// the common case. Every other byte goes out unchanged.
    #[inline]
    fn line_text(&mut self, s: &[u8]) {
        if memchr::memchr2(b'\r', b'\n', s).is_none() {
            self.buf.extend_from_slice(s);
        } else {
            self.buf.extend(
                s.iter()
                    .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
            );
        }
    }

    /// An error reply. `msg` is the whole text after the '-', starting with
    /// its code: "ERR syntax error", "WRONGTYPE Operation against...".
    pub fn error(&mut self, msg: impl AsRef<[u8]>) {
        let msg = msg.as_ref();
        self.errors += 1;
        self.buf.push(b'-');
        self.line_text(msg);
        self.buf.extend_from_slice(b"\r\n");
        let code = error_code(msg);
        match &mut self.last_error_code {
            Some(last) => {
                last.clear();
                last.extend_from_slice(code);
            }
            None => self.last_error_code = Some(code.to_vec()),
        }
    }

    /// An error reply already counted in the error statistics (see
    /// `errors_uncounted`).
    pub fn error_uncounted(&mut self, msg: impl AsRef<[u8]>) {
        self.errors_uncounted += 1;
        self.buf.push(b'-');
        self.line_text(msg.as_ref());
        self.buf.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn int(&mut self, n: i64) {
        match n {
            0 => self.buf.extend_from_slice(b":0\r\n"),
            1 => self.buf.extend_from_slice(b":1\r\n"),
            _ => self.prefixed(b':', n),
        }
    }

    #[inline]
    pub fn bulk(&mut self, b: &[u8]) {
        if b.len() >= LIMITED_BULK && self.limit != 0 && self.buf.len() + b.len() > self.limit {
            self.over_limit = true;
            return;
        }
        self.prefixed(b'$', b.len() as i64);
        self.buf.extend_from_slice(b);
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn bulk_str(&mut self, s: &str) {
        self.bulk(s.as_bytes());
    }

    /// An integer as a bulk string (e.g. GETRANGE of an int-encoded value).
    pub fn bulk_i64(&mut self, n: i64) {
        let mut b = itoa::Buffer::new();
        self.bulk(b.format(n).as_bytes());
    }

    #[inline]
    pub fn null(&mut self) {
        self.buf
            .extend_from_slice(if self.resp3 { b"_\r\n" } else { b"$-1\r\n" });
    }

    pub fn null_array(&mut self) {
        self.buf
            .extend_from_slice(if self.resp3 { b"_\r\n" } else { b"*-1\r\n" });
    }

    #[inline]
    pub fn array(&mut self, n: usize) {
        self.prefixed(b'*', n as i64);
    }

    /// A map of `n` pairs (RESP2: a flat array of 2n elements).
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.prefixed(b'%', n as i64);
        } else {
            self.prefixed(b'*', 2 * n as i64);
        }
    }

    /// A set of `n` elements (RESP2: an array).
    pub fn set(&mut self, n: usize) {
        self.prefixed(if self.resp3 { b'~' } else { b'*' }, n as i64);
    }

    /// A RESP3 attribute map of `n` pairs (callers only emit it in RESP3).
    pub fn attribute(&mut self, n: usize) {
        self.prefixed(b'|', n as i64);
    }

    pub fn push(&mut self, n: usize) {
        self.prefixed(if self.resp3 { b'>' } else { b'*' }, n as i64);
    }

    /// Redis 7.0's addReplyDouble: "%.17g", bulk string in RESP2.
    pub fn double(&mut self, d: f64) {
        let mut s = Vec::with_capacity(24);
        format_g17(d, &mut s);
        if self.resp3 {
            self.buf.push(b',');
            self.buf.extend_from_slice(&s);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(&s);
        }
    }

    /// A double already formatted by the caller (e.g. a long double in
    /// human form): RESP3 double, RESP2 bulk.
    pub fn double_text(&mut self, s: &[u8]) {
        if self.resp3 {
            self.buf.push(b',');
            self.buf.extend_from_slice(s);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s);
        }
    }

    pub fn bool(&mut self, b: bool) {
        if self.resp3 {
            self.buf
                .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.int(b as i64);
        }
    }

    pub fn big_number(&mut self, digits: &str) {
        if self.resp3 {
            self.buf.push(b'(');
            self.buf.extend_from_slice(digits.as_bytes());
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(digits.as_bytes());
        }
    }

    /// Verbatim text (INFO, CLIENT LIST...): RESP3 "=" with a format, RESP2 bulk.
    pub fn verbatim(&mut self, text: &[u8], format: &str) {
        if self.resp3 {
            self.prefixed(b'=', (text.len() + 4) as i64);
            self.buf.extend_from_slice(format.as_bytes());
            self.buf.push(b':');
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    /// Raw protocol bytes (pre-encoded replies).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    pub fn begin_deferred(&self) -> Deferred {
        Deferred(self.buf.len())
    }

    fn finish_deferred(&mut self, d: Deferred, prefix: u8, n: usize) {
        let mut header = Vec::with_capacity(16);
        header.push(prefix);
        let mut b = itoa::Buffer::new();
        header.extend_from_slice(b.format(n).as_bytes());
        header.extend_from_slice(b"\r\n");
        for m in self.push_marks.iter_mut().filter(|m| m.0 >= d.0) {
            m.0 += header.len();
            m.1 += header.len();
        }
        self.buf.splice(d.0..d.0, header);
    }

    pub fn end_array(&mut self, d: Deferred, n: usize) {
        self.finish_deferred(d, b'*', n);
    }

    pub fn end_map(&mut self, d: Deferred, pairs: usize) {
        if self.resp3 {
            self.finish_deferred(d, b'%', pairs);
        } else {
            self.finish_deferred(d, b'*', pairs * 2);
        }
    }

    pub fn end_set(&mut self, d: Deferred, n: usize) {
        let prefix = if self.resp3 { b'~' } else { b'*' };
        self.finish_deferred(d, prefix, n);
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
        self.push_marks.retain(|m| m.1 <= len);
    }

    /// Marks what was written from `start` on as a push.
    pub fn mark_push(&mut self, start: usize) {
        if start < self.buf.len() {
            self.push_marks.push((start, self.buf.len()));
        }
    }

    /// Drops what was written from `at` on except the pushes (a command's
    /// reply under CLIENT REPLY OFF or SKIP), and forgets the marks.
    pub fn discard_from(&mut self, at: usize) {
        let marks = std::mem::take(&mut self.push_marks);
        if marks.iter().all(|m| m.1 <= at) {
            self.buf.truncate(at);
            return;
        }
        let mut kept = Vec::new();
        for (s, e) in marks {
            if s >= at && e <= self.buf.len() {
                kept.extend_from_slice(&self.buf[s..e]);
            }
        }
        self.buf.truncate(at);
        self.buf.extend_from_slice(&kept);
    }

    /// Forgets the push marks (a command's reply is final).
    #[inline]
    pub fn clear_push_marks(&mut self) {
        if !self.push_marks.is_empty() {
            self.push_marks.clear();
        }
    }

    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_go_out_with_their_bytes_and_newlines_as_spaces() {
        let mut w = ReplyWriter::new(2);
        w.error(b"ERR \xff\xfe");
        w.error(b"\xff\r\n\xfe x");
        w.error_uncounted(b"ERR a\r\nb");
        w.simple(b"\xff\n");
        assert_eq!(
            w.buf,
            b"-ERR \xff\xfe\r\n-\xff  \xfe x\r\n-ERR a  b\r\n+\xff \r\n".as_slice()
        );
        assert_eq!(w.errors, 2);
        assert_eq!(w.errors_uncounted, 1);
        assert_eq!(w.last_error_code.as_deref(), Some(b"\xff".as_slice()));
    }

    #[test]
    fn error_code_is_redis_s() {
        assert_eq!(error_code(b"WRONGTYPE Operation"), b"WRONGTYPE");
        assert_eq!(error_code(b"\xff\xfe x"), b"\xff\xfe");
        assert_eq!(error_code(b"\xff\r\nx"), b"\xff");
        assert_eq!(error_code(b"NOSPACE"), b"ERR");
        assert_eq!(error_code(b" x"), b"");
        // The space must be among the first 32 bytes of "-CODE ...".
        let thirty = [b"B".repeat(30), b" x".to_vec()].concat();
        assert_eq!(error_code(&thirty), &thirty[..30]);
        let thirty_one = [b"C".repeat(31), b" x".to_vec()].concat();
        assert_eq!(error_code(&thirty_one), b"ERR");
    }
}
