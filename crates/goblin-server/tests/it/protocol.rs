//! Raw protocol tests: bytes in, exact bytes out.

use crate::common::{resp, TestServer};

#[test]
fn inline_and_multibulk_ping() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.roundtrip(b"PING\r\n", b"+PONG\r\n");
    c.roundtrip(b"*1\r\n$4\r\nPING\r\n", b"+PONG\r\n");
    c.roundtrip(b"ping \"hello world\"\r\n", b"$11\r\nhello world\r\n");
    // A bare newline is an empty inline command and gets no reply.
    c.roundtrip(b"\r\nPING\r\n", b"+PONG\r\n");
}

#[test]
fn pipelined_replies_arrive_in_order() {
    let s = TestServer::start();
    let mut c = s.raw();
    let mut req = Vec::new();
    let mut expected = Vec::new();
    for i in 0..200 {
        req.extend(resp(&[
            b"SET",
            format!("k{i}").as_bytes(),
            format!("v{i}").as_bytes(),
        ]));
        expected.extend_from_slice(b"+OK\r\n");
    }
    for i in 0..200 {
        req.extend(resp(&[b"GET", format!("k{i}").as_bytes()]));
        let v = format!("v{i}");
        expected.extend(format!("${}\r\n{v}\r\n", v.len()).into_bytes());
    }
    c.roundtrip(&req, &expected);
}

#[test]
fn command_split_across_many_writes() {
    let s = TestServer::start();
    let mut c = s.raw();
    let req = resp(&[b"SET", b"split", b"0123456789"]);
    for b in &req {
        c.send(&[*b]);
    }
    c.roundtrip(b"", b"+OK\r\n");
    c.roundtrip(&resp(&[b"GET", b"split"]), b"$10\r\n0123456789\r\n");
}

#[test]
fn binary_safe_keys_and_values() {
    let s = TestServer::start();
    let mut c = s.raw();
    let key: &[u8] = b"k\0\r\n\xff";
    let value: &[u8] = b"\0\x01\r\n$3\r\n\xfe";
    c.roundtrip(&resp(&[b"SET", key, value]), b"+OK\r\n");
    let mut expected = format!("${}\r\n", value.len()).into_bytes();
    expected.extend_from_slice(value);
    expected.extend_from_slice(b"\r\n");
    c.roundtrip(&resp(&[b"GET", key]), &expected);
}

/// Every protocol error has Redis's text and closes the connection, and
/// the server keeps serving other clients.
#[test]
fn protocol_errors_close_the_connection() {
    let s = TestServer::start();
    let cases: &[(&[u8], &[u8])] = &[
        (
            b"*3000000000\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*20\r\nfoo\r\n",
            b"-ERR Protocol error: expected '$', got 'f'\r\n",
        ),
        (
            b"*1\r\n$-10\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n$2000000000\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n$blabla\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*blabla\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"set \"\"\"test-key\"\"\" test-value\r\n",
            b"-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
    ];
    for (req, expected) in cases {
        let mut c = s.raw();
        c.roundtrip(req, expected);
        assert!(
            c.is_closed(),
            "connection left open after {:?}",
            String::from_utf8_lossy(req)
        );
    }
    s.raw().roundtrip(b"PING\r\n", b"+PONG\r\n");
}

#[test]
fn oversized_inline_and_count_lines_are_refused() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.send(&vec![b'a'; 70 * 1024]);
    c.roundtrip(b"", b"-ERR Protocol error: too big inline request\r\n");
    assert!(c.is_closed());

    let mut c = s.raw();
    let mut req = b"*".to_vec();
    req.extend(vec![b'1'; 70 * 1024]);
    c.send(&req);
    c.roundtrip(b"", b"-ERR Protocol error: too big mbulk count string\r\n");
    assert!(c.is_closed());
}

