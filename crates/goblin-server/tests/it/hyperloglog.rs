//! HyperLogLog against Redis 7.0.15: the same commands on goblin-server
//! and on Debian's redis-server (started here as a child process; the
//! tests fail, never skip, when it is missing) must give the same replies
//! and leave byte-identical values, since an HLL is a string that GET, SET,
//! DUMP/RESTORE and RDB files carry between the two unchanged.
//!
//! The sequences are seeded random PFADD / PFCOUNT / PFMERGE / PFDEBUG
//! runs over a few keys, with sparse and dense sizes, the sparse-to-dense
//! promotion at several hll-sparse-max-bytes, hand-made and randomly
//! corrupted values, and other types. WATCH and the append-only file must
//! see the same writes as Redis's (PFCOUNT refreshing its cache is one).

use crate::common::TestServer;
use crate::goblin_support::{Conn, RedisProcess, Reply};
use goblin_engine::keyspace::hyperloglog::{pattern, DENSE_SIZE, HDR_SIZE, REGISTERS};

/// goblin-server and redis-server, driven in lockstep.
struct Pair {
    goblin: TestServer,
    redis: RedisProcess,
    g: Conn,
    r: Conn,
    history: Vec<String>,
    what: String,
}

fn show(args: &[&[u8]]) -> String {
    let mut s = String::new();
    for a in args {
        let text = String::from_utf8_lossy(&a[..a.len().min(24)]).into_owned();
        let more = if a.len() > 24 { "…" } else { "" };
        s.push_str(&format!("{text:?}{more} "));
    }
    s
}

impl Pair {
    fn new(what: &str) -> Pair {
        Pair::with(what, &[], &[])
    }

    fn with(what: &str, goblin: &[(&str, &str)], redis: &[&str]) -> Pair {
        let goblin = TestServer::start_with(goblin);
        let redis = RedisProcess::start_with(redis);
        Pair {
            g: Conn::connect(goblin.addr),
            r: redis.conn(),
            goblin,
            redis,
            history: Vec::new(),
            what: what.to_string(),
        }
    }

    fn fail(&self, msg: String) -> ! {
        let from = self.history.len().saturating_sub(20);
        panic!(
            "{}: {msg}\nlast commands:\n  {}",
            self.what,
            self.history[from..].join("\n  ")
        );
    }

    /// Runs one command on both servers; the replies must be equal.
    fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.history.push(show(args));
        let g = self.g.call(args);
        let r = self.r.call(args);
        if g != r {
            let brief = |x: &Reply| {
                let s = format!("{x:?}");
                s[..s.len().min(400)].to_string()
            };
            self.fail(format!(
                "replies differ for {}\n  goblin: {}\n  redis:  {}",
                show(args),
                brief(&g),
                brief(&r)
            ));
        }
        r
    }

    fn cmd(&mut self, args: &[&str]) -> Reply {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.call(&args)
    }

    /// The key's value must be the same bytes on both servers.
    fn same_value(&mut self, key: &str) -> Reply {
        self.cmd(&["GET", key])
    }

    fn pfadd(&mut self, key: &str, elements: &[Vec<u8>]) -> Reply {
        let mut args: Vec<&[u8]> = vec![b"PFADD", key.as_bytes()];
        args.extend(elements.iter().map(|e| e.as_slice()));
        self.call(&args)
    }

    fn set_raw(&mut self, key: &str, value: &[u8]) {
        assert_eq!(
            self.call(&[b"SET", key.as_bytes(), value]),
            Reply::Status("OK".into())
        );
    }

    /// The same INFO field on both servers.
    fn same_info(&mut self, section: &str, field: &str) {
        let pick = |conn: &mut Conn| {
            let info = conn.cmd(&["INFO", section]).text();
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
                .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
        };
        let (g, r) = (pick(&mut self.g), pick(&mut self.r));
        if g != r {
            self.fail(format!("INFO {field}: goblin {g}, redis {r}"));
        }
    }
}

