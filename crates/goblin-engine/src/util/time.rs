//! Wall-clock time in the units Redis uses.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix time in milliseconds.
#[inline]
pub fn now_ms() -> u64 {
    let (sec, nsec) = clock(libc::CLOCK_REALTIME);
    sec * 1000 + nsec / 1_000_000
}

/// Unix time in microseconds.
#[inline]
pub fn now_us() -> u64 {
    let (sec, nsec) = clock(libc::CLOCK_REALTIME);
    sec * 1_000_000 + nsec / 1000
}

/// Unix time in nanoseconds (CL.THROTTLE keeps its state at this
/// resolution, as redis-cell does).
#[inline]
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// A monotonic clock in nanoseconds, for measuring how long a command ran
/// (INFO commandstats).
#[inline]
pub fn monotonic_ns() -> u64 {
    let (sec, nsec) = clock(libc::CLOCK_MONOTONIC);
    sec * 1_000_000_000 + nsec
}

/// One clock_gettime, as (seconds, nanoseconds). The clocks above read it
/// with plain integer arithmetic: SystemTime's and Instant's checked
/// timespec subtractions cost more than the read itself, several times per
/// command. A clock before 1970 reads as 0.
#[inline]
fn clock(id: libc::clockid_t) -> (u64, u64) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec; both clocks used here
    // always exist on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    if ts.tv_sec < 0 {
        return (0, 0);
    }
    (ts.tv_sec as u64, ts.tv_nsec as u64)
}
