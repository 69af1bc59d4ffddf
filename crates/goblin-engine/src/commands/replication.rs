//! Replication commands (Redis's replication.c): REPLICAOF / SLAVEOF,
//! ROLE, WAIT, FAILOVER, and what a replica sends its primary: REPLCONF, PSYNC,
//! SYNC. The state and the decisions live in `crate::repl`; the
//! connection carries out a PSYNC or a WAIT (`Handoff`).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crate::client::{repl_kind, Handoff};
use crate::command::args::Args;
use crate::command::spec::{flag, CmdResult, CommandSpec, Group};
use crate::command::Ctx;
use crate::repl::{self, backlog::Reader, state, Attach, ReplConf, Replica};
use crate::util::number::{arg_i64, parse_i64};
use crate::util::time::now_ms;
use crate::Error;

fn replconf_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() % 2 == 0 {
        return Err(Error::SYNTAX);
    }
    let mut conf = ctx.client.repl_conf.take().unwrap_or_default();
    let result = (|| {
        for (i, pair) in args[1..].chunks(2).enumerate() {
            let (opt, value) = (pair[0], pair[1]);
            let is = |name: &str| opt.eq_ignore_ascii_case(name.as_bytes());
            if is("listening-port") {
                let port = parse_i64(value).ok_or(Error::NOT_INTEGER)?;
                conf.listening_port = port as u16;
            } else if is("ip-address") {
                if value.len() >= 46 {
                    return Err(Error::err(format_args!(
                        "REPLCONF ip-address provided by replica instance is too long: {} bytes",
                        value.len()
                    )));
                }
                conf.ip = Some(String::from_utf8_lossy(value).into_owned());
            } else if is("capa") {
                if value.eq_ignore_ascii_case(b"eof") {
                    conf.capa_eof = true;
                } else if value.eq_ignore_ascii_case(b"psync2") {
                    conf.capa_psync2 = true;
                }
            } else if is("ack") {
                // From a replica only, and without a reply. Redis 7.2's
                // replicas add FACK and the offset their append-only file
                // has on disk (WAITAOF counts them).
                let next = 1 + 2 * i + 2;
                let fack = match args.get(next..next + 2) {
                    Some([word, n]) if word.eq_ignore_ascii_case(b"fack") => parse_i64(n),
                    _ => None,
                };
                if let (Some(r), Some(offset)) = (ctx.client.replica.clone(), parse_i64(value)) {
                    ctx.engine.repl().acknowledge(
                        &r,
                        offset.max(0) as u64,
                        fack.map(|f| f.max(0) as u64),
                    );
                }
                return Ok(false);
            } else if is("getack") {
                // From the primary: acknowledge at once.
                if ctx.client.from_master {
                    ctx.engine.repl().ack_wanted.store(true, Ordering::Release);
                }
                return Ok(false);
            } else if is("rdb-only") {
                match parse_i64(value) {
                    Some(0) => conf.rdb_only = false,
                    Some(1) => conf.rdb_only = true,
                    Some(_) => {
                        return Err(Error::err("value is out of range, must be between 0 and 1"))
                    }
                    None => return Err(Error::NOT_INTEGER),
                }
            } else if is("rdb-filter-only") {
                let filters = crate::protocol::parser::split_args(value)
                    .ok_or_else(|| Error::err("Missing rdb-filter-only values"))?;
                conf.exclude_data = true;
                conf.exclude_functions = true;
                for f in filters {
                    if f.eq_ignore_ascii_case(b"functions") {
                        conf.exclude_functions = false;
                    } else {
                        return Err(Error::err(format_args!(
                            "Unsupported rdb-filter-only option: {}",
                            String::from_utf8_lossy(&f)
                        )));
                    }
                }
            } else {
                return Err(Error::err(format_args!(
                    "Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(opt)
                )));
            }
        }
        Ok(true)
    })();
    ctx.client.repl_conf = Some(conf);
    if result? {
        ctx.out.ok();
    }
    Ok(())
}

