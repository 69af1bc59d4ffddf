//! redis-rs in-process: the same redis-rs code, unchanged, against the
//! embedded store (a `Session`, and the `Store` itself) and against
//! goblin-server over loopback, with the same results.

use goblin::Store;
use redis::aio::ConnectionLike;
use redis::{AsyncCommands, RedisResult};
use std::collections::HashMap;

/// redis-rs calls of the kinds applications make, each outcome written
/// down (values, and errors by kind, code and text), for comparison.
async fn workload<C: ConnectionLike + Send + Sync>(con: &mut C) -> Vec<String> {
    let mut out = Vec::new();
    let mut note = |what: &str, r: String| out.push(format!("{what}: {r}"));
    fn show<T: std::fmt::Debug>(r: RedisResult<T>) -> String {
        match r {
            Ok(v) => format!("Ok({v:?})"),
            Err(e) => format!("Err({:?} {:?} {:?})", e.kind(), e.code(), e.detail()),
        }
    }
    let _: () = redis::cmd("FLUSHALL").query_async(con).await.unwrap();

    note("set", show(con.set::<_, _, ()>("name", "goblin").await));
    note("get", show(con.get::<_, String>("name").await));
    note(
        "get missing",
        show(con.get::<_, Option<String>>("missing").await),
    );
    note("incr", show(con.incr::<_, _, i64>("hits", 1).await));
    note("incr", show(con.incr::<_, _, i64>("hits", 41).await));
    note("wrongtype", show(con.incr::<_, _, i64>("name", 1).await));
    note(
        "set ex",
        show(con.set_ex::<_, _, ()>("tmp", "v", 100).await),
    );
    note("ttl", show(con.ttl::<_, i64>("tmp").await));
    note(
        "hset",
        show(
            con.hset_multiple::<_, _, _, ()>("h", &[("a", 1), ("b", 2)])
                .await,
        ),
    );
    let mut map: Vec<_> = con
        .hgetall::<_, HashMap<String, i64>>("h")
        .await
        .unwrap()
        .into_iter()
        .collect();
    map.sort();
    note("hgetall", format!("{map:?}"));
    note(
        "rpush",
        show(con.rpush::<_, _, i64>("list", &["x", "y", "z"]).await),
    );
    note(
        "lrange",
        show(con.lrange::<_, Vec<String>>("list", 0, -1).await),
    );
    note(
        "zadd",
        show(
            con.zadd_multiple::<_, _, _, i64>("z", &[(1.5, "a"), (2.5, "b")])
                .await,
        ),
    );
    note(
        "zrange withscores",
        show(
            con.zrange_withscores::<_, Vec<(String, f64)>>("z", 0, -1)
                .await,
        ),
    );
    note(
        "unknown",
        show(redis::cmd("NOSUCH").arg("x").query_async::<()>(con).await),
    );

    // A plain pipeline: replies in order, an error among them.
    note(
        "pipeline",
        show(
            redis::pipe()
                .set("p", 1)
                .ignore()
                .incr("p", 2)
                .get("p")
                .query_async::<(i64, i64)>(con)
                .await,
        ),
    );
    // An atomic pipeline: MULTI ... EXEC, replies of EXEC.
    note(
        "atomic",
        show(
            redis::pipe()
                .atomic()
                .incr("a", 1)
                .incr("a", 1)
                .lpush("al", "v")
                .query_async::<(i64, i64, i64)>(con)
                .await,
        ),
    );
    // An error at run time inside EXEC.
    note(
        "atomic with a failing command",
        show(
            redis::pipe()
                .atomic()
                .incr("a", 1)
                .incr("name", 1)
                .query_async::<redis::Value>(con)
                .await,
        ),
    );
    // A script: EVALSHA first, EVAL on NOSCRIPT, EVALSHA again.
    let script = redis::Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1]) * 10");
    note(
        "script",
        show(script.key("s").arg(2).invoke_async::<i64>(con).await),
    );
    note(
        "script again",
        show(script.key("s").arg(3).invoke_async::<i64>(con).await),
    );
    note(
        "script error",
        show(
            redis::Script::new("return redis.error_reply('MYERR custom')")
                .invoke_async::<_, ()>(con)
                .await,
        ),
    );
    // The scan cursor redis-rs tracks itself.
    let mut keys: Vec<String> = Vec::new();
    {
        let mut iter = con.scan_match::<_, String>("h*").await.unwrap();
        while let Some(k) = futures_util::StreamExt::next(&mut iter).await {
            keys.push(k.unwrap());
        }
    }
    keys.sort();
    note("scan", format!("{keys:?}"));
    out
}

/// What is only true on a connection: SELECT and WATCH carry over.
async fn connection_state<C: ConnectionLike + Send + Sync>(con: &mut C) -> Vec<String> {
    let mut out = Vec::new();
    let _: () = redis::cmd("SELECT").arg(1).query_async(con).await.unwrap();
    let _: () = con.set("db1", "here").await.unwrap();
    out.push(format!("{:?}", con.get::<_, Option<String>>("db1").await));
    let _: () = redis::cmd("SELECT").arg(0).query_async(con).await.unwrap();
    out.push(format!("{:?}", con.get::<_, Option<String>>("db1").await));
    let _: () = redis::cmd("WATCH").arg("w").query_async(con).await.unwrap();
    out.push(format!(
        "{:?}",
        redis::pipe()
            .atomic()
            .set("w", 1)
            .query_async::<Option<((),)>>(con)
            .await
    ));
    out
}

async fn goblin_server() -> std::net::SocketAddr {
    let config = goblin_engine::Config::new();
    for (k, v) in [
        ("port", "0"),
        ("bind", "127.0.0.1"),
        ("save", ""),
        ("appendonly", "no"),
        ("dir", std::env::temp_dir().to_str().unwrap()),
    ] {
        config.set_initial(k, v).unwrap();
    }
    let server = goblin_server::Server::bind(goblin_engine::Engine::new(config))
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.run());
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_rs_code_runs_unchanged_on_the_embedded_store() {
    let addr = goblin_server().await;
    // RESP3 on the network, as the embedded sessions speak by default.
    let client = redis::Client::open(format!("redis://{addr}/?protocol=resp3")).unwrap();
    let mut network = client.get_multiplexed_async_connection().await.unwrap();
    let expected = workload(&mut network).await;
    assert!(
        expected.iter().any(|l| l.contains("not an integer")),
        "{expected:#?}"
    );
    assert!(
        expected
            .iter()
            .any(|l| l.starts_with("script again: Ok(50)")),
        "{expected:#?}"
    );

    let store = Store::open_in_memory();
    let mut session = store.session();
    assert_eq!(workload(&mut session).await, expected, "a Session");
    let mut pooled = Store::open_in_memory();
    assert_eq!(workload(&mut pooled).await, expected, "the Store");

    // A connection's state carries over on a Session.
    let mut network = client.get_multiplexed_async_connection().await.unwrap();
    let expected = connection_state(&mut network).await;
    assert_eq!(expected[..2], ["Ok(Some(\"here\"))", "Ok(None)"]);
    let mut session = Store::open_in_memory().session();
    assert_eq!(connection_state(&mut session).await, expected);
    assert_eq!(session.get_db(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resp2_session_answers_as_a_resp2_connection() {
    let addr = goblin_server().await;
    let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
    let mut network = client.get_multiplexed_async_connection().await.unwrap();
    let expected = workload(&mut network).await;
    let store = Store::open_in_memory();
    let mut session = store.session();
    session.execute(["HELLO", "2"]).await.unwrap();
    assert_eq!(workload(&mut session).await, expected);
}
