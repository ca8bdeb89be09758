//! The execution graph: tasks on processors, joined by typed edges.
//!
//! Invariant: nothing in [`Graph`] is a measured start time. Tasks carry
//! durations, edges carry latencies (measured gaps), and root tasks carry a
//! release offset from the window start. Measured start and end times live
//! in [`Measured`], which only metrics and tests read.

use std::fmt;

/// Index of a task in [`Graph::tasks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub u32);

impl TaskId {
    /// The index as `usize`.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// Index of a processor in [`Graph::processors`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcId(pub u32);

impl ProcId {
    /// The index as `usize`.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// Index of a name in [`Graph::names`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NameId(pub u32);

/// Where tasks run: a CPU thread or a GPU stream. Each processor runs one
/// task at a time, in the order of [`Processor::tasks`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProcKind {
    /// A CPU thread of a process.
    Thread {
        /// Process id as recorded.
        pid: i64,
        /// Thread id as recorded.
        tid: i64,
    },
    /// A GPU stream on a device.
    Stream {
        /// Device index.
        device: i64,
        /// Stream id.
        stream: i64,
    },
}

/// A CPU thread or GPU stream with its tasks in program / stream order.
#[derive(Debug, Clone)]
pub struct Processor {
    /// Thread or stream.
    pub kind: ProcKind,
    /// Tasks in the order the processor runs them.
    pub tasks: Vec<TaskId>,
}

impl Processor {
    /// True for a GPU stream.
    pub fn is_stream(&self) -> bool {
        matches!(self.kind, ProcKind::Stream { .. })
    }
}

/// What a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskKind {
    /// A framework operator (leaf of the CPU call tree).
    CpuOp,
    /// A `record_function` range with no nested work.
    Annotation,
    /// A CUDA/HIP runtime or driver call.
    Runtime,
    /// A GPU kernel.
    Kernel,
    /// A GPU memory copy.
    Memcpy,
    /// A GPU memory set.
    Memset,
}

impl TaskKind {
    /// All kinds, in declaration order (`kind as usize` is the index).
    pub const ALL: [TaskKind; 6] = [
        TaskKind::CpuOp,
        TaskKind::Annotation,
        TaskKind::Runtime,
        TaskKind::Kernel,
        TaskKind::Memcpy,
        TaskKind::Memset,
    ];

    /// True for tasks that run on a GPU stream.
    pub fn is_gpu(self) -> bool {
        matches!(self, TaskKind::Kernel | TaskKind::Memcpy | TaskKind::Memset)
    }

    /// Stable lower-case name, used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::CpuOp => "cpu_op",
            TaskKind::Annotation => "annotation",
            TaskKind::Runtime => "runtime",
            TaskKind::Kernel => "kernel",
            TaskKind::Memcpy => "memcpy",
            TaskKind::Memset => "memset",
        }
    }
}

/// One unit of work on one processor.
#[derive(Debug, Clone)]
pub struct Task {
    /// What it is.
    pub kind: TaskKind,
    /// Name, in [`Graph::names`].
    pub name: NameId,
    /// The thread or stream it runs on.
    pub proc: ProcId,
    /// How long it runs once started, in ns. For blocking CPU calls this is
    /// the intrinsic cost; the wait comes from a [`RuntimeDep`].
    pub duration_ns: i64,
    /// Earliest start relative to the window start, in ns. Non-zero only for
    /// tasks whose start no dependency explains (the first task of a thread,
    /// a GPU task whose launch was not recorded).
    pub release_ns: i64,
    /// Index into [`Graph::collectives`] for communication tasks.
    pub collective: Option<u32>,
    /// Correlation id of the launch (GPU tasks and runtime calls), 0 if none.
    pub correlation: u64,
}

impl Task {
    /// True for GPU tasks that move data between ranks.
    pub fn is_comm(&self) -> bool {
        self.collective.is_some()
    }
}

/// The kind of a dependency. Every edge has exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DepKind {
    /// Program order on one CPU thread.
    IntraThread,
    /// A task on one thread waits for a task on another.
    InterThread,
    /// A runtime call launches a GPU task (by correlation).
    Launch,
    /// Order on one GPU stream.
    IntraStream,
    /// Event record on one stream, stream wait on another.
    InterStream,
    /// A CPU call blocks until GPU work ends.
    Sync,
    /// A collective on one rank waits for its peers (multi-rank jobs).
    Collective,
}

impl DepKind {
    /// All kinds, in report order.
    pub const ALL: [DepKind; 7] = [
        DepKind::IntraThread,
        DepKind::InterThread,
        DepKind::Launch,
        DepKind::IntraStream,
        DepKind::InterStream,
        DepKind::Sync,
        DepKind::Collective,
    ];

