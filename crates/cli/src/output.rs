//! Everything the CLI writes: reports on stdout, errors on stderr.
//!
//! Commands write their reports into a `&mut dyn Write` (stdout in `main`)
//! with `write!`/`writeln!`, never `println!`, so a closed stdout
//! (`lumos inspect X | head -1`) comes back as an `io::Error` that `main`
//! turns into a quiet exit ([`is_broken_pipe`]) instead of a panic.
//!
//! A trace's names can hold anything, terminal escapes included, so `main`
//! writes standard output and error through [`Shown`], which escapes every
//! character that would act on the terminal instead of being seen
//! (`\u{1b}`; [`lumos_report::text::is_hidden`]); the tables pass names
//! through [`lumos_report::text::shown`] too, which also escapes a newline
//! inside a name. The JSON outputs escape the same characters as `\u001b`
//! ([`SafeJson`]): the exact text, and nothing [`Shown`] has to touch.

use std::fmt::Display;
use std::io::{self, Write};

use anyhow::Result;
use lumos_report::text::is_hidden;
use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

/// Writes `value` as pretty JSON and a newline, fields in their declared
/// order (`lumos predict --json`), as it is serialized.
pub fn json<T: Serialize>(out: &mut dyn Write, value: &T) -> Result<()> {
    let mut w = io::BufWriter::new(out);
    to_writer_pretty(&mut w, value).map_err(io_error)?;
    w.write_all(b"\n")?;
    w.flush()?;
    Ok(())
}

/// Writes `value` as pretty JSON and a newline with every object's keys
/// sorted, as `inspect`, `replay` and `demo` have always written them
/// (their output went through `serde_json::Value`, whose maps sort): the
/// same text, written as it is serialized
/// ([`crate::sorted_json::to_writer_pretty_sorted`]), without a tree of
/// the whole report in memory first.
pub fn json_sorted<T: Serialize>(out: &mut dyn Write, value: &T) -> Result<()> {
    let mut w = io::BufWriter::new(out);
    crate::sorted_json::to_writer_pretty_sorted(&mut w, value).map_err(io_error)?;
    w.write_all(b"\n")?;
    w.flush()?;
    Ok(())
}

/// Writes `value` to `w` as pretty JSON (no trailing newline), fields in
/// their declared order, escaped as [`SafeJson`] escapes: what every JSON
/// the CLI writes goes through, on stdout or into a file
/// (`<name>.critical-path.json`).
pub fn to_writer_pretty<W: Write, T: Serialize + ?Sized>(
    w: W,
    value: &T,
) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(
        w,
        SafeJson::default(),
    ))
}

