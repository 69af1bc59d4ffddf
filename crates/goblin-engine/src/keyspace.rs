//! The keyspace (crates/goblin-keyspace) as this engine uses it: each
//! database slice carries the clients blocked on its keys
//! ([`BlockingRegistry`]), so the types below fix that parameter; every
//! other item is the keyspace crate's own.

pub use goblin_keyspace::*;

use crate::blocking::BlockingRegistry;

pub type Db = goblin_keyspace::Db<BlockingRegistry>;
pub type Shard = goblin_keyspace::Shard<BlockingRegistry>;
pub type Keyspace = goblin_keyspace::Keyspace<BlockingRegistry>;
pub type ShardLocks<'a> = goblin_keyspace::ShardLocks<'a, BlockingRegistry>;
pub type OwnedShard = goblin_keyspace::OwnedShard<BlockingRegistry>;
