//! The analyses a person looks for first in a trace, per step and over a
//! selection of steps: the GPU breakdown in time and in % of the step,
//! compute/communication overlap, idle time by cause, the top kernels (by
//! name and by launching operator), collectives with their bandwidth, and
//! the memory timeline.
//!
//! Every analysis takes its times through [`TaskTimes`], so the measured
//! run, its replay and a prediction go through the same code
//! ([`analyze`]). The report types are flat rows with their units in
//! their names (`*_us`, `*_pct`, `*_bytes`, `*_gbps`), ready to become
//! data frames. docs/ANALYSES.md defines each quantity and compares it
//! with Holistic Trace Analysis (HTA).

mod breakdown;
mod collectives;
mod idle;
pub(crate) mod intervals;
mod kernels;
mod memory;
mod select;

use lumos_graph::{Graph, Measured, Span, TaskId};
use lumos_sim::{step_spans, window_span, Schedule, TaskTimes};
use lumos_trace::MemoryEvent;
use serde::Serialize;

pub(crate) use breakdown::pct as pct_of;
pub(crate) use breakdown::{GpuOrder, GraphFacts};

pub use breakdown::{HtaView, StepAnalysis, StreamIdle};
pub use collectives::{bus_factor, collective_type, nccl_algorithm, CollectiveRow};
pub(crate) use kernels::ScopeOperators;
pub use kernels::{operator_of, KernelRow, OperatorRow, NO_OPERATOR};
pub use memory::{DeviceMemory, MemoryReport, MemoryTimeline, StepMemory};
pub use select::{StepSelection, StepSelectionError};

/// How the analyses are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisOptions {
    /// Which steps ([`StepSelection::all`] by default).
    pub steps: StepSelection,
    /// An idle gap shorter than this, before GPU work that had been
    /// launched before the gap began, is a gap between kernels rather than
    /// "other" idle time: HTA's `consecutive_kernel_delay` (30 us, HTA's
    /// default; its times are in us).
    pub kernel_gap_ns: i64,
    /// Operators listed per step on the critical path.
    pub path_operators: usize,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            steps: StepSelection::all(),
            kernel_gap_ns: 30_000,
            path_operators: 5,
        }
    }
}

/// The analyses of one run (measured, replayed or predicted) over the
/// selected steps.
#[derive(Debug, Clone, Serialize)]
pub struct Analyses {
    /// One row per selected step, in trace order (one row named `window`,
    /// the whole timeline, for a trace without `ProfilerStep#N`).
    pub steps: Vec<StepAnalysis>,
    /// The selection as a whole: the sum of its steps' times, with the
    /// percentages of that sum (`step` is `selection`, `index` null).
    pub total: StepAnalysis,
    /// The selection under HTA's definitions, to compare with HTA's
    /// temporal breakdown, overlap and idle-time breakdown.
    pub hta: HtaView,
    /// GPU tasks of the selected steps by name, most total time first.
    pub kernels: Vec<KernelRow>,
    /// The same GPU time by the operator that launched it, most first.
    pub operators: Vec<OperatorRow>,
    /// Communication by collective type, process group and algorithm, most
    /// total time first.
    pub collectives: Vec<CollectiveRow>,
}

/// One step an analysis covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SelectedStep {
    /// Its position among the graph's steps; `None` for the whole timeline
    /// of a graph without steps.
    pub index: Option<usize>,
    /// Its name (`window` for the whole timeline).
    pub name: String,
    /// Its span on the times analysed.
    pub span: Span,
}

impl SelectedStep {
    /// The tasks that belong to it: the step's own (CPU tasks inside its
    /// annotation and the GPU work they launched), or every task.
    pub fn tasks<'g>(&self, graph: &'g Graph) -> Box<dyn Iterator<Item = TaskId> + 'g> {
        match self.index {
            Some(i) => Box::new(graph.steps[i].tasks.iter().copied()),
            None => Box::new((0..graph.tasks.len() as u32).map(TaskId)),
        }
    }

    /// How many tasks [`SelectedStep::tasks`] gives.
    pub fn task_count(&self, graph: &Graph) -> usize {
        self.index
            .map_or(graph.tasks.len(), |i| graph.steps[i].tasks.len())
    }
}

