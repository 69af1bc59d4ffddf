//! Scripts and transactions under concurrent clients, busy scripts and
//! SCRIPT KILL, through a real client (the `redis` crate).

use crate::common::{self, err_text, info_field, wait_busy, TestServer};
use redis::{Commands, RedisResult};

const STOCK: i64 = 1000;
const CLIENTS: usize = 20;

/// Takes `ARGV[1]` units when that many remain; returns what is left, or
/// -1 when there are not enough.
const TAKE: &str = "local v = tonumber(redis.call('get', KEYS[1]) or '0') \
     if v >= tonumber(ARGV[1]) then return redis.call('decrby', KEYS[1], ARGV[1]) end \
     return -1";

/// Runs `CLIENTS` threads, each taking random amounts (1 to 5) with `take`
/// until the stock is exhausted; `take(conn, amount)` returns whether the
/// units were taken. Returns the units each client took.
fn drain_concurrently(s: &TestServer, take: fn(&mut redis::Connection, i64) -> bool) -> Vec<i64> {
    let threads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let mut c = s.client();
            std::thread::spawn(move || {
                let mut taken = 0;
                let mut amount = fastrand::i64(1..=5);
                // Bounded: each round takes at least one unit or shrinks
                // the request, so STOCK * 2 rounds always suffice.
                for _ in 0..STOCK * 2 {
                    if take(&mut c, amount) {
                        taken += amount;
                        amount = fastrand::i64(1..=5);
                    } else if amount > 1 {
                        // Not enough left for this amount: ask for less.
                        amount = 1;
                    } else {
                        return taken;
                    }
                }
                panic!("the stock was not exhausted in time");
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn check_stock(s: &TestServer, taken: &[i64]) {
    let mut c = s.client();
    let left: i64 = c.get("stock").unwrap();
    assert!(left >= 0, "stock went negative: {left}");
    assert_eq!(left, 0, "clients stopped while units remained");
    assert_eq!(taken.iter().sum::<i64>(), STOCK - left);
}

#[test]
fn lua_decrement_never_oversells() {
    let s = TestServer::start();
    let mut c = s.client();
    let _: () = c.set("stock", STOCK).unwrap();
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(TAKE)
        .query(&mut c)
        .unwrap();
    assert_eq!(sha.len(), 40);
    let taken = drain_concurrently(&s, |c, amount| {
        let left: i64 = redis::cmd("EVAL")
            .arg(TAKE)
            .arg(1)
            .arg("stock")
            .arg(amount)
            .query(c)
            .unwrap();
        assert!(left >= -1);
        left >= 0
    });
    check_stock(&s, &taken);
}

#[test]
fn watch_multi_exec_decrement_never_oversells() {
    let s = TestServer::start();
    let mut c = s.client();
    let _: () = c.set("stock", STOCK).unwrap();
    let taken = drain_concurrently(&s, |c, amount| loop {
        let _: () = redis::cmd("WATCH").arg("stock").query(c).unwrap();
        let left: i64 = c.get("stock").unwrap();
        if left < amount {
            let _: () = redis::cmd("UNWATCH").query(c).unwrap();
            return false;
        }
        let r: Option<(i64,)> = redis::pipe()
            .atomic()
            .cmd("DECRBY")
            .arg("stock")
            .arg(amount)
            .query(c)
            .unwrap();
        match r {
            Some((after,)) => {
                assert!(after >= 0, "EXEC took more than there was");
                return true;
            }
            // A concurrent write touched the key: try again.
            None => continue,
        }
    });
    check_stock(&s, &taken);
}

/// Read, then write: two commands that lose updates unless the script
/// runs alone against its key.
const BUMP_DECLARED: &str = "local v = tonumber(redis.call('get', KEYS[1]) or '0') \
     redis.call('set', KEYS[1], v + 1) return v + 1";
/// The same on a key the script does not declare: it holds every shard.
const BUMP_UNDECLARED: &str = "local v = tonumber(redis.call('get', ARGV[1]) or '0') \
     redis.call('set', ARGV[1], v + 1) return v + 1";

#[test]
fn keyed_and_undeclared_scripts_on_shared_keys_lose_no_update() {
    // Scripts that declare their key hold only its shard and run in
    // parallel with each other; scripts that do not hold every shard.
    // Mixed on a few shared keys, every increment must survive.
    const KEYS: usize = 6;
    const ROUNDS: usize = 300;
    let s = TestServer::start();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let mut c = s.client();
            std::thread::spawn(move || {
                for i in 0..ROUNDS {
                    let key = format!("counter:{}", (t + i) % KEYS);
                    let (script, numkeys) = if (t + i) % 3 == 0 {
                        (BUMP_UNDECLARED, 0)
                    } else {
                        (BUMP_DECLARED, 1)
                    };
                    let v: i64 = redis::cmd("EVAL")
                        .arg(script)
                        .arg(numkeys)
                        .arg(&key)
                        .query(&mut c)
                        .unwrap();
                    assert!(v >= 1);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = s.client();
    let total: i64 = (0..KEYS)
        .map(|k| c.get::<_, i64>(format!("counter:{k}")).unwrap())
        .sum();
    assert_eq!(total, (8 * ROUNDS) as i64);
}

#[test]
fn a_keyed_script_that_rewrites_keys_still_reaches_the_new_key() {
    // The look at the source cannot follow this rewrite of KEYS[1] (it
    // takes the script for keyed); the script then takes the undeclared
    // key's shard as it runs, since nobody else holds it.
    let s = TestServer::start();
    let mut c = s.client();
    let script = "local x x, KEYS[1], x = 1, ARGV[1], 2 \
                  redis.call('set', KEYS[1], 'v') return redis.call('get', KEYS[1])";
    for i in 0..50 {
        let key = format!("other:{i}");
        let v: String = redis::cmd("EVAL")
            .arg(script)
            .arg(1)
            .arg("declared")
            .arg(&key)
            .query(&mut c)
            .unwrap();
        assert_eq!(v, "v");
        let stored: String = c.get(&key).unwrap();
        assert_eq!(stored, "v");
    }
    let declared: Option<String> = c.get("declared").unwrap();
    assert_eq!(declared, None);
}

#[test]
fn script_flush_reaches_the_interpreters_of_keyed_scripts() {
    let s = TestServer::start();
    let mut c = s.client();
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(BUMP_DECLARED)
        .query(&mut c)
        .unwrap();
    for _ in 0..3 {
        let _: i64 = redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(1)
            .arg("k")
            .query(&mut c)
            .unwrap();
    }
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut c).unwrap();
    let err = err_text(
        redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(1)
            .arg("k")
            .query::<i64>(&mut c),
    );
    assert!(err.starts_with("NOSCRIPT"), "{err}");
    let exists: Vec<i64> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(&sha)
        .query(&mut c)
        .unwrap();
    assert_eq!(exists, vec![0]);
    let v: i64 = redis::cmd("EVAL")
        .arg(BUMP_DECLARED)
        .arg(1)
        .arg("k")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, 4);
}

fn memory_field(c: &mut redis::Connection, name: &str) -> u64 {
    info_field(c, "memory", name).parse().unwrap()
}

fn eval_int(c: &mut redis::Connection, script: &str, keys: &[&str]) -> i64 {
    redis::cmd("EVAL")
        .arg(script)
        .arg(keys.len())
        .arg(keys)
        .query(c)
        .unwrap()
}

/// used_memory_lua is every EVAL interpreter, those of keyed scripts
/// included, as Redis's single one holds everything.
#[test]
fn used_memory_lua_counts_the_interpreters_of_keyed_scripts() {
    let s = TestServer::start();
    let mut c = s.client();
    let main = memory_field(&mut c, "used_memory_lua");
    assert!(main > 0);
    assert_eq!(memory_field(&mut c, "used_memory_vm_eval_keyed"), 0);
    for _ in 0..10 {
        eval_int(&mut c, BUMP_DECLARED, &["k"]);
    }
    // A keyed script ran on an interpreter of its own, not the main one.
    let keyed = memory_field(&mut c, "used_memory_vm_eval_keyed");
    assert!(keyed > 0);
    let lua = memory_field(&mut c, "used_memory_lua");
    assert_eq!(lua, main + keyed);
    assert_eq!(memory_field(&mut c, "used_memory_vm_eval"), lua);
    let functions = memory_field(&mut c, "used_memory_vm_functions");
    assert_eq!(
        memory_field(&mut c, "used_memory_vm_total"),
        lua + functions
    );
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut c).unwrap();
    assert_eq!(memory_field(&mut c, "used_memory_vm_eval_keyed"), 0);
}

/// MEMORY STATS's lua.caches and functions.caches are the script cache's
/// and the libraries' overhead, as Redis's evalScriptsMemory and
/// functionsMemoryOverhead.
#[test]
fn memory_stats_reports_the_script_caches() {
    let s = TestServer::start();
    let mut c = s.client();
    let stats = |c: &mut redis::Connection| -> (i64, i64) {
        let v: Vec<redis::Value> = redis::cmd("MEMORY").arg("STATS").query(c).unwrap();
        let mut lua = -1;
        let mut functions = -1;
        for pair in v.chunks(2) {
            if let (redis::Value::BulkString(name), redis::Value::Int(n)) = (&pair[0], &pair[1]) {
                match name.as_slice() {
                    b"lua.caches" => lua = *n,
                    b"functions.caches" => functions = *n,
                    _ => {}
                }
            }
        }
        (lua, functions)
    };
    assert_eq!(stats(&mut c), (0, 0));
    let _: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 1")
        .query(&mut c)
        .unwrap();
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!lua name=lib\nredis.register_function('f', function() return 1 end)")
        .query(&mut c)
        .unwrap();
    let (lua, functions) = stats(&mut c);
    assert!(lua > 0 && functions > 0, "{lua} {functions}");
}

/// The garbage a script leaves is collected after it, in whichever
/// interpreter ran it: keyed scripts run on pooled interpreters that may
/// run nothing else for a long time.
#[test]
fn a_script_s_garbage_is_collected_after_it() {
    let s = TestServer::start();
    let mut c = s.client();
    let lua = |c: &mut redis::Connection| memory_field(c, "used_memory_lua");
    let before = lua(&mut c);
    // On the main interpreter (a loop: not keyed), then on a pooled one
    // (keyed).
    let scripts = [
        (
            "local t = {} for i = 1, 1000000 do t[i] = tostring(i) .. 'garbage' end return #t",
            0,
        ),
        (
            "local s = string.rep('garbage', 10000000) redis.call('set', KEYS[1], #s) return #s",
            1,
        ),
    ];
    for (script, keys) in scripts {
        let _: i64 = redis::cmd("EVAL")
            .arg(script)
            .arg(keys)
            .arg("k")
            .query(&mut c)
            .unwrap();
        let after = lua(&mut c);
        assert!(
            after < before + (16 << 20),
            "{after} bytes left after a script that dropped tens of MB ({before} before): {script}"
        );
    }
}

/// A keyed script whose garbage stays below the collection that follows
/// a script: about 6 MB (a 2 MB string and the buffers it was built in).
const KEYED_GARBAGE: &str =
    "local s = string.rep('garbage', 300000) redis.call('set', KEYS[1], #s) return #s";
/// The same on the main interpreter (a loop: not keyed).
const MAIN_GARBAGE: &str = "for i = 1, 1 do end local s = string.rep('garbage', 300000) return #s";

/// Garbage a script left in one interpreter is gone after collectgarbage()
/// runs in another, as in Redis's single interpreter.
#[test]
fn collectgarbage_collects_every_interpreter() {
    let s = TestServer::start();
    let mut c = s.client();
    let lua = |c: &mut redis::Connection| memory_field(c, "used_memory_lua");
    let before = lua(&mut c);
    // Garbage in a keyed script's interpreter, collected from the main one.
    eval_int(&mut c, KEYED_GARBAGE, &["k"]);
    let grown = lua(&mut c);
    assert!(
        grown > before + (4 << 20),
        "{grown} after garbage, {before} before"
    );
    eval_int(&mut c, "for i = 1, 1 do end collectgarbage() return 1", &[]);
    let after = lua(&mut c);
    assert!(after < before + (1 << 20), "{after} left, {before} before");
    // Garbage in the main interpreter, collected from a keyed script's.
    let before = after;
    eval_int(&mut c, MAIN_GARBAGE, &[]);
    assert!(lua(&mut c) > before + (4 << 20));
    eval_int(
        &mut c,
        "collectgarbage() return redis.call('get', KEYS[1])",
        &["k"],
    );
    let after = lua(&mut c);
    assert!(after < before + (1 << 20), "{after} left, {before} before");
}

/// SCRIPT FLUSH drops every EVAL interpreter, with their garbage, and
/// FUNCTION FLUSH collects what the libraries held.
#[test]
fn script_flush_and_function_flush_free_the_interpreters_memory() {
    let s = TestServer::start();
    let mut c = s.client();
    let fresh = memory_field(&mut c, "used_memory_lua");
    eval_int(&mut c, KEYED_GARBAGE, &["k"]);
    eval_int(&mut c, MAIN_GARBAGE, &[]);
    assert!(memory_field(&mut c, "used_memory_lua") > fresh + (8 << 20));
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut c).unwrap();
    assert_eq!(memory_field(&mut c, "used_memory_lua"), fresh);

    let fresh = memory_field(&mut c, "used_memory_vm_functions");
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!lua name=big\nlocal t = {} for i = 1, 100000 do t[i] = 'item' .. i end\nredis.register_function('size', function() return #t end)")
        .query(&mut c)
        .unwrap();
    let size: i64 = redis::cmd("FCALL")
        .arg("size")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(size, 100000);
    assert!(memory_field(&mut c, "used_memory_vm_functions") > fresh + (4 << 20));
    let _: () = redis::cmd("FUNCTION").arg("FLUSH").query(&mut c).unwrap();
    let after = memory_field(&mut c, "used_memory_vm_functions");
    assert!(after < fresh + (1 << 20), "{after} left, {fresh} before");
}

/// A script that builds more than an interpreter may hold fails with
/// Lua's memory error, as Redis reports an error that is not a table
/// (luaCallFunction), and the server goes on serving scripts.
#[test]
fn a_script_past_the_interpreter_s_memory_bound_fails_and_the_next_runs() {
    let s = TestServer::start();
    let mut c = s.client();
    // 2 GiB, refused before it is built.
    let script = "local s = string.rep('x', 1048576) return #string.rep(s, 2048)";
    let err = err_text(redis::cmd("EVAL").arg(script).arg(0).query::<i64>(&mut c));
    let sha =
        String::from_utf8(goblin_engine::scripting::sha1_hex(script.as_bytes()).to_vec()).unwrap();
    assert_eq!(
        err,
        format!("ERR Error running script {sha}, not enough memory")
    );
    assert_eq!(eval_int(&mut c, "return 1 + 1", &[]), 2);
}

#[test]
fn evalsha_of_unknown_script_is_noscript() {
    let s = TestServer::start();
    let mut c = s.client();
    let r: RedisResult<i64> = redis::cmd("EVALSHA")
        .arg("ffd632c7d33e571e9f24556ebed26c3479a87130")
        .arg(0)
        .query(&mut c);
    assert_eq!(err_text(r), "NOSCRIPT No matching script. Please use EVAL.");
}

#[test]
fn busy_script_answers_busy_and_script_kill_stops_it() {
    let s = TestServer::start_with(&[("busy-reply-threshold", "20")]);
    let mut runner = s.client();
    let script = std::thread::spawn(move || {
        let r: RedisResult<i64> = redis::cmd("EVAL")
            .arg("while true do end")
            .arg(0)
            .query(&mut runner);
        err_text(r)
    });
    let mut other = s.client();
    wait_busy(&mut other);
    let r: RedisResult<String> = redis::cmd("GET").arg("k").query(&mut other);
    assert_eq!(
        err_text(r),
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    );
    // FUNCTION KILL does not stop an EVAL.
    let r: RedisResult<String> = redis::cmd("FUNCTION").arg("KILL").query(&mut other);
    assert!(err_text(r).starts_with("BUSY"));
    let ok: String = redis::cmd("SCRIPT").arg("KILL").query(&mut other).unwrap();
    assert_eq!(ok, "OK");
    // As in Redis, the script has ended once SCRIPT KILL answers: the next
    // command is served, not refused with BUSY.
    let pong: String = redis::cmd("PING").query(&mut other).unwrap();
    assert_eq!(pong, "PONG");
    let killed = script.join().unwrap();
    assert!(
        killed.contains("Script killed by user with SCRIPT KILL"),
        "{killed}"
    );
    let r: RedisResult<String> = redis::cmd("SCRIPT").arg("KILL").query(&mut other);
    assert_eq!(err_text(r), "NOTBUSY No scripts in execution right now.");
}

/// A pattern that backtracks for hours runs inside one C call of the
/// string library, where Lua runs no hook: Goblin's build of the matcher
/// calls the script's hook, so such a script is busy like a loop in Lua
/// (the other clients get BUSY, not silence) and SCRIPT KILL stops it
/// wherever it matches: find (also under pcall, in a loop), gsub, gmatch.
/// Without a loop or redis.call, the first was a keyed script, which runs
/// without the hook: a pattern function makes a script unkeyed.
#[test]
fn a_backtracking_pattern_is_busy_and_script_kill_stops_it() {
    let s = TestServer::start_with(&[("busy-reply-threshold", "20")]);
    let subject = "string.rep('a', 70000)";
    let pattern = "'.-.-.-.-b'";
    for script in [
        format!("return string.find({subject}, {pattern})"),
        format!("return KEYS[1]:find({pattern}) or string.find({subject}, {pattern})"),
        format!("while true do pcall(string.find, {subject}, {pattern}) end"),
        format!("return string.gsub({subject}, {pattern}, 'x')"),
        format!(
            "local n = 0 for m in string.gmatch({subject}, {pattern}) do n = n + 1 end return n"
        ),
    ] {
        let mut runner = s.client();
        let run = script.clone();
        let script_thread = std::thread::spawn(move || {
            let r: RedisResult<redis::Value> = redis::cmd("EVAL")
                .arg(&run)
                .arg(1)
                .arg("k")
                .query(&mut runner);
            err_text(r)
        });
        let mut other = s.client();
        wait_busy(&mut other);
        let ok: String = redis::cmd("SCRIPT").arg("KILL").query(&mut other).unwrap();
        assert_eq!(ok, "OK", "{script}");
        let pong: String = redis::cmd("PING").query(&mut other).unwrap();
        assert_eq!(pong, "PONG");
        let killed = script_thread.join().unwrap();
        // Stopped from the virtual machine, as a loop in Lua is: the
        // error names the script's line.
        assert!(
            killed.contains("Script killed by user with SCRIPT KILL... script: ")
                && killed.ends_with(", on @user_script:1."),
            "{script}: {killed}"
        );
    }
}

#[test]
fn busy_script_that_wrote_is_unkillable() {
    let s = TestServer::start_with(&[("busy-reply-threshold", "20")]);
    let mut runner = s.client();
    // Writes, then runs until a deadline of its own: it cannot be killed.
    let script = std::thread::spawn(move || {
        let r: String = redis::cmd("EVAL")
            .arg(
                "redis.call('set', KEYS[1], 'y') \
                 local t = redis.call('time') \
                 local start = t[1] * 1000000 + t[2] \
                 repeat t = redis.call('time') until t[1] * 1000000 + t[2] - start > 300000 \
                 return 'done'",
            )
            .arg(1)
            .arg("x")
            .query(&mut runner)
            .unwrap();
        r
    });
    let mut other = s.client();
    wait_busy(&mut other);
    let r: RedisResult<String> = redis::cmd("SCRIPT").arg("KILL").query(&mut other);
    assert!(err_text(r).starts_with("UNKILLABLE Sorry the script already executed write commands"));
    assert_eq!(script.join().unwrap(), "done");
    let v: String = other.get("x").unwrap();
    assert_eq!(v, "y");
}

#[test]
fn function_kill_stops_a_busy_function() {
    let s = TestServer::start_with(&[("busy-reply-threshold", "20")]);
    let mut c = s.client();
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!lua name=spin\nredis.register_function('spin', function() while true do end end)")
        .query(&mut c)
        .unwrap();
    assert_eq!(name, "spin");
    let script = std::thread::spawn(move || {
        let r: RedisResult<i64> = redis::cmd("FCALL").arg("spin").arg(0).query(&mut c);
        err_text(r)
    });
    let mut other = s.client();
    wait_busy(&mut other);
    let r: RedisResult<String> = redis::cmd("PING").query(&mut other);
    assert_eq!(
        err_text(r),
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    );
    let stats: redis::Value = redis::cmd("FUNCTION")
        .arg("STATS")
        .query(&mut other)
        .unwrap();
    assert!(format!("{stats:?}").contains("spin"), "{stats:?}");
    let ok: String = redis::cmd("FUNCTION")
        .arg("KILL")
        .query(&mut other)
        .unwrap();
    assert_eq!(ok, "OK");
    let pong: String = redis::cmd("PING").query(&mut other).unwrap();
    assert_eq!(pong, "PONG");
    assert!(script.join().unwrap().contains("Script killed by user"));
}

#[test]
fn eval_inside_multi_runs_atomically_with_the_transaction() {
    let s = TestServer::start();
    let mut c = s.client();
    let (a, b): (i64, i64) = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("n")
        .arg(10)
        .ignore()
        .cmd("EVAL")
        .arg("return redis.call('incrby', KEYS[1], ARGV[1])")
        .arg(1)
        .arg("n")
        .arg(5)
        .cmd("INCR")
        .arg("n")
        .query(&mut c)
        .unwrap();
    assert_eq!((a, b), (15, 16));
}

/// Regression: the script host was read through a reference held across
/// lua_pcall, so redis.setresp(3) inside the script was not seen when the
/// script's own return value was converted (booleans came out as RESP2).
#[test]
fn setresp_inside_the_script_decides_boolean_replies() {
    let s = common::TestServer::start();
    let mut c = s.raw();
    c.send(&common::resp(&[b"HELLO", b"3"]));
    let mut hello = Vec::new();
    while !hello.ends_with(b"$7\r\nmodules\r\n*0\r\n") {
        hello.extend(c.read_exact_len(1));
    }
    c.roundtrip(
        &common::resp(&[b"EVAL", b"redis.setresp(3) return true", b"0"]),
        b"#t\r\n",
    );
    c.roundtrip(
        &common::resp(&[b"EVAL", b"redis.setresp(3) return false", b"0"]),
        b"#f\r\n",
    );
    c.roundtrip(&common::resp(&[b"EVAL", b"return true", b"0"]), b":1\r\n");
    c.roundtrip(&common::resp(&[b"EVAL", b"return false", b"0"]), b"_\r\n");
}

/// Regression: a redis.call with ~8000 arguments left no Lua stack slot
/// for its reply (Redis pops the arguments before converting the reply).
#[test]
fn call_with_massive_arguments_still_gets_its_reply() {
    let s = common::TestServer::start();
    let mut c = s.raw();
    let script: &[u8] =
        b"local a = {} for i=1,7999 do a[i] = 1 end return redis.call('lpush', 'l', unpack(a))";
    c.roundtrip(&common::resp(&[b"EVAL", script, b"0"]), b":7999\r\n");
}

#[test]
fn a_script_allowed_persistence_commands_saves_with_its_libraries_but_cannot_reload() {
    let server = TestServer::start();
    let mut c = server.client();
    let _: () = redis::cmd("DEBUG")
        .arg("SET-DISABLE-DENY-SCRIPTS")
        .arg(1)
        .query(&mut c)
        .unwrap();
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!lua name=kept\nredis.register_function('kept', function() return 1 end)")
        .query(&mut c)
        .unwrap();
    // A snapshot reads the libraries while the script holds the
    // interpreter: it must not wait for it.
    let saved: String = redis::cmd("EVAL")
        .arg("return redis.call('SAVE')")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(saved, "OK");
    let text = err_text(
        redis::cmd("EVAL")
            .arg("return redis.call('DEBUG', 'RELOAD')")
            .arg(0)
            .query::<String>(&mut c),
    );
    assert!(text.contains("cannot run inside a script"), "{text}");
    // The snapshot has the library: a reload outside a script brings it back.
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut c).unwrap();
    let one: i64 = redis::cmd("FCALL")
        .arg("kept")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(one, 1);
}
