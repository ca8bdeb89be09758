//! Gradient additions that a backward copy runs and its template did not.
//!
//! PyTorch's first backward after `zero_grad(set_to_none=True)` keeps each
//! new gradient as `.grad` (its `AccumulateGrad` launches nothing); every
//! later backward of the step adds into `.grad` (`aten::add_`, one kernel
//! per parameter). A trace of one micro-batch shows only the first kind,
//! so the backwards that copies of it become after the first would run
//! without those kernels. Re-timing cannot give time to work that is not
//! there, so the copier adds it, for each gradient: a launch at the end of
//! the accumulation node (`torch::autograd::AccumulateGrad`, after what it
//! ran to keep the gradient), and its kernel right before the kernel DDP's
//! reducer runs on that same gradient
//! (`torch::distributed::reducer::mul_out`, the gradient scaled into its
//! bucket), whose launch and kernel size the addition (`retime.rs`).
//!
//! Where the reducer left no such kernel (no DDP), the addition is sized
//! from the gradient's shape: the accumulation node's `Input Dims` and
//! `Input type` give its bytes, which `retime.rs` turns into time with the
//! trace's achieved memory bandwidth. Its launch copies the last launch its
//! thread made before the node (a `cudaLaunchKernel` of the backward) and
//! its kernel goes onto that launch's stream, after what the thread had
//! launched there. Only a gradient whose node records neither shape nor a
//! known type, or a thread that launched nothing before it, is counted as
//! not modelled.

use lumos_graph::{DepKind, Graph, ScopeId, TaskId};
use rustc_hash::{FxHashMap, FxHashSet};

/// Scope name of one gradient's accumulation, from the autograd engine.
pub(crate) const ACCUMULATION: &str =
    "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad";
/// Scope name of the accumulation node itself (where `aten::add_` runs).
const NODE: &str = "torch::autograd::AccumulateGrad";
/// Scope names of DDP's reducer moving one gradient into its bucket:
/// scaled on the way (`mul_out`), or copied as it is when a communication
/// hook scales it (`copy_`). Either reads one tensor and writes one.
const SCALING: [&str; 2] = [
    "torch::distributed::reducer::mul_out",
    "torch::distributed::reducer::copy_",
];

/// One gradient that a template's backward kept without adding it, with
/// what sizes its addition: the bucket scaling, or its own bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gradient {
    /// The launch of the scaling kernel (or, sized by `bytes`, the last
    /// launch of the thread before the node): the addition's launch is
    /// timed, numbered and correlated from it.
    pub(super) launch: TaskId,
    /// The scaling kernel: the addition's kernel runs right before it. Or,
    /// sized by `bytes`, the kernel `launch` launched: the addition's
    /// kernel runs on its stream, after it.
    pub(super) kernel: TaskId,
    /// The scope the addition runs in: the accumulation node where it has
    /// a CPU task, else the accumulation.
    pub(super) scope: ScopeId,
    /// Without a scaling kernel: the gradient's bytes, from the node's
    /// recorded shape and type, which size the addition.
    pub(super) bytes: Option<u64>,
}

/// Where a template's backward kept its gradients without adding them.
#[derive(Debug, Default)]
pub(crate) struct Sites {
    /// Per CPU task that an addition's launch follows (the node's last, or
    /// the task before the scaling's launch where the node has none): the
    /// gradient.
    pub(super) after: FxHashMap<TaskId, Gradient>,
    /// Per scaling kernel, which an addition's kernel precedes: the
    /// gradient.
    pub(super) before: FxHashMap<TaskId, Gradient>,
    /// The first CPU task of each such accumulation with nothing to size
    /// an addition from: no bucket-scaling kernel, and no shape and type
    /// recorded on its node (or no launch before it on its thread).
    pub(super) unsizable: FxHashSet<TaskId>,
}

