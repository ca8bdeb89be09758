//! Telling the ranks of a job apart: which file is which rank, which ranks
//! are missing, then matching their collectives and aligning their clocks.
//!
//! Inputs form a job when a front end says so, or when there are at least
//! two, most of them record the same `distributedInfo.world_size` above 1
//! and they share a collective (the `detect` module). A job with a rank missing is assembled from the
//! ranks present, with a warning naming the missing ones (and why: no
//! file, a file that could not be read, a file left out): their
//! collectives rendezvous among themselves, which is all the missing
//! rank's absence lets us model. Files that are not ranks of the job are
//! found and left out as the `belong` module describes.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use lumos_trace::{rank_from_file_name, RankSource, ReadError, Trace, MAX_WORLD_SIZE};

use super::belong::{
    clock_spread_warning, far_clocks, foreign_ranks, group_disagreements, long_duration, LeftOut,
    LeftOutReason,
};
use super::clock::align_refs;
use super::matching::match_refs;
use super::{rank_graph, rank_graph_streamed, rank_ranges, CommSink};
use super::{ClockAlignment, CollectiveMatch, ProgramGroup, RankGraph};
use crate::BuildReport;

/// What a rank's trace says about the rank itself: which one it is, how
/// that was found, and what the job's reports and timelines need of the
/// file once its events are gone.
#[derive(Debug, Clone, PartialEq)]
pub struct RankMeta {
    /// The trace file.
    pub path: PathBuf,
    /// The rank.
    pub rank: u32,
    /// How the rank was found.
    pub rank_source: RankSource,
    /// `distributedInfo.world_size`, if recorded.
    pub world_size: Option<u32>,
    /// `distributedInfo.written_ranks`: the ranks written with this file
    /// when they are a subset of the world on purpose (`lumos synth`);
    /// empty when not recorded.
    pub written_ranks: Vec<u32>,
    /// `baseTimeNanoseconds`, if recorded.
    pub base_time_ns: Option<i64>,
    /// The reader's warnings about the file.
    pub warnings: Vec<String>,
    /// Its tracks, devices and process groups, for timelines.
    pub about: crate::TraceAbout,
    /// The compact graph file (`.lgraph`) the rank was read from, where it
    /// was not read from its trace: errors name the file given, reports
    /// and timelines the trace (so that their output is the trace's).
    pub compact: Option<PathBuf>,
}

/// One rank, read and built: its metadata, graph and build report. The
/// trace itself is not kept, so a job holds one trace at a time per
/// loading thread.
#[derive(Debug, Clone)]
pub struct RankInput {
    /// What the file says about the rank.
    pub meta: RankMeta,
    /// The rank's graph and communication tasks.
    pub graph: RankGraph,
    /// What the builder counted and warned about.
    pub report: BuildReport,
}

impl RankInput {
    /// Builds the rank's graph ([`rank_graph`]) and keeps what the job
    /// needs from `trace`.
    pub fn from_trace(trace: &Trace) -> RankInput {
        let (graph, report) = rank_graph(trace);
        RankInput {
            meta: RankMeta::of(trace),
            graph,
            report,
        }
    }

    /// [`RankInput::from_trace`] of a trace read with `sink`
    /// ([`lumos_trace::read_path_into`], [`rank_graph_streamed`]): the
    /// same rank, its events never all in memory.
    pub fn from_sink(trace: Trace, sink: CommSink) -> RankInput {
        let meta = RankMeta::of(&trace);
        let (graph, report) = rank_graph_streamed(trace, sink);
        RankInput {
            meta,
            graph,
            report,
        }
    }
}

impl RankMeta {
    /// What `trace` says about its rank and file.
    pub fn of(trace: &Trace) -> RankMeta {
        RankMeta {
            path: trace.path.clone(),
            rank: trace.meta.rank,
            rank_source: trace.meta.rank_source,
            world_size: trace.meta.world_size,
            written_ranks: trace.meta.written_ranks.clone(),
            base_time_ns: trace.meta.base_time_ns,
            warnings: trace.warnings.clone(),
            about: crate::TraceAbout::of(trace),
            compact: None,
        }
    }

    /// The file the rank was read from: its `.lgraph` file, else its
    /// trace.
    pub fn file(&self) -> &Path {
        self.compact.as_deref().unwrap_or(&self.path)
    }
}

