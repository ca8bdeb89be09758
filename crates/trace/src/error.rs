//! Errors that stop a file from being read. Problems that do not stop it are
//! counted in [`crate::Skipped`] or listed in [`crate::Trace::warnings`].

use std::path::{Path, PathBuf};

/// A file that could not be read as a trace. Display names the file and, where
/// it applies, the byte offset (in the uncompressed JSON) or event index.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct ReadError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl ReadError {
    pub(crate) fn new(path: &Path, kind: ErrorKind) -> ReadError {
        ReadError {
            path: path.to_owned(),
            kind,
        }
    }
}

/// A file that could not be read, in the CLI's words: `no such file`
/// where it is not there, else `cannot read file: ` and [`io_words`].
fn read_failure(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        "no such file".to_owned()
    } else {
        format!("cannot read file: {}", io_words(e))
    }
}

/// An I/O error as a person reads it: the system's words without their
/// code, lower case ("permission denied", not "Permission denied (os
/// error 13)"), and "no such file" for a path that is not there. The
/// code is for a program, which has [`std::io::Error::kind`]; the
/// message names the file beside it.
pub fn io_words(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        return "no such file".to_owned();
    }
    let text = e.to_string();
    let text = match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => &text[..i],
        _ => &text[..],
    };
    // "Permission denied" reads as a sentence's start; an acronym
    // ("EOF while ...") keeps its capitals.
    let mut c = text.chars();
    match (c.next(), c.clone().next()) {
        (Some(first), Some(next)) if next.is_lowercase() => first.to_lowercase().chain(c).collect(),
        _ => text.to_owned(),
    }
}

/// What went wrong while reading a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file could not be opened or read.
    #[error("{}", read_failure(.0))]
    Io(#[source] std::io::Error),
    /// A file that the listing of a folder given found, gone when it
    /// was opened: removed or renamed since (by another process, while
    /// lumos read the folder's other files).
    #[error(
        "vanished: listed in the folder {} but gone when it was opened (removed or renamed \
         while lumos ran?)",
        folder.display()
    )]
    Vanished {
        /// The folder, as given, whose listing found it.
        folder: std::path::PathBuf,
    },
    /// The gzip stream is corrupt or ends early.
    #[error("invalid or truncated gzip data after {uncompressed} uncompressed bytes: {source}")]
    Gzip {
        /// Uncompressed bytes produced before the failure.
        uncompressed: u64,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },
    /// The file has no content.
    #[error("file is empty")]
    Empty,
    /// The file has bytes, but only whitespace: no JSON value at all.
    #[error("file holds only whitespace ({bytes} bytes), no JSON")]
    Blank {
        /// Uncompressed size.
        bytes: u64,
    },
    /// The JSON ends before the top-level value is complete.
    #[error("truncated JSON: input ends at byte {offset} {context}")]
    Truncated {
        /// Uncompressed size.
        offset: u64,
        /// Where it was, e.g. "inside traceEvents after 1200 events".
        context: String,
    },
    /// The JSON is malformed.
    #[error("invalid JSON at byte {offset}{}: {message}", event.map(|i| format!(" (traceEvents[{i}])")).unwrap_or_default())]
    Syntax {
        /// Byte offset in the uncompressed JSON.
        offset: u64,
        /// Index in `traceEvents`, if inside an event.
        event: Option<u64>,
        /// What is wrong.
        message: String,
    },
    /// One `traceEvents` element or top-level member is larger than
    /// `limit` bytes ([`crate::MAX_ITEM_BYTES`]).
    #[error("{} at byte {offset} is larger than {}, the most lumos reads of one value{}",
        event.map_or("a top-level member".to_string(), |i| format!("traceEvents[{i}]")),
        size(*limit),
        if event.is_some() { " (a damaged or hostile file: Kineto's events are a few KB)" } else { "" })]
    TooLarge {
        /// Byte offset of the value's start in the uncompressed JSON.
        offset: u64,
        /// Index in `traceEvents`, if it is an event.
        event: Option<u64>,
        /// The limit.
        limit: u64,
    },
    /// The distinct names, categories and texts read so far pass `limit`
    /// bytes in all (a little gzip inflating to many distinct names of
    /// up to [`crate::MAX_TEXT_BYTES`] each).
    #[error("its distinct names, categories and texts pass {} by traceEvents[{event}], the most lumos keeps \
        (a damaged or hostile file: real traces hold a few hundred KB of them)", size(*limit))]
    TooManyTexts {
        /// Index in `traceEvents` of the event that passed the limit.
        event: u64,
        /// The limit.
        limit: u64,
    },
    /// Valid JSON that is not a trace.
    #[error("not a Kineto/Chrome trace: {0}")]
    NotATrace(String),
    /// A timeline lumos merged of several ranks (`lumos replay --merge`,
    /// `lumos predict --merge`), each rank a process `rank N`: lumos
    /// reads one rank per file. Known by what lumos wrote into it
    /// (`distributedInfo.merged_ranks`, or the `traceName` it gave such
    /// files before that).
    #[error(
        "a timeline lumos merged of {} into one file (--merge), each rank a process \"rank N\"; \
         lumos reads one rank per file: give it the traces the timeline came from, or the \
         per-rank timelines that --out writes without --merge",
        ranks.map_or("several ranks".to_owned(), |n| format!("{n} rank{}", if n == 1 { "" } else { "s" }))
    )]
    MergedTimeline {
        /// The ranks it holds, when it lists them.
        ranks: Option<usize>,
    },
    /// Events that start far from the rest of the trace (a day or more,
    /// and a hundred times the span of the rest: a `ts` of 0 among
    /// absolute times), which would stretch its window over the gap.
    #[error("{detail}")]
    OutlyingStarts {
        /// How many events start far from the rest.
        events: u64,
        /// The first of them, as an index in `traceEvents`.
        first_index: u64,
        /// What the message says: where they start, the first of them.
        detail: String,
    },
    /// Not JSON but a format recognised by its first bytes: an archive,
    /// another compression, a web page, binary data.
    #[error("is {what}; {advice}")]
    Format {
        /// What the file is: "a tar archive", "zstd-compressed".
        what: String,
        /// What to do: "extract the trace from it first".
        advice: &'static str,
    },
}

/// `bytes` in the largest binary unit that divides it: "1 GiB", "4 KiB".
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_said_without_their_code() {
        let missing = std::fs::File::open("/nonexistent/lumos-io-words").unwrap_err();
        assert_eq!(io_words(&missing), "no such file");
        assert_eq!(read_failure(&missing), "no such file");
        let denied = std::io::Error::from_raw_os_error(13);
        assert!(denied.to_string().ends_with("(os error 13)"), "{denied}");
        assert_eq!(io_words(&denied), "permission denied");
        assert_eq!(read_failure(&denied), "cannot read file: permission denied");
        let other = std::io::Error::other("Gzip header bad");
        assert_eq!(io_words(&other), "gzip header bad");
        let acronym = std::io::Error::other("EOF in the header");
        assert_eq!(io_words(&acronym), "EOF in the header");
    }
}
