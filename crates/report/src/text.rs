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
/// are never shown alike (when `n` allows a dozen characters or more; in
/// a narrower column a row still alike ends in a `#k` tag). All the rows
/// that [`short`] shows alike while their names differ are shown again:
/// from their compact forms where those differ, else from their whole
/// names (escaped, as [`short`] shows them), each keeping its start, then
/// a few characters before and after each place its name parts from the
/// others' (four `unrolled_elementwise_kernel<direct_copy_kernel_cuda,
/// Array‹ch…` that differ in lambda numbers read
/// `void at::native…da()#8}::operator()() const::{lambda(long)#1}…` and
/// the like).
pub fn short_all<S: AsRef<str>>(names: &[S], n: usize) -> Vec<String> {
    apart(names, n, push_shown, short)
}

/// [`short_all`] without [`shown`]'s escapes, for output that escapes the
/// names itself (the HTML report).
pub fn short_all_raw<S: AsRef<str>>(names: &[S], n: usize) -> Vec<String> {
    apart(names, n, |s, c| s.push(c), short_raw)
}

/// Rounds of showing again rows still alike: the first from compact forms
/// where they tell the names apart, later ones from whole names; a second
/// is only needed where a row shown again reads as another row.
const ROUNDS: usize = 4;

/// [`short_all`] with each character written by `piece`, each name first
/// shortened by itself by `first` ([`short`], [`short_raw`]).
fn apart<S: AsRef<str>>(
    names: &[S],
    n: usize,
    piece: fn(&mut String, char),
    first: fn(&str, usize) -> String,
) -> Vec<String> {
    let whole: Vec<Vec<String>> = names.iter().map(|s| form_of(s.as_ref(), piece)).collect();
    let fits = |i: usize| whole[i].iter().map(|q| width(q)).sum::<usize>() <= n;
    let mut out: Vec<String> = names.iter().map(|s| first(s.as_ref(), n)).collect();
    for round in 0..ROUNDS {
        let alike = alike_groups(names, &out);
        if alike.is_empty() {
            return out;
        }
        // A name that fits is shown whole: the others of its group move.
        // Those of groups whose compact forms differ where the names do
        // are shown from those forms (easier to read), the rest from their
        // whole names; each pool is parted as one, so that a row shown
        // again cannot read as one of another group shown again.
        let (mut by_form, mut by_whole) = (Vec::new(), Vec::new());
        for g in alike {
            let movers: Vec<usize> = g.into_iter().filter(|&i| !fits(i)).collect();
            let forms: Vec<Vec<String>> = movers
                .iter()
                .map(|&i| form(names[i].as_ref(), piece).0)
                .collect();
            let injective = round == 0
                && (0..movers.len()).all(|a| {
                    (0..movers.len())
                        .all(|b| (forms[a] == forms[b]) == (whole[movers[a]] == whole[movers[b]]))
                });
            if injective {
                by_form.extend(movers.into_iter().zip(forms));
            } else {
                by_whole.extend(movers.into_iter().map(|i| (i, whole[i].clone())));
            }
        }
        for pool in [by_form, by_whole] {
            for (i, s) in parted(&pool, n) {
                out[i] = s;
            }
        }
    }
    // Still alike after every round (too narrow a column for every place
    // a row parts from the others, or names no trace has): those rows
    // tagged with their place among all such names, so that no two read
    // alike, in this group or another.
    let left: Vec<usize> = alike_groups(names, &out).into_iter().flatten().collect();
    let mut distinct: Vec<&Vec<String>> = left.iter().map(|&i| &whole[i]).collect();
    distinct.sort();
    distinct.dedup();
    for &i in &left {
        let t = distinct.binary_search(&&whole[i]).unwrap_or(0) + 1;
        let tag = format!("#{t}");
        let mut s = cut(&whole[i], n.saturating_sub(tag.len()), false);
        s.push_str(&tag);
        out[i] = s;
    }
    out
}

/// Each row of `pool` (its index and pieces) in at most `n` characters,
/// showing where its pieces first differ from those of every other row of
/// the pool: its start, then a few pieces before and the piece at each
/// place it parts from others (the branch points of its path in the
/// pool's sorted names), then what follows, as room allows. Two rows that
/// differ show the same places up to where they part, then each its own
/// piece there, so they read differently.
fn parted(pool: &[(usize, Vec<String>)], n: usize) -> Vec<(usize, String)> {
    let mut sorted: Vec<&Vec<String>> = pool.iter().map(|(_, p)| p).collect();
    sorted.sort();
    sorted.dedup();
    // Where each sorted name first differs from the next.
    let next: Vec<usize> = sorted
        .windows(2)
        .map(|w| common_prefix(w[0], w[1]))
        .collect();
    pool.iter()
        .map(|(i, p)| {
            let at = sorted.binary_search(&p).unwrap_or(0);
            // The places it parts from every other name: the running
            // minima of `next` walking away from it either way.
            let mut places = Vec::new();
            let mut low = usize::MAX;
            for &d in next[..at].iter().rev() {
                low = low.min(d);
                places.push(low);
            }
            low = usize::MAX;
            for &d in &next[at..] {
                low = low.min(d);
                places.push(low);
            }
            places.sort_unstable();
            places.dedup();
            (*i, showing(p, n, &places))
        })
        .collect()
}

