//! `goblin-server [config-file] [--directive value ...]`, read the way
//! `redis-server` reads its arguments: an optional config file ("-" for
//! standard input) with one `directive arg...` per line, then directives
//! from the command line that override it.

use goblin_engine::protocol::split_args;
use goblin_engine::Config;

/// What the command line asks for.
pub enum Invocation {
    Run {
        config: Box<Config>,
        config_file: Option<String>,
    },
    Version,
    Help,
}

pub fn usage() -> &'static str {
    "Usage: goblin-server [/path/to/goblin.conf] [options] [-]\n       goblin-server - (read config from stdin)\n       goblin-server -v or --version\n       goblin-server -h or --help\n\nExamples:\n       goblin-server (run the server with default config: 127.0.0.1:6379, data in ./data)\n       goblin-server /etc/goblin/6379.conf\n       goblin-server --port 7777\n       goblin-server /etc/mygoblin.conf --loglevel verbose\n"
}

/// Redis's report of a configuration line it cannot apply
/// (loadServerConfigFromString), printed before the server exits.
fn fatal(lineno: usize, line: &str, err: &str) -> String {
    format!(
        "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\n\
         Reading the configuration file, at line {lineno}\n>>> '{line}'\n{err}",
        goblin_engine::REDIS_VERSION
    )
}

/// A command-line argument quoted as Redis quotes it into the
/// configuration text (sdscatrepr).
fn repr(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            b if b.is_ascii_graphic() || b == b' ' => out.push(b as char),
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

/// A directive failed: its line's report, or an included file's.
enum DirectiveError {
    Here(String),
    Reported(String),
}

impl From<String> for DirectiveError {
    fn from(e: String) -> DirectiveError {
        DirectiveError::Here(e)
    }
}

impl From<&str> for DirectiveError {
    fn from(e: &str) -> DirectiveError {
        DirectiveError::Here(e.to_string())
    }
}

/// Applies the directives of a config text (file contents); the first
/// line counts as line `first_line`.
fn apply_lines(config: &Config, text: &str, first_line: usize) -> Result<(), String> {
    for (n, line) in text.split('\n').enumerate() {
        let line = line.trim_matches([' ', '\t', '\r', '\n']);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let lineno = first_line + n;
        let args = split_args(line.as_bytes())
            .ok_or_else(|| fatal(lineno, line, "Unbalanced quotes in configuration line"))?;
        let args: Vec<String> = args
            .into_iter()
            .map(|a| String::from_utf8_lossy(&a).into_owned())
            .collect();
        match apply_directive(config, &args) {
            Ok(()) => {}
            Err(DirectiveError::Here(e)) => return Err(fatal(lineno, line, &e)),
            Err(DirectiveError::Reported(e)) => return Err(e),
        }
    }
    Ok(())
}

/// Applies the directives of a config text (file contents).
pub fn apply_text(config: &Config, text: &str, _origin: &str) -> Result<(), String> {
    apply_lines(config, text, 1)
}

fn apply_directive(config: &Config, args: &[String]) -> Result<(), DirectiveError> {
    const BAD: &str = "Bad directive or wrong number of arguments";
    let Some((name, values)) = args.split_first() else {
        return Ok(());
    };
    let name = name.to_ascii_lowercase();
    let Some(spec) = goblin_engine::config::spec(&name) else {
        return match (name.as_str(), values) {
            ("include", [path]) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("Can't open the include file {path}: {e}"))?;
                apply_text(config, &text, path).map_err(DirectiveError::Reported)
            }
            ("user", [_, ..]) => Ok(config.add_user(values)?),
            (name, _) if IGNORED_DIRECTIVES.contains(&name) => Ok(()),
            // Redis's deprecated_configs: accepted with one argument.
            (name, [_]) if DEPRECATED_DIRECTIVES.contains(&name) => Ok(()),
            _ => Err(DirectiveError::Here(BAD.to_string())),
        };
    };
    // One argument, except for the multi-argument parameters (save, bind,
    // client-output-buffer-limit...), whose arguments are joined.
    if !spec.multi_arg() && values.len() != 1 {
        return Err(DirectiveError::Here("wrong number of arguments".into()));
    }
    // Redis also lets `save` appear several times, each adding a rule.
    let mut value = values.join(" ");
    if spec.name == "save" && !values.is_empty() && !values[0].is_empty() {
        let current = config.save();
        if config_seen_save(config) && !current.is_empty() {
            value = format!("{current} {value}");
        }
        mark_save_seen(config);
    }
    config.set_initial(&name, &value)?;
    if let Some((_, off, why)) = OFF_ONLY_DIRECTIVES.iter().find(|(n, _, _)| *n == spec.name) {
        if config.value(spec) != *off {
            config.set_initial(spec.name, off)?;
            return Err(DirectiveError::Here(why.to_string()));
        }
    }
    Ok(())
}

