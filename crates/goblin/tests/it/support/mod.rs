//! The three places a `Cache` runs in the tests: an embedded store,
//! goblin-server in-process on port 0, and Debian's redis-server 7.0 as a
//! child process. Each fixture gives the cache under test and a plain
//! connection to the same data (`raw`) to set states up and read them back.

#![allow(dead_code)]

use goblin::cache::Cache;
use goblin::{Reply, Store};

// The reference Redis server of goblin-server's tests, shared rather than
// copied.
pub mod cluster;
#[path = "../../../../goblin-server/tests/it/goblin_support/mod.rs"]
pub mod goblin_support;
#[path = "../../../../goblin-server/tests/it/common/tmpfs.rs"]
pub mod tmpfs;
use goblin_support::RedisProcess;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Direct access to the data behind a cache.
pub enum Raw {
    Embedded(Store),
    Remote(goblin::cache::redis::aio::MultiplexedConnection),
}

impl Raw {
    /// Runs one command; error replies are `Reply::Error` values.
    pub async fn cmd<A: AsRef<[u8]>>(&self, args: &[A]) -> Reply {
        match self {
            Raw::Embedded(store) => match store.execute(args.iter().map(|a| a.as_ref())).await {
                Ok(r) => r,
                Err(goblin::Error::Reply(text)) => Reply::Error(text),
                Err(e) => panic!("{e}"),
            },
            Raw::Remote(conn) => {
                let mut conn = conn.clone();
                let mut cmd = redis::cmd(std::str::from_utf8(args[0].as_ref()).unwrap());
                for a in &args[1..] {
                    cmd.arg(a.as_ref());
                }
                match cmd.query_async::<redis::Value>(&mut conn).await {
                    Ok(v) => from_value(v),
                    Err(e) if e.code().is_some() => Reply::Error(
                        format!("{} {}", e.code().unwrap(), e.detail().unwrap_or("")).into(),
                    ),
                    Err(e) => panic!("transport error: {e}"),
                }
            }
        }
    }

    pub async fn int<A: AsRef<[u8]>>(&self, args: &[A]) -> i64 {
        match self.cmd(args).await {
            Reply::Int(n) => n,
            other => panic!("expected an integer reply, got {other:?}"),
        }
    }

    pub async fn ok<A: AsRef<[u8]>>(&self, args: &[A]) {
        match self.cmd(args).await {
            Reply::Status(s) if s == "OK" => {}
            other => panic!("expected OK, got {other:?}"),
        }
    }

    /// The bytes at `key`, None when absent.
    pub async fn get(&self, key: &str) -> Option<Vec<u8>> {
        match self.cmd(&["GET", key]).await {
            Reply::Bulk(b) => Some(b),
            Reply::Nil => None,
            other => panic!("expected a bulk reply, got {other:?}"),
        }
    }

    pub async fn set(&self, key: &str, value: &str) {
        self.ok(&["SET", key, value]).await;
    }

    /// The absolute expiry in Unix ms: -1 without one, -2 when absent.
    pub async fn expire_time(&self, key: &str) -> i64 {
        self.int(&["PEXPIRETIME", key]).await
    }

    pub async fn exists(&self, key: &str) -> bool {
        self.int(&["EXISTS", key]).await == 1
    }

    /// The server's clock in Unix ms (TIME, truncated as Redis's mstime).
    pub async fn time_ms(&self) -> i64 {
        match self.cmd(&["TIME"]).await {
            Reply::Array(t) => {
                let n = |r: &Reply| -> i64 {
                    match r {
                        Reply::Bulk(b) => std::str::from_utf8(b).unwrap().parse().unwrap(),
                        other => panic!("TIME gave {other:?}"),
                    }
                };
                n(&t[0]) * 1000 + n(&t[1]) / 1000
            }
            other => panic!("TIME gave {other:?}"),
        }
    }

    /// Waits until `key` has expired: its deadline is behind the clock of
    /// this machine (which the servers share), and the server no longer
    /// has it.
    pub async fn await_expiry(&self, key: &str, deadline_ms: i64) {
        loop {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64;
            if now > deadline_ms && !self.exists(key).await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

fn from_value(v: redis::Value) -> Reply {
    match v {
        redis::Value::Nil => Reply::Nil,
        redis::Value::Int(n) => Reply::Int(n),
        redis::Value::BulkString(b) => Reply::Bulk(b),
        redis::Value::Okay => Reply::Status("OK".into()),
        redis::Value::SimpleString(s) => Reply::Status(s),
        redis::Value::Array(items) => Reply::Array(items.into_iter().map(from_value).collect()),
        other => panic!("unexpected reply {other:?}"),
    }
}

/// What keeps a fixture's server alive.
enum Guard {
    None,
    Redis(RedisProcess),
}

pub struct Fixture {
    pub cache: Cache,
    pub raw: Raw,
    pub driver: &'static str,
    _guard: Guard,
}

impl Fixture {
    pub async fn embedded() -> Fixture {
        let store = Store::open_in_memory();
        Fixture {
            cache: Cache::embedded(store.clone()),
            raw: Raw::Embedded(store),
            driver: "embedded",
            _guard: Guard::None,
        }
    }

    /// goblin-server in this process, on a free port, served by the test's
    /// runtime.
    pub async fn goblin_server() -> Fixture {
        let config = goblin_engine::Config::new();
        for (k, v) in [
            ("port", "0"),
            ("bind", "127.0.0.1"),
            ("save", ""),
            ("appendonly", "no"),
            ("dir", std::env::temp_dir().to_str().unwrap()),
        ] {
            config.set_initial(k, v).unwrap();
        }
        let engine = goblin_engine::Engine::new(config);
        let server = goblin_server::Server::bind(engine).await.unwrap();
        let addr = server.local_addr();
        tokio::spawn(server.run());
        Fixture::remote(addr, "goblin-server", Guard::None).await
    }

    /// Debian's redis-server 7.0, started for this test.
    pub async fn redis() -> Fixture {
        let redis = RedisProcess::start();
        let addr = redis.addr;
        let f = Fixture::remote(addr, "redis-server", Guard::Redis(redis)).await;
        match f.raw.cmd(&["INFO", "server"]).await {
            Reply::Bulk(info) => {
                let info = String::from_utf8_lossy(&info);
                assert!(
                    info.contains("redis_version:7."),
                    "the reference is Redis 7: {info}"
                );
            }
            other => panic!("INFO gave {other:?}"),
        }
        f
    }

    async fn remote(addr: SocketAddr, driver: &'static str, guard: Guard) -> Fixture {
        let url = format!("redis://{addr}/");
        let cache = Cache::connect(&url).await.unwrap();
        // The steps the driver chose: the GOBLIN.* commands on Goblin, the
        // scripts on Redis.
        let steps = format!("{cache:?}");
        let expected = if driver == "redis-server" {
            "incrttl: false, decrby: false, scripts: true"
        } else {
            "incrttl: true, decrby: true"
        };
        assert!(steps.contains(expected), "{driver}: {steps}");
        let raw = redis::Client::open(url)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        Fixture {
            cache,
            raw: Raw::Remote(raw),
            driver,
            _guard: guard,
        }
    }
}

impl Raw {
    /// PEXPIRE on a key that exists.
    pub async fn pexpire(&self, key: &str, ms: i64) {
        assert_eq!(
            self.int(&["PEXPIRE", key, ms.to_string().as_str()]).await,
            1
        );
    }
}
