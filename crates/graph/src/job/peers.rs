//! Representatives with modelled peers: a large job replayed from one rank
//! per group of ranks that run the same communication program
//! ([`group_by_program`](super::group_by_program)), where the collectives
//! inside a group, whose other participants are not replayed, wait for
//! peers modelled from the group's measurement.
//!
//! What is kept of every rank is small ([`RankProgram`]: its signature,
//! measured step lengths and two numbers per communication task), so the
//! groups of a job of thousands of ranks are found, and their peers
//! modelled, without holding more than one graph per group
//! ([`ProgramGroups`]).
//!
//! The model, per communication task `i` of a group's program (the same
//! task on every member: equal signatures mean the same collectives in the
//! same issue order). In a run where the members wait for each other, a
//! collective ends on every member at `last arrival + transfer`, and each
//! member arrives some time after the previous collective of the same
//! process group ended, when they were last together. So, from each
//! member's own clock (no alignment needed):
//!
//! - its *interval*: the task's measured start minus the measured end of
//!   the previous task of its process group;
//! - its *duration*: measured end minus start, waiting included.
//!
//! The member that arrived last waited least: the shortest duration over
//! the members is the transfer. The last member arrived `max(interval) -
//! interval of the representative` after the representative. The
//! representative's task is replayed for `transfer + that lateness`: its
//! peers arrive with the group's measured spread, after the
//! representative's replayed arrival. The first task of a process group
//! (no previous one to measure from) gets no lateness.

use std::collections::BTreeMap;

use super::{CollectiveMatch, CommPattern, JobGraph, ProgramSignature, RankGraph};
use crate::model::Span;

/// What the peer model needs of one communication task of a rank (see the
/// module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommTiming {
    /// Measured start minus the measured end of the previous
    /// communication task of the same process group, on the rank's own
    /// clock; `None` for the first of its group, or when the task records
    /// no process group.
    pub interval_ns: Option<i64>,
    /// Measured duration, waiting included.
    pub duration_ns: i64,
}

/// What a job with representatives keeps of every rank: enough to group it
/// and to model its group's peers, not its graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankProgram {
    /// The rank.
    pub rank: u32,
    /// Its communication program ([`program_signature`](super::program_signature)).
    pub signature: ProgramSignature,
    /// Its measured step lengths (`ProfilerStep#N` to the end of the GPU
    /// work launched in it), in step order.
    pub steps_ns: Vec<i64>,
    /// Per communication task, in issue order ([`RankGraph::comms`]).
    pub comms: Vec<CommTiming>,
}

/// The program of rank `r`; `steps` are its measured step spans (as
/// `lumos_sim::step_spans` gives them: lumos-graph does not replay).
pub fn rank_program(r: &RankGraph, steps: &[Span]) -> RankProgram {
    let mut last_end: BTreeMap<Option<&str>, i64> = BTreeMap::new();
    let comms = r
        .comms
        .iter()
        .map(|c| {
            let span = r.measured.tasks[c.task.idx()];
            let pg = r.graph.collectives[c.collective as usize]
                .process_group
                .as_deref();
            let interval_ns = match pg {
                Some(_) => last_end
                    .insert(pg, span.end_ns)
                    .map(|prev| span.start_ns.saturating_sub(prev)),
                None => None,
            };
            CommTiming {
                interval_ns,
                duration_ns: span.len_ns(),
            }
        })
        .collect();
    RankProgram {
        rank: r.rank,
        signature: super::program_signature(r),
        steps_ns: steps.iter().map(Span::len_ns).collect(),
        comms,
    }
}

/// One group of ranks that run the same program, with its representative's
/// modelled peers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramGroup {
    /// The common signature.
    pub signature: ProgramSignature,
    /// The ranks, ascending; never empty. The first is the representative.
    pub ranks: Vec<u32>,
    /// Per member (in `ranks` order), its measured step lengths.
    pub steps_ns: Vec<Vec<i64>>,
    /// Per communication task of the program: how long the
    /// representative's task is replayed when the task is a collective
    /// inside the group (transfer plus the last peer's lateness, see the
    /// module documentation).
    pub peer_durations_ns: Vec<i64>,
}

impl ProgramGroup {
    /// The rank replayed for the group: its lowest.
    pub fn representative(&self) -> u32 {
        self.ranks[0]
    }
}

