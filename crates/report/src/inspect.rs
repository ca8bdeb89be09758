//! What the reader and the graph builder found in each file (`lumos
//! inspect`), and what structure discovery made of it.

use std::collections::BTreeMap;

use lumos_graph::{
    build, build_owned, build_streamed, BuildReport, Graph, Measured, RankInput, TrackSink,
};
use lumos_store::{Prepared, StoredRank, TraceFacts};
use lumos_trace::{Trace, TraceMeta};
use serde::Serialize;

use crate::job::JobReport;
use crate::structure::StructureReport;
use crate::units::us;

/// `lumos inspect --json`: one report per file read, and the job's when
/// the files are the ranks of one job.
#[derive(Debug, Clone, Serialize)]
pub struct InspectOutput {
    /// Per file, in input order.
    pub traces: Vec<FileReport>,
    /// The job: identities, matching and clocks ([`job_report`](crate::job_report)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<JobReport>,
}

/// One file's inspection: what the reader kept and skipped, what the
/// builder made of it, and what discovery found.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// The file, as given.
    pub path: String,
    /// Its rank.
    pub rank: u32,
    /// How the rank was found: `distributedInfo`, `file_name` or
    /// `default`.
    pub rank_source: &'static str,
    /// `distributedInfo.world_size`, if recorded.
    pub world_size: Option<u32>,
    /// Size of the JSON text (uncompressed).
    pub json_bytes: u64,
    /// Whether the file was gzipped.
    pub gzipped: bool,
    /// Events read, kept and skipped.
    pub events: EventCounts,
    /// Tasks per kind.
    pub tasks_by_kind: BTreeMap<&'static str, u64>,
    /// Edges per dependency kind.
    pub edges_by_kind: BTreeMap<&'static str, u64>,
    /// Edges found per kind and rule; `recorded` is true when read from
    /// `cuda_sync` events rather than inferred.
    pub inferred: Vec<InferredCount>,
    /// CPU threads with tasks.
    pub threads: u64,
    /// GPU streams with tasks.
    pub streams: u64,
    /// The devices the trace lists, as `id: name`.
    pub devices: Vec<String>,
    /// Each `ProfilerStep#N`.
    pub steps: Vec<StepReport>,
    /// How communication tasks were recognized.
    pub collectives: CollectiveCounts,
    /// Median launch latency where the launch held the kernel.
    pub typical_launch_latency_us: f64,
    /// Kernel launch, graph launch and copy calls whose GPU task is missing
    /// ([`BuildReport::launches_without_gpu_task`]: not memsets, not those
    /// at the window's end); the build warns past 2, or 1% of the launch
    /// calls.
    pub launches_without_gpu_task: u64,
    /// Stream waits satisfied at once, with no edge and no warning
    /// ([`BuildReport::idle_stream_waits`]): the `cuda_sync` evidence shows
    /// the waiting stream runs no GPU task after the call, or the event's
    /// stream ran none before its record (one-rank DDP's NCCL stream).
    pub idle_stream_waits: u64,
    /// Synchronizing calls that returned before the GPU work they waited
    /// for ended, by [`lumos_graph::GROSS_SYNC_LEAD_NS`] (5 ms) or more
    /// ([`BuildReport::syncs_returned_early`]): the GPU clock is ahead of
    /// the host's, and the trace is flagged.
    pub syncs_returned_early: u64,
    /// The longest time by which the GPU work a synchronizing call waited
    /// for ended after the call returned, over all of them (0 when none
    /// did; microseconds at most in a measured run).
    pub longest_sync_lead_us: f64,
    /// The reader's and the builder's warnings.
    pub warnings: Vec<String>,
    /// What structure discovery found (lumos-predict).
    pub structure: StructureReport,
}

/// What the reader did with the file's events.
#[derive(Debug, Clone, Serialize)]
pub struct EventCounts {
    /// Events in the file.
    pub total: u64,
    /// Complete events kept: read, and on a thread or stream the build
    /// keeps.
    pub kept: u64,
    /// Flow events kept.
    pub flows: u64,
    /// Events skipped, all reasons (those left out with their threads or
    /// streams among them).
    pub skipped: u64,
    /// Skipped events per category and reason.
    pub skipped_by_reason: Vec<SkipCount>,
    /// Kept events that end absurdly far past the rest of the trace
    /// ([`Trace::absurd_durations`]), kept as written; the reader warns
    /// about any.
    pub absurd_durations: u64,
}

/// Events skipped for one reason.
#[derive(Debug, Clone, Serialize)]
pub struct SkipCount {
    /// The events' `cat`.
    pub category: String,
    /// Why they were skipped.
    pub reason: &'static str,
    /// How many.
    pub count: u64,
}

