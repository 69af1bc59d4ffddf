//! The module against goblin-server: the same seeded random sequences of
//! GOBLIN.* calls run on an in-process goblin-server and on Debian's
//! redis-server 7.0 with `libgoblin_module.so` loaded (the tests fail,
//! never skip, when redis-server is missing). Between the calls, the same
//! plain commands on both servers put the keys in every state that
//! matters: absent, present, expiring, already expired, another type, a
//! non-integer, the 64-bit edges; some calls have the wrong number of
//! arguments or a name in another case. After every step both servers
//! must have given the same reply, byte for byte, and hold the same keys
//! with the same types, values and TTLs.
//!
//! Both hosts run the same family code, so replies are compared exactly,
//! with one allowance forced by the clock: the servers read their clocks
//! a few milliseconds apart, so a deadline set during the sequence (a TTL,
//! a ZWINDOW lease, INCRTTL's remaining lifetime) may differ by the time
//! elapsed since the sequence began. The TTL arguments are spread 10^6 ms
//! apart (or are 1 ms, and the test then waits until it has run out on
//! both), so a wrong deadline misses by far more than that.

use crate::support;

use crate::support::common::TestServer;
use crate::support::goblin_support::{
    same_state, snapshot, Conn, RedisProcess, Reply, EDGES, LONG_TTLS, NOT_INTEGERS,
};
use std::time::{Duration, Instant};

const KEYS: &[&str] = &["k1", "k2"];
const FIELDS: &[&str] = &["f", "g"];

/// Both servers and the history of one sequence.
struct Differ {
    name: &'static str,
    seed: u64,
    rng: fastrand::Rng,
    _goblin: TestServer,
    _redis: RedisProcess,
    g: Conn,
    r: Conn,
    started: Instant,
    history: Vec<String>,
}

impl Differ {
    fn new(name: &'static str, seed: u64) -> Differ {
        let goblin = TestServer::start();
        let redis = support::redis_with_module(&[]);
        Differ {
            name,
            seed,
            rng: fastrand::Rng::with_seed(seed),
            g: Conn::connect(goblin.addr),
            r: redis.conn(),
            _goblin: goblin,
            _redis: redis,
            started: Instant::now(),
            history: Vec::new(),
        }
    }

    fn fail(&self, what: String) -> ! {
        let from = self.history.len().saturating_sub(25);
        panic!(
            "{} (seed {:#x}): {what}\nlast steps:\n  {}",
            self.name,
            self.seed,
            self.history[from..].join("\n  ")
        );
    }

    /// Two correct deadlines differ by at most this (see the module doc).
    fn tolerance(&self) -> i64 {
        self.started.elapsed().as_millis() as i64 + 1
    }