/// SYNC and PSYNC (Redis's syncCommand): the client becomes a replica,
/// continuing from the backlog when it can, or waiting for a snapshot.
fn sync_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let engine = ctx.engine;
    let r = engine.repl();
    // Already a replica: ignored.
    if ctx.client.info.repl_kind.load(Ordering::Relaxed) == repl_kind::REPLICA {
        return Ok(());
    }
    // PSYNC <replid> <offset> FAILOVER: our primary hands its role over
    // (repl::failover); it must be ours, with the history we have.
    if args.len() > 3
        && args[0].eq_ignore_ascii_case(b"psync")
        && args[3].eq_ignore_ascii_case(b"failover")
    {
        crate::log::warning(&format!(
            "Failover request received for replid {}.",
            String::from_utf8_lossy(args[1])
        ));
        if !r.is_replica() {
            return Err(Error::err("PSYNC FAILOVER can't be sent to a master."));
        }
        if !args[1].eq_ignore_ascii_case(r.ids().replid.as_bytes()) {
            return Err(Error::err("PSYNC FAILOVER replid must match my replid."));
        }
        // Between two commands of the old primary's stream, as REPLICAOF
        // NO ONE: the link ended at such a point before the shards were
        // taken (failover::await_primary_stream).
        let _stream = r.try_hold_master_stream();
        repl::unset_master(engine);
        crate::log::notice(&format!(
            "MASTER MODE enabled (failover request from '{}')",
            ctx.client
                .info
                .line(now_ms(), ctx.engine.clients().command_names())
        ));
    }
    // Our history is about to change hands.
    if repl::failover::state(engine) != repl::failover::State::None {
        return Err(Error::constant(
            "NOMASTERLINK Can't SYNC while failing over",
        ));
    }
    if r.is_replica() && r.link.lock().state != repl::LinkState::Up {
        return Err(Error::constant(
            "NOMASTERLINK Can't SYNC while not connected with my master",
        ));
    }
    let psync = args[0].eq_ignore_ascii_case(b"psync");
    let psync_offset = if psync {
        match parse_i64(args[2]) {
            Some(o) => Some(o),
            None => {
                crate::log::warning(&format!(
                    "Replica {} asks for synchronization but with a wrong offset",
                    replica_name(
                        &ctx.client.info,
                        &ctx.client.repl_conf.clone().map(|c| *c).unwrap_or_default()
                    )
                ));
                return Err(Error::NOT_INTEGER);
            }
        }
    } else {
        None
    };
    let conf = ctx.client.repl_conf.take().map(|c| *c).unwrap_or_default();
    if (conf.exclude_data || conf.exclude_functions) && !conf.capa_eof {
        return Err(Error::err("Filtered replica requires EOF capability"));
    }
    let info = ctx.client.info.clone();
    crate::log::notice(&format!(
        "Replica {} asks for synchronization",
        replica_name(&info, &conf)
    ));
    let reader = Arc::new(Reader {
        sent: AtomicU64::new(0),
        info: info.clone(),
    });
    let replica = |st: u8| {
        Arc::new(Replica {
            info: info.clone(),
            reader: reader.clone(),
            conf: conf.clone(),
            state: AtomicU8::new(st),
            ack: AtomicU64::new(0),
            fack: AtomicU64::new(0),
            ack_ms: AtomicU64::new(now_ms()),
            old_protocol: !psync,
            wait_since_ms: now_ms(),
            start: parking_lot::Mutex::new(None),
            failed: AtomicBool::new(false),
            acks: AtomicU64::new(0),
        })
    };
    // Partial resynchronization (masterTryPartialResynchronization).
    if let Some(offset) = psync_offset {
        let replid = String::from_utf8_lossy(args[1]).into_owned();
        let wanted = offset.max(0) as u64;
        if !conf.rdb_only
            && !conf.exclude_data
            && r.can_continue(&replid, wanted)
            && r.stream.attach(reader.clone(), wanted - 1)
        {
            let rep = replica(state::ONLINE);
            let ids = r.ids();
            if conf.capa_psync2 {
                ctx.out
                    .raw(format!("+CONTINUE {}\r\n", ids.replid).as_bytes());
            } else {
                ctx.out.raw(b"+CONTINUE\r\n");
            }
            crate::log::notice(&format!(
                "Partial resynchronization request from {} accepted. Sending {} bytes of backlog starting from offset {}.",
                replica_name(&info, &conf),
                r.stream.offset() + 1 - wanted,
                wanted
            ));
            r.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
            become_replica(ctx, rep, Some(wanted - 1));
            r.refresh_good(engine.config().min_replicas_max_lag());
            return Ok(());
        }
        if replid != "?" {
            r.sync_partial_err.fetch_add(1, Ordering::Relaxed);
            crate::log::notice(&format!(
                "Partial resynchronization not accepted: Replication ID mismatch or offset out of range (Replica asked for '{replid}' offset {offset})"
            ));
        } else {
            crate::log::notice(&format!(
                "Full resync requested by replica {}",
                replica_name(&info, &conf)
            ));
        }
    }
    r.sync_full.fetch_add(1, Ordering::Relaxed);
    if r.replica_count() == 0 && !r.stream.is_active() {
        // A backlog from scratch: a history with no past.
        r.new_id();
        r.stream
            .activate(engine.config().repl_backlog_size().max(1) as usize);
        engine.update_expiry_propagation();
        let ids = r.ids();
        crate::log::notice(&format!(
            "Replication backlog created, my new replication IDs are '{}' and '{}'",
            ids.replid, ids.replid2
        ));
    }
    // A snapshot of functions only (redis-cli --functions-rdb), or of
    // nothing, needs no walk of the keyspace: it is made now, at this
    // offset (every shard is held).
    if conf.exclude_data {
        let functions = if conf.exclude_functions {
            Vec::new()
        } else {
            engine.scripting().library_codes()
        };
        let mut fmt = crate::persist::snapshot::RdbFormat::for_engine(engine, false);
        let mut bytes = Vec::new();
        crate::persist::snapshot::write_nothing_but(&functions, &mut fmt, &mut bytes);
        let rep = replica(state::WAIT_BGSAVE_END);
        let offset = r.stream.offset();
        r.stream.forget_db();
        if !r.stream.attach(reader.clone(), offset) {
            return Err(Error::err("the replication backlog is gone"));
        }
        *rep.start.lock() = Some(repl::SyncStart {
            replid: r.ids().replid,
            offset,
            transfer: repl::Transfer::Inline(bytes),
        });
        become_replica(ctx, rep, None);
        return Ok(());
    }
    become_replica(ctx, replica(state::WAIT_BGSAVE_START), None);
    let diskless = engine.config().repl_diskless_sync() && conf.capa_eof;
    if diskless && engine.config().repl_diskless_sync_delay() > 0 {
        crate::log::notice("Delay next BGSAVE for diskless SYNC");
    } else if engine.persist().running().is_some() {
        crate::log::notice(
            "No BGSAVE in progress, but another BG operation is active. BGSAVE for replication delayed",
        );
    } else if ctx.locks.holds_all() {
        repl::sync::start_pending_locked(&engine.arc(), ctx.locks);
    }
    Ok(())
}

