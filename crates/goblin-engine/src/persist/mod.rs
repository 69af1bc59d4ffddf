//! Persistence: snapshots in Redis's RDB format, the append-only file in
//! Redis 7.0's multi-part layout, and DUMP / RESTORE payloads.
//!
//! - [`rdb`]: the RDB encoding of values and the file framing, both ways.
//! - [`packed`]: Redis's listpack / ziplist / intset / zipmap blobs.
//! - [`lzf`]: the LZF compression of long strings.
//! - [`snapshot`]: point-in-time snapshots while clients keep writing,
//!   without fork and without copying more than what changes.
//! - [`aof`]: the command log, its writer thread, rewriting and loading.
//!
//! [`Persistence`] is the engine's state for all of it: the running
//! background job (a snapshot for BGSAVE or an AOF rewrite; one at a time,
//! as Redis runs one child), the `save` rules checked by the cron, and
//! INFO's persistence figures.

pub mod aof;
pub mod lzf;
pub use goblin_keyspace::packed;
mod load;
pub mod rdb;
pub mod snapshot;

pub use load::{debug_reload, load_on_start, Reload};

use crate::engine::Engine;
use crate::keyspace::{hash_key, AccessPolicy, Object, ShardLocks};
use crate::log;
use crate::util::time::now_ms;
use parking_lot::Mutex;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// What a background job writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    Rdb,
    AofRewrite,
}

pub struct Job {
    pub kind: JobKind,
    pub started_ms: u64,
    pub walk: snapshot::Walk,
    /// A snapshot for replicas' sockets rather than dump.rdb.
    pub to_replicas: bool,
    /// The replication history at the snapshot's instant (the RDB's
    /// repl-* aux fields).
    pub repl_info: Option<crate::repl::SaveInfo>,
}

pub struct Persistence {
    pub job: Mutex<Option<Arc<Job>>>,
    pub aof: Arc<aof::Aof>,
    pub rdb_saves: AtomicU64,
    pub last_bgsave_ok: AtomicBool,
    pub last_bgsave_secs: AtomicI64,
    pub last_bgsave_try_ms: AtomicU64,
    pub bgsave_scheduled: AtomicBool,
    pub aof_rewrite_scheduled: AtomicBool,
    pub aof_rewrites: AtomicU64,
    pub aof_last_rewrite_ok: AtomicBool,
    pub aof_last_rewrite_secs: AtomicI64,
    pub aof_rewrite_failures: AtomicU64,
    pub loading: AtomicBool,
    pub load_keys_loaded: AtomicU64,
    pub load_keys_expired: AtomicU64,
    /// CONFIG SET appendonly ran where it could not take every shard.
    pub aof_toggle_pending: AtomicBool,
    /// The AOF was switched on and its first base is not written yet
    /// (Redis's AOF_WAIT_REWRITE): a failed rewrite is tried again.
    pub aof_wait_rewrite: AtomicBool,
    /// Bytes the last snapshot copied aside (rdb_last_cow_size).
    pub last_copied: AtomicU64,
    pub last_aof_copied: AtomicU64,
    /// Changes counted when the running snapshot started.
    pub dirty_at_start: AtomicU64,
    /// Keeps the temp-file names of concurrent saves apart.
    serial: AtomicU64,
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION: RESTORE and loading accept a
    /// payload whatever its CRC64.
    pub skip_checksum: AtomicBool,
    /// `stop-writes-on-bgsave-error yes` with save points configured
    /// (Engine::apply_config): a failed background save refuses writes.
    pub stop_writes_on_bgsave_error: AtomicBool,
    /// When the cron last started a rewrite to replace files an fsync
    /// failed on.
    last_recovery_try_ms: AtomicU64,
    /// The final shutdown is under way (prepare_shutdown): no background
    /// job starts, as none can in Redis, which exits in the same call
    /// that kills its child. A replica that asks to sync meanwhile is
    /// refused rather than given a snapshot the shutdown would wait for.
    closing: AtomicBool,
}

impl Default for Persistence {
    fn default() -> Self {
        Persistence {
            job: Mutex::new(None),
            aof: Arc::new(aof::Aof::new()),
            rdb_saves: AtomicU64::new(0),
            last_bgsave_ok: AtomicBool::new(true),
            last_bgsave_secs: AtomicI64::new(-1),
            last_bgsave_try_ms: AtomicU64::new(0),
            bgsave_scheduled: AtomicBool::new(false),
            aof_rewrite_scheduled: AtomicBool::new(false),
            aof_rewrites: AtomicU64::new(0),
            aof_last_rewrite_ok: AtomicBool::new(true),
            aof_last_rewrite_secs: AtomicI64::new(-1),
            aof_rewrite_failures: AtomicU64::new(0),
            loading: AtomicBool::new(false),
            load_keys_loaded: AtomicU64::new(0),
            load_keys_expired: AtomicU64::new(0),
            aof_toggle_pending: AtomicBool::new(false),
            aof_wait_rewrite: AtomicBool::new(false),
            last_copied: AtomicU64::new(0),
            last_aof_copied: AtomicU64::new(0),
            dirty_at_start: AtomicU64::new(0),
            serial: AtomicU64::new(0),
            skip_checksum: AtomicBool::new(false),
            stop_writes_on_bgsave_error: AtomicBool::new(true),
            last_recovery_try_ms: AtomicU64::new(0),
            closing: AtomicBool::new(false),
        }
    }
}

impl Persistence {
    pub fn running(&self) -> Option<JobKind> {
        self.job.lock().as_ref().map(|j| j.kind)
    }

