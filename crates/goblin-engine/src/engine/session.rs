//! `Session`: one client's connection to an engine, and the path of
//! every command from any transport: look up the command, admit it
//! (arity, authentication, state checks in Redis's processCommand
//! order), find its keys, lock their shards in order, call it, unlock.

use super::*;
use crate::command::spec::{flag, CommandSpec};
use crate::command::table;

impl Engine {
    /// Opens a session for a new client.
    pub fn session(self: &Arc<Self>, conn: ConnInfo) -> Session {
        let info = self.clients.register(&conn, now_ms());
        if conn.fd >= 0 {
            self.stats
                .connections_received
                .fetch_add(1, Ordering::Relaxed);
        }
        // Redis's createClient: authenticated when the default user needs
        // no password.
        let authenticated = !self.acl.auth_required();
        let mut state = ClientState::new(info, 0, 2, authenticated, conn.fd < 0);
        state.user = Some(crate::acl::ClientUser::new(self.acl.default_user()));
        Session {
            engine: self.clone(),
            state,
            out: ReplyWriter::new(2),
            block_reply_discarded: false,
            last_command: 0,
            paused: false,
            out_of_memory: false,
            yielded: false,
            yielding: false,
            last_shard: usize::MAX,
        }
    }
}

/// What the connection should do after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Write the pending replies, then close.
    Close,
    /// The command blocked (BLPOP...): write the pending replies, wait on
    /// `Session::blocked()` without processing further input, then call
    /// `Session::finish_block` and continue (see `crate::blocking`).
    Block,
    /// CLIENT PAUSE holds the command back: it did not run. Wait on
    /// `Engine::pause`, then give the same command to `execute` again.
    Paused,
    /// The command (flagged AFTER_READY) did not run yet: let the other
    /// ready connections have their turn (a yield to the runtime), then
    /// give the same command to `execute` again; it runs then.
    Yield,
    /// The command handed the connection something else to do than read
    /// the next command (`ClientState::handoff`: PSYNC, WAIT): write the
    /// pending replies, then take it.
    Handoff,
}

/// One client's connection to the engine.
pub struct Session {
    pub engine: Arc<Engine>,
    pub state: ClientState,
    /// Replies not yet written to the client.
    pub out: ReplyWriter,
    /// The blocked command's reply is to be dropped (CLIENT REPLY OFF/SKIP).
    pub(crate) block_reply_discarded: bool,
    /// The id of the last top-level command looked up: pipelines mostly
    /// repeat one command, and comparing its name is cheaper than a hash
    /// look-up.
    last_command: usize,
    /// The last command was held back by CLIENT PAUSE (Flow::Paused).
    paused: bool,
    /// What the eviction before the current command found: over
    /// maxmemory with nothing it may evict (Redis's EVICT_FAIL).
    out_of_memory: bool,
    /// The last command was held back to let other connections run first
    /// (Flow::Yield): given again, it runs.
    yielded: bool,
    yielding: bool,
    /// The shard the last pipelined command locked, when it had one key:
    /// the next on the same shard keeps its lock (see `Pipeline`).
    last_shard: usize,
}

/// What a connection keeps while it runs the commands of one read: the
/// shard of the last ones, held while the next ones use the same shard.
/// A pipeline on one key then takes its lock once, rather than once per
/// command, and the shard's data stays in one core's cache instead of
/// moving to the other worker on every command. Any other command
/// releases the shard before it locks anything, so a connection never
/// waits while it holds one; after `MAX_RUN` commands in a row the shard
/// goes to a waiting worker, if any. Dropping the pipeline releases it: a
/// connection drops it before it writes or waits.
#[derive(Default)]
pub struct Pipeline {
    held: Option<(usize, OwnedShard)>,
    /// Commands run in a row under `held`.
    run: u32,
}

impl Pipeline {
    /// How many commands in a row may keep one shard.
    const MAX_RUN: u32 = 32;
}

impl Session {
    pub fn info(&self) -> &Arc<ClientInfo> {
        &self.state.info
    }

