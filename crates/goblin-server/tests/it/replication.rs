//! Replication between Goblin and Redis 7.0.15 (Debian's redis-server,
//! which must be installed: these tests fail rather than skip without it),
//! with real processes on loopback, in every direction: a Redis replica of
//! a Goblin primary and a Goblin replica of a Redis primary (each with a
//! disk-based and a diskless full sync), a Redis -> Goblin -> Redis chain, a link killed and
//! resumed by partial resync, a primary restarted from its RDB file and
//! resumed by partial resync, WAIT, ROLE, CLIENT LIST's S/M flags,
//! `redis-cli --rdb` / `--functions-rdb` against Goblin, a replica promoted
//! (REPLICAOF NO ONE) while its old primary goes on taking writes, and a
//! full sync into a disk that fills up (a small tmpfs: those tests need
//! root, as CI has).
//!
//! Each scenario runs while a client writes a mix of commands (strings,
//! counters, lists, hashes, sets, sorted sets, streams, expiries short and
//! long, DEL, MULTI/EXEC, scripts that write, commands that Redis
//! replicates by effect such as SPOP and INCRBYFLOAT, writes in another
//! database, and GOBLIN.* commands when the primary is Goblin), waits until
//! the replicas' offsets reach the primary's, and compares the data.
//!
//! The data is compared key by key on every server (TYPE, the value read
//! per type, PEXPIRETIME, and DBSIZE per database), and with DEBUG DIGEST
//! between servers of the same kind: Goblin's DEBUG DIGEST is a signature
//! of its own (it differs from Redis's for the same data, even one
//! `SET a 1`), so a Goblin and a Redis digest are never compared.
//!
//! Server roles are parameters (`Kind`). With `GOBLIN_REPL_ALL_REDIS=1` in
//! the environment every role is played by redis-server, Goblin's too,
//! which checks the tests themselves against Redis:
//!
//!     GOBLIN_REPL_ALL_REDIS=1 cargo test --release -p goblin-server --test it replication
//!
//! (sentinel.rs follows the same variable.)

use crate::common::process::{digest, temp_dir, Proc};
use crate::common::tmpfs::Tmpfs;
use crate::common::wait_until;
use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What plays a server's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Goblin,
    Redis,
}

impl Kind {
    /// The server that actually plays this role: redis-server for every
    /// role under GOBLIN_REPL_ALL_REDIS=1.
    pub fn effective(self) -> Kind {
        if std::env::var("GOBLIN_REPL_ALL_REDIS").is_ok_and(|v| v == "1") {
            Kind::Redis
        } else {
            self
        }
    }
}

/// How long a replica may take to connect, sync or catch up.
pub const SYNC_LIMIT: Duration = Duration::from_secs(30);

/// A server process with its own data directory (removed when the test
/// passes, kept with its log when it fails).
pub struct Node {
    pub kind: Kind,
    pub name: String,
    pub proc: Option<Proc>,
    pub port: u16,
    pub dir: PathBuf,
    args: Vec<String>,
}

/// Starts a server of `kind` (its effective kind) in a fresh directory,
/// without persistence (`--save "" --appendonly no`) and with DEBUG
/// allowed, plus `args`.
pub fn spawn(kind: Kind, name: &str, args: &[&str]) -> Node {
    let kind = kind.effective();
    let dir = temp_dir(&format!("repl-{name}"));
    let mut all: Vec<String> = [
        "--save",
        "",
        "--appendonly",
        "no",
        "--enable-debug-command",
        "yes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    all.extend(args.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let proc = match kind {
        Kind::Goblin => Proc::goblin(&dir, &refs),
        Kind::Redis => Proc::redis(&dir, &refs),
    };
    Node {
        kind,
        name: name.to_string(),
        port: proc.port,
        proc: Some(proc),
        dir,
        args: all,
    }
}

impl Node {
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection whose replies are awaited 30 s at most.
    pub fn client(&self) -> Connection {
        let c = self.proc.as_ref().unwrap().client();
        c.set_read_timeout(Some(SYNC_LIMIT)).unwrap();
        c.set_write_timeout(Some(SYNC_LIMIT)).unwrap();
        c
    }

    pub fn is_goblin(&self) -> bool {
        self.kind == Kind::Goblin
    }

    /// SHUTDOWN SAVE, then the same server started again on the same port
    /// and directory, loading the RDB file it wrote (the first server's
    /// log is kept as `*.log.before-restart`).
    pub fn restart_saved(&mut self) {
        let proc = self.proc.take().unwrap();
        let log = proc.log.clone();
        proc.shutdown_save();
        let mut kept = log.clone().into_os_string();
        kept.push(".before-restart");
        std::fs::rename(&log, kept).unwrap();
        let refs: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.proc = Some(match self.kind {
            Kind::Goblin => Proc::goblin_on(&self.dir, &refs, self.port),
            Kind::Redis => Proc::redis_on(&self.dir, &refs, self.port),
        });
    }

    /// Makes this server a replica of `primary`.
    pub fn replicaof(&self, primary: &Node) {
        let r: String = redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(primary.port())
            .query(&mut self.client())
            .unwrap();
        assert_eq!(r, "OK");
    }

    pub fn info(&self, section: &str) -> HashMap<String, String> {
        info_map(&mut self.client(), section)
    }

    pub fn stat(&self, field: &str) -> u64 {
        let info = self.info("stats");
        info.get(field)
            .unwrap_or_else(|| panic!("{}: no {field} in INFO stats", self.name))
            .parse()
            .unwrap()
    }