    /// Stable snake-case name, used in reports and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            DepKind::IntraThread => "intra_thread",
            DepKind::InterThread => "inter_thread",
            DepKind::Launch => "launch",
            DepKind::IntraStream => "intra_stream",
            DepKind::InterStream => "inter_stream",
            DepKind::Sync => "sync",
            DepKind::Collective => "collective",
        }
    }
}

impl fmt::Display for DepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which moment of the predecessor the latency counts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Anchor {
    /// `start(to) >= end(from) + latency`.
    End,
    /// `start(to) >= start(from) + latency` (kernel launch: the kernel may
    /// start while the launch call is still running).
    Start,
}

/// A fixed dependency between two tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// Predecessor.
    pub from: TaskId,
    /// Successor.
    pub to: TaskId,
    /// Why the successor waits.
    pub kind: DepKind,
    /// Which moment of `from` the latency counts from.
    pub anchor: Anchor,
    /// Minimum time between that moment and the successor's start, in ns.
    pub latency_ns: i64,
    /// True when a rule inferred the dependency (see
    /// [`BuildReport::edge_rule`](crate::BuildReport::edge_rule)) instead
    /// of reading it from the trace (program order, a launch's
    /// correlation, a `cuda_sync` event): what a prediction's confidence
    /// counts on its critical path.
    pub inferred: bool,
}

/// What a blocking CPU call waits for, resolved during simulation because it
/// depends on which launches have happened by then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitTarget {
    /// The last GPU task launched onto this stream before the call starts.
    StreamTail(ProcId),
    /// The last GPU task launched onto every stream of this device.
    DeviceTail(i64),
    /// One known GPU task (event synchronize, blocking memcpy).
    Task(TaskId),
}

/// A GPU-to-CPU synchronization resolved at simulation time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeDep {
    /// The blocking CPU call.
    pub task: TaskId,
    /// What it waits for.
    pub target: WaitTarget,
    /// Time between the awaited GPU work's end and the call's earliest start, in ns.
    pub latency_ns: i64,
    /// True when a rule inferred what the call waits for instead of a
    /// `cuda_sync` event recording it (see
    /// [`BuildReport::runtime_dep_rules`](crate::BuildReport::runtime_dep_rules)).
    pub inferred: bool,
}

/// A collective (or point-to-point) operation, as recorded on this rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Collective {
    /// Collective name (`allreduce`, `all_to_allv`, `send`, ...), or the
    /// kernel-name family when the trace has no `Collective name`.
    pub name: String,
    /// Process group name, if recorded.
    pub process_group: Option<String>,
    /// Sequence number within the process group, if recorded.
    pub seq: Option<i64>,
    /// Message size in bytes (max of in and out), if recorded.
    pub bytes: Option<u64>,
    /// Message size in elements (max of in and out), if recorded: what a
    /// count of parameters needs, whatever the dtype.
    pub elements: Option<u64>,
    /// Number of ranks in the group, if recorded.
    pub group_size: Option<u32>,
}

/// Index of a scope in [`Graph::scopes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeId(pub u32);

/// A CPU range that encloses tasks without being one: an operator with
/// children or a `record_function` annotation. Scopes form a tree per thread
/// and carry what structure discovery and shape-based models need.
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// Operator or annotation name.
    pub name: NameId,
    /// The enclosing scope. It comes before this one in [`Graph::scopes`]
    /// (the builder makes parents first, a merge keeps the order, and a
    /// predicted graph copies a scope again rather than give it a later
    /// parent); [`check`](crate::check()) tells.
    pub parent: Option<ScopeId>,
    /// True for `record_function` annotations, false for operators.
    pub annotation: bool,
    /// `Input Dims`, when recorded (shared with the trace's event).
    pub input_dims: Option<lumos_trace::InputDims>,
    /// `Input type` as raw JSON text, when recorded (shared with the
    /// trace's event and every scope with the same text).
    pub input_type: Option<std::sync::Arc<str>>,
}

/// A `ProfilerStep#N` iteration, described by its tasks.
#[derive(Debug, Clone)]
pub struct Step {
    /// Annotation name, e.g. `ProfilerStep#3`.
    pub name: String,
    /// The first CPU task inside the annotation on its thread.
    pub first_task: TaskId,
    /// Annotation start to `first_task` start, in ns.
    pub lead_ns: i64,
    /// The last CPU task inside the annotation on its thread.
    pub last_task: TaskId,
    /// `last_task` end to annotation end, in ns.
    pub tail_ns: i64,
    /// Every task that belongs to the step: CPU tasks inside the annotation
    /// on the step's process and the GPU tasks they launched.
    pub tasks: Vec<TaskId>,
}

