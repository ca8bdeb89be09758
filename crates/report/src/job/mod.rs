//! Multi-rank jobs: the `job` object of `lumos inspect --json` and `lumos
//! replay --json`. Without a replay it holds the ranks' identities, how
//! their collectives matched and how their clocks aligned
//! ([`job_report`]); a joint replay ([`replay_job`]) adds the job's steps
//! (the slowest rank's), who waited for whom in each collective, waiting
//! per rank (the straggler report) and the critical path across ranks.

mod replay;
mod representatives;

use std::collections::BTreeMap;

use lumos_graph::Job;
use serde::Serialize;

use crate::replay::BoundShare;
use crate::units::us;

pub use replay::{
    distinct_ranks, replay_job, replay_jointly, replay_jointly_owned, replay_jointly_scaled,
    replay_rank_alone, room_to_replay, room_to_replay_keeping_job, scaled_ranks_in,
    slowest_rank_steps, JobReplayed, OwnRank, RankScale, Slowest, JOINT_REPLAY_BYTES_PER_TASK,
    JOINT_REPLAY_KEEPING_JOB_BYTES_PER_TASK,
};
pub use representatives::{
    replay_representatives, replay_representatives_kept, ProgramGroupReport,
    RepresentativesReplayed, RepresentativesReport, StepSpread,
};

/// The job object.
#[derive(Debug, Clone, Serialize)]
pub struct JobReport {
    /// Ranks present, ascending.
    pub ranks: Vec<u32>,
    /// How each was found (`distributedInfo`, `file_name`, `default`).
    pub rank_sources: Vec<&'static str>,
    /// The world size, if any file records it.
    pub world_size: Option<u32>,
    /// Ranks no file of the job holds (no file, unreadable, left out).
    pub missing_ranks: Vec<u32>,
    /// Files given as ranks that were left out of the job, and why; only
    /// when there are some.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOutReport>,
    /// Soft problems with the set of files, and of the merge.
    pub warnings: Vec<String>,
    /// How collectives matched across ranks.
    pub matching: MatchingReport,
    /// How the ranks' clocks were aligned.
    pub clock: ClockReport,
    /// Replay only: the what-if edits applied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub what_if: Vec<String>,
    /// Replay only: each step across ranks; the job's step time is the
    /// slowest rank's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<JobStep>>,
    /// Replay only: per matched collective, who waited and the transfer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<Vec<CollectiveReport>>,
    /// Replay only: waiting per rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Vec<RankWaitReport>>,
    /// Replay only: the critical path of the slowest rank, across ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_path: Option<JobPathReport>,
}

impl JobReport {
    /// The straggler: the rank that kept the others waiting longest
    /// (measured), the lowest of equal ones; none if no rank did.
    pub fn straggler(&self) -> Option<&RankWaitReport> {
        straggler_of(self.waiting.as_deref()?)
    }
}

fn straggler_of(waiting: &[RankWaitReport]) -> Option<&RankWaitReport> {
    (waiting.iter())
        .filter(|w| w.measured.caused_us > 0.0)
        .max_by(|a, b| {
            (a.measured.caused_us.total_cmp(&b.measured.caused_us)).then(b.rank.cmp(&a.rank))
        })
}

/// A file given as a rank that was left out of the job.
#[derive(Debug, Clone, Serialize)]
pub struct LeftOutReport {
    /// The rank it records.
    pub rank: u32,
    /// The file.
    pub path: String,
    /// Why: `no_shared_collective`, `no_tasks`, `outside_world` or
    /// `far_clock`.
    pub reason: &'static str,
    /// The warning that names it.
    pub detail: String,
}

impl LeftOutReport {
    /// The report of `l`.
    pub fn of(l: &lumos_graph::LeftOut) -> LeftOutReport {
        LeftOutReport {
            rank: l.rank,
            path: l.path.display().to_string(),
            reason: l.reason_name(),
            detail: l.to_string(),
        }
    }
}

/// How collectives matched across ranks.
#[derive(Debug, Clone, Serialize)]
pub struct MatchingReport {
    /// Matched sets (one collective, every participant).
    pub sets: usize,
    /// Tasks in them.
    pub matched_tasks: usize,
    /// Communication tasks in none.
    pub unmatched_tasks: usize,
    /// Matched tasks per matching rule.
    pub by_rule: BTreeMap<&'static str, usize>,
    /// Disagreements between ranks, never paired.
    pub problems: Vec<ProblemReport>,
    /// Per rank.
    pub per_rank: Vec<RankCommReport>,
}

/// A disagreement between ranks about their collectives.
#[derive(Debug, Clone, Serialize)]
pub struct ProblemReport {
    /// Its kind (`count_mismatch`, ...).
    pub kind: &'static str,
    /// Which collectives.
    pub label: String,
    /// What disagrees.
    pub detail: String,
    /// Tasks left unmatched by it.
    pub unmatched_tasks: usize,
}

