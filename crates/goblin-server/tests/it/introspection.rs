//! Introspection over real connections, where clients run on several
//! threads at once: SLOWLOG entries and LATENCY histograms fed by
//! concurrent clients (each thread keeps its own histograms; the replies
//! add them up), MONITOR, CLIENT PAUSE holding writers on other threads,
//! CONFIG SET port moving the listener, and the output buffer limit.
//!
//! Waits poll a condition until a time limit; nothing asserts a
//! duration.

use crate::common::{config_set, info_field, resp, wait_until, TestServer};
use redis::{Commands, Value};
use std::io::{BufRead, BufReader};
use std::time::Duration;

const CLIENTS: usize = 8;
const PER_CLIENT: usize = 50;

/// Runs `f` on CLIENTS connections at once, each named "c<i>".
fn concurrently(server: &TestServer, f: impl Fn(usize, &mut redis::Connection) + Sync) {
    std::thread::scope(|scope| {
        for i in 0..CLIENTS {
            let f = &f;
            let mut con = server.client();
            scope.spawn(move || {
                redis::cmd("CLIENT")
                    .arg("SETNAME")
                    .arg(format!("c{i}"))
                    .query::<()>(&mut con)
                    .unwrap();
                f(i, &mut con);
            });
        }
    });
}

#[test]
fn slowlog_keeps_every_entry_of_concurrent_clients_with_their_names() {
    let server = TestServer::start();
    let mut admin = server.client();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .arg("slowlog-max-len")
        .arg(10_000)
        .query(&mut admin)
        .unwrap();
    let _: () = redis::cmd("SLOWLOG")
        .arg("RESET")
        .query(&mut admin)
        .unwrap();
    concurrently(&server, |i, con| {
        for j in 0..PER_CLIENT {
            let _: () = con.set(format!("k{i}:{j}"), j).unwrap();
        }
    });
    config_set(&mut admin, "slowlog-log-slower-than", -1);
    let entries: Vec<Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query(&mut admin)
        .unwrap();
    let mut ids = Vec::new();
    let mut sets_by_client = vec![0usize; CLIENTS];
    for e in &entries {
        let Value::Array(fields) = e else {
            panic!("entry {e:?}")
        };
        assert_eq!(fields.len(), 6);
        let Value::Int(id) = fields[0] else { panic!() };
        ids.push(id);
        let args: Vec<String> = redis::from_redis_value(fields[3].clone()).unwrap();
        let name: String = redis::from_redis_value(fields[5].clone()).unwrap();
        if args[0] == "SET" {
            let i: usize = name[1..].parse().unwrap();
            assert!(args[1].starts_with(&format!("k{i}:")), "{args:?} by {name}");
            sets_by_client[i] += 1;
        }
    }
    assert_eq!(sets_by_client, vec![PER_CLIENT; CLIENTS]);
    // Newest first, ids unique and decreasing.
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
}

#[test]
fn latency_histograms_add_up_the_calls_of_every_thread() {
    let server = TestServer::start();
    let mut admin = server.client();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut admin)
        .unwrap();
    concurrently(&server, |i, con| {
        for j in 0..PER_CLIENT {
            let _: Option<String> = con.get(format!("k{i}:{j}")).unwrap();
        }
    });
    let reply: Value = redis::cmd("LATENCY")
        .arg("HISTOGRAM")
        .arg("get")
        .query(&mut admin)
        .unwrap();
    // RESP2: [name, [calls, N, histogram_usec, [usec, cumulative...]]].
    let text = format!("{reply:?}");
    let Value::Array(commands) = reply else {
        panic!("{text}")
    };
    assert_eq!(commands.len(), 2, "{text}");
    assert_eq!(commands[0], Value::BulkString(b"get".to_vec()), "{text}");
    let Value::Array(fields) = &commands[1] else {
        panic!("{text}")
    };
    let calls = Value::Int((CLIENTS * PER_CLIENT) as i64);
    assert_eq!(fields[1], calls, "{text}");
    // The cumulative counts end at the number of calls.
    let Value::Array(buckets) = &fields[3] else {
        panic!("{text}")
    };
    assert_eq!(buckets.last(), Some(&calls), "{text}");
    let stats = info_field(&mut admin, "everything", "latency_percentiles_usec_get");
    assert!(
        stats.starts_with("p50=") && stats.contains(",p99.9="),
        "{stats}"
    );
}

