//! redis-rs in-process: [`Store`] and [`Session`] implement the redis
//! crate's `aio::ConnectionLike`, so code written against a redis-rs
//! connection (`AsyncCommands`, `Pipeline` including atomic pipelines,
//! `Script` with its EVALSHA / NOSCRIPT fallback) runs on the embedded
//! store unchanged.
//!
//! The command redis-rs packed is read back into its arguments and run as
//! a connection would run it; the reply bytes the engine wrote are parsed
//! by redis-rs's own parser. So a value, an error's kind and its text are
//! what the same call gets from goblin-server over the network, in the
//! session's protocol (RESP3 unless the session ran `HELLO 2`).
//!
//! A [`Session`] is one connection: SELECT, transactions and WATCH carry
//! over. The [`Store`] is a pool: each command (or each pipeline, which
//! runs on one client) gets a fresh client, as `Store::execute` does.
//! Pub/Sub through redis-rs's own subscription API is not offered here;
//! [`Session::pushes`] streams a session's messages.

use crate::error::Error;
use crate::session::Session;
use crate::store::Store;
use goblin_engine::protocol::Reply;
use redis::{aio::ConnectionLike, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, Value};

impl ConnectionLike for Session {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let args = unpack(&cmd.get_packed_command())?;
            let Some(args) = args.into_iter().next() else {
                return Err((ErrorKind::Client, "empty command").into());
            };
            let reply = self.exchange(&args).await.map_err(transport)?;
            first_value(&reply)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let commands = unpack(&pipeline.get_packed_pipeline())?;
            let mut replies = Vec::with_capacity(commands.len());
            for args in &commands {
                let reply = self.exchange(args).await.map_err(transport)?;
                replies.extend(values(&reply)?);
            }
            select(replies, pipeline.is_transaction(), offset, count)
        })
    }

    fn get_db(&self) -> i64 {
        self.db()
    }
}

impl ConnectionLike for Store {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let args = unpack(&cmd.get_packed_command())?;
            let Some(args) = args.into_iter().next() else {
                return Err((ErrorKind::Client, "empty command").into());
            };
            self.call(&args, first_value).await.map_err(transport)?
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let commands = unpack(&pipeline.get_packed_pipeline())?;
            let replies = self
                .call_many(&commands, values)
                .await
                .map_err(transport)??;
            select(replies, pipeline.is_transaction(), offset, count)
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// The replies redis-rs asked for: `count` after the first `offset`. In a
/// transaction the skipped ones are MULTI's and the queued commands'; an
/// error among those fails the call, as it does on a connection.
fn select(
    replies: Vec<Value>,
    transaction: bool,
    offset: usize,
    count: usize,
) -> Result<Vec<Value>, RedisError> {
    if transaction {
        if let Some(Value::ServerError(e)) = replies
            .iter()
            .take(offset)
            .find(|v| matches!(v, Value::ServerError(_)))
        {
            return Err(e.clone().into());
        }
    }
    Ok(replies.into_iter().skip(offset).take(count).collect())
}

/// The commands of a packed request: arrays of bulk strings, as redis-rs
/// writes them.
fn unpack(mut packed: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, RedisError> {
    let bad = || RedisError::from((ErrorKind::Client, "unreadable packed command"));
    let mut commands = Vec::new();
    while !packed.is_empty() {
        let (count, rest) = header(packed, b'*').ok_or_else(bad)?;
        packed = rest;
        let mut args = Vec::with_capacity(count);
        for _ in 0..count {
            let (len, rest) = header(packed, b'$').ok_or_else(bad)?;
            if rest.len() < len + 2 {
                return Err(bad());
            }
            args.push(rest[..len].to_vec());
            packed = &rest[len + 2..];
        }
        commands.push(args);
    }
    Ok(commands)
}

/// `<kind><decimal>\r\n` at the front of `buf`: the number and what follows.
fn header(buf: &[u8], kind: u8) -> Option<(usize, &[u8])> {
    let rest = buf.strip_prefix(&[kind])?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    let n = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    Some((n, &rest[end + 2..]))
}

/// The first reply in `buf`, parsed by redis-rs.
fn first_value(buf: &[u8]) -> Result<Value, RedisError> {
    redis::parse_redis_value(buf)
}

/// Every reply in `buf`, parsed by redis-rs.
fn values(mut buf: &[u8]) -> Result<Vec<Value>, RedisError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let (_, used) = Reply::decode(buf)
            .map_err(|_| RedisError::from((ErrorKind::Parse, "undecodable reply")))?;
        out.push(redis::parse_redis_value(&buf[..used])?);
        buf = &buf[used..];
    }
    Ok(out)
}

/// A call that got no reply: to redis-rs, the connection ended (QUIT, a
/// kill) or a reply is missing, which over the network would be a hang.
fn transport(e: Error) -> RedisError {
    match e {
        Error::Closed => {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the session is closed").into()
        }
        Error::NoReply => (ErrorKind::Client, "the command gave no reply").into(),
        other => std::io::Error::other(other.to_string()).into(),
    }
}
