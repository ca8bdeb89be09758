//! Structure discovery: what a rank's graph is made of, in the terms a
//! what-if question uses. Per step: a prologue, the forward and backward
//! passes of each micro-batch (each cut into what comes before its layers,
//! its transformer layers, and what comes after), and an epilogue (gradient
//! synchronization and the optimizer). Per task: what kind of work it is
//! (GEMM with its shape, attention, memory-bound, copy, communication), and
//! for communication which parallel group it belongs to.
//!
//! Measured times are used here to discover structure only (the global
//! order of units, which thread work is waiting); nothing found here puts a
//! measured start into a graph.
//!
//! # How passes and layers are found
//!
//! Backward passes run on the autograd thread, one burst per micro-batch,
//! while the main thread waits; forward passes run on the main thread. The
//! layer is the block of top-level operators ([`Units`]) that repeats most
//! inside the backward bursts (no pass can repeat inside one burst); the
//! forward layer is the block that repeats exactly as often on the main
//! thread (warm-up forwards back to back would otherwise look like a
//! repeated block too). A scope named like a layer (`TransformerLayer`,
//! `model.layers.N`) makes its own token, so annotated traces give a
//! one-token block. Units between passes belong to the next pass, except
//! point-to-point sends, which end the pass before them; the units before
//! the first pass that also precede every other forward pass are that pass's
//! own, the rest is the step's prologue.

use std::collections::BTreeMap;

use lumos_graph::{Graph, Measured, ProcId, TaskId, TaskKind};
use lumos_models::CollectiveKind;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use crate::context::TraceContext;
use crate::pattern::{best_period, chains, period_with_repeats};
use crate::shapes::{
    attention_shape, gemm_shape, is_attention_kernel_name, is_gemm_kernel_name, is_gemm_op,
    GemmShape,
};
use crate::units::{is_layer_name, Units, NO_UNIT};

/// Forward or backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum PassKind {
    /// A forward pass.
    Forward,
    /// A backward pass.
    Backward,
}

/// Which part of a pass a unit is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// Before the first layer (receives, data loading, embedding, the
    /// loss head's backward).
    Pre,
    /// Inside layer `j` (0-based, in execution order).
    Layer(u32),
    /// After the last layer (sends, embedding backward, the last gradient
    /// bucket).
    Post,
}

/// Where a unit sits in the training iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Outside every step.
    Outside,
    /// Before the first pass of step `step` (gradient zeroing, waits).
    Prologue {
        /// Index into [`Structure::steps`].
        step: u32,
    },
    /// In pass `pass` of step `step`.
    Pass {
        /// Index into [`Structure::steps`].
        step: u32,
        /// Index into [`StepStructure::passes`].
        pass: u32,
        /// Which part.
        part: Part,
    },
    /// After the last pass of step `step` (gradient sync, optimizer).
    Epilogue {
        /// Index into [`Structure::steps`].
        step: u32,
    },
}

/// One forward or backward pass of one micro-batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassStructure {
    /// Forward or backward.
    pub kind: PassKind,
    /// Micro-batch, 0-based.
    pub microbatch: u32,
    /// Units before the first layer, in global order.
    pub pre: Vec<u32>,
    /// Units of each layer, in global order.
    pub layers: Vec<Vec<u32>>,
    /// Units after the last layer, in global order.
    pub post: Vec<u32>,
}

impl PassStructure {
    /// Every unit of the pass, in global order.
    pub fn units(&self) -> impl Iterator<Item = u32> + '_ {
        self.pre
            .iter()
            .chain(self.layers.iter().flatten())
            .chain(self.post.iter())
            .copied()
    }
}

/// One `ProfilerStep#N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepStructure {
    /// The thread of the step annotation (Python's main thread).
    pub main: ProcId,
    /// Threads that ran backward passes (PyTorch's autograd threads).
    pub backward: Vec<ProcId>,
    /// Units before the first pass.
    pub prologue: Vec<u32>,
    /// Passes in execution order.
    pub passes: Vec<PassStructure>,
    /// Units after the last pass.
    pub epilogue: Vec<u32>,
    /// The step's units: a contiguous range of the global order.
    pub units: std::ops::Range<u32>,
}

impl StepStructure {
    /// The pass order as `F1 F2 B1 ...` (1-based micro-batches).
    pub fn order(&self) -> String {
        self.passes
            .iter()
            .map(|p| match p.kind {
                PassKind::Forward => format!("F{}", p.microbatch + 1),
                PassKind::Backward => format!("B{}", p.microbatch + 1),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Which parallel group a collective serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupClass {
    /// Data parallel: gradient reduction, parameter gathering.
    Data,
    /// Tensor parallel: inside layers.
    Tensor,
    /// Pipeline parallel: send / receive between stages.
    Pipeline,
    /// Megatron's model-parallel group (tensor x pipeline): the gradient
    /// norm.
    ModelParallel,
    /// Something else (expert parallel, the world group used for barriers).
    Other,
}

impl GroupClass {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupClass::Data => "data",
            GroupClass::Tensor => "tensor",
            GroupClass::Pipeline => "pipeline",
            GroupClass::ModelParallel => "model_parallel",
            GroupClass::Other => "other",
        }
    }
}

/// How sure a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// A guess from weak evidence.
    Low,
    /// Inferred from a consistent pattern.
    Medium,
    /// Read from the trace, or inferred and cross-checked.
    High,
}

/// Point-to-point direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum P2p {
    /// A send.
    Send,
    /// A receive.
    Recv,
}

/// One communication task, classified.
#[derive(Debug, Clone, PartialEq)]
pub struct CommInfo {
    /// The task.
    pub task: TaskId,
    /// Its group's role.
    pub class: GroupClass,
    /// How the class was found.
    pub confidence: Confidence,
    /// The ring pattern, when it is one the network model knows.
    pub kind: Option<CollectiveKind>,
    /// Send or receive.
    pub p2p: Option<P2p>,
    /// Message bytes, if recorded.
    pub bytes: Option<u64>,
    /// Global ranks of the group (for send/recv: the pipeline group), when
    /// known.
    pub ranks: Vec<i64>,
    /// Process group name, if recorded.
    pub group: Option<String>,
}

/// What kind of work a task is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WorkClass {
    /// A CPU task.
    Cpu,
    /// A matrix product with a known shape.
    Gemm(GemmShape),
    /// A fused attention kernel; `(batch, seq, heads, head_dim)` when
    /// recorded.
    Attention(Option<[u64; 4]>),
    /// Any other computing kernel (element-wise, normalization,
    /// reduction, optimizer): bound by memory bandwidth.
    Memory,
    /// A memory copy or set.
    Copy,
    /// Communication: index into [`Structure::comms`].
    Comm(u32),
}

/// How the layers were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerMethod {
    /// From scopes named like layers.
    Annotation,
    /// From the repeated sequence of top-level operators.
    ScopePattern,
    /// From the layer block another stage's trace of the job showed (a
    /// stage with one layer per pass repeats nothing).
    OtherStage,
    /// From the repeated sequence of kernels on the busiest stream (no CPU
    /// operators to go by; report only, not editable).
    KernelPattern,
    /// Not found.
    None,
}

