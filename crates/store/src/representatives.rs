//! Loading a job to replay from representatives (`lumos replay
//! --representatives`, and the Python package's `representatives=True`):
//! every input is read once, of an `.lgraph` file its summary only, and
//! one graph is kept per group of ranks that run the same communication
//! program. It lives here, beside the readers it calls, so that every
//! front end loads a big job the same way; errors are returned, not
//! printed (a front end decides how to say them).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lumos_graph::{
    assemble_representatives, member_clock_ns, Job, JobError, MemberFacts, PeerModel, ProgramGroup,
    ProgramGroups, ProgramSignature, RankInput, RankProgram, Unreadable,
};
use lumos_trace::{RankSource, ReadError};
use rayon::prelude::*;

use crate::{is_lgraph_file, program_of, read_program, read_rank, read_summary, StoreError};

/// An input that could not be read: a trace, or an `.lgraph` file.
/// Display names the file and the problem.
#[derive(Debug)]
pub enum InputError {
    /// A trace file.
    Trace(ReadError),
    /// A compact graph file.
    Store(StoreError),
    /// One input of several records no rank and has none in its name: the
    /// job is not replayed, as `lumos replay --job` refuses it.
    UnknownRank(PathBuf),
    /// Two inputs (in the order given) claim one rank: the job is not
    /// replayed, as `lumos replay --job` refuses it.
    SameRank {
        /// The rank.
        rank: u32,
        /// The first two files that claim it.
        files: [PathBuf; 2],
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Trace(e) => e.fmt(f),
            InputError::Store(e) => e.fmt(f),
            InputError::UnknownRank(path) => JobError::UnknownRank { path: path.clone() }.fmt(f),
            InputError::SameRank { rank, files } => write!(
                f,
                "{} and {} both claim rank {rank}: a job takes one file per rank",
                files[0].display(),
                files[1].display()
            ),
        }
    }
}

impl InputError {
    /// The file that could not be read, for the job to name its rank
    /// unreadable (as [`Unreadable::of`] a trace's error); `None` for the
    /// errors that refuse the job (no rank, two files claiming one).
    pub fn unreadable(&self) -> Option<Unreadable> {
        match self {
            InputError::Trace(e) => Some(Unreadable::of(e)),
            InputError::Store(e) => Some(Unreadable {
                path: e.path.clone(),
                rank: lumos_trace::rank_from_file_name(&e.path),
                error: e.to_string(),
            }),
            InputError::UnknownRank(_) | InputError::SameRank { .. } => None,
        }
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::Trace(e) => e.source(),
            InputError::Store(e) => e.source(),
            InputError::UnknownRank(_) | InputError::SameRank { .. } => None,
        }
    }
}

/// A job to replay from representatives ([`load_representatives`]).
pub struct Representatives {
    /// One rank per group, assembled as the job
    /// ([`lumos_graph::assemble_representatives`], with the inputs that
    /// could not be read as its unreadable ranks): what the replay takes.
    /// [`JobError::NoRanks`] where no representative was read (every
    /// input failed, or two claim one rank: [`Representatives::errors`]
    /// says why).
    pub job: Result<Job, JobError>,
    /// Every rank, by program.
    pub groups: Vec<ProgramGroup>,
    /// Each representative's modelled collective durations, by rank.
    pub peers: BTreeMap<u32, Vec<Option<i64>>>,
    /// Inputs that could not be read, in the order they were met: the
    /// inputs' own (in the order of `files`), then the representatives'
    /// graphs, then their peers' programs. They are left out of the job;
    /// last, where two inputs claim one rank (or one has no rank), why
    /// the job is empty.
    pub errors: Vec<InputError>,
    /// Graphs built or decoded: for `.lgraph` inputs one per group (every
    /// other file gives its summary and program only); a trace's graph is
    /// always built (its program comes from it), then dropped unless it
    /// represents its group. A job assembled again (a representative's
    /// clock far from its members') adds the graphs read for it: the new
    /// representative's, and those the first assembly left out.
    pub graphs_loaded: usize,
}