/// The client is the replica `rep` from now on: listed among the
/// engine's replicas (flag S), and its connection takes it over once the
/// reply is written.
fn become_replica(ctx: &mut Ctx, rep: Arc<Replica>, continue_from: Option<u64>) {
    rep.info
        .repl_kind
        .store(repl_kind::REPLICA, Ordering::Relaxed);
    ctx.client.replica = Some(rep.clone());
    ctx.engine.repl().add_replica(rep.clone());
    ctx.client.handoff = Some(Handoff::Replica(Attach {
        replica: rep,
        continue_from,
    }));
}

/// How Redis names a replica in its log: ip:port of its listener.
fn replica_name(info: &crate::client::ClientInfo, conf: &ReplConf) -> String {
    let ip = conf.ip.clone().unwrap_or_else(|| {
        info.addr
            .rsplit_once(':')
            .map(|(ip, _)| ip.to_string())
            .unwrap_or_default()
    });
    format!("{ip}:{}", conf.listening_port)
}

/// REPLICAOF host port / REPLICAOF NO ONE (and its old name SLAVEOF).
fn replicaof_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let engine = ctx.engine;
    // Only FAILOVER ABORT changes the role while a failover runs.
    if repl::failover::state(engine) != repl::failover::State::None {
        return Err(Error::err("REPLICAOF not allowed while failing over."));
    }
    let no_one = {
        let mut a = Args::new(&args[1..]);
        let no = a.flag("NO");
        let one = a.flag("ONE");
        no && one
    };
    if !no_one && ctx.client.info.repl_kind.load(Ordering::Relaxed) == repl_kind::REPLICA {
        return Err(Error::err("Command is not valid when client is a replica."));
    }
    let addr = repl::parse_master(args[1], args[2])?;
    let client = ctx
        .client
        .info
        .line(now_ms(), ctx.engine.clients().command_names());
    // Redis frees its master client, unread input and all, inside
    // replicaofCommand: once this replies, a command of the old primary's
    // stream was applied whole before, or is never applied. Inside a
    // transaction that holds shards, a command being applied may be
    // waiting for one of them: the change then holds the stream only if
    // none is.
    let r = engine.repl();
    let _stream = if ctx.locks.held().next().is_some() {
        r.try_hold_master_stream()
    } else {
        Some(r.hold_master_stream())
    };
    match addr {
        None => {
            if engine.repl().is_replica() {
                repl::unset_master(engine);
                crate::log::notice(&format!(
                    "MASTER MODE enabled (user request from '{client}')"
                ));
            }
        }
        Some(addr) => {
            if engine.repl().master().as_ref() == Some(&addr) {
                crate::log::notice("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.");
                ctx.out
                    .raw(b"+OK Already connected to specified master\r\n");
                return Ok(());
            }
            let (host, port) = (addr.host.clone(), addr.port);
            repl::set_master(engine, addr);
            crate::log::notice(&format!(
                "REPLICAOF {host}:{port} enabled (user request from '{client}')"
            ));
        }
    }
    ctx.out.ok();
    Ok(())
}

