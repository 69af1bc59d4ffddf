//! # goblin
//!
//! Goblin as a Rust library: the data store in-process, and a typed counter
//! cache that behaves the same whether the store is embedded or across the
//! network.
//!
//! - [`Store`]: a whole Goblin engine inside the process. [`Store::execute`]
//!   runs any command through the engine's dispatcher, exactly as a
//!   connection to `goblin-server` would (the same shard locks, the same
//!   atomicity, the same blocking rules), and returns the decoded reply.
//!   A `Store` is a handle: clones share one engine. [`StoreConfig`] sets
//!   it up (a directory, the append-only file, snapshots, a memory bound);
//!   [`Store::close`] saves and returns what went wrong.
//! - [`Session`]: one client of a store, kept across calls: its database,
//!   MULTI/EXEC and WATCH, RESP2 or RESP3, its name, and its
//!   subscriptions, whose messages are a `futures` [`Stream`](futures_core::Stream)
//!   ([`Session::messages`], [`Session::pushes`]).
//! - [`blocking`]: the same store and sessions for code without an async
//!   runtime.
//! - [`cache`]: [`cache::Cache`], a typed front for counters and values
//!   ([`cache::Key<T>`], with a declared write TTL), over a
//!   [`cache::Driver`]: [`cache::Cache::embedded`] over a `Store`,
//!   [`cache::Cache::connect`] over the network to goblin-server or any
//!   Redis/Valkey 7 or later (reconnecting in the background),
//!   [`cache::Cache::connect_cluster`] to a Redis Cluster, or a driver of
//!   your own. Every operation is one atomic step on the server side, on
//!   every driver, with the same results and the same errors.
//!
//! # Features
//!
//! - `embedded` (default): [`Store`], and the cache's embedded driver.
//!   Without it the crate does not build the engine.
//! - `remote`: the cache's network and cluster drivers, on the `redis`
//!   crate (with its `connection-manager` and `cluster-async` features).
//!   Without it the crate does not depend on `redis`. A client of a remote
//!   store only needs `default-features = false, features = ["remote"]`.
//! - `serde`: [`cache::Json<T>`], any serde type as a cache value (stored
//!   as JSON).
//! - `ratelimit`: [`ratelimit`], tower middleware for axum, tonic and
//!   hyper that limits requests per key (a fixed window, or GCRA) and
//!   answers 429 with the IETF draft's `RateLimit-*` headers.
//! - `redis-compat`: the redis crate's `aio::ConnectionLike` on [`Store`]
//!   and [`Session`], so redis-rs code (commands, pipelines, scripts) runs
//!   in-process unchanged.
//! - `conformance`: [`cache::conformance`], the suite of cases every
//!   driver passes, for a custom driver's own tests.
//!
//! # Features
//!
//! - `redis-compat`: [`Store`] and [`Session`] implement the redis crate's
//!   `aio::ConnectionLike`, so redis-rs code (`AsyncCommands`, pipelines,
//!   scripts) runs in-process unchanged.
//!
//! # Logging
//!
//! The crate's messages (a store dropped without [`Store::close`] that
//! could not save) and the engine's (loading, saving, the append-only
//! file, under the target `goblin::engine`) go through the [`log`](https://docs.rs/log)
//! facade: install any logger, or a `tracing` subscriber with its `log`
//! bridge, to see them.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use goblin::cache::{Cache, Key};
//! use goblin::Store;
//!
//! let store = Store::open_in_memory();
//! let cache = Cache::embedded(store.clone());
//! let views = Key::<i64>::new("article-views.v1:article-73");
//! assert_eq!(cache.increment(&views, 1).await?, 1);
//! assert_eq!(cache.increment(&views, 1).await?, 2);
//!
//! // The cache and the store see the same data.
//! let reply = store.execute(["GET", "article-views.v1:article-73"]).await?;
//! assert_eq!(reply, goblin::Reply::Bulk(b"2".to_vec()));
//! # Ok(())
//! # }
//! ```

// The docs link every feature's items; a build without some features has
// nothing to link them to (`cargo doc --all-features` shows them all).
#![deny(missing_docs)]
#![cfg_attr(
    not(all(
        feature = "embedded",
        feature = "remote",
        feature = "serde",
        feature = "conformance",
        feature = "ratelimit",
        feature = "redis-compat"
    )),
    allow(rustdoc::broken_intra_doc_links)
)]

#[cfg(feature = "embedded")]
pub mod blocking;
pub mod cache;
#[cfg(feature = "embedded")]
mod config;
#[cfg(feature = "embedded")]
mod error;
#[cfg(feature = "ratelimit")]
pub mod ratelimit;
#[cfg(feature = "redis-compat")]
mod redis_compat;
#[cfg(feature = "embedded")]
mod session;
#[cfg(feature = "embedded")]
mod store;

#[cfg(feature = "embedded")]
pub use config::{AppendFsync, EvictionPolicy, StoreBuilder, StoreConfig};
#[cfg(feature = "embedded")]
pub use error::{ConfigError, Error, PersistenceError};
#[cfg(feature = "embedded")]
pub use goblin_engine::protocol::{ErrorText, Reply};
/// The configuration parameters of `goblin-server`, for [`Store::open_with_config`].
#[cfg(feature = "embedded")]
pub use goblin_engine::Config;
#[cfg(feature = "embedded")]
pub use session::{Message, MessageKind, Messages, Push, Pushes, Session};
#[cfg(feature = "embedded")]
pub use store::Store;
