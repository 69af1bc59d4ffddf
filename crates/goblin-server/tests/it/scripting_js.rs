//! JavaScript scripts (`#!js`) and libraries: the `redis` API and its
//! reply conversions, errors and pcall, RESP3, read-only scripts, BUSY
//! and SCRIPT/FUNCTION KILL, the memory limit, the sandbox, FUNCTION
//! LOAD/LIST/DUMP/RESTORE, persistence, and the DECRPOS idiom under
//! racing clients.

use crate::common::process::{temp_dir, Proc};
use crate::common::{self, bulk, config_set, err_text, wait_busy, TestServer};
use redis::{RedisResult, Value};

fn eval(
    c: &mut redis::Connection,
    script: &str,
    keys: &[&str],
    args: &[&str],
) -> RedisResult<Value> {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(format!("#!js\n{script}")).arg(keys.len());
    for k in keys.iter().chain(args) {
        cmd.arg(*k);
    }
    cmd.query(c)
}

fn eval_ok(c: &mut redis::Connection, script: &str) -> Value {
    eval(c, script, &[], &[]).unwrap_or_else(|e| panic!("{script}: {e}"))
}

fn eval_err(c: &mut redis::Connection, script: &str) -> String {
    err_text(eval(c, script, &[], &[]))
}

fn int(n: i64) -> Value {
    Value::Int(n)
}

#[test]
fn js_replies_convert_as_documented() {
    let s = TestServer::start();
    let mut c = s.client();
    assert_eq!(eval_ok(&mut c, "return 1 + 1"), int(2));
    // Numbers are truncated to integers, as Lua's are.
    assert_eq!(eval_ok(&mut c, "return 3.99"), int(3));
    assert_eq!(eval_ok(&mut c, "return 'x'"), bulk("x"));
    assert_eq!(eval_ok(&mut c, "return null"), Value::Nil);
    assert_eq!(eval_ok(&mut c, "return undefined"), Value::Nil);
    assert_eq!(eval_ok(&mut c, "return true"), int(1));
    assert_eq!(eval_ok(&mut c, "return false"), Value::Nil);
    assert_eq!(
        eval_ok(&mut c, "return [1, 'a', [2, ['b']], null, 3]"),
        Value::Array(vec![
            int(1),
            bulk("a"),
            Value::Array(vec![int(2), Value::Array(vec![bulk("b")])]),
            Value::Nil,
            int(3),
        ])
    );
    // An array ends at its first hole, as a Lua table does.
    assert_eq!(
        eval_ok(&mut c, "const a = [1, 2]; a[3] = 4; return a"),
        Value::Array(vec![int(1), int(2)])
    );
    assert_eq!(eval_ok(&mut c, "return 2n ** 62n"), int(1 << 62));
    assert_eq!(
        eval_err(&mut c, "return 2n ** 64n"),
        "ERR BigInt out of the range of a Redis integer"
    );
    assert_eq!(eval_ok(&mut c, "return {a: 1}"), Value::Array(vec![]));
    assert_eq!(
        eval_ok(&mut c, "return redis.statusReply('FINE')"),
        Value::SimpleString("FINE".into())
    );
    assert_eq!(
        eval_ok(&mut c, "return {ok: 'ALSO'}"),
        Value::SimpleString("ALSO".into())
    );
    assert_eq!(
        eval_err(&mut c, "return redis.errorReply('MY bad')"),
        "MY bad"
    );
    assert_eq!(
        eval_ok(&mut c, "return new Uint8Array([0, 255, 10])"),
        Value::BulkString(vec![0, 255, 10])
    );
    // Integer replies: numbers within 2^53, BigInt beyond.
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg("9007199254740993")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        eval_ok(
            &mut c,
            "const n = redis.call('incr', 'big'); return typeof n + ' ' + String(n)"
        ),
        bulk("bigint 9007199254740994")
    );
    assert_eq!(
        eval_ok(
            &mut c,
            "const n = redis.call('incrby', 'small', 5); return typeof n"
        ),
        bulk("number")
    );
    assert_eq!(
        eval_ok(&mut c, "return redis.call('get', 'nosuchkey') === null"),
        int(1)
    );
    assert_eq!(
        eval_ok(&mut c, "return redis.call('set', 'k', 'v').ok"),
        bulk("OK")
    );
    // A cyclic array is refused, not followed for ever.
    assert_eq!(
        eval_err(&mut c, "const a = [1]; a.push(a); return a"),
        "ERR reached JavaScript reply nesting limit"
    );
}

