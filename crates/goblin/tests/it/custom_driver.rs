//! A custom driver (examples/map_driver.rs: a `HashMap` behind a `Mutex`)
//! passes the published conformance kit, with increment_with_ttl and
//! without it (Unsupported, which the kit accepts); and the kit does catch
//! a driver that breaks the rules.

#[path = "../../examples/map_driver.rs"]
#[allow(dead_code)]
mod map_driver;

use goblin::cache::{conformance, Driver, Error, Ttl};
use map_driver::MapDriver;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_map_driver_passes_the_kit() {
    conformance::run(MapDriver::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_map_driver_without_windows_passes_the_kit_saying_unsupported() {
    conformance::run(MapDriver::without_windows()).await;
}

/// A driver that emulates increment_with_ttl with two steps and so lets a
/// counter's deadline slide: what the rule forbids.
#[derive(Debug)]
struct Sliding(MapDriver);

#[async_trait::async_trait]
impl Driver for Sliding {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.0.get(key).await
    }
    async fn put(&self, key: &[u8], value: &[u8], ttl: Option<Duration>) -> Result<(), Error> {
        self.0.put(key, value, ttl).await
    }
    async fn delete(&self, key: &[u8]) -> Result<bool, Error> {
        self.0.delete(key).await
    }
    async fn ttl(&self, key: &[u8]) -> Result<Ttl, Error> {
        self.0.ttl(key).await
    }
    async fn increment(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        self.0.increment(key, delta).await
    }
    async fn decrement(&self, key: &[u8], delta: i64) -> Result<i64, Error> {
        self.0.decrement(key, delta).await
    }
    async fn increment_with_ttl(
        &self,
        key: &[u8],
        delta: i64,
        ttl: Duration,
    ) -> Result<(i64, Duration), Error> {
        let value = self.0.increment(key, delta).await?;
        let bytes = self.0.get(key).await?.unwrap_or_default();
        self.0.put(key, &bytes, Some(ttl)).await?;
        Ok((value, ttl))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_kit_fails_a_driver_that_emulates_increment_with_ttl() {
    let run = tokio::spawn(conformance::run(Sliding(MapDriver::new())));
    let err = run.await.unwrap_err();
    let payload = err.into_panic();
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message
            .starts_with("conformance case `increment_with_ttl_never_slides_the_deadline` failed"),
        "{message}"
    );
}
