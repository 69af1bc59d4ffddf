//! Behaviour tests through a real client (the `redis` crate): strings,
//! keys, expiry, SCAN, transactions, and atomicity under concurrency.

use crate::common::{config_set, err_text, info_field, wait_until, TestServer};
use redis::{Commands, Value};
use std::time::Duration;

#[test]
fn set_options() {
    let s = TestServer::start();
    let mut c = s.client();
    let r: Option<String> = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("NX")
        .query(&mut c)
        .unwrap();
    assert_eq!(r.as_deref(), Some("OK"));
    let r: Option<String> = redis::cmd("SET")
        .arg("k")
        .arg("w")
        .arg("NX")
        .query(&mut c)
        .unwrap();
    assert_eq!(r, None);
    let r: Option<String> = redis::cmd("SET")
        .arg("k")
        .arg("w")
        .arg("XX")
        .arg("GET")
        .query(&mut c)
        .unwrap();
    assert_eq!(r.as_deref(), Some("v"));
    let r: Option<String> = redis::cmd("SET")
        .arg("absent")
        .arg("w")
        .arg("XX")
        .query(&mut c)
        .unwrap();
    assert_eq!(r, None);
    assert_eq!(
        err_text(
            redis::cmd("SET")
                .arg("k")
                .arg("v")
                .arg("NX")
                .arg("XX")
                .query::<()>(&mut c)
        ),
        "ERR syntax error"
    );
    assert_eq!(
        err_text(
            redis::cmd("SET")
                .arg("k")
                .arg("v")
                .arg("EX")
                .arg("0")
                .query::<()>(&mut c)
        ),
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(
        err_text(
            redis::cmd("SET")
                .arg("k")
                .arg("v")
                .arg("EX")
                .arg("x")
                .query::<()>(&mut c)
        ),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err_text(
            redis::cmd("SET")
                .arg("k")
                .arg("v")
                .arg("EX")
                .arg("10")
                .arg("KEEPTTL")
                .query::<()>(&mut c)
        ),
        "ERR syntax error"
    );

    let _: () = redis::cmd("SET")
        .arg("t")
        .arg("1")
        .arg("PX")
        .arg("100000")
        .query(&mut c)
        .unwrap();
    let ttl: i64 = c.pttl("t").unwrap();
    assert!(ttl > 90_000 && ttl <= 100_000, "{ttl}");
    let _: () = redis::cmd("SET")
        .arg("t")
        .arg("2")
        .arg("KEEPTTL")
        .query(&mut c)
        .unwrap();
    assert!(c.pttl::<_, i64>("t").unwrap() > 90_000);
    let _: () = c.set("t", "3").unwrap();
    assert_eq!(
        c.ttl::<_, i64>("t").unwrap(),
        -1,
        "a plain SET clears the TTL"
    );

    // SET ... GET on a non-string is WRONGTYPE and changes nothing.
    let _: () = redis::cmd("SETBIT")
        .arg("bits")
        .arg(1)
        .arg(1)
        .query(&mut c)
        .unwrap();
    let _: i64 = redis::cmd("RPUSH")
        .arg("l")
        .arg("x")
        .query(&mut c)
        .unwrap_or(0);
}

#[test]
fn counters() {
    let s = TestServer::start();
    let mut c = s.client();
    assert_eq!(c.incr::<_, _, i64>("n", 5).unwrap(), 5);
    assert_eq!(c.decr::<_, _, i64>("n", 7).unwrap(), -2);
    let _: () = c.set("big", i64::MAX).unwrap();
    assert_eq!(
        err_text(c.incr::<_, _, i64>("big", 1)),
        "ERR increment or decrement would overflow"
    );
    assert_eq!(
        c.get::<_, i64>("big").unwrap(),
        i64::MAX,
        "a failed INCR leaves the value"
    );
    assert_eq!(
        err_text(
            redis::cmd("DECRBY")
                .arg("n")
                .arg(i64::MIN)
                .query::<i64>(&mut c)
        ),
        "ERR decrement would overflow"
    );
    let _: () = c.set("s", "12a").unwrap();
    assert_eq!(
        err_text(c.incr::<_, _, i64>("s", 1)),
        "ERR value is not an integer or out of range"
    );
    // Long double precision, as Redis: 10.5 + 0.1 is 10.6, not 10.599999...
    let v: String = redis::cmd("INCRBYFLOAT")
        .arg("f")
        .arg("10.5")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "10.5");
    let v: String = redis::cmd("INCRBYFLOAT")
        .arg("f")
        .arg("0.1")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "10.6");
    assert_eq!(
        err_text(
            redis::cmd("INCRBYFLOAT")
                .arg("f")
                .arg("inf")
                .query::<String>(&mut c)
        ),
        "ERR increment would produce NaN or Infinity"
    );
    // INCR keeps the TTL.
    let _: () = redis::cmd("SET")
        .arg("t")
        .arg("1")
        .arg("EX")
        .arg("100")
        .query(&mut c)
        .unwrap();
    let _: i64 = c.incr("t", 1).unwrap();
    assert!(c.ttl::<_, i64>("t").unwrap() > 90);
}

