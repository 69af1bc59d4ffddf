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

criterion_group!(benches, embedded);
criterion_main!(benches);