/// The graph kept for a program while its rank is the lowest seen.
enum Kept {
    /// Built from a trace.
    Input(Box<RankInput>),
    /// In a compact file, read once the groups are known.
    File(PathBuf),
}

/// One rank as read: its program's signature, measured steps and facts.
type Added = (u32, ProgramSignature, Vec<i64>, MemberFacts);

/// What the pass over the inputs gathers.
#[derive(Default)]
struct Gathered {
    /// Every rank read, grouped once all are ([`groups_of`]).
    added: Vec<Added>,
    kept: BTreeMap<ProgramSignature, (u32, Kept)>,
    programs: BTreeMap<u32, RankProgram>,
    /// Every input, by rank, to read a graph again from.
    inputs_by_rank: BTreeMap<u32, PathBuf>,
    /// The inputs that claim each rank: their places in the files given,
    /// and whether the rank was only a default (none recorded).
    claimed: BTreeMap<u32, Vec<(usize, bool)>>,
    /// Each input's step names, by rank, with its trace's file
    /// ([`step_names_warning`]): a trace's, or those an `.lgraph` file's
    /// summary holds.
    step_names: BTreeMap<u32, (PathBuf, Vec<String>)>,
    traces_built: usize,
}

impl Gathered {
    fn offer(&mut self, rank: u32, sig: ProgramSignature, k: Kept) {
        if self.kept.get(&sig).is_none_or(|(have, _)| rank < *have) {
            self.kept.insert(sig, (rank, k));
        }
    }
}

/// The groups of the ranks `added`, by representative, the ranks in
/// `avoid` standing for no group of other ranks: each is grouped apart
/// (with the others of `avoid` of its program).
fn groups_of(added: &[Added], avoid: &BTreeSet<u32>) -> Vec<ProgramGroup> {
    let (mut groups, mut apart) = (ProgramGroups::new(), ProgramGroups::new());
    for (rank, sig, steps_ns, facts) in added {
        let to = if avoid.contains(rank) {
            &mut apart
        } else {
            &mut groups
        };
        to.add_with(*rank, *sig, steps_ns.clone(), facts.clone());
    }
    let mut groups = groups.finish();
    groups.extend(apart.finish());
    groups.sort_by_key(ProgramGroup::representative);
    groups
}

