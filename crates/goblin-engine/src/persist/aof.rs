//! The append-only file, as Redis 7.0 keeps it: a directory
//! (`appenddirname`) holding a manifest, one base file (an RDB snapshot or
//! commands) and incremental files of commands in RESP.
//!
//! **Logging.** After a command that changed data, `Engine::call` hands
//! its records (the call itself, or the replacement commands it chose, see
//! `Ctx::log_as`) to [`Aof::append`] while the command still holds its
//! shard locks: two writes to one key are logged in the order they ran.
//! The records go into an in-memory buffer, prefixed with SELECT when the
//! database differs from the last one logged.
//!
//! **Writing.** One writer thread moves the buffer to the current incr
//! file as soon as it has data, then syncs as `appendfsync` says:
//! `always` syncs every batch (all the records that arrived while the
//! previous batch was being synced: group commit), `everysec` once a
//! second, `no` never. The offset up to which records are written (and
//! synced, under `always`) is published; under `always` a connection holds
//! its replies until that offset passes the last record its commands
//! produced, so no client sees a reply for a write that is not on disk.
//!
//! **Rewriting.** BGREWRITEAOF opens a new incr file (while every shard is
//! held, so the switch is a clean cut in the command stream), takes a
//! point-in-time snapshot (persist/snapshot.rs) into a new base file, then
//! makes the new base and the new incr file the manifest's content and
//! deletes the old files.
//!
//! **Loading.** The base, then each incr file in order, replayed through
//! the command table with the clock stopped (nothing expires while the log
//! replays; expiries were logged as DELs when they happened). A last file
//! cut short by a crash is truncated at its last complete command when
//! `aof-load-truncated` is yes; anything else malformed stops the server
//! with the file name and offset.

use super::rdb::{self, LoadLimits};
use crate::command::table;
use crate::engine::Engine;
use crate::keyspace::{Object, ShardLocks, Value};
use crate::log;
use crate::protocol::ReplyWriter;
use parking_lot::{Condvar, Mutex};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    Always = 0,
    Everysec = 1,
    No = 2,
}

impl Fsync {
    pub fn parse(s: &str) -> Fsync {
        match s {
            "always" => Fsync::Always,
            "no" => Fsync::No,
            _ => Fsync::Everysec,
        }
    }
}

/// Appends one command as a RESP array of bulk strings.
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[A]) {
    let mut num = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(num.format(argv.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in argv {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(num.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A command to log, with the database it ran in.
#[derive(Clone, Debug)]
pub struct Record {
    pub db: usize,
    pub argv: Vec<Vec<u8>>,
}

// ---------------------------------------------------------------------------
// Manifest

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Base,
    History,
    Incr,
}

#[derive(Clone, Debug)]
pub struct ManifestFile {
    pub name: String,
    pub seq: u64,
    pub kind: FileKind,
}

/// The manifest: which files make up the log, in order.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    pub base: Option<ManifestFile>,
    pub incrs: Vec<ManifestFile>,
    pub history: Vec<ManifestFile>,
    pub base_seq: u64,
    pub incr_seq: u64,
}

/// A file name as the manifest writes it: as it is, or quoted with C
/// escapes when it holds blanks, quotes or control bytes (Redis's
/// sdsneedsrepr / sdscatrepr), so that sdssplitargs reads it back.
fn quote_name(name: &str) -> String {
    if name
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\'' && b != b'\\')
    {
        name.to_string()
    } else {
        let mut out = Vec::new();
        crate::monitor::repr(&mut out, name.as_bytes());
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// C's atoll(): optional blanks and sign, then digits up to the first
/// other byte; 0 when there are none.
fn atoll(v: &[u8]) -> i64 {
    let v = v.trim_ascii_start();
    let (neg, digits) = match v.first() {
        Some(b'-') => (true, &v[1..]),
        Some(b'+') => (false, &v[1..]),
        _ => (false, v),
    };
    let mut n: i64 = 0;
    for &b in digits.iter().take_while(|b| b.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if neg {
        -n
    } else {
        n
    }
}

fn trim_start_matching<'a>(s: &'a [u8], set: &[u8]) -> &'a [u8] {
    let n = s.iter().take_while(|b| set.contains(b)).count();
    &s[n..]
}

fn trim_end_matching<'a>(s: &'a [u8], set: &[u8]) -> &'a [u8] {
    let n = s.iter().rev().take_while(|b| set.contains(b)).count();
    &s[..s.len() - n]
}

impl Manifest {
    /// Parses a manifest as Redis's aofLoadManifestFromFile does: lines of
    /// at most 1024 bytes, each ending in a newline; `#` lines are comments;
    /// every other line is `file <name> seq <n> type <b|h|i>` (keys in any
    /// case, unknown key/value pairs ignored). A blank line, an empty
    /// manifest, a line cut short, a missing or zero field, an unknown type,
    /// a second base or incr files out of order are errors, reported as
    /// Redis logs them (one message a line).
    pub fn parse(text: &[u8]) -> Result<Manifest, String> {
        const MAX_LINE: usize = 1024;
        let mut m = Manifest::default();
        let mut rest = text;
        let mut lineno = 0;
        let fail = |lineno: usize, line: Option<&[u8]>, e: &str| {
            let mut msg = String::from("\n*** FATAL AOF MANIFEST FILE ERROR ***\n");
            if let Some(line) = line {
                msg.push_str(&format!(
                    "Reading the manifest file, at line {lineno}\n>>> '{}'\n",
                    String::from_utf8_lossy(line)
                ));
            }
            msg.push_str(e);
            msg
        };
        loop {
            if rest.is_empty() {
                if lineno == 0 {
                    return Err(fail(0, None, "Found an empty AOF manifest"));
                }
                break;
            }
            // fgets() with a buffer of MAX_LINE + 1: up to and including a
            // newline, at most MAX_LINE bytes.
            let window = &rest[..rest.len().min(MAX_LINE)];
            let take = memchr::memchr(b'\n', window).map_or(window.len(), |i| i + 1);
            let buf = &rest[..take];
            rest = &rest[take..];
            lineno += 1;
            if buf[0] == b'#' {
                continue;
            }
            if buf.last() != Some(&b'\n') {
                return Err(fail(
                    lineno,
                    None,
                    "The AOF manifest file contains too long line",
                ));
            }
            let line = trim_end_matching(buf, b" \t\r\n");
            let line = trim_start_matching(line, b" \t\r\n");
            let err = |e: &str| fail(lineno, Some(line), e);
            if line.is_empty() {
                return Err(err("Invalid AOF manifest file format"));
            }
            let args = match crate::protocol::split_args(line) {
                Some(a) if a.len() >= 6 && a.len() % 2 == 0 => a,
                _ => return Err(err("Invalid AOF manifest file format")),
            };
            let mut name = None;
            let mut seq = 0i64;
            let mut kind = 0u8;
            for kv in args.chunks(2) {
                let (k, v) = (kv[0].as_slice(), kv[1].as_slice());
                if k.eq_ignore_ascii_case(b"file") {
                    // A name in the log's directory, never a path out of
                    // it (Redis's pathIsBaseName).
                    if v.contains(&b'/') || v.contains(&b'\\') {
                        return Err(err("File can't be a path, just a filename"));
                    }
                    name = Some(String::from_utf8_lossy(v).into_owned());
                } else if k.eq_ignore_ascii_case(b"seq") {
                    seq = atoll(v);
                } else if k.eq_ignore_ascii_case(b"type") {
                    kind = v.first().copied().unwrap_or(0);
                }
            }
            let name = match name {
                Some(n) if !n.is_empty() && seq != 0 && kind != 0 => n,
                _ => return Err(err("Invalid AOF manifest file format")),
            };
            // Sequence numbers are positive in every manifest Redis writes.
            let Ok(seq) = u64::try_from(seq) else {
                return Err(err("Invalid AOF manifest file format"));
            };
            match kind {
                b'b' => {
                    if m.base.is_some() {
                        return Err(err("Found duplicate base file information"));
                    }
                    m.base_seq = seq;
                    m.base = Some(ManifestFile {
                        name,
                        seq,
                        kind: FileKind::Base,
                    });
                }
                b'h' => m.history.push(ManifestFile {
                    name,
                    seq,
                    kind: FileKind::History,
                }),
                b'i' => {
                    if seq <= m.incr_seq {
                        return Err(err("Found a non-monotonic sequence number"));
                    }
                    m.incr_seq = seq;
                    m.incrs.push(ManifestFile {
                        name,
                        seq,
                        kind: FileKind::Incr,
                    });
                }
                _ => return Err(err("Unknown AOF file type")),
            }
        }
        Ok(m)
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        let mut line = |f: &ManifestFile, t: &str| {
            s.push_str(&format!(
                "file {} seq {} type {}\n",
                quote_name(&f.name),
                f.seq,
                t
            ));
        };
        if let Some(b) = &self.base {
            line(b, "b");
        }
        for h in &self.history {
            line(h, "h");
        }
        for i in &self.incrs {
            line(i, "i");
        }
        s
    }

    pub fn is_empty(&self) -> bool {
        self.base.is_none() && self.incrs.is_empty()
    }
}

/// Writes a file through a temporary name, syncs it, renames it into
/// place and syncs the directory: a crash leaves the old or the new file,
/// never a mix.
pub fn write_atomically(dir: &Path, name: &str, data: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!("temp-{name}"));
    {
        let mut f = File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(name))?;
    sync_dir(dir)
}

pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

// ---------------------------------------------------------------------------
// The running log

struct Pending {
    data: Vec<u8>,
    /// Bytes appended since the process started (record offsets).
    appended: u64,
    last_db: Option<usize>,
    last_ts: u64,
    writer_waiting: bool,
    stop: bool,
}

struct Files {
    dir: PathBuf,
    manifest_name: String,
    manifest: Manifest,
    incr: Option<File>,
    last_fsync: Instant,
    unsynced: bool,
}

pub struct Aof {
    /// Records are being appended.
    on: AtomicBool,
    policy: AtomicU8,
    timestamps: AtomicBool,
    pending: Mutex<Pending>,
    wake: Condvar,
    synced: tokio::sync::watch::Sender<u64>,
    /// Offset up to which the records are on disk (fsync(2) done), under
    /// any policy: what WAITAOF waits for (Redis's fsynced_reploff).
    fsynced: tokio::sync::watch::Sender<u64>,
    files: Mutex<Option<Files>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// DEBUG AOF-FLUSH-SLEEP: microseconds the writer waits before each write.
    pub flush_sleep_us: AtomicU64,
    /// Offset up to which records were handed to the kernel (write(2)).
    written: AtomicU64,
    pub current_size: AtomicU64,
    pub base_size: AtomicU64,
    pub last_write_ok: AtomicBool,
    pub delayed_fsync: AtomicU64,
}

impl Default for Aof {
    fn default() -> Self {
        Aof::new()
    }
}

