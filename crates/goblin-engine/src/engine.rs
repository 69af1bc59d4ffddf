//! `Engine`: one Goblin instance (keyspace, configuration, clients,
//! statistics) and `Session`, one client's connection to it.
//!
//! `Session::execute` is the path of every command, from any transport:
//! look up the command, check arity and authentication, find its keys, lock
//! their shards in order, run the handler, record statistics, unlock.

use crate::client::{ClientInfo, ClientRegistry, ClientState, ConnInfo, ReplyMode};
use crate::command::keys::key_positions;
use crate::command::spec::{flag, BeginSearch, CommandSpec, FindKeys};
use crate::command::{table, Ctx};
use crate::config::Config;
use crate::error::printf_s;
use crate::keyspace::{Keyspace, OwnedShard, ShardLocks};
use crate::protocol::ReplyWriter;
use crate::stats::{Stats, ThreadStats};
use crate::util::time::now_ms;
use crate::Error;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A request to stop the server (SHUTDOWN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownMode {
    Default,
    Save,
    NoSave,
}

/// What rebinds the server's listening sockets to (bind, port), or says
/// why it could not.
pub type Rebind = Box<dyn Fn(&str, u16) -> Result<(), String> + Send + Sync>;

/// What a CONFIG SET of tls-* parameters asks of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsChange {
    /// Load the TLS context again from the configuration (Redis's
    /// applyTlsCfg: only while tls-port, tls-replication or tls-cluster is
    /// on).
    Context,
    /// Listen for TLS clients on the configured tls-port (0: stop), loading
    /// the context first if there is none (Redis's applyTLSPort).
    Port,
}

/// Applies a `TlsChange`, or says why it could not be: `Err(true)` when the
/// TLS context did not load (the old one stays), `Err(false)` when the port
/// could not be listened on.
pub type TlsApply = Box<dyn Fn(TlsChange) -> Result<(), bool> + Send + Sync>;

/// One Goblin instance. Its parts are reached through accessors: the
/// subsystems by reference (`keyspace()`, `config()`, `acl()`...), the
/// engine's own few values by what is asked of them (`uptime()`,
/// `tcp_port()`, `request_shutdown()`...).
pub struct Engine {
    keyspace: Keyspace,
    config: Config,
    clients: ClientRegistry,
    stats: Stats,
    started: Instant,
    run_id: String,
    /// `stats.dirty_total()` at the last snapshot: the changes since then
    /// are the difference (`dirty`). Writers count in their own thread's
    /// block, so they never share a cache line for it.
    dirty_base: AtomicU64,
    last_save_ms: AtomicU64,
    /// When a replica last logged that it applies writes its disk refuses.
    replica_disk_error_logged_ms: AtomicU64,
    /// Active expiry can be paused (DEBUG SET-ACTIVE-EXPIRE 0).
    active_expire_enabled: AtomicBool,
    /// Expired keys counted before the last CONFIG RESETSTAT.
    expired_baseline: AtomicU64,
    shutdown: tokio::sync::watch::Sender<Option<ShutdownMode>>,
    /// A SIGTERM or SIGINT received and not yet acted on (its number, 0 for
    /// none): Redis's shutdown_asap and last_sig_received. The server acts
    /// on it from its cron, unless DEBUG PAUSE-CRON holds the cron, and
    /// SHUTDOWN ABORT clears it.
    shutdown_signal: std::sync::atomic::AtomicI32,
    /// A shutdown waiting for lagging replicas (shutdown-timeout).
    shutdown_state: crate::shutdown::Shutdown,
    /// Eviction under maxmemory and its counters.
    evictor: crate::evict::Evictor,
    /// The lazy-free worker.
    lazyfree: crate::lazyfree::LazyFree,
    /// used_memory_peak: the most used_memory was when sampled (after
    /// commands that move much memory, and by the cron).
    memory_peak: AtomicU64,
    /// used_memory_startup as measured when the engine was built (0: not
    /// measured, the structures' sizes stand in).
    startup_memory: AtomicU64,
    /// DEBUG PAUSE-CRON: the periodic work (active expiry, scheduled saves,
    /// a pending signal's shutdown) waits while set.
    cron_paused: AtomicBool,
    /// DEBUG REPLYBUFFER RESIZING: whether the cron may release an idle
    /// client's reply buffer (Redis's reply_buffer_resizing_enabled).
    pub reply_buffer_resizing: AtomicBool,
    /// DEBUG REPLYBUFFER PEAK-RESET-TIME: how often, in milliseconds, a
    /// client's reply buffer peak restarts (-1: never; Redis's
    /// reply_buffer_peak_reset_time).
    pub reply_buffer_peak_reset_ms: std::sync::atomic::AtomicI64,
    /// Filled by the server: the TCP port actually bound (INFO server).
    tcp_port: AtomicU64,
    /// Path of the config file the server was started with (INFO server).
    config_file: parking_lot::Mutex<String>,
    /// Clients with WATCHed keys; while zero, writes skip the WATCH check.
    watching: std::sync::atomic::AtomicUsize,
    /// Commands-per-second samples for INFO's instantaneous_ops_per_sec.
    ops_samples: parking_lot::Mutex<OpsSampler>,
    /// Lua scripting: the interpreters, scripts, libraries, and the state
    /// of the script in execution.
    scripting: crate::scripting::Scripting,
    /// ACL users and the ACL log.
    acl: crate::acl::Acl,
    /// Pub/Sub subscriptions, and the keyspace notifications' settings.
    pubsub: crate::pubsub::PubSub,
    /// Client-side caching: the tracking and prefix tables.
    tracking: crate::tracking::Tracking,
    /// Snapshots, the append-only file, loading.
    persist: crate::persist::Persistence,
    /// Replication: the stream, the replicas, the primary followed.
    repl: crate::repl::Replication,
    /// Rebinds the server's listening sockets to (bind, port) (CONFIG SET
    /// bind / port); installed by the server, absent in-process.
    listeners: parking_lot::Mutex<Option<Rebind>>,
    /// Applies CONFIG SET of tls-* (the server's TLS context and listener);
    /// absent in-process, where the values only change.
    tls: parking_lot::Mutex<Option<TlsApply>>,
    /// Where the clients cron resumes (a client id).
    clients_cron_cursor: AtomicU64,
    /// CLIENT PAUSE.
    pause: crate::pause::Pause,
    /// MONITOR clients.
    monitors: crate::monitor::Monitors,
    /// SLOWLOG's entries.
    slowlog: crate::slowlog::SlowLog,
    /// The latency monitor's events (LATENCY LATEST, HISTORY...).
    latency: crate::latency::LatencyMonitor,
    /// The engine itself, for work that outlives a command (background
    /// saves started by a command or the cron).
    me: std::sync::OnceLock<std::sync::Weak<Engine>>,
}

