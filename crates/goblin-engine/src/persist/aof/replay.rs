//! Loading an append-only file: its commands replayed one by one through
//! a session of the engine (so above the command layer), every shard held
//! by the caller.

use super::*;
use crate::command::table;
use crate::keyspace::ShardLocks;
use crate::protocol::ReplyWriter;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::time::Instant;

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
            let consumed = crate::persist::load_rdb_stream(engine, locks, input, true, false)
                .map_err(|e| {
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
    let old_style = PathBuf::from(engine.config().dir()).join(&name);
    if old_style.is_file()
        && (manifest.is_empty()
            || (manifest.incrs.is_empty()
                && manifest.base.as_ref().is_some_and(|b| b.name == name)
                && !dir.join(&name).is_file()))
    {
        create_dir(&dir).map_err(|e| {
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
        write_atomically(
            &dir,
            &format!("{name}.manifest"),
            manifest.render().as_bytes(),
        )
        .map_err(|e| LoadFailure(e.error.to_string()))?;
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
    let truncate_ok = engine.config().aof_load_truncated();
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
