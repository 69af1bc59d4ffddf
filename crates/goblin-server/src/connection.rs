//! One client connection: read, parse every complete command, execute
//! each, and write all their replies with one write (so a pipeline of N
//! commands costs one read and one write, as in Redis).
//!
//! A `Connection` runs in turns. A turn executes every complete command in
//! the read buffer, checks the limits (the query buffer's, then the output
//! buffer's: past the latter the client is closed without its replies),
//! writes the replies, then waits according to how the commands ended
//! (`Turn`):
//!
//! - `NeedInput`: every complete command ran. The replies go as far as the
//!   socket takes them (after a yield when there were several), and the
//!   connection waits for input, a wake (a kill, Pub/Sub or MONITOR output,
//!   a query buffer resize), the socket to take pending output, or the next
//!   look at the soft output limit;
//! - `Blocked`: a command blocked. The replies before it are written, then
//!   the connection waits for it to be served, unblocked or timed out
//!   (reading and keeping input meanwhile), and writes its reply;
//! - `Paused`: CLIENT PAUSE held a command back. The replies before it are
//!   written, and it is parsed again once the pause ends;
//! - `Close`: a command asked for it (QUIT), or a protocol error, or the
//!   query buffer limit. The replies are written, then the connection
//!   closes.
//!
//! Any wait may end the connection instead (the client went away, was
//! killed, or its socket failed).
//!
//! Plain and TLS clients go through this one loop: the socket is a
//! [`Stream`], which reads and writes either.
//!
//! Limits that keep a hostile client from making the server allocate
//! without bound: proto-max-bulk-len (a declared bulk longer than that is a
//! protocol error), the 64 KiB inline and count-line limits of the parser,
//! and client-query-buffer-limit (a client whose unparsed input exceeds it
//! is disconnected, as Redis does).

use bytes::{Buf, BytesMut};
use goblin_engine::client::{ClientInfo, Handoff};
use goblin_engine::protocol::{Parsed, RequestParser};
use goblin_engine::{ConnInfo, Engine, Flow, Pipeline, Session};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::TcpStream;

use crate::stream::Stream;

mod feed;

/// Read buffer size (Redis's PROTO_IOBUF_LEN).
const IOBUF: usize = 16 * 1024;
/// How often a client past its soft output limit is checked while
/// nothing else wakes its connection.
const SOFT_LIMIT_RECHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// Admits one accepted client (`peer` None: over the unix socket): the
/// connection to serve until it closes, or None when it was refused
/// (while maxclients clients are connected, or by protected mode).
///
/// The admission runs before the connection's task exists, and the task
/// is the connection's `run` alone: a task holds its future for as long
/// as the client stays connected, so nothing else is kept in it.
pub fn serve(
    engine: Arc<Engine>,
    mut stream: Stream,
    peer: Option<SocketAddr>,
) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
    if let Some(tcp) = stream.tcp() {
        let _ = tcp.set_nodelay(true);
        keep_alive(tcp, engine.config().tcp_keepalive());
    }
    let maxclients = engine.config().maxclients() as usize;
    let refusal: &[u8] = if engine.clients().count() >= maxclients {
        b"-ERR max number of clients reached\r\n"
    } else if in_protected_mode(&engine) && peer.is_some_and(|p| !is_loopback(p)) {
        PROTECTED_MODE_DENIED
    } else {
        return Some(Connection::new(engine, stream, peer).run());
    };
    engine
        .stats()
        .rejected_connections
        .fetch_add(1, Ordering::Relaxed);
    // One attempt, as Redis's connWrite: a new socket's send buffer takes
    // the whole refusal.
    let _ = stream.try_write(refusal);
    None
}

/// Redis's refusal of a client from another host in protected mode.
const PROTECTED_MODE_DENIED: &[u8] =
    b"-DENIED Redis is running in protected mode because protected \
mode is enabled and no password is set for the default user. \
In this mode connections are only accepted from the loopback interface. \
If you want to connect from external computers to Redis you \
may adopt one of the following solutions: \
1) Just disable protected mode sending the command \
'CONFIG SET protected-mode no' from the loopback interface \
by connecting to Redis from the same host the server is \
running, however MAKE SURE Redis is not publicly accessible \
from internet if you do so. Use CONFIG REWRITE to make this \
change permanent. \
2) Alternatively you can just disable the protected mode by \
editing the Redis configuration file, and setting the protected \
mode option to 'no', and then restarting the server. \
3) If you started the server manually just for testing, restart \
it with the '--protected-mode no' option. \
4) Setup a an authentication password for the default user. \
NOTE: You only need to do one of the above things in order for \
the server to start accepting connections from the outside.\r\n";

