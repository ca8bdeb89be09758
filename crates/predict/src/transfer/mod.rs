//! `--durations-from`: one recording's graph re-timed with the durations
//! measured in another recording of the same program (other hardware,
//! another software version).
//!
//! The edit keeps A's graph whole (its tasks, edges, releases and runtime
//! dependencies: its structure) and changes only durations and latencies:
//!
//! 1. Threads are paired by the operators they share ([`threads`]).
//! 2. Each pair's CPU tasks are aligned by operator key (kind, name,
//!    innermost scope's name and `Input Dims`) with a shortest edit script
//!    ([`align`]); a matched task takes B's duration.
//! 3. The GPU tasks a matched runtime call launched take the durations of
//!    those B's call launched, in launch order, when their kinds agree
//!    (kernel names differ across GPUs and libraries; the launch is what
//!    identifies the work).
//! 4. An edge between two matched tasks takes the latency of B's edge of
//!    the same kind between their counterparts: the CPU time an operator
//!    spends outside its leaves, launch latencies, stream gaps.
//!
//! Everything unmatched keeps A's duration or latency, and the shares of
//! A's CPU and GPU time that were matched say how much of the answer is B's.
//! B is read only here: the result is a graph with new durations, which the
//! simulator replays like any other (it never sees B, and no measured start
//! enters the graph).

mod align;
mod threads;

use lumos_graph::{DepKind, Edge, Graph, ProcId, TaskId};
use rustc_hash::FxHashMap;

use crate::PredictError;

/// Below this share of A's task time (CPU and GPU together) matched in B,
/// `--durations-from` refuses: most of the answer would then be A's own
/// durations, not B's, and the two recordings are likely not one program.
/// Two recordings of one program match well over 90% (docs/ACCURACY.md).
pub const MIN_MATCHED_SHARE: f64 = 0.5;

/// How much of one side's task time found a counterpart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MatchedTime {
    /// Tasks matched.
    pub tasks_matched: usize,
    /// Tasks in all.
    pub tasks: usize,
    /// A's duration of the matched tasks, ns.
    pub matched_ns: i64,
    /// A's duration of all its tasks of this kind, ns.
    pub total_ns: i64,
}

impl MatchedTime {
    /// `matched_ns / total_ns`; `None` when there is no such time at all
    /// (no task, or none with a duration): no share of nothing exists,
    /// and 1 (it was) would read as everything matched.
    pub fn share(&self) -> Option<f64> {
        (self.total_ns > 0).then(|| self.matched_ns as f64 / self.total_ns as f64)
    }

    /// The share in % with one decimal, or, where there is none, the
    /// tasks matched as a count (`0 of 0 tasks`).
    fn describe(&self) -> String {
        match self.share() {
            Some(s) => format!("{:.1}%", s * 100.0),
            None => format!("{} of {} tasks", self.tasks_matched, self.tasks),
        }
    }

    fn add(&mut self, ns: i64, matched: bool) {
        self.tasks += 1;
        self.total_ns = self.total_ns.saturating_add(ns);
        if matched {
            self.tasks_matched += 1;
            self.matched_ns = self.matched_ns.saturating_add(ns);
        }
    }
}

/// One of A's threads paired with one of B's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadPair {
    /// A's thread.
    pub a: ProcId,
    /// B's thread.
    pub b: ProcId,
    /// Tasks on A's thread.
    pub a_tasks: usize,
    /// Tasks on B's thread.
    pub b_tasks: usize,
    /// Tasks aligned between them.
    pub matched: usize,
}

/// A's graph re-timed with B's durations, and what was matched.
#[derive(Debug, Clone)]
pub struct Transfer {
    /// A's graph with B's durations and latencies where matched.
    pub graph: Graph,
    /// B's task for each of A's tasks, parallel to A's tasks.
    pub counterpart: Vec<Option<TaskId>>,
    /// A's CPU tasks: how many and how much of their time were matched.
    pub cpu: MatchedTime,
    /// A's GPU tasks likewise.
    pub gpu: MatchedTime,
    /// The thread pairs, most shared first.
    pub threads: Vec<ThreadPair>,
    /// A's edges that took B's latency.
    pub edges_retimed: usize,
    /// A's edges in all.
    pub edges: usize,
}

impl Transfer {
    /// The share of A's task time, CPU and GPU together, that was matched;
    /// `None` when A's tasks have no time at all.
    pub fn matched_share(&self) -> Option<f64> {
        let total = self.cpu.total_ns.saturating_add(self.gpu.total_ns);
        (total > 0)
            .then(|| self.cpu.matched_ns.saturating_add(self.gpu.matched_ns) as f64 / total as f64)
    }

    /// An error (a usage error: the caller chose B) when B shares less than
    /// [`MIN_MATCHED_SHARE`] of A's task time, or A has no task time to
    /// share; `a` and `b` name the inputs.
    pub fn check(&self, a: &str, b: &str) -> Result<(), PredictError> {
        let (cpu, gpu) = (self.cpu.describe(), self.gpu.describe());
        match self.matched_share() {
            Some(share) if share >= MIN_MATCHED_SHARE => Ok(()),
            Some(share) => Err(PredictError::Unsupported(format!(
                "--durations-from {b}: only {:.1}% of the task time of {a} matched an operator \
                 of {b} (CPU {cpu}, GPU {gpu}; at least {:.0}% needed): not a recording of the \
                 same program",
                share * 100.0,
                MIN_MATCHED_SHARE * 100.0
            ))),
            // No time, no share of it (it said "only 0.0% ... (CPU 100.0%,
            // GPU 100.0%)"): nothing tells B to be a recording of A.
            None => Err(PredictError::Unsupported(format!(
                "--durations-from {b}: the tasks of {a} have no duration, so no share of its \
                 task time can match {b} (CPU {cpu}, GPU {gpu} matched an operator of {b}): \
                 nothing shows that {b} records the same program"
            ))),
        }
    }
}

