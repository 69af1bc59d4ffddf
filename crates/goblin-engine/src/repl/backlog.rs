//! The replication stream and its backlog.
//!
//! Every change the engine makes is appended here, as the same records the
//! append-only file gets, encoded as RESP commands, with a SELECT whenever
//! the database changes (the stream's own, apart from the file's). The
//! stream's offset (INFO's master_repl_offset) is the count of bytes ever
//! appended; byte `o` of the stream is the one that brought it to `o`.
//!
//! What is kept is one buffer shared by everyone who reads it, as Redis
//! 7's replication buffer: the last `repl-backlog-size` bytes (for partial
//! resynchronization), and besides them whatever an attached replica has
//! not been sent yet. Each replica's feeder copies its next bytes out under
//! the lock, so a slow replica costs the bytes it is behind, once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::client::ClientInfo;

/// A reader of the stream: a replica being fed, which the buffer keeps
/// its next bytes for.
/// A reader's next bytes were trimmed from the stream before it read them
/// (it fell further behind than the backlog and its own limit allow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

pub struct Reader {
    /// The offset up to which it has been sent the stream.
    pub sent: AtomicU64,
    /// Its client, woken when the stream grows.
    pub info: Arc<ClientInfo>,
}

pub(crate) struct Inner {
    buf: VecDeque<u8>,
    /// The stream's offset: bytes ever appended.
    end: u64,
    /// The database of the stream's last SELECT (None: the next record
    /// starts with one).
    pub(crate) last_db: Option<usize>,
    /// The backlog exists: records are appended (Redis creates it when a
    /// replica first connects).
    pub(crate) active: bool,
    /// repl-backlog-size.
    size: usize,
    readers: Vec<Arc<Reader>>,
}

pub struct Stream {
    pub(crate) inner: parking_lot::Mutex<Inner>,
    /// Bytes allocated for the buffer (INFO's mem_total_replication_buffers,
    /// part of used_memory), for readers that need no lock.
    allocated: AtomicU64,
    /// `end`, for readers that need no lock.
    end: AtomicU64,
    /// `active`, for writers that need no lock to know whether to feed it.
    feeding: std::sync::atomic::AtomicBool,
}

