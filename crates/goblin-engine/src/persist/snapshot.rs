//! Point-in-time snapshots without fork and without a second copy of the
//! data.
//!
//! Redis forks and lets the kernel copy pages on write. Goblin's snapshot
//! is cooperative instead:
//!
//! 1. **Start.** Every shard is held at once, just long enough to mark
//!    each database as "snapshot in progress" (`Db::begin_snapshot`, with
//!    the walk's cursor at bucket 0) and to count its keys. That instant is
//!    the snapshot's point in time, the same for all shards.
//! 2. **Walk.** The writer thread visits each database's key table bucket
//!    by bucket, holding the shard only for a batch of buckets at a time;
//!    it copies the small values it finds and formats them once the shard
//!    is released (see `Copied`). Clients keep running between batches.
//! 3. **Copy on write, per key.** Before any change of a key whose bucket
//!    the walk has not reached, the key's object as it was is copied into
//!    the database's side list (or the side list notes that the key did not
//!    exist). The walk skips keys in the side list and writes the side
//!    list's copies at the end. Only what is written during the snapshot is
//!    copied. The hook is `Db::preserve`, called by the `Db` methods that
//!    change keys and by `Ctx::locate_in` for write commands (which change
//!    values in place); expiry and eviction go through the `Db` methods.
//! 4. **Stable buckets.** Key tables do not resize while marked (chains
//!    get longer instead), so "has the walk passed this key" is a
//!    comparison of bucket indices; keys created after the start are never
//!    visited in a bucket already walked, and are noted as absent in one
//!    not yet walked. FLUSHDB hands the whole old table to the walk;
//!    SWAPDB moves the mark along with the data.

use super::rdb::{self, SaveOptions};
use crate::engine::Engine;
use crate::keyspace::{Object, ShardLocks, Value};
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Buckets visited per batch (one shard held meanwhile).
const BATCH_BUCKETS: usize = 256;
/// A batch also ends when this much output is pending.
const BATCH_BYTES: usize = 256 * 1024;

/// A running snapshot's shared state.
pub struct Walk {
    pub cancel: AtomicBool,
    pub keys_processed: AtomicU64,
    pub keys_total: u64,
    /// Keys and keys with a TTL per database at the start.
    pub sizes: Vec<(u64, u64)>,
    /// The function libraries' code at the start.
    pub functions: Vec<Vec<u8>>,
}

/// Marks every database of every held shard (the caller holds them all)
/// and returns the walk's state.
pub fn begin(locks: &mut ShardLocks<'_>, databases: usize, functions: Vec<Vec<u8>>) -> Walk {
    let mut sizes = vec![(0u64, 0u64); databases];
    for shard in locks.held_mut() {
        for (i, db) in shard.dbs.iter_mut().enumerate() {
            sizes[i].0 += db.len() as u64;
            sizes[i].1 += db.volatile_len() as u64;
            db.begin_snapshot(i);
        }
    }
    Walk {
        cancel: AtomicBool::new(false),
        keys_processed: AtomicU64::new(0),
        keys_total: sizes.iter().map(|s| s.0).sum(),
        sizes,
        functions,
    }
}

/// Clears every mark (an abandoned snapshot), locking each shard in turn.
pub fn abandon(engine: &Engine) {
    for i in 0..engine.keyspace().shard_count() {
        let mut shard = engine.keyspace().lock(i);
        for db in shard.dbs.iter_mut() {
            db.end_snapshot();
        }
    }
}

/// How the snapshot is written: RDB records or AOF commands.
pub trait Format {
    fn header(&mut self, out: &mut Vec<u8>);
    /// The function libraries, each given by its code.
    fn functions(&mut self, out: &mut Vec<u8>, codes: &[Vec<u8>]);
    fn begin_db(&mut self, out: &mut Vec<u8>, db: usize, keys: u64, expires: u64);
    fn key(&mut self, out: &mut Vec<u8>, key: &[u8], obj: &Object);
    fn footer(&mut self, out: &mut Vec<u8>);
}

/// The RDB file format.
pub struct RdbFormat {
    pub opts: SaveOptions,
    pub aof_base: bool,
    pub used_memory: u64,
    /// The clock keys' idle times and counters are written at.
    pub now_ms: u64,
    /// Running checksum of everything written.
    pub crc: crc::Digest<'static, u64>,
    /// The replication history the snapshot belongs to (repl-stream-db,
    /// repl-id, repl-offset aux fields).
    pub repl: Option<crate::repl::SaveInfo>,
}

