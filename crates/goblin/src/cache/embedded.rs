//! The embedded driver: each operation is one command run through a
//! [`Store`]'s dispatcher, so the same shard lock makes it atomic as on the
//! server.
//!
//! | operation | command |
//! | --- | --- |
//! | get | GET |
//! | put | SET, SET PX with a TTL |
//! | delete | DEL |
//! | ttl | PTTL |
//! | increment | INCRBY |
//! | decrement | GOBLIN.DECRBY (DECRBY refuses a decrement of i64::MIN) |
//! | increment_with_ttl | GOBLIN.INCRTTL |
//! | throttle | CL.THROTTLE |

use super::{remaining, ttl_of_pttl, Driver, Error, Ttl};
use crate::store::Error as StoreError;
use crate::{Reply, Store};
use std::fmt;
use std::time::Duration;

/// The embedded driver: a [`Store`] in this process (see
/// [`Cache::embedded`](super::Cache::embedded)).
#[derive(Clone)]
pub struct EmbeddedDriver {
    store: Store,
}

impl fmt::Debug for EmbeddedDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EmbeddedDriver")
    }
}

impl EmbeddedDriver {
    /// A driver over `store` (clones of a `Store` share one engine).
    pub fn new(store: Store) -> EmbeddedDriver {
        EmbeddedDriver { store }
    }

    /// Runs one command and decodes its reply; an error reply becomes the
    /// cache's error for its text.
    pub(super) async fn run(&self, argv: &[&[u8]]) -> Result<Reply, Error> {
        let decoded = self
            .store
            .call(argv, |buf| Reply::decode(buf).map(|(r, _)| r))
            .await
            .map_err(|e| match e {
                StoreError::Reply(text) => Error::from_reply(&text.to_string_lossy()),
                other => Error::Server(other.to_string()),
            })?
            .map_err(|e| Error::Server(format!("undecodable reply ({e:?})")))?;
        match decoded {
            Reply::Error(text) => Err(Error::from_reply(&text.to_string_lossy())),
            reply => Ok(reply),
        }
    }
}

#[async_trait::async_trait]
impl Driver for EmbeddedDriver {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        match self.run(&[b"GET", key]).await? {
            Reply::Bulk(b) => Ok(Some(b)),
            Reply::Nil => Ok(None),
            other => Err(unexpected(other)),
        }
    }

    async fn put(&self, key: &[u8], value: &[u8], ttl: Option<Duration>) -> Result<(), Error> {
        let mut t = itoa::Buffer::new();
        let reply = match ttl {
            Some(ttl) => {
                let ms = t.format(ttl.as_millis() as u64).as_bytes();
                self.run(&[b"SET", key, value, b"PX", ms]).await?
            }
            None => self.run(&[b"SET", key, value]).await?,
        };
        match reply {
            Reply::Status(_) => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    async fn delete(&self, key: &[u8]) -> Result<bool, Error> {
        Ok(int(self.run(&[b"DEL", key]).await?)? > 0)
    }

    async fn ttl(&self, key: &[u8]) -> Result<Ttl, Error> {
        Ok(ttl_of_pttl(int(self.run(&[b"PTTL", key]).await?)?))
    }

    async fn increment(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        let mut d = itoa::Buffer::new();
        int(self
            .run(&[b"INCRBY", key, d.format(delta).as_bytes()])
            .await?)
    }

    async fn decrement(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        let mut d = itoa::Buffer::new();
        int(self
            .run(&[b"GOBLIN.DECRBY", key, d.format(delta).as_bytes()])
            .await?)
    }

    async fn throttle(&self, key: &[u8], rate: &super::Rate) -> Result<super::Throttle, Error> {
        super::throttle::embedded(self, key, rate).await
    }

    async fn increment_with_ttl(
        &self,
        key: &[u8],
        delta: i64,
        ttl: Duration,
    ) -> Result<(i64, Duration), Error> {
        let ttl_ms = ttl.as_millis() as u64;
        let mut d = itoa::Buffer::new();
        let mut t = itoa::Buffer::new();
        let argv: [&[u8]; 4] = [
            b"GOBLIN.INCRTTL",
            key,
            d.format(delta).as_bytes(),
            t.format(ttl_ms).as_bytes(),
        ];
        match self.run(&argv).await? {
            Reply::Array(items) => match items.as_slice() {
                [Reply::Int(value), Reply::Int(left)] => Ok((*value, remaining(*left))),
                _ => Err(unexpected(Reply::Array(items))),
            },
            other => Err(unexpected(other)),
        }
    }
}

fn int(reply: Reply) -> Result<i64, Error> {
    match reply {
        Reply::Int(n) => Ok(n),
        other => Err(unexpected(other)),
    }
}

fn unexpected(reply: Reply) -> Error {
    Error::Server(format!("unexpected reply {reply:?}"))
}
