//! # goblin-keyspace
//!
//! Goblin's keyspace: every database's keys, split into shards, and the
//! value types they hold. This crate is the bottom layer of the engine: it
//! knows nothing of commands, clients, configuration or persistence, and
//! its Cargo.toml names no Goblin crate but goblin-num, so cargo refuses
//! an arrow that runs upward.
//!
//! A key's 64-bit hash picks its shard (high bits) and its bucket inside the
//! shard's tables (low bits). Each shard holds a slice of every database
//! behind one mutex ([`Keyspace`], [`shards`]); a slice is a [`Db`]: the
//! key table, the expiry index, lazy and active expiry, the WATCH registry
//! ([`watch`]), and what a running snapshot needs to see the data as it
//! was. See docs/design/threads-and-locks.md for why shards are locks
//! rather than threads.
//!
//! What the layers above keep per database (the clients blocked on its
//! keys) rides along as a [`Waiters`] type they choose; what depends on
//! the engine's settings (the append-only file's switch, keyspace
//! notifications, the LRU/LFU rule) comes from one [`KeyspaceEnv`] per
//! keyspace; what depends on the running command (its clock, CLIENT
//! PAUSE) comes with each look-up as a [`Now`]. No state of one engine is
//! held in a `static`, so engines in one process never share any.
//!
//! The value types live beside the tables: strings are `CompactBytes`;
//! [`hash::Hash`] and [`set::Set`] each have a compact form for small
//! collections ([`listpack::Listpack`], [`set::IntSet`]) and a [`Dict`]
//! form, switched where Redis switches its encodings. The string handles
//! [`small_bytes::SmallBytes`] and [`thin_bytes::ThinBytes`] keep the
//! entries of large hashes as small as Redis's. A HyperLogLog is a string
//! in Redis's own HLL layout ([`hyperloglog`]). A [`stream::Stream`] keeps
//! its entries in Redis's own listpack nodes. [`packed`] reads and writes
//! Redis's compact blobs (listpack, ziplist, intset, zipmap) as they
//! appear in snapshots and DUMP payloads.

pub mod bytes;
pub mod db;
pub mod dict;
pub mod digest;
pub mod env;
pub mod geo;
pub mod hash;
pub mod hyperloglog;
pub mod list;
pub mod listpack;
pub mod memory;
pub mod object;
pub mod packed;
pub mod set;
pub mod shards;
pub mod sketch;
pub mod small_bytes;
pub mod stream;
pub mod thin_bytes;
pub mod watch;
pub mod zset;

pub use bytes::CompactBytes;
pub use db::{Db, HashLookup, Waiters};
pub use dict::{hash_key, Dict};
pub use env::{AccessPolicy, KeyspaceEnv, Now};
pub use hash::{FieldTtls, Hash, HashLimits, SetTtl, TtlCondition};
pub use list::List;
pub use object::{Object, Value, ValueType};
pub use set::{Member, Set};
pub use shards::{Keyspace, OwnedShard, Shard, ShardLocks};
pub use stream::Stream;
pub use zset::ZSet;