impl Default for Stream {
    fn default() -> Self {
        Stream {
            inner: parking_lot::Mutex::new(Inner {
                buf: VecDeque::new(),
                end: 0,
                last_db: None,
                active: false,
                size: 1 << 20,
                readers: Vec::new(),
            }),
            end: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
            feeding: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

/// What the backlog holds (INFO replication's repl_backlog_* fields).
#[derive(Clone, Copy, Debug, Default)]
pub struct BacklogInfo {
    pub active: bool,
    pub size: u64,
    /// The offset of its first byte (0 when empty and never filled).
    pub first_byte: u64,
    pub histlen: u64,
    /// Bytes held for replicas beyond the backlog's size.
    pub buffered: u64,
}

impl Stream {
    /// Whether the backlog exists (records are to be appended).
    #[inline]
    pub fn feeding(&self) -> bool {
        self.feeding.load(Ordering::Relaxed)
    }

    /// Bytes allocated for the buffer.
    #[inline]
    pub fn allocated(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// The stream's offset (master_repl_offset).
    #[inline]
    pub fn offset(&self) -> u64 {
        self.end.load(Ordering::Acquire)
    }

    /// Appends RESP-encoded records of `db`... (see `append_records`).
    pub(crate) fn append_raw(inner: &mut Inner, end: &AtomicU64, bytes: &[u8]) {
        inner.buf.extend(bytes);
        inner.end += bytes.len() as u64;
        end.store(inner.end, Ordering::Release);
    }

    /// Appends records, each preceded by a SELECT when its database is not
    /// the stream's current one; wakes the feeders. Nothing when the
    /// backlog does not exist.
    pub fn append(&self, records: &[crate::propagate::Record]) {
        let mut inner = self.inner.lock();
        if !inner.active {
            return;
        }
        let mut out = Vec::with_capacity(64);
        for r in records {
            if inner.last_db != Some(r.db) {
                let db = r.db.to_string();
                crate::propagate::encode_command(&mut out, &[b"SELECT".as_slice(), db.as_bytes()]);
                inner.last_db = Some(r.db);
            }
            crate::propagate::encode_command(&mut out, &r.argv);
        }
        Self::append_raw(&mut inner, &self.end, &out);
        self.after_append(&mut inner);
    }

    /// Appends bytes as they are (a replica passing on its primary's
    /// stream to its own replicas; PING keep-alives).
    pub fn append_bytes(&self, bytes: &[u8]) {
        let mut inner = self.inner.lock();
        if !inner.active {
            return;
        }
        Self::append_raw(&mut inner, &self.end, bytes);
        self.after_append(&mut inner);
    }

    fn after_append(&self, inner: &mut Inner) {
        for r in &inner.readers {
            r.info.wake.notify_one();
        }
        // Trimming costs a look at the readers: done once the buffer is
        // past its size by a margin.
        if inner.buf.len() > inner.size + inner.size / 16 + 4096 {
            Self::trim(inner);
        }
        self.allocated
            .store(inner.buf.capacity() as u64, Ordering::Relaxed);
    }

    /// Drops what neither the backlog's size nor any reader needs, and the
    /// room of a buffer that held much more than it does now.
    fn trim(inner: &mut Inner) {
        let start = inner.end - inner.buf.len() as u64;
        let needed_by_readers = inner
            .readers
            .iter()
            .map(|r| r.sent.load(Ordering::Acquire))
            .min()
            .unwrap_or(inner.end);
        let keep_from = (inner.end.saturating_sub(inner.size as u64)).min(needed_by_readers);
        if keep_from > start {
            inner.buf.drain(..(keep_from - start) as usize);
        }
        if inner.buf.capacity() > 2 * inner.buf.len() + (1 << 20) {
            inner.buf.shrink_to(inner.buf.len() + inner.buf.len() / 4);
        }
    }

    /// Creates the backlog (a replica connected, or the server starts as a
    /// replica); the stream's offset stays.
    pub fn activate(&self, size: usize) {
        let mut inner = self.inner.lock();
        if !inner.active {
            inner.active = true;
            inner.buf = VecDeque::new();
            inner.last_db = None;
            self.feeding.store(true, Ordering::Relaxed);
        }
        inner.size = size.max(1);
    }

    /// Frees the backlog (repl-backlog-ttl passed without replicas).
    pub fn deactivate(&self) {
        let mut inner = self.inner.lock();
        inner.active = false;
        self.feeding.store(false, Ordering::Relaxed);
        inner.buf = VecDeque::new();
        inner.last_db = None;
        self.allocated.store(0, Ordering::Relaxed);
    }

    /// Starts the stream anew at `offset`, with nothing held (a replica
    /// that loaded its primary's snapshot continues its primary's stream
    /// from there).
    pub fn reset(&self, offset: u64) {
        let mut inner = self.inner.lock();
        inner.buf = VecDeque::new();
        inner.end = offset;
        inner.last_db = None;
        self.end.store(offset, Ordering::Release);
        self.allocated.store(0, Ordering::Relaxed);
    }

    /// Forces a SELECT before the next record (a full synchronization
    /// starts at this offset: its replica's stream must start with one).
    pub fn forget_db(&self) {
        self.inner.lock().last_db = None;
    }

    /// The database of the stream's last SELECT (repl-stream-db).
    pub fn stream_db(&self) -> Option<usize> {
        self.inner.lock().last_db
    }

    /// repl-backlog-size changed.
    pub fn resize(&self, size: usize) {
        let mut inner = self.inner.lock();
        if inner.size != size.max(1) {
            inner.size = size.max(1);
            Self::trim(&mut inner);
            self.allocated
                .store(inner.buf.capacity() as u64, Ordering::Relaxed);
        }
    }

    pub fn is_active(&self) -> bool {
        self.inner.lock().active
    }

    pub fn info(&self) -> BacklogInfo {
        let inner = self.inner.lock();
        if !inner.active {
            return BacklogInfo {
                size: inner.size as u64,
                ..Default::default()
            };
        }
        // What is held for replicas counts as history too (Redis 7's
        // backlog grows past its size while a replica holds its part).
        let held = inner.buf.len() as u64;
        BacklogInfo {
            active: true,
            size: inner.size as u64,
            first_byte: inner.end - held + 1,
            histlen: held,
            buffered: held,
        }
    }

    /// Whether the bytes after `offset` are all still held (a partial
    /// resynchronization from there can be served).
    pub fn holds_from(&self, offset: u64) -> bool {
        let inner = self.inner.lock();
        if !inner.active || offset > inner.end {
            return false;
        }
        offset >= inner.end - inner.buf.len() as u64
    }

    /// Registers a reader that starts after `offset`; false when those
    /// bytes are gone.
    pub fn attach(&self, reader: Arc<Reader>, offset: u64) -> bool {
        let mut inner = self.inner.lock();
        let start = inner.end - inner.buf.len() as u64;
        if !inner.active || offset < start || offset > inner.end {
            return false;
        }
        reader.sent.store(offset, Ordering::Release);
        inner.readers.push(reader);
        true
    }

    pub fn detach(&self, reader: &Arc<Reader>) {
        let mut inner = self.inner.lock();
        inner.readers.retain(|r| !Arc::ptr_eq(r, reader));
        // What only it needed goes now.
        Self::trim(&mut inner);
        self.allocated
            .store(inner.buf.capacity() as u64, Ordering::Relaxed);
    }

    /// Copies the reader's next bytes (at most `max`) into `out`; returns
    /// how many. Err when the bytes it needs are gone.
    pub fn read(&self, reader: &Reader, out: &mut Vec<u8>, max: usize) -> Result<usize, Gone> {
        let inner = self.inner.lock();
        let sent = reader.sent.load(Ordering::Acquire);
        let start = inner.end - inner.buf.len() as u64;
        if sent < start {
            return Err(Gone);
        }
        let from = (sent - start) as usize;
        let n = (inner.buf.len() - from).min(max);
        if n == 0 {
            return Ok(0);
        }
        let (a, b) = inner.buf.as_slices();
        if from < a.len() {
            let take = n.min(a.len() - from);
            out.extend_from_slice(&a[from..from + take]);
            out.extend_from_slice(&b[..n - take]);
        } else {
            let f = from - a.len();
            out.extend_from_slice(&b[f..f + n]);
        }
        reader.sent.store(sent + n as u64, Ordering::Release);
        Ok(n)
    }

    /// How far `reader` is behind the stream, in bytes.
    pub fn lag_of(&self, reader: &Reader) -> u64 {
        self.offset()
            .saturating_sub(reader.sent.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propagate::Record;

    fn reader() -> Arc<Reader> {
        Arc::new(Reader {
            sent: AtomicU64::new(0),
            info: crate::client::ClientRegistry::default()
                .register(&crate::client::ConnInfo::embedded(), 0),
        })
    }

    #[test]
    fn nothing_is_appended_before_the_backlog_exists() {
        let s = Stream::default();
        s.append(&[Record {
            db: 0,
            argv: vec![b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()],
        }]);
        assert_eq!(s.offset(), 0);
        assert!(!s.info().active);
    }

    #[test]
    fn records_get_a_select_when_the_database_changes() {
        let s = Stream::default();
        s.activate(1024);
        let r = reader();
        assert!(s.attach(r.clone(), 0));
        let rec = |db| Record {
            db,
            argv: vec![b"DEL".to_vec(), b"k".to_vec()],
        };
        s.append(&[rec(0), rec(0), rec(2)]);
        let mut out = Vec::new();
        s.read(&r, &mut out, usize::MAX).unwrap();
        assert_eq!(
            out,
            b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n"
        );
        assert_eq!(s.offset(), out.len() as u64);
        assert_eq!(r.sent.load(Ordering::Relaxed), s.offset());
    }

    #[test]
    fn the_backlog_keeps_its_size_and_what_readers_still_need() {
        let s = Stream::default();
        s.activate(100);
        let slow = reader();
        assert!(s.attach(slow.clone(), 0));
        for _ in 0..100 {
            s.append_bytes(&[b'x'; 50]);
        }
        // The slow reader was sent nothing: everything is kept for it.
        assert!(s.holds_from(s.offset() - 100));
        let mut out = Vec::new();
        assert_eq!(s.read(&slow, &mut out, 1000).unwrap(), 1000);
        s.detach(&slow);
        s.append_bytes(&[b'y'; 5000]);
        // Without readers only the last `size` bytes stay.
        assert!(s.holds_from(s.offset() - 100));
        assert!(!s.holds_from(s.offset() - 5000));
        assert!(s.info().histlen <= 100);
        // A reader past what is kept cannot attach.
        assert!(!s.attach(reader(), 10));
    }

    #[test]
    fn reads_span_the_ring_halves() {
        let s = Stream::default();
        s.activate(8);
        let r = reader();
        assert!(s.attach(r.clone(), 0));
        let mut all = Vec::new();
        let mut got = Vec::new();
        for i in 0..200u8 {
            s.append_bytes(&[i, i]);
            all.extend_from_slice(&[i, i]);
            if i % 7 == 0 {
                s.read(&r, &mut got, 5).unwrap();
            }
        }
        while s.read(&r, &mut got, 3).unwrap() > 0 {}
        assert_eq!(got, all);
    }
}
