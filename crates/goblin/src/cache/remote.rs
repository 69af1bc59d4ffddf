//! The remote driver: goblin-server, Redis or Valkey through the `redis`
//! crate's multiplexed connection.
//!
//! Every operation is one request that the server runs atomically:
//!
//! | operation | server with GOBLIN.* | Redis/Valkey 7 |
//! | --- | --- | --- |
//! | get | GET | GET |
//! | put | SET | SET |
//! | increment | INCRBY | INCRBY |
//! | decrement | GOBLIN.DECRBY | DECRBY; for i64::MIN, which DECRBY refuses, [`scripts::DECREMENT`] |
//! | increment_with_ttl | GOBLIN.INCRTTL | [`scripts::INCREMENT_WITH_TTL`] |
//! | throttle | CL.THROTTLE | [`super::throttle::GCRA`] |
//!
//! Which steps the server has is asked once, on connecting (`COMMAND INFO`
//! of the GOBLIN.* commands and of EVALSHA/EVAL). A script runs as
//! EVALSHA, and as EVAL when the server does not have it cached (NOSCRIPT),
//! which caches it for the next call. Without the command and without
//! scripting the operation is [`Error::Unsupported`], and nothing is sent:
//! separate calls (an INCRBY, then a PEXPIRE) would not be atomic.

use super::{scripts, Error};
use redis::aio::MultiplexedConnection;
use redis::{ErrorKind, RedisError, ServerErrorKind, Value};

#[derive(Clone)]
pub(super) struct Remote {
    conn: MultiplexedConnection,
    steps: Steps,
}

/// The atomic steps the server offers.
#[derive(Clone, Copy, Debug)]
pub(super) struct Steps {
    pub incrttl: bool,
    pub decrby: bool,
    pub scripts: bool,
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

impl Remote {
    pub(super) async fn new(conn: MultiplexedConnection) -> Result<Remote, Error> {
        let mut remote = Remote {
            conn,
            steps: Steps {
                incrttl: false,
                decrby: false,
                scripts: false,
                throttle: false,
            },
        };
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
            Err(Error::Transport(e)) => return Err(Error::Connect(e)),
            Err(e) => return Err(e),
        };
        let has = |i: usize| known.get(i).copied().unwrap_or(false);
        remote.steps = Steps {
            incrttl: has(0),
            decrby: has(1),
            scripts: has(2) && has(3),
            throttle: has(4),
        };
        Ok(remote)
    }

    pub(super) fn steps(&self) -> Steps {
        self.steps
    }

    pub(super) async fn query(&self, cmd: &redis::Cmd) -> Result<Value, Error> {
        let mut conn = self.conn.clone();
        cmd.query_async::<Value>(&mut conn).await.map_err(error_of)
    }

    /// EVALSHA, then EVAL when the server does not have the script.
    pub(super) async fn eval(
        &self,
        script: &Script,
        key: &[u8],
        args: &[&[u8]],
    ) -> Result<Value, Error> {
        let mut conn = self.conn.clone();
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg(&script.sha).arg(1).arg(key).arg(args);
        match evalsha.query_async::<Value>(&mut conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                // Not run: NOSCRIPT is answered before anything executes.
                let mut eval = redis::cmd("EVAL");
                eval.arg(script.code).arg(1).arg(key).arg(args);
                eval.query_async::<Value>(&mut conn).await.map_err(error_of)
            }
            other => other.map_err(error_of),
        }
    }

    pub(super) async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        match self.query(redis::cmd("GET").arg(key)).await? {
            Value::BulkString(b) => Ok(Some(b)),
            Value::Nil => Ok(None),
            other => Err(unexpected(other)),
        }
    }

    pub(super) async fn put(&self, key: &[u8], value: &[u8]) -> Result<(), Error> {
        match self.query(redis::cmd("SET").arg(key).arg(value)).await? {
            Value::Okay | Value::SimpleString(_) => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    pub(super) async fn increment(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        integer(self.query(redis::cmd("INCRBY").arg(key).arg(delta)).await?)
    }

    pub(super) async fn decrement(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
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

    pub(super) async fn increment_with_ttl(
        &self,
        key: &[u8],
        delta: i64,
        ttl_ms: u64,
    ) -> Result<(i64, i64), Error> {
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
                Ok((value, left))
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

/// An error reply is a rejection (nothing changed) with the server's
/// text; anything else (the connection broke, the reply came late or
/// garbled) leaves the outcome unknown.
fn error_of(e: RedisError) -> Error {
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