    /// Why writes are refused because the data cannot reach the disk, in
    /// the order of Redis's writeCommandsDeniedByDiskError: a failed
    /// background save (when `stop-writes-on-bgsave-error` is yes and save
    /// points exist) until a save succeeds, then an append-only file that
    /// cannot be written or synced. Atomics only: admission asks it for
    /// every command.
    #[inline]
    pub fn write_denial(&self) -> Option<DiskError> {
        if !self.last_bgsave_ok.load(Ordering::Relaxed)
            && self.stop_writes_on_bgsave_error.load(Ordering::Relaxed)
        {
            return Some(DiskError::Rdb);
        }
        self.aof.error().map(DiskError::Aof)
    }

    /// Asks the running job to stop (FLUSHALL, SHUTDOWN, appendonly no).
    pub fn cancel(&self, kind: Option<JobKind>) {
        if let Some(j) = self.job.lock().as_ref() {
            if kind.is_none_or(|k| k == j.kind) {
                j.walk.cancel.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// What keeps writes from being accepted: see Persistence::write_denial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskError {
    /// The last background save failed.
    Rdb,
    /// The append-only file cannot be written or synced.
    Aof(aof::LogError),
}

impl DiskError {
    /// The refusal of a command that writes (Redis's
    /// writeCommandsGetDiskErrorMessage), without the leading '-'.
    pub fn message(&self) -> String {
        match self {
            DiskError::Rdb => "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.".to_string(),
            DiskError::Aof(e) => e.misconf(),
        }
    }

    /// The refusal of a script declared as writing, before it runs
    /// (Redis's scriptPrepareForRun).
    pub fn script_message(&self) -> String {
        match self {
            DiskError::Rdb => "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts.".to_string(),
            DiskError::Aof(e) => format!(
                "MISCONF Redis is configured to persist data to AOF, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts. AOF error: {}",
                aof::strerror(&e.io_error())
            ),
        }
    }
}

/// `dir/dbfilename`.
pub fn rdb_path(engine: &Engine) -> PathBuf {
    PathBuf::from(engine.config().dir()).join(engine.config().dbfilename())
}

fn temp_path(engine: &Engine, what: &str) -> PathBuf {
    let n = engine.persist().serial.fetch_add(1, Ordering::Relaxed);
    PathBuf::from(engine.config().dir()).join(format!("temp-{what}-{}-{n}.rdb", std::process::id()))
}

/// The temp file of a foreground save (SAVE, SHUTDOWN, DEBUG RELOAD):
/// `dir/temp-<pid>.rdb`, as Redis names it. A second SIGINT during a
/// shutdown's save removes it before the process exits.
pub fn save_temp_path(engine: &Engine) -> PathBuf {
    PathBuf::from(engine.config().dir()).join(format!("temp-{}.rdb", std::process::id()))
}

/// Writes a file through a temp file, syncs and renames it into place.
fn save_file(
    path: &Path,
    tmp: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let result = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(tmp)?);
        write(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(tmp, path)?;
        if let Some(dir) = path.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            aof::sync_dir(dir)?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    result
}

/// The base of an AOF rewrite, or the base created at startup, with every
/// shard held by the caller.
pub fn write_base(
    engine: &Engine,
    locks: &mut ShardLocks<'_>,
    out: &mut dyn Write,
    rdb_format: bool,
) -> io::Result<()> {
    let databases = engine.keyspace().databases();
    let functions = engine.scripts().library_codes(engine.config(), false);
    if rdb_format {
        let mut fmt = snapshot::RdbFormat::for_engine(engine, true);
        snapshot::write_locked(locks, databases, &functions, &mut fmt, out, 0)
    } else {
        let mut fmt = aof::AofFormat {
            timestamp: engine.config().aof_timestamp_enabled(),
        };
        snapshot::write_locked(locks, databases, &functions, &mut fmt, out, 0)
    }
}

/// SAVE (and the saves of SHUTDOWN, FLUSHALL, DEBUG RELOAD): writes
/// dump.rdb while the caller holds every shard.
pub fn save_locked(engine: &Engine, locks: &mut ShardLocks<'_>) -> io::Result<()> {
    let path = rdb_path(engine);
    // Redis's rdbSave writes temp-<pid>.rdb: every shard is held, so only
    // one such save runs at a time.
    let tmp = save_temp_path(engine);
    let databases = engine.keyspace().databases();
    let functions = engine.scripts().library_codes(engine.config(), true);
    let delay = engine.config().rdb_key_save_delay().max(0) as u64;
    let repl = engine.repl().save_info();
    let result = save_file(&path, &tmp, |w| {
        let mut fmt = snapshot::RdbFormat::for_engine(engine, false);
        fmt.repl = repl;
        snapshot::write_locked(locks, databases, &functions, &mut fmt, w, delay)
    });
    match &result {
        Ok(()) => {
            log::notice("DB saved on disk");
            engine.reset_dirty();
            engine.set_last_save_ms(now_ms());
            engine
                .persist()
                .last_bgsave_ok
                .store(true, Ordering::Relaxed);
        }
        Err(e) => {
            log::warning(&format!("Failed saving the DB: {e}"));
        }
    }
    result
}

/// Starts a background snapshot; the caller holds every shard (the start
/// is the snapshot's point in time). For an AOF rewrite the log switches
/// to a new incr file at the same instant.
pub fn start_job(
    engine: &Arc<Engine>,
    locks: &mut ShardLocks<'_>,
    kind: JobKind,
) -> io::Result<()> {
    start_job_for(engine, locks, kind, crate::repl::sync::Target::File)
}

/// `start_job`, writing the snapshot to `target`.
pub fn start_job_for(
    engine: &Arc<Engine>,
    locks: &mut ShardLocks<'_>,
    kind: JobKind,
    target: crate::repl::sync::Target,
) -> io::Result<()> {
    start_job_with(engine, locks, kind, target, None)
}

/// The rewrite that follows CONFIG SET appendonly yes: the log was just
/// opened on `incr` (aof::open_for_rewrite), which pairs with the new
/// base as it is; no second incr file is started.
pub fn start_first_rewrite(
    engine: &Arc<Engine>,
    locks: &mut ShardLocks<'_>,
    incr: String,
) -> io::Result<()> {
    start_job_with(
        engine,
        locks,
        JobKind::AofRewrite,
        crate::repl::sync::Target::File,
        Some(incr),
    )
}

fn start_job_with(
    engine: &Arc<Engine>,
    locks: &mut ShardLocks<'_>,
    kind: JobKind,
    target: crate::repl::sync::Target,
    opened_incr: Option<String>,
) -> io::Result<()> {
    let p = &engine.persist();
    let mut slot = p.job.lock();
    if slot.is_some() {
        return Err(io::Error::other("a background job is running"));
    }
    if p.closing.load(Ordering::Relaxed) {
        return Err(io::Error::other("the server is shutting down"));
    }
    // The incr file that pairs with the new base.
    let keep_incr = if kind == JobKind::AofRewrite {
        match opened_incr {
            Some(incr) => Some(incr),
            None if p.aof.is_on() => Some(p.aof.rotate(true)?),
            None => None,
        }
    } else {
        None
    };
    engine.keyspace().env().reset_snapshot_copied();
    // dump.rdb may leave JavaScript libraries out (rdb-save-js-libraries);
    // a replica and the AOF always get them.
    let functions = if kind == JobKind::Rdb && matches!(target, crate::repl::sync::Target::File) {
        engine.scripts().library_codes(engine.config(), true)
    } else {
        engine.scripts().library_codes(engine.config(), false)
    };
    let walk = snapshot::begin(locks, engine.keyspace().databases(), functions);
    let job = Arc::new(Job {
        kind,
        started_ms: now_ms(),
        walk,
        to_replicas: matches!(target, crate::repl::sync::Target::Replicas),
        repl_info: engine.repl().save_info(),
    });
    *slot = Some(job.clone());
    // INFO's rdb_saves and aof_rewrites count the jobs started, as Redis
    // counts its forks, whatever their outcome.
    match kind {
        JobKind::Rdb => p.rdb_saves.fetch_add(1, Ordering::Relaxed),
        JobKind::AofRewrite => p.aof_rewrites.fetch_add(1, Ordering::Relaxed),
    };
    p.dirty_at_start.store(engine.dirty(), Ordering::Relaxed);
    if kind == JobKind::Rdb {
        p.last_bgsave_try_ms.store(now_ms(), Ordering::Relaxed);
    }
    drop(slot);
    let engine = engine.clone();
    std::thread::Builder::new()
        .name("goblin-save".into())
        .spawn(move || {
            lower_thread_priority(SAVE_NICE);
            run_job(engine, job, keep_incr)
        })?;
    match kind {
        JobKind::Rdb => log::notice("Background saving started"),
        JobKind::AofRewrite => log::notice("Background append only file rewriting started"),
    }
    Ok(())
}

/// How much lower than the server's the snapshot writer's CPU priority
/// is (nice levels). The writer is background work beside the client
/// threads: on idle cores it runs at full speed, and when they are busy it
/// gives way (at +10 the scheduler gives it about a tenth of a core against
/// one busy client thread), so requests keep their latency while a
/// snapshot runs. Measured in docs/BENCHMARKS.md ("Latency and memory
/// while snapshotting"): at +10 the p99 of a SET load during BGSAVE fell
/// from 4.4 to 3.5 ms, and the requests served meanwhile doubled.
const SAVE_NICE: i32 = 10;

/// Lowers the calling thread's CPU priority by `by` nice levels (Linux,
/// where a nice level belongs to a thread; elsewhere it would apply to the
/// whole process, so nothing is done). Failure leaves it as it is.
fn lower_thread_priority(by: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: getpriority and setpriority read and write the scheduling
    // attribute of this thread (by its id) and touch no memory.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if now == -1 && *libc::__errno_location() != 0 {
            return;
        }
        libc::setpriority(libc::PRIO_PROCESS, tid, (now + by).min(19));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = by;
}

fn run_job(engine: Arc<Engine>, job: Arc<Job>, keep_incr: Option<String>) {
    let delay = engine.config().rdb_key_save_delay().max(0) as u64;
    let p = &engine.persist();
    if job.to_replicas {
        return run_replicas_job(engine, job, delay);
    }
    let result = match job.kind {
        JobKind::Rdb => {
            let path = rdb_path(&engine);
            let tmp = temp_path(&engine, "bgsave");
            let r = save_file(&path, &tmp, |w| {
                let mut fmt = snapshot::RdbFormat::for_engine(&engine, false);
                fmt.repl = job.repl_info.clone();
                snapshot::write(&engine, &job.walk, &mut fmt, w, delay)
            });
            crate::repl::sync::disk_done(&engine, r.is_ok());
            r
        }
        JobKind::AofRewrite => rewrite_job(&engine, &job, delay, keep_incr),
    };
    if result.is_err() {
        // Whatever the walk did not finish must not stay marked.
        snapshot::abandon(&engine);
    }
    let secs = (now_ms().saturating_sub(job.started_ms) / 1000) as i64;
    let copied = engine.keyspace().env().snapshot_copied();
    match job.kind {
        JobKind::Rdb => p.last_copied.store(copied, Ordering::Relaxed),
        JobKind::AofRewrite => p.last_aof_copied.store(copied, Ordering::Relaxed),
    }
    match job.kind {
        JobKind::Rdb => {
            p.last_bgsave_secs.store(secs, Ordering::Relaxed);
            match &result {
                Ok(()) => {
                    let before = p.dirty_at_start.load(Ordering::Relaxed);
                    engine.discount_dirty(before);
                    engine.set_last_save_ms(now_ms());
                    p.last_bgsave_ok.store(true, Ordering::Relaxed);
                    log::notice("Background saving terminated with success");
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    p.last_bgsave_ok.store(false, Ordering::Relaxed);
                    log::warning("Background saving terminated by signal 10");
                }
                Err(e) => {
                    p.last_bgsave_ok.store(false, Ordering::Relaxed);
                    log::warning(&format!("Background saving error: {e}"));
                }
            }
        }
        JobKind::AofRewrite => {
            p.aof_last_rewrite_secs.store(secs, Ordering::Relaxed);
            match &result {
                Ok(()) => {
                    p.aof_last_rewrite_ok.store(true, Ordering::Relaxed);
                    p.aof_rewrite_failures.store(0, Ordering::Relaxed);
                    p.aof_wait_rewrite.store(false, Ordering::Relaxed);
                    log::notice("Background AOF rewrite finished successfully");
                }
                Err(e) => {
                    p.aof_last_rewrite_ok.store(false, Ordering::Relaxed);
                    p.aof_rewrite_failures.fetch_add(1, Ordering::Relaxed);
                    log::warning(&format!(
                        "Background AOF rewrite terminated with error: {e}"
                    ));
                    // Until a base is written, the manifest on disk does
                    // not name the incr file the log is writing: try
                    // again, as Redis reschedules the rewrite while it
                    // waits to switch the AOF on (AOF_WAIT_REWRITE).
                    if p.aof_wait_rewrite.load(Ordering::Relaxed) && p.aof.is_on() {
                        p.aof_rewrite_scheduled.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
    }
    *p.job.lock() = None;
}

/// A diskless sync's snapshot: written to the replicas' sockets.
fn run_replicas_job(engine: Arc<Engine>, job: Arc<Job>, delay: u64) {
    let mut sink = crate::repl::sync::SocketSink::take(&engine);
    let mut fmt = snapshot::RdbFormat::for_engine(&engine, false);
    fmt.repl = job.repl_info.clone();
    let result = snapshot::write(&engine, &job.walk, &mut fmt, &mut sink, delay);
    if result.is_err() {
        snapshot::abandon(&engine);
    }
    sink.finish(&result);
    match &result {
        Ok(()) => log::notice("Background RDB transfer terminated with success"),
        Err(e) => log::warning(&format!("Background transfer error: {e}")),
    }
    *engine.persist().job.lock() = None;
}

fn rewrite_job(
    engine: &Arc<Engine>,
    job: &Job,
    delay: u64,
    keep_incr: Option<String>,
) -> io::Result<()> {
    let p = &engine.persist();
    let rdb_format = engine.config().aof_use_rdb_preamble();
    let (dir, _) = aof::paths(engine);
    aof::create_dir(&dir)?;
    let tmp = dir.join(format!("temp-rewriteaof-bg-{}.aof", std::process::id()));
    let written = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        if rdb_format {
            let mut fmt = snapshot::RdbFormat::for_engine(engine, true);
            snapshot::write(engine, &job.walk, &mut fmt, &mut w, delay)?;
        } else {
            let mut fmt = aof::AofFormat {
                timestamp: engine.config().aof_timestamp_enabled(),
            };
            snapshot::write(engine, &job.walk, &mut fmt, &mut w, delay)?;
        }
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    match keep_incr {
        Some(incr) => p.aof.install_base(&tmp, rdb_format, &incr),
        None if p.aof.is_on() => {
            // The log was switched on while this rewrite was being set up:
            // its first incr file pairs with this base.
            let incr = p
                .aof
                .manifest()
                .and_then(|(_, m)| m.incrs.last().map(|i| i.name.clone()))
                .unwrap_or_default();
            p.aof.install_base(&tmp, rdb_format, &incr)
        }
        None => {
            // AOF off: the rewrite leaves a base and a manifest only.
            let (dir, name) = aof::paths(engine);
            let mut m = aof::read_manifest(&dir, &name).map_err(io::Error::other)?;
            let seq = m.base_seq + 1;
            let base = format!(
                "{name}.{seq}.base.{}",
                if rdb_format { "rdb" } else { "aof" }
            );
            if let Err(e) = std::fs::rename(&tmp, dir.join(&base)) {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
            let old: Vec<String> = m
                .base
                .iter()
                .chain(m.incrs.iter())
                .chain(m.history.iter())
                .map(|f| f.name.clone())
                .collect();
            m = aof::Manifest {
                base: Some(aof::ManifestFile {
                    name: base.clone(),
                    seq,
                    kind: aof::FileKind::Base,
                }),
                base_seq: seq,
                incr_seq: m.incr_seq,
                ..Default::default()
            };
            if let Err(e) =
                aof::write_atomically(&dir, &format!("{name}.manifest"), m.render().as_bytes())
            {
                // The old manifest names the old files, which stay; the
                // new base goes unless the new manifest is in place.
                if !e.replaced {
                    let _ = std::fs::remove_file(dir.join(&base));
                }
                return Err(e.error);
            }
            for f in old {
                let _ = std::fs::remove_file(dir.join(f));
            }
            Ok(())
        }
    }
}

/// BGSAVE / the save rules: starts a background snapshot, locking every
/// shard for the start.
pub fn bgsave(engine: &Arc<Engine>) -> io::Result<()> {
    let mut locks = engine.keyspace().lock_all();
    start_job(engine, &mut locks, JobKind::Rdb)
}

pub fn bgrewriteaof(engine: &Arc<Engine>) -> io::Result<()> {
    let mut locks = engine.keyspace().lock_all();
    start_job(engine, &mut locks, JobKind::AofRewrite)
}

/// Waits for the running background job to end (SHUTDOWN, tests).
pub fn wait_job(engine: &Engine) {
    while engine.persist().job.lock().is_some() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The periodic checks (Redis's serverCron part): the save rules, the
/// scheduled jobs, automatic AOF rewrites.
pub fn cron(engine: &Arc<Engine>) {
    let p = &engine.persist();
    if p.loading.load(Ordering::Relaxed) {
        return;
    }
    let now = now_ms();
    if p.aof_toggle_pending.swap(false, Ordering::Relaxed) {
        if let Err(e) = config_changed(engine, &["appendonly"], false) {
            log::warning(&format!("Switching the append-only file: {e}"));
        }
    }
    if p.running().is_some() {
        return;
    }
    if p.aof_toggle_pending.load(Ordering::Relaxed) {
        // The next tick switches the AOF on, with the rewrite it waits for.
        return;
    }
    // An fsync of the log failed: its files are not trusted, and a rewrite
    // writes everything into new ones (aof::writer's overview); tried
    // again every second while it fails.
    if p.aof.needs_rewrite() {
        if now.saturating_sub(p.last_recovery_try_ms.load(Ordering::Relaxed)) >= 1000 {
            p.last_recovery_try_ms.store(now, Ordering::Relaxed);
            log::warning("Rewriting the append only file into new files after an fsync error");
            if let Err(e) = bgrewriteaof(engine) {
                log::warning(&format!(
                    "Can't rewrite append only file in background: {e}"
                ));
            }
        }
        return;
    }
    if p.aof_rewrite_scheduled.swap(false, Ordering::Relaxed) {
        if let Err(e) = bgrewriteaof(engine) {
            log::warning(&format!(
                "Can't rewrite append only file in background: {e}"
            ));
        }
        return;
    }
    if p.bgsave_scheduled.swap(false, Ordering::Relaxed) {
        if let Err(e) = bgsave(engine) {
            log::warning(&format!("Can't save in background: {e}"));
        }
        return;
    }
    // save <seconds> <changes>: after a failure, retry only after 5 seconds
    // (CONFIG_BGSAVE_RETRY_DELAY).
    let dirty = engine.dirty();
    let last_save = engine.last_save_ms();
    let retry_ok = p.last_bgsave_ok.load(Ordering::Relaxed)
        || now.saturating_sub(p.last_bgsave_try_ms.load(Ordering::Relaxed)) > 5000;
    let rules = engine.config().save();
    let nums: Vec<u64> = rules
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect();
    for pair in nums.chunks(2) {
        let [secs, changes] = pair else { continue };
        if dirty >= *changes && now.saturating_sub(last_save) >= secs * 1000 && retry_ok {
            log::notice(&format!("{changes} changes in {secs} seconds. Saving..."));
            if let Err(e) = bgsave(engine) {
                log::warning(&format!("Can't save in background: {e}"));
            }
            return;
        }
    }
    // auto-aof-rewrite-percentage / min-size, while the log can be written.
    if p.aof.is_on() && p.aof.error().is_none() {
        let pct = engine.config().auto_aof_rewrite_percentage();
        let min = engine.config().auto_aof_rewrite_min_size().max(0) as u64;
        let size = p.aof.current_size.load(Ordering::Relaxed);
        let base = p.aof.base_size.load(Ordering::Relaxed).max(1);
        if pct > 0 && size > min {
            let growth = (size * 100 / base).saturating_sub(100);
            if growth >= pct as u64 {
                log::notice(&format!(
                    "Starting automatic rewriting of AOF on {growth}% growth"
                ));
                if let Err(e) = bgrewriteaof(engine) {
                    log::warning(&format!(
                        "Can't rewrite append only file in background: {e}"
                    ));
                }
            }
        }
    }
}

/// What loading a snapshot stream found.
pub struct Loaded {
    pub offset: u64,
    pub keys: u64,
    pub expired: u64,
    /// Keys whose collection had no element (Redis skips them).
    pub empty_skipped: u64,
    /// The replication history recorded in the aux fields, when complete.
    pub repl: Option<crate::repl::SaveInfo>,
    /// The keys skipped because they had expired (database, key): a
    /// primary that resumes its history sends their DELs to its replicas.
    pub expired_keys: Vec<(usize, Vec<u8>)>,
}

/// Loads RDB records into the held shards (the caller holds them all).
/// Expired keys are skipped unless this is an AOF base (whose later
/// commands may still refer to them, as in Redis).
pub fn load_rdb_stream(
    engine: &Engine,
    locks: &mut ShardLocks<'_>,
    input: rdb::Input<'_>,
    aof_base: bool,
    merge: bool,
) -> Result<Loaded, rdb::LoadError> {
    let limits = rdb::LoadLimits::from_config(engine.config());
    let mut reader = rdb::FileReader::new(input, limits)?;
    reader.skip_checksum =
        !engine.config().rdbchecksum() || engine.persist().skip_checksum.load(Ordering::Relaxed);
    let now = now_ms();
    let access = engine.keyspace().env().access();
    let databases = engine.keyspace().databases();
    let shards = engine.keyspace().shard_count();
    let mut db = 0usize;
    let mut loaded = Loaded {
        offset: 0,
        keys: 0,
        expired: 0,
        empty_skipped: 0,
        repl: None,
        expired_keys: Vec::new(),
    };
    let (mut repl_db, mut repl_id, mut repl_offset) = (None, None, None);
    let key_delay = engine.config().key_load_delay();
    loop {
        match reader.next()? {
            rdb::Record::Eof => break,
            rdb::Record::SelectDb(n) => {
                if n as usize >= databases {
                    return reader.input.err(format!(
                        "FATAL: Data file was created with a Redis server configured to handle more than {databases} databases. Exiting"
                    ));
                }
                db = n as usize;
            }
            rdb::Record::ResizeDb(keys, _) => {
                let per_shard = (keys as usize / shards).max(1);
                for shard in locks.held_mut() {
                    shard.dbs[db].reserve(per_shard + per_shard / 8);
                }
            }
            rdb::Record::Aux(k, v) => {
                let num = || {
                    std::str::from_utf8(&v)
                        .ok()
                        .and_then(|s| s.parse::<i64>().ok())
                };
                match k.as_slice() {
                    b"repl-stream-db" => repl_db = num(),
                    b"repl-id" if v.len() == 40 => {
                        repl_id = Some(String::from_utf8_lossy(&v).into_owned())
                    }
                    b"repl-offset" => repl_offset = num(),
                    _ => {}
                }
                if k == b"redis-ver" {
                    log::notice(&format!(
                        "Loading RDB produced by version {}",
                        String::from_utf8_lossy(&v)
                    ));
                }
            }
            rdb::Record::Function(code) => {
                // rdbFunctionLoad: a library that exists already fails the
                // load unless it is a merge (DEBUG RELOAD MERGE).
                if let Err(e) = engine.scripts().load_library(engine.config(), &code, merge) {
                    let msg = format!("Failed loading library, {}", e.text());
                    log::warning(&msg);
                    return reader.input.err(msg);
                }
            }
            rdb::Record::Key {
                key,
                value,
                expire_ms,
                idle,
                freq,
            } => {
                let Some(value) = value else {
                    if loaded.empty_skipped < 10 {
                        log::warning(&format!(
                            "rdbLoadObject skipping empty key: {}",
                            String::from_utf8_lossy(&key)
                        ));
                    }
                    loaded.empty_skipped += 1;
                    continue;
                };
                if let Some(at) = expire_ms {
                    if !aof_base && at < now as i64 {
                        loaded.expired += 1;
                        loaded.expired_keys.push((db, key));
                        continue;
                    }
                }
                let mut obj = Object::new(value, access, now);
                if let Some(at) = expire_ms {
                    obj.set_expire_at(at.max(1) as u64);
                }
                if let Some(secs) = idle {
                    if !access.lfu {
                        obj.set_access(AccessPolicy::idle_for(secs, now));
                    }
                }
                if let Some(f) = freq {
                    if access.lfu {
                        obj.set_access(AccessPolicy::with_counter(f, now));
                    }
                }
                let h = hash_key(&key);
                let idx = engine.keyspace().shard_of(h);
                let d = &mut locks.shard(idx).dbs[db];
                if d.contains(h, &key) && !merge {
                    return reader.input.err(format!(
                        "Duplicate key '{}' found in RDB file",
                        String::from_utf8_lossy(&key)
                    ));
                }
                let field_ttls =
                    matches!(&obj.value, crate::keyspace::Value::Hash(hv) if hv.has_field_ttls());
                d.insert_loaded(h, &key, obj);
                if field_ttls {
                    d.track_field_expiry(h, &key);
                }
                loaded.keys += 1;
                if key_delay > 0 {
                    std::thread::sleep(std::time::Duration::from_micros(key_delay as u64));
                }
            }
        }
    }
    reader.verify_checksum()?;
    loaded.offset = reader.input.offset();
    if let (Some(db), Some(replid), Some(offset)) = (repl_db, repl_id, repl_offset) {
        if db >= 0 && offset >= 0 {
            loaded.repl = Some(crate::repl::SaveInfo {
                stream_db: db,
                replid,
                offset: offset as u64,
            });
        }
    }
    Ok(loaded)
}

/// Loads `dir/dbfilename` into the held shards. Ok(None) when the file
/// does not exist.
pub fn load_rdb_file(
    engine: &Engine,
    locks: &mut ShardLocks<'_>,
    merge: bool,
) -> Result<Option<Loaded>, String> {
    let path = rdb_path(engine);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("Fatal error loading the DB: {e}. Exiting.")),
    };
    let size = file.metadata().map(|m| m.len()).ok();
    let started = std::time::Instant::now();
    let p = &engine.persist();
    p.loading.store(true, Ordering::Relaxed);
    let result = load_rdb_stream(engine, locks, rdb::Input::new(file, size), false, merge);
    p.loading.store(false, Ordering::Relaxed);
    match result {
        Ok(l) => {
            p.load_keys_loaded.store(l.keys, Ordering::Relaxed);
            p.load_keys_expired.store(l.expired, Ordering::Relaxed);
            if l.empty_skipped > 0 {
                log::warning(&format!(
                    "Done loading RDB, keys loaded: {}, keys expired: {}, empty keys skipped: {}.",
                    l.keys, l.expired, l.empty_skipped
                ));
            } else {
                log::notice(&format!(
                    "Done loading RDB, keys loaded: {}, keys expired: {}.",
                    l.keys, l.expired
                ));
            }
            log::notice(&format!(
                "DB loaded from disk: {:.3} seconds",
                started.elapsed().as_secs_f64()
            ));
            Ok(Some(l))
        }
        Err(e) => {
            // Leave nothing half loaded behind.
            for shard in locks.held_mut() {
                for db in shard.dbs.iter_mut() {
                    db.clear();
                }
            }
            Err(format!(
                "Internal error in RDB reading offset {}, function at rdb.rs -> {}\nFatal error loading the DB {}: {}. Exiting.",
                e.offset,
                e.message,
                path.display(),
                e.message
            ))
        }
    }
}

/// Removes the temporary files of saves, rewrites and manifest switches
/// that an earlier process left when it was killed or lost power midway
/// (`temp-*.rdb` in `dir`, `temp-*` in the append-only directory): no
/// loaded file is ever one of them, and a crash loop would otherwise fill
/// the disk with them. Redis leaves them.
fn remove_stale_temp_files(engine: &Engine) {
    let data_dir = PathBuf::from(engine.config().dir());
    let (aof_dir, _) = aof::paths(engine);
    let stale = |dir: &Path, is_temp: &dyn Fn(&str) -> bool| {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if is_temp(name) && entry.file_type().is_ok_and(|t| t.is_file()) {
                log::notice(&format!(
                    "Removing the temporary file {name} left by an earlier run"
                ));
                let _ = std::fs::remove_file(entry.path());
            }
        }
    };
    stale(&data_dir, &|n| {
        n.starts_with("temp-") && n.ends_with(".rdb")
    });
    stale(&aof_dir, &|n| n.starts_with("temp-"));
}

/// CONFIG SET appendonly / appendfsync / aof-timestamp-enabled.
pub fn config_changed(
    engine: &Arc<Engine>,
    names: &[&str],
    holds_shards: bool,
) -> Result<(), String> {
    let p = &engine.persist();
    for name in names {
        if *name == "appendonly" && holds_shards {
            // Switching needs every shard (and may wait for a running
            // job): the cron does it once the caller has let go.
            p.aof_toggle_pending.store(true, Ordering::Relaxed);
            continue;
        }
        match *name {
            "appendfsync" => p
                .aof
                .set_policy(aof::Fsync::parse(&engine.config().appendfsync())),
            "aof-timestamp-enabled" => p
                .aof
                .set_timestamps(engine.config().aof_timestamp_enabled()),
            "appendonly" => {
                let want = engine.config().appendonly();
                if want && !p.aof.is_on() {
                    // startAppendOnly: a rewrite writes the base while the
                    // log already collects every later command. A save in
                    // progress goes on: the switch (and its rewrite) waits
                    // for it, nothing is logged meanwhile; the cron tries
                    // again at each tick.
                    if p.running() == Some(JobKind::Rdb) {
                        if !p.aof_rewrite_scheduled.swap(true, Ordering::Relaxed) {
                            log::warning("AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible.");
                        }
                        p.aof_toggle_pending.store(true, Ordering::Relaxed);
                        p.aof_wait_rewrite.store(true, Ordering::Relaxed);
                        continue;
                    }
                    if p.running().is_some() {
                        log::warning("AOF was enabled but there is already an AOF rewriting in background. Stopping background AOF and starting a rewrite now.");
                        p.cancel(None);
                        wait_job(engine);
                    }
                    p.aof_rewrite_scheduled.store(false, Ordering::Relaxed);
                    let mut locks = engine.keyspace().lock_all();
                    let incr = aof::open_for_rewrite(engine).map_err(|e| e.to_string())?;
                    p.aof_wait_rewrite.store(true, Ordering::Relaxed);
                    if let Err(e) = start_first_rewrite(engine, &mut locks, incr) {
                        drop(locks);
                        p.aof.stop();
                        p.aof_wait_rewrite.store(false, Ordering::Relaxed);
                        engine.update_expiry_propagation();
                        return Err(e.to_string());
                    }
                } else if !want && p.aof.is_on() {
                    // stopAppendOnly: a rewrite in progress is abandoned
                    // (Redis kills its child; the line is Redis's).
                    if p.running() == Some(JobKind::AofRewrite) {
                        log::notice("Killing running AOF rewrite child");
                    }
                    p.cancel(Some(JobKind::AofRewrite));
                    wait_job(engine);
                    p.aof.stop();
                    p.aof_wait_rewrite.store(false, Ordering::Relaxed);
                    p.aof_rewrite_scheduled.store(false, Ordering::Relaxed);
                    engine.update_expiry_propagation();
                } else if !want && p.aof_wait_rewrite.swap(false, Ordering::Relaxed) {
                    // Switched off while the switch on waited for a save:
                    // the rewrite it scheduled is dropped.
                    p.aof_rewrite_scheduled.store(false, Ordering::Relaxed);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// How a shutdown was asked for: SHUTDOWN's options, or those of
/// shutdown-on-sigterm / shutdown-on-sigint for a signal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShutdownFlags {
    /// SAVE (Some(true)), NOSAVE (Some(false)), or as the save rules say.
    pub save: Option<bool>,
    /// NOW: do not wait for lagging replicas (Goblin has none).
    pub now: bool,
    /// FORCE: exit even when the final snapshot cannot be written.
    pub force: bool,
}

impl ShutdownFlags {
    /// The words of shutdown-on-sigterm / shutdown-on-sigint ("default",
    /// "save", "nosave", "now", "force").
    pub fn from_config(value: &str) -> ShutdownFlags {
        let mut f = ShutdownFlags::default();
        for word in value.split_whitespace() {
            match word {
                "save" => f.save = Some(true),
                "nosave" => f.save = Some(false),
                "now" => f.now = true,
                "force" => f.force = true,
                _ => {}
            }
        }
        f
    }
}

/// SHUTDOWN and the shutdown signals (Redis's prepareForShutdown and
/// finishShutdown; the caller logs "User requested shutdown..."), and an
/// embedded store closing: stop background work, write the log to disk, save a
/// snapshot when asked to or when save rules exist. An error leaves the
/// server running.
pub fn prepare_shutdown(engine: &Arc<Engine>, flags: ShutdownFlags) -> Result<(), String> {
    let p = &engine.persist();
    let failed = || {
        p.closing.store(false, Ordering::Relaxed);
        log::warning("Errors trying to shut down the server. Check the logs for more information.");
        Err("Errors trying to SHUTDOWN. Check logs.".to_string())
    };
    log_lagging_replicas(engine);
    // Taken under the job's lock: a job is either running now, and
    // cancelled below, or never starts.
    {
        let _slot = p.job.lock();
        p.closing.store(true, Ordering::Relaxed);
    }
    if p.running() == Some(JobKind::Rdb) {
        log::warning("There is a child saving an .rdb. Killing it!");
        p.cancel(None);
        wait_job(engine);
    }
    if p.aof.is_on() {
        if p.running() == Some(JobKind::AofRewrite) {
            // Without its first rewrite the file does not hold the data.
            if p.aof_wait_rewrite.load(Ordering::Relaxed) {
                if flags.force {
                    log::warning("Writing initial AOF. Exit anyway.");
                } else {
                    log::warning("Writing initial AOF, can't exit.");
                    return failed();
                }
            }
            log::warning("There is a child rewriting the AOF. Killing it!");
            p.cancel(None);
            wait_job(engine);
        }
        log::notice("Calling fsync() on the AOF file.");
        if let Err(e) = p.aof.flush_now() {
            log::warning(&format!("Fail to fsync the AOF file: {e}."));
        }
    }
    let save = flags
        .save
        .unwrap_or_else(|| !engine.config().save().trim().is_empty());
    if save {
        log::notice("Saving the final RDB snapshot before exiting.");
        let mut locks = engine.keyspace().lock_all();
        if save_locked(engine, &mut locks).is_err() {
            if flags.force {
                log::warning("Error trying to save the DB. Exit anyway.");
            } else {
                log::warning("Error trying to save the DB, can't exit.");
                return failed();
            }
        }
    }
    if p.aof.is_on() {
        p.aof.stop();
        engine.update_expiry_propagation();
    }
    Ok(())
}

/// Redis's finishShutdown logs each replica that has not acknowledged the
/// whole stream, and how many have.
fn log_lagging_replicas(engine: &Engine) {
    use crate::repl::state;
    let replicas = engine.repl().replicas();
    if replicas.is_empty() {
        return;
    }
    let offset = engine.repl().stream.offset();
    let now_s = now_ms() / 1000;
    let mut lagging = 0;
    for r in &replicas {
        let ack = r.ack.load(Ordering::Acquire);
        if ack == offset {
            continue;
        }
        lagging += 1;
        let lag = if r.state() == state::ONLINE {
            now_s as i64 - (r.ack_ms.load(Ordering::Relaxed) / 1000) as i64
        } else {
            0
        };
        log::warning(&format!(
            "Lagging replica {}:{} reported offset {} behind master, lag={}, state={}.",
            r.ip(),
            r.conf.listening_port,
            offset as i64 - ack as i64,
            lag,
            state::name(r.state()),
        ));
    }
    log::notice(&format!(
        "{} of {} replicas are in sync when shutting down.",
        replicas.len() - lagging,
        replicas.len()
    ));
}

/// INFO persistence.
pub fn info(engine: &Engine) -> String {
    use std::fmt::Write as _;
    let p = &engine.persist();
    let job = p.job.lock().clone();
    let now = now_ms();
    let (rdb_running, aof_running) = match job.as_ref().map(|j| j.kind) {
        Some(JobKind::Rdb) => (1, 0),
        Some(JobKind::AofRewrite) => (0, 1),
        None => (0, 0),
    };
    let (processed, total) = job.as_ref().map_or((0, 0), |j| {
        (
            j.walk.keys_processed.load(Ordering::Relaxed),
            j.walk.keys_total,
        )
    });
    let copied = if job.is_some() {
        engine.keyspace().env().snapshot_copied()
    } else {
        0
    };
    let current_secs = |kind: JobKind| -> i64 {
        match &job {
            Some(j) if j.kind == kind => (now.saturating_sub(j.started_ms) / 1000) as i64,
            _ => -1,
        }
    };
    let ok = |b: bool| if b { "ok" } else { "err" };
    let mut out = String::new();
    let _ = write!(
        out,
        "loading:{}\r\nasync_loading:0\r\ncurrent_cow_peak:{copied}\r\ncurrent_cow_size:{copied}\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:{:.2}\r\ncurrent_save_keys_processed:{processed}\r\ncurrent_save_keys_total:{total}\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{rdb_running}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nrdb_last_cow_size:{}\r\nrdb_last_load_keys_expired:{}\r\nrdb_last_load_keys_loaded:{}\r\naof_enabled:{}\r\naof_rewrite_in_progress:{aof_running}\r\naof_rewrite_scheduled:{}\r\naof_last_rewrite_time_sec:{}\r\naof_current_rewrite_time_sec:{}\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\naof_rewrites_consecutive_failures:{}\r\naof_last_write_status:{}\r\naof_last_cow_size:{}\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
        p.loading.load(Ordering::Relaxed) as u8,
        if total > 0 { processed as f64 * 100.0 / total as f64 } else { 0.0 },
        engine.dirty(),
        engine.last_save_ms() / 1000,
        ok(p.last_bgsave_ok.load(Ordering::Relaxed)),
        p.last_bgsave_secs.load(Ordering::Relaxed),
        current_secs(JobKind::Rdb),
        p.rdb_saves.load(Ordering::Relaxed),
        p.last_copied.load(Ordering::Relaxed),
        p.load_keys_expired.load(Ordering::Relaxed),
        p.load_keys_loaded.load(Ordering::Relaxed),
        (p.aof.is_on() || p.aof_wait_rewrite.load(Ordering::Relaxed)) as u8,
        p.aof_rewrite_scheduled.load(Ordering::Relaxed) as u8,
        p.aof_last_rewrite_secs.load(Ordering::Relaxed),
        current_secs(JobKind::AofRewrite),
        ok(p.aof_last_rewrite_ok.load(Ordering::Relaxed)),
        p.aof_rewrites.load(Ordering::Relaxed),
        p.aof_rewrite_failures.load(Ordering::Relaxed),
        ok(p.aof.last_write_ok()),
        p.last_aof_copied.load(Ordering::Relaxed),
    );
    if p.aof.is_on() {
        let _ = write!(
            out,
            "aof_current_size:{}\r\naof_base_size:{}\r\naof_pending_rewrite:{}\r\naof_buffer_length:{}\r\naof_pending_bio_fsync:{}\r\naof_delayed_fsync:{}\r\n",
            p.aof.current_size.load(Ordering::Relaxed),
            p.aof.base_size.load(Ordering::Relaxed),
            p.aof_rewrite_scheduled.load(Ordering::Relaxed) as u8,
            p.aof.buffer_len(),
            p.aof.fsync_running() as u8,
            p.aof.delayed_fsync.load(Ordering::Relaxed),
        );
    }
    out
}