/// Edges found by one rule.
#[derive(Debug, Clone, Serialize)]
pub struct InferredCount {
    /// The dependency kind.
    pub kind: &'static str,
    /// The rule.
    pub rule: &'static str,
    /// True when read from `cuda_sync` events rather than inferred.
    pub recorded: bool,
    /// How many edges.
    pub count: u64,
}

/// One measured step.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// The annotation's name (`ProfilerStep#N`).
    pub name: String,
    /// The annotation's own length.
    pub annotation_us: f64,
    /// Annotation start to the end of the last GPU task launched in it.
    pub measured_us: f64,
}

/// Communication tasks and how they were recognized.
#[derive(Debug, Clone, Serialize)]
pub struct CollectiveCounts {
    /// Communication tasks.
    pub tasks: u64,
    /// Recognized by a `Collective name` argument.
    pub by_collective_name_arg: u64,
    /// Recognized by their kernel's name.
    pub by_kernel_name: u64,
    /// Tasks per collective name.
    pub by_name: BTreeMap<String, u64>,
}

/// Builds the graph of `trace` and reports on the file, the graph and its
/// structure.
pub fn inspect(trace: &Trace) -> FileReport {
    let (graph, measured, report) = build(trace);
    file_report(trace, &graph, &measured, &report)
}

/// [`inspect`], taking the trace: its events are freed as the graph is
/// built ([`build_owned`]), so that the trace and the graph are not in
/// memory together. The graph, its measured times and the builder's
/// report come back with the file's report, for the caller to free when
/// it likes (`lumos inspect` frees them on a background thread).
pub fn inspect_owned(trace: Trace) -> (FileReport, (Graph, Measured, BuildReport)) {
    let facts = TraceFacts::of(&trace);
    let (graph, measured, report) = build_owned(trace);
    let file = file_report_of(&facts, &graph, &measured, &report);
    (file, (graph, measured, report))
}

