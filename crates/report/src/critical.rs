//! The critical path of each step of a replay, explained: a verdict
//! (CPU-bound, GPU-bound or communication-bound) with the shares of time
//! behind it, the operators on the path that cost the most, and the path
//! itself, hop by hop, for export (JSON, and a Perfetto trace through
//! [`Timeline::with_critical_path`](crate::Timeline::with_critical_path)).
//!
//! A step's path is the replay's critical path walked back from the step's
//! last task to finish by the step's end, cut at the step's start. Its time (from the
//! step's start to that task's end) is tiled by the hops: each hop waited
//! for its predecessor (latency) and then ran. Both parts go to one of
//! three categories:
//!
//! - `cpu`: CPU tasks running, the gaps between them on their thread
//!   (framework overhead outside the recorded leaves), and the launch
//!   latency of GPU work (the GPU waits for the host's launch);
//! - `gpu_compute`: GPU tasks that are not communication running, and the
//!   gaps before them that are not a launch (stream order, events);
//! - `communication`: communication tasks running (on a trace of one rank
//!   that includes waiting for peers), and the gaps before them.
//!
//! The verdict is the largest category; a path of no length has none
//! (and no shares).

use lumos_graph::{DepKind, Graph, ProcKind, ScopeId, TaskId, TaskKind};
use lumos_sim::{critical_path_hops_since, timed_hops_iter, BoundKind, Schedule};
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::analysis::{ScopeOperators, SelectedStep, NO_OPERATOR};
use crate::units::us;

/// One step's critical path: what bounds the step, in a word and in
/// shares of time.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepCriticalPath {
    /// The step's name (`window` for a trace without steps).
    pub step: String,
    /// Its position among the trace's steps (null for `window`).
    pub index: Option<usize>,
    /// `cpu_bound`, `gpu_bound` or `communication_bound`: the largest of
    /// the three shares; null when the path has no length (no shares, so
    /// nothing bounds it: it read `cpu_bound` from three zeros).
    pub verdict: Option<&'static str>,
    /// The path's time: from the step's start to its last task's end, us.
    pub length_us: f64,
    /// Time on the path in the CPU category, us.
    pub cpu_us: f64,
    /// In the GPU compute category, us.
    pub gpu_compute_us: f64,
    /// In the communication category, us.
    pub communication_us: f64,
    /// `cpu_us` in % of `length_us`; null when the path has no length.
    pub cpu_pct: Option<f64>,
    /// `gpu_compute_us` in % of `length_us`; null when the path has no
    /// length.
    pub gpu_compute_pct: Option<f64>,
    /// `communication_us` in % of `length_us`; null when the path has no
    /// length.
    pub communication_pct: Option<f64>,
    /// Hops of the path inside the step.
    pub hops: usize,
    /// The operators with the most time on the path, most first: a task's
    /// running time goes to its operator (a GPU task's to the operator
    /// that launched it; a task outside every operator to itself, the
    /// kernel or runtime call), the wait before a CPU task to the operator
    /// or annotation that ran through the gap (its own time outside its
    /// children), except the step's own annotation or none, whose gaps are
    /// [`HOST_GAP`]: the step's name said nothing one could change.
    pub top_operators: Vec<PathOperator>,
}

/// Where [`StepCriticalPath::top_operators`] puts the host's time between
/// operators that no operator or annotation of the step ran through: the
/// gaps a CPU task waited through in the step's own annotation
/// (`ProfilerStep#5`, which named it before) or in none (Python, the
/// framework, the data loader outside any `record_function`).
pub const HOST_GAP: &str = "(host time between ops)";

/// An operator's time on a step's critical path.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PathOperator {
    /// The operator ([`operator_of`](crate::operator_of)).
    pub operator: String,
    /// Its time on the path, us.
    pub us: f64,
    /// In % of the path's length (only operators with time on the path
    /// are listed, so the path has a length).
    pub pct: f64,
}

