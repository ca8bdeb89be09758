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
/// order (`lumos predict --json`).
pub fn json<T: Serialize>(out: &mut dyn Write, value: &T) -> Result<()> {
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    Ok(())
}

/// Writes `value` as pretty JSON and a newline with every object's keys
/// sorted, as `inspect`, `replay` and `demo` have always written them
/// (their output went through `serde_json::Value`, whose maps sort).
pub fn json_sorted<T: Serialize>(out: &mut dyn Write, value: &T) -> Result<()> {
    json(out, &serde_json::to_value(value)?)
}

/// Prints `error: <message>` on stderr. A stderr that cannot be written
/// (closed, or a broken pipe) is ignored: there is nowhere else to say it.
pub fn error(message: impl Display) {
    let _ = writeln!(io::stderr().lock(), "error: {message}");
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
        assert!(!is_broken_pipe(&anyhow::anyhow!("broken.json: truncated")));
        let other = anyhow::Error::from(io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(!is_broken_pipe(&other));
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
