//! The cases every driver passes, as a kit for a custom [`Driver`]'s own
//! tests (feature `conformance`).
//!
//! [`run`] runs every case through a [`Cache`] over the driver, one after
//! the other, and panics with the name of the first case that fails. It
//! needs a tokio runtime (each case runs as a task, some spawn more), and
//! it is what the crate's own tests run on the embedded store,
//! goblin-server, Redis 7.0 and a Redis Cluster.
//!
//! ```no_run
//! # use goblin::cache::{conformance, Driver};
//! # fn my_driver() -> goblin::cache::EmbeddedDriver {
//! #     goblin::cache::EmbeddedDriver::new(goblin::Store::open_in_memory())
//! # }
//! #[tokio::test(flavor = "multi_thread")]
//! async fn my_driver_conforms() {
//!     conformance::run(my_driver()).await;
//! }
//! ```
//!
//! Every key a run uses starts with `goblin-conformance:` and a prefix of
//! its own, so runs against a shared server do not meet; the keys are left
//! behind (most expire). The cases check what a [`Cache`] can see: values,
//! errors and [`Cache::ttl`]. A rejected call must change nothing (the
//! value, the kind of TTL, and a missing key stays missing).
//!
//! A driver that cannot do [`Driver::increment_with_ttl`] atomically
//! returns [`Error::Unsupported`] for it (see [`Driver`]). The kit accepts
//! that: it then checks that every such call is `Unsupported` and creates
//! nothing, and checks everything else as for any driver.

use super::{Cache, Driver, Error, Key, Ttl, MAX_TTL};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const MINUTE: Duration = Duration::from_secs(60);

/// Runs every case on a [`Cache`] over `driver`, and panics naming the
/// first case that fails.
pub async fn run(driver: impl Driver) {
    run_cache(&Cache::new(driver)).await
}

/// Runs every case on `cache` (a clone of it is used), and panics naming
/// the first case that fails.
pub async fn run_cache(cache: &Cache) {
    let run = next_run();
    let probe = Ctx {
        cache: cache.clone(),
        prefix: format!("goblin-conformance:{run}:probe:"),
        windows: true,
    };
    let windows = probe.probe_windows().await;
    macro_rules! cases {
        ($($case:ident),* $(,)?) => {
            $(
                let ctx = Ctx {
                    cache: cache.clone(),
                    prefix: format!("goblin-conformance:{run}:{}:", stringify!($case)),
                    windows,
                };
                case(stringify!($case), cases::$case(ctx)).await;
            )*
        };
    }
    cases!(
        increment_of_a_missing_counter_starts_from_zero,
        increment_of_an_expired_counter_starts_from_zero,
        decrement_subtracts_atomically,
        counters_are_base10_text,
        counters_never_change_the_ttl,
        put_applies_the_write_ttl_and_counters_ignore_it,
        put_with_ttl_delete_and_ttl,
        non_integer_values_are_rejected_and_kept,
        increment_with_ttl_starts_a_window,
        increment_with_ttl_gives_a_persistent_counter_a_ttl,
        increment_with_ttl_never_slides_the_deadline,
        increment_with_ttl_after_expiry_starts_a_new_window,
        invalid_ttls_are_rejected_before_anything_is_sent,
        sub_millisecond_ttls_round_up,
        long_lifetimes_are_reported_in_full,
        increment_overflow_changes_nothing,
        decrement_checks_the_mathematical_result,
        increment_with_ttl_overflow_adds_no_expiry,
        get_and_put_round_trip,
        concurrent_increments_lose_nothing,
    );
}

