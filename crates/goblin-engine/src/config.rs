//! Configuration: the table of parameters Goblin has, their types,
//! defaults and validation, shared by the config file parser, the command
//! line (`--port 7000`) and CONFIG GET / SET.
//!
//! Values are kept in the canonical text form CONFIG GET returns (memory
//! sizes in bytes, booleans as yes/no). Parameters read on hot paths are
//! mirrored in atomics.

pub mod rewrite;

use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    /// A size in bytes; accepts 1k, 1kb, 1m, 1mb, 1g, 1gb suffixes.
    Memory {
        min: i64,
        max: i64,
    },
    Enum(&'static [&'static str]),
    Str,
    /// `save`: pairs of "seconds changes", or "" to disable.
    Save,
    /// `dir`: must exist; CONFIG GET returns the absolute path.
    Dir,
    /// `notify-keyspace-events`: a set of class letters.
    NotifyFlags,
    /// `client-output-buffer-limit`: "class hard soft seconds" triples.
    ObufLimits,
    /// `latency-tracking-info-percentiles`: numbers between 0 and 100.
    Percentiles,
    /// A size in bytes or a percentage of maxmemory ("10%"), Redis's
    /// PERCENT_CONFIG memory parameters (maxmemory-clients).
    MemoryOrPercent,
    /// A file or directory name inside `dir`, never a path (Redis's
    /// isValidDBfilename, isValidAOFfilename, isValidAOFdirname): the
    /// error for one with a `/` or `\\`, and the error for an empty one
    /// (None: empty is allowed).
    FileName {
        path_error: &'static str,
        empty_error: Option<&'static str>,
    },
    /// `oom-score-adj`: no, yes, relative (shown as yes) or absolute.
    OomScoreAdj,
    /// `oom-score-adj-values`: three scores between -2000 and 2000.
    OomValues,
    /// `shutdown-on-sigterm` / `shutdown-on-sigint`: "default", or any of
    /// save, nosave, now and force (shown in that order).
    ShutdownOnSignal,
    /// An octal number (Redis's OCTAL_CONFIG: `unixsocketperm`), shown in
    /// octal.
    Octal {
        min: i64,
        max: i64,
    },
    /// A host name announced to others (Redis's isValidAnnouncedHostname):
    /// letters, digits, hyphens and dots, under 256 characters.
    Hostname,
    /// `proc-title-template`: `{variable}`s Redis knows, expanding to
    /// something (Redis's validateProcTitleTemplate).
    ProcTitleTemplate,
    /// `replicaof`: `host port`, or `no one` (shown as nothing).
    ReplicaOf,
    /// A yes/no whose feature Goblin lacks: `yes` is refused with this
    /// text, as Redis built without it refuses it (activedefrag).
    OffOnly(&'static str),
}

pub const IMMUTABLE: u32 = 1;
pub const SENSITIVE: u32 = 2;
/// Left out of CONFIG GET patterns; returned when asked for by name
/// (Redis's HIDDEN_CONFIG).
pub const HIDDEN: u32 = 4;
/// Set by CONFIG SET only when enable-protected-configs allows it (Redis's
/// PROTECTED_CONFIG): where files are written.
pub const PROTECTED: u32 = 8;
/// Accepted, validated, shown and rewritten as Redis does, but Goblin does
/// not act on it (docs/CONFIG.md lists these; a test holds the list to the
/// table).
pub const NOT_ACTED_ON: u32 = 16;
/// A string whose empty value is a value (Redis's ALLOW_EMPTY_STRING):
/// CONFIG REWRITE writes `name ""` rather than dropping the line.
pub const EMPTY_IS_VALUE: u32 = 32;
/// Takes several arguments (Redis's MULTI_ARG_CONFIG); other parameters
/// take exactly one in a config file line.
pub const MULTI_ARG: u32 = 64;

pub struct ParamSpec {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub kind: Kind,
    pub default: &'static str,
    pub flags: u32,
}

impl ParamSpec {
    /// Whether a config file line may give it several arguments (the
    /// multi-word kinds, and the MULTI_ARG strings).
    pub fn multi_arg(&self) -> bool {
        self.flags & MULTI_ARG != 0
            || matches!(
                self.kind,
                Kind::Save
                    | Kind::ObufLimits
                    | Kind::OomValues
                    | Kind::Percentiles
                    | Kind::ShutdownOnSignal
            )
    }

    /// Whether Goblin acts on it (docs/CONFIG.md lists those it does not).
    pub fn acted_on(&self) -> bool {
        self.flags & NOT_ACTED_ON == 0
    }
}

const fn p(name: &'static str, kind: Kind, default: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        alias: None,
        kind,
        default,
        flags: 0,
    }
}
const fn imm(name: &'static str, kind: Kind, default: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        alias: None,
        kind,
        default,
        flags: IMMUTABLE,
    }
}
const fn hidden(name: &'static str, kind: Kind, default: &'static str, flags: u32) -> ParamSpec {
    ParamSpec {
        name,
        alias: None,
        kind,
        default,
        flags: flags | HIDDEN,
    }
}
const fn aliased(
    name: &'static str,
    alias: &'static str,
    kind: Kind,
    default: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        alias: Some(alias),
        kind,
        default,
        flags: 0,
    }
}

const fn flagged(name: &'static str, kind: Kind, default: &'static str, flags: u32) -> ParamSpec {
    ParamSpec {
        name,
        alias: None,
        kind,
        default,
        flags,
    }
}
/// A parameter Goblin keeps for Redis's sake without acting on it.
const fn inert(name: &'static str, kind: Kind, default: &'static str, flags: u32) -> ParamSpec {
    ParamSpec {
        name,
        alias: None,
        kind,
        default,
        flags: flags | NOT_ACTED_ON,
    }
}
const fn inert_aliased(
    name: &'static str,
    alias: &'static str,
    kind: Kind,
    default: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        alias: Some(alias),
        kind,
        default,
        flags: NOT_ACTED_ON,
    }
}

const INT_MAX: i64 = i32::MAX as i64;
const LONG_MAX: i64 = i64::MAX;
const BOOL: Kind = Kind::Bool;
const fn int(min: i64, max: i64) -> Kind {
    Kind::Int { min, max }
}
const fn mem(min: i64, max: i64) -> Kind {
    Kind::Memory { min, max }
}

const YESNO_LOCAL: &[&str] = &["no", "yes", "local"];

/// Declares the parameter table, [`PARAMS`], and [`Param`], one variant
/// per parameter in the table's order (its index there): the name code
/// reads a parameter by, so that a parameter that does not exist does not
/// compile.
macro_rules! params {
    ($($getter:ident / $id:ident : $ty:ident = $spec:expr,)*) => {
        /// A parameter, by its name in Rust (`Param::ReplBacklogSize` is
        /// `repl-backlog-size`); read it with `Config::int`, `Config::flag`
        /// or `Config::text`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum Param {
            $($id,)*
        }

        /// Every parameter Goblin has. Defaults are Redis 7.0's except where
        /// Goblin's README documents otherwise (bind, dir, appendonly).
        pub static PARAMS: &[ParamSpec] = &[$($spec,)*];

        /// One accessor per parameter, named after it (`repl_backlog_size`
        /// for `repl-backlog-size`), typed by its kind: `bool` for a yes/no,
        /// `i64` for an integer or a size in bytes, the text CONFIG GET
        /// shows for any other.
        impl Config {
            $(
                #[inline]
                pub fn $getter(&self) -> $ty {
                    <$ty as FromValue>::from_value(&self.values.read()[Param::$id as usize])
                }
            )*
        }

        /// Each parameter's accessor type, by its index (for the test that
        /// holds the types to the kinds).
        #[cfg(test)]
        static ACCESSOR_TYPES: &[&str] = &[$(stringify!($ty),)*];
    };
}

/// A parameter's value, from the canonical text the table keeps.
trait FromValue {
    fn from_value(text: &str) -> Self;
}

impl FromValue for bool {
    fn from_value(text: &str) -> bool {
        text == "yes"
    }
}

impl FromValue for i64 {
    /// Integers and sizes are kept in decimal, validated when set.
    fn from_value(text: &str) -> i64 {
        text.parse().unwrap_or(0)
    }
}

impl FromValue for String {
    fn from_value(text: &str) -> String {
        text.to_string()
    }
}

