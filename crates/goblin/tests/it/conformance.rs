//! One suite of counter-cache cases, run on every driver: the embedded
//! store, the remote driver against goblin-server (in-process, port 0), and
//! the remote driver against Debian's redis-server 7.0 (a child process;
//! the tests fail, never skip, when it is missing). The cases are written
//! once, as async functions over a `Fixture`; `conformance!` instantiates
//! every case for every driver, so the three runs are the same cases.
//!
//! Every rejected call is checked to have changed nothing: the value (GET),
//! the absolute deadline (PEXPIRETIME), and absence.
//!
//! The published kit (`goblin::cache::conformance`, which checks through
//! the cache alone what these cases check with a plain connection beside
//! it) runs on the same three drivers in `kit`; the cluster and custom
//! driver runs are in `cluster.rs` and `custom_driver.rs`.

use crate::support::Fixture;
use goblin::cache::{Error, Key, MAX_TTL};
use std::time::Duration;

const MINUTE: Duration = Duration::from_secs(60);

fn key(name: &str) -> Key<i64> {
    Key::new(name)
}

/// The value and absolute deadline of a key, to compare before and after.
async fn state(f: &Fixture, name: &str) -> (Option<Vec<u8>>, i64) {
    (f.raw.get(name).await, f.raw.expire_time(name).await)
}

macro_rules! assert_err {
    ($result:expr, $pattern:pat) => {
        match $result {
            Err($pattern) => {}
            other => panic!(
                "expected {}, got {:?}",
                stringify!($pattern),
                other.map(|_| ())
            ),
        }
    };
}

mod cases {
    use super::*;

    pub async fn increment_of_a_missing_counter_starts_from_zero(f: Fixture) {
        let views = key("article-views.v1:article-73");
        assert_eq!(f.cache.increment(&views, 1).await.unwrap(), 1);
        assert_eq!(f.cache.increment(&views, 1).await.unwrap(), 2);
        assert_eq!(f.cache.increment(&views, 40).await.unwrap(), 42);
        assert_eq!(f.cache.get(&views).await.unwrap(), Some(42));
        let negative = key("negative");
        assert_eq!(f.cache.increment(&negative, -5).await.unwrap(), -5);
    }

    pub async fn increment_of_an_expired_counter_starts_from_zero(f: Fixture) {
        let views = key("views");
        f.raw.ok(&["SET", "views", "41", "PX", "1"]).await;
        let deadline = f.raw.time_ms().await + 1;
        f.raw.await_expiry("views", deadline).await;
        assert_eq!(f.cache.increment(&views, 1).await.unwrap(), 1);
        assert_eq!(
            f.raw.expire_time("views").await,
            -1,
            "a new counter has no TTL"
        );
        f.raw.ok(&["SET", "down", "41", "PX", "1"]).await;
        let deadline = f.raw.time_ms().await + 1;
        f.raw.await_expiry("down", deadline).await;
        assert_eq!(f.cache.decrement(&key("down"), 1).await.unwrap(), -1);
        assert_eq!(f.raw.expire_time("down").await, -1);
    }

    pub async fn decrement_subtracts_atomically(f: Fixture) {
        let views = key("views");
        assert_eq!(f.cache.decrement(&views, 1).await.unwrap(), -1);
        assert_eq!(f.cache.increment(&views, 11).await.unwrap(), 10);
        assert_eq!(f.cache.decrement(&views, 3).await.unwrap(), 7);
        // Not a floor at zero: a correction may go negative.
        assert_eq!(f.cache.decrement(&views, 10).await.unwrap(), -3);
        assert_eq!(f.cache.decrement(&views, -5).await.unwrap(), 2);
        assert_eq!(f.cache.get(&views).await.unwrap(), Some(2));
    }

    pub async fn counters_are_base10_text(f: Fixture) {
        let views = key("views");
        f.cache.increment(&views, -1234).await.unwrap();
        assert_eq!(f.raw.get("views").await.as_deref(), Some(&b"-1234"[..]));
        f.raw.set("views", "9000").await;
        assert_eq!(f.cache.get(&views).await.unwrap(), Some(9000));
        assert_eq!(f.cache.increment(&views, 1).await.unwrap(), 9001);
        f.cache.put(&views, &i64::MIN).await.unwrap();
        assert_eq!(
            f.raw.get("views").await.as_deref(),
            Some(&b"-9223372036854775808"[..])
        );
    }