    /// Moves the Pub/Sub messages published to this client since the last
    /// call into `out`, after the replies already there; true when there
    /// were some. A connection calls it before each write, and when woken
    /// by `ClientInfo::wake` (see `crate::pubsub`; client-side caching's
    /// invalidations come the same way); one atomic load when there are
    /// none.
    #[inline]
    pub fn deliver_pushes(&mut self) -> bool {
        self.state.info.mailbox.drain_into(&mut self.out)
    }

    /// Answers a protocol error, "ERR " and `text` (the parser's), before
    /// the connection closes; counted in the error statistics, as Redis's
    /// addReplyErrorFormat counts it.
    pub fn protocol_error(&mut self, text: &[u8]) {
        let stats = self.engine.stats.local();
        self.out.error([b"ERR ".as_slice(), text].concat());
        self.out.errors_noted = self.out.errors;
        self.engine.note_errors(&stats, &self.out, 1);
    }

    /// Whether the client must authenticate before running commands (the
    /// parser then applies Redis's stricter limits).
    pub fn auth_required(&self) -> bool {
        !self.state.authenticated && self.engine.acl.auth_required()
    }

    /// Runs one command and appends its reply to `self.out`.
    pub fn execute(&mut self, argv: &[&[u8]]) -> Flow {
        self.execute_in(argv, None)
    }

    /// `execute` for one of the commands a connection read together: it
    /// may keep its shard in `pipeline` for the next one (see `Pipeline`).
    pub fn execute_pipelined(&mut self, argv: &[&[u8]], pipeline: &mut Pipeline) -> Flow {
        self.execute_in(argv, Some(pipeline))
    }

    /// `execute_pipelined` for a command some of whose arguments are
    /// `lent`, the buffers they were received in (the big bulks, see
    /// `protocol::parser::BIG_ARG`): a value the command stores may keep
    /// one instead of copying it (`Ctx::adopt`).
    pub fn execute_lent(
        &mut self,
        argv: &[&[u8]],
        lent: impl Iterator<Item = bytes::Bytes>,
        pipeline: &mut Pipeline,
    ) -> Flow {
        self.state.lent.extend(lent);
        let flow = self.execute_in(argv, Some(pipeline));
        self.state.lent.clear();
        flow
    }

    fn execute_in(&mut self, argv: &[&[u8]], pipeline: Option<&mut Pipeline>) -> Flow {
        let engine = self.engine.clone();
        let stats = engine.stats.local();
        // Messages that arrived before the command precede its reply.
        self.deliver_pushes();
        self.out.clear_push_marks();
        let reply_start = self.out.len();
        let was_over_limit = self.out.over_limit;
        // CLIENT LIST's argv-mem while the command runs (Redis's
        // argv_len_sum).
        let info = &self.state.info;
        info.set_argv(argv.iter().map(|a| a.len()).sum(), argv.len());
        let ran = self.dispatch(&engine, &stats, argv, pipeline);
        let info = &self.state.info;
        info.set_argv(0, 0);
        // The transaction state may have grown or gone (MULTI's queue,
        // WATCH, EXEC, DISCARD, RESET).
        self.state.publish_multi_memory();
        if !ran {
            if self.paused {
                self.paused = false;
                return Flow::Paused;
            }
            if self.yielding {
                self.yielding = false;
                return Flow::Yield;
            }
            self.state
                .info
                .last_interaction_ms
                .store(now_ms(), Ordering::Relaxed);
        }

        // Clients blocked on keys this command (or transaction) made ready
        // are served now that its locks are released.
        if !self.state.ready_keys.is_empty() {
            let ready = std::mem::take(&mut self.state.ready_keys);
            engine.serve_ready(&stats, ready);
        }

        // CLIENT REPLY OFF / SKIP: drop what this command wrote.
        let discard = match self.state.reply_mode {
            ReplyMode::On => false,
            ReplyMode::Off => true,
            ReplyMode::Skip => {
                self.state.reply_mode = ReplyMode::On;
                true
            }
            ReplyMode::SkipNext => {
                self.state.reply_mode = ReplyMode::Skip;
                false
            }
        };
        if discard {
            self.out.discard_from(reply_start);
            // A reply not built for the output limit is not wanted either.
            self.out.over_limit = was_over_limit;
        } else {
            self.out.clear_push_marks();
        }
        if self.state.blocked.is_some() {
            self.block_reply_discarded = discard;
            return Flow::Block;
        }
        if self.state.handoff.is_some() {
            return Flow::Handoff;
        }
        if self.state.close_after_reply {
            self.state.info.mark_closing();
            Flow::Close
        } else {
            Flow::Continue
        }
    }

