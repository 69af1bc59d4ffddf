//! `Store`: a Goblin engine inside the process.
//!
//! A command runs through `goblin_engine::Session::execute`, the path
//! every network command takes: the dispatcher looks it up, checks its
//! arity, locks the shards of its keys in order, runs the handler and
//! serves the clients it made ready. The reply the session writes (RESP3)
//! is decoded into a [`Reply`]. Nothing is parsed or answered differently
//! from the server.
//!
//! # One call, one client
//!
//! Each [`Store::execute`] call behaves as a client that connects, sends
//! one command and leaves: nothing carries over from one call to the next
//! (a [`Session`] is the client that stays). Opening an engine session per
//! call costs an allocation of the client's state and, on the way out, a
//! look-up in the engine's client registry under its lock; so the store
//! keeps idle sessions in a pool and hands each call one of them. A
//! session goes back to the pool only when the call left it exactly as a
//! fresh one (database 0, RESP3, no transaction, no WATCH, no
//! subscription, replies on, no name); a call that changed any of that
//! (SELECT, MULTI, WATCH, HELLO 2, CLIENT SETNAME...) drops its session,
//! which is what a disconnect does. The benchmark (`benches/embedded.rs`)
//! measures both ways.
//!
//! # Pub/Sub
//!
//! PUBLISH works as over the network and reaches every subscriber of the
//! engine (network clients and sessions). A SUBSCRIBE through `execute` is
//! a client that subscribes and leaves: the call returns the
//! confirmations and its session, being subscribed, is dropped, which
//! leaves the channels again. A [`Session`] stays subscribed and streams
//! the messages.
//!
//! # Blocking commands
//!
//! BLPOP and the other blocking commands wait asynchronously (the calling
//! task yields, the thread is free) until another caller or connection
//! serves them, or their timeout passes, and then return the reply a
//! network client would get. Dropping the future while it waits gives the
//! wait up, as a disconnect does.
//!
//! The store's clients (its calls and its sessions) are the application
//! itself, which the engine counts as internal clients, as Redis counts
//! its scripts and modules: CLIENT PAUSE does not hold them back (should
//! it, the call would wait as a connection does), and CLIENT LIST and
//! CLIENT KILL do not show them.
//!
//! # Files, threads and closing
//!
//! A store on a directory writes its append-only file before a write's
//! reply, as the server does. Under `appendfsync always` the log's own
//! thread syncs it (the call waits asynchronously); otherwise the write
//! call is made on tokio's blocking pool (`spawn_blocking`), not on the
//! async worker: it waits for the file's lock while the log is synced or
//! rewritten. The blocking pool was chosen over a thread of the store's
//! own because its threads are already there and reused, and a write that
//! finds the log already written by another caller costs nothing.
//!
//! [`Store::close`] takes the final snapshot (as SHUTDOWN does) on the
//! blocking pool and returns its errors. A store dropped without `close`
//! still saves, and reports a failure through the `log` facade: inline on
//! a thread without a runtime or on a current-thread runtime (which has no
//! other thread to give the save to without the risk of the runtime ending
//! first), and inside `block_in_place` on a multi-thread runtime, so that
//! the worker's other tasks move to another thread meanwhile.

use crate::config::StoreConfig;
use crate::error::PersistenceError;
// Also the name the cache's embedded driver knows it by.
pub(crate) use crate::error::Error;
use crate::session::Session;
use goblin_engine::client::ReplyMode;

use goblin_engine::protocol::Reply;
use goblin_engine::{Config, ConnInfo, Engine, Flow, Session as EngineSession};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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
/// stops when the last handle (or [`Session`]) is dropped.
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
    idle: Mutex<Vec<EngineSession>>,
    /// `close` saved the data; dropping the last handle has nothing left
    /// to do.
    closed: AtomicBool,
    /// The data directory's lock, held until the last handle has saved.
    lock: Mutex<Option<DirLock>>,
}

/// An exclusive lock on a store's data directory (its `LOCK` file), as
/// embedded databases take one (RocksDB's `LOCK`, sled's and redb's
/// locked files): two stores writing one directory would each replace the
/// other's files. An advisory lock (flock(2) on Unix) that the system
/// releases with the process, so a crash leaves nothing to clean up.
struct DirLock {
    _file: std::fs::File,
}

