//! DEBUG (Redis's debug.c): the subcommands the Tcl suite and operators
//! use. Where a subcommand reports or tunes one of Redis's internal
//! encodings, Goblin answers with its own equivalent
//! (docs/design/introspection.md).

use crate::command::spec::{flag, CmdResult, CommandSpec, Group};
use crate::command::Ctx;
use crate::keyspace::Object;
use crate::util::number::arg_i64;
use crate::util::time::now_us;
use crate::Error;
use std::sync::atomic::Ordering;

/// A digest of one value, stable across restarts (DEBUG DIGEST-VALUE).
pub fn value_digest(obj: &Object) -> [u8; 20] {
    use sha1::{Digest, Sha1};
    let mut h = Sha1::new();
    h.update([obj.value.value_type() as u8]);
    crate::keyspace::digest::digest_value(&obj.value, &mut |b| h.update(b));
    h.finalize().into()
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// One DEBUG subcommand: its names, whether it takes a call of `argc`
/// arguments (DEBUG and the name counted), and its handler.
struct Sub {
    names: &'static [&'static str],
    argc: fn(usize) -> bool,
    run: fn(&mut Ctx, &[&[u8]]) -> CmdResult,
}

/// DEBUG's subcommands; a call that fits none gets Redis's
/// unknown-subcommand error.
static SUBCOMMANDS: &[Sub] = &[
    Sub {
        names: &["replicate"],
        argc: |n| n >= 3,
        run: debug_replicate,
    },
    Sub {
        names: &["help"],
        argc: |n| n == 2,
        run: debug_help,
    },
    Sub {
        names: &["config-rewrite-force-all"],
        argc: |n| n == 2,
        run: debug_config_rewrite_force_all,
    },
    Sub {
        names: &["set-active-expire"],
        argc: |n| n == 3,
        run: debug_set_active_expire,
    },
    Sub {
        names: &["sleep"],
        argc: |n| n == 3,
        run: debug_sleep,
    },
    Sub {
        names: &["object"],
        argc: |n| n == 3,
        run: debug_object,
    },
    Sub {
        names: &["digest"],
        argc: |n| n == 2,
        run: debug_digest,
    },
    Sub {
        names: &["digest-value"],
        argc: |_| true,
        run: debug_digest_value,
    },
    Sub {
        names: &["protocol"],
        argc: |n| n == 3,
        run: debug_protocol,
    },
    Sub {
        names: &["set-disable-deny-scripts"],
        argc: |n| n == 3,
        run: debug_set_disable_deny_scripts,
    },
    Sub {
        names: &["quicklist-packed-threshold"],
        argc: |n| n == 3,
        run: debug_quicklist_packed_threshold,
    },
    Sub {
        names: &["change-repl-id"],
        argc: |n| n == 2,
        run: debug_change_repl_id,
    },
    Sub {
        names: &["stringmatch-test", "stringmatch-len"],
        argc: |n| n == 2,
        run: debug_stringmatch_test,
    },
    Sub {
        names: &["listpack"],
        argc: |n| n == 3,
        run: debug_listpack,
    },
    Sub {
        names: &["quicklist"],
        argc: |n| n == 3 || n == 4,
        run: debug_quicklist,
    },
    Sub {
        names: &["mallctl"],
        argc: |n| n >= 3,
        run: debug_mallctl,
    },
    Sub {
        names: &["mallctl-str"],
        argc: |n| n >= 3,
        run: debug_mallctl_str,
    },
    Sub {
        names: &["replybuffer"],
        argc: |n| n == 4,
        run: debug_replybuffer,
    },
    Sub {
        names: &["pause-cron"],
        argc: |n| n == 3,
        run: debug_pause_cron,
    },
    Sub {
        names: &["set-skip-checksum-validation"],
        argc: |n| n == 3,
        run: debug_set_skip_checksum_validation,
    },
    Sub {
        names: &["segfault"],
        argc: |n| n == 2,
        run: debug_segfault,
    },
    Sub {
        names: &["panic"],
        argc: |n| n == 2,
        run: debug_panic,
    },
    Sub {
        names: &["assert"],
        argc: |n| n == 2,
        run: debug_assert,
    },
    Sub {
        names: &["populate"],
        argc: |n| (3..=5).contains(&n),
        run: debug_populate,
    },
    Sub {
        names: &["aof-flush-sleep"],
        argc: |n| n == 3,
        run: debug_aof_flush_sleep,
    },
    Sub {
        names: &["log"],
        argc: |n| n == 3,
        run: debug_log,
    },
    Sub {
        names: &["reload"],
        argc: |_| true,
        run: debug_reload,
    },
    Sub {
        names: &["loadaof"],
        argc: |_| true,
        run: debug_loadaof,
    },
];

