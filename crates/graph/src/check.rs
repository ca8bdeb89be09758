//! Invariants every built graph must satisfy.

use crate::acyclic::{left_in_cycles, named_targets, GraphNet, Optional};
use crate::model::{DepKind, Graph, Measured, ScopeId, TaskId};

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

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::Cycle(n) => write!(f, "its dependencies form a cycle through {n} tasks"),
            Violation::MultipleLaunches(t) => write!(f, "GPU task {} has several launches", t.0),
            Violation::BadIndex => {
                write!(f, "an edge or a processor names a task that is not there")
            }
            Violation::Misplaced(t) => {
                write!(f, "task {} is not exactly once on its own processor", t.0)
            }
            Violation::ScopeOrder(s) => write!(f, "scope {} comes before its parent", s.0),
        }
    }
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
    check_on(g, None)
}

/// [`check`], with the measured times of the run the graph was built
/// from: where every dependency goes forward in measured time, which
/// proves the network acyclic, the check walks the arcs once instead of
/// making the full pass (what reading a stored graph pays for checking
/// it). Times of the wrong length are ignored.
pub fn check_measured(g: &Graph, measured: &Measured) -> Vec<Violation> {
    check_on(
        g,
        (measured.tasks.len() == g.tasks.len()).then_some(measured),
    )
}

fn check_on(g: &Graph, measured: Option<&Measured>) -> Vec<Violation> {
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
    let times = |t: TaskId| match measured {
        Some(m) => (m.tasks[t.idx()].start_ns, m.tasks[t.idx()].end_ns),
        None => (0, 0),
    };
    let net = GraphNet::new(g, &[], |d| named_targets(g, d), Optional::default(), &times);
    let net = match measured {
        Some(_) => net.ranked_by_times(),
        None => net,
    };
    let left = left_in_cycles(&net, n);
    if left > 0 {
        out.push(Violation::Cycle(left));
    }
    out
}