    /// Runs or refuses one command; true when it ran (and so recorded the
    /// client's last interaction).
    fn dispatch(
        &mut self,
        engine: &Engine,
        stats: &ThreadStats,
        argv: &[&[u8]],
        mut pipeline: Option<&mut Pipeline>,
    ) -> bool {
        if argv.is_empty() {
            return false;
        }
        // Redis's evictClients, before the command and before key
        // eviction: the clients over maxmemory-clients go now, so that no
        // command (CLIENT LIST among them) sees them over it. One load
        // while under the limit. When this client was the one, its
        // command does not run.
        engine.clients.evict_over_limit();
        if self.state.info.is_killed() {
            return false;
        }
        // Redis's performEvictions, before the command: eviction locks
        // shards of its own, so a shard kept from the command before is
        // released first. Its outcome is what admission (and scripts and
        // transactions, for the commands they run) go by.
        self.out_of_memory = false;
        if engine.config.maxmemory.load(Ordering::Relaxed) != 0
            && !self.state.from_master
            && engine.over_maxmemory()
        {
            if let Some(p) = pipeline.as_deref_mut() {
                drop(p.held.take());
            }
            self.out_of_memory = engine.perform_evictions() == crate::evict::Outcome::Fail;
            // Invalidations of evicted keys precede the reply (Redis
            // flushes them after performEvictions).
            self.deliver_pushes();
        }
        // tracking-table-max-keys, before each command (Redis's
        // processCommand calls trackingLimitUsedSlots).
        if engine.tracking.active() && engine.tracking.over_limit() {
            if let Some(p) = pipeline.as_deref_mut() {
                drop(p.held.take());
            }
            engine.limit_tracking_table();
            self.deliver_pushes();
        }
        let id = match self.admit(engine, argv) {
            Ok(Admission::Run(id)) => id,
            Ok(Admission::Queue(id)) => {
                self.queue(id, argv);
                return false;
            }
            Ok(Admission::Paused) => {
                self.paused = true;
                return false;
            }
            Err(refusal) => {
                self.refuse(engine, stats, refusal);
                return false;
            }
        };
        let spec = table().get(id).spec;
        if spec.has(flag::AFTER_READY) && pipeline.is_some() {
            self.yielded = !self.yielded;
            if self.yielded {
                self.yielding = true;
                return false;
            }
        }
        // PSYNC <replid> <offset> FAILOVER may wait for our link to apply
        // what the primary sent before it (repl::failover), no shard held.
        if argv.len() == 4
            && spec.has(flag::ALL_SHARDS)
            && argv[3].eq_ignore_ascii_case(b"failover")
        {
            if let Some(p) = pipeline.as_deref_mut() {
                drop(p.held.take());
            }
            crate::repl::failover::await_primary_stream(engine, argv);
        }

        // In a pipeline, a command with one key on the shard of the one
        // before takes it as an owned guard, which the pipeline keeps for
        // the next; any other command releases the kept shard first.
        let sole_shard = match pipeline {
            Some(_) if spec.locks_fn.is_none() && !spec.has(flag::ALL_SHARDS) => {
                crate::command::keys::sole_key(spec, argv)
                    .flatten()
                    .map(|key| engine.keyspace.shard_of_key(key))
            }
            _ => None,
        };
        let kept = pipeline.as_deref_mut().and_then(|p| p.held.take());
        // Waiting behind a script: give up with BUSY once it has run too
        // long, as if the command had arrived then.
        let give_up = || engine.scripts().busy_error().is_some();
        let polling: Option<&dyn Fn() -> bool> = if spec.has(flag::ALLOW_BUSY) {
            None
        } else {
            Some(&give_up)
        };
        let locks = match (kept, sole_shard) {
            (Some((idx, guard)), Some(want)) if idx == want => Some(ShardLocks::Owned(idx, guard)),
            (kept, _) => {
                drop(kept);
                match (spec.locks_fn, sole_shard) {
                    (Some(f), _) => Some(f(engine, &self.state, argv)),
                    (None, Some(idx)) if idx == self.last_shard => {
                        if let Some(p) = pipeline.as_deref_mut() {
                            p.run = 0;
                        }
                        engine
                            .keyspace
                            .lock_owned(idx, polling)
                            .map(|guard| ShardLocks::Owned(idx, guard))
                    }
                    (None, _) => engine.lock_keys(spec, argv, false, polling),
                }
            }
        };
        if pipeline.is_some() {
            self.last_shard = sole_shard.unwrap_or(usize::MAX);
        }
        let Some(mut locks) = locks else {
            let err = engine
                .scripts()
                .busy_error()
                .unwrap_or(crate::scripting::BUSY_EVAL);
            self.reject_command(engine, stats, id, &err);
            return false;
        };
        // Read once the shards are held, as the command's time and the
        // client's last interaction (CLIENT LIST idle=).
        let now = now_ms();
        self.state
            .info
            .last_interaction_ms
            .store(now, Ordering::Relaxed);
        // A primary's commands see nothing expired (Redis's master client:
        // the primary sends the DELs), as a replay does.
        let now = if self.state.from_master { 0 } else { now };
        // Effects of scripts are only recorded for persistence, which
        // collects them where it logs commands.
        engine.call(
            &mut self.state,
            &mut self.out,
            &mut locks,
            stats,
            id,
            argv,
            now,
            false,
            false,
        );
        // CLIENT CACHING applies to the next command only, or to the
        // transaction it opens (Redis's resetClient).
        if let Some(t) = self.state.tracking.as_mut() {
            if t.caching && self.state.multi.is_none() && !spec.has(flag::KEEPS_CACHING) {
                t.caching = false;
            }
        }
        if let (Some(p), ShardLocks::Owned(idx, guard)) = (pipeline, locks) {
            p.run += 1;
            // Clients it made ready are served next, under their own locks.
            if p.run < Pipeline::MAX_RUN
                && self.state.ready_keys.is_empty()
                && self.state.blocked.is_none()
            {
                p.held = Some((idx, guard));
            } else {
                p.run = 0;
                OwnedShard::unlock_fair(guard);
            }
        }
        true
    }