#[test]
fn js_keys_argv_and_their_byte_forms() {
    let s = TestServer::start();
    let mut c = s.client();
    let v = eval(
        &mut c,
        "return [KEYS.length, KEYS[0], ARGV[0], ARGV[1]]",
        &["k1"],
        &["a", "b"],
    )
    .unwrap();
    assert_eq!(
        v,
        Value::Array(vec![int(1), bulk("k1"), bulk("a"), bulk("b")])
    );
    // Binary-safe: bytes that are not UTF-8 pass through KEYS_BYTES,
    // ARGV_BYTES and redis.callBytes untouched.
    let binary: &[u8] = &[0xff, 0x00, 0xfe];
    let v: Value = redis::cmd("EVAL")
        .arg("#!js\nredis.call('set', KEYS_BYTES[0], ARGV_BYTES[0]); return redis.callBytes('get', KEYS_BYTES[0])")
        .arg(1)
        .arg(binary)
        .arg(binary)
        .query(&mut c)
        .unwrap();
    assert_eq!(v, Value::BulkString(binary.to_vec()));
    let stored: Vec<u8> = redis::cmd("GET").arg(binary).query(&mut c).unwrap();
    assert_eq!(stored, binary);
    assert_eq!(
        eval_ok(&mut c, "return redis.sha1hex('')"),
        bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")
    );
    assert_eq!(
        eval_ok(&mut c, "return redis.REDIS_VERSION"),
        bulk("7.0.15")
    );
    assert_eq!(
        eval_ok(
            &mut c,
            "redis.log(redis.LOG_WARNING, 'from js'); return redis.LOG_NOTICE"
        ),
        int(2)
    );
}

#[test]
fn js_errors_and_pcall() {
    let s = TestServer::start();
    let mut c = s.client();
    let _: () = redis::cmd("SET")
        .arg("s")
        .arg("text")
        .query(&mut c)
        .unwrap();
    // redis.call throws a ReplyError whose message is Redis's error text.
    assert_eq!(
        eval_err(&mut c, "return redis.call('incr', 's')"),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        eval_ok(
            &mut c,
            "try { redis.call('incr', 's') } catch (e) { return [e.name, e.message, String(e instanceof redis.ReplyError)] }"
        ),
        Value::Array(vec![
            bulk("ReplyError"),
            bulk("ERR value is not an integer or out of range"),
            bulk("true")
        ])
    );
    assert_eq!(
        eval_ok(&mut c, "return redis.pcall('incr', 's').err"),
        bulk("ERR value is not an integer or out of range")
    );
    assert_eq!(
        eval_err(&mut c, "return redis.pcall('nosuchcommand')"),
        "ERR Unknown Redis command called from script"
    );
    assert_eq!(
        eval_err(&mut c, "return redis.call('get')"),
        "ERR Wrong number of args calling Redis command from script"
    );
    assert_eq!(
        eval_err(&mut c, "return redis.call()"),
        "ERR Please specify at least one argument for this redis lib call"
    );
    assert_eq!(
        eval_err(&mut c, "return redis.call('get', {})"),
        "ERR JavaScript redis lib command arguments must be strings, numbers, BigInts or Uint8Arrays"
    );
    // Anything else thrown: Redis's "Error running script" with its text.
    let e = eval_err(&mut c, "throw new Error('boom')");
    assert!(
        e.starts_with("ERR Error running script ") && e.ends_with(", Error: boom"),
        "{e}"
    );
    let e = eval_err(&mut c, "return (");
    assert!(
        e.starts_with("ERR Error compiling script (new function): SyntaxError"),
        "{e}"
    );
    // Scripts may not run scripts.
    assert_eq!(
        eval_err(&mut c, "return redis.call('eval', 'return 1', 0)"),
        "ERR This Redis command is not allowed from script"
    );
    // Numbers as arguments: integers as integers, others as Lua's %.17g.
    assert_eq!(
        eval_ok(&mut c, "redis.call('set', 'n', 10); redis.call('set', 'f', 0.5); return [redis.call('get', 'n'), redis.call('get', 'f')]"),
        Value::Array(vec![bulk("10"), bulk("0.5")])
    );
}

