//! Streams over real connections: blocked XREAD / XREADGROUP clients woken
//! by XADD from another connection, timing out or going away; streams with
//! their groups, pending entries and consumers surviving a snapshot and a
//! restart, the append-only file and its rewrite; and stream RDB files and
//! DUMP payloads travelling both ways between Goblin and Redis 7.0.15
//! (Debian's redis-server, which must be installed: these tests fail rather
//! than skip without it).
//!
//! Where a test must wait for a client to be blocked, it polls INFO's
//! blocked_clients until a time limit.

use crate::common::process::{temp_dir, Proc};
use crate::common::{bulk, info_field, resp, wait_until, TestServer};
use redis::{Connection, Value};
use std::time::{Duration, Instant};

fn cmd(c: &mut Connection, args: &[&str]) -> Value {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query::<Value>(c)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// [id, [field, value, ...]]
fn entry(id: &str, fields: &[&str]) -> Value {
    Value::Array(vec![
        bulk(id),
        Value::Array(fields.iter().map(|f| bulk(f)).collect()),
    ])
}

fn blocked_clients(c: &mut Connection) -> u64 {
    info_field(c, "clients", "blocked_clients").parse().unwrap()
}

/// Waits (bounded) until INFO reports `n` blocked clients.
fn wait_blocked(c: &mut Connection, n: u64) {
    wait_until(
        &format!("{n} blocked clients"),
        Duration::from_secs(20),
        || blocked_clients(c) == n,
    );
}

/// Runs a command on a connection of its own, on a thread (it may block).
fn spawn(server: &TestServer, args: &[&str]) -> std::thread::JoinHandle<redis::RedisResult<Value>> {
    let mut c = server.client();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    std::thread::spawn(move || {
        let mut cmd = redis::cmd(&args[0]);
        for a in &args[1..] {
            cmd.arg(a);
        }
        cmd.query::<Value>(&mut c)
    })
}

// ---------------------------------------------------------------------------
// Blocking

#[test]
fn blocked_xread_is_served_by_xadd_from_another_connection() {
    let s = TestServer::start();
    let mut c = s.client();
    cmd(&mut c, &["XADD", "s1", "1-1", "old", "x"]);
    let waiter = spawn(
        &s,
        &["XREAD", "BLOCK", "0", "STREAMS", "s1", "s2", "$", "$"],
    );
    wait_blocked(&mut c, 1);
    // An entry older than the ID it waits for does not serve it...
    cmd(&mut c, &["XADD", "s2", "5-0", "f", "v"]);
    let got = waiter.join().unwrap().unwrap();
    // ...but the first stream that moves past it does, alone.
    assert_eq!(
        got,
        Value::Array(vec![Value::Array(vec![
            bulk("s2"),
            Value::Array(vec![entry("5-0", &["f", "v"])])
        ])])
    );
    assert_eq!(blocked_clients(&mut c), 0);
    assert_eq!(s.engine.blocked_entries(), 0);

    // A wait for an ID not yet reached goes on through smaller entries.
    let waiter = spawn(&s, &["XREAD", "BLOCK", "0", "STREAMS", "s1", "10-0"]);
    wait_blocked(&mut c, 1);
    cmd(&mut c, &["XADD", "s1", "9-0", "f", "early"]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(blocked_clients(&mut c), 1);
    cmd(&mut c, &["XADD", "s1", "11-0", "f", "late"]);
    let got = waiter.join().unwrap().unwrap();
    assert_eq!(
        got,
        Value::Array(vec![Value::Array(vec![
            bulk("s1"),
            Value::Array(vec![entry("11-0", &["f", "late"])])
        ])])
    );
    assert_eq!(s.engine.blocked_entries(), 0);
}

#[test]
fn blocked_xreadgroup_readers_share_new_entries_first_come_first_served() {
    let s = TestServer::start();
    let mut c = s.client();
    cmd(&mut c, &["XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"]);
    let first = spawn(
        &s,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "BLOCK",
            "0",
            "STREAMS",
            "q",
            ">",
        ],
    );
    wait_blocked(&mut c, 1);
    let second = spawn(
        &s,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "BLOCK",
            "0",
            "STREAMS",
            "q",
            ">",
        ],
    );
    wait_blocked(&mut c, 2);
    cmd(&mut c, &["XADD", "q", "1-0", "job", "1"]);
    let got = first.join().unwrap().unwrap();
    assert_eq!(
        got,
        Value::Array(vec![Value::Array(vec![
            bulk("q"),
            Value::Array(vec![entry("1-0", &["job", "1"])])
        ])])
    );
    // The entry went to the longest waiting consumer only.
    assert_eq!(blocked_clients(&mut c), 1);
    cmd(&mut c, &["XADD", "q", "2-0", "job", "2"]);
    let got = second.join().unwrap().unwrap();
    assert_eq!(
        got,
        Value::Array(vec![Value::Array(vec![
            bulk("q"),
            Value::Array(vec![entry("2-0", &["job", "2"])])
        ])])
    );
    let pending = cmd(&mut c, &["XPENDING", "q", "g", "-", "+", "10"]);
    let Value::Array(items) = pending else {
        panic!("{pending:?}")
    };
    let owners: Vec<Value> = items
        .iter()
        .map(|i| match i {
            Value::Array(f) => Value::Array(f[..2].to_vec()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        owners,
        vec![
            Value::Array(vec![bulk("1-0"), bulk("alice")]),
            Value::Array(vec![bulk("2-0"), bulk("bob")]),
        ]
    );
    assert_eq!(s.engine.blocked_entries(), 0);
}

#[test]
fn block_timeouts_reply_nil_and_leave_nothing_behind() {
    let s = TestServer::start();
    let mut c = s.client();
    cmd(&mut c, &["XGROUP", "CREATE", "t", "g", "$", "MKSTREAM"]);
    let xread = spawn(&s, &["XREAD", "BLOCK", "30", "STREAMS", "t", "$"]);
    let group = spawn(
        &s,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "BLOCK",
            "30",
            "STREAMS",
            "t",
            ">",
        ],
    );
    assert_eq!(xread.join().unwrap().unwrap(), Value::Nil);
    assert_eq!(group.join().unwrap().unwrap(), Value::Nil);
    assert_eq!(blocked_clients(&mut c), 0);
    assert_eq!(s.engine.blocked_entries(), 0);
    // A later entry is there for the next reader: nobody consumed it.
    cmd(&mut c, &["XADD", "t", "1-0", "f", "v"]);
    assert_eq!(
        cmd(&mut c, &["XPENDING", "t", "g", "-", "+", "10"]),
        Value::Array(vec![])
    );
}

#[test]
fn a_client_that_disconnects_while_blocked_leaves_nothing() {
    let s = TestServer::start();
    let mut c = s.client();
    cmd(&mut c, &["XGROUP", "CREATE", "gone", "g", "$", "MKSTREAM"]);
    let mut xread = s.raw();
    xread.send(&resp(&[
        b"XREAD", b"BLOCK", b"0", b"STREAMS", b"gone", b"$",
    ]));
    let mut group = s.raw();
    group.send(&resp(&[
        b"XREADGROUP",
        b"GROUP",
        b"g",
        b"c",
        b"BLOCK",
        b"0",
        b"STREAMS",
        b"gone",
        b">",
    ]));
    wait_blocked(&mut c, 2);
    assert_eq!(s.engine.blocked_entries(), 2);
    drop(xread);
    drop(group);
    wait_blocked(&mut c, 0);
    assert_eq!(s.engine.blocked_entries(), 0);
    // Nobody read the entry for the group that left: nothing is pending.
    cmd(&mut c, &["XADD", "gone", "1-0", "f", "v"]);
    assert_eq!(cmd(&mut c, &["XPENDING", "gone", "g"]), {
        Value::Array(vec![Value::Int(0), Value::Nil, Value::Nil, Value::Nil])
    });
}

/// How a stream goes away under its waiters.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Gone {
    Del,
    Set,
    /// MULTI, DEL, SADD, EXEC: a set in its place by the end.
    Transaction,
    FlushAll,
    /// SWAPDB with an empty database.
    SwapEmpty,
    /// SWAPDB with a database where the key is a list.
    SwapList,
    GroupDestroyed,
}