/// Loads a job to replay from representatives: `files` are traces or
/// `.lgraph` files (told apart by [`is_lgraph_file`]), read in parallel,
/// `done` called after each. Memory follows the number of groups, not of ranks (for traces,
/// plus a few dozen bytes per communication task of every rank). Files
/// that cannot be read are left out and returned in
/// [`Representatives::errors`].
///
/// The representatives are assembled as the job once read
/// ([`Representatives::job`]): collectives matched, clocks aligned and
/// tested, once. A representative whose clock is hours from the job's
/// while members of its group agree with the job is kept by that
/// assembly, where `lumos replay --job` leaves it out, and named in
/// [`Job::far_representatives`]: only then is it grouped apart, a group
/// of its own that the assembly leaves out as `--job` does, with the
/// lowest other member standing for its group, so that the group's
/// numbers come from a rank with a sound clock, and the job assembled
/// again. The inputs are not read again: only the graphs not at hand
/// (the new representative's, and those of representatives the first
/// assembly left out) are, and the compact files' programs, for the
/// peers' models.
pub fn load_representatives(files: &[PathBuf], done: &(dyn Fn() + Sync)) -> Representatives {
    let gathered = Mutex::new(Gathered::default());
    let results: Vec<Result<(), InputError>> = files
        .par_iter()
        .enumerate()
        .map(|(i, f)| {
            let r = gather_one(f, i, &gathered);
            done();
            r
        })
        .collect();
    let mut errors: Vec<InputError> = results.into_iter().filter_map(Result::err).collect();
    let mut g = into_inner(gathered);
    if let Some(e) = not_one_file_per_rank(&g.claimed, files) {
        errors.push(e);
        return Representatives {
            job: Err(JobError::NoRanks),
            groups: Vec::new(),
            peers: BTreeMap::new(),
            errors,
            graphs_loaded: g.traces_built,
        };
    }
    let read_errors = errors.len();
    let mut graphs_loaded = g.traces_built;
    let groups = groups_of(&g.added, &BTreeSet::new());
    let kept: Vec<Kept> = std::mem::take(&mut g.kept)
        .into_values()
        .map(|(_, k)| k)
        .collect();
    let reps: Vec<Result<(RankInput, bool), InputError>> = kept
        .into_par_iter()
        .map(|k| match k {
            Kept::Input(i) => Ok((*i, false)),
            Kept::File(f) => read_rank(&f).map(|i| (i, true)).map_err(InputError::Store),
        })
        .collect();
    let mut first = assembled(&g, groups, reps, errors, &mut graphs_loaded);
    let avoid: BTreeSet<u32> = first.job.as_ref().map_or(BTreeSet::new(), |j| {
        j.far_representatives.iter().copied().collect()
    });
    if avoid.is_empty() {
        warn_of_step_names(&mut first, &g.step_names);
        return first;
    }
    // Again, with those ranks apart: the graphs at hand are the first
    // job's; the others (the new representatives', those the first
    // assembly left out) are read from their files.
    let mut errors = first.errors;
    errors.truncate(read_errors);
    let mut at_hand: BTreeMap<u32, RankInput> = BTreeMap::new();
    if let Ok(job) = first.job {
        let parts = job.ranks.into_iter().zip(job.reports).zip(job.graphs);
        for ((meta, report), graph) in parts {
            at_hand.insert(
                meta.rank,
                RankInput {
                    meta,
                    graph,
                    report,
                },
            );
        }
    }
    let groups = groups_of(&g.added, &avoid);
    let wanted: Vec<(u32, Option<RankInput>)> = (groups.iter())
        .map(|gr| gr.representative())
        .map(|r| (r, at_hand.remove(&r)))
        .collect();
    drop(at_hand);
    let reps: Vec<Result<(RankInput, bool), InputError>> = wanted
        .into_par_iter()
        .filter_map(|(r, have)| match have {
            Some(i) => Some(Ok((i, false))),
            None => {
                let f = g.inputs_by_rank.get(&r)?;
                Some(crate::read_rank_input(f).map(|i| (i, true)))
            }
        })
        .collect();
    let mut again = assembled(&g, groups, reps, errors, &mut graphs_loaded);
    warn_of_step_names(&mut again, &g.step_names);
    again
}

/// Adds [`step_names_warning`] of `r`'s groups to its job's warnings.
fn warn_of_step_names(r: &mut Representatives, names: &BTreeMap<u32, (PathBuf, Vec<String>)>) {
    if let Ok(job) = &mut r.job {
        job.warnings.extend(step_names_warning(&r.groups, names));
    }
}

/// A warning naming the members whose steps are named otherwise than
/// their representative's (`ProfilerStep#11` against `ProfilerStep#10`:
/// another iteration), or that recorded steps where it recorded none or
/// the other way round, as a job's warning names ranks whose steps differ
/// from the first rank's: a member's steps are paired with its
/// representative's by position (the job's measured steps, named as the
/// representative's), which is only right where both recorded the same
/// iterations. `names` are the inputs' (by rank, with the trace's file):
/// a trace's, or those an `.lgraph` file's summary holds, so that the
/// two kinds of input are compared alike.
fn step_names_warning(
    groups: &[ProgramGroup],
    names: &BTreeMap<u32, (PathBuf, Vec<String>)>,
) -> Option<String> {
    let mut odd: Vec<String> = Vec::new();
    for g in groups {
        let rep = g.representative();
        let Some((_, theirs)) = names.get(&rep) else {
            continue;
        };
        for &m in &g.ranks[1..] {
            let Some((path, own)) = names.get(&m) else {
                continue;
            };
            let at = own.iter().zip(theirs).position(|(a, b)| a != b);
            let what = match (at, own.is_empty(), theirs.is_empty()) {
                (Some(k), _, _) => format!(
                    "rank {m} ({}) calls its step {k} {:?} where its representative, rank \
                     {rep}, calls it {:?}",
                    path.display(),
                    own[k],
                    theirs[k]
                ),
                (None, true, false) => format!(
                    "rank {m} ({}) recorded no steps where its representative, rank {rep}, \
                     recorded {}",
                    path.display(),
                    theirs.len()
                ),
                (None, false, true) => format!(
                    "rank {m} ({}) recorded {} steps where its representative, rank {rep}, \
                     recorded none",
                    path.display(),
                    own.len()
                ),
                _ => continue,
            };
            odd.push(what);
        }
    }
    let first = odd.first()?;
    Some(format!(
        "{} member rank(s) name their steps differently from their representatives: {first}; a \
         member's steps are paired with its representative's by position, right only if both \
         recorded the same iterations",
        odd.len()
    ))
}

