//! maxmemory eviction seen by a real client: which keys each policy may
//! take, the OOM answers when none may go, the `evicted` event, the DELs
//! the append-only file gets, and used_memory's accounting of the data.

use crate::common::{config_set, err_text, info_field, wait_until, TestServer};
use std::time::Duration;

const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

fn used_memory(c: &mut redis::Connection) -> u64 {
    info_field(c, "memory", "used_memory").parse().unwrap()
}

fn evicted_keys(c: &mut redis::Connection) -> u64 {
    info_field(c, "stats", "evicted_keys").parse().unwrap()
}

fn dbsize(c: &mut redis::Connection) -> u64 {
    redis::cmd("DBSIZE").query(c).unwrap()
}

/// A 200-byte value.
fn value(i: usize) -> String {
    format!("{i:0>200}")
}

/// Sets maxmemory to what is used now plus `room` bytes.
fn limit_to(c: &mut redis::Connection, room: u64) -> u64 {
    let limit = used_memory(c) + room;
    config_set(c, "maxmemory", limit);
    limit
}

/// For each policy: persistent keys and keys with a TTL fill the server,
/// then as many more keys with a TTL are written under a limit with room
/// for a fraction of them. The volatile policies keep every persistent
/// key; the allkeys ones may take any. Each stays within its limit.
#[test]
fn each_policy_evicts_only_the_keys_it_may() {
    let server = TestServer::start();
    let mut c = server.client();
    for policy in [
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        config_set(&mut c, "maxmemory", 0);
        config_set(&mut c, "maxmemory-policy", policy);
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
        for i in 0..500 {
            let _: () = redis::cmd("SET")
                .arg(format!("persistent:{i}"))
                .arg(value(i))
                .query(&mut c)
                .unwrap();
            let _: () = redis::cmd("SET")
                .arg(format!("volatile:{i}"))
                .arg(value(i))
                .arg("EX")
                .arg(10_000 + i)
                .query(&mut c)
                .unwrap();
        }
        let limit = limit_to(&mut c, 64 * 1024);
        for i in 0..1000 {
            let _: () = redis::cmd("SET")
                .arg(format!("more:{i}"))
                .arg(value(i))
                .arg("EX")
                .arg(10_000)
                .query(&mut c)
                .unwrap_or_else(|e| panic!("{policy}: SET more:{i}: {e}"));
        }
        let evicted = evicted_keys(&mut c);
        assert!(evicted >= 500, "{policy}: only {evicted} keys evicted");
        let used = used_memory(&mut c);
        assert!(
            used <= limit + 4096,
            "{policy}: used_memory {used} over the limit {limit}"
        );
        if policy.starts_with("volatile") {
            let kept: u64 = (0..500)
                .map(|i| -> u64 {
                    redis::cmd("EXISTS")
                        .arg(format!("persistent:{i}"))
                        .query(&mut c)
                        .unwrap()
                })
                .sum();
            assert_eq!(kept, 500, "{policy} evicted a key without a TTL");
        }
    }
}

/// With only persistent keys, the volatile policies have nothing they may
/// evict: writes get Redis's OOM error and nothing is evicted; reads and
/// deletions still run.
#[test]
fn volatile_policies_answer_oom_when_nothing_may_go() {
    let server = TestServer::start();
    let mut c = server.client();
    for i in 0..300 {
        let _: () = redis::cmd("SET")
            .arg(format!("k:{i}"))
            .arg(value(i))
            .query(&mut c)
            .unwrap();
    }
    for policy in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
        "noeviction",
    ] {
        config_set(&mut c, "maxmemory-policy", policy);
        config_set(&mut c, "maxmemory", 1);
        let r: redis::RedisResult<()> = redis::cmd("SET").arg("new").arg("v").query(&mut c);
        assert_eq!(err_text(r), OOM, "{policy}");
        let got: Option<String> = redis::cmd("GET").arg("k:1").query(&mut c).unwrap();
        assert_eq!(got.as_deref(), Some(value(1).as_str()), "{policy}");
        config_set(&mut c, "maxmemory", 0);
    }
    assert_eq!(dbsize(&mut c), 300);
    assert_eq!(evicted_keys(&mut c), 0);
    // A deletion frees memory even while over the limit.
    config_set(&mut c, "maxmemory", 1);
    let n: u64 = redis::cmd("DEL").arg("k:1").query(&mut c).unwrap();
    assert_eq!(n, 1);
}

