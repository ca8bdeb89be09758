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
//! Discovery runs in named steps, each in its own module:
//!
//! 1. [`Units::build`]: the graph cut into units (top-level operators and
//!    the GPU work they launched) in one global order.
//! 2. `work`: the work class of every task (GEMM shapes, attention).
//! 3. `passes` (with `layers`): each step cut into prologue, passes with
//!    their layers, and epilogue; the role of every unit.
//! 4. `comms`: the parallel group of every communication task, from the
//!    process groups' descriptions, else from where it runs.
//! 5. `config`: the configuration (degrees, stage, micro-batches, layers,
//!    shapes) with a finding for each value; then `interleave`: whether
//!    the stage runs the interleaved 1F1B schedule, each pass's model
//!    chunk and micro-batch when it does; then the first pass of each
//!    step given what opens every pass of its chunk (`passes`); then
//!    `tails`: the work a forward leaves behind it (the loss head) given
//!    back to it where the passes after it differ.
//! 6. `report`: the report `lumos inspect` and `lumos predict` show.
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
//! own (every other forward of its model chunk, once the chunks are known),
//! the rest is the step's prologue; a step's only forward owns them from
//! the first that is per-micro-batch in kind (`lone.rs`). Where annotations wrap whole
//! passes (`## forward ##`, DDP's forward) and the structure cannot be
//! edited, the units are cut again inside them ([`Units::wrappers`]).

mod comms;
mod config;
mod interleave;
mod layers;
mod lone;
mod passes;
mod report;
mod tails;
mod work;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use lumos_graph::{Graph, Measured, ProcId, TaskId};

use crate::context::TraceContext;
use crate::units::{Units, NO_UNIT};

pub(crate) use comms::is_all_to_all;
pub use comms::{CommInfo, GroupClass, P2p};
pub use config::DiscoveredConfig;
pub(crate) use layers::is_gradient_function;
pub(crate) use report::one_stage_of_one_micro_batch;
pub use report::{Finding, GroupReport, PhaseTime, StructureReport};
pub use work::WorkClass;

