//! Commands, DEBUG subcommands and INFO fields checked against Redis:
//! MODULE (Goblin loads no module), LOLWUT, the DEBUG subcommands the Tcl
//! suite uses, Redis 7.2's CLIENT NO-TOUCH, CLIENT SETINFO and WAITAOF,
//! the reply buffer the cron sizes from its peak, and the INFO fields
//! that are measured (reads, writes, traffic, recent largest buffers,
//! scripts' memory, the allocator's figures).
//!
//! Side-by-side checks run Debian's redis-server 7.0.15 and goblin-server
//! as child processes with the same arguments and compare the replies
//! byte for byte. Waits poll a condition; nothing asserts a duration.

use crate::common::{info_field, wait_until, TestServer};
use crate::goblin_support::{Conn, RedisProcess, Reply};
use std::io::Write;
use std::time::Duration;

const GOBLIN: &str = env!("CARGO_BIN_EXE_goblin-server");

/// Redis and Goblin started with the same arguments.
fn pair(args: &[&str]) -> (RedisProcess, RedisProcess) {
    (
        RedisProcess::start_with(args),
        RedisProcess::start_program(GOBLIN, args),
    )
}

/// Sends each command to both servers and asserts the same reply.
fn same_replies(redis: &mut Conn, goblin: &mut Conn, commands: &[&[&str]]) {
    for cmd in commands {
        let r = redis.cmd(cmd);
        let g = goblin.cmd(cmd);
        assert_eq!(g, r, "{cmd:?}");
    }
}

#[test]
fn module_commands_answer_as_redis_does_without_a_loadable_module() {
    let (redis, goblin) = pair(&["--enable-module-command", "yes"]);
    let (mut r, mut g) = (redis.conn(), goblin.conn());
    same_replies(
        &mut r,
        &mut g,
        &[
            &["MODULE", "LIST"],
            &["MODULE", "HELP"],
            &["MODULE", "LOAD", "/nonexistent/module.so"],
            &["MODULE", "LOAD", "/nonexistent/module.so", "arg"],
            &["MODULE", "LOADEX", "/nonexistent/module.so", "CONFIG", "a"],
            &["MODULE", "LOADEX", "/nonexistent/module.so", "bogus"],
            &["MODULE", "UNLOAD", "goblin"],
            &["MODULE", "UNLOAD"],
            &["MODULE", "BOGUS"],
            &["MODULE"],
        ],
    );
    assert_eq!(g.cmd(&["MODULE", "LIST"]), Reply::Array(vec![]));
}

#[test]
fn module_load_is_protected_as_in_redis() {
    let (redis, goblin) = pair(&[]);
    let (mut r, mut g) = (redis.conn(), goblin.conn());
    same_replies(
        &mut r,
        &mut g,
        &[
            &["MODULE", "LOAD", "/nonexistent/module.so"],
            &["MODULE", "UNLOAD", "x"],
            &["MODULE", "LIST"],
        ],
    );
}

