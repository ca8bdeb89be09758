//! Building the graph from a trace: tasks, then dependencies (found or
//! inferred), then latencies.
//!
//! Latencies come from *gap attribution*: for each task, the constraint whose
//! measured ready time is latest is the one that held it (its binding
//! dependency); that edge gets the full measured gap, every other incoming
//! edge gets `min(typical latency of its kind, its own measured slack)`. So a
//! replay with unchanged durations reproduces the measured schedule, while a
//! change to any duration moves every start that depends on it.
//!
//! The steps, in the order `Builder::run` takes them: `tasks` (CPU leaves,
//! GPU tasks, launches, collectives), `streams` (inter-stream edges),
//! `syncs` (GPU-to-CPU waits), `threads` (inter-thread hand-offs), then
//! `finish` (processor order, cycle removal, latencies, releases, steps).

use lumos_trace::{Category, Event, Ident, Trace};
use rustc_hash::FxHashMap;

use crate::acyclic::{rejected_groups, ungroup, GraphNet, Optional, StreamTails, PHASE_DEPS};
use crate::model::*;
use crate::report::{BuildReport, Rule};
use index::{merge_nested, partition_from, sorted_distinct, ByCorr, CorrIndex, Launched, PerName};
pub use streamed::TrackSink;
pub use tasks::MAX_TRACKS;

mod finish;
mod frameworks;
mod implied;
mod index;
mod per_track;
mod streamed;
mod streams;
mod syncs;
mod tasks;
mod threads;

/// A CPU gap at least this long may be a wait for another thread.
const INTER_THREAD_MIN_GAP_NS: i64 = 100_000;
/// How soon after another thread's task ends a waiting task must start: at
/// least this, and more for long gaps (see `wake_window`).
const INTER_THREAD_WINDOW_NS: i64 = 50_000;
/// The most a wake-up after a long wait may take.
const INTER_THREAD_MAX_WINDOW_NS: i64 = 1_000_000;
/// A runtime call at least this long that ends soon after a GPU task ends
/// is taken to have blocked on it (method.md section 8).
const BLOCKING_MIN_DUR_NS: i64 = 100_000;
/// How soon after the awaited GPU task ends a blocked call returns.
const BLOCKING_WINDOW_NS: i64 = 50_000;
/// A launch call at least this long that returns this soon after a task of
/// its stream ends, with at least `QUEUED_LAUNCH_MIN_PENDING` tasks
/// launched onto that stream before it still waiting to start, waited for
/// a slot in the stream's full launch queue (shorter waits than a
/// `BLOCKING_MIN_DUR_NS` call's: each lasts one kernel).
const QUEUED_LAUNCH_MIN_DUR_NS: i64 = 10_000;
/// See `QUEUED_LAUNCH_MIN_DUR_NS`.
const QUEUED_LAUNCH_WINDOW_NS: i64 = 10_000;
/// See `QUEUED_LAUNCH_MIN_DUR_NS`: a queued launch also lasts this many
/// times the usual call of its name (the first quartile of their
/// durations), so that launches of the usual length
/// that happen to return as a kernel ends (every few microseconds on a
/// busy stream) are not taken for blocked.
const QUEUED_LAUNCH_TYPICAL_TIMES: i64 = 3;
/// See `QUEUED_LAUNCH_MIN_DUR_NS`: a quarter of CUDA's usual queue of
/// about 1,024 launches per stream, far deeper than a CPU that keeps up
/// with its GPU holds.
const QUEUED_LAUNCH_MIN_PENDING: usize = 256;
/// A GPU task that starts this much later than its launch and stream allow
/// was held by something else (observed-wait inference).
const OBSERVED_WAIT_MIN_NS: i64 = 5_000;
/// Slack for clock rounding when checking an inferred edge against the
/// measured times.
const TIME_TOLERANCE_NS: i64 = 1_000;
/// The fewest items a core takes in the build's parallel passes over every
/// task or edge (and the build report's counts): smaller builds (a job's
/// many ranks) stay on one thread, where handing work out would cost more
/// than it saves.
pub(crate) const PAR_MIN: usize = 1 << 14;
/// A CPU-side window this long without any CPU event suggests dropped events.
pub(crate) const CPU_HOLE_NS: i64 = 40_000_000;