#[test]
fn a_stream_or_group_going_away_ends_group_waits_with_redis_errors() {
    // The Tcl suite's tests of these (stream-cgroups "Blocking XREADGROUP:
    // key deleted" and the like) send the change without waiting for the
    // reader to block; here every change comes once both readers wait.
    let s = TestServer::start();
    let mut c = s.client();
    for gone in [
        Gone::Del,
        Gone::Set,
        Gone::Transaction,
        Gone::FlushAll,
        Gone::SwapEmpty,
        Gone::SwapList,
        Gone::GroupDestroyed,
    ] {
        let key = "gone";
        cmd(&mut c, &["FLUSHALL"]);
        cmd(&mut c, &["XADD", key, "666-0", "f", "v"]);
        cmd(&mut c, &["XGROUP", "CREATE", key, "g", "$"]);
        if gone == Gone::SwapList {
            cmd(&mut c, &["SELECT", "1"]);
            cmd(&mut c, &["LPUSH", key, "e1"]);
            cmd(&mut c, &["SELECT", "0"]);
        }
        let group = spawn(
            &s,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "BLOCK",
                "0",
                "STREAMS",
                key,
                ">",
            ],
        );
        let xread = spawn(&s, &["XREAD", "BLOCK", "0", "STREAMS", key, "$"]);
        wait_blocked(&mut c, 2);
        match gone {
            Gone::Del => {
                cmd(&mut c, &["DEL", key]);
            }
            Gone::Set => {
                cmd(&mut c, &["SET", key, "now a string"]);
            }
            Gone::Transaction => {
                cmd(&mut c, &["MULTI"]);
                cmd(&mut c, &["DEL", key]);
                cmd(&mut c, &["SADD", key, "e1"]);
                cmd(&mut c, &["EXEC"]);
            }
            Gone::FlushAll => {
                cmd(&mut c, &["FLUSHALL"]);
            }
            Gone::SwapEmpty | Gone::SwapList => {
                cmd(&mut c, &["SWAPDB", "0", "1"]);
            }
            Gone::GroupDestroyed => {
                cmd(&mut c, &["XGROUP", "DESTROY", key, "g"]);
            }
        }
        let err = group.join().unwrap().unwrap_err();
        let expected = if gone == Gone::GroupDestroyed {
            (
                "NOGROUP",
                "the consumer group this client was blocked on no longer exists",
            )
        } else {
            ("UNBLOCKED", "the stream key no longer exists")
        };
        assert_eq!(
            (err.code(), err.detail()),
            (Some(expected.0), Some(expected.1)),
            "after {gone:?}"
        );
        // XREAD keeps waiting, and is served by the next stream there.
        wait_blocked(&mut c, 1);
        cmd(&mut c, &["DEL", key]);
        cmd(&mut c, &["XADD", key, "667-0", "f", "v"]);
        let got = xread.join().unwrap().unwrap();
        assert_eq!(
            got,
            Value::Array(vec![Value::Array(vec![
                bulk(key),
                Value::Array(vec![entry("667-0", &["f", "v"])])
            ])]),
            "XREAD after {gone:?}"
        );
    }
    assert_eq!(s.engine.blocked_entries(), 0);
}