/// An element: decimal numbers, short and long binary strings (lengths
/// around MurmurHash's 8-byte words), the empty string.
fn element(rng: &mut fastrand::Rng) -> Vec<u8> {
    match rng.u8(..10) {
        0..=3 => rng.u64(..).to_string().into_bytes(),
        4..=7 => {
            let len = [0usize, 1, 7, 8, 9, 15, 16, 17, 40][rng.usize(..9)];
            (0..len).map(|_| rng.u8(..)).collect()
        }
        _ => rng.u32(..1000).to_string().into_bytes(),
    }
}

fn elements(rng: &mut fastrand::Rng, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|_| element(rng)).collect()
}

/// An element that lands in register `index` (found by trying numbers).
fn element_for_register(index: usize, from: u64) -> Vec<u8> {
    (from..)
        .map(|n| format!("e{n}").into_bytes())
        .find(|e| pattern(e).0 == index)
        .unwrap()
}

const KEYS: [&str; 4] = ["a", "b", "c", "d"];

#[test]
fn random_sequences_match_redis_byte_for_byte() {
    for seed in [1u64, 2, 3, 4] {
        let mut p = Pair::new(&format!("seed {seed}"));
        let mut rng = fastrand::Rng::with_seed(seed);
        for _ in 0..300 {
            let key = KEYS[rng.usize(..KEYS.len())];
            let touched: Vec<&str> = match rng.u8(..100) {
                0..=39 => {
                    let n = [0usize, 1, 2, 5, 20, 100, 400][rng.usize(..7)];
                    let els = elements(&mut rng, n);
                    p.pfadd(key, &els);
                    vec![key]
                }
                40..=54 => {
                    p.cmd(&["PFCOUNT", key]);
                    vec![key]
                }
                55..=64 => {
                    let n = rng.usize(2..=4);
                    let mut args = vec!["PFCOUNT"];
                    args.extend((0..n).map(|_| ["a", "b", "c", "d", "none"][rng.usize(..5)]));
                    p.cmd(&args);
                    vec![]
                }
                65..=76 => {
                    let n = rng.usize(0..=3);
                    let mut args = vec!["PFMERGE", key];
                    args.extend((0..n).map(|_| ["a", "b", "c", "d", "none"][rng.usize(..5)]));
                    p.cmd(&args);
                    vec![key]
                }
                77..=84 => {
                    let sub = ["ENCODING", "DECODE", "GETREG"][rng.usize(..3)];
                    p.cmd(&["PFDEBUG", sub, key]);
                    vec![key]
                }
                85..=88 => {
                    p.cmd(&["PFDEBUG", "TODENSE", key]);
                    vec![key]
                }
                89..=92 => {
                    p.cmd(&["DEL", key]);
                    vec![]
                }
                _ => {
                    let max = ["0", "20", "50", "300", "3000", "10000"][rng.usize(..6)];
                    p.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", max]);
                    vec![]
                }
            };
            for k in touched {
                p.same_value(k);
            }
        }
        for k in KEYS {
            p.same_value(k);
            p.cmd(&["PFCOUNT", k]);
        }
        // The same changes counted, the same lookups made.
        p.same_info("persistence", "rdb_changes_since_last_save");
        p.same_info("stats", "keyspace_hits");
        p.same_info("stats", "keyspace_misses");
    }
}

