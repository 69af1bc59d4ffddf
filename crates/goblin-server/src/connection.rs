//! One client connection: read, parse every complete command, execute
//! each, and write all their replies with one write (so a pipeline of N
//! commands costs one read and one write, as in Redis).
//!
//! Limits that keep a hostile client from making the server allocate
//! without bound: proto-max-bulk-len (a declared bulk longer than that is a
//! protocol error), the 64 KiB inline and count-line limits of the parser,
//! and client-query-buffer-limit (a client whose unparsed input exceeds it
//! is disconnected, as Redis does).

use bytes::{Buf, BytesMut};
use goblin_engine::protocol::{Parsed, RequestParser};
use goblin_engine::{ConnInfo, Engine, Flow, Pipeline};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Read buffer size (Redis's PROTO_IOBUF_LEN).
const IOBUF: usize = 16 * 1024;
/// A client's reply buffer from the start (Redis's PROTO_REPLY_CHUNK_BYTES,
/// its clients' static reply buffer): ordinary replies never grow it, so
/// they do not move used_memory.
const REPLY_CHUNK: usize = 16 * 1024;
/// Reply buffers larger than this are released once drained, so idle
/// clients hold little memory.
const KEEP_CAPACITY: usize = 64 * 1024;
/// How often a client past its soft output limit is checked while
/// nothing else wakes its connection.
const SOFT_LIMIT_RECHECK: std::time::Duration = std::time::Duration::from_millis(100);

pub async fn serve(engine: Arc<Engine>, mut stream: TcpStream, peer: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let maxclients = engine.config.get_i64("maxclients") as usize;
    if engine.clients.count() >= maxclients {
        engine
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        let _ = stream
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        return;
    }
    let conn = ConnInfo {
        peer: Some(peer),
        local: stream.local_addr().ok(),
        fd: stream.as_raw_fd() as i64,
    };
    let mut session = engine.session(conn);
    session.out.buf.reserve(REPLY_CHUNK);
    let info = session.info().clone();
    let mut rbuf = BytesMut::with_capacity(IOBUF);
    let mut parser = RequestParser::new(engine.config.proto_max_bulk_len.load(Ordering::Relaxed));
    let mut close = false;
    // Bytes of `session.out.buf` already written (a partial write leaves
    // the rest pending while the client is read from).
    let mut written = 0usize;
    // When the output passed the soft limit (0 = it is under).
    let mut soft_since = 0u64;
    // The pending output as CLIENT LIST last saw it.
    let mut reported_pending = 0usize;

    // Each turn: execute every complete command in the buffer, write their
    // replies, then either wait out a blocking command or read more input.
    loop {
        let mut blocked = false;
        let mut paused = false;
        let mut commands = 0usize;
        // While its commands run, a client's query buffer holds what was
        // read (CLIENT LIST's qbuf, as Redis trims it after the batch).
        info.query_buffer.store(rbuf.len(), Ordering::Relaxed);
        // The commands of one read may keep their shard from one to the
        // next; the pipeline, and with it any shard, is released at the
        // end of this block, before the replies are written.
        {
            let mut pipeline = Pipeline::default();
            loop {
                let auth_required = session.auth_required();
                match parser.parse(&rbuf, auth_required) {
                    Parsed::Command => {
                        commands += 1;
                        let flow = if parser.is_inline() {
                            let argv: Vec<&[u8]> =
                                parser.inline_args().iter().map(|a| a.as_slice()).collect();
                            session.execute_pipelined(&argv, &mut pipeline)
                        } else {
                            with_args(&rbuf, parser.spans(), |argv| {
                                session.execute_pipelined(argv, &mut pipeline)
                            })
                        };
                        match flow {
                            Flow::Continue => {}
                            Flow::Close => {
                                close = true;
                                break;
                            }
                            // Later commands stay unprocessed until the wait ends.
                            Flow::Block => {
                                blocked = true;
                                break;
                            }
                            // Held back by CLIENT PAUSE: parsed again after it.
                            Flow::Paused => {
                                parser.rewind();
                                paused = true;
                                break;
                            }
                        }
                    }
                    Parsed::Empty => {}
                    Parsed::Incomplete => break,
                    Parsed::Error(e) => {
                        session.out.error(&format!("ERR {e}"));
                        close = true;
                        break;
                    }
                }
            }
        }
        let consumed = parser.consumed();
        rbuf.advance(consumed);
        parser.discard(consumed);
        parser.shrink();
        if rbuf.is_empty() && consumed > 0 {
            // Reuses the whole allocation from its start (no copy: it is
            // empty), so CLIENT LIST reports all of it as free; the cron
            // shrinks it when it is too large for the client's recent use
            // (see resize_query_buffer).
            rbuf.reserve(IOBUF);
        }

        let limit = engine.config.query_buffer_limit.load(Ordering::Relaxed) as usize;
        if rbuf.len() > limit {
            crate::log::warning(&format!(
                "Closing client that reached max query buffer length: addr={peer} qbuf={}",
                rbuf.len()
            ));
            close = true;
        }
        info.query_buffer.store(rbuf.len(), Ordering::Relaxed);
        info.query_buffer_free
            .store(rbuf.capacity() - rbuf.len(), Ordering::Relaxed);

        // Redis's checkClientOutputBufferLimits: a client whose unsent
        // replies pass its limit is closed without them. Messages for a
        // subscriber count as soon as they are here.
        take_output_of_others(&mut session);
        if over_output_limit(&engine, &session, written, &mut soft_since) {
            crate::log::warning(&format!(
                "Client id={} addr={peer} closed for overcoming of output buffer limits.",
                info.id
            ));
            break;
        }
        if close || blocked || paused {
            if flush_all(&engine, &mut stream, &mut session, &mut written)
                .await
                .is_err()
                || close
            {
                break;
            }
        } else {
            // A pipeline's replies wait until the other connections ready
            // on this worker have run theirs (as Redis writes every
            // client's replies at the end of its event loop's turn): the
            // client, woken by the first, then finds the rest already
            // there instead of being woken once per connection. A lone
            // command's reply goes at once.
            if commands > 1 {
                tokio::task::yield_now().await;
            }
            if flush_some(&engine, &mut stream, &mut session, &mut written)
                .await
                .is_err()
            {
                break;
            }
        }
        let pending = session.out.buf.len() - written;
        if pending != reported_pending {
            info.output_pending.store(pending, Ordering::Relaxed);
            reported_pending = pending;
        }

        if blocked {
            match wait_blocked(&engine, &mut stream, &mut session, &mut rbuf, &mut written).await {
                // The reply is in `out`; what the client sent meanwhile is
                // processed on the next turn.
                Wait::Done => {
                    if flush_all(&engine, &mut stream, &mut session, &mut written)
                        .await
                        .is_err()
                    {
                        break;
                    }
                    continue;
                }
                // Dropping the session gives up the wait.
                Wait::Gone => break,
            }
        }

        if paused {
            engine.pause.waiting.fetch_add(1, Ordering::Relaxed);
            let gone = tokio::select! {
                _ = engine.pause.wait() => false,
                _ = info.wake.notified() => info.is_killed(),
            };
            engine.pause.waiting.fetch_sub(1, Ordering::Relaxed);
            if gone {
                break;
            }
            continue;
        }

        if rbuf.len() > info.query_buffer_peak.load(Ordering::Relaxed) {
            info.query_buffer_peak.store(rbuf.len(), Ordering::Relaxed);
        }
        let pending = session.out.buf.len() > written;
        let n = tokio::select! {
            r = stream.readable() => {
                if r.is_err() { break }
                // The buffer grows at the read, not before the wait, so
                // that one the cron released stays released while idle.
                reserve_read(&parser, &mut rbuf);
                match read_some(&stream, &mut rbuf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(_) => break,
                }
            }
            w = stream.writable(), if pending => {
                if w.is_err() { break }
                continue;
            }
            // Past the soft limit, the limit is looked at again though
            // nothing happens (Redis's clientsCron does). An async block,
            // so that other turns do not even read the clock for it.
            _ = async { tokio::time::sleep(SOFT_LIMIT_RECHECK).await }, if soft_since != 0 => continue,
            // Killed, asked to resize the query buffer, or output reached
            // the mailbox (Pub/Sub) or the push queue (MONITOR): the next
            // turn's flush writes it, though the client sent nothing.
            _ = info.wake.notified() => {
                if info.is_killed() { break }
                if let Some(size) = info.take_query_buffer_resize() {
                    resize_query_buffer(&mut rbuf, size, &parser);
                    info.query_buffer_free
                        .store(rbuf.capacity() - rbuf.len(), Ordering::Relaxed);
                }
                continue;
            }
        };
        if info.is_killed() {
            break;
        }
        engine.stats.add_net_input(n);
        parser.max_bulk_len = engine.config.proto_max_bulk_len.load(Ordering::Relaxed);
    }
    // The client leaves CLIENT LIST, INFO and its subscriptions before its
    // peer sees the connection end, as Redis's freeClient unlinks a client
    // before it closes the socket.
    drop(session);
    let _ = stream.shutdown().await;
}

/// Reads what the socket has into `rbuf`. A read that returns less than
/// the room it was given has drained the socket, so the socket is marked
/// not readable (as tokio's own `AsyncRead` does): the next wait goes
/// straight to the event loop instead of first trying a read that would
/// only say EAGAIN. Data arriving meanwhile is a new event, and the mark
/// is only cleared if no event came since the read.
fn read_some(stream: &TcpStream, rbuf: &mut BytesMut) -> std::io::Result<usize> {
    let room = rbuf.capacity() - rbuf.len();
    let mut got = 0;
    let r = stream.try_io(tokio::io::Interest::READABLE, || {
        got = stream.try_read_buf(rbuf)?;
        if got > 0 && got < room {
            Err(std::io::ErrorKind::WouldBlock.into())
        } else {
            Ok(got)
        }
    });
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && got > 0 => Ok(got),
        r => r,
    }
}

