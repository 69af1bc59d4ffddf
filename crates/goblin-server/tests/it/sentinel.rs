//! Failover under Redis Sentinel (Debian's redis-sentinel 7.0.15, which
//! must be installed): three sentinels on loopback watch a Goblin primary
//! with a Goblin replica and a Redis replica. A client that finds the
//! primary through the sentinels writes, and after each acknowledged write
//! runs WAIT 1 1000; the primary is killed with SIGKILL, the sentinels
//! promote a replica (of equal replica-priority, the one with the
//! greatest offset: so it holds every write any replica acknowledged),
//! the client follows them to it and writes on. Every write that WAIT
//! confirmed on a replica is on the new primary, and the other replica,
//! moved under the new primary by the sentinels, holds the same data.
//!
//! `GOBLIN_REPL_ALL_REDIS=1` runs it with redis-server in every role (see
//! replication.rs).

use crate::common::process::{temp_dir, Proc};
use crate::replication::{assert_same_data, poll, spawn, wait_synced, Kind};
use redis::{Connection, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A write the client got acknowledged: the primary's port it went to and
/// how many replicas WAIT said had it.
#[derive(Clone, Copy, Debug)]
struct Acked {
    port: u16,
    replicas: i64,
}

/// The primary's address according to the sentinel on `port`.
fn master_addr(port: u16) -> Option<u16> {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .ok()?
        .get_connection_with_timeout(Duration::from_secs(1))
        .ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let addr: Option<(String, String)> = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg("mymaster")
        .query(&mut c)
        .ok()?;
    addr.and_then(|(_, p)| p.parse().ok())
}

/// `SENTINEL MASTER mymaster` as a map.
fn sentinel_master(port: u16) -> BTreeMap<String, String> {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let flat: Vec<String> = redis::cmd("SENTINEL")
        .arg("MASTER")
        .arg("mymaster")
        .query(&mut c)
        .unwrap();
    flat.chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect()
}

/// Writes k<i> = v<i> to whatever primary the sentinels name, reconnecting
/// (and asking them again) whenever a write fails, until `stop`; records
/// each write that WAIT 1 1000 confirmed on at least one replica.
fn writer(sentinels: Vec<u16>, stop: Arc<AtomicBool>, confirmed: Arc<Mutex<BTreeMap<u64, Acked>>>) {
    let mut conn: Option<(u16, Connection)> = None;
    let mut i = 0u64;
    let mut ask = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let Some((port, c)) = conn.as_mut() else {
            ask += 1;
            let found = master_addr(sentinels[ask % sentinels.len()]).and_then(|port| {
                let c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                    .ok()?
                    .get_connection_with_timeout(Duration::from_millis(500))
                    .ok()?;
                c.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
                Some((port, c))
            });
            if found.is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
            conn = found;
            continue;
        };
        i += 1;
        let set: redis::RedisResult<()> = redis::cmd("SET")
            .arg(format!("k{i}"))
            .arg(format!("v{i}"))
            .query(c);
        let waited: redis::RedisResult<i64> =
            set.and_then(|_| redis::cmd("WAIT").arg(1).arg(1000).query(c));
        match waited {
            Ok(n) if n >= 1 => {
                confirmed.lock().unwrap().insert(
                    i,
                    Acked {
                        port: *port,
                        replicas: n,
                    },
                );
            }
            Ok(_) => {}
            Err(_) => {
                conn = None;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

struct Sentinels {
    procs: Vec<Proc>,
    dir: PathBuf,
}

impl Drop for Sentinels {
    fn drop(&mut self) {
        self.procs.clear();
        if std::thread::panicking() {
            eprintln!(
                "sentinels' configuration files and logs kept in {}",
                self.dir.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[test]
fn sentinel_failover_keeps_confirmed_writes() {
    let mut primary = spawn(
        Kind::Goblin,
        "primary",
        &["--repl-diskless-sync-delay", "0"],
    );
    // Of replicas of equal replica-priority, Sentinel promotes the one
    // with the greatest replication offset.
    let goblin_replica = spawn(Kind::Goblin, "replica-goblin", &[]);
    let redis_replica = spawn(Kind::Redis, "replica-redis", &[]);
    goblin_replica.replicaof(&primary);
    redis_replica.replicaof(&primary);
    wait_synced(&primary, &[&goblin_replica, &redis_replica]);

    let dir = temp_dir("sentinel");
    let conf = [
        "sentinel resolve-hostnames no".to_string(),
        format!("sentinel monitor mymaster 127.0.0.1 {} 2", primary.port()),
        "sentinel down-after-milliseconds mymaster 1000".to_string(),
        "sentinel failover-timeout mymaster 5000".to_string(),
        "sentinel parallel-syncs mymaster 1".to_string(),
    ];
    let sentinels = Sentinels {
        procs: (0..3).map(|_| Proc::sentinel(&dir, &conf)).collect(),
        dir,
    };
    let ports: Vec<u16> = sentinels.procs.iter().map(|p| p.port).collect();
    // Each sentinel found the two replicas (in the primary's INFO) and the
    // two other sentinels (through hello messages on the servers).
    for &port in &ports {
        poll(
            &format!("sentinel {port} sees 2 replicas and 2 other sentinels"),
            Duration::from_secs(30),
            || {
                let m = sentinel_master(port);
                if m.get("num-slaves").map(String::as_str) == Some("2")
                    && m.get("num-other-sentinels").map(String::as_str) == Some("2")
                    && m.get("flags").map(String::as_str) == Some("master")
                {
                    Ok(())
                } else {
                    Err(format!("{m:?}"))
                }
            },
        );
    }

    let stop = Arc::new(AtomicBool::new(false));
    let confirmed = Arc::new(Mutex::new(BTreeMap::new()));
    let handle = {
        let (ports, stop, confirmed) = (ports.clone(), stop.clone(), confirmed.clone());
        std::thread::spawn(move || writer(ports, stop, confirmed))
    };
    let count_on = |port: u16| {
        confirmed
            .lock()
            .unwrap()
            .values()
            .filter(|a| a.port == port)
            .count()
    };
    poll(
        "writes confirmed on the first primary",
        Duration::from_secs(30),
        || match count_on(primary.port()) {
            n if n >= 300 => Ok(()),
            n => Err(format!("{n} confirmed")),
        },
    );

    let old_port = primary.port();
    primary.proc.take().unwrap().kill9();
    let killed = Instant::now();
    let new_port = poll(
        "a sentinel names a new primary",
        Duration::from_secs(60),
        || match ports
            .iter()
            .find_map(|&s| master_addr(s).filter(|&p| p != old_port))
        {
            Some(p) => Ok(p),
            None => Err("the sentinels still name the killed primary".to_string()),
        },
    );
    let failover = killed.elapsed();
    poll(
        "the three sentinels name the new primary",
        Duration::from_secs(30),
        || {
            let named: Vec<Option<u16>> = ports.iter().map(|&s| master_addr(s)).collect();
            if named.iter().all(|&p| p == Some(new_port)) {
                Ok(())
            } else {
                Err(format!("they name {named:?}"))
            }
        },
    );
    let (promoted, other) = if new_port == goblin_replica.port() {
        (&goblin_replica, &redis_replica)
    } else {
        assert_eq!(
            new_port,
            redis_replica.port(),
            "the sentinels promoted a replica"
        );
        (&redis_replica, &goblin_replica)
    };
    eprintln!("sentinel: promoted {}", promoted.name);
    poll(
        "writes confirmed on the new primary",
        Duration::from_secs(30),
        || match count_on(new_port) {
            n if n >= 300 => Ok(()),
            n => Err(format!("{n} confirmed")),
        },
    );
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();

    // Every confirmed write is on the new primary.
    let confirmed = confirmed.lock().unwrap().clone();
    let mut c = promoted.client();
    let mut p = redis::pipe();
    for i in confirmed.keys() {
        p.cmd("GET").arg(format!("k{i}"));
    }
    let got: Vec<Option<String>> = p.query(&mut c).unwrap();
    let lost: Vec<(u64, Acked)> = confirmed
        .iter()
        .zip(&got)
        .filter(|((i, _), v)| v.as_deref() != Some(format!("v{i}").as_str()))
        .map(|((i, a), _)| (*i, *a))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} confirmed writes missing on the new primary ({} of them confirmed by both replicas; first: {:?})",
        lost.len(),
        confirmed.len(),
        lost.iter().filter(|(_, a)| a.replicas >= 2).count(),
        &lost[..lost.len().min(10)]
    );
    let role: Value = redis::cmd("ROLE").query(&mut c).unwrap();
    let Value::Array(items) = &role else {
        panic!("ROLE: {role:?}")
    };
    assert_eq!(
        items[0],
        Value::BulkString(b"master".to_vec()),
        "ROLE on the new primary"
    );

    // The sentinels moved the other replica under the new primary, and
    // both hold the same data.
    poll(
        "the other replica follows the new primary",
        Duration::from_secs(30),
        || {
            let info = other.info("replication");
            let port = info.get("master_port").cloned().unwrap_or_default();
            let link = info.get("master_link_status").cloned().unwrap_or_default();
            if port == new_port.to_string() && link == "up" {
                Ok(())
            } else {
                Err(format!("master_port {port}, master_link_status {link}"))
            }
        },
    );
    assert_same_data(promoted, &[other]);
    // Whether the new primary took the other replica by partial resync
    // depends on where the kill fell: when the old primary died between
    // writing a command to one replica's socket and to the other's, the
    // other replica can be ahead of the promoted one, and Redis then
    // resyncs it in full. Not asserted, shown.
    eprintln!(
        "the new primary: sync_full {}, sync_partial_ok {}",
        promoted.stat("sync_full"),
        promoted.stat("sync_partial_ok")
    );
    eprintln!(
        "sentinel failover: new primary named {failover:?} after the kill; {} writes confirmed",
        confirmed.len()
    );
    drop(sentinels);
}
