//! Server commands: DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, INFO, CONFIG,
//! COMMAND, TIME, SHUTDOWN, MEMORY (Redis's server.c, config.c, object.c).

use crate::command::args::Args;
use crate::command::spec::{flag, kflag, BeginSearch, CmdResult, CommandSpec, FindKeys, Group};
use crate::command::syntax::{self, ArgDoc};
use crate::command::{keys::reported_key_positions, table, Ctx};
use crate::engine::ShutdownMode;
use crate::util::glob_match;
use crate::util::number::{arg_i64, parse_i64};
use crate::util::time::now_us;
use crate::Error;
use std::sync::atomic::Ordering;

// ---------------------------------------------------------------------------
// Keyspace-wide commands.

fn dbsize_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let db = ctx.client.db;
    let n: usize = ctx.locks.held().map(|s| s.dbs[db].len()).sum();
    ctx.out.int(n as i64);
    Ok(())
}

/// FLUSHDB's and FLUSHALL's one option, ASYNC or SYNC (Redis's
/// getFlushCommandFlags). Either changes nothing here: a large flush
/// always drops its tables on a background thread (see `flush`).
fn parse_flush_mode(args: &[&[u8]]) -> Result<(), Error> {
    let mut a = Args::new(args);
    let _ = a.flag("ASYNC") || a.flag("SYNC");
    a.finish()
}

/// Empties one database (or all with None) in the held shards; returns the
/// number of keys removed. The tables are dropped on a background thread
/// when large, so FLUSHALL ASYNC and big flushes return at once.
pub fn flush(ctx: &mut Ctx, db: Option<usize>) -> usize {
    // Client-side caching: every key may have changed (Redis's
    // trackingInvalidateKeysOnFlush, for one database or all).
    ctx.track_flush();
    let mut removed = 0;
    let mut garbage = Vec::new();
    let now = ctx.now_ms;
    for shard in ctx.locks.held_mut() {
        for (i, slice) in shard.dbs.iter_mut().enumerate() {
            if db.is_none_or(|d| d == i) {
                slice.touch_all_watched(None, now);
            }
            // An empty slice may still hold its tables' bucket arrays.
            if db.is_none_or(|d| d == i) && slice.used_bytes() > 0 {
                removed += slice.len();
                garbage.push(slice.clear());
            }
        }
    }
    if removed > 10_000 {
        std::thread::spawn(move || drop(garbage));
    }
    removed
}

fn flushdb_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    parse_flush_mode(&args[1..])?;
    let db = ctx.client.db;
    let n = flush(ctx, Some(db));
    ctx.add_dirty(n as u64);
    // Logged even when the database was already empty (Redis forces it).
    ctx.force_propagation();
    ctx.out.ok();
    Ok(())
}

fn flushall_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    parse_flush_mode(&args[1..])?;
    // Redis's flushAllDataAndResetRDB: a snapshot being written is dropped,
    // and with save rules the (now empty) dataset is saved at once.
    let persist = &ctx.engine.persist();
    if persist.running() == Some(crate::persist::JobKind::Rdb) {
        persist.cancel(Some(crate::persist::JobKind::Rdb));
        for shard in ctx.locks.held_mut() {
            for db in shard.dbs.iter_mut() {
                db.end_snapshot();
            }
        }
    }
    // The keys removed are the changes (Redis 7.0.15's
    // flushAllDataAndResetRDB); the call is propagated all the same.
    let n = flush(ctx, None);
    ctx.add_dirty(n as u64);
    ctx.force_propagation();
    let save_rules = !ctx.engine.config().save().trim().is_empty();
    if !ctx.in_multi
        && save_rules
        && ctx.locks.holds_all()
        && crate::persist::save_locked(ctx.engine, ctx.locks).is_ok()
    {
        ctx.dirty = 0;
    }
    ctx.out.ok();
    Ok(())
}

fn swapdb_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let parse = |a: &[u8], msg: &'static str| {
        parse_i64(a)
            .filter(|v| *v >= i32::MIN as i64 && *v <= i32::MAX as i64)
            .ok_or_else(|| Error::err(msg))
    };
    let a = parse(args[1], "invalid first DB index")?;
    let b = parse(args[2], "invalid second DB index")?;
    let n = ctx.databases() as i64;
    if a < 0 || a >= n || b < 0 || b >= n {
        return Err(Error::DB_INDEX);
    }
    if a != b {
        let (a, b) = (a.min(b) as usize, a.max(b) as usize);
        let now = ctx.now_ms;
        for shard in ctx.locks.held_mut() {
            let (left, right) = shard.dbs.split_at_mut(b);
            let (da, db) = (&mut left[a], &mut right[0]);
            da.touch_all_watched(Some(db), now);
            db.touch_all_watched(Some(da), now);
            crate::keyspace::Db::swap_data(da, db);
        }
        // The tracking table does not know databases: every tracking
        // client drops what it holds (Redis 7.0 sends nothing here, and
        // leaves what its clients cached of both databases stale).
        ctx.track_flush();
        // Clients blocked in either database may now find data.
        ctx.engine
            .ready_after_swap(ctx.locks, [a, b], &mut ctx.client.ready_keys);
        ctx.add_dirty(1);
    }
    ctx.out.ok();
    Ok(())
}

