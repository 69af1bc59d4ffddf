//! The rate-limit middleware on every driver: the embedded store,
//! goblin-server and Debian's redis-server 7.0 (the GCRA as its Lua form
//! there). The wrapped service counts the requests it sees, so a test
//! knows which requests passed the limiter; a request's limiter is named
//! by its `x-api-key` header.

use crate::support::{Fixture, Raw};
use goblin::cache::Cache;
use goblin::ratelimit::{Algorithm, OnStoreError, RateLimit, RateLimitLayer};
use goblin::Reply;
use http::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::{Layer, ServiceExt};

const MINUTE: Duration = Duration::from_secs(60);

type Inner = tower::util::BoxCloneService<Request<()>, Response<String>, Infallible>;

/// A service behind the limiter, and how many requests reached it.
struct App {
    service: RateLimit<Inner, Request<()>>,
    seen: Arc<AtomicUsize>,
}

impl App {
    fn new(cache: Cache, algorithm: Algorithm, on_error: OnStoreError) -> App {
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        let inner = Inner::new(tower::service_fn(move |_req: Request<()>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, Infallible>(Response::new(String::from("done"))) }
        }));
        let layer = RateLimitLayer::new(cache, algorithm, |req: &Request<()>| {
            let api_key = req.headers().get("x-api-key")?.to_str().ok()?;
            Some(format!("api-requests.v1:{api_key}"))
        })
        .on_store_error(on_error);
        App {
            service: layer.layer(inner),
            seen,
        }
    }

    async fn send(&self, api_key: Option<&str>) -> Response<String> {
        let mut request = Request::builder();
        if let Some(k) = api_key {
            request = request.header("x-api-key", k);
        }
        self.service
            .clone()
            .oneshot(request.body(()).unwrap())
            .await
            .unwrap()
    }

    fn seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }
}

/// A header as a number.
fn header(response: &Response<String>, name: &str) -> Option<u64> {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().parse().unwrap())
}

/// The limit, remaining and reset headers.
fn quota(response: &Response<String>) -> (Option<u64>, Option<u64>, Option<u64>) {
    (
        header(response, "ratelimit-limit"),
        header(response, "ratelimit-remaining"),
        header(response, "ratelimit-reset"),
    )
}

/// A TCP relay in front of a server, which can be stopped: then the cache
/// behind it finds the store unreachable (its connection closed, new ones
/// refused).
struct Relay {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
}

impl Relay {
    async fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, mut stopped) = watch::channel(false);
        tokio::spawn(async move {
            loop {
                let mut relay_stopped = stopped.clone();
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((mut client, _)) = accepted else { return };
                        tokio::spawn(async move {
                            let mut server = TcpStream::connect(upstream).await.unwrap();
                            tokio::select! {
                                _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                                _ = relay_stopped.wait_for(|s| *s) => {}
                            }
                        });
                    }
                    _ = stopped.wait_for(|s| *s) => return,
                }
            }
        });
        Relay { addr, stop }
    }

    fn stop(&self) {
        self.stop.send_replace(true);
    }
}

/// The address of a remote fixture's server, from the port it reports
/// (INFO's tcp_port: the one it listens on, also when started on port 0).
async fn server_addr(raw: &Raw) -> SocketAddr {
    let Reply::Bulk(info) = raw.cmd(&["INFO", "server"]).await else {
        panic!("INFO server")
    };
    let info = String::from_utf8_lossy(&info);
    let port = info
        .lines()
        .find_map(|l| l.strip_prefix("tcp_port:"))
        .expect("tcp_port in INFO");
    format!("127.0.0.1:{}", port.trim()).parse().unwrap()
}

mod cases {
    use super::*;

