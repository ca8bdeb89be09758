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

/// `name` as a table shows it in at most `n` characters: [`shown`], and
/// when that is longer, made shorter so that names that differ still
/// differ on screen (five `void at::native::vectorized_elementwise_kernel<4,
/// at::native:…` read alike):
///
/// - a C++ symbol ([`compact`]) without its `void`, namespaces, parameter
///   list and lambdas, then cut at the end if it is still too long (its
///   family first, then the template arguments that tell its instances
///   apart: `vectorized_elementwise_kernel<4, sqrt_kernel_cuda, Array<char…`);
/// - any other name cut in the middle, keeping its start and its end
///   (`…/site-packages/torch/nn/modules/linear.py(114): forward`), where
///   names of a family differ.
///
/// An escape is kept whole or left out, never cut; the cut is marked
/// `…`. `--json` keeps the whole name. A table's column goes through
/// [`short_all`], which also parts names this makes alike.
pub fn short(name: &str, n: usize) -> String {
    let whole = shown(name);
    if whole.chars().count() <= n {
        return whole.into_owned();
    }
    let (p, middle) = form(name, push_shown);
    cut(&p, n, middle)
}

/// [`short`] without [`shown`]'s escapes, for output that escapes the
/// name itself (the HTML report).
pub fn short_raw(name: &str, n: usize) -> String {
    if name.chars().count() <= n {
        return name.to_owned();
    }
    let (p, middle) = form(name, |s, c| s.push(c));
    cut(&p, n, middle)
}

/// [`short`] of each name of a table's column, where names that differ
/// are shown apart when [`short`] shows them alike: such a name keeps its
/// start, then shows where it first differs from the others
/// (`Cijk_Alik_Bljk_BBS_B…_NTn1_NTA4_NTB0_NTC0_NTD4_NTM0_NEPBS16…`).
pub fn short_all<S: AsRef<str>>(names: &[S], n: usize) -> Vec<String> {
    let mut out: Vec<String> = names.iter().map(|s| short(s.as_ref(), n)).collect();
    let mut groups: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (i, s) in out.iter().enumerate() {
        groups.entry(s.as_str()).or_default().push(i);
    }
    let mut alike: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
    alike.sort();
    for g in alike {
        let forms: Vec<Vec<String>> = g
            .iter()
            .map(|&i| form(names[i].as_ref(), push_shown).0)
            .collect();
        for (k, &i) in g.iter().enumerate() {
            // Where this name first differs from the one it is most like.
            let d = (0..forms.len())
                .filter(|&j| j != k && forms[j] != forms[k])
                .map(|j| common_prefix(&forms[k], &forms[j]))
                .max();
            if let Some(d) = d {
                out[i] = window(&forms[k], n, d);
            }
        }
    }
    out
}

