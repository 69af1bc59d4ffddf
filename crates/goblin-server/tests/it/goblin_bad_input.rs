//! Bad input to the GOBLIN.* commands: every wrong arity, non-integer,
//! non-number, zero or negative time, overflow and wrong type gets the
//! contract's error text exactly, and leaves every key as it was: the
//! same value and the same absolute expiry (PEXPIRETIME), and no key
//! created.

use crate::common::TestServer;
use crate::goblin_support::{snapshot, Conn, KeyState, Reply};

const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const OVERFLOW: &str = "ERR increment or decrement would overflow";
const AMOUNT: &str = "ERR amount must be a positive integer";
const LIMIT: &str = "ERR limit must be a positive integer";
const NOT_A_NUMBER: &str = "ERR value is not a valid number";
const HASH_NOT_A_NUMBER: &str = "ERR hash value is not a valid number";

fn expire_time(command: &str) -> String {
    format!("ERR invalid expire time in '{command}' command")
}

/// Text Redis's string2ll rejects (and so every integer argument).
const NOT_INTEGERS: &[&str] = &[
    "abc",
    "",
    "1.5",
    "1e3",
    " 5",
    "5 ",
    "+5",
    "007",
    "-0",
    "0x10",
    "5\0",
    "9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999",
];

/// Times that are integers but not >= 1.
const NOT_POSITIVE: &[&str] = &["0", "-1", "-1000", "-9223372036854775808"];

/// The keys every check looks at: one of each kind, most with a TTL.
const KEYS: &[&str] = &[
    "counter", "plain", "text", "min", "max", "lock", "hash", "set", "zset", "absent",
];

struct Fixture {
    _server: TestServer,
    c: Conn,
}

impl Fixture {
    fn new() -> Fixture {
        let server = TestServer::start();
        let mut c = Conn::connect(server.addr);
        for setup in [
            &["SET", "counter", "10", "PX", "100000000"][..],
            &["SET", "plain", "5"],
            &["SET", "text", "abc", "PX", "200000000"],
            &["SET", "min", "-9223372036854775808", "PX", "300000000"],
            &["SET", "max", "9223372036854775807"],
            &["SET", "lock", "owner-a", "PX", "400000000"],
            &["HSET", "hash", "f", "7", "g", "x"],
            &["PEXPIRE", "hash", "500000000"],
            &["SADD", "set", "a"],
            &["ZADD", "zset", "4102444800000", "a"],
            &["PEXPIRE", "zset", "600000000"],
        ] {
            assert!(!matches!(c.cmd(setup), Reply::Error(_)), "setup {setup:?}");
        }
        Fixture { _server: server, c }
    }

    fn state(&mut self) -> Vec<KeyState> {
        KEYS.iter().map(|k| snapshot(&mut self.c, k)).collect()
    }

    /// Sends `args`, asserts the error text exactly, and that no key
    /// changed.
    fn rejects(&mut self, args: &[&str], error: &str) {
        let before = self.state();
        let reply = self.c.cmd(args);
        assert_eq!(reply, Reply::Error(error.to_string()), "reply to {args:?}");
        let after = self.state();
        for ((key, b), a) in KEYS.iter().zip(&before).zip(&after) {
            assert_eq!(b, a, "{args:?} changed key {key}");
        }
    }
}

/// The arguments after the command name of a valid call, for each command.
const VALID: &[(&str, &[&str])] = &[
    ("goblin.decrpos", &["counter"]),
    ("goblin.decrbypos", &["counter", "1"]),
    ("goblin.decrby", &["counter", "1"]),
    ("goblin.incrbound", &["counter", "1", "100"]),
    ("goblin.incrttl", &["counter", "1", "1000"]),
    ("goblin.cad", &["lock", "owner-a"]),
    ("goblin.cae", &["lock", "owner-a", "1000"]),
    ("goblin.hcad", &["hash", "f", "7"]),
    ("goblin.hcas", &["hash", "f", "7", "8"]),
    ("goblin.hsetgt", &["hash", "f", "9"]),
    ("goblin.zwindow", &["zset", "5", "1000", "b"]),
];