fn time_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let us = now_us();
    ctx.out.array(2);
    ctx.out.bulk_str(&(us / 1_000_000).to_string());
    ctx.out.bulk_str(&(us % 1_000_000).to_string());
    Ok(())
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT] (Redis's shutdownCommand).
fn shutdown_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut flags = crate::persist::ShutdownFlags::default();
    let (mut save, mut nosave, mut abort) = (false, false, false);
    for a in &args[1..] {
        match a.to_ascii_lowercase().as_slice() {
            b"nosave" => nosave = true,
            b"save" => save = true,
            b"now" => flags.now = true,
            b"force" => flags.force = true,
            b"abort" => abort = true,
            _ => return Err(Error::SYNTAX),
        }
    }
    let any_flag = save || nosave || flags.now || flags.force;
    if (abort && any_flag) || (save && nosave) {
        return Err(Error::SYNTAX);
    }
    if abort {
        if !ctx.engine.abort_shutdown() {
            return Err(Error::err("No shutdown in progress."));
        }
        ctx.out.ok();
        return Ok(());
    }
    // It may wait for replicas, which a transaction cannot (Redis's
    // CLIENT_DENY_BLOCKING).
    if !flags.now && (ctx.in_multi || ctx.in_script) {
        return Err(Error::err(
            "SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client",
        ));
    }
    if save {
        flags.save = Some(true);
    } else if nosave {
        flags.save = Some(false);
    }
    // While a script runs too long only SHUTDOWN NOSAVE may stop the
    // server (its data may be half changed).
    if !nosave {
        if let Some(busy) = ctx.engine.scripting().busy_error() {
            return Err(busy);
        }
    }
    if ctx.engine.begin_shutdown(flags) == crate::shutdown::Begun::Waiting {
        // The client waits for the shutdown to end, or to fail; it counts
        // as blocked from now on (its connection's wait ends the count).
        ctx.engine
            .shutdown_state()
            .waiting
            .fetch_add(1, Ordering::Relaxed);
        ctx.client.handoff = Some(crate::client::Handoff::Shutdown);
        return Ok(());
    }
    crate::persist::prepare_shutdown(&ctx.engine.arc(), flags).map_err(Error::err)?;
    let mode = match flags.save {
        Some(true) => ShutdownMode::Save,
        Some(false) => ShutdownMode::NoSave,
        None => ShutdownMode::Default,
    };
    ctx.engine.request_shutdown(mode);
    // Redis closes the connection without a reply when the shutdown proceeds.
    ctx.client.close_after_reply = true;
    Ok(())
}

fn info_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sections: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let text = super::info::info_text(ctx, &sections);
    ctx.out.verbatim(&text, "txt");
    Ok(())
}

// ---------------------------------------------------------------------------
// CONFIG

fn config_get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pairs = ctx.engine.config().matching(&args[2..]);
    ctx.out.map(pairs.len());
    for (name, value) in pairs {
        ctx.out.bulk_str(name);
        ctx.out.bulk_str(&value);
    }
    Ok(())
}

fn config_set(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if (args.len() - 2) % 2 != 0 {
        return Err(Error::err("syntax error"));
    }
    let owned: Vec<(String, String)> = args[2..]
        .chunks(2)
        .map(|kv| {
            (
                String::from_utf8_lossy(kv[0]).into_owned(),
                String::from_utf8_lossy(kv[1]).into_owned(),
            )
        })
        .collect();
    let pairs: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    // The values before, to roll back to when applying fails (Redis's
    // restoreBackupConfig).
    let backup: Vec<(&str, String)> = pairs
        .iter()
        .filter_map(|(n, _)| crate::config::spec(n))
        .map(|s| (s.name, ctx.engine.config().value(s)))
        .collect();
    let protected = ctx.allows_protected(&ctx.engine.config().enable_protected_configs());
    match ctx.engine.config().set_many(&pairs, protected) {
        Ok(()) => {
            if let Err((name, reason)) = ctx.engine.apply_listeners(&backup) {
                for (n, v) in &backup {
                    let _ = ctx.engine.config().set_initial(n, v);
                }
                ctx.engine.apply_config();
                return Err(Error::err(format_args!(
                    "CONFIG SET failed (possibly related to argument '{name}') - {reason}"
                )));
            }
            // Redis's updateOOMScoreAdj, one apply for both parameters.
            let oom = ["oom-score-adj", "oom-score-adj-values"];
            if let Some(name) = pairs
                .iter()
                .map(|(n, _)| crate::config::spec(n))
                .find_map(|s| s.filter(|s| oom.contains(&s.name)).map(|s| s.name))
            {
                let config = ctx.engine.config();
                if crate::oom::apply(&config.oom_score_adj(), &config.oom_score_adj_values())
                    .is_err()
                {
                    for (n, v) in &backup {
                        let _ = config.set_initial(n, v);
                    }
                    ctx.engine.apply_config();
                    let _ =
                        crate::oom::apply(&config.oom_score_adj(), &config.oom_score_adj_values());
                    return Err(Error::err(format_args!(
                        "CONFIG SET failed (possibly related to argument '{name}') - Failed to set current oom_score_adj. Check server logs."
                    )));
                }
            }
            let holds_shards = ctx.in_multi || ctx.in_script || ctx.locks.held().next().is_some();
            ctx.engine.config_changed(&pairs, holds_shards)?;
            ctx.out.ok();
            Ok(())
        }
        Err((_, reason)) if reason == "unknown" => {
            // The name as the client sent it: the first that names no
            // parameter (the names before it passed).
            let name = args[2..]
                .iter()
                .step_by(2)
                .find(|n| crate::config::spec(&String::from_utf8_lossy(n)).is_none())
                .copied()
                .unwrap_or_default();
            Err(Error::concat(&[
                b"ERR Unknown option or number of arguments for CONFIG SET - '",
                crate::error::printf_s(name, usize::MAX),
                b"'",
            ]))
        }
        Err((name, reason)) => Err(Error::err(format_args!(
            "CONFIG SET failed (possibly related to argument '{name}') - {reason}"
        ))),
    }
}

