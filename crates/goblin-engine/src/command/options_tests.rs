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
//! be the synopsis's tokens.

use super::args::record_keywords;
use super::syntax::{self, ArgDoc};
use super::table;
use crate::{Config, ConnInfo, Engine};
use std::collections::BTreeSet;

/// Commands whose options are not read through the argument cursor yet:
/// each parser moves to it family by family, and leaves this list then.
const NOT_ON_THE_CURSOR: &[&str] = &[
    "acl|log",
    "bitcount",
    "bitfield",
    "bitfield_ro",
    "bitpos",
    "bzmpop",
    "client|kill",
    "client|list",
    "client|no-evict",
    "client|pause",
    "client|reply",
    "client|unblock",
    "command|list",
    "copy",
    "expire",
    "expireat",
    "flushall",
    "flushdb",
    "function|flush",
    "function|list",
    "function|load",
    "function|restore",
    "geoadd",
    "geodist",
    "georadius",
    "georadius_ro",
    "georadiusbymember",
    "georadiusbymember_ro",
    "geosearch",
    "geosearchstore",
    "hello",
    "hscan",
    "memory|usage",
    "pexpire",
    "pexpireat",
    "restore",
    "scan",
    "script|flush",
    "sintercard",
    "sort",
    "sort_ro",
    "sscan",
    "zadd",
    "zdiff",
    "zinter",
    "zintercard",
    "zinterstore",
    "zmpop",
    "zrandmember",
    "zrange",
    "zrangebylex",
    "zrangebyscore",
    "zrangestore",
    "zrevrange",
    "zrevrangebylex",
    "zrevrangebyscore",
    "zscan",
    "zunion",
    "zunionstore",
];

/// What the keyspace holds before each call of these commands, which
/// refuse an empty one before they read their options (XCLAIM: no such
/// group; XINFO STREAM: no such key; HSCAN: an empty scan): a key `k` of
/// their type, with the groups `s` and `1` for XCLAIM.
const KEYSPACE: &[(&str, &[&str])] = &[
    (
        "xclaim",
        &["XGROUP CREATE k s $ MKSTREAM", "XGROUP CREATE k 1 $"],
    ),
    ("xinfo|stream", &["XADD k * f v"]),
    ("hscan", &["HSET k f v"]),
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
    let t = table();
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
        let listed = NOT_ON_THE_CURSOR.contains(&name);
        if listed && asked == named {
            mismatches.push(format!(
                "{name}: on the cursor now, leave NOT_ON_THE_CURSOR"
            ));
        }
        if !listed && asked != named {
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
