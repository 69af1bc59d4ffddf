//! The slow log (Redis's slowlog.c): the most recent commands that ran for
//! at least `slowlog-log-slower-than` microseconds, newest first, at most
//! `slowlog-max-len` of them.
//!
//! Nothing here runs per command: the dispatcher compares a command's
//! duration with one mirrored threshold (`Config::watch_us`) and calls in
//! only when it crossed it, which a healthy server rarely does.

use parking_lot::Mutex;
use std::collections::VecDeque;

/// SLOWLOG_ENTRY_MAX_ARGC and SLOWLOG_ENTRY_MAX_STRING.
const MAX_ARGC: usize = 32;
const MAX_STRING: usize = 128;

pub struct Entry {
    pub id: u64,
    /// Unix seconds.
    pub time: u64,
    /// Microseconds.
    pub duration: u64,
    pub argv: Vec<Vec<u8>>,
    /// The client's address (ip:port).
    pub peer: String,
    pub name: Vec<u8>,
}

#[derive(Default)]
pub struct SlowLog {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: VecDeque<Entry>,
    next_id: u64,
}

/// Arguments Redis replaces by "(redacted)" before a command reaches the
/// slow log or MONITOR (redactClientCommandArgument): passwords of AUTH,
/// HELLO AUTH and MIGRATE AUTH/AUTH2, ACL SETUSER's name and rules, and
/// the values of sensitive parameters in CONFIG SET.
pub fn redacted(name: &str, argv: &[&[u8]]) -> Vec<bool> {
    let mut r = vec![false; argv.len()];
    match name {
        "auth" => r.iter_mut().skip(1).for_each(|x| *x = true),
        "hello" => {
            let mut j = 2;
            while j < argv.len() {
                if argv[j].eq_ignore_ascii_case(b"AUTH") && j + 2 < argv.len() {
                    r[j + 1] = true;
                    r[j + 2] = true;
                    j += 3;
                } else if argv[j].eq_ignore_ascii_case(b"SETNAME") && j + 1 < argv.len() {
                    j += 2;
                } else {
                    break;
                }
            }
        }
        "acl|setuser" => r.iter_mut().skip(2).for_each(|x| *x = true),
        "config|set" => {
            for j in (2..argv.len().saturating_sub(1)).step_by(2) {
                let param = String::from_utf8_lossy(argv[j]);
                if crate::config::spec(&param)
                    .is_some_and(|s| s.flags & crate::config::SENSITIVE != 0)
                {
                    r[j + 1] = true;
                }
            }
        }
        "migrate" => {
            let mut j = 6;
            while j < argv.len() {
                if argv[j].eq_ignore_ascii_case(b"AUTH") && j + 1 < argv.len() {
                    r[j + 1] = true;
                    j += 2;
                } else if argv[j].eq_ignore_ascii_case(b"AUTH2") && j + 2 < argv.len() {
                    r[j + 1] = true;
                    r[j + 2] = true;
                    j += 3;
                } else if argv[j].eq_ignore_ascii_case(b"KEYS") {
                    break;
                } else {
                    j += 1;
                }
            }
        }
        _ => {}
    }
    r
}

impl SlowLog {
    /// Redis's slowlogCreateEntry and slowlogPushEntryIfNeeded: at most 32
    /// arguments (the last one then says how many more there were), each
    /// cut at 128 bytes, newest first, trimmed to `max_len`.
    pub fn push(
        &self,
        fullname: &str,
        argv: &[&[u8]],
        duration_us: u64,
        peer: &str,
        name: &[u8],
        max_len: usize,
    ) {
        let hidden = redacted(fullname, argv);
        let argc = argv.len().min(MAX_ARGC);
        let mut args = Vec::with_capacity(argc);
        for (j, a) in argv.iter().take(argc).enumerate() {
            if argc != argv.len() && j == argc - 1 {
                args.push(format!("... ({} more arguments)", argv.len() - argc + 1).into_bytes());
            } else if hidden[j] {
                args.push(b"(redacted)".to_vec());
            } else if a.len() > MAX_STRING {
                let mut s = a[..MAX_STRING].to_vec();
                s.extend_from_slice(
                    format!("... ({} more bytes)", a.len() - MAX_STRING).as_bytes(),
                );
                args.push(s);
            } else {
                args.push(a.to_vec());
            }
        }
        let mut inner = self.inner.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.entries.push_front(Entry {
            id,
            time: crate::util::time::now_ms() / 1000,
            duration: duration_us,
            argv: args,
            peer: peer.to_string(),
            name: name.to_vec(),
        });
        inner.entries.truncate(max_len);
    }

    /// Drops the oldest entries beyond `max_len` (slowlog-max-len lowered).
    pub fn trim(&self, max_len: usize) {
        self.inner.lock().entries.truncate(max_len);
    }

    pub fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn reset(&self) {
        self.inner.lock().entries.clear();
    }

    /// Calls `f` with the newest `count` entries.
    pub fn with_newest<R>(
        &self,
        count: usize,
        f: impl FnOnce(&mut dyn Iterator<Item = &Entry>) -> R,
    ) -> R {
        let inner = self.inner.lock();
        let mut it = inner.entries.iter().take(count);
        f(&mut it)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_trimmed_and_redacted() {
        let log = SlowLog::default();
        let many: Vec<Vec<u8>> = (0..40).map(|i| i.to_string().into_bytes()).collect();
        let argv: Vec<&[u8]> = many.iter().map(|a| a.as_slice()).collect();
        log.push("sadd", &argv, 5, "1.2.3.4:5", b"", 10);
        let long = vec![b'A'; 130];
        log.push("auth", &[b"auth", b"secret"], 5, "", b"n", 10);
        log.push("set", &[b"set", &long], 5, "", b"", 10);
        log.with_newest(10, |it| {
            let e: Vec<&Entry> = it.collect();
            assert_eq!(e.len(), 3);
            assert_eq!(e[0].argv[1].len(), 128 + "... (2 more bytes)".len());
            assert_eq!(e[1].argv[1], b"(redacted)");
            assert_eq!(e[2].argv.len(), 32);
            assert_eq!(e[2].argv[31], b"... (9 more arguments)");
            assert_eq!(e[2].id, 0);
        });
        log.trim(1);
        assert_eq!(log.len(), 1);
    }
}
