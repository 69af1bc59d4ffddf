//! The argument synopsis language of `CommandSpec::syntax`, and its
//! translation into COMMAND DOCS argument trees.
//!
//! A synopsis reads like the command's documentation:
//!
//! ```text
//! key:key value:string [NX|XX] [GET] [EX seconds:integer|PX milliseconds:integer|KEEPTTL]
//! ```
//!
//! - `name:type` is an argument (types: key, string, integer, double,
//!   pattern, unix-time);
//! - an upper-case word is a literal token; a token directly followed by an
//!   argument is that argument's token (`EX seconds:integer`);
//! - `[...]` is optional, `(...)` groups, `|` separates alternatives, and a
//!   trailing `...` repeats the item before it;
//! - `name:block(...)` is a block of that name even when it holds a single
//!   argument (PSUBSCRIBE's `pattern:block(pattern:pattern)...`), and
//!   `name:oneof(a|b)` a choice of that name; without a name a block is
//!   named after its first argument and a choice after its alternatives
//!   (`nx-xx`);
//! - `{...}` after an item says more about it, as Redis's command JSON
//!   files do: `{since:6.2.0}`, `{deprecated_since:7.0.0}`,
//!   `{name:change}` (a token's name, when it is not the token in lower
//!   case), `{token:}` (the token, when a word cannot say it: MIGRATE's
//!   empty one), `{key_spec_index:2}` (when it is not the count of key
//!   arguments before it), `{multiple_token}` (the token comes again
//!   with each repetition: `GET pattern [GET pattern ...]`).

#[derive(Debug, Clone, PartialEq)]
pub struct ArgDoc {
    pub name: String,
    /// key, string, integer, double, pattern, unix-time, pure-token, oneof, block
    pub kind: &'static str,
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
    pub key_spec_index: Option<usize>,
    /// The token is repeated with each repetition.
    pub multiple_token: bool,
    pub since: Option<String>,
    pub deprecated_since: Option<String>,
    pub children: Vec<ArgDoc>,
}

impl ArgDoc {
    fn new(name: String, kind: &'static str) -> ArgDoc {
        ArgDoc {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
            key_spec_index: None,
            multiple_token: false,
            since: None,
            deprecated_since: None,
            children: vec![],
        }
    }

    /// Applies a `{...}` note.
    fn note(&mut self, note: &str) {
        match note.split_once(':') {
            Some(("since", v)) => self.since = Some(v.to_string()),
            Some(("deprecated_since", v)) => self.deprecated_since = Some(v.to_string()),
            Some(("name", v)) => self.name = v.to_string(),
            Some(("token", v)) => self.token = Some(v.to_string()),
            Some(("key_spec_index", v)) => self.key_spec_index = v.parse().ok(),
            _ if note == "multiple_token" => self.multiple_token = true,
            _ => {}
        }
    }
}

#[derive(Debug)]
enum Tok {
    Open(char),
    Close,
    Bar,
    Ellipsis,
    Word(String),
    Note(String),
}

