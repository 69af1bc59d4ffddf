//! The module in the rest of Redis: its command table (COMMAND INFO,
//! COMMAND DOCS, COMMAND GETKEYSANDFLAGS) says what goblin-server's says;
//! MULTI/EXEC, WATCH and scripts run the commands as on goblin-server; the
//! append-only file and a replica receive exactly what changed (the calls
//! that read the clock as their effects), and replay it to the same data
//! and deadlines; the keyspace events are goblin-server's.

use crate::support;

use crate::support::common::TestServer;
use crate::support::goblin_support::{snapshot, Conn, KeyState, Reply};

/// COMMAND INFO's fields, by position.
const NAME: usize = 0;
const ARITY: usize = 1;
const FLAGS: usize = 2;
const FIRST: usize = 3;
const LAST: usize = 4;
const STEP: usize = 5;
const ACL: usize = 6;
const TIPS: usize = 7;
const KEY_SPECS: usize = 8;
const SUBCOMMANDS: usize = 9;

fn texts(reply: &Reply) -> Vec<String> {
    reply.array().iter().map(Reply::text).collect()
}

/// COMMAND DOCS of one command as a field -> value list.
fn docs(conn: &mut Conn, name: &str) -> Vec<(String, Reply)> {
    let reply = conn.cmd(&["COMMAND", "DOCS", name]).array();
    assert_eq!(reply.len(), 2, "COMMAND DOCS {name}: {reply:?}");
    reply[1]
        .array()
        .chunks(2)
        .map(|p| (p[0].text(), p[1].clone()))
        .collect()
}

#[test]
fn the_command_table_says_what_goblin_server_says() {
    let goblin = TestServer::start();
    let redis = support::redis_with_module(&[]);
    let mut g = Conn::connect(goblin.addr);
    let mut r = redis.conn();
    for command in goblin_family::COMMANDS {
        let name = command.name;
        let gi = g.cmd(&["COMMAND", "INFO", name]).array()[0].array();
        let ri = r.cmd(&["COMMAND", "INFO", name]).array()[0].array();
        for field in [NAME, ARITY, FIRST, LAST, STEP, TIPS, KEY_SPECS, SUBCOMMANDS] {
            assert_eq!(gi[field], ri[field], "COMMAND INFO {name}, field {field}");
        }
        // Redis marks every module command `module`; otherwise the same.
        let mut module_flags = texts(&ri[FLAGS]);
        module_flags.retain(|f| f != "module");
        assert_eq!(texts(&gi[FLAGS]), module_flags, "flags of {name}");
        assert!(
            texts(&gi[FLAGS]).contains(&"denyoom".to_string()) == command.deny_oom,
            "{name}'s denyoom flag"
        );
        // Redis 7.0 cannot give a module command ACL categories
        // (RedisModule_SetCommandACLCategories came in 7.2).
        assert_eq!(ri[ACL], Reply::Array(vec![]), "ACL categories of {name}");

        // COMMAND DOCS: the same text and arguments; Redis files a module
        // command under the group "module" and names the module.
        let gd = docs(&mut g, name);
        let rd = docs(&mut r, name);
        for field in ["summary", "since", "complexity", "arguments"] {
            let find = |d: &[(String, Reply)]| d.iter().find(|(k, _)| k == field).cloned();
            assert!(
                find(&gd).is_some(),
                "goblin-server's COMMAND DOCS {name} has {field}"
            );
            assert_eq!(find(&gd), find(&rd), "COMMAND DOCS {name}, {field}");
        }
        assert!(rd.contains(&("module".into(), Reply::Bulk(b"goblin".to_vec()))));

        // The key, and its flags, for a call (what a cluster client and
        // ACL key permissions read).
        let mut call = vec!["COMMAND", "GETKEYSANDFLAGS", name, "the-key"];
        call.extend(std::iter::repeat_n("1", command.arity as usize - 2));
        let gk = g.cmd(&call);
        assert_eq!(gk, r.cmd(&call), "COMMAND GETKEYSANDFLAGS {name}");
        call[1] = "GETKEYS";
        assert_eq!(
            r.cmd(&call),
            Reply::Array(vec![Reply::Bulk(b"the-key".to_vec())]),
            "COMMAND GETKEYS {name}"
        );
        assert_eq!(g.cmd(&call), r.cmd(&call));
    }
}