/// `p` in at most `n` characters showing its start and the pieces at
/// `places` (ascending), each after a few pieces of context, as many of
/// them as fit, then the pieces that follow the last, cuts marked `…`.
fn showing(p: &[String], n: usize, places: &[usize]) -> String {
    if p.iter().map(|q| width(q)).sum::<usize>() <= n {
        return p.concat();
    }
    // Pieces shown before and after each place.
    let (before, after) = if n >= 30 { (5, 4) } else { (2, 0) };
    // Pieces shown, as ranges of `p`, and the width they take with a `…`
    // before each gap and at the end when the last stops short.
    let render_width = |ranges: &[(usize, usize)]| -> usize {
        let mut w = 0;
        let mut end = 0;
        for &(a, b) in ranges {
            if a > end {
                w += 1;
            }
            w += p[a..b].iter().map(|q| width(q)).sum::<usize>();
            end = b;
        }
        w + usize::from(end < p.len())
    };
    let head = {
        let (mut k, mut used) = (0, 0);
        while k < p.len() && used + width(&p[k]) <= n / 4 {
            used += width(&p[k]);
            k += 1;
        }
        k
    };
    let mut ranges = vec![(0, head)];
    for &d in places.iter().filter(|&&d| d < p.len()) {
        let mut tried = ranges.clone();
        let (a, b) = (d.saturating_sub(before), (d + 1 + after).min(p.len()));
        let last = tried.last_mut().expect("the head is a range");
        // A gap of a few characters is shown rather than a `…` that
        // splits a word (`…nctor<f…loat`).
        let gap: usize = p[last.1.min(a)..a].iter().map(|q| width(q)).sum();
        if a <= last.1 || gap <= 4 {
            last.1 = last.1.max(b);
        } else {
            tried.push((a, b));
        }
        if render_width(&tried) > n {
            break;
        }
        ranges = tried;
    }
    // What follows the last place, as room allows (reaching the end
    // saves the closing `…`).
    let mut w = render_width(&ranges);
    let last = ranges.last_mut().expect("the head is a range");
    while last.1 < p.len() {
        let grown = w + width(&p[last.1]) - usize::from(last.1 + 1 == p.len());
        if grown > n {
            break;
        }
        w = grown;
        last.1 += 1;
    }
    let mut s = String::new();
    let mut end = 0;
    for &(a, b) in &ranges {
        if a > end {
            s.push('…');
        }
        s.push_str(&p[a..b].concat());
        end = b;
    }
    if end < p.len() {
        s.push('…');
    }
    s
}

/// The groups of rows shown alike (`out`) whose names differ.
fn alike_groups<S: AsRef<str>>(names: &[S], out: &[String]) -> Vec<Vec<usize>> {
    let mut groups: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (i, s) in out.iter().enumerate() {
        groups.entry(s.as_str()).or_default().push(i);
    }
    let mut alike: Vec<Vec<usize>> = groups
        .into_values()
        .filter(|g| g.iter().any(|&i| names[i].as_ref() != names[g[0]].as_ref()))
        .collect();
    alike.sort();
    alike
}