/// The training configuration as far as one rank's trace shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DiscoveredConfig {
    /// Tensor-parallel degree.
    pub tp: Option<u32>,
    /// Data-parallel degree.
    pub dp: Option<u32>,
    /// Pipeline-parallel degree.
    pub pp: Option<u32>,
    /// This rank's pipeline stage (0-based).
    pub stage: Option<u32>,
    /// Micro-batches per step.
    pub microbatches: Option<u32>,
    /// Transformer layers on this stage.
    pub layers: Option<u32>,
    /// Hidden size.
    pub hidden: Option<u64>,
    /// FFN (MLP inner) size, whole (not divided by `tp`).
    pub ffn: Option<u64>,
    /// Tokens per micro-batch (sequence x micro-batch size).
    pub tokens: Option<u64>,
    /// Attention heads on this rank.
    pub heads_local: Option<u64>,
    /// Sequence parallelism: tensor-parallel all-gather / reduce-scatter
    /// inside layers rather than all-reduce.
    pub sequence_parallel: Option<bool>,
    /// Gradients reduce-scattered over the data-parallel group (ZeRO-1).
    pub distributed_optimizer: Option<bool>,
}

/// One line of the discovery report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// What was looked for.
    pub what: String,
    /// What was found.
    pub value: String,
    /// How sure.
    pub confidence: Confidence,
    /// Why.
    pub evidence: String,
}

/// One parallel group as discovered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupReport {
    /// Process group name, or `-`.
    pub name: String,
    /// Its role.
    pub class: GroupClass,
    /// Ranks in it, when known.
    pub size: Option<usize>,
    /// Collective tasks in it.
    pub tasks: usize,
    /// Their names (`allreduce`, `send`, ...).
    pub collectives: Vec<String>,
    /// Their bytes, summed over one step.
    pub bytes_per_step: u64,
    /// How the role was found.
    pub confidence: Confidence,
}

/// The discovery report, for `lumos inspect` and `lumos predict`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StructureReport {
    /// `first`, `middle`, `last` or `only` stage of the pipeline, or
    /// `unknown`.
    pub stage_role: String,
    /// Steps looked at.
    pub steps: usize,
    /// Pass order of the first step (`F1 F2 B1 ...`).
    pub pass_order: String,
    /// Whether that order is the 1F1B order of the discovered stage.
    pub one_f_one_b: Option<bool>,
    /// Layers per pass.
    pub layers_per_pass: Option<u32>,
    /// How layers were found.
    pub layer_method: LayerMethod,
    /// The repeated block (forward), as unit tokens.
    pub layer_block: Vec<String>,
    /// Measured time per phase, summed over steps and divided by steps, ms:
    /// CPU span of the phase's units and GPU busy time of their kernels.
    pub phases: BTreeMap<String, PhaseTime>,
    /// Parallel groups.
    pub groups: Vec<GroupReport>,
    /// The configuration.
    pub config: DiscoveredConfig,
    /// Every finding with its confidence.
    pub findings: Vec<Finding>,
    /// `None` when the graph can be edited structurally (layers,
    /// micro-batches, pipeline); else why not.
    pub structural_edits_blocked: Option<String>,
}

/// Time spent in one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PhaseTime {
    /// Sum of the phase's CPU task durations, ms per step.
    pub cpu_ms: f64,
    /// Sum of the phase's GPU task durations, ms per step.
    pub gpu_ms: f64,
}

/// Everything discovery found about one rank's graph.
#[derive(Debug, Clone)]
pub struct Structure {
    /// The graph's units, in global order.
    pub units: Units,
    /// Role of each unit.
    pub roles: Vec<Role>,
    /// Per step.
    pub steps: Vec<StepStructure>,
    /// Work class of each task.
    pub work: Vec<WorkClass>,
    /// Communication tasks, referenced by [`WorkClass::Comm`].
    pub comms: Vec<CommInfo>,
    /// The forward layer block, as unit tokens.
    pub layer_block: Vec<u32>,
    /// The backward layer block, as unit tokens.
    pub backward_block: Vec<u32>,
    /// How layers were found.
    pub layer_method: LayerMethod,
    /// The configuration.
    pub config: DiscoveredConfig,
    /// The report.
    pub report: StructureReport,
}

impl Structure {
    /// The role of the unit holding task `t` ([`Role::Outside`] for tasks
    /// in no unit).
    pub fn role_of_task(&self, t: TaskId) -> Role {
        match self.units.unit_of[t.idx()] {
            NO_UNIT => Role::Outside,
            u => self.roles[u as usize],
        }
    }

    /// The communication info of task `t`, if it is communication.
    pub fn comm(&self, t: TaskId) -> Option<&CommInfo> {
        match self.work[t.idx()] {
            WorkClass::Comm(i) => Some(&self.comms[i as usize]),
            _ => None,
        }
    }

    /// Whether the unit holds a point-to-point send or receive.
    pub fn unit_p2p(&self, u: u32) -> Option<P2p> {
        self.units.units[u as usize]
            .gpu()
            .iter()
            .find_map(|&t| self.comm(t).and_then(|c| c.p2p))
    }
}

/// The layer blocks one stage's trace showed, as token texts, for
/// discovering another stage of the same job.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LayerHint {
    /// The forward block.
    pub forward: Vec<String>,
    /// The backward block.
    pub backward: Vec<String>,
}

impl Structure {
    /// The layer blocks found here, when both were found from this trace.
    pub fn layer_hint(&self) -> Option<LayerHint> {
        let text = |b: &[u32]| -> Vec<String> {
            b.iter()
                .map(|&t| self.units.tokens[t as usize].clone())
                .collect()
        };
        (matches!(
            self.layer_method,
            LayerMethod::ScopePattern | LayerMethod::Annotation
        ) && !self.layer_block.is_empty()
            && !self.backward_block.is_empty())
        .then(|| LayerHint {
            forward: text(&self.layer_block),
            backward: text(&self.backward_block),
        })
    }
}

/// Runs discovery on one rank's graph.
pub fn discover(graph: &Graph, measured: &Measured, ctx: &TraceContext) -> Structure {
    discover_with_hint(graph, measured, ctx, None)
}

/// [`discover`], with the layer blocks of another stage of the same job to
/// fall back on when this trace repeats no block of its own (one layer per
/// pass).
pub fn discover_with_hint(
    graph: &Graph,
    measured: &Measured,
    ctx: &TraceContext,
    hint: Option<&LayerHint>,
) -> Structure {
    let units = Units::build(graph, measured);
    let mut d = Discovery {
        graph,
        ctx,
        units,
        findings: Vec::new(),
    };
    let work_pre = d.work_classes();
    let (roles, steps, block, bwd_block, method) = d.passes_and_layers(hint);
    // Classify communication again now that passes are known (the
    // structural fallback rules need them).
    let comms = d.classify_comms(Some((&roles, &steps)));
    let mut work_pre = work_pre;
    for (i, c) in comms.iter().enumerate() {
        work_pre[c.task.idx()] = WorkClass::Comm(i as u32);
    }
    let config = d.config(&work_pre, &comms, &steps);
    let report = d.report(&comms, &roles, &steps, &block, method, &config);
    Structure {
        units: d.units,
        roles,
        steps,
        work: work_pre,
        comms,
        layer_block: block,
        backward_block: bwd_block,
        layer_method: method,
        config,
        report,
    }
}