/// A transaction and a script that would write while the server is over
/// maxmemory (and may evict nothing) get the OOM error; nothing of them is
/// applied.
#[test]
fn multi_and_scripts_over_maxmemory_get_oom_and_apply_nothing() {
    let server = TestServer::start();
    let mut c = server.client();
    let _: () = redis::cmd("SET").arg("x").arg(1).query(&mut c).unwrap();
    config_set(&mut c, "maxmemory-policy", "noeviction");
    config_set(&mut c, "maxmemory", 1);

    let _: () = redis::cmd("MULTI").query(&mut c).unwrap();
    let queued: redis::RedisResult<()> = redis::cmd("INCR").arg("x").query(&mut c);
    assert_eq!(err_text(queued), OOM);
    let exec: redis::RedisResult<redis::Value> = redis::cmd("EXEC").query(&mut c);
    assert!(
        err_text(exec).starts_with("EXECABORT"),
        "EXEC after a refused command"
    );

    let script: redis::RedisResult<()> = redis::cmd("EVAL")
        .arg("redis.call('incr', 'x') redis.call('set', 'y', 'z')")
        .arg(0)
        .query(&mut c);
    assert!(err_text(script).starts_with("OOM"), "a writing script");
    let flagged: redis::RedisResult<()> = redis::cmd("EVAL")
        .arg("#!lua\nredis.call('incr', 'x')")
        .arg(0)
        .query(&mut c);
    assert_eq!(err_text(flagged), OOM, "a script that may write");

    config_set(&mut c, "maxmemory", 0);
    let x: i64 = redis::cmd("GET").arg("x").query(&mut c).unwrap();
    assert_eq!(x, 1);
    let y: Option<String> = redis::cmd("GET").arg("y").query(&mut c).unwrap();
    assert_eq!(y, None);
}

/// Each evicted key is announced as an `evicted` keyspace event.
#[test]
fn evicted_keys_publish_evicted() {
    let server = TestServer::start();
    let mut c = server.client();
    config_set(&mut c, "notify-keyspace-events", "Ee");
    let mut sub = server.client();
    let mut pubsub = sub.as_pubsub();
    pubsub.subscribe("__keyevent@0__:evicted").unwrap();
    pubsub
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    for i in 0..50 {
        let _: () = redis::cmd("SET")
            .arg(format!("k:{i}"))
            .arg(value(i))
            .query(&mut c)
            .unwrap();
    }
    config_set(&mut c, "maxmemory-policy", "allkeys-random");
    config_set(&mut c, "maxmemory", 1);
    // CONFIG SET maxmemory starts the eviction at once; every key goes.
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 50 {
        let msg = pubsub.get_message().unwrap();
        let key: String = msg.get_payload().unwrap();
        assert!(key.starts_with("k:"), "{key}");
        seen.insert(key);
    }
    drop(pubsub);
    config_set(&mut c, "maxmemory", 0);
    assert_eq!(dbsize(&mut c), 0);
    assert_eq!(evicted_keys(&mut c), 50);
}

/// The ranked policies take the right keys first: the least recently used
/// (keys restored with a long IDLETIME), the least frequently used (FREQ),
/// the nearest expiry (volatile-ttl).
#[test]
fn ranked_policies_take_the_worst_candidates_first() {
    let server = TestServer::start();
    let mut c = server.client();
    let _: () = redis::cmd("SET")
        .arg("template")
        .arg(value(0))
        .query(&mut c)
        .unwrap();
    let dump: Vec<u8> = redis::cmd("DUMP").arg("template").query(&mut c).unwrap();
    let _: () = redis::cmd("DEL").arg("template").query(&mut c).unwrap();
    for (policy, cold, hot) in [
        ("allkeys-lru", ("IDLETIME", 100_000), ("IDLETIME", 0)),
        ("allkeys-lfu", ("FREQ", 0), ("FREQ", 200)),
    ] {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        config_set(&mut c, "maxmemory", 0);
        config_set(&mut c, "maxmemory-policy", policy);
        let empty = used_memory(&mut c);
        for i in 0..1000 {
            let (opt, n) = if i % 2 == 0 { cold } else { hot };
            let _: () = redis::cmd("RESTORE")
                .arg(format!("k:{i}"))
                .arg(0)
                .arg(&dump)
                .arg(opt)
                .arg(n)
                .query(&mut c)
                .unwrap();
        }
        // Room for 700 of them: 300 of the 500 cold ones go.
        let used = used_memory(&mut c);
        let limit = used - (used - empty) * 3 / 10;
        config_set(&mut c, "maxmemory", limit);
        wait_until(
            "eviction under the new limit",
            Duration::from_secs(30),
            || evicted_keys(&mut c) > 0 && used_memory(&mut c) <= limit,
        );
        config_set(&mut c, "maxmemory", 0);
        let hot_left: u64 = (0..1000)
            .filter(|i| i % 2 == 1)
            .map(|i| -> u64 {
                redis::cmd("EXISTS")
                    .arg(format!("k:{i}"))
                    .query(&mut c)
                    .unwrap()
            })
            .sum();
        let evicted = evicted_keys(&mut c);
        // Sampling is approximate: the pool takes cold keys nearly always
        // (evicting at random would take about 150 hot ones).
        assert!(
            hot_left >= 480,
            "{policy}: {hot_left} of 500 hot keys left after {evicted} evictions"
        );
    }

    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    config_set(&mut c, "maxmemory-policy", "volatile-ttl");
    let empty = used_memory(&mut c);
    for i in 0..1000 {
        let ttl = if i % 2 == 0 { 1000 } else { 1_000_000 };
        let _: () = redis::cmd("SET")
            .arg(format!("t:{i}"))
            .arg(value(i))
            .arg("EX")
            .arg(ttl)
            .query(&mut c)
            .unwrap();
    }
    let used = used_memory(&mut c);
    let limit = used - (used - empty) * 3 / 10;
    config_set(&mut c, "maxmemory", limit);
    wait_until("volatile-ttl eviction", Duration::from_secs(30), || {
        used_memory(&mut c) <= limit
    });
    config_set(&mut c, "maxmemory", 0);
    let long_left: u64 = (0..1000)
        .filter(|i| i % 2 == 1)
        .map(|i| -> u64 {
            redis::cmd("EXISTS")
                .arg(format!("t:{i}"))
                .query(&mut c)
                .unwrap()
        })
        .sum();
    assert!(
        long_left >= 480,
        "volatile-ttl: {long_left} of 500 long TTLs left"
    );
}

