//! Full synchronizations: a snapshot for replicas that cannot continue
//! from the backlog (Redis's replicationStartPendingFork and
//! rdbSaveToSlavesSockets).
//!
//! A replica that needs one waits in WAIT_BGSAVE_START. When no other
//! snapshot runs, the waiting replicas are started together, with every
//! shard held for an instant: the snapshot's point in time, and the stream
//! offset their stream continues from. Disk-based, the snapshot is
//! dump.rdb (a BGSAVE) and each replica is sent the file once it is saved;
//! diskless, it is written to the replicas as it is produced, through a
//! bounded channel each (so a slow replica slows the snapshot rather than
//! filling memory). With repl-diskless-sync-delay, a diskless sync waits
//! for more replicas to come before it starts, as Redis does.

use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{state, SyncStart, Transfer};
use crate::util::time::now_ms;
use crate::Engine;

/// Chunks of a diskless snapshot in flight to one replica.
const CHANNEL_CHUNKS: usize = 16;
const CHUNK: usize = 64 * 1024;

/// Where a snapshot job writes.
pub enum Target {
    /// dump.rdb.
    File,
    /// The sockets of replicas (diskless).
    Replicas,
}

/// Starts the full synchronizations that are due: at once for disk-based
/// ones, after repl-diskless-sync-delay (or as soon as
/// repl-diskless-sync-max-replicas wait) for diskless ones. Nothing while
/// another snapshot runs; the cron tries again.
pub fn start_pending(engine: &Arc<Engine>) {
    if !due(engine) {
        return;
    }
    let mut locks = engine.keyspace().lock_all();
    start_pending_locked(engine, &mut locks);
}

/// Whether some replica waits for a snapshot that may start now.
fn due(engine: &Engine) -> bool {
    let waiting: Vec<_> = engine
        .repl()
        .replicas()
        .into_iter()
        .filter(|x| x.state() == state::WAIT_BGSAVE_START)
        .collect();
    !waiting.is_empty() && engine.persist().running().is_none() && !delayed(engine, &waiting)
}

/// A diskless sync still waiting for its delay (and for
/// repl-diskless-sync-max-replicas replicas).
fn delayed(engine: &Engine, waiting: &[Arc<super::Replica>]) -> bool {
    let config = engine.config();
    let diskless = config.repl_diskless_sync() && waiting.iter().all(|x| x.conf.capa_eof);
    if !diskless {
        return false;
    }
    let delay_ms = config.repl_diskless_sync_delay().max(0) as u64 * 1000;
    let max = config.repl_diskless_sync_max_replicas().max(0) as usize;
    let oldest = waiting.iter().map(|x| x.wait_since_ms).min().unwrap_or(0);
    let enough = max > 0 && waiting.len() >= max;
    !enough && now_ms().saturating_sub(oldest) < delay_ms
}

/// `start_pending`, with every shard held by the caller.
pub fn start_pending_locked(engine: &Arc<Engine>, locks: &mut crate::keyspace::ShardLocks<'_>) {
    let r = engine.repl();
    let waiting: Vec<_> = r
        .replicas()
        .into_iter()
        .filter(|x| x.state() == state::WAIT_BGSAVE_START)
        .collect();
    if waiting.is_empty() || engine.persist().running().is_some() {
        return;
    }
    let config = engine.config();
    let diskless = config.repl_diskless_sync() && waiting.iter().all(|x| x.conf.capa_eof);
    if delayed(engine, &waiting) {
        return;
    }
    let offset = r.stream.offset();
    // The replicas' streams start here, with a SELECT.
    r.stream.forget_db();
    let replid = r.ids().replid;
    let mut starts = Vec::new();
    let target = if diskless {
        let mut senders = Vec::new();
        for _ in &waiting {
            let (tx, rx) = tokio::sync::mpsc::channel(CHANNEL_CHUNKS);
            let mut mark = [0u8; 40];
            for b in mark.iter_mut() {
                *b = b"0123456789abcdef"[fastrand::usize(0..16)];
            }
            senders.push(tx);
            starts.push(Transfer::Socket { mark, chunks: rx });
        }
        *r.socket_targets.lock() = senders;
        Target::Replicas
    } else {
        let (tx, rx) = tokio::sync::watch::channel(None);
        *r.disk_done.lock() = Some(tx);
        for _ in &waiting {
            starts.push(Transfer::Disk { done: rx.clone() });
        }
        Target::File
    };
    match &target {
        Target::Replicas => {
            crate::log::notice("Starting BGSAVE for SYNC with target: replicas sockets")
        }
        Target::File => crate::log::notice("Starting BGSAVE for SYNC with target: disk"),
    }
    if let Err(e) =
        crate::persist::start_job_for(engine, locks, crate::persist::JobKind::Rdb, target)
    {
        crate::log::warning(&format!("BGSAVE for replication failed: {e}"));
        r.socket_targets.lock().clear();
        *r.disk_done.lock() = None;
        for w in &waiting {
            w.failed.store(true, Ordering::Release);
            w.info.kill();
        }
        return;
    }
    let list = r.replicas.lock();
    for (w, transfer) in waiting.iter().zip(starts) {
        if !list.iter().any(|x| Arc::ptr_eq(x, w)) {
            continue;
        }
        if !r.stream.attach(w.reader.clone(), offset) {
            w.failed.store(true, Ordering::Release);
            w.info.kill();
            continue;
        }
        *w.start.lock() = Some(SyncStart {
            replid: replid.clone(),
            offset,
            transfer,
        });
        w.state.store(state::WAIT_BGSAVE_END, Ordering::Release);
        w.info.wake.notify_one();
    }
}

/// The sink of a diskless snapshot: chunks to every replica still
/// listening. Fails once none is.
pub struct SocketSink {
    senders: Vec<tokio::sync::mpsc::Sender<Result<bytes::Bytes, ()>>>,
    buf: Vec<u8>,
}

impl SocketSink {
    pub fn take(engine: &Engine) -> SocketSink {
        SocketSink {
            senders: std::mem::take(&mut *engine.repl().socket_targets.lock()),
            buf: Vec::with_capacity(CHUNK),
        }
    }

    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = bytes::Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.senders
            .retain(|tx| tx.blocking_send(Ok(chunk.clone())).is_ok());
        if self.senders.is_empty() {
            return Err(io::Error::other(
                "all the replicas of the diskless sync are gone",
            ));
        }
        Ok(())
    }

    /// The snapshot ended: Ok, or its failure, to each replica.
    pub fn finish(mut self, result: &io::Result<()>) {
        match result {
            Ok(()) => {
                let _ = self.send();
                for tx in &self.senders {
                    let _ = tx.blocking_send(Ok(bytes::Bytes::new()));
                }
            }
            Err(_) => {
                for tx in &self.senders {
                    let _ = tx.blocking_send(Err(()));
                }
            }
        }
    }
}

impl Write for SocketSink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A disk-based sync's save ended.
pub fn disk_done(engine: &Engine, ok: bool) {
    if let Some(tx) = engine.repl().disk_done.lock().take() {
        tx.send_replace(Some(ok));
    }
}
