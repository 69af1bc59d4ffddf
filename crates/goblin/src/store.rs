//! `Store`: a Goblin engine inside the process.
//!
//! A command runs through `Session::execute`, the path every network
//! command takes: the dispatcher looks it up, checks its arity, locks the
//! shards of its keys in order, runs the handler and serves the clients it
//! made ready. The reply the session writes (RESP3) is decoded into a
//! [`Reply`]. Nothing is parsed or answered differently from the server.
//!
//! # Sessions
//!
//! A session is one client's state (selected database, MULTI queue,
//! WATCHed keys, protocol). Each `execute` call behaves as a client that
//! connects, sends one command and leaves: nothing carries over from one
//! call to the next. Opening a session per call costs an allocation of the
//! client's state and, on the way out, a look-up in the engine's client
//! registry under its lock; so the store keeps idle sessions in a pool
//! and hands each call one of them. A session goes back to the pool only
//! when the call left it exactly as a fresh one (database 0, RESP3, no
//! transaction, no WATCH, no subscription, replies on, no name); a call
//! that changed any of
//! that (SELECT, MULTI, WATCH, HELLO 2, CLIENT SETNAME...) drops its
//! session, which is what a disconnect does. The benchmark
//! (`benches/embedded.rs`) measures both ways.
//!
//! # Pub/Sub
//!
//! PUBLISH works as over the network and reaches every subscriber of the
//! engine (network clients included). A SUBSCRIBE through `execute` is a
//! client that subscribes and leaves: the call returns the confirmations
//! and its session, being subscribed, is dropped, which leaves the
//! channels again. A host that keeps a session subscribed (see
//! `goblin_engine::Session::deliver_pushes`) receives the messages.
//!
//! # Blocking commands
//!
//! BLPOP and the other blocking commands are supported: `execute` waits
//! asynchronously (the calling task yields, the thread is free) until
//! another caller or connection serves it, or its timeout passes, and then
//! returns the same reply a network client would get. Dropping the future
//! while it waits gives the wait up, as a disconnect does.

use goblin_engine::client::ReplyMode;
use goblin_engine::protocol::{ErrorText, Reply};
use goblin_engine::{Config, ConnInfo, Engine, Flow, Session};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// An error from [`Store`].
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
    /// The data directory could not be created or read.
    #[error("data directory: {0}")]
    Io(#[from] std::io::Error),
    /// The data in the directory could not be loaded, or this build cannot
    /// load it.
    #[error("persistence: {0}")]
    Persistence(String),
    /// A setting given to [`StoreBuilder`] was refused, with the reason
    /// the server's configuration file would give.
    #[error("configuration: {0}")]
    Config(String),
}

/// How a [`Store`] opens: in memory (the default) or on a data directory,
/// and with which settings.
///
/// A memory bound is this store's own: `max_memory` limits what its keys,
/// sessions and scripts hold (its `used_memory`), not the process's
/// memory, so two stores in one process never evict for each other. Over
/// the bound, keys go as `eviction_policy` says (Redis's
/// `maxmemory-policy`), or writes fail with Redis's OOM error under
/// [`EvictionPolicy::NoEviction`], the default.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), goblin::Error> {
/// use goblin::{EvictionPolicy, Store};
///
/// let cache = Store::builder()
///     .max_memory(10 << 20)
///     .eviction_policy(EvictionPolicy::AllKeysLru)
///     .open()?;
/// cache.execute(["SET", "k", "v"]).await?;
/// assert!(cache.engine().used_memory() < 10 << 20);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct StoreBuilder {
    dir: Option<std::path::PathBuf>,
    settings: Vec<(String, String)>,
}

impl StoreBuilder {
    /// Keeps the data in `dir`, as [`Store::open`] does.
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.dir = Some(dir.as_ref().to_path_buf());
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

    /// Any parameter of the server's configuration file, as it would be
    /// written there (`"hz", "50"`, `"appendfsync", "always"`...); checked
    /// when the store opens.
    pub fn set(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((name.into(), value.into()));
        self
    }

