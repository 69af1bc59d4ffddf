//! Each GOBLIN.* command against the Lua idiom it replaces, and each idiom
//! in JavaScript against the same idiom in Lua (at the end of the file).
//!
//! For every command, a seeded random sequence of calls runs twice: as the
//! native command on an in-process goblin-server, and as the command's Lua
//! idiom through EVALSHA on a real Redis 7.0 (`redis-server`, started here
//! as a child process; the tests fail, never skip, when it is missing).
//! Between the calls, the same plain commands on both servers put the keys
//! in every state that matters: absent, present, expiring, already
//! expired, holding another type, holding a non-integer, at the i64 edges.
//! After every step, both servers must have given the same reply and hold
//! the same keys with the same types, values and TTLs.
//!
//! The idioms are the scripts Redis users write (the contract names one per
//! command), with two kinds of additions, both in the shared `PRELUDE`:
//! - where the contract defines an error the bare script would not raise
//!   (a TTL that is not positive, a stored value that is not an integer on
//!   a path that never hands it to INCRBY), the script raises it with
//!   `redis.error_reply` and the contract's text, before touching anything;
//! - Lua numbers are doubles, exact only up to 2^53, so the scripts compare
//!   and add 64-bit integers as decimal strings (`isint`, `cmp`, `add`)
//!   where a bare `tonumber` would decide wrongly near the i64 edges.
//!
//! Two things are compared with an allowance, both forced by Lua or by the
//! clock, never by the command:
//! - A script cannot return an integer beyond 2^53 exactly (Redis turns the
//!   Lua double back into an integer). Where the native reply is such an
//!   integer, the script's reply must still be an integer, and the native
//!   reply must equal the value the script stored, read back with GET.
//!   After a call with a 1 ms TTL that value may be gone before GET reads
//!   it; then the script's reply must be the native one seen as a double.
//! - The servers read their clocks a few milliseconds apart. A deadline
//!   (PEXPIRETIME, a ZWINDOW lease) set during the sequence is
//!   `now + ms` with `now` inside the sequence on both servers, so two
//!   correct deadlines differ by at most the time elapsed since the
//!   sequence began (plus 1 ms of truncation); that is the tolerance. The
//!   TTL arguments are spread at least 10^6 ms apart (or are 1 ms, and
//!   then the test waits until the key or lease has expired on both), so a
//!   wrong deadline (a window that slides, a renewal that does not renew)
//!   misses by far more than the tolerance. A remaining lifetime (INCRTTL's
//!   second element) subtracts two such clock reads: twice the tolerance.

use crate::common::TestServer;
use crate::goblin_support::{
    same_state, snapshot, Conn, RedisProcess, Reply, EDGES, LONG_TTLS, NOT_INTEGERS,
};
use std::time::{Duration, Instant};

/// Helpers every idiom may use: exact 64-bit integer parsing, comparison
/// and addition on decimal strings, the clock, the TTL argument check.
const PRELUDE: &str = r#"
local MAX = '9223372036854775807'
local NOT_INTEGER = 'ERR value is not an integer or out of range'

-- Redis's string2ll: the integers INCR accepts (no '+', no spaces, no
-- leading zeros, within 64 bits).
local function isint(s)
  if s == '0' then return true end
  local sign, digits = string.match(s, '^(%-?)([1-9]%d*)$')
  if not digits then return false end
  if #digits ~= 19 then return #digits < 19 end
  return digits <= (sign == '-' and '9223372036854775808' or MAX)
end

