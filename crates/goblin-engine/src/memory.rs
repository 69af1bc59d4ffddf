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
    pub allocator: &'static str,
}

static PROVIDER: OnceLock<fn() -> AllocatorStats> = OnceLock::new();

/// Installs the allocator statistics provider (once, at startup).
pub fn set_provider(f: fn() -> AllocatorStats) {
    let _ = PROVIDER.set(f);
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
        Some(f) => {
            let mut s = f();
            if s.resident == 0 {
                s.resident = rss();
            }
            s
        }
        None => {
            let r = rss();
            AllocatorStats {
                allocated: r,
                active: r,
                resident: r,
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
