//! Replaying one trace and comparing the replay with the measurement
//! (`lumos replay`): steps, window, breakdown, GPU-busy timeline and the
//! critical path, and the summary over many traces.

use lumos_graph::{
    build, build_owned, build_streamed, trim_heap, BuildReport, Graph, Measured, RankMeta, Span,
    TrackSink,
};
use lumos_predict::{replay_scales, KernelScale};
use lumos_sim::{
    critical_path_summary, simulate, timeline_bin_ns, Breakdown, BusyBins, CriticalPathSummary,
    Schedule, SimOptions, TaskTimes,
};
use lumos_store::StoredRank;
use lumos_trace::{read_path_into, MemoryEvent, Trace, TraceMeta};
use serde::Serialize;
use std::sync::Mutex;

use crate::analysis::{
    selected_steps, step_names, trace_analysis_with, AnalysisInputs, AnalysisOptions, Found,
    GpuOrder, MeasuredPart, Prefound, ReplayedPart, Side, TraceAnalysis,
};
use crate::critical::{critical_paths, CriticalPaths};
use crate::job::{JobReport, RepresentativesReport};
use crate::timeline::{Timeline, TimelineSource};
use crate::units::{err_pct, us};
use crate::ReportError;

/// `lumos replay --json`: one replay per trace (per rank, for a job), the
/// summary over them, and for a job the job's own report.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayOutput {
    /// Per trace, in input order (per rank, ascending, for a job).
    pub traces: Vec<TraceReplay>,
    /// Errors over all traces ([`summarize`]).
    pub summary: Summary,
    /// The job, when the traces were replayed as one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<JobReport>,
    /// When the job was replayed from representatives: its groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub representatives: Option<RepresentativesReport>,
}

impl ReplayOutput {
    /// The output for traces replayed one by one.
    pub fn of_traces(traces: Vec<TraceReplay>) -> ReplayOutput {
        ReplayOutput {
            summary: summarize(&traces),
            traces,
            job: None,
            representatives: None,
        }
    }
}

/// One trace replayed and compared with its measurement.
#[derive(Debug, Clone, Serialize)]
pub struct TraceReplay {
    /// The trace file, as given.
    pub path: String,
    /// Its rank.
    pub rank: u32,
    /// The reader's and the builder's warnings.
    pub warnings: Vec<String>,
    /// True when the trace shows signs of damage (events dropped by the
    /// profiler, ids repeated, host and GPU clocks hours apart:
    /// `BuildReport::flag_reasons`); such traces are reported apart in the
    /// summary.
    pub flagged: bool,
    /// Tasks in the graph.
    pub tasks: usize,
    /// Each `ProfilerStep#N`.
    pub steps: Vec<StepReplay>,
    /// The whole window (`lumos_sim::window_span`): from the earlier of
    /// the first task's start and the first step's start to the later of
    /// the last task's end and the last step's end. It holds every step,
    /// and work before the first step and after the last (not in any
    /// step), and the time between steps; `lumos predict`'s breakdown of
    /// every step together is over the same window.
    pub window: Compare,
    /// Over the window.
    pub breakdown: BreakdownPair,
    /// Fraction of each bin (1 ms, wider for windows over 65 s) with at
    /// least one GPU stream busy.
    pub gpu_busy_timeline: TimelinePair,
    /// The replay's critical path, from the last task to finish.
    pub critical_path: Option<CriticalPath>,
    /// Per step and over the selected steps, measured and replayed:
    /// breakdown, overlap, idle time by cause, top kernels and operators,
    /// collectives; the memory timeline; each step's critical path.
    pub analysis: TraceAnalysis,
}

/// One step, measured and replayed.
#[derive(Debug, Clone, Serialize)]
pub struct StepReplay {
    /// The annotation's name.
    pub name: String,
    /// Its measured length.
    pub measured_us: f64,
    /// Its replayed length.
    pub replayed_us: f64,
    /// (replayed - measured) / measured, %; `None` (JSON null) when the
    /// measured length is zero: no relative error exists.
    pub error_pct: Option<f64>,
}

/// A length, measured and replayed.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Compare {
    /// Measured.
    pub measured_us: f64,
    /// Replayed.
    pub replayed_us: f64,
    /// (replayed - measured) / measured, %; `None` (JSON null) when the
    /// measured length is zero: no relative error exists.
    pub error_pct: Option<f64>,
}