#[test]
fn js_resp3_replies_both_ways() {
    let s = TestServer::start();
    let mut c = s.client();
    let _: () = redis::cmd("HSET")
        .arg("h")
        .arg("f")
        .arg("v")
        .query(&mut c)
        .unwrap();
    // A script in RESP3 reads maps as {map: {...}} and doubles as {double}.
    assert_eq!(
        eval_ok(
            &mut c,
            "redis.setResp(3); const m = redis.call('hgetall', 'h'); return [m.map.f, typeof redis.call('exists', 'h')]"
        ),
        Value::Array(vec![bulk("v"), bulk("number")])
    );
    assert_eq!(
        eval_ok(
            &mut c,
            "redis.setResp(3); return redis.call('zscore', 'nozset', 'm') === null"
        ),
        int(1)
    );
    // A RESP2 client gets a returned map as a flat array, a double as text.
    assert_eq!(
        eval_ok(&mut c, "return {map: {a: 1}}"),
        Value::Array(vec![bulk("a"), int(1)])
    );
    assert_eq!(eval_ok(&mut c, "return {double: 1.5}"), bulk("1.5"));
    // A RESP3 client gets them as they are.
    let mut c3 = s.client();
    let _: Value = redis::cmd("HELLO").arg(3).query(&mut c3).unwrap();
    let v: Value = redis::cmd("EVAL")
        .arg("#!js\nredis.setResp(3); return [{map: {a: 1}}, {double: 1.5}, true, false]")
        .arg(0)
        .query(&mut c3)
        .unwrap();
    assert_eq!(
        v,
        Value::Array(vec![
            Value::Map(vec![(bulk("a"), int(1))]),
            Value::Double(1.5),
            Value::Boolean(true),
            Value::Boolean(false),
        ])
    );
}

#[test]
fn js_read_only_scripts_refuse_writes() {
    let s = TestServer::start();
    let mut c = s.client();
    let r: RedisResult<Value> = redis::cmd("EVAL")
        .arg("#!js flags=no-writes\nreturn redis.call('set', 'a', 'b')")
        .arg(0)
        .query(&mut c);
    assert_eq!(
        err_text(r),
        "ERR Write commands are not allowed from read-only scripts."
    );
    let r: RedisResult<Value> = redis::cmd("EVAL_RO")
        .arg("#!js\nreturn 1")
        .arg(0)
        .query(&mut c);
    assert_eq!(
        err_text(r),
        "ERR Can not execute a script with write flag using *_ro command."
    );
    let v: Value = redis::cmd("EVAL_RO")
        .arg("#!js flags=no-writes\nreturn redis.call('get', 'a')")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(v, Value::Nil);
    let r: RedisResult<Value> = redis::cmd("EVAL")
        .arg("#!js flags=bogus\nreturn 1")
        .arg(0)
        .query(&mut c);
    assert_eq!(err_text(r), "ERR Unexpected flag in script shebang: bogus");
    let r: RedisResult<Value> = redis::cmd("EVAL")
        .arg("#!js other\nreturn 1")
        .arg(0)
        .query(&mut c);
    assert_eq!(err_text(r), "ERR Unknown js shebang option: other");
    let r: RedisResult<Value> = redis::cmd("EVAL")
        .arg("#!python\nreturn 1")
        .arg(0)
        .query(&mut c);
    assert_eq!(
        err_text(r),
        "ERR Unexpected engine in script shebang: #!python"
    );
}