params! {
    // Network and clients.
    // Changing bind or port at runtime rebinds the listeners (the
    // server's hook, Engine::listeners).
    bind / Bind: String = flagged("bind", Kind::Str, "127.0.0.1", MULTI_ARG),
    port / Port: i64 = p("port", int(0, 65535), "6379"),
    tcp_backlog / TcpBacklog: i64 = imm("tcp-backlog", int(0, INT_MAX), "511"),
    tcp_keepalive / TcpKeepalive: i64 = p("tcp-keepalive", int(0, INT_MAX), "300"),
    timeout / Timeout: i64 = p("timeout", int(0, INT_MAX), "0"),
    maxclients / Maxclients: i64 = p("maxclients", int(1, u32::MAX as i64), "10000"),
    protected_mode / ProtectedMode: bool = p("protected-mode", BOOL, "yes"),
    requirepass / Requirepass: String = ParamSpec {
        name: "requirepass",
        alias: None,
        kind: Kind::Str,
        default: "",
        flags: SENSITIVE,
    },
    // Access control (acl.rs).
    acllog_max_len / AcllogMaxLen: i64 = p("acllog-max-len", int(0, LONG_MAX), "128"),
    acl_pubsub_default / AclPubsubDefault: String = p(
        "acl-pubsub-default",
        Kind::Enum(&["allchannels", "resetchannels"]),
        "resetchannels",
    ),
    aclfile / Aclfile: String = flagged("aclfile", Kind::Str, "", IMMUTABLE | EMPTY_IS_VALUE),
    proto_max_bulk_len / ProtoMaxBulkLen: i64 = p(
        "proto-max-bulk-len",
        mem(1024 * 1024, LONG_MAX),
        "536870912",
    ),
    client_query_buffer_limit / ClientQueryBufferLimit: i64 = p(
        "client-query-buffer-limit",
        mem(1024 * 1024, LONG_MAX),
        "1073741824",
    ),
    client_output_buffer_limit / ClientOutputBufferLimit: String = p(
        "client-output-buffer-limit",
        Kind::ObufLimits,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
    ),
    unixsocket / Unixsocket: String = flagged("unixsocket", Kind::Str, "", IMMUTABLE),
    // TLS (goblin-server's tls module). A CONFIG SET of any of these but
    // tls-auth-clients (read by each new connection) reloads the whole TLS
    // context, as Redis's applyTlsCfg does; tls-port opens or closes the
    // TLS listener. Empty strings are Redis's unset (NULL) values.
    tls_port / TlsPort: i64 = p("tls-port", int(0, 65535), "0"),
    tls_cert_file / TlsCertFile: String = p("tls-cert-file", Kind::Str, ""),
    tls_key_file / TlsKeyFile: String = p("tls-key-file", Kind::Str, ""),
    tls_key_file_pass / TlsKeyFilePass: String = p("tls-key-file-pass", Kind::Str, ""),
    tls_client_cert_file / TlsClientCertFile: String = p("tls-client-cert-file", Kind::Str, ""),
    tls_client_key_file / TlsClientKeyFile: String = p("tls-client-key-file", Kind::Str, ""),
    tls_client_key_file_pass / TlsClientKeyFilePass: String = p("tls-client-key-file-pass", Kind::Str, ""),
    tls_dh_params_file / TlsDhParamsFile: String = p("tls-dh-params-file", Kind::Str, ""),
    tls_ca_cert_file / TlsCaCertFile: String = p("tls-ca-cert-file", Kind::Str, ""),
    tls_ca_cert_dir / TlsCaCertDir: String = p("tls-ca-cert-dir", Kind::Str, ""),
    tls_auth_clients / TlsAuthClients: String = p(
        "tls-auth-clients",
        Kind::Enum(&["no", "yes", "optional"]),
        "yes",
    ),
    tls_protocols / TlsProtocols: String = p("tls-protocols", Kind::Str, ""),
    tls_ciphers / TlsCiphers: String = p("tls-ciphers", Kind::Str, ""),
    tls_ciphersuites / TlsCiphersuites: String = p("tls-ciphersuites", Kind::Str, ""),
    tls_prefer_server_ciphers / TlsPreferServerCiphers: bool = p("tls-prefer-server-ciphers", BOOL, "no"),
    tls_session_caching / TlsSessionCaching: bool = p("tls-session-caching", BOOL, "yes"),
    tls_session_cache_size / TlsSessionCacheSize: i64 = p("tls-session-cache-size", int(0, INT_MAX), "20480"),
    tls_session_cache_timeout / TlsSessionCacheTimeout: i64 = p("tls-session-cache-timeout", int(0, INT_MAX), "300"),
    tls_replication / TlsReplication: bool = p("tls-replication", BOOL, "no"),
    tls_cluster / TlsCluster: bool = p("tls-cluster", BOOL, "no"),
    // Protected actions (Redis's allowProtectedAction): no, yes, or local
    // (from 127.0.0.1, ::1, or in-process).
    enable_protected_configs / EnableProtectedConfigs: String = imm("enable-protected-configs", Kind::Enum(YESNO_LOCAL), "no"),
    enable_debug_command / EnableDebugCommand: String = imm("enable-debug-command", Kind::Enum(YESNO_LOCAL), "no"),
    // There is no MODULE command: accepted for Redis's config files.
    enable_module_command / EnableModuleCommand: String = imm("enable-module-command", Kind::Enum(YESNO_LOCAL), "no"),
    // Threads and shards (Goblin's own; 0 = one per core, or automatic).
    // Hidden from CONFIG GET patterns, which tools expect to list Redis's
    // parameters only.
    threads / Threads: i64 = hidden("threads", int(0, 1024), "0", IMMUTABLE),
    shards / Shards: i64 = hidden("shards", int(0, 65536), "0", IMMUTABLE),
    // General.
    daemonize / Daemonize: bool = inert("daemonize", BOOL, "no", IMMUTABLE),
    pidfile / Pidfile: String = inert("pidfile", Kind::Str, "", IMMUTABLE),
    loglevel / Loglevel: String = p(
        "loglevel",
        Kind::Enum(&["debug", "verbose", "notice", "warning"]),
        "notice",
    ),
    logfile / Logfile: String = flagged("logfile", Kind::Str, "", IMMUTABLE | EMPTY_IS_VALUE),
    databases / Databases: i64 = imm("databases", int(1, INT_MAX), "16"),
    always_show_logo / AlwaysShowLogo: bool = inert("always-show-logo", BOOL, "no", IMMUTABLE),
    set_proc_title / SetProcTitle: bool = inert("set-proc-title", BOOL, "yes", IMMUTABLE),
    hz / Hz: i64 = p("hz", int(0, INT_MAX), "10"),
    dynamic_hz / DynamicHz: bool = inert("dynamic-hz", BOOL, "yes", 0),
    active_expire_effort / ActiveExpireEffort: i64 = p("active-expire-effort", int(1, 10), "1"),
    notify_keyspace_events / NotifyKeyspaceEvents: String = p("notify-keyspace-events", Kind::NotifyFlags, ""),
    latency_tracking / LatencyTracking: bool = p("latency-tracking", BOOL, "yes"),
    latency_tracking_info_percentiles / LatencyTrackingInfoPercentiles: String = p(
        "latency-tracking-info-percentiles",
        Kind::Percentiles,
        "50 99 99.9",
    ),
    latency_monitor_threshold / LatencyMonitorThreshold: i64 = p("latency-monitor-threshold", int(0, LONG_MAX), "0"),
    slowlog_log_slower_than / SlowlogLogSlowerThan: i64 = p("slowlog-log-slower-than", int(-1, LONG_MAX), "10000"),
    slowlog_max_len / SlowlogMaxLen: i64 = p("slowlog-max-len", int(0, LONG_MAX), "128"),
    shutdown_timeout / ShutdownTimeout: i64 = p("shutdown-timeout", int(0, INT_MAX), "10"),
    crash_log_enabled / CrashLogEnabled: bool = p("crash-log-enabled", BOOL, "yes"),
    // Goblin has no memory test to run after a crash: kept for CONFIG.
    crash_memcheck_enabled / CrashMemcheckEnabled: bool = inert("crash-memcheck-enabled", BOOL, "yes", 0),
    // After DEBUG ASSERT / PANIC, exit with status 1 instead of SIGABRT.
    use_exit_on_panic / UseExitOnPanic: bool = hidden("use-exit-on-panic", BOOL, "no", IMMUTABLE),
    shutdown_on_sigint / ShutdownOnSigint: String = p("shutdown-on-sigint", Kind::ShutdownOnSignal, "default"),
    shutdown_on_sigterm / ShutdownOnSigterm: String = p("shutdown-on-sigterm", Kind::ShutdownOnSignal, "default"),
    oom_score_adj / OomScoreAdj: String = p("oom-score-adj", Kind::OomScoreAdj, "no"),
    oom_score_adj_values / OomScoreAdjValues: String = p("oom-score-adj-values", Kind::OomValues, "0 200 800"),
    // Memory.
    maxmemory / Maxmemory: i64 = p("maxmemory", mem(0, LONG_MAX), "0"),
    maxmemory_policy / MaxmemoryPolicy: String = p(
        "maxmemory-policy",
        Kind::Enum(&[
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
            "allkeys-tinylfu",
        ]),
        "noeviction",
    ),
    maxmemory_samples / MaxmemorySamples: i64 = p("maxmemory-samples", int(1, INT_MAX), "5"),
    maxmemory_eviction_tenacity / MaxmemoryEvictionTenacity: i64 = p("maxmemory-eviction-tenacity", int(0, 100), "10"),
    // Applied by the server at start (transparent huge pages).
    disable_thp / DisableThp: bool = imm("disable-thp", BOOL, "yes"),
    maxmemory_clients / MaxmemoryClients: String = p("maxmemory-clients", Kind::MemoryOrPercent, "0"),
    lfu_log_factor / LfuLogFactor: i64 = p("lfu-log-factor", int(0, INT_MAX), "10"),
    lfu_decay_time / LfuDecayTime: i64 = p("lfu-decay-time", int(0, INT_MAX), "1"),
    // Client-side caching: the most keys the tracking table remembers
    // (0: no limit); past it, keys are dropped from it and invalidated.
    tracking_table_max_keys / TrackingTableMaxKeys: i64 = p("tracking-table-max-keys", int(0, LONG_MAX), "1000000"),
    lazyfree_lazy_eviction / LazyfreeLazyEviction: bool = p("lazyfree-lazy-eviction", BOOL, "no"),
    lazyfree_lazy_expire / LazyfreeLazyExpire: bool = p("lazyfree-lazy-expire", BOOL, "no"),
    lazyfree_lazy_server_del / LazyfreeLazyServerDel: bool = p("lazyfree-lazy-server-del", BOOL, "no"),
    lazyfree_lazy_user_del / LazyfreeLazyUserDel: bool = p("lazyfree-lazy-user-del", BOOL, "no"),
    lazyfree_lazy_user_flush / LazyfreeLazyUserFlush: bool = p("lazyfree-lazy-user-flush", BOOL, "no"),
    activerehashing / Activerehashing: bool = p("activerehashing", BOOL, "yes"),
    jemalloc_bg_thread / JemallocBgThread: bool = inert("jemalloc-bg-thread", BOOL, "yes", 0),
    // Compact encodings of small collections.
    hash_max_listpack_entries / HashMaxListpackEntries: i64 = aliased(
        "hash-max-listpack-entries",
        "hash-max-ziplist-entries",
        int(0, LONG_MAX),
        "512",
    ),
    hash_max_listpack_value / HashMaxListpackValue: i64 = aliased(
        "hash-max-listpack-value",
        "hash-max-ziplist-value",
        mem(0, LONG_MAX),
        "64",
    ),
    set_max_intset_entries / SetMaxIntsetEntries: i64 = p("set-max-intset-entries", int(0, LONG_MAX), "512"),
    zset_max_listpack_entries / ZsetMaxListpackEntries: i64 = aliased(
        "zset-max-listpack-entries",
        "zset-max-ziplist-entries",
        int(0, LONG_MAX),
        "128",
    ),
    zset_max_listpack_value / ZsetMaxListpackValue: i64 = aliased(
        "zset-max-listpack-value",
        "zset-max-ziplist-value",
        mem(0, LONG_MAX),
        "64",
    ),
    list_max_listpack_size / ListMaxListpackSize: i64 = aliased(
        "list-max-listpack-size",
        "list-max-ziplist-size",
        int(i32::MIN as i64, INT_MAX),
        "-2",
    ),
    list_compress_depth / ListCompressDepth: i64 = inert("list-compress-depth", int(0, INT_MAX), "0", 0),
    // Past this length a sparse HyperLogLog turns dense.
    hll_sparse_max_bytes / HllSparseMaxBytes: i64 = p("hll-sparse-max-bytes", mem(0, LONG_MAX), "3000"),
    stream_node_max_bytes / StreamNodeMaxBytes: i64 = p("stream-node-max-bytes", mem(0, LONG_MAX), "4096"),
    stream_node_max_entries / StreamNodeMaxEntries: i64 = p("stream-node-max-entries", int(0, LONG_MAX), "100"),
    // Replication (see crate::repl).
    min_replicas_to_write / MinReplicasToWrite: i64 = aliased(
        "min-replicas-to-write",
        "min-slaves-to-write",
        int(0, INT_MAX),
        "0",
    ),
    min_replicas_max_lag / MinReplicasMaxLag: i64 = aliased(
        "min-replicas-max-lag",
        "min-slaves-max-lag",
        int(0, INT_MAX),
        "10",
    ),
    // `host port` of the primary followed; set by REPLICAOF as well.
    replicaof / Replicaof: String = ParamSpec {
        name: "replicaof",
        alias: Some("slaveof"),
        kind: Kind::ReplicaOf,
        default: "",
        flags: IMMUTABLE | MULTI_ARG,
    },
    repl_backlog_size / ReplBacklogSize: i64 = p("repl-backlog-size", mem(1, LONG_MAX), "1048576"),
    repl_backlog_ttl / ReplBacklogTtl: i64 = p("repl-backlog-ttl", int(0, LONG_MAX), "3600"),
    repl_diskless_sync / ReplDisklessSync: bool = p("repl-diskless-sync", BOOL, "yes"),
    repl_diskless_sync_delay / ReplDisklessSyncDelay: i64 = p("repl-diskless-sync-delay", int(0, INT_MAX), "5"),
    repl_diskless_sync_max_replicas / ReplDisklessSyncMaxReplicas: i64 = p("repl-diskless-sync-max-replicas", int(0, INT_MAX), "0"),
    // Goblin loads a primary's snapshot from a file whatever this says
    // (Redis's "disabled"); the other values are accepted.
    repl_diskless_load / ReplDisklessLoad: String = inert(
        "repl-diskless-load",
        Kind::Enum(&["disabled", "on-empty-db", "swapdb"]),
        "disabled",
        0,
    ),
    repl_timeout / ReplTimeout: i64 = p("repl-timeout", int(1, INT_MAX), "60"),
    repl_ping_replica_period / ReplPingReplicaPeriod: i64 = aliased(
        "repl-ping-replica-period",
        "repl-ping-slave-period",
        int(1, INT_MAX),
        "10",
    ),
    repl_disable_tcp_nodelay / ReplDisableTcpNodelay: bool = p("repl-disable-tcp-nodelay", BOOL, "no"),
    replica_read_only / ReplicaReadOnly: bool = aliased("replica-read-only", "slave-read-only", BOOL, "yes"),
    replica_serve_stale_data / ReplicaServeStaleData: bool = aliased(
        "replica-serve-stale-data",
        "slave-serve-stale-data",
        BOOL,
        "yes",
    ),
    replica_ignore_maxmemory / ReplicaIgnoreMaxmemory: bool = aliased(
        "replica-ignore-maxmemory",
        "slave-ignore-maxmemory",
        BOOL,
        "yes",
    ),
    replica_lazy_flush / ReplicaLazyFlush: bool = inert_aliased("replica-lazy-flush", "slave-lazy-flush", BOOL, "no"),
    replica_priority / ReplicaPriority: i64 = aliased("replica-priority", "slave-priority", int(0, INT_MAX), "100"),
    replica_announced / ReplicaAnnounced: bool = p("replica-announced", BOOL, "yes"),
    replica_announce_ip / ReplicaAnnounceIp: String = aliased("replica-announce-ip", "slave-announce-ip", Kind::Str, ""),
    replica_announce_port / ReplicaAnnouncePort: i64 = aliased(
        "replica-announce-port",
        "slave-announce-port",
        int(0, 65535),
        "0",
    ),
    // Redacted from the slow log and MONITOR, as requirepass.
    masterauth / Masterauth: String = ParamSpec {
        name: "masterauth",
        alias: None,
        kind: Kind::Str,
        default: "",
        flags: SENSITIVE,
    },
    // What a replica does when a command of its primary's stream fails.
    propagation_error_behavior / PropagationErrorBehavior: String = p(
        "propagation-error-behavior",
        Kind::Enum(&["ignore", "panic", "panic-on-replicas"]),
        "ignore",
    ),
    // Redacted from the slow log and MONITOR, as Redis does.
    masteruser / Masteruser: String = flagged("masteruser", Kind::Str, "", SENSITIVE),
    // Scripting.
    busy_reply_threshold / BusyReplyThreshold: i64 = aliased(
        "busy-reply-threshold",
        "lua-time-limit",
        int(0, LONG_MAX),
        "5000",
    ),
    // JavaScript scripting (Goblin's own; hidden from CONFIG GET patterns,
    // which tools expect to list Redis's parameters only). The most memory
    // one JavaScript runtime may hold: past it an allocation fails and the
    // script gets an error reply.
    js_memory_limit / JsMemoryLimit: i64 = hidden("js-memory-limit", mem(1024 * 1024, LONG_MAX), "256mb", 0),
    // Whether dump.rdb keeps JavaScript libraries: "no" writes files Redis
    // can load.
    rdb_save_js_libraries / RdbSaveJsLibraries: bool = hidden("rdb-save-js-libraries", BOOL, "yes", 0),
    // Persistence.
    dir / Dir: String = ParamSpec {
        name: "dir",
        alias: None,
        kind: Kind::Dir,
        default: "./data",
        flags: PROTECTED,
    },
    save / Save: String = p("save", Kind::Save, "3600 1 300 100 60 10000"),
    dbfilename / Dbfilename: String = ParamSpec {
        name: "dbfilename",
        alias: None,
        kind: Kind::FileName {
            path_error: "dbfilename can't be a path, just a filename",
            empty_error: None,
        },
        default: "dump.rdb",
        flags: PROTECTED | EMPTY_IS_VALUE,
    },
    rdbcompression / Rdbcompression: bool = p("rdbcompression", BOOL, "yes"),
    rdbchecksum / Rdbchecksum: bool = imm("rdbchecksum", BOOL, "yes"),
    stop_writes_on_bgsave_error / StopWritesOnBgsaveError: bool = p("stop-writes-on-bgsave-error", BOOL, "yes"),
    rdb_key_save_delay / RdbKeySaveDelay: i64 = hidden("rdb-key-save-delay", int(i32::MIN as i64, INT_MAX), "0", 0),
    key_load_delay / KeyLoadDelay: i64 = hidden("key-load-delay", int(i32::MIN as i64, INT_MAX), "0", 0),
    // How often Redis serves clients while it loads; Goblin's loading
    // answers LOADING from other threads all along: accepted, no effect.
    loading_process_events_interval_bytes / LoadingProcessEventsIntervalBytes: i64 = hidden(
        "loading-process-events-interval-bytes",
        int(1024, INT_MAX),
        "2097152",
        NOT_ACTED_ON,
    ),
    appendonly / Appendonly: bool = p("appendonly", BOOL, "yes"),
    appendfilename / Appendfilename: String = imm(
        "appendfilename",
        Kind::FileName {
            path_error: "appendfilename can't be a path, just a filename",
            empty_error: Some("appendfilename can't be empty"),
        },
        "appendonly.aof",
    ),
    appenddirname / Appenddirname: String = imm(
        "appenddirname",
        Kind::FileName {
            path_error: "appenddirname can't be a path, just a dirname",
            empty_error: Some("appenddirname can't be empty"),
        },
        "appendonlydir",
    ),
    appendfsync / Appendfsync: String = p(
        "appendfsync",
        Kind::Enum(&["everysec", "always", "no"]),
        "everysec",
    ),
    no_appendfsync_on_rewrite / NoAppendfsyncOnRewrite: bool = inert("no-appendfsync-on-rewrite", BOOL, "no", 0),
    auto_aof_rewrite_percentage / AutoAofRewritePercentage: i64 = p("auto-aof-rewrite-percentage", int(0, INT_MAX), "100"),
    auto_aof_rewrite_min_size / AutoAofRewriteMinSize: i64 = p("auto-aof-rewrite-min-size", mem(0, LONG_MAX), "67108864"),
    aof_load_truncated / AofLoadTruncated: bool = p("aof-load-truncated", BOOL, "yes"),
    aof_use_rdb_preamble / AofUseRdbPreamble: bool = p("aof-use-rdb-preamble", BOOL, "yes"),
    aof_timestamp_enabled / AofTimestampEnabled: bool = p("aof-timestamp-enabled", BOOL, "no"),
    sanitize_dump_payload / SanitizeDumpPayload: String = p(
        "sanitize-dump-payload",
        Kind::Enum(&["no", "yes", "clients"]),
        "no",
    ),
    // The rest of Redis 7.0's parameters: features Goblin does not have
    // (cluster mode, syslog, supervision) or does its own way (worker
    // threads in place of I/O threads and CPU lists, jemalloc's own
    // purging in place of active defragmentation). Kept, validated and
    // shown as Redis does, so that a Redis configuration and the tools
    // that read CONFIG GET find them; not acted on.
    activedefrag / Activedefrag: String = inert(
        "activedefrag",
        Kind::OffOnly("Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution"),
        "no",
        0,
    ),
    active_defrag_cycle_min / ActiveDefragCycleMin: i64 = inert("active-defrag-cycle-min", int(1, 99), "1", 0),
    active_defrag_cycle_max / ActiveDefragCycleMax: i64 = inert("active-defrag-cycle-max", int(1, 99), "25", 0),
    active_defrag_threshold_lower / ActiveDefragThresholdLower: i64 = inert("active-defrag-threshold-lower", int(0, 1000), "10", 0),
    active_defrag_threshold_upper / ActiveDefragThresholdUpper: i64 = inert("active-defrag-threshold-upper", int(0, 1000), "100", 0),
    active_defrag_max_scan_fields / ActiveDefragMaxScanFields: i64 = inert("active-defrag-max-scan-fields", int(1, LONG_MAX), "1000", 0),
    active_defrag_ignore_bytes / ActiveDefragIgnoreBytes: i64 = inert("active-defrag-ignore-bytes", mem(1, LONG_MAX), "104857600", 0),
    io_threads / IoThreads: i64 = inert("io-threads", int(1, 128), "1", IMMUTABLE),
    io_threads_do_reads / IoThreadsDoReads: bool = inert("io-threads-do-reads", BOOL, "no", IMMUTABLE),
    server_cpulist / ServerCpulist: String = inert("server_cpulist", Kind::Str, "", IMMUTABLE),
    bio_cpulist / BioCpulist: String = inert("bio_cpulist", Kind::Str, "", IMMUTABLE),
    aof_rewrite_cpulist / AofRewriteCpulist: String = inert("aof_rewrite_cpulist", Kind::Str, "", IMMUTABLE),
    bgsave_cpulist / BgsaveCpulist: String = inert("bgsave_cpulist", Kind::Str, "", IMMUTABLE),
    aof_disable_auto_gc / AofDisableAutoGc: bool = inert("aof-disable-auto-gc", BOOL, "no", 0),
    aof_rewrite_incremental_fsync / AofRewriteIncrementalFsync: bool = inert("aof-rewrite-incremental-fsync", BOOL, "yes", 0),
    rdb_save_incremental_fsync / RdbSaveIncrementalFsync: bool = inert("rdb-save-incremental-fsync", BOOL, "yes", 0),
    rdb_del_sync_files / RdbDelSyncFiles: bool = inert("rdb-del-sync-files", BOOL, "no", 0),
    bind_source_addr / BindSourceAddr: String = inert("bind-source-addr", Kind::Str, "", 0),
    replica_ignore_disk_write_errors / ReplicaIgnoreDiskWriteErrors: bool = inert("replica-ignore-disk-write-errors", BOOL, "no", 0),
    socket_mark_id / SocketMarkId: i64 = inert("socket-mark-id", int(0, u32::MAX as i64), "0", IMMUTABLE),
    unixsocketperm / Unixsocketperm: String = flagged("unixsocketperm", Kind::Octal { min: 0, max: 0o777 }, "0", IMMUTABLE),
    supervised / Supervised: String = inert(
        "supervised",
        Kind::Enum(&["upstart", "systemd", "auto", "no"]),
        "no",
        IMMUTABLE,
    ),
    syslog_enabled / SyslogEnabled: bool = inert("syslog-enabled", BOOL, "no", IMMUTABLE),
    syslog_ident / SyslogIdent: String = inert("syslog-ident", Kind::Str, "redis", IMMUTABLE | EMPTY_IS_VALUE),
    syslog_facility / SyslogFacility: String = inert(
        "syslog-facility",
        Kind::Enum(&[
            "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
        ]),
        "local0",
        IMMUTABLE,
    ),
    ignore_warnings / IgnoreWarnings: String = inert("ignore-warnings", Kind::Str, "", EMPTY_IS_VALUE),
    proc_title_template / ProcTitleTemplate: String = inert(
        "proc-title-template",
        Kind::ProcTitleTemplate,
        "{title} {listen-addr} {server-mode}",
        EMPTY_IS_VALUE,
    ),
    watchdog_period / WatchdogPeriod: i64 = inert("watchdog-period", int(0, INT_MAX), "0", HIDDEN),
    lua_enable_deprecated_api / LuaEnableDeprecatedApi: bool = inert("lua-enable-deprecated-api", BOOL, "no", IMMUTABLE | HIDDEN),
    // Cluster mode: goblin-server has none (the GOBLIN.* module brings
    // the family to a Redis Cluster); cluster-enabled is refused at
    // startup unless "no".
    cluster_enabled / ClusterEnabled: bool = inert("cluster-enabled", BOOL, "no", IMMUTABLE),
    cluster_config_file / ClusterConfigFile: String = inert(
        "cluster-config-file",
        Kind::Str,
        "nodes.conf",
        IMMUTABLE | EMPTY_IS_VALUE,
    ),
    cluster_port / ClusterPort: i64 = inert("cluster-port", int(0, 65535), "0", IMMUTABLE),
    cluster_announce_bus_port / ClusterAnnounceBusPort: i64 = inert("cluster-announce-bus-port", int(0, 65535), "0", 0),
    cluster_announce_port / ClusterAnnouncePort: i64 = inert("cluster-announce-port", int(0, 65535), "0", 0),
    cluster_announce_tls_port / ClusterAnnounceTlsPort: i64 = inert("cluster-announce-tls-port", int(0, 65535), "0", 0),
    cluster_announce_ip / ClusterAnnounceIp: String = inert("cluster-announce-ip", Kind::Str, "", 0),
    cluster_announce_hostname / ClusterAnnounceHostname: String = inert("cluster-announce-hostname", Kind::Hostname, "", 0),
    cluster_preferred_endpoint_type / ClusterPreferredEndpointType: String = inert(
        "cluster-preferred-endpoint-type",
        Kind::Enum(&["ip", "hostname", "unknown-endpoint"]),
        "ip",
        0,
    ),
    cluster_node_timeout / ClusterNodeTimeout: i64 = inert("cluster-node-timeout", int(0, LONG_MAX), "15000", 0),
    cluster_migration_barrier / ClusterMigrationBarrier: i64 = inert("cluster-migration-barrier", int(0, INT_MAX), "1", 0),
    cluster_replica_validity_factor / ClusterReplicaValidityFactor: i64 = inert_aliased(
        "cluster-replica-validity-factor",
        "cluster-slave-validity-factor",
        int(0, INT_MAX),
        "10",
    ),
    cluster_replica_no_failover / ClusterReplicaNoFailover: bool = inert_aliased(
        "cluster-replica-no-failover",
        "cluster-slave-no-failover",
        BOOL,
        "no",
    ),
    cluster_require_full_coverage / ClusterRequireFullCoverage: bool = inert("cluster-require-full-coverage", BOOL, "yes", 0),
    cluster_allow_reads_when_down / ClusterAllowReadsWhenDown: bool = inert("cluster-allow-reads-when-down", BOOL, "no", 0),
    cluster_allow_pubsubshard_when_down / ClusterAllowPubsubshardWhenDown: bool = inert("cluster-allow-pubsubshard-when-down", BOOL, "yes", 0),
    cluster_allow_replica_migration / ClusterAllowReplicaMigration: bool = inert("cluster-allow-replica-migration", BOOL, "yes", 0),
    cluster_link_sendbuf_limit / ClusterLinkSendbufLimit: i64 = inert("cluster-link-sendbuf-limit", mem(0, LONG_MAX), "0", 0),
}

