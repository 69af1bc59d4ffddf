//! A typed cache for counters and values, with one behaviour on every
//! driver.
//!
//! [`Cache`] stores values under typed keys ([`Key<T>`]) and keeps counters
//! (`Key<i64>`) that many tasks, processes or machines update at once
//! without losing an update: each operation is one atomic step on the
//! server side, never a read followed by a write. Use counters for
//! replaceable counts (article views, requests in a window), not as the
//! only record of billing or inventory: a cache can lose its data (a
//! restart without persistence, eviction, deletion).
//!
//! # Drivers
//!
//! - [`Cache::embedded`]: a [`Store`] in the same process. Separate stores
//!   keep separate counts; share one `Store` (or one server) for a count
//!   that is shared.
//! - [`Cache::connect`]: goblin-server, or any Redis or Valkey 7 or later,
//!   over the network (the `redis` crate on tokio).
//!
//! Both give the same results and the same errors for the same calls; the
//! crate's conformance tests run one suite of cases against the embedded
//! store, goblin-server and Redis 7.0.
//!
//! # Counters
//!
//! - [`Cache::increment`] and [`Cache::decrement`] are atomic. A missing or
//!   expired counter starts from 0. They never change the TTL: a new
//!   counter has none, an existing one keeps its own.
//! - [`Cache::increment_with_ttl`] counts in a window that is sure to
//!   expire: a missing entry starts from 0 with the given TTL, an existing
//!   entry without expiry receives it, and an existing expiring entry keeps
//!   its deadline (it never slides). It returns the count and the time
//!   left. The TTL must be positive ([`Error::InvalidTtl`]); sub-millisecond
//!   parts round up to whole milliseconds.
//! - Results must lie in `i64::MIN..=i64::MAX`, as mathematical results:
//!   subtraction is checked directly, without negating the delta, so
//!   decrementing `i64::MIN` by `i64::MIN` gives 0, while decrementing 0 by
//!   `i64::MIN` is [`Error::Overflow`]. A rejected call changes nothing:
//!   not the value, not the TTL, and a missing counter stays missing.
//! - Counters are stored as base-10 integer text, so [`Cache::get`] reads
//!   them as `i64`, and so does any Redis client. A stored value that is
//!   not an integer is [`Error::NotInteger`] and stays unchanged.
//!
//! # Rate limits
//!
//! [`Cache::throttle`] is CL.THROTTLE (redis-cell's generic cell rate
//! algorithm) on every driver: built in on the embedded store and
//! goblin-server, one Lua script on Redis or Valkey. The `ratelimit`
//! feature builds HTTP middleware on it and on
//! [`Cache::increment_with_ttl`].
//!
//! # Failures
//!
//! Check the result before using the count. [`Error::Overflow`],
//! [`Error::NotInteger`] and [`Error::WrongType`] are rejections: nothing
//! changed. [`Error::Transport`] is different: the request may have been
//! applied before its reply was lost. Do not blindly repeat an increment
//! after it, or the same action may count twice.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), goblin::cache::Error> {
//! use goblin::cache::{Cache, Error, Key};
//! use std::time::Duration;
//!
//! let cache = Cache::embedded(goblin::Store::open_in_memory());
//!
//! let views = Key::<i64>::new("article-views.v1:article-73");
//! assert_eq!(cache.increment(&views, 1).await?, 1);
//! assert_eq!(cache.decrement(&views, 1).await?, 0);
//!
//! let requests = Key::<i64>::new("export-requests.v1:account-7");
//! let (count, left) = cache.increment_with_ttl(&requests, 1, Duration::from_secs(60)).await?;
//! assert_eq!(count, 1);
//! assert!(left <= Duration::from_secs(60));
//!
//! let adjustment = Key::<i64>::new("view-adjustments.v1:article-73");
//! cache.put(&adjustment, &i64::MIN).await?;
//! assert_eq!(cache.decrement(&adjustment, i64::MIN).await?, 0);
//! assert!(matches!(cache.decrement(&adjustment, i64::MIN).await, Err(Error::Overflow)));
//! assert_eq!(cache.get(&adjustment).await?, Some(0));
//! # Ok(())
//! # }
//! ```

