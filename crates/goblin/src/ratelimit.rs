//! Rate-limiting middleware for tower services (axum, tonic, hyper), on a
//! [`Cache`]: the `ratelimit` feature.
//!
//! [`RateLimitLayer`] wraps a service whose responses are
//! [`http::Response`]s; the requests may be of any type. For each request
//! a key function names the limiter that counts it (an account, an API
//! key, a client address), or returns `None` to let it through unlimited.
//! The count is one atomic step on the cache, so every process sharing a
//! store (an embedded one) or a server (goblin-server, Redis, Valkey)
//! shares the limits.
//!
//! # Algorithms
//!
//! - [`Algorithm::FixedWindow`]: at most `limit` requests per `window`,
//!   on [`Cache::increment_with_ttl`]. The window starts with a key's
//!   first request and never slides; the next request after its end opens
//!   a new one. A client may pass `limit` requests at the end of one
//!   window and `limit` more at the start of the next.
//! - [`Algorithm::Gcra`]: `limit` requests per `period`, all of which may
//!   come at once, on [`Cache::throttle`] (CL.THROTTLE's generic cell rate
//!   algorithm). Capacity comes back steadily, one request every
//!   `period / limit`, so there is no window edge to exploit.
//!
//! # Responses
//!
//! A refused request gets `429 Too Many Requests` with an empty body, and
//! the inner service does not see it. Allowed and refused responses both
//! carry the headers of the IETF draft *RateLimit header fields for HTTP*
//! (draft-ietf-httpapi-ratelimit-headers, in its form with one field per
//! value): `RateLimit-Limit` (the limit), `RateLimit-Remaining` (requests
//! left now) and `RateLimit-Reset` (seconds until the quota is whole
//! again: the window's end, or until the GCRA limiter is back to full
//! capacity); a refused one carries `Retry-After` (seconds, RFC 9110)
//! too. Seconds are rounded up, so that a client waiting them is not
//! early.
//!
//! # When the store fails
//!
//! A request is counted once: the middleware never repeats a cache call.
//! After [`Error::Transport`](crate::cache::Error::Transport) the count may
//! have been applied, and repeating it could count the request twice. Any
//! failure (unreachable store, transport failure, an error reply) is
//! decided by [`OnStoreError`]: let the request through without limits
//! ([`OnStoreError::FailOpen`], the default), or refuse it with `503
//! Service Unavailable` ([`OnStoreError::FailClosed`]). Not 429: the
//! client did nothing wrong, and no `RateLimit-*` figures are known to
//! send.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use goblin::cache::Cache;
//! use goblin::ratelimit::{Algorithm, RateLimitLayer};
//! use http::{Request, Response, StatusCode};
//! use std::convert::Infallible;
//! use std::time::Duration;
//! use tower::{service_fn, Layer, ServiceExt};
//!
//! let cache = Cache::embedded(goblin::Store::open_in_memory());
//! // Two requests a minute per API key; requests without one pass.
//! let layer = RateLimitLayer::new(
//!     cache,
//!     Algorithm::FixedWindow { limit: 2, window: Duration::from_secs(60) },
//!     |req: &Request<()>| {
//!         let api_key = req.headers().get("x-api-key")?.to_str().ok()?;
//!         Some(format!("api-requests.v1:{api_key}"))
//!     },
//! );
//! let app = layer.layer(service_fn(|_req: Request<()>| async {
//!     Ok::<_, Infallible>(Response::new(String::from("hello")))
//! }));
//! let request = || Request::builder().header("x-api-key", "k-1").body(()).unwrap();
//!
//! let first = app.clone().oneshot(request()).await.unwrap();
//! assert_eq!(first.status(), StatusCode::OK);
//! assert_eq!(first.headers()["ratelimit-remaining"], "1");
//! app.clone().oneshot(request()).await.unwrap();
//! let third = app.clone().oneshot(request()).await.unwrap();
//! assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
//! assert_eq!(third.headers()["ratelimit-remaining"], "0");
//! assert!(third.headers().contains_key("retry-after"));
//! # }
//! ```

use crate::cache::{Cache, Key};
use http::header::{HeaderName, HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

/// `RateLimit-Limit`: the requests the quota allows.
pub const RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
/// `RateLimit-Remaining`: the requests left in the quota now.
pub const RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
/// `RateLimit-Reset`: the seconds until the quota is whole again.
pub const RATELIMIT_RESET: HeaderName = HeaderName::from_static("ratelimit-reset");

/// How requests are counted against a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// At most `limit` requests in each `window`, on
    /// [`Cache::increment_with_ttl`]: the window opens with a key's first
    /// request and closes `window` later. One atomic step counts a request
    /// and decides, so refused requests are counted too; that changes
    /// nothing but the count, as the window never slides.
    FixedWindow {
        /// The requests allowed per window (at least 1).
        limit: u64,
        /// The window's length (at least 1 ms, at most
        /// [`MAX_TTL`](crate::cache::MAX_TTL)).
        window: Duration,
    },
    /// `limit` requests per `period`, in bursts of up to `limit`, with
    /// capacity coming back one request every `period / limit`, on
    /// [`Cache::throttle`] (CL.THROTTLE with a burst of `limit - 1`).
    Gcra {
        /// The requests allowed per period, and the largest burst (at
        /// least 1).
        limit: u64,
        /// The period: a whole number of seconds, at least one
        /// (CL.THROTTLE's unit).
        period: Duration,
    },
}