impl DirLock {
    /// The file's name in the data directory.
    const NAME: &'static str = "LOCK";

    fn acquire(dir: &Path) -> Result<DirLock, Error> {
        let path = dir.join(Self::NAME);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => Ok(DirLock { _file: file }),
            Err(fs4::TryLockError::WouldBlock) => Err(Error::DirectoryInUse(dir.to_path_buf())),
            Err(fs4::TryLockError::Error(e)) => Err(Error::Io(e)),
        }
    }
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
        StoreConfig::new()
            .open()
            .expect("the default configuration is valid")
    }

    /// A store whose data lives in `dir`, in the same files as
    /// `goblin-server --dir <dir>` keeps them and with the server's
    /// defaults: an append-only file with `appendfsync everysec` and
    /// periodic snapshots. What the directory holds is loaded before this
    /// returns; a file that cannot be read is [`Error::Persistence`],
    /// never an empty store. [`Store::close`] (or dropping the last
    /// handle) writes the log to disk and, as SHUTDOWN does, takes a
    /// snapshot.
    ///
    /// Use [`StoreConfig`] for other settings (`appendfsync always`, no
    /// snapshots...). The directory is locked while the store is open: a
    /// second store on it fails with [`Error::DirectoryInUse`]. A server
    /// does not take that lock; do not run one on a store's directory.
    pub fn open(dir: impl AsRef<Path>) -> Result<Store, Error> {
        StoreConfig::new().dir(dir).open()
    }

    /// A [`StoreConfig`]: a store in memory or on a directory, with a
    /// memory bound and an eviction policy of its own, or any other
    /// setting of the server's configuration file.
    pub fn builder() -> StoreConfig {
        StoreConfig::new()
    }

    /// A store with the given configuration (the parameters of
    /// `goblin-server`'s configuration file, set with
    /// [`Config::set_initial`]), loading what its `dir` holds as the
    /// server does at startup: the append-only file when `appendonly` is
    /// yes and it exists, `dump.rdb` otherwise.
    ///
    /// The directory is locked while the store is open (a `LOCK` file in
    /// it): a second store on it fails with [`Error::DirectoryInUse`]
    /// until the first is closed or dropped.
    pub fn open_with_config(config: Config) -> Result<Store, Error> {
        let dir = std::path::PathBuf::from(config.dir());
        std::fs::create_dir_all(&dir)?;
        let lock = DirLock::acquire(&dir)?;
        let engine = Engine::new(config);
        goblin_engine::persist::load_on_start(&engine)
            .map_err(|text| Error::Persistence(PersistenceError::Load(text)))?;
        Ok(Store::start_locked(engine, Some(lock)))
    }

    pub(crate) fn start(engine: Arc<Engine>) -> Store {
        Store::start_locked(engine, None)
    }

    fn start_locked(engine: Arc<Engine>, lock: Option<DirLock>) -> Store {
        forward_engine_log();
        start_cron(&engine);
        Store {
            inner: Arc::new(Inner {
                engine,
                idle: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
                lock: Mutex::new(lock),
            }),
        }
    }

    /// The engine behind the store, for what the command interface does not
    /// offer.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.inner.engine
    }

    /// A client of its own: a [`Session`] keeps its selected database,
    /// its transaction (MULTI, WATCH), its protocol (HELLO), its name and
    /// its subscriptions from one call to the next, as a connection to
    /// the server does. It starts as a fresh connection after `HELLO 3`:
    /// database 0, RESP3, authenticated.
    pub fn session(&self) -> Session {
        Session::new(self.clone(), self.checkout())
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
    /// (MULTI ... EXEC) or SELECT has no effect on later calls; use a
    /// [`Session`] for those.
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
        run(&mut session, args).await?;
        if session.out.buf.is_empty() {
            return Err(Error::NoReply);
        }
        let result = read(&session.out.buf);
        self.checkin(session);
        Ok(result)
    }

    /// Runs the commands of a pipeline on one client, in order, and hands
    /// the bytes of all their replies to `read`.
    #[cfg(feature = "redis-compat")]
    pub(crate) async fn call_many<R>(
        &self,
        commands: &[Vec<Vec<u8>>],
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        let mut session = self.checkout();
        for args in commands {
            run(&mut session, args).await?;
        }
        let result = read(&session.out.buf);
        self.checkin(session);
        Ok(result)
    }

    pub(crate) fn checkout(&self) -> EngineSession {
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

    pub(crate) fn checkin(&self, mut s: EngineSession) {
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

    /// Closes this handle, and saves what the store holds as SHUTDOWN
    /// does: the append-only file is written and synced, and a snapshot
    /// is taken when the store has snapshot points. The work runs on
    /// tokio's blocking pool (inline without a tokio runtime); its
    /// failure is returned, where dropping the store could only log it.
    ///
    /// Other handles and sessions of the store keep working; what they
    /// write afterwards is saved again when the last of them is dropped.
    /// An in-memory store has nothing to save.
    pub async fn close(self) -> Result<(), Error> {
        let closing = self.release();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => rt
                .spawn_blocking(move || closing.save())
                .await
                .map_err(|e| {
                    Error::Io(std::io::Error::other(format!("the final save failed: {e}")))
                })?,
            Err(_) => closing.save(),
        }
        .map_err(Error::Persistence)
    }

    /// Drops this handle for `close`: when it is the last one, the drop
    /// saves nothing, since `close` is about to, and the directory stays
    /// locked until it has.
    pub(crate) fn release(self) -> Closing {
        let engine = self.inner.engine.clone();
        let last = Arc::strong_count(&self.inner) == 1;
        let lock = if last {
            self.inner.closed.store(true, Ordering::Relaxed);
            self.inner.lock.lock().take()
        } else {
            None
        };
        Closing {
            engine,
            last,
            _lock: lock,
        }
    }
}