impl Aof {
    pub fn new() -> Aof {
        let (tx, _) = tokio::sync::watch::channel(0u64);
        let (fsynced, _) = tokio::sync::watch::channel(0u64);
        Aof {
            on: AtomicBool::new(false),
            policy: AtomicU8::new(Fsync::Everysec as u8),
            timestamps: AtomicBool::new(false),
            pending: Mutex::new(Pending {
                data: Vec::new(),
                appended: 0,
                last_db: None,
                last_ts: 0,
                writer_waiting: false,
                stop: false,
            }),
            wake: Condvar::new(),
            synced: tx,
            fsynced,
            files: Mutex::new(None),
            writer: Mutex::new(None),
            flush_sleep_us: AtomicU64::new(0),
            written: AtomicU64::new(0),
            current_size: AtomicU64::new(0),
            base_size: AtomicU64::new(0),
            last_write_ok: AtomicBool::new(true),
            delayed_fsync: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    pub fn policy(&self) -> Fsync {
        match self.policy.load(Ordering::Relaxed) {
            0 => Fsync::Always,
            2 => Fsync::No,
            _ => Fsync::Everysec,
        }
    }

    pub fn set_policy(&self, p: Fsync) {
        self.policy.store(p as u8, Ordering::Relaxed);
    }

    pub fn set_timestamps(&self, on: bool) {
        self.timestamps.store(on, Ordering::Relaxed);
    }

    /// Appends records; returns the offset just past them.
    pub fn append(&self, records: &[Record]) -> u64 {
        let mut p = self.pending.lock();
        if self.timestamps.load(Ordering::Relaxed) {
            let now = crate::util::time::now_ms() / 1000;
            if now != p.last_ts {
                p.last_ts = now;
                let line = format!("#TS:{now}\r\n");
                p.data.extend_from_slice(line.as_bytes());
                p.appended += line.len() as u64;
            }
        }
        for r in records {
            let before = p.data.len();
            if p.last_db != Some(r.db) {
                let db = r.db.to_string();
                encode_command(&mut p.data, &[b"SELECT".as_slice(), db.as_bytes()]);
                p.last_db = Some(r.db);
            }
            encode_command(&mut p.data, &r.argv);
            p.appended += (p.data.len() - before) as u64;
        }
        // Under `always` the writer thread syncs for the waiting replies at
        // once (group commit). Otherwise connections write their records
        // themselves before replying (write_through) and the writer only
        // syncs once a second: waking it for every record would have it
        // compete with them for the file.
        if p.writer_waiting && self.policy() == Fsync::Always {
            self.wake.notify_one();
        }
        p.appended
    }

    /// Bytes handed to the kernel so far: they survive the process being
    /// killed, not a power cut.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Writes whatever is buffered up to at least `offset` from the
    /// calling thread (Redis writes its AOF buffer before it sends replies,
    /// so a reply never goes out before its write reached the kernel).
    /// Whoever gets the file writes every connection's pending records.
    pub fn write_through(&self, offset: u64) {
        if self.written() >= offset {
            return;
        }
        let mut files = self.files.lock();
        if self.written() >= offset {
            return;
        }
        let (data, end) = {
            let mut p = self.pending.lock();
            (std::mem::take(&mut p.data), p.appended)
        };
        let Some(f) = files.as_mut() else {
            return;
        };
        if let Some(file) = f.incr.as_mut() {
            match file.write_all(&data) {
                Ok(()) => {
                    self.current_size
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                    f.unsynced = true;
                    self.last_write_ok.store(true, Ordering::Relaxed);
                }
                Err(e) => {
                    log::warning(&format!("Error writing to the AOF file: {e}"));
                    self.last_write_ok.store(false, Ordering::Relaxed);
                    // Put the records back for the writer thread to retry.
                    let mut p = self.pending.lock();
                    let mut rest = data;
                    rest.extend_from_slice(&p.data);
                    p.data = rest;
                    return;
                }
            }
        }
        self.written.store(end, Ordering::Release);
    }

    /// Bytes written (and synced under `always`) so far.
    pub fn synced(&self) -> u64 {
        *self.synced.borrow()
    }

    /// Waits until everything up to `offset` is written (and synced under
    /// `always`).
    pub async fn wait_synced(&self, offset: u64) {
        let mut rx = self.synced.subscribe();
        let _ = rx.wait_for(|v| *v >= offset).await;
    }

    /// Bytes on disk so far (fsync done).
    pub fn fsynced(&self) -> u64 {
        *self.fsynced.borrow()
    }

    /// Waits until everything up to `offset` is on disk.
    pub async fn wait_fsynced(&self, offset: u64) {
        let mut rx = self.fsynced.subscribe();
        let _ = rx.wait_for(|v| *v >= offset).await;
    }

    pub fn buffer_len(&self) -> usize {
        self.pending.lock().data.len()
    }

    /// Opens the log for appending: `files` describes the directory, the
    /// current incr file is opened for append and the writer starts (the
    /// caller has the keyspace record its expiries,
    /// `Engine::update_expiry_logging`).
    fn start(self: &Arc<Self>, files: Files) -> io::Result<()> {
        *self.files.lock() = Some(files);
        {
            let mut p = self.pending.lock();
            p.stop = false;
            p.last_db = None;
            p.last_ts = 0;
            let appended = p.appended;
            drop(p);
            self.written.store(appended, Ordering::Release);
            self.synced.send_replace(appended);
            self.fsynced.send_replace(appended);
        }
        self.on.store(true, Ordering::Relaxed);
        let me = self.clone();
        let handle = std::thread::Builder::new()
            .name("goblin-aof".into())
            .spawn(move || me.writer_loop())?;
        *self.writer.lock() = Some(handle);
        Ok(())
    }

    /// Stops appending, writes and syncs what is buffered, closes the file.
    /// `env`: the keyspace whose expiries stop being recorded for it.
    pub fn stop(&self) {
        self.on.store(false, Ordering::Relaxed);
        {
            let mut p = self.pending.lock();
            p.stop = true;
            self.wake.notify_one();
        }
        if let Some(h) = self.writer.lock().take() {
            let _ = h.join();
        }
        if let Some(f) = self.files.lock().as_mut() {
            if let Some(file) = f.incr.take() {
                let _ = file.sync_data();
            }
        }
        *self.files.lock() = None;
    }

    /// Writes and syncs everything buffered now (SHUTDOWN, rotation).
    pub fn flush_now(&self) -> io::Result<()> {
        let mut files = self.files.lock();
        let Some(f) = files.as_mut() else {
            return Ok(());
        };
        let data = std::mem::take(&mut self.pending.lock().data);
        let end = self.pending.lock().appended;
        if let Some(file) = f.incr.as_mut() {
            file.write_all(&data)?;
            self.current_size
                .fetch_add(data.len() as u64, Ordering::Relaxed);
            file.sync_data()?;
        }
        f.unsynced = false;
        f.last_fsync = Instant::now();
        self.written.fetch_max(end, Ordering::Release);
        self.synced.send_replace(end);
        self.fsynced.send_replace(end);
        Ok(())
    }

    fn writer_loop(self: Arc<Self>) {
        loop {
            // Under `always`, wait for data; otherwise for a second to pass
            // (the everysec sync, and what no connection wrote meanwhile).
            {
                let mut p = self.pending.lock();
                let always = self.policy() == Fsync::Always;
                if !p.stop && (p.data.is_empty() || !always) {
                    p.writer_waiting = true;
                    self.wake.wait_for(&mut p, Duration::from_millis(1000));
                    p.writer_waiting = false;
                }
            }
            let sleep = self.flush_sleep_us.load(Ordering::Relaxed);
            if sleep > 0 {
                std::thread::sleep(Duration::from_micros(sleep));
            }
            // Files before the buffer, the same order as a rotation takes
            // them, so a batch always lands in the file it was meant for.
            let mut files = self.files.lock();
            let (data, end, stop) = {
                let mut p = self.pending.lock();
                (std::mem::take(&mut p.data), p.appended, p.stop)
            };
            let Some(f) = files.as_mut() else {
                return;
            };
            if !data.is_empty() {
                if let Some(file) = f.incr.as_mut() {
                    let mut ok = false;
                    for attempt in 0..10 {
                        match file.write_all(&data) {
                            Ok(()) => {
                                ok = true;
                                break;
                            }
                            Err(e) => {
                                if attempt == 0 {
                                    log::warning(&format!("Error writing to the AOF file: {e}"));
                                }
                                self.last_write_ok.store(false, Ordering::Relaxed);
                                std::thread::sleep(Duration::from_millis(100));
                            }
                        }
                    }
                    if ok {
                        self.last_write_ok.store(true, Ordering::Relaxed);
                        self.current_size
                            .fetch_add(data.len() as u64, Ordering::Relaxed);
                        f.unsynced = true;
                    }
                }
            }
            let policy = self.policy();
            let due = match policy {
                Fsync::Always => f.unsynced,
                Fsync::Everysec => {
                    f.unsynced && (stop || f.last_fsync.elapsed() >= Duration::from_secs(1))
                }
                Fsync::No => stop && f.unsynced,
            };
            if due {
                if let Some(file) = f.incr.as_ref() {
                    if let Err(e) = file.sync_data() {
                        log::warning(&format!("Fail to fsync the AOF file: {e}"));
                    }
                }
                f.unsynced = false;
                f.last_fsync = Instant::now();
            }
            if !f.unsynced {
                // Everything written so far (by this thread or a
                // connection's write_through) is on disk.
                let durable = self.written().max(end);
                self.fsynced.send_if_modified(|v| {
                    let grew = durable > *v;
                    *v = (*v).max(durable);
                    grew
                });
            }
            drop(files);
            self.written.fetch_max(end, Ordering::Release);
            self.synced.send_replace(end);
            if stop {
                return;
            }
        }
    }

    /// The directory, manifest name and current manifest (for rewrites and INFO).
    pub fn manifest(&self) -> Option<(PathBuf, Manifest)> {
        self.files
            .lock()
            .as_ref()
            .map(|f| (f.dir.clone(), f.manifest.clone()))
    }

    /// Starts a new incr file (the start of a rewrite), with every shard
    /// held by the caller: what was logged before goes to the old file and
    /// is synced, what is logged after goes to the new one.
    pub fn rotate(&self, persist_manifest: bool) -> io::Result<String> {
        let mut files = self.files.lock();
        let f = files
            .as_mut()
            .ok_or_else(|| io::Error::other("the AOF is not open"))?;
        let mut p = self.pending.lock();
        let data = std::mem::take(&mut p.data);
        if let Some(file) = f.incr.as_mut() {
            file.write_all(&data)?;
            file.sync_data()?;
            self.current_size
                .fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        p.last_db = None;
        p.last_ts = 0;
        let end = p.appended;
        drop(p);
        let seq = f.manifest.incr_seq + 1;
        let name = format!("{}.{seq}.incr.aof", f.manifest_name);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(f.dir.join(&name))?;
        f.manifest.incr_seq = seq;
        f.manifest.incrs.push(ManifestFile {
            name: name.clone(),
            seq,
            kind: FileKind::Incr,
        });
        if persist_manifest {
            persist_manifest_file(&f.dir, &f.manifest_name, &f.manifest)?;
        }
        f.incr = Some(file);
        f.unsynced = false;
        log::notice(&format!(
            "Creating AOF incr file {name} on background rewrite"
        ));
        drop(files);
        self.written.fetch_max(end, Ordering::Release);
        self.synced.send_replace(end);
        Ok(name)
    }

    /// Ends a rewrite: `tmp` becomes the new base, every incr file before
    /// `keep_incr` and the old base become history and are deleted.
    pub fn install_base(&self, tmp: &Path, rdb_format: bool, keep_incr: &str) -> io::Result<()> {
        let mut files = self.files.lock();
        let f = files
            .as_mut()
            .ok_or_else(|| io::Error::other("the AOF is not open"))?;
        let seq = f.manifest.base_seq + 1;
        let name = format!(
            "{}.{seq}.base.{}",
            f.manifest_name,
            if rdb_format { "rdb" } else { "aof" }
        );
        std::fs::rename(tmp, f.dir.join(&name))?;
        let mut m = f.manifest.clone();
        if let Some(old) = m.base.take() {
            m.history.push(ManifestFile {
                kind: FileKind::History,
                ..old
            });
        }
        let keep_pos = m.incrs.iter().position(|i| i.name == keep_incr);
        let old_incrs: Vec<ManifestFile> = match keep_pos {
            Some(pos) => m.incrs.drain(..pos).collect(),
            None => Vec::new(),
        };
        m.history
            .extend(old_incrs.into_iter().map(|i| ManifestFile {
                kind: FileKind::History,
                ..i
            }));
        m.base = Some(ManifestFile {
            name: name.clone(),
            seq,
            kind: FileKind::Base,
        });
        m.base_seq = seq;
        persist_manifest_file(&f.dir, &f.manifest_name, &m)?;
        // History files are deleted once the new manifest is on disk.
        for h in std::mem::take(&mut m.history) {
            log::notice(&format!(
                "Removing the history file {} in the background",
                h.name
            ));
            let _ = std::fs::remove_file(f.dir.join(&h.name));
        }
        persist_manifest_file(&f.dir, &f.manifest_name, &m)?;
        f.manifest = m;
        let size = std::fs::metadata(f.dir.join(&name))
            .map(|m| m.len())
            .unwrap_or(0);
        self.base_size.store(size, Ordering::Relaxed);
        let incr_size: u64 = f
            .manifest
            .incrs
            .iter()
            .map(|i| {
                std::fs::metadata(f.dir.join(&i.name))
                    .map(|m| m.len())
                    .unwrap_or(0)
            })
            .sum();
        self.current_size.store(size + incr_size, Ordering::Relaxed);
        Ok(())
    }
}

fn persist_manifest_file(dir: &Path, name: &str, m: &Manifest) -> io::Result<()> {
    write_atomically(dir, &format!("{name}.manifest"), m.render().as_bytes())
}

// ---------------------------------------------------------------------------
// Opening at startup / when enabled

/// Where the log lives: `dir/appenddirname`, files named after
/// `appendfilename`.
pub fn paths(engine: &Engine) -> (PathBuf, String) {
    let dir = PathBuf::from(engine.config().get("dir")).join(engine.config().get("appenddirname"));
    (dir, engine.config().get("appendfilename"))
}

/// An I/O error as C's strerror() words it (Redis's logs), without the
/// "(os error N)" Rust adds.
pub fn strerror(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) if e.raw_os_error().is_some() => text[..i].to_string(),
        _ => text,
    }
}

/// Reads the manifest from disk (empty when there is none).
pub fn read_manifest(dir: &Path, name: &str) -> Result<Manifest, String> {
    let path = dir.join(format!("{name}.manifest"));
    match std::fs::read(&path) {
        Ok(text) => Manifest::parse(&text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Manifest::default()),
        Err(e) => Err(format!(
            "Fatal error: can't open the AOF manifest file {} for reading: {}",
            path.display(),
            strerror(&e)
        )),
    }
}

/// Opens the log after loading (aofOpenIfNeededOnServerStart): creates
/// the directory, a base file holding the current data when there is none,
/// an incr file when there is none, and starts appending.
pub fn open_on_start(engine: &Arc<Engine>) -> io::Result<()> {
    let (dir, name) = paths(engine);
    std::fs::create_dir_all(&dir)?;
    let mut manifest = read_manifest(&dir, &name).map_err(io::Error::other)?;
    let aof = &engine.persist().aof;
    // A base is created only for a log that has no file at all (Redis
    // does the same: a log of incr files alone stays as it is).
    if manifest.base.is_none() && manifest.incrs.is_empty() {
        let rdb_format = engine.config().get_bool("aof-use-rdb-preamble");
        let seq = manifest.base_seq + 1;
        let base = format!(
            "{name}.{seq}.base.{}",
            if rdb_format { "rdb" } else { "aof" }
        );
        log::notice(&format!("Creating AOF base file {base} on server start"));
        let tmp = dir.join(format!("temp-{base}"));
        {
            let mut locks = engine.keyspace().lock_all();
            let mut file = io::BufWriter::new(File::create(&tmp)?);
            super::write_base(engine, &mut locks, &mut file, rdb_format)?;
            let file = file.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
        }
        std::fs::rename(&tmp, dir.join(&base))?;
        manifest.base = Some(ManifestFile {
            name: base,
            seq,
            kind: FileKind::Base,
        });
        manifest.base_seq = seq;
    }
    let incr_name = match manifest.incrs.last() {
        Some(i) => {
            log::notice(&format!("Opening AOF incr file {} on server start", i.name));
            i.name.clone()
        }
        None => {
            let seq = manifest.incr_seq + 1;
            let n = format!("{name}.{seq}.incr.aof");
            log::notice(&format!("Creating AOF incr file {n} on server start"));
            manifest.incr_seq = seq;
            manifest.incrs.push(ManifestFile {
                name: n.clone(),
                seq,
                kind: FileKind::Incr,
            });
            n
        }
    };
    persist_manifest_file(&dir, &name, &manifest)?;
    let incr = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(&incr_name))?;
    let size_of = |n: &str| std::fs::metadata(dir.join(n)).map(|m| m.len()).unwrap_or(0);
    let base_size = manifest.base.as_ref().map_or(0, |b| size_of(&b.name));
    let total = base_size + manifest.incrs.iter().map(|i| size_of(&i.name)).sum::<u64>();
    aof.base_size.store(base_size, Ordering::Relaxed);
    aof.current_size.store(total, Ordering::Relaxed);
    aof.set_policy(Fsync::parse(&engine.config().get("appendfsync")));
    aof.set_timestamps(engine.config().get_bool("aof-timestamp-enabled"));
    let started = aof.start(Files {
        dir,
        manifest_name: name,
        manifest,
        incr: Some(incr),
        last_fsync: Instant::now(),
        unsynced: false,
    });
    engine.update_expiry_logging();
    started
}