#[test]
fn the_promotion_to_dense_happens_at_the_same_byte() {
    let mut p = Pair::new("promotion");
    let mut rng = fastrand::Rng::with_seed(11);
    for max in ["3000", "200", "1", "0"] {
        p.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", max]);
        p.cmd(&["DEL", "h"]);
        let mut steps = 0;
        loop {
            // One element at a time, so that every length is visited.
            p.pfadd("h", &elements(&mut rng, 1));
            let value = p.same_value("h").bulk().unwrap();
            steps += 1;
            if value.len() == DENSE_SIZE {
                break;
            }
            assert!(
                value.len() <= max.parse::<usize>().unwrap().max(HDR_SIZE + 2),
                "a sparse HLL of {} bytes with hll-sparse-max-bytes {max}",
                value.len()
            );
            assert!(steps < 20_000, "never promoted with max {max}");
        }
        assert_eq!(
            p.cmd(&["PFDEBUG", "ENCODING", "h"]),
            Reply::Status("dense".into())
        );
        p.cmd(&["PFCOUNT", "h"]);
        p.same_value("h");
    }
    // PFMERGE of sparse sources into a sparse destination promotes too.
    p.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]);
    for i in 0.. {
        let els = elements(&mut rng, 60);
        p.pfadd("src", &els);
        assert_eq!(
            p.cmd(&["PFDEBUG", "ENCODING", "src"]),
            Reply::Status("sparse".into())
        );
        p.cmd(&["PFMERGE", "dest", "src"]);
        p.cmd(&["DEL", "src"]);
        if p.same_value("dest").bulk().unwrap().len() == DENSE_SIZE {
            break;
        }
        assert!(i < 200, "PFMERGE never promoted");
    }
    assert_eq!(
        p.cmd(&["PFDEBUG", "ENCODING", "dest"]),
        Reply::Status("dense".into())
    );
}

#[test]
fn large_cardinalities_estimate_the_same() {
    let mut p = Pair::new("large");
    let mut rng = fastrand::Rng::with_seed(5);
    let mut next = 0u64;
    for round in 0..200 {
        let n = if round < 20 { 50 } else { 2500 };
        let els: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                next += 1;
                next.to_string().into_bytes()
            })
            .collect();
        p.pfadd(if round % 2 == 0 { "x" } else { "y" }, &els);
        p.cmd(&["PFCOUNT", "x"]);
        p.cmd(&["PFCOUNT", "x", "y"]);
        if round % 20 == 0 {
            p.same_value("x");
            p.cmd(&["PFMERGE", "z", "x", "y"]);
            p.same_value("z");
            p.cmd(&["PFCOUNT", "z"]);
        }
    }
    let card = p.cmd(&["PFCOUNT", "x", "y"]).int() as f64;
    assert!(
        (card - next as f64).abs() < next as f64 * 0.02,
        "{card} vs {next}"
    );
    // Random elements too, until the registers are far from zero.
    for _ in 0..20 {
        let els = elements(&mut rng, 3000);
        p.pfadd("w", &els);
        p.cmd(&["PFCOUNT", "w"]);
    }
    p.same_value("w");
}

