//! Giving each rank's own graph and measured times back from a merged job,
//! so that a joint replay need not keep the ranks' graphs next to the job
//! graph (issue 12 items 6 and 7: [`merge_owned`](super::merge_owned)
//! frees them, and per-rank reports read them back one at a time).
//!
//! Almost everything merging does to a rank is an offset (ids, ranges, its
//! window's start on the job timeline), undone by subtracting it. The few
//! things it does not undo are kept per rank in a [`RankRestore`]: the
//! rank's own name ids, its runtime dependencies (device-wide waits become
//! stream waits), the durations the job changed (rendezvous transfer
//! times, what-ifs), and, on inputs where an offset saturated, the rank
//! whole.

use rustc_hash::FxHashMap;

use super::merge::{release_moves, JobGraph};
use crate::model::*;

/// What [`JobGraph::rank_graph`] needs, beyond the job graph itself, to give
/// one rank's graph and measured times back exactly as they were merged.
/// A few bytes per name, runtime dependency and changed duration of the
/// rank (one entry per change: a task scaled twice has two); nothing per
/// unchanged task.
#[derive(Debug, Clone, Default)]
pub struct RankRestore {
    /// The rank's [`Measured::origin_ns`].
    pub(super) origin_ns: i64,
    /// The job-graph id of each of the rank's own names, in its order.
    pub(super) names: Vec<NameId>,
    /// The rank's runtime dependencies as built: merging rewrites a
    /// device-wide wait as waits on each of the device's streams, which
    /// cannot be told from waits on those streams afterwards.
    pub(super) runtime_deps: Vec<RuntimeDep>,
    /// The length of the rank's [`Graph::task_scopes`] (0 or its tasks).
    pub(super) task_scopes: usize,
    /// Each change the job made to one of the rank's durations: (the
    /// rank's own task, its duration before the change), in the order made,
    /// so a task's first entry holds the rank's own duration.
    pub(super) durations: Vec<(TaskId, i64)>,
    /// The rank as merged, kept whole where moving it onto the job
    /// timeline saturated a time or its names repeat (hostile inputs): the
    /// offsets cannot be undone there.
    pub(super) kept: Option<Box<(Graph, Measured)>>,
}

impl JobGraph {
    /// Sets task `t`'s duration, remembering the one it replaces so that
    /// [`JobGraph::rank_graph`] gives the rank's own back: every change
    /// of a merged job's durations goes through here (or
    /// [`JobGraph::scale_rank`]).
    pub fn set_duration(&mut self, t: TaskId, ns: i64) {
        let pos = self.rank_of(t);
        let (Some(part), Some(task)) = (self.ranks.get(pos), self.graph.tasks.get_mut(t.idx()))
        else {
            return;
        };
        if let Some(restore) = self.restore.get_mut(pos) {
            restore
                .durations
                .push((TaskId(t.0 - part.tasks.start), task.duration_ns));
        }
        task.duration_ns = ns;
    }

    /// Rank `pos`'s own graph and measured times (on its own window
    /// origin), exactly as they were given to [`merge`](super::merge) or
    /// [`merge_owned`](super::merge_owned), read back from the job graph
    /// and `measured` (the job's, as merging returned it). Costs one copy
    /// of the rank; `None` (never a panic) for a position out of range, a
    /// job graph not made by merging, or measured times that are not the
    /// job graph's.
    pub fn rank_graph(&self, pos: usize, measured: &Measured) -> Option<(Graph, Measured)> {
        let part = self.ranks.get(pos)?;
        let restore = self.restore.get(pos)?;
        if let Some(kept) = &restore.kept {
            return Some((**kept).clone());
        }
        let g = &self.graph;
        let range = |r: &std::ops::Range<u32>| r.start as usize..r.end as usize;
        // Every part of the rank, by its ranges: `None` (not a panic) where
        // a range is not inside the job graph or `measured`, which only a
        // job graph and measured times of different merges can give.
        let tasks = g.tasks.get(range(&part.tasks))?;
        let processors = g.processors.get(range(&part.processors))?;
        let collectives = g.collectives.get(range(&part.collectives))?;
        let steps = g.steps.get(range(&part.steps))?;
        let scopes = g.scopes.get(range(&part.scopes))?;
        let measured_tasks = measured.tasks.get(range(&part.tasks))?;
        let measured_steps = measured.step_annotations.get(range(&part.steps))?;
        let measured_scopes = measured.scopes.get(range(&part.scopes))?;
        let names = restore
            .names
            .iter()
            .map(|n| g.names.get(n.0 as usize).cloned())
            .collect::<Option<Vec<String>>>()?;
        let (t0, p0, c0, sc0) = (
            part.tasks.start,
            part.processors.start,
            part.collectives.start,
            part.scopes.start,
        );
        let local = |t: TaskId| TaskId(t.0 - t0);
        let scope = |s: ScopeId| ScopeId(s.0 - sc0);
        let rank_name = restore.rank_names();
        let name = |n: NameId| rank_name.get(&n.0).map_or(n, |&i| NameId(i));
        let edges: Vec<Edge> = g
            .edges
            .get(range(&part.edges))?
            .iter()
            .map(|e| Edge {
                from: local(e.from),
                to: local(e.to),
                ..*e
            })
            .collect();
        let mut tasks = unshifted_tasks(tasks, &edges, part.start_ns);
        for t in &mut tasks {
            t.name = name(t.name);
            t.proc = ProcId(t.proc.0 - p0);
            t.collective = t.collective.map(|c| c - c0);
        }
        // Later changes first, so each task ends with its first entry: the
        // rank's own duration.
        for &(t, ns) in restore.durations.iter().rev() {
            if let Some(task) = tasks.get_mut(t.idx()) {
                task.duration_ns = ns;
            }
        }
        let graph = Graph {
            names,
            tasks,
            processors: processors
                .iter()
                .map(|p| Processor {
                    kind: p.kind.clone(),
                    tasks: p.tasks.iter().map(|&t| local(t)).collect(),
                })
                .collect(),
            edges,
            runtime_deps: restore.runtime_deps.clone(),
            collectives: collectives.to_vec(),
            steps: steps
                .iter()
                .map(|s| Step {
                    name: s.name.clone(),
                    first_task: local(s.first_task),
                    lead_ns: s.lead_ns,
                    last_task: local(s.last_task),
                    tail_ns: s.tail_ns,
                    tasks: s.tasks.iter().map(|&t| local(t)).collect(),
                })
                .collect(),
            scopes: scopes
                .iter()
                .map(|s| Scope {
                    name: name(s.name),
                    parent: s.parent.map(scope),
                    ..s.clone()
                })
                .collect(),
            task_scopes: (0..restore.task_scopes)
                .map(|i| {
                    g.task_scopes
                        .get(t0 as usize + i)
                        .copied()
                        .flatten()
                        .map(scope)
                })
                .collect(),
        };
        let back = |spans: &[Span]| -> Vec<Span> {
            spans
                .iter()
                .map(|s| Span {
                    start_ns: s.start_ns.saturating_sub(part.start_ns),
                    end_ns: s.end_ns.saturating_sub(part.start_ns),
                })
                .collect()
        };
        let own = Measured {
            origin_ns: restore.origin_ns,
            tasks: back(measured_tasks),
            step_annotations: back(measured_steps),
            scopes: back(measured_scopes),
        };
        Some((graph, own))
    }
}

