//! The shards of a keyspace and their locks.
//!
//! Each shard is a mutex over its slice of every database. A command locks
//! the shards of its keys in ascending index order, runs, and unlocks;
//! commands on keys of different shards run in parallel on different
//! threads, and ordered locking rules out deadlock. Commands that need the
//! whole keyspace (KEYS, FLUSHALL, SWAPDB...), and transactions or scripts
//! that may touch any key, hold every shard.

use crate::db::{Db, Waiters};
use crate::dict::hash_key;
use crate::env::KeyspaceEnv;
use parking_lot::{ArcMutexGuard, Mutex, MutexGuard, RawMutex};
use std::sync::Arc;

/// One shard: its slice of each database.
pub struct Shard<W = ()> {
    pub dbs: Box<[Db<W>]>,
}

/// A shard's lock as a value that owns it (not borrowed from the
/// keyspace), so that a connection can keep it from one command to the
/// next (see `Pipeline`).
pub type OwnedShard<W = ()> = ArcMutexGuard<RawMutex, Shard<W>>;

/// Every database's keys, in `shards` mutexes; `W` is what the layers
/// above keep beside each database slice (see [`Waiters`]).
pub struct Keyspace<W = ()> {
    shards: Box<[Arc<Mutex<Shard<W>>>]>,
    shard_bits: u32,
    databases: usize,
    env: Arc<KeyspaceEnv>,
}

impl<W: Waiters> Keyspace<W> {
    /// `shards` is rounded up to a power of two.
    pub fn new(databases: usize, shards: usize, env: KeyspaceEnv) -> Keyspace<W> {
        let env = Arc::new(env);
        let n = shards.max(1).next_power_of_two();
        let shards = (0..n)
            .map(|_| {
                Arc::new(Mutex::new(Shard {
                    dbs: (0..databases).map(|_| Db::new(env.clone())).collect(),
                }))
            })
            .collect();
        Keyspace {
            shards,
            shard_bits: n.trailing_zeros(),
            databases,
            env,
        }
    }

    /// The settings and counters this keyspace shares with its engine.
    #[inline]
    pub fn env(&self) -> &KeyspaceEnv {
        &self.env
    }

    pub fn databases(&self) -> usize {
        self.databases
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    #[inline]
    pub fn shard_of(&self, hash: u64) -> usize {
        if self.shard_bits == 0 {
            0
        } else {
            (hash >> (64 - self.shard_bits)) as usize
        }
    }

    #[inline]
    pub fn shard_of_key(&self, key: &[u8]) -> usize {
        self.shard_of(hash_key(key))
    }

    pub fn lock(&self, idx: usize) -> MutexGuard<'_, Shard<W>> {
        self.shards[idx].lock()
    }

