//! A three-node Redis Cluster of Debian's redis-server 7.0, as the module's
//! tests start it (crates/goblin-module/tests/it/module_cluster.rs): each
//! node started with `cluster-enabled yes` (and Goblin's module, or not),
//! given a third of the 16384 slots, introduced to the others, and awaited
//! until every node reports `cluster_state:ok`.

use super::goblin_support::{Conn, Reply};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const SLOTS: u16 = 16384;

/// `libgoblin_module.so` as cargo built it for these tests: goblin-module
/// is a dev-dependency, and cargo builds a dependency's cdylib beside the
/// test binary, in `target/<profile>/deps`.
pub fn module_path() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().join("libgoblin_module.so");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build --release -p goblin-module`",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The `process_id` a server at `addr` gives in INFO server, or None when
/// nothing there speaks RESP.
fn server_pid(addr: SocketAddr) -> Option<u32> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream
        .write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")
        .ok()?;
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        text.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&text);
        if let Some(rest) = text.split("\r\nprocess_id:").nth(1) {
            if let Some((pid, _)) = rest.split_once("\r\n") {
                return pid.parse().ok();
            }
        }
    }
}

/// A directory for a node's files, removed when dropped.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process, killed when dropped (a failed assertion included).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One cluster node, serving `slots`.
pub struct Node {
    pub addr: SocketAddr,
    bus: u16,
    // Declared before the directory, so killed before it is removed.
    _child: Killed,
    _dir: Dir,
}

impl Node {
    /// Ports found free may be taken by another test's server before this
    /// one binds them: a server that exits, or a port answered by another
    /// process, is retried on new ports.
    fn start(first: u16, last: u16, module: bool) -> Node {
        static DIRS: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "goblin-cache-cluster-{}-{}",
            std::process::id(),
            DIRS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = Dir(dir);
        let log = dir.0.join("redis.log");
        let mut last_error = String::new();
        for _ in 0..10 {
            let (port, bus) = (free_port(), free_port());
            if port == bus {
                continue;
            }
            let _ = std::fs::remove_file(dir.0.join("nodes.conf"));
            let mut cmd = Command::new("redis-server");
            cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-port", &bus.to_string()])
                .arg("--dir")
                .arg(&dir.0)
                .arg("--logfile")
                .arg(&log)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if module {
                cmd.arg("--loadmodule").arg(module_path());
            }
            let child = cmd.spawn().unwrap_or_else(|e| {
                panic!(
                    "cannot run `redis-server` ({e}): the cluster tests need Debian's \
                     redis-server 7.0 on the PATH (scripts/setup)"
                )
            });
            let mut child = Killed(child);
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            let up = loop {
                if let Some(status) = child.0.try_wait().unwrap() {
                    let log = std::fs::read_to_string(&log).unwrap_or_default();
                    last_error = format!("redis-server exited with {status}:\n{log}");
                    break false;
                }
                if server_pid(addr) == Some(child.0.id()) {
                    break true;
                }
                assert!(
                    Instant::now() < deadline,
                    "redis-server did not answer on port {port}"
                );
                std::thread::sleep(Duration::from_millis(5));
            };
            if !up {
                continue;
            }
            let node = Node {
                addr,
                bus,
                _child: child,
                _dir: dir,
            };
            let reply = Conn::connect(addr).cmd(&[
                "CLUSTER",
                "ADDSLOTSRANGE",
                &first.to_string(),
                &last.to_string(),
            ]);
            assert_eq!(reply, Reply::Status("OK".into()));
            return node;
        }
        panic!("could not start a cluster node: {last_error}");
    }
}

/// Three nodes, each with a third of the slots, awaited until each sees
/// every slot served.
pub struct Cluster {
    pub nodes: Vec<Node>,
}

impl Cluster {
    /// Blocking: call it from `spawn_blocking` in an async test.
    pub fn start(module: bool) -> Cluster {
        let n = 3;
        let share = SLOTS / n;
        let nodes: Vec<Node> = (0..n)
            .map(|i| {
                let last = if i == n - 1 {
                    SLOTS - 1
                } else {
                    (i + 1) * share - 1
                };
                Node::start(i * share, last, module)
            })
            .collect();
        // Every pair meets directly rather than through gossip, which may
        // take a node timeout to spread.
        for (i, node) in nodes.iter().enumerate() {
            let mut c = Conn::connect(node.addr);
            for other in &nodes[i + 1..] {
                let port = other.addr.port().to_string();
                let bus = other.bus.to_string();
                assert_eq!(
                    c.cmd(&["CLUSTER", "MEET", "127.0.0.1", &port, &bus]),
                    Reply::Status("OK".into())
                );
            }
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        for node in &nodes {
            let mut c = Conn::connect(node.addr);
            loop {
                let info = c.cmd(&["CLUSTER", "INFO"]).text();
                if info.contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "node {} never saw the cluster ok:\n{info}",
                    node.addr
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Cluster { nodes }
    }

    /// The nodes' URLs, for a cluster client.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("redis://{}/", n.addr))
            .collect()
    }
}