/// A handle being closed: what `close` saves, and for the last handle the
/// directory's lock, released once that is done.
pub(crate) struct Closing {
    engine: Arc<Engine>,
    last: bool,
    _lock: Option<DirLock>,
}

impl Closing {
    /// The last handle shuts the store down as SHUTDOWN does; another
    /// saves what the store holds now and leaves the log running for the
    /// handles still open.
    pub(crate) fn save(self) -> Result<(), PersistenceError> {
        if self.last {
            shut_down(&self.engine)
        } else {
            save_now(&self.engine)
        }
    }
}

impl Drop for Inner {
    /// The last handle is gone: what SHUTDOWN does without arguments (the
    /// log to disk, a snapshot when save rules exist), unless `close` did
    /// it. Nothing is done for an in-memory store.
    fn drop(&mut self) {
        // Idle sessions hold the engine too; they go first.
        self.idle.get_mut().clear();
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let engine = &self.engine;
        let save = || {
            if let Err(e) = shut_down(engine) {
                log::error!("the store was dropped without close() and could not save: {e}");
            }
        };
        match tokio::runtime::Handle::try_current().map(|rt| rt.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(save),
            _ => save(),
        }
    }
}

/// What `close` saves while other handles stay open: the append-only file
/// written and synced, and a snapshot when save rules exist.
fn save_now(engine: &Arc<Engine>) -> Result<(), PersistenceError> {
    let aof = &engine.persist().aof;
    if aof.is_on() {
        aof.flush_now().map_err(PersistenceError::AppendOnlyFile)?;
    }
    if !engine.config().save().trim().is_empty() {
        let mut locks = engine.keyspace().lock_all();
        goblin_engine::persist::save_locked(engine, &mut locks)
            .map_err(PersistenceError::Snapshot)?;
    }
    Ok(())
}

/// SHUTDOWN's saving steps, with their errors kept: the append-only file
/// synced, a background save or rewrite ended, the log closed, and the
/// final snapshot when save rules exist. The engine's own
/// `prepare_shutdown` reports a failure only as "check the logs".
pub(crate) fn shut_down(engine: &Arc<Engine>) -> Result<(), PersistenceError> {
    use goblin_engine::persist;
    let aof = &engine.persist().aof;
    let mut failure = None;
    if aof.is_on() {
        if let Err(e) = aof.flush_now() {
            failure = Some(PersistenceError::AppendOnlyFile(e));
        }
    }
    let snapshot = !engine.config().save().trim().is_empty();
    // NOSAVE: only the steps around the snapshot, which is taken below
    // where its error can be kept.
    let _ = persist::prepare_shutdown(
        engine,
        persist::ShutdownFlags {
            save: Some(false),
            ..Default::default()
        },
    );
    if snapshot {
        let mut locks = engine.keyspace().lock_all();
        persist::save_locked(engine, &mut locks).map_err(PersistenceError::Snapshot)?;
    }
    failure.map_or(Ok(()), Err)
}

