//! COMMAND compared with Redis 7.0.15's, field by field: Goblin and
//! Debian's redis-server run side by side, and for every command and
//! subcommand both have, COMMAND INFO (name, arity, flags, first/last/step,
//! ACL categories, tips, key specs, subcommands) and COMMAND DOCS
//! (summary, since, group, complexity, doc_flags, deprecated_since,
//! replaced_by, history, arguments recursively) must agree, RESP3 types
//! included (a set is not an array). COMMAND COUNT, COMMAND LIST (with
//! each filter) and COMMAND GETKEYS / GETKEYSANDFLAGS must agree with the
//! table and with Redis.
//!
//! The deliberate differences are listed, each with its reason, in
//! tests/command-metadata-allowlist.txt:
//!
//! - `differs <command> <field>: <reason>`: a difference in one field. An
//!   entry that matches no difference fails the test, so the list stays
//!   true.
//! - `missing <command>: <reason>`: a command Redis has and Goblin lacks.
//!   A command of Redis's missing from Goblin without an entry fails the
//!   test; an entry whose command has since been added is only reported
//!   (commands are being added, and from then on they are compared).
//!
//! Commands only Goblin has (GOBLIN.*, the hash field expiry commands...)
//! are listed in the output, not compared.

use crate::common::TestServer;
use crate::goblin_support::RedisProcess;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const ALLOWLIST: &str = include_str!("../../../../tests/command-metadata-allowlist.txt");

/// One RESP3 reply, its type kept.
#[derive(Clone, PartialEq)]
enum V {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Double(String),
    Bool(bool),
    Array(Vec<V>),
    Set(Vec<V>),
    Map(Vec<(V, V)>),
}

impl V {
    fn text(&self) -> String {
        match self {
            V::Simple(s) => s.clone(),
            V::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("expected a string, got {other}"),
        }
    }

    fn items(&self) -> &[V] {
        match self {
            V::Array(v) | V::Set(v) => v,
            other => panic!("expected an array or a set, got {other}"),
        }
    }

    fn pairs(&self) -> &[(V, V)] {
        match self {
            V::Map(m) => m,
            other => panic!("expected a map, got {other}"),
        }
    }

    fn int(&self) -> i64 {
        match self {
            V::Int(n) => *n,
            other => panic!("expected an integer, got {other}"),
        }
    }
}

impl fmt::Display for V {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, open: &str, v: &[V], close: &str| {
            write!(f, "{open}")?;
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{x}")?;
            }
            write!(f, "{close}")
        };
        match self {
            V::Simple(s) => write!(f, "+{s}"),
            V::Error(s) => write!(f, "-{s}"),
            V::Int(n) => write!(f, ":{n}"),
            V::Bulk(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            V::Null => write!(f, "null"),
            V::Double(d) => write!(f, ",{d}"),
            V::Bool(b) => write!(f, "#{b}"),
            V::Array(v) => list(f, "[", v, "]"),
            V::Set(v) => list(f, "~{", v, "}"),
            V::Map(m) => {
                write!(f, "{{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                write!(f, "}}")
            }
        }
    }
}

impl fmt::Debug for V {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A RESP3 connection (HELLO 3).
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    fn connect(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut c = Conn {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        };
        c.call(&["HELLO", "3"]);
        c
    }

    fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> V {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            let a = a.as_ref();
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&out).unwrap();
        self.read()
    }

    fn line(&mut self) -> String {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line).unwrap();
        assert!(line.ends_with(b"\r\n"), "truncated reply line {line:?}");
        line.truncate(line.len() - 2);
        String::from_utf8(line).unwrap()
    }

    fn read(&mut self) -> V {
        let line = self.line();
        let (kind, rest) = line.split_at(1);
        let n = || rest.parse::<i64>().unwrap();
        match kind {
            "+" => V::Simple(rest.to_string()),
            "-" => V::Error(rest.to_string()),
            ":" => V::Int(n()),
            "," => V::Double(rest.to_string()),
            "#" => V::Bool(rest == "t"),
            "_" => V::Null,
            "$" | "=" => {
                if n() < 0 {
                    return V::Null;
                }
                let mut buf = vec![0u8; n() as usize + 2];
                self.reader.read_exact(&mut buf).unwrap();
                buf.truncate(n() as usize);
                V::Bulk(buf)
            }
            "*" | "~" | ">" => {
                if n() < 0 {
                    return V::Null;
                }
                let items = (0..n()).map(|_| self.read()).collect();
                if kind == "~" {
                    V::Set(items)
                } else {
                    V::Array(items)
                }
            }
            "%" => V::Map((0..n()).map(|_| (self.read(), self.read())).collect()),
            _ => panic!("unexpected reply line {line:?}"),
        }
    }
}