    pub async fn increment_and_decrement_never_change_the_ttl(f: Fixture) {
        let fresh = key("fresh");
        f.cache.increment(&fresh, 1).await.unwrap();
        assert_eq!(f.raw.expire_time("fresh").await, -1);
        f.cache.decrement(&key("fresh-down"), 1).await.unwrap();
        assert_eq!(f.raw.expire_time("fresh-down").await, -1);

        f.raw.ok(&["SET", "expiring", "5", "PX", "600000"]).await;
        let deadline = f.raw.expire_time("expiring").await;
        assert!(deadline > 0);
        let expiring = key("expiring");
        assert_eq!(f.cache.increment(&expiring, 2).await.unwrap(), 7);
        assert_eq!(f.raw.expire_time("expiring").await, deadline);
        assert_eq!(f.cache.decrement(&expiring, 3).await.unwrap(), 4);
        assert_eq!(f.raw.expire_time("expiring").await, deadline);
        assert_err!(
            f.cache.decrement(&expiring, i64::MIN).await,
            Error::Overflow
        );
        assert_eq!(f.raw.expire_time("expiring").await, deadline);
        f.cache.put(&expiring, &-1).await.unwrap();
        f.raw.pexpire("expiring", 600000).await;
        let deadline = f.raw.expire_time("expiring").await;
        assert_eq!(
            f.cache.decrement(&expiring, i64::MIN).await.unwrap(),
            i64::MAX
        );
        assert_eq!(f.raw.expire_time("expiring").await, deadline);
    }

    pub async fn non_integer_values_are_rejected_and_kept(f: Fixture) {
        f.raw.set("text", "abc").await;
        f.raw.ok(&["SET", "spaced", " 1", "PX", "600000"]).await;
        f.raw.set("float", "1.5").await;
        for name in ["text", "spaced", "float"] {
            let k = key(name);
            let before = state(&f, name).await;
            assert_err!(f.cache.increment(&k, 1).await, Error::NotInteger);
            assert_err!(f.cache.decrement(&k, 1).await, Error::NotInteger);
            assert_err!(f.cache.decrement(&k, i64::MIN).await, Error::NotInteger);
            assert_err!(
                f.cache.increment_with_ttl(&k, 1, MINUTE).await,
                Error::NotInteger
            );
            assert_err!(f.cache.get(&k).await, Error::NotInteger);
            assert_eq!(state(&f, name).await, before, "{name} changed");
        }
        // A negative-looking text is not an integer either.
        f.raw.set("minus", "-abc").await;
        let before = state(&f, "minus").await;
        assert_err!(
            f.cache.decrement(&key("minus"), i64::MIN).await,
            Error::NotInteger
        );
        assert_eq!(state(&f, "minus").await, before);
        // The same bytes read as text.
        let text = Key::<String>::new("text");
        assert_eq!(f.cache.get(&text).await.unwrap().as_deref(), Some("abc"));
    }

    pub async fn other_types_are_rejected_and_kept(f: Fixture) {
        assert_eq!(f.raw.int(&["RPUSH", "list", "a"]).await, 1);
        let k = key("list");
        assert_err!(f.cache.increment(&k, 1).await, Error::WrongType);
        assert_err!(f.cache.decrement(&k, 1).await, Error::WrongType);
        assert_err!(f.cache.decrement(&k, i64::MIN).await, Error::WrongType);
        assert_err!(
            f.cache.increment_with_ttl(&k, 1, MINUTE).await,
            Error::WrongType
        );
        assert_err!(f.cache.get(&k).await, Error::WrongType);
        assert_eq!(f.raw.int(&["LLEN", "list"]).await, 1);
        assert_eq!(f.raw.expire_time("list").await, -1);
    }

    pub async fn increment_with_ttl_starts_a_window(f: Fixture) {
        let requests = key("export-requests.v1:account-7");
        let before = f.raw.time_ms().await;
        let (count, left) = f
            .cache
            .increment_with_ttl(&requests, 1, MINUTE)
            .await
            .unwrap();
        let after = f.raw.time_ms().await;
        assert_eq!(count, 1);
        assert!(left > Duration::ZERO && left <= MINUTE, "{left:?}");
        let deadline = f.raw.expire_time("export-requests.v1:account-7").await;
        assert!(
            deadline >= before + 60_000 && deadline <= after + 60_000,
            "deadline {deadline} outside [{before}, {after}] + 60 s"
        );
        assert_eq!(f.cache.get(&requests).await.unwrap(), Some(1));
    }