#[test]
fn monitor_sees_commands_of_other_clients_and_scripts() {
    let server = TestServer::start();
    let mut monitor = server.raw();
    monitor.roundtrip(b"MONITOR\r\n", b"+OK\r\n");
    let mut writer = server.raw();
    let port = writer.stream.local_addr().unwrap().port();
    writer.roundtrip(
        &resp(&[b"SET", b"greeting", b"hi \"there\"\x01\n"]),
        b"+OK\r\n",
    );
    writer.roundtrip(
        &resp(&[b"EVAL", b"redis.call('incr', KEYS[1])", b"1", b"n"]),
        b"$-1\r\n",
    );
    let mut lines = BufReader::new(monitor.stream.try_clone().unwrap()).lines();
    // Redis's line: +<unix seconds>.<6 digits of microseconds> [<db> <addr>]
    // and each argument quoted as sdscatrepr writes it.
    let set = lines.next().unwrap().unwrap();
    let (time, rest) = set
        .strip_prefix('+')
        .and_then(|l| l.split_once(' '))
        .unwrap_or_else(|| panic!("{set}"));
    let (secs, micros) = time.split_once('.').unwrap_or_else(|| panic!("{set}"));
    assert!(secs.parse::<u64>().is_ok(), "{set}");
    assert!(
        micros.len() == 6 && micros.bytes().all(|b| b.is_ascii_digit()),
        "{set}"
    );
    assert_eq!(
        rest,
        format!(r#"[0 127.0.0.1:{port}] "SET" "greeting" "hi \"there\"\x01\n""#)
    );
    let eval = lines.next().unwrap().unwrap();
    assert!(
        eval.ends_with(&format!(
            r#"[0 127.0.0.1:{port}] "EVAL" "redis.call('incr', KEYS[1])" "1" "n""#
        )),
        "{eval}"
    );
    // The script's own commands, attributed to lua.
    let incr = lines.next().unwrap().unwrap();
    assert!(incr.ends_with(r#" [0 lua] "incr" "n""#), "{incr}");
    let mut con = server.client();
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    let flags: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("flags=")))
        .collect();
    assert_eq!(
        flags.iter().filter(|f| f.contains('O')).count(),
        1,
        "{list}"
    );
}

#[test]
fn client_pause_write_holds_writers_on_other_threads_until_unpause() {
    let server = TestServer::start();
    let mut admin = server.client();
    let _: () = admin.set("k", "before").unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(60_000)
        .arg("WRITE")
        .query(&mut admin)
        .unwrap();
    std::thread::scope(|scope| {
        let writers: Vec<_> = (0..4)
            .map(|i| {
                let mut con = server.client();
                scope.spawn(move || {
                    let _: () = con.set("k", format!("w{i}")).unwrap();
                })
            })
            .collect();
        wait_until("4 paused writers", Duration::from_secs(5), || {
            info_field(&mut admin, "everything", "blocked_clients") == "4"
        });
        // Reads go on, and see nothing written.
        let mut reader = server.client();
        let v: String = reader.get("k").unwrap();
        assert_eq!(v, "before");
        let _: () = redis::cmd("CLIENT")
            .arg("UNPAUSE")
            .query(&mut admin)
            .unwrap();
        for w in writers {
            w.join().unwrap();
        }
    });
    let v: String = admin.get("k").unwrap();
    assert!(v.starts_with('w'), "{v}");
    assert_eq!(info_field(&mut admin, "everything", "blocked_clients"), "0");
}

#[test]
fn client_pause_keeps_expired_keys_until_it_ends() {
    let server = TestServer::start();
    let mut con = server.client();
    // In one transaction, so that the pause starts before the key expires.
    let _: () = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("k")
        .arg("v")
        .arg("PX")
        .arg(10)
        .ignore()
        .cmd("CLIENT")
        .arg("PAUSE")
        .arg(60_000)
        .arg("WRITE")
        .ignore()
        .query(&mut con)
        .unwrap();
    wait_until("the key to read as expired", Duration::from_secs(5), || {
        con.get::<_, Option<String>>("k").unwrap().is_none()
    });
    assert_eq!(info_field(&mut con, "everything", "expired_keys"), "0");
    let _: () = redis::cmd("CLIENT").arg("UNPAUSE").query(&mut con).unwrap();
    let _: Option<String> = con.get("k").unwrap();
    assert_eq!(info_field(&mut con, "everything", "expired_keys"), "1");
}

/// The pause belongs to its server: one paused server in the process (as
/// in these tests) once made every other keep its expired keys, and an
/// UNPAUSE anywhere ended the keeping everywhere.
#[test]
fn client_pause_of_one_server_leaves_expiry_of_another_alone() {
    let paused = TestServer::start();
    let other = TestServer::start();
    let mut p = paused.client();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(60_000)
        .arg("WRITE")
        .query(&mut p)
        .unwrap();
    let mut con = other.client();
    // Only the look-up may expire the key.
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(0)
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("PX")
        .arg(1)
        .query(&mut con)
        .unwrap();
    wait_until(
        "the other server to expire the key",
        Duration::from_secs(5),
        || {
            let _: Option<String> = con.get("k").unwrap();
            info_field(&mut con, "everything", "expired_keys") == "1"
        },
    );
    let _: () = redis::cmd("CLIENT").arg("UNPAUSE").query(&mut p).unwrap();
}

#[test]
fn client_pause_rejects_bad_arguments() {
    let server = TestServer::start();
    let mut raw = server.raw();
    raw.roundtrip(
        b"CLIENT PAUSE abc\r\n",
        b"-ERR timeout is not an integer or out of range\r\n",
    );
    raw.roundtrip(b"CLIENT PAUSE -1\r\n", b"-ERR timeout is negative\r\n");
    raw.roundtrip(
        b"CLIENT PAUSE 10 SOME\r\n",
        b"-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n",
    );
}

#[test]
fn config_set_port_moves_the_listener() {
    let server = TestServer::start();
    let mut con = server.client();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    // A port taken by someone else: refused, and nothing changes.
    let err = redis::cmd("CONFIG")
        .arg("SET")
        .arg("port")
        .arg(port)
        .query::<()>(&mut con)
        .unwrap_err();
    assert!(
        err.to_string().contains("Unable to listen on this port"),
        "{err}"
    );
    drop(free);
    config_set(&mut con, "port", port);
    let mut moved = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let pong: String = redis::cmd("PING").query(&mut moved).unwrap();
    assert_eq!(pong, "PONG");
    assert_eq!(
        info_field(&mut moved, "everything", "tcp_port"),
        port.to_string()
    );
    wait_until("the old port to close", Duration::from_secs(5), || {
        std::net::TcpStream::connect(server.addr).is_err()
    });
}

#[test]
fn output_buffer_hard_limit_closes_the_client_without_its_reply() {
    let server = TestServer::start();
    let mut con = server.client();
    let big = "x".repeat(200_000);
    let _: () = con.set("big", &big).unwrap();
    config_set(&mut con, "client-output-buffer-limit", "normal 100000 0 0");
    let mut raw = server.raw();
    raw.send(b"GET big\r\n");
    let got = raw.read_exact_len(1);
    assert!(got.is_empty(), "got {} bytes", got.len());
    // Smaller replies still pass.
    let v: usize = con.strlen("big").unwrap();
    assert_eq!(v, 200_000);
}

#[test]
fn slowlog_len_get_and_reset_with_every_command_logged() {
    let server = TestServer::start();
    let mut con = server.client();
    config_set(&mut con, "slowlog-log-slower-than", 0);
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut con).unwrap();
    let _: () = con.set("a", 1).unwrap();
    let _: i64 = con.get("a").unwrap();
    // RESET, SET and GET: a command is logged once it has run, so LEN does
    // not count itself.
    let len: i64 = redis::cmd("SLOWLOG").arg("LEN").query(&mut con).unwrap();
    assert_eq!(len, 3);
    let entries: Vec<Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(2)
        .query(&mut con)
        .unwrap();
    let summary = |entries: &[Value]| -> Vec<(i64, Vec<String>)> {
        entries
            .iter()
            .map(|e| {
                let Value::Array(f) = e else { panic!("{e:?}") };
                let Value::Int(id) = f[0] else {
                    panic!("{e:?}")
                };
                (id, redis::from_redis_value(f[3].clone()).unwrap())
            })
            .collect()
    };
    let got = summary(&entries);
    // Ids count every command logged (CONFIG SET's too) and go on across a
    // reset.
    let len_id = got[0].0;
    assert!(len_id > 3, "{got:?}");
    assert_eq!(
        got,
        vec![
            (len_id, vec!["SLOWLOG".to_string(), "LEN".to_string()]),
            (len_id - 1, vec!["GET".to_string(), "a".to_string()]),
        ]
    );
    // The reset keeps only itself (the SLOWLOG GET above took the id before).
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut con).unwrap();
    let entries: Vec<Value> = redis::cmd("SLOWLOG").arg("GET").query(&mut con).unwrap();
    assert_eq!(
        summary(&entries),
        vec![(len_id + 2, vec!["SLOWLOG".to_string(), "RESET".to_string()])]
    );
    // -1 logs nothing.
    config_set(&mut con, "slowlog-log-slower-than", -1);
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut con).unwrap();
    let _: () = con.set("a", 2).unwrap();
    let len: i64 = redis::cmd("SLOWLOG").arg("LEN").query(&mut con).unwrap();
    assert_eq!(len, 0);
}

