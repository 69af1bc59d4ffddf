//! `Engine::call`: runs one resolved command with its shards held, as
//! Redis's call() does: the handler, keyspace events, monitors,
//! propagation to the append-only file and the replicas, statistics,
//! the slow log.

use super::*;
use crate::command::spec::flag;
use crate::command::{table, Ctx};

impl Engine {
    /// Runs a resolved command with the given locks held, recording its
    /// statistics. Used by sessions, transactions and scripts alike.
    #[allow(clippy::too_many_arguments)]
    pub fn call(
        &self,
        client: &mut ClientState,
        out: &mut ReplyWriter,
        locks: &mut ShardLocks<'_>,
        stats: &ThreadStats,
        cmd_id: usize,
        argv: &[&[u8]],
        now_ms: u64,
        in_multi: bool,
        in_script: bool,
    ) {
        self.call_with(
            client, out, locks, stats, cmd_id, argv, now_ms, in_multi, in_script, None,
        );
    }

    /// `call`, optionally on behalf of a blocked client being served on the
    /// ready key `serving`. Such a run is not counted as a new call (Redis
    /// counted the call when the client blocked) but its time and errors are.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn call_with(
        &self,
        client: &mut ClientState,
        out: &mut ReplyWriter,
        locks: &mut ShardLocks<'_>,
        stats: &ThreadStats,
        cmd_id: usize,
        argv: &[&[u8]],
        now_ms: u64,
        in_multi: bool,
        in_script: bool,
        serving: Option<&[u8]>,
    ) {
        let entry = table().get(cmd_id);
        let errors_before = out.errors;
        let uncounted_before = out.errors_uncounted;
        let start = crate::util::time::monotonic_ns();
        let db = client.db;
        let no_touch = client.info.no_touch.load(Ordering::Relaxed);
        let mut ctx = Ctx {
            engine: self,
            client,
            out,
            locks,
            stats,
            now_ms,
            // A replica's reads leave expired keys to its primary's DELs
            // (they read as absent); its writes delete them (Redis's
            // expireIfNeeded with EXPIRE_FORCE_DELETE_EXPIRED).
            keep_expired: self.pause.keeps_expired(entry.spec.has(flag::WRITE))
                || (!entry.spec.has(flag::WRITE) && self.repl.is_replica()),
            no_touch,
            dirty: 0,
            cmd_id,
            in_multi,
            in_script,
            writes: entry.spec.has(flag::WRITE),
            effects: Default::default(),
            serving,
        };
        // Scripts are shown before the commands they run (Redis's
        // evalCommand and fcallCommandGeneric feed monitors first).
        let monitored = self.monitors.any() && serving.is_none() && !ctx.client.replaying;
        if monitored
            && entry.spec.group == crate::command::Group::Scripting
            && entry.spec.has(flag::SKIP_MONITOR)
        {
            self.feed_monitors(ctx.client, in_script, &entry.fullname, argv);
        }
        if let Err(e) = (entry.spec.handler)(&mut ctx, argv) {
            ctx.out.error(e.bytes());
        }
        ctx.publish_db_events();
        // Client-side caching: what a tracking client read (Redis's call()
        // after a READONLY command; scripts remember the keys they declared
        // for their caller, see scripting/eval.rs).
        if entry.spec.has(flag::READONLY) && ctx.client.tracking.is_some() {
            ctx.remember_read_keys(argv);
        }
        // Streams the command deleted or replaced under waiters: their
        // XREADGROUP clients are served (with an error) once it is done.
        if self.clients.blocked.load(Ordering::Relaxed) != 0 {
            self.collect_gone_streams(ctx.locks, &mut ctx.client.ready_keys);
        }
        if monitored && !entry.spec.has(flag::SKIP_MONITOR | flag::ADMIN) {
            self.feed_monitors(ctx.client, in_script, &entry.fullname, argv);
        }
        let dirty = ctx.dirty;
        let effects = std::mem::take(&mut ctx.effects);
        if (self.persist.aof.is_on() || self.repl.stream.feeding()) && !client.replaying {
            self.propagate(
                client,
                locks,
                argv,
                db,
                dirty,
                effects,
                in_multi || in_script,
            );
        }
        let elapsed_ns = crate::util::time::monotonic_ns().saturating_sub(start);
        let elapsed = elapsed_ns / 1000;
        // A command that blocked is accounted for when it is served
        // (Redis's updateStatsOnUnblock); a served one counts from the
        // moment it blocked.
        let (elapsed_ns, elapsed) = match (serving, client.blocked_since_ns) {
            (Some(_), since) if since != 0 => {
                let total = start.saturating_sub(since) + elapsed_ns;
                (total, total / 1000)
            }
            _ => (elapsed_ns, elapsed),
        };
        if client.blocked.is_none() {
            if self.config.latency_tracking.load(Ordering::Relaxed) {
                stats.commands[cmd_id].record_latency(elapsed_ns);
            }
            if elapsed >= self.config.watch_us.load(Ordering::Relaxed) {
                self.note_slow_command(client, cmd_id, argv, elapsed);
            }
        }
        if dirty > 0 {
            stats.dirty.fetch_add(dirty, Ordering::Relaxed);
        }
        let c = &stats.commands[cmd_id];
        c.usec.fetch_add(elapsed, Ordering::Relaxed);
        if serving.is_none() {
            c.calls.fetch_add(1, Ordering::Relaxed);
            stats.commands_processed.fetch_add(1, Ordering::Relaxed);
        }
        // Errors of nested calls (EXEC's queued commands) were counted by
        // them: only this command's own make it a failed call.
        let fresh = out.errors - out.errors_noted.max(errors_before);
        let fresh_uncounted = out.errors_uncounted - out.uncounted_noted.max(uncounted_before);
        if fresh > 0 || fresh_uncounted > 0 {
            c.failed.fetch_add(1, Ordering::Relaxed);
        }
        if fresh > 0 {
            self.note_errors(stats, out, fresh);
        }
        out.errors_noted = out.errors;
        out.uncounted_noted = out.errors_uncounted;
        // What the command (or transaction, or script) caused for the BCAST
        // clients, and for its own client after its reply.
        if !in_multi && !in_script {
            if let Some(t) = client.tracking.as_mut() {
                if !t.pending.bcast.is_empty() || !t.pending.own.is_empty() {
                    self.flush_bcast(&mut t.pending);
                    crate::tracking::write_own(&mut t.pending, out);
                }
            }
        }
    }

    /// Logs what a command changed, while it still holds its shards (so the
    /// log's order is the order in which writes to a key happened): first
    /// the keys that expired under it, then the call itself or the
    /// replacement commands it chose. Inside a transaction or a script the
    /// records wait in the client until the outermost command ends, and
    /// are then logged together, wrapped in MULTI/EXEC when there are
    /// several.
    #[allow(clippy::too_many_arguments)]
    fn propagate(
        &self,
        client: &mut ClientState,
        locks: &mut ShardLocks<'_>,
        argv: &[&[u8]],
        db: usize,
        dirty: u64,
        effects: crate::command::Effects,
        nested: bool,
    ) {
        use crate::propagate::Record;
        let repl_only = effects.repl_only && client.pending_propagation.is_empty();
        let effects_unwrapped = effects.unwrapped;
        let mut records = std::mem::take(&mut client.pending_propagation);
        let nested_records = records.len();
        for shard in locks.held_mut() {
            crate::propagate::collect_expired(shard, &mut records);
        }
        let expired = records.len() - nested_records;
        if effects.replaced {
            records.extend(
                effects
                    .commands
                    .into_iter()
                    .map(|(db, argv)| Record { db, argv }),
            );
        } else if dirty > 0 || effects.forced {
            records.push(Record {
                db,
                argv: argv.iter().map(|a| a.to_vec()).collect(),
            });
        }
        // Only DELs of keys that expired as the command read them: the
        // reply does not wait for them (a read is not refused while the
        // log fails; a key whose DEL is lost expires again after loading).
        let expiries_only = records.len() == expired;
        if nested {
            client.pending_propagation = records;
            return;
        }
        // A replica passes its primary's commands on as they came, while
        // the command still holds its shards.
        if client.from_master && !client.master_bytes.is_empty() {
            crate::propagate::emit_encoded(&self.repl, &std::mem::take(&mut client.master_bytes));
        }
        if records.is_empty() {
            return;
        }
        if !effects_unwrapped {
            crate::propagate::wrap_in_transaction(&mut records);
        }
        // A call for the replicas only (PUBLISH) stays out of the file when
        // it is all there is to propagate.
        let to_file = !(repl_only && records.len() == 1);
        let emitted = self.emit(&records, to_file);
        if let Some(end) = emitted.file_end {
            if !expiries_only {
                client.aof_offset = end;
            }
        }
        if let Some(offset) = emitted.stream_offset {
            client.repl_offset = offset;
        }
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn feed_monitors(
        &self,
        client: &ClientState,
        in_script: bool,
        fullname: &str,
        argv: &[&[u8]],
    ) {
        let source = if in_script { "lua" } else { &*client.info.addr };
        self.monitors.feed(client.db, source, fullname, argv);
    }

    /// A command ran past the slow log's or the latency monitor's
    /// threshold: Redis's slowlogPushCurrentCommand and the "command" /
    /// "fast-command" latency events of call().
    #[cold]
    #[inline(never)]
    fn note_slow_command(&self, client: &ClientState, cmd_id: usize, argv: &[&[u8]], us: u64) {
        let entry = table().get(cmd_id);
        let slower_than = self.config.slowlog_log_slower_than.load(Ordering::Relaxed);
        if slower_than >= 0 && us >= slower_than as u64 && !entry.spec.has(flag::SKIP_SLOWLOG) {
            let name = client.info.name().unwrap_or_default();
            self.slowlog.push(
                &entry.fullname,
                argv,
                us,
                &client.info.addr,
                &name,
                self.config.slowlog_max_len.load(Ordering::Relaxed),
            );
        }
        let event = if entry.spec.has(flag::FAST) {
            "fast-command"
        } else {
            "command"
        };
        self.latency.add_if_needed(
            self.config
                .latency_monitor_threshold
                .load(Ordering::Relaxed),
            event,
            us / 1000,
        );
    }

    pub(super) fn note_errors(&self, stats: &ThreadStats, out: &ReplyWriter, n: u64) {
        stats.error_replies.fetch_add(n, Ordering::Relaxed);
        if let Some(code) = &out.last_error_code {
            self.stats.record_error(code);
        }
    }

    /// An error raised before the command ran (arity, auth...): counted as
    /// a rejected call of `cmd_id` when the command is known.
    pub(super) fn reject(
        &self,
        stats: &ThreadStats,
        out: &mut ReplyWriter,
        cmd_id: Option<usize>,
        err: &Error,
    ) {
        out.error(err.bytes());
        if let Some(id) = cmd_id {
            stats.commands[id].rejected.fetch_add(1, Ordering::Relaxed);
        }
        self.note_errors(stats, out, 1);
    }
}