/// The GPU breakdown, measured and replayed.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BreakdownPair {
    /// Of the measured times.
    pub measured: BreakdownUs,
    /// Of the replayed times.
    pub replayed: BreakdownUs,
}

/// Where the GPU time of a window went, from the union of busy intervals of
/// all GPU streams.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BreakdownUs {
    /// Compute not overlapped by communication.
    pub exposed_compute_us: f64,
    /// Compute and communication at once.
    pub overlapped_us: f64,
    /// Communication not overlapped by compute.
    pub exposed_comm_us: f64,
    /// No GPU task at all.
    pub idle_us: f64,
    /// The window.
    pub total_us: f64,
}

impl From<Breakdown> for BreakdownUs {
    fn from(b: Breakdown) -> BreakdownUs {
        BreakdownUs {
            exposed_compute_us: us(b.exposed_compute_ns),
            overlapped_us: us(b.overlapped_ns),
            exposed_comm_us: us(b.exposed_comm_ns),
            idle_us: us(b.idle_ns),
            total_us: us(b.total_ns),
        }
    }
}

/// The GPU-busy timeline, measured and replayed.
#[derive(Debug, Clone, Serialize)]
pub struct TimelinePair {
    /// Bin width.
    pub bin_us: f64,
    /// Per bin from the measured window's start, the busy fraction.
    pub measured: Vec<f64>,
    /// The same for the replayed window.
    pub replayed: Vec<f64>,
}

/// A critical path: what bound each start, walking back from the end.
#[derive(Debug, Clone, Serialize)]
pub struct CriticalPath {
    /// Hops on the path.
    pub hops: usize,
    /// Per class of constraint.
    pub by_bound: Vec<BoundShare>,
    /// The longest tasks on the path.
    pub top_tasks: Vec<PathTask>,
}

/// The hops of a critical path bound by one class of constraint.
#[derive(Debug, Clone, Serialize)]
pub struct BoundShare {
    /// A dependency kind (`intra_thread`, `launch`, ...), `processor`,
    /// `runtime_sync`, `release` or `rendezvous`.
    pub bound: String,
    /// How many hops.
    pub hops: usize,
    /// Time waited on them.
    pub wait_us: f64,
    /// Time their tasks ran.
    pub busy_us: f64,
}

/// A task on a critical path.
#[derive(Debug, Clone, Serialize)]
pub struct PathTask {
    /// Its name.
    pub name: String,
    /// Its time on the path.
    pub us: f64,
}

/// Errors over many replayed traces.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Summary {
    /// Over every step of every unflagged trace (whole window where a trace
    /// has no steps) that has an error (a measured length); `None` (JSON
    /// null) when none has.
    pub mean_abs_error_pct: Option<f64>,
    /// The largest of them; `None` when there are none.
    pub max_abs_error_pct: Option<f64>,
    /// How many errors the mean covers (spans without an error are not
    /// counted).
    pub steps: usize,
    /// The same mean over flagged traces.
    pub flagged_mean_abs_error_pct: Option<f64>,
}

/// What a report says about the trace a replay came from.
#[derive(Debug, Clone)]
pub struct TraceInfo {
    /// The trace file, as shown.
    pub path: String,
    /// Its rank.
    pub rank: u32,
    /// The reader's and the builder's warnings.
    pub warnings: Vec<String>,
    /// Signs of a damaged trace (`BuildReport::flag_reasons`).
    pub flagged: bool,
}

impl TraceInfo {
    /// The information of the rank `meta` describes, whose graph the
    /// builder reported on in `report`.
    pub fn of_rank(meta: &RankMeta, report: &BuildReport) -> TraceInfo {
        TraceInfo::new(
            meta.path.display().to_string(),
            meta.rank,
            &meta.warnings,
            report,
        )
    }

    /// The information of a trace at `path` of `rank`, from the reader's
    /// warnings and the builder's report.
    pub fn new(path: String, rank: u32, read_warnings: &[String], report: &BuildReport) -> Self {
        TraceInfo {
            path,
            rank,
            warnings: trace_warnings(read_warnings, report),
            flagged: flagged(report),
        }
    }
}

/// What a trace's reader (`read_warnings`) and its graph's build
/// (`report`) warned, in that order: the warnings every report of the
/// trace states (a replay's, a prediction's), so that they read alike.
pub fn trace_warnings(read_warnings: &[String], report: &BuildReport) -> Vec<String> {
    let mut warnings = read_warnings.to_vec();
    warnings.extend(report.warnings.iter().cloned());
    warnings
}