    /// Admission: the checks of Redis 7.0.15's processCommand, in its
    /// order, each a function of its own (tests/it/admission.rs trips each
    /// one side by side with redis-server): the command is known
    /// (`resolve`), its arity, a protected command, authentication,
    /// NO_MULTI inside MULTI, ACL, then the server's state: out of memory,
    /// a failing disk and min-replicas (`check_state`), a read-only
    /// replica, a RESP2 subscriber, a replica whose link is down, loading,
    /// a busy script, and a replica's own connection. CLIENT PAUSE then
    /// holds the command back, or MULTI queues it. Every refusal is
    /// Redis's rejectCommand: it dooms a transaction, and a refused EXEC
    /// discards it.
    fn admit(&mut self, engine: &Engine, argv: &[&[u8]]) -> Result<Admission, Refusal> {
        let t = table();
        let id = self.resolve(argv)?;
        let entry = t.get(id);
        let spec = entry.spec;
        let reject = |err: Error| Refusal {
            id: Some(id),
            err,
            aborts_tx: true,
        };
        check_arity(spec, &entry.fullname, argv.len()).map_err(reject)?;
        self.check_protected(engine, spec, &entry.fullname)
            .map_err(reject)?;
        self.check_auth(engine, spec).map_err(reject)?;
        self.check_no_multi(spec).map_err(reject)?;
        self.check_acl(engine, id, &entry.fullname, argv)
            .map_err(reject)?;
        self.state.info.last_cmd.store(id, Ordering::Relaxed);
        let disk_error = engine.persist.write_denial();
        if self.state.from_master {
            if disk_error.is_some() {
                engine.note_replica_disk_error();
            }
        } else if engine.config.maxmemory.load(Ordering::Relaxed) != 0
            || engine.config.min_replicas_to_write.load(Ordering::Relaxed) > 0
            || disk_error.is_some()
        {
            self.check_state(engine, spec, argv, disk_error)
                .map_err(reject)?;
        }
        // A replica's own clients (its primary's link runs what it is sent).
        let replica = engine.repl.is_replica() && !self.state.from_master;
        if replica {
            self.check_read_only_replica(engine, spec, argv)
                .map_err(reject)?;
        }
        self.check_resp2_subscriber(spec, &entry.fullname)
            .map_err(reject)?;
        if replica {
            self.check_stale_replica(engine, spec, argv)
                .map_err(reject)?;
        }
        self.check_loading(engine, spec).map_err(reject)?;
        self.check_busy(engine, spec).map_err(reject)?;
        self.check_replica_client(engine, spec, argv)
            .map_err(reject)?;
        // CLIENT PAUSE, after the checks that answer at once.
        if engine.pause.active() && !self.state.internal {
            let flags = spec.call_flags(engine, &self.state, argv);
            if engine.pause.holds(flags, now_ms()) {
                return Ok(Admission::Paused);
            }
        }
        if self.state.multi.is_some() && !spec.has(flag::TX_CONTROL) {
            return Ok(Admission::Queue(id));
        }
        Ok(Admission::Run(id))
    }

