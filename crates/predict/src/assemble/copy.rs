//! Copying one unit of the plan: its tasks, then the edges into it and
//! its blocking calls' waits, re-attached by position.

use lumos_graph::{
    Anchor, Collective, DepKind, Edge, Graph, NameId, ProcId, ProcKind, RuntimeDep, Scope, ScopeId,
    Task, TaskId, WaitTarget,
};
use rustc_hash::FxHashMap;

use super::additions::Gradient;
use super::scopes::{ScopeCopier, UnitCopy};
use super::{Prepared, Tag, Template, UnitRef, NAME_SEARCH};
use crate::discover::PassKind;
use crate::tp_sites::TpAllReduce;
use crate::units::NO_UNIT;

/// One unit copy as the hand-overs need it.
pub(super) struct Emitted {
    /// First and last CPU task of the copy, and its thread.
    pub(super) cpu: Option<(TaskId, TaskId, ProcId)>,
    pub(super) tag: Tag,
    /// Whether the unit came right after a backward-thread unit in its
    /// template.
    pub(super) after_burst: bool,
}

/// The state of the copy, unit after unit.
pub(super) struct Copier {
    /// Template index and task of each new task.
    pub(super) origin: Vec<(u32, TaskId)>,
    pub(super) tag_of: Vec<Tag>,
    /// Which copy of its template task each new task is.
    pub(super) copy_no: Vec<u32>,
    pub(super) copies: FxHashMap<(u32, TaskId), u32>,
    pub(super) dropped: usize,
    pub(super) task_scopes: Vec<Option<ScopeId>>,
    /// Each unit copy's own scopes.
    scopes: ScopeCopier,
    /// (step, template, template task) -> new task, for the new steps.
    pub(super) step_tasks: FxHashMap<(u32, u32, TaskId), TaskId>,
    pub(super) step_members: FxHashMap<u32, Vec<TaskId>>,
    /// Edges leaving a unit for the next task on another processor: (new
    /// source, target processor, its length after the unit, template edge).
    pub(super) forward: Vec<(TaskId, ProcId, usize, Edge)>,
    /// Correlation ids: a copy gets fresh ones (shared by a launch and its
    /// kernels, which are in one unit), so that the written timeline links
    /// each launch to its own kernels; the first use of an id keeps it.
    pub(super) corr_used: FxHashMap<u64, u32>,
    pub(super) next_corr: u64,
    pub(super) emitted: Vec<Emitted>,
    /// Gradient additions made (kernels), and those a copy needed where
    /// its template had nothing to size them from (`additions.rs`).
    pub(super) additions: usize,
    pub(super) unsized_additions: usize,
    /// Of `additions`, those sized from their gradient's bytes.
    pub(super) shaped_additions: usize,
    /// The name of an addition's kernel, once interned.
    addition_name: Option<NameId>,
    /// The name `aten::add_`, the operator around an addition's launch,
    /// once interned.
    add_op_name: Option<NameId>,
    /// Tensor-parallel all-reduces added (kernels), `tp_sites.rs`.
    pub(super) tp_allreduces: usize,
    /// The names of an added all-reduce's kernel and of the operator
    /// around its launch, once interned.
    tp_names: Option<(NameId, NameId)>,
    /// Per compute stream: the stream made for the backward all-reduces
    /// that overlap its weight-gradient GEMMs (`TpSite::overlaps`).
    tp_streams: FxHashMap<ProcId, ProcId>,
    /// Per template (index) and GEMM: the last overlapped all-reduce made
    /// after a copy of it, which the stream waits for after the GEMM it
    /// overlaps.
    open_tp: FxHashMap<(u32, TaskId), TaskId>,
    /// Per stream: the overlapped all-reduce the next GPU task pushed
    /// onto it waits for.
    tp_pending: FxHashMap<ProcId, TaskId>,
}

/// The name of a modelled gradient addition's kernel: no trace names it,
/// so that a timeline of the prediction tells it from traced kernels.
pub(crate) const ADDITION_KERNEL: &str = "aten::add_ into .grad (modelled by lumos)";

