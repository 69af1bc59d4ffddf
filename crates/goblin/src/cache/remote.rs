//! The remote driver: goblin-server, Redis or Valkey through any redis-rs
//! connection (the `ConnectionManager` that [`Cache::connect`] makes, which
//! reconnects in the background, or a connection of the caller's own), and
//! a Redis Cluster through redis-rs's cluster connection, which sends each
//! request to the node of its key's slot.
//!
//! Every operation is one request on one key that the server runs
//! atomically:
//!
//! | operation | server with GOBLIN.* | Redis/Valkey 7 |
//! | --- | --- | --- |
//! | get | GET | GET |
//! | put | SET, SET PX | SET, SET PX |
//! | delete | DEL | DEL |
//! | ttl | PTTL | PTTL |
//! | increment | INCRBY | INCRBY |
//! | decrement | GOBLIN.DECRBY | DECRBY; for i64::MIN, which DECRBY refuses, [`scripts::DECREMENT`] |
//! | increment_with_ttl | GOBLIN.INCRTTL | [`scripts::INCREMENT_WITH_TTL`] |
//! | throttle | CL.THROTTLE | [`super::throttle::GCRA`] |
//!
//! On connecting, the driver reads the server's version (INFO server's
//! `redis_version`; goblin-server reports the Redis version it matches) and
//! refuses a Redis older than 7.0, whose PEXPIRE has no NX and would fail
//! half way through the script, after its INCRBY. A server that does not
//! say its version (INFO refused by an ACL) gets no scripts. Which steps
//! the server has is asked once (`COMMAND INFO` of the GOBLIN.* commands and
//! of EVALSHA/EVAL); on a cluster both go to the nodes that redis-rs picks,
//! so every node must have the same version and the same module. A script runs as
//! EVALSHA, and as EVAL when the server does not have it cached (NOSCRIPT),
//! which caches it for the next call. Without the command and without
//! scripting the operation is [`Error::Unsupported`], and nothing is sent:
//! separate calls (an INCRBY, then a PEXPIRE) would not be atomic.

#[cfg(doc)]
use super::Cache;
use super::{remaining, scripts, ttl_of_pttl, Driver, Error, Ttl};
use redis::aio::ConnectionLike;
use redis::{ErrorKind, RedisError, ServerErrorKind, Value};
use std::fmt;
use std::time::Duration;

/// The remote driver over a redis-rs connection `C` (see
/// [`Cache::connect`] and [`Cache::from_connection`]).
#[derive(Clone)]
pub struct RemoteDriver<C> {
    conn: C,
    steps: Steps,
}

/// The cluster driver: the remote driver over redis-rs's cluster
/// connection (see [`Cache::connect_cluster`]).
pub type ClusterDriver = RemoteDriver<redis::cluster_async::ClusterConnection>;

impl<C> fmt::Debug for RemoteDriver<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteDriver")
            .field("connection", &std::any::type_name::<C>())
            .field("steps", &self.steps)
            .finish()
    }
}

/// The atomic steps a server offers, as the remote driver found them on
/// connecting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Steps {
    /// GOBLIN.INCRTTL, for `increment_with_ttl`.
    pub incrttl: bool,
    /// GOBLIN.DECRBY, for `decrement` (of `i64::MIN` too).
    pub decrby: bool,
    /// Lua scripts (EVALSHA and EVAL) on a Redis 7.0 or later.
    pub scripts: bool,
    /// CL.THROTTLE (goblin-server, or redis-cell), for `throttle`.
    pub throttle: bool,
}

/// A script with its SHA1, for EVALSHA.
pub(super) struct Script {
    code: &'static str,
    sha: String,
}

impl Script {
    pub(super) fn new(code: &'static str) -> Script {
        Script {
            code,
            sha: redis::Script::new(code).get_hash().to_string(),
        }
    }
}

fn decrement_script() -> &'static Script {
    static S: std::sync::OnceLock<Script> = std::sync::OnceLock::new();
    S.get_or_init(|| Script::new(scripts::DECREMENT))
}

fn increment_with_ttl_script() -> &'static Script {
    static S: std::sync::OnceLock<Script> = std::sync::OnceLock::new();
    S.get_or_init(|| Script::new(scripts::INCREMENT_WITH_TTL))
}

