//! CONFIG against Debian's redis-server 7.0.15, side by side: the same
//! parameters with the same defaults (CONFIG GET *), every parameter set
//! to another valid value and read back with the same rendering, the same
//! errors for bad values, unknown names, immutable parameters and bad
//! config lines, and the same file after CONFIG REWRITE.

use crate::common::process::{temp_dir, Proc};
use crate::goblin_support::{Conn, Reply};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn goblin_program() -> &'static str {
    env!("CARGO_BIN_EXE_goblin-server")
}

fn conn(p: &Proc) -> Conn {
    Conn::connect(([127, 0, 0, 1], p.port).into())
}

/// Where Goblin's defaults differ from Redis's on purpose (docs/CONFIG.md,
/// "Defaults that differ from Redis"), or a test server differs by
/// construction. Name, and why.
const DEFAULTS_ALLOWED_TO_DIFFER: &[(&str, &str)] = &[
    (
        "bind",
        "Goblin listens on 127.0.0.1 by default (Redis: * -::*)",
    ),
    ("appendonly", "Goblin's append-only file is on by default"),
    ("port", "each test server has a port of its own"),
    ("dir", "each test server has a directory of its own"),
];

/// Parameters of Redis 7.0.15 that Goblin does not have yet.
const NOT_IN_GOBLIN: &[(&str, &str)] = &[(
    "tracking-table-max-keys",
    "tracking's key table has no limit yet (a directive accepted and ignored)",
)];

/// CONFIG GET <pattern> as a name -> value map.
fn config_get(c: &mut Conn, pattern: &str) -> BTreeMap<String, String> {
    let items = c.cmd(&["CONFIG", "GET", pattern]).array();
    items
        .chunks(2)
        .map(|kv| (kv[0].text(), kv[1].text()))
        .collect()
}

fn start_pair(dir_name: &str, args: &[&str]) -> (Proc, Proc, std::path::PathBuf) {
    let dir = temp_dir(dir_name);
    let (gdir, rdir) = (dir.join("goblin"), dir.join("redis"));
    std::fs::create_dir_all(&gdir).unwrap();
    std::fs::create_dir_all(&rdir).unwrap();
    let goblin = Proc::goblin(&gdir, args);
    let redis = Proc::redis(&rdir, args);
    (goblin, redis, dir)
}

/// CONFIG GET * lists the same parameters as Redis, with Redis's defaults
/// rendered as Redis renders them; the hidden ones answer by name.
#[test]
fn config_get_lists_every_redis_parameter_with_its_default() {
    let (goblin, redis, _dir) = start_pair("config-get", &[]);
    let g = config_get(&mut conn(&goblin), "*");
    let r = config_get(&mut conn(&redis), "*");
    let allowed = |n: &str| DEFAULTS_ALLOWED_TO_DIFFER.iter().any(|(a, _)| *a == n);
    let missing: Vec<&String> = r
        .keys()
        .filter(|n| !g.contains_key(*n) && !NOT_IN_GOBLIN.iter().any(|(a, _)| a == n))
        .collect();
    assert!(missing.is_empty(), "not listed by Goblin: {missing:?}");
    let extra: Vec<&String> = g.keys().filter(|n| !r.contains_key(*n)).collect();
    assert!(extra.is_empty(), "listed by Goblin only: {extra:?}");
    let differing: Vec<String> = g
        .iter()
        .filter(|(n, v)| !allowed(n) && r.get(*n).is_some_and(|rv| rv != *v))
        .map(|(n, v)| format!("{n}: goblin {v:?}, redis {:?}", r[n]))
        .collect();
    assert!(differing.is_empty(), "defaults differ: {differing:#?}");
    // Hidden parameters: not in patterns, answered by name.
    for name in [
        "watchdog-period",
        "key-load-delay",
        "rdb-key-save-delay",
        "loading-process-events-interval-bytes",
        "use-exit-on-panic",
        "lua-enable-deprecated-api",
    ] {
        assert!(!g.contains_key(name), "{name} listed by a pattern");
        assert_eq!(
            config_get(&mut conn(&goblin), name),
            config_get(&mut conn(&redis), name),
            "{name}"
        );
    }
}