/// Starts appending to a fresh incr file that a rewrite about to run will
/// pair with its base (CONFIG SET appendonly yes). The caller holds every
/// shard; the manifest is written when the rewrite installs the base.
pub fn open_for_rewrite(engine: &Arc<Engine>) -> io::Result<String> {
    let (dir, name) = paths(engine);
    std::fs::create_dir_all(&dir)?;
    let mut manifest = read_manifest(&dir, &name).map_err(io::Error::other)?;
    let seq = manifest.incr_seq + 1;
    let incr_name = format!("{name}.{seq}.incr.aof");
    // Files of an earlier log are superseded by the rewrite's base.
    let mut old: Vec<ManifestFile> = manifest.incrs.drain(..).collect();
    old.append(&mut manifest.history);
    manifest.history = old
        .into_iter()
        .map(|f| ManifestFile {
            kind: FileKind::History,
            ..f
        })
        .collect();
    manifest.incr_seq = seq;
    manifest.incrs.push(ManifestFile {
        name: incr_name.clone(),
        seq,
        kind: FileKind::Incr,
    });
    let incr = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(dir.join(&incr_name))?;
    let aof = &engine.persist().aof;
    aof.current_size.store(0, Ordering::Relaxed);
    aof.set_policy(Fsync::parse(&engine.config().get("appendfsync")));
    aof.set_timestamps(engine.config().get_bool("aof-timestamp-enabled"));
    let started = aof.start(Files {
        dir,
        manifest_name: name,
        manifest,
        incr: Some(incr),
        last_fsync: Instant::now(),
        unsynced: false,
    });
    engine.update_expiry_logging();
    started?;
    Ok(incr_name)
}