impl<C> RemoteDriver<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// A driver over `conn`: checks the server's version, and asks which
    /// atomic steps it offers. Each call runs on a clone of `conn`, so it
    /// should be one that clones cheaply onto the same connection (a
    /// multiplexed connection, a `ConnectionManager`, a cluster
    /// connection).
    pub async fn new(conn: C) -> Result<RemoteDriver<C>, Error> {
        let mut remote = RemoteDriver {
            conn,
            steps: Steps {
                incrttl: false,
                decrby: false,
                scripts: false,
                throttle: false,
            },
        };
        let versioned = remote.check_version().await?;
        let mut cmd = redis::cmd("COMMAND");
        cmd.arg("INFO")
            .arg("GOBLIN.INCRTTL")
            .arg("GOBLIN.DECRBY")
            .arg("EVALSHA")
            .arg("EVAL")
            .arg("CL.THROTTLE");
        // A server that refuses COMMAND INFO (an ACL, an old version) is
        // taken to offer none of them: the operations that need them say
        // Unsupported rather than guess.
        let known = match remote.query(&cmd).await {
            Ok(Value::Array(items)) => items.iter().map(|i| !is_nil(i)).collect(),
            Ok(_) | Err(Error::Server(_)) => vec![],
            Err(Error::Transport(e)) | Err(Error::Unavailable(e)) => return Err(Error::Connect(e)),
            Err(e) => return Err(e),
        };
        let has = |i: usize| known.get(i).copied().unwrap_or(false);
        remote.steps = Steps {
            incrttl: has(0),
            decrby: has(1),
            scripts: versioned && has(2) && has(3),
            throttle: has(4),
        };
        Ok(remote)
    }

    /// The steps found on connecting.
    pub fn steps(&self) -> Steps {
        self.steps
    }

    /// Reads INFO server's redis_version (on a cluster, every node's that
    /// redis-rs asked): Err for one older than 7.0, Ok(false) when the
    /// server did not say.
    async fn check_version(&self) -> Result<bool, Error> {
        let reply = match self.query(redis::cmd("INFO").arg("server")).await {
            Ok(reply) => reply,
            Err(Error::Server(_)) => return Ok(false),
            Err(Error::Transport(e)) | Err(Error::Unavailable(e)) => return Err(Error::Connect(e)),
            Err(e) => return Err(e),
        };
        let texts: Vec<Vec<u8>> = match reply {
            Value::BulkString(b) => vec![b],
            Value::VerbatimString { text, .. } => vec![text.into_bytes()],
            Value::Map(nodes) => nodes
                .into_iter()
                .filter_map(|(_, v)| match v {
                    Value::BulkString(b) => Some(b),
                    Value::VerbatimString { text, .. } => Some(text.into_bytes()),
                    _ => None,
                })
                .collect(),
            _ => vec![],
        };
        let mut any = false;
        for text in &texts {
            let Some(version) = redis_version(text) else {
                return Ok(false);
            };
            if !at_least_7(&version) {
                return Err(Error::ServerVersion(version));
            }
            any = true;
        }
        Ok(any)
    }

    /// Sends `cmd`, a second time only when the first attempt could not
    /// connect: nothing was sent then, so the command cannot run twice. A
    /// `ConnectionManager` answers a call with the failure of the
    /// reconnection in progress, and starts another one on it: the second
    /// attempt waits for that one, so the first call after the server is
    /// back succeeds.
    async fn send(&self, cmd: &redis::Cmd) -> Result<Value, RedisError> {
        let mut conn = self.conn.clone();
        match cmd.query_async::<Value>(&mut conn).await {
            Err(e) if e.is_connection_refusal() => cmd.query_async::<Value>(&mut conn).await,
            other => other,
        }
    }

    pub(super) async fn query(&self, cmd: &redis::Cmd) -> Result<Value, Error> {
        self.send(cmd).await.map_err(error_of)
    }

    /// EVALSHA, then EVAL when the server does not have the script.
    pub(super) async fn eval(
        &self,
        script: &Script,
        key: &[u8],
        args: &[&[u8]],
    ) -> Result<Value, Error> {
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg(&script.sha).arg(1).arg(key).arg(args);
        match self.send(&evalsha).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                // Not run: NOSCRIPT is answered before anything executes.
                let mut eval = redis::cmd("EVAL");
                eval.arg(script.code).arg(1).arg(key).arg(args);
                self.query(&eval).await
            }
            other => other.map_err(error_of),
        }
    }
}