struct Discovery<'a> {
    graph: &'a Graph,
    ctx: &'a TraceContext,
    units: Units,
    findings: Vec<Finding>,
}

/// The ring pattern of a collective name.
pub(crate) fn collective_kind(name: &str) -> Option<CollectiveKind> {
    let l = name.to_ascii_lowercase().replace('_', "");
    if l.contains("allreduce") {
        Some(CollectiveKind::AllReduce)
    } else if l.contains("allgather") {
        Some(CollectiveKind::AllGather)
    } else if l.contains("reducescatter") {
        Some(CollectiveKind::ReduceScatter)
    } else if matches!(l.as_str(), "send" | "recv" | "isend" | "irecv" | "sendrecv") {
        Some(CollectiveKind::SendRecv)
    } else {
        None
    }
}

fn p2p_of(name: &str) -> Option<P2p> {
    match name.to_ascii_lowercase().as_str() {
        "send" | "isend" => Some(P2p::Send),
        "recv" | "irecv" => Some(P2p::Recv),
        _ => None,
    }
}

fn class_from_desc(desc: &str) -> Option<GroupClass> {
    let d = desc.to_ascii_uppercase();
    if d.contains("EXPERT") || d.contains("EMBEDDING") || d.contains("POSITION") {
        Some(GroupClass::Other)
    } else if d.contains("TENSOR_AND") || d.contains("DATA_PARALLEL") || d.contains("_DP") {
        Some(GroupClass::Data)
    } else if d.contains("TENSOR") {
        Some(GroupClass::Tensor)
    } else if d.contains("PIPELINE") {
        Some(GroupClass::Pipeline)
    } else if d.contains("MODEL_PARALLEL") {
        Some(GroupClass::ModelParallel)
    } else {
        None
    }
}

fn mode<T: Copy + Ord>(xs: impl IntoIterator<Item = T>) -> Option<T> {
    let mut counts: BTreeMap<T, usize> = BTreeMap::new();
    for x in xs {
        *counts.entry(x).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(v, c)| (c, v))
        .map(|(v, _)| v)
}