/// Builds the execution graph of one trace, with its ground truth and a
/// report of what was found and inferred. Differences of trace times
/// saturate: a trace spanning more than an `i64` of ns (292 years) gets
/// times as late as can be, never wrapped ones.
pub fn build(trace: &Trace) -> (Graph, Measured, BuildReport) {
    let mut b = Builder::new(trace.strings.clone());
    let tracks = b.tracks_borrowed(&trace.events);
    let annotations = b.tasks(tracks);
    b.run(annotations)
}

/// [`build`], taking the trace: the graph is the same, but the trace's
/// events are freed as they are turned into compact per-track records
/// (40 or 48 bytes where an event is 96), before any task is made, so that
/// the events and the graph are never in memory together (on a
/// synthesized 1 GB rank the events are 0.4 GB, the graph and its
/// builder's indexes 0.6 GB). Its names move into the graph; flows,
/// track names, `[memory]` events and the rest are freed before the build
/// begins, so a caller that needs any of them (a timeline's
/// [`crate::TraceAbout`], a report's memory timeline) takes them out first
/// ([`crate::RankMeta::of`], `std::mem::take(&mut trace.memory)`).
pub fn build_owned(mut trace: Trace) -> (Graph, Measured, BuildReport) {
    let events = std::mem::take(&mut trace.events);
    let mut b = Builder::new(std::mem::take(&mut trace.strings));
    // Nothing else of the trace is read.
    drop(trace);
    let tracks = b.tracks_owned(events);
    let annotations = b.tasks(tracks);
    b.run(annotations)
}

/// [`build_owned`] of a trace read with `sink`
/// ([`lumos_trace::read_path_into`]), which filed its events as they were
/// read: the same graph, measured times and report, without the trace's
/// events ever being in memory together. `trace` holds the events the sink
/// gave back, which no step reads; as in [`build_owned`], a caller that
/// needs anything else of it takes it out first.
pub fn build_streamed(mut trace: Trace, sink: TrackSink) -> (Graph, Measured, BuildReport) {
    // The strings are complete only now that the file is read: the sink
    // read the names it needed as each event came.
    let mut b = Builder::new(std::mem::take(&mut trace.strings));
    drop(trace);
    // The records came in file order: none to reverse.
    let tracks = b.tracks_done(sink.into_sorter(), false);
    let annotations = b.tasks(tracks);
    b.run(annotations)
}

/// A hint to the CPU to load `x`'s cache line; nothing where no hint is
/// known.
#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of x86-64, so the instruction is always
        // there; a prefetch reads nothing the program sees.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(x).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// What one task is while building: its measured span (absolute trace ns).
/// Read for every task by most steps, so it holds nothing else.
#[derive(Clone, Copy)]
struct Raw {
    start: i64,
    end: i64,
}

/// What `inter_stream` and `syncs` read of a `cuda_sync` event, taken in
/// the one pass over the events (`tracks_borrowed` / `tracks_owned`, or
/// [`TrackSink`] during the read), where the event is at hand: an owned
/// build frees the events in that pass.
#[derive(Clone, Copy)]
struct SyncRecord {
    correlation: Option<u64>,
    stream: Option<i64>,
    /// The event's device, else its pid as a number.
    device: i64,
    /// Whether it is a "Stream Wait Event".
    stream_wait: bool,
    /// The stream and the record call's correlation it waited on, where
    /// both were recorded.
    waits_on: Option<(i64, i64)>,
}

/// A `ProfilerStep#N` annotation on a CPU thread: what `steps` reads of
/// its event's record, taken while `track_tasks` has the thread's records
/// (they are freed thread by thread).
#[derive(Clone, Copy)]
struct StepAnnotation {
    name: NameId,
    proc: ProcId,
    start: i64,
    end: i64,
}

