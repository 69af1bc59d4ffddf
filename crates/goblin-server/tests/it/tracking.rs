//! Client-side caching (CLIENT TRACKING) through real connections: a
//! caching client's local cache never serves a stale value once the
//! invalidations have arrived, whatever changes the keys (writes from
//! another client, expiry, eviction, flushes, scripts, transactions, the
//! GOBLIN.* family, a primary's stream on a replica), and the modes
//! (BCAST with prefixes, OPTIN/OPTOUT, NOLOOP, REDIRECT to a RESP2
//! subscriber) and the table's bound. Frames are read raw, so that the
//! exact reply types (pushes, nulls) are checked.

use crate::common::{resp, wait_until, TestServer};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One RESP2/RESP3 reply, as read off the wire.
#[derive(Debug, Clone, PartialEq)]
enum Frame {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Array(Vec<Frame>),
    /// RESP3 `>`.
    Push(Vec<Frame>),
    /// RESP3 `%` and `~`, flat.
    Map(Vec<Frame>),
}

fn b(s: &str) -> Frame {
    Frame::Bulk(s.as_bytes().to_vec())
}

/// The push that invalidates `keys`.
fn invalidate(keys: &[&str]) -> Frame {
    Frame::Push(vec![
        b("invalidate"),
        Frame::Array(keys.iter().map(|k| b(k)).collect()),
    ])
}

struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: std::net::SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Conn {
            reader: BufReader::new(stream),
        }
    }

    /// A RESP3 connection with tracking on, with `options` after ON.
    fn tracking(addr: std::net::SocketAddr, options: &[&str]) -> Conn {
        let mut c = Conn::open(addr);
        assert!(matches!(c.call(&["HELLO", "3"]), Frame::Map(_)));
        let mut args = vec!["CLIENT", "TRACKING", "ON"];
        args.extend_from_slice(options);
        assert_eq!(c.call(&args), Frame::Simple("OK".into()));
        c
    }

    fn send(&mut self, args: &[&str]) {
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.reader.get_mut().write_all(&resp(&argv)).unwrap();
    }

    fn read(&mut self) -> Frame {
        read_frame(&mut self.reader)
    }

    fn call(&mut self, args: &[&str]) -> Frame {
        self.send(args);
        self.read()
    }

    /// Sends a command and returns its reply and the pushes read before
    /// it.
    fn call_collect(&mut self, args: &[&str]) -> (Frame, Vec<Frame>) {
        self.send(args);
        let mut pushes = Vec::new();
        loop {
            match self.read() {
                f @ Frame::Push(_) => pushes.push(f),
                f => return (f, pushes),
            }
        }
    }

    /// What arrived for this connection so far: the pushes a PING round
    /// trip finds before its PONG.
    fn pushes(&mut self) -> Vec<Frame> {
        let (pong, pushes) = self.call_collect(&["PING"]);
        assert_eq!(pong, Frame::Simple("PONG".into()));
        pushes
    }

    fn int(&mut self, args: &[&str]) -> i64 {
        match self.call(args) {
            Frame::Int(n) => n,
            other => panic!("{args:?} answered {other:?}"),
        }
    }

    fn ok(&mut self, args: &[&str]) {
        assert_eq!(self.call(args), Frame::Simple("OK".into()), "{args:?}");
    }

    fn info(&mut self, section: &str, field: &str) -> String {
        let text = match self.call(&["INFO", section]) {
            Frame::Bulk(t) => String::from_utf8(t).unwrap(),
            other => panic!("INFO answered {other:?}"),
        };
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
            .unwrap_or_else(|| panic!("no {field} in INFO"))
    }
}

fn read_line(r: &mut BufReader<TcpStream>) -> String {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.ends_with("\r\n"), "truncated line {line:?}");
    line.truncate(line.len() - 2);
    line
}

fn read_frame(r: &mut BufReader<TcpStream>) -> Frame {
    let line = read_line(r);
    let (kind, rest) = line.split_at(1);
    let n = || rest.parse::<i64>().unwrap();
    let items = |r: &mut BufReader<TcpStream>, count: i64| {
        (0..count).map(|_| read_frame(r)).collect::<Vec<_>>()
    };
    match kind {
        "+" => Frame::Simple(rest.to_string()),
        "-" => Frame::Error(rest.to_string()),
        ":" => Frame::Int(n()),
        "_" => Frame::Null,
        "$" if n() < 0 => Frame::Null,
        "$" => {
            let mut buf = vec![0u8; n() as usize + 2];
            r.read_exact(&mut buf).unwrap();
            buf.truncate(buf.len() - 2);
            Frame::Bulk(buf)
        }
        // RESP3's verbatim string (INFO, CLIENT INFO): its text, after
        // the format.
        "=" => {
            let mut buf = vec![0u8; n() as usize + 2];
            r.read_exact(&mut buf).unwrap();
            buf.truncate(buf.len() - 2);
            Frame::Bulk(buf.split_off(4))
        }
        "*" if n() < 0 => Frame::Null,
        "*" => Frame::Array(items(r, n())),
        ">" => Frame::Push(items(r, n())),
        "%" => Frame::Map(items(r, 2 * n())),
        "~" => Frame::Map(items(r, n())),
        _ => panic!("unexpected frame {line:?}"),
    }
}