#[test]
fn ranges_and_append() {
    let s = TestServer::start();
    let mut c = s.client();
    assert_eq!(c.append::<_, _, i64>("a", "Hello").unwrap(), 5);
    assert_eq!(c.append::<_, _, i64>("a", " World").unwrap(), 11);
    assert_eq!(c.getrange::<_, String>("a", -5, -1).unwrap(), "World");
    assert_eq!(c.getrange::<_, String>("a", 5, 2).unwrap(), "");
    assert_eq!(c.setrange::<_, _, i64>("z", 3, "x").unwrap(), 4);
    assert_eq!(c.get::<_, Vec<u8>>("z").unwrap(), b"\0\0\0x");
    assert_eq!(
        err_text(c.setrange::<_, _, i64>("z", -1, "x")),
        "ERR offset is out of range"
    );
    let lcs: String = redis::cmd("LCS").arg("a").arg("z").query(&mut c).unwrap();
    assert_eq!(lcs, "");
}

#[test]
fn lazy_and_active_expiry() {
    let s = TestServer::start();
    let mut c = s.client();
    // Lazy: with the active cycle off, an expired key disappears when read.
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(0)
        .query(&mut c)
        .unwrap();
    let server_ms = |c: &mut redis::Connection| {
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(c).unwrap();
        secs * 1000 + micros / 1000
    };
    let deadline = server_ms(&mut c) + 50;
    for i in 0..10 {
        let _: () = redis::cmd("SET")
            .arg(format!("lazy{i}"))
            .arg("v")
            .arg("PXAT")
            .arg(deadline)
            .query(&mut c)
            .unwrap();
    }
    wait_until(
        "the deadline on the server's clock",
        Duration::from_secs(5),
        || server_ms(&mut c) > deadline,
    );
    assert_eq!(
        redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap(),
        10,
        "nothing deletes them in the background"
    );
    let got: Vec<Option<String>> = (0..10)
        .map(|i| c.get(format!("lazy{i}")).unwrap())
        .collect();
    assert!(got.iter().all(Option::is_none));
    assert_eq!(
        redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap(),
        0,
        "reads delete expired keys"
    );

    // Active: keys nobody reads are removed in the background.
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(1)
        .query(&mut c)
        .unwrap();
    let mut pipe = redis::pipe();
    for i in 0..2000 {
        pipe.cmd("SET")
            .arg(format!("active{i}"))
            .arg("v")
            .arg("PX")
            .arg(50)
            .ignore();
    }
    pipe.set("persistent", "v").ignore();
    let _: () = pipe.query(&mut c).unwrap();
    wait_until(
        "the active cycle to expire them",
        Duration::from_secs(20),
        || redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap() == 1,
    );
    let expired: u64 = info_field(&mut c, "stats", "expired_keys").parse().unwrap();
    assert!(expired >= 2010, "expired_keys={expired}");
}

