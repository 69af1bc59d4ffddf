//! Redis's `redisLrand48` / `redisSrand48` (rand.c): the 48-bit linear
//! congruential generator behind `math.random`, so that a script sees the
//! same sequence on every platform (and the same one Redis gives).
//!
//! The state is process-wide, as in Redis: it is not reset per script
//! (Redis 7 replicates scripts by their effects, so scripts may be random),
//! and `math.randomseed` reseeds it.

use std::sync::atomic::{AtomicU64, Ordering};

const A: u64 = 0x5_DEEC_E66D;
const C: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;
const INITIAL: u64 = 0x1234_ABCD_330E;

/// Redis's REDIS_LRAND48_MAX.
pub const LRAND48_MAX: i32 = i32::MAX;

static STATE: AtomicU64 = AtomicU64::new(INITIAL);

/// The next value in [0, 2^31).
pub fn lrand48() -> i32 {
    // Keyed scripts run in parallel: each draw advances the state once.
    let prev = STATE
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(step(x)))
        .unwrap_or_else(|x| x);
    (step(prev) >> 17) as i32
}

fn step(x: u64) -> u64 {
    x.wrapping_mul(A).wrapping_add(C) & MASK
}

fn seeded(seed: i32) -> u64 {
    ((seed as u32 as u64) << 16 | 0x330E) & MASK
}

pub fn srand48(seed: i32) {
    STATE.store(seeded(seed), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(x: u64) -> String {
        let r = ((x >> 17) as i32 % LRAND48_MAX) as f64 / LRAND48_MAX as f64;
        format!("{r:.14}")
    }

    #[test]
    fn matches_redis_sequence() {
        // What math.random() returns in a fresh Redis 7.0 server, and
        // after math.randomseed(10).
        let x = step(INITIAL);
        assert_eq!(value(x), "0.39646477363839");
        assert_eq!(value(step(x)), "0.84048536971234");
        assert_eq!(value(step(seeded(10))), "0.87885112309775");
    }
}
