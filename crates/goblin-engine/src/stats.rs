//! Server statistics (INFO stats, commandstats, errorstats).
//!
//! Counters that change on every command are kept per thread: each thread
//! increments its own block, so threads never contend for a cache line, and
//! INFO adds the blocks up.

use crate::latency::{Histogram, Merged};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Default)]
pub struct CmdCounters {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub rejected: AtomicU64,
    pub failed: AtomicU64,
    /// The command's latency histogram on this thread (latency-tracking),
    /// allocated on its first call here: null until then. Owned by this
    /// block, freed with it.
    latency: AtomicPtr<Histogram>,
}

impl CmdCounters {
    /// Records one call's duration in this thread's histogram.
    #[inline]
    pub fn record_latency(&self, ns: u64) {
        let mut h = self.latency.load(Ordering::Acquire);
        if h.is_null() {
            h = self.allocate_histogram();
        }
        // SAFETY: a non-null pointer came from Box::into_raw below and
        // stays valid until this block is dropped.
        unsafe { (*h).record(ns) }
    }

    #[cold]
    fn allocate_histogram(&self) -> *mut Histogram {
        let fresh = Box::into_raw(Box::default());
        match self.latency.compare_exchange(
            std::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => fresh,
            Err(existing) => {
                // SAFETY: `fresh` was never shared.
                drop(unsafe { Box::from_raw(fresh) });
                existing
            }
        }
    }

    /// This thread's histogram, if the command ran here since it was
    /// allocated.
    pub fn histogram(&self) -> Option<&Histogram> {
        let h = self.latency.load(Ordering::Acquire);
        // SAFETY: as in record_latency.
        (!h.is_null()).then(|| unsafe { &*h })
    }
}

impl Drop for CmdCounters {
    fn drop(&mut self) {
        let h = *self.latency.get_mut();
        if !h.is_null() {
            // SAFETY: allocated by allocate_histogram, dropped once.
            drop(unsafe { Box::from_raw(h) });
        }
    }
}

pub struct ThreadStats {
    pub commands: Box<[CmdCounters]>,
    pub commands_processed: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub error_replies: AtomicU64,
    /// Changes made by this thread's commands (summed into Redis's dirty
    /// counter by `Engine::dirty`).
    pub dirty: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    /// Reads from and writes to client sockets (total_reads_processed,
    /// total_writes_processed).
    pub reads_processed: AtomicU64,
    pub writes_processed: AtomicU64,
}

