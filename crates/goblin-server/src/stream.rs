//! A client's socket, plain TCP, TLS or unix, behind the readiness-based calls the
//! connection loop makes (wait until readable, read what is there, wait
//! until writable, write what the socket takes), so that one loop serves
//! both, as Redis's connection type does for its TCP and TLS connections.
//!
//! A TLS stream drives a rustls `ServerConnection` over the TCP socket
//! after the handshake (done by tokio-rustls). Decrypted bytes rustls
//! still holds make the stream readable without waiting on the socket
//! (Redis's tlsProcessPendingData); encrypted bytes the socket has not
//! taken yet are output still to send (`has_buffered_output`).

use bytes::BytesMut;
use std::io::{self, Read, Write};
use std::task::{Context, Poll};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

/// `Stream::try_read_buf` on a tokio TCP or unix socket (the same calls on
/// two types without a common trait).
macro_rules! read_draining {
    ($stream:expr, $buf:expr, $max:expr) => {{
        let (stream, buf, max) = ($stream, $buf, $max);
        let room = (buf.capacity() - buf.len()).min(max);
        let mut dst = bytes::BufMut::limit(&mut *buf, max);
        let mut got = 0;
        let r = stream.try_io(tokio::io::Interest::READABLE, || {
            got = stream.try_read_buf(&mut dst)?;
            if got > 0 && got < room {
                Err(io::ErrorKind::WouldBlock.into())
            } else {
                Ok(got)
            }
        });
        match r {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && got > 0 => Ok(got),
            r => r,
        }
    }};
}

pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
    /// A client of the unix socket (`unixsocket`).
    Unix(UnixStream),
}

pub struct TlsStream {
    tcp: TcpStream,
    tls: rustls::ServerConnection,
    /// rustls may hold decrypted input: the next read looks there before
    /// waiting on the socket.
    buffered_input: bool,
}

/// The TCP socket as rustls's `Read` / `Write`, without blocking: an
/// empty socket or a full one is `WouldBlock` (and clears tokio's
/// readiness, so that the next wait is a real one).
struct Socket<'a>(&'a TcpStream);

impl Read for Socket<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for Socket<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TlsStream {
    /// A stream over a connection whose handshake is done (rustls may
    /// already hold input the client sent right after it).
    pub fn new(tcp: TcpStream, tls: rustls::ServerConnection) -> TlsStream {
        TlsStream {
            tcp,
            tls,
            buffered_input: true,
        }
    }