    /// Locks every shard, in order.
    pub fn lock_all(&self) -> ShardLocks<'_, W> {
        ShardLocks::Many {
            guards: self
                .shards
                .iter()
                .enumerate()
                .map(|(i, m)| (i, m.lock()))
                .collect(),
            all: true,
        }
    }

    /// Locks the given shards (any order, duplicates allowed) in ascending order.
    pub fn lock_set(&self, mut idx: Vec<usize>) -> ShardLocks<'_, W> {
        idx.sort_unstable();
        idx.dedup();
        match idx.len() {
            0 => ShardLocks::None,
            1 => ShardLocks::One(idx[0], self.shards[idx[0]].lock()),
            _ => ShardLocks::Many {
                all: idx.len() == self.shards.len(),
                guards: idx
                    .into_iter()
                    .map(|i| (i, self.shards[i].lock()))
                    .collect(),
            },
        }
    }

    /// Adds shard `idx` to `locks` if it is free now, without waiting (so
    /// without the ascending order that keeps waits deadlock-free).
    /// Whether `locks` holds it afterwards.
    pub fn try_add<'a>(&'a self, locks: &mut ShardLocks<'a, W>, idx: usize) -> bool {
        if locks.holds(idx) {
            return true;
        }
        // (Scripts, the only callers, never hold an owned guard.)
        if matches!(locks, ShardLocks::Owned(..)) {
            return false;
        }
        let Some(guard) = self.shards[idx].try_lock() else {
            return false;
        };
        let mut guards = match std::mem::replace(locks, ShardLocks::None) {
            ShardLocks::None | ShardLocks::Owned(..) => Vec::with_capacity(1),
            ShardLocks::One(i, g) => vec![(i, g)],
            ShardLocks::Many { guards, .. } => guards,
        };
        let at = guards.partition_point(|(i, _)| *i < idx);
        guards.insert(at, (idx, guard));
        *locks = match guards.len() {
            1 => {
                let (i, g) = guards.pop().expect("one guard");
                ShardLocks::One(i, g)
            }
            n => ShardLocks::Many {
                all: n == self.shards.len(),
                guards,
            },
        };
        true
    }

    pub fn lock_one(&self, idx: usize) -> ShardLocks<'_, W> {
        ShardLocks::One(idx, self.shards[idx].lock())
    }

    /// `lock_one` that gives up as `lock_polling` does.
    #[inline]
    pub fn lock_one_polling(
        &self,
        idx: usize,
        give_up: &dyn Fn() -> bool,
    ) -> Option<ShardLocks<'_, W>> {
        let shard = &self.shards[idx];
        wait_for(
            &self.env,
            || shard.try_lock(),
            |t| shard.try_lock_for(t),
            give_up,
        )
        .map(|g| ShardLocks::One(idx, g))
    }

    /// Shard `idx` as an owned guard, waiting as `lock_polling` does (with
    /// `give_up`, when given).
    pub fn lock_owned(
        &self,
        idx: usize,
        give_up: Option<&dyn Fn() -> bool>,
    ) -> Option<OwnedShard<W>> {
        let shard = &self.shards[idx];
        wait_for(
            &self.env,
            || shard.try_lock_arc(),
            |t| shard.try_lock_arc_for(t),
            give_up.unwrap_or(&|| false),
        )
    }

    /// Like `lock_set` (or `lock_all` when `idx` is None), but gives up,
    /// releasing what it holds, as soon as `give_up` says so while it
    /// waits. A command queued behind a script uses this to answer BUSY
    /// once the script runs too long, instead of waiting for it.
    pub fn lock_polling(
        &self,
        idx: Option<Vec<usize>>,
        give_up: &dyn Fn() -> bool,
    ) -> Option<ShardLocks<'_, W>> {
        let acquire = |i: usize| -> Option<MutexGuard<'_, Shard<W>>> {
            let shard = &self.shards[i];
            wait_for(
                &self.env,
                || shard.try_lock(),
                |t| shard.try_lock_for(t),
                give_up,
            )
        };
        let idx = match idx {
            None => {
                let mut guards = Vec::with_capacity(self.shards.len());
                for i in 0..self.shards.len() {
                    guards.push((i, acquire(i)?));
                }
                return Some(ShardLocks::Many { guards, all: true });
            }
            Some(mut idx) => {
                idx.sort_unstable();
                idx.dedup();
                idx
            }
        };
        Some(match idx.len() {
            0 => ShardLocks::None,
            1 => ShardLocks::One(idx[0], acquire(idx[0])?),
            _ => {
                let all = idx.len() == self.shards.len();
                let mut guards = Vec::with_capacity(idx.len());
                for i in idx {
                    guards.push((i, acquire(i)?));
                }
                ShardLocks::Many { guards, all }
            }
        })
    }
}

/// Takes a lock through `try_lock`, waiting for it as a command does: a
/// command holds its shard for well under a microsecond, so spin briefly
/// (no system call), then, for longer holders (a script, a transaction, a
/// pipeline's run of commands on one shard), yield the core for up to a
/// millisecond before sleeping on the lock (`try_lock_for`). Yielding
/// lets whoever else is runnable have the core; sleeping instead would
/// make the holder pay a wake-up on each release, which on one hot key
/// (every client's commands on one shard) happens once per pipeline.
/// None once `give_up` says so. A wait that goes on past the first sleep
/// tells the engine once (`KeyspaceEnv::long_wait`).
fn wait_for<G>(
    env: &KeyspaceEnv,
    try_lock: impl Fn() -> Option<G>,
    try_lock_for: impl Fn(std::time::Duration) -> Option<G>,
    give_up: &dyn Fn() -> bool,
) -> Option<G> {
    if let Some(g) = try_lock() {
        return Some(g);
    }
    for round in 0..SPINS {
        for _ in 0..(2 << round) {
            std::hint::spin_loop();
        }
        if let Some(g) = try_lock() {
            return Some(g);
        }
    }
    let yielding = std::time::Instant::now();
    loop {
        std::thread::yield_now();
        if let Some(g) = try_lock() {
            return Some(g);
        }
        if yielding.elapsed() >= YIELD_FOR {
            break;
        }
    }
    let mut released = false;
    loop {
        if give_up() {
            return None;
        }
        if let Some(g) = try_lock_for(LOCK_POLL) {
            return Some(g);
        }
        if !released {
            // A long wait (behind a script): let the runtime serve other
            // clients meanwhile.
            released = true;
            env.long_wait();
        }
    }
}

