//! # goblin-server
//!
//! The network face of Goblin: configuration from a file and the command
//! line (as `redis-server` takes them), the TCP listener, one task per
//! connection, and the periodic maintenance thread. Everything a command
//! does happens in `goblin-engine`; this crate moves bytes.
//!
//! - [`config`]: parsing `goblin-server [config-file] [--directive value ...]`.
//! - [`connection`]: the read, parse, execute, write loop of one client,
//!   over a [`stream::Stream`] (a plain or a TLS socket).
//! - [`tls`]: the TLS context (tls-* parameters, rustls).
//! - [`Server`]: the bound listeners (`port`, and `tls-port` for TLS
//!   clients) with their engine, started by `main` and by the integration
//!   tests.

pub mod config;
pub mod connection;
pub mod crash;
pub mod limits;
pub mod log;
pub mod master_link;
pub mod stream;
pub mod tls;

use goblin_engine::{Engine, ShutdownMode};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::TcpListener;

use crate::stream::Stream;
use crate::tls::{ClientAuth, TlsContext};

/// A listening server.
pub struct Server {
    pub engine: Arc<Engine>,
    listeners: Vec<std::net::TcpListener>,
    tls_listeners: Vec<std::net::TcpListener>,
    tls: Arc<TlsState>,
    /// The unix socket (`unixsocket`), if one is configured.
    unix: Option<std::os::unix::net::UnixListener>,
}

/// The TLS context new TLS connections use (none until one loads), and
/// the log of failed handshakes.
#[derive(Default)]
pub struct TlsState {
    context: std::sync::RwLock<Option<Arc<TlsContext>>>,
    failures: std::sync::Mutex<RateLimitedLog>,
    /// Connections in their handshake: not clients yet, so maxclients
    /// bounds them apart.
    handshaking: std::sync::atomic::AtomicUsize,
}

impl TlsState {
    fn current(&self) -> Option<Arc<TlsContext>> {
        self.context
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Redis's tlsConfigure: loads the context the configuration
    /// describes, or logs why not and keeps the one in use.
    fn configure(&self, engine: &Engine) -> bool {
        match TlsContext::load(engine.config()) {
            Ok(c) => {
                *self.context.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(c));
                true
            }
            Err(e) => {
                log::warning(&e);
                false
            }
        }
    }
}

/// A warning that may repeat as fast as clients connect (a failed TLS
/// handshake, an accept error): logged once a second at most, with the
/// count of those left out.
#[derive(Default)]
struct RateLimitedLog {
    last: Option<std::time::Instant>,
    unlogged: u64,
}

impl RateLimitedLog {
    fn warn(&mut self, text: &str) {
        let now = std::time::Instant::now();
        if self
            .last
            .is_none_or(|t| now - t >= std::time::Duration::from_secs(1))
        {
            let more = match self.unlogged {
                0 => String::new(),
                n => format!(" ({n} more since the last)"),
            };
            log::warning(&format!("{text}{more}"));
            self.last = Some(now);
            self.unlogged = 0;
        } else {
            self.unlogged += 1;
        }
    }
}

/// Redis's "-" prefix marks an optional address; "*" is every IPv4
/// address.
fn addresses(bind: &str, port: u16) -> Vec<(bool, String)> {
    bind.split_whitespace()
        .map(|host| {
            let (optional, host) = match host.strip_prefix('-') {
                Some(h) => (true, h),
                None => (false, host),
            };
            let host = if host == "*" { "0.0.0.0" } else { host };
            let addr = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            (optional, addr)
        })
        .collect()
}

