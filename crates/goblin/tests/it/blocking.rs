//! `goblin::blocking`: the store and its sessions from plain threads.

use goblin::blocking::Store;
use goblin::{Push, Reply};
use std::time::Duration;

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec())
}

fn blocked_clients(store: &Store) -> String {
    match store.execute(["INFO", "clients"]).unwrap() {
        Reply::Verbatim { text, .. } | Reply::Bulk(text) => String::from_utf8(text).unwrap(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn calls_block_until_their_reply() {
    let store = Store::open_in_memory();
    assert_eq!(
        store.execute(["SET", "k", "v"]).unwrap(),
        Reply::Status("OK".into())
    );
    assert_eq!(store.execute(["GET", "k"]).unwrap(), bulk("v"));
    let mut s = store.session();
    s.execute(["SELECT", "3"]).unwrap();
    s.execute(["MULTI"]).unwrap();
    s.execute(["SET", "k", "db3"]).unwrap();
    assert_eq!(
        s.execute(["EXEC"]).unwrap(),
        Reply::Array(vec![Reply::Status("OK".into())])
    );
    assert_eq!(s.as_async().db(), 3);
    assert_eq!(store.execute(["GET", "k"]).unwrap(), bulk("v"));
    // The async store behind it is the same data.
    let async_store = store.as_async().clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(
        rt.block_on(async_store.execute(["GET", "k"])).unwrap(),
        bulk("v")
    );
}

#[test]
fn a_blocking_pop_on_one_thread_is_served_from_another() {
    let store = Store::open_in_memory();
    let waiter = {
        let store = store.clone();
        std::thread::spawn(move || store.execute(["BLPOP", "jobs", "0"]))
    };
    while !blocked_clients(&store).contains("blocked_clients:1") {
        std::thread::yield_now();
    }
    store.execute(["RPUSH", "jobs", "j1"]).unwrap();
    assert_eq!(
        waiter.join().unwrap().unwrap(),
        Reply::Array(vec![bulk("jobs"), bulk("j1")])
    );
    // A timeout ends the wait with the null reply.
    assert_eq!(
        store.execute(["BLPOP", "jobs", "0.01"]).unwrap(),
        Reply::Nil
    );
}

#[test]
fn a_blocking_session_receives_its_messages() {
    let store = Store::open_in_memory();
    let mut s = store.session();
    s.execute(["SUBSCRIBE", "ch"]).unwrap();
    let publisher = {
        let store = store.clone();
        std::thread::spawn(move || store.execute(["PUBLISH", "ch", "hello"]).unwrap())
    };
    match s.next_push(None) {
        Some(Push::Message(m)) => assert_eq!(m.payload, b"hello"),
        other => panic!("{other:?}"),
    }
    assert_eq!(publisher.join().unwrap(), Reply::Int(1));
    // Nothing more was published: the wait ends at its timeout.
    assert_eq!(s.next_push(Some(Duration::from_millis(10))), None);
}
