//! INFO (Redis's genRedisInfoString): one provider per section, each
//! reporting on its subsystem, in Redis's order ([`SECTIONS`]). Providers
//! write bytes: an error code in errorstats is what the error reply
//! carried, UTF-8 or not.

use crate::command::{table, Ctx};
use crate::keyspace::ShardLocks;
use crate::util::time::{now_ms, now_us};
use std::io::Write as _;
use std::sync::atomic::Ordering;

/// What a section provider reads: the engine, the shards INFO holds (all
/// of them: the keyspace's figures), and the time of the call.
pub struct Source<'a, 'l> {
    pub engine: &'a crate::Engine,
    pub shards: &'a ShardLocks<'l>,
    pub now_ms: u64,
}

/// A section provider: appends its "# Name" block, led by a blank line.
pub type Provider = fn(&Source, &mut Vec<u8>);

/// INFO's sections, in Redis's order: the name, whether INFO without a
/// section (or `default`) shows it, and its provider.
pub const SECTIONS: &[(&str, bool, Provider)] = &[
    ("server", true, server),
    ("clients", true, clients),
    ("memory", true, memory),
    ("persistence", true, persistence),
    ("stats", true, stats),
    ("replication", true, replication),
    ("cpu", true, cpu),
    ("modules", true, modules),
    ("commandstats", false, commandstats),
    ("errorstats", true, errorstats),
    ("latencystats", false, latencystats),
    ("cluster", true, cluster),
    ("keyspace", true, keyspace),
];

/// The INFO text of the requested sections (none: the default ones;
/// `all`, `everything`, `default` as Redis reads them).
pub fn info_text(ctx: &mut Ctx, sections: &[String]) -> Vec<u8> {
    let all = sections.iter().any(|s| s == "all" || s == "everything");
    let default = sections.is_empty() || sections.iter().any(|s| s == "default");
    let src = Source {
        engine: ctx.engine,
        shards: ctx.locks,
        now_ms: now_ms(),
    };
    let mut out = Vec::new();
    for (name, in_default, provider) in SECTIONS {
        if all || (default && *in_default) || sections.iter().any(|s| s == name) {
            provider(&src, &mut out);
        }
    }
    if out.starts_with(b"\r\n") {
        out.drain(..2);
    }
    out
}

fn push(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(text.as_bytes());
}

