//! Every GOBLIN.* command gives a script the reply it gives a client.
//!
//! One server, two databases that always hold the same data: database 0 is
//! driven with the commands themselves, database 1 with the same commands
//! relayed by a script (`redis.pcall(unpack(ARGV))`, through EVAL, EVALSHA
//! and a FUNCTION alternately). A seeded random sequence changes the keys'
//! states between calls (absent, a number, not a number, expiring, another
//! type); after every call both replies and both databases must be equal.
//!
//! Lua holds numbers as doubles, so an integer reply beyond 2^53 cannot
//! cross a script unchanged (on Redis as on Goblin); the values used here
//! stay well inside that range. Deadlines set by the two calls are read
//! from the clock a moment apart and are compared within `TOLERANCE_MS`;
//! the TTL arguments are at least 100 000 ms, so a wrong deadline misses by
//! far more.

use crate::common::TestServer;
use crate::goblin_support::{snapshot, Conn, Data, KeyState, Reply};

const RELAY: &str = "return redis.pcall(unpack(ARGV))";
const LIBRARY: &str = "#!lua name=relay\n\
    redis.register_function('relay', function(keys, args) return redis.pcall(unpack(args)) end)";
const KEYS: &[&str] = &["s1", "s2", "h1", "z1"];
const TOLERANCE_MS: i64 = 1_000;

struct Pair {
    direct: Conn,
    scripted: Conn,
    sha: String,
    rng: fastrand::Rng,
    /// Calls whose two replies were not errors (the sequence must exercise
    /// the successful paths, not only the refusals).
    succeeded: usize,
}

impl Pair {
    fn new(server: &TestServer, seed: u64) -> Pair {
        let mut direct = Conn::connect(server.addr);
        let mut scripted = Conn::connect(server.addr);
        assert_eq!(direct.cmd(&["FLUSHALL"]), Reply::Status("OK".into()));
        assert_eq!(scripted.cmd(&["SELECT", "1"]), Reply::Status("OK".into()));
        let sha = scripted.cmd(&["SCRIPT", "LOAD", RELAY]).text();
        let _ = scripted.cmd(&["FUNCTION", "DELETE", "relay"]);
        assert_eq!(
            scripted.cmd(&["FUNCTION", "LOAD", LIBRARY]),
            Reply::Bulk(b"relay".to_vec())
        );
        Pair {
            direct,
            scripted,
            sha,
            rng: fastrand::Rng::with_seed(seed),
            succeeded: 0,
        }
    }

    /// A plain command on both databases, with the same reply.
    fn both(&mut self, args: &[&str]) {
        let a = self.direct.cmd(args);
        let b = self.scripted.cmd(args);
        assert_eq!(a, b, "{args:?}");
    }

    /// The command directly, then through a script; returns both replies.
    fn call(&mut self, args: &[String]) -> (Reply, Reply) {
        let direct = self.direct.call(args);
        let mut relayed: Vec<String> = match self.rng.u32(..3) {
            0 => vec!["EVAL".into(), RELAY.into(), "0".into()],
            1 => vec!["EVALSHA".into(), self.sha.clone(), "0".into()],
            _ => vec!["FCALL".into(), "relay".into(), "0".into()],
        };
        relayed.extend(args.iter().cloned());
        let scripted = self.scripted.call(&relayed);
        (direct, scripted)
    }

    fn key_states(&mut self) -> Vec<(KeyState, KeyState)> {
        KEYS.iter()
            .map(|k| {
                (
                    snapshot(&mut self.direct, k),
                    snapshot(&mut self.scripted, k),
                )
            })
            .collect()
    }
}

/// Two states that differ at most by the moment their deadlines were
/// computed.
fn same_state(a: &KeyState, b: &KeyState) -> bool {
    let close = |x: i64, y: i64| x == y || (x > 0 && y > 0 && (x - y).abs() <= TOLERANCE_MS);
    if !close(a.expire_at, b.expire_at) {
        return false;
    }
    match (&a.data, &b.data) {
        (Data::ZSet(x), Data::ZSet(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|((mx, sx), (my, sy))| {
                    mx == my && (sx == sy || (sx - sy).abs() <= TOLERANCE_MS as f64)
                })
        }
        (x, y) => x == y,
    }
}

/// Two replies that are equal, but for the remaining lifetime GOBLIN.INCRTTL
/// reports, read a moment apart.
fn same_reply(command: &str, a: &Reply, b: &Reply) -> bool {
    match (command, a, b) {
        ("GOBLIN.INCRTTL", Reply::Array(x), Reply::Array(y)) if x.len() == 2 && y.len() == 2 => {
            x[0] == y[0] && (x[1].int() - y[1].int()).abs() <= TOLERANCE_MS
        }
        _ => a == b,
    }
}

fn number(rng: &mut fastrand::Rng) -> String {
    match rng.u32(..20) {
        0 => "abc".into(),
        1 => "1.5".into(),
        2 => "-0".into(),
        _ => rng.i64(-5..=20).to_string(),
    }
}

fn ttl(rng: &mut fastrand::Rng) -> String {
    match rng.u32(..20) {
        0 => "0".into(),
        1 => "-5".into(),
        2 => "x".into(),
        n => (u64::from(n) * 100_000).to_string(),
    }
}

