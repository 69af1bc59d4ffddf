//! The coordinated failover (Redis 6.2's FAILOVER): a primary hands its
//! role to one of its replicas without losing a write.
//!
//! 1. FAILOVER pauses writes (a pause of its own, see `crate::pause`), so
//!    the stream stops growing.
//! 2. The periodic check (`update`, Redis's updateFailoverStatus) waits
//!    until the target replica (or, without TO, any replica) has
//!    acknowledged the whole stream.
//! 3. The primary then becomes a replica of the target, and its link sends
//!    `PSYNC <replid> <offset> FAILOVER`: the target, whose history is
//!    ours, promotes itself (REPLICAOF NO ONE) and continues us partially.
//! 4. A +CONTINUE (or +FULLRESYNC) ends the failover: writes resume (and
//!    meet a replica). Any other reply aborts it: the engine is a primary
//!    again, with a new history id its replicas learn when they reconnect.
//!
//! A TIMEOUT aborts the wait, or with FORCE fails over to the target
//! anyway; FAILOVER ABORT gives up at any step.

use super::MasterAddr;
use crate::util::time::now_ms;

pub use super::{Failover, State};

/// The failover's state now.
pub fn state(engine: &crate::Engine) -> State {
    engine.repl().failover.lock().state
}

/// Starts waiting for a replica to catch up (FAILOVER, its checks done).
pub fn start(engine: &crate::Engine, target: Option<MasterAddr>, timeout_ms: u64, force: bool) {
    let mut f = engine.repl().failover.lock();
    *f = Failover {
        state: State::WaitForSync,
        target,
        end_ms: if timeout_ms > 0 {
            now_ms().saturating_add(timeout_ms)
        } else {
            0
        },
        force,
    };
    engine.pause().set_failover(true);
}

/// Ends the failover, succeeded or not (Redis's clearFailoverState):
/// writes resume.
pub fn clear(engine: &crate::Engine) {
    *engine.repl().failover.lock() = Failover::default();
    engine.pause().set_failover(false);
}

/// Gives the failover up, if one runs (Redis's abortFailover): a primary
/// that had turned replica of the target is a primary again.
pub fn abort(engine: &crate::Engine, err: &str) {
    let f = engine.repl().failover.lock().clone();
    if f.state == State::None {
        return;
    }
    match &f.target {
        Some(t) => crate::log::notice(&format!("FAILOVER to {}:{} aborted: {err}", t.host, t.port)),
        None => crate::log::notice(&format!("FAILOVER to any replica aborted: {err}")),
    }
    if f.state == State::InProgress {
        super::unset_master(engine);
    }
    clear(engine);
}

/// The periodic check (Redis's updateFailoverStatus): the deadline, then
/// whether the target (or any replica) acknowledged the whole stream; if
/// so this engine becomes its replica, and its link asks it to take over.
pub fn update(engine: &crate::Engine) {
    let r = engine.repl();
    let mut f = r.failover.lock();
    if f.state != State::WaitForSync {
        return;
    }
    if f.end_ms != 0 && f.end_ms <= now_ms() {
        if f.force {
            crate::log::notice(&format!(
                "FAILOVER to {} time out exceeded, failing over.",
                f.target_name()
            ));
            f.state = State::InProgress;
            let target = f.target.clone();
            drop(f);
            if let Some(target) = target {
                super::set_master(engine, target);
            }
        } else {
            drop(f);
            abort(engine, "Replica never caught up before timeout");
        }
        return;
    }
    let offset = r.stream.offset();
    let caught_up =
        |rep: &super::Replica| rep.ack.load(std::sync::atomic::Ordering::Acquire) == offset;
    let replicas = r.replicas();
    let found = match &f.target {
        Some(t) => r
            .find_replica(&t.host, t.port as i64)
            .is_some_and(|rep| caught_up(&rep)),
        None => match replicas.iter().find(|rep| caught_up(rep)) {
            Some(rep) => {
                f.target = Some(MasterAddr {
                    host: rep.ip(),
                    port: rep.conf.listening_port,
                });
                true
            }
            None => false,
        },
    };
    if !found {
        return;
    }
    f.state = State::InProgress;
    crate::log::notice(&format!(
        "Failover target {} is synced, failing over.",
        f.target_name()
    ));
    let target = f.target.clone();
    drop(f);
    if let Some(target) = target {
        super::set_master(engine, target);
    }
}

/// A failover request (`PSYNC <replid> <offset> FAILOVER`, from our
/// primary) can overtake the end of the stream that primary wrote before
/// it: after a stall of this server (FORCE fails over to a replica that
/// did not acknowledge) both are there at once, one on the link thread's
/// socket, the other on a client connection. Redis serves its master
/// client's input first in the same turn of its event loop; here the
/// request waits, before it takes any lock, up to 100 ms for the link to
/// apply the stream up to the offset asked for, so that the takeover
/// continues the old primary partially rather than with a full sync.
///
/// Then the link ends, between two commands: the request goes on to take
/// every shard and promote this engine, and holding them it cannot wait
/// for a command of the stream being applied, which could be waiting for
/// one of them (`Replication::try_hold_master_stream`). What the link has
/// not applied yet is dropped, as Redis frees its master client with its
/// unread input when PSYNC FAILOVER promotes it.
pub fn await_primary_stream(engine: &crate::Engine, argv: &[&[u8]]) {
    let r = engine.repl();
    let Some(wanted) = crate::util::number::parse_i64(argv[2]).filter(|&o| o > 0) else {
        return;
    };
    if !r.is_replica() || !argv[1].eq_ignore_ascii_case(r.ids().replid.as_bytes()) {
        return;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(100);
    while r.link.lock().state == super::LinkState::Up
        && r.stream.offset() < wanted as u64 - 1
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let _stream = r.hold_master_stream();
    let client = r.link.lock().client.clone();
    if let Some(c) = client {
        c.kill();
    }
}

/// Whether the stream's periodic PING is held back: during a failover with
/// a deadline (as Redis skips it while a timed failover pauses clients),
/// so that the replicas can catch up with an offset that stays still.
pub fn holds_ping(engine: &crate::Engine) -> bool {
    engine.repl().failover.lock().end_ms != 0 && engine.pause().failover()
}
