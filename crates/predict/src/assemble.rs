//! Building a new graph from a sequence of units copied out of template
//! graphs: the one mechanism behind every structural edit (layers cloned or
//! removed, micro-batches added, passes reordered, stages rebuilt).
//!
//! The new graph runs the units in the order given. Each unit brings its
//! tasks, its internal edges and its blocking calls as they were. An edge
//! that enters a unit from outside it is re-attached *by position*: if its
//! source was the `r`-th task before the unit on the source's thread or
//! stream, the new source is the `r`-th task before the copy on that
//! processor of the new graph. For `r = 0` (the usual case: program order,
//! "the last kernel on the compute stream", "the thread that handed over")
//! this is whatever now runs there, which is the dependency's meaning; for
//! `r > 0` the task there must have the same name (or one within a few
//! positions does), else the edge is dropped and counted. A blocking call
//! waiting for a specific GPU task (a launch that found the queue full waits
//! for the kernel about a thousand launches back) keeps the position alone:
//! what it waits for is "that many kernels back", whatever their names. Latencies come
//! with the edges, so the measured gaps between operators, layers and passes
//! survive; nothing here reads a measured time.
//!
//! Edges that *leave* a unit for the task right after it on another
//! processor (a receive that the compute stream then waits for) are
//! re-attached the same way, forward, so that a unit copied from one
//! template still holds up what follows it when that comes from another
//! template. Where both views give the same edge, the one from the target's
//! side is kept.
//!
//! One dependency is structural rather than copied: `loss.backward()`
//! blocks the main thread until the autograd thread is done, so after a
//! backward burst the next main-thread unit waits for the burst's last task.
//! A unit that followed a burst in its template brings that edge along (or
//! the trace showed none); one that did not (a forward copied from the
//! warm-up, where it followed a forward) gets it added, with the primary
//! template's typical hand-over latency from the autograd thread.
//!
//! The identity sequence (every unit once, in its own order) gives back the
//! graph it came from, task for task: new tasks are numbered by (template,
//! task id, copy), which for the identity is the original numbering.

use lumos_graph::{
    Collective, DepKind, Edge, Graph, NameId, ProcId, ProcKind, Processor, RuntimeDep, Scope,
    ScopeId, Step, Task, TaskId, WaitTarget,
};
use rustc_hash::FxHashMap;

use crate::discover::{PassKind, Role, Structure};
use crate::units::NO_UNIT;

/// How far around the expected position a re-attached source with the same
/// name is looked for.
const NAME_SEARCH: usize = 64;

/// One unit of a template graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnitRef {
    /// Index of the template.
    pub src: u32,
    /// Unit index in its [`Structure::units`].
    pub unit: u32,
}

/// What a unit copy is in the new graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag {
    /// The new step it belongs to (index into the primary template's
    /// steps), if any.
    pub step: Option<u32>,
    /// The pass it belongs to: kind and micro-batch.
    pub pass: Option<(PassKind, u32)>,
    /// In the prologue or epilogue of its step (otherwise in a pass or
    /// outside any step).
    pub setup: bool,
}

/// A template: its graph and its discovered structure.
pub(crate) struct Template<'a> {
    pub graph: &'a Graph,
    pub structure: &'a Structure,
}

/// The new graph and where each of its tasks came from.
pub(crate) struct Assembled {
    pub graph: Graph,
    /// Template index and task of each new task.
    pub origin: Vec<(u32, TaskId)>,
    /// The tag of each new task's unit.
    pub tag: Vec<Tag>,
    /// Edges that could not be re-attached.
    pub dropped_edges: usize,
}

