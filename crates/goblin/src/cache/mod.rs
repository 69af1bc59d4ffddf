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
//! A [`Cache`] runs on a [`Driver`]:
//!
//! - [`Cache::embedded`] ([`EmbeddedDriver`], feature `embedded`, on by
//!   default): a [`Store`](crate::Store) in the same process. Separate
//!   stores keep separate counts; share one `Store` (or one server) for a
//!   count that is shared.
//! - [`Cache::connect`] ([`RemoteDriver`], feature `remote`): goblin-server,
//!   or any Redis or Valkey 7 or later, over the network through the `redis`
//!   crate's `ConnectionManager`, which reconnects in the background.
//!   [`Cache::from_connection`] takes any other redis-rs connection (your
//!   own manager, a pool's connection, a cluster connection).
//! - [`Cache::connect_cluster`] ([`ClusterDriver`], feature `remote`): a
//!   Redis Cluster; each key goes to the node that serves its slot.
//! - [`Cache::new`]: a [`Driver`] of your own.
//!
//! All give the same results and the same errors for the same calls: the
//! crate's tests run one suite of cases ([`conformance`], feature
//! `conformance`) against the embedded store, goblin-server, Redis 7.0 and
//! a three-node Redis Cluster, and a custom driver's tests can run it too.
//!
//! # Values and the write TTL
//!
//! A [`Key<T>`] stores values of type `T`: `i64` (counters), `String`,
//! `Vec<u8>`, or any serde type as [`Json<T>`] (feature `serde`). A key may
//! declare a write TTL ([`Key::with_write_ttl`]): [`Cache::put`] applies it
//! (the value expires that long after each put), [`Cache::put_with_ttl`]
//! overrides it for one call, and the counters ignore it, as said below.
//!
//! # Counters
//!
//! - [`Cache::increment`] and [`Cache::decrement`] are atomic. A missing or
//!   expired counter starts from 0. They never change the TTL, and ignore
//!   the key's write TTL: a new counter has no expiry, an existing one keeps
//!   its own.
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
//! after it, or the same action may count twice. [`Error::Unavailable`]
//! says the opposite: the store could not be reached and nothing was sent,
//! so the call may be repeated ([`Error::outcome_unknown`] tells the two
//! apart).
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

#[cfg(feature = "conformance")]
pub mod conformance;
mod driver;
#[cfg(feature = "embedded")]
mod embedded;
#[cfg(feature = "remote")]
mod remote;
#[cfg(feature = "remote")]
mod scripts;
mod throttle;

pub use driver::Driver;
#[cfg(feature = "embedded")]
pub use embedded::EmbeddedDriver;
#[cfg(feature = "remote")]
pub use remote::{ClusterDriver, RemoteDriver, Steps};

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// The `redis` crate the remote driver is built on, for
/// [`Cache::from_connection`].
#[cfg(feature = "remote")]
pub use redis;
pub use throttle::{Rate, Throttle, MAX_THROTTLE_SPAN};

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
    /// The store could not be reached for this call (the connection is
    /// down and reconnecting failed), and nothing was sent: the operation
    /// was not applied, and may be retried.
    #[error("the store is unreachable, nothing was sent: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The server is older than the cache supports: it reports the Redis
    /// version given, and the cache needs Redis 7.0 or later (its scripts
    /// use PEXPIRE's NX option). Nothing was sent beyond the handshake.
    #[error("the server reports Redis {0}; the cache needs Redis 7.0 or later")]
    ServerVersion(String),
}

impl Error {
    /// True when the operation may or may not have been applied
    /// ([`Error::Transport`]). False for every other error: a rejection
    /// changed nothing, and [`Error::Unavailable`] sent nothing.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, Error::Transport(_))
    }

    /// The error for an error reply's text (the same texts on every server:
    /// Goblin's are Redis's), for drivers over a Redis-compatible store.
    pub fn from_reply(text: &str) -> Error {
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

/// Any serde type as a cache value, stored as JSON text (feature `serde`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), goblin::cache::Error> {
/// use goblin::cache::{Cache, Json, Key};
/// #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
/// struct Profile { name: String, visits: u32 }
///
/// let cache = Cache::embedded(goblin::Store::open_in_memory());
/// let key = Key::<Json<Profile>>::new("profile:7");
/// cache.put(&key, &Json(Profile { name: "Ada".into(), visits: 3 })).await?;
/// let Json(profile) = cache.get(&key).await?.unwrap();
/// assert_eq!(profile.visits, 3);
/// // Any Redis client reads it as JSON.
/// let text = cache.get(&Key::<String>::new("profile:7")).await?.unwrap();
/// assert_eq!(text, r#"{"name":"Ada","visits":3}"#);
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "serde")]
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