/// A listening socket on `addr` (a name is resolved, and each of its
/// addresses tried in turn, as std's TcpListener::bind does) with a queue
/// of `backlog` connections, SO_REUSEADDR, and IPV6_V6ONLY for IPv6 (Redis's
/// anetTcpServer).
fn listen_on(addr: &str, backlog: i32) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, "no address to listen on");
    for a in std::net::ToSocketAddrs::to_socket_addrs(addr)? {
        let socket = Socket::new(Domain::for_address(a), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        if a.is_ipv6() {
            socket.set_only_v6(true)?;
        }
        match socket.bind(&a.into()).and_then(|()| socket.listen(backlog)) {
            Ok(()) => return Ok(socket.into()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The unix socket at `path` (a file left there is replaced), with a
/// queue of `backlog` connections and the permissions `perm` (octal;
/// 0 leaves them to the umask), as Redis's anetUnixServer.
fn listen_unix(
    path: &str,
    perm: u32,
    backlog: i32,
) -> io::Result<std::os::unix::net::UnixListener> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let _ = std::fs::remove_file(path);
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    socket.bind(&SockAddr::unix(path)?)?;
    socket.listen(backlog)?;
    if perm != 0 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))?;
    }
    let listener: std::os::unix::net::UnixListener = socket.into();
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Removes the unix socket file at shutdown (Redis's finishShutdown).
pub fn remove_unix_socket(engine: &Engine) {
    let path = engine.config().unixsocket();
    if path.is_empty() {
        return;
    }
    log::notice("Removing the unix socket file.");
    if let Err(e) = std::fs::remove_file(&path) {
        log::warning(&format!("Error removing the unix socket file: {e}"));
    }
}

/// Warns, as Redis's checkTcpBacklogSettings does, when the kernel caps
/// the listen queue below tcp-backlog.
fn check_backlog(backlog: i64) {
    let Ok(text) = std::fs::read_to_string("/proc/sys/net/core/somaxconn") else {
        return;
    };
    if let Ok(somaxconn) = text.trim().parse::<i64>() {
        if somaxconn < backlog {
            log::warning(&format!(
                "WARNING: The TCP backlog setting of {backlog} cannot be enforced because \
                 /proc/sys/net/core/somaxconn is set to the lower value of {somaxconn}."
            ));
        }
    }
}

/// Binds every address of `bind` on `port`; an optional address that
/// fails is left out with a warning, any other failure fails the whole.
/// `kind`: "TCP" or "TLS", for the report.
fn listen(
    bind: &str,
    port: u16,
    backlog: i32,
    kind: &str,
) -> io::Result<Vec<std::net::TcpListener>> {
    let mut listeners = Vec::new();
    for (optional, addr) in addresses(bind, port) {
        match listen_on(&addr, backlog) {
            Ok(l) => {
                l.set_nonblocking(true)?;
                listeners.push(l);
            }
            Err(e) if optional => log::warning(&format!("Could not bind {addr}: {e}")),
            Err(e) => {
                // Redis's two lines; the second is what tools (the Tcl
                // suite among them) look for to retry on another port.
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "Warning: Could not create server TCP listening socket {addr}: bind: {e}\n\
                         Failed listening on port {port} ({kind}), aborting."
                    ),
                ));
            }
        }
    }
    Ok(listeners)
}

impl Server {
    /// Binds every address of `bind` on `port`, and on `tls-port` for TLS
    /// clients when it is set (loading the TLS context first, as Redis
    /// does). `port 0` with a tls-port listens for TLS clients only;
    /// without one, it picks a free port.
    pub async fn bind(engine: Arc<Engine>) -> io::Result<Server> {
        let config = engine.config();
        let port = config.port() as u16;
        let tls_port = config.tls_port() as u16;
        let bind = config.bind();
        let backlog = config.tcp_backlog();
        check_backlog(backlog);
        let backlog = backlog.clamp(0, i32::MAX as i64) as i32;
        let tls = Arc::new(TlsState::default());
        if (tls_port != 0 || config.tls_replication() || config.tls_cluster())
            && !tls.configure(&engine)
        {
            return Err(io::Error::other(
                "Failed to configure TLS. Check logs for more info.",
            ));
        }
        let listeners = if port != 0 || tls_port == 0 {
            listen(&bind, port, backlog, "TCP")?
        } else {
            Vec::new()
        };
        let tls_listeners = if tls_port != 0 {
            listen(&bind, tls_port, backlog, "TLS")?
        } else {
            Vec::new()
        };
        let Some(first) = listeners.first().or(tls_listeners.first()) else {
            return Err(io::Error::new(
                io::ErrorKind::AddrNotAvailable,
                "Configured to not listen anywhere, exiting.",
            ));
        };
        // INFO's tcp_port: the plain port, else the TLS one (as Redis).
        engine.set_tcp_port(first.local_addr()?.port());
        let path = config.unixsocket();
        let unix = if path.is_empty() {
            None
        } else {
            let perm = u32::from_str_radix(&config.unixsocketperm(), 8).unwrap_or(0);
            Some(listen_unix(&path, perm, backlog).map_err(|e| {
                io::Error::new(e.kind(), format!("Failed opening Unix socket: {e}"))
            })?)
        };
        Ok(Server {
            engine,
            listeners,
            tls_listeners,
            tls,
            unix,
        })
    }