/// Sends the same commands to both servers, one connection each, and
/// asserts every reply is the same.
fn same_replies(g: &mut Conn, r: &mut Conn, commands: &[&[&str]]) -> Vec<Reply> {
    commands
        .iter()
        .map(|args| {
            let a = g.cmd(args);
            let b = r.cmd(args);
            assert_eq!(a, b, "reply to {args:?}");
            a
        })
        .collect()
}

#[test]
fn transactions_run_the_commands_as_goblin_server_does() {
    let goblin = TestServer::start();
    let redis = support::redis_with_module(&[]);
    let (mut g, mut r) = (Conn::connect(goblin.addr), redis.conn());
    let (mut g2, mut r2) = (Conn::connect(goblin.addr), redis.conn());
    let replies = same_replies(
        &mut g,
        &mut r,
        &[
            &["SET", "stock", "2"],
            &["LPUSH", "list", "x"],
            &["HSET", "slots", "f", "a"],
            &["MULTI"],
            &["GOBLIN.DECRPOS", "stock"],
            &["GOBLIN.DECRBYPOS", "stock", "5"],
            &["GOBLIN.INCRBOUND", "quota", "3", "10"],
            &["GOBLIN.DECRPOS", "list"],
            &["GOBLIN.HCAS", "slots", "f", "a", "b"],
            &["GOBLIN.DECRBYPOS", "stock", "0"],
            &["EXEC"],
            // A wrong argument count is refused while queueing, and dooms
            // the transaction.
            &["MULTI"],
            &["GOBLIN.DECRPOS", "stock"],
            &["GOBLIN.DECRPOS"],
            &["EXEC"],
            &["GET", "stock"],
            &["MGET", "quota", "stock"],
            &["HGET", "slots", "f"],
        ],
    );
    assert_eq!(
        replies[10].array()[..3],
        [Reply::Int(1), Reply::Int(-1), Reply::Int(3)]
    );
    assert!(matches!(&replies[14], Reply::Error(e) if e.starts_with("EXECABORT")));

    // WATCH: a call that changes nothing leaves the watched key clean; one
    // that changes it aborts the transaction.
    for (other, expect_nil) in [
        (&["GOBLIN.DECRBYPOS", "stock", "9"][..], false),
        (&["GOBLIN.CAD", "stock", "other"][..], false),
        (&["GOBLIN.DECRPOS", "stock"][..], true),
    ] {
        let mut exec = Vec::new();
        for (conn, conn2) in [(&mut g, &mut g2), (&mut r, &mut r2)] {
            assert_eq!(conn.cmd(&["WATCH", "stock"]), Reply::Status("OK".into()));
            conn2.cmd(other);
            conn.cmd(&["MULTI"]);
            conn.cmd(&["GET", "stock"]);
            exec.push(conn.cmd(&["EXEC"]));
        }
        assert_eq!(exec[0], exec[1], "EXEC after {other:?}");
        assert_eq!(
            exec[0] == Reply::NilArray,
            expect_nil,
            "EXEC after {other:?}"
        );
    }
}

