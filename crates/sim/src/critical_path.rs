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
    for hop in backward_hops(graph, schedule, last) {
        hops.push(hop);
        if placed_at(schedule, &hop) < since_ns {
            break;
        }
    }
    hops.reverse();
    hops
}

/// The hops of the path ending at `last`, walked back from it: `last`
/// first, the hop at a release last.
fn backward_hops<'a>(
    graph: &'a Graph,
    schedule: &'a Schedule,
    last: TaskId,
) -> impl Iterator<Item = PathHop> + 'a {
    // Every hop goes to a task that was placed strictly earlier in the
    // replay, so the walk ends; the cap only guards against a schedule that
    // was edited by hand.
    let cap = 2 * schedule.len() + 2;
    let mut next = Some((last, false));
    std::iter::from_fn(move || {
        let (task, at_issue) = next.take()?;
        let bound = hop_bound(schedule, task, at_issue);
        next = step_back(graph, schedule, bound);
        Some(PathHop {
            task,
            bound,
            at_issue,
        })
    })
    .take(cap)
}

/// The times of `hop`, whose next hop in time (if any) was placed by
/// `next_bound`.
fn timed(
    graph: &Graph,
    schedule: &Schedule,
    hop: &PathHop,
    next_bound: Option<Bound>,
) -> TimedPathHop {
    let at_ns = placed_at(schedule, hop);
    TimedPathHop {
        hop: *hop,
        kind: BoundKind::of(graph, hop.bound),
        at_ns,
        anchor_ns: anchor_ns(graph, schedule, hop.task, at_ns, next_bound),
    }
}

