//! Client memory and client eviction (maxmemory-clients) over real
//! connections: CLIENT LIST's memory fields, INFO's mem_clients_normal and
//! evicted_clients, and which clients an eviction closes.
//!
//! A client made large sends the start of a command whose big argument
//! never completes: its query buffer holds what it sent. Waits poll a
//! condition until a time limit; nothing asserts a duration.

use crate::common::{config_set, info_field, wait_until, RawClient, TestServer};
use std::io::Write;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// The value of `field` in the CLIENT LIST line of the client named
/// `name`; None when there is no such client.
fn client_field(admin: &mut redis::Connection, name: &str, field: &str) -> Option<String> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query(admin).unwrap();
    let line = list
        .lines()
        .find(|l| l.split(' ').any(|kv| kv == format!("name={name}")))?;
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{field}=")))
        .map(str::to_string)
}

fn client_number(admin: &mut redis::Connection, name: &str, field: &str) -> Option<u64> {
    client_field(admin, name, field).map(|v| v.parse().unwrap())
}

fn info_number(c: &mut redis::Connection, section: &str, field: &str) -> u64 {
    info_field(c, section, field).parse().unwrap()
}

/// A connection named `name` (as a raw socket, which can send half a
/// command).
fn named(server: &TestServer, name: &str) -> RawClient {
    let mut c = server.raw();
    let setname = crate::common::resp(&[b"CLIENT", b"SETNAME", name.as_bytes()]);
    c.roundtrip(&setname, b"+OK\r\n");
    c
}

/// Sends the start of a one-argument command whose bulk of `declared`
/// bytes gets only `sent` of them, and waits until the server holds them.
fn hold(
    admin: &mut redis::Connection,
    c: &mut RawClient,
    name: &str,
    declared: usize,
    sent: usize,
) {
    c.stream
        .write_all(format!("*2\r\n${declared}\r\n").as_bytes())
        .unwrap();
    c.stream.write_all(&vec![b'v'; sent]).unwrap();
    wait_until(&format!("{name} holds {sent} bytes"), WAIT, || {
        client_number(admin, name, "qbuf").is_none_or(|q| q as usize == sent)
    });
}

/// The admin connection of a test: never evicted itself.
fn admin(server: &TestServer) -> redis::Connection {
    let mut admin = server.client();
    let _: () = redis::cmd("CLIENT")
        .arg("NO-EVICT")
        .arg("ON")
        .query(&mut admin)
        .unwrap();
    admin
}

#[test]
fn a_client_over_maxmemory_clients_is_evicted_and_counted() {
    let server = TestServer::start();
    let mut admin = admin(&server);
    config_set(&mut admin, "maxmemory-clients", "1mb");
    let mut victim = named(&server, "victim");
    let before = info_number(&mut admin, "memory", "mem_clients_normal");

    // Evicted once the header is read: the rest may find it closed.
    let _ = victim.stream.write_all(b"*2\r\n$3000000\r\n");
    let _ = victim.stream.write_all(&vec![b'v'; 100_000]);
    wait_until("the victim is evicted", WAIT, || {
        client_field(&mut admin, "victim", "id").is_none()
    });
    assert!(victim.is_closed(), "the evicted client's connection closes");
    assert_eq!(info_number(&mut admin, "stats", "evicted_clients"), 1);
    // What it held is no longer counted.
    let after = info_number(&mut admin, "memory", "mem_clients_normal");
    assert!(
        after < before + 64 * 1024,
        "mem_clients_normal {before} -> {after}"
    );
}

#[test]
fn client_no_evict_keeps_a_client_over_the_limit() {
    let server = TestServer::start();
    let mut admin = admin(&server);
    config_set(&mut admin, "maxmemory-clients", "1mb");
    let mut kept = named(&server, "kept");
    kept.roundtrip(b"CLIENT NO-EVICT ON\r\n", b"+OK\r\n");

    hold(&mut admin, &mut kept, "kept", 2_000_000, 1_500_000);
    let tot = client_number(&mut admin, "kept", "tot-mem").expect("the client is kept");
    assert!(tot > 1024 * 1024, "tot-mem {tot} is over the limit");
    assert_eq!(
        client_field(&mut admin, "kept", "flags").as_deref(),
        Some("e")
    );
    assert_eq!(info_number(&mut admin, "stats", "evicted_clients"), 0);
}