    /// Sends what rustls has encrypted, as far as the socket takes it.
    fn send_buffered(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            self.tls.write_tls(&mut Socket(&self.tcp))?;
        }
        Ok(())
    }

    /// Reads into `buf`, at most `max` bytes. The room handed to rustls is
    /// zeroed first, so it is bounded (a TLS record holds 16 KiB at most)
    /// however large the buffer's spare capacity is.
    fn try_read_buf(&mut self, buf: &mut BytesMut, max: usize) -> io::Result<usize> {
        const READ_AT_MOST: usize = 64 * 1024;
        if buf.capacity() == buf.len() {
            buf.reserve(16 * 1024);
        }
        let start = buf.len();
        let room = (buf.capacity() - start).min(max).min(READ_AT_MOST);
        buf.resize(start + room, 0);
        let r = self.read_into(&mut buf[start..]);
        buf.truncate(start + *r.as_ref().unwrap_or(&0));
        r
    }

    fn read_into(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.buffered_input {
                match self.tls.reader().read(out) {
                    // Also the client's close_notify: the end of input.
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.buffered_input = false,
                    Err(e) => return Err(e),
                }
            }
            if self.tls.read_tls(&mut Socket(&self.tcp))? == 0 {
                return Ok(0);
            }
            let processed = self.tls.process_new_packets();
            // Alerts, handshake messages and key updates rustls wants to
            // send go at once.
            match self.send_buffered() {
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                _ => {}
            }
            let state = processed.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            self.buffered_input = state.plaintext_bytes_to_read() > 0 || state.peer_has_closed();
        }
    }

    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // What was encrypted before goes first.
        self.send_buffered()?;
        let n = self.tls.writer().write(buf)?;
        if n == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        match self.send_buffered() {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
            _ => Ok(n),
        }
    }

    /// Waits until everything encrypted has gone to the socket.
    async fn drain(&mut self) -> io::Result<()> {
        loop {
            match self.send_buffered() {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.tcp.writable().await?,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Stream {
    /// The TCP socket under the stream (None for a unix socket).
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Stream::Plain(s) => Some(s),
            Stream::Tls(t) => Some(&t.tcp),
            Stream::Unix(_) => None,
        }
    }

    /// The socket's file descriptor (CLIENT LIST's fd).
    pub fn raw_fd(&self) -> i64 {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Plain(s) => s.as_raw_fd() as i64,
            Stream::Tls(t) => t.tcp.as_raw_fd() as i64,
            Stream::Unix(s) => s.as_raw_fd() as i64,
        }
    }

    /// Waits until a read may find input (it may still find none: then it
    /// says WouldBlock).
    pub async fn readable(&self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.readable().await,
            Stream::Unix(s) => s.readable().await,
            Stream::Tls(t) if t.buffered_input => Ok(()),
            Stream::Tls(t) => t.tcp.readable().await,
        }
    }

    /// Waits until the socket takes output.
    pub async fn writable(&self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.writable().await,
            Stream::Tls(t) => t.tcp.writable().await,
            Stream::Unix(s) => s.writable().await,
        }
    }

    /// Readiness to read through the socket's own waker slot (as tokio's
    /// AsyncRead uses it) rather than `readable()`, whose future carries a
    /// waiter: this wait is in the task of every idle client. A TLS stream
    /// with decrypted input at hand is ready at once.
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Plain(s) => s.poll_read_ready(cx),
            Stream::Unix(s) => s.poll_read_ready(cx),
            Stream::Tls(t) if t.buffered_input => Poll::Ready(Ok(())),
            Stream::Tls(t) => t.tcp.poll_read_ready(cx),
        }
    }

    /// Readiness to write, as `poll_read_ready`.
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Plain(s) => s.poll_write_ready(cx),
            Stream::Tls(t) => t.tcp.poll_write_ready(cx),
            Stream::Unix(s) => s.poll_write_ready(cx),
        }
    }

    /// Reads what is there into `buf`, at most `max` bytes, without
    /// waiting: Ok(0) at the end of input, WouldBlock when there is nothing
    /// yet. On a plain socket, a read that returns less than the room it
    /// was given has drained the socket, so the socket is marked not
    /// readable (as tokio's own `AsyncRead` does): the next wait goes
    /// straight to the event loop instead of first trying a read that would
    /// only say EAGAIN. Data arriving meanwhile is a new event, and the mark
    /// is only cleared if no event came since the read.
    pub fn try_read_buf(&mut self, buf: &mut BytesMut, max: usize) -> io::Result<usize> {
        match self {
            Stream::Plain(stream) => read_draining!(stream, buf, max),
            Stream::Unix(stream) => read_draining!(stream, buf, max),
            Stream::Tls(t) => t.try_read_buf(buf, max),
        }
    }

    /// Reads into `buf`, waiting for input (cancel-safe).
    pub async fn read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read_buf(buf).await,
            Stream::Unix(s) => s.read_buf(buf).await,
            Stream::Tls(t) => loop {
                if t.buffered_input {
                    match t.try_read_buf(buf, usize::MAX) {
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        r => return r,
                    }
                }
                t.tcp.readable().await?;
                t.buffered_input = true;
            },
        }
    }

    /// Writes what the socket takes now of `buf`, without waiting
    /// (WouldBlock when it takes nothing).
    pub fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.try_write(buf),
            Stream::Unix(s) => s.try_write(buf),
            Stream::Tls(t) => t.try_write(buf),
        }
    }

    /// Whether output accepted by `try_write` still waits to go to the
    /// socket (encrypted TLS records).
    pub fn has_buffered_output(&self) -> bool {
        match self {
            Stream::Plain(_) | Stream::Unix(_) => false,
            Stream::Tls(t) => t.tls.wants_write(),
        }
    }

    /// Sends buffered output as far as the socket takes it now.
    pub fn send_buffered(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(_) | Stream::Unix(_) => Ok(()),
            Stream::Tls(t) => match t.send_buffered() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                r => r,
            },
        }
    }

    /// Writes all of `buf` and any buffered output, waiting for the socket.
    pub async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
            Stream::Tls(t) => {
                let mut at = 0;
                while at < buf.len() {
                    match t.try_write(&buf[at..]) {
                        Ok(n) => at += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => t.tcp.writable().await?,
                        Err(e) => return Err(e),
                    }
                }
                t.drain().await
            }
        }
    }

    /// Closes the writing side: a TLS stream says close_notify first (as
    /// far as the socket takes it; a client that reads nothing does not
    /// hold the close).
    pub async fn shutdown(&mut self) {
        match self {
            Stream::Plain(s) => {
                let _ = s.shutdown().await;
            }
            Stream::Unix(s) => {
                let _ = s.shutdown().await;
            }
            Stream::Tls(t) => {
                t.tls.send_close_notify();
                let _ = t.send_buffered();
                let _ = t.tcp.shutdown().await;
            }
        }
    }
}
