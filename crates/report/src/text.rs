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

/// How [`shown`] shows an empty name (an event named `""`), where a
/// table's cell would be blank: the quotes JSON writes it with.
pub const EMPTY: &str = "\"\"";

/// `s` with every [`is_hidden`] character escaped as Rust writes it: `\n`,
/// `\r` and `\t`, else `\u{1b}` (the code point in hex), and every
/// backslash doubled (`\\`), so the escapes cannot be told from a name
/// that spells one: a name holding a newline shows `a\nb`, a name holding
/// a backslash and an `n` shows `a\\nb`. A name that is empty or only
/// spaces shows in double quotes (`""`, `"  "`: [`EMPTY`]), not as a
/// blank. `s` itself when nothing needs it (every name of the corpus).
/// The `--json` outputs have the exact text.
pub fn shown(s: &str) -> Cow<'_, str> {
    if s.chars().all(|c| c == ' ') {
        return Cow::Owned(format!("\"{s}\""));
    }
    escaped(s, |c| c == '\\' || is_hidden(c))
}

/// A message (an error, a warning, a progress line) on one line: every
/// [`is_hidden`] character escaped as [`shown`] escapes it, but the
/// backslashes kept. A message quotes what the user typed or a file holds
/// the way Rust writes a string (`"Foo\"x"`, `"c\n"`), so doubling its
/// backslashes would name another string; the price is that a path
/// spelling `\n` reads as one holding a newline in a message (the tables
/// and `--json` tell them apart).
pub fn one_line(s: &str) -> Cow<'_, str> {
    escaped(s, is_hidden)
}

/// [`shown`] but for the newlines, kept as they are, and the backslashes:
/// for text made of lines (a report) whose names were shown already, on
/// its way to a terminal.
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

/// Appends `c` to `out` as [`shown`] shows it: escaped when it is
/// [`is_hidden`] or a backslash, else as it is.
pub fn push_shown(out: &mut String, c: char) {
    if c == '\\' || is_hidden(c) {
        push_escape(out, c);
    } else {
        out.push(c);
    }
}

/// Appends the escape of `c` (a [`is_hidden`] character, or a backslash:
/// `\\`) to `out`.
pub fn push_escape(out: &mut String, c: char) {
    match c {
        '\\' => out.push_str("\\\\"),
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
        // Printable text of any script, HTML and quotes are names, not
        // actions: borrowed, unchanged.
        for kept in [
            "void at::native::k<float, 4>(a&b) \"x\" 'y'",
            "🔥 كيرنل עברית e\u{301}",
            " x ",
        ] {
            assert!(matches!(shown(kept), Cow::Borrowed(s) if s == kept));
        }
    }

    #[test]
    fn a_backslash_is_doubled_so_no_name_reads_as_another() {
        // A newline, and a backslash then an `n`: two names, two texts.
        assert_eq!(shown("a\nb"), "a\\nb");
        assert_eq!(shown("a\\nb"), "a\\\\nb");
        assert_ne!(shown("a\nb"), shown("a\\nb"));
        assert_eq!(shown("C:\\path\\u{1b}"), "C:\\\\path\\\\u{1b}");
        assert_eq!(shown("\\\u{1b}"), "\\\\\\u{1b}");
        // The lines of a report keep theirs: its names were shown.
        assert_eq!(shown_but_newlines("a\\n\n\r"), "a\\n\n\\r");
        let mut s = String::new();
        for c in "a\\\t".chars() {
            push_shown(&mut s, c);
        }
        assert_eq!(s, shown("a\\\t"));
    }

    #[test]
    fn an_empty_name_is_shown_in_quotes_not_as_a_blank() {
        assert_eq!(shown(""), EMPTY);
        assert_eq!(EMPTY, "\"\"");
        assert_eq!(shown("  "), "\"  \"");
        // A tab alone is escaped, which is no blank either.
        assert_eq!(shown("\t"), "\\t");
    }
}