#[test]
fn expire_options_and_ttl_replies() {
    let s = TestServer::start();
    let mut c = s.client();
    let _: () = c.set("k", "v").unwrap();
    let r: i64 = redis::cmd("EXPIRE")
        .arg("k")
        .arg(100)
        .arg("XX")
        .query(&mut c)
        .unwrap();
    assert_eq!(r, 0, "XX on a persistent key");
    let r: i64 = redis::cmd("EXPIRE")
        .arg("k")
        .arg(100)
        .arg("NX")
        .query(&mut c)
        .unwrap();
    assert_eq!(r, 1);
    let r: i64 = redis::cmd("EXPIRE")
        .arg("k")
        .arg(50)
        .arg("GT")
        .query(&mut c)
        .unwrap();
    assert_eq!(r, 0);
    let r: i64 = redis::cmd("EXPIRE")
        .arg("k")
        .arg(50)
        .arg("LT")
        .query(&mut c)
        .unwrap();
    assert_eq!(r, 1);
    assert_eq!(
        err_text(
            redis::cmd("EXPIRE")
                .arg("k")
                .arg(5)
                .arg("NX")
                .arg("XX")
                .query::<i64>(&mut c)
        ),
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    );
    assert_eq!(c.ttl::<_, i64>("missing").unwrap(), -2);
    let r: i64 = redis::cmd("PEXPIREAT")
        .arg("k")
        .arg(1)
        .query(&mut c)
        .unwrap();
    assert_eq!(r, 1, "a time in the past deletes");
    assert_eq!(c.exists::<_, i64>("k").unwrap(), 0);
}