/// The job of `reps` (each with whether its graph was read now, counted in
/// `graphs_loaded`), its peers modelled from `g`'s programs, assembled
/// with `groups` ([`lumos_graph::assemble_representatives`]); `errors`
/// the inputs' own, the representatives' and their peers' programs'
/// appended.
fn assembled(
    g: &Gathered,
    mut groups: Vec<ProgramGroup>,
    reps: Vec<Result<(RankInput, bool), InputError>>,
    mut errors: Vec<InputError>,
    graphs_loaded: &mut usize,
) -> Representatives {
    let mut out = Vec::with_capacity(reps.len());
    for r in reps {
        match r {
            Ok((i, read)) => {
                // Graphs built from traces in the pass are already counted.
                *graphs_loaded += usize::from(read);
                out.push(i);
            }
            Err(e) => errors.push(e),
        }
    }
    let peers = model_peers(
        &out,
        &mut groups,
        &g.programs,
        &g.inputs_by_rank,
        &mut errors,
    );
    // A file that could not be read is named so in the job, not "no file".
    let unreadable = errors.iter().filter_map(InputError::unreadable).collect();
    Representatives {
        job: assemble_representatives(out, unreadable, &groups),
        groups,
        peers,
        errors,
        graphs_loaded: *graphs_loaded,
    }
}

/// Why the inputs that were read are not one file per rank, as `--job`
/// refuses them ([`lumos_graph::assemble`]): among several, one records no
/// rank (the first in the order given), or two claim one rank (both would
/// be counted in its group, and one taken for its peers' model).
fn not_one_file_per_rank(
    claimed: &BTreeMap<u32, Vec<(usize, bool)>>,
    files: &[PathBuf],
) -> Option<InputError> {
    let read: usize = claimed.values().map(Vec::len).sum();
    let guessed = (claimed.values().flatten())
        .filter(|(_, guessed)| *guessed)
        .map(|&(i, _)| i)
        .min();
    if let Some(i) = guessed.filter(|_| read > 1) {
        return Some(InputError::UnknownRank(files[i].clone()));
    }
    let (&rank, at) = claimed.iter().find(|(_, at)| at.len() > 1)?;
    let mut at: Vec<usize> = at.iter().map(|&(i, _)| i).collect();
    at.sort_unstable();
    Some(InputError::SameRank {
        rank,
        files: [files[at[0]].clone(), files[at[1]].clone()],
    })
}

