//! The process's memory figures for INFO memory (allocator_*, used_memory_rss):
//! the allocator's own statistics when the host installed one (the server
//! uses jemalloc, as Redis does), otherwise the process's resident set.
//! They are the whole process's; used_memory is the engine's own
//! ([`Engine::used_memory`](crate::Engine::used_memory)).

use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, Default)]
pub struct AllocatorStats {
    /// Bytes handed out to the program (INFO used_memory).
    pub allocated: u64,
    /// Bytes in active pages.
    pub active: u64,
    /// Bytes resident in physical memory.
    pub resident: u64,
    /// The process's resident set (INFO used_memory_rss).
    pub rss: u64,
    pub allocator: &'static str,
}

/// What the host's allocator offers beyond the figures: its statistics
/// report (MEMORY MALLOC-STATS), its tuning keys (DEBUG MALLCTL and
/// MALLCTL-STR) and the purge of its dirty pages (MEMORY PURGE). The
/// allocator is the process's, so this is installed once for all engines.
pub struct Allocator {
    pub stats: fn() -> AllocatorStats,
    /// The allocator's own statistics, as text (jemalloc's
    /// malloc_stats_print).
    pub report: fn() -> Vec<u8>,
    /// Reads a numeric key and, with a value, writes it (Redis's
    /// mallctl_int): the old value, or None when only written, or the
    /// error's text (strerror).
    pub ctl_int: fn(name: &str, value: Option<i64>) -> Result<Option<i64>, String>,
    /// The same for a string key (Redis's mallctl_string).
    pub ctl_str: fn(name: &str, value: Option<&str>) -> Result<Option<String>, String>,
    /// Returns dirty pages to the system; whether it worked.
    pub purge: fn() -> bool,
    /// Bytes this thread allocated and has not freed, as the allocator
    /// counts them (for used_memory_startup).
    pub thread_net: fn() -> u64,
}

static PROVIDER: OnceLock<Allocator> = OnceLock::new();

/// Installs the allocator's hooks (once, at startup).
pub fn set_allocator(a: Allocator) {
    let _ = PROVIDER.set(a);
}

/// The installed allocator's hooks, if the host installed any.
pub fn allocator() -> Option<&'static Allocator> {
    PROVIDER.get()
}

fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    pages * page
}

pub fn stats() -> AllocatorStats {
    match PROVIDER.get() {
        Some(a) => {
            let mut s = (a.stats)();
            s.rss = rss();
            if s.resident == 0 {
                s.resident = s.rss;
            }
            s
        }
        None => {
            let r = rss();
            AllocatorStats {
                allocated: r,
                active: r,
                resident: r,
                rss: r,
                allocator: "libc",
            }
        }
    }
}

pub fn total_system_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) }.max(0) as u64;
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
    pages * page
}