/// Evicted keys reach the append-only file as DELs (Redis's
/// propagateDeletion), so that a reload does not bring them back.
#[test]
fn evictions_are_logged_as_dels() {
    let server = TestServer::start_with(&[("appendonly", "yes"), ("appendfsync", "always")]);
    // What goblin-server's main does before it serves: open the files.
    goblin_engine::persist::load_on_start(&server.engine).unwrap();
    let mut c = server.client();
    for i in 0..20 {
        let _: () = redis::cmd("SET")
            .arg(format!("gone:{i}"))
            .arg(value(i))
            .query(&mut c)
            .unwrap();
    }
    config_set(&mut c, "maxmemory-policy", "allkeys-lru");
    config_set(&mut c, "maxmemory", 1);
    wait_until("every key evicted", Duration::from_secs(30), || {
        dbsize(&mut c) == 0
    });
    config_set(&mut c, "maxmemory", 0);
    let _: () = redis::cmd("SET")
        .arg("after")
        .arg("1")
        .query(&mut c)
        .unwrap();
    let dir = server.dir.join("appendonlydir");
    let log = || -> String {
        let mut all = String::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.to_string_lossy().ends_with(".incr.aof") {
                all.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
            }
        }
        all
    };
    wait_until(
        "the log has the last write",
        Duration::from_secs(30),
        || log().contains("after"),
    );
    let text = log();
    for i in 0..20 {
        let del = format!(
            "$3\r\nDEL\r\n${}\r\ngone:{i}\r\n",
            format!("gone:{i}").len()
        );
        assert!(text.contains(&del), "no DEL of gone:{i} in the log");
    }
}

/// used_memory's data part follows the data: it grows with every kind of
/// value, changes in place are charged, and it is back to nothing once
/// the keys are gone, whatever happened to them meanwhile.
#[test]
fn the_dataset_charge_returns_to_nothing() {
    let server = TestServer::start();
    let mut c = server.client();
    let dataset = || server.engine.memory_use().dataset;
    assert_eq!(dataset(), 0);
    for i in 0..200 {
        let k = format!("{i}");
        let _: () = redis::cmd("SET")
            .arg(format!("s:{k}"))
            .arg(value(i))
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("APPEND")
            .arg(format!("s:{k}"))
            .arg(value(i))
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("EXPIRE")
            .arg(format!("s:{k}"))
            .arg(1000)
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("RPUSH")
            .arg(format!("l:{k}"))
            .arg(vec![value(i); 50])
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("LPOP")
            .arg(format!("l:{k}"))
            .arg(10)
            .query(&mut c)
            .unwrap();
        let fields: Vec<(String, String)> = (0..200).map(|f| (format!("f{f}"), value(f))).collect();
        let _: () = redis::cmd("HSET")
            .arg(format!("h:{k}"))
            .arg(&fields)
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("SADD")
            .arg(format!("z:{k}"))
            .arg((0..300).collect::<Vec<_>>())
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("ZADD")
            .arg(format!("o:{k}"))
            .arg(1)
            .arg("a")
            .arg(2)
            .arg(value(i))
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("XADD")
            .arg(format!("x:{k}"))
            .arg("*")
            .arg("f")
            .arg(value(i))
            .query(&mut c)
            .unwrap();
    }
    let full = dataset();
    // About 200 keys of each kind, with values of hundreds of bytes each.
    assert!(full > 200 * (400 + 40 * 200 + 200 * 200), "dataset {full}");
    let usage: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("h:0")
        .query(&mut c)
        .unwrap();
    assert!(
        usage > 200 * 200,
        "MEMORY USAGE of a 200-field hash: {usage}"
    );
    // Changes in place are charged: the list grows by its pushes. The
    // cron may still be moving the big hashes to their grown tables (and
    // freeing the old ones): measured once the figure has settled.
    let mut last = dataset();
    let mut steady = 0;
    wait_until(
        "the dataset figure to settle",
        Duration::from_secs(30),
        || {
            std::thread::sleep(Duration::from_millis(50));
            let now = dataset();
            steady = if now == last { steady + 1 } else { 0 };
            last = now;
            steady >= 3
        },
    );
    let before = dataset();
    let _: () = redis::cmd("RPUSH")
        .arg("l:0")
        .arg(vec![value(0); 500])
        .query(&mut c)
        .unwrap();
    assert!(dataset() >= before + 500 * 200, "a push of 100 KB");
    for i in 0..200 {
        let keys: Vec<String> = ["s", "l", "h", "z", "o", "x"]
            .iter()
            .map(|t| format!("{t}:{i}"))
            .collect();
        let _: () = redis::cmd("DEL").arg(&keys).query(&mut c).unwrap();
    }
    assert_eq!(dbsize(&mut c), 0);
    // What is left is the tables' bucket arrays, shrunk by the deletions.
    assert!(
        dataset() < 64 * 1024,
        "left after deleting everything: {}",
        dataset()
    );
    let _: () = redis::cmd("SET").arg("one").arg("1").query(&mut c).unwrap();
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    assert_eq!(dataset(), 0, "after FLUSHALL");
}

