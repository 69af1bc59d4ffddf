//! The flags a command declares, as Redis names them: the command's own
//! (COMMAND INFO's flags), its key specs' and its channel arguments'.
//! Plain data, read by the dispatcher, ACL, CLIENT PAUSE and COMMAND.

/// Command flags, as Redis names them in COMMAND INFO.
pub mod flag {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const SKIP_MONITOR: u32 = 1 << 9;
    pub const SKIP_SLOWLOG: u32 = 1 << 10;
    pub const FAST: u32 = 1 << 11;
    pub const NO_AUTH: u32 = 1 << 12;
    pub const MAY_REPLICATE: u32 = 1 << 13;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 14;
    pub const NO_MULTI: u32 = 1 << 15;
    pub const ALLOW_BUSY: u32 = 1 << 16;
    pub const NO_ASYNC_LOADING: u32 = 1 << 17;
    /// Goblin-specific: the command needs every shard (KEYS, FLUSHALL,
    /// SWAPDB, DBSIZE...). Not reported by COMMAND INFO.
    pub const ALL_SHARDS: u32 = 1 << 24;
    /// Goblin-specific: runs at once inside MULTI instead of being queued
    /// (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET).
    pub const TX_CONTROL: u32 = 1 << 25;
    /// Goblin-specific: may run while a RESP2 client is subscribed
    /// ((P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PING, QUIT, RESET: the list of
    /// Redis's processCommand).
    pub const SUBSCRIBED_OK: u32 = 1 << 26;
    /// Goblin-specific: runs the client's transaction (EXEC): refusing it
    /// discards the transaction (EXECABORT), as Redis's rejectCommand
    /// does for execCommand.
    pub const RUNS_TX: u32 = 1 << 27;
    /// Goblin-specific: runs inside MULTI even when memory is past
    /// maxmemory (EXEC, DISCARD, QUIT, RESET): queueing may take any
    /// amount of memory, so everything else is refused then, as in
    /// Redis's processCommand.
    pub const MULTI_OOM_OK: u32 = 1 << 28;
    /// Goblin-specific: reports on other clients (CLIENT LIST). A
    /// connection's command so flagged first lets the connections woken
    /// with it run their turn (`Flow::Yield`), so that it sees what they
    /// read before it, as Redis serves every ready client of an event
    /// loop's turn in order (the command then also waits for turns in
    /// progress on other threads, `client::await_turns`).
    pub const AFTER_READY: u32 = 1 << 29;
    /// Goblin-specific: CLIENT CACHING still applies after this command
    /// (the CLIENT subcommands: Redis's resetClient keeps the flag after
    /// clientCommand).
    pub const KEEPS_CACHING: u32 = 1 << 30;
    /// Goblin-specific: refused with MISCONF while writes are (PING:
    /// Redis's processCommand refuses pingCommand beside the write
    /// commands, so that Sentinel and health checks see a server that
    /// cannot persist).
    pub const DISK_ERROR_REFUSED: u32 = 1 << 31;

    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        // MAY_REPLICATE is not listed: Redis hides it on purpose.
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        // COMMAND INFO's "movablekeys" comes here, derived from the key
        // specs (`CommandSpec::movable_keys`).
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// Key spec flags (Redis 7 key specs).
pub mod kflag {
    pub const RO: u32 = 1 << 0;
    pub const RW: u32 = 1 << 1;
    pub const OW: u32 = 1 << 2;
    pub const RM: u32 = 1 << 3;
    pub const ACCESS: u32 = 1 << 4;
    pub const UPDATE: u32 = 1 << 5;
    pub const INSERT: u32 = 1 << 6;
    pub const DELETE: u32 = 1 << 7;
    pub const NOT_KEY: u32 = 1 << 8;
    pub const INCOMPLETE: u32 = 1 << 9;
    pub const VARIABLE_FLAGS: u32 = 1 << 10;

    pub const NAMES: &[(u32, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// Channel argument flags (Redis's CMD_CHANNEL_*).
pub mod chflag {
    pub const PUBLISH: u32 = 1 << 0;
    pub const SUBSCRIBE: u32 = 1 << 1;
    pub const UNSUBSCRIBE: u32 = 1 << 2;
    /// The arguments are patterns (PSUBSCRIBE): ACL rules match them
    /// literally.
    pub const PATTERN: u32 = 1 << 3;
}
