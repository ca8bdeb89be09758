//! Turning command-line paths into trace files, and reading them (and
//! building the ranks of a job) in parallel.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use lumos_graph::RankInput;
use lumos_trace::{ReadError, Trace};
use rayon::prelude::*;

use crate::{output, progress};

/// True for names that look like trace files.
fn is_trace_name(p: &Path) -> bool {
    let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    n.ends_with(".json") || n.ends_with(".json.gz") || n.ends_with(".gz")
}

/// Expands directories (one level, sorted) into their trace files.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("{}: cannot list directory", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && is_trace_name(f))
                .collect();
            if found.is_empty() {
                bail!(
                    "{}: directory has no trace files (*.json, *.json.gz)",
                    p.display()
                );
            }
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    if out.is_empty() {
        bail!("no input traces given");
    }
    Ok(out)
}

/// Reads every file in parallel with a progress bar on stderr (when it is
/// a terminal). Each result keeps its own error so one bad file does not
/// hide the others.
pub fn read_all(files: &[PathBuf]) -> Vec<Result<Trace, ReadError>> {
    let total: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let bar = progress::bytes(total, "reading");
    let out = files
        .par_iter()
        .map(|f| {
            let r = lumos_trace::read_path(f);
            bar.inc(std::fs::metadata(f).map(|m| m.len()).unwrap_or(0));
            r
        })
        .collect();
    bar.finish_and_clear();
    out
}

/// Reads and builds every file of a job in parallel, dropping each trace as
/// soon as its graph is built (memory: one trace per thread at a time).
/// Files that cannot be read are reported and left out (their ranks then
/// count as missing); the flag says whether all were read.
pub fn load_ranks(files: &[PathBuf]) -> (Vec<RankInput>, bool) {
    let bar = progress::count(files.len() as u64, "reading ranks");
    let results: Vec<Result<RankInput, ReadError>> = files
        .par_iter()
        .map(|f| {
            let r = lumos_trace::read_path(f).map(|t| RankInput::from_trace(&t));
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    let mut ok = true;
    let mut out = Vec::new();
    for r in results {
        match r {
            Ok(l) => out.push(l),
            Err(e) => {
                output::error(e);
                ok = false;
            }
        }
    }
    (out, ok)
}

/// Turns traces already read into the ranks of a job, in parallel,
/// dropping each trace once its graph is built; read errors are printed,
/// and the flag says whether there were none.
pub fn ranks_from_read(read: Vec<Result<Trace, ReadError>>) -> (Vec<RankInput>, bool) {
    let mut ok = true;
    let mut traces = Vec::new();
    for r in read {
        match r {
            Ok(t) => traces.push(t),
            Err(e) => {
                output::error(e);
                ok = false;
            }
        }
    }
    let bar = progress::count(traces.len() as u64, "building ranks");
    let ranks = traces
        .into_par_iter()
        .map(|t| {
            let r = RankInput::from_trace(&t);
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    (ranks, ok)
}