#[async_trait::async_trait]
impl<C> Driver for RemoteDriver<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        match self.query(redis::cmd("GET").arg(key)).await? {
            Value::BulkString(b) => Ok(Some(b)),
            Value::Nil => Ok(None),
            other => Err(unexpected(other)),
        }
    }

    async fn put(&self, key: &[u8], value: &[u8], ttl: Option<Duration>) -> Result<(), Error> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(key).arg(value);
        if let Some(ttl) = ttl {
            cmd.arg("PX").arg(ttl.as_millis() as u64);
        }
        match self.query(&cmd).await? {
            Value::Okay | Value::SimpleString(_) => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    async fn delete(&self, key: &[u8]) -> Result<bool, Error> {
        Ok(integer(self.query(redis::cmd("DEL").arg(key)).await?)? > 0)
    }

    async fn ttl(&self, key: &[u8]) -> Result<Ttl, Error> {
        Ok(ttl_of_pttl(integer(
            self.query(redis::cmd("PTTL").arg(key)).await?,
        )?))
    }

    async fn increment(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        integer(self.query(redis::cmd("INCRBY").arg(key).arg(delta)).await?)
    }

    async fn decrement(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        if self.steps.decrby {
            return integer(
                self.query(redis::cmd("GOBLIN.DECRBY").arg(key).arg(delta))
                    .await?,
            );
        }
        if delta != i64::MIN {
            return integer(self.query(redis::cmd("DECRBY").arg(key).arg(delta)).await?);
        }
        if !self.steps.scripts {
            return Err(Error::Unsupported(
                "subtracting i64::MIN needs GOBLIN.DECRBY or scripting (DECRBY refuses it)",
            ));
        }
        let mut d = itoa::Buffer::new();
        let reply = self
            .eval(decrement_script(), key, &[d.format(delta).as_bytes()])
            .await?;
        integer(reply)
    }

    async fn throttle(&self, key: &[u8], rate: &super::Rate) -> Result<super::Throttle, Error> {
        super::throttle::remote(self, key, rate).await
    }

    async fn increment_with_ttl(
        &self,
        key: &[u8],
        delta: i64,
        ttl: Duration,
    ) -> Result<(i64, Duration), Error> {
        let ttl_ms = ttl.as_millis() as u64;
        let reply = if self.steps.incrttl {
            self.query(redis::cmd("GOBLIN.INCRTTL").arg(key).arg(delta).arg(ttl_ms))
                .await?
        } else if self.steps.scripts {
            let mut d = itoa::Buffer::new();
            let mut t = itoa::Buffer::new();
            self.eval(
                increment_with_ttl_script(),
                key,
                &[d.format(delta).as_bytes(), t.format(ttl_ms).as_bytes()],
            )
            .await?
        } else {
            return Err(Error::Unsupported(
                "an increment with a TTL needs GOBLIN.INCRTTL or scripting",
            ));
        };
        match reply {
            Value::Array(items) if items.len() == 2 => {
                let mut items = items.into_iter();
                let value = integer(items.next().expect("two items"))?;
                let left = integer(items.next().expect("two items"))?;
                Ok((value, remaining(left)))
            }
            other => Err(unexpected(other)),
        }
    }
}

fn is_nil(v: &Value) -> bool {
    matches!(v, Value::Nil)
}

/// An integer reply, or a script's integer text.
fn integer(v: Value) -> Result<i64, Error> {
    match v {
        Value::Int(n) => Ok(n),
        Value::BulkString(ref b) => goblin_num::parse_i64(b).ok_or_else(|| unexpected(v)),
        other => Err(unexpected(other)),
    }
}

fn unexpected(v: Value) -> Error {
    Error::Server(format!("unexpected reply {v:?}"))
}

/// The `redis_version` line of an INFO text.
fn redis_version(info: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(info);
    text.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(|v| v.trim().to_string())
}

/// True for a version 7.0 or later ("7.0.15", "7.2.4", "255.255.255").
fn at_least_7(version: &str) -> bool {
    version
        .split('.')
        .next()
        .and_then(|major| major.parse::<u32>().ok())
        .is_some_and(|major| major >= 7)
}

/// An error reply is a rejection (nothing changed) with the server's
/// text. A connection that could not be made (refused: the server is down
/// and the reconnection failed) sent nothing. Anything else (the connection
/// broke, the reply came late or garbled) leaves the outcome unknown: a
/// broken connection that redis-rs has not noticed yet also reads as one,
/// which only ever errs on the side of caution.
fn error_of(e: RedisError) -> Error {
    if e.is_connection_refusal() {
        return Error::Unavailable(Box::new(e));
    }
    match e.kind() {
        ErrorKind::Server(_) | ErrorKind::Extension => {
            let text = match (e.code(), e.detail()) {
                (Some(code), Some(detail)) => format!("{code} {detail}"),
                (Some(code), None) => code.to_string(),
                _ => e.to_string(),
            };
            Error::from_reply(&text)
        }
        _ => Error::Transport(Box::new(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_before_7_are_told_apart() {
        let info = b"# Server\r\nredis_version:7.0.15\r\ngoblin_version:0.1.0\r\n";
        assert_eq!(redis_version(info).as_deref(), Some("7.0.15"));
        assert_eq!(redis_version(b"# Server\r\nos:Linux\r\n"), None);
        for v in ["7.0.0", "7.0.15", "7.2.4", "8.0.1", "255.255.255"] {
            assert!(at_least_7(v), "{v}");
        }
        for v in ["6.2.14", "5.0.7", "2.8.24", "", "x.y"] {
            assert!(!at_least_7(v), "{v}");
        }
    }
}
