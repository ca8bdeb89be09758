//! One rank's graph with the communication details that cross-rank matching
//! needs: who takes part in each collective and in which order the rank
//! issued them.

use lumos_trace::{Category, CollectiveArgs, Trace};
use rustc_hash::FxHashMap;

use crate::build::build;
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
    let mut groups = Vec::new();
    let comms = comm_tasks(trace, &graph, &measured, &mut groups);
    let rank = RankGraph {
        rank: trace.meta.rank,
        source: trace.path.display().to_string(),
        clock_base_ns: trace.meta.base_time_ns.unwrap_or(0),
        host: trace.meta.hostname.clone(),
        graph,
        measured,
        comms,
        groups,
    };
    (rank, report)
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
    trace: &Trace,
    graph: &Graph,
    measured: &Measured,
    groups: &mut Vec<Vec<i64>>,
) -> Vec<CommTask> {
    // The same sources of collective arguments as the graph builder uses:
    // the GPU event's own, else those of the CPU op it was launched under.
    let mut by_ext: FxHashMap<u64, &CollectiveArgs> = FxHashMap::default();
    let mut gpu_by_corr: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    for (i, e) in trace.events.iter().enumerate() {
        if e.category == Category::CpuOp {
            if let (Some(x), Some(c)) = (
                e.external_id(),
                e.extra.as_ref().and_then(|x| x.collective.as_ref()),
            ) {
                by_ext.entry(x).or_insert(c);
            }
        } else if e.category.is_gpu_work() {
            if let Some(c) = e.correlation() {
                gpu_by_corr.entry(c).or_default().push(i);
            }
        }
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
                .filter(|&i| trace.name(&trace.events[i]) == graph.name(t))
                .min_by_key(|&i| trace.events[i].ts_ns.abs_diff(start))
                .map(|i| &trace.events[i])
        });
        let own = event.and_then(|e| e.extra.as_ref().and_then(|x| x.collective.as_deref()));
        let via_op = event
            .and_then(|e| e.external_id())
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
                trace
                    .meta
                    .process_groups
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