/// Hand-made values: corrupted sparse bodies, wrong headers, odd but valid
/// encodings.
fn crafted_values() -> Vec<(&'static str, Vec<u8>)> {
    let sparse_hdr = |card_invalid: bool| {
        let mut h = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
        if card_invalid {
            h[15] = 0x80;
        }
        h
    };
    let xzero = |len: usize| [((len - 1) >> 8) as u8 | 0x40, ((len - 1) & 0xff) as u8];
    let val = |v: u8, len: u8| ((v - 1) << 2) | (len - 1) | 0x80;
    let with = |body: &[u8]| {
        let mut v = sparse_hdr(true);
        v.extend_from_slice(body);
        v
    };
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let empty = with(&xzero(16384));
    out.push(("tail added", [empty.as_slice(), b"hello"].concat()));
    out.push(("header only", sparse_hdr(true)));
    out.push(("header only, cache valid", sparse_hdr(false)));
    out.push(("too few registers", with(&xzero(100))));
    out.push((
        "xzero overflow",
        with(&[xzero(16384), xzero(16384)].concat()),
    ));
    out.push((
        "val overflow",
        with(&[&xzero(16383)[..], &[val(1, 4)]].concat()),
    ));
    out.push(("zero overflow", with(&[0x3f; 300])));
    // A last XZERO cut to one byte reads a zero second byte: valid.
    out.push((
        "truncated xzero",
        with(&[&xzero(16383)[..], &[0x40]].concat()),
    ));
    out.push((
        "values up to 32",
        with(
            &[
                &[val(32, 4), val(32, 4), val(1, 1), 0x00][..],
                &xzero(16384 - 10),
            ]
            .concat(),
        ),
    ));
    out.push((
        "unmerged neighbours",
        with(&[&[val(3, 1), val(3, 1), val(3, 2)][..], &xzero(16380)].concat()),
    ));
    out.push(("zero runs only", with(&[0x3f; 256])));
    let mut cached = with(&xzero(16384));
    cached[8..16].copy_from_slice(&12345u64.to_le_bytes());
    out.push(("cached cardinality kept", cached));
    let mut dense = b"HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80".to_vec();
    dense.resize(DENSE_SIZE, 0xff);
    out.push(("dense of 63s", dense.clone()));
    let mut dense_mixed = dense.clone();
    for (i, b) in dense_mixed[HDR_SIZE..].iter_mut().enumerate() {
        *b = (i * 37 % 251) as u8;
    }
    out.push(("dense of mixed registers", dense_mixed));
    out.push(("dense one byte short", dense[..DENSE_SIZE - 1].to_vec()));
    out.push(("dense one byte long", [dense.as_slice(), b"x"].concat()));
    let mut magic = empty.clone();
    magic[0] = b'h';
    out.push(("broken magic", magic));
    let mut enc = empty.clone();
    enc[4] = 2;
    out.push(("unknown encoding", enc));
    out.push(("integer", b"12345".to_vec()));
    out.push(("empty string", Vec::new()));
    out.push((
        "fifteen bytes",
        b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec(),
    ));
    out
}

/// Every command on `value`, each starting from a fresh copy of it.
fn exercise(p: &mut Pair, value: &[u8], rng: &mut fastrand::Rng) {
    let fresh = |p: &mut Pair| {
        p.cmd(&["DEL", "d"]);
        p.set_raw("k", value);
    };
    let last = element_for_register(REGISTERS - 1, rng.u64(..1 << 40));
    let first = element_for_register(0, rng.u64(..1 << 40));
    let runs: Vec<Vec<&str>> = vec![
        vec!["PFCOUNT", "k"],
        vec!["PFCOUNT", "k", "k"],
        vec!["PFCOUNT", "k", "none"],
        vec!["PFMERGE", "d", "k"],
        vec!["PFMERGE", "k"],
        vec!["PFMERGE", "k", "none"],
        vec!["PFDEBUG", "GETREG", "k"],
        vec!["PFDEBUG", "DECODE", "k"],
        vec!["PFDEBUG", "ENCODING", "k"],
        vec!["PFDEBUG", "TODENSE", "k"],
        vec!["PFDEBUG", "NOPE", "k"],
    ];
    for run in runs {
        fresh(p);
        p.cmd(&run);
        p.same_value("k");
        p.same_value("d");
        p.cmd(&["PFCOUNT", "k"]);
    }
    for els in [
        elements(rng, 1),
        elements(rng, 30),
        vec![last.clone()],
        vec![first.clone()],
        vec![last, first],
    ] {
        fresh(p);
        p.pfadd("k", &els);
        p.same_value("k");
        p.cmd(&["PFCOUNT", "k"]);
        p.same_value("k");
    }
}