    /// A protected command (DEBUG, MODULE LOAD...) where its parameter
    /// does not allow it: enable-debug-command / enable-module-command
    /// `no`, or `local` and the client is not.
    fn check_protected(
        &self,
        engine: &Engine,
        spec: &CommandSpec,
        fullname: &str,
    ) -> Result<(), Error> {
        let Some(param) = spec.protected_by else {
            return Ok(());
        };
        if crate::command::allows_protected(&engine.config.text(param), &self.state) {
            return Ok(());
        }
        let command = fullname.split('|').next().unwrap_or(fullname);
        Err(Error::raw(format!(
            "ERR {} command not allowed. If the {} option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
            command.to_ascii_uppercase(),
            crate::config::PARAMS[param as usize].name
        )))
    }

    /// A client that has not authenticated while the default user needs a
    /// password runs only the commands flagged no-auth (AUTH, HELLO...).
    fn check_auth(&self, engine: &Engine, spec: &CommandSpec) -> Result<(), Error> {
        if !self.state.authenticated && !spec.has(flag::NO_AUTH) && engine.acl.auth_required() {
            return Err(Error::NOAUTH);
        }
        Ok(())
    }

    /// Inside MULTI, a command flagged no-multi (SAVE, SHUTDOWN, PSYNC...).
    fn check_no_multi(&self, spec: &CommandSpec) -> Result<(), Error> {
        if self.state.multi.is_some() && spec.has(flag::NO_MULTI) {
            return Err(Error::err("Command not allowed inside a transaction"));
        }
        Ok(())
    }

    /// The user's ACL rules (NOPERM), the refusal logged in the ACL log.
    fn check_acl(
        &mut self,
        engine: &Engine,
        id: usize,
        fullname: &str,
        argv: &[&[u8]],
    ) -> Result<(), Error> {
        let Some(denied) = self.state.user.as_mut().and_then(|u| u.denies(id, argv)) else {
            return Ok(());
        };
        let context = if self.state.multi.is_some() {
            crate::acl::LogContext::Multi
        } else {
            crate::acl::LogContext::Toplevel
        };
        engine.acl_log_denied(&self.state, denied, context, id, argv);
        Err(Error::raw(denied.noperm(fullname)))
    }

