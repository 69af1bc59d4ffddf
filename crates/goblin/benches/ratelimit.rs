//! The rate-limit middleware's added latency per request, on the embedded
//! driver: one tower service, called in a loop on one thread of a tokio
//! current-thread runtime, without the layer and with it:
//!
//! - `no layer`: the service alone (the baseline);
//! - `layer, no key`: the key function returns None (the layer's own cost:
//!   the boxed future, the service clone);
//! - `fixed window`: every request counted (GOBLIN.INCRTTL through the
//!   embedded store) and the RateLimit-* headers added;
//! - `gcra`: every request throttled (CL.THROTTLE) and the headers added.
//!
//! - the two cache calls alone, without a service: what the store's step
//!   costs, so that the rest is the layer's.
//!
//! The limits are high enough that every request passes.
//!
//!     cargo bench -p goblin --features ratelimit --bench ratelimit

use criterion::{criterion_group, criterion_main, Criterion};
use goblin::cache::Cache;
use goblin::ratelimit::{Algorithm, RateLimitLayer};
use goblin::Store;
use http::{Request, Response};
use std::convert::Infallible;
use std::hint::black_box;
use std::time::Duration;
use tower::{Layer, Service, ServiceExt};

fn request() -> Request<()> {
    Request::builder()
        .header("x-api-key", "key-7")
        .body(())
        .unwrap()
}

/// Calls `service` once, as a server does with its clone of the
/// application's service (hyper and axum clone it per request): wait until
/// ready, then call.
async fn once<S>(service: &mut S) -> Response<String>
where
    S: Service<Request<()>, Response = Response<String>, Error = Infallible>,
{
    service
        .ready()
        .await
        .unwrap()
        .call(request())
        .await
        .unwrap()
}

fn ratelimit(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cache = Cache::embedded(Store::open_in_memory());
    let inner = tower::service_fn(|_req: Request<()>| async {
        Ok::<_, Infallible>(Response::new(String::new()))
    });
    let hour = Duration::from_secs(3600);
    let api_key = |req: &Request<()>| {
        let k = req.headers().get("x-api-key")?.to_str().ok()?;
        Some(format!("api-requests.v1:{k}"))
    };
    let window = Algorithm::FixedWindow {
        limit: u64::MAX,
        window: hour,
    };
    // One request a microsecond for an hour, all in one burst: never
    // refused within the benchmark.
    let gcra = Algorithm::Gcra {
        limit: 3_600_000_000,
        period: hour,
    };

    let mut g = c.benchmark_group("ratelimit");
    let plain = inner;
    g.bench_function("no layer", |b| {
        b.to_async(&rt).iter(|| {
            let mut s = plain;
            async move { black_box(once(&mut s).await) }
        })
    });
    let unkeyed = RateLimitLayer::new(cache.clone(), window, |_: &Request<()>| None).layer(inner);
    g.bench_function("layer, no key", |b| {
        b.to_async(&rt).iter(|| {
            let mut s = unkeyed.clone();
            async move { black_box(once(&mut s).await) }
        })
    });
    let fixed = RateLimitLayer::new(cache.clone(), window, api_key).layer(inner);
    g.bench_function("fixed window", |b| {
        b.to_async(&rt).iter(|| {
            let mut s = fixed.clone();
            async move { black_box(once(&mut s).await) }
        })
    });
    let throttled = RateLimitLayer::new(cache.clone(), gcra, api_key).layer(inner);
    g.bench_function("gcra", |b| {
        b.to_async(&rt).iter(|| {
            let mut s = throttled.clone();
            async move { black_box(once(&mut s).await) }
        })
    });
    // The cache calls alone, for the layer's share of the rows above.
    let key = goblin::cache::Key::<i64>::new("api-requests.v1:direct");
    g.bench_function("cache.increment_with_ttl alone", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(cache.increment_with_ttl(&key, 1, hour).await.unwrap()) })
    });
    let limiter = goblin::cache::Key::<i64>::new("api-requests.v1:direct-gcra");
    g.bench_function("cache.throttle alone", |b| {
        b.to_async(&rt).iter(|| async {
            black_box(
                cache
                    .throttle(&limiter, 3_599_999_999, 3_600_000_000, hour, 1)
                    .await
                    .unwrap(),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, ratelimit);
criterion_main!(benches);
