//! A custom cache driver: a `HashMap` behind a `Mutex`, in this process,
//! checked with the crate's conformance kit (`goblin::cache::conformance`),
//! the cases every driver of the crate passes.
//!
//! Each operation holds the lock from its read to its write, so each is one
//! atomic step, as `goblin::cache::Driver` requires. The driver can also be
//! made without increment-and-expiry (`MapDriver::without_windows`), to
//! stand for a store that cannot do that in one step: it then returns
//! `Error::Unsupported`, as the rule says, and never an increment followed
//! by a separate expiry. The kit accepts that and checks everything else.
//!
//!     cargo run --example map_driver --features conformance

use goblin::cache::{conformance, Cache, Driver, Error, Key, Ttl, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// An entry: the bytes and the deadline, if any.
type Entry = (Vec<u8>, Option<Instant>);

/// A cache driver over a map in this process.
#[derive(Debug, Default)]
pub struct MapDriver {
    map: Mutex<HashMap<Vec<u8>, Entry>>,
    no_windows: bool,
}

impl MapDriver {
    /// A driver that does every operation.
    pub fn new() -> MapDriver {
        MapDriver::default()
    }

    /// A driver that says `Unsupported` for `increment_with_ttl`.
    pub fn without_windows() -> MapDriver {
        MapDriver {
            no_windows: true,
            ..MapDriver::default()
        }
    }

    /// Runs `f` on the live entry at `key` (an expired one is removed
    /// first), under the lock.
    fn with<R>(&self, key: &[u8], f: impl FnOnce(&mut Option<Entry>) -> R) -> R {
        let mut map = self.map.lock().unwrap();
        let mut entry = map.remove(key);
        if matches!(entry, Some((_, Some(deadline))) if deadline <= Instant::now()) {
            entry = None;
        }
        let result = f(&mut entry);
        if let Some(entry) = entry {
            map.insert(key.to_vec(), entry);
        }
        result
    }

    /// Applies `op` to the counter at `key` (0 when missing), keeping its
    /// deadline; `ttl` is given to a counter that has none.
    fn update(
        &self,
        key: &[u8],
        op: impl FnOnce(i64) -> Option<i64>,
        ttl: Option<Duration>,
    ) -> Result<(i64, Option<Instant>), Error> {
        self.with(key, |entry| {
            let (current, deadline) = match entry {
                Some((bytes, deadline)) => (i64::decode(bytes)?, *deadline),
                None => (0, None),
            };
            // Checked before anything is written: a rejected call changes
            // nothing, and a missing counter stays missing.
            let value = op(current).ok_or(Error::Overflow)?;
            let deadline = deadline.or(ttl.map(|t| Instant::now() + t));
            *entry = Some((value.encode().into_owned(), deadline));
            Ok((value, deadline))
        })
    }
}

#[async_trait::async_trait]
impl Driver for MapDriver {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.with(key, |entry| entry.as_ref().map(|(v, _)| v.clone())))
    }

    async fn put(&self, key: &[u8], value: &[u8], ttl: Option<Duration>) -> Result<(), Error> {
        let deadline = ttl.map(|t| Instant::now() + t);
        self.with(key, |entry| *entry = Some((value.to_vec(), deadline)));
        Ok(())
    }

    async fn delete(&self, key: &[u8]) -> Result<bool, Error> {
        Ok(self.with(key, |entry| entry.take().is_some()))
    }

    async fn ttl(&self, key: &[u8]) -> Result<Ttl, Error> {
        Ok(self.with(key, |entry| match entry {
            None => Ttl::Absent,
            Some((_, None)) => Ttl::Persistent,
            Some((_, Some(deadline))) => {
                Ttl::Expires(deadline.saturating_duration_since(Instant::now()))
            }
        }))
    }

    async fn increment(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        Ok(self.update(key, |v| v.checked_add(delta), None)?.0)
    }

    async fn decrement(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        // checked_sub subtracts i64::MIN directly: -1 - i64::MIN is
        // i64::MAX, and 0 - i64::MIN overflows.
        Ok(self.update(key, |v| v.checked_sub(delta), None)?.0)
    }

    async fn increment_with_ttl(
        &self,
        key: &[u8],
        delta: i64,
        ttl: Duration,
    ) -> Result<(i64, Duration), Error> {
        if self.no_windows {
            return Err(Error::Unsupported(
                "this store cannot increment and set an expiry in one step",
            ));
        }
        let (value, deadline) = self.update(key, |v| v.checked_add(delta), Some(ttl))?;
        let deadline = deadline.expect("a counter given a TTL has a deadline");
        Ok((value, deadline.saturating_duration_since(Instant::now())))
    }
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Error> {
    conformance::run(MapDriver::new()).await;
    println!("MapDriver passes the conformance kit");
    conformance::run(MapDriver::without_windows()).await;
    println!("MapDriver::without_windows passes it too, saying Unsupported for increment_with_ttl");

    let cache = Cache::new(MapDriver::new());
    let views = Key::<i64>::new("article-views.v1:article-73");
    cache.increment(&views, 1).await?;
    println!("views: {:?}", cache.get(&views).await?);
    Ok(())
}
