//! Which EVAL scripts touch only the keys they declare.
//!
//! A script is *keyed* when a look at its source shows that
//! - every `redis.call` / `redis.pcall` names its command with a string
//!   literal and passes `KEYS[...]` at each of that command's key positions
//!   (as the command's key specs place them), and the command needs no more
//!   than its keys' shards (not KEYS, SCAN, FLUSHALL...);
//! - `redis` and `KEYS` are used in no other way (never copied, passed,
//!   shadowed or written), and nothing reaches the environment around them
//!   (`_G`, `getfenv`, `setfenv`, `loadstring`...);
//! - it has no loop and defines no function, and reaches none of the
//!   string library's pattern functions (find, match, gmatch, gsub), whose
//!   one C call backtracks for as long as its pattern makes it: so it runs
//!   in a bounded time and never becomes a busy script.
//!
//! EVAL and EVALSHA of a keyed script hold only the shards of its KEYS and
//! run it on one of a pool of interpreters, so keyed scripts on different
//! shards run in parallel; every other script holds every shard. The look
//! is conservative: a script it cannot read simply holds every shard. As a
//! backstop, a keyed script's `redis.call` on a key whose shard it does not
//! hold (say a `KEYS` entry it overwrote) tries to take that shard without
//! waiting, and fails the call if the shard is busy.

use crate::command::keys::key_positions;
use crate::command::spec::{flag, kflag, BeginSearch, CommandSpec, FindKeys};
use crate::command::table;
use std::cell::Cell;

/// Whether `code` (a script without its shebang line) is keyed. Linear in
/// the length of the code: each token is looked at a bounded number of
/// times, however deeply the script nests its brackets.
pub fn is_keyed(code: &[u8]) -> bool {
    look(code).0
}

/// Whether `code` is keyed, and the number of tokens the analysis looked
/// at.
fn look(code: &[u8]) -> (bool, usize) {
    let Some(tokens) = tokenize(code) else {
        return (false, 0);
    };
    let Some(pairs) = bracket_pairs(&tokens) else {
        return (false, 0);
    };
    let tokens = Tokens {
        t: &tokens,
        pairs: &pairs,
        steps: Cell::new(0),
    };
    (analyze(&tokens), tokens.steps.get())
}

/// A script's tokens, and for each opening bracket the index of the one
/// that closes it.
struct Tokens<'t, 'a> {
    t: &'t [Tok<'a>],
    pairs: &'t [usize],
    /// Tokens looked at so far (the tests hold the analysis to linear).
    steps: Cell<usize>,
}

impl Tokens<'_, '_> {
    /// The index of the bracket closing the one opened at `open`.
    fn matching(&self, open: usize) -> usize {
        self.pairs[open]
    }

    fn step(&self) {
        self.steps.set(self.steps.get() + 1);
    }
}

