//! The running log: records appended by commands, written to the current
//! incr file and synced as `appendfsync` says, with the log's health when
//! the disk fails.
//!
//! **Health.** As Redis 7.0 keeps `aof_last_write_status` and
//! `aof_bio_fsync_status`, the log remembers the error of the last failed
//! write(2) and of a failed fsync(2). While either is set, writes are
//! refused at admission with `-MISCONF Errors writing to the AOF file:
//! <strerror>` (persist::write_denial) and no reply waits for a record
//! that did not reach the file: [`Aof::await_logged`] fails instead, and
//! the hosts (a server connection, the embedded Store) treat the write as
//! not acknowledged. Where Redis exits under `appendfsync always`, Goblin
//! keeps serving reads and recovers by itself:
//! - a failed write keeps its records in the buffer (a short write is
//!   truncated away first, as Redis's flushAppendOnlyFile does) and the
//!   writer thread tries again every second; the first write that
//!   succeeds clears the error;
//! - a failed fsync is never retried on the same file: after it the
//!   kernel may have dropped the pages it could not write and report the
//!   next fsync as a success (PostgreSQL's "fsyncgate"). The file is no
//!   longer synced, and the cron starts an AOF rewrite (persist::cron),
//!   which writes everything the server holds into a new base and a new
//!   incr file; the error clears once the new manifest is on disk.

use crate::log;
use crate::persist::aof::manifest::{write_atomically, FileKind, Manifest, ManifestFile};
use crate::propagate::{encode_command, Record};
use crate::util::strerror;
use parking_lot::{Condvar, Mutex};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a failed write is tried again, and how often the same write
/// error is logged (Redis's AOF_WRITE_LOG_ERROR_RATE is 30 seconds).
const WRITE_RETRY: Duration = Duration::from_secs(1);
const WRITE_ERROR_LOG_EVERY: Duration = Duration::from_secs(30);

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
    /// The current incr file, opened for appending; shared with the
    /// writer thread while it syncs without holding `Aof::files`.
    incr: Option<Arc<File>>,
    /// Bytes the current incr file holds: where a short write is cut back to.
    size: u64,
    /// An fsync of the current file failed: it is not synced again.
    poisoned: bool,
    /// The incr file a rotation opened after an fsync error (its manifest
    /// not yet written): the rewrite that installs a base with it ends the
    /// error, and the offset the rotation took place at is then on disk.
    recovery: Option<(String, u64)>,
    last_fsync: Instant,
}

/// What a reply waits for: the offset written (on disk under `always`)
/// and whether the log is failing.
#[derive(Clone, Copy, Debug, Default)]
struct Progress {
    synced: u64,
    failing: bool,
}

/// A record that did not reach the append-only file: its write is not
/// acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogError {
    errno: i32,
}

impl LogError {
    /// The error as an `io::Error` (the embedded Store's).
    pub fn io_error(&self) -> io::Error {
        io::Error::from_raw_os_error(self.errno)
    }

    /// Redis's refusal of writes while the log fails
    /// (writeCommandsGetDiskErrorMessage), without the leading '-'.
    pub fn misconf(&self) -> String {
        format!(
            "MISCONF Errors writing to the AOF file: {}",
            strerror(&self.io_error())
        )
    }
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.misconf())
    }
}

impl std::error::Error for LogError {}