/// A file given as a rank of a job that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The file.
    pub path: PathBuf,
    /// The rank its name gives (`rank<N>`), if any.
    pub rank: Option<u32>,
    /// Why it could not be read (naming the file).
    pub error: String,
}

impl Unreadable {
    /// The file of `e`, with the rank its name gives.
    pub fn of(e: &ReadError) -> Unreadable {
        Unreadable {
            path: e.path.clone(),
            rank: rank_from_file_name(&e.path),
            error: e.to_string(),
        }
    }
}

/// The ranks of one job, checked: sorted by rank, with what is missing and
/// how their collectives matched and their clocks aligned. `ranks`,
/// `reports` and `graphs` are indexed alike (a rank's position).
#[derive(Debug, Clone)]
pub struct Job {
    /// Each rank's metadata, ascending by rank.
    pub ranks: Vec<RankMeta>,
    /// Each rank's build report.
    pub reports: Vec<BuildReport>,
    /// Each rank's graph.
    pub graphs: Vec<RankGraph>,
    /// The world size: the largest any file records.
    pub world_size: Option<u32>,
    /// Ranks below the world size (or below the highest rank present,
    /// without one; or among the ranks the files say were written with
    /// them, [`RankMeta::written_ranks`]) that no file of the job holds: no
    /// file, a file that could not be read, or one that was left out.
    pub missing: Vec<u32>,
    /// Files given as ranks that were left out of the job, by rank.
    pub left_out: Vec<LeftOut>,
    /// Files given as ranks that could not be read.
    pub unreadable: Vec<Unreadable>,
    /// Soft problems: world sizes that disagree, ranks left out, process
    /// groups that disagree, missing ranks, ranks whose clock could not be
    /// aligned.
    pub warnings: Vec<String>,
    /// The collectives matched across ranks.
    pub matching: CollectiveMatch,
    /// Each rank's clock offset.
    pub clock: ClockAlignment,
    /// Representatives ([`assemble_representatives`]) whose clock is far
    /// from the job's while members of their group agree with it, kept
    /// (their graph being the only one of their group at hand) where
    /// `--job` leaves them out; with each, the members of its group whose
    /// clock is as far; ascending. Empty for every other job. A loader
    /// that can give another member's graph loads the job again with
    /// these ranks apart (each a representative of its own, left out by
    /// the assembly as `--job` leaves it out) and the lowest other member
    /// standing for the group (`lumos_store::load_representatives` does).
    pub far_representatives: Vec<u32>,
}

impl Job {
    /// The position of `rank` among [`Job::ranks`], if present.
    pub fn position(&self, rank: u32) -> Option<usize> {
        self.ranks.iter().position(|m| m.rank == rank)
    }

    /// The ranks present, ascending.
    pub fn rank_numbers(&self) -> Vec<u32> {
        self.ranks.iter().map(|m| m.rank).collect()
    }
}

