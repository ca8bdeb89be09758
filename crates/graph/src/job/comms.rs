//! One rank's graph with the communication details that cross-rank matching
//! needs: who takes part in each collective and in which order the rank
//! issued them.

use std::path::Path;

use lumos_trace::{Category, CollectiveArgs, Event, EventSink, Flow, StrId, Trace, TraceMeta};
use rustc_hash::FxHashMap;

use crate::build::{build, build_streamed, TrackSink};
use crate::model::{DepKind, Graph, Measured, TaskId};
use crate::report::BuildReport;

/// How a communication task involves its peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommPattern {
    /// Every rank of the group takes part (all-reduce, all-to-all,
    /// broadcast, ...).
    Group,
    /// Point-to-point send to this global rank.
    Send {
        /// The receiving rank.
        peer: i64,
    },
    /// Point-to-point receive from this global rank.
    Recv {
        /// The sending rank.
        peer: i64,
    },
}

/// One communication task of a rank, with what matching needs beyond its
/// [`Collective`](crate::Collective).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommTask {
    /// The task, in the rank's own graph.
    pub task: TaskId,
    /// Index into the rank graph's [`Graph::collectives`].
    pub collective: u32,
    /// Group collective or point-to-point.
    pub pattern: CommPattern,
    /// The global ranks of its process group, when the trace records them
    /// (`Process Group Ranks`, else `distributedInfo.pg_config` by name), as
    /// an index into [`RankGraph::groups`].
    pub group: Option<u32>,
    /// When the rank issued it, in ns since the rank's window start: the
    /// measured start of its launch call, or its own start when no launch
    /// was recorded. Program order, so the same on every rank of an SPMD job
    /// whatever the GPU timing; "order of appearance" means this order.
    pub issue_ns: i64,
}

/// One rank of a job: its graph, its ground truth, and its communication.
#[derive(Debug, Clone)]
pub struct RankGraph {
    /// The rank (`distributedInfo.rank`, or from the file name).
    pub rank: u32,
    /// Where it came from (the trace file), for messages.
    pub source: String,
    /// Add to [`Measured::origin_ns`] to get the rank's absolute clock:
    /// `baseTimeNanoseconds` when the trace has it (its times are relative
    /// to it), else 0.
    pub clock_base_ns: i64,
    /// The host it ran on, when the trace names it
    /// ([`TraceMeta::hostname`](lumos_trace::TraceMeta::hostname)): ranks
    /// on one host share one clock, so [`align_clocks`](super::align_clocks)
    /// gives them one offset.
    pub host: Option<String>,
    /// The rank's execution graph, as [`build`] makes it.
    pub graph: Graph,
    /// Its measured times.
    pub measured: Measured,
    /// Its communication tasks, in issue order.
    pub comms: Vec<CommTask>,
    /// Distinct process-group rank lists referenced by [`CommTask::group`].
    pub groups: Vec<Vec<i64>>,
}

impl RankGraph {
    /// The absolute measured end of a task on this rank's own clock.
    pub fn clock_end_ns(&self, t: TaskId) -> i64 {
        self.clock_origin_ns()
            .saturating_add(self.measured.tasks[t.idx()].end_ns)
    }

    /// The absolute measured start of a task on this rank's own clock.
    pub fn clock_start_ns(&self, t: TaskId) -> i64 {
        self.clock_origin_ns()
            .saturating_add(self.measured.tasks[t.idx()].start_ns)
    }

    /// The absolute start of the rank's window on its own clock. Clock
    /// arithmetic saturates: hostile base times give extreme times, never
    /// wrapped ones.
    pub fn clock_origin_ns(&self) -> i64 {
        self.clock_base_ns.saturating_add(self.measured.origin_ns)
    }
}

/// Builds one rank's graph ([`build`]) and collects its communication
/// tasks with their process groups, peers and issue order.
pub fn rank_graph(trace: &Trace) -> (RankGraph, BuildReport) {
    let (graph, measured, report) = build(trace);
    let mut events = CommEvents::default();
    for e in &trace.events {
        events.add(e);
    }
    let rank = rank_of(&trace.meta, &trace.path, &events, graph, measured);
    (rank, report)
}