#[test]
fn scripts_call_the_commands_as_goblin_server_does() {
    let goblin = TestServer::start();
    let redis = support::redis_with_module(&[]);
    let (mut g, mut r) = (Conn::connect(goblin.addr), redis.conn());
    let call = "return redis.call(ARGV[1], KEYS[1], unpack(ARGV, 2))";
    let pcall = "return redis.pcall(ARGV[1], KEYS[1], unpack(ARGV, 2))";
    let replies = same_replies(
        &mut g,
        &mut r,
        &[
            &["SET", "stock", "3"],
            &["EVAL", call, "1", "stock", "GOBLIN.DECRPOS"],
            &["EVAL", call, "1", "stock", "goblin.decrbypos", "2"],
            &["EVAL", call, "1", "stock", "goblin.decrbypos", "2"],
            &["EVAL", pcall, "1", "stock", "goblin.decrbypos", "0"],
            &["EVAL", pcall, "1", "stock", "goblin.decrbypos"],
            &["LPUSH", "list", "x"],
            &["EVAL", pcall, "1", "list", "GOBLIN.DECRPOS"],
            &["EVAL", call, "1", "h", "GOBLIN.HSETGT", "f", "1.5"],
            &["EVAL", call, "1", "h", "GOBLIN.HSETGT", "f", "1.25"],
            &["EVAL", call, "1", "lock", "GOBLIN.CAE", "me", "100000"],
            &["SET", "lock", "me"],
            &["EVAL", call, "1", "lock", "GOBLIN.CAD", "me"],
            &["GET", "stock"],
            &["HGETALL", "h"],
            &["EXISTS", "lock"],
        ],
    );
    assert_eq!(
        replies[1..4],
        [Reply::Int(2), Reply::Int(0), Reply::Int(-1)]
    );
    assert!(matches!(&replies[7], Reply::Error(e) if e.starts_with("WRONGTYPE")));

    // INCRTTL's pair crosses a script; its remaining lifetime is read from
    // each server's clock.
    for conn in [&mut g, &mut r] {
        let reply = conn.cmd(&["EVAL", call, "1", "hits", "GOBLIN.INCRTTL", "1", "100000"]);
        let pair = reply.array();
        assert_eq!(pair[0], Reply::Int(1));
        assert!((99_000..=100_000).contains(&pair[1].int()), "{pair:?}");
    }
}

// ---------------------------------------------------------------------------
// What is replicated.

/// The commands of a RESP file (an append-only file), in order.
fn commands_in(bytes: &[u8]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    let line = |rest: &mut &[u8]| -> String {
        let end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let l = String::from_utf8(rest[..end].to_vec()).unwrap();
        *rest = &rest[end + 2..];
        l
    };
    while !rest.is_empty() {
        let head = line(&mut rest);
        let n: usize = head
            .strip_prefix('*')
            .expect("a multibulk")
            .parse()
            .unwrap();
        let mut argv = Vec::new();
        for _ in 0..n {
            let len: usize = line(&mut rest)[1..].parse().unwrap();
            argv.push(String::from_utf8_lossy(&rest[..len]).into_owned());
            rest = &rest[len + 2..];
        }
        out.push(argv);
    }
    out
}

/// A directory for a server's files, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "goblin-module-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }

    /// The commands of every incr file of the append-only directory.
    fn aof_commands(&self) -> Vec<Vec<String>> {
        let dir = self.0.join("appendonlydir");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_str().unwrap().ends_with(".incr.aof"))
            .collect();
        files.sort();
        files
            .iter()
            .flat_map(|f| commands_in(&std::fs::read(f).unwrap()))
            .collect()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn aof_server(dir: &TempDir) -> support::goblin_support::RedisProcess {
    support::redis_with_module(&[
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--dir",
        dir.path(),
    ])
}