/// Redis's trackInstantaneousMetric: a ring of recent rates, per second,
/// of the commands processed, the bytes read from clients and the bytes
/// written to them (in that order).
#[derive(Default)]
struct OpsSampler {
    last_count: [u64; 3],
    last_ms: u64,
    samples: [[u64; 16]; 3],
    next: usize,
}

impl Engine {
    pub fn new(config: Config) -> Arc<Engine> {
        let net_before = crate::memory::allocator().map(|a| (a.thread_net)());
        let databases = config.get_i64("databases").max(1) as usize;
        let mut shards = config.get_i64("shards") as usize;
        if shards == 0 {
            let cores = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1);
            shards = (cores * 4).next_power_of_two().clamp(4, 256);
        }
        let run_id: String = (0..40)
            .map(|_| std::char::from_digit(fastrand::u32(0..16), 16).unwrap())
            .collect();
        let (tx, _) = tokio::sync::watch::channel(None);
        let clients = ClientRegistry::default();
        let scripting = crate::scripting::Scripting::new(&clients);
        let pubsub = crate::pubsub::PubSub::new(clients.memory().clone());
        let engine = Arc::new(Engine {
            keyspace: Keyspace::new(
                databases,
                shards,
                crate::keyspace::KeyspaceEnv::new(crate::util::blocking::release_worker),
            ),
            stats: Stats::new(table().len()),
            config,
            clients,
            scripting,
            acl: crate::acl::Acl::new(),
            pubsub,
            tracking: crate::tracking::Tracking::new(shards),
            started: Instant::now(),
            run_id,
            dirty_base: AtomicU64::new(0),
            last_save_ms: AtomicU64::new(now_ms()),
            replica_disk_error_logged_ms: AtomicU64::new(0),
            active_expire_enabled: AtomicBool::new(true),
            expired_baseline: AtomicU64::new(0),
            shutdown: tx,
            shutdown_signal: std::sync::atomic::AtomicI32::new(0),
            shutdown_state: Default::default(),
            cron_paused: AtomicBool::new(false),
            startup_memory: AtomicU64::new(0),
            reply_buffer_resizing: AtomicBool::new(true),
            reply_buffer_peak_reset_ms: std::sync::atomic::AtomicI64::new(
                crate::client::REPLY_BUFFER_PEAK_RESET_MS,
            ),
            tcp_port: AtomicU64::new(0),
            config_file: parking_lot::Mutex::new(String::new()),
            ops_samples: parking_lot::Mutex::new(OpsSampler::default()),
            watching: std::sync::atomic::AtomicUsize::new(0),
            persist: crate::persist::Persistence::default(),
            repl: Default::default(),
            slowlog: Default::default(),
            latency: Default::default(),
            monitors: Default::default(),
            pause: Default::default(),
            clients_cron_cursor: AtomicU64::new(0),
            listeners: parking_lot::Mutex::new(None),
            tls: parking_lot::Mutex::new(None),
            evictor: Default::default(),
            lazyfree: Default::default(),
            memory_peak: AtomicU64::new(0),
            me: std::sync::OnceLock::new(),
        });
        let _ = engine.me.set(Arc::downgrade(&engine));
        engine.apply_config();
        // used_memory_startup as Redis measures it, what the allocator
        // handed out for the engine's construction (the interpreters'
        // part counts as the scripts'), where the host installed one.
        if let (Some(before), Some(a)) = (net_before, crate::memory::allocator()) {
            let grown = (a.thread_net)().saturating_sub(before);
            let scripts = engine.scripts_memory_now();
            engine
                .startup_memory
                .store(grown.saturating_sub(scripts), Ordering::Relaxed);
        }
        let password = engine.config.get("requirepass");
        if !password.is_empty() {
            engine.acl.set_default_password(password.as_bytes());
        }
        engine
    }

    /// Periodic work, called `hz` times a second by the host: active
    /// expiry and metric sampling (Redis's serverCron).
    pub fn cron(&self) {
        if self.cron_paused() {
            return;
        }
        let cycle = crate::expire::active_expire_cycle(self);
        if self.config.get_bool("activerehashing") {
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
            .resize(c.get_i64("repl-backlog-size").max(1) as usize);
        self.repl.cron(
            c.get_i64("repl-ping-replica-period"),
            c.get_i64("repl-backlog-ttl"),
            c.get_i64("min-replicas-max-lag"),
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
        let max_idle = self.config.get_i64("timeout").max(0) as u64;
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

    pub fn instantaneous_ops(&self) -> u64 {
        let s = self.ops_samples.lock();
        s.samples[0].iter().sum::<u64>() / s.samples[0].len() as u64
    }

    /// INFO's instantaneous_input_kbps and instantaneous_output_kbps: the
    /// recent bytes per second from and to clients, in KiB.
    pub fn instantaneous_kbps(&self) -> (f64, f64) {
        let s = self.ops_samples.lock();
        let avg = |m: usize| (s.samples[m].iter().sum::<u64>() / s.samples[m].len() as u64) as f64;
        (avg(1) / 1024.0, avg(2) / 1024.0)
    }

    /// CONFIG RESETSTAT.
    pub fn reset_stats(&self) {
        self.stats.reset();
        let expired: u64 = (0..self.keyspace.shard_count())
            .map(|i| {
                self.keyspace
                    .lock(i)
                    .dbs
                    .iter()
                    .map(|d| d.expired_keys)
                    .sum::<u64>()
            })
            .sum();
        self.expired_baseline.store(expired, Ordering::Relaxed);
        self.evictor.reset_stats();
        self.lazyfree.reset_stats();
        for c in [
            &self.repl.sync_full,
            &self.repl.sync_partial_ok,
            &self.repl.sync_partial_err,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }

    /// Eviction under maxmemory.
    pub fn evictor(&self) -> &crate::evict::Evictor {
        &self.evictor
    }

    /// The lazy-free worker.
    pub fn lazyfree(&self) -> &crate::lazyfree::LazyFree {
        &self.lazyfree
    }

    /// used_memory_startup: what the engine's own structures hold before
    /// any key or client: its struct and the shards' database slices.
    pub fn memory_startup(&self) -> u64 {
        use crate::keyspace::memory::alloc_size;
        let measured = self.startup_memory.load(Ordering::Relaxed);
        if measured > 0 {
            return measured;
        }
        let slices = self.keyspace.shard_count() * self.keyspace.databases();
        (alloc_size(std::mem::size_of::<Engine>())
            + slices * std::mem::size_of::<crate::keyspace::Db>()) as u64
    }

    /// Records used_memory for used_memory_peak and returns the peak.
    pub fn memory_peak(&self, used: u64) -> u64 {
        self.memory_peak
            .fetch_max(used, Ordering::Relaxed)
            .max(used)
    }

    /// Replication: the stream, the replicas, the primary followed.
    pub fn repl(&self) -> &crate::repl::Replication {
        &self.repl
    }

    /// The databases and their keys.
    pub fn keyspace(&self) -> &Keyspace {
        &self.keyspace
    }

    /// The configuration (CONFIG GET/SET).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The connected clients.
    pub fn clients(&self) -> &ClientRegistry {
        &self.clients
    }

    /// The counters of INFO stats and commandstats.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Lua scripting: the interpreters, scripts, libraries, and the state
    /// of the script in execution.
    pub fn scripting(&self) -> &crate::scripting::Scripting {
        &self.scripting
    }

    /// ACL users and the ACL log.
    pub fn acl(&self) -> &crate::acl::Acl {
        &self.acl
    }

    /// Pub/Sub subscriptions, and the keyspace notifications' settings.
    pub fn pubsub(&self) -> &crate::pubsub::PubSub {
        &self.pubsub
    }

    /// Client-side caching (CLIENT TRACKING).
    #[inline]
    pub fn tracking(&self) -> &crate::tracking::Tracking {
        &self.tracking
    }

    /// Snapshots, the append-only file, loading.
    pub fn persist(&self) -> &crate::persist::Persistence {
        &self.persist
    }

    /// CLIENT PAUSE.
    pub fn pause(&self) -> &crate::pause::Pause {
        &self.pause
    }

    /// The shutdown that waits for lagging replicas, if one does.
    pub fn shutdown_state(&self) -> &crate::shutdown::Shutdown {
        &self.shutdown_state
    }

    /// MONITOR clients.
    pub fn monitors(&self) -> &crate::monitor::Monitors {
        &self.monitors
    }

    /// SLOWLOG's entries.
    pub fn slowlog(&self) -> &crate::slowlog::SlowLog {
        &self.slowlog
    }

    /// The latency monitor's events (LATENCY LATEST, HISTORY...).
    pub fn latency(&self) -> &crate::latency::LatencyMonitor {
        &self.latency
    }

    /// How long this engine has run (INFO's uptime).
    pub fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// INFO's run_id: random, this engine's for its life.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// When the last snapshot was saved or loaded (ms since the epoch).
    pub fn last_save_ms(&self) -> u64 {
        self.last_save_ms.load(Ordering::Relaxed)
    }

    pub fn set_last_save_ms(&self, ms: u64) {
        self.last_save_ms.store(ms, Ordering::Relaxed);
    }

    /// Whether the cron expires keys (DEBUG SET-ACTIVE-EXPIRE).
    pub fn active_expire_enabled(&self) -> bool {
        self.active_expire_enabled.load(Ordering::Relaxed)
    }

    pub fn set_active_expire(&self, on: bool) {
        self.active_expire_enabled.store(on, Ordering::Relaxed);
    }

    /// Expired keys counted before the last CONFIG RESETSTAT: INFO's
    /// expired_keys is the count since.
    pub fn expired_baseline(&self) -> u64 {
        self.expired_baseline.load(Ordering::Relaxed)
    }

    /// The TCP port the server bound (INFO server); 0 in-process.
    pub fn tcp_port(&self) -> u16 {
        self.tcp_port.load(Ordering::Relaxed) as u16
    }

    pub fn set_tcp_port(&self, port: u16) {
        self.tcp_port.store(port as u64, Ordering::Relaxed);
    }

    /// The config file the server was started with (INFO server, CONFIG
    /// REWRITE); empty without one.
    pub fn config_file(&self) -> String {
        self.config_file.lock().clone()
    }

    pub fn set_config_file(&self, path: String) {
        *self.config_file.lock() = path;
    }

    /// Whether any client WATCHes keys: while none does, writes skip the
    /// WATCH check.
    #[inline]
    pub fn anyone_watching(&self) -> bool {
        self.watching.load(Ordering::Relaxed) != 0
    }

    /// Counts a client that starts WATCHing (`unwatch_all` counts it out).
    pub fn started_watching(&self) {
        self.watching.fetch_add(1, Ordering::Relaxed);
    }

    /// The requests to stop (SHUTDOWN, a signal): the server waits on them.
    pub fn shutdown_requests(&self) -> tokio::sync::watch::Receiver<Option<ShutdownMode>> {
        self.shutdown.subscribe()
    }

    /// Installs what rebinds the server's listening sockets to (bind, port)
    /// on CONFIG SET bind / port; without it (in-process) they only change.
    pub fn set_rebind(&self, rebind: Rebind) {
        *self.listeners.lock() = Some(rebind);
    }

    /// Installs what applies CONFIG SET of tls-* parameters (the server's
    /// TLS context and listener).
    pub fn set_tls_apply(&self, apply: TlsApply) {
        *self.tls.lock() = Some(apply);
    }

    /// CONFIG SET of tls-* parameters (Redis's applyTlsCfg and
    /// applyTLSPort): any of them but tls-port and tls-auth-clients loads
    /// the TLS context again, even when its value is unchanged (a
    /// certificate renewed in place is read again); a changed tls-port
    /// moves the TLS listener. `before` holds the values before the change.
    /// The error names the parameter, with Redis's text.
    fn apply_tls(&self, before: &[(&str, String)]) -> Result<(), (String, String)> {
        let context = before
            .iter()
            .find(|(n, _)| n.starts_with("tls-") && *n != "tls-port" && *n != "tls-auth-clients");
        let port = before
            .iter()
            .any(|(n, v)| *n == "tls-port" && *v != self.config.get("tls-port"));
        if context.is_none() && !port {
            return Ok(());
        }
        let hook = self.tls.lock();
        let Some(apply) = hook.as_ref() else {
            return Ok(());
        };
        const UNABLE: &str = "Unable to update TLS configuration. Check server logs.";
        if let Some((name, _)) = context {
            if apply(TlsChange::Context).is_err() {
                return Err((name.to_string(), UNABLE.to_string()));
            }
        }
        if port {
            return apply(TlsChange::Port).map_err(|context| {
                let reason = if context {
                    UNABLE
                } else {
                    "Unable to listen on this port. Check server logs."
                };
                ("tls-port".to_string(), reason.to_string())
            });
        }
        Ok(())
    }

    /// This engine as a weak reference, for threads that must not keep it
    /// alive.
    pub fn weak(&self) -> std::sync::Weak<Engine> {
        self.me.get().cloned().unwrap_or_default()
    }

    /// This engine as an `Arc` (it always lives in one).
    pub fn arc(&self) -> Arc<Engine> {
        self.me
            .get()
            .and_then(|w| w.upgrade())
            .expect("the engine lives in an Arc")
    }

    /// Side effects of CONFIG SET beyond storing the value.
    /// `holds_shards`: the caller holds shard locks (a CONFIG SET inside a
    /// transaction or a script); changes that need every shard are then
    /// left to the cron.
    pub fn config_changed(&self, pairs: &[(&str, &str)], holds_shards: bool) -> Result<(), Error> {
        self.apply_config();
        let names: Vec<&str> = pairs
            .iter()
            .filter_map(|(n, _)| crate::config::spec(n).map(|s| s.name))
            .collect();
        // requirepass is the default user's password (Redis's
        // ACLUpdateDefaultUserPassword).
        if names.contains(&"slowlog-max-len") {
            self.slowlog
                .trim(self.config.slowlog_max_len.load(Ordering::Relaxed));
        }
        if names.contains(&"requirepass") {
            self.acl
                .set_default_password(self.config.get("requirepass").as_bytes());
        }
        if names.contains(&"maxmemory") {
            // Redis's updateMaxmemory: evictions start at once, in the
            // background (the caller may hold shards).
            let max = self.config.maxmemory.load(Ordering::Relaxed);
            if max != 0 {
                let used = self.used_memory();
                if max < used {
                    crate::log::warning(&format!(
                        "WARNING: the new maxmemory value set via CONFIG SET ({max}) is smaller than the current memory usage ({used}). This will result in key eviction and/or the inability to accept new write commands depending on the maxmemory-policy."
                    ));
                }
                self.start_eviction_worker();
            }
        }
        crate::persist::config_changed(&self.arc(), &names, holds_shards).map_err(Error::err)
    }

    /// CONFIG SET of bind or port: listens on the new addresses (Redis's
    /// applyBind and updatePort). `before` holds the values before the
    /// change; an unchanged value rebinds nothing. The error names the
    /// parameter, with Redis's text.
    pub fn apply_listeners(&self, before: &[(&str, String)]) -> Result<(), (String, String)> {
        let changed = |name: &str| {
            before
                .iter()
                .any(|(n, v)| *n == name && *v != self.config.get(name))
        };
        let (bind, port) = (changed("bind"), changed("port"));
        if !bind && !port {
            return self.apply_tls(before);
        }
        let hook = self.listeners.lock();
        let Some(rebind) = hook.as_ref() else {
            return Ok(());
        };
        let port_value = self.config.get_i64("port") as u16;
        rebind(&self.config.get("bind"), port_value).map_err(|_| {
            if bind {
                (
                    "bind".to_string(),
                    "Failed to bind to specified addresses.".to_string(),
                )
            } else {
                (
                    "port".to_string(),
                    "Unable to listen on this port".to_string(),
                )
            }
        })?;
        drop(hook);
        self.apply_tls(before)
    }

    /// Pushes configuration that lives outside the config table into the
    /// parts of the engine that read it on hot paths.
    pub fn apply_config(&self) {
        // maxmemory-clients (or maxmemory under a percentage): a lower limit
        // evicts at once, as Redis's CONFIG SET does before its next
        // command.
        self.clients
            .set_eviction_limit(crate::client::eviction_limit(
                &self.config.get("maxmemory-clients"),
                self.config.maxmemory.load(Ordering::Relaxed),
            ));
        self.clients.evict_over_limit();
        self.acl
            .set_pubsub_default(self.config.get("acl-pubsub-default") == "allchannels");
        let [hard, soft, secs] = self
            .config
            .obuf_pubsub
            .each_ref()
            .map(|v| v.load(Ordering::Relaxed));
        self.pubsub.set_output_limits(hard, soft, secs);
        let notify =
            crate::pubsub::notify::parse(&self.config.get("notify-keyspace-events")).unwrap_or(0);
        self.pubsub.set_notify_flags(notify);
        let (new, expired) = crate::pubsub::notify::wants_db_events(notify);
        self.keyspace.env().want_events(new, expired);
        self.evictor.configure(&self.config);
        self.tracking
            .set_max_keys(self.config.get_i64("tracking-table-max-keys").max(0) as u64);
        if self.config.maxmemory.load(Ordering::Relaxed) == 0 {
            self.keyspace.env().set_dataset_limit(0);
        } else {
            self.memory_to_free();
        }
        self.keyspace
            .env()
            .set_access(crate::evict::access_policy(&self.config));
        // Redis's writeCommandsDeniedByDiskError looks at a failed save
        // only where save points exist.
        self.persist.stop_writes_on_bgsave_error.store(
            self.config.get_bool("stop-writes-on-bgsave-error")
                && !self.config.get("save").trim().is_empty(),
            Ordering::Relaxed,
        );
    }

    /// INFO persistence.
    pub fn persistence_info(&self) -> String {
        crate::persist::info(self)
    }

    /// DEBUG RELOAD / DEBUG LOADAOF: save and load the dataset back.
    pub fn debug_reload(
        &self,
        locks: &mut ShardLocks<'_>,
        how: crate::persist::Reload,
    ) -> Result<(), Error> {
        crate::persist::debug_reload(&self.arc(), locks, how).map_err(Error::err)
    }

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

    /// Changes since the last snapshot (Redis's server.dirty).
    pub fn dirty(&self) -> u64 {
        let base = self.dirty_base.load(Ordering::Relaxed);
        self.stats.dirty_total().saturating_sub(base)
    }

    /// A snapshot of everything: no changes since.
    pub fn reset_dirty(&self) {
        self.dirty_base
            .store(self.stats.dirty_total(), Ordering::Relaxed);
    }

    /// A snapshot of the first `changes` changes was taken (a background
    /// save that started when `dirty` was `changes`).
    pub fn discount_dirty(&self, changes: u64) {
        let total = self.stats.dirty_total();
        let _ = self
            .dirty_base
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |base| {
                Some(base.saturating_add(changes).min(total))
            });
    }

    pub fn request_shutdown(&self, mode: ShutdownMode) {
        let _ = self.shutdown.send(Some(mode));
    }

    /// A shutdown signal arrived (Redis's sigShutdownHandler): remembered
    /// until the cron acts on it. Returns the signal already pending, if
    /// any (a second SIGINT means "exit now").
    pub fn signal_shutdown(&self, signal: i32) -> i32 {
        self.shutdown_signal.swap(signal, Ordering::SeqCst)
    }

    /// The pending shutdown signal, 0 for none.
    pub fn pending_shutdown_signal(&self) -> i32 {
        self.shutdown_signal.load(Ordering::SeqCst)
    }

    /// SHUTDOWN ABORT, or a shutdown that failed: forgets the pending
    /// signal. Returns whether one was pending.
    pub fn cancel_shutdown_signal(&self) -> bool {
        self.shutdown_signal.swap(0, Ordering::SeqCst) != 0
    }

    /// DEBUG PAUSE-CRON.
    pub fn set_cron_paused(&self, paused: bool) {
        self.cron_paused.store(paused, Ordering::Relaxed);
    }

    pub fn cron_paused(&self) -> bool {
        self.cron_paused.load(Ordering::Relaxed)
    }

    /// The shards a command must hold, from its keys.
    pub fn locks_for<'e>(
        &'e self,
        spec: &CommandSpec,
        argv: &[&[u8]],
        db_all: bool,
    ) -> ShardLocks<'e> {
        self.lock_keys(spec, argv, db_all, None)
            .expect("locking without a give-up condition always succeeds")
    }

    /// `locks_for`, giving up (None) when `give_up` turns true while it
    /// waits for a shard.
    pub fn lock_keys<'e>(
        &'e self,
        spec: &CommandSpec,
        argv: &[&[u8]],
        db_all: bool,
        give_up: Option<&dyn Fn() -> bool>,
    ) -> Option<ShardLocks<'e>> {
        let ks = &self.keyspace;
        let lock_set = |set: Option<Vec<usize>>| match (give_up, set) {
            (None, None) => Some(ks.lock_all()),
            (None, Some(v)) => Some(ks.lock_set(v)),
            (Some(g), set) => ks.lock_polling(set, g),
        };
        // A keyed EVAL script (see scripting::keyed) holds only the shards
        // of its KEYS, found below from EVAL's key spec.
        if db_all || spec.needs_all_shards(self, argv) {
            return lock_set(None);
        }
        // Fast path: a single key at a fixed position.
        if let Some(key) = sole_key(spec, argv) {
            return match key {
                Some(key) => {
                    let idx = ks.shard_of_key(key);
                    match give_up {
                        None => Some(ks.lock_one(idx)),
                        Some(g) => ks.lock_one_polling(idx, g),
                    }
                }
                None => Some(ShardLocks::None),
            };
        }
        if spec.keys.is_empty() && spec.keys_fn.is_none() {
            return Some(ShardLocks::None);
        }
        match key_positions(spec, argv) {
            Some(keys) => lock_set(Some(
                keys.iter()
                    .map(|(i, _)| ks.shard_of_key(argv[*i]))
                    .collect(),
            )),
            // Arguments that do not fit the key specs: hold everything; the
            // command will reject them itself.
            None => lock_set(None),
        }
    }

    /// Records a refused command in the ACL log (Redis's addACLLogEntry).
    pub fn acl_log_denied(
        &self,
        client: &ClientState,
        denied: crate::acl::Denied,
        context: crate::acl::LogContext,
        cmd_id: usize,
        argv: &[&[u8]],
    ) {
        use crate::acl::{Denied, LogReason};
        let (reason, object) = match denied {
            Denied::Command => (LogReason::Command, table().get(cmd_id).fullname.as_bytes()),
            Denied::Key(i) => (LogReason::Key, argv[i]),
            Denied::Channel(i) => (LogReason::Channel, argv[i]),
        };
        let username = client
            .user
            .as_ref()
            .map_or(b"default".to_vec(), |u| u.name().to_vec());
        self.acl_log(&client.info, reason, context, object, username);
    }

    /// Adds an ACL log entry about the client `info`.
    pub fn acl_log(
        &self,
        info: &crate::client::ClientInfo,
        reason: crate::acl::LogReason,
        context: crate::acl::LogContext,
        object: &[u8],
        username: Vec<u8>,
    ) {
        let now = now_ms();
        let entry = crate::acl::LogEntry {
            count: 1,
            reason,
            context,
            object: object.to_vec(),
            username,
            ctime_ms: now,
            client_info: info.line(now),
        };
        let max = self.config.get_i64("acllog-max-len").max(0) as usize;
        self.acl.log(entry, max);
    }

    /// Forgets every WATCHed key of a client (UNWATCH, EXEC, DISCARD,
    /// RESET, a disconnect), taking the needed shard locks unless the
    /// caller holds them.
    pub fn unwatch_all(&self, client: &mut ClientState, locks: Option<&mut ShardLocks<'_>>) {
        let Some(watching) = client.watching.take() else {
            return;
        };
        let forget = |locks: &mut ShardLocks<'_>| {
            for (db, key) in &watching.keys {
                let idx = self.keyspace.shard_of_key(key);
                locks.shard(idx).dbs[*db]
                    .watchers
                    .remove(key, &watching.state);
            }
        };
        match locks {
            Some(locks) => forget(locks),
            None => {
                let shards = watching
                    .keys
                    .iter()
                    .map(|(_, k)| self.keyspace.shard_of_key(k))
                    .collect();
                forget(&mut self.keyspace.lock_set(shards));
            }
        }
        self.watching.fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether writes are allowed by min-replicas-to-write (Redis's
    /// checkGoodReplicasStatus): a replica always writes what its primary
    /// sends; a primary needs that many good replicas.
    /// A replica applies its primary's writes though they cannot reach
    /// its disk (Redis's replica-ignore-disk-write-errors yes: its log keeps
    /// the records and retries, see persist::aof), and says so at most
    /// every 10 seconds.
    #[cold]
    pub(crate) fn note_replica_disk_error(&self) {
        let now = now_ms();
        let last = self.replica_disk_error_logged_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= 10_000
            && self
                .replica_disk_error_logged_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            crate::log::warning(
                "Replica is applying a command even though it is unable to write to disk.",
            );
        }
    }

    pub fn good_replicas_ok(&self) -> bool {
        let min = self.config.min_replicas_to_write.load(Ordering::Relaxed);
        if min <= 0 || self.repl.is_replica() {
            return true;
        }
        self.repl
            .refresh_good(self.config.get_i64("min-replicas-max-lag"));
        self.repl.good_replicas.load(Ordering::Relaxed) as i64 >= min
    }

    /// Counts a command a script tried to run and that was refused before
    /// running (Redis's afterErrorReply plus incrCommandStatsOnError).
    pub fn count_script_rejection(&self, stats: &ThreadStats, cmd_id: Option<usize>, err: &str) {
        if let Some(id) = cmd_id {
            stats.commands[id].rejected.fetch_add(1, Ordering::Relaxed);
        }
        stats.error_replies.fetch_add(1, Ordering::Relaxed);
        let code = match err.strip_prefix('-') {
            Some(rest) => crate::protocol::reply::error_code(rest.as_bytes()),
            None => b"ERR",
        };
        self.stats.record_error(code);
    }

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
        use crate::persist::aof::Record;
        let repl_only = effects.repl_only && client.pending_log.is_empty();
        let effects_unwrapped = effects.unwrapped;
        let mut records = std::mem::take(&mut client.pending_log);
        let nested_records = records.len();
        for shard in locks.held_mut() {
            crate::persist::collect_expired(shard, &mut records);
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
            client.pending_log = records;
            return;
        }
        // A replica passes its primary's commands on as they came, while
        // the command still holds its shards.
        if client.from_master && !client.master_bytes.is_empty() {
            self.repl
                .stream
                .append_bytes(&std::mem::take(&mut client.master_bytes));
        }
        if records.is_empty() {
            return;
        }
        if records.len() > 1 && !effects_unwrapped {
            let first = records[0].db;
            let last = records[records.len() - 1].db;
            records.insert(
                0,
                Record {
                    db: first,
                    argv: vec![b"MULTI".to_vec()],
                },
            );
            records.push(Record {
                db: last,
                argv: vec![b"EXEC".to_vec()],
            });
        }
        // A call for the replicas only (PUBLISH) stays out of the file when
        // it is all there is to log.
        if self.persist.aof.is_on() && !(repl_only && records.len() == 1) {
            let end = self.persist.aof.append(&records);
            if !expiries_only {
                client.aof_offset = end;
            }
        }
        if self.repl.stream.feeding() {
            self.feed_replicas(&records);
            client.repl_offset = self.repl.stream.offset();
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

    fn note_errors(&self, stats: &ThreadStats, out: &ReplyWriter, n: u64) {
        stats.error_replies.fetch_add(n, Ordering::Relaxed);
        if let Some(code) = &out.last_error_code {
            self.stats.record_error(code);
        }
    }

    /// An error raised before the command ran (arity, auth...): counted as
    /// a rejected call of `cmd_id` when the command is known.
    fn reject(
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
                sole_key(spec, argv)
                    .flatten()
                    .map(|key| engine.keyspace.shard_of_key(key))
            }
            _ => None,
        };
        let kept = pipeline.as_deref_mut().and_then(|p| p.held.take());
        // Waiting behind a script: give up with BUSY once it has run too
        // long, as if the command had arrived then.
        let give_up = || engine.scripting.busy_error().is_some();
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
                .scripting
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

    /// Whether, and how, a command may run now: every check Redis's
    /// processCommand makes before it calls a command, in its order, as
    /// one step. It writes no reply: the caller answers a refusal. Only a
    /// refusal by ACL leaves a trace here (the ACL log, as Redis's
    /// processCommand writes it), and a command that passes the ACL is
    /// recorded as the client's last (CLIENT LIST's cmd=).
    fn admit(&mut self, engine: &Engine, argv: &[&[u8]]) -> Result<Admission, Refusal> {
        let t = table();
        let id = self.resolve(argv)?;
        let entry = t.get(id);
        let spec = entry.spec;
        let refuse = |err: Error| Refusal {
            id: Some(id),
            err,
            aborts_tx: false,
        };
        if !spec.arity_ok(argv.len()) {
            return Err(refuse(Error::arity(&entry.fullname)));
        }
        if !self.state.authenticated && !spec.has(flag::NO_AUTH) && engine.acl.auth_required() {
            return Err(refuse(Error::NOAUTH));
        }
        // From here on a refusal is Redis's rejectCommand: a refused EXEC
        // discards its transaction.
        let reject = |err: Error| Refusal {
            id: Some(id),
            err,
            aborts_tx: true,
        };
        if let Some(denied) = self.state.user.as_mut().and_then(|u| u.denies(id, argv)) {
            let context = if self.state.multi.is_some() {
                crate::acl::LogContext::Multi
            } else {
                crate::acl::LogContext::Toplevel
            };
            engine.acl_log_denied(&self.state, denied, context, id, argv);
            return Err(reject(Error::raw(denied.noperm(&entry.fullname))));
        }
        self.state.info.last_cmd.store(id, Ordering::Relaxed);

        // A replica of this engine may not touch the keyspace (Redis's
        // "Replica can't interact with the keyspace").
        if self.state.replica.is_some()
            && spec.call_flags(engine, &self.state, argv)
                & (flag::WRITE | flag::READONLY | flag::MAY_REPLICATE)
                != 0
        {
            return Err(reject(Error::constant(
                "ERR Replica can't interact with the keyspace",
            )));
        }
        // A replica: writes are its primary's (replica-read-only), and
        // with the link down only commands flagged stale run when
        // replica-serve-stale-data is no.
        if engine.repl.is_replica() && !self.state.from_master {
            self.check_replica(engine, spec, argv).map_err(reject)?;
        }

        // While the dataset loads (DEBUG RELOAD, DEBUG LOADAOF) only
        // commands flagged loading run; the log being replayed does.
        if engine.persist.loading.load(Ordering::Relaxed)
            && !spec.has(flag::LOADING)
            && !self.state.replaying
        {
            return Err(reject(Error::constant(
                "LOADING Redis is loading the dataset in memory",
            )));
        }
        // A script running past busy-reply-threshold: only allow-busy
        // commands run.
        if !spec.has(flag::ALLOW_BUSY) {
            if let Some(err) = engine.scripting.busy_error() {
                return Err(reject(err));
            }
        }
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
        // A RESP2 client that subscribes may only subscribe, leave, PING,
        // QUIT or RESET: its replies are messages.
        if self.state.subscribed() && self.state.resp == 2 && !spec.has(flag::SUBSCRIBED_OK) {
            return Err(reject(Error::err(format_args!(
                "Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                entry.fullname
            ))));
        }
        // CLIENT PAUSE, after the checks that answer at once.
        if engine.pause.active() && !self.state.internal {
            let flags = spec.call_flags(engine, &self.state, argv);
            if engine.pause.holds(flags, now_ms()) {
                return Ok(Admission::Paused);
            }
        }
        if self.state.multi.is_some() && !spec.has(flag::TX_CONTROL) {
            if spec.has(flag::NO_MULTI) {
                return Err(refuse(Error::err(
                    "Command not allowed inside a transaction",
                )));
            }
            return Ok(Admission::Queue(id));
        }
        Ok(Admission::Run(id))
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

    /// A replica's refusals (Redis's processCommand): writes on a
    /// read-only replica, and anything not flagged stale while the link is
    /// down and replica-serve-stale-data is no.
    fn check_replica(
        &mut self,
        engine: &Engine,
        spec: &CommandSpec,
        argv: &[&[u8]],
    ) -> Result<(), Error> {
        let flags = spec.call_flags(engine, &self.state, argv);
        if flags & flag::WRITE != 0 && engine.config.get_bool("replica-read-only") {
            return Err(Error::constant(
                "READONLY You can't write against a read only replica.",
            ));
        }
        if flags & flag::STALE == 0
            && engine.repl.link.lock().state != crate::repl::LinkState::Up
            && !engine.config.get_bool("replica-serve-stale-data")
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

/// For a command whose only key is at a fixed position (most commands),
/// that key (None when the arguments stop short of it); None for any other
/// command.
pub(crate) fn sole_key<'k>(spec: &CommandSpec, argv: &[&'k [u8]]) -> Option<Option<&'k [u8]>> {
    let [ks_spec] = spec.keys else {
        return None;
    };
    match (
        ks_spec.begin,
        ks_spec.find,
        spec.keys_fn.is_none() && ks_spec.flags & crate::command::kflag::NOT_KEY == 0,
    ) {
        (BeginSearch::Index(pos), FindKeys::Range { lastkey: 0, .. }, true) => {
            Some(argv.get(pos as usize).copied())
        }
        _ => None,
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