#[test]
fn wrong_arity_is_rejected_with_redis_text() {
    let mut f = Fixture::new();
    for (name, args) in VALID {
        let error = format!("ERR wrong number of arguments for '{name}' command");
        // Every shorter call, down to the bare name, and one argument too
        // many; the name in any case.
        for n in 0..args.len() {
            let mut call = vec![*name];
            call.extend(&args[..n]);
            f.rejects(&call, &error);
        }
        let upper = name.to_uppercase();
        let mut call = vec![upper.as_str()];
        call.extend(*args);
        call.push("extra");
        f.rejects(&call, &error);
        let mixed = format!("Goblin.{}", &name["goblin.".len()..]);
        f.rejects(&[mixed.as_str()], &error);
    }
}

#[test]
fn stored_values_that_are_not_integers_are_rejected() {
    let mut f = Fixture::new();
    for stored in NOT_INTEGERS {
        // Replaced before the checks: a key with a TTL, so a call that
        // touched it would show.
        f.c.call(&[
            b"SET".as_slice(),
            b"text",
            stored.as_bytes(),
            b"PX",
            b"200000000",
        ]);
        for call in [
            &["goblin.decrpos", "text"][..],
            &["goblin.decrbypos", "text", "1"],
            &["goblin.decrby", "text", "1"],
            &["goblin.decrby", "text", "-9223372036854775808"],
            &["goblin.incrbound", "text", "1", "100"],
            &["goblin.incrbound", "text", "-1", "100"],
            &["goblin.incrttl", "text", "1", "1000"],
            &["goblin.incrttl", "text", "0", "1000"],
        ] {
            let call: Vec<&[u8]> = call.iter().map(|a| a.as_bytes()).collect();
            let before = f.state();
            assert_eq!(
                f.c.call(&call),
                Reply::Error(NOT_INTEGER.into()),
                "{call:?} on {stored:?}"
            );
            assert_eq!(before, f.state(), "{call:?} on {stored:?} changed a key");
        }
    }
}

#[test]
fn decrbypos_amount_must_be_a_positive_integer() {
    let mut f = Fixture::new();
    for amount in NOT_INTEGERS {
        f.rejects(&["goblin.decrbypos", "counter", amount], NOT_INTEGER);
        f.rejects(&["goblin.decrbypos", "absent", amount], NOT_INTEGER);
    }
    for amount in NOT_POSITIVE {
        f.rejects(&["goblin.decrbypos", "counter", amount], AMOUNT);
        f.rejects(&["goblin.decrbypos", "absent", amount], AMOUNT);
    }
    // The amount is checked before the key: a bad amount on a key of the
    // wrong type, or holding a non-integer, is the amount's error.
    f.rejects(&["goblin.decrbypos", "hash", "0"], AMOUNT);
    f.rejects(&["goblin.decrbypos", "text", "x"], NOT_INTEGER);
    f.rejects(&["goblin.decrbypos", "hash", "1"], WRONGTYPE);
}

#[test]
fn incrbound_arguments_and_overflow() {
    let mut f = Fixture::new();
    for bad in NOT_INTEGERS {
        f.rejects(&["goblin.incrbound", "counter", bad, "100"], NOT_INTEGER);
        f.rejects(&["goblin.incrbound", "counter", "1", bad], NOT_INTEGER);
        f.rejects(&["goblin.incrbound", "absent", bad, "100"], NOT_INTEGER);
    }
    // Below the 64-bit minimum: the overflow error, nothing created.
    f.rejects(&["goblin.incrbound", "min", "-1", "0"], OVERFLOW);
    f.rejects(
        &[
            "goblin.incrbound",
            "min",
            "-9223372036854775808",
            "9223372036854775807",
        ],
        OVERFLOW,
    );
    f.rejects(&["goblin.incrbound", "hash", "1", "100"], WRONGTYPE);
    f.rejects(&["goblin.incrbound", "hash", "x", "100"], NOT_INTEGER);
}