#[cfg(feature = "serde")]
impl<T: serde::Serialize + serde::de::DeserializeOwned> Value for Json<T> {
    fn encode(&self) -> Cow<'_, [u8]> {
        // Serializing into a Vec fails only for a type whose Serialize
        // impl fails (a map with non-string keys...): a bug in that type,
        // as it would be for a panic in Display.
        Cow::Owned(serde_json::to_vec(&self.0).expect("a value that serializes to JSON"))
    }

    fn decode(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes)
            .map(Json)
            .map_err(|e| Error::Decode(e.to_string()))
    }
}

/// How long a key has left, as [`Cache::ttl`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// The key is absent (or expired).
    Absent,
    /// The key exists and has no expiry.
    Persistent,
    /// The key expires after this time.
    Expires(Duration),
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
    write_ttl: Option<Duration>,
    _type: PhantomData<fn() -> T>,
}

impl<T> Key<T> {
    /// A key named `name` (any bytes).
    pub fn new(name: impl Into<Vec<u8>>) -> Key<T> {
        Key {
            name: name.into().into_boxed_slice(),
            write_ttl: None,
            _type: PhantomData,
        }
    }

    /// The same key with a declared write TTL: each [`Cache::put`] stores
    /// the value to expire `ttl` later. The counters ignore it
    /// ([`Cache::increment`], [`Cache::decrement`]), and so does
    /// [`Cache::increment_with_ttl`], which takes its TTL as an argument.
    ///
    /// ```
    /// use goblin::cache::Key;
    /// use std::time::Duration;
    /// let session = Key::<String>::new("session:7").with_write_ttl(Duration::from_secs(1800));
    /// assert_eq!(session.write_ttl(), Some(Duration::from_secs(1800)));
    /// ```
    pub fn with_write_ttl(mut self, ttl: Duration) -> Key<T> {
        self.write_ttl = Some(ttl);
        self
    }

    /// The declared write TTL, if any.
    pub fn write_ttl(&self) -> Option<Duration> {
        self.write_ttl
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
            write_ttl: self.write_ttl,
            _type: PhantomData,
        }
    }
}

impl<T> PartialEq for Key<T> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.write_ttl == other.write_ttl
    }
}

impl<T> Eq for Key<T> {}

impl<T> fmt::Debug for Key<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Key<{}>({:?}",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(&self.name)
        )?;
        match self.write_ttl {
            Some(ttl) => write!(f, ", write TTL {ttl:?})"),
            None => f.write_str(")"),
        }
    }
}

/// A typed cache over a [`Driver`]: a [`Store`](crate::Store) in the
/// process, a server or a cluster across the network, or a driver of your
/// own. Cheap to clone: clones share the driver (and its store or
/// connection).
///
/// The driver is held as an `Arc<dyn Driver>` rather than as a type
/// parameter, so that `Cache` is one type whatever the driver (a field,
/// a function argument, or a middleware holds a `Cache` and the driver is
/// chosen by configuration at run time). The cost is one boxed future per
/// call, small beside a lock or a network round trip.
#[derive(Clone)]
pub struct Cache {
    driver: Arc<dyn Driver>,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cache({:?})", self.driver)
    }
}

impl Cache {
    /// A cache over `driver`.
    pub fn new(driver: impl Driver) -> Cache {
        Cache {
            driver: Arc::new(driver),
        }
    }

    /// A cache over a shared driver.
    pub fn from_arc(driver: Arc<dyn Driver>) -> Cache {
        Cache { driver }
    }

