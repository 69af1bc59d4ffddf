//! The replica side of replication: the link to the primary that
//! REPLICAOF (or `replicaof`) names (Redis's syncWithMaster,
//! readSyncBulkPayload and the master client).
//!
//! One thread per engine follows the primary the engine records
//! (`goblin_engine::repl`), with a blocking socket: it connects, shakes
//! hands (PING, AUTH with masterauth, REPLCONF listening-port and capa,
//! PSYNC), then either continues the history it has (+CONTINUE) or
//! receives the primary's snapshot into a file, flushes the data and loads
//! it (other clients get LOADING meanwhile). It then applies the stream
//! through a session flagged as the master client, passes every command's
//! bytes on to this engine's own replicas, and acknowledges its offset
//! every second and whenever the primary asks (REPLCONF GETACK). When the
//! link breaks it keeps the history and offset, and resumes with PSYNC.
//! A primary failing over to its replica (FAILOVER) follows it like this
//! too, with `PSYNC <replid> <offset> FAILOVER`, whose reply ends the
//! failover (goblin_engine::repl::failover).

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goblin_engine::persist::aof::strerror;
use goblin_engine::repl::{failover, LinkState, MasterAddr, Resume};
use goblin_engine::util::time::now_ms;
use goblin_engine::{log, ConnInfo, Engine, Flow};

/// Starts the thread that follows the engine's primary, whenever it has
/// one.
pub fn start(engine: Arc<Engine>) {
    std::thread::Builder::new()
        .name("goblin-repl".into())
        // It runs the primary's commands, scripts' effects among them.
        .stack_size(goblin_engine::scripting::lua::THREAD_STACK)
        .spawn(move || run(engine))
        .expect("spawn the replication link thread");
}

fn run(engine: Arc<Engine>) {
    let r = engine.repl();
    let mut again = false;
    loop {
        let gen = r.master_generation();
        let at_once = std::mem::take(&mut again);
        let Some(addr) = r.master() else {
            r.wait_master_change(gen, Duration::from_secs(1));
            continue;
        };
        if !at_once {
            log::notice(&format!("Connecting to MASTER {}:{}", addr.host, addr.port));
        }
        // A bug met while following must not end replication for good.
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| follow(&engine, &addr, gen)))
                .unwrap_or_else(|_| Err("the replication link panicked".into()));
        let was_up = {
            let mut link = r.link.lock();
            let was_up = link.state == LinkState::Up;
            if let Some(c) = link.client.take() {
                c.kill();
            }
            link.state = LinkState::Down;
            if was_up || link.down_since_ms == 0 {
                link.down_since_ms = now_ms();
            }
            was_up
        };
        if r.master_generation() == gen {
            match result {
                Err(Stop::Error(e)) if was_up => {
                    log::notice(&format!("Connection with master lost. ({e})"))
                }
                Err(Stop::Error(e)) => {
                    log::warning(&format!("Error condition on socket for SYNC: {e}"))
                }
                Err(Stop::TransferFailed) => {
                    log::notice(&format!(
                        "Reconnecting to MASTER {}:{} after failure",
                        addr.host, addr.port
                    ));
                    again = true;
                }
                Err(Stop::Logged) | Ok(()) => {}
            }
            // Redis's replicationCron tries again once a second; a failed
            // transfer at once (cancelReplicationHandshake).
            if !again {
                r.wait_master_change(gen, Duration::from_secs(1));
            }
        }
    }
}

/// The connection to the primary, with what was read and not yet used.
struct Link {
    tcp: TcpStream,
    buf: Vec<u8>,
    pos: usize,
}

/// Why following stopped.
enum Stop {
    /// The primary changed, or a failure that `run` reports (unless the
    /// primary changed meanwhile).
    Error(String),
    /// A failure reported where it happened, in Redis's words for it (as
    /// readSyncBulkPayload logs its own).
    Logged,
    /// The snapshot's transfer or load failed, reported where it happened:
    /// the link connects again at once (Redis's
    /// cancelReplicationHandshake(1), the data left as it was).
    TransferFailed,
}

