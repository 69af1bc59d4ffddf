//! A goblin-server started in-process on an ephemeral port, for tests.

#![allow(dead_code)]

pub mod process;
pub mod tmpfs;

use goblin_engine::{Config, Engine};
use goblin_server::Server;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct TestServer {
    pub addr: SocketAddr,
    pub engine: Arc<Engine>,
    _runtime: tokio::runtime::Runtime,
    pub dir: std::path::PathBuf,
}

impl TestServer {
    /// Starts a server with the given extra configuration directives.
    pub fn start_with(directives: &[(&str, &str)]) -> TestServer {
        let dir = std::env::temp_dir().join(format!(
            "goblin-test-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let config = Config::new();
        config.set_initial("port", "0").unwrap();
        config.set_initial("dir", dir.to_str().unwrap()).unwrap();
        config.set_initial("enable-debug-command", "yes").unwrap();
        config.set_initial("appendonly", "no").unwrap();
        config.set_initial("save", "").unwrap();
        for (k, v) in directives {
            config.set_initial(k, v).unwrap();
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let engine = Engine::new(config);
        let server = runtime.block_on(Server::bind(engine.clone())).unwrap();
        let addr = server.local_addr();
        runtime.spawn(server.run());
        TestServer {
            addr,
            engine,
            _runtime: runtime,
            dir,
        }
    }

    pub fn start() -> TestServer {
        TestServer::start_with(&[])
    }

    pub fn raw(&self) -> RawClient {
        RawClient::connect(self.addr)
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://{}/", self.addr))
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A client that sends raw bytes and reads raw replies.
pub struct RawClient {
    pub stream: TcpStream,
}

impl RawClient {
    pub fn connect(addr: SocketAddr) -> RawClient {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        RawClient { stream }
    }

    /// Connects to `addr` from the loopback address `source` (127.0.0.2,
    /// say): a client the server sees as coming from another host.
    pub fn connect_from(addr: SocketAddr, source: std::net::IpAddr) -> RawClient {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let stream = runtime
            .block_on(async {
                let socket = match source {
                    std::net::IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
                    std::net::IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
                };
                socket.bind(SocketAddr::new(source, 0))?;
                socket.connect(addr).await?.into_std()
            })
            .unwrap();
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        RawClient { stream }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Reads until `expected.len()` bytes arrived (or the peer closed) and
    /// returns what was read.
    pub fn read_exact_len(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while out.len() < len {
            match self.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => panic!("read failed after {:?}: {e}", String::from_utf8_lossy(&out)),
            }
        }
        out
    }

    /// Sends `request` and asserts the reply is exactly `expected`.
    pub fn roundtrip(&mut self, request: &[u8], expected: &[u8]) {
        self.send(request);
        let got = self.read_exact_len(expected.len());
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected),
            "reply to {:?}",
            String::from_utf8_lossy(request)
        );
    }

    /// True when the server closed the connection (reads EOF).
    pub fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 64];
        matches!(self.stream.read(&mut buf), Ok(0) | Err(_))
    }
}

/// Encodes a command as a RESP multibulk.
pub fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The error a command was expected to fail with, as the server sent it
/// ("ERR syntax error": code and detail).
pub fn err_text<T: std::fmt::Debug>(r: redis::RedisResult<T>) -> String {
    let e = r.expect_err("expected an error");
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        _ => e.to_string(),
    }
}

/// CONFIG SET one parameter.
pub fn config_set(c: &mut redis::Connection, name: &str, value: impl redis::ToRedisArgs) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(c)
        .unwrap();
}

/// The value of `field` in INFO's `section` ("everything" for all).
pub fn info_field(c: &mut redis::Connection, section: &str, field: &str) -> String {
    let info: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
        .trim()
        .to_string()
}

/// Polls `cond` until it holds, and panics naming `what` once `limit` has
/// passed without it: for what background work brings about (active
/// expiry, a client blocking, a closed connection going away). The limit
/// only bounds a failure; no test asserts how long a wait took.
pub fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < limit,
            "{what}: not reached within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits (up to 10 s) until a script or function running on another
/// connection makes the server answer PING on `c` with BUSY.
pub fn wait_busy(c: &mut redis::Connection) {
    wait_until(
        "a running script to make the server busy",
        Duration::from_secs(10),
        || {
            let r: redis::RedisResult<String> = redis::cmd("PING").query(c);
            r.is_err_and(|e| e.code() == Some("BUSY"))
        },
    );
}

/// A bulk string reply, as the `redis` crate gives it.
pub fn bulk(s: &str) -> redis::Value {
    redis::Value::BulkString(s.as_bytes().to_vec())
}
