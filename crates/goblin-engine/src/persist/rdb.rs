//! Redis's RDB format, version 10 (Redis 7.0): the encoding of values
//! shared by snapshot files and DUMP payloads, the file's framing (magic,
//! aux fields, SELECTDB, RESIZEDB, expiry, EOF, CRC64), and the reader of
//! both, which also accepts the encodings older Redis versions wrote.
//!
//! Writing follows rdb.c byte for byte where it matters to Redis: strings
//! that are small integers take the integer encodings, strings longer than
//! 20 bytes are LZF-compressed when that saves at least 4 bytes, compact
//! collections are written as Redis's listpacks and intsets, large sorted
//! sets as ZSET_2 with binary doubles from the highest score down, lists
//! as quicklists of listpacks.

use super::lzf;
use super::packed::{self, Corrupt, Elem, Listpack, ListpackWriter, Ziplist};
use crate::keyspace::hash::{Hash, HashLimits};
use crate::keyspace::list::{Fill, List};
use crate::keyspace::set::{Member, Set};
use crate::keyspace::stream::{self, ConsumerGroup, Nack, Stream, StreamId};
use crate::keyspace::zset::{self, ZSet};
use crate::keyspace::{CompactBytes, Object, Value};
use crate::util::number::{format_g17, parse_f64, parse_i64};
use std::io::Read;

pub const RDB_VERSION: u16 = 10;

/// Value types (RDB_TYPE_*).
pub mod kind {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const MODULE: u8 = 6;
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    /// Hashes with field TTLs, in Redis 7.4's encodings (Redis 7.0 has no
    /// field TTLs; Goblin writes these only for hashes that have some).
    pub const HASH_METADATA: u8 = 24;
    pub const HASH_LISTPACK_EX: u8 = 25;
}

/// Opcodes of the file framing (RDB_OPCODE_*).
pub mod opcode {
    pub const FUNCTION2: u8 = 245;
    pub const FUNCTION: u8 = 246;
    pub const MODULE_AUX: u8 = 247;
    pub const IDLE: u8 = 248;
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZEDB: u8 = 251;
    pub const EXPIRETIME_MS: u8 = 252;
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;
}

/// Quicklist node containers.
const QUICKLIST_PLAIN: u64 = 1;
const QUICKLIST_PACKED: u64 = 2;

/// Redis's CRC-64/Jones ("crc64" in crc64.c), over the file or payload.
pub static CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

// ---------------------------------------------------------------------------
// Writing

/// The configuration that shapes what is written.
#[derive(Clone, Copy, Debug)]
pub struct SaveOptions {
    /// rdbcompression: LZF for strings longer than 20 bytes.
    pub compress: bool,
    /// list-max-listpack-size: entries per quicklist node when positive,
    /// a byte budget of 4/8/16/32/64 KB when -1..-5.
    pub list_fill: i64,
    /// Each key's access record, as the maxmemory-policy keeps it: its
    /// idle time under an LRU policy, its counter under an LFU one
    /// (RDB_OPCODE_IDLE / RDB_OPCODE_FREQ, as rdbSaveKeyValuePair writes
    /// them).
    pub access: AccessRecord,
}

/// Which access record keys carry in a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessRecord {
    None,
    Idle,
    Freq(crate::keyspace::AccessPolicy),
}

impl Default for SaveOptions {
    fn default() -> Self {
        SaveOptions {
            compress: true,
            list_fill: -2,
            access: AccessRecord::None,
        }
    }
}

impl SaveOptions {
    pub fn from_config(config: &crate::config::Config) -> SaveOptions {
        let policy = crate::evict::Policy::parse(&config.maxmemory_policy());
        let access = match policy {
            Some(p) if p.lfu() => AccessRecord::Freq(crate::evict::access_policy(config)),
            Some(p) if p.tracks_access() => AccessRecord::Idle,
            _ => AccessRecord::None,
        };
        SaveOptions {
            compress: config.rdbcompression(),
            list_fill: config.list_max_listpack_size(),
            access,
        }
    }
}

/// rdbSaveLen: 6-bit, 14-bit, 32-bit or 64-bit big-endian lengths.
pub fn put_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(((len >> 8) as u8) | 0x40);
        out.push(len as u8);
    } else if len <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// rdbSaveRawString: an integer encoding when the string is a small
/// integer, LZF when it pays, the bytes otherwise.
pub fn put_string(out: &mut Vec<u8>, s: &[u8], opts: &SaveOptions) {
    if s.len() <= 11 {
        if let Some(v) = parse_i64(s) {
            if let Ok(v) = i8::try_from(v) {
                out.push(0xC0);
                out.push(v as u8);
                return;
            } else if let Ok(v) = i16::try_from(v) {
                out.push(0xC1);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            } else if let Ok(v) = i32::try_from(v) {
                out.push(0xC2);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
        }
    }
    if opts.compress && s.len() > 20 {
        if let Some(c) = lzf::compress(s, s.len() - 4) {
            out.push(0xC3);
            put_len(out, c.len() as u64);
            put_len(out, s.len() as u64);
            out.extend_from_slice(&c);
            return;
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Redis's d2string: how a listpack-encoded sorted set stores a score.
fn d2string(v: f64, out: &mut Vec<u8>) {
    if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"inf" } else { b"-inf" });
    } else if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0" } else { b"0" });
    } else if v >= -(i64::MAX / 2) as f64 && v <= (i64::MAX / 2) as f64 && v == (v as i64) as f64 {
        out.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
    } else {
        format_g17(v, out);
    }
}

/// The RDB type byte a value is written with.
pub fn value_kind(v: &Value) -> Option<u8> {
    Some(match v {
        Value::Str(_) => kind::STRING,
        Value::Hash(h) if h.has_field_ttls() => kind::HASH_METADATA,
        Value::Hash(h) if h.is_compact() => kind::HASH_LISTPACK,
        Value::Hash(_) => kind::HASH,
        Value::Set(s) if s.is_intset() => kind::SET_INTSET,
        Value::Set(_) => kind::SET,
        Value::ZSet(z) if z.is_packed() => kind::ZSET_LISTPACK,
        Value::ZSet(_) => kind::ZSET_2,
        Value::List(_) => kind::LIST_QUICKLIST_2,
        Value::Stream(_) => kind::STREAM_LISTPACKS_2,
    })
}

/// The byte budget of one quicklist node (Redis's optimization_level).
fn list_node_limits(fill: i64) -> (usize, usize) {
    const SIZES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
    if fill >= 0 {
        // A count limit, still bounded by Redis's SIZE_SAFETY_LIMIT.
        (fill.max(1) as usize, 8192)
    } else {
        let idx = ((-fill) as usize).clamp(1, 5) - 1;
        (usize::MAX, SIZES[idx])
    }
}

/// Writes a list as Redis 7.0's QUICKLIST_2: nodes of listpacks, each
/// filled as quicklist's _quicklistNodeAllowInsert allows.
pub fn put_list<'a>(out: &mut Vec<u8>, elems: impl Iterator<Item = &'a [u8]>, opts: &SaveOptions) {
    /// Elements at least this long go into a PLAIN node of their own
    /// (quicklist's packed_threshold, 1 GB).
    const PACKED_THRESHOLD: usize = 1 << 30;
    let (max_count, max_bytes) = list_node_limits(opts.list_fill);
    let mut nodes: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut cur = ListpackWriter::new();
    for e in elems {
        if e.len() >= PACKED_THRESHOLD {
            if !cur.is_empty() {
                nodes.push((QUICKLIST_PACKED, std::mem::take(&mut cur).finish()));
            }
            nodes.push((QUICKLIST_PLAIN, e.to_vec()));
            continue;
        }
        let add = packed::listpack_entry_size(e);
        if !cur.is_empty() && (cur.len() + 1 > max_count || cur.bytes() + add > max_bytes) {
            nodes.push((QUICKLIST_PACKED, std::mem::take(&mut cur).finish()));
        }
        cur.push(e);
    }
    if !cur.is_empty() {
        nodes.push((QUICKLIST_PACKED, cur.finish()));
    }
    put_len(out, nodes.len() as u64);
    for (container, blob) in nodes {
        put_len(out, container);
        put_string(out, &blob, opts);
    }
}