impl RdbFormat {
    /// The format of `engine`'s snapshots: its settings, and its
    /// used_memory for the used-mem field.
    pub fn for_engine(engine: &crate::Engine, aof_base: bool) -> RdbFormat {
        let mut format = RdbFormat::new(
            super::rdb::SaveOptions::from_config(engine.config()),
            aof_base,
        );
        format.used_memory = engine.used_memory();
        format
    }

    pub fn new(opts: SaveOptions, aof_base: bool) -> RdbFormat {
        RdbFormat {
            opts,
            aof_base,
            used_memory: 0,
            now_ms: crate::util::time::now_ms(),
            crc: rdb::CRC64.digest(),
            repl: None,
        }
    }
}

impl Format for RdbFormat {
    fn header(&mut self, out: &mut Vec<u8>) {
        rdb::put_header(out);
        let o = &self.opts;
        rdb::put_aux(out, "redis-ver", crate::REDIS_VERSION.as_bytes(), o);
        rdb::put_aux(out, "redis-bits", b"64", o);
        let now = (crate::util::time::now_ms() / 1000).to_string();
        rdb::put_aux(out, "ctime", now.as_bytes(), o);
        rdb::put_aux(out, "used-mem", self.used_memory.to_string().as_bytes(), o);
        if let Some(r) = &self.repl {
            rdb::put_aux(out, "repl-stream-db", r.stream_db.to_string().as_bytes(), o);
            rdb::put_aux(out, "repl-id", r.replid.as_bytes(), o);
            rdb::put_aux(out, "repl-offset", r.offset.to_string().as_bytes(), o);
        }
        rdb::put_aux(out, "aof-base", if self.aof_base { b"1" } else { b"0" }, o);
    }

    fn functions(&mut self, out: &mut Vec<u8>, codes: &[Vec<u8>]) {
        for code in codes {
            rdb::put_function(out, code, &self.opts);
        }
    }

    fn begin_db(&mut self, out: &mut Vec<u8>, db: usize, keys: u64, expires: u64) {
        rdb::put_select(out, db, keys, expires);
    }

    fn key(&mut self, out: &mut Vec<u8>, key: &[u8], obj: &Object) {
        rdb::put_key(out, key, obj, &self.opts, self.now_ms);
    }

    fn footer(&mut self, out: &mut Vec<u8>) {
        out.push(rdb::opcode::EOF);
    }
}

/// Writes `out` to `sink`, keeping the checksum when the format has one.
fn flush(sink: &mut dyn Write, fmt: &mut dyn FormatCrc, out: &mut Vec<u8>) -> io::Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    fmt.update(out);
    sink.write_all(out)?;
    out.clear();
    Ok(())
}

/// Formats that keep a checksum of the bytes written.
pub trait FormatCrc: Format {
    fn update(&mut self, _bytes: &[u8]) {}
    /// Bytes after the footer (the RDB checksum).
    fn trailer(&mut self) -> Vec<u8> {
        Vec::new()
    }
}

impl FormatCrc for RdbFormat {
    fn update(&mut self, bytes: &[u8]) {
        self.crc.update(bytes);
    }
    fn trailer(&mut self) -> Vec<u8> {
        self.crc.clone().finalize().to_le_bytes().to_vec()
    }
}

/// rdb-key-save-delay's pause after a key, cut short when the walk is
/// cancelled (a long delay must not hold up FLUSHALL or appendonly no,
/// which wait for the walk to stop, as Redis kills its child at once).
fn delay_unless_cancelled(cancel: &AtomicBool, micros: u64) {
    let until = std::time::Instant::now() + std::time::Duration::from_micros(micros);
    loop {
        if cancel.load(Ordering::Relaxed) {
            return;
        }
        let now = std::time::Instant::now();
        if now >= until {
            return;
        }
        std::thread::sleep((until - now).min(std::time::Duration::from_millis(10)));
    }
}

