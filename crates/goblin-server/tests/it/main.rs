//! goblin-server's integration tests, built as one test binary: each
//! module below was a test binary of its own, each linking the whole
//! engine. `common` (an in-process server, server processes) and
//! `goblin_support` (a plain RESP2 connection, a reference redis-server,
//! key snapshots) are the helpers they share; goblin-module's and
//! goblin's tests include them too.
//!
//! The tests run on several threads of one process, so none may depend on
//! being alone in it: each starts its own server, in-process on an
//! ephemeral port or as a child process on a free port, in a directory of
//! its own.

mod common;
mod goblin_support;

mod acl;
mod admission;
mod aof_multi_part;
mod behaviour;
mod blocking;
mod client_eviction;
mod command_metadata;
mod config_params;
mod durability;
mod error_bytes;
mod eviction;
mod geo;
mod goblin_bad_input;
mod goblin_differential;
mod goblin_in_scripts;
mod goblin_races;
mod hyperloglog;
mod introspection;
mod lifecycle;
mod lists;
mod lua_equivalence;
mod memory;
mod parity;
mod parser_fuzz;
mod persistence;
mod protocol;
mod pubsub;
mod replication;
mod scripting;
mod scripting_js;
mod scripting_libs;
mod security;
mod sentinel;
mod streams;
mod tls;
mod tracking;