/// One hop of a step's critical path, for export: a flat row.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PathHopRow {
    /// The step's name.
    pub step: String,
    /// Its position (null for `window`).
    pub index: Option<usize>,
    /// The task.
    pub task: String,
    /// Its kind (`cpu_op`, `runtime`, `kernel`, ...).
    pub kind: &'static str,
    /// Where it ran: `thread <pid>/<tid>` or `stream <device>/<stream>`.
    pub processor: String,
    /// The constraint that put it on the path (`launch`, `intra_stream`,
    /// `processor`, `runtime_sync`, `release`, ...).
    pub bound: &'static str,
    /// `cpu`, `gpu_compute` or `communication`.
    pub category: &'static str,
    /// Its operator ([`operator_of`](crate::operator_of)).
    pub operator: String,
    /// When its wait began (its predecessor's anchor), us from the window
    /// start, clipped to the step.
    pub wait_from_us: f64,
    /// When it was placed on the path, us from the window start.
    pub start_us: f64,
    /// The end of its time on the path, us from the window start.
    pub end_us: f64,
    /// Its wait inside the step, us.
    pub wait_us: f64,
    /// Its time on the path inside the step, us.
    pub busy_us: f64,
}

/// The critical paths of the selected steps of a replay.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CriticalPaths {
    /// Per step: the verdict and what is behind it.
    pub steps: Vec<StepCriticalPath>,
    /// Every hop, step by step, in time order.
    pub hops: Vec<PathHopRow>,
    /// Per hop, its task and times (ns), for the marked timeline.
    #[serde(skip)]
    pub(crate) marks: Vec<Mark>,
}

/// A hop as the marked timeline draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    pub task: TaskId,
    /// Index into [`CriticalPaths::steps`].
    pub step: u32,
    pub wait_from_ns: i64,
    pub at_ns: i64,
    pub anchor_ns: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Category {
    Cpu,
    GpuCompute,
    Communication,
}

impl Category {
    fn as_str(self) -> &'static str {
        match self {
            Category::Cpu => "cpu",
            Category::GpuCompute => "gpu_compute",
            Category::Communication => "communication",
        }
    }

    /// Where a task's running time goes.
    fn of_task(graph: &Graph, t: TaskId) -> Category {
        let task = graph.task(t);
        if !task.kind.is_gpu() {
            Category::Cpu
        } else if task.is_comm() {
            Category::Communication
        } else {
            Category::GpuCompute
        }
    }

    /// Where the wait before a task goes: a launch's latency is the host's.
    fn of_wait(graph: &Graph, t: TaskId, bound: BoundKind) -> Category {
        match bound {
            BoundKind::Edge(DepKind::Launch) => Category::Cpu,
            _ => Category::of_task(graph, t),
        }
    }
}

/// The operator task `t` of `step` counts for on a path: its own
/// ([`ScopeOperators::operator`]: its operator or, outside every operator,
/// an annotation other than the step's), else, outside both, the task
/// itself (a kernel without a recorded launch, a runtime call such as
/// `cudaDeviceSynchronize`): `(no operator)` named nothing to look at.
/// The step's own annotation as a task (a step with no operator in it on
/// this thread) is [`HOST_GAP`], as its gaps are.
fn leaf<'g>(graph: &'g Graph, operators: &ScopeOperators, (t, step): (TaskId, &str)) -> &'g str {
    match operators.operator(graph, t) {
        NO_OPERATOR if graph.task(t).kind == TaskKind::Annotation && graph.name(t) == step => {
            HOST_GAP
        }
        NO_OPERATOR => graph.name(t),
        op => op,
    }
}

/// Where the wait before task `t` on the path was spent. GPU work waits
/// in the operator that launched it ([`leaf`]). A CPU task waits in the
/// scope (operator or annotation) that ran through the whole gap: the
/// innermost one enclosing both it and the hop before it when that is on
/// the same thread (the time a parent spends outside its children is the
/// gap before its next child), else its own innermost scope; the step's
/// own annotation (`step`) or no scope is [`HOST_GAP`].
fn waiting_in<'g>(
    graph: &'g Graph,
    operators: &ScopeOperators,
    (t, step): (TaskId, &str),
    prev: Option<TaskId>,
) -> &'g str {
    if graph.task(t).kind.is_gpu() {
        return leaf(graph, operators, (t, step));
    }
    let name = |s: ScopeId| graph.names[graph.scopes[s.0 as usize].name.0 as usize].as_str();
    let same_thread = prev.filter(|&p| graph.task(p).proc == graph.task(t).proc);
    let scope = match same_thread {
        Some(p) => innermost_common_scope(graph, t, p),
        None => graph.scope_of(t),
    };
    match scope {
        Some(s) if !(graph.scopes[s.0 as usize].annotation && name(s) == step) => name(s),
        _ => HOST_GAP,
    }
}

