//! `Cache::throttle` on every driver: CL.THROTTLE built into the embedded
//! store and goblin-server, and its Lua form on Debian's redis-server 7.0.
//! The servers' clocks differ and move between calls, so the sequences
//! use emission intervals of whole seconds or more: within one test the
//! milliseconds that pass never change a reply (redis-cell rounds partial
//! seconds up), and every driver must give the very same replies.

use crate::support::Fixture;
use goblin::cache::{Error, Key, Throttle};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MINUTE: Duration = Duration::from_secs(60);

fn key(name: &str) -> Key<i64> {
    Key::new(name)
}

/// The fields of a decision, for comparisons that print well.
fn fields(t: Throttle) -> (bool, u64, u64, Option<u64>, u64) {
    (
        t.limited,
        t.limit,
        t.remaining,
        t.retry_after.map(|d| d.as_secs()),
        t.reset_after.as_secs(),
    )
}

fn check_steps(f: &Fixture) {
    // The step the driver chose: the command on Goblin, the script on
    // Redis, so that both forms are what is tested here.
    let steps = format!("{:?}", f.cache);
    let expected = if f.driver == "redis-server" {
        "scripts: true, throttle: false"
    } else {
        "throttle: true"
    };
    assert!(
        f.driver == "embedded" || steps.contains(expected),
        "{}: {steps}",
        f.driver
    );
}

mod cases {
    use super::*;

    pub async fn a_burst_is_allowed_then_refused(f: Fixture) {
        check_steps(&f);
        let k = key("exports.v1:account-7");
        // One action a minute, bursts of 5: (quantity, reply).
        let steps = [
            (0, (false, 5, 5, None, 0)),
            (6, (true, 5, 5, None, 0)),
            (2, (false, 5, 3, None, 120)),
            (1, (false, 5, 2, None, 180)),
            (2, (false, 5, 0, None, 300)),
            (1, (true, 5, 0, Some(60), 300)),
            (0, (false, 5, 0, None, 300)),
        ];
        for (i, (quantity, expected)) in steps.into_iter().enumerate() {
            let t = f.cache.throttle(&k, 4, 1, MINUTE, quantity).await.unwrap();
            assert_eq!(fields(t), expected, "{} step {i}", f.driver);
        }
        // The state is redis-cell's: the TAT in Unix nanoseconds, expiring
        // when the limiter is full again.
        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        let tat = f.cache.get(&k).await.unwrap().expect("a stored TAT");
        let ahead = tat - now_ns;
        assert!(
            ahead > 298_000_000_000 && ahead <= 300_000_000_000,
            "{}: TAT {ahead} ns ahead",
            f.driver
        );
        let pttl = f.raw.int(&["PTTL", "exports.v1:account-7"]).await;
        assert!(pttl > 298_000 && pttl <= 300_000, "{}: {pttl}", f.driver);
    }

    pub async fn capacity_comes_back_with_time(f: Fixture) {
        let k = key("limiter");
        // One action a second, no burst.
        let first = f
            .cache
            .throttle(&k, 0, 1, Duration::from_secs(1), 1)
            .await
            .unwrap();
        assert!(!first.limited);
        let refused = f
            .cache
            .throttle(&k, 0, 1, Duration::from_secs(1), 1)
            .await
            .unwrap();
        assert!(refused.limited, "{}", f.driver);
        assert_eq!(refused.retry_after, Some(Duration::from_secs(1)));
        // Await the next action's turn; it comes within the second.
        loop {
            let t = f
                .cache
                .throttle(&k, 0, 1, Duration::from_secs(1), 1)
                .await
                .unwrap();
            if !t.limited {
                assert_eq!(t.remaining, 0);
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub async fn invalid_rates_send_nothing(f: Fixture) {
        let k = key("limiter");
        for (burst, count, period, quantity) in [
            (0, 1, Duration::ZERO, 1),
            (0, 1, Duration::from_millis(1500), 1),
            (0, 0, MINUTE, 1),
            (u64::MAX, 1, MINUTE, 1),
        ] {
            assert!(matches!(
                f.cache.throttle(&k, burst, count, period, quantity).await,
                Err(Error::InvalidRate(_))
            ));
        }
        assert_eq!(f.raw.get("limiter").await, None);
    }

    pub async fn a_key_that_is_no_limiter_is_refused_and_kept(f: Fixture) {
        f.raw.set("text", "not a time").await;
        assert!(matches!(
            f.cache.throttle(&key("text"), 4, 1, MINUTE, 1).await,
            Err(Error::NotInteger)
        ));
        assert_eq!(f.raw.get("text").await.as_deref(), Some(&b"not a time"[..]));
        assert_eq!(f.raw.int(&["RPUSH", "list", "a"]).await, 1);
        assert!(matches!(
            f.cache.throttle(&key("list"), 4, 1, MINUTE, 1).await,
            Err(Error::NotInteger)
        ));
        assert_eq!(f.raw.int(&["LLEN", "list"]).await, 1);
    }
}

macro_rules! on_every_driver {
    ($($case:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::cases::$case(super::Fixture::embedded().await).await;
                }
            )*
        }
        mod goblin_server {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::cases::$case(super::Fixture::goblin_server().await).await;
                }
            )*
        }
        mod redis_7 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::cases::$case(super::Fixture::redis().await).await;
                }
            )*
        }
    };
}

on_every_driver!(
    a_burst_is_allowed_then_refused,
    capacity_comes_back_with_time,
    invalid_rates_send_nothing,
    a_key_that_is_no_limiter_is_refused_and_kept,
);

/// The same random sequence on the three drivers gives the same replies.
/// Emission intervals of 10 s: nothing comes back during the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drivers_agree_on_a_random_sequence() {
    let fixtures = [
        Fixture::embedded().await,
        Fixture::goblin_server().await,
        Fixture::redis().await,
    ];
    let mut rng = fastrand::Rng::with_seed(28);
    for limiter in 0..4 {
        let k = key(&format!("limiter-{limiter}"));
        let burst = rng.u64(0..=5);
        let count = [6, 3, 1][rng.usize(0..3)];
        let period = Duration::from_secs(10 * count);
        for step in 0..12 {
            let quantity = rng.u64(0..=3);
            let mut replies = vec![];
            for f in &fixtures {
                let t = f
                    .cache
                    .throttle(&k, burst, count, period, quantity)
                    .await
                    .unwrap();
                replies.push((f.driver, fields(t)));
            }
            assert!(
                replies.iter().all(|r| r.1 == replies[0].1),
                "limiter {limiter} (burst {burst}), step {step}, quantity {quantity}: {replies:?}"
            );
        }
    }
}
