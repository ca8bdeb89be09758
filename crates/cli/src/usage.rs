//! Usage errors found after parsing: a command line that clap accepted but
//! that asks for something impossible (a zero degree, an unknown preset,
//! `--scale-rank` without a job). They exit with code 2, as clap's own do;
//! every other error is bad input (code 1).

use std::fmt;

/// A usage error, carried through `anyhow` and recognized in `main`.
#[derive(Debug)]
pub struct UsageError(String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A usage error with this message, ready for `Err(...)` or `?`.
pub fn usage(message: impl fmt::Display) -> anyhow::Error {
    UsageError(message.to_string()).into()
}

/// True when `e`, or anything in its chain of causes, is a usage error.
pub fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<UsageError>())
}

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
        assert_eq!(format!("{e:#}"), "predict: --dp must be at least 1");
        assert!(!is_usage(&anyhow::anyhow!("broken.json: truncated")));
    }
}