fn config_resetstat(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.engine.reset_stats();
    ctx.out.ok();
    Ok(())
}

fn config_rewrite(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let path = ctx.engine.config_file();
    if path.is_empty() {
        return Err(Error::err("The server is running without a config file"));
    }
    match rewrite_config_file(ctx, &path, false) {
        Ok(()) => {
            crate::log::warning("CONFIG REWRITE executed with success.");
            ctx.out.ok();
            Ok(())
        }
        Err(reason) => {
            crate::log::warning(&format!("CONFIG REWRITE failed: {reason}"));
            Err(Error::err(format_args!("Rewriting config file: {reason}")))
        }
    }
}

/// Rewrites the config file at `path` (Redis's rewriteConfig); `force_all`
/// writes every parameter, defaults included. The error is strerror's text.
pub(super) fn rewrite_config_file(
    ctx: &mut Ctx,
    path: &str,
    force_all: bool,
) -> Result<(), String> {
    let users: Vec<String> = super::acl::config_lines(ctx.engine)
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    let result = match std::fs::read(path) {
        Ok(old) => Ok(String::from_utf8_lossy(&old).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e),
    }
    .and_then(|old| {
        let text = crate::config::rewrite::rewrite(&old, ctx.engine.config(), &users, force_all);
        crate::config::rewrite::overwrite(path, &text)
    });
    result.map_err(|e| crate::config::rewrite::strerror(&e))
}

fn config_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// COMMAND

/// COMMAND INFO's flags, in Redis's order (addReplyFlagsForCommand):
/// "movablekeys" right before "allow_busy".
fn flag_names(spec: &CommandSpec) -> Vec<&'static str> {
    let mut v = Vec::new();
    for &(f, n) in flag::NAMES {
        if f == flag::ALLOW_BUSY && spec.movable_keys() {
            v.push("movablekeys");
        }
        if spec.flags & f != 0 {
            v.push(n);
        }
    }
    v
}

fn reply_key_flags(ctx: &mut Ctx, flags: u32) {
    let names: Vec<&str> = kflag::NAMES
        .iter()
        .filter(|(f, _)| flags & f != 0)
        .map(|(_, n)| *n)
        .collect();
    ctx.out.set(names.len());
    for n in names {
        ctx.out.simple(n);
    }
}

fn reply_key_specs(ctx: &mut Ctx, spec: &CommandSpec) {
    ctx.out.set(spec.keys.len());
    for (i, ks) in spec.keys.iter().enumerate() {
        let notes = spec.key_spec_notes.iter().find(|(at, _)| *at == i);
        ctx.out.map(if notes.is_some() { 4 } else { 3 });
        if let Some((_, notes)) = notes {
            ctx.out.bulk(b"notes");
            ctx.out.bulk_str(notes);
        }
        ctx.out.bulk(b"flags");
        reply_key_flags(ctx, ks.flags);
        ctx.out.bulk(b"begin_search");
        ctx.out.map(2);
        ctx.out.bulk(b"type");
        match ks.begin {
            BeginSearch::Index(pos) => {
                ctx.out.bulk(b"index");
                ctx.out.bulk(b"spec");
                ctx.out.map(1);
                ctx.out.bulk(b"index");
                ctx.out.int(pos as i64);
            }
            BeginSearch::Keyword {
                keyword,
                start_from,
            } => {
                ctx.out.bulk(b"keyword");
                ctx.out.bulk(b"spec");
                ctx.out.map(2);
                ctx.out.bulk(b"keyword");
                ctx.out.bulk_str(keyword);
                ctx.out.bulk(b"startfrom");
                ctx.out.int(start_from as i64);
            }
            BeginSearch::Unknown => {
                ctx.out.bulk(b"unknown");
                ctx.out.bulk(b"spec");
                ctx.out.map(0);
            }
        }
        ctx.out.bulk(b"find_keys");
        ctx.out.map(2);
        ctx.out.bulk(b"type");
        match ks.find {
            FindKeys::Range {
                lastkey,
                step,
                limit,
            } => {
                ctx.out.bulk(b"range");
                ctx.out.bulk(b"spec");
                ctx.out.map(3);
                ctx.out.bulk(b"lastkey");
                ctx.out.int(lastkey as i64);
                ctx.out.bulk(b"keystep");
                ctx.out.int(step as i64);
                ctx.out.bulk(b"limit");
                ctx.out.int(limit as i64);
            }
            FindKeys::Keynum {
                keynum_idx,
                first,
                step,
            } => {
                ctx.out.bulk(b"keynum");
                ctx.out.bulk(b"spec");
                ctx.out.map(3);
                ctx.out.bulk(b"keynumidx");
                ctx.out.int(keynum_idx as i64);
                ctx.out.bulk(b"firstkey");
                ctx.out.int(first as i64);
                ctx.out.bulk(b"keystep");
                ctx.out.int(step as i64);
            }
            FindKeys::Unknown => {
                ctx.out.bulk(b"unknown");
                ctx.out.bulk(b"spec");
                ctx.out.map(0);
            }
        }
    }
}

