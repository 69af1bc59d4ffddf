//! What the GOBLIN.* tests share: a plain RESP2 connection that returns
//! replies exactly as sent (errors included, as values), a reference
//! `redis-server` run as a child process, a snapshot of one key (type,
//! value, absolute expiry) to check that a call changed what it should
//! and nothing else, and many clients racing on one server.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

/// One RESP2 reply. Errors are values here (not `Err`), so that a test
/// compares an error reply with another reply as it compares integers.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Reply>),
    NilArray,
}

impl Reply {
    pub fn int(&self) -> i64 {
        match self {
            Reply::Int(n) => *n,
            other => panic!("expected an integer reply, got {other:?}"),
        }
    }

    pub fn bulk(&self) -> Option<Vec<u8>> {
        match self {
            Reply::Bulk(b) => Some(b.clone()),
            Reply::Nil => None,
            other => panic!("expected a bulk reply, got {other:?}"),
        }
    }

    pub fn text(&self) -> String {
        match self {
            Reply::Status(s) => s.clone(),
            Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("expected a string reply, got {other:?}"),
        }
    }

    pub fn array(&self) -> Vec<Reply> {
        match self {
            Reply::Array(items) => items.clone(),
            other => panic!("expected an array reply, got {other:?}"),
        }
    }
}

/// A blocking RESP2 connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    pub fn connect(addr: SocketAddr) -> Conn {
        let stream =
            TcpStream::connect(addr).unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"));
        Conn::from_stream(stream)
    }

    fn from_stream(stream: TcpStream) -> Conn {
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Conn {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    /// Sends one command and reads its reply.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Reply {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            let a = a.as_ref();
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&out).unwrap();
        self.read_reply()
    }

    /// `call` with string arguments, for readability at call sites.
    pub fn cmd(&mut self, args: &[&str]) -> Reply {
        self.call(args)
    }

    fn line(&mut self) -> String {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line).unwrap();
        assert!(line.ends_with(b"\r\n"), "truncated reply line {line:?}");
        line.truncate(line.len() - 2);
        String::from_utf8(line).unwrap()
    }

    fn read_reply(&mut self) -> Reply {
        let line = self.line();
        let (kind, rest) = line.split_at(1);
        match kind {
            "+" => Reply::Status(rest.to_string()),
            "-" => Reply::Error(rest.to_string()),
            ":" => Reply::Int(rest.parse().unwrap()),
            "$" => {
                let len: i64 = rest.parse().unwrap();
                if len < 0 {
                    return Reply::Nil;
                }
                let mut buf = vec![0u8; len as usize + 2];
                self.reader.read_exact(&mut buf).unwrap();
                buf.truncate(len as usize);
                Reply::Bulk(buf)
            }
            "*" => {
                let len: i64 = rest.parse().unwrap();
                if len < 0 {
                    return Reply::NilArray;
                }
                Reply::Array((0..len).map(|_| self.read_reply()).collect())
            }
            _ => panic!("unexpected reply line {line:?}"),
        }
    }

    /// The server's clock (TIME) in Unix milliseconds, truncated as Redis's
    /// mstime() truncates it.
    pub fn time_ms(&mut self) -> i64 {
        let t = self.cmd(&["TIME"]).array();
        let secs: i64 = t[0].text().parse().unwrap();
        let micros: i64 = t[1].text().parse().unwrap();
        secs * 1000 + micros / 1000
    }
}

/// A reference Redis server: Debian's `redis-server` 7.0, started as a
/// child process on a free port, killed when dropped.
pub struct RedisProcess {
    pub addr: SocketAddr,
    child: Child,
}

impl RedisProcess {
    pub fn start() -> RedisProcess {
        RedisProcess::start_with(&[])
    }

    /// `start` with more `--directive value` arguments (a `--dir`, an
    /// append-only file...).
    pub fn start_with(extra: &[&str]) -> RedisProcess {
        RedisProcess::start_program("redis-server", extra)
    }