/// One rank's communication tasks.
#[derive(Debug, Clone, Serialize)]
pub struct RankCommReport {
    /// The rank.
    pub rank: u32,
    /// Its communication tasks.
    pub comm_tasks: usize,
    /// How many matched nothing.
    pub unmatched: usize,
}

/// How the ranks' clocks were aligned.
#[derive(Debug, Clone, Serialize)]
pub struct ClockReport {
    /// The rank whose clock the others are aligned to.
    pub reference_rank: u32,
    /// Per rank: how far its clock is ahead of the reference rank's.
    pub offsets: Vec<RankOffset>,
    /// Ranks sharing no matched collective with the reference (clock taken
    /// as recorded).
    pub unaligned_ranks: Vec<u32>,
    /// Over matched collectives: latest minus earliest measured end.
    pub end_spread_us: Spread,
    /// The same on the clocks as recorded.
    pub raw_end_spread_us: Spread,
    /// One per host the traces name (absent when none does): its ranks
    /// share its clock and its offset.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostOffset>,
}

/// One host's clock offset, shared by its ranks.
#[derive(Debug, Clone, Serialize)]
pub struct HostOffset {
    /// The host, as the traces name it.
    pub host: String,
    /// Its ranks, ascending.
    pub ranks: Vec<u32>,
    /// How far its clock is ahead of the reference rank's.
    pub offset_us: f64,
    /// How many collective ends of its ranks the offset is the median of
    /// (0 for the reference rank's host).
    pub collective_ends: usize,
    /// Per rank, in `ranks` order: the median of its aligned collective
    /// end minus the other participants' median, how far its own clock
    /// sits from the host's (a few us when the ranks do share a clock).
    pub residual_us: Vec<f64>,
}

/// One rank's clock offset.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RankOffset {
    /// The rank.
    pub rank: u32,
    /// How far its clock is ahead of the reference rank's.
    pub offset_us: f64,
}

/// The median and the maximum of some values.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Spread {
    /// The median (the upper one of an even count).
    pub median: f64,
    /// The maximum.
    pub max: f64,
}

/// One step of the job: the slowest rank's.
#[derive(Debug, Clone, Serialize)]
pub struct JobStep {
    /// The step's position.
    pub index: usize,
    /// Its name on the slowest measured rank.
    pub name: String,
    /// The slowest rank's measured step.
    pub measured_us: f64,
    /// The slowest rank's replayed step.
    pub replayed_us: f64,
    /// (replayed - measured) / measured, %; `None` (JSON null) when the
    /// measured step has no length: no relative error exists.
    pub error_pct: Option<f64>,
    /// Which rank was slowest, measured.
    pub slowest_rank_measured: u32,
    /// Which rank was slowest, replayed.
    pub slowest_rank_replayed: u32,
}

/// One matched collective: who waited and the transfer.
#[derive(Debug, Clone, Serialize)]
pub struct CollectiveReport {
    /// The matched set's label.
    pub label: String,
    /// The rule that matched it.
    pub rule: &'static str,
    /// The collective's name.
    pub name: String,
    /// Its message size, if recorded.
    pub bytes: Option<u64>,
    /// The participants.
    pub ranks: Vec<u32>,
    /// On the measured (aligned) times.
    pub measured: RendezvousReport,
    /// On the replayed times.
    pub replayed: RendezvousReport,
}

/// Who waited for whom in one collective.
#[derive(Debug, Clone, Serialize)]
pub struct RendezvousReport {
    /// The rank that arrived last: the others waited for it.
    pub last_rank: u32,
    /// Last arrival minus first.
    pub skew_us: f64,
    /// Latest end minus earliest end (aligned clocks for measured).
    pub end_spread_us: f64,
    /// Per participant, in `ranks` order: how long it waited.
    pub wait_us: Vec<f64>,
    /// Per participant: its transfer, from the last arrival to its end.
    pub transfer_us: Vec<f64>,
    /// Per participant: its end on the job timeline (aligned clocks, 0 =
    /// the earliest rank's window start).
    pub end_us: Vec<f64>,
}

/// One rank's waiting, measured and replayed.
#[derive(Debug, Clone, Serialize)]
pub struct RankWaitReport {
    /// The rank.
    pub rank: u32,
    /// On the measured times.
    pub measured: WaitUs,
    /// On the replayed times.
    pub replayed: WaitUs,
}

/// One rank's waiting in collectives.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct WaitUs {
    /// Time its collectives waited for peers.
    pub wait_us: f64,
    /// Time the other ranks waited in collectives it arrived at last.
    pub caused_us: f64,
    /// How many collectives it arrived at last.
    pub last_arrivals: usize,
}