/// Why a set of rank files is not one job.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobError {
    /// No rank was given (or none could be read).
    NoRanks,
    /// A file of a job of several says neither its rank nor, in its name,
    /// `rank<N>`.
    UnknownRank {
        /// The file.
        path: PathBuf,
    },
    /// Two files claim the same rank.
    DuplicateRank {
        /// The rank.
        rank: u32,
        /// The world size the files record (one may record none); `None`
        /// when neither does, or they record different ones.
        world_size: Option<u32>,
        /// The files and how each found the rank, in path order.
        files: [(PathBuf, RankSource); 2],
    },
    /// A file's rank is not below the job's world size.
    OutsideWorld {
        /// The file.
        path: PathBuf,
        /// Its rank.
        rank: u32,
        /// The world size.
        world_size: u32,
    },
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::NoRanks => f.write_str("no rank of the job could be read"),
            JobError::UnknownRank { path } => write!(
                f,
                "{}: cannot tell which rank this file is (no distributedInfo.rank, no rank<N> in \
                 the file name)",
                path.display()
            ),
            JobError::DuplicateRank {
                rank,
                world_size,
                files,
            } => {
                let (a, b) = (files[0].0.display(), files[1].0.display());
                write!(
                    f,
                    "{a} ({}) and {b} ({}) both claim rank {rank}{}: a job takes one file per \
                     rank; to compare two runs use `lumos replay --per-trace` or `lumos diff {a} \
                     {b}`",
                    files[0].1.as_str(),
                    files[1].1.as_str(),
                    world_size.map_or(String::new(), |w| format!(" of world size {w}")),
                )
            }
            JobError::OutsideWorld {
                path,
                rank,
                world_size,
            } => write!(
                f,
                "{}: rank {rank} is outside world size {world_size}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for JobError {}

/// [`assemble_with`] when every file of the job could be read.
pub fn assemble(inputs: Vec<RankInput>) -> Result<Job, JobError> {
    assemble_with(inputs, Vec::new())
}

/// [`assemble_with`] of one representative per group of ranks that run the
/// same communication program (`lumos replay --representatives`): an input
/// that is the [`ProgramGroup::representative`] of one of `groups` counts
/// as the group's members (any other input as itself alone) where the job
/// is told apart from files that are not its ranks, as `--job` would count
/// them all: in the vote for the world size (each member with the world
/// size its file records, [`ProgramGroup::facts`]; without facts, the
/// representative's) and in the tests that leave files out, whose ranks
/// must stay a minority of the job's (see the `belong` module). One
/// foreign rank against one group of seven is thus left out, where against
/// the one representative it would be half the job.
///
/// Members are tested as `--job` tests every rank where their facts tell:
/// a member whose rank is outside the job's world size, or whose clock
/// (its representative's offset plus [`MemberFacts::clock_ns`](super::MemberFacts::clock_ns)) is far
/// from the others' ([`FAR_CLOCK_NS`](super::FAR_CLOCK_NS)), is left out on its own, in
/// [`Job::left_out`] (its group stays; the caller takes it out of the
/// group). A member's clock is judged rank by rank, not pooled with the
/// other ranks of its host as the alignment of every rank pools it
/// ([`ClockAlignment::hosts`]): a member's host is not in its summary. A
/// representative whose clock is far while members of its group agree
/// with the job is what `--job` leaves out, but its graph is the only one
/// of its group at hand: it is kept, with a warning (the alignment undoes
/// its offset), and named in [`Job::far_representatives`], so that a
/// loader that can give another member's graph assembles the job again
/// with it apart, a group of its own, and another member standing for
/// the group (`lumos_store::load_representatives` does). The clocks are
/// thus tested once per assembly, with no pass of their own before it.
pub fn assemble_representatives(
    inputs: Vec<RankInput>,
    unreadable: Vec<Unreadable>,
    groups: &[ProgramGroup],
) -> Result<Job, JobError> {
    let members: Members<'_> = groups.iter().map(|g| (g.representative(), g)).collect();
    assemble_counted(inputs, unreadable, &members)
}

/// Checks that the ranks are distinct and known, leaves out the files that
/// are not ranks of the job (see the `belong` module), finds the missing
/// ranks (`unreadable` files among them), then matches collectives and
/// aligns clocks. Soft problems (world sizes that disagree, ranks left out,
/// missing ranks, unaligned clocks) become [`Job::warnings`]; files that
/// cannot be one job are a [`JobError`].
pub fn assemble_with(inputs: Vec<RankInput>, unreadable: Vec<Unreadable>) -> Result<Job, JobError> {
    assemble_counted(inputs, unreadable, &BTreeMap::new())
}

/// The groups of ranks that representatives stand for, by representative
/// ([`assemble_representatives`]).
type Members<'a> = BTreeMap<u32, &'a ProgramGroup>;

/// One rank an input counts as ([`counted`]).
struct Counted<'a> {
    rank: u32,
    /// Its place in its group (0: the input itself).
    member: usize,
    world_size: Option<u32>,
    /// Its trace, where known.
    path: Option<&'a Path>,
    /// How far its clock is from the input's, where known (0 for the
    /// input itself).
    clock_ns: Option<i64>,
}

