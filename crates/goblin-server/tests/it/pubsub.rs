//! Pub/Sub through real connections: delivery across connections served by
//! different threads, patterns, shard channels, RESP2's subscribed mode and
//! RESP3 pushes, what leaving (UNSUBSCRIBE, RESET, a disconnect, an output
//! limit) leaves behind, and PUBLISH from transactions and scripts.
//! Frames are read raw, so that the exact reply types are checked.

use crate::common::{resp, wait_until, TestServer};
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
    /// RESP3 `%`, as its flat list of keys and values.
    Map(Vec<Frame>),
}

fn b(s: &str) -> Frame {
    Frame::Bulk(s.as_bytes().to_vec())
}

/// A connection that sends commands and reads frames.
struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(s: &TestServer) -> Conn {
        let stream = TcpStream::connect(s.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Conn {
            reader: BufReader::new(stream),
        }
    }

    fn send(&mut self, args: &[&str]) {
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.reader.get_mut().write_all(&resp(&argv)).unwrap();
    }

    fn read(&mut self) -> Frame {
        read_frame(&mut self.reader)
    }

    /// Sends a command and reads its one reply.
    fn call(&mut self, args: &[&str]) -> Frame {
        self.send(args);
        self.read()
    }

    fn int(&mut self, args: &[&str]) -> i64 {
        match self.call(args) {
            Frame::Int(n) => n,
            other => panic!("{args:?} answered {other:?}"),
        }
    }

    /// True when the server closed the connection.
    fn closed(&mut self) -> bool {
        let mut buf = [0u8; 1];
        matches!(self.reader.read(&mut buf), Ok(0) | Err(_))
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
        "*" if n() < 0 => Frame::Null,
        "*" => Frame::Array(items(r, n())),
        ">" => Frame::Push(items(r, n())),
        "%" => Frame::Map(items(r, 2 * n())),
        _ => panic!("unexpected frame {line:?}"),
    }
}

/// What a RESP2 subscriber reads for a message on `channel`.
fn message(channel: &str, payload: &str) -> Frame {
    Frame::Array(vec![b("message"), b(channel), b(payload)])
}

fn confirmation(word: &str, name: Option<&str>, count: i64) -> Frame {
    Frame::Array(vec![
        b(word),
        name.map_or(Frame::Null, b),
        Frame::Int(count),
    ])
}

fn numsub(c: &mut Conn, channel: &str) -> i64 {
    match c.call(&["PUBSUB", "NUMSUB", channel]) {
        Frame::Array(v) => match v.as_slice() {
            [_, Frame::Int(n)] => *n,
            other => panic!("NUMSUB answered {other:?}"),
        },
        other => panic!("NUMSUB answered {other:?}"),
    }
}