/// Per communication task, over the members seen so far.
#[derive(Debug, Clone)]
struct Fold {
    ranks: Vec<(u32, Vec<i64>)>,
    /// The lowest rank's intervals.
    rep: (u32, Vec<Option<i64>>),
    min_duration: Vec<i64>,
    max_interval: Vec<Option<i64>>,
}

/// Groups ranks by program, one [`RankProgram`] at a time and in any order,
/// keeping per group only what its model needs: memory follows the number
/// of groups and communication tasks, not of ranks.
#[derive(Debug, Clone, Default)]
pub struct ProgramGroups {
    by_signature: BTreeMap<ProgramSignature, Fold>,
}

impl ProgramGroups {
    /// No ranks yet.
    pub fn new() -> ProgramGroups {
        ProgramGroups::default()
    }

    /// Adds one rank.
    pub fn add(&mut self, p: &RankProgram) {
        let intervals = || p.comms.iter().map(|c| c.interval_ns).collect::<Vec<_>>();
        let f = self
            .by_signature
            .entry(p.signature)
            .or_insert_with(|| Fold {
                ranks: Vec::new(),
                rep: (p.rank, intervals()),
                min_duration: vec![i64::MAX; p.comms.len()],
                max_interval: vec![None; p.comms.len()],
            });
        f.ranks.push((p.rank, p.steps_ns.clone()));
        if p.rank < f.rep.0 {
            f.rep = (p.rank, intervals());
        }
        // Equal signatures have equally many communication tasks; `zip`
        // keeps a hash collision from indexing out of bounds.
        for ((c, d), m) in p
            .comms
            .iter()
            .zip(&mut f.min_duration)
            .zip(&mut f.max_interval)
        {
            *d = (*d).min(c.duration_ns);
            *m = (*m).max(c.interval_ns);
        }
    }

    /// The groups, ordered by representative.
    pub fn finish(self) -> Vec<ProgramGroup> {
        let mut out: Vec<ProgramGroup> = self
            .by_signature
            .into_iter()
            .map(|(signature, mut f)| {
                f.ranks.sort_by_key(|r| r.0);
                let peer_durations_ns = f
                    .min_duration
                    .iter()
                    .zip(&f.max_interval)
                    .zip(&f.rep.1)
                    .map(|((&transfer, &latest), &own)| {
                        let late = match (latest, own) {
                            (Some(l), Some(o)) => l.saturating_sub(o).max(0),
                            _ => 0,
                        };
                        transfer.saturating_add(late)
                    })
                    .collect();
                let (ranks, steps_ns) = f.ranks.into_iter().unzip();
                ProgramGroup {
                    signature,
                    ranks,
                    steps_ns,
                    peer_durations_ns,
                }
            })
            .collect();
        out.sort_by_key(ProgramGroup::representative);
        out
    }
}

/// Replays, in a job merged from representatives (`ranks`, as given to
/// [`merge`](super::merge) with their match `m`), each representative's
/// collectives inside its group against modelled peers: every unmatched
/// group collective whose process group's ranks all belong to the
/// representative's group (and are more than itself) takes the group's
/// [`ProgramGroup::peer_durations_ns`] as its duration. Collectives whose
/// process group is not recorded keep their measured duration. Returns how
/// many tasks were modelled.
pub fn model_group_peers(
    job: &mut JobGraph,
    ranks: &[RankGraph],
    m: &CollectiveMatch,
    groups: &[ProgramGroup],
) -> usize {
    let mut modelled = 0;
    for (pos, r) in ranks.iter().enumerate() {
        let Some(group) = groups.iter().find(|g| g.representative() == r.rank) else {
            continue;
        };
        let (Some(part), Some(unmatched)) = (job.ranks.get(pos), m.unmatched.get(pos)) else {
            continue;
        };
        for &ci in unmatched {
            let c = &r.comms[ci as usize];
            let Some(members) = c.group.and_then(|g| r.groups.get(g as usize)) else {
                continue;
            };
            let inside = members.len() > 1
                && members.iter().all(|&x| {
                    u32::try_from(x).is_ok_and(|x| group.ranks.binary_search(&x).is_ok())
                });
            let duration = group.peer_durations_ns.get(ci as usize);
            if let (CommPattern::Group, true, Some(&d)) = (c.pattern, inside, duration) {
                job.graph.tasks[part.task(c.task).idx()].duration_ns = d;
                modelled += 1;
            }
        }
    }
    modelled
}