    /// The first address listened on: a plain one when there is one.
    pub fn local_addr(&self) -> SocketAddr {
        self.listeners
            .first()
            .or(self.tls_listeners.first())
            .and_then(|l| l.local_addr().ok())
            .expect("bound listener")
    }

    /// The unix socket's path, when the server listens on one.
    pub fn unix_path(&self) -> Option<String> {
        self.unix
            .as_ref()
            .map(|_| self.engine.config().unixsocket())
    }

    /// The first address listened on for TLS clients, if any.
    pub fn tls_local_addr(&self) -> Option<SocketAddr> {
        self.tls_listeners.first().and_then(|l| l.local_addr().ok())
    }

    /// Accepts clients until SHUTDOWN; returns the requested shutdown mode.
    pub async fn run(self) -> ShutdownMode {
        let engine = self.engine.clone();
        start_cron(engine.clone());
        master_link::start(engine.clone());
        let mut shutdown = engine.shutdown_requests();
        let port_of = |l: &[std::net::TcpListener]| {
            l.first()
                .and_then(|l| l.local_addr().ok())
                .map_or(0, |a| a.port())
        };
        let listeners = Listeners {
            bind: engine.config().bind(),
            plain: Acceptors {
                port: port_of(&self.listeners),
                tasks: spawn_acceptors(&engine, self.listeners, None),
            },
            tls: Acceptors {
                port: port_of(&self.tls_listeners),
                tasks: spawn_acceptors(&engine, self.tls_listeners, Some(self.tls.clone())),
            },
        };
        // The unix socket's accept loop lives as long as the server.
        if let Some(unix) = self.unix {
            spawn_unix_acceptor(&engine, unix);
        }
        let listeners = Arc::new(std::sync::Mutex::new(listeners));
        install_rebind(&engine, listeners.clone(), self.tls.clone());
        install_tls_apply(&engine, listeners, self.tls);
        loop {
            if let Some(mode) = *shutdown.borrow_and_update() {
                return mode;
            }
            if shutdown.changed().await.is_err() {
                return ShutdownMode::Default;
            }
        }
    }
}

/// The accept loops running, and the addresses they listen on: the plain
/// ones and the TLS ones, on one bind list.
struct Listeners {
    bind: String,
    plain: Acceptors,
    tls: Acceptors,
}

/// The accept loops of one port (0: none).
struct Acceptors {
    port: u16,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

fn spawn_acceptors(
    engine: &Arc<Engine>,
    listeners: Vec<std::net::TcpListener>,
    tls: Option<Arc<TlsState>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    listeners
        .into_iter()
        .filter_map(|l| TcpListener::from_std(l).ok())
        .map(|listener| {
            let engine = engine.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                // Accept errors repeat while their cause lasts (out of file
                // descriptors): one log line a second at most.
                let mut errors = RateLimitedLog::default();
                loop {
                    match listener.accept().await {
                        Ok((stream, peer)) => {
                            let engine = engine.clone();
                            match &tls {
                                None => {
                                    let stream = Stream::Plain(stream);
                                    if let Some(conn) =
                                        connection::serve(engine, stream, Some(peer))
                                    {
                                        tokio::spawn(conn);
                                    }
                                }
                                Some(tls) => {
                                    let tls = tls.clone();
                                    // The handshake runs in a task of its own;
                                    // the connection then gets the task that
                                    // holds it alone (see connection::serve).
                                    tokio::spawn(async move {
                                        if let Some(stream) =
                                            tls_accept(&engine, &tls, stream, peer).await
                                        {
                                            if let Some(conn) =
                                                connection::serve(engine, stream, Some(peer))
                                            {
                                                tokio::spawn(conn);
                                            }
                                        }
                                    });
                                }
                            };
                        }
                        Err(e) => {
                            errors.warn(&format!("Accepting client connection: {e}"));
                            // Out of file descriptors and similar: back off
                            // briefly rather than spin.
                            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        }
                    }
                }
            })
        })
        .collect()
}