/// The name of a tensor-parallel all-reduce's kernel added to a layer
/// traced at TP 1: NCCL's family, so that it reads as communication, and
/// marked as no trace's.
pub(crate) const TP_ALLREDUCE_KERNEL: &str =
    "ncclDevKernel_AllReduce_Sum (tensor-parallel, modelled by lumos)";
/// The operator around such an all-reduce's launch, as PyTorch names a
/// process group's all-reduce.
const TP_ALLREDUCE_OP: &str = "nccl:all_reduce";

/// The tasks a unit copy made: the copy of each template task, and the
/// gradient additions (`additions.rs`).
#[derive(Default)]
struct Made {
    new_id: FxHashMap<TaskId, TaskId>,
    /// Per template task, the addition's launch made right after its copy.
    after: FxHashMap<TaskId, TaskId>,
    /// Per template kernel, the addition's kernel made right before its copy.
    before: FxHashMap<TaskId, TaskId>,
    /// Per template launch of DDP's scaling, the addition's launch made
    /// from it (its kernel's launch).
    launch: FxHashMap<TaskId, TaskId>,
    /// Per template task, the kernel of an addition sized from its
    /// gradient's bytes, made with the launch after its copy.
    kernel_after: FxHashMap<TaskId, TaskId>,
    /// Per template GEMM launch or kernel, the tensor-parallel all-reduce's
    /// launch or kernel made right after its copy (`tp_sites.rs`), where
    /// it holds up what follows.
    tp_after: FxHashMap<TaskId, TaskId>,
    /// Per template GEMM kernel, the all-reduce kernel made after its copy
    /// on a stream of its own, overlapping the GEMM that follows.
    tp_overlapped: FxHashMap<TaskId, TaskId>,
}

impl Copier {
    /// A copier of `units` units of `templates` into a graph that starts
    /// with `scopes` scopes.
    pub(super) fn new(templates: &[Template], units: usize, scopes: usize) -> Copier {
        Copier {
            origin: Vec::new(),
            tag_of: Vec::new(),
            copy_no: Vec::new(),
            copies: FxHashMap::default(),
            dropped: 0,
            task_scopes: Vec::new(),
            scopes: ScopeCopier::new(scopes),
            step_tasks: FxHashMap::default(),
            step_members: FxHashMap::default(),
            forward: Vec::new(),
            corr_used: FxHashMap::default(),
            next_corr: templates
                .iter()
                .flat_map(|t| t.graph.tasks.iter().map(|x| x.correlation))
                .max()
                .unwrap_or(0)
                + 1,
            emitted: Vec::with_capacity(units),
            additions: 0,
            unsized_additions: 0,
            shaped_additions: 0,
            addition_name: None,
            add_op_name: None,
            tp_allreduces: 0,
            tp_names: None,
            tp_streams: FxHashMap::default(),
            open_tp: FxHashMap::default(),
            tp_pending: FxHashMap::default(),
        }
    }

    /// Copies unit `uref` of template `p`, tagged `tag`, to the end of `g`.
    pub(super) fn unit(&mut self, g: &mut Graph, p: &Prepared, uref: UnitRef, tag: Tag) {
        let units = &p.t.structure.units;
        let unit = &units.units[uref.unit as usize];
        // Where the copy starts on every processor, before it adds tasks.
        let base_len: Vec<usize> = g.processors.iter().map(|pr| pr.tasks.len()).collect();
        let made = self.copy_tasks(g, p, uref, tag);
        let new_id = &made.new_id;
        let steps = &p.t.structure.steps;
        self.emitted.push(Emitted {
            cpu: match (unit.cpu().first(), unit.cpu().last()) {
                (Some(a), Some(b)) => Some((
                    new_id[a],
                    new_id[b],
                    p.proc_map[p.t.graph.tasks[a.idx()].proc.idx()],
                )),
                _ => None,
            },
            tag,
            after_burst: uref.unit.checked_sub(1).is_some_and(|prev| {
                let th = units.units[prev as usize].thread;
                steps.iter().any(|s| s.backward.contains(&th))
            }),
        });
        self.reattach(g, p, uref, &made, &base_len);
    }

