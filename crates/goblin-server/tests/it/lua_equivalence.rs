//! The atomic forms of Redis 8 / Valkey 9 / redis-cell against the Lua
//! idioms they replace: the same random sequences of calls run natively on
//! an in-process goblin-server and as the Lua script (EVAL) on Debian's
//! `redis-server` 7.0, started here as a child process. The replies and the
//! data they leave must agree. Field TTLs have no 7.0 equivalent, so the
//! hash commands are compared on what can be compared: values and replies.

use crate::common::TestServer;
use crate::goblin_support::RedisProcess;
use redis::Value;

/// SET key new IFEQ expected.
pub const SET_IFEQ: &str = "if redis.call('GET', KEYS[1]) == ARGV[2] then return redis.call('SET', KEYS[1], ARGV[1]) end return false";
/// SET key new IFNE unexpected (an absent key is created).
pub const SET_IFNE: &str = "if redis.call('GET', KEYS[1]) ~= ARGV[2] then return redis.call('SET', KEYS[1], ARGV[1]) end return false";
/// DELEX key IFEQ expected / DELIFEQ key expected.
pub const DEL_IFEQ: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
/// DELEX key IFNE unexpected.
pub const DEL_IFNE: &str = "local v = redis.call('GET', KEYS[1]) if v and v ~= ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
/// INCREX key BYINT incr LBOUND lb UBOUND ub [PX ms]: refused out of
/// bounds ([current, 0]), else the new value and the increment, the TTL
/// set when ARGV[4] is given and kept otherwise.
pub const INCREX: &str = "local cur = tonumber(redis.call('GET', KEYS[1]) or '0') \
local v = cur + tonumber(ARGV[1]) \
if v < tonumber(ARGV[2]) or v > tonumber(ARGV[3]) then return {cur, 0} end \
redis.call('SET', KEYS[1], v, 'KEEPTTL') \
if ARGV[4] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end \
return {v, v - cur}";
/// CL.THROTTLE key max_burst count period quantity: redis-cell's GCRA in
/// microseconds (Lua numbers are doubles), the TAT stored in nanoseconds
/// as redis-cell stores it, with its TTL and its rounding of the replies.
pub const GCRA: &str = "local burst, count, period, qty = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]) \
local t = redis.call('TIME') \
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) \
local ei = math.floor(period * 1000000 / count) \
local limit = burst + 1 \
local dvt = ei * limit \
local inc = ei * qty \
local stored = redis.call('GET', KEYS[1]) \
local tat = now \
if stored then tat = tonumber(string.sub(stored, 1, -4)) end \
local new_tat = math.max(now, tat) + inc \
local diff = now - (new_tat - dvt) \
local limited, ttl, retry = 0, 0, -1000000 \
if diff < 0 then \
  limited = 1 \
  if inc <= dvt then retry = -diff end \
  ttl = tat - now \
else \
  ttl = new_tat - now \
  local ms = math.floor(ttl / 1000) \
  if ms > 0 then redis.call('SET', KEYS[1], string.format('%d000', new_tat), 'PX', ms) \
  else redis.call('DEL', KEYS[1]) end \
end \
local function trunc(x) if x >= 0 then return math.floor(x) end return -math.floor(-x) end \
local nxt = dvt - ttl \
local remaining = 0 \
if nxt > -ei then remaining = trunc(nxt / ei) end \
local function secs(us) local w = trunc(us / 1000000) local ms = trunc((us - w * 1000000) / 1000) if ms > 0 then w = w + 1 end return w end \
return {limited, limit, remaining, secs(retry), secs(ttl)}";
/// HSETEX key FNX FIELDS n f v ...: all or nothing when no field exists.
pub const HSET_FNX: &str =
    "for i = 1, #ARGV, 2 do if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then return 0 end end \
redis.call('HSET', KEYS[1], unpack(ARGV)) return 1";
/// HSETEX key FXX FIELDS n f v ...: all or nothing when every field exists.
pub const HSET_FXX: &str =
    "for i = 1, #ARGV, 2 do if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then return 0 end end \
redis.call('HSET', KEYS[1], unpack(ARGV)) return 1";
/// HGETDEL key FIELDS n f ...: the values, then the fields deleted.
pub const HGETDEL: &str = "local v = redis.call('HMGET', KEYS[1], unpack(ARGV)) \
for i = 1, #ARGV do if v[i] then redis.call('HDEL', KEYS[1], ARGV[i]) end end return v";

fn query(c: &mut redis::Connection, args: &[&str]) -> Value {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<Value>(c) {
        Ok(v) => v,
        Err(e) => Value::SimpleString(format!("error: {e}")),
    }
}

fn eval(c: &mut redis::Connection, script: &str, keys: &[&str], args: &[&str]) -> Value {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script).arg(keys.len());
    for k in keys {
        cmd.arg(*k);
    }
    for a in args {
        cmd.arg(*a);
    }
    cmd.query::<Value>(c).expect("script runs")
}