/// Protected mode (Redis's clientAcceptHandler): on, while the default
/// user has no password.
fn in_protected_mode(engine: &Engine) -> bool {
    engine.config().protected_mode() && engine.acl().default_nopass()
}

/// A client of this host, as Redis's islocalClient sees one: from
/// 127.0.0.1 or ::1 exactly.
fn is_loopback(peer: SocketAddr) -> bool {
    match peer.ip() {
        std::net::IpAddr::V4(ip) => ip == std::net::Ipv4Addr::LOCALHOST,
        std::net::IpAddr::V6(ip) => ip == std::net::Ipv6Addr::LOCALHOST,
    }
}

/// TCP keepalive as Redis's anetKeepAlive sets it for tcp-keepalive
/// seconds (0: off): the first probe after `secs` idle, then every third
/// of it, three probes before the peer is dead.
fn keep_alive(stream: &TcpStream, secs: i64) {
    if secs <= 0 {
        return;
    }
    let idle = std::time::Duration::from_secs(secs as u64);
    let every = std::time::Duration::from_secs((secs as u64 / 3).max(1));
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(idle)
        .with_interval(every)
        .with_retries(3);
    let _ = socket2::SockRef::from(stream).set_tcp_keepalive(&keepalive);
}

/// How the commands of a turn ended: what the connection waits for before
/// the next turn.
enum Turn {
    /// Every complete command in the buffer ran (`commands` of them, 0 when
    /// the buffer held none): more input is wanted.
    NeedInput { commands: usize },
    /// A command blocked: later commands stay unprocessed until the wait
    /// ends.
    Blocked,
    /// CLIENT PAUSE held a command back: it did not run, and is parsed
    /// again after the pause.
    Paused,
    /// A command waits for the other ready connections to run first: it
    /// did not run, and is parsed again after a yield to the runtime.
    Yield,
    /// The connection closes once its replies are written: a command asked
    /// for it (QUIT), or a protocol error, or the query buffer limit.
    Close,
    /// A command handed the connection another task (PSYNC: feed a
    /// replica; WAIT: await replicas), taken once the replies are written.
    Handoff,
}

/// The connection is to close: the client went away or was killed, passed
/// a limit, asked to, or its socket failed.
struct Closing;

/// One client's connection and everything it keeps between turns.
///
/// Fields drop in the order they are declared: the session (which gives
/// up a block and subscriptions, and leaves CLIENT LIST and the client
/// count) goes before the socket's descriptor is closed.
pub(crate) struct Connection {
    parser: RequestParser,
    rbuf: BytesMut,
    /// The session's client (CLIENT LIST's entry, the wake of the
    /// connection), kept at hand.
    info: Arc<ClientInfo>,
    session: Session,
    stream: Stream,
    engine: Arc<Engine>,
    /// Bytes of `session.out.buf` already written (a partial write leaves
    /// the rest pending while the client is read from).
    written: usize,
    /// When the output passed the soft limit (0 = it is under).
    soft_since: u64,
    /// The pending output as CLIENT LIST last saw it.
    reported_pending: usize,
}

impl Connection {
    fn new(engine: Arc<Engine>, stream: Stream, peer: Option<SocketAddr>) -> Self {
        let conn = ConnInfo {
            peer,
            local: stream.tcp().and_then(|t| t.local_addr().ok()),
            fd: stream.raw_fd(),
            unix: peer.is_none(),
        };
        let session = engine.session(conn);
        let info = session.info().clone();
        // Both buffers are allocated at the first read and the first reply:
        // a client that sends nothing holds neither.
        let rbuf = BytesMut::new();
        let parser = RequestParser::new(engine.config().proto_max_bulk_len.load(Ordering::Relaxed));
        Connection {
            parser,
            rbuf,
            info,
            session,
            stream,
            engine,
            written: 0,
            soft_since: 0,
            reported_pending: 0,
        }
    }

