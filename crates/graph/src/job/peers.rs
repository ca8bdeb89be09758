//! Representatives with modelled peers: a large job replayed from one rank
//! per group of ranks that run the same communication program
//! ([`group_by_program`](super::group_by_program)), where the collectives
//! inside a group, whose other participants are not replayed, wait for
//! peers modelled from the group's measurement.
//!
//! Groups are found from a rank's signature and steps alone
//! ([`ProgramGroups`]); a representative's peers are modelled
//! ([`PeerModel`]) from a small [`RankProgram`] (two numbers per
//! communication task) of each member of its own process groups inside its
//! program group: its tensor- and data-parallel peers, a few dozen ranks
//! whatever the size of the job. So a job of thousands of ranks is replayed
//! holding one graph per group.
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
//! Over the members of the task's process group (every one in the
//! representative's program group, so every one runs the same program and
//! its task `i` is the same collective): the member that arrived last
//! waited least, so the shortest duration is the transfer, and the last
//! member arrived `max(interval) - interval of the representative` after
//! the representative. The
//! representative's task is replayed for `transfer + that lateness`: its
//! peers arrive with the group's measured spread, after the
//! representative's replayed arrival. The first task of a process group
//! (no previous one to measure from) gets no lateness.

use std::collections::BTreeMap;

use super::{CollectiveMatch, CommPattern, JobGraph, ProgramSignature, RankGraph};
use crate::model::{Span, TaskId};

/// What the peer model needs of one communication task of a rank (see the
/// module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommTiming {
    /// Measured start minus the measured end of the previous
    /// communication task of the same process group, on the rank's own
    /// clock; `None` for the first of its group, or when the task records
    /// no process group.
    pub interval_ns: Option<i64>,
    /// Measured start on the rank's own clock (absolute, as
    /// [`RankGraph::clock_start_ns`]).
    pub start_ns: i64,
    /// Measured end on the rank's own clock.
    pub end_ns: i64,
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
                start_ns: r.clock_start_ns(c.task),
                end_ns: r.clock_end_ns(c.task),
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

/// One group of ranks that run the same program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramGroup {
    /// The common signature.
    pub signature: ProgramSignature,
    /// The ranks, ascending; never empty. The first is the representative.
    pub ranks: Vec<u32>,
    /// Per member (in `ranks` order), its measured step lengths.
    pub steps_ns: Vec<Vec<i64>>,
    /// Per member, what its file says of the member itself
    /// ([`MemberFacts`]); empty where not known, and then each member is
    /// taken to be what its representative is.
    pub facts: Vec<MemberFacts>,
}

/// What a member of a [`ProgramGroup`] says of itself that the job's
/// assembly tests (`lumos replay --representatives`, through
/// [`assemble_representatives`](super::assemble_representatives)): the
/// world size it records, and how far its clock is from its
/// representative's. Read from its summary and program, not its graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberFacts {
    /// Its trace (of an `.lgraph` file, the trace it was made from), to
    /// name it in warnings as `--job` names it.
    pub path: std::path::PathBuf,
    /// `distributedInfo.world_size`, if recorded.
    pub world_size: Option<u32>,
    /// How far its clock is ahead of its representative's, in ns: the
    /// median over its communication tasks of its end minus the
    /// representative's end of the same task ([`member_clock_ns`]);
    /// `None` when not known (no communication task, or its program was
    /// not read). The representative's own is 0.
    pub clock_ns: Option<i64>,
}

impl ProgramGroup {
    /// The rank replayed for the group: its lowest.
    pub fn representative(&self) -> u32 {
        self.ranks[0]
    }

    /// True when `rank` is a member.
    pub fn contains(&self, rank: u32) -> bool {
        self.ranks.binary_search(&rank).is_ok()
    }

    /// The group without the members at `positions` (in `ranks` order):
    /// the ranks the job's assembly left out of it.
    pub fn without(&self, positions: &[usize]) -> ProgramGroup {
        let keep = |k: &usize| !positions.contains(k);
        ProgramGroup {
            signature: self.signature,
            ranks: (self.ranks.iter().enumerate())
                .filter(|(k, _)| keep(k))
                .map(|(_, &r)| r)
                .collect(),
            steps_ns: (self.steps_ns.iter().enumerate())
                .filter(|(k, _)| keep(k))
                .map(|(_, s)| s.clone())
                .collect(),
            facts: (self.facts.iter().enumerate())
                .filter(|(k, _)| keep(k))
                .map(|(_, f)| f.clone())
                .collect(),
        }
    }
}