/// Per-template lookups.
struct Prepared<'a> {
    t: &'a Template<'a>,
    /// Index of each task in its processor's list.
    idx_in_proc: Vec<u32>,
    /// Per processor: the unit of each of its tasks (non-decreasing).
    proc_units: Vec<Vec<u32>>,
    /// Incoming edges per task.
    incoming: Vec<Vec<u32>>,
    /// Outgoing edges per task.
    outgoing: Vec<Vec<u32>>,
    /// Runtime dependencies per task.
    rt: FxHashMap<TaskId, Vec<u32>>,
    /// New processor of each template processor.
    proc_map: Vec<ProcId>,
    /// New name of each template name.
    name_map: Vec<NameId>,
    /// Offset of this template's scopes in the new graph.
    scope_off: u32,
}

/// Role key of a processor, to map processors across templates: the step's
/// main thread, its backward thread, or a stream by id.
fn proc_key(t: &Template, p: usize) -> String {
    match t.graph.processors[p].kind {
        ProcKind::Stream { stream, .. } => format!("stream {stream}"),
        ProcKind::Thread { tid, .. } => {
            let pid = ProcId(p as u32);
            if t.structure.steps.iter().any(|s| s.main == pid) {
                "main".into()
            } else if t.structure.steps.iter().any(|s| s.backward.contains(&pid)) {
                "backward".into()
            } else {
                format!("thread {tid}")
            }
        }
    }
}

