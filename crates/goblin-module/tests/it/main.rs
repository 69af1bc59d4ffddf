//! goblin-module's tests, built as one test binary: each module below was
//! a test binary of its own. `support` holds what they share (with
//! goblin-server's tests, whose helpers it includes).
//!
//! The tests run on several threads of one process: each starts its own
//! servers (redis-server with the module, goblin-server in-process) on
//! ports of its own.

mod support;

mod module_cluster;
mod module_commands;
mod module_differential;