#[test]
fn debug_subcommands_of_the_suite_answer_as_redis() {
    let (redis, goblin) = pair(&["--enable-debug-command", "yes"]);
    let (mut r, mut g) = (redis.conn(), goblin.conn());
    same_replies(
        &mut r,
        &mut g,
        &[&["SET", "str", "v"], &["HSET", "small", "f", "v"]],
    );
    same_replies(
        &mut r,
        &mut g,
        &[
            &["DEBUG", "HELP"],
            &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "1b"],
            &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0"],
            &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "5gb"],
            &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "-1"],
            &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "abc"],
            &["DEBUG", "LISTPACK", "nokey"],
            &["DEBUG", "LISTPACK", "str"],
            &["DEBUG", "LISTPACK", "small"],
            &["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never"],
            &["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "5000"],
            &["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "abc"],
            &["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "reset"],
            &["DEBUG", "REPLYBUFFER", "RESIZING", "0"],
            &["DEBUG", "REPLYBUFFER", "RESIZING", "1"],
            &["DEBUG", "REPLYBUFFER", "BOGUS", "1"],
            &["DEBUG", "REPLYBUFFER", "RESIZING"],
            &["DEBUG", "PAUSE-CRON", "1"],
            &["DEBUG", "PAUSE-CRON", "0"],
            &["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1"],
            &["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0"],
            &["DEBUG", "MALLCTL", "arenas.page"],
            &["DEBUG", "MALLCTL", "no.such.key"],
            &["DEBUG", "MALLCTL", "arenas.page", "abc"],
        ],
    );
    // Redis's fuzz test of its glob matcher, on Goblin's; Redis 7.0.15
    // itself sometimes crashes in it, so it is not run there. STRINGMATCH-LEN
    // is Redis 7.2's name for it.
    for name in ["STRINGMATCH-TEST", "STRINGMATCH-LEN"] {
        assert_eq!(
            g.cmd(&["DEBUG", name]),
            Reply::Status("Apparently Redis did not crash: test passed".into())
        );
    }
    // jemalloc's version string is the build's own.
    let version = g.cmd(&["DEBUG", "MALLCTL-STR", "version"]).text();
    assert!(version.starts_with("5.3.0"), "{version}");
}

#[test]
fn lolwut_draws_redis_art_and_names_goblins_version() {
    let (redis, goblin) = pair(&[]);
    let (mut r, mut g) = (redis.conn(), goblin.conn());
    let own = format!("Goblin ver. {}\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(g.cmd(&["LOLWUT"]).text(), own);
    assert_eq!(g.cmd(&["LOLWUT", "VERSION", "7"]).text(), own);
    same_replies(
        &mut r,
        &mut g,
        &[
            &["LOLWUT", "VERSION", "abc"],
            &["LOLWUT", "VERSION", "5", "abc"],
            &["LOLWUT", "VERSION", "6", "1", "abc"],
        ],
    );
    // The art is random; its shape is not: the same lines of the same
    // widths, then the same words before the version.
    for args in [
        &["LOLWUT", "VERSION", "5", "20", "3", "4"][..],
        &["LOLWUT", "VERSION", "5"],
        &["LOLWUT", "VERSION", "6", "10", "5"],
    ] {
        let rt = r.cmd(args).text();
        let gt = g.cmd(args).text();
        let rl: Vec<&str> = rt.lines().collect();
        let gl: Vec<&str> = gt.lines().collect();
        assert_eq!(gl.len(), rl.len(), "{args:?}");
        // As many characters (Braille) or pixels (coloured spaces).
        let width = |line: &str| match line.matches('\x1b').count() {
            0 => line.chars().count(),
            escapes => escapes,
        };
        for (a, b) in gl.iter().zip(&rl).take(gl.len() - 1) {
            assert_eq!(width(a), width(b), "{args:?}");
        }
        let last_g = gl.last().unwrap();
        let last_r = rl.last().unwrap();
        assert_eq!(
            last_g.replace(&format!("Goblin ver. {}", env!("CARGO_PKG_VERSION")), ""),
            last_r.replace("Redis ver. 7.0.15", ""),
        );
    }
}

#[test]
fn client_no_touch_leaves_the_access_counter_but_touch_counts() {
    let server = TestServer::start_with(&[("maxmemory-policy", "allkeys-lfu")]);
    let mut c = Conn::connect(server.addr);
    assert_eq!(c.cmd(&["SET", "k", "v"]), Reply::Status("OK".into()));
    // A new key's LFU counter is 5; its first access takes it to 6 for
    // sure (the increment's chance is 1 at the initial value).
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Reply::Int(5));
    assert_eq!(
        c.cmd(&["CLIENT", "NO-TOUCH", "ON"]),
        Reply::Status("OK".into())
    );
    assert!(c.cmd(&["CLIENT", "INFO"]).text().contains(" flags=T "));
    assert_eq!(c.cmd(&["GET", "k"]), Reply::Bulk(b"v".to_vec()));
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Reply::Int(5));
    assert_eq!(c.cmd(&["TOUCH", "k"]), Reply::Int(1));
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Reply::Int(6));
    assert_eq!(
        c.cmd(&["CLIENT", "NO-TOUCH", "MAYBE"]),
        Reply::Error("ERR syntax error".into())
    );
    // RESET ends it.
    c.cmd(&["RESET"]);
    assert!(c.cmd(&["CLIENT", "INFO"]).text().contains(" flags=N "));
}

