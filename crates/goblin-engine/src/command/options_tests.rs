//! The parsers and the synopses of the command table must name the same
//! options: what COMMAND DOCS tells a client a command takes is what its
//! parser accepts.
//!
//! For each command, a minimal valid call is built from its synopsis
//! (every required argument, one value each), and run again with a word
//! no parser knows inserted at every position; the argument cursor
//! (`command::args`) records every keyword the parser asks for on the
//! way. The union must be the synopsis's tokens.

use super::args::record_keywords;
use super::syntax::{self, ArgDoc};
use super::table;
use crate::{Config, ConnInfo, Engine};
use std::collections::BTreeSet;

/// Commands whose options are not read through the argument cursor yet:
/// each parser moves to it family by family, and leaves this list then.
/// The few that are on the cursor but out of the probes' reach stay, with
/// the reason on their line.
const NOT_ON_THE_CURSOR: &[&str] = &[
    "blmove",
    "blmpop",
    "client|kill",     // on the cursor: no probe gives TYPE, whose values are tokens
    "client|list",     // on the cursor: no probe gives TYPE, whose values are tokens
    "client|no-evict", // on the cursor: arity 3 leaves no room for a probe
    "client|reply",    // on the cursor: arity 3 leaves no room for a probe
    "command|list",    // on the cursor: no probe gives FILTERBY, whose filters are tokens
    "hello", // on the cursor: a probe is read as the protocol version
    "hexpire",
    "hexpireat",
    "hexpiretime",
    "hgetdel",
    "hgetex",
    "hpersist",
    "hpexpire",
    "hpexpireat",
    "hpexpiretime",
    "hpttl",
    "hrandfield",
    "hscan", // on the cursor: read after the key, which the probes never have
    "hsetex",
    "httl",
    "linsert",
    "lmove",
    "lmpop",
    "lpos",
    "sscan", // on the cursor: read after the key, which the probes never have
    "xadd",
    "xautoclaim",
    "xclaim",
    "xgroup|create",
    "xgroup|setid",
    "xinfo|stream",
    "xpending",
    "xrange",
    "xread",
    "xreadgroup",
    "xrevrange",
    "xsetid",
    "xtrim",
    "zscan", // on the cursor: read after the key, which the probes never have
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

/// Keywords of a synopsis this test cannot reach, as their parser reads
/// them only once the key exists (Redis answers a missing key before).
const OUT_OF_REACH: &[(&str, &[&str])] = &[
    // bitcountCommand and bitposCommand read the range, and its unit,
    // only for an existing string.
    ("bitcount", &["BYTE", "BIT"]),
    ("bitpos", &["BYTE", "BIT"]),
    // georadiusGeneric reads neither the member nor the radius and its
    // unit without the source set.
    ("georadiusbymember", &["M", "KM", "FT", "MI"]),
    ("georadiusbymember_ro", &["M", "KM", "FT", "MI"]),
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

/// One value of each required argument, in order.
fn minimal(args: &[ArgDoc], out: &mut Vec<Vec<u8>>) {
    for a in args.iter().filter(|a| !a.optional) {
        if let Some(t) = &a.token {
            out.push(t.as_bytes().to_vec());
        }
        match a.kind {
            "pure-token" => {}
            "oneof" => minimal(&a.children[..1], out),
            "block" => minimal(&a.children, out),
            "key" => out.push(b"k".to_vec()),
            "pattern" => out.push(b"*".to_vec()),
            "integer" | "double" | "unix-time" => out.push(b"1".to_vec()),
            _ => out.push(b"s".to_vec()),
        }
    }
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
        let mut call: Vec<Vec<u8>> = name.split('|').map(|w| w.as_bytes().to_vec()).collect();
        let words = call.len();
        minimal(&docs, &mut call);
        let mut asked = BTreeSet::new();
        for at in words..=call.len() {
            let mut probe = call.clone();
            probe.insert(at, b"__probe__".to_vec());
            let argv: Vec<&[u8]> = probe.iter().map(Vec::as_slice).collect();
            let config = Config::new();
            config.set_initial("dir", dir.to_str().unwrap()).unwrap();
            config.set_initial("save", "").unwrap();
            let engine = Engine::new(config);
            let mut session = engine.session(ConnInfo::embedded());
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