/// Why a value was refused (the text after Redis's "CONFIG SET failed ... - ").
pub type ConfigError = String;

pub struct Config {
    /// Each parameter's value in canonical text, by its index in PARAMS.
    values: RwLock<Vec<String>>,
    /// `user <name> <rules...>` directives of the config file or command
    /// line, applied to the ACL users at startup (Redis's UsersToLoad).
    pub users: parking_lot::Mutex<Vec<Vec<String>>>,
    /// Hot parameters, mirrored on every change.
    pub proto_max_bulk_len: AtomicU64,
    pub query_buffer_limit: AtomicU64,
    pub hz: AtomicI64,
    pub active_expire_effort: AtomicI64,
    pub maxmemory: AtomicU64,
    pub busy_reply_threshold: AtomicI64,
    /// list-max-listpack-size: read by every list write.
    pub list_max_listpack_size: AtomicI64,
    /// The compact-encoding limits of hashes, sets and sorted sets (read by
    /// every write to one), negative values as 0.
    pub hash_max_listpack_entries: AtomicUsize,
    pub hash_max_listpack_value: AtomicUsize,
    pub set_max_intset_entries: AtomicUsize,
    pub zset_max_listpack_entries: AtomicUsize,
    pub zset_max_listpack_value: AtomicUsize,
    /// hll-sparse-max-bytes: read by every PFADD and PFMERGE.
    pub hll_sparse_max_bytes: AtomicUsize,
    /// stream-node-max-bytes and stream-node-max-entries (read by every XADD).
    pub stream_node_max_bytes: AtomicUsize,
    pub stream_node_max_entries: AtomicUsize,
    /// min-replicas-to-write when min-replicas-max-lag is set, else 0.
    pub min_replicas_to_write: AtomicI64,
    /// The slow log and the latency monitor, read after every command.
    pub slowlog_log_slower_than: AtomicI64,
    pub slowlog_max_len: AtomicUsize,
    pub latency_monitor_threshold: AtomicI64,
    /// latency-tracking: every command records its duration in its
    /// thread's histogram.
    pub latency_tracking: AtomicBool,
    /// client-output-buffer-limit of normal clients and of Pub/Sub
    /// subscribers: hard and soft limits in bytes (0 = none) and the soft
    /// limit's seconds.
    pub obuf_normal: [AtomicU64; 3],
    pub obuf_pubsub: [AtomicU64; 3],
    /// The replica class's limits: how far a replica may fall behind the
    /// replication stream.
    pub obuf_replica: [AtomicU64; 3],
    /// The shortest duration, in microseconds, that the slow log or the
    /// latency monitor wants to hear about (u64::MAX when both are off):
    /// the one comparison a command pays for both.
    pub watch_us: AtomicU64,
}

