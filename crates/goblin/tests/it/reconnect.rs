//! The remote driver recovers from a server that went away: goblin-server
//! (in-process, on a runtime of its own) is killed and started again on the
//! same port, and the next call after it answers succeeds. Meanwhile a
//! call says Unavailable (nothing sent, safe to retry) once redis-rs has
//! seen the connection drop.

use goblin::cache::{Cache, Error, Key};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// goblin-server with its own runtime: dropping the runtime drops its
/// listener and every connection task at once, as a killed process's
/// sockets close.
struct Server {
    runtime: tokio::runtime::Runtime,
}

impl Server {
    /// Binds `port` (0 for a free one), retrying while the previous
    /// server's listener is still being torn down.
    async fn start(port: u16) -> (Server, SocketAddr) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let config = goblin_engine::Config::new();
            for (k, v) in [
                ("port", port.to_string().as_str()),
                ("bind", "127.0.0.1"),
                ("save", ""),
                ("appendonly", "no"),
                ("dir", std::env::temp_dir().to_str().unwrap()),
            ] {
                config.set_initial(k, v).unwrap();
            }
            let engine = goblin_engine::Engine::new(config);
            let bound = runtime
                .spawn(async move {
                    let server = goblin_server::Server::bind(engine).await?;
                    let addr = server.local_addr();
                    tokio::spawn(server.run());
                    Ok::<_, std::io::Error>(addr)
                })
                .await
                .unwrap();
            match bound {
                Ok(addr) => return (Server { runtime }, addr),
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                    runtime.shutdown_background();
                    assert!(Instant::now() < deadline, "port {port} stayed in use");
                    // Each try builds an engine: poll at a modest pace.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(e) => panic!("cannot start goblin-server: {e}"),
            }
        }
    }

    fn kill(self) {
        self.runtime.shutdown_background();
    }
}

/// Waits until a server at `addr` answers PING.
async fn await_ready(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut s) = TcpStream::connect(addr).await {
            let mut buf = [0u8; 7];
            if s.write_all(b"PING\r\n").await.is_ok()
                && s.read_exact(&mut buf).await.is_ok()
                && &buf == b"+PONG\r\n"
            {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{addr} never answered");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_server_restarts_the_next_call_succeeds() {
    let (server, addr) = Server::start(0).await;
    let cache = Cache::connect(&format!("redis://{addr}/")).await.unwrap();
    let views = Key::<i64>::new("views");
    assert_eq!(cache.increment(&views, 1).await.unwrap(), 1);
    assert_eq!(cache.increment(&views, 1).await.unwrap(), 2);

    server.kill();
    // The first call may go out on the dead connection before redis-rs has
    // seen it close (Transport: for all the driver knows, it was applied);
    // once it has, a call finds nothing to connect to and sends nothing.
    let deadline = Instant::now() + Duration::from_secs(60);
    let unavailable = loop {
        match cache.increment(&views, 1).await {
            Err(e @ Error::Unavailable(_)) => break e,
            Err(Error::Transport(_)) => {}
            other => panic!("with the server down: {other:?}"),
        }
        assert!(Instant::now() < deadline, "never Unavailable");
    };
    assert!(!unavailable.outcome_unknown());
    assert!(
        unavailable.to_string().contains("nothing was sent"),
        "{unavailable}"
    );

    // The same port again: a new, empty server.
    let (server, again) = Server::start(addr.port()).await;
    assert_eq!(again, addr);
    await_ready(addr).await;
    assert_eq!(cache.increment(&views, 1).await.unwrap(), 1);
    assert_eq!(cache.get(&views).await.unwrap(), Some(1));
    server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_the_server_drops_is_replaced() {
    let (server, addr) = Server::start(0).await;
    let cache = Cache::connect(&format!("redis://{addr}/")).await.unwrap();
    let views = Key::<i64>::new("views");
    assert_eq!(cache.increment(&views, 5).await.unwrap(), 5);
    // The server closes every client connection (as a restart of a proxy,
    // or an idle timeout would), but stays up.
    let mut admin = redis::Client::open(format!("redis://{addr}/"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("SKIPME")
        .arg("yes")
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(killed, 1);
    // At most one call sees the dropped connection; after it, calls go
    // through a new one.
    let deadline = Instant::now() + Duration::from_secs(60);
    let total = loop {
        match cache.increment(&views, 1).await {
            Ok(n) => break n,
            Err(e) => assert!(e.outcome_unknown(), "{e:?}"),
        }
        assert!(Instant::now() < deadline, "never reconnected");
    };
    assert_eq!(total, 6);
    assert_eq!(cache.increment(&views, 1).await.unwrap(), 7);
    server.kill();
}