/// Puts one key of both databases in a random state.
fn change_state(p: &mut Pair) {
    let key = KEYS[p.rng.usize(..KEYS.len())];
    if p.rng.bool() {
        // Back to the kind of value its name suggests.
        let value = number(&mut p.rng);
        p.both(&["DEL", key]);
        match key {
            "h1" => p.both(&["HSET", key, "f", &value, "g", "holder-a"]),
            "z1" => p.both(&["ZADD", key, "1000", "holder-a", "4102444800000", "holder-b"]),
            _ => p.both(&["SET", key, &value]),
        }
        return;
    }
    let value = number(&mut p.rng);
    let field = ["f", "g"][p.rng.usize(..2)];
    match p.rng.u32(..9) {
        0 => p.both(&["DEL", key]),
        1 => {
            p.both(&["DEL", key]);
            p.both(&["SET", key, &value]);
        }
        2 => p.both(&["PEXPIRE", key, "900000"]),
        3 => p.both(&["PERSIST", key]),
        4 => {
            p.both(&["DEL", key]);
            p.both(&["HSET", key, field, &value]);
        }
        5 => {
            p.both(&["DEL", key]);
            p.both(&["ZADD", key, "1000", "a", "4102444800000", "b"]);
        }
        6 => {
            p.both(&["DEL", key]);
            p.both(&["RPUSH", key, "x"]);
        }
        7 => {
            p.both(&["DEL", key]);
            p.both(&["SET", key, "holder-a"]);
        }
        _ => {
            p.both(&["DEL", key]);
            p.both(&["HSET", key, "f", "holder-a", "g", "7"]);
        }
    }
}

/// A random call of a random family command on a random key.
fn family_call(rng: &mut fastrand::Rng) -> Vec<String> {
    let command = rng.u32(..11);
    // Mostly a key of the command's own type's usual name; sometimes any.
    let key = if rng.u32(..5) == 0 {
        KEYS[rng.usize(..KEYS.len())]
    } else {
        match command {
            0..=6 => ["s1", "s2"][rng.usize(..2)],
            7..=9 => "h1",
            _ => "z1",
        }
    }
    .to_string();
    let field = ["f", "g"][rng.usize(..2)].to_string();
    let holder = ["holder-a", "holder-b", "holder-c"][rng.usize(..3)].to_string();
    let expected = if rng.bool() {
        holder.clone()
    } else {
        number(rng)
    };
    let s = |v: &str| v.to_string();
    match command {
        0 => vec![s("GOBLIN.DECRPOS"), key],
        1 => vec![s("GOBLIN.DECRBYPOS"), key, number(rng)],
        2 => vec![s("GOBLIN.DECRBY"), key, number(rng)],
        3 => vec![s("GOBLIN.INCRBOUND"), key, number(rng), number(rng)],
        4 => vec![s("GOBLIN.INCRTTL"), key, number(rng), ttl(rng)],
        5 => vec![s("GOBLIN.CAD"), key, expected],
        6 => vec![s("GOBLIN.CAE"), key, expected, ttl(rng)],
        7 => vec![s("GOBLIN.HCAD"), key, field, expected],
        8 => vec![s("GOBLIN.HCAS"), key, field, expected, number(rng)],
        9 => vec![s("GOBLIN.HSETGT"), key, field, number(rng)],
        _ => {
            let limit = ["1", "2", "3", "0", "x"][rng.usize(..5)];
            vec![s("GOBLIN.ZWINDOW"), key, s(limit), ttl(rng), holder]
        }
    }
}

#[test]
fn every_family_command_replies_the_same_inside_a_script() {
    let server = TestServer::start();
    let mut p = Pair::new(&server, 0x5c21);
    let mut seen = std::collections::BTreeSet::new();
    for step in 0..3_000 {
        if p.rng.u32(..5) < 2 {
            change_state(&mut p);
        }
        let args = family_call(&mut p.rng);
        let (direct, scripted) = p.call(&args);
        assert!(
            same_reply(&args[0], &direct, &scripted),
            "step {step}: {args:?}\n  direct: {direct:?}\n  script: {scripted:?}"
        );
        if !matches!(direct, Reply::Error(_)) {
            p.succeeded += 1;
            seen.insert(args[0].clone());
        }
        for (key, (a, b)) in KEYS.iter().zip(p.key_states()) {
            assert!(
                same_state(&a, &b),
                "step {step}: {args:?} left {key} as\n  direct: {a:?}\n  script: {b:?}"
            );
        }
    }
    assert_eq!(
        seen.len(),
        11,
        "every command succeeded at least once: {seen:?}"
    );
    assert!(p.succeeded > 1_000, "{} successful calls", p.succeeded);
}

#[test]
fn family_errors_keep_their_text_inside_a_script() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    c.cmd(&["SET", "s", "abc"]);
    c.cmd(&["HSET", "h", "f", "v"]);
    for args in [
        vec!["GOBLIN.DECRPOS", "s"],
        vec!["GOBLIN.DECRPOS", "h"],
        vec!["GOBLIN.INCRTTL", "n", "1", "0"],
        vec!["GOBLIN.ZWINDOW", "z", "0", "1000", "a"],
        vec!["GOBLIN.HSETGT", "h", "f", "x"],
    ] {
        let direct = c.cmd(&args);
        let Reply::Error(text) = &direct else {
            panic!("{args:?} should fail, got {direct:?}");
        };
        let mut relayed = vec!["EVAL", RELAY, "0"];
        relayed.extend(&args);
        assert_eq!(c.cmd(&relayed), direct, "{args:?} through redis.pcall");
        // redis.call raises it: the client gets the text with the script's
        // position appended, as Redis 7 does for every command.
        let raised = c.cmd(
            &["EVAL", "return redis.call(unpack(ARGV))", "0"]
                .iter()
                .chain(&args)
                .copied()
                .collect::<Vec<_>>(),
        );
        match raised {
            Reply::Error(t) => assert!(t.starts_with(text.as_str()), "{t} / {text}"),
            other => panic!("{other:?}"),
        }
    }
}
