//! # goblin-server
//!
//! The network face of Goblin: configuration from a file and the command
//! line (as `redis-server` takes them), the TCP listener, one task per
//! connection, and the periodic maintenance thread. Everything a command
//! does happens in `goblin-engine`; this crate moves bytes.
//!
//! - [`config`]: parsing `goblin-server [config-file] [--directive value ...]`.
//! - [`connection`]: the read, parse, execute, write loop of one client.
//! - [`Server`]: a bound listener with its engine, started by `main` and by
//!   the integration tests.

pub mod config;
pub mod connection;
pub mod limits;
pub mod log;

use goblin_engine::{Engine, ShutdownMode};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::TcpListener;

/// A listening server.
pub struct Server {
    pub engine: Arc<Engine>,
    listeners: Vec<std::net::TcpListener>,
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
fn listen(bind: &str, port: u16, backlog: i32) -> io::Result<Vec<std::net::TcpListener>> {
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
                         Failed listening on port {port} (TCP), aborting."
                    ),
                ));
            }
        }
    }
    Ok(listeners)
}

impl Server {
    /// Binds every address of `bind` on `port` (port 0 picks a free one).
    pub async fn bind(engine: Arc<Engine>) -> io::Result<Server> {
        let port = engine.config().get_i64("port") as u16;
        let bind = engine.config().get("bind");
        let backlog = engine.config().get_i64("tcp-backlog");
        check_backlog(backlog);
        let listeners = listen(&bind, port, backlog.clamp(0, i32::MAX as i64) as i32)?;
        if listeners.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::AddrNotAvailable,
                "no address to listen on",
            ));
        }
        let port = listeners[0].local_addr()?.port();
        engine.set_tcp_port(port);
        Ok(Server { engine, listeners })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listeners[0].local_addr().expect("bound listener")
    }

    /// Accepts clients until SHUTDOWN; returns the requested shutdown mode.
    pub async fn run(self) -> ShutdownMode {
        let engine = self.engine.clone();
        start_cron(engine.clone());
        let mut shutdown = engine.shutdown_requests();
        let acceptors = Arc::new(std::sync::Mutex::new(Acceptors {
            bind: engine.config().get("bind"),
            port: engine.tcp_port(),
            tasks: Vec::new(),
        }));
        acceptors.lock().unwrap_or_else(|e| e.into_inner()).tasks =
            spawn_acceptors(&engine, self.listeners);
        install_rebind(&engine, acceptors);
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

/// The accept loops running, and the addresses they listen on.
struct Acceptors {
    bind: String,
    port: u16,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

fn spawn_acceptors(
    engine: &Arc<Engine>,
    listeners: Vec<std::net::TcpListener>,
) -> Vec<tokio::task::JoinHandle<()>> {
    listeners
        .into_iter()
        .filter_map(|l| TcpListener::from_std(l).ok())
        .map(|listener| {
            let engine = engine.clone();
            tokio::spawn(async move {
                // Accept errors repeat while their cause lasts (out of file
                // descriptors): one log line a second at most.
                let mut last_logged: Option<std::time::Instant> = None;
                let mut unlogged = 0u64;
                loop {
                    match listener.accept().await {
                        Ok((stream, peer)) => {
                            if let Some(conn) = connection::serve(engine.clone(), stream, peer) {
                                tokio::spawn(conn);
                            }
                        }
                        Err(e) => {
                            // Out of file descriptors and similar: back off
                            // briefly rather than spin.
                            let now = std::time::Instant::now();
                            if last_logged
                                .is_none_or(|t| now - t >= std::time::Duration::from_secs(1))
                            {
                                let more = match unlogged {
                                    0 => String::new(),
                                    n => format!(" ({n} more since the last)"),
                                };
                                log::warning(&format!("Accepting client connection: {e}{more}"));
                                last_logged = Some(now);
                                unlogged = 0;
                            } else {
                                unlogged += 1;
                            }
                            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        }
                    }
                }
            })
        })
        .collect()
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

/// CONFIG SET bind / port (Redis's changeBindAddr and changeListenPort):
/// the new sockets are opened before the old ones close when only the port
/// changes; a new bind address closes the old sockets first (they may hold
/// the same port) and reopens them when the new ones cannot be had.
fn install_rebind(engine: &Arc<Engine>, acceptors: Arc<std::sync::Mutex<Acceptors>>) {
    let handle = tokio::runtime::Handle::current();
    let weak = Arc::downgrade(engine);
    engine.set_rebind(Box::new(move |bind: &str, port: u16| {
        let Some(engine) = weak.upgrade() else {
            return Err("server stopped".to_string());
        };
        let backlog = engine
            .config()
            .get_i64("tcp-backlog")
            .clamp(0, i32::MAX as i64) as i32;
        let _runtime = handle.enter();
        let mut a = acceptors.lock().unwrap_or_else(|e| e.into_inner());
        let opened = if bind == a.bind {
            let fresh = listen(bind, port, backlog).map_err(|e| e.to_string())?;
            stop_acceptors(std::mem::take(&mut a.tasks));
            fresh
        } else {
            if !valid_bind(bind, port) {
                return Err("invalid address".to_string());
            }
            stop_acceptors(std::mem::take(&mut a.tasks));
            match listen(bind, port, backlog) {
                Ok(fresh) => fresh,
                Err(e) => {
                    if let Ok(old) = listen(&a.bind, a.port, backlog) {
                        a.tasks = spawn_acceptors(&engine, old);
                    }
                    return Err(e.to_string());
                }
            }
        };
        let bound = opened
            .first()
            .and_then(|l| l.local_addr().ok())
            .map_or(port, |addr| addr.port());
        a.tasks = spawn_acceptors(&engine, opened);
        a.bind = bind.to_string();
        a.port = bound;
        engine.set_tcp_port(bound);
        Ok(())
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

/// Installs jemalloc's statistics as the engine's memory figures.
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
            allocator: "jemalloc-5.3.0",
        }
    }
    goblin_engine::memory::set_provider(read);
}
