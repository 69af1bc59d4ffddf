//! What a client that reaches the server over a network cannot do: set
//! where files are written (protected configs), name a path where a file
//! name is expected, run DEBUG.

use crate::common::process::{temp_dir, Proc};
use crate::common::{resp, wait_until, RawClient, TestServer};
use crate::goblin_support::{Conn, RedisProcess, Reply};
use std::time::Duration;

const PROTECTED: &[u8] =
    b"-ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config\r\n";

fn config_set(name: &str, value: &str) -> Vec<u8> {
    resp(&[b"CONFIG", b"SET", name.as_bytes(), value.as_bytes()])
}

/// By default neither `dir` nor `dbfilename` can be set at run time: with
/// them and SAVE, a client could write a file anywhere.
#[test]
fn dir_and_dbfilename_are_protected_configs() {
    let s = TestServer::start();
    let mut c = s.raw();
    let elsewhere = std::env::temp_dir();
    c.roundtrip(&config_set("dir", elsewhere.to_str().unwrap()), PROTECTED);
    c.roundtrip(
        &config_set("dbfilename", "authorized_keys"),
        b"-ERR CONFIG SET failed (possibly related to argument 'dbfilename') - can't set protected config\r\n",
    );
    // The first parameter at fault is named, before any value is read.
    c.roundtrip(
        &resp(&[b"CONFIG", b"SET", b"maxmemory", b"bad", b"dir", b"/"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config\r\n",
    );
    c.roundtrip(
        &resp(&[b"CONFIG", b"GET", b"dbfilename"]),
        b"*2\r\n$10\r\ndbfilename\r\n$8\r\ndump.rdb\r\n",
    );
    c.roundtrip(
        &resp(&[b"CONFIG", b"SET", b"enable-protected-configs", b"yes"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'enable-protected-configs') - can't set immutable config\r\n",
    );
}

/// `local` allows protected configs and DEBUG from 127.0.0.1 and ::1
/// only: a client from 127.0.0.2 is another host's.
#[test]
fn local_allows_only_clients_of_this_host() {
    let s = TestServer::start_with(&[
        ("enable-protected-configs", "local"),
        ("enable-debug-command", "local"),
        ("protected-mode", "no"),
    ]);
    let dir = s.engine.config().dir();
    let mut local = s.raw();
    local.roundtrip(&config_set("dir", &dir), b"+OK\r\n");
    local.roundtrip(&resp(&[b"DEBUG", b"SLEEP", b"0"]), b"+OK\r\n");
    let mut remote = RawClient::connect_from(s.addr, "127.0.0.2".parse().unwrap());
    remote.roundtrip(&config_set("dir", &dir), PROTECTED);
    remote.roundtrip(
        &resp(&[b"DEBUG", b"SLEEP", b"0"]),
        b"-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.\r\n",
    );
}

/// File names are names in `dir`, never paths, as Redis refuses them.
#[test]
fn file_names_cannot_be_paths() {
    let s = TestServer::start_with(&[("enable-protected-configs", "yes")]);
    let mut c = s.raw();
    for name in ["../authorized_keys", "/tmp/x.rdb", "a\\b"] {
        c.roundtrip(
            &config_set("dbfilename", name),
            b"-ERR CONFIG SET failed (possibly related to argument 'dbfilename') - dbfilename can't be a path, just a filename\r\n",
        );
    }
    c.roundtrip(&config_set("dbfilename", "other.rdb"), b"+OK\r\n");
    let config = goblin_engine::Config::new();
    assert_eq!(
        config.set_initial("appendfilename", "../x.aof"),
        Err("appendfilename can't be a path, just a filename".to_string())
    );
    assert_eq!(
        config.set_initial("appenddirname", "a/b"),
        Err("appenddirname can't be a path, just a dirname".to_string())
    );
    assert_eq!(
        config.set_initial("appendfilename", ""),
        Err("appendfilename can't be empty".to_string())
    );
}

/// Scripts that recurse deep in C, each run on Goblin and on Redis 7.0:
/// the same reply, and Goblin still answers after each. These aborted the
/// process (its thread's stack overflowed): cjson's decoder with its depth
/// limit lifted, and Lua's pattern matching, which recurses once per
/// pattern item.
#[test]
fn scripts_that_recurse_deep_in_c_get_redis_s_replies() {
    let goblin = TestServer::start();
    let redis = RedisProcess::start();
    let mut g = Conn::connect(goblin.addr);
    let mut r = redis.conn();
    let scripts = [
        "cjson.decode_max_depth(1000000000) \
         return type(cjson.decode(string.rep('[',10000)..string.rep(']',10000)))",
        "cjson.decode_max_depth(1000000000) \
         return type(cjson.decode(string.rep('{\"a\":',10000)..'1'..string.rep('}',10000)))",
        "return string.find(string.rep('a',60000), string.rep('a?',60000))",
        "return string.find(string.rep('a',100000), string.rep('a?',100000))",
        "return string.match(string.rep('a',100000), string.rep('(a?)',10)..string.rep('a?',99990))",
        "return string.gsub(string.rep('a',50000), string.rep('a?',50000), 'x')",
        "local n = 0 for m in string.gmatch(string.rep('a',60000), string.rep('a?',60000)) do n = n + 1 end return n",
        // Lua's own bounds, reached in C: nested calls and syntax levels.
        "local function f() return pcall(f) end return tostring(f())",
        "return loadstring('return ' .. string.rep('(', 300) .. '1' .. string.rep(')', 300))",
        "local t = {} for i = 1, 100000 do t = {t} end return cjson.encode(t)",
        "local t = {} for i = 1, 100000 do t = {t} end return cmsgpack.pack(t):len()",
    ];
    for script in scripts {
        let args = ["EVAL", script, "0"];
        let want = r.cmd(&args);
        let got = g.cmd(&args);
        assert_eq!(got, want, "{script}");
        assert_eq!(
            g.cmd(&["PING"]),
            Reply::Status("PONG".into()),
            "after {script}"
        );
    }
}

/// A pattern too long for any stack Goblin gives its matching is refused,
/// with Lua 5.2's text, where Redis's 5.1 crashes; a plain find of one is
/// a comparison of bytes, and is served.
#[test]
fn a_pattern_beyond_any_stack_is_too_complex() {
    let goblin = TestServer::start();
    let mut g = Conn::connect(goblin.addr);
    let long = "string.rep('a?', 2500000)";
    let script = format!("return string.find('aaa', {long})");
    match g.cmd(&["EVAL", &script, "0"]) {
        Reply::Error(e) => assert!(e.contains("pattern too complex"), "{e}"),
        other => panic!("{other:?}"),
    }
    let plain = format!("return string.find('aaa', {long}, 1, true)");
    assert_eq!(g.cmd(&["EVAL", &plain, "0"]), Reply::Nil);
    // A pattern without special characters is found plainly by Lua too.
    let literal = "return string.find('aaa', string.rep('ab', 2500000))";
    assert_eq!(g.cmd(&["EVAL", literal, "0"]), Reply::Nil);
    assert_eq!(g.cmd(&["PING"]), Reply::Status("PONG".into()));
}

/// SORT and SORT_RO read any key through BY and GET: @dangerous, and in
/// the categories of the types they sort, not @keyspace, as in Redis 7.0.
#[test]
fn sort_is_dangerous() {
    let goblin = TestServer::start();
    let redis = RedisProcess::start();
    let mut g = Conn::connect(goblin.addr);
    let mut r = redis.conn();
    for c in [&mut g, &mut r] {
        let info = c.cmd(&["COMMAND", "INFO", "sort", "sort_ro"]);
        let cats: Vec<Reply> = info.array().iter().map(|i| i.array()[6].clone()).collect();
        assert_eq!(
            cats,
            vec![
                Reply::Array(
                    [
                        "@write",
                        "@set",
                        "@sortedset",
                        "@list",
                        "@slow",
                        "@dangerous"
                    ]
                    .map(|c| Reply::Status(c.into()))
                    .to_vec()
                ),
                Reply::Array(
                    [
                        "@read",
                        "@set",
                        "@sortedset",
                        "@list",
                        "@slow",
                        "@dangerous"
                    ]
                    .map(|c| Reply::Status(c.into()))
                    .to_vec()
                ),
            ]
        );
        assert_eq!(
            c.cmd(&[
                "ACL",
                "SETUSER",
                "safe",
                "on",
                "nopass",
                "+@all",
                "-@dangerous",
                "~*"
            ]),
            Reply::Status("OK".into())
        );
        assert_eq!(c.cmd(&["AUTH", "safe", "x"]), Reply::Status("OK".into()));
        assert_eq!(
            c.cmd(&["SORT", "k"]),
            Reply::Error("NOPERM this user has no permissions to run the 'sort' command".into())
        );
        assert_eq!(
            c.cmd(&["SORT_RO", "k"]),
            Reply::Error("NOPERM this user has no permissions to run the 'sort_ro' command".into())
        );
        assert_eq!(c.cmd(&["GET", "k"]), Reply::Nil);
    }
}

/// The listening socket's queue is tcp-backlog long (`ss` shows a
/// listener's queue length as its Send-Q).
#[test]
fn the_listen_queue_is_tcp_backlog_long() {
    let s = TestServer::start_with(&[("tcp-backlog", "77")]);
    let port = s.addr.port();
    let out = std::process::Command::new("ss")
        .args(["-ltnH", &format!("sport = :{port}")])
        .output()
        .expect("ss (iproute2, which scripts/setup installs)");
    let text = String::from_utf8_lossy(&out.stdout);
    let send_q: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert_eq!(send_q, vec!["77"], "{text}");
}

/// `timeout` closes a client idle for longer (Redis's
/// clientsCronHandleTimeout), but not one that waits in a blocking
/// command, is subscribed, or is a MONITOR.
#[test]
fn timeout_closes_idle_clients_only() {
    let s = TestServer::start_with(&[("timeout", "1"), ("hz", "100")]);
    let mut idle = s.raw();
    idle.roundtrip(&resp(&[b"PING"]), b"+PONG\r\n");
    let mut blocked = s.raw();
    blocked.send(&resp(&[b"BLPOP", b"list", b"0"]));
    let mut subscriber = s.raw();
    subscriber.roundtrip(
        &resp(&[b"SUBSCRIBE", b"ch"]),
        b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
    );
    let mut monitor = s.raw();
    monitor.roundtrip(&resp(&[b"MONITOR"]), b"+OK\r\n");
    let mut c = Conn::connect(s.addr);
    wait_until("the idle client closed", Duration::from_secs(10), || {
        let list = c.cmd(&["CLIENT", "LIST"]).bulk().unwrap();
        String::from_utf8_lossy(&list).matches("id=").count() == 4
    });
    assert!(idle.is_closed());
    // The others are served still.
    assert_eq!(c.cmd(&["RPUSH", "list", "x"]), Reply::Int(1));
    let popped = b"*2\r\n$4\r\nlist\r\n$1\r\nx\r\n";
    assert_eq!(blocked.read_exact_len(popped.len()), popped.to_vec());
    subscriber.roundtrip(&resp(&[b"PING"]), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    let seen = monitor.read_exact_len(1);
    assert_eq!(seen.first(), Some(&b'+'), "MONITOR still served");
}

/// Accepted sockets get tcp-keepalive's probes (`ss -o` shows the
/// keepalive timer of a socket that has one).
#[test]
fn accepted_sockets_keep_alive() {
    let s = TestServer::start_with(&[("tcp-keepalive", "100")]);
    let mut c = s.raw();
    c.roundtrip(&resp(&[b"PING"]), b"+PONG\r\n");
    let port = s.addr.port();
    let out = std::process::Command::new("ss")
        .args(["-tnoH", "state", "established", &format!("sport = :{port}")])
        .output()
        .expect("ss (iproute2, which scripts/setup installs)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("timer:(keepalive,1min"), "{text}");
}

/// Protected mode: while the default user has no password, a client from
/// another address than 127.0.0.1 or ::1 gets Redis's DENIED text and is
/// closed; without protected mode, or with a password, it is served.
#[test]
fn protected_mode_refuses_other_hosts_without_a_password() {
    let other: std::net::IpAddr = "127.0.0.2".parse().unwrap();
    let s = TestServer::start();
    let mut remote = RawClient::connect_from(s.addr, other);
    let denied = remote.read_exact_len(1 << 12);
    let text = String::from_utf8_lossy(&denied);
    assert!(
        text.starts_with("-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user.")
            && text.ends_with("the server to start accepting connections from the outside.\r\n"),
        "{text}"
    );
    assert!(remote.is_closed());
    let mut local = Conn::connect(s.addr);
    assert_eq!(local.cmd(&["PING"]), Reply::Status("PONG".into()));
    let rejected = local.cmd(&["INFO", "stats"]).bulk().unwrap();
    assert!(
        String::from_utf8_lossy(&rejected).contains("rejected_connections:1\r\n"),
        "{}",
        String::from_utf8_lossy(&rejected)
    );
    // A password for the default user: other hosts may connect (and AUTH).
    assert_eq!(
        local.cmd(&["CONFIG", "SET", "requirepass", "secret"]),
        Reply::Status("OK".into())
    );
    let mut remote = RawClient::connect_from(s.addr, other);
    remote.roundtrip(&resp(&[b"AUTH", b"secret"]), b"+OK\r\n");
    let open = TestServer::start_with(&[("protected-mode", "no")]);
    let mut remote = RawClient::connect_from(open.addr, other);
    remote.roundtrip(&resp(&[b"PING"]), b"+PONG\r\n");
}

/// Under a low open files limit that cannot be raised, maxclients is
/// lowered to what fits (Redis's adjustOpenFilesLimit) and logged, and a
/// client over it gets Redis's error instead of hanging unaccepted.
#[test]
fn maxclients_fits_the_open_files_limit() {
    let Some(program) = option_env!("CARGO_BIN_EXE_goblin-server") else {
        panic!("the goblin-server binary is known to goblin-server's tests only");
    };
    let dir = temp_dir("nofile");
    let server = Proc::spawn_limited(
        program,
        &dir,
        &["--save", "", "--appendonly", "no"],
        Some(128),
    );
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(
        log.contains(
            "Current maximum open files is 128. maxclients has been reduced to 96 to compensate for low ulimit."
        ),
        "{log}"
    );
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", server.port).parse().unwrap();
    let mut c = Conn::connect(addr);
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "maxclients"]),
        Reply::Array(vec![
            Reply::Bulk(b"maxclients".to_vec()),
            Reply::Bulk(b"96".to_vec())
        ])
    );
    wait_until(
        "the start-up check's client gone",
        Duration::from_secs(10),
        || {
            let list = c.cmd(&["CLIENT", "LIST"]).bulk().unwrap();
            String::from_utf8_lossy(&list).matches("id=").count() == 1
        },
    );
    // 95 more fill it; the next is refused, with the error.
    let mut clients: Vec<Conn> = (0..95).map(|_| Conn::connect(addr)).collect();
    for other in clients.iter_mut().step_by(10) {
        assert_eq!(other.cmd(&["PING"]), Reply::Status("PONG".into()));
    }
    let mut over = RawClient::connect(addr);
    assert_eq!(
        over.read_exact_len(64),
        b"-ERR max number of clients reached\r\n".to_vec()
    );
    assert_eq!(c.cmd(&["PING"]), Reply::Status("PONG".into()));
    drop(clients);
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// struct.pack converts numbers to integers as Redis's lua_struct.c does
/// on this machine, out of range ones included.
#[test]
fn struct_pack_converts_as_redis() {
    let goblin = TestServer::start();
    let redis = RedisProcess::start();
    let mut g = Conn::connect(goblin.addr);
    let mut r = redis.conn();
    for (fmt, n) in [
        ("i", "1e300"),
        ("<I8", "1e300"),
        (">L", "-1e300"),
        ("<l", "2^63"),
        ("<L", "2^64"),
        ("<L", "2^63 + 2^12"),
        ("b", "0/0"),
        ("<i8", "1/0"),
        ("<i8", "-1/0"),
        ("<I", "-1"),
        ("<h", "65537.9"),
    ] {
        let script = format!("return struct.pack('{fmt}', {n})");
        let args = ["EVAL", script.as_str(), "0"];
        assert_eq!(g.cmd(&args), r.cmd(&args), "{script}");
    }
}

/// Inline commands split as Redis's sdssplitargs splits them: a word ends
/// at a space, tab, CR or LF only. A NUL hides the line's end from Redis
/// (strchr): the request waits for more until it is too big.
#[test]
fn inline_commands_split_as_redis() {
    let goblin = TestServer::start();
    let redis = RedisProcess::start();
    for line in [
        &b"SET k a\x0cb\r\n"[..],
        b"SET k a\x0bb\r\n",
        b"\x0cSET\x0b k v\r\n",
        b"SET k \"q\"\x0c\r\n",
    ] {
        let mut replies = Vec::new();
        for addr in [goblin.addr, redis.addr] {
            let mut c = RawClient::connect(addr);
            c.send(line);
            c.send(&resp(&[b"GET", b"k"]));
            c.send(&resp(&[b"DEL", b"k"]));
            c.send(&resp(&[b"PING"]));
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.ends_with(b"+PONG\r\n") {
                let n = std::io::Read::read(&mut c.stream, &mut buf).unwrap();
                assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&got));
                got.extend_from_slice(&buf[..n]);
            }
            replies.push(got);
        }
        assert_eq!(
            String::from_utf8_lossy(&replies[0]),
            String::from_utf8_lossy(&replies[1]),
            "{:?}",
            String::from_utf8_lossy(line)
        );
    }
    let mut nul = b"SET k a\0b\r\n".to_vec();
    nul.extend(std::iter::repeat_n(b'x', 70_000));
    for addr in [goblin.addr, redis.addr] {
        let mut c = RawClient::connect(addr);
        c.send(&nul);
        let reply = b"-ERR Protocol error: too big inline request\r\n";
        assert_eq!(c.read_exact_len(reply.len()), reply.to_vec(), "{addr}");
        assert!(c.is_closed(), "{addr}");
    }
}