/// One COMMAND INFO entry (Redis 7.0's 10-element form).
fn reply_command_info(ctx: &mut Ctx, id: usize) {
    let entry = table().get(id);
    let spec = entry.spec;
    let ((first, last, step), _) = spec.legacy_range();
    ctx.out.array(10);
    ctx.out.bulk_str(&entry.fullname);
    ctx.out.int(spec.arity as i64);
    let flags = flag_names(spec);
    ctx.out.set(flags.len());
    for f in flags {
        ctx.out.simple(f);
    }
    ctx.out.int(first as i64);
    ctx.out.int(last as i64);
    ctx.out.int(step as i64);
    let cats = spec.acl_categories();
    ctx.out.set(cats.len());
    for c in cats {
        ctx.out.simple(format!("@{c}"));
    }
    ctx.out.set(spec.tips.len());
    for t in spec.tips {
        ctx.out.bulk_str(t);
    }
    reply_key_specs(ctx, spec);
    let subs: Vec<usize> = spec
        .subcommands
        .iter()
        .filter_map(|s| table().subcommand(id, s.name.as_bytes()))
        .collect();
    // Redis answers an empty set for a command without subcommands.
    if subs.is_empty() {
        ctx.out.set(0);
    } else {
        ctx.out.array(subs.len());
    }
    for sub in subs {
        reply_command_info(ctx, sub);
    }
}

fn reply_arg_docs(ctx: &mut Ctx, args: &[ArgDoc]) {
    ctx.out.array(args.len());
    for a in args {
        let mut n = 2;
        if a.key_spec_index.is_some() {
            n += 1;
        }
        if a.token.is_some() {
            n += 1;
        }
        if a.since.is_some() {
            n += 1;
        }
        if a.deprecated_since.is_some() {
            n += 1;
        }
        if a.optional || a.multiple || a.multiple_token {
            n += 1;
        }
        if !a.children.is_empty() {
            n += 1;
        }
        ctx.out.map(n);
        ctx.out.bulk(b"name");
        ctx.out.bulk_str(&a.name);
        ctx.out.bulk(b"type");
        ctx.out.bulk_str(a.kind);
        if let Some(i) = a.key_spec_index {
            ctx.out.bulk(b"key_spec_index");
            ctx.out.int(i as i64);
        }
        if let Some(t) = &a.token {
            ctx.out.bulk(b"token");
            ctx.out.bulk_str(t);
        }
        if let Some(v) = &a.since {
            ctx.out.bulk(b"since");
            ctx.out.bulk_str(v);
        }
        if let Some(v) = &a.deprecated_since {
            ctx.out.bulk(b"deprecated_since");
            ctx.out.bulk_str(v);
        }
        if a.optional || a.multiple || a.multiple_token {
            ctx.out.bulk(b"flags");
            let flags: Vec<&str> = [
                (a.optional, "optional"),
                (a.multiple, "multiple"),
                (a.multiple_token, "multiple_token"),
            ]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
            ctx.out.set(flags.len());
            for f in flags {
                ctx.out.simple(f);
            }
        }
        if !a.children.is_empty() {
            ctx.out.bulk(b"arguments");
            reply_arg_docs(ctx, &a.children);
        }
    }
}

fn reply_command_docs(ctx: &mut Ctx, id: usize) {
    let entry = table().get(id);
    let spec = entry.spec;
    let args = syntax::parse(spec.syntax);
    let subs: Vec<usize> = spec
        .subcommands
        .iter()
        .filter_map(|s| table().subcommand(id, s.name.as_bytes()))
        .collect();
    let present = [
        !spec.complexity.is_empty(),
        !spec.doc_flags.is_empty(),
        !spec.deprecated_since.is_empty(),
        !spec.replaced_by.is_empty(),
        !spec.history.is_empty(),
        !args.is_empty(),
        !subs.is_empty(),
    ];
    ctx.out.map(3 + present.iter().filter(|p| **p).count());
    ctx.out.bulk(b"summary");
    ctx.out.bulk_str(spec.summary);
    ctx.out.bulk(b"since");
    ctx.out.bulk_str(spec.since);
    ctx.out.bulk(b"group");
    ctx.out.bulk_str(spec.group.name());
    if !spec.complexity.is_empty() {
        ctx.out.bulk(b"complexity");
        ctx.out.bulk_str(spec.complexity);
    }
    if !spec.doc_flags.is_empty() {
        ctx.out.bulk(b"doc_flags");
        ctx.out.set(spec.doc_flags.len());
        for f in spec.doc_flags {
            ctx.out.simple(f);
        }
    }
    if !spec.deprecated_since.is_empty() {
        ctx.out.bulk(b"deprecated_since");
        ctx.out.bulk_str(spec.deprecated_since);
    }
    if !spec.replaced_by.is_empty() {
        ctx.out.bulk(b"replaced_by");
        ctx.out.bulk_str(spec.replaced_by);
    }
    if !spec.history.is_empty() {
        ctx.out.bulk(b"history");
        ctx.out.set(spec.history.len());
        for (version, change) in spec.history {
            ctx.out.array(2);
            ctx.out.bulk_str(version);
            ctx.out.bulk_str(change);
        }
    }
    if !args.is_empty() {
        ctx.out.bulk(b"arguments");
        reply_arg_docs(ctx, &args);
    }
    if !subs.is_empty() {
        ctx.out.bulk(b"subcommands");
        ctx.out.map(subs.len());
        for sub in subs {
            ctx.out.bulk_str(&table().get(sub).fullname);
            reply_command_docs(ctx, sub);
        }
    }
}

