//! MONITOR: clients that receive every command the server runs, as Redis's
//! replicationFeedMonitors formats it
//! (`+1339518083.107412 [0 127.0.0.1:60866] "set" "k" "v"`).
//!
//! A command pays one relaxed load of the number of monitors; only while
//! there are some is its line formatted and appended to each monitor's
//! pending output (`ClientInfo::push`), which the monitor's connection
//! sends when woken.

use crate::client::ClientInfo;
use crate::protocol::repr;
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