/// The keys of one batch copied out under the shard's lock, to be
/// formatted after it is released. Formatting (LZF compression above all)
/// costs several times what copying does, and every client thread that
/// needs the shard waits while the walker holds it; so small values are
/// copied, and only the large ones are formatted in place.
#[derive(Default)]
struct Copied {
    /// The keys' bytes, one after the other.
    keys: Vec<u8>,
    /// Each key's end in `keys`, and its object.
    objects: Vec<(usize, Object)>,
}

impl Copied {
    /// Elements up to which a collection is copied rather than formatted
    /// under the lock (Redis's default listpack limit).
    const MAX_ELEMENTS: usize = 128;
    /// Bytes up to which a string is copied.
    const MAX_STRING: usize = 64 * 1024;

    /// Copies `key` and `obj` when that is cheap; otherwise hands `obj`
    /// back, to be formatted now.
    fn take<'o>(&mut self, key: &[u8], obj: &'o Object) -> Option<&'o Object> {
        let small = match &obj.value {
            Value::Str(s) => s.len() <= Self::MAX_STRING,
            Value::Hash(h) => h.len() <= Self::MAX_ELEMENTS,
            Value::Set(s) => s.len() <= Self::MAX_ELEMENTS,
            Value::ZSet(z) => z.len() <= Self::MAX_ELEMENTS,
            Value::List(l) => l.len() <= Self::MAX_ELEMENTS,
            Value::Stream(_) => false,
        };
        if !small {
            return Some(obj);
        }
        self.keys.extend_from_slice(key);
        self.objects.push((self.keys.len(), obj.clone()));
        None
    }

    /// Formats the copies with `f` and forgets them.
    fn write(&mut self, mut f: impl FnMut(&[u8], &Object)) {
        let mut start = 0;
        for (end, obj) in self.objects.drain(..) {
            f(&self.keys[start..end], &obj);
            start = end;
        }
        self.keys.clear();
    }
}

/// Walks a marked snapshot and writes it; each shard is held per batch.
/// `key_delay_us` is rdb-key-save-delay (a test aid that slows the walk).
pub fn write(
    engine: &Engine,
    walk: &Walk,
    fmt: &mut dyn FormatCrc,
    sink: &mut dyn Write,
    key_delay_us: u64,
) -> io::Result<()> {
    let cancelled = || io::Error::new(io::ErrorKind::Interrupted, "snapshot cancelled");
    let mut out = Vec::with_capacity(BATCH_BYTES * 2);
    let mut copied = Copied::default();
    fmt.header(&mut out);
    fmt.functions(&mut out, &walk.functions);
    for (db, &(keys, expires)) in walk.sizes.iter().enumerate() {
        if keys == 0 {
            // Nothing to write, but the marks must go.
            for i in 0..engine.keyspace().shard_count() {
                let mut shard = engine.keyspace().lock(i);
                if let Some(d) = shard
                    .dbs
                    .iter_mut()
                    .find(|d| d.snapshot.as_ref().is_some_and(|s| s.origin == db))
                {
                    d.end_snapshot();
                }
            }
            continue;
        }
        fmt.begin_db(&mut out, db, keys, expires);
        for i in 0..engine.keyspace().shard_count() {
            loop {
                if walk.cancel.load(Ordering::Relaxed) {
                    return Err(cancelled());
                }
                let mut shard = engine.keyspace().lock(i);
                let Some(d) = shard
                    .dbs
                    .iter_mut()
                    .find(|d| d.snapshot.as_ref().is_some_and(|s| s.origin == db))
                else {
                    // The marks were cleared under us: abandoned.
                    return Err(cancelled());
                };
                let batch = if key_delay_us > 0 { 1 } else { BATCH_BUCKETS };
                let mut n = 0u64;
                let done = d.snapshot_walk(batch, |k, o| {
                    if copied.take(k, o).is_some() {
                        fmt.key(&mut out, k, o);
                    }
                    n += 1;
                });
                let saved = if done { d.end_snapshot() } else { None };
                // Handed straight to a waiting client thread: released
                // plainly, the walker would take it again at once.
                parking_lot::MutexGuard::unlock_fair(shard);
                copied.write(|k, o| fmt.key(&mut out, k, o));
                walk.keys_processed.fetch_add(n, Ordering::Relaxed);
                if key_delay_us > 0 && n > 0 {
                    delay_unless_cancelled(&walk.cancel, key_delay_us.saturating_mul(n));
                }
                if let Some(state) = saved {
                    // The copies taken while the walk ran: owned now, so
                    // they are written without holding the shard.
                    for (k, o) in state.saved.iter() {
                        if let Some(o) = o {
                            fmt.key(&mut out, k, o);
                            walk.keys_processed.fetch_add(1, Ordering::Relaxed);
                            if key_delay_us > 0 {
                                // A key changed during the walk takes its
                                // pause too (Redis's child pauses after
                                // every key it writes).
                                flush(sink, fmt, &mut out)?;
                                delay_unless_cancelled(&walk.cancel, key_delay_us);
                                if walk.cancel.load(Ordering::Relaxed) {
                                    return Err(cancelled());
                                }
                            } else if out.len() >= BATCH_BYTES {
                                flush(sink, fmt, &mut out)?;
                            }
                        }
                    }
                    drop(state);
                }
                if out.len() >= BATCH_BYTES || done {
                    flush(sink, fmt, &mut out)?;
                }
                if done {
                    break;
                }
            }
        }
    }
    fmt.footer(&mut out);
    flush(sink, fmt, &mut out)?;
    let trailer = fmt.trailer();
    sink.write_all(&trailer)?;
    Ok(())
}

