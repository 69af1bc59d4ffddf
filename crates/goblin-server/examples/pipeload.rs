//! A lean pipelined load generator: redis-benchmark's model (clients that
//! each send a pipeline of the same command, with `__rand_int__` replaced by
//! a random 12-digit number, and wait for its replies) at a fraction of its
//! CPU cost per request. redis-benchmark builds a reply object for every
//! reply and records every latency; this only counts the replies, so on a
//! machine where the load generator and the server share the cores, more of
//! them is left to the server.
//!
//!     cargo run --release --example pipeload -- --port 6379 --clients 50 \
//!         --requests 1000000 --pipeline 16 --keyspace 100000 -- INCR key:__rand_int__
//!
//! With `--threads N` the connections are spread over N threads, for a
//! server whose threads one load thread cannot keep busy.
//!
//! Prints `requests per second: N` (what scripts/bench reads). It speaks
//! RESP2 and works against goblin-server and redis-server alike; with
//! `--tracking`, each connection first turns client-side caching on (HELLO
//! 3, CLIENT TRACKING ON) and reads RESP3. With `--latency-log PATH` it
//! writes one line per pipeline sent, `<sent, microseconds since the Unix
//! epoch> <microseconds until its last reply>`, so that a caller can tell
//! the latencies of the requests sent while something else happened (a
//! snapshot) from the others. An error
//! reply stops it with that error: a benchmark of failing calls measures
//! nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PLACEHOLDER: &[u8] = b"__rand_int__";

struct Options {
    port: u16,
    clients: usize,
    requests: usize,
    pipeline: usize,
    keyspace: u64,
    /// Each connection turns client-side caching on first (HELLO 3, then
    /// CLIENT TRACKING ON): the reads are remembered for invalidation.
    tracking: bool,
    /// Where to write each pipeline's send time and latency.
    latency_log: Option<String>,
    /// Threads the connections are spread over (1: one, as redis-benchmark
    /// runs by default).
    threads: usize,
    command: Vec<Vec<u8>>,
}

fn options() -> Options {
    let mut o = Options {
        port: 6379,
        clients: 50,
        requests: 100_000,
        pipeline: 1,
        keyspace: 100_000,
        tracking: false,
        latency_log: None,
        threads: 1,
        command: Vec::new(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--" {
            o.command = args[i + 1..]
                .iter()
                .map(|a| a.as_bytes().to_vec())
                .collect();
            break;
        }
        if args[i] == "--tracking" {
            o.tracking = true;
            i += 1;
            continue;
        }
        let value = args.get(i + 1).unwrap_or_else(|| usage(&args[i]));
        if args[i] == "--latency-log" {
            o.latency_log = Some(value.clone());
            i += 2;
            continue;
        }
        let number = || value.parse::<u64>().unwrap_or_else(|_| usage(value));
        match args[i].as_str() {
            "--port" => o.port = u16::try_from(number()).unwrap_or_else(|_| usage(value)),
            "--clients" => o.clients = number() as usize,
            "--requests" => o.requests = number() as usize,
            "--pipeline" => o.pipeline = number() as usize,
            "--keyspace" => o.keyspace = number(),
            "--threads" => o.threads = number() as usize,
            other => usage(other),
        }
        i += 2;
    }
    if o.command.is_empty()
        || o.clients == 0
        || o.pipeline == 0
        || o.keyspace == 0
        || o.threads == 0
    {
        usage("(a command after --, and counts above zero)");
    }
    o
}

fn usage(bad: &str) -> ! {
    eprintln!(
        "bad argument {bad}\nusage: pipeload [--port P] [--clients N] [--requests N] \
         [--pipeline N] [--keyspace N] [--threads N] [--tracking] [--latency-log PATH] \
         -- COMMAND [ARG...]"
    );
    std::process::exit(2)
}

/// One pipeline of the command, encoded once, and where in it the random
/// numbers go (each placeholder gets its own, as in redis-benchmark).
struct Batch {
    bytes: Vec<u8>,
    random_at: Vec<usize>,
}

impl Batch {
    fn new(command: &[Vec<u8>], pipeline: usize) -> Batch {
        let mut b = Batch {
            bytes: Vec::new(),
            random_at: Vec::new(),
        };
        for _ in 0..pipeline {
            b.bytes
                .extend_from_slice(format!("*{}\r\n", command.len()).as_bytes());
            for arg in command {
                b.bytes
                    .extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                let start = b.bytes.len();
                b.bytes.extend_from_slice(arg);
                let mut from = 0;
                while let Some(p) = find(&arg[from..], PLACEHOLDER) {
                    b.random_at.push(start + from + p);
                    from += p + PLACEHOLDER.len();
                }
                b.bytes.extend_from_slice(b"\r\n");
            }
        }
        b
    }