#[test]
fn corrupted_and_odd_values_get_redis_errors() {
    let mut p = Pair::new("crafted");
    let mut rng = fastrand::Rng::with_seed(9);
    for (what, value) in crafted_values() {
        p.what = format!("crafted value '{what}'");
        exercise(&mut p, &value, &mut rng);
    }
    // A sparse body of 33 million ZERO opcodes (the suite's overflow
    // regression): refused, not looped over forever nor overflowed.
    let mut big = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
    big.resize(HDR_SIZE + (1 << 25) + 1000, 0x3f);
    big.push(0xff);
    p.what = "33 MB of ZERO opcodes".into();
    p.set_raw("k", &big);
    p.cmd(&["PFCOUNT", "k", "k"]);
    p.cmd(&["PFCOUNT", "k"]);
    p.cmd(&["PFDEBUG", "GETREG", "k"]);
    p.pfadd("k", &[b"x".to_vec()]);
    p.cmd(&["STRLEN", "k"]);
    p.cmd(&["DEL", "k"]);
}

#[test]
fn randomly_corrupted_values_get_redis_errors() {
    let mut p = Pair::new("fuzz");
    let mut rng = fastrand::Rng::with_seed(21);
    for round in 0..150 {
        p.what = format!("fuzz round {round}");
        p.cmd(&["DEL", "k", "d"]);
        let n = [1usize, 10, 100, 1000, 3000][rng.usize(..5)];
        let els = elements(&mut rng, n);
        p.pfadd("k", &els);
        let len = p.cmd(&["STRLEN", "k"]).int() as usize;
        for _ in 0..rng.usize(1..=5) {
            let pos = rng.usize(..len).to_string();
            let byte = [rng.u8(..)];
            p.call(&[b"SETRANGE", b"k", pos.as_bytes(), &byte]);
        }
        let original = p.same_value("k").bulk().unwrap();
        p.cmd(&["PFCOUNT", "k"]);
        p.same_value("k");
        p.pfadd("k", &elements(&mut rng, 5));
        p.same_value("k");
        p.cmd(&["PFCOUNT", "k", "none"]);
        p.cmd(&["PFMERGE", "d", "k"]);
        p.same_value("d");
        p.set_raw("k", &original);
        p.cmd(&["PFDEBUG", "TODENSE", "k"]);
        p.same_value("k");
        p.cmd(&["PFCOUNT", "k"]);
    }
}