/// The execution graph of one rank.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    /// Interned task names.
    pub names: Vec<String>,
    /// Every task.
    pub tasks: Vec<Task>,
    /// Every thread and stream.
    pub processors: Vec<Processor>,
    /// Fixed dependencies.
    pub edges: Vec<Edge>,
    /// Dependencies resolved during simulation.
    pub runtime_deps: Vec<RuntimeDep>,
    /// Collectives referenced by [`Task::collective`].
    pub collectives: Vec<Collective>,
    /// Iterations, in order.
    pub steps: Vec<Step>,
    /// Enclosing CPU ranges (operators with children, annotations).
    pub scopes: Vec<Scope>,
    /// Innermost scope of each task, parallel to `tasks` (GPU tasks take
    /// their launch call's scope). Empty when the graph has no scopes.
    pub task_scopes: Vec<Option<ScopeId>>,
}

impl Graph {
    /// The name of a task.
    pub fn name(&self, t: TaskId) -> &str {
        &self.names[self.tasks[t.idx()].name.0 as usize]
    }

    /// The task at `t`.
    pub fn task(&self, t: TaskId) -> &Task {
        &self.tasks[t.idx()]
    }

    /// The innermost scope of a task, if any.
    pub fn scope_of(&self, t: TaskId) -> Option<ScopeId> {
        self.task_scopes.get(t.idx()).copied().flatten()
    }

    /// The scopes enclosing a task, innermost first.
    pub fn scope_chain(&self, t: TaskId) -> impl Iterator<Item = ScopeId> + '_ {
        std::iter::successors(self.scope_of(t), |s| self.scopes[s.0 as usize].parent)
    }
}

/// A duration of `ns` times `factor`, rounded to the nearest ns, for every
/// what-if that rescales tasks: a product beyond the range of an `i64`
/// saturates to `i64::MAX` (a huge factor gives a huge time, never a
/// shorter one), and a negative or NaN product gives 0.
///
/// ```
/// assert_eq!(lumos_graph::scaled_ns(1_000, 1.5), 1_500);
/// assert_eq!(lumos_graph::scaled_ns(1_000, 1e18), i64::MAX);
/// assert_eq!(lumos_graph::scaled_ns(1_000, -2.0), 0);
/// ```
pub fn scaled_ns(ns: i64, factor: f64) -> i64 {
    // `as` saturates at both ends of the range and maps NaN to 0.
    ((ns as f64 * factor).round() as i64).max(0)
}

/// A measured interval, in ns since the window start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// Start.
    pub start_ns: i64,
    /// End.
    pub end_ns: i64,
}

impl Span {
    /// `end - start`; `i64::MAX` when the end is `i64::MAX`. A replayed time
    /// saturates there when a what-if makes it overflow (see [`scaled_ns`]),
    /// and is then unknown but as late as can be: a span ending there is as
    /// long as can be too, never the few ns between two saturated times.
    ///
    /// ```
    /// use lumos_graph::Span;
    /// assert_eq!(Span { start_ns: 5, end_ns: 12 }.len_ns(), 7);
    /// let saturated = Span { start_ns: i64::MAX - 3, end_ns: i64::MAX };
    /// assert_eq!(saturated.len_ns(), i64::MAX);
    /// ```
    pub fn len_ns(&self) -> i64 {
        if self.end_ns == i64::MAX {
            i64::MAX
        } else {
            self.end_ns.saturating_sub(self.start_ns)
        }
    }
}

/// Ground truth: what the trace measured, kept apart from the graph so the
/// simulator cannot read it.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Absolute trace time (ns) of the window start, to map back to the trace's clock.
    pub origin_ns: i64,
    /// Measured span of each task, parallel to [`Graph::tasks`].
    pub tasks: Vec<Span>,
    /// Measured span of each `ProfilerStep#N` annotation, parallel to [`Graph::steps`].
    pub step_annotations: Vec<Span>,
    /// Measured span of each scope, parallel to [`Graph::scopes`].
    pub scopes: Vec<Span>,
}

/// Which of `task_count` tasks an edge of `edges` leads to: the tasks
/// that no edge explains start at a release offset instead (the builder's
/// `releases`, a job merge moving those releases).
pub(crate) fn explained_by_edges(task_count: usize, edges: &[Edge]) -> Vec<bool> {
    let mut explained = vec![false; task_count];
    for e in edges {
        if let Some(x) = explained.get_mut(e.to.idx()) {
            *x = true;
        }
    }
    explained
}