impl ThreadStats {
    fn new(ncommands: usize) -> ThreadStats {
        ThreadStats {
            commands: (0..ncommands).map(|_| CmdCounters::default()).collect(),
            commands_processed: AtomicU64::new(0),
            keyspace_hits: AtomicU64::new(0),
            keyspace_misses: AtomicU64::new(0),
            error_replies: AtomicU64::new(0),
            dirty: AtomicU64::new(0),
            net_input_bytes: AtomicU64::new(0),
            net_output_bytes: AtomicU64::new(0),
            reads_processed: AtomicU64::new(0),
            writes_processed: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn hit(&self, found: bool) {
        if found {
            self.keyspace_hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.keyspace_misses.fetch_add(1, Ordering::Relaxed);
        }
    }
}

pub struct Stats {
    id: u64,
    ncommands: usize,
    threads: Mutex<Vec<Arc<ThreadStats>>>,
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub expired_keys: AtomicU64,
    pub expired_stale_perc: AtomicU64,
    pub errors: Mutex<BTreeMap<Vec<u8>, u64>>,
    /// Reply buffers the clients cron shrank and expanded.
    pub reply_buffer_shrinks: AtomicU64,
    pub reply_buffer_expands: AtomicU64,
}

/// Totals of the per-thread counters.
#[derive(Default, Debug, Clone, Copy)]
pub struct Totals {
    pub commands_processed: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub error_replies: u64,
    pub net_input_bytes: u64,
    pub net_output_bytes: u64,
    pub reads_processed: u64,
    pub writes_processed: u64,
}

thread_local! {
    static LOCAL: RefCell<Option<(u64, Arc<ThreadStats>)>> = const { RefCell::new(None) };
}

static NEXT_STATS_ID: AtomicU64 = AtomicU64::new(1);

impl Stats {
    pub fn new(ncommands: usize) -> Stats {
        Stats {
            id: NEXT_STATS_ID.fetch_add(1, Ordering::Relaxed),
            ncommands,
            threads: Mutex::new(Vec::new()),
            connections_received: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            expired_keys: AtomicU64::new(0),
            expired_stale_perc: AtomicU64::new(0),
            errors: Mutex::new(BTreeMap::new()),
            reply_buffer_shrinks: AtomicU64::new(0),
            reply_buffer_expands: AtomicU64::new(0),
        }
    }

    /// This thread's counter block (registered on first use).
    #[inline]
    pub fn local(&self) -> Arc<ThreadStats> {
        LOCAL.with(|cell| {
            let mut slot = cell.borrow_mut();
            if let Some((id, block)) = slot.as_ref() {
                if *id == self.id {
                    return block.clone();
                }
            }
            let block = Arc::new(ThreadStats::new(self.ncommands));
            self.threads.lock().push(block.clone());
            *slot = Some((self.id, block.clone()));
            block
        })
    }

    /// Bytes read from clients (by this thread).
    #[inline]
    pub fn add_net_input(&self, n: usize) {
        self.local()
            .net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Bytes written to clients (by this thread).
    #[inline]
    pub fn add_net_output(&self, n: usize) {
        self.local()
            .net_output_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
    }

    /// One read of a client's socket (by this thread).
    #[inline]
    pub fn add_read(&self) {
        self.local().reads_processed.fetch_add(1, Ordering::Relaxed);
    }

    /// One write of a client's pending replies (by this thread).
    #[inline]
    pub fn add_write(&self) {
        self.local()
            .writes_processed
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Every thread's `dirty` summed: changes since the server started.
    pub fn dirty_total(&self) -> u64 {
        self.threads
            .lock()
            .iter()
            .map(|t| t.dirty.load(Ordering::Relaxed))
            .sum()
    }

    pub fn record_error(&self, code: &[u8]) {
        let mut errors = self.errors.lock();
        match errors.get_mut(code) {
            Some(n) => *n += 1,
            None => {
                errors.insert(code.to_vec(), 1);
            }
        }
    }

    /// Per-command (calls, usec, rejected, failed) summed over threads.
    pub fn command(&self, id: usize) -> (u64, u64, u64, u64) {
        let threads = self.threads.lock();
        let mut t = (0, 0, 0, 0);
        for block in threads.iter() {
            let c = &block.commands[id];
            t.0 += c.calls.load(Ordering::Relaxed);
            t.1 += c.usec.load(Ordering::Relaxed);
            t.2 += c.rejected.load(Ordering::Relaxed);
            t.3 += c.failed.load(Ordering::Relaxed);
        }
        t
    }

    /// The command's latency histogram over every thread; None when no
    /// call was recorded since the last reset.
    pub fn latency_histogram(&self, id: usize) -> Option<Merged> {
        let threads = self.threads.lock();
        let mut m = Merged::default();
        for block in threads.iter() {
            if let Some(h) = block.commands[id].histogram() {
                h.add_to(&mut m);
            }
        }
        (m.total > 0).then_some(m)
    }

    pub fn totals(&self) -> Totals {
        let threads = self.threads.lock();
        let mut t = Totals::default();
        for b in threads.iter() {
            t.commands_processed += b.commands_processed.load(Ordering::Relaxed);
            t.keyspace_hits += b.keyspace_hits.load(Ordering::Relaxed);
            t.keyspace_misses += b.keyspace_misses.load(Ordering::Relaxed);
            t.error_replies += b.error_replies.load(Ordering::Relaxed);
            t.net_input_bytes += b.net_input_bytes.load(Ordering::Relaxed);
            t.net_output_bytes += b.net_output_bytes.load(Ordering::Relaxed);
            t.reads_processed += b.reads_processed.load(Ordering::Relaxed);
            t.writes_processed += b.writes_processed.load(Ordering::Relaxed);
        }
        t
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for b in self.threads.lock().iter() {
            for c in b.commands.iter() {
                c.calls.store(0, Ordering::Relaxed);
                c.usec.store(0, Ordering::Relaxed);
                c.rejected.store(0, Ordering::Relaxed);
                c.failed.store(0, Ordering::Relaxed);
                if let Some(h) = c.histogram() {
                    h.reset();
                }
            }
            b.commands_processed.store(0, Ordering::Relaxed);
            b.keyspace_hits.store(0, Ordering::Relaxed);
            b.keyspace_misses.store(0, Ordering::Relaxed);
            b.error_replies.store(0, Ordering::Relaxed);
            b.net_input_bytes.store(0, Ordering::Relaxed);
            b.net_output_bytes.store(0, Ordering::Relaxed);
            b.reads_processed.store(0, Ordering::Relaxed);
            b.writes_processed.store(0, Ordering::Relaxed);
        }
        self.reply_buffer_shrinks.store(0, Ordering::Relaxed);
        self.reply_buffer_expands.store(0, Ordering::Relaxed);
        self.connections_received.store(0, Ordering::Relaxed);
        self.rejected_connections.store(0, Ordering::Relaxed);
        self.expired_keys.store(0, Ordering::Relaxed);
        self.errors.lock().clear();
    }
}