#[test]
fn client_setinfo_names_the_library_in_client_list() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    assert!(c
        .cmd(&["CLIENT", "INFO"])
        .text()
        .ends_with(" resp=2 lib-name= lib-ver=\n"));
    assert_eq!(
        c.cmd(&["CLIENT", "SETINFO", "lib-name", "redis.py"]),
        Reply::Status("OK".into())
    );
    assert_eq!(
        c.cmd(&["CLIENT", "SETINFO", "LIB-VER", "1.2.3"]),
        Reply::Status("OK".into())
    );
    assert_eq!(
        c.cmd(&["CLIENT", "SETINFO", "lib-name", "redis py"]),
        Reply::Error("ERR lib-name cannot contain spaces, newlines or special characters.".into())
    );
    assert_eq!(
        c.cmd(&["CLIENT", "SETINFO", "lib-ver", "1.2\n"]),
        Reply::Error("ERR lib-ver cannot contain spaces, newlines or special characters.".into())
    );
    assert_eq!(
        c.cmd(&["CLIENT", "SETINFO", "badger", "hamster"]),
        Reply::Error("ERR Unrecognized option 'badger'".into())
    );
    assert_eq!(
        c.cmd(&["CLIENT", "SETINFO", "lib-name"]),
        Reply::Error("ERR wrong number of arguments for 'client|setinfo' command".into())
    );
    // The refused values changed nothing, and RESET keeps them.
    c.cmd(&["RESET"]);
    let list = c.cmd(&["CLIENT", "LIST"]).text();
    assert!(
        list.contains(" lib-name=redis.py lib-ver=1.2.3\n"),
        "{list}"
    );
    // An empty value clears it.
    c.cmd(&["CLIENT", "SETINFO", "lib-name", ""]);
    assert!(c
        .cmd(&["CLIENT", "INFO"])
        .text()
        .ends_with(" lib-name= lib-ver=1.2.3\n"));
}

#[test]
fn waitaof_refuses_numlocal_without_appendonly_and_checks_its_arguments() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(
        c.cmd(&["WAITAOF", "1", "0", "0"]),
        Reply::Error(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.".into()
        )
    );
    assert_eq!(
        c.cmd(&["WAITAOF", "0", "0", "0"]),
        Reply::Array(vec![Reply::Int(0), Reply::Int(0)])
    );
    assert_eq!(
        c.cmd(&["WAITAOF", "2", "0", "0"]),
        Reply::Error("ERR value is out of range, value must between 0 and 1".into())
    );
    assert_eq!(
        c.cmd(&["WAITAOF", "0", "-1", "0"]),
        Reply::Error("ERR value is out of range, must be positive".into())
    );
    assert_eq!(
        c.cmd(&["WAITAOF", "0", "0", "-1"]),
        Reply::Error("ERR timeout is negative".into())
    );
    assert_eq!(
        c.cmd(&["WAITAOF", "x", "0", "0"]),
        Reply::Error("ERR value is not an integer or out of range".into())
    );
}

#[test]
fn waitaof_replies_once_the_write_is_on_disk() {
    for fsync in ["everysec", "always"] {
        let server = TestServer::start_with(&[("appendonly", "yes"), ("appendfsync", fsync)]);
        // Opens the append-only file, as the server's start does.
        goblin_engine::persist::load_on_start(&server.engine).unwrap();
        let mut c = Conn::connect(server.addr);
        c.cmd(&["SET", "k", "v"]);
        assert_eq!(
            c.cmd(&["WAITAOF", "1", "0", "0"]),
            Reply::Array(vec![Reply::Int(1), Reply::Int(0)]),
            "{fsync}"
        );
        // No replica acknowledges its file: the timeout ends the wait,
        // the local file counted (the write is on disk already).
        assert_eq!(
            c.cmd(&["WAITAOF", "1", "1", "50"]),
            Reply::Array(vec![Reply::Int(1), Reply::Int(0)]),
            "{fsync}"
        );
    }
}

