//! Paths to trace files, and reading them (or building a job's ranks) in
//! parallel, as the CLI's `inputs` does, with progress in bytes read.

use std::path::{Path, PathBuf};

use lumos_graph::RankInput;
use lumos_predict::{Candidates, Discovered};
use lumos_report::InputWarnings;
use lumos_store::{MemoryGuard, ReadFor};
use lumos_trace::Trace;
use pyo3::exceptions::{PyUserWarning, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::errors::{Error, Kind, Result};
use crate::progress::Progress;

/// Refuses `dir`, the argument `arg` names as the directory to write into
/// (created if needed), when it cannot be one: it, or a folder above it, is
/// there and is not a directory. A `ConfigError` with the words of the
/// CLI's usage error (its `inputs::output_dir`; both ask
/// [`lumos_trace::not_a_directory`]), where writing into it would fail
/// with the bare "File exists (os error 17)".
pub fn output_dir(dir: &Path, arg: &str) -> Result<()> {
    match lumos_trace::not_a_directory(dir) {
        Some(what) => Err(Error::config(format!(
            "{arg} {}: {what}; {arg} names the directory to write into (created if needed)",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// Expands directories (sub-folders included, in natural order) into
/// their trace files, and with `lgraph` their compact graphs too (as the
/// CLI's commands that read them), with the CLI's messages; a
/// directory of no trace but predicted timelines stands for the predicted
/// job ([`lumos_report::predicted_job_under`]). One file given twice (two
/// spellings, a link, a folder and a file in it) is a `ConfigError`, the
/// CLI's usage error ([`lumos_trace::given_once`]): it would be read and
/// counted twice.
///
/// Files a directory leaves out whose names look like traces (`rank3.gz`,
/// `rank3.JSON`) are named in a `UserWarning`, the CLI's warning
/// ([`lumos_trace::left_out_warning`]), raised once the paths are listed.
pub fn expand(py: Python<'_>, paths: &[PathBuf], lgraph: bool) -> PyResult<Vec<PathBuf>> {
    let (files, warnings) = py.detach(|| expand_noting(paths, lgraph))?;
    for w in warnings {
        let category = py.get_type::<PyUserWarning>();
        let message = std::ffi::CString::new(w.replace('\0', "\\0"))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        PyErr::warn(py, &category, &message, 1)?;
    }
    Ok(files)
}

/// [`expand`], with the warnings it raises as text.
fn expand_noting(paths: &[PathBuf], lgraph: bool) -> Result<(Vec<PathBuf>, Vec<String>)> {
    // Each file, and the argument that named it.
    let mut out: Vec<(PathBuf, &Path)> = Vec::new();
    let mut warnings = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push((p.clone(), p));
            continue;
        }
        let accepts =
            |n: &str| lumos_trace::is_trace_file_name(n) || (lgraph && n.ends_with(".lgraph"));
        let io = |e: lumos_trace::DirError| Error::new(Kind::Io, e.to_string());
        let listed = lumos_trace::listed_under(p, &accepts).map_err(io)?;
        let read = if lgraph {
            "*.json, *.json.gz or *.lgraph"
        } else {
            "*.json or *.json.gz"
        };
        warnings.extend(lumos_trace::left_out_warning(p, &listed.left_out, read));
        let mut found = listed.files;
        if found.is_empty() {
            // `lumos predict --out`'s directory: the predicted job, as the
            // CLI takes it.
            found = lumos_report::predicted_job_under(p).map_err(io)?;
        }
        if found.is_empty() {
            let kinds = if lgraph {
                "*.json, *.json.gz, *.lgraph"
            } else {
                "*.json, *.json.gz"
            };
            return Err(Error::new(
                Kind::Input,
                lumos_trace::no_trace_files(p, kinds, &accepts),
            ));
        }
        out.extend(found.into_iter().map(|f| (f, p.as_path())));
    }
    // An empty list is the caller's mistake, as a command without its
    // trace argument is the CLI's usage error (exit 2).
    if out.is_empty() {
        return Err(Error::config("no input traces given"));
    }
    lumos_trace::given_once(out.iter().map(|(f, p)| (f.as_path(), *p)))
        .map_err(|e| Error::config(e.to_string()))?;
    Ok((out.into_iter().map(|(f, _)| f).collect(), warnings))
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

/// `work` on every file in parallel, shown as the reading phase of their
/// bytes; each result keeps its own error, in the order given. Once the
/// caller cancels, the files not started give an error that
/// [`crate::progress::run`] replaces by the cancellation's own.
///
/// A [`MemoryGuard`] stops starting files once the process holds most of
/// the memory available when it began (what was read is held until the
/// caller is done with every file): its error is then the only result.
fn each_file<T: Send>(
    files: &[PathBuf],
    p: &Progress,
    purpose: ReadFor,
    work: impl Fn(&Path) -> Result<T> + Sync,
) -> Vec<Result<T>> {
    match guard(files, purpose) {
        Ok(g) => each_file_under(files, p, &g, work),
        Err(e) => vec![Err(e)],
    }
}

/// The [`MemoryGuard`] for reading `files` for `purpose`; an unreadable
/// `LUMOS_MEMORY_LIMIT` is a `ConfigError`.
pub fn guard(files: &[PathBuf], purpose: ReadFor) -> Result<MemoryGuard> {
    MemoryGuard::new(files.len(), purpose).map_err(|e| Error::config(e.to_string()))
}

/// [`each_file`] under `guard`, which the caller keeps.
fn each_file_under<T: Send>(
    files: &[PathBuf],
    p: &Progress,
    guard: &MemoryGuard,
    work: impl Fn(&Path) -> Result<T> + Sync,
) -> Vec<Result<T>> {
    p.phase("reading", files.iter().map(|f| file_len(f)).sum());
    let read: Vec<Result<T>> = (files.par_iter())
        .map(|f| {
            let r = guard.read(|| one_file(f, p, &work));
            r.unwrap_or_else(|| Err(Error::new(Kind::Input, "not read")))
        })
        .collect();
    match guard.check() {
        Ok(()) => read,
        Err(e) => vec![Err(Error::new(Kind::Input, e.to_string()))],
    }
}

/// [`each_file`] for results used one at a time, in the order given, that
/// need not all be held: the files are worked on a window at a time (one
/// per thread), each window's results going to `then` before the next
/// starts. Stops at the first error, reading no more, and, as
/// [`each_file`], once the process holds most of the memory available.
fn each_file_then<T: Send>(
    files: &[PathBuf],
    p: &Progress,
    purpose: ReadFor,
    work: impl Fn(&Path) -> Result<T> + Sync,
    mut then: impl FnMut(T),
) -> Result<()> {
    let guard = guard(files, purpose)?;
    p.phase("reading", files.iter().map(|f| file_len(f)).sum());
    let mut started = 0;
    for window in files.chunks(rayon::current_num_threads().max(1)) {
        started += window.len();
        let done: Vec<Option<Result<T>>> = (window.par_iter())
            .map(|f| guard.read(|| one_file(f, p, &work)))
            .collect();
        for r in done {
            // No file after this window's is started.
            let r = r.ok_or_else(|| {
                let e = guard.not_read(files.len() - started);
                Error::new(Kind::Input, e.to_string())
            })?;
            then(r?);
        }
    }
    Ok(())
}

/// `work` on `f`, its bytes added to the reading phase; an error once the
/// caller cancelled.
fn one_file<T>(f: &Path, p: &Progress, work: impl Fn(&Path) -> Result<T>) -> Result<T> {
    if p.cancelled() {
        return Err(Error::new(Kind::Input, "cancelled"));
    }
    let r = work(f);
    p.add(file_len(f));
    r
}

/// Reads every trace in parallel; the first that cannot be read, in the
/// order given, is the error.
pub fn read_all(files: &[PathBuf], p: &Progress) -> Result<Vec<Trace>> {
    each_file(files, p, ReadFor::Job, |f| {
        lumos_trace::read_path(f).map_err(Error::from)
    })
    .into_iter()
    .collect()
}

/// Loads every file (traces or `.lgraph` files) as a prediction's input
/// in parallel ([`lumos_report::prediction_input`], as `lumos predict`
/// does: each trace read straight into its graph's build), with what the
/// files that warned warned; the first file that failed, in the order
/// given, is the error.
pub fn prediction_inputs(
    files: &[PathBuf],
    p: &Progress,
) -> Result<(Vec<lumos_predict::Input>, Vec<InputWarnings>)> {
    let read: Vec<_> = each_file(files, p, ReadFor::Prediction, |f| {
        lumos_report::prediction_input(f).map_err(Error::from)
    })
    .into_iter()
    .collect::<Result<_>>()?;
    let mut warned = Vec::new();
    let inputs = (read.into_iter())
        .map(|f| {
            let (input, _, w) = f.into_parts();
            warned.extend(w);
            input
        })
        .collect();
    Ok((inputs, warned))
}

/// [`prediction_inputs`], each rank discovered as it is read, keeping one
/// graph per pipeline stage ([`lumos_predict::Candidates`], as `lumos
/// predict` loads them): a whole job's files are never held at once.
pub fn prediction_candidates(
    files: &[PathBuf],
    p: &Progress,
) -> Result<(Candidates, Vec<InputWarnings>)> {
    let load = |f: &Path| {
        lumos_report::prediction_input(f).map(|f| {
            let (input, _, warned) = f.into_parts();
            (warned, Discovered::new(input))
        })
    };
    let mut candidates = Candidates::new();
    let mut warned = Vec::new();
    each_file_then(
        files,
        p,
        ReadFor::Prediction,
        |f| load(f).map_err(Error::from),
        |(w, d)| {
            warned.extend(w);
            candidates.push(d)
        },
    )?;
    Ok((candidates, warned))
}

/// Every input prepared in parallel ([`lumos_store::prepare`]: each
/// trace built into its rank and dropped, an `.lgraph` file read back),
/// ready for [`lumos_store::sort`], or the first that could not be read,
/// in order: the package raises it, so nothing is built or copied to tell
/// whether the rest are one job. `guard` ([`guard`]) stops the read once
/// the ranks would outgrow the machine.
pub fn prepare_every(
    files: &[PathBuf],
    p: &Progress,
    guard: &MemoryGuard,
) -> Result<Vec<std::result::Result<lumos_store::Prepared, std::convert::Infallible>>> {
    let prepare = |f: &Path| lumos_store::prepare(f).map_err(Error::from);
    let read: Vec<lumos_store::Prepared> = each_file_under(files, p, guard, prepare)
        .into_iter()
        .collect::<Result<_>>()?;
    Ok(read.into_iter().map(Ok).collect())
}

/// Reads and builds every file of a job in parallel (an `.lgraph` file
/// read back), each trace built as it is read
/// ([`lumos_store::read_rank_input`]); the first that failed, in the
/// order given, is the error.
pub fn load_ranks(files: &[PathBuf], p: &Progress) -> Result<Vec<RankInput>> {
    each_file(files, p, ReadFor::Job, |f| {
        lumos_store::read_rank_input(f).map_err(Error::from)
    })
    .into_iter()
    .collect()
}
