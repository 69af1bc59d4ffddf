//! The engine's periodic work (Redis's serverCron): active expiry, the
//! persistence and replication crons, the clients cron, metric samples.

use super::*;

impl Engine {
    /// Periodic work, called `hz` times a second by the host: active
    /// expiry and metric sampling (Redis's serverCron).
    pub fn cron(&self) {
        if self.cron_paused() {
            return;
        }
        let cycle = crate::expire::active_expire_cycle(self);
        if self.config.activerehashing() {
            crate::expire::active_rehash(self);
        }
        if self.tracking.active() {
            self.limit_tracking_table();
        }
        let elapsed_ms = cycle.busy.as_millis() as u64;
        self.latency.add_if_needed(
            self.config
                .latency_monitor_threshold
                .load(Ordering::Relaxed),
            "expire-cycle",
            elapsed_ms,
        );
        crate::persist::cron(&self.arc());
        self.repl_cron();
        self.shutdown_cron();
        self.clients_cron();
        // used_memory_peak, as serverCron records it (measuring the
        // scripts' part for the eviction checks on the way).
        self.memory_peak(self.used_memory());
        let now = now_ms();
        let t = self.stats.totals();
        let counts = [t.commands_processed, t.net_input_bytes, t.net_output_bytes];
        let mut s = self.ops_samples.lock();
        if s.last_ms != 0 && now > s.last_ms {
            let i = s.next;
            for (m, count) in counts.iter().enumerate() {
                let rate = count.saturating_sub(s.last_count[m]) * 1000 / (now - s.last_ms);
                s.samples[m][i] = rate;
            }
            s.next = (i + 1) % s.samples[0].len();
        }
        s.last_count = counts;
        s.last_ms = now;
    }

    /// The primary's side of Redis's replicationCron, and the full
    /// synchronizations whose delay passed.
    fn repl_cron(&self) {
        let c = &self.config;
        self.repl
            .stream
            .resize(c.repl_backlog_size().max(1) as usize);
        self.repl.cron(
            c.repl_ping_replica_period(),
            c.repl_backlog_ttl(),
            c.min_replicas_max_lag(),
            crate::repl::failover::holds_ping(self),
        );
        crate::repl::failover::update(self);
        if self.repl.replica_count() > 0 {
            crate::repl::sync::start_pending(&self.arc());
        }
        if self.repl.is_replica() && self.active_expire_enabled() {
            self.repl.expire_local_keys(&self.keyspace);
        }
    }

    /// Redis's clientsCron: each tick visits a slice of the clients (all
    /// of them once a second, at least 5 a tick) to resize their query
    /// buffers.
    fn clients_cron(&self) {
        let hz = self.config.hz.load(Ordering::Relaxed).clamp(1, 500) as usize;
        let n = (self.clients.count() / hz).max(5);
        let now = now_ms();
        let after = self.clients_cron_cursor.load(Ordering::Relaxed);
        let max_idle = self.config.timeout().max(0) as u64;
        let resizing = self.reply_buffer_resizing.load(Ordering::Relaxed);
        let reset_ms = self.reply_buffer_peak_reset_ms.load(Ordering::Relaxed);
        self.clients.recent_peaks().next_second(now);
        let last = self.clients.visit_some(after, n, |c| {
            if !c.cron_timeout(now, max_idle) {
                // The recent largest buffers (INFO's
                // client_recent_max_input_buffer and _output_buffer),
                // before the cron resizes them, as Redis's
                // clientsCronTrackExpansiveClients runs after it.
                self.clients.recent_peaks().record(
                    now,
                    c.query_buffer_alloc.load(Ordering::Relaxed),
                    c.output_memory(),
                );
                c.cron_query_buffer(now);
                match c.cron_reply_buffer(now, resizing, reset_ms) {
                    crate::client::ReplyResize::Shrunk => {
                        self.stats
                            .reply_buffer_shrinks
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    crate::client::ReplyResize::Expanded => {
                        self.stats
                            .reply_buffer_expands
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    crate::client::ReplyResize::Unchanged => {}
                }
            }
        });
        self.clients_cron_cursor.store(last, Ordering::Relaxed);
    }
}