/// ROLE.
fn role_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let r = ctx.engine.repl();
    match r.master() {
        None => {
            ctx.out.array(3);
            ctx.out.bulk(b"master");
            ctx.out.int(r.stream.offset() as i64);
            let online: Vec<_> = r
                .replicas()
                .into_iter()
                .filter(|x| x.state() == state::ONLINE)
                .collect();
            ctx.out.array(online.len());
            for x in online {
                ctx.out.array(3);
                ctx.out.bulk(x.ip().as_bytes());
                ctx.out.bulk(x.conf.listening_port.to_string().as_bytes());
                ctx.out
                    .bulk(x.ack.load(Ordering::Relaxed).to_string().as_bytes());
            }
        }
        Some(m) => {
            let link = r.link.lock().state;
            ctx.out.array(5);
            ctx.out.bulk(b"slave");
            ctx.out.bulk(m.host.as_bytes());
            ctx.out.int(m.port as i64);
            ctx.out.bulk(match link {
                repl::LinkState::Down => b"connect".as_slice(),
                repl::LinkState::Connecting => b"connecting",
                repl::LinkState::Handshake => b"handshake",
                repl::LinkState::Transfer => b"sync",
                repl::LinkState::Up => b"connected",
            });
            ctx.out.int(if link == repl::LinkState::Up {
                r.stream.offset() as i64
            } else {
                -1
            });
        }
    }
    Ok(())
}