/// The moment of `task` (placed on the path at `at_ns`) the next hop's
/// constraint counts from: `at_ns` when that hop was placed by a
/// start-anchored edge (it only needed `task` to have started), else
/// `task`'s end.
pub(crate) fn anchor_ns(
    graph: &Graph,
    schedule: &Schedule,
    task: TaskId,
    at_ns: i64,
    next_bound: Option<Bound>,
) -> i64 {
    match next_bound {
        Some(Bound::Edge(e)) if graph.edges[e as usize].anchor == Anchor::Start => at_ns,
        _ => schedule.end_ns[task.idx()],
    }
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
    hops.iter()
        .enumerate()
        .map(|(i, hop)| timed(graph, schedule, hop, hops.get(i + 1).map(|n| n.bound)))
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
///
/// The path is summarized as it is walked back, hop by hop, so a whole
/// window's path (about a hop per task) is never held: what it keeps is
/// one hop and the `top_n` longest so far.
pub fn critical_path_summary(
    graph: &Graph,
    schedule: &Schedule,
    last: TaskId,
    top_n: usize,
) -> CriticalPathSummary {
    let mut totals = PathTotals::new(top_n);
    // The hop after the current one in time order, walked just before it:
    // its bound sets the current hop's anchor, and the current hop's
    // anchor its wait.
    let mut later: Option<TimedPathHop> = None;
    let mut end_ns = 0i64;
    let mut count = 0;
    for hop in backward_hops(graph, schedule, last) {
        count += 1;
        let t = timed(graph, schedule, &hop, later.map(|l| l.hop.bound));
        match later.replace(t) {
            Some(next) => totals.add(&next.into(), t.anchor_ns),
            None => end_ns = t.anchor_ns,
        }
    }
    if let Some(first) = later {
        totals.add(&first.into(), 0);
    }
    totals.finish(count, end_ns)
}

/// One hop of a critical path with its times: it was placed on the path at
/// `at` and the next hop's constraint counts from `anchor`.
pub(crate) struct TimedHop {
    pub(crate) task: TaskId,
    pub(crate) kind: BoundKind,
    pub(crate) at: i64,
    pub(crate) anchor: i64,
}

impl From<TimedPathHop> for TimedHop {
    fn from(t: TimedPathHop) -> TimedHop {
        TimedHop {
            task: t.hop.task,
            kind: t.kind,
            at: t.at_ns,
            anchor: t.anchor_ns,
        }
    }
}

/// Totals per class of constraint and the tasks longest on the path, from
/// hops in time order.
pub(crate) fn summarize(hops: impl Iterator<Item = TimedHop>, top_n: usize) -> CriticalPathSummary {
    let mut totals = PathTotals::new(top_n);
    let mut prev_anchor = 0i64;
    let mut count = 0;
    for hop in hops {
        count += 1;
        totals.add(&hop, prev_anchor);
        prev_anchor = hop.anchor;
    }
    totals.finish(count, prev_anchor)
}

/// The sums of a [`CriticalPathSummary`], hop by hop in any order.
///
/// Sums are exact (in `i128`) and clamped to `i64` at the end, so they do
/// not depend on the order of the hops, and times near `i64::MAX` (a
/// saturated what-if) cannot wrap into negative totals.
struct PathTotals {
    /// Per class: hops, wait and busy time.
    totals: Vec<(BoundKind, usize, i128, i128)>,
    /// The longest hops so far, pruned to `top_n` whenever it reaches
    /// twice that (and at least [`PathTotals::MIN_KEPT`]).
    busy_per_task: Vec<(TaskId, i64)>,
    top_n: usize,
}

impl PathTotals {
    const MIN_KEPT: usize = 1024;

    fn new(top_n: usize) -> PathTotals {
        PathTotals {
            totals: Vec::new(),
            busy_per_task: Vec::new(),
            top_n,
        }
    }

    /// Counts `hop`, whose constraint counted from `prev_anchor` (the
    /// anchor of the hop before it in time, 0 for the first).
    fn add(&mut self, hop: &TimedHop, prev_anchor: i64) {
        let i = match self.totals.iter().position(|t| t.0 == hop.kind) {
            Some(i) => i,
            None => {
                self.totals.push((hop.kind, 0, 0, 0));
                self.totals.len() - 1
            }
        };
        let wait = i128::from(hop.at) - i128::from(prev_anchor);
        let busy = i128::from(hop.anchor) - i128::from(hop.at);
        let total = &mut self.totals[i];
        total.1 += 1;
        total.2 += wait;
        total.3 += busy;
        if self.top_n > 0 && busy > 0 {
            self.busy_per_task.push((hop.task, clamp(busy)));
            if self.busy_per_task.len() >= self.top_n.saturating_mul(2).max(Self::MIN_KEPT) {
                self.keep_top();
            }
        }
    }

    /// Keeps the `top_n` longest (ties by id), in no particular order.
    fn keep_top(&mut self) {
        if self.busy_per_task.len() > self.top_n {
            self.busy_per_task
                .select_nth_unstable_by(self.top_n - 1, longest_first);
            self.busy_per_task.truncate(self.top_n);
        }
    }

    fn finish(mut self, hops: usize, end_ns: i64) -> CriticalPathSummary {
        self.keep_top();
        self.busy_per_task.sort_by(longest_first);
        let mut by_bound: Vec<BoundTotal> = self
            .totals
            .into_iter()
            .map(|(kind, hops, wait, busy)| BoundTotal {
                kind,
                hops,
                wait_ns: clamp(wait),
                busy_ns: clamp(busy),
            })
            .collect();
        by_bound.sort_by_key(|t| t.kind);
        CriticalPathSummary {
            hops,
            end_ns,
            by_bound,
            top_tasks: self.busy_per_task,
        }
    }
}

/// Longest first, ties by task id: a total order, so the `top_n` kept do
/// not depend on the order the hops came in.
fn longest_first(a: &(TaskId, i64), b: &(TaskId, i64)) -> std::cmp::Ordering {
    b.1.cmp(&a.1).then(a.0.cmp(&b.0))
}

/// `v` clamped to `i64`.
fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}