/// The names of `graph`'s steps, in order.
pub(crate) fn step_names(graph: &Graph) -> Vec<String> {
    graph.steps.iter().map(|s| s.name.clone()).collect()
}

/// The steps `positions` (among `graph`'s steps) on `times`, whose
/// measured annotations are `annotations` when the times are measured;
/// a graph without steps has one, the whole timeline.
pub(crate) fn selected_steps<T: TaskTimes + ?Sized>(
    graph: &Graph,
    times: &T,
    annotations: Option<&[Span]>,
    positions: &[usize],
) -> Vec<SelectedStep> {
    selected_steps_of(graph, &step_spans(graph, times, annotations), positions)
}

/// [`selected_steps`] from the spans of every step, found by the caller
/// ([`step_spans`]): the report needs each side's spans in four places.
pub(crate) fn selected_steps_of(
    graph: &Graph,
    spans: &[Span],
    positions: &[usize],
) -> Vec<SelectedStep> {
    if graph.steps.is_empty() {
        return vec![SelectedStep {
            index: None,
            name: "window".into(),
            span: spans[0],
        }];
    }
    positions
        .iter()
        .filter(|&&i| i < graph.steps.len())
        .map(|&i| SelectedStep {
            index: Some(i),
            name: graph.steps[i].name.clone(),
            span: spans[i],
        })
        .collect()
}

/// The analyses of `graph` at `times` over the steps `positions`
/// (resolved with [`StepSelection::resolve`] on the graph's step names;
/// ignored for a graph without steps). `annotations` are the measured step
/// annotations when `times` are the measured ones
/// ([`Measured::step_annotations`](lumos_graph::Measured::step_annotations)),
/// `None` for replayed or predicted times.
pub fn analyze<T: TaskTimes + Sync + ?Sized>(
    graph: &Graph,
    times: &T,
    annotations: Option<&[Span]>,
    positions: &[usize],
    opts: &AnalysisOptions,
) -> Analyses {
    let facts = GraphFacts::of(graph);
    let side = Side::new(graph, times, annotations);
    analyze_with(graph, times, positions, opts, (&side, &facts))
}

/// [`analyze`] with what the caller found of `times` ([`Side`]) and of
/// the graph, shared with the rest of its report.
fn analyze_with<T: TaskTimes + Sync + ?Sized>(
    graph: &Graph,
    times: &T,
    positions: &[usize],
    opts: &AnalysisOptions,
    (side, facts): (&Side, &GraphFacts),
) -> Analyses {
    let steps = selected_steps_of(graph, &side.steps, positions);
    // Sized exactly: boxed step iterators give no size hint.
    let mut own: Vec<TaskId> = Vec::with_capacity(steps.iter().map(|s| s.task_count(graph)).sum());
    own.extend(steps.iter().flat_map(|s| s.tasks(graph)));
    // The breakdown and the three tables read the same inputs and not each
    // other: side by side, as each would be alone.
    let gap = opts.kernel_gap_ns;
    let ((rows, hta), (kernels, (operators, collectives))) = rayon::join(
        || {
            let gpu = breakdown::GpuTime::new(graph, times, &steps, gap, (side, facts));
            let rows: Vec<breakdown::StepNs> = (steps.iter().enumerate())
                .map(|s| gpu.step(graph, times, s))
                .collect();
            (rows, gpu.hta_view(graph, times, &own, gap))
        },
        || {
            rayon::join(
                || kernels::kernel_rows(graph, times, &own),
                || {
                    rayon::join(
                        || kernels::operator_rows(graph, times, &own, &facts.operators),
                        || collectives::collective_rows(graph, times, &own),
                    )
                },
            )
        },
    );
    let total = rows
        .iter()
        .fold(breakdown::StepNs::default(), |a, b| a.add(b));
    Analyses {
        steps: steps
            .iter()
            .zip(&rows)
            .map(|(s, r)| r.row(s.name.clone(), s.index))
            .collect(),
        total: total.row("selection".into(), None),
        hta,
        kernels,
        operators,
        collectives,
    }
}