    /// Opens the store: loads what the directory holds, if one was given.
    pub fn open(self) -> Result<Store, Error> {
        let config = Config::new();
        match &self.dir {
            None => {
                // The defaults are the server's, which snapshots to its
                // working directory; an in-memory store writes nothing.
                let _ = config.set_initial("save", "");
                let _ = config.set_initial("appendonly", "no");
            }
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                let dir = dir.canonicalize()?;
                let dir = dir.to_str().ok_or_else(|| {
                    Error::Io(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "the data directory's path is not UTF-8",
                    ))
                })?;
                config
                    .set_initial("dir", dir)
                    .map_err(|e| Error::Config(format!("dir: {e}")))?;
            }
        }
        for (name, value) in &self.settings {
            config
                .set_initial(name, value)
                .map_err(|e| Error::Config(format!("{name} {value}: {e}")))?;
        }
        if self.dir.is_none() {
            Ok(Store::start(Engine::new(config)))
        } else {
            Store::open_with_config(config)
        }
    }
}

pub use goblin_engine::evict::Policy as EvictionPolicy;

/// Idle sessions kept for reuse; more concurrent callers than this simply
/// open sessions of their own.
const MAX_IDLE_SESSIONS: usize = 256;

/// A reply buffer larger than this is released rather than kept in an idle
/// session.
const KEEP_REPLY_CAPACITY: usize = 64 * 1024;

/// A Goblin data store running inside the process.
///
/// `Store` is a handle (an `Arc` inside): clone it freely and share it
/// between tasks and threads; every clone is the same store. The engine
/// stops when the last handle is dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), goblin::Error> {
/// use goblin::{Reply, Store};
///
/// let store = Store::open_in_memory();
/// assert_eq!(store.execute(["SET", "greeting", "hello"]).await?, Reply::Status("OK".into()));
/// assert_eq!(store.execute(["GET", "greeting"]).await?, Reply::Bulk(b"hello".to_vec()));
/// assert_eq!(store.execute(["INCR", "hits"]).await?, Reply::Int(1));
///
/// // An error reply is an `Err`, with Redis's text.
/// let err = store.execute(["INCR", "greeting"]).await.unwrap_err();
/// assert_eq!(err.to_string(), "ERR value is not an integer or out of range");
///
/// // Its text is bytes: errors quote what they were given, as it was.
/// match store.execute([b"\xff".as_slice()]).await {
///     Err(goblin::Error::Reply(text)) => assert_eq!(
///         text.as_bytes(),
///         b"ERR unknown command '\xff', with args beginning with: "
///     ),
///     other => panic!("{other:?}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Arc<Engine>,
    idle: Mutex<Vec<Session>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("shards", &self.inner.engine.keyspace().shard_count())
            .finish_non_exhaustive()
    }
}

impl Store {
    /// A store that keeps everything in memory, with the server's default
    /// configuration (no persistence).
    pub fn open_in_memory() -> Store {
        let config = Config::new();
        // The defaults are the server's, which snapshots to its working
        // directory; an in-memory store writes nothing anywhere.
        let _ = config.set_initial("save", "");
        let _ = config.set_initial("appendonly", "no");
        Store::start(Engine::new(config))
    }

    /// A store whose data lives in `dir`, in the same files as
    /// `goblin-server --dir <dir>` keeps them and with the server's
    /// defaults: an append-only file with `appendfsync everysec` and
    /// periodic snapshots. What the directory holds is loaded before this
    /// returns; a file that cannot be read is [`Error::Persistence`],
    /// never an empty store. When the last handle is dropped the log is
    /// written to disk and, as on SHUTDOWN, a snapshot is taken.
    ///
    /// Use [`Store::open_with_config`] for other settings (`appendfsync always`,
    /// no snapshots...). Two stores, or a store and a server, must not
    /// share a directory.
    pub fn open(dir: impl AsRef<Path>) -> Result<Store, Error> {
        Store::builder().dir(dir).open()
    }

    /// A [`StoreBuilder`]: a store in memory or on a directory, with a
    /// memory bound and an eviction policy of its own, or any other
    /// setting of the server's configuration file.
    pub fn builder() -> StoreBuilder {
        StoreBuilder::default()
    }

