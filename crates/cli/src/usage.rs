//! Usage errors found after parsing: a command line that clap accepted but
//! that asks for something impossible (a zero degree, an unknown preset,
//! `--scale-rank` without a job). They exit with code 2, as clap's own do;
//! every other error is bad input (code 1).

use std::fmt;

use lumos_report::ReportError;

/// A usage error, carried through `anyhow` and recognized in `main`;
/// `help` when `--help` can help (the command line itself is wrong).
#[derive(Debug)]
pub struct UsageError {
    message: String,
    help: bool,
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UsageError {}

/// A usage error with this message, ready for `Err(...)` or `?`.
pub fn usage(message: impl fmt::Display) -> anyhow::Error {
    UsageError {
        message: message.to_string(),
        help: true,
    }
    .into()
}

/// A usage error refusing what a flag asks of these traces (an edit they
/// cannot support, a configuration that cannot exist): still exit 2, but
/// its answer is in the message, so `--help` is not offered.
pub fn refusal(message: impl fmt::Display) -> anyhow::Error {
    UsageError {
        message: message.to_string(),
        help: false,
    }
    .into()
}

/// Refuses a command line that names standard input (`-`) more than once:
/// the first read takes all of it, so the second would find it empty and
/// call the input bad. `args` are every input path of the command (a `-`
/// given as another flag's value, a name pattern say, is no input).
pub fn stdin_once<S: AsRef<std::ffi::OsStr>>(
    args: impl IntoIterator<Item = S>,
) -> anyhow::Result<()> {
    let n = args.into_iter().filter(|a| a.as_ref() == "-").count();
    match n {
        0 | 1 => Ok(()),
        n => Err(usage(format!(
            "standard input (-) is given {n} times; it can be read once"
        ))),
    }
}

/// Refuses an unreadable `LUMOS_MEMORY_LIMIT` whatever the command, as
/// the commands that read a job's files do, rather than ignore it where a
/// command has no use for it (`ingest`, `diff`, `synth`, `demo` took
/// `abc` without a word).
pub fn memory_limit_readable() -> anyhow::Result<()> {
    lumos_store::MemoryGuard::limit_readable().map_err(usage)
}

/// True when `e`, or anything in its chain of causes, is a usage error:
/// ours, or a report's refusal of what a flag asked for (a kernel speed-up
/// that selects nothing).
pub fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.is::<UsageError>()
            || matches!(
                c.downcast_ref::<ReportError>(),
                Some(ReportError::Predict(p)) if p.is_usage()
            )
    })
}

/// True when `e` is about the command line itself ([`usage`]), so that
/// `--help` can help; a [`refusal`] of what a flag asks of these traces
/// is a usage error whose answer is in the message, not in `--help`.
pub fn help_helps(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| c.downcast_ref::<UsageError>().is_some_and(|u| u.help))
}

/// The documented ranges of numeric flags (each flag's `--help` says its
/// own), and their checks: lumos-report's, which the Python package
/// applies to its arguments too.
pub use lumos_report::range::{batch, count, factor, size, steps};

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn found_through_context() {
        let e = Err::<(), _>(usage("--dp must be at least 1"))
            .context("predict")
            .unwrap_err();
        assert!(is_usage(&e));
        assert!(help_helps(&e));
        assert_eq!(format!("{e:#}"), "predict: --dp must be at least 1");
        assert!(!is_usage(&anyhow::anyhow!("broken.json: truncated")));
    }
}