#[test]
fn js_script_load_evalsha_and_flush() {
    let s = TestServer::start();
    let mut c = s.client();
    let body = "#!js\nreturn ARGV[0] + '!'";
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(body)
        .query(&mut c)
        .unwrap();
    let v: String = redis::cmd("EVALSHA")
        .arg(&sha)
        .arg(0)
        .arg("hi")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "hi!");
    let exists: Vec<i64> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(&sha)
        .query(&mut c)
        .unwrap();
    assert_eq!(exists, vec![1]);
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut c).unwrap();
    let r: RedisResult<String> = redis::cmd("EVALSHA").arg(&sha).arg(0).query(&mut c);
    assert_eq!(err_text(r), "NOSCRIPT No matching script. Please use EVAL.");
    // The same body without the shebang is Lua, and another script.
    let lua: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 1")
        .query(&mut c)
        .unwrap();
    assert_ne!(lua, sha);
}

#[test]
fn js_sandbox_has_no_host_access() {
    let s = TestServer::start();
    let mut c = s.client();
    assert_eq!(
        eval_ok(
            &mut c,
            "return [typeof require, typeof process, typeof std, typeof os, typeof setTimeout, typeof setInterval, typeof print, typeof console, typeof fetch, typeof XMLHttpRequest, typeof WebAssembly].join(',')"
        ),
        bulk("undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined")
    );
    // Module loading fails: import() rejects (its handlers run within the
    // script, before its reply).
    assert_eq!(
        eval_ok(
            &mut c,
            "import('os').then(() => redis.call('set', 'imported', 'yes'), (e) => redis.call('set', 'imported', 'no')); return 1"
        ),
        int(1)
    );
    let imported: String = redis::cmd("GET").arg("imported").query(&mut c).unwrap();
    assert_eq!(imported, "no");
    let e = eval_err(&mut c, "return import.meta");
    assert!(e.contains("SyntaxError"), "{e}");
    // The Function constructor and eval reach the same frozen realm.
    assert_eq!(
        eval_ok(&mut c, "return [Function('return this')() === globalThis, Object.isFrozen(globalThis), eval('1 + 1')]"),
        Value::Array(vec![int(1), int(1), int(2)])
    );
    let names = eval_ok(&mut c, "return Object.getOwnPropertyNames(globalThis).filter((n) => /^(os|std|process|require|module|exports|scriptArgs|bjson)$/.test(n))");
    assert_eq!(names, Value::Array(vec![]));
}

#[test]
fn js_scripts_leave_no_globals_behind() {
    let s = TestServer::start();
    let mut c = s.client();
    // Strict mode: an undeclared name is an error, not a global.
    let e = eval_err(&mut c, "leak = 1; return 1");
    assert!(e.contains("ReferenceError"), "{e}");
    for attempt in [
        "globalThis.leak = 1",
        "Object.defineProperty(globalThis, 'leak', {value: 1})",
        "Array.prototype.leak = 1",
        "Object.prototype.leak = 1",
        "JSON.parse = () => 1",
        "redis.call = () => 1",
        "Object.getPrototypeOf(function* () {}).leak = 1",
        "Object.getPrototypeOf([][Symbol.iterator]()).leak = 1",
        "Math.leak = 1",
    ] {
        let e = eval_err(&mut c, attempt);
        assert!(e.contains("TypeError"), "{attempt}: {e}");
    }
    // Sloppy code (through Function) cannot write the frozen global either.
    let _ = eval(&mut c, "Function('leak = 1')(); return 1", &[], &[]);
    assert_eq!(
        eval_ok(
            &mut c,
            "return [typeof globalThis.leak, typeof [].leak, typeof ({}).leak, typeof Math.leak, JSON.stringify([1]), typeof redis.call('ping')]"
        ),
        Value::Array(vec![
            bulk("undefined"),
            bulk("undefined"),
            bulk("undefined"),
            bulk("undefined"),
            bulk("[1]"),
            bulk("object")
        ])
    );
}