struct Builder {
    g: Graph,
    raw: Vec<Raw>,
    report: BuildReport,
    streams: FxHashMap<(i64, i64), ProcId>,
    /// Runtime call by correlation.
    call_by_corr: CorrIndex,
    /// GPU tasks each runtime call launched.
    launched: Launched,
    /// The launching call of each GPU task.
    launcher: Vec<Option<TaskId>>,
    /// Launch time of each stream's tasks, by processor (`launches`).
    launch_times: Vec<Vec<i64>>,
    /// Position of each task in its processor's list.
    pos: Vec<u32>,
    /// Pid of each CPU thread processor.
    thread_pid: FxHashMap<ProcId, Ident>,
    /// Measured span of each scope (absolute trace ns).
    scope_spans: Vec<Span>,
    /// Tasks that stand for a whole `cudaEventQuery` polling loop.
    polls: rustc_hash::FxHashSet<TaskId>,
    /// Runtime deps per blocking task, with the measured awaited task.
    blocking: FxHashMap<TaskId, TaskId>,
    /// What the steps read of each `cuda_sync` event, in file order.
    sync_events: Vec<SyncRecord>,
    /// The CPU ops with collective arguments and an `External id`: the
    /// id and the arguments, in file order (few: one per collective call).
    collective_ops: Vec<(u64, lumos_trace::CollectiveArgs)>,
}

impl Builder {
    /// A builder for a trace whose interned strings are `names`.
    fn new(names: Vec<String>) -> Self {
        Builder {
            g: Graph {
                names,
                ..Graph::default()
            },
            raw: Vec::new(),
            report: BuildReport::default(),
            streams: FxHashMap::default(),
            call_by_corr: CorrIndex::default(),
            launched: Launched::default(),
            launcher: Vec::new(),
            launch_times: Vec::new(),
            pos: Vec::new(),
            thread_pid: FxHashMap::default(),
            blocking: FxHashMap::default(),
            scope_spans: Vec::new(),
            polls: Default::default(),
            sync_events: Vec::new(),
            collective_ops: Vec::new(),
        }
    }

    /// The steps that read the events' records (`tracks_borrowed` or
    /// `tracks_owned` made them): tasks, launches and collectives. Returns
    /// the step annotations, for `run`; nothing after this reads an event.
    /// Each step it calls, and each `run` calls, is kept out of line
    /// (`#[inline(never)]`): they run once per build, and profiles
    /// (callgrind, perf) then name them.
    fn tasks<X: tasks::ExtraRef + Send + Sync>(
        &mut self,
        tracks: tasks::Tracks<X>,
    ) -> Vec<StepAnnotation> {
        let annotations = self.track_tasks(tracks);
        // No heap trim here: what the fills freed on the other core is
        // what the later steps and the simulation allocate there, and a
        // trim made them fault it back in (one core trimming for about
        // 50 ms on a 1 GB rank, 11% more page faults) while the peak,
        // which the read sets, moved by a few MB only.
        self.streams = self.streams_lookup();
        self.launches();
        annotations
    }

    /// The steps after [`Builder::tasks`], on the tasks alone.
    fn run(mut self, annotations: Vec<StepAnnotation>) -> (Graph, Measured, BuildReport) {
        self.inter_stream();
        self.syncs();
        self.inter_thread();
        self.free_linking_indexes();
        self.order_edges();
        let origin = self.raw.iter().map(|r| r.start).min().unwrap_or(0);
        // The tasks and processors are final: what is read of them alone
        // is found on the other core while the cycle search reads the edges.
        let this = &self;
        let (rejected, mut facts) = rayon::join(
            || this.cycle_rejections(),
            || this.task_facts(&annotations, origin),
        );
        self.break_cycles(rejected);
        self.attribute_latencies();
        self.g.steps.append(&mut facts.steps);
        self.report.warnings.append(&mut facts.step_warnings);
        self.releases(origin);
        self.report.fill_counts(&self.g);
        self.report.mark_inferred(&mut self.g);
        self.checks(&facts);
        let steps = facts.spans;
        // Reserved for every event that could have become a task.
        self.g.tasks.shrink_to_fit();
        self.g.task_scopes.shrink_to_fit();
        let rel = |start: i64, end: i64| Span {
            start_ns: start.saturating_sub(origin),
            end_ns: end.saturating_sub(origin),
        };
        let measured = Measured {
            origin_ns: origin,
            // In place (a `Raw` and a `Span` are the same size): a second
            // array of every task's span would be the build's peak.
            tasks: std::mem::take(&mut self.raw)
                .into_iter()
                .map(|r| rel(r.start, r.end))
                .collect(),
            step_annotations: steps,
            scopes: self
                .scope_spans
                .iter()
                .map(|s| rel(s.start_ns, s.end_ns))
                .collect(),
        };
        (self.g, measured, self.report)
    }

