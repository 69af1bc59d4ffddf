//! Persistence with real processes: goblin-server killed with SIGKILL at
//! random moments must come back with every write it acknowledged (under
//! `appendfsync always`), and RDB files must travel both ways between
//! Goblin and Redis 7.0.15 (Debian's redis-server, which must be installed:
//! these tests fail rather than skip without it).

use crate::common;
use crate::common::process::{free_port, temp_dir, Proc};
use redis::{Commands, Connection, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a writer got acknowledged: key -> value (for SET), counter value.
#[derive(Default)]
struct Acked {
    strings: BTreeMap<String, (String, Instant)>,
    hash_fields: BTreeMap<String, String>,
    list_len: i64,
    counter: i64,
}

/// One writer connection: SET, HSET and INCR in a loop until `stop`,
/// recording each acknowledged write.
fn writer(port: u16, id: usize, round: usize, stop: Arc<AtomicBool>, acked: Arc<Mutex<Acked>>) {
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}/")) else {
        return;
    };
    let Ok(mut c) = client.get_connection() else {
        return;
    };
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let key = format!("r{round}:w{id}:k{i}");
        let value = format!("v{i}-{}", fastrand::u32(..));
        let r: redis::RedisResult<()> = c.set(&key, &value);
        if r.is_err() {
            return;
        }
        acked
            .lock()
            .unwrap()
            .strings
            .insert(key.clone(), (value.clone(), Instant::now()));
        let field = format!("r{round}:w{id}:f{i}");
        if c.hset::<_, _, _, i64>("hash", &field, &value).is_err() {
            return;
        }
        acked
            .lock()
            .unwrap()
            .hash_fields
            .insert(field, value.clone());
        if c.rpush::<_, _, i64>("list", &value).is_err() {
            return;
        }
        acked.lock().unwrap().list_len += 1;
        match c.incr::<_, _, i64>("counter", 1) {
            Ok(n) => {
                let mut a = acked.lock().unwrap();
                a.counter = a.counter.max(n);
            }
            Err(_) => return,
        }
        i += 1;
    }
}