/// A local cache kept as a client library keeps it: values read, dropped
/// on their invalidation (all of them on the null one).
#[derive(Default)]
struct LocalCache {
    values: HashMap<String, Frame>,
}

impl LocalCache {
    fn apply(&mut self, push: &Frame) {
        let Frame::Push(parts) = push else {
            panic!("not a push: {push:?}")
        };
        assert_eq!(parts[0], b("invalidate"), "{push:?}");
        match &parts[1] {
            Frame::Null => self.values.clear(),
            Frame::Array(keys) => {
                for k in keys {
                    let Frame::Bulk(k) = k else {
                        panic!("{push:?}")
                    };
                    self.values.remove(std::str::from_utf8(k).unwrap());
                }
            }
            other => panic!("invalidation of {other:?}"),
        }
    }

    /// Reads `key` through the cache.
    fn get(&mut self, c: &mut Conn, key: &str) -> (Frame, bool) {
        if let Some(v) = self.values.get(key) {
            return (v.clone(), true);
        }
        let (value, pushes) = c.call_collect(&["GET", key]);
        for p in &pushes {
            self.apply(p);
        }
        self.values.insert(key.to_string(), value.clone());
        (value, false)
    }

    /// Takes in what arrived: a PING round trip.
    fn sync(&mut self, c: &mut Conn) {
        for p in c.pushes() {
            self.apply(&p);
        }
    }
}

/// Two clients, one caching in default mode, one writing at random (SET,
/// INCR, DEL, APPEND, EXPIRE in the past, MSET): after each write and a
/// PING round trip on the caching connection, every read the cache serves
/// is the value the server holds. The caching client also writes now and
/// then (its own invalidations follow its replies).
#[test]
fn cached_reads_are_never_stale() {
    let s = TestServer::start();
    let mut cache_conn = Conn::tracking(s.addr, &[]);
    let mut writer = Conn::open(s.addr);
    let mut truth = Conn::open(s.addr);
    let mut cache = LocalCache::default();
    let mut rng = fastrand::Rng::with_seed(7);
    let keys: Vec<String> = (0..16).map(|i| format!("k{i}")).collect();
    let (mut served, mut checked) = (0, 0);
    for round in 0..3000 {
        let key = &keys[rng.usize(..keys.len())];
        let other = &keys[rng.usize(..keys.len())];
        let v = rng.u32(..1000).to_string();
        let reply = match rng.u8(..7) {
            0 => writer.call(&["SET", key, &v]),
            1 => writer.call(&["INCR", key]),
            2 => writer.call(&["DEL", key]),
            3 => writer.call(&["APPEND", key, "x"]),
            4 => writer.call(&["PEXPIREAT", key, "1"]),
            5 => writer.call(&["MSET", key, &v, other, &v]),
            _ => {
                // The caching client writes itself.
                let (r, pushes) = cache_conn.call_collect(&["SET", key, &v]);
                for p in &pushes {
                    cache.apply(p);
                }
                r
            }
        };
        assert!(
            !matches!(reply, Frame::Error(ref e) if !e.contains("not an integer")),
            "{reply:?}"
        );
        cache.sync(&mut cache_conn);
        for _ in 0..3 {
            let k = &keys[rng.usize(..keys.len())];
            let (seen, from_cache) = cache.get(&mut cache_conn, k);
            if from_cache {
                served += 1;
                let now = truth.call(&["GET", k]);
                assert_eq!(seen, now, "round {round}: stale cached {k}");
                checked += 1;
            }
        }
    }
    assert!(served > 1000, "the cache served {served} reads");
    assert_eq!(served, checked);
}

