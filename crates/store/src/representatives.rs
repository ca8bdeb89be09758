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
    /// represents its group.
    pub graphs_loaded: usize,
}

/// The graph kept for a program while its rank is the lowest seen.
enum Kept {
    /// Built from a trace.
    Input(Box<RankInput>),
    /// In a compact file, read once the groups are known.
    File(PathBuf),
}

/// What the first pass over the inputs gathers.
#[derive(Default)]
struct Gathered {
    /// The ranks that must not stand for their group
    /// ([`lumos_graph::far_representatives`]): each is grouped apart, in
    /// `apart`, and its graph kept in `kept_apart`.
    avoid: BTreeSet<u32>,
    groups: ProgramGroups,
    kept: BTreeMap<ProgramSignature, (u32, Kept)>,
    apart: ProgramGroups,
    kept_apart: BTreeMap<ProgramSignature, (u32, Kept)>,
    programs: BTreeMap<u32, RankProgram>,
    files_by_rank: BTreeMap<u32, PathBuf>,
    /// The inputs that claim each rank: their places in the files given,
    /// and whether the rank was only a default (none recorded).
    claimed: BTreeMap<u32, Vec<(usize, bool)>>,
    traces_built: usize,
}

impl Gathered {
    /// Adds `rank` to its group (apart if it is to be avoided as a
    /// representative), with `facts`.
    fn add(&mut self, rank: u32, sig: ProgramSignature, steps_ns: Vec<i64>, facts: MemberFacts) {
        let groups = if self.avoid.contains(&rank) {
            &mut self.apart
        } else {
            &mut self.groups
        };
        groups.add_with(rank, sig, steps_ns, facts);
    }

    fn offer(&mut self, rank: u32, sig: ProgramSignature, k: Kept) {
        let kept = if self.avoid.contains(&rank) {
            &mut self.kept_apart
        } else {
            &mut self.kept
        };
        if kept.get(&sig).is_none_or(|(have, _)| rank < *have) {
            kept.insert(sig, (rank, k));
        }
    }
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
/// [`Job::far_representatives`]: only then are the inputs loaded again
/// (`done` called again after each: twice per input in all) with it apart, a group of its own that
/// the assembly leaves out as `--job` does, and the lowest other member
/// standing for its group, so that the group's numbers come from a rank
/// with a sound clock; that job is assembled again. Only a job with such
/// a rank is read twice.
pub fn load_representatives(files: &[PathBuf], done: &(dyn Fn() + Sync)) -> Representatives {
    let first = load_avoiding(files, done, BTreeSet::new());
    let avoid: BTreeSet<u32> = first.job.as_ref().map_or(BTreeSet::new(), |j| {
        j.far_representatives.iter().copied().collect()
    });
    if avoid.is_empty() {
        return first;
    }
    let loaded = first.graphs_loaded;
    drop(first);
    let mut again = load_avoiding(files, done, avoid);
    again.graphs_loaded += loaded;
    again
}

/// [`load_representatives`], the ranks in `avoid` standing for no group
/// of other ranks: each is grouped apart (with the others of `avoid` of
/// its program).
fn load_avoiding(
    files: &[PathBuf],
    done: &(dyn Fn() + Sync),
    avoid: BTreeSet<u32>,
) -> Representatives {
    let gathered = Mutex::new(Gathered {
        avoid,
        ..Gathered::default()
    });
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
    let g = into_inner(gathered);
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
    let mut groups = g.groups.finish();
    groups.extend(g.apart.finish());
    groups.sort_by_key(ProgramGroup::representative);
    let mut graphs_loaded = g.traces_built;
    let reps: Vec<Result<(RankInput, bool), InputError>> = g
        .kept
        .into_values()
        .chain(g.kept_apart.into_values())
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(_, k)| match k {
            Kept::Input(i) => Ok((*i, false)),
            Kept::File(f) => read_rank(&f).map(|i| (i, true)).map_err(InputError::Store),
        })
        .collect();
    let mut out = Vec::with_capacity(reps.len());
    for r in reps {
        match r {
            Ok((i, decoded)) => {
                // Graphs built from traces are already counted.
                graphs_loaded += usize::from(decoded);
                out.push(i);
            }
            Err(e) => errors.push(e),
        }
    }
    let peers = model_peers(&out, &mut groups, g.programs, &g.files_by_rank, &mut errors);
    // A file that could not be read is named so in the job, not "no file".
    let unreadable = errors.iter().filter_map(InputError::unreadable).collect();
    Representatives {
        job: assemble_representatives(out, unreadable, &groups),
        groups,
        peers,
        errors,
        graphs_loaded,
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
        g.add(s.rank, s.signature, s.steps_ns, facts);
        g.files_by_rank.insert(s.rank, f.to_owned());
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
        g.add(p.rank, p.signature, p.steps_ns.clone(), facts);
        g.offer(p.rank, p.signature, Kept::Input(Box::new(input)));
        g.programs.insert(p.rank, p);
    }
    Ok(())
}

/// Each representative's modelled collective durations: its group's
/// programs folded into its [`PeerModel`], from `programs` (the traces')
/// and the compact files in `files` (read now, in parallel, each once).
/// The same programs give each member's clock against its
/// representative's ([`MemberFacts::clock_ns`] in `groups`), so the
/// program of every member is read, modelled or not.
fn model_peers(
    reps: &[RankInput],
    groups: &mut [ProgramGroup],
    programs: BTreeMap<u32, RankProgram>,
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