/// Signs of a damaged trace, as counted by the graph builder.
fn flagged(report: &BuildReport) -> bool {
    report.flagged()
}

/// One trace replayed: its graph, measured times and schedule, from which
/// its report ([`Replayed::report`]) and timeline ([`Replayed::timeline`])
/// are made, and the little of the trace they read besides: not the
/// trace, so that [`replay_owned`] can free it during the build.
///
/// It also keeps what its reports find of the graph and the measured
/// times alone, found while the simulation ran; a `Replayed` is therefore
/// made only by this crate's replay functions, and its reports assume
/// that `graph` and `measured` are the ones it was replayed from.
#[derive(Debug)]
pub struct Replayed {
    /// What the trace says about its file and rank: path, rank, the
    /// reader's warnings, and its tracks for the timeline.
    pub meta: RankMeta,
    /// The trace's `[memory]` events, for the memory timeline.
    pub memory: Vec<MemoryEvent>,
    /// Its graph.
    pub graph: Graph,
    /// Its measured times.
    pub measured: Measured,
    /// What the builder counted.
    pub build: BuildReport,
    /// The replay.
    pub schedule: Schedule,
    /// What every report of it reads of `graph` and `measured` alone.
    prefound: Prefound,
    /// The measured half of one report, found beside the simulation for
    /// the first report that asks for it.
    ahead: Mutex<Option<Ahead>>,
}

/// The measured half of the report over the steps `positions` under
/// `opts`, found while the simulation ran ([`replay_built`]): on a 1 GB
/// rank the simulation holds one core for about 0.15 s, which this fills,
/// rather than wait for the replayed half after it.
#[derive(Debug)]
struct Ahead {
    positions: Vec<usize>,
    opts: AnalysisOptions,
    part: MeasuredPart,
}

impl Ahead {
    /// The measured half of the report `opts` asks for, on the graph's
    /// steps; `None` if the steps are not the graph's (the report will
    /// say so).
    fn find(
        (graph, measured, memory): (&Graph, &Measured, &[MemoryEvent]),
        opts: &AnalysisOptions,
        prefound: &Prefound,
    ) -> Option<Ahead> {
        let positions = opts.steps.resolve(&step_names(graph)).ok()?;
        let with = prefound.measured();
        let part = MeasuredPart::of(graph, measured, &positions, opts, Some(memory), with);
        Some(Ahead {
            positions,
            opts: opts.clone(),
            part,
        })
    }
}

/// Builds the graph of `trace` and replays it under `opts`.
pub fn replay(trace: &Trace, opts: &SimOptions) -> Result<Replayed, ReportError> {
    replay_scaled(trace, opts, &[])
}

/// `opts` with the kernel speed-ups `scales` (the predictor's syntax,
/// `class:gemm=0.5`) resolved on `graph` ([`lumos_predict::replay_scales`])
/// and added after its own.
///
/// A speed-up that selects no GPU task of `graph` (`what` names it: the
/// file, or the job) is refused ([`ReportError::Predict`] of a usage
/// error, as a prediction refuses it).
pub fn with_kernel_scales(
    graph: &Graph,
    opts: &SimOptions,
    scales: &[KernelScale],
    what: &str,
) -> Result<SimOptions, ReportError> {
    let mut opts = opts.clone();
    let added = replay_scales(graph, scales, what).map_err(ReportError::Predict)?;
    opts.scales.extend(added);
    Ok(opts)
}

/// [`replay`] with the kernel speed-ups `scales` too
/// ([`with_kernel_scales`]). The measured half of the default report
/// ([`Replayed::report`]) is found while the simulation runs, as in
/// [`replay`] and [`replay_path`] ([`replay_path_for`] and
/// [`replay_owned`] are told the report).
pub fn replay_scaled(
    trace: &Trace,
    opts: &SimOptions,
    scales: &[KernelScale],
) -> Result<Replayed, ReportError> {
    let (meta, memory) = (RankMeta::of(trace), trace.memory.clone());
    replay_built(
        meta,
        memory,
        build(trace),
        opts,
        scales,
        Some(&AnalysisOptions::default()),
    )
    .map(trimmed)
}

