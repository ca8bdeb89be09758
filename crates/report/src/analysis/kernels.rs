//! The top GPU tasks of a selection: by name (kernel, copy or set) and by
//! the operator that launched them.

use lumos_graph::{Graph, NameId, TaskId, TaskKind};
use lumos_sim::TaskTimes;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::breakdown::pct;
use crate::units::us;

/// The operator of a task without one: no operator encloses its launch.
pub const NO_OPERATOR: &str = "(no operator)";

/// The operator a task belongs to: a CPU operator task (a leaf of the call
/// tree) is its own; any other task (a runtime call; a GPU task, through
/// the call that launched it) belongs to the innermost operator enclosing
/// it (`record_function` annotations are skipped). Outside every operator,
/// it belongs to the innermost annotation enclosing it other than a step's
/// own (`Optimizer.step#AdamW.step`, vLLM's `execute_...` around a CUDA
/// graph launch: what a user wrote around the launch says more than no
/// name), else [`NO_OPERATOR`].
pub fn operator_of(graph: &Graph, t: TaskId) -> &str {
    if graph.task(t).kind == TaskKind::CpuOp {
        return graph.name(t);
    }
    let scope_name = |s: &lumos_graph::Scope| graph.names[s.name.0 as usize].as_str();
    let mut chain = graph.scope_chain(t).map(|s| &graph.scopes[s.0 as usize]);
    let mut annotation = None;
    for s in chain.by_ref() {
        if !s.annotation {
            return scope_name(s);
        }
        if annotation.is_none() && !is_step_name(graph, scope_name(s)) {
            annotation = Some(scope_name(s));
        }
    }
    annotation.unwrap_or(NO_OPERATOR)
}

/// Whether `name` is a step's annotation (`ProfilerStep#5`): it encloses
/// the whole step, so it names no part of it.
fn is_step_name(graph: &Graph, name: &str) -> bool {
    graph.steps.iter().any(|s| s.name == name)
}

/// [`operator_of`] for every task of a graph: the operator of each scope
/// (its innermost enclosing operator, itself included, skipping
/// annotations), found once per graph, so that a task's operator is one
/// lookup rather than a walk up its scope chain.
pub(crate) struct ScopeOperators {
    /// By scope id: the operator's name id, else the innermost annotation's
    /// other than a step's, [`ScopeOperators::NONE`] where neither encloses
    /// the scope.
    of_scope: Vec<u32>,
}

impl ScopeOperators {
    const NONE: u32 = u32::MAX;
    const UNSET: u32 = u32::MAX - 1;

    /// The operators of `graph`'s scopes.
    pub fn of(graph: &Graph) -> ScopeOperators {
        let mut of_scope = vec![Self::UNSET; graph.scopes.len()];
        let mut path = Vec::new();
        for first in 0..of_scope.len() {
            // Up from `first` to a scope whose operator is known, or is
            // one; every annotation passed on the way gets the same.
            let mut s = first;
            let op = loop {
                if of_scope[s] != Self::UNSET {
                    break of_scope[s];
                }
                let scope = &graph.scopes[s];
                if !scope.annotation {
                    of_scope[s] = scope.name.0;
                    break scope.name.0;
                }
                path.push(s);
                // Parents come before their scopes (the builder's order,
                // checked when a compact file is read); going strictly down
                // also ends the walk on a graph made by hand without it.
                match scope.parent {
                    Some(p) if (p.0 as usize) < s => s = p.0 as usize,
                    _ => break Self::NONE,
                }
            };
            for s in path.drain(..) {
                of_scope[s] = op;
            }
        }
        Self::annotations_where_no_operator(graph, &mut of_scope);
        ScopeOperators { of_scope }
    }

    /// Gives each scope outside every operator the innermost annotation
    /// enclosing it (itself included) that is not a step's: parents come
    /// first, so one pass down the list sees each parent's answer first.
    fn annotations_where_no_operator(graph: &Graph, of_scope: &mut [u32]) {
        // Whether each name is a step's, looked up once per name in a set
        // of the steps' names: a search of the steps per name was steps x
        // steps where each step's annotation has a name of its own
        // (200,000 `ProfilerStep#N` took minutes).
        let step_names: FxHashSet<&str> = graph.steps.iter().map(|s| s.name.as_str()).collect();
        let mut is_step: Vec<Option<bool>> = vec![None; graph.names.len()];
        let mut annotation = vec![Self::NONE; of_scope.len()];
        for s in 0..of_scope.len() {
            let scope = &graph.scopes[s];
            let not_step = scope.annotation && {
                let id = scope.name.0 as usize;
                !*is_step[id].get_or_insert_with(|| step_names.contains(graph.names[id].as_str()))
            };
            annotation[s] = if not_step {
                scope.name.0
            } else {
                match scope.parent {
                    Some(p) if (p.0 as usize) < s => annotation[p.0 as usize],
                    _ => Self::NONE,
                }
            };
            if of_scope[s] == Self::NONE {
                of_scope[s] = annotation[s];
            }
        }
    }

    /// [`operator_of`] `t`.
    pub fn operator<'g>(&self, graph: &'g Graph, t: TaskId) -> &'g str {
        if graph.task(t).kind == TaskKind::CpuOp {
            return graph.name(t);
        }
        match graph.scope_of(t).map(|s| self.of_scope[s.0 as usize]) {
            Some(op) if op != Self::NONE => graph.names[op as usize].as_str(),
            _ => NO_OPERATOR,
        }
    }
}