// ---------------------------------------------------------------------------
// The base file in command form (aof-use-rdb-preamble no)

/// Items per command when a collection is rewritten (Redis's
/// AOF_REWRITE_ITEMS_PER_CMD).
const ITEMS_PER_CMD: usize = 64;

pub struct AofFormat {
    pub timestamp: bool,
}

fn emit_batches(
    out: &mut Vec<u8>,
    cmd: &[u8],
    key: &[u8],
    items: impl Iterator<Item = Vec<Vec<u8>>>,
) {
    let mut argv: Vec<Vec<u8>> = Vec::new();
    let mut n = 0;
    for item in items {
        if argv.is_empty() {
            argv.push(cmd.to_vec());
            argv.push(key.to_vec());
        }
        argv.extend(item);
        n += 1;
        if n == ITEMS_PER_CMD {
            encode_command(out, &argv);
            argv.clear();
            n = 0;
        }
    }
    if !argv.is_empty() {
        encode_command(out, &argv);
    }
}

/// The commands that rebuild a stream (Redis's rewriteStreamObject): an
/// XADD per entry (or the XADD MAXLEN 0 trick for an empty stream), XSETID
/// for the last ID and counters, then per group XGROUP CREATE, an XCLAIM
/// per pending entry and XGROUP CREATECONSUMER for consumers owning none.
fn rewrite_stream(out: &mut Vec<u8>, key: &[u8], s: &crate::keyspace::Stream) {
    let e = &s.entries;
    if e.length > 0 {
        for entry in e.iter() {
            let mut argv: Vec<Vec<u8>> = vec![b"XADD".to_vec(), key.to_vec(), entry.id.to_bytes()];
            for (f, v) in entry.fields() {
                argv.push(f.to_vec());
                argv.push(v.to_vec());
            }
            encode_command(out, &argv);
        }
    } else {
        encode_command(
            out,
            &[&b"XADD"[..], key, b"MAXLEN", b"0", b"0-1", b"x", b"y"],
        );
    }
    encode_command(
        out,
        &[
            b"XSETID".to_vec(),
            key.to_vec(),
            e.last_id.to_bytes(),
            b"ENTRIESADDED".to_vec(),
            e.entries_added.to_string().into_bytes(),
            b"MAXDELETEDID".to_vec(),
            e.max_deleted_entry_id.to_bytes(),
        ],
    );
    for (name, g) in &s.groups {
        encode_command(
            out,
            &[
                b"XGROUP".to_vec(),
                b"CREATE".to_vec(),
                key.to_vec(),
                name.to_vec(),
                g.last_id.to_bytes(),
                b"ENTRIESREAD".to_vec(),
                g.entries_read.unwrap_or(-1).to_string().into_bytes(),
            ],
        );
        for (cname, c) in &g.consumers {
            if c.pel.is_empty() {
                encode_command(out, &[&b"XGROUP"[..], b"CREATECONSUMER", key, name, cname]);
                continue;
            }
            for id in &c.pel {
                let Some(nack) = g.pel.get(id) else { continue };
                encode_command(
                    out,
                    &[
                        b"XCLAIM".to_vec(),
                        key.to_vec(),
                        name.to_vec(),
                        cname.to_vec(),
                        b"0".to_vec(),
                        id.to_bytes(),
                        b"TIME".to_vec(),
                        nack.delivery_time.to_string().into_bytes(),
                        b"RETRYCOUNT".to_vec(),
                        nack.delivery_count.to_string().into_bytes(),
                        b"JUSTID".to_vec(),
                        b"FORCE".to_vec(),
                    ],
                );
            }
        }
    }
}

