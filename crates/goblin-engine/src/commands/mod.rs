//! Command implementations, one family per file (as Redis keeps
//! `t_string.c`, `t_hash.c`...). Each file exports `COMMANDS`, its part of
//! the command table.

pub mod acl;
pub mod bitmaps;
pub mod cell;
pub mod cluster;
pub mod connection;
pub mod debug;
pub mod geo;
pub mod goblin;
pub mod hashes;
pub mod help;
pub mod hyperloglog;
pub mod info;
pub mod keys;
pub mod latency;
pub mod lists;
pub mod lolwut;
pub mod module;
pub mod persistence;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod slowlog;
pub mod sort;
pub mod streams;
pub mod strings;
pub mod transactions;
pub mod zsets;

use crate::command::spec::CommandSpec;
use crate::{Config, Engine};
use std::sync::Arc;

impl Engine {
    /// An engine with every family of this module registered into its
    /// command table, as each family's `COMMANDS` lists them.
    pub fn new(config: Config) -> Arc<Engine> {
        let table = crate::command::table::register(FAMILIES);
        let engine = Engine::build(config, table.len(), |clients| {
            Box::new(crate::scripting::Scripting::new(clients))
        });
        engine
            .clients()
            .set_command_names(table.entries.iter().map(|e| e.fullname.as_str()).collect());
        engine
    }
}

/// Every family's table, in the order COMMAND lists them.
pub static FAMILIES: &[&[CommandSpec]] = &[
    strings::COMMANDS,
    bitmaps::COMMANDS,
    hyperloglog::COMMANDS,
    lists::COMMANDS,
    keys::COMMANDS,
    connection::COMMANDS,
    server::COMMANDS,
    acl::COMMANDS,
    transactions::COMMANDS,
    scripting::COMMANDS,
    zsets::COMMANDS,
    geo::COMMANDS,
    hashes::COMMANDS,
    sets::COMMANDS,
    streams::COMMANDS,
    sort::COMMANDS,
    goblin::COMMANDS,
    persistence::COMMANDS,
    cell::COMMANDS,
    cluster::COMMANDS,
    slowlog::COMMANDS,
    latency::COMMANDS,
    pubsub::COMMANDS,
    replication::COMMANDS,
    debug::COMMANDS,
    module::COMMANDS,
    lolwut::COMMANDS,
];
