//! What a write acknowledged by goblin-server survives when the disk fills
//! up: a data directory on a small tmpfs, writes until it is full, then
//! `kill -9`, a bigger disk and a restart. Every write that got its reply
//! must be there; writes the server cannot log are refused with Redis's
//! MISCONF error, reads keep working, and the server recovers by itself
//! once the disk has room. A failed background save refuses writes as
//! Redis's stop-writes-on-bgsave-error does, side by side with Debian's
//! redis-server. The harness with failing disks (EIO) and power loss is
//! scripts/torture.

use crate::common::process::Proc;
use crate::common::tmpfs::Tmpfs;
use crate::common::{err_text, info_field, wait_until};
use redis::{Commands, Connection, RedisResult};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const AOF_FULL: &str = "MISCONF Errors writing to the AOF file: No space left on device";

/// What a stream of 1 KB SETs of unique keys got until the disk filled.
#[derive(Default)]
struct Outcome {
    acked: BTreeMap<String, String>,
    refused: usize,
    /// Connections closed while their write waited for the log.
    dropped: usize,
}

/// Writes SETs until `refusals` of them were refused in a row (or 30 s
/// passed), reconnecting when the server closes a connection.
fn write_until_refused(server: &Proc, refusals: usize) -> Outcome {
    let mut out = Outcome::default();
    let mut c = server.client();
    let mut in_a_row = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut i = 0u64;
    while in_a_row < refusals && Instant::now() < deadline {
        let key = format!("k{i}");
        let value = format!("{i}:{}", "v".repeat(1000));
        i += 1;
        let r: RedisResult<()> = c.set(&key, &value);
        match r {
            Ok(()) => {
                out.acked.insert(key, value);
                in_a_row = 0;
            }
            Err(e) if e.code().is_some() => {
                assert_eq!(err_text::<()>(Err(e)), AOF_FULL, "the refusal of a write");
                out.refused += 1;
                in_a_row += 1;
            }
            Err(_) => {
                out.dropped += 1;
                c = server.client();
            }
        }
    }
    out
}

/// Every acknowledged key holds the value its SET was acknowledged with.
fn assert_all_there(c: &mut Connection, acked: &BTreeMap<String, String>) {
    let mut lost = Vec::new();
    for (k, v) in acked {
        let got: Option<String> = c.get(k).unwrap();
        if got.as_deref() != Some(v.as_str()) {
            lost.push(k.clone());
        }
    }
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost: {:?}...",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(10)]
    );
}

/// The disk fills under `appendfsync`: writes that cannot reach the log are
/// refused, reads go on, and after kill -9 with room again every
/// acknowledged write is there.
fn disk_full(fsync: &str, name: &str) {
    let disk = Tmpfs::mount(name, "2m");
    let args = ["--appendonly", "yes", "--appendfsync", fsync, "--save", ""];
    let server = Proc::goblin(disk.path(), &args);
    let out = write_until_refused(&server, 50);
    assert!(
        out.refused >= 50,
        "the disk filled and writes were still accepted: {} acknowledged, {} refused",
        out.acked.len(),
        out.refused
    );
    assert!(!out.acked.is_empty());
    let mut c = server.client();
    assert_eq!(
        info_field(&mut c, "persistence", "aof_last_write_status"),
        "err"
    );
    // Reads keep working.
    let (first, value) = out.acked.iter().next().unwrap();
    assert_eq!(c.get::<_, String>(first).unwrap(), *value);
    server.kill9();
    disk.resize("64m");
    let server = Proc::goblin(disk.path(), &args);
    assert_all_there(&mut server.client(), &out.acked);
}

#[test]
fn a_full_disk_under_appendfsync_always_loses_no_acknowledged_write() {
    disk_full("always", "full-always");
}

#[test]
fn a_full_disk_under_appendfsync_everysec_loses_no_acknowledged_write() {
    disk_full("everysec", "full-everysec");
}

/// Once the disk has room again the log is written and writes are
/// accepted, without a restart; what was acknowledged before and after
/// survives kill -9.
#[test]
fn the_append_only_file_recovers_by_itself_when_the_disk_has_room_again() {
    for fsync in ["always", "everysec"] {
        let disk = Tmpfs::mount(&format!("recover-{fsync}"), "2m");
        let args = ["--appendonly", "yes", "--appendfsync", fsync, "--save", ""];
        let server = Proc::goblin(disk.path(), &args);
        let mut out = write_until_refused(&server, 20);
        assert!(out.refused >= 20, "{fsync}: no write was refused");
        disk.resize("64m");
        let mut c = server.client();
        wait_until(
            &format!("{fsync}: writes accepted again"),
            Duration::from_secs(15),
            || c.set::<_, _, ()>("after", "room").is_ok(),
        );
        out.acked.insert("after".into(), "room".into());
        assert_eq!(
            info_field(&mut c, "persistence", "aof_last_write_status"),
            "ok"
        );
        server.kill9();
        let server = Proc::goblin(disk.path(), &args);
        assert_all_there(&mut server.client(), &out.acked);
    }
}