/// The GPU tasks of one name in a selection.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KernelRow {
    /// The kernel's name (or `Memcpy DtoH`, ...).
    pub name: String,
    /// `kernel`, `memcpy` or `memset`.
    pub kind: &'static str,
    /// True for communication.
    pub comm: bool,
    /// How many ran.
    pub count: usize,
    /// Their summed durations, us.
    pub total_us: f64,
    /// Mean duration, us.
    pub mean_us: f64,
    /// Shortest, us.
    pub min_us: f64,
    /// Longest, us.
    pub max_us: f64,
    /// `total_us` in % of the summed durations of every GPU task of the
    /// selection; null when those sum to zero (tasks of no length: no
    /// share of nothing exists).
    pub share_pct: Option<f64>,
}

/// The GPU time one operator launched in a selection.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OperatorRow {
    /// The launching operator ([`operator_of`]).
    pub operator: String,
    /// GPU tasks it launched.
    pub gpu_tasks: usize,
    /// Their summed durations, us.
    pub total_us: f64,
    /// Mean per GPU task, us.
    pub mean_us: f64,
    /// `total_us` in % of the summed durations of every GPU task of the
    /// selection; null when those sum to zero (tasks of no length: no
    /// share of nothing exists).
    pub share_pct: Option<f64>,
    /// The GPU task name with the most time under it.
    pub top_kernel: String,
    /// That name's time under it, us.
    pub top_kernel_us: f64,
}

/// Durations of the GPU tasks among `own`, with the task.
fn gpu_durations<'a, T: TaskTimes + ?Sized>(
    graph: &'a Graph,
    times: &'a T,
    own: &'a [TaskId],
) -> impl Iterator<Item = (TaskId, i64)> + 'a {
    own.iter()
        .copied()
        .filter(|&t| graph.task(t).kind.is_gpu())
        .map(|t| (t, times.end_of(t).saturating_sub(times.start_of(t))))
}

#[derive(Default)]
struct Acc {
    count: usize,
    total: i64,
    min: i64,
    max: i64,
}

impl Acc {
    fn add(&mut self, d: i64) {
        if self.count == 0 {
            self.min = d;
            self.max = d;
        }
        self.count += 1;
        self.total = self.total.saturating_add(d);
        self.min = self.min.min(d);
        self.max = self.max.max(d);
    }

    fn mean(&self) -> f64 {
        us(self.total) / self.count.max(1) as f64
    }
}

/// GPU tasks of `own` by name, most total time first (ties by name).
pub(crate) fn kernel_rows<T: TaskTimes + ?Sized>(
    graph: &Graph,
    times: &T,
    own: &[TaskId],
) -> Vec<KernelRow> {
    let mut by_name: FxHashMap<NameId, (TaskId, Acc)> = FxHashMap::default();
    let mut all = 0i64;
    for (t, d) in gpu_durations(graph, times, own) {
        all = all.saturating_add(d);
        by_name
            .entry(graph.task(t).name)
            .or_insert_with(|| (t, Acc::default()))
            .1
            .add(d);
    }
    let mut rows: Vec<KernelRow> = by_name
        .into_values()
        .map(|(t, a)| KernelRow {
            name: graph.name(t).to_owned(),
            kind: graph.task(t).kind.as_str(),
            comm: graph.task(t).is_comm(),
            count: a.count,
            total_us: us(a.total),
            mean_us: a.mean(),
            min_us: us(a.min),
            max_us: us(a.max),
            share_pct: pct(a.total, all),
        })
        .collect();
    rows.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.name.cmp(&b.name)));
    rows
}

/// GPU time of `own` by launching operator, most first (ties by name).
pub(crate) fn operator_rows<T: TaskTimes + ?Sized>(
    graph: &Graph,
    times: &T,
    own: &[TaskId],
    operators: &ScopeOperators,
) -> Vec<OperatorRow> {
    // Per operator: its total, and per kernel name the time under it.
    let mut by_op: FxHashMap<&str, (Acc, FxHashMap<NameId, i64>)> = FxHashMap::default();
    let mut all = 0i64;
    for (t, d) in gpu_durations(graph, times, own) {
        all = all.saturating_add(d);
        let (acc, kernels) = by_op.entry(operators.operator(graph, t)).or_default();
        acc.add(d);
        *kernels.entry(graph.task(t).name).or_default() += d;
    }
    let mut rows: Vec<OperatorRow> = by_op
        .into_iter()
        .map(|(op, (a, kernels))| {
            let (top, top_ns) = kernels
                .into_iter()
                .max_by(|x, y| {
                    x.1.cmp(&y.1).then_with(|| {
                        graph.names[y.0 .0 as usize].cmp(&graph.names[x.0 .0 as usize])
                    })
                })
                .unwrap_or((NameId(0), 0));
            OperatorRow {
                operator: op.to_owned(),
                gpu_tasks: a.count,
                total_us: us(a.total),
                mean_us: a.mean(),
                share_pct: pct(a.total, all),
                top_kernel: graph.names.get(top.0 as usize).cloned().unwrap_or_default(),
                top_kernel_us: us(top_ns),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then(a.operator.cmp(&b.operator))
    });
    rows
}