mod embedded;
mod remote;
mod scripts;
mod throttle;

use crate::Store;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

/// The `redis` crate the remote driver is built on, for
/// [`Cache::from_connection`].
pub use redis;
pub use throttle::{Throttle, MAX_THROTTLE_SPAN};

/// The longest TTL [`Cache::increment_with_ttl`] accepts: 2^53 - 1
/// milliseconds, about 285,000 years. It is the longest that every driver
/// handles exactly (a script on Redis computes with Lua's numbers, which
/// are doubles), and far from the end of the servers' clock.
pub const MAX_TTL: Duration = Duration::from_millis((1 << 53) - 1);

/// An error from [`Cache`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The result would leave `i64::MIN..=i64::MAX`. Nothing changed.
    #[error("increment or decrement would overflow")]
    Overflow,
    /// The stored value is not a base-10 64-bit integer. Nothing changed.
    #[error("value is not an integer or out of range")]
    NotInteger,
    /// The TTL is zero or longer than [`MAX_TTL`]. Nothing was sent.
    #[error("invalid TTL: it must be at least 1 ms and at most MAX_TTL")]
    InvalidTtl,
    /// The rate of [`Cache::throttle`] is out of its range (the reason
    /// says which part). Nothing was sent.
    #[error("invalid rate: {0}")]
    InvalidRate(&'static str),
    /// The server offers no atomic way to do this operation (neither the
    /// GOBLIN.* command nor scripting). Nothing was sent.
    #[error("the server cannot do this atomically: {0}")]
    Unsupported(&'static str),
    /// The key holds a value of another type (a list, a hash...). Nothing
    /// changed.
    #[error("the key holds a value of another type")]
    WrongType,
    /// The stored value could not be decoded as the key's type.
    #[error("the stored value cannot be decoded: {0}")]
    Decode(String),
    /// Any other error reply from the server (out of memory, read-only
    /// replica, missing permission...), with its text.
    #[error("server error: {0}")]
    Server(String),
    /// The connection failed while the request was in flight, or the reply
    /// did not come in time: the outcome is unknown. The operation may or
    /// may not have been applied.
    #[error("transport failure, the outcome is unknown (the operation may or may not have been applied): {0}")]
    Transport(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The connection could not be established (nothing was sent).
    #[error("cannot connect: {0}")]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// True when the operation may or may not have been applied.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, Error::Transport(_))
    }

    /// The error for an error reply's text (the same texts on every server:
    /// Goblin's are Redis's).
    pub(crate) fn from_reply(text: &str) -> Error {
        // A script's error may carry Redis's " script: ..." suffix: match
        // on the beginning.
        if text.starts_with("ERR increment or decrement would overflow")
            || text.starts_with("ERR decrement would overflow")
        {
            Error::Overflow
        } else if text.starts_with("ERR value is not an integer") {
            Error::NotInteger
        } else if text.starts_with("WRONGTYPE") {
            Error::WrongType
        } else if text.starts_with("ERR invalid expire time") {
            Error::InvalidTtl
        } else {
            Error::Server(text.to_string())
        }
    }
}

/// A type that a [`Cache`] can store: how its values are written as bytes
/// and read back.
pub trait Value: Sized {
    /// The stored form.
    fn encode(&self) -> Cow<'_, [u8]>;
    /// Reads a stored form back.
    fn decode(bytes: &[u8]) -> Result<Self, Error>;
}

/// Counters: base-10 integer text, as INCR writes it. Reading accepts
/// exactly what the servers' INCR accepts (no sign `+`, no spaces, no
/// leading zeros).
impl Value for i64 {
    fn encode(&self) -> Cow<'_, [u8]> {
        Cow::Owned(itoa::Buffer::new().format(*self).as_bytes().to_vec())
    }

    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        goblin_num::parse_i64(bytes).ok_or(Error::NotInteger)
    }
}