/// How far a member's clock is ahead of its representative's, in ns, from
/// the ends of their communication tasks on their own clocks (`member`
/// and `rep`, in issue order; [`CommTiming::end_ns`]): the median of the
/// differences task by task. Equal programs issue the same collectives in
/// the same order, and a collective ends on all its participants at one
/// moment; a task of another process group of the same program ends
/// within a step of it, seconds at most, which is all the test of a clock
/// hours away needs. `None` without a task.
pub fn member_clock_ns(member: &[i64], rep: &[i64]) -> Option<i64> {
    let mut d: Vec<i64> = (member.iter().zip(rep))
        .map(|(m, r)| m.saturating_sub(*r))
        .collect();
    if d.is_empty() {
        return None;
    }
    d.sort_unstable();
    Some(d[d.len() / 2])
}

/// Groups ranks by program, one rank at a time and in any order, from what
/// a rank's summary holds (its signature and measured steps).
#[derive(Debug, Clone, Default)]
pub struct ProgramGroups {
    by_signature: BTreeMap<ProgramSignature, Vec<Added>>,
}

/// One rank as added to [`ProgramGroups`]: its rank, measured steps and,
/// where given, facts.
type Added = (u32, Vec<i64>, Option<MemberFacts>);

impl ProgramGroups {
    /// No ranks yet.
    pub fn new() -> ProgramGroups {
        ProgramGroups::default()
    }

    /// Adds one rank, with its program's signature and measured steps.
    pub fn add(&mut self, rank: u32, signature: ProgramSignature, steps_ns: Vec<i64>) {
        self.by_signature
            .entry(signature)
            .or_default()
            .push((rank, steps_ns, None));
    }

    /// [`ProgramGroups::add`], with what the rank's file says of it. The
    /// groups have [`ProgramGroup::facts`] when every rank was added so.
    pub fn add_with(
        &mut self,
        rank: u32,
        signature: ProgramSignature,
        steps_ns: Vec<i64>,
        facts: MemberFacts,
    ) {
        self.by_signature
            .entry(signature)
            .or_default()
            .push((rank, steps_ns, Some(facts)));
    }

    /// The groups, ordered by representative.
    pub fn finish(self) -> Vec<ProgramGroup> {
        let mut out: Vec<ProgramGroup> = self
            .by_signature
            .into_iter()
            .map(|(signature, mut members)| {
                members.sort_by_key(|m| m.0);
                let mut ranks = Vec::with_capacity(members.len());
                let mut steps_ns = Vec::with_capacity(members.len());
                let mut facts: Option<Vec<MemberFacts>> = Some(Vec::new());
                for (r, s, f) in members {
                    ranks.push(r);
                    steps_ns.push(s);
                    match (f, facts.as_mut()) {
                        (Some(f), Some(all)) => all.push(f),
                        _ => facts = None,
                    }
                }
                ProgramGroup {
                    signature,
                    ranks,
                    steps_ns,
                    facts: facts.unwrap_or_default(),
                }
            })
            .collect();
        out.sort_by_key(ProgramGroup::representative);
        out
    }
}

/// One modelled task of a representative: its process group (an index
/// into [`PeerModel::sets`]) and what has been folded in of the members.
#[derive(Debug, Clone)]
struct Slot {
    set: usize,
    /// Over the members of its process group.
    min_duration: Option<i64>,
    /// Over every member of the program group.
    max_interval: Option<i64>,
}

/// The modelled peers of one representative (see the module
/// documentation): built from its graph and group, it takes in the
/// programs of the group's members one at a time, in any order (memory:
/// one slot per communication task, whatever the group's size), and
/// gives each collective inside the group its duration.
#[derive(Debug, Clone)]
pub struct PeerModel {
    rank: u32,
    /// The program group's ranks, ascending.
    group: Vec<u32>,
    /// The distinct process groups of the modelled tasks, ascending ranks.
    sets: Vec<Vec<u32>>,
    /// Per communication task; `None` when it is not modelled (not a
    /// group collective, process group not recorded, or reaching outside
    /// the program group).
    slots: Vec<Option<Slot>>,
    /// The representative's own intervals, once taken in.
    own: Option<Vec<Option<i64>>>,
}

