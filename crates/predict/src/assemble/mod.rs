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
//! Each copy of a unit gets scopes of its own (`scopes.rs`), so that every
//! scope of the new graph is one contiguous range on one thread, as in a
//! trace, and carries its template's `Input Dims`.
//!
//! The identity sequence (every unit once, in its own order) gives back the
//! graph it came from, task for task: new tasks are numbered by (template,
//! task id, copy), which for the identity is the original numbering.

//!
//! [`assemble`] runs in steps: [`prepare`] (the primary template's
//! processors and names, each template's lookups), then per unit of the
//! plan [`Copier::unit`] (its tasks copied, [`Copier::copy_tasks`], then its
//! incoming edges and waits re-attached, [`Copier::reattach`]), then
//! [`add_handovers`], [`add_forward_edges`], [`primary_steps`],
//! [`renumber`] and [`drop_unused_processors`].

mod additions;
pub(crate) use additions::ACCUMULATION;
#[cfg(test)]
pub(crate) use copy::TP_ALLREDUCE_KERNEL;
mod copy;
mod finish;
mod joins;
mod scopes;
#[cfg(test)]
mod tests;

use lumos_graph::{DepKind, Graph, NameId, ProcId, ProcKind, Processor, Scope, ScopeId, TaskId};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::discover::{PassKind, Role, Structure};
use crate::tp_sites::{TpAllReduce, TpSites};
use copy::Copier;
use finish::{
    add_forward_edges, add_handovers, drop_unused_processors, handover_latency, primary_steps,
    renumber,
};
pub(crate) use joins::repair_joins;

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
    /// The model chunk of that pass (0 unless interleaved).
    pub chunk: u32,
    /// In the prologue or epilogue of its step (otherwise in a pass or
    /// outside any step).
    pub setup: bool,
    /// Set on the tasks the copy adds rather than copies: a gradient
    /// addition's launch or kernel (`additions.rs`), timed from the task it
    /// was made from.
    pub addition: bool,
    /// After the layers of a pass whose per-parameter units (DDP's copies
    /// of gradients back from their buckets) were copied or left out with
    /// the layers (`plan.rs`): none is stretched with the layers when
    /// re-timed, which would count them twice. Those of the layer the
    /// pass's end cuts (its first gradients) belong to one layer only.
    pub layers_fitted: bool,
    /// On a gradient addition's kernel sized from its gradient's shape
    /// (no DDP scaling kernel to size it from): that gradient.
    pub shaped_addition: Option<ShapedAddition>,
    /// Set on the launch and kernel of a tensor-parallel all-reduce that
    /// the copy adds after a GEMM or lookup of a model traced at TP 1
    /// (`tp_sites.rs`): its all-reduces' bytes at the traced micro-batch
    /// and hidden size and their number, which the retimer times them
    /// from.
    pub tp_allreduce: Option<TpAllReduce>,
}

/// The gradient a gradient addition sized from its shape adds
/// (`additions.rs`), in the template's graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShapedAddition {
    /// Its bytes, as traced (the accumulation node's first input).
    pub bytes: u64,
    /// The accumulation node, whose recorded shape tells how the gradient
    /// grows with the model's widths when re-timed.
    pub node: ScopeId,
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
    /// Gradient additions made (kernels), and gradients whose additions
    /// had nothing to be sized from and were left out (`additions.rs`).
    pub additions: usize,
    pub unsized_additions: usize,
    /// Of `additions`, those sized from their gradient's shape (no DDP
    /// scaling kernel).
    pub shaped_additions: usize,
    /// Tensor-parallel all-reduces added (kernels), `tp_sites.rs`.
    pub tp_allreduces: usize,
}