/// WAIT numreplicas timeout.
fn wait_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let r = ctx.engine.repl();
    if r.is_replica() {
        return Err(Error::err("WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."));
    }
    let wanted = parse_i64(args[1]).ok_or(Error::NOT_INTEGER)?;
    let timeout = parse_i64(args[2])
        .ok_or_else(|| Error::err("timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Error::err("timeout is negative"));
    }
    let offset = ctx.client.repl_offset;
    let acked = r.acked(offset);
    // Inside a transaction or a script it cannot block (Redis's
    // CLIENT_DENY_BLOCKING).
    if acked as i64 >= wanted || ctx.in_multi || ctx.in_script {
        ctx.out.int(acked as i64);
        return Ok(());
    }
    ctx.client.handoff = Some(Handoff::Wait {
        offset,
        replicas: wanted as usize,
        deadline_ms: (timeout > 0).then(|| now_ms().saturating_add(timeout as u64)),
    });
    // Asks the replicas for their offsets now rather than in a second.
    r.stream.append_bytes(repl::GETACK);
    Ok(())
}

/// WAITAOF's arguments: numlocal (0 or 1), numreplicas, the timeout in
/// milliseconds (Redis 7.2's waitaofCommand, in its order of checks).
pub fn parse_waitaof(args: &[&[u8]]) -> Result<(bool, i64, i64), Error> {
    let local = arg_i64(args[1])?;
    if !(0..=1).contains(&local) {
        return Err(Error::err(
            "value is out of range, value must between 0 and 1",
        ));
    }
    let replicas = arg_i64(args[2])?;
    if replicas < 0 {
        return Err(Error::err("value is out of range, must be positive"));
    }
    let timeout = parse_i64(args[3])
        .ok_or_else(|| Error::err("timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Error::err("timeout is negative"));
    }
    Ok((local == 1, replicas, timeout))
}

/// WAITAOF numlocal numreplicas timeout (Redis 7.2): waits until the
/// client's writes are on disk in the append-only file here (numlocal 1)
/// and on `numreplicas` replicas, and replies how many of each are. A
/// replica acknowledges its file's offset with REPLCONF ACK's FACK, as
/// Redis 7.2's and Goblin's do; Redis 7.0 replicas never count.
fn waitaof_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (local, replicas, timeout) = parse_waitaof(args)?;
    if ctx.engine.repl().is_replica() {
        return Err(Error::err("WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated."));
    }
    let aof = &ctx.engine.persist().aof;
    if local && !aof.is_on() {
        return Err(Error::constant(crate::engine::wait::WAITAOF_WITHOUT_AOF));
    }
    let aof_offset = ctx.client.aof_offset;
    let repl_offset = ctx.client.repl_offset;
    let local_acked = aof.is_on() && aof.fsynced() >= aof_offset;
    let replicas_acked = ctx.engine.repl().aof_acked(repl_offset) as i64;
    // Inside a transaction or a script it cannot block (Redis's
    // CLIENT_DENY_BLOCKING).
    if (replicas_acked >= replicas && (local_acked || !local)) || ctx.in_multi || ctx.in_script {
        ctx.out.array(2);
        ctx.out.int(local_acked as i64);
        ctx.out.int(replicas_acked);
        return Ok(());
    }
    ctx.client.handoff = Some(Handoff::WaitAof {
        aof_offset,
        repl_offset,
        local,
        replicas: replicas as usize,
        deadline_ms: (timeout > 0).then(|| now_ms().saturating_add(timeout as u64)),
    });
    if replicas > 0 {
        // Asks the replicas for their offsets now rather than in a second.
        ctx.engine.repl().stream.append_bytes(repl::GETACK);
    }
    Ok(())
}

/// FAILOVER's arguments.
#[derive(Debug, Default, PartialEq)]
struct FailoverArgs {
    /// FAILOVER ABORT (alone).
    abort: bool,
    /// TO host port: the host and the port as given.
    target: Option<(String, i64)>,
    force: bool,
    /// TIMEOUT milliseconds (> 0), 0 without one.
    timeout_ms: i64,
}