/// A key read, then changed by `change` on another connection: the
/// caching connection is told, before the PING round trip ends.
fn invalidated_by(
    s: &TestServer,
    setup: &[&[&str]],
    read: &[&str],
    change: &[&[&str]],
    expect: Frame,
) {
    let mut c = Conn::tracking(s.addr, &[]);
    let mut w = Conn::open(s.addr);
    for cmd in setup {
        let r = w.call(cmd);
        assert!(!matches!(r, Frame::Error(_)), "{cmd:?}: {r:?}");
    }
    let r = c.call(read);
    assert!(!matches!(r, Frame::Error(_) | Frame::Push(_)), "{r:?}");
    for cmd in change {
        let r = w.call(cmd);
        assert!(!matches!(r, Frame::Error(_)), "{cmd:?}: {r:?}");
    }
    assert_eq!(c.pushes(), vec![expect]);
}

#[test]
fn writes_in_transactions_scripts_and_functions_invalidate() {
    let s = TestServer::start();
    invalidated_by(
        &s,
        &[&["SET", "t1", "1"]],
        &["GET", "t1"],
        &[&["MULTI"], &["INCR", "t1"], &["EXEC"]],
        invalidate(&["t1"]),
    );
    invalidated_by(
        &s,
        &[&["SET", "t2", "1"]],
        &["GET", "t2"],
        &[&["EVAL", "redis.call('set', KEYS[1], 'x')", "1", "t2"]],
        invalidate(&["t2"]),
    );
    invalidated_by(
        &s,
        &[
            &["SET", "t3", "1"],
            &[
                "FUNCTION",
                "LOAD",
                "#!lua name=tlib\nredis.register_function('tset', function(keys, args) return redis.call('set', keys[1], args[1]) end)",
            ],
        ],
        &["GET", "t3"],
        &[&["FCALL", "tset", "1", "t3", "y"]],
        invalidate(&["t3"]),
    );
}

#[test]
fn goblin_commands_invalidate() {
    let s = TestServer::start();
    invalidated_by(
        &s,
        &[&["SET", "stock", "10"]],
        &["GET", "stock"],
        &[&["GOBLIN.DECRPOS", "stock"]],
        invalidate(&["stock"]),
    );
}

#[test]
fn flushall_flushdb_and_swapdb_invalidate_everything_with_a_null() {
    let s = TestServer::start();
    let null = Frame::Push(vec![b("invalidate"), Frame::Null]);
    invalidated_by(
        &s,
        &[&["SET", "f", "1"]],
        &["GET", "f"],
        &[&["FLUSHALL"]],
        null.clone(),
    );
    invalidated_by(
        &s,
        &[&["SET", "f", "1"]],
        &["GET", "f"],
        &[&["FLUSHDB"]],
        null.clone(),
    );
    // SWAPDB replaces what every key of both databases holds.
    invalidated_by(
        &s,
        &[&["SET", "f", "1"]],
        &["GET", "f"],
        &[&["SWAPDB", "0", "1"]],
        null,
    );
    let mut c = Conn::open(s.addr);
    assert_eq!(c.info("stats", "tracking_total_keys"), "0");
}