#[test]
fn js_memory_limit_fails_the_script_and_the_server_lives() {
    let s = TestServer::start_with(&[("js-memory-limit", "16mb")]);
    let mut c = s.client();
    for hog in [
        "const a = []; while (true) a.push('x'.repeat(64) + a.length)",
        "let t = 'x'; while (true) t = t + t",
        "return new Array(1e9).fill(1).length",
        "const a = []; while (true) a.push({})",
    ] {
        let e = eval_err(&mut c, hog);
        assert!(
            e.starts_with("ERR Error running script ")
                && (e.contains("out of memory")
                    || e.contains("too long")
                    || e.contains("RangeError")),
            "{hog}: {e}"
        );
        // The runtime is usable after it, and its memory went back.
        assert_eq!(eval_ok(&mut c, "return 7"), int(7));
    }
    let mem: u64 = common::info_field(&mut c, "memory", "used_memory_vm_eval")
        .parse()
        .unwrap();
    assert!(mem < 16 << 20, "{mem}");
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    // Deep recursion is a RangeError, not a crash.
    let e = eval_err(&mut c, "function f() { return f() + 1 } return f()");
    assert!(
        e.contains("RangeError: Maximum call stack size exceeded"),
        "{e}"
    );
}

#[test]
fn js_busy_script_answers_busy_and_script_kill_stops_it() {
    let s = TestServer::start_with(&[("busy-reply-threshold", "20")]);
    let mut runner = s.client();
    let script = std::thread::spawn(move || {
        // A catch cannot swallow the kill.
        err_text(eval(
            &mut runner,
            "while (true) { try { for (;;) {} } catch (e) {} }",
            &[],
            &[],
        ))
    });
    let mut other = s.client();
    wait_busy(&mut other);
    let r: RedisResult<String> = redis::cmd("GET").arg("k").query(&mut other);
    assert_eq!(
        err_text(r),
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    );
    let r: RedisResult<String> = redis::cmd("FUNCTION").arg("KILL").query(&mut other);
    assert!(err_text(r).starts_with("BUSY"));
    let ok: String = redis::cmd("SCRIPT").arg("KILL").query(&mut other).unwrap();
    assert_eq!(ok, "OK");
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

/// The builtins that walk an array-like index by index (join, reverse,
/// copyWithin...) run as one call of the engine, not in the interpreter:
/// over the holes of a sparse array or a plain object with a huge length
/// they would run for minutes without marking the script busy or reading
/// SCRIPT KILL. They poll the interrupt handler (vendor/README.md).
#[test]
fn js_builtins_walking_a_huge_array_like_are_busy_and_killable() {
    let s = TestServer::start_with(&[("busy-reply-threshold", "20")]);
    for script in [
        "const a = []; a[2 ** 32 - 2] = 1; return String(a).length",
        "return Array.prototype.join.call({length: 2 ** 53 - 1}).length",
        "return Array.prototype.reverse.call({length: 2 ** 53 - 1}).length",
        "return Array.prototype.copyWithin.call({length: 2 ** 53 - 1}, 0, 1).length",
        "return [].concat({length: 2 ** 53 - 1, [Symbol.isConcatSpreadable]: true}).length",
    ] {
        let mut runner = s.client();
        let run = script.to_string();
        let script_thread = std::thread::spawn(move || err_text(eval(&mut runner, &run, &[], &[])));
        let mut other = s.client();
        wait_busy(&mut other);
        let ok: String = redis::cmd("SCRIPT").arg("KILL").query(&mut other).unwrap();
        assert_eq!(ok, "OK", "{script}");
        let killed = script_thread.join().unwrap();
        assert!(
            killed.contains("Script killed by user with SCRIPT KILL"),
            "{script}: {killed}"
        );
        let pong: String = redis::cmd("PING").query(&mut other).unwrap();
        assert_eq!(pong, "PONG");
    }
}
#[test]
fn js_busy_script_that_wrote_is_unkillable() {
    let s = TestServer::start_with(&[("busy-reply-threshold", "20")]);
    let mut runner = s.client();
    let script = std::thread::spawn(move || {
        eval(
            &mut runner,
            "redis.call('set', KEYS[0], 'y'); const t0 = redis.call('time'); \
             const us = (t) => Number(t[0]) * 1e6 + Number(t[1]); \
             while (us(redis.call('time')) - us(t0) < 300000) {} return 'done'",
            &["x"],
            &[],
        )
        .unwrap()
    });
    let mut other = s.client();
    wait_busy(&mut other);
    let r: RedisResult<String> = redis::cmd("SCRIPT").arg("KILL").query(&mut other);
    assert!(err_text(r).starts_with("UNKILLABLE Sorry the script already executed write commands"));
    assert_eq!(script.join().unwrap(), bulk("done"));
    let v: String = redis::cmd("GET").arg("x").query(&mut other).unwrap();
    assert_eq!(v, "y");
}

#[test]
fn js_function_kill_stops_a_busy_function() {
    let s = TestServer::start_with(&[("busy-reply-threshold", "20")]);
    let mut c = s.client();
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!js name=spin\nredis.registerFunction('spin', () => { for (;;) {} })")
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
    let ok: String = redis::cmd("FUNCTION")
        .arg("KILL")
        .query(&mut other)
        .unwrap();
    assert_eq!(ok, "OK");
    assert!(script.join().unwrap().contains("Script killed by user"));
    // A library whose top level never ends is stopped by FUNCTION LOAD's
    // own bound.
    let r: RedisResult<String> = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!js name=forever\nfor (;;) {}")
        .query(&mut other);
    assert_eq!(
        err_text(r),
        "ERR Error registering functions: FUNCTION LOAD timeout"
    );
}

const LIB: &str = "#!js name=mylib\n\
redis.registerFunction('hello', (keys, args) => 'hi ' + args[0]);\n\
redis.registerFunction('setit', function (keys, args) { return redis.call('set', keys[0], args[0]) });\n\
redis.registerFunction({function_name: 'getit', callback: (keys) => redis.call('get', keys[0]), flags: ['no-writes'], description: 'reads'});\n\
redis.registerFunction('badro', (keys) => redis.call('set', keys[0], 1), {flags: ['no-writes']});";

#[test]
fn js_functions_load_call_list_dump_restore() {
    let s = TestServer::start();
    let mut c = s.client();
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(LIB)
        .query(&mut c)
        .unwrap();
    assert_eq!(name, "mylib");
    let v: String = redis::cmd("FCALL")
        .arg("hello")
        .arg(0)
        .arg("you")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "hi you");
    let _: () = redis::cmd("FCALL")
        .arg("setit")
        .arg(1)
        .arg("fk")
        .arg("v1")
        .query(&mut c)
        .unwrap();
    let v: String = redis::cmd("FCALL_RO")
        .arg("getit")
        .arg(1)
        .arg("fk")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "v1");
    let r: RedisResult<Value> = redis::cmd("FCALL_RO")
        .arg("setit")
        .arg(1)
        .arg("fk")
        .arg("x")
        .query(&mut c);
    assert_eq!(
        err_text(r),
        "ERR Can not execute a script with write flag using *_ro command."
    );
    let r: RedisResult<Value> = redis::cmd("FCALL")
        .arg("badro")
        .arg(1)
        .arg("fk")
        .query(&mut c);
    assert_eq!(
        err_text(r),
        "ERR Write commands are not allowed from read-only scripts."
    );
    // FUNCTION LIST names the engine; STATS counts per engine.
    let list: Value = redis::cmd("FUNCTION").arg("LIST").query(&mut c).unwrap();
    let text = format!("{list:?}");
    assert!(text.contains("\"JS\"") || text.contains("JS"), "{text}");
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(
            "#!lua name=lualib\nredis.register_function('lhello', function(k, a) return 'lua' end)",
        )
        .query(&mut c)
        .unwrap();
    let stats: Value = redis::cmd("FUNCTION").arg("STATS").query(&mut c).unwrap();
    let text = format!("{stats:?}");
    assert!(text.contains("JS") && text.contains("LUA"), "{text}");
    // Errors of registration.
    for (code, err) in [
        ("#!js name=dup\nredis.registerFunction('hello', () => 1)", "ERR Function hello already exists"),
        ("#!js name=none\n1", "ERR No functions registered"),
        ("#!js name=bad\n)", "ERR Error compiling function: SyntaxError"),
        ("#!js name=bad\nredis.registerFunction('x', 5)", "ERR Error registering functions: TypeError"),
        ("#!js name=bad\nredis.registerFunction('x', () => 1, {flags: ['nope']})", "ERR Error registering functions: TypeError: unknown flag given"),
        ("#!js name=bad\nredis.call('ping')", "ERR Error registering functions: ReplyError: ERR redis.call/pcall can only be called inside a script invocation"),
    ] {
        let r: RedisResult<String> = redis::cmd("FUNCTION").arg("LOAD").arg(code).query(&mut c);
        let e = err_text(r);
        assert!(e.starts_with(err), "{code}: {e}");
    }
    // DUMP, FLUSH, RESTORE: both libraries come back and run.
    let dump: Vec<u8> = redis::cmd("FUNCTION").arg("DUMP").query(&mut c).unwrap();
    let _: () = redis::cmd("FUNCTION").arg("FLUSH").query(&mut c).unwrap();
    let r: RedisResult<String> = redis::cmd("FCALL")
        .arg("hello")
        .arg(0)
        .arg("x")
        .query(&mut c);
    assert_eq!(err_text(r), "ERR Function not found");
    let _: () = redis::cmd("FUNCTION")
        .arg("RESTORE")
        .arg(&dump)
        .query(&mut c)
        .unwrap();
    let v: String = redis::cmd("FCALL")
        .arg("hello")
        .arg(0)
        .arg("again")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "hi again");
    let v: String = redis::cmd("FCALL")
        .arg("lhello")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "lua");
    let _: () = redis::cmd("FUNCTION")
        .arg("DELETE")
        .arg("mylib")
        .query(&mut c)
        .unwrap();
    let r: RedisResult<String> = redis::cmd("FCALL")
        .arg("hello")
        .arg(0)
        .arg("x")
        .query(&mut c);
    assert_eq!(err_text(r), "ERR Function not found");
}