/// Writes a stream as Redis 7.0's STREAM_LISTPACKS_2 (rdbSaveObject): the
/// nodes (master ID as a 16-byte big-endian string, the listpack as is),
/// the length, the last, first and greatest deleted IDs, the entries ever
/// added, then each group: name, last ID, read counter, its PEL (raw
/// 16-byte IDs, delivery time in ms LE, delivery count) and its consumers
/// (name, seen time, the raw IDs they own).
fn put_stream(out: &mut Vec<u8>, s: &Stream, opts: &SaveOptions) {
    let e = &s.entries;
    put_len(out, e.node_count() as u64);
    for (master, lp) in e.nodes() {
        put_string(out, &master.to_be_bytes(), opts);
        put_string(out, lp, opts);
    }
    put_len(out, e.length);
    for id in [e.last_id, e.first_id, e.max_deleted_entry_id] {
        put_len(out, id.ms);
        put_len(out, id.seq);
    }
    put_len(out, e.entries_added);
    put_len(out, s.groups.len() as u64);
    for (name, g) in &s.groups {
        put_string(out, name, opts);
        put_len(out, g.last_id.ms);
        put_len(out, g.last_id.seq);
        // An unknown counter is Redis's -1, saved as an unsigned length.
        put_len(out, g.entries_read.unwrap_or(-1) as u64);
        put_len(out, g.pel.len() as u64);
        for (id, nack) in &g.pel {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&nack.delivery_time.to_le_bytes());
            put_len(out, nack.delivery_count);
        }
        put_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            put_string(out, cname, opts);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            put_len(out, c.pel.len() as u64);
            for id in &c.pel {
                out.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
}

/// Writes a value's body (after its type byte).
pub fn put_value(out: &mut Vec<u8>, v: &Value, opts: &SaveOptions) {
    match v {
        Value::Str(s) => put_string(out, s, opts),
        Value::Stream(st) => put_stream(out, st, opts),
        Value::List(l) => put_list(out, l.iter(), opts),
        Value::Hash(h) if h.has_field_ttls() => {
            // Redis 7.4's HASH_METADATA: the earliest deadline, then each
            // field's deadline relative to it (+1; 0 = no TTL), field, value.
            let min = h.next_field_expiry().unwrap_or(0);
            out.extend_from_slice(&min.to_le_bytes());
            put_len(out, h.len() as u64);
            for (f, val) in h.iter() {
                let ttl = h
                    .field_expiry(f)
                    .flatten()
                    .map_or(0, |t| t.saturating_sub(min) + 1);
                put_len(out, ttl);
                put_string(out, f, opts);
                put_string(out, val, opts);
            }
        }
        Value::Hash(h) if h.is_compact() => {
            let mut w = ListpackWriter::new();
            for (f, val) in h.iter() {
                w.push(f);
                w.push(val);
            }
            put_string(out, &w.finish(), opts);
        }
        Value::Hash(h) => {
            put_len(out, h.len() as u64);
            for (f, val) in h.iter() {
                put_string(out, f, opts);
                put_string(out, val, opts);
            }
        }
        Value::Set(s) if s.is_intset() => {
            let ints: Vec<i64> = s
                .iter()
                .map(|m| match m {
                    Member::Int(v) => v,
                    Member::Str(_) => unreachable!("intset holds integers"),
                })
                .collect();
            put_string(out, &packed::intset_write(ints.into_iter()), opts);
        }
        Value::Set(s) => {
            put_len(out, s.len() as u64);
            for m in s.iter() {
                put_string(out, &m.to_bytes(), opts);
            }
        }
        Value::ZSet(z) if z.is_packed() => {
            let mut w = ListpackWriter::new();
            let mut score = Vec::with_capacity(32);
            for (m, s) in z.iter() {
                w.push(m);
                score.clear();
                d2string(s, &mut score);
                w.push(&score);
            }
            put_string(out, &w.finish(), opts);
        }
        Value::ZSet(z) => {
            // From the highest score down, so that loading in order makes
            // every insertion land at the head (as rdb.c explains).
            put_len(out, z.len() as u64);
            for (m, s) in z.iter_from(z.len().saturating_sub(1), true).take(z.len()) {
                put_string(out, m, opts);
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
    }
}

/// One key's record in a snapshot: expiry, access record (see
/// [`AccessRecord`]), type, key, value.
pub fn put_key(out: &mut Vec<u8>, key: &[u8], obj: &Object, opts: &SaveOptions, now_ms: u64) {
    let v = &obj.value;
    if let Some(at) = obj.expire_at() {
        out.push(opcode::EXPIRETIME_MS);
        out.extend_from_slice(&at.to_le_bytes());
    }
    match opts.access {
        AccessRecord::None => {}
        AccessRecord::Idle => {
            out.push(opcode::IDLE);
            put_len(out, obj.idle_seconds(now_ms));
        }
        AccessRecord::Freq(policy) => {
            out.push(opcode::FREQ);
            out.push(obj.lfu_frequency(policy, now_ms).min(255) as u8);
        }
    }
    out.push(value_kind(v).expect("every value type has an RDB type"));
    put_string(out, key, opts);
    put_value(out, v, opts);
}

pub fn put_aux(out: &mut Vec<u8>, key: &str, value: &[u8], opts: &SaveOptions) {
    out.push(opcode::AUX);
    put_string(out, key.as_bytes(), opts);
    put_string(out, value, opts);
}

/// A function library (RDB_OPCODE_FUNCTION2): its code.
pub fn put_function(out: &mut Vec<u8>, code: &[u8], opts: &SaveOptions) {
    out.push(opcode::FUNCTION2);
    put_string(out, code, opts);
}

/// DUMP's payload: type, value, RDB version (2 bytes LE), CRC64 (8 bytes LE).
pub fn dump_payload(v: &Value, opts: &SaveOptions) -> Vec<u8> {
    let mut out = Vec::new();
    out.push(value_kind(v).expect("every value type has an RDB type"));
    put_value(&mut out, v, opts);
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Redis's verifyDumpPayload: a known RDB version and a matching CRC64
/// (not checked under DEBUG SET-SKIP-CHECKSUM-VALIDATION 1).
pub fn verify_dump_payload(p: &[u8], skip_checksum: bool) -> bool {
    if p.len() < 10 {
        return false;
    }
    let footer = &p[p.len() - 10..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return false;
    }
    if skip_checksum {
        return true;
    }
    let crc = CRC64.checksum(&p[..p.len() - 8]);
    crc.to_le_bytes() == footer[2..10]
}

// ---------------------------------------------------------------------------
// Reading

/// A load failure, with the byte offset where it was found.
#[derive(Debug, Clone)]
pub struct LoadError {
    pub message: String,
    pub offset: u64,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at offset {})", self.message, self.offset)
    }
}

pub type LoadResult<T> = Result<T, LoadError>;

/// A buffered byte source that keeps the CRC64 of what was consumed and
/// knows how many bytes remain, so that a declared length larger than
/// the rest of the input is refused before anything is allocated.
pub struct Input<'a> {
    src: Box<dyn Read + 'a>,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    crc: crc::Digest<'static, u64>,
    crc_from: usize,
    /// Bytes consumed before `buf[0]`.
    base: u64,
    /// Total size of the input when known.
    total: Option<u64>,
    eof: bool,
}

const INPUT_BUF: usize = 64 * 1024;

impl<'a> Input<'a> {
    pub fn new(src: impl Read + 'a, total: Option<u64>) -> Input<'a> {
        Input {
            src: Box::new(src),
            buf: vec![0; INPUT_BUF],
            pos: 0,
            end: 0,
            crc: CRC64.digest(),
            crc_from: 0,
            base: 0,
            total,
            eof: false,
        }
    }

    pub fn from_slice(s: &'a [u8]) -> Input<'a> {
        Input::new(s, Some(s.len() as u64))
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub fn err<T>(&self, msg: impl Into<String>) -> LoadResult<T> {
        Err(LoadError {
            message: msg.into(),
            offset: self.offset(),
        })
    }

    fn short_read<T>(&self) -> LoadResult<T> {
        self.err("Short read or OOM loading DB. Unrecoverable error, aborting now.")
    }

    /// Refills so that at least `n` bytes are buffered (n <= buffer size).
    fn fill(&mut self, n: usize) -> LoadResult<()> {
        if self.end - self.pos >= n {
            return Ok(());
        }
        // Fold what was consumed into the checksum, then compact.
        self.crc.update(&self.buf[self.crc_from..self.pos]);
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        self.crc_from = 0;
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        while self.end < n {
            if self.eof {
                return self.short_read();
            }
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return self.err(format!("Read error: {e}")),
            }
        }
        Ok(())
    }

    pub fn byte(&mut self) -> LoadResult<u8> {
        self.fill(1)?;
        self.pos += 1;
        Ok(self.buf[self.pos - 1])
    }

    pub fn array<const N: usize>(&mut self) -> LoadResult<[u8; N]> {
        self.fill(N)?;
        let a: [u8; N] = self.buf[self.pos..self.pos + N].try_into().unwrap();
        self.pos += N;
        Ok(a)
    }

    /// Checks that `n` more bytes can exist before allocating for them.
    fn check_remaining(&self, n: u64) -> LoadResult<()> {
        if let Some(total) = self.total {
            if n > total.saturating_sub(self.offset()) {
                return self.short_read();
            }
        }
        Ok(())
    }

    pub fn bytes(&mut self, n: usize) -> LoadResult<Vec<u8>> {
        self.check_remaining(n as u64)?;
        if n <= INPUT_BUF {
            self.fill(n)?;
            let v = self.buf[self.pos..self.pos + n].to_vec();
            self.pos += n;
            return Ok(v);
        }
        // Large: take what is buffered, read the rest straight into the
        // result, growing it as data arrives.
        let mut v = Vec::with_capacity(n.min(64 << 20));
        let have = self.end - self.pos;
        v.extend_from_slice(&self.buf[self.pos..self.end]);
        self.pos = self.end;
        let mut chunk = vec![0u8; INPUT_BUF];
        let mut missing = n - have;
        while missing > 0 {
            let want = missing.min(chunk.len());
            match self.src.read(&mut chunk[..want]) {
                Ok(0) => return self.short_read(),
                Ok(k) => {
                    v.extend_from_slice(&chunk[..k]);
                    missing -= k;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return self.err(format!("Read error: {e}")),
            }
        }
        // Fold the buffered prefix, then the bytes read directly.
        self.crc.update(&self.buf[self.crc_from..self.pos]);
        self.crc_from = self.pos;
        self.crc.update(&v[have..]);
        self.base += (n - have) as u64;
        Ok(v)
    }

    /// The CRC64 of everything consumed so far.
    pub fn checksum(&mut self) -> u64 {
        self.crc.update(&self.buf[self.crc_from..self.pos]);
        self.crc_from = self.pos;
        self.crc.clone().finalize()
    }

    /// True when the input has no byte left.
    pub fn at_end(&mut self) -> bool {
        self.fill(1).is_err()
    }

    /// rdbLoadLen: the length and whether it is a special encoding.
    pub fn len_enc(&mut self) -> LoadResult<(u64, bool)> {
        let b = self.byte()?;
        match b >> 6 {
            0 => Ok(((b & 0x3F) as u64, false)),
            1 => Ok(((((b & 0x3F) as u64) << 8) | self.byte()? as u64, false)),
            3 => Ok(((b & 0x3F) as u64, true)),
            _ => match b {
                0x80 => Ok((u32::from_be_bytes(self.array()?) as u64, false)),
                0x81 => Ok((u64::from_be_bytes(self.array()?), false)),
                _ => self.err(format!("Unknown length encoding {b} in rdbLoadLen()")),
            },
        }
    }

    #[allow(clippy::len_without_is_empty)] // reads a length from the input
    pub fn len(&mut self) -> LoadResult<u64> {
        match self.len_enc()? {
            (n, false) => Ok(n),
            _ => self.err("Unexpected encoded length"),
        }
    }

    /// A length that must fit in memory as a count of items.
    fn count(&mut self) -> LoadResult<usize> {
        let n = self.len()?;
        // Every item takes at least one byte in the input.
        self.check_remaining(n)?;
        usize::try_from(n).or_else(|_| self.short_read())
    }

    /// rdbGenericLoadStringObject: raw, integer-encoded or LZF.
    pub fn string(&mut self) -> LoadResult<Vec<u8>> {
        let (n, encoded) = self.len_enc()?;
        if !encoded {
            let n = usize::try_from(n).or_else(|_| self.short_read())?;
            return self.bytes(n);
        }
        let v: i64 = match n {
            0 => self.byte()? as i8 as i64,
            1 => i16::from_le_bytes(self.array()?) as i64,
            2 => i32::from_le_bytes(self.array()?) as i64,
            3 => {
                let clen = self.len()?;
                let len = self.len()?;
                self.check_remaining(clen)?;
                // LZF expands at most ~256 times; refuse absurd claims.
                if len > clen.saturating_mul(300) + 64 || len > (1 << 40) {
                    return self.err("Invalid LZF compressed string");
                }
                let c = self.bytes(clen as usize)?;
                return match lzf::decompress(&c, len as usize) {
                    Some(v) => Ok(v),
                    None => self.err("Invalid LZF compressed string"),
                };
            }
            _ => return self.err(format!("Unknown RDB string encoding type {n}")),
        };
        Ok(itoa::Buffer::new().format(v).as_bytes().to_vec())
    }

    /// A score of the old ZSET type: a length byte then ASCII
    /// (253 = nan, 254 = inf, 255 = -inf).
    fn old_double(&mut self) -> LoadResult<f64> {
        let n = self.byte()?;
        match n {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let b = self.bytes(n as usize)?;
                match std::str::from_utf8(&b)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                {
                    Some(v) => Ok(v),
                    None => self.err("Invalid double value"),
                }
            }
        }
    }

    fn binary_double(&mut self) -> LoadResult<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }
}

/// The limits that decide the in-memory form of loaded collections (the
/// same ones commands use).
#[derive(Clone, Copy, Debug)]
pub struct LoadLimits {
    pub list_fill: Fill,
    pub hash: HashLimits,
    pub set_max_intset: usize,
    pub zset: zset::Limits,
}

impl LoadLimits {
    pub fn from_config(config: &crate::config::Config) -> LoadLimits {
        LoadLimits {
            list_fill: Fill::new(config.list_max_listpack_size()),
            hash: config.hash_limits(),
            set_max_intset: config.set_max_intset_entries().max(0) as usize,
            zset: zset::Limits {
                entries: config.zset_max_listpack_entries().max(0) as usize,
                value: config.zset_max_listpack_value().max(0) as usize,
            },
        }
    }
}

impl Default for LoadLimits {
    fn default() -> Self {
        LoadLimits {
            list_fill: Fill::default(),
            hash: HashLimits::default(),
            set_max_intset: 512,
            zset: zset::Limits {
                entries: 128,
                value: 64,
            },
        }
    }
}

/// Builds collections from loaded elements, refusing duplicates (a
/// corrupt payload) the way Redis's deep sanitization does.
struct Build<'l> {
    limits: &'l LoadLimits,
}

impl Build<'_> {
    fn hash(&self, pairs: impl Iterator<Item = (Vec<u8>, Vec<u8>)>) -> Result<Value, &'static str> {
        let mut h = Hash::new();
        for (f, v) in pairs {
            if !h.set(&f, &v, &self.limits.hash) {
                return Err("Duplicate hash fields detected");
            }
        }
        Ok(Value::Hash(Box::new(h)))
    }

    fn set<'e>(
        &self,
        members: impl Iterator<Item = Elem<'e>>,
        hint: usize,
    ) -> Result<Value, &'static str> {
        let mut s = if hint > self.limits.set_max_intset {
            Set::new_table()
        } else {
            Set::new_intset()
        };
        for m in members {
            let added = match m {
                Elem::Int(v) => s.add_member(Member::Int(v), self.limits.set_max_intset),
                Elem::Str(b) => s.add(b, self.limits.set_max_intset),
            };
            if !added {
                return Err("Duplicate set members detected");
            }
        }
        Ok(Value::Set(Box::new(s)))
    }

    fn zset(&self, entries: Vec<(Vec<u8>, f64)>) -> Result<Value, &'static str> {
        let mut seen = std::collections::HashSet::with_capacity(entries.len());
        let mut out = Vec::with_capacity(entries.len());
        for (m, s) in entries {
            if s.is_nan() {
                return Err("Zset with NAN score detected");
            }
            if !seen.insert(m.clone()) {
                return Err("Duplicate zset fields detected");
            }
            out.push((CompactBytes::from_slice(&m), s));
        }
        Ok(Value::ZSet(Box::new(ZSet::from_entries(
            out,
            self.limits.zset,
        ))))
    }
}