    pub async fn a_fixed_window_refuses_with_429_and_headers(f: Fixture) {
        let algorithm = Algorithm::FixedWindow {
            limit: 3,
            window: MINUTE,
        };
        let app = App::new(f.cache.clone(), algorithm, OnStoreError::FailOpen);
        for remaining in [2, 1, 0] {
            let r = app.send(Some("k-1")).await;
            assert_eq!(r.status(), StatusCode::OK, "{}", f.driver);
            assert_eq!(r.body(), "done");
            let (limit, left, reset) = quota(&r);
            assert_eq!((limit, left), (Some(3), Some(remaining)));
            assert!(matches!(reset, Some(59..=60)), "{reset:?}");
            assert_eq!(header(&r, "retry-after"), None);
        }
        let refused = app.send(Some("k-1")).await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.body(), "");
        assert_eq!(quota(&refused).0, Some(3));
        assert_eq!(quota(&refused).1, Some(0));
        assert!(matches!(header(&refused, "retry-after"), Some(59..=60)));
        assert_eq!(app.seen(), 3, "a refused request never reaches the service");
        // Another key has its own window; no key, no limit.
        assert_eq!(app.send(Some("k-2")).await.status(), StatusCode::OK);
        let free = app.send(None).await;
        assert_eq!(free.status(), StatusCode::OK);
        assert_eq!(quota(&free), (None, None, None));
        assert_eq!(app.seen(), 5);
    }

    pub async fn gcra_refuses_with_429_and_headers(f: Fixture) {
        // 3 a minute: one comes back every 20 s.
        let algorithm = Algorithm::Gcra {
            limit: 3,
            period: MINUTE,
        };
        let app = App::new(f.cache.clone(), algorithm, OnStoreError::FailOpen);
        for (remaining, reset) in [(2, 20), (1, 40), (0, 60)] {
            let r = app.send(Some("k-1")).await;
            assert_eq!(r.status(), StatusCode::OK, "{}", f.driver);
            assert_eq!(quota(&r), (Some(3), Some(remaining), Some(reset)));
        }
        let refused = app.send(Some("k-1")).await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(quota(&refused), (Some(3), Some(0), Some(60)));
        assert_eq!(header(&refused, "retry-after"), Some(20));
        assert_eq!(app.seen(), 3);
    }

    pub async fn concurrent_requests_never_pass_beyond_the_limit(f: Fixture) {
        for algorithm in [
            Algorithm::FixedWindow {
                limit: 5,
                window: MINUTE,
            },
            Algorithm::Gcra {
                limit: 5,
                period: MINUTE,
            },
        ] {
            let app = App::new(f.cache.clone(), algorithm, OnStoreError::FailClosed);
            let key = format!("{algorithm:?}");
            let requests: Vec<_> = (0..20)
                .map(|_| {
                    // Each task has its clone of the service, as a server's
                    // connections do.
                    let service = app.service.clone();
                    let request = Request::builder().header("x-api-key", &key).body(());
                    tokio::spawn(async move {
                        service.oneshot(request.unwrap()).await.unwrap().status()
                    })
                })
                .collect();
            let mut passed = 0;
            for r in requests {
                match r.await.unwrap() {
                    StatusCode::OK => passed += 1,
                    status => assert_eq!(status, StatusCode::TOO_MANY_REQUESTS),
                }
            }
            assert_eq!(passed, 5, "{} {algorithm:?}", f.driver);
            assert_eq!(app.seen(), 5);
        }
    }

    pub async fn the_window_resets(f: Fixture) {
        let algorithm = Algorithm::FixedWindow {
            limit: 1,
            window: Duration::from_millis(200),
        };
        let app = App::new(f.cache.clone(), algorithm, OnStoreError::FailOpen);
        assert_eq!(app.send(Some("k-1")).await.status(), StatusCode::OK);
        let refused = app.send(Some("k-1")).await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        // Partial seconds round up: a client waiting this long is never
        // early.
        assert_eq!(header(&refused, "retry-after"), Some(1));
        // The next window opens with the first request after this one's
        // end, with the whole limit again.
        let deadline = f.raw.expire_time("api-requests.v1:k-1").await;
        f.raw.await_expiry("api-requests.v1:k-1", deadline).await;
        let r = app.send(Some("k-1")).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(quota(&r).1, Some(0));
        assert_eq!(app.seen(), 2);
    }

    pub async fn a_store_error_fails_open_or_closed(f: Fixture) {
        // The limiter's key holds a list: every count is an error reply.
        assert_eq!(f.raw.int(&["RPUSH", "api-requests.v1:k-1", "x"]).await, 1);
        for algorithm in [
            Algorithm::FixedWindow {
                limit: 3,
                window: MINUTE,
            },
            Algorithm::Gcra {
                limit: 3,
                period: MINUTE,
            },
        ] {
            let open = App::new(f.cache.clone(), algorithm, OnStoreError::FailOpen);
            let r = open.send(Some("k-1")).await;
            assert_eq!(r.status(), StatusCode::OK, "{} {algorithm:?}", f.driver);
            assert_eq!(quota(&r), (None, None, None));
            assert_eq!(open.seen(), 1);
            let closed = App::new(f.cache.clone(), algorithm, OnStoreError::FailClosed);
            let r = closed.send(Some("k-1")).await;
            assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(quota(&r), (None, None, None));
            assert_eq!(closed.seen(), 0);
            // Keys the store can count still are.
            assert_eq!(closed.send(Some("k-2")).await.status(), StatusCode::OK);
        }
        assert_eq!(f.raw.int(&["LLEN", "api-requests.v1:k-1"]).await, 1);
    }

    pub async fn an_unreachable_store_fails_open_or_closed(f: Fixture) {
        let relay = Relay::start(server_addr(&f.raw).await).await;
        let cache = Cache::connect(&format!("redis://{}/", relay.addr))
            .await
            .unwrap();
        let algorithm = Algorithm::FixedWindow {
            limit: 3,
            window: MINUTE,
        };
        let open = App::new(cache.clone(), algorithm, OnStoreError::FailOpen);
        let closed = App::new(cache, algorithm, OnStoreError::FailClosed);
        assert_eq!(closed.send(Some("k-1")).await.status(), StatusCode::OK);
        relay.stop();
        let r = open.send(Some("k-1")).await;
        assert_eq!(r.status(), StatusCode::OK, "{}", f.driver);
        assert_eq!(quota(&r), (None, None, None));
        assert_eq!(open.seen(), 1);
        let r = closed.send(Some("k-1")).await;
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(closed.seen(), 1);
        // Only the request counted before the relay stopped reached the
        // store.
        assert_eq!(
            f.raw.get("api-requests.v1:k-1").await.as_deref(),
            Some(&b"1"[..])
        );
    }
}