    fn processor(&mut self, kind: ProcKind) -> ProcId {
        let id = ProcId(self.g.processors.len() as u32);
        self.g.processors.push(Processor {
            kind,
            tasks: Vec::new(),
        });
        id
    }

    fn edge(&mut self, from: TaskId, to: TaskId, kind: DepKind, anchor: Anchor) {
        self.g.edges.push(new_edge(from, to, kind, anchor));
    }

    /// An end-anchored edge that had to be found, recorded with its rule.
    fn found_edge(&mut self, from: TaskId, to: TaskId, kind: DepKind, rule: Rule) {
        self.edge(from, to, kind, Anchor::End);
        self.report.record_edge(self.g.edges.len() - 1, kind, rule);
    }
}

/// A dependency as a step finds it: no latency yet (`attribute_latencies`
/// gives it one), read from the trace rather than inferred.
fn new_edge(from: TaskId, to: TaskId, kind: DepKind, anchor: Anchor) -> Edge {
    Edge {
        from,
        to,
        kind,
        anchor,
        latency_ns: 0,
        inferred: false,
    }
}

/// Consecutive event queries on a thread, under one parent, that make a
/// host loop waiting for the GPU.
const POLL_MIN_RUN: usize = 8;

/// The longest gap between two queries of one polling loop. A loop spinning
/// on a query calls it again within microseconds (19 us at most in the
/// corpus); a thread that sleeps between queries (PyTorch's NCCL watchdog,
/// bursts 100 ms apart) is not waiting for the GPU in a loop.
const POLL_MAX_GAP_NS: i64 = 1_000_000;

/// Finds polling loops among a thread's leaves (`idx` in call-tree order):
/// runs of at least [`POLL_MIN_RUN`] consecutive `cudaEventQuery` calls under
/// one parent, each starting at most [`POLL_MAX_GAP_NS`] after the one
/// before it ends. Kept call by call, such a loop is thousands of fixed-length
/// tasks that cannot end sooner when the GPU does (method.md section 3.1);
/// it becomes one task, its first call stretched to the last call's end,
/// which the sync inference then ties to the GPU work it waited for.
/// Returns each run's first call with the run's end, in call-tree order
/// (runs are few: not a slot per call), and which calls it absorbed.
fn polling_runs<X>(
    records: &[tasks::CpuRecord<X>],
    names: &[String],
    idx: &[u32],
    has_child: &[bool],
    parent: &[u32],
) -> (Vec<(usize, i64)>, Vec<bool>) {
    let mut end = Vec::new();
    let mut absorbed = vec![false; idx.len()];
    let is_query = |k: usize| {
        let e = &records[idx[k] as usize];
        e.category.is_runtime()
            && matches!(
                names[e.name as usize].as_str(),
                "cudaEventQuery" | "hipEventQuery"
            )
    };
    let leaves: Vec<usize> = (0..idx.len()).filter(|&k| !has_child[k]).collect();
    let mut a = 0;
    while a < leaves.len() {
        let mut b = a;
        while b < leaves.len()
            && is_query(leaves[b])
            && parent[leaves[b]] == parent[leaves[a]]
            && (b == a || {
                let (prev, next) = (
                    &records[idx[leaves[b - 1]] as usize],
                    &records[idx[leaves[b]] as usize],
                );
                next.ts.saturating_sub(prev.end()) <= POLL_MAX_GAP_NS
            })
        {
            b += 1;
        }
        if b - a >= POLL_MIN_RUN {
            let last = &records[idx[leaves[b - 1]] as usize];
            end.push((leaves[a], last.end()));
            for &k in &leaves[a + 1..b] {
                absorbed[k] = true;
            }
        }
        a = b.max(a + 1);
    }
    (end, absorbed)
}

