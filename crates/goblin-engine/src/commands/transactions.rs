//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH (Redis's multi.c).
//!
//! Between MULTI and EXEC the dispatcher queues commands (errors found
//! while queueing doom the transaction). EXEC locks, at once and in order,
//! the shards of every queued command's keys and of every WATCHed key, then
//! checks the watches and runs the queue: no other client on any thread
//! can observe or interleave with a half-run transaction.

use crate::client::{ClientState, Watching};
use crate::command::keys::key_positions;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::{table, Ctx};
use crate::engine::Engine;
use crate::keyspace::watch::WatchState;
use crate::keyspace::{hash_key, ShardLocks};
use crate::Error;
use std::sync::atomic::Ordering;

const EXECABORT: Error =
    Error::constant("EXECABORT Transaction discarded because of previous errors.");

/// The shards EXEC must hold: those of every queued command's keys and of
/// the watched keys; all of them if a queued command needs the whole
/// keyspace or its keys cannot be determined.
fn exec_locks<'e>(engine: &'e Engine, client: &ClientState, _args: &[&[u8]]) -> ShardLocks<'e> {
    let ks = &engine.keyspace();
    let mut shards = Vec::new();
    if let Some(multi) = &client.multi {
        for q in &multi.commands {
            let spec = table().get(q.id).spec;
            if spec.has(flag::ALL_SHARDS) || spec.locks_fn.is_some() {
                return ks.lock_all();
            }
            let argv: Vec<&[u8]> = q.argv.iter().map(|a| a.as_slice()).collect();
            match key_positions(spec, &argv) {
                Some(keys) => shards.extend(keys.iter().map(|(i, _)| ks.shard_of_key(argv[*i]))),
                None => return ks.lock_all(),
            }
        }
    }
    shards.extend(watched_shards(engine, client));
    ks.lock_set(shards)
}

fn watched_shards(engine: &Engine, client: &ClientState) -> Vec<usize> {
    client.watching.as_ref().map_or_else(Vec::new, |w| {
        w.keys
            .iter()
            .map(|(_, k)| engine.keyspace().shard_of_key(k))
            .collect()
    })
}

/// Locks the shards of the watched keys (UNWATCH, DISCARD).
pub fn watch_locks<'e>(
    engine: &'e Engine,
    client: &ClientState,
    _args: &[&[u8]],
) -> ShardLocks<'e> {
    engine.keyspace().lock_set(watched_shards(engine, client))
}

fn end_multi(ctx: &mut Ctx) {
    ctx.client.multi = None;
    ctx.client.info.in_multi.store(false, Ordering::Relaxed);
    ctx.client.info.multi_len.store(0, Ordering::Relaxed);
}

fn multi_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(Error::err("MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(Default::default());
    ctx.client.info.in_multi.store(true, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn discard_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.is_none() {
        return Err(Error::err("DISCARD without MULTI"));
    }
    end_multi(ctx);
    ctx.engine.unwatch_all(ctx.client, Some(ctx.locks));
    ctx.out.ok();
    Ok(())
}

/// True when a key watched while alive has expired since (Redis's
/// isWatchedKeyExpired): EXEC must then fail as if it had been modified.
fn watched_key_expired(ctx: &mut Ctx) -> bool {
    let Some(watching) = ctx.client.watching.as_ref() else {
        return false;
    };
    let now = ctx.now_ms;
    watching.keys.iter().any(|(db, key)| {
        let h = hash_key(key);
        let slice = &ctx.locks.shard_ref(ctx.engine.keyspace().shard_of(h)).dbs[*db];
        slice.is_expired_key(h, key, now) && !slice.watchers.watched_expired(key, &watching.state)
    })
}

fn exec_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let Some(multi) = ctx.client.multi.take() else {
        return Err(Error::err("EXEC without MULTI"));
    };
    end_multi(ctx);
    let dirty = ctx
        .client
        .watching
        .as_ref()
        .is_some_and(|w| w.state.is_dirty())
        || watched_key_expired(ctx);
    ctx.engine.unwatch_all(ctx.client, Some(ctx.locks));
    if multi.aborted {
        return Err(EXECABORT);
    }
    if dirty {
        ctx.out.null_array();
        return Ok(());
    }
    ctx.out.array(multi.commands.len());
    for q in &multi.commands {
        let argv: Vec<&[u8]> = q.argv.iter().map(|a| a.as_slice()).collect();
        // The user's rules may have changed since the command was queued.
        if let Some(denied) = ctx.client.user.as_mut().and_then(|u| u.denies(q.id, &argv)) {
            ctx.engine.acl_log_denied(
                ctx.client,
                denied,
                crate::acl::LogContext::Multi,
                q.id,
                &argv,
            );
            let reason = match denied {
                crate::acl::Denied::Command => "no permission to execute the command or subcommand",
                crate::acl::Denied::Key(_) => "no permission to touch the specified keys",
                crate::acl::Denied::Channel(_) => {
                    "no permission to access one of the channels used as arguments"
                }
            };
            ctx.out.error(format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"));
            continue;
        }
        ctx.engine.call(
            ctx.client,
            ctx.out,
            ctx.locks,
            ctx.stats,
            q.id,
            &argv,
            ctx.now_ms,
            true,
            ctx.in_script,
        );
    }
    Ok(())
}

fn watch_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(Error::err("WATCH inside MULTI is not allowed"));
    }
    let db = ctx.client.db;
    let now = ctx.now_ms;
    if ctx.client.watching.is_none() {
        ctx.client.watching = Some(Watching {
            state: WatchState::new(ctx.client.id()),
            keys: Vec::new(),
            key_bytes: 0,
        });
        ctx.engine.started_watching();
    }
    for key in &args[1..] {
        let watching = ctx.client.watching.as_mut().expect("set above");
        if watching
            .keys
            .iter()
            .any(|(d, k)| *d == db && k.as_slice() == *key)
        {
            continue;
        }
        watching.keys.push((db, key.to_vec()));
        watching.key_bytes += key.len();
        let state = watching.state.clone();
        let h = hash_key(key);
        let slice = &mut ctx.locks.shard(ctx.engine.keyspace().shard_of(h)).dbs[db];
        let expired = slice.is_expired_key(h, key, now);
        slice.watchers.add(key, &state, expired);
    }
    ctx.out.ok();
    Ok(())
}