/// What to do with a request when the store cannot count it (unreachable,
/// a transport failure, an error reply).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnStoreError {
    /// Let the request through, without `RateLimit-*` headers: the service
    /// stays available while the limits are off.
    #[default]
    FailOpen,
    /// Refuse the request with `503 Service Unavailable` and an empty
    /// body: nothing passes that was not counted.
    FailClosed,
}

/// The function that names a request's limiter; `None` leaves the
/// request unlimited.
type KeyOf<Req> = dyn Fn(&Req) -> Option<String> + Send + Sync;

struct Policy<Req> {
    cache: Cache,
    algorithm: Algorithm,
    key: Arc<KeyOf<Req>>,
    on_error: OnStoreError,
}

impl<Req> Clone for Policy<Req> {
    fn clone(&self) -> Self {
        Policy {
            cache: self.cache.clone(),
            algorithm: self.algorithm,
            key: self.key.clone(),
            on_error: self.on_error,
        }
    }
}

/// A tower [`Layer`] that rate-limits the requests of the services it
/// wraps, in [`RateLimit`]. Cheap to clone: clones share one
/// configuration.
pub struct RateLimitLayer<Req> {
    policy: Arc<Policy<Req>>,
}

impl<Req> RateLimitLayer<Req> {
    /// Limits requests with `algorithm`, counting them on `cache` under
    /// the key that `key` gives each request (its full name, so give the
    /// limiter a prefix of its own: `"api-requests.v1:" + account`), or
    /// not at all when it gives `None`. The store errors are
    /// [`OnStoreError::FailOpen`]; see [`RateLimitLayer::on_store_error`].
    ///
    /// # Panics
    ///
    /// When the algorithm's limit is 0, a fixed window is not a valid TTL
    /// (0, or longer than [`MAX_TTL`](crate::cache::MAX_TTL)), or a GCRA
    /// period is not a whole number of seconds that
    /// [`Cache::throttle`] accepts with that limit (at most
    /// [`MAX_THROTTLE_SPAN`](crate::cache::MAX_THROTTLE_SPAN)): a configuration error
    /// shows at startup, not as a failure on every request.
    pub fn new<F>(cache: Cache, algorithm: Algorithm, key: F) -> RateLimitLayer<Req>
    where
        F: Fn(&Req) -> Option<String> + Send + Sync + 'static,
    {
        check(&algorithm);
        RateLimitLayer {
            policy: Arc::new(Policy {
                cache,
                algorithm,
                key: Arc::new(key),
                on_error: OnStoreError::default(),
            }),
        }
    }

    /// Sets what happens to a request the store cannot count.
    pub fn on_store_error(self, on_error: OnStoreError) -> RateLimitLayer<Req> {
        let mut policy = Policy::clone(&self.policy);
        policy.on_error = on_error;
        RateLimitLayer {
            policy: Arc::new(policy),
        }
    }
}

fn check(algorithm: &Algorithm) {
    match *algorithm {
        Algorithm::FixedWindow { limit, window } => {
            assert!(limit > 0, "a rate limit of 0 refuses every request");
            assert!(
                !window.is_zero() && window <= crate::cache::MAX_TTL,
                "a fixed window must be at least 1 ms and at most MAX_TTL"
            );
        }
        Algorithm::Gcra { limit, period } => {
            assert!(limit > 0, "a rate limit of 0 refuses every request");
            assert!(
                period.subsec_nanos() == 0
                    && period.as_secs() > 0
                    && period <= crate::cache::MAX_THROTTLE_SPAN
                    && limit <= period.as_secs().saturating_mul(1_000_000),
                "a GCRA period must be a whole number of seconds, at least one and at most \
                 MAX_THROTTLE_SPAN, and the limit at most one request per microsecond"
            );
        }
    }
}

impl<Req> Clone for RateLimitLayer<Req> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            policy: self.policy.clone(),
        }
    }
}

impl<Req> fmt::Debug for RateLimitLayer<Req> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("cache", &self.policy.cache)
            .field("algorithm", &self.policy.algorithm)
            .field("on_error", &self.policy.on_error)
            .finish_non_exhaustive()
    }
}