/// [`replay_scaled`], taking the trace: the same replay, with the trace's
/// events freed as soon as the graph's tasks are made of them
/// ([`lumos_graph::build_owned`]), so that the trace is not in memory
/// with the graph, the schedule and the report's analyses. The measured
/// half of the report under `report` is found while the simulation runs,
/// as in [`replay_path_for`].
pub fn replay_owned(
    mut trace: Trace,
    opts: &SimOptions,
    scales: &[KernelScale],
    report: &AnalysisOptions,
) -> Result<Replayed, ReportError> {
    let (meta, memory) = (RankMeta::of(&trace), std::mem::take(&mut trace.memory));
    let built = build_owned(trace);
    // The events and the build's indexes are freed: what glibc keeps of
    // them would stay resident under the simulation and the report (on a
    // 1 GB trace about 180 MB, which otherwise is the command's peak).
    trim_heap();
    replay_built(meta, memory, built, opts, scales, Some(report)).map(trimmed)
}

/// Reads the trace file at `path` and replays it: [`replay_owned`] of
/// [`lumos_trace::read_path`]'s trace, with the graph build's first pass
/// done as the file is read ([`lumos_graph::build_streamed`]), so that the
/// trace's events are never all in memory and that pass runs beside the
/// reader's parsing. `progress` gets the uncompressed bytes read so far
/// after each chunk, and nothing once the read is done.
pub fn replay_path(
    path: &std::path::Path,
    opts: &SimOptions,
    scales: &[KernelScale],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Replayed, ReportError> {
    let report = AnalysisOptions::default();
    replay_path_for(path, (opts, scales), &report, progress)
}

/// [`replay_path`] for a report under `report` rather than the default
/// options: the measured half of that report is found while the
/// simulation runs, and [`Replayed::report_with`] of the same options
/// only finds the rest.
pub fn replay_path_for(
    path: &std::path::Path,
    (opts, scales): (&SimOptions, &[KernelScale]),
    report: &AnalysisOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Replayed, ReportError> {
    replay_path_with_meta(path, (opts, scales), report, progress).map(|(replayed, _)| replayed)
}

/// [`replay_path_for`], also giving the trace's metadata: with the replay's
/// graph and measured times, it is what a prediction reads of the file
/// ([`crate::prediction_input_of_replay`]), so that a page and a
/// prediction of one trace (`lumos report` with what-if flags) read it
/// once.
pub fn replay_path_with_meta(
    path: &std::path::Path,
    (opts, scales): (&SimOptions, &[KernelScale]),
    report: &AnalysisOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(Replayed, TraceMeta), ReportError> {
    let mut sink = TrackSink::new();
    let mut trace = read_path_into(path, progress, &mut sink)?;
    let (meta, memory) = (RankMeta::of(&trace), std::mem::take(&mut trace.memory));
    let trace_meta = std::mem::take(&mut trace.meta);
    let built = build_streamed(trace, sink);
    // Unlike `replay_owned`, no trims: no trace's events were freed, and
    // what the build's indexes and the simulator's arrays leave free is
    // what the simulation and the report take next. On a 1 GB rank the
    // trims gave about 110 MB back that those then faulted in afresh
    // (28 k page faults, 3 to 4% of the command's wall) for 20 to 30 MB
    // less peak (0.54x of the JSON with them, at most 0.57x without).
    let replayed = replay_built(meta, memory, built, opts, scales, Some(report))?;
    Ok((replayed, trace_meta))
}

/// `replayed`, after the heap is given back to the system
/// ([`trim_heap`]): the simulator's working set is freed, and returned
/// before the report's analyses take their own.
pub(crate) fn trimmed(replayed: Replayed) -> Replayed {
    trim_heap();
    replayed
}

/// Replays a trace's graph, `built` from it, under `opts` and `scales`.
pub(crate) fn replay_built(
    meta: RankMeta,
    memory: Vec<MemoryEvent>,
    (graph, measured, build): (Graph, Measured, BuildReport),
    opts: &SimOptions,
    scales: &[KernelScale],
    report: Option<&AnalysisOptions>,
) -> Result<Replayed, ReportError> {
    ReportError::refuse_empty(&graph, || meta.file().display().to_string())?;
    let opts = with_kernel_scales(&graph, opts, scales, &meta.file().display().to_string())?;
    // The simulation runs on one thread; what the report finds of the
    // graph and the measured times alone (and the measured half of the
    // `report` expected) is found on another meanwhile, rather than after
    // it.
    let (schedule, (prefound, ahead)) = rayon::join(
        || simulate(&graph, &opts),
        || {
            let prefound = Prefound::of(&graph, &measured);
            let inputs = (&graph, &measured, memory.as_slice());
            let ahead = report.and_then(|r| Ahead::find(inputs, r, &prefound));
            (prefound, ahead)
        },
    );
    let schedule = schedule.map_err(|source| ReportError::Replay {
        path: meta.file().display().to_string(),
        source,
    })?;
    Ok(Replayed {
        meta,
        memory,
        graph,
        measured,
        build,
        schedule,
        prefound,
        ahead: Mutex::new(ahead),
    })
}

/// A rank read back from a compact file ([`lumos_store`]), replayed: what
/// [`Replayed`] is for a trace, with the same report and timeline; made
/// only by [`replay_stored`], as it keeps what its report finds before the
/// replay.
#[derive(Debug)]
pub struct ReplayedStored<'s> {
    /// The rank, as stored.
    pub stored: &'s StoredRank,
    /// The replay.
    pub schedule: Schedule,
    /// What its report reads of the stored graph and measured times alone.
    prefound: Prefound,
}

/// Replays the stored rank's graph under `opts`: the same replay as
/// [`replay`] of the trace it was ingested from.
pub fn replay_stored<'s>(
    stored: &'s StoredRank,
    opts: &SimOptions,
) -> Result<ReplayedStored<'s>, ReportError> {
    let (graph, measured) = (&stored.graph.graph, &stored.graph.measured);
    ReportError::refuse_empty(graph, || stored.file().display().to_string())?;
    // As in a trace's replay: found beside the simulation.
    let (schedule, prefound) =
        rayon::join(|| simulate(graph, opts), || Prefound::of(graph, measured));
    let schedule = schedule.map_err(|source| ReportError::Replay {
        path: stored.file().display().to_string(),
        source,
    })?;
    Ok(ReplayedStored {
        stored,
        schedule,
        prefound,
    })
}