    /// Copies the tasks of unit `uref` of template `p`; returns the new id
    /// of each, and the gradient additions made (`additions.rs`): in a
    /// backward after the step's first, a launch after each task the
    /// template's sites name and a kernel before each.
    fn copy_tasks(&mut self, g: &mut Graph, p: &Prepared, uref: UnitRef, tag: Tag) -> Made {
        let tg = p.t.graph;
        let unit = &p.t.structure.units.units[uref.unit as usize];
        let adds = matches!(tag.pass, Some((PassKind::Backward, k)) if k > 0);
        let mut made = Made::default();
        let mut corr_here: FxHashMap<u64, u64> = FxHashMap::default();
        let mut twin_corr: FxHashMap<u64, u64> = FxHashMap::default();
        for &t in &unit.tasks {
            let task = &tg.tasks[t.idx()];
            if adds && p.additions.unsizable.contains(&t) {
                self.unsized_additions += 1;
            }
            if let Some(gr) = adds.then(|| p.additions.before.get(&t)).flatten() {
                let id = self.addition(g, p, (uref, tag), gr.kernel, &mut twin_corr);
                made.before.insert(t, id);
            }
            let correlation = match task.correlation {
                0 => 0,
                c => *corr_here
                    .entry(c)
                    .or_insert_with(|| match self.corr_used.get(&c) {
                        Some(&src)
                            if src != uref.src || self.copies.contains_key(&(uref.src, t)) =>
                        {
                            self.next_corr += 1;
                            self.next_corr - 1
                        }
                        _ => {
                            self.corr_used.insert(c, uref.src);
                            c
                        }
                    }),
            };
            let collective = task.collective.map(|c| {
                let cl: Collective = tg.collectives[c as usize].clone();
                g.collectives.push(cl);
                g.collectives.len() as u32 - 1
            });
            let copy = Task {
                name: p.name_map[task.name.0 as usize],
                proc: p.proc_map[task.proc.idx()],
                collective,
                correlation,
                ..task.clone()
            };
            let id = self.push_task(g, uref, t, tag, copy);
            made.new_id.insert(t, id);
            if let Some(si) = tag.step {
                self.step_tasks.entry((si, uref.src, t)).or_insert(id);
            }
            if let Some(gr) = adds.then(|| p.additions.after.get(&t)).flatten() {
                let twin = self.addition(g, p, (uref, tag), gr.launch, &mut twin_corr);
                made.after.insert(t, twin);
                made.launch.insert(gr.launch, twin);
                g.edges.push(Edge {
                    from: id,
                    to: twin,
                    kind: DepKind::IntraThread,
                    anchor: Anchor::End,
                    latency_ns: 0,
                    inferred: false,
                });
                if gr.bytes.is_some() {
                    let k = self.shaped_kernel(g, p, (uref, tag), gr, twin, &mut twin_corr);
                    made.kernel_after.insert(t, k);
                }
            }
            let site = match task.kind.is_gpu() {
                true => p.tp_sites.get(&t),
                false => (p.tp_launches.get(&t)).and_then(|k| p.tp_sites.get(k)),
            };
            if let Some(site) = site.filter(|_| tag.pass.is_some()) {
                let overlapped = task.kind.is_gpu() && site.overlaps.is_some();
                let stream = overlapped.then(|| self.tp_stream(g, g.tasks[id.idx()].proc));
                let at = (uref, tag);
                let twin = self.tp_allreduce(g, p, at, (t, stream), site.reduce, &mut twin_corr);
                if overlapped {
                    made.tp_overlapped.insert(t, twin);
                    self.open_tp.insert((uref.src, t), twin);
                } else {
                    made.tp_after.insert(t, twin);
                }
                g.edges.push(Edge {
                    from: id,
                    to: twin,
                    kind: match (task.kind.is_gpu(), overlapped) {
                        (true, true) => DepKind::InterStream,
                        (true, false) => DepKind::IntraStream,
                        (false, _) => DepKind::IntraThread,
                    },
                    anchor: Anchor::End,
                    latency_ns: 0,
                    inferred: false,
                });
            }
            // The GEMM an all-reduce overlaps: what follows it on its
            // stream waits for the all-reduce (Megatron's `handle.wait()`).
            if let Some(&gemm) = p.tp_waits.get(&t) {
                if let Some(&k) = self.open_tp.get(&(uref.src, gemm)) {
                    self.tp_pending.insert(g.tasks[id.idx()].proc, k);
                }
            }
        }
        // Each added launch launches its added kernel, as the GEMM's
        // launch launched the GEMM.
        let kernels = (made.tp_after.iter()).chain(&made.tp_overlapped);
        for (&kernel, &k) in kernels {
            let Some(site) = p.tp_sites.get(&kernel) else {
                continue;
            };
            let Some(&l) = made.tp_after.get(&site.launch) else {
                continue;
            };
            g.edges.push(launch_edge(p, (site.launch, kernel), (l, k)));
        }
        self.copy_scopes(g, p, uref, tag, &made);
        made
    }