    /// A store with the given configuration (the parameters of
    /// `goblin-server`'s configuration file, set with
    /// [`Config::set_initial`]), loading what its `dir` holds as the
    /// server does at startup: the append-only file when `appendonly` is
    /// yes and it exists, `dump.rdb` otherwise.
    pub fn open_with_config(config: Config) -> Result<Store, Error> {
        let engine = Engine::new(config);
        goblin_engine::persist::load_on_start(&engine).map_err(Error::Persistence)?;
        Ok(Store::start(engine))
    }

    fn start(engine: Arc<Engine>) -> Store {
        start_cron(&engine);
        Store {
            inner: Arc::new(Inner {
                engine,
                idle: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The engine behind the store, for what the command interface does not
    /// offer.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.inner.engine
    }

    /// Runs one command, as a client that connects, sends it and leaves,
    /// and returns its reply decoded from RESP3.
    ///
    /// `args` is the command name and its arguments, anything that gives
    /// bytes: `["SET", "k", "v"]`, `vec![b"GET".to_vec(), key]`... An error
    /// reply is `Err(Error::Reply(text))`; errors inside an array (EXEC's
    /// replies) stay `Reply::Error` elements. A command that writes several
    /// replies (SUBSCRIBE to several channels) returns them as one
    /// `Reply::Array`.
    ///
    /// The semantics are the server's: the same dispatcher, shard locks and
    /// atomicity. Since nothing carries over between calls, a transaction
    /// (MULTI ... EXEC) or SELECT has no effect on later calls.
    ///
    /// A blocking command (BLPOP...) waits asynchronously for data or for
    /// its timeout; it needs a tokio runtime with the time driver enabled.
    pub async fn execute<I, A>(&self, args: I) -> Result<Reply, Error>
    where
        I: IntoIterator<Item = A>,
        A: AsRef<[u8]>,
    {
        let args: Vec<A> = args.into_iter().collect();
        self.call(&args, decode)
            .await
            .and_then(std::convert::identity)
    }

    /// Runs one command and hands the raw RESP3 reply bytes to `read`.
    pub(crate) async fn call<A: AsRef<[u8]>, R>(
        &self,
        args: &[A],
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        let mut session = self.checkout();
        let flow = with_argv(args, |argv| session.execute(argv));
        if flow == Flow::Block {
            wait_blocked(&mut session).await;
        }
        // No reply before its writes reached the append-only file, as the
        // server does: on disk under appendfsync always, handed to the
        // kernel otherwise.
        let logged = session.state.aof_offset;
        let aof = &self.inner.engine.persist().aof;
        if logged > aof.synced() {
            if aof.policy() == goblin_engine::persist::aof::Fsync::Always {
                aof.wait_synced(logged).await;
            } else {
                aof.write_through(logged);
            }
        }
        if session.out.buf.is_empty() {
            return Err(Error::NoReply);
        }
        let result = read(&session.out.buf);
        self.checkin(session);
        Ok(result)
    }

    fn checkout(&self) -> Session {
        if let Some(s) = self.inner.idle.lock().pop() {
            return s;
        }
        let mut s = self.inner.engine.session(ConnInfo::embedded());
        // The process itself is the client: `requirepass` guards the
        // network, not the application that owns the store.
        s.state.authenticated = true;
        s.state.resp = 3;
        s.state.info.resp.store(3, Ordering::Relaxed);
        s.out.set_resp(3);
        s
    }

    fn checkin(&self, mut s: Session) {
        if !is_fresh(&s) {
            return;
        }
        s.out.buf.clear();
        if s.out.buf.capacity() > KEEP_REPLY_CAPACITY {
            s.out.buf = Vec::new();
        }
        let mut idle = self.inner.idle.lock();
        if idle.len() < MAX_IDLE_SESSIONS {
            idle.push(s);
            return;
        }
        drop(idle);
        // Dropped outside the pool's lock: a session unregisters on drop.
        drop(s);
    }
}

impl Drop for Inner {
    /// The last handle is gone: what SHUTDOWN does without arguments (the
    /// log to disk, a snapshot when save rules exist). Nothing is done for
    /// an in-memory store.
    fn drop(&mut self) {
        // Idle sessions hold the engine too; they go first.
        self.idle.get_mut().clear();
        if let Err(e) = goblin_engine::persist::prepare_shutdown(
            &self.engine,
            goblin_engine::persist::ShutdownFlags::default(),
        ) {
            goblin_engine::log::warning(&format!("closing the store: {e}"));
        }
    }
}

/// Whether a session is in the state of a freshly opened one, so that the
/// next call cannot see anything of the last.
fn is_fresh(s: &Session) -> bool {
    let st = &s.state;
    st.db == 0
        && st.resp == 3
        && st.authenticated
        && st.reply_mode == ReplyMode::On
        && !st.close_after_reply
        && st.multi.is_none()
        && st.watching.is_none()
        && st.blocked.is_none()
        && !st.subscribed()
        && st.ready_keys.is_empty()
        && !st.info.is_killed()
        && st.info.name.lock().is_none()
        && st.info.lib.lock().is_none()
        && !st.info.no_touch.load(std::sync::atomic::Ordering::Relaxed)
        && st.info.tracking.load(std::sync::atomic::Ordering::Relaxed) == 0
}

/// Waits while the session is blocked (see goblin_engine::blocking), until
/// it is served or unblocked, or its deadline passes; then its reply is in
/// the session's output.
async fn wait_blocked(session: &mut Session) {
    let Some(entry) = session.blocked().cloned() else {
        return;
    };
    // A deadline too far to represent is as good as none.
    let deadline = entry
        .time_left()
        .and_then(|left| tokio::time::Instant::now().checked_add(left));
    tokio::select! {
        _ = entry.resolved() => {}
        _ = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        } => {}
    }
    session.finish_block();
}

/// Decodes the reply (or replies) of one call.
fn decode(buf: &[u8]) -> Result<Reply, Error> {
    let mut replies = Reply::decode_all(buf)
        .map_err(|e| Error::Reply(format!("ERR undecodable reply ({e:?})").into()))?;
    let reply = if replies.len() == 1 {
        replies.pop().expect("one reply")
    } else {
        Reply::Array(replies)
    };
    match reply {
        Reply::Error(text) => Err(Error::Reply(text)),
        other => Ok(other),
    }
}

/// Calls `f` with the arguments as byte slices, on the stack when there are
/// few (the common case), so a call costs no allocation here.
fn with_argv<A: AsRef<[u8]>, R>(args: &[A], f: impl FnOnce(&[&[u8]]) -> R) -> R {
    const STACK: usize = 16;
    if args.len() <= STACK {
        let mut argv: [&[u8]; STACK] = [&[]; STACK];
        for (slot, a) in argv.iter_mut().zip(args) {
            *slot = a.as_ref();
        }
        f(&argv[..args.len()])
    } else {
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_ref()).collect();
        f(&argv)
    }
}

/// The engine's periodic work (active expiry, statistics), `hz` times a
/// second, on a thread of its own as in the server. It holds the engine
/// weakly and ends once the last `Store` handle is gone.
fn start_cron(engine: &Arc<Engine>) {
    let weak = Arc::downgrade(engine);
    std::thread::Builder::new()
        .name("goblin-cron".into())
        .spawn(move || loop {
            let Some(engine) = weak.upgrade() else { return };
            let hz = engine.config().hz.load(Ordering::Relaxed).clamp(1, 500) as u64;
            engine.cron();
            drop(engine);
            std::thread::sleep(std::time::Duration::from_millis(1000 / hz));
        })
        .expect("spawn the store's maintenance thread");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>(_: &T) {}

    #[test]
    fn store_and_its_futures_can_move_between_threads() {
        let store = Store::open_in_memory();
        assert_send_sync(&store);
        let fut = store.execute(["PING"]);
        fn assert_send<T: Send>(_: &T) {}
        assert_send(&fut);
    }
}
