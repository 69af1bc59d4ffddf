//! The manifest of a multi-part append-only file (which files make up the
//! log, in order) and how files are replaced on disk: through a
//! temporary file, fsynced, renamed into place, its directory fsynced.

use crate::util::strerror;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

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
        crate::protocol::repr(&mut out, name.as_bytes());
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

/// A file `write_atomically` could not replace.
#[derive(Debug)]
pub struct ReplaceError {
    pub error: io::Error,
    /// The new file is in place all the same: only syncing its directory
    /// failed, so a crash may still bring the old one back.
    pub replaced: bool,
}

impl From<ReplaceError> for io::Error {
    fn from(e: ReplaceError) -> io::Error {
        e.error
    }
}

/// Writes a file through a temporary name, syncs it, renames it into
/// place and syncs the directory: a crash leaves the old or the new file,
/// never a mix. The temporary file does not outlive a failure.
pub fn write_atomically(dir: &Path, name: &str, data: &[u8]) -> Result<(), ReplaceError> {
    let tmp = dir.join(format!("temp-{name}"));
    let written = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, dir.join(name))
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(ReplaceError {
            error,
            replaced: false,
        });
    }
    sync_dir(dir).map_err(|error| ReplaceError {
        error,
        replaced: true,
    })
}

pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Creates the log's directory when it is missing, and syncs the
/// directory holding it: files synced in a directory whose own entry is
/// not on disk are lost with it on a power cut.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => sync_dir(parent),
        _ => sync_dir(Path::new(".")),
    }
}

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
