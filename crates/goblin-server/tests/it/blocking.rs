//! Blocking list commands over real connections: a server runs in-process
//! on an ephemeral port and `redis` crate clients block, get served, time
//! out, are unblocked, killed, or go away.
//!
//! Where a test must wait for a client to be blocked, it polls INFO's
//! blocked_clients with a bounded number of tries.

use crate::common::bulk;
use goblin_engine::{Config, Engine};
use goblin_server::Server;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

struct TestServer {
    engine: Arc<Engine>,
    client: redis::Client,
    addr: std::net::SocketAddr,
}

async fn start() -> TestServer {
    let config = Config::new();
    config.set_initial("port", "0").unwrap();
    config.set_initial("bind", "127.0.0.1").unwrap();
    // Enough shards for keys to land on different ones.
    config.set_initial("shards", "16").unwrap();
    config.set_initial("enable-debug-command", "yes").unwrap();
    let engine = Engine::new(config);
    let server = Server::bind(engine.clone()).await.unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.run());
    let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
    TestServer {
        engine,
        client,
        addr,
    }
}

impl TestServer {
    /// A connection of its own (blocking commands hold a connection), with
    /// no client-side reply timeout.
    async fn conn(&self) -> MultiplexedConnection {
        let cfg = AsyncConnectionConfig::new().set_response_timeout(None);
        self.client
            .get_multiplexed_async_connection_with_config(&cfg)
            .await
            .unwrap()
    }

    async fn blocked_clients(&self, conn: &mut MultiplexedConnection) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("clients")
            .query_async(conn)
            .await
            .unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .expect("blocked_clients in INFO")
            .trim()
            .parse()
            .unwrap()
    }

    /// Waits (bounded) until INFO reports `n` blocked clients.
    async fn wait_blocked(&self, conn: &mut MultiplexedConnection, n: u64) {
        for _ in 0..2000 {
            if self.blocked_clients(conn).await == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("never reached {n} blocked clients");
    }
}

/// Runs a command on its own task (it may block), on a connection of its own.
fn spawn_cmd(
    mut conn: MultiplexedConnection,
    cmd: redis::Cmd,
) -> JoinHandle<redis::RedisResult<Value>> {
    tokio::spawn(async move { cmd.query_async::<Value>(&mut conn).await })
}

fn pair(k: &str, v: &str) -> Value {
    Value::Array(vec![bulk(k), bulk(v)])
}