/// Accepts the clients of the unix socket.
fn spawn_unix_acceptor(engine: &Arc<Engine>, listener: std::os::unix::net::UnixListener) {
    let Ok(listener) = tokio::net::UnixListener::from_std(listener) else {
        log::warning("The unix socket could not be registered with the runtime");
        return;
    };
    let engine = engine.clone();
    tokio::spawn(async move {
        let mut errors = RateLimitedLog::default();
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    if let Some(conn) =
                        connection::serve(engine.clone(), Stream::Unix(stream), None)
                    {
                        tokio::spawn(conn);
                    }
                }
                Err(e) => {
                    errors.warn(&format!("Accepting client connection: {e}"));
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        }
    });
}

/// The TLS handshake of a client of the TLS port, with the context in use
/// and the client authentication tls-auth-clients asks for now. A client
/// whose first byte cannot start a TLS record (a plain-text client) is
/// closed without a reply, as OpenSSL answers it nothing. A failed
/// handshake is logged (rate-limited) and closes the connection; under
/// `timeout` the handshake must end within it.
async fn tls_accept(
    engine: &Engine,
    tls: &TlsState,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
) -> Option<Stream> {
    const HANDSHAKE_RECORD: u8 = 0x16;
    let auth = ClientAuth::from_config(engine.config());
    let local = tcp
        .local_addr()
        .map_or_else(|_| "-".to_string(), |a| a.to_string());
    let fail = |why: &str| {
        tls.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .warn(&format!(
                "Error accepting a client connection: {why} (addr={peer} laddr={local})"
            ));
    };
    let Some(config) = tls.current().and_then(|c| c.server_config(auth)) else {
        fail("no TLS context to verify client certificates with");
        return None;
    };
    // At most maxclients handshakes at once: connections that never
    // finish theirs cannot pile up without bound. (An established client
    // over maxclients is refused after its handshake, with Redis's error.)
    struct Handshaking<'a>(&'a std::sync::atomic::AtomicUsize);
    impl Drop for Handshaking<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let _handshaking = Handshaking(&tls.handshaking);
    if tls.handshaking.fetch_add(1, Ordering::Relaxed) as i64 >= engine.config().maxclients() {
        engine
            .stats()
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        fail("too many TLS handshakes in progress (maxclients)");
        return None;
    }
    let handshake = async {
        let mut first = [0u8; 1];
        match tcp.peek(&mut first).await {
            Ok(1) if first[0] == HANDSHAKE_RECORD => {}
            Ok(0) => return Err("connection closed".to_string()),
            Ok(_) => return Err("not a TLS handshake (wrong version number)".to_string()),
            Err(e) => return Err(e.to_string()),
        }
        let accepted = tokio_rustls::TlsAcceptor::from(config)
            .accept(tcp)
            .await
            .map_err(|e| e.to_string())?;
        let (tcp, conn) = accepted.into_inner();
        Ok(Stream::Tls(Box::new(stream::TlsStream::new(tcp, conn))))
    };
    let timeout = engine.config().timeout();
    let result = if timeout > 0 {
        tokio::time::timeout(std::time::Duration::from_secs(timeout as u64), handshake)
            .await
            .unwrap_or_else(|_| Err("handshake timed out".to_string()))
    } else {
        handshake.await
    };
    match result {
        Ok(stream) => Some(stream),
        Err(why) => {
            fail(&why);
            None
        }
    }
}

/// Stops accept loops and waits (a little) until their sockets are closed.
/// The wait hands this worker's queue to another thread first
/// (block_in_place): a cancelled accept loop queued here must get to run.
fn stop_acceptors(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for t in &tasks {
        t.abort();
    }
    let wait = || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while tasks.iter().any(|t| !t.is_finished()) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    };
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(wait),
        _ => wait(),
    }
}

/// Whether every address of a bind list is well formed (checked before
/// the old sockets are closed).
fn valid_bind(bind: &str, port: u16) -> bool {
    addresses(bind, port)
        .iter()
        .all(|(_, addr)| addr.parse::<SocketAddr>().is_ok())
}