/// A client's reply buffer size, as CLIENT LIST's rbs shows it.
fn reply_buffer_size(c: &mut Conn, name: &str) -> usize {
    let list = c.cmd(&["CLIENT", "LIST"]).text();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))
        .unwrap_or_else(|| panic!("no client {name} in {list}"));
    let rbs = line
        .split(' ')
        .find_map(|f| f.strip_prefix("rbs="))
        .unwrap();
    rbs.parse().unwrap()
}

#[test]
fn reply_buffer_expands_to_its_peak_and_shrinks_when_idle() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    let mut busy = Conn::connect(server.addr);
    busy.cmd(&["CLIENT", "SETNAME", "busy"]);
    assert_eq!(reply_buffer_size(&mut c, "busy"), 1024);
    c.cmd(&["SET", "bigval", &"x".repeat(32768)]);
    c.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never"]);
    // Redis's limits: a full buffer doubles up to 16 KiB; a larger reply
    // passes through without keeping the buffer past that.
    wait_until("the reply buffer expands", Duration::from_secs(10), || {
        busy.cmd(&["GET", "bigval"]);
        reply_buffer_size(&mut c, "busy") >= 16384
    });
    assert!(reply_buffer_size(&mut c, "busy") < 32768);
    assert!(info_field_conn(&mut c, "reply_buffer_expands") >= 4);
    c.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100"]);
    wait_until(
        "the idle reply buffer shrinks",
        Duration::from_secs(10),
        || reply_buffer_size(&mut c, "busy") < 2048,
    );
    assert!(info_field_conn(&mut c, "reply_buffer_shrinks") >= 1);
}

/// An INFO field as a number (the whole INFO, through a RESP2 connection).
fn info_field_conn(c: &mut Conn, field: &str) -> u64 {
    let info = c.cmd(&["INFO", "everything"]).text();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO"))
        .trim()
        .parse::<f64>()
        .unwrap() as u64
}

#[test]
fn info_counts_reads_writes_and_their_bytes_per_second() {
    let server = TestServer::start();
    let mut c = server.client();
    let reads = |c: &mut redis::Connection| -> u64 {
        info_field(c, "stats", "total_reads_processed")
            .parse()
            .unwrap()
    };
    let writes = |c: &mut redis::Connection| -> u64 {
        info_field(c, "stats", "total_writes_processed")
            .parse()
            .unwrap()
    };
    let (r0, w0) = (reads(&mut c), writes(&mut c));
    for _ in 0..10 {
        let _: String = redis::cmd("PING").query(&mut c).unwrap();
    }
    // Each PING is one read and one write, and so is each INFO.
    assert!(reads(&mut c) >= r0 + 10);
    assert!(writes(&mut c) >= w0 + 10);
    let value = "v".repeat(10_000);
    wait_until("traffic shows in kbps", Duration::from_secs(10), || {
        for _ in 0..20 {
            let _: () = redis::cmd("SET")
                .arg("k")
                .arg(&value)
                .query(&mut c)
                .unwrap();
            let _: String = redis::cmd("GET").arg("k").query(&mut c).unwrap();
        }
        let input: f64 = info_field(&mut c, "stats", "instantaneous_input_kbps")
            .parse()
            .unwrap();
        let output: f64 = info_field(&mut c, "stats", "instantaneous_output_kbps")
            .parse()
            .unwrap();
        input > 1.0 && output > 1.0
    });
    // CONFIG RESETSTAT starts the counts again.
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
    assert!(reads(&mut c) < 5);
}

