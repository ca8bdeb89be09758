//! Why an `.lgraph` file could not be read or written.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use lumos_trace::{ReadError, WriteError};

/// An `.lgraph` file that could not be read or written, or a trace that
/// could not be ingested. Display names the file and the problem.
#[derive(Debug)]
pub struct StoreError {
    /// The file concerned (the `.lgraph` file, or the trace being ingested).
    pub path: PathBuf,
    /// What went wrong.
    pub problem: Problem,
}

/// What went wrong with a file.
#[derive(Debug)]
#[non_exhaustive]
pub enum Problem {
    /// Opening or reading the file failed.
    Io(io::Error),
    /// The file does not start like an `.lgraph` file.
    NotLgraph,
    /// The file ends before its sections do.
    Truncated,
    /// The file was written by a format version this build does not read.
    Version {
        /// The version in the file.
        found: u32,
        /// The lumos version that wrote it, as recorded.
        writer: String,
    },
    /// A section is damaged: a checksum that does not match, a length
    /// beyond the file, a value that cannot be decoded.
    Corrupt(String),
    /// The trace to ingest could not be read.
    Trace(Box<ReadError>),
    /// The output file could not be written.
    Write(Box<WriteError>),
}

impl StoreError {
    pub(crate) fn new(path: &Path, problem: Problem) -> StoreError {
        StoreError {
            path: path.to_owned(),
            problem,
        }
    }

    /// True when the file was written by another format version (re-run
    /// `lumos ingest` on its trace).
    pub fn is_version(&self) -> bool {
        matches!(self.problem, Problem::Version { .. })
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.problem {
            // The system's words without their code, as a trace's read
            // error says them ("no such file", not "(os error 2)").
            Problem::Io(e) => write!(f, "{path}: {}", lumos_trace::io_words(e)),
            Problem::NotLgraph => write!(f, "{path}: not an .lgraph file (no lumos graph header)"),
            Problem::Truncated => write!(f, "{path}: truncated .lgraph file (it ends early)"),
            Problem::Version { found, writer } => write!(
                f,
                "{path}: .lgraph format version {found} (written by lumos {writer}); this lumos \
                 ({}) reads version {}: ingest the trace again",
                env!("CARGO_PKG_VERSION"),
                crate::format::FORMAT_VERSION
            ),
            Problem::Corrupt(what) => write!(f, "{path}: corrupt .lgraph file: {what}"),
            // Both name their own file.
            Problem::Trace(e) => write!(f, "{e}"),
            Problem::Write(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.problem {
            // Display already ends with the I/O error's text: given as the
            // cause too, a chain (`{:#}`, as the CLI prints) said it twice
            // ("x.lgraph: No such file or directory (os error 2): No such
            // file or directory (os error 2)"). A trace's `ReadError` gives
            // none either.
            Problem::Io(_) => None,
            Problem::Trace(e) => Some(e.as_ref()),
            Problem::Write(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}