#[test]
fn js_libraries_survive_debug_reload_and_restart() {
    let s = TestServer::start();
    let mut c = s.client();
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(LIB)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut c).unwrap();
    let v: String = redis::cmd("FCALL")
        .arg("hello")
        .arg(0)
        .arg("reload")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "hi reload");
    drop(s);

    let dir = temp_dir("js-libs");
    let goblin = Proc::goblin(&dir, &["--save", "", "--appendonly", "no"]);
    let mut c = goblin.client();
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(LIB)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    goblin.shutdown();
    let goblin = Proc::goblin(&dir, &["--save", "", "--appendonly", "no"]);
    let mut c = goblin.client();
    let v: String = redis::cmd("FCALL")
        .arg("hello")
        .arg(0)
        .arg("restart")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "hi restart");
    // rdb-save-js-libraries no: dump.rdb keeps the Lua libraries only,
    // so that Redis can load it.
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!lua name=lualib\nredis.register_function('lhello', function() return 'lua' end)")
        .query(&mut c)
        .unwrap();
    config_set(&mut c, "rdb-save-js-libraries", "no");
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    goblin.shutdown();
    let rdb = std::fs::read(dir.join("dump.rdb")).unwrap();
    assert!(!rdb.windows(4).any(|w| w == b"#!js"));
    assert!(rdb.windows(5).any(|w| w == b"#!lua"));
    let redis_dir = temp_dir("js-libs-redis");
    std::fs::copy(dir.join("dump.rdb"), redis_dir.join("dump.rdb")).unwrap();
    let redis = Proc::redis(&redis_dir, &["--save", "", "--appendonly", "no"]);
    let mut rc = redis.client();
    let v: String = redis::cmd("FCALL")
        .arg("lhello")
        .arg(0)
        .query(&mut rc)
        .unwrap();
    assert_eq!(v, "lua");
    redis.shutdown();
    for d in [dir, redis_dir] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn js_libraries_persist_in_the_append_only_file() {
    let dir = temp_dir("js-aof");
    let goblin = Proc::goblin(&dir, &["--save", "", "--appendonly", "yes"]);
    let mut c = goblin.client();
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(LIB)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("FCALL")
        .arg("setit")
        .arg(1)
        .arg("k")
        .arg("from-js")
        .query(&mut c)
        .unwrap();
    goblin.shutdown();
    let goblin = Proc::goblin(&dir, &["--save", "", "--appendonly", "yes"]);
    let mut c = goblin.client();
    let v: String = redis::cmd("FCALL")
        .arg("hello")
        .arg(0)
        .arg("aof")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, "hi aof");
    let v: String = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v, "from-js");
    goblin.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

