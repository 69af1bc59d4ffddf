//! The multi-part append-only file (Redis 7.0's `appendonlydir/`): how the
//! manifest is read (and refused, with Redis's words), how an AOF of Redis
//! 6 or older is taken over, how the log is opened when it is switched on
//! at runtime, and names that need quoting in the manifest.

use crate::common::process::{digest, free_port, temp_dir, Proc};
use redis::{Commands, Connection};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SET_K1: &str = "*3\r\n$3\r\nset\r\n$2\r\nk1\r\n$2\r\nv1\r\n";
const SET_K2: &str = "*3\r\n$3\r\nset\r\n$2\r\nk2\r\n$2\r\nv2\r\n";

/// Starts goblin-server with the AOF on in `dir`, expects it to exit with
/// an error, and returns what it logged.
fn refused(dir: &Path) -> String {
    let log = dir.join("refused.log");
    let out = std::fs::File::create(&log).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_goblin-server"))
        .args(["--port", &free_port().to_string()])
        .args(["--dir", dir.to_str().unwrap()])
        .args(["--appendonly", "yes", "--save", ""])
        .stdout(Stdio::from(out.try_clone().unwrap()))
        .stderr(Stdio::from(out))
        .status()
        .unwrap();
    assert!(!status.success(), "the server started");
    std::fs::read_to_string(&log).unwrap()
}

/// A log directory holding base 1, incr 1 and incr 3, each setting a key,
/// and `manifest` as its manifest.
fn log_dir(name: &str, manifest: &str) -> std::path::PathBuf {
    let dir = temp_dir(name);
    let aof = dir.join("appendonlydir");
    std::fs::create_dir_all(&aof).unwrap();
    std::fs::write(aof.join("appendonly.aof.1.base.aof"), SET_K1).unwrap();
    std::fs::write(aof.join("appendonly.aof.1.incr.aof"), SET_K2).unwrap();
    std::fs::write(aof.join("appendonly.aof.3.incr.aof"), SET_K2).unwrap();
    std::fs::write(aof.join("appendonly.aof.manifest"), manifest).unwrap();
    dir
}

fn manifest_of(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join("appendonlydir").join(format!("{name}.manifest"))).unwrap()
}