fn unwatch_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.engine.unwatch_all(ctx.client, Some(ctx.locks));
    ctx.out.ok();
    Ok(())
}

/// EXEC's flags with those its queued commands add (Redis's
/// mstate.cmd_flags): a transaction that writes waits out CLIENT PAUSE
/// WRITE, one that may take memory is refused past maxmemory.
fn exec_flags(engine: &Engine, client: &ClientState, _: &[&[u8]], flags: u32) -> u32 {
    let Some(multi) = &client.multi else {
        return flags;
    };
    let t = table();
    multi.commands.iter().fold(flags, |flags, q| {
        let qspec = t.get(q.id).spec;
        let qflags = if qspec.flags_fn.is_some() {
            let qargv: Vec<&[u8]> = q.argv.iter().map(|a| a.as_slice()).collect();
            qspec.call_flags(engine, client, &qargv)
        } else {
            qspec.flags
        };
        // EXEC runs on a stale replica or while loading only when every
        // queued command may (Redis's mstate.cmd_inv_flags).
        let kept = !(flag::STALE | flag::LOADING) | (qflags & (flag::STALE | flag::LOADING));
        (flags | qflags & (flag::WRITE | flag::MAY_REPLICATE | flag::DENYOOM)) & kept
    })
}

const TX: u32 =
    flag::NOSCRIPT | flag::LOADING | flag::STALE | flag::FAST | flag::ALLOW_BUSY | flag::TX_CONTROL;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "multi",
        arity: 1,
        flags: TX,
        group: Group::Transactions,
        since: "1.2.0",
        summary: "Mark the start of a transaction block",
        complexity: "O(1)",
        handler: multi_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "exec",
        arity: 1,
        flags: flag::NOSCRIPT
            | flag::LOADING
            | flag::STALE
            | flag::SKIP_SLOWLOG
            | flag::TX_CONTROL
            | flag::RUNS_TX
            | flag::MULTI_OOM_OK,
        group: Group::Transactions,
        locks_fn: Some(exec_locks),
        flags_fn: Some(exec_flags),
        since: "1.2.0",
        summary: "Execute all commands issued after MULTI",
        complexity: "Depends on commands in the transaction",
        handler: exec_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "discard",
        arity: 1,
        flags: TX | flag::MULTI_OOM_OK,
        group: Group::Transactions,
        locks_fn: Some(watch_locks),
        since: "2.0.0",
        summary: "Discard all commands issued after MULTI",
        complexity: "O(N), when N is the number of queued commands",
        handler: discard_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "watch",
        arity: -2,
        flags: TX,
        keys: &[KeySpec::range(1, -1, 1, kflag::RO)],
        group: Group::Transactions,
        since: "2.2.0",
        summary: "Watch the given keys to determine execution of the MULTI/EXEC block",
        complexity: "O(1) for every key.",
        syntax: "key:key...",
        handler: watch_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "unwatch",
        arity: 1,
        flags: flag::NOSCRIPT | flag::LOADING | flag::STALE | flag::FAST | flag::ALLOW_BUSY,
        group: Group::Transactions,
        locks_fn: Some(watch_locks),
        since: "2.2.0",
        summary: "Forget about all watched keys",
        complexity: "O(1)",
        handler: unwatch_command,
        ..CommandSpec::DEFAULT
    },
];