/// The DECRPOS idiom in JavaScript: takes a unit when one remains.
pub const JS_DECRPOS: &str = "#!js\nconst v = Number(redis.call('get', KEYS[0]) ?? 0);\n\
if (v > 0) return redis.call('decr', KEYS[0]);\nreturn -1;";

#[test]
fn js_decrpos_idiom_never_oversells() {
    let s = TestServer::start();
    let mut c = s.client();
    let _: () = redis::cmd("SET")
        .arg("stock")
        .arg(2000)
        .query(&mut c)
        .unwrap();
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(JS_DECRPOS)
        .query(&mut c)
        .unwrap();
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let mut conn = s.client();
            let sha = sha.clone();
            std::thread::spawn(move || {
                let mut left = Vec::new();
                loop {
                    let n: i64 = redis::cmd("EVALSHA")
                        .arg(&sha)
                        .arg(1)
                        .arg("stock")
                        .query(&mut conn)
                        .unwrap();
                    if n == -1 {
                        return left;
                    }
                    left.push(n);
                }
            })
        })
        .collect();
    let mut all: Vec<i64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    all.sort();
    assert_eq!(
        all,
        (0..2000).collect::<Vec<_>>(),
        "each remaining count once"
    );
    let left: i64 = redis::cmd("GET").arg("stock").query(&mut c).unwrap();
    assert_eq!(left, 0);
}

