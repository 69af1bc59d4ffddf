//! Admission: each check of Redis 7.0.15's processCommand trips for one
//! command, side by side on goblin-server and Debian's redis-server, and
//! the refusal must be the same text; where two checks trip at once, the
//! one processCommand runs first answers. MISCONF (a failing disk) is
//! compared with redis-server in durability.rs; LOADING, which no other
//! client sees while goblin-server loads, in goblin-engine's
//! `engine::session` tests.

use crate::common::process::{free_port, temp_dir, Proc};
use crate::common::{err_text, wait_busy};
use redis::{Connection, RedisResult, Value};

/// One command's reply on a connection: its error text ("CODE detail"),
/// or "ok" when it did not fail.
fn outcome(c: &mut Connection, args: &[&str]) -> String {
    let r: RedisResult<Value> = redis::cmd(args[0]).arg(&args[1..]).query(c);
    match r {
        Ok(_) => "ok".to_string(),
        Err(e) => err_text::<Value>(Err(e)),
    }
}

/// Runs `scenario` on a goblin-server and on a redis-server, each started
/// with `args`, and returns both results (goblin's first).
fn both(name: &str, args: &[&str], scenario: impl Fn(&Proc) -> Vec<String>) -> [Vec<String>; 2] {
    let g_dir = temp_dir(&format!("admission-{name}-goblin"));
    let r_dir = temp_dir(&format!("admission-{name}-redis"));
    let g = Proc::goblin(&g_dir, args);
    let r = Proc::redis(&r_dir, args);
    [scenario(&g), scenario(&r)]
}

/// Asserts that goblin-server answers `scenario` as redis-server does,
/// and that one reply is the refusal `expected` names.
fn same_as_redis(
    name: &str,
    args: &[&str],
    expected: &str,
    scenario: impl Fn(&Proc) -> Vec<String>,
) {
    let [goblin, redis] = both(name, args, scenario);
    assert_eq!(goblin, redis, "{name}: goblin-server, then redis-server");
    assert!(
        redis.iter().any(|o| o.starts_with(expected)),
        "{name}: {redis:?}"
    );
}

#[test]
fn unknown_command_and_arity() {
    same_as_redis("unknown", &[], "ERR unknown command", |p| {
        let mut c = p.client();
        vec![outcome(&mut c, &["NOSUCH", "a"])]
    });
    same_as_redis("arity", &[], "ERR wrong number of arguments", |p| {
        let mut c = p.client();
        vec![outcome(&mut c, &["GET"])]
    });
}

/// A connection that has not authenticated, once requirepass is set.
fn unauthenticated(p: &Proc) -> Connection {
    let mut admin = p.client();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("pw")
        .query(&mut admin)
        .unwrap();
    p.client()
}

#[test]
fn protected_commands_come_before_authentication() {
    // Unauthenticated, and DEBUG not enabled (the default): the protected
    // check runs first (processCommand checks CMD_PROTECTED before
    // authRequired).
    same_as_redis("protected", &[], "ERR DEBUG command not allowed", |p| {
        let mut c = unauthenticated(p);
        vec![
            outcome(&mut c, &["GET", "k"]),
            outcome(&mut c, &["DEBUG", "SLEEP", "0"]),
        ]
    });
}

#[test]
fn authentication() {
    same_as_redis("noauth", &[], "NOAUTH", |p| {
        let mut c = unauthenticated(p);
        vec![outcome(&mut c, &["GET", "k"])]
    });
}

#[test]
fn no_multi_comes_before_acl_and_dooms_the_transaction() {
    // A user who may not SAVE: inside MULTI the transaction check answers
    // before ACL's, and EXEC then discards the transaction.
    same_as_redis("no-multi", &[], "EXECABORT", |p| {
        let mut c = p.client();
        let mut out = vec![outcome(
            &mut c,
            &["ACL", "SETUSER", "u", "on", "nopass", "+@all", "-save"],
        )];
        out.push(outcome(&mut c, &["AUTH", "u", "x"]));
        out.push(outcome(&mut c, &["MULTI"]));
        out.push(outcome(&mut c, &["SAVE"]));
        out.push(outcome(&mut c, &["EXEC"]));
        out
    });
}

