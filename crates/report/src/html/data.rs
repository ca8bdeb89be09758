//! What the HTML report shows, from the analyses every front end shares
//! (lumos-report's `analysis`, as `lumos replay --json` has them): the
//! breakdown per step and the top kernels; and what only the page shows,
//! computed from the job: who waited in which step.

use std::collections::HashMap;

use lumos_graph::{Graph, Measured, RendezvousKind, Span};
use lumos_sim::{rendezvous_times, step_spans, TaskTimes};

use crate::job::JobReplayed;
use crate::units::us;
use crate::{Analyses, BreakdownUs, KernelRow, ReplayOutput, StepAnalysis, TraceReplay};

/// Most kernels listed.
const TOP_KERNELS: usize = 15;

/// One step: its length and breakdown, measured and replayed.
#[derive(Debug, Clone)]
pub(super) struct StepRow {
    pub name: String,
    /// The rank it was taken from (a job's step is its slowest rank's).
    pub rank: Option<u32>,
    pub measured: BreakdownUs,
    pub replayed: BreakdownUs,
}

/// Time each rank waited for its peers in each step, µs; `[rank][step]`.
#[derive(Debug, Clone)]
pub(super) struct WaitGrid {
    pub ranks: Vec<u32>,
    pub steps: Vec<String>,
    pub measured: Vec<Vec<f64>>,
    pub replayed: Vec<Vec<f64>>,
}

/// The steps of one rank, measured and replayed (each on its own origin).
struct RankSteps {
    measured: Vec<Span>,
    replayed: Vec<Span>,
}

fn rank_steps<T: TaskTimes + ?Sized>(g: &Graph, m: &Measured, replayed: &T) -> RankSteps {
    RankSteps {
        measured: step_spans(g, &m.tasks, Some(&m.step_annotations)),
        replayed: step_spans(g, replayed, None),
    }
}

/// A step's breakdown as the page's charts take it.
fn breakdown_of(s: &StepAnalysis) -> BreakdownUs {
    BreakdownUs {
        exposed_compute_us: s.exposed_compute_us,
        overlapped_us: s.overlapped_us,
        exposed_comm_us: s.exposed_comm_us,
        idle_us: s.idle_us,
        total_us: s.span_us,
    }
}

/// Per analysed step of one trace, its breakdown measured and replayed.
pub(super) fn trace_steps(t: &TraceReplay) -> Vec<StepRow> {
    let a = &t.analysis;
    a.measured
        .steps
        .iter()
        .zip(&a.replayed.steps)
        .map(|(m, r)| StepRow {
            name: if m.index.is_none() {
                "whole window".to_owned()
            } else {
                m.step.clone()
            },
            rank: None,
            measured: breakdown_of(m),
            replayed: breakdown_of(r),
        })
        .collect()
}

/// Per step of a job, the breakdown of the rank slowest in that step
/// (measured and replayed apart, as the job's step is defined).
pub(super) fn job_steps(replay: &ReplayOutput) -> Vec<StepRow> {
    let per_rank: Vec<Vec<StepRow>> = replay
        .traces
        .iter()
        .map(|t| {
            let mut rows = trace_steps(t);
            for r in &mut rows {
                r.rank = Some(t.rank);
            }
            rows
        })
        .collect();
    let n = per_rank.iter().map(Vec::len).min().unwrap_or(0);
    (0..n)
        .filter_map(|k| {
            let slowest = |f: fn(&StepRow) -> f64| {
                per_rank
                    .iter()
                    .map(|rows| &rows[k])
                    .max_by(|a, b| f(a).total_cmp(&f(b)))
            };
            let m = slowest(|r| r.measured.total_us)?;
            let r = slowest(|r| r.replayed.total_us)?;
            Some(StepRow {
                replayed: r.replayed,
                ..m.clone()
            })
        })
        .collect()
}

