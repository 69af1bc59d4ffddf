//! Error replies that quote what the client sent carry its bytes
//! unchanged, valid UTF-8 or not, as Redis 7.0.15 sends them (each
//! expected reply below is the one redis-server 7.0.15 gives, byte for
//! byte); only '\r' and '\n' become spaces, and a NUL ends a text that
//! Redis splices with printf's `%s`.

use crate::common::{resp, RawClient, TestServer};

/// Sends `request` and asserts that the reply is exactly `expected`,
/// byte for byte.
fn exchange(c: &mut RawClient, request: &[u8], expected: &[u8]) {
    c.send(request);
    let got = c.read_exact_len(expected.len());
    assert_eq!(
        got.escape_ascii().to_string(),
        expected.escape_ascii().to_string(),
        "reply to {}",
        request.escape_ascii()
    );
}

fn eval(script: &[u8]) -> Vec<u8> {
    resp(&[b"EVAL", script, b"0"])
}

#[test]
fn unknown_command_echoes_its_bytes() {
    let s = TestServer::start();
    let mut c = s.raw();
    exchange(
        &mut c,
        &resp(&[b"\xff"]),
        b"-ERR unknown command '\xff', with args beginning with: \r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"\xff", b"a\xfe", b"b"]),
        b"-ERR unknown command '\xff', with args beginning with: 'a\xfe' 'b' \r\n",
    );
    // printf's %s: a NUL ends each text.
    exchange(
        &mut c,
        &resp(&[b"a\0b", b"c\0d"]),
        b"-ERR unknown command 'a', with args beginning with: 'c' \r\n",
    );
    // Newlines become spaces.
    exchange(
        &mut c,
        &resp(&[b"x", b"\xffa\r\nb"]),
        b"-ERR unknown command 'x', with args beginning with: '\xffa  b' \r\n",
    );
    // At most 128 bytes of arguments.
    let a = [b'a'; 100];
    let b = [b'b'; 100];
    let mut expected = b"-ERR unknown command 'x', with args beginning with: '".to_vec();
    expected.extend_from_slice(&a);
    expected.extend_from_slice(b"' '");
    expected.extend_from_slice(&b[..25]);
    expected.extend_from_slice(b"' \r\n");
    exchange(&mut c, &resp(&[b"x", &a, &b]), &expected);
    // Inside MULTI, then the transaction is discarded.
    exchange(&mut c, &resp(&[b"MULTI"]), b"+OK\r\n");
    exchange(
        &mut c,
        &resp(&[b"\xff"]),
        b"-ERR unknown command '\xff', with args beginning with: \r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    );
}

#[test]
fn unknown_subcommand_echoes_its_bytes() {
    let s = TestServer::start();
    let mut c = s.raw();
    exchange(
        &mut c,
        &resp(&[b"CONFIG", b"\xff"]),
        b"-ERR unknown subcommand '\xff'. Try CONFIG HELP.\r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"OBJECT", b"\xff"]),
        b"-ERR unknown subcommand '\xff'. Try OBJECT HELP.\r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"config", b"a\0b"]),
        b"-ERR unknown subcommand 'a'. Try CONFIG HELP.\r\n",
    );
}

#[test]
fn config_set_of_an_unknown_binary_parameter_echoes_its_name() {
    let s = TestServer::start();
    let mut c = s.raw();
    exchange(
        &mut c,
        &resp(&[b"CONFIG", b"SET", b"\xff", b"1"]),
        b"-ERR Unknown option or number of arguments for CONFIG SET - '\xff'\r\n",
    );
    // The name at fault, after one that is known.
    exchange(
        &mut c,
        &resp(&[b"CONFIG", b"SET", b"maxmemory", b"1", b"\xff", b"1"]),
        b"-ERR Unknown option or number of arguments for CONFIG SET - '\xff'\r\n",
    );
    // In EXEC's array.
    exchange(&mut c, &resp(&[b"MULTI"]), b"+OK\r\n");
    exchange(
        &mut c,
        &resp(&[b"CONFIG", b"SET", b"\xff", b"1"]),
        b"+QUEUED\r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"EXEC"]),
        b"*1\r\n-ERR Unknown option or number of arguments for CONFIG SET - '\xff'\r\n",
    );
}

#[test]
fn lua_error_reply_with_binary_text_reaches_the_client_unchanged() {
    let s = TestServer::start();
    let mut c = s.raw();
    exchange(
        &mut c,
        &eval(b"return redis.error_reply('\xff\xfe')"),
        b"-ERR \xff\xfe\r\n",
    );
    // A text with a space before 32 bytes carries its own code.
    exchange(
        &mut c,
        &eval(b"return redis.error_reply('\xff \xfe')"),
        b"-\xff \xfe\r\n",
    );
    exchange(
        &mut c,
        &eval(b"return {1, redis.error_reply('\xff\xfe')}"),
        b"*2\r\n:1\r\n-ERR \xff\xfe\r\n",
    );
    exchange(
        &mut c,
        &eval(b"local ok, e = pcall(redis.error_reply, '\xff\xfe'); return e"),
        b"-ERR \xff\xfe\r\n",
    );
    exchange(&mut c, &eval(b"return {ok='\xff'}"), b"+\xff\r\n");
    // In EXEC's array.
    exchange(&mut c, &resp(&[b"MULTI"]), b"+OK\r\n");
    exchange(
        &mut c,
        &eval(b"return redis.error_reply('\xff\xfe')"),
        b"+QUEUED\r\n",
    );
    exchange(&mut c, &resp(&[b"EXEC"]), b"*1\r\n-ERR \xff\xfe\r\n");
    // RESP3 writes the same error line (HELLO's reply is read up to the
    // PING's after it).
    c.send(&[resp(&[b"HELLO", b"3"]), resp(&[b"PING"])].concat());
    let mut seen = Vec::new();
    while !seen.ends_with(b"+PONG\r\n") {
        seen.extend(c.read_exact_len(1));
    }
    exchange(
        &mut c,
        &eval(b"return redis.error_reply('\xff\xfe')"),
        b"-ERR \xff\xfe\r\n",
    );
}

#[test]
fn command_errors_with_binary_text_pass_through_redis_call_and_pcall() {
    let s = TestServer::start();
    let mut c = s.raw();
    exchange(
        &mut c,
        &eval(b"return redis.pcall('expire','k','10','\xff')"),
        b"-ERR Unsupported option \xff\r\n",
    );
    exchange(
        &mut c,
        &eval(b"return redis.call('expire','k','10','\xff')"),
        b"-ERR Unsupported option \xff script: 79210abc248fa3acb3356bcb455ad841804cfd7f, on @user_script:1.\r\n",
    );
    exchange(
        &mut c,
        &eval(b"return redis.pcall('expire','k','10','\xff').err"),
        b"$24\r\nERR Unsupported option \xff\r\n",
    );
    exchange(
        &mut c,
        &eval(b"local ok, e = pcall(redis.call, 'expire','k','10','\xff'); return e"),
        b"$24\r\nERR Unsupported option \xff\r\n",
    );
}

#[test]
fn eval_runtime_and_compile_errors_keep_binary_text() {
    let s = TestServer::start();
    let mut c = s.raw();
    exchange(
        &mut c,
        &eval(b"error('\xff\xfe')"),
        b"-ERR user_script:1: \xff\xfe script: 1648cae0878fa72d8bbfced58c199bab2635ed0c, on @user_script:1.\r\n",
    );
    exchange(
        &mut c,
        &eval(b"error({err='\xff\xfe'})"),
        b"-\xff\xfe script: 4cf5788cfd2f8fb44638232fc8e0934f192092af, on @user_script:1.\r\n",
    );
    // The message is a C string to Redis: it ends at a NUL.
    exchange(
        &mut c,
        &eval(b"error('a\\0b')"),
        b"-ERR user_script:1: a script: 5f5ac4831d66dd38653b036c54cfd07d78762d8c, on @user_script:1.\r\n",
    );
    exchange(
        &mut c,
        &eval(b"local t = nil; return t.\xff"),
        b"-ERR Error compiling script (new function): user_script:1: '<name>' expected near '\xff'\r\n",
    );
    exchange(
        &mut c,
        &eval(b"#!lua flags=\xff\nreturn 1"),
        b"-ERR Unexpected flag in script shebang: \xff\r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"FUNCTION", b"LOAD", b"#!lu\xff name=x\nreturn 1"]),
        b"-ERR Engine 'lu\xff' not found\r\n",
    );
}

#[test]
fn newlines_inside_an_error_text_become_spaces() {
    let s = TestServer::start();
    let mut c = s.raw();
    exchange(
        &mut c,
        &eval(b"return redis.error_reply('a\\r\\nb')"),
        b"-ERR a  b\r\n",
    );
    exchange(
        &mut c,
        &eval(b"return {err='\xff\\r\\nq'}"),
        b"-\xff  q\r\n",
    );
    exchange(
        &mut c,
        &eval(b"return redis.error_reply('-\xff\\r\\n\xfe x')"),
        b"-\xff  \xfe x\r\n",
    );
}

#[test]
fn newlines_ending_a_formatted_error_are_trimmed() {
    let s = TestServer::start();
    let mut c = s.raw();
    // addReplyErrorFormat trims them...
    exchange(
        &mut c,
        &resp(&[b"EXPIRE", b"k", b"10", b"x\r\n"]),
        b"-ERR Unsupported option x\r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"FUNCTION", b"LOAD", b"x\r\n", b"y"]),
        b"-ERR Unknown option given: x\r\n",
    );
    // ... addReplyErrorSdsSafe does not.
    exchange(
        &mut c,
        &resp(&[b"FUNCTION", b"LIST", b"x\r\n"]),
        b"-ERR Unknown argument x  \r\n",
    );
}

#[test]
fn errorstats_count_codes_that_are_not_utf8() {
    let s = TestServer::start();
    let mut c = s.raw();
    exchange(&mut c, &resp(&[b"CONFIG", b"RESETSTAT"]), b"+OK\r\n");
    exchange(
        &mut c,
        &resp(&[b"\xff"]),
        b"-ERR unknown command '\xff', with args beginning with: \r\n",
    );
    exchange(
        &mut c,
        &eval(b"return redis.error_reply('\xff\xfe')"),
        b"-ERR \xff\xfe\r\n",
    );
    exchange(
        &mut c,
        &eval(b"return redis.error_reply('\xff \xfe')"),
        b"-\xff \xfe\r\n",
    );
    // Counted under the code as written: the newline is its space.
    exchange(
        &mut c,
        &eval(b"return redis.error_reply('-\xff\\r\\n\xfe x')"),
        b"-\xff  \xfe x\r\n",
    );
    exchange(
        &mut c,
        &eval(b"error({err='\xfe\xfd'})"),
        b"-\xfe\xfd script: cc8831fcadc4aea8959d83a4a4c9cedb8420f5a3, on @user_script:1.\r\n",
    );
    exchange(
        &mut c,
        &eval(b"return redis.pcall('expire','k','10','\xff')"),
        b"-ERR Unsupported option \xff\r\n",
    );
    // A code of 31 bytes or more is counted as ERR.
    let long = [
        b"return redis.error_reply('-".as_slice(),
        &[b'C'; 31],
        b" x')",
    ]
    .concat();
    let mut expected = b"-".to_vec();
    expected.extend_from_slice(&[b'C'; 31]);
    expected.extend_from_slice(b" x\r\n");
    exchange(&mut c, &eval(&long), &expected);
    exchange(
        &mut c,
        &resp(&[b"INFO", b"errorstats"]),
        b"$80\r\n# Errorstats\r\nerrorstat_ERR:count=4\r\nerrorstat_\xfe\xfd:count=1\r\nerrorstat_\xff:count=2\r\n\r\n",
    );
}

#[test]
fn acl_errors_quote_rules_and_names_unchanged() {
    let s = TestServer::start();
    let mut c = s.raw();
    exchange(
        &mut c,
        &resp(&[b"ACL", b"SETUSER", b"u", b"\xff"]),
        b"-ERR Error in ACL SETUSER modifier '\xff': Syntax error\r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"ACL", b"SETUSER", b"u", b"(\xff"]),
        b"-ERR Unmatched parenthesis in acl selector starting at '(\xff'.\r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"ACL", b"DRYRUN", b"\xff", b"get"]),
        b"-ERR User '\xff' not found\r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"ACL", b"SETUSER", b"v", b"on", b"nopass", b"+get", b"~a*"]),
        b"+OK\r\n",
    );
    exchange(
        &mut c,
        &resp(&[b"ACL", b"DRYRUN", b"v", b"get", b"\xff"]),
        b"$50\r\nThis user has no permissions to access the '\xff' key\r\n",
    );
}

#[test]
fn protocol_error_quotes_the_byte_it_found() {
    let s = TestServer::start();
    let mut c = s.raw();
    exchange(
        &mut c,
        b"*1\r\n\xff3\r\nfoo\r\n",
        b"-ERR Protocol error: expected '$', got '\xff'\r\n",
    );
    assert!(c.is_closed());
    // Counted as an error reply, as in Redis.
    let mut c = s.raw();
    exchange(
        &mut c,
        &resp(&[b"INFO", b"errorstats"]),
        b"$37\r\n# Errorstats\r\nerrorstat_ERR:count=1\r\n\r\n",
    );
}
