//! An axum application rate-limited per API key by `goblin::ratelimit`,
//! counting on an embedded store: it runs with no server. Three requests a
//! minute per key (a fixed window); a fourth is refused with 429 and the
//! `RateLimit-*` and `Retry-After` headers. The requests go to the router
//! in-process (tower's `oneshot`), as a listener would hand them over.
//!
//!     cargo run --example ratelimit_axum --features ratelimit
//!
//! For a shared limit across processes, connect the cache to goblin-server
//! or Redis instead (`Cache::connect("redis://127.0.0.1:6379/")`).

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::Router;
use goblin::cache::Cache;
use goblin::ratelimit::{Algorithm, OnStoreError, RateLimitLayer};
use goblin::Store;
use std::time::Duration;
use tower::ServiceExt;

/// The application: `/export` limited to three requests a minute per
/// `x-api-key`; requests without a key are not limited here (an
/// authentication layer would refuse them).
pub fn app(cache: Cache) -> Router {
    let limit = RateLimitLayer::new(
        cache,
        Algorithm::FixedWindow {
            limit: 3,
            window: Duration::from_secs(60),
        },
        |req: &Request<Body>| {
            let api_key = req.headers().get("x-api-key")?.to_str().ok()?;
            Some(format!("export-requests.v1:{api_key}"))
        },
    )
    // A store that fails refuses exports rather than let them all through.
    .on_store_error(OnStoreError::FailClosed);
    Router::new()
        .route("/export", get(|| async { "export started\n" }))
        .layer(limit)
}

/// Sends four requests with one key and one with another; prints each
/// response's status and rate-limit headers, and returns the statuses.
pub async fn run() -> Vec<u16> {
    let app = app(Cache::embedded(Store::open_in_memory()));
    let mut statuses = vec![];
    for api_key in ["key-7", "key-7", "key-7", "key-7", "key-9"] {
        let request = Request::get("/export")
            .header("x-api-key", api_key)
            .body(Body::empty())
            .unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        let h = |name: &str| {
            response
                .headers()
                .get(name)
                .map_or("-", |v| v.to_str().unwrap_or("?"))
                .to_string()
        };
        println!(
            "{api_key}: {} limit={} remaining={} reset={}s retry-after={}",
            response.status(),
            h("ratelimit-limit"),
            h("ratelimit-remaining"),
            h("ratelimit-reset"),
            h("retry-after"),
        );
        statuses.push(response.status().as_u16());
    }
    assert_ne!(statuses[3], StatusCode::OK.as_u16());
    statuses
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    run().await;
}