macro_rules! on_drivers {
    ($fixture:ident: $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::cases::$case(super::Fixture::$fixture().await).await;
            }
        )*
    };
}

mod embedded {
    on_drivers!(embedded:
        a_fixed_window_refuses_with_429_and_headers,
        gcra_refuses_with_429_and_headers,
        concurrent_requests_never_pass_beyond_the_limit,
        the_window_resets,
        a_store_error_fails_open_or_closed,
    );
}

mod goblin_server {
    on_drivers!(goblin_server:
        a_fixed_window_refuses_with_429_and_headers,
        gcra_refuses_with_429_and_headers,
        concurrent_requests_never_pass_beyond_the_limit,
        the_window_resets,
        a_store_error_fails_open_or_closed,
        an_unreachable_store_fails_open_or_closed,
    );
}

mod redis_7 {
    on_drivers!(redis:
        a_fixed_window_refuses_with_429_and_headers,
        gcra_refuses_with_429_and_headers,
        concurrent_requests_never_pass_beyond_the_limit,
        the_window_resets,
        a_store_error_fails_open_or_closed,
        an_unreachable_store_fails_open_or_closed,
    );
}

#[path = "../../examples/ratelimit_axum.rs"]
#[allow(dead_code)]
mod ratelimit_axum;

/// The axum example, run as it prints: three requests pass, the fourth is
/// refused, another key still passes.
#[tokio::test]
async fn the_axum_example_limits_per_key() {
    let statuses = ratelimit_axum::run().await;
    assert_eq!(statuses, [200, 200, 200, 429, 200]);
}
