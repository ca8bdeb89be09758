//! Turning command-line paths into input files (traces, or compact
//! `.lgraph` graphs that `lumos ingest` made of them), and reading them
//! (and building the ranks of a job) in parallel.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use lumos_graph::RankInput;
use lumos_store::StoredRank;
use lumos_trace::{Trace, TraceMeta};
use rayon::prelude::*;

use crate::output;

/// True for names that look like trace files or compact graphs.
fn is_trace_name(p: &Path) -> bool {
    let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    n.ends_with(".json")
        || n.ends_with(".json.gz")
        || n.ends_with(".gz")
        || lumos_store::is_lgraph_path(p)
}

/// One input, read: a trace, or a rank read back from an `.lgraph` file,
/// which every command takes in place of the trace it was made from.
// Both are large, a few of them alive at a time: the size difference does
// not matter, and a boxed trace would only add a pointer hop.
#[allow(clippy::large_enum_variant)]
pub enum Loaded {
    /// A trace file.
    Trace(Trace),
    /// A compact graph file.
    Stored(StoredRank),
}

impl Loaded {
    /// The trace's metadata.
    pub fn meta(&self) -> &TraceMeta {
        match self {
            Loaded::Trace(t) => &t.meta,
            Loaded::Stored(s) => &s.facts.meta,
        }
    }

    /// The rank as the job functions take it, the trace dropped.
    pub fn into_rank(self) -> RankInput {
        match self {
            Loaded::Trace(t) => RankInput::from_trace(&t),
            Loaded::Stored(s) => s.into_input(),
        }
    }
}

/// True when `f` is a compact graph: named `.lgraph`, or starting with its
/// magic bytes.
pub fn is_lgraph(f: &Path) -> bool {
    if lumos_store::is_lgraph_path(f) {
        return true;
    }
    let mut head = [0u8; 8];
    std::fs::File::open(f)
        .and_then(|mut r| r.read_exact(&mut head))
        .is_ok_and(|()| lumos_store::has_magic(&head))
}

/// Reads one input file.
pub fn read_one(f: &Path) -> Result<Loaded> {
    if is_lgraph(f) {
        Ok(Loaded::Stored(lumos_store::read_stored(f)?))
    } else {
        Ok(Loaded::Trace(lumos_trace::read_path(f)?))
    }
}

/// Reads one input file as a rank of a job: a trace is read and built,
/// then dropped.
pub fn read_rank(f: &Path) -> Result<RankInput> {
    if is_lgraph(f) {
        Ok(lumos_store::read_rank(f)?)
    } else {
        Ok(RankInput::from_trace(&lumos_trace::read_path(f)?))
    }
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
                    "{}: directory has no trace files (*.json, *.json.gz, *.lgraph)",
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
pub fn read_all(files: &[PathBuf]) -> Vec<Result<Loaded>> {
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
            let r = read_one(f);
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
    let results: Vec<Result<RankInput>> = files.par_iter().map(|f| read_rank(f)).collect();
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
pub fn ranks_from_read(read: Vec<Result<Loaded>>) -> (Vec<RankInput>, bool) {
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
    let ranks = traces.into_par_iter().map(Loaded::into_rank).collect();
    (ranks, ok)
}
