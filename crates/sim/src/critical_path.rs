//! The critical path of a replay, read back from what bound each start.

use lumos_graph::{Anchor, DepKind, Graph, TaskId};

use crate::scheduler::{Bound, Schedule};

/// One task on the critical path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathHop {
    /// The task.
    pub task: TaskId,
    /// The constraint that placed it on the path.
    pub bound: Bound,
    /// True when the path passes through the moment this blocking call
    /// issued (its launch of the next task) rather than through its start.
    pub at_issue: bool,
}

/// Walks back from `last` through what bound each start, and returns the
/// hops in time order, first to `last`.
///
/// A blocking call that launched work it then waited for can appear twice:
/// once where it issued (launching the work) and once where it resumed.
pub fn critical_path_hops(graph: &Graph, schedule: &Schedule, last: TaskId) -> Vec<PathHop> {
    critical_path_hops_since(graph, schedule, last, i64::MIN)
}

/// [`critical_path_hops`], walking back only until the path reaches a hop
/// placed on it before `since_ns` (that hop included, as it may still run
/// past `since_ns`): the path of one step costs the hops of that step, not
/// those of the whole window before it.
pub fn critical_path_hops_since(
    graph: &Graph,
    schedule: &Schedule,
    last: TaskId,
    since_ns: i64,
) -> Vec<PathHop> {
    let mut hops = Vec::new();
    let mut task = last;
    let mut at_issue = false;
    // Every hop goes to a task that was placed strictly earlier in the
    // replay, so the walk ends; the cap only guards against a schedule that
    // was edited by hand.
    let cap = 2 * schedule.len() + 2;
    while hops.len() < cap {
        let bound = hop_bound(schedule, task, at_issue);
        let hop = PathHop {
            task,
            bound,
            at_issue,
        };
        hops.push(hop);
        if placed_at(schedule, &hop) < since_ns {
            break;
        }
        let Some((prev, prev_at_issue)) = step_back(graph, schedule, bound) else {
            break;
        };
        task = prev;
        at_issue = prev_at_issue;
    }
    hops.reverse();
    hops
}

/// When `hop` was placed on the path: where its blocking call issued when
/// the path passes through the issue, else its start.
fn placed_at(schedule: &Schedule, hop: &PathHop) -> i64 {
    match (hop.at_issue, schedule.wait(hop.task)) {
        (true, Some(wait)) => wait.issue_ns,
        _ => schedule.start_ns[hop.task.idx()],
    }
}

/// A hop of a critical path with its times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedPathHop {
    /// The hop.
    pub hop: PathHop,
    /// The class of the constraint that placed it.
    pub kind: BoundKind,
    /// When it was placed on the path (its start, or its issue).
    pub at_ns: i64,
    /// The moment of it the next hop's constraint counts from: its end,
    /// or `at_ns` when the next hop only needed it to have started (a
    /// launch). `anchor_ns - at_ns` is its time on the path, and the next
    /// hop's `at_ns - anchor_ns` the wait between them.
    pub anchor_ns: i64,
}

/// The times of `hops` (in time order, as [`critical_path_hops`] gives
/// them).
pub fn timed_hops(graph: &Graph, schedule: &Schedule, hops: &[PathHop]) -> Vec<TimedPathHop> {
    timed_hops_iter(graph, schedule, hops).collect()
}

/// [`timed_hops`] one by one, for a caller that reads each once: a
/// whole window's path has about a hop per task, and their times (48
/// bytes a hop) need not be kept beside the hops.
pub fn timed_hops_iter<'a>(
    graph: &'a Graph,
    schedule: &'a Schedule,
    hops: &'a [PathHop],
) -> impl Iterator<Item = TimedPathHop> + 'a {
    hops.iter().enumerate().map(|(i, hop)| {
        let at_ns = placed_at(schedule, hop);
        let anchor_ns = match hops.get(i + 1).map(|n| n.bound) {
            Some(Bound::Edge(e)) if graph.edges[e as usize].anchor == Anchor::Start => at_ns,
            _ => schedule.end_ns[hop.task.idx()],
        };
        TimedPathHop {
            hop: *hop,
            kind: BoundKind::of(graph, hop.bound),
            at_ns,
            anchor_ns,
        }
    })
}

/// What placed `task` on the path: its issue's bound when the path reached
/// it through a start-anchored link of a blocking call, else its own.
pub(crate) fn hop_bound(schedule: &Schedule, task: TaskId, at_issue: bool) -> Bound {
    match (at_issue, schedule.wait(task)) {
        (true, Some(wait)) => wait.issue_bound,
        _ => schedule.bound_by[task.idx()],
    }
}

/// The task a bound points back to, and whether the path reaches it at its
/// issue; `None` at a release, where the path starts.
pub(crate) fn step_back(
    graph: &Graph,
    schedule: &Schedule,
    bound: Bound,
) -> Option<(TaskId, bool)> {
    match bound {
        Bound::Release => None,
        Bound::Processor { prev } => Some((prev, false)),
        Bound::Runtime { on, .. } | Bound::LaunchQueue { on } => Some((on, false)),
        Bound::Edge(i) => {
            let edge = &graph.edges[i as usize];
            let via_issue = edge.anchor == Anchor::Start && schedule.wait(edge.from).is_some();
            Some((edge.from, via_issue))
        }
    }
}

/// The critical path ending at `last`, as tasks in time order.
pub fn critical_path(graph: &Graph, schedule: &Schedule, last: TaskId) -> Vec<TaskId> {
    critical_path_hops(graph, schedule, last)
        .into_iter()
        .map(|hop| hop.task)
        .collect()
}