impl From<String> for Stop {
    fn from(e: String) -> Stop {
        Stop::Error(e)
    }
}

impl From<&str> for Stop {
    fn from(e: &str) -> Stop {
        Stop::Error(e.to_string())
    }
}

/// Logs `line`, the report of a failure that ends the link.
fn logged(line: String) -> Stop {
    log::warning(&line);
    Stop::Logged
}

/// Logs `line`, the report of a failed transfer of the primary's
/// snapshot.
fn transfer_failed(line: String) -> Stop {
    log::warning(&line);
    Stop::TransferFailed
}

type Step<T> = Result<T, Stop>;

impl Link {
    fn send(&mut self, argv: &[&[u8]]) -> Step<()> {
        let mut out = Vec::new();
        goblin_engine::propagate::encode_command(&mut out, argv);
        self.tcp.write_all(&out).map_err(|e| strerror(&e).into())
    }

    /// Reads more into `buf`; Ok(false) when the read timed out.
    fn fill(&mut self) -> Step<bool> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let mut chunk = [0u8; 64 * 1024];
        match self.tcp.read(&mut chunk) {
            Ok(0) => Err("connection lost".into()),
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(strerror(&e).into()),
        }
    }

    /// The next line without its end, skipping the empty lines a primary
    /// sends to keep the link alive; Err past `timeout` without one.
    fn line(&mut self, engine: &Engine, gen: u64, timeout: Duration) -> Step<String> {
        let start = Instant::now();
        loop {
            if let Some(i) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let line = &self.buf[self.pos..self.pos + i];
                let line =
                    String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line)).into_owned();
                self.pos += i + 1;
                if line.is_empty() {
                    engine.repl().link.lock().transfer_last_io_ms = now_ms();
                    continue;
                }
                return Ok(line);
            }
            if engine.repl().master_generation() != gen {
                return Err("the primary changed".into());
            }
            if start.elapsed() > timeout {
                return Err("Timeout connecting to the MASTER...".into());
            }
            self.fill()?;
        }
    }

    /// Sends a command and reads its one-line reply.
    fn ask(
        &mut self,
        engine: &Engine,
        gen: u64,
        argv: &[&[u8]],
        timeout: Duration,
    ) -> Step<String> {
        self.send(argv)?;
        self.line(engine, gen, timeout)
    }
}