fn elem_score(e: Elem<'_>) -> Option<f64> {
    match e {
        Elem::Int(v) => Some(v as f64),
        Elem::Str(s) => match s {
            b"inf" | b"+inf" => Some(f64::INFINITY),
            b"-inf" => Some(f64::NEG_INFINITY),
            _ => parse_f64(s),
        },
    }
}

/// rdbLoadObject: reads a value of type `t`. `Ok(None)` is an empty
/// collection, which Redis skips when loading a file and refuses in
/// RESTORE.
pub fn read_value(input: &mut Input<'_>, t: u8, limits: &LoadLimits) -> LoadResult<Option<Value>> {
    let b = Build { limits };
    // Redis's rdbReportCorruptRDB texts, e.g. "Ziplist integrity check
    // failed.": Goblin checks every blob deeply, whatever
    // sanitize-dump-payload says (its readers decode every entry).
    let corrupt = |input: &Input<'_>, what: &str| -> LoadResult<Option<Value>> {
        input.err(format!("{what} integrity check failed."))
    };
    let value = match t {
        kind::STRING => Value::Str(CompactBytes::from_vec(input.string()?)),
        kind::LIST => {
            let n = input.count()?;
            let mut elems = Vec::with_capacity(n.min(1 << 20));
            for _ in 0..n {
                elems.push(input.string()?);
            }
            return Ok(list_value(elems, limits));
        }
        kind::LIST_ZIPLIST => {
            let blob = input.string()?;
            let Ok(zl) = Ziplist::parse(&blob) else {
                return corrupt(input, "List ziplist");
            };
            let elems: Vec<Vec<u8>> = zl.iter().map(|e| e.to_vec()).collect();
            return Ok(list_value(elems, limits));
        }
        kind::LIST_QUICKLIST | kind::LIST_QUICKLIST_2 => {
            let nodes = input.count()?;
            let mut elems = Vec::new();
            for _ in 0..nodes {
                let container = if t == kind::LIST_QUICKLIST_2 {
                    input.len()?
                } else {
                    QUICKLIST_PACKED
                };
                let blob = input.string()?;
                if blob.is_empty() {
                    // rdbLoadObject refuses a node of 0 bytes.
                    return input.err("Quicklist node of 0 bytes");
                }
                match container {
                    QUICKLIST_PLAIN => elems.push(blob),
                    QUICKLIST_PACKED if t == kind::LIST_QUICKLIST => {
                        let Ok(zl) = Ziplist::parse(&blob) else {
                            return corrupt(input, "Ziplist");
                        };
                        elems.extend(zl.iter().map(|e| e.to_vec()));
                    }
                    QUICKLIST_PACKED => {
                        let Ok(lp) = Listpack::parse(&blob) else {
                            return corrupt(input, "Listpack");
                        };
                        elems.extend(lp.iter().map(|e| e.to_vec()));
                    }
                    _ => {
                        return input.err(format!(
                            "Quicklist integrity check failed: unknown container {container}"
                        ))
                    }
                }
            }
            return Ok(list_value(elems, limits));
        }
        kind::SET => {
            let n = input.count()?;
            let mut members = Vec::with_capacity(n.min(1 << 20));
            for _ in 0..n {
                members.push(input.string()?);
            }
            b.set(members.iter().map(|m| Elem::Str(m)), n)
                .or_else(|e| input.err(e))?
        }
        kind::SET_INTSET => {
            let blob = input.string()?;
            let Ok(ints) = packed::intset_read(&blob) else {
                return corrupt(input, "Intset");
            };
            let n = ints.len();
            b.set(ints.into_iter().map(Elem::Int), n)
                .or_else(|e| input.err(e))?
        }
        kind::ZSET | kind::ZSET_2 => {
            let n = input.count()?;
            let mut entries = Vec::with_capacity(n.min(1 << 20));
            for _ in 0..n {
                let m = input.string()?;
                let s = if t == kind::ZSET_2 {
                    input.binary_double()?
                } else {
                    input.old_double()?
                };
                entries.push((m, s));
            }
            b.zset(entries).or_else(|e| input.err(e))?
        }
        kind::ZSET_ZIPLIST | kind::ZSET_LISTPACK => {
            let blob = input.string()?;
            let what = if t == kind::ZSET_ZIPLIST {
                "Zset ziplist"
            } else {
                "Zset listpack"
            };
            let elems: Vec<Elem<'_>> = if t == kind::ZSET_ZIPLIST {
                match Ziplist::parse(&blob) {
                    Ok(zl) => zl.iter().collect(),
                    Err(Corrupt) => return corrupt(input, what),
                }
            } else {
                match Listpack::parse(&blob) {
                    Ok(lp) => lp.iter().collect(),
                    Err(Corrupt) => return corrupt(input, what),
                }
            };
            if elems.len() % 2 != 0 {
                return corrupt(input, what);
            }
            let mut entries = Vec::with_capacity(elems.len() / 2);
            for pair in elems.chunks(2) {
                let Some(score) = elem_score(pair[1]) else {
                    return corrupt(input, what);
                };
                entries.push((pair[0].to_vec(), score));
            }
            // Duplicates inside the blob fail its deep check.
            match b.zset(entries) {
                Ok(v) => v,
                Err(_) => return corrupt(input, what),
            }
        }
        kind::HASH => {
            let n = input.count()?;
            let mut pairs = Vec::with_capacity(n.min(1 << 20));
            for _ in 0..n {
                let f = input.string()?;
                let v = input.string()?;
                pairs.push((f, v));
            }
            b.hash(pairs.into_iter()).or_else(|e| input.err(e))?
        }
        kind::HASH_METADATA | kind::HASH_LISTPACK_EX => {
            let min = u64::from_le_bytes(input.array()?);
            let mut entries: Vec<(Vec<u8>, Vec<u8>, u64)> = Vec::new();
            if t == kind::HASH_METADATA {
                let n = input.count()?;
                for _ in 0..n {
                    let ttl = input.len()?;
                    let f = input.string()?;
                    let v = input.string()?;
                    let at = if ttl == 0 {
                        0
                    } else {
                        min.saturating_add(ttl - 1)
                    };
                    entries.push((f, v, at));
                }
            } else {
                // A listpack of field, value, deadline (0 = none) triplets.
                let blob = input.string()?;
                let Ok(lp) = Listpack::parse(&blob) else {
                    return corrupt(input, "Hash listpack");
                };
                let elems: Vec<Elem<'_>> = lp.iter().collect();
                if elems.len() % 3 != 0 {
                    return corrupt(input, "Hash listpack");
                }
                for t in elems.chunks(3) {
                    let at = match t[2] {
                        Elem::Int(v) if v >= 0 => v as u64,
                        _ => return corrupt(input, "Hash listpack"),
                    };
                    entries.push((t[0].to_vec(), t[1].to_vec(), at));
                }
            }
            let mut h = Hash::new();
            for (f, v, _) in &entries {
                if !h.set(f, v, &limits.hash) {
                    return input.err("Duplicate hash fields detected");
                }
            }
            if entries.iter().any(|e| e.2 != 0) {
                h.enable_field_ttls();
                for (f, _, at) in &entries {
                    if *at != 0 {
                        // Deadlines already past stay, to be reaped on
                        // access, as after any load.
                        h.set_field_expiry(f, *at, crate::keyspace::TtlCondition::Always, 0);
                    }
                }
            }
            Value::Hash(Box::new(h))
        }
        kind::HASH_ZIPMAP => {
            let blob = input.string()?;
            let Ok(pairs) = packed::zipmap_read(&blob) else {
                return corrupt(input, "Zipmap");
            };
            if pairs.is_empty() {
                return corrupt(input, "Zipmap");
            }
            match b.hash(pairs.into_iter().map(|(f, v)| (f.to_vec(), v.to_vec()))) {
                Ok(v) => v,
                Err(_) => return corrupt(input, "Zipmap"),
            }
        }
        kind::HASH_ZIPLIST | kind::HASH_LISTPACK => {
            let blob = input.string()?;
            let what = if t == kind::HASH_ZIPLIST {
                "Hash ziplist"
            } else {
                "Hash listpack"
            };
            let elems: Vec<Vec<u8>> = if t == kind::HASH_ZIPLIST {
                match Ziplist::parse(&blob) {
                    Ok(zl) => zl.iter().map(|e| e.to_vec()).collect(),
                    Err(Corrupt) => return corrupt(input, what),
                }
            } else {
                match Listpack::parse(&blob) {
                    Ok(lp) => lp.iter().map(|e| e.to_vec()).collect(),
                    Err(Corrupt) => return corrupt(input, what),
                }
            };
            if elems.len() % 2 != 0 {
                return corrupt(input, what);
            }
            let mut it = elems.into_iter();
            let pairs = std::iter::from_fn(|| Some((it.next()?, it.next()?)));
            // Duplicates inside the blob fail its deep check.
            match b.hash(pairs) {
                Ok(v) => v,
                Err(_) => return corrupt(input, what),
            }
        }
        kind::STREAM_LISTPACKS | kind::STREAM_LISTPACKS_2 => {
            Value::Stream(Box::new(read_stream(input, t == kind::STREAM_LISTPACKS_2)?))
        }
        kind::MODULE | kind::MODULE_2 => {
            return input.err("The RDB file contains module data I can't load: no matching module");
        }
        _ => return input.err(format!("Unknown RDB encoding type {t}")),
    };
    Ok(match &value {
        Value::Hash(h) if h.is_empty() => None,
        Value::Set(s) if s.is_empty() => None,
        Value::ZSet(z) if z.is_empty() => None,
        _ => Some(value),
    })
}