    pub async fn increment_with_ttl_gives_a_persistent_counter_a_ttl(f: Fixture) {
        f.raw.set("legacy", "41").await;
        assert_eq!(f.raw.expire_time("legacy").await, -1);
        let before = f.raw.time_ms().await;
        let (count, left) = f
            .cache
            .increment_with_ttl(&key("legacy"), 1, MINUTE)
            .await
            .unwrap();
        assert_eq!(count, 42);
        assert!(left > Duration::ZERO && left <= MINUTE);
        assert!(f.raw.expire_time("legacy").await >= before + 60_000);
    }

    pub async fn increment_with_ttl_never_slides_the_deadline(f: Fixture) {
        let window = key("window");
        let (_, first_left) = f
            .cache
            .increment_with_ttl(&window, 1, MINUTE)
            .await
            .unwrap();
        let deadline = f.raw.expire_time("window").await;
        // Longer, shorter, and equal TTLs: the deadline stays.
        for (i, ttl) in [MINUTE * 10, Duration::from_secs(1), MINUTE]
            .into_iter()
            .enumerate()
        {
            let (count, left) = f.cache.increment_with_ttl(&window, 1, ttl).await.unwrap();
            assert_eq!(count, i as i64 + 2);
            assert!(left <= first_left, "{left:?} > {first_left:?}");
            assert_eq!(f.raw.expire_time("window").await, deadline);
        }
        // A TTL set by another client is kept too.
        f.raw.ok(&["SET", "other", "1", "PX", "5000000"]).await;
        let deadline = f.raw.expire_time("other").await;
        let (count, left) = f
            .cache
            .increment_with_ttl(&key("other"), 1, MINUTE)
            .await
            .unwrap();
        assert_eq!(count, 2);
        assert!(left > MINUTE && left <= Duration::from_millis(5_000_000));
        assert_eq!(f.raw.expire_time("other").await, deadline);
    }

    pub async fn increment_with_ttl_after_expiry_starts_a_new_window(f: Fixture) {
        let window = key("window");
        f.cache
            .increment_with_ttl(&window, 5, Duration::from_millis(1))
            .await
            .unwrap();
        let deadline = f.raw.expire_time("window").await;
        f.raw.await_expiry("window", deadline).await;
        let before = f.raw.time_ms().await;
        let (count, left) = f
            .cache
            .increment_with_ttl(&window, 1, MINUTE)
            .await
            .unwrap();
        assert_eq!(count, 1);
        assert!(left > Duration::from_secs(1) && left <= MINUTE);
        assert!(f.raw.expire_time("window").await >= before + 60_000);
    }

    pub async fn increment_with_ttl_rejects_invalid_ttls(f: Fixture) {
        let k = key("window");
        assert_err!(
            f.cache.increment_with_ttl(&k, 1, Duration::ZERO).await,
            Error::InvalidTtl
        );
        assert_err!(
            f.cache
                .increment_with_ttl(&k, 1, MAX_TTL + Duration::from_millis(1))
                .await,
            Error::InvalidTtl
        );
        assert_err!(
            f.cache.increment_with_ttl(&k, 1, Duration::MAX).await,
            Error::InvalidTtl
        );
        assert!(!f.raw.exists("window").await, "nothing was created");
        f.raw.set("window", "3").await;
        assert_err!(
            f.cache.increment_with_ttl(&k, 1, Duration::ZERO).await,
            Error::InvalidTtl
        );
        assert_eq!(state(&f, "window").await, (Some(b"3".to_vec()), -1));
    }

    pub async fn sub_millisecond_ttls_round_up(f: Fixture) {
        // 1 ns is a valid TTL: it rounds up to 1 ms rather than down to 0.
        let (count, left) = f
            .cache
            .increment_with_ttl(&key("tiny"), 1, Duration::from_nanos(1))
            .await
            .unwrap();
        assert_eq!(count, 1);
        assert!(left <= Duration::from_millis(1));
        // 60 s + 1 ns is 60,001 ms: the deadline is at least that far from
        // a clock read before the call.
        let before = f.raw.time_ms().await;
        f.cache
            .increment_with_ttl(&key("window"), 1, Duration::new(60, 1))
            .await
            .unwrap();
        let after = f.raw.time_ms().await;
        let deadline = f.raw.expire_time("window").await;
        assert!(
            deadline >= before + 60_001 && deadline <= after + 60_001,
            "deadline {deadline} outside [{before}, {after}] + 60,001 ms"
        );
    }