/// The job's critical path, across ranks.
#[derive(Debug, Clone, Serialize)]
pub struct JobPathReport {
    /// The rank whose end it starts from (the last to finish).
    pub from_rank: u32,
    /// How many times it moves from one rank to another.
    pub rank_changes: usize,
    /// Time on the path per rank (ranks with none left out).
    pub per_rank_us: Vec<RankTime>,
    /// Per class of constraint.
    pub by_bound: Vec<BoundShare>,
}

/// A rank's time on a path.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RankTime {
    /// The rank.
    pub rank: u32,
    /// Its time.
    pub us: f64,
}

fn spread(v: &[i64]) -> Spread {
    if v.is_empty() {
        return Spread::default();
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    Spread {
        median: us(s[s.len() / 2]),
        max: us(s[s.len() - 1]),
    }
}

/// The parts of the job report that need no replay: identities, matching
/// and clocks.
pub fn job_report(job: &Job) -> JobReport {
    JobReport {
        ranks: job.rank_numbers(),
        rank_sources: job.ranks.iter().map(|m| m.rank_source.as_str()).collect(),
        world_size: job.world_size,
        missing_ranks: job.missing.clone(),
        left_out: job.left_out.iter().map(LeftOutReport::of).collect(),
        warnings: job.warnings.clone(),
        matching: matching_report(job),
        clock: clock_report(job),
        what_if: Vec::new(),
        steps: None,
        collectives: None,
        waiting: None,
        critical_path: None,
    }
}

fn matching_report(job: &Job) -> MatchingReport {
    let m = &job.matching;
    let mut by_rule = BTreeMap::new();
    for s in &m.sets {
        *by_rule.entry(s.rule.as_str()).or_insert(0) += s.members.len();
    }
    MatchingReport {
        sets: m.sets.len(),
        matched_tasks: m.matched_tasks(),
        unmatched_tasks: m.unmatched_tasks(),
        by_rule,
        problems: m
            .problems
            .iter()
            .map(|p| ProblemReport {
                kind: p.kind.as_str(),
                label: p.label.clone(),
                detail: p.detail.clone(),
                unmatched_tasks: p.unmatched_tasks,
            })
            .collect(),
        per_rank: job
            .graphs
            .iter()
            .zip(&m.unmatched)
            .map(|(g, u)| RankCommReport {
                rank: g.rank,
                comm_tasks: g.comms.len(),
                unmatched: u.len(),
            })
            .collect(),
    }
}

fn clock_report(job: &Job) -> ClockReport {
    let rank = |p: u32| job.ranks[p as usize].rank;
    ClockReport {
        reference_rank: rank(job.clock.reference),
        offsets: job
            .ranks
            .iter()
            .zip(&job.clock.offsets_ns)
            .map(|(m, &o)| RankOffset {
                rank: m.rank,
                offset_us: us(o),
            })
            .collect(),
        unaligned_ranks: job.clock.unaligned.iter().map(|&p| rank(p)).collect(),
        end_spread_us: spread(&job.clock.end_spread_ns),
        raw_end_spread_us: spread(&job.clock.raw_end_spread_ns),
        hosts: job
            .clock
            .hosts
            .iter()
            .map(|h| HostOffset {
                host: h.host.clone(),
                ranks: h.ranks.iter().map(|&p| rank(p)).collect(),
                offset_us: us(h.offset_ns),
                collective_ends: h.evidence,
                residual_us: h
                    .ranks
                    .iter()
                    .map(|&p| us(job.clock.residual_ns.get(p as usize).copied().unwrap_or(0)))
                    .collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_scaled_twice_is_refused_by_the_first_repeat() {
        let s = |rank| RankScale { rank, factor: 2.0 };
        assert_eq!(distinct_ranks(&[s(3), s(1)], "x"), Ok(()));
        assert_eq!(
            distinct_ranks(&[s(3), s(1), s(1), s(3)], "--scale-rank").unwrap_err(),
            "--scale-rank names rank 1 twice; give each rank one factor"
        );
    }

    fn waits(caused_us: &[f64]) -> Vec<RankWaitReport> {
        let w = |caused_us| WaitUs {
            wait_us: 0.0,
            caused_us,
            last_arrivals: 0,
        };
        (caused_us.iter().enumerate())
            .map(|(rank, &c)| RankWaitReport {
                rank: rank as u32,
                measured: w(c),
                replayed: w(0.0),
            })
            .collect()
    }

    #[test]
    fn the_straggler_is_the_lowest_of_equal_ranks_and_none_kept_none_waiting() {
        let rank = |c: &[f64]| straggler_of(&waits(c)).map(|w| w.rank);
        assert_eq!(rank(&[1.0, 3.0, 2.0, 3.0]), Some(1));
        assert_eq!(rank(&[0.0, 0.0]), None);
        assert_eq!(rank(&[]), None);
    }
}