#[test]
fn incrttl_arguments_times_and_overflow() {
    let mut f = Fixture::new();
    let error = expire_time("goblin.incrttl");
    for bad in NOT_INTEGERS {
        f.rejects(&["goblin.incrttl", "counter", bad, "1000"], NOT_INTEGER);
        f.rejects(&["goblin.incrttl", "counter", "1", bad], NOT_INTEGER);
        f.rejects(&["goblin.incrttl", "absent", "1", bad], NOT_INTEGER);
    }
    for ms in NOT_POSITIVE {
        f.rejects(&["goblin.incrttl", "counter", "1", ms], &error);
        f.rejects(&["goblin.incrttl", "plain", "1", ms], &error);
        f.rejects(&["goblin.incrttl", "absent", "1", ms], &error);
    }
    // now + ms beyond 64 bits is an invalid time too.
    f.rejects(
        &["goblin.incrttl", "absent", "1", "9223372036854775807"],
        &error,
    );
    // Overflow leaves the value and adds no TTL ("max" and "plain" have
    // none).
    f.rejects(&["goblin.incrttl", "max", "1", "1000"], OVERFLOW);
    f.rejects(&["goblin.incrttl", "min", "-1", "1000"], OVERFLOW);
    f.rejects(
        &["goblin.incrttl", "plain", "9223372036854775807", "1000"],
        OVERFLOW,
    );
    f.rejects(&["goblin.incrttl", "hash", "1", "1000"], WRONGTYPE);
    f.rejects(&["goblin.incrttl", "zset", "1", "1000"], WRONGTYPE);
    // Arguments first: a bad time on a wrong-type key is the time's error.
    f.rejects(&["goblin.incrttl", "hash", "1", "0"], &error);
}

#[test]
fn cad_and_cae_arguments_and_types() {
    let mut f = Fixture::new();
    let error = expire_time("goblin.cae");
    for bad in NOT_INTEGERS {
        f.rejects(&["goblin.cae", "lock", "owner-a", bad], NOT_INTEGER);
    }
    for ms in NOT_POSITIVE {
        f.rejects(&["goblin.cae", "lock", "owner-a", ms], &error);
        f.rejects(&["goblin.cae", "absent", "owner-a", ms], &error);
    }
    f.rejects(
        &["goblin.cae", "lock", "owner-a", "9223372036854775807"],
        &error,
    );
    f.rejects(&["goblin.cae", "hash", "owner-a", "0"], &error);
    for key in ["hash", "set", "zset"] {
        f.rejects(&["goblin.cad", key, "owner-a"], WRONGTYPE);
        f.rejects(&["goblin.cae", key, "owner-a", "1000"], WRONGTYPE);
    }
}

#[test]
fn hash_commands_reject_other_types() {
    let mut f = Fixture::new();
    for key in ["counter", "lock", "set", "zset"] {
        f.rejects(&["goblin.hcad", key, "f", "7"], WRONGTYPE);
        f.rejects(&["goblin.hcas", key, "f", "7", "8"], WRONGTYPE);
        f.rejects(&["goblin.hsetgt", key, "f", "9"], WRONGTYPE);
    }
}

#[test]
fn hsetgt_value_must_be_a_number() {
    let mut f = Fixture::new();
    for bad in [
        "abc", "", "inf", "-inf", "+inf", "nan", "NaN", " 5", "5 ", "1,5", "--1", "0x", "1e400",
        "-1e400", "1e-400", "5\0",
    ] {
        f.rejects(&["goblin.hsetgt", "hash", "f", bad], NOT_A_NUMBER);
        f.rejects(&["goblin.hsetgt", "hash", "new", bad], NOT_A_NUMBER);
        f.rejects(&["goblin.hsetgt", "absent", "f", bad], NOT_A_NUMBER);
        // The argument is checked before the key's type.
        f.rejects(&["goblin.hsetgt", "counter", "f", bad], NOT_A_NUMBER);
    }
    // A field holding something that is not a number ("g" holds "x").
    f.rejects(&["goblin.hsetgt", "hash", "g", "1"], HASH_NOT_A_NUMBER);
    f.rejects(&["goblin.hsetgt", "hash", "g", "1e300"], HASH_NOT_A_NUMBER);
    for stored in ["inf", "nan", "", " 1", "1e400"] {
        f.c.cmd(&["HSET", "hash", "g", stored]);
        f.rejects(&["goblin.hsetgt", "hash", "g", "1"], HASH_NOT_A_NUMBER);
    }
}

