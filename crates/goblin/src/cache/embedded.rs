//! The embedded driver: each operation is one command run through a
//! [`Store`]'s dispatcher, so the same shard lock makes it atomic as on the
//! server.
//!
//! | operation | command |
//! | --- | --- |
//! | get | GET |
//! | put | SET |
//! | increment | INCRBY |
//! | decrement | GOBLIN.DECRBY (DECRBY refuses a decrement of i64::MIN) |
//! | increment_with_ttl | GOBLIN.INCRTTL |
//! | throttle | CL.THROTTLE |

use super::Error;
use crate::store::Error as StoreError;
use crate::{Reply, Store};

#[derive(Clone)]
pub(super) struct Embedded {
    store: Store,
}

impl Embedded {
    pub(super) fn new(store: Store) -> Embedded {
        Embedded { store }
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

    pub(super) async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        match self.run(&[b"GET", key]).await? {
            Reply::Bulk(b) => Ok(Some(b)),
            Reply::Nil => Ok(None),
            other => Err(unexpected(other)),
        }
    }

    pub(super) async fn put(&self, key: &[u8], value: &[u8]) -> Result<(), Error> {
        match self.run(&[b"SET", key, value]).await? {
            Reply::Status(_) => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    pub(super) async fn increment(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        let mut d = itoa::Buffer::new();
        int(self
            .run(&[b"INCRBY", key, d.format(delta).as_bytes()])
            .await?)
    }

    pub(super) async fn decrement(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        let mut d = itoa::Buffer::new();
        int(self
            .run(&[b"GOBLIN.DECRBY", key, d.format(delta).as_bytes()])
            .await?)
    }

    pub(super) async fn increment_with_ttl(
        &self,
        key: &[u8],
        delta: i64,
        ttl_ms: u64,
    ) -> Result<(i64, i64), Error> {
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
                [Reply::Int(value), Reply::Int(left)] => Ok((*value, *left)),
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
