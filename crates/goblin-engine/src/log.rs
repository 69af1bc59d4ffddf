//! Log lines from the engine (background saves, loading, the append-only
//! file). The host installs where they go (the server writes Redis's log
//! format to its logfile); without one they go to standard error.

use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Verbose,
    Notice,
    Warning,
}

static SINK: OnceLock<fn(Level, &str)> = OnceLock::new();

/// Installs the log sink (once, at startup).
pub fn set_sink(f: fn(Level, &str)) {
    let _ = SINK.set(f);
}

pub fn log(level: Level, msg: &str) {
    match SINK.get() {
        Some(f) => f(level, msg),
        None => {
            if level >= Level::Notice {
                eprintln!("{msg}");
            }
        }
    }
}

pub fn verbose(msg: &str) {
    log(Level::Verbose, msg);
}

pub fn notice(msg: &str) {
    log(Level::Notice, msg);
}

pub fn warning(msg: &str) {
    log(Level::Warning, msg);
}