fn command_command(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let ids: Vec<usize> = table().top_level().collect();
    ctx.out.array(ids.len());
    for id in ids {
        reply_command_info(ctx, id);
    }
    Ok(())
}

fn command_count(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(table().top_level().count() as i64);
    Ok(())
}

fn command_info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() == 2 {
        return command_command(ctx, args);
    }
    ctx.out.array(args.len() - 2);
    for name in &args[2..] {
        match table().by_fullname(&String::from_utf8_lossy(name)) {
            Some(id) => reply_command_info(ctx, id),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

fn command_docs(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let ids: Vec<usize> = if args.len() == 2 {
        table().top_level().collect()
    } else {
        args[2..]
            .iter()
            .filter_map(|n| table().by_fullname(&String::from_utf8_lossy(n)))
            .collect()
    };
    ctx.out.map(ids.len());
    for id in ids {
        ctx.out.bulk_str(&table().get(id).fullname);
        reply_command_docs(ctx, id);
    }
    Ok(())
}

/// COMMAND LIST's filter (one at most).
enum CommandFilter<'a> {
    None,
    Module,
    AclCat(String),
    Pattern(&'a [u8]),
}

fn parse_command_list<'a>(args: &[&'a [u8]]) -> Result<CommandFilter<'a>, Error> {
    let mut a = Args::new(&args[2..]);
    if a.is_empty() {
        return Ok(CommandFilter::None);
    }
    if !a.flag("FILTERBY") {
        return Err(Error::SYNTAX);
    }
    let (i, value) = a
        .option_of(&["MODULE", "ACLCAT", "PATTERN"])
        .ok_or(Error::SYNTAX)?;
    a.finish()?;
    Ok(match i {
        0 => CommandFilter::Module,
        1 => CommandFilter::AclCat(String::from_utf8_lossy(value).to_ascii_lowercase()),
        _ => CommandFilter::Pattern(value),
    })
}

fn command_list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let filter = parse_command_list(args)?;
    let t = table();
    let mut names: Vec<&str> = Vec::new();
    for id in 0..t.len() {
        let e = t.get(id);
        let keep = match &filter {
            // Subcommands are listed too (Redis's commandListWithoutFilter
            // and commandListWithFilter recurse into them).
            CommandFilter::None => true,
            CommandFilter::Module => false,
            CommandFilter::AclCat(c) => e.spec.acl_categories().iter().any(|x| x == c),
            CommandFilter::Pattern(p) => glob_match(p, e.fullname.as_bytes(), true),
        };
        if keep {
            names.push(&e.fullname);
        }
    }
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk_str(n);
    }
    Ok(())
}

fn getkeys_generic(ctx: &mut Ctx, args: &[&[u8]], with_flags: bool) -> CmdResult {
    let cmd_args = &args[2..];
    let t = table();
    let id = t
        .lookup_call(cmd_args)
        .ok_or_else(|| Error::err("Invalid command specified"))?;
    let spec = t.get(id).spec;
    // Redis's doesCommandHaveKeys, then its arity check.
    if spec.keys_fn.is_none() && spec.keys.iter().all(|k| k.flags & kflag::NOT_KEY != 0) {
        return Err(Error::err("The command has no key arguments"));
    }
    if !spec.arity_ok(cmd_args.len()) {
        return Err(Error::err(
            "Invalid number of arguments specified for command",
        ));
    }
    let keys = reported_key_positions(spec, cmd_args).unwrap_or_default();
    if keys.is_empty() && !spec.has(flag::NO_MANDATORY_KEYS) {
        return Err(Error::err("Invalid arguments specified for command"));
    }
    ctx.out.array(keys.len());
    for (pos, flags) in keys {
        if with_flags {
            ctx.out.array(2);
            ctx.out.bulk(cmd_args[pos]);
            reply_key_flags(ctx, flags);
        } else {
            ctx.out.bulk(cmd_args[pos]);
        }
    }
    Ok(())
}

fn command_getkeys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    getkeys_generic(ctx, args, false)
}

fn command_getkeysandflags(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    getkeys_generic(ctx, args, true)
}

