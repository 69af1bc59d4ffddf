//! The module on a Redis Cluster: three Debian redis-server 7.0 nodes,
//! each started with `cluster-enabled yes` and the module, each given a
//! third of the 16384 hash slots (CLUSTER ADDSLOTSRANGE) and introduced to
//! the others (CLUSTER MEET); a test starts when every node reports
//! `cluster_state:ok`. Every GOBLIN.* command registers its key at
//! position 1, so Redis routes it by the key's slot as it routes GET:
//!
//! - a node runs the calls on its own slots and answers `MOVED` for the
//!   others, naming the node that has the slot;
//! - a cluster client that routes as the usual ones do (the slot map from
//!   CLUSTER SLOTS, the key position from COMMAND INFO, the slot from the
//!   key's CRC16 or its hash tag) sends every call to the right node the
//!   first time, and a random workload over keys of every node gives the
//!   same replies and leaves the same keys as on a single server;
//! - what involves two slots is refused as for Redis's own commands:
//!   CROSSSLOT for a transaction or a script that declares keys of two
//!   slots, the script errors for a key of another node or of a second
//!   slot, a transaction that queued a call for another node aborted.

use crate::support;

use crate::support::goblin_support::{snapshot, Conn, Data, KeyState, Reply};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SLOTS: u16 = 16384;
const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";

/// A port free now (the kernel's pick for a listener on port 0).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The `process_id` a server at `addr` gives in INFO server, or None when
/// nothing there speaks RESP (nothing listening, a cluster bus, which
/// closes on a client's bytes, a server going down).
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

/// A directory for a node's files (nodes.conf, its log), removed when
/// dropped.
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

/// One cluster node: Debian's redis-server with the module, serving
/// `slots`.
struct Node {
    addr: SocketAddr,
    bus: u16,
    slots: (u16, u16),
    // Declared before the directory, so killed before it is removed.
    _child: Killed,
    _dir: Dir,
}