fn server(src: &Source, out: &mut Vec<u8>) {
    let engine = src.engine;
    let now = src.now_ms;
    let uptime = engine.uptime().as_secs();
    let uname = {
        // SAFETY: uname fills the struct it is given.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        unsafe { libc::uname(&mut u) };
        let f = |s: &[libc::c_char]| {
            unsafe { std::ffi::CStr::from_ptr(s.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        };
        format!("{} {} {}", f(&u.sysname), f(&u.release), f(&u.machine))
    };
    let _ = write!(
        out,
        "# Server\r\nredis_version:{}\r\ngoblin_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\nprocess_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nlru_clock:{}\r\nexecutable:{}\r\nconfig_file:{}\r\nio_threads_active:0\r\nshards:{}\r\n",
        crate::REDIS_VERSION,
        crate::VERSION,
        uname,
        std::process::id(),
        engine.run_id(),
        engine.tcp_port(),
        now_us(),
        uptime,
        uptime / 86400,
        engine.config().hz.load(Ordering::Relaxed),
        engine.config().hz.load(Ordering::Relaxed),
        (now / 1000) & 0xFF_FFFF,
        std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
        engine.config_file(),
        engine.keyspace().shard_count(),
    );
    if let Some(ms) = engine.shutdown_state().remaining_ms(now) {
        let _ = write!(out, "shutdown_in_milliseconds:{ms}\r\n");
    }
}

fn clients(src: &Source, out: &mut Vec<u8>) {
    let engine = src.engine;
    let (recent_input, recent_output) = engine.clients().recent_peaks().max();
    let _ = write!(
        out,
        "\r\n# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:{}\r\nclient_recent_max_output_buffer:{}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:{}\r\n",
        // Replicas are not counted, as in Redis.
        engine
            .clients()
            .count()
            .saturating_sub(engine.repl().replica_count()),
        engine.config().maxclients(),
        recent_input,
        recent_output,
        engine.clients().blocked.load(Ordering::Relaxed)
            + engine.pause().waiting.load(Ordering::Relaxed)
            + engine.shutdown_state().waiting.load(Ordering::Relaxed),
        engine.tracking().clients(),
        engine.clients().blocked_with_timeout.load(Ordering::Relaxed),
    );
}

fn memory(src: &Source, out: &mut Vec<u8>) {
    let engine = src.engine;
    let mem = crate::memory::stats();
    let maxmemory = engine.config().maxmemory.load(Ordering::Relaxed);
    let figures = engine.memory_use();
    let used = figures.total();
    let peak = engine.memory_peak(used);
    let tables: u64 = src
        .shards
        .held()
        .map(|s| s.dbs.iter().map(|d| d.overhead_bytes() as u64).sum::<u64>())
        .sum();
    let overhead = figures.startup + figures.clients + figures.scripts + tables;
    let dataset = used.saturating_sub(overhead);
    let net = used.saturating_sub(figures.startup);
    let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 1.0 };
    let lazy = engine.lazyfree();
    // As Redis 7.0 divides its one replication buffer: what it holds
    // beyond repl-backlog-size is the replicas' (their output buffers,
    // mem_clients_slaves) while any is connected, the backlog's when
    // none is.
    let replicas_part = if engine.repl().replica_count() > 0 {
        figures.not_counted
    } else {
        0
    };
    let _ = write!(
        out,
        "\r\n# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\nused_memory_rss:{}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{:.2}%\r\nused_memory_overhead:{}\r\nused_memory_startup:{}\r\nused_memory_dataset:{}\r\nused_memory_dataset_perc:{:.2}%\r\nallocator_allocated:{}\r\nallocator_active:{}\r\nallocator_resident:{}\r\ntotal_system_memory:{}\r\ntotal_system_memory_human:{}\r\n{}maxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nallocator_frag_ratio:{:.2}\r\nallocator_frag_bytes:{}\r\nallocator_rss_ratio:{:.2}\r\nallocator_rss_bytes:{}\r\nrss_overhead_ratio:{:.2}\r\nrss_overhead_bytes:{}\r\nmem_fragmentation_ratio:{:.2}\r\nmem_fragmentation_bytes:{}\r\nmem_not_counted_for_evict:{}\r\nmem_replication_backlog:{}\r\nmem_total_replication_buffers:{}\r\nmem_clients_slaves:{}\r\nmem_clients_normal:{}\r\nmem_cluster_links:0\r\nmem_aof_buffer:0\r\nmem_allocator:{}\r\nactive_defrag_running:0\r\nlazyfree_pending_objects:{}\r\nlazyfreed_objects:{}\r\n",
        used,
        human_bytes(used),
        mem.rss,
        human_bytes(mem.rss),
        peak,
        human_bytes(peak),
        ratio(used * 100, peak),
        overhead,
        figures.startup,
        dataset,
        if net > 0 { dataset as f64 * 100.0 / net as f64 } else { 0.0 },
        mem.allocated,
        mem.active,
        mem.resident,
        crate::memory::total_system_memory(),
        human_bytes(crate::memory::total_system_memory()),
        scripting_memory_info(engine),
        maxmemory,
        human_bytes(maxmemory),
        engine.config().maxmemory_policy(),
        ratio(mem.active, mem.allocated),
        mem.active.saturating_sub(mem.allocated),
        ratio(mem.resident, mem.active),
        mem.resident.saturating_sub(mem.active),
        ratio(mem.rss, mem.resident),
        mem.rss as i64 - mem.resident as i64,
        ratio(mem.rss, used),
        mem.rss as i64 - used as i64,
        figures.not_counted,
        figures.replication - replicas_part,
        figures.replication,
        replicas_part,
        figures.clients,
        mem.allocator,
        lazy.pending_objects(),
        lazy.freed_objects(),
    );
}

fn persistence(src: &Source, out: &mut Vec<u8>) {
    let engine = src.engine;
    push(out, "\r\n# Persistence\r\n");
    push(out, &engine.persistence_info());
}

fn stats(src: &Source, out: &mut Vec<u8>) {
    let engine = src.engine;
    let t = engine.stats().totals();
    let expired: u64 = src
        .shards
        .held()
        .map(|s| s.dbs.iter().map(|d| d.expired_keys).sum::<u64>())
        .sum::<u64>()
        - engine.expired_baseline();
    // Hash fields that expired (Redis 7.4's expired_subkeys); not reset
    // by CONFIG RESETSTAT.
    let expired_fields: u64 = src
        .shards
        .held()
        .map(|s| s.dbs.iter().map(|d| d.expired_fields).sum::<u64>())
        .sum();
    let s = &engine.stats();
    let (exceeded_total, exceeded_current) = engine.evictor().exceeded_ms();
    let (kbps_in, kbps_out) = engine.instantaneous_kbps();
    let _ = write!(
        out,
        "\r\n# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ntotal_net_repl_input_bytes:0\r\ntotal_net_repl_output_bytes:0\r\ninstantaneous_input_kbps:{:.2}\r\ninstantaneous_output_kbps:{:.2}\r\ninstantaneous_input_repl_kbps:0.00\r\ninstantaneous_output_repl_kbps:0.00\r\nrejected_connections:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\nexpired_keys:{}\r\nexpired_subkeys:{}\r\nexpired_stale_perc:0.00\r\nexpired_time_cap_reached_count:0\r\nexpire_cycle_cpu_milliseconds:0\r\nevicted_keys:{}\r\nevicted_clients:{}\r\ntotal_eviction_exceeded_time:{}\r\ncurrent_eviction_exceeded_time:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nlatest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:0\r\nslave_expires_tracked_keys:{}\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\nunexpected_error_replies:0\r\ntotal_error_replies:{}\r\ndump_payload_sanitizations:0\r\ntotal_reads_processed:{}\r\ntotal_writes_processed:{}\r\nio_threaded_reads_processed:0\r\nio_threaded_writes_processed:0\r\nreply_buffer_shrinks:{}\r\nreply_buffer_expands:{}\r\n",
        s.connections_received.load(Ordering::Relaxed),
        t.commands_processed,
        engine.instantaneous_ops(),
        t.net_input_bytes,
        t.net_output_bytes,
        kbps_in,
        kbps_out,
        s.rejected_connections.load(Ordering::Relaxed),
        engine.repl().sync_full.load(Ordering::Relaxed),
        engine.repl().sync_partial_ok.load(Ordering::Relaxed),
        engine.repl().sync_partial_err.load(Ordering::Relaxed),
        expired,
        expired_fields,
        engine.evictor().evicted_keys.load(Ordering::Relaxed),
        engine.clients().evicted(),
        exceeded_total,
        exceeded_current,
        t.keyspace_hits,
        t.keyspace_misses,
        engine.pubsub().channel_count(),
        engine.pubsub().pattern_count(),
        engine.pubsub().shard_channel_count(),
        engine.repl().local_expires_tracked(),
        engine.tracking().total_keys(),
        engine.tracking().total_items(),
        engine.tracking().total_prefixes(),
        t.error_replies,
        t.reads_processed,
        t.writes_processed,
        s.reply_buffer_shrinks.load(Ordering::Relaxed),
        s.reply_buffer_expands.load(Ordering::Relaxed),
    );
}

fn replication(src: &Source, out: &mut Vec<u8>) {
    let engine = src.engine;
    push(out, "\r\n");
    push(out, &crate::repl::info(engine));
}

fn cpu(_src: &Source, out: &mut Vec<u8>) {
    let (sys, user) = rusage();
    let _ = write!(
        out,
        "\r\n# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\nused_cpu_sys_main_thread:{sys:.6}\r\nused_cpu_user_main_thread:{user:.6}\r\n"
    );
}

fn modules(_src: &Source, out: &mut Vec<u8>) {
    push(out, "\r\n# Modules\r\n");
}

fn commandstats(src: &Source, out: &mut Vec<u8>) {
    let engine = src.engine;
    push(out, "\r\n# Commandstats\r\n");
    let t = table();
    for id in 0..t.len() {
        let (calls, usec, rejected, failed) = engine.stats().command(id);
        if calls == 0 && rejected == 0 && failed == 0 {
            continue;
        }
        let per_call = if calls > 0 {
            usec as f64 / calls as f64
        } else {
            0.0
        };
        let _ = write!(
            out,
            "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}\r\n",
            t.get(id).fullname,
            calls,
            usec,
            per_call,
            rejected,
            failed
        );
    }
}

fn errorstats(src: &Source, out: &mut Vec<u8>) {
    let engine = src.engine;
    push(out, "\r\n# Errorstats\r\n");
    for (code, n) in engine.stats().errors.lock().iter() {
        out.extend_from_slice(b"errorstat_");
        out.extend_from_slice(code);
        out.extend_from_slice(format!(":count={n}\r\n").as_bytes());
    }
}

fn latencystats(src: &Source, out: &mut Vec<u8>) {
    let engine = src.engine;
    push(out, "\r\n# Latencystats\r\n");
    if engine.config().latency_tracking.load(Ordering::Relaxed) {
        latency_percentiles(engine, out);
    }
}

fn cluster(_src: &Source, out: &mut Vec<u8>) {
    push(out, "\r\n# Cluster\r\ncluster_enabled:0\r\n");
}

fn keyspace(src: &Source, out: &mut Vec<u8>) {
    let engine = src.engine;
    push(out, "\r\n# Keyspace\r\n");
    for db in 0..engine.keyspace().databases() {
        let (keys, expires): (usize, usize) = src.shards.held().fold((0, 0), |(k, e), s| {
            (k + s.dbs[db].len(), e + s.dbs[db].volatile_len())
        });
        if keys > 0 {
            let _ = write!(out, "db{db}:keys={keys},expires={expires},avg_ttl=0\r\n");
        }
    }
}

/// The scripting lines of INFO memory, from figures the scripting engine
/// publishes (readable while a script runs). used_memory_lua and
/// used_memory_vm_eval are every EVAL interpreter, what Redis's one holds
/// spread over several: the main one and those of keyed scripts, which
/// used_memory_vm_eval_keyed (Goblin's) reports apart;
/// used_memory_vm_total adds the functions interpreter.
fn scripting_memory_info(engine: &crate::Engine) -> String {
    let st = &engine.scripting().stats;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let vm_eval = engine.scripting().eval_vms_memory();
    let vm_keyed = vm_eval.saturating_sub(get(&st.eval_vm_memory));
    let vm_functions = get(&st.functions_vm_memory);
    let vm_total = vm_eval + vm_functions;
    let scripts_eval = get(&st.cached_scripts_memory);
    let functions = get(&st.functions_memory);
    format!(
        "used_memory_lua:{vm_eval}\r\nused_memory_vm_eval:{vm_eval}\r\nused_memory_vm_eval_keyed:{vm_keyed}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{scripts_eval}\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\nnumber_of_libraries:{}\r\nused_memory_vm_functions:{vm_functions}\r\nused_memory_vm_total:{vm_total}\r\nused_memory_vm_total_human:{}\r\nused_memory_functions:{functions}\r\nused_memory_scripts:{}\r\nused_memory_scripts_human:{}\r\n",
        human_bytes(vm_eval),
        get(&st.cached_scripts),
        get(&st.functions),
        get(&st.libraries),
        human_bytes(vm_total),
        scripts_eval + functions,
        human_bytes(scripts_eval + functions),
    )
}

fn human_bytes(n: u64) -> String {
    let n = n as f64;
    if n < 1024.0 {
        format!("{}B", n as u64)
    } else if n < 1024.0 * 1024.0 {
        format!("{:.2}K", n / 1024.0)
    } else if n < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", n / (1024.0 * 1024.0))
    } else if n < 1024.0 * 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}G", n / (1024.0 * 1024.0 * 1024.0))
    } else {
        format!("{:.2}T", n / (1024.0 * 1024.0 * 1024.0 * 1024.0))
    }
}

fn rusage() -> (f64, f64) {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_stime), t(ru.ru_utime))
}

/// INFO latencystats: the configured percentiles of every command's
/// latency histogram, in microseconds (Redis's
/// fillPercentileDistributionLatencies).
fn latency_percentiles(engine: &crate::Engine, out: &mut Vec<u8>) {
    let percentiles: Vec<f64> = engine
        .config()
        .latency_tracking_info_percentiles()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    let t = table();
    for id in 0..t.len() {
        let Some(h) = engine.stats().latency_histogram(id) else {
            continue;
        };
        let _ = write!(out, "latency_percentiles_usec_{}:", t.get(id).fullname);
        for (j, p) in percentiles.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            let _ = write!(
                out,
                "p{}={:.3}",
                crate::latency::percentile_label(*p),
                h.value_at_percentile(*p) as f64 / 1000.0
            );
        }
        push(out, "\r\n");
    }
}
