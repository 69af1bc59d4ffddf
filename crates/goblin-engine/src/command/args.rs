//! `Args`: a cursor over a command's arguments, for parsing its options
//! (mini-redis's `Parse`, Dragonfly's `CmdArgParser`).
//!
//! A parser walks the arguments once: `flag("NX")` takes a keyword,
//! `flag_of(&["MIN", "MAX"])` one keyword of several, `option("COUNT")` a
//! keyword and the value after it, `option_n("LIMIT", 2)` a keyword and
//! the values after it, `option_of(&["EX", "PX"])` one keyword of several
//! and its value, `option_among("AGGREGATE", &["SUM", "MIN", "MAX"])` a
//! keyword whose value is one of several keywords; whatever no rule takes
//! is Redis's syntax error (`finish`, or the parser's own
//! `Err(Error::SYNTAX)`). Keywords match case-insensitively, as Redis's
//! strcasecmp (which stops at a NUL byte: `Args::c_strings`). A keyword
//! whose values are missing does not match, so it falls through to the
//! syntax error, as in Redis's `j+1 < c->argc` checks.
//!
//! In tests, the cursor records every keyword a parser asks for
//! (`record_keywords`), so that a test can hold the parsers to the
//! synopses of the command table (COMMAND DOCS): both must name the same
//! options.

use crate::Error;

/// The cursor: `'a` is the lifetime of the arguments' bytes, which the
/// values it hands out keep.
#[derive(Clone, Copy, Debug)]
pub struct Args<'s, 'a> {
    args: &'s [&'a [u8]],
    pos: usize,
    /// Keywords compare up to an argument's first NUL byte.
    c_strings: bool,
}