/// Builds the graph that runs `plan` (units with their tags, in order).
/// Processors, names and steps follow `templates[primary]`; processors the
/// other templates have beyond those are added.
pub(crate) fn assemble(
    templates: &[Template],
    primary: usize,
    plan: &[(UnitRef, Tag)],
) -> Assembled {
    let mut g = Graph::default();
    // Processors: the primary's, then any others by role key.
    let mut keys: FxHashMap<String, ProcId> = FxHashMap::default();
    let pt = &templates[primary];
    for (i, p) in pt.graph.processors.iter().enumerate() {
        keys.insert(proc_key(pt, i), ProcId(i as u32));
        g.processors.push(Processor {
            kind: p.kind.clone(),
            tasks: Vec::new(),
        });
    }
    // Names: the primary's as they are, others interned.
    g.names = pt.graph.names.clone();
    let mut name_ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut prepared: Vec<Prepared> = Vec::with_capacity(templates.len());
    for (ti, t) in templates.iter().enumerate() {
        let proc_map: Vec<ProcId> = (0..t.graph.processors.len())
            .map(|i| {
                let key = proc_key(t, i);
                *keys.entry(key).or_insert_with(|| {
                    g.processors.push(Processor {
                        kind: t.graph.processors[i].kind.clone(),
                        tasks: Vec::new(),
                    });
                    ProcId(g.processors.len() as u32 - 1)
                })
            })
            .collect();
        let name_map: Vec<NameId> = if ti == primary {
            (0..t.graph.names.len() as u32).map(NameId).collect()
        } else {
            if name_ids.is_empty() {
                for (i, n) in g.names.iter().enumerate() {
                    name_ids.entry(n.clone()).or_insert(i as u32);
                }
            }
            t.graph
                .names
                .iter()
                .map(|n| {
                    let next = g.names.len() as u32;
                    NameId(*name_ids.entry(n.clone()).or_insert_with(|| {
                        g.names.push(n.clone());
                        next
                    }))
                })
                .collect()
        };
        let n = t.graph.tasks.len();
        let mut idx_in_proc = vec![0u32; n];
        let mut proc_units = Vec::with_capacity(t.graph.processors.len());
        for p in &t.graph.processors {
            let mut us = Vec::with_capacity(p.tasks.len());
            for (k, &task) in p.tasks.iter().enumerate() {
                idx_in_proc[task.idx()] = k as u32;
                us.push(t.structure.units.unit_of[task.idx()]);
            }
            proc_units.push(us);
        }
        let mut incoming = vec![Vec::new(); n];
        let mut outgoing = vec![Vec::new(); n];
        for (k, e) in t.graph.edges.iter().enumerate() {
            incoming[e.to.idx()].push(k as u32);
            outgoing[e.from.idx()].push(k as u32);
        }
        let mut rt: FxHashMap<TaskId, Vec<u32>> = FxHashMap::default();
        for (k, d) in t.graph.runtime_deps.iter().enumerate() {
            rt.entry(d.task).or_default().push(k as u32);
        }
        let scope_off = g.scopes.len() as u32;
        g.scopes.extend(t.graph.scopes.iter().map(|s| Scope {
            name: name_map[s.name.0 as usize],
            parent: s.parent.map(|p| ScopeId(p.0 + scope_off)),
            ..s.clone()
        }));
        prepared.push(Prepared {
            t,
            idx_in_proc,
            proc_units,
            incoming,
            outgoing,
            rt,
            proc_map,
            name_map,
            scope_off,
        });
    }

    let mut origin: Vec<(u32, TaskId)> = Vec::new();
    let mut tag_of: Vec<Tag> = Vec::new();
    let mut copy_no: Vec<u32> = Vec::new();
    let mut copies: FxHashMap<(u32, TaskId), u32> = FxHashMap::default();
    let mut dropped = 0usize;
    let mut task_scopes: Vec<Option<ScopeId>> = Vec::new();
    // (step, template first/last task) -> new task, for the new steps.
    let mut step_tasks: FxHashMap<(u32, u32, TaskId), TaskId> = FxHashMap::default();
    let mut step_members: FxHashMap<u32, Vec<TaskId>> = FxHashMap::default();
    // Edges leaving a unit for the next task on another processor: (new
    // source, target processor, its length after the unit, template edge).
    let mut forward: Vec<(TaskId, ProcId, usize, Edge)> = Vec::new();
    // Correlation ids: a copy gets fresh ones (shared by a launch and its
    // kernels, which are in one unit), so that the written timeline links
    // each launch to its own kernels; the first use of an id keeps it.
    let mut corr_used: FxHashMap<u64, u32> = FxHashMap::default();
    let mut next_corr: u64 = templates
        .iter()
        .flat_map(|t| t.graph.tasks.iter().map(|x| x.correlation))
        .max()
        .unwrap_or(0)
        + 1;
    // First and last CPU task of each emitted unit, and its thread.
    let mut unit_cpu: Vec<Option<(TaskId, TaskId, ProcId)>> = Vec::with_capacity(plan.len());
    for &(uref, tag) in plan {
        let p = &prepared[uref.src as usize];
        let tg = p.t.graph;
        let unit = &p.t.structure.units.units[uref.unit as usize];
        // Where the copy starts on every processor, before it adds tasks.
        let base_len: Vec<usize> = g.processors.iter().map(|pr| pr.tasks.len()).collect();
        let mut new_id: FxHashMap<TaskId, TaskId> = FxHashMap::default();
        let mut corr_here: FxHashMap<u64, u64> = FxHashMap::default();
        for &t in &unit.tasks {
            let task = &tg.tasks[t.idx()];
            let correlation = match task.correlation {
                0 => 0,
                c => *corr_here
                    .entry(c)
                    .or_insert_with(|| match corr_used.get(&c) {
                        Some(&src) if src != uref.src || copies.contains_key(&(uref.src, t)) => {
                            next_corr += 1;
                            next_corr - 1
                        }
                        _ => {
                            corr_used.insert(c, uref.src);
                            c
                        }
                    }),
            };
            let id = TaskId(g.tasks.len() as u32);
            let proc = p.proc_map[task.proc.idx()];
            let collective = task.collective.map(|c| {
                let cl: Collective = tg.collectives[c as usize].clone();
                g.collectives.push(cl);
                g.collectives.len() as u32 - 1
            });
            g.tasks.push(Task {
                name: p.name_map[task.name.0 as usize],
                proc,
                collective,
                correlation,
                ..task.clone()
            });
            g.processors[proc.idx()].tasks.push(id);
            task_scopes.push(tg.scope_of(t).map(|s| ScopeId(s.0 + p.scope_off)));
            new_id.insert(t, id);
            let n = copies.entry((uref.src, t)).or_insert(0);
            copy_no.push(*n);
            *n += 1;
            origin.push((uref.src, t));
            tag_of.push(tag);
            if let Some(si) = tag.step {
                step_tasks.entry((si, uref.src, t)).or_insert(id);
                step_members.entry(si).or_default().push(id);
            }
        }
        unit_cpu.push(match (unit.cpu().first(), unit.cpu().last()) {
            (Some(a), Some(b)) => Some((
                new_id[a],
                new_id[b],
                p.proc_map[tg.tasks[a.idx()].proc.idx()],
            )),
            _ => None,
        });
        // Re-attaches a source outside the unit by its position before it;
        // `by_name` asks for the same name when it is not the task right
        // before.
        let reattach = |g: &Graph, s: TaskId, by_name: bool| -> Option<TaskId> {
            let q = tg.tasks[s.idx()].proc;
            let here = p.proc_units[q.idx()].partition_point(|&u| u < uref.unit);
            let i_s = p.idx_in_proc[s.idx()] as usize;
            if i_s >= here {
                return None;
            }
            let r = here - 1 - i_s;
            let q2 = p.proc_map[q.idx()];
            let base = base_len[q2.idx()];
            let list = &g.processors[q2.idx()].tasks;
            if base < r + 1 {
                return None;
            }
            let cand = list[base - 1 - r];
            if r == 0 || !by_name {
                return Some(cand);
            }
            let want = &tg.names[tg.tasks[s.idx()].name.0 as usize];
            let named = |c: TaskId| g.names[g.tasks[c.idx()].name.0 as usize] == *want;
            if named(cand) {
                return Some(cand);
            }
            let center = base - 1 - r;
            (1..=NAME_SEARCH)
                .flat_map(|k| {
                    [
                        center.checked_sub(k),
                        Some(center + k).filter(|&i| i < base),
                    ]
                })
                .flatten()
                .map(|i| list[i])
                .find(|&c| named(c))
        };
        for &t in &unit.tasks {
            let to = new_id[&t];
            for &ei in &p.incoming[t.idx()] {
                let e = tg.edges[ei as usize];
                let from = match new_id.get(&e.from) {
                    Some(&f) => Some(f),
                    None if p.t.structure.units.unit_of[e.from.idx()] == NO_UNIT => None,
                    None => reattach(&g, e.from, true),
                };
                match from {
                    Some(from) if from != to => g.edges.push(Edge { from, to, ..e }),
                    _ => dropped += 1,
                }
            }
            for &ei in &p.outgoing[t.idx()] {
                let e = tg.edges[ei as usize];
                if new_id.contains_key(&e.to) || p.t.structure.units.unit_of[e.to.idx()] == NO_UNIT
                {
                    continue;
                }
                // Only to the first task after the unit on the target's
                // processor.
                let q = tg.tasks[e.to.idx()].proc;
                let after = p.proc_units[q.idx()].partition_point(|&u| u <= uref.unit);
                if p.idx_in_proc[e.to.idx()] as usize != after {
                    continue;
                }
                let q2 = p.proc_map[q.idx()];
                forward.push((to, q2, g.processors[q2.idx()].tasks.len(), e));
            }
            if let Some(ds) = p.rt.get(&t) {
                for &di in ds {
                    let d = tg.runtime_deps[di as usize];
                    let target = match d.target {
                        WaitTarget::StreamTail(s) => {
                            Some(WaitTarget::StreamTail(p.proc_map[s.idx()]))
                        }
                        WaitTarget::DeviceTail(dev) => Some(WaitTarget::DeviceTail(dev)),
                        WaitTarget::Task(x) => new_id
                            .get(&x)
                            .copied()
                            .or_else(|| reattach(&g, x, false))
                            .map(WaitTarget::Task),
                    };
                    match target {
                        Some(target) => g.runtime_deps.push(RuntimeDep {
                            task: to,
                            target,
                            latency_ns: d.latency_ns,
                        }),
                        None => dropped += 1,
                    }
                }
            }
        }
    }

    let mut have: rustc_hash::FxHashSet<(TaskId, TaskId, DepKind)> =
        g.edges.iter().map(|e| (e.from, e.to, e.kind)).collect();
    // The main thread waits for each backward burst to end.
    if let (Some(&main), Some(&bwd)) = (keys.get("main"), keys.get("backward")) {
        let handover = {
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
        };
        // Whether a template unit came right after a backward-thread unit.
        let after_burst = |uref: UnitRef| -> bool {
            let t = prepared[uref.src as usize].t;
            uref.unit.checked_sub(1).is_some_and(|prev| {
                let th = t.structure.units.units[prev as usize].thread;
                t.structure.steps.iter().any(|s| s.backward.contains(&th))
            })
        };
        let mut burst_end: Option<TaskId> = None;
        for (k, &(uref, tag)) in plan.iter().enumerate() {
            let Some((first, last, proc)) = unit_cpu[k] else {
                continue;
            };
            let in_backward = matches!(tag.pass, Some((PassKind::Backward, _)));
            if proc == bwd && in_backward {
                burst_end = Some(last);
            } else if proc == main {
                if let Some(from) = burst_end.take() {
                    if !after_burst(uref) && have.insert((from, first, DepKind::InterThread)) {
                        g.edges.push(Edge {
                            from,
                            to: first,
                            kind: DepKind::InterThread,
                            anchor: lumos_graph::Anchor::End,
                            latency_ns: handover,
                        });
                    }
                }
            }
        }
    }
    for (from, q, at, e) in forward {
        if let Some(&to) = g.processors[q.idx()].tasks.get(at) {
            if to != from && have.insert((from, to, e.kind)) {
                g.edges.push(Edge { from, to, ..e });
            }
        }
    }

    // Steps of the primary template, in the order their units came.
    let mut steps = Vec::new();
    for (si, s) in pt.graph.steps.iter().enumerate() {
        let si = si as u32;
        let (Some(&first), Some(&last)) = (
            step_tasks.get(&(si, primary as u32, s.first_task)),
            step_tasks.get(&(si, primary as u32, s.last_task)),
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
    g.steps = steps;
    g.task_scopes = if g.scopes.is_empty() {
        Vec::new()
    } else {
        task_scopes
    };

    // Number tasks by (template, original id, copy): the identity plan
    // gives the original numbering back.
    let n = g.tasks.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| {
        let (src, t) = origin[i as usize];
        (src != primary as u32, src, t, copy_no[i as usize])
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
    // Processors the plan never used are dropped (their ids shift).
    let used: Vec<bool> = g.processors.iter().map(|p| !p.tasks.is_empty()).collect();
    if used.iter().any(|u| !u) {
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
    Assembled {
        graph: g,
        origin: origin2,
        tag: tag2,
        dropped_edges: dropped,
    }
}

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
            anchor: lumos_graph::Anchor::End,
            latency_ns: gap,
        });
        added += 1;
    }
    g.edges.extend(new_edges);
    added
}

/// The identity plan of a template: every unit once, in order, tagged with
/// its step and pass.
pub(crate) fn identity_plan(src: u32, s: &Structure) -> Vec<(UnitRef, Tag)> {
    (0..s.units.units.len() as u32)
        .map(|u| {
            let tag = match s.roles[u as usize] {
                Role::Outside => Tag {
                    step: None,
                    pass: None,
                    setup: false,
                },
                Role::Prologue { step } | Role::Epilogue { step } => Tag {
                    step: Some(step),
                    pass: None,
                    setup: true,
                },
                Role::Pass { step, pass, .. } => {
                    let p = &s.steps[step as usize].passes[pass as usize];
                    Tag {
                        step: Some(step),
                        pass: Some((p.kind, p.microbatch)),
                        setup: false,
                    }
                }
            };
            (UnitRef { src, unit: u }, tag)
        })
        .collect()
}