/// The analyses of a replay next to those of its measurement, for the
/// selected steps, with the measured memory timeline and the replay's
/// critical path per step.
#[derive(Debug, Clone, Serialize)]
pub struct TraceAnalysis {
    /// The selected steps, by name (`window` for a trace without steps).
    pub selected_steps: Vec<String>,
    /// Of the measured times.
    pub measured: Analyses,
    /// Of the replayed times.
    pub replayed: Analyses,
    /// The measured memory timeline, when the trace has `[memory]` events
    /// of a GPU.
    pub memory: Option<MemoryReport>,
    /// Per selected step, the replay's critical path and what bounds it
    /// (empty where no schedule was kept: the ranks of a job).
    pub critical_path: Vec<crate::StepCriticalPath>,
}

/// What [`trace_analysis_with`] needs besides the graph and its times.
pub(crate) struct AnalysisInputs<'a> {
    /// The trace's `[memory]` events, when kept.
    pub memory: Option<&'a [MemoryEvent]>,
    /// The replay's schedule, when kept, for the critical paths.
    pub schedule: Option<&'a Schedule>,
}

/// What one side of a rank's report (measured or replayed times) reads
/// in several of its parts, found once: its GPU tasks by start, the span
/// of every step, and the span of all its tasks.
pub(crate) struct Side {
    /// The GPU tasks by start.
    pub order: GpuOrder,
    /// Every step's span ([`step_spans`]).
    pub steps: Vec<Span>,
    /// The rank's window ([`window_span`]): every task and every step,
    /// so that no step is longer than the window holding it.
    pub whole: Span,
}

impl Side {
    /// The side of `times`, whose step annotations are `annotations`
    /// when they are measured.
    pub fn new<T: TaskTimes + ?Sized>(
        graph: &Graph,
        times: &T,
        annotations: Option<&[Span]>,
    ) -> Side {
        let steps = step_spans(graph, times, annotations);
        Side {
            order: GpuOrder::new(graph, times),
            whole: window_span(times, &steps),
            steps,
        }
    }
}

/// What a rank's report finds of its graph and measured times alone: the
/// graph's facts and the measured side. Neither depends on a replay or
/// on the steps selected, so a replay finds them while its simulation
/// runs (`replay_built`) and every report of it borrows them.
pub(crate) struct Prefound {
    facts: GraphFacts,
    measured: Side,
}

impl Prefound {
    /// The facts of `graph` and the side of its `measured` times, found
    /// side by side.
    pub fn of(graph: &Graph, measured: &Measured) -> Prefound {
        let annotations = Some(measured.step_annotations.as_slice());
        let (facts, measured) = rayon::join(
            || GraphFacts::of(graph),
            || Side::new(graph, &measured.tasks, annotations),
        );
        Prefound { facts, measured }
    }

    /// The measured side and the graph's facts, for [`MeasuredPart::of`].
    pub fn measured(&self) -> (&Side, &GraphFacts) {
        (&self.measured, &self.facts)
    }

    /// Borrowed with the `replayed` side, for the parts.
    pub fn shared<'a>(&'a self, replayed: &'a Side) -> Shared<'a> {
        Shared {
            facts: &self.facts,
            measured: &self.measured,
            replayed,
        }
    }
}

impl std::fmt::Debug for Prefound {
    // Derived values of the graph and its measured times: their contents
    // say nothing those do not.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefound").finish_non_exhaustive()
    }
}

/// What the parts of one rank's report share, owned: found side by side
/// on rayon's threads.
pub(crate) struct Found {
    prefound: Prefound,
    replayed: Side,
}

impl Found {
    /// The facts of `graph`, and the sides of `measured` and `times`.
    pub fn of<T: TaskTimes + Sync + ?Sized>(
        graph: &Graph,
        measured: &Measured,
        times: &T,
    ) -> Found {
        let (prefound, replayed) = rayon::join(
            || Prefound::of(graph, measured),
            || Side::new(graph, times, None),
        );
        Found { prefound, replayed }
    }

    /// Borrowed, for the parts.
    pub fn shared(&self) -> Shared<'_> {
        self.prefound.shared(&self.replayed)
    }
}

/// What the parts of one rank's report share: the graph's facts and each
/// side's GPU tasks by start and step spans, found once (side by side).
#[derive(Clone, Copy)]
pub(crate) struct Shared<'a> {
    /// The graph's.
    pub facts: &'a GraphFacts,
    /// The measured times'.
    pub measured: &'a Side,
    /// The replayed times'.
    pub replayed: &'a Side,
}