#[test]
fn the_largest_client_is_evicted_first_and_only_until_under_the_limit() {
    let server = TestServer::start();
    let mut admin = admin(&server);
    // Sizes a bucket (a power of two) apart at least.
    let sizes = [
        ("small", 100_000),
        ("medium", 600_000),
        ("large", 2_500_000),
    ];
    let mut clients: Vec<RawClient> = sizes
        .iter()
        .map(|(name, size)| {
            let mut c = named(&server, name);
            hold(&mut admin, &mut c, name, size + 10, *size);
            c
        })
        .collect();
    let large = client_number(&mut admin, "large", "tot-mem").unwrap();
    let total = info_number(&mut admin, "memory", "mem_clients_normal");
    assert!(total > large, "the total {total} counts every client");

    // Room for all but half of the largest: evicting it is enough.
    config_set(&mut admin, "maxmemory-clients", total - large / 2);
    assert!(
        client_field(&mut admin, "large", "id").is_none(),
        "the largest goes at once"
    );
    assert!(client_field(&mut admin, "medium", "id").is_some());
    assert!(client_field(&mut admin, "small", "id").is_some());
    assert_eq!(info_number(&mut admin, "stats", "evicted_clients"), 1);
    assert!(clients[2].is_closed());

    // Then below the medium one: it goes, the small one stays.
    let medium = client_number(&mut admin, "medium", "tot-mem").unwrap();
    let total = info_number(&mut admin, "memory", "mem_clients_normal");
    config_set(&mut admin, "maxmemory-clients", total - medium / 2);
    assert!(client_field(&mut admin, "medium", "id").is_none());
    assert!(client_field(&mut admin, "small", "id").is_some());
    assert_eq!(info_number(&mut admin, "stats", "evicted_clients"), 2);
    assert!(clients[1].is_closed());
}

#[test]
fn tot_mem_grows_with_a_big_argument_being_received() {
    let server = TestServer::start();
    let mut admin = admin(&server);
    let mut c = named(&server, "big");
    let idle = client_number(&mut admin, "big", "tot-mem").unwrap();
    assert!(idle < 64 * 1024, "an idle client's tot-mem is {idle}");

    // The bulk's buffer is allocated at its declared size once its header
    // is read; qbuf is what arrived of it (as in Redis, where the query
    // buffer then holds the bulk alone).
    hold(&mut admin, &mut c, "big", 1_000_000, 300_000);
    assert_eq!(client_number(&mut admin, "big", "qbuf"), Some(300_000));
    let tot = client_number(&mut admin, "big", "tot-mem").unwrap();
    assert!(tot >= 1_000_000, "tot-mem {tot} counts the bulk's buffer");
    let total = info_number(&mut admin, "memory", "mem_clients_normal");
    assert!(total >= tot, "mem_clients_normal {total} counts it too");
    assert!(server.engine.clients().memory_total() >= tot);
}

#[test]
fn maxmemory_clients_as_a_percentage_of_maxmemory() {
    let server = TestServer::start();
    let mut admin = admin(&server);
    config_set(&mut admin, "maxmemory", "10mb");
    // 5% of 10 MiB: 524,288 bytes.
    config_set(&mut admin, "maxmemory-clients", "5%");
    assert_eq!(
        redis::cmd("CONFIG")
            .arg("GET")
            .arg("maxmemory-clients")
            .query::<Vec<String>>(&mut admin)
            .unwrap(),
        ["maxmemory-clients", "5%"]
    );
    let mut under = named(&server, "under");
    hold(&mut admin, &mut under, "under", 250_010, 250_000);
    assert!(client_field(&mut admin, "under", "id").is_some());

    let mut over = named(&server, "over");
    let _ = over.stream.write_all(b"*2\r\n$600010\r\n");
    let _ = over.stream.write_all(&vec![b'v'; 600_000]);
    wait_until("the client over 5% is evicted", WAIT, || {
        client_field(&mut admin, "over", "id").is_none()
    });
    assert!(client_field(&mut admin, "under", "id").is_some());
    assert_eq!(info_number(&mut admin, "stats", "evicted_clients"), 1);

    // Without maxmemory, a percentage sets no limit.
    config_set(&mut admin, "maxmemory", "0");
    let mut free = named(&server, "free");
    hold(&mut admin, &mut free, "free", 600_010, 600_000);
    assert!(client_field(&mut admin, "free", "id").is_some());
    assert_eq!(info_number(&mut admin, "stats", "evicted_clients"), 1);
}