/// A prefix no other run in this process, or (most likely) elsewhere, has.
fn next_run() -> String {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs one case as a task, so that its panic is caught and reported with
/// its name.
async fn case(name: &str, body: impl Future<Output = ()> + Send + 'static) {
    if let Err(e) = tokio::spawn(body).await {
        let message = match e.try_into_panic() {
            Ok(payload) => payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
            Err(e) => e.to_string(),
        };
        panic!("conformance case `{name}` failed: {message}");
    }
}

/// What a case works with: the cache, its own key prefix, and whether the
/// driver does increment_with_ttl (else it says Unsupported).
struct Ctx {
    cache: Cache,
    prefix: String,
    windows: bool,
}

macro_rules! assert_err {
    ($result:expr, $pattern:pat) => {
        match $result {
            Err($pattern) => {}
            other => panic!(
                "{}: expected {}, got {:?}",
                stringify!($result),
                stringify!($pattern),
                other.map(|_| ())
            ),
        }
    };
}

impl Ctx {
    fn key<T>(&self, name: &str) -> Key<T> {
        Key::new(format!("{}{name}", self.prefix))
    }

    fn counter(&self, name: &str) -> Key<i64> {
        self.key(name)
    }

    /// Whether the driver does increment_with_ttl; when it says
    /// Unsupported, the key must not have been created.
    async fn probe_windows(&self) -> bool {
        let k = self.counter("window");
        match self.cache.increment_with_ttl(&k, 1, MINUTE).await {
            Ok((1, left)) => {
                assert!(left > Duration::ZERO && left <= MINUTE, "{left:?}");
                true
            }
            Ok(other) => panic!("a first increment_with_ttl gave {other:?}"),
            Err(Error::Unsupported(_)) => {
                assert_eq!(
                    self.cache.ttl(&k).await.unwrap(),
                    Ttl::Absent,
                    "an Unsupported increment_with_ttl created its key"
                );
                false
            }
            Err(e) => panic!("a first increment_with_ttl failed: {e}"),
        }
    }

    /// increment_with_ttl, or None after checking that the driver says
    /// Unsupported and that the key's state did not change.
    async fn window(
        &self,
        k: &Key<i64>,
        delta: i64,
        ttl: Duration,
    ) -> Option<Result<(i64, Duration), Error>> {
        if self.windows {
            return Some(self.cache.increment_with_ttl(k, delta, ttl).await);
        }
        let before = self.state(k).await;
        assert_err!(
            self.cache.increment_with_ttl(k, delta, ttl).await,
            Error::Unsupported(_)
        );
        assert_eq!(self.state(k).await, before, "Unsupported changed {k:?}");
        None
    }

    /// The stored bytes and the kind of TTL (a remaining time only ever
    /// shrinks, so it is compared as present or not).
    async fn state<T>(&self, k: &Key<T>) -> (Option<Vec<u8>>, &'static str) {
        let bytes = self
            .cache
            .get(&Key::<Vec<u8>>::new(k.name().to_vec()))
            .await
            .unwrap();
        let ttl = match self.cache.ttl(k).await.unwrap() {
            Ttl::Absent => "absent",
            Ttl::Persistent => "persistent",
            Ttl::Expires(_) => "expires",
        };
        (bytes, ttl)
    }

    async fn left<T>(&self, k: &Key<T>) -> Duration {
        match self.cache.ttl(k).await.unwrap() {
            Ttl::Expires(left) => left,
            other => panic!("{k:?} should expire, its TTL is {other:?}"),
        }
    }

    /// Waits until `k` has expired (the store no longer has it).
    async fn await_expiry<T>(&self, k: &Key<T>) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.cache.ttl(k).await.unwrap() != Ttl::Absent {
            assert!(Instant::now() < deadline, "{k:?} never expired");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

mod cases {
    use super::*;

    pub async fn increment_of_a_missing_counter_starts_from_zero(c: Ctx) {
        let views = c.counter("article-views.v1:article-73");
        assert_eq!(c.cache.increment(&views, 1).await.unwrap(), 1);
        assert_eq!(c.cache.increment(&views, 1).await.unwrap(), 2);
        assert_eq!(c.cache.increment(&views, 40).await.unwrap(), 42);
        assert_eq!(c.cache.get(&views).await.unwrap(), Some(42));
        let negative = c.counter("negative");
        assert_eq!(c.cache.increment(&negative, -5).await.unwrap(), -5);
    }

    pub async fn increment_of_an_expired_counter_starts_from_zero(c: Ctx) {
        let views = c.counter("views");
        c.cache
            .put_with_ttl(&views, &41, Duration::from_millis(1))
            .await
            .unwrap();
        c.await_expiry(&views).await;
        assert_eq!(c.cache.increment(&views, 1).await.unwrap(), 1);
        assert_eq!(
            c.cache.ttl(&views).await.unwrap(),
            Ttl::Persistent,
            "a new counter has no TTL"
        );
        let down = c.counter("down");
        c.cache
            .put_with_ttl(&down, &41, Duration::from_millis(1))
            .await
            .unwrap();
        c.await_expiry(&down).await;
        assert_eq!(c.cache.decrement(&down, 1).await.unwrap(), -1);
        assert_eq!(c.cache.ttl(&down).await.unwrap(), Ttl::Persistent);
    }

    pub async fn decrement_subtracts_atomically(c: Ctx) {
        let views = c.counter("views");
        assert_eq!(c.cache.decrement(&views, 1).await.unwrap(), -1);
        assert_eq!(c.cache.increment(&views, 11).await.unwrap(), 10);
        assert_eq!(c.cache.decrement(&views, 3).await.unwrap(), 7);
        // Not a floor at zero: a correction may go negative.
        assert_eq!(c.cache.decrement(&views, 10).await.unwrap(), -3);
        assert_eq!(c.cache.decrement(&views, -5).await.unwrap(), 2);
        assert_eq!(c.cache.get(&views).await.unwrap(), Some(2));
    }

    pub async fn counters_are_base10_text(c: Ctx) {
        let views = c.counter("views");
        let text = c.key::<String>("views");
        c.cache.increment(&views, -1234).await.unwrap();
        assert_eq!(c.cache.get(&text).await.unwrap().as_deref(), Some("-1234"));
        c.cache.put(&text, &"9000".to_string()).await.unwrap();
        assert_eq!(c.cache.get(&views).await.unwrap(), Some(9000));
        assert_eq!(c.cache.increment(&views, 1).await.unwrap(), 9001);
        c.cache.put(&views, &i64::MIN).await.unwrap();
        assert_eq!(
            c.cache.get(&text).await.unwrap().as_deref(),
            Some("-9223372036854775808")
        );
    }

    pub async fn counters_never_change_the_ttl(c: Ctx) {
        let fresh = c.counter("fresh");
        c.cache.increment(&fresh, 1).await.unwrap();
        assert_eq!(c.cache.ttl(&fresh).await.unwrap(), Ttl::Persistent);
        let fresh_down = c.counter("fresh-down");
        c.cache.decrement(&fresh_down, 1).await.unwrap();
        assert_eq!(c.cache.ttl(&fresh_down).await.unwrap(), Ttl::Persistent);

        let expiring = c.counter("expiring");
        c.cache
            .put_with_ttl(&expiring, &5, MINUTE * 10)
            .await
            .unwrap();
        let mut left = c.left(&expiring).await;
        assert_eq!(c.cache.increment(&expiring, 2).await.unwrap(), 7);
        let after = c.left(&expiring).await;
        assert!(
            after <= left,
            "increment moved the deadline: {after:?} > {left:?}"
        );
        left = after;
        assert_eq!(c.cache.decrement(&expiring, 3).await.unwrap(), 4);
        let after = c.left(&expiring).await;
        assert!(
            after <= left,
            "decrement moved the deadline: {after:?} > {left:?}"
        );
        assert_err!(
            c.cache.decrement(&expiring, i64::MIN).await,
            Error::Overflow
        );
        assert!(c.left(&expiring).await <= after);
        c.cache
            .put_with_ttl(&expiring, &-1, MINUTE * 10)
            .await
            .unwrap();
        let left = c.left(&expiring).await;
        assert_eq!(
            c.cache.decrement(&expiring, i64::MIN).await.unwrap(),
            i64::MAX
        );
        assert!(c.left(&expiring).await <= left);
    }

    pub async fn put_applies_the_write_ttl_and_counters_ignore_it(c: Ctx) {
        let policy = MINUTE;
        // put applies the key's write TTL.
        let session = c.key::<String>("session").with_write_ttl(policy);
        c.cache.put(&session, &"s-1".to_string()).await.unwrap();
        let left = c.left(&session).await;
        assert!(left > Duration::ZERO && left <= policy, "{left:?}");
        // A key without one: put leaves no expiry, and clears an earlier one.
        let plain = c.key::<String>("session");
        c.cache.put(&plain, &"s-2".to_string()).await.unwrap();
        assert_eq!(c.cache.ttl(&plain).await.unwrap(), Ttl::Persistent);
        assert_eq!(c.cache.get(&session).await.unwrap().as_deref(), Some("s-2"));
        // put_with_ttl overrides the policy for one call.
        c.cache
            .put_with_ttl(&session, &"s-3".to_string(), MINUTE * 10)
            .await
            .unwrap();
        assert!(c.left(&session).await > policy);

        // The counters ignore it: a new counter has no expiry...
        let views = c.counter("views").with_write_ttl(policy);
        assert_eq!(c.cache.increment(&views, 1).await.unwrap(), 1);
        assert_eq!(c.cache.ttl(&views).await.unwrap(), Ttl::Persistent);
        let down = c.counter("down").with_write_ttl(policy);
        assert_eq!(c.cache.decrement(&down, 1).await.unwrap(), -1);
        assert_eq!(c.cache.ttl(&down).await.unwrap(), Ttl::Persistent);
        // ...and an existing one keeps its own, whatever the policy.
        c.cache.put(&views, &10).await.unwrap();
        let left = c.left(&views).await;
        assert!(left <= policy);
        let long = c.counter("views").with_write_ttl(MINUTE * 100);
        assert_eq!(c.cache.increment(&long, 1).await.unwrap(), 11);
        assert_eq!(c.cache.decrement(&long, 2).await.unwrap(), 9);
        assert!(c.left(&views).await <= left, "a counter took the write TTL");

        // increment_with_ttl takes its TTL from its argument, not the key.
        let window = c.counter("window").with_write_ttl(policy);
        if let Some(r) = c.window(&window, 1, MINUTE * 10).await {
            let (count, left) = r.unwrap();
            assert_eq!(count, 1);
            assert!(left > policy, "{left:?}");
        }

        // An invalid policy is refused when it is used, and stores nothing.
        let bad = c.key::<String>("bad").with_write_ttl(Duration::ZERO);
        assert_err!(c.cache.put(&bad, &"x".to_string()).await, Error::InvalidTtl);
        assert_eq!(c.cache.get(&bad).await.unwrap(), None);
        let bad = c.key::<String>("bad").with_write_ttl(MAX_TTL + MINUTE);
        assert_err!(c.cache.put(&bad, &"x".to_string()).await, Error::InvalidTtl);
        assert_eq!(c.cache.ttl(&bad).await.unwrap(), Ttl::Absent);
        // The counters do not read it at all.
        let bad_counter = c.counter("bad").with_write_ttl(Duration::ZERO);
        assert_eq!(c.cache.increment(&bad_counter, 1).await.unwrap(), 1);
    }

    pub async fn put_with_ttl_delete_and_ttl(c: Ctx) {
        let k = c.key::<String>("k");
        assert_eq!(c.cache.ttl(&k).await.unwrap(), Ttl::Absent);
        assert!(!c.cache.delete(&k).await.unwrap());
        c.cache.put(&k, &"v".to_string()).await.unwrap();
        assert_eq!(c.cache.ttl(&k).await.unwrap(), Ttl::Persistent);
        c.cache
            .put_with_ttl(&k, &"w".to_string(), MINUTE)
            .await
            .unwrap();
        let left = c.left(&k).await;
        assert!(left > Duration::ZERO && left <= MINUTE, "{left:?}");
        assert_eq!(c.cache.get(&k).await.unwrap().as_deref(), Some("w"));
        // A sub-millisecond part rounds up: 1 ns is a valid TTL.
        c.cache
            .put_with_ttl(&k, &"x".to_string(), Duration::from_nanos(1))
            .await
            .unwrap();
        c.await_expiry(&k).await;
        assert_eq!(c.cache.get(&k).await.unwrap(), None);
        assert_err!(
            c.cache
                .put_with_ttl(&k, &"y".to_string(), Duration::ZERO)
                .await,
            Error::InvalidTtl
        );
        assert_eq!(c.cache.ttl(&k).await.unwrap(), Ttl::Absent);
        c.cache.put(&k, &"z".to_string()).await.unwrap();
        assert!(c.cache.delete(&k).await.unwrap());
        assert!(!c.cache.delete(&k).await.unwrap());
        assert_eq!(c.cache.get(&k).await.unwrap(), None);
        assert_eq!(c.cache.ttl(&k).await.unwrap(), Ttl::Absent);
    }

    pub async fn non_integer_values_are_rejected_and_kept(c: Ctx) {
        for (i, text) in ["abc", " 1", "1.5", "+1", "01", "-0", "9223372036854775808"]
            .into_iter()
            .enumerate()
        {
            let raw = c.key::<String>(&format!("text-{i}"));
            if i % 2 == 0 {
                c.cache.put(&raw, &text.to_string()).await.unwrap();
            } else {
                c.cache
                    .put_with_ttl(&raw, &text.to_string(), MINUTE * 10)
                    .await
                    .unwrap();
            }
            let k = c.counter(&format!("text-{i}"));
            let before = c.state(&k).await;
            assert_err!(c.cache.increment(&k, 1).await, Error::NotInteger);
            assert_err!(c.cache.decrement(&k, 1).await, Error::NotInteger);
            assert_err!(c.cache.decrement(&k, i64::MIN).await, Error::NotInteger);
            if let Some(r) = c.window(&k, 1, MINUTE).await {
                assert_err!(r, Error::NotInteger);
            }
            assert_err!(c.cache.get(&k).await, Error::NotInteger);
            assert_eq!(c.state(&k).await, before, "{text:?} changed");
            assert_eq!(c.cache.get(&raw).await.unwrap().as_deref(), Some(text));
        }
        // A negative-looking text is not an integer either.
        let minus = c.key::<String>("minus");
        c.cache.put(&minus, &"-abc".to_string()).await.unwrap();
        let k = c.counter("minus");
        let before = c.state(&k).await;
        assert_err!(c.cache.decrement(&k, i64::MIN).await, Error::NotInteger);
        assert_eq!(c.state(&k).await, before);
    }

    pub async fn increment_with_ttl_starts_a_window(c: Ctx) {
        let requests = c.counter("export-requests.v1:account-7");
        let Some(r) = c.window(&requests, 1, MINUTE).await else {
            return;
        };
        let (count, left) = r.unwrap();
        assert_eq!(count, 1);
        assert!(left > Duration::ZERO && left <= MINUTE, "{left:?}");
        assert!(c.left(&requests).await <= left);
        assert_eq!(c.cache.get(&requests).await.unwrap(), Some(1));
    }

    pub async fn increment_with_ttl_gives_a_persistent_counter_a_ttl(c: Ctx) {
        let legacy = c.counter("legacy");
        c.cache.put(&legacy, &41).await.unwrap();
        assert_eq!(c.cache.ttl(&legacy).await.unwrap(), Ttl::Persistent);
        let Some(r) = c.window(&legacy, 1, MINUTE).await else {
            return;
        };
        let (count, left) = r.unwrap();
        assert_eq!(count, 42);
        assert!(left > Duration::ZERO && left <= MINUTE);
        assert!(c.left(&legacy).await <= left);
    }

    pub async fn increment_with_ttl_never_slides_the_deadline(c: Ctx) {
        let window = c.counter("window");
        let Some(r) = c.window(&window, 1, MINUTE).await else {
            return;
        };
        let (_, first_left) = r.unwrap();
        // Longer, shorter, and equal TTLs: the deadline stays.
        for (i, ttl) in [MINUTE * 10, Duration::from_secs(1), MINUTE]
            .into_iter()
            .enumerate()
        {
            let (count, left) = c.cache.increment_with_ttl(&window, 1, ttl).await.unwrap();
            assert_eq!(count, i as i64 + 2);
            assert!(left <= first_left, "{left:?} > {first_left:?}");
            assert!(
                left > Duration::from_secs(1),
                "{left:?}: the 1 s TTL was applied"
            );
        }
        // A TTL set by a put is kept too.
        let other = c.counter("other");
        c.cache
            .put_with_ttl(&other, &1, Duration::from_secs(5000))
            .await
            .unwrap();
        let (count, left) = c.cache.increment_with_ttl(&other, 1, MINUTE).await.unwrap();
        assert_eq!(count, 2);
        assert!(
            left > MINUTE && left <= Duration::from_secs(5000),
            "{left:?}"
        );
    }

    pub async fn increment_with_ttl_after_expiry_starts_a_new_window(c: Ctx) {
        let window = c.counter("window");
        let Some(r) = c.window(&window, 5, Duration::from_millis(1)).await else {
            return;
        };
        assert_eq!(r.unwrap().0, 5);
        c.await_expiry(&window).await;
        let (count, left) = c
            .cache
            .increment_with_ttl(&window, 1, MINUTE)
            .await
            .unwrap();
        assert_eq!(count, 1);
        assert!(left > Duration::from_secs(1) && left <= MINUTE, "{left:?}");
    }

    pub async fn invalid_ttls_are_rejected_before_anything_is_sent(c: Ctx) {
        let k = c.counter("window");
        for ttl in [
            Duration::ZERO,
            MAX_TTL + Duration::from_millis(1),
            Duration::MAX,
        ] {
            assert_err!(
                c.cache.increment_with_ttl(&k, 1, ttl).await,
                Error::InvalidTtl
            );
            assert_err!(c.cache.put_with_ttl(&k, &1, ttl).await, Error::InvalidTtl);
        }
        assert_eq!(
            c.cache.ttl(&k).await.unwrap(),
            Ttl::Absent,
            "nothing was created"
        );
        c.cache.put(&k, &3).await.unwrap();
        assert_err!(
            c.cache.increment_with_ttl(&k, 1, Duration::ZERO).await,
            Error::InvalidTtl
        );
        assert_eq!(c.cache.get(&k).await.unwrap(), Some(3));
        assert_eq!(c.cache.ttl(&k).await.unwrap(), Ttl::Persistent);
    }

    pub async fn sub_millisecond_ttls_round_up(c: Ctx) {
        // 1 ns is a valid TTL: it rounds up to 1 ms rather than down to 0.
        let tiny = c.counter("tiny");
        let Some(r) = c.window(&tiny, 1, Duration::from_nanos(1)).await else {
            return;
        };
        let (count, left) = r.unwrap();
        assert_eq!(count, 1);
        assert!(left <= Duration::from_millis(1), "{left:?}");
        // 1 ms + 1 ns is 2 ms: more than 1 ms is reported only if the
        // rounding went up.
        let window = c.counter("window");
        let (_, left) = c
            .cache
            .increment_with_ttl(&window, 1, Duration::new(60, 1))
            .await
            .unwrap();
        assert!(left <= Duration::from_millis(60_001), "{left:?}");
    }

    pub async fn long_lifetimes_are_reported_in_full(c: Ctx) {
        let forever = c.counter("forever");
        let Some(r) = c.window(&forever, 1, MAX_TTL).await else {
            return;
        };
        let (count, left) = r.unwrap();
        assert_eq!(count, 1);
        assert!(left <= MAX_TTL && left > MAX_TTL - MINUTE, "{left:?}");
        let left = c.left(&forever).await;
        assert!(left <= MAX_TTL && left > MAX_TTL - MINUTE, "{left:?}");
    }

    pub async fn increment_overflow_changes_nothing(c: Ctx) {
        let k = c.counter("high");
        c.cache
            .put_with_ttl(&k, &i64::MAX, MINUTE * 10)
            .await
            .unwrap();
        let before = c.state(&k).await;
        assert_err!(c.cache.increment(&k, 1).await, Error::Overflow);
        assert_err!(c.cache.increment(&k, i64::MAX).await, Error::Overflow);
        assert_err!(c.cache.decrement(&k, -1).await, Error::Overflow);
        assert_eq!(c.state(&k).await, before);
        assert_eq!(c.cache.increment(&k, 0).await.unwrap(), i64::MAX);

        let k = c.counter("low");
        c.cache.put(&k, &i64::MIN).await.unwrap();
        let before = c.state(&k).await;
        assert_err!(c.cache.increment(&k, -1).await, Error::Overflow);
        assert_err!(c.cache.increment(&k, i64::MIN).await, Error::Overflow);
        assert_err!(c.cache.decrement(&k, 1).await, Error::Overflow);
        assert_err!(c.cache.decrement(&k, i64::MAX).await, Error::Overflow);
        assert_eq!(c.state(&k).await, before);
        assert_eq!(c.cache.increment(&k, i64::MAX).await.unwrap(), -1);
    }

    pub async fn decrement_checks_the_mathematical_result(c: Ctx) {
        let adjustment = c.counter("view-adjustments.v1:article-73");
        c.cache.put(&adjustment, &i64::MIN).await.unwrap();
        assert_eq!(c.cache.decrement(&adjustment, i64::MIN).await.unwrap(), 0);
        // 0 - i64::MIN = 2^63: rejected, and the 0 stays.
        assert_err!(
            c.cache.decrement(&adjustment, i64::MIN).await,
            Error::Overflow
        );
        assert_eq!(c.cache.get(&adjustment).await.unwrap(), Some(0));
        assert_eq!(c.cache.ttl(&adjustment).await.unwrap(), Ttl::Persistent);
        // Against an absent counter it fails without creating it.
        let absent = c.counter("absent");
        assert_err!(c.cache.decrement(&absent, i64::MIN).await, Error::Overflow);
        assert_eq!(c.cache.ttl(&absent).await.unwrap(), Ttl::Absent);
        // Every negative value can take i64::MIN away.
        for (start, result) in [(-1, i64::MAX), (i64::MIN + 1, 1), (-5, i64::MAX - 4)] {
            let k = c.counter("neg");
            c.cache.put(&k, &start).await.unwrap();
            assert_eq!(c.cache.decrement(&k, i64::MIN).await.unwrap(), result);
            assert_eq!(c.cache.get(&k).await.unwrap(), Some(result));
        }
        // And no non-negative one can.
        for start in [0, 1, i64::MAX] {
            let k = c.counter("nonneg");
            c.cache.put(&k, &start).await.unwrap();
            assert_err!(c.cache.decrement(&k, i64::MIN).await, Error::Overflow);
            assert_eq!(c.cache.get(&k).await.unwrap(), Some(start));
        }
        let k = c.counter("edge");
        c.cache.put(&k, &-1).await.unwrap();
        assert_eq!(c.cache.decrement(&k, i64::MAX).await.unwrap(), i64::MIN);
        assert_err!(c.cache.decrement(&k, 1).await, Error::Overflow);
    }

    pub async fn increment_with_ttl_overflow_adds_no_expiry(c: Ctx) {
        let k = c.counter("persistent");
        c.cache.put(&k, &i64::MAX).await.unwrap();
        let before = c.state(&k).await;
        if let Some(r) = c.window(&k, 1, MINUTE).await {
            assert_err!(r, Error::Overflow);
        }
        assert_eq!(c.state(&k).await, before, "no expiry was added");
        assert_eq!(c.cache.ttl(&k).await.unwrap(), Ttl::Persistent);
        let k = c.counter("expiring");
        c.cache
            .put_with_ttl(&k, &i64::MIN, MINUTE * 10)
            .await
            .unwrap();
        let before = c.state(&k).await;
        if let Some(r) = c.window(&k, -1, MINUTE).await {
            assert_err!(r, Error::Overflow);
        }
        assert_eq!(c.state(&k).await, before);
        // Nor does it create a missing key.
        let absent = c.counter("absent");
        c.cache.put(&absent, &i64::MIN).await.unwrap();
        assert!(c.cache.delete(&absent).await.unwrap());
        if let Some(r) = c.window(&absent, 0, MINUTE).await {
            assert_eq!(r.unwrap().0, 0);
        }
    }

    pub async fn get_and_put_round_trip(c: Ctx) {
        let k = c.counter("n");
        assert_eq!(c.cache.get(&k).await.unwrap(), None);
        for v in [0, 1, -1, i64::MAX, i64::MIN] {
            c.cache.put(&k, &v).await.unwrap();
            assert_eq!(c.cache.get(&k).await.unwrap(), Some(v));
        }
        // put replaces the TTL as well as the value.
        c.cache.put_with_ttl(&k, &6, MINUTE * 10).await.unwrap();
        c.cache.put(&k, &7).await.unwrap();
        assert_eq!(c.cache.get(&k).await.unwrap(), Some(7));
        assert_eq!(c.cache.ttl(&k).await.unwrap(), Ttl::Persistent);
        let text = c.key::<String>("greeting");
        c.cache.put(&text, &"héllo".to_string()).await.unwrap();
        assert_eq!(c.cache.get(&text).await.unwrap().as_deref(), Some("héllo"));
        let mut name = c.prefix.clone().into_bytes();
        name.extend_from_slice(b"bin\x00key\xff");
        let bytes = Key::<Vec<u8>>::new(name);
        c.cache.put(&bytes, &vec![0, 255, 10]).await.unwrap();
        assert_eq!(c.cache.get(&bytes).await.unwrap(), Some(vec![0, 255, 10]));
        let empty = c.key::<Vec<u8>>("empty");
        c.cache.put(&empty, &Vec::new()).await.unwrap();
        assert_eq!(c.cache.get(&empty).await.unwrap(), Some(Vec::new()));
        c.cache
            .put(&c.key::<Vec<u8>>("not-text"), &vec![0xff])
            .await
            .unwrap();
        assert_err!(
            c.cache.get(&c.key::<String>("not-text")).await,
            Error::Decode(_)
        );
    }

    pub async fn concurrent_increments_lose_nothing(c: Ctx) {
        const TASKS: i64 = 32;
        const EACH: i64 = 50;
        let views = c.counter("views");
        let window = c.counter("window");
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let cache = c.cache.clone();
            let (views, window, windows) = (views.clone(), window.clone(), c.windows);
            tasks.push(tokio::spawn(async move {
                let mut seen = Vec::new();
                for i in 0..EACH {
                    // Mixed deltas, all positive, so every result is unique.
                    seen.push(cache.increment(&views, 1 + (t + i) % 3).await.unwrap());
                    if windows {
                        cache.increment_with_ttl(&window, 1, MINUTE).await.unwrap();
                    }
                }
                seen
            }));
        }
        let mut results = Vec::new();
        for t in tasks {
            results.extend(t.await.unwrap());
        }
        let expected: i64 = (0..TASKS)
            .flat_map(|t| (0..EACH).map(move |i| 1 + (t + i) % 3))
            .sum();
        assert_eq!(c.cache.get(&views).await.unwrap(), Some(expected));
        results.sort_unstable();
        results.dedup();
        assert_eq!(
            results.len() as i64,
            TASKS * EACH,
            "two increments saw the same total"
        );
        if c.windows {
            assert_eq!(c.cache.get(&window).await.unwrap(), Some(TASKS * EACH));
            c.left(&window).await;
        }
        // And decrements take them all back.
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let cache = c.cache.clone();
            let views = views.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..EACH {
                    cache.decrement(&views, 1 + (t + i) % 3).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(c.cache.get(&views).await.unwrap(), Some(0));
    }
}