/// How many rounds a lock waiter busy-spins (2, 4, ... 32 pauses, one to
/// two microseconds in all) before it starts yielding its core.
const SPINS: u32 = 5;

/// How long a lock waiter then yields its core before it sleeps.
const YIELD_FOR: std::time::Duration = std::time::Duration::from_millis(1);

/// How long a lock waiter sleeps between looks at its give-up condition.
const LOCK_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// The shards a running command holds. Commands reach keys only through
/// this, so touching a key whose shard is not held is caught at once.
pub enum ShardLocks<'a, W = ()> {
    None,
    One(usize, MutexGuard<'a, Shard<W>>),
    /// One shard, through a guard that owns it (`Keyspace::lock_owned`).
    Owned(usize, OwnedShard<W>),
    Many {
        guards: Vec<(usize, MutexGuard<'a, Shard<W>>)>,
        all: bool,
    },
}

impl<'a, W> ShardLocks<'a, W> {
    pub fn holds_all(&self) -> bool {
        matches!(self, ShardLocks::Many { all: true, .. })
    }

    pub fn holds(&self, idx: usize) -> bool {
        match self {
            ShardLocks::None => false,
            ShardLocks::One(i, _) | ShardLocks::Owned(i, _) => *i == idx,
            ShardLocks::Many { guards, all } => {
                *all || guards.binary_search_by_key(&idx, |(i, _)| *i).is_ok()
            }
        }
    }

    #[inline]
    pub fn shard(&mut self, idx: usize) -> &mut Shard<W> {
        match self {
            ShardLocks::One(i, g) if *i == idx => g,
            ShardLocks::Owned(i, g) if *i == idx => g,
            ShardLocks::Many { guards, all: true } => &mut guards[idx].1,
            ShardLocks::Many { guards, all: false } => {
                match guards.binary_search_by_key(&idx, |(i, _)| *i) {
                    Ok(pos) => &mut guards[pos].1,
                    Err(_) => panic!("shard {idx} touched without its lock"),
                }
            }
            _ => panic!("shard {idx} touched without its lock"),
        }
    }

    pub fn shard_ref(&self, idx: usize) -> &Shard<W> {
        match self {
            ShardLocks::One(i, g) if *i == idx => g,
            ShardLocks::Owned(i, g) if *i == idx => g,
            ShardLocks::Many { guards, all: true } => &guards[idx].1,
            ShardLocks::Many { guards, all: false } => {
                match guards.binary_search_by_key(&idx, |(i, _)| *i) {
                    Ok(pos) => &guards[pos].1,
                    Err(_) => panic!("shard {idx} touched without its lock"),
                }
            }
            _ => panic!("shard {idx} touched without its lock"),
        }
    }

    /// Every held shard, in index order.
    pub fn held_mut(&mut self) -> impl Iterator<Item = &mut Shard<W>> {
        let v: Vec<&mut Shard<W>> = match self {
            ShardLocks::None => Vec::new(),
            ShardLocks::One(_, g) => vec![&mut **g],
            ShardLocks::Owned(_, g) => vec![&mut **g],
            ShardLocks::Many { guards, .. } => guards.iter_mut().map(|(_, g)| &mut **g).collect(),
        };
        v.into_iter()
    }

    pub fn held(&self) -> impl Iterator<Item = &Shard<W>> {
        let v: Vec<&Shard<W>> = match self {
            ShardLocks::None => Vec::new(),
            ShardLocks::One(_, g) => vec![&**g],
            ShardLocks::Owned(_, g) => vec![&**g],
            ShardLocks::Many { guards, .. } => guards.iter().map(|(_, g)| &**g).collect(),
        };
        v.into_iter()
    }
}