/// A snapshot with no keys: the header, `functions`, the footer (what
/// redis-cli --functions-rdb asks a primary for).
pub fn write_nothing_but(functions: &[Vec<u8>], fmt: &mut dyn FormatCrc, sink: &mut Vec<u8>) {
    let mut out = Vec::new();
    fmt.header(&mut out);
    fmt.functions(&mut out, functions);
    fmt.footer(&mut out);
    fmt.update(&out);
    sink.extend_from_slice(&out);
    sink.extend_from_slice(&fmt.trailer());
}

/// Writes the whole keyspace while the caller holds every shard (SAVE,
/// DEBUG RELOAD, SHUTDOWN): no marks needed, nothing changes meanwhile.
pub fn write_locked(
    locks: &mut ShardLocks<'_>,
    databases: usize,
    functions: &[Vec<u8>],
    fmt: &mut dyn FormatCrc,
    sink: &mut dyn Write,
    key_delay_us: u64,
) -> io::Result<()> {
    let mut out = Vec::with_capacity(BATCH_BYTES * 2);
    fmt.header(&mut out);
    fmt.functions(&mut out, functions);
    for db in 0..databases {
        let (keys, expires) = locks.held().fold((0u64, 0u64), |(k, e), s| {
            (
                k + s.dbs[db].len() as u64,
                e + s.dbs[db].volatile_len() as u64,
            )
        });
        if keys == 0 {
            continue;
        }
        fmt.begin_db(&mut out, db, keys, expires);
        for shard in locks.held() {
            for (k, o) in shard.dbs[db].iter() {
                fmt.key(&mut out, k, o);
                if key_delay_us > 0 {
                    // rdb-key-save-delay: the file grows key by key.
                    flush(sink, fmt, &mut out)?;
                    sink.flush()?;
                    std::thread::sleep(std::time::Duration::from_micros(key_delay_us));
                } else if out.len() >= BATCH_BYTES {
                    flush(sink, fmt, &mut out)?;
                }
            }
        }
    }
    fmt.footer(&mut out);
    flush(sink, fmt, &mut out)?;
    let trailer = fmt.trailer();
    sink.write_all(&trailer)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::AccessPolicy;

    fn string(len: usize) -> Object {
        Object::new(Value::str(&vec![b'v'; len]), AccessPolicy::default(), 0)
    }

    #[test]
    fn small_values_are_copied_and_given_back_in_order() {
        let mut copied = Copied::default();
        let (a, b, big) = (
            string(100),
            string(Copied::MAX_STRING),
            string(Copied::MAX_STRING + 1),
        );
        assert!(copied.take(b"a", &a).is_none());
        assert!(copied.take(b"bb", &b).is_none());
        assert!(std::ptr::eq(copied.take(b"big", &big).unwrap(), &big));
        let mut seen = Vec::new();
        copied.write(|k, o| match &o.value {
            Value::Str(s) => seen.push((k.to_vec(), s.len())),
            _ => unreachable!(),
        });
        assert_eq!(
            seen,
            [(b"a".to_vec(), 100), (b"bb".to_vec(), Copied::MAX_STRING)]
        );
        copied.write(|_, _| panic!("written twice"));
    }
}