#[test]
fn a_stream_moved_or_restored_into_place_serves_its_waiters() {
    let s = TestServer::start();
    let mut c = s.client();
    cmd(&mut c, &["XADD", "src", "5-0", "f", "v"]);
    let payload: Vec<u8> = redis::cmd("DUMP").arg("src").query(&mut c).unwrap();
    for how in ["RESTORE", "RENAME", "COPY"] {
        let waiter = spawn(&s, &["XREAD", "BLOCK", "0", "STREAMS", "dst", "0-0"]);
        wait_blocked(&mut c, 1);
        match how {
            "RESTORE" => redis::cmd("RESTORE")
                .arg("dst")
                .arg(0)
                .arg(&payload)
                .query::<()>(&mut c)
                .unwrap(),
            "RENAME" => {
                cmd(&mut c, &["RENAME", "src", "dst"]);
            }
            _ => {
                cmd(&mut c, &["COPY", "src", "dst"]);
            }
        }
        let got = waiter.join().unwrap().unwrap();
        assert_eq!(
            got,
            Value::Array(vec![Value::Array(vec![
                bulk("dst"),
                Value::Array(vec![entry("5-0", &["f", "v"])])
            ])]),
            "{how}"
        );
        if how != "COPY" {
            cmd(&mut c, &["RENAME", "dst", "src"]);
        }
    }
    assert_eq!(s.engine.blocked_entries(), 0);
}