impl PeerModel {
    /// The model of `rep`, the representative of `group`.
    pub fn new(rep: &RankGraph, group: &ProgramGroup) -> PeerModel {
        let mut sets: Vec<Vec<u32>> = Vec::new();
        let mut set_of: BTreeMap<u32, Option<usize>> = BTreeMap::new();
        let slots = rep
            .comms
            .iter()
            .map(|c| {
                let g = c.group?;
                if c.pattern != CommPattern::Group {
                    return None;
                }
                let set = (*set_of.entry(g).or_insert_with(|| {
                    let mut members: Vec<u32> = rep
                        .groups
                        .get(g as usize)?
                        .iter()
                        .map(|&r| u32::try_from(r).ok().filter(|&r| group.contains(r)))
                        .collect::<Option<_>>()?;
                    members.sort_unstable();
                    members.dedup();
                    if members.len() < 2 || members.binary_search(&rep.rank).is_err() {
                        return None;
                    }
                    sets.push(members);
                    Some(sets.len() - 1)
                }))?;
                Some(Slot {
                    set,
                    min_duration: None,
                    max_interval: None,
                })
            })
            .collect();
        PeerModel {
            rank: rep.rank,
            group: group.ranks.clone(),
            sets,
            slots,
            own: None,
        }
    }

    /// The representative.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// True when the model models anything, and so needs the group's
    /// programs.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Takes in one member's program (the representative's own too); a
    /// rank outside the group is ignored.
    pub fn add(&mut self, p: &RankProgram) {
        if self.group.binary_search(&p.rank).is_err() {
            return;
        }
        let in_set: Vec<bool> = self
            .sets
            .iter()
            .map(|s| s.binary_search(&p.rank).is_ok())
            .collect();
        // Equal signatures have equally many communication tasks; `zip`
        // keeps a program of another length from indexing out of bounds.
        for (slot, c) in self.slots.iter_mut().zip(&p.comms) {
            let Some(slot) = slot else { continue };
            slot.max_interval = slot.max_interval.max(c.interval_ns);
            if in_set[slot.set] {
                let d = c.end_ns.saturating_sub(c.start_ns);
                slot.min_duration = Some(slot.min_duration.map_or(d, |m| m.min(d)));
            }
        }
        if p.rank == self.rank {
            self.own = Some(p.comms.iter().map(|c| c.interval_ns).collect());
        }
    }

    /// Per communication task of the representative, its modelled
    /// duration (`None`: not modelled, or its own program not taken in).
    pub fn durations(&self) -> Vec<Option<i64>> {
        let Some(own) = &self.own else {
            return vec![None; self.slots.len()];
        };
        self.slots
            .iter()
            .zip(own.iter().copied().chain(std::iter::repeat(None)))
            .map(|(slot, own)| {
                let s = slot.as_ref()?;
                let transfer = s.min_duration?;
                let late = match (s.max_interval, own) {
                    (Some(l), Some(o)) => l.saturating_sub(o).max(0),
                    _ => 0,
                };
                Some(transfer.saturating_add(late))
            })
            .collect()
    }
}

/// Replays, in a job merged from representatives (`ranks`, as given to
/// [`merge`](super::merge) with their match `m`), each representative's
/// collectives inside its group against modelled peers: each unmatched
/// communication task with a duration in `durations` (indexed like
/// `ranks`, then like each rank's [`RankGraph::comms`];
/// [`PeerModel::durations`]) takes it. Returns how many tasks were
/// modelled.
pub fn model_group_peers(
    job: &mut JobGraph,
    ranks: &[RankGraph],
    m: &CollectiveMatch,
    durations: &[Vec<Option<i64>>],
) -> usize {
    let mut modelled = 0;
    for (pos, r) in ranks.iter().enumerate() {
        let (Some(first), Some(unmatched), Some(d)) = (
            job.ranks.get(pos).map(|p| p.tasks.start),
            m.unmatched.get(pos),
            durations.get(pos),
        ) else {
            continue;
        };
        for &ci in unmatched {
            if let (Some(c), Some(Some(ns))) = (r.comms.get(ci as usize), d.get(ci as usize)) {
                job.set_duration(TaskId(first + c.task.0), *ns);
                modelled += 1;
            }
        }
    }
    modelled
}