/// The allow-list: deliberate differences and the commands Goblin lacks.
struct Allowed {
    /// (command, field) → reason.
    differs: BTreeMap<(String, String), String>,
    /// command → reason.
    missing: BTreeMap<String, String>,
}

fn allowlist() -> Allowed {
    let mut allowed = Allowed {
        differs: BTreeMap::new(),
        missing: BTreeMap::new(),
    };
    for (n, line) in ALLOWLIST.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (head, reason) = line
            .split_once(": ")
            .unwrap_or_else(|| panic!("allow-list line {}: no reason: {line}", n + 1));
        assert!(
            !reason.trim().is_empty(),
            "allow-list line {}: empty reason",
            n + 1
        );
        let words: Vec<&str> = head.split_whitespace().collect();
        match words.as_slice() {
            ["differs", name, field] => {
                allowed
                    .differs
                    .insert((name.to_string(), field.to_string()), reason.to_string());
            }
            ["missing", name] => {
                allowed.missing.insert(name.to_string(), reason.to_string());
            }
            _ => panic!("allow-list line {}: not understood: {line}", n + 1),
        }
    }
    allowed
}

/// Every entry of COMMAND (INFO) by full name, subcommands included.
fn flatten_info(entries: &[V], out: &mut BTreeMap<String, V>) {
    for e in entries {
        let fields = e.items();
        assert_eq!(fields.len(), 10, "a COMMAND INFO entry has 10 fields: {e}");
        out.insert(fields[0].text(), e.clone());
        flatten_info(fields[9].items(), out);
    }
}

/// Every entry of COMMAND DOCS by full name, subcommands included.
fn flatten_docs(docs: &V, out: &mut BTreeMap<String, V>) {
    for (name, doc) in docs.pairs() {
        out.insert(name.text(), doc.clone());
        if let Some((_, subs)) = doc.pairs().iter().find(|(k, _)| k.text() == "subcommands") {
            flatten_docs(subs, out);
        }
    }
}

/// The first place two argument trees differ, as a path (`[2].arguments[0].token`).
fn first_difference(redis: &V, goblin: &V, path: String) -> Option<(String, String, String)> {
    match (redis, goblin) {
        (V::Array(r), V::Array(g)) | (V::Set(r), V::Set(g)) if r.len() == g.len() => r
            .iter()
            .zip(g)
            .enumerate()
            .find_map(|(i, (r, g))| first_difference(r, g, format!("{path}[{i}]"))),
        (V::Map(r), V::Map(g)) => {
            let rk: Vec<String> = r.iter().map(|(k, _)| k.text()).collect();
            let gk: Vec<String> = g.iter().map(|(k, _)| k.text()).collect();
            if rk != gk {
                return Some((format!("{path} (fields)"), rk.join(","), gk.join(",")));
            }
            r.iter()
                .zip(g)
                .find_map(|((k, r), (_, g))| first_difference(r, g, format!("{path}.{}", k.text())))
        }
        (r, g) if r == g => None,
        (r, g) => Some((path, r.to_string(), g.to_string())),
    }
}

/// A map's value by key.
fn field<'v>(map: &'v V, key: &str) -> Option<&'v V> {
    map.pairs()
        .iter()
        .find(|(k, _)| k.text() == key)
        .map(|(_, v)| v)
}

struct Differences {
    found: Vec<(String, String, String)>,
}

impl Differences {
    fn note(&mut self, name: &str, field: &str, what: String) {
        self.found.push((name.to_string(), field.to_string(), what));
    }
}

const INFO_FIELDS: [&str; 9] = [
    "name",
    "arity",
    "flags",
    "first",
    "last",
    "step",
    "acl",
    "tips",
    "key_specs",
];

const DOCS_FIELDS: [&str; 10] = [
    "summary",
    "since",
    "group",
    "complexity",
    "module",
    "doc_flags",
    "deprecated_since",
    "replaced_by",
    "history",
    "arguments",
];

fn compare_info(name: &str, r: &V, g: &V, diffs: &mut Differences) {
    let (r, g) = (r.items(), g.items());
    for (i, f) in INFO_FIELDS.iter().enumerate() {
        if let Some((path, rv, gv)) = first_difference(&r[i], &g[i], String::new()) {
            diffs.note(
                name,
                &format!("info.{f}"),
                format!("at {path:?}: Redis {rv}, Goblin {gv}"),
            );
        }
    }
    // Subcommands are compared as commands of their own; here only the
    // reply's shape (an empty set for none, as Redis answers).
    let (rs, gs) = (&r[9], &g[9]);
    if rs.items().is_empty() == gs.items().is_empty()
        && std::mem::discriminant(rs) != std::mem::discriminant(gs)
    {
        diffs.note(name, "info.subcommands", format!("Redis {rs}, Goblin {gs}"));
    }
}