/// [`rank_graph`] of a trace read with `sink`
/// ([`lumos_trace::read_path_into`]): the build's first pass, and what the
/// communication tasks read of the events, were taken as the file was read
/// ([`build_streamed`]), so the trace's events were never all in memory.
/// The same rank graph and report.
pub fn rank_graph_streamed(mut trace: Trace, sink: CommSink) -> (RankGraph, BuildReport) {
    let meta = std::mem::take(&mut trace.meta);
    let path = std::mem::take(&mut trace.path);
    let (graph, measured, report) = build_streamed(trace, sink.tracks);
    let rank = rank_of(&meta, &path, &sink.events, graph, measured);
    (rank, report)
}

/// The rank graph of a trace whose metadata is `meta`, read from `path`,
/// built as `graph` and `measured`; `events` is what the communication
/// tasks read of its events.
fn rank_of(
    meta: &TraceMeta,
    path: &Path,
    events: &CommEvents,
    graph: Graph,
    measured: Measured,
) -> RankGraph {
    let mut groups = Vec::new();
    let comms = comm_tasks(meta, events, &graph, &measured, &mut groups);
    RankGraph {
        rank: meta.rank,
        source: path.display().to_string(),
        clock_base_ns: meta.base_time_ns.unwrap_or(0),
        host: meta.hostname.clone(),
        graph,
        measured,
        comms,
        groups,
    }
}

/// A [`TrackSink`] that also keeps what [`rank_graph`] reads of the events
/// beyond the build (the communication tasks' arguments), for
/// [`rank_graph_streamed`]: a few words per GPU event, and the arguments
/// of the few events that carry collective ones.
#[derive(Debug, Default)]
pub struct CommSink {
    tracks: TrackSink,
    events: CommEvents,
}

impl CommSink {
    /// An empty sink, for one trace file.
    pub fn new() -> CommSink {
        CommSink::default()
    }

    /// The build's part ([`TrackSink`]), to count what it took.
    pub fn tracks(&self) -> &TrackSink {
        &self.tracks
    }
}

impl EventSink for CommSink {
    fn event(&mut self, event: Event, names: &[String]) -> Option<Event> {
        self.events.add(&event);
        self.tracks.event(event, names)
    }

    fn flow(&mut self, flow: Flow) -> Option<Flow> {
        self.tracks.flow(flow)
    }
}

/// What the communication tasks read of a GPU event: the one behind a
/// task is found by correlation, name and nearest start.
#[derive(Debug)]
struct GpuEvent {
    correlation: u64,
    name: StrId,
    ts_ns: i64,
    external_id: Option<u64>,
    collective: Option<Box<CollectiveArgs>>,
}

/// What the communication tasks read of a trace's events, in file order.
#[derive(Debug, Default)]
struct CommEvents {
    /// The CPU ops with an `External id` and collective arguments.
    ops: Vec<(u64, CollectiveArgs)>,
    /// The GPU events with a correlation id.
    gpu: Vec<GpuEvent>,
}

impl CommEvents {
    fn add(&mut self, e: &Event) {
        let collective = || e.extra.as_ref().and_then(|x| x.collective.as_ref());
        if e.category == Category::CpuOp {
            if let (Some(x), Some(c)) = (e.external_id(), collective()) {
                self.ops.push((x, (**c).clone()));
            }
        } else if e.category.is_gpu_work() {
            if let Some(correlation) = e.correlation() {
                self.gpu.push(GpuEvent {
                    correlation,
                    name: e.name,
                    ts_ns: e.ts_ns,
                    external_id: e.external_id(),
                    collective: collective().cloned(),
                });
            }
        }
    }
}

/// Point-to-point collective names as PyTorch records them.
fn p2p_direction(name: &str) -> Option<bool> {
    match name.to_ascii_lowercase().as_str() {
        "send" | "isend" => Some(true),
        "recv" | "irecv" => Some(false),
        _ => None,
    }
}

