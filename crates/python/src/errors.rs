//! Rust errors as the Python exceptions of `lumos.errors`: bad input
//! (`InputError`), bad configuration (`ConfigError`) and I/O
//! (`LumosIOError`), all `LumosError`s. The message is the one the CLI
//! prints after `error: ` (the error and its causes, joined by `: `).

use pyo3::prelude::*;

/// Which exception an [`Error`] becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A trace, model or network file that cannot be read or processed;
    /// files that are not one job. The CLI's exit code 1.
    Input,
    /// An option that cannot be valid (a zero degree, an unknown preset, a
    /// rank the job lacks). The CLI's exit code 2 (usage).
    Config,
    /// A file or folder that cannot be opened, listed or written.
    Io,
}

impl Kind {
    fn class_name(self) -> &'static str {
        match self {
            Kind::Input => "InputError",
            Kind::Config => "ConfigError",
            Kind::Io => "LumosIOError",
        }
    }
}

/// An error on its way to Python.
#[derive(Debug)]
pub struct Error {
    /// Its exception class.
    pub kind: Kind,
    /// Its message.
    pub message: String,
}

/// A result whose error becomes a `lumos.LumosError`.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `kind` saying `message`.
    pub fn new(kind: Kind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// A configuration error.
    pub fn config(message: impl Into<String>) -> Error {
        Error::new(Kind::Config, message)
    }

    /// `e` and its causes as `kind`, in the CLI's words.
    pub fn from_chain(kind: Kind, e: &dyn std::error::Error) -> Error {
        Error::new(kind, chain(e))
    }

    /// The error with the CLI's `flag` (`--durations-from`), where a
    /// library message names it, named as the Python argument `arg`.
    pub fn naming(self, flag: &str, arg: &str) -> Error {
        let message = self
            .message
            .replace(&format!("{flag} "), &format!("{arg} "));
        Error { message, ..self }
    }
}

/// `e` and its causes joined by `: `, as the CLI (anyhow's `{:#}`) prints
/// them.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

impl From<lumos_trace::ReadError> for Error {
    fn from(e: lumos_trace::ReadError) -> Error {
        let kind = match e.kind {
            lumos_trace::ErrorKind::Io(_) | lumos_trace::ErrorKind::Vanished { .. } => Kind::Io,
            _ => Kind::Input,
        };
        Error::from_chain(kind, &e)
    }
}

impl From<lumos_store::StoreError> for Error {
    fn from(e: lumos_store::StoreError) -> Error {
        use lumos_store::Problem;
        let kind = match &e.problem {
            Problem::Io(_) | Problem::Write(_) => Kind::Io,
            Problem::Trace(t)
                if matches!(
                    t.kind,
                    lumos_trace::ErrorKind::Io(_) | lumos_trace::ErrorKind::Vanished { .. }
                ) =>
            {
                Kind::Io
            }
            _ => Kind::Input,
        };
        // The store's message already holds its cause's (a trace's or a
        // write's error naming its file, an I/O error's text), as the CLI
        // prints it: the cause is not repeated after it.
        let message = match &e.problem {
            Problem::Trace(t) => chain(t.as_ref()),
            Problem::Write(w) => chain(w.as_ref()),
            _ => e.to_string(),
        };
        Error::new(kind, message)
    }
}

impl From<lumos_store::InputError> for Error {
    fn from(e: lumos_store::InputError) -> Error {
        match e {
            lumos_store::InputError::Trace(e) => e.into(),
            lumos_store::InputError::Store(e) => e.into(),
            e @ (lumos_store::InputError::SameRank { .. }
            | lumos_store::InputError::UnknownRank(_)) => Error::new(Kind::Input, e.to_string()),
        }
    }
}

impl From<lumos_report::ReportError> for Error {
    fn from(e: lumos_report::ReportError) -> Error {
        let kind = match e {
            lumos_report::ReportError::RankNotInJob { .. } => Kind::Config,
            // A kernel speed-up that selects nothing, as the CLI's usage error.
            lumos_report::ReportError::Predict(ref p) if p.is_usage() => Kind::Config,
            // The reader's own mapping (a file that cannot be opened is Io).
            lumos_report::ReportError::Read(e) => return e.into(),
            // The store's mapping, as for a file read alone.
            lumos_report::ReportError::Input(e) => return e.into(),
            _ => Kind::Input,
        };
        Error::from_chain(kind, &e)
    }
}

impl From<lumos_graph::JobError> for Error {
    fn from(e: lumos_graph::JobError) -> Error {
        Error::from_chain(Kind::Input, &e)
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        Python::attach(|py| {
            let class = py
                .import("lumos.errors")
                .and_then(|m| m.getattr(e.kind.class_name()));
            match class.and_then(|c| c.call1((e.message.clone(),))) {
                Ok(exc) => PyErr::from_value(exc),
                // The pure-Python half is missing (the extension imported
                // alone): still an exception with the message.
                Err(_) => pyo3::exceptions::PyRuntimeError::new_err(e.message),
            }
        })
    }
}
