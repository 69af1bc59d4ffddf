//! A load generator for transactions, which redis-benchmark cannot send:
//! each client sends `MULTI`, five `INCR`s of random keys and `EXEC` in one
//! write, reads the seven replies, and starts over.
//!
//!     cargo run --release --example txload -- --port 6379 --clients 50 --transactions 100000
//!
//! Prints `transactions per second: N` (what scripts/bench reads). It works
//! against any server that speaks RESP2: goblin-server and redis-server
//! alike. A reply that is not the expected one stops it with an error.

use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const INCRS: usize = 5;

struct Options {
    port: u16,
    clients: usize,
    transactions: usize,
    keyspace: u64,
}

fn options() -> Options {
    let mut o = Options {
        port: 6379,
        clients: 50,
        transactions: 100_000,
        keyspace: 100_000,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).unwrap_or_else(|| usage(&args[i]));
        match args[i].as_str() {
            "--port" => o.port = value.parse().unwrap_or_else(|_| usage(value)),
            "--clients" => o.clients = value.parse().unwrap_or_else(|_| usage(value)),
            "--transactions" => o.transactions = value.parse().unwrap_or_else(|_| usage(value)),
            "--keyspace" => o.keyspace = value.parse().unwrap_or_else(|_| usage(value)),
            other => usage(other),
        }
        i += 2;
    }
    o
}

fn usage(bad: &str) -> ! {
    eprintln!(
        "bad argument {bad:?}\nusage: txload [--port P] [--clients N] [--transactions N] [--keyspace N]"
    );
    std::process::exit(2)
}

fn transaction(rng: &mut fastrand::Rng, keyspace: u64, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(b"*1\r\n$5\r\nMULTI\r\n");
    for _ in 0..INCRS {
        let key = format!("tx:{:012}", rng.u64(..keyspace));
        out.extend_from_slice(
            format!("*2\r\n$4\r\nINCR\r\n${}\r\n{key}\r\n", key.len()).as_bytes(),
        );
    }
    out.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
}

/// The replies of one transaction: +OK, five +QUEUED, then *5 and five
/// integers: 12 lines. Returns once they are all in `buf`.
async fn read_replies(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<()> {
    const LINES: usize = 2 + 2 * INCRS;
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        let lines = buf.windows(2).filter(|w| w == b"\r\n").count();
        if lines >= LINES {
            break;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::other("the server closed the connection"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(buf);
    let expected_start = "+OK\r\n".to_string() + &"+QUEUED\r\n".repeat(INCRS) + "*5\r\n";
    if !text.starts_with(&expected_start)
        || text.lines().skip(INCRS + 2).any(|l| !l.starts_with(':'))
    {
        return Err(std::io::Error::other(format!(
            "unexpected replies: {text:?}"
        )));
    }
    Ok(())
}

async fn client(port: u16, count: usize, keyspace: u64, seed: u64) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
    stream.set_nodelay(true)?;
    let mut rng = fastrand::Rng::with_seed(seed);
    let (mut out, mut buf) = (Vec::new(), Vec::new());
    for _ in 0..count {
        transaction(&mut rng, keyspace, &mut out);
        stream.write_all(&out).await?;
        read_replies(&mut stream, &mut buf).await?;
    }
    Ok(())
}

fn main() {
    let o = options();
    // One thread, as redis-benchmark runs by default.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let per_client = o.transactions.div_ceil(o.clients);
    let started = Instant::now();
    let result = runtime.block_on(async {
        let tasks: Vec<_> = (0..o.clients)
            .map(|i| tokio::spawn(client(o.port, per_client, o.keyspace, i as u64 + 1)))
            .collect();
        for t in tasks {
            t.await.expect("client task")?;
        }
        Ok::<_, std::io::Error>(())
    });
    let secs = started.elapsed().as_secs_f64();
    if let Err(e) = result {
        eprintln!("txload: {e}");
        std::process::exit(1);
    }
    let done = per_client * o.clients;
    println!("transactions: {done}");
    println!("seconds: {secs:.3}");
    println!("transactions per second: {:.0}", done as f64 / secs);
}