/// A value other than `current` for a parameter, valid on Redis: the
/// other boolean, another enum member (read from Redis's error), the
/// number plus one, or one chosen here.
fn other_value(redis: &mut Conn, name: &str, current: &str) -> Option<String> {
    let chosen = match name {
        "notify-keyspace-events" => "KEA",
        "client-output-buffer-limit" => "normal 1mb 2mb 3 pubsub 10 20 30",
        "oom-score-adj-values" => "0 300 900",
        "latency-tracking-info-percentiles" => "50 99.5",
        "proc-title-template" => "{title} {port} x",
        "shutdown-on-sigint" | "shutdown-on-sigterm" => "nosave now",
        "maxmemory-clients" => "5%",
        "unixsocketperm" => "700",
        "save" => "100 10",
        "replicaof" | "slaveof" => "127.0.0.1 1",
        "cluster-announce-hostname" => "host.example",
        "maxmemory" => "1gb",
        _ => "",
    };
    if !chosen.is_empty() {
        return Some(chosen.to_string());
    }
    let refusal = redis.cmd(&["CONFIG", "SET", name, "zzz-not-a-value"]);
    if let Reply::Error(e) = &refusal {
        if let Some((_, list)) = e.split_once("one of the following: ") {
            return list
                .split(", ")
                .find(|o| *o != current && *o != "yes" && *o != "relative")
                .map(str::to_string);
        }
    }
    match current {
        "yes" => Some("no".into()),
        "no" => Some("yes".into()),
        _ => match current.parse::<i64>() {
            Ok(n) => Some((n + 1).to_string()),
            Err(_) => Some("value-1".into()),
        },
    }
}

/// Parameters not set in the round trip, and why.
const NOT_SET_HERE: &[(&str, &str)] = &[
    ("port", "moves the test's server"),
    ("bind", "moves the test's server"),
    ("tls-port", "opens a TLS listener without certificates"),
    ("tracking-table-max-keys", "not a parameter of Goblin's yet"),
    (
        "maxclients",
        "bounded by the process's open files limit, which differs",
    ),
];

/// Parameters whose bad values are refused with another text on purpose,
/// and why.
const ERRORS_ALLOWED_TO_DIFFER: &[(&str, &str)] = &[(
    "maxmemory-policy",
    "Goblin has one more policy (allkeys-tinylfu) in the list of valid ones",
)];

