//! A fixed-window rate limiter on `Cache::increment_with_ttl`: at most
//! `limit` requests per account in each window, the window starting with
//! the account's first request. Runs with no server: the cache is an
//! embedded store.
//!
//!     cargo run --example rate_limit

use goblin::cache::{Cache, Error, Key};
use goblin::Store;
use std::time::Duration;

/// At most `limit` requests per `window`, counted per account.
struct FixedWindow {
    cache: Cache,
    limit: i64,
    window: Duration,
}

enum Decision {
    Allow { remaining: i64 },
    Deny { retry_after: Duration },
}

impl FixedWindow {
    /// Counts the request and decides. One atomic step: the count and the
    /// window's expiry are set together, so a crash cannot leave a count
    /// that never resets, and concurrent requests cannot both take the last
    /// slot.
    async fn check(&self, account: &str) -> Result<Decision, Error> {
        let key = Key::<i64>::new(format!("export-requests.v1:{account}"));
        let (count, left) = self.cache.increment_with_ttl(&key, 1, self.window).await?;
        Ok(if count <= self.limit {
            Decision::Allow {
                remaining: self.limit - count,
            }
        } else {
            Decision::Deny { retry_after: left }
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let limiter = FixedWindow {
        cache: Cache::embedded(Store::open_in_memory()),
        limit: 3,
        window: Duration::from_millis(500),
    };
    for round in 1..=2 {
        println!("window {round}:");
        for request in 1..=5 {
            match limiter.check("account-7").await? {
                Decision::Allow { remaining } => {
                    println!("  request {request}: allowed, {remaining} left in this window")
                }
                Decision::Deny { retry_after } => {
                    println!("  request {request}: denied, retry after {retry_after:?}");
                    if request == 5 && round == 1 {
                        // Wait for the window to end: the counter expires
                        // and the next request opens a new window.
                        tokio::time::sleep(retry_after + Duration::from_millis(5)).await;
                    }
                }
            }
        }
    }
    // Another account has its own window.
    if let Decision::Allow { remaining } = limiter.check("account-9").await? {
        println!("account-9: allowed, {remaining} left");
    }
    Ok(())
}