#[test]
fn zwindow_arguments_and_types() {
    let mut f = Fixture::new();
    let error = expire_time("goblin.zwindow");
    for bad in NOT_INTEGERS {
        f.rejects(&["goblin.zwindow", "zset", bad, "1000", "b"], NOT_INTEGER);
        f.rejects(&["goblin.zwindow", "zset", "5", bad, "b"], NOT_INTEGER);
        f.rejects(&["goblin.zwindow", "absent", "5", bad, "b"], NOT_INTEGER);
    }
    for n in NOT_POSITIVE {
        f.rejects(&["goblin.zwindow", "zset", n, "1000", "b"], LIMIT);
        f.rejects(&["goblin.zwindow", "absent", n, "1000", "b"], LIMIT);
        f.rejects(&["goblin.zwindow", "zset", "5", n, "b"], &error);
        f.rejects(&["goblin.zwindow", "absent", "5", n, "b"], &error);
    }
    f.rejects(
        &["goblin.zwindow", "zset", "5", "9223372036854775807", "b"],
        &error,
    );
    // The limit first, then the time, then the key.
    f.rejects(&["goblin.zwindow", "zset", "0", "x", "b"], LIMIT);
    f.rejects(&["goblin.zwindow", "zset", "x", "0", "b"], NOT_INTEGER);
    f.rejects(&["goblin.zwindow", "counter", "1", "0", "b"], &error);
    for key in ["counter", "hash", "set"] {
        f.rejects(&["goblin.zwindow", key, "5", "1000", "b"], WRONGTYPE);
    }
}

#[test]
fn decrpos_and_incrbound_reject_other_types() {
    let mut f = Fixture::new();
    for key in ["hash", "set", "zset"] {
        f.rejects(&["goblin.decrpos", key], WRONGTYPE);
        f.rejects(&["goblin.decrbypos", key, "1"], WRONGTYPE);
        f.rejects(&["goblin.decrby", key, "1"], WRONGTYPE);
        f.rejects(&["goblin.decrby", key, "x"], NOT_INTEGER);
        f.rejects(&["goblin.incrbound", key, "1", "100"], WRONGTYPE);
        f.rejects(&["goblin.incrttl", key, "1", "1000"], WRONGTYPE);
    }
}

/// The valid calls succeed on the fixture, so each rejection above is about
/// the one argument or key that differs from them.
#[test]
fn the_valid_calls_succeed() {
    let mut f = Fixture::new();
    for (name, args) in VALID {
        let mut call = vec![*name];
        call.extend(*args);
        let reply = f.c.cmd(&call);
        assert!(!matches!(reply, Reply::Error(_)), "{call:?}: {reply:?}");
    }
}

/// COMMAND INFO describes each command (arity, write and fast flags, the
/// key at position 1) and COMMAND GETKEYS finds the key, so cluster-aware
/// clients can route the calls.
#[test]
fn command_table_describes_each_command() {
    let mut f = Fixture::new();
    for (name, args) in VALID {
        let info = f.c.cmd(&["COMMAND", "INFO", name]).array();
        let entry = info[0].array();
        assert_eq!(entry[0], Reply::Bulk(name.as_bytes().to_vec()));
        assert_eq!(entry[1], Reply::Int(args.len() as i64 + 1), "{name} arity");
        let flags: Vec<String> = entry[2].array().iter().map(|r| r.text()).collect();
        assert!(
            flags.contains(&"write".to_string()) && flags.contains(&"fast".to_string()),
            "{name} flags {flags:?}"
        );
        assert_eq!(&entry[3..6], &[Reply::Int(1), Reply::Int(1), Reply::Int(1)]);
        let mut call = vec!["COMMAND", "GETKEYS", name];
        call.extend(*args);
        assert_eq!(
            f.c.cmd(&call),
            Reply::Array(vec![Reply::Bulk(args[0].as_bytes().to_vec())])
        );
    }
}