/// The kernels (GPU tasks by name) with the most measured time in the
/// analysed steps, summed over `analyses` (every rank of a job).
pub(super) fn top_kernels<'a>(analyses: impl Iterator<Item = &'a Analyses>) -> Vec<KernelRow> {
    let mut by_name: HashMap<&str, KernelRow> = HashMap::new();
    let mut total = 0.0;
    for a in analyses {
        for k in &a.kernels {
            total += k.total_us;
            by_name
                .entry(k.name.as_str())
                .and_modify(|row| {
                    row.count += k.count;
                    row.total_us += k.total_us;
                    row.min_us = row.min_us.min(k.min_us);
                    row.max_us = row.max_us.max(k.max_us);
                })
                .or_insert_with(|| k.clone());
        }
    }
    let mut rows: Vec<KernelRow> = by_name.into_values().collect();
    rows.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.name.cmp(&b.name)));
    rows.truncate(TOP_KERNELS);
    for r in &mut rows {
        r.mean_us = r.total_us / r.count.max(1) as f64;
        // None when every task has no length: no share of nothing.
        r.share_pct = (total > 0.0).then(|| r.total_us / total * 100.0);
    }
    rows
}

/// The steps' names, `whole window` for a graph without steps.
fn step_names(g: &Graph, n: usize) -> Vec<String> {
    if g.steps.is_empty() {
        return vec!["whole window".to_owned(); n];
    }
    g.steps.iter().map(|s| s.name.clone()).take(n).collect()
}

/// Who waited for peers in which step: each matched collective's waits,
/// counted in the step (of the waiting rank) in which it started.
///
/// One rank's own graph and times are at hand at a time: the grid itself
/// (a number per rank and step) is all that is kept of the ranks.
pub(super) fn wait_grid(j: &JobReplayed) -> WaitGrid {
    let job = &*j.job;
    let m_rv = rendezvous_times(&j.graph, &j.measured.tasks);
    let r_rv = rendezvous_times(&j.graph, &j.schedule);
    let waits = waits_by_rank(j);
    let mut measured = Vec::with_capacity(job.ranks.len());
    let mut replayed = Vec::with_capacity(job.ranks.len());
    let mut names = Vec::new();
    for (p, waits) in waits.iter().enumerate() {
        let times = j.rank_times(p);
        let (graph, own) = j.rank(p);
        let steps = rank_steps(&graph, &own, &times);
        let len = steps.measured.len();
        let (mut m_row, mut r_row) = (vec![0.0; len], vec![0.0; len]);
        // In the order of the job's rendezvous, as every cell's sum was.
        for &(local, i, pos) in waits {
            if let Some(k) =
                step_of(&steps.measured, own.tasks[local].start_ns).filter(|&k| k < len)
            {
                m_row[k] += us(m_rv[i].wait_ns[pos]);
            }
            if let Some(k) = step_of(&steps.replayed, times.start_ns[local]).filter(|&k| k < len) {
                r_row[k] += us(r_rv[i].wait_ns[pos]);
            }
        }
        if p == 0 {
            names = step_names(&graph, len);
        }
        measured.push(m_row);
        replayed.push(r_row);
    }
    // Steps every rank has.
    let n = measured.iter().map(Vec::len).min().unwrap_or(0);
    for row in measured.iter_mut().chain(&mut replayed) {
        row.truncate(n);
    }
    names.truncate(n);
    WaitGrid {
        ranks: job.ranks.iter().map(|r| r.rank).collect(),
        steps: names,
        measured,
        replayed,
    }
}

/// Per rank, the tasks of its matched collectives: `(its index in the
/// rank, rendezvous, position in the rendezvous)`, in rendezvous order.
fn waits_by_rank(j: &JobReplayed) -> Vec<Vec<(usize, usize, usize)>> {
    let mut waits = vec![Vec::new(); j.job.ranks.len()];
    for (i, rv) in j.graph.rendezvous.iter().enumerate() {
        if rv.kind == RendezvousKind::Uncoupled {
            continue; // replayed as unmatched: nobody waited in it
        }
        for (pos, &task) in rv.tasks.iter().enumerate() {
            let p = j.graph.rank_of(task);
            let local = (task.0 - j.graph.ranks[p].tasks.start) as usize;
            waits[p].push((local, i, pos));
        }
    }
    waits
}

/// The step whose span holds `t`.
fn step_of(spans: &[Span], t: i64) -> Option<usize> {
    spans.iter().position(|s| s.start_ns <= t && t < s.end_ns)
}