    /// INFO replication's master_repl_offset.
    pub fn master_offset(&self) -> u64 {
        let info = self.info("replication");
        info["master_repl_offset"].parse().unwrap()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        drop(self.proc.take());
        if std::thread::panicking() {
            eprintln!(
                "{} ({:?}): data directory and log kept in {}",
                self.name,
                self.kind,
                self.dir.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

pub fn info_map(c: &mut Connection, section: &str) -> HashMap<String, String> {
    let text: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// Polls `check` until it gives Ok, and panics with `what` and the last
/// Err once `limit` has passed.
#[track_caller]
pub fn poll<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Result<T, String>) -> T {
    let start = Instant::now();
    loop {
        match check() {
            Ok(v) => return v,
            Err(e) => {
                assert!(
                    start.elapsed() < limit,
                    "{what}: not reached within {limit:?}; last: {e}"
                );
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until the replica's link to its primary is up.
#[track_caller]
pub fn wait_link_up(replica: &Node) {
    poll(
        &format!("{}: master_link_status up", replica.name),
        SYNC_LIMIT,
        || {
            let info = replica.info("replication");
            match info.get("master_link_status").map(String::as_str) {
                Some("up") => Ok(()),
                other => Err(format!("master_link_status {other:?}")),
            }
        },
    )
}

/// Waits until every replica's link is up and its slave_repl_offset equals
/// the primary's master_repl_offset, read twice around the replicas'
/// (nothing moved meanwhile), and returns that offset.
#[track_caller]
pub fn wait_synced(primary: &Node, replicas: &[&Node]) -> u64 {
    poll("replicas at the primary's offset", SYNC_LIMIT, || {
        let offset = primary.master_offset();
        for r in replicas {
            let info = r.info("replication");
            let link = info.get("master_link_status").cloned().unwrap_or_default();
            let at = info.get("slave_repl_offset").cloned().unwrap_or_default();
            if link != "up" || at != offset.to_string() {
                return Err(format!(
                    "{}: master_link_status {link:?}, slave_repl_offset {at:?}; primary at {offset}",
                    r.name
                ));
            }
        }
        if primary.master_offset() != offset {
            return Err("the primary's offset moved".into());
        }
        Ok(offset)
    })
}

// ---------------------------------------------------------------------------
// Comparing data

/// One key as clients read it: TYPE, the value (canonical text, sets and
/// hashes sorted) and PEXPIRETIME.
type Entry = (String, String, i64);

/// Every key of databases 0 and 1 as clients read them, and DBSIZE of each.
#[derive(PartialEq, Debug, Default)]
pub struct Snapshot {
    keys: BTreeMap<(u8, Vec<u8>), Entry>,
    dbsize: Vec<i64>,
}

fn sorted(v: Vec<Vec<u8>>) -> String {
    let mut v = v;
    v.sort();
    format!(
        "{:?}",
        v.iter()
            .map(|b| String::from_utf8_lossy(b).to_string())
            .collect::<Vec<_>>()
    )
}

pub fn snapshot(c: &mut Connection) -> Snapshot {
    let mut snap = Snapshot::default();
    for db in 0u8..2 {
        let _: () = redis::cmd("SELECT").arg(db).query(c).unwrap();
        let mut keys = BTreeSet::new();
        let mut cursor = 0u64;
        loop {
            let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("COUNT")
                .arg(1000)
                .query(c)
                .unwrap();
            keys.extend(batch);
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        let keys: Vec<Vec<u8>> = keys.into_iter().collect();
        let mut p = redis::pipe();
        for k in &keys {
            p.cmd("TYPE").arg(k).cmd("PEXPIRETIME").arg(k);
        }
        let meta: Vec<(String, i64)> = if keys.is_empty() {
            Vec::new()
        } else {
            let flat: Vec<Value> = p.query(c).unwrap();
            flat.chunks(2)
                .map(|w| {
                    (
                        redis::from_redis_value(w[0].clone()).unwrap(),
                        redis::from_redis_value(w[1].clone()).unwrap(),
                    )
                })
                .collect()
        };
        let mut p = redis::pipe();
        for (k, (t, _)) in keys.iter().zip(&meta) {
            match t.as_str() {
                "string" => p.cmd("GET").arg(k),
                "list" => p.cmd("LRANGE").arg(k).arg(0).arg(-1),
                "set" => p.cmd("SMEMBERS").arg(k),
                "zset" => p.cmd("ZRANGE").arg(k).arg(0).arg(-1).arg("WITHSCORES"),
                "hash" => p.cmd("HGETALL").arg(k),
                "stream" => p.cmd("XRANGE").arg(k).arg("-").arg("+"),
                _ => p.cmd("EXISTS").arg(k), // gone meanwhile ("none")
            };
        }
        let values: Vec<Value> = if keys.is_empty() {
            Vec::new()
        } else {
            p.query(c).unwrap()
        };
        for ((k, (t, at)), v) in keys.into_iter().zip(meta).zip(values) {
            if t == "none" {
                continue;
            }
            let text = match t.as_str() {
                "set" => sorted(redis::from_redis_value(v).unwrap()),
                "hash" => {
                    let flat: Vec<Vec<u8>> = redis::from_redis_value(v).unwrap();
                    sorted(
                        flat.chunks(2)
                            .map(|p| [p[0].clone(), b"=".to_vec(), p[1].clone()].concat())
                            .collect(),
                    )
                }
                _ => format!("{v:?}"),
            };
            snap.keys.insert((db, k), (t, text, at));
        }
        snap.dbsize.push(redis::cmd("DBSIZE").query(c).unwrap());
    }
    let _: () = redis::cmd("SELECT").arg(0).query(c).unwrap();
    snap
}

/// What differs between two snapshots (for a failure message).
fn diff(a_name: &str, a: &Snapshot, b_name: &str, b: &Snapshot) -> String {
    let mut out = format!("DBSIZE {a_name} {:?} {b_name} {:?}; ", a.dbsize, b.dbsize);
    let mut n = 0;
    for k in a.keys.keys().chain(b.keys.keys()).collect::<BTreeSet<_>>() {
        let (x, y) = (a.keys.get(k), b.keys.get(k));
        if x != y {
            n += 1;
            if n <= 10 {
                out.push_str(&format!(
                    "\n  db{} {:?}: {a_name} {x:?} / {b_name} {y:?}",
                    k.0,
                    String::from_utf8_lossy(&k.1)
                ));
            }
        }
    }
    out.push_str(&format!(
        "\n  {n} keys differ ({} / {} keys)",
        a.keys.len(),
        b.keys.len()
    ));
    out
}

/// Asserts the replicas hold the primary's data: once they are at the
/// primary's offset, every key read the same on every server, DBSIZE
/// equal, and DEBUG DIGEST equal between servers of the same kind. Reading
/// keys may expire some on the primary, which then replicates their
/// deletion: the comparison is made again until nothing moved while it was
/// made. Returns the offset they agreed at.
#[track_caller]
pub fn assert_same_data(primary: &Node, replicas: &[&Node]) -> u64 {
    poll(
        "the same data on the primary and its replicas",
        SYNC_LIMIT,
        || {
            let offset = wait_synced(primary, replicas);
            let nodes: Vec<&Node> = std::iter::once(primary)
                .chain(replicas.iter().copied())
                .collect();
            let mut snaps = Vec::new();
            let mut digests = Vec::new();
            for n in &nodes {
                let mut c = n.client();
                digests.push(digest(&mut c));
                snaps.push(snapshot(&mut c));
            }
            if primary.master_offset() != offset {
                return Err("the primary's offset moved while the data was read".into());
            }
            for (i, n) in nodes.iter().enumerate().skip(1) {
                if snaps[i] != snaps[0] {
                    return Err(diff(&primary.name, &snaps[0], &n.name, &snaps[i]));
                }
            }
            for (i, a) in nodes.iter().enumerate() {
                for (j, b) in nodes.iter().enumerate().skip(i + 1) {
                    if a.kind == b.kind && digests[i] != digests[j] {
                        return Err(format!(
                            "DEBUG DIGEST {} {} / {} {} (keys read the same)",
                            a.name, digests[i], b.name, digests[j]
                        ));
                    }
                }
            }
            assert!(
                snaps[0].keys.len() > 100,
                "the primary holds only {} keys",
                snaps[0].keys.len()
            );
            Ok(offset)
        },
    )
}

// ---------------------------------------------------------------------------
// ROLE, CLIENT LIST

/// ROLE on a primary: ["master", offset, [[ip, port, offset], ...]], the
/// replicas' entries as bulk strings, and each replica's acknowledged
/// offset reaching the primary's (replicas acknowledge every second).
#[track_caller]
pub fn assert_role_master(primary: &Node, replicas: &[&Node], offset: u64) {
    poll(
        &format!(
            "{}: ROLE lists its replicas at offset {offset}",
            primary.name
        ),
        SYNC_LIMIT,
        || {
            // Keys still expiring on the primary move its offset on
            // (their DELs): ROLE is compared with the offset of now.
            let offset: u64 = primary
                .info("replication")
                .get("master_repl_offset")
                .and_then(|o| o.parse().ok())
                .unwrap_or(offset);
            let role: Value = redis::cmd("ROLE").query(&mut primary.client()).unwrap();
            let Value::Array(items) = &role else {
                return Err(format!("ROLE replied {role:?}"));
            };
            assert_eq!(items.len(), 3, "ROLE on a primary: {role:?}");
            assert_eq!(items[0], Value::BulkString(b"master".to_vec()), "{role:?}");
            if items[1] != Value::Int(offset as i64) {
                return Err(format!("ROLE's offset: {role:?}, INFO's {offset}"));
            }
            let Value::Array(list) = &items[2] else {
                panic!("ROLE's replicas: {role:?}");
            };
            let mut want: Vec<Value> = replicas
                .iter()
                .map(|r| {
                    Value::Array(vec![
                        Value::BulkString(b"127.0.0.1".to_vec()),
                        Value::BulkString(r.port().to_string().into_bytes()),
                        Value::BulkString(offset.to_string().into_bytes()),
                    ])
                })
                .collect();
            let mut got = list.clone();
            let key = |v: &Value| format!("{v:?}");
            want.sort_by_key(key);
            got.sort_by_key(key);
            if got != want {
                return Err(format!("ROLE replied {role:?}"));
            }
            Ok(())
        },
    )
}

/// INFO replication on a server with replicas (a primary, or a replica
/// with replicas of its own): connected_slaves and one
/// `slaveN:ip=..,port=..,state=online,offset=..,lag=..` line per replica
/// (what Sentinel reads), their offsets reaching `offset`.
#[track_caller]
pub fn assert_info_replicas(node: &Node, replicas: &[&Node], offset: u64) {
    poll(
        &format!(
            "{}: INFO replication lists its replicas at offset {offset}",
            node.name
        ),
        SYNC_LIMIT,
        || {
            let info = node.info("replication");
            // Expiring keys' DELs may move the offset on: the replicas'
            // acknowledgements are compared with the offset of now.
            let offset: u64 = info
                .get("master_repl_offset")
                .and_then(|o| o.parse().ok())
                .unwrap_or(offset);
            let n = replicas.len();
            if info.get("connected_slaves") != Some(&n.to_string()) {
                return Err(format!(
                    "connected_slaves {:?}",
                    info.get("connected_slaves")
                ));
            }
            let mut lines: Vec<String> = (0..n)
                .map(|i| info.get(&format!("slave{i}")).cloned().unwrap_or_default())
                .collect();
            lines.sort();
            for r in replicas {
                let want = format!(
                    "ip=127.0.0.1,port={},state=online,offset={offset},lag=",
                    r.port()
                );
                if !lines.iter().any(|l| l.starts_with(&want)) {
                    return Err(format!("no line starting with {want:?} in {lines:?}"));
                }
            }
            Ok(())
        },
    )
}

/// ROLE on a replica: ["slave", host, port, "connected", offset].
#[track_caller]
pub fn assert_role_replica(replica: &Node, primary: &Node, offset: u64) {
    let role: Value = redis::cmd("ROLE").query(&mut replica.client()).unwrap();
    let Value::Array(items) = &role else {
        panic!("ROLE on {}: {role:?}", replica.name);
    };
    assert_eq!(
        items[..4],
        [
            Value::BulkString(b"slave".to_vec()),
            Value::BulkString(b"127.0.0.1".to_vec()),
            Value::Int(primary.port() as i64),
            Value::BulkString(b"connected".to_vec()),
        ],
        "ROLE on {}",
        replica.name
    );
    // The offset reached at the comparison, or later (expiring keys'
    // DELs may have come since).
    assert!(
        matches!(items[4], Value::Int(o) if o >= offset as i64),
        "ROLE on {}: {role:?}, offset {offset} expected at least",
        replica.name
    );
}

/// CLIENT LIST shows the replication link with flag S on the primary
/// (TYPE replica) and flag M on the replica (TYPE master).
#[track_caller]
pub fn assert_link_flags(primary: &Node, replica: &Node) {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("replica")
        .query(&mut primary.client())
        .unwrap();
    let lines: Vec<&str> = list.lines().collect();
    assert!(
        lines.iter().any(|l| l.contains(" flags=S ")),
        "{}: CLIENT LIST TYPE replica: {list}",
        primary.name
    );
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("master")
        .query(&mut replica.client())
        .unwrap();
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{}: CLIENT LIST TYPE master: {list}",
        replica.name
    );
    assert!(
        lines[0].contains(" flags=M ")
            && lines[0].contains(&format!("addr=127.0.0.1:{} ", primary.port())),
        "{}: CLIENT LIST TYPE master: {list}",
        replica.name
    );
}

// ---------------------------------------------------------------------------
// The writer

/// Writes a base of keys (about 1000, of every type) in one pipeline.
pub fn preload(node: &Node) {
    let mut c = node.client();
    let mut p = redis::pipe();
    for i in 0..200 {
        p.cmd("SET")
            .arg(format!("base:s:{i}"))
            .arg(format!("value-{i}-{}", "x".repeat(i % 50)));
        p.cmd("RPUSH").arg(format!("base:l:{}", i % 20)).arg(i);
        p.cmd("HSET")
            .arg(format!("base:h:{}", i % 20))
            .arg(format!("f{i}"))
            .arg(i * 3);
        p.cmd("SADD").arg(format!("base:set:{}", i % 20)).arg(i);
        p.cmd("ZADD")
            .arg(format!("base:z:{}", i % 20))
            .arg(i as f64 / 4.0)
            .arg(format!("m{i}"));
        p.cmd("SET").arg(format!("base:n:{i}")).arg(i);
        p.cmd("SET")
            .arg(format!("base:ttl:{i}"))
            .arg(i)
            .arg("EX")
            .arg(3600 + i);
        p.cmd("XADD")
            .arg(format!("base:x:{}", i % 4))
            .arg(format!("{}-1", i + 1))
            .arg("f")
            .arg(i);
        p.cmd("SET")
            .arg(format!("base:big:{}", i % 5))
            .arg("y".repeat(20_000));
    }
    for i in 0..10 {
        p.cmd("SET").arg(format!("gd:{i}")).arg(100);
        p.cmd("SET").arg(format!("gl:{i}")).arg("a");
        p.cmd("HSET").arg("gs").arg(format!("f{i}")).arg("a");
    }
    p.cmd("SELECT").arg(1);
    for i in 0..100 {
        p.cmd("SET").arg(format!("db1:s:{i}")).arg(i);
    }
    p.cmd("SELECT").arg(0);
    let _: Value = p.query(&mut c).unwrap();
}

/// A client writing a mix of commands to a primary until stopped; every
/// write must succeed. `ops()` counts the commands (and transactions)
/// done.
pub struct Writer {
    stop: Arc<AtomicBool>,
    ops: Arc<AtomicU64>,
    handle: Option<JoinHandle<()>>,
}

/// The options of a writer: GOBLIN.* commands (only for a Goblin primary)
/// and short expiries (keys that expire while the test runs).
#[derive(Clone, Copy)]
pub struct WriterOpts {
    pub goblin: bool,
    pub short_ttls: bool,
}

impl Writer {
    pub fn start(node: &Node, short_ttls: bool) -> Writer {
        let opts = WriterOpts {
            goblin: node.is_goblin(),
            short_ttls,
        };
        let mut c = node.client();
        let stop = Arc::new(AtomicBool::new(false));
        let ops = Arc::new(AtomicU64::new(0));
        let handle = {
            let (stop, ops) = (stop.clone(), ops.clone());
            std::thread::spawn(move || {
                let mut rng = fastrand::Rng::new();
                let mut i = 0u64;
                // Bounded, in case a test never stops it.
                while !stop.load(Ordering::Relaxed) && i < 1_000_000 {
                    write_one(&mut c, &mut rng, i, opts);
                    i += 1;
                    ops.store(i, Ordering::Relaxed);
                }
            })
        };
        Writer {
            stop,
            ops,
            handle: Some(handle),
        }
    }

    pub fn ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    /// Waits until `n` more writes were done from now.
    #[track_caller]
    pub fn wait_more(&self, n: u64) {
        let target = self.ops() + n;
        wait_until(&format!("{target} writes done"), SYNC_LIMIT, || {
            self.ops() >= target || self.handle.as_ref().unwrap().is_finished()
        });
        assert!(
            !self.handle.as_ref().unwrap().is_finished() || self.ops() >= target,
            "the writer stopped"
        );
    }

    /// Stops the writer and returns how many writes it did (a failed write
    /// fails the test here).
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Err(e) = self.handle.take().unwrap().join() {
            std::panic::resume_unwind(e);
        }
        self.ops()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn q(c: &mut Connection, cmd: &redis::Cmd) {
    if let Err(e) = cmd.query::<Value>(c) {
        panic!(
            "writer: {:?} failed: {e}",
            String::from_utf8_lossy(&cmd.get_packed_command())
        );
    }
}

const SCRIPT_SET_INCR: &str =
    "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[2])";
const SCRIPT_TIME: &str =
    "local t = redis.call('TIME'); redis.call('SET', KEYS[1], t[1] .. '.' .. t[2]); return 1";

/// One write of the mix (command `i`).
fn write_one(c: &mut Connection, rng: &mut fastrand::Rng, i: u64, o: WriterOpts) {
    let s = format!("s:{}", rng.u32(0..300));
    let v = format!("v{i}-{}", rng.u32(..));
    let n40 = rng.u32(0..40);
    let cmd = match i % 20 {
        0 => redis::cmd("SET").arg(&s).arg(&v).clone(),
        1 => redis::cmd("INCR")
            .arg(format!("c:{}", rng.u32(0..50)))
            .clone(),
        2 => redis::cmd("LPUSH").arg(format!("l:{n40}")).arg(&v).clone(),
        3 => redis::cmd("HSET")
            .arg(format!("h:{n40}"))
            .arg(format!("f{}", rng.u32(0..20)))
            .arg(&v)
            .clone(),
        4 => redis::cmd("SADD")
            .arg(format!("set:{n40}"))
            .arg(format!("m{}", rng.u32(0..30)))
            .clone(),
        5 => redis::cmd("ZADD")
            .arg(format!("z:{n40}"))
            .arg(rng.i32(-1000..1000) as f64 / 8.0)
            .arg(format!("m{}", rng.u32(0..30)))
            .clone(),
        6 => redis::cmd("EXPIRE")
            .arg(&s)
            .arg(rng.u32(1000..5000))
            .clone(),
        7 if o.short_ttls && rng.bool() => {
            redis::cmd("PEXPIRE").arg(&s).arg(rng.u32(1..150)).clone()
        }
        7 => redis::cmd("PEXPIRE")
            .arg(&s)
            .arg(rng.u32(100_000..200_000))
            .clone(),
        8 => match rng.u8(0..3) {
            0 => redis::cmd("DEL").arg(&s).clone(),
            1 => redis::cmd("DEL").arg(format!("l:{n40}")).clone(),
            _ => redis::cmd("DEL")
                .arg(format!("set:{n40}"))
                .arg(format!("z:{n40}"))
                .clone(),
        },
        9 => {
            let r: redis::RedisResult<Value> = redis::pipe()
                .atomic()
                .cmd("INCR")
                .arg(format!("c:{}", rng.u32(0..50)))
                .cmd("SET")
                .arg(&s)
                .arg(&v)
                .cmd("LPOP")
                .arg(format!("l:{n40}"))
                .cmd("HINCRBY")
                .arg(format!("h:{n40}"))
                .arg("count")
                .arg(1)
                .query(c);
            r.unwrap_or_else(|e| panic!("writer: MULTI/EXEC failed: {e}"));
            return;
        }
        10 => redis::cmd("EVAL")
            .arg(SCRIPT_SET_INCR)
            .arg(2)
            .arg(&s)
            .arg(format!("c:{}", rng.u32(0..50)))
            .arg(&v)
            .clone(),
        11 => redis::cmd("SPOP").arg(format!("set:{n40}")).clone(),
        12 => redis::cmd("INCRBYFLOAT")
            .arg(format!("f:{}", rng.u32(0..20)))
            .arg("1.25")
            .clone(),
        13 => redis::cmd("XADD")
            .arg(format!("x:{}", rng.u32(0..5)))
            .arg("MAXLEN")
            .arg(50)
            .arg("*")
            .arg("f")
            .arg(&v)
            .clone(),
        14 => {
            let r: redis::RedisResult<Value> = redis::pipe()
                .cmd("SELECT")
                .arg(1)
                .cmd("SET")
                .arg(format!("db1:{s}"))
                .arg(&v)
                .cmd("HINCRBY")
                .arg("db1:h")
                .arg(format!("f{}", rng.u32(0..10)))
                .arg(1)
                .cmd("SELECT")
                .arg(0)
                .query(c);
            r.unwrap_or_else(|e| panic!("writer: writes in db 1 failed: {e}"));
            return;
        }
        15 if o.short_ttls && rng.u8(0..4) == 0 => redis::cmd("SET")
            .arg(&s)
            .arg(&v)
            .arg("PX")
            .arg(rng.u32(1..150))
            .clone(),
        15 => redis::cmd("SET")
            .arg(&s)
            .arg(&v)
            .arg("EX")
            .arg(rng.u32(1000..5000))
            .clone(),
        16 => match rng.u8(0..3) {
            0 => redis::cmd("PERSIST").arg(&s).clone(),
            1 => redis::cmd("GETEX")
                .arg(&s)
                .arg("EX")
                .arg(rng.u32(1000..5000))
                .clone(),
            _ => redis::cmd("APPEND").arg(&s).arg("+").clone(),
        },
        17 => redis::cmd("LMOVE")
            .arg(format!("l:{n40}"))
            .arg(format!("l:{}", rng.u32(0..40)))
            .arg("LEFT")
            .arg("RIGHT")
            .clone(),
        18 if o.goblin => goblin_write(rng, o),
        18 => redis::cmd("SETRANGE")
            .arg(&s)
            .arg(rng.u32(0..20))
            .arg("abc")
            .clone(),
        _ => redis::cmd("EVAL")
            .arg(SCRIPT_TIME)
            .arg(1)
            .arg(format!("t:{}", rng.u32(0..10)))
            .clone(),
    };
    q(c, &cmd);
}

/// A GOBLIN.* command (Goblin primaries only): what a Redis replica gets of
/// it is its effect (with absolute deadlines where the command reads the
/// clock: INCRTTL, CAE, ZWINDOW).
fn goblin_write(rng: &mut fastrand::Rng, o: WriterOpts) -> redis::Cmd {
    let k = rng.u32(0..10);
    // The lock tokens and hash states the compare-and-* commands expect
    // half of the time.
    let (expected, new) = if rng.bool() { ("a", "b") } else { ("b", "a") };
    match rng.u8(0..9) {
        0 => redis::cmd("GOBLIN.DECRPOS").arg(format!("gd:{k}")).clone(),
        1 => redis::cmd("GOBLIN.DECRBYPOS")
            .arg(format!("gd:{k}"))
            .arg(rng.u32(1..4))
            .clone(),
        2 => {
            let ms = if o.short_ttls && rng.bool() {
                rng.u32(1..150)
            } else {
                rng.u32(100_000..200_000)
            };
            redis::cmd("GOBLIN.INCRTTL")
                .arg(format!("gt:{k}"))
                .arg(rng.u32(1..5))
                .arg(ms)
                .clone()
        }
        3 => redis::cmd("GOBLIN.HSETGT")
            .arg("gh")
            .arg(format!("f{k}"))
            .arg(rng.u32(0..1000))
            .clone(),
        4 => redis::cmd("GOBLIN.ZWINDOW")
            .arg(format!("gz:{}", k % 3))
            .arg(5)
            .arg(rng.u32(100_000..200_000))
            .arg(format!("holder{}", rng.u32(0..20)))
            .clone(),
        5 => redis::cmd("SET")
            .arg(format!("gl:{k}"))
            .arg(expected)
            .arg("NX")
            .clone(),
        6 => redis::cmd("GOBLIN.CAE")
            .arg(format!("gl:{k}"))
            .arg(expected)
            .arg(rng.u32(100_000..200_000))
            .clone(),
        7 => redis::cmd("GOBLIN.CAD")
            .arg(format!("gl:{k}"))
            .arg(expected)
            .clone(),
        _ => redis::cmd("GOBLIN.HCAS")
            .arg("gs")
            .arg(format!("f{k}"))
            .arg(expected)
            .arg(new)
            .clone(),
    }
}

// ---------------------------------------------------------------------------
// Scenarios

/// A replica attached while a client writes to the primary (full sync
/// under load), more writes after, then the same data on both, ROLE's
/// shape on both and the link's CLIENT LIST flags.
fn full_sync_while_writing(primary: Kind, replica: Kind, primary_args: &[&str]) -> (Node, Node) {
    let p = spawn(primary, "primary", primary_args);
    let r = spawn(replica, "replica", &[]);
    preload(&p);
    let w = Writer::start(&p, true);
    w.wait_more(500);
    r.replicaof(&p);
    wait_link_up(&r);
    w.wait_more(2500);
    w.stop();
    let offset = assert_same_data(&p, &[&r]);
    assert_role_replica(&r, &p, offset);
    assert_role_master(&p, &[&r], offset);
    assert_info_replicas(&p, &[&r], offset);
    assert_link_flags(&p, &r);
    assert_eq!(p.stat("sync_full"), 1, "{}: INFO stats sync_full", p.name);
    (p, r)
}

/// The logs of the Redis end of a link say how the RDB went: a Redis
/// replica received it streamed with an EOF mark (diskless) or with its
/// length first (from a file); a Redis primary sent it to the replicas'
/// sockets or saved it to disk first.
fn assert_rdb_transfer(primary: &Node, replica: &Node, diskless: bool) {
    let log_of = |n: &Node| std::fs::read_to_string(&n.proc.as_ref().unwrap().log).unwrap();
    let what = if diskless {
        "diskless (EOF-marked)"
    } else {
        "disk-based (sized)"
    };
    if replica.kind == Kind::Redis {
        let log = log_of(replica);
        let streamed = log.contains("receiving streamed RDB from master with EOF");
        let sized = log.contains("MASTER <-> REPLICA sync: receiving ") && !streamed;
        assert!(
            if diskless { streamed } else { sized },
            "{}: the log does not show a {what} transfer:\n{log}",
            replica.name,
        );
    }
    if primary.kind == Kind::Redis {
        let log = log_of(primary);
        let target = if diskless {
            "Starting BGSAVE for SYNC with target: replicas sockets"
        } else {
            "Starting BGSAVE for SYNC with target: disk"
        };
        assert!(
            log.contains(target),
            "{}: the log does not show a {what} transfer:\n{log}",
            primary.name
        );
    }
}

#[test]
fn redis_replica_of_goblin_primary_diskless() {
    let (p, r) = full_sync_while_writing(
        Kind::Goblin,
        Kind::Redis,
        &[
            "--repl-diskless-sync",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
        ],
    );
    assert_rdb_transfer(&p, &r, true);
}

#[test]
fn redis_replica_of_goblin_primary_disk() {
    let (p, r) = full_sync_while_writing(
        Kind::Goblin,
        Kind::Redis,
        &[
            "--repl-diskless-sync",
            "no",
            "--repl-diskless-sync-delay",
            "0",
        ],
    );
    assert_rdb_transfer(&p, &r, false);
}

#[test]
fn goblin_replica_of_redis_primary_diskless() {
    let (p, r) = full_sync_while_writing(
        Kind::Redis,
        Kind::Goblin,
        &[
            "--repl-diskless-sync",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
        ],
    );
    assert_rdb_transfer(&p, &r, true);
}

#[test]
fn goblin_replica_of_redis_primary_disk() {
    let (p, r) = full_sync_while_writing(
        Kind::Redis,
        Kind::Goblin,
        &[
            "--repl-diskless-sync",
            "no",
            "--repl-diskless-sync-delay",
            "0",
        ],
    );
    assert_rdb_transfer(&p, &r, false);
}

/// Redis -> Goblin -> Redis: the Goblin replica passes the primary's stream
/// on, at the primary's offsets.
#[test]
fn chain_redis_goblin_redis() {
    let p = spawn(Kind::Redis, "primary", &["--repl-diskless-sync-delay", "0"]);
    let mid = spawn(Kind::Goblin, "middle", &["--repl-diskless-sync-delay", "0"]);
    let leaf = spawn(Kind::Redis, "leaf", &[]);
    preload(&p);
    let w = Writer::start(&p, true);
    w.wait_more(300);
    mid.replicaof(&p);
    wait_link_up(&mid);
    w.wait_more(500);
    leaf.replicaof(&mid);
    wait_link_up(&leaf);
    w.wait_more(1500);
    w.stop();
    let offset = assert_same_data(&p, &[&mid, &leaf]);
    assert_role_replica(&mid, &p, offset);
    assert_role_replica(&leaf, &mid, offset);
    assert_info_replicas(&mid, &[&leaf], offset);
    assert_link_flags(&mid, &leaf);
}

/// The link between a primary and its replica is killed while a client
/// writes (on the primary with CLIENT KILL TYPE replica, or on the replica
/// with CLIENT KILL TYPE master); the replica reconnects and continues by
/// partial resync: the primary's sync_partial_ok grows, sync_full stays at
/// the first full sync.
fn link_killed(primary: Kind, replica: Kind, kill_on_primary: bool) {
    // A backlog that holds what the writer sends while the link is down.
    let p = spawn(
        primary,
        "primary",
        &[
            "--repl-diskless-sync-delay",
            "0",
            "--repl-backlog-size",
            "64mb",
        ],
    );
    let r = spawn(replica, "replica", &[]);
    preload(&p);
    let w = Writer::start(&p, true);
    w.wait_more(300);
    r.replicaof(&p);
    wait_link_up(&r);
    w.wait_more(500);
    assert_eq!(
        p.stat("sync_full"),
        1,
        "{}: sync_full after the first sync",
        p.name
    );
    let partial_before = p.stat("sync_partial_ok");
    let killed: i64 = if kill_on_primary {
        redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("replica")
            .query(&mut p.client())
            .unwrap()
    } else {
        redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("master")
            .query(&mut r.client())
            .unwrap()
    };
    assert_eq!(
        killed,
        1,
        "CLIENT KILL TYPE {}",
        if kill_on_primary { "replica" } else { "master" }
    );
    w.wait_more(300);
    poll("the replica back by partial resync", SYNC_LIMIT, || {
        let ok = p.stat("sync_partial_ok");
        if ok > partial_before {
            Ok(())
        } else {
            Err(format!(
                "sync_partial_ok {ok}, sync_full {}",
                p.stat("sync_full")
            ))
        }
    });
    wait_link_up(&r);
    w.wait_more(500);
    w.stop();
    assert_same_data(&p, &[&r]);
    assert_eq!(
        p.stat("sync_full"),
        1,
        "{}: sync_full (no second full sync)",
        p.name
    );
    assert!(p.stat("sync_partial_ok") > partial_before);
}

#[test]
fn link_killed_goblin_primary_partial_resync() {
    link_killed(Kind::Goblin, Kind::Redis, true);
}

#[test]
fn link_killed_redis_primary_partial_resync() {
    link_killed(Kind::Redis, Kind::Goblin, false);
}

/// A Goblin primary shut down with SAVE and started again on the same port
/// and directory keeps its replication ID and offset (in the RDB file's aux
/// fields): the replica reconnects by partial resync, and the restarted
/// primary counts sync_partial_ok >= 1 and sync_full 0.
fn primary_restarted(replica: Kind) {
    let mut p = spawn(
        Kind::Goblin,
        "primary",
        &["--repl-diskless-sync-delay", "0"],
    );
    let r = spawn(replica, "replica", &[]);
    preload(&p);
    let w = Writer::start(&p, false);
    w.wait_more(300);
    r.replicaof(&p);
    wait_link_up(&r);
    w.wait_more(700);
    w.stop();
    let before = assert_same_data(&p, &[&r]);
    p.restart_saved();
    assert!(
        p.master_offset() >= before,
        "{}: master_repl_offset {} after the restart, {before} before",
        p.name,
        p.master_offset()
    );
    poll(
        "the replica back by partial resync after the restart",
        SYNC_LIMIT,
        || {
            let info = r.info("replication");
            let ok = p.stat("sync_partial_ok");
            if ok >= 1 && info.get("master_link_status").map(String::as_str) == Some("up") {
                Ok(())
            } else {
                Err(format!(
                    "sync_partial_ok {ok}, sync_full {}, replica link {:?}",
                    p.stat("sync_full"),
                    info.get("master_link_status")
                ))
            }
        },
    );
    assert_eq!(
        p.stat("sync_full"),
        0,
        "{}: sync_full after the restart",
        p.name
    );
    let w = Writer::start(&p, false);
    w.wait_more(500);
    w.stop();
    let offset = assert_same_data(&p, &[&r]);
    assert_role_replica(&r, &p, offset);
    assert_eq!(
        p.stat("sync_full"),
        0,
        "{}: sync_full after the restart",
        p.name
    );
}

#[test]
fn goblin_primary_restarted_goblin_replica_partial_resync() {
    primary_restarted(Kind::Goblin);
}

#[test]
fn goblin_primary_restarted_redis_replica_partial_resync() {
    primary_restarted(Kind::Redis);
}

/// WAIT counts the replicas that acknowledged the client's writes: 0 after
/// the timeout without a replica, 1 with a Redis replica (which then has
/// the write), and 1 after the timeout when asked for 2.
#[test]
fn wait_counts_acknowledging_replicas() {
    let p = spawn(
        Kind::Goblin,
        "primary",
        &["--repl-diskless-sync-delay", "0"],
    );
    let mut c = p.client();
    let _: () = redis::cmd("SET").arg("k").arg("v0").query(&mut c).unwrap();
    let start = Instant::now();
    let n: i64 = redis::cmd("WAIT").arg(1).arg(100).query(&mut c).unwrap();
    let took = start.elapsed();
    assert_eq!(n, 0, "WAIT 1 100 without replicas");
    assert!(
        took >= Duration::from_millis(95),
        "WAIT 1 100 returned after {took:?}"
    );
    assert!(
        took < Duration::from_secs(5),
        "WAIT 1 100 returned after {took:?}"
    );

    let r = spawn(Kind::Redis, "replica", &[]);
    r.replicaof(&p);
    wait_link_up(&r);
    // WAIT counts the replicas the primary has online (after their first
    // acknowledgement).
    poll("the primary lists its replica online", SYNC_LIMIT, || {
        let info = p.info("replication");
        let line = info.get("slave0").cloned().unwrap_or_default();
        if line.contains(&format!("port={},state=online,", r.port())) {
            Ok(())
        } else {
            Err(format!("slave0:{line}"))
        }
    });
    let mut rc = r.client();
    for i in 1..=20 {
        let value = format!("v{i}");
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg(&value)
            .query(&mut c)
            .unwrap();
        let n: i64 = redis::cmd("WAIT").arg(1).arg(1000).query(&mut c).unwrap();
        assert_eq!(n, 1, "WAIT 1 1000 with one replica, write {i}");
        let got: String = redis::cmd("GET").arg("k").query(&mut rc).unwrap();
        assert_eq!(got, value, "the replica after WAIT acknowledged the write");
    }
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("last")
        .query(&mut c)
        .unwrap();
    let start = Instant::now();
    let n: i64 = redis::cmd("WAIT").arg(2).arg(200).query(&mut c).unwrap();
    assert_eq!(n, 1, "WAIT 2 200 with one replica");
    assert!(
        start.elapsed() >= Duration::from_millis(195),
        "WAIT 2 200 returned after {:?}",
        start.elapsed()
    );
    // No write since: WAIT counts the replica at once.
    let start = Instant::now();
    let n: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut c).unwrap();
    assert_eq!(n, 1, "WAIT 1 5000 with nothing new to acknowledge");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "WAIT 1 5000 with nothing new to acknowledge returned after {:?}",
        start.elapsed()
    );
}

/// `redis-cli --rdb` fetches a Goblin primary's RDB (over the replication
/// protocol: REPLCONF rdb-only, SYNC) and a fresh redis-server loads it
/// with the same data; `redis-cli --functions-rdb` fetches the libraries
/// only.
fn redis_cli_rdb(diskless: &str) {
    let p = spawn(
        Kind::Goblin,
        "primary",
        &[
            "--repl-diskless-sync",
            diskless,
            "--repl-diskless-sync-delay",
            "0",
        ],
    );
    preload(&p);
    let w = Writer::start(&p, false);
    w.wait_more(1000);
    w.stop();
    let mut c = p.client();
    let lib = "#!lua name=replicationlib\nredis.register_function('replfunc', function(keys, args) return 7 end)";
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib)
        .query(&mut c)
        .unwrap();

    let fetch = |flag: &str, name: &str| -> PathBuf {
        let file = p.dir.join(name);
        let log = p.dir.join(format!("{name}.out"));
        let out = std::fs::File::create(&log).unwrap();
        let mut child = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &p.port().to_string(), flag])
            .arg(&file)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("redis-cli (redis-tools) must be installed");
        let deadline = Instant::now() + SYNC_LIMIT;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("redis-cli {flag}: still running after {SYNC_LIMIT:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let output = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(status.success(), "redis-cli {flag}: {status}\n{output}");
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            bytes.starts_with(b"REDIS"),
            "redis-cli {flag}: the file is no RDB file"
        );
        file
    };
    let load = |file: &PathBuf, name: &str| -> Node {
        let dir = temp_dir(&format!("repl-{name}"));
        std::fs::copy(file, dir.join("loaded.rdb")).unwrap();
        let args = [
            "--save",
            "",
            "--appendonly",
            "no",
            "--enable-debug-command",
            "yes",
            "--dbfilename",
            "loaded.rdb",
        ];
        let proc = Proc::redis(&dir, &args);
        Node {
            kind: Kind::Redis,
            name: name.to_string(),
            port: proc.port,
            proc: Some(proc),
            dir,
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    };

    let full = fetch("--rdb", "fetched.rdb");
    let fresh = load(&full, "loaded");
    let mut fc = fresh.client();
    let want = snapshot(&mut c);
    assert!(want.keys.len() > 100);
    let got = snapshot(&mut fc);
    assert!(
        want == got,
        "redis-server loading the RDB redis-cli fetched: {}",
        diff("goblin", &want, "redis", &got)
    );
    if p.kind == Kind::Redis {
        assert_eq!(digest(&mut c), digest(&mut fc), "DEBUG DIGEST");
    }
    let r: i64 = redis::cmd("FCALL")
        .arg("replfunc")
        .arg(0)
        .query(&mut fc)
        .unwrap();
    assert_eq!(r, 7, "the library came with the RDB");

    let functions = fetch("--functions-rdb", "functions.rdb");
    let fresh = load(&functions, "functions");
    let mut fc = fresh.client();
    let n: i64 = redis::cmd("DBSIZE").query(&mut fc).unwrap();
    assert_eq!(n, 0, "--functions-rdb: keys came too");
    let r: i64 = redis::cmd("FCALL")
        .arg("replfunc")
        .arg(0)
        .query(&mut fc)
        .unwrap();
    assert_eq!(r, 7, "--functions-rdb: the library");
}

#[test]
fn redis_cli_rdb_from_goblin_diskless() {
    redis_cli_rdb("yes");
}

#[test]
fn redis_cli_rdb_from_goblin_disk() {
    redis_cli_rdb("no");
}

/// FAILOVER TO: the primary waits for its replica to acknowledge the whole
/// stream, becomes its replica and asks it to take over (PSYNC ...
/// FAILOVER); the replica continues the old primary partially. Then the
/// roles are swapped, the data is the same, and the new primary takes
/// writes that reach the old one.
fn failover_to_replica(primary: Kind, replica: Kind) {
    let p = spawn(primary, "primary", &["--repl-diskless-sync-delay", "0"]);
    let r = spawn(replica, "replica", &["--repl-diskless-sync-delay", "0"]);
    preload(&p);
    r.replicaof(&p);
    wait_link_up(&r);
    wait_synced(&p, &[&r]);
    // FAILOVER TO wants the target online at the primary (after its first
    // acknowledgement).
    poll("the primary lists its replica online", SYNC_LIMIT, || {
        let line = p
            .info("replication")
            .get("slave0")
            .cloned()
            .unwrap_or_default();
        if line.contains(&format!("port={},state=online,", r.port())) {
            Ok(())
        } else {
            Err(format!("slave0:{line}"))
        }
    });
    let mut pc = p.client();
    for i in 0..100 {
        let _: () = redis::cmd("SET")
            .arg(format!("fo:{i}"))
            .arg(i)
            .query(&mut pc)
            .unwrap();
    }
    let partial_before = r.stat("sync_partial_ok");
    let full_before = r.stat("sync_full");
    let ok: String = redis::cmd("FAILOVER")
        .arg("TO")
        .arg("127.0.0.1")
        .arg(r.port())
        .arg("TIMEOUT")
        .arg(10_000)
        .query(&mut pc)
        .unwrap();
    assert_eq!(ok, "OK");
    poll("the failover ends", SYNC_LIMIT, || {
        let state = p.info("replication")["master_failover_state"].clone();
        if state == "no-failover" {
            Ok(())
        } else {
            Err(state)
        }
    });
    wait_link_up(&p);
    let mut rc = r.client();
    let _: () = redis::cmd("SET")
        .arg("after")
        .arg("failover")
        .query(&mut rc)
        .unwrap();
    wait_synced(&r, &[&p]);
    let offset = assert_same_data(&r, &[&p]);
    assert_role_master(&r, &[&p], offset);
    assert_role_replica(&p, &r, offset);
    assert_eq!(
        r.stat("sync_partial_ok") - partial_before,
        1,
        "the old primary continued partially"
    );
    assert_eq!(r.stat("sync_full"), full_before, "no full sync");
    let err = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query::<()>(&mut pc)
        .unwrap_err();
    assert_eq!(err.code(), Some("READONLY"), "{err}");
}

#[test]
fn failover_goblin_primary_to_goblin_replica() {
    failover_to_replica(Kind::Goblin, Kind::Goblin);
}

#[test]
fn failover_goblin_primary_to_redis_replica() {
    failover_to_replica(Kind::Goblin, Kind::Redis);
}

#[test]
fn failover_redis_primary_to_goblin_replica() {
    failover_to_replica(Kind::Redis, Kind::Goblin);
}

/// Sends `SHUTDOWN` on a connection of its own without waiting for an
/// answer (it waits while a replica lags).
fn send_shutdown(node: &Node) -> Connection {
    let mut c = node.client();
    c.send_packed_command(&redis::cmd("SHUTDOWN").get_packed_command())
        .unwrap();
    c
}

/// Waits until a server process has exited with success; its process.
fn exited(node: &mut Node) -> &Proc {
    let what = format!("{} exits", node.name);
    let proc = node.proc.as_mut().unwrap();
    let status = poll(&what, SYNC_LIMIT, || {
        proc.child
            .try_wait()
            .unwrap()
            .ok_or_else(|| "running".to_string())
    });
    assert!(status.success(), "{status}");
    proc
}

/// Stops (SIGSTOP) or resumes (SIGCONT) a server process.
fn signal(node: &Node, sig: &str) {
    let pid = node.proc.as_ref().unwrap().child.id().to_string();
    let ok = Command::new("kill")
        .args([sig, &pid])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
}

/// A primary whose replica is stopped, with the replica's socket full so
/// that the primary's next write stays in its replication buffer (as
/// integration/shutdown fills it), and that write: `INCR k` (k is 2 on
/// the primary, 1 on the replica).
fn primary_with_stopped_replica(args: &[&str]) -> (Node, Node) {
    let p = spawn(Kind::Goblin, "primary", args);
    let r = spawn(Kind::Redis, "replica", &[]);
    r.replicaof(&p);
    let mut c = p.client();
    let _: () = redis::cmd("SET").arg("k").arg(1).query(&mut c).unwrap();
    wait_synced(&p, &[&r]);
    signal(&r, "-STOP");
    let value = vec![b'x'; 1024];
    for i in 0.. {
        // Writes that replicate (DEBUG POPULATE does not), 1 MB at a time.
        let mut pipe = redis::pipe();
        for j in 0..1024 {
            pipe.cmd("SET")
                .arg(format!("junk{i}:{j}"))
                .arg(&value)
                .ignore();
        }
        let _: () = pipe.query(&mut c).unwrap();
        let held: u64 = p.info("memory")["mem_total_replication_buffers"]
            .parse()
            .unwrap();
        if held > 2 * 1024 * 1024 {
            break;
        }
    }
    let n: i64 = redis::cmd("INCR").arg("k").query(&mut c).unwrap();
    assert_eq!(n, 2);
    (p, r)
}

/// SHUTDOWN with a lagging replica waits for it (shutdown-timeout): the
/// SHUTDOWN clients count as blocked and INFO shows the time left; SHUTDOWN
/// ABORT answers both with Redis's error and the server goes on; a second
/// SHUTDOWN, once the replica runs again, ends the server only after the
/// replica has the last write, and the log says so.
#[test]
fn shutdown_waits_for_a_lagging_replica_and_can_be_aborted() {
    let (mut p, r) = primary_with_stopped_replica(&["--shutdown-timeout", "300"]);
    let mut c = p.client();
    let mut waiting = vec![send_shutdown(&p), send_shutdown(&p)];
    poll("two SHUTDOWN clients blocked", SYNC_LIMIT, || {
        let clients = p.info("clients");
        let blocked = &clients["blocked_clients"];
        let server = p.info("server");
        match server.get("shutdown_in_milliseconds") {
            Some(ms) if blocked == "2" && ms.parse::<i64>().unwrap() > 0 => Ok(()),
            other => Err(format!(
                "blocked_clients {blocked}, shutdown_in_milliseconds {other:?}"
            )),
        }
    });
    // Writes wait while the shutdown does; reads do not.
    let got: i64 = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(got, 2);
    let ok: String = redis::cmd("SHUTDOWN").arg("ABORT").query(&mut c).unwrap();
    assert_eq!(ok, "OK");
    for w in &mut waiting {
        match w.recv_response().unwrap() {
            Value::ServerError(e) => {
                assert_eq!(e.code(), "ERR", "{e:?}");
                assert_eq!(e.details(), Some("Errors trying to SHUTDOWN. Check logs."));
            }
            other => panic!("SHUTDOWN answered {other:?}"),
        }
    }
    assert!(!p.info("server").contains_key("shutdown_in_milliseconds"));
    let err = redis::cmd("SHUTDOWN")
        .arg("ABORT")
        .query::<String>(&mut c)
        .unwrap_err();
    assert_eq!(err.detail(), Some("No shutdown in progress."));
    let n: i64 = redis::cmd("INCR").arg("k").query(&mut c).unwrap();
    assert_eq!(n, 3, "writes go on after the abort");

    // Again, and the replica runs meanwhile: the server waits for it.
    let _waiting = send_shutdown(&p);
    poll("the shutdown waits", SYNC_LIMIT, || {
        match p.info("server").get("shutdown_in_milliseconds") {
            Some(_) => Ok(()),
            None => Err("no shutdown_in_milliseconds".into()),
        }
    });
    signal(&r, "-CONT");
    let proc = exited(&mut p);
    let got: i64 = redis::cmd("GET").arg("k").query(&mut r.client()).unwrap();
    assert_eq!(
        got, 3,
        "the replica had the last write before the primary exited"
    );
    let log = std::fs::read_to_string(&proc.log).unwrap();
    assert!(
        log.contains("Waiting for replicas before shutting down."),
        "{log}"
    );
    assert!(log.contains("Shutdown manually aborted."), "{log}");
    assert!(
        log.contains("1 of 1 replicas are in sync when shutting down."),
        "{log}"
    );
    assert!(!log.contains("Lagging replica"), "{log}");
}

/// With shutdown-timeout passed and the replica still stopped, the
/// primary exits anyway, and logs the replica that lagged; SHUTDOWN NOW
/// does not wait at all.
#[test]
fn shutdown_gives_up_on_a_lagging_replica_after_the_timeout() {
    let (mut p, r) = primary_with_stopped_replica(&["--shutdown-timeout", "1"]);
    let _waiting = send_shutdown(&p);
    let proc = exited(&mut p);
    let log = std::fs::read_to_string(&proc.log).unwrap();
    assert!(log.contains("Lagging replica 127.0.0.1:"), "{log}");
    assert!(
        log.contains("0 of 1 replicas are in sync when shutting down."),
        "{log}"
    );
    signal(&r, "-CONT");
    let got: i64 = redis::cmd("GET").arg("k").query(&mut r.client()).unwrap();
    assert_eq!(got, 1, "the replica never got the last write");

    let (mut p, r) = primary_with_stopped_replica(&["--shutdown-timeout", "300"]);
    let mut c = p.client();
    let r2: redis::RedisResult<()> = redis::cmd("SHUTDOWN").arg("NOW").query(&mut c);
    // Success closes the connection; an error reply means no shutdown.
    if let Err(e) = &r2 {
        assert!(e.code().is_none(), "SHUTDOWN NOW replied {e}");
    }
    exited(&mut p);
    signal(&r, "-CONT");
}

/// A primary shut down while a replica's full sync waits for its snapshot:
/// the snapshot is cancelled, and the replica, which reconnects at once
/// after a failed transfer (as Redis's cancelReplicationHandshake does),
/// is refused a new one. The shutdown does not wait for a snapshot it
/// would then give the replica (Redis exits in the call that kills its
/// child), and the replica keeps its data and its history
/// (integration/replication's "Don't disconnect with replicas before
/// loading transferred RDB when full sync").
fn shutdown_during_a_full_sync(replica: Kind) {
    let old = spawn(
        Kind::Goblin,
        "old-primary",
        &["--repl-diskless-sync-delay", "0"],
    );
    let _: () = redis::cmd("SET")
        .arg("a")
        .arg("b")
        .query(&mut old.client())
        .unwrap();
    let r = spawn(replica, "replica", &[]);
    r.replicaof(&old);
    wait_synced(&old, &[&r]);
    let replid = r.info("replication")["master_replid"].clone();

    let mut p = spawn(
        Kind::Goblin,
        "primary",
        &["--repl-diskless-sync-delay", "0"],
    );
    let mut c = p.client();
    let _: () = redis::cmd("DEBUG")
        .arg(&["POPULATE", "3", "new", "10"])
        .query(&mut c)
        .unwrap();
    // A second a key: the snapshot takes three seconds.
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "rdb-key-save-delay", "1000000"])
        .query(&mut c)
        .unwrap();
    r.replicaof(&p);
    poll("the primary's snapshot for the replica", SYNC_LIMIT, || {
        let saving = p.info("persistence")["rdb_bgsave_in_progress"] == "1";
        let waiting = p
            .info("replication")
            .get("slave0")
            .is_some_and(|s| s.contains("wait_bgsave"));
        if saving && waiting {
            Ok(())
        } else {
            Err(format!(
                "rdb_bgsave_in_progress {saving}, wait_bgsave {waiting}"
            ))
        }
    });
    let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").arg("NOSAVE").query(&mut c);
    let proc = exited(&mut p);
    let log = std::fs::read_to_string(&proc.log).unwrap();
    poll("the replica's sync ended", SYNC_LIMIT, || {
        match r
            .info("replication")
            .get("master_sync_in_progress")
            .map(String::as_str)
        {
            Some("0") => Ok(()),
            other => Err(format!("master_sync_in_progress {other:?}")),
        }
    });
    let mut rc = r.client();
    let keys: i64 = redis::cmd("DBSIZE").query(&mut rc).unwrap();
    assert_eq!(keys, 1, "the replica loaded the primary's snapshot:\n{log}");
    let a: String = redis::cmd("GET").arg("a").query(&mut rc).unwrap();
    assert_eq!(a, "b");
    assert_eq!(r.info("replication")["master_replid"], replid, "{log}");
}

#[test]
fn shutdown_during_a_full_sync_leaves_the_goblin_replica_as_it_was() {
    shutdown_during_a_full_sync(Kind::Goblin);
}

#[test]
fn shutdown_during_a_full_sync_leaves_the_redis_replica_as_it_was() {
    shutdown_during_a_full_sync(Kind::Redis);
}

/// JavaScript scripts and functions replicate as their effects, as Lua's
/// do: a Redis replica (which runs no JavaScript) of a Goblin primary, and
/// a Goblin replica beside it, end up with the primary's data, though the
/// scripts read the clock and draw random numbers.
#[test]
fn javascript_scripts_and_functions_replicate_as_their_effects() {
    let p = spawn(
        Kind::Goblin,
        "primary",
        &["--repl-diskless-sync-delay", "0"],
    );
    let redis_replica = spawn(Kind::Redis, "redis-replica", &[]);
    let goblin_replica = spawn(Kind::Goblin, "goblin-replica", &[]);
    redis_replica.replicaof(&p);
    goblin_replica.replicaof(&p);
    wait_link_up(&redis_replica);
    wait_link_up(&goblin_replica);
    preload(&p);
    let mut c = p.client();
    let lib = "#!js name=stock\n\
        redis.registerFunction('take', (keys, args) => {\n\
          const v = Number(redis.call('get', keys[0]) ?? 0);\n\
          if (v <= 0) return -1;\n\
          redis.call('hset', keys[1], 'at', String(Date.now()), 'r', String(Math.random()));\n\
          return redis.call('decr', keys[0]);\n\
        });";
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib)
        .query(&mut c)
        .unwrap();
    assert_eq!(name, "stock");
    let _: () = redis::cmd("SET")
        .arg("stock")
        .arg(50)
        .query(&mut c)
        .unwrap();
    let script = "#!js\n\
        const n = redis.call('incr', KEYS[0]);\n\
        redis.call('rpush', KEYS[1], String(Math.random()), String(n));\n\
        redis.call('pexpire', KEYS[1], 100000 + n);\n\
        return n;";
    for i in 1..=60i64 {
        let n: i64 = redis::cmd("EVAL")
            .arg(script)
            .arg(2)
            .arg("counter")
            .arg(format!("list{}", i % 7))
            .query(&mut c)
            .unwrap();
        assert_eq!(n, i);
        let left: i64 = redis::cmd("FCALL")
            .arg("take")
            .arg(2)
            .arg("stock")
            .arg(format!("last{}", i % 5))
            .query(&mut c)
            .unwrap();
        assert_eq!(left, (50 - i).max(-1));
    }
    wait_synced(&p, &[&redis_replica, &goblin_replica]);
    assert_same_data(&p, &[&redis_replica, &goblin_replica]);
}

/// REPLICAOF NO ONE with the old primary alive, as on the other side of a
/// partition: once it has replied, the promoted replica applies nothing
/// more of its old primary, which goes on taking writes. Redis frees its
/// master client, with whatever it has not read yet, inside
/// replicaofCommand. A write after the reply that reached the promoted
/// node would be a write of the old primary's history in the new one's.
/// The link is idle when the promotion comes (the replica has applied
/// everything), so the first write after it is the next thing the old
/// link reads.
fn replicaof_no_one_ends_the_old_stream_at_once(replica: Kind) {
    let p = spawn(
        Kind::Goblin,
        "primary",
        &["--repl-diskless-sync-delay", "0"],
    );
    let r = spawn(replica, "replica", &[]);
    r.replicaof(&p);
    wait_link_up(&r);
    let mut pc = p.client();
    let mut set = |key: String| {
        let _: () = redis::cmd("SET").arg(&key).arg(1).query(&mut pc).unwrap();
        key
    };
    let before: Vec<String> = (0..100).map(|i| set(format!("before:{i}"))).collect();
    wait_synced(&p, &[&r]);
    let mut rc = r.client();
    let ok: String = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut rc)
        .unwrap();
    assert_eq!(ok, "OK");
    let after: Vec<String> = (0..100).map(|i| set(format!("after:{i}"))).collect();
    // Nothing more can reach the promoted node once its old primary has
    // lost it as a replica.
    poll(
        "the old primary loses its replica",
        SYNC_LIMIT,
        || match p.info("replication")["connected_slaves"].as_str() {
            "0" => Ok(()),
            n => Err(format!("connected_slaves:{n}")),
        },
    );
    let exists = |c: &mut Connection, keys: &[String]| -> Vec<String> {
        let mut pipe = redis::pipe();
        for k in keys {
            pipe.cmd("EXISTS").arg(k);
        }
        let found: Vec<u64> = pipe.query(c).unwrap();
        keys.iter()
            .zip(found)
            .filter(|&(_, n)| n == 1)
            .map(|(k, _)| k.clone())
            .collect()
    };
    let leaked = exists(&mut rc, &after);
    assert!(
        leaked.is_empty(),
        "writes the old primary took after REPLICAOF NO ONE replied reached the promoted node: {leaked:?}"
    );
    assert_eq!(
        exists(&mut rc, &before),
        before,
        "the promoted node keeps what it had applied"
    );
    let role: Vec<Value> = redis::cmd("ROLE").query(&mut rc).unwrap();
    assert_eq!(role[0], Value::BulkString(b"master".to_vec()));
}

#[test]
fn replicaof_no_one_ends_the_old_stream_at_once_goblin_replica() {
    replicaof_no_one_ends_the_old_stream_at_once(Kind::Goblin);
}

#[test]
fn replicaof_no_one_ends_the_old_stream_at_once_redis_replica() {
    replicaof_no_one_ends_the_old_stream_at_once(Kind::Redis);
}

/// REPLICAOF NO ONE inside a transaction that holds every shard (DBSIZE),
/// on a replica busy applying its primary's stream: a command of the
/// stream being applied then waits for those shards, so the change must
/// not wait for it. Each time the transaction completes and the node is a
/// primary; then it follows the primary again, a few times over.
fn replicaof_no_one_in_a_transaction_holding_every_shard(replica: Kind) {
    let p = spawn(
        Kind::Goblin,
        "primary",
        &["--repl-diskless-sync-delay", "0"],
    );
    let r = spawn(replica, "replica", &[]);
    // Pipelined writes from a few clients: the replica always has some of
    // them to apply.
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<JoinHandle<()>> = (0..4)
        .map(|w| {
            let stop = stop.clone();
            let mut c = p.client();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let mut pipe = redis::pipe();
                    for i in 0..100 {
                        pipe.cmd("SET").arg(format!("k:{w}:{i}")).arg(i).ignore();
                    }
                    let _: () = pipe.query(&mut c).unwrap();
                }
            })
        })
        .collect();
    let mut rc = r.client();
    for _ in 0..5 {
        r.replicaof(&p);
        wait_link_up(&r);
        poll("the replica applies the writes", SYNC_LIMIT, || {
            let n: u64 = redis::cmd("DBSIZE").query(&mut rc).unwrap();
            if n == 400 {
                Ok(())
            } else {
                Err(format!("DBSIZE {n}"))
            }
        });
        let (size, ok): (u64, String) = redis::pipe()
            .atomic()
            .cmd("DBSIZE")
            .cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .query(&mut rc)
            .unwrap();
        assert_eq!((size, ok.as_str()), (400, "OK"));
        let role: Vec<Value> = redis::cmd("ROLE").query(&mut rc).unwrap();
        assert_eq!(role[0], Value::BulkString(b"master".to_vec()));
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
}