/// The ranks `input` counts as: the members of its group in `members`
/// where it represents one, each with what its facts say (else what the
/// input says), or itself alone.
fn counted<'a>(members: &Members<'a>, input: &'a RankInput) -> Vec<Counted<'a>> {
    let itself = Counted {
        rank: input.meta.rank,
        member: 0,
        world_size: input.meta.world_size,
        path: Some(&input.meta.path),
        clock_ns: Some(0),
    };
    let Some(g) = members.get(&input.meta.rank) else {
        return vec![itself];
    };
    let mut out = vec![itself];
    out.extend(g.ranks.iter().enumerate().skip(1).map(|(k, &rank)| {
        let facts = g.facts.get(k);
        Counted {
            rank,
            member: k,
            world_size: facts.map_or(input.meta.world_size, |f| f.world_size),
            path: facts.map(|f| f.path.as_path()),
            clock_ns: facts.and_then(|f| f.clock_ns),
        }
    }));
    out
}

/// [`assemble_with`], each input counting as its `members` (by rank; itself
/// where absent) in the world-size vote and the tests of which files
/// belong.
fn assemble_counted(
    mut inputs: Vec<RankInput>,
    unreadable: Vec<Unreadable>,
    members: &Members<'_>,
) -> Result<Job, JobError> {
    if inputs.is_empty() {
        return Err(JobError::NoRanks);
    }
    if inputs.len() > 1 {
        if let Some(i) = inputs
            .iter()
            .find(|i| i.meta.rank_source == RankSource::Default)
        {
            return Err(JobError::UnknownRank {
                path: i.meta.file().to_owned(),
            });
        }
    }
    inputs.sort_by(|a, b| {
        a.meta
            .rank
            .cmp(&b.meta.rank)
            .then(a.meta.path.cmp(&b.meta.path))
    });
    if let Some(w) = inputs.windows(2).find(|w| w[0].meta.rank == w[1].meta.rank) {
        let file = |i: &RankInput| (i.meta.file().to_owned(), i.meta.rank_source);
        return Err(JobError::DuplicateRank {
            rank: w[0].meta.rank,
            // Two different world sizes: neither is "the" rank's.
            world_size: match (w[0].meta.world_size, w[1].meta.world_size) {
                (Some(a), Some(b)) if a != b => None,
                (a, b) => a.or(b),
            },
            files: [file(&w[0]), file(&w[1])],
        });
    }
    let written = written_ranks(&inputs);
    let mut warnings = Vec::new();
    let world_size = world_size(&inputs, members, &mut warnings);
    let mut left_out = Vec::new();
    if let Some(w) = world_size {
        outside_world(&mut inputs, w, &mut left_out)?;
        members_outside_world(&inputs, members, w, &mut left_out)?;
    }
    let (matching, clock, far_representatives) =
        match_and_align(&mut inputs, members, &mut left_out, &mut warnings);
    left_out.sort_by_key(|l| l.rank);
    warnings.extend(left_out.iter().map(ToString::to_string));
    let refs: Vec<&RankGraph> = inputs.iter().map(|i| &i.graph).collect();
    warnings.extend(group_disagreements(&refs, !members.is_empty()));
    let present: Vec<u32> = inputs.iter().map(|i| i.meta.rank).collect();
    let missing = missing_ranks(
        &present,
        world_size,
        &written,
        &absent_reasons(&present, &left_out, &unreadable, &mut warnings),
        &mut warnings,
    );
    let mut ranks = Vec::with_capacity(inputs.len());
    let mut reports = Vec::with_capacity(inputs.len());
    let mut graphs = Vec::with_capacity(inputs.len());
    for i in inputs {
        ranks.push(i.meta);
        reports.push(i.report);
        graphs.push(i.graph);
    }
    if !clock.unaligned.is_empty() {
        let unaligned: Vec<u32> = clock
            .unaligned
            .iter()
            .map(|&p| ranks[p as usize].rank)
            .collect();
        warnings.push(format!(
            "rank {} shares no matched collective with rank {}: clock taken as recorded",
            rank_ranges(&unaligned),
            ranks[clock.reference as usize].rank
        ));
    }
    Ok(Job {
        ranks,
        reports,
        graphs,
        world_size,
        missing,
        left_out,
        unreadable,
        warnings,
        matching,
        clock,
        far_representatives,
    })
}