/// Moves one set of accept loops to (bind, port) (Redis's
/// changeListenPort and changeBindAddr for one kind of socket): port 0
/// closes them; the new sockets are opened before the old ones close when
/// only the port changes; a new bind address closes the old sockets first
/// (they may hold the same port) and reopens them when the new ones cannot
/// be had.
fn reopen(
    engine: &Arc<Engine>,
    a: &mut Acceptors,
    old_bind: &str,
    bind: &str,
    port: u16,
    tls: Option<&Arc<TlsState>>,
) -> Result<(), String> {
    let backlog = engine.config().tcp_backlog().clamp(0, i32::MAX as i64) as i32;
    let kind = if tls.is_some() { "TLS" } else { "TCP" };
    if port == 0 {
        stop_acceptors(std::mem::take(&mut a.tasks));
        a.port = 0;
        return Ok(());
    }
    let opened = if bind == old_bind {
        let fresh = listen(bind, port, backlog, kind).map_err(|e| e.to_string())?;
        stop_acceptors(std::mem::take(&mut a.tasks));
        fresh
    } else {
        if !valid_bind(bind, port) {
            return Err("invalid address".to_string());
        }
        stop_acceptors(std::mem::take(&mut a.tasks));
        match listen(bind, port, backlog, kind) {
            Ok(fresh) => fresh,
            Err(e) => {
                if a.port != 0 {
                    if let Ok(old) = listen(old_bind, a.port, backlog, kind) {
                        a.tasks = spawn_acceptors(engine, old, tls.cloned());
                    }
                }
                return Err(e.to_string());
            }
        }
    };
    a.port = opened
        .first()
        .and_then(|l| l.local_addr().ok())
        .map_or(port, |addr| addr.port());
    a.tasks = spawn_acceptors(engine, opened, tls.cloned());
    Ok(())
}

/// INFO's tcp_port: the plain port, else the TLS one.
fn report_port(engine: &Engine, l: &Listeners) {
    engine.set_tcp_port(if l.plain.port != 0 {
        l.plain.port
    } else {
        l.tls.port
    });
}

/// CONFIG SET bind / port (Redis's changeBindAddr and changeListenPort):
/// moves the plain accept loops, and the TLS ones too when the bind list
/// changes.
fn install_rebind(
    engine: &Arc<Engine>,
    listeners: Arc<std::sync::Mutex<Listeners>>,
    tls: Arc<TlsState>,
) {
    let handle = tokio::runtime::Handle::current();
    let weak = Arc::downgrade(engine);
    engine.set_rebind(Box::new(move |bind: &str, port: u16| {
        let Some(engine) = weak.upgrade() else {
            return Err("server stopped".to_string());
        };
        let _runtime = handle.enter();
        let mut l = listeners.lock().unwrap_or_else(|e| e.into_inner());
        let old_bind = l.bind.clone();
        reopen(&engine, &mut l.plain, &old_bind, bind, port, None)?;
        if bind != old_bind && l.tls.port != 0 {
            let tls_port = l.tls.port;
            if let Err(e) = reopen(&engine, &mut l.tls, &old_bind, bind, tls_port, Some(&tls)) {
                // Back to the old addresses for the plain sockets too.
                let plain_port = l.plain.port;
                let _ = reopen(&engine, &mut l.plain, bind, &old_bind, plain_port, None);
                return Err(e);
            }
        }
        l.bind = bind.to_string();
        report_port(&engine, &l);
        Ok(())
    }));
}

/// CONFIG SET of tls-* (Redis's applyTlsCfg and applyTLSPort): loads the
/// TLS context again, or moves the TLS accept loops to tls-port.
fn install_tls_apply(
    engine: &Arc<Engine>,
    listeners: Arc<std::sync::Mutex<Listeners>>,
    tls: Arc<TlsState>,
) {
    let handle = tokio::runtime::Handle::current();
    let weak = Arc::downgrade(engine);
    engine.set_tls_apply(Box::new(move |change| {
        let Some(engine) = weak.upgrade() else {
            return Err(false);
        };
        let config = engine.config();
        let port = config.tls_port() as u16;
        match change {
            goblin_engine::TlsChange::Context => {
                let enabled = port != 0 || config.tls_replication() || config.tls_cluster();
                if enabled && !tls.configure(&engine) {
                    return Err(true);
                }
                Ok(())
            }
            goblin_engine::TlsChange::Port => {
                if tls.current().is_none() && !tls.configure(&engine) {
                    return Err(true);
                }
                let _runtime = handle.enter();
                let mut l = listeners.lock().unwrap_or_else(|e| e.into_inner());
                let bind = l.bind.clone();
                if let Err(e) = reopen(&engine, &mut l.tls, &bind, &bind, port, Some(&tls)) {
                    log::warning(&e);
                    return Err(false);
                }
                report_port(&engine, &l);
                Ok(())
            }
        }
    }));
}