/// Directives Redis 7.0 reads and ignores (its deprecated_configs), with
/// one argument.
const DEPRECATED_DIRECTIVES: &[&str] = &[
    "list-max-ziplist-entries",
    "list-max-ziplist-value",
    "lua-replicate-commands",
];

/// Redis 7.0 directives accepted in config files and on the command line
/// and ignored, not (yet) parameters of Goblin's. docs/CONFIG.md lists
/// them.
const IGNORED_DIRECTIVES: &[&str] = &["tracking-table-max-keys"];

/// Directives of features Goblin does not have, accepted with the value
/// that leaves them off and refused with any other: starting without them
/// would not be what the configuration asks for.
const OFF_ONLY_DIRECTIVES: &[(&str, &str, &str)] = &[(
    "cluster-enabled",
    "no",
    "cluster mode is not supported by this server (the GOBLIN.* module runs on a Redis Cluster)",
)];

thread_local! {
    static SAVE_SEEN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn config_seen_save(_c: &Config) -> bool {
    SAVE_SEEN.with(|s| s.get())
}

fn mark_save_seen(_c: &Config) {
    SAVE_SEEN.with(|s| s.set(true));
}

/// Parses the process arguments (without the program name), as Redis's
/// main() does: an optional config file first, `-` for standard input
/// (first or last), then the options, which become lines appended to the
/// file's text (`--port 6380` is the line `port "6380"`; a `--name`
/// argument starts a line only once the previous one has a value, so a
/// value may itself start with `--`; `"--port 6380"` in one argument is a
/// line of its own). The whole text is then read as one file, so a bad
/// option is reported with its line number after the file's.
pub fn parse_args(args: &[String]) -> Result<Invocation, String> {
    let config = Config::new();
    SAVE_SEEN.with(|s| s.set(false));
    if let Some(first) = args.first() {
        match first.as_str() {
            "-v" | "--version" => return Ok(Invocation::Version),
            "-h" | "--help" => return Ok(Invocation::Help),
            _ => {}
        }
    }
    let mut config_file = None;
    let mut text = String::new();
    let mut rest = args;
    if let Some(first) = args.first().filter(|a| !a.starts_with('-')) {
        text = std::fs::read_to_string(first)
            .map_err(|e| format!("Fatal error, can't open config file '{first}': {e}"))?;
        config_file = Some(
            std::fs::canonicalize(first)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| first.clone()),
        );
        rest = &args[1..];
    }
    let options = command_line_options(rest, args.len());
    if options.from_stdin {
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| e.to_string())?;
    }
    if !options.text.is_empty() {
        text.push('\n');
        text.push_str(&options.text);
    }
    apply_text(&config, &text, config_file.as_deref().unwrap_or("-"))?;
    Ok(Invocation::Run {
        config: Box::new(config),
        config_file,
    })
}

/// The command line's options as config text (Redis's main()).
struct CommandLineOptions {
    text: String,
    from_stdin: bool,
}