/// The number of leading pieces `a` and `b` share.
fn common_prefix(a: &[String], b: &[String]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The pieces of `name` as it is shortened (its [`compact`] form, else
/// itself), each character written by `piece`, and whether it is cut in
/// the middle (a name that is no C++ symbol) rather than at its end.
fn form(name: &str, piece: impl Fn(&mut String, char)) -> (Vec<String>, bool) {
    let compacted = compact(name);
    let middle = compacted.is_none();
    let text = compacted.as_deref().unwrap_or(name);
    let pieces = text
        .chars()
        .map(|c| {
            let mut p = String::new();
            piece(&mut p, c);
            p
        })
        .collect();
    (pieces, middle)
}

/// How many characters a piece takes on screen.
fn width(p: &str) -> usize {
    p.chars().count()
}

/// `p` in at most `n` characters: whole when it fits, else its start, `…`
/// and, when `middle`, its last third.
fn cut(p: &[String], n: usize, middle: bool) -> String {
    if p.iter().map(|q| width(q)).sum::<usize>() <= n {
        return p.concat();
    }
    let room = n.saturating_sub(1);
    let tail_room = if middle { room / 3 } else { 0 };
    let (mut tail, mut used) = (Vec::new(), 0);
    for q in p.iter().rev() {
        if used + width(q) > tail_room {
            break;
        }
        used += width(q);
        tail.push(q.as_str());
    }
    let mut s = take(p, room - used);
    s.push('…');
    s.extend(tail.into_iter().rev());
    s
}

/// The leading pieces of `p` that fit in `room` characters.
fn take(p: &[String], room: usize) -> String {
    let (mut s, mut used) = (String::new(), 0);
    for q in p {
        if used + width(q) > room {
            break;
        }
        used += width(q);
        s.push_str(q);
    }
    s
}

/// `p` in at most `n` characters showing its piece `d` (where it differs
/// from a name alike): its start when `d` is in it, else a quarter of its
/// start, `…`, and the rest from a few pieces before `d`.
fn window(p: &[String], n: usize, d: usize) -> String {
    let room = n.saturating_sub(1);
    if p[..d.min(p.len())].iter().map(|q| width(q)).sum::<usize>() < room {
        return cut(p, n, false);
    }
    let mut s = take(p, n / 4);
    s.push('…');
    let rest = &p[d.saturating_sub(8).min(p.len())..];
    let left = n.saturating_sub(width(&s));
    if rest.iter().map(|q| width(q)).sum::<usize>() <= left {
        s.push_str(&rest.concat());
    } else {
        s.push_str(&take(rest, left.saturating_sub(1)));
        s.push('…');
    }
    s
}

/// A C++ symbol as a demangler writes it (a kernel's name), shorter:
/// without a leading `void`, the namespaces (`at::native::`), the
/// parameter list and what follows it (`(int, …)`, `::{lambda()#2}`,
/// `::operator()() const`), in the template arguments too, which keep
/// their own template arguments:
/// `void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, at::detail::Array<char*, 2> >(int, …)`
/// is `vectorized_elementwise_kernel<4, CUDAFunctorOnSelf_add<float>, Array<char*, 2>>`.
/// None for a name that is not one (a path, `ProfilerStep#5`,
/// `autograd::engine::evaluate_function: …`, brackets that do not pair):
/// it is shown as it is.
pub fn compact(name: &str) -> Option<String> {
    let s = name.strip_prefix("void ").unwrap_or(name);
    let b = s.as_bytes();
    let symbol = b
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_' || *c == b'(')
        && (s.contains("::") || s.contains('<') || s.ends_with(')'))
        && paired(s)
        && top_level(s).all(|(i, c)| c != b' ' || b[i..].starts_with(b" const"));
    if !symbol {
        return None;
    }
    let c = compact_expr(s, 0);
    (!c.is_empty() && c != name).then_some(c)
}

/// The brackets of `s` (`<>`, `()`, `{}`, `[]`) pair up (an
/// `operator<<` does not: not compacted).
fn paired(s: &str) -> bool {
    let mut open = Vec::new();
    for c in s.bytes() {
        match c {
            b'<' => open.push(b'>'),
            b'(' => open.push(b')'),
            b'{' => open.push(b'}'),
            b'[' => open.push(b']'),
            b'>' | b')' | b'}' | b']' if open.pop() != Some(c) => return false,
            _ => {}
        }
    }
    open.is_empty()
}

/// The bytes of `s` outside every bracket, with their positions.
fn top_level(s: &str) -> impl Iterator<Item = (usize, u8)> + '_ {
    let mut depth = 0i32;
    s.bytes().enumerate().filter(move |&(_, c)| {
        let before = depth;
        match c {
            b'<' | b'(' | b'{' | b'[' => depth += 1,
            b'>' | b')' | b'}' | b']' => depth -= 1,
            _ => {}
        }
        before == 0 && depth == 0
    })
}

/// Where the bracket open before `s` closes in it (its length if it
/// does not).
fn closing(s: &str) -> usize {
    let mut depth = 0i32;
    for (i, c) in s.bytes().enumerate() {
        match c {
            b'<' | b'(' | b'{' | b'[' => depth += 1,
            b'>' | b')' | b'}' | b']' if depth == 0 => return i,
            b'>' | b')' | b'}' | b']' => depth -= 1,
            _ => {}
        }
    }
    s.len()
}

/// `s` split at `sep` outside brackets (`sep` is ASCII, so every piece
/// starts and ends on a character).
fn split_top<'a>(s: &'a str, sep: &[u8]) -> Vec<&'a str> {
    let b = s.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, _) in top_level(s) {
        if i >= start && b[i..].starts_with(sep) {
            parts.push(&s[start..i]);
            start = i + sep.len();
        }
    }
    parts.push(&s[start..]);
    parts
}