impl ReplayedStored<'_> {
    /// The replay compared with the measurement.
    pub fn report(&self) -> TraceReplay {
        let s = self.stored;
        let (graph, measured) = (&s.graph.graph, &s.graph.measured);
        let mut info = TraceInfo::new(
            s.facts.path.display().to_string(),
            s.facts.meta.rank,
            &s.facts.warnings,
            &s.report,
        );
        info.warnings.extend(self.schedule.warnings());
        // As a trace's replay is analysed, but without the memory timeline:
        // a compact file keeps no `[memory]` events.
        let all: Vec<usize> = (0..graph.steps.len()).collect();
        let opts = AnalysisOptions::default();
        let (critical_path, analysis, compared) = analysed(
            graph,
            measured,
            &self.schedule,
            &self.prefound,
            (&all, &opts, None),
            None,
        );
        compared.report(info, graph, critical_path, analysis)
    }

    /// The replayed timeline, on the trace's own clock.
    pub fn timeline(&self) -> Timeline<'_> {
        let s = self.stored;
        let source = TimelineSource::of_rank(&s.facts.rank_meta());
        Timeline::replayed(&source, &s.graph.graph, &s.graph.measured, &self.schedule)
    }
}

/// The whole window's critical path, the analyses of the steps
/// `positions` (with the memory timeline of `memory` when kept) and the
/// comparison of `schedule` with `measured`: three independent parts of
/// one rank's report, computed side by side on rayon's threads (each as
/// it would be alone, so the report does not depend on the threads).
/// What was found before the replay (`prefound`: the graph's facts, the
/// measured side) leaves the replayed side to find, which the replayed
/// analyses and the comparison need; the measured analyses need nothing
/// more, so they start at once, beside it, unless they were found beside
/// the simulation already (`ahead`, for these steps and options).
fn analysed(
    graph: &Graph,
    measured: &Measured,
    schedule: &Schedule,
    prefound: &Prefound,
    (positions, opts, memory): (&[usize], &AnalysisOptions, Option<&[MemoryEvent]>),
    ahead: Option<MeasuredPart>,
) -> (Option<CriticalPath>, TraceAnalysis, Compared) {
    // The replayed side and then its analyses are the longest chain: this
    // thread takes it, and the measured half, then the whole path, go to
    // the other; the comparison and the step paths to whichever is free.
    let ((replayed, compared), (measured, critical_path)) = rayon::join(
        || {
            let replayed = Side::new(graph, schedule, None);
            let shared = prefound.shared(&replayed);
            let with = (shared.replayed, shared.facts);
            rayon::join(
                || ReplayedPart::of(graph, schedule, positions, opts, Some(schedule), with),
                || Compared::of_sides(graph, [shared.measured, shared.replayed]),
            )
        },
        || {
            let part = ahead.unwrap_or_else(|| {
                let with = prefound.measured();
                MeasuredPart::of(graph, measured, positions, opts, memory, with)
            });
            let critical_path = schedule.last_task().map(|last| {
                let s = critical_path_summary(graph, schedule, last, 10);
                critical_path_report(graph, &s)
            });
            (part, critical_path)
        },
    );
    (critical_path, measured.with(replayed), compared)
}

