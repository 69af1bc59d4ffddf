//! Glob-style matching with Redis's exact rules (`stringmatchlen` in
//! util.c): `*`, `?`, `[...]` with ranges and `^`, backslash escapes, an
//! optional case-insensitive mode, and the same protection against patterns
//! built to take exponential time (nesting limit and the early exit once a
//! `*` has failed to match the rest of the string anywhere).

/// True when `string` matches `pattern`.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    match_impl(pattern, string, nocase, &mut skip_longer, 0)
}

#[inline]
fn at(s: &[u8], i: usize) -> u8 {
    // The C code reads the terminating NUL past the end; model it as 0.
    s.get(i).copied().unwrap_or(0)
}

#[inline]
fn lower(c: u8) -> u8 {
    c.to_ascii_lowercase()
}

fn match_impl(pat: &[u8], s: &[u8], nocase: bool, skip_longer: &mut bool, nesting: u32) -> bool {
    if nesting > 1000 {
        return false;
    }
    let mut p = 0usize; // index into pat
    let mut plen = pat.len();
    let mut i = 0usize; // index into s
    let mut slen = s.len();

    while plen > 0 && slen > 0 {
        match pat[p] {
            b'*' => {
                while plen > 0 && at(pat, p + 1) == b'*' {
                    p += 1;
                    plen -= 1;
                }
                if plen == 1 {
                    return true;
                }
                while slen > 0 {
                    if match_impl(
                        &pat[p + 1..p + plen],
                        &s[i..i + slen],
                        nocase,
                        skip_longer,
                        nesting + 1,
                    ) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    i += 1;
                    slen -= 1;
                }
                *skip_longer = true;
                return false;
            }
            b'?' => {
                i += 1;
                slen -= 1;
            }
            b'[' => {
                p += 1;
                plen -= 1;
                let not = at(pat, p) == b'^';
                if not {
                    p += 1;
                    plen = plen.saturating_sub(1);
                }
                let mut matched = false;
                let c = s[i];
                loop {
                    if at(pat, p) == b'\\' && plen >= 2 {
                        p += 1;
                        plen -= 1;
                        if at(pat, p) == c {
                            matched = true;
                        }
                    } else if at(pat, p) == b']' && plen > 0 {
                        break;
                    } else if plen == 0 {
                        // Unterminated class: step back so the outer
                        // advance leaves the pattern exhausted.
                        p -= 1;
                        plen += 1;
                        break;
                    } else if plen >= 3 && at(pat, p + 1) == b'-' {
                        let (mut start, mut end) = (at(pat, p), at(pat, p + 2));
                        let mut cc = c;
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        if nocase {
                            start = lower(start);
                            end = lower(end);
                            cc = lower(cc);
                        }
                        p += 2;
                        plen -= 2;
                        if cc >= start && cc <= end {
                            matched = true;
                        }
                    } else if !nocase {
                        if at(pat, p) == c {
                            matched = true;
                        }
                    } else if lower(at(pat, p)) == lower(c) {
                        matched = true;
                    }
                    p += 1;
                    plen -= 1;
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                i += 1;
                slen -= 1;
            }
            _ => {
                if pat[p] == b'\\' && plen >= 2 {
                    p += 1;
                    plen -= 1;
                }
                let pc = at(pat, p);
                let sc = s[i];
                let equal = if nocase {
                    lower(pc) == lower(sc)
                } else {
                    pc == sc
                };
                if !equal {
                    return false;
                }
                i += 1;
                slen -= 1;
            }
        }
        p += 1;
        plen -= 1;
        if slen == 0 {
            while at(pat, p) == b'*' && plen > 0 {
                p += 1;
                plen -= 1;
            }
            break;
        }
    }
    plen == 0 && slen == 0
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn redis_glob_cases() {
        assert!(glob_match(b"*", b"anything", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h*llo", b"heeeello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[ae]llo", b"hillo", false));
        assert!(glob_match(b"h[^e]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        assert!(glob_match(b"h\\*llo", b"h*llo", false));
        assert!(!glob_match(b"h\\*llo", b"hello", false));
        assert!(glob_match(b"HELLO", b"hello", true));
        assert!(glob_match(b"foo*", b"foo", false));
        assert!(!glob_match(b"a", b"", false));
        assert!(glob_match(b"", b"", false));
        assert!(glob_match(b"*a*", b"xxaxx", false));
    }

    #[test]
    fn abusive_pattern_finishes() {
        let pattern = b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
        let s = [b'a'; 60];
        assert!(!glob_match(pattern, &s, false));
    }

    #[test]
    fn unterminated_class_does_not_panic() {
        for p in [&b"["[..], b"[a", b"[^", b"[\\", b"[a-", b"\\", b"*["] {
            for s in [&b""[..], b"a", b"ab", b"["] {
                let _ = glob_match(p, s, false);
                let _ = glob_match(p, s, true);
            }
        }
    }
}