#[test]
fn latency_monitor_records_a_command_over_the_threshold() {
    let server = TestServer::start();
    let mut con = server.client();
    let latest: Vec<Value> = redis::cmd("LATENCY").arg("LATEST").query(&mut con).unwrap();
    assert!(latest.is_empty(), "{latest:?}");
    // A threshold no ordinary command reaches, even on a loaded machine.
    config_set(&mut con, "latency-monitor-threshold", 200);
    // DEBUG SLEEP sleeps at least this long, so the event is certain.
    let _: () = redis::cmd("DEBUG")
        .arg("SLEEP")
        .arg("0.25")
        .query(&mut con)
        .unwrap();
    let latest: Vec<(String, i64, i64, i64)> =
        redis::cmd("LATENCY").arg("LATEST").query(&mut con).unwrap();
    assert_eq!(latest.len(), 1, "{latest:?}");
    let (event, time, last_ms, max_ms) = latest[0].clone();
    assert_eq!(event, "command");
    assert!(last_ms >= 250 && last_ms == max_ms, "{latest:?}");
    let history: Vec<(i64, i64)> = redis::cmd("LATENCY")
        .arg("HISTORY")
        .arg("command")
        .query(&mut con)
        .unwrap();
    assert_eq!(history, vec![(time, last_ms)]);
    let none: Vec<Value> = redis::cmd("LATENCY")
        .arg("HISTORY")
        .arg("fast-command")
        .query(&mut con)
        .unwrap();
    assert!(none.is_empty(), "{none:?}");
    let reset: i64 = redis::cmd("LATENCY").arg("RESET").query(&mut con).unwrap();
    assert_eq!(reset, 1);
    let latest: Vec<Value> = redis::cmd("LATENCY").arg("LATEST").query(&mut con).unwrap();
    assert!(latest.is_empty(), "{latest:?}");
}