/// Replies as plain text, so that "OK" from a script and from a command,
/// or an integer and its digits, compare alike where the protocol agrees.
fn norm(v: &Value) -> String {
    match v {
        Value::Nil => "nil".into(),
        Value::Int(n) => n.to_string(),
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Array(items) => {
            format!("[{}]", items.iter().map(norm).collect::<Vec<_>>().join(","))
        }
        other => format!("{other:?}"),
    }
}

/// Every key's type and value (hashes sorted by field), and whether it
/// has a TTL.
fn dump(c: &mut redis::Connection, keys: &[String]) -> Vec<String> {
    keys.iter()
        .map(|k| {
            let t = norm(&query(c, &["TYPE", k]));
            let v = match t.as_str() {
                "string" => norm(&query(c, &["GET", k])),
                "hash" => {
                    let Value::Array(items) = query(c, &["HGETALL", k]) else {
                        panic!("HGETALL")
                    };
                    let mut pairs: Vec<String> = items
                        .chunks(2)
                        .map(|p| format!("{}={}", norm(&p[0]), norm(&p[1])))
                        .collect();
                    pairs.sort();
                    pairs.join(",")
                }
                _ => String::new(),
            };
            let ttl = match query(c, &["PTTL", k]) {
                Value::Int(n) if n > 0 => "ttl",
                Value::Int(n) => {
                    if n == -1 {
                        "persistent"
                    } else {
                        "absent"
                    }
                }
                _ => "?",
            };
            format!("{k}: {t} {v} {ttl}")
        })
        .collect()
}

fn servers() -> (
    TestServer,
    RedisProcess,
    redis::Connection,
    redis::Connection,
) {
    let goblin = TestServer::start();
    let redis = RedisProcess::start();
    let g = goblin.client();
    let r = redis::Client::open(format!("redis://{}/", redis.addr))
        .unwrap()
        .get_connection()
        .unwrap();
    (goblin, redis, g, r)
}

#[test]
fn set_ifeq_ifne_match_get_compare_set() {
    let (_gs, _rs, mut g, mut r) = servers();
    let mut rng = fastrand::Rng::with_seed(7);
    let keys: Vec<String> = (0..4).map(|i| format!("k{i}")).collect();
    let vals = ["a", "b", "c"];
    for step in 0..400 {
        let k = &keys[rng.usize(..keys.len())];
        let new = vals[rng.usize(..3)];
        let cmp = vals[rng.usize(..3)];
        let (native, lua) = match rng.u8(..5) {
            0 => (
                query(&mut g, &["SET", k, new, "IFEQ", cmp]),
                eval(&mut r, SET_IFEQ, &[k], &[new, cmp]),
            ),
            1 => (
                query(&mut g, &["SET", k, new, "IFNE", cmp]),
                eval(&mut r, SET_IFNE, &[k], &[new, cmp]),
            ),
            2 => (query(&mut g, &["DEL", k]), query(&mut r, &["DEL", k])),
            _ => (
                query(&mut g, &["SET", k, new, "IFEQ", cmp]),
                eval(&mut r, SET_IFEQ, &[k], &[new, cmp]),
            ),
        };
        assert_eq!(norm(&native), norm(&lua), "step {step} on {k}");
    }
    assert_eq!(dump(&mut g, &keys), dump(&mut r, &keys));
}

#[test]
fn delex_and_delifeq_match_get_compare_del() {
    let (_gs, _rs, mut g, mut r) = servers();
    let mut rng = fastrand::Rng::with_seed(11);
    let keys: Vec<String> = (0..4).map(|i| format!("k{i}")).collect();
    let vals = ["a", "b"];
    for step in 0..400 {
        let k = &keys[rng.usize(..keys.len())];
        let v = vals[rng.usize(..2)];
        let (native, lua) = match rng.u8(..4) {
            0 => (
                query(&mut g, &["DELEX", k, "IFEQ", v]),
                eval(&mut r, DEL_IFEQ, &[k], &[v]),
            ),
            1 => (
                query(&mut g, &["DELIFEQ", k, v]),
                eval(&mut r, DEL_IFEQ, &[k], &[v]),
            ),
            2 => (
                query(&mut g, &["DELEX", k, "IFNE", v]),
                eval(&mut r, DEL_IFNE, &[k], &[v]),
            ),
            _ => (query(&mut g, &["SET", k, v]), query(&mut r, &["SET", k, v])),
        };
        assert_eq!(norm(&native), norm(&lua), "step {step} on {k}");
    }
    assert_eq!(dump(&mut g, &keys), dump(&mut r, &keys));
}

