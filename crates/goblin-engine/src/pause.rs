//! CLIENT PAUSE (Redis's pauseClients): for a while, or until CLIENT
//! UNPAUSE, clients' write commands (WRITE: anything flagged write or
//! may-replicate, scripts that may write, EXEC of a transaction holding
//! such commands) or all their commands (ALL) wait before they run; keys
//! are neither expired nor evicted meanwhile, so the dataset stays as it
//! was.
//!
//! A coordinated failover (FAILOVER) and a shutdown waiting for its
//! replicas pause writes too, each for a purpose of its own (Redis 7.0's
//! PAUSE_DURING_FAILOVER and PAUSE_DURING_SHUTDOWN): without an end,
//! lifted only when the failover or the shutdown ends, and untouched by
//! CLIENT PAUSE and CLIENT UNPAUSE. The pause in effect is the strongest.
//!
//! A command pays one relaxed load of the pause state. A paused client's
//! connection waits on `Pause::wait` and then runs the command again from
//! the start, as Redis re-processes a postponed client.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

pub const NONE: u8 = 0;
pub const WRITE: u8 = 1;
pub const ALL: u8 = 2;

const FAILOVER_BIT: u8 = 1;
const SHUTDOWN_BIT: u8 = 2;

#[derive(Default)]
pub struct Pause {
    mode: AtomicU8,
    /// The pauses without an end: a bit for each purpose that holds
    /// writes (FAILOVER_BIT, SHUTDOWN_BIT).
    purposes: AtomicU8,
    /// Unix ms when the pause ends.
    end_ms: AtomicU64,
    /// Clients waiting (counted in INFO's blocked_clients, as Redis
    /// counts postponed clients).
    pub waiting: AtomicUsize,
    changed: tokio::sync::Notify,
}

impl Pause {
    /// Whether a pause was set and not yet found over (one relaxed load).
    #[inline]
    pub fn active(&self) -> bool {
        self.mode.load(Ordering::Relaxed) | self.purposes.load(Ordering::Relaxed) != NONE
    }

    /// The pause in effect now, both purposes together (NONE once CLIENT
    /// PAUSE's time is over and no failover pauses).
    #[inline]
    pub fn mode(&self, now_ms: u64) -> u8 {
        let held = if self.purposes.load(Ordering::Relaxed) != 0 {
            WRITE
        } else {
            NONE
        };
        self.client_mode(now_ms).max(held)
    }

    /// CLIENT PAUSE's pause now (NONE once its time is over).
    fn client_mode(&self, now_ms: u64) -> u8 {
        let mode = self.mode.load(Ordering::Relaxed);
        if mode == NONE || now_ms < self.end_ms.load(Ordering::Relaxed) {
            return mode;
        }
        self.unpause();
        NONE
    }

    /// Redis's pauseClients: a pause never gets shorter or weaker while
    /// one is in effect.
    pub fn pause(&self, mode: u8, end_ms: u64, now_ms: u64) {
        let current = self.client_mode(now_ms);
        if mode > current {
            self.mode.store(mode, Ordering::Relaxed);
        }
        if current == NONE || end_ms > self.end_ms.load(Ordering::Relaxed) {
            self.end_ms.store(end_ms, Ordering::Relaxed);
        }
    }

    /// CLIENT UNPAUSE, or the end of the pause: the waiting clients run
    /// (unless a failover still holds them).
    pub fn unpause(&self) {
        self.mode.store(NONE, Ordering::Relaxed);
        self.changed.notify_waiters();
    }

    /// A failover starts (`true`: writes wait until it ends) or ends.
    pub fn set_failover(&self, paused: bool) {
        self.set_purpose(FAILOVER_BIT, paused);
    }

    /// A shutdown starts waiting for its replicas (`true`: writes wait
    /// until it ends) or is cancelled.
    pub fn set_shutdown(&self, paused: bool) {
        self.set_purpose(SHUTDOWN_BIT, paused);
    }

    fn set_purpose(&self, bit: u8, paused: bool) {
        if paused {
            self.purposes.fetch_or(bit, Ordering::Relaxed);
        } else {
            self.purposes.fetch_and(!bit, Ordering::Relaxed);
            self.changed.notify_waiters();
        }
    }

    /// Whether a failover pauses writes.
    pub fn failover(&self) -> bool {
        self.purposes.load(Ordering::Relaxed) & FAILOVER_BIT != 0
    }

    /// Whether the look-ups of a command keep the expired keys they meet
    /// (they read as absent): while clients are paused, a command that
    /// does not write leaves the dataset as it is (a writer deletes them,
    /// or it could not insert over them). One relaxed load.
    #[inline]
    pub fn keeps_expired(&self, writes: bool) -> bool {
        self.active() && !writes
    }

    /// Whether a command with these (effective) flags must wait now.
    pub fn holds(&self, flags: u32, now_ms: u64) -> bool {
        use crate::command::spec::flag;
        match self.mode(now_ms) {
            NONE => false,
            ALL => true,
            _ => flags & (flag::WRITE | flag::MAY_REPLICATE) != 0,
        }
    }

    /// Waits until the pause is lifted or its time is over.
    pub async fn wait(&self) {
        loop {
            let notified = self.changed.notified();
            let now = crate::util::time::now_ms();
            if self.mode(now) == NONE {
                return;
            }
            // Only CLIENT PAUSE's pause ends by itself.
            let left = if self.client_mode(now) != NONE {
                self.end_ms.load(Ordering::Relaxed).saturating_sub(now)
            } else {
                3_600_000
            };
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(std::time::Duration::from_millis(left.max(1))) => {}
            }
        }
    }

    /// Whether expiry (active and lazy) is held back.
    pub fn expiry_paused(&self) -> bool {
        self.active() && self.mode(crate::util::time::now_ms()) != NONE
    }
}
