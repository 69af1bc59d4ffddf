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
//!   argument (PSUBSCRIBE's `pattern:block(pattern:pattern)...`).

#[derive(Debug, Clone, PartialEq)]
pub struct ArgDoc {
    pub name: String,
    /// key, string, integer, double, pattern, unix-time, pure-token, oneof, block
    pub kind: &'static str,
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
    pub key_spec_index: Option<usize>,
    pub children: Vec<ArgDoc>,
}

#[derive(Debug)]
enum Tok {
    Open(char),
    Close,
    Bar,
    Ellipsis,
    Word(String),
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
            '.' => {
                while chars.peek() == Some(&'.') {
                    chars.next();
                }
                out.push(Tok::Ellipsis);
            }
            _ => {
                let mut w = String::new();
                while let Some(&c) = chars.peek() {
                    if " \t\n[]()|".contains(c) || (c == '.' && w.ends_with('.')) {
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
                    if let (Some(name), Some(Tok::Open('('))) =
                        (w.strip_suffix(":block"), self.peek())
                    {
                        self.pos += 1;
                        let mut alts = self.alternatives();
                        if matches!(self.peek(), Some(Tok::Close)) {
                            self.pos += 1;
                        }
                        let children = if alts.len() == 1 {
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
                        items.push(ArgDoc {
                            name: name.to_string(),
                            kind: "block",
                            token,
                            optional: false,
                            multiple: false,
                            key_spec_index: None,
                            children,
                        });
                        continue;
                    }
                    if let Some((name, kind)) = w.split_once(':') {
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
                        ArgDoc {
                            name: name.to_string(),
                            kind,
                            token: None,
                            optional: false,
                            multiple: false,
                            key_spec_index,
                            children: vec![],
                        }
                    } else {
                        ArgDoc {
                            name: w.to_ascii_lowercase(),
                            kind: "pure-token",
                            token: Some(w),
                            optional: false,
                            multiple: false,
                            key_spec_index: None,
                            children: vec![],
                        }
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

fn group(mut alts: Vec<Vec<ArgDoc>>) -> ArgDoc {
    if alts.len() == 1 {
        let mut seq = alts.pop().unwrap();
        if seq.len() == 1 {
            return seq.pop().unwrap();
        }
        let name = seq.first().map(|a| a.name.clone()).unwrap_or_default();
        return ArgDoc {
            name,
            kind: "block",
            token: None,
            optional: false,
            multiple: false,
            key_spec_index: None,
            children: seq,
        };
    }
    let children: Vec<ArgDoc> = alts
        .into_iter()
        .map(|mut seq| {
            if seq.len() == 1 {
                seq.pop().unwrap()
            } else {
                let name = seq.first().map(|a| a.name.clone()).unwrap_or_default();
                ArgDoc {
                    name,
                    kind: "block",
                    token: None,
                    optional: false,
                    multiple: false,
                    key_spec_index: None,
                    children: seq,
                }
            }
        })
        .collect();
    let name = children
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join("-");
    ArgDoc {
        name,
        kind: "oneof",
        token: None,
        optional: false,
        multiple: false,
        key_spec_index: None,
        children,
    }
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