/// Lowering maxmemory with CONFIG SET evicts at once, in the background:
/// used_memory comes under the new limit with no further command, and
/// INFO reports the time spent over it.
#[test]
fn lowering_maxmemory_evicts_in_the_background() {
    let server = TestServer::start();
    let mut c = server.client();
    config_set(&mut c, "maxmemory-policy", "allkeys-lru");
    config_set(&mut c, "maxmemory-eviction-tenacity", 0);
    for i in 0..5000 {
        let _: () = redis::cmd("SET")
            .arg(format!("k:{i}"))
            .arg(value(i))
            .query(&mut c)
            .unwrap();
    }
    let used = used_memory(&mut c);
    let limit = used / 2;
    config_set(&mut c, "maxmemory", limit);
    wait_until(
        "used_memory under the new limit",
        Duration::from_secs(30),
        || server.engine.used_memory() <= limit,
    );
    // The cycle that brought used_memory under the limit may still be
    // finishing its batch: every key gone is counted as evicted once two
    // readings of the count agree around DBSIZE.
    let mut left = 0;
    wait_until(
        "the eviction count to settle",
        Duration::from_secs(30),
        || {
            let before = evicted_keys(&mut c);
            left = dbsize(&mut c);
            before == evicted_keys(&mut c) && before == 5000 - left
        },
    );
    assert!(left > 1000 && left < 4000, "{left} keys left");
    assert_eq!(
        info_field(&mut c, "stats", "current_eviction_exceeded_time"),
        "0"
    );
}

/// Keys' idle times (LRU policies) and counters (LFU policies) travel in
/// snapshots as Redis writes them (RDB_OPCODE_IDLE, RDB_OPCODE_FREQ), so
/// a restart does not make every key look fresh.
#[test]
fn idle_times_and_counters_survive_a_reload() {
    let server = TestServer::start();
    let mut c = server.client();
    let _: () = redis::cmd("SET")
        .arg("template")
        .arg("v")
        .query(&mut c)
        .unwrap();
    let dump: Vec<u8> = redis::cmd("DUMP").arg("template").query(&mut c).unwrap();
    for (policy, option, n, read_back) in [
        ("allkeys-lru", "IDLETIME", 5000u64, "IDLETIME"),
        ("volatile-lfu", "FREQ", 77, "FREQ"),
    ] {
        config_set(&mut c, "maxmemory-policy", policy);
        let _: () = redis::cmd("RESTORE")
            .arg("k")
            .arg(0)
            .arg(&dump)
            .arg("REPLACE")
            .arg(option)
            .arg(n)
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut c).unwrap();
        let after: u64 = redis::cmd("OBJECT")
            .arg(read_back)
            .arg("k")
            .query(&mut c)
            .unwrap();
        // An idle time only grows; a counter decays by one a minute (a
        // minute may turn meanwhile).
        let expected = if read_back == "IDLETIME" {
            n..n + 60
        } else {
            n - 1..n + 1
        };
        assert!(
            expected.contains(&after),
            "{policy}: OBJECT {read_back} {after} after a reload, {n} before"
        );
    }
}
