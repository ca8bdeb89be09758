//! Paths to trace files, and reading them (or building a job's ranks) in
//! parallel, as the CLI's `inputs` does, with progress in bytes read.

use std::path::{Path, PathBuf};

use lumos_graph::RankInput;
use lumos_trace::{ReadError, Trace};
use rayon::prelude::*;

use crate::errors::{Error, Kind, Result};
use crate::progress::Progress;

/// Expands directories (sub-folders included, sorted) into their trace
/// files, and with `lgraph` their compact graphs too (as the CLI's
/// commands that read them), with the CLI's messages.
pub fn expand(paths: &[PathBuf], lgraph: bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let found = lumos_trace::trace_files_under(p, &|n| {
            lumos_trace::is_trace_file_name(n) || (lgraph && n.ends_with(".lgraph"))
        })
        .map_err(|e| Error::new(Kind::Io, e.to_string()))?;
        if found.is_empty() {
            let kinds = if lgraph {
                "*.json, *.json.gz, *.lgraph"
            } else {
                "*.json, *.json.gz"
            };
            return Err(Error::new(
                Kind::Input,
                format!(
                    "{}: directory has no trace files ({kinds}), sub-folders included",
                    p.display()
                ),
            ));
        }
        out.extend(found);
    }
    if out.is_empty() {
        return Err(Error::new(Kind::Input, "no input traces given"));
    }
    Ok(out)
}

fn file_len(f: &Path) -> u64 {
    std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)
}

/// `work` on the one file `f`, read as it goes (the streamed replay and
/// inspection), shown as the reading phase of its bytes, as
/// [`read_all`] shows a file.
pub fn reading_one<T>(f: &Path, p: &Progress, work: impl FnOnce() -> T) -> T {
    let len = file_len(f);
    p.phase("reading", len);
    let out = work();
    p.add(len);
    out
}

/// What a file left unread because the caller cancelled gives: an error
/// (of an empty file) that [`crate::progress::run`] replaces by the
/// cancellation's own.
fn cancelled(f: &Path) -> std::result::Result<Trace, ReadError> {
    lumos_trace::read_bytes(f, b"")
}

/// Reads every file in parallel; each result keeps its own error.
pub fn read_all(files: &[PathBuf], p: &Progress) -> Vec<std::result::Result<Trace, ReadError>> {
    p.phase("reading", files.iter().map(|f| file_len(f)).sum());
    files
        .par_iter()
        .map(|f| {
            if p.cancelled() {
                return cancelled(f);
            }
            let r = lumos_trace::read_path(f);
            p.add(file_len(f));
            r
        })
        .collect()
}

/// The first read error, or every trace.
pub fn all_ok(read: Vec<std::result::Result<Trace, ReadError>>) -> Result<Vec<Trace>> {
    read.into_iter().map(|r| r.map_err(Error::from)).collect()
}

/// Loads every file (traces or `.lgraph` files) as a prediction's input
/// in parallel ([`lumos_report::prediction_input`], as `lumos predict`
/// does: each trace read straight into its graph's build); the first file
/// that failed, in the order given, is the error.
pub fn prediction_inputs(files: &[PathBuf], p: &Progress) -> Result<Vec<lumos_predict::Input>> {
    p.phase("reading", files.iter().map(|f| file_len(f)).sum());
    let loaded: Vec<Result<lumos_predict::Input>> = files
        .par_iter()
        .map(|f| {
            if p.cancelled() {
                // Replaced by the cancellation's own error.
                return Err(Error::new(Kind::Input, "cancelled"));
            }
            let r = lumos_report::prediction_input(f);
            p.add(file_len(f));
            r.map(|(input, _)| input).map_err(Error::from)
        })
        .collect();
    loaded.into_iter().collect()
}

/// Reads every file in parallel as [`lumos_store::prepare`] does (each
/// trace built into its rank and dropped, an `.lgraph` file read back),
/// for [`lumos_store::sort`]; each result keeps its own error.
pub fn prepare_all(files: &[PathBuf], p: &Progress) -> Vec<Result<lumos_store::Prepared>> {
    p.phase("reading", files.iter().map(|f| file_len(f)).sum());
    files
        .par_iter()
        .map(|f| {
            if p.cancelled() {
                // Replaced by the cancellation's own error.
                return Err(Error::new(Kind::Input, "cancelled"));
            }
            let r = lumos_store::prepare(f).map_err(Error::from);
            p.add(file_len(f));
            r
        })
        .collect()
}

/// Every input prepared ([`prepare_all`]), ready for [`lumos_store::sort`],
/// or the first that could not be read, in order: the package raises it,
/// so nothing is built or copied to tell whether the rest are one job.
pub fn prepare_every(
    files: &[PathBuf],
    p: &Progress,
) -> Result<Vec<std::result::Result<lumos_store::Prepared, std::convert::Infallible>>> {
    let read: Vec<lumos_store::Prepared> =
        prepare_all(files, p).into_iter().collect::<Result<_>>()?;
    Ok(read.into_iter().map(Ok).collect())
}

/// Reads and builds every file of a job in parallel (an `.lgraph` file
/// read back), dropping each trace once its graph is built (one trace per
/// thread in memory at a time).
pub fn load_ranks(files: &[PathBuf], p: &Progress) -> Result<Vec<RankInput>> {
    p.phase("reading", files.iter().map(|f| file_len(f)).sum());
    files
        .par_iter()
        .map(|f| {
            if p.cancelled() {
                return cancelled(f)
                    .map(|t| RankInput::from_trace(&t))
                    .map_err(Error::from);
            }
            let r = lumos_store::read_rank_input(f).map_err(Error::from);
            p.add(file_len(f));
            r
        })
        .collect::<Vec<_>>()
        .into_iter()
        // The first that failed, in the order given.
        .collect()
}