/// Reads one input: of an `.lgraph` file its summary, of a trace its
/// graph (kept while it is the lowest rank of its program) and program.
fn gather_one(f: &Path, at: usize, gathered: &Mutex<Gathered>) -> Result<(), InputError> {
    if is_lgraph_file(f) {
        let s = read_summary(f).map_err(InputError::Store)?;
        let mut g = lock(gathered);
        let guessed = s.rank_source == RankSource::Default;
        g.claimed.entry(s.rank).or_default().push((at, guessed));
        let facts = MemberFacts {
            path: s.source.path.clone(),
            world_size: s.world_size,
            clock_ns: None,
        };
        g.step_names
            .insert(s.rank, (s.source.path.clone(), s.step_names));
        g.added.push((s.rank, s.signature, s.steps_ns, facts));
        g.inputs_by_rank.insert(s.rank, f.to_owned());
        g.offer(s.rank, s.signature, Kept::File(f.to_owned()));
    } else {
        let input = crate::read_rank_input(f)?;
        let p = program_of(&input.graph);
        let guessed = input.meta.rank_source == RankSource::Default;
        let mut g = lock(gathered);
        g.claimed.entry(p.rank).or_default().push((at, guessed));
        g.traces_built += 1;
        let facts = MemberFacts {
            path: input.meta.path.clone(),
            world_size: input.meta.world_size,
            clock_ns: None,
        };
        g.added
            .push((p.rank, p.signature, p.steps_ns.clone(), facts));
        let names = (input.graph.graph.steps.iter())
            .map(|s| s.name.clone())
            .collect();
        g.step_names
            .insert(p.rank, (input.meta.file().to_owned(), names));
        g.inputs_by_rank.insert(p.rank, f.to_owned());
        g.offer(p.rank, p.signature, Kept::Input(Box::new(input)));
        g.programs.insert(p.rank, p);
    }
    Ok(())
}

/// Each representative's modelled collective durations: its group's
/// programs folded into its [`PeerModel`], from `programs` (the traces')
/// and, for the ranks without one there (compact files), their inputs in
/// `files` (read now, in parallel, each once).
/// The same programs give each member's clock against its
/// representative's ([`MemberFacts::clock_ns`] in `groups`), so the
/// program of every member is read, modelled or not.
fn model_peers(
    reps: &[RankInput],
    groups: &mut [ProgramGroup],
    programs: &BTreeMap<u32, RankProgram>,
    files: &BTreeMap<u32, PathBuf>,
    errors: &mut Vec<InputError>,
) -> BTreeMap<u32, Vec<Option<i64>>> {
    // Per representative: its model, its communication tasks' ends on its
    // own clock, and its group's place in `groups`.
    struct Rep {
        model: Mutex<PeerModel>,
        ends: Vec<i64>,
        group: usize,
    }
    let rep_of: Vec<Rep> = reps
        .iter()
        .filter_map(|r| {
            let group = groups
                .iter()
                .position(|g| g.representative() == r.graph.rank)?;
            Some(Rep {
                model: Mutex::new(PeerModel::new(&r.graph, &groups[group])),
                ends: (r.graph.comms.iter())
                    .map(|c| r.graph.clock_end_ns(c.task))
                    .collect(),
                group,
            })
        })
        .collect();
    // Which representative a rank's program goes to: every member's, for
    // its clock; the model takes it where it models anything.
    let mut rep_for: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, r) in rep_of.iter().enumerate() {
        rep_for.extend(groups[r.group].ranks.iter().map(|&m| (m, i)));
    }
    let clocks: Mutex<BTreeMap<u32, Option<i64>>> = Mutex::new(BTreeMap::new());
    let take = |p: &RankProgram, i: usize| {
        let r = &rep_of[i];
        let ends: Vec<i64> = p.comms.iter().map(|c| c.end_ns).collect();
        lock(&clocks).insert(p.rank, member_clock_ns(&ends, &r.ends));
        let mut m = lock(&r.model);
        if !m.is_empty() {
            m.add(p);
        }
    };
    for p in programs.values() {
        if let Some(&i) = rep_for.get(&p.rank) {
            take(p, i);
        }
    }
    let read: Vec<Result<(), InputError>> = rep_for
        .iter()
        .filter(|(r, _)| !programs.contains_key(r))
        .filter_map(|(r, &i)| Some((files.get(r)?, i)))
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(f, i)| {
            let (_, p) = read_program(f).map_err(InputError::Store)?;
            take(&p, i);
            Ok(())
        })
        .collect();
    errors.extend(read.into_iter().filter_map(Result::err));
    let clocks = into_inner(clocks);
    for r in &rep_of {
        let g = &mut groups[r.group];
        for (k, f) in g.facts.iter_mut().enumerate() {
            f.clock_ns = if k == 0 {
                Some(0)
            } else {
                clocks.get(&g.ranks[k]).copied().flatten()
            };
        }
    }
    rep_of
        .into_iter()
        .map(|r| {
            let m = into_inner(r.model);
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