#[test]
fn increx_matches_get_bounds_set_pexpire() {
    let (_gs, _rs, mut g, mut r) = servers();
    let mut rng = fastrand::Rng::with_seed(13);
    let keys: Vec<String> = (0..3).map(|i| format!("c{i}")).collect();
    for step in 0..500 {
        let k = &keys[rng.usize(..keys.len())];
        let incr = rng.i64(-5..=8).to_string();
        let lb = rng.i64(-10..=0).to_string();
        let ub = rng.i64(0..=30).to_string();
        let px = if rng.bool() {
            "100000".to_string()
        } else {
            String::new()
        };
        let (native, lua) = if rng.u8(..10) == 0 {
            (query(&mut g, &["DEL", k]), query(&mut r, &["DEL", k]))
        } else {
            let mut args = vec!["INCREX", k, "BYINT", &incr, "LBOUND", &lb, "UBOUND", &ub];
            if !px.is_empty() {
                args.extend(["PX", &px]);
            }
            (
                query(&mut g, &args),
                eval(&mut r, INCREX, &[k], &[&incr, &lb, &ub, &px]),
            )
        };
        assert_eq!(norm(&native), norm(&lua), "step {step} on {k}");
        if step % 50 == 0 {
            assert_eq!(dump(&mut g, &keys), dump(&mut r, &keys), "step {step}");
        }
    }
    assert_eq!(dump(&mut g, &keys), dump(&mut r, &keys));
}

#[test]
fn cl_throttle_matches_a_gcra_script() {
    let (_gs, _rs, mut g, mut r) = servers();
    let mut rng = fastrand::Rng::with_seed(17);
    // An emission interval of 1 s (10 per 10 s) or 2 s: the milliseconds
    // between the calls of a burst never cross a whole step, so both
    // servers' clocks give the same replies.
    for (key, count, period) in [("t1", "10", "10"), ("t2", "5", "10"), ("t3", "1", "2")] {
        let burst = rng.i64(0..=5).to_string();
        for step in 0..15 {
            let qty = rng.i64(0..=3).to_string();
            let native = query(&mut g, &["CL.THROTTLE", key, &burst, count, period, &qty]);
            let lua = eval(&mut r, GCRA, &[key], &[&burst, count, period, &qty]);
            assert_eq!(
                norm(&native),
                norm(&lua),
                "{key} step {step} (burst {burst}, qty {qty})"
            );
        }
        // The state: the TAT in nanoseconds with the same TTL, give or
        // take the time between the two servers' calls.
        let (gv, rv) = (
            norm(&query(&mut g, &["GET", key])),
            norm(&query(&mut r, &["GET", key])),
        );
        assert_eq!(gv.len(), rv.len(), "{gv} vs {rv}");
        assert!(gv.bytes().all(|b| b.is_ascii_digit()), "{gv}");
        let (Value::Int(gt), Value::Int(rt)) =
            (query(&mut g, &["PTTL", key]), query(&mut r, &["PTTL", key]))
        else {
            panic!("PTTL")
        };
        assert!((gt - rt).abs() < 1000, "{key}: pttl {gt} vs {rt}");
    }
    let err = norm(&query(&mut g, &["CL.THROTTLE", "t1", "x", "1", "1"]));
    assert!(err.contains("Couldn't parse as integer: x"), "{err}");
}

#[test]
fn hsetex_hgetex_hgetdel_match_hash_scripts() {
    let (_gs, _rs, mut g, mut r) = servers();
    let mut rng = fastrand::Rng::with_seed(19);
    let keys: Vec<String> = (0..3).map(|i| format!("h{i}")).collect();
    let fields = ["a", "b", "c", "d"];
    for step in 0..400 {
        let k = &keys[rng.usize(..keys.len())];
        let n = rng.usize(1..=2);
        // Distinct fields: HGETDEL reads each field after deleting the
        // ones before it (a repeated field is nil the second time), which
        // the HMGET-then-HDEL idiom does not.
        let first = rng.usize(..4);
        let picked: Vec<&str> = (0..n).map(|i| fields[(first + i) % 4]).collect();
        let mut pairs: Vec<String> = Vec::new();
        for f in &picked {
            pairs.push(f.to_string());
            pairs.push(rng.u8(..10).to_string());
        }
        let pairs: Vec<&str> = pairs.iter().map(String::as_str).collect();
        let count = n.to_string();
        let (native, lua) = match rng.u8(..5) {
            0 | 1 => {
                let cond = if rng.bool() { "FNX" } else { "FXX" };
                let mut args = vec!["HSETEX", k, cond, "FIELDS", &count];
                args.extend(&pairs);
                let script = if cond == "FNX" { HSET_FNX } else { HSET_FXX };
                (query(&mut g, &args), eval(&mut r, script, &[k], &pairs))
            }
            2 => {
                let mut args = vec!["HGETDEL", k, "FIELDS", &count];
                args.extend(&picked);
                (query(&mut g, &args), eval(&mut r, HGETDEL, &[k], &picked))
            }
            3 => {
                let mut args = vec!["HGETEX", k, "FIELDS", &count];
                args.extend(&picked);
                let mut hmget = vec!["HMGET", k];
                hmget.extend(&picked);
                (query(&mut g, &args), query(&mut r, &hmget))
            }
            _ => {
                let mut args = vec!["HSETEX", k, "FIELDS", &count];
                args.extend(&pairs);
                let mut hset = vec!["HSET", k];
                hset.extend(&pairs);
                // HSETEX answers 1 where HSET counts new fields.
                let native = query(&mut g, &args);
                query(&mut r, &hset);
                (native, Value::Int(1))
            }
        };
        assert_eq!(norm(&native), norm(&lua), "step {step} on {k}");
    }
    assert_eq!(dump(&mut g, &keys), dump(&mut r, &keys));
}