impl<S, Req> Layer<S> for RateLimitLayer<Req> {
    type Service = RateLimit<S, Req>;

    fn layer(&self, inner: S) -> RateLimit<S, Req> {
        RateLimit {
            inner,
            policy: self.policy.clone(),
        }
    }
}

/// A service rate-limited by a [`RateLimitLayer`]: it counts each request
/// before handing it to the inner service, answers 429 when over the
/// limit, and adds the `RateLimit-*` headers to the inner service's
/// responses.
pub struct RateLimit<S, Req> {
    inner: S,
    policy: Arc<Policy<Req>>,
}

impl<S: Clone, Req> Clone for RateLimit<S, Req> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            policy: self.policy.clone(),
        }
    }
}

impl<S: fmt::Debug, Req> fmt::Debug for RateLimit<S, Req> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .field("algorithm", &self.policy.algorithm)
            .field("on_error", &self.policy.on_error)
            .finish_non_exhaustive()
    }
}

/// A counted request's standing, for the headers.
struct Quota {
    allowed: bool,
    limit: u64,
    remaining: u64,
    reset: Duration,
    retry_after: Option<Duration>,
}

impl<Req> Policy<Req> {
    /// Counts one request under `name`: one cache call, never repeated.
    async fn count(&self, name: String) -> Result<Quota, crate::cache::Error> {
        let key = Key::<i64>::new(name);
        match self.algorithm {
            Algorithm::FixedWindow { limit, window } => {
                let (count, left) = self.cache.increment_with_ttl(&key, 1, window).await?;
                let count = count.max(0) as u64;
                let allowed = count <= limit;
                Ok(Quota {
                    allowed,
                    limit,
                    remaining: limit.saturating_sub(count),
                    reset: left,
                    retry_after: (!allowed).then_some(left),
                })
            }
            Algorithm::Gcra { limit, period } => {
                let t = self
                    .cache
                    .throttle(&key, limit - 1, limit, period, 1)
                    .await?;
                Ok(Quota {
                    allowed: !t.limited,
                    limit: t.limit,
                    remaining: t.remaining,
                    reset: t.reset_after,
                    retry_after: t.retry_after,
                })
            }
        }
    }
}

impl<S, Req, ResBody> Service<Req> for RateLimit<S, Req>
where
    S: Service<Req, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    Req: Send + 'static,
    ResBody: Default,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<ResBody>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        // The service that was polled ready handles this request; a fresh
        // clone stays behind for the next poll_ready (tower's rule for a
        // service called after an await).
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let name = (self.policy.key)(&req);
        let policy = self.policy.clone();
        Box::pin(async move {
            let Some(name) = name else {
                return inner.call(req).await;
            };
            let quota = match policy.count(name).await {
                Ok(quota) => quota,
                Err(_) if policy.on_error == OnStoreError::FailOpen => {
                    return inner.call(req).await;
                }
                Err(_) => return Ok(empty(StatusCode::SERVICE_UNAVAILABLE)),
            };
            let mut response = if quota.allowed {
                inner.call(req).await?
            } else {
                let mut response = empty(StatusCode::TOO_MANY_REQUESTS);
                if let Some(retry) = quota.retry_after {
                    response.headers_mut().insert(RETRY_AFTER, seconds(retry));
                }
                response
            };
            let headers = response.headers_mut();
            headers.insert(RATELIMIT_LIMIT, HeaderValue::from(quota.limit));
            headers.insert(RATELIMIT_REMAINING, HeaderValue::from(quota.remaining));
            headers.insert(RATELIMIT_RESET, seconds(quota.reset));
            Ok(response)
        })
    }
}

fn empty<B: Default>(status: StatusCode) -> Response<B> {
    let mut response = Response::new(B::default());
    *response.status_mut() = status;
    response
}

/// Whole seconds, rounded up.
fn seconds(d: Duration) -> HeaderValue {
    HeaderValue::from(d.as_secs() + (d.subsec_nanos() > 0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_up() {
        assert_eq!(seconds(Duration::ZERO), "0");
        assert_eq!(seconds(Duration::from_millis(1)), "1");
        assert_eq!(seconds(Duration::from_secs(60)), "60");
        assert_eq!(seconds(Duration::from_millis(59_001)), "60");
    }

    #[test]
    #[should_panic(expected = "whole number of seconds")]
    fn a_gcra_period_is_whole_seconds() {
        check(&Algorithm::Gcra {
            limit: 5,
            period: Duration::from_millis(1500),
        });
    }

    #[test]
    #[should_panic(expected = "refuses every request")]
    fn a_limit_of_zero_is_refused() {
        check(&Algorithm::FixedWindow {
            limit: 0,
            window: Duration::from_secs(1),
        });
    }
}
