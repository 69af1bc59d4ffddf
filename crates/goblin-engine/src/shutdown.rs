//! A shutdown that waits for lagging replicas (Redis 7.0's
//! shutdown-timeout): SHUTDOWN, SIGTERM or SIGINT without NOW, while some
//! replica has not acknowledged the whole replication stream, pauses
//! writes, asks the replicas for their offsets, and leaves it to the cron
//! to finish the shutdown once every replica caught up or the timeout
//! passed (Redis's prepareForShutdown, isReadyToShutdown and the
//! serverCron check before finishShutdown). The SHUTDOWN clients wait
//! meanwhile; if the shutdown fails (the final save cannot be written) or
//! SHUTDOWN ABORT cancels it, they get "Errors trying to SHUTDOWN. Check
//! logs." and the server goes on.

use crate::engine::{Engine, ShutdownMode};
use crate::persist::ShutdownFlags;
use crate::util::time::now_ms;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The shutdown in progress, if any.
pub struct Shutdown {
    /// Unix ms when the wait for replicas ends; 0 when no shutdown is
    /// initiated (Redis's shutdown_mstime).
    deadline_ms: AtomicU64,
    flags: Mutex<ShutdownFlags>,
    /// Counts the initiated shutdowns that were cancelled: a SHUTDOWN
    /// client waiting on one answers its error when it moves on.
    cancelled: tokio::sync::watch::Sender<u64>,
    /// SHUTDOWN clients waiting (INFO's blocked_clients counts them, as
    /// Redis's BLOCKED_SHUTDOWN clients).
    pub waiting: AtomicUsize,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown {
            deadline_ms: AtomicU64::new(0),
            flags: Mutex::new(ShutdownFlags::default()),
            cancelled: tokio::sync::watch::channel(0).0,
            waiting: AtomicUsize::new(0),
        }
    }
}

/// The error of the SHUTDOWN clients whose shutdown was cancelled.
pub const CANCELLED: &str = "ERR Errors trying to SHUTDOWN. Check logs.";

/// What `Engine::begin_shutdown` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Begun {
    /// Shut down now: nothing to wait for.
    Now,
    /// The shutdown waits for replicas; the cron finishes it.
    Waiting,
}

impl Shutdown {
    /// Whether a shutdown waits for its replicas (Redis's
    /// isShutdownInitiated).
    pub fn initiated(&self) -> bool {
        self.deadline_ms.load(Ordering::Acquire) != 0
    }

    /// INFO's shutdown_in_milliseconds: how long the wait may still last.
    pub fn remaining_ms(&self, now_ms: u64) -> Option<i64> {
        match self.deadline_ms.load(Ordering::Acquire) {
            0 => None,
            d => Some(d as i64 - now_ms as i64),
        }
    }

    /// A receiver that changes when an initiated shutdown is cancelled.
    pub fn cancellations(&self) -> tokio::sync::watch::Receiver<u64> {
        self.cancelled.subscribe()
    }
}

impl Engine {
    /// Redis's prepareForShutdown up to finishShutdown: whether the
    /// shutdown can proceed now, or waits for lagging replicas (and then
    /// writes are paused and the replicas asked for their offsets). A
    /// shutdown already waiting makes this one wait with it.
    pub fn begin_shutdown(&self, flags: ShutdownFlags) -> Begun {
        let s = self.shutdown_state();
        if s.initiated() {
            return Begun::Waiting;
        }
        crate::log::warning("User requested shutdown...");
        let timeout_s = self.config().shutdown_timeout();
        if flags.now || timeout_s == 0 || self.ready_to_shutdown() {
            return Begun::Now;
        }
        *s.flags.lock() = flags;
        let now = now_ms();
        s.deadline_ms.store(
            now.saturating_add(timeout_s.max(0) as u64 * 1000).max(1),
            Ordering::Release,
        );
        // Replicas paused by CLIENT PAUSE were already asked (Redis sends
        // GETACK only when no pause holds the stream still).
        if !self.pause().active() {
            self.repl().stream.append_bytes(crate::repl::GETACK);
        }
        self.pause().set_shutdown(true);
        crate::log::notice("Waiting for replicas before shutting down.");
        Begun::Waiting
    }

    /// Redis's isReadyToShutdown: every replica acknowledged the whole
    /// stream.
    fn ready_to_shutdown(&self) -> bool {
        let offset = self.repl().stream.offset();
        self.repl()
            .replicas()
            .iter()
            .all(|r| r.ack.load(Ordering::Acquire) == offset)
    }

    /// The cron's look at a waiting shutdown: once the replicas caught up
    /// or the time is over, it is finished (the final save, then the
    /// server stops) or, when that fails, cancelled.
    pub(crate) fn shutdown_cron(&self) {
        let s = self.shutdown_state();
        let deadline = s.deadline_ms.load(Ordering::Acquire);
        if deadline == 0 || (now_ms() < deadline && !self.ready_to_shutdown()) {
            return;
        }
        let flags = *s.flags.lock();
        match crate::persist::prepare_shutdown(&self.arc(), flags) {
            Ok(()) => self.request_shutdown(match flags.save {
                Some(true) => ShutdownMode::Save,
                Some(false) => ShutdownMode::NoSave,
                None => ShutdownMode::Default,
            }),
            Err(_) => self.cancel_shutdown(),
        }
    }

    /// Redis's cancelShutdown: the waiting SHUTDOWN clients get their
    /// error, writes resume, a pending signal is forgotten.
    fn cancel_shutdown(&self) {
        let s = self.shutdown_state();
        s.deadline_ms.store(0, Ordering::Release);
        *s.flags.lock() = ShutdownFlags::default();
        self.cancel_shutdown_signal();
        s.cancelled.send_modify(|n| *n += 1);
        self.pause().set_shutdown(false);
    }

    /// SHUTDOWN ABORT (Redis's abortShutdown): cancels a shutdown that
    /// waits for replicas, or a signal's not yet acted on. Whether there
    /// was one.
    pub fn abort_shutdown(&self) -> bool {
        let aborted = if self.shutdown_state().initiated() {
            self.cancel_shutdown();
            true
        } else {
            self.cancel_shutdown_signal()
        };
        if aborted {
            crate::log::notice("Shutdown manually aborted.");
        }
        aborted
    }
}