#[test]
fn xreadgroup_takes_the_maximum_id_for_new_entries() {
    // Redis marks `>` with the maximum ID internally, so that ID given
    // explicitly reads new entries (and blocks) rather than the history.
    let s = TestServer::start();
    let mut c = s.client();
    cmd(&mut c, &["XADD", "m", "1-0", "f", "a"]);
    cmd(&mut c, &["XADD", "m", "2-0", "f", "b"]);
    cmd(&mut c, &["XGROUP", "CREATE", "m", "g", "0"]);
    let max = "18446744073709551615-18446744073709551615";
    let first = cmd(
        &mut c,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "COUNT",
            "1",
            "STREAMS",
            "m",
            max,
        ],
    );
    assert_eq!(
        first,
        Value::Array(vec![Value::Array(vec![
            bulk("m"),
            Value::Array(vec![entry("1-0", &["f", "a"])])
        ])])
    );
    let second = cmd(
        &mut c,
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "m", max],
    );
    assert_eq!(
        second,
        Value::Array(vec![Value::Array(vec![
            bulk("m"),
            Value::Array(vec![entry("2-0", &["f", "b"])])
        ])])
    );
    let none = cmd(
        &mut c,
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "m", max],
    );
    assert_eq!(none, Value::Nil);
}

#[test]
fn stream_changes_abort_watching_transactions_as_in_redis() {
    let s = TestServer::start();
    let mut c = s.client();
    let mut other = s.client();
    cmd(&mut c, &["XADD", "w", "1-0", "f", "v"]);
    cmd(&mut c, &["XGROUP", "CREATE", "w", "g", "0"]);
    // (command run on the other connection, whether EXEC goes through)
    let cases: &[(&[&str], bool)] = &[
        (&["XADD", "w", "*", "f", "v"], false),
        (&["XDEL", "w", "1-0"], false),
        (&["XTRIM", "w", "MAXLEN", "0"], false),
        // Redis signals no change of the key for these.
        (
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "w", ">"],
            true,
        ),
        (&["XSETID", "w", "18446744073709551615-0"], true),
        (&["XGROUP", "CREATECONSUMER", "w", "g", "d"], true),
    ];
    for (args, exec_runs) in cases {
        cmd(&mut c, &["WATCH", "w"]);
        cmd(&mut other, args);
        cmd(&mut c, &["MULTI"]);
        cmd(&mut c, &["PING"]);
        let got = cmd(&mut c, &["EXEC"]);
        assert_eq!(got != Value::Nil, *exec_runs, "WATCH then {args:?}");
    }
}

// ---------------------------------------------------------------------------
// Persistence