/// Follows `addr` until the link breaks or the primary changes.
fn follow(engine: &Arc<Engine>, addr: &MasterAddr, gen: u64) -> Step<()> {
    let r = engine.repl();
    let config = engine.config();
    let timeout = Duration::from_secs(config.repl_timeout().max(1) as u64);
    r.link.lock().state = LinkState::Connecting;
    let sockaddr = (addr.host.as_str(), addr.port)
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address for the primary")?;
    let tcp = TcpStream::connect_timeout(&sockaddr, timeout).map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(!config.repl_disable_tcp_nodelay());
    tcp.set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    log::notice("MASTER <-> REPLICA sync started");
    r.link.lock().state = LinkState::Handshake;
    let mut link = Link {
        tcp,
        buf: Vec::new(),
        pos: 0,
    };

    // The handshake (Redis's syncWithMaster).
    let pong = link.ask(engine, gen, &[b"PING"], timeout)?;
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(format!("Error reply to PING from master: '{pong}'").into());
    }
    log::notice("Master replied to PING, replication can continue...");
    let auth = config.masterauth();
    if !auth.is_empty() {
        let user = config.masteruser();
        let reply = if user.is_empty() {
            link.ask(engine, gen, &[b"AUTH", auth.as_bytes()], timeout)?
        } else {
            link.ask(
                engine,
                gen,
                &[b"AUTH", user.as_bytes(), auth.as_bytes()],
                timeout,
            )?
        };
        if reply.starts_with('-') {
            return Err(format!("Unable to AUTH to MASTER: {reply}").into());
        }
    }
    let port = match config.replica_announce_port() {
        0 => engine.tcp_port() as i64,
        p => p,
    };
    let port = port.to_string();
    let reply = link.ask(
        engine,
        gen,
        &[b"REPLCONF", b"listening-port", port.as_bytes()],
        timeout,
    )?;
    if reply.starts_with('-') {
        log::notice(&format!(
            "(Non critical) Master does not understand REPLCONF listening-port: {reply}"
        ));
    }
    let ip = config.replica_announce_ip();
    if !ip.is_empty() {
        let reply = link.ask(
            engine,
            gen,
            &[b"REPLCONF", b"ip-address", ip.as_bytes()],
            timeout,
        )?;
        if reply.starts_with('-') {
            log::notice(&format!(
                "(Non critical) Master does not understand REPLCONF ip-address: {reply}"
            ));
        }
    }
    let reply = link.ask(
        engine,
        gen,
        &[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"],
        timeout,
    )?;
    if reply.starts_with('-') {
        log::notice(&format!(
            "(Non critical) Master does not understand REPLCONF capa: {reply}"
        ));
    }

    // PSYNC: the history this engine has, or none. A primary failing over
    // to this one (repl::failover) adds FAILOVER: it takes over from us.
    let resume = r.resume.lock().clone();
    let (replid, next) = match &resume {
        Some(Resume { replid, offset }) => {
            log::notice(&format!(
                "Trying a partial resynchronization (request {replid}:{}).",
                offset + 1
            ));
            (replid.clone(), (offset + 1).to_string())
        }
        None => {
            log::notice("Partial resynchronization not possible (no cached master)");
            ("?".to_string(), "-1".to_string())
        }
    };
    let failing_over = failover::state(engine) == failover::State::InProgress;
    let mut psync: Vec<&[u8]> = vec![b"PSYNC", replid.as_bytes(), next.as_bytes()];
    if failing_over {
        psync.push(b"FAILOVER");
    }
    if let Err(e) = link.send(&psync) {
        failover::abort(engine, "Write error to failover target");
        return Err(e);
    }
    let reply = link.line(engine, gen, timeout)?;
    if failing_over {
        // The target took over (a full resync is unexpected but no
        // failure), or refused: then we are a primary again.
        if reply.starts_with("+CONTINUE") || reply.starts_with("+FULLRESYNC") {
            failover::clear(engine);
        } else {
            if reply.starts_with("-NOMASTERLINK") || reply.starts_with("-LOADING") {
                log::notice(&format!(
                    "Master is currently unable to PSYNC but should be in the future: {reply}"
                ));
            } else if reply.starts_with("-ERR") {
                log::notice(&format!(
                    "Master does not support PSYNC or is in error state (reply: {reply})"
                ));
            } else {
                log::warning(&format!("Unexpected reply to PSYNC from master: {reply}"));
            }
            failover::abort(engine, "Failover target rejected psync request");
            return Ok(());
        }
    }
    let mut db = r.master_db.load(Ordering::Relaxed).max(0) as usize;
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC") {
        let mut parts = rest.split_whitespace();
        let replid = parts.next().unwrap_or("").to_string();
        let offset: u64 = parts
            .next()
            .and_then(|o| o.parse().ok())
            .ok_or_else(|| format!("Bad +FULLRESYNC reply: '{reply}'"))?;
        log::notice(&format!("Full resync from master: {replid}:{offset}"));
        let rdb = receive_snapshot(engine, &mut link, gen, timeout)?;
        load_snapshot(engine, rdb, gen, &replid, offset)?;
        db = 0;
        log::notice("MASTER <-> REPLICA sync: Finished with success");
    } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        let resume = resume.ok_or("+CONTINUE without a history")?;
        let new_id = rest.trim();
        log::notice("Successful partial resynchronization with master.");
        // Not once this engine was promoted meanwhile: its history is its
        // own then.
        r.apply_from_master(gen, || {
            if !new_id.is_empty() && new_id != resume.replid {
                // The primary's history has a new id (a failover): ours
                // too; our replicas must hear of it.
                r.adopt_id(new_id, resume.offset, true);
                log::notice(&format!("Master replication ID changed to {new_id}"));
                for rep in r.replicas() {
                    rep.info.kill();
                }
            }
            if !r.stream.is_active() {
                r.stream
                    .activate(config.repl_backlog_size().max(1) as usize);
                r.stream.reset(resume.offset);
            }
            *r.resume.lock() = None;
        })
        .ok_or("the primary changed")?;
        log::notice("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
    } else if reply.starts_with("-NOMASTERLINK") || reply.starts_with("-LOADING") {
        return Err(format!(
            "Master is currently unable to PSYNC but should be in the future: {reply}"
        )
        .into());
    } else {
        return Err(format!("Unexpected reply to PSYNC from master: {reply}").into());
    }
    stream(engine, link, gen, db, timeout)
}