/// Reads a stream of type STREAM_LISTPACKS (Redis 5 to 6.2) or
/// STREAM_LISTPACKS_2 (7.0), checking what rdbLoadObject checks with deep
/// sanitization, which Goblin always applies. The older type lacks the
/// first and deleted IDs and the counters: they are derived as Redis
/// derives them.
fn read_stream(input: &mut Input<'_>, v2: bool) -> LoadResult<Stream> {
    let mut s = Stream::new();
    let nodes = input.count()?;
    for _ in 0..nodes {
        let key = input.string()?;
        let Ok(key) = <[u8; 16]>::try_from(key.as_slice()) else {
            return input.err("Stream node key entry is not the size of a stream ID");
        };
        let lp = input.string()?;
        if !stream::validate_node(&lp) {
            return input.err("Stream listpack integrity check failed.");
        }
        if !s.entries.insert_node(StreamId::from_be_bytes(&key), lp) {
            return input.err("Listpack re-added with existing key");
        }
    }
    let e = &mut s.entries;
    e.length = input.len()?;
    e.last_id = StreamId::new(input.len()?, input.len()?);
    if v2 {
        e.first_id = StreamId::new(input.len()?, input.len()?);
        e.max_deleted_entry_id = StreamId::new(input.len()?, input.len()?);
        e.entries_added = input.len()?;
    } else {
        e.entries_added = e.length;
        e.first_id = e.edge_id(true, true).unwrap_or(StreamId::MAX);
    }
    if e.length > 0 && e.node_count() == 0 {
        return input.err("Stream length inconsistent with rax entries");
    }
    let groups = input.count()?;
    for _ in 0..groups {
        let name = input.string()?;
        let last_id = StreamId::new(input.len()?, input.len()?);
        let entries_read = if v2 {
            Some(input.len()? as i64).filter(|v| *v >= 0)
        } else {
            s.entries.estimate_distance(last_id)
        };
        if s.groups.contains_key(name.as_slice()) {
            return input.err(format!(
                "Duplicated consumer group name {}",
                String::from_utf8_lossy(&name)
            ));
        }
        let mut g = ConsumerGroup::new(last_id, entries_read);
        // The group's PEL first, owners unknown until the consumers come.
        let mut owners: std::collections::BTreeMap<StreamId, Option<CompactBytes>> =
            std::collections::BTreeMap::new();
        let mut times: Vec<(StreamId, i64, u64)> = Vec::new();
        let pel = input.count()?;
        for _ in 0..pel {
            let id = StreamId::from_be_bytes(&input.array()?);
            let time = i64::from_le_bytes(input.array()?);
            let count = input.len()?;
            if owners.insert(id, None).is_some() {
                return input.err("Duplicated global PEL entry loading stream consumer group");
            }
            times.push((id, time, count));
        }
        let consumers = input.count()?;
        for _ in 0..consumers {
            let cname = input.string()?;
            if !g.create_consumer(&cname, 0) {
                return input.err("Duplicate stream consumer detected.");
            }
            let seen = i64::from_le_bytes(input.array()?);
            let owned = input.count()?;
            let mut ids = std::collections::BTreeSet::new();
            for _ in 0..owned {
                let id = StreamId::from_be_bytes(&input.array()?);
                match owners.get_mut(&id) {
                    None => return input.err("Consumer entry not found in group global PEL"),
                    Some(Some(_)) => {
                        return input
                            .err("Stream consumer PEL entry already has a consumer assigned")
                    }
                    Some(owner) => *owner = Some(CompactBytes::from_slice(&cname)),
                }
                ids.insert(id);
            }
            let c = g.consumers.get_mut(cname.as_slice()).expect("just created");
            c.seen_time = seen;
            c.pel = ids;
        }
        for (id, delivery_time, delivery_count) in times {
            let Some(Some(consumer)) = owners.remove(&id) else {
                return input.err("Stream CG PEL entry without consumer");
            };
            g.pel.insert(
                id,
                Nack {
                    delivery_time,
                    delivery_count,
                    consumer,
                },
            );
        }
        s.groups.insert(CompactBytes::from_vec(name), g);
    }
    Ok(s)
}