impl RankRestore {
    /// What merging a rank (its graph `g`, measured times `m`, its window
    /// moved `shift` ns into the job timeline) changes that the job graph
    /// cannot undo; `names` are the job's ids of its names.
    pub(super) fn of(g: &Graph, m: &Measured, names: Vec<NameId>, shift: i64) -> RankRestore {
        let unique = {
            let mut ids: Vec<u32> = names.iter().map(|n| n.0).collect();
            ids.sort_unstable();
            ids.windows(2).all(|w| w[0] != w[1])
        };
        let kept =
            (!unique || !moves_exactly(g, m, shift)).then(|| Box::new((g.clone(), m.clone())));
        RankRestore {
            origin_ns: m.origin_ns,
            names,
            runtime_deps: g.runtime_deps.clone(),
            task_scopes: g.task_scopes.len(),
            durations: Vec::new(),
            kept,
        }
    }

    /// The rank's own id of each of its job-graph name ids.
    fn rank_names(&self) -> FxHashMap<u32, u32> {
        self.names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.0, i as u32))
            .collect()
    }
}

/// The rank's tasks with the job timeline's shift taken off the releases
/// merging moved ([`release_moves`]: before the move those were positive
/// or unexplained, so above `shift` afterwards or unexplained; the others
/// stay at or below 0). Exact where [`moves_exactly`].
fn unshifted_tasks(tasks: &[Task], edges: &[Edge], shift: i64) -> Vec<Task> {
    let explained = explained_by_edges(tasks.len(), edges);
    tasks
        .iter()
        .zip(&explained)
        .map(|(t, &e)| {
            let mut t = t.clone();
            if release_moves(e, t.release_ns.saturating_sub(shift)) {
                t.release_ns -= shift;
            }
            t
        })
        .collect()
}

/// True when adding `shift` (never negative) to each of the rank's
/// measured times and releases saturates none of them, so that
/// subtracting it gives them back.
fn moves_exactly(g: &Graph, m: &Measured, shift: i64) -> bool {
    let limit = i64::MAX - shift.max(0);
    let spans = m
        .tasks
        .iter()
        .chain(&m.step_annotations)
        .chain(&m.scopes)
        .all(|s| s.start_ns <= limit && s.end_ns <= limit);
    spans && g.tasks.iter().all(|t| t.release_ns <= limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_task(end_ns: i64) -> (Graph, Measured) {
        let g = Graph {
            names: vec!["a".into(), "b".into()],
            tasks: vec![Task {
                kind: TaskKind::CpuOp,
                name: NameId(0),
                proc: ProcId(0),
                duration_ns: 1,
                release_ns: 5,
                collective: None,
                correlation: 0,
            }],
            ..Graph::default()
        };
        let m = Measured {
            tasks: vec![Span {
                start_ns: 0,
                end_ns,
            }],
            ..Measured::default()
        };
        (g, m)
    }

    #[test]
    fn a_rank_whose_move_saturates_or_whose_names_repeat_is_kept_whole() {
        let (g, m) = one_task(10);
        let names = vec![NameId(0), NameId(1)];
        assert!(RankRestore::of(&g, &m, names.clone(), 1_000).kept.is_none());
        let (g, m) = one_task(i64::MAX - 10);
        assert!(RankRestore::of(&g, &m, names.clone(), 10).kept.is_none());
        assert!(RankRestore::of(&g, &m, names, 11).kept.is_some());
        let (g, m) = one_task(10);
        let repeated = vec![NameId(0), NameId(0)];
        assert!(RankRestore::of(&g, &m, repeated, 0).kept.is_some());
    }
}
