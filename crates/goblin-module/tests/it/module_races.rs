//! The module under real concurrency on redis-server: many clients, each
//! on its own connection and thread, released together, racing on one
//! key. Redis runs one command at a time, so a module command is one
//! atomic step: no unit is handed out twice and none is lost.

use crate::support;

use crate::support::goblin_support::{race, Reply};
use std::collections::HashSet;

#[test]
fn forty_clients_drain_a_stock_of_2000_exactly() {
    let redis = support::redis_with_module(&[]);
    let mut c = redis.conn();
    c.cmd(&["SET", "stock", "2000"]);
    // Each client takes units until told none are left, and keeps the
    // count that remained after each of its takes.
    let taken = race(redis.addr, 40, |_, conn| {
        let mut left = Vec::new();
        loop {
            match conn.cmd(&["GOBLIN.DECRPOS", "stock"]).int() {
                -1 => return left,
                n => left.push(n),
            }
        }
    });
    assert!(
        taken.iter().filter(|t| !t.is_empty()).count() > 1,
        "the clients raced"
    );
    let mut all: Vec<i64> = taken.into_iter().flatten().collect();
    assert_eq!(all.len(), 2000, "exactly the stock was handed out");
    all.sort();
    assert_eq!(
        all,
        (0..2000).collect::<Vec<_>>(),
        "each remaining count once"
    );
    assert_eq!(c.cmd(&["GET", "stock"]), Reply::Bulk(b"0".to_vec()));
    assert_eq!(c.cmd(&["GOBLIN.DECRPOS", "stock"]), Reply::Int(-1));
}

#[test]
fn racing_clients_admit_exactly_the_zwindow_limit() {
    let redis = support::redis_with_module(&[]);
    let admitted = race(redis.addr, 40, |i, conn| {
        let holder = format!("worker-{i}");
        let reply = conn.cmd(&["GOBLIN.ZWINDOW", "sem", "7", "600000", &holder]);
        (reply.int() == 1).then_some(holder)
    });
    let admitted: HashSet<String> = admitted.into_iter().flatten().collect();
    assert_eq!(admitted.len(), 7);
    let mut c = redis.conn();
    assert_eq!(c.cmd(&["ZCARD", "sem"]), Reply::Int(7));
}
