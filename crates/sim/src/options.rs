//! What a replay may change: which dependencies to ignore, each task's
//! duration and how to rescale GPU durations, and the launch queue.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use lumos_graph::{scaled_ns, DepKind, Graph, Task, TaskId};

/// How to run a replay. The default replays the graph as built.
///
/// ```
/// use lumos_graph::DepKind;
/// use lumos_sim::{GpuSelector, SimOptions};
///
/// // "What if there were no inter-stream edges, and GEMMs ran twice as fast?"
/// let opts = SimOptions::default()
///     .drop_kind(DepKind::InterStream)
///     .scale(GpuSelector::NameContains("gemm".into()), 0.5);
/// assert_eq!(opts.drop_kinds, vec![DepKind::InterStream]);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimOptions {
    /// Edges of these kinds are ignored. [`DepKind::Sync`] also drops every
    /// runtime dependency, since those are the resolved form of sync edges.
    ///
    /// Dropping [`DepKind::Launch`] frees GPU tasks from their launch calls
    /// but does not change which kernels a stream-tail wait resolves to:
    /// "what has been launched" is read from the launch edges regardless.
    pub drop_kinds: Vec<DepKind>,
    /// Factors applied to GPU task durations. A task matched by several
    /// entries gets the product of their factors; CPU tasks never change.
    pub scales: Vec<DurationScale>,
    /// How many GPU tasks a stream holds launched and not yet finished; a
    /// call that launches one more waits until the task that many places
    /// earlier on the stream has ended, as a launch blocks when a CUDA
    /// stream's queue is full (see [`DEFAULT_LAUNCH_QUEUE`]). `None`: no
    /// limit, the CPU may run arbitrarily far ahead of its GPU.
    pub launch_queue: Option<u32>,
    /// Each task's duration in place of the graph's, indexed like
    /// [`Graph::tasks`] (one for every task); `scales` apply on top. A
    /// caller that re-times a graph it borrows (a prediction of a traced
    /// rank) passes the new durations here rather than copying the graph
    /// to write them into it.
    pub durations: Option<Arc<[i64]>>,
    /// A flag another thread may set to stop the replay early: it then
    /// returns [`SimError::Cancelled`](crate::SimError::Cancelled) instead
    /// of a schedule. A front end that lets its user interrupt long work
    /// (Python's Ctrl-C) passes one; `None` replays to the end.
    pub cancel: Option<Cancel>,
}

/// A flag shared between a replay and whoever may stop it (see
/// [`SimOptions::cancel`]). Clones share the flag; two options compare
/// equal when they share it.
///
/// Besides the request it records whether work holding it stopped
/// because of it ([`Cancel::stopped_work`]): a front end that was
/// interrupted can then tell its user that the work was cut short, not
/// run to its end and thrown away.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<Flags>);

/// What a [`Cancel`] shares: the request, and whether it was acted on.
#[derive(Debug, Default)]
struct Flags {
    asked: AtomicBool,
    stopped: AtomicBool,
}

impl Cancel {
    /// A flag not yet set.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks every replay holding this flag to stop at its next check.
    pub fn cancel(&self) {
        self.0.asked.store(true, Ordering::Relaxed);
    }

    /// True once [`Cancel::cancel`] has been called.
    pub fn is_cancelled(&self) -> bool {
        self.0.asked.load(Ordering::Relaxed)
    }

    /// Records that work holding this flag stopped before its end because
    /// the flag was set. A replay does so as it returns
    /// [`SimError::Cancelled`](crate::SimError::Cancelled); other work
    /// watching the same flag (a front end's checks between its steps)
    /// calls it where it stops.
    pub fn mark_stopped(&self) {
        self.0.stopped.store(true, Ordering::Relaxed);
    }

    /// True once some work stopped early because of this flag
    /// ([`Cancel::mark_stopped`]); false when it was set only after the
    /// work had ended, or never looked at.
    pub fn stopped_work(&self) -> bool {
        self.0.stopped.load(Ordering::Relaxed)
    }
}

impl PartialEq for Cancel {
    fn eq(&self, other: &Cancel) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The launch-queue depth of a CUDA stream when the trace shows none of
/// its own: about 1,024 kernels, as measured by users (launches return in
/// microseconds up to about a thousand pending kernels per stream, then
/// each waits for a kernel to finish; each stream has its own queue).
/// NVIDIA documents no figure, and HIP's queues are of the same order.
pub const DEFAULT_LAUNCH_QUEUE: u32 = 1024;

impl SimOptions {
    /// Adds a dependency kind to ignore.
    pub fn drop_kind(mut self, kind: DepKind) -> Self {
        if !self.drop_kinds.contains(&kind) {
            self.drop_kinds.push(kind);
        }
        self
    }