    pub async fn long_lifetimes_are_reported_in_full(f: Fixture) {
        let before = f.raw.time_ms().await;
        let (count, left) = f
            .cache
            .increment_with_ttl(&key("forever"), 1, MAX_TTL)
            .await
            .unwrap();
        assert_eq!(count, 1);
        assert!(left <= MAX_TTL && left > MAX_TTL - MINUTE, "{left:?}");
        let max_ms = MAX_TTL.as_millis() as i64;
        assert!(f.raw.expire_time("forever").await >= before + max_ms);
        // A deadline set by another client far beyond MAX_TTL (the year
        // 292,000,000) is reported as it is: every lifetime a server
        // reports fits a Duration.
        f.raw.set("far", "1").await;
        let far = 9_000_000_000_000_000_000i64;
        assert_eq!(
            f.raw
                .int(&["PEXPIREAT", "far", far.to_string().as_str()])
                .await,
            1
        );
        if f.driver == "redis-server" {
            // The script returns the remaining lifetime through a Lua
            // number (a double): exact below 2^53 ms, rounded beyond.
            let (_, left) = f
                .cache
                .increment_with_ttl(&key("far"), 1, MINUTE)
                .await
                .unwrap();
            let expected = (far - f.raw.time_ms().await) as f64;
            assert!((left.as_millis() as f64 - expected).abs() < expected * 1e-9);
        } else {
            let (_, left) = f
                .cache
                .increment_with_ttl(&key("far"), 1, MINUTE)
                .await
                .unwrap();
            let now = f.raw.time_ms().await;
            assert!(left.as_millis() as i64 >= far - now);
            assert!(left > Duration::from_secs(60 * 60 * 24 * 365 * 1000));
        }
        assert_eq!(f.raw.expire_time("far").await, far);
    }

    pub async fn increment_overflow_changes_nothing(f: Fixture) {
        let k = key("high");
        f.cache.put(&k, &i64::MAX).await.unwrap();
        f.raw.pexpire("high", 600000).await;
        let before = state(&f, "high").await;
        assert_err!(f.cache.increment(&k, 1).await, Error::Overflow);
        assert_err!(f.cache.increment(&k, i64::MAX).await, Error::Overflow);
        assert_err!(f.cache.decrement(&k, -1).await, Error::Overflow);
        assert_eq!(state(&f, "high").await, before);
        assert_eq!(f.cache.increment(&k, 0).await.unwrap(), i64::MAX);

        let k = key("low");
        f.cache.put(&k, &i64::MIN).await.unwrap();
        let before = state(&f, "low").await;
        assert_err!(f.cache.increment(&k, -1).await, Error::Overflow);
        assert_err!(f.cache.increment(&k, i64::MIN).await, Error::Overflow);
        assert_err!(f.cache.decrement(&k, 1).await, Error::Overflow);
        assert_err!(f.cache.decrement(&k, i64::MAX).await, Error::Overflow);
        assert_eq!(state(&f, "low").await, before);
        assert_eq!(f.cache.increment(&k, i64::MAX).await.unwrap(), -1);
    }