fn debug_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = SUBCOMMANDS.iter().find(|s| {
        s.names
            .iter()
            .any(|n| n.as_bytes().eq_ignore_ascii_case(args[1]))
            && (s.argc)(args.len())
    });
    match sub {
        Some(sub) => (sub.run)(ctx, args),
        None => Err(super::help::subcommand_syntax_error(args, "DEBUG")),
    }
}

/// A command into the replication stream, as it is (a test aid).
fn debug_replicate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut out = Vec::new();
    crate::propagate::encode_command(&mut out, &args[2..]);
    crate::propagate::emit_encoded(ctx.engine.repl(), &out);
    ctx.out.ok();
    Ok(())
}

fn debug_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    // Redis's text, the jemalloc entries included (goblin-server
    // runs on jemalloc).
    super::help::reply_help(
        ctx,
        "DEBUG",
        &[
            "AOF-FLUSH-SLEEP <microsec>",
            "    Server will sleep before flushing the AOF, this is used for testing.",
            "ASSERT",
            "    Crash by assertion failed.",
            "CHANGE-REPL-ID",
            "    Change the replication IDs of the instance.",
            "    Dangerous: should be used only for testing the replication subsystem.",
            "CONFIG-REWRITE-FORCE-ALL",
            "    Like CONFIG REWRITE but writes all configuration options, including",
            "    keywords not listed in original configuration file or default values.",
            "CRASH-AND-RECOVER [<milliseconds>]",
            "    Hard crash and restart after a <milliseconds> delay (default 0).",
            "DIGEST",
            "    Output a hex signature representing the current DB content.",
            "DIGEST-VALUE <key> [<key> ...]",
            "    Output a hex signature of the values of all the specified keys.",
            "ERROR <string>",
            "    Return a Redis protocol error with <string> as message. Useful for clients",
            "    unit tests to simulate Redis errors.",
            "LEAK <string>",
            "    Create a memory leak of the input string.",
            "LOG <message>",
            "    Write <message> to the server log.",
            "HTSTATS <dbid>",
            "    Return hash table statistics of the specified Redis database.",
            "HTSTATS-KEY <key>",
            "    Like HTSTATS but for the hash table stored at <key>'s value.",
            "LOADAOF",
            "    Flush the AOF buffers on disk and reload the AOF in memory.",
            "REPLICATE <string>",
            "    Replicates the provided string to replicas, allowing data divergence.",
            "MALLCTL <key> [<val>]",
            "    Get or set a malloc tuning integer.",
            "MALLCTL-STR <key> [<val>]",
            "    Get or set a malloc tuning string.",
            "OBJECT <key>",
            "    Show low level info about `key` and associated value.",
            "DROP-CLUSTER-PACKET-FILTER <packet-type>",
            "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
            "OOM",
            "    Crash the server simulating an out-of-memory error.",
            "PANIC",
            "    Crash the server simulating a panic.",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Create <count> string keys named key:<num>. If <prefix> is specified then",
            "    it is used instead of the 'key' prefix. These are not propagated to",
            "    replicas. Cluster slots are not respected so keys not belonging to the",
            "    current node can be created in cluster mode.",
            "PROTOCOL <type>",
            "    Reply with a test value of the specified type. <type> can be: string,",
            "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
            "    true, false.",
            "RELOAD [option ...]",
            "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
            "    * MERGE: conflicting keys will be loaded from RDB.",
            "    * NOFLUSH: the existing database will not be removed before load, but",
            "      conflicting keys will generate an exception and kill the server.",
            "    * NOSAVE: the database will be loaded from an existing RDB file.",
            "    Examples:",
            "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
            "      the database.",
            "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
            "      existing RDB file.",
            "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
            "      file to the database.",
            "RESTART [<milliseconds>]",
            "    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).",
            "SDSLEN <key>",
            "    Show low level SDS string info representing `key` and value.",
            "SEGFAULT",
            "    Crash the server with sigsegv.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "QUICKLIST-PACKED-THRESHOLD <size>",
            "    Sets the threshold for elements to be inserted as plain vs packed nodes",
            "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
            "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
            "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "STRINGMATCH-TEST",
            "    Run a fuzz tester against the stringmatchlen() function.",
            "STRUCTSIZE",
            "    Return the size of different Redis core C structures.",
            "LISTPACK <key>",
            "    Show low level info about the listpack encoding of <key>.",
            "QUICKLIST <key> [<0|1>]",
            "    Show low level info about the quicklist encoding of <key>.",
            "    The optional argument (0 by default) sets the level of detail",
            "CLIENT-EVICTION",
            "    Show low level client eviction pools info (maxmemory-clients).",
            "PAUSE-CRON <0|1>",
            "    Stop periodic cron job processing.",
            "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
            "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
            "    In case NEVER is provided the last observed peak will never be reset",
            "    In case RESET is provided the peak reset time will be restored to the default value",
            "REPLYBUFFER RESIZING <0|1>",
            "    Enable or disable the reply buffer resize cron job",
            "CLUSTERLINK KILL <to|from|all> <node-id>",
            "    Kills the link based on the direction to/from (both) with the provided node.",
        ],
    );
    Ok(())
}