    /// A RESP2 client that subscribed may only subscribe, leave, PING,
    /// QUIT or RESET: its replies are messages.
    fn check_resp2_subscriber(&self, spec: &CommandSpec, fullname: &str) -> Result<(), Error> {
        if self.state.subscribed() && self.state.resp == 2 && !spec.has(flag::SUBSCRIBED_OK) {
            return Err(Error::err(format_args!(
                "Can't execute '{fullname}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
            )));
        }
        Ok(())
    }

    /// While the dataset loads (DEBUG RELOAD, DEBUG LOADAOF) only commands
    /// flagged loading run; the file being replayed does.
    fn check_loading(&self, engine: &Engine, spec: &CommandSpec) -> Result<(), Error> {
        if engine.persist.loading.load(Ordering::Relaxed)
            && !spec.has(flag::LOADING)
            && !self.state.replaying
        {
            return Err(Error::constant(
                "LOADING Redis is loading the dataset in memory",
            ));
        }
        Ok(())
    }

    /// A script running past busy-reply-threshold: only allow-busy
    /// commands run.
    fn check_busy(&self, engine: &Engine, spec: &CommandSpec) -> Result<(), Error> {
        if spec.has(flag::ALLOW_BUSY) {
            return Ok(());
        }
        match engine.scripts().busy_error() {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// A replica of this engine, on its own connection, may not touch the
    /// keyspace.
    fn check_replica_client(
        &self,
        engine: &Engine,
        spec: &CommandSpec,
        argv: &[&[u8]],
    ) -> Result<(), Error> {
        if self.state.replica.is_some()
            && spec.call_flags(engine, &self.state, argv)
                & (flag::WRITE | flag::READONLY | flag::MAY_REPLICATE)
                != 0
        {
            return Err(Error::constant(
                "ERR Replica can't interact with the keyspace",
            ));
        }
        Ok(())
    }

    /// The command `argv` (not empty) names, a container's subcommand
    /// resolved, or Redis's unknown-command and unknown-subcommand errors.
    fn resolve(&mut self, argv: &[&[u8]]) -> Result<usize, Refusal> {
        let unknown = |id: Option<usize>, err: Error| Refusal {
            id,
            err,
            aborts_tx: false,
        };
        let name = argv[0];
        let t = table();
        let mut id = self.last_command;
        if !t.get(id).spec.name.as_bytes().eq_ignore_ascii_case(name) {
            id = t
                .lookup(name)
                .ok_or_else(|| unknown(None, unknown_command(argv)))?;
            self.last_command = id;
        }
        let spec = t.get(id).spec;
        // A container named alone is itself the command (Redis's
        // lookupCommandLogic): its arity decides, so COMMAND runs and
        // CONFIG is refused as Redis refuses it.
        if spec.subcommands.is_empty() || argv.len() < 2 {
            return Ok(id);
        }
        t.subcommand(id, argv[1]).ok_or_else(|| {
            unknown(
                None,
                Error::concat(&[
                    b"ERR unknown subcommand '",
                    printf_s(argv[1], 128),
                    b"'. Try ",
                    spec.name.to_ascii_uppercase().as_bytes(),
                    b" HELP.",
                ]),
            )
        })
    }

    /// Queues a command of a transaction (MULTI): QUEUED, or nothing more
    /// than that reply once the transaction is doomed.
    fn queue(&mut self, id: usize, argv: &[&[u8]]) {
        let multi = self.state.multi.as_mut().expect("queued inside MULTI");
        if !multi.aborted {
            multi.push(id, argv);
            self.state
                .info
                .multi_len
                .store(multi.commands.len() as u64, Ordering::Relaxed);
        }
        self.out.simple("QUEUED");
    }

    /// Answers a refusal of admission.
    fn refuse(&mut self, engine: &Engine, stats: &ThreadStats, refusal: Refusal) {
        match (refusal.aborts_tx, refusal.id) {
            (true, Some(id)) => self.reject_command(engine, stats, id, &refusal.err),
            (_, id) => self.reject(engine, stats, id, &refusal.err),
        }
    }
}

/// What admission (`Session::admit`) lets a command do.
enum Admission {
    /// Run the command with this id now.
    Run(usize),
    /// Inside MULTI: queue it for EXEC.
    Queue(usize),
    /// CLIENT PAUSE holds it: the connection waits, then tries again from
    /// the start.
    Paused,
}

/// A command refused by admission, and how the refusal is answered.
struct Refusal {
    /// The command, once known: its rejected calls are counted.
    id: Option<usize>,
    err: Error,
    /// Refused past its syntax checks, as Redis's rejectCommand: a refused
    /// EXEC discards its transaction (EXECABORT).
    aborts_tx: bool,
}

impl Session {
    /// The checks of Redis's processCommand that depend on the server's
    /// state, in its order: out of memory (deny-oom commands, and anything
    /// queued inside MULTI), data that cannot reach the disk (write
    /// commands and PING get MISCONF) and min-replicas-to-write (write
    /// commands), with the flags of the call (a script's declared ones,
    /// EXEC's with its queue's).
    fn check_state(
        &mut self,
        engine: &Engine,
        spec: &CommandSpec,
        argv: &[&[u8]],
        disk_error: Option<crate::persist::DiskError>,
    ) -> Result<(), Error> {
        let flags = spec.call_flags(engine, &self.state, argv);
        if engine.config.maxmemory.load(Ordering::Relaxed) != 0 {
            let oom = self.out_of_memory;
            // Queueing may use any amount of memory: inside MULTI only
            // the commands that end the transaction or the connection pass.
            let reject = flags & flag::DENYOOM != 0
                || (self.state.multi.is_some() && !spec.has(flag::MULTI_OOM_OK));
            if oom && reject {
                return Err(Error::constant(
                    "OOM command not allowed when used memory > 'maxmemory'.",
                ));
            }
            // What scripts and transactions check again for the commands
            // they run (Redis's server.pre_command_oom_state).
            self.state.pre_command_oom = oom;
        } else {
            self.state.pre_command_oom = false;
        }
        if let Some(denied) = disk_error {
            if flags & flag::WRITE != 0 || spec.has(flag::DISK_ERROR_REFUSED) {
                return Err(Error::raw(denied.message()));
            }
        }
        if flags & flag::WRITE != 0 && !engine.good_replicas_ok() {
            return Err(Error::constant(
                "NOREPLICAS Not enough good replicas to write.",
            ));
        }
        Ok(())
    }

    /// Writes on a read-only replica (replica-read-only).
    fn check_read_only_replica(
        &self,
        engine: &Engine,
        spec: &CommandSpec,
        argv: &[&[u8]],
    ) -> Result<(), Error> {
        if engine.config.replica_read_only()
            && spec.call_flags(engine, &self.state, argv) & flag::WRITE != 0
        {
            return Err(Error::constant(
                "READONLY You can't write against a read only replica.",
            ));
        }
        Ok(())
    }

    /// A replica whose link is down with replica-serve-stale-data no runs
    /// only the commands flagged stale.
    fn check_stale_replica(
        &self,
        engine: &Engine,
        spec: &CommandSpec,
        argv: &[&[u8]],
    ) -> Result<(), Error> {
        if !engine.config.replica_serve_stale_data()
            && engine.repl.link.lock().state != crate::repl::LinkState::Up
            && spec.call_flags(engine, &self.state, argv) & flag::STALE == 0
        {
            return Err(Error::constant(
                "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            ));
        }
        Ok(())
    }

    /// Redis's rejectCommand: the error, and inside MULTI a doomed
    /// transaction; EXEC itself discards the transaction with EXECABORT.
    fn reject_command(&mut self, engine: &Engine, stats: &ThreadStats, id: usize, err: &Error) {
        let spec = table().get(id).spec;
        if self.state.multi.is_some() && spec.has(flag::RUNS_TX) {
            self.state.multi = None;
            self.state.info.in_multi.store(false, Ordering::Relaxed);
            self.state.info.multi_len.store(0, Ordering::Relaxed);
            engine.unwatch_all(&mut self.state, None);
            let abort =
                Error::concat(&[b"EXECABORT Transaction discarded because of: ", err.bytes()]);
            engine.reject(stats, &mut self.out, Some(id), &abort);
            // Redis's execCommandAbort: monitors saw MULTI, now see EXEC.
            if engine.monitors.any() {
                engine.feed_monitors(&self.state, false, "exec", &[b"exec"]);
            }
            return;
        }
        self.reject(engine, stats, Some(id), err);
    }

    /// A command refused before running; inside MULTI it also dooms the
    /// transaction (Redis's flagTransaction).
    fn reject(&mut self, engine: &Engine, stats: &ThreadStats, cmd_id: Option<usize>, err: &Error) {
        if let Some(multi) = self.state.multi.as_mut() {
            multi.aborted = true;
        }
        engine.reject(stats, &mut self.out, cmd_id, err);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.cancel_block();
        self.engine.unwatch_all(&mut self.state, None);
        if self.state.info.monitor.load(Ordering::Relaxed) {
            self.engine.monitors.remove(self.state.info.id);
        }
        self.engine.pubsub.leave_all(&mut self.state, None);
        self.engine.disable_tracking(&mut self.state);
        self.engine.clients.unregister(self.state.info.id);
    }
}

/// Redis's "unknown command" text: the name and up to 128 bytes of
/// arguments, as the client sent them (printf's `%.*s`: each up to a NUL).
fn unknown_command(argv: &[&[u8]]) -> Error {
    let mut text = b"ERR unknown command '".to_vec();
    text.extend_from_slice(printf_s(argv[0], 128));
    text.extend_from_slice(b"', with args beginning with: ");
    let start = text.len();
    for a in &argv[1..] {
        let len = text.len() - start;
        if len >= 128 {
            break;
        }
        text.push(b'\'');
        text.extend_from_slice(printf_s(a, 128 - len));
        text.extend_from_slice(b"' ");
    }
    Error::from_bytes(text)
}

/// The command's arity (Redis's commandCheckArity).
fn check_arity(spec: &CommandSpec, fullname: &str, argc: usize) -> Result<(), Error> {
    if spec.arity_ok(argc) {
        Ok(())
    } else {
        Err(Error::arity(fullname))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn run(session: &mut Session, argv: &[&[u8]]) -> Vec<u8> {
        session.out.buf.clear();
        session.execute(argv);
        std::mem::take(&mut session.out.buf)
    }

    /// While the dataset loads, a command not flagged loading gets Redis
    /// 7.0.15's shared.loadingerr (PING too: it is not flagged loading);
    /// one flagged loading (INFO) runs. No other client of goblin-server
    /// sees this state over the network (it serves none while it loads),
    /// so the check is tried here.
    #[test]
    fn loading_refuses_what_may_not_run_while_loading() {
        const LOADING: &[u8] = b"-LOADING Redis is loading the dataset in memory\r\n";
        let engine = Engine::new(Config::new());
        let mut s = engine.session(ConnInfo::embedded());
        engine.persist().loading.store(true, Ordering::Relaxed);
        assert_eq!(run(&mut s, &[b"GET", b"k"]), LOADING);
        assert_eq!(run(&mut s, &[b"PING"]), LOADING);
        assert!(run(&mut s, &[b"INFO", b"persistence"]).starts_with(b"$"));
        engine.persist().loading.store(false, Ordering::Relaxed);
        assert_eq!(run(&mut s, &[b"GET", b"k"]), b"$-1\r\n");
    }
}
