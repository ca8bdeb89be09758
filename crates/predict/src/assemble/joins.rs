//! The main thread's waits for backward bursts, made explicit in a
//! template before any copy is made of it.

use lumos_graph::{Anchor, DepKind, Edge, Graph, ProcId, TaskId};

use crate::discover::Structure;

/// Makes the main thread's wait for each backward burst explicit in a
/// template graph: where a main-thread unit follows a burst and no edge from
/// the autograd thread holds its first task, one is added from the burst's
/// last task, carrying the measured gap, and the program-order edge into the
/// task keeps only its own slack. On the traced times this changes nothing
/// (the hand-over binds, as it did); after an edit that lengthens or shortens
/// the burst the wait follows it, where a program-order gap would not.
/// Measured times set latencies only, as in the graph builder. Returns the
/// number of hand-overs added.
pub(crate) fn repair_joins(
    g: &mut Graph,
    measured: &lumos_graph::Measured,
    s: &Structure,
) -> usize {
    let mut added = 0;
    let backward: Vec<ProcId> = s
        .steps
        .iter()
        .flat_map(|st| st.backward.iter().copied())
        .collect();
    let mains: Vec<ProcId> = s.steps.iter().map(|st| st.main).collect();
    let mut last_burst_task: Option<TaskId> = None;
    let mut new_edges = Vec::new();
    for (u, unit) in s.units.units.iter().enumerate() {
        let Some(&first) = unit.cpu().first() else {
            continue;
        };
        if backward.contains(&unit.thread) {
            last_burst_task = unit.cpu().last().copied();
            continue;
        }
        if !mains.contains(&unit.thread) {
            continue;
        }
        let Some(from) = last_burst_task.take() else {
            continue;
        };
        // Only right after a burst.
        let prev_is_burst = u
            .checked_sub(1)
            .is_some_and(|p| backward.contains(&s.units.units[p].thread));
        if !prev_is_burst {
            continue;
        }
        let held = g.edges.iter().any(|e| {
            e.to == first
                && e.kind == DepKind::InterThread
                && backward.contains(&g.tasks[e.from.idx()].proc)
        });
        if held {
            continue;
        }
        let gap = measured.tasks[first.idx()].start_ns - measured.tasks[from.idx()].end_ns;
        if gap < 0 {
            continue;
        }
        for e in g
            .edges
            .iter_mut()
            .filter(|e| e.to == first && e.kind == DepKind::IntraThread)
        {
            let ready = measured.tasks[e.from.idx()].end_ns;
            let slack = measured.tasks[first.idx()].start_ns - ready;
            // The hand-over binds now; program order keeps no gap of its own
            // beyond what ended after the burst.
            e.latency_ns = if ready >= measured.tasks[from.idx()].end_ns {
                e.latency_ns.min(slack.max(0))
            } else {
                0
            };
        }
        new_edges.push(Edge {
            from,
            to: first,
            kind: DepKind::InterThread,
            anchor: Anchor::End,
            latency_ns: gap,
            inferred: true,
        });
        added += 1;
    }
    g.edges.extend(new_edges);
    added
}
