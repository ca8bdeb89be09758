//! Tables for front ends that show data frames (the Python package): the
//! breakdown of every step and the GPU time per kernel name and launching
//! operator, measured and replayed, of one rank. No `--json` output has
//! them yet; they are computed from the same graph, measured times and
//! schedule as [`TraceReplay`](crate::TraceReplay), through the same
//! metrics, so a step's breakdown sums to the step's length.

use std::collections::HashMap;

use lumos_graph::{Graph, Measured, Span, TaskId};
use lumos_sim::{breakdown, step_spans, TaskTimes};

use crate::job::JobReplayed;
use crate::replay::{BreakdownUs, Replayed};
use crate::units::us;

/// One rank's tables: the breakdown per step and the kernels.
#[derive(Debug, Clone)]
pub struct RankTables {
    /// The rank.
    pub rank: u32,
    /// Per `ProfilerStep#N` (the whole window when the trace has none).
    pub steps: Vec<StepBreakdown>,
    /// Per kernel name and launching operator.
    pub kernels: Vec<KernelLaunchRow>,
}

/// Where one step's GPU time went, measured and replayed; each side over
/// that side's own step span, as in the step lengths of
/// [`StepReplay`](crate::StepReplay).
#[derive(Debug, Clone)]
pub struct StepBreakdown {
    /// The step's name (`window` when the trace has no steps).
    pub step: String,
    /// Over the measured step.
    pub measured: BreakdownUs,
    /// Over the replayed step.
    pub replayed: BreakdownUs,
}

/// The GPU tasks of one name launched from one operator.
#[derive(Debug, Clone)]
pub struct KernelLaunchRow {
    /// The kernel's (or copy's, or memset's) name.
    pub name: String,
    /// The innermost operator (not annotation) enclosing the call that
    /// launched it; `None` when the launch was not recorded or no operator
    /// encloses it.
    pub operator: Option<String>,
    /// `kernel`, `memcpy` or `memset`.
    pub kind: &'static str,
    /// True for communication (collective or point-to-point) kernels.
    pub comm: bool,
    /// How many.
    pub count: usize,
    /// Their measured durations, summed.
    pub measured_us: f64,
    /// Their replayed durations, summed.
    pub replayed_us: f64,
}

/// The tables of one rank, `times` being its replayed times on the same
/// origin as `measured`.
pub fn rank_tables<T: TaskTimes + ?Sized>(
    rank: u32,
    graph: &Graph,
    measured: &Measured,
    times: &T,
) -> RankTables {
    RankTables {
        rank,
        steps: step_breakdowns(graph, measured, times),
        kernels: kernel_rows(graph, measured, times),
    }
}

/// The breakdown of every step, measured and replayed.
pub fn step_breakdowns<T: TaskTimes + ?Sized>(
    graph: &Graph,
    measured: &Measured,
    times: &T,
) -> Vec<StepBreakdown> {
    let m = step_spans(graph, &measured.tasks, Some(&measured.step_annotations));
    let r = step_spans(graph, times, None);
    let name = |k: usize| {
        graph
            .steps
            .get(k)
            .map_or_else(|| "window".to_owned(), |s| s.name.clone())
    };
    m.iter()
        .zip(&r)
        .enumerate()
        .map(|(k, (&ms, &rs))| StepBreakdown {
            step: name(k),
            measured: breakdown(graph, &measured.tasks, ms).into(),
            replayed: breakdown(graph, times, rs).into(),
        })
        .collect()
}

/// GPU time per (kernel name, launching operator), in order of first
/// appearance in the graph.
pub fn kernel_rows<T: TaskTimes + ?Sized>(
    graph: &Graph,
    measured: &Measured,
    times: &T,
) -> Vec<KernelLaunchRow> {
    let mut rows: Vec<KernelLaunchRow> = Vec::new();
    let mut index: HashMap<(u32, Option<u32>), usize> = HashMap::new();
    for (i, task) in graph.tasks.iter().enumerate() {
        if !task.kind.is_gpu() {
            continue;
        }
        let t = TaskId(i as u32);
        let op = launching_operator(graph, t);
        let slot = *index.entry((task.name.0, op)).or_insert_with(|| {
            rows.push(KernelLaunchRow {
                name: graph.name(t).to_owned(),
                operator: op.map(|n| graph.names[n as usize].clone()),
                kind: task.kind.as_str(),
                comm: task.is_comm(),
                count: 0,
                measured_us: 0.0,
                replayed_us: 0.0,
            });
            rows.len() - 1
        });
        let row = &mut rows[slot];
        row.count += 1;
        row.measured_us += us(measured.tasks[i].len_ns());
        let replayed = Span {
            start_ns: times.start_of(t),
            end_ns: times.end_of(t),
        };
        row.replayed_us += us(replayed.len_ns());
    }
    rows
}

/// The name of the innermost operator scope around `t` (GPU tasks carry
/// their launch call's scopes).
fn launching_operator(graph: &Graph, t: TaskId) -> Option<u32> {
    graph
        .scope_chain(t)
        .map(|s| &graph.scopes[s.0 as usize])
        .find(|s| !s.annotation)
        .map(|s| s.name.0)
}

impl Replayed {
    /// The trace's tables: breakdown per step and kernels.
    pub fn tables(&self) -> RankTables {
        rank_tables(self.meta.rank, &self.graph, &self.measured, &self.schedule)
    }
}

/// One rank's replayed times in a joint schedule, moved back to the rank's
/// own window origin.
struct Shifted<'a> {
    start_ns: &'a [i64],
    end_ns: &'a [i64],
    shift: i64,
}

impl TaskTimes for Shifted<'_> {
    fn task_count(&self) -> usize {
        self.start_ns.len()
    }
    fn start_of(&self, t: TaskId) -> i64 {
        self.start_ns[t.idx()] - self.shift
    }
    fn end_of(&self, t: TaskId) -> i64 {
        self.end_ns[t.idx()] - self.shift
    }
}

impl JobReplayed<'_> {
    /// Every rank's tables, by position, from the joint schedule.
    pub fn tables(&self) -> Vec<RankTables> {
        (0..self.rank_count())
            .map(|pos| {
                let (graph, measured) = self.rank(pos);
                let part = &self.graph.ranks[pos];
                rank_tables(part.rank, &graph, &measured, &shifted(part, &self.schedule))
            })
            .collect()
    }
}

/// Rank `part`'s replayed times in `schedule`, on its own window origin.
fn shifted<'a>(part: &lumos_graph::RankPart, schedule: &'a lumos_sim::Schedule) -> Shifted<'a> {
    let r = part.tasks.start as usize..part.tasks.end as usize;
    Shifted {
        start_ns: &schedule.start_ns[r.clone()],
        end_ns: &schedule.end_ns[r],
        shift: part.start_ns,
    }
}

/// Every rank's tables from a joint schedule of `job` merged into `graph`.
/// Durations of scaled ranks are the scaled ones on the replayed side.
pub fn job_tables(
    job: &lumos_graph::Job,
    graph: &lumos_graph::JobGraph,
    schedule: &lumos_sim::Schedule,
) -> Vec<RankTables> {
    graph
        .ranks
        .iter()
        .zip(&job.graphs)
        .map(|(part, rank)| {
            rank_tables(
                rank.rank,
                &rank.graph,
                &rank.measured,
                &shifted(part, schedule),
            )
        })
        .collect()
}