/// A key present for the whole SCAN is returned even when the table grows
/// and shrinks between calls.
#[test]
fn scan_survives_resizing() {
    let s = TestServer::start();
    let mut c = s.client();
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        pipe.set(format!("stable:{i}"), i).ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut cursor: u64 = 0;
    let mut step = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(20)
            .query(&mut c)
            .unwrap();
        seen.extend(keys);
        step += 1;
        if step == 5 || step == 40 {
            let mut pipe = redis::pipe();
            for i in 0..20_000 {
                if step == 5 {
                    pipe.set(format!("churn:{i}"), i).ignore();
                } else {
                    pipe.del(format!("churn:{i}")).ignore();
                }
            }
            let _: () = pipe.query(&mut c).unwrap();
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    for i in 0..1000 {
        assert!(seen.contains(&format!("stable:{i}")), "stable:{i} missed");
    }
}

#[test]
fn rename_copy_move_swapdb() {
    let s = TestServer::start();
    let mut c = s.client();
    let _: () = redis::cmd("SET")
        .arg("a")
        .arg("1")
        .arg("EX")
        .arg(100)
        .query(&mut c)
        .unwrap();
    let _: () = c.rename("a", "b").unwrap();
    assert!(c.ttl::<_, i64>("b").unwrap() > 90, "RENAME carries the TTL");
    assert_eq!(err_text(c.rename::<_, _, ()>("a", "c")), "ERR no such key");
    let r: i64 = redis::cmd("COPY").arg("b").arg("c").query(&mut c).unwrap();
    assert_eq!(r, 1);
    let r: i64 = redis::cmd("COPY").arg("b").arg("c").query(&mut c).unwrap();
    assert_eq!(r, 0, "COPY without REPLACE keeps the destination");
    let r: i64 = redis::cmd("MOVE").arg("c").arg(1).query(&mut c).unwrap();
    assert_eq!(r, 1);
    let _: () = redis::cmd("SWAPDB").arg(0).arg(1).query(&mut c).unwrap();
    assert_eq!(c.get::<_, String>("c").unwrap(), "1");
    assert_eq!(c.exists::<_, i64>("b").unwrap(), 0);
    assert_eq!(
        err_text(redis::cmd("SWAPDB").arg(0).arg(99).query::<()>(&mut c)),
        "ERR DB index is out of range"
    );
}

#[test]
fn watch_and_exec() {
    let s = TestServer::start();
    let mut a = s.client();
    let mut b = s.client();
    let _: () = a.set("w", "1").unwrap();
    let _: () = redis::cmd("WATCH").arg("w").query(&mut a).unwrap();
    let _: () = b.set("w", "2").unwrap();
    let _: () = redis::cmd("MULTI").query(&mut a).unwrap();
    let _: () = redis::cmd("SET").arg("w").arg("3").query(&mut a).unwrap();
    let r: Value = redis::cmd("EXEC").query(&mut a).unwrap();
    assert_eq!(
        r,
        Value::Nil,
        "EXEC fails after another client wrote a watched key"
    );
    assert_eq!(a.get::<_, String>("w").unwrap(), "2");

    // Queueing errors abort the whole transaction.
    let _: () = redis::cmd("MULTI").query(&mut a).unwrap();
    let _: () = redis::cmd("SET").arg("w").arg("4").query(&mut a).unwrap();
    let _ = redis::cmd("NOSUCHCOMMAND").query::<()>(&mut a);
    assert_eq!(
        err_text(redis::cmd("EXEC").query::<Value>(&mut a)),
        "EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(a.get::<_, String>("w").unwrap(), "2");

    // Run-time errors do not abort the rest.
    let _: () = a.set("text", "not a number").unwrap();
    let mut raw = s.raw();
    raw.roundtrip(
        b"MULTI\r\nINCR w\r\nINCR text\r\nSET after ok\r\nEXEC\r\n",
        b"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n:3\r\n-ERR value is not an integer or out of range\r\n+OK\r\n",
    );
    assert_eq!(a.get::<_, String>("after").unwrap(), "ok");
}

/// Many clients incrementing one key lose nothing; transactions over keys
/// on different shards are never seen half done.
#[test]
fn atomicity_under_concurrency() {
    let s = TestServer::start();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let mut c = s.client();
            std::thread::spawn(move || {
                for _ in 0..500 {
                    let _: i64 = c.incr("counter", 1).unwrap();
                    let _: () = redis::pipe()
                        .atomic()
                        .incr("pair:a", 1)
                        .ignore()
                        .incr("pair:b", 1)
                        .ignore()
                        .query(&mut c)
                        .unwrap();
                }
            })
        })
        .collect();
    let mut reader = s.client();
    let mut observations = 0;
    while !threads.iter().all(|t| t.is_finished()) {
        let (a, b): (Option<i64>, Option<i64>) = redis::cmd("MGET")
            .arg("pair:a")
            .arg("pair:b")
            .query(&mut reader)
            .unwrap();
        assert_eq!(a, b, "MGET saw a transaction half done");
        observations += 1;
    }
    for t in threads {
        t.join().unwrap();
    }
    assert!(observations > 0);
    assert_eq!(reader.get::<_, i64>("counter").unwrap(), 4000);
    assert_eq!(reader.get::<_, i64>("pair:a").unwrap(), 4000);
}

#[test]
fn client_commands() {
    let s = TestServer::start();
    let mut c = s.client();
    let _: () = redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg("worker-1")
        .query(&mut c)
        .unwrap();
    let name: String = redis::cmd("CLIENT").arg("GETNAME").query(&mut c).unwrap();
    assert_eq!(name, "worker-1");
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut c).unwrap();
    assert!(list.contains("name=worker-1"), "{list}");
    let mut victim = s.client();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut victim).unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query(&mut c)
        .unwrap();
    assert_eq!(killed, 1);
    assert!(
        redis::cmd("PING").query::<String>(&mut victim).is_err(),
        "a killed client is disconnected"
    );
    assert_eq!(
        err_text(
            redis::cmd("CLIENT")
                .arg("SETNAME")
                .arg("has space")
                .query::<()>(&mut c)
        ),
        "ERR Client names cannot contain spaces, newlines or special characters."
    );
}