/// [`inspect`] of the trace file at `path`, read and built in one go: the
/// graph build's first pass is done as the file is read
/// ([`lumos_graph::build_streamed`]), so the trace's events are never all
/// in memory. `progress` gets the uncompressed bytes read so far after
/// each chunk. The graph, its measured times and the builder's report
/// come back with the file's report, as from [`inspect_owned`], for the
/// caller to free when it likes.
pub fn inspect_path(
    path: &std::path::Path,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(FileReport, (Graph, Measured, BuildReport)), crate::ReportError> {
    let mut sink = TrackSink::new();
    let trace = lumos_trace::read_path_into(path, progress, &mut sink)?;
    let mut facts = TraceFacts::of(&trace);
    // The events and launch flows the sink took were kept by the reader
    // as much as those the trace holds.
    facts.events_kept += sink.events_taken();
    facts.flows += sink.launch_flows_taken();
    let (graph, measured, report) = build_streamed(trace, sink);
    let file = file_report_of(&facts, &graph, &measured, &report);
    Ok((file, (graph, measured, report)))
}

/// The report on one input of several ([`lumos_store::prepare`]): a
/// trace's from the rank built of it (`lent`, when [`lumos_store::sort`]
/// gave the ranks to a job; else the rank in place), a compact file's from
/// what it stored ([`inspect_stored`]).
///
/// # Panics
///
/// When a trace's rank is neither lent nor in place (`sort` gives back
/// every rank it does not give to a job).
pub fn inspect_prepared(input: &Prepared, lent: Option<&RankInput>) -> FileReport {
    match input {
        Prepared::Built(b) => {
            let rank = lent
                .or(b.rank.as_ref())
                .expect("a trace's rank is lent to the job or in place");
            let g = &rank.graph;
            file_report_of(&b.facts, &g.graph, &g.measured, &rank.report)
        }
        Prepared::Stored(s) => inspect_stored(s),
    }
}

/// The report on a trace ingested into a compact file: the same as
/// [`inspect`] on the trace.
pub fn inspect_stored(s: &StoredRank) -> FileReport {
    file_report_of(&s.facts, &s.graph.graph, &s.graph.measured, &s.report)
}

/// What the reader kept of the trace's events, less what the build left
/// out with threads and streams past the ones it keeps (counted as
/// skipped, under their own reasons).
fn event_counts(trace: &TraceFacts, report: &BuildReport) -> EventCounts {
    let mut skipped_by_reason: Vec<SkipCount> = (trace.skipped.iter())
        .map(|((c, r), n)| SkipCount {
            category: c.clone(),
            reason: r.as_str(),
            count: *n,
        })
        .collect();
    let left_out = [
        (
            report.events_on_left_out_threads,
            "on a thread past the 65,536 a build keeps",
        ),
        (
            report.events_on_left_out_streams,
            "on a stream past the 65,536 a build keeps",
        ),
    ];
    for (count, reason) in left_out.into_iter().filter(|l| l.0 > 0) {
        skipped_by_reason.push(SkipCount {
            category: "(any)".to_owned(),
            reason,
            count,
        });
    }
    // Saturating: a hand-made `.lgraph` file may hold any counts.
    let left_out =
        (report.events_on_left_out_threads).saturating_add(report.events_on_left_out_streams);
    EventCounts {
        total: trace.events_total,
        kept: trace.events_kept.saturating_sub(left_out),
        flows: trace.flows,
        skipped: trace.skipped_total().saturating_add(left_out),
        skipped_by_reason,
        absurd_durations: trace.absurd_durations,
    }
}

/// The report on `trace`, whose graph `build` gave as `graph`, `measured`
/// and `report`.
pub fn file_report(
    trace: &Trace,
    graph: &Graph,
    measured: &Measured,
    report: &BuildReport,
) -> FileReport {
    file_report_of(&TraceFacts::of(trace), graph, measured, report)
}

/// [`file_report`] from what the trace said about itself ([`TraceFacts`]).
pub fn file_report_of(
    trace: &TraceFacts,
    graph: &Graph,
    measured: &Measured,
    report: &BuildReport,
) -> FileReport {
    let spans = lumos_sim::step_spans(graph, &measured.tasks, Some(&measured.step_annotations));
    let steps = graph
        .steps
        .iter()
        .zip(&measured.step_annotations)
        .zip(&spans)
        .map(|((s, a), sp)| StepReport {
            name: s.name.clone(),
            annotation_us: us(a.end_ns - a.start_ns),
            measured_us: us(sp.end_ns - sp.start_ns),
        })
        .collect();
    // Counted by reference: a large trace's collectives repeat a few names.
    let mut by_ref: BTreeMap<&str, u64> = BTreeMap::new();
    for c in &graph.collectives {
        *by_ref.entry(c.name.as_str()).or_insert(0) += 1;
    }
    let by_name = (by_ref.into_iter())
        .map(|(n, count)| (n.to_owned(), count))
        .collect();
    let mut warnings = trace.warnings.clone();
    warnings.extend(report.warnings.iter().cloned());
    FileReport {
        path: trace.path.display().to_string(),
        rank: trace.meta.rank,
        rank_source: trace.meta.rank_source.as_str(),
        world_size: trace.meta.world_size,
        json_bytes: trace.json_bytes,
        gzipped: trace.gzipped,
        events: event_counts(trace, report),
        tasks_by_kind: report
            .tasks_by_kind
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect(),
        edges_by_kind: report
            .edges_by_kind
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect(),
        inferred: report
            .inferred
            .iter()
            .map(|((k, r), n)| InferredCount {
                kind: k.as_str(),
                rule: r.as_str(),
                recorded: r.is_recorded(),
                count: *n,
            })
            .collect(),
        threads: report.threads,
        streams: report.streams,
        devices: trace
            .meta
            .devices
            .iter()
            .map(|d| format!("{}: {}", d.id, d.name))
            .collect(),
        steps,
        collectives: CollectiveCounts {
            tasks: graph.collectives.len() as u64,
            by_collective_name_arg: report.comm_by_args,
            by_kernel_name: report.comm_by_name,
            by_name,
        },
        typical_launch_latency_us: us(report.typical_launch_latency_ns),
        launches_without_gpu_task: report.launches_without_gpu_task,
        idle_stream_waits: report.idle_stream_waits,
        syncs_returned_early: report.syncs_returned_early,
        longest_sync_lead_us: us(report.longest_sync_lead_ns),
        warnings,
        structure: structure_report_of(&trace.meta, graph, measured),
    }
}

/// What structure discovery finds in one trace's graph.
pub fn structure_report(trace: &Trace, graph: &Graph, measured: &Measured) -> StructureReport {
    structure_report_of(&trace.meta, graph, measured)
}

/// [`structure_report`] from the trace's metadata alone.
pub fn structure_report_of(
    meta: &TraceMeta,
    graph: &Graph,
    measured: &Measured,
) -> StructureReport {
    let ctx = lumos_predict::TraceContext::from_meta(meta, measured);
    StructureReport::from(&lumos_predict::discover(graph, measured, &ctx).report)
}
