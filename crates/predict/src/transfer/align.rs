//! Operator keys and the sequence alignment of two threads' CPU tasks.
//!
//! Two recordings of one program run the same operators in nearly the same
//! order, but not exactly: another software version adds or drops a call,
//! a profiler drops events, a warm-up step differs. Exact equality of the
//! sequences would match nothing after the first difference; a shortest
//! edit script (Myers' diff, from the `similar` crate: linear space,
//! O((N+M)D) time, where D is the number of differences, small for two
//! recordings of one program) matches everything else in order.

use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use lumos_graph::{Graph, ProcId, TaskId};
use rustc_hash::FxHasher;
use similar::{capture_diff_slices_deadline, Algorithm, DiffOp};

/// How long one thread pair's alignment may search before taking the best
/// script found so far. Two recordings of one program align in
/// milliseconds; only unrelated sequences (which the matched-share check
/// then refuses) get near it, so the bound keeps a wrong `--durations-from`
/// from hanging rather than shaping any accepted answer.
const ALIGN_DEADLINE: Duration = Duration::from_secs(20);

/// What makes two CPU tasks the same operator: the task's kind and name and
/// its innermost scope's name and `Input Dims`, hashed (names are interned
/// per graph, so the strings are hashed, not their ids).
pub(super) fn task_key(g: &Graph, t: TaskId) -> u64 {
    let mut h = FxHasher::default();
    let task = g.task(t);
    task.kind.hash(&mut h);
    g.name(t).hash(&mut h);
    if let Some(s) = g.scope_of(t) {
        let scope = &g.scopes[s.0 as usize];
        g.names[scope.name.0 as usize].hash(&mut h);
        scope.input_dims.hash(&mut h);
    }
    h.finish()
}

/// The keys of a thread's tasks, in program order.
pub(super) fn thread_keys(g: &Graph, p: ProcId) -> Vec<u64> {
    g.processors[p.idx()]
        .tasks
        .iter()
        .map(|&t| task_key(g, t))
        .collect()
}

/// The positions of `a` matched to positions of `b` by a shortest edit
/// script, in order.
pub(super) fn align(a: &[u64], b: &[u64]) -> Vec<(usize, usize)> {
    let deadline = Instant::now() + ALIGN_DEADLINE;
    let ops = capture_diff_slices_deadline(Algorithm::Myers, a, b, Some(deadline));
    let mut pairs = Vec::new();
    for op in ops {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            pairs.extend((0..len).map(|i| (old_index + i, new_index + i)));
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_skips_insertions_and_deletions() {
        let a = [1, 2, 3, 4, 5, 6];
        let b = [1, 9, 2, 3, 5, 6, 7];
        assert_eq!(align(&a, &b), [(0, 0), (1, 2), (2, 3), (4, 4), (5, 5)]);
        assert!(align(&a, &[]).is_empty());
        assert!(align(&[], &b).is_empty());
    }
}
