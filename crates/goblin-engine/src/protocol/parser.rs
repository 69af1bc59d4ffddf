//! The request parser: RESP multibulk and inline commands, incrementally.
//!
//! It follows `processMultibulkBuffer` and `processInlineBuffer` in Redis's
//! networking.c, including their limits and error texts, because clients and
//! the Tcl suite depend on them. The parser keeps its progress through a
//! partially received command (count read, arguments located so far), so a
//! command that arrives in many reads is scanned once, not once per read.
//!
//! Arguments are located as ranges into the caller's buffer; nothing is
//! copied until a command decides to store a value. A bulk of at least
//! [`BIG_ARG`] bytes is received into a buffer of its own, of its exact
//! size (`big_bulk_buffer`), as Redis reads one into an sds of its own
//! (processMultibulkBuffer): the query buffer does not grow to hold it,
//! and a command may keep that very buffer as the value it stores
//! (`big_args`, `crate::command::Ctx::adopt`).

use bytes::{Bytes, BytesMut};
use std::ops::Range;

/// Longest inline command, and longest count line, Redis accepts (64 KiB).
pub const INLINE_MAX: usize = 64 * 1024;

/// Bulks this long or longer get a buffer of their own (Redis's
/// PROTO_MBULK_BIG_ARG).
pub const BIG_ARG: usize = 32 * 1024;

/// What one call to [`RequestParser::parse`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole command: its arguments are in `args()` / `inline_args()`.
    Command,
    /// An empty command (`*0`, `*-1` or a blank inline line) was consumed.
    Empty,
    /// More bytes are needed.
    Incomplete,
    /// A protocol error: reply with this text (after "ERR "), then close
    /// the connection. Bytes: it may quote a byte of the input.
    Error(Vec<u8>),
}

#[derive(Default)]
struct BigBulks {
    /// The big bulk being received, outside the caller's buffer (its
    /// trailing CRLF included).
    receiving: Option<BytesMut>,
    /// The big bulks of the command parsed: (argument index, bytes). Their
    /// spans are empty.
    args: Vec<(usize, Bytes)>,
}

#[derive(Default)]
pub struct RequestParser {
    /// Offset of the next unparsed byte in the buffer.
    pos: usize,
    /// Arguments still to read in the current multibulk (0 = none started).
    remaining: usize,
    /// Declared length of the bulk being read, if its header was read.
    bulk_len: Option<usize>,
    spans: Vec<Range<usize>>,
    inline: Vec<Vec<u8>>,
    is_inline: bool,
    /// Where the command being parsed starts in the buffer.
    partial_start: usize,
    /// proto-max-bulk-len: longer declared bulks are a protocol error.
    pub max_bulk_len: u64,
    /// Big bulks, boxed: every connection holds a parser, few ever
    /// receive one.
    big: Option<Box<BigBulks>>,
    /// The command parsed was held back (`rewind`): the next `parse`
    /// returns it again.
    replay: bool,
}

impl RequestParser {
    pub fn new(max_bulk_len: u64) -> RequestParser {
        RequestParser {
            max_bulk_len,
            ..Default::default()
        }
    }

    /// Bytes of the buffer consumed by complete commands so far.
    pub fn consumed(&self) -> usize {
        if self.replay || self.remaining > 0 || self.bulk_len.is_some() {
            // A partial multibulk keeps its bytes: its spans point there.
            self.partial_start
        } else {
            self.pos
        }
    }

    /// Arguments of the command just parsed (multibulk form).
    pub fn is_inline(&self) -> bool {
        self.is_inline
    }

    pub fn spans(&self) -> &[Range<usize>] {
        &self.spans
    }

    pub fn inline_args(&self) -> &[Vec<u8>] {
        &self.inline
    }

    /// The big bulks of the command just parsed, by argument index (see
    /// [`BIG_ARG`]); their `spans` are empty.
    pub fn big_args(&self) -> &[(usize, Bytes)] {
        self.big.as_ref().map_or(&[], |b| &b.args)
    }