/// A thread that slept long takes longer to wake (queue hand-off, thread
/// wake-up, allocator work before its first profiled op): allow 2% of the
/// gap, between 50 us and 1 ms.
fn wake_window(gap_ns: i64) -> i64 {
    (gap_ns / 50).clamp(INTER_THREAD_WINDOW_NS, INTER_THREAD_MAX_WINDOW_NS)
}

fn median(mut v: Vec<i64>) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let k = v.len() / 2;
    *v.select_nth_unstable(k).1
}

pub(crate) fn ident_num(i: Ident) -> i64 {
    match i {
        Ident::Num(n) => n,
        // Non-numeric ids get a stable negative stand-in.
        Ident::Name(s) => -(s.0 as i64) - 1,
    }
}

pub(crate) fn stream_from_tid(t: &Trace, tid: Ident) -> Option<i64> {
    stream_of_tid(&t.strings, tid)
}

/// [`stream_from_tid`] with the trace's interned strings alone.
fn stream_of_tid(names: &[String], tid: Ident) -> Option<i64> {
    match tid {
        Ident::Num(n) => Some(n),
        Ident::Name(s) => names
            .get(s.0 as usize)?
            .strip_prefix("stream ")?
            .trim()
            .parse()
            .ok(),
    }
}

fn is_stream_wait(name: &str) -> bool {
    matches!(name, "cudaStreamWaitEvent" | "hipStreamWaitEvent")
}

fn is_event_record(name: &str) -> bool {
    name.starts_with("cudaEventRecord") || name.starts_with("hipEventRecord")
}

/// What a runtime call synchronizes, by its name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SyncKind {
    None,
    Stream,
    Device,
    Event,
    BlockingCopy,
}

/// What the runtime call named `name` synchronizes.
pub(crate) fn sync_kind(name: &str) -> SyncKind {
    match name {
        "cudaStreamSynchronize" | "hipStreamSynchronize" | "cuStreamSynchronize" => {
            SyncKind::Stream
        }
        "cudaDeviceSynchronize" | "hipDeviceSynchronize" | "cuCtxSynchronize" => SyncKind::Device,
        "cudaEventSynchronize" | "hipEventSynchronize" | "cuEventSynchronize" => SyncKind::Event,
        "cudaMemcpy" | "hipMemcpy" | "cudaMemcpy2D" | "hipMemcpy2D" | "cudaMemset"
        | "hipMemset" => SyncKind::BlockingCopy,
        _ => SyncKind::None,
    }
}

/// Kernel names of collective libraries across versions.
pub(crate) fn is_comm_kernel_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("nccl")
        || lower.starts_with("rccl")
        || lower.contains("ncclkernel")
        || lower.contains("nccldevkernel")
        || lower.contains("cross_device_reduce")
        || lower.contains("all_reduce")
        || lower.contains("allreduce")
}

/// `ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)` -> `AllReduce`;
/// `void vllm::cross_device_reduce_1stage<...>(...)` ->
/// `vllm::cross_device_reduce_1stage`.
fn comm_family(name: &str) -> String {
    let cleaned = name
        .trim_start_matches("void ")
        .replace("(anonymous namespace)::", "");
    let base = cleaned.split(['(', '<']).next().unwrap_or(&cleaned).trim();
    let mut parts = base.split('_');
    let first = parts.next().unwrap_or("").to_ascii_lowercase();
    if first.starts_with("nccl") || first.starts_with("rccl") {
        if let Some(p) = parts.next() {
            return p.to_owned();
        }
    }
    base.to_owned()
}
