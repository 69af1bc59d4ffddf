//! A connection that sent PSYNC or SYNC, from then on: it feeds a replica
//! (Redis's replica client). A full synchronization first waits for its
//! snapshot and sends it (from dump.rdb, or as the snapshot is written);
//! then, or at once after +CONTINUE, the connection sends the replication
//! stream from the replica's offset, and reads what the replica says
//! (REPLCONF ACK).
//!
//! The stream is the engine's (`goblin_engine::repl::backlog`): the
//! connection copies its next bytes out and writes them, woken whenever
//! the stream grows. A replica further behind than the replica class's
//! hard output limit (or past the soft one for its seconds) is dropped, as
//! Redis drops it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use goblin_engine::repl::{state, Attach, Replica, SyncStart, Transfer};
use goblin_engine::util::time::now_ms;
use goblin_engine::Flow;

use super::{Closing, Connection};

/// Bytes of the stream written in one go.
const CHUNK: usize = 256 * 1024;

/// Takes the replica out of the engine's list, whatever ends the feed.
struct Registered<'a> {
    engine: &'a goblin_engine::Engine,
    replica: Arc<Replica>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.engine.repl().remove_replica(&self.replica);
        goblin_engine::log::notice(&format!(
            "Connection with replica {} lost.",
            replica_name(&self.replica)
        ));
    }
}

fn replica_name(r: &Replica) -> String {
    format!("{}:{}", r.ip(), r.conf.listening_port)
}

impl Connection {
    /// Feeds the replica `attach` describes until the connection closes.
    pub(super) async fn serve_replica(&mut self, attach: Attach) -> Result<(), Closing> {
        let engine = self.engine.clone();
        let _registered = Registered {
            engine: &engine,
            replica: attach.replica.clone(),
        };
        let rep = attach.replica;
        // +CONTINUE, when it continues.
        self.flush_all().await.map_err(|_| Closing)?;
        if attach.continue_from.is_none() {
            let start = self.wait_sync_start(&rep).await?;
            let diskless = !matches!(start.transfer, Transfer::Disk { .. });
            let acks = rep.acks.load(Ordering::Acquire);
            self.send_snapshot(&rep, start).await?;
            if rep.conf.rdb_only {
                goblin_engine::log::notice(&format!(
                    "Synchronization with replica {} succeeded (RDB only)",
                    replica_name(&rep)
                ));
                return Err(Closing);
            }
            rep.ack_ms.store(now_ms(), Ordering::Relaxed);
            rep.state.store(state::ONLINE, Ordering::Release);
            if diskless {
                goblin_engine::log::notice(&format!(
                    "Streamed RDB transfer with replica {} succeeded (socket). Waiting for REPLCONF ACK from replica to enable streaming",
                    replica_name(&rep)
                ));
                self.wait_first_ack(&rep, acks).await?;
            }
            engine
                .repl()
                .refresh_good(engine.config().min_replicas_max_lag());
            goblin_engine::log::notice(&format!(
                "Synchronization with replica {} succeeded",
                replica_name(&rep)
            ));
        }
        self.stream_to(&rep).await
    }