/// Every parameter written to the config file, defaults included
/// (a test aid: the suite restarts from it and compares).
fn debug_config_rewrite_force_all(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let path = ctx.engine.config_file();
    super::server::rewrite_config_file(ctx, &path, true)
        .map_err(|reason| Error::err(format_args!("CONFIG-REWRITE-FORCE-ALL failed: {reason}")))?;
    ctx.out.ok();
    Ok(())
}

fn debug_set_active_expire(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let on = arg_i64(args[2])? != 0;
    ctx.engine.set_active_expire(on);
    ctx.out.ok();
    Ok(())
}

fn debug_sleep(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let secs: f64 = std::str::from_utf8(args[2])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    // Like Redis, the server stops: every shard is held meanwhile.
    std::thread::sleep(std::time::Duration::from_secs_f64(secs.max(0.0)));
    ctx.out.ok();
    Ok(())
}

fn debug_object(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now = ctx.now_ms;
    let fill = ctx
        .engine
        .config()
        .list_max_listpack_size
        .load(Ordering::Relaxed);
    // Redis reads the table directly: an expired key not yet
    // deleted is still there.
    let (db, h) = ctx.locate(args[2]);
    let Some(obj) = db.get_raw(h, args[2]) else {
        return Err(Error::NO_SUCH_KEY);
    };
    let mut text = format!(
        "Value at:{:p} refcount:1 encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        obj as *const Object,
        obj.value.encoding(),
        obj.value.heap_size().max(1),
        obj.access_word() & 0xFF_FFFF,
        obj.idle_seconds(now)
    );
    if let crate::keyspace::Value::List(l) = &obj.value {
        // The quicklist details Redis adds for lists.
        let nodes = l.node_count();
        text.push_str(&format!(
            " ql_nodes:{} ql_avg_node:{:.2} ql_listpack_max:{} ql_compressed:0 ql_uncompressed_size:{}",
            nodes,
            if nodes == 0 { 0.0 } else { l.len() as f64 / nodes as f64 },
            fill,
            l.packed_size()
        ));
    }
    ctx.out.simple(&text);
    Ok(())
}

