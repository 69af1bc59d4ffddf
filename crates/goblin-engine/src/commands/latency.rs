//! LATENCY LATEST, HISTORY, RESET, GRAPH, DOCTOR, HISTOGRAM and HELP
//! (Redis's latency.c). The monitor and the histograms are
//! `crate::latency`; the dispatcher and the cron feed them.

use crate::command::spec::{flag, CmdResult, CommandSpec, Group};
use crate::command::{table, Ctx};
use crate::Error;
use std::sync::atomic::Ordering;

fn latency_latest(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let latest = ctx.engine.latency().latest();
    ctx.out.array(latest.len());
    for (event, time, latency, max) in latest {
        ctx.out.array(4);
        ctx.out.bulk(event.as_bytes());
        ctx.out.int(time);
        ctx.out.int(latency as i64);
        ctx.out.int(max as i64);
    }
    Ok(())
}

fn latency_history(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let samples = ctx.engine.latency().history(args[2]).unwrap_or_default();
    ctx.out.array(samples.len());
    for (time, latency) in samples {
        ctx.out.array(2);
        ctx.out.int(time);
        ctx.out.int(latency as i64);
    }
    Ok(())
}

fn latency_graph(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let graph = ctx.engine.latency().graph(args[2]).ok_or_else(|| {
        Error::concat(&[
            b"ERR No samples available for event '",
            crate::error::printf_s(args[2], usize::MAX),
            b"'",
        ])
    })?;
    ctx.out.verbatim(graph.as_bytes(), "txt");
    Ok(())
}

fn latency_doctor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let c = &ctx.engine.config();
    let settings = crate::latency::DoctorSettings {
        threshold_ms: c.latency_monitor_threshold.load(Ordering::Relaxed),
        slowlog_slower_than: c.slowlog_log_slower_than.load(Ordering::Relaxed),
        hz: c.hz.load(Ordering::Relaxed),
        fsync_always: c.appendfsync() == "always",
    };
    let report = ctx.engine.latency().doctor(&settings);
    ctx.out.verbatim(report.as_bytes(), "txt");
    Ok(())
}

fn latency_reset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = if args.len() == 2 {
        ctx.engine.latency().reset(None)
    } else {
        args[2..]
            .iter()
            .map(|e| ctx.engine.latency().reset(Some(e)))
            .sum()
    };
    ctx.out.int(n as i64);
    Ok(())
}

/// fillCommandCDF: {calls, histogram_usec: {usec: cumulative count...}}.
fn reply_cdf(ctx: &mut Ctx, id: usize, h: &crate::latency::Merged) {
    ctx.out.bulk(table().get(id).fullname.as_bytes());
    ctx.out.map(2);
    ctx.out.bulk(b"calls");
    ctx.out.int(h.total as i64);
    ctx.out.bulk(b"histogram_usec");
    let cdf = h.cdf();
    ctx.out.map(cdf.len());
    for (usec, count) in cdf {
        ctx.out.int(usec);
        ctx.out.int(count);
    }
}

/// LATENCY HISTOGRAM [command...]: every command (and subcommand) with
/// samples, or the named ones; a container stands for its subcommands,
/// unknown names are skipped.
fn latency_histogram(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let t = table();
    let mut ids: Vec<usize> = Vec::new();
    if args.len() == 2 {
        ids.extend(0..t.len());
    } else {
        for name in &args[2..] {
            let Some(id) = t.by_fullname(&String::from_utf8_lossy(name).to_ascii_lowercase())
            else {
                continue;
            };
            ids.push(id);
            let full = &t.get(id).fullname;
            if !full.contains('|') {
                let prefix = format!("{full}|");
                ids.extend((0..t.len()).filter(|&i| t.get(i).fullname.starts_with(&prefix)));
            }
        }
    }
    let with_data: Vec<(usize, crate::latency::Merged)> = ids
        .into_iter()
        .filter_map(|id| ctx.engine.stats().latency_histogram(id).map(|h| (id, h)))
        .collect();
    ctx.out.map(with_data.len());
    for (id, h) in &with_data {
        reply_cdf(ctx, *id, h);
    }
    Ok(())
}

fn latency_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    super::help::reply_help(
        ctx,
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    );
    Ok(())
}

const ADMIN: u32 = flag::ADMIN | flag::NOSCRIPT | flag::LOADING | flag::STALE;

static LATENCY_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "doctor",
        arity: 2,
        flags: ADMIN,
        group: Group::Server,
        since: "2.8.13",
        summary: "Return a human readable latency analysis report.",
        complexity: "O(1)",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ],
        handler: latency_doctor,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "graph",
        arity: 3,
        flags: ADMIN,
        group: Group::Server,
        since: "2.8.13",
        summary: "Return a latency graph for the event.",
        complexity: "O(1)",
        syntax: "event:string",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ],
        handler: latency_graph,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Server,
        since: "2.8.13",
        summary: "Show helpful text about the different subcommands.",
        complexity: "O(1)",
        handler: latency_help,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "histogram",
        arity: -2,
        flags: ADMIN,
        group: Group::Server,
        since: "7.0.0",
        summary: "Return the cumulative distribution of latencies of a subset of commands or all.",
        complexity:
            "O(N) where N is the number of commands with latency information being retrieved.",
        syntax: "[command:string...]",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ],
        handler: latency_histogram,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "history",
        arity: 3,
        flags: ADMIN,
        group: Group::Server,
        since: "2.8.13",
        summary: "Return timestamp-latency samples for the event.",
        complexity: "O(1)",
        syntax: "event:string",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ],
        handler: latency_history,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "latest",
        arity: 2,
        flags: ADMIN,
        group: Group::Server,
        since: "2.8.13",
        summary: "Return the latest latency samples for all events.",
        complexity: "O(1)",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ],
        handler: latency_latest,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "reset",
        arity: -2,
        flags: ADMIN,
        group: Group::Server,
        since: "2.8.13",
        summary: "Reset latency data for one or more events.",
        complexity: "O(1)",
        syntax: "[event:string...]",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        handler: latency_reset,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "latency",
    arity: -2,
    group: Group::Server,
    subcommands: LATENCY_SUBCOMMANDS,
    since: "2.8.13",
    summary: "A container for latency diagnostics commands",
    complexity: "Depends on subcommand.",
    ..CommandSpec::DEFAULT
}];
