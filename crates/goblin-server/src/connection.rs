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
use goblin_engine::{ConnInfo, Engine, Flow};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Read buffer size (Redis's PROTO_IOBUF_LEN).
const IOBUF: usize = 16 * 1024;
/// Buffers larger than this are released once drained, so idle clients
/// hold little memory.
const KEEP_CAPACITY: usize = 64 * 1024;

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
    let info = session.info().clone();
    let mut rbuf = BytesMut::with_capacity(IOBUF);
    let mut parser = RequestParser::new(engine.config.proto_max_bulk_len.load(Ordering::Relaxed));
    let mut close = false;

    while !close {
        if rbuf.capacity() - rbuf.len() < IOBUF / 2 {
            // Size the next read to the bulk being received, when known.
            let want = parser
                .pending_bulk()
                .map_or(IOBUF, |n| (n + 2).clamp(IOBUF, 1 << 20));
            rbuf.reserve(want);
        }
        let n = tokio::select! {
            r = stream.read_buf(&mut rbuf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            _ = info.wake.notified() => {
                if info.is_killed() { break }
                continue;
            }
        };
        if info.is_killed() {
            break;
        }
        engine
            .stats
            .net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
        parser.max_bulk_len = engine.config.proto_max_bulk_len.load(Ordering::Relaxed);

        // Execute every complete command in the buffer.
        loop {
            let auth_required = !session.state.authenticated;
            match parser.parse(&rbuf, auth_required) {
                Parsed::Command => {
                    let flow = if parser.is_inline() {
                        let argv: Vec<&[u8]> =
                            parser.inline_args().iter().map(|a| a.as_slice()).collect();
                        session.execute(&argv)
                    } else {
                        with_args(&rbuf, parser.spans(), |argv| session.execute(argv))
                    };
                    if flow == Flow::Close {
                        close = true;
                        break;
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
        let consumed = parser.consumed();
        rbuf.advance(consumed);
        parser.discard(consumed);

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

        if !session.out.is_empty() {
            // No reply before its writes reached the append-only file:
            // on disk (synced) under appendfsync always, handed to the
            // kernel otherwise, as Redis writes its AOF buffer before it
            // sends replies.
            let logged = session.state.aof_offset;
            let aof = &engine.persist.aof;
            if logged > aof.synced() {
                if aof.policy() == goblin_engine::persist::aof::Fsync::Always {
                    aof.wait_synced(logged).await;
                } else {
                    aof.write_through(logged);
                }
            }
            let out = &session.out.buf;
            engine
                .stats
                .net_output_bytes
                .fetch_add(out.len() as u64, Ordering::Relaxed);
            if stream.write_all(out).await.is_err() {
                break;
            }
            session.out.buf.clear();
            if session.out.buf.capacity() > KEEP_CAPACITY {
                session.out.buf = Vec::new();
            }
        }
        if rbuf.is_empty() && rbuf.capacity() > KEEP_CAPACITY {
            rbuf = BytesMut::with_capacity(IOBUF);
        }
    }
    let _ = stream.shutdown().await;
}

/// Calls `f` with the arguments located by `spans`, on the stack when
/// there are few (the common case), so a command costs no allocation here.
fn with_args<R>(buf: &[u8], spans: &[std::ops::Range<usize>], f: impl FnOnce(&[&[u8]]) -> R) -> R {
    const STACK: usize = 16;
    if spans.len() <= STACK {
        let mut argv: [&[u8]; STACK] = [&[]; STACK];
        for (slot, r) in argv.iter_mut().zip(spans) {
            *slot = &buf[r.clone()];
        }
        f(&argv[..spans.len()])
    } else {
        let argv: Vec<&[u8]> = spans.iter().map(|r| &buf[r.clone()]).collect();
        f(&argv)
    }
}
