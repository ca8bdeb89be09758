//! Replaying a multi-rank job, and what its rendezvous say about waiting.
//!
//! A [`JobGraph`] is one graph holding every rank, plus the rendezvous that
//! couple matched collectives; [`simulate_job`] replays it like any graph,
//! except that a collective task ends at `max(start of every participant) +
//! its duration` (its transfer time). [`rendezvous_times`] and
//! [`rank_waits`] read, from measured or replayed times alike, how long each
//! rank waited for its peers and which rank kept the others waiting;
//! [`job_critical_path`] walks back across ranks through the participant
//! that arrived last.

use lumos_graph::{JobGraph, RendezvousKind, TaskId};

use crate::critical_path::{
    anchor_ns, hop_bound, step_back, summarize, BoundKind, CriticalPathSummary, TimedHop,
};
use crate::error::SimError;
use crate::metrics::TaskTimes;
use crate::options::SimOptions;
use crate::scheduler::{simulate_with_rendezvous, Bound, Schedule};

/// Replays every rank of `job` in one simulation, each rendezvous coupling
/// its collective tasks (see [`simulate_with_rendezvous`]). The schedule is
/// indexed by job-graph task, on the job timeline.
pub fn simulate_job(job: &JobGraph, opts: &SimOptions) -> Result<Schedule, SimError> {
    simulate_with_rendezvous(&job.graph, &job.rendezvous, opts)
}

/// How one rendezvous played out under some task times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RendezvousTimes {
    /// Position in the rendezvous' tasks of the participant that started
    /// last (the first of them on ties): the one the others waited for.
    pub last: usize,
    /// When it started: the earliest moment the transfer could begin.
    pub last_start_ns: i64,
    /// Per participant: the last start minus its own start, the time it sat
    /// in the collective waiting for its peers (skew); 0 for an eager send,
    /// which does not wait.
    pub wait_ns: Vec<i64>,
    /// Per participant: its end minus the last start (minus its own start
    /// for an eager send), the transfer itself.
    pub transfer_ns: Vec<i64>,
    /// The latest end minus the earliest end of the participants that wait
    /// (0 for a point-to-point pair).
    pub end_spread_ns: i64,
}

impl RendezvousTimes {
    /// The longest wait: the last start minus the first.
    pub fn skew_ns(&self) -> i64 {
        self.wait_ns.iter().copied().max().unwrap_or(0)
    }
}

/// Times every rendezvous of `job` under `times` (a replay of the job, or
/// the measured times on the job timeline that `merge` returns).
pub fn rendezvous_times<T: TaskTimes + ?Sized>(job: &JobGraph, times: &T) -> Vec<RendezvousTimes> {
    job.rendezvous
        .iter()
        .map(|r| {
            let starts: Vec<i64> = r.tasks.iter().map(|&t| times.start_of(t)).collect();
            let ends: Vec<i64> = r.tasks.iter().map(|&t| times.end_of(t)).collect();
            let (last, last_start) =
                starts
                    .iter()
                    .copied()
                    .enumerate()
                    .fold(
                        (0, i64::MIN),
                        |best, (i, s)| if s > best.1 { (i, s) } else { best },
                    );
            let waiting_ends = ends
                .iter()
                .enumerate()
                .filter(|&(i, _)| r.waits(i))
                .map(|(_, &e)| e);
            let lo = waiting_ends.clone().min().unwrap_or(0);
            let hi = waiting_ends.max().unwrap_or(0);
            // What a participant's transfer counts from: the last start if
            // it waits for the others, its own start if not.
            let from = |i: usize| if r.waits(i) { last_start } else { starts[i] };
            RendezvousTimes {
                last,
                last_start_ns: last_start,
                wait_ns: (0..starts.len()).map(|i| from(i) - starts[i]).collect(),
                transfer_ns: (0..ends.len()).map(|i| ends[i] - from(i)).collect(),
                end_spread_ns: hi - lo,
            }
        })
        .collect()
}

/// Waiting, summed per rank.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RankWait {
    /// Time this rank's collectives spent waiting for peers to arrive.
    pub wait_ns: i64,
    /// Time the other participants spent waiting in the collectives this
    /// rank arrived at last: how long it kept the others waiting.
    pub caused_ns: i64,
    /// In how many collectives it arrived last.
    pub last_arrivals: usize,
}

/// Sums [`rendezvous_times`] per rank, indexed like [`JobGraph::ranks`].
pub fn rank_waits(job: &JobGraph, times: &[RendezvousTimes]) -> Vec<RankWait> {
    let mut out = vec![RankWait::default(); job.ranks.len()];
    for (r, t) in job.rendezvous.iter().zip(times) {
        if r.kind == RendezvousKind::Uncoupled {
            // Replayed as if unmatched: nobody waited in it.
            continue;
        }
        let mut others = 0;
        for (i, &task) in r.tasks.iter().enumerate() {
            let w = &mut out[job.rank_of(task)].wait_ns;
            *w = w.saturating_add(t.wait_ns[i]);
            if i != t.last {
                others = t.wait_ns[i].saturating_add(others);
            }
        }
        if let Some(&task) = r.tasks.get(t.last) {
            let w = &mut out[job.rank_of(task)];
            w.caused_ns = w.caused_ns.saturating_add(others);
            w.last_arrivals += 1;
        }
    }
    out
}