    pub async fn decrement_checks_the_mathematical_result(f: Fixture) {
        let adjustment = key("view-adjustments.v1:article-73");
        f.cache.put(&adjustment, &i64::MIN).await.unwrap();
        assert_eq!(f.cache.decrement(&adjustment, i64::MIN).await.unwrap(), 0);
        // 0 - i64::MIN = 2^63: rejected, and the 0 stays.
        assert_err!(
            f.cache.decrement(&adjustment, i64::MIN).await,
            Error::Overflow
        );
        assert_eq!(f.cache.get(&adjustment).await.unwrap(), Some(0));
        assert_eq!(
            f.raw.expire_time("view-adjustments.v1:article-73").await,
            -1
        );
        // Against an absent counter it fails without creating it.
        let absent = key("absent");
        assert_err!(f.cache.decrement(&absent, i64::MIN).await, Error::Overflow);
        assert!(!f.raw.exists("absent").await);
        assert_eq!(f.cache.get(&absent).await.unwrap(), None);
        // Every negative value can take i64::MIN away.
        for (start, result) in [(-1, i64::MAX), (i64::MIN + 1, 1), (-5, i64::MAX - 4)] {
            let k = key("neg");
            f.cache.put(&k, &start).await.unwrap();
            assert_eq!(f.cache.decrement(&k, i64::MIN).await.unwrap(), result);
            assert_eq!(f.cache.get(&k).await.unwrap(), Some(result));
        }
        // And no non-negative one can.
        for start in [0, 1, i64::MAX] {
            let k = key("nonneg");
            f.cache.put(&k, &start).await.unwrap();
            assert_err!(f.cache.decrement(&k, i64::MIN).await, Error::Overflow);
            assert_eq!(f.cache.get(&k).await.unwrap(), Some(start));
        }
        let k = key("edge");
        f.cache.put(&k, &-1).await.unwrap();
        assert_eq!(f.cache.decrement(&k, i64::MAX).await.unwrap(), i64::MIN);
        assert_err!(f.cache.decrement(&k, 1).await, Error::Overflow);
    }

    pub async fn increment_with_ttl_overflow_adds_no_expiry(f: Fixture) {
        let k = key("persistent");
        f.cache.put(&k, &i64::MAX).await.unwrap();
        assert_err!(
            f.cache.increment_with_ttl(&k, 1, MINUTE).await,
            Error::Overflow
        );
        assert_eq!(
            state(&f, "persistent").await,
            (Some(i64::MAX.to_string().into_bytes()), -1),
            "no expiry was added"
        );
        let k = key("expiring");
        f.cache.put(&k, &i64::MIN).await.unwrap();
        f.raw.pexpire("expiring", 600000).await;
        let before = state(&f, "expiring").await;
        assert_err!(
            f.cache.increment_with_ttl(&k, -1, MINUTE).await,
            Error::Overflow
        );
        assert_eq!(state(&f, "expiring").await, before);
    }

    pub async fn get_and_put_round_trip(f: Fixture) {
        let k = key("n");
        assert_eq!(f.cache.get(&k).await.unwrap(), None);
        for v in [0, 1, -1, i64::MAX, i64::MIN] {
            f.cache.put(&k, &v).await.unwrap();
            assert_eq!(f.cache.get(&k).await.unwrap(), Some(v));
        }
        // put replaces the TTL as well as the value.
        f.raw.pexpire("n", 600000).await;
        f.cache.put(&k, &7).await.unwrap();
        assert_eq!(state(&f, "n").await, (Some(b"7".to_vec()), -1));
        let text = Key::<String>::new("greeting");
        f.cache.put(&text, &"héllo".to_string()).await.unwrap();
        assert_eq!(f.cache.get(&text).await.unwrap().as_deref(), Some("héllo"));
        let bytes = Key::<Vec<u8>>::new(b"bin\x00key".to_vec());
        f.cache.put(&bytes, &vec![0, 255, 10]).await.unwrap();
        assert_eq!(f.cache.get(&bytes).await.unwrap(), Some(vec![0, 255, 10]));
        let invalid = Key::<String>::new("not-text");
        f.cache
            .put(&Key::<Vec<u8>>::new("not-text"), &vec![0xff])
            .await
            .unwrap();
        assert_err!(f.cache.get(&invalid).await, Error::Decode(_));
    }