fn info_field(c: &mut Conn, field: &str) -> String {
    let Frame::Bulk(text) = c.call(&["INFO", "stats"]) else {
        panic!("INFO is a bulk")
    };
    let text = String::from_utf8(text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .unwrap_or_else(|| panic!("no {field} in INFO"))
}

#[test]
fn subscribers_on_several_connections_get_every_message_in_order() {
    let s = TestServer::start();
    const SUBSCRIBERS: usize = 6;
    const MESSAGES: usize = 2000;
    let mut subs: Vec<Conn> = (0..SUBSCRIBERS).map(|_| Conn::open(&s)).collect();
    for c in subs.iter_mut() {
        assert_eq!(
            c.call(&["SUBSCRIBE", "feed"]),
            confirmation("subscribe", Some("feed"), 1)
        );
    }
    // Each subscriber reads on its own thread while the publisher runs;
    // they send nothing, so every message is written to them unprompted.
    let readers: Vec<_> = subs
        .into_iter()
        .map(|mut c| {
            std::thread::spawn(move || {
                for i in 0..MESSAGES {
                    assert_eq!(c.read(), message("feed", &i.to_string()), "message {i}");
                }
            })
        })
        .collect();
    let mut publisher = Conn::open(&s);
    for i in 0..MESSAGES {
        assert_eq!(
            publisher.int(&["PUBLISH", "feed", &i.to_string()]),
            SUBSCRIBERS as i64
        );
    }
    for r in readers {
        r.join().unwrap();
    }
}

#[test]
fn pipelined_publishes_reach_a_subscriber_in_order() {
    let s = TestServer::start();
    let mut sub = Conn::open(&s);
    sub.call(&["SUBSCRIBE", "a", "b"]);
    sub.read();
    let mut publisher = Conn::open(&s);
    let mut batch = Vec::new();
    for i in 0..500 {
        let ch = if i % 2 == 0 { "a" } else { "b" };
        batch.extend(resp(&[b"PUBLISH", ch.as_bytes(), i.to_string().as_bytes()]));
    }
    publisher.reader.get_mut().write_all(&batch).unwrap();
    for _ in 0..500 {
        assert_eq!(publisher.read(), Frame::Int(1));
    }
    for i in 0..500 {
        let ch = if i % 2 == 0 { "a" } else { "b" };
        assert_eq!(sub.read(), message(ch, &i.to_string()));
    }
}

#[test]
fn pattern_subscriptions_get_pmessages_and_count_separately() {
    let s = TestServer::start();
    let mut sub = Conn::open(&s);
    assert_eq!(
        sub.call(&["PSUBSCRIBE", "news.*"]),
        confirmation("psubscribe", Some("news.*"), 1)
    );
    assert_eq!(
        sub.call(&["SUBSCRIBE", "news.art"]),
        confirmation("subscribe", Some("news.art"), 2)
    );
    let mut p = Conn::open(&s);
    assert_eq!(p.int(&["PUBSUB", "NUMPAT"]), 1);
    // The channel subscription and the pattern both receive: two deliveries.
    assert_eq!(p.int(&["PUBLISH", "news.art", "hi"]), 2);
    assert_eq!(p.int(&["PUBLISH", "sports.x", "no"]), 0);
    assert_eq!(p.int(&["PUBLISH", "news.tech", "yo"]), 1);
    assert_eq!(sub.read(), message("news.art", "hi"));
    assert_eq!(
        sub.read(),
        Frame::Array(vec![b("pmessage"), b("news.*"), b("news.art"), b("hi")])
    );
    assert_eq!(
        sub.read(),
        Frame::Array(vec![b("pmessage"), b("news.*"), b("news.tech"), b("yo")])
    );
    // NUMSUB does not count pattern subscribers.
    assert_eq!(numsub(&mut p, "news.tech"), 0);
    assert_eq!(
        sub.call(&["PUNSUBSCRIBE"]),
        confirmation("punsubscribe", Some("news.*"), 1)
    );
    assert_eq!(p.int(&["PUBSUB", "NUMPAT"]), 0);
    assert_eq!(p.int(&["PUBLISH", "news.tech", "yo"]), 0);
}

#[test]
fn shard_channels_are_a_namespace_of_their_own() {
    let s = TestServer::start();
    let mut sub = Conn::open(&s);
    assert_eq!(
        sub.call(&["SSUBSCRIBE", "orders"]),
        confirmation("ssubscribe", Some("orders"), 1)
    );
    let mut p = Conn::open(&s);
    assert_eq!(p.int(&["PUBLISH", "orders", "plain"]), 0);
    assert_eq!(p.int(&["SPUBLISH", "orders", "sharded"]), 1);
    assert_eq!(
        sub.read(),
        Frame::Array(vec![b("smessage"), b("orders"), b("sharded")])
    );
    assert_eq!(
        p.call(&["PUBSUB", "SHARDNUMSUB", "orders", "other"]),
        Frame::Array(vec![b("orders"), Frame::Int(1), b("other"), Frame::Int(0)])
    );
    assert_eq!(
        p.call(&["PUBSUB", "SHARDCHANNELS"]),
        Frame::Array(vec![b("orders")])
    );
    assert_eq!(p.call(&["PUBSUB", "CHANNELS"]), Frame::Array(vec![]));
    assert_eq!(info_field(&mut p, "pubsubshard_channels"), "1");
    // A pattern never matches a shard channel.
    let mut psub = Conn::open(&s);
    psub.call(&["PSUBSCRIBE", "*"]);
    assert_eq!(p.int(&["SPUBLISH", "orders", "again"]), 1);
    assert_eq!(
        sub.read(),
        Frame::Array(vec![b("smessage"), b("orders"), b("again")])
    );
    assert_eq!(
        sub.call(&["SUNSUBSCRIBE"]),
        confirmation("sunsubscribe", Some("orders"), 0)
    );
    assert_eq!(p.call(&["PUBSUB", "SHARDCHANNELS"]), Frame::Array(vec![]));
}

#[test]
fn resp3_subscribers_get_pushes_and_may_run_any_command() {
    let s = TestServer::start();
    let mut sub = Conn::open(&s);
    assert!(matches!(sub.call(&["HELLO", "3"]), Frame::Map(_)));
    assert_eq!(
        sub.call(&["SUBSCRIBE", "ch"]),
        Frame::Push(vec![b("subscribe"), b("ch"), Frame::Int(1)])
    );
    // Not restricted in RESP3: plain replies, plain PONG.
    assert_eq!(sub.call(&["SET", "k", "v"]), Frame::Simple("OK".into()));
    assert_eq!(sub.call(&["PING"]), Frame::Simple("PONG".into()));
    let mut p = Conn::open(&s);
    assert_eq!(p.int(&["PUBLISH", "ch", "hello"]), 1);
    assert_eq!(
        sub.read(),
        Frame::Push(vec![b("message"), b("ch"), b("hello")])
    );
    // A client publishing to its own channel gets the message before the
    // reply, as Redis writes it.
    assert_eq!(
        sub.call(&["PUBLISH", "ch", "self"]),
        Frame::Push(vec![b("message"), b("ch"), b("self")])
    );
    assert_eq!(sub.read(), Frame::Int(1));
    assert_eq!(
        sub.call(&["UNSUBSCRIBE"]),
        Frame::Push(vec![b("unsubscribe"), b("ch"), Frame::Int(0)])
    );
}

#[test]
fn resp2_subscribed_mode_allows_only_the_pubsub_commands() {
    let s = TestServer::start();
    let mut c = Conn::open(&s);
    c.call(&["SUBSCRIBE", "ch"]);
    assert_eq!(
        c.call(&["GET", "k"]),
        Frame::Error("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context".into())
    );
    assert_eq!(
        c.call(&["CONFIG", "GET", "port"]),
        Frame::Error("ERR Can't execute 'config|get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context".into())
    );
    assert_eq!(c.call(&["PING"]), Frame::Array(vec![b("pong"), b("")]));
    assert_eq!(
        c.call(&["PING", "hey"]),
        Frame::Array(vec![b("pong"), b("hey")])
    );
    assert_eq!(
        c.call(&["PSUBSCRIBE", "p*"]),
        confirmation("psubscribe", Some("p*"), 2)
    );
    // Leaving everything ends the mode.
    c.send(&["UNSUBSCRIBE"]);
    assert_eq!(c.read(), confirmation("unsubscribe", Some("ch"), 1));
    assert_eq!(
        c.call(&["PUNSUBSCRIBE"]),
        confirmation("punsubscribe", Some("p*"), 0)
    );
    assert_eq!(c.call(&["PING"]), Frame::Simple("PONG".into()));
    assert_eq!(c.call(&["GET", "k"]), Frame::Null);
}

#[test]
fn unsubscribing_from_nothing_still_confirms() {
    let s = TestServer::start();
    let mut c = Conn::open(&s);
    assert_eq!(
        c.call(&["UNSUBSCRIBE"]),
        confirmation("unsubscribe", None, 0)
    );
    assert_eq!(
        c.call(&["PUNSUBSCRIBE"]),
        confirmation("punsubscribe", None, 0)
    );
    assert_eq!(
        c.call(&["SUNSUBSCRIBE"]),
        confirmation("sunsubscribe", None, 0)
    );
    c.send(&["UNSUBSCRIBE", "a", "b"]);
    assert_eq!(c.read(), confirmation("unsubscribe", Some("a"), 0));
    assert_eq!(c.read(), confirmation("unsubscribe", Some("b"), 0));
    // Not subscribed: an ordinary client still.
    assert_eq!(c.call(&["GET", "k"]), Frame::Null);
}

#[test]
fn a_subscriber_that_disconnects_while_messages_flow_leaves_nothing() {
    let s = TestServer::start();
    let mut admin = Conn::open(&s);
    for round in 0..5 {
        let mut sub = Conn::open(&s);
        sub.call(&["SUBSCRIBE", "busy", "other"]);
        sub.read();
        sub.call(&["PSUBSCRIBE", "bu*"]);
        sub.call(&["SSUBSCRIBE", "busy"]);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flood = {
            let stop = stop.clone();
            let addr = s.addr;
            std::thread::spawn(move || {
                let mut p = TcpStream::connect(addr).unwrap();
                let mut sink = vec![0u8; 1 << 16];
                p.set_nonblocking(true).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = p.write_all(&resp(&[b"PUBLISH", b"busy", &[b'x'; 512]]));
                    let _ = p.write_all(&resp(&[b"SPUBLISH", b"busy", b"y"]));
                    while let Ok(n) = p.read(&mut sink) {
                        if n == 0 {
                            break;
                        }
                    }
                }
            })
        };
        // Let messages pile up unread, then drop the connection.
        wait_until("the subscriber of busy", Duration::from_secs(20), || {
            numsub(&mut admin, "busy") == 1
        });
        std::thread::sleep(Duration::from_millis(20 * round));
        drop(sub);
        wait_until(
            "the dropped subscriber to leave busy",
            Duration::from_secs(20),
            || numsub(&mut admin, "busy") == 0,
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        flood.join().unwrap();
        assert_eq!(admin.int(&["PUBSUB", "NUMPAT"]), 0);
        assert_eq!(
            admin.call(&["PUBSUB", "SHARDNUMSUB", "busy"]),
            Frame::Array(vec![b("busy"), Frame::Int(0)])
        );
        assert_eq!(info_field(&mut admin, "pubsub_channels"), "0");
        assert_eq!(info_field(&mut admin, "pubsub_patterns"), "0");
        assert_eq!(admin.int(&["PUBLISH", "busy", "anyone?"]), 0);
    }
}

#[test]
fn reset_leaves_every_subscription() {
    let s = TestServer::start();
    let mut c = Conn::open(&s);
    c.call(&["SUBSCRIBE", "a"]);
    c.call(&["PSUBSCRIBE", "b*"]);
    c.call(&["SSUBSCRIBE", "c"]);
    assert_eq!(c.call(&["RESET"]), Frame::Simple("RESET".into()));
    let mut p = Conn::open(&s);
    assert_eq!(numsub(&mut p, "a"), 0);
    assert_eq!(p.int(&["PUBSUB", "NUMPAT"]), 0);
    assert_eq!(p.int(&["SPUBLISH", "c", "x"]), 0);
    assert_eq!(c.call(&["GET", "k"]), Frame::Null);
}

#[test]
fn client_list_shows_the_subscription_counts_and_the_p_flag() {
    let s = TestServer::start();
    let mut c = Conn::open(&s);
    c.call(&["CLIENT", "SETNAME", "listener"]);
    c.send(&["SUBSCRIBE", "a", "b"]);
    c.read();
    c.read();
    c.call(&["PSUBSCRIBE", "x*"]);
    c.call(&["SSUBSCRIBE", "s"]);
    let mut admin = Conn::open(&s);
    let Frame::Bulk(list) = admin.call(&["CLIENT", "LIST", "TYPE", "pubsub"]) else {
        panic!("CLIENT LIST is a bulk")
    };
    let line = String::from_utf8(list).unwrap();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.contains("name=listener"), "{line}");
    assert!(line.contains(" flags=P "), "{line}");
    assert!(line.contains(" sub=2 psub=1 ssub=1 "), "{line}");
    let Frame::Bulk(normal) = admin.call(&["CLIENT", "LIST", "TYPE", "normal"]) else {
        panic!("CLIENT LIST is a bulk")
    };
    assert!(!String::from_utf8(normal).unwrap().contains("listener"));
    assert_eq!(admin.int(&["CLIENT", "KILL", "TYPE", "pubsub"]), 1);
    assert!(c.closed());
}

