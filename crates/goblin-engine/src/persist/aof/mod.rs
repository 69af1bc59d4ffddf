//! The append-only file, as Redis 7.0 keeps it: a directory
//! (`appenddirname`) holding a manifest, one base file (an RDB snapshot or
//! commands) and incremental files of commands in RESP.
//!
//! **Logging.** After a command that changed data, `Engine::call` hands
//! its records (the call itself, or the replacement commands it chose, see
//! `Ctx::propagate_as`) to [`Aof::append`] while the command still holds its
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
//! When the disk fails, the log refuses writes and recovers by itself
//! (the overview of writer.rs).
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

use super::rdb;
use crate::engine::Engine;
use crate::keyspace::{Object, Value};
use crate::log;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

mod manifest;
mod replay;
mod writer;
use crate::propagate::encode_command;
pub use crate::util::strerror;
pub use manifest::{
    create_dir, read_manifest, sync_dir, write_atomically, FileKind, Manifest, ManifestFile,
    ReplaceError,
};
pub use replay::{load_all, load_file, LoadFailure, LoadOutcome};
pub use writer::{Aof, Fsync, LogError};

/// Where the log lives: `dir/appenddirname`, files named after
/// `appendfilename`.
pub fn paths(engine: &Engine) -> (PathBuf, String) {
    let dir = PathBuf::from(engine.config().dir()).join(engine.config().appenddirname());
    (dir, engine.config().appendfilename())
}

// ---------------------------------------------------------------------------
// Opening at startup / when enabled

/// Writes a new base file holding the current data through a temp file,
/// removed when a step fails.
fn create_base(engine: &Arc<Engine>, dir: &Path, base: &str, rdb_format: bool) -> io::Result<()> {
    let tmp = dir.join(format!("temp-{base}"));
    let written = (|| {
        let mut locks = engine.keyspace().lock_all();
        let mut file = io::BufWriter::new(File::create(&tmp)?);
        crate::persist::write_base(engine, &mut locks, &mut file, rdb_format)?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, dir.join(base))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Opens the log after loading (aofOpenIfNeededOnServerStart): creates
/// the directory, a base file holding the current data when there is none,
/// an incr file when there is none, and starts appending.
pub fn open_on_start(engine: &Arc<Engine>) -> io::Result<()> {
    let (dir, name) = paths(engine);
    create_dir(&dir)?;
    let mut manifest = read_manifest(&dir, &name).map_err(io::Error::other)?;
    let aof = &engine.persist().aof;
    // Files this function creates, removed again when it fails: the
    // directory is left as it was found.
    let mut created: Vec<PathBuf> = Vec::new();
    let opened = (|| {
        // A base is created only for a log that has no file at all (Redis
        // does the same: a log of incr files alone stays as it is).
        if manifest.base.is_none() && manifest.incrs.is_empty() {
            let rdb_format = engine.config().aof_use_rdb_preamble();
            let seq = manifest.base_seq + 1;
            let base = format!(
                "{name}.{seq}.base.{}",
                if rdb_format { "rdb" } else { "aof" }
            );
            log::notice(&format!("Creating AOF base file {base} on server start"));
            create_base(engine, &dir, &base, rdb_format)?;
            created.push(dir.join(&base));
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
                created.push(dir.join(&n));
                n
            }
        };
        let incr = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(&incr_name))?;
        write_atomically(
            &dir,
            &format!("{name}.manifest"),
            manifest.render().as_bytes(),
        )?;
        Ok(incr)
    })();
    let incr = match opened {
        Ok(incr) => incr,
        Err(e) => {
            for path in created {
                let _ = std::fs::remove_file(path);
            }
            return Err(e);
        }
    };
    let size_of = |n: &str| std::fs::metadata(dir.join(n)).map(|m| m.len()).unwrap_or(0);
    let base_size = manifest.base.as_ref().map_or(0, |b| size_of(&b.name));
    let total = base_size + manifest.incrs.iter().map(|i| size_of(&i.name)).sum::<u64>();
    aof.base_size.store(base_size, Ordering::Relaxed);
    aof.current_size.store(total, Ordering::Relaxed);
    aof.set_policy(Fsync::parse(&engine.config().appendfsync()));
    aof.set_timestamps(engine.config().aof_timestamp_enabled());
    let started = aof.open(dir, name, manifest, incr);
    engine.update_expiry_propagation();
    started
}

/// Starts appending to a fresh incr file that a rewrite about to run will
/// pair with its base (CONFIG SET appendonly yes). The caller holds every
/// shard; the manifest is written when the rewrite installs the base.
pub fn open_for_rewrite(engine: &Arc<Engine>) -> io::Result<String> {
    let (dir, name) = paths(engine);
    create_dir(&dir)?;
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
    // Appending (a short write is cut back with ftruncate), from empty.
    let incr = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(&incr_name))?;
    incr.set_len(0)?;
    let aof = &engine.persist().aof;
    aof.current_size.store(0, Ordering::Relaxed);
    aof.set_policy(Fsync::parse(&engine.config().appendfsync()));
    aof.set_timestamps(engine.config().aof_timestamp_enabled());
    let started = aof.open(dir, name, manifest, incr);
    engine.update_expiry_propagation();
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