    pub async fn put_applies_the_write_ttl_and_counters_ignore_it(f: Fixture) {
        // put: the deadline is the write TTL from the moment of the call.
        let session = Key::<String>::new("session").with_write_ttl(MINUTE);
        let before = f.raw.time_ms().await;
        f.cache.put(&session, &"s-1".to_string()).await.unwrap();
        let after = f.raw.time_ms().await;
        let deadline = f.raw.expire_time("session").await;
        assert!(
            deadline >= before + 60_000 && deadline <= after + 60_000,
            "deadline {deadline} outside [{before}, {after}] + 60 s"
        );
        assert_eq!(f.raw.get("session").await.as_deref(), Some(&b"s-1"[..]));
        // put_with_ttl overrides it; a key without one clears the TTL.
        f.cache
            .put_with_ttl(&session, &"s-2".to_string(), MINUTE * 10)
            .await
            .unwrap();
        assert!(f.raw.expire_time("session").await >= before + 600_000);
        f.cache
            .put(&Key::<String>::new("session"), &"s-3".to_string())
            .await
            .unwrap();
        assert_eq!(f.raw.expire_time("session").await, -1);

        // The counters never read it: a new counter has no expiry, and an
        // existing one keeps its deadline to the millisecond.
        let views = key("views").with_write_ttl(MINUTE);
        assert_eq!(f.cache.increment(&views, 1).await.unwrap(), 1);
        assert_eq!(f.cache.decrement(&views, 3).await.unwrap(), -2);
        assert_eq!(f.raw.expire_time("views").await, -1);
        f.raw.ok(&["SET", "views", "5", "PX", "5000000"]).await;
        let deadline = f.raw.expire_time("views").await;
        assert_eq!(f.cache.increment(&views, 1).await.unwrap(), 6);
        assert_eq!(
            f.cache
                .decrement(&views, i64::MIN)
                .await
                .unwrap_err()
                .to_string(),
            "increment or decrement would overflow"
        );
        assert_eq!(f.raw.expire_time("views").await, deadline);
        // increment_with_ttl takes its argument, not the write TTL.
        let window = key("window").with_write_ttl(Duration::from_secs(1));
        let before = f.raw.time_ms().await;
        f.cache
            .increment_with_ttl(&window, 1, MINUTE)
            .await
            .unwrap();
        assert!(f.raw.expire_time("window").await >= before + 60_000);
    }

    pub async fn concurrent_increments_lose_nothing(f: Fixture) {
        const TASKS: i64 = 32;
        const EACH: i64 = 50;
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let cache = f.cache.clone();
            tasks.push(tokio::spawn(async move {
                let views = key("views");
                let window = key("window");
                let mut seen = Vec::new();
                for i in 0..EACH {
                    // Mixed deltas, all positive, so every result is unique.
                    seen.push(cache.increment(&views, 1 + (t + i) % 3).await.unwrap());
                    cache.increment_with_ttl(&window, 1, MINUTE).await.unwrap();
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
        assert_eq!(f.cache.get(&key("views")).await.unwrap(), Some(expected));
        results.sort_unstable();
        results.dedup();
        assert_eq!(
            results.len() as i64,
            TASKS * EACH,
            "two increments saw the same total"
        );
        assert_eq!(
            f.cache.get(&key("window")).await.unwrap(),
            Some(TASKS * EACH)
        );
        assert!(f.raw.expire_time("window").await > 0);
        // And decrements take them all back.
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let cache = f.cache.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..EACH {
                    cache
                        .decrement(&key("views"), 1 + (t + i) % 3)
                        .await
                        .unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(f.cache.get(&key("views")).await.unwrap(), Some(0));
    }
}

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    super::cases::$case(super::Fixture::embedded().await).await;
                }
            )*
        }
        mod goblin_server {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    super::cases::$case(super::Fixture::goblin_server().await).await;
                }
            )*
        }
        mod redis_7 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    super::cases::$case(super::Fixture::redis().await).await;
                }
            )*
        }
    };
}

conformance!(
    increment_of_a_missing_counter_starts_from_zero,
    increment_of_an_expired_counter_starts_from_zero,
    decrement_subtracts_atomically,
    counters_are_base10_text,
    increment_and_decrement_never_change_the_ttl,
    non_integer_values_are_rejected_and_kept,
    other_types_are_rejected_and_kept,
    increment_with_ttl_starts_a_window,
    increment_with_ttl_gives_a_persistent_counter_a_ttl,
    increment_with_ttl_never_slides_the_deadline,
    increment_with_ttl_after_expiry_starts_a_new_window,
    increment_with_ttl_rejects_invalid_ttls,
    sub_millisecond_ttls_round_up,
    long_lifetimes_are_reported_in_full,
    increment_overflow_changes_nothing,
    decrement_checks_the_mathematical_result,
    increment_with_ttl_overflow_adds_no_expiry,
    get_and_put_round_trip,
    put_applies_the_write_ttl_and_counters_ignore_it,
    concurrent_increments_lose_nothing,
);

mod kit {
    use super::Fixture;
    use goblin::cache::conformance;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn embedded() {
        conformance::run_cache(&Fixture::embedded().await.cache).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn goblin_server() {
        conformance::run_cache(&Fixture::goblin_server().await.cache).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn redis_7() {
        conformance::run_cache(&Fixture::redis().await.cache).await;
    }
}