    /// Runs turns until the connection is to close, then closes it. Each
    /// turn executes every complete command in the buffer, checks the
    /// limits, writes the replies, then waits out a blocking command or a
    /// pause, or waits for more input.
    ///
    /// An `async` block rather than an `async fn`: an async fn's future
    /// holds its argument twice (as received, and as the body's binding),
    /// which would double the connection in its task for all its life.
    #[allow(clippy::manual_async_fn)]
    fn run(mut self) -> impl std::future::Future<Output = ()> + Send + 'static {
        async move {
            loop {
                // CLIENT LIST waits for this part of other clients' turns
                // (goblin_engine::client::await_turns).
                self.info.in_turn.store(true, Ordering::Relaxed);
                let turn = self.run_commands();
                let turn = self.check_query_buffer(turn);
                let checked = self.check_output_buffer();
                self.info.in_turn.store(false, Ordering::Release);
                if checked.is_err() {
                    break;
                }
                if self.write_replies(&turn).await.is_err() {
                    break;
                }
                if self.account_memory().is_err() {
                    break;
                }
                let waited = match turn {
                    Turn::NeedInput { .. } => self.wait_input().await,
                    // The rare waits are boxed: the task keeps the largest of
                    // its futures for as long as the client is connected.
                    Turn::Blocked => Box::pin(self.wait_blocked()).await,
                    Turn::Paused => Box::pin(self.wait_unpaused()).await,
                    Turn::Yield => {
                        tokio::task::yield_now().await;
                        Ok(())
                    }
                    Turn::Handoff => Box::pin(self.take_handoff()).await,
                    // Its replies are written.
                    Turn::Close => break,
                };
                if waited.is_err() {
                    break;
                }
            }
            // Out of CLIENT LIST and the clients' memory before the socket's
            // shutdown is awaited (the session's drop would do it after).
            self.engine.clients().unregister(self.info.id);
            self.info.in_turn.store(false, Ordering::Release);
            let _ = self.stream.shutdown().await;
        }
    }

    /// Executes every complete command in the buffer, then drops the input
    /// they consumed.
    fn run_commands(&mut self) -> Turn {
        let mut commands = 0usize;
        // While its commands run, a client's query buffer holds what was
        // read (CLIENT LIST's qbuf, as Redis trims it after the batch).
        self.info
            .query_buffer
            .store(self.rbuf.len(), Ordering::Relaxed);
        // A large reply past the hard output limit is not even built (see
        // ReplyWriter::limit).
        let hard = self.output_limits()[0].load(Ordering::Relaxed) as usize;
        self.session.out.limit = if hard == 0 { 0 } else { self.written + hard };
        // The commands of one read may keep their shard from one to the
        // next; the pipeline, and with it any shard, is released at the
        // end of this block, before the replies are written.
        let turn = {
            let mut pipeline = Pipeline::default();
            loop {
                let auth_required = self.session.auth_required();
                match self.parser.parse(&self.rbuf, auth_required) {
                    Parsed::Command => {
                        commands += 1;
                        if self.session.out.buf.capacity() == 0 {
                            // The size the cron keeps it at (1 KiB at
                            // first, Redis's PROTO_REPLY_MIN_BYTES).
                            let size = self.info.reply_buffer_target.load(Ordering::Relaxed);
                            self.session.out.buf.reserve_exact(size as usize);
                            // Shown at once (CLIENT LIST waits for this
                            // turn, not for the accounting after it).
                            self.info
                                .reply_buffer_size
                                .store(self.session.out.buf.capacity(), Ordering::Relaxed);
                        }
                        let flow = if self.parser.is_inline() {
                            let argv: Vec<&[u8]> = self
                                .parser
                                .inline_args()
                                .iter()
                                .map(|a| a.as_slice())
                                .collect();
                            self.session.execute_pipelined(&argv, &mut pipeline)
                        } else if self.parser.big_args().is_empty() {
                            with_args(&self.rbuf, self.parser.spans(), |argv| {
                                self.session.execute_pipelined(argv, &mut pipeline)
                            })
                        } else {
                            // Big bulks were received into buffers of their
                            // own, which the command may keep as values.
                            let mut argv = Vec::new();
                            self.parser.argv(&self.rbuf, &mut argv);
                            let lent = self.parser.big_args().iter().map(|(_, b)| b.clone());
                            self.session.execute_lent(&argv, lent, &mut pipeline)
                        };
                        if !matches!(flow, Flow::Paused | Flow::Yield) {
                            self.parser.finish_command();
                        }
                        match flow {
                            Flow::Continue => {}
                            Flow::Close => break Turn::Close,
                            Flow::Handoff => break Turn::Handoff,
                            // Later commands stay unprocessed until the wait ends.
                            Flow::Block => break Turn::Blocked,
                            // Held back by CLIENT PAUSE: parsed again after it.
                            Flow::Paused => {
                                self.parser.rewind();
                                break Turn::Paused;
                            }
                            // Runs on the next turn, after the other ready
                            // connections' (see flag::AFTER_READY).
                            Flow::Yield => {
                                self.parser.rewind();
                                break Turn::Yield;
                            }
                        }
                    }
                    Parsed::Empty => {}
                    Parsed::Incomplete => break Turn::NeedInput { commands },
                    Parsed::Error(e) => {
                        self.session.protocol_error(&e);
                        break Turn::Close;
                    }
                }
            }
        };
        let consumed = self.parser.consumed();
        self.rbuf.advance(consumed);
        self.parser.discard(consumed);
        self.parser.shrink();
        // A big bulk whose header was just read gets its buffer at once, as
        // Redis makes room for the whole bulk when it parses the header:
        // the client's memory shows it from this turn on.
        let _ = self.parser.big_bulk_buffer(&mut self.rbuf);
        if self.rbuf.is_empty() && consumed > 0 {
            // Reuses the whole allocation from its start (no copy: it is
            // empty), so CLIENT LIST reports all of it as free; the cron
            // shrinks it when it is too large for the client's recent use
            // (see resize_query_buffer).
            self.rbuf.reserve(IOBUF);
        }
        turn
    }

    /// client-query-buffer-limit: a client whose unparsed input exceeds it
    /// is closed (after its replies). Reports the query buffer to CLIENT
    /// LIST.
    fn check_query_buffer(&mut self, turn: Turn) -> Turn {
        let limit = self
            .engine
            .config()
            .query_buffer_limit
            .load(Ordering::Relaxed) as usize;
        // A big bulk being received counts, as in Redis's query buffer.
        let unparsed = self.rbuf.len() + self.parser.big_received();
        let turn = if unparsed > limit {
            crate::log::warning(&format!(
                "Closing client that reached max query buffer length: addr={} qbuf={}",
                self.info.addr, unparsed
            ));
            Turn::Close
        } else {
            turn
        };
        self.publish_query_buffer();
        turn
    }

    /// Reports the query buffer to CLIENT LIST and to the client's memory.
    /// While a big bulk is received, qbuf is what its buffer holds (the
    /// read buffer then holds the command's start, up to the bulk), and the
    /// arguments before it count as argv-mem, as Redis has them by then.
    fn publish_query_buffer(&self) {
        let info = &self.info;
        let free = self.rbuf.capacity() - self.rbuf.len();
        if self.parser.receiving_big() {
            let big = self.parser.big_received();
            info.query_buffer.store(big, Ordering::Relaxed);
            let (bytes, argc) = self.parser.partial_args();
            info.set_argv(bytes, argc);
        } else {
            info.query_buffer.store(self.rbuf.len(), Ordering::Relaxed);
        }
        info.query_buffer_free.store(free, Ordering::Relaxed);
        info.query_buffer_alloc.store(
            self.rbuf.capacity() + self.parser.big_capacity(),
            Ordering::Relaxed,
        );
    }

    /// Redis's updateClientMemUsageAndBucket after a client's turn, then its
    /// evictClients: the client's memory is counted (its buffers as they
    /// are now that its replies went out as far as the socket took them),
    /// and clients are evicted while all use more than maxmemory-clients.
    /// The client itself may be the one: its connection closes, its
    /// replies unwritten.
    fn account_memory(&mut self) -> Result<(), Closing> {
        let buf = &self.session.out.buf;
        self.info
            .reply_buffer_size
            .store(buf.capacity(), Ordering::Relaxed);
        let len = buf.len().min(u32::MAX as usize) as u32;
        if len > self.info.reply_buffer_peak.load(Ordering::Relaxed) {
            self.info.reply_buffer_peak.store(len, Ordering::Relaxed);
        }
        self.engine.clients().update_memory(&self.info);
        // used_memory_peak, where a turn's buffers are counted as they
        // now are (a big argument a command kept as its value no longer
        // counts as the client's), as Redis's call() samples it.
        self.engine.note_memory_peak();
        if self.info.is_killed() {
            return Err(Closing);
        }
        Ok(())
    }

    /// Redis's checkClientOutputBufferLimits: a client whose unsent
    /// replies pass its limit is closed without them. Messages for a
    /// subscriber count as soon as they are here.
    fn check_output_buffer(&mut self) -> Result<(), Closing> {
        self.take_output_of_others();
        if self.over_output_limit() {
            // Gone from CLIENT LIST and the clients' memory at once, before
            // its socket is shut down: the limit, not client eviction,
            // frees it.
            self.engine.clients().unregister(self.info.id);
            crate::log::warning(&format!(
                "Client id={} addr={} closed for overcoming of output buffer limits.",
                self.info.id, self.info.addr
            ));
            return Err(Closing);
        }
        Ok(())
    }

    /// Writes the turn's replies: all of them before the connection waits
    /// out a blocking command or a pause, or closes; otherwise what the
    /// socket takes now.
    async fn write_replies(&mut self, turn: &Turn) -> Result<(), Closing> {
        // The most the reply buffer held (CLIENT LIST's rbp, what the
        // cron sizes it from), before it is written out.
        let len = self.session.out.buf.len().min(u32::MAX as usize) as u32;
        if len > self.info.reply_buffer_peak.load(Ordering::Relaxed) {
            self.info.reply_buffer_peak.store(len, Ordering::Relaxed);
        }
        match *turn {
            Turn::Yield => self.flush_some().await.map_err(|_| Closing)?,
            Turn::NeedInput { commands } => {
                // A pipeline's replies wait until the other connections ready
                // on this worker have run theirs (as Redis writes every
                // client's replies at the end of its event loop's turn): the
                // client, woken by the first, then finds the rest already
                // there instead of being woken once per connection. A lone
                // command's reply goes at once.
                if commands > 1 {
                    tokio::task::yield_now().await;
                }
                self.flush_some().await.map_err(|_| Closing)?;
            }
            Turn::Blocked | Turn::Paused | Turn::Handoff => {
                Box::pin(self.flush_all()).await.map_err(|_| Closing)?
            }
            // The connection closes whether this write fails or not; CLIENT
            // LIST's pending output is left as it was.
            Turn::Close => return Box::pin(self.flush_all()).await.map_err(|_| Closing),
        }
        let pending = self.session.out.buf.len() - self.written;
        if pending != self.reported_pending {
            self.info.output_pending.store(pending, Ordering::Relaxed);
            self.reported_pending = pending;
        }
        Ok(())
    }

    /// Waits for input and reads it, or for what calls for a turn though
    /// the client sent nothing: a wake, the socket taking pending output,
    /// the next look at the soft output limit.
    async fn wait_input(&mut self) -> Result<(), Closing> {
        if self.rbuf.len() > self.info.query_buffer_peak.load(Ordering::Relaxed) {
            self.info
                .query_buffer_peak
                .store(self.rbuf.len(), Ordering::Relaxed);
        }
        let pending =
            self.session.out.buf.len() > self.written || self.stream.has_buffered_output();
        // Readiness through the socket's own waker slots (poll_*_ready, as
        // tokio's AsyncRead uses them) rather than readable()/writable(),
        // whose futures carry a waiter each: this wait is in the task of
        // every idle client.
        let stream = &self.stream;
        let readable = std::future::poll_fn(|cx| stream.poll_read_ready(cx));
        let writable = std::future::poll_fn(|cx| stream.poll_write_ready(cx));
        let n = tokio::select! {
            r = readable => {
                if r.is_err() { return Err(Closing) }
                // The buffer grows at the read, not before the wait, so
                // that one the cron released stays released while idle.
                let had_buffer = self.rbuf.capacity() > 0;
                // From the read on, CLIENT LIST waits for this turn
                // (goblin_engine::client::await_turns).
                self.info.in_turn.store(true, Ordering::SeqCst);
                self.reserve_read();
                match self.read_some() {
                    Ok(0) => return Err(Closing),
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        // Nothing came (readiness may be reported before
                        // any data, as for a new connection): a buffer
                        // allocated for this read is not kept for the wait.
                        if !had_buffer && self.rbuf.is_empty() {
                            self.rbuf = BytesMut::new();
                        }
                        return Ok(());
                    }
                    Err(_) => return Err(Closing),
                }
            }
            w = writable, if pending => {
                if w.is_err() { return Err(Closing) }
                return Ok(());
            }
            // Past the soft limit, the limit is looked at again though
            // nothing happens (Redis's clientsCron does). An async block,
            // so that other turns do not even read the clock for it, and
            // the timer boxed, so that it takes no room in the task.
            _ = async { Box::pin(tokio::time::sleep(SOFT_LIMIT_RECHECK)).await }, if self.soft_since != 0 => {
                return Ok(());
            }
            // Killed, asked to resize the query buffer, or output reached
            // the mailbox (Pub/Sub) or the push queue (MONITOR): the next
            // turn's flush writes it, though the client sent nothing.
            _ = self.info.wake.notified() => {
                if self.info.is_killed() { return Err(Closing) }
                if let Some(size) = self.info.take_query_buffer_resize() {
                    self.resize_query_buffer(size);
                    self.release_idle_reply_buffer(size);
                    self.info
                        .query_buffer_free
                        .store(self.rbuf.capacity() - self.rbuf.len(), Ordering::Relaxed);
                }
                self.resize_reply_buffer();
                return Ok(());
            }
        };
        if self.info.is_killed() {
            return Err(Closing);
        }
        self.engine.stats().add_net_input(n);
        self.parser.max_bulk_len = self
            .engine
            .config()
            .proto_max_bulk_len
            .load(Ordering::Relaxed);
        Ok(())
    }

    /// Carries out what the last command handed over: feeding a replica
    /// (until the connection closes), or a reply that waits (WAIT,
    /// WAITAOF, SHUTDOWN; see goblin_engine::engine::wait), resolved by
    /// the engine while the connection watches for the client going away.
    async fn take_handoff(&mut self) -> Result<(), Closing> {
        let Some(handoff) = self.session.state.handoff.take() else {
            return Ok(());
        };
        let wait = match handoff.into_wait() {
            Ok(wait) => wait,
            Err(Handoff::Replica(attach)) => {
                let r = self.serve_replica(attach).await;
                // A feed ends with its connection.
                return r.and(Err(Closing));
            }
            Err(_) => return Ok(()),
        };
        let engine = self.engine.clone();
        let resolved = {
            let resolve = engine.resolve_wait(&wait);
            tokio::pin!(resolve);
            loop {
                tokio::select! {
                    resolved = &mut resolve => break resolved,
                    _ = self.info.wake.notified() => {
                        if self.info.is_killed() {
                            return Err(Closing);
                        }
                    }
                    r = self.stream.read_buf(&mut self.rbuf) => match r {
                        Ok(0) | Err(_) => return Err(Closing),
                        Ok(n) => self.engine.stats().add_net_input(n),
                    },
                }
            }
        };
        resolved.write(&mut self.session.out);
        self.flush_all().await.map_err(|_| Closing)
    }

    /// Waits while CLIENT PAUSE holds the client's command back, or until
    /// the client is killed.
    async fn wait_unpaused(&mut self) -> Result<(), Closing> {
        self.engine.pause().waiting.fetch_add(1, Ordering::Relaxed);
        let gone = tokio::select! {
            _ = self.engine.pause().wait() => false,
            _ = self.info.wake.notified() => self.info.is_killed(),
        };
        self.engine.pause().waiting.fetch_sub(1, Ordering::Relaxed);
        if gone {
            return Err(Closing);
        }
        Ok(())
    }

    /// Waits while the session is blocked (see goblin_engine::blocking):
    /// until it is served or unblocked, its deadline passes, or the client
    /// goes away. Input keeps being read (and kept) meanwhile, as Redis
    /// keeps reading a blocked client's socket, so a disconnect is noticed
    /// at once. Then writes the reply. When the connection closes instead,
    /// dropping the session gives up the wait.
    async fn wait_blocked(&mut self) -> Result<(), Closing> {
        if let Some(entry) = self.session.blocked().cloned() {
            // A deadline too far to represent is as good as none.
            let deadline = entry
                .time_left()
                .and_then(|left| tokio::time::Instant::now().checked_add(left));
            loop {
                if self.rbuf.capacity() - self.rbuf.len() < IOBUF / 2 {
                    self.rbuf.reserve(IOBUF);
                }
                tokio::select! {
                    _ = entry.resolved() => break,
                    _ = async {
                        match deadline {
                            Some(d) => tokio::time::sleep_until(d).await,
                            None => std::future::pending().await,
                        }
                    } => break,
                    _ = self.info.wake.notified() => {
                        if self.info.is_killed() {
                            return Err(Closing);
                        }
                        // A RESP3 client may block while it subscribes: its
                        // messages keep flowing meanwhile.
                        self.flush_all().await.map_err(|_| Closing)?;
                    }
                    r = self.stream.read_buf(&mut self.rbuf) => match r {
                        Ok(0) | Err(_) => return Err(Closing),
                        Ok(n) => {
                            self.engine.stats().add_net_input(n);
                            let limit = &self.engine.config().query_buffer_limit;
                            if self.rbuf.len() > limit.load(Ordering::Relaxed) as usize {
                                return Err(Closing);
                            }
                            self.publish_query_buffer();
                            self.engine.clients().update_memory(&self.info);
                            if self.info.is_killed() {
                                return Err(Closing);
                            }
                        }
                    },
                }
            }
            // Served, unblocked or timed out.
            self.session.finish_block();
        }
        // The reply is in `out`; what the client sent meanwhile is
        // processed on the next turn.
        self.flush_all().await.map_err(|_| Closing)
    }

    /// Reads what the socket has into `rbuf` (see Stream::try_read_buf).
    ///
    /// While a big bulk is being received (see goblin_engine's
    /// protocol::parser::BIG_ARG), the read goes to its own buffer, and
    /// takes no more than the bulk still needs.
    fn read_some(&mut self) -> std::io::Result<usize> {
        let read = self.read_into_buffers();
        if !matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock) {
            // INFO's total_reads_processed.
            self.engine.stats().add_read();
        }
        read
    }

    fn read_into_buffers(&mut self) -> std::io::Result<usize> {
        match self.parser.big_bulk_buffer(&mut self.rbuf) {
            Some((big, missing)) => {
                let size = big.capacity();
                let read = self.stream.try_read_buf(big, missing);
                if matches!(read, Ok(n) if n == missing) {
                    // Another big argument is likely to follow, as Redis
                    // assumes when it gives the client a new query buffer
                    // of the bulk's size (here at most 1 MiB); the cron
                    // shrinks it when it is not.
                    self.rbuf.reserve(size.min(1 << 20));
                }
                read
            }
            None => {
                let room = self.rbuf.capacity() - self.rbuf.len();
                self.stream.try_read_buf(&mut self.rbuf, room)
            }
        }
    }

    /// Makes room for the next read, sized to the bulk being received when
    /// known.
    fn reserve_read(&mut self) {
        if self.rbuf.capacity() - self.rbuf.len() < IOBUF / 2 {
            // A big bulk is read into a buffer of its own.
            let want = self
                .parser
                .pending_bulk()
                .filter(|&n| n < goblin_engine::protocol::parser::BIG_ARG)
                .map_or(IOBUF, |n| (n + 2).clamp(IOBUF, 1 << 20));
            self.rbuf.reserve(want);
        }
    }

    /// Redis's clientsCronResizeQueryBuffer, asked for by the cron: an idle
    /// client's empty buffer is released (`size` 0), a buffer much larger
    /// than the client's recent peak shrinks to that peak (never below what
    /// it holds or the bulk being received).
    fn resize_query_buffer(&mut self, size: usize) {
        let target = size
            .max(self.rbuf.len())
            .max(self.parser.pending_bulk().map_or(0, |n| n + 2));
        if target >= self.rbuf.capacity() {
            return;
        }
        let mut fresh = BytesMut::with_capacity(target);
        fresh.extend_from_slice(&self.rbuf);
        self.rbuf = fresh;
    }

    /// The cron found the client idle (`size` 0, see resize_query_buffer):
    /// its reply buffer goes too, when nothing in it waits to be written,
    /// as Redis's clientsCronResizeOutputBuffer shrinks an idle client's.
    fn release_idle_reply_buffer(&mut self, size: usize) {
        // DEBUG REPLYBUFFER RESIZING 0 keeps it.
        let resizing = self.engine.reply_buffer_resizing.load(Ordering::Relaxed);
        if resizing && size == 0 && self.written == 0 && self.session.out.buf.is_empty() {
            self.session.out.buf = Vec::new();
        }
    }

    /// Carries out the cron's new reply buffer size (ClientInfo::
    /// cron_reply_buffer) while nothing waits in the buffer; a released
    /// buffer stays released until the next reply.
    fn resize_reply_buffer(&mut self) {
        let target = self.info.reply_buffer_target.load(Ordering::Relaxed) as usize;
        let buf = &mut self.session.out.buf;
        if buf.is_empty() && self.written == 0 && buf.capacity() != 0 && buf.capacity() != target {
            *buf = Vec::with_capacity(target);
            self.info
                .reply_buffer_size
                .store(buf.capacity(), Ordering::Relaxed);
            self.engine.clients().update_memory(&self.info);
        }
    }

    /// Before replies leave, their writes must have reached the append-only
    /// file: on disk (synced) under appendfsync always, handed to the kernel
    /// otherwise, as Redis writes its AOF buffer before it sends replies.
    /// When the log fails instead, no reply leaves: the held replies may
    /// say OK for a write that is not in the file, so the connection
    /// closes (the client sees its writes unacknowledged, as when Redis
    /// exits on such an error) and later writes get MISCONF.
    async fn await_log(&self) -> std::io::Result<()> {
        self.engine
            .await_written(self.session.state.aof_offset, false)
            .await
            .map_err(|e| std::io::Error::other(e.misconf()))
    }

    /// The replies were all written: the buffer is reused, back at the
    /// size the cron keeps it at when a large reply grew it (what Redis
    /// puts in its reply list beyond its fixed buffer).
    fn written_out(&mut self) {
        self.written = 0;
        self.session.out.buf.clear();
        let target = self.info.reply_buffer_target.load(Ordering::Relaxed) as usize;
        if self.session.out.buf.capacity() > target {
            self.session.out.buf = Vec::with_capacity(target);
        }
    }

    /// Writes what the socket takes now of the pending replies; the rest
    /// stays pending (the connection waits for the socket to be writable
    /// while it keeps reading, as Redis does).
    async fn flush_some(&mut self) -> std::io::Result<()> {
        self.take_output_of_others();
        self.check_not_over_limit()?;
        if self.session.out.buf.len() == self.written {
            return self.stream.send_buffered();
        }
        self.await_log().await?;
        // INFO's total_writes_processed.
        self.engine.stats().add_write();
        loop {
            match self.stream.try_write(&self.session.out.buf[self.written..]) {
                Ok(n) => {
                    self.engine.stats().add_net_output(n);
                    self.written += n;
                    if self.written == self.session.out.buf.len() {
                        self.written_out();
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes every pending reply, waiting for the socket.
    async fn flush_all(&mut self) -> std::io::Result<()> {
        self.take_output_of_others();
        self.check_not_over_limit()?;
        if self.session.out.buf.len() == self.written {
            return self.stream.write_all(&[]).await;
        }
        self.await_log().await?;
        let out = &self.session.out.buf[self.written..];
        self.engine.stats().add_net_output(out.len());
        self.engine.stats().add_write();
        if !self.session.state.subscribed() {
            self.stream.write_all(out).await?;
        } else {
            // A subscriber that does not read holds this write forever: a
            // kill (its output limit, CLIENT KILL) ends it.
            let info = &self.info;
            let write = self.stream.write_all(out);
            tokio::pin!(write);
            loop {
                tokio::select! {
                    r = &mut write => {
                        r?;
                        break;
                    }
                    _ = info.wake.notified() => {
                        if info.is_killed() {
                            return Err(std::io::Error::other("client killed"));
                        }
                    }
                }
            }
            // A wake for messages may have been taken above: keep it for the
            // connection's next wait.
            if info.mailbox.has_pending() {
                info.wake.notify_one();
            }
        }
        self.written_out();
        Ok(())
    }

    /// A reply that was not built for the hard output limit (see
    /// ReplyWriter::limit) leaves the output incomplete: it is never
    /// written, the client is closed (a blocked command served past the
    /// limit ends here).
    fn check_not_over_limit(&self) -> std::io::Result<()> {
        if self.session.out.over_limit {
            crate::log::warning(&format!(
                "Client id={} addr={} closed for overcoming of output buffer limits.",
                self.info.id, self.info.addr
            ));
            return Err(std::io::Error::other("output buffer limit"));
        }
        Ok(())
    }

    /// Appends what other clients produced for this one since the last
    /// flush: Pub/Sub messages (after the replies, as they arrived later)
    /// and MONITOR lines.
    #[inline]
    fn take_output_of_others(&mut self) {
        self.session.deliver_pushes();
        self.info.take_pushed(&mut self.session.out.buf);
    }

    /// The output buffer limits of the client's class: hard, soft, soft
    /// seconds.
    fn output_limits(&self) -> &[std::sync::atomic::AtomicU64; 3] {
        if self.session.state.subscribed() {
            &self.engine.config().obuf_pubsub
        } else {
            &self.engine.config().obuf_normal
        }
    }

    /// Redis's checkClientOutputBufferLimits for a normal client or a
    /// Pub/Sub subscriber, by its class's limits (messages that wait in a
    /// mailbox while the connection is busy are checked as they arrive, see
    /// goblin_engine::pubsub): more than 1024 bytes for a client that must
    /// still authenticate, or past the hard limit, or past the soft limit
    /// for longer than its seconds. All the output not written counts
    /// (Redis counts its reply list, rounded up to allocation sizes).
    fn over_output_limit(&mut self) -> bool {
        let pending = self.session.out.buf.len() - self.written;
        if pending == 0 && !self.session.out.over_limit {
            self.soft_since = 0;
            return false;
        }
        let used = pending as u64;
        if used > 1024 && self.session.auth_required() {
            return true;
        }
        if self.session.out.over_limit {
            return true;
        }
        let [hard, soft, secs] = self.output_limits();
        let (hard, soft) = (hard.load(Ordering::Relaxed), soft.load(Ordering::Relaxed));
        if hard != 0 && used >= hard {
            return true;
        }
        if soft != 0 && used >= soft {
            let now = goblin_engine::util::time::now_ms() / 1000;
            if self.soft_since == 0 {
                self.soft_since = now;
            } else if now - self.soft_since > secs.load(Ordering::Relaxed) {
                return true;
            }
        } else {
            self.soft_since = 0;
        }
        false
    }
}

/// Calls `f` with the arguments located by `spans`, on the stack when
/// there are few (the common case), so a command costs no allocation here.
fn with_args<R>(buf: &[u8], spans: &[std::ops::Range<usize>], f: impl FnOnce(&[&[u8]]) -> R) -> R {
    const STACK: usize = 16;
    if spans.len() <= STACK {
        // Only the slots in use are written (this runs once per command).
        let mut argv = [const { std::mem::MaybeUninit::<&[u8]>::uninit() }; STACK];
        for (slot, r) in argv.iter_mut().zip(spans) {
            slot.write(&buf[r.clone()]);
        }
        // SAFETY: the first spans.len() slots were written just above.
        let argv =
            unsafe { std::slice::from_raw_parts(argv.as_ptr() as *const &[u8], spans.len()) };
        f(argv)
    } else {
        let argv: Vec<&[u8]> = spans.iter().map(|r| &buf[r.clone()]).collect();
        f(&argv)
    }
}
