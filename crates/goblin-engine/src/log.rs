//! Where the engine's log lines go. The host (the server) installs a sink
//! that writes Redis-style log lines; without one they are dropped.

use std::sync::OnceLock;

static SINK: OnceLock<fn(&str)> = OnceLock::new();

/// Installs the log sink (once, at startup).
pub fn set_sink(f: fn(&str)) {
    let _ = SINK.set(f);
}

pub fn warning(msg: &str) {
    if let Some(f) = SINK.get() {
        f(msg);
    }
}