#[test]
fn publish_runs_inside_multi_and_scripts() {
    let s = TestServer::start();
    let mut sub = Conn::open(&s);
    sub.call(&["SUBSCRIBE", "tx"]);
    let mut c = Conn::open(&s);
    assert_eq!(c.call(&["MULTI"]), Frame::Simple("OK".into()));
    assert_eq!(
        c.call(&["PUBLISH", "tx", "one"]),
        Frame::Simple("QUEUED".into())
    );
    c.call(&["PUBLISH", "tx", "two"]);
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1)])
    );
    assert_eq!(
        c.call(&[
            "EVAL",
            "return redis.call('PUBLISH', KEYS[1], ARGV[1])",
            "1",
            "tx",
            "three"
        ]),
        Frame::Int(1)
    );
    assert_eq!(
        c.call(&["EVAL", "return redis.call('SPUBLISH', 'tx', 'shard')", "0"]),
        Frame::Int(0)
    );
    match c.call(&["EVAL", "return redis.call('SUBSCRIBE', 'tx')", "0"]) {
        Frame::Error(e) => assert!(
            e.starts_with("ERR This Redis command is not allowed from script"),
            "{e}"
        ),
        other => panic!("SUBSCRIBE from a script answered {other:?}"),
    }
    for m in ["one", "two", "three"] {
        assert_eq!(sub.read(), message("tx", m));
    }
    // SUBSCRIBE inside MULTI runs at EXEC; SSUBSCRIBE is refused there.
    c.call(&["MULTI"]);
    c.call(&["SUBSCRIBE", "late"]);
    c.call(&["SSUBSCRIBE", "late"]);
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Array(vec![
            confirmation("subscribe", Some("late"), 1),
            Frame::Error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client".into()),
        ])
    );
    assert_eq!(numsub(&mut Conn::open(&s), "late"), 1);
}

