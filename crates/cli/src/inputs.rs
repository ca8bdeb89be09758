//! Turning command-line paths into trace files, and reading them (and
//! building the ranks of a job) in parallel.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use lumos_graph::{RankInput, Unreadable};
use lumos_trace::{ReadError, Trace};
use rayon::prelude::*;

use crate::output;

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

/// Reads every file in parallel with a progress bar on stderr. Each result
/// keeps its own error so one bad file does not hide the others.
pub fn read_all(files: &[PathBuf]) -> Vec<Result<Trace, ReadError>> {
    let total: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message("reading");
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
/// Files that cannot be read are reported and returned apart (the job
/// names their ranks as unreadable).
pub fn load_ranks(files: &[PathBuf]) -> (Vec<RankInput>, Vec<Unreadable>) {
    let results: Vec<Result<RankInput, ReadError>> = files
        .par_iter()
        .map(|f| lumos_trace::read_path(f).map(|t| RankInput::from_trace(&t)))
        .collect();
    let mut unreadable = Vec::new();
    let mut out = Vec::new();
    for r in results {
        match r {
            Ok(l) => out.push(l),
            Err(e) => {
                output::error(&e);
                unreadable.push(Unreadable::of(&e));
            }
        }
    }
    (out, unreadable)
}

/// Turns traces already read into the ranks of a job, in parallel,
/// dropping each trace once its graph is built; read errors are printed
/// and returned apart.
pub fn ranks_from_read(read: Vec<Result<Trace, ReadError>>) -> (Vec<RankInput>, Vec<Unreadable>) {
    let mut unreadable = Vec::new();
    let mut traces = Vec::new();
    for r in read {
        match r {
            Ok(t) => traces.push(t),
            Err(e) => {
                output::error(&e);
                unreadable.push(Unreadable::of(&e));
            }
        }
    }
    let ranks = traces
        .into_par_iter()
        .map(|t| RankInput::from_trace(&t))
        .collect();
    (ranks, unreadable)
}