#[test]
fn wrong_types_and_arguments_get_redis_errors() {
    let mut p = Pair::new("wrong types");
    p.cmd(&["RPUSH", "list", "a"]);
    p.cmd(&["HSET", "hash", "f", "v"]);
    p.cmd(&["SADD", "set", "m"]);
    p.cmd(&["ZADD", "zset", "1", "m"]);
    p.cmd(&["SET", "str", "not an hll at all"]);
    p.cmd(&["PFADD", "hll", "x"]);
    for key in ["list", "hash", "set", "zset", "str"] {
        p.cmd(&["PFADD", key, "x"]);
        p.cmd(&["PFADD", key]);
        p.cmd(&["PFCOUNT", key]);
        p.cmd(&["PFCOUNT", "hll", key]);
        p.cmd(&["PFCOUNT", key, "hll"]);
        p.cmd(&["PFMERGE", key, "hll"]);
        p.cmd(&["PFMERGE", "hll", key]);
        p.cmd(&["PFMERGE", "fresh", "hll", key]);
        p.cmd(&["EXISTS", "fresh"]);
        p.cmd(&["PFDEBUG", "GETREG", key]);
        p.cmd(&["PFDEBUG", "NOPE", key]);
    }
    p.same_value("hll");
    p.cmd(&["PFDEBUG", "ENCODING", "missing"]);
    p.cmd(&["PFDEBUG", "nope", "missing"]);
    p.cmd(&["PFDEBUG", "GetReg", "hll", "extra"]);
    p.cmd(&["PFDEBUG", "decode"]);
    p.cmd(&["PFDEBUG", "EnCoDiNg", "hll"]);
    p.call(&[b"PFDEBUG", b"encoding\0tail", b"hll"]);
    p.call(&[b"PFDEBUG", b"bad\0tail", b"hll"]);
    p.cmd(&["PFADD"]);
    p.cmd(&["PFCOUNT"]);
    p.cmd(&["PFMERGE"]);
    p.cmd(&["PFSELFTEST", "x"]);
    p.cmd(&["PFMERGE", "only"]);
    p.same_value("only");
    p.cmd(&["PFADD", "bin", "\u{0}\u{ff}", "", "\r\n"]);
    p.same_value("bin");
    // Stored through SET, GET and APPEND like any string.
    p.cmd(&["APPEND", "hll", ""]);
    p.cmd(&["PFCOUNT", "hll"]);
    p.same_value("hll");
    p.cmd(&[
        "COMMAND",
        "INFO",
        "pfadd",
        "pfcount",
        "pfmerge",
        "pfdebug",
        "pfselftest",
    ]);
    p.cmd(&[
        "COMMAND",
        "DOCS",
        "pfadd",
        "pfcount",
        "pfmerge",
        "pfdebug",
        "pfselftest",
    ]);
    p.cmd(&["COMMAND", "GETKEYS", "PFMERGE", "d", "s1", "s2"]);
    p.cmd(&["COMMAND", "GETKEYS", "PFCOUNT", "a", "b"]);
    // ACL CAT lists in each server's own table order.
    let sorted = |reply: Reply| {
        let mut names: Vec<String> = reply.array().iter().map(Reply::text).collect();
        names.sort();
        names
    };
    assert_eq!(
        sorted(p.g.cmd(&["ACL", "CAT", "hyperloglog"])),
        sorted(p.r.cmd(&["ACL", "CAT", "hyperloglog"]))
    );
    // Key permissions follow the key specs: PFCOUNT's keys need read
    // access only, PFMERGE's destination read and write.
    p.cmd(&[
        "ACL",
        "SETUSER",
        "u",
        "+@all",
        "%R~read*",
        "%W~write*",
        "%RW~rw*",
    ]);
    for command in [
        &["PFCOUNT", "read", "read"][..],
        &["PFCOUNT", "write", "read"],
        &["PFCOUNT", "nothing"],
        &["PFADD", "write", "x"],
        &["PFADD", "read", "x"],
        &["PFMERGE", "write", "read"],
        &["PFMERGE", "rw", "read", "write"],
        &["PFDEBUG", "GETREG", "read"],
        &["PFSELFTEST"],
    ] {
        let mut args = vec!["ACL", "DRYRUN", "u"];
        args.extend_from_slice(command);
        p.cmd(&args);
    }
    p.cmd(&["ACL", "SETUSER", "h", "-@all", "+@hyperloglog"]);
    p.cmd(&["ACL", "DRYRUN", "h", "PFADD", "k"]);
    p.cmd(&["ACL", "DRYRUN", "h", "GET", "k"]);
    p.cmd(&["CONFIG", "GET", "hll-sparse-max-bytes"]);
    p.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "-1"]);
    p.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "2kb"]);
    p.cmd(&["CONFIG", "GET", "hll-sparse-max-bytes"]);
    p.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "x"]);
    assert_eq!(p.cmd(&["PFSELFTEST"]), Reply::Status("OK".into()));
}