#[test]
fn a_subscriber_that_does_not_read_is_closed_at_the_output_limit() {
    let s = TestServer::start();
    let mut admin = Conn::open(&s);
    assert_eq!(
        admin.call(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 256kb 0 0"
        ]),
        Frame::Simple("OK".into())
    );
    let mut sub = Conn::open(&s);
    sub.call(&["SUBSCRIBE", "big"]);
    let payload = "z".repeat(64 * 1024);
    // The subscriber reads nothing: the socket's buffers fill, then the
    // mailbox passes the hard limit and the server closes the client.
    let mut sent = 0;
    while numsub(&mut admin, "big") == 1 {
        admin.int(&["PUBLISH", "big", &payload]);
        sent += 1;
        assert!(sent < 10_000, "the subscriber was never closed");
    }
    assert_eq!(admin.int(&["PUBLISH", "big", "after"]), 0);
    // A subscriber that keeps up is not affected.
    let mut reader = Conn::open(&s);
    reader.call(&["SUBSCRIBE", "big"]);
    for _ in 0..20 {
        assert_eq!(admin.int(&["PUBLISH", "big", &payload]), 1);
        assert_eq!(reader.read(), message("big", &payload));
    }
}

#[test]
fn pubsub_help_and_bad_subcommands() {
    let s = TestServer::start();
    let mut c = Conn::open(&s);
    let Frame::Array(help) = c.call(&["PUBSUB", "HELP"]) else {
        panic!("PUBSUB HELP is an array")
    };
    assert_eq!(
        help[0],
        Frame::Simple("PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into())
    );
    assert_eq!(help.len(), 14);
    assert_eq!(
        c.call(&["PUBSUB", "NOPE"]),
        Frame::Error("ERR unknown subcommand 'NOPE'. Try PUBSUB HELP.".into())
    );
    assert_eq!(
        c.call(&["PUBSUB", "CHANNELS", "a", "b"]),
        Frame::Error(
            "ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP."
                .into()
        )
    );
    assert_eq!(
        c.call(&["PUBLISH", "only-channel"]),
        Frame::Error("ERR wrong number of arguments for 'publish' command".into())
    );
    assert_eq!(
        c.call(&["SUBSCRIBE"]),
        Frame::Error("ERR wrong number of arguments for 'subscribe' command".into())
    );
    // Binary channel names and payloads pass through untouched.
    let mut sub = Conn::open(&s);
    let name: &[u8] = b"bin\x00\r\n\xff";
    sub.reader
        .get_mut()
        .write_all(&resp(&[b"SUBSCRIBE", name]))
        .unwrap();
    assert_eq!(
        sub.read(),
        Frame::Array(vec![
            b("subscribe"),
            Frame::Bulk(name.to_vec()),
            Frame::Int(1)
        ])
    );
    c.reader
        .get_mut()
        .write_all(&resp(&[b"PUBLISH", name, b"\x00\x01"]))
        .unwrap();
    assert_eq!(c.read(), Frame::Int(1));
    assert_eq!(
        sub.read(),
        Frame::Array(vec![
            b("message"),
            Frame::Bulk(name.to_vec()),
            Frame::Bulk(b"\x00\x01".to_vec())
        ])
    );
}

#[test]
fn channel_permissions_refuse_publish_and_subscribe_and_are_logged() {
    let s = TestServer::start();
    let mut admin = Conn::open(&s);
    admin.call(&[
        "ACL",
        "SETUSER",
        "ps",
        "on",
        ">pw",
        "+@all",
        "~*",
        "resetchannels",
        "&news.*",
        "&orders",
    ]);
    let mut c = Conn::open(&s);
    assert_eq!(c.call(&["AUTH", "ps", "pw"]), Frame::Simple("OK".into()));
    let noperm = Frame::Error(
        "NOPERM this user has no permissions to access one of the channels used as arguments"
            .into(),
    );
    assert_eq!(c.int(&["PUBLISH", "news.today", "m"]), 0);
    assert_eq!(c.call(&["PUBLISH", "gossip", "m"]), noperm);
    assert_eq!(c.call(&["SPUBLISH", "gossip", "m"]), noperm);
    assert_eq!(c.call(&["SUBSCRIBE", "orders", "gossip"]), noperm);
    // Patterns must be granted as written.
    assert_eq!(c.call(&["PSUBSCRIBE", "news.t*"]), noperm);
    let Frame::Array(log) = admin.call(&["ACL", "LOG", "1"]) else {
        panic!("ACL LOG is an array")
    };
    let Frame::Array(entry) = &log[0] else {
        panic!("an entry is a map")
    };
    let field = |name: &str| {
        let i = entry.iter().position(|f| *f == b(name)).unwrap();
        entry[i + 1].clone()
    };
    assert_eq!(field("reason"), b("channel"));
    assert_eq!(field("object"), b("news.t*"));
    assert_eq!(field("username"), b("ps"));
    // Queued in MULTI: refused when queued.
    c.call(&["MULTI"]);
    assert_eq!(c.call(&["PUBLISH", "gossip", "m"]), noperm);
    c.call(&["DISCARD"]);
    // And in a script.
    match c.call(&["EVAL", "return redis.call('PUBLISH', 'gossip', 'm')", "0"]) {
        Frame::Error(e) => assert!(
            e.contains("The user executing the script can't publish to the channel mentioned in the command"),
            "{e}"
        ),
        other => panic!("PUBLISH from a script answered {other:?}"),
    }
}

#[test]
fn subscribers_that_lose_their_channels_are_closed_and_others_kept() {
    let s = TestServer::start();
    let mut admin = Conn::open(&s);
    admin.call(&[
        "ACL",
        "SETUSER",
        "ps",
        "on",
        ">pw",
        "+@all",
        "resetchannels",
        "&keep",
        "&drop",
        "&p:*",
    ]);
    let subscriber = |cmd: &str, name: &str| {
        let mut c = Conn::open(&s);
        c.call(&["AUTH", "ps", "pw"]);
        c.call(&[cmd, name]);
        c
    };
    let mut keeps = subscriber("SUBSCRIBE", "keep");
    let mut drops = subscriber("SSUBSCRIBE", "drop");
    let mut pattern = subscriber("PSUBSCRIBE", "p:*");
    // Adding channels revokes nothing.
    admin.call(&["ACL", "SETUSER", "ps", "&more"]);
    assert_eq!(admin.int(&["PUBLISH", "keep", "still"]), 1);
    assert_eq!(keeps.read(), message("keep", "still"));
    // Taking "drop" and "p:*" away closes their subscribers at once.
    admin.call(&["ACL", "SETUSER", "ps", "resetchannels", "&keep", "&p:x"]);
    let Frame::Bulk(list) = admin.call(&["CLIENT", "LIST"]) else {
        panic!("CLIENT LIST is a bulk")
    };
    let list = String::from_utf8(list).unwrap();
    assert_eq!(list.matches("user=ps").count(), 1, "{list}");
    assert!(drops.closed());
    assert!(pattern.closed());
    assert_eq!(admin.int(&["PUBLISH", "keep", "again"]), 1);
    assert_eq!(keeps.read(), message("keep", "again"));
    wait_until(
        "the closed subscriber's pattern to go",
        Duration::from_secs(20),
        || admin.int(&["PUBSUB", "NUMPAT"]) == 0,
    );
}

// ---------------------------------------------------------------------------
// Keyspace notifications.

/// A subscriber to every keyevent channel, with notify-keyspace-events set
/// to `flags`, and a client to run the commands.
fn keyevents(s: &TestServer, flags: &str) -> (Conn, Conn) {
    let mut c = Conn::open(s);
    // The sentinel of `expect_events` exists before anything is notified.
    c.call(&["CONFIG", "SET", "notify-keyspace-events", ""]);
    c.call(&["SET", "sentinel", "x"]);
    assert_eq!(
        c.call(&["CONFIG", "SET", "notify-keyspace-events", flags]),
        Frame::Simple("OK".into())
    );
    let mut sub = Conn::open(s);
    assert_eq!(
        sub.call(&["PSUBSCRIBE", "__keyevent@*__:*"]),
        confirmation("psubscribe", Some("__keyevent@*__:*"), 1)
    );
    (c, sub)
}

/// The next keyevent: (database, event, key).
fn next_event(sub: &mut Conn) -> (u32, String, String) {
    let Frame::Array(parts) = sub.read() else {
        panic!("a pmessage is an array")
    };
    let [_, _, Frame::Bulk(channel), Frame::Bulk(key)] = parts.as_slice() else {
        panic!("not a pmessage: {parts:?}")
    };
    let channel = String::from_utf8(channel.clone()).unwrap();
    let rest = channel
        .strip_prefix("__keyevent@")
        .expect("a keyevent channel");
    let (db, event) = rest.split_once("__:").unwrap();
    (
        db.parse().unwrap(),
        event.to_string(),
        String::from_utf8(key.clone()).unwrap(),
    )
}

/// Reads the events `expected` ((event, key) in database 0), then checks
/// that nothing else came before a sentinel SET.
fn expect_events(c: &mut Conn, sub: &mut Conn, expected: &[(&str, &str)]) {
    for (i, (event, key)) in expected.iter().enumerate() {
        let (db, e, k) = next_event(sub);
        assert_eq!((db, e.as_str(), k.as_str()), (0, *event, *key), "event {i}");
    }
    c.call(&["SET", "sentinel", "x"]);
    assert_eq!(
        next_event(sub),
        (0, "set".into(), "sentinel".into()),
        "an unexpected event"
    );
}

#[test]
fn notifications_of_string_commands() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "EA");
    c.call(&["SET", "s", "1"]);
    c.call(&["SETEX", "t", "100", "v"]);
    c.call(&["INCR", "s"]);
    c.call(&["DECRBY", "s", "5"]);
    c.call(&["INCRBYFLOAT", "s", "1.5"]);
    c.call(&["APPEND", "s", "x"]);
    c.call(&["SETRANGE", "s", "0", "ab"]);
    c.call(&["SETRANGE", "s", "0", ""]);
    c.call(&["GETSET", "s", "v"]);
    c.call(&["MSET", "a", "1", "b", "2"]);
    c.call(&["GETEX", "t", "PERSIST"]);
    c.call(&["GETEX", "t", "EX", "50"]);
    c.call(&["GETDEL", "t"]);
    c.call(&["GET", "nothing"]);
    expect_events(
        &mut c,
        &mut sub,
        &[
            ("set", "s"),
            ("set", "t"),
            ("expire", "t"),
            ("incrby", "s"),
            ("incrby", "s"),
            ("incrbyfloat", "s"),
            ("append", "s"),
            ("setrange", "s"),
            ("set", "s"),
            ("set", "a"),
            ("set", "b"),
            ("persist", "t"),
            ("expire", "t"),
            ("del", "t"),
        ],
    );
}