/// Streams with every feature: several nodes, tombstones, a trimmed one,
/// an empty one with a group, groups with pending entries (some of them
/// deleted), consumers with and without any, NOACK reads, claims.
fn fill(c: &mut Connection) {
    cmd(c, &["CONFIG", "SET", "stream-node-max-entries", "10"]);
    for i in 1..=95 {
        let id = format!("{i}-1");
        if i % 7 == 0 {
            cmd(c, &["XADD", "big", &id, "other", &i.to_string(), "x", "y"]);
        } else {
            cmd(c, &["XADD", "big", &id, "item", &i.to_string()]);
        }
    }
    cmd(c, &["XDEL", "big", "3-1", "40-1", "41-1"]);
    cmd(
        c,
        &["XADD", "big", "MAXLEN", "~", "70", "*", "item", "auto"],
    );
    cmd(c, &["XGROUP", "CREATE", "big", "g1", "0"]);
    cmd(c, &["XGROUP", "CREATE", "big", "g2", "$"]);
    cmd(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "alice",
            "COUNT",
            "5",
            "STREAMS",
            "big",
            ">",
        ],
    );
    cmd(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "bob",
            "COUNT",
            "3",
            "STREAMS",
            "big",
            ">",
        ],
    );
    cmd(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "carol",
            "NOACK",
            "COUNT",
            "4",
            "STREAMS",
            "big",
            ">",
        ],
    );
    cmd(c, &["XGROUP", "CREATECONSUMER", "big", "g1", "dave"]);
    let Value::Array(ids) = cmd(c, &["XRANGE", "big", "-", "+", "COUNT", "8"]) else {
        panic!()
    };
    let id_of = |v: &Value| match v {
        Value::Array(e) => match &e[0] {
            Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    let first = id_of(&ids[0]);
    let sixth = id_of(&ids[5]);
    cmd(c, &["XACK", "big", "g1", &first]);
    cmd(
        c,
        &[
            "XCLAIM",
            "big",
            "g1",
            "erin",
            "0",
            &sixth,
            "TIME",
            "1700000000000",
            "RETRYCOUNT",
            "4",
        ],
    );
    cmd(
        c,
        &["XAUTOCLAIM", "big", "g1", "frank", "0", "0", "COUNT", "2"],
    );
    cmd(
        c,
        &[
            "XSETID",
            "big",
            "18446744073709551615-0",
            "ENTRIESADDED",
            "500",
            "MAXDELETEDID",
            "41-1",
        ],
    );
    cmd(
        c,
        &[
            "XGROUP",
            "CREATE",
            "empty",
            "lonely",
            "$",
            "MKSTREAM",
            "ENTRIESREAD",
            "3",
        ],
    );
    cmd(c, &["XADD", "small", "1-1", "a", "1"]);
    cmd(c, &["XADD", "small", "2-2", "a", "2"]);
    cmd(c, &["XDEL", "small", "2-2"]);
    cmd(c, &["SELECT", "5"]);
    cmd(c, &["XADD", "other-db", "7-7", "k", "v"]);
    cmd(c, &["PEXPIREAT", "other-db", "4102444800000"]);
    cmd(c, &["SELECT", "0"]);
    cmd(c, &["CONFIG", "SET", "stream-node-max-entries", "100"]);
}

const KEYS: &[(&str, &str)] = &[
    ("0", "big"),
    ("0", "empty"),
    ("0", "small"),
    ("5", "other-db"),
];

/// Everything a stream shows, key by key: XINFO STREAM FULL and the
/// entries. `stable` drops what a replay of the append-only file changes
/// on Redis too: consumers' seen times (a replay is a new access), the
/// node layout (the node size limits are not in the file, and a rewrite
/// re-adds the live entries only), and the groups' read counters and lags
/// (reads are logged as XCLAIM ... LASTID, which carries the last
/// delivered ID but not the counter).
fn state(c: &mut Connection, stable: bool) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (db, key) in KEYS {
        cmd(c, &["SELECT", db]);
        let mut info = cmd(c, &["XINFO", "STREAM", key, "FULL", "COUNT", "0"]);
        if stable {
            strip(&mut info);
        }
        out.push((format!("{db}/{key} info"), info));
        out.push((
            format!("{db}/{key} range"),
            cmd(c, &["XRANGE", key, "-", "+"]),
        ));
        out.push((format!("{db}/{key} ttl"), cmd(c, &["PEXPIRETIME", key])));
    }
    cmd(c, &["SELECT", "0"]);
    out
}

/// Where two replies first differ, as a path of indices and the two
/// values there (so that a failure shows the difference, not two screens
/// of replies).
fn first_diff(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_diff(p, q, &format!("{path}/{i}")) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| format!("{path}: {} vs {} items", x.len(), y.len()))
        }
        _ => (a != b).then(|| format!("{path}: {a:?} vs {b:?}")),
    }
}

fn assert_same(a: &[(String, Value)], b: &[(String, Value)], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for ((name, x), (_, y)) in a.iter().zip(b) {
        if let Some(d) = first_diff(x, y, name) {
            panic!("{what}: {d}");
        }
    }
}

/// Blanks what each server's clock decided: the IDs of XADD * (and of the
/// entry added after XSETID moved the last ID to the maximum), and the
/// delivery times of pending entries.
fn blank_ids(v: &mut Value) {
    match v {
        Value::BulkString(b)
            if b.contains(&b'-') && b.iter().all(|c| c.is_ascii_digit() || *c == b'-') =>
        {
            let text = String::from_utf8_lossy(b).into_owned();
            let ms: u64 = text.split('-').next().unwrap().parse().unwrap_or(0);
            if ms > 1_000_000 {
                *v = Value::Nil;
            }
        }
        // Delivery times.
        Value::Int(t) if *t > 1_000_000_000_000 => *v = Value::Nil,
        Value::Array(items) => items.iter_mut().for_each(blank_ids),
        _ => {}
    }
}

