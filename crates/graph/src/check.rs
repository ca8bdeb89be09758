//! Invariants every built graph must satisfy.

use crate::acyclic::{left_in_cycles, named_targets, GraphNet, Optional};
use crate::model::{DepKind, Graph, ScopeId, TaskId};

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// The edges (with processor order) form a cycle through this many tasks.
    Cycle(usize),
    /// A GPU task has more than one launch edge.
    MultipleLaunches(TaskId),
    /// An edge or processor entry points outside the task list.
    BadIndex,
    /// A task is on no processor, or on the wrong one.
    Misplaced(TaskId),
    /// A scope's parent does not come before it in [`Graph::scopes`], so
    /// walks up the scope chain that go strictly down (the report's, the
    /// compact file's reader) stop at it.
    ScopeOrder(ScopeId),
}

/// Checks acyclicity, at most one launch edge per GPU task, that every
/// task sits exactly once on its own processor, and that every scope's
/// parent comes before it.
///
/// Acyclicity is checked on the network the replay runs: edges, processor
/// order, and the runtime dependencies that name their GPU task (a blocking
/// call issues, and launches, before it waits). Stream-tail waits resolve
/// during the replay and are not part of it; the builder checks them
/// against the measured run.
pub fn check(g: &Graph) -> Vec<Violation> {
    let n = g.tasks.len();
    let mut out = Vec::new();
    let mut seen = vec![0u8; n];
    for (pi, p) in g.processors.iter().enumerate() {
        for &t in &p.tasks {
            if t.idx() >= n {
                return vec![Violation::BadIndex];
            }
            seen[t.idx()] = seen[t.idx()].saturating_add(1);
            if g.tasks[t.idx()].proc.idx() != pi {
                out.push(Violation::Misplaced(t));
            }
        }
    }
    for (i, &s) in seen.iter().enumerate() {
        if s != 1 {
            out.push(Violation::Misplaced(TaskId(i as u32)));
        }
    }
    let mut launches = vec![0u32; n];
    for e in &g.edges {
        if e.from.idx() >= n || e.to.idx() >= n {
            return vec![Violation::BadIndex];
        }
        if e.kind == DepKind::Launch {
            launches[e.to.idx()] += 1;
        }
    }
    if g.runtime_deps.iter().any(|d| d.task.idx() >= n) {
        return vec![Violation::BadIndex];
    }
    for (i, &l) in launches.iter().enumerate() {
        if l > 1 {
            out.push(Violation::MultipleLaunches(TaskId(i as u32)));
        }
    }
    for (i, s) in g.scopes.iter().enumerate() {
        if s.parent.is_some_and(|p| p.0 as usize >= i) {
            out.push(Violation::ScopeOrder(ScopeId(i as u32)));
        }
    }
    let no_times = |_: TaskId| (0, 0);
    let net = GraphNet::new(
        g,
        &[],
        |d| named_targets(g, d),
        Optional::default(),
        &no_times,
    );
    let left = left_in_cycles(&net, n);
    if left > 0 {
        out.push(Violation::Cycle(left));
    }
    out
}