fn compare_docs(name: &str, r: &V, g: &V, diffs: &mut Differences) {
    let known: BTreeSet<&str> = DOCS_FIELDS.iter().copied().chain(["subcommands"]).collect();
    for doc in [r, g] {
        for (k, _) in doc.pairs() {
            assert!(
                known.contains(k.text().as_str()),
                "{name}: COMMAND DOCS field {k} is not compared"
            );
        }
    }
    // The fields in Redis's order.
    let order = |d: &V| -> Vec<String> {
        d.pairs()
            .iter()
            .map(|(k, _)| k.text())
            .filter(|k| k != "subcommands")
            .collect()
    };
    for f in DOCS_FIELDS {
        match (field(r, f), field(g, f)) {
            (None, None) => {}
            (Some(rv), Some(gv)) => {
                if let Some((path, rv, gv)) = first_difference(rv, gv, String::new()) {
                    diffs.note(
                        name,
                        &format!("docs.{f}"),
                        format!("at {path:?}: Redis {rv}, Goblin {gv}"),
                    );
                }
            }
            (rv, gv) => diffs.note(
                name,
                &format!("docs.{f}"),
                format!("Redis {rv:?}, Goblin {gv:?}"),
            ),
        }
    }
    if order(r) != order(g) && diffs.found.iter().all(|(n, _, _)| n != name) {
        diffs.note(
            name,
            "docs.order",
            format!("Redis {:?}, Goblin {:?}", order(r), order(g)),
        );
    }
}

/// Names of a COMMAND LIST reply.
fn names(v: &V) -> BTreeSet<String> {
    v.items().iter().map(V::text).collect()
}