    /// Waits for the full synchronization to start (sending a newline a
    /// second meanwhile, as Redis keeps the link alive).
    async fn wait_sync_start(&mut self, rep: &Arc<Replica>) -> Result<SyncStart, Closing> {
        let engine = self.engine.clone();
        let mut last_newline = now_ms();
        loop {
            if let Some(s) = rep.start.lock().take() {
                return Ok(s);
            }
            if rep.failed.load(Ordering::Acquire) || self.info.is_killed() {
                return Err(Closing);
            }
            // A diskless sync waiting for its delay is started by the cron;
            // one that can start now starts here.
            goblin_engine::repl::sync::start_pending(&engine);
            if rep.start.lock().is_some() {
                continue;
            }
            tokio::select! {
                _ = self.info.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    self.keepalive(&mut last_newline).await?;
                }
                r = self.stream.readable() => {
                    r.map_err(|_| Closing)?;
                    self.read_replica_input()?;
                }
            }
        }
    }

    /// Waits for the replica's first REPLCONF ACK after a diskless
    /// transfer (Redis's repl_start_cmd_stream_on_ack).
    async fn wait_first_ack(&mut self, rep: &Arc<Replica>, before: u64) -> Result<(), Closing> {
        let timeout = self.engine.config().repl_timeout().max(1) as u64 * 1000;
        let since = now_ms();
        while rep.acks.load(Ordering::Acquire) == before {
            if self.info.is_killed() || now_ms().saturating_sub(since) > timeout {
                return Err(Closing);
            }
            tokio::select! {
                _ = self.info.wake.notified() => {}
                r = self.stream.readable() => {
                    r.map_err(|_| Closing)?;
                    self.read_replica_input()?;
                }
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
        Ok(())
    }

    /// A newline, once a second, while the replica waits.
    async fn keepalive(&mut self, last: &mut u64) -> Result<(), Closing> {
        let now = now_ms();
        if now.saturating_sub(*last) >= 1000 {
            *last = now;
            self.write_counted(b"\n").await?;
        }
        Ok(())
    }

    /// Sends the snapshot: the +FULLRESYNC line (not to SYNC), then the
    /// file or the diskless transfer.
    async fn send_snapshot(&mut self, rep: &Arc<Replica>, start: SyncStart) -> Result<(), Closing> {
        if !rep.old_protocol {
            let line = format!("+FULLRESYNC {} {}\r\n", start.replid, start.offset);
            self.write_counted(line.as_bytes()).await?;
        }
        match start.transfer {
            Transfer::Socket { mark, mut chunks } => {
                let mut head = b"$EOF:".to_vec();
                head.extend_from_slice(&mark);
                head.extend_from_slice(b"\r\n");
                self.write_counted(&head).await?;
                // The stream grows meanwhile, held for this replica: its
                // output limits apply already (Redis checks a replica
                // waiting for its snapshot too).
                let mut soft_since = 0;
                loop {
                    let chunk = tokio::select! {
                        c = chunks.recv() => c,
                        _ = self.info.wake.notified() => {
                            if self.info.is_killed() {
                                return Err(Closing);
                            }
                            self.check_lag(rep, &mut soft_since)?;
                            continue;
                        }
                        // A replica that goes away while the snapshot is
                        // slow to come is let go at once (what it sends
                        // meanwhile is kept for the stream's loop).
                        r = self.stream.read_buf(&mut self.rbuf) => match r {
                            Ok(0) | Err(_) => return Err(Closing),
                            Ok(_) => continue,
                        },
                    };
                    match chunk {
                        Some(Ok(b)) if b.is_empty() => break,
                        Some(Ok(b)) => self.write_counted(&b).await?,
                        _ => return Err(Closing),
                    }
                }
                self.write_counted(&mark).await?;
            }
            Transfer::Inline(bytes) => {
                let mark = goblin_engine::repl::random_id().into_bytes();
                let mut out = b"$EOF:".to_vec();
                out.extend_from_slice(&mark);
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(&bytes);
                out.extend_from_slice(&mark);
                self.write_counted(&out).await?;
            }
            Transfer::Disk { mut done } => {
                let mut last_newline = now_ms();
                let mut soft_since = 0;
                loop {
                    if let Some(ok) = *done.borrow() {
                        if !ok {
                            return Err(Closing);
                        }
                        break;
                    }
                    tokio::select! {
                        r = done.changed() => if r.is_err() { return Err(Closing) },
                        _ = tokio::time::sleep(Duration::from_millis(100)) => {
                            self.keepalive(&mut last_newline).await?
                        }
                        _ = self.info.wake.notified() => {
                            if self.info.is_killed() {
                                return Err(Closing);
                            }
                            self.check_lag(rep, &mut soft_since)?;
                        }
                    }
                }
                rep.state.store(state::SEND_BULK, Ordering::Release);
                let path = goblin_engine::persist::rdb_path(&self.engine);
                // Reads of a file just written come from the page cache: a
                // chunk at a time, on this thread.
                let mut file = std::fs::File::open(&path).map_err(|e| {
                    goblin_engine::log::warning(&format!(
                        "SYNC failed. Can't open/stat DB after BGSAVE: {e}"
                    ));
                    Closing
                })?;
                let len = file.metadata().map_err(|_| Closing)?.len();
                self.write_counted(format!("${len}\r\n").as_bytes()).await?;
                use std::io::Read;
                let mut buf = vec![0u8; CHUNK];
                let mut left = len;
                while left > 0 {
                    let n = file.read(&mut buf).map_err(|_| Closing)?;
                    if n == 0 {
                        return Err(Closing);
                    }
                    let n = n.min(left as usize);
                    self.write_counted(&buf[..n]).await?;
                    left -= n as u64;
                }
            }
        }
        Ok(())
    }

    /// Follows the stream from the replica's offset.
    async fn stream_to(&mut self, rep: &Arc<Replica>) -> Result<(), Closing> {
        let engine = self.engine.clone();
        let mut buf = Vec::with_capacity(CHUNK);
        let mut soft_since = 0u64;
        loop {
            if self.info.is_killed() {
                return Err(Closing);
            }
            self.check_lag(rep, &mut soft_since)?;
            buf.clear();
            let n = engine
                .repl()
                .stream
                .read(&rep.reader, &mut buf, CHUNK)
                .map_err(|_| Closing)?;
            if n > 0 {
                self.write_counted(&buf).await?;
                self.read_replica_input()?;
                continue;
            }
            let timeout = engine.config().repl_timeout().max(1) as u64 * 1000;
            tokio::select! {
                _ = self.info.wake.notified() => {}
                r = self.stream.readable() => {
                    r.map_err(|_| Closing)?;
                    self.read_replica_input()?;
                }
                _ = tokio::time::sleep(Duration::from_millis(1000)) => {
                    // Redis's replicationCron: a replica silent past
                    // repl-timeout is dropped.
                    let last = rep.ack_ms.load(Ordering::Relaxed);
                    if now_ms().saturating_sub(last) > timeout {
                        goblin_engine::log::warning(&format!(
                            "Disconnecting timedout replica (streaming sync): {}",
                            replica_name(rep)
                        ));
                        return Err(Closing);
                    }
                }
            }
        }
    }

    /// The replica class's output limits, on how far behind it is.
    fn check_lag(&self, rep: &Replica, soft_since: &mut u64) -> Result<(), Closing> {
        let engine = &self.engine;
        let behind = engine.repl().stream.lag_of(&rep.reader);
        let [hard, soft, secs] = &engine.config().obuf_replica;
        let (hard, soft) = (hard.load(Ordering::Relaxed), soft.load(Ordering::Relaxed));
        // A hard limit under repl-backlog-size counts as that size: the
        // backlog's bytes are held anyway (Redis's
        // checkClientOutputBufferLimits).
        let backlog = engine.config().repl_backlog_size().max(0) as u64;
        let hard = if hard != 0 { hard.max(backlog) } else { 0 };
        let over = if hard != 0 && behind >= hard {
            true
        } else if soft != 0 && behind >= soft {
            let now = now_ms() / 1000;
            if *soft_since == 0 {
                *soft_since = now;
                false
            } else {
                now - *soft_since > secs.load(Ordering::Relaxed)
            }
        } else {
            *soft_since = 0;
            false
        };
        if over {
            goblin_engine::log::warning(&format!(
                "Client id={} addr={} laddr={} fd={} name= flags=S closed for overcoming of output buffer limits.",
                self.info.id, self.info.addr, self.info.laddr, self.info.fd
            ));
            return Err(Closing);
        }
        Ok(())
    }

    /// Writes bytes to the replica (counted as replication output).
    async fn write_counted(&mut self, bytes: &[u8]) -> Result<(), Closing> {
        self.engine.stats().add_net_output(bytes.len());
        let info = self.info.clone();
        let write = self.stream.write_all(bytes);
        tokio::pin!(write);
        loop {
            tokio::select! {
                r = &mut write => return r.map_err(|_| Closing),
                _ = info.wake.notified() => {
                    if info.is_killed() {
                        return Err(Closing);
                    }
                }
            }
        }
    }

    /// Logs a reply that was about to go to a replica, as Redis does
    /// before it drops the replica.
    fn replied_to_replica(&self) {
        let cmd = match self.info.last_cmd.load(Ordering::Relaxed) {
            usize::MAX => "<unknown>".to_string(),
            id => goblin_engine::command::table().get(id).fullname.clone(),
        };
        let buf = &self.session.out.buf;
        if buf.first() == Some(&b'-') {
            let end = buf.iter().position(|&b| b == b'\r').unwrap_or(buf.len());
            goblin_engine::log::warning(&format!(
                "== CRITICAL == This master is sending an error to its replica: '{}' after processing the command '{cmd}'",
                String::from_utf8_lossy(&buf[1..end])
            ));
        }
        goblin_engine::log::warning(&format!(
            "Replica generated a reply to command '{cmd}', disconnecting it: {}",
            self.info
                .line(now_ms(), self.engine.clients().command_names())
        ));
    }

    /// Reads what the replica sent (REPLCONF ACK, newlines) and runs it;
    /// a replica is sent no replies.
    fn read_replica_input(&mut self) -> Result<(), Closing> {
        loop {
            if self.rbuf.capacity() - self.rbuf.len() < 1024 {
                self.rbuf.reserve(4096);
            }
            match self.stream.try_read_buf(&mut self.rbuf, 64 * 1024) {
                Ok(0) => return Err(Closing),
                Ok(n) => self.engine.stats().add_net_input(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => return Err(Closing),
            }
        }
        loop {
            match self.parser.parse(&self.rbuf, false) {
                goblin_engine::protocol::Parsed::Command => {
                    self.info.last_cmd.store(usize::MAX, Ordering::Relaxed);
                    let flow = if self.parser.is_inline() {
                        let argv: Vec<&[u8]> = self
                            .parser
                            .inline_args()
                            .iter()
                            .map(|a| a.as_slice())
                            .collect();
                        self.session.execute(&argv)
                    } else {
                        let mut argv = Vec::new();
                        self.parser.argv(&self.rbuf, &mut argv);
                        self.session.execute(&argv)
                    };
                    self.parser.finish_command();
                    if matches!(flow, Flow::Close) {
                        return Err(Closing);
                    }
                    // A replica is answered nothing: a command of its that
                    // produced a reply ends the link (Redis's
                    // prepareClientToWrite for a replica).
                    if !self.session.out.buf.is_empty() {
                        self.replied_to_replica();
                        return Err(Closing);
                    }
                }
                goblin_engine::protocol::Parsed::Empty => {}
                goblin_engine::protocol::Parsed::Incomplete => break,
                goblin_engine::protocol::Parsed::Error(_) => return Err(Closing),
            }
        }
        let consumed = self.parser.consumed();
        bytes::Buf::advance(&mut self.rbuf, consumed);
        self.parser.discard(consumed);
        // Nothing is answered to a replica.
        self.session.out.buf.clear();
        Ok(())
    }
}