fn lex(s: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            ' ' | '\t' | '\n' => {
                chars.next();
            }
            '[' | '(' => {
                out.push(Tok::Open(c));
                chars.next();
            }
            ']' | ')' => {
                out.push(Tok::Close);
                chars.next();
            }
            '|' => {
                out.push(Tok::Bar);
                chars.next();
            }
            '{' => {
                chars.next();
                let note: String = chars.by_ref().take_while(|c| *c != '}').collect();
                out.push(Tok::Note(note));
            }
            '.' => {
                while chars.peek() == Some(&'.') {
                    chars.next();
                }
                out.push(Tok::Ellipsis);
            }
            _ => {
                let mut w = String::new();
                while let Some(&c) = chars.peek() {
                    if " \t\n[]()|{}".contains(c) || (c == '.' && w.ends_with('.')) {
                        break;
                    }
                    if c == '.' {
                        // "..." after a word without a space.
                        let rest: String = chars.clone().take(3).collect();
                        if rest == "..." {
                            break;
                        }
                    }
                    w.push(c);
                    chars.next();
                }
                out.push(Tok::Word(w));
            }
        }
    }
    out
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    key_index: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    /// alternatives := seq ('|' seq)*
    fn alternatives(&mut self) -> Vec<Vec<ArgDoc>> {
        let mut alts = vec![self.seq()];
        while matches!(self.peek(), Some(Tok::Bar)) {
            self.pos += 1;
            alts.push(self.seq());
        }
        alts
    }

    fn seq(&mut self) -> Vec<ArgDoc> {
        let mut items: Vec<ArgDoc> = Vec::new();
        while let Some(tok) = self.peek() {
            let mut item = match tok {
                Tok::Bar | Tok::Close => break,
                Tok::Ellipsis => {
                    self.pos += 1;
                    if let Some(last) = items.last_mut() {
                        last.multiple = true;
                    }
                    continue;
                }
                Tok::Note(note) => {
                    if let Some(last) = items.last_mut() {
                        last.note(note);
                    }
                    self.pos += 1;
                    continue;
                }
                Tok::Open(c) => {
                    let optional = *c == '[';
                    self.pos += 1;
                    let alts = self.alternatives();
                    if matches!(self.peek(), Some(Tok::Close)) {
                        self.pos += 1;
                    }
                    let mut g = group(alts);
                    g.optional = optional || g.optional;
                    g
                }
                Tok::Word(w) => {
                    let w = w.clone();
                    self.pos += 1;
                    // The type follows the last colon (CLIENT KILL's
                    // `ip:port:string`).
                    let named = match w.rsplit_once(':') {
                        Some((name, "block")) => Some((name, "block")),
                        Some((name, "oneof")) => Some((name, "oneof")),
                        _ => None,
                    };
                    if let (Some((name, kind)), Some(Tok::Open('('))) = (named, self.peek()) {
                        self.pos += 1;
                        let mut alts = self.alternatives();
                        if matches!(self.peek(), Some(Tok::Close)) {
                            self.pos += 1;
                        }
                        let children = if kind == "oneof" {
                            alts.into_iter().map(single).collect()
                        } else if alts.len() == 1 {
                            alts.pop().unwrap()
                        } else {
                            vec![group(alts)]
                        };
                        // A token right before it is its token
                        // (FAILOVER's `TO target:block(...)`).
                        let token = match items.last() {
                            Some(prev)
                                if prev.kind == "pure-token"
                                    && !prev.optional
                                    && !prev.multiple =>
                            {
                                items.pop().unwrap().token
                            }
                            _ => None,
                        };
                        let mut block = ArgDoc::new(name.to_string(), kind);
                        block.token = token;
                        block.children = children;
                        items.push(block);
                        continue;
                    }
                    if let Some((name, kind)) = w.rsplit_once(':') {
                        let kind = match kind {
                            "key" => "key",
                            "integer" => "integer",
                            "double" => "double",
                            "pattern" => "pattern",
                            "unix-time" => "unix-time",
                            _ => "string",
                        };
                        let key_spec_index = if kind == "key" {
                            self.key_index += 1;
                            Some(self.key_index - 1)
                        } else {
                            None
                        };
                        let mut arg = ArgDoc::new(name.to_string(), kind);
                        arg.key_spec_index = key_spec_index;
                        arg
                    } else {
                        let mut token = ArgDoc::new(w.to_ascii_lowercase(), "pure-token");
                        token.token = Some(w);
                        token
                    }
                }
            };
            // A token directly followed by a plain argument becomes that
            // argument's token ("EX seconds").
            if let Some(prev) = items.last() {
                if prev.kind == "pure-token"
                    && !prev.optional
                    && !prev.multiple
                    && item.token.is_none()
                    && item.children.is_empty()
                    && item.kind != "pure-token"
                {
                    let prev = items.pop().unwrap();
                    item.token = prev.token;
                }
            }
            items.push(item);
        }
        items
    }
}

/// An unnamed block of `seq`, named after its first argument.
fn block(seq: Vec<ArgDoc>) -> ArgDoc {
    let name = seq.first().map(|a| a.name.clone()).unwrap_or_default();
    let mut b = ArgDoc::new(name, "block");
    b.children = seq;
    b
}