/// The innermost scope enclosing both `a` and `b`. A scope's parent comes
/// before it in `scopes`, so both chains run down in id and are walked
/// once each, merge-like: searching one chain for each scope of the other
/// took seconds per hop where operators nest thousands deep.
fn innermost_common_scope(graph: &Graph, a: TaskId, b: TaskId) -> Option<ScopeId> {
    let (mut a, mut b) = (graph.scope_chain(a), graph.scope_chain(b));
    let (mut x, mut y) = (a.next()?, b.next()?);
    loop {
        match x.0.cmp(&y.0) {
            std::cmp::Ordering::Equal => return Some(x),
            std::cmp::Ordering::Greater => x = a.next()?,
            std::cmp::Ordering::Less => y = b.next()?,
        }
    }
}

/// `w` clipped to `[from, to]`, as a length.
fn clipped(start: i64, end: i64, from: i64, to: i64) -> i64 {
    (end.min(to) - start.max(from)).max(0)
}

fn processor(graph: &Graph, t: TaskId) -> String {
    match graph.processors[graph.task(t).proc.idx()].kind {
        ProcKind::Thread { pid, tid } => format!("thread {pid}/{tid}"),
        ProcKind::Stream { device, stream } => format!("stream {device}/{stream}"),
    }
}

/// The last task of `step` to finish on `schedule` by the step's end (a
/// task of the step on another thread may run on past it), else the last
/// to finish.
fn last_task(graph: &Graph, schedule: &Schedule, step: &SelectedStep) -> Option<TaskId> {
    let key = |t: &TaskId| (schedule.end_ns[t.idx()], std::cmp::Reverse(*t));
    step.tasks(graph)
        .filter(|t| schedule.end_ns[t.idx()] <= step.span.end_ns)
        .max_by_key(key)
        .or_else(|| step.tasks(graph).max_by_key(key))
}

/// The critical path of each step of `steps` (spans on `schedule`),
/// with the `n_operators` costliest operators of each.
pub(crate) fn critical_paths(
    graph: &Graph,
    schedule: &Schedule,
    steps: &[SelectedStep],
    n_operators: usize,
) -> CriticalPaths {
    let mut hops = Hops::default();
    let operators = ScopeOperators::of(graph);
    let steps = step_rows(
        graph,
        schedule,
        steps,
        (n_operators, &operators),
        Some(&mut hops),
    );
    CriticalPaths {
        steps,
        hops: hops.rows,
        marks: hops.marks,
    }
}

/// The row of each step's critical path, without its hops: what a
/// replay's report keeps ([`critical_paths`] less the hop rows, whose
/// strings cost more than the walk itself on a long path).
pub(crate) fn step_critical_paths(
    graph: &Graph,
    schedule: &Schedule,
    steps: &[SelectedStep],
    n_operators: usize,
    operators: &ScopeOperators,
) -> Vec<StepCriticalPath> {
    step_rows(graph, schedule, steps, (n_operators, operators), None)
}

/// The hops of the paths, for export and for the marked timeline.
#[derive(Default)]
struct Hops {
    rows: Vec<PathHopRow>,
    marks: Vec<Mark>,
}

/// Each step's row, with its `top.0` costliest operators (`top.1` names
/// each task's); its hops appended to `hops` when given.
fn step_rows(
    graph: &Graph,
    schedule: &Schedule,
    steps: &[SelectedStep],
    top: (usize, &ScopeOperators),
    mut hops: Option<&mut Hops>,
) -> Vec<StepCriticalPath> {
    let mut rows = Vec::new();
    for step in steps {
        let Some(last) = last_task(graph, schedule, step) else {
            continue;
        };
        let k = rows.len() as u32;
        let row = step_path(graph, schedule, step, (last, k), top, hops.as_deref_mut());
        rows.push(row);
    }
    rows
}

