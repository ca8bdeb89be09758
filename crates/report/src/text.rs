//! Names from a trace as a person is shown them: every character that
//! would act instead of being seen (a terminal escape, a carriage return,
//! a bidirectional override) written as a visible escape. A trace's names
//! are whatever the profiled program called its kernels, operators,
//! threads and steps, so they can hold anything; the text tables of the
//! command line and the HTML report show them through [`shown`], while
//! `--json` and the written timelines keep the exact text (JSON-escaped).

use std::borrow::Cow;
use std::fmt::Write;

/// True for a character that must not be shown as it is: the control
/// characters (C0, DEL and C1: escapes, bells, carriage returns, newlines,
/// tabs, NUL), the line and paragraph separators (U+2028, U+2029), and the
/// bidirectional embeddings, overrides and isolates (U+202A to U+202E,
/// U+2066 to U+2069), which reorder the text after them on screen
/// ("Trojan Source", CVE-2021-42574).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with every [`is_hidden`] character escaped as Rust writes it: `\n`,
/// `\r` and `\t`, else `\u{1b}` (the code point in hex). A backslash is
/// left as it is, so a name that spells an escape reads like one: the
/// `--json` output has the exact text. `s` itself when nothing needs it
/// (every name of the corpus).
pub fn shown(s: &str) -> Cow<'_, str> {
    escaped(s, is_hidden)
}

/// [`shown`] but for the newlines, kept as they are: for text made of
/// lines (a report, an error message) whose names were shown already.
pub fn shown_but_newlines(s: &str) -> Cow<'_, str> {
    escaped(s, |c| c != '\n' && is_hidden(c))
}

/// `s` with every character `hide` picks escaped ([`push_escape`]).
fn escaped(s: &str, hide: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&hide) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if hide(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Appends the escape of `c` (a [`is_hidden`] character) to `out`.
pub fn push_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_acts_on_a_terminal_is_escaped_and_the_rest_kept() {
        assert_eq!(
            shown("\u{1b}[31mred\u{1b}]0;title\u{7}\r\n\t\0\u{7f}\u{85}"),
            "\\u{1b}[31mred\\u{1b}]0;title\\u{7}\\r\\n\\t\\u{0}\\u{7f}\\u{85}"
        );
        assert_eq!(
            shown("a\u{202e}b\u{2066}c\u{2028}d\u{2029}"),
            "a\\u{202e}b\\u{2066}c\\u{2028}d\\u{2029}"
        );
        // Printable text of any script, HTML, quotes and backslashes are
        // names, not actions: borrowed, unchanged.
        for kept in [
            "void at::native::k<float, 4>(a&b) \"x\" 'y'",
            "🔥 كيرنل עברית e\u{301}",
            "C:\\path\\u{1b}",
            "",
            "   ",
        ] {
            assert!(matches!(shown(kept), Cow::Borrowed(s) if s == kept));
        }
    }
}
