//! Gradient additions that a backward copy runs and its template did not.
//!
//! PyTorch's first backward after `zero_grad(set_to_none=True)` keeps each
//! new gradient as `.grad` (its `AccumulateGrad` launches nothing); every
//! later backward of the step adds into `.grad` (`aten::add_`, one kernel
//! per parameter). A trace of one micro-batch shows only the first kind,
//! so the backwards that copies of it become after the first would run
//! without those kernels. Re-timing cannot give time to work that is not
//! there, so the copier adds it: for each gradient, a launch and a kernel
//! right before the kernel DDP's reducer runs on that same gradient
//! (`torch::distributed::reducer::mul_out`, the gradient scaled into its
//! bucket), whose shapes and measured time size the addition
//! (`retime.rs`). Where the reducer left no such kernel, the additions are
//! counted as not modelled.

use lumos_graph::{DepKind, Graph, ScopeId, TaskId};
use rustc_hash::{FxHashMap, FxHashSet};

/// Scope name of one gradient's accumulation, from the autograd engine.
const ACCUMULATION: &str = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad";
/// Scope name of the accumulation node itself (where `aten::add_` runs).
const NODE: &str = "torch::autograd::AccumulateGrad";
/// Scope name of DDP's reducer scaling one gradient into its bucket.
const SCALING: &str = "torch::distributed::reducer::mul_out";

/// Where a template's backward kept its gradients without adding them.
#[derive(Debug, Default)]
pub(crate) struct Sites {
    /// Per launch of a bucket-scaling kernel of such a gradient: the
    /// kernel, and the gradient's accumulation scope.
    pub(super) launch: FxHashMap<TaskId, (TaskId, ScopeId)>,
    /// The accumulation scope of each of those kernels.
    pub(super) kernel: FxHashMap<TaskId, ScopeId>,
    /// The first CPU task of each such accumulation with no
    /// bucket-scaling kernel to size an addition from.
    pub(super) unsizable: FxHashSet<TaskId>,
}

impl Sites {
    /// Whether task `t` has an addition made before it in a copy that needs
    /// them.
    pub(super) fn before(&self, t: TaskId) -> bool {
        self.launch.contains_key(&t) || self.kernel.contains_key(&t)
    }

    /// The accumulation scope of the addition made before task `t`.
    pub(super) fn scope(&self, t: TaskId) -> Option<ScopeId> {
        (self.launch.get(&t).map(|x| x.1)).or_else(|| self.kernel.get(&t).copied())
    }
}