    /// Fills `argv` with the arguments of the command just parsed.
    pub fn argv<'b>(&'b self, buf: &'b [u8], argv: &mut Vec<&'b [u8]>) {
        argv.clear();
        if self.is_inline {
            argv.extend(self.inline.iter().map(|a| a.as_slice()));
        } else {
            argv.extend(self.spans.iter().map(|r| &buf[r.clone()]));
            for (i, b) in self.big_args() {
                argv[*i] = b;
            }
        }
    }

    /// Bytes of the big bulk being received (they count in the client's
    /// query buffer, as in Redis).
    pub fn big_received(&self) -> usize {
        self.big
            .as_ref()
            .and_then(|b| b.receiving.as_ref())
            .map_or(0, |b| b.len())
    }

    /// Whether a big bulk is being received into a buffer of its own.
    pub fn receiving_big(&self) -> bool {
        self.big.as_ref().is_some_and(|b| b.receiving.is_some())
    }

    /// The size of the buffer of the big bulk being received, allocated
    /// at the bulk's size: memory of the client's query buffer. (Big
    /// bulks already received count as arguments, `partial_args`.)
    pub fn big_capacity(&self) -> usize {
        self.big
            .as_ref()
            .and_then(|b| b.receiving.as_ref())
            .map_or(0, |r| r.capacity())
    }

    /// The arguments of the command being received read so far: their
    /// bytes and number (Redis has them in the client's argv by then).
    pub fn partial_args(&self) -> (usize, usize) {
        if self.remaining == 0 && self.bulk_len.is_none() {
            return (0, 0);
        }
        let bytes = self.spans.iter().map(|r| r.len()).sum::<usize>()
            + self.big_args().iter().map(|(_, a)| a.len()).sum::<usize>();
        (bytes, self.spans.len())
    }

    /// The command just parsed has run: its big bulks are let go (a value
    /// that adopted one holds it alone from now on).
    pub fn finish_command(&mut self) {
        if self.big.as_ref().is_some_and(|b| b.receiving.is_none()) {
            self.big = None;
        }
    }

    /// The buffer to receive the rest of the big bulk being read into, with
    /// the number of bytes it still needs; None when no big bulk is being
    /// read. The first call moves what `buf` holds of the bulk (everything
    /// after its header) into a buffer of the bulk's exact size, and cuts
    /// `buf` there: until the bulk is complete, reads go to that buffer,
    /// never past the bulk's end.
    pub fn big_bulk_buffer(&mut self, buf: &mut BytesMut) -> Option<(&mut BytesMut, usize)> {
        let len = self.bulk_len?;
        if len < BIG_ARG {
            return None;
        }
        let bulks = self.big.get_or_insert_with(Default::default);
        if bulks.receiving.is_none() {
            let mut big = BytesMut::with_capacity(len + 2);
            big.extend_from_slice(&buf[self.pos..]);
            buf.truncate(self.pos);
            bulks.receiving = Some(big);
        }
        let big = bulks.receiving.as_mut()?;
        let missing = (len + 2).saturating_sub(big.len());
        (missing > 0).then_some((big, missing))
    }

    /// Tells the parser the caller dropped the first `n` bytes of its
    /// buffer (all consumed); offsets of a partial command are shifted.
    pub fn discard(&mut self, n: usize) {
        debug_assert!(n <= self.pos);
        self.pos -= n;
        self.partial_start = self.partial_start.saturating_sub(n);
        if !self.replay && self.remaining == 0 && self.bulk_len.is_none() {
            // The arguments of a finished command (one that blocked ends
            // its turn) lay in the dropped bytes.
            self.spans.clear();
            return;
        }
        for r in &mut self.spans {
            *r = r.start - n..r.end - n;
        }
    }

    /// Keeps the command just parsed, so that the next `parse` returns
    /// it again (a command CLIENT PAUSE held back). Its bytes stay
    /// unconsumed; its big bulks, outside the buffer, are kept.
    pub fn rewind(&mut self) {
        self.replay = true;
    }

    /// Gives back the argument table of a very long command once no
    /// command is in progress (a 100,000-argument SADD leaves 1.6 MB).
    pub fn shrink(&mut self) {
        if self.spans.capacity() > 1024
            && !self.replay
            && self.remaining == 0
            && self.bulk_len.is_none()
        {
            self.spans = Vec::new();
            self.inline = Vec::new();
        }
    }

    /// How many more bytes the current partial bulk needs (to size reads).
    pub fn pending_bulk(&self) -> Option<usize> {
        self.bulk_len
    }

    /// Parses the next command from `buf[pos..]`. `auth_required` applies
    /// Redis's stricter limits for clients that have not authenticated.
    pub fn parse(&mut self, buf: &[u8], auth_required: bool) -> Parsed {
        if self.replay {
            self.replay = false;
            return Parsed::Command;
        }
        if self.remaining == 0 && self.bulk_len.is_none() {
            // Starting a new command.
            self.spans.clear();
            self.inline.clear();
            self.big = None;
            self.is_inline = false;
            if self.pos >= buf.len() {
                return Parsed::Incomplete;
            }
            self.partial_start = self.pos;
            if buf[self.pos] != b'*' {
                return self.parse_inline(buf);
            }
            let (cr, count) = match short_length(buf, self.pos + 1) {
                Some((n, cr)) => (cr, Some(n)),
                None => {
                    let Some(cr) = memchr::memchr(b'\r', &buf[self.pos..]) else {
                        if buf.len() - self.pos > INLINE_MAX {
                            return Parsed::Error(
                                "Protocol error: too big mbulk count string".into(),
                            );
                        }
                        return Parsed::Incomplete;
                    };
                    let cr = self.pos + cr;
                    (
                        cr,
                        buf.get(self.pos + 1..cr)
                            .and_then(crate::util::number::parse_i64),
                    )
                }
            };
            if cr + 2 > buf.len() {
                return Parsed::Incomplete;
            }
            let count = match count {
                Some(n) if n <= i32::MAX as i64 => n,
                _ => return Parsed::Error("Protocol error: invalid multibulk length".into()),
            };
            if count > 10 && auth_required {
                return Parsed::Error("Protocol error: unauthenticated multibulk length".into());
            }
            self.pos = cr + 2;
            if count <= 0 {
                return Parsed::Empty;
            }
            self.remaining = count as usize;
            self.spans.reserve(self.remaining.min(1024));
        }

        while self.remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let (cr, len) = match short_length(buf, self.pos + 1) {
                        Some((n, cr)) => (cr, Some(n)),
                        None => {
                            let Some(cr) = memchr::memchr(b'\r', &buf[self.pos..]) else {
                                if buf.len() - self.pos > INLINE_MAX {
                                    return Parsed::Error(
                                        "Protocol error: too big bulk count string".into(),
                                    );
                                }
                                return Parsed::Incomplete;
                            };
                            let cr = self.pos + cr;
                            (
                                cr,
                                buf.get(self.pos + 1..cr)
                                    .and_then(crate::util::number::parse_i64),
                            )
                        }
                    };
                    if cr + 2 > buf.len() {
                        return Parsed::Incomplete;
                    }
                    if buf[self.pos] != b'$' {
                        return Parsed::Error(
                            [
                                b"Protocol error: expected '$', got '",
                                &buf[self.pos..=self.pos],
                                b"'",
                            ]
                            .concat(),
                        );
                    }
                    let len = match len {
                        Some(n) if n >= 0 && (n as u64) <= self.max_bulk_len => n as usize,
                        _ => return Parsed::Error("Protocol error: invalid bulk length".into()),
                    };
                    if len > 16384 && auth_required {
                        return Parsed::Error("Protocol error: unauthenticated bulk length".into());
                    }
                    self.pos = cr + 2;
                    self.bulk_len = Some(len);
                    len
                }
            };
            if let Some(bulks) = self.big.as_mut().filter(|b| b.receiving.is_some()) {
                // Received outside the buffer (big_bulk_buffer).
                if bulks.receiving.as_ref().is_some_and(|b| b.len() < len + 2) {
                    return Parsed::Incomplete;
                }
                let mut big = bulks.receiving.take().unwrap_or_default();
                big.truncate(len);
                bulks.args.push((self.spans.len(), big.freeze()));
                self.spans.push(self.pos..self.pos);
                self.bulk_len = None;
                self.remaining -= 1;
                continue;
            }
            if buf.len() - self.pos < len + 2 {
                return Parsed::Incomplete;
            }
            self.spans.push(self.pos..self.pos + len);
            self.pos += len + 2;
            self.bulk_len = None;
            self.remaining -= 1;
        }
        Parsed::Command
    }

    fn parse_inline(&mut self, buf: &[u8]) -> Parsed {
        let rest = &buf[self.pos..];
        // Redis looks for the line's end with strchr, which stops at a NUL:
        // past one, no line ends, and the request grows until it is too
        // big.
        let searched = memchr::memchr(0, rest).unwrap_or(rest.len());
        let Some(nl) = memchr::memchr(b'\n', &rest[..searched]) else {
            if rest.len() > INLINE_MAX {
                return Parsed::Error("Protocol error: too big inline request".into());
            }
            return Parsed::Incomplete;
        };
        let line_end = if nl > 0 && rest[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        let line = &rest[..line_end];
        match split_args(line) {
            Some(args) => {
                self.pos += nl + 1;
                if args.is_empty() {
                    return Parsed::Empty;
                }
                self.inline = args;
                self.is_inline = true;
                Parsed::Command
            }
            None => Parsed::Error("Protocol error: unbalanced quotes in request".into()),
        }
    }
}