/// Replays `trace` under `opts` and compares the replay with the
/// measurement: [`replay`], then [`Replayed::report`].
pub fn replay_trace(trace: &Trace, opts: &SimOptions) -> Result<TraceReplay, ReportError> {
    Ok(replay(trace, opts)?.report())
}

impl Replayed {
    /// The replay compared with the measurement, analysed over every
    /// step.
    pub fn report(&self) -> TraceReplay {
        let opts = AnalysisOptions::default();
        self.report_on(&(0..self.graph.steps.len()).collect::<Vec<_>>(), &opts)
    }

    /// The replay compared with the measurement, analysed over the steps
    /// `opts` selects; an error when the trace lacks one of them.
    pub fn report_with(&self, opts: &AnalysisOptions) -> Result<TraceReplay, ReportError> {
        Ok(self.report_on(&self.positions(opts)?, opts))
    }

    /// The positions of the steps `opts` selects.
    pub fn positions(&self, opts: &AnalysisOptions) -> Result<Vec<usize>, ReportError> {
        opts.steps
            .resolve(&step_names(&self.graph))
            .map_err(|problem| ReportError::Steps {
                path: self.meta.path.display().to_string(),
                problem,
            })
    }

    fn report_on(&self, positions: &[usize], opts: &AnalysisOptions) -> TraceReplay {
        let mut info = TraceInfo::of_rank(&self.meta, &self.build);
        info.warnings.extend(self.schedule.warnings());
        let ahead = (self.ahead.lock().ok())
            .and_then(|mut a| a.take_if(|a| a.positions == positions && a.opts == *opts))
            .map(|a| a.part);
        let (critical_path, analysis, compared) = analysed(
            &self.graph,
            &self.measured,
            &self.schedule,
            &self.prefound,
            (positions, opts, Some(&self.memory)),
            ahead,
        );
        compared.report(info, &self.graph, critical_path, analysis)
    }

    /// The replayed timeline, on the trace's own clock.
    pub fn timeline(&self) -> Timeline<'_> {
        let source = TimelineSource::of_rank(&self.meta);
        Timeline::replayed(&source, &self.graph, &self.measured, &self.schedule)
    }

    /// The critical path of each step `opts` selects, hop by hop; with
    /// [`Timeline::with_critical_path`] on [`Replayed::timeline`], the
    /// replayed timeline with the paths marked.
    pub fn critical_paths(&self, opts: &AnalysisOptions) -> Result<CriticalPaths, ReportError> {
        let positions = self.positions(opts)?;
        let steps = selected_steps(&self.graph, &self.schedule, None, &positions);
        Ok(critical_paths(
            &self.graph,
            &self.schedule,
            &steps,
            opts.path_operators,
        ))
    }
}

/// Compares replayed times with the measured ones for one rank's graph:
/// steps, window, breakdown and busy timeline. `times` are the replayed
/// times of `graph`'s tasks, on the same window origin as `measured`.
///
/// The analyses cover every step, without the memory timeline (which
/// needs the trace) or per-step critical paths (which need a schedule).
pub fn compare<T: TaskTimes + Sync + ?Sized>(
    info: TraceInfo,
    graph: &Graph,
    measured: &Measured,
    times: &T,
    critical_path: Option<CriticalPath>,
) -> TraceReplay {
    let all: Vec<usize> = (0..graph.steps.len()).collect();
    let found = Found::of(graph, measured, times);
    let shared = found.shared();
    let inputs = AnalysisInputs {
        memory: None,
        schedule: None,
    };
    let options = AnalysisOptions::default();
    let analysis = trace_analysis_with(graph, measured, times, &all, &options, inputs, shared);
    let sides = [shared.measured, shared.replayed];
    Compared::of_sides(graph, sides).report(info, graph, critical_path, analysis)
}

