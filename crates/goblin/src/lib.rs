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
//!   A `Store` is a handle: clones share one engine.
//! - [`cache`]: [`cache::Cache`], a typed front for counters and values
//!   ([`cache::Key<T>`]), with two drivers: [`cache::Cache::embedded`] over
//!   a `Store`, and [`cache::Cache::connect`] over the network to
//!   goblin-server or any Redis/Valkey 7 or later. Every operation is one
//!   atomic step on the server side, on every driver, with the same results
//!   and the same errors.
//! - `ratelimit` (feature `ratelimit`): tower middleware for axum, tonic
//!   and hyper that limits requests per key (a fixed window, or GCRA) and
//!   answers 429 with the IETF draft's `RateLimit-*` headers.
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

pub mod cache;
#[cfg(feature = "ratelimit")]
pub mod ratelimit;
mod store;

pub use goblin_engine::protocol::{ErrorText, Reply};
/// The configuration parameters of `goblin-server`, for [`Store::open_with_config`].
pub use goblin_engine::Config;
pub use store::{Error, EvictionPolicy, Store, StoreBuilder};