fn errno_of(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

pub struct Aof {
    /// Records are being appended.
    on: AtomicBool,
    policy: AtomicU8,
    timestamps: AtomicBool,
    pending: Mutex<Pending>,
    wake: Condvar,
    progress: tokio::sync::watch::Sender<Progress>,
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
    /// errno of the last write that failed; 0 once one succeeded
    /// (aof_last_write_status, aof_last_write_errno).
    write_errno: AtomicI32,
    /// errno of an fsync that failed; 0 once a rewrite replaced the files
    /// (aof_bio_fsync_status).
    fsync_errno: AtomicI32,
    /// When the writer thread's fsync started (ms since the epoch), 0 when
    /// none runs: INFO's aof_pending_bio_fsync.
    fsync_since_ms: AtomicU64,
    /// Writes handed to the kernel while an fsync had been running for
    /// two seconds or more (aof_delayed_fsync).
    pub delayed_fsync: AtomicU64,
    last_error_log: Mutex<Option<Instant>>,
}

impl Default for Aof {
    fn default() -> Self {
        Aof::new()
    }
}

impl Aof {
    pub fn new() -> Aof {
        let (progress, _) = tokio::sync::watch::channel(Progress::default());
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
            progress,
            fsynced,
            files: Mutex::new(None),
            writer: Mutex::new(None),
            flush_sleep_us: AtomicU64::new(0),
            written: AtomicU64::new(0),
            current_size: AtomicU64::new(0),
            base_size: AtomicU64::new(0),
            write_errno: AtomicI32::new(0),
            fsync_errno: AtomicI32::new(0),
            fsync_since_ms: AtomicU64::new(0),
            delayed_fsync: AtomicU64::new(0),
            last_error_log: Mutex::new(None),
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

    // -----------------------------------------------------------------------
    // Health

    /// The error that keeps the log from taking writes: the last write's,
    /// else an fsync's that no rewrite has made good yet. None when
    /// healthy, or when the log is off.
    #[inline]
    pub fn error(&self) -> Option<LogError> {
        if !self.is_on() {
            return None;
        }
        let write = self.write_errno.load(Ordering::Relaxed);
        let errno = if write != 0 {
            write
        } else {
            self.fsync_errno.load(Ordering::Relaxed)
        };
        (errno != 0).then_some(LogError { errno })
    }

    /// The error a failing log reports, on or off (a write that was
    /// waiting for it when it failed is not acknowledged).
    fn health_error(&self) -> LogError {
        let write = self.write_errno.load(Ordering::Relaxed);
        let errno = match write {
            0 => self.fsync_errno.load(Ordering::Relaxed),
            e => e,
        };
        LogError {
            errno: if errno == 0 { libc::EIO } else { errno },
        }
    }

    /// INFO's aof_last_write_status.
    pub fn last_write_ok(&self) -> bool {
        self.write_errno.load(Ordering::Relaxed) == 0
            && self.fsync_errno.load(Ordering::Relaxed) == 0
    }

    /// An fsync failed and no rewrite has replaced the files since: the
    /// cron starts one.
    pub fn needs_rewrite(&self) -> bool {
        self.is_on() && self.fsync_errno.load(Ordering::Relaxed) != 0
    }

    /// INFO's aof_pending_bio_fsync: an fsync is running.
    pub fn fsync_running(&self) -> bool {
        self.fsync_since_ms.load(Ordering::Relaxed) != 0
    }

    fn publish_health(&self) {
        let failing = self.write_errno.load(Ordering::Relaxed) != 0
            || self.fsync_errno.load(Ordering::Relaxed) != 0;
        self.progress.send_if_modified(|p| {
            let changed = p.failing != failing;
            p.failing = failing;
            changed
        });
    }

    /// Whether this error is logged now: the first of a run, then at most
    /// one line in WRITE_ERROR_LOG_EVERY.
    fn may_log_error(&self, first: bool) -> bool {
        let mut last = self.last_error_log.lock();
        let now = Instant::now();
        if first || last.is_none_or(|t| now.duration_since(t) >= WRITE_ERROR_LOG_EVERY) {
            *last = Some(now);
            return true;
        }
        false
    }

    fn write_failed(&self, e: &io::Error) {
        let errno = errno_of(e);
        let first = self.write_errno.swap(errno, Ordering::Relaxed) == 0;
        if self.may_log_error(first) {
            log::warning(&format!("Error writing to the AOF file: {}", strerror(e)));
            if first && self.policy() == Fsync::Always {
                // Redis exits here ("Can't recover from AOF write error
                // when the AOF fsync policy is 'always'"). No reply waits
                // for a record that is not on disk, so Goblin can stay up.
                log::warning("AOF write error with appendfsync always: the writes waiting for it are not acknowledged, and writes are refused until the AOF can be written again.");
            }
        }
        self.publish_health();
    }

    fn write_succeeded(&self) {
        // A load first: this runs for every write, the swap rarely.
        if self.write_errno.load(Ordering::Relaxed) != 0
            && self.write_errno.swap(0, Ordering::Relaxed) != 0
        {
            log::warning("AOF write error looks solved, Redis can write again.");
            self.publish_health();
        }
    }

    /// An fsync failed: the file is not trusted again (see the module's
    /// doc), and the cron rewrites the log into new files.
    fn fsync_failed(&self, f: &mut Files, e: &io::Error) {
        f.poisoned = true;
        let first = self.fsync_errno.swap(errno_of(e), Ordering::Relaxed) == 0;
        if first {
            match self.policy() {
                Fsync::Always => log::warning(&format!(
                    "Can't persist AOF for fsync error when the AOF fsync policy is 'always': {}. The writes waiting for it are not acknowledged; rewriting the AOF into new files.",
                    strerror(e)
                )),
                _ => log::warning(&format!("Fail to fsync the AOF file: {}", strerror(e))),
            }
        }
        self.publish_health();
    }

    // -----------------------------------------------------------------------
    // Appending and waiting

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

    /// Bytes written (and synced under `always`) so far: a reply for a
    /// write up to here may leave.
    pub fn synced(&self) -> u64 {
        self.progress.borrow().synced
    }

    /// Waits until the records up to `offset` may be acknowledged, as
    /// Redis writes its AOF buffer before it sends replies: on disk under
    /// `appendfsync always`, handed to the kernel (by the calling thread)
    /// otherwise. Fails when they cannot get there because the log is
    /// failing: the reply must not say the write succeeded.
    pub async fn await_logged(&self, offset: u64) -> Result<(), LogError> {
        if offset <= self.synced() {
            return Ok(());
        }
        if self.policy() != Fsync::Always {
            return self.write_through(offset);
        }
        let mut rx = self.progress.subscribe();
        let reached = match rx.wait_for(|p| p.synced >= offset || p.failing).await {
            Ok(p) => p.synced >= offset,
            // The log is gone with its engine: nothing waits any more.
            Err(_) => true,
        };
        if reached {
            Ok(())
        } else {
            Err(self.health_error())
        }
    }

    /// Writes whatever is buffered up to at least `offset` from the
    /// calling thread. Whoever gets the file writes every connection's
    /// pending records. While the log fails, the writer thread alone tries
    /// again, and this returns the error.
    pub fn write_through(&self, offset: u64) -> Result<(), LogError> {
        if self.written() >= offset {
            return Ok(());
        }
        if let Some(e) = self.error() {
            return Err(e);
        }
        let mut files = self.files.lock();
        if self.written() >= offset {
            return Ok(());
        }
        // The log was closed meanwhile: stop() wrote what was buffered.
        let Some(f) = files.as_mut() else {
            return Ok(());
        };
        if let Err(e) = self.write_buffered(f) {
            return Err(LogError {
                errno: errno_of(&e),
            });
        }
        let since = self.fsync_since_ms.load(Ordering::Relaxed);
        if since != 0 && crate::util::time::now_ms().saturating_sub(since) >= 2000 {
            self.delayed_fsync.fetch_add(1, Ordering::Relaxed);
        }
        drop(files);
        self.write_succeeded();
        Ok(())
    }

    /// Writes everything buffered to the current file (held by the
    /// caller) and returns the offset now written. On failure the records
    /// that did not reach the file go back to the buffer and the log is
    /// marked failing.
    fn write_buffered(&self, f: &mut Files) -> io::Result<u64> {
        let (data, end) = {
            let mut p = self.pending.lock();
            (std::mem::take(&mut p.data), p.appended)
        };
        if let Err((e, kept)) = self.write_out(f, &data) {
            self.unwrite(&data[kept..]);
            self.write_failed(&e);
            return Err(e);
        }
        self.written.fetch_max(end, Ordering::Release);
        Ok(end)
    }

    /// Puts records that could not be written back at the head of the
    /// buffer, before whatever was appended meanwhile.
    fn unwrite(&self, rest: &[u8]) {
        if rest.is_empty() {
            return;
        }
        let mut p = self.pending.lock();
        let mut data = Vec::with_capacity(rest.len() + p.data.len());
        data.extend_from_slice(rest);
        data.extend_from_slice(&p.data);
        p.data = data;
    }

    /// Appends `data` to the current incr file. On failure the file is
    /// left as it was when it can be: a short write is cut off with
    /// ftruncate, as Redis does; when that fails too, what reached the
    /// file stays there and counts as written. Returns the error and how
    /// many bytes of `data` the file kept.
    fn write_out(&self, f: &mut Files, data: &[u8]) -> Result<(), (io::Error, usize)> {
        let Some(file) = f.incr.as_ref() else {
            return Ok(());
        };
        let mut done = 0;
        let failure = loop {
            if done == data.len() {
                break None;
            }
            match (&**file).write(&data[done..]) {
                Ok(0) => break Some(io::Error::from_raw_os_error(libc::ENOSPC)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e),
            }
        };
        let Some(e) = failure else {
            f.size += done as u64;
            self.current_size.fetch_add(done as u64, Ordering::Relaxed);
            return Ok(());
        };
        let mut kept = 0;
        if done > 0 {
            let log_it = self.may_log_error(false);
            if log_it {
                log::warning(&format!(
                    "Short write while writing to the AOF file: (nwritten={done}, expected={})",
                    data.len()
                ));
            }
            if let Err(te) = file.set_len(f.size) {
                if log_it {
                    log::warning(&format!("Could not remove short write from the append-only file.  Redis may refuse to load the AOF the next time it starts.  ftruncate: {}", strerror(&te)));
                }
                kept = done;
                f.size += done as u64;
                self.current_size.fetch_add(done as u64, Ordering::Relaxed);
            }
        }
        Err((e, kept))
    }

    /// Waits until everything up to `offset` is on disk.
    pub async fn wait_fsynced(&self, offset: u64) {
        let mut rx = self.fsynced.subscribe();
        let _ = rx.wait_for(|v| *v >= offset).await;
    }

    /// Bytes on disk so far (fsync done).
    pub fn fsynced(&self) -> u64 {
        *self.fsynced.borrow()
    }

    fn advance_fsynced(&self, to: u64) {
        self.fsynced.send_if_modified(|v| {
            let grew = to > *v;
            *v = (*v).max(to);
            grew
        });
    }

    fn advance_synced(&self, to: u64) {
        self.progress.send_if_modified(|p| {
            let grew = to > p.synced;
            p.synced = p.synced.max(to);
            grew
        });
    }

    pub fn buffer_len(&self) -> usize {
        self.pending.lock().data.len()
    }

    // -----------------------------------------------------------------------
    // Opening, closing, the writer thread

    /// Opens the log for appending: `files` describes the directory, the
    /// current incr file is opened for append and the writer starts (the
    /// caller has the keyspace record its expiries,
    /// `Engine::update_expiry_propagation`). The log starts healthy: its files
    /// are new or were just read back.
    fn start(self: &Arc<Self>, files: Files) -> io::Result<()> {
        *self.files.lock() = Some(files);
        self.write_errno.store(0, Ordering::Relaxed);
        self.fsync_errno.store(0, Ordering::Relaxed);
        {
            let mut p = self.pending.lock();
            p.stop = false;
            p.last_db = None;
            p.last_ts = 0;
            let appended = p.appended;
            drop(p);
            self.written.store(appended, Ordering::Release);
            self.progress.send_replace(Progress {
                synced: appended,
                failing: false,
            });
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

    /// Starts appending to `incr` (opened for appending), the last incr
    /// file of `manifest`, in `dir`.
    pub(super) fn open(
        self: &Arc<Self>,
        dir: PathBuf,
        manifest_name: String,
        manifest: Manifest,
        incr: File,
    ) -> io::Result<()> {
        let size = incr.metadata()?.len();
        self.start(Files {
            dir,
            manifest_name,
            manifest,
            incr: Some(Arc::new(incr)),
            size,
            poisoned: false,
            recovery: None,
            last_fsync: Instant::now(),
        })
    }

    /// Stops appending, writes and syncs what is buffered, closes the file.
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
        *self.files.lock() = None;
        // Nothing waits for a log that is off: its last write and sync
        // released the replies held for it, or failed them.
        if self.last_write_ok() {
            let appended = self.pending.lock().appended;
            self.advance_synced(appended);
        }
    }

    /// Writes and syncs everything buffered now (SHUTDOWN, DEBUG LOADAOF,
    /// closing an embedded store).
    pub fn flush_now(&self) -> io::Result<()> {
        let mut files = self.files.lock();
        let Some(f) = files.as_mut() else {
            return Ok(());
        };
        let end = self.write_buffered(f)?;
        self.write_succeeded();
        if f.poisoned {
            return Err(LogError {
                errno: self.fsync_errno.load(Ordering::Relaxed),
            }
            .io_error());
        }
        if let Some(file) = f.incr.as_ref() {
            if let Err(e) = file.sync_data() {
                self.fsync_failed(f, &e);
                return Err(e);
            }
        }
        f.last_fsync = Instant::now();
        if f.recovery.is_none() {
            self.advance_fsynced(end);
            self.advance_synced(end);
        }
        Ok(())
    }

    fn writer_loop(self: Arc<Self>) {
        // When the last write failed: the next try, a second later.
        let mut retry_at: Option<Instant> = None;
        loop {
            // Under `always`, wait for data; otherwise for a second to pass
            // (the everysec sync, and what no connection wrote meanwhile).
            // After a failed write, wait for the retry whatever comes.
            {
                let mut p = self.pending.lock();
                let always = self.policy() == Fsync::Always;
                let wait = match retry_at {
                    _ if p.stop => None,
                    Some(at) => Some(at.saturating_duration_since(Instant::now())),
                    None if p.data.is_empty() || !always => Some(Duration::from_millis(1000)),
                    None => None,
                };
                if let Some(wait) = wait.filter(|w| !w.is_zero()) {
                    p.writer_waiting = true;
                    self.wake.wait_for(&mut p, wait);
                    p.writer_waiting = false;
                    if !p.stop && retry_at.is_some_and(|at| Instant::now() < at) {
                        continue;
                    }
                }
            }
            retry_at = None;
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
            if let Err((e, kept)) = self.write_out(f, &data) {
                self.unwrite(&data[kept..]);
                self.write_failed(&e);
                if stop {
                    return;
                }
                retry_at = Some(Instant::now() + WRITE_RETRY);
                continue;
            }
            self.written.fetch_max(end, Ordering::Release);
            if !data.is_empty() {
                self.write_succeeded();
            }
            let written = self.written();
            let unsynced = self.fsynced() < written;
            let due = !f.poisoned
                && unsynced
                && match self.policy() {
                    Fsync::Always => true,
                    Fsync::Everysec => stop || f.last_fsync.elapsed() >= Duration::from_secs(1),
                    Fsync::No => stop,
                };
            if due {
                // Synced without holding the files: connections keep
                // writing meanwhile (Redis syncs in a background thread).
                let file = f.incr.clone();
                drop(files);
                let synced = match &file {
                    Some(file) => {
                        self.fsync_since_ms
                            .store(crate::util::time::now_ms().max(1), Ordering::Relaxed);
                        let r = file.sync_data();
                        self.fsync_since_ms.store(0, Ordering::Relaxed);
                        r
                    }
                    None => Ok(()),
                };
                files = self.files.lock();
                match (synced, files.as_mut()) {
                    (Ok(()), Some(f)) => {
                        f.last_fsync = Instant::now();
                        // What was written before the sync began is on disk
                        // (a rotation meanwhile synced the same file first),
                        // unless records before it sit in a file whose
                        // fsync failed: the rewrite's base makes those
                        // durable, and says so (install_base).
                        if f.recovery.is_none() {
                            self.advance_fsynced(written);
                        }
                    }
                    (Ok(()), None) => self.advance_fsynced(written),
                    (Err(e), Some(f)) => self.fsync_failed(f, &e),
                    (Err(_), None) => {}
                }
            }
            drop(files);
            match self.policy() {
                Fsync::Always => self.advance_synced(self.fsynced()),
                _ => self.advance_synced(self.written()),
            }
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

    // -----------------------------------------------------------------------
    // Rewrites

    /// Starts a new incr file (the start of a rewrite), with every shard
    /// held by the caller: what was logged before goes to the old file and
    /// is synced, what is logged after goes to the new one; the manifest
    /// on disk names the new file when `persist_manifest`. Nothing changes
    /// when a step fails: the old file stays the current one.
    ///
    /// After an fsync error the old files are not trusted: the new incr
    /// file is opened without touching them and without a manifest, which
    /// the rewrite's base writes (it holds everything logged before).
    pub fn rotate(&self, persist_manifest: bool) -> io::Result<String> {
        let mut files = self.files.lock();
        let f = files
            .as_mut()
            .ok_or_else(|| io::Error::other("the AOF is not open"))?;
        let recovering = self.fsync_errno.load(Ordering::Relaxed) != 0;
        let mut p = self.pending.lock();
        let data = std::mem::take(&mut p.data);
        let end = p.appended;
        match self.write_out(f, &data) {
            Ok(()) => {
                self.written.fetch_max(end, Ordering::Release);
            }
            // The base holds what did not reach the untrusted file.
            Err(_) if recovering => {}
            Err((e, kept)) => {
                drop(p);
                self.unwrite(&data[kept..]);
                self.write_failed(&e);
                return Err(e);
            }
        }
        if !recovering {
            if let Some(file) = f.incr.as_ref() {
                if let Err(e) = file.sync_data() {
                    self.fsync_failed(f, &e);
                    return Err(e);
                }
            }
        }
        let seq = f.manifest.incr_seq + 1;
        let name = format!("{}.{seq}.incr.aof", f.manifest_name);
        let path = f.dir.join(&name);
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        let mut manifest = f.manifest.clone();
        manifest.incr_seq = seq;
        manifest.incrs.push(ManifestFile {
            name: name.clone(),
            seq,
            kind: FileKind::Incr,
        });
        if persist_manifest && !recovering {
            if let Err(e) = persist_manifest_file(&f.dir, &f.manifest_name, &manifest) {
                if !e.replaced {
                    let _ = std::fs::remove_file(&path);
                    return Err(e.error);
                }
                // In place but maybe not on disk: a rewrite writes it again.
                self.fsync_failed(f, &e.error);
            }
        }
        p.last_db = None;
        p.last_ts = 0;
        drop(p);
        f.manifest = manifest;
        f.incr = Some(Arc::new(file));
        f.size = 0;
        f.poisoned = false;
        if recovering {
            f.recovery = Some((name.clone(), end));
        }
        log::notice(&format!(
            "Creating AOF incr file {name} on background rewrite"
        ));
        drop(files);
        self.written.fetch_max(end, Ordering::Release);
        if !recovering {
            self.advance_fsynced(end);
            self.advance_synced(end);
        }
        self.write_succeeded();
        Ok(name)
    }

    /// Ends a rewrite: `tmp` becomes the new base, every incr file before
    /// `keep_incr` and the old base become history and are deleted. When
    /// a step fails the manifest on disk still names the old files, and
    /// the new base is removed.
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
        let base_path = f.dir.join(&name);
        if let Err(e) = std::fs::rename(tmp, &base_path) {
            let _ = std::fs::remove_file(tmp);
            return Err(e);
        }
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
        if let Err(e) = persist_manifest_file(&f.dir, &f.manifest_name, &m) {
            if !e.replaced {
                let _ = std::fs::remove_file(&base_path);
                return Err(e.error);
            }
            // The new manifest is in place but perhaps not on disk: the
            // old files stay, and the error has the log rewritten again.
            f.manifest = m;
            self.fsync_failed(f, &e.error);
            return Err(e.error);
        }
        // History files are deleted once the new manifest is on disk.
        for h in std::mem::take(&mut m.history) {
            log::notice(&format!(
                "Removing the history file {} in the background",
                h.name
            ));
            let _ = std::fs::remove_file(f.dir.join(&h.name));
        }
        if let Err(e) = persist_manifest_file(&f.dir, &f.manifest_name, &m) {
            // The manifest on disk still lists the deleted history files,
            // which loading ignores.
            log::warning(&format!(
                "Error updating the AOF manifest after removing its history files: {}",
                strerror(&e.error)
            ));
        }
        f.manifest = m;
        let size = std::fs::metadata(&base_path).map(|m| m.len()).unwrap_or(0);
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
        // A base installed with the incr file opened after an fsync error:
        // the untrusted files are gone, and what was logged before that
        // rotation is in the base, on disk.
        if f.recovery.as_ref().is_some_and(|(n, _)| n == keep_incr) && !f.poisoned {
            let (_, at) = f.recovery.take().expect("checked above");
            drop(files);
            if self.fsync_errno.swap(0, Ordering::Relaxed) != 0 {
                log::warning("AOF fsync error looks solved: the AOF was rewritten into new files, Redis can write again.");
            }
            self.advance_fsynced(at);
            self.publish_health();
        }
        Ok(())
    }
}

/// A manifest that could not be replaced, and whether the new one is in
/// place all the same (only syncing its directory failed).
struct ManifestError {
    error: io::Error,
    replaced: bool,
}

fn persist_manifest_file(dir: &Path, name: &str, m: &Manifest) -> Result<(), ManifestError> {
    write_atomically(dir, &format!("{name}.manifest"), m.render().as_bytes()).map_err(|e| {
        ManifestError {
            replaced: e.replaced,
            error: e.error,
        }
    })
}