/// What placed a task on a job's critical path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobBound {
    /// A constraint within its rank, as in a single-rank replay.
    Local(Bound),
    /// Its end was set by `last`, the participant of its rendezvous that
    /// started last (usually on another rank); the path continues there.
    Rendezvous {
        /// The participant that arrived last.
        last: TaskId,
    },
}

/// One hop of a job's critical path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobHop {
    /// The task.
    pub task: TaskId,
    /// What placed it.
    pub bound: JobBound,
    /// True when the path passes through the moment this blocking call
    /// issued rather than through its start.
    pub at_issue: bool,
}

/// A job's critical path, summarized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobCriticalPath {
    /// Totals per class of constraint ([`BoundKind::Rendezvous`] for the
    /// jumps to the rank that arrived last) and the longest tasks.
    pub summary: CriticalPathSummary,
    /// Time on the path per rank, indexed like [`JobGraph::ranks`].
    pub per_rank_ns: Vec<i64>,
    /// How many times the path moves from one rank to another.
    pub rank_changes: usize,
}

/// Walks back from `last` through what bound each start, and through a
/// rendezvous to the participant that started last whenever that one, not
/// the task's own start, set its end. Hops in time order.
pub fn job_critical_path_hops(job: &JobGraph, schedule: &Schedule, last: TaskId) -> Vec<JobHop> {
    let rv_of = job.rendezvous_of_tasks();
    let graph = &job.graph;
    let mut hops = Vec::new();
    let mut task = last;
    let mut at_issue = false;
    // Every hop goes to a task placed earlier in the replay (a rendezvous
    // jump goes to a start before this task's end, and that start does not
    // depend on this task), so the walk ends; the cap guards against a
    // schedule edited by hand.
    let cap = 2 * schedule.len() + 2;
    while hops.len() < cap {
        if !at_issue {
            let waiting = rv_of.get(task.idx()).copied().flatten().filter(|&rv| {
                let r = &job.rendezvous[rv as usize];
                r.tasks
                    .iter()
                    .position(|&m| m == task)
                    .is_some_and(|p| r.waits(p))
            });
            if let Some(rv) = waiting {
                let peers = &job.rendezvous[rv as usize].tasks;
                let latest = peers
                    .iter()
                    .copied()
                    .max_by_key(|&p| (schedule.start_ns[p.idx()], std::cmp::Reverse(p)));
                if let Some(p) = latest {
                    if schedule.start_ns[p.idx()] > schedule.start_ns[task.idx()] {
                        hops.push(JobHop {
                            task,
                            bound: JobBound::Rendezvous { last: p },
                            at_issue: false,
                        });
                        task = p;
                        continue;
                    }
                }
            }
        }
        let bound = hop_bound(schedule, task, at_issue);
        hops.push(JobHop {
            task,
            bound: JobBound::Local(bound),
            at_issue,
        });
        let Some((prev, prev_at_issue)) = step_back(graph, schedule, bound) else {
            break;
        };
        task = prev;
        at_issue = prev_at_issue;
    }
    hops.reverse();
    hops
}

/// Summarizes the job's critical path ending at `last`: time per class of
/// constraint (the transfer after a rendezvous jump counts as
/// [`BoundKind::Rendezvous`]), per rank, and the `top_n` longest tasks.
pub fn job_critical_path(
    job: &JobGraph,
    schedule: &Schedule,
    last: TaskId,
    top_n: usize,
) -> JobCriticalPath {
    let hops = job_critical_path_hops(job, schedule, last);
    let graph = &job.graph;
    let time_on_path = |hop: &JobHop| match (hop.bound, hop.at_issue, schedule.wait(hop.task)) {
        (JobBound::Rendezvous { last }, _, _) => schedule.start_ns[last.idx()],
        (_, true, Some(wait)) => wait.issue_ns,
        _ => schedule.start_ns[hop.task.idx()],
    };
    // The moment of `hop` the next hop counts from: its start when the next
    // is a rendezvous it arrived at last or a start-anchored successor.
    let anchor_of = |hop: &JobHop, next: Option<&JobHop>| -> i64 {
        let at = time_on_path(hop);
        match next.map(|n| n.bound) {
            Some(JobBound::Rendezvous { .. }) => at,
            Some(JobBound::Local(b)) => anchor_ns(graph, schedule, hop.task, at, Some(b)),
            None => anchor_ns(graph, schedule, hop.task, at, None),
        }
    };
    let timed: Vec<TimedHop> = hops
        .iter()
        .enumerate()
        .map(|(i, hop)| TimedHop {
            task: hop.task,
            kind: match hop.bound {
                JobBound::Local(b) => BoundKind::of(graph, b),
                JobBound::Rendezvous { .. } => BoundKind::Rendezvous,
            },
            at: time_on_path(hop),
            anchor: anchor_of(hop, hops.get(i + 1)),
        })
        .collect();
    let mut per_rank_ns = vec![0i64; job.ranks.len()];
    let mut rank_changes = 0;
    let mut prev_anchor = 0i64;
    let mut prev_rank = None;
    for hop in &timed {
        let r = job.rank_of(hop.task);
        if let Some(slot) = per_rank_ns.get_mut(r) {
            *slot = slot.saturating_add(hop.anchor.saturating_sub(prev_anchor));
        }
        if prev_rank.is_some_and(|p| p != r) {
            rank_changes += 1;
        }
        prev_rank = Some(r);
        prev_anchor = hop.anchor;
    }
    JobCriticalPath {
        summary: summarize(timed.into_iter(), top_n),
        per_rank_ns,
        rank_changes,
    }
}
