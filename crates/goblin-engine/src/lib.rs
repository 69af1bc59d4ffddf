//! # goblin-engine
//!
//! The Goblin engine: everything that makes Goblin a Redis-compatible data
//! store except the network. It owns the keyspace (sharded tables of keys
//! with expiry), the value types, the command table and every command
//! implementation, so the same engine runs behind the TCP server and
//! in-process.
//!
//! The main types:
//! - [`Engine`]: one instance: keyspace, configuration, clients, statistics.
//! - [`Session`]: one client of an engine; `execute` runs a command and
//!   appends its RESP reply to the session's output buffer.
//! - [`keyspace::Keyspace`]: the shards, each a mutex over its slice of
//!   every database ([`keyspace::Db`]).
//! - [`command::CommandSpec`]: the declarative description of a command;
//!   the families in [`commands`] each export a list of them.
//! - [`protocol`]: the RESP request parser and the reply writer.
//! - [`persist`]: RDB snapshots (point in time, without fork), the
//!   append-only file, DUMP / RESTORE payloads.
//! - [`propagate`]: what the append-only file and the replicas receive, and
//!   the one writer to both.
//! - [`blocking`]: clients waiting on keys (BLPOP...); the engine serves,
//!   times out and unblocks them (`engine/blocking.rs`).
//! - [`scripting`]: scripts and function libraries (EVAL and FUNCTION) in
//!   Lua 5.1 and in JavaScript (QuickJS).
//! - [`repl`]: replication: the stream and its backlog, the replicas of
//!   this engine, the history it follows as a replica.
//! - [`pubsub`]: the Pub/Sub registry and the mailboxes through which
//!   messages reach clients on any thread.
//!
//! See ARCHITECTURE.md at the repository root for the layers and the path
//! of a command, and docs/design/threads-and-locks.md for the locking model.

pub mod acl;
pub mod blocking;
pub mod client;
pub mod command;
pub mod commands;
pub mod config;
pub mod crash;
pub mod engine;
mod error;
pub mod evict;
pub mod expire;
pub mod keyspace;
pub mod latency;
pub mod lazyfree;
pub mod log;
pub mod memory;
pub mod monitor;
pub mod oom;
pub mod pause;
pub mod persist;
pub mod propagate;
pub mod protocol;
pub mod pubsub;
pub mod repl;
pub mod scripting;
pub mod shutdown;
pub mod slowlog;
pub mod stats;
#[cfg(test)]
pub(crate) mod test_support;
pub mod tracking;
pub mod util;

pub use client::ConnInfo;
pub use config::Config;
pub use engine::{Engine, Flow, Pipeline, Session, ShutdownMode, TlsChange};
pub use error::Error;
pub use protocol::Reply;

/// Goblin's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Redis version whose behaviour Goblin implements (reported where
/// clients look for a Redis version: INFO's redis_version, HELLO).
pub const REDIS_VERSION: &str = "7.0.15";