/// The maintenance thread: active expiry and statistics, `hz` times a
/// second (Redis's serverCron). A plain thread, so that a long expiry
/// cycle never stalls the connection tasks' runtime.
fn start_cron(engine: Arc<Engine>) {
    let weak = Arc::downgrade(&engine);
    drop(engine);
    std::thread::Builder::new()
        .name("goblin-cron".into())
        .spawn(move || loop {
            let Some(engine) = weak.upgrade() else { return };
            let hz = engine.config().hz.load(Ordering::Relaxed).clamp(1, 500) as u64;
            engine.cron();
            drop(engine);
            std::thread::sleep(std::time::Duration::from_millis(1000 / hz));
        })
        .expect("spawn cron thread");
}

/// Installs jemalloc as the engine's allocator: its statistics as the
/// memory figures, its report, its tuning keys and its purge.
pub fn install_jemalloc_stats() {
    fn read() -> goblin_engine::memory::AllocatorStats {
        use tikv_jemalloc_ctl::{epoch, stats};
        let _ = epoch::advance();
        // Freed objects parked in the threads' caches count as allocated
        // in jemalloc's figure; Redis's used_memory (zmalloc's count) does
        // not include them, and with several threads they swing it by
        // hundreds of kilobytes.
        // SAFETY: the name is a NUL-terminated mallctl name of a size_t.
        let cached: usize =
            unsafe { tikv_jemalloc_ctl::raw::read(b"stats.arenas.4096.tcache_bytes\0") }
                .unwrap_or(0);
        goblin_engine::memory::AllocatorStats {
            allocated: (stats::allocated::read().unwrap_or(0).saturating_sub(cached)) as u64,
            active: stats::active::read().unwrap_or(0) as u64,
            resident: stats::resident::read().unwrap_or(0) as u64,
            rss: 0,
            allocator: "jemalloc-5.3.0",
        }
    }
    goblin_engine::memory::set_allocator(goblin_engine::memory::Allocator {
        stats: read,
        report: jemalloc::report,
        ctl_int: jemalloc::ctl_int,
        ctl_str: jemalloc::ctl_str,
        purge: jemalloc::purge,
        thread_net: jemalloc::thread_net,
    });
}

/// jemalloc's report and tuning keys, as Redis's MEMORY MALLOC-STATS,
/// DEBUG MALLCTL / MALLCTL-STR and MEMORY PURGE reach them.
mod jemalloc {
    use std::ffi::{c_char, c_void, CStr, CString};
    use tikv_jemalloc_sys::{mallctl, malloc_stats_print};

    fn strerror(code: i32) -> String {
        // SAFETY: strerror returns a NUL-terminated static text.
        unsafe { CStr::from_ptr(libc::strerror(code)) }
            .to_string_lossy()
            .into_owned()
    }

    /// malloc_stats_print's text, whole (Redis passes no options).
    pub fn report() -> Vec<u8> {
        unsafe extern "C" fn append(out: *mut c_void, text: *const c_char) {
            // SAFETY: `out` is the Vec passed below; jemalloc hands
            // NUL-terminated pieces of its report.
            let out = unsafe { &mut *(out as *mut Vec<u8>) };
            out.extend_from_slice(unsafe { CStr::from_ptr(text) }.to_bytes());
        }
        let mut out: Vec<u8> = Vec::new();
        // SAFETY: the callback only appends to `out`, which outlives the call.
        unsafe {
            malloc_stats_print(
                Some(append),
                &mut out as *mut Vec<u8> as *mut c_void,
                std::ptr::null(),
            )
        };
        out
    }

