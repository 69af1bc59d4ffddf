//! SORT and SORT_RO (Redis's sort.c): sort a list, set or sorted set,
//! numerically or lexicographically, by the elements themselves or by
//! values fetched through a pattern (`BY weight_*`, `GET data_*->field`),
//! with LIMIT, and optionally STORE the result as a list.
//!
//! BY and GET patterns name keys derived from the data being sorted, so no
//! one can know them before the command runs: a SORT that uses them holds
//! every shard (see `sort_locks`); a plain SORT holds only its key's shard
//! and the destination's.

use crate::command::args::Args;
use crate::command::spec::{flag, kflag, CmdResult, CommandSpec, Group, KeySpec};
use crate::command::Ctx;
use crate::commands::lists;
use crate::engine::Engine;
use crate::keyspace::list::List;
use crate::keyspace::{Object, ShardLocks, Value};
use crate::pubsub::notify;
use crate::util::number::{arg_i64, parse_f64_strtod};
use crate::Error;
use std::cmp::Ordering;

/// SORT's parsed options.
#[derive(Debug, Default)]
pub struct SortOptions<'a> {
    pub desc: bool,
    pub alpha: bool,
    pub limit: Option<(i64, i64)>,
    pub store: Option<&'a [u8]>,
    /// BY pattern; `dontsort` when it has no '*'.
    pub by: Option<&'a [u8]>,
    pub get: Vec<&'a [u8]>,
}

impl SortOptions<'_> {
    /// BY with a constant pattern (no '*'): keep the native order.
    fn dontsort(&self) -> bool {
        self.by.is_some_and(|p| !p.contains(&b'*'))
    }

    fn sort_by_pattern(&self) -> Option<&[u8]> {
        self.by.filter(|p| p.contains(&b'*'))
    }
}

/// SORT's options, in any order and any number of times (the last one
/// counting, every GET kept), as Redis's sortCommandGeneric reads them.
/// `readonly`: SORT_RO, which has no STORE. `full_key_access`: the user
/// may read every key, so BY and GET patterns may name any key (Redis
/// refuses them otherwise).
pub fn parse_sort<'a>(
    args: &[&'a [u8]],
    readonly: bool,
    full_key_access: bool,
) -> Result<SortOptions<'a>, Error> {
    let mut o = SortOptions::default();
    let mut a = Args::new(&args[2..]);
    while !a.is_empty() {
        if a.flag("ASC") {
            o.desc = false;
        } else if a.flag("DESC") {
            o.desc = true;
        } else if a.flag("ALPHA") {
            o.alpha = true;
        } else if let Some(offset) = a.option("LIMIT") {
            // LIMIT without both its values is a syntax error.
            let count = a.next_arg()?;
            o.limit = Some((arg_i64(offset)?, arg_i64(count)?));
        } else if let Some(dst) = (!readonly).then(|| a.option("STORE")).flatten() {
            o.store = Some(dst);
        } else if let Some(pattern) = a.option("BY") {
            o.by = Some(pattern);
            if pattern.contains(&b'*') && !full_key_access {
                return Err(Error::err(
                    "BY option of SORT denied due to insufficient ACL permissions.",
                ));
            }
        } else if let Some(pattern) = a.option("GET") {
            if !full_key_access {
                return Err(Error::err(
                    "GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            o.get.push(pattern);
        } else {
            return Err(Error::SYNTAX);
        }
    }
    Ok(o)
}

/// Whether a SORT's arguments name keys through patterns (BY with '*', or
/// GET other than '#').
fn uses_patterns(args: &[&[u8]]) -> bool {
    args.windows(2).skip(1).any(|w| {
        (w[0].eq_ignore_ascii_case(b"by") && w[1].contains(&b'*'))
            || (w[0].eq_ignore_ascii_case(b"get") && w[1] != b"#")
    })
}

/// The shards a SORT holds: every one when patterns name keys, else those
/// of the sorted key and the STORE destination.
fn sort_locks<'e>(
    engine: &'e Engine,
    _client: &crate::client::ClientState,
    args: &[&[u8]],
) -> ShardLocks<'e> {
    if uses_patterns(args) {
        return engine.keyspace().lock_all();
    }
    let mut shards = vec![engine.keyspace().shard_of_key(args[1])];
    shards.extend(
        sort_keys(args)
            .into_iter()
            .skip(1)
            .map(|(i, _)| engine.keyspace().shard_of_key(args[i])),
    );
    engine.keyspace().lock_set(shards)
}