/// serde_json's pretty formatter, which also escapes the
/// [`is_hidden`] characters JSON allows raw (DEL, the C1 controls, U+2028,
/// U+2029, the bidirectional overrides) as `\uXXXX`: the same string to a
/// JSON parser, and nothing that acts on a terminal when the output is
/// read there. serde_json already escapes the C0 controls.
#[derive(Default)]
pub struct SafeJson(PrettyFormatter<'static>);

impl Formatter for SafeJson {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some((i, c)) = rest.char_indices().find(|&(_, c)| is_hidden(c)) {
            writer.write_all(&rest.as_bytes()[..i])?;
            // Every hidden character left here is in the Basic
            // Multilingual Plane: one \uXXXX.
            write!(writer, "\\u{:04x}", c as u32)?;
            rest = &rest[i + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// A writer for a person's terminal: what `main` writes standard output
/// and error through. Every [`is_hidden`] character but the newline (the
/// output's own lines) reaches the inner writer escaped as
/// [`lumos_report::text::shown`] escapes it: a trace's name holding
/// `\u{1b}]0;title\u{7}` cannot retitle the terminal, nor a carriage
/// return overwrite a line, whatever command prints it. Bytes that start
/// no hidden character (all of the corpus's output) pass through
/// unchanged; a character split between two writes waits for its end.
pub struct Shown<W: Write> {
    inner: W,
    /// The start of a character the last write ended inside.
    pending: Vec<u8>,
}

impl<W: Write> Shown<W> {
    /// `inner`, shown.
    pub fn new(inner: W) -> Self {
        Shown {
            inner,
            pending: Vec::new(),
        }
    }

    /// Writes `s`, its hidden characters but newlines escaped.
    fn write_text(&mut self, s: &str) -> io::Result<()> {
        let shown = lumos_report::text::shown_but_newlines(s);
        self.inner.write_all(shown.as_bytes())
    }
}

/// True for a byte that may start a hidden character: a C0 control but the
/// newline, DEL, or the first byte of U+0080..U+00BF (C1 controls) or of
/// U+2000..U+207F (separators and bidirectional controls) in UTF-8.
fn may_hide(b: u8) -> bool {
    (b < 0x20 && b != b'\n') || b == 0x7f || b == 0xc2 || b == 0xe2
}

impl<W: Write> Write for Shown<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pending.is_empty() && !buf.iter().any(|&b| may_hide(b)) {
            self.inner.write_all(buf)?;
            return Ok(buf.len());
        }
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(buf);
        let mut rest = &bytes[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    self.write_text(s)?;
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    self.write_text(std::str::from_utf8(valid).unwrap_or_default())?;
                    match e.error_len() {
                        // A character cut by the end of this write.
                        None => {
                            self.pending = after.to_vec();
                            break;
                        }
                        // Not UTF-8 (no text lumos writes): as it is.
                        Some(n) => {
                            self.inner.write_all(&after[..n])?;
                            rest = &after[n..];
                        }
                    }
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Shown<W> {
    fn drop(&mut self) {
        // A character never finished: its bytes as they came.
        let _ = self.inner.write_all(&std::mem::take(&mut self.pending));
    }
}

/// A JSON writer's error as the `io::Error` it wraps, where it is one: a
/// closed stdout must reach `main` as a broken pipe ([`is_broken_pipe`]).
fn io_error(e: serde_json::Error) -> io::Error {
    io::Error::from(e)
}

/// A trace's name (or a path) as a person is shown it: what would act on
/// the terminal escaped, backslashes doubled, an empty name `""`
/// ([`lumos_report::text::shown`]). Every name a text table or message
/// holds goes through it, so one name never reads as another.
pub use lumos_report::text::shown;

/// Each of `items` [`shown`].
pub fn shown_all(items: &[String]) -> Vec<String> {
    items.iter().map(|s| shown(s).into_owned()).collect()
}

/// A path as messages and reports show it ([`shown`]: one line whatever
/// it holds).
pub fn shown_path(p: &std::path::Path) -> String {
    shown(&p.display().to_string()).into_owned()
}

/// A path as a POSIX shell reads it as one word, for a command line the
/// user is told to type (`lumos synth`'s and `lumos demo`'s next
/// commands): as it is where every character is one a shell takes
/// literally, else in single quotes (a quote inside closed, escaped and
/// reopened). Before, `lumos synth --out "syn dir"` said `lumos replay
/// syn dir`, two arguments.
pub fn shell_path(p: &std::path::Path) -> String {
    let text = p.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `n` and the noun that agrees with it: "1 thread", "2 threads".
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// How every text table shows a value the trace does not tell (a world
/// size not recorded, layers not found): one dash, the same in every
/// command. `--json` writes `null` for the same values.
pub const UNKNOWN: &str = "-";

/// `x` as text, or [`UNKNOWN`].
pub fn or_unknown<T: Display>(x: Option<T>) -> String {
    x.map_or_else(|| UNKNOWN.to_owned(), |v| v.to_string())
}

/// A percentage (`prec` decimals and `%`), or [`UNKNOWN`] alone where it
/// has none (an error of a span measured at zero length, a change from
/// nothing): `-%` would read as a number. Right-align it in the width of
/// the number and its `%`.
pub fn pct(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(|| UNKNOWN.to_owned(), |v| format!("{v:.prec$}%"))
}

/// Widest a folded list runs on one line, in characters: a terminal's
/// width less the indent and label before it.
pub const LIST_WIDTH: usize = 100;

/// `items` joined by `sep`, folded when they run past `width` characters:
/// as many as fit, then `+N more <what>` (the `--json` output has them
/// all). The first item is always shown, so put the one that matters most
/// first.
pub fn fold(items: &[String], sep: &str, width: usize, what: &str) -> String {
    let mut out = String::new();
    for (k, item) in items.iter().enumerate() {
        let more = format!("{sep}+{} more {what}", items.len() - k);
        let room = if k + 1 == items.len() { 0 } else { more.len() };
        if k > 0 && out.len() + sep.len() + item.len() + room > width {
            out.push_str(&more);
            return out;
        }
        if k > 0 {
            out.push_str(sep);
        }
        out.push_str(item);
    }
    out
}

/// Widest a line of a text table or list runs, in characters: what a
/// person reads at a terminal of 120 columns. A single long name (the
/// "longest on path" line of `replay`) is the one line let past it.
pub const WIDTH: usize = 120;

/// `head` then `items` joined by `sep`, broken into lines of at most
/// `width` characters where an item would run past it; the lines after
/// the first start with `indent`. Every item is kept (a list that is the
/// answer, not a sample of it: [`fold`] is for those). An item longer
/// than a line has a line of its own.
pub fn wrapped(head: &str, items: &[String], sep: &str, indent: &str, width: usize) -> String {
    let mut out = head.to_owned();
    let mut line = head.chars().count();
    for (k, item) in items.iter().enumerate() {
        let n = item.chars().count();
        let glue = sep.trim_end();
        // Room for the separator that ends a line broken after this item.
        let room = if k + 1 == items.len() {
            0
        } else {
            glue.chars().count()
        };
        // A head too long for its first item (`collectives: 294 tasks
        // (...): `) ends its line where a width narrower than the default
        // was asked (the default's lines stay as they were).
        let after_head = k == 0 && width < WIDTH && !head.trim().is_empty();
        if after_head && line + n + room > width {
            out.truncate(out.trim_end().len());
            out.push('\n');
            out.push_str(indent);
            line = indent.chars().count();
        } else if k > 0 && line + sep.chars().count() + n + room > width {
            out.push_str(glue);
            out.push('\n');
            out.push_str(indent);
            line = indent.chars().count();
        } else if k > 0 {
            out.push_str(sep);
            line += sep.chars().count();
        }
        out.push_str(item);
        line += n;
    }
    out
}

/// `head` then the words of `text`, folded at the spaces into lines of at
/// most `width` characters ([`wrapped`]; a word longer than a line has
/// one of its own), the lines after the first starting with `indent`: a
/// sentence of the text output (a warning, a refusal) as a terminal shows
/// it whole.
pub fn wrapped_words(head: &str, text: &str, indent: &str, width: usize) -> String {
    let words: Vec<String> = text.split(' ').map(str::to_owned).collect();
    wrapped(head, &words, " ", indent, width)
}

/// The width to fold a line at that ran past [`WIDTH`] before the output
/// fit a width: `width` when one narrower than [`WIDTH`] was asked, else
/// unbounded, so that the output with no width asked stays as it was.
pub fn narrow(width: usize) -> usize {
    if width < WIDTH {
        width
    } else {
        usize::MAX
    }
}

/// The narrowest width the text output is laid out for: below it a
/// table's name column would be too narrow to read, so a smaller terminal
/// gets lines of this width (its own wraps them).
pub const MIN_WIDTH: usize = 60;

/// The width the user asked the text output to fit, in columns: the
/// terminal's when standard output is one, else `COLUMNS` when it holds
/// a number (as clap's help reads it), else `None` (output as wide as
/// [`WIDTH`], the same text whatever reads it). Never under
/// [`MIN_WIDTH`]. The one place the CLI reads the terminal for layout.
pub fn asked_width() -> Option<usize> {
    use std::io::IsTerminal;
    let terminal = io::stdout()
        .is_terminal()
        .then(terminal_size::terminal_size)
        .flatten()
        .map(|(w, _)| usize::from(w.0));
    let columns = || std::env::var("COLUMNS").ok()?.trim().parse::<usize>().ok();
    terminal
        .or_else(columns)
        .filter(|&w| w > 0)
        .map(|w| w.max(MIN_WIDTH))
}

/// The width of a table's name column: `most` characters when the line
/// has room for them beside the other columns (`rest` characters), else
/// what is left of `width`, never under `least` (a line then runs past
/// `width`, and [`Fit`] folds it).
pub fn name_width(width: usize, rest: usize, most: usize, least: usize) -> usize {
    most.min(width.saturating_sub(rest)).max(least)
}

/// A writer that folds every line longer than `width` characters, if a
/// width is given: at the last space that fits, else at the width, the
/// rest on lines indented two columns past the line's own indent. Every
/// character is kept. The text output's last resort, behind its tables
/// and paragraphs laid out for the width: a line that is still too long
/// (an error quoting a long path, a table of a command not laid out for
/// it) reads folded rather than cut by the terminal. Never used for
/// `--json`.
pub struct Fit<W: Write> {
    inner: W,
    width: Option<usize>,
    /// The line being written, up to its newline.
    line: Vec<u8>,
}

impl<W: Write> Fit<W> {
    /// `inner`, its lines folded at `width` (`None`: as they are).
    pub fn new(inner: W, width: Option<usize>) -> Self {
        Fit {
            inner,
            width,
            line: Vec::new(),
        }
    }

    /// Writes the line held (without its newline) folded, then `end`.
    fn write_line(&mut self, end: &[u8]) -> io::Result<()> {
        let line = std::mem::take(&mut self.line);
        match (self.width, std::str::from_utf8(&line)) {
            (Some(w), Ok(s)) if s.chars().count() > w => {
                self.inner.write_all(folded(s, w).as_bytes())?
            }
            _ => self.inner.write_all(&line)?,
        }
        self.inner.write_all(end)
    }
}

/// `s` (one line) in lines of at most `width` characters ([`Fit`]).
pub fn folded(s: &str, width: usize) -> String {
    let lead = s.len() - s.trim_start_matches(' ').len();
    let indent = " ".repeat((lead + 2).min(width / 2));
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest: &str = s;
    let mut room = width;
    while rest.chars().count() > room {
        let cut = rest.char_indices().nth(room).map_or(rest.len(), |(i, _)| i);
        // The last space that leaves some text on this line.
        let at = if rest[cut..].starts_with(' ') {
            Some(cut)
        } else {
            rest[..cut].rfind(' ')
        }
        .filter(|&i| !rest[..i].trim().is_empty());
        let (this, next) = match at {
            Some(i) => (&rest[..i], rest[i..].trim_start_matches(' ')),
            None => rest.split_at(cut),
        };
        out.push_str(this.trim_end());
        out.push('\n');
        out.push_str(&indent);
        rest = next;
        room = width - indent.len();
    }
    out.push_str(rest);
    out
}

impl<W: Write> Write for Fit<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.width.is_none() {
            return self.inner.write(buf);
        }
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..i]);
            self.write_line(b"\n")?;
            rest = &rest[i + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        if !self.line.is_empty() {
            self.write_line(b"")?;
        }
        self.inner.flush()
    }
}

/// Prints `error: <message>` on stderr, on one line: the message
/// [`one_line`], so a path or name in it holding a newline is written
/// `a\nb.json` and cannot break it in two. A stderr that cannot
/// be written (closed, or a broken pipe) is ignored: there is nowhere
/// else to say it.
pub fn error(message: impl Display) {
    say("error", message, "");
}

/// [`error`], then a blank line and where to read more: a usage error
/// that `--help` answers.
pub fn error_with_help(message: impl Display) {
    say("error", message, "\n\nFor more information, try '--help'.");
}

/// Prints `note: <message>` on stderr, on one line as [`error`] does:
/// something the user should know about how the inputs were taken, which
/// is no failure.
pub fn note(message: impl Display) {
    say("note", message, "");
}

/// Prints `next: <command>` on stderr, on one line as [`error`] does: a
/// command to type next, after a command whose stdout is data (the
/// files `lumos synth` wrote).
pub fn next(command: impl Display) {
    say("next", command, "");
}

/// Prints `warning: <message>` on stderr, on one line as [`error`] does:
/// something about the inputs that may make the results wrong, found
/// before any trace is read (a file a folder left out).
pub fn warning(message: impl Display) {
    say("warning", message, "");
}

/// Writes `<label>: <message, shown><after>` and a newline on stderr.
fn say(label: &str, message: impl Display, after: &str) {
    let text = message.to_string();
    let _ = writeln!(
        Shown::new(io::stderr().lock()),
        "{label}: {}{after}",
        one_line(&text)
    );
}

/// `text` (a message, a progress line) as one line
/// ([`lumos_report::text::one_line`]: control characters escaped,
/// backslashes kept, since messages quote text as Rust does), with
/// standard input named as the reports name it
/// ([`crate::inputs::stdin_named_in`]).
pub fn one_line(text: &str) -> String {
    let text = crate::inputs::stdin_named_in(text);
    lumos_report::text::one_line(&text).into_owned()
}

/// `e` and its chain of causes on one line, as `{e:#}` writes them, but
/// each I/O error in the system's words without their code
/// ([`lumos_trace::io_words`]: "no space left on device", not "No space
/// left on device (os error 28)"): every error the CLI prints goes
/// through here.
pub fn message(e: &anyhow::Error) -> String {
    let words: Vec<String> = (e.chain())
        .map(|c| match c.downcast_ref::<io::Error>() {
            Some(io) => lumos_trace::io_words(io),
            None => c.to_string(),
        })
        .collect();
    words.join(": ")
}

/// Standard output, whose failures name it: a full disk under `>
/// out.json` said only "No space left on device (os error 28)", as if an
/// input had failed. A broken pipe stays as it is: `main` ends quietly on
/// it ([`is_broken_pipe`]), since whoever read the output stopped.
pub struct Stdout<W: Write>(pub W);

impl<W: Write> Stdout<W> {
    fn named(e: io::Error) -> io::Error {
        if e.kind() == io::ErrorKind::BrokenPipe {
            return e;
        }
        let words = lumos_trace::io_words(&e);
        io::Error::new(e.kind(), format!("writing to stdout: {words}"))
    }
}

impl<W: Write> Write for Stdout<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(Self::named)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(Self::named)
    }
}

/// True when `e`, or anything in its chain of causes, is a broken pipe:
/// whoever read the output has stopped reading, which is no failure.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    /// A writer whose reader has gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_an_error_main_recognizes() {
        let e = json(&mut Closed, &[1, 2]).context("inspect").unwrap_err();
        assert!(is_broken_pipe(&e));
        // Larger than the writer's buffer: the error comes from inside the
        // serializer, not from the final flush.
        let long = vec![u64::MAX; 10_000];
        let e = json_sorted(&mut Closed, &long)
            .context("replay")
            .unwrap_err();
        assert!(is_broken_pipe(&e));
        assert!(!is_broken_pipe(&anyhow::anyhow!("broken.json: truncated")));
        let other = anyhow::Error::from(io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(!is_broken_pipe(&other));
    }

    /// A writer on a full disk.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(28))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failure_to_write_stdout_is_said_in_words_naming_it() {
        let e = json(&mut Stdout(Full), &[1, 2]).unwrap_err();
        assert_eq!(message(&e), "writing to stdout: no space left on device");
        assert!(!is_broken_pipe(&e));
        // A closed pipe is still one, for `main` to end quietly.
        let e = json(&mut Stdout(Closed), &[1, 2]).unwrap_err();
        assert!(is_broken_pipe(&e));
        // Any I/O error in a chain, under a context naming a file.
        let e = anyhow::Error::from(io::Error::from_raw_os_error(28)).context("out/x.json");
        assert_eq!(message(&e), "out/x.json: no space left on device");
    }

    #[test]
    fn a_line_too_wide_is_folded_at_its_spaces_and_keeps_every_character() {
        let line = "    critical path: release 0.00, intra_thread 44.73, inter_thread 0.09";
        let f = folded(line, 40);
        assert_eq!(
            f,
            "    critical path: release 0.00,\n      intra_thread 44.73, inter_thread\n      0.09"
        );
        // No space to fold at: cut at the width; a character is never split.
        let f = folded(&"é".repeat(100), 60);
        assert!(f.lines().all(|l| l.chars().count() <= 60), "{f}");
        assert_eq!(f.replace(['\n', ' '], ""), "é".repeat(100));
        let mut w = Fit::new(Vec::new(), Some(60));
        write!(w, "{}\nshort\n{}", "a ".repeat(40), "b".repeat(70)).unwrap();
        w.flush().unwrap();
        let text = String::from_utf8(w.inner).unwrap();
        assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
        assert!(text.contains("\nshort\n"), "{text}");
        // Without a width, as written.
        let mut w = Fit::new(Vec::new(), None);
        write!(w, "{}", "x ".repeat(100)).unwrap();
        assert_eq!(w.inner, "x ".repeat(100).into_bytes());
    }

    #[test]
    fn long_lists_fold_into_a_count_and_short_ones_do_not() {
        let items: Vec<String> = (0..8)
            .map(|i| format!("{i}: NVIDIA A100-SXM4-80GB"))
            .collect();
        let folded = fold(&items, "; ", 60, "devices");
        assert_eq!(folded, "0: NVIDIA A100-SXM4-80GB; +7 more devices");
        assert!(folded.len() <= 60);
        assert_eq!(
            fold(&items[..2], "; ", 60, "devices")
                .matches("A100")
                .count(),
            2
        );
        assert_eq!(fold(&[], ", ", 10, "x"), "");
    }

    #[test]
    fn wrapped_breaks_lines_at_the_width_and_keeps_every_item() {
        let items: Vec<String> = ["alpha 1", "beta 22", "gamma 333"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            wrapped("x: ", &items, ", ", "  ", 80),
            "x: alpha 1, beta 22, gamma 333"
        );
        let text = wrapped("x: ", &items, ", ", "  ", 20);
        assert_eq!(text, "x: alpha 1, beta 22,\n  gamma 333");
        assert!(text.lines().all(|l| l.chars().count() <= 20), "{text}");
        assert_eq!(wrapped("x: ", &[], ", ", "  ", 20), "x: ");
        let long = "word ".repeat(40);
        let text = wrapped_words("  warning: ", long.trim_end(), "    ", WIDTH);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= WIDTH), "{text}");
        assert_eq!(text.split_whitespace().filter(|w| *w == "word").count(), 40);
        assert_eq!(or_unknown(None::<u32>), UNKNOWN);
        assert_eq!(or_unknown(Some(8)), "8");
        assert_eq!(pct(None, 2), UNKNOWN);
        assert_eq!(pct(Some(-1.234), 2), "-1.23%");
    }

    #[test]
    fn sorted_json_sorts_keys_and_plain_json_keeps_their_order() {
        #[derive(Serialize)]
        struct S {
            b: u32,
            a: u32,
        }
        let mut out = Vec::new();
        json(&mut out, &S { b: 1, a: 2 }).unwrap();
        json_sorted(&mut out, &S { b: 1, a: 2 }).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n  \"b\": 1,\n  \"a\": 2\n}\n{\n  \"a\": 2,\n  \"b\": 1\n}\n"
        );
    }

    #[test]
    fn shown_output_escapes_controls_even_split_between_writes() {
        let mut out = Vec::new();
        {
            let mut w = Shown::new(&mut out);
            w.write_all(b"plain \xe2\x80\xa6 line\n").unwrap();
            // U+202E (E2 80 AE) cut after its first byte, C1 NEL (C2 85)
            // after its first.
            w.write_all(b"a\x1b[31m\r\tb\xe2").unwrap();
            w.write_all(b"\x80\xaec\xc2").unwrap();
            w.write_all(b"\x85d\n").unwrap();
            w.flush().unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "plain \u{2026} line\na\\u{1b}[31m\\r\\tb\\u{202e}c\\u{85}d\n"
        );
    }

    #[test]
    fn json_escapes_what_a_terminal_would_act_on_and_parses_back_the_same() {
        let name = "k\u{1b}[31m\u{7f}\u{85}\u{2028}\u{202e}<x> \u{2026} \u{1f525}\\";
        for sorted in [false, true] {
            let mut out = Vec::new();
            if sorted {
                json_sorted(&mut out, &[name]).unwrap();
            } else {
                json(&mut out, &[name]).unwrap();
            }
            let text = String::from_utf8(out).unwrap();
            assert_eq!(
                text,
                "[\n  \"k\\u001b[31m\\u007f\\u0085\\u2028\\u202e<x> \u{2026} \u{1f525}\\\\\"\n]\n"
            );
            let back: Vec<String> = serde_json::from_str(&text).unwrap();
            assert_eq!(back, [name]);
        }
    }
}
