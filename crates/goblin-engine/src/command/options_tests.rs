//! The parsers and the synopses of the command table must name the same
//! options: what COMMAND DOCS tells a client a command takes is what its
//! parser accepts.
//!
//! For each command, calls are built from its synopsis: the minimal one
//! (every required argument, one value each) and the full one (the
//! optional arguments too, so that a parser reaches the options nested in
//! others: XADD's `=|~` after MAXLEN, HRANDFIELD's WITHVALUES after the
//! count), with the strings `s` and, since many commands parse their
//! string arguments (stream IDs, XAUTOCLAIM's min-idle-time) before their
//! options, `1`. Each is run with a word no parser knows inserted at every
//! position, and in place of every argument (a command of a fixed arity
//! refuses one more argument before its parser runs, and a parser asks
//! for every alternative of a choice only when none of them is given);
//! the argument cursor (`command::args`) records every keyword the parser
//! asks for on the way, on an empty keyspace but for the few commands that
//! refuse one before they read their options (`KEYSPACE`). The union must
//! be the synopsis's tokens, for every command of the table: the few
//! differences Redis has, or this test cannot see, are listed with their
//! reasons (`BEYOND_THE_SYNOPSIS`, `OUT_OF_REACH`).

use super::args::record_keywords;
use super::syntax::{self, ArgDoc};
use crate::{Config, ConnInfo, Engine};
use std::collections::BTreeSet;

/// What the keyspace holds before each call of these commands, which
/// refuse an empty one before they read their options (XCLAIM: no such
/// group; XINFO STREAM: no such key; HSCAN, SSCAN, ZSCAN: an empty scan):
/// a key `k` of their type, with the groups `s` and `1` for XCLAIM.
const KEYSPACE: &[(&str, &[&str])] = &[
    (
        "xclaim",
        &["XGROUP CREATE k s $ MKSTREAM", "XGROUP CREATE k 1 $"],
    ),
    ("xinfo|stream", &["XADD k * f v"]),
    ("hscan", &["HSET k f v"]),
    ("sscan", &["SADD k m"]),
    ("zscan", &["ZADD k 1 m"]),
];

/// Keywords a parser takes that its synopsis does not name, as Redis
/// 7.0.15's parser takes them while COMMAND DOCS leaves them out: one
/// parser serves several commands and reads every keyword for each, some
/// only to refuse them once the line is read.
const BEYOND_THE_SYNOPSIS: &[(&str, &[&str])] = &[
    // zrangeGenericCommand: LIMIT offset -1 passes without BYSCORE or
    // BYLEX; WITHSCORES with BYLEX is its own error.
    ("zrevrange", &["LIMIT"]),
    ("zrangebylex", &["WITHSCORES"]),
    ("zrevrangebylex", &["WITHSCORES"]),
    // zincrbyCommand is zaddGenericCommand, which reads ZADD's flags for
    // ZINCRBY too (its fixed arity leaves no room for a pair after one).
    ("zincrby", &["CH", "GT", "INCR", "LT", "NX", "XX"]),
    // getClientTypeByName takes SLAVE for REPLICA, as CLIENT KILL's
    // synopsis says and CLIENT LIST's does not.
    ("client|list", &["SLAVE"]),
    // georadiusGeneric: "GEOSEARCHSTORE is not compatible with WITHDIST,
    // WITHHASH and WITHCOORD options".
    ("geosearchstore", &["WITHCOORD", "WITHDIST", "WITHHASH"]),
    // bitfieldGeneric: BITFIELD_RO takes OVERFLOW, and SET and INCRBY to
    // refuse them ("BITFIELD_RO only supports the GET subcommand").
    (
        "bitfield_ro",
        &["OVERFLOW", "WRAP", "SAT", "FAIL", "SET", "INCRBY"],
    ),
];

/// Keywords of a synopsis this test cannot reach: most because their
/// parser reads them only once the key exists (Redis answers a missing key
/// before), the others for the reason on their line.
const OUT_OF_REACH: &[(&str, &[&str])] = &[
    // bitcountCommand and bitposCommand read the range, and its unit,
    // only for an existing string.
    ("bitcount", &["BYTE", "BIT"]),
    ("bitpos", &["BYTE", "BIT"]),
    // georadiusGeneric reads neither the member nor the radius and its
    // unit without the source set.
    ("georadiusbymember", &["M", "KM", "FT", "MI"]),
    ("georadiusbymember_ro", &["M", "KM", "FT", "MI"]),
    // helloCommand reads the protocol version first, and refuses the
    // probes' strings (`s`, `1`) before the options.
    ("hello", &["AUTH", "SETNAME"]),
    // Goblin is no cluster node: every CLUSTER subcommand answers that
    // cluster support is disabled before it reads its arguments.
    ("cluster|failover", &["FORCE", "TAKEOVER"]),
    ("cluster|reset", &["HARD", "SOFT"]),
    (
        "cluster|setslot",
        &["IMPORTING", "MIGRATING", "NODE", "STABLE"],
    ),
    // CLIENT KILL's first alternative is the old form (ip:port), so no
    // probe gives TYPE the value whose choices these are.
    (
        "client|kill",
        &["NORMAL", "MASTER", "SLAVE", "REPLICA", "PUBSUB"],
    ),
];