#[test]
fn notifications_of_key_commands_and_the_keyspace_channel() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "KEA");
    let mut ks = Conn::open(&s);
    ks.call(&["PSUBSCRIBE", "__keyspace@0__:k*"]);
    c.call(&["SET", "k1", "v"]);
    c.call(&["EXPIRE", "k1", "100"]);
    c.call(&["PERSIST", "k1"]);
    c.call(&["RENAME", "k1", "k2"]);
    c.call(&["COPY", "k2", "k3"]);
    c.call(&["MOVE", "k3", "1"]);
    let Frame::Bulk(dump) = c.call(&["DUMP", "k2"]) else {
        panic!("DUMP is a bulk")
    };
    c.reader
        .get_mut()
        .write_all(&resp(&[b"RESTORE", b"k4", b"0", &dump]))
        .unwrap();
    assert_eq!(c.read(), Frame::Simple("OK".into()));
    c.call(&["EXPIRE", "k4", "-1"]);
    c.call(&["DEL", "k2", "nothing"]);
    // The keyspace channel carries the event as the message.
    for (key, event) in [
        ("k1", "set"),
        ("k1", "expire"),
        ("k1", "persist"),
        ("k1", "rename_from"),
    ] {
        let Frame::Array(m) = ks.read() else { panic!() };
        assert_eq!(m[2], b(&format!("__keyspace@0__:{key}")));
        assert_eq!(m[3], b(event));
    }
    let expected = [
        (0, "set", "k1"),
        (0, "expire", "k1"),
        (0, "persist", "k1"),
        (0, "rename_from", "k1"),
        (0, "rename_to", "k2"),
        (0, "copy_to", "k3"),
        (0, "move_from", "k3"),
        (1, "move_to", "k3"),
        (0, "restore", "k4"),
        (0, "del", "k4"),
        (0, "del", "k2"),
    ];
    for (i, (db, event, key)) in expected.iter().enumerate() {
        assert_eq!(
            next_event(&mut sub),
            (*db, event.to_string(), key.to_string()),
            "event {i}"
        );
    }
}

