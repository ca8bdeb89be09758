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
//! any kind gives an error, never a panic (see the property tests).
//!
//! `Input Dims` are parsed once, into [`InputDims`] shared by every event
//! with the same list; a malformed one is dropped from its event and
//! counted ([`Skipped::bad_args`]).
//!
//! [`KinetoWriter`] is the other direction, for everything lumos writes
//! (synthetic traces, replayed timelines): typed members and events in,
//! Kineto JSON out, with the same integer-nanosecond times the reader
//! gives back. [`write_gz_atomic`] writes files that appear whole or not
//! at all.
#![deny(missing_docs)]

mod error;
mod model;
mod parse;
mod read;
mod shapes;
mod split;
mod write;

pub use error::{ErrorKind, ReadError};
pub use model::*;
pub use read::{
    rank_from_file_name, read_bytes, read_bytes_with_chunk, read_path, read_path_with_progress,
};
pub use shapes::{Input, InputDims};
pub use write::{
    write_atomic, write_gz_atomic, DeviceProperties, DistributedInfo, Fields, KinetoWriter, Layout,
    PgConfig, WriteError,
};
