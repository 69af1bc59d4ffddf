//! The engine's side of replication: becoming a replica of a primary
//! (REPLICAOF) or a primary again, the replication state a restart
//! restores, and INFO's replication section.

use super::*;

/// The engine's link with this replication state: what sessions ask of it.
impl crate::Engine {
    /// Whether expired keys must be recorded for the stream.
    pub(crate) fn update_expiry_propagation(&self) {
        let aof = self.persist().aof.is_on();
        let repl = self.repl().stream.is_active() && !self.repl().is_replica();
        self.keyspace().env().set_record_expired(aof || repl);
    }
}

/// REPLICAOF host port (Redis's replicationSetMaster): the link thread
/// connects to it. A former primary keeps its own history to resume, so
/// that it continues partially with a primary that was its replica.
pub fn set_master(engine: &crate::Engine, addr: MasterAddr) {
    let r = engine.repl();
    let was_master = !r.is_replica();
    if was_master {
        *r.resume.lock() = Some(Resume {
            replid: r.ids().replid,
            offset: r.stream.offset(),
        });
        r.master_db
            .store(r.stream.stream_db().unwrap_or(0) as i64, Ordering::Relaxed);
    }
    crate::log::notice(&format!("Connecting to MASTER {}:{}", addr.host, addr.port));
    r.set_master(Some(addr.clone()));
    if was_master {
        engine.unblock_all_with(
            "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
        );
    }
    let _ = engine
        .config()
        .set_initial("replicaof", &format!("{} {}", addr.host, addr.port));
    // A replica's stream is its primary's, expired keys are its primary's
    // to delete.
    engine.update_expiry_propagation();
}

/// REPLICAOF NO ONE (Redis's replicationUnsetMaster): the history so far
/// stays valid as the second id, the replicas reconnect to learn the new
/// one (and continue partially).
pub fn unset_master(engine: &crate::Engine) {
    let r = engine.repl();
    crate::log::notice("Connection with master lost.");
    r.set_master(None);
    *r.resume.lock() = None;
    r.shift_id();
    let size = engine.config().repl_backlog_size().max(1) as usize;
    r.stream.activate(size);
    r.stream.forget_db();
    r.no_replicas_since_ms.store(now_ms(), Ordering::Relaxed);
    for rep in r.replicas() {
        rep.info.kill();
    }
    let _ = engine.config().set_initial("replicaof", "no one");
    engine.update_expiry_propagation();
}

/// Startup found a replication history in dump.rdb (Redis's
/// loadDataFromDisk): a replica resumes it with its primary; a primary
/// keeps it as its second id, so that its replicas continue partially.
pub fn restore_on_start(engine: &crate::Engine, info: SaveInfo, expired: &[(usize, Vec<u8>)]) {
    let r = engine.repl();
    if r.is_replica() {
        r.master_db.store(info.stream_db, Ordering::Relaxed);
        r.adopt_id(&info.replid, info.offset, false);
        r.stream.reset(info.offset);
        *r.resume.lock() = Some(Resume {
            replid: info.replid,
            offset: info.offset,
        });
    } else {
        let size = engine.config().repl_backlog_size().max(1) as usize;
        r.restore_as_primary(&info.replid, info.offset, size);
        engine.update_expiry_propagation();
        // The keys that expired while it was down were not loaded: its
        // replicas get their DELs (Redis's RDBFLAGS_FEED_REPL).
        let records: Vec<crate::propagate::Record> = expired
            .iter()
            .map(|(db, key)| crate::propagate::Record {
                db: *db,
                argv: vec![b"DEL".to_vec(), key.clone()],
            })
            .collect();
        engine.emit(&records, false);
    }
}

/// INFO's replication section, in Redis 7.0's format and order.
pub fn info(engine: &crate::Engine) -> String {
    use std::fmt::Write;
    let r = engine.repl();
    let config = engine.config();
    let now = now_ms();
    let mut out = String::from("# Replication\r\n");
    match r.master() {
        None => out.push_str("role:master\r\n"),
        Some(m) => {
            let link = r.link.lock().clone();
            let up = link.state == LinkState::Up;
            let offset = if up || r.resume.lock().is_some() {
                r.stream.offset() as i64
            } else {
                1
            };
            let _ = write!(
                out,
                "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\nmaster_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{}\r\nslave_repl_offset:{}\r\n",
                m.host,
                m.port,
                if up { "up" } else { "down" },
                if up {
                    (now.saturating_sub(link.last_io_ms) / 1000) as i64
                } else {
                    -1
                },
                (link.state == LinkState::Transfer) as u8,
                offset,
                offset,
            );
            if link.state == LinkState::Transfer {
                let size = link.transfer_size;
                let perc = if size > 0 {
                    link.transfer_read as f64 / size as f64 * 100.0
                } else {
                    0.0
                };
                let _ = write!(
                    out,
                    "master_sync_total_bytes:{}\r\nmaster_sync_read_bytes:{}\r\nmaster_sync_left_bytes:{}\r\nmaster_sync_perc:{:.2}\r\nmaster_sync_last_io_seconds_ago:{}\r\n",
                    size,
                    link.transfer_read,
                    size - link.transfer_read as i64,
                    perc,
                    now.saturating_sub(link.transfer_last_io_ms) / 1000
                );
            }
            if !up {
                let since = if link.down_since_ms != 0 {
                    (now.saturating_sub(link.down_since_ms) / 1000) as i64
                } else {
                    -1
                };
                let _ = write!(out, "master_link_down_since_seconds:{since}\r\n");
            }
            let _ = write!(
                out,
                "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:{}\r\n",
                config.replica_priority(),
                config.replica_read_only() as u8,
                config.replica_announced() as u8,
            );
        }
    }
    let replicas = r.replicas();
    let _ = write!(out, "connected_slaves:{}\r\n", replicas.len());
    let min_write = config.min_replicas_to_write();
    if min_write != 0 && config.min_replicas_max_lag() != 0 {
        let _ = write!(
            out,
            "min_slaves_good_slaves:{}\r\n",
            r.good_replicas.load(Ordering::Relaxed)
        );
    }
    for (i, x) in replicas.iter().enumerate() {
        let st = x.state();
        let lag = if st == state::ONLINE {
            now.saturating_sub(x.ack_ms.load(Ordering::Relaxed)) / 1000
        } else {
            0
        };
        let _ = write!(
            out,
            "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
            x.ip(),
            x.conf.listening_port,
            state::name(st),
            x.ack.load(Ordering::Relaxed),
            lag
        );
    }
    let ids = r.ids();
    let backlog = r.stream.info();
    let _ = write!(
        out,
        "master_failover_state:{}\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{}\r\nrepl_backlog_size:{}\r\nrepl_backlog_first_byte_offset:{}\r\nrepl_backlog_histlen:{}\r\n",
        failover::state(engine).name(),
        ids.replid,
        ids.replid2,
        r.stream.offset(),
        ids.second_offset,
        backlog.active as u8,
        config.repl_backlog_size(),
        backlog.first_byte,
        backlog.histlen,
    );
    out
}
