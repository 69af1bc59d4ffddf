//! The interface between [`Cache`](super::Cache) and a store: eight
//! operations on byte keys and byte values, each one atomic step.

use super::{Error, Rate, Throttle, Ttl};
use std::fmt;
use std::time::Duration;

/// A store that a [`Cache`](super::Cache) can run on.
///
/// The crate has three: [`EmbeddedDriver`](super::EmbeddedDriver) (a
/// [`Store`](crate::Store) in the process, feature `embedded`), and
/// [`RemoteDriver`](super::RemoteDriver) over any redis-rs connection
/// (feature `remote`), which is also the cluster driver
/// ([`ClusterDriver`](super::ClusterDriver)). Write one for another store
/// and hand it to [`Cache::new`](super::Cache::new);
/// [`conformance::run`](super::conformance::run) (feature `conformance`)
/// checks it against the same cases as the crate's own drivers.
///
/// The trait is object safe (the cache holds an `Arc<dyn Driver>`), so its
/// methods are written with [`async_trait::async_trait`]: put
/// `#[async_trait::async_trait]` on the `impl` block.
///
/// # The rules
///
/// - Every operation is **one atomic step** on the store: never a read
///   followed by a write, never two writes that another client could see
///   between. Concurrent callers, in this process or elsewhere, must not
///   lose an update.
/// - **A driver that cannot do an operation atomically returns
///   [`Error::Unsupported`], and never emulates it with separate calls.**
///   In particular an increment followed by an expiry-setting call is not
///   an `increment_with_ttl`: a crash between them leaves a count that
///   never resets. Return `Unsupported` before sending anything.
/// - Counters are base-10 integer text, as Redis's INCR writes and reads
///   them (no `+`, no spaces, no leading zeros, `i64` range). A stored
///   value that is not one is [`Error::NotInteger`]; a result outside the
///   `i64` range is [`Error::Overflow`]. Either way nothing changes: not the
///   value, not the TTL, and a missing key stays missing.
/// - The cache checks TTLs before calling: a `ttl` argument is always a
///   whole number of milliseconds, from 1 ms to
///   [`MAX_TTL`](super::MAX_TTL).
/// - A failure after the request may have reached the store is
///   [`Error::Transport`] (the outcome is unknown); a failure that is
///   certain to have changed nothing, because nothing was sent, is
///   [`Error::Unavailable`].
#[async_trait::async_trait]
pub trait Driver: fmt::Debug + Send + Sync + 'static {
    /// The bytes at `key`, or `None` when it is absent or expired.
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error>;

    /// Stores `value` at `key`, replacing the value and the TTL: with
    /// `Some(ttl)` the key expires after `ttl`, with `None` it has no
    /// expiry (as SET and SET PX do).
    async fn put(&self, key: &[u8], value: &[u8], ttl: Option<Duration>) -> Result<(), Error>;

    /// Removes `key`; true when it was there.
    async fn delete(&self, key: &[u8]) -> Result<bool, Error>;

    /// How long `key` has left (PTTL).
    async fn ttl(&self, key: &[u8]) -> Result<Ttl, Error>;

    /// Adds `delta` to the counter and returns the new value. A missing or
    /// expired counter starts from 0; the TTL never changes (a new counter
    /// has none).
    async fn increment(&self, key: &[u8], delta: i64) -> Result<i64, Error>;

    /// Subtracts `delta` from the counter and returns the new value,
    /// checking the mathematical result: `delta` is never negated, so
    /// `i64::MIN` is subtracted from a negative counter. A missing or
    /// expired counter starts from 0; the TTL never changes.
    async fn decrement(&self, key: &[u8], delta: i64) -> Result<i64, Error>;

    /// Adds `delta` and makes sure the counter expires, in one atomic step;
    /// returns the new value and the time left. A missing or expired counter
    /// starts from 0 with `ttl`; an existing one without expiry receives
    /// `ttl`; an existing expiring one keeps its deadline. When the
    /// increment is rejected, no expiry is added either.
    ///
    /// A driver that cannot do this in one step returns
    /// [`Error::Unsupported`] without touching the store.
    async fn increment_with_ttl(
        &self,
        key: &[u8],
        delta: i64,
        ttl: Duration,
    ) -> Result<(i64, Duration), Error>;

    /// CL.THROTTLE's generic cell rate algorithm in one atomic step: takes
    /// `rate.quantity` actions from the limiter at `key` when it has them
    /// (see [`Cache::throttle`](super::Cache::throttle)). A driver without
    /// an atomic form keeps this default, [`Error::Unsupported`].
    async fn throttle(&self, key: &[u8], rate: &Rate) -> Result<Throttle, Error> {
        let _ = (key, rate);
        Err(Error::Unsupported("this driver has no atomic throttle"))
    }
}