#[test]
fn config_get_set() {
    let s = TestServer::start();
    let mut c = s.client();
    config_set(&mut c, "maxmemory", "10mb");
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, vec!["maxmemory".to_string(), "10485760".to_string()]);
    assert_eq!(
        err_text(
            redis::cmd("CONFIG")
                .arg("SET")
                .arg("nosuch")
                .arg("1")
                .query::<()>(&mut c)
        ),
        "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"
    );
    let all: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("*")
        .query(&mut c)
        .unwrap();
    assert!(all.len() > 100 && all.len() % 2 == 0);
}

/// The access policy is the engine's own: other tests' servers in this
/// process, started or reconfigured meanwhile, do not switch it back.
#[test]
fn object_freq_counts_accesses_under_lfu() {
    let s = TestServer::start();
    let mut c = s.client();
    let _: () = c.set("k", "v").unwrap();
    assert_eq!(
        err_text(redis::cmd("OBJECT").arg("FREQ").arg("k").query::<i64>(&mut c)),
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
    );
    config_set(&mut c, "maxmemory-policy", "allkeys-lfu");
    let _: () = c.set("hot", "v").unwrap();
    let _: () = c.set("cold", "v").unwrap();
    for _ in 0..200 {
        let _: String = c.get("hot").unwrap();
    }
    let hot: i64 = redis::cmd("OBJECT")
        .arg("FREQ")
        .arg("hot")
        .query(&mut c)
        .unwrap();
    let cold: i64 = redis::cmd("OBJECT")
        .arg("FREQ")
        .arg("cold")
        .query(&mut c)
        .unwrap();
    assert_eq!(cold, 5, "a new key starts at LFU_INIT_VAL");
    assert!(hot > cold, "hot={hot} cold={cold}");
    config_set(&mut c, "maxmemory-policy", "noeviction");
}

/// GOBLIN.HCAS and GOBLIN.HSETGT change a field in place: its TTL stays,
/// in both hash encodings, and each call counts one keyspace hit or miss,
/// as the HGET of the scripts they replace does.
#[test]
fn goblin_hash_writes_keep_the_field_ttl_and_count_as_reads() {
    let s = TestServer::start();
    let mut c = s.client();
    let stat = |c: &mut redis::Connection, name: &str| -> i64 {
        info_field(c, "stats", name).parse().unwrap()
    };
    for entries in ["512", "0"] {
        config_set(&mut c, "hash-max-listpack-entries", entries);
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let _: () = c
            .hset_multiple("h", &[("owner", "a"), ("mark", "10"), ("other", "x")])
            .unwrap();
        let _: Vec<i64> = redis::cmd("HPEXPIRE")
            .arg("h")
            .arg(1_000_000)
            .arg("FIELDS")
            .arg(2)
            .arg("owner")
            .arg("mark")
            .query(&mut c)
            .unwrap();
        let ttl = |c: &mut redis::Connection, field: &str| -> i64 {
            let t: Vec<i64> = redis::cmd("HPEXPIRETIME")
                .arg("h")
                .arg("FIELDS")
                .arg(1)
                .arg(field)
                .query(c)
                .unwrap();
            t[0]
        };
        let (owner_at, mark_at) = (ttl(&mut c, "owner"), ttl(&mut c, "mark"));
        assert!(owner_at > 0 && mark_at > 0);
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();

        let swapped: i64 = redis::cmd("GOBLIN.HCAS")
            .arg("h")
            .arg("owner")
            .arg("a")
            .arg("b")
            .query(&mut c)
            .unwrap();
        let raised: i64 = redis::cmd("GOBLIN.HSETGT")
            .arg("h")
            .arg("mark")
            .arg("11")
            .query(&mut c)
            .unwrap();
        let lower: i64 = redis::cmd("GOBLIN.HSETGT")
            .arg("h")
            .arg("mark")
            .arg("3")
            .query(&mut c)
            .unwrap();
        let missing: i64 = redis::cmd("GOBLIN.HCAS")
            .arg("absent")
            .arg("owner")
            .arg("a")
            .arg("b")
            .query(&mut c)
            .unwrap();
        assert_eq!(
            (swapped, raised, lower, missing),
            (1, 1, 0, 0),
            "encoding entries={entries}"
        );
        // Three calls found the hash, one did not.
        assert_eq!(stat(&mut c, "keyspace_hits"), 3);
        assert_eq!(stat(&mut c, "keyspace_misses"), 1);
        let owner: String = c.hget("h", "owner").unwrap();
        let mark: String = c.hget("h", "mark").unwrap();
        assert_eq!((owner.as_str(), mark.as_str()), ("b", "11"));
        assert_eq!(ttl(&mut c, "owner"), owner_at, "HCAS kept the field's TTL");
        assert_eq!(ttl(&mut c, "mark"), mark_at, "HSETGT kept the field's TTL");
        assert_eq!(ttl(&mut c, "other"), -1);
        let exists: bool = c.exists("absent").unwrap();
        assert!(!exists, "a failed HCAS creates nothing");
    }
}