async fn client_id(conn: &mut MultiplexedConnection) -> i64 {
    redis::cmd("CLIENT")
        .arg("ID")
        .query_async(conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blpop_wakes_on_a_push_from_another_client() {
    let s = start().await;
    let mut c = s.conn().await;
    let waiter = spawn_cmd(
        s.conn().await,
        redis::cmd("BLPOP").arg("queue").arg(0).clone(),
    );
    s.wait_blocked(&mut c, 1).await;

    let len: i64 = redis::cmd("RPUSH")
        .arg("queue")
        .arg("job")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(len, 1);
    assert_eq!(waiter.await.unwrap().unwrap(), pair("queue", "job"));
    // The element was consumed and the emptied list deleted.
    let exists: i64 = redis::cmd("EXISTS")
        .arg("queue")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(exists, 0);
    assert_eq!(s.blocked_clients(&mut c).await, 0);
    assert_eq!(s.engine.blocked_entries(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_reply_nil_and_leave_nothing_behind() {
    let s = start().await;
    let mut c = s.conn().await;
    let mut w = s.conn().await;
    let v: Value = redis::cmd("BLPOP")
        .arg("a")
        .arg("b")
        .arg(0.05)
        .query_async(&mut w)
        .await
        .unwrap();
    assert_eq!(v, Value::Nil);
    let v: Value = redis::cmd("BRPOPLPUSH")
        .arg("a")
        .arg("b")
        .arg(0.05)
        .query_async(&mut w)
        .await
        .unwrap();
    assert_eq!(v, Value::Nil);
    let v: Value = redis::cmd("BLMPOP")
        .arg(0.05)
        .arg(1)
        .arg("a")
        .arg("LEFT")
        .query_async(&mut w)
        .await
        .unwrap();
    assert_eq!(v, Value::Nil);
    assert_eq!(s.blocked_clients(&mut c).await, 0);
    assert_eq!(s.engine.blocked_entries(), 0);

    // A later push is not consumed by a client that timed out.
    let _: i64 = redis::cmd("RPUSH")
        .arg("a")
        .arg("x")
        .query_async(&mut c)
        .await
        .unwrap();
    let len: i64 = redis::cmd("LLEN")
        .arg("a")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(len, 1);

    // Bad timeouts are refused with Redis's texts.
    let err = redis::cmd("BLPOP")
        .arg("a")
        .arg(-1)
        .query_async::<Value>(&mut w)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timeout is negative"), "{err}");
    let err = redis::cmd("BLPOP")
        .arg("a")
        .arg("soon")
        .query_async::<Value>(&mut w)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("timeout is not a float or out of range"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_longest_waiting_client_is_served_first() {
    let s = start().await;
    let mut c = s.conn().await;
    let mut waiters = Vec::new();
    for n in 1..=3 {
        waiters.push(spawn_cmd(
            s.conn().await,
            redis::cmd("BLPOP").arg("fifo").arg(0).clone(),
        ));
        s.wait_blocked(&mut c, n).await;
    }
    let _: i64 = redis::cmd("RPUSH")
        .arg("fifo")
        .arg("first")
        .arg("second")
        .arg("third")
        .query_async(&mut c)
        .await
        .unwrap();
    let mut got = Vec::new();
    for w in waiters {
        got.push(w.await.unwrap().unwrap());
    }
    assert_eq!(
        got,
        vec![
            pair("fifo", "first"),
            pair("fifo", "second"),
            pair("fifo", "third")
        ]
    );
    assert_eq!(s.engine.blocked_entries(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_while_blocked_leaves_nothing() {
    let s = start().await;
    let mut c = s.conn().await;
    let mut raw = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    raw.write_all(b"*3\r\n$5\r\nBLPOP\r\n$4\r\ngone\r\n$1\r\n0\r\n")
        .await
        .unwrap();
    s.wait_blocked(&mut c, 1).await;
    assert_eq!(s.engine.blocked_entries(), 1);
    drop(raw);
    s.wait_blocked(&mut c, 0).await;
    assert_eq!(s.engine.blocked_entries(), 0);

    // Nobody consumes a push to the key it waited on.
    let _: i64 = redis::cmd("LPUSH")
        .arg("gone")
        .arg("x")
        .query_async(&mut c)
        .await
        .unwrap();
    let len: i64 = redis::cmd("LLEN")
        .arg("gone")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(len, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blmove_between_keys_on_different_shards() {
    let s = start().await;
    let ks = &s.engine.keyspace();
    // Three keys, each on its own shard.
    let mut keys: Vec<String> = Vec::new();
    for i in 0.. {
        let k = format!("key:{i}");
        if keys
            .iter()
            .all(|o| ks.shard_of_key(o.as_bytes()) != ks.shard_of_key(k.as_bytes()))
        {
            keys.push(k);
            if keys.len() == 3 {
                break;
            }
        }
    }
    let (src, dst, last) = (&keys[0], &keys[1], &keys[2]);
    let mut c = s.conn().await;

    // A BLMOVE waits on `src`; a BLMOVE waits on its destination `dst`.
    let first = spawn_cmd(
        s.conn().await,
        redis::cmd("BLMOVE")
            .arg(src)
            .arg(dst)
            .arg("LEFT")
            .arg("RIGHT")
            .arg(0)
            .clone(),
    );
    s.wait_blocked(&mut c, 1).await;
    let second = spawn_cmd(
        s.conn().await,
        redis::cmd("BLMOVE")
            .arg(dst)
            .arg(last)
            .arg("RIGHT")
            .arg("LEFT")
            .arg(0)
            .clone(),
    );
    s.wait_blocked(&mut c, 2).await;

    let _: i64 = redis::cmd("RPUSH")
        .arg(src)
        .arg("parcel")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(first.await.unwrap().unwrap(), bulk("parcel"));
    assert_eq!(second.await.unwrap().unwrap(), bulk("parcel"));
    let moved: Vec<String> = redis::cmd("LRANGE")
        .arg(last)
        .arg(0)
        .arg(-1)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(moved, vec!["parcel"]);
    let left: i64 = redis::cmd("EXISTS")
        .arg(src)
        .arg(dst)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(left, 0);
    assert_eq!(s.engine.blocked_entries(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_inside_exec_wakes_the_waiter_with_the_final_data() {
    let s = start().await;
    let mut c = s.conn().await;
    let waiter = spawn_cmd(s.conn().await, redis::cmd("BLPOP").arg("tx").arg(0).clone());
    s.wait_blocked(&mut c, 1).await;

    // Pushed then deleted within the transaction: nothing to serve.
    let _: Value = redis::pipe()
        .atomic()
        .cmd("LPUSH")
        .arg("tx")
        .arg("dropped")
        .cmd("DEL")
        .arg("tx")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(s.blocked_clients(&mut c).await, 1);

    // The waiter sees the state after EXEC: the last element pushed at the head.
    let _: Value = redis::pipe()
        .atomic()
        .cmd("LPUSH")
        .arg("tx")
        .arg("a")
        .cmd("LPUSH")
        .arg("tx")
        .arg("b")
        .cmd("LPUSH")
        .arg("tx")
        .arg("c")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(waiter.await.unwrap().unwrap(), pair("tx", "c"));
    let rest: Vec<String> = redis::cmd("LRANGE")
        .arg("tx")
        .arg(0)
        .arg(-1)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(rest, vec!["b", "a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_commands_inside_multi_do_not_block() {
    let s = start().await;
    let mut c = s.conn().await;
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("BLPOP")
        .arg("none")
        .arg(0)
        .cmd("BRPOPLPUSH")
        .arg("none")
        .arg("other")
        .arg(0)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(replies, vec![Value::Nil, Value::Nil]);
    assert_eq!(s.blocked_clients(&mut c).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_unblock_and_client_list() {
    let s = start().await;
    let mut c = s.conn().await;
    let mut w = s.conn().await;
    let id = client_id(&mut w).await;

    let waiter = spawn_cmd(w.clone(), redis::cmd("BLPOP").arg("u").arg(0).clone());
    s.wait_blocked(&mut c, 1).await;
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("ID")
        .arg(id)
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(list.contains("flags=b"), "{list}");
    let n: i64 = redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(id)
        .arg("TIMEOUT")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(waiter.await.unwrap().unwrap(), Value::Nil);

    let waiter = spawn_cmd(w.clone(), redis::cmd("BLPOP").arg("u").arg(0).clone());
    s.wait_blocked(&mut c, 1).await;
    let n: i64 = redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(id)
        .arg("ERROR")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(n, 1);
    let err = waiter.await.unwrap().unwrap_err();
    assert!(
        err.to_string()
            .contains("client unblocked via CLIENT UNBLOCK"),
        "{err}"
    );
    assert_eq!(err.code(), Some("UNBLOCKED"));

    // Not blocked any more: nothing to unblock.
    let n: i64 = redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(id)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(n, 0);
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("ID")
        .arg(id)
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(!list.contains("flags=b"), "{list}");
    assert_eq!(s.engine.blocked_entries(), 0);

    // The connection still works.
    let pong: String = redis::cmd("PING").query_async(&mut w).await.unwrap();
    assert_eq!(pong, "PONG");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_kill_of_a_blocked_client() {
    let s = start().await;
    let mut c = s.conn().await;
    let mut raw = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    raw.write_all(b"*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n*3\r\n$5\r\nBLPOP\r\n$1\r\nk\r\n$1\r\n0\r\n")
        .await
        .unwrap();
    s.wait_blocked(&mut c, 1).await;
    let mut buf = vec![0u8; 64];
    let n = raw.read(&mut buf).await.unwrap();
    let reply = std::str::from_utf8(&buf[..n]).unwrap();
    let id: i64 = reply.trim_start_matches(':').trim().parse().unwrap();

    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(killed, 1);
    // The server closes the connection without a reply.
    let mut rest = Vec::new();
    raw.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
    s.wait_blocked(&mut c, 0).await;
    assert_eq!(s.engine.blocked_entries(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_served_from_the_key_that_became_ready() {
    let s = start().await;
    let mut c = s.conn().await;
    // A waits on k1 and k2; B waits on k1 only.
    let a = spawn_cmd(
        s.conn().await,
        redis::cmd("BLPOP").arg("k1").arg("k2").arg(0).clone(),
    );
    s.wait_blocked(&mut c, 1).await;
    let b = spawn_cmd(s.conn().await, redis::cmd("BLPOP").arg("k1").arg(0).clone());
    s.wait_blocked(&mut c, 2).await;
    // k2 becomes ready before k1: A takes k2's element, B k1's.
    let _: Value = redis::pipe()
        .atomic()
        .cmd("RPUSH")
        .arg("k2")
        .arg("two")
        .cmd("RPUSH")
        .arg("k1")
        .arg("one")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(a.await.unwrap().unwrap(), pair("k2", "two"));
    assert_eq!(b.await.unwrap().unwrap(), pair("k1", "one"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_of_another_type_does_not_wake_and_swapdb_does() {
    let s = start().await;
    let mut c = s.conn().await;
    let waiter = spawn_cmd(s.conn().await, redis::cmd("BRPOP").arg("sw").arg(0).clone());
    s.wait_blocked(&mut c, 1).await;
    let _: () = redis::cmd("SET")
        .arg("sw")
        .arg("string")
        .query_async(&mut c)
        .await
        .unwrap();
    let _: i64 = redis::cmd("DEL")
        .arg("sw")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(s.blocked_clients(&mut c).await, 1);

    let _: () = redis::cmd("SELECT")
        .arg(3)
        .query_async(&mut c)
        .await
        .unwrap();
    let _: i64 = redis::cmd("RPUSH")
        .arg("sw")
        .arg("from-db3")
        .query_async(&mut c)
        .await
        .unwrap();
    let _: () = redis::cmd("SWAPDB")
        .arg(0)
        .arg(3)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(waiter.await.unwrap().unwrap(), pair("sw", "from-db3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_that_expired_before_being_served_does_not_wake() {
    let s = start().await;
    let mut c = s.conn().await;
    let mut w = s.conn().await;
    let id = client_id(&mut w).await;
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(0)
        .query_async(&mut c)
        .await
        .unwrap();
    let waiter = spawn_cmd(w.clone(), redis::cmd("BRPOP").arg("exp").arg(0).clone());
    s.wait_blocked(&mut c, 1).await;

    // The list exists when the transaction ends, but has expired by the
    // time the waiter would be served (the sleep lets its TTL pass).
    let _: Value = redis::pipe()
        .atomic()
        .cmd("RPUSH")
        .arg("exp")
        .arg("hello")
        .cmd("PEXPIRE")
        .arg("exp")
        .arg(1)
        .cmd("DEBUG")
        .arg("SLEEP")
        .arg(0.01)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(s.blocked_clients(&mut c).await, 1);
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("ID")
        .arg(id)
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(list.contains("flags=b"), "{list}");
    let n: i64 = redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(id)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(waiter.await.unwrap().unwrap(), Value::Nil);
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(1)
        .query_async(&mut c)
        .await
        .unwrap();
}

/// Two clients blocked in BRPOPLPUSH on one list, the first with a
/// destination of the wrong type: a push serves the first with WRONGTYPE
/// (the element stays) and the second gets the element (Redis 7.0's
/// "BRPOPLPUSH with multiple blocked clients", here with each client
/// blocked before the next command is sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brpoplpush_to_a_wrong_type_serves_the_next_waiter() {
    let s = start().await;
    let mut c = s.conn().await;
    let _: () = redis::cmd("SET")
        .arg("target1")
        .arg("nolist")
        .query_async(&mut c)
        .await
        .unwrap();
    let first = spawn_cmd(
        s.conn().await,
        redis::cmd("BRPOPLPUSH")
            .arg("blist")
            .arg("target1")
            .arg(0)
            .clone(),
    );
    s.wait_blocked(&mut c, 1).await;
    let second = spawn_cmd(
        s.conn().await,
        redis::cmd("BRPOPLPUSH")
            .arg("blist")
            .arg("target2")
            .arg(0)
            .clone(),
    );
    s.wait_blocked(&mut c, 2).await;
    let _: i64 = redis::cmd("LPUSH")
        .arg("blist")
        .arg("foo")
        .query_async(&mut c)
        .await
        .unwrap();
    let err = first.await.unwrap().unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"), "{err}");
    assert_eq!(second.await.unwrap().unwrap(), bulk("foo"));
    let moved: Vec<String> = redis::cmd("LRANGE")
        .arg("target2")
        .arg(0)
        .arg(-1)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(moved, vec!["foo".to_string()]);
    let left: i64 = redis::cmd("EXISTS")
        .arg("blist")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(left, 0, "the element went to the second client");
    assert_eq!(s.blocked_clients(&mut c).await, 0);
}
