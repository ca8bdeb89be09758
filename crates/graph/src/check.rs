//! Invariants every built graph must satisfy.

use crate::acyclic::{left_in_cycles, named_targets, GraphNet, Optional};
use crate::model::{DepKind, Graph, Measured, ScopeId, TaskId};

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// The edges (with processor order) form a cycle: this many tasks are
    /// in it or behind it (no order of the network reaches them).
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
            Violation::Cycle(n) => write!(f, "{n} tasks are in or behind a dependency cycle"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Anchor, Edge, NameId, ProcId, ProcKind, Processor, Span, Task, TaskKind};

    /// Three CPU tasks in order on one thread, and `edges` between them.
    fn chain(edges: &[(u32, u32)]) -> Graph {
        let task = || Task {
            kind: TaskKind::CpuOp,
            name: NameId(0),
            proc: ProcId(0),
            duration_ns: 1,
            release_ns: 0,
            collective: None,
            correlation: 0,
        };
        Graph {
            names: vec!["op".into()],
            tasks: vec![task(), task(), task()],
            processors: vec![Processor {
                kind: ProcKind::Thread { pid: 1, tid: 1 },
                tasks: vec![TaskId(0), TaskId(1), TaskId(2)],
            }],
            edges: (edges.iter())
                .map(|&(from, to)| Edge {
                    from: TaskId(from),
                    to: TaskId(to),
                    kind: DepKind::InterThread,
                    anchor: Anchor::End,
                    latency_ns: 0,
                    inferred: false,
                })
                .collect(),
            ..Graph::default()
        }
    }

    fn measured(starts: &[i64]) -> Measured {
        Measured {
            tasks: (starts.iter())
                .map(|&s| Span {
                    start_ns: s,
                    end_ns: s + 1,
                })
                .collect(),
            ..Measured::default()
        }
    }

    #[test]
    fn measured_times_give_the_same_verdict_as_the_full_check() {
        let forward = measured(&[0, 10, 20]);
        // Against the processor's order in measured time, which the ranks
        // cannot prove acyclic: the full pass decides.
        let backward = measured(&[20, 10, 0]);
        let short = measured(&[0, 10]);
        for (edges, cycle) in [(&[(0, 2)][..], false), (&[(2, 0)][..], true)] {
            let g = chain(edges);
            let want = check(&g);
            assert_eq!(want.is_empty(), !cycle, "{edges:?}");
            for m in [&forward, &backward, &short] {
                assert_eq!(check_measured(&g, m), want, "{edges:?}");
            }
        }
    }

    #[test]
    fn violations_read_as_sentences() {
        let said = [
            (
                Violation::Cycle(3),
                "3 tasks are in or behind a dependency cycle",
            ),
            (
                Violation::MultipleLaunches(TaskId(7)),
                "GPU task 7 has several launches",
            ),
            (
                Violation::Misplaced(TaskId(2)),
                "task 2 is not exactly once on its own processor",
            ),
            (
                Violation::ScopeOrder(ScopeId(4)),
                "scope 4 comes before its parent",
            ),
        ];
        for (v, text) in said {
            assert_eq!(v.to_string(), text);
        }
    }
}