/// A class of constraint, for totals along the critical path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BoundKind {
    /// A task's release offset.
    Release,
    /// The previous task on the same processor.
    Processor,
    /// A fixed edge of this kind.
    Edge(DepKind),
    /// A runtime (GPU-to-CPU sync) dependency.
    Runtime,
    /// A full launch queue: the call waited for a GPU task's end.
    LaunchQueue,
    /// A collective's end, set by the start of its last participant on
    /// another rank (multi-rank jobs only; see
    /// [`job_critical_path`](crate::job_critical_path)).
    Rendezvous,
}

impl BoundKind {
    /// The class of a bound.
    pub fn of(graph: &Graph, bound: Bound) -> BoundKind {
        match bound {
            Bound::Release => BoundKind::Release,
            Bound::Processor { .. } => BoundKind::Processor,
            Bound::Edge(i) => BoundKind::Edge(graph.edges[i as usize].kind),
            Bound::Runtime { .. } => BoundKind::Runtime,
            Bound::LaunchQueue { .. } => BoundKind::LaunchQueue,
        }
    }

    /// Stable snake-case name, used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            BoundKind::Release => "release",
            BoundKind::Processor => "processor",
            BoundKind::Edge(kind) => kind.as_str(),
            BoundKind::Runtime => "runtime_sync",
            BoundKind::LaunchQueue => "launch_queue",
            BoundKind::Rendezvous => "rendezvous",
        }
    }
}

/// Time along the critical path attributed to one class of constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundTotal {
    /// The class.
    pub kind: BoundKind,
    /// Path tasks placed by it.
    pub hops: usize,
    /// Latency between the predecessor's anchor and these tasks' starts.
    pub wait_ns: i64,
    /// Time these tasks ran while on the path.
    pub busy_ns: i64,
}

/// Where the time on a critical path goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriticalPathSummary {
    /// Number of hops.
    pub hops: usize,
    /// End of the last task: the sum of every `wait_ns` and `busy_ns` in
    /// `by_bound`, since the path starts at the window start.
    pub end_ns: i64,
    /// Totals per class of constraint, in [`BoundKind`] order, classes with
    /// no hop left out.
    pub by_bound: Vec<BoundTotal>,
    /// The tasks with the most time on the path, longest first (ties by
    /// id). A task's time on the path is its duration, except for a task
    /// that only launched the next one (start-anchored link), which has
    /// none and is left out.
    pub top_tasks: Vec<(TaskId, i64)>,
}

/// Summarizes the critical path ending at `last`: wait and run time per
/// class of constraint, and the `top_n` tasks that spent most time on it.
pub fn critical_path_summary(
    graph: &Graph,
    schedule: &Schedule,
    last: TaskId,
    top_n: usize,
) -> CriticalPathSummary {
    let hops = critical_path_hops(graph, schedule, last);
    let timed = timed_hops_iter(graph, schedule, &hops).map(|h| TimedHop {
        task: h.hop.task,
        kind: h.kind,
        at: h.at_ns,
        anchor: h.anchor_ns,
    });
    summarize(timed, top_n)
}

/// One hop of a critical path with its times: it was placed on the path at
/// `at` and the next hop's constraint counts from `anchor`.
pub(crate) struct TimedHop {
    pub(crate) task: TaskId,
    pub(crate) kind: BoundKind,
    pub(crate) at: i64,
    pub(crate) anchor: i64,
}

/// Totals per class of constraint and the tasks longest on the path, from
/// hops in time order.
pub(crate) fn summarize(hops: impl Iterator<Item = TimedHop>, top_n: usize) -> CriticalPathSummary {
    let mut totals: Vec<BoundTotal> = Vec::new();
    let mut busy_per_task: Vec<(TaskId, i64)> = Vec::new();
    let mut prev_anchor = 0i64;
    let mut count = 0;
    for hop in hops {
        count += 1;
        let total = match totals.iter_mut().find(|t| t.kind == hop.kind) {
            Some(total) => total,
            None => {
                totals.push(BoundTotal {
                    kind: hop.kind,
                    hops: 0,
                    wait_ns: 0,
                    busy_ns: 0,
                });
                totals.last_mut().expect("just pushed")
            }
        };
        total.hops += 1;
        // Saturating: times near i64::MAX (a saturated what-if) must not
        // wrap into negative totals.
        let (wait, busy) = (
            hop.at.saturating_sub(prev_anchor),
            hop.anchor.saturating_sub(hop.at),
        );
        total.wait_ns = total.wait_ns.saturating_add(wait);
        total.busy_ns = total.busy_ns.saturating_add(busy);
        busy_per_task.push((hop.task, busy));
        prev_anchor = hop.anchor;
    }
    totals.sort_by_key(|t| t.kind);
    busy_per_task.retain(|&(_, busy)| busy > 0);
    let longest_first = |a: &(TaskId, i64), b: &(TaskId, i64)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    // A whole window's path has a hop per task or so: only the top ones
    // need sorting.
    if top_n == 0 {
        busy_per_task.clear();
    } else if busy_per_task.len() > top_n {
        busy_per_task.select_nth_unstable_by(top_n - 1, longest_first);
        busy_per_task.truncate(top_n);
    }
    busy_per_task.sort_by(longest_first);
    CriticalPathSummary {
        hops: count,
        end_ns: prev_anchor,
        by_bound: totals,
        top_tasks: busy_per_task,
    }
}