#[test]
fn only_changes_reach_the_append_only_file_and_clock_readers_as_effects() {
    let dir = TempDir::new();
    let redis = aof_server(&dir);
    let mut c = redis.conn();
    let call = |c: &mut Conn, args: &[&str]| c.cmd(args);
    call(&mut c, &["SET", "stock", "1"]);
    assert_eq!(call(&mut c, &["GOBLIN.DECRPOS", "stock"]), Reply::Int(0));
    // Nothing changes: -1, an error, 0, a full semaphore.
    assert_eq!(call(&mut c, &["GOBLIN.DECRPOS", "stock"]), Reply::Int(-1));
    call(&mut c, &["SET", "text", "abc"]);
    assert!(matches!(
        call(&mut c, &["GOBLIN.DECRPOS", "text"]),
        Reply::Error(_)
    ));
    assert_eq!(call(&mut c, &["GOBLIN.CAD", "text", "xyz"]), Reply::Int(0));
    assert_eq!(
        call(&mut c, &["GOBLIN.CAE", "text", "xyz", "5000"]),
        Reply::Int(0)
    );
    assert!(matches!(
        call(&mut c, &["GOBLIN.INCRTTL", "text", "1", "5000"]),
        Reply::Error(_)
    ));
    // The clock readers, as their effects with absolute times.
    call(&mut c, &["GOBLIN.INCRTTL", "hits", "1", "100000"]);
    assert_eq!(
        call(&mut c, &["GOBLIN.CAE", "text", "abc", "200000"]),
        Reply::Int(1)
    );
    assert_eq!(
        call(&mut c, &["GOBLIN.ZWINDOW", "sem", "1", "300000", "a"]),
        Reply::Int(1)
    );
    assert_eq!(
        call(&mut c, &["GOBLIN.ZWINDOW", "sem", "1", "300000", "b"]),
        Reply::Int(0)
    );
    call(&mut c, &["ZADD", "sem", "1000", "crashed"]);
    call(&mut c, &["ZREM", "sem", "a"]);
    assert_eq!(
        call(&mut c, &["GOBLIN.ZWINDOW", "sem", "1", "300000", "b"]),
        Reply::Int(1)
    );
    // The others as the call.
    assert_eq!(
        call(&mut c, &["goblin.HSETGT", "peak", "f", "5"]),
        Reply::Int(1)
    );
    assert_eq!(
        call(&mut c, &["GOBLIN.HSETGT", "peak", "f", "4"]),
        Reply::Int(0)
    );

    let hits_at = c.cmd(&["PEXPIRETIME", "hits"]).int().to_string();
    let text_at = c.cmd(&["PEXPIRETIME", "text"]).int().to_string();
    let sem_at = c.cmd(&["PEXPIRETIME", "sem"]).int().to_string();
    let b_at = c.cmd(&["ZSCORE", "sem", "b"]).text();
    let mut logged = dir.aof_commands();
    // The ZWINDOW that dropped "crashed" ran at some instant `now`.
    let now = logged
        .iter()
        .find(|argv| argv[0] == "ZREMRANGEBYSCORE")
        .map(|argv| argv[3].clone())
        .expect("the dropped lease is logged");
    assert!(now.parse::<i64>().unwrap() < sem_at.parse::<i64>().unwrap());
    let first_lease = logged
        .iter()
        .find(|argv| argv[0] == "ZADD")
        .map(|argv| argv[2].clone())
        .unwrap();
    assert_eq!(logged.remove(0), ["SELECT", "0"]);
    let expected: Vec<Vec<String>> = [
        vec!["SET", "stock", "1"],
        vec!["GOBLIN.DECRPOS", "stock"],
        vec!["SET", "text", "abc"],
        vec!["SET", "hits", "1", "PXAT", &hits_at],
        vec!["PEXPIREAT", "text", &text_at],
        vec!["MULTI"],
        vec!["ZADD", "sem", &first_lease, "a"],
        vec!["PEXPIREAT", "sem", &first_lease],
        vec!["EXEC"],
        vec!["ZADD", "sem", "1000", "crashed"],
        vec!["ZREM", "sem", "a"],
        vec!["MULTI"],
        vec!["ZREMRANGEBYSCORE", "sem", "-inf", &now],
        vec!["ZADD", "sem", &b_at, "b"],
        vec!["PEXPIREAT", "sem", &sem_at],
        vec!["EXEC"],
        vec!["goblin.HSETGT", "peak", "f", "5"],
    ]
    .iter()
    .map(|argv| argv.iter().map(|s| s.to_string()).collect())
    .collect();
    assert_eq!(logged, expected);
}

/// A random GOBLIN.* call with arguments that mostly succeed, and long
/// TTLs only (nothing expires while a test runs).
fn random_call(rng: &mut fastrand::Rng) -> Vec<String> {
    let key = ["k1", "k2", "k3"][rng.usize(..3)];
    let n = |rng: &mut fastrand::Rng| rng.i64(-2..=6).to_string();
    let token = |rng: &mut fastrand::Rng| ["a", "b"][rng.usize(..2)].to_string();
    let ms = |rng: &mut fastrand::Rng| (rng.i64(1..=5) * 1_000_000).to_string();
    let command = goblin_family::COMMANDS[rng.usize(..goblin_family::COMMANDS.len())].name;
    let mut argv = vec![command.to_string(), key.to_string()];
    match command {
        "goblin.decrpos" => {}
        "goblin.decrbypos" | "goblin.decrby" => argv.push(n(rng)),
        "goblin.incrbound" => argv.extend([n(rng), "20".into()]),
        "goblin.incrttl" => argv.extend([n(rng), ms(rng)]),
        "goblin.cad" => argv.push(token(rng)),
        "goblin.cae" => argv.extend([token(rng), ms(rng)]),
        "goblin.hcad" => argv.extend(["f".into(), token(rng)]),
        "goblin.hcas" => argv.extend(["f".into(), token(rng), token(rng)]),
        "goblin.hsetgt" => argv.extend(["f".into(), n(rng)]),
        "goblin.zwindow" => argv.extend(["2".into(), ms(rng), token(rng)]),
        other => panic!("no arguments for {other}"),
    }
    argv
}