impl Node {
    /// Two ports are picked free, the client port and the cluster bus port
    /// (the default bus port, port + 10000, may lie beyond 65535), and may
    /// be taken again by another test's server before this one binds them:
    /// a server that exits, or a port answered by another process, is
    /// retried on new ports.
    fn start(first: u16, last: u16) -> Node {
        let dir = std::env::temp_dir().join(format!(
            "goblin-module-cluster-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = Dir(dir);
        let log = dir.0.join("redis.log");
        let module = support::module_path();
        let mut last_error = String::new();
        for _ in 0..10 {
            let (port, bus) = (free_port(), free_port());
            if port == bus {
                continue;
            }
            // A failed start may have left its node identity behind.
            let _ = std::fs::remove_file(dir.0.join("nodes.conf"));
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--loadmodule")
                .arg(&module)
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-port", &bus.to_string()])
                .arg("--dir")
                .arg(&dir.0)
                .arg("--logfile")
                .arg(&log)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!(
                        "cannot run `redis-server` ({e}): the module's tests need Debian's \
                         redis-server 7.0 on the PATH (apt-get install redis-server, or \
                         scripts/setup)"
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
                slots: (first, last),
                _child: child,
                _dir: dir,
            };
            let reply = node.conn().cmd(&[
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

    fn conn(&self) -> Conn {
        Conn::connect(self.addr)
    }

    fn owns(&self, slot: u16) -> bool {
        (self.slots.0..=self.slots.1).contains(&slot)
    }
}

struct Cluster {
    nodes: Vec<Node>,
}

impl Cluster {
    /// `n` nodes with consecutive equal shares of the slots, joined, and
    /// awaited until each sees every slot served.
    fn start(n: u16) -> Cluster {
        let share = SLOTS / n;
        let nodes: Vec<Node> = (0..n)
            .map(|i| {
                let last = if i == n - 1 {
                    SLOTS - 1
                } else {
                    (i + 1) * share - 1
                };
                Node::start(i * share, last)
            })
            .collect();
        // Every pair meets directly (a handshake at once) rather than
        // through gossip, which may take a node timeout to spread.
        for (i, node) in nodes.iter().enumerate() {
            let mut c = node.conn();
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
            let mut c = node.conn();
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

    fn owner(&self, slot: u16) -> &Node {
        self.nodes.iter().find(|n| n.owns(slot)).unwrap()
    }

    fn conn(&self, slot: u16) -> Conn {
        self.owner(slot).conn()
    }

    /// The first `count` keys `prefix0`, `prefix1`... whose slots the
    /// node `node` serves, each in a slot of its own.
    fn keys_on(&self, node: usize, prefix: &str, count: usize) -> Vec<String> {
        let mut slots = Vec::new();
        (0..)
            .map(|i| format!("{prefix}{i}"))
            .filter(|k| {
                let slot = key_slot(k.as_bytes());
                let fresh = self.nodes[node].owns(slot) && !slots.contains(&slot);
                if fresh {
                    slots.push(slot);
                }
                fresh
            })
            .take(count)
            .collect()
    }
}

/// CRC16/XMODEM, the hash of Redis Cluster's slots.
fn crc16(data: &[u8]) -> u16 {
    let mut crc = 0u16;
    for &byte in data {
        crc ^= (byte as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The slot of a key: of its hash tag, the part between the first `{`
/// and the next `}` when that is not empty, else of the whole key.
fn key_slot(key: &[u8]) -> u16 {
    let tag = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        match rest.iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => Some(&rest[..len]),
            _ => None,
        }
    });
    crc16(tag.unwrap_or(key)) % SLOTS
}

/// A client that routes as cluster clients do, knowing nothing of the
/// GOBLIN.* commands beforehand: the slot map from CLUSTER SLOTS, each
/// command's key position from COMMAND INFO (its first-key field), the
/// slot from the key. It follows a MOVED redirection and counts it.
struct ClusterClient {
    owners: Vec<SocketAddr>,
    conns: HashMap<SocketAddr, Conn>,
    key_positions: HashMap<String, usize>,
    redirections: usize,
}

impl ClusterClient {
    fn connect(seed: SocketAddr) -> ClusterClient {
        let mut c = Conn::connect(seed);
        let mut owners = vec![None; SLOTS as usize];
        for range in c.cmd(&["CLUSTER", "SLOTS"]).array() {
            let range = range.array();
            let master = range[2].array();
            let addr: SocketAddr = format!("{}:{}", master[0].text(), master[1].int())
                .parse()
                .unwrap();
            for slot in range[0].int()..=range[1].int() {
                owners[slot as usize] = Some(addr);
            }
        }
        ClusterClient {
            owners: owners
                .into_iter()
                .map(|o| o.expect("every slot served"))
                .collect(),
            conns: HashMap::from([(seed, c)]),
            key_positions: HashMap::new(),
            redirections: 0,
        }
    }

    fn conn(&mut self, addr: SocketAddr) -> &mut Conn {
        self.conns
            .entry(addr)
            .or_insert_with(|| Conn::connect(addr))
    }

    /// The key's position in a call of `name`, from COMMAND INFO (asked
    /// once per command).
    fn key_position(&mut self, name: &str) -> usize {
        let name = name.to_ascii_lowercase();
        if let Some(&pos) = self.key_positions.get(&name) {
            return pos;
        }
        let any = self.owners[0];
        let info = self.conn(any).cmd(&["COMMAND", "INFO", &name]).array();
        let pos = info[0].array()[3].int();
        assert!(pos > 0, "COMMAND INFO {name} names no key: {info:?}");
        self.key_positions.insert(name, pos as usize);
        pos as usize
    }

    fn call(&mut self, args: &[String]) -> Reply {
        let pos = self.key_position(&args[0]);
        let mut addr = self.owners[key_slot(args[pos].as_bytes()) as usize];
        loop {
            let reply = self.conn(addr).call(args);
            match &reply {
                Reply::Error(e) if e.starts_with("MOVED ") => {
                    self.redirections += 1;
                    let mut words = e.split(' ').skip(1);
                    let slot: usize = words.next().unwrap().parse().unwrap();
                    addr = words.next().unwrap().parse().unwrap();
                    self.owners[slot] = addr;
                }
                _ => return reply,
            }
        }
    }
}

/// Arguments for one call of `command` on `key` (`n` a small integer,
/// tokens from two, TTLs 10^6 ms apart as in the differential tests).
fn random_call(rng: &mut fastrand::Rng, key: &str) -> Vec<String> {
    let n = rng.i64(-2..=6).to_string();
    let token = |rng: &mut fastrand::Rng| ["a", "b"][rng.usize(..2)].to_string();
    let ms = (rng.i64(1..=5) * 1_000_000).to_string();
    let command = goblin_family::COMMANDS[rng.usize(..goblin_family::COMMANDS.len())].name;
    let mut argv = vec![command.to_string(), key.to_string()];
    match command {
        "goblin.decrpos" => {}
        "goblin.decrbypos" | "goblin.decrby" => argv.push(n),
        "goblin.incrbound" => argv.extend([n, "20".into()]),
        "goblin.incrttl" => argv.extend([n, ms]),
        "goblin.cad" => argv.push(token(rng)),
        "goblin.cae" => argv.extend([token(rng), ms]),
        "goblin.hcad" => argv.extend(["f".into(), token(rng)]),
        "goblin.hcas" => argv.extend(["f".into(), token(rng), token(rng)]),
        "goblin.hsetgt" => argv.extend(["f".into(), n]),
        "goblin.zwindow" => argv.extend(["2".into(), ms, token(rng)]),
        other => panic!("no arguments for {other}"),
    }
    argv
}

#[test]
fn each_call_runs_on_the_node_of_its_key_slot_and_moves_elsewhere() {
    let cluster = Cluster::start(3);
    let mut conns: Vec<Conn> = cluster.nodes.iter().map(|n| n.conn()).collect();
    let mut per_node = [0; 3];
    for i in 0..30 {
        let key = format!("stock:{i}");
        let slot = key_slot(key.as_bytes());
        assert_eq!(
            conns[0].cmd(&["CLUSTER", "KEYSLOT", &key]),
            Reply::Int(slot as i64),
            "the test's slot of {key}"
        );
        let owner = cluster.nodes.iter().position(|n| n.owns(slot)).unwrap();
        per_node[owner] += 1;
        let owner_addr = cluster.nodes[owner].addr;
        for command in goblin_family::COMMANDS {
            let mut call = vec![command.name.to_string(), key.clone()];
            call.extend((2..command.arity).map(|_| "1".to_string()));
            // COMMAND GETKEYS, which cluster proxies and clients ask.
            let mut getkeys = vec!["COMMAND".to_string(), "GETKEYS".to_string()];
            getkeys.extend(call.iter().cloned());
            assert_eq!(
                conns[owner].call(&getkeys),
                Reply::Array(vec![Reply::Bulk(key.clone().into_bytes())])
            );
            for (other, conn) in conns.iter_mut().enumerate() {
                if other != owner {
                    assert_eq!(
                        conn.call(&call),
                        Reply::Error(format!("MOVED {slot} {owner_addr}")),
                        "{call:?} on a node without slot {slot}"
                    );
                }
            }
        }
        // The owner runs the calls (and the redirected ones changed
        // nothing anywhere).
        let c = &mut conns[owner];
        assert_eq!(c.cmd(&["EXISTS", &key]), Reply::Int(0));
        assert_eq!(c.cmd(&["SET", &key, "3"]), Reply::Status("OK".into()));
        assert_eq!(c.cmd(&["GOBLIN.DECRPOS", &key]), Reply::Int(2));
        assert_eq!(c.cmd(&["GOBLIN.DECRBYPOS", &key, "5"]), Reply::Int(-1));
        assert_eq!(
            c.cmd(&["GOBLIN.INCRBOUND", &key, "8", "10"]),
            Reply::Int(10)
        );
        assert_eq!(
            c.cmd(&["GOBLIN.INCRTTL", &key, "1", "100000"]),
            Reply::Array(vec![Reply::Int(11), Reply::Int(100000)])
        );
        assert_eq!(c.cmd(&["GOBLIN.CAD", &key, "11"]), Reply::Int(1));
        assert_eq!(c.cmd(&["EXISTS", &key]), Reply::Int(0));
    }
    assert!(per_node.iter().all(|&n| n > 0), "keys on every node");
    for (i, c) in conns.iter_mut().enumerate() {
        assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(0), "node {i}");
    }
}

#[test]
fn a_cluster_client_routes_every_call_and_the_cluster_acts_as_one_server() {
    let cluster = Cluster::start(3);
    let single = support::redis_with_module(&[]);
    let mut s = single.conn();
    let mut client = ClusterClient::connect(cluster.nodes[1].addr);
    // Plain keys, and keys that share a hash tag (one slot, one node).
    let keys: Vec<String> = (0..12)
        .map(|i| format!("k{i}"))
        .chain((0..6).map(|i| format!("{{acct{}}}:{}", i % 3, i)))
        .collect();
    let mut rng = fastrand::Rng::with_seed(0xc1a5);
    let started = Instant::now();
    for step in 0..1500 {
        let key = keys[rng.usize(..keys.len())].clone();
        let call: Vec<String> = match rng.u32(..100) {
            0..=9 => vec![
                "SET".into(),
                key,
                ["a", "b", "5", "x"][rng.usize(..4)].into(),
            ],
            10..=13 => vec!["HSET".into(), key, "f".into(), "3".into()],
            14..=16 => vec!["DEL".into(), key],
            _ => random_call(&mut rng, &key),
        };
        let got = client.call(&call);
        let want = s.call(&call);
        let tolerance = 2 * (started.elapsed().as_millis() as i64 + 1);
        let same = match (&got, &want) {
            // INCRTTL: [value, remaining ms], read on two clocks.
            (Reply::Array(g), Reply::Array(w)) if g.len() == 2 && w.len() == 2 => {
                g[0] == w[0] && (g[1].int() - w[1].int()).abs() <= tolerance
            }
            _ => got == want,
        };
        assert!(
            same,
            "step {step} {call:?}: cluster {got:?}, one server {want:?}"
        );
    }
    assert_eq!(client.redirections, 0, "every call went to its node");

    let tolerance = 2 * (started.elapsed().as_millis() as i64 + 1);
    let close = |a: &KeyState, b: &KeyState| {
        let scores = match (&a.data, &b.data) {
            (Data::ZSet(x), Data::ZSet(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|(p, q)| p.0 == q.0 && (p.1 - q.1).abs() <= tolerance as f64)
            }
            (x, y) => x == y,
        };
        let deadlines = (a.expire_at < 0 && a.expire_at == b.expire_at)
            || (a.expire_at > 0
                && b.expire_at > 0
                && (a.expire_at - b.expire_at).abs() <= tolerance);
        scores && deadlines
    };
    let mut stored = 0;
    for key in &keys {
        let slot = key_slot(key.as_bytes());
        let mut owner = cluster.conn(slot);
        let on_cluster = snapshot(&mut owner, key);
        let on_one = snapshot(&mut s, key);
        assert!(
            close(&on_cluster, &on_one),
            "{key}: cluster {on_cluster:?}, one server {on_one:?}"
        );
        if on_cluster.data != Data::None {
            stored += 1;
            let in_slot = owner.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]);
            assert!(in_slot.int() > 0, "{key} counted in slot {slot}");
        }
    }
    // The keys the single server holds are spread over the nodes, none
    // held twice.
    let total: i64 = cluster
        .nodes
        .iter()
        .map(|n| n.conn().cmd(&["DBSIZE"]).int())
        .sum();
    assert_eq!(total, stored);
    assert_eq!(s.cmd(&["DBSIZE"]).int(), stored);
    assert!(
        stored > keys.len() as i64 / 2,
        "only {stored} keys survived"
    );
}

#[test]
fn calls_on_two_slots_are_refused_as_for_redis_commands() {
    let cluster = Cluster::start(3);
    let mut c = cluster.nodes[0].conn();
    // Two keys of node 0 in different slots, two of node 0 sharing a hash
    // tag, and a key of node 1.
    let apart = cluster.keys_on(0, "lock", 2);
    let tag = &cluster.keys_on(0, "tag", 1)[0];
    let tagged = [format!("{{{tag}}}:a"), format!("{{{tag}}}:b")];
    let tagged = [tagged[0].as_str(), tagged[1].as_str()];
    let elsewhere = &cluster.keys_on(1, "lock", 1)[0];
    for key in apart.iter().map(String::as_str).chain(tagged) {
        assert_eq!(c.cmd(&["SET", key, "5"]), Reply::Status("OK".into()));
    }
    let values = |c: &mut Conn| -> Vec<Reply> {
        apart
            .iter()
            .map(String::as_str)
            .chain(tagged)
            .map(|k| c.cmd(&["GET", k]))
            .collect()
    };
    let five = vec![Reply::Bulk(b"5".to_vec()); 4];

    // A transaction over two slots: CROSSSLOT at EXEC, nothing run.
    assert_eq!(c.cmd(&["MULTI"]), Reply::Status("OK".into()));
    for key in &apart {
        assert_eq!(
            c.cmd(&["GOBLIN.DECRPOS", key]),
            Reply::Status("QUEUED".into())
        );
    }
    assert_eq!(c.cmd(&["EXEC"]), Reply::Error(CROSSSLOT.into()));
    assert_eq!(values(&mut c), five);

    // A call for another node inside MULTI is redirected, and the
    // transaction aborted.
    let slot = key_slot(elsewhere.as_bytes());
    assert_eq!(c.cmd(&["MULTI"]), Reply::Status("OK".into()));
    assert_eq!(
        c.cmd(&["GOBLIN.DECRPOS", &apart[0]]),
        Reply::Status("QUEUED".into())
    );
    assert_eq!(
        c.cmd(&["GOBLIN.DECRPOS", elsewhere]),
        Reply::Error(format!("MOVED {slot} {}", cluster.nodes[1].addr))
    );
    assert_eq!(
        c.cmd(&["EXEC"]),
        Reply::Error("EXECABORT Transaction discarded because of previous errors.".into())
    );
    assert_eq!(values(&mut c), five);

    // A script declaring keys of two slots: CROSSSLOT, nothing run.
    let both =
        "return {redis.call('GOBLIN.DECRPOS', KEYS[1]), redis.call('GOBLIN.DECRPOS', KEYS[2])}";
    assert_eq!(
        c.cmd(&["EVAL", both, "2", &apart[0], &apart[1]]),
        Reply::Error(CROSSSLOT.into())
    );
    assert_eq!(values(&mut c), five);

    // A script that reaches, undeclared, a key of another node, or (with
    // the flags of a Redis 7 script) a second slot of its own node.
    let reach = |c: &mut Conn, script: &str, keys: &[&str]| match c
        .call(&[&["EVAL", script, "0"][..], keys].concat())
    {
        Reply::Error(e) => e,
        other => panic!("{script}: {other:?}"),
    };
    let one = "return redis.call('GOBLIN.DECRPOS', ARGV[1])";
    let e = reach(&mut c, one, &[elsewhere]);
    assert!(
        e.contains("Script attempted to access a non local key in a cluster node"),
        "{e}"
    );
    let two = "#!lua\nreturn {redis.call('GOBLIN.DECRPOS', ARGV[1]), redis.call('GOBLIN.DECRPOS', ARGV[2])}";
    let e = reach(&mut c, two, &[&apart[0], &apart[1]]);
    assert!(
        e.contains("Script attempted to access keys that do not hash to the same slot"),
        "{e}"
    );
    // The script stopped at the second slot: the first call ran.
    assert_eq!(c.cmd(&["GET", &apart[0]]), Reply::Bulk(b"4".to_vec()));
    assert_eq!(c.cmd(&["SET", &apart[0], "5"]), Reply::Status("OK".into()));

    // One hash tag, one slot: the transaction and the script run.
    assert_eq!(c.cmd(&["MULTI"]), Reply::Status("OK".into()));
    for key in tagged {
        assert_eq!(
            c.cmd(&["GOBLIN.DECRPOS", key]),
            Reply::Status("QUEUED".into())
        );
    }
    assert_eq!(
        c.cmd(&["EXEC"]),
        Reply::Array(vec![Reply::Int(4), Reply::Int(4)])
    );
    assert_eq!(
        c.cmd(&["EVAL", both, "2", tagged[0], tagged[1]]),
        Reply::Array(vec![Reply::Int(3), Reply::Int(3)])
    );
    assert_eq!(values(&mut c)[..2], five[..2]);
}