/// Parses FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms] as Redis's
/// failoverCommand does: ABORT only alone, each option once, in any order
/// (FORCE need not follow TO).
fn parse_failover(args: &[&[u8]]) -> Result<FailoverArgs, Error> {
    let mut f = FailoverArgs::default();
    let mut a = Args::new(&args[1..]);
    if a.flag("ABORT") {
        if a.is_empty() {
            f.abort = true;
            return Ok(f);
        }
        // ABORT among other options.
        return Err(Error::SYNTAX);
    }
    while !a.is_empty() {
        // A second TIMEOUT, TO or FORCE is a syntax error, as any other
        // word.
        if f.timeout_ms == 0 {
            if let Some(v) = a.option("TIMEOUT") {
                f.timeout_ms = parse_i64(v).ok_or(Error::NOT_INTEGER)?;
                if f.timeout_ms <= 0 {
                    return Err(Error::err("FAILOVER timeout must be greater than 0"));
                }
                continue;
            }
        }
        if f.target.is_none() {
            if let Some(v) = a.option_n("TO", 2) {
                let port = parse_i64(v[1]).ok_or(Error::NOT_INTEGER)?;
                f.target = Some((String::from_utf8_lossy(v[0]).into_owned(), port));
                continue;
            }
        }
        if !f.force && a.flag("FORCE") {
            f.force = true;
            continue;
        }
        return Err(Error::SYNTAX);
    }
    Ok(f)
}

/// FAILOVER (Redis's failoverCommand): starts a coordinated failover to a
/// replica (repl::failover), or aborts the one running.
fn failover_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let engine = ctx.engine;
    let r = engine.repl();
    let f = parse_failover(args)?;
    if f.abort {
        if repl::failover::state(engine) == repl::failover::State::None {
            return Err(Error::err("No failover in progress."));
        }
        repl::failover::abort(engine, "Failover manually aborted");
        ctx.out.ok();
        return Ok(());
    }
    if repl::failover::state(engine) != repl::failover::State::None {
        return Err(Error::err("FAILOVER already in progress."));
    }
    if r.is_replica() {
        return Err(Error::err(
            "FAILOVER is not valid when server is a replica.",
        ));
    }
    if r.replica_count() == 0 {
        return Err(Error::err("FAILOVER requires connected replicas."));
    }
    if f.force && (f.timeout_ms == 0 || f.target.is_none()) {
        return Err(Error::err(
            "FAILOVER with force option requires both a timeout and target HOST and IP.",
        ));
    }
    let target = match &f.target {
        Some((host, port)) => {
            let replica = r
                .find_replica(host, *port as i32 as i64)
                .ok_or_else(|| Error::err("FAILOVER target HOST and PORT is not a replica."))?;
            if replica.state() != state::ONLINE {
                return Err(Error::err("FAILOVER target replica is not online."));
            }
            crate::log::notice(&format!("FAILOVER requested to {host}:{port}."));
            Some(repl::MasterAddr {
                host: host.clone(),
                port: replica.conf.listening_port,
            })
        }
        None => {
            crate::log::notice("FAILOVER requested to any replica.");
            None
        }
    };
    repl::failover::start(engine, target, f.timeout_ms as u64, f.force);
    ctx.out.ok();
    Ok(())
}

