//! The cost of one call through the embedded API, per call, on one thread:
//!
//! - `cache.increment`: the counter cache's increment (INCRBY through the
//!   store's dispatcher, reply decoded);
//! - `store.execute(["INCR", k])`: a command through `Store::execute`
//!   (arguments collected, reply decoded into a `Reply`);
//! - the two ways a store could give each call a session, measured on the
//!   engine directly: a session opened and dropped per call, and one
//!   session reused (what the store's pool does), each running INCR.
//!
//!
//! and, in the group `redis-rs`, one INCR through redis-rs's
//! `AsyncCommands::incr` on three `aio::ConnectionLike`s: a `Session`
//! (redis-compat), the `Store` itself, and a MultiplexedConnection to
//! goblin-server on loopback (RESP3 on all three), the server on a runtime
//! of its own with one worker thread.
//!
//!     cargo bench -p goblin --bench embedded

use criterion::{criterion_group, criterion_main, Criterion};
use goblin::cache::{Cache, Key};
use goblin::Store;
use goblin_engine::ConnInfo;
use std::hint::black_box;

fn embedded(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = Store::open_in_memory();
    let cache = Cache::embedded(store.clone());
    let key = Key::<i64>::new("bench:counter");

    let mut g = c.benchmark_group("embedded");
    g.bench_function("cache.increment", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(cache.increment(&key, 1).await.unwrap()) })
    });
    g.bench_function("store.execute INCR", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(store.execute(["INCR", "bench:incr"]).await.unwrap()) })
    });

    let engine = store.engine().clone();
    g.bench_function("session per call, INCR", |b| {
        b.iter(|| {
            let mut s = engine.session(ConnInfo::embedded());
            s.execute(&[b"INCR", b"bench:per-call"]);
            black_box(s.out.buf.len())
        })
    });
    let mut session = engine.session(ConnInfo::embedded());
    g.bench_function("reused session, INCR", |b| {
        b.iter(|| {
            session.execute(&[b"INCR", b"bench:reused"]);
            let n = session.out.buf.len();
            session.out.buf.clear();
            black_box(n)
        })
    });
    g.finish();
}

fn redis_rs(c: &mut Criterion) {
    use redis::AsyncCommands;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let addr = server_rt.block_on(async {
        let config = goblin_engine::Config::new();
        for (k, v) in [
            ("port", "0"),
            ("bind", "127.0.0.1"),
            ("save", ""),
            ("appendonly", "no"),
        ] {
            config.set_initial(k, v).unwrap();
        }
        let server = goblin_server::Server::bind(goblin_engine::Engine::new(config))
            .await
            .unwrap();
        let addr = server.local_addr();
        tokio::spawn(server.run());
        addr
    });
    let store = Store::open_in_memory();
    let mut session = store.session();
    let mut pooled = store.clone();
    let mut network = rt.block_on(async {
        redis::Client::open(format!("redis://{addr}/?protocol=resp3"))
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    });

    let mut g = c.benchmark_group("redis-rs");
    g.bench_function("INCR, embedded Session", |b| {
        b.iter(|| {
            rt.block_on(async { black_box(session.incr::<_, _, i64>("n", 1).await.unwrap()) })
        })
    });
    g.bench_function("INCR, embedded Store", |b| {
        b.iter(|| rt.block_on(async { black_box(pooled.incr::<_, _, i64>("n", 1).await.unwrap()) }))
    });
    g.bench_function("INCR, goblin-server on loopback", |b| {
        b.iter(|| {
            rt.block_on(async { black_box(network.incr::<_, _, i64>("n", 1).await.unwrap()) })
        })
    });
    g.finish();
}

criterion_group!(benches, embedded, redis_rs);
criterion_main!(benches);