#[test]
fn notifications_of_expiry_lazy_and_active() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "Ex$");
    // Active expiry: nobody touches the key.
    c.call(&["SET", "soon", "v", "PX", "20"]);
    assert_eq!(next_event(&mut sub), (0, "set".into(), "soon".into()));
    assert_eq!(next_event(&mut sub), (0, "expired".into(), "soon".into()));
    // Lazy expiry, reported before the write that found the key expired.
    c.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    c.call(&["SET", "lazy", "v", "PX", "1"]);
    assert_eq!(next_event(&mut sub), (0, "set".into(), "lazy".into()));
    wait_until(
        "lazy to expire",
        Duration::from_secs(20),
        || matches!(c.call(&["PTTL", "lazy"]), Frame::Int(n) if n == -2),
    );
    // PTTL expired it, but events come at the end of the command.
    assert_eq!(next_event(&mut sub), (0, "expired".into(), "lazy".into()));
    c.call(&["SET", "lazy2", "v", "PX", "1"]);
    assert_eq!(next_event(&mut sub), (0, "set".into(), "lazy2".into()));
    std::thread::sleep(Duration::from_millis(5));
    c.call(&["APPEND", "lazy2", "w"]);
    assert_eq!(next_event(&mut sub), (0, "expired".into(), "lazy2".into()));
    assert_eq!(next_event(&mut sub), (0, "append".into(), "lazy2".into()));
    c.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    expect_events(&mut c, &mut sub, &[]);
}

#[test]
fn the_new_class_reports_key_creations_only() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "En$");
    c.call(&["SET", "k", "1"]);
    c.call(&["SET", "k", "2"]);
    c.call(&["RPUSH", "l", "a"]);
    c.call(&["RPUSH", "l", "b"]);
    expect_events(
        &mut c,
        &mut sub,
        &[("new", "k"), ("set", "k"), ("set", "k"), ("new", "l")],
    );
}

#[test]
fn notifications_of_list_commands() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "EA");
    c.call(&["RPUSH", "l", "a", "b", "c"]);
    c.call(&["LPUSH", "l", "z"]);
    c.call(&["LINSERT", "l", "BEFORE", "a", "y"]);
    c.call(&["LINSERT", "l", "BEFORE", "nope", "y"]);
    c.call(&["LSET", "l", "0", "x"]);
    c.call(&["LREM", "l", "0", "y"]);
    c.call(&["LTRIM", "l", "0", "2"]);
    c.call(&["LMOVE", "l", "m", "LEFT", "RIGHT"]);
    c.call(&["RPOP", "l", "5"]);
    c.call(&["LPOP", "m"]);
    expect_events(
        &mut c,
        &mut sub,
        &[
            ("rpush", "l"),
            ("lpush", "l"),
            ("linsert", "l"),
            ("lset", "l"),
            ("lrem", "l"),
            ("ltrim", "l"),
            ("rpush", "m"),
            ("lpop", "l"),
            ("rpop", "l"),
            ("del", "l"),
            ("lpop", "m"),
            ("del", "m"),
        ],
    );
    // A blocked client served by a push pops on its own behalf.
    let mut waiter = Conn::open(&s);
    waiter.send(&["BLPOP", "q", "0"]);
    wait_until("the BLPOP to block", Duration::from_secs(20), || {
        let Frame::Bulk(text) = c.call(&["INFO", "clients"]) else {
            panic!("INFO is a bulk")
        };
        String::from_utf8_lossy(&text).contains("blocked_clients:1")
    });
    c.call(&["RPUSH", "q", "job"]);
    assert_eq!(waiter.read(), Frame::Array(vec![b("q"), b("job")]));
    expect_events(
        &mut c,
        &mut sub,
        &[("rpush", "q"), ("lpop", "q"), ("del", "q")],
    );
}

#[test]
fn notifications_of_set_commands() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "EA");
    c.call(&["SADD", "s", "a", "b", "c"]);
    c.call(&["SADD", "s", "a"]);
    c.call(&["SREM", "s", "nope"]);
    c.call(&["SREM", "s", "a"]);
    c.call(&["SMOVE", "s", "t", "b"]);
    c.call(&["SPOP", "s"]);
    c.call(&["SADD", "u", "1", "2"]);
    c.call(&["SINTERSTORE", "i", "u", "t"]);
    c.call(&["SUNIONSTORE", "un", "u", "t"]);
    c.call(&["SDIFFSTORE", "un", "nothing"]);
    c.call(&["SPOP", "u", "5"]);
    expect_events(
        &mut c,
        &mut sub,
        &[
            ("sadd", "s"),
            ("srem", "s"),
            ("srem", "s"),
            ("sadd", "t"),
            ("spop", "s"),
            ("del", "s"),
            ("sadd", "u"),
            ("sunionstore", "un"),
            ("del", "un"),
            ("spop", "u"),
            ("del", "u"),
        ],
    );
}