fn command_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all commands.",
            "COUNT",
            "    Return the total number of commands in this server.",
            "LIST",
            "    Return a list of all commands in this server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full command.",
        ],
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// MEMORY

/// MEMORY USAGE's SAMPLES (the last one given counts): how many elements
/// of a collection to estimate it from, 0 for all of them.
fn parse_memory_usage(args: &[&[u8]]) -> Result<usize, Error> {
    let mut samples = crate::keyspace::object::DEFAULT_SIZE_SAMPLES;
    let mut a = Args::new(&args[3..]);
    while !a.is_empty() {
        let n = a.option("SAMPLES").ok_or(Error::SYNTAX)?;
        let n = arg_i64(n)?;
        if n < 0 {
            return Err(Error::SYNTAX);
        }
        samples = usize::try_from(n).unwrap_or(usize::MAX);
    }
    Ok(samples)
}

/// MEMORY USAGE key [SAMPLES count]: what used_memory charges the key
/// (its node, name and expiry entry, see `keyspace::memory`) and its
/// value, collections estimated from `count` elements (default 5, 0 =
/// all), as Redis's objectComputeSize. With the default count it is the
/// value's very charge.
fn memory_usage(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let samples = parse_memory_usage(args)?;
    let key_len = args[2].len();
    let Some(obj) = ctx.lookup_no_touch(args[2]) else {
        ctx.out.null();
        return Ok(());
    };
    let value = if samples == crate::keyspace::object::DEFAULT_SIZE_SAMPLES {
        obj.value.charge()
    } else {
        obj.value.heap_size_sampled(samples)
    };
    let usage = crate::keyspace::memory::entry_cost(key_len, obj) + value;
    ctx.out.int(usage as i64);
    Ok(())
}

/// MEMORY STATS: Redis's getMemoryOverheadData figures, from what the
/// allocator and the key tables report.
fn memory_stats(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let mem = crate::memory::stats();
    let figures = ctx.engine.memory_use();
    let used = figures.total();
    let peak = ctx.engine.memory_peak(used);
    let databases = ctx.databases();
    let mut per_db = vec![(0usize, 0usize, 0usize); databases];
    for shard in ctx.locks.held() {
        for (i, d) in shard.dbs.iter().enumerate() {
            let (main, expires) = d.overhead_split();
            per_db[i].0 += d.len();
            per_db[i].1 += main;
            per_db[i].2 += expires;
        }
    }
    let keys: usize = per_db.iter().map(|d| d.0).sum();
    let tables: u64 = per_db.iter().map(|d| (d.1 + d.2) as u64).sum();
    let overhead = figures.startup + figures.clients + figures.scripts + tables;
    let dataset = used.saturating_sub(overhead);
    let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 1.0 };
    let used_dbs: Vec<(usize, (usize, usize, usize))> = per_db
        .into_iter()
        .enumerate()
        .filter(|(_, d)| d.0 > 0)
        .collect();
    let o = &mut *ctx.out;
    o.map(27 + used_dbs.len());
    let int = |o: &mut crate::protocol::ReplyWriter, name: &str, v: u64| {
        o.bulk(name.as_bytes());
        o.int(v as i64);
    };
    int(o, "peak.allocated", peak);
    int(o, "total.allocated", used);
    int(o, "startup.allocated", figures.startup);
    int(o, "replication.backlog", 0);
    int(o, "clients.slaves", 0);
    int(o, "clients.normal", figures.clients);
    int(o, "cluster.links", 0);
    int(o, "aof.buffer", 0);
    // Redis's evalScriptsMemory and functionsMemoryOverhead.
    let st = &ctx.engine.scripting().stats;
    int(
        o,
        "lua.caches",
        st.cached_scripts_memory.load(Ordering::Relaxed),
    );
    int(
        o,
        "functions.caches",
        st.functions_memory.load(Ordering::Relaxed),
    );
    for (i, (_, main, expires)) in &used_dbs {
        o.bulk(format!("db.{i}").as_bytes());
        o.map(2);
        int(o, "overhead.hashtable.main", *main as u64);
        int(o, "overhead.hashtable.expires", *expires as u64);
    }
    int(o, "overhead.total", overhead);
    int(o, "keys.count", keys as u64);
    int(
        o,
        "keys.bytes-per-key",
        if keys > 0 {
            used.saturating_sub(figures.startup) / keys as u64
        } else {
            0
        },
    );
    int(o, "dataset.bytes", dataset);
    o.bulk(b"dataset.percentage");
    o.double(ratio(dataset * 100, used.saturating_sub(figures.startup)) as f32 as f64);
    o.bulk(b"peak.percentage");
    o.double(ratio(used * 100, peak) as f32 as f64);
    int(o, "allocator.allocated", mem.allocated);
    int(o, "allocator.active", mem.active);
    int(o, "allocator.resident", mem.resident);
    o.bulk(b"allocator-fragmentation.ratio");
    o.double(ratio(mem.active, mem.allocated) as f32 as f64);
    int(
        o,
        "allocator-fragmentation.bytes",
        mem.active.saturating_sub(mem.allocated),
    );
    o.bulk(b"allocator-rss.ratio");
    o.double(ratio(mem.resident, mem.active) as f32 as f64);
    int(
        o,
        "allocator-rss.bytes",
        mem.resident.saturating_sub(mem.active),
    );
    o.bulk(b"rss-overhead.ratio");
    o.double(ratio(mem.rss, mem.resident) as f32 as f64);
    int(
        o,
        "rss-overhead.bytes",
        mem.rss.saturating_sub(mem.resident),
    );
    o.bulk(b"fragmentation");
    o.double(ratio(mem.rss, used) as f32 as f64);
    int(o, "fragmentation.bytes", mem.rss.saturating_sub(used));
    Ok(())
}