/// The pieces of `name` itself, each character written by `piece`.
fn form_of(name: &str, piece: impl Fn(&mut String, char)) -> Vec<String> {
    name.chars()
        .map(|c| {
            let mut p = String::new();
            piece(&mut p, c);
            p
        })
        .collect()
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
    (form_of(text, piece), middle)
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
    let s = after_return_type(s).unwrap_or(s);
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

/// The function of a symbol that starts with a return type other than
/// `void` (`std::enable_if<(((8)>(0)))&&…, void>::type
/// vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(…)`): the part after
/// its last space outside brackets, found from the end, where the brackets
/// of the name and its parameters pair up even when those of the return
/// type (a `>` that compares) do not. None when there is no such space,
/// or the parts do not read as a type and a name (`…linear.py(114):
/// forward`, `Memset (Device)`).
fn after_return_type(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    for i in (0..b.len()).rev() {
        match b[i] {
            b'>' | b')' | b'}' | b']' => depth += 1,
            b'<' | b'(' | b'{' | b'[' => depth -= 1,
            b' ' if depth == 0 && !b[i..].starts_with(b" const") => {
                let (ret, f) = (s[..i].trim_end(), &s[i + 1..]);
                let typed = ret
                    .bytes()
                    .last()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || b"_>*&".contains(&c));
                let named = f
                    .bytes()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_');
                return (typed && named).then_some(f);
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    None
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
    // `decltype(nullptr)` is a type, not a name and its parameters.
    let end = if part.starts_with("decltype(") {
        part.len()
    } else {
        part.find(['<', '(']).unwrap_or(part.len())
    };
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

    /// Kernels of the recsys rank (single-rank/a100-recsys-rank3of8) that
    /// the compact form shows alike: lambda numbers and `::Policy800`.
    const COPIES: [&str; 4] = [
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#8}::operator()() const::{lambda(long)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#8}::operator()() const::{lambda(long)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(double)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(double)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#14}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#14}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#6}::operator()() const::{lambda(int)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#6}::operator()() const::{lambda(int)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
    ];

    #[test]
    fn names_whose_compact_forms_are_alike_are_shown_from_their_whole_names() {
        // Four alike in their compact forms, and with two other kernels.
        let mut names: Vec<&str> = COPIES.to_vec();
        names.push("void cub::DeviceRadixSortHistogramKernel<cub::DeviceRadixSortPolicy<long, int, int>::Policy800, false, long, int>(int*, long const*, int, int, int)");
        names.push("void cub::DeviceRadixSortHistogramKernel<cub::DeviceRadixSortPolicy<long, float, int>::Policy800, false, long, int>(int*, long const*, int, int, int)");
        assert_eq!(compact(names[0]), compact(names[1]));
        assert_eq!(compact(names[4]), compact(names[5]));
        for n in [12, 20, 38, 62, 110] {
            let shown = short_all(&names, n);
            for (i, s) in shown.iter().enumerate() {
                assert!(s.chars().count() <= n, "{n}: {s:?}");
                for t in &shown[..i] {
                    assert_ne!(s, t, "{n}: {shown:#?}");
                }
            }
            if n == 62 {
                // Each shows the lambda that tells it apart.
                for (s, l) in shown.iter().zip(["#8}", "#12}", "#14}", "#6}"]) {
                    assert!(s.contains(l), "{s:?} lacks {l}");
                    assert!(s.starts_with("void at::native"), "{s:?}");
                }
                assert!(shown[4].contains("int, int>::Policy800"), "{shown:#?}");
                assert!(shown[5].contains("float, int>::Policy800"), "{shown:#?}");
            }
        }
        // The raw form (HTML) parts them as well.
        let raw = short_all_raw(&names, 62);
        assert_eq!(raw, short_all(&names, 62));
    }

    #[test]
    fn a_group_of_two_families_is_parted_at_both_places() {
        // Pairs alike once shortened, whose closest matches differ at the
        // same place: each must show where its family differs too.
        let k = |f: &str, l: &str, t: &str| {
            format!("void at::native::vectorized_elementwise_kernel<4, at::native::{f}_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#2}}::operator()() const::{{lambda()#{l}}}::operator()() const::{{lambda({t})#1}}, at::detail::Array<char*, 2> >(int, at::native::{f}_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#2}}::operator()() const::{{lambda()#{l}}}::operator()() const::{{lambda({t})#1}}, at::detail::Array<char*, 2>)")
        };
        let names = [
            k("log", "4", "float"),
            k("log", "2", "double"),
            k("neg", "4", "float"),
            k("neg", "2", "double"),
        ];
        for n in [12, 38, 62] {
            let shown = short_all(&names, n);
            for i in 0..4 {
                for j in 0..i {
                    assert_ne!(shown[i], shown[j], "{n}: {shown:#?}");
                }
            }
        }
    }

    #[test]
    fn a_return_type_and_decltype_are_read_as_such() {
        // single-rank/a100-recsys-rank3of8.
        assert_eq!(
            compact("void fbgemm_gpu::permute_indices_weights_kernel<false, int, decltype(nullptr)>(int, int, int, int const*, decltype(nullptr) const*, int const*, int const*, int const*, int*, decltype(nullptr)*)").unwrap(),
            "permute_indices_weights_kernel<false, int, decltype(nullptr)>"
        );
        // single-rank/b200-vllm-tp8-rank0: a return type that is no `void`.
        let rms = "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 const*, float, int, int)";
        assert_eq!(
            compact(rms).unwrap(),
            "fused_add_rms_norm_kernel<BFloat16, 8>"
        );
        assert_eq!(short(rms, 38), "fused_add_rms_norm_kernel<BFloat16, 8>");
        let gemv = "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, float, float, false, true, true, false, 7, cublasGemvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>)";
        assert!(compact(gemv).unwrap().starts_with("kernel<int, int, float"));
        // Names with a space that are no symbol stay as they are.
        for kept in [
            "Memset (Device)",
            "Memcpy HtoD (Pageable -> Device)",
            "/usr/lib/python3/site-packages/torch/nn/modules/linear.py(114): forward",
        ] {
            assert_eq!(compact(kept), None, "{kept}");
        }
    }
}
