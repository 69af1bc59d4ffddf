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

/// What one cycle did.
#[derive(Debug, Default, Clone, Copy)]
pub struct CycleReport {
    /// Keys deleted, and hashes that had expired fields.
    pub deleted: usize,
    /// Time spent holding shards: the cycle's own work, without its waits
    /// for shards that commands held (a DEBUG SLEEP, a long script). The
    /// latency monitor's "expire-cycle" event measures this, as Redis's
    /// single thread never waits for a lock.
    pub busy: Duration,
}

/// Runs one cycle.
pub fn active_expire_cycle(engine: &Engine) -> CycleReport {
    let mut report = CycleReport::default();
    // A replica leaves expiry to its primary, which sends the DELs.
    if !engine.active_expire_enabled()
        || engine.pause().expiry_paused()
        || engine.repl().is_replica()
    {
        return report;
    }
    let hz = engine.config().hz.load(Ordering::Relaxed).clamp(1, 500) as u64;
    let effort = engine
        .config()
        .active_expire_effort
        .load(Ordering::Relaxed)
        .clamp(1, 10) as usize;
    let per_round = 20 + 20 / 4 * (effort - 1);
    let stale_percent = 10 + 1 - effort;
    let budget = Duration::from_micros(1_000_000 / hz * (25 + 2 * (effort as u64 - 1)) / 100);
    let start = Instant::now();
    let mut deleted = 0;
    for idx in 0..engine.keyspace().shard_count() {
        let mut shard = engine.keyspace().lock(idx);
        let held = Instant::now();
        // A CLIENT PAUSE may begin while the cycle runs.
        if engine.pause().expiry_paused() {
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
                    report.busy += held.elapsed();
                    report.deleted = deleted;
                    return report;
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
                    report.busy += held.elapsed();
                    report.deleted = deleted;
                    return report;
                }
            }
        }
        expired_in(engine, &mut shard);
        report.busy += held.elapsed();
        if engine.clients().blocked.load(Ordering::Relaxed) != 0 {
            // Expired streams end the waits of their XREADGROUP clients.
            let mut gone = Vec::new();
            crate::blocking::take_gone(&mut shard, &mut gone);
            drop(shard);
            if !gone.is_empty() {
                engine.serve_ready(&engine.stats().local(), gone);
            }
        }
    }
    report.deleted = deleted;
    report
}

/// Entries a cron tick moves per shard for the tables' running resizes
/// (Redis gives each database a millisecond; a count keeps a shard's lock
/// short whatever the machine, and a resize still ends within seconds of
/// idleness: with the default hz of 10, 100k entries a second per shard).
const REHASH_PER_TICK: usize = 10_000;
/// Entries moved per hold of the shard's lock: about 50 to 100 us of
/// work, so that a client thread that needs the shard meanwhile waits no
/// longer than that.
const REHASH_PER_HOLD: usize = 1000;

/// Moves entries of the running table resizes (Redis's activerehashing),
/// so that a resize ends even when few commands touch its shard, and its
/// old bucket array is freed. One shard is held at a time, for a batch.
pub fn active_rehash(engine: &Engine) {
    for idx in 0..engine.keyspace().shard_count() {
        let mut budget = REHASH_PER_TICK;
        let mut db_idx = 0;
        while budget > 0 {
            let mut shard = engine.keyspace().lock(idx);
            // An idle database costs nothing: the step ends at once.
            while db_idx < shard.dbs.len() && !shard.dbs[db_idx].rehash_step(REHASH_PER_HOLD) {
                db_idx += 1;
            }
            if db_idx == shard.dbs.len() {
                break;
            }
            budget = budget.saturating_sub(REHASH_PER_HOLD);
            // Handed to a waiting client thread, if any.
            parking_lot::MutexGuard::unlock_fair(shard);
        }
    }
}

/// What expired in a shard the cycle holds: logged (as DELs) for the
/// append-only file, published as keyspace notifications, and invalidated
/// for client-side caching.
fn expired_in(engine: &Engine, shard: &mut crate::keyspace::Shard) {
    engine.propagate_expired(shard);
    if engine.keyspace().env().events_pending() {
        for (i, db) in shard.dbs.iter_mut().enumerate() {
            let events = db.take_events();
            if !events.is_empty() {
                // Client-side caching: the readers of expired keys are told.
                if engine.tracking().active() {
                    engine.expired_outside_commands(&events);
                }
                engine.pubsub().db_events(i, events, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Engine};
    use std::time::Duration;

    /// Regression: the cron's "expire-cycle" latency included the cycle's
    /// wait for shards a command held, so a DEBUG SLEEP or a long script
    /// reported a slow expiry cycle (the server's latency monitor test
    /// failed whenever a cycle started early in its DEBUG SLEEP). Redis's
    /// cycle never waits for anything; only its own work counts.
    #[test]
    fn a_cycle_waiting_for_a_held_shard_is_no_latency_event() {
        let config = Config::new();
        config
            .set_initial("latency-monitor-threshold", "100")
            .unwrap();
        let engine = Engine::new(config);
        let (held, release) = (std::sync::Barrier::new(2), Duration::from_millis(300));
        std::thread::scope(|s| {
            s.spawn(|| {
                let locks = engine.keyspace().lock_all();
                held.wait();
                std::thread::sleep(release);
                drop(locks);
            });
            held.wait();
            let waited = std::time::Instant::now();
            engine.cron();
            assert!(
                waited.elapsed() >= Duration::from_millis(200),
                "the cycle waited"
            );
        });
        assert_eq!(engine.latency().history(b"expire-cycle"), None);
    }
}