/// Every parameter of Redis's CONFIG GET *: set to another valid value
/// and read back (same reply, same rendering), and bad values refused with
/// the same errors, on both servers.
#[test]
fn config_set_round_trips_like_redis() {
    let (goblin, redis, _dir) = start_pair("config-set", &[]);
    let (mut g, mut r) = (conn(&goblin), conn(&redis));
    let names: Vec<String> = config_get(&mut r, "*").into_keys().collect();
    let mut mismatches = Vec::new();
    for name in &names {
        if NOT_SET_HERE.iter().any(|(n, _)| n == name) {
            continue;
        }
        let before_r = config_get(&mut r, name)[name].clone();
        let before_g = config_get(&mut g, name)[name].clone();
        let restore = |g: &mut Conn, r: &mut Conn| {
            r.cmd(&["CONFIG", "SET", name, &before_r]);
            g.cmd(&["CONFIG", "SET", name, &before_g]);
        };
        for bad in ["zzz-not-a-value", "-1", ""] {
            let allowed = ERRORS_ALLOWED_TO_DIFFER.iter().any(|(n, _)| n == name);
            let (rr, gr) = (
                r.cmd(&["CONFIG", "SET", name, bad]),
                g.cmd(&["CONFIG", "SET", name, bad]),
            );
            if !allowed && rr != gr {
                mismatches.push(format!("SET {name} {bad:?}: redis {rr:?}, goblin {gr:?}"));
            }
            restore(&mut g, &mut r);
        }
        let Some(value) = other_value(&mut r, name, &before_r) else {
            continue;
        };
        let (rr, gr) = (
            r.cmd(&["CONFIG", "SET", name, &value]),
            g.cmd(&["CONFIG", "SET", name, &value]),
        );
        let (mut rv, mut gv) = (config_get(&mut r, name), config_get(&mut g, name));
        if name == "dir" {
            // Each server has a directory of its own.
            (rv, gv) = (BTreeMap::new(), BTreeMap::new());
        }
        if rr != gr || rv != gv {
            mismatches.push(format!(
                "SET {name} {value:?}: redis {rr:?} {rv:?}, goblin {gr:?} {gv:?}"
            ));
        }
        restore(&mut g, &mut r);
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

/// Errors of CONFIG itself: unknown names, pairs, duplicates, immutable
/// and protected parameters, and a multi-parameter SET that fails as a
/// whole.
#[test]
fn config_errors_like_redis() {
    let (goblin, redis, _dir) = start_pair("config-errors", &[]);
    let (mut g, mut r) = (conn(&goblin), conn(&redis));
    let cases: &[&[&str]] = &[
        &["CONFIG", "SET", "foo", "bar"],
        &["CONFIG", "SET", "Foo-Bar", "1", "hz", "20"],
        &["CONFIG", "SET", "hz", "20", "foo", "1"],
        &["CONFIG", "GET", "foo"],
        &["CONFIG", "GET", "foo", "hz"],
        &["CONFIG", "SET", "hz"],
        &["CONFIG", "SET", "hz", "1", "maxmemory"],
        &["CONFIG", "SET", "hz", "20", "hz", "30"],
        &["CONFIG", "SET", "hz", "20", "HZ", "30"],
        &["CONFIG", "SET", "daemonize", "yes"],
        &["CONFIG", "SET", "Daemonize", "yes"],
        &["CONFIG", "SET", "io-threads", "4"],
        &["CONFIG", "SET", "cluster-enabled", "yes"],
        &["CONFIG", "SET", "dir", "/tmp"],
        &["CONFIG", "SET", "dbfilename", "x.rdb"],
        &["CONFIG", "SET", "slaveof", "127.0.0.1 1"],
        &["CONFIG", "SET", "activedefrag", "yes"],
        &["CONFIG", "SET", "hash-max-ziplist-entries", "x"],
        &["CONFIG", "SET", "hz", "21", "maxmemory", "1xb"],
        &["CONFIG", "GET", "hz"],
        &["CONFIG", "SET", "unixsocketperm", "800"],
        &["CONFIG", "SET", "maxmemory-clients", "101%"],
        &["CONFIG", "SET", "appendfsync", "sometimes"],
        &["CONFIG", "SET", "client-output-buffer-limit", "normal 1 2"],
        &["CONFIG", "SET", "client-output-buffer-limit", "other 1 2 3"],
        &["CONFIG", "SET", "save", "100"],
        &["CONFIG", "SET", "notify-keyspace-events", "Q"],
        &["CONFIG", "SET", "oom-score-adj-values", "1 2"],
        &["CONFIG", "SET", "proc-title-template", "{nope}"],
        &["CONFIG", "SET", "cluster-announce-hostname", "a_b"],
        &["CONFIG", "SET", "latency-tracking-info-percentiles", "101"],
        &["CONFIG", "SET", "shutdown-on-sigterm", "save nosave"],
    ];
    for args in cases {
        assert_eq!(g.cmd(args), r.cmd(args), "{args:?}");
    }
    // The failed pair left hz as it was, on both.
    assert_eq!(config_get(&mut g, "hz")["hz"], "10");
}

/// What a server prints when its configuration stops it: the lines from
/// Redis's "*** FATAL CONFIG FILE ERROR" on.
fn startup_failure(program: &str, dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(program)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{program} {args:?} started");
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    let at = text
        .find("*** FATAL CONFIG FILE ERROR")
        .unwrap_or_else(|| panic!("{program} {args:?}: {text}"));
    text[at..].trim_end().to_string()
}

/// A bad directive stops both servers with the same report, from a
/// config file and from the command line.
#[test]
fn bad_directives_are_reported_like_redis() {
    let dir = temp_dir("config-directives");
    let lines = [
        "foo bar",
        "port 1 2",
        "hz x",
        "appendfsync bad",
        "activedefrag yes",
        "unixsocketperm 800",
        "syslog-facility local9",
        "proc-title-template {x}",
        "save 1",
        "maxmemory 10qb",
        "include",
        "cluster-enabled maybe",
    ];
    for (i, line) in lines.iter().enumerate() {
        let conf = dir.join(format!("bad-{i}.conf"));
        std::fs::write(&conf, format!("# a comment\n\nhz 20\n{line}\n")).unwrap();
        let conf = conf.to_str().unwrap();
        assert_eq!(
            startup_failure(goblin_program(), &dir, &[conf]),
            startup_failure("redis-server", &dir, &[conf]),
            "{line}"
        );
        let mut words: Vec<String> = line.split(' ').map(str::to_string).collect();
        words[0] = format!("--{}", words[0]);
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        assert_eq!(
            startup_failure(goblin_program(), &dir, &args),
            startup_failure("redis-server", &dir, &args),
            "{line} on the command line"
        );
    }
}

/// Command lines read as Redis's main() reads them (a value may start
/// with `--` once its option has none yet, bare words join the previous
/// line): the same reports.
#[test]
fn command_lines_are_read_like_redis() {
    let dir = temp_dir("config-command-line");
    let cases: &[&[&str]] = &[
        &["--port"],
        &["--port", "6380", "--loglevel"],
        &["--port", "6379", "6380"],
        &["--port", "--loglevel", "verbose"],
        &["--port", "--bla", "--loglevel", "verbose"],
        &["--logfile", "--my--log--file", "--loglevel", "--bla"],
        &["--shutdown-on-sigint"],
        &["--shutdown-on-sigint", "now force", "--shutdown-on-sigterm"],
        &["--replicaof", "127.0.0.1", "abc"],
        &["--replicaof", "--127.0.0.1", "abc"],
        &["--replicaof", "--127.0.0.1", "--abc"],
        &["--save", "--hz", "x"],
        &["--hz 20", "--appendfsync bad"],
        &["--no-such-option", "1"],
    ];
    for args in cases {
        assert_eq!(
            startup_failure(goblin_program(), &dir, args),
            startup_failure("redis-server", &dir, args),
            "{args:?}"
        );
    }
}

/// The rewritten file's lines up to the rewrite marker, and the set of
/// lines after it (Redis appends them in its hash table's order), with
/// the test's own port and directory lines left out.
fn rewritten(path: &Path) -> (String, BTreeSet<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let (head, tail) = match text.find("# Generated by CONFIG REWRITE\n") {
        Some(at) => (text[..at].to_string(), text[at..].to_string()),
        None => (text, String::new()),
    };
    let tail = tail
        .lines()
        .filter(|l| !l.starts_with("port ") && !l.starts_with("dir "))
        .map(str::to_string)
        .collect();
    (head, tail)
}

/// CONFIG REWRITE keeps comments, blank lines and include lines, writes
/// each value at its old line (removing the option's other lines), keeps
/// a line at the default, and appends the rest after the marker: the
/// file Goblin writes is Redis's for the same file and CONFIG SETs.
#[test]
fn config_rewrite_writes_what_redis_writes() {
    let dir = temp_dir("config-rewrite");
    let include = dir.join("included.conf");
    std::fs::write(&include, "hash-max-listpack-entries 256\n").unwrap();
    let text = format!(
        "# Test configuration\n# with comments\n\nhz 15\nmaxmemory 10mb\n\n\n\
         # memory policy\nmaxmemory-policy allkeys-lru\nsave 900 1\nsave 300 10\n\
         slave-read-only yes\ninclude {}\n  timeout   5  \nrequirepass \"\"\n\
         appendonly no\nbind 127.0.0.1\n",
        include.display()
    );
    let mut files = Vec::new();
    for (who, program) in [("goblin", goblin_program()), ("redis", "redis-server")] {
        let sub = dir.join(who);
        std::fs::create_dir_all(&sub).unwrap();
        let conf = sub.join("server.conf");
        std::fs::write(&conf, &text).unwrap();
        let server = Proc::spawn_with_config(program, &sub, &conf, &[]);
        let mut c = conn(&server);
        for (name, value) in [
            ("hz", "20"),
            ("maxmemory", "0"),
            ("maxmemory-policy", "noeviction"),
            ("save", "100 5"),
            ("replica-read-only", "no"),
            ("timeout", "30"),
            ("notify-keyspace-events", "KEA"),
            ("client-output-buffer-limit", "pubsub 64mb 16mb 90"),
            ("maxmemory-clients", "5%"),
            ("list-max-listpack-size", "-3"),
            ("masterauth", "a b\"c"),
            ("tcp-keepalive", "300"),
        ] {
            assert_eq!(
                c.cmd(&["CONFIG", "SET", name, value]),
                Reply::Status("OK".into()),
                "{who}: {name}"
            );
        }
        assert_eq!(
            c.cmd(&["CONFIG", "REWRITE"]),
            Reply::Status("OK".into()),
            "{who}"
        );
        files.push(conf);
        server.shutdown();
    }
    let (g, r) = (rewritten(&files[0]), rewritten(&files[1]));
    assert_eq!(g.0, r.0, "the file up to the marker");
    assert_eq!(g.1, r.1, "the lines after the marker");
    // Goblin starts from what it wrote, with the values it was set to.
    let server = Proc::spawn_with_config(goblin_program(), &dir.join("goblin"), &files[0], &[]);
    let mut c = conn(&server);
    assert_eq!(config_get(&mut c, "timeout")["timeout"], "30");
    assert_eq!(config_get(&mut c, "save")["save"], "100 5");
    assert_eq!(
        config_get(&mut c, "hash-max-listpack-entries")["hash-max-listpack-entries"],
        "256"
    );
}

/// Without a config file, CONFIG REWRITE refuses as Redis does.
#[test]
fn config_rewrite_without_a_file() {
    let (goblin, redis, _dir) = start_pair("config-rewrite-none", &[]);
    assert_eq!(
        conn(&goblin).cmd(&["CONFIG", "REWRITE"]),
        conn(&redis).cmd(&["CONFIG", "REWRITE"])
    );
}