/// A declared bulk larger than proto-max-bulk-len is refused at once,
/// before any of it is read.
#[test]
fn bulk_over_proto_max_bulk_len() {
    let s = TestServer::start_with(&[("proto-max-bulk-len", "1mb")]);
    let mut c = s.raw();
    c.roundtrip(
        b"*2\r\n$3\r\nGET\r\n$2000000\r\n",
        b"-ERR Protocol error: invalid bulk length\r\n",
    );
    assert!(c.is_closed());
}

/// A client whose unparsed input passes client-query-buffer-limit is
/// disconnected, and nothing of its command is applied.
#[test]
fn query_buffer_limit_disconnects() {
    let s = TestServer::start_with(&[("client-query-buffer-limit", "1mb")]);
    let mut c = s.raw();
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n");
    let chunk = vec![b'x'; 64 * 1024];
    let mut closed = false;
    for _ in 0..64 {
        if std::io::Write::write_all(&mut c.stream, &chunk).is_err() {
            closed = true;
            break;
        }
    }
    assert!(closed || c.is_closed());
    s.raw().roundtrip(&resp(&[b"EXISTS", b"k"]), b":0\r\n");
}

#[test]
fn disconnect_mid_command_applies_nothing() {
    let s = TestServer::start();
    {
        let mut c = s.raw();
        c.send(b"*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$5\r\nab");
    }
    let mut c = s.raw();
    c.roundtrip(&resp(&[b"EXISTS", b"half"]), b":0\r\n");
}

#[test]
fn resp3_after_hello() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.send(&resp(&[b"HELLO", b"3"]));
    let mut got = Vec::new();
    while !got.ends_with(b"$7\r\nmodules\r\n*0\r\n") {
        let more = c.read_exact_len(1);
        assert!(!more.is_empty(), "connection closed");
        got.extend(more);
    }
    assert!(
        got.starts_with(b"%7\r\n"),
        "HELLO 3 replies with a map: {:?}",
        String::from_utf8_lossy(&got)
    );
    assert!(got.windows(13).any(|w| w == b"$5\r\nproto\r\n:3"));
    c.roundtrip(&resp(&[b"GET", b"missing"]), b"_\r\n");
    c.roundtrip(&resp(&[b"DEBUG", b"PROTOCOL", b"double"]), b",3.141\r\n");
    c.roundtrip(&resp(&[b"DEBUG", b"PROTOCOL", b"true"]), b"#t\r\n");
    c.roundtrip(
        &resp(&[b"HELLO", b"4"]),
        b"-NOPROTO unsupported protocol version\r\n",
    );
}

#[test]
fn unknown_command_and_arity_texts() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.roundtrip(
        &resp(&[b"NOSUCH", b"a", b"b"]),
        b"-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \r\n",
    );
    c.roundtrip(
        &resp(&[b"GET"]),
        b"-ERR wrong number of arguments for 'get' command\r\n",
    );
    c.roundtrip(
        &resp(&[b"CONFIG", b"NOSUCH"]),
        b"-ERR unknown subcommand 'NOSUCH'. Try CONFIG HELP.\r\n",
    );
    c.roundtrip(
        &resp(&[b"CONFIG", b"GET"]),
        b"-ERR wrong number of arguments for 'config|get' command\r\n",
    );
}

#[test]
fn requirepass_limits_unauthenticated_clients() {
    let s = TestServer::start_with(&[("requirepass", "secret")]);
    let mut c = s.raw();
    c.roundtrip(
        &resp(&[b"GET", b"x"]),
        b"-NOAUTH Authentication required.\r\n",
    );
    c.roundtrip(
        &resp(&[b"AUTH", b"wrong"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    // Before AUTH, a long multibulk is refused outright.
    let mut c2 = s.raw();
    c2.roundtrip(
        b"*20\r\n",
        b"-ERR Protocol error: unauthenticated multibulk length\r\n",
    );
    assert!(c2.is_closed());
    c.roundtrip(&resp(&[b"AUTH", b"secret"]), b"+OK\r\n");
    c.roundtrip(&resp(&[b"GET", b"x"]), b"$-1\r\n");
}

#[test]
fn quit_replies_then_closes() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.roundtrip(b"QUIT\r\n", b"+OK\r\n");
    assert!(c.is_closed());
}