#[test]
fn acl() {
    same_as_redis("acl", &[], "NOPERM", |p| {
        let mut c = p.client();
        vec![
            outcome(&mut c, &["ACL", "SETUSER", "u", "on", "nopass", "+ping"]),
            outcome(&mut c, &["AUTH", "u", "x"]),
            outcome(&mut c, &["GET", "k"]),
        ]
    });
}

#[test]
fn out_of_memory_comes_before_min_replicas() {
    same_as_redis("oom", &[], "OOM command not allowed", |p| {
        let mut c = p.client();
        vec![
            outcome(&mut c, &["CONFIG", "SET", "min-replicas-to-write", "1"]),
            outcome(&mut c, &["CONFIG", "SET", "maxmemory", "1"]),
            outcome(&mut c, &["SET", "k", "v"]),
        ]
    });
}

#[test]
fn min_replicas() {
    same_as_redis("noreplicas", &[], "NOREPLICAS", |p| {
        let mut c = p.client();
        vec![
            outcome(&mut c, &["CONFIG", "SET", "min-replicas-to-write", "1"]),
            outcome(&mut c, &["SET", "k", "v"]),
        ]
    });
}

/// A replica of a primary that is not there: its link stays down.
fn replica_args(port: &str) -> Vec<&str> {
    vec!["--replicaof", "127.0.0.1", port]
}

#[test]
fn read_only_replica_comes_before_the_resp2_subscriber_check() {
    let port = free_port().to_string();
    same_as_redis("readonly", &replica_args(&port), "READONLY", |p| {
        let mut c = p.client();
        vec![
            outcome(&mut c, &["SET", "k", "v"]),
            outcome(&mut c, &["SUBSCRIBE", "ch"]),
        ]
    });
    // Subscribed (RESP2) on a read-only replica, a write gets READONLY.
    let [goblin, redis] = both("readonly-subscribed", &replica_args(&port), |p| {
        let mut c = p.client();
        let _: () = redis::cmd("SUBSCRIBE").arg("ch").query(&mut c).unwrap();
        vec![outcome(&mut c, &["SET", "k", "v"])]
    });
    assert_eq!(goblin, redis);
    assert!(redis[0].starts_with("READONLY"), "{redis:?}");
}

#[test]
fn the_resp2_subscriber_check_comes_before_a_stale_replica() {
    // replica-serve-stale-data no is set once the server is up (it would
    // refuse the PING that tells it is).
    let port = free_port().to_string();
    let stale =
        |c: &mut Connection| outcome(c, &["CONFIG", "SET", "replica-serve-stale-data", "no"]);
    same_as_redis("masterdown", &replica_args(&port), "MASTERDOWN", |p| {
        let mut c = p.client();
        vec![stale(&mut c), outcome(&mut c, &["GET", "k"])]
    });
    let [goblin, redis] = both("masterdown-subscribed", &replica_args(&port), |p| {
        let mut c = p.client();
        let set = stale(&mut c);
        let _: () = redis::cmd("SUBSCRIBE").arg("ch").query(&mut c).unwrap();
        vec![set, outcome(&mut c, &["GET", "k"])]
    });
    assert_eq!(goblin, redis);
    assert!(redis[1].starts_with("ERR Can't execute 'get'"), "{redis:?}");
}

#[test]
fn resp2_subscriber() {
    same_as_redis("subscriber", &[], "ERR Can't execute 'get'", |p| {
        let mut c = p.client();
        let _: () = redis::cmd("SUBSCRIBE").arg("ch").query(&mut c).unwrap();
        vec![outcome(&mut c, &["GET", "k"])]
    });
}

#[test]
fn busy_script() {
    same_as_redis("busy", &["--busy-reply-threshold", "50"], "BUSY", |p| {
        let addr = format!("127.0.0.1:{}", p.port);
        let script = std::thread::spawn(move || {
            let mut c = redis::Client::open(format!("redis://{addr}"))
                .unwrap()
                .get_connection()
                .unwrap();
            let _: RedisResult<()> = redis::cmd("EVAL")
                .arg("while true do end")
                .arg(0)
                .query(&mut c);
        });
        let mut c = p.client();
        wait_busy(&mut c);
        let refused = outcome(&mut c, &["GET", "k"]);
        let killed = outcome(&mut c, &["SCRIPT", "KILL"]);
        script.join().unwrap();
        vec![refused, killed, outcome(&mut c, &["GET", "k"])]
    });
}