/// Blanks what `state` leaves out in an XINFO STREAM FULL reply: the
/// value after each of those names, at any depth.
fn strip(v: &mut Value) {
    const LEFT_OUT: &[&[u8]] = &[
        b"seen-time",
        b"radix-tree-keys",
        b"radix-tree-nodes",
        b"entries-read",
        b"lag",
    ];
    if let Value::Array(items) = v {
        let mut blank_next = false;
        for item in items.iter_mut() {
            if blank_next {
                *item = Value::Nil;
                blank_next = false;
                continue;
            }
            blank_next = matches!(item, Value::BulkString(k) if LEFT_OUT.contains(&k.as_slice()));
            strip(item);
        }
    }
}

fn wait_info(c: &mut Connection, section: &str, done: &str, ok: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info: String = redis::cmd("INFO").arg(section).query(c).unwrap();
        if info.contains(done) {
            assert!(info.contains(ok), "{info}");
            return;
        }
        assert!(Instant::now() < deadline, "not done: {done}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn streams_survive_a_background_save_and_a_restart() {
    let dir = temp_dir("streams-bgsave");
    let args = ["--appendonly", "no", "--save", ""];
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    fill(&mut c);
    let before = state(&mut c, false);
    cmd(&mut c, &["BGSAVE"]);
    wait_info(
        &mut c,
        "persistence",
        "rdb_bgsave_in_progress:0",
        "rdb_last_bgsave_status:ok",
    );
    server.kill9();
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    // Everything, seen times and node layout included.
    assert_same(&state(&mut c, false), &before, "after a restart");
    server.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn streams_survive_the_append_only_file_and_its_rewrite() {
    let dir = temp_dir("streams-aof");
    let args = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
    ];
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    fill(&mut c);
    // A blocked reader served by an XADD with a generated ID, logged as
    // the claim of what it was given.
    let mut waiter = server.client();
    let handle = std::thread::spawn(move || {
        cmd(
            &mut waiter,
            &[
                "XREADGROUP",
                "GROUP",
                "g2",
                "gina",
                "BLOCK",
                "0",
                "STREAMS",
                "big",
                ">",
            ],
        )
    });
    wait_blocked(&mut c, 1);
    cmd(&mut c, &["XADD", "big", "*", "item", "served"]);
    let served = handle.join().unwrap();
    assert_eq!(
        served,
        Value::Array(vec![Value::Array(vec![
            bulk("big"),
            Value::Array(vec![entry("18446744073709551615-1", &["item", "served"])])
        ])])
    );
    let before = state(&mut c, true);
    server.kill9();

    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    assert_same(&state(&mut c, true), &before, "after replaying the AOF");
    cmd(&mut c, &["BGREWRITEAOF"]);
    wait_info(
        &mut c,
        "persistence",
        "aof_rewrites:1",
        "aof_last_bgrewrite_status:ok",
    );
    wait_info(
        &mut c,
        "persistence",
        "aof_rewrite_in_progress:0",
        "aof_last_bgrewrite_status:ok",
    );
    server.kill9();

    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    assert_same(&state(&mut c, true), &before, "after the rewrite");
    server.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn stream_rdb_files_travel_between_goblin_and_redis() {
    // Goblin writes its dump.rdb...
    let goblin_dir = temp_dir("streams-goblin");
    let no_persistence = ["--save", "", "--appendonly", "no"];
    let goblin = Proc::goblin(&goblin_dir, &no_persistence);
    let mut gc = goblin.client();
    fill(&mut gc);
    let from_goblin = state(&mut gc, false);
    cmd(&mut gc, &["SAVE"]);
    goblin.shutdown();

    // ...Redis loads it, to the same streams, node layout, seen and
    // delivery times included...
    let redis_dir = temp_dir("streams-redis");
    std::fs::copy(goblin_dir.join("dump.rdb"), redis_dir.join("dump.rdb")).unwrap();
    let redis = Proc::redis(&redis_dir, &no_persistence);
    let mut rc = redis.client();
    assert_same(
        &state(&mut rc, false),
        &from_goblin,
        "Goblin's dump.rdb in Redis",
    );
    // ...and writes it back, which Goblin loads to the same again.
    cmd(&mut rc, &["SAVE"]);
    redis.shutdown();
    let back_dir = temp_dir("streams-back");
    std::fs::copy(redis_dir.join("dump.rdb"), back_dir.join("dump.rdb")).unwrap();
    let goblin = Proc::goblin(&back_dir, &no_persistence);
    let mut gc = goblin.client();
    assert_same(
        &state(&mut gc, false),
        &from_goblin,
        "Goblin's streams back from Redis",
    );
    goblin.shutdown();

    // Streams Redis built itself load in Goblin exactly as Redis has them.
    let own_dir = temp_dir("streams-redis-own");
    let redis = Proc::redis(&own_dir, &no_persistence);
    let mut rc = redis.client();
    fill(&mut rc);
    let from_redis = state(&mut rc, false);
    cmd(&mut rc, &["SAVE"]);
    redis.shutdown();
    let load_dir = temp_dir("streams-goblin-load");
    std::fs::copy(own_dir.join("dump.rdb"), load_dir.join("dump.rdb")).unwrap();
    let goblin = Proc::goblin(&load_dir, &no_persistence);
    let mut gc = goblin.client();
    assert_same(
        &state(&mut gc, false),
        &from_redis,
        "Redis's dump.rdb in Goblin",
    );
    goblin.shutdown();
    for d in [goblin_dir, redis_dir, back_dir, own_dir, load_dir] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn stream_dump_payloads_match_redis_and_restore_both_ways() {
    let no_persistence = ["--save", "", "--appendonly", "no"];
    let rdir = temp_dir("streams-dump-redis");
    let gdir = temp_dir("streams-dump-goblin");
    let redis = Proc::redis(&rdir, &no_persistence);
    let goblin = Proc::goblin(&gdir, &no_persistence);
    let mut rc = redis.client();
    let mut gc = goblin.client();
    for c in [&mut rc, &mut gc] {
        fill(c);
    }
    for (db, key) in KEYS {
        for c in [&mut rc, &mut gc] {
            cmd(c, &["SELECT", db]);
        }
        let from_redis: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut rc).unwrap();
        let from_goblin: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut gc).unwrap();
        if *key != "big" {
            // Without consumers (whose seen times differ) the payloads are
            // Redis's byte for byte; `empty`'s group has no consumer.
            assert_eq!(from_goblin, from_redis, "DUMP of {db}/{key}");
        }
        let copy = format!("{key}:copy");
        redis::cmd("RESTORE")
            .arg(&copy)
            .arg(0)
            .arg(&from_redis)
            .query::<()>(&mut gc)
            .unwrap();
        redis::cmd("RESTORE")
            .arg(&copy)
            .arg(0)
            .arg(&from_goblin)
            .query::<()>(&mut rc)
            .unwrap();
        for (c, what) in [
            (&mut rc, "Goblin's payload in Redis"),
            (&mut gc, "Redis's payload in Goblin"),
        ] {
            // Each server's own stream against the other's payload of its
            // twin: the same but for consumers' seen times (and what the
            // clock decided: the ID of XADD *, hence the read counters).
            let mut orig = cmd(c, &["XINFO", "STREAM", key, "FULL", "COUNT", "0"]);
            let mut restored = cmd(c, &["XINFO", "STREAM", &copy, "FULL", "COUNT", "0"]);
            if *key == "big" {
                strip(&mut orig);
                strip(&mut restored);
                blank_ids(&mut orig);
                blank_ids(&mut restored);
            }
            if let Some(d) = first_diff(&orig, &restored, key) {
                panic!("{what}: {d}");
            }
        }
    }
    // A payload cut short or with a bad checksum is refused, not loaded.
    cmd(&mut gc, &["SELECT", "0"]);
    let mut good: Vec<u8> = redis::cmd("DUMP").arg("big").query(&mut gc).unwrap();
    let n = good.len();
    good[n / 2] ^= 0x55;
    let err = redis::cmd("RESTORE")
        .arg("bad")
        .arg(0)
        .arg(&good)
        .query::<()>(&mut gc)
        .unwrap_err();
    assert_eq!(
        err.detail(),
        Some("DUMP payload version or checksum are wrong")
    );
    redis.shutdown();
    goblin.shutdown();
    let _ = std::fs::remove_dir_all(rdir);
    let _ = std::fs::remove_dir_all(gdir);
}