#[test]
fn expiry_invalidates_actively_and_lazily() {
    let s = TestServer::start();
    // Active: the expiry cycle deletes the key and tells the reader.
    let mut c = Conn::tracking(s.addr, &[]);
    let mut w = Conn::open(s.addr);
    w.ok(&["SET", "ea", "1", "PX", "20"]);
    c.call(&["GET", "ea"]);
    let mut got = Vec::new();
    wait_until(
        "the active expiry's invalidation",
        Duration::from_secs(10),
        || {
            got.extend(c.pushes());
            !got.is_empty()
        },
    );
    assert_eq!(got, vec![invalidate(&["ea"])]);
    // Lazy: with the cycle off, a read after the deadline deletes it.
    w.ok(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    w.ok(&["SET", "el", "1", "PX", "1"]);
    c.call(&["GET", "el"]);
    w.ok(&["DEBUG", "SLEEP", "0.01"]);
    assert_eq!(w.call(&["GET", "el"]), Frame::Null);
    assert_eq!(c.pushes(), vec![invalidate(&["el"])]);
    w.ok(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
}

#[test]
fn eviction_invalidates_before_the_reply() {
    let s = TestServer::start();
    let mut c = Conn::tracking(s.addr, &[]);
    c.ok(&["SETEX", "volatile", "10000", "x"]);
    c.call(&["GET", "volatile"]);
    let used: u64 = c.info("memory", "used_memory").parse().unwrap();
    c.ok(&["CONFIG", "SET", "maxmemory-policy", "volatile-random"]);
    c.ok(&[
        "CONFIG",
        "SET",
        "maxmemory",
        &(used + 100 * 1024).to_string(),
    ]);
    // 200 KB: the next command evicts the volatile key first.
    assert_eq!(c.int(&["SETBIT", "big", "1600000", "0"]), 0);
    let (reply, pushes) = c.call_collect(&["GETBIT", "big", "0"]);
    assert_eq!(pushes, vec![invalidate(&["volatile"])]);
    assert_eq!(reply, Frame::Int(0));
    c.ok(&["CONFIG", "SET", "maxmemory", "0"]);
}

#[test]
fn bcast_sends_the_keys_of_each_prefix() {
    let s = TestServer::start();
    let mut c = Conn::tracking(s.addr, &["BCAST", "PREFIX", "a:", "PREFIX", "b:"]);
    let mut w = Conn::open(s.addr);
    w.ok(&["MSET", "a:2", "1", "a:1", "1", "b:1", "1", "c:1", "1"]);
    assert_eq!(
        c.pushes(),
        vec![invalidate(&["a:1", "a:2"]), invalidate(&["b:1"])]
    );
    // Overlapping prefixes are refused, with Redis's text.
    match c.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"]) {
        Frame::Error(e) => assert_eq!(
            e,
            "ERR Prefix 'a' overlaps with an existing prefix 'a:'. Prefixes for a single client must not overlap."
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.info("stats", "tracking_total_prefixes"), "2");
    drop(c);
    wait_until(
        "the prefixes to go with the client",
        Duration::from_secs(10),
        || w.info("stats", "tracking_total_prefixes") == "0",
    );
}

#[test]
fn optin_and_optout_follow_client_caching() {
    let s = TestServer::start();
    let mut w = Conn::open(s.addr);
    w.ok(&["MSET", "o1", "1", "o2", "1"]);
    let mut c = Conn::tracking(s.addr, &["OPTIN"]);
    c.call(&["GET", "o1"]);
    c.ok(&["CLIENT", "CACHING", "YES"]);
    c.call(&["GET", "o2"]);
    w.ok(&["MSET", "o1", "2", "o2", "2"]);
    assert_eq!(c.pushes(), vec![invalidate(&["o2"])]);

    let mut c = Conn::tracking(s.addr, &["OPTOUT"]);
    c.ok(&["CLIENT", "CACHING", "NO"]);
    c.call(&["GET", "o1"]);
    c.call(&["GET", "o2"]);
    w.ok(&["MSET", "o1", "3", "o2", "3"]);
    assert_eq!(c.pushes(), vec![invalidate(&["o2"])]);
    match c.call(&["CLIENT", "CACHING", "YES"]) {
        Frame::Error(e) => assert_eq!(
            e,
            "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn noloop_skips_the_clients_own_writes() {
    let s = TestServer::start();
    let mut c = Conn::tracking(s.addr, &["NOLOOP"]);
    let mut w = Conn::open(s.addr);
    c.call(&["GET", "n"]);
    c.ok(&["SET", "n", "1"]);
    assert_eq!(c.pushes(), vec![]);
    c.call(&["GET", "n"]);
    w.ok(&["SET", "n", "2"]);
    assert_eq!(c.pushes(), vec![invalidate(&["n"])]);
    // Without NOLOOP, the client's own write is invalidated after its reply.
    let mut c = Conn::tracking(s.addr, &[]);
    c.call(&["GET", "n"]);
    c.send(&["SET", "n", "3"]);
    assert_eq!(c.read(), Frame::Simple("OK".into()));
    assert_eq!(c.read(), invalidate(&["n"]));
}

#[test]
fn redirect_to_a_resp2_subscriber_and_to_a_client_gone() {
    let s = TestServer::start();
    let mut r = Conn::open(s.addr);
    let rid = r.int(&["CLIENT", "ID"]);
    assert!(matches!(
        r.call(&["SUBSCRIBE", "__redis__:invalidate"]),
        Frame::Array(_)
    ));
    let mut c = Conn::open(s.addr);
    c.ok(&["CLIENT", "TRACKING", "ON", "REDIRECT", &rid.to_string()]);
    assert_eq!(c.int(&["CLIENT", "GETREDIR"]), rid);
    let mut w = Conn::open(s.addr);
    c.call(&["GET", "r"]);
    w.ok(&["SET", "r", "1"]);
    assert_eq!(
        r.read(),
        Frame::Array(vec![
            b("message"),
            b("__redis__:invalidate"),
            Frame::Array(vec![b("r")])
        ])
    );
    // The redirection's client leaves: a RESP3 tracking client is told.
    let mut c3 = Conn::tracking(s.addr, &["REDIRECT", &rid.to_string()]);
    c3.call(&["GET", "r"]);
    drop(r);
    wait_until(
        "the redirection client to go",
        Duration::from_secs(10),
        || !matches!(w.call(&["CLIENT", "LIST"]), Frame::Bulk(ref l) if String::from_utf8_lossy(l).contains(&format!("id={rid} "))),
    );
    w.ok(&["SET", "r", "2"]);
    assert_eq!(
        c3.pushes(),
        vec![Frame::Push(vec![
            b("tracking-redir-broken"),
            Frame::Int(rid)
        ])]
    );
    let Frame::Bulk(line) = c3.call(&["CLIENT", "INFO"]) else {
        panic!()
    };
    let line = String::from_utf8(line).unwrap();
    assert!(
        line.contains(" flags=tR ") && line.contains(&format!(" redir={rid} ")),
        "{line}"
    );
}

#[test]
fn a_redirection_client_that_quit_is_gone_once_quit_has_answered() {
    // As in Redis, which frees the client as soon as QUIT's reply is out:
    // a write after that reply finds the redirection broken, not a client
    // still closing (unit/tracking's redir-broken test with CLIENT REPLY
    // OFF waits for that push and nothing else).
    let s = TestServer::start();
    let mut w = Conn::open(s.addr);
    for _ in 0..20 {
        let mut r = Conn::open(s.addr);
        let rid = r.int(&["CLIENT", "ID"]);
        let mut c = Conn::tracking(s.addr, &["REDIRECT", &rid.to_string()]);
        c.call(&["GET", "q"]);
        r.ok(&["QUIT"]);
        w.ok(&["SET", "q", "1"]);
        assert_eq!(
            c.pushes(),
            vec![Frame::Push(vec![
                b("tracking-redir-broken"),
                Frame::Int(rid)
            ])]
        );
    }
}

#[test]
fn the_table_keeps_to_tracking_table_max_keys() {
    let s = TestServer::start();
    let mut c = Conn::tracking(s.addr, &[]);
    let keys: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
    let mut mget = vec!["MGET"];
    mget.extend(keys.iter().map(String::as_str));
    c.call(&mget);
    assert_eq!(c.info("stats", "tracking_total_keys"), "10");
    c.ok(&["CONFIG", "SET", "tracking-table-max-keys", "4"]);
    // The next command brings the table under the limit first, telling
    // the reader of each key dropped.
    let pushes = c.pushes();
    assert_eq!(pushes.len(), 6, "{pushes:?}");
    assert_eq!(c.info("stats", "tracking_total_keys"), "4");
    assert_eq!(c.info("stats", "tracking_total_items"), "4");
}

#[test]
fn turning_tracking_off_or_leaving_empties_the_table() {
    let s = TestServer::start();
    let mut c = Conn::tracking(s.addr, &[]);
    let mut other = Conn::tracking(s.addr, &[]);
    c.call(&["MGET", "x1", "x2", "x3"]);
    other.call(&["MGET", "x2", "x9"]);
    assert_eq!(c.info("stats", "tracking_total_items"), "5");
    assert_eq!(c.info("clients", "tracking_clients"), "2");
    c.ok(&["CLIENT", "TRACKING", "OFF"]);
    assert_eq!(c.info("stats", "tracking_total_keys"), "2");
    assert_eq!(c.info("stats", "tracking_total_items"), "2");
    drop(other);
    wait_until(
        "the leaving client's entries to go",
        Duration::from_secs(10),
        || c.info("stats", "tracking_total_items") == "0",
    );
    assert_eq!(c.info("stats", "tracking_total_keys"), "0");
    assert_eq!(c.info("clients", "tracking_clients"), "0");
}

/// A replica's tracking clients hear of the keys its primary's stream
/// changes.
#[test]
fn a_replica_invalidates_what_its_primary_changes() {
    let primary = TestServer::start();
    let replica = TestServer::start();
    let mut p = Conn::open(primary.addr);
    let mut r = Conn::open(replica.addr);
    r.ok(&[
        "REPLICAOF",
        &primary.addr.ip().to_string(),
        &primary.addr.port().to_string(),
    ]);
    wait_until("the replica's link", Duration::from_secs(20), || {
        r.info("replication", "master_link_status") == "up"
    });
    p.ok(&["SET", "rk", "1"]);
    let mut c = Conn::tracking(replica.addr, &[]);
    wait_until(
        "the write to reach the replica",
        Duration::from_secs(20),
        || c.call(&["GET", "rk"]) == b("1"),
    );
    p.ok(&["SET", "rk", "2"]);
    let mut got = Vec::new();
    wait_until(
        "the replica's invalidation",
        Duration::from_secs(20),
        || {
            got.extend(c.pushes());
            !got.is_empty()
        },
    );
    assert_eq!(got, vec![invalidate(&["rk"])]);
}