    /// Adds a duration factor for the GPU tasks `select` picks.
    pub fn scale(mut self, select: GpuSelector, factor: f64) -> Self {
        self.scales.push(DurationScale { select, factor });
        self
    }

    /// Limits each stream's queue of launched, unfinished GPU tasks to
    /// `depth` (at least 1).
    pub fn launch_queue(mut self, depth: u32) -> Self {
        self.launch_queue = Some(depth.max(1));
        self
    }

    /// Replays each task for `durations[i]` instead of its graph duration
    /// (see [`SimOptions::durations`]).
    pub fn durations(mut self, durations: Arc<[i64]>) -> Self {
        self.durations = Some(durations);
        self
    }

    /// Stops the replay early once `cancel` is set (see
    /// [`SimOptions::cancel`]).
    pub fn cancel_with(mut self, cancel: Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// True when edges of `kind` are ignored.
    pub fn drops(&self, kind: DepKind) -> bool {
        self.drop_kinds.contains(&kind)
    }
}

/// One duration factor and the GPU tasks it applies to.
#[derive(Debug, Clone, PartialEq)]
pub struct DurationScale {
    /// Which GPU tasks.
    pub select: GpuSelector,
    /// Multiplies their duration; must be finite and non-negative. Scaled
    /// durations are rounded to the nearest ns and saturate at `i64::MAX`
    /// ([`scaled_ns`](lumos_graph::scaled_ns)); times after them saturate too.
    pub factor: f64,
}

/// A set of GPU tasks (kernels, memcpy, memset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSelector {
    /// Every GPU task.
    All,
    /// Communication tasks ([`Task::collective`] is set).
    Comm,
    /// GPU tasks that are not communication.
    Compute,
    /// GPU tasks whose name contains this substring (case-sensitive).
    NameContains(String),
    /// The GPU tasks whose index is `true` here (indexed like
    /// [`Graph::tasks`]; tasks past its end are not selected): a set chosen
    /// by the caller, such as the GEMMs that structure discovery found.
    Tasks(Arc<[bool]>),
}

impl GpuSelector {
    /// True when `task` (task `id`, named `name`) is selected.
    pub fn matches(&self, id: TaskId, task: &Task, name: &str) -> bool {
        if !task.kind.is_gpu() {
            return false;
        }
        match self {
            GpuSelector::All => true,
            GpuSelector::Comm => task.is_comm(),
            GpuSelector::Compute => !task.is_comm(),
            GpuSelector::NameContains(part) => name.contains(part.as_str()),
            GpuSelector::Tasks(set) => set.get(id.idx()).copied().unwrap_or(false),
        }
    }
}

/// The duration each task runs for in this replay: its graph duration or
/// the one `opts` gives for it, after scaling. The caller has checked that
/// `opts` gives one for every task.
pub(crate) fn scaled_durations(graph: &Graph, opts: &SimOptions) -> Vec<i64> {
    let given = opts.durations.as_deref();
    let own = |i: usize, task: &Task| given.map_or(task.duration_ns, |d| d[i]);
    let scales = &opts.scales[..];
    if scales.is_empty() {
        return (graph.tasks.iter().enumerate())
            .map(|(i, t)| own(i, t))
            .collect();
    }
    // Substring matching per task would dominate the replay on million-task
    // graphs; names are interned, so match each distinct name once.
    let name_hits: Vec<Vec<bool>> = scales
        .iter()
        .map(|s| match &s.select {
            GpuSelector::NameContains(part) => graph
                .names
                .iter()
                .map(|n| n.contains(part.as_str()))
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    graph
        .tasks
        .iter()
        .enumerate()
        .map(|(i, task)| {
            let ns = own(i, task);
            if !task.kind.is_gpu() {
                return ns;
            }
            let mut factor = 1.0;
            for (scale, hits) in scales.iter().zip(&name_hits) {
                let selected = match &scale.select {
                    GpuSelector::All => true,
                    GpuSelector::Comm => task.is_comm(),
                    GpuSelector::Compute => !task.is_comm(),
                    GpuSelector::NameContains(_) => {
                        hits.get(task.name.0 as usize).copied().unwrap_or(false)
                    }
                    GpuSelector::Tasks(set) => set.get(i).copied().unwrap_or(false),
                };
                if selected {
                    factor *= scale.factor;
                }
            }
            if factor == 1.0 {
                ns
            } else {
                scaled_ns(ns, factor)
            }
        })
        .collect()
}
