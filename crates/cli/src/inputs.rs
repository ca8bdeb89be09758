//! Turning command-line paths into input files (traces, or compact
//! `.lgraph` graphs that `lumos ingest` made of them), and reading them
//! (and building the ranks of a job) in parallel.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::sync::Mutex;

use lumos_graph::{
    PeerModel, ProgramGroup, ProgramGroups, ProgramSignature, RankInput, RankProgram, Unreadable,
};
use lumos_store::{StoreError, StoredRank};
use lumos_trace::{ReadError, Trace, TraceMeta};
use rayon::prelude::*;

use crate::{output, progress};

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

/// Expands directories (sub-folders included, sorted) into their trace
/// files.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let found = lumos_trace::trace_files_under(p, &|n| {
                lumos_trace::is_trace_file_name(n) || n.ends_with(".lgraph")
            })?;
            if found.is_empty() {
                bail!(
                    "{}: directory has no trace files (*.json, *.json.gz, *.lgraph), \
                     sub-folders included",
                    p.display()
                );
            }
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
pub fn read_all(files: &[PathBuf]) -> Vec<Result<Loaded>> {
    let total: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let bar = progress::bytes(total, "reading");
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
/// Files that cannot be read are reported and returned apart (the job
/// names their ranks as unreadable).
pub fn load_ranks(files: &[PathBuf]) -> (Vec<RankInput>, Vec<Unreadable>) {
    let bar = progress::count(files.len() as u64, "reading ranks");
    let results: Vec<Result<RankInput>> = files
        .par_iter()
        .map(|f| {
            let r = read_rank(f);
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    let mut unreadable = Vec::new();
    let mut out = Vec::new();
    for r in results {
        match r {
            Ok(l) => out.push(l),
            Err(e) => {
                output::error(&e);
                unreadable.extend(unreadable_of(&e));
            }
        }
    }
    (out, unreadable)
}

/// Turns traces already read into the ranks of a job, in parallel,
/// dropping each trace once its graph is built; read errors are printed
/// and returned apart.
pub fn ranks_from_read(read: Vec<Result<Loaded>>) -> (Vec<RankInput>, Vec<Unreadable>) {
    let mut unreadable = Vec::new();
    let mut traces = Vec::new();
    for r in read {
        match r {
            Ok(t) => traces.push(t),
            Err(e) => {
                output::error(&e);
                unreadable.extend(unreadable_of(&e));
            }
        }
    }
    let bar = progress::count(traces.len() as u64, "building ranks");
    let ranks = traces
        .into_par_iter()
        .map(|t| {
            let r = t.into_rank();
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    (ranks, unreadable)
}

/// The file an error of [`read_one`] or [`read_rank`] could not read, for
/// the job to name its rank as unreadable.
pub fn unreadable_of(e: &anyhow::Error) -> Option<Unreadable> {
    if let Some(e) = e.downcast_ref::<ReadError>() {
        return Some(Unreadable::of(e));
    }
    let e = e.downcast_ref::<StoreError>()?;
    Some(Unreadable {
        path: e.path.clone(),
        rank: lumos_trace::rank_from_file_name(&e.path),
        error: e.to_string(),
    })
}

/// The graph kept for a program while its rank is the lowest seen.
enum Kept {
    /// Built from a trace.
    Input(Box<RankInput>),
    /// In a compact file, read once the groups are known.
    File(PathBuf),
}

/// A job to replay from representatives ([`load_representatives`]).
pub struct Representatives {
    /// One rank per group.
    pub reps: Vec<RankInput>,
    /// Every rank, by program.
    pub groups: Vec<ProgramGroup>,
    /// Each representative's modelled collective durations, by rank.
    pub peers: BTreeMap<u32, Vec<Option<i64>>>,
}

/// Loads a job to replay from representatives. Every input is read once:
/// of an `.lgraph` file its summary only, then the representatives' graphs
/// and their peers' programs; a trace is read and built, its program kept
/// and its graph only while it is the lowest rank of its program. Memory
/// follows the number of groups, not of ranks (for traces, plus a few
/// dozen bytes per communication task of every rank). Files that cannot be
/// read are reported and left out; the flag says whether all were read.
pub fn load_representatives(files: &[PathBuf]) -> (Representatives, bool) {
    let groups = Mutex::new(ProgramGroups::new());
    let kept: Mutex<BTreeMap<ProgramSignature, (u32, Kept)>> = Mutex::new(BTreeMap::new());
    let programs: Mutex<BTreeMap<u32, RankProgram>> = Mutex::new(BTreeMap::new());
    let files_by_rank: Mutex<BTreeMap<u32, PathBuf>> = Mutex::new(BTreeMap::new());
    let offer = |rank: u32, sig: ProgramSignature, k: Kept| {
        let mut kept = lock(&kept);
        if kept.get(&sig).is_none_or(|(have, _)| rank < *have) {
            kept.insert(sig, (rank, k));
        }
    };
    let results: Vec<Result<()>> = files
        .par_iter()
        .map(|f| {
            if is_lgraph(f) {
                let s = lumos_store::read_summary(f)?;
                lock(&groups).add(s.rank, s.signature, s.steps_ns);
                lock(&files_by_rank).insert(s.rank, f.clone());
                offer(s.rank, s.signature, Kept::File(f.clone()));
            } else {
                let input = read_rank(f)?;
                let p = lumos_store::program_of(&input.graph);
                lock(&groups).add(p.rank, p.signature, p.steps_ns.clone());
                offer(p.rank, p.signature, Kept::Input(Box::new(input)));
                lock(&programs).insert(p.rank, p);
            }
            Ok(())
        })
        .collect();
    let mut ok = report_errors(results);
    let groups = into_inner(groups).finish();
    let reps: Vec<Result<RankInput>> = into_inner(kept)
        .into_values()
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(_, k)| match k {
            Kept::Input(i) => Ok(*i),
            Kept::File(f) => read_rank(&f),
        })
        .collect();
    let mut out = Vec::with_capacity(reps.len());
    for r in reps {
        match r {
            Ok(i) => out.push(i),
            Err(e) => {
                output::error(e);
                ok = false;
            }
        }
    }
    let peers = model_peers(
        &out,
        &groups,
        into_inner(programs),
        &into_inner(files_by_rank),
        &mut ok,
    );
    (
        Representatives {
            reps: out,
            groups,
            peers,
        },
        ok,
    )
}

/// Each representative's modelled collective durations: its group's
/// programs folded into its [`PeerModel`], from `programs` (the traces')
/// and the compact files in `files` (read now, in parallel, each once).
fn model_peers(
    reps: &[RankInput],
    groups: &[ProgramGroup],
    programs: BTreeMap<u32, RankProgram>,
    files: &BTreeMap<u32, PathBuf>,
    ok: &mut bool,
) -> BTreeMap<u32, Vec<Option<i64>>> {
    let models: Vec<Mutex<PeerModel>> = reps
        .iter()
        .filter_map(|r| {
            let g = groups.iter().find(|g| g.representative() == r.graph.rank)?;
            Some(Mutex::new(PeerModel::new(&r.graph, g)))
        })
        .collect();
    // Which model a rank's program goes to.
    let mut model_of: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, m) in models.iter().enumerate() {
        let m = lock(m);
        if m.is_empty() {
            continue;
        }
        if let Some(g) = groups.iter().find(|g| g.representative() == m.rank()) {
            model_of.extend(g.ranks.iter().map(|&r| (r, i)));
        }
    }
    for p in programs.values() {
        if let Some(&i) = model_of.get(&p.rank) {
            lock(&models[i]).add(p);
        }
    }
    let read: Vec<Result<()>> = model_of
        .iter()
        .filter_map(|(r, &i)| Some((files.get(r)?, i)))
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(f, i)| {
            let (_, p) = lumos_store::read_program(f)?;
            lock(&models[i]).add(&p);
            Ok(())
        })
        .collect();
    *ok &= report_errors(read);
    models
        .into_iter()
        .map(|m| {
            let m = into_inner(m);
            (m.rank(), m.durations())
        })
        .collect()
}

fn into_inner<T>(m: Mutex<T>) -> T {
    m.into_inner().unwrap_or_else(|e| e.into_inner())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Prints each error; true when there was none.
fn report_errors(results: Vec<Result<()>>) -> bool {
    let mut ok = true;
    for r in results {
        if let Err(e) = r {
            output::error(e);
            ok = false;
        }
    }
    ok
}