/// Runs one command on `session` as a connection does: it waits while
/// the command is blocked (BLPOP...) or held back by CLIENT PAUSE, and
/// returns once its writes reached the append-only file. The reply is
/// then in the session's output. When they cannot reach the file (the
/// disk is full or failing) the reply is dropped, since it may say OK for
/// a write the file does not hold, and the error is returned instead: the
/// write is not acknowledged, as a connection to the server is closed.
pub(crate) async fn run<A: AsRef<[u8]>>(
    session: &mut EngineSession,
    args: &[A],
) -> Result<Flow, Error> {
    let flow = loop {
        match with_argv(args, |argv| session.execute(argv)) {
            Flow::Block => {
                wait_blocked(session).await;
                break Flow::Continue;
            }
            Flow::Paused => wait_unpaused(&session.engine).await,
            Flow::Yield => tokio::task::yield_now().await,
            Flow::Handoff => {
                // WAIT, WAITAOF, SHUTDOWN: the reply waits, as the engine
                // resolves it. A replica's feed (PSYNC) needs a
                // connection of its own: no reply here.
                if let Some(Ok(wait)) = session.state.handoff.take().map(|h| h.into_wait()) {
                    let engine = session.engine.clone();
                    engine.resolve_wait(&wait).await.write(&mut session.out);
                }
                break Flow::Continue;
            }
            other => break other,
        }
    };
    // No reply before its writes reached the append-only file, as the
    // server does (written here rather than by the writer thread).
    let logged = session.state.aof_offset;
    if let Err(e) = session.engine.await_written(logged, true).await {
        session.out.buf.clear();
        return Err(Error::Persistence(PersistenceError::AppendOnlyFile(
            e.io_error(),
        )));
    }
    Ok(flow)
}

/// Whether a session is in the state of a freshly opened one, so that the
/// next call cannot see anything of the last.
fn is_fresh(s: &EngineSession) -> bool {
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
        && !st.info.no_touch.load(Ordering::Relaxed)
        && st.info.tracking.load(Ordering::Relaxed) == 0
}

/// Waits while the session is blocked (see goblin_engine::blocking), until
/// it is served or unblocked, or its deadline passes; then its reply is in
/// the session's output.
async fn wait_blocked(session: &mut EngineSession) {
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

/// Waits while CLIENT PAUSE holds commands back, counted as the server's
/// waiting connections are (INFO's paused clients).
async fn wait_unpaused(engine: &Engine) {
    struct Waiting<'a>(&'a Engine);
    impl Drop for Waiting<'_> {
        fn drop(&mut self) {
            self.0.pause().waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }
    engine.pause().waiting.fetch_add(1, Ordering::Relaxed);
    let _waiting = Waiting(engine);
    engine.pause().wait().await;
}

/// Decodes the reply (or replies) of one call.
pub(crate) fn decode(buf: &[u8]) -> Result<Reply, Error> {
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

/// The engine's log lines (loading, saving, the append-only file) go
/// through the `log` facade, to whatever logger the application installed,
/// rather than to standard error. The engine takes one sink per process:
/// a host that installed its own first (goblin-server) keeps it.
fn forward_engine_log() {
    use goblin_engine::log::Level;
    goblin_engine::log::set_sink(|level, msg| {
        let level = match level {
            Level::Debug | Level::Verbose => log::Level::Debug,
            Level::Notice => log::Level::Info,
            Level::Warning => log::Level::Warn,
        };
        log::log!(target: "goblin::engine", level, "{msg}");
    });
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
        let mut session = store.session();
        let fut = session.execute(["PING"]);
        assert_send(&fut);
    }
}