    /// The stream of the backward all-reduces that overlap the GEMMs of
    /// compute stream `compute`: made on first use, on its device, with
    /// an id no stream of the device has.
    fn tp_stream(&mut self, g: &mut Graph, compute: ProcId) -> ProcId {
        if let Some(&s) = self.tp_streams.get(&compute) {
            return s;
        }
        let ProcKind::Stream { device, .. } = g.processors[compute.idx()].kind else {
            return compute;
        };
        let id = (g.processors.iter())
            .filter_map(|pr| match pr.kind {
                ProcKind::Stream { device: d, stream } if d == device => Some(stream),
                _ => None,
            })
            .max()
            .unwrap_or(0)
            + 1;
        g.processors.push(lumos_graph::Processor {
            kind: ProcKind::Stream { device, stream: id },
            tasks: Vec::new(),
        });
        let s = ProcId(g.processors.len() as u32 - 1);
        self.tp_streams.insert(compute, s);
        s
    }

    /// A tensor-parallel all-reduce's launch or kernel (`tp_sites.rs`),
    /// made from template task `from` (the GEMM's launch or kernel) for
    /// the copy of unit `uref` tagged `tag`, on `stream` where given (an
    /// overlapped kernel's), else on `from`'s processor: a kernel named as
    /// one, a fresh correlation shared by launch and kernel, the tag
    /// carrying `reduce` (the site's all-reduces, one task for all of
    /// them where several run back to back).
    fn tp_allreduce(
        &mut self,
        g: &mut Graph,
        p: &Prepared,
        (uref, tag): (UnitRef, Tag),
        (from, stream): (TaskId, Option<ProcId>),
        reduce: TpAllReduce,
        twin_corr: &mut FxHashMap<u64, u64>,
    ) -> TaskId {
        let task = &p.t.graph.tasks[from.idx()];
        let correlation = self.twin_correlation(task.correlation, twin_corr);
        let name = if task.kind.is_gpu() {
            self.tp_allreduces += reduce.count as usize;
            self.tp_names(g).0
        } else {
            p.name_map[task.name.0 as usize]
        };
        let made = Task {
            name,
            proc: stream.unwrap_or(p.proc_map[task.proc.idx()]),
            collective: None,
            correlation,
            ..task.clone()
        };
        let tag = Tag {
            addition: false,
            layers_fitted: false,
            shaped_addition: None,
            tp_allreduce: Some(reduce),
            ..tag
        };
        self.push_task(g, uref, from, tag, made)
    }

