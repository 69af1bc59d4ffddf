//! Log lines in Redis's format ("pid:M 30 Nov 2026 22:47:07.123 * text"),
//! to the configured logfile or standard output.

use std::io::Write;
use std::sync::Mutex;

static TARGET: Mutex<Option<String>> = Mutex::new(None);
static LEVEL: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(2);

/// Sets the log file ("" = standard output) and the level
/// (debug, verbose, notice, warning).
pub fn configure(logfile: &str, level: &str) {
    *TARGET.lock().unwrap() = if logfile.is_empty() {
        None
    } else {
        Some(logfile.to_string())
    };
    let l = match level {
        "debug" => 0,
        "verbose" => 1,
        "notice" => 2,
        _ => 3,
    };
    LEVEL.store(l, std::sync::atomic::Ordering::Relaxed);
}

fn timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: localtime_r and strftime write into the buffers they are given.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::localtime_r(&secs, &mut tm) };
    let mut buf = [0u8; 64];
    let n = unsafe {
        libc::strftime(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            c"%d %b %Y %H:%M:%S".as_ptr(),
            &tm,
        )
    };
    format!(
        "{}.{:03}",
        String::from_utf8_lossy(&buf[..n]),
        now.subsec_millis()
    )
}

fn write(level: u8, mark: char, msg: &str) {
    if level < LEVEL.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let line = format!(
        "{}:M {} {} {}\n",
        std::process::id(),
        timestamp(),
        mark,
        msg
    );
    let target = TARGET.lock().unwrap().clone();
    match target {
        Some(path) => {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = f.write_all(line.as_bytes());
            }
        }
        None => {
            let _ = std::io::stdout().write_all(line.as_bytes());
        }
    }
}

pub fn verbose(msg: &str) {
    write(1, '-', msg);
}

pub fn notice(msg: &str) {
    write(2, '*', msg);
}

pub fn warning(msg: &str) {
    write(3, '#', msg);
}

/// A line at Redis's level 0 (debug) to 3 (warning): the form the engine's
/// scripts log through (redis.log).
pub fn at_level(level: u8, msg: &str) {
    let mark = match level {
        0 => '.',
        1 => '-',
        2 => '*',
        _ => '#',
    };
    write(level.min(3), mark, msg);
}