fn debug_digest(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let mut acc = [0u8; 20];
    let mut any = false;
    let now = ctx.now_ms;
    for shard in ctx.locks.held() {
        for (db_index, db) in shard.dbs.iter().enumerate() {
            for (key, obj) in db.iter() {
                if obj.is_expired(now) {
                    continue;
                }
                any = true;
                use sha1::{Digest, Sha1};
                let mut h = Sha1::new();
                h.update((db_index as u64).to_le_bytes());
                h.update(key.as_slice());
                h.update(value_digest(obj));
                h.update(obj.expire_at().unwrap_or(0).to_le_bytes());
                let d: [u8; 20] = h.finalize().into();
                for (a, b) in acc.iter_mut().zip(d) {
                    *a ^= b;
                }
            }
        }
    }
    let text = if any { hex(&acc) } else { "0".repeat(40) };
    ctx.out.simple(&text);
    Ok(())
}

fn debug_digest_value(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[2..];
    ctx.out.array(keys.len());
    for key in keys {
        let d = ctx.peek(key).map(value_digest);
        match d {
            Some(d) => ctx.out.simple(hex(&d)),
            None => ctx.out.simple("0".repeat(40)),
        }
    }
    Ok(())
}

fn debug_protocol(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    protocol_reply(ctx, args[2])?;
    Ok(())
}

