//! `Engine`: one Goblin instance's state (keyspace, configuration,
//! clients, statistics, and each subsystem's own state) and the changes
//! to it that are not commands (configuration applied, dirty counts).
//!
//! Its children: `cron` (the periodic work), `call` (one command run with
//! its shards held) and `session` (one client's connection: the pipeline
//! every command takes, from any transport).

mod blocking;
mod call;
mod cron;
mod evict;
mod keys;
mod scripts;
pub mod session;
mod tracking;
pub mod wait;

pub use scripts::ScriptEngines;
pub use session::{Flow, Pipeline, Session};

use crate::client::{ClientInfo, ClientRegistry, ClientState, ConnInfo, ReplyMode};
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
    scripting: Box<dyn ScriptEngines>,
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
    /// Builds an engine for a command table of `commands` entries (one
    /// statistics slot each); `Engine::new`, in the command layer,
    /// registers the families into the table first.
    pub(crate) fn build(
        config: Config,
        commands: usize,
        scripts: impl FnOnce(&ClientRegistry) -> Box<dyn ScriptEngines>,
    ) -> Arc<Engine> {
        let net_before = crate::memory::allocator().map(|a| (a.thread_net)());
        let databases = config.databases().max(1) as usize;
        let mut shards = config.shards() as usize;
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
        let scripting = scripts(&clients);
        let pubsub =
            crate::pubsub::PubSub::new(clients.memory().clone(), clients.command_names_shared());
        let engine = Arc::new(Engine {
            keyspace: Keyspace::new(
                databases,
                shards,
                crate::keyspace::KeyspaceEnv::new(crate::util::blocking::release_worker),
            ),
            stats: Stats::new(commands),
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
        let password = engine.config.requirepass();
        if !password.is_empty() {
            engine.acl.set_default_password(password.as_bytes());
        }
        engine
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
    pub fn scripts(&self) -> &dyn ScriptEngines {
        &*self.scripting
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
            .any(|(n, v)| *n == "tls-port" && *v != self.config.tls_port().to_string());
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
                .set_default_password(self.config.requirepass().as_bytes());
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
        let changed = |name: &str, now: String| before.iter().any(|(n, v)| *n == name && *v != now);
        let (bind, port) = (
            changed("bind", self.config.bind()),
            changed("port", self.config.port().to_string()),
        );
        if !bind && !port {
            return self.apply_tls(before);
        }
        let hook = self.listeners.lock();
        let Some(rebind) = hook.as_ref() else {
            return Ok(());
        };
        let port_value = self.config.port() as u16;
        rebind(&self.config.bind(), port_value).map_err(|_| {
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
                &self.config.maxmemory_clients(),
                self.config.maxmemory.load(Ordering::Relaxed),
            ));
        self.clients.evict_over_limit();
        self.acl
            .set_pubsub_default(self.config.acl_pubsub_default() == "allchannels");
        let [hard, soft, secs] = self
            .config
            .obuf_pubsub
            .each_ref()
            .map(|v| v.load(Ordering::Relaxed));
        self.pubsub.set_output_limits(hard, soft, secs);
        let notify =
            crate::pubsub::notify::parse(&self.config.notify_keyspace_events()).unwrap_or(0);
        self.pubsub.set_notify_flags(notify);
        let (new, expired) = crate::pubsub::notify::wants_db_events(notify);
        self.keyspace.env().want_events(new, expired);
        self.evictor.configure(&self.config);
        self.tracking
            .set_max_keys(self.config.tracking_table_max_keys().max(0) as u64);
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
            self.config.stop_writes_on_bgsave_error() && !self.config.save().trim().is_empty(),
            Ordering::Relaxed,
        );
    }

    /// INFO persistence.
    pub fn persistence_info(&self) -> String {
        crate::persist::info(self)
    }

    /// Propagates `records` to the append-only file (unless `to_file` is
    /// false) and the replicas: `crate::propagate::emit` with this
    /// engine's file and replication stream.
    #[inline]
    pub(crate) fn emit(
        &self,
        records: &[crate::propagate::Record],
        to_file: bool,
    ) -> crate::propagate::Emitted {
        crate::propagate::emit(&self.persist.aof, &self.repl, records, to_file)
    }

    /// Propagates the keys that expired in a held shard, as DELs.
    pub(crate) fn propagate_expired(&self, shard: &mut crate::keyspace::Shard) {
        let mut records = Vec::new();
        crate::propagate::collect_expired(shard, &mut records);
        self.emit(&records, true);
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
            client_info: info.line(now, self.clients.command_names()),
        };
        let max = self.config.acllog_max_len().max(0) as usize;
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
        self.repl.refresh_good(self.config.min_replicas_max_lag());
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
}