    /// The correlation of a made launch and its kernel, the twins of a
    /// template pair correlated by `traced`: fresh for the first of the
    /// pair, the same for the other.
    fn twin_correlation(&mut self, traced: u64, twin_corr: &mut FxHashMap<u64, u64>) -> u64 {
        *twin_corr.entry(traced).or_insert_with(|| {
            self.next_corr += 1;
            self.next_corr - 1
        })
    }

    /// The names of an added all-reduce's kernel and operator, interned
    /// once.
    fn tp_names(&mut self, g: &mut Graph) -> (NameId, NameId) {
        *self.tp_names.get_or_insert_with(|| {
            let mut intern = |n: &str| match g.names.iter().position(|x| x == n) {
                Some(i) => NameId(i as u32),
                None => {
                    g.names.push(n.into());
                    NameId(g.names.len() as u32 - 1)
                }
            };
            (intern(TP_ALLREDUCE_KERNEL), intern(TP_ALLREDUCE_OP))
        })
    }

    /// A gradient addition's launch or kernel, made from template task
    /// `from` (DDP's scaling launch or kernel) for the copy of unit `uref`
    /// tagged `tag`: its name (a kernel's says it is modelled), a fresh
    /// correlation shared by launch and kernel, the tag marked.
    fn addition(
        &mut self,
        g: &mut Graph,
        p: &Prepared,
        (uref, tag): (UnitRef, Tag),
        from: TaskId,
        twin_corr: &mut FxHashMap<u64, u64>,
    ) -> TaskId {
        let task = &p.t.graph.tasks[from.idx()];
        let correlation = self.twin_correlation(task.correlation, twin_corr);
        let name = if task.kind.is_gpu() {
            self.additions += 1;
            self.shaped_additions += usize::from(tag.shaped_addition.is_some());
            *self.addition_name.get_or_insert_with(|| {
                g.names.push(ADDITION_KERNEL.into());
                NameId(g.names.len() as u32 - 1)
            })
        } else {
            p.name_map[task.name.0 as usize]
        };
        let made = Task {
            name,
            proc: p.proc_map[task.proc.idx()],
            collective: None,
            correlation,
            ..task.clone()
        };
        let tag = Tag {
            addition: true,
            layers_fitted: false,
            ..tag
        };
        self.push_task(g, uref, from, tag, made)
    }

    /// The kernel of an addition sized from its gradient's bytes (`gr`),
    /// launched by `launch`: made from the kernel the template's thread
    /// launched last before the accumulation, on that kernel's stream
    /// after what is there (which the thread launched before), launched as
    /// the template launched that one.
    fn shaped_kernel(
        &mut self,
        g: &mut Graph,
        p: &Prepared,
        at: (UnitRef, Tag),
        gr: &Gradient,
        launch: TaskId,
        twin_corr: &mut FxHashMap<u64, u64>,
    ) -> TaskId {
        let stream = p.proc_map[p.t.graph.tasks[gr.kernel.idx()].proc.idx()];
        let prev = g.processors[stream.idx()].tasks.last().copied();
        let (uref, tag) = at;
        let tag = Tag {
            shaped_addition: gr.bytes.map(|bytes| super::ShapedAddition {
                bytes,
                node: gr.scope,
            }),
            ..tag
        };
        let k = self.addition(g, p, (uref, tag), gr.kernel, twin_corr);
        g.edges
            .push(launch_edge(p, (gr.launch, gr.kernel), (launch, k)));
        if let Some(prev) = prev {
            g.edges.push(Edge {
                from: prev,
                to: k,
                kind: DepKind::IntraStream,
                anchor: Anchor::End,
                latency_ns: 0,
                inferred: false,
            });
        }
        k
    }

