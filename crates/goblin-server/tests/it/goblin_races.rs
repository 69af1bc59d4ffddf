//! The GOBLIN.* commands under real concurrency: many clients, each on its
//! own connection and thread, released together, racing on one key. Each
//! command being one atomic step, no unit is handed out twice, none is
//! lost, and no bound is crossed, however the calls interleave.

use crate::common::TestServer;
use crate::goblin_support::{race, Conn, Reply};
use std::collections::HashSet;

fn get(c: &mut Conn, key: &str) -> Option<String> {
    c.cmd(&["GET", key])
        .bulk()
        .map(|b| String::from_utf8(b).unwrap())
}

#[test]
fn decrpos_hands_out_each_unit_once() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    c.cmd(&["SET", "stock", "2000"]);
    // Each client takes units until told none are left, and keeps the
    // replies: the count that remained after each of its takes.
    let taken = race(server.addr, 40, |_, conn| {
        let mut left = Vec::new();
        loop {
            match conn.cmd(&["GOBLIN.DECRPOS", "stock"]).int() {
                -1 => return left,
                n => left.push(n),
            }
        }
    });
    let mut all: Vec<i64> = taken.into_iter().flatten().collect();
    assert_eq!(all.len(), 2000, "exactly the stock was handed out");
    all.sort();
    assert_eq!(
        all,
        (0..2000).collect::<Vec<_>>(),
        "each remaining count once"
    );
    assert_eq!(get(&mut c, "stock").as_deref(), Some("0"));
    assert_eq!(c.cmd(&["GOBLIN.DECRPOS", "stock"]), Reply::Int(-1));
}

#[test]
fn decrbypos_never_takes_more_than_remains() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    c.cmd(&["SET", "stock", "5000"]);
    // Random amounts; a client stops when even one unit is refused (the
    // stock is then 0 for good, since it only goes down).
    let results = race(server.addr, 40, |i, conn| {
        let mut rng = fastrand::Rng::with_seed(1000 + i as u64);
        let (mut units, mut replies) = (0i64, Vec::new());
        loop {
            let amount = rng.i64(1..=7);
            match conn
                .cmd(&["GOBLIN.DECRBYPOS", "stock", &amount.to_string()])
                .int()
            {
                -1 if amount == 1 => return (units, replies),
                -1 => {}
                left => {
                    assert!(left >= 0, "stock went to {left}");
                    units += amount;
                    replies.push(left);
                }
            }
        }
    });
    let units: i64 = results.iter().map(|r| r.0).sum();
    let replies: Vec<i64> = results.into_iter().flat_map(|r| r.1).collect();
    let final_stock: i64 = get(&mut c, "stock").unwrap().parse().unwrap();
    assert_eq!(final_stock, 0);
    assert_eq!(units, 5000 - final_stock, "units taken = initial - final");
    // Each take left a different count: no two saw the same stock.
    let distinct: HashSet<i64> = replies.iter().copied().collect();
    assert_eq!(distinct.len(), replies.len());
}

#[test]
fn incrbound_consumes_the_quota_exactly_to_the_ceiling() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    let results = race(server.addr, 40, |i, conn| {
        let mut rng = fastrand::Rng::with_seed(2000 + i as u64);
        let (mut used, mut replies) = (0i64, Vec::new());
        loop {
            let increment = rng.i64(1..=5);
            match conn
                .cmd(&["GOBLIN.INCRBOUND", "quota", &increment.to_string(), "3000"])
                .int()
            {
                -1 if increment == 1 => return (used, replies),
                -1 => {}
                total => {
                    assert!(total <= 3000, "quota went to {total}");
                    used += increment;
                    replies.push(total);
                }
            }
        }
    });
    let used: i64 = results.iter().map(|r| r.0).sum();
    let replies: Vec<i64> = results.into_iter().flat_map(|r| r.1).collect();
    assert_eq!(get(&mut c, "quota").as_deref(), Some("3000"));
    assert_eq!(used, 3000, "every accepted increment counted, none beyond");
    let distinct: HashSet<i64> = replies.iter().copied().collect();
    assert_eq!(distinct.len(), replies.len());
    assert_eq!(replies.iter().max(), Some(&3000));
}