fn list_value(elems: Vec<Vec<u8>>, limits: &LoadLimits) -> Option<Value> {
    if elems.is_empty() {
        return None;
    }
    let list = List::from_elements(elems.iter().map(|e| e.as_slice()), limits.list_fill);
    Some(Value::List(Box::new(list)))
}

/// RESTORE's reading of a payload already verified by
/// `verify_dump_payload`: the value, or why it is refused (RESTORE answers
/// "Bad data format"; `None` for a value without elements, which Redis
/// refuses without logging).
pub fn read_dump_payload(p: &[u8], limits: &LoadLimits) -> Result<Value, Option<LoadError>> {
    let body = &p[..p.len() - 10];
    let mut input = Input::from_slice(body);
    let t = input.byte().map_err(Some)?;
    if !is_value_kind(t) {
        return Err(Some(LoadError {
            message: format!("Unknown RDB encoding type {t}"),
            offset: 0,
        }));
    }
    input.total = Some(body.len() as u64);
    match read_value(&mut input, t, limits) {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(None),
        Err(e) => Err(Some(e)),
    }
}

fn is_value_kind(t: u8) -> bool {
    (t <= kind::STREAM_LISTPACKS_2 && t != 8)
        || t == kind::HASH_METADATA
        || t == kind::HASH_LISTPACK_EX
}