impl super::snapshot::Format for AofFormat {
    fn header(&mut self, out: &mut Vec<u8>) {
        if self.timestamp {
            let now = crate::util::time::now_ms() / 1000;
            out.extend_from_slice(format!("#TS:{now}\r\n").as_bytes());
        }
    }

    fn functions(&mut self, out: &mut Vec<u8>, codes: &[Vec<u8>]) {
        for code in codes {
            encode_command(out, &[b"FUNCTION".as_slice(), b"LOAD", code]);
        }
    }

    fn begin_db(&mut self, out: &mut Vec<u8>, db: usize, _keys: u64, _expires: u64) {
        encode_command(out, &[b"SELECT".to_vec(), db.to_string().into_bytes()]);
    }

    fn key(&mut self, out: &mut Vec<u8>, key: &[u8], obj: &Object) {
        match &obj.value {
            Value::Str(s) => encode_command(out, &[b"SET".as_slice(), key, s]),
            Value::Hash(h) => {
                emit_batches(
                    out,
                    b"HMSET",
                    key,
                    h.iter().map(|(f, v)| vec![f.to_vec(), v.to_vec()]),
                );
                if h.has_field_ttls() {
                    for (f, _) in h.iter() {
                        if let Some(Some(at)) = h.field_expiry(f) {
                            let at = at.to_string();
                            encode_command(
                                out,
                                &[
                                    b"HPEXPIREAT".as_slice(),
                                    key,
                                    at.as_bytes(),
                                    b"FIELDS",
                                    b"1",
                                    f,
                                ],
                            );
                        }
                    }
                }
            }
            Value::Set(s) => emit_batches(
                out,
                b"SADD",
                key,
                s.iter().map(|m| vec![m.to_bytes().into_owned()]),
            ),
            Value::ZSet(z) => emit_batches(
                out,
                b"ZADD",
                key,
                z.iter().map(|(m, s)| {
                    let mut score = Vec::new();
                    crate::util::number::format_g17(s, &mut score);
                    vec![score, m.to_vec()]
                }),
            ),
            Value::List(l) => emit_batches(out, b"RPUSH", key, l.iter().map(|e| vec![e.to_vec()])),
            Value::Stream(s) => rewrite_stream(out, key, s),
        }
        if let Some(at) = obj.expire_at() {
            encode_command(
                out,
                &[b"PEXPIREAT".as_slice(), key, at.to_string().as_bytes()],
            );
        }
    }

    fn footer(&mut self, _out: &mut Vec<u8>) {}
}

impl super::snapshot::FormatCrc for AofFormat {}

// ---------------------------------------------------------------------------
// Loading

/// Why loading a file stopped.
pub enum LoadOutcome {
    Ok,
    /// Cut short at `valid_up_to`; the caller decides whether to truncate.
    Truncated {
        valid_up_to: u64,
    },
}