#[test]
fn replicaof_no_one_in_a_transaction_holding_every_shard_goblin_replica() {
    replicaof_no_one_in_a_transaction_holding_every_shard(Kind::Goblin);
}

#[test]
fn replicaof_no_one_in_a_transaction_holding_every_shard_redis_replica() {
    replicaof_no_one_in_a_transaction_holding_every_shard(Kind::Redis);
}

/// What Redis's readSyncBulkPayload logs when writing the primary's
/// snapshot to its temporary file fails, before the reason.
const SYNC_WRITE_ERROR: &str = "Write error or short write writing to the DB dump file needed for MASTER <-> REPLICA synchronization: ";

/// The temporary files of a full sync in `dir` (temp-*.rdb).
fn sync_temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("temp-") && name.ends_with(".rdb"))
        .collect()
}

/// A full sync into a disk too small for the primary's snapshot, with the
/// default disk-based load (repl-diskless-load disabled): writing the
/// snapshot fails, the temporary file goes, and the replica keeps its own
/// data (Redis flushes it only once the whole file is on disk) and tries
/// again by itself; once the disk has room the sync completes.
fn full_sync_into_a_full_disk(replica: Kind) {
    let disk = Tmpfs::mount(&format!("full-sync-{replica:?}"), "1m");
    // Uncompressed: DEBUG POPULATE's values compress to almost nothing.
    let p = spawn(
        Kind::Goblin,
        "primary",
        &["--repl-diskless-sync-delay", "0", "--rdbcompression", "no"],
    );
    let mut pc = p.client();
    let _: () = redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(5000)
        .arg("key")
        .arg(1000)
        .query(&mut pc)
        .unwrap();
    // Its log stays out of the small disk.
    let r = spawn(
        replica,
        "replica",
        &["--dir", disk.path().to_str().unwrap()],
    );
    let mut rc = r.client();
    let own = [("own:a", "1"), ("own:b", "2"), ("own:c", "3")];
    for (k, v) in own {
        let _: () = redis::cmd("SET").arg(k).arg(v).query(&mut rc).unwrap();
    }
    r.replicaof(&p);

    // The directory is listed between two readings of the failures logged
    // and of master_sync_in_progress that agree, with no transfer running:
    // a temporary file seen then belongs to a transfer that failed.
    let log = r.proc.as_ref().unwrap().log.clone();
    let log_text = || std::fs::read_to_string(&log).unwrap();
    let attempts = || {
        let failures = log_text()
            .lines()
            .filter(|l| l.contains(SYNC_WRITE_ERROR))
            .count();
        let syncing = r.info("replication")["master_sync_in_progress"].clone();
        (failures, syncing)
    };
    let left = poll("a failed transfer, none running", SYNC_LIMIT, || {
        let before = attempts();
        let files = sync_temp_files(disk.path());
        let after = attempts();
        match before {
            (0, _) => Err("no failed transfer yet".into()),
            (_, ref syncing) if syncing != "0" => Err("a transfer runs".into()),
            _ if after != before => Err("a transfer started meanwhile".into()),
            _ => Ok(files),
        }
    });
    assert!(
        left.is_empty(),
        "temporary files left by a failed transfer: {left:?}"
    );
    for line in log_text().lines().filter(|l| l.contains(SYNC_WRITE_ERROR)) {
        let why = line.split(SYNC_WRITE_ERROR).nth(1).unwrap();
        assert!(
            why == "short write" || why == "No space left on device",
            "{line}"
        );
    }
    assert!(
        !log_text().contains("Error condition on socket for SYNC"),
        "the failure is logged once, in Redis's words"
    );
    // Redis's cancelReplicationHandshake connects again at once.
    let again = format!(
        "Reconnecting to MASTER 127.0.0.1:{} after failure",
        p.port()
    );
    poll("the replica connects again", SYNC_LIMIT, || {
        if log_text().contains(&again) {
            Ok(())
        } else {
            Err(format!("no '{again}' in the log"))
        }
    });
    for (k, v) in own {
        let got: Option<String> = redis::cmd("GET").arg(k).query(&mut rc).unwrap();
        assert_eq!(got.as_deref(), Some(v), "{k} after the failed sync");
    }
    assert_eq!(r.info("replication")["master_link_status"], "down");

    disk.resize("64m");
    wait_link_up(&r);
    let size: u64 = redis::cmd("DBSIZE").query(&mut rc).unwrap();
    assert_eq!(size, 5000);
    for k in ["key:0", "key:4999"] {
        let want: Vec<u8> = redis::cmd("GET").arg(k).query(&mut pc).unwrap();
        let got: Vec<u8> = redis::cmd("GET").arg(k).query(&mut rc).unwrap();
        assert!(got == want, "{k} differs from the primary's");
    }
    let own_left: u64 = redis::cmd("EXISTS")
        .arg(own.map(|(k, _)| k).as_slice())
        .query(&mut rc)
        .unwrap();
    assert_eq!(own_left, 0, "the full sync replaced the replica's data");
    assert_eq!(sync_temp_files(disk.path()), Vec::<String>::new());
}

#[test]
fn full_sync_into_a_full_disk_keeps_the_goblin_replicas_data() {
    full_sync_into_a_full_disk(Kind::Goblin);
}

#[test]
fn full_sync_into_a_full_disk_keeps_the_redis_replicas_data() {
    full_sync_into_a_full_disk(Kind::Redis);
}
