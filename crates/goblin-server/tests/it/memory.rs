//! What clients cost in memory: an idle connection holds little, a closed
//! one gives it back, and a large argument is held once. Measured with
//! INFO's used_memory on a goblin-server process (jemalloc's figures, as
//! Redis's zmalloc count; the test binary's own allocator has none).

use crate::common::process::{temp_dir, Proc};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn info_field(c: &mut redis::Connection, section: &str, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    let prefix = format!("{field}:");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
        .trim()
        .parse()
        .unwrap()
}

fn used_memory(c: &mut redis::Connection) -> u64 {
    info_field(c, "memory", "used_memory")
}

/// Polls `check` until it holds, for at most 30 seconds; the last value
/// it saw otherwise.
fn await_value(mut read: impl FnMut() -> u64, ok: impl Fn(u64) -> bool) -> Result<u64, u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = read();
        if ok(v) {
            return Ok(v);
        }
        if Instant::now() > deadline {
            return Err(v);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

const IDLE_CLIENTS: u64 = 500;
/// Redis holds about 1.4 KB per idle client; Goblin's bound.
const PER_IDLE_CLIENT: u64 = 2048;
/// What else may move used_memory meanwhile (the registry's tables).
const ALLOWANCE: u64 = 256 * 1024;

/// Regression: every connection allocated a 16 KiB read buffer and a 16 KiB
/// reply buffer up front (and its task held the connection twice), about
/// 33 KB of used_memory per idle client; now buffers exist only while a
/// request or reply is in flight, and the cron releases an idle client's.
#[test]
fn idle_connections_hold_little_memory_and_return_it() {
    let dir = temp_dir("idle-clients");
    let server = Proc::goblin(&dir, &["--save", "", "--appendonly", "no"]);
    let mut c = server.client();
    let before = used_memory(&mut c);
    let bound = before + IDLE_CLIENTS * PER_IDLE_CLIENT + ALLOWANCE;

    let mut idle: Vec<TcpStream> = (0..IDLE_CLIENTS)
        .map(|_| TcpStream::connect(("127.0.0.1", server.port)).unwrap())
        .collect();
    await_value(
        || info_field(&mut c, "clients", "connected_clients"),
        |n| n == IDLE_CLIENTS + 1,
    )
    .expect("every connection is accepted");
    let with = used_memory(&mut c);
    assert!(
        with <= bound,
        "{IDLE_CLIENTS} idle clients took {} bytes of used_memory ({} each)",
        with - before,
        (with - before) / IDLE_CLIENTS
    );

    // After a command each, the buffers it needed go once the client has
    // been idle for a while (Redis's clientsCronResizeQueryBuffer and
    // clientsCronResizeOutputBuffer).
    for s in &mut idle {
        s.write_all(b"PING\r\n").unwrap();
    }
    for s in &mut idle {
        let mut reply = [0u8; 7];
        s.read_exact(&mut reply).unwrap();
        assert_eq!(&reply, b"+PONG\r\n");
    }
    if let Err(v) = await_value(|| used_memory(&mut c), |v| v <= bound) {
        panic!(
            "{IDLE_CLIENTS} clients idle after a command hold {} bytes of used_memory",
            v - before
        );
    }

    drop(idle);
    await_value(
        || info_field(&mut c, "clients", "connected_clients"),
        |n| n == 1,
    )
    .expect("every connection is closed");
    if let Err(v) = await_value(|| used_memory(&mut c), |v| v <= before + ALLOWANCE) {
        panic!(
            "closed clients left {} bytes of used_memory",
            v.saturating_sub(before)
        );
    }
    server.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Regression: a large argument was held twice (the query buffer grew to
/// hold it, twice its size, and kept that room after the command; the
/// value copied it): one SET of 8 MB left 18.9 MB of used_memory. A bulk
/// of 32 KiB or more is now received into a buffer of its exact size,
/// which SET keeps as the value (its peak is the value), and which a list
/// push copies into its node (as Redis 7.0's listpacks do: the peak is
/// then the value twice, for the time of the command) before it goes.
#[test]
fn a_large_argument_is_held_once() {
    const VALUE: usize = 8_000_000;
    let dir = temp_dir("big-args");
    let server = Proc::goblin(&dir, &["--save", "", "--appendonly", "no"]);
    let mut c = server.client();
    let before = used_memory(&mut c);
    let held = |total: usize| before + (total + total / 4) as u64 + ALLOWANCE;

    let value = vec![b'a'; VALUE];
    let _: () = redis::cmd("SET")
        .arg("s")
        .arg(&value)
        .query(&mut c)
        .unwrap();
    let peak = info_field(&mut c, "memory", "used_memory_peak");
    assert!(
        peak <= held(VALUE),
        "SET of {VALUE} bytes peaked at {} bytes of used_memory",
        peak - before
    );

    let value = vec![b'b'; VALUE];
    let _: i64 = redis::cmd("LPUSH")
        .arg("l")
        .arg(&value)
        .query(&mut c)
        .unwrap();
    let _: i64 = redis::cmd("RPUSH")
        .arg("l")
        .arg(&value)
        .query(&mut c)
        .unwrap();
    // The read buffer keeps room for another big bulk until the cron
    // finds the client idle (as Redis's clientsCronResizeQueryBuffer).
    if let Err(used) = await_value(|| used_memory(&mut c), |v| v <= held(3 * VALUE)) {
        panic!(
            "{} bytes of values hold {} bytes of used_memory",
            3 * VALUE,
            used - before
        );
    }

    // The values are whole, and the one SET kept can still change.
    let got: Vec<u8> = redis::cmd("GET").arg("s").query(&mut c).unwrap();
    assert!(got.len() == VALUE && got.iter().all(|&b| b == b'a'));
    let got: Vec<u8> = redis::cmd("LINDEX").arg("l").arg(-1).query(&mut c).unwrap();
    assert!(got.len() == VALUE && got.iter().all(|&b| b == b'b'));
    let len: i64 = redis::cmd("APPEND")
        .arg("s")
        .arg("tail")
        .query(&mut c)
        .unwrap();
    assert_eq!(len, VALUE as i64 + 4);
    let got: Vec<u8> = redis::cmd("GETRANGE")
        .arg("s")
        .arg(-5)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    assert_eq!(got, b"atail");
    server.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
