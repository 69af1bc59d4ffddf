//! The active expiry cycle (Redis's activeExpireCycle): runs `hz` times a
//! second and deletes keys whose time has passed even if nobody reads them,
//! so that expired keys do not pile up in memory.
//!
//! Each shard is locked only while its own tables are sampled. A database
//! slice is sampled in rounds of keys from its expiry index; another round
//! follows while more than 10% of the sampled keys had expired and the
//! cycle's time budget (25% of the tick, scaled by active-expire-effort)
//! is not spent. Hash fields with a TTL are reaped the same way, in rounds
//! over the index of hashes that have such fields (Redis's hexpires), so
//! that the cycle never walks hashes without field TTLs.

use crate::engine::Engine;
use crate::util::time::now_ms;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Runs one cycle; returns the number of keys deleted and of hashes that
/// had expired fields.
pub fn active_expire_cycle(engine: &Engine) -> usize {
    if !engine.active_expire_enabled.load(Ordering::Relaxed) || engine.pause.expiry_paused() {
        return 0;
    }
    let hz = engine.config.hz.load(Ordering::Relaxed).clamp(1, 500) as u64;
    let effort = engine
        .config
        .active_expire_effort
        .load(Ordering::Relaxed)
        .clamp(1, 10) as usize;
    let per_round = 20 + 20 / 4 * (effort - 1);
    let stale_percent = 10 + 1 - effort;
    let budget = Duration::from_micros(1_000_000 / hz * (25 + 2 * (effort as u64 - 1)) / 100);
    let start = Instant::now();
    let mut deleted = 0;
    for idx in 0..engine.keyspace.shard_count() {
        let mut shard = engine.keyspace.lock(idx);
        // A CLIENT PAUSE may begin while the cycle runs.
        if engine.pause.expiry_paused() {
            break;
        }
        let now = now_ms();
        for db in shard.dbs.iter_mut() {
            loop {
                if db.volatile_len() == 0 {
                    break;
                }
                let round = db.active_expire(now, per_round);
                deleted += round.expired;
                if round.sampled == 0 || round.expired * 100 <= round.sampled * stale_percent {
                    break;
                }
                if start.elapsed() > budget {
                    expired_in(engine, &mut shard);
                    return deleted;
                }
            }
            loop {
                if db.field_volatile_len() == 0 {
                    break;
                }
                let round = db.active_expire_fields(now, per_round);
                deleted += round.expired;
                if round.sampled == 0 || round.expired * 100 <= round.sampled * stale_percent {
                    break;
                }
                if start.elapsed() > budget {
                    expired_in(engine, &mut shard);
                    return deleted;
                }
            }
        }
        expired_in(engine, &mut shard);
        if engine.clients.blocked.load(Ordering::Relaxed) != 0 {
            // Expired streams end the waits of their XREADGROUP clients.
            let mut gone = Vec::new();
            crate::blocking::take_gone(&mut shard, &mut gone);
            drop(shard);
            if !gone.is_empty() {
                engine.serve_ready(&engine.stats.local(), gone);
            }
        }
    }
    deleted
}

/// What expired in a shard the cycle holds: logged (as DELs) for the
/// append-only file and published as keyspace notifications.
fn expired_in(engine: &Engine, shard: &mut crate::keyspace::Shard) {
    crate::persist::log_expired(engine, shard);
    if engine.keyspace.env().events_pending() {
        for (i, db) in shard.dbs.iter_mut().enumerate() {
            let events = db.take_events();
            if !events.is_empty() {
                engine.pubsub.db_events(i, events, None);
            }
        }
    }
}