/// Leaves out the files whose rank is not below the job's world size `w`
/// but that record another world size (or none): they cannot be ranks of
/// this job. A file recording `w` itself and a rank outside it contradicts
/// itself: an error.
fn outside_world(
    inputs: &mut Vec<RankInput>,
    w: u32,
    left_out: &mut Vec<LeftOut>,
) -> Result<(), JobError> {
    if let Some(i) = inputs
        .iter()
        .find(|i| i.meta.rank >= w && i.meta.world_size == Some(w))
    {
        return Err(JobError::OutsideWorld {
            path: i.meta.file().to_owned(),
            rank: i.meta.rank,
            world_size: w,
        });
    }
    let outside: Vec<usize> = (0..inputs.len())
        .filter(|&p| inputs[p].meta.rank >= w)
        .collect();
    take_out(inputs, &outside, left_out, |i| {
        LeftOutReason::OutsideWorld {
            world_size: w,
            recorded: i.meta.world_size,
        }
    });
    Ok(())
}

/// [`outside_world`] of the members the inputs represent (`members`, by
/// representative; the inputs themselves were tested): a member whose
/// rank is not below `w` is left out, or, recording `w` itself, an error.
fn members_outside_world(
    inputs: &[RankInput],
    members: &Members<'_>,
    w: u32,
    left_out: &mut Vec<LeftOut>,
) -> Result<(), JobError> {
    for i in inputs {
        for c in counted(members, i).into_iter().skip(1) {
            if c.rank < w {
                continue;
            }
            let path = c.path.unwrap_or(&i.meta.path).to_owned();
            if c.world_size == Some(w) {
                return Err(JobError::OutsideWorld {
                    path,
                    rank: c.rank,
                    world_size: w,
                });
            }
            left_out.push(LeftOut {
                rank: c.rank,
                reason: LeftOutReason::OutsideWorld {
                    world_size: w,
                    recorded: c.world_size,
                },
                path,
            });
        }
    }
    Ok(())
}

/// Moves the inputs at `positions` (ascending) into `left_out`, each with
/// its reason.
fn take_out(
    inputs: &mut Vec<RankInput>,
    positions: &[usize],
    left_out: &mut Vec<LeftOut>,
    reason: impl Fn(&RankInput) -> LeftOutReason,
) {
    for &p in positions.iter().rev() {
        let i = inputs.remove(p);
        left_out.push(LeftOut {
            rank: i.meta.rank,
            reason: reason(&i),
            path: i.meta.path,
        });
    }
}