/// The file a full synchronization's snapshot is received into: removed
/// when the synchronization fails, however it fails (Redis's
/// replicationAbortSyncTransfer unlinks it); once renamed into place it is
/// gone already.
struct TempRdb {
    path: PathBuf,
}

impl Drop for TempRdb {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Receives the primary's snapshot into a temporary file, synced to disk
/// (Redis's disk-based load, readSyncBulkPayload). The data is untouched
/// until then: a transfer that fails (a full disk, a lost link) leaves
/// it as it was, and the link tries again.
fn receive_snapshot(
    engine: &Arc<Engine>,
    link: &mut Link,
    gen: u64,
    timeout: Duration,
) -> Step<TempRdb> {
    let r = engine.repl();
    let header = link.line(engine, gen, timeout)?;
    if let Some(error) = header.strip_prefix('-') {
        return Err(transfer_failed(format!(
            "MASTER aborted replication with an error: {error}"
        )));
    }
    let Some(header) = header.strip_prefix('$') else {
        return Err(transfer_failed(format!("Bad protocol from MASTER, the first byte is not '$' (we received '{header}'), are you sure the host and port are right?")));
    };
    let mark = header.strip_prefix("EOF:").map(|m| m.as_bytes().to_vec());
    let size: Option<u64> = match &mark {
        Some(m) if m.len() == 40 => None,
        Some(_) => return Err("Bad EOF mark from MASTER".into()),
        None => Some(
            header
                .parse()
                .map_err(|_| format!("Bad bulk length from MASTER: {header}"))?,
        ),
    };
    match size {
        None => log::notice(
            "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to disk",
        ),
        Some(n) => log::notice(&format!(
            "MASTER <-> REPLICA sync: receiving {n} bytes from master to disk"
        )),
    }
    {
        let mut l = r.link.lock();
        l.state = LinkState::Transfer;
        l.transfer_size = size.map_or(0, |n| n as i64);
        l.transfer_read = 0;
        l.transfer_last_io_ms = now_ms();
    }
    let rdb = TempRdb {
        path: PathBuf::from(engine.config().dir()).join(format!(
            "temp-{}.{}.rdb",
            now_ms() / 1000,
            std::process::id()
        )),
    };
    let mut file = std::fs::File::create(&rdb.path).map_err(|e| {
        logged(format!(
            "Opening the temp file needed for MASTER <-> REPLICA synchronization: {}",
            strerror(&e)
        ))
    })?;
    let mut got: u64 = 0;
    let mut tail: Vec<u8> = Vec::new();
    let mut last_io = Instant::now();
    loop {
        if link.pos < link.buf.len() {
            let data = &link.buf[link.pos..];
            let take = match size {
                Some(n) => ((n - got) as usize).min(data.len()),
                None => data.len(),
            };
            let data = &data[..take];
            got += take as u64;
            match &mark {
                None => write_payload(&mut file, data)?,
                Some(m) => {
                    // The last 40 bytes may be the mark: held back.
                    tail.extend_from_slice(data);
                    if tail.len() > 40 {
                        let keep = tail.len() - 40;
                        write_payload(&mut file, &tail[..keep])?;
                        tail.drain(..keep);
                    }
                    if tail.len() == 40 && tail == *m {
                        link.pos += take;
                        break;
                    }
                }
            }
            link.pos += take;
            {
                let mut l = r.link.lock();
                l.transfer_read = got;
                l.transfer_last_io_ms = now_ms();
            }
            last_io = Instant::now();
            if size == Some(got) {
                break;
            }
        }
        if r.master_generation() != gen {
            return Err("the primary changed".into());
        }
        if last_io.elapsed() > timeout {
            return Err(transfer_failed("Timeout receiving bulk data from MASTER... If the problem persists try to set the 'repl-timeout' parameter in redis.conf to a larger value.".into()));
        }
        if let Err(e) = link.fill() {
            return Err(match e {
                Stop::Error(e) => {
                    transfer_failed(format!("I/O error trying to sync with MASTER: {e}"))
                }
                e => e,
            });
        }
    }
    // Redis syncs the file after flushing its data, which a failure here
    // then leaves empty; synced first, the data stays.
    if let Err(e) = file.sync_all() {
        return Err(transfer_failed(format!(
            "Failed trying to sync the temp DB to disk in MASTER <-> REPLICA synchronization: {}",
            strerror(&e)
        )));
    }
    Ok(rdb)
}

/// Writes a piece of the primary's snapshot with one write(2), as Redis
/// does: a short write (a disk that filled up) fails the transfer too.
fn write_payload(file: &mut std::fs::File, data: &[u8]) -> Step<()> {
    let why = match file.write(data) {
        Ok(n) if n == data.len() => return Ok(()),
        Ok(_) => "short write".to_string(),
        Err(e) => strerror(&e),
    };
    Err(transfer_failed(format!(
        "Write error or short write writing to the DB dump file needed for MASTER <-> REPLICA synchronization: {why}"
    )))
}

/// Replaces the data with the snapshot in `rdb` and takes the primary's
/// history, `replid` at `offset`: every shard held (other clients get
/// LOADING), and before or after a change of primary, never across one.
/// The file is kept as dump.rdb.
fn load_snapshot(
    engine: &Arc<Engine>,
    rdb: TempRdb,
    gen: u64,
    replid: &str,
    offset: u64,
) -> Step<()> {
    let r = engine.repl();
    let config = engine.config();
    let p = engine.persist();
    let aof_on = p.aof.is_on();
    let file = std::fs::File::open(&rdb.path).map_err(|e| {
        transfer_failed(format!(
            "Failed trying to load the MASTER synchronization DB from disk: {}",
            strerror(&e)
        ))
    })?;
    let size = file.metadata().ok().map(|m| m.len());
    p.loading.store(true, Ordering::Release);
    // Every shard, then the primary's stream without waiting for it: a
    // REPLICAOF that holds the stream (Replication::hold_master_stream)
    // may be waiting for shards, let go until it is done.
    let (mut locks, stream) = loop {
        let locks = engine.keyspace().lock_all();
        if let Some(stream) = r.try_hold_master_stream() {
            break (locks, stream);
        }
        drop(locks);
        std::thread::sleep(Duration::from_millis(1));
    };
    let loaded = (r.master_generation() == gen).then(|| {
        // Our replicas follow a history that just ended.
        for rep in r.replicas() {
            rep.info.kill();
        }
        log::notice("MASTER <-> REPLICA sync: Flushing old data");
        let now = now_ms();
        for shard in locks.held_mut() {
            for db in shard.dbs.iter_mut() {
                db.touch_all_watched(None, now);
                drop(db.clear());
            }
        }
        engine.scripting().flush_functions();
        // Client-side caching: whatever the replica's clients read is gone.
        engine.tracking_data_replaced();
        log::notice("MASTER <-> REPLICA sync: Loading DB in memory");
        // A replica keeps the keys that expired: its primary sends their
        // DELs.
        let loaded = goblin_engine::persist::load_rdb_stream(
            engine,
            &mut locks,
            goblin_engine::persist::rdb::Input::new(file, size),
            true,
            false,
        );
        if let Err(e) = loaded {
            // Nothing half loaded stays.
            for shard in locks.held_mut() {
                for db in shard.dbs.iter_mut() {
                    drop(db.clear());
                }
            }
            return Err(transfer_failed(format!(
                "Failed trying to load the MASTER synchronization DB from disk: {}",
                e.message
            )));
        }
        // The history and the stream are the primary's from here.
        r.adopt_id(replid, offset, false);
        r.stream
            .activate(config.repl_backlog_size().max(1) as usize);
        r.stream.reset(offset);
        *r.resume.lock() = None;
        Ok(())
    });
    drop(stream);
    drop(locks);
    p.loading.store(false, Ordering::Release);
    loaded.ok_or("the primary changed")??;
    // Redis renames the file into place before it loads it, and gives the
    // synchronization up when that fails; here the data is loaded
    // already, and only the file is lost.
    let dir = config.dir();
    let name = config.dbfilename();
    match std::fs::rename(&rdb.path, goblin_engine::persist::rdb_path(engine)) {
        Err(e) => log::warning(&format!(
            "Failed trying to rename the temp DB into {name} in MASTER <-> REPLICA synchronization: {}",
            strerror(&e)
        )),
        Ok(()) => {
            if let Err(e) = std::fs::File::open(&dir).and_then(|d| d.sync_all()) {
                log::warning(&format!(
                    "Failed trying to sync DB directory {name} in MASTER <-> REPLICA synchronization: {}",
                    strerror(&e)
                ));
            }
        }
    }
    if aof_on {
        // The log must start again from this data (Redis restarts it).
        p.aof_rewrite_scheduled.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// The master client's loop: applies the stream, acknowledges it.
fn stream(
    engine: &Arc<Engine>,
    mut link: Link,
    gen: u64,
    db: usize,
    timeout: Duration,
) -> Step<()> {
    let r = engine.repl();
    let conn = ConnInfo {
        peer: link.tcp.peer_addr().ok(),
        local: link.tcp.local_addr().ok(),
        fd: {
            use std::os::fd::AsRawFd;
            link.tcp.as_raw_fd() as i64
        },
        unix: false,
    };
    let mut session = engine.session(conn);
    session.state.from_master = true;
    session.state.authenticated = true;
    session.state.user = None;
    session.state.db = db;
    let info = session.info().clone();
    info.repl_kind
        .store(goblin_engine::client::repl_kind::MASTER, Ordering::Relaxed);
    {
        let mut l = r.link.lock();
        l.state = LinkState::Up;
        l.client = Some(info.clone());
        l.last_io_ms = now_ms();
        l.down_since_ms = 0;
    }
    // The first acknowledgement puts this replica online at a primary
    // that waits for it (Redis's diskless sync).
    let mut fack = r.stream.offset();
    let applied = r.stream.offset();
    send_ack(
        &mut link,
        applied,
        fsynced_offset(engine, &session, applied, &mut fack),
    )?;
    let mut last_ack = Instant::now();
    let mut last_io = Instant::now();
    let max_bulk = engine.config().proto_max_bulk_len.load(Ordering::Relaxed) as usize;
    let result = loop {
        // Every complete command in the buffer.
        loop {
            let parsed = match parse_command(&link.buf[link.pos..], max_bulk) {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(e) => {
                    return finish(
                        engine,
                        &info,
                        Err(format!("Protocol error from the master: {e}").into()),
                    );
                }
            };
            let start = link.pos;
            let end = start + parsed.len;
            let argv: Vec<&[u8]> = parsed
                .args
                .iter()
                .map(|a| &link.buf[start + a.start..start + a.end])
                .collect();
            if argv.is_empty() {
                link.pos = end;
                continue;
            }
            // An unknown command names none (Redis's lastcmd).
            info.last_cmd.store(usize::MAX, Ordering::Relaxed);
            // The command's bytes go on to this engine's replicas as they
            // came: from inside the call, with its shards held, so that a
            // snapshot for them starts before or after the change and its
            // bytes alike (see Engine::propagate).
            session
                .state
                .master_bytes
                .extend_from_slice(&link.buf[start..end]);
            // CLIENT PAUSE holds the master client too, and a script past
            // busy-reply-threshold (Redis reads nothing from its primary
            // meanwhile).
            while engine.scripting().busy_error().is_some() {
                std::thread::sleep(Duration::from_millis(10));
                if r.master_generation() != gen || info.is_killed() {
                    return finish(engine, &info, Err("the link was closed".into()));
                }
            }
            // Applied whole while this is still the primary to follow, or
            // not at all: REPLICAOF waits for a command being applied,
            // and once it has replied nothing more of this link is.
            loop {
                let applied = r.apply_from_master(gen, || {
                    if info.is_killed() {
                        return None;
                    }
                    if let Flow::Paused = session.execute(&argv) {
                        return Some(false);
                    }
                    if session.out.buf.first() == Some(&b'-') {
                        reply_error(engine, &session);
                    }
                    session.out.buf.clear();
                    session.state.handoff = None;
                    // Bytes of a command that changed nothing (or was
                    // refused), outside a transaction: passed on now.
                    if session.state.multi.is_none() && !session.state.master_bytes.is_empty() {
                        r.stream
                            .append_bytes(&std::mem::take(&mut session.state.master_bytes));
                    }
                    r.master_db
                        .store(session.state.db as i64, Ordering::Relaxed);
                    Some(true)
                });
                match applied.flatten() {
                    Some(true) => break,
                    // Paused: tried again, the lock released meanwhile.
                    Some(false) => std::thread::sleep(Duration::from_millis(10)),
                    None => return finish(engine, &info, Err("the link was closed".into())),
                }
            }
            link.pos = end;
            if r.ack_wanted.swap(false, Ordering::AcqRel) {
                let applied = r.stream.offset() - (end - start) as u64;
                let on_disk = fsynced_offset(engine, &session, applied, &mut fack);
                send_ack(&mut link, applied, on_disk)?;
            }
        }
        if info.is_killed() {
            break Err("the master client was killed".into());
        }
        if r.master_generation() != gen {
            break Ok(());
        }
        if last_ack.elapsed() >= Duration::from_secs(1) {
            let applied = r.stream.offset();
            let on_disk = fsynced_offset(engine, &session, applied, &mut fack);
            if let Err(e) = send_ack(&mut link, applied, on_disk) {
                break Err(e);
            }
            last_ack = Instant::now();
        }
        if last_io.elapsed() > timeout {
            break Err("MASTER timeout: no data nor PING received...".into());
        }
        match link.fill() {
            Ok(true) => {
                last_io = Instant::now();
                r.link.lock().last_io_ms = now_ms();
            }
            Ok(false) => {}
            Err(e) => break Err(e),
        }
    };
    finish(engine, &info, result)
}

/// The link ends: the history stays, to resume with PSYNC.
fn finish(
    engine: &Engine,
    info: &Arc<goblin_engine::client::ClientInfo>,
    result: Step<()>,
) -> Step<()> {
    let r = engine.repl();
    if r.is_replica() {
        *r.resume.lock() = Some(Resume {
            replid: r.ids().replid,
            offset: r.stream.offset(),
        });
    }
    info.kill();
    result
}

/// A command of the primary failed here (Redis's afterErrorReply for the
/// master client): logged, and fatal under propagation-error-behavior
/// panic or panic-on-replicas on a read-only replica, as the data may
/// have diverged.
fn reply_error(engine: &Engine, session: &goblin_engine::Session) {
    let buf = &session.out.buf;
    let end = buf.iter().position(|&b| b == b'\r').unwrap_or(buf.len());
    let text = String::from_utf8_lossy(&buf[1..end.min(4097)]);
    let cmd = match session.info().last_cmd.load(Ordering::Relaxed) {
        usize::MAX => "<unknown>".to_string(),
        id => goblin_engine::command::table().get(id).fullname.clone(),
    };
    log::warning(&format!(
        "== CRITICAL == This replica is sending an error to its master: '{text}' after processing the command '{cmd}'"
    ));
    let config = engine.config();
    let behavior = config.propagation_error_behavior();
    if config.replica_read_only() && behavior != "ignore" {
        log::warning(&format!(
            "This replica panicked sending an error to its master after processing the command '{cmd}'"
        ));
        std::process::abort();
    }
}

/// REPLCONF ACK <offset>, with FACK <offset> (Redis 7.2) when this
/// replica keeps an append-only file: the offset its file has on disk.
fn send_ack(link: &mut Link, offset: u64, fack: Option<u64>) -> Step<()> {
    let offset = offset.to_string();
    match fack {
        None => link.send(&[b"REPLCONF", b"ACK", offset.as_bytes()]),
        Some(f) => {
            let f = f.to_string();
            link.send(&[
                b"REPLCONF",
                b"ACK",
                offset.as_bytes(),
                b"FACK",
                f.as_bytes(),
            ])
        }
    }
}

/// The stream offset this replica's append-only file has on disk, for
/// FACK: `applied` once everything the link applied is (a file under
/// everysec catches up within a second), the last such offset before
/// that; None without the file.
fn fsynced_offset(
    engine: &Engine,
    session: &goblin_engine::Session,
    applied: u64,
    last: &mut u64,
) -> Option<u64> {
    let aof = &engine.persist().aof;
    if !aof.is_on() {
        return None;
    }
    if aof.fsynced() >= session.state.aof_offset {
        *last = applied;
    }
    Some(*last)
}

/// One command of the stream: its length in bytes and its arguments'
/// places in them.
struct Parsed {
    len: usize,
    args: Vec<std::ops::Range<usize>>,
}

/// Parses one RESP command (an array of bulk strings; a primary sends
/// nothing else but newlines) from `buf`: None until it is complete.
fn parse_command(buf: &[u8], max_bulk: usize) -> Result<Option<Parsed>, String> {
    let line = |at: usize| -> Result<Option<(i64, usize)>, String> {
        let Some(i) = buf[at..].iter().position(|&b| b == b'\n') else {
            if buf.len() - at > 64 * 1024 {
                return Err("too big header".into());
            }
            return Ok(None);
        };
        let text = &buf[at + 1..at + i];
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let n = std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            .ok_or("invalid length")?;
        Ok(Some((n, at + i + 1)))
    };
    let mut at = 0;
    // Newlines between commands are keep-alives.
    while at < buf.len() && (buf[at] == b'\n' || buf[at] == b'\r') {
        at += 1;
    }
    if at == buf.len() {
        return Ok(if at == 0 {
            None
        } else {
            Some(Parsed {
                len: at,
                args: Vec::new(),
            })
        });
    }
    if buf[at] != b'*' {
        return Err(format!("expected '*', got '{}'", buf[at] as char));
    }
    let Some((count, next)) = line(at)? else {
        return Ok(None);
    };
    if !(0..=1024 * 1024).contains(&count) {
        return Err("invalid multibulk length".into());
    }
    at = next;
    let mut args = Vec::with_capacity(count as usize);
    for _ in 0..count {
        if at >= buf.len() {
            return Ok(None);
        }
        if buf[at] != b'$' {
            return Err(format!("expected '$', got '{}'", buf[at] as char));
        }
        let Some((len, next)) = line(at)? else {
            return Ok(None);
        };
        if len < 0 || len as usize > max_bulk {
            return Err("invalid bulk length".into());
        }
        let len = len as usize;
        if buf.len() < next + len + 2 {
            return Ok(None);
        }
        args.push(next..next + len);
        at = next + len + 2;
    }
    Ok(Some(Parsed { len: at, args }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_parsed_whole_or_not_at_all() {
        let cmd = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n";
        let p = parse_command(cmd, 1 << 20).unwrap().unwrap();
        assert_eq!(p.len, cmd.len());
        let args: Vec<&[u8]> = p.args.iter().map(|r| &cmd[r.clone()]).collect();
        assert_eq!(args, [b"SET".as_slice(), b"k", b"vv"]);
        for cut in 0..cmd.len() {
            assert!(
                parse_command(&cmd[..cut], 1 << 20).unwrap().is_none(),
                "cut at {cut}"
            );
        }
        // Keep-alive newlines are consumed as an empty command.
        let p = parse_command(b"\n\n", 1 << 20).unwrap().unwrap();
        assert_eq!((p.len, p.args.len()), (2, 0));
        assert!(parse_command(b"+OK\r\n", 1 << 20).is_err());
        assert!(parse_command(b"*1\r\n$99999999\r\n", 1 << 20).is_err());
    }
}