#[test]
fn info_recent_max_input_buffer_sees_a_big_argument_in_flight() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut big = std::net::TcpStream::connect(server.addr).unwrap();
    big.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$200000\r\n")
        .unwrap();
    big.write_all(&[b'x'; 100_000]).unwrap();
    wait_until(
        "the big query buffer is seen",
        Duration::from_secs(10),
        || {
            let n: u64 = info_field(&mut c, "clients", "client_recent_max_input_buffer")
                .parse()
                .unwrap();
            n >= 100_000
        },
    );
    drop(big);
}

#[test]
fn used_memory_scripts_counts_eval_scripts_and_functions() {
    let server = TestServer::start();
    let mut c = server.client();
    let scripts = |c: &mut redis::Connection| -> u64 {
        info_field(c, "memory", "used_memory_scripts")
            .parse()
            .unwrap()
    };
    let s0 = scripts(&mut c);
    let _: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 'a fairly long script body to be counted'")
        .query(&mut c)
        .unwrap();
    let s1 = scripts(&mut c);
    assert!(s1 > s0, "{s0} -> {s1}");
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!lua name=lib\nredis.register_function('f', function() return 1 end)")
        .query(&mut c)
        .unwrap();
    let s2 = scripts(&mut c);
    assert!(s2 > s1, "{s1} -> {s2}");
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut c).unwrap();
    let _: () = redis::cmd("FUNCTION").arg("FLUSH").query(&mut c).unwrap();
    assert_eq!(scripts(&mut c), s0);
}

#[test]
fn memory_figures_come_from_jemalloc_in_the_server_process() {
    let goblin = RedisProcess::start_program(GOBLIN, &[]);
    let mut g = goblin.conn();
    let report = g.cmd(&["MEMORY", "MALLOC-STATS"]).text();
    assert!(
        report.starts_with("___ Begin jemalloc statistics ___\n"),
        "{report}"
    );
    assert!(report.contains("--- End jemalloc statistics ---"));
    assert_eq!(g.cmd(&["MEMORY", "PURGE"]), Reply::Status("OK".into()));
    let info = g.cmd(&["INFO", "memory"]).text();
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap()
            .parse()
            .unwrap()
    };
    // used_memory_startup is what building the engine allocated.
    assert!(field("used_memory_startup") > 0.0);
    assert!(field("used_memory") >= field("used_memory_startup"));
    // The process's resident set against jemalloc's resident pages.
    let rss = field("used_memory_rss");
    let resident = field("allocator_resident");
    assert_eq!(field("rss_overhead_bytes"), rss - resident);
    let ratio = field("rss_overhead_ratio");
    assert!(
        (ratio - rss / resident).abs() < 0.01,
        "{ratio} {rss} {resident}"
    );
}

#[test]
fn waitaof_counts_replicas_whose_file_is_on_disk() {
    use crate::replication::{spawn, wait_link_up, wait_synced, Kind};
    let p = spawn(
        Kind::Goblin,
        "waitaof-primary",
        &["--appendonly", "yes", "--repl-diskless-sync-delay", "0"],
    );
    // A Goblin replica with its own file sends FACK with its ACKs; a
    // Redis 7.0 replica does not, and never counts.
    let goblin = spawn(Kind::Goblin, "waitaof-goblin", &["--appendonly", "yes"]);
    let redis = spawn(Kind::Redis, "waitaof-redis", &["--appendonly", "yes"]);
    goblin.replicaof(&p);
    redis.replicaof(&p);
    wait_link_up(&goblin);
    wait_link_up(&redis);
    let mut c = p.client();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
    wait_synced(&p, &[&goblin, &redis]);
    let acked: (i64, i64) = redis::cmd("WAITAOF")
        .arg(1)
        .arg(1)
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(acked, (1, 1));
    // Both replicas are asked for: only Goblin's answers, so the timeout
    // ends the wait.
    let acked: (i64, i64) = redis::cmd("WAITAOF")
        .arg(1)
        .arg(2)
        .arg(200)
        .query(&mut c)
        .unwrap();
    assert_eq!(acked, (1, 1));
}