/// Redis's sortGetKeys: the sorted key (read), and the last STORE
/// destination (overwritten).
fn sort_keys(args: &[&[u8]]) -> Vec<(usize, u32)> {
    let mut keys = vec![(1, kflag::RO | kflag::ACCESS)];
    let mut store = None;
    let mut j = 2;
    while j < args.len() {
        let skip = if args[j].eq_ignore_ascii_case(b"limit") {
            2
        } else if args[j].eq_ignore_ascii_case(b"get") || args[j].eq_ignore_ascii_case(b"by") {
            1
        } else if args[j].eq_ignore_ascii_case(b"store") {
            if j + 1 < args.len() {
                store = Some(j + 1);
            }
            1
        } else {
            0
        };
        j += skip + 1;
    }
    keys.extend(store.map(|i| (i, kflag::OW | kflag::UPDATE)));
    keys
}

/// Redis's sortROGetKeys: the key is always the first argument, but SORT_RO
/// has a key function (so COMMAND INFO flags it movablekeys, as Redis does).
fn sort_ro_keys(_args: &[&[u8]]) -> Vec<(usize, u32)> {
    vec![(1, kflag::RO | kflag::ACCESS)]
}

/// Redis's lookupKeyByPattern: "#" is the element itself; otherwise the
/// first '*' is replaced by the element and the key read (a string), or,
/// with "->field" after the '*', a field of the hash at that key.
fn lookup_by_pattern(ctx: &mut Ctx, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    let after = &pattern[star + 1..];
    let (postfix, field) = match after.windows(2).position(|w| w == b"->") {
        Some(i) if i + 2 < after.len() => (&after[..i], Some(&after[i + 2..])),
        _ => (after, None),
    };
    let key = [&pattern[..star], element, postfix].concat();
    match (ctx.lookup_read(&key), field) {
        (
            Some(Object {
                value: Value::Str(s),
                ..
            }),
            None,
        ) => Some(s.to_vec()),
        (
            Some(Object {
                value: Value::Hash(h),
                ..
            }),
            Some(f),
        ) => h.get(f).map(<[u8]>::to_vec),
        _ => None,
    }
}

struct Item {
    element: Vec<u8>,
    score: f64,
    /// The BY value for an ALPHA sort by pattern (None: missing).
    by: Option<Vec<u8>>,
}

fn compare(a: &Item, b: &Item, o: &SortOptions) -> Ordering {
    let cmp = if !o.alpha {
        // Equal scores fall back to the elements, so the result is
        // deterministic (as Redis's sortCompare).
        a.score
            .partial_cmp(&b.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.element.cmp(&b.element))
    } else if o.sort_by_pattern().is_some() {
        match (&a.by, &b.by) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => x.cmp(y),
        }
    } else {
        a.element.cmp(&b.element)
    };
    if o.desc {
        cmp.reverse()
    } else {
        cmp
    }
}