    /// Appends `task`, made from template task `t` of unit `uref`, to `g`
    /// and its processor, with its origin, copy number and tag.
    fn push_task(
        &mut self,
        g: &mut Graph,
        uref: UnitRef,
        t: TaskId,
        tag: Tag,
        task: Task,
    ) -> TaskId {
        let id = TaskId(g.tasks.len() as u32);
        if task.kind.is_gpu() {
            if let Some(k) = self.tp_pending.remove(&task.proc) {
                g.edges.push(Edge {
                    from: k,
                    to: id,
                    kind: DepKind::InterStream,
                    anchor: Anchor::End,
                    latency_ns: 0,
                    inferred: false,
                });
            }
        }
        g.processors[task.proc.idx()].tasks.push(id);
        g.tasks.push(task);
        self.task_scopes.push(None);
        let n = self.copies.entry((uref.src, t)).or_insert(0);
        self.copy_no.push(*n);
        *n += 1;
        self.origin.push((uref.src, t));
        self.tag_of.push(tag);
        if let Some(si) = tag.step {
            self.step_members.entry(si).or_default().push(id);
        }
        id
    }

    /// Sets the scopes of the tasks just copied from unit `uref`: copies
    /// of their template's scopes of their own (see `scopes.rs`).
    fn copy_scopes(&mut self, g: &mut Graph, p: &Prepared, uref: UnitRef, tag: Tag, made: &Made) {
        let tg = p.t.graph;
        if tg.task_scopes.len() != tg.tasks.len() {
            return;
        }
        let unit = &p.t.structure.units.units[uref.unit as usize];
        let at = UnitCopy {
            serial: self.emitted.len() as u32,
            step: tag.step,
            scope_off: p.scope_off,
            scope_units: &p.scope_units,
        };
        self.scopes.begin_unit();
        let mut chain = Vec::new();
        // An addition runs in its gradient's accumulation node, not in
        // the reducer's scaling it is made from.
        let gradient_chain = |gr: Option<&Gradient>| {
            std::iter::successors(gr.map(|gr| gr.scope), |s| tg.scopes[s.0 as usize].parent)
        };
        // Per scaling kernel an addition's kernel precedes: the addition's
        // `aten::add_`, made with its launch.
        let mut add_ops: FxHashMap<TaskId, ScopeId> = FxHashMap::default();
        // Per GEMM kernel an all-reduce follows: the operator made around
        // the all-reduce's launch.
        let mut tp_ops: FxHashMap<TaskId, ScopeId> = FxHashMap::default();
        for t in unit.cpu() {
            let id = made.new_id[t];
            chain.clear();
            chain.extend(tg.scope_chain(*t).map(|s| s.0 + p.scope_off));
            let q = g.tasks[id.idx()].proc;
            self.task_scopes[id.idx()] = self.scopes.cpu_task(g, q, &chain, &at);
            if let (Some(&twin), Some(&kernel)) = (made.tp_after.get(t), p.tp_launches.get(t)) {
                // Beside the GEMM's operator, under what called it, as a
                // row-parallel layer calls its all-reduce.
                let parent = self.task_scopes[id.idx()].and_then(|s| g.scopes[s.0 as usize].parent);
                let name = self.tp_names(g).1;
                g.scopes.push(Scope {
                    name,
                    parent,
                    annotation: false,
                    input_dims: None,
                    input_type: None,
                });
                let op = ScopeId(g.scopes.len() as u32 - 1);
                self.task_scopes[twin.idx()] = Some(op);
                tp_ops.insert(kernel, op);
            }
            if let Some(&twin) = made.after.get(t) {
                chain.clear();
                chain.extend(gradient_chain(p.additions.after.get(t)).map(|s| s.0 + p.scope_off));
                let node = self.scopes.cpu_task(g, q, &chain, &at);
                let op = self.add_op(g, node);
                self.task_scopes[twin.idx()] = Some(op);
                if let Some(&k) = made.kernel_after.get(t) {
                    self.task_scopes[k.idx()] = Some(op);
                }
                if let Some(gr) = p.additions.after.get(t) {
                    add_ops.insert(gr.kernel, op);
                }
            }
        }
        for t in unit.gpu() {
            if let (Some(&twin), Some(gr)) = (made.before.get(t), p.additions.before.get(t)) {
                self.task_scopes[twin.idx()] = Some(match add_ops.get(t) {
                    Some(&op) => op,
                    None => self.scopes.gpu_task(gr.scope.0 + p.scope_off),
                });
            }
            if let Some(s) = tg.scope_of(*t) {
                self.task_scopes[made.new_id[t].idx()] =
                    Some(self.scopes.gpu_task(s.0 + p.scope_off));
            }
            if let Some(&twin) = (made.tp_after.get(t)).or(made.tp_overlapped.get(t)) {
                self.task_scopes[twin.idx()] = tp_ops.get(t).copied();
            }
        }
    }