-- Compares two integers written in decimal: -1, 0 or 1.
local function cmp(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then return na and -1 or 1 end
  local c = 0
  if #a ~= #b then c = (#a < #b) and -1 or 1
  elseif a ~= b then c = (a < b) and -1 or 1 end
  if na then return -c end
  return c
end

-- a + b for integers written in decimal, exact at any size.
local function magadd(x, y)
  local out, carry, i, j = {}, 0, #x, #y
  while i > 0 or j > 0 or carry > 0 do
    local d = carry
    if i > 0 then d = d + x:byte(i) - 48 end
    if j > 0 then d = d + y:byte(j) - 48 end
    table.insert(out, 1, string.char(48 + d % 10))
    carry = math.floor(d / 10)
    i, j = i - 1, j - 1
  end
  return table.concat(out)
end
local function magsub(x, y) -- x >= y
  local out, borrow, i, j = {}, 0, #x, #y
  while i > 0 do
    local d = x:byte(i) - 48 - borrow
    if j > 0 then d = d - (y:byte(j) - 48) end
    if d < 0 then d, borrow = d + 10, 1 else borrow = 0 end
    table.insert(out, 1, string.char(48 + d))
    i, j = i - 1, j - 1
  end
  local s = string.gsub(table.concat(out), '^0+', '')
  if s == '' then return '0' end
  return s
end
local function add(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  local x = na and a:sub(2) or a
  local y = nb and b:sub(2) or b
  local s, neg
  if na == nb then s, neg = magadd(x, y), na
  elseif cmp(x, y) >= 0 then s, neg = magsub(x, y), na
  else s, neg = magsub(y, x), nb end
  if neg and s ~= '0' then return '-' .. s end
  return s
end

-- The server's clock in Unix milliseconds, as a decimal string.
local function now()
  local t = redis.call('time')
  return t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
end

-- A TTL argument: an integer, >= 1, and now + ms within 64 bits.
local function ttl_error(ms, cmd)
  if not isint(ms) then return redis.error_reply(NOT_INTEGER) end
  if cmp(ms, '1') < 0 or cmp(add(now(), ms), MAX) > 0 then
    return redis.error_reply("ERR invalid expire time in '" .. cmd .. "' command")
  end
end
"#;

/// GET, then DECR if > 0 (the seed's script, with the integer check).
const DECRPOS: &str = r#"
local v = redis.call('get', KEYS[1]) or '0'
if not isint(v) then return redis.error_reply(NOT_INTEGER) end
if cmp(v, '0') > 0 then return redis.call('decr', KEYS[1]) end
return -1
"#;

/// GET, then DECRBY if >= amount.
const DECRBYPOS: &str = r#"
if not isint(ARGV[1]) then return redis.error_reply(NOT_INTEGER) end
if cmp(ARGV[1], '1') < 0 then
  return redis.error_reply('ERR amount must be a positive integer')
end
local v = redis.call('get', KEYS[1]) or '0'
if not isint(v) then return redis.error_reply(NOT_INTEGER) end
if cmp(v, ARGV[1]) >= 0 then return redis.call('decrby', KEYS[1], ARGV[1]) end
return -1
"#;

/// DECRBY, and for the one decrement DECRBY refuses (-2^63): value + 2^63,
/// in range only for a negative value, added in two INCRBYs that cannot
/// overflow (INCRBY refuses a value that is not an integer before writing).
const DECRBY: &str = r#"
if ARGV[1] ~= '-9223372036854775808' then
  return redis.call('DECRBY', KEYS[1], ARGV[1])
end
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 1) == '-' then
  redis.call('INCRBY', KEYS[1], '9223372036854775807')
  return redis.call('INCRBY', KEYS[1], '1')
end
if v and not (v == '0' or (string.match(v, '^[1-9]%d*$')
    and (#v < 19 or (#v == 19 and v <= '9223372036854775807')))) then
  return redis.error_reply('ERR value is not an integer or out of range')
end
return redis.error_reply('ERR increment or decrement would overflow')
"#;

/// GET, then INCRBY if the result <= ceiling (INCRBY itself raises the
/// overflow of a result below the 64-bit minimum).
const INCRBOUND: &str = r#"
if not isint(ARGV[1]) or not isint(ARGV[2]) then
  return redis.error_reply(NOT_INTEGER)
end
local v = redis.call('get', KEYS[1]) or '0'
if not isint(v) then return redis.error_reply(NOT_INTEGER) end
if cmp(add(v, ARGV[1]), ARGV[2]) > 0 then return -1 end
return redis.call('incrby', KEYS[1], ARGV[1])
"#;

/// INCRBY + PEXPIRE NX + PTTL.
const INCRTTL: &str = r#"
if not isint(ARGV[1]) then return redis.error_reply(NOT_INTEGER) end
local err = ttl_error(ARGV[2], 'goblin.incrttl')
if err then return err end
local v = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('pexpire', KEYS[1], ARGV[2], 'NX')
return {v, redis.call('pttl', KEYS[1])}
"#;

/// GET == expected, then DEL.
const CAD: &str = r#"
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"#;

/// GET == expected, then PEXPIRE.
const CAE: &str = r#"
local err = ttl_error(ARGV[2], 'goblin.cae')
if err then return err end
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"#;

/// HGET == expected, then HDEL (the seed's script).
const HCAD: &str = r#"
if redis.call('hget', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('hdel', KEYS[1], ARGV[1])
end
return 0
"#;

/// HGET == expected, then HSET.
const HCAS: &str = r#"
if redis.call('hget', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('hset', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
"#;

/// HGET < value (or absent), then HSET. `num` is Redis's string2d on top
/// of Lua's tonumber (which would also take surrounding spaces and stop at
/// a NUL), finite only.
const HSETGT: &str = r#"
local function num(s)
  if s:find('^%s') or s:find('%s$') or s:find('%z') then return nil end
  local n = tonumber(s)
  if n == nil or n ~= n or n == math.huge or n == -math.huge then return nil end
  return n
end
if not num(ARGV[2]) then return redis.error_reply('ERR value is not a valid number') end
local cur = redis.call('hget', KEYS[1], ARGV[1])
if cur then
  if not num(cur) then return redis.error_reply('ERR hash value is not a valid number') end
  local lower
  if isint(cur) and isint(ARGV[2]) then
    lower = cmp(cur, ARGV[2]) < 0
  else
    lower = num(cur) < num(ARGV[2])
  end
  if not lower then return 0 end
end
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
return 1
"#;

/// ZREMRANGEBYSCORE + ZSCORE/ZCARD + ZADD + PEXPIRE(AT the last lease).
const ZWINDOW: &str = r#"
if not isint(ARGV[1]) then return redis.error_reply(NOT_INTEGER) end
if cmp(ARGV[1], '1') < 0 then
  return redis.error_reply('ERR limit must be a positive integer')
end
local err = ttl_error(ARGV[2], 'goblin.zwindow')
if err then return err end
local t = now()
redis.call('zremrangebyscore', KEYS[1], '-inf', t)
if redis.call('zscore', KEYS[1], ARGV[3])
    or redis.call('zcard', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('zadd', KEYS[1], add(t, ARGV[2]), ARGV[3])
  local last = redis.call('zrange', KEYS[1], -1, -1, 'withscores')
  redis.call('pexpireat', KEYS[1], last[2])
  return 1
end
return 0
"#;

/// Beyond this, a Lua number no longer holds every integer.
const LUA_EXACT: u64 = 1 << 53;

/// One command's differential run: both servers, the idiom, the history.
struct Differ {
    command: &'static str,
    /// Which argument (after the key) is a TTL in milliseconds.
    ttl_arg: Option<usize>,
    keys: &'static [&'static str],
    seed: u64,
    explore: u64,
    rng: fastrand::Rng,
    _goblin: TestServer,
    /// Redis (the native command against the Lua idiom), or a second
    /// goblin-server (the JavaScript idiom against the Lua idiom).
    _other: (Option<RedisProcess>, Option<TestServer>),
    /// The JavaScript idiom's SHA on `g`, run instead of the command.
    js_sha: Option<String>,
    g: Conn,
    r: Conn,
    sha: String,
    started: Instant,
    history: Vec<String>,
    calls: usize,
    /// The call being compared gave its key a 1 ms TTL.
    short_lived: bool,
}

impl Differ {
    fn new(
        command: &'static str,
        idiom: &str,
        keys: &'static [&'static str],
        ttl_arg: Option<usize>,
        seed: u64,
    ) -> Differ {
        Differ::with_js(command, idiom, None, keys, ttl_arg, seed)
    }

    /// A run of the command's idiom in JavaScript (on one goblin-server)
    /// against its idiom in Lua (on another) when `js` is given; of the
    /// native command on goblin-server against the Lua idiom on Redis
    /// otherwise.
    fn with_js(
        command: &'static str,
        idiom: &str,
        js: Option<&str>,
        keys: &'static [&'static str],
        ttl_arg: Option<usize>,
        seed: u64,
    ) -> Differ {
        // GOBLIN_DIFFERENTIAL_SEED=<n> explores other sequences; a failure
        // names it, to replay the sequence.
        let explore = std::env::var("GOBLIN_DIFFERENTIAL_SEED").map_or(0, |s| {
            s.parse::<u64>()
                .expect("GOBLIN_DIFFERENTIAL_SEED must be an integer")
        });
        let goblin = TestServer::start();
        let mut g = Conn::connect(goblin.addr);
        let (other, mut r) = match js {
            Some(_) => {
                let lua_side = TestServer::start();
                let r = Conn::connect(lua_side.addr);
                ((None, Some(lua_side)), r)
            }
            None => {
                let redis = RedisProcess::start();
                let r = redis.conn();
                ((Some(redis), None), r)
            }
        };
        let js_sha = js.map(|js| {
            let script = format!("#!js\n{JS_PRELUDE}{js}");
            match g.call(&[b"SCRIPT".as_slice(), b"LOAD", script.as_bytes()]) {
                Reply::Bulk(sha) => String::from_utf8(sha).unwrap(),
                other => panic!("the {command} JavaScript idiom does not load: {other:?}"),
            }
        });
        let script = format!("{PRELUDE}{idiom}");
        let sha = match r.call(&[b"SCRIPT".as_slice(), b"LOAD", script.as_bytes()]) {
            Reply::Bulk(sha) => String::from_utf8(sha).unwrap(),
            other => panic!("the {command} idiom does not load: {other:?}"),
        };
        Differ {
            command,
            ttl_arg,
            keys,
            seed,
            explore,
            rng: fastrand::Rng::with_seed(seed ^ explore),
            _goblin: goblin,
            _other: other,
            js_sha,
            g,
            r,
            sha,
            started: Instant::now(),
            history: Vec::new(),
            calls: 0,
            short_lived: false,
        }
    }

    fn fail(&self, what: String) -> ! {
        let from = self.history.len().saturating_sub(25);
        panic!(
            "{} (seed {:#x}, GOBLIN_DIFFERENTIAL_SEED={}), after {} calls: {what}\nlast steps:\n  {}",
            self.command,
            self.seed,
            self.explore,
            self.calls,
            self.history[from..].join("\n  ")
        );
    }

    /// Two correct deadlines differ by at most this (see the module doc).
    fn tolerance(&self) -> i64 {
        self.started.elapsed().as_millis() as i64 + 1
    }

    fn key(&mut self) -> &'static str {
        self.keys[self.rng.usize(..self.keys.len())]
    }

    /// A plain command on both servers, to put a key in some state. Its
    /// replies must agree too (they never depend on the clock).
    fn both(&mut self, args: &[&str]) {
        self.history.push(format!("both {args:?}"));
        let a = self.g.cmd(args);
        let b = self.r.cmd(args);
        if a != b {
            self.fail(format!("setup {args:?}: goblin {a:?}, redis {b:?}"));
        }
    }

    /// Waits until `ms` milliseconds have passed on both servers' clocks
    /// since now, so that anything that expires within `ms` from now has
    /// expired on both (Redis expires a key when its clock is past the
    /// deadline; Goblin no later).
    fn wait_past(&mut self, ms: i64) {
        for conn in [&mut self.g, &mut self.r] {
            let target = conn.time_ms() + ms;
            while conn.time_ms() <= target {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Gives `key` the value `value` with a 1 ms TTL, and waits until it has
    /// expired on both servers: the key is still in memory unless active
    /// expiry found it, but no command may see it.
    fn expired(&mut self, key: &str, value: &str) {
        self.both(&["SET", key, value, "PX", "1"]);
        self.wait_past(1);
    }

    /// Runs the command natively and as its idiom, compares the replies and
    /// then every key. A call with a 1 ms TTL first waits until that has
    /// run out on both servers, so the keys are compared in a settled state.
    fn call(&mut self, key: &str, args: &[String]) {
        self.calls += 1;
        self.history
            .push(format!("{} {key} {}", self.command, args.join(" ")));
        let mut native: Vec<&[u8]> = match &self.js_sha {
            Some(sha) => vec![b"EVALSHA", sha.as_bytes(), b"1", key.as_bytes()],
            None => vec![self.command.as_bytes(), key.as_bytes()],
        };
        native.extend(args.iter().map(|a| a.as_bytes()));
        let mut eval: Vec<&[u8]> = vec![b"EVALSHA", self.sha.as_bytes(), b"1", key.as_bytes()];
        eval.extend(args.iter().map(|a| a.as_bytes()));
        let got = self.g.call(&native);
        let want = self.r.call(&eval);
        self.history
            .push(format!("  -> goblin {got:?}, redis {want:?}"));
        self.short_lived = self.ttl_arg.is_some_and(|i| args[i] == "1");
        self.compare_replies(key, &got, &want);
        if self.short_lived {
            self.wait_past(1);
        }
        self.compare_keys();
    }

    fn compare_replies(&mut self, key: &str, got: &Reply, want: &Reply) {
        match (got, want) {
            (Reply::Error(g), Reply::Error(r)) => {
                // Redis 7 appends where in the script a redis.call error
                // was raised; the text before it is the command's.
                let r = r.split(" script: ").next().unwrap();
                if g != r {
                    self.fail(format!("error texts differ: goblin {g:?}, redis {r:?}"));
                }
            }
            (Reply::Int(g), Reply::Int(r)) => self.compare_ints(key, *g, *r),
            (Reply::Array(g), Reply::Array(r)) if g.len() == 2 && r.len() == 2 => {
                // INCRTTL: [value, remaining ms].
                self.compare_ints(key, g[0].int(), r[0].int());
                let (gl, rl) = (g[1].int(), r[1].int());
                if (gl - rl).abs() > 2 * self.tolerance() {
                    self.fail(format!(
                        "remaining lifetimes differ: goblin {gl}, redis {rl}"
                    ));
                }
            }
            _ => {
                if got != want {
                    self.fail(format!("replies differ: goblin {got:?}, redis {want:?}"));
                }
            }
        }
    }

    fn compare_ints(&mut self, key: &str, g: i64, r: i64) {
        if g.unsigned_abs() <= LUA_EXACT {
            if g != r {
                self.fail(format!("replies differ: goblin {g}, redis {r}"));
            }
            return;
        }
        // Only the value the script stored is exact (see the module doc).
        let stored = self.r.cmd(&["GET", key]).bulk();
        let stored = stored.map(|s| String::from_utf8(s).unwrap());
        if stored.is_none() && self.short_lived {
            // Expired before GET: Redis turned the Lua double into r.
            if r != g as f64 as i64 {
                self.fail(format!(
                    "replies differ: goblin {g}, redis {r} (as a double)"
                ));
            }
            return;
        }
        if stored.as_deref() != Some(g.to_string().as_str()) {
            self.fail(format!(
                "goblin replied {g}, redis stored {stored:?} (script reply {r})"
            ));
        }
    }

    /// Every key: same type and value, TTLs both absent or within the
    /// tolerance.
    fn compare_keys(&mut self) {
        let tolerance = self.tolerance();
        for key in self.keys {
            let g = snapshot(&mut self.g, key);
            let r = snapshot(&mut self.r, key);
            if !same_state(&g, &r, tolerance) {
                self.fail(format!(
                    "key {key} differs (tolerance {tolerance} ms):\n  goblin {g:?}\n  redis  {r:?}"
                ));
            }
        }
    }
}

/// An integer argument or stored value: mostly small, sometimes an edge,
/// sometimes not an integer at all.
fn integer(rng: &mut fastrand::Rng) -> String {
    match rng.u32(..100) {
        0..=54 => rng.i64(-5..=12).to_string(),
        55..=69 => EDGES[rng.usize(..EDGES.len())].to_string(),
        70..=84 => rng.i64(-1_000_000..=1_000_000).to_string(),
        _ => NOT_INTEGERS[rng.usize(..NOT_INTEGERS.len())].to_string(),
    }
}

/// A TTL argument: long, 1 ms (the caller then waits it out), or invalid.
fn ttl(rng: &mut fastrand::Rng) -> String {
    match rng.u32(..100) {
        0..=64 => LONG_TTLS[rng.usize(..LONG_TTLS.len())].to_string(),
        65..=74 => "1".to_string(),
        _ => [
            "0",
            "-1",
            "-1000",
            "abc",
            "1.5",
            "",
            &i64::MAX.to_string(),
            &i64::MIN.to_string(),
        ][rng.usize(..8)]
        .to_string(),
    }
}

fn pick<'a>(rng: &mut fastrand::Rng, items: &[&'a str]) -> &'a str {
    items[rng.usize(..items.len())]
}

/// Puts a string key in a random state: a value, a value with a TTL, an
/// expired value, absent, another type, or its TTL removed.
fn string_setup(d: &mut Differ, value: impl Fn(&mut fastrand::Rng) -> String) {
    let key = d.key();
    let v = value(&mut d.rng);
    match d.rng.u32(..100) {
        0..=34 => d.both(&["SET", key, &v]),
        35..=54 => {
            let ms = LONG_TTLS[d.rng.usize(..LONG_TTLS.len())].to_string();
            d.both(&["SET", key, &v, "PX", &ms]);
        }
        55..=64 => d.expired(key, &v),
        65..=74 => d.both(&["DEL", key]),
        75..=82 => {
            d.both(&["DEL", key]);
            d.both(&["HSET", key, "f", &v]);
        }
        83..=89 => {
            d.both(&["DEL", key]);
            d.both(&["SADD", key, &v]);
        }
        _ => d.both(&["PERSIST", key]),
    }
}

const CALLS: usize = 400;

/// Runs `CALLS` calls of the command, each preceded with probability 2/5
/// by a change of some key's state.
fn run(mut d: Differ, setup: impl Fn(&mut Differ), args: impl Fn(&mut Differ) -> Vec<String>) {
    while d.calls < CALLS {
        if d.rng.u32(..5) < 2 {
            setup(&mut d);
        }
        let key = d.key();
        let args = args(&mut d);
        d.call(key, &args);
    }
}

/// Stock-like values: small counts more often than anything else.
fn stock(rng: &mut fastrand::Rng) -> String {
    if rng.bool() {
        rng.i64(0..=4).to_string()
    } else {
        integer(rng)
    }
}

#[test]
fn decrpos_matches_its_idiom() {
    let d = Differ::new("goblin.decrpos", DECRPOS, &["stock", "other"], None, 0xdec1);
    run(d, |d| string_setup(d, stock), |_| vec![]);
}

#[test]
fn decrbypos_matches_its_idiom() {
    let d = Differ::new(
        "goblin.decrbypos",
        DECRBYPOS,
        &["stock", "other"],
        None,
        0xdec2,
    );
    run(
        d,
        |d| string_setup(d, stock),
        |d| {
            vec![if d.rng.bool() {
                d.rng.i64(-1..=5).to_string()
            } else {
                integer(&mut d.rng)
            }]
        },
    );
}

#[test]
fn decrby_matches_its_idiom() {
    let d = Differ::new("goblin.decrby", DECRBY, &["counter", "other"], None, 0xdecb);
    run(
        d,
        |d| string_setup(d, integer),
        |d| {
            vec![if d.rng.u32(..4) == 0 {
                i64::MIN.to_string()
            } else {
                integer(&mut d.rng)
            }]
        },
    );
}

#[test]
fn incrbound_matches_its_idiom() {
    let d = Differ::new(
        "goblin.incrbound",
        INCRBOUND,
        &["quota", "other"],
        None,
        0x1bd,
    );
    run(
        d,
        |d| string_setup(d, integer),
        |d| {
            let increment = if d.rng.bool() {
                d.rng.i64(-3..=5).to_string()
            } else {
                integer(&mut d.rng)
            };
            let ceiling = if d.rng.bool() {
                d.rng.i64(-2..=15).to_string()
            } else {
                integer(&mut d.rng)
            };
            vec![increment, ceiling]
        },
    );
}

#[test]
fn incrttl_matches_its_idiom() {
    let d = Differ::new(
        "goblin.incrttl",
        INCRTTL,
        &["hits", "other"],
        Some(1),
        0x177,
    );
    run(
        d,
        |d| string_setup(d, integer),
        |d| {
            let increment = if d.rng.bool() {
                d.rng.i64(-2..=5).to_string()
            } else {
                integer(&mut d.rng)
            };
            vec![increment, ttl(&mut d.rng)]
        },
    );
}

const TOKENS: &[&str] = &["owner-a", "owner-b", "", "1", "1.0", "OWNER-A"];

#[test]
fn cad_matches_its_idiom() {
    let d = Differ::new("goblin.cad", CAD, &["lock", "other"], None, 0xcad);
    run(
        d,
        |d| string_setup(d, |rng| pick(rng, TOKENS).to_string()),
        |d| vec![pick(&mut d.rng, TOKENS).to_string()],
    );
}

#[test]
fn cae_matches_its_idiom() {
    let d = Differ::new("goblin.cae", CAE, &["lock", "other"], Some(1), 0xcae);
    run(
        d,
        |d| string_setup(d, |rng| pick(rng, TOKENS).to_string()),
        |d| vec![pick(&mut d.rng, TOKENS).to_string(), ttl(&mut d.rng)],
    );
}

const FIELDS: &[&str] = &["f", "g"];

/// Puts a hash key in a random state: fields set or removed, the key with
/// a TTL, expired, absent, or of another type.
fn hash_setup(d: &mut Differ, value: impl Fn(&mut fastrand::Rng) -> String) {
    let key = d.key();
    let field = pick(&mut d.rng, FIELDS);
    let v = value(&mut d.rng);
    match d.rng.u32(..100) {
        0..=44 => {
            if d.g.cmd(&["TYPE", key]).text() == "string" {
                d.both(&["DEL", key]);
            }
            d.both(&["HSET", key, field, &v]);
        }
        45..=54 => d.both(&["HDEL", key, field]),
        55..=64 => {
            let ms = LONG_TTLS[d.rng.usize(..LONG_TTLS.len())].to_string();
            d.both(&["PEXPIRE", key, &ms]);
        }
        65..=72 => {
            d.both(&["DEL", key]);
            d.both(&["HSET", key, field, &v]);
            d.both(&["PEXPIRE", key, "1"]);
            d.wait_past(1);
        }
        73..=84 => d.both(&["DEL", key]),
        85..=92 => {
            d.both(&["DEL", key]);
            d.both(&["SET", key, &v]);
        }
        _ => d.both(&["PERSIST", key]),
    }
}

#[test]
fn hcad_matches_its_idiom() {
    let d = Differ::new("goblin.hcad", HCAD, &["locks", "other"], None, 0x4cad);
    run(
        d,
        |d| hash_setup(d, |rng| pick(rng, TOKENS).to_string()),
        |d| {
            let field = pick(&mut d.rng, FIELDS).to_string();
            vec![field, pick(&mut d.rng, TOKENS).to_string()]
        },
    );
}

#[test]
fn hcas_matches_its_idiom() {
    let d = Differ::new("goblin.hcas", HCAS, &["slots", "other"], None, 0x4ca5);
    run(
        d,
        |d| hash_setup(d, |rng| pick(rng, TOKENS).to_string()),
        |d| {
            let field = pick(&mut d.rng, FIELDS).to_string();
            let expected = pick(&mut d.rng, TOKENS).to_string();
            vec![field, expected, pick(&mut d.rng, TOKENS).to_string()]
        },
    );
}

/// Numbers as HSETGT reads them, and text that is not one.
fn hsetgt_value(rng: &mut fastrand::Rng) -> String {
    const NUMBERS: &[&str] = &[
        "1.5",
        "-2.25",
        "1e3",
        "1000",
        "3.0",
        "0x10",
        "16",
        "-0",
        "0.0",
        "9007199254740993",
        "9007199254740992",
        "9007199254740992.0",
        "9223372036854775807",
        "9223372036854775806",
        "9223372036854775808",
        "-9223372036854775808",
        "1e300",
    ];
    const NOT_NUMBERS: &[&str] = &[
        "abc", "", "inf", "-inf", "nan", " 5", "5 ", "1e400", "1,5", "--1",
    ];
    match rng.u32(..100) {
        0..=44 => rng.i64(-3..=10).to_string(),
        45..=79 => pick(rng, NUMBERS).to_string(),
        _ => pick(rng, NOT_NUMBERS).to_string(),
    }
}

#[test]
fn hsetgt_matches_its_idiom() {
    let d = Differ::new("goblin.hsetgt", HSETGT, &["peaks", "other"], None, 0x4567);
    run(
        d,
        |d| hash_setup(d, hsetgt_value),
        |d| {
            let field = pick(&mut d.rng, FIELDS).to_string();
            vec![field, hsetgt_value(&mut d.rng)]
        },
    );
}

/// A lease deadline far in the future (2100-01-01), the same on both
/// servers.
const FAR_DEADLINE: &str = "4102444800000";

const HOLDERS: &[&str] = &["a", "b", "c", "d", "e"];

/// Puts a semaphore key in a random state: a lease that ended long ago (its
/// holder crashed), one that ends far in the future, a released holder, the
/// key expired, absent, or of another type.
fn zwindow_setup(d: &mut Differ) {
    let key = d.key();
    let holder = pick(&mut d.rng, HOLDERS);
    let is_zset = d.g.cmd(&["TYPE", key]).text() == "zset";
    match d.rng.u32(..100) {
        0..=19 => {
            if !is_zset {
                d.both(&["DEL", key]);
            }
            d.both(&["ZADD", key, "1000", holder]);
        }
        20..=29 => {
            if !is_zset {
                d.both(&["DEL", key]);
            }
            d.both(&["ZADD", key, FAR_DEADLINE, holder]);
        }
        30..=54 => d.both(&["ZREM", key, holder]),
        55..=64 => d.both(&["DEL", key]),
        65..=72 => {
            d.both(&["DEL", key]);
            d.both(&["ZADD", key, FAR_DEADLINE, holder]);
            d.both(&["PEXPIRE", key, "1"]);
            d.wait_past(1);
        }
        73..=82 => {
            d.both(&["DEL", key]);
            d.both(&["SET", key, holder]);
        }
        83..=89 => {
            d.both(&["DEL", key]);
            d.both(&["HSET", key, holder, "1"]);
        }
        _ => d.both(&["PERSIST", key]),
    }
}

#[test]
fn zwindow_matches_its_idiom() {
    let d = Differ::new(
        "goblin.zwindow",
        ZWINDOW,
        &["sem", "other"],
        Some(1),
        0x2d1d,
    );
    run(d, zwindow_setup, |d| {
        let limit = match d.rng.u32(..100) {
            0..=84 => d.rng.i64(1..=4).to_string(),
            _ => pick(
                &mut d.rng,
                &["0", "-1", "abc", "1.5", "9223372036854775807"],
            )
            .to_string(),
        };
        // Every TTL drawn keeps lease deadlines below 2^53 ms, where a Lua
        // number (and so the idiom's ZADD score and PEXPIREAT argument) is
        // still an exact integer; i64::MAX is rejected before any of that.
        let ms = ttl(&mut d.rng);
        vec![limit, ms, pick(&mut d.rng, HOLDERS).to_string()]
    });
}

// ---------------------------------------------------------------------------
// The idioms in JavaScript against the same idioms in Lua
//
// The same random sequences, with the JavaScript idiom (EVALSHA of a
// `#!js` script) on one goblin-server in place of the native command, and
// the Lua idiom on another goblin-server in place of Redis: replies and
// keys must agree as above ("goblin" in a failure is the JavaScript side,
// "redis" the Lua one). JavaScript has exact 64-bit integers (BigInt), so
// its prelude is short.

/// The functions of `PRELUDE`, in JavaScript.
const JS_PRELUDE: &str = r#"
const MAX = 9223372036854775807n;
const NOT_INTEGER = 'ERR value is not an integer or out of range';
const isint = (s) => s === '0' || (/^-?[1-9][0-9]*$/.test(s)
  && BigInt(s) >= -MAX - 1n && BigInt(s) <= MAX);
const now = () => {
  const t = redis.call('time');
  return BigInt(t[0]) * 1000n + BigInt(Math.floor(Number(t[1]) / 1000));
};
const ttlError = (ms, cmd) => {
  if (!isint(ms)) return redis.errorReply(NOT_INTEGER);
  if (BigInt(ms) < 1n || now() + BigInt(ms) > MAX) {
    return redis.errorReply(`ERR invalid expire time in '${cmd}' command`);
  }
  return null;
};
"#;

const JS_DECRPOS: &str = r#"
const v = redis.call('get', KEYS[0]) ?? '0';
if (!isint(v)) return redis.errorReply(NOT_INTEGER);
if (BigInt(v) > 0n) return redis.call('decr', KEYS[0]);
return -1;
"#;

const JS_DECRBYPOS: &str = r#"
if (!isint(ARGV[0])) return redis.errorReply(NOT_INTEGER);
if (BigInt(ARGV[0]) < 1n) return redis.errorReply('ERR amount must be a positive integer');
const v = redis.call('get', KEYS[0]) ?? '0';
if (!isint(v)) return redis.errorReply(NOT_INTEGER);
if (BigInt(v) >= BigInt(ARGV[0])) return redis.call('decrby', KEYS[0], ARGV[0]);
return -1;
"#;

const JS_DECRBY: &str = r#"
if (ARGV[0] !== '-9223372036854775808') return redis.call('DECRBY', KEYS[0], ARGV[0]);
const v = redis.call('GET', KEYS[0]);
if (v !== null && v.startsWith('-')) {
  redis.call('INCRBY', KEYS[0], '9223372036854775807');
  return redis.call('INCRBY', KEYS[0], '1');
}
if (v !== null && !(v === '0' || (/^[1-9][0-9]*$/.test(v)
    && (v.length < 19 || (v.length === 19 && v <= '9223372036854775807'))))) {
  return redis.errorReply('ERR value is not an integer or out of range');
}
return redis.errorReply('ERR increment or decrement would overflow');
"#;

const JS_INCRBOUND: &str = r#"
if (!isint(ARGV[0]) || !isint(ARGV[1])) return redis.errorReply(NOT_INTEGER);
const v = redis.call('get', KEYS[0]) ?? '0';
if (!isint(v)) return redis.errorReply(NOT_INTEGER);
if (BigInt(v) + BigInt(ARGV[0]) > BigInt(ARGV[1])) return -1;
return redis.call('incrby', KEYS[0], ARGV[0]);
"#;

const JS_INCRTTL: &str = r#"
if (!isint(ARGV[0])) return redis.errorReply(NOT_INTEGER);
const err = ttlError(ARGV[1], 'goblin.incrttl');
if (err) return err;
const v = redis.call('incrby', KEYS[0], ARGV[0]);
redis.call('pexpire', KEYS[0], ARGV[1], 'NX');
return [v, redis.call('pttl', KEYS[0])];
"#;

const JS_CAD: &str = r#"
if (redis.call('get', KEYS[0]) === ARGV[0]) return redis.call('del', KEYS[0]);
return 0;
"#;

const JS_CAE: &str = r#"
const err = ttlError(ARGV[1], 'goblin.cae');
if (err) return err;
if (redis.call('get', KEYS[0]) === ARGV[0]) return redis.call('pexpire', KEYS[0], ARGV[1]);
return 0;
"#;

const JS_HCAD: &str = r#"
if (redis.call('hget', KEYS[0], ARGV[0]) === ARGV[1]) return redis.call('hdel', KEYS[0], ARGV[0]);
return 0;
"#;

const JS_HCAS: &str = r#"
if (redis.call('hget', KEYS[0], ARGV[0]) === ARGV[1]) {
  redis.call('hset', KEYS[0], ARGV[0], ARGV[2]);
  return 1;
}
return 0;
"#;

/// `num` reads what Lua's tonumber (C's strtod) reads: hexadecimal with
/// a sign too, but not JavaScript's 0b and 0o forms or the empty string.
const JS_HSETGT: &str = r#"
const num = (s) => {
  if (s === '' || /^\s|\s$|\0/.test(s) || /^[+-]?0[bBoO]/.test(s)) return null;
  let n;
  if (/^[+-]?0[xX]/.test(s)) {
    n = Number(s.replace(/^[+-]/, ''));
    if (s[0] === '-') n = -n;
  } else {
    n = Number(s);
  }
  return Number.isFinite(n) ? n : null;
};
if (num(ARGV[1]) === null) return redis.errorReply('ERR value is not a valid number');
const cur = redis.call('hget', KEYS[0], ARGV[0]);
if (cur !== null) {
  if (num(cur) === null) return redis.errorReply('ERR hash value is not a valid number');
  const lower = isint(cur) && isint(ARGV[1]) ? BigInt(cur) < BigInt(ARGV[1]) : num(cur) < num(ARGV[1]);
  if (!lower) return 0;
}
redis.call('hset', KEYS[0], ARGV[0], ARGV[1]);
return 1;
"#;

const JS_ZWINDOW: &str = r#"
if (!isint(ARGV[0])) return redis.errorReply(NOT_INTEGER);
if (BigInt(ARGV[0]) < 1n) return redis.errorReply('ERR limit must be a positive integer');
const err = ttlError(ARGV[1], 'goblin.zwindow');
if (err) return err;
const t = now();
redis.call('zremrangebyscore', KEYS[0], '-inf', t);
if (redis.call('zscore', KEYS[0], ARGV[2]) !== null
    || redis.call('zcard', KEYS[0]) < Number(ARGV[0])) {
  redis.call('zadd', KEYS[0], t + BigInt(ARGV[1]), ARGV[2]);
  const last = redis.call('zrange', KEYS[0], -1, -1, 'withscores');
  redis.call('pexpireat', KEYS[0], last[1]);
  return 1;
}
return 0;
"#;

#[test]
fn decrpos_js_idiom_matches_lua() {
    let d = Differ::with_js(
        "goblin.decrpos",
        DECRPOS,
        Some(JS_DECRPOS),
        &["stock", "other"],
        None,
        0xdec1,
    );
    run(d, |d| string_setup(d, stock), |_| vec![]);
}

#[test]
fn decrbypos_js_idiom_matches_lua() {
    let d = Differ::with_js(
        "goblin.decrbypos",
        DECRBYPOS,
        Some(JS_DECRBYPOS),
        &["stock", "other"],
        None,
        0xdec2,
    );
    run(
        d,
        |d| string_setup(d, stock),
        |d| {
            vec![if d.rng.bool() {
                d.rng.i64(-1..=5).to_string()
            } else {
                integer(&mut d.rng)
            }]
        },
    );
}

#[test]
fn decrby_js_idiom_matches_lua() {
    let d = Differ::with_js(
        "goblin.decrby",
        DECRBY,
        Some(JS_DECRBY),
        &["counter", "other"],
        None,
        0xdecb,
    );
    run(
        d,
        |d| string_setup(d, integer),
        |d| {
            vec![if d.rng.u32(..4) == 0 {
                i64::MIN.to_string()
            } else {
                integer(&mut d.rng)
            }]
        },
    );
}

#[test]
fn incrbound_js_idiom_matches_lua() {
    let d = Differ::with_js(
        "goblin.incrbound",
        INCRBOUND,
        Some(JS_INCRBOUND),
        &["quota", "other"],
        None,
        0x1bd,
    );
    run(
        d,
        |d| string_setup(d, integer),
        |d| {
            let increment = if d.rng.bool() {
                d.rng.i64(-3..=5).to_string()
            } else {
                integer(&mut d.rng)
            };
            let ceiling = if d.rng.bool() {
                d.rng.i64(-2..=15).to_string()
            } else {
                integer(&mut d.rng)
            };
            vec![increment, ceiling]
        },
    );
}

#[test]
fn incrttl_js_idiom_matches_lua() {
    let d = Differ::with_js(
        "goblin.incrttl",
        INCRTTL,
        Some(JS_INCRTTL),
        &["hits", "other"],
        Some(1),
        0x177,
    );
    run(
        d,
        |d| string_setup(d, integer),
        |d| {
            let increment = if d.rng.bool() {
                d.rng.i64(-2..=5).to_string()
            } else {
                integer(&mut d.rng)
            };
            vec![increment, ttl(&mut d.rng)]
        },
    );
}

#[test]
fn cad_and_cae_js_idioms_match_lua() {
    let d = Differ::with_js(
        "goblin.cad",
        CAD,
        Some(JS_CAD),
        &["lock", "other"],
        None,
        0xcad,
    );
    run(
        d,
        |d| string_setup(d, |rng| pick(rng, TOKENS).to_string()),
        |d| vec![pick(&mut d.rng, TOKENS).to_string()],
    );
    let d = Differ::with_js(
        "goblin.cae",
        CAE,
        Some(JS_CAE),
        &["lock", "other"],
        Some(1),
        0xcae,
    );
    run(
        d,
        |d| string_setup(d, |rng| pick(rng, TOKENS).to_string()),
        |d| vec![pick(&mut d.rng, TOKENS).to_string(), ttl(&mut d.rng)],
    );
}

#[test]
fn hcad_and_hcas_js_idioms_match_lua() {
    let d = Differ::with_js(
        "goblin.hcad",
        HCAD,
        Some(JS_HCAD),
        &["locks", "other"],
        None,
        0x4cad,
    );
    run(
        d,
        |d| hash_setup(d, |rng| pick(rng, TOKENS).to_string()),
        |d| {
            let field = pick(&mut d.rng, FIELDS).to_string();
            vec![field, pick(&mut d.rng, TOKENS).to_string()]
        },
    );
    let d = Differ::with_js(
        "goblin.hcas",
        HCAS,
        Some(JS_HCAS),
        &["slots", "other"],
        None,
        0x4ca5,
    );
    run(
        d,
        |d| hash_setup(d, |rng| pick(rng, TOKENS).to_string()),
        |d| {
            let field = pick(&mut d.rng, FIELDS).to_string();
            let expected = pick(&mut d.rng, TOKENS).to_string();
            vec![field, expected, pick(&mut d.rng, TOKENS).to_string()]
        },
    );
}

#[test]
fn hsetgt_js_idiom_matches_lua() {
    let d = Differ::with_js(
        "goblin.hsetgt",
        HSETGT,
        Some(JS_HSETGT),
        &["peaks", "other"],
        None,
        0x4567,
    );
    run(
        d,
        |d| hash_setup(d, hsetgt_value),
        |d| {
            let field = pick(&mut d.rng, FIELDS).to_string();
            vec![field, hsetgt_value(&mut d.rng)]
        },
    );
}

#[test]
fn zwindow_js_idiom_matches_lua() {
    let d = Differ::with_js(
        "goblin.zwindow",
        ZWINDOW,
        Some(JS_ZWINDOW),
        &["sem", "other"],
        Some(1),
        0x2d1d,
    );
    run(d, zwindow_setup, |d| {
        let limit = match d.rng.u32(..100) {
            0..=84 => d.rng.i64(1..=4).to_string(),
            _ => pick(
                &mut d.rng,
                &["0", "-1", "abc", "1.5", "9223372036854775807"],
            )
            .to_string(),
        };
        let ms = ttl(&mut d.rng);
        vec![limit, ms, pick(&mut d.rng, HOLDERS).to_string()]
    });
}