#[test]
fn a_lower_maxmemory_clients_evicts_at_once() {
    let server = TestServer::start();
    let mut admin = admin(&server);
    config_set(&mut admin, "maxmemory-clients", "4mb");
    let _clients: Vec<RawClient> = (0..4)
        .map(|i| {
            let name = format!("c{i}");
            let mut c = named(&server, &name);
            hold(&mut admin, &mut c, &name, 700_010, 700_000);
            c
        })
        .collect();
    assert_eq!(info_number(&mut admin, "stats", "evicted_clients"), 0);

    // The reply to CONFIG SET comes after the eviction.
    config_set(&mut admin, "maxmemory-clients", "2mb");
    let left = (0..4)
        .filter(|i| client_field(&mut admin, &format!("c{i}"), "id").is_some())
        .count();
    assert!((1..4).contains(&left), "{left} of 4 clients left");
    assert_eq!(
        info_number(&mut admin, "stats", "evicted_clients"),
        4 - left as u64
    );
    assert!(info_number(&mut admin, "memory", "mem_clients_normal") < 2 * 1024 * 1024);
}

#[test]
fn multi_queue_and_argv_show_in_client_list() {
    let server = TestServer::start();
    let mut admin = admin(&server);
    let mut c = named(&server, "tx");
    c.roundtrip(b"MULTI\r\n", b"+OK\r\n");
    let value = vec![b'x'; 5000];
    c.roundtrip(
        &crate::common::resp(&[b"SET", b"k", &value]),
        b"+QUEUED\r\n",
    );
    let multi_mem = client_number(&mut admin, "tx", "multi-mem").unwrap();
    assert!(
        multi_mem >= 5004,
        "multi-mem {multi_mem} counts the queued arguments"
    );
    assert!(client_number(&mut admin, "tx", "tot-mem").unwrap() >= multi_mem);
    c.roundtrip(b"EXEC\r\n", b"*1\r\n+OK\r\n");
    assert_eq!(client_number(&mut admin, "tx", "multi-mem"), Some(0));

    // A client's own CLIENT INFO sees its arguments in flight.
    let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut admin).unwrap();
    assert!(info.contains(" argv-mem=10 "), "{info}");
}

#[test]
fn a_subscriber_that_does_not_read_is_evicted_as_messages_pile_up() {
    let server = TestServer::start();
    let mut admin = admin(&server);
    config_set(&mut admin, "maxmemory-clients", "1mb");
    let mut sub = named(&server, "sub");
    sub.roundtrip(
        b"SUBSCRIBE ch\r\n",
        b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
    );
    // The subscriber reads nothing: once the socket's buffers are full,
    // the messages wait in the server and count in its memory.
    let message = vec![b'm'; 100_000];
    let mut published = 0;
    while client_field(&mut admin, "sub", "id").is_some() {
        assert!(published < 2000, "the subscriber was never evicted");
        let _: i64 = redis::cmd("PUBLISH")
            .arg("ch")
            .arg(&message)
            .query(&mut admin)
            .unwrap();
        published += 1;
    }
    assert_eq!(info_number(&mut admin, "stats", "evicted_clients"), 1);
}

#[test]
fn two_engines_count_their_clients_apart() {
    let a = TestServer::start();
    let b = TestServer::start();
    let mut admin_a = admin(&a);
    let _admin_b = admin(&b);
    let b_before = b.engine.clients().memory_total();
    let mut c = named(&a, "big");
    hold(&mut admin_a, &mut c, "big", 1_000_000, 500_000);
    assert!(a.engine.clients().memory_total() >= 1_000_000);
    assert!(b.engine.clients().memory_total() < b_before + 64 * 1024);
}