/// A parameter's index in PARAMS (its `Param`).
fn index(spec: &'static ParamSpec) -> usize {
    PARAMS
        .iter()
        .position(|s| std::ptr::eq(s, spec))
        .expect("a parameter of PARAMS")
}

pub fn spec(name: &str) -> Option<&'static ParamSpec> {
    PARAMS.iter().find(|s| {
        s.name.eq_ignore_ascii_case(name) || s.alias.is_some_and(|a| a.eq_ignore_ascii_case(name))
    })
}

/// Redis's memtoull: a number with an optional b/k/kb/m/mb/g/gb unit.
/// A sign is refused ("argument must be a memory value" for -1); as in
/// Redis, no digits at all is 0, and a number past 2^64-1 is 2^64-1, the
/// product wrapping (read as a signed value, so out of every range).
pub fn parse_memory(s: &str) -> Option<i64> {
    if s.starts_with('-') {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let n: u64 = if num.is_empty() {
        0
    } else {
        num.parse().unwrap_or(u64::MAX)
    };
    Some(n.wrapping_mul(mul) as i64)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

/// Whether a proc-title-template expands (Redis's sdstemplate: `{{` is a
/// brace, `{name}` a known variable) to something non-empty when the
/// title is empty. Of the variables, `{server-mode}` and `{unixsocket}`
/// may expand to nothing here (no cluster mode, no Unix socket), the
/// others always give something.
fn proc_title_expands(template: &str) -> bool {
    let mut rest = template;
    let mut nonempty = false;
    while let Some(open) = rest.find('{') {
        nonempty |= open > 0;
        let after = &rest[open + 1..];
        if after.is_empty() {
            return false;
        }
        if let Some(tail) = after.strip_prefix('{') {
            nonempty = true;
            rest = tail;
            continue;
        }
        let Some(close) = after.find('}') else {
            return false;
        };
        match &after[..close] {
            "title" | "server-mode" | "unixsocket" => {}
            "listen-addr" | "config-file" | "port" | "tls-port" => nonempty = true,
            _ => return false,
        }
        rest = &after[close + 1..];
    }
    nonempty || !rest.is_empty()
}

/// Validates a value for a parameter and returns its canonical form.
pub fn canonical(spec: &ParamSpec, value: &str) -> Result<String, ConfigError> {
    match spec.kind {
        Kind::Bool => parse_bool(value)
            .map(|b| if b { "yes" } else { "no" }.to_string())
            .ok_or_else(|| "argument must be 'yes' or 'no'".to_string()),
        Kind::OffOnly(refusal) => match parse_bool(value) {
            Some(false) => Ok("no".into()),
            Some(true) => Err(refusal.into()),
            None => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Int { min, max } => {
            let v: i64 = value
                .parse()
                .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            if v < min || v > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(v.to_string())
        }
        Kind::Memory { min, max } => {
            let v =
                parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())?;
            if v < min || v > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(v.to_string())
        }
        Kind::Enum(options) => {
            let lower = value.to_ascii_lowercase();
            if options.contains(&lower.as_str()) {
                Ok(lower)
            } else {
                Err(format!(
                    "argument(s) must be one of the following: {}",
                    options.join(", ")
                ))
            }
        }
        Kind::FileName {
            path_error,
            empty_error,
        } => {
            if let (Some(e), true) = (empty_error, value.is_empty()) {
                return Err(e.into());
            }
            if value.contains(['/', '\\']) {
                return Err(path_error.into());
            }
            // Any other byte is allowed, newlines included (Redis's
            // isValidAOFfilename; the AOF manifest quotes such names).
            Ok(value.to_string())
        }
        Kind::Str => {
            if value.contains('\n') || value.contains('\r') {
                return Err("argument contains invalid characters".into());
            }
            Ok(value.to_string())
        }
        Kind::Save => {
            let parts: Vec<&str> = value.split_whitespace().collect();
            if parts.len() % 2 != 0 {
                return Err("Invalid save parameters".into());
            }
            // Seconds at least 1, changes at least 0.
            for (i, part) in parts.iter().enumerate() {
                if part.parse::<u64>().map_or(true, |v| i % 2 == 0 && v < 1) {
                    return Err("Invalid save parameters".into());
                }
            }
            Ok(parts.join(" "))
        }
        Kind::OomScoreAdj => match value.to_ascii_lowercase().as_str() {
            "no" => Ok("no".into()),
            "yes" | "relative" => Ok("yes".into()),
            "absolute" => Ok("absolute".into()),
            _ => {
                Err("argument(s) must be one of the following: no, yes, relative, absolute".into())
            }
        },
        Kind::OomValues => crate::oom::parse_values(value),
        Kind::ShutdownOnSignal => {
            const WORDS: [&str; 4] = ["save", "nosave", "now", "force"];
            let mut on = [false; 4];
            if value.split_whitespace().next().is_none() {
                return Err(
                    "argument(s) must be one of the following: default, save, nosave, now, force"
                        .into(),
                );
            }
            for word in value.split_whitespace() {
                let lower = word.to_ascii_lowercase();
                match WORDS.iter().position(|w| *w == lower) {
                    Some(i) => on[i] = true,
                    None if lower == "default" => {}
                    None => {
                        return Err("argument(s) must be one of the following: default, save, nosave, now, force".into())
                    }
                }
            }
            if on[0] && on[1] {
                return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
            }
            let words: Vec<&str> = WORDS
                .iter()
                .zip(on)
                .filter(|(_, on)| *on)
                .map(|(w, _)| *w)
                .collect();
            Ok(if words.is_empty() {
                "default".into()
            } else {
                words.join(" ")
            })
        }
        Kind::Octal { min, max } => {
            // strtoll(value, 8) with nothing left over.
            let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
            let v = if !digits.is_empty() && digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
                i64::from_str_radix(value, 8).ok()
            } else {
                None
            }
            .ok_or_else(|| "argument couldn't be parsed as an octal number".to_string())?;
            if v < min || v > max {
                return Err(format!(
                    "argument must be between {min:o} and {max:o} inclusive"
                ));
            }
            Ok(format!("{v:o}"))
        }
        // Redis's setConfigReplicaOfOption.
        Kind::ReplicaOf => match value.split_whitespace().collect::<Vec<_>>()[..] {
            [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => {
                Ok(String::new())
            }
            [host, port] => match port.parse::<i64>() {
                Ok(p) if (0..=65535).contains(&p) => Ok(format!("{host} {p}")),
                _ => Err("Invalid master port".into()),
            },
            _ => Err("wrong number of arguments".into()),
        },
        Kind::Hostname => {
            if value.len() >= 256 {
                return Err("Hostnames must be less than 256 characters".into());
            }
            if !value
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
            {
                return Err(
                    "Hostnames may only contain alphanumeric characters, hyphens or dots".into(),
                );
            }
            Ok(value.to_string())
        }
        Kind::ProcTitleTemplate => {
            if proc_title_expands(value) {
                Ok(value.to_string())
            } else {
                Err("template format is invalid or contains unknown variables".into())
            }
        }
        // Existence is checked by CONFIG SET; at startup the directory is created.
        Kind::Dir => Ok(value.to_string()),
        // Kept as CONFIG GET shows it (Redis's keyspaceEventsFlagsToString).
        Kind::NotifyFlags => match crate::pubsub::notify::parse(value) {
            Some(flags) => Ok(crate::pubsub::notify::describe(flags)),
            None => Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
        },
        Kind::MemoryOrPercent => {
            if let Some(pct) = value.strip_suffix('%') {
                let v: i64 = pct
                    .parse()
                    .ok()
                    .filter(|v| *v >= 0)
                    .ok_or_else(|| "argument must be a memory or percent value".to_string())?;
                if v > 100 {
                    return Err("percentage argument must be less or equal to 100".into());
                }
                return Ok(format!("{v}%"));
            }
            let v = parse_memory(value)
                .ok_or_else(|| "argument must be a memory or percent value".to_string())?;
            Ok(v.to_string())
        }
        Kind::Percentiles => {
            // Redis's setConfigLatencyTrackingInfoPercentilesOutputOption,
            // shown as "%f" without trailing zeros.
            let mut out = Vec::new();
            for part in value.split_whitespace() {
                let v = crate::util::number::parse_f64(part.as_bytes())
                    .filter(|v| !v.is_nan())
                    .ok_or_else(|| {
                        "Invalid latency-tracking-info-percentiles parameters".to_string()
                    })?;
                if !(0.0..=100.0).contains(&v) {
                    return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into());
                }
                out.push(crate::latency::percentile_label(v));
            }
            Ok(out.join(" "))
        }
        Kind::ObufLimits => {
            let parts: Vec<&str> = value.split_whitespace().collect();
            if parts.len() % 4 != 0 {
                return Err("Wrong number of arguments in buffer limit configuration.".into());
            }
            let mut current: HashMap<String, [String; 3]> = HashMap::new();
            for chunk in parts.chunks(4) {
                let class = match chunk[0].to_ascii_lowercase().as_str() {
                    "normal" => "normal",
                    "slave" | "replica" => "slave",
                    "pubsub" => "pubsub",
                    _ => {
                        return Err(
                            "Invalid client class specified in buffer limit configuration.".into(),
                        )
                    }
                };
                let hard = parse_memory(chunk[1]).filter(|v| *v >= 0);
                let soft = parse_memory(chunk[2]).filter(|v| *v >= 0);
                let secs = chunk[3].parse::<i64>().ok().filter(|v| *v >= 0);
                let (Some(h), Some(s), Some(t)) = (hard, soft, secs) else {
                    return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into());
                };
                current.insert(
                    class.to_string(),
                    [h.to_string(), s.to_string(), t.to_string()],
                );
            }
            let mut out = Vec::new();
            for class in ["normal", "slave", "pubsub"] {
                if let Some([h, s, t]) = current.get(class) {
                    out.push(format!("{class} {h} {s} {t}"));
                }
            }
            Ok(out.join(" "))
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl Config {
    /// The hash encoding thresholds (hash-max-listpack-entries and -value),
    /// read once per command.
    pub fn hash_limits(&self) -> crate::keyspace::HashLimits {
        crate::keyspace::HashLimits {
            max_entries: self.hash_max_listpack_entries.load(Ordering::Relaxed),
            max_value: self.hash_max_listpack_value.load(Ordering::Relaxed),
        }
    }

    pub fn new() -> Config {
        let values = PARAMS.iter().map(|s| s.default.to_string()).collect();
        let c = Config {
            values: RwLock::new(values),
            users: parking_lot::Mutex::new(Vec::new()),
            proto_max_bulk_len: AtomicU64::new(0),
            query_buffer_limit: AtomicU64::new(0),
            hz: AtomicI64::new(0),
            active_expire_effort: AtomicI64::new(0),
            maxmemory: AtomicU64::new(0),
            busy_reply_threshold: AtomicI64::new(0),
            list_max_listpack_size: AtomicI64::new(0),
            hash_max_listpack_entries: AtomicUsize::new(0),
            hash_max_listpack_value: AtomicUsize::new(0),
            set_max_intset_entries: AtomicUsize::new(0),
            zset_max_listpack_entries: AtomicUsize::new(0),
            zset_max_listpack_value: AtomicUsize::new(0),
            hll_sparse_max_bytes: AtomicUsize::new(0),
            stream_node_max_bytes: AtomicUsize::new(0),
            stream_node_max_entries: AtomicUsize::new(0),
            min_replicas_to_write: AtomicI64::new(0),
            slowlog_log_slower_than: AtomicI64::new(0),
            slowlog_max_len: AtomicUsize::new(0),
            latency_monitor_threshold: AtomicI64::new(0),
            latency_tracking: AtomicBool::new(true),
            watch_us: AtomicU64::new(u64::MAX),
            obuf_normal: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            obuf_pubsub: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            obuf_replica: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
        };
        c.refresh_hot();
        c
    }

    fn refresh_hot(&self) {
        self.proto_max_bulk_len
            .store(self.proto_max_bulk_len() as u64, Ordering::Relaxed);
        self.query_buffer_limit
            .store(self.client_query_buffer_limit() as u64, Ordering::Relaxed);
        self.hz.store(self.hz(), Ordering::Relaxed);
        self.active_expire_effort
            .store(self.active_expire_effort(), Ordering::Relaxed);
        self.maxmemory
            .store(self.maxmemory() as u64, Ordering::Relaxed);
        self.busy_reply_threshold
            .store(self.busy_reply_threshold(), Ordering::Relaxed);
        self.list_max_listpack_size
            .store(self.list_max_listpack_size(), Ordering::Relaxed);
        for (slot, value) in [
            (
                &self.hash_max_listpack_entries,
                self.hash_max_listpack_entries(),
            ),
            (
                &self.hash_max_listpack_value,
                self.hash_max_listpack_value(),
            ),
            (&self.set_max_intset_entries, self.set_max_intset_entries()),
            (
                &self.zset_max_listpack_entries,
                self.zset_max_listpack_entries(),
            ),
            (
                &self.zset_max_listpack_value,
                self.zset_max_listpack_value(),
            ),
            (&self.hll_sparse_max_bytes, self.hll_sparse_max_bytes()),
            (&self.stream_node_max_bytes, self.stream_node_max_bytes()),
            (
                &self.stream_node_max_entries,
                self.stream_node_max_entries(),
            ),
        ] {
            slot.store(value.max(0) as usize, Ordering::Relaxed);
        }
        let min_replicas = if self.min_replicas_max_lag() != 0 {
            self.min_replicas_to_write()
        } else {
            0
        };
        self.min_replicas_to_write
            .store(min_replicas, Ordering::Relaxed);
        let limits = self.client_output_buffer_limit();
        let words: Vec<&str> = limits.split_whitespace().collect();
        for chunk in words.chunks(4) {
            let class = match chunk {
                ["normal", ..] => &self.obuf_normal,
                ["pubsub", ..] => &self.obuf_pubsub,
                ["slave", ..] => &self.obuf_replica,
                _ => continue,
            };
            if chunk.len() == 4 {
                for (slot, v) in class.iter().zip(&chunk[1..]) {
                    slot.store(v.parse().unwrap_or(0), Ordering::Relaxed);
                }
            }
        }
        let slow = self.slowlog_log_slower_than();
        let latency = self.latency_monitor_threshold();
        self.slowlog_log_slower_than.store(slow, Ordering::Relaxed);
        self.slowlog_max_len
            .store(self.slowlog_max_len().max(0) as usize, Ordering::Relaxed);
        self.latency_monitor_threshold
            .store(latency, Ordering::Relaxed);
        self.latency_tracking
            .store(self.latency_tracking(), Ordering::Relaxed);
        let slow_us = if slow >= 0 { slow as u64 } else { u64::MAX };
        let latency_us = if latency > 0 {
            (latency as u64).saturating_mul(1000)
        } else {
            u64::MAX
        };
        self.watch_us
            .store(slow_us.min(latency_us), Ordering::Relaxed);
    }

    /// The canonical value of a parameter (by name or alias).
    /// A parameter's value as CONFIG GET shows it, by its `Param` (for
    /// code that holds parameters as data, as a protected command's spec).
    pub fn text(&self, p: Param) -> String {
        self.values.read()[p as usize].clone()
    }

    /// A parameter's value as CONFIG GET shows it, by its spec (for code
    /// that walks the table).
    pub fn value(&self, spec: &'static ParamSpec) -> String {
        self.values.read()[index(spec)].clone()
    }

    /// A parameter's value by its name or alias, as CONFIG GET shows it
    /// (None for no such parameter). Code reads a parameter through its
    /// accessor (`Config::repl_backlog_size`) instead.
    pub fn get(&self, name: &str) -> Option<String> {
        let spec = spec(name)?;
        Some(self.values.read()[index(spec)].clone())
    }

    /// A `user` directive: the user's name and rules. A name given twice
    /// is refused, as Redis refuses it.
    pub fn add_user(&self, args: &[String]) -> Result<(), ConfigError> {
        let name = args
            .first()
            .ok_or_else(|| "Bad directive or wrong number of arguments".to_string())?;
        let mut users = self.users.lock();
        if users.iter().any(|u| u[0] == *name) {
            return Err(
                "Duplicate user found. A user can only be defined once in config files".to_string(),
            );
        }
        users.push(args.to_vec());
        Ok(())
    }

    /// Sets one parameter at startup (config file or command line):
    /// immutable parameters are allowed here.
    pub fn set_initial(&self, name: &str, value: &str) -> Result<(), ConfigError> {
        let spec =
            spec(name).ok_or_else(|| "Bad directive or wrong number of arguments".to_string())?;
        let mut v = canonical(spec, value)?;
        if matches!(spec.kind, Kind::ObufLimits) {
            // One line per class, as CONFIG REWRITE writes them: the
            // classes not named keep their limits.
            let current = self.values.read()[index(spec)].clone();
            v = canonical(spec, &format!("{current} {v}"))?;
        }
        self.values.write()[index(spec)] = v;
        self.refresh_hot();
        Ok(())
    }

    /// CONFIG SET of several parameters, all or nothing (Redis 7 semantics).
    /// The error names the parameter at fault. `protected`: whether the
    /// client may set PROTECTED parameters (enable-protected-configs).
    pub fn set_many(
        &self,
        pairs: &[(&str, &str)],
        protected: bool,
    ) -> Result<(), (String, ConfigError)> {
        // Every name first, as Redis's configSetCommand: the first one at
        // fault is the error; values are read only once all names pass.
        let mut specs: Vec<&'static ParamSpec> = Vec::with_capacity(pairs.len());
        // A value's error names the parameter as the table spells the name
        // it was asked by (an alias stays an alias), as Redis's lookup does.
        let table_name = |spec: &'static ParamSpec, asked: &str| -> String {
            match spec.alias {
                Some(a) if a.eq_ignore_ascii_case(asked) => a.to_string(),
                _ => spec.name.to_string(),
            }
        };
        for (name, _) in pairs {
            let refuse = |reason: &str| Err((name.to_string(), reason.into()));
            let Some(spec) = spec(name) else {
                return refuse("unknown");
            };
            if spec.flags & IMMUTABLE != 0 {
                return refuse("can't set immutable config");
            }
            if spec.flags & PROTECTED != 0 && !protected {
                return refuse("can't set protected config");
            }
            if specs.iter().any(|s| s.name == spec.name) {
                return refuse("duplicate parameter");
            }
            specs.push(spec);
        }
        let mut staged: Vec<(usize, String)> = Vec::new();
        for (spec, (asked, value)) in specs.into_iter().zip(pairs) {
            let name = table_name(spec, asked);
            let mut v = canonical(spec, value).map_err(|e| (name.to_string(), e))?;
            if matches!(spec.kind, Kind::ObufLimits) {
                // The classes not named keep their limits.
                let current = self.values.read()[index(spec)].clone();
                v = canonical(spec, &format!("{current} {v}")).map_err(|e| (name.clone(), e))?;
            }
            if matches!(spec.kind, Kind::Dir) && !std::path::Path::new(&v).is_dir() {
                return Err((name, "No such file or directory".into()));
            }
            staged.push((index(spec), v));
        }
        let mut values = self.values.write();
        for (i, v) in staged {
            values[i] = v;
        }
        drop(values);
        self.refresh_hot();
        Ok(())
    }

    /// Every parameter by its name, hidden ones included (CONFIG REWRITE).
    pub fn all(&self) -> Vec<(&'static str, String)> {
        let names: Vec<&[u8]> = PARAMS.iter().map(|s| s.name.as_bytes()).collect();
        self.matching(&names)
    }

    /// CONFIG GET: (name, value) for every parameter whose name or alias
    /// matches one of the glob patterns, each parameter once.
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(&'static str, String)> {
        let values = self.values.read();
        let mut out = Vec::new();
        let is_glob = |p: &[u8]| p.iter().any(|c| matches!(c, b'*' | b'?' | b'['));
        for spec in PARAMS {
            for name in std::iter::once(spec.name).chain(spec.alias) {
                let wanted = patterns.iter().any(|p| {
                    if is_glob(p) {
                        spec.flags & HIDDEN == 0
                            && crate::util::glob_match(p, name.as_bytes(), true)
                    } else {
                        p.eq_ignore_ascii_case(name.as_bytes())
                    }
                });
                if wanted && !out.iter().any(|(n, _)| *n == name) {
                    let mut v = values[index(spec)].clone();
                    if matches!(spec.kind, Kind::Dir) {
                        if let Ok(abs) = std::fs::canonicalize(&v) {
                            v = abs.to_string_lossy().into_owned();
                        }
                    }
                    out.push((name, v));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/CONFIG.md's list of the parameters Goblin does not act on is
    /// the table's.
    #[test]
    fn not_acted_on_matches_the_docs() {
        let doc = include_str!("../../../docs/CONFIG.md");
        let start = doc
            .find("## Parameters Goblin does not act on")
            .expect("the section");
        let section = &doc[start..];
        let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
        let listed: std::collections::BTreeSet<&str> =
            section[..end].split('`').skip(1).step_by(2).collect();
        let table: std::collections::BTreeSet<&str> = PARAMS
            .iter()
            .filter(|s| !s.acted_on())
            .map(|s| s.name)
            .collect();
        assert_eq!(listed, table);
    }

    /// The kinds of the parameters Goblin keeps for Redis's sake validate
    /// and render as Redis's.
    #[test]
    fn octal_hostname_and_title_template() {
        let c = Config::new();
        let set = |name: &str, value: &str| c.set_initial(name, value);
        set("unixsocketperm", "0700").unwrap();
        assert_eq!(c.unixsocketperm(), "700");
        assert_eq!(
            set("unixsocketperm", "800").unwrap_err(),
            "argument couldn't be parsed as an octal number"
        );
        assert_eq!(
            set("unixsocketperm", "1000").unwrap_err(),
            "argument must be between 0 and 777 inclusive"
        );
        set("cluster-announce-hostname", "a-b.c").unwrap();
        assert_eq!(
            set("cluster-announce-hostname", "a_b").unwrap_err(),
            "Hostnames may only contain alphanumeric characters, hyphens or dots"
        );
        set("proc-title-template", "{title} {{x}} {port}").unwrap();
        for bad in ["{title}", "{nope}", "{title", "x {"] {
            assert_eq!(
                set("proc-title-template", bad).unwrap_err(),
                "template format is invalid or contains unknown variables",
                "{bad}"
            );
        }
        assert_eq!(
            c.set_many(&[("activedefrag", "yes")], false).unwrap_err().1,
            "Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution"
        );
        // Memory values as Redis's memtoull reads them.
        assert_eq!(parse_memory(""), Some(0));
        assert!(canonical(spec("maxmemory").unwrap(), "99999999999999999999gb").is_err());
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1kb"), Some(1024));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("2GB"), Some(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_memory("x"), None);
        assert_eq!(parse_memory("-1"), None);
    }

    /// Each parameter's accessor has the type of its kind: `bool` for a
    /// yes/no, `i64` for an integer or a size in bytes, the text for any
    /// other; the table and its accessors cannot drift apart.
    #[test]
    fn accessors_are_typed_by_kind() {
        assert_eq!(ACCESSOR_TYPES.len(), PARAMS.len());
        for (spec, ty) in PARAMS.iter().zip(ACCESSOR_TYPES) {
            let want = match spec.kind {
                Kind::Bool => "bool",
                Kind::Int { .. } | Kind::Memory { .. } => "i64",
                _ => "String",
            };
            assert_eq!(*ty, want, "{}", spec.name);
        }
        let c = Config::new();
        assert_eq!(c.repl_backlog_size(), 1024 * 1024);
        assert!(c.protected_mode());
        assert_eq!(c.appendfsync(), "everysec");
        assert_eq!(
            PARAMS[Param::ReplBacklogSize as usize].name,
            "repl-backlog-size"
        );
    }

    #[test]
    fn set_is_all_or_nothing() {
        let c = Config::new();
        assert!(c
            .set_many(&[("hz", "20"), ("maxmemory", "bad")], false)
            .is_err());
        assert_eq!(c.hz(), 10);
        c.set_many(&[("hz", "20"), ("maxmemory", "1mb")], false)
            .unwrap();
        assert_eq!(c.maxmemory(), 1048576);
        assert_eq!(c.hash_max_listpack_entries(), 512);
    }

    /// shutdown-on-sigterm / -sigint and oom-score-adj take Redis's values,
    /// show them as Redis does and refuse others with its texts.
    #[test]
    fn shutdown_on_signal_and_oom_score_adj_values() {
        let c = Config::new();
        let set = |name: &str, value: &str| c.set_many(&[(name, value)], false).map_err(|e| e.1);
        assert_eq!(c.shutdown_on_sigterm(), "default");
        set("shutdown-on-sigterm", "NOW nosave").unwrap();
        assert_eq!(c.shutdown_on_sigterm(), "nosave now");
        set("shutdown-on-sigint", "force default").unwrap();
        assert_eq!(c.shutdown_on_sigint(), "force");
        assert_eq!(
            set("shutdown-on-sigint", "save nosave").unwrap_err(),
            "shutdown options SAVE and NOSAVE can't be used simultaneously"
        );
        assert_eq!(
            set("shutdown-on-sigint", "later").unwrap_err(),
            "argument(s) must be one of the following: default, save, nosave, now, force"
        );
        assert_eq!(c.shutdown_on_sigint(), "force");
        set("oom-score-adj", "relative").unwrap();
        assert_eq!(c.oom_score_adj(), "yes");
        set("oom-score-adj", "ABSOLUTE").unwrap();
        assert_eq!(c.oom_score_adj(), "absolute");
        assert_eq!(
            set("oom-score-adj", "maybe").unwrap_err(),
            "argument(s) must be one of the following: no, yes, relative, absolute"
        );
        assert_eq!(c.oom_score_adj_values(), "0 200 800");
        assert_eq!(
            set("oom-score-adj-values", "1 2").unwrap_err(),
            "wrong number of arguments"
        );
        // use-exit-on-panic is set at startup only, and hidden.
        assert_eq!(
            set("use-exit-on-panic", "yes").unwrap_err(),
            "can't set immutable config"
        );
        assert!(c.matching(&[b"use-exit*"]).is_empty());
    }
}
