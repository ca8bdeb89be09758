//! The steps after every unit is copied: the hand-overs from backward
//! bursts to the main thread, the forward edges, the steps, the final
//! numbering and the processors left unused.

use lumos_graph::{Anchor, DepKind, Edge, Graph, ProcId, Step, TaskId, WaitTarget};
use rustc_hash::{FxHashMap, FxHashSet};

use super::copy::Emitted;
use super::{PassKind, Tag, Template};

/// The primary template's typical hand-over latency from another thread
/// to its main thread: the median of those edges' latencies.
pub(super) fn handover_latency(pt: &Template) -> i64 {
    let pt_main = pt
        .structure
        .steps
        .iter()
        .map(|s| s.main)
        .collect::<Vec<_>>();
    let mut lat: Vec<i64> = pt
        .graph
        .edges
        .iter()
        .filter(|e| e.kind == DepKind::InterThread)
        .filter(|e| {
            pt_main.contains(&pt.graph.tasks[e.to.idx()].proc)
                && !pt_main.contains(&pt.graph.tasks[e.from.idx()].proc)
        })
        .map(|e| e.latency_ns)
        .collect();
    lat.sort_unstable();
    lat.get(lat.len() / 2).copied().unwrap_or(0)
}

/// The main thread waits for each backward burst to end: the first
/// main-thread unit after a burst gets an edge from the burst's last task,
/// with `latency`, unless it came after a burst in its template too (it
/// brought that edge along, or the trace showed none). `threads` are the
/// new graph's main and backward threads.
pub(super) fn add_handovers(
    g: &mut Graph,
    have: &mut FxHashSet<(TaskId, TaskId, DepKind)>,
    emitted: &[Emitted],
    (main, bwd): (ProcId, ProcId),
    latency: i64,
) {
    let mut burst_end: Option<TaskId> = None;
    for e in emitted {
        let Some((first, last, proc)) = e.cpu else {
            continue;
        };
        let in_backward = matches!(e.tag.pass, Some((PassKind::Backward, _)));
        if proc == bwd && in_backward {
            burst_end = Some(last);
        } else if proc == main {
            if let Some(from) = burst_end.take() {
                if !e.after_burst && have.insert((from, first, DepKind::InterThread)) {
                    g.edges.push(Edge {
                        from,
                        to: first,
                        kind: DepKind::InterThread,
                        anchor: Anchor::End,
                        latency_ns: latency,
                        inferred: true,
                    });
                }
            }
        }
    }
}

/// The edges that left a unit for the task right after it on another
/// processor, to whatever now runs there, where the graph lacks them.
pub(super) fn add_forward_edges(
    g: &mut Graph,
    have: &mut FxHashSet<(TaskId, TaskId, DepKind)>,
    forward: Vec<(TaskId, ProcId, usize, Edge)>,
) {
    for (from, q, at, e) in forward {
        if let Some(&to) = g.processors[q.idx()].tasks.get(at) {
            if to != from && have.insert((from, to, e.kind)) {
                g.edges.push(Edge { from, to, ..e });
            }
        }
    }
}

/// The steps of the primary template `pg` (template `primary`) whose
/// first and last tasks were copied, in their order, with the new tasks
/// tagged with each.
pub(super) fn primary_steps(
    pg: &Graph,
    primary: u32,
    step_tasks: &FxHashMap<(u32, u32, TaskId), TaskId>,
    mut step_members: FxHashMap<u32, Vec<TaskId>>,
) -> Vec<Step> {
    let mut steps = Vec::new();
    for (si, s) in pg.steps.iter().enumerate() {
        let si = si as u32;
        let (Some(&first), Some(&last)) = (
            step_tasks.get(&(si, primary, s.first_task)),
            step_tasks.get(&(si, primary, s.last_task)),
        ) else {
            continue;
        };
        let mut tasks = step_members.remove(&si).unwrap_or_default();
        tasks.sort_unstable();
        steps.push(Step {
            name: s.name.clone(),
            first_task: first,
            lead_ns: s.lead_ns,
            last_task: last,
            tail_ns: s.tail_ns,
            tasks,
        });
    }
    steps
}

/// Numbers tasks by (template, original id, copy), the primary template
/// first, so that the identity plan gives the original numbering back;
/// collectives follow their tasks. Returns each task's origin and tag in
/// the new numbering.
pub(super) fn renumber(
    g: &mut Graph,
    origin: &[(u32, TaskId)],
    tag_of: &[Tag],
    copy_no: &[u32],
    primary: u32,
) -> (Vec<(u32, TaskId)>, Vec<Tag>) {
    let n = g.tasks.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| {
        let (src, t) = origin[i as usize];
        (src != primary, src, t, copy_no[i as usize])
    });
    let mut new_of = vec![0u32; n];
    for (k, &old) in order.iter().enumerate() {
        new_of[old as usize] = k as u32;
    }
    let map = |t: TaskId| TaskId(new_of[t.idx()]);
    let mut tasks = Vec::with_capacity(n);
    let mut origin2 = Vec::with_capacity(n);
    let mut tag2 = Vec::with_capacity(n);
    let mut scopes2 = Vec::with_capacity(g.task_scopes.len());
    for &old in &order {
        tasks.push(g.tasks[old as usize].clone());
        origin2.push(origin[old as usize]);
        tag2.push(tag_of[old as usize]);
        if !g.task_scopes.is_empty() {
            scopes2.push(g.task_scopes[old as usize]);
        }
    }
    g.tasks = tasks;
    g.task_scopes = scopes2;
    // Collectives in the order of their tasks.
    let mut colls = Vec::with_capacity(g.collectives.len());
    for t in &mut g.tasks {
        if let Some(c) = t.collective {
            colls.push(g.collectives[c as usize].clone());
            t.collective = Some(colls.len() as u32 - 1);
        }
    }
    g.collectives = colls;
    for p in &mut g.processors {
        for t in &mut p.tasks {
            *t = map(*t);
        }
    }
    for e in &mut g.edges {
        e.from = map(e.from);
        e.to = map(e.to);
    }
    g.edges.sort_by_key(|e| (e.to, e.from, e.kind));
    for d in &mut g.runtime_deps {
        d.task = map(d.task);
        if let WaitTarget::Task(x) = d.target {
            d.target = WaitTarget::Task(map(x));
        }
    }
    g.runtime_deps.sort_by_key(|d| d.task);
    for s in &mut g.steps {
        s.first_task = map(s.first_task);
        s.last_task = map(s.last_task);
        for t in &mut s.tasks {
            *t = map(*t);
        }
        s.tasks.sort_unstable();
    }
    (origin2, tag2)
}

/// Drops the processors no task runs on (their ids shift).
pub(super) fn drop_unused_processors(g: &mut Graph) {
    let used: Vec<bool> = g.processors.iter().map(|p| !p.tasks.is_empty()).collect();
    if used.iter().all(|&u| u) {
        return;
    }
    let mut remap = vec![ProcId(0); used.len()];
    let mut procs = Vec::new();
    for (i, p) in g.processors.drain(..).enumerate() {
        if used[i] {
            remap[i] = ProcId(procs.len() as u32);
            procs.push(p);
        }
    }
    g.processors = procs;
    for t in &mut g.tasks {
        t.proc = remap[t.proc.idx()];
    }
    for d in &mut g.runtime_deps {
        if let WaitTarget::StreamTail(s) = d.target {
            d.target = WaitTarget::StreamTail(remap[s.idx()]);
        }
    }
}