/// One step's path, from its `last` task (the step is the `k`th row):
/// its row, and its hops appended to `out` when given.
fn step_path(
    graph: &Graph,
    schedule: &Schedule,
    step: &SelectedStep,
    (last, k): (TaskId, u32),
    (n_operators, operators): (usize, &ScopeOperators),
    mut out: Option<&mut Hops>,
) -> StepCriticalPath {
    let from = step.span.start_ns;
    let to = schedule.end_ns[last.idx()].max(from);
    let hops = critical_path_hops_since(graph, schedule, last, from);
    let mut by_cat = [0i64; 3];
    let mut by_op: FxHashMap<&str, i64> = FxHashMap::default();
    let mut prev_anchor = i64::MIN;
    let mut prev_task = None;
    let mut inside = 0;
    for h in timed_hops_iter(graph, schedule, &hops) {
        let t = h.hop.task;
        let wait = clipped(prev_anchor, h.at_ns, from, to);
        let busy = clipped(h.at_ns, h.anchor_ns, from, to);
        let wait_from = prev_anchor.max(from).min(h.at_ns.max(from));
        let before = prev_task.replace(t);
        prev_anchor = h.anchor_ns;
        if wait == 0 && busy == 0 && h.anchor_ns <= from {
            continue;
        }
        inside += 1;
        let (wc, bc) = (
            Category::of_wait(graph, t, h.kind),
            Category::of_task(graph, t),
        );
        by_cat[wc as usize] += wait;
        by_cat[bc as usize] += busy;
        let op = operators.operator(graph, t);
        *by_op
            .entry(leaf(graph, operators, (t, &step.name)))
            .or_default() += busy;
        *by_op
            .entry(waiting_in(graph, operators, (t, &step.name), before))
            .or_default() += wait;
        let Some(out) = out.as_deref_mut() else {
            continue;
        };
        out.rows.push(PathHopRow {
            step: step.name.clone(),
            index: step.index,
            task: graph.name(t).to_owned(),
            kind: graph.task(t).kind.as_str(),
            processor: processor(graph, t),
            bound: h.kind.as_str(),
            category: bc.as_str(),
            operator: op.to_owned(),
            wait_from_us: us(wait_from),
            start_us: us(h.at_ns),
            end_us: us(h.anchor_ns),
            wait_us: us(wait),
            busy_us: us(busy),
        });
        out.marks.push(Mark {
            task: t,
            step: k,
            wait_from_ns: wait_from,
            at_ns: h.at_ns.max(from),
            anchor_ns: h.anchor_ns.min(to),
        });
    }
    let length = to - from;
    let share = |c: Category| by_cat[c as usize];
    let (cpu, gpu, comm) = (
        share(Category::Cpu),
        share(Category::GpuCompute),
        share(Category::Communication),
    );
    // A path of no length has no shares: three zeros name no bound.
    let largest = if cpu >= gpu && cpu >= comm {
        "cpu_bound"
    } else if gpu >= comm {
        "gpu_bound"
    } else {
        "communication_bound"
    };
    let verdict = (length > 0).then_some(largest);
    let pct = |ns: i64| crate::analysis::pct_of(ns, length);
    // Only operators with time on a path of some length: each has a share.
    let mut ops: Vec<(&str, i64)> = by_op
        .into_iter()
        .filter(|&(_, ns)| ns > 0 && length > 0)
        .collect();
    ops.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ops.truncate(n_operators);
    StepCriticalPath {
        step: step.name.clone(),
        index: step.index,
        verdict,
        length_us: us(length),
        cpu_us: us(cpu),
        gpu_compute_us: us(gpu),
        communication_us: us(comm),
        cpu_pct: pct(cpu),
        gpu_compute_pct: pct(gpu),
        communication_pct: pct(comm),
        hops: inside,
        top_operators: ops
            .into_iter()
            .map(|(op, ns)| PathOperator {
                operator: op.to_owned(),
                us: us(ns),
                pct: ns as f64 / length as f64 * 100.0,
            })
            .collect(),
    }
}

/// The export of a replay's critical paths as one JSON document (`lumos
/// replay --critical-path DIR` writes it as `<name>.critical-path.json`).
#[derive(Debug, Clone, Serialize)]
pub struct CriticalPathExport<'a> {
    /// The trace.
    pub trace: &'a str,
    /// The paths.
    #[serde(flatten)]
    pub paths: &'a CriticalPaths,
}