#[test]
fn notifications_of_sorted_set_commands() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "EA");
    c.call(&["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"]);
    c.call(&["ZADD", "z", "NX", "1", "a"]);
    c.call(&["ZINCRBY", "z", "1", "a"]);
    c.call(&["ZREM", "z", "nope"]);
    c.call(&["ZREM", "z", "a"]);
    c.call(&["ZREMRANGEBYSCORE", "z", "0", "2"]);
    c.call(&["ZREMRANGEBYRANK", "z", "5", "6"]);
    c.call(&["ZPOPMIN", "z"]);
    c.call(&["ZUNIONSTORE", "u", "1", "z"]);
    c.call(&["ZRANGESTORE", "r", "u", "0", "-1"]);
    c.call(&["ZPOPMAX", "u", "3"]);
    expect_events(
        &mut c,
        &mut sub,
        &[
            ("zadd", "z"),
            ("zincr", "z"),
            ("zrem", "z"),
            ("zremrangebyscore", "z"),
            ("zpopmin", "z"),
            ("zunionstore", "u"),
            ("zrangestore", "r"),
            ("zpopmax", "u"),
            ("del", "u"),
        ],
    );
}

#[test]
fn notifications_of_geo_and_hyperloglog_commands() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "EA");
    // GEOADD is a ZADD; the STORE forms name themselves, and an empty
    // result deletes the destination ("del"), as geo.c does.
    c.call(&["GEOADD", "g", "13.361389", "38.115556", "Palermo"]);
    c.call(&["GEOADD", "g", "NX", "13.361389", "38.115556", "Palermo"]);
    c.call(&[
        "GEOSEARCHSTORE",
        "gs",
        "g",
        "FROMLONLAT",
        "13",
        "38",
        "BYRADIUS",
        "100",
        "km",
    ]);
    c.call(&["GEORADIUS", "g", "13", "38", "100", "km", "STORE", "gr"]);
    c.call(&[
        "GEOSEARCHSTORE",
        "gs",
        "g",
        "FROMLONLAT",
        "0",
        "0",
        "BYRADIUS",
        "1",
        "m",
    ]);
    c.call(&[
        "GEORADIUS",
        "nosuchkey",
        "13",
        "38",
        "100",
        "km",
        "STORE",
        "gr",
    ]);
    c.call(&[
        "GEOSEARCH",
        "g",
        "FROMLONLAT",
        "13",
        "38",
        "BYRADIUS",
        "100",
        "km",
    ]);
    // PFMERGE is announced as "pfadd" too; a PFADD that changes no
    // register, and PFCOUNT, announce nothing.
    c.call(&["PFADD", "h", "a", "b"]);
    c.call(&["PFADD", "h", "a"]);
    c.call(&["PFCOUNT", "h"]);
    c.call(&["PFMERGE", "m", "h"]);
    expect_events(
        &mut c,
        &mut sub,
        &[
            ("zadd", "g"),
            ("geosearchstore", "gs"),
            ("georadiusstore", "gr"),
            ("del", "gs"),
            ("del", "gr"),
            ("pfadd", "h"),
            ("pfadd", "m"),
        ],
    );
}

#[test]
fn notifications_of_hash_commands_and_field_expiry() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "EA");
    c.call(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    c.call(&["HSETNX", "h", "a", "9"]);
    c.call(&["HINCRBY", "h", "a", "1"]);
    c.call(&["HINCRBYFLOAT", "h", "a", "0.5"]);
    c.call(&["HDEL", "h", "a"]);
    c.call(&["HEXPIRE", "h", "100", "FIELDS", "1", "b"]);
    c.call(&["HPERSIST", "h", "FIELDS", "1", "b"]);
    c.call(&["HPEXPIRE", "h", "10", "FIELDS", "2", "b", "c"]);
    for (i, event) in [
        "hset",
        "hincrby",
        "hincrbyfloat",
        "hdel",
        "hexpire",
        "hpersist",
        "hexpire",
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(
            next_event(&mut sub),
            (0, event.to_string(), "h".into()),
            "event {i}"
        );
    }
    // The fields' time passes: the active cycle deletes them, then the key.
    assert_eq!(next_event(&mut sub), (0, "hexpired".into(), "h".into()));
    assert_eq!(next_event(&mut sub), (0, "del".into(), "h".into()));
    c.call(&["HSETEX", "g", "PX", "100000", "FIELDS", "1", "f", "v"]);
    c.call(&["HGETDEL", "g", "FIELDS", "1", "f"]);
    expect_events(
        &mut c,
        &mut sub,
        &[("hset", "g"), ("hexpire", "g"), ("hdel", "g"), ("del", "g")],
    );
}

#[test]
fn notifications_of_bitmaps_sort_and_the_goblin_family() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "EA");
    c.call(&["SETBIT", "b", "7", "1"]);
    c.call(&["SETBIT", "b", "7", "1"]);
    c.call(&["BITFIELD", "b", "SET", "u8", "8", "255"]);
    c.call(&["BITOP", "NOT", "n", "b"]);
    c.call(&["RPUSH", "l", "2", "1"]);
    c.call(&["SORT", "l", "STORE", "sorted"]);
    c.call(&["SET", "stock", "2"]);
    c.call(&["GOBLIN.DECRPOS", "stock"]);
    c.call(&["GOBLIN.INCRTTL", "hits", "1", "60000"]);
    c.call(&["SET", "lock", "me"]);
    c.call(&["GOBLIN.CAD", "lock", "me"]);
    c.call(&["HSET", "hw", "f", "1"]);
    c.call(&["GOBLIN.HSETGT", "hw", "f", "5"]);
    expect_events(
        &mut c,
        &mut sub,
        &[
            ("setbit", "b"),
            ("setbit", "b"),
            ("set", "n"),
            ("rpush", "l"),
            ("sortstore", "sorted"),
            ("set", "stock"),
            ("incrby", "stock"),
            ("incrby", "hits"),
            ("expire", "hits"),
            ("set", "lock"),
            ("del", "lock"),
            ("hset", "hw"),
            ("hset", "hw"),
        ],
    );
}