/// Hash fields past their TTL: hidden and deleted by any access (the key
/// with the last one), and reaped by the active cycle when nobody looks.
#[test]
fn hash_fields_expire_lazily_and_actively() {
    let s = TestServer::start();
    let mut c = s.client();
    for entries in ["512", "0"] {
        config_set(&mut c, "hash-max-listpack-entries", entries);
        // Lazy: with the active cycle off, an access removes the fields.
        let _: () = redis::cmd("DEBUG")
            .arg("SET-ACTIVE-EXPIRE")
            .arg(0)
            .query(&mut c)
            .unwrap();
        let _: () = c
            .hset_multiple("lazy", &[("a", "1"), ("b", "2"), ("c", "3")])
            .unwrap();
        let _: Vec<i64> = redis::cmd("HPEXPIRE")
            .arg("lazy")
            .arg(1)
            .arg("FIELDS")
            .arg(2)
            .arg("a")
            .arg("b")
            .query(&mut c)
            .unwrap();
        wait_until("fields a and b to expire", Duration::from_secs(5), || {
            let n: i64 = c.hlen("lazy").unwrap();
            n == 1
        });
        let all: Vec<String> = c.hgetall::<_, Vec<String>>("lazy").unwrap();
        assert_eq!(all, vec!["c".to_string(), "3".to_string()]);
        let _: Vec<i64> = redis::cmd("HPEXPIRE")
            .arg("lazy")
            .arg(1)
            .arg("FIELDS")
            .arg(1)
            .arg("c")
            .query(&mut c)
            .unwrap();
        wait_until("field c to expire", Duration::from_secs(5), || {
            let v: Option<String> = c.hget("lazy", "c").unwrap();
            v.is_none()
        });
        let exists: bool = c.exists("lazy").unwrap();
        assert!(!exists, "the last field took the key with it");
        // Active: nobody reads, the cycle reaps.
        let _: () = redis::cmd("DEBUG")
            .arg("SET-ACTIVE-EXPIRE")
            .arg(1)
            .query(&mut c)
            .unwrap();
        for i in 0..20 {
            let key = format!("active{i}");
            let _: i64 = redis::cmd("HSETEX")
                .arg(&key)
                .arg("PX")
                .arg(1)
                .arg("FIELDS")
                .arg(2)
                .arg("x")
                .arg("1")
                .arg("y")
                .arg("2")
                .query(&mut c)
                .unwrap();
            let _: () = c.hset(&key, "keep", "1").unwrap();
        }
        let _: i64 = redis::cmd("HSETEX")
            .arg("gone")
            .arg("PX")
            .arg(1)
            .arg("FIELDS")
            .arg(1)
            .arg("x")
            .arg("1")
            .query(&mut c)
            .unwrap();
        // EXISTS and DBSIZE do not read fields: only the cycle can empty
        // "gone".
        wait_until(
            "the active cycle to empty \"gone\"",
            Duration::from_secs(10),
            || {
                let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
                n == 20
            },
        );
        let stats: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
        assert!(stats.contains("expired_subkeys:"), "{stats}");
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    }
}