    fn key(&mut self) -> &'static str {
        KEYS[self.rng.usize(..KEYS.len())]
    }

    /// A plain command on both servers; the replies must agree.
    fn both(&mut self, args: &[&str]) {
        self.history.push(format!("both {args:?}"));
        let a = self.g.cmd(args);
        let b = self.r.cmd(args);
        if a != b {
            self.fail(format!("setup {args:?}: goblin {a:?}, module {b:?}"));
        }
    }

    /// Waits until `ms` have passed on both servers' clocks.
    fn wait_past(&mut self, ms: i64) {
        for conn in [&mut self.g, &mut self.r] {
            let target = conn.time_ms() + ms;
            while conn.time_ms() <= target {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// One GOBLIN.* call on both, then every key compared.
    fn call(&mut self, args: &[String]) {
        self.history.push(args.join(" "));
        let got = self.g.call(args);
        let want = self.r.call(args);
        self.history
            .push(format!("  -> goblin {got:?}, module {want:?}"));
        let same = match (&got, &want) {
            // INCRTTL: [value, remaining ms].
            (Reply::Array(g), Reply::Array(r)) if g.len() == 2 && r.len() == 2 => {
                g[0] == r[0] && (g[1].int() - r[1].int()).abs() <= 2 * self.tolerance()
            }
            _ => got == want,
        };
        if !same {
            self.fail(format!("replies differ: goblin {got:?}, module {want:?}"));
        }
        // A 1 ms TTL (argument 3 of the three commands that take one) is
        // waited out, so that the keys are compared in a settled state.
        let lower = args[0].to_ascii_lowercase();
        let has_ttl = ["goblin.incrttl", "goblin.cae", "goblin.zwindow"].contains(&lower.as_str());
        if has_ttl && args.get(3).is_some_and(|a| a == "1") {
            self.wait_past(1);
        }
        self.compare_keys();
    }

    fn compare_keys(&mut self) {
        let tolerance = self.tolerance();
        for key in KEYS {
            let g = snapshot(&mut self.g, key);
            let r = snapshot(&mut self.r, key);
            if !same_state(&g, &r, tolerance) {
                self.fail(format!(
                    "key {key} differs (tolerance {tolerance} ms):\n  goblin {g:?}\n  module {r:?}"
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Arguments and stored values (the shared ones are in goblin_support).

const TOKENS: &[&str] = &["owner-a", "owner-b", "", "1", "1.0", "OWNER-A", "\0bin\x7f"];

const NUMBERS: &[&str] = &[
    "1.5",
    "-2.25",
    "1e3",
    "1000",
    "3.0",
    "0x10",
    "-0",
    "9007199254740993",
    "9223372036854775807",
    "9223372036854775808",
    "1e300",
    "inf",
    "nan",
    " 5",
    "1e400",
];

const HOLDERS: &[&str] = &["a", "b", "c", "d"];

/// A lease deadline far in the future (2100-01-01), the same on both.
const FAR_DEADLINE: &str = "4102444800000";

fn pick(rng: &mut fastrand::Rng, items: &[&str]) -> String {
    items[rng.usize(..items.len())].to_string()
}

/// An integer argument or stored value: mostly small, sometimes an edge,
/// sometimes not an integer at all.
fn integer(rng: &mut fastrand::Rng) -> String {
    match rng.u32(..100) {
        0..=54 => rng.i64(-5..=12).to_string(),
        55..=69 => EDGES[rng.usize(..EDGES.len())].to_string(),
        70..=84 => rng.i64(-1_000_000..=1_000_000).to_string(),
        _ => pick(rng, NOT_INTEGERS),
    }
}

/// A TTL argument: long, 1 ms (then waited out), or invalid.
fn ttl(rng: &mut fastrand::Rng) -> String {
    match rng.u32(..100) {
        0..=64 => LONG_TTLS[rng.usize(..LONG_TTLS.len())].to_string(),
        65..=74 => "1".to_string(),
        _ => pick(
            rng,
            &[
                "0",
                "-1",
                "abc",
                "1.5",
                "",
                "9223372036854775807",
                "-9223372036854775808",
            ],
        ),
    }
}

/// Any value a key or field may hold.
fn value(rng: &mut fastrand::Rng) -> String {
    match rng.u32(..3) {
        0 => integer(rng),
        1 => pick(rng, TOKENS),
        _ => pick(rng, NUMBERS),
    }
}

/// Puts a random key in a random state, of any type.
fn setup(d: &mut Differ) {
    let key = d.key();
    let v = value(&mut d.rng);
    let field = pick(&mut d.rng, FIELDS);
    let holder = pick(&mut d.rng, HOLDERS);
    let long = LONG_TTLS[d.rng.usize(..LONG_TTLS.len())].to_string();
    match d.rng.u32(..100) {
        0..=19 => d.both(&["SET", key, &v]),
        20..=27 => d.both(&["SET", key, &v, "PX", &long]),
        28..=32 => {
            d.both(&["SET", key, &v, "PX", "1"]);
            d.wait_past(1);
        }
        33..=42 => d.both(&["DEL", key]),
        43..=54 => {
            if d.g.cmd(&["TYPE", key]).text() != "hash" {
                d.both(&["DEL", key]);
            }
            d.both(&["HSET", key, &field, &v]);
        }
        55..=58 => d.both(&["HDEL", key, &field]),
        59..=68 => {
            if d.g.cmd(&["TYPE", key]).text() != "zset" {
                d.both(&["DEL", key]);
            }
            let score = if d.rng.bool() { "1000" } else { FAR_DEADLINE };
            d.both(&["ZADD", key, score, &holder]);
        }
        69..=72 => d.both(&["ZREM", key, &holder]),
        73..=76 => {
            d.both(&["DEL", key]);
            d.both(&["SADD", key, &v]);
        }
        77..=84 => d.both(&["PEXPIRE", key, &long]),
        85..=88 => {
            d.both(&["PEXPIRE", key, "1"]);
            d.wait_past(1);
        }
        _ => d.both(&["PERSIST", key]),
    }
}

/// The arguments of one call of `command` (after the name).
fn arguments(d: &mut Differ, command: &str) -> Vec<String> {
    let key = d.key().to_string();
    let rng = &mut d.rng;
    let small = |rng: &mut fastrand::Rng, lo: i64, hi: i64| {
        if rng.bool() {
            rng.i64(lo..=hi).to_string()
        } else {
            integer(rng)
        }
    };
    let mut args = vec![key];
    match command {
        "goblin.decrpos" => {}
        "goblin.decrbypos" => args.push(small(rng, -1, 5)),
        "goblin.decrby" => args.push(if rng.u32(..4) == 0 {
            i64::MIN.to_string()
        } else {
            integer(rng)
        }),
        "goblin.incrbound" => {
            args.push(small(rng, -3, 5));
            args.push(small(rng, -2, 15));
        }
        "goblin.incrttl" => {
            args.push(small(rng, -2, 5));
            args.push(ttl(rng));
        }
        "goblin.cad" => args.push(pick(rng, TOKENS)),
        "goblin.cae" => {
            args.push(pick(rng, TOKENS));
            args.push(ttl(rng));
        }
        "goblin.hcad" => {
            args.push(pick(rng, FIELDS));
            args.push(pick(rng, TOKENS));
        }
        "goblin.hcas" => {
            args.push(pick(rng, FIELDS));
            args.push(pick(rng, TOKENS));
            args.push(pick(rng, TOKENS));
        }
        "goblin.hsetgt" => {
            args.push(pick(rng, FIELDS));
            args.push(if rng.bool() {
                rng.i64(-3..=10).to_string()
            } else {
                pick(rng, NUMBERS)
            });
        }
        "goblin.zwindow" => {
            args.push(match rng.u32(..100) {
                0..=84 => rng.i64(1..=3).to_string(),
                _ => pick(rng, &["0", "-1", "abc", "9223372036854775807"]),
            });
            args.push(ttl(rng));
            args.push(pick(rng, HOLDERS));
        }
        other => panic!("no arguments for {other}"),
    }
    args
}

const CALLS: usize = 300;

/// Runs `CALLS` calls drawn from `commands`, each preceded with
/// probability 2/5 by a change of some key's state; one call in 20 has an
/// argument too many or too few, one in 8 its name in upper case.
fn run(name: &'static str, seed: u64, commands: &[&'static str]) {
    let mut d = Differ::new(name, seed);
    for _ in 0..CALLS {
        if d.rng.u32(..5) < 2 {
            setup(&mut d);
        }
        let command = commands[d.rng.usize(..commands.len())];
        let mut args = arguments(&mut d, command);
        match d.rng.u32(..40) {
            0 => args.push("extra".into()),
            1 => {
                args.pop();
            }
            _ => {}
        }
        let name = if d.rng.u32(..8) == 0 {
            command.to_uppercase()
        } else {
            command.to_string()
        };
        args.insert(0, name);
        d.call(&args);
    }
}

#[test]
fn counters_match_goblin_server() {
    run(
        "counters",
        0xc0,
        &[
            "goblin.decrpos",
            "goblin.decrbypos",
            "goblin.decrby",
            "goblin.incrbound",
        ],
    );
}

#[test]
fn incrttl_matches_goblin_server() {
    run("incrttl", 0x177, &["goblin.incrttl", "goblin.decrpos"]);
}

#[test]
fn locks_match_goblin_server() {
    run("locks", 0x10c, &["goblin.cad", "goblin.cae"]);
}

#[test]
fn hash_commands_match_goblin_server() {
    run(
        "hashes",
        0x4a5,
        &["goblin.hcad", "goblin.hcas", "goblin.hsetgt"],
    );
}

#[test]
fn zwindow_matches_goblin_server() {
    run("zwindow", 0x2d1d, &["goblin.zwindow"]);
}

#[test]
fn every_command_on_shared_keys_matches_goblin_server() {
    let all: Vec<&'static str> = goblin_family::COMMANDS.iter().map(|c| c.name).collect();
    run("all", 0xa11, &all);
}

#[test]
fn an_unknown_or_short_call_matches_goblin_server() {
    let mut d = Differ::new("arity", 0);
    for command in goblin_family::COMMANDS {
        for n in 0..=command.arity as usize + 1 {
            if n + 1 == command.arity as usize {
                continue;
            }
            let mut args = vec![command.name.to_string()];
            args.extend((0..n).map(|i| format!("a{i}")));
            d.call(&args);
        }
    }
}