#[test]
fn zwindow_admits_exactly_the_limit() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    // A long lease: none ends during the test.
    let replies = race(server.addr, 30, |i, conn| {
        let holder = format!("holder-{i}");
        (
            holder.clone(),
            conn.cmd(&["GOBLIN.ZWINDOW", "sem", "3", "600000", &holder])
                .int(),
        )
    });
    let winners: HashSet<String> = replies
        .iter()
        .filter(|(_, r)| *r == 1)
        .map(|(h, _)| h.clone())
        .collect();
    assert_eq!(winners.len(), 3, "replies {replies:?}");
    assert!(replies.iter().all(|(_, r)| *r == 0 || *r == 1));
    let members: HashSet<String> = c
        .cmd(&["ZRANGE", "sem", "0", "-1"])
        .array()
        .iter()
        .map(|r| r.text())
        .collect();
    assert_eq!(members, winners, "the holders are exactly the winners");
}

#[test]
fn incrttl_counts_every_hit_in_one_window() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    let replies = race(server.addr, 20, |_, conn| {
        (0..50)
            .map(|_| {
                let r = conn.cmd(&["GOBLIN.INCRTTL", "hits", "1", "600000"]).array();
                (r[0].int(), r[1].int())
            })
            .collect::<Vec<_>>()
    });
    let mut counts: Vec<i64> = replies.iter().flatten().map(|r| r.0).collect();
    counts.sort();
    assert_eq!(
        counts,
        (1..=1000).collect::<Vec<_>>(),
        "each hit counted once"
    );
    assert!(replies.iter().flatten().all(|r| r.1 > 0 && r.1 <= 600000));
    assert_eq!(get(&mut c, "hits").as_deref(), Some("1000"));
    let ttl = c.cmd(&["PTTL", "hits"]).int();
    assert!(ttl > 0 && ttl <= 600000, "ttl {ttl}");
}

#[test]
fn cad_releases_a_lock_once() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    c.cmd(&["SET", "lock", "token-1", "PX", "600000"]);
    let replies = race(server.addr, 30, |_, conn| {
        conn.cmd(&["GOBLIN.CAD", "lock", "token-1"]).int()
    });
    assert_eq!(replies.iter().filter(|r| **r == 1).count(), 1);
    assert_eq!(replies.iter().filter(|r| **r == 0).count(), 29);
    assert_eq!(c.cmd(&["EXISTS", "lock"]), Reply::Int(0));
}

#[test]
fn hcas_optimistic_increments_lose_nothing() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    c.cmd(&["HSET", "counters", "n", "0"]);
    // Each client reads the field and swaps in value + 1, retrying when
    // another got there first, until it has done 25 increments.
    let swaps = race(server.addr, 20, |_, conn| {
        let mut done = 0;
        let mut attempts = 0;
        while done < 25 {
            attempts += 1;
            let seen = conn.cmd(&["HGET", "counters", "n"]).text();
            let next = (seen.parse::<i64>().unwrap() + 1).to_string();
            if conn
                .cmd(&["GOBLIN.HCAS", "counters", "n", &seen, &next])
                .int()
                == 1
            {
                done += 1;
            }
        }
        attempts
    });
    assert!(swaps.iter().all(|a| *a >= 25));
    assert_eq!(
        c.cmd(&["HGET", "counters", "n"]).text(),
        "500",
        "no increment lost"
    );
}

#[test]
fn hsetgt_keeps_the_highest_value() {
    let server = TestServer::start();
    let mut c = Conn::connect(server.addr);
    let sent = race(server.addr, 30, |i, conn| {
        let mut rng = fastrand::Rng::with_seed(3000 + i as u64);
        (0..40)
            .map(|_| {
                let v = rng.i64(-1_000_000..=1_000_000);
                conn.cmd(&["GOBLIN.HSETGT", "peaks", "p", &v.to_string()])
                    .int();
                v
            })
            .collect::<Vec<_>>()
    });
    let max = sent.iter().flatten().max().unwrap();
    assert_eq!(c.cmd(&["HGET", "peaks", "p"]).text(), max.to_string());
}