/// The common length line, read in one pass: a few decimal digits (no
/// leading zero but "0" itself) up to a '\r' inside `buf`, starting at
/// `start`. The value and the position of the '\r'; None for anything
/// else (signs, leading zeros, long or unfinished lines), which the general
/// path (memchr, then Redis's string2ll) reads and reports.
#[inline]
fn short_length(buf: &[u8], start: usize) -> Option<(i64, usize)> {
    let end = buf.len().min(start + 18);
    let mut v: i64 = 0;
    let mut i = start;
    while i < end {
        let c = buf[i];
        if c == b'\r' {
            let digits = i - start;
            if digits == 0 || (digits > 1 && buf[start] == b'0') {
                return None;
            }
            return Some((v, i));
        }
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as i64;
        i += 1;
    }
    None
}

/// Redis's `sdssplitargs`: space-separated arguments with "double quoted"
/// strings (C escapes and \xHH) and 'single quoted' strings (only \').
/// A closing quote must be followed by a space or the end. None on
/// unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // Redis splits a C string: a NUL byte ends the line.
    let line = &line[..memchr::memchr(0, line).unwrap_or(line.len())];
    let mut args = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Some(args);
        }
        let mut current = Vec::new();
        let mut inq = false; // inside "double quotes"
        let mut insq = false; // inside 'single quotes'
        loop {
            let c = line.get(i).copied();
            if inq {
                match c {
                    None => return None,
                    Some(b'\\')
                        if i + 3 < n
                            && line[i + 1] == b'x'
                            && is_hex(line[i + 2])
                            && is_hex(line[i + 3]) =>
                    {
                        current.push(hex(line[i + 2]) * 16 + hex(line[i + 3]));
                        i += 3;
                    }
                    Some(b'\\') if i + 1 < n => {
                        i += 1;
                        current.push(match line[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        // The closing quote must be followed by a space or nothing.
                        if i + 1 < n && !is_space(line[i + 1]) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => current.push(other),
                }
            } else if insq {
                match c {
                    None => return None,
                    Some(b'\\') if i + 1 < n && line[i + 1] == b'\'' => {
                        i += 1;
                        current.push(b'\'');
                    }
                    Some(b'\'') => {
                        if i + 1 < n && !is_space(line[i + 1]) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => current.push(other),
                }
            } else {
                match c {
                    None => break,
                    // A word ends at these only (sdssplitargs), not at
                    // every isspace() byte: \v and \f are part of it.
                    Some(b' ' | b'\t' | b'\n' | b'\r') => break,
                    Some(b'"') => inq = true,
                    Some(b'\'') => insq = true,
                    Some(other) => current.push(other),
                }
            }
            i += 1;
        }
        args.push(current);
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

fn hex(c: u8) -> u8 {
    (c as char).to_digit(16).unwrap() as u8
}

/// Redis's sdscatrepr: a quoted string with C escapes (what
/// `split_args` reads back).
pub fn repr(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' | b'"' => {
                out.push(b'\\');
                out.push(c);
            }
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c),
            c => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    #[test]
    fn repr_escapes_as_redis() {
        let mut v = Vec::new();
        super::repr(&mut v, b"a\"b\\\n\x01 z");
        assert_eq!(v, b"\"a\\\"b\\\\\\n\\x01 z\"");
    }

    use super::*;

    fn parse_all(input: &[u8]) -> (Vec<Vec<Vec<u8>>>, Option<String>) {
        let mut p = RequestParser::new(512 * 1024 * 1024);
        let mut cmds = Vec::new();
        loop {
            match p.parse(input, false) {
                Parsed::Command => {
                    let mut argv = Vec::new();
                    p.argv(input, &mut argv);
                    cmds.push(argv.iter().map(|a| a.to_vec()).collect());
                }
                Parsed::Empty => {}
                Parsed::Incomplete => return (cmds, None),
                Parsed::Error(e) => return (cmds, Some(String::from_utf8_lossy(&e).into_owned())),
            }
        }
    }

    #[test]
    fn multibulk_and_inline() {
        let (cmds, err) = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\nset a \"b c\"\r\n");
        assert!(err.is_none());
        assert_eq!(cmds.len(), 3);
        assert_eq!(cmds[0], vec![b"GET".to_vec(), b"k".to_vec()]);
        assert_eq!(cmds[1], vec![b"PING".to_vec()]);
        assert_eq!(
            cmds[2],
            vec![b"set".to_vec(), b"a".to_vec(), b"b c".to_vec()]
        );
    }

    #[test]
    fn byte_by_byte_arrival() {
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
        let mut p = RequestParser::new(1 << 20);
        let mut found = 0;
        for end in 1..=input.len() {
            match p.parse(&input[..end], false) {
                Parsed::Command => found += 1,
                Parsed::Incomplete => {}
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(found, 1);
    }

    #[test]
    fn expected_dollar_quotes_the_byte_unchanged() {
        let mut p = RequestParser::new(512 * 1024 * 1024);
        let input = b"*1\r\n\xff3\r\nfoo\r\n";
        let mut seen = None;
        for _ in 0..4 {
            if let Parsed::Error(e) = p.parse(input, false) {
                seen = Some(e);
                break;
            }
        }
        assert_eq!(seen.unwrap(), b"Protocol error: expected '$', got '\xff'");
    }

    #[test]
    fn redis_error_texts() {
        assert_eq!(
            parse_all(b"*3000000000\r\n").1.unwrap(),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            parse_all(b"*20\r\nfoo\r\n").1.unwrap(),
            "Protocol error: expected '$', got 'f'"
        );
        assert_eq!(
            parse_all(b"*1\r\n$-10\r\n").1.unwrap(),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            parse_all(b"*1\r\n$2000000000\r\n").1.unwrap(),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            parse_all(b"*1\r\n$blabla\r\n").1.unwrap(),
            "Protocol error: invalid bulk length"
        );
        // Regression: a '\r' where the '$' belongs once sliced past the line.
        assert_eq!(
            parse_all(b"*1\r\n\r\n").1.unwrap(),
            "Protocol error: expected '$', got '\r'"
        );
        // Leading zeros and signs take the general path, as string2ll reads them.
        assert_eq!(
            parse_all(b"*1\r\n$01\r\nx\r\n").1.unwrap(),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            parse_all(b"*01\r\n$1\r\nx\r\n").1.unwrap(),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            parse_all(b"*1\r\n$+1\r\nx\r\n").1.unwrap(),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            parse_all(b"*-1\r\n*1\r\n$0\r\n\r\n").0,
            vec![vec![Vec::new()]]
        );
        assert_eq!(
            parse_all(b"*1\r\n$00000000000000000000000001\r\nx\r\n")
                .1
                .unwrap(),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            parse_all(b"set \"\"\"test-key\"\"\" test-value\r\n")
                .1
                .unwrap(),
            "Protocol error: unbalanced quotes in request"
        );
    }

    #[test]
    fn split_args_escapes() {
        assert_eq!(
            split_args(b"a \"\\x41\\n\" 'it\\'s'").unwrap(),
            vec![b"a".to_vec(), b"A\n".to_vec(), b"it's".to_vec()]
        );
        assert!(split_args(b"\"unterminated").is_none());
        assert!(split_args(b"\"a\"b").is_none());
        // Regression: a NUL byte once made the splitter loop forever.
        assert_eq!(
            split_args(b"set a\0b c").unwrap(),
            vec![b"set".to_vec(), b"a".to_vec()]
        );
        assert_eq!(split_args(b"   ").unwrap().len(), 0);
    }

    /// sdssplitargs skips every isspace() byte between words, but ends a
    /// word only at a space, tab, CR or LF: \v and \f inside a word are
    /// part of it.
    #[test]
    fn split_args_ends_words_as_sdssplitargs() {
        assert_eq!(
            split_args(b"\x0c\x0bset a\x0cb\x0b c").unwrap(),
            vec![b"set".to_vec(), b"a\x0cb\x0b".to_vec(), b"c".to_vec()]
        );
        assert_eq!(
            split_args(b"\"a\"\x0cb").unwrap(),
            vec![b"a".to_vec(), b"b".to_vec()]
        );
    }

    /// A bulk of BIG_ARG bytes or more is received into a buffer of its
    /// own, of its exact size, which the command gets as it is; the query
    /// buffer keeps only what precedes it, and what follows it.
    #[test]
    fn big_bulks_get_a_buffer_of_their_own() {
        let value = vec![b'v'; BIG_ARG + 10];
        let mut wire = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n".to_vec();
        wire.extend_from_slice(format!("${}\r\n", value.len()).as_bytes());
        let head = wire.len();
        wire.extend_from_slice(&value);
        wire.extend_from_slice(b"\r\n*1\r\n$4\r\nPING\r\n");
        let mut p = RequestParser::new(1 << 30);
        let mut buf = BytesMut::from(&wire[..head + 100]);
        assert_eq!(p.parse(&buf, false), Parsed::Incomplete);
        let mut fed = head + 100;
        while let Some((big, missing)) = p.big_bulk_buffer(&mut buf) {
            assert_eq!(big.capacity(), value.len() + 2);
            let n = missing.min(1000);
            big.extend_from_slice(&wire[fed..fed + n]);
            fed += n;
        }
        assert_eq!(buf.len(), head);
        buf.extend_from_slice(&wire[fed..]);
        assert_eq!(p.parse(&buf, false), Parsed::Command);
        let args = |p: &RequestParser, buf: &[u8]| {
            let mut argv = Vec::new();
            p.argv(buf, &mut argv);
            argv.iter().map(|a| a.to_vec()).collect::<Vec<_>>()
        };
        assert_eq!(
            args(&p, &buf),
            vec![b"SET".to_vec(), b"k".to_vec(), value.clone()]
        );
        assert_eq!(p.big_args().len(), 1);
        assert_eq!(p.big_args()[0].0, 2);
        // Held back and parsed again (CLIENT PAUSE): the same command.
        p.rewind();
        assert_eq!(p.consumed(), 0);
        assert_eq!(p.parse(&buf, false), Parsed::Command);
        assert_eq!(args(&p, &buf)[2], value);
        p.finish_command();
        assert!(p.big_args().is_empty());
        assert_eq!(p.parse(&buf, false), Parsed::Command);
        assert_eq!(args(&p, &buf), vec![b"PING".to_vec()]);
        assert_eq!(p.parse(&buf, false), Parsed::Incomplete);
        assert_eq!(p.consumed(), buf.len());
    }
}