/// Commands not run by this test: they stop or block the process, write
/// files, or reach out of it.
const NOT_RUN: &[&str] = &[
    "debug",
    "shutdown",
    "save",
    "bgsave",
    "bgrewriteaof",
    "migrate",
    "monitor",
    "config|rewrite",
];

fn tokens(args: &[ArgDoc], out: &mut BTreeSet<String>) {
    for a in args {
        if let Some(t) = &a.token {
            out.insert(t.to_ascii_uppercase());
        }
        tokens(&a.children, out);
    }
}

/// One value of each argument, in order: of the required ones only, or
/// of all (`full`); the first alternative of a choice; `string` for a
/// string.
fn call_args(args: &[ArgDoc], full: bool, string: &str, out: &mut Vec<Vec<u8>>) {
    for a in args.iter().filter(|a| full || !a.optional) {
        if let Some(t) = &a.token {
            out.push(t.as_bytes().to_vec());
        }
        match a.kind {
            "pure-token" => {}
            "oneof" => call_args(&a.children[..1], full, string, out),
            "block" => call_args(&a.children, full, string, out),
            "key" => out.push(b"k".to_vec()),
            "pattern" => out.push(b"*".to_vec()),
            "integer" | "double" | "unix-time" => out.push(b"1".to_vec()),
            _ => out.push(string.as_bytes().to_vec()),
        }
    }
}

/// The calls to probe: `call` with the unknown word inserted at every
/// position after the command's `words` name words, and in place of
/// every argument.
fn probes(call: &[Vec<u8>], words: usize) -> Vec<Vec<Vec<u8>>> {
    let probe = b"__probe__".to_vec();
    let mut out = Vec::new();
    for at in words..=call.len() {
        let mut p = call.to_vec();
        p.insert(at, probe.clone());
        out.push(p);
    }
    for at in words..call.len() {
        let mut p = call.to_vec();
        p[at] = probe.clone();
        out.push(p);
    }
    out
}

#[test]
fn every_parser_accepts_the_options_its_synopsis_names() {
    let t = super::table::register(crate::commands::FAMILIES);
    let dir = std::env::temp_dir().join(format!("goblin-options-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut mismatches = Vec::new();
    for entry in &t.entries {
        let name = entry.fullname.as_str();
        let spec = entry.spec;
        if !spec.subcommands.is_empty() || NOT_RUN.contains(&name) || NOT_RUN.contains(&spec.name) {
            continue;
        }
        let docs = syntax::parse(spec.syntax);
        let mut named = BTreeSet::new();
        tokens(&docs, &mut named);
        let exceptions = |table: &[(&str, &[&str])]| -> BTreeSet<String> {
            let words = table.iter().find(|(n, _)| *n == name);
            words
                .map_or(&[][..], |(_, w)| w)
                .iter()
                .map(|w| w.to_string())
                .collect()
        };
        let named: BTreeSet<String> = named
            .difference(&exceptions(OUT_OF_REACH))
            .cloned()
            .chain(exceptions(BEYOND_THE_SYNOPSIS))
            .collect();
        let name_words: Vec<Vec<u8>> = name.split('|').map(|w| w.as_bytes().to_vec()).collect();
        let words = name_words.len();
        let mut calls = Vec::new();
        for full in [false, true] {
            for string in ["s", "1"] {
                let mut call = name_words.clone();
                call_args(&docs, full, string, &mut call);
                calls.extend(probes(&call, words));
            }
        }
        let mut asked = BTreeSet::new();
        for probe in calls {
            let argv: Vec<&[u8]> = probe.iter().map(Vec::as_slice).collect();
            let config = Config::new();
            config.set_initial("dir", dir.to_str().unwrap()).unwrap();
            config.set_initial("save", "").unwrap();
            // MODULE LOADEX, protected, runs to reach its parser.
            config.set_initial("enable-module-command", "yes").unwrap();
            let engine = Engine::new(config);
            let mut session = engine.session(ConnInfo::embedded());
            for (_, lines) in KEYSPACE.iter().filter(|(n, _)| *n == name) {
                for line in lines.iter() {
                    let argv: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
                    session.execute(&argv);
                }
            }
            asked.extend(record_keywords(|| {
                session.execute(&argv);
            }));
        }
        if asked != named {
            mismatches.push(format!(
                "{name}: the synopsis names {:?}, the parser asks for {:?}",
                named.difference(&asked).collect::<Vec<_>>(),
                asked.difference(&named).collect::<Vec<_>>()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