/// Leaves out the ranks that share no collective with the others, matches
/// the rest and aligns their clocks; then leaves out the ranks whose clock
/// is far from the others' and does it again without them. Each input
/// counts as its `members` ([`assemble_counted`]); members whose clock is
/// known ([`MemberFacts::clock_ns`](super::MemberFacts::clock_ns)) are
/// tested each on its own clock, and those far off left out alone (a far
/// input whose members agree stays, warned, and is returned with the
/// members of its group as far: [`Job::far_representatives`]).
fn match_and_align(
    inputs: &mut Vec<RankInput>,
    members: &Members<'_>,
    left_out: &mut Vec<LeftOut>,
    warnings: &mut Vec<String>,
) -> (CollectiveMatch, ClockAlignment, Vec<u32>) {
    let w: Vec<usize> = (inputs.iter())
        .map(|i| members.get(&i.meta.rank).map_or(1, |g| g.ranks.len()))
        .collect();
    let foreign = foreign_ranks(&inputs.iter().map(|i| &i.graph).collect::<Vec<_>>(), &w);
    let others: usize = (0..inputs.len())
        .filter(|p| foreign.binary_search(p).is_err())
        .map(|p| w[p])
        .sum();
    take_out(inputs, &foreign, left_out, |i| {
        // A rank with nothing in it shares no collective either, but not
        // because it is of another run.
        if i.graph.graph.tasks.is_empty() {
            LeftOutReason::NoTasks
        } else {
            LeftOutReason::NoSharedCollective { others }
        }
    });
    let run = |inputs: &[RankInput]| {
        let refs: Vec<&RankGraph> = inputs.iter().map(|i| &i.graph).collect();
        let m = match_refs(&refs);
        let c = align_refs(&refs, &m);
        (m, c)
    };
    let (m, c) = run(inputs);
    let clocks = RankClocks::of(&inputs.iter().collect::<Vec<_>>(), members, &c);
    let far = far_clocks(&clocks.offsets_ns, &clocks.unaligned, &clocks.weights);
    if far.is_empty() {
        warnings.extend(clock_spread_warning(
            &clocks.offsets_ns,
            &clocks.unaligned,
            &clocks.ranks,
        ));
        return (m, c, Vec::new());
    }
    // Far members go alone; a far input takes the members it stands for
    // whose clock is not known (the caller leaves its group out).
    let mut positions: Vec<usize> = Vec::new();
    let mut offsets: BTreeMap<u32, i64> = BTreeMap::new();
    let mut kept_far: Vec<u32> = Vec::new();
    for verdict in judge_far(&clocks, &far) {
        match verdict {
            // Only its graph is loaded for the members that agree: it
            // stays, replayed for them (the alignment undoes its offset),
            // says so, and is named with the members as far, for a loader
            // that can give another member's graph to assemble again.
            FarVerdict::KeptFor { p, d, agree } => {
                kept_far.extend(
                    (far.iter())
                        .filter(|&&(e, _)| clocks.of[e].0 == p)
                        .map(|&(e, _)| clocks.ranks[e]),
                );
                let i = &inputs[p];
                warnings.push(format!(
                    "rank {} ({}): its collectives end {} {} the other ranks'; `--job` leaves \
                     it out as from another run, but it represents rank {}, whose clocks agree \
                     with the job's: kept, replayed for them",
                    i.meta.rank,
                    i.meta.path.display(),
                    long_duration(d),
                    if d > 0 { "after" } else { "before" },
                    rank_ranges(&agree)
                ));
            }
            FarVerdict::Input { p, d } => {
                positions.push(p);
                offsets.insert(inputs[p].meta.rank, d);
            }
            FarVerdict::Member { p, member, d } => {
                let i = &inputs[p];
                let c = &counted(members, i)[member];
                left_out.push(LeftOut {
                    rank: c.rank,
                    reason: LeftOutReason::FarClock { offset_ns: d },
                    path: c.path.unwrap_or(&i.meta.path).to_owned(),
                });
            }
        }
    }
    kept_far.sort_unstable();
    warnings.extend(spread_of_the_rest(&clocks, &far));
    if positions.is_empty() {
        return (m, c, kept_far);
    }
    take_out(inputs, &positions, left_out, |i| LeftOutReason::FarClock {
        offset_ns: offsets[&i.meta.rank],
    });
    let (m, c) = run(inputs);
    (m, c, kept_far)
}

/// The warning on clocks a minute or more apart among the ranks that are
/// not `far` ([`clock_spread_warning`]): a run minutes away from the job
/// is named even when a run hours away was left out beside it. Their
/// offsets from the alignment that held the far ones too: leaving those
/// out moves the rest together, not apart.
fn spread_of_the_rest(clocks: &RankClocks, far: &[(usize, i64)]) -> Option<String> {
    let rest: Vec<usize> = (0..clocks.offsets_ns.len())
        .filter(|e| !far.iter().any(|f| f.0 == *e))
        .collect();
    let offsets: Vec<i64> = rest.iter().map(|&e| clocks.offsets_ns[e]).collect();
    let ranks: Vec<u32> = rest.iter().map(|&e| clocks.ranks[e]).collect();
    let unaligned: Vec<u32> = (rest.iter().enumerate())
        .filter(|&(_, &e)| clocks.unaligned.contains(&(e as u32)))
        .map(|(k, _)| k as u32)
        .collect();
    clock_spread_warning(&offsets, &unaligned, &ranks)
}

/// What the test of clocks says of one rank whose clock is far from the
/// job's ([`far_clocks`]).
enum FarVerdict {
    /// An input (at position `p`, `d` ns away) that stands for members
    /// whose clocks agree with the job's (`agree`, their ranks).
    KeptFor { p: usize, d: i64, agree: Vec<u32> },
    /// An input left out, with the members it stands for whose clock is
    /// not known.
    Input { p: usize, d: i64 },
    /// A member (its place in the group of the input at `p`) left out
    /// alone.
    Member { p: usize, member: usize, d: i64 },
}