fn latencystats(con: &mut redis::Connection) -> Vec<(String, String)> {
    let info: String = redis::cmd("INFO").arg("latencystats").query(con).unwrap();
    info.lines()
        .filter_map(|l| l.strip_prefix("latency_percentiles_usec_"))
        .map(|l| {
            let (cmd, p) = l.split_once(':').unwrap();
            (cmd.to_string(), p.trim_end().to_string())
        })
        .collect()
}

/// The labels of a latencystats line ("p50=1.003,p99=2.007" -> p50, p99),
/// each value a number.
fn labels(percentiles: &str) -> Vec<String> {
    percentiles
        .split(',')
        .map(|p| {
            let (label, value) = p.split_once('=').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{percentiles}");
            label.to_string()
        })
        .collect()
}

#[test]
fn info_latencystats_follows_the_tracking_settings() {
    let server = TestServer::start();
    let mut con = server.client();
    let _: () = con.set("x", 1).unwrap();
    let _: () = con.hset("h", "f", "v").unwrap();
    let stats = latencystats(&mut con);
    let set = &stats.iter().find(|(c, _)| c == "set").unwrap().1;
    assert_eq!(labels(set), ["p50", "p99", "p99.9"]);
    assert!(stats.iter().any(|(c, _)| c == "hset"), "{stats:?}");
    config_set(&mut con, "latency-tracking-info-percentiles", "50 99.99");
    config_set(&mut con, "slowlog-max-len", 64);
    let stats = latencystats(&mut con);
    let set = &stats.iter().find(|(c, _)| c == "set").unwrap().1;
    assert_eq!(labels(set), ["p50", "p99.99"]);
    // Subcommands are named container|subcommand.
    assert!(stats.iter().any(|(c, _)| c == "config|set"), "{stats:?}");
    // Without tracking nothing new is recorded.
    config_set(&mut con, "latency-tracking", "no");
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .unwrap();
    let _: () = con.hset("h", "f", "w").unwrap();
    let stats = latencystats(&mut con);
    assert!(stats.is_empty(), "{stats:?}");
}