/// The sites of `g`: its gradient accumulations that launched no GPU work.
/// `idx_in_proc` is each task's position on its processor.
pub(super) fn sites(g: &Graph, idx_in_proc: &[u32]) -> Sites {
    let mut out = Sites::default();
    if g.task_scopes.len() != g.tasks.len() {
        return out;
    }
    // Per scope, parents first (as `Graph::scopes` holds them): the
    // accumulation at or above it, and the node or the reducer's scaling
    // at or above it, below that accumulation.
    let mut info: Vec<Option<Place>> = Vec::with_capacity(g.scopes.len());
    for (i, sc) in g.scopes.iter().enumerate() {
        let name = g.names[sc.name.0 as usize].as_str();
        let up = sc
            .parent
            .and_then(|p| info.get(p.0 as usize).copied().flatten());
        let here = ScopeId(i as u32);
        info.push(match (name, up) {
            (ACCUMULATION, _) => Some(Place {
                acc: here,
                node: None,
                scaling: false,
            }),
            (_, Some(p)) => Some(Place {
                node: p.node.or((name == NODE).then_some(here)),
                scaling: p.scaling || SCALING.contains(&name),
                ..p
            }),
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
            Some(p) if p.node.is_some() => {
                busy.insert(p.acc);
            }
            Some(p) if p.scaling => {
                scaled.entry(p.acc).or_insert((e.from, e.to));
            }
            _ => {}
        }
    }
    // Per accumulation kept: its first CPU task, and its node's last.
    let mut kept: FxHashMap<ScopeId, (TaskId, Option<(TaskId, ScopeId)>)> = FxHashMap::default();
    for (i, task) in g.tasks.iter().enumerate() {
        let t = TaskId(i as u32);
        let Some(p) = place(t).filter(|p| !task.kind.is_gpu() && !busy.contains(&p.acc)) else {
            continue;
        };
        let entry = kept.entry(p.acc).or_insert((t, None));
        if let Some(node) = p.node {
            entry.1 = Some((t, node));
        }
    }
    let by_shape: Vec<(ScopeId, TaskId)> = (kept.iter())
        .filter(|(acc, _)| !scaled.contains_key(acc))
        .filter_map(|(&acc, &(_, node_last))| Some((acc, node_last?.0)))
        .collect();
    let before = launches_before(g, by_shape.iter().map(|&(_, t)| t));
    for (acc, (first, node_last)) in kept {
        let Some(&(launch, kernel)) = scaled.get(&acc) else {
            // No DDP scaling: sized from the gradient's own bytes, after
            // the thread's last launch (outside this accumulation).
            let shaped = node_last.and_then(|(t, node)| {
                let bytes = node_bytes(g, node)?;
                let (launch, kernel) = *before.get(&t)?;
                let outside = place(launch).is_none_or(|p| p.acc != acc);
                outside.then_some(Gradient {
                    launch,
                    kernel,
                    scope: node,
                    bytes: Some(bytes),
                })
            });
            match (shaped, node_last) {
                (Some(gradient), Some((t, _))) => {
                    out.after.insert(t, gradient);
                }
                _ => {
                    out.unsizable.insert(first);
                }
            }
            continue;
        };
        let (after, scope) = match node_last {
            Some((t, node)) => (Some(t), node),
            None => (task_before(g, idx_in_proc, launch), acc),
        };
        let Some(after) = after else {
            out.unsizable.insert(first);
            continue;
        };
        let gradient = Gradient {
            launch,
            kernel,
            scope,
            bytes: None,
        };
        out.after.insert(after, gradient);
        out.before.insert(kernel, gradient);
    }
    out
}

/// Where a task lies among the scopes that matter here.
#[derive(Debug, Clone, Copy)]
struct Place {
    /// The gradient's accumulation.
    acc: ScopeId,
    /// The accumulation node, at or above it.
    node: Option<ScopeId>,
    /// Whether it is inside DDP's scaling into the bucket.
    scaling: bool,
}

/// The bytes of the gradient an accumulation node `node` keeps: its first
/// input's, as recorded.
fn node_bytes(g: &Graph, node: ScopeId) -> Option<u64> {
    let sc = &g.scopes[node.0 as usize];
    crate::shapes::tensor_bytes(sc.input_dims.as_ref()?, sc.input_type.as_deref(), 0)
}

/// For each of the CPU tasks `wanted`: the last launch of a GPU task on its
/// thread before it, and that GPU task. One pass over the threads.
fn launches_before(
    g: &Graph,
    wanted: impl Iterator<Item = TaskId>,
) -> FxHashMap<TaskId, (TaskId, TaskId)> {
    let wanted: FxHashSet<TaskId> = wanted.collect();
    let mut out = FxHashMap::default();
    if wanted.is_empty() {
        return out;
    }
    let mut launched: FxHashMap<TaskId, TaskId> = FxHashMap::default();
    for e in g.edges.iter().filter(|e| e.kind == DepKind::Launch) {
        if g.tasks[e.to.idx()].kind.is_gpu() {
            launched.entry(e.from).or_insert(e.to);
        }
    }
    let threads = wanted.iter().map(|t| g.tasks[t.idx()].proc);
    let threads: FxHashSet<_> = threads.collect();
    for q in threads {
        let mut last = None;
        for &t in &g.processors[q.idx()].tasks {
            if wanted.contains(&t) {
                if let Some(l) = last {
                    out.insert(t, l);
                }
            }
            if let Some(&k) = launched.get(&t) {
                last = Some((t, k));
            }
        }
    }
    out
}

/// The task before `t` on its processor, `idx_in_proc` giving each task's
/// position there.
fn task_before(g: &Graph, idx_in_proc: &[u32], t: TaskId) -> Option<TaskId> {
    let list = &g.processors[g.tasks[t.idx()].proc.idx()].tasks;
    let at = *idx_in_proc.get(t.idx())? as usize;
    at.checked_sub(1).map(|k| list[k])
}

#[cfg(test)]
mod tests {
    use lumos_graph::{
        Anchor, Edge, Graph, NameId, ProcId, ProcKind, Processor, Scope, Task, TaskKind,
    };

    use super::*;

    /// Each task's position on its processor.
    fn positions(g: &Graph) -> Vec<u32> {
        let mut at = vec![0; g.tasks.len()];
        for p in &g.processors {
            for (k, t) in p.tasks.iter().enumerate() {
                at[t.idx()] = k as u32;
            }
        }
        at
    }

    /// Three gradients' accumulations on one thread: the first kept its
    /// gradient and DDP scaled it into its bucket, the second added into
    /// `.grad`, the third kept its gradient with no reducer after it.
    fn accumulations() -> Graph {
        let names = [ACCUMULATION, NODE, SCALING[0], "aten::mul", "aten::add_"];
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
        let g = accumulations();
        let s = sites(&g, &positions(&g));
        // The launch follows the node's `detach`, and the kernel precedes the
        // scaling's, in the node's scope.
        let first = Gradient {
            launch: TaskId(1),
            kernel: TaskId(2),
            scope: ScopeId(1),
            bytes: None,
        };
        let after: Vec<_> = s.after.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(after, vec![(TaskId(0), first)]);
        let before: Vec<_> = s.before.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(before, vec![(TaskId(2), first)]);
        let unsizable: Vec<_> = s.unsizable.iter().copied().collect();
        assert_eq!(unsizable, vec![TaskId(5)]);
        // Without a task in the node, the launch follows the task before
        // the scaling's launch, in the accumulation's scope.
        let mut g = accumulations();
        g.task_scopes[0] = Some(ScopeId(0));
        let whole = Gradient {
            scope: ScopeId(0),
            ..first
        };
        assert_eq!(
            sites(&g, &positions(&g)).after.get(&TaskId(0)),
            Some(&whole)
        );
    }

    /// Without DDP's scaling, a kept gradient whose node records its shape
    /// and type is sized from its bytes: its launch follows the node's
    /// last task, copied from the thread's last launch before it (another
    /// accumulation's here), whose stream its kernel goes onto.
    #[test]
    fn a_kept_gradient_without_bucket_scaling_is_sized_from_its_shape() {
        let mut g = accumulations();
        let node = &mut g.scopes[8];
        node.input_dims = lumos_trace::InputDims::parse("[[256, 1024]]");
        node.input_type = Some(r#"["c10::BFloat16"]"#.into());
        let s = sites(&g, &positions(&g));
        assert!(s.unsizable.is_empty());
        let shaped = Gradient {
            launch: TaskId(3),
            kernel: TaskId(4),
            scope: ScopeId(8),
            bytes: Some(256 * 1024 * 2),
        };
        assert_eq!(s.after.get(&TaskId(5)), Some(&shaped));
        // Placed after a kernel, not before one.
        assert_eq!(s.before.len(), 1);
        // A type of unknown size, or no launch before it on its thread:
        // nothing to size it from.
        g.scopes[8].input_type = Some(r#"["Quaternion"]"#.into());
        assert_eq!(
            sites(&g, &positions(&g)).unsizable,
            [TaskId(5)].into_iter().collect()
        );
        g.scopes[8].input_type = Some(r#"["float"]"#.into());
        g.edges.clear();
        let s = sites(&g, &positions(&g));
        assert!(s.after.is_empty());
        assert!(s.unsizable.contains(&TaskId(5)));
    }

    /// Real DDP traces whose backward keeps every gradient (one
    /// micro-batch after `zero_grad(set_to_none=True)`: `aten::detach` in
    /// each node, DDP's `mul_out` after it): every accumulation is a site,
    /// its launch after the node's last task, its kernel the scaling's.
    #[test]
    fn every_kept_gradient_of_real_ddp_traces_is_a_site() {
        let Some(corpus) = lumos_testkit::corpus() else {
            return;
        };
        for rel in [
            "single-rank/a100-ddp-rank0of2-event-record.json.gz",
            "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
        ] {
            let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
            let (g, _, _) = lumos_graph::build(&trace);
            let named = |name: &str| {
                let n = g.names.iter().position(|x| x == name);
                (g.scopes.iter())
                    .filter(|s| Some(s.name.0 as usize) == n)
                    .count()
            };
            let s = sites(&g, &positions(&g));
            assert!(named(ACCUMULATION) > 0, "{rel}");
            assert_eq!(s.after.len(), named(ACCUMULATION), "{rel}");
            assert_eq!(s.before.len(), named(ACCUMULATION), "{rel}");
            assert!(s.unsizable.is_empty(), "{rel}");
            for (&after, gr) in &s.after {
                assert_eq!(g.name(after), "detach", "{rel}");
                assert!(g.tasks[gr.kernel.idx()].kind.is_gpu(), "{rel}");
                assert_eq!(g.names[g.scopes[gr.scope.0 as usize].name.0 as usize], NODE);
            }
        }
    }

    #[test]
    fn a_graph_without_accumulations_or_scopes_has_no_sites() {
        let mut g = accumulations();
        g.task_scopes.clear();
        assert!(sites(&g, &positions(&g)).after.is_empty());
        let mut g = accumulations();
        g.names[0] = "something else".into();
        let s = sites(&g, &positions(&g));
        assert!(s.after.is_empty() && s.before.is_empty() && s.unsizable.is_empty());
    }
}