/// The measured and replayed times of one rank side by side: steps,
/// window, breakdown and busy timeline, the parts of a [`TraceReplay`]
/// that need neither the critical path nor the analyses, so that callers
/// can compute them alongside.
pub(crate) struct Compared {
    steps: Vec<StepReplay>,
    window: Compare,
    breakdown: BreakdownPair,
    gpu_busy_timeline: TimelinePair,
}

/// One side's breakdown and GPU-busy timeline over its `window`, in
/// bins `bin_ns` wide, from its GPU tasks by start (`order`), with no
/// union kept: the window holds every task, so each union's part in it
/// is its length.
fn side(graph: &Graph, order: &GpuOrder, window: Span, bin_ns: i64) -> (Breakdown, Vec<f64>) {
    let mut bins = BusyBins::new(window, bin_ns);
    let [c, m, b] = order.comm_measures(graph, |s| bins.add(s));
    let total_ns = window.len_ns().max(0);
    (
        Breakdown::from_measures(c, m, b, total_ns),
        bins.finish().busy,
    )
}

impl Compared {
    /// Compares the replayed side with the measured one (the sides
    /// measured then replayed, found by the caller: GPU tasks by start,
    /// step spans, whole spans); the two breakdowns are computed side by
    /// side.
    pub(crate) fn of_sides(graph: &Graph, [m_side, r_side]: [&Side; 2]) -> Compared {
        let (mw, rw) = (m_side.whole, r_side.whole);
        let (ml, rl) = (mw.len_ns(), rw.len_ns());
        // One width for both sides: the one the longer window needs.
        let bin = timeline_bin_ns(ml.max(rl), 1_000_000);
        let ((m_breakdown, m_busy), (r_breakdown, r_busy)) = rayon::join(
            || side(graph, &m_side.order, mw, bin),
            || side(graph, &r_side.order, rw, bin),
        );
        let steps = graph
            .steps
            .iter()
            .zip(m_side.steps.iter().zip(&r_side.steps))
            .map(|(s, (m, r))| {
                let (m, r) = (m.len_ns(), r.len_ns());
                StepReplay {
                    name: s.name.clone(),
                    measured_us: us(m),
                    replayed_us: us(r),
                    error_pct: err_pct(m, r),
                }
            })
            .collect();
        Compared {
            steps,
            window: Compare {
                measured_us: us(ml),
                replayed_us: us(rl),
                error_pct: err_pct(ml, rl),
            },
            breakdown: BreakdownPair {
                measured: m_breakdown.into(),
                replayed: r_breakdown.into(),
            },
            gpu_busy_timeline: TimelinePair {
                bin_us: us(bin),
                measured: m_busy,
                replayed: r_busy,
            },
        }
    }

    /// The report of the trace `info` describes, with its critical path
    /// and analyses.
    pub(crate) fn report(
        self,
        info: TraceInfo,
        graph: &Graph,
        critical_path: Option<CriticalPath>,
        analysis: TraceAnalysis,
    ) -> TraceReplay {
        TraceReplay {
            path: info.path,
            rank: info.rank,
            warnings: info.warnings,
            flagged: info.flagged,
            tasks: graph.tasks.len(),
            steps: self.steps,
            window: self.window,
            breakdown: self.breakdown,
            gpu_busy_timeline: self.gpu_busy_timeline,
            critical_path,
            analysis,
        }
    }
}

/// The report of a critical-path summary; task names come from `graph`.
pub fn critical_path_report(graph: &Graph, s: &CriticalPathSummary) -> CriticalPath {
    CriticalPath {
        hops: s.hops,
        by_bound: s
            .by_bound
            .iter()
            .map(|b| BoundShare {
                bound: b.kind.as_str().to_owned(),
                hops: b.hops,
                wait_us: us(b.wait_ns),
                busy_us: us(b.busy_ns),
            })
            .collect(),
        top_tasks: s
            .top_tasks
            .iter()
            .map(|&(t, ns)| PathTask {
                name: graph.name(t).to_owned(),
                us: us(ns),
            })
            .collect(),
    }
}