/// Makes room for the next read, sized to the bulk being received when known.
fn reserve_read(parser: &RequestParser, rbuf: &mut BytesMut) {
    if rbuf.capacity() - rbuf.len() < IOBUF / 2 {
        let want = parser
            .pending_bulk()
            .map_or(IOBUF, |n| (n + 2).clamp(IOBUF, 1 << 20));
        rbuf.reserve(want);
    }
}

/// Before replies leave, their writes must have reached the append-only
/// file: on disk (synced) under appendfsync always, handed to the kernel
/// otherwise, as Redis writes its AOF buffer before it sends replies.
async fn await_log(engine: &Engine, session: &goblin_engine::Session) {
    let logged = session.state.aof_offset;
    let aof = &engine.persist.aof;
    if logged > aof.synced() {
        if aof.policy() == goblin_engine::persist::aof::Fsync::Always {
            aof.wait_synced(logged).await;
        } else {
            aof.write_through(logged);
        }
    }
}

/// The replies were all written: the buffer is reused (released when it
/// grew large).
fn written_out(session: &mut goblin_engine::Session, written: &mut usize) {
    *written = 0;
    session.out.buf.clear();
    if session.out.buf.capacity() > KEEP_CAPACITY {
        session.out.buf = Vec::with_capacity(REPLY_CHUNK);
    }
}