/// UTF-8 text.
impl Value for String {
    fn encode(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.as_bytes())
    }

    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        String::from_utf8(bytes.to_vec()).map_err(|e| Error::Decode(e.to_string()))
    }
}

/// Raw bytes.
impl Value for Vec<u8> {
    fn encode(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self)
    }

    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        Ok(bytes.to_vec())
    }
}

/// A key whose values are of type `T`.
///
/// ```
/// use goblin::cache::Key;
/// let views = Key::<i64>::new("article-views.v1:article-73");
/// assert_eq!(views.name(), b"article-views.v1:article-73");
/// ```
pub struct Key<T> {
    name: Box<[u8]>,
    _type: PhantomData<fn() -> T>,
}

impl<T> Key<T> {
    /// A key named `name` (any bytes).
    pub fn new(name: impl Into<Vec<u8>>) -> Key<T> {
        Key {
            name: name.into().into_boxed_slice(),
            _type: PhantomData,
        }
    }

    /// The key's name, as the server stores it.
    pub fn name(&self) -> &[u8] {
        &self.name
    }
}

impl<T> Clone for Key<T> {
    fn clone(&self) -> Self {
        Key {
            name: self.name.clone(),
            _type: PhantomData,
        }
    }
}

impl<T> PartialEq for Key<T> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl<T> Eq for Key<T> {}

impl<T> fmt::Debug for Key<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Key<{}>({:?})",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(&self.name)
        )
    }
}

/// A typed cache over a [`Store`] in the process or a server across the
/// network. Cheap to clone: clones share the store or the connection.
#[derive(Clone)]
pub struct Cache {
    driver: Driver,
}

#[derive(Clone)]
enum Driver {
    Embedded(embedded::Embedded),
    Remote(remote::Remote),
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.driver {
            Driver::Embedded(_) => f.write_str("Cache(embedded)"),
            Driver::Remote(r) => write!(f, "Cache(remote, {:?})", r.steps()),
        }
    }
}

impl Cache {
    /// A cache over a store in this process.
    pub fn embedded(store: Store) -> Cache {
        Cache {
            driver: Driver::Embedded(embedded::Embedded::new(store)),
        }
    }

