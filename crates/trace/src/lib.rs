//! Reads PyTorch profiler traces (Kineto / Chrome trace JSON) fast, and
//! writes them.
//!
//! [`read_path`] takes a `.json` or gzip file (detected by content; gzip is
//! inflated on a second thread), splits the JSON into top-level members and
//! `traceEvents` elements without building a document (a 64-bytes-at-a-time
//! bracket scan), parses the elements on the rayon pool in chunks of 1 MB
//! with a parser specialized for events, and folds them in file order into
//! a [`Trace`]: kept [`Event`]s with exact integer-nanosecond times and
//! interned names, [`Flow`]s, [`TraceMeta`] (devices, rank, process groups),
//! and a count of everything skipped with the reason ([`Skipped`]). Reading,
//! parsing and folding of successive chunks overlap; memory stays at a few
//! chunks plus the result. See docs/PERFORMANCE.md for measurements.
//!
//! Every schema era is accepted: legacy categories (`Operator`, `Runtime`,
//! `Kernel`, ...), string pids and tids, integer and fractional microsecond
//! timestamps, `ac2g` / `async_cpu_to_gpu` / `async` flows.
//!
//! Failures name the file and, where it applies, the byte offset in the
//! uncompressed JSON and the event index ([`ReadError`]). Malformed input of
//! any kind gives an error, never a panic (see the property tests and the
//! CLI's fuzzer), and no JSON value may nest deeper than [`MAX_NESTING`].
//! One exception, for speed: an event skipped for its category
//! (`python_function`, or a category the model does not know) is read only
//! up to its `cat`; what follows is checked only for its structure
//! (strings closed, brackets matched), so a malformed value there is not
//! reported.
//!
//! Lenient where the format or common writers are: a UTF-8 byte order
//! mark; `NaN` and `Infinity` (read as absent, counted in
//! [`Skipped::non_finite`]); invalid UTF-8 and `\uXXXX` escapes of lone
//! surrogates (replaced by U+FFFD, counted together in
//! [`Skipped::invalid_utf8`]); the JSON array form (`[{...}, {...}`) with
//! or without its closing `]`; trailing commas; concatenated gzip members
//! and zero padding after them. A member an event writes twice keeps its
//! last value, as JSON readers do, the events counted
//! ([`Skipped::repeated_members`]). Keys are compared as JSON has them, after
//! their escapes (`"trace\u0045vents"` is `traceEvents`, at the top level
//! and in events alike). Archives, other compressions, web pages
//! and binary files are named as such ([`ErrorKind::Format`]).
//!
//! `Input Dims` are parsed once, into [`InputDims`] shared by every event
//! with the same list; a malformed one is dropped from its event and
//! counted ([`Skipped::bad_args`]), as is an id argument (`correlation`,
//! `External id`, `stream`, `device`) that is not an integer in range.
//! Begin/end (`B`/`E`) duration events are valid but not read: skipped
//! under [`SkipReason::BeginEnd`], with a warning of their own, not
//! counted as malformed; so are the format's other phases lumos does not
//! read ([`SkipReason::OtherPhase`]).
//!
//! [`KinetoWriter`] is the other direction, for everything lumos writes
//! (synthetic traces, replayed timelines): typed members and events in,
//! Kineto JSON out, with the same integer-nanosecond times the reader
//! gives back. [`write_gz_atomic`] writes files that appear whole or not
//! at all.
#![deny(missing_docs)]

mod error;
mod find;
mod gzip;
mod meta;
mod model;
mod outliers;
mod parse;
mod read;
mod repair;
mod shapes;
mod sniff;
mod split;
mod tree;
mod write;

/// How deep arrays and objects may nest in any value of a trace: a
/// `traceEvents` element or a top-level member's value, counting its own
/// brackets. Deeper is an error ("nesting deeper than 128 levels"), found
/// by the splitter before any parser sees the value, so no input can
/// exhaust the stack. Kineto's events nest 3 or 4 levels.
pub const MAX_NESTING: usize = 128;

/// The largest `traceEvents` element or top-level member, in bytes of
/// JSON, that lumos reads. Each is held whole while it is parsed, so a
/// few MB of gzip that inflate to one giant value (a decompression bomb)
/// would otherwise take every byte of memory; larger is an error
/// ([`ErrorKind::TooLarge`]), found before two to three times this is
/// held (the buffer that holds it and the chunks before it, which large
/// values before it may have grown). Kineto's elements are at most a few
/// KB.
pub const MAX_ITEM_BYTES: usize = 1 << 30;

/// The longest name, category, thread name or argument text lumos keeps,
/// in bytes: longer ones are cut to it at a character boundary, and
/// counted in a warning. Each distinct text is kept, so many giant ones
/// inflated from a little gzip could otherwise fill memory; the longest
/// kernel names are a few KB. (Lists, `Input Dims`, `Input type` and
/// `Process Group Ranks`, which a cut would break, are kept whole up to
/// 1 MiB and dropped as malformed over it.)
pub const MAX_TEXT_BYTES: usize = 64 << 10;

pub use error::{io_words, ErrorKind, ReadError};
pub use find::{
    edit_file_name, given_once, is_lumos_output, is_predicted_timeline, is_trace_file_name,
    left_out_warning, listed_under, looks_like_trace_name, no_trace_files,
    predicted_timelines_under, trace_files_under, DirError, GivenTwice, Listed, MAX_DIR_DEPTH,
};
pub use model::*;
pub use read::{
    rank_from_file_name, read_bytes, read_bytes_merged, read_bytes_with_chunk,
    read_bytes_with_limits, read_bytes_with_list_budget, read_bytes_with_text_budget, read_path,
    read_path_into, read_path_with_progress, EventSink,
};
pub use shapes::{Input, InputDims, InputDimsSet};
pub use write::{
    create_output_dir, not_a_directory, output_words, write_atomic, write_gz_atomic,
    CollectiveFields, DeviceProperties, DistributedInfo, Fields, KinetoWriter, Layout, ObjectList,
    PgConfig, WriteError,
};