/// Drives `conn` through a random sequence of GOBLIN.* calls and plain
/// writes (which put the keys in other types and states), in MULTI/EXEC
/// and scripts now and then.
fn random_workload(conn: &mut Conn, seed: u64, steps: usize) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for _ in 0..steps {
        let key = ["k1", "k2", "k3"][rng.usize(..3)];
        let value = ["a", "b", "5", "x"][rng.usize(..4)];
        match rng.u32(..100) {
            0..=9 => {
                conn.cmd(&["SET", key, value]);
            }
            10..=14 => {
                conn.cmd(&["HSET", key, "f", value]);
            }
            15..=17 => {
                conn.cmd(&["DEL", key]);
            }
            18..=22 => {
                conn.cmd(&["MULTI"]);
                let a = random_call(&mut rng);
                let b = random_call(&mut rng);
                conn.call(&a);
                conn.call(&b);
                conn.cmd(&["EXEC"]);
            }
            23..=27 => {
                let argv = random_call(&mut rng);
                let mut eval = vec![
                    "EVAL".to_string(),
                    "return redis.pcall(ARGV[1], KEYS[1], unpack(ARGV, 2))".into(),
                    "1".into(),
                    argv[1].clone(),
                    argv[0].clone(),
                ];
                eval.extend(argv[2..].iter().cloned());
                conn.call(&eval);
            }
            _ => {
                conn.call(&random_call(&mut rng));
            }
        }
    }
}

fn state(conn: &mut Conn) -> Vec<KeyState> {
    ["k1", "k2", "k3"]
        .iter()
        .map(|k| snapshot(conn, k))
        .collect()
}

#[test]
fn the_append_only_file_replays_to_the_same_data_and_deadlines() {
    let dir = TempDir::new();
    let before = {
        let redis = aof_server(&dir);
        let mut c = redis.conn();
        random_workload(&mut c, 0xa0f, 600);
        // And one deadline set by each clock reader, to compare.
        for argv in [
            &["DEL", "k1", "k2", "k3"][..],
            &["GOBLIN.INCRTTL", "k1", "7", "5000000"],
            &["GOBLIN.ZWINDOW", "k2", "2", "3000000", "a"],
            &["SET", "k3", "a"],
            &["GOBLIN.CAE", "k3", "a", "4000000"],
        ] {
            c.cmd(argv);
        }
        state(&mut c)
        // Dropped: killed (SIGKILL); appendfsync always has the file
        // complete for every reply sent.
    };
    let logged = dir.aof_commands();
    assert!(
        !logged.iter().any(|argv| {
            let name = argv[0].to_ascii_lowercase();
            ["goblin.incrttl", "goblin.cae", "goblin.zwindow"].contains(&name.as_str())
        }),
        "a call that reads the clock is logged as its effects"
    );
    assert!(
        logged.iter().any(|argv| argv[0].starts_with("goblin.")),
        "the other calls are logged as they are"
    );
    let redis = aof_server(&dir);
    let mut c = redis.conn();
    // Absolute deadlines: the replay sets exactly the same ones.
    assert_eq!(state(&mut c), before);
    assert!(before.iter().all(|k| k.expire_at > 0), "{before:?}");
}