/// The verdict on each of the `far` entries of `clocks`.
fn judge_far(clocks: &RankClocks, far: &[(usize, i64)]) -> Vec<FarVerdict> {
    far.iter()
        .map(|&(e, d)| {
            let (p, member) = clocks.of[e];
            if member != 0 {
                return FarVerdict::Member { p, member, d };
            }
            let agree: Vec<u32> = (clocks.of.iter().enumerate())
                .filter(|&(e2, &(p2, m2))| p2 == p && m2 != 0 && !far.iter().any(|f| f.0 == e2))
                .map(|(e2, _)| clocks.ranks[e2])
                .collect();
            if agree.is_empty() {
                FarVerdict::Input { p, d }
            } else {
                FarVerdict::KeptFor { p, d, agree }
            }
        })
        .collect()
}

/// Every rank's clock offset, for [`far_clocks`]: each input's from the
/// alignment, each member whose clock is known at its representative's
/// plus its own ([`MemberFacts::clock_ns`](super::MemberFacts::clock_ns)); a member whose clock is not
/// known weighs on its representative's.
struct RankClocks {
    offsets_ns: Vec<i64>,
    unaligned: Vec<u32>,
    weights: Vec<usize>,
    ranks: Vec<u32>,
    /// Per entry, the input's position and the member's place in its group.
    of: Vec<(usize, usize)>,
}

impl RankClocks {
    fn of(inputs: &[&RankInput], members: &Members<'_>, c: &ClockAlignment) -> RankClocks {
        let mut out = RankClocks {
            offsets_ns: Vec::new(),
            unaligned: Vec::new(),
            weights: Vec::new(),
            ranks: Vec::new(),
            of: Vec::new(),
        };
        for (p, i) in inputs.iter().enumerate() {
            let unaligned = c.unaligned.contains(&(p as u32));
            let own = c.offsets_ns[p];
            let all = counted(members, i);
            let unknown = all.iter().filter(|m| m.clock_ns.is_none()).count();
            for m in &all {
                let offset = match (m.member, m.clock_ns) {
                    (0, _) => own,
                    (_, Some(d)) => own.saturating_add(d),
                    (_, None) => continue,
                };
                if unaligned {
                    out.unaligned.push(out.offsets_ns.len() as u32);
                }
                out.offsets_ns.push(offset);
                out.weights
                    .push(if m.member == 0 { 1 + unknown } else { 1 });
                out.ranks.push(m.rank);
                out.of.push((p, m.member));
            }
        }
        out
    }
}

/// Why each rank no input of the job holds is absent, where a file was
/// given for it: left out, or unreadable. Unreadable files whose rank
/// cannot be told (or that would be a rank present) get a warning of their
/// own.
fn absent_reasons(
    present: &[u32],
    left_out: &[LeftOut],
    unreadable: &[Unreadable],
    warnings: &mut Vec<String>,
) -> BTreeMap<u32, String> {
    let mut why: BTreeMap<u32, String> = left_out
        .iter()
        .map(|l| (l.rank, l.short_reason().to_owned()))
        .collect();
    for u in unreadable {
        match u.rank.filter(|r| present.binary_search(r).is_err()) {
            Some(r) => {
                why.insert(r, format!("unreadable ({})", u.error));
            }
            None => warnings.push(format!(
                "a file of the job could not be read ({}); which rank it holds cannot be told \
                 from its name",
                u.error
            )),
        }
    }
    why
}

/// The world size most files record (ties: the largest), each input
/// counting as its `members` ([`assemble_counted`]), each with the world
/// size it records where known, with a warning naming the files that
/// disagree.
fn world_size(
    inputs: &[RankInput],
    members: &Members<'_>,
    warnings: &mut Vec<String>,
) -> Option<u32> {
    // Per world size: the ranks recording it, with their files where known.
    let mut by_size: BTreeMap<u32, Vec<(u32, Option<&Path>)>> = BTreeMap::new();
    for i in inputs {
        for c in counted(members, i) {
            if let Some(w) = c.world_size {
                by_size.entry(w).or_default().push((c.rank, c.path));
            }
        }
    }
    let (&chosen, most) = (by_size.iter())
        .map(|(w, r)| (w, r.len()))
        .max_by_key(|&(&w, n)| (n, w))?;
    if by_size.len() > 1 {
        let list: Vec<String> = by_size
            .iter_mut()
            .map(|(w, ranks)| match ranks.as_slice() {
                [(_, Some(path))] => format!("{w} in {}", path.display()),
                _ => {
                    let mut ranks: Vec<u32> = ranks.iter().map(|r| r.0).collect();
                    ranks.sort_unstable();
                    format!(
                        "{w} in {} files (rank {})",
                        ranks.len(),
                        rank_ranges(&ranks)
                    )
                }
            })
            .collect();
        let tie = by_size.values().filter(|r| r.len() == most).count() > 1;
        warnings.push(format!(
            "files disagree on the world size ({}); using {}",
            list.join(", "),
            if tie {
                "the largest".to_owned()
            } else {
                format!("{chosen}, which most files record")
            }
        ));
    }
    Some(chosen)
}

