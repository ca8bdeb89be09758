//! Invariants every built graph must satisfy.

use crate::model::{DepKind, Graph, TaskId};

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
}

/// Checks acyclicity (edges plus processor order), at most one launch edge per
/// GPU task, and that every task sits exactly once on its own processor.
pub fn check(g: &Graph) -> Vec<Violation> {
    let n = g.tasks.len();
    let mut out = Vec::new();
    let mut seen = vec![0u8; n];
    for (pi, p) in g.processors.iter().enumerate() {
        for &t in &p.tasks {
            if t.idx() >= n {
                return vec![Violation::BadIndex];
            }
            seen[t.idx()] += 1;
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
    let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut indeg = vec![0u32; n];
    for e in &g.edges {
        if e.from.idx() >= n || e.to.idx() >= n {
            return vec![Violation::BadIndex];
        }
        if e.kind == DepKind::Launch {
            launches[e.to.idx()] += 1;
        }
        succ[e.from.idx()].push(e.to.0);
        indeg[e.to.idx()] += 1;
    }
    for p in &g.processors {
        for w in p.tasks.windows(2) {
            succ[w[0].idx()].push(w[1].0);
            indeg[w[1].idx()] += 1;
        }
    }
    for (i, &l) in launches.iter().enumerate() {
        if l > 1 {
            out.push(Violation::MultipleLaunches(TaskId(i as u32)));
        }
    }
    let mut queue: Vec<u32> = (0..n as u32).filter(|&i| indeg[i as usize] == 0).collect();
    let mut done = 0;
    while let Some(t) = queue.pop() {
        done += 1;
        for &s in &succ[t as usize] {
            indeg[s as usize] -= 1;
            if indeg[s as usize] == 0 {
                queue.push(s);
            }
        }
    }
    if done < n {
        out.push(Violation::Cycle(n - done));
    }
    out
}