/// The replies of one server to the steps of the bgsave test, for
/// comparing Goblin's with Redis's.
fn failed_bgsave_replies(kind: &str) -> Vec<String> {
    let disk = Tmpfs::mount(&format!("bgsave-{kind}"), "1m");
    let args = [
        "--appendonly",
        "no",
        "--save",
        "3600 1",
        "--stop-writes-on-bgsave-error",
        "yes",
        // The populated values compress to nothing.
        "--rdbcompression",
        "no",
        "--enable-debug-command",
        "yes",
    ];
    let server = match kind {
        "goblin" => Proc::goblin(disk.path(), &args),
        _ => Proc::redis(disk.path(), &args),
    };
    let mut c = server.client();
    let mut replies = Vec::new();
    let mut step = |c: &mut Connection, what: &str, cmd: &mut redis::Cmd| {
        let r: RedisResult<redis::Value> = cmd.query(c);
        replies.push(format!("{what}: {r:?}"));
    };
    // 4 MB of data for 1 MB of disk.
    let _: () = redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(4000)
        .arg("key")
        .arg(1000)
        .query(&mut c)
        .unwrap();
    let _: () = c.set("x", "x").unwrap();
    let bgsave_done = |c: &mut Connection| {
        wait_until("the background save ended", Duration::from_secs(30), || {
            info_field(c, "persistence", "rdb_bgsave_in_progress") == "0"
        });
    };
    let _: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    bgsave_done(&mut c);
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_bgsave_status"),
        "err",
        "{kind}: the save on a full disk"
    );
    // Nothing half written stays behind.
    let temps: Vec<_> = std::fs::read_dir(disk.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("temp-"))
        .collect();
    assert!(temps.is_empty(), "{kind}: temp files left: {temps:?}");
    step(&mut c, "GET", redis::cmd("GET").arg("x"));
    step(&mut c, "SET", redis::cmd("SET").arg("x").arg("y"));
    step(&mut c, "PING", &mut redis::cmd("PING"));
    step(
        &mut c,
        "EVAL writing",
        redis::cmd("EVAL")
            .arg("return redis.call('set','x',1)")
            .arg(1)
            .arg("x"),
    );
    step(
        &mut c,
        "EVAL reading",
        redis::cmd("EVAL")
            .arg("return redis.call('get','x')")
            .arg(1)
            .arg("x"),
    );
    step(
        &mut c,
        "EVAL #!lua writing",
        redis::cmd("EVAL")
            .arg("#!lua\nreturn redis.call('set','x',1)")
            .arg(1)
            .arg("x"),
    );
    step(
        &mut c,
        "EVAL #!lua no-writes",
        redis::cmd("EVAL")
            .arg("#!lua flags=no-writes\nreturn redis.call('get','x')")
            .arg(1)
            .arg("x"),
    );
    step(&mut c, "MULTI", &mut redis::cmd("MULTI"));
    step(&mut c, "queued SET", redis::cmd("SET").arg("x").arg("z"));
    step(&mut c, "queued GET", redis::cmd("GET").arg("x"));
    step(&mut c, "EXEC", &mut redis::cmd("EXEC"));
    // The rule applies only while it is configured.
    step(
        &mut c,
        "CONFIG SET",
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("stop-writes-on-bgsave-error")
            .arg("no"),
    );
    step(
        &mut c,
        "SET without the rule",
        redis::cmd("SET").arg("x").arg("1"),
    );
    step(
        &mut c,
        "CONFIG SET",
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("stop-writes-on-bgsave-error")
            .arg("yes"),
    );
    step(
        &mut c,
        "SET with the rule",
        redis::cmd("SET").arg("x").arg("2"),
    );
    // Room again: a save that succeeds lets writes in.
    disk.resize("64m");
    let _: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    bgsave_done(&mut c);
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_bgsave_status"),
        "ok"
    );
    step(
        &mut c,
        "SET after a good save",
        redis::cmd("SET").arg("x").arg("3"),
    );
    step(&mut c, "GET after", redis::cmd("GET").arg("x"));
    replies
}

/// stop-writes-on-bgsave-error, as Redis 7.0.15 has it: after a background
/// save failed for lack of space, writes (also inside MULTI and scripts)
/// get MISCONF, reads and scripts that only read run, and a save that
/// succeeds lets writes in again. Every reply is compared with Redis's.
#[test]
fn a_failed_bgsave_refuses_writes_as_redis_does() {
    let goblin = failed_bgsave_replies("goblin");
    let redis = failed_bgsave_replies("redis");
    assert!(
        goblin.iter().any(|r| r.starts_with("SET: Err")),
        "goblin accepted a write after a failed save: {goblin:#?}"
    );
    for (g, r) in goblin.iter().zip(&redis) {
        assert_eq!(g, r);
    }
    assert_eq!(goblin.len(), redis.len());
}