/// Manifests Redis refuses were loaded (a blank line was skipped, an
/// unknown type or a zero sequence was taken for missing data only in
/// part, an empty manifest meant no log, an overlong line was read), and
/// a file the manifest names that is missing was not reported as Redis
/// reports it.
#[test]
fn damaged_manifests_are_refused_with_redis_messages() {
    let long = format!(
        "file appendonly.aof.1.base.aof seq 1 type b{}\n",
        " x y".repeat(300)
    );
    let cases: &[(&str, &str)] = &[
        (
            "file appendonly.aof.1.incr.aof seq 1 type i\n\nfile appendonly.aof.3.incr.aof seq 3 type i\n",
            "Invalid AOF manifest file format",
        ),
        (
            "file appendonly.aof.1.base.aof seq 1 type x\n",
            "Unknown AOF file type",
        ),
        (
            "file appendonly.aof.1.base.aof seq 0 type b\n",
            "Invalid AOF manifest file format",
        ),
        ("", "Found an empty AOF manifest"),
        (&long, "The AOF manifest file contains too long line"),
        // The last line without its newline is cut short too.
        (
            "file appendonly.aof.1.base.aof seq 1 type b",
            "The AOF manifest file contains too long line",
        ),
        (
            "file appendonly.aof.1.base.aof seq 1 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n",
            "Unable to obtain the AOF file appendonly.aof.2.incr.aof length. stat: No such file or directory",
        ),
    ];
    for (manifest, message) in cases {
        let dir = log_dir("manifest-refused", manifest);
        let log = refused(&dir);
        assert!(
            log.contains(message),
            "manifest {manifest:?}: expected {message:?} in\n{log}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Keys of the manifest are read in any case, unknown key/value pairs and
/// comment lines are ignored, and incr sequences may have gaps.
#[test]
fn a_manifest_with_extra_keys_comments_and_gaps_loads() {
    let dir = log_dir(
        "manifest-extra",
        "# a comment\nFILE appendonly.aof.1.base.aof SEQ 1 TYPE b newkey newvalue\nfile appendonly.aof.1.incr.aof seq 1 type i\nfile appendonly.aof.3.incr.aof seq 3 type i\n",
    );
    let server = Proc::goblin(&dir, &["--appendonly", "yes", "--save", ""]);
    let mut c = server.client();
    assert_eq!(c.get::<_, String>("k1").unwrap(), "v1");
    assert_eq!(c.get::<_, String>("k2").unwrap(), "v2");
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// An upgrade from a Redis 6 AOF that stopped after writing the manifest
/// but before moving the old file into the directory is completed at the
/// next start (it failed: the manifest's base was missing).
#[test]
fn an_interrupted_upgrade_of_an_old_aof_is_completed() {
    let dir = temp_dir("aof-upgrade");
    std::fs::write(dir.join("appendonly.aof"), format!("{SET_K1}{SET_K2}")).unwrap();
    std::fs::create_dir_all(dir.join("appendonlydir")).unwrap();
    std::fs::write(
        dir.join("appendonlydir/appendonly.aof.manifest"),
        "file appendonly.aof seq 1 type b\n",
    )
    .unwrap();
    let server = Proc::goblin(&dir, &["--appendonly", "yes", "--save", ""]);
    let mut c = server.client();
    assert_eq!(c.get::<_, String>("k1").unwrap(), "v1");
    assert_eq!(c.get::<_, String>("k2").unwrap(), "v2");
    assert!(!dir.join("appendonly.aof").exists());
    assert!(dir.join("appendonlydir/appendonly.aof").is_file());
    assert_eq!(
        manifest_of(&dir, "appendonly.aof"),
        "file appendonly.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// When both the server's directory and the log's hold the old file, the
/// manifest's (the moved one) is loaded and the other is left alone.
#[test]
fn an_old_aof_left_beside_a_completed_upgrade_is_not_loaded() {
    let dir = temp_dir("aof-upgrade-done");
    std::fs::write(dir.join("appendonly.aof"), SET_K1).unwrap();
    std::fs::create_dir_all(dir.join("appendonlydir")).unwrap();
    std::fs::write(dir.join("appendonlydir/appendonly.aof"), SET_K2).unwrap();
    std::fs::write(
        dir.join("appendonlydir/appendonly.aof.manifest"),
        "file appendonly.aof seq 1 type b\n",
    )
    .unwrap();
    let server = Proc::goblin(&dir, &["--appendonly", "yes", "--save", ""]);
    let mut c = server.client();
    assert!(!c.exists::<_, bool>("k1").unwrap());
    assert_eq!(c.get::<_, String>("k2").unwrap(), "v2");
    assert!(dir.join("appendonly.aof").is_file());
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

fn wait_rewrites(c: &mut Connection, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
        if info.contains("aof_rewrite_in_progress:0")
            && info.contains(&format!("aof_rewrites:{n}\r\n"))
        {
            assert!(info.contains("aof_last_bgrewrite_status:ok"), "{info}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "rewrite {n} did not end:\n{info}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// CONFIG SET appendonly yes pairs the first base with incr file 1 (it
/// started a second incr file, 2, as if a rewrite had begun on a running
/// log).
#[test]
fn switching_the_aof_on_pairs_base_1_with_incr_1() {
    let dir = temp_dir("aof-enable");
    let args = [
        "--appendonly",
        "no",
        "--save",
        "",
        "--enable-debug-command",
        "yes",
    ];
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    let _: () = c.set("k", "v").unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "appendonly", "yes"])
        .query(&mut c)
        .unwrap();
    wait_rewrites(&mut c, 1);
    assert_eq!(
        manifest_of(&dir, "appendonly.aof"),
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    let _: () = c.set("k2", "v2").unwrap();
    let _: () = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
    wait_rewrites(&mut c, 2);
    assert_eq!(
        manifest_of(&dir, "appendonly.aof"),
        "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
    );
    let d1 = digest(&mut c);
    let _: () = redis::cmd("DEBUG").arg("LOADAOF").query(&mut c).unwrap();
    assert_eq!(digest(&mut c), d1);
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// An appendfilename with blanks and newlines was refused ("argument
/// contains invalid characters"); Redis takes any name without a slash,
/// and the manifest quotes it.
#[test]
fn an_appendfilename_with_blanks_and_newlines_is_quoted_in_the_manifest() {
    let dir = temp_dir("aof-odd-name");
    let name = " file seq \n\n.aof ";
    let args = [
        "--appendonly",
        "yes",
        "--save",
        "",
        "--appendfilename",
        name,
        "--enable-debug-command",
        "yes",
    ];
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    let _: () = c.set("k1", "v1").unwrap();
    let _: () = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
    wait_rewrites(&mut c, 1);
    assert_eq!(
        manifest_of(&dir, name),
        "file \" file seq \\n\\n.aof .2.base.rdb\" seq 2 type b\nfile \" file seq \\n\\n.aof .2.incr.aof\" seq 2 type i\n"
    );
    let _: () = c.set("k2", "v2").unwrap();
    let d1 = digest(&mut c);
    server.kill9();
    let server = Proc::goblin(&dir, &args);
    let mut c = server.client();
    assert_eq!(digest(&mut c), d1);
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// CONFIG SET appendonly no during a rewrite slowed by rdb-key-save-delay
/// abandons it and says so, as Redis kills its rewrite child (the walk
/// slept out the whole delay first, and nothing was logged).
#[test]
fn switching_the_aof_off_abandons_a_rewrite_in_progress() {
    let dir = temp_dir("aof-off-rewrite");
    let server = Proc::goblin(&dir, &["--appendonly", "yes", "--save", ""]);
    let mut c = server.client();
    let _: () = c.set("k", "v").unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "rdb-key-save-delay", "100000000"])
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "appendonly", "no"])
        .query(&mut c)
        .unwrap();
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
    assert!(info.contains("aof_rewrite_in_progress:0"), "{info}");
    assert!(info.contains("aof_enabled:0"), "{info}");
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(log.contains("Killing running AOF rewrite child"), "{log}");
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// When the rewrite that follows CONFIG SET appendonly yes fails, it is
/// tried again until a base is written (it was not: the log went on into
/// an incr file that the manifest on disk did not name, and a restart
/// lost what was written since).
#[test]
fn a_failed_first_rewrite_is_tried_again() {
    let dir = temp_dir("aof-enable-retry");
    let server = Proc::goblin(&dir, &["--appendonly", "no", "--save", ""]);
    let mut c = server.client();
    let _: () = c.set("k1", "v1").unwrap();
    // The rewrite's temporary file cannot be created while a directory
    // holds its name.
    let blocker = dir
        .join("appendonlydir")
        .join(format!("temp-rewriteaof-bg-{}.aof", server.child.id()));
    std::fs::create_dir_all(&blocker).unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "appendonly", "yes"])
        .query(&mut c)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
        if info.contains("aof_last_bgrewrite_status:err") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the rewrite did not fail:\n{info}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let _: () = c.set("k2", "v2").unwrap();
    std::fs::remove_dir(&blocker).unwrap();
    // Each failed try counts in aof_rewrites, as in Redis (counted when
    // the rewrite starts): wait for one that succeeded.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
        if info.contains("aof_rewrite_in_progress:0")
            && info.contains("aof_last_bgrewrite_status:ok")
        {
            assert!(
                info.contains("aof_rewrites_consecutive_failures:0"),
                "{info}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the rewrite was not tried again:\n{info}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let _: () = c.set("k3", "v3").unwrap();
    server.kill9();
    let server = Proc::goblin(&dir, &["--appendonly", "yes", "--save", ""]);
    let mut c = server.client();
    for (k, v) in [("k1", "v1"), ("k2", "v2"), ("k3", "v3")] {
        assert_eq!(c.get::<_, Option<String>>(k).unwrap().as_deref(), Some(v));
    }
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// CONFIG SET appendonly yes during a BGSAVE lets the save go on and
/// switches the log on once it ended, as Redis schedules the rewrite (the
/// save was cancelled).
#[test]
fn switching_the_aof_on_during_a_bgsave_waits_for_the_save() {
    let dir = temp_dir("aof-enable-bgsave");
    let server = Proc::goblin(&dir, &["--appendonly", "no", "--save", ""]);
    let mut c = server.client();
    let _: () = c.set("k1", "v1").unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "rdb-key-save-delay", "100000000"])
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("BGSAVE").query(&mut c).unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "appendonly", "yes"])
        .query(&mut c)
        .unwrap();
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
    assert!(info.contains("rdb_bgsave_in_progress:1"), "{info}");
    assert!(info.contains("aof_rewrite_scheduled:1"), "{info}");
    assert!(info.contains("aof_enabled:1"), "{info}");
    assert!(!dir.join("appendonlydir").exists());
    // FLUSHALL ends the save (as it kills Redis's child).
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    wait_rewrites(&mut c, 1);
    assert_eq!(
        manifest_of(&dir, "appendonly.aof"),
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    let _: () = c.set("k2", "v2").unwrap();
    server.kill9();
    let server = Proc::goblin(&dir, &["--appendonly", "yes", "--save", ""]);
    let mut c = server.client();
    assert_eq!(
        c.get::<_, Option<String>>("k2").unwrap().as_deref(),
        Some("v2")
    );
    assert!(!c.exists::<_, bool>("k1").unwrap());
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}