    /// `start_with` for another server that takes redis-server's command
    /// line: goblin-server itself, as a child process with its own files.
    pub fn start_program(program: &str, extra: &[&str]) -> RedisProcess {
        let mut last_error = String::new();
        // A port found free can be taken before redis-server binds it (by
        // another test's server, which may then answer in its place): try
        // a few.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = Command::new(program)
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn();
            let child = match child {
                Ok(c) => c,
                Err(e) => panic!(
                    "cannot run `{program}` ({e}): these tests compare Goblin with a \
                     real Redis 7.0 and need Debian's redis-server on the PATH \
                     (apt-get install redis-server, or scripts/setup)"
                ),
            };
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            // Owned at once, so that a failed check below kills it too.
            let mut process = RedisProcess { addr, child };
            // Await the server: it is up when it answers PING, gone when
            // the process exits (port taken).
            let start = Instant::now();
            loop {
                if let Some(status) = process.child.try_wait().unwrap() {
                    let mut out = String::new();
                    process
                        .child
                        .stdout
                        .take()
                        .unwrap()
                        .read_to_string(&mut out)
                        .ok();
                    last_error = format!("{program} exited with {status}: {out}");
                    break;
                }
                // Before the server listens, a connection to a port of the
                // ephemeral range can be a socket connected to itself.
                let connected = TcpStream::connect(addr)
                    .ok()
                    .filter(|s| s.local_addr().ok() != s.peer_addr().ok());
                if let Some(stream) = connected {
                    let mut conn = Conn::from_stream(stream);
                    if conn.cmd(&["PING"]) == Reply::Status("PONG".into()) {
                        let info = conn.cmd(&["INFO", "server"]).text();
                        let pid = process.child.id();
                        if !info.contains(&format!("\r\nprocess_id:{pid}\r\n")) {
                            last_error = format!("another server answered on port {port}");
                            break;
                        }
                        assert!(
                            info.contains("redis_version:7.0."),
                            "the reference server must be Redis 7.0, found:\n{info}"
                        );
                        return process;
                    }
                }
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "{program} did not answer on port {port}"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        panic!("could not start {program}: {last_error}");
    }

    pub fn conn(&self) -> Conn {
        Conn::connect(self.addr)
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A key's value, in a form two servers can be compared by.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    None,
    Str(Vec<u8>),
    /// Field/value pairs, sorted by field.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// Member/score pairs, sorted by member.
    ZSet(Vec<(Vec<u8>, f64)>),
    /// Elements (lists in order, sets sorted).
    Elements(Vec<Vec<u8>>),
}

/// A key as a client sees it: its value and its absolute expiry
/// (PEXPIRETIME: -2 absent, -1 no TTL, else Unix ms).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyState {
    pub data: Data,
    pub expire_at: i64,
}

fn pairs(items: Vec<Reply>) -> Vec<(Vec<u8>, Vec<u8>)> {
    items
        .chunks(2)
        .map(|p| (p[0].bulk().unwrap(), p[1].bulk().unwrap()))
        .collect()
}

/// Reads a key's value and expiry without changing either.
pub fn snapshot(conn: &mut Conn, key: &str) -> KeyState {
    let kind = conn.cmd(&["TYPE", key]).text();
    let data = match kind.as_str() {
        "none" => Data::None,
        "string" => Data::Str(conn.cmd(&["GET", key]).bulk().unwrap()),
        "hash" => {
            let mut fields = pairs(conn.cmd(&["HGETALL", key]).array());
            fields.sort();
            Data::Hash(fields)
        }
        "zset" => {
            let mut members: Vec<(Vec<u8>, f64)> =
                pairs(conn.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"]).array())
                    .into_iter()
                    .map(|(m, s)| {
                        let s = String::from_utf8(s).unwrap();
                        let score = match s.as_str() {
                            "inf" => f64::INFINITY,
                            "-inf" => f64::NEG_INFINITY,
                            _ => s.parse().unwrap(),
                        };
                        (m, score)
                    })
                    .collect();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Data::ZSet(members)
        }
        "list" => Data::Elements(
            conn.cmd(&["LRANGE", key, "0", "-1"])
                .array()
                .iter()
                .map(|r| r.bulk().unwrap())
                .collect(),
        ),
        "set" => {
            let mut members: Vec<Vec<u8>> = conn
                .cmd(&["SMEMBERS", key])
                .array()
                .iter()
                .map(|r| r.bulk().unwrap())
                .collect();
            members.sort();
            Data::Elements(members)
        }
        other => panic!("unexpected type {other} for key {key}"),
    };
    let expire_at = conn.cmd(&["PEXPIRETIME", key]).int();
    KeyState { data, expire_at }
}

/// Runs `clients` threads, each with its own connection to `addr`,
/// released at once; returns what each returned.
pub fn race<T: Send + 'static>(
    addr: SocketAddr,
    clients: usize,
    body: impl Fn(usize, &mut Conn) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let barrier = Arc::new(Barrier::new(clients));
    let body = Arc::new(body);
    let handles: Vec<_> = (0..clients)
        .map(|i| {
            let mut conn = Conn::connect(addr);
            let barrier = barrier.clone();
            let body = body.clone();
            thread::spawn(move || {
                barrier.wait();
                body(i, &mut conn)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

// ---------------------------------------------------------------------------
// Differential tests: comparing two servers' keys.

/// Two snapshots of one key agree: same data, sorted-set scores and the
/// TTL within `tolerance` ms (deadlines read from two clocks).
pub fn same_state(g: &KeyState, r: &KeyState, tolerance: i64) -> bool {
    let close = |a: f64, b: f64| a == b || (a - b).abs() <= tolerance as f64;
    let data = match (&g.data, &r.data) {
        (Data::ZSet(a), Data::ZSet(b)) => {
            // Lease deadlines: now + ms on each server.
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ma, sa), (mb, sb))| ma == mb && close(*sa, *sb))
        }
        (a, b) => a == b,
    };
    let ttl = if g.expire_at < 0 || r.expire_at < 0 {
        g.expire_at == r.expire_at
    } else {
        (g.expire_at - r.expire_at).abs() <= tolerance
    };
    data && ttl
}

// Arguments and stored values of the differential tests, drawn from the
// cases the contract names.

/// Long TTLs, at least 10^6 ms apart: a deadline computed from the wrong
/// one is off by far more than the tolerance.
pub const LONG_TTLS: &[i64] = &[
    1_000_000,
    3_000_000,
    10_000_000,
    86_400_000,
    1_000_000_000,
    100_000_000_000,
];

/// Integers that Redis's string2ll rejects.
pub const NOT_INTEGERS: &[&str] = &[
    "abc",
    "",
    "1.5",
    " 5",
    "5 ",
    "+5",
    "007",
    "-0",
    "0x10",
    "1e3",
    "9223372036854775808",
    "-9223372036854775809",
    "12345678901234567890",
];

pub const EDGES: &[i64] = &[
    i64::MAX,
    i64::MAX - 1,
    i64::MIN,
    i64::MIN + 1,
    1 << 53,
    (1 << 53) + 1,
    -(1 << 53) - 1,
    1 << 62,
    -(1 << 62),
];