/// Every rank the inputs say was written with them
/// ([`RankMeta::written_ranks`]), ascending; empty when none says.
fn written_ranks(inputs: &[RankInput]) -> Vec<u32> {
    let mut out: Vec<u32> = inputs
        .iter()
        .flat_map(|i| i.meta.written_ranks.iter().copied())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The ranks no input holds among those expected (`present` sorted), with
/// a warning naming them and, for those in `why`, why (no file
/// otherwise). Expected are the `written` ranks when the files record
/// them (a subset written on purpose is complete), else every rank below
/// the world size.
fn missing_ranks(
    present: &[u32],
    world_size: Option<u32>,
    written: &[u32],
    why: &BTreeMap<u32, String>,
    warnings: &mut Vec<String>,
) -> Vec<u32> {
    // Without a world size, ranks below the highest one present (or given
    // in a file left out or unreadable) are expected; ranks above it cannot
    // be known.
    let highest = present.last().max(why.keys().next_back()).copied();
    // Ranks past the most GPUs a trace may record (a damaged rank, with
    // no world size to bound it) are not listed: billions of them would
    // not fit in memory.
    let expected = world_size
        .or_else(|| highest.and_then(|r| r.checked_add(1)))
        .filter(|&w| w <= MAX_WORLD_SIZE);
    let absent = |r: &u32| present.binary_search(r).is_err();
    let missing: Vec<u32> = match expected {
        _ if !written.is_empty() => written.iter().copied().filter(absent).collect(),
        Some(w) => (0..w).filter(absent).collect(),
        None => Vec::new(),
    };
    if missing.is_empty() {
        return missing;
    }
    let no_file_note = match world_size {
        Some(_) => None,
        None => Some(format!(
            "no world size recorded, so ranks above {} cannot be checked",
            highest.unwrap_or(0)
        )),
    };
    warnings.push(missing_ranks_warning(
        &missing,
        world_size,
        why,
        no_file_note.as_deref(),
        present.len(),
    ));
    missing
}

/// The warning on a job's `missing` ranks (not empty), as the assembly
/// gives it: why each is missing (`why`, by rank: left out for a reason,
/// or its file unreadable; any other has no file, with `no_file_note`
/// added where given), the world size where known, and how many ranks are
/// `present`. `lumos replay --representatives` words it again over every
/// rank of its groups with the same function.
pub fn missing_ranks_warning(
    missing: &[u32],
    world_size: Option<u32>,
    why: &BTreeMap<u32, String>,
    no_file_note: Option<&str>,
    present: usize,
) -> String {
    let mut parts: Vec<(String, Vec<u32>)> = Vec::new();
    let no_file: Vec<u32> = (missing.iter().copied())
        .filter(|r| !why.contains_key(r))
        .collect();
    if !no_file.is_empty() {
        let text = match no_file_note {
            Some(note) => format!("missing (no file; {note})"),
            None => "missing (no file)".to_owned(),
        };
        parts.push((text, no_file));
    }
    for (&r, text) in why.iter().filter(|(r, _)| missing.contains(r)) {
        parts.push((text.clone(), vec![r]));
    }
    let text: Vec<String> = (parts.iter().enumerate())
        .map(|(k, (text, ranks))| match (k, world_size) {
            (0, Some(w)) => format!("rank {} of world size {w} {text}", rank_ranges(ranks)),
            _ => format!("rank {} {text}", rank_ranges(ranks)),
        })
        .collect();
    format!(
        "{}: simulating the {present} ranks present; {MISSING_RANKS_TAIL}",
        text.join(", ")
    )
}

/// How [`missing_ranks_warning`] ends, so that a caller can tell that
/// warning among a job's others.
pub const MISSING_RANKS_TAIL: &str = "their collectives rendezvous among those present";