fn debug_set_disable_deny_scripts(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let on = atoi(args[2]) != 0;
    ctx.engine
        .scripting()
        .disable_deny_script
        .store(on, std::sync::atomic::Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn debug_quicklist_packed_threshold(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Redis isolates an element at least this large in a plain
    // node of its own. Goblin's list nodes already keep an element
    // larger than the node bound alone (keyspace::list), so the
    // size is checked as Redis checks it and changes no layout.
    let size = std::str::from_utf8(args[2])
        .ok()
        .and_then(crate::config::parse_memory)
        .filter(|&n| n as u64 <= (1u64 << 32) - (1 << 20));
    if size.is_none() {
        return Err(Error::err(
            "argument must be a memory value bigger than 1 and smaller than 4gb",
        ));
    }
    ctx.out.ok();
    Ok(())
}

fn debug_change_repl_id(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.ok();
    Ok(())
}

/// STRINGMATCH-LEN is Redis 7.2's name for it.
fn debug_stringmatch_test(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    stringmatch_fuzz();
    ctx.out
        .simple("Apparently Redis did not crash: test passed");
    Ok(())
}

fn debug_listpack(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(obj) = ctx.peek(args[2]) else {
        return Err(Error::NO_SUCH_KEY);
    };
    if obj.value.encoding() != "listpack" {
        return Err(Error::err("Not a listpack encoded object."));
    }
    // Redis prints its lpRepr; Goblin prints its own compact
    // encoding's figures.
    println!(
        "{{goblin compact {}}} {{total bytes {}}}",
        obj.value.value_type().name(),
        obj.value.heap_size()
    );
    ctx.out.simple("Listpack structure printed on stdout");
    Ok(())
}

fn debug_quicklist(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(obj) = ctx.peek(args[2]) else {
        return Err(Error::NO_SUCH_KEY);
    };
    let crate::keyspace::Value::List(l) = &obj.value else {
        return Err(Error::err("Not a quicklist encoded object."));
    };
    println!(
        "{{count : {}}} {{len : {}}} {{packed size : {}}}",
        l.len(),
        l.node_count(),
        l.packed_size()
    );
    ctx.out.simple("Quicklist structure printed on stdout");
    Ok(())
}

fn debug_mallctl(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(alloc) = crate::memory::allocator() else {
        return Err(super::help::subcommand_syntax_error(args, "DEBUG"));
    };
    let value = match args.get(3) {
        Some(v) => Some(arg_i64(v)?),
        None => None,
    };
    let name = String::from_utf8_lossy(args[2]);
    match (alloc.ctl_int)(&name, value) {
        Ok(Some(old)) => ctx.out.int(old),
        Ok(None) => ctx.out.ok(),
        Err(e) => return Err(Error::err(e)),
    }
    Ok(())
}

fn debug_mallctl_str(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(alloc) = crate::memory::allocator() else {
        return Err(super::help::subcommand_syntax_error(args, "DEBUG"));
    };
    let name = String::from_utf8_lossy(args[2]);
    let value = args.get(3).map(|v| String::from_utf8_lossy(v));
    match (alloc.ctl_str)(&name, value.as_deref()) {
        Ok(Some(old)) => ctx.out.bulk_str(&old),
        Ok(None) => ctx.out.ok(),
        Err(e) => return Err(Error::err(e)),
    }
    Ok(())
}

fn debug_replybuffer(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args[2].eq_ignore_ascii_case(b"peak-reset-time") {
        let ms = if args[3].eq_ignore_ascii_case(b"never") {
            -1
        } else if args[3].eq_ignore_ascii_case(b"reset") {
            crate::client::REPLY_BUFFER_PEAK_RESET_MS
        } else {
            arg_i64(args[3])?
        };
        ctx.engine
            .reply_buffer_peak_reset_ms
            .store(ms, Ordering::Relaxed);
    } else if args[2].eq_ignore_ascii_case(b"resizing") {
        ctx.engine
            .reply_buffer_resizing
            .store(atoi(args[3]) != 0, Ordering::Relaxed);
    } else {
        return Err(super::help::subcommand_syntax_error(args, "DEBUG"));
    }
    ctx.out.ok();
    Ok(())
}

fn debug_pause_cron(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.engine.set_cron_paused(atoi(args[2]) != 0);
    ctx.out.ok();
    Ok(())
}

fn debug_set_skip_checksum_validation(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    ctx.engine
        .persist()
        .skip_checksum
        .store(atoi(args[2]) != 0, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn debug_segfault(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    crate::crash::segfault()
}

fn debug_panic(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    crate::crash::panic(
        &format!("DEBUG PANIC called at Unix time {}", now_us() / 1_000_000),
        ctx.engine.config().use_exit_on_panic(),
    )
}

fn debug_assert(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    crate::crash::assertion_failed("1 == 2", "debug.c", ctx.engine.config().use_exit_on_panic())
}

fn debug_populate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // DEBUG POPULATE count [prefix] [size]: keys "prefix:N" holding
    // "value:N" (padded with zero bytes or cut to `size`).
    let count = match arg_i64(args[2]) {
        Ok(n) if n >= 0 => n as u64,
        _ => return Err(Error::NOT_POSITIVE),
    };
    let size = match args.get(4) {
        Some(a) => match arg_i64(a) {
            Ok(n) if n >= 0 => n as usize,
            _ => return Err(Error::NOT_POSITIVE),
        },
        None => 0,
    };
    let prefix = args.get(3).copied().unwrap_or(b"key");
    let now = ctx.now();
    let mut key = Vec::new();
    for j in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        key.push(b':');
        key.extend_from_slice(itoa::Buffer::new().format(j).as_bytes());
        let (db, h) = ctx.locate(&key);
        if db.lookup(h, &key, now).is_some() {
            continue;
        }
        let mut val = format!("value:{j}").into_bytes();
        if size > 0 {
            val.resize(size, 0);
        }
        db.insert_new(h, &key, crate::keyspace::Value::str(&val), now.ms);
    }
    ctx.out.ok();
    Ok(())
}

fn debug_aof_flush_sleep(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let us = arg_i64(args[2])?.max(0) as u64;
    ctx.engine
        .persist()
        .aof
        .flush_sleep_us
        .store(us, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn debug_log(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    crate::log::warning(&format!("DEBUG LOG: {}", String::from_utf8_lossy(args[2])));
    ctx.out.ok();
    Ok(())
}

fn debug_reload(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    refuse_in_script(ctx)?;
    let (mut save, mut flush, mut merge) = (true, true, false);
    for opt in &args[2..] {
        if opt.eq_ignore_ascii_case(b"merge") {
            merge = true;
        } else if opt.eq_ignore_ascii_case(b"noflush") {
            flush = false;
        } else if opt.eq_ignore_ascii_case(b"nosave") {
            save = false;
        } else {
            return Err(Error::constant(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    let how = crate::persist::Reload::Rdb { save, flush, merge };
    ctx.engine.debug_reload(ctx.locks, how)?;
    ctx.out.ok();
    Ok(())
}

fn debug_loadaof(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    refuse_in_script(ctx)?;
    ctx.engine
        .debug_reload(ctx.locks, crate::persist::Reload::Aof)?;
    ctx.out.ok();
    Ok(())
}

/// C's atoi, as Redis reads its DEBUG flags: the leading integer, 0 when
/// there is none.
fn atoi(arg: &[u8]) -> i64 {
    let text = std::str::from_utf8(arg).unwrap_or("").trim_start();
    let (sign, digits) = match text.as_bytes().first() {
        Some(b'-') => (-1, &text[1..]),
        Some(b'+') => (1, &text[1..]),
        _ => (1, text),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end]
        .bytes()
        .fold(0i64, |n, d| {
            n.wrapping_mul(10).wrapping_add((d - b'0') as i64)
        })
        .wrapping_mul(sign)
}

/// Redis's stringmatchlen_fuzz_test: random patterns against random
/// strings; the test is that matching returns at all.
fn stringmatch_fuzz() {
    let mut text = [0u8; 32];
    let mut pattern = [0u8; 32];
    let mut matched = 0usize;
    for _ in 0..100_000 {
        let tlen = fastrand::usize(..text.len());
        let plen = fastrand::usize(..pattern.len());
        for b in text[..tlen].iter_mut() {
            *b = fastrand::u8(..);
        }
        for b in pattern[..plen].iter_mut() {
            *b = fastrand::u8(..);
        }
        if crate::util::glob_match(&pattern[..plen], &text[..tlen], false) {
            matched += 1;
        }
    }
    std::hint::black_box(matched);
}

// Redis's own test values (3.141 is not meant as pi).
#[allow(clippy::approx_constant)]
fn protocol_reply(ctx: &mut Ctx, name: &[u8]) -> CmdResult {
    let o = &mut *ctx.out;
    match name.to_ascii_lowercase().as_slice() {
        b"string" => o.bulk(b"Hello World"),
        b"integer" => o.int(12345),
        b"double" => o.double(3.141),
        b"bignum" => o.big_number("1234567999999999999999999999999999999"),
        b"null" => o.null(),
        b"array" => {
            o.array(3);
            for j in 0..3 {
                o.int(j);
            }
        }
        b"set" => {
            o.set(3);
            for j in 0..3 {
                o.int(j);
            }
        }
        b"map" => {
            o.map(3);
            for j in 0..3 {
                o.int(j);
                o.bool(j == 1);
            }
        }
        b"attrib" => {
            if o.is_resp3() {
                o.attribute(1);
                o.bulk(b"key-popularity");
                o.array(2);
                o.bulk(b"key:123");
                o.int(90);
            }
            o.bulk(b"Some real reply following the attribute");
        }
        b"push" => {
            if !o.is_resp3() {
                return Err(Error::err("RESP2 is not supported by this command"));
            }
            o.push(2);
            o.bulk(b"server-cpu-usage");
            o.int(42);
            o.bulk(b"Some real reply following the push reply");
        }
        b"true" => o.bool(true),
        b"false" => o.bool(false),
        b"verbatim" => o.verbatim(b"This is a verbatim\nstring", "txt"),
        _ => {
            return Err(Error::err(
                "Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ))
        }
    }
    Ok(())
}

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "debug",
    protected_by: Some(crate::config::Param::EnableDebugCommand),
    arity: -2,
    flags: flag::ADMIN | flag::NOSCRIPT | flag::LOADING | flag::STALE | flag::ALL_SHARDS,
    group: Group::Server,
    summary: "A container for debugging commands",
    complexity: "Depends on subcommand.",
    doc_flags: &["syscmd"],
    handler: debug_command,
    ..CommandSpec::DEFAULT
}];

/// Reloading replaces the function libraries, which a running script's
/// interpreter holds: DEBUG RELOAD and LOADAOF refuse to run in one.
fn refuse_in_script(ctx: &Ctx) -> CmdResult {
    if ctx.in_script {
        return Err(Error::err(
            "DEBUG RELOAD and LOADAOF cannot run inside a script",
        ));
    }
    Ok(())
}