fn sort_generic(ctx: &mut Ctx, args: &[&[u8]], readonly: bool) -> CmdResult {
    let cmd_id = ctx.cmd_id;
    let full_key_access = ctx
        .client
        .user
        .as_mut()
        .is_none_or(|u| u.rules().reads_every_key(cmd_id, args));
    let mut o = parse_sort(args, readonly, full_key_access)?;
    let in_script = ctx.in_script;
    // Load the elements (in native order).
    let mut dontsort = o.dontsort();
    let (elements, native_sorted): (Vec<Vec<u8>>, bool) = match ctx.lookup_read(args[1]) {
        None => (Vec::new(), true),
        Some(Object {
            value: Value::List(l),
            ..
        }) => (l.iter().map(<[u8]>::to_vec).collect(), true),
        Some(Object {
            value: Value::Set(s),
            ..
        }) => (s.iter().map(|m| m.to_bytes().into_owned()).collect(), false),
        Some(Object {
            value: Value::ZSet(z),
            ..
        }) => (z.iter().map(|(m, _)| m.to_vec()).collect(), true),
        Some(_) => return Err(Error::WRONGTYPE),
    };
    // A set has no order of its own: when the result is stored or seen by
    // a script, sort it so that it is the same everywhere.
    if dontsort && !native_sorted && (o.store.is_some() || in_script) {
        dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    let len = elements.len() as i64;
    let (limit_start, limit_count) = o.limit.unwrap_or((0, -1));
    let mut start = limit_start.max(0).min(len);
    let limit_count = limit_count.max(-1).min(len);
    let mut end = if limit_count < 0 {
        len - 1
    } else {
        start + limit_count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }

    let mut items: Vec<Item> = elements
        .into_iter()
        .map(|element| Item {
            element,
            score: 0.0,
            by: None,
        })
        .collect();
    if dontsort {
        // Native order, DESC reversing it (lists and sorted sets).
        if o.desc && native_sorted {
            items.reverse();
        }
    } else {
        let by = o.sort_by_pattern().map(<[u8]>::to_vec);
        let mut conversion_error = false;
        for item in items.iter_mut() {
            let value = match &by {
                Some(p) => match lookup_by_pattern(ctx, p, &item.element) {
                    Some(v) => v,
                    None => continue,
                },
                None => item.element.clone(),
            };
            if o.alpha {
                if by.is_some() {
                    item.by = Some(value);
                }
            } else {
                match parse_f64_strtod(&value) {
                    Some(f) => item.score = f,
                    None => conversion_error = true,
                }
            }
        }
        if conversion_error {
            return Err(Error::err(
                "One or more scores can't be converted into double",
            ));
        }
        items.sort_by(|a, b| compare(a, b, &o));
    }

    let selected: &[Item] = if end >= start && start >= 0 {
        &items[start as usize..=end as usize]
    } else {
        &[]
    };
    let per_element = o.get.len().max(1);
    let output_len = selected.len() * per_element;
    match o.store {
        None => {
            ctx.out.array(output_len);
            for item in selected {
                if o.get.is_empty() {
                    ctx.out.bulk(&item.element);
                }
                for pattern in &o.get {
                    match lookup_by_pattern(ctx, pattern, &item.element) {
                        Some(v) => ctx.out.bulk(&v),
                        None => ctx.out.null(),
                    }
                }
            }
        }
        Some(dst) => {
            let mut values: Vec<Vec<u8>> = Vec::with_capacity(output_len);
            for item in selected {
                if o.get.is_empty() {
                    values.push(item.element.clone());
                }
                for pattern in &o.get {
                    values.push(lookup_by_pattern(ctx, pattern, &item.element).unwrap_or_default());
                }
            }
            if values.is_empty() {
                ctx.delete_key(dst);
            } else {
                let fill = lists::fill(ctx);
                let mut list = List::new();
                for v in &values {
                    list.push_back(v, fill);
                }
                ctx.store(
                    dst,
                    Value::List(Box::new(list)),
                    false,
                    notify::LIST,
                    "sortstore",
                );
                ctx.add_dirty(values.len() as u64 - 1);
            }
            ctx.out.int(output_len as i64);
        }
    }
    Ok(())
}

fn sort_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    sort_generic(ctx, args, false)
}

fn sort_ro_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    sort_generic(ctx, args, true)
}

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "sort",
        arity: -2,
        flags: flag::WRITE | flag::DENYOOM,
        // BY and GET read any key: @dangerous, as in Redis 7.0.
        acl: &["set", "sortedset", "list", "dangerous"],
        group_acl: false,
        keys: &[
            KeySpec::at(1, kflag::RO | kflag::ACCESS),
            KeySpec::unknown(kflag::RO | kflag::ACCESS),
            KeySpec::unknown(kflag::OW | kflag::UPDATE),
        ],
        key_spec_notes: &[
            (1, "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"),
            (2, "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array"),
        ],
        keys_fn: Some(sort_keys),
        locks_fn: Some(sort_locks),
        group: Group::Generic,
        since: "1.0.0",
        summary: "Sort the elements in a list, set or sorted set",
        complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        syntax: "key:key [BY pattern:pattern]{key_spec_index:1} [LIMIT offset_count:block(offset:integer count:integer)] [GET pattern:pattern...]{key_spec_index:1}{multiple_token} [order:oneof(ASC|DESC)] [ALPHA]{name:sorting} [STORE destination:key]{key_spec_index:2}",
        handler: sort_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "sort_ro",
        arity: -2,
        flags: flag::READONLY,
        acl: &["set", "sortedset", "list", "dangerous"],
        group_acl: false,
        keys: &[
            KeySpec::at(1, kflag::RO | kflag::ACCESS),
            KeySpec::unknown(kflag::RO | kflag::ACCESS),
        ],
        key_spec_notes: &[(1, "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort")],
        keys_fn: Some(sort_ro_keys),
        locks_fn: Some(sort_locks),
        group: Group::Generic,
        since: "7.0.0",
        summary: "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
        complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        syntax: "key:key [BY pattern:pattern]{key_spec_index:1} [LIMIT offset_count:block(offset:integer count:integer)] [GET pattern:pattern...]{key_spec_index:1}{multiple_token} [order:oneof(ASC|DESC)] [ALPHA]{name:sorting}",
        handler: sort_ro_command,
        ..CommandSpec::DEFAULT
    },
];