    /// Connects to goblin-server, Redis or Valkey (7 or later) at `url`
    /// (`redis://host:port/db`, with `redis://user:password@...` when
    /// authentication is on).
    ///
    /// On connecting, the driver asks the server once which atomic steps it
    /// offers (`COMMAND INFO`): the GOBLIN.* commands where the server has
    /// them, Lua scripts (EVALSHA, falling back to EVAL) where it has not.
    /// An operation neither can do returns [`Error::Unsupported`].
    ///
    /// The connection is multiplexed (clones share it, requests are
    /// pipelined) with a 5 s connection timeout and a 5 s response timeout,
    /// and retries nothing: a request whose reply is lost or late is
    /// [`Error::Transport`]. For other settings, build the connection and
    /// use [`Cache::from_connection`].
    pub async fn connect(url: &str) -> Result<Cache, Error> {
        let client = redis::Client::open(url).map_err(|e| Error::Connect(Box::new(e)))?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(5)));
        let conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| Error::Connect(Box::new(e)))?;
        Cache::from_connection(conn).await
    }

    /// A cache over an established connection (see [`Cache::connect`]).
    pub async fn from_connection(conn: redis::aio::MultiplexedConnection) -> Result<Cache, Error> {
        Ok(Cache {
            driver: Driver::Remote(remote::Remote::new(conn).await?),
        })
    }

    /// The value at `key`, or `None` when it is absent or expired.
    pub async fn get<T: Value>(&self, key: &Key<T>) -> Result<Option<T>, Error> {
        let bytes = match &self.driver {
            Driver::Embedded(d) => d.get(key.name()).await?,
            Driver::Remote(d) => d.get(key.name()).await?,
        };
        bytes.map(|b| T::decode(&b)).transpose()
    }

    /// Stores `value` at `key`, replacing what was there and its TTL (the
    /// key then has no expiry).
    pub async fn put<T: Value>(&self, key: &Key<T>, value: &T) -> Result<(), Error> {
        let value = value.encode();
        match &self.driver {
            Driver::Embedded(d) => d.put(key.name(), &value).await,
            Driver::Remote(d) => d.put(key.name(), &value).await,
        }
    }

    /// Adds `delta` to the counter and returns the new value. A missing or
    /// expired counter starts from 0; the TTL is never changed.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), goblin::cache::Error> {
    /// # use goblin::cache::{Cache, Error, Key};
    /// let cache = Cache::embedded(goblin::Store::open_in_memory());
    /// let views = Key::<i64>::new("views");
    /// assert_eq!(cache.increment(&views, 5).await?, 5);
    /// cache.put(&views, &i64::MAX).await?;
    /// assert!(matches!(cache.increment(&views, 1).await, Err(Error::Overflow)));
    /// assert_eq!(cache.get(&views).await?, Some(i64::MAX));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn increment(&self, key: &Key<i64>, delta: i64) -> Result<i64, Error> {
        match &self.driver {
            Driver::Embedded(d) => d.increment(key.name(), delta).await,
            Driver::Remote(d) => d.increment(key.name(), delta).await,
        }
    }

    /// Subtracts `delta` from the counter and returns the new value,
    /// checking the mathematical result (every `delta`, `i64::MIN`
    /// included, is subtracted directly; never write
    /// `increment(key, -delta)`, which overflows for `i64::MIN`). A missing
    /// or expired counter starts from 0; the TTL is never changed.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), goblin::cache::Error> {
    /// # use goblin::cache::{Cache, Error, Key};
    /// let cache = Cache::embedded(goblin::Store::open_in_memory());
    /// let counter = Key::<i64>::new("adjustments");
    /// // 0 - i64::MIN is 2^63: rejected, and the counter is not created.
    /// assert!(matches!(cache.decrement(&counter, i64::MIN).await, Err(Error::Overflow)));
    /// assert_eq!(cache.get(&counter).await?, None);
    /// assert_eq!(cache.decrement(&counter, 1).await?, -1);
    /// assert_eq!(cache.decrement(&counter, i64::MIN).await?, i64::MAX);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn decrement(&self, key: &Key<i64>, delta: i64) -> Result<i64, Error> {
        match &self.driver {
            Driver::Embedded(d) => d.decrement(key.name(), delta).await,
            Driver::Remote(d) => d.decrement(key.name(), delta).await,
        }
    }

    /// Adds `delta` to the counter and makes sure it expires, in one atomic
    /// step; returns the new value and the time left before it expires.
    ///
    /// A missing or expired counter starts from 0 with `ttl`; an existing
    /// counter without expiry receives `ttl`; an existing expiring counter
    /// keeps its deadline, which never slides. `ttl` must be positive and
    /// at most [`MAX_TTL`] (else [`Error::InvalidTtl`]); a sub-millisecond
    /// part rounds up to a whole millisecond. When the increment is
    /// rejected, no expiry is added either.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), goblin::cache::Error> {
    /// # use goblin::cache::{Cache, Error, Key};
    /// # use std::time::Duration;
    /// let cache = Cache::embedded(goblin::Store::open_in_memory());
    /// let window = Key::<i64>::new("requests:account-7");
    /// let minute = Duration::from_secs(60);
    /// let (count, left) = cache.increment_with_ttl(&window, 1, minute).await?;
    /// assert_eq!(count, 1);
    /// assert!(left > Duration::ZERO && left <= minute);
    /// // A longer TTL later does not move the deadline.
    /// let (count, later) = cache.increment_with_ttl(&window, 1, minute * 2).await?;
    /// assert_eq!(count, 2);
    /// assert!(later <= left);
    /// assert!(matches!(
    ///     cache.increment_with_ttl(&window, 1, Duration::ZERO).await,
    ///     Err(Error::InvalidTtl)
    /// ));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn increment_with_ttl(
        &self,
        key: &Key<i64>,
        delta: i64,
        ttl: Duration,
    ) -> Result<(i64, Duration), Error> {
        let ms = ttl_ms(ttl)?;
        let (value, left_ms) = match &self.driver {
            Driver::Embedded(d) => d.increment_with_ttl(key.name(), delta, ms).await?,
            Driver::Remote(d) => d.increment_with_ttl(key.name(), delta, ms).await?,
        };
        Ok((value, remaining(left_ms)))
    }
}