/// MEMORY DOCTOR: Redis's report (getMemoryDoctorReport), on the
/// fragmentation figures Goblin has.
fn memory_doctor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let mem = crate::memory::stats();
    let report: &[u8] = if mem.allocated < 5 << 20 {
        b"Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
    } else if mem.active > mem.allocated + (10 << 20)
        && mem.active as f64 > mem.allocated as f64 * 1.1
    {
        b"Sam, I detected a few issues in this Redis instance memory implants:\n\n * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\nI'm here to keep you safe, Sam. I want to help you.\n"
    } else {
        b"Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
    };
    ctx.out.verbatim(report, "txt");
    Ok(())
}

/// MEMORY MALLOC-STATS: the allocator's own report is not exposed; Redis
/// answers the same for allocators without one.
/// MEMORY MALLOC-STATS: the allocator's own report (jemalloc's
/// malloc_stats_print), or Redis's text without one.
fn memory_malloc_stats(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    match crate::memory::allocator() {
        Some(a) => ctx.out.verbatim(&(a.report)(), "txt"),
        None => ctx
            .out
            .bulk(b"Stats not supported for the current allocator"),
    }
    Ok(())
}

/// MEMORY PURGE: the allocator returns its dirty pages (Redis's
/// jemalloc_purge).
fn memory_purge(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if crate::memory::allocator().is_some_and(|a| !(a.purge)()) {
        return Err(Error::err("Error purging dirty pages"));
    }
    ctx.out.ok();
    Ok(())
}

fn memory_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "MEMORY",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    );
    Ok(())
}

static MEMORY_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "doctor",
        arity: 2,
        flags: 0,
        group: Group::Server,
        since: "4.0.0",
        summary: "Outputs memory problems report",
        complexity: "O(1)",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
        handler: memory_doctor,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "malloc-stats",
        arity: 2,
        flags: 0,
        group: Group::Server,
        since: "4.0.0",
        summary: "Show allocator internal stats",
        complexity: "Depends on how much memory is allocated, could be slow",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
        handler: memory_malloc_stats,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "purge",
        arity: 2,
        flags: 0,
        group: Group::Server,
        since: "4.0.0",
        summary: "Ask the allocator to release memory",
        complexity: "Depends on how much memory is allocated, could be slow",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        handler: memory_purge,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "stats",
        arity: 2,
        flags: flag::ALL_SHARDS,
        group: Group::Server,
        since: "4.0.0",
        summary: "Show memory usage details",
        complexity: "O(1)",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
        handler: memory_stats,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "4.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: memory_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "usage",
        arity: -3,
        flags: flag::READONLY,
        keys: &[crate::command::spec::KeySpec::at(2, kflag::RO)],
        group: Group::Server,
        since: "4.0.0",
        summary: "Estimate the memory usage of a key",
        complexity: "O(N) where N is the number of samples.",
        syntax: "key:key [SAMPLES count:integer]",
        handler: memory_usage,
        ..CommandSpec::DEFAULT
    },
];

// ---------------------------------------------------------------------------
// The family's table.

static CONFIG_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "get",
        arity: -3,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "2.0.0",
        summary: "Get the values of configuration parameters",
        complexity: "O(N) when N is the number of configuration parameters provided",
        history: &[(
            "7.0.0",
            "Added the ability to pass multiple pattern parameters in one call",
        )],
        syntax: "parameter:block(parameter:string)...",
        handler: config_get,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "set",
        arity: -4,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "2.0.0",
        summary: "Set configuration parameters to the given values",
        complexity: "O(N) when N is the number of configuration parameters provided",
        history: &[(
            "7.0.0",
            "Added the ability to set multiple parameters in one call.",
        )],
        syntax: "parameter_value:block(parameter:string value:string)...",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        handler: config_set,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "resetstat",
        arity: 2,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "2.0.0",
        summary: "Reset the stats returned by INFO",
        complexity: "O(1)",
        handler: config_resetstat,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "rewrite",
        arity: 2,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "2.8.0",
        summary: "Rewrite the configuration file with the in memory configuration",
        complexity: "O(1)",
        handler: config_rewrite,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: config_help,
        ..CommandSpec::DEFAULT
    },
];