    fn randomize(&mut self, rng: &mut fastrand::Rng, keyspace: u64) {
        for &at in &self.random_at {
            let mut n = rng.u64(..keyspace);
            for d in self.bytes[at..at + PLACEHOLDER.len()].iter_mut().rev() {
                *d = b'0' + (n % 10) as u8;
                n /= 10;
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The end of the RESP2 (or RESP3) reply that starts at `at`, or None while it is
/// incomplete. An error reply is returned as Err with its text.
fn reply_end(buf: &[u8], at: usize) -> Result<Option<usize>, String> {
    let Some(&kind) = buf.get(at) else {
        return Ok(None);
    };
    let Some(nl) = memchr(b'\n', &buf[at..]) else {
        return Ok(None);
    };
    let line_end = at + nl + 1;
    // The line without its type byte and "\r\n"; empty, not out of
    // bounds, when a server ends a line with a bare "\n".
    let header = &buf[at + 1..(line_end - 2).max(at + 1)];
    let count = || -> Result<i64, String> {
        std::str::from_utf8(header)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad reply header {:?}", String::from_utf8_lossy(header)))
    };
    // RESP3 (after HELLO 3): aggregates of n elements, maps of n pairs,
    // and the one-line types.
    let aggregate = |n: i64| -> Result<Option<usize>, String> {
        let mut end = line_end;
        for _ in 0..n.max(0) {
            match reply_end(buf, end)? {
                Some(e) => end = e,
                None => return Ok(None),
            }
        }
        Ok(Some(end))
    };
    match kind {
        b'+' | b':' | b'_' | b'#' | b',' | b'(' => Ok(Some(line_end)),
        b'%' => aggregate(count()? * 2),
        b'~' | b'>' => aggregate(count()?),
        b'-' => Err(String::from_utf8_lossy(header).into_owned()),
        b'$' => {
            let n = count()?;
            if n < 0 {
                return Ok(Some(line_end));
            }
            let end = line_end + n as usize + 2;
            Ok((end <= buf.len()).then_some(end))
        }
        b'*' => {
            let n = count()?;
            let mut end = line_end;
            for _ in 0..n.max(0) {
                match reply_end(buf, end)? {
                    Some(e) => end = e,
                    None => return Ok(None),
                }
            }
            Ok(Some(end))
        }
        other => Err(format!("unexpected reply type {:?}", other as char)),
    }
}

fn memchr(byte: u8, s: &[u8]) -> Option<usize> {
    s.iter().position(|&b| b == byte)
}

/// A pipeline's send time (microseconds since the Unix epoch) and the
/// microseconds until its last reply.
type Sample = (u64, u64);

async fn client(
    o: Arc<Options>,
    remaining: Arc<AtomicUsize>,
    seed: u64,
) -> Result<(usize, Vec<Sample>), String> {
    let mut stream = TcpStream::connect(("127.0.0.1", o.port))
        .await
        .map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    if o.tracking {
        let hello =
            b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\nON\r\n";
        stream.write_all(hello).await.map_err(|e| e.to_string())?;
        let (mut buf, mut at, mut replies) = (Vec::new(), 0, 0);
        while replies < 2 {
            match reply_end(&buf, at)? {
                Some(end) => {
                    at = end;
                    replies += 1;
                }
                None => {
                    buf.reserve(4096);
                    if stream.read_buf(&mut buf).await.map_err(|e| e.to_string())? == 0 {
                        return Err("the server closed the connection".into());
                    }
                }
            }
        }
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut batch = Batch::new(&o.command, o.pipeline);
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut done = 0;
    let mut samples = Vec::new();
    // Whole pipelines are taken from the shared count, so every client
    // sends full pipelines, as redis-benchmark's do.
    while remaining
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| {
            r.checked_sub(o.pipeline)
        })
        .is_ok()
    {
        batch.randomize(&mut rng, o.keyspace);
        let sent = (o.latency_log.is_some()).then(|| (SystemTime::now(), Instant::now()));
        stream
            .write_all(&batch.bytes)
            .await
            .map_err(|e| e.to_string())?;
        let (mut replies, mut at) = (0, 0);
        buf.clear();
        while replies < o.pipeline {
            match reply_end(&buf, at)? {
                Some(end) => {
                    at = end;
                    replies += 1;
                }
                None => {
                    if buf.capacity() - buf.len() < 16 * 1024 {
                        buf.reserve(64 * 1024);
                    }
                    let n = stream.read_buf(&mut buf).await.map_err(|e| e.to_string())?;
                    if n == 0 {
                        return Err("the server closed the connection".into());
                    }
                }
            }
        }
        if at != buf.len() {
            return Err("more replies than requests".into());
        }
        done += o.pipeline;
        if let Some((wall, clock)) = sent {
            let since_epoch = wall.duration_since(UNIX_EPOCH).unwrap_or_default();
            samples.push((
                since_epoch.as_micros() as u64,
                clock.elapsed().as_micros() as u64,
            ));
        }
    }
    Ok((done, samples))
}

fn main() {
    let o = Arc::new(options());
    // One thread, as redis-benchmark runs by default, or the connections
    // spread over `--threads` (a load that one core cannot generate).
    let runtime = if o.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(o.threads)
            .enable_all()
            .build()
    }
    .expect("runtime");
    let remaining = Arc::new(AtomicUsize::new(o.requests));
    let started = Instant::now();
    let result = runtime.block_on(async {
        let tasks: Vec<_> = (0..o.clients)
            .map(|i| tokio::spawn(client(o.clone(), remaining.clone(), i as u64 + 1)))
            .collect();
        let mut done = 0;
        let mut samples = Vec::new();
        for t in tasks {
            let (n, s) = t.await.map_err(|e| e.to_string())??;
            done += n;
            samples.extend(s);
        }
        Ok::<_, String>((done, samples))
    });
    let secs = started.elapsed().as_secs_f64();
    match result {
        Ok((done, samples)) => {
            if let Some(path) = &o.latency_log {
                let mut text = String::with_capacity(samples.len() * 24);
                for (sent, micros) in samples {
                    text.push_str(&format!("{sent} {micros}\n"));
                }
                if let Err(e) = std::fs::write(path, text) {
                    eprintln!("pipeload: {path}: {e}");
                    std::process::exit(1);
                }
            }
            println!("requests: {done}");
            println!("seconds: {secs:.3}");
            println!("requests per second: {:.0}", done as f64 / secs);
        }
        Err(e) => {
            eprintln!("pipeload: {e}");
            std::process::exit(1);
        }
    }
}