impl<'s, 'a> Args<'s, 'a> {
    pub fn new(args: &'s [&'a [u8]]) -> Args<'s, 'a> {
        Args {
            args,
            pos: 0,
            c_strings: false,
        }
    }

    /// A cursor whose keywords compare as C strings, up to an argument's
    /// first NUL byte, as strcasecmp sees Redis's arguments ("BIT\0x" is
    /// BIT): the bitmap commands compare so.
    pub fn c_strings(args: &'s [&'a [u8]]) -> Args<'s, 'a> {
        Args {
            c_strings: true,
            ..Args::new(args)
        }
    }

    /// Whether the argument `a` is the keyword `word`.
    #[inline]
    fn is(&self, a: &[u8], word: &str) -> bool {
        let a = match self.c_strings {
            true => a.split(|&b| b == 0).next().unwrap_or(a),
            false => a,
        };
        a.eq_ignore_ascii_case(word.as_bytes())
    }

    /// Whether every argument was taken.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.args.len()
    }

    /// The arguments not taken yet.
    #[inline]
    pub fn rest(&self) -> &'s [&'a [u8]] {
        &self.args[self.pos.min(self.args.len())..]
    }

    /// How many arguments were taken.
    #[inline]
    pub fn taken(&self) -> usize {
        self.pos
    }

    /// The next argument, not taken.
    #[inline]
    pub fn peek(&self) -> Option<&'a [u8]> {
        self.args.get(self.pos).copied()
    }

    /// Takes the next argument, whatever it is; a syntax error when there
    /// is none.
    #[inline]
    pub fn next_arg(&mut self) -> Result<&'a [u8], Error> {
        let a = self.peek().ok_or(Error::SYNTAX)?;
        self.pos += 1;
        Ok(a)
    }

    /// Takes the next argument when it is the keyword `word`.
    #[inline]
    pub fn flag(&mut self, word: &'static str) -> bool {
        self.flag_of(&[word]).is_some()
    }

    /// `flag` for one keyword of `words` (`M|KM|FT|MI`): its index in
    /// `words`.
    #[inline]
    pub fn flag_of(&mut self, words: &[&'static str]) -> Option<usize> {
        words.iter().for_each(|w| record(w));
        let a = self.peek()?;
        let i = words.iter().position(|w| self.is(a, w))?;
        self.pos += 1;
        Some(i)
    }

    /// Takes the keyword `word` and the value after it, when the next
    /// argument is that keyword and a value follows.
    #[inline]
    pub fn option(&mut self, word: &'static str) -> Option<&'a [u8]> {
        self.option_n(word, 1).map(|values| values[0])
    }

    /// Takes the keyword `word` and the `n` values after it (`LIMIT offset
    /// count`), when the next argument is that keyword and `n` values
    /// follow.
    #[inline]
    pub fn option_n(&mut self, word: &'static str, n: usize) -> Option<&'s [&'a [u8]]> {
        record(word);
        let values = self.args.get(self.pos + 1..self.pos + 1 + n)?;
        if !self.is(self.peek()?, word) {
            return None;
        }
        self.pos += 1 + n;
        Some(values)
    }

    /// `option` for one keyword of `words`: its index in `words`, and its
    /// value.
    #[inline]
    pub fn option_of(&mut self, words: &[&'static str]) -> Option<(usize, &'a [u8])> {
        words.iter().for_each(|w| record(w));
        let (a, &value) = (self.peek()?, self.args.get(self.pos + 1)?);
        let i = words.iter().position(|w| self.is(a, w))?;
        self.pos += 2;
        Some((i, value))
    }

    /// `option` whose value is one keyword of `choices` (`AGGREGATE
    /// SUM|MIN|MAX`): Some with the choice's index in `choices`, or Some
    /// with None when the value is none of them (the caller's error). The
    /// choices are recorded whether or not the keyword is given: the
    /// synopsis names them all.
    #[inline]
    pub fn option_among(
        &mut self,
        word: &'static str,
        choices: &[&'static str],
    ) -> Option<Option<usize>> {
        choices.iter().for_each(|w| record(w));
        let value = self.option(word)?;
        Some(choices.iter().position(|w| self.is(value, w)))
    }

    /// Redis's syntax error when arguments are left.
    #[inline]
    pub fn finish(&self) -> Result<(), Error> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(Error::SYNTAX)
        }
    }
}

#[cfg(not(test))]
#[inline(always)]
fn record(_: &'static str) {}

#[cfg(test)]
thread_local! {
    static KEYWORDS: std::cell::RefCell<Option<std::collections::BTreeSet<&'static str>>> =
        const { std::cell::RefCell::new(None) };
}

#[cfg(test)]
fn record(word: &'static str) {
    KEYWORDS.with(|k| {
        if let Some(set) = k.borrow_mut().as_mut() {
            set.insert(word);
        }
    });
}

/// Runs `f` and returns, upper-cased, every keyword the cursors it used
/// asked for on this thread.
#[cfg(test)]
pub fn record_keywords(f: impl FnOnce()) -> std::collections::BTreeSet<String> {
    KEYWORDS.with(|k| *k.borrow_mut() = Some(Default::default()));
    f();
    KEYWORDS
        .with(|k| k.borrow_mut().take())
        .unwrap_or_default()
        .into_iter()
        .map(|w| w.to_ascii_uppercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_match_without_case_and_options_need_their_value() {
        let argv: Vec<&[u8]> = vec![b"nx", b"Count", b"5", b"px"];
        let mut a = Args::new(&argv);
        assert!(!a.flag("XX"));
        assert!(a.flag("NX"));
        assert_eq!(a.option("COUNT"), Some(&b"5"[..]));
        // PX without its value does not match.
        assert_eq!(a.option_of(&["EX", "PX"]), None);
        assert_eq!(a.finish(), Err(Error::SYNTAX));
        assert_eq!(a.next_arg(), Ok(&b"px"[..]));
        assert_eq!(a.finish(), Ok(()));
        assert_eq!(a.next_arg(), Err(Error::SYNTAX));
    }

    #[test]
    fn keywords_of_several_values_and_choices() {
        let argv: Vec<&[u8]> = vec![b"km", b"LIMIT", b"0", b"5", b"aggregate", b"Max"];
        let mut a = Args::new(&argv);
        assert_eq!(a.flag_of(&["M", "KM"]), Some(1));
        assert_eq!(a.option_n("LIMIT", 5), None);
        assert_eq!(a.option_n("LIMIT", 2), Some(&[&b"0"[..], &b"5"[..]][..]));
        assert_eq!(a.option_among("AGGREGATE", &["SUM", "MAX"]), Some(Some(1)));
        assert!(a.is_empty());
        let argv: Vec<&[u8]> = vec![b"overflow", b"nope", b"overflow"];
        let mut a = Args::new(&argv);
        assert_eq!(a.option_among("OVERFLOW", &["WRAP", "SAT"]), Some(None));
        // Without its value the keyword does not match.
        assert_eq!(a.option_among("OVERFLOW", &["WRAP", "SAT"]), None);
    }

    #[test]
    fn c_string_keywords_stop_at_a_nul() {
        let argv: Vec<&[u8]> = vec![b"bit\0x", b"Get\0", b"i8"];
        assert_eq!(Args::new(&argv).flag_of(&["BYTE", "BIT"]), None);
        let mut a = Args::c_strings(&argv);
        assert_eq!(a.flag_of(&["BYTE", "BIT"]), Some(1));
        assert_eq!(a.option("GET"), Some(&b"i8"[..]));
    }

    #[test]
    fn the_keywords_a_parser_asks_for_are_recorded() {
        let argv: Vec<&[u8]> = vec![b"x"];
        let words = record_keywords(|| {
            let mut a = Args::new(&argv);
            a.flag("nx");
            a.option_of(&["EX", "PX"]);
            a.option_among("AGGREGATE", &["SUM", "MIN"]);
        });
        assert_eq!(
            words.into_iter().collect::<Vec<_>>(),
            ["AGGREGATE", "EX", "MIN", "NX", "PX", "SUM"]
        );
    }
}
