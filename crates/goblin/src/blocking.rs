//! The store and its sessions for code without an async runtime.
//!
//! [`Store`] and [`Session`] here are the async ones driven by a
//! current-thread tokio runtime of the store's own, which every clone
//! shares: each call blocks the calling thread until its reply is there
//! (a BLPOP until it is served or times out). Several threads may call at
//! once. Calling from inside an async runtime panics, as any blocking
//! client's does there: use [`crate::Store`] in async code.
//!
//! ```
//! use goblin::blocking::Store;
//! use goblin::Reply;
//!
//! let store = Store::open_in_memory();
//! store.execute(["SET", "k", "v"])?;
//! assert_eq!(store.execute(["GET", "k"])?, Reply::Bulk(b"v".to_vec()));
//!
//! let mut session = store.session();
//! session.execute(["SELECT", "1"])?;
//! assert_eq!(session.execute(["GET", "k"])?, Reply::Nil);
//! store.close()?;
//! # Ok::<(), goblin::Error>(())
//! ```

use crate::config::StoreConfig;
use crate::error::Error;
use crate::session::Push;
use goblin_engine::protocol::Reply;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A [`crate::Store`] with blocking calls. Cheap to clone: clones share
/// the store and its runtime.
#[derive(Clone, Debug)]
pub struct Store {
    store: crate::Store,
    rt: Arc<tokio::runtime::Runtime>,
}

/// The runtime that drives a blocking store's waits (blocking commands'
/// timeouts, CLIENT PAUSE, `appendfsync always`): one thread is all it
/// needs, since every caller drives its own call.
fn runtime() -> Arc<tokio::runtime::Runtime> {
    Arc::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .thread_name("goblin-blocking")
            .build()
            .expect("a current-thread runtime"),
    )
}

impl Store {
    /// A store in memory, as [`crate::Store::open_in_memory`].
    pub fn open_in_memory() -> Store {
        Store::from_async(crate::Store::open_in_memory())
    }

    /// A store on `dir`, as [`crate::Store::open`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Store, Error> {
        crate::Store::open(dir).map(Store::from_async)
    }

    /// A store with these settings, as [`StoreConfig::open`].
    pub fn with_config(config: StoreConfig) -> Result<Store, Error> {
        config.open().map(Store::from_async)
    }

    /// Blocking calls on an async store: both see the same data.
    pub fn from_async(store: crate::Store) -> Store {
        Store {
            store,
            rt: runtime(),
        }
    }

    /// The async store behind this one.
    pub fn as_async(&self) -> &crate::Store {
        &self.store
    }

    /// Runs one command, as [`crate::Store::execute`], and blocks until
    /// its reply.
    pub fn execute<I, A>(&self, args: I) -> Result<Reply, Error>
    where
        I: IntoIterator<Item = A>,
        A: AsRef<[u8]>,
    {
        self.rt.block_on(self.store.execute(args))
    }

    /// A client of its own, as [`crate::Store::session`].
    pub fn session(&self) -> Session {
        Session {
            session: self.store.session(),
            rt: self.rt.clone(),
        }
    }

    /// Closes this handle and saves, as [`crate::Store::close`], on the
    /// calling thread.
    pub fn close(self) -> Result<(), Error> {
        self.store.release().save().map_err(Error::Persistence)
    }
}

/// A [`crate::Session`] with blocking calls.
#[derive(Debug)]
pub struct Session {
    session: crate::Session,
    rt: Arc<tokio::runtime::Runtime>,
}

impl Session {
    /// Runs one command on this client, as [`crate::Session::execute`],
    /// and blocks until its reply.
    pub fn execute<I, A>(&mut self, args: I) -> Result<Reply, Error>
    where
        I: IntoIterator<Item = A>,
        A: AsRef<[u8]>,
    {
        self.rt.block_on(self.session.execute(args))
    }

    /// The next push (a Pub/Sub message, an invalidation), waiting for at
    /// most `timeout` (for ever with `None`); `None` when none came in
    /// time or the session is closed.
    pub fn next_push(&mut self, timeout: Option<Duration>) -> Option<Push> {
        let Session { session, rt } = self;
        let mut pushes = session.pushes();
        let next = std::future::poll_fn(|cx| {
            futures_core::Stream::poll_next(std::pin::Pin::new(&mut pushes), cx)
        });
        rt.block_on(async {
            match timeout {
                Some(t) => tokio::time::timeout(t, next).await.ok().flatten(),
                None => next.await,
            }
        })
    }

    /// The async session behind this one (its database, protocol, id).
    pub fn as_async(&self) -> &crate::Session {
        &self.session
    }
}