#[test]
fn the_same_writes_invalidate_watches() {
    let mut p = Pair::new("watch");
    let mut g2 = Conn::connect(p.goblin.addr);
    let mut r2 = p.redis.conn();
    p.cmd(&["PFADD", "k", "a", "b", "c"]);
    // (command run by another client while k is watched, whether EXEC runs)
    let cases: &[(&[&str], bool)] = &[
        (&["PFCOUNT", "k"], false),         // refreshes the stale cache
        (&["PFCOUNT", "k"], true),          // answers from the cache
        (&["PFCOUNT", "k", "other"], true), // multi-key counts leave caches alone
        (&["PFADD", "k", "a"], true),       // no register changed
        (&["PFADD", "k", "zzz", "yyy"], false),
        (&["PFDEBUG", "ENCODING", "k"], true),
        (&["PFDEBUG", "TODENSE", "k"], true), // Redis signals no change here
        (&["PFMERGE", "k"], false),
        (&["PFMERGE", "other", "k"], true),
        (&["PFDEBUG", "GETREG", "k"], true),
    ];
    for (command, runs) in cases {
        p.cmd(&["WATCH", "k"]);
        let (g, r) = (g2.cmd(command), r2.cmd(command));
        assert_eq!(g, r, "{command:?}");
        p.cmd(&["MULTI"]);
        p.cmd(&["PING"]);
        let exec = p.cmd(&["EXEC"]);
        assert_eq!(exec != Reply::NilArray, *runs, "{command:?}: EXEC {exec:?}");
    }
}

/// Every file of the append-only directory, in name order.
fn aof_files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .filter(|f| f.to_string_lossy().ends_with(".incr.aof"))
        .map(|f| {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&f).unwrap())
        })
        .collect()
}