/// Writes what the socket takes now of the pending replies; the rest
/// stays pending (the loop waits for the socket to be writable while it
/// keeps reading, as Redis does).
async fn flush_some(
    engine: &Engine,
    stream: &mut TcpStream,
    session: &mut goblin_engine::Session,
    written: &mut usize,
) -> std::io::Result<()> {
    take_output_of_others(session);
    if session.out.buf.len() == *written {
        return Ok(());
    }
    await_log(engine, session).await;
    loop {
        match stream.try_write(&session.out.buf[*written..]) {
            Ok(n) => {
                engine.stats.add_net_output(n);
                *written += n;
                if *written == session.out.buf.len() {
                    written_out(session, written);
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// Writes every pending reply, waiting for the socket.
async fn flush_all(
    engine: &Engine,
    stream: &mut TcpStream,
    session: &mut goblin_engine::Session,
    written: &mut usize,
) -> std::io::Result<()> {
    take_output_of_others(session);
    if session.out.buf.len() == *written {
        return Ok(());
    }
    await_log(engine, session).await;
    let out = &session.out.buf[*written..];
    engine.stats.add_net_output(out.len());
    if !session.state.subscribed() {
        stream.write_all(out).await?;
    } else {
        // A subscriber that does not read holds this write forever: a
        // kill (its output limit, CLIENT KILL) ends it.
        let info = session.info().clone();
        let write = stream.write_all(out);
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
    written_out(session, written);
    Ok(())
}

/// Appends what other clients produced for this one since the last
/// flush: Pub/Sub messages (after the replies, as they arrived later) and
/// MONITOR lines.
#[inline]
fn take_output_of_others(session: &mut goblin_engine::Session) {
    session.deliver_pushes();
    session.state.info.take_pushed(&mut session.out.buf);
}

/// Redis's checkClientOutputBufferLimits for a normal client or a Pub/Sub
/// subscriber, by its class's limits (messages that wait in a mailbox
/// while the connection is busy are checked as they arrive, see
/// goblin_engine::pubsub): more than 1024 bytes for a client that must
/// still authenticate, or past the hard limit, or past the soft limit for
/// longer than its seconds. All the output not written counts (Redis
/// counts its reply list, rounded up to allocation sizes).
fn over_output_limit(
    engine: &Engine,
    session: &goblin_engine::Session,
    written: usize,
    soft_since: &mut u64,
) -> bool {
    let pending = session.out.buf.len() - written;
    if pending == 0 {
        *soft_since = 0;
        return false;
    }
    let used = pending as u64;
    if used > 1024 && session.auth_required() {
        return true;
    }
    let [hard, soft, secs] = if session.state.subscribed() {
        &engine.config.obuf_pubsub
    } else {
        &engine.config.obuf_normal
    };
    let (hard, soft) = (hard.load(Ordering::Relaxed), soft.load(Ordering::Relaxed));
    if hard != 0 && used >= hard {
        return true;
    }
    if soft != 0 && used >= soft {
        let now = goblin_engine::util::time::now_ms() / 1000;
        if *soft_since == 0 {
            *soft_since = now;
        } else if now - *soft_since > secs.load(Ordering::Relaxed) {
            return true;
        }
    } else {
        *soft_since = 0;
    }
    false
}

/// Redis's clientsCronResizeQueryBuffer, asked for by the cron: an idle
/// client's empty buffer is released (`size` 0), a buffer much larger than
/// the client's recent peak shrinks to that peak (never below what it
/// holds or the bulk being received).
fn resize_query_buffer(rbuf: &mut BytesMut, size: usize, parser: &RequestParser) {
    let target = size
        .max(rbuf.len())
        .max(parser.pending_bulk().map_or(0, |n| n + 2));
    if target >= rbuf.capacity() {
        return;
    }
    let mut fresh = BytesMut::with_capacity(target);
    fresh.extend_from_slice(rbuf);
    *rbuf = fresh;
}

enum Wait {
    /// Served, unblocked or timed out: the reply is in the session's output.
    Done,
    /// The client disconnected or was killed.
    Gone,
}

/// Waits while the session is blocked (see goblin_engine::blocking): until
/// it is served or unblocked, its deadline passes, or the client goes away.
/// Input keeps being read (and kept) meanwhile, as Redis keeps reading a
/// blocked client's socket, so a disconnect is noticed at once.
async fn wait_blocked(
    engine: &Engine,
    stream: &mut TcpStream,
    session: &mut goblin_engine::Session,
    rbuf: &mut BytesMut,
    written: &mut usize,
) -> Wait {
    let Some(entry) = session.blocked().cloned() else {
        return Wait::Done;
    };
    let info = session.info().clone();
    // A deadline too far to represent is as good as none.
    let deadline = entry
        .time_left()
        .and_then(|left| tokio::time::Instant::now().checked_add(left));
    loop {
        if rbuf.capacity() - rbuf.len() < IOBUF / 2 {
            rbuf.reserve(IOBUF);
        }
        tokio::select! {
            _ = entry.resolved() => break,
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            } => break,
            _ = info.wake.notified() => {
                if info.is_killed() {
                    return Wait::Gone;
                }
                // A RESP3 client may block while it subscribes: its
                // messages keep flowing meanwhile.
                if flush_all(engine, stream, session, written).await.is_err() {
                    return Wait::Gone;
                }
            }
            r = stream.read_buf(rbuf) => match r {
                Ok(0) | Err(_) => return Wait::Gone,
                Ok(n) => {
                    engine.stats.add_net_input(n);
                    let limit = engine.config.query_buffer_limit.load(Ordering::Relaxed) as usize;
                    if rbuf.len() > limit {
                        return Wait::Gone;
                    }
                    info.query_buffer.store(rbuf.len(), Ordering::Relaxed);
                }
            },
        }
    }
    session.finish_block();
    Wait::Done
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