impl Discovery<'_> {
    fn finding(&mut self, what: &str, value: String, confidence: Confidence, evidence: String) {
        self.findings.push(Finding {
            what: what.into(),
            value,
            confidence,
            evidence,
        });
    }

    /// Work class of every task: GEMMs by their launching operator's shape,
    /// attention and communication by name and arguments.
    fn work_classes(&self) -> Vec<WorkClass> {
        let g = self.graph;
        let mut out: Vec<WorkClass> = g
            .tasks
            .iter()
            .map(|t| match t.kind {
                TaskKind::Kernel => WorkClass::Memory,
                TaskKind::Memcpy | TaskKind::Memset => WorkClass::Copy,
                _ => WorkClass::Cpu,
            })
            .collect();
        // GEMM kernels: grouped by the GEMM operator that launched them; the
        // one with a GEMM-library name (else the longest) is the product.
        let mut by_op: FxHashMap<u32, Vec<TaskId>> = FxHashMap::default();
        for (i, t) in g.tasks.iter().enumerate() {
            let id = TaskId(i as u32);
            if t.kind != TaskKind::Kernel || t.is_comm() {
                continue;
            }
            if is_attention_kernel_name(g.name(id)) {
                let dims = g.scope_chain(id).find_map(|s| {
                    let sc = &g.scopes[s.0 as usize];
                    sc.input_dims.as_ref().and_then(attention_shape)
                });
                out[i] = WorkClass::Attention(dims);
                continue;
            }
            if let Some(s) = g.scope_chain(id).find(|&s| {
                let sc = &g.scopes[s.0 as usize];
                is_gemm_op(&g.names[sc.name.0 as usize]) && sc.input_dims.is_some()
            }) {
                by_op.entry(s.0).or_default().push(id);
            }
        }
        for (s, kernels) in by_op {
            let sc = &g.scopes[s as usize];
            let Some(shape) = sc
                .input_dims
                .as_ref()
                .and_then(|d| gemm_shape(&g.names[sc.name.0 as usize], d))
            else {
                continue;
            };
            let pick = kernels
                .iter()
                .copied()
                .filter(|&k| is_gemm_kernel_name(g.name(k)))
                .max_by_key(|&k| g.task(k).duration_ns)
                .or_else(|| {
                    kernels
                        .iter()
                        .copied()
                        .max_by_key(|&k| g.task(k).duration_ns)
                });
            if let Some(k) = pick {
                out[k.idx()] = WorkClass::Gemm(shape);
            }
        }
        out
    }

    /// Classifies every communication task. With `roles`, structural rules
    /// apply where the trace names no group description.
    fn classify_comms(&self, structure: Option<(&[Role], &[StepStructure])>) -> Vec<CommInfo> {
        let g = self.graph;
        // Where each comm task sits, for the structural rules: in a layer of
        // every forward pass (tensor parallel), in the last backward only
        // (gradient buckets), in the epilogue.
        let mut in_layer = FxHashSet::default();
        let mut in_last_backward = FxHashSet::default();
        let mut in_epilogue = FxHashSet::default();
        if let Some((roles, steps)) = structure {
            for (i, t) in g.tasks.iter().enumerate() {
                if !t.is_comm() {
                    continue;
                }
                let u = self.units.unit_of[i];
                if u == NO_UNIT {
                    continue;
                }
                match roles[u as usize] {
                    Role::Pass {
                        step,
                        pass,
                        part: Part::Layer(_),
                    } => {
                        let p = &steps[step as usize].passes[pass as usize];
                        if p.kind == PassKind::Forward {
                            in_layer.insert(i);
                        } else if p.microbatch + 1
                            == steps[step as usize]
                                .passes
                                .iter()
                                .filter(|q| q.kind == PassKind::Backward)
                                .count() as u32
                        {
                            in_last_backward.insert(i);
                        }
                    }
                    Role::Pass { step, pass, .. } => {
                        let p = &steps[step as usize].passes[pass as usize];
                        let last_b = steps[step as usize]
                            .passes
                            .iter()
                            .filter(|q| q.kind == PassKind::Backward)
                            .count() as u32;
                        if p.kind == PassKind::Backward && p.microbatch + 1 == last_b {
                            in_last_backward.insert(i);
                        }
                    }
                    Role::Epilogue { .. } => {
                        in_epilogue.insert(i);
                    }
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        for (i, t) in g.tasks.iter().enumerate() {
            let Some(ci) = t.collective else { continue };
            let c = &g.collectives[ci as usize];
            let group = c.process_group.as_deref().and_then(|n| self.ctx.group(n));
            let p2p = p2p_of(&c.name);
            let (class, confidence) = if let Some(cl) = group
                .and_then(|gr| gr.desc.as_deref())
                .and_then(class_from_desc)
            {
                (cl, Confidence::High)
            } else if p2p.is_some() || c.name.eq_ignore_ascii_case("sendrecv") {
                (GroupClass::Pipeline, Confidence::Medium)
            } else if in_layer.contains(&i) {
                (GroupClass::Tensor, Confidence::Medium)
            } else if in_last_backward.contains(&i) {
                (GroupClass::Data, Confidence::Medium)
            } else if group.is_some_and(|gr| {
                gr.desc.as_deref() == Some("default_pg")
                    || (!gr.ranks.is_empty()
                        && gr.ranks.len() as u32 == self.ctx.world_size.unwrap_or(0))
            }) || c.group_size.is_some_and(|s| Some(s) == self.ctx.world_size)
            {
                // The world group: data parallel when nothing else is.
                (GroupClass::Data, Confidence::Low)
            } else if in_epilogue.contains(&i) {
                (GroupClass::ModelParallel, Confidence::Low)
            } else if collective_kind(&c.name) == Some(CollectiveKind::AllReduce)
                && structure.is_some()
            {
                (GroupClass::Data, Confidence::Low)
            } else {
                (GroupClass::Other, Confidence::Low)
            };
            let ranks = group.map(|gr| gr.ranks.clone()).unwrap_or_default();
            out.push(CommInfo {
                task: TaskId(i as u32),
                class,
                confidence,
                kind: collective_kind(&c.name),
                p2p,
                bytes: c.bytes,
                ranks,
                group: c.process_group.clone(),
            });
        }
        out
    }

    /// Cuts each step into prologue, passes (with layers) and epilogue.
    #[allow(clippy::type_complexity)]
    fn passes_and_layers(
        &mut self,
        hint: Option<&LayerHint>,
    ) -> (
        Vec<Role>,
        Vec<StepStructure>,
        Vec<u32>,
        Vec<u32>,
        LayerMethod,
    ) {
        let g = self.graph;
        let units = &self.units;
        let n_units = units.units.len();
        let mut roles = vec![Role::Outside; n_units];
        let mut steps_out = Vec::new();
        // Step of each CPU task.
        let mut step_of_task: FxHashMap<TaskId, u32> = FxHashMap::default();
        for (si, s) in g.steps.iter().enumerate() {
            for &t in &s.tasks {
                if !g.task(t).kind.is_gpu() {
                    step_of_task.insert(t, si as u32);
                }
            }
        }
        let step_of_unit: Vec<Option<u32>> = units
            .units
            .iter()
            .map(|u| u.cpu().first().and_then(|t| step_of_task.get(t).copied()))
            .collect();
        let is_send = |u: u32| -> bool {
            units.units[u as usize].gpu().iter().any(|&t| {
                g.task(t)
                    .collective
                    .is_some_and(|c| p2p_of(&g.collectives[c as usize].name) == Some(P2p::Send))
            })
        };
        let is_bare_wait = |u: u32| -> bool {
            let unit = &units.units[u as usize];
            unit.scope.is_none()
                && unit.cpu().iter().all(|&t| {
                    g.task(t).kind == TaskKind::Runtime && g.name(t).contains("StreamWaitEvent")
                })
        };
        let autograd_thread = |p: ProcId, us: &[u32]| -> bool {
            us.iter().any(|&u| {
                units.units[u as usize].thread == p
                    && units
                        .token(u as usize)
                        .starts_with("autograd::engine::evaluate_function")
            })
        };

        // Per step: main thread, backward threads, bursts.
        struct Raw {
            main: ProcId,
            backward: Vec<ProcId>,
            all: Vec<u32>,
            main_units: Vec<u32>,
            bursts: Vec<Vec<u32>>,
        }
        let mut raws = Vec::new();
        for (si, s) in g.steps.iter().enumerate() {
            let main = g.task(s.first_task).proc;
            let all: Vec<u32> = (0..n_units as u32)
                .filter(|&u| step_of_unit[u as usize] == Some(si as u32))
                .collect();
            let mut backward: Vec<ProcId> = all
                .iter()
                .map(|&u| units.units[u as usize].thread)
                .filter(|&p| p != main)
                .collect();
            backward.sort();
            backward.dedup();
            let with_autograd: Vec<ProcId> = backward
                .iter()
                .copied()
                .filter(|&p| autograd_thread(p, &all))
                .collect();
            let backward = if with_autograd.is_empty() {
                // No autograd names: the other thread that launched most.
                let mut best: Option<(usize, ProcId)> = None;
                for &p in &backward {
                    let launches: usize = all
                        .iter()
                        .filter(|&&u| units.units[u as usize].thread == p)
                        .map(|&u| units.units[u as usize].gpu().len())
                        .sum();
                    if launches > 0 && best.is_none_or(|(b, _)| launches > b) {
                        best = Some((launches, p));
                    }
                }
                best.map(|(_, p)| vec![p]).unwrap_or_default()
            } else {
                with_autograd
            };
            let main_units: Vec<u32> = all
                .iter()
                .copied()
                .filter(|&u| units.units[u as usize].thread == main)
                .collect();
            let mut bursts: Vec<Vec<u32>> = Vec::new();
            let mut open = false;
            for &u in &all {
                let th = units.units[u as usize].thread;
                if backward.contains(&th) {
                    if !open {
                        bursts.push(Vec::new());
                        open = true;
                    }
                    bursts.last_mut().unwrap().push(u);
                } else if th == main {
                    open = false;
                }
            }
            raws.push(Raw {
                main,
                backward,
                all,
                main_units,
                bursts,
            });
        }

        // The layer block: backward first (one pass per burst), then the
        // forward block that repeats as often on the main thread.
        let tok = |u: &u32| units.units[*u as usize].token;
        let burst_tokens: Vec<Vec<u32>> = raws
            .iter()
            .flat_map(|r| r.bursts.iter().map(|b| b.iter().map(tok).collect()))
            .collect();
        // Work that only some bursts do (the gradient buckets of the last
        // micro-batch) is left out of the search, or it would make a
        // multiple of the layer look more regular than the layer.
        let common: FxHashSet<u32> = match burst_tokens.split_first() {
            Some((first, rest)) if !rest.is_empty() => {
                let mut set: FxHashSet<u32> = first.iter().copied().collect();
                for b in rest {
                    let here: FxHashSet<u32> = b.iter().copied().collect();
                    set.retain(|t| here.contains(t));
                }
                set
            }
            _ => burst_tokens.iter().flatten().copied().collect(),
        };
        let filtered: Vec<Vec<u32>> = burst_tokens
            .iter()
            .map(|b| b.iter().copied().filter(|t| common.contains(t)).collect())
            .collect();
        let burst_refs: Vec<&[u32]> = filtered.iter().map(|v| v.as_slice()).collect();
        // A layer is a block of at least two operators (or one named like
        // a layer) that launches GPU work; a single operator repeated (a
        // run of gradient accumulations) is not one.
        let is_layer_block = |block: &[u32]| -> bool {
            block
                .iter()
                .any(|&t| is_layer_name(&units.tokens[t as usize]))
                || (block.iter().any(|&t| t != block[0])
                    && block.iter().any(|&t| {
                        units
                            .units
                            .iter()
                            .any(|u| u.token == t && !u.gpu().is_empty())
                    }))
        };
        let bwd = best_period(&burst_refs).filter(|(_, b)| is_layer_block(b));
        let bwd_counts: Vec<usize> = bwd
            .as_ref()
            .map(|(_, block)| {
                burst_tokens
                    .iter()
                    .map(|b| {
                        chains(b, block, true)
                            .iter()
                            .map(|c| c.starts.len())
                            .max()
                            .unwrap_or(0)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut layers_b = mode(bwd_counts.iter().copied().filter(|&c| c >= 2));
        let main_tokens: Vec<Vec<u32>> = raws
            .iter()
            .map(|r| r.main_units.iter().map(tok).collect())
            .collect();
        // The forward layer runs the operators whose backward the
        // backward layer runs (`X` and `XBackward`): a block sharing a name
        // with the backward block is preferred.
        let forward_name = |t: &str| -> String {
            let t = t
                .strip_prefix("autograd::engine::evaluate_function: ")
                .unwrap_or(t);
            t.trim_end_matches('#')
                .trim_end_matches("Backward")
                .to_owned()
        };
        let bwd_names: FxHashSet<String> = bwd
            .as_ref()
            .map(|(_, b)| {
                b.iter()
                    .map(|&t| forward_name(&units.tokens[t as usize]))
                    .collect()
            })
            .unwrap_or_default();
        let shares_names = |block: &[u32]| {
            block
                .iter()
                .any(|&t| bwd_names.contains(units.tokens[t as usize].as_str()))
        };
        let fwd = layers_b
            .and_then(|l| {
                main_tokens.iter().find_map(|m| {
                    period_with_repeats(m, l, |b| is_layer_block(b) && shares_names(b))
                        .or_else(|| period_with_repeats(m, l, is_layer_block))
                })
            })
            .or_else(|| {
                let refs: Vec<&[u32]> = main_tokens.iter().map(|v| v.as_slice()).collect();
                best_period(&refs)
            })
            .filter(|(_, b)| is_layer_block(b));
        let annotated = |block: &[u32]| {
            block
                .iter()
                .any(|&t| is_layer_name(&units.tokens[t as usize]))
        };
        let mut method = match (&fwd, &bwd) {
            (Some((_, b)), _) | (None, Some((_, b))) if annotated(b) => LayerMethod::Annotation,
            (Some(_), _) | (None, Some(_)) => LayerMethod::ScopePattern,
            (None, None) => LayerMethod::None,
        };
        let mut fwd_block: Vec<u32> = fwd.as_ref().map(|(_, b)| b.clone()).unwrap_or_default();
        let mut bwd_block: Vec<u32> = bwd.as_ref().map(|(_, b)| b.clone()).unwrap_or_default();
        // Nothing repeats (one layer per pass): the blocks another stage of
        // the job showed, if this trace runs them.
        if let (Some(h), true) = (hint, layers_b.is_none() || fwd_block.is_empty()) {
            let id_of: FxHashMap<&str, u32> = units
                .tokens
                .iter()
                .enumerate()
                .map(|(i, t)| (t.as_str(), i as u32))
                .collect();
            let map = |v: &[String]| -> Option<Vec<u32>> {
                v.iter().map(|t| id_of.get(t.as_str()).copied()).collect()
            };
            if let (Some(f), Some(b)) = (map(&h.forward), map(&h.backward)) {
                let counts: Vec<usize> = burst_tokens
                    .iter()
                    .map(|bt| {
                        chains(bt, &b, true)
                            .iter()
                            .map(|c| c.starts.len())
                            .max()
                            .unwrap_or(0)
                    })
                    .collect();
                if let Some(l) = mode(counts.into_iter().filter(|&c| c >= 1)) {
                    layers_b = Some(l);
                    fwd_block = f;
                    bwd_block = b;
                    method = LayerMethod::OtherStage;
                }
            }
        }

        for (si, r) in raws.iter().enumerate() {
            let si = si as u32;
            // Forward passes: chains of the forward block on the main thread,
            // cut into passes of the backward layer count.
            let mtoks = &main_tokens[si as usize];
            let mut fwd_passes: Vec<(Vec<usize>, usize)> = Vec::new(); // (layer starts, end), main-thread indices
            if !fwd_block.is_empty() {
                for c in chains(mtoks, &fwd_block, false) {
                    let per = match layers_b {
                        Some(l) if c.starts.len() > l && c.starts.len() % l == 0 => l,
                        _ => c.starts.len(),
                    };
                    // A pass ends with its last layer's last operator of
                    // the block: what follows (sends, receives, data
                    // loading of the next pass) is between passes.
                    for (grp, ends) in c.starts.chunks(per).zip(c.ends.chunks(per)) {
                        fwd_passes.push((grp.to_vec(), *ends.last().unwrap_or(&c.end)));
                    }
                }
            }
            // Backward passes: the longest chain of the backward block in
            // each burst.
            let mut bwd_passes: Vec<(usize, Vec<usize>, usize)> = Vec::new(); // burst, starts, end
            if !bwd_block.is_empty() {
                for (bi, b) in r.bursts.iter().enumerate() {
                    let bt: Vec<u32> = b.iter().map(tok).collect();
                    if let Some(c) = chains(&bt, &bwd_block, true)
                        .into_iter()
                        .max_by_key(|c| c.starts.len())
                    {
                        bwd_passes.push((bi, c.starts, c.end));
                    }
                }
            }
            // Passes in time order: (first core unit, is forward, index).
            let mut order: Vec<(u32, bool, usize)> = fwd_passes
                .iter()
                .enumerate()
                .map(|(i, (starts, _))| (r.main_units[starts[0]], true, i))
                .chain(
                    bwd_passes
                        .iter()
                        .enumerate()
                        .map(|(i, (bi, _, _))| (r.bursts[*bi][0], false, i)),
                )
                .collect();
            order.sort();
            let mut passes: Vec<PassStructure> = Vec::new();
            let (mut nf, mut nb) = (0u32, 0u32);
            // Core unit range (global) of each pass.
            let mut cores: Vec<(u32, u32)> = Vec::new();
            let mut role_set: Vec<(u32, Role)> = Vec::new();
            for (pi, &(_, is_fwd, i)) in order.iter().enumerate() {
                let pi = pi as u32;
                if is_fwd {
                    let (starts, end) = &fwd_passes[i];
                    let mut layers = Vec::new();
                    for (j, &s) in starts.iter().enumerate() {
                        let e = starts.get(j + 1).copied().unwrap_or(*end);
                        let us: Vec<u32> = r.main_units[s..e].to_vec();
                        for &u in &us {
                            role_set.push((
                                u,
                                Role::Pass {
                                    step: si,
                                    pass: pi,
                                    part: Part::Layer(j as u32),
                                },
                            ));
                        }
                        layers.push(us);
                    }
                    cores.push((r.main_units[starts[0]], r.main_units[*end - 1]));
                    passes.push(PassStructure {
                        kind: PassKind::Forward,
                        microbatch: nf,
                        pre: Vec::new(),
                        layers,
                        post: Vec::new(),
                    });
                    nf += 1;
                } else {
                    let (bi, starts, end) = &bwd_passes[i];
                    let b = &r.bursts[*bi];
                    let pre: Vec<u32> = b[..starts[0]].to_vec();
                    let mut layers = Vec::new();
                    for (j, &s) in starts.iter().enumerate() {
                        let e = starts.get(j + 1).copied().unwrap_or(*end);
                        layers.push(b[s..e].to_vec());
                    }
                    let post: Vec<u32> = b[*end..].to_vec();
                    for &u in &pre {
                        role_set.push((
                            u,
                            Role::Pass {
                                step: si,
                                pass: pi,
                                part: Part::Pre,
                            },
                        ));
                    }
                    for (j, l) in layers.iter().enumerate() {
                        for &u in l {
                            role_set.push((
                                u,
                                Role::Pass {
                                    step: si,
                                    pass: pi,
                                    part: Part::Layer(j as u32),
                                },
                            ));
                        }
                    }
                    for &u in &post {
                        role_set.push((
                            u,
                            Role::Pass {
                                step: si,
                                pass: pi,
                                part: Part::Post,
                            },
                        ));
                    }
                    cores.push((b[0], *b.last().unwrap()));
                    passes.push(PassStructure {
                        kind: PassKind::Backward,
                        microbatch: nb,
                        pre,
                        layers,
                        post,
                    });
                    nb += 1;
                }
            }
            for (u, role) in role_set {
                roles[u as usize] = role;
            }
            // Main-thread units between cores.
            let mut gaps: Vec<Vec<u32>> = vec![Vec::new(); cores.len() + 1];
            for &u in &r.main_units {
                if matches!(roles[u as usize], Role::Pass { .. }) {
                    continue;
                }
                let k = cores.partition_point(|&(s, _)| s < u);
                gaps[k].push(u);
            }
            let mut prologue;
            let mut epilogue = Vec::new();
            let mut pre_main: Vec<Vec<u32>> = vec![Vec::new(); passes.len()];
            let mut post_main: Vec<Vec<u32>> = vec![Vec::new(); passes.len()];
            for (k, gap) in gaps.iter().enumerate() {
                let mut rest = gap.as_slice();
                if k > 0 {
                    // Sends, each with the stream wait right after it (the
                    // compute stream waiting for the send).
                    let mut sends = 0;
                    while sends < rest.len() && is_send(rest[sends]) {
                        sends += 1;
                        if sends < rest.len() && is_bare_wait(rest[sends]) {
                            sends += 1;
                        }
                    }
                    post_main[k - 1].extend_from_slice(&rest[..sends]);
                    rest = &rest[sends..];
                }
                if k < passes.len() {
                    pre_main[k].extend_from_slice(rest);
                } else {
                    epilogue.extend_from_slice(rest);
                }
            }
            // The first pass: only what also precedes every other forward
            // pass is its own; the rest is the step's prologue.
            if let Some(first) = passes.first() {
                let others: Vec<Vec<u32>> = passes
                    .iter()
                    .enumerate()
                    .skip(1)
                    .filter(|(_, p)| p.kind == first.kind)
                    .map(|(i, _)| pre_main[i].iter().map(tok).collect())
                    .collect();
                let common = others.iter().fold(None::<Vec<u32>>, |acc, t| match acc {
                    None => Some(t.clone()),
                    Some(a) => {
                        let n = a
                            .iter()
                            .rev()
                            .zip(t.iter().rev())
                            .take_while(|(x, y)| x == y)
                            .count();
                        Some(a[a.len() - n..].to_vec())
                    }
                });
                let own = match common {
                    Some(c) => {
                        let firsts: Vec<u32> = pre_main[0].iter().map(tok).collect();
                        firsts
                            .iter()
                            .rev()
                            .zip(c.iter().rev())
                            .take_while(|(x, y)| x == y)
                            .count()
                    }
                    None => 0,
                };
                let split = pre_main[0].len() - own;
                prologue = pre_main[0][..split].to_vec();
                pre_main[0].drain(..split);
            } else {
                prologue = std::mem::take(&mut epilogue);
            }
            for (pi, p) in passes.iter_mut().enumerate() {
                let mut pre = pre_main[pi].clone();
                pre.append(&mut p.pre);
                p.pre = pre;
                let mut post = std::mem::take(&mut p.post);
                post.extend_from_slice(&post_main[pi]);
                p.post = post;
                for &u in &p.pre {
                    roles[u as usize] = Role::Pass {
                        step: si,
                        pass: pi as u32,
                        part: Part::Pre,
                    };
                }
                for &u in &p.post {
                    roles[u as usize] = Role::Pass {
                        step: si,
                        pass: pi as u32,
                        part: Part::Post,
                    };
                }
            }
            for &u in &prologue {
                roles[u as usize] = Role::Prologue { step: si };
            }
            for &u in &epilogue {
                roles[u as usize] = Role::Epilogue { step: si };
            }
            // Anything else in the step (other threads, bursts with no
            // layers) goes with the unit before it.
            let mut last = Role::Prologue { step: si };
            for &u in &r.all {
                match roles[u as usize] {
                    Role::Outside => {
                        roles[u as usize] = last;
                        if let Role::Pass { pass, part, .. } = last {
                            let p = &mut passes[pass as usize];
                            match part {
                                Part::Pre => p.pre.push(u),
                                Part::Post => p.post.push(u),
                                Part::Layer(j) => p.layers[j as usize].push(u),
                            }
                        } else if let Role::Epilogue { .. } = last {
                            epilogue.push(u);
                        } else {
                            prologue.push(u);
                        }
                    }
                    role => last = role,
                }
            }
            for p in &mut passes {
                p.pre.sort_unstable();
                p.post.sort_unstable();
                for l in &mut p.layers {
                    l.sort_unstable();
                }
            }
            prologue.sort_unstable();
            epilogue.sort_unstable();
            let lo = r.all.first().copied().unwrap_or(0);
            let hi = r.all.last().map_or(0, |&u| u + 1);
            steps_out.push(StepStructure {
                main: r.main,
                backward: r.backward.clone(),
                prologue,
                passes,
                epilogue,
                units: lo..hi,
            });
        }
        if method == LayerMethod::None {
            // No CPU operators to go by: look for the repeated block among
            // the kernels of the busiest stream (report only).
            if let Some(n) = self.kernel_pattern() {
                method = LayerMethod::KernelPattern;
                self.finding(
                    "layers (kernel pattern)",
                    format!("{n} repeats of a kernel block"),
                    Confidence::Low,
                    "no repeated operator block; repeated kernel sequence on the busiest stream"
                        .into(),
                );
            }
        }
        (roles, steps_out, fwd_block, bwd_block, method)
    }

    /// Repeats of the most repeated kernel block on the busiest stream.
    fn kernel_pattern(&self) -> Option<usize> {
        let g = self.graph;
        let stream = g
            .processors
            .iter()
            .filter(|p| p.is_stream())
            .max_by_key(|p| p.tasks.len())?;
        let toks: Vec<u32> = stream.tasks.iter().map(|&t| g.task(t).name.0).collect();
        let toks = &toks[..toks.len().min(20_000)];
        let (p, block) = best_period(&[toks])?;
        let n = chains(toks, &block, false)
            .iter()
            .map(|c| c.starts.len())
            .max()?;
        (p > 1 && n >= 2).then_some(n)
    }

    fn config(
        &mut self,
        work: &[WorkClass],
        comms: &[CommInfo],
        steps: &[StepStructure],
    ) -> DiscoveredConfig {
        let g = self.graph;
        let mut c = DiscoveredConfig::default();
        // Group sizes: from the process groups by description, else from
        // the classified collectives.
        let size_of = |class: GroupClass| -> Option<(u32, Confidence)> {
            comms
                .iter()
                .filter(|x| x.class == class)
                .find_map(|x| {
                    if !x.ranks.is_empty() {
                        Some((x.ranks.len() as u32, x.confidence))
                    } else {
                        g.collectives[g.task(x.task).collective? as usize]
                            .group_size
                            .map(|s| (s, Confidence::Low))
                    }
                })
                .or_else(|| {
                    self.ctx.groups.iter().find_map(|gr| {
                        let cl = class_from_desc(gr.desc.as_deref()?)?;
                        (cl == class && !gr.ranks.is_empty())
                            .then_some((gr.ranks.len() as u32, Confidence::High))
                    })
                })
        };
        for (class, slot, what) in [
            (GroupClass::Tensor, &mut c.tp, "tensor-parallel degree"),
            (GroupClass::Data, &mut c.dp, "data-parallel degree"),
            (GroupClass::Pipeline, &mut c.pp, "pipeline-parallel degree"),
        ] {
            // Data-parallel collectives with no group recorded: the world,
            // over the model-parallel ranks.
            let size = size_of(class).or_else(|| {
                let world = self.ctx.world_size?;
                (class == GroupClass::Data && comms.iter().any(|x| x.class == class))
                    .then_some((world, Confidence::Low))
            });
            match size {
                Some((n, conf)) => {
                    *slot = Some(n);
                    self.findings.push(Finding {
                        what: what.into(),
                        value: n.to_string(),
                        confidence: conf,
                        evidence: "size of the group its collectives use".into(),
                    });
                }
                None => {
                    *slot = Some(1);
                    self.findings.push(Finding {
                        what: what.into(),
                        value: "1".into(),
                        confidence: Confidence::Low,
                        evidence: format!("no {} collectives", class.as_str()),
                    });
                }
            }
        }
        // Stage: position of this rank in the pipeline group.
        let pp_ranks = self
            .ctx
            .groups
            .iter()
            .find(|gr| gr.desc.as_deref().and_then(class_from_desc) == Some(GroupClass::Pipeline))
            .map(|gr| gr.ranks.clone())
            .or_else(|| {
                comms
                    .iter()
                    .find(|x| x.class == GroupClass::Pipeline && !x.ranks.is_empty())
                    .map(|x| x.ranks.clone())
            });
        if let Some(mut r) = pp_ranks {
            r.sort_unstable();
            c.stage = r
                .iter()
                .position(|&x| x == self.ctx.rank as i64)
                .map(|p| p as u32);
        } else if c.pp == Some(1) {
            c.stage = Some(0);
        }
        if let Some(s) = steps.first() {
            let nb = s
                .passes
                .iter()
                .filter(|p| p.kind == PassKind::Backward)
                .count();
            let nf = s.passes.len() - nb;
            if nb > 0 {
                c.microbatches = Some(nb as u32);
                let conf = if nb == nf {
                    Confidence::High
                } else {
                    Confidence::Low
                };
                self.finding(
                    "micro-batches",
                    nb.to_string(),
                    conf,
                    format!("{nb} backward bursts on the autograd thread, {nf} forward layer runs"),
                );
            }
            let counts: Vec<usize> = s.passes.iter().map(|p| p.layers.len()).collect();
            if let Some(l) = mode(counts.iter().copied()) {
                c.layers = Some(l as u32);
                let all_same = counts.iter().all(|&x| x == l);
                self.finding(
                    "layers on this stage",
                    l.to_string(),
                    if all_same {
                        Confidence::High
                    } else {
                        Confidence::Low
                    },
                    format!("layers per pass: {counts:?}"),
                );
            }
        }
        // Shapes from the first forward layer's GEMMs.
        let first_fwd_layer: Option<&Vec<u32>> = steps
            .iter()
            .flat_map(|s| s.passes.iter())
            .find(|p| p.kind == PassKind::Forward)
            .and_then(|p| p.layers.first());
        if let Some(layer) = first_fwd_layer {
            let shapes: Vec<GemmShape> = layer
                .iter()
                .flat_map(|&u| self.units.units[u as usize].gpu().iter())
                .filter_map(|&t| match work[t.idx()] {
                    WorkClass::Gemm(s) => Some(s),
                    _ => None,
                })
                .collect();
            if !shapes.is_empty() {
                c.tokens = mode(shapes.iter().map(|s| s.m));
                let dims: Vec<u64> = shapes.iter().flat_map(|s| [s.n, s.k]).collect();
                c.hidden = mode(dims.iter().copied());
                let h = c.hidden.unwrap_or(0);
                let tp = c.tp.unwrap_or(1) as u64;
                c.ffn = mode(
                    dims.iter()
                        .copied()
                        .filter(|&d| d != h && d * tp != 3 * h && d * tp != h),
                )
                .map(|f| f * tp);
                self.finding(
                    "hidden size",
                    h.to_string(),
                    Confidence::Medium,
                    format!(
                        "most common GEMM dimension in a forward layer ({} GEMMs)",
                        shapes.len()
                    ),
                );
                if let Some(f) = c.ffn {
                    self.finding(
                        "FFN size",
                        f.to_string(),
                        Confidence::Medium,
                        "the other repeated GEMM dimension in a forward layer, times tp".into(),
                    );
                }
            }
            c.heads_local = layer
                .iter()
                .flat_map(|&u| self.units.units[u as usize].gpu().iter())
                .find_map(|&t| match work[t.idx()] {
                    WorkClass::Attention(Some(s)) => Some(s[2]),
                    _ => None,
                });
            // Sequence parallelism: tensor-parallel all-gather or
            // reduce-scatter inside layers.
            let tp_kinds: Vec<CollectiveKind> = layer
                .iter()
                .flat_map(|&u| self.units.units[u as usize].gpu().iter())
                .filter_map(|&t| match work[t.idx()] {
                    WorkClass::Comm(i) if comms[i as usize].class == GroupClass::Tensor => {
                        comms[i as usize].kind
                    }
                    _ => None,
                })
                .collect();
            if !tp_kinds.is_empty() {
                c.sequence_parallel = Some(tp_kinds.iter().any(|k| {
                    matches!(k, CollectiveKind::AllGather | CollectiveKind::ReduceScatter)
                }));
            } else if c.tp == Some(1) {
                c.sequence_parallel = Some(false);
            }
        }
        let dp_kinds: Vec<CollectiveKind> = comms
            .iter()
            .filter(|x| x.class == GroupClass::Data)
            .filter_map(|x| x.kind)
            .collect();
        if !dp_kinds.is_empty() {
            c.distributed_optimizer = Some(dp_kinds.contains(&CollectiveKind::ReduceScatter));
        }
        c
    }

    #[allow(clippy::too_many_arguments)]
    fn report(
        &mut self,
        comms: &[CommInfo],
        roles: &[Role],
        steps: &[StepStructure],
        block: &[u32],
        method: LayerMethod,
        config: &DiscoveredConfig,
    ) -> StructureReport {
        let g = self.graph;
        let first = steps.first();
        // Stage role from the point-to-point work of the forward passes.
        let p2p_in = |p: &PassStructure, dir: P2p, part: Part| -> bool {
            let us: &[u32] = match part {
                Part::Pre => &p.pre,
                _ => &p.post,
            };
            us.iter().any(|&u| {
                self.units.units[u as usize]
                    .gpu()
                    .iter()
                    .any(|&t| comms.iter().any(|c| c.task == t && c.p2p == Some(dir)))
            })
        };
        let stage_role =
            match first.and_then(|s| s.passes.iter().find(|p| p.kind == PassKind::Forward)) {
                Some(f) => {
                    let recv = p2p_in(f, P2p::Recv, Part::Pre);
                    let send = p2p_in(f, P2p::Send, Part::Post);
                    match (recv, send) {
                        (false, true) => "first",
                        (true, true) => "middle",
                        (true, false) => "last",
                        (false, false) => "only",
                    }
                }
                None => "unknown",
            };
        let one_f_one_b = match (first, config.pp, config.stage, config.microbatches) {
            (Some(s), Some(pp), Some(stage), Some(m)) if !s.passes.is_empty() => {
                let want: Vec<(PassKind, u32)> =
                    lumos_models::one_f_one_b(stage as usize, pp as usize, m as usize)
                        .into_iter()
                        .map(|p| match p {
                            lumos_models::Pass::Forward(k) => (PassKind::Forward, k as u32),
                            lumos_models::Pass::Backward(k) => (PassKind::Backward, k as u32),
                        })
                        .collect();
                let got: Vec<(PassKind, u32)> =
                    s.passes.iter().map(|p| (p.kind, p.microbatch)).collect();
                Some(want == got)
            }
            _ => None,
        };
        if let (Some(s), Some(ok)) = (first, one_f_one_b) {
            self.finding(
                "pipeline schedule",
                s.order(),
                if ok {
                    Confidence::High
                } else {
                    Confidence::Low
                },
                if ok {
                    format!(
                        "the 1F1B order of stage {} of {}",
                        config.stage.unwrap_or(0),
                        config.pp.unwrap_or(1)
                    )
                } else {
                    "not the 1F1B order of the discovered stage".into()
                },
            );
        }
        if method != LayerMethod::None && method != LayerMethod::KernelPattern {
            self.finding(
                "layer block",
                format!("{} operators", block.len()),
                if method == LayerMethod::Annotation {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
                match method {
                    LayerMethod::Annotation => "scopes named like layers".into(),
                    LayerMethod::OtherStage => "the layer block of another stage's trace of the job (one layer per pass here)".into(),
                    _ => {
                        "repeated block of top-level operators (backward bursts, then main thread)"
                            .into()
                    }
                },
            );
        }
        // Phases.
        let nsteps = steps.len().max(1) as f64;
        let mut phases: BTreeMap<String, PhaseTime> = BTreeMap::new();
        for (u, unit) in self.units.units.iter().enumerate() {
            let phase = match roles[u] {
                Role::Outside => "outside",
                Role::Prologue { .. } => "prologue",
                Role::Epilogue { .. } => "optimizer",
                Role::Pass { step, pass, .. } => {
                    match steps[step as usize].passes[pass as usize].kind {
                        PassKind::Forward => "forward",
                        PassKind::Backward => "backward",
                    }
                }
            };
            let e = phases.entry(phase.into()).or_default();
            for &t in unit.cpu() {
                e.cpu_ms += g.task(t).duration_ns as f64 / 1e6 / nsteps;
            }
            for &t in unit.gpu() {
                e.gpu_ms += g.task(t).duration_ns as f64 / 1e6 / nsteps;
            }
        }
        // Groups.
        let mut groups: BTreeMap<(String, GroupClass), GroupReport> = BTreeMap::new();
        for c in comms {
            let name = c.group.clone().unwrap_or_else(|| "-".into());
            let e = groups
                .entry((name.clone(), c.class))
                .or_insert_with(|| GroupReport {
                    name,
                    class: c.class,
                    size: (!c.ranks.is_empty()).then_some(c.ranks.len()),
                    tasks: 0,
                    collectives: Vec::new(),
                    bytes_per_step: 0,
                    confidence: c.confidence,
                });
            e.tasks += 1;
            let cname = g.collectives[g.task(c.task).collective.unwrap_or(0) as usize]
                .name
                .clone();
            if !e.collectives.contains(&cname) {
                e.collectives.push(cname);
            }
            let in_first_step = matches!(
                self.units.unit_of[c.task.idx()],
                u if u != NO_UNIT
                    && matches!(
                        roles[u as usize],
                        Role::Prologue { step: 0 } | Role::Pass { step: 0, .. } | Role::Epilogue { step: 0 }
                    )
            );
            if in_first_step {
                e.bytes_per_step += c.bytes.unwrap_or(0);
            }
        }
        for gr in groups.values() {
            self.findings.push(Finding {
                what: format!("process group {}", gr.name),
                value: gr.class.as_str().into(),
                confidence: gr.confidence,
                evidence: match gr.confidence {
                    Confidence::High => "process group description".into(),
                    Confidence::Medium => {
                        "point-to-point names or where its collectives run".into()
                    }
                    Confidence::Low => "weak: group size or phase only".into(),
                },
            });
        }
        let blocked = self.units.inconsistency.clone().or_else(|| {
            if steps.is_empty() {
                Some("no ProfilerStep annotations".into())
            } else if !matches!(
                method,
                LayerMethod::ScopePattern | LayerMethod::Annotation | LayerMethod::OtherStage
            ) {
                Some("no repeated layer block among the CPU operators".into())
            } else if steps.iter().any(|s| {
                s.passes
                    .iter()
                    .filter(|p| p.kind == PassKind::Forward)
                    .count()
                    != s.passes
                        .iter()
                        .filter(|p| p.kind == PassKind::Backward)
                        .count()
            }) {
                Some("forward and backward pass counts differ".into())
            } else {
                None
            }
        });
        StructureReport {
            stage_role: stage_role.into(),
            steps: steps.len(),
            pass_order: first.map(|s| s.order()).unwrap_or_default(),
            one_f_one_b,
            layers_per_pass: config.layers,
            layer_method: method,
            layer_block: block
                .iter()
                .map(|&t| self.units.tokens[t as usize].clone())
                .collect(),
            phases,
            groups: groups.into_values().collect(),
            config: config.clone(),
            findings: std::mem::take(&mut self.findings),
            structural_edits_blocked: blocked,
        }
    }
}