#[test]
fn the_append_only_file_holds_what_redis_writes() {
    let dir = |name: &str| {
        let d = std::env::temp_dir().join(format!(
            "goblin-hll-aof-{name}-{}-{}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let (goblin_dir, redis_dir) = (dir("goblin"), dir("redis"));
    let args = |d: &std::path::Path| {
        [
            "--dir".to_string(),
            d.to_str().unwrap().to_string(),
            "--appendonly".into(),
            "yes".into(),
            "--appendfsync".into(),
            "always".into(),
        ]
    };
    let (ga, ra) = (args(&goblin_dir), args(&redis_dir));
    let ga: Vec<&str> = ga.iter().map(String::as_str).collect();
    let ra: Vec<&str> = ra.iter().map(String::as_str).collect();
    let goblin = RedisProcess::start_program(env!("CARGO_BIN_EXE_goblin-server"), &ga);
    let redis = RedisProcess::start_with(&ra);
    let (mut g, mut r) = (goblin.conn(), redis.conn());
    let script = "redis.call('pfadd', KEYS[1], 'x', 'y'); return redis.call('pfcount', KEYS[1])";
    let corrupt = [&b"HYLL\x01"[..], &[0u8; 11], b"\x7f"].concat();
    r.call(&[&b"SET"[..], b"bad", &corrupt]);
    g.call(&[&b"SET"[..], b"bad", &corrupt]);
    for command in [
        &["PFADD", "k", "a", "b", "c"][..],
        &["PFADD", "k", "a"],
        &["PFCOUNT", "k"],
        &["PFCOUNT", "k"],
        &["PFCOUNT", "k", "k2"],
        &["PFADD", "k2"],
        &["PFMERGE", "k3", "k", "k2"],
        &["PFMERGE", "k3"],
        &["PFDEBUG", "ENCODING", "k3"],
        &["PFDEBUG", "TODENSE", "k3"],
        &["PFDEBUG", "TODENSE", "k3"],
        &["PFDEBUG", "GETREG", "k2"],
        &["PFCOUNT", "k3"],
        &["MULTI"],
        &["PFADD", "k4", "q"],
        &["PFCOUNT", "k4"],
        &["EXEC"],
        &["EVAL", script, "1", "k5"],
        &["PFADD", "bad", "x"],
        &["PFCOUNT", "bad"],
        &["PFCOUNT", "k5"],
    ] {
        assert_eq!(g.cmd(command), r.cmd(command), "{command:?}");
    }
    // appendfsync always: each write is in the file before its reply.
    let (gf, rf) = (aof_files(&goblin_dir), aof_files(&redis_dir));
    assert_eq!(
        gf.len(),
        1,
        "{:?}",
        gf.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert_eq!(gf[0].0, rf[0].0);
    assert_eq!(
        String::from_utf8_lossy(&gf[0].1),
        String::from_utf8_lossy(&rf[0].1)
    );
    drop((goblin, redis));
    let _ = std::fs::remove_dir_all(goblin_dir);
    let _ = std::fs::remove_dir_all(redis_dir);
}

#[test]
fn dump_payloads_carry_hlls_both_ways() {
    let mut p = Pair::new("dump");
    let mut rng = fastrand::Rng::with_seed(3);
    for n in [0usize, 5, 300, 5000] {
        p.cmd(&["DEL", "h", "back"]);
        p.pfadd("h", &elements(&mut rng, n));
        p.same_value("h");
        for (from_redis, dump) in [
            (true, p.r.cmd(&["DUMP", "h"])),
            (false, p.g.cmd(&["DUMP", "h"])),
        ] {
            let payload = dump.bulk().unwrap();
            let args: [&[u8]; 4] = [b"RESTORE", b"back", b"0", &payload];
            // Into the other server, then compare it with the original.
            let restored = if from_redis {
                p.g.call(&args)
            } else {
                p.r.call(&args)
            };
            assert_eq!(restored, Reply::Status("OK".into()), "n = {n}");
            let (g_back, r_h) = if from_redis {
                (p.g.cmd(&["GET", "back"]), p.r.cmd(&["GET", "h"]))
            } else {
                (p.r.cmd(&["GET", "back"]), p.g.cmd(&["GET", "h"]))
            };
            assert_eq!(g_back, r_h, "n = {n}");
            if from_redis {
                p.g.cmd(&["DEL", "back"]);
            } else {
                p.r.cmd(&["DEL", "back"]);
            }
        }
        p.cmd(&["PFCOUNT", "h"]);
    }
}

/// PFCOUNT is a read command that rewrites the cached cardinality in
/// place: a background save running meanwhile must still write the value
/// as it was when the save began, as Redis's forked child does.
#[test]
fn a_background_save_keeps_the_header_pfcount_rewrites_meanwhile() {
    let dir = std::env::temp_dir().join(format!(
        "goblin-hll-bgsave-{}-{}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = dir.to_str().unwrap();
    let goblin =
        RedisProcess::start_program(env!("CARGO_BIN_EXE_goblin-server"), &["--dir", dir_arg]);
    let mut g = goblin.conn();
    let keys: Vec<String> = (0..200).map(|i| format!("hll:{i}")).collect();
    for k in &keys {
        g.cmd(&["PFADD", k, "a", "b", "c"]);
    }
    let stale = Reply::Bulk(vec![0x80]);
    // The save walks one key every 5 ms: about a second for all of them.
    g.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "5000"]);
    assert_eq!(
        g.cmd(&["BGSAVE"]),
        Reply::Status("Background saving started".into())
    );
    for k in &keys {
        assert_eq!(g.cmd(&["GETRANGE", k, "15", "15"]), stale);
        assert_eq!(g.cmd(&["PFCOUNT", k]), Reply::Int(3));
        assert_eq!(g.cmd(&["GETRANGE", k, "15", "15"]), Reply::Bulk(vec![0]));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while g
        .cmd(&["INFO", "persistence"])
        .text()
        .contains("rdb_bgsave_in_progress:1")
    {
        assert!(std::time::Instant::now() < deadline, "BGSAVE never ended");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(g
        .cmd(&["INFO", "persistence"])
        .text()
        .contains("rdb_last_bgsave_status:ok"));
    drop(goblin);
    // Redis itself reads the file back: every cache is still stale there.
    let redis = RedisProcess::start_with(&["--dir", dir_arg]);
    let mut r = redis.conn();
    for k in &keys {
        assert_eq!(r.cmd(&["GETRANGE", k, "15", "15"]), stale, "{k}");
        assert_eq!(r.cmd(&["PFCOUNT", k]), Reply::Int(3));
    }
    drop(redis);
    let _ = std::fs::remove_dir_all(dir);
}
