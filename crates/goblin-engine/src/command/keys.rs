//! Finding a command's keys in its arguments, from its key specs (Redis's
//! getKeysUsingKeySpecs). The dispatcher uses this to lock shards; COMMAND
//! GETKEYS and GETKEYSANDFLAGS report it.

use super::flags::kflag;
use super::keyspec::{BeginSearch, FindKeys, KeySource, KeySpec};
use crate::util::number::parse_i64;

/// (argument index, key spec flags) of every key; None when the arguments
/// do not fit the specs (the command will report its own error).
pub fn key_positions(spec: &impl KeySource, argv: &[&[u8]]) -> Option<Vec<(usize, u32)>> {
    if let Some(f) = spec.keys_fn() {
        return Some(f(argv));
    }
    spec_key_positions(spec, argv)
}

/// The keys COMMAND GETKEYS reports, found as Redis's
/// getKeysFromCommandWithSpecs finds them: from the key specs when there
/// are some and their flags do not depend on the arguments, unless a spec
/// cannot say (unknown, incomplete, out of the arguments); from the
/// command's own search (`keys_fn`) otherwise. So XREADGROUP's keys are
/// reported with its spec's flags, and SORT's STORE key by its search.
pub fn reported_key_positions(spec: &impl KeySource, argv: &[&[u8]]) -> Option<Vec<(usize, u32)>> {
    let has_keyspec = spec
        .key_specs()
        .iter()
        .any(|k| k.flags & kflag::NOT_KEY == 0);
    let has_varflags = spec
        .key_specs()
        .iter()
        .any(|k| k.flags & kflag::VARIABLE_FLAGS != 0);
    if has_keyspec && !has_varflags {
        if let Some(keys) = spec_key_positions(spec, argv) {
            return Some(keys);
        }
    }
    key_positions(spec, argv)
}

/// The keys the key specs locate; None when one of them cannot.
fn spec_key_positions(spec: &impl KeySource, argv: &[&[u8]]) -> Option<Vec<(usize, u32)>> {
    let mut out = Vec::new();
    for ks in spec.key_specs() {
        if ks.flags & kflag::NOT_KEY != 0 {
            continue;
        }
        match spec_keys(ks, argv) {
            SpecKeys::Keys(first, last, step) => {
                let flags = match spec.key_flags_fn() {
                    Some(f) if ks.flags & kflag::VARIABLE_FLAGS != 0 => f(argv),
                    _ => ks.flags,
                };
                let mut i = first;
                while i <= last {
                    if i < argv.len() {
                        out.push((i, flags));
                    }
                    i += step.max(1);
                }
                if ks.flags & kflag::INCOMPLETE != 0 {
                    return None;
                }
            }
            SpecKeys::KeywordMissing => {}
            SpecKeys::Invalid => return None,
        }
    }
    Some(out)
}

enum SpecKeys {
    Keys(usize, usize, usize),
    KeywordMissing,
    Invalid,
}

fn spec_keys(ks: &KeySpec, argv: &[&[u8]]) -> SpecKeys {
    let argc = argv.len() as i64;
    let first: i64 = match ks.begin {
        BeginSearch::Index(pos) => pos as i64,
        BeginSearch::Keyword {
            keyword,
            start_from,
        } => {
            let start = if start_from > 0 {
                start_from as i64
            } else {
                argc + start_from as i64
            };
            let end = if start_from > 0 { argc - 1 } else { 1 };
            let mut found = 0;
            let mut i = start;
            while i != end {
                if i >= argc || i < 1 {
                    break;
                }
                if argv[i as usize].eq_ignore_ascii_case(keyword.as_bytes()) {
                    found = i + 1;
                    break;
                }
                i += if start <= end { 1 } else { -1 };
            }
            if found == 0 {
                return SpecKeys::KeywordMissing;
            }
            found
        }
        BeginSearch::Unknown => return SpecKeys::Invalid,
    };
    let (first, last, step) = match ks.find {
        FindKeys::Range {
            lastkey,
            step,
            limit,
        } => {
            let last = if lastkey >= 0 {
                first + lastkey as i64
            } else if limit == 0 {
                argc + lastkey as i64
            } else {
                first + ((argc - first) / limit as i64 + lastkey as i64)
            };
            (first, last, step as i64)
        }
        FindKeys::Keynum {
            keynum_idx,
            first: firstkey,
            step,
        } => {
            let idx = first + keynum_idx as i64;
            if idx >= argc {
                return SpecKeys::Invalid;
            }
            let Some(n) = parse_i64(argv[idx as usize]).filter(|n| *n >= 0) else {
                return SpecKeys::Invalid;
            };
            let f = first + firstkey as i64;
            (
                f,
                f + n * step.max(1) as i64 - step.max(1) as i64,
                step as i64,
            )
        }
        FindKeys::Unknown => return SpecKeys::Invalid,
    };
    if last < first {
        // Zero keys (numkeys 0) is valid and yields nothing.
        if matches!(ks.find, FindKeys::Keynum { .. }) && last == first - 1 {
            return SpecKeys::Keys(1, 0, 1);
        }
        return SpecKeys::Invalid;
    }
    if last >= argc || first >= argc {
        return SpecKeys::Invalid;
    }
    SpecKeys::Keys(first as usize, last as usize, step.max(1) as usize)
}

/// For a command whose only key is at a fixed position (most commands),
/// that key (None when the arguments stop short of it); None for any other
/// command.
pub fn sole_key<'k>(spec: &impl KeySource, argv: &[&'k [u8]]) -> Option<Option<&'k [u8]>> {
    let [ks_spec] = spec.key_specs() else {
        return None;
    };
    match (
        ks_spec.begin,
        ks_spec.find,
        spec.keys_fn().is_none() && ks_spec.flags & kflag::NOT_KEY == 0,
    ) {
        (BeginSearch::Index(pos), FindKeys::Range { lastkey: 0, .. }, true) => {
            Some(argv.get(pos as usize).copied())
        }
        _ => None,
    }
}