#[test]
fn command_info_and_docs_match_redis() {
    let allowed = allowlist();
    let redis_server = RedisProcess::start();
    let goblin_server = TestServer::start();
    let mut redis = Conn::connect(redis_server.addr);
    let mut goblin = Conn::connect(goblin_server.addr);

    // COMMAND with no argument: the whole table, as COMMAND INFO.
    let mut r_info = BTreeMap::new();
    let mut g_info = BTreeMap::new();
    let r_all = redis.call(&["COMMAND"]);
    let g_all = goblin.call(&["COMMAND"]);
    flatten_info(r_all.items(), &mut r_info);
    flatten_info(g_all.items(), &mut g_info);
    let mut g_info_again = BTreeMap::new();
    flatten_info(goblin.call(&["COMMAND", "INFO"]).items(), &mut g_info_again);
    assert_eq!(g_info, g_info_again, "COMMAND and COMMAND INFO differ");
    for (conn, all) in [(&mut redis, &r_all), (&mut goblin, &g_all)] {
        assert_eq!(
            conn.call(&["COMMAND", "COUNT"]).int(),
            all.items().len() as i64,
            "COMMAND COUNT is not the number of commands COMMAND lists"
        );
    }

    let mut r_docs = BTreeMap::new();
    let mut g_docs = BTreeMap::new();
    flatten_docs(&redis.call(&["COMMAND", "DOCS"]), &mut r_docs);
    flatten_docs(&goblin.call(&["COMMAND", "DOCS"]), &mut g_docs);
    assert_eq!(
        r_info.keys().collect::<Vec<_>>(),
        r_docs.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        g_info.keys().collect::<Vec<_>>(),
        g_docs.keys().collect::<Vec<_>>(),
        "COMMAND DOCS and COMMAND INFO list different commands"
    );

    let mut failures = Vec::new();
    let only_goblin: Vec<&String> = g_info.keys().filter(|n| !r_info.contains_key(*n)).collect();
    let only_redis: Vec<&String> = r_info.keys().filter(|n| !g_info.contains_key(*n)).collect();
    println!("commands only Goblin has: {only_goblin:?}");
    println!("commands only Redis has: {only_redis:?}");
    for name in &only_redis {
        if !allowed.missing.contains_key(*name) {
            failures.push(format!(
                "{name}: Redis has it, Goblin does not, and the allow-list does not say why"
            ));
        }
    }
    for name in allowed.missing.keys() {
        if !r_info.contains_key(name) {
            failures.push(format!(
                "allow-list: 'missing {name}' names no command of Redis's"
            ));
        } else if g_info.contains_key(name) {
            failures.push(format!(
                "allow-list: {name} is listed as missing but Goblin has it now (its entry can go)"
            ));
        }
    }

    let mut diffs = Differences { found: Vec::new() };
    let mut compared = 0;
    for (name, r) in &r_info {
        let Some(g) = g_info.get(name) else {
            continue;
        };
        compared += 1;
        compare_info(name, r, g, &mut diffs);
        compare_docs(name, &r_docs[name], &g_docs[name], &mut diffs);
    }
    println!("compared {compared} commands and subcommands");
    assert!(compared > 300, "only {compared} commands compared");
    let mut matched = BTreeSet::new();
    for (name, field, what) in &diffs.found {
        let key = (name.clone(), field.clone());
        if allowed.differs.contains_key(&key) {
            println!("allowed: {name} {field}: {what}");
            matched.insert(key);
        } else {
            failures.push(format!("{name}: {field} differs {what}"));
        }
    }
    for (name, field) in allowed.differs.keys() {
        if !matched.contains(&(name.clone(), field.clone())) {
            failures.push(format!(
                "allow-list: 'differs {name} {field}' matches no difference (remove it)"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn command_list_matches_redis() {
    let allowed = allowlist();
    let redis_server = RedisProcess::start();
    let goblin_server = TestServer::start();
    let mut redis = Conn::connect(redis_server.addr);
    let mut goblin = Conn::connect(goblin_server.addr);

    let r_all = names(&redis.call(&["COMMAND", "LIST"]));
    let g_all = names(&goblin.call(&["COMMAND", "LIST"]));
    // COMMAND LIST names every command and subcommand of COMMAND INFO.
    let mut g_info = BTreeMap::new();
    flatten_info(goblin.call(&["COMMAND"]).items(), &mut g_info);
    assert_eq!(g_all, g_info.keys().cloned().collect::<BTreeSet<_>>());
    let common: BTreeSet<String> = r_all.intersection(&g_all).cloned().collect();
    for name in r_all.difference(&g_all) {
        assert!(
            allowed.missing.contains_key(name),
            "{name}: in Redis's COMMAND LIST, not in Goblin's"
        );
    }
    let within =
        |s: BTreeSet<String>| -> BTreeSet<String> { s.intersection(&common).cloned().collect() };

    let mut filters: Vec<Vec<String>> = Vec::new();
    for cat in redis.call(&["ACL", "CAT"]).items() {
        filters.push(vec!["ACLCAT".into(), cat.text()]);
    }
    filters.push(vec!["ACLCAT".into(), "no-such-category".into()]);
    for pattern in ["*", "x*", "config|*", "*get*", "c?ient|*", "[a-c]*", "*|*"] {
        filters.push(vec!["PATTERN".into(), pattern.into()]);
    }
    for filter in &filters {
        let mut call: Vec<&str> = vec!["COMMAND", "LIST", "FILTERBY"];
        call.extend(filter.iter().map(String::as_str));
        let r = names(&redis.call(&call));
        let g = names(&goblin.call(&call));
        assert!(
            filter[1] == "no-such-category" || filter[0] != "ACLCAT" || !r.is_empty(),
            "Redis's COMMAND LIST FILTERBY {filter:?} is empty"
        );
        assert_eq!(
            within(r),
            within(g),
            "COMMAND LIST FILTERBY {filter:?} (commands both servers have)"
        );
    }
    // No module is loaded on either side; errors as Redis's.
    for call in [
        &["COMMAND", "LIST", "FILTERBY", "MODULE", "nosuchmodule"][..],
        &["COMMAND", "LIST", "FILTERBY", "NOSUCHFILTER", "x"],
        &["COMMAND", "LIST", "FILTERBY", "PATTERN"],
        &["COMMAND", "LIST", "WHATEVER"],
        &["COMMAND", "COUNT", "extra"],
    ] {
        assert_eq!(redis.call(call), goblin.call(call), "{call:?}");
    }
}

#[test]
fn command_getkeys_matches_redis() {
    let redis_server = RedisProcess::start();
    let goblin_server = TestServer::start();
    let mut redis = Conn::connect(redis_server.addr);
    let mut goblin = Conn::connect(goblin_server.addr);
    let calls: &[&str] = &[
        "GET k",
        "SET k v",
        "SET k v GET",
        "MSET a 1 b 2 c 3",
        "MGET a b c",
        "DEL a b c",
        "COPY a b",
        "RENAME a b",
        "LMOVE a b LEFT RIGHT",
        "BLMPOP 0 2 a b LEFT",
        "LMPOP 2 a b LEFT COUNT 2",
        "ZUNIONSTORE d 2 a b WEIGHTS 1 2",
        "ZINTER 2 a b",
        "ZRANGESTORE d s 0 -1",
        "EVAL script 2 a b x y",
        "EVAL script 0",
        "EVALSHA sha 1 a",
        "FCALL f 1 a b",
        "SORT a BY w* GET o* STORE d",
        "SORT_RO a BY w*",
        "SORT a",
        "XREAD COUNT 2 STREAMS a b 0 0",
        "XREADGROUP GROUP g c STREAMS a 0",
        "XADD s * f v",
        "XINFO STREAM s",
        "XGROUP CREATE s g $",
        "OBJECT ENCODING k",
        "MEMORY USAGE k",
        "MIGRATE h 1 k 0 10",
        "MIGRATE h 1 \"\" 0 10 KEYS a b",
        "GEORADIUS src 1 1 1 km STORE a",
        "GEOSEARCHSTORE dst src FROMLONLAT 1 1 BYRADIUS 1 km",
        "LCS a b",
        "BITFIELD k GET u8 0",
        "BITFIELD k SET u8 0 1",
        "BITOP AND d a b",
        "PFMERGE d a b",
        "PFCOUNT a b",
        "BLPOP a b 0",
        "SINTERCARD 2 a b",
        "GETEX k PERSIST",
        "RESTORE k 0 payload",
        "TOUCH a b",
        "WATCH a b",
        "SUBSCRIBE ch",
        "PING",
        "CONFIG GET x",
        "CONFIG",
        "NOSUCHCOMMAND a",
        "CONFIG NOSUCHSUB",
        "GET",
        "GET a b",
        "MSET a",
        "ZUNIONSTORE d 3 a",
        "EVAL script x",
        "SET",
    ];
    for line in calls {
        let words: Vec<String> = line
            .split(' ')
            .map(|w| {
                if w == "\"\"" {
                    String::new()
                } else {
                    w.to_string()
                }
            })
            .collect();
        for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
            let mut call = vec!["COMMAND".to_string(), sub.to_string()];
            call.extend(words.iter().cloned());
            assert_eq!(
                redis.call(&call),
                goblin.call(&call),
                "COMMAND {sub} {line}"
            );
        }
    }
    for call in [
        &["COMMAND", "GETKEYS"][..],
        &["COMMAND", "GETKEYSANDFLAGS", "GET"],
    ] {
        assert_eq!(redis.call(call), goblin.call(call), "{call:?}");
    }
}

/// A container named without a subcommand: COMMAND answers the table;
/// the others are refused with Redis's text.
#[test]
fn a_container_without_a_subcommand_is_answered_as_redis_answers() {
    let redis_server = RedisProcess::start();
    let goblin_server = TestServer::start();
    let mut redis = Conn::connect(redis_server.addr);
    let mut goblin = Conn::connect(goblin_server.addr);
    let all = goblin.call(&["COMMAND"]);
    assert!(all.items().len() > 200, "COMMAND answered {all}");
    let mut containers: Vec<String> = Vec::new();
    for entry in redis.call(&["COMMAND"]).items() {
        if !entry.items()[9].items().is_empty() {
            containers.push(entry.items()[0].text());
        }
    }
    assert!(containers.len() > 10);
    for name in containers.iter().filter(|n| *n != "command") {
        let r = redis.call(&[name.as_str()]);
        let g = goblin.call(&[name.as_str()]);
        // A container Goblin lacks is an unknown command there.
        if matches!(&g, V::Error(e) if e.starts_with("ERR unknown command")) {
            continue;
        }
        assert_eq!(r, g, "{name} without a subcommand");
        // So do the commands that look a call up as the dispatcher does.
        for call in [
            &["ACL", "DRYRUN", "default", name.as_str()][..],
            &["COMMAND", "GETKEYS", name.as_str()],
        ] {
            assert_eq!(redis.call(call), goblin.call(call), "{call:?}");
        }
    }
    assert_eq!(
        redis.call(&["ACL", "DRYRUN", "default", "COMMAND"]),
        goblin.call(&["ACL", "DRYRUN", "default", "COMMAND"])
    );
    // Unknown subcommands, in upper and lower case.
    for call in [
        &["CONFIG", "NOSUCH"][..],
        &["object", "nosuch", "x"],
        &["ACL", "DRYRUN", "default", "CONFIG", "NOSUCH"],
        &["COMMAND", "GETKEYS", "CONFIG", "NOSUCH"],
    ] {
        assert_eq!(redis.call(call), goblin.call(call), "{call:?}");
    }
}