    /// A new `aten::add_` scope under `parent` (the accumulation node's
    /// copy), around one addition's launch, as PyTorch's accumulation runs
    /// it: a timeline then reads `aten::add_` -> launch -> kernel as in a
    /// trace. It records no shapes (the retimer sizes the addition from
    /// its tag, not from this scope).
    fn add_op(&mut self, g: &mut Graph, parent: Option<ScopeId>) -> ScopeId {
        let name = *self.add_op_name.get_or_insert_with(|| {
            match g.names.iter().position(|n| n == "aten::add_") {
                Some(i) => NameId(i as u32),
                None => {
                    g.names.push("aten::add_".into());
                    NameId(g.names.len() as u32 - 1)
                }
            }
        });
        g.scopes.push(Scope {
            name,
            parent,
            annotation: false,
            input_dims: None,
            input_type: None,
        });
        ScopeId(g.scopes.len() as u32 - 1)
    }

    /// Re-attaches the edges into the copied unit (by position, see the
    /// module docs), notes those that leave it for the task right after it
    /// on another processor (added once every unit is in), and copies its
    /// blocking calls' waits. What cannot be re-attached is counted.
    fn reattach(
        &mut self,
        g: &mut Graph,
        p: &Prepared,
        uref: UnitRef,
        made: &Made,
        base_len: &[usize],
    ) {
        let tg = p.t.graph;
        let unit_of = &p.t.structure.units.unit_of;
        let unit = &p.t.structure.units.units[uref.unit as usize];
        let new_id = &made.new_id;
        for &t in &unit.tasks {
            let to = new_id[&t];
            for &ei in &p.incoming[t.idx()] {
                let e = tg.edges[ei as usize];
                let from = match new_id.get(&e.from) {
                    Some(&f) => Some(f),
                    None if unit_of[e.from.idx()] == NO_UNIT => None,
                    None => reattach_source(g, p, uref, base_len, e.from, true),
                };
                match from {
                    Some(from) if from != to => g.edges.push(Edge { from, to, ..e }),
                    _ => self.dropped += 1,
                }
                let Some(from) = from else { continue };
                if let Some(&twin) = made.before.get(&t) {
                    add_twin_edges(g, e, (from, made.launch.get(&e.from).copied()), (twin, to));
                }
                // The gap after a task that an addition's launch follows
                // comes after that launch.
                if let Some(&twin) = made.after.get(&e.from) {
                    if e.kind == DepKind::IntraThread && twin != to {
                        g.edges.push(Edge {
                            from: twin,
                            to,
                            ..e
                        });
                    }
                }
                // So does the gap after a GEMM (or its launch) that an
                // added all-reduce follows: the all-reduce blocks what
                // came next on the stream and the thread.
                if let Some(&twin) = made.tp_after.get(&e.from) {
                    if matches!(e.kind, DepKind::IntraThread | DepKind::IntraStream) && twin != to {
                        g.edges.push(Edge {
                            from: twin,
                            to,
                            ..e
                        });
                    }
                }
            }
            for &ei in &p.outgoing[t.idx()] {
                let e = tg.edges[ei as usize];
                if new_id.contains_key(&e.to) || unit_of[e.to.idx()] == NO_UNIT {
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
                self.forward
                    .push((to, q2, g.processors[q2.idx()].tasks.len(), e));
            }
            for &di in p.rt.get(&t).map_or(&[][..], |v| v.as_slice()) {
                let d = tg.runtime_deps[di as usize];
                let target = match d.target {
                    WaitTarget::StreamTail(s) => Some(WaitTarget::StreamTail(p.proc_map[s.idx()])),
                    WaitTarget::DeviceTail(dev) => {
                        Some(WaitTarget::DeviceTail(new_device(g, p, dev)))
                    }
                    WaitTarget::Task(x) => new_id
                        .get(&x)
                        .copied()
                        .or_else(|| reattach_source(g, p, uref, base_len, x, false))
                        .map(WaitTarget::Task),
                };
                match target {
                    Some(target) => g.runtime_deps.push(RuntimeDep {
                        task: to,
                        target,
                        latency_ns: d.latency_ns,
                        inferred: d.inferred,
                    }),
                    None => self.dropped += 1,
                }
            }
        }
    }
}

/// The edges of an addition `twin` made right before task `to`, for the
/// template edge `e` into the task `to` copies: the same edge into the
/// addition (from the source's own addition where it has one: a kernel's
/// launch), and, for an edge of program or stream order, the addition
/// holding up `to` by the same gap, so that the work before `to` keeps its
/// gaps and the addition adds its own time.
fn add_twin_edges(
    g: &mut Graph,
    e: Edge,
    (from, from_twin): (TaskId, Option<TaskId>),
    (twin, to): (TaskId, TaskId),
) {
    let from = from_twin.unwrap_or(from);
    if from != twin {
        g.edges.push(Edge {
            from,
            to: twin,
            ..e
        });
    }
    if matches!(e.kind, DepKind::IntraThread | DepKind::IntraStream) {
        g.edges.push(Edge {
            from: twin,
            to,
            ..e
        });
    }
}

/// The device of the new graph that template device `dev` became: that of
/// the processor the template's first stream on it was mapped onto. A
/// template traced on another rank ran on another device (a middle stage
/// copies the first stage's transfers, traced on device 0, onto the last
/// stage's device), and a synchronization copied with its device kept
/// waited for no work of the stage. `dev` itself where the template has no
/// stream on it.
fn new_device(g: &Graph, p: &Prepared, dev: i64) -> i64 {
    let tg = p.t.graph;
    (tg.processors.iter().enumerate())
        .find_map(|(i, pr)| match pr.kind {
            ProcKind::Stream { device, .. } if device == dev => {
                match g.processors[p.proc_map[i].idx()].kind {
                    ProcKind::Stream { device, .. } => Some(device),
                    ProcKind::Thread { .. } => None,
                }
            }
            _ => None,
        })
        .unwrap_or(dev)
}

/// The new source of an edge from template task `s`, outside unit `uref`,
/// by its position before the unit on its processor: the task as many
/// places before the copy (whose processors started at `base_len`). With
/// `by_name`, a task other than the one right before must have the same
/// name, here or within [`NAME_SEARCH`] places.
pub(super) fn reattach_source(
    g: &Graph,
    p: &Prepared,
    uref: UnitRef,
    base_len: &[usize],
    s: TaskId,
    by_name: bool,
) -> Option<TaskId> {
    let tg = p.t.graph;
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
}

/// The launch edge from made launch `from` to made kernel `to`, as the
/// template's launch edge from `launch` to `kernel` is (its latency and
/// anchor), or a plain one where the template has none.
fn launch_edge(
    p: &Prepared,
    (launch, kernel): (TaskId, TaskId),
    (from, to): (TaskId, TaskId),
) -> Edge {
    let traced = (p.outgoing[launch.idx()].iter())
        .map(|&ei| p.t.graph.edges[ei as usize])
        .find(|e| e.kind == DepKind::Launch && e.to == kernel);
    Edge {
        from,
        to,
        ..traced.unwrap_or(Edge {
            from,
            to,
            kind: DepKind::Launch,
            anchor: Anchor::Start,
            latency_ns: 0,
            inferred: false,
        })
    }
}
