//! `StoreConfig`: how a [`Store`] opens, typed.
//!
//! The typed settings cover what an application usually chooses: where
//! the data lives, the append-only file and its fsync policy, snapshot
//! points, a memory bound and its eviction policy, the number of
//! databases. Every other parameter of the server's configuration file is
//! reachable through [`StoreConfig::set`]. Nothing is checked until
//! [`StoreConfig::open`], which refuses a setting with a [`ConfigError`]
//! before anything is created.

use crate::error::{ConfigError, Error};
use crate::store::Store;
use goblin_engine::{Config, Engine};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use goblin_engine::evict::Policy as EvictionPolicy;

/// When the append-only file is synced to disk (Redis's `appendfsync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AppendFsync {
    /// After every write, before its reply: nothing acknowledged is lost.
    Always,
    /// Once a second (the default): a crash loses at most about a second.
    EverySec,
    /// When the operating system chooses.
    No,
}

impl AppendFsync {
    fn name(self) -> &'static str {
        match self {
            AppendFsync::Always => "always",
            AppendFsync::EverySec => "everysec",
            AppendFsync::No => "no",
        }
    }
}

/// How a [`Store`] opens: in memory (the default) or on a data directory,
/// and with which settings.
///
/// In memory, nothing is written anywhere (no snapshots, no log) unless
/// a directory is given. On a directory the defaults are the server's:
/// an append-only file synced every second, and the server's snapshot
/// points.
///
/// A memory bound is this store's own: [`max_memory`](Self::max_memory)
/// limits what its keys, sessions and scripts hold (its `used_memory`),
/// not the process's memory, so two stores in one process never evict for
/// each other. Over the bound, keys go as the eviction policy says
/// (Redis's `maxmemory-policy`), or writes fail with Redis's OOM error
/// under [`EvictionPolicy::NoEviction`], the default.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), goblin::Error> {
/// use goblin::{AppendFsync, EvictionPolicy, StoreConfig};
/// use std::time::Duration;
///
/// let dir = std::env::temp_dir().join(format!("goblin-doc-config-{}", std::process::id()));
/// let store = StoreConfig::new()
///     .dir(&dir)
///     .append_only(true)
///     .append_fsync(AppendFsync::Always)
///     .save_point(Duration::from_secs(60), 1000)
///     .max_memory(64 << 20)
///     .eviction_policy(EvictionPolicy::AllKeysLru)
///     .databases(4)
///     .open()?;
/// store.execute(["SET", "k", "v"]).await?;
/// store.close().await?;
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct StoreConfig {
    dir: Option<PathBuf>,
    save_points: Option<Vec<(u64, u64)>>,
    settings: Vec<(String, String)>,
}

/// The name [`Store::builder`] has always given [`StoreConfig`].
pub type StoreBuilder = StoreConfig;

impl StoreConfig {
    /// A store in memory with the server's defaults.
    pub fn new() -> StoreConfig {
        StoreConfig::default()
    }

    /// Keeps the data in `dir` (created if missing), in the same files as
    /// `goblin-server --dir <dir>`.
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Whether writes go to an append-only file (Redis's `appendonly`;
    /// on by default for a store on a directory).
    pub fn append_only(self, on: bool) -> Self {
        self.set("appendonly", if on { "yes" } else { "no" })
    }

    /// When the append-only file is synced (Redis's `appendfsync`).
    pub fn append_fsync(self, policy: AppendFsync) -> Self {
        self.set("appendfsync", policy.name())
    }

    /// Adds a snapshot point: a snapshot is taken once `changes` writes
    /// happened within `after` (Redis's `save <seconds> <changes>`). The
    /// first point given replaces the server's defaults.
    pub fn save_point(mut self, after: Duration, changes: u64) -> Self {
        self.save_points
            .get_or_insert_with(Vec::new)
            .push((after.as_secs(), changes));
        self
    }

    /// No periodic snapshots, and none when the store closes (Redis's
    /// `save ""`); the append-only file, if on, still keeps every write.
    pub fn no_snapshots(mut self) -> Self {
        self.save_points = Some(Vec::new());
        self
    }

    /// Bounds what the store holds to `bytes` (Redis's `maxmemory`; 0 for
    /// no bound).
    pub fn max_memory(self, bytes: u64) -> Self {
        self.set("maxmemory", bytes.to_string())
    }

    /// What goes when the store is over its bound (Redis's
    /// `maxmemory-policy`).
    pub fn eviction_policy(self, policy: EvictionPolicy) -> Self {
        self.set("maxmemory-policy", policy.name())
    }

    /// The number of databases SELECT can choose from (Redis's
    /// `databases`, 16 by default).
    pub fn databases(self, count: u32) -> Self {
        self.set("databases", count.to_string())
    }

    /// Any parameter of the server's configuration file, as it would be
    /// written there (`"hz", "50"`, `"lua-time-limit", "100"`...); checked
    /// when the store opens, where a refusal is [`ConfigError`].
    pub fn set(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((name.into(), value.into()));
        self
    }

    /// The engine's configuration for these settings, and whether the
    /// store has a directory to load from.
    fn to_config(&self) -> Result<(Config, bool), Error> {
        let config = Config::new();
        let set = |name: &str, value: &str| {
            config
                .set_initial(name, value)
                .map_err(|reason| Error::Config(ConfigError::refused(name, value, reason)))
        };
        match &self.dir {
            None => {
                // The defaults are the server's, which snapshots to its
                // working directory; an in-memory store writes nothing.
                set("save", "")?;
                set("appendonly", "no")?;
            }
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                let dir = dir.canonicalize()?;
                let text = dir
                    .to_str()
                    .ok_or_else(|| ConfigError::NonUtf8Dir(dir.clone()))?;
                set("dir", text)?;
            }
        }
        if let Some(points) = &self.save_points {
            let line = points
                .iter()
                .map(|(secs, changes)| format!("{secs} {changes}"))
                .collect::<Vec<_>>()
                .join(" ");
            set("save", &line)?;
        }
        for (name, value) in &self.settings {
            set(name, value)?;
        }
        Ok((config, self.dir.is_some()))
    }

    /// Opens the store: loads what the directory holds, if one was given.
    /// The directory's files are read on the calling thread; from async
    /// code with a large data set, open it inside `spawn_blocking`.
    pub fn open(self) -> Result<Store, Error> {
        let (config, on_disk) = self.to_config()?;
        if on_disk {
            Store::open_with_config(config)
        } else {
            Ok(Store::start(Engine::new(config)))
        }
    }
}