/// For each token that opens a bracket, the index of the token that
/// closes it (`usize::MAX` for the others); None when the brackets do not
/// balance.
fn bracket_pairs(t: &[Tok]) -> Option<Vec<usize>> {
    let mut pairs = vec![usize::MAX; t.len()];
    let mut open = Vec::new();
    for (j, tok) in t.iter().enumerate() {
        match tok {
            Tok::Op(b"(" | b"{" | b"[") => open.push(j),
            Tok::Op(b")" | b"}" | b"]") => pairs[open.pop()?] = j,
            _ => {}
        }
    }
    open.is_empty().then_some(pairs)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tok<'a> {
    Name(&'a [u8]),
    /// A string literal: its bytes when it has no escape sequence.
    Str(Option<&'a [u8]>),
    Num,
    Op(&'a [u8]),
}

/// Lua 5.1's lexical grammar, enough to walk a script's tokens. None for
/// anything it does not recognize.
fn tokenize(src: &[u8]) -> Option<Vec<Tok<'_>>> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = src.len();
    while i < n {
        let c = src[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c => i += 1,
            b'-' if src.get(i + 1) == Some(&b'-') => {
                i += 2;
                if let Some(level) = long_bracket_level(src, i) {
                    i = skip_long_bracket(src, i, level)?;
                } else {
                    while i < n && src[i] != b'\n' {
                        i += 1;
                    }
                }
            }
            b'[' if long_bracket_level(src, i).is_some() => {
                let level = long_bracket_level(src, i)?;
                i = skip_long_bracket(src, i, level)?;
                out.push(Tok::Str(None));
            }
            b'\'' | b'"' => {
                let start = i + 1;
                let mut j = start;
                let mut escaped = false;
                loop {
                    match src.get(j) {
                        None | Some(b'\n') => return None,
                        Some(&b) if b == c => break,
                        Some(b'\\') => {
                            escaped = true;
                            j += 2;
                        }
                        Some(_) => j += 1,
                    }
                }
                out.push(Tok::Str((!escaped).then(|| &src[start..j])));
                i = j + 1;
            }
            b'0'..=b'9' => {
                i = skip_number(src, i);
                out.push(Tok::Num);
            }
            b'.' if src.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = skip_number(src, i);
                out.push(Tok::Num);
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = i;
                while i < n && (src[i].is_ascii_alphanumeric() || src[i] == b'_') {
                    i += 1;
                }
                out.push(Tok::Name(&src[start..i]));
            }
            _ => {
                let rest = &src[i..];
                let len = if rest.starts_with(b"...") {
                    3
                } else if [b"..", b"==", b"~=", b"<=", b">="]
                    .iter()
                    .any(|op| rest.starts_with(*op))
                {
                    2
                } else if b"+-*/%^#<>=(){}[];:,.".contains(&c) {
                    1
                } else {
                    return None;
                };
                out.push(Tok::Op(&rest[..len]));
                i += len;
            }
        }
    }
    Some(out)
}

/// The level of a long bracket opening at `i` (`[[` is 0, `[==[` is 2).
fn long_bracket_level(src: &[u8], i: usize) -> Option<usize> {
    if src.get(i) != Some(&b'[') {
        return None;
    }
    let mut j = i + 1;
    while src.get(j) == Some(&b'=') {
        j += 1;
    }
    (src.get(j) == Some(&b'[')).then_some(j - i - 1)
}

/// The index just past the long bracket opening at `i`.
fn skip_long_bracket(src: &[u8], i: usize, level: usize) -> Option<usize> {
    let mut close = vec![b']'];
    close.extend(std::iter::repeat_n(b'=', level));
    close.push(b']');
    let body = i + level + 2;
    memchr::memmem::find(&src[body..], &close).map(|at| body + at + close.len())
}

fn skip_number(src: &[u8], mut i: usize) -> usize {
    while i < src.len() {
        let c = src[i];
        let exponent_sign = (c == b'+' || c == b'-') && matches!(src[i - 1], b'e' | b'E');
        if !(c.is_ascii_alphanumeric() || c == b'.' || exponent_sign) {
            break;
        }
        i += 1;
    }
    i
}

/// Names a keyed script may not mention: loops and functions (a script
/// that may run long must hold everything, as busy scripts do), and what
/// reaches around the names checked here.
const BANNED: &[&[u8]] = &[
    b"while",
    b"for",
    b"repeat",
    b"function",
    b"goto",
    b"_G",
    b"getfenv",
    b"setfenv",
    b"loadstring",
    b"load",
    b"dofile",
    b"loadfile",
    b"require",
    b"module",
    b"rawset",
    b"rawget",
    b"setmetatable",
    b"getmetatable",
    b"coroutine",
    b"debug",
    // next(string, k) walks to a field without naming it, and pairs
    // hands out next.
    b"next",
    b"pairs",
];

/// Fields that run a pattern (the string library's, as `string.find` or
/// `s:find`): one C call that backtracks for as long as the pattern makes
/// it, which only a script with the instruction hook may run.
const PATTERN_FIELDS: &[&[u8]] = &[b"find", b"match", b"gmatch", b"gfind", b"gsub"];

/// Fields of `redis` that do not touch keys.
const REDIS_FIELDS: &[&[u8]] = &[
    b"error_reply",
    b"status_reply",
    b"sha1hex",
    b"log",
    b"setresp",
    b"set_repl",
    b"replicate_commands",
    b"breakpoint",
    b"debug",
    b"acl_check_cmd",
    b"LOG_DEBUG",
    b"LOG_VERBOSE",
    b"LOG_NOTICE",
    b"LOG_WARNING",
    b"REPL_ALL",
    b"REPL_AOF",
    b"REPL_SLAVE",
    b"REPL_REPLICA",
    b"REPL_NONE",
    b"REDIS_VERSION",
    b"REDIS_VERSION_NUM",
];

fn analyze(tokens: &Tokens) -> bool {
    let t = tokens.t;
    // Bracket depth at each token, for the assignment check below.
    let mut depth = 0usize;
    // For each open bracket, whether it is an index (`x[...]`, not a
    // table constructor's `[key] =`). An index's key may be a number,
    // `#KEYS`, `#KEYS[1]` and the like, nothing that could name a field
    // (`s[k]` with k = 'fi'..'nd', `KEYS[1][ARGV[1]]` with ARGV[1] = 'find');
    // each token is checked once, as the walk meets it.
    let mut index: Vec<bool> = Vec::new();
    for (i, tok) in t.iter().enumerate() {
        tokens.step();
        if index.last() == Some(&true) {
            let allowed = match tok {
                Tok::Num | Tok::Op(b"#" | b"+" | b"-" | b"*" | b"[" | b"]") => true,
                // Their lengths: KEYS[1] itself is a string, which may be
                // the name of a field.
                Tok::Name(b"KEYS" | b"ARGV") => t[i - 1] == Tok::Op(b"#"),
                _ => false,
            };
            if !allowed {
                return false;
            }
        }
        match tok {
            Tok::Op(b"[") => index.push(
                i > 0 && matches!(t[i - 1], Tok::Name(_) | Tok::Str(_) | Tok::Op(b"]" | b")")),
            ),
            Tok::Op(b"(" | b"{") => index.push(false),
            Tok::Op(b")" | b"}" | b"]") => {
                index.pop();
            }
            _ => {}
        }
        let after_dot = i > 0 && matches!(t[i - 1], Tok::Op(b".") | Tok::Op(b":"));
        match *tok {
            Tok::Op(b"(" | b"{" | b"[") => depth += 1,
            Tok::Op(b")" | b"}" | b"]") => depth = depth.saturating_sub(1),
            Tok::Name(name) if PATTERN_FIELDS.contains(&name) => return false,
            // A field (`string.rep`), not one of the globals below.
            Tok::Name(_) if after_dot => {}
            Tok::Name(name) if BANNED.contains(&name) => return false,
            Tok::Name(b"redis") => {
                let field = match (t.get(i + 1), t.get(i + 2)) {
                    (Some(Tok::Op(b".")), Some(Tok::Name(f))) => *f,
                    _ => return false,
                };
                match field {
                    b"call" | b"pcall" => {
                        if t.get(i + 3) != Some(&Tok::Op(b"(")) || !call_is_keyed(tokens, i + 3) {
                            return false;
                        }
                    }
                    f if REDIS_FIELDS.contains(&f) => {}
                    _ => return false,
                }
            }
            // #KEYS: its length.
            Tok::Name(b"KEYS") if i > 0 && t[i - 1] == Tok::Op(b"#") => {}
            Tok::Name(b"KEYS") => {
                if t.get(i + 1) != Some(&Tok::Op(b"[")) {
                    return false;
                }
                match t.get(tokens.matching(i + 1) + 1) {
                    // KEYS[i] = v
                    Some(Tok::Op(b"=")) => return false,
                    // KEYS[i], x = ... (a list at statement level that is
                    // not the right-hand side of an assignment or a return)
                    Some(Tok::Op(b",")) if depth == 0 => {
                        let before = i.checked_sub(1).map(|p| t[p]);
                        if !matches!(
                            before,
                            Some(Tok::Op(b"=")) | Some(Tok::Op(b",")) | Some(Tok::Name(b"return"))
                        ) {
                            return false;
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    true
}

/// Whether the argument list opening at `open` (a `redis.call(`) names a
/// command that needs only its keys' shards and passes `KEYS[...]` at each
/// key position.
fn call_is_keyed(tokens: &Tokens, open: usize) -> bool {
    let t = tokens.t;
    let close = tokens.matching(open);
    // Split the arguments at top-level commas, stepping over nested
    // brackets whole: a call nested in an argument is looked at once, as
    // its own `redis.call`, not again here.
    let mut args: Vec<&[Tok]> = Vec::new();
    let mut arg_starts = Vec::new();
    let mut start = open + 1;
    let mut j = open + 1;
    while j < close {
        tokens.step();
        match t[j] {
            Tok::Op(b"(" | b"{" | b"[") => j = tokens.matching(j),
            Tok::Op(b",") => {
                args.push(&t[start..j]);
                arg_starts.push(start);
                start = j + 1;
            }
            _ => {}
        }
        j += 1;
    }
    if start < close {
        args.push(&t[start..close]);
        arg_starts.push(start);
    }
    let Some(name) = args.first().and_then(|a| literal(a)) else {
        return false;
    };
    let t_ = table();
    let Some(mut id) = t_.lookup(name) else {
        // Unknown: the call fails before touching anything.
        return true;
    };
    if !t_.get(id).subcommands.is_empty() {
        let Some(sub) = args.get(1).and_then(|a| literal(a)) else {
            return false;
        };
        match t_.subcommand(id, sub) {
            Some(s) => id = s,
            None => return true,
        }
    }
    let spec = t_.get(id).spec;
    let n = args.len();
    // A last argument that is a call (or `...`) may expand to any number
    // of values, so the arguments after it are unknown.
    let expands = args.last().is_some_and(|a| {
        matches!(a.last(), Some(Tok::Op(b")" | b"}" | b"...")))
            || (a.len() > 1 && matches!(a.last(), Some(Tok::Str(_))))
    });
    let Some(positions) = static_key_positions(spec, n, expands) else {
        return false;
    };
    positions
        .iter()
        .all(|&p| is_keys_index(tokens, arg_starts[p], args[p].len()))
}

/// The argument indexes holding keys in a call of `n` arguments (the last
/// one expanding when `expands`), when they do not depend on the
/// arguments' values; None otherwise, or when the command needs more than
/// its keys' shards.
fn static_key_positions(spec: &CommandSpec, n: usize, expands: bool) -> Option<Vec<usize>> {
    if spec.has(flag::ALL_SHARDS) || spec.locks_fn.is_some() || spec.keys_fn.is_some() {
        return None;
    }
    let mut fixed = true;
    for ks in spec.keys {
        if ks.flags & kflag::NOT_KEY != 0 {
            continue;
        }
        match (ks.begin, ks.find) {
            (BeginSearch::Index(pos), FindKeys::Range { lastkey, limit, .. }) if pos > 0 => {
                if lastkey < 0 || limit > 1 {
                    fixed = false;
                }
            }
            _ => return None,
        }
    }
    if expands {
        if !fixed {
            return None;
        }
        // Every key must come before the expanding argument.
        let mut out = Vec::new();
        for ks in spec.keys {
            if ks.flags & kflag::NOT_KEY != 0 {
                continue;
            }
            if let (BeginSearch::Index(pos), FindKeys::Range { lastkey, step, .. }) =
                (ks.begin, ks.find)
            {
                let mut p = pos as usize;
                while p <= (pos + lastkey) as usize {
                    if p + 1 >= n {
                        return None;
                    }
                    out.push(p);
                    p += step.max(1) as usize;
                }
            }
        }
        return Some(out);
    }
    let placeholders = vec![&b""[..]; n];
    let keys = key_positions(spec, &placeholders)?;
    Some(keys.into_iter().map(|(p, _)| p).collect())
}

/// The bytes of an argument that is a plain string literal.
fn literal<'a>(arg: &[Tok<'a>]) -> Option<&'a [u8]> {
    match arg {
        [Tok::Str(Some(s))] => Some(s),
        _ => None,
    }
}

/// `KEYS[<expression>]`, and nothing after it: the `len` tokens from
/// `start`.
fn is_keys_index(tokens: &Tokens, start: usize, len: usize) -> bool {
    matches!(
        tokens.t[start..start + len],
        [Tok::Name(b"KEYS"), Tok::Op(b"["), ..]
    ) && tokens.matching(start + 1) == start + len - 1
}

#[cfg(test)]
mod tests {
    use super::{is_keyed, look, tokenize};

    fn keyed(s: &str) -> bool {
        is_keyed(s.as_bytes())
    }

    #[test]
    fn the_idioms_are_keyed() {
        assert!(keyed("local v=tonumber(redis.call('get',KEYS[1]) or '0') if v>0 then return redis.call('decr',KEYS[1]) end return -1"));
        assert!(keyed("if redis.call('hget',KEYS[1],ARGV[1])==ARGV[2] then return redis.call('hdel',KEYS[1],ARGV[1]) end return 0"));
        assert!(keyed(
            "local t=redis.call('time') local now=t[1]*1000+math.floor(t[2]/1000) \
             redis.call('zremrangebyscore',KEYS[1],'-inf',now) \
             if redis.call('zscore',KEYS[1],ARGV[3]) or redis.call('zcard',KEYS[1])<tonumber(ARGV[1]) then \
             redis.call('zadd',KEYS[1],now+ARGV[2],ARGV[3]) \
             local last=redis.call('zrange',KEYS[1],-1,-1,'WITHSCORES') \
             redis.call('pexpireat',KEYS[1],last[2]) return 1 end return 0"
        ));
        assert!(keyed(
            "redis.call('set',KEYS[1],new,'PX',math.ceil((new-now)/1000))"
        ));
        assert!(keyed(
            "return redis.call('mset', KEYS[1], ARGV[1], KEYS[2], ARGV[2])"
        ));
        assert!(keyed("return redis.call(\"DEL\", KEYS[1], KEYS[2])"));
        assert!(keyed(
            "return redis.call('lmove', KEYS[1], KEYS[2], 'left', 'right')"
        ));
        assert!(keyed("return redis.call('set', KEYS[1], unpack(ARGV))"));
        assert!(keyed("return {KEYS[1], KEYS[2]}"));
        assert!(keyed("local a, b = KEYS[1], KEYS[2] return a"));
        assert!(keyed("return redis.call('ping')"));
        assert!(keyed(
            "-- comment with while\nreturn redis.call('get', KEYS[1]) --[[ for ]]"
        ));
        assert!(keyed("return redis.call('object', 'encoding', KEYS[1])"));
        assert!(keyed("return 1"));
        assert!(keyed("return redis.call('nosuchcommand', ARGV[1])"));
        assert!(keyed("redis.setresp(3) return redis.call('get', KEYS[1])"));
        assert!(keyed("return redis.call('get', KEYS[#KEYS])"));
    }

    #[test]
    fn undeclared_or_unbounded_scripts_are_not() {
        // A key that is not KEYS[...].
        assert!(!keyed("return redis.call('get', ARGV[1])"));
        assert!(!keyed("return redis.call('get', 'x')"));
        assert!(!keyed("return redis.call('get', KEYS[1] .. ':x')"));
        assert!(!keyed(
            "return redis.call('mset', KEYS[1], ARGV[1], ARGV[2], ARGV[3])"
        ));
        // A command name that is not a literal, or keys from an expansion.
        assert!(!keyed("return redis.call(ARGV[1], KEYS[1])"));
        assert!(!keyed("return redis.call(unpack(KEYS))"));
        assert!(!keyed("return redis.call('del', unpack(KEYS))"));
        assert!(!keyed("return redis.call('mget', KEYS[1], f(x))"));
        assert!(!keyed("return redis.call('set', unpack(ARGV))"));
        // Commands that need more than their keys' shards.
        assert!(!keyed("return redis.call('keys', '*')"));
        assert!(!keyed("return redis.call('flushall')"));
        assert!(!keyed(
            "return redis.call('zunionstore', KEYS[1], 1, KEYS[2])"
        ));
        assert!(!keyed("return redis.call('sort', KEYS[1])"));
        assert!(!keyed("return redis.call('object', ARGV[1], KEYS[1])"));
        // redis and KEYS used other than directly.
        assert!(!keyed("local c = redis.call return c('get', KEYS[1])"));
        assert!(!keyed("return pcall(redis.call, 'get', KEYS[1])"));
        assert!(!keyed("return redis['call']('get', KEYS[1])"));
        // A pattern function, named or reached otherwise: its one C call
        // backtracks unbounded.
        assert!(!keyed("return string.find(KEYS[1], ARGV[1])"));
        assert!(!keyed("return KEYS[1]:gsub('a', 'b')"));
        assert!(!keyed("local m = string.match return m(ARGV[1], '.-.-b')"));
        assert!(!keyed("return string['gmatch'](ARGV[1], 'a')"));
        assert!(!keyed(
            "local k = 'fi' .. 'nd' return string[k](ARGV[1], 'a')"
        ));
        assert!(!keyed("return KEYS[1][ARGV[1]](KEYS[1], '.-b')"));
        assert!(!keyed("return redis.call('get', KEYS[KEYS[1]])"));
        assert!(!keyed(
            "local f, t = pairs(string) local k, v = f(t, 'char') return v(ARGV[1], '.-b')"
        ));
        assert!(!keyed(
            "local k, f = next(string, 'char') return f(ARGV[1], '.-b')"
        ));
        assert!(!keyed("KEYS[1] = 'x' return redis.call('get', KEYS[1])"));
        assert!(!keyed(
            "KEYS[1], y = 'x', 1 return redis.call('get', KEYS[1])"
        ));
        assert!(!keyed("table.insert(KEYS, 'x')"));
        assert!(!keyed(
            "local KEYS = {'x'} return redis.call('get', KEYS[1])"
        ));
        assert!(!keyed("local r = redis return r.call('get', 'x')"));
        assert!(!keyed("return _G.redis.call('get', 'x')"));
        assert!(!keyed("setfenv(1, {})"));
        assert!(!keyed("return loadstring('return 1')()"));
        // Loops and functions.
        assert!(!keyed("while true do end"));
        assert!(!keyed("for i=1,10 do redis.call('incr', KEYS[1]) end"));
        assert!(!keyed("repeat until false"));
        assert!(!keyed("local f = function() return 1 end return f()"));
        // Nested calls are looked at too.
        assert!(!keyed(
            "return redis.call('set', KEYS[1], redis.call('get', 'other'))"
        ));
        // What the tokenizer cannot read.
        assert!(!keyed("return 'unterminated"));
        assert!(!keyed("return 1 @ 2"));
    }

    #[test]
    fn any_input_gets_an_answer() {
        // Fragments of scripts, glued at random, and random bytes: the
        // look never panics (the answer itself is checked above).
        const PARTS: &[&str] = &[
            "redis", ".", "call", "pcall", "(", ")", "[", "]", "{", "}", ",", "=", "==", "KEYS",
            "ARGV", "'get'", "'mset'", "'del'", "\"set\"", "1", "-1", "#", "...", "unpack",
            "return", "local", "x", "[[", "]]", "--", "\n", "'", "\\", "..", ":",
        ];
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..20_000 {
            let n = rng.usize(0..24);
            let text: String = (0..n)
                .map(|_| PARTS[rng.usize(..PARTS.len())])
                .collect::<Vec<_>>()
                .join(if rng.bool() { " " } else { "" });
            let _ = is_keyed(text.as_bytes());
            let bytes: Vec<u8> = (0..rng.usize(0..40)).map(|_| rng.u8(..)).collect();
            let _ = is_keyed(&bytes);
        }
    }

    #[test]
    fn strings_and_comments_hide_nothing() {
        assert!(keyed(
            "return redis.call('get', KEYS[1]) -- redis.call('get', 'x')"
        ));
        assert!(keyed(
            "local s = [[redis.call('get', 'x') while]] return redis.call('get', KEYS[1])"
        ));
        assert!(keyed("local s = 'while \\' for' return s"));
        assert!(!keyed(
            "--[==[ a ]] still a comment ]==] return redis.call('get', 'x')"
        ));
    }

    /// The analysis looks at each token a bounded number of times, however
    /// deeply calls and KEYS nest: 100,000 levels once took 28 s of CPU,
    /// the argument lists and KEYS brackets being rescanned at each level.
    #[test]
    fn the_analysis_is_linear_in_nesting() {
        let depth = 100_000;
        let keys = format!(
            "return KEYS[{}1{}",
            "#KEYS[".repeat(depth - 1),
            "]".repeat(depth)
        );
        let calls = format!(
            "return {}KEYS[1]{}",
            "redis.call('get',KEYS[1],".repeat(depth),
            ")".repeat(depth)
        );
        for code in [keys, calls] {
            let n = tokenize(code.as_bytes()).unwrap().len();
            let (keyed, steps) = look(code.as_bytes());
            assert!(keyed, "{}", &code[..40]);
            assert!(steps <= 2 * n, "{steps} steps for {n} tokens");
        }
    }
}