#[derive(Debug)]
pub struct LoadFailure(pub String);

/// Replays commands with every shard held by the caller.
pub struct Replayer<'e> {
    engine: &'e Engine,
    session: crate::engine::Session,
    now_ms: u64,
}

impl<'e> Replayer<'e> {
    pub fn new(engine: &'e Arc<Engine>) -> Replayer<'e> {
        let mut session = engine.session(crate::client::ConnInfo::embedded());
        session.state.replaying = true;
        Replayer {
            engine,
            session,
            now_ms: 0,
        }
    }

    /// Runs one command; Err(name) for an unknown command.
    pub fn run(&mut self, locks: &mut ShardLocks<'_>, argv: &[&[u8]]) -> Result<(), String> {
        let t = table();
        let Some(mut id) = t.lookup(argv[0]) else {
            return Err(String::from_utf8_lossy(argv[0]).into_owned());
        };
        let spec = t.get(id).spec;
        if !spec.subcommands.is_empty() && argv.len() >= 2 {
            if let Some(sub) = t.subcommand(id, argv[1]) {
                id = sub;
            }
        }
        if !t.get(id).spec.arity_ok(argv.len()) {
            return Err(String::from_utf8_lossy(argv[0]).into_owned());
        }
        let stats = self.engine.stats().local();
        self.engine.call(
            &mut self.session.state,
            &mut self.session.out,
            locks,
            &stats,
            id,
            argv,
            self.now_ms,
            false,
            false,
        );
        // Replies of the replay are not wanted.
        if self.session.out.len() > 1 << 16 {
            self.session.out = ReplyWriter::new(2);
        }
        Ok(())
    }
}

/// Reads one line (up to and including "\n"); None at a clean EOF.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<Option<usize>> {
    buf.clear();
    let n = r.read_until(b'\n', buf)?;
    Ok(if n == 0 { None } else { Some(n) })
}

enum Step {
    Eof,
    Command(Vec<Vec<u8>>),
    Truncated,
    Format,
}

fn parse_int(line: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(line)
        .ok()?
        .trim_end_matches(['\r', '\n']);
    s.parse().ok()
}

fn next_command(r: &mut impl BufRead, line: &mut Vec<u8>, pos: &mut u64) -> io::Result<Step> {
    loop {
        let Some(n) = read_line(r, line)? else {
            return Ok(Step::Eof);
        };
        *pos += n as u64;
        if line.last() != Some(&b'\n') {
            return Ok(Step::Truncated);
        }
        if line[0] == b'#' {
            continue;
        }
        if line[0] != b'*' {
            return Ok(Step::Format);
        }
        let Some(argc) = parse_int(&line[1..]).filter(|&n| n >= 1) else {
            return Ok(Step::Format);
        };
        let mut argv = Vec::with_capacity((argc as usize).min(1024));
        for _ in 0..argc {
            let Some(n) = read_line(r, line)? else {
                return Ok(Step::Truncated);
            };
            *pos += n as u64;
            if line.last() != Some(&b'\n') {
                return Ok(Step::Truncated);
            }
            if line[0] != b'$' {
                return Ok(Step::Format);
            }
            let Some(len) = parse_int(&line[1..]).filter(|&n| n >= 0) else {
                return Ok(Step::Format);
            };
            let len = len as usize;
            let mut arg = Vec::new();
            let got = r.by_ref().take(len as u64 + 2).read_to_end(&mut arg)?;
            *pos += got as u64;
            if got < len + 2 {
                return Ok(Step::Truncated);
            }
            if &arg[len..] != b"\r\n" {
                return Ok(Step::Format);
            }
            arg.truncate(len);
            argv.push(arg);
        }
        return Ok(Step::Command(argv));
    }
}

/// Loads one file of the log: an RDB base (or RDB preamble) then commands.
pub fn load_file(
    engine: &Arc<Engine>,
    locks: &mut ShardLocks<'_>,
    replayer: &mut Replayer<'_>,
    path: &Path,
    display_name: &str,
) -> Result<LoadOutcome, LoadFailure> {
    let file = File::open(path).map_err(|e| {
        LoadFailure(format!(
            "Fatal error: can't open the append log file {display_name} for reading: {e}"
        ))
    })?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut start = 0u64;
    {
        let mut sig = [0u8; 5];
        let is_rdb = (&file).read_exact(&mut sig).is_ok() && &sig == b"REDIS";
        (&file)
            .seek(SeekFrom::Start(0))
            .map_err(|e| LoadFailure(e.to_string()))?;
        if is_rdb {
            log::notice("Reading RDB base file on AOF loading...");
            let input = rdb::Input::new(&file, Some(size));
            let consumed =
                super::load_rdb_stream(engine, locks, input, true, false).map_err(|e| {
                    LoadFailure(format!(
                        "Error reading the RDB base file {display_name}, AOF loading aborted: {e}"
                    ))
                })?;
            start = consumed.offset;
        }
    }
    let mut f = &file;
    f.seek(SeekFrom::Start(start))
        .map_err(|e| LoadFailure(e.to_string()))?;
    let mut r = BufReader::with_capacity(256 * 1024, f);
    let mut pos = start;
    let mut valid_up_to = start;
    let mut line = Vec::new();
    let mut multi: Option<(u64, Vec<Vec<Vec<u8>>>)> = None;
    loop {
        let step = next_command(&mut r, &mut line, &mut pos).map_err(|e| {
            LoadFailure(format!(
                "Unrecoverable error reading the append only file {display_name}: {e}"
            ))
        })?;
        match step {
            Step::Eof => break,
            Step::Truncated => return Ok(LoadOutcome::Truncated { valid_up_to: multi.map_or(valid_up_to, |m| m.0) }),
            Step::Format => {
                return Err(LoadFailure(format!(
                    "Bad file format reading the append only file {display_name} (at offset {valid_up_to}): make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
                )))
            }
            Step::Command(argv) => {
                let name = argv[0].to_ascii_lowercase();
                if name == b"multi" {
                    multi = Some((valid_up_to, Vec::new()));
                } else if name == b"exec" {
                    if let Some((_, queued)) = multi.take() {
                        for q in queued {
                            let a: Vec<&[u8]> = q.iter().map(|x| x.as_slice()).collect();
                            replay_one(replayer, locks, &a, display_name)?;
                        }
                    }
                } else if let Some((_, queued)) = multi.as_mut() {
                    if table().lookup(&argv[0]).is_none() {
                        return Err(unknown(&argv[0], display_name));
                    }
                    queued.push(argv);
                } else {
                    let a: Vec<&[u8]> = argv.iter().map(|x| x.as_slice()).collect();
                    replay_one(replayer, locks, &a, display_name)?;
                }
                valid_up_to = pos;
            }
        }
    }
    if let Some((before, _)) = multi {
        log::warning(&format!(
            "Revert incomplete MULTI/EXEC transaction in AOF file {display_name}"
        ));
        return Ok(LoadOutcome::Truncated {
            valid_up_to: before,
        });
    }
    Ok(LoadOutcome::Ok)
}

