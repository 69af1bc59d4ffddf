//! The server process's life and end: shutdown signals (scheduled on the
//! cron's beat, cancelled by SHUTDOWN ABORT, a second SIGINT exiting at
//! once), SHUTDOWN's options, crash reports on fatal signals and failed
//! assertions, and oom-score-adj on the process.

use crate::common::err_text;
use crate::common::process::{temp_dir, Proc};
use crate::common::wait_until;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

fn log_of(p: &Proc) -> String {
    std::fs::read_to_string(&p.log).unwrap_or_default()
}

fn wait_log(p: &Proc, line: &str) {
    wait_until(&format!("log line {line:?}"), LIMIT, || {
        log_of(p).contains(line)
    });
}

fn signal(p: &Proc, sig: i32) {
    // SAFETY: kill sends a signal to the test's own child process.
    assert_eq!(unsafe { libc::kill(p.child.id() as i32, sig) }, 0);
}

fn wait_exit(p: &mut Proc) -> ExitStatus {
    let mut status = None;
    wait_until("the server to exit", LIMIT, || {
        status = p.child.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

fn debug_server(dir: &Path, extra: &[&str]) -> Proc {
    let mut args = vec!["--enable-debug-command", "yes", "--appendonly", "no"];
    args.extend_from_slice(extra);
    Proc::goblin(dir, &args)
}

#[test]
fn sigterm_saves_and_exits() {
    let dir = temp_dir("sigterm");
    let mut p = debug_server(&dir, &["--save", "3600 1"]);
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query(&mut p.client())
        .unwrap();
    signal(&p, libc::SIGTERM);
    assert_eq!(wait_exit(&mut p).code(), Some(0));
    let log = log_of(&p);
    for line in [
        "Received SIGTERM scheduling shutdown...",
        "User requested shutdown...",
        "Saving the final RDB snapshot before exiting.",
        "ready to exit, bye bye...",
    ] {
        assert!(log.contains(line), "{line:?} not in\n{log}");
    }
    assert!(dir.join("dump.rdb").exists());
}

#[test]
fn shutdown_on_sigterm_nosave_skips_the_snapshot() {
    let dir = temp_dir("sigterm-nosave");
    let mut p = debug_server(
        &dir,
        &["--save", "3600 1", "--shutdown-on-sigterm", "nosave"],
    );
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query(&mut p.client())
        .unwrap();
    signal(&p, libc::SIGTERM);
    assert_eq!(wait_exit(&mut p).code(), Some(0));
    assert!(!dir.join("dump.rdb").exists());
}

/// The signal waits for the cron (DEBUG PAUSE-CRON holds it), and SHUTDOWN
/// ABORT forgets it: a second ABORT finds nothing to abort.
#[test]
fn shutdown_abort_cancels_a_pending_signal() {
    let dir = temp_dir("abort");
    let p = debug_server(&dir, &["--save", ""]);
    let mut c = p.client();
    assert_eq!(
        err_text(redis::cmd("SHUTDOWN").arg("ABORT").query::<()>(&mut c)),
        "ERR No shutdown in progress."
    );
    let _: () = redis::cmd("DEBUG")
        .arg("PAUSE-CRON")
        .arg(1)
        .query(&mut c)
        .unwrap();
    signal(&p, libc::SIGTERM);
    wait_log(&p, "Received SIGTERM scheduling shutdown...");
    let _: () = redis::cmd("SHUTDOWN").arg("ABORT").query(&mut c).unwrap();
    assert!(log_of(&p).contains("Shutdown manually aborted."));
    let _: () = redis::cmd("DEBUG")
        .arg("PAUSE-CRON")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(
        err_text(redis::cmd("SHUTDOWN").arg("ABORT").query::<()>(&mut c)),
        "ERR No shutdown in progress."
    );
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    for bad in [&["ABORT", "NOW"][..], &["SAVE", "NOSAVE"], &["LATER"]] {
        assert_eq!(
            err_text(redis::cmd("SHUTDOWN").arg(bad).query::<()>(&mut c)),
            "ERR syntax error",
            "{bad:?}"
        );
    }
}

/// A snapshot that cannot be written keeps the server running (SHUTDOWN
/// and signals alike) unless FORCE is given.
#[test]
fn failed_final_save_keeps_the_server_unless_forced() {
    let dir = temp_dir("save-fails");
    let mut p = debug_server(&dir, &["--save", "3600 1"]);
    let mut c = p.client();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
    // dump.rdb a directory: the rename of the temp file fails.
    std::fs::create_dir(dir.join("dump.rdb")).unwrap();
    assert_eq!(
        err_text(redis::cmd("SHUTDOWN").query::<()>(&mut c)),
        "ERR Errors trying to SHUTDOWN. Check logs."
    );
    assert!(log_of(&p).contains("Error trying to save the DB, can't exit."));
    signal(&p, libc::SIGINT);
    wait_until("two failed shutdowns logged", LIMIT, || {
        log_of(&p)
            .matches("Errors trying to shut down the server. Check the logs for more information.")
            .count()
            == 2
    });
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    let _ = redis::cmd("SHUTDOWN").arg("FORCE").query::<()>(&mut c);
    assert_eq!(wait_exit(&mut p).code(), Some(0));
    assert!(log_of(&p).contains("Error trying to save the DB. Exit anyway."));
}

/// A second SIGINT during the shutdown's save exits at once, removing the
/// save's temp-<pid>.rdb.
#[test]
fn second_sigint_exits_now_and_removes_the_temp_file() {
    let dir = temp_dir("insist");
    let mut p = debug_server(&dir, &["--save", "3600 1"]);
    let mut c = p.client();
    for i in 0..20 {
        let _: () = redis::cmd("SET").arg(i).arg(i).query(&mut c).unwrap();
    }
    // 100 ms a key: the save lasts 2 s.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("rdb-key-save-delay")
        .arg(100000)
        .query(&mut c)
        .unwrap();
    let temp = dir.join(format!("temp-{}.rdb", p.child.id()));
    signal(&p, libc::SIGINT);
    wait_until("the save's temp file", LIMIT, || temp.exists());
    signal(&p, libc::SIGINT);
    assert_eq!(wait_exit(&mut p).code(), Some(1));
    assert!(log_of(&p).contains("You insist... exiting now."));
    assert!(!temp.exists());
    assert!(!dir.join("dump.rdb").exists());
}

#[test]
fn debug_segfault_writes_a_crash_report() {
    let dir = temp_dir("segfault");
    let mut p = debug_server(&dir, &["--save", ""]);
    let _ = redis::cmd("DEBUG")
        .arg("SEGFAULT")
        .query::<()>(&mut p.client());
    assert_eq!(wait_exit(&mut p).signal(), Some(libc::SIGSEGV));
    let log = log_of(&p);
    for line in [
        "=== REDIS BUG REPORT START: Cut & paste starting from here ===",
        "crashed by signal: 11",
        "------ STACK TRACE ------",
        "=== REDIS BUG REPORT END. Make sure to include from START to END. ===",
    ] {
        assert!(log.contains(line), "{line:?} not in\n{log}");
    }
}

#[test]
fn sigabrt_writes_a_crash_report_naming_the_sender() {
    let dir = temp_dir("sigabrt");
    let mut p = debug_server(&dir, &["--save", "", "--crash-log-enabled", "no"]);
    signal(&p, libc::SIGABRT);
    assert_eq!(wait_exit(&mut p).signal(), Some(libc::SIGABRT));
    let log = log_of(&p);
    assert!(log.contains("crashed by signal: 6"), "{log}");
    assert!(
        log.contains(&format!("Killed by PID: {}", std::process::id())),
        "{log}"
    );
    // crash-log-enabled no: no stack trace.
    assert!(!log.contains("STACK TRACE"), "{log}");
}

#[test]
fn debug_assert_reports_and_exits_under_use_exit_on_panic() {
    let dir = temp_dir("assert");
    let mut p = debug_server(&dir, &["--save", "", "--use-exit-on-panic", "yes"]);
    let _ = redis::cmd("DEBUG")
        .arg("ASSERT")
        .query::<()>(&mut p.client());
    assert_eq!(wait_exit(&mut p).code(), Some(1));
    let log = log_of(&p);
    assert!(log.contains("=== ASSERTION FAILED ==="), "{log}");
    assert!(!log.contains("crashed by signal"), "{log}");
}

fn oom_score(p: &Proc) -> i64 {
    std::fs::read_to_string(format!("/proc/{}/oom_score_adj", p.child.id()))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// oom-score-adj sets the master class's score, relative to the score the
/// process had or absolute, and turning it off restores that score. The
/// scores move up from the process's score, or down when it has no room
/// above (which needs the privilege to lower a score, as CI's root has:
/// without it the server refuses the setting and the test fails saying
/// so).
#[test]
fn oom_score_adj_sets_the_process_score() {
    let dir = temp_dir("oom");
    let p = debug_server(&dir, &["--save", ""]);
    let mut c = p.client();
    let base = oom_score(&p);
    let sign = if base > 900 { -1 } else { 1 };
    let set = |c: &mut redis::Connection, pairs: &[&str]| {
        redis::cmd("CONFIG").arg("SET").arg(pairs).query::<()>(c)
    };
    set(
        &mut c,
        &[
            "oom-score-adj-values",
            &format!("{} 20 30", 10 * sign),
            "oom-score-adj",
            "yes",
        ],
    )
    .unwrap_or_else(|e| panic!("setting a score {} from {base}: {e}", 10 * sign));
    assert_eq!(oom_score(&p), base + 10 * sign);
    set(
        &mut c,
        &["oom-score-adj-values", &format!("{} 20 30", 15 * sign)],
    )
    .unwrap();
    assert_eq!(oom_score(&p), base + 15 * sign);
    set(
        &mut c,
        &[
            "oom-score-adj-values",
            &format!("{} 0 0", base + 5 * sign),
            "oom-score-adj",
            "absolute",
        ],
    )
    .unwrap();
    assert_eq!(oom_score(&p), base + 5 * sign);
    set(&mut c, &["oom-score-adj", "no"]).unwrap();
    assert_eq!(oom_score(&p), base);
    assert_eq!(
        err_text(set(&mut c, &["oom-score-adj-values", "-2001 0 0"])),
        "ERR CONFIG SET failed (possibly related to argument 'oom-score-adj-values') - Invalid oom-score-adj-values, elements must be between -2000 and 2000."
    );
}

/// An RDB file of version 10 holding `records` in database 0, with the
/// given stored checksum (0: saved without one).
fn rdb_file(records: &[u8], checksum: [u8; 8]) -> Vec<u8> {
    let mut f = b"REDIS0010\xFE\x00".to_vec();
    f.extend_from_slice(records);
    f.push(0xFF);
    f.extend_from_slice(&checksum);
    f
}

/// Keys whose collection is empty are skipped at load, each named in the
/// log, as Redis does (older versions could write them).
#[test]
fn empty_keys_in_a_file_are_skipped_and_counted() {
    let dir = temp_dir("empty-keys");
    // An empty set, an empty hash, then k = v.
    let records = b"\x02\x03set\x00\x04\x04hash\x00\x00\x01k\x01v";
    std::fs::write(dir.join("dump.rdb"), rdb_file(records, [0; 8])).unwrap();
    let p = debug_server(&dir, &["--save", ""]);
    let mut c = p.client();
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 1);
    let log = log_of(&p);
    for line in [
        "rdbLoadObject skipping empty key: set",
        "rdbLoadObject skipping empty key: hash",
        "Done loading RDB, keys loaded: 1, keys expired: 0, empty keys skipped: 2.",
    ] {
        assert!(log.contains(line), "{line:?} not in\n{log}");
    }
}

/// A corrupt blob in the file stops the server with Redis's lines.
#[test]
fn a_corrupt_file_stops_the_server_with_the_reason() {
    let dir = temp_dir("corrupt-file");
    // A quicklist whose ziplist's second entry misstates the first's size.
    let records = b"\x0E\x04list\x01\x13\x13\x00\x00\x00\x0E\x00\x00\x00\x02\x00\x00\x02a\x00\x0E\x02b\x00\xFF";
    std::fs::write(dir.join("dump.rdb"), rdb_file(records, [0; 8])).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_goblin-server"))
        .args(["--port", "0", "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        log.matches("Ziplist integrity check failed.").count() >= 2,
        "{log}"
    );
    assert_eq!(
        log.matches("Terminating server after rdb file reading failure.")
            .count(),
        1,
        "{log}"
    );
}

/// DEBUG SET-SKIP-CHECKSUM-VALIDATION 1 loads a file whose checksum is
/// wrong (DEBUG RELOAD), and RESTOREs a payload whose CRC64 is wrong.
#[test]
fn skip_checksum_validation_covers_reload_and_restore() {
    let dir = temp_dir("skip-checksum");
    let p = debug_server(&dir, &["--save", ""]);
    let mut c = p.client();
    std::fs::write(dir.join("dump.rdb"), rdb_file(b"\x00\x01k\x01v", [1; 8])).unwrap();
    let reload = |c: &mut redis::Connection| {
        redis::cmd("DEBUG")
            .arg("RELOAD")
            .arg("NOSAVE")
            .query::<()>(c)
    };
    assert!(reload(&mut c).is_err());
    let mut payload: Vec<u8> = redis::cmd("DUMP")
        .arg("missing")
        .query::<Option<Vec<u8>>>(&mut c)
        .unwrap()
        .unwrap_or_default();
    assert!(payload.is_empty());
    // "v" as a DUMP payload of version 10 with a wrong CRC64.
    payload.extend_from_slice(b"\x00\x01v\x0a\x00");
    payload.extend_from_slice(&[0xAB; 8]);
    let restore = |c: &mut redis::Connection, p: &[u8]| {
        redis::cmd("RESTORE")
            .arg("r")
            .arg(0)
            .arg(p)
            .arg("REPLACE")
            .query::<()>(c)
    };
    assert_eq!(
        err_text(restore(&mut c, &payload)),
        "ERR DUMP payload version or checksum are wrong"
    );
    let _: () = redis::cmd("DEBUG")
        .arg("SET-SKIP-CHECKSUM-VALIDATION")
        .arg(1)
        .query(&mut c)
        .unwrap();
    reload(&mut c).unwrap();
    let v: String = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v, "v");
    restore(&mut c, &payload).unwrap();
    let v: String = redis::cmd("GET").arg("r").query(&mut c).unwrap();
    assert_eq!(v, "v");
}

/// Sends one command over a unix socket and returns the reply's bytes
/// (a single read: the replies here are small).
fn unix_command(path: &Path, cmd: &[&str]) -> String {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("*{}\r\n", cmd.len());
    for a in cmd {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// `unixsocket` and `unixsocketperm`: the server listens on the socket
/// file with those permissions (a stale file there is replaced), its
/// clients show as Redis shows them (addr /unixsocket:0, flag U) and are
/// local for `enable-debug-command local`, and SHUTDOWN removes the file.
#[test]
fn unix_socket_serves_clients_and_is_removed_at_shutdown() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("unixsocket");
    let sock = dir.join("goblin.sock");
    std::fs::write(&sock, b"stale").unwrap();
    let sock_arg = sock.to_str().unwrap();
    let mut p = Proc::goblin(
        &dir,
        &[
            "--unixsocket",
            sock_arg,
            "--unixsocketperm",
            "700",
            "--enable-debug-command",
            "local",
        ],
    );
    wait_log(
        &p,
        &format!("The server is now ready to accept connections at {sock_arg}"),
    );
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "unixsocketperm");
    assert_eq!(unix_command(&sock, &["SET", "k", "v"]), "+OK\r\n");
    let mut c = p.client();
    let v: String = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v, "v", "one keyspace for both listeners");
    let info = unix_command(&sock, &["CLIENT", "INFO"]);
    assert!(
        info.contains(" addr=/unixsocket:0 laddr=/unixsocket:0 ") && info.contains(" flags=U "),
        "{info}"
    );
    assert!(
        unix_command(&sock, &["DEBUG", "SLEEP", "0"]).starts_with("+OK"),
        "a unix socket client is local"
    );
    let got: String = redis::cmd("CONFIG")
        .arg("GET")
        .arg("unixsocket")
        .query::<Vec<String>>(&mut c)
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(got, sock_arg);
    let _ = unix_command(&sock, &["SHUTDOWN", "NOSAVE"]);
    assert!(wait_exit(&mut p).success());
    assert!(!sock.exists(), "the socket file is removed");
    assert!(log_of(&p).contains("Removing the unix socket file."));
    let _ = std::fs::remove_dir_all(&dir);
}
