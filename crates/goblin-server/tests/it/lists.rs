//! List commands over the wire: the reply shapes that depend on the
//! protocol version (null versus empty array), sent and checked as raw
//! bytes, as a client library would see them.

use goblin_engine::{Config, Engine};
use goblin_server::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn start() -> std::net::SocketAddr {
    let config = Config::new();
    config.set_initial("port", "0").unwrap();
    config.set_initial("bind", "127.0.0.1").unwrap();
    let engine = Engine::new(config);
    let server = Server::bind(engine).await.unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.run());
    addr
}

fn command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Sends one command and reads until `expected` has arrived (or the
/// connection closes), returning what was read.
async fn exchange(conn: &mut TcpStream, args: &[&str], expected: &[u8]) -> Vec<u8> {
    conn.write_all(&command(args)).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.len() < expected.len() {
        let n = conn.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    got
}

async fn check(conn: &mut TcpStream, args: &[&str], expected: &[u8]) {
    let got = exchange(conn, args, expected).await;
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(expected),
        "reply to {args:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_replies_distinguish_null_from_empty_in_both_protocols() {
    let addr = start().await;
    let mut c = TcpStream::connect(addr).await.unwrap();
    check(&mut c, &["RPUSH", "l", "a", "b", "c"], b":3\r\n").await;
    // RESP2: a missing key is a null bulk without COUNT, a null array with it.
    check(&mut c, &["LPOP", "missing"], b"$-1\r\n").await;
    check(&mut c, &["LPOP", "missing", "1"], b"*-1\r\n").await;
    check(&mut c, &["RPOP", "missing", "0"], b"*-1\r\n").await;
    // COUNT 0 on an existing list is an empty array.
    check(&mut c, &["LPOP", "l", "0"], b"*0\r\n").await;
    check(&mut c, &["RPOP", "l", "2"], b"*2\r\n$1\r\nc\r\n$1\r\nb\r\n").await;
    check(
        &mut c,
        &["LPOP", "l", "-1"],
        b"-ERR value is out of range, must be positive\r\n",
    )
    .await;
    check(&mut c, &["LMPOP", "1", "missing", "LEFT"], b"*-1\r\n").await;
    check(&mut c, &["LPOS", "l", "zz"], b"$-1\r\n").await;
    check(&mut c, &["LPOS", "l", "zz", "COUNT", "0"], b"*0\r\n").await;
    check(&mut c, &["BLPOP", "missing", "0.001"], b"*-1\r\n").await;

    // RESP3: every one of those nulls is `_`.
    // HELLO's map, then PING's reply marks its end.
    let mut both = command(&["HELLO", "3"]);
    both.extend(command(&["PING"]));
    c.write_all(&both).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(b"+PONG\r\n") {
        let n = c.read(&mut buf).await.unwrap();
        assert!(n > 0, "connection closed");
        got.extend_from_slice(&buf[..n]);
    }
    assert!(got.starts_with(b"%7\r\n"));
    check(&mut c, &["LPOP", "missing"], b"_\r\n").await;
    check(&mut c, &["LPOP", "missing", "1"], b"_\r\n").await;
    check(&mut c, &["LPOP", "l", "0"], b"*0\r\n").await;
    check(&mut c, &["LMPOP", "1", "missing", "LEFT"], b"_\r\n").await;
    check(
        &mut c,
        &["BLMOVE", "missing", "x", "LEFT", "LEFT", "0.001"],
        b"_\r\n",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_wrong_types() {
    let addr = start().await;
    let mut c = TcpStream::connect(addr).await.unwrap();
    check(&mut c, &["SET", "s", "v"], b"+OK\r\n").await;
    let wrongtype = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    for args in [
        &["LPUSH", "s", "x"][..],
        &["LLEN", "s"],
        &["LRANGE", "s", "0", "-1"],
        &["LPOP", "s"],
        &["BLPOP", "s", "0"],
        &["LMOVE", "s", "d", "LEFT", "LEFT"],
    ] {
        check(&mut c, args, wrongtype).await;
    }
    check(
        &mut c,
        &["LSET", "nokey", "0", "x"],
        b"-ERR no such key\r\n",
    )
    .await;
    check(&mut c, &["RPUSH", "l", "a"], b":1\r\n").await;
    check(
        &mut c,
        &["LSET", "l", "5", "x"],
        b"-ERR index out of range\r\n",
    )
    .await;
    check(
        &mut c,
        &["LINSERT", "l", "middle", "a", "x"],
        b"-ERR syntax error\r\n",
    )
    .await;
    check(
        &mut c,
        &["LMPOP", "0", "l", "LEFT"],
        b"-ERR numkeys should be greater than 0\r\n",
    )
    .await;
    check(
        &mut c,
        &["BLPOP", "l2", "-1"],
        b"-ERR timeout is negative\r\n",
    )
    .await;
    check(
        &mut c,
        &["BLPOP", "l2", "x"],
        b"-ERR timeout is not a float or out of range\r\n",
    )
    .await;
    check(
        &mut c,
        &["LPOP", "l", "1", "2"],
        b"-ERR wrong number of arguments for 'lpop' command\r\n",
    )
    .await;
    // The last element popped deletes the key.
    check(&mut c, &["RPOP", "l"], b"$1\r\na\r\n").await;
    check(&mut c, &["EXISTS", "l"], b":0\r\n").await;
}
