//! MONITOR: clients that receive every command the server runs, as Redis's
//! replicationFeedMonitors formats it
//! (`+1339518083.107412 [0 127.0.0.1:60866] "set" "k" "v"`).
//!
//! A command pays one relaxed load of the number of monitors; only while
//! there are some is its line formatted and appended to each monitor's
//! pending output (`ClientInfo::push`), which the monitor's connection
//! sends when woken.

use crate::client::ClientInfo;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Default)]
pub struct Monitors {
    list: Mutex<Vec<Arc<ClientInfo>>>,
    active: AtomicUsize,
}

impl Monitors {
    #[inline]
    pub fn any(&self) -> bool {
        self.active.load(Ordering::Relaxed) != 0
    }

    pub fn add(&self, info: &Arc<ClientInfo>) {
        let mut list = self.list.lock();
        if !list.iter().any(|m| m.id == info.id) {
            list.push(info.clone());
            self.active.store(list.len(), Ordering::Relaxed);
        }
    }

    pub fn remove(&self, id: u64) {
        let mut list = self.list.lock();
        list.retain(|m| m.id != id);
        self.active.store(list.len(), Ordering::Relaxed);
    }

    /// Sends one command to every monitor. `source` is "lua" for commands
    /// of scripts, else the client's address; arguments Redis redacts are
    /// shown as "(redacted)".
    pub fn feed(&self, db: usize, source: &str, fullname: &str, argv: &[&[u8]]) {
        let hidden = crate::slowlog::redacted(fullname, argv);
        let now = crate::util::time::now_us();
        let mut line = format!(
            "+{}.{:06} [{db} {source}] ",
            now / 1_000_000,
            now % 1_000_000
        )
        .into_bytes();
        for (j, a) in argv.iter().enumerate() {
            if j > 0 {
                line.push(b' ');
            }
            if hidden[j] {
                line.extend_from_slice(b"\"(redacted)\"");
            } else {
                repr(&mut line, a);
            }
        }
        line.extend_from_slice(b"\r\n");
        for m in self.list.lock().iter() {
            m.push(&line);
        }
    }
}

/// Redis's sdscatrepr: a quoted string with C escapes.
pub fn repr(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' | b'"' => {
                out.push(b'\\');
                out.push(c);
            }
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c),
            c => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    #[test]
    fn repr_escapes_as_redis() {
        let mut v = Vec::new();
        super::repr(&mut v, b"a\"b\\\n\x01 z");
        assert_eq!(v, b"\"a\\\"b\\\\\\n\\x01 z\"");
    }
}