#[test]
fn output_buffer_limit_closes_a_client_that_does_not_read() {
    let server = TestServer::start();
    let mut con = server.client();
    let _: () = con.set("big", "x".repeat(100_000)).unwrap();
    config_set(&mut con, "client-output-buffer-limit", "normal 1mb 0 0");
    // Each reply passes the limit alone; 400 of them (40 MB) cannot all
    // wait in the sockets' buffers, so the replies pile up in the server.
    const REQUESTS: usize = 400;
    let mut raw = server.raw();
    raw.send(&b"GET big\r\n".repeat(REQUESTS));
    let mut received = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        use std::io::Read;
        match raw.stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => received += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("still open after {received} bytes: {e}"),
        }
    }
    assert!(received < REQUESTS * 100_000, "{received} bytes");
    // Other clients are served as before.
    let len: usize = con.strlen("big").unwrap();
    assert_eq!(len, 100_000);
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    assert_eq!(list.lines().count(), 1, "{list}");
}

/// The pending output of `name` as CLIENT LIST shows it (omem), or None
/// once the client is gone.
fn omem_of(con: &mut redis::Connection, name: &str) -> Option<usize> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query(con).unwrap();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))?;
    let omem = line
        .split(' ')
        .find_map(|f| f.strip_prefix("omem="))
        .unwrap_or_else(|| panic!("{line}"));
    Some(omem.parse().unwrap())
}

/// The most the kernel can hold of a connection's unread data: the
/// sender's and the receiver's buffers at their autotuning maxima.
fn socket_buffers_max() -> usize {
    let max = |path: &str| -> usize {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.split_whitespace().nth(2)?.parse().ok())
            .unwrap_or(32 << 20)
    };
    max("/proc/sys/net/ipv4/tcp_wmem") + max("/proc/sys/net/ipv4/tcp_rmem")
}

/// A subscriber that stopped reading stays past its soft limit once the
/// publishing stops: it is closed when the limit's seconds are over,
/// though nothing more happens on its connection (Redis's clientsCron
/// checks it); meanwhile CLIENT LIST's omem shows its pending messages.
#[test]
fn a_subscriber_past_its_soft_limit_is_closed_without_more_traffic() {
    let server = TestServer::start();
    let mut admin = server.client();
    // Longer than the idle time after which the clients cron visits the
    // connection anyway (to release its query buffer).
    config_set(&mut admin, "client-output-buffer-limit", "pubsub 0 1mb 4");
    let mut sub = server.raw();
    sub.roundtrip(&resp(&[b"CLIENT", b"SETNAME", b"sub"]), b"+OK\r\n");
    sub.roundtrip(
        &resp(&[b"SUBSCRIBE", b"big"]),
        b"*3\r\n$9\r\nsubscribe\r\n$3\r\nbig\r\n:1\r\n",
    );
    // More than the sockets can take: 2 MB at least wait in the server.
    let payload = "z".repeat(64 * 1024);
    let count = (socket_buffers_max() + (2 << 20)) / payload.len() + 1;
    for _ in 0..count {
        let _: i64 = admin.publish("big", &payload).unwrap();
    }
    // (Unless a very slow machine took the limit's seconds already.)
    if let Some(omem) = omem_of(&mut admin, "sub") {
        assert!(omem >= 1 << 20, "omem={omem}");
    }
    wait_until(
        "the subscriber to be closed",
        Duration::from_secs(15),
        || omem_of(&mut admin, "sub").is_none(),
    );
    let receivers: i64 = admin.publish("big", "after").unwrap();
    assert_eq!(receivers, 0);
}

/// Regression: CLIENT KILL only flagged another client, which stayed in
/// CLIENT LIST and connected_clients until its connection's task ran
/// (Redis's test "CLIENT KILL SKIPME YES/NO will kill all clients" counted
/// it). As Redis frees it, a killed client is gone at once: here even
/// within the same transaction.
#[test]
fn a_killed_client_is_gone_at_once() {
    let server = TestServer::start();
    let mut me = server.client();
    let mut others: Vec<redis::Connection> = (0..4).map(|_| server.client()).collect();
    let ids: Vec<i64> = others
        .iter_mut()
        .map(|c| redis::cmd("CLIENT").arg("ID").query(c).unwrap())
        .collect();
    let before: i64 = info_field(&mut me, "clients", "connected_clients")
        .parse()
        .unwrap();
    let (killed, list, info): (i64, String, String) = redis::pipe()
        .atomic()
        .cmd("CLIENT")
        .arg("KILL")
        .arg("SKIPME")
        .arg("YES")
        .cmd("CLIENT")
        .arg("LIST")
        .cmd("INFO")
        .arg("clients")
        .query(&mut me)
        .unwrap();
    assert_eq!(killed, before - 1);
    for id in ids {
        assert!(!list.contains(&format!("id={id} ")), "{list}");
    }
    assert!(info.contains("connected_clients:1\r\n"), "{info}");
}