    /// The driver.
    pub fn driver(&self) -> &Arc<dyn Driver> {
        &self.driver
    }

    /// A cache over a store in this process.
    #[cfg(feature = "embedded")]
    pub fn embedded(store: crate::Store) -> Cache {
        Cache::new(EmbeddedDriver::new(store))
    }

    /// Connects to goblin-server, Redis or Valkey (7 or later) at `url`
    /// (`redis://host:port/db`, with `redis://user:password@...` when
    /// authentication is on).
    ///
    /// The connection is the `redis` crate's `ConnectionManager`:
    /// multiplexed (clones share it, requests are pipelined), with a 5 s
    /// connection timeout and a 5 s response timeout, and reconnecting in
    /// the background when it drops (up to 3 attempts per reconnection, the
    /// next call starting a new round). It never repeats a request that
    /// may have been sent: a request whose reply is lost or late is
    /// [`Error::Transport`]. A request that could not be sent because the
    /// connection could not be made is tried once more (it waits for a new
    /// round), and [`Error::Unavailable`] if that fails too. For other
    /// settings, build the connection and use [`Cache::from_connection`].
    ///
    /// On connecting, the driver checks the server's version (INFO server:
    /// a Redis older than 7.0 is [`Error::ServerVersion`]) and asks once
    /// which atomic steps it offers (`COMMAND INFO`): the GOBLIN.* commands
    /// where the server has them, Lua scripts (EVALSHA, falling back to
    /// EVAL) where it has not. An operation neither can do returns
    /// [`Error::Unsupported`].
    #[cfg(feature = "remote")]
    pub async fn connect(url: &str) -> Result<Cache, Error> {
        let client = redis::Client::open(url).map_err(|e| Error::Connect(Box::new(e)))?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(5)))
            .set_number_of_retries(3)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_secs(1));
        let conn = redis::aio::ConnectionManager::new_with_config(client, config)
            .await
            .map_err(|e| Error::Connect(Box::new(e)))?;
        Cache::from_connection(conn).await
    }

    /// Connects to a Redis Cluster through any of its nodes (`urls`, each
    /// as for [`Cache::connect`]), with redis-rs's cluster connection: each
    /// key goes to the node that serves its slot, following MOVED and ASK.
    /// The GOBLIN.* commands are used where the nodes have them (Goblin's
    /// module, `libgoblin_module.so`, loaded on every node), and the Lua
    /// scripts otherwise.
    #[cfg(feature = "remote")]
    pub async fn connect_cluster<I, T>(urls: I) -> Result<Cache, Error>
    where
        I: IntoIterator<Item = T>,
        T: redis::IntoConnectionInfo,
    {
        let client = redis::cluster::ClusterClient::builder(urls)
            .connection_timeout(Duration::from_secs(5))
            .response_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| Error::Connect(Box::new(e)))?;
        let conn = client
            .get_async_connection()
            .await
            .map_err(|e| Error::Connect(Box::new(e)))?;
        Cache::from_connection(conn).await
    }

    /// A cache over an established redis-rs connection: a
    /// `MultiplexedConnection`, a `ConnectionManager`, a cluster connection,
    /// or any other `redis::aio::ConnectionLike` that is cheap to clone
    /// (each call runs on a clone). The server is checked as by
    /// [`Cache::connect`].
    #[cfg(feature = "remote")]
    pub async fn from_connection<C>(conn: C) -> Result<Cache, Error>
    where
        C: redis::aio::ConnectionLike + Clone + Send + Sync + 'static,
    {
        Ok(Cache::new(RemoteDriver::new(conn).await?))
    }

    /// The value at `key`, or `None` when it is absent or expired.
    pub async fn get<T: Value>(&self, key: &Key<T>) -> Result<Option<T>, Error> {
        let bytes = self.driver.get(key.name()).await?;
        bytes.map(|b| T::decode(&b)).transpose()
    }

    /// Stores `value` at `key`, replacing what was there and its TTL: the
    /// key then expires after its declared write TTL
    /// ([`Key::with_write_ttl`]), or never when it declares none.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), goblin::cache::Error> {
    /// # use goblin::cache::{Cache, Key, Ttl};
    /// # use std::time::Duration;
    /// let cache = Cache::embedded(goblin::Store::open_in_memory());
    /// let minute = Duration::from_secs(60);
    /// let greeting = Key::<String>::new("greeting").with_write_ttl(minute);
    /// cache.put(&greeting, &"hello".to_string()).await?;
    /// assert!(matches!(cache.ttl(&greeting).await?, Ttl::Expires(left) if left <= minute));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn put<T: Value>(&self, key: &Key<T>, value: &T) -> Result<(), Error> {
        let ttl = key.write_ttl.map(ttl_ms).transpose()?;
        let value = value.encode();
        self.driver
            .put(key.name(), &value, ttl.map(Duration::from_millis))
            .await
    }

    /// Stores `value` at `key` to expire after `ttl`, whatever the key's
    /// write TTL. `ttl` must be positive and at most [`MAX_TTL`] (else
    /// [`Error::InvalidTtl`], and nothing is stored); a sub-millisecond
    /// part rounds up.
    pub async fn put_with_ttl<T: Value>(
        &self,
        key: &Key<T>,
        value: &T,
        ttl: Duration,
    ) -> Result<(), Error> {
        let ms = ttl_ms(ttl)?;
        let value = value.encode();
        self.driver
            .put(key.name(), &value, Some(Duration::from_millis(ms)))
            .await
    }

    /// Removes `key`; true when it was there.
    pub async fn delete<T>(&self, key: &Key<T>) -> Result<bool, Error> {
        self.driver.delete(key.name()).await
    }

    /// How long `key` has left: [`Ttl::Absent`], [`Ttl::Persistent`] (no
    /// expiry), or [`Ttl::Expires`] with the time left.
    pub async fn ttl<T>(&self, key: &Key<T>) -> Result<Ttl, Error> {
        self.driver.ttl(key.name()).await
    }

    /// Adds `delta` to the counter and returns the new value. A missing or
    /// expired counter starts from 0; the TTL is never changed, and the
    /// key's write TTL is ignored.
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
        self.driver.increment(key.name(), delta).await
    }

    /// Subtracts `delta` from the counter and returns the new value,
    /// checking the mathematical result (every `delta`, `i64::MIN`
    /// included, is subtracted directly; never write
    /// `increment(key, -delta)`, which overflows for `i64::MIN`). A missing
    /// or expired counter starts from 0; the TTL is never changed, and the
    /// key's write TTL is ignored.
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
        self.driver.decrement(key.name(), delta).await
    }

    /// Adds `delta` to the counter and makes sure it expires, in one atomic
    /// step; returns the new value and the time left before it expires.
    ///
    /// A missing or expired counter starts from 0 with `ttl`; an existing
    /// counter without expiry receives `ttl`; an existing expiring counter
    /// keeps its deadline, which never slides. `ttl` must be positive and
    /// at most [`MAX_TTL`] (else [`Error::InvalidTtl`]); a sub-millisecond
    /// part rounds up to a whole millisecond. The key's write TTL plays no
    /// part. When the increment is rejected, no expiry is added either. A
    /// driver that cannot do this atomically says [`Error::Unsupported`].
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
        self.driver
            .increment_with_ttl(key.name(), delta, Duration::from_millis(ms))
            .await
    }
}

/// A TTL in whole milliseconds, rounded up; InvalidTtl when zero or beyond
/// MAX_TTL.
pub(crate) fn ttl_ms(ttl: Duration) -> Result<u64, Error> {
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
#[cfg_attr(not(any(feature = "embedded", feature = "remote")), allow(dead_code))]
pub(crate) fn remaining(ms: i64) -> Duration {
    Duration::from_millis(ms.max(0) as u64)
}

/// A PTTL reply as a [`Ttl`]: -2 absent, -1 no expiry.
#[cfg_attr(not(any(feature = "embedded", feature = "remote")), allow(dead_code))]
pub(crate) fn ttl_of_pttl(ms: i64) -> Ttl {
    match ms {
        -2 => Ttl::Absent,
        ms if ms < 0 => Ttl::Persistent,
        ms => Ttl::Expires(remaining(ms)),
    }
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