fn comm_tasks(
    meta: &TraceMeta,
    events: &CommEvents,
    graph: &Graph,
    measured: &Measured,
    groups: &mut Vec<Vec<i64>>,
) -> Vec<CommTask> {
    // The same sources of collective arguments as the graph builder uses:
    // the GPU event's own, else those of the CPU op it was launched under.
    let mut by_ext: FxHashMap<u64, &CollectiveArgs> = FxHashMap::default();
    for (x, c) in &events.ops {
        by_ext.entry(*x).or_insert(c);
    }
    let mut gpu_by_corr: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    for (i, e) in events.gpu.iter().enumerate() {
        gpu_by_corr.entry(e.correlation).or_default().push(i);
    }
    let mut launcher: FxHashMap<TaskId, TaskId> = FxHashMap::default();
    for e in &graph.edges {
        if e.kind == DepKind::Launch {
            launcher.insert(e.to, e.from);
        }
    }
    let mut group_ids: FxHashMap<Vec<i64>, u32> = FxHashMap::default();
    let mut out = Vec::new();
    for (ti, task) in graph.tasks.iter().enumerate() {
        let Some(ci) = task.collective else { continue };
        let t = TaskId(ti as u32);
        // The event behind the task: same correlation and name, nearest
        // start (the builder may have clipped the start of an overlapping
        // GPU task; a graph launch fans one correlation out to many).
        let start = measured
            .origin_ns
            .saturating_add(measured.tasks[ti].start_ns);
        let event = gpu_by_corr.get(&task.correlation).and_then(|v| {
            v.iter()
                .copied()
                .filter(|&i| graph.names[events.gpu[i].name.0 as usize] == graph.name(t))
                .min_by_key(|&i| events.gpu[i].ts_ns.abs_diff(start))
                .map(|i| &events.gpu[i])
        });
        let own = event.and_then(|e| e.collective.as_deref());
        let via_op = event
            .and_then(|e| e.external_id)
            .and_then(|x| by_ext.get(&x).copied());
        let args = own.filter(|c| c.name.is_some()).or(via_op);
        let coll = &graph.collectives[ci as usize];
        let ranks: Option<Vec<i64>> = args
            .and_then(|a| {
                let size = a.group_size.unwrap_or(0) as usize;
                a.pg_ranks
                    .as_ref()
                    .map(|r| r.expand(size))
                    .filter(|r| !r.is_empty())
            })
            .or_else(|| {
                let name = coll.process_group.as_deref()?;
                meta.process_groups
                    .iter()
                    .find(|g| g.name == name && !g.ranks.is_empty())
                    .map(|g| g.ranks.clone())
            });
        // `Src Rank` / `Dst Rank` are global ranks: PyTorch's profiler
        // writes `groupRanks[peer]` (torch/csrc/profiler/util.cpp), and only
        // the peer's (`Dst Rank` on a send, `Src Rank` on a receive).
        let pattern = match (p2p_direction(&coll.name), args) {
            (Some(true), Some(a)) => a
                .dst_rank
                .map_or(CommPattern::Group, |peer| CommPattern::Send { peer }),
            (Some(false), Some(a)) => a
                .src_rank
                .map_or(CommPattern::Group, |peer| CommPattern::Recv { peer }),
            _ => CommPattern::Group,
        };
        let group = ranks.map(|r| {
            let next = group_ids.len() as u32;
            *group_ids.entry(r.clone()).or_insert_with(|| {
                groups.push(r);
                next
            })
        });
        let issue_ns = match launcher.get(&t) {
            Some(call) => measured.tasks[call.idx()].start_ns,
            None => measured.tasks[ti].start_ns,
        };
        out.push(CommTask {
            task: t,
            collective: ci,
            pattern,
            group,
            issue_ns,
        });
    }
    out.sort_by_key(|c| (c.issue_ns, c.task));
    out
}