/// Kills goblin-server at random moments while writers run, restarts it on
/// the same data, and returns (acknowledged, lost) writes per round, with
/// the age of the oldest lost write at the moment of the kill.
fn crash_rounds(fsync: &str, rounds: usize) -> Vec<(usize, Vec<Duration>)> {
    let dir = temp_dir(&format!("crash-{fsync}"));
    let args = ["--appendonly", "yes", "--appendfsync", fsync, "--save", ""];
    let all = Arc::new(Mutex::new(Acked::default()));
    let mut report = Vec::new();
    for round in 0..rounds {
        let server = Proc::goblin(&dir, &args);
        // Everything acknowledged in earlier rounds survived every restart.
        check_acked(&server, &all.lock().unwrap(), fsync == "always");
        let stop = Arc::new(AtomicBool::new(false));
        let this_round = Arc::new(Mutex::new(Acked::default()));
        let writers: Vec<_> = (0..4)
            .map(|id| {
                let (stop, acked, port) = (stop.clone(), this_round.clone(), server.port);
                std::thread::spawn(move || writer(port, id, round, stop, acked))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(fastrand::u64(50..400)));
        let killed_at = Instant::now();
        server.kill9();
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        let server = Proc::goblin(&dir, &args);
        let mut c = server.client();
        let round_acked = this_round.lock().unwrap();
        let mut lost = Vec::new();
        for (k, (v, at)) in &round_acked.strings {
            let got: Option<String> = c.get(k).unwrap();
            if got.as_deref() != Some(v.as_str()) {
                lost.push(killed_at.saturating_duration_since(*at));
            }
        }
        report.push((round_acked.strings.len(), lost));
        // Merge what survived into the expectations of later rounds.
        let mut a = all.lock().unwrap();
        for (k, (v, at)) in round_acked.strings.iter() {
            let got: Option<String> = c.get(k).unwrap();
            if got.as_deref() == Some(v.as_str()) {
                a.strings.insert(k.clone(), (v.clone(), *at));
            }
        }
        for (f, v) in round_acked.hash_fields.iter() {
            let got: Option<String> = c.hget("hash", f).unwrap();
            if got.as_deref() == Some(v.as_str()) {
                a.hash_fields.insert(f.clone(), v.clone());
            }
        }
        let counter: i64 = c.get::<_, Option<i64>>("counter").unwrap().unwrap_or(0);
        if fsync == "always" {
            assert!(
                counter >= round_acked.counter,
                "round {round}: counter {counter} < acknowledged {}",
                round_acked.counter
            );
        }
        a.counter = counter;
        let list_len: i64 = c.llen("list").unwrap();
        if fsync == "always" {
            assert!(
                list_len >= a.list_len + round_acked.list_len,
                "round {round}: list has {list_len} elements, {} were acknowledged",
                a.list_len + round_acked.list_len
            );
        }
        a.list_len = list_len;
        drop(round_acked);
        drop(a);
        server.shutdown();
    }
    let _ = std::fs::remove_dir_all(&dir);
    report
}

fn check_acked(server: &Proc, acked: &Acked, exact_counter: bool) {
    let mut c = server.client();
    for (k, (v, _)) in &acked.strings {
        let got: Option<String> = c.get(k).unwrap();
        assert_eq!(
            got.as_deref(),
            Some(v.as_str()),
            "key {k} lost after restart"
        );
    }
    for (f, v) in &acked.hash_fields {
        let got: Option<String> = c.hget("hash", f).unwrap();
        assert_eq!(got.as_deref(), Some(v.as_str()), "hash field {f} lost");
    }
    if exact_counter {
        let n: i64 = c.get::<_, Option<i64>>("counter").unwrap().unwrap_or(0);
        assert!(
            n >= acked.counter,
            "counter went back: {n} < {}",
            acked.counter
        );
    }
}

#[test]
fn sigkill_loses_no_acknowledged_write_with_appendfsync_always() {
    let report = crash_rounds("always", 20);
    let acked: usize = report.iter().map(|r| r.0).sum();
    let lost: usize = report.iter().map(|r| r.1.len()).sum();
    eprintln!(
        "appendfsync always: {} rounds, {acked} acknowledged SETs, {lost} lost",
        report.len()
    );
    assert!(acked > 0, "the writers got nothing acknowledged");
    assert_eq!(lost, 0, "acknowledged writes lost under appendfsync always");
}

#[test]
fn sigkill_loses_at_most_about_a_second_with_appendfsync_everysec() {
    let report = crash_rounds("everysec", 10);
    let acked: usize = report.iter().map(|r| r.0).sum();
    let lost: usize = report.iter().map(|r| r.1.len()).sum();
    let oldest = report
        .iter()
        .flat_map(|r| r.1.iter())
        .max()
        .copied()
        .unwrap_or_default();
    eprintln!(
        "appendfsync everysec: {} rounds, {acked} acknowledged SETs, {lost} lost, oldest lost write acknowledged {oldest:?} before the kill",
        report.len()
    );
    assert!(acked > 0, "the writers got nothing acknowledged");
    // Redis's promise for everysec: at most about one second of writes.
    // (A kill, unlike a power cut, loses only what was not yet written.)
    assert!(
        oldest <= Duration::from_secs(2),
        "a write acknowledged {oldest:?} before the kill was lost"
    );
}

// ---------------------------------------------------------------------------
// RDB round trips with Redis 7.0.15

/// Fills a server with every type in small and large encodings, with TTLs,
/// in two databases.
fn fill(c: &mut Connection) {
    let q = |c: &mut Connection, args: &[&str]| {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query::<Value>(c).unwrap();
    };
    for db in ["0", "3"] {
        q(c, &["SELECT", db]);
        q(c, &["SET", "int", "12345"]);
        q(c, &["SET", "negint", "-70000"]);
        q(c, &["SET", "bigint", "9223372036854775807"]);
        q(c, &["SET", "short", "hello"]);
        q(c, &["SET", "compressible", &"a".repeat(500)]);
        let binary: Vec<u8> = (0..3000).map(|i| (i * 7 % 256) as u8).collect();
        redis::cmd("SET")
            .arg("binary")
            .arg(binary)
            .query::<()>(c)
            .unwrap();
        q(c, &["SET", "ttl", "v", "PX", "5000000"]);
        q(c, &["HSET", "hsmall", "f1", "v1", "f2", "2", "f3", "-3"]);
        for i in 0..600 {
            q(
                c,
                &["HSET", "hlarge", &format!("field{i}"), &format!("value{i}")],
            );
        }
        q(c, &["HSET", "hlongvalue", "f", &"x".repeat(100)]);
        q(
            c,
            &["SADD", "sints", "1", "2", "-3", "100000", "5000000000"],
        );
        for i in 0..600 {
            q(c, &["SADD", "slargeints", &i.to_string()]);
        }
        q(c, &["SADD", "sstrings", "a", "b", "c"]);
        q(
            c,
            &[
                "ZADD", "zsmall", "1", "a", "2.5", "b", "-3", "c", "inf", "d",
            ],
        );
        for i in 0..300 {
            q(
                c,
                &[
                    "ZADD",
                    "zlarge",
                    &format!("{}", i as f64 * 1.25 - 40.0),
                    &format!("m{i}"),
                ],
            );
        }
        q(c, &["ZADD", "zlongmember", "1", &"m".repeat(100)]);
        q(c, &["RPUSH", "lsmall", "a", "1", "-2", "hello"]);
        for i in 0..3000 {
            q(c, &["RPUSH", "llarge", &format!("element-{i}")]);
        }
        q(c, &["RPUSH", "lbig", &"y".repeat(20000), "z"]);
        q(c, &["EXPIRE", "llarge", "200000"]);
        q(c, &["EXPIRE", "hlarge", "100000"]);
        q(c, &["PEXPIREAT", "zsmall", "4102444800000"]);
    }
    q(c, &["SELECT", "0"]);
}

/// Every key of databases 0 and 3 as comparable text: type, encoding,
/// absolute expiry and content.
fn snapshot(c: &mut Connection) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for db in [0, 3] {
        redis::cmd("SELECT").arg(db).query::<()>(c).unwrap();
        let keys: Vec<String> = c.keys("*").unwrap();
        for k in keys {
            let t: String = redis::cmd("TYPE").arg(&k).query(c).unwrap();
            let enc: String = redis::cmd("OBJECT")
                .arg("ENCODING")
                .arg(&k)
                .query(c)
                .unwrap();
            let exp: i64 = redis::cmd("PEXPIRETIME").arg(&k).query(c).unwrap();
            let content = match t.as_str() {
                "string" => format!("{:?}", c.get::<_, Vec<u8>>(&k).unwrap()),
                "hash" => format!(
                    "{:?}",
                    c.hgetall::<_, BTreeMap<String, String>>(&k).unwrap()
                ),
                "set" => format!("{:?}", c.smembers::<_, BTreeSet<String>>(&k).unwrap()),
                "zset" => format!(
                    "{:?}",
                    c.zrange_withscores::<_, Vec<(String, String)>>(&k, 0, -1)
                        .unwrap()
                ),
                "list" => format!("{:?}", c.lrange::<_, Vec<String>>(&k, 0, -1).unwrap()),
                other => panic!("unexpected type {other}"),
            };
            out.insert(
                format!("{db}/{k}"),
                format!("{t} {enc} expire={exp} {content}"),
            );
        }
    }
    redis::cmd("SELECT").arg(0).query::<()>(c).unwrap();
    out
}