const REPL_FLAGS: u32 = flag::ADMIN | flag::NOSCRIPT;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "replconf",
        arity: -1,
        flags: REPL_FLAGS | flag::LOADING | flag::STALE | flag::ALLOW_BUSY,
        group: Group::Server,
        since: "3.0.0",
        summary: "An internal command for configuring the replication stream",
        complexity: "O(1)",
        doc_flags: &["syscmd"],
        handler: replconf_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "psync",
        arity: -3,
        flags: REPL_FLAGS | flag::NO_ASYNC_LOADING | flag::NO_MULTI | flag::ALL_SHARDS,
        group: Group::Server,
        since: "2.8.0",
        summary: "Internal command used for replication",
        complexity: "",
        syntax: "replicationid:string offset:integer",
        handler: sync_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sync",
        arity: 1,
        flags: REPL_FLAGS | flag::NO_ASYNC_LOADING | flag::NO_MULTI | flag::ALL_SHARDS,
        group: Group::Server,
        since: "1.0.0",
        summary: "Internal command used for replication",
        complexity: "",
        handler: sync_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "replicaof",
        arity: 3,
        flags: REPL_FLAGS | flag::STALE | flag::NO_ASYNC_LOADING,
        group: Group::Server,
        since: "5.0.0",
        summary: "Make the server a replica of another instance, or promote it as master.",
        complexity: "O(1)",
        syntax: "args:oneof(host-port:block(host:string port:integer)|no-one:block(NO ONE))",
        handler: replicaof_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "slaveof",
        arity: 3,
        flags: REPL_FLAGS | flag::STALE | flag::NO_ASYNC_LOADING,
        group: Group::Server,
        since: "1.0.0",
        summary: "Make the server a replica of another instance, or promote it as master.",
        complexity: "O(1)",
        doc_flags: &["deprecated"],
        deprecated_since: "5.0.0",
        replaced_by: "`REPLICAOF`",
        syntax: "args:oneof(host-port:block(host:string port:integer)|no-one:block(NO ONE))",
        handler: replicaof_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "role",
        arity: 1,
        flags: flag::NOSCRIPT | flag::LOADING | flag::STALE | flag::FAST,
        acl: &["admin", "dangerous"],
        group: Group::Server,
        since: "2.8.12",
        summary: "Return the role of the instance in the context of replication",
        complexity: "O(1)",
        handler: role_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "failover",
        arity: -1,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::STALE,
        group: Group::Server,
        since: "6.2.0",
        summary: "Start a coordinated failover between this server and one of its replicas.",
        complexity: "O(1)",
        syntax: "[TO target:block(host:string port:integer [FORCE])] [ABORT] [TIMEOUT milliseconds:integer]",
        handler: failover_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "wait",
        arity: 3,
        flags: flag::NOSCRIPT,
        acl: &["connection"],
        group_acl: false,
        group: Group::Generic,
        since: "3.0.0",
        summary: "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
        complexity: "O(1)",
        syntax: "numreplicas:integer timeout:integer",
        tips: &["request_policy:all_shards", "response_policy:agg_min"],
        handler: wait_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "waitaof",
        arity: 4,
        flags: flag::NOSCRIPT,
        acl: &["connection"],
        group_acl: false,
        group: Group::Generic,
        since: "7.2.0",
        summary: "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.",
        complexity: "O(1)",
        syntax: "numlocal:integer numreplicas:integer timeout:integer",
        tips: &["request_policy:all_shards", "response_policy:agg_min"],
        handler: waitaof_command,
        ..CommandSpec::DEFAULT
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failover_arguments_parse_as_redis_does() {
        let p = |s: &str| {
            let v: Vec<&[u8]> = s.split(' ').map(str::as_bytes).collect();
            parse_failover(&v)
        };
        assert!(p("FAILOVER abort").unwrap().abort);
        let f = p("failover TIMEOUT 100 to h 7 force").unwrap();
        assert_eq!(
            (f.timeout_ms, f.target, f.force),
            (100, Some(("h".into(), 7)), true)
        );
        assert!(p("failover").unwrap() == FailoverArgs::default());
        for bad in [
            "failover abort timeout 1",
            "failover to h",
            "failover timeout 1 timeout 2",
            "failover force force",
        ] {
            assert!(p(bad).unwrap_err() == Error::SYNTAX, "{bad}");
        }
        assert!(p("failover to h port").is_err());
        assert!(p("failover timeout 0").is_err());
    }
}