/// A TTL in whole milliseconds, rounded up; InvalidTtl when zero or beyond
/// MAX_TTL.
fn ttl_ms(ttl: Duration) -> Result<u64, Error> {
    if ttl.is_zero() || ttl > MAX_TTL {
        return Err(Error::InvalidTtl);
    }
    // At most MAX_TTL, so the milliseconds fit a u64 with room to spare.
    Ok(ttl.as_nanos().div_ceil(1_000_000) as u64)
}

/// A remaining lifetime in milliseconds as the servers report it. Every
/// non-negative i64 count of milliseconds fits a Duration, so nothing
/// saturates in practice; a negative one (no expiry, which the steps rule
/// out) reads as zero.
fn remaining(ms: i64) -> Duration {
    Duration::from_millis(ms.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_round_up_to_whole_milliseconds() {
        assert_eq!(ttl_ms(Duration::from_nanos(1)).unwrap(), 1);
        assert_eq!(ttl_ms(Duration::from_micros(1500)).unwrap(), 2);
        assert_eq!(ttl_ms(Duration::from_millis(60_000)).unwrap(), 60_000);
        assert_eq!(ttl_ms(Duration::new(60, 1)).unwrap(), 60_001);
        assert_eq!(ttl_ms(MAX_TTL).unwrap(), (1 << 53) - 1);
        assert!(matches!(ttl_ms(Duration::ZERO), Err(Error::InvalidTtl)));
        assert!(matches!(
            ttl_ms(MAX_TTL + Duration::from_nanos(1)),
            Err(Error::InvalidTtl)
        ));
        assert!(matches!(ttl_ms(Duration::MAX), Err(Error::InvalidTtl)));
    }

    #[test]
    fn remaining_lifetimes_convert_without_overflow() {
        assert_eq!(remaining(i64::MAX), Duration::from_millis(i64::MAX as u64));
        assert_eq!(remaining(-1), Duration::ZERO);
        assert_eq!(remaining(1500), Duration::from_millis(1500));
    }

    #[test]
    fn error_replies_map_to_errors() {
        assert!(matches!(
            Error::from_reply("ERR increment or decrement would overflow"),
            Error::Overflow
        ));
        assert!(matches!(
            Error::from_reply(
                "ERR value is not an integer or out of range script: 1b2c, on @user_script:9."
            ),
            Error::NotInteger
        ));
        assert!(matches!(
            Error::from_reply("WRONGTYPE Operation against a key holding the wrong kind of value"),
            Error::WrongType
        ));
        assert!(matches!(
            Error::from_reply("OOM command not allowed when used memory > 'maxmemory'."),
            Error::Server(_)
        ));
    }

    #[test]
    fn counters_decode_as_incr_reads_them() {
        assert_eq!(i64::decode(b"-9223372036854775808").unwrap(), i64::MIN);
        assert_eq!(i64::encode(&i64::MIN).as_ref(), b"-9223372036854775808");
        for bad in [
            &b"+1"[..],
            b" 1",
            b"01",
            b"-0",
            b"1.0",
            b"",
            b"9223372036854775808",
        ] {
            assert!(
                matches!(i64::decode(bad), Err(Error::NotInteger)),
                "{bad:?}"
            );
        }
    }
}