/// Per-template lookups.
pub(super) struct Prepared<'a> {
    pub(super) t: &'a Template<'a>,
    /// Index of each task in its processor's list.
    pub(super) idx_in_proc: Vec<u32>,
    /// Per processor: the unit of each of its tasks (non-decreasing).
    pub(super) proc_units: Vec<Vec<u32>>,
    /// Incoming edges per task.
    pub(super) incoming: Vec<Vec<u32>>,
    /// Outgoing edges per task.
    pub(super) outgoing: Vec<Vec<u32>>,
    /// Runtime dependencies per task.
    pub(super) rt: FxHashMap<TaskId, Vec<u32>>,
    /// New processor of each template processor.
    pub(super) proc_map: Vec<ProcId>,
    /// New name of each template name.
    pub(super) name_map: Vec<NameId>,
    /// Offset of this template's scopes in the new graph.
    pub(super) scope_off: u32,
    /// The unit each of its scopes lies inside (`scopes::scope_units`).
    pub(super) scope_units: Vec<u32>,
    /// Where its backwards kept gradients without adding them (found only
    /// when the plan needs them).
    pub(super) additions: additions::Sites,
    /// Per GEMM kernel: the tensor-parallel all-reduce added after it
    /// (`tp_sites.rs`); empty unless the edit adds them.
    pub(super) tp_sites: TpSites,
    /// Per launch of such a GEMM: the GEMM's kernel.
    pub(super) tp_launches: FxHashMap<TaskId, TaskId>,
    /// Per GEMM an overlapped all-reduce runs beside (`TpSite::overlaps`):
    /// the GEMM the all-reduce follows, whose stream waits for it after.
    pub(super) tp_waits: FxHashMap<TaskId, TaskId>,
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
///
/// `tp_sites`, per template (empty for none), names the GEMMs after which
/// a tensor-parallel all-reduce is added to every copy (`tp_sites.rs`).
pub(crate) fn assemble(
    templates: &[Template],
    primary: usize,
    plan: &[(UnitRef, Tag)],
    tp_sites: &[TpSites],
) -> Assembled {
    let (mut g, keys, mut prepared) = prepare(templates, primary);
    for (p, sites) in prepared.iter_mut().zip(tp_sites) {
        p.tp_sites = sites.clone();
        p.tp_launches = sites.iter().map(|(&k, s)| (s.launch, k)).collect();
        p.tp_waits = (sites.iter())
            .filter_map(|(&k, s)| Some((s.overlaps?, k)))
            .collect();
    }
    // Only a template copied into a backward after the step's first can
    // need gradient additions; finding their sites reads every scope.
    for (ti, p) in prepared.iter_mut().enumerate() {
        let later_backward = plan.iter().any(|(u, tag)| {
            u.src as usize == ti && matches!(tag.pass, Some((PassKind::Backward, k)) if k > 0)
        });
        if later_backward {
            p.additions = additions::sites(p.t.graph, &p.idx_in_proc);
        }
    }
    let mut copier = Copier::new(templates, plan.len(), g.scopes.len());
    for &(uref, tag) in plan {
        copier.unit(&mut g, &prepared[uref.src as usize], uref, tag);
    }
    let Copier {
        origin,
        tag_of,
        copy_no,
        dropped,
        task_scopes,
        step_tasks,
        step_members,
        forward,
        emitted,
        additions,
        unsized_additions,
        shaped_additions,
        tp_allreduces,
        ..
    } = copier;
    let mut have: FxHashSet<(TaskId, TaskId, DepKind)> =
        g.edges.iter().map(|e| (e.from, e.to, e.kind)).collect();
    let pt = &templates[primary];
    // The main thread waits for each backward burst to end.
    if let (Some(&main), Some(&bwd)) = (keys.get("main"), keys.get("backward")) {
        let latency = handover_latency(pt);
        add_handovers(&mut g, &mut have, &emitted, (main, bwd), latency);
    }
    add_forward_edges(&mut g, &mut have, forward);
    g.steps = primary_steps(pt.graph, primary as u32, &step_tasks, step_members);
    g.task_scopes = if g.scopes.is_empty() {
        Vec::new()
    } else {
        task_scopes
    };
    let (origin, tag) = renumber(&mut g, &origin, &tag_of, &copy_no, primary as u32);
    drop_unused_processors(&mut g);
    Assembled {
        graph: g,
        origin,
        tag,
        dropped_edges: dropped,
        additions,
        unsized_additions,
        shaped_additions,
        tp_allreduces,
    }
}

/// The new graph's start: the primary template's processors and names,
/// then each template's lookups, its processors mapped by role key (those
/// the primary lacks added), its names interned and its scopes copied.
/// Returns the graph, the processors by role key, and the lookups.
fn prepare<'a>(
    templates: &'a [Template<'a>],
    primary: usize,
) -> (Graph, FxHashMap<String, ProcId>, Vec<Prepared<'a>>) {
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
        let scope_off = g.scopes.len() as u32;
        g.scopes.extend(t.graph.scopes.iter().map(|s| Scope {
            name: name_map[s.name.0 as usize],
            parent: s.parent.map(|p| ScopeId(p.0 + scope_off)),
            ..s.clone()
        }));
        prepared.push(Prepared::new(t, proc_map, name_map, scope_off));
    }
    (g, keys, prepared)
}

impl<'a> Prepared<'a> {
    /// The lookups of template `t`, whose processors, names and scopes
    /// the new graph has as `proc_map`, `name_map` and from `scope_off`.
    fn new(
        t: &'a Template<'a>,
        proc_map: Vec<ProcId>,
        name_map: Vec<NameId>,
        scope_off: u32,
    ) -> Prepared<'a> {
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
        Prepared {
            t,
            idx_in_proc,
            proc_units,
            incoming,
            outgoing,
            rt,
            proc_map,
            name_map,
            scope_off,
            scope_units: scopes::scope_units(t.graph, &t.structure.units.unit_of),
            additions: additions::Sites::default(),
            tp_sites: TpSites::default(),
            tp_launches: FxHashMap::default(),
            tp_waits: FxHashMap::default(),
        }
    }
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
                    chunk: 0,
                    setup: false,
                    addition: false,
                    layers_fitted: false,
                    shaped_addition: None,
                    tp_allreduce: None,
                },
                Role::Prologue { step } | Role::Epilogue { step } => Tag {
                    step: Some(step),
                    pass: None,
                    chunk: 0,
                    setup: true,
                    addition: false,
                    layers_fitted: false,
                    shaped_addition: None,
                    tp_allreduce: None,
                },
                Role::Pass { step, pass, .. } => {
                    let p = &s.steps[step as usize].passes[pass as usize];
                    Tag {
                        step: Some(step),
                        pass: Some((p.kind, p.microbatch)),
                        chunk: p.chunk,
                        setup: false,
                        addition: false,
                        layers_fitted: false,
                        shaped_addition: None,
                        tp_allreduce: None,
                    }
                }
            };
            (UnitRef { src, unit: u }, tag)
        })
        .collect()
}