/// Forward or backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// Model chunk (virtual pipeline stage on this stage), 0-based; 0
    /// unless the stage runs the interleaved schedule.
    pub chunk: u32,
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
    /// How many of the step's passes are backward passes.
    pub fn backward_passes(&self) -> usize {
        (self.passes.iter())
            .filter(|p| p.kind == PassKind::Backward)
            .count()
    }

    /// The pass order as `F1 F2 B1 ...` (1-based micro-batches), with
    /// each pass's model chunk as `F1.0 F2.0 F1.1 ...` when the stage runs
    /// the interleaved schedule.
    pub fn order(&self) -> String {
        let chunks = self.passes.iter().any(|p| p.chunk > 0);
        self.passes
            .iter()
            .map(|p| {
                let kind = match p.kind {
                    PassKind::Forward => 'F',
                    PassKind::Backward => 'B',
                };
                if chunks {
                    format!("{kind}{}.{}", p.microbatch + 1, p.chunk)
                } else {
                    format!("{kind}{}", p.microbatch + 1)
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How sure a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Confidence {
    /// A guess from weak evidence.
    Low,
    /// Inferred from a consistent pattern.
    Medium,
    /// Read from the trace, or inferred and cross-checked.
    High,
}

/// How the layers were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// Whether the passes were cut with the stage's own pass blocks, one
    /// layer each: a pipeline stage of one layer per pass read without
    /// another stage's blocks, whose backward block stays unknown.
    pub own_pass_blocks: bool,
    /// Whether the CPU side shows a backward pass (an autograd
    /// operator); `None` for a trace without CPU operators, which cannot
    /// tell. Found once here: communication classification and predict's
    /// checks both read it.
    pub shows_backward: Option<bool>,
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

    /// Whether the traced pipeline sends overlap compute (Megatron's
    /// `overlap_p2p_comm`): no transfer is followed by a device
    /// synchronization, some send by no stream wait either (held sends are
    /// each followed by the compute stream's wait; a wait after an
    /// overlapped send is another stream's, the data-parallel one waiting
    /// for gradients), and some receive by a stream wait, which shows that
    /// the trace records the waits a held send would have. `None` without
    /// pipeline transfers in the passes; false also when the trace cannot
    /// show it (no stream waits recorded).
    pub fn p2p_overlapped(&self) -> Option<bool> {
        let (mut transfers, mut synced, mut free_send, mut recv_waited) =
            (false, false, false, false);
        for pass in self.steps.iter().flat_map(|st| st.passes.iter()) {
            let us: Vec<u32> = pass.units().collect();
            for (i, &u) in us.iter().enumerate() {
                let Some(dir) = self.unit_p2p(u) else {
                    continue;
                };
                transfers = true;
                let after = &us[i + 1..];
                let waits = after
                    .iter()
                    .take_while(|&&w| self.units.is_bare_wait(w as usize))
                    .count();
                let sync = after
                    .get(waits)
                    .is_some_and(|&w| self.units.is_bare_device_sync(w as usize));
                synced |= sync;
                match dir {
                    P2p::Send => free_send |= waits == 0 && !sync,
                    P2p::Recv => recv_waited |= waits > 0,
                }
            }
        }
        transfers.then_some(!synced && free_send && recv_waited)
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

/// The layer blocks a pipeline stage that runs one layer per pass offers
/// the job, when no stage repeats a block inside its passes (as many
/// stages as layers, or one layer per model chunk): the forward and
/// backward work of each of its passes, less what runs between passes.
/// On a middle stage that is the layer; an end stage's also holds the
/// embedding or the loss, so a job takes the candidate that every stage
/// runs (`Baseline` tries the shortest first). `None` where the trace has
/// no pipeline transfers or its passes differ.
pub fn one_layer_hint(graph: &Graph, measured: &Measured) -> Option<LayerHint> {
    let units = Units::build(graph, measured);
    let (f, b) = passes::one_layer_candidate(graph, &units)?;
    let text = |v: &[u32]| {
        v.iter()
            .map(|&t| units.tokens[t as usize].clone())
            .collect()
    };
    Some(LayerHint {
        forward: text(&f),
        backward: text(&b),
    })
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
    // The units are built on one core (a sequential walk of each
    // thread's tasks); the work classes and whether a backward pass
    // shows, which read the graph alone, take the other meanwhile.
    let (units, (work, backward)) = rayon::join(
        || Units::build(graph, measured),
        || (work::work_classes(graph), comms::shows_backward(graph)),
    );
    let s = discover_units(graph, ctx, hint, units, work, backward, Vec::new());
    // Without steps no cut into passes helps.
    if !blocked(&s) || s.steps.is_empty() {
        return s;
    }
    // Annotations around whole passes (`## forward ##`, DDP's
    // `DistributedDataParallel.forward`) make each pass one unit, so no
    // block repeats, or one unit of a whole step holds work that runs
    // after the next: the units are taken inside them instead, where that
    // makes the structure editable (else the structure found first
    // stands).
    let why = report::structure_blocked(&s).unwrap_or_default();
    // The work classes again for each try (the first structure's hold its
    // communication tasks), made once: this path is taken by traces that
    // cannot be edited and have such annotations (an optimizer's step is
    // one), up to one discovery per level.
    let work = work::work_classes(graph);
    let mut wrappers: Vec<bool> = Vec::new();
    let mut last = s.units.wrappers(graph);
    for _ in 0..MAX_WRAPPER_DEPTH {
        let Some(more) = last.take() else { break };
        wrappers.resize(more.len().max(wrappers.len()), false);
        let mut added = false;
        for (w, m) in wrappers.iter_mut().zip(more) {
            added |= m && !*w;
            *w |= m;
        }
        if !added {
            break;
        }
        let units = Units::build_below(graph, measured, &wrappers);
        let names: Vec<&str> = (wrappers.iter().enumerate())
            .filter(|(_, &w)| w)
            .map(|(i, _)| graph.names[i].as_str())
            .collect();
        let found = finding(
            "units",
            format!("taken inside {}", quoted_list(&names)),
            Confidence::Medium,
            format!(
                "these annotations each hold many operators (or one such annotation); taken as \
                 one unit each, the structure could not be edited: {why}"
            ),
        );
        let inside = discover_units(graph, ctx, hint, units, work.clone(), backward, vec![found]);
        // The first level that can be edited is kept.
        if !blocked(&inside) {
            return inside;
        }
        last = inside.units.wrappers(graph);
    }
    s
}

/// Annotations inside annotations that [`discover_with_hint`] looks
/// through for a repeated block, at most.
const MAX_WRAPPER_DEPTH: usize = 4;

/// Whether the units found in `s` cannot be cut for structural edits
/// ([`report::structure_blocked`]): a structure refused edits for its one
/// micro-batch alone is settled (no other cut of its units, nor another
/// stage's layer blocks, gives it a second micro-batch).
pub(crate) fn blocked(s: &Structure) -> bool {
    report::structure_blocked(s).is_some()
}

/// `names`, each in backquotes, joined by commas.
fn quoted_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    quoted.join(", ")
}

/// Discovery's steps after the units: passes and layers, communication,
/// configuration, report. `backward` is whether the graph shows a
/// backward pass ([`comms::shows_backward`]); `findings` are those found
/// before.
fn discover_units(
    graph: &Graph,
    ctx: &TraceContext,
    hint: Option<&LayerHint>,
    units: Units,
    mut work: Vec<WorkClass>,
    backward: Option<bool>,
    mut findings: Vec<Finding>,
) -> Structure {
    let cut = passes::passes_and_layers(graph, &units, hint, &mut findings);
    let comms = comms::classify_comms(graph, ctx, &units, &cut.roles, &cut.steps, backward);
    for (i, c) in comms.iter().enumerate() {
        work[c.task.idx()] = WorkClass::Comm(i as u32);
    }
    let mut s = Structure {
        units,
        roles: cut.roles,
        steps: cut.steps,
        work,
        comms,
        layer_block: cut.forward_block,
        backward_block: cut.backward_block,
        layer_method: cut.method,
        own_pass_blocks: cut.own_pass_blocks,
        shows_backward: backward,
        config: DiscoveredConfig::default(),
        report: report::placeholder(),
    };
    // The configuration reads the finished structure; the report reads
    // the configuration too.
    s.config = config::infer_config(graph, ctx, &s, &mut findings);
    interleave::detect(&mut s, &mut findings);
    // With the chunks known, the first pass owns what its chunk's passes
    // share (the last stage's first receive).
    passes::own_first_passes_per_chunk(&mut s);
    // With the chunks known, each forward's loss head is its own.
    tails::give_forwards_their_tails(&mut s);
    s.report = report::report(graph, &s, findings);
    s
}

/// The work class of each task of `graph` from its names and shapes alone
/// (no structure discovery): communication tasks are not told apart here
/// and read as [`WorkClass::Memory`].
pub(crate) fn work_classes(graph: &Graph) -> Vec<WorkClass> {
    work::work_classes(graph)
}

/// One line of evidence for the report.
fn finding(what: &str, value: String, confidence: Confidence, evidence: String) -> Finding {
    Finding {
        what: what.into(),
        value,
        confidence,
        evidence,
    }
}

/// The most frequent value (the largest among equally frequent ones).
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

/// The tokens of units `us`.
fn tokens(units: &Units, us: &[u32]) -> Vec<u32> {
    us.iter().map(|&u| units.units[u as usize].token).collect()
}