fn unknown(name: &[u8], file: &str) -> LoadFailure {
    LoadFailure(format!(
        "Unknown command '{}' reading the append only file {file}",
        String::from_utf8_lossy(name)
    ))
}

fn replay_one(
    replayer: &mut Replayer<'_>,
    locks: &mut ShardLocks<'_>,
    argv: &[&[u8]],
    file: &str,
) -> Result<(), LoadFailure> {
    replayer
        .run(locks, argv)
        .map_err(|_| unknown(argv[0], file))
}

/// Loads base and incr files in order (loadAppendOnlyFiles). Returns
/// false when there was nothing to load.
pub fn load_all(engine: &Arc<Engine>, locks: &mut ShardLocks<'_>) -> Result<bool, LoadFailure> {
    let (dir, name) = paths(engine);
    let mut manifest = read_manifest(&dir, &name).map_err(LoadFailure)?;
    // An AOF from Redis 6 or older: one file in `dir`, no directory. Redis
    // upgrades (aofUpgradePrepare) when that file exists and there is no
    // directory, or no manifest, or a manifest left by an upgrade that
    // stopped before its move: the old file as the only base, not yet in
    // the directory. The manifest is written first, then the file moved.
    let old_style = PathBuf::from(engine.config().get("dir")).join(&name);
    if old_style.is_file()
        && (manifest.is_empty()
            || (manifest.incrs.is_empty()
                && manifest.base.as_ref().is_some_and(|b| b.name == name)
                && !dir.join(&name).is_file()))
    {
        std::fs::create_dir_all(&dir).map_err(|e| {
            LoadFailure(format!(
                "Can't open or create append-only dir {}: {}",
                dir.display(),
                strerror(&e)
            ))
        })?;
        manifest.base = Some(ManifestFile {
            name: name.clone(),
            seq: 1,
            kind: FileKind::Base,
        });
        manifest.base_seq = 1;
        persist_manifest_file(&dir, &name, &manifest).map_err(|e| LoadFailure(e.to_string()))?;
        std::fs::rename(&old_style, dir.join(&name)).map_err(|e| {
            LoadFailure(format!(
                "Error trying to move the old AOF file {name} into dir {}: {}",
                dir.display(),
                strerror(&e)
            ))
        })?;
        log::notice(&format!(
            "Successfully migrated an old-style AOF file ({name}) into the AOF directory ({}).",
            dir.display()
        ));
    }
    if manifest.is_empty() {
        return Ok(false);
    }
    let mut files: Vec<&ManifestFile> = manifest.base.iter().collect();
    files.extend(manifest.incrs.iter());
    // Every file the manifest names must be there (getAppendOnlyFileSize).
    for f in &files {
        if let Err(e) = std::fs::metadata(dir.join(&f.name)) {
            return Err(LoadFailure(format!(
                "Unable to obtain the AOF file {} length. stat: {}",
                f.name,
                strerror(&e)
            )));
        }
    }
    let truncate_ok = engine.config().get_bool("aof-load-truncated");
    let mut replayer = Replayer::new(engine);
    let count = files.len();
    for (i, f) in files.iter().enumerate() {
        let path = dir.join(&f.name);
        if std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) == 0 {
            continue;
        }
        let started = Instant::now();
        let last = i + 1 == count;
        match load_file(engine, locks, &mut replayer, &path, &f.name)? {
            LoadOutcome::Ok => {}
            LoadOutcome::Truncated { valid_up_to } => {
                if !last {
                    return Err(LoadFailure(format!(
                        "Fatal error: the truncated file is not the last file ({} at offset {valid_up_to})",
                        f.name
                    )));
                }
                if !truncate_ok {
                    return Err(LoadFailure(format!(
                        "Unexpected end of file reading the append only file {} (last complete command ends at offset {valid_up_to}). You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server.",
                        f.name
                    )));
                }
                log::warning(&format!(
                    "!!! Warning: short read while loading the AOF file {}!!!",
                    f.name
                ));
                log::warning(&format!(
                    "!!! Truncating the AOF {} at offset {valid_up_to} !!!",
                    f.name
                ));
                let file = OpenOptions::new().write(true).open(&path).map_err(|e| {
                    LoadFailure(format!("Error truncating the AOF file {}: {e}", f.name))
                })?;
                file.set_len(valid_up_to)
                    .and_then(|_| file.sync_all())
                    .map_err(|e| {
                        LoadFailure(format!("Error truncating the AOF file {}: {e}", f.name))
                    })?;
                log::warning(&format!(
                    "AOF {} loaded anyway because aof-load-truncated is enabled",
                    f.name
                ));
            }
        }
        let kind = if f.kind == FileKind::Base {
            "base"
        } else {
            "incr"
        };
        log::notice(&format!(
            "DB loaded from {kind} file {}: {:.3} seconds",
            f.name,
            started.elapsed().as_secs_f64()
        ));
    }
    // The replay ran without a clock: give every key the current access time.
    let word = engine
        .keyspace()
        .env()
        .access()
        .initial(crate::util::time::now_ms());
    for shard in locks.held_mut() {
        for db in shard.dbs.iter_mut() {
            db.touch_all(word);
        }
    }
    Ok(true)
}

/// Limits used when a base file holds RDB data.
pub fn limits(engine: &Engine) -> LoadLimits {
    LoadLimits::from_config(engine.config())
}
