//! The errors of [`Store`](crate::Store), its sessions and its
//! configuration.

use goblin_engine::protocol::ErrorText;
use std::path::PathBuf;

/// An error from [`Store`](crate::Store) or [`Session`](crate::Session).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The command answered with an error reply; the text is Redis's, from
    /// the error code on (`ERR syntax error`, `WRONGTYPE Operation against
    /// a key holding the wrong kind of value`...). It is bytes, as the
    /// reply carries them: errors quote what the command was given (an
    /// unknown command's name, a script's `redis.error_reply` text), which
    /// need not be UTF-8. `Display` shows it with U+FFFD for such bytes;
    /// [`ErrorText::as_bytes`] gives it unchanged.
    #[error("{0}")]
    Reply(ErrorText),
    /// The command wrote no reply: an empty command, CLIENT REPLY OFF,
    /// SHUTDOWN.
    #[error("the command gave no reply")]
    NoReply,
    /// The session is closed: it ran QUIT, or CLIENT KILL ended it. A
    /// connection to the server would be gone; open another session.
    #[error("the session is closed")]
    Closed,
    /// The data directory could not be created or read.
    #[error("data directory: {0}")]
    Io(#[from] std::io::Error),
    /// Another store of this process or another one has the data
    /// directory open (it holds the directory's `LOCK` file).
    #[error("data directory {0} is in use by another store")]
    DirectoryInUse(PathBuf),
    /// The data could not be loaded, or the store could not save it when
    /// it closed.
    #[error("persistence: {0}")]
    Persistence(#[from] PersistenceError),
    /// A setting was refused, with the reason the server's configuration
    /// file would give.
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
}

/// What went wrong loading or saving a store's data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PersistenceError {
    /// What the directory holds could not be loaded (a damaged snapshot or
    /// log, or a format this build cannot read): the store did not open,
    /// rather than open empty. The text is the server's log line.
    #[error("loading: {0}")]
    Load(String),
    /// Writing or syncing the append-only file failed.
    #[error("append-only file: {0}")]
    AppendOnlyFile(#[source] std::io::Error),
    /// The snapshot (`dump.rdb`) could not be written.
    #[error("snapshot: {0}")]
    Snapshot(#[source] std::io::Error),
}

/// A configuration setting that was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No such parameter in the server's configuration file.
    #[error("unknown parameter '{0}'")]
    UnknownParameter(String),
    /// The parameter exists; its value is refused for `reason`, the text
    /// the server gives for such a line.
    #[error("'{name} {value}': {reason}")]
    InvalidValue {
        /// The parameter.
        name: String,
        /// The value given.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// The data directory's path is not UTF-8, which the configuration
    /// (a text file) cannot hold.
    #[error("the data directory's path is not UTF-8: {0:?}")]
    NonUtf8Dir(PathBuf),
}

impl ConfigError {
    /// The engine refused `name value` with `reason`.
    pub(crate) fn refused(name: &str, value: &str, reason: String) -> ConfigError {
        if goblin_engine::config::spec(name).is_none() {
            ConfigError::UnknownParameter(name.to_string())
        } else {
            ConfigError::InvalidValue {
                name: name.to_string(),
                value: value.to_string(),
                reason,
            }
        }
    }
}