/// The analyses of a replay (`times`) next to its measurement over the
/// steps `positions`, from what the caller found (`shared`) for the rest
/// of the report too.
///
/// The four parts (measured and replayed analyses, critical paths, memory
/// timeline) read the same inputs and none reads another's result, so they
/// run side by side on rayon's threads: on a 1 GB trace they are most of
/// what `lumos replay` does after the replay itself. Each is computed as
/// it would be alone, so the result does not depend on the threads.
pub(crate) fn trace_analysis_with<T: TaskTimes + Sync + ?Sized>(
    graph: &Graph,
    measured: &Measured,
    times: &T,
    positions: &[usize],
    opts: &AnalysisOptions,
    inputs: AnalysisInputs<'_>,
    shared: Shared<'_>,
) -> TraceAnalysis {
    let (m, r) = rayon::join(
        || {
            let with = (shared.measured, shared.facts);
            MeasuredPart::of(graph, measured, positions, opts, inputs.memory, with)
        },
        || {
            let with = (shared.replayed, shared.facts);
            ReplayedPart::of(graph, times, positions, opts, inputs.schedule, with)
        },
    );
    m.with(r)
}

/// The half of a [`TraceAnalysis`] that reads the measured times alone:
/// their analyses and the memory timeline, which a report can start
/// before its replayed side is found.
#[derive(Debug)]
pub(crate) struct MeasuredPart {
    selected_steps: Vec<String>,
    analyses: Analyses,
    memory: Option<MemoryReport>,
}

impl MeasuredPart {
    /// The measured analyses over the steps `positions`, and the memory
    /// timeline of the trace's `memory` events when kept, from the
    /// measured side and the graph's facts; the two side by side.
    pub fn of(
        graph: &Graph,
        measured: &Measured,
        positions: &[usize],
        opts: &AnalysisOptions,
        memory: Option<&[MemoryEvent]>,
        (side, facts): (&Side, &GraphFacts),
    ) -> MeasuredPart {
        let (analyses, (m_steps, memory)) = rayon::join(
            || analyze_with(graph, &measured.tasks, positions, opts, (side, facts)),
            || {
                let m_steps = selected_steps_of(graph, &side.steps, positions);
                let memory = memory.and_then(|events| {
                    memory::memory_report(events, measured.origin_ns, side.whole, &m_steps)
                });
                (m_steps, memory)
            },
        );
        MeasuredPart {
            selected_steps: m_steps.iter().map(|s| s.name.clone()).collect(),
            analyses,
            memory,
        }
    }

    /// The whole analysis, with the replayed half.
    pub fn with(self, replayed: ReplayedPart) -> TraceAnalysis {
        TraceAnalysis {
            selected_steps: self.selected_steps,
            measured: self.analyses,
            replayed: replayed.analyses,
            memory: self.memory,
            critical_path: replayed.critical_path,
        }
    }
}

/// The half of a [`TraceAnalysis`] that reads the replayed times: their
/// analyses and each step's critical path.
pub(crate) struct ReplayedPart {
    analyses: Analyses,
    critical_path: Vec<crate::StepCriticalPath>,
}

impl ReplayedPart {
    /// The analyses of `times` over the steps `positions`, and each
    /// step's critical path when the `schedule` is kept, from the
    /// replayed side and the graph's facts; the two side by side.
    pub fn of<T: TaskTimes + Sync + ?Sized>(
        graph: &Graph,
        times: &T,
        positions: &[usize],
        opts: &AnalysisOptions,
        schedule: Option<&Schedule>,
        (side, facts): (&Side, &GraphFacts),
    ) -> ReplayedPart {
        let (analyses, critical_path) = rayon::join(
            || analyze_with(graph, times, positions, opts, (side, facts)),
            || {
                schedule.map_or_else(Vec::new, |schedule| {
                    let r_steps = selected_steps_of(graph, &side.steps, positions);
                    crate::critical::step_critical_paths(
                        graph,
                        schedule,
                        &r_steps,
                        opts.path_operators,
                        &facts.operators,
                    )
                })
            },
        );
        ReplayedPart {
            analyses,
            critical_path,
        }
    }
}

#[cfg(test)]
mod tests;
