//! Everything the CLI writes: reports on stdout, errors on stderr.
//!
//! Commands write their reports into a `&mut dyn Write` (stdout in `main`)
//! with `write!`/`writeln!`, never `println!`, so a closed stdout
//! (`lumos inspect X | head -1`) comes back as an `io::Error` that `main`
//! turns into a quiet exit ([`is_broken_pipe`]) instead of a panic.

use std::fmt::Display;
use std::io::{self, Write};

use anyhow::Result;
use serde::Serialize;

/// Writes `value` as pretty JSON and a newline, fields in their declared
/// order (`lumos predict --json`), as it is serialized.
pub fn json<T: Serialize>(out: &mut dyn Write, value: &T) -> Result<()> {
    let mut w = io::BufWriter::new(out);
    serde_json::to_writer_pretty(&mut w, value).map_err(io_error)?;
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

/// A JSON writer's error as the `io::Error` it wraps, where it is one: a
/// closed stdout must reach `main` as a broken pipe ([`is_broken_pipe`]).
fn io_error(e: serde_json::Error) -> io::Error {
    io::Error::from(e)
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

/// Prints `error: <message>` on stderr. A stderr that cannot be written
/// (closed, or a broken pipe) is ignored: there is nowhere else to say it.
pub fn error(message: impl Display) {
    let _ = writeln!(io::stderr().lock(), "error: {message}");
}

/// Prints `note: <message>` on stderr: something the user should know
/// about how the inputs were taken, which is no failure.
pub fn note(message: impl Display) {
    let _ = writeln!(io::stderr().lock(), "note: {message}");
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
}