/// Re-times `a` with the durations measured in `b` (see the module docs).
/// Never fails: what does not match keeps A's values, and
/// [`Transfer::check`] tells whether enough matched.
pub fn transfer_durations(a: &Graph, b: &Graph) -> Transfer {
    let mut counterpart = vec![None; a.tasks.len()];
    let threads = match_cpu(a, b, &mut counterpart);
    match_gpu(a, b, &mut counterpart);
    let mut graph = a.clone();
    for (task, c) in graph.tasks.iter_mut().zip(&counterpart) {
        if let Some(c) = c {
            task.duration_ns = b.task(*c).duration_ns;
        }
    }
    let edges_retimed = retime_edges(&mut graph.edges, b, &counterpart);
    let (mut cpu, mut gpu) = (MatchedTime::default(), MatchedTime::default());
    for (task, c) in a.tasks.iter().zip(&counterpart) {
        let side = if task.kind.is_gpu() {
            &mut gpu
        } else {
            &mut cpu
        };
        side.add(task.duration_ns, c.is_some());
    }
    Transfer {
        edges: graph.edges.len(),
        graph,
        counterpart,
        cpu,
        gpu,
        threads,
        edges_retimed,
    }
}

/// Pairs the threads and aligns each pair's tasks, filling `counterpart`.
fn match_cpu(a: &Graph, b: &Graph, counterpart: &mut [Option<TaskId>]) -> Vec<ThreadPair> {
    let (threads_a, threads_b) = (threads::threads(a), threads::threads(b));
    let keys_a: Vec<_> = threads_a
        .iter()
        .map(|&p| align::thread_keys(a, p))
        .collect();
    let keys_b: Vec<_> = threads_b
        .iter()
        .map(|&p| align::thread_keys(b, p))
        .collect();
    let mut pairs = Vec::new();
    for (i, j) in threads::pair_threads(&keys_a, &keys_b) {
        let (pa, pb) = (threads_a[i], threads_b[j]);
        let (tasks_a, tasks_b) = (&a.processors[pa.idx()].tasks, &b.processors[pb.idx()].tasks);
        let aligned = align::align(&keys_a[i], &keys_b[j]);
        for &(x, y) in &aligned {
            counterpart[tasks_a[x].idx()] = Some(tasks_b[y]);
        }
        pairs.push(ThreadPair {
            a: pa,
            b: pb,
            a_tasks: tasks_a.len(),
            b_tasks: tasks_b.len(),
            matched: aligned.len(),
        });
    }
    pairs
}

/// The GPU tasks each runtime call launched, in task order (the order the
/// builder created them in: launch order).
fn launches(g: &Graph) -> FxHashMap<TaskId, Vec<TaskId>> {
    let mut m: FxHashMap<TaskId, Vec<TaskId>> = FxHashMap::default();
    for e in g.edges.iter().filter(|e| e.kind == DepKind::Launch) {
        m.entry(e.from).or_default().push(e.to);
    }
    for v in m.values_mut() {
        v.sort_unstable();
    }
    m
}

/// Matches the GPU work of matched calls: the k-th task A's call launched
/// with the k-th B's counterpart launched, while their kinds agree.
fn match_gpu(a: &Graph, b: &Graph, counterpart: &mut [Option<TaskId>]) {
    let launched_b = launches(b);
    let mut launched_a: Vec<_> = launches(a).into_iter().collect();
    launched_a.sort_unstable();
    for (call, gpu_a) in launched_a {
        let Some(gpu_b) = counterpart[call.idx()].and_then(|c| launched_b.get(&c)) else {
            continue;
        };
        for (&ta, &tb) in gpu_a.iter().zip(gpu_b) {
            if a.task(ta).kind != b.task(tb).kind {
                break;
            }
            counterpart[ta.idx()] = Some(tb);
        }
    }
}

/// Gives each edge between matched tasks the latency of B's edge of the
/// same kind between their counterparts, where B has one; returns how many
/// edges changed hands.
fn retime_edges(edges: &mut [Edge], b: &Graph, counterpart: &[Option<TaskId>]) -> usize {
    let latency_b: FxHashMap<(TaskId, TaskId, DepKind), i64> = b
        .edges
        .iter()
        .map(|e| ((e.from, e.to, e.kind), e.latency_ns))
        .collect();
    let mut retimed = 0;
    for e in edges.iter_mut() {
        let (Some(from), Some(to)) = (counterpart[e.from.idx()], counterpart[e.to.idx()]) else {
            continue;
        };
        if let Some(&l) = latency_b.get(&(from, to, e.kind)) {
            e.latency_ns = l;
            retimed += 1;
        }
    }
    retimed
}

#[cfg(test)]
mod tests;