/// The errors over `traces`: unflagged traces' steps (or whole window,
/// for a trace without steps) in the mean and maximum, flagged traces'
/// apart; spans measured at zero length have no error and are left out.
pub fn summarize(traces: &[TraceReplay]) -> Summary {
    let errs = |flag: bool| -> Vec<f64> {
        traces
            .iter()
            .filter(|t| t.flagged == flag)
            .flat_map(|t| {
                if t.steps.is_empty() {
                    vec![t.window.error_pct]
                } else {
                    t.steps.iter().map(|s| s.error_pct).collect()
                }
            })
            // A span measured at zero length (a trace whose times are all
            // zero) has no relative error: it is left out, not counted as
            // an agreement.
            .flatten()
            .map(f64::abs)
            .collect()
    };
    let ok = errs(false);
    let bad = errs(true);
    // Not `sum()`: the sum of no floats is -0.0.
    let mean = |v: &[f64]| v.iter().fold(0.0, |a, b| a + b) / v.len().max(1) as f64;
    Summary {
        mean_abs_error_pct: (!ok.is_empty()).then(|| mean(&ok)),
        max_abs_error_pct: (!ok.is_empty()).then(|| ok.iter().copied().fold(0.0, f64::max)),
        steps: ok.len(),
        flagged_mean_abs_error_pct: (!bad.is_empty()).then(|| mean(&bad)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StepSelection;

    /// The measured half found beside the simulation is the one a report
    /// would find after it, and only a report under the same options
    /// takes it.
    #[test]
    fn the_measured_half_found_ahead_is_the_one_found_after() {
        let Some(corpus) = lumos_testkit::corpus() else {
            return;
        };
        // Steps and a memory timeline: every part of the measured half.
        let path = corpus.path("single-rank/v100-resnet50-2021-capture-a.json.gz");
        let sim = (&SimOptions::default(), &[][..]);
        let later: AnalysisOptions = AnalysisOptions {
            steps: "1..".parse::<StepSelection>().unwrap(),
            ..AnalysisOptions::default()
        };
        let json = |r: &TraceReplay| serde_json::to_value(r).unwrap();
        for (asked, report) in [
            (AnalysisOptions::default(), AnalysisOptions::default()),
            (later.clone(), later.clone()),
            (AnalysisOptions::default(), later),
        ] {
            let replayed = replay_path_for(&path, sim, &asked, &|_| {}).unwrap();
            let ahead = |r: &Replayed| r.ahead.lock().unwrap().is_some();
            assert!(ahead(&replayed));
            let first = replayed.report_with(&report).unwrap();
            assert_eq!(ahead(&replayed), asked != report, "taken only if asked");
            assert!(first.analysis.memory.is_some());
            let again = replayed.report_with(&report).unwrap();
            assert_eq!(json(&first), json(&again));
        }
    }

    /// A step without an error (measured at zero length) is left out of
    /// the summary, neither averaged as 0% nor turned into a NaN mean; the
    /// count says how many steps the mean covers.
    #[test]
    fn a_step_without_an_error_is_left_out_of_the_summary() {
        let Some(corpus) = lumos_testkit::corpus() else {
            return;
        };
        let path = corpus.path("single-rank/mi250-toy-train.json.gz");
        let sim = (&SimOptions::default(), &[][..]);
        let opts = AnalysisOptions::default();
        let mut r = replay_path_for(&path, sim, &opts, &|_| {})
            .unwrap()
            .report_with(&opts)
            .unwrap();
        assert_eq!(r.steps.len(), 2);
        // The second step off by 30%, the first as replayed; then the
        // first has no error.
        r.steps[1].error_pct = Some(-30.0);
        let both = summarize(std::slice::from_ref(&r));
        assert_eq!((both.steps, both.max_abs_error_pct), (2, Some(30.0)));
        r.steps[0].error_pct = None;
        let one = summarize(std::slice::from_ref(&r));
        assert_eq!(one.steps, 1);
        assert_eq!(one.mean_abs_error_pct, Some(30.0));
        assert_eq!(one.max_abs_error_pct, Some(30.0));
        r.steps[1].error_pct = None;
        let none = summarize(std::slice::from_ref(&r));
        assert_eq!((none.steps, none.mean_abs_error_pct), (0, None));
        assert_eq!(none.max_abs_error_pct, None);
    }
}