/// One expression of a symbol compacted ([`compact`]): the last part of
/// its qualified name that is a name (not a lambda, an operator or an
/// anonymous namespace), with its template arguments compacted and its
/// parameter list dropped. `s` itself (trimmed) when it has none.
fn compact_expr(s: &str, depth: usize) -> String {
    let s = s.trim();
    let named = |g: &&str| {
        let g = g.trim();
        !g.is_empty() && !g.starts_with(['{', '(']) && !g.starts_with("operator")
    };
    let Some(part) = split_top(s, b"::").into_iter().rev().find(named) else {
        return s.to_owned();
    };
    let part = part.trim();
    let end = part.find(['<', '(']).unwrap_or(part.len());
    let mut out = part[..end].trim_end().to_owned();
    if part[end..].starts_with('<') {
        // The template list: up to its matching `>` (the brackets pair).
        let inner = &part[end + 1..];
        let close = closing(inner);
        // Deeper than a few levels a name says no more (and the
        // recursion stays bounded on a hostile name).
        if depth >= 8 {
            out.push_str("<…>");
        } else {
            let args: Vec<String> = split_top(&inner[..close], b",")
                .into_iter()
                .map(|a| compact_expr(a, depth + 1))
                .collect();
            out.push('<');
            out.push_str(&args.join(", "));
            out.push('>');
        }
    }
    if out.is_empty() {
        s.to_owned()
    } else {
        out
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

    #[test]
    fn long_kernel_names_are_compacted_so_that_they_still_differ() {
        let sqrt = "void at::native::vectorized_elementwise_kernel<4, at::native::sqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::sqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)";
        let add = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, at::detail::Array<char*, 2> >(int, at::native::CUDAFunctorOnSelf_add<float>, at::detail::Array<char*, 2>)";
        assert_eq!(
            compact(sqrt).unwrap(),
            "vectorized_elementwise_kernel<4, sqrt_kernel_cuda, Array<char*, 2>>"
        );
        assert_eq!(
            compact(add).unwrap(),
            "vectorized_elementwise_kernel<4, CUDAFunctorOnSelf_add<float>, Array<char*, 2>>"
        );
        assert_eq!(
            short(sqrt, 62),
            "vectorized_elementwise_kernel<4, sqrt_kernel_cuda, Array<char…"
        );
        assert_eq!(short(add, 38), "vectorized_elementwise_kernel<4, CUDA…");
        assert_eq!(
            short("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 62),
            "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"
        );
        assert_eq!(
            short(
                "torch::autograd::CppNode<SplitLookupFunction_adagrad_Op>",
                40
            ),
            "CppNode<SplitLookupFunction_adagrad_Op>"
        );
        // A name that fits is shown whole, namespaces and all.
        assert_eq!(short("aten::mm", 40), "aten::mm");
        for n in [10, 38, 62] {
            assert_eq!(short(sqrt, n).chars().count(), n);
        }
        assert_ne!(short(sqrt, 38), short(add, 38));
    }

    #[test]
    fn other_names_are_cut_in_the_middle_and_escapes_kept_whole() {
        let path = "/usr/lib/python3/site-packages/torch/nn/modules/linear.py(114): forward";
        assert_eq!(compact(path), None);
        let s = short(path, 40);
        assert_eq!(s.chars().count(), 40);
        assert!(s.starts_with("/usr/lib/python3/site-pack"), "{s}");
        assert!(s.ends_with("): forward"), "{s}");
        assert_eq!(
            compact("autograd::engine::evaluate_function: torch::autograd::CppNode<X>"),
            None
        );
        assert_eq!(compact("a::operator<<(int)"), None);
        // An escape is never cut: `\u{1b}` whole or not at all.
        let s = short(&format!("{}\u{1b}{}", "a".repeat(14), "b".repeat(40)), 25);
        assert_eq!(s, format!("{}…{}", "a".repeat(14), "b".repeat(8)));
        assert_eq!(short_raw("void at::k<int>(float)", 8), "k<int>");
        assert_eq!(short("", 5), EMPTY);
    }

    #[test]
    fn names_alike_once_cut_are_shown_where_they_differ() {
        let base = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x{}x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
        let names = [base.replace("{}", "128"), base.replace("{}", "64")];
        let shown = short_all(&names, 62);
        assert_ne!(shown[0], shown[1], "{shown:?}");
        assert!(shown.iter().all(|s| s.chars().count() <= 62), "{shown:?}");
        let long = |x: &str| format!("Cijk_{}_NTA{x}_NTB0_{}", "A".repeat(300), "B".repeat(100));
        let names = [long("0"), long("4"), "aten::mm".to_owned()];
        let shown = short_all(&names, 40);
        assert!(shown[0].contains("_NTA0_"), "{shown:?}");
        assert!(shown[1].contains("_NTA4_"), "{shown:?}");
        assert!(shown[0].starts_with("Cijk_AAAAA"), "{shown:?}");
        assert!(shown.iter().all(|s| s.chars().count() <= 40), "{shown:?}");
        assert_eq!(shown[2], "aten::mm");
        // The same name twice stays the same.
        let same = short_all(&[long("0"), long("0")], 40);
        assert_eq!(same[0], same[1]);
        assert_eq!(same[0], short(&long("0"), 40));
    }
}