#[test]
fn notify_keyspace_events_config_and_class_masks() {
    let s = TestServer::start();
    let mut c = Conn::open(&s);
    let get = |c: &mut Conn| match c.call(&["CONFIG", "GET", "notify-keyspace-events"]) {
        Frame::Array(v) => v[1].clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(get(&mut c), b(""));
    for (set, shown) in [
        ("KA", "AK"),
        ("gKE", "gKE"),
        ("$lshzxeKE", "$lshzxeKE"),
        ("Em", "Em"),
    ] {
        c.call(&["CONFIG", "SET", "notify-keyspace-events", set]);
        assert_eq!(get(&mut c), b(shown));
    }
    assert_eq!(
        c.call(&["CONFIG", "SET", "notify-keyspace-events", "KEQ"]),
        Frame::Error("ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into())
    );
    // Only lists, as keyevents; "keymiss" with 'm' (never part of 'A').
    let (mut c, mut sub) = keyevents(&s, "Elm");
    c.call(&["SET", "k", "v"]);
    c.call(&["LPUSH", "l", "a"]);
    c.call(&["GET", "absent"]);
    c.call(&["HGET", "absent2", "f"]);
    assert_eq!(next_event(&mut sub), (0, "lpush".into(), "l".into()));
    assert_eq!(next_event(&mut sub), (0, "keymiss".into(), "absent".into()));
    assert_eq!(
        next_event(&mut sub),
        (0, "keymiss".into(), "absent2".into())
    );
    // Off again: nothing is published.
    c.call(&["CONFIG", "SET", "notify-keyspace-events", ""]);
    c.call(&["LPUSH", "l", "b"]);
    c.call(&["CONFIG", "SET", "notify-keyspace-events", "El"]);
    c.call(&["LPUSH", "l", "c"]);
    assert_eq!(next_event(&mut sub), (0, "lpush".into(), "l".into()));
}

#[test]
fn a_subscribed_client_gets_the_notification_of_its_own_write_first() {
    let s = TestServer::start();
    let mut c = Conn::open(&s);
    c.call(&["CONFIG", "SET", "notify-keyspace-events", "E$"]);
    c.call(&["HELLO", "3"]);
    c.call(&["SUBSCRIBE", "__keyevent@0__:set"]);
    assert_eq!(
        c.call(&["SET", "k", "v"]),
        Frame::Push(vec![b("message"), b("__keyevent@0__:set"), b("k")])
    );
    assert_eq!(c.read(), Frame::Simple("OK".into()));
    // Inside a transaction and a script alike.
    c.call(&["MULTI"]);
    c.call(&["SET", "k2", "v"]);
    // Redis 7.0 writes the push where it happens: inside EXEC's array,
    // before the SET's own reply.
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Array(vec![Frame::Push(vec![
            b("message"),
            b("__keyevent@0__:set"),
            b("k2")
        ])])
    );
    assert_eq!(c.read(), Frame::Simple("OK".into()));
    // A script's commands run as its own client: the push follows.
    assert_eq!(
        c.call(&["EVAL", "return redis.call('SET', KEYS[1], 'v')", "1", "k3"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(
        c.read(),
        Frame::Push(vec![b("message"), b("__keyevent@0__:set"), b("k3")])
    );
}

#[test]
fn notifications_of_stream_commands() {
    let s = TestServer::start();
    let (mut c, mut sub) = keyevents(&s, "E$t");
    c.call(&["XGROUP", "CREATE", "st", "g", "$", "MKSTREAM"]);
    c.call(&["XGROUP", "CREATECONSUMER", "st", "g", "bob"]);
    // An existing consumer is not created again, and says nothing.
    c.call(&["XGROUP", "CREATECONSUMER", "st", "g", "bob"]);
    c.call(&["XADD", "st", "1-1", "f", "v"]);
    c.call(&["XADD", "st", "MAXLEN", "1", "2-1", "f", "v"]);
    c.call(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "st", ">"]);
    c.call(&["XCLAIM", "st", "g", "mike", "0", "2-1", "FORCE"]);
    c.call(&["XAUTOCLAIM", "st", "g", "zoe", "0", "0"]);
    // Neither deletes a consumer that is not there nor an absent entry.
    c.call(&["XGROUP", "DELCONSUMER", "st", "g", "lee"]);
    c.call(&["XDEL", "st", "9-9"]);
    c.call(&["XGROUP", "DELCONSUMER", "st", "g", "bob"]);
    c.call(&["XGROUP", "SETID", "st", "g", "0"]);
    c.call(&["XSETID", "st", "5-0"]);
    c.call(&["XADD", "st", "6-0", "f", "v"]);
    c.call(&["XTRIM", "st", "MAXLEN", "1"]);
    c.call(&["XDEL", "st", "6-0"]);
    c.call(&["XGROUP", "DESTROY", "st", "g"]);
    c.call(&["XGROUP", "DESTROY", "st", "g"]);
    expect_events(
        &mut c,
        &mut sub,
        &[
            ("xgroup-create", "st"),
            ("xgroup-createconsumer", "st"),
            ("xadd", "st"),
            ("xadd", "st"),
            ("xtrim", "st"),
            ("xgroup-createconsumer", "st"),
            ("xgroup-createconsumer", "st"),
            ("xgroup-createconsumer", "st"),
            ("xgroup-delconsumer", "st"),
            ("xgroup-setid", "st"),
            ("xsetid", "st"),
            ("xadd", "st"),
            ("xtrim", "st"),
            ("xdel", "st"),
            ("xgroup-destroy", "st"),
        ],
    );
}
