//! Replies that wait for something other than their command, as values:
//! WAIT (the replicas' acknowledgements), WAITAOF (the append-only file on
//! disk here, the replicas' FACKs), SHUTDOWN waiting for lagging replicas
//! (no reply unless it is cancelled), and every write's reply, which
//! leaves once its records are in the append-only file as `appendfsync`
//! promises. A command leaves its wait in `ClientState::handoff`; the
//! engine resolves it here as a future, and a host (a server connection,
//! the embedded Store) only awaits it, beside what it watches itself (the
//! client going away), then writes the reply.

use super::*;
use crate::client::Handoff;
use crate::persist::aof::{Fsync, LogError};
use std::time::Duration;

/// WAITAOF's error when numlocal is set and appendonly is off, checked by
/// the command and again while it waits (CONFIG SET may turn it off).
pub const WAITAOF_WITHOUT_AOF: &str =
    "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";

/// A reply that waits (see the module's doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wait {
    /// WAIT: until `replicas` replicas acknowledged `offset`, or until
    /// `deadline_ms` (Unix ms; None: no limit).
    Replicas {
        offset: u64,
        replicas: usize,
        deadline_ms: Option<u64>,
    },
    /// WAITAOF: until the append-only file is on disk up to `aof_offset`
    /// (when `local`) and `replicas` replicas have theirs up to
    /// `repl_offset`, or until `deadline_ms`.
    Aof {
        aof_offset: u64,
        repl_offset: u64,
        local: bool,
        replicas: usize,
        deadline_ms: Option<u64>,
    },
    /// SHUTDOWN waiting for lagging replicas: until it is cancelled (a
    /// shutdown that succeeds ends the process first).
    Shutdown,
}

/// How a [`Wait`] ended: what its reply says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// WAIT's count of replicas.
    Replicas(usize),
    /// WAITAOF's (local file on disk, replicas) pair.
    Aof(bool, usize),
    /// WAITAOF with numlocal while appendonly was turned off.
    AofTurnedOff,
    /// The SHUTDOWN was cancelled (SHUTDOWN ABORT, or it failed).
    ShutdownCancelled,
}

impl Resolved {
    /// Writes the reply.
    pub fn write(&self, out: &mut ReplyWriter) {
        match self {
            Resolved::Replicas(n) => out.int(*n as i64),
            Resolved::Aof(local, replicas) => {
                out.array(2);
                out.int(*local as i64);
                out.int(*replicas as i64);
            }
            Resolved::AofTurnedOff => out.error(WAITAOF_WITHOUT_AOF),
            Resolved::ShutdownCancelled => out.error(crate::shutdown::CANCELLED),
        }
    }
}

impl Handoff {
    /// The wait this handoff is; a replica's feed is none (it is given
    /// back as the error).
    pub fn into_wait(self) -> Result<Wait, Handoff> {
        match self {
            Handoff::Wait {
                offset,
                replicas,
                deadline_ms,
            } => Ok(Wait::Replicas {
                offset,
                replicas,
                deadline_ms,
            }),
            Handoff::WaitAof {
                aof_offset,
                repl_offset,
                local,
                replicas,
                deadline_ms,
            } => Ok(Wait::Aof {
                aof_offset,
                repl_offset,
                local,
                replicas,
                deadline_ms,
            }),
            Handoff::Shutdown => Ok(Wait::Shutdown),
            other => Err(other),
        }
    }
}

/// What is left of a deadline: None when it passed, an hour without one.
fn time_left(deadline_ms: Option<u64>) -> Option<Duration> {
    let now = now_ms();
    match deadline_ms {
        Some(d) if d <= now => None,
        Some(d) => Some(Duration::from_millis(d - now)),
        None => Some(Duration::from_secs(3600)),
    }
}

/// Takes a SHUTDOWN waiter off INFO's count however its wait ends (the
/// client may go away meanwhile).
struct ShutdownWaiter<'e>(&'e crate::shutdown::Shutdown);

impl Drop for ShutdownWaiter<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Engine {
    /// Resolves a wait; the future may be dropped at any point (the client
    /// went away) without leaving anything behind.
    pub async fn resolve_wait(&self, wait: &Wait) -> Resolved {
        match *wait {
            Wait::Replicas {
                offset,
                replicas,
                deadline_ms,
            } => Resolved::Replicas(self.wait_replicas(offset, replicas, deadline_ms).await),
            Wait::Aof {
                aof_offset,
                repl_offset,
                local,
                replicas,
                deadline_ms,
            } => {
                self.wait_aof(aof_offset, repl_offset, local, replicas, deadline_ms)
                    .await
            }
            Wait::Shutdown => {
                // SHUTDOWN counted the waiter (Redis's BLOCKED_SHUTDOWN).
                let state = &self.shutdown_state;
                let _waiter = ShutdownWaiter(state);
                let mut cancelled = state.cancellations();
                // Cancelled between the command and now: answered at once.
                if state.initiated() {
                    let _ = cancelled.changed().await;
                }
                Resolved::ShutdownCancelled
            }
        }
    }

    async fn wait_replicas(&self, offset: u64, wanted: usize, deadline_ms: Option<u64>) -> usize {
        let r = &self.repl;
        loop {
            let notified = r.acks.notified();
            let acked = r.acked(offset);
            if acked >= wanted {
                return acked;
            }
            let Some(left) = time_left(deadline_ms) else {
                return acked;
            };
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(left) => {}
            }
        }
    }

    async fn wait_aof(
        &self,
        aof_offset: u64,
        repl_offset: u64,
        wants_local: bool,
        wanted: usize,
        deadline_ms: Option<u64>,
    ) -> Resolved {
        let aof = &self.persist.aof;
        let r = &self.repl;
        loop {
            if wants_local && !aof.is_on() {
                return Resolved::AofTurnedOff;
            }
            let notified = r.acks.notified();
            let local = aof.is_on() && aof.fsynced() >= aof_offset;
            let replicas = r.aof_acked(repl_offset);
            if (local || !wants_local) && replicas >= wanted {
                return Resolved::Aof(local, replicas);
            }
            let Some(left) = time_left(deadline_ms) else {
                return Resolved::Aof(local, replicas);
            };
            // appendonly may be turned off meanwhile: looked at again
            // every 100 ms.
            let left = left.min(Duration::from_millis(100));
            tokio::select! {
                _ = aof.wait_fsynced(aof_offset), if wants_local && !local => {}
                _ = notified => {}
                _ = tokio::time::sleep(left) => {}
            }
        }
    }

    /// Before a reply leaves, the writes it acknowledges (up to the
    /// append-only file's `offset`, `ClientState::aof_offset`) must have
    /// reached the file: on disk under appendfsync always, handed to the
    /// kernel otherwise, as Redis writes its AOF buffer before it sends
    /// replies. An error means they cannot (the disk is full or failing):
    /// the reply must not leave.
    ///
    /// `write_here`: a host with no event loop of its own to wait in (the
    /// embedded Store) writes the buffer itself, on tokio's blocking pool,
    /// rather than waiting for the writer thread's next turn.
    pub async fn await_written(
        self: &Arc<Self>,
        offset: u64,
        write_here: bool,
    ) -> Result<(), LogError> {
        let aof = &self.persist.aof;
        if offset <= aof.synced() {
            return Ok(());
        }
        if write_here && aof.policy() != Fsync::Always && aof.written() < offset {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let engine = self.clone();
                let write = rt.spawn_blocking(move || engine.persist.aof.write_through(offset));
                return write.await.unwrap_or_else(|_| aof.write_through(offset));
            }
        }
        aof.await_logged(offset).await
    }
}
