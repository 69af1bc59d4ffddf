//! `Session`: a client of the embedded store kept across calls, with its
//! database, transaction, protocol and subscriptions, and its pushes as a
//! stream.

use futures_util::StreamExt;
use goblin::{Error, Message, MessageKind, Push, Reply, Store};
use std::time::Duration;

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec())
}

fn ok() -> Reply {
    Reply::Status("OK".into())
}

async fn info_clients(store: &Store) -> String {
    match store.execute(["INFO", "clients"]).await.unwrap() {
        Reply::Verbatim { text, .. } | Reply::Bulk(text) => String::from_utf8(text).unwrap(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_session_keeps_its_database_and_transaction_across_calls() {
    let store = Store::open_in_memory();
    let mut s = store.session();
    assert_eq!(s.db(), 0);
    assert_eq!(s.execute(["SELECT", "2"]).await.unwrap(), ok());
    assert_eq!(s.db(), 2);
    s.execute(["SET", "k", "in-2"]).await.unwrap();
    assert_eq!(s.execute(["GET", "k"]).await.unwrap(), bulk("in-2"));
    // Other clients start on database 0.
    assert_eq!(store.execute(["GET", "k"]).await.unwrap(), Reply::Nil);

    assert_eq!(s.execute(["MULTI"]).await.unwrap(), ok());
    assert_eq!(
        s.execute(["INCR", "n"]).await.unwrap(),
        Reply::Status("QUEUED".into())
    );
    assert_eq!(
        s.execute(["INCR", "n"]).await.unwrap(),
        Reply::Status("QUEUED".into())
    );
    // Queued, not run: another client of database 2 sees nothing yet.
    let mut other = store.session();
    other.execute(["SELECT", "2"]).await.unwrap();
    assert_eq!(other.execute(["GET", "n"]).await.unwrap(), Reply::Nil);
    assert_eq!(
        s.execute(["EXEC"]).await.unwrap(),
        Reply::Array(vec![Reply::Int(1), Reply::Int(2)])
    );
    assert_eq!(other.execute(["GET", "n"]).await.unwrap(), bulk("2"));

    // DISCARD drops the queue.
    s.execute(["MULTI"]).await.unwrap();
    s.execute(["INCR", "n"]).await.unwrap();
    assert_eq!(s.execute(["DISCARD"]).await.unwrap(), ok());
    assert_eq!(s.execute(["GET", "n"]).await.unwrap(), bulk("2"));
}

#[tokio::test]
async fn watch_aborts_the_transaction_when_another_client_writes() {
    let store = Store::open_in_memory();
    let mut s = store.session();
    store.execute(["SET", "balance", "10"]).await.unwrap();
    s.execute(["WATCH", "balance"]).await.unwrap();
    s.execute(["MULTI"]).await.unwrap();
    s.execute(["INCRBY", "balance", "5"]).await.unwrap();
    store.execute(["SET", "balance", "100"]).await.unwrap();
    assert_eq!(s.execute(["EXEC"]).await.unwrap(), Reply::Nil);
    assert_eq!(s.execute(["GET", "balance"]).await.unwrap(), bulk("100"));
    // Without a write in between it runs.
    s.execute(["WATCH", "balance"]).await.unwrap();
    s.execute(["MULTI"]).await.unwrap();
    s.execute(["INCRBY", "balance", "5"]).await.unwrap();
    assert_eq!(
        s.execute(["EXEC"]).await.unwrap(),
        Reply::Array(vec![Reply::Int(105)])
    );
}

#[tokio::test]
async fn hello_and_client_setname_stay_with_the_session() {
    let store = Store::open_in_memory();
    let mut s = store.session();
    s.execute(["HSET", "h", "f", "v"]).await.unwrap();
    assert_eq!(s.protocol(), 3);
    assert_eq!(
        s.execute(["HGETALL", "h"]).await.unwrap(),
        Reply::Map(vec![(bulk("f"), bulk("v"))])
    );
    s.execute(["HELLO", "2"]).await.unwrap();
    assert_eq!(s.protocol(), 2);
    assert_eq!(
        s.execute(["HGETALL", "h"]).await.unwrap(),
        Reply::Array(vec![bulk("f"), bulk("v")])
    );
    s.execute(["CLIENT", "SETNAME", "worker-1"]).await.unwrap();
    assert_eq!(
        s.execute(["CLIENT", "GETNAME"]).await.unwrap(),
        bulk("worker-1")
    );
    assert_eq!(
        s.execute(["CLIENT", "ID"]).await.unwrap(),
        Reply::Int(s.id() as i64)
    );
    // Another client has no name.
    assert_eq!(
        store.execute(["CLIENT", "GETNAME"]).await.unwrap(),
        Reply::Nil
    );
}

#[tokio::test]
async fn subscriptions_stream_their_messages() {
    let store = Store::open_in_memory();
    let mut s = store.session();
    assert_eq!(
        s.execute(["SUBSCRIBE", "news", "sport"]).await.unwrap(),
        Reply::Array(vec![
            Reply::Push(vec![bulk("subscribe"), bulk("news"), Reply::Int(1)]),
            Reply::Push(vec![bulk("subscribe"), bulk("sport"), Reply::Int(2)]),
        ])
    );
    s.execute(["PSUBSCRIBE", "user:*"]).await.unwrap();
    s.execute(["SSUBSCRIBE", "shard-ch"]).await.unwrap();
    assert_eq!(
        store.execute(["PUBLISH", "news", "one"]).await.unwrap(),
        Reply::Int(1)
    );
    store.execute(["PUBLISH", "user:7", "two"]).await.unwrap();
    store
        .execute(["SPUBLISH", "shard-ch", "three"])
        .await
        .unwrap();
    store.execute(["PUBLISH", "unheard", "x"]).await.unwrap();

    let mut messages = s.messages();
    assert_eq!(
        messages.next().await.unwrap(),
        Message {
            kind: MessageKind::Channel,
            channel: b"news".to_vec(),
            pattern: None,
            payload: b"one".to_vec(),
        }
    );
    assert_eq!(
        messages.next().await.unwrap(),
        Message {
            kind: MessageKind::Pattern,
            channel: b"user:7".to_vec(),
            pattern: Some(b"user:*".to_vec()),
            payload: b"two".to_vec(),
        }
    );
    let shard = messages.next().await.unwrap();
    assert_eq!(
        (shard.kind, shard.payload),
        (MessageKind::Shard, b"three".to_vec())
    );
    drop(messages);

    // A message from another task arrives, whether it is published
    // before the stream waits or during the wait.
    let publisher = {
        let store = store.clone();
        tokio::spawn(async move { store.execute(["PUBLISH", "sport", "later"]).await.unwrap() })
    };
    let m = s.messages().next().await.unwrap();
    assert_eq!(
        (m.channel, m.payload),
        (b"sport".to_vec(), b"later".to_vec())
    );
    assert_eq!(publisher.await.unwrap(), Reply::Int(1));

    // Messages that arrive between two calls are not part of a reply.
    // (UNSUBSCRIBE counts the channels and patterns left, not the shard
    // channels, as Redis does.)
    store.execute(["PUBLISH", "news", "queued"]).await.unwrap();
    assert_eq!(
        s.execute(["UNSUBSCRIBE", "sport"]).await.unwrap(),
        Reply::Push(vec![bulk("unsubscribe"), bulk("sport"), Reply::Int(2)])
    );
    assert_eq!(
        s.messages().next().await.unwrap().payload,
        b"queued".to_vec()
    );
    // Dropping the session leaves the channels.
    drop(s);
    assert_eq!(
        store.execute(["PUBLISH", "news", "gone"]).await.unwrap(),
        Reply::Int(0)
    );
}

#[tokio::test]
async fn a_resp2_subscriber_streams_its_messages_too() {
    let store = Store::open_in_memory();
    let mut s = store.session();
    s.execute(["HELLO", "2"]).await.unwrap();
    assert_eq!(
        s.execute(["SUBSCRIBE", "ch"]).await.unwrap(),
        Reply::Array(vec![bulk("subscribe"), bulk("ch"), Reply::Int(1)])
    );
    store.execute(["PUBLISH", "ch", "a"]).await.unwrap();
    // A RESP2 subscriber may PING; its reply is not the message.
    assert_eq!(
        s.execute(["PING"]).await.unwrap(),
        Reply::Array(vec![bulk("pong"), bulk("")])
    );
    let m = s.messages().next().await.unwrap();
    assert_eq!((m.channel, m.payload), (b"ch".to_vec(), b"a".to_vec()));
}

#[tokio::test]
async fn tracking_invalidations_are_pushes() {
    let store = Store::open_in_memory();
    let mut s = store.session();
    store.execute(["SET", "cached", "1"]).await.unwrap();
    s.execute(["CLIENT", "TRACKING", "ON"]).await.unwrap();
    assert_eq!(s.execute(["GET", "cached"]).await.unwrap(), bulk("1"));
    store.execute(["SET", "cached", "2"]).await.unwrap();
    assert_eq!(
        s.pushes().next().await.unwrap(),
        Push::Other(Reply::Push(vec![
            bulk("invalidate"),
            Reply::Array(vec![bulk("cached")])
        ]))
    );
    // messages() passes over invalidations: only a message ends its wait.
    s.execute(["GET", "cached"]).await.unwrap();
    store.execute(["SET", "cached", "3"]).await.unwrap();
    s.execute(["SUBSCRIBE", "ch"]).await.unwrap();
    store.execute(["PUBLISH", "ch", "m"]).await.unwrap();
    assert_eq!(s.messages().next().await.unwrap().payload, b"m".to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_pop_on_a_session_waits_in_its_database() {
    let store = Store::open_in_memory();
    let mut waiter = store.session();
    waiter.execute(["SELECT", "5"]).await.unwrap();
    let waiting = tokio::spawn(async move {
        let reply = waiter.execute(["BLPOP", "jobs", "0"]).await;
        (reply, waiter)
    });
    while !info_clients(&store).await.contains("blocked_clients:1") {
        tokio::task::yield_now().await;
    }
    // A push to database 0 does not serve it.
    store.execute(["RPUSH", "jobs", "db0"]).await.unwrap();
    let mut pusher = store.session();
    pusher.execute(["SELECT", "5"]).await.unwrap();
    pusher.execute(["RPUSH", "jobs", "db5"]).await.unwrap();
    let (reply, mut waiter) = waiting.await.unwrap();
    assert_eq!(
        reply.unwrap(),
        Reply::Array(vec![bulk("jobs"), bulk("db5")])
    );
    assert_eq!(waiter.db(), 5);
    assert_eq!(
        store.execute(["LLEN", "jobs"]).await.unwrap(),
        Reply::Int(1)
    );
    assert_eq!(
        waiter.execute(["LLEN", "jobs"]).await.unwrap(),
        Reply::Int(0)
    );
}

#[tokio::test]
async fn a_wait_given_up_leaves_the_session_usable() {
    let store = Store::open_in_memory();
    let mut s = store.session();
    s.execute(["SELECT", "1"]).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(20), s.execute(["BLPOP", "q", "0"]))
            .await
            .is_err()
    );
    // The next call gives the abandoned wait up first: the push stays.
    assert_eq!(s.execute(["RPUSH", "q", "x"]).await.unwrap(), Reply::Int(1));
    assert!(info_clients(&store).await.contains("blocked_clients:0"));
    assert_eq!(s.execute(["LLEN", "q"]).await.unwrap(), Reply::Int(1));
    assert_eq!(s.db(), 1);
}

#[tokio::test]
async fn quit_closes_the_session() {
    let store = Store::open_in_memory();
    let mut s = store.session();
    assert_eq!(s.execute(["QUIT"]).await.unwrap(), ok());
    assert!(matches!(s.execute(["PING"]).await, Err(Error::Closed)));
    assert!(s.pushes().next().await.is_none());
}