#[test]
fn a_replica_with_the_module_follows_its_master() {
    // Each in a directory of its own: the replica writes the RDB it
    // receives to dump.rdb. No delay before the diskless transfer (5 s by
    // default, to wait for more replicas).
    let (master_dir, replica_dir) = (TempDir::new(), TempDir::new());
    let master = support::redis_with_module(&[
        "--dir",
        master_dir.path(),
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let port = master.addr.port().to_string();
    let replica = support::redis_with_module(&[
        "--dir",
        replica_dir.path(),
        "--replicaof",
        "127.0.0.1",
        &port,
    ]);
    let mut m = master.conn();
    let mut r = replica.conn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !r
        .cmd(&["INFO", "replication"])
        .text()
        .contains("master_link_status:up")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the replica never synced"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    random_workload(&mut m, 0x7e9, 600);
    assert_eq!(m.cmd(&["WAIT", "1", "10000"]), Reply::Int(1));
    assert_eq!(state(&mut r), state(&mut m));
}

/// The keyevents (event, key) the server at `addr` announces while `work`
/// runs on it: subscribed to `__keyevent@0__:*` with every class on, read
/// from a marker key set before the work to one set after it.
fn events_of(addr: std::net::SocketAddr, work: impl FnOnce(&mut Conn)) -> Vec<(String, String)> {
    let mut c = Conn::connect(addr);
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "EA"]),
        Reply::Status("OK".into())
    );
    let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
    let mut sub = client.get_connection().unwrap();
    let mut sub = sub.as_pubsub();
    sub.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    sub.psubscribe("__keyevent@0__:*").unwrap();
    let mut next = || {
        let msg = sub.get_message().expect("a keyevent");
        let event = msg
            .get_channel_name()
            .strip_prefix("__keyevent@0__:")
            .unwrap()
            .to_string();
        (event, msg.get_payload::<String>().unwrap())
    };
    // The subscription is live once the first marker arrives.
    c.cmd(&["SET", "events:start", "1"]);
    while next().1 != "events:start" {}
    work(&mut c);
    c.cmd(&["SET", "events:end", "1"]);
    let mut events = Vec::new();
    loop {
        let (event, key) = next();
        if key == "events:end" {
            return events;
        }
        events.push((event, key));
    }
}

#[test]
fn keyspace_events_are_goblin_servers() {
    let goblin = TestServer::start();
    let redis = support::redis_with_module(&[]);
    let work = |c: &mut Conn| {
        for argv in [
            &["SET", "c", "3"][..],
            &["GOBLIN.DECRPOS", "c"],
            &["GOBLIN.DECRBYPOS", "c", "9"],
            &["GOBLIN.INCRTTL", "c", "1", "5000000"],
            &["SET", "lock", "me"],
            &["GOBLIN.CAE", "lock", "me", "5000000"],
            &["GOBLIN.CAD", "lock", "other"],
            &["GOBLIN.CAD", "lock", "me"],
            &["HSET", "h", "f", "1"],
            &["GOBLIN.HSETGT", "h", "f", "5"],
            &["GOBLIN.HSETGT", "h", "f", "2"],
            &["GOBLIN.HCAS", "h", "f", "5", "6"],
            &["GOBLIN.HCAD", "h", "f", "6"],
            &["GOBLIN.ZWINDOW", "w", "5", "5000000", "a"],
            &["GOBLIN.ZWINDOW", "w", "5", "1", "b"],
        ] {
            c.cmd(argv);
        }
        // b's lease runs out; the next call removes it.
        let after = c.time_ms() + 1;
        while c.time_ms() <= after {}
        c.cmd(&["GOBLIN.ZWINDOW", "w", "5", "5000000", "c"]);
        random_workload(c, 0xe7e, 400);
    };
    let on_goblin = events_of(goblin.addr, work);
    let on_module = events_of(redis.addr, work);
    assert_eq!(on_module, on_goblin);
    let event = |e: &str, k: &str| (e.to_string(), k.to_string());
    let head = [
        event("set", "c"),
        event("incrby", "c"),
        event("incrby", "c"),
        event("expire", "c"),
        event("set", "lock"),
        event("expire", "lock"),
        event("del", "lock"),
        event("hset", "h"),
        event("hset", "h"),
        event("hset", "h"),
        event("hdel", "h"),
        event("del", "h"),
        event("zadd", "w"),
        event("expire", "w"),
        event("zadd", "w"),
        event("expire", "w"),
        event("zremrangebyscore", "w"),
        event("zadd", "w"),
        event("expire", "w"),
    ];
    assert_eq!(on_module[..head.len()], head, "{on_module:?}");
    // The random workload's calls announce theirs too.
    assert!(on_module.len() > head.len() + 50, "{on_module:?}");
}