static COMMAND_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "count",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Server,
        since: "2.8.13",
        summary: "Get total number of Redis commands",
        complexity: "O(1)",
        handler: command_count,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "docs",
        arity: -2,
        flags: flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Server,
        since: "7.0.0",
        summary: "Get array of specific Redis command documentation",
        complexity: "O(N) where N is the number of commands to look up",
        syntax: "[command-name:string...]",
        tips: &["nondeterministic_output_order"],
        handler: command_docs,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getkeys",
        arity: -4,
        flags: flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Server,
        since: "2.8.13",
        summary: "Extract keys given a full Redis command",
        complexity: "O(N) where N is the number of arguments to the command",
        handler: command_getkeys,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getkeysandflags",
        arity: -4,
        flags: flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Server,
        since: "7.0.0",
        summary: "Extract keys and access flags given a full Redis command",
        complexity: "O(N) where N is the number of arguments to the command",
        handler: command_getkeysandflags,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Server,
        since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: command_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "info",
        arity: -2,
        flags: flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Server,
        since: "2.8.13",
        summary: "Get array of specific Redis command details, or all when no argument is given.",
        complexity: "O(N) where N is the number of commands to look up",
        history: &[("7.0.0", "Allowed to be called with no argument to get info on all commands.")],
        syntax: "[command-name:string...]",
        tips: &["nondeterministic_output_order"],
        handler: command_info,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "list",
        arity: -2,
        flags: flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Server,
        since: "7.0.0",
        summary: "Get an array of Redis command names",
        complexity: "O(N) where N is the total number of Redis commands",
        syntax: "[FILTERBY filterby:oneof(MODULE module-name:string|ACLCAT category:string|PATTERN pattern:pattern)]",
        tips: &["nondeterministic_output_order"],
        handler: command_list,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "dbsize",
        arity: 1,
        flags: flag::READONLY | flag::FAST | flag::ALL_SHARDS,
        acl: &["keyspace"],
        group: Group::Server,
        since: "1.0.0",
        summary: "Return the number of keys in the selected database",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:agg_sum"],
        handler: dbsize_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "flushdb",
        arity: -1,
        flags: flag::WRITE | flag::ALL_SHARDS,
        acl: &["keyspace", "dangerous"],
        group: Group::Server,
        since: "1.0.0",
        summary: "Remove all keys from the current database",
        complexity: "O(N) where N is the number of keys in the selected database",
        history: &[("4.0.0", "Added the `ASYNC` flushing mode modifier."), ("6.2.0", "Added the `SYNC` flushing mode modifier.")],
        syntax: "[async:oneof(ASYNC{since:4.0.0}|SYNC{since:6.2.0})]",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        handler: flushdb_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "flushall",
        arity: -1,
        flags: flag::WRITE | flag::ALL_SHARDS,
        acl: &["keyspace", "dangerous"],
        group: Group::Server,
        since: "1.0.0",
        summary: "Remove all keys from all databases",
        complexity: "O(N) where N is the total number of keys in all databases",
        history: &[("4.0.0", "Added the `ASYNC` flushing mode modifier."), ("6.2.0", "Added the `SYNC` flushing mode modifier.")],
        syntax: "[async:oneof(ASYNC{since:4.0.0}|SYNC{since:6.2.0})]",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        handler: flushall_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "swapdb",
        arity: 3,
        flags: flag::WRITE | flag::FAST | flag::ALL_SHARDS,
        acl: &["keyspace", "dangerous"],
        group: Group::Server,
        since: "4.0.0",
        summary: "Swaps two Redis databases",
        complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases.",
        syntax: "index1:integer index2:integer",
        handler: swapdb_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "info",
        arity: -1,
        flags: flag::LOADING | flag::STALE | flag::ALL_SHARDS,
        acl: &["dangerous"],
        group: Group::Server,
        since: "1.0.0",
        summary: "Get information and statistics about the server",
        complexity: "O(1)",
        history: &[("7.0.0", "Added support for taking multiple section arguments.")],
        syntax: "[section:string...]",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
        handler: info_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "config",
        arity: -2,
        group: Group::Server,
        subcommands: CONFIG_SUBCOMMANDS,
        since: "2.0.0",
        summary: "A container for server configuration commands",
        complexity: "Depends on subcommand.",
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "command",
        arity: -1,
        flags: flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Server,
        since: "2.8.13",
        summary: "Get array of Redis command details",
        complexity: "O(N) where N is the total number of Redis commands",
        tips: &["nondeterministic_output_order"],
        handler: command_command,
        subcommands: COMMAND_SUBCOMMANDS,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "time",
        arity: 1,
        flags: flag::LOADING | flag::STALE | flag::FAST,
        group: Group::Server,
        since: "2.6.0",
        summary: "Return the current server time",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        handler: time_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "shutdown",
        arity: -1,
        flags: flag::ADMIN | flag::NOSCRIPT | flag::LOADING | flag::STALE | flag::NO_MULTI | flag::ALLOW_BUSY,
        group: Group::Server,
        since: "1.0.0",
        summary: "Synchronously save the dataset to disk and then shut down the server",
        complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
        history: &[("7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers.")],
        syntax: "[nosave_save:oneof(NOSAVE|SAVE)] [NOW]{since:7.0.0} [FORCE]{since:7.0.0} [ABORT]{since:7.0.0}",
        handler: shutdown_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "memory",
        arity: -2,
        group: Group::Server,
        subcommands: MEMORY_SUBCOMMANDS,
        since: "4.0.0",
        summary: "A container for memory diagnostics commands",
        complexity: "Depends on subcommand.",
        ..CommandSpec::DEFAULT
    },
];