fn assert_same(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>, what: &str) {
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{what}: key sets differ"
    );
    for (k, v) in a {
        assert_eq!(Some(v), b.get(k), "{what}: key {k} differs");
    }
}

#[test]
fn redis_rdb_loads_in_goblin_and_goblin_rdb_loads_in_redis() {
    // Redis writes its dump.rdb...
    let redis_dir = temp_dir("redis-src");
    let redis = Proc::redis(&redis_dir, &["--save", "", "--appendonly", "no"]);
    let mut rc = redis.client();
    fill(&mut rc);
    let from_redis = snapshot(&mut rc);
    redis::cmd("SAVE").query::<()>(&mut rc).unwrap();
    redis.shutdown();
    assert!(from_redis.len() > 20);

    // ...Goblin loads it...
    let goblin_dir = temp_dir("goblin");
    std::fs::copy(redis_dir.join("dump.rdb"), goblin_dir.join("dump.rdb")).unwrap();
    let goblin = Proc::goblin(&goblin_dir, &["--save", "", "--appendonly", "no"]);
    let mut gc = goblin.client();
    assert_same(
        &from_redis,
        &snapshot(&mut gc),
        "Redis's dump.rdb loaded by Goblin",
    );

    // ...writes its own, which Redis loads back.
    redis::cmd("SAVE").query::<()>(&mut gc).unwrap();
    goblin.shutdown();
    let back_dir = temp_dir("redis-back");
    std::fs::copy(goblin_dir.join("dump.rdb"), back_dir.join("dump.rdb")).unwrap();
    let redis = Proc::redis(&back_dir, &["--save", "", "--appendonly", "no"]);
    let mut rc = redis.client();
    assert_same(
        &from_redis,
        &snapshot(&mut rc),
        "Goblin's dump.rdb loaded by Redis",
    );
    redis.shutdown();
    for d in [redis_dir, goblin_dir, back_dir] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn dump_payloads_travel_between_redis_and_goblin() {
    let redis_dir = temp_dir("dump-redis");
    let goblin_dir = temp_dir("dump-goblin");
    let redis = Proc::redis(&redis_dir, &["--save", "", "--appendonly", "no"]);
    let goblin = Proc::goblin(&goblin_dir, &["--save", "", "--appendonly", "no"]);
    let mut rc = redis.client();
    let mut gc = goblin.client();
    fill(&mut rc);
    fill(&mut gc);
    let keys: Vec<String> = rc.keys("*").unwrap();
    for k in &keys {
        let from_redis: Vec<u8> = redis::cmd("DUMP").arg(k).query(&mut rc).unwrap();
        let from_goblin: Vec<u8> = redis::cmd("DUMP").arg(k).query(&mut gc).unwrap();
        let target = format!("{k}:copy");
        redis::cmd("RESTORE")
            .arg(&target)
            .arg(0)
            .arg(&from_redis)
            .query::<()>(&mut gc)
            .unwrap();
        redis::cmd("RESTORE")
            .arg(&target)
            .arg(0)
            .arg(&from_goblin)
            .query::<()>(&mut rc)
            .unwrap();
    }
    let r = snapshot(&mut rc);
    let g = snapshot(&mut gc);
    for k in &keys {
        let strip = |s: &String| {
            s.split_once(" expire=")
                .map(|(a, b)| (a.to_string(), b.split_once(' ').unwrap().1.to_string()))
                .unwrap()
        };
        let orig = strip(&r[&format!("0/{k}")]);
        assert_eq!(
            strip(&g[&format!("0/{k}:copy")]),
            orig,
            "Redis's DUMP of {k} restored by Goblin"
        );
        assert_eq!(
            strip(&r[&format!("0/{k}:copy")]),
            orig,
            "Goblin's DUMP of {k} restored by Redis"
        );
    }
    redis.shutdown();
    goblin.shutdown();
    let _ = std::fs::remove_dir_all(redis_dir);
    let _ = std::fs::remove_dir_all(goblin_dir);
}

// ---------------------------------------------------------------------------
// Point-in-time snapshots while clients write

/// Reads a dump.rdb into (db, key) -> (value or type, expiry).
fn read_rdb(path: &Path) -> BTreeMap<(u64, Vec<u8>), String> {
    use goblin_engine::persist::rdb::{FileReader, Input, LoadLimits, Record};
    let data = std::fs::read(path).unwrap();
    let mut r = FileReader::new(Input::from_slice(&data), LoadLimits::default()).unwrap();
    let mut db = 0;
    let mut out = BTreeMap::new();
    loop {
        match r.next().unwrap() {
            Record::Eof => break,
            Record::SelectDb(n) => db = n,
            Record::Key { key, value, .. } => {
                let v = match value.unwrap() {
                    goblin_engine::keyspace::Value::Str(s) => {
                        String::from_utf8_lossy(&s).into_owned()
                    }
                    other => other.value_type().name().to_string(),
                };
                assert!(out.insert((db, key), v).is_none(), "key written twice");
            }
            _ => {}
        }
    }
    r.verify_checksum().unwrap();
    out
}

fn wait_bgsave_done(c: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
        if info.contains("rdb_bgsave_in_progress:0") {
            assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
            return;
        }
        assert!(Instant::now() < deadline, "BGSAVE did not finish");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until the server's first AOF rewrite (since it started) is done.
fn wait_first_rewrite(c: &mut Connection, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrites:1") {
            assert!(info.contains("aof_last_bgrewrite_status:ok"), "{info}");
            return;
        }
        assert!(Instant::now() < deadline, "{what}:\n{info}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// LPOP and RPOP change a list in place while replying: a snapshot the
/// walk has not reached yet must still get the list as it was (it did
/// not, which made a replica fed the pops after the snapshot pop twice).
#[test]
fn bgsave_keeps_lists_popped_while_it_runs() {
    let server = common::TestServer::start();
    let mut c = server.client();
    let lists = 400;
    for i in 0..lists {
        let _: i64 = c.rpush(format!("list:{i}"), &["a", "b", "c"]).unwrap();
    }
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("rdb-key-save-delay")
        .arg(500)
        .query::<()>(&mut c)
        .unwrap();
    let started: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    assert_eq!(started, "Background saving started");
    for i in 0..lists {
        let _: Option<String> = c.lpop(format!("list:{i}"), None).unwrap();
        let _: Option<String> = c.rpop(format!("list:{i}"), None).unwrap();
    }
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
    assert!(
        info.contains("rdb_bgsave_in_progress:1"),
        "the pops must overlap the snapshot:\n{info}"
    );
    wait_bgsave_done(&mut c);
    let dir = server.dir.to_str().unwrap().to_string();
    let copy = common::TestServer::start_with(&[("dir", &dir)]);
    goblin_engine::persist::load_on_start(&copy.engine).unwrap();
    let mut c2 = copy.client();
    for i in 0..lists {
        let saved: Vec<String> = c2.lrange(format!("list:{i}"), 0, -1).unwrap();
        assert_eq!(saved, ["a", "b", "c"], "list:{i} in the snapshot");
        let live: Vec<String> = c.lrange(format!("list:{i}"), 0, -1).unwrap();
        assert_eq!(live, ["b"], "list:{i} after the pops");
    }
}

#[test]
fn bgsave_is_a_point_in_time_snapshot_while_clients_write() {
    let server = common::TestServer::start();
    let mut c = server.client();
    let n = 20_000;
    redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(n)
        .query::<()>(&mut c)
        .unwrap();
    redis::cmd("SELECT").arg(2).query::<()>(&mut c).unwrap();
    redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(1000)
        .arg("two")
        .query::<()>(&mut c)
        .unwrap();
    redis::cmd("SELECT").arg(0).query::<()>(&mut c).unwrap();
    // Slow the walk down so that the writes below land while it runs.
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("rdb-key-save-delay")
        .arg(20)
        .query::<()>(&mut c)
        .unwrap();
    let started: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    assert_eq!(started, "Background saving started");
    // Overwrite, delete and create keys, in both databases, and swap them.
    for i in (0..n).step_by(7) {
        let _: () = c.set(format!("key:{i}"), "changed").unwrap();
    }
    for i in (3..n).step_by(11) {
        let _: i64 = c.del(format!("key:{i}")).unwrap();
    }
    for i in 0..3000 {
        let _: () = c.set(format!("new:{i}"), "new").unwrap();
    }
    let _: () = c.hset("newhash", "f", "v").unwrap();
    redis::cmd("SWAPDB")
        .arg(0)
        .arg(2)
        .query::<()>(&mut c)
        .unwrap();
    for i in 0..1000 {
        let _: () = c.set(format!("key:{i}"), "after-swap").unwrap();
    }
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
    assert!(
        info.contains("rdb_bgsave_in_progress:1"),
        "the writes must overlap the snapshot:\n{info}"
    );
    wait_bgsave_done(&mut c);

    // The file holds exactly the data of the moment BGSAVE started.
    let saved = read_rdb(&server.dir.join("dump.rdb"));
    assert_eq!(saved.len(), n + 1000);
    for i in 0..n {
        assert_eq!(
            saved.get(&(0, format!("key:{i}").into_bytes())),
            Some(&format!("value:{i}"))
        );
    }
    for i in 0..1000 {
        assert_eq!(
            saved.get(&(2, format!("two:{i}").into_bytes())),
            Some(&format!("value:{i}"))
        );
    }
    // And the live data kept every write.
    let v: String = c.get("key:0").unwrap();
    assert_eq!(v, "after-swap");
    redis::cmd("SELECT").arg(2).query::<()>(&mut c).unwrap();
    let v: String = c.get("key:7").unwrap();
    assert_eq!(v, "changed");
    let n_new: usize = c.keys::<_, Vec<String>>("new:*").unwrap().len();
    assert_eq!(n_new, 3000);
}

#[test]
fn bgsave_keeps_the_old_data_when_flushdb_runs_meanwhile() {
    let server = common::TestServer::start();
    let mut c = server.client();
    redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(5000)
        .query::<()>(&mut c)
        .unwrap();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("rdb-key-save-delay")
        .arg(100)
        .query::<()>(&mut c)
        .unwrap();
    let _: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    let _: () = c.set("key:1", "changed").unwrap();
    redis::cmd("FLUSHDB").query::<()>(&mut c).unwrap();
    let _: () = c.set("key:2", "after-flush").unwrap();
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
    assert!(info.contains("rdb_bgsave_in_progress:1"), "{info}");
    wait_bgsave_done(&mut c);
    let saved = read_rdb(&server.dir.join("dump.rdb"));
    assert_eq!(saved.len(), 5000);
    assert_eq!(
        saved.get(&(0, b"key:1".to_vec())).map(String::as_str),
        Some("value:1")
    );
    assert_eq!(
        saved.get(&(0, b"key:2".to_vec())).map(String::as_str),
        Some("value:2")
    );
    let live: Vec<String> = c.keys("*").unwrap();
    assert_eq!(live, vec!["key:2".to_string()]);
}

// ---------------------------------------------------------------------------
// Damaged files at startup

/// Starts goblin-server on `dir` and expects it to refuse: returns its log.
fn refused(dir: &Path, args: &[&str]) -> String {
    let log = dir.join("refused.log");
    let out = std::fs::File::create(&log).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_goblin-server"))
        .args([
            "--port",
            &free_port().to_string(),
            "--dir",
            dir.to_str().unwrap(),
        ])
        .args(args)
        .stdout(Stdio::from(out.try_clone().unwrap()))
        .stderr(Stdio::from(out))
        .status()
        .unwrap();
    assert!(!status.success(), "the server started on a damaged file");
    std::fs::read_to_string(&log).unwrap()
}

/// Writes a log of SET commands with a server, then stops it (SIGKILL:
/// the files stay as they are), returning the incr file's path.
fn aof_with_writes(dir: &Path, n: usize) -> PathBuf {
    let args = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
    ];
    let server = Proc::goblin(dir, &args);
    let mut c = server.client();
    for i in 0..n {
        let _: () = c.set(format!("k{i}"), format!("v{i}")).unwrap();
    }
    server.kill9();
    dir.join("appendonlydir/appendonly.aof.1.incr.aof")
}

#[test]
fn a_command_cut_short_by_a_crash_is_truncated_or_refused_as_configured() {
    let dir = temp_dir("truncated");
    let incr = aof_with_writes(&dir, 10);
    let full = std::fs::read(&incr).unwrap();
    // The last command loses its final bytes, as when the process dies
    // in the middle of a write.
    std::fs::write(&incr, &full[..full.len() - 3]).unwrap();
    let log = refused(
        &dir,
        &[
            "--appendonly",
            "yes",
            "--aof-load-truncated",
            "no",
            "--save",
            "",
        ],
    );
    assert!(
        log.contains(
            "Unexpected end of file reading the append only file appendonly.aof.1.incr.aof"
        ),
        "{log}"
    );
    let server = Proc::goblin(
        &dir,
        &[
            "--appendonly",
            "yes",
            "--aof-load-truncated",
            "yes",
            "--save",
            "",
        ],
    );
    let mut c = server.client();
    let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 9, "every complete command is kept, the cut one dropped");
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(
        log.contains("!!! Truncating the AOF appendonly.aof.1.incr.aof at offset"),
        "{log}"
    );
    // The file was cut at the last complete command: new writes follow it.
    let _: () = c.set("after", "1").unwrap();
    server.kill9();
    let server = Proc::goblin(
        &dir,
        &[
            "--appendonly",
            "yes",
            "--aof-load-truncated",
            "no",
            "--save",
            "",
        ],
    );
    let mut c = server.client();
    let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 10);
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_corrupt_append_only_file_is_refused_with_its_name_and_offset() {
    let dir = temp_dir("corrupt-aof");
    let incr = aof_with_writes(&dir, 10);
    let mut data = std::fs::read(&incr).unwrap();
    let at = data.len() / 2;
    data[at..at + 3].copy_from_slice(b"!!!");
    std::fs::write(&incr, &data).unwrap();
    // Even with aof-load-truncated yes: this is damage, not a short write.
    let log = refused(
        &dir,
        &[
            "--appendonly",
            "yes",
            "--aof-load-truncated",
            "yes",
            "--save",
            "",
        ],
    );
    assert!(
        log.contains(
            "Bad file format reading the append only file appendonly.aof.1.incr.aof (at offset"
        ),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_snapshot_with_a_wrong_checksum_is_refused() {
    let dir = temp_dir("corrupt-rdb");
    let server = Proc::goblin(&dir, &["--appendonly", "no", "--save", ""]);
    let mut c = server.client();
    let _: () = c.set("k", "v").unwrap();
    redis::cmd("SAVE").query::<()>(&mut c).unwrap();
    server.shutdown();
    let path = dir.join("dump.rdb");
    let mut data = std::fs::read(&path).unwrap();
    let n = data.len();
    data[n - 8..].copy_from_slice(b"foobar00");
    std::fs::write(&path, &data).unwrap();
    let log = refused(&dir, &["--appendonly", "no", "--save", ""]);
    assert!(
        log.contains("CRC error") && log.contains("Fatal error loading the DB"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A manifest that names a path, not a file of the log's directory, is
/// refused as Redis refuses it: loaded, it was appended to, and a rewrite
/// deleted it.
#[test]
fn a_manifest_naming_a_path_is_refused() {
    let dir = temp_dir("manifest-path");
    let outside = dir.join("outside.aof");
    let set = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
    std::fs::write(&outside, set).unwrap();
    let aof_dir = dir.join("appendonlydir");
    std::fs::create_dir_all(&aof_dir).unwrap();
    std::fs::write(
        aof_dir.join("appendonly.aof.manifest"),
        "file ../outside.aof seq 1 type i\n",
    )
    .unwrap();
    let log = refused(&dir, &["--appendonly", "yes", "--save", ""]);
    assert!(
        log.contains("File can't be a path, just a filename"),
        "{log}"
    );
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        set,
        "the file outside is untouched"
    );
    let _ = std::fs::remove_dir_all(dir);
}

// ---------------------------------------------------------------------------
// What the log replays

#[test]
fn the_append_only_file_replays_to_the_same_data() {
    let dir = temp_dir("replay");
    let args = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
    ];
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    let run = |c: &mut Connection, args: &[&str]| -> Value {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query(c).unwrap()
    };
    fill(&mut c);
    // Commands whose replay would differ if they were logged as called:
    // relative expiries, floating point, randomness, the clock-reading
    // GOBLIN.* commands.
    run(&mut c, &["SET", "ex", "v", "EX", "1000"]);
    run(&mut c, &["SETEX", "setex", "1000", "v"]);
    run(&mut c, &["EXPIRE", "int", "5000"]);
    run(&mut c, &["GETEX", "short", "PX", "700000"]);
    run(&mut c, &["INCRBYFLOAT", "float", "0.1"]);
    run(&mut c, &["INCRBYFLOAT", "float", "0.2"]);
    run(&mut c, &["HINCRBYFLOAT", "hsmall", "fl", "1.1"]);
    run(&mut c, &["SPOP", "slargeints"]);
    run(&mut c, &["SPOP", "slargeints", "100"]);
    run(&mut c, &["SPOP", "sints", "100"]);
    run(&mut c, &["GOBLIN.INCRTTL", "counter", "1", "100000"]);
    run(
        &mut c,
        &["GOBLIN.ZWINDOW", "leases", "10", "100000", "holder"],
    );
    // A transaction, a blocking pop served by a later push, an expiry.
    run(&mut c, &["MULTI"]);
    run(&mut c, &["INCR", "tx"]);
    run(&mut c, &["LPUSH", "txlist", "a", "b"]);
    run(&mut c, &["EXEC"]);
    let port = server.port;
    let waiter = std::thread::spawn(move || {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        redis::cmd("BLPOP")
            .arg("queue")
            .arg(0)
            .query::<Value>(&mut c)
            .unwrap()
    });
    // Wait until the client blocks, then serve it.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = redis::cmd("INFO").arg("clients").query(&mut c).unwrap();
        if info.contains("blocked_clients:1") {
            break;
        }
        assert!(Instant::now() < deadline, "BLPOP did not block");
        std::thread::sleep(Duration::from_millis(5));
    }
    run(&mut c, &["RPUSH", "queue", "x", "y"]);
    waiter.join().unwrap();
    // Hash fields with TTLs, set every way, and one field expiring.
    run(
        &mut c,
        &[
            "HSET", "hf", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5",
        ],
    );
    run(&mut c, &["HEXPIRE", "hf", "1000", "FIELDS", "1", "a"]);
    run(&mut c, &["HPEXPIRE", "hf", "2000000", "FIELDS", "1", "b"]);
    run(
        &mut c,
        &["HSETEX", "hf", "EX", "3000", "FIELDS", "1", "f", "6"],
    );
    run(
        &mut c,
        &["HGETEX", "hf", "PX", "4000000", "FIELDS", "1", "c"],
    );
    run(&mut c, &["HPEXPIRE", "hf", "1", "FIELDS", "1", "d"]);
    run(&mut c, &["CL.THROTTLE", "cell", "15", "30", "60", "1"]);
    run(&mut c, &["SET", "gone", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(5));
    let gone: Option<String> = c.get("gone").unwrap(); // expires it (logged as DEL)
    assert_eq!(gone, None);
    let before = snapshot(&mut c);
    let field_ttls = |c: &mut Connection| -> Value {
        redis::cmd("HPEXPIRETIME")
            .arg("hf")
            .arg("FIELDS")
            .arg(6)
            .arg(&["a", "b", "c", "d", "e", "f"])
            .query(c)
            .unwrap()
    };
    let ttls_before = field_ttls(&mut c);
    server.kill9();

    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    assert_same(&before, &snapshot(&mut c), "after replaying the log");
    assert_eq!(
        field_ttls(&mut c),
        ttls_before,
        "hash field TTLs after replaying the log"
    );
    // And after a rewrite of the log into a new base.
    let _: String = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
    wait_first_rewrite(&mut c, "rewrite did not finish");
    server.kill9();
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    // A rewrite loads collections in the encoding their size calls for
    // (Redis does the same: a set that once grew past the intset limit
    // comes back as an intset), so encodings are left out here.
    let without_encoding = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.iter()
            .map(|(k, v)| {
                let mut parts = v.splitn(3, ' ');
                let (t, _enc, rest) = (
                    parts.next().unwrap(),
                    parts.next().unwrap(),
                    parts.next().unwrap(),
                );
                (k.clone(), format!("{t} {rest}"))
            })
            .collect()
    };
    assert_same(
        &without_encoding(&before),
        &without_encoding(&snapshot(&mut c)),
        "after a rewrite",
    );
    assert_eq!(
        field_ttls(&mut c),
        ttls_before,
        "hash field TTLs after a rewrite"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_append_only_file_is_rewritten_when_it_grows() {
    let dir = temp_dir("autorewrite");
    let args = [
        "--appendonly",
        "yes",
        "--save",
        "",
        "--auto-aof-rewrite-percentage",
        "100",
        "--auto-aof-rewrite-min-size",
        "4096",
    ];
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    for i in 0..200 {
        // Overwrites: the log grows, the data does not.
        let _: () = c
            .set("key", format!("value-{i}-{}", "x".repeat(50)))
            .unwrap();
    }
    wait_first_rewrite(&mut c, "no automatic rewrite");
    let manifest =
        std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap();
    assert!(manifest.contains("appendonly.aof.2.base.rdb"), "{manifest}");
    server.kill9();
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    let v: String = c.get("key").unwrap();
    assert!(v.starts_with("value-199-"));
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// The text of every file of the append-only log directory.
fn aof_text(dir: &Path) -> String {
    let mut text = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        text.extend(std::fs::read(f).unwrap());
    }
    String::from_utf8_lossy(&text).into_owned()
}

#[test]
fn function_libraries_and_script_effects_survive_restarts_rewrites_and_redis() {
    const LIB: &str = "#!lua name=keeplib\n\
        redis.register_function('keep', function(keys, args) \
        return redis.call('INCRBY', keys[1], args[1]) end)";
    let fcall = |c: &mut Connection| -> i64 {
        redis::cmd("FCALL")
            .arg("keep")
            .arg(1)
            .arg("calls")
            .arg(1)
            .query(c)
            .unwrap()
    };
    let dir = temp_dir("functions");
    let args = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
    ];
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(LIB)
        .query(&mut c)
        .unwrap();
    assert_eq!(name, "keeplib");
    assert_eq!(fcall(&mut c), 1);
    // A script that reads the clock is logged as its effects.
    let _: Value = redis::cmd("EVAL")
        .arg("return redis.call('SET', KEYS[1], 'v', 'EX', 1000)")
        .arg(1)
        .arg("scripted")
        .query(&mut c)
        .unwrap();
    let pttl: i64 = redis::cmd("PTTL").arg("scripted").query(&mut c).unwrap();
    assert!(pttl > 990_000, "{pttl}");
    let log = aof_text(&dir);
    assert!(log.contains("FUNCTION"), "FUNCTION LOAD is logged");
    assert!(
        !log.contains("EVAL"),
        "the script itself is not logged:\n{log}"
    );
    assert!(
        log.contains("PXAT"),
        "its SET is logged with a deadline:\n{log}"
    );
    server.kill9();

    // Replayed from the log.
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    assert_eq!(fcall(&mut c), 2, "the library after replaying the log");
    let pttl: i64 = redis::cmd("PTTL").arg("scripted").query(&mut c).unwrap();
    assert!(pttl > 980_000 && pttl <= 1_000_000, "{pttl}");
    // Rewritten, in both base formats, each followed by a restart.
    let mut server = server;
    let mut calls = 2;
    for preamble in ["yes", "no"] {
        let mut c = server.client();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("aof-use-rdb-preamble")
            .arg(preamble)
            .query(&mut c)
            .unwrap();
        let _: String = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
        wait_first_rewrite(&mut c, "rewrite did not finish");
        server.kill9();
        server = Proc::goblin(&dir, &args);
        calls += 1;
        assert_eq!(
            fcall(&mut server.client()),
            calls,
            "the library after a rewrite with aof-use-rdb-preamble {preamble}"
        );
    }

    // Goblin's snapshot loaded by Redis, and Redis's back by Goblin.
    let mut c = server.client();
    redis::cmd("SAVE").query::<()>(&mut c).unwrap();
    server.shutdown();
    let redis_dir = temp_dir("functions-redis");
    std::fs::copy(dir.join("dump.rdb"), redis_dir.join("dump.rdb")).unwrap();
    let redis = Proc::redis(&redis_dir, &["--save", "", "--appendonly", "no"]);
    let mut rc = redis.client();
    assert_eq!(fcall(&mut rc), calls + 1, "Goblin's snapshot in Redis");
    redis::cmd("SAVE").query::<()>(&mut rc).unwrap();
    redis.shutdown();
    let back_dir = temp_dir("functions-back");
    std::fs::copy(redis_dir.join("dump.rdb"), back_dir.join("dump.rdb")).unwrap();
    let goblin = Proc::goblin(&back_dir, &["--save", "", "--appendonly", "no"]);
    assert_eq!(
        fcall(&mut goblin.client()),
        calls + 2,
        "Redis's snapshot in Goblin"
    );
    drop(goblin);
    for d in [dir, redis_dir, back_dir] {
        let _ = std::fs::remove_dir_all(d);
    }
}