/// One record of a snapshot file.
pub enum Record {
    Aux(Vec<u8>, Vec<u8>),
    SelectDb(u64),
    ResizeDb(u64, u64),
    Key {
        key: Vec<u8>,
        /// None for an empty collection (skipped, as Redis does).
        value: Option<Value>,
        expire_ms: Option<i64>,
        idle: Option<u64>,
        freq: Option<u8>,
    },
    /// A function library (FUNCTION2): its code.
    Function(Vec<u8>),
    Eof,
}

/// Reads a snapshot record by record.
pub struct FileReader<'a> {
    pub input: Input<'a>,
    pub version: u16,
    limits: LoadLimits,
    /// The stored checksum is read but not compared (rdbchecksum no,
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION 1), as Redis's rdbLoadRio.
    pub skip_checksum: bool,
}

impl<'a> FileReader<'a> {
    /// Reads and checks the header ("REDIS" and a 4-digit version).
    pub fn new(mut input: Input<'a>, limits: LoadLimits) -> LoadResult<FileReader<'a>> {
        let magic: [u8; 9] = input.array()?;
        if &magic[..5] != b"REDIS" {
            return input.err("Wrong signature trying to load DB from file");
        }
        let version = std::str::from_utf8(&magic[5..])
            .ok()
            .and_then(|s| s.parse::<u16>().ok());
        let version = match version {
            Some(v) if (1..=RDB_VERSION).contains(&v) => v,
            _ => {
                return input.err(format!(
                    "Can't handle RDB format version {}",
                    String::from_utf8_lossy(&magic[5..])
                ))
            }
        };
        Ok(FileReader {
            input,
            version,
            skip_checksum: false,
            limits,
        })
    }

    #[allow(clippy::should_implement_trait)] // fallible, unlike Iterator::next
    pub fn next(&mut self) -> LoadResult<Record> {
        let input = &mut self.input;
        let mut expire_ms = None;
        let mut idle = None;
        let mut freq = None;
        loop {
            let t = input.byte()?;
            match t {
                opcode::EXPIRETIME => {
                    expire_ms = Some(i32::from_le_bytes(input.array()?) as i64 * 1000);
                }
                opcode::EXPIRETIME_MS => {
                    expire_ms = Some(i64::from_le_bytes(input.array()?));
                }
                opcode::FREQ => freq = Some(input.byte()?),
                opcode::IDLE => idle = Some(input.len()?),
                opcode::EOF => return Ok(Record::Eof),
                opcode::SELECTDB => return Ok(Record::SelectDb(input.len()?)),
                opcode::RESIZEDB => {
                    let a = input.len()?;
                    let b = input.len()?;
                    return Ok(Record::ResizeDb(a, b));
                }
                opcode::AUX => {
                    let k = input.string()?;
                    let v = input.string()?;
                    return Ok(Record::Aux(k, v));
                }
                opcode::MODULE_AUX => {
                    return input.err(
                        "The RDB file contains AUX module data I can't load: no matching module",
                    );
                }
                opcode::FUNCTION2 => return Ok(Record::Function(input.string()?)),
                opcode::FUNCTION => {
                    return input.err("Pre-release function format not supported.");
                }
                t if is_value_kind(t) => {
                    let key = input.string()?;
                    let value = read_value(input, t, &self.limits)?;
                    return Ok(Record::Key {
                        key,
                        value,
                        expire_ms,
                        idle,
                        freq,
                    });
                }
                t => return input.err(format!("Unknown RDB encoding type {t}")),
            }
        }
    }

    /// After EOF: the 8-byte checksum (version 5 and later); 0 means the
    /// writer did not compute one.
    pub fn verify_checksum(&mut self) -> LoadResult<()> {
        if self.version < 5 {
            return Ok(());
        }
        let computed = self.input.checksum();
        let stored = u64::from_le_bytes(self.input.array()?);
        if stored != 0 && stored != computed && !self.skip_checksum {
            return self.input.err(format!(
                "Wrong RDB checksum expected: ({stored:x}) got ({computed:x}). Aborting now. RDB CRC error"
            ));
        }
        Ok(())
    }
}

/// The file header: magic and version.
pub fn put_header(out: &mut Vec<u8>) {
    out.extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
}

/// SELECTDB and RESIZEDB before a database's keys.
pub fn put_select(out: &mut Vec<u8>, db: usize, keys: u64, expires: u64) {
    out.push(opcode::SELECTDB);
    put_len(out, db as u64);
    out.push(opcode::RESIZEDB);
    put_len(out, keys);
    put_len(out, expires);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::zset::AddFlags;

    fn round_trip(v: &Value) -> Value {
        let opts = SaveOptions::default();
        let p = dump_payload(v, &opts);
        assert!(verify_dump_payload(&p, false));
        let body = &p[..p.len() - 10];
        let mut input = Input::from_slice(body);
        let t = input.byte().unwrap();
        read_value(&mut input, t, &LoadLimits::default())
            .unwrap_or_else(|e| panic!("{e}"))
            .expect("not empty")
    }

    #[test]
    fn lengths() {
        for n in [
            0u64,
            63,
            64,
            16383,
            16384,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
        ] {
            let mut out = Vec::new();
            put_len(&mut out, n);
            let mut input = Input::from_slice(&out);
            assert_eq!(input.len().unwrap(), n);
        }
    }

    #[test]
    fn strings_take_redis_encodings() {
        let opts = SaveOptions::default();
        let mut out = Vec::new();
        put_string(&mut out, b"-5", &opts);
        assert_eq!(out, [0xC0, 0xFB]);
        out.clear();
        put_string(&mut out, b"1000", &opts);
        assert_eq!(out, [0xC1, 0xE8, 0x03]);
        out.clear();
        put_string(&mut out, b"007", &opts);
        assert_eq!(out, [3, b'0', b'0', b'7']);
        out.clear();
        put_string(&mut out, &[b'a'; 100], &opts);
        assert_eq!(out[0], 0xC3);
        let mut input = Input::from_slice(&out);
        assert_eq!(input.string().unwrap(), vec![b'a'; 100]);
    }

    #[test]
    fn dump_of_a_string_matches_redis() {
        // redis-cli DUMP of "bar" on Redis 7.0.
        let p = dump_payload(&Value::str(b"bar"), &SaveOptions::default());
        assert_eq!(p, b"\x00\x03bar\n\x00\xe6\xbeI`\xeef\xfd\x17".to_vec());
    }

    #[test]
    fn values_round_trip() {
        let limits = LoadLimits::default();
        let mut small = Hash::new();
        small.set(b"f", b"v", &limits.hash);
        small.set(b"n", b"12", &limits.hash);
        let mut big = Hash::new();
        for i in 0..1000 {
            big.set(format!("field{i}").as_bytes(), b"value", &limits.hash);
        }
        for h in [small, big] {
            let compact = h.is_compact();
            let Value::Hash(back) = round_trip(&Value::Hash(Box::new(h))) else {
                panic!()
            };
            assert_eq!(back.is_compact(), compact);
        }
        let mut ints = Set::new_intset();
        for i in [5i64, -3, 100000, 1 << 40] {
            ints.add(i.to_string().as_bytes(), 512);
        }
        let Value::Set(back) = round_trip(&Value::Set(Box::new(ints))) else {
            panic!()
        };
        assert!(back.is_intset());
        assert_eq!(back.len(), 4);
        let mut strs = Set::new_table();
        strs.add(b"a", 512);
        strs.add(b"b", 512);
        let Value::Set(back) = round_trip(&Value::Set(Box::new(strs))) else {
            panic!()
        };
        assert!(back.contains(b"a") && back.contains(b"b") && !back.is_intset());
        for n in [3usize, 500] {
            let mut z = ZSet::for_first_member(1, limits.zset);
            for i in 0..n {
                z.add(
                    format!("m{i}").as_bytes(),
                    i as f64 * 1.5 - 7.0,
                    AddFlags::default(),
                    limits.zset,
                )
                .unwrap();
            }
            z.add(b"inf", f64::INFINITY, AddFlags::default(), limits.zset)
                .unwrap();
            let packed = z.is_packed();
            let Value::ZSet(back) = round_trip(&Value::ZSet(Box::new(z))) else {
                panic!()
            };
            assert_eq!(back.is_packed(), packed);
            assert_eq!(back.len(), n + 1);
            assert_eq!(back.score(b"m2"), Some(-4.0));
            assert_eq!(back.score(b"inf"), Some(f64::INFINITY));
        }
    }

    #[test]
    fn hash_field_ttls_round_trip() {
        let limits = LoadLimits::default();
        for n in [3usize, 700] {
            let mut h = Hash::new();
            for i in 0..n {
                h.set(format!("f{i}").as_bytes(), b"v", &limits.hash);
            }
            h.enable_field_ttls();
            h.set_field_expiry(
                b"f1",
                5_000_000_000_000,
                crate::keyspace::TtlCondition::Always,
                0,
            );
            h.set_field_expiry(
                b"f2",
                4_000_000_000_000,
                crate::keyspace::TtlCondition::Always,
                0,
            );
            let Value::Hash(back) = round_trip(&Value::Hash(Box::new(h))) else {
                panic!()
            };
            assert_eq!(back.len(), n);
            assert_eq!(back.field_expiry(b"f1"), Some(Some(5_000_000_000_000)));
            assert_eq!(back.field_expiry(b"f2"), Some(Some(4_000_000_000_000)));
            assert_eq!(back.field_expiry(b"f0"), Some(None));
        }
    }

    /// A stream with several nodes, tombstones, a group with pending
    /// entries and consumers.
    fn sample_stream() -> Stream {
        use crate::keyspace::stream::{NewId, NodeLimits};
        let mut s = Stream::new();
        let limits = NodeLimits {
            max_bytes: 4096,
            max_entries: 4,
        };
        for i in 1..=13u64 {
            let v = (i * 1000).to_string();
            let fields: Vec<&[u8]> = if i % 3 == 0 {
                vec![b"other", v.as_bytes(), b"x", b"yy"]
            } else {
                vec![b"f", v.as_bytes()]
            };
            s.entries
                .append(&fields, NewId::Explicit(StreamId::new(i, i)), 0, limits)
                .unwrap();
        }
        s.entries.delete(StreamId::new(5, 5));
        s.entries.max_deleted_entry_id = StreamId::new(5, 5);
        let mut g = ConsumerGroup::new(StreamId::new(8, 8), Some(7));
        g.create_consumer(b"alice", 1000);
        g.create_consumer(b"bob", 2000);
        g.deliver(StreamId::new(1, 1), b"alice", 3000);
        g.deliver(StreamId::new(2, 2), b"bob", 4000);
        s.groups.insert(CompactBytes::from_slice(b"g"), g);
        s
    }

    /// Everything a command may do to a stream, to show a loaded one
    /// holds together.
    fn exercise(s: &mut Stream) {
        use crate::keyspace::stream::{NewId, NodeLimits, Trim, TrimStrategy};
        let fwd: Vec<StreamId> = s.entries.iter().map(|e| e.id).collect();
        let fields: usize = s.entries.iter().map(|e| e.fields().count()).sum();
        let back = s.entries.range(None, None, true).count();
        assert_eq!(fwd.len(), back);
        let _ = (fields, s.entries.radix_tree_nodes(), s.heap_size());
        let _ = s.entries.last_valid_id();
        let _ = s.entries.estimate_distance(StreamId::new(3, 3));
        if let Some(id) = fwd.first() {
            s.entries.delete(*id);
        }
        let limits = NodeLimits::default();
        let _ = s
            .entries
            .append(&[b"f", b"v"], NewId::Auto, 1 << 40, limits);
        s.entries.trim(Trim {
            strategy: TrimStrategy::MaxLen(2),
            approx: false,
            limit: 0,
        });
        s.entries.trim(Trim {
            strategy: TrimStrategy::MinId(StreamId::new(u64::MAX, 0)),
            approx: true,
            limit: 0,
        });
        for g in s.groups.values_mut() {
            let ids: Vec<StreamId> = g.pel.keys().copied().collect();
            for id in ids {
                g.create_consumer(b"carol", 0);
                g.claim(id, b"carol");
                g.ack(id);
            }
            g.delete_consumer(b"alice");
        }
    }

    #[test]
    fn streams_round_trip() {
        let s = sample_stream();
        let v = round_trip(&Value::Stream(Box::new(s.clone())));
        let Value::Stream(mut back) = v else {
            panic!("not a stream")
        };
        let ids = |s: &Stream| s.entries.iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(ids(&back), ids(&s));
        assert_eq!(back.entries.node_count(), s.entries.node_count());
        assert_eq!(back.entries.max_deleted_entry_id, StreamId::new(5, 5));
        let g = &back.groups[b"g".as_slice()];
        assert_eq!(g.entries_read, Some(7));
        assert_eq!(g.pel[&StreamId::new(2, 2)].consumer.as_slice(), b"bob");
        assert_eq!(g.consumers[b"alice".as_slice()].seen_time, 1000);
        exercise(&mut back);
    }

    #[test]
    fn corrupt_stream_payloads_load_whole_or_not_at_all() {
        let p = dump_payload(
            &Value::Stream(Box::new(sample_stream())),
            &SaveOptions::default(),
        );
        let mut rng = fastrand::Rng::with_seed(7);
        let mut loaded = 0;
        for _ in 0..3000 {
            let mut bad = p.clone();
            for _ in 0..rng.usize(1..4) {
                let at = rng.usize(1..bad.len() - 10);
                bad[at] = match rng.u8(0..3) {
                    0 => bad[at] ^ (1 << rng.u8(0..8)),
                    1 => rng.u8(..),
                    _ => bad[at].wrapping_add(1),
                };
            }
            if let Ok(Value::Stream(mut s)) = read_dump_payload(&bad, &LoadLimits::default()) {
                loaded += 1;
                exercise(&mut s);
            }
        }
        // Some changes (a value's bytes) leave a sound stream.
        assert!(loaded > 0);
    }

    /// Payloads of the Redis suite's corrupt-dump unit (integration/
    /// corrupt-dump.tcl): each is refused, with the reason Redis logs.
    #[test]
    fn corrupt_dump_unit_payloads_are_refused_with_redis_reasons() {
        let cases: [(&[u8], &str); 8] = [
            // hash with valid zip list header, invalid entry len
            (b"\x0D\x1B\x1B\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x02\x61\x00\x04\x02\x62\x00\x04\x14\x63\x00\x04\x02\x64\x00\xFF\x09\x00\xD9\x10\x54\x92\x15\xF5\x5F\x52", "Hash ziplist integrity check failed."),
            // valid zipped hash header, dup records
            (b"\x0D\x1B\x1B\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x02\x61\x00\x04\x02\x62\x00\x04\x02\x61\x00\x04\x02\x64\x00\xFF\x09\x00\xA1\x98\x36\x78\xCC\x8E\x93\x2E", "Hash ziplist integrity check failed."),
            // quicklist big ziplist prev len
            (b"\x0E\x01\x13\x13\x00\x00\x00\x0E\x00\x00\x00\x02\x00\x00\x02\x61\x00\x0E\x02\x62\x00\xFF\x09\x00\x49\x97\x30\xB2\x0D\xA1\xED\xAA", "Ziplist integrity check failed."),
            // quicklist small ziplist prev len
            (b"\x0E\x01\x13\x13\x00\x00\x00\x0E\x00\x00\x00\x02\x00\x00\x02\x61\x00\x02\x02\x62\x00\xFF\x09\x00\xC7\x71\x03\x97\x07\x75\xB0\x63", "Ziplist integrity check failed."),
            // quicklist ziplist wrong count
            (b"\x0E\x01\x13\x13\x00\x00\x00\x0E\x00\x00\x00\x03\x00\x00\x02\x61\x00\x04\x02\x62\x00\xFF\x09\x00\x4D\xE2\x0A\x2F\x08\x25\xDF\x91", "Ziplist integrity check failed."),
            // hash empty zipmap
            (b"\x09\x02\x00\xFF\x09\x00\xC0\xF1\xB8\x67\x4C\x16\xAC\xE3", "Zipmap integrity check failed."),
            // zipmap - 5 bytes length encoding for a small field
            (b"\x09\x11\x01\xfe\x04\x00\x00\x00\x01\x00\xff\x00\x04\x00\x76\x61\x6c\x31\xff\x09\x00\xf9\xd5\xa4\xf7\x7d\x00\x3f\x1b", "Zipmap integrity check failed."),
            // quicklist encoded_len is 0
            (b"\x12\x01\x01\x00\x0a\x00\x8f\xc6\xc0\x57\x1c\x0a\xb3\x3c", "Quicklist node of 0 bytes"),
        ];
        for (payload, reason) in cases {
            match read_dump_payload(payload, &LoadLimits::default()) {
                Err(Some(e)) => assert_eq!(e.message, reason, "{payload:?}"),
                other => panic!(
                    "{payload:?}: {:?}",
                    other.map(|_| ()).map_err(|e| e.map(|e| e.message))
                ),
            }
        }
        // A quicklist whose only ziplist is empty holds nothing: refused
        // as an empty key, without a reason to log.
        let empty = b"\x0E\x01\x0B\x0B\x00\x00\x00\x0A\x00\x00\x00\x00\x00\xFF\x09\x00\xC2\x69\x37\x83\x3C\x7F\xFE\x6F";
        assert!(matches!(
            read_dump_payload(empty, &LoadLimits::default()),
            Err(None)
        ));
    }

    /// RESTORE of randomly corrupted DUMP payloads of every type (as the
    /// suite's corrupt-dump-fuzzer sends them, checksums not checked):
    /// decoding refuses or yields a value, and never panics.
    #[test]
    fn randomly_corrupted_payloads_of_every_type_never_panic() {
        let limits = LoadLimits::default();
        let mut values: Vec<Value> = vec![
            Value::str(b"hello world"),
            Value::str(b"12345"),
            Value::Stream(Box::new(sample_stream())),
        ];
        for n in [3usize, 700] {
            let mut h = Hash::new();
            let mut set = Set::new_intset();
            let mut strs = Set::new_table();
            let mut z = Vec::new();
            let mut list = Vec::new();
            for i in 0..n {
                h.set(
                    format!("f{i}").as_bytes(),
                    format!("v{i}").as_bytes(),
                    &limits.hash,
                );
                set.add(i.to_string().as_bytes(), 512);
                strs.add(format!("m{i}").as_bytes(), 512);
                z.push((
                    CompactBytes::from_slice(format!("z{i}").as_bytes()),
                    i as f64,
                ));
                list.push(format!("e{i}").into_bytes());
            }
            values.push(Value::Hash(Box::new(h)));
            values.push(Value::Set(Box::new(set)));
            values.push(Value::Set(Box::new(strs)));
            values.push(Value::ZSet(Box::new(ZSet::from_entries(z, limits.zset))));
            values.push(list_value(list, &limits).unwrap());
        }
        let mut rng = fastrand::Rng::with_seed(11);
        for v in &values {
            let p = dump_payload(v, &SaveOptions::default());
            for _ in 0..2000 {
                let mut bad = p.clone();
                let count = if rng.u8(0..10) == 0 { 2 } else { 1 };
                for _ in 0..count {
                    let at = rng.usize(..bad.len() - 10);
                    bad[at] = rng.u8(..);
                }
                if let Ok(Value::Stream(mut s)) = read_dump_payload(&bad, &limits) {
                    exercise(&mut s);
                }
            }
        }
    }

    #[test]
    fn corrupt_payloads_are_refused() {
        let p = dump_payload(&Value::str(b"hello world"), &SaveOptions::default());
        let mut bad = p.clone();
        bad[3] ^= 1;
        assert!(!verify_dump_payload(&bad, false));
        // DEBUG SET-SKIP-CHECKSUM-VALIDATION 1 checks the version only.
        assert!(verify_dump_payload(&bad, true));
        let mut later = p.clone();
        let n = later.len();
        later[n - 10] = 11;
        assert!(!verify_dump_payload(&later, true));
        // A huge declared length with no data (Redis's own test case).
        let huge =
            b"\x00\x81\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xF7\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00";
        assert!(read_dump_payload(huge, &LoadLimits::default()).is_err());
    }
}