    /// Redis's mallctl_int: the key read (and written) as a 64-bit
    /// integer, then as 32 bits, 16, 8 while jemalloc says the size is
    /// wrong; a key that is write-only is just written.
    pub fn ctl_int(name: &str, value: Option<i64>) -> Result<Option<i64>, String> {
        let Ok(cname) = CString::new(name) else {
            return Err(strerror(libc::EINVAL));
        };
        let mut old: i64 = 0;
        let mut val: i64 = value.unwrap_or(0);
        let mut sz = std::mem::size_of::<i64>();
        while sz > 0 {
            let newp = if value.is_some() {
                &mut val as *mut i64 as *mut c_void
            } else {
                std::ptr::null_mut()
            };
            let newlen = if value.is_some() { sz } else { 0 };
            let mut oldlen = sz;
            // SAFETY: old and val are 8 bytes, at least `sz`.
            let mut ret = unsafe {
                mallctl(
                    cname.as_ptr(),
                    &mut old as *mut i64 as *mut c_void,
                    &mut oldlen,
                    newp,
                    newlen,
                )
            };
            if ret == 0 {
                return Ok(Some(old));
            }
            if ret == libc::EPERM && value.is_some() {
                // SAFETY: as above, without reading.
                ret = unsafe {
                    mallctl(
                        cname.as_ptr(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        newp,
                        sz,
                    )
                };
                if ret == 0 {
                    return Ok(None);
                }
            }
            if ret == libc::EINVAL {
                sz /= 2;
                continue;
            }
            return Err(strerror(ret));
        }
        Err(strerror(libc::EINVAL))
    }

    /// Redis's mallctl_string: the old value is read first; a value of
    /// "VOID" writes nothing but calls the key (a write-only action).
    pub fn ctl_str(name: &str, value: Option<&str>) -> Result<Option<String>, String> {
        let Ok(cname) = CString::new(name) else {
            return Err(strerror(libc::EINVAL));
        };
        let mut old: *const c_char = std::ptr::null();
        let mut sz = std::mem::size_of::<*const c_char>();
        // SAFETY: `old` has room for the pointer jemalloc writes.
        let rret = unsafe {
            mallctl(
                cname.as_ptr(),
                &mut old as *mut *const c_char as *mut c_void,
                &mut sz,
                std::ptr::null_mut(),
                0,
            )
        };
        if rret != 0 && !(rret == libc::EPERM && value.is_some()) {
            return Err(strerror(rret));
        }
        let mut wret = 0;
        if let Some(v) = value {
            let Ok(cval) = CString::new(v) else {
                return Err(strerror(libc::EINVAL));
            };
            let mut p = cval.as_ptr();
            let (newp, newlen) = if v == "VOID" {
                (std::ptr::null_mut(), 0)
            } else {
                (&mut p as *mut *const c_char as *mut c_void, sz)
            };
            // SAFETY: `p` points to a C string alive for the call.
            wret = unsafe {
                mallctl(
                    cname.as_ptr(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    newp,
                    newlen,
                )
            };
        }
        if rret == 0 {
            let text = if old.is_null() {
                String::new()
            } else {
                // SAFETY: jemalloc's string keys are static C strings.
                unsafe { CStr::from_ptr(old) }
                    .to_string_lossy()
                    .into_owned()
            };
            Ok(Some(text))
        } else if wret != 0 {
            Err(strerror(wret))
        } else {
            Ok(None)
        }
    }

    /// thread.allocated less thread.deallocated: what this thread holds.
    pub fn thread_net() -> u64 {
        // SAFETY: both keys are NUL-terminated names of a uint64_t.
        let read = |key: &[u8]| unsafe { tikv_jemalloc_ctl::raw::read::<u64>(key) }.unwrap_or(0);
        read(b"thread.allocated\0").saturating_sub(read(b"thread.deallocated\0"))
    }

    /// Redis's jemalloc_purge: arena.<narenas>.purge, every arena.
    pub fn purge() -> bool {
        let mut narenas: u32 = 0;
        let mut sz = std::mem::size_of::<u32>();
        // SAFETY: narenas is an unsigned, as the key is.
        let ret = unsafe {
            mallctl(
                c"arenas.narenas".as_ptr(),
                &mut narenas as *mut u32 as *mut c_void,
                &mut sz,
                std::ptr::null_mut(),
                0,
            )
        };
        if ret != 0 {
            return false;
        }
        let Ok(key) = CString::new(format!("arena.{narenas}.purge")) else {
            return false;
        };
        // SAFETY: a key that takes no value.
        unsafe {
            mallctl(
                key.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            ) == 0
        }
    }
}