/// The sites of `g`: its gradient accumulations that launched no GPU work.
pub(super) fn sites(g: &Graph) -> Sites {
    let mut out = Sites::default();
    if g.task_scopes.len() != g.tasks.len() {
        return out;
    }
    // Per scope, parents first (as `Graph::scopes` holds them): the
    // accumulation at or above it, and whether it lies inside the node
    // itself or inside the reducer's scaling, below that accumulation.
    let mut info: Vec<Option<(ScopeId, bool, bool)>> = Vec::with_capacity(g.scopes.len());
    for (i, sc) in g.scopes.iter().enumerate() {
        let name = g.names[sc.name.0 as usize].as_str();
        let up = sc
            .parent
            .and_then(|p| info.get(p.0 as usize).copied().flatten());
        info.push(match (name, up) {
            (ACCUMULATION, _) => Some((ScopeId(i as u32), false, false)),
            (_, Some((acc, node, scaling))) => {
                Some((acc, node || name == NODE, scaling || name == SCALING))
            }
            (_, None) => None,
        });
    }
    if info.iter().all(Option::is_none) {
        return out;
    }
    let place = |t: TaskId| g.scope_of(t).and_then(|s| info[s.0 as usize]);
    let mut busy: FxHashSet<ScopeId> = FxHashSet::default();
    let mut scaled: FxHashMap<ScopeId, (TaskId, TaskId)> = FxHashMap::default();
    for e in g.edges.iter().filter(|e| e.kind == DepKind::Launch) {
        match place(e.from) {
            Some((acc, true, _)) => {
                busy.insert(acc);
            }
            Some((acc, false, true)) => {
                scaled.entry(acc).or_insert((e.from, e.to));
            }
            _ => {}
        }
    }
    let mut seen: FxHashSet<ScopeId> = FxHashSet::default();
    for (i, task) in g.tasks.iter().enumerate() {
        if task.kind.is_gpu() {
            continue;
        }
        let t = TaskId(i as u32);
        let Some((acc, _, _)) = place(t) else {
            continue;
        };
        if busy.contains(&acc) || !seen.insert(acc) {
            continue;
        }
        match scaled.get(&acc) {
            Some(&(launch, kernel)) => {
                out.launch.insert(launch, (kernel, acc));
                out.kernel.insert(kernel, acc);
            }
            None => {
                out.unsizable.insert(t);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use lumos_graph::{
        Anchor, Edge, Graph, NameId, ProcId, ProcKind, Processor, Scope, Task, TaskKind,
    };

    use super::*;

    /// Three gradients' accumulations on one thread: the first kept its
    /// gradient and DDP scaled it into its bucket, the second added into
    /// `.grad`, the third kept its gradient with no reducer after it.
    fn accumulations() -> Graph {
        let names = [ACCUMULATION, NODE, SCALING, "aten::mul", "aten::add_"];
        let mut g = Graph {
            names: names.iter().map(|s| s.to_string()).collect(),
            ..Graph::default()
        };
        let scope = |name: u32, parent: Option<u32>| Scope {
            name: NameId(name),
            parent: parent.map(ScopeId),
            annotation: false,
            input_dims: None,
            input_type: None,
        };
        g.scopes = vec![
            scope(0, None),
            scope(1, Some(0)),
            scope(2, Some(0)),
            scope(3, Some(2)),
            scope(0, None),
            scope(1, Some(4)),
            scope(4, Some(5)),
            scope(0, None),
            scope(1, Some(7)),
        ];
        let task = |kind, proc| Task {
            kind,
            name: NameId(0),
            proc: ProcId(proc),
            duration_ns: 1_000,
            release_ns: 0,
            collective: None,
            correlation: 0,
        };
        use TaskKind::{CpuOp, Kernel, Runtime};
        g.tasks = vec![
            task(CpuOp, 0),
            task(Runtime, 0),
            task(Kernel, 1),
            task(Runtime, 0),
            task(Kernel, 1),
            task(CpuOp, 0),
        ];
        g.task_scopes = [1, 3, 3, 6, 6, 8]
            .into_iter()
            .map(|s| Some(ScopeId(s)))
            .collect();
        g.processors = vec![
            Processor {
                kind: ProcKind::Thread { pid: 1, tid: 1 },
                tasks: [0, 1, 3, 5].map(TaskId).to_vec(),
            },
            Processor {
                kind: ProcKind::Stream {
                    device: 0,
                    stream: 7,
                },
                tasks: [2, 4].map(TaskId).to_vec(),
            },
        ];
        let launch = |from, to| Edge {
            from: TaskId(from),
            to: TaskId(to),
            kind: DepKind::Launch,
            anchor: Anchor::Start,
            latency_ns: 0,
            inferred: false,
        };
        g.edges = vec![launch(1, 2), launch(3, 4)];
        g
    }

    #[test]
    fn additions_go_where_a_gradient_was_kept_and_its_bucket_scaling_sizes_them() {
        let s = sites(&accumulations());
        let launches: Vec<_> = s.launch.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(launches, vec![(TaskId(1), (TaskId(2), ScopeId(0)))]);
        assert_eq!(s.kernel.get(&TaskId(2)), Some(&ScopeId(0)));
        assert_eq!(s.kernel.len(), 1);
        assert!(s.before(TaskId(1)) && s.before(TaskId(2)) && !s.before(TaskId(3)));
        assert_eq!(s.scope(TaskId(2)), Some(ScopeId(0)));
        assert_eq!(
            s.unsizable.iter().copied().collect::<Vec<_>>(),
            vec![TaskId(5)]
        );
    }

    #[test]
    fn a_graph_without_accumulations_or_scopes_has_no_sites() {
        let mut g = accumulations();
        g.task_scopes.clear();
        assert!(sites(&g).launch.is_empty());
        let mut g = accumulations();
        g.names[0] = "something else".into();
        let s = sites(&g);
        assert!(s.launch.is_empty() && s.kernel.is_empty() && s.unsizable.is_empty());
    }
}