/// `args` are the arguments after the config file; `total` counts all of
/// them, the config file included (`-` reads standard input only as the
/// first or the last argument).
fn command_line_options(args: &[String], total: usize) -> CommandLineOptions {
    let mut text = String::new();
    let mut from_stdin = false;
    let mut handled_last = true;
    let offset = total - args.len();
    for (i, arg) in args.iter().enumerate() {
        let j = offset + i;
        let last = j + 1 == total;
        let next_is_option = args.get(i + 1).is_some_and(|a| a.starts_with("--"));
        if arg == "-" && (j == 0 || last) {
            from_stdin = true;
        } else if handled_last && arg.starts_with("--") {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&arg[2..]);
            text.push(' ');
            let words = split_args(arg.as_bytes()).map_or(0, |w| w.len());
            if words == 1 {
                handled_last = false;
                if arg.eq_ignore_ascii_case("--save") && (last || next_is_option) {
                    // `--save` with no value is `save ""` (no rules).
                    text.push_str("\"\"");
                    handled_last = !last;
                }
            } else {
                handled_last = true;
            }
        } else {
            text.push_str(&repr(arg));
            text.push(' ');
            handled_last = true;
        }
    }
    CommandLineOptions { text, from_stdin }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Config {
        match parse_args(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap() {
            Invocation::Run { config, .. } => *config,
            _ => panic!("expected run"),
        }
    }

    #[test]
    fn command_line_directives() {
        let c = run(&[
            "--port",
            "7000",
            "--save",
            "900",
            "1",
            "300",
            "10",
            "--appendonly",
            "no",
        ]);
        assert_eq!(c.port(), 7000);
        assert_eq!(c.save(), "900 1 300 10");
        assert!(!c.appendonly());
    }

    #[test]
    fn config_file_then_overrides() {
        let dir = std::env::temp_dir().join(format!("goblin-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("g.conf");
        std::fs::write(
            &path,
            "# comment\nport 6400\nsave 900 1\nsave 60 100\nrequirepass \"a b\"\n",
        )
        .unwrap();
        let c = run(&[path.to_str().unwrap(), "--port", "6401"]);
        assert_eq!(c.port(), 6401);
        assert_eq!(c.save(), "900 1 60 100");
        assert_eq!(c.requirepass(), "a b");
    }

    #[test]
    fn bad_directive_is_fatal() {
        assert!(parse_args(&["--no-such-thing".into(), "1".into()]).is_err());
        assert!(parse_args(&["--port".into(), "notaport".into()]).is_err());
    }

    /// A bad directive is reported as Redis reports it: the line (the
    /// command line's follow the file's), the directive, the reason once.
    #[test]
    fn a_bad_directive_is_named() {
        let err = |args: &[&str]| match parse_args(
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        ) {
            Err(e) => e,
            Ok(_) => panic!("{args:?} accepted"),
        };
        assert_eq!(
            err(&["--port", "7000", "--no-such-thing", "4"]),
            format!(
                "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\nReading the configuration file, at line 3\n>>> 'no-such-thing \"4\"'\nBad directive or wrong number of arguments",
                goblin_engine::REDIS_VERSION
            )
        );
        assert!(
            err(&["--port", "notaport"]).ends_with(
                "at line 2\n>>> 'port \"notaport\"'\nargument couldn't be parsed into an integer"
            ),
            "{}",
            err(&["--port", "notaport"])
        );
    }

    /// Every directive of Redis 7.0.15's config table (config.c's
    /// standard configs and their aliases).
    const REDIS_DIRECTIVES: &[&str] = &[
        "acl-pubsub-default",
        "aclfile",
        "acllog-max-len",
        "active-defrag-cycle-max",
        "active-defrag-cycle-min",
        "active-defrag-ignore-bytes",
        "active-defrag-max-scan-fields",
        "active-defrag-threshold-lower",
        "active-defrag-threshold-upper",
        "active-expire-effort",
        "activedefrag",
        "activerehashing",
        "always-show-logo",
        "aof-disable-auto-gc",
        "aof-load-truncated",
        "aof-rewrite-incremental-fsync",
        "aof-timestamp-enabled",
        "aof-use-rdb-preamble",
        "appenddirname",
        "appendfilename",
        "appendfsync",
        "appendonly",
        "auto-aof-rewrite-percentage",
        "bind",
        "bind-source-addr",
        "busy-reply-threshold",
        "client-output-buffer-limit",
        "client-query-buffer-limit",
        "cluster-allow-pubsubshard-when-down",
        "cluster-allow-reads-when-down",
        "cluster-allow-replica-migration",
        "cluster-announce-bus-port",
        "cluster-announce-hostname",
        "cluster-announce-ip",
        "cluster-announce-port",
        "cluster-announce-tls-port",
        "cluster-config-file",
        "cluster-enabled",
        "cluster-link-sendbuf-limit",
        "cluster-migration-barrier",
        "cluster-node-timeout",
        "cluster-port",
        "cluster-preferred-endpoint-type",
        "cluster-replica-no-failover",
        "cluster-replica-validity-factor",
        "cluster-require-full-coverage",
        "cluster-slave-no-failover",
        "cluster-slave-validity-factor",
        "crash-log-enabled",
        "crash-memcheck-enabled",
        "daemonize",
        "databases",
        "dbfilename",
        "dir",
        "disable-thp",
        "dynamic-hz",
        "enable-debug-command",
        "enable-module-command",
        "enable-protected-configs",
        "hash-max-listpack-entries",
        "hash-max-listpack-value",
        "hash-max-ziplist-entries",
        "hash-max-ziplist-value",
        "hll-sparse-max-bytes",
        "hz",
        "ignore-warnings",
        "io-threads",
        "io-threads-do-reads",
        "jemalloc-bg-thread",
        "key-load-delay",
        "latency-monitor-threshold",
        "latency-tracking",
        "latency-tracking-info-percentiles",
        "lazyfree-lazy-eviction",
        "lazyfree-lazy-expire",
        "lazyfree-lazy-server-del",
        "lazyfree-lazy-user-del",
        "lazyfree-lazy-user-flush",
        "lfu-decay-time",
        "lfu-log-factor",
        "list-compress-depth",
        "list-max-listpack-size",
        "list-max-ziplist-size",
        "logfile",
        "loglevel",
        "lua-enable-deprecated-api",
        "lua-time-limit",
        "masterauth",
        "masteruser",
        "maxclients",
        "maxmemory",
        "maxmemory-clients",
        "maxmemory-eviction-tenacity",
        "maxmemory-policy",
        "maxmemory-samples",
        "min-replicas-max-lag",
        "min-replicas-to-write",
        "min-slaves-max-lag",
        "min-slaves-to-write",
        "no-appendfsync-on-rewrite",
        "notify-keyspace-events",
        "oom-score-adj",
        "oom-score-adj-values",
        "pidfile",
        "port",
        "proc-title-template",
        "propagation-error-behavior",
        "protected-mode",
        "proto-max-bulk-len",
        "rdb-del-sync-files",
        "rdb-key-save-delay",
        "rdb-save-incremental-fsync",
        "rdbchecksum",
        "rdbcompression",
        "repl-backlog-size",
        "repl-backlog-ttl",
        "repl-disable-tcp-nodelay",
        "repl-diskless-load",
        "repl-diskless-sync",
        "repl-diskless-sync-delay",
        "repl-diskless-sync-max-replicas",
        "repl-ping-replica-period",
        "repl-ping-slave-period",
        "repl-timeout",
        "replica-announce-ip",
        "replica-announce-port",
        "replica-announced",
        "replica-ignore-disk-write-errors",
        "replica-ignore-maxmemory",
        "replica-lazy-flush",
        "replica-priority",
        "replica-read-only",
        "replica-serve-stale-data",
        "replicaof",
        "requirepass",
        "sanitize-dump-payload",
        "save",
        "set-max-intset-entries",
        "set-proc-title",
        "shutdown-on-sigint",
        "shutdown-on-sigterm",
        "shutdown-timeout",
        "slave-announce-ip",
        "slave-announce-port",
        "slave-ignore-maxmemory",
        "slave-lazy-flush",
        "slave-priority",
        "slave-read-only",
        "slave-serve-stale-data",
        "slaveof",
        "slowlog-log-slower-than",
        "slowlog-max-len",
        "socket-mark-id",
        "stop-writes-on-bgsave-error",
        "stream-node-max-bytes",
        "stream-node-max-entries",
        "supervised",
        "syslog-enabled",
        "syslog-facility",
        "syslog-ident",
        "tcp-backlog",
        "tcp-keepalive",
        "timeout",
        "tls-auth-clients",
        "tls-ca-cert-dir",
        "tls-ca-cert-file",
        "tls-cert-file",
        "tls-ciphers",
        "tls-ciphersuites",
        "tls-client-cert-file",
        "tls-client-key-file",
        "tls-client-key-file-pass",
        "tls-cluster",
        "tls-dh-params-file",
        "tls-key-file",
        "tls-key-file-pass",
        "tls-port",
        "tls-prefer-server-ciphers",
        "tls-protocols",
        "tls-replication",
        "tls-session-cache-size",
        "tls-session-cache-timeout",
        "tls-session-caching",
        "tracking-table-max-keys",
        "unixsocket",
        "unixsocketperm",
        "use-exit-on-panic",
        "watchdog-period",
        "zset-max-listpack-entries",
        "zset-max-listpack-value",
        "zset-max-ziplist-entries",
        "zset-max-ziplist-value",
    ];

    /// A Redis 7.0 configuration starts Goblin: every directive is a
    /// parameter of Goblin's, or one it accepts and ignores.
    #[test]
    fn every_redis_directive_is_accepted() {
        let unknown: Vec<&str> = REDIS_DIRECTIVES
            .iter()
            .copied()
            .filter(|n| {
                goblin_engine::config::spec(n).is_none()
                    && !IGNORED_DIRECTIVES.contains(n)
                    && !OFF_ONLY_DIRECTIVES.iter().any(|(o, _, _)| o == n)
            })
            .collect();
        assert!(unknown.is_empty(), "not accepted: {unknown:?}");
        // Those of features Goblin lacks start it only when off.
        assert!(parse_args(&["--cluster-enabled".into(), "no".into()]).is_ok());
        match parse_args(&["--cluster-enabled".into(), "yes".into()]) {
            Err(e) => assert!(e.contains("cluster mode is not supported"), "{e}"),
            Ok(_) => panic!("cluster-enabled yes accepted"),
        }
    }

    /// The tls-* directives are parameters of their own, with Redis's
    /// defaults, from a file and from the command line.
    #[test]
    fn tls_directives() {
        let c = run(&[
            "--tls-port",
            "6380",
            "--tls-auth-clients",
            "optional",
            "--tls-protocols",
            "TLSv1.2 TLSv1.3",
        ]);
        assert_eq!(c.tls_port(), 6380);
        assert_eq!(c.tls_auth_clients(), "optional");
        assert_eq!(c.tls_protocols(), "TLSv1.2 TLSv1.3");
        assert_eq!(c.tls_session_cache_size(), 20480);
        assert_eq!(c.tls_session_cache_timeout(), 300);
        assert!(c.tls_session_caching());
        assert!(!c.tls_prefer_server_ciphers());
        assert_eq!(c.tls_cert_file(), "");
        assert!(parse_args(&["--tls-auth-clients".into(), "maybe".into()]).is_err());
        assert!(parse_args(&["--tls-port".into(), "70000".into()]).is_err());
    }
}