/// One alternative of a choice: its argument, or a block of several.
fn single(mut seq: Vec<ArgDoc>) -> ArgDoc {
    if seq.len() == 1 {
        seq.pop().unwrap()
    } else {
        block(seq)
    }
}

fn group(mut alts: Vec<Vec<ArgDoc>>) -> ArgDoc {
    if alts.len() == 1 {
        let mut seq = alts.pop().unwrap();
        if seq.len() == 1 {
            return seq.pop().unwrap();
        }
        return block(seq);
    }
    let children: Vec<ArgDoc> = alts.into_iter().map(single).collect();
    let name = children
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join("-");
    let mut choice = ArgDoc::new(name, "oneof");
    choice.children = children;
    choice
}

/// Parses a synopsis into COMMAND DOCS arguments.
pub fn parse(syntax: &str) -> Vec<ArgDoc> {
    let mut p = Parser {
        toks: lex(syntax),
        pos: 0,
        key_index: 0,
    };
    let mut out = Vec::new();
    while p.pos < p.toks.len() {
        let alts = p.alternatives();
        if alts.len() == 1 {
            out.extend(alts.into_iter().next().unwrap());
        } else {
            out.push(group(alts));
        }
        if p.pos < p.toks.len() {
            // Stray closing bracket: skip it.
            p.pos += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_synopsis() {
        let args = parse("key:key value:string [NX|XX] [GET] [EX seconds:integer|PX milliseconds:integer|KEEPTTL]");
        assert_eq!(args.len(), 5);
        assert_eq!(args[0].kind, "key");
        assert_eq!(args[0].key_spec_index, Some(0));
        assert_eq!(args[2].kind, "oneof");
        assert!(args[2].optional);
        assert_eq!(args[3].kind, "pure-token");
        assert_eq!(args[4].children[0].token.as_deref(), Some("EX"));
        assert_eq!(args[4].children[0].name, "seconds");
        assert_eq!(args[4].children[2].kind, "pure-token");
    }

    #[test]
    fn named_groups_and_notes() {
        let args = parse(
            "key:key [condition:oneof(NX|XX)]{since:2.6.12} [CH]{name:change} \
             [GET pattern:pattern...]{multiple_token}{key_spec_index:1} \
             ip:port:string EMPTY{token:}{name:empty_string}",
        );
        assert_eq!(args.len(), 6);
        assert_eq!(args[1].name, "condition");
        assert_eq!(args[1].kind, "oneof");
        assert!(args[1].optional);
        assert_eq!(args[1].since.as_deref(), Some("2.6.12"));
        assert_eq!(args[1].children.len(), 2);
        assert_eq!(args[2].name, "change");
        assert_eq!(args[2].token.as_deref(), Some("CH"));
        assert_eq!(args[3].token.as_deref(), Some("GET"));
        assert!(args[3].multiple && args[3].multiple_token && args[3].optional);
        assert_eq!(args[3].key_spec_index, Some(1));
        assert_eq!(args[4].name, "ip:port");
        assert_eq!(args[4].kind, "string");
        assert_eq!(args[5].token.as_deref(), Some(""));
        assert_eq!(args[5].name, "empty_string");
        // A token before a named choice is its token.
        let args = parse("[OVERFLOW wrap_sat_fail:oneof(WRAP|SAT|FAIL)]");
        assert_eq!(args[0].kind, "oneof");
        assert_eq!(args[0].token.as_deref(), Some("OVERFLOW"));
        assert_eq!(args[0].children.len(), 3);
    }

    #[test]
    fn repeated_blocks() {
        let args = parse("(key:key value:string)...");
        assert_eq!(args.len(), 1);
        assert_eq!(args[0].kind, "block");
        assert!(args[0].multiple);
        let args = parse("key:key...");
        assert!(args[0].multiple);
        let args = parse("pattern:block(pattern:pattern)...");
        assert_eq!(args.len(), 1);
        assert_eq!(args[0].kind, "block");
        assert_eq!(args[0].name, "pattern");
        assert!(args[0].multiple);
        assert_eq!(args[0].children.len(), 1);
        assert_eq!(args[0].children[0].kind, "pattern");
    }
}
