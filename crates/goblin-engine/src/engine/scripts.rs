//! What the core needs of the scripting engines (Lua and JavaScript):
//! the scripts themselves run commands, so the engines live above the
//! command layer (`crate::scripting`) and the engine holds them behind
//! this trait, given when it is built.

use crate::config::Config;
use crate::Error;

pub trait ScriptEngines: Send + Sync + 'static {
    /// The BUSY error of a script running past busy-reply-threshold, None
    /// while none does.
    fn busy_error(&self) -> Option<Error>;
    /// Bytes of the interpreters, the cached scripts and the function
    /// libraries (part of used_memory).
    fn memory(&self) -> u64;
    /// The function libraries' code: all of them (for the append-only
    /// file's base), or what a snapshot keeps (`rdb-save-js-libraries`).
    fn library_codes(&self, config: &Config, for_rdb: bool) -> Vec<Vec<u8>>;
    /// Loads a library from a snapshot (its name); one that exists
    /// already fails unless `replace`.
    fn load_library(&self, config: &Config, code: &[u8], replace: bool) -> Result<String, Error>;
    /// Drops every function library (a snapshot loaded in their place).
    fn flush_functions(&self);
    /// The concrete engines, for the layers above (`crate::scripting`).
    fn as_any(&self) -> &dyn std::any::Any;
}