#[test]
fn js_acl_checks_and_their_texts_are_lua_s() {
    let s = TestServer::start();
    let mut admin = s.client();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("limited")
        .arg("on")
        .arg(">pw")
        .arg("~allowed*")
        .arg("+@all")
        .arg("-flushall")
        .query(&mut admin)
        .unwrap();
    let mut c = s.client();
    let _: () = redis::cmd("AUTH")
        .arg("limited")
        .arg("pw")
        .query(&mut c)
        .unwrap();
    // Undeclared keys and commands the user lacks: refused inside the
    // script, with Lua's text.
    for (lua, js) in [
        (
            "return redis.call('set', 'forbidden', 1)",
            "return redis.call('set', 'forbidden', 1)",
        ),
        (
            "return redis.call('flushall')",
            "return redis.call('flushall')",
        ),
    ] {
        let lua_err: RedisResult<Value> = redis::cmd("EVAL")
            .arg(lua)
            .arg(1)
            .arg("allowed:1")
            .query(&mut c);
        let lua_err = err_text(lua_err);
        let js_err = err_text(eval(&mut c, js, &["allowed:1"], &[]));
        // Lua's text ends with where in the script the error was raised.
        assert_eq!(js_err, lua_err.split(" script: ").next().unwrap(), "{js}");
        assert!(js_err.contains("The user executing the script"), "{js_err}");
    }
    // A declared key the user may not reach: refused before the script
    // runs, whatever its language.
    let lua_err: RedisResult<Value> = redis::cmd("EVAL")
        .arg("return 1")
        .arg(1)
        .arg("forbidden")
        .query(&mut c);
    let js_err = eval(&mut c, "return 1", &["forbidden"], &[]);
    let js_err = err_text(js_err);
    assert_eq!(js_err, err_text(lua_err));
    assert!(js_err.starts_with("NOPERM"), "{js_err}");
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('set', KEYS[0], 'v').ok",
            &["allowed:1"],
            &[]
        )
        .unwrap(),
        bulk("OK")
    );
}
