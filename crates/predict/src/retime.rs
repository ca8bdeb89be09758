//! Durations: every task of the predicted stages re-timed from its traced
//! duration and the change from the baseline configuration to the target
//! one, each tagged with its [`Source`]:
//!
//! | task | new duration | source |
//! |---|---|---|
//! | CPU task, copy | as traced | measured |
//! | GEMM | traced x `T(new flops) / T(old flops)`, fitted curve | scaled |
//! | attention | traced x the same ratio for `b s^2 h / tp` | scaled |
//! | memory-bound kernel in a layer | traced x activation ratio (`h/tp` with sequence parallelism, `ffn/tp` for activation functions) | scaled |
//! | memory-bound kernel in prologue or optimizer | traced x parameter ratio of the stage | scaled |
//! | other memory-bound kernel | as traced | measured |
//! | collective | traced + `T_target(new) - T_base(old)` | scaled |
//! | collective without a recorded size | the same, its size inferred from its slot's envelope (the `slots` module) | modelled |
//! | collective of a group of one (any kind) | 0: not issued | modelled |
//! | collective of a kind the network model does not know (broadcast) | as traced | measured |
//! | transfer between coupled stages | `T_target(new)` | modelled (the `couple` module) |
//!
//! where `T_base` is the network model calibrated on the trace and
//! `T_target` the same model, or the one given with `--network`. Kernel
//! speed-ups multiply last. The identity keeps every traced duration as it
//! is.

use std::sync::Arc;

use lumos_graph::{DepKind, Graph, ScopeId, TaskId};
use lumos_models::CollectiveKind;
use lumos_trace::InputDims;

use rustc_hash::FxHashSet;

use crate::assemble::Tag;
use crate::baseline::Baseline;
use crate::config::{Config, Coord, Layout};
use crate::discover::{
    is_gradient_function, CommInfo, GroupClass, P2p, Part, PassKind, Role, Structure, WorkClass,
};
use crate::edits::{
    stage_coord, structural_change, tp_from_one, PredictedStage, Prediction, Target,
};
use crate::models::{CommModel, ComputeModel, Source};
use crate::plan::{first_backward_steals, StageRole};
use crate::shapes::GemmShape;
use crate::slots::unsized_envelopes;

/// Ratios from the baseline configuration to the target one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ratios {
    pub hidden: f64,
    pub ffn: f64,
    /// Traced tp over target tp: how much a tensor-parallel shard grows.
    pub tp_shard: f64,
    /// Traced dp over target dp.
    pub dp_shard: f64,
    /// Target micro-batch size over traced: how the tokens of a
    /// micro-batch grow.
    pub tokens: f64,
}

impl Ratios {
    pub(crate) fn of(base: &Config, t: &Config) -> Ratios {
        let r = |a: u64, b: u64| if a == 0 { 1.0 } else { b as f64 / a as f64 };
        Ratios {
            hidden: r(base.hidden, t.hidden),
            ffn: r(base.ffn, t.ffn),
            tp_shard: base.tp as f64 / t.tp.max(1) as f64,
            dp_shard: base.dp as f64 / t.dp.max(1) as f64,
            tokens: r(base.micro_batch, t.micro_batch),
        }
    }

    /// How the tokens of work at `place` grow: with the micro-batch in a
    /// forward or backward pass, not at all in a step's prologue or
    /// epilogue (the optimizer) or outside steps.
    fn tokens_in(&self, place: Role) -> f64 {
        match place {
            Role::Pass { .. } => self.tokens,
            _ => 1.0,
        }
    }

    /// How the bytes of a micro-batch's activations (a pipeline transfer)
    /// grow: with the tokens and the hidden size, and with the
    /// tensor-parallel shard where the sequence is split over it.
    pub(crate) fn activations(&self, sequence_parallel: bool) -> f64 {
        self.tokens
            * self.hidden
            * if sequence_parallel {
                self.tp_shard
            } else {
                1.0
            }
    }
}

/// Per input: the `(in, out)` sizes of the weights of its first forward
/// layer's MoE routers, `[tokens, h] x [h, experts]`, which no framework
/// splits over tensor-parallel ranks. A forward GEMM of the layer is a
/// router's when an operator or annotation launching it names one
/// ([`names_a_router`]: `router`, a `gate` module), or when its weight
/// pairs the hidden size, as its input, with a size that is not a shard's
/// ([`Dims::layer_matrix_split`]: at most [`SMALL_DIM`] experts). Only
/// the name tells a router whose experts are exactly a shard's size
/// (`h/tp`, `3h/tp`, `ffn/tp`). A size pair that another GEMM of the layer
/// also multiplies by (a column-parallel `[h, ffn/tp]` where the experts
/// are `ffn/tp`) is left out: those GEMMs and weights cannot be told
/// apart, and the projections are the layer's larger part.
fn router_weights(
    base: &Baseline,
    dims: Dims,
    head_dim: u64,
    router_names: &[Vec<bool>],
) -> Vec<FxHashSet<(u64, u64)>> {
    (base.inputs.iter().zip(&base.structures).zip(router_names))
        .map(|((inp, s), router_name)| {
            let g = &inp.graph;
            let Some(layer) = (s.steps.iter().flat_map(|st| st.passes.iter()))
                .find(|p| p.kind == PassKind::Forward)
                .and_then(|p| p.layers.first())
            else {
                return FxHashSet::default();
            };
            let (mut routers, mut others) = (FxHashSet::default(), FxHashSet::default());
            for &t in layer.iter().flat_map(|&u| s.units.units[u as usize].gpu()) {
                let WorkClass::Gemm(sh) = s.work[t.idx()] else {
                    continue;
                };
                let named = launched_under(g, router_name, t);
                // At most SMALL_DIM experts, as the docs say: a grouped-query
                // QKV shard of another width (3072 at h 4096, tp 2) is no
                // shard of `layer_matrix_split`'s where the head size is
                // unknown, and no router either.
                let shaped = dims.hidden > 0
                    && sh.k == dims.hidden
                    && sh.n <= SMALL_DIM
                    && !dims.layer_matrix_split(head_dim, sh.k, sh.n);
                if named || shaped {
                    routers.insert((sh.k, sh.n));
                } else {
                    others.insert((sh.k, sh.n));
                }
            }
            routers.retain(|w| !others.contains(w));
            routers
        })
        .collect()
}

/// Per input: `test` of each of its graph's names, worked out once per
/// distinct name rather than per task and scope.
fn name_flags(base: &Baseline, test: fn(&str) -> bool) -> Vec<Vec<bool>> {
    (base.inputs.iter())
        .map(|inp| inp.graph.names.iter().map(|n| test(n)).collect())
        .collect()
}

/// Whether an operator or annotation launching task `t` of `g` has a
/// name `flags` marks ([`name_flags`] of `g`).
fn launched_under(g: &Graph, flags: &[bool], t: TaskId) -> bool {
    (g.scope_chain(t)).any(|sc| flags.get(g.scopes[sc.0 as usize].name.0 as usize) == Some(&true))
}

/// Whether `name` is a cross entropy over vocabulary-parallel logits, or
/// its gradient function: Megatron's `_VocabParallelCrossEntropy` (an
/// autograd function, recorded under its class name) and
/// `vocab_parallel_cross_entropy`. Its logits are `[tokens, vocabulary /
/// tp]` on each tensor-parallel rank, so its kernels on them shrink as tp
/// grows, which their position outside the layers does not tell.
fn names_a_vocab_parallel_loss(name: &str) -> bool {
    name.contains("VocabParallelCrossEntropy") || name.contains("vocab_parallel_cross_entropy")
}

/// Whether an operator or annotation named `name` is an MoE router's (or
/// its module's): a name that says `router` (Megatron's `TopKRouter`), or
/// a name whose last part is a gate: a module path's `gate` (Mixtral's
/// `block_sparse_moe.gate`, Qwen's `mlp.gate` and `shared_expert_gate`, in
/// a user's annotations) or a module class's `...Gate` (Kineto's
/// `nn.Module: MoEGate_0`, DeepSeek's; DeepSpeed's `TopKGate`), not a
/// gated MLP's `gate_proj` or `GatedMLP`.
fn names_a_router(name: &str) -> bool {
    if name.to_ascii_lowercase().contains("router") {
        return true;
    }
    (name.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .rfind(|p| !p.is_empty())
        .map(|p| p.trim_end_matches(|c: char| c.is_ascii_digit() || c == '_'))
        .is_some_and(|p| {
            let lower = p.to_ascii_lowercase();
            lower == "gate" || lower.ends_with("_gate") || p.ends_with("Gate")
        })
}

/// Which GEMM dimensions of the traced configuration are the hidden size
/// (`h`, `3h`, or their tensor-parallel shards) and which the FFN size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Dims {
    hidden: u64,
    ffn: u64,
    tp: u64,
}

impl Dims {
    fn of(c: &Config) -> Dims {
        Dims {
            hidden: c.hidden,
            ffn: c.ffn,
            tp: c.tp as u64,
        }
    }

    fn hidden_like(&self, v: u64) -> bool {
        let (h, t) = (self.hidden, self.tp);
        let vt = v.saturating_mul(t);
        h > 0 && (v == h || vt == h || vt == h.saturating_mul(3) || v == h.saturating_mul(3))
    }

    fn ffn_like(&self, v: u64) -> bool {
        self.ffn > 0 && (v == self.ffn || v.saturating_mul(self.tp) == self.ffn)
    }

    /// How a GEMM dimension changes: hidden-like dimensions with the hidden
    /// size, FFN-like with the FFN size, anything else (tokens, vocabulary)
    /// not at all. Tensor-parallel sharding is applied once per GEMM by the
    /// caller.
    fn ratio(&self, v: u64, r: &Ratios) -> f64 {
        if self.hidden_like(v) {
            r.hidden
        } else if self.ffn_like(v) {
            r.ffn
        } else {
            1.0
        }
    }

    /// Whether a matrix `[x, y]` that a traced layer's GEMM multiplies by
    /// is split over the tensor-parallel ranks: Megatron's column- and
    /// row-parallel weights (the attention's QKV and output projections,
    /// the MLP's up and down) have the full hidden size as one dimension
    /// and a shard's as the other: `h/tp`, `3h/tp`, `ffn/tp` exactly, or,
    /// above [`SMALL_DIM`], a multiple of `h/tp`, `ffn/tp` or the
    /// attention's head size (`head_dim`, 0 where unknown: a
    /// grouped-query QKV `(heads + 2 kv_heads) head_dim / tp`, a gated
    /// MLP's `2 ffn/tp`). Anything else in the layer is whole on every
    /// rank: an MoE router `[h, experts]` (at most [`SMALL_DIM`] experts,
    /// unless their count is exactly a shard's size, which the shapes
    /// cannot tell apart), a weight without the hidden size. Where the
    /// hidden size is unknown every such matrix is taken for a shard, as
    /// before this rule.
    ///
    /// At tp 1 the same rule tells which matrices a tensor-parallel
    /// target splits (a shard is then the full size): the projections
    /// pair the hidden size with `h`, `3h`, `ffn` or a larger multiple of
    /// `h`, `ffn` or the head size, and no matrix is taken for one where
    /// the hidden size is unknown.
    fn layer_matrix_split(&self, head_dim: u64, x: u64, y: u64) -> bool {
        let (h, ffn, tp) = (self.hidden, self.ffn, self.tp);
        if tp == 0 {
            return false;
        }
        if h == 0 {
            return tp > 1;
        }
        let other = match (x == h, y == h) {
            (true, _) => y,
            (_, true) => x,
            _ => return false,
        };
        if self.hidden_like(other) || self.ffn_like(other) {
            return true;
        }
        let shard = |full: u64| {
            full.is_multiple_of(tp)
                .then_some(full / tp)
                .filter(|&s| s > 0)
        };
        let tied = [shard(h), shard(ffn), Some(head_dim).filter(|&d| d > 0)]
            .into_iter()
            .flatten()
            .any(|unit| other.is_multiple_of(unit));
        other > SMALL_DIM && tied
    }
}

/// The largest dimension a layer's matrix may have beside the hidden size
/// and still be whole on every tensor-parallel rank unless it is exactly
/// a shard's size (see [`Dims::layer_matrix_split`]): an MoE router's
/// experts (8 for Mixtral, 64 to 256 for others).
const SMALL_DIM: u64 = 256;

/// What a memory-bound kernel works on, as its operator's recorded shapes
/// tell.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tensor {
    /// Activations (or no shapes recorded): grows by this factor with the
    /// tokens, and in a layer with the width.
    Activations(f64),
    /// A weight or its gradient: grows by `ratio`, its elements'; `layer`
    /// when it has the shape of a layer's weight (or bias) and is worked
    /// on for every parameter, outside the autograd engine's gradient
    /// functions (DDP's copies back from its buckets after the backward).
    Weight {
        /// How its elements grow.
        ratio: f64,
        /// Whether it stands for a layer's parameter among every
        /// parameter's.
        layer: bool,
    },
}

/// How much more memory a gradient addition moves than DDP's scaling of
/// the same gradient into its bucket: `aten::add_` reads the gradient and
/// `.grad` and writes `.grad` (three tensors), `mul_out` reads the
/// gradient and writes the bucket (two), of one size and type.
pub(crate) const ADDITION_OVER_SCALING: f64 = 1.5;

/// How many gradient-sized tensors a gradient addition moves: `aten::add_`
/// reads the new gradient and `.grad` and writes `.grad`.
pub(crate) const ADDITION_TENSORS: f64 = 3.0;

/// Recomputes every task's duration from its traced one (see the module
/// docs for the rules). The identity keeps every traced duration as it is.
pub(crate) fn retime(p: &mut Prediction) {
    if p.is_identity() {
        return;
    }
    let Prediction {
        base,
        target,
        stages,
        notes,
        sizes_from_envelope,
        sizes_from_own_time,
    } = p;
    let rt = Retimer::new(base, target);
    // Re-timed collectives without a recorded size: with a slot envelope,
    // and without one (sized from their own duration).
    let (mut slotted, mut own) = (0usize, 0usize);
    // Additions sized from their bytes where the trace tells no bandwidth.
    let mut at_floor = 0usize;
    for st in stages.iter_mut() {
        let per_stage = (rt.optimizer_ratio(st), rt.layers_ratio(st));
        // Written in place (the stage's durations are its own until the
        // replay shares them); each task is re-timed from its traced one,
        // so nothing below reads `st.durations`, empty until the loop ends.
        let mut durations = std::mem::take(&mut st.durations);
        let mut not_run = Vec::new();
        for (i, ns) in Arc::make_mut(&mut durations).iter_mut().enumerate() {
            let (dur, source, sized_from_timing) = rt.task(st, i, per_stage);
            if rt.reduction_cpu_not_run(st, i) {
                not_run.push(i);
            }
            let src = st.origin[i].0 as usize;
            if st.tag[i].shaped_addition.is_some()
                && st.graph.tasks[i].kind.is_gpu()
                && rt.bandwidths.get(src).copied().flatten().is_none()
            {
                at_floor += 1;
            }
            *ns = dur.round() as i64;
            st.source[i] = source;
            // Only a collective whose inferred size went into the network
            // model counts: one kept as traced and only sped up by a user
            // factor, or one not issued (a group of one), needed no size.
            match rt.unsized_comm(st, i) {
                Some(true) if sized_from_timing => slotted += 1,
                Some(false) if sized_from_timing => own += 1,
                _ => {}
            }
        }
        st.durations = durations;
        without_gaps_before(st, &not_run);
    }
    (*sizes_from_envelope, *sizes_from_own_time) = (slotted, own);
    let steps = base.structures.iter().map(|s| s.steps.len()).max();
    notes.extend(unsized_notes(slotted, own, steps.unwrap_or(0)));
    if at_floor > 0 {
        notes.push(format!(
            "{at_floor} gradient additions sized from their gradients' shapes take the trace's \
             shortest memory-bound kernel: no memory-bound kernel above it records the tensor \
             shapes and types that give the trace's memory bandwidth; the step is predicted \
             short by the rest of their time"
        ));
    }
}

/// Sets to nothing the program-order gaps before the CPU tasks `not_run`
/// of `st` (sorted): the framework's own time around work a copy does not
/// run, which a launch-bound step would otherwise keep.
fn without_gaps_before(st: &mut PredictedStage<'_>, not_run: &[usize]) {
    if not_run.is_empty() {
        return;
    }
    for e in st.graph.to_mut().edges.iter_mut() {
        if e.kind == DepKind::IntraThread && not_run.binary_search(&e.to.idx()).is_ok() {
            e.latency_ns = 0;
        }
    }
}

/// The assumptions re-timing collectives without a recorded size makes:
/// `slotted` of them sized from their slot's envelope over `steps` steps,
/// `own` from their own duration.
fn unsized_notes(slotted: usize, own: usize, steps: usize) -> Vec<String> {
    let mut out = Vec::new();
    if slotted > 0 {
        out.push(format!(
            "{slotted} re-timed collectives record no message size: each one's size is \
             inferred from the lower envelope ({}th percentile) of its slot, the same \
             collective (kind, group, k-th in its step) over the {steps} steps, through the \
             calibrated model for the traced group (the least-waiting occurrence is the \
             transfer; a kernel's time beyond it is waiting, kept as measured); modelled from \
             the envelope, not measured",
            crate::models::ENVELOPE_PERCENTILE
        ));
    }
    if own > 0 {
        out.push(format!(
            "{own} re-timed collectives record no message size and have no slot (outside \
             steps, fewer than two steps, or steps that disagree on their count): each one's \
             size is inferred from its own time, waiting included (an upper bound); modelled, \
             not measured"
        ));
    }
    out
}

/// Where a prediction's collectives run in the target job and how their
/// sizes change: what re-timing them and writing the predicted job's
/// timelines ([`crate::written`]) both read, so the groups a timeline
/// names are those the durations were modelled on.
pub(crate) struct Regroup<'a> {
    base: &'a Baseline,
    target: &'a Target,
    r: Ratios,
    old_layout: Layout,
    new_layout: Layout,
    /// Per input: its layer's weights after the edit over before.
    layer_ratio: Vec<f64>,
    /// Per input: its MoE routers' weights ([`router_weights`]).
    routers: Vec<FxHashSet<(u64, u64)>>,
    /// Per input: which of its names name a router ([`names_a_router`]).
    router_names: Vec<Vec<bool>>,
    /// Per input: which of its names name a vocabulary-parallel loss
    /// ([`names_a_vocab_parallel_loss`]).
    loss_names: Vec<Vec<bool>>,
}

/// What re-timing a task needs besides the task.
struct Retimer<'a> {
    base: &'a Baseline,
    target: &'a Target,
    r: Ratios,
    dims: Dims,
    gemm: &'a dyn ComputeModel,
    base_net: &'a dyn CommModel,
    target_net: &'a dyn CommModel,
    groups: Regroup<'a>,
    /// Per input: its shortest memory-bound kernel.
    floors: Vec<i64>,
    /// The micro-batch size and sequence length of the first attention
    /// query with a recorded shape; zeros without one.
    batch_and_seq: (u64, u64),
    /// The head size of that query; 0 without one.
    head_dim: u64,
    /// The vocabulary shards of the traced job ([`vocab_shards`]).
    vocab_shards: FxHashSet<u64>,
    /// Per input, per collective: its slot's envelope where the trace
    /// records no size (the `slots` module).
    envelopes: Vec<Vec<Option<i64>>>,
    /// The two sizes (smaller first) of each weight a layer's GEMMs
    /// multiply by, in any traced stage's first forward layer.
    layer_weights: FxHashSet<(u64, u64)>,
    /// Per input, per step: whether its first backward keeps its
    /// gradients where a later one adds into them
    /// ([`first_backward_steals`]), found once.
    steals: Vec<Vec<bool>>,
    /// Per input: its collective operators that reduce gradients over the
    /// data-parallel group ([`data_reduction_scopes`]); found only where
    /// the micro-batches change, the one edit that leaves reductions out.
    reductions: Vec<FxHashSet<ScopeId>>,
    /// Per input: the memory bandwidth its memory-bound kernels achieved
    /// above its floor, bytes per ns ([`Retimer::memory_bandwidth`]); found
    /// only where the micro-batches change, for the gradient additions
    /// sized from their bytes.
    bandwidths: Vec<Option<f64>>,
    /// Where tensor parallelism is added to a trace at TP 1: the CPU time
    /// the trace's own collectives took to issue ([`collective_issue_ns`]),
    /// which each added all-reduce's launch takes.
    issue_ns: Option<f64>,
}

/// The `(batch, seq, heads, head_dim)` of the first attention query with
/// a recorded shape, in any input.
fn attention_query(base: &Baseline) -> Option<[u64; 4]> {
    (base.structures.iter())
        .flat_map(|s| s.work.iter())
        .find_map(|w| match w {
            WorkClass::Attention(Some(d)) => Some(*d),
            _ => None,
        })
}

/// The weight shapes of the traced layers (see [`Retimer::layer_weights`]).
fn layer_weights(base: &Baseline) -> FxHashSet<(u64, u64)> {
    (base.params.iter())
        .flat_map(|pc| pc.layer_gemms.iter())
        .map(|&(k, n)| (k.min(n), k.max(n)))
        .collect()
}

/// Whether `v` counts the `tokens` of a micro-batch, whole or split over
/// `tp` ranks (sequence parallelism); never with no tokens known.
fn is_token_count(v: u64, tokens: u64, tp: u64) -> bool {
    tokens > 0 && (v == tokens || (tp > 1 && v.saturating_mul(tp) == tokens))
}

/// The sizes the traced job's logits have beside the tokens, a
/// vocabulary (or its tensor-parallel shard, `vocabulary / tp`): the
/// width of the output layer's product, a forward GEMM outside the layers
/// that multiplies the hidden size `h` by a width that is neither hidden-
/// nor FFN-like and above [`SMALL_DIM`] (`[tokens, h] x [h, vocabulary /
/// tp]`, Megatron's column-parallel output layer). Like every GEMM but a
/// router's, it is taken to be split over the tensor-parallel ranks, and
/// so are the logits it writes. `query`: the first attention query's
/// `(batch, seq, ..)`, which tells the tokens; empty without it or
/// without the hidden size.
fn vocab_shards(base: &Baseline, dims: Dims, query: Option<[u64; 4]>) -> FxHashSet<u64> {
    let mut out = FxHashSet::default();
    let Some([b, seq, ..]) = query else {
        return out;
    };
    let tokens = b.saturating_mul(seq);
    if dims.hidden == 0 || tokens == 0 {
        return out;
    }
    for s in &base.structures {
        for (k, w) in s.work.iter().enumerate() {
            let WorkClass::Gemm(sh) = w else {
                continue;
            };
            if !matches!(
                s.role_of_task(TaskId(k as u32)),
                Role::Pass {
                    part: Part::Pre | Part::Post,
                    ..
                }
            ) {
                continue;
            }
            let (x, y) = sh.weight_dims(|v| is_token_count(v, tokens, dims.tp));
            let other = match (x == dims.hidden, y == dims.hidden) {
                (true, false) => y,
                (false, true) => x,
                _ => continue,
            };
            if other > SMALL_DIM && !dims.hidden_like(other) && !dims.ffn_like(other) {
                out.insert(other);
            }
        }
    }
    out
}

impl<'a> Regroup<'a> {
    pub(crate) fn new(base: &'a Baseline, target: &'a Target) -> Regroup<'a> {
        let r = Ratios::of(&base.config, &target.config);
        let dims = Dims::of(&base.config);
        let router_names = name_flags(base, names_a_router);
        let head_dim = attention_query(base).map_or(0, |d| d[3]);
        let routers = router_weights(base, dims, head_dim, &router_names);
        Regroup {
            base,
            target,
            r,
            old_layout: Layout::of(&base.config),
            new_layout: Layout::of(&target.config),
            layer_ratio: layer_ratios(base, (dims, head_dim), &r, &routers),
            routers,
            router_names,
            loss_names: name_flags(base, names_a_vocab_parallel_loss),
        }
    }

    /// The ranks of the target's tensor-parallel group of `stage`, built
    /// on input `primary` ([`stage_coord`]; its first tensor and data
    /// indices where the traced layout does not hold it).
    pub(crate) fn tensor_group(&self, primary: usize, stage: u32) -> Vec<i64> {
        let coord = stage_coord(self.base, &self.target.config, primary, stage).unwrap_or(Coord {
            tp: 0,
            dp: 0,
            pp: stage,
        });
        self.new_layout.group(GroupClass::Tensor, coord)
    }

    /// The traced and the new ranks of collective `c` of input `src`, now
    /// on `stage` built on input `primary`, and how its bytes change. The
    /// new ranks are those of the stage's rank in the target layout
    /// ([`stage_coord`]); for a send or receive, the stage's rank and its
    /// peer's.
    pub(crate) fn comm_groups(
        &self,
        c: &CommInfo,
        src: usize,
        (primary, stage): (usize, u32),
        tag: Tag,
        place: Role,
    ) -> (Vec<i64>, Vec<i64>, f64) {
        let (base, target, r) = (self.base, self.target, &self.r);
        let (old_layout, new_layout) = (&self.old_layout, &self.new_layout);
        let coord_old = coord_of(base, src);
        // A rank the traced layout does not hold keeps its traced tensor
        // and data indices, wrapped into the target's degrees.
        let coord_new = stage_coord(base, &target.config, primary, stage).unwrap_or(Coord {
            tp: coord_old.tp % target.config.tp.max(1),
            dp: coord_old.dp % target.config.dp.max(1),
            pp: stage,
        });
        let peer = |layout: &Layout, co: Coord, stages: u32, chunks: u32| -> Vec<i64> {
            // Forward receives and backward sends face the previous
            // (virtual) stage, the others the next; chunk `c` of stage `s`
            // is virtual stage `c stages + s`, so the last stage's next is
            // the first stage's next chunk.
            let prev = matches!(
                (tag.pass.map(|p| p.0), c.p2p),
                (Some(PassKind::Forward), Some(P2p::Recv))
                    | (Some(PassKind::Backward), Some(P2p::Send))
            );
            let chunk = if chunks > 1 { tag.chunk } else { 0 };
            let vs = chunk * stages + co.pp;
            let other = if prev {
                vs.checked_sub(1)
            } else {
                Some(vs + 1).filter(|&x| x < stages * chunks.max(1))
            }
            .map(|x| x % stages.max(1));
            let mut v = vec![layout.rank(co)];
            if let Some(o) = other {
                v.push(layout.rank(Coord { pp: o, ..co }));
            }
            v
        };
        let in_layer = matches!(
            place,
            Role::Pass {
                part: Part::Layer(_),
                ..
            }
        );
        let h = base.config.hidden;
        // Tensor-parallel collectives in a pass carry the micro-batch's
        // activations, so its tokens; pipeline transfers always do.
        let tokens = r.tokens_in(place);
        match c.class {
            GroupClass::Data => (
                nonempty(&c.ranks, || old_layout.group(GroupClass::Data, coord_old)),
                new_layout.group(GroupClass::Data, coord_new),
                if in_layer {
                    self.layer_ratio[src]
                } else {
                    r.hidden * r.tp_shard
                },
            ),
            GroupClass::Tensor => (
                nonempty(&c.ranks, || old_layout.group(GroupClass::Tensor, coord_old)),
                new_layout.group(GroupClass::Tensor, coord_new),
                tokens
                    * if c.bytes.is_some_and(|b| h > 0 && b % h == 0) {
                        r.hidden
                    } else {
                        1.0
                    },
            ),
            GroupClass::Pipeline => (
                peer(
                    old_layout,
                    coord_old,
                    base.config.pp,
                    base.config.virtual_stages,
                ),
                peer(
                    new_layout,
                    coord_new,
                    target.config.pp,
                    target.config.virtual_stages,
                ),
                r.activations(base.sequence_parallel),
            ),
            GroupClass::ModelParallel => (
                nonempty(&c.ranks, || {
                    old_layout.group(GroupClass::ModelParallel, coord_old)
                }),
                new_layout.group(GroupClass::ModelParallel, coord_new),
                1.0,
            ),
            GroupClass::Other => (c.ranks.clone(), c.ranks.clone(), 1.0),
        }
    }
}

impl<'a> Retimer<'a> {
    fn new(base: &'a Baseline, target: &'a Target) -> Retimer<'a> {
        let r = Ratios::of(&base.config, &target.config);
        let dims = Dims::of(&base.config);
        let base_net: &dyn CommModel = &*base.models.comm;
        let query = attention_query(base);
        let mut rt = Retimer {
            base,
            target,
            r,
            dims,
            gemm: &*base.models.compute,
            base_net,
            target_net: match &target.network {
                Some((n, _)) => n,
                None => base_net,
            },
            groups: Regroup::new(base, target),
            floors: memory_floors(base),
            batch_and_seq: query.map_or((0, 0), |d| (d[0], d[1])),
            head_dim: query.map_or(0, |d| d[3]),
            vocab_shards: vocab_shards(base, dims, query),
            envelopes: base
                .inputs
                .iter()
                .zip(&base.structures)
                .map(|(inp, s)| {
                    let d: Vec<i64> = inp.graph.tasks.iter().map(|t| t.duration_ns).collect();
                    unsized_envelopes(s, &inp.measured, &d)
                })
                .collect(),
            layer_weights: layer_weights(base),
            steals: (base.structures.iter())
                .map(|s| {
                    s.steps
                        .iter()
                        .map(|st| first_backward_steals(s, st))
                        .collect()
                })
                .collect(),
            reductions: (base.inputs.iter().zip(&base.structures))
                .map(|(inp, s)| {
                    if target.config.microbatches == base.config.microbatches {
                        FxHashSet::default()
                    } else {
                        data_reduction_scopes(&inp.graph, s)
                    }
                })
                .collect(),
            bandwidths: Vec::new(),
            issue_ns: tp_from_one(base, &target.config)
                .then(|| collective_issue_ns(base).unwrap_or(DEFAULT_COLLECTIVE_ISSUE_NS)),
        };
        if target.config.microbatches != base.config.microbatches {
            rt.bandwidths = (0..base.inputs.len())
                .map(|src| rt.memory_bandwidth(src))
                .collect();
        }
        rt
    }

    /// The memory bandwidth the memory-bound kernels of input `src`
    /// achieved, bytes per ns: their bytes over their time above the
    /// input's floor (its shortest memory-bound kernel, the fixed cost any
    /// of them pays), summed over the largest of them that carry half
    /// the bytes of the kernels longer than the floor whose
    /// launching operator records tensor shapes of known types, all of one
    /// element count (element-wise work). A kernel's bytes are its
    /// operator's tensor inputs read, and the largest of them written once
    /// more (an element-wise operator's output; an `out=` or in-place one
    /// names it among its inputs, so this errs by a tensor at most).
    /// `None` without such a kernel.
    fn memory_bandwidth(&self, src: usize) -> Option<f64> {
        let g = &self.base.inputs[src].graph;
        let floor = self.floors[src];
        let mut kernels: Vec<(u64, i64)> = Vec::new();
        for (k, w) in self.base.structures[src].work.iter().enumerate() {
            let dur = g.tasks[k].duration_ns;
            if !matches!(w, WorkClass::Memory) || dur <= floor {
                continue;
            }
            let Some(sc) = self.shaped_scope(src, TaskId(k as u32)) else {
                continue;
            };
            let sc = &g.scopes[sc.0 as usize];
            let Some(dims) = sc.input_dims.as_ref() else {
                continue;
            };
            // Element-wise work only: every tensor input of one element
            // count. A gather (an embedding's rows out of its table) or a
            // reduction reads far less, or more, than its inputs' sizes.
            let tensors = (0..dims.len()).filter(|&i| !crate::shapes::sizes(dims, i).is_empty());
            let elements = |i: usize| crate::shapes::sizes(dims, i).iter().product::<i64>();
            let mut counts = tensors.clone().map(elements);
            let first = counts.next();
            if first.is_none() || counts.any(|c| Some(c) != first) {
                continue;
            }
            let each = tensors
                .filter_map(|i| crate::shapes::tensor_bytes(dims, sc.input_type.as_deref(), i));
            let (sum, largest) =
                each.fold((0u64, 0u64), |(s, m), b| (s.saturating_add(b), m.max(b)));
            if sum > 0 {
                kernels.push((sum.saturating_add(largest), dur - floor));
            }
        }
        // The largest kernels, which carry half the bytes: a small one's
        // time above the floor is mostly its own fixed cost (and the
        // trace's rounding), which says nothing of the bandwidth.
        kernels.sort_unstable_by(|a, b| b.cmp(a));
        let half = kernels.iter().map(|k| k.0 as f64).sum::<f64>() / 2.0;
        let (mut bytes, mut ns) = (0.0, 0.0);
        for &(b, t) in &kernels {
            if bytes >= half {
                break;
            }
            bytes += b as f64;
            ns += t as f64;
        }
        (ns > 0.0).then(|| bytes / ns)
    }

    /// For task `i` of `st`: `Some(has an envelope)` when it is a
    /// collective (of a known kind) whose size the trace does not record.
    fn unsized_comm(&self, st: &PredictedStage<'_>, i: usize) -> Option<bool> {
        let (src, tt) = st.origin[i];
        let s = &self.base.structures[src as usize];
        match s.work[tt.idx()] {
            WorkClass::Comm(ci) => {
                let c = &s.comms[ci as usize];
                (c.bytes.is_none() && c.kind.is_some())
                    .then(|| self.envelopes[src as usize][ci as usize].is_some())
            }
            _ => None,
        }
    }

    /// The ratio the optimizer's (and gradient zeroing's) memory-bound
    /// kernels scale by on stage `st`: its parameters after the edit over
    /// before, and with a distributed optimizer over the data-parallel
    /// shard too.
    fn optimizer_ratio(&self, st: &PredictedStage<'_>) -> f64 {
        let (base, target, r) = (self.base, self.target, &self.r);
        let role = StageRole::of(st.stage, target.config.pp);
        let prim = st.primary;
        let pc = &base.params[prim];
        // Parameters outside layers: a stage keeps its own; a rebuilt stage
        // takes those of the traced stage with its role (embedding on the
        // first, the output layer's copy on the last, none in the middle).
        let other_traced = if base.roles[prim] == role {
            pc.other
        } else {
            let of = |r: StageRole| {
                base.roles
                    .iter()
                    .position(|&x| x == r)
                    .map_or(0.0, |i| base.params[i].other)
            };
            match role {
                StageRole::Middle => 0.0,
                StageRole::Only => of(StageRole::First),
                r => of(r),
            }
        };
        let other_new = other_traced * r.hidden * r.tp_shard;
        let layers_new = self.stage_layers(st);
        let new_total =
            layers_new as f64 * pc.per_layer * self.groups.layer_ratio[prim] + other_new;
        let params_ratio = if pc.total() > 0.0 {
            new_total / pc.total()
        } else {
            1.0
        };
        params_ratio
            * if base.distributed_optimizer {
                r.dp_shard
            } else {
                1.0
            }
    }

    /// Layers on the new stage `st`: the traced count while the structure
    /// is unchanged (discovery may miscount a stage's layers without that
    /// mattering anywhere else), else the even split of the target.
    fn stage_layers(&self, st: &PredictedStage<'_>) -> u32 {
        if structural_change(self.base, self.target) {
            self.target.config.stage_layers(st.stage)
        } else {
            self.base.params[st.primary].layers
        }
    }

    /// How the layers on stage `st` grow: the kernels a layer's parameters
    /// get outside layers (DDP's copies back from its buckets at the end
    /// of the backward pass) come as many times more.
    fn layers_ratio(&self, st: &PredictedStage<'_>) -> f64 {
        match self.base.params[st.primary].layers {
            0 => 1.0,
            traced => f64::from(self.stage_layers(st)) / f64::from(traced),
        }
    }

    /// The new duration of task `i` of stage `st`, where it came from, and
    /// whether it is a collective re-timed through the network model with a
    /// size inferred from its timing (see [`Retimer::comm_ns`]).
    fn task(
        &self,
        st: &PredictedStage<'_>,
        i: usize,
        per_stage: (f64, f64),
    ) -> (f64, Source, bool) {
        // Per-parameter units after the layers came as many times as the
        // layers (`plan.rs`): stretching them too would count them twice.
        let per_stage = match st.tag[i].layers_fitted {
            true => (per_stage.0, 1.0),
            false => per_stage,
        };
        let (src, tt) = st.origin[i];
        let inp = &self.base.inputs[src as usize];
        let s = &self.base.structures[src as usize];
        let traced = inp.graph.tasks[tt.idx()].duration_ns;
        let name = &inp.graph.names[inp.graph.tasks[tt.idx()].name.0 as usize];
        let work = s.work[tt.idx()];
        let place = s.role_of_task(tt);
        let mut sized_from_timing = false;
        let (mut dur, mut source) = match work {
            _ if st.tag[i].addition => self.addition_ns(st, i, per_stage),
            _ if st.tag[i].tp_allreduce.is_some() => self.tp_allreduce_ns(st, i, place),
            WorkClass::Cpu
                if self.reduction_left_to_last(src as usize, tt, st.tag[i])
                    && runs_a_reduction(&inp.graph, tt, &self.reductions[src as usize]) =>
            {
                (0.0, Source::Modelled)
            }
            // The launch of an addition into `.grad` the step's first
            // backward does not run (its kernel below takes no time either);
            // the accumulation node's own time around it stays, as the
            // first backward spends it keeping the gradient.
            WorkClass::Cpu if self.accumulation_not_run(src as usize, tt, st.tag[i]) => {
                (0.0, Source::Modelled)
            }
            WorkClass::Cpu | WorkClass::Copy => (traced as f64, Source::Measured),
            WorkClass::Gemm(sh) => {
                let whole = self.router_gemm(src as usize, tt, sh);
                self.gemm_ns(traced, sh, self.r.tokens_in(place), whole)
            }
            WorkClass::Attention(dims) => self.attention_ns(traced, dims, self.r.tokens_in(place)),
            WorkClass::Memory
                if self.reduction_left_to_last(src as usize, tt, st.tag[i])
                    && (scales_a_reduction(s, tt) || fills_a_bucket(&inp.graph, tt)) =>
            {
                (0.0, Source::Modelled)
            }
            WorkClass::Memory if self.accumulation_not_run(src as usize, tt, st.tag[i]) => {
                (0.0, Source::Modelled)
            }
            WorkClass::Memory => self.memory_task(st, i, per_stage),
            WorkClass::Comm(ci)
                if s.comms[ci as usize].class == GroupClass::Data
                    && matches!(
                        s.comms[ci as usize].kind,
                        Some(CollectiveKind::AllReduce | CollectiveKind::ReduceScatter)
                    )
                    && self.reduction_left_to_last(src as usize, tt, st.tag[i]) =>
            {
                (0.0, Source::Modelled)
            }
            WorkClass::Comm(ci) => {
                let c = &s.comms[ci as usize];
                let env = self.envelopes[src as usize][ci as usize];
                let (d, source, inferred) = self.comm_ns(
                    traced,
                    env,
                    (c, runs_broadcast(c, &inp.graph)),
                    src as usize,
                    (st.primary, st.stage),
                    st.tag[i],
                    place,
                );
                sized_from_timing = inferred;
                (d, source)
            }
        };
        if st.graph.tasks[i].kind.is_gpu() {
            // A modelled addition is selected by its own name, not by that
            // of the kernel it was sized from.
            let name = match st.tag[i].addition || st.tag[i].tp_allreduce.is_some() {
                true => st.graph.name(TaskId(i as u32)),
                false => name,
            };
            for k in &self.target.scales {
                if k.select.matches(&work, name) && k.factor != 1.0 {
                    dur *= k.factor;
                    if source == Source::Measured {
                        source = Source::Scaled;
                    }
                }
            }
        }
        (dur, source, sized_from_timing)
    }

    /// Tensor-parallel all-reduces added to a model traced at TP 1 (task
    /// `i` of stage `st`, tagged with their number and traced bytes): the
    /// kernel from the target network's model alone over the stage's
    /// tensor-parallel group, each all-reduce's bytes grown with the tokens
    /// (at `place`) and, for activations, the hidden size, as many times
    /// as it runs them back to back; the launch, once per all-reduce, at
    /// the CPU time the trace's own collectives took to issue
    /// (`issue_ns`: their median, or where it ran none
    /// [`DEFAULT_COLLECTIVE_ISSUE_NS`]). Both are modelled: the trace ran
    /// no tensor-parallel collective to measure.
    fn tp_allreduce_ns(&self, st: &PredictedStage<'_>, i: usize, place: Role) -> (f64, Source) {
        let Some(reduce) = st.tag[i].tp_allreduce else {
            return (0.0, Source::Modelled);
        };
        let count = f64::from(reduce.count);
        if !st.graph.tasks[i].kind.is_gpu() {
            let issue = self.issue_ns.unwrap_or(DEFAULT_COLLECTIVE_ISSUE_NS);
            return (count * issue, Source::Modelled);
        }
        let width = if reduce.wide { self.r.hidden } else { 1.0 };
        let bytes = (reduce.bytes as f64 * self.r.tokens_in(place) * width).round() as u64;
        let ranks = self.groups.tensor_group(st.primary, st.stage);
        if ranks.len() < 2 {
            return (0.0, Source::Modelled);
        }
        let ns = (self.target_net).collective_ns(CollectiveKind::AllReduce, bytes, &ranks);
        (count * ns, Source::Modelled)
    }

    /// The new duration of memory-bound task `i` of stage `st`, from its
    /// traced one: a weight's kernel by the weight's elements, an
    /// activation's by the tokens.
    fn memory_task(
        &self,
        st: &PredictedStage<'_>,
        i: usize,
        per_stage: (f64, f64),
    ) -> (f64, Source) {
        let (src, tt) = st.origin[i];
        let inp = &self.base.inputs[src as usize];
        let s = &self.base.structures[src as usize];
        let traced = inp.graph.tasks[tt.idx()].duration_ns;
        let name = inp.graph.name(tt);
        let place = s.role_of_task(tt);
        let floor = self.floors[src as usize];
        let tensor = match self.weight_ratio(src as usize, tt) {
            Some((ratio, layer)) => Tensor::Weight {
                ratio,
                // Inside a gradient function the kernel is one parameter's
                // own, where it is (the final layer norm's gradient
                // accumulation and its scaling into a bucket, in the
                // head's backward): a layer's are inside the layers.
                layer: layer && !in_gradient_function(&inp.graph, tt),
            },
            None => {
                let tokens = match self.r.tokens_in(place) {
                    r if r != 1.0 && self.token_sized(src as usize, tt) => r,
                    _ => 1.0,
                };
                // A vocabulary-parallel loss's logits are a shard of the
                // vocabulary, whatever part of the pass holds them.
                let loss = &self.groups.loss_names[src as usize];
                // So are the logits' (or their gradient's) outside the
                // loss, their shape tells (the gradient's cast back,
                // `ToCopyBackward0`'s `aten::to`).
                let vocab = match (launched_under(&inp.graph, loss, tt)
                    && self.vocab_sized(src as usize, tt))
                    || self.logits_sized(src as usize, tt)
                {
                    true => self.r.tp_shard,
                    false => 1.0,
                };
                // Outside the layers (the embedding, the final norm) a
                // kernel on `[tokens, h]` activations grows with the
                // hidden size as a layer's do; in a layer `memory_ns`
                // applies the width itself.
                let in_layer = matches!(
                    place,
                    Role::Pass {
                        part: Part::Layer(_),
                        ..
                    }
                );
                let width =
                    match self.r.hidden != 1.0 && !in_layer && self.hidden_wide(src as usize, tt) {
                        true => self.r.hidden,
                        false => 1.0,
                    };
                Tensor::Activations(tokens * vocab * width)
            }
        };
        self.memory_ns(traced, name, (place, tensor), per_stage, floor)
    }

    /// The duration of task `i` of stage `st`, a gradient addition the
    /// copy made (`assemble/additions.rs`) from DDP's scaling of the same
    /// gradient into its bucket: the launch takes what that launch took;
    /// the kernel, above the input's shortest memory-bound kernel, takes
    /// [`ADDITION_OVER_SCALING`] times what the scaling takes once
    /// re-timed, as it moves that much more memory.
    fn addition_ns(
        &self,
        st: &PredictedStage<'_>,
        i: usize,
        per_stage: (f64, f64),
    ) -> (f64, Source) {
        let (src, tt) = st.origin[i];
        let traced = self.base.inputs[src as usize].graph.tasks[tt.idx()].duration_ns as f64;
        if !st.graph.tasks[i].kind.is_gpu() {
            return (traced, Source::Modelled);
        }
        let floor = self.floors[src as usize] as f64;
        if let Some(grad) = st.tag[i].shaped_addition {
            // No DDP scaling to size it from: its three tensors' bytes
            // (the gradient and `.grad` read, `.grad` written) at the
            // trace's bandwidth, above the floor; at the floor where the
            // trace tells no bandwidth. The gradient is its parameter's
            // shape, which grows as that weight's kernels do.
            let g = &self.base.inputs[src as usize].graph;
            let growth = (g.scopes[grad.node.0 as usize].input_dims.as_ref())
                .and_then(|d| self.weight_growth(src as usize, crate::shapes::sizes(d, 0)))
                .unwrap_or(1.0);
            let bytes = grad.bytes as f64 * growth;
            let above = match self.bandwidths.get(src as usize).copied().flatten() {
                Some(bw) => ADDITION_TENSORS * bytes / bw,
                None => 0.0,
            };
            return (floor + above, Source::Modelled);
        }
        let (scaling, _) = match self.base.structures[src as usize].work[tt.idx()] {
            WorkClass::Memory => self.memory_task(st, i, per_stage),
            _ => (traced, Source::Measured),
        };
        let above = (scaling - floor).max(0.0);
        (
            floor.min(scaling) + ADDITION_OVER_SCALING * above,
            Source::Modelled,
        )
    }

    /// Whether CPU task `i` of `st` is DDP's reducer or a collective's
    /// launch in a backward copy before the last, which does not run it
    /// (see [`Retimer::reduction_left_to_last`]).
    fn reduction_cpu_not_run(&self, st: &PredictedStage<'_>, i: usize) -> bool {
        let (src, tt) = st.origin[i];
        !st.tag[i].addition
            && matches!(
                self.base.structures[src as usize].work[tt.idx()],
                WorkClass::Cpu
            )
            && self.reduction_left_to_last(src as usize, tt, st.tag[i])
            && runs_a_reduction(
                &self.base.inputs[src as usize].graph,
                tt,
                &self.reductions[src as usize],
            )
    }

    /// Whether a task of the gradient reduction of a template of one
    /// micro-batch (`s`), copied into the pass `tag` names, is in a
    /// backward that is not the step's last: the only traced backward was
    /// also the last and reduced the gradients (bucket by bucket, as
    /// PyTorch DDP and Megatron's `--overlap-grad-reduce` do), which the
    /// backward passes before the last do not (DDP's `no_sync`, gradient
    /// accumulation). The copy keeps the task, as an empty one of no time,
    /// as a group of one keeps a collective it does not issue, and so does
    /// the CPU work that launches it (`runs_a_reduction`).
    ///
    /// The same holds for a template that is the last of several traced
    /// backwards when the first of them kept its gradients
    /// ([`first_backward_steals`]): that last one is copied into the middle
    /// passes for its gradient additions (`plan.rs`).
    fn reduction_left_to_last(&self, src: usize, t: TaskId, tag: Tag) -> bool {
        let Some((PassKind::Backward, k)) = tag.pass else {
            return false;
        };
        let s = &self.base.structures[src];
        let Role::Pass { step, pass, .. } = s.role_of_task(t) else {
            return false;
        };
        let p = &s.steps[step as usize].passes[pass as usize];
        let traced = s.config.microbatches.unwrap_or(0);
        k + 1 < self.target.config.microbatches
            && p.kind == PassKind::Backward
            && p.microbatch + 1 == traced
            && (traced == 1 || self.steals[src][step as usize])
    }

    /// Whether task `t` of `s` adds a micro-batch's gradient into `.grad`
    /// (`aten::add_` inside `AccumulateGrad`: its kernel, or the CPU work
    /// launching it) in a copy that becomes the
    /// step's first backward, which PyTorch runs without those additions
    /// after `zero_grad(set_to_none=True)` (it keeps the new gradients),
    /// as the first traced backward shows.
    fn accumulation_not_run(&self, src: usize, t: TaskId, tag: Tag) -> bool {
        let Some((PassKind::Backward, 0)) = tag.pass else {
            return false;
        };
        let s = &self.base.structures[src];
        let Role::Pass { step, pass, .. } = s.role_of_task(t) else {
            return false;
        };
        s.steps[step as usize].passes[pass as usize].microbatch > 0
            && self.steals[src][step as usize]
            && adds_into_a_gradient(&self.base.inputs[src].graph, t)
    }

    /// Whether memory-bound task `t` of input `src` works on activations
    /// (its size follows the tokens): the innermost operator launching it
    /// that records shapes has a tensor with the micro-batch's tokens as
    /// a dimension (unless a weight has that size too), or with both its
    /// batch and sequence dimensions (the sequence possibly split over
    /// tensor-parallel ranks). A weight cast or a gradient accumulation
    /// has none; an operator without recorded shapes is taken to work on
    /// activations.
    fn token_sized(&self, src: usize, t: TaskId) -> bool {
        match self.shapes_of(src, t) {
            Some(dims) => (0..dims.len()).any(|i| self.has_tokens(crate::shapes::sizes(dims, i))),
            None => true,
        }
    }

    /// Whether memory-bound task `t` of input `src`, in a
    /// vocabulary-parallel loss, works on its logits: its operator's
    /// recorded shapes have a dimension other than the tokens' (the
    /// vocabulary's shard), where the loss's per-token statistics
    /// (`[tokens]`, `[seq, batch]`) have none. Without recorded shapes it
    /// is taken to, as the loss's larger kernels do.
    fn vocab_sized(&self, src: usize, t: TaskId) -> bool {
        let Some(dims) = self.shapes_of(src, t) else {
            return true;
        };
        let (b, seq) = self.batch_and_seq;
        let tp = u64::from(self.base.config.tp.max(1));
        let tokens = b.saturating_mul(seq);
        let token_like = |v: u64| {
            v <= 1
                || v == tokens
                || v == b
                || v == seq
                || (tp > 1 && (v.saturating_mul(tp) == seq || v.saturating_mul(tp) == tokens))
        };
        (0..dims.len()).any(|i| {
            crate::shapes::sizes(dims, i)
                .iter()
                .any(|&x| !token_like(x.max(0) as u64))
        })
    }

    /// Whether memory-bound task `t` of input `src` works on the logits
    /// (or their gradient) of a vocabulary split over the tensor-parallel
    /// ranks: its operator's recorded shapes hold a tensor with the
    /// tokens and a vocabulary shard of the traced job
    /// ([`Retimer::vocab_shards`]), `[tokens, vocabulary / tp]` or `[seq,
    /// batch, vocabulary / tp]`. Without recorded shapes it is not taken
    /// to: nothing then tells it from the per-token work beside it.
    fn logits_sized(&self, src: usize, t: TaskId) -> bool {
        if self.vocab_shards.is_empty() {
            return false;
        }
        let Some(dims) = self.shapes_of(src, t) else {
            return false;
        };
        (0..dims.len()).any(|i| {
            let d = crate::shapes::sizes(dims, i);
            d.iter()
                .any(|&x| x > 0 && self.vocab_shards.contains(&(x as u64)))
                && self.has_tokens(d)
        })
    }

    /// Whether memory-bound task `t` of input `src` works on activations
    /// as wide as the hidden size: its operator's recorded shapes hold a
    /// tensor with the tokens and, beside them, the hidden size `h`
    /// (`[tokens, h]`, `[seq, batch, h]`, the sequence possibly split over
    /// tp: the final norm's input, the embedding's gradient), or it is a
    /// lookup (`aten::embedding`) of indices with the tokens into a table
    /// of rows of `h`, whose output is `[tokens, h]`. Without recorded
    /// shapes it is not taken to: the loss's per-token work and its
    /// logits record none either.
    fn hidden_wide(&self, src: usize, t: TaskId) -> bool {
        let h = self.dims.hidden;
        let Some(dims) = self.shapes_of(src, t).filter(|_| h > 0) else {
            return false;
        };
        let tensors: Vec<&[i64]> = (0..dims.len())
            .map(|i| crate::shapes::sizes(dims, i))
            .collect();
        if tensors
            .iter()
            .any(|d| self.has_tokens(d) && self.beside_tokens(d).contains(&h))
        {
            return true;
        }
        let g = &self.base.inputs[src].graph;
        let lookup = self
            .shaped_scope(src, t)
            .is_some_and(|s| g.names[g.scopes[s.0 as usize].name.0 as usize] == "aten::embedding");
        lookup
            && tensors.iter().any(|d| self.has_tokens(d))
            && tensors
                .iter()
                .any(|d| matches!(**d, [rows, w] if rows > 0 && w > 0 && w as u64 == h))
    }

    /// The sizes of a tensor `d` other than its tokens' (one dimension of
    /// the tokens, possibly split over tp, or one of the batch and one of
    /// the sequence).
    fn beside_tokens(&self, d: &[i64]) -> Vec<u64> {
        let (b, seq) = self.batch_and_seq;
        let tp = u64::from(self.base.config.tp.max(1));
        let tokens = b.saturating_mul(seq);
        let mut rest: Vec<u64> = d.iter().map(|&x| x.max(0) as u64).collect();
        let mut take = |v: u64| match rest.iter().position(|&x| v > 0 && x == v) {
            Some(i) => {
                rest.remove(i);
                true
            }
            None => false,
        };
        let split = |v: u64| {
            if tp > 1 && v.is_multiple_of(tp) {
                v / tp
            } else {
                0
            }
        };
        if !(take(tokens) || take(split(tokens))) && take(b) && !take(seq) {
            take(split(seq));
        }
        rest
    }

    /// The recorded shapes of the innermost operator launching task `t`
    /// of input `src` that records a tensor's ([`Retimer::shaped_scope`]).
    fn shapes_of(&self, src: usize, t: TaskId) -> Option<&InputDims> {
        let g = &self.base.inputs[src].graph;
        self.shaped_scope(src, t)
            .and_then(|s| g.scopes[s.0 as usize].input_dims.as_ref())
    }

    /// The innermost operator launching task `t` of input `src` that
    /// records a tensor's shape: one that records only lists of tensors or
    /// scalars (`aten::cat` of a split's gradients) tells no size, and its
    /// caller's shapes (`SplitBackward0`'s gradients) are read instead.
    fn shaped_scope(&self, src: usize, t: TaskId) -> Option<ScopeId> {
        let g = &self.base.inputs[src].graph;
        g.scope_chain(t).find(|s| {
            g.scopes[s.0 as usize].input_dims.as_ref().is_some_and(|d| {
                d.iter()
                    .any(|i| matches!(i, lumos_trace::Input::Tensor(x) if !x.is_empty()))
            })
        })
    }

    /// Whether a tensor of sizes `d` has the micro-batch's tokens as a
    /// dimension (unless a weight has that size too), or both its batch
    /// and sequence dimensions (the sequence possibly split over
    /// tensor-parallel ranks).
    fn has_tokens(&self, d: &[i64]) -> bool {
        let (b, seq) = self.batch_and_seq;
        let tp = u64::from(self.base.config.tp.max(1));
        let tokens = b.saturating_mul(seq);
        let weight_like = |v: u64| self.dims.hidden_like(v) || self.dims.ffn_like(v);
        // A token count equal to a weight's dimension (seq 2048 = hidden
        // 2048 at one sequence, 8 x 1024 tokens = FFN 8192) tells nothing
        // alone. An FFN-wide one does beside a size no layer's weight has
        // (the loss's `[tokens, vocabulary]` logits): no weight pairs the
        // FFN width with the vocabulary, while the embedding pairs the
        // hidden width with it.
        let other = d.iter().any(|&x| x > 1 && !weight_like(x as u64));
        let telling = |v: u64| !weight_like(v) || (other && !self.dims.hidden_like(v));
        let has = |v: u64| v > 0 && d.iter().any(|&x| x as u64 == v);
        // Logits `[tokens, vocabulary]` put the tokens first, where the
        // embedding table `[vocabulary, h]` puts the vocabulary.
        let logits = matches!(*d, [t, v] if tokens > 0 && t as u64 == tokens && v > 1
            && !weight_like(v as u64));
        logits
            || (telling(tokens) && has(tokens))
            || (tp > 1 && tokens % tp == 0 && telling(tokens / tp) && has(tokens / tp))
            || (has(b) && (has(seq) || (tp > 1 && seq % tp == 0 && has(seq / tp))))
    }

    /// Whether the innermost operator launching task `t` of input `src`
    /// that records shapes reduces its largest tensor: a reduction
    /// ([`is_reduction_op`]: a bias gradient's sum over the tokens) or a
    /// normalization ([`is_normalization_op`]), whose largest tensor is
    /// activations even where their shape is a weight's.
    fn reduces(&self, src: usize, t: TaskId) -> bool {
        let g = &self.base.inputs[src].graph;
        self.shaped_scope(src, t).is_some_and(|s| {
            let name = &g.names[g.scopes[s.0 as usize].name.0 as usize];
            is_reduction_op(name) || is_normalization_op(name)
        })
    }

    /// Whether a tensor of sizes `d` has the shape of a weight the traced
    /// layers multiply by.
    fn layer_weight(&self, d: &[i64]) -> bool {
        match *d {
            [x, y] if x > 0 && y > 0 => {
                let (x, y) = (x as u64, y as u64);
                self.layer_weights.contains(&(x.min(y), x.max(y)))
            }
            _ => false,
        }
    }

    /// How the weight that memory-bound task `t` of input `src` works on
    /// grows, if its operator's recorded shapes show one: no tensor has a
    /// token dimension, and the largest has a hidden- or FFN-like one. A
    /// weight cast (autocast's, every micro-batch), a gradient's cast,
    /// accumulation or copy into a data-parallel bucket moves the
    /// weight's elements, which grow with the product of its dimensions'
    /// ratios (the hidden size squared for a `[3h, h]` weight), not with
    /// one width as activations do. Where a token count equals a weight
    /// dimension and the tensor has it, a flattened activation `[tokens,
    /// h]` looks like a weight: it is taken for one only with the shape of
    /// a weight the layers' GEMMs multiply by (weights on that shape move
    /// more bytes than the few activations reduced in two dimensions), else
    /// `None`. With the ratio, whether the weight is shaped as a layer's
    /// (a weight the layers' GEMMs multiply by, or a bias of one of its
    /// sizes).
    fn weight_ratio(&self, src: usize, t: TaskId) -> Option<(f64, bool)> {
        let dims = self.shapes_of(src, t)?;
        let all = || (0..dims.len()).map(|i| crate::shapes::sizes(dims, i));
        if all().any(|d| self.has_tokens(d)) {
            return None;
        }
        let elements = |d: &[i64]| d.iter().fold(1u64, |p, &x| p.saturating_mul(x as u64));
        let largest = all().max_by_key(|d| elements(d))?;
        let (b, seq) = self.batch_and_seq;
        let tokens = b.saturating_mul(seq);
        // Where the tokens are unknown (no attention shape), or the tensor
        // has a dimension as large as them, only a layer weight's shape
        // (or a 1-D tensor) is taken for a weight; and never by a reduction
        // (a bias gradient sums `[tokens, out]`, as large as the weight).
        let ambiguous = tokens == 0 || largest.iter().any(|&x| x as u64 == tokens);
        if ambiguous
            && (!(self.layer_weight(largest) || largest.len() == 1) || self.reduces(src, t))
        {
            return None;
        }
        let ratio = self.weight_growth(src, largest)?;
        let layer = self.layer_weight(largest)
            || matches!(*largest, [x] if self.layer_weights.iter().any(|&(a, b)| x as u64 == a || x as u64 == b));
        Some((ratio, layer))
    }

    /// How the elements of a weight (or its gradient) of sizes `d` grow:
    /// the product of its hidden- and FFN-like dimensions' ratios, over
    /// the tensor-parallel degree's when it is split over tp
    /// ([`Retimer::split_over_tp`]); `None` without such a dimension.
    fn weight_growth(&self, src: usize, d: &[i64]) -> Option<f64> {
        let mut ratio = 1.0;
        let mut weight = false;
        for &x in d {
            let v = x as u64;
            if self.dims.hidden_like(v) || self.dims.ffn_like(v) {
                weight = true;
                ratio *= self.dims.ratio(v, &self.r);
            }
        }
        let shard = if self.split_over_tp(src, d) {
            self.r.tp_shard
        } else {
            1.0
        };
        weight.then_some(ratio * shard)
    }

    /// Whether a weight of sizes `d` is split over the traced
    /// tensor-parallel ranks, as the layer's structure tells: a matrix the
    /// traced layers' GEMMs multiply by is when it pairs the hidden size
    /// with a shard's ([`Dims::layer_matrix_split`]: the column- and
    /// row-parallel projections, not an MoE router); any other weight (a vector: a
    /// bias, a layer norm's) only when a dimension is a shard's size
    /// (`h/tp`, `3h/tp`, `ffn/tp`) and no full size. A dimension that is
    /// both tells nothing, and is taken as a full one: at tp 3, `3h/tp` is
    /// `h` (at tp 4, `ffn/tp` is `h` for an FFN of 4h), and a `[h]` vector
    /// is a layer norm's or a row-parallel bias, whole on every rank, far
    /// more often than a column-parallel bias. An MoE router's weight
    /// ([`router_weights`] of input `src`), held `[out, in]` = `[experts,
    /// h]` as `nn.Linear` and Megatron hold weights, is whole.
    fn split_over_tp(&self, src: usize, d: &[i64]) -> bool {
        let (h, ffn, tp) = (self.dims.hidden, self.dims.ffn, self.dims.tp);
        if tp == 0 {
            return false;
        }
        if let [x, y] = *d {
            let routers = self.groups.routers.get(src);
            if routers.is_some_and(|r| r.contains(&(y as u64, x as u64))) {
                return false;
            }
            if self.layer_weight(d) {
                return (self.dims).layer_matrix_split(self.head_dim, x as u64, y as u64);
            }
        }
        let full = |v: u64| v > 0 && (v == h || v == h.saturating_mul(3) || v == ffn);
        if tp == 1 {
            // Traced whole: a column-parallel bias (`[3h]`, `[ffn]`) is the
            // vector a target tp splits; a `[h]` one (a layer norm's, a
            // row-parallel bias) stays whole.
            return matches!(*d, [v] if v as u64 != h && full(v as u64));
        }
        d.iter().any(|&x| {
            let v = x as u64;
            !full(v) && full(v.saturating_mul(tp))
        })
    }

    /// A GEMM: traced x the fitted curve's time ratio for the new FLOPs
    /// (`tokens`: how its token dimension grows; `whole`: its weight is
    /// not split over tensor-parallel ranks, an MoE router's).
    fn gemm_ns(&self, traced: i64, sh: GemmShape, tokens: f64, whole: bool) -> (f64, Source) {
        let shard = if whole { 1.0 } else { self.r.tp_shard };
        let ratio = self.width_ratio(sh) * shard * tokens;
        let g = self.gemm;
        scaled(
            traced,
            g.gemm_ns(sh.flops() * ratio) / g.gemm_ns(sh.flops()),
        )
    }

    /// Whether GEMM task `t` of input `src`, of shape `sh`, multiplies by
    /// an MoE router's weight ([`router_weights`]), which tensor
    /// parallelism does not split: an operator or annotation launching it
    /// names a router, or, in a layer, its weight is a router's, `(in,
    /// out)` read from a forward product as `(k, n)` and from a backward
    /// one (`[tokens, out] x [out, in]` for the input's gradient, `[out,
    /// tokens] x [tokens, in]` for the weight's) the other way round.
    fn router_gemm(&self, src: usize, t: TaskId, sh: GemmShape) -> bool {
        let g = &self.base.inputs[src].graph;
        if launched_under(g, &self.groups.router_names[src], t) {
            return true;
        }
        let Some(routers) = self.groups.routers.get(src).filter(|r| !r.is_empty()) else {
            return false;
        };
        let s = &self.base.structures[src];
        let Role::Pass {
            step,
            pass,
            part: Part::Layer(_),
        } = s.role_of_task(t)
        else {
            return false;
        };
        let (x, y) = self.weight_dims(sh);
        match s.steps[step as usize].passes[pass as usize].kind {
            PassKind::Forward => routers.contains(&(x, y)),
            PassKind::Backward => routers.contains(&(y, x)),
        }
    }

    /// How a GEMM's FLOPs grow with the model's widths: the ratios of its
    /// two dimensions other than the tokens' ([`GemmShape::weight_dims`]; a
    /// weight gradient's output and input widths both grow).
    fn width_ratio(&self, sh: GemmShape) -> f64 {
        let (x, y) = self.weight_dims(sh);
        self.dims.ratio(x, &self.r) * self.dims.ratio(y, &self.r)
    }

    /// GEMM `sh`'s two dimensions other than the tokens'
    /// ([`GemmShape::weight_dims`], the tokens from the attention query).
    fn weight_dims(&self, sh: GemmShape) -> (u64, u64) {
        let (b, seq) = self.batch_and_seq;
        let tokens = b.saturating_mul(seq);
        sh.weight_dims(|v| is_token_count(v, tokens, self.dims.tp))
    }

    /// Fused attention: the curve's time ratio for `b s^2 h` scaled with
    /// the hidden size over tp, or that ratio itself without a shape.
    fn attention_ns(&self, traced: i64, dims: Option<[u64; 4]>, tokens: f64) -> (f64, Source) {
        let ratio = self.r.hidden * self.r.tp_shard * tokens;
        match dims {
            Some([b, sq, heads, hd]) => {
                // In floating point: recorded sizes are the trace's, and
                // their product may not fit 64 bits.
                let fl = 2.0 * b as f64 * sq as f64 * sq as f64 * heads as f64 * hd as f64;
                scaled(
                    traced,
                    self.gemm.gemm_ns(fl * ratio) / self.gemm.gemm_ns(fl),
                )
            }
            None => scaled(traced, ratio),
        }
    }

    /// A memory-bound kernel named `name` at `place`: in a pass with its
    /// tensor's size (a weight's elements, or the activations' width in a
    /// layer and their tokens), in the prologue or optimizer with the
    /// parameters; one at the duration `floor` is left alone (its true
    /// size is unknown).
    fn memory_ns(
        &self,
        traced: i64,
        name: &str,
        (place, tensor): (Role, Tensor),
        (optimizer_ratio, layers_ratio): (f64, f64),
        floor: i64,
    ) -> (f64, Source) {
        let r = &self.r;
        let ratio = match (place, tensor) {
            (Role::Prologue { .. } | Role::Epilogue { .. }, _) => optimizer_ratio,
            (
                Role::Pass {
                    part: Part::Layer(_),
                    ..
                },
                Tensor::Weight { ratio, .. },
            ) => ratio,
            // A layer's parameter worked on outside layers (DDP's copy back
            // from its bucket): one such kernel per parameter, so as many
            // more as layers, stretched rather than copied.
            (Role::Pass { .. }, Tensor::Weight { ratio, layer }) => {
                ratio * if layer { layers_ratio } else { 1.0 }
            }
            (
                Role::Pass {
                    part: Part::Layer(_),
                    ..
                },
                Tensor::Activations(tokens),
            ) => {
                let lower = name.to_ascii_lowercase();
                tokens
                    * if ["gelu", "silu", "swiglu", "relu"]
                        .iter()
                        .any(|a| lower.contains(a))
                    {
                        r.ffn * r.tp_shard
                    } else if self.base.sequence_parallel {
                        // The sequence-parallel region: tokens / tp.
                        r.hidden * r.tp_shard
                    } else {
                        r.hidden
                    }
            }
            (Role::Pass { .. }, Tensor::Activations(tokens)) => tokens,
            _ => 1.0,
        };
        if ratio == 1.0 || (traced as f64) <= 1.1 * floor as f64 {
            (traced as f64, Source::Measured)
        } else {
            // The floor is the kernel's fixed cost: only the time above
            // it moves with the bytes (PREDICTION.md, "Memory-bound
            // kernels' fixed cost").
            let floor = floor.max(0) as f64;
            (floor + (traced as f64 - floor) * ratio, Source::Scaled)
        }
    }

    /// A collective: traced + `T_target(new) - T_base(old)` over its new
    /// group and bytes; modelled alone where the traced time waited for
    /// other stages that are gone, or where the new group is one rank.
    /// Without a recorded size, the size is the base model's inverse of
    /// `envelope` (its slot's lower envelope), else of `traced`, and the
    /// result is modelled. The flag is true when such an inferred size went
    /// into the network model: not for a collective kept as traced, nor
    /// for one a group of one does not issue. `stage` is the predicted
    /// stage's input it is built on and its index. A broadcast (`c`'s
    /// flag: its kernel is one), of no kind the ring model knows, is
    /// re-timed the same way through [`broadcast_ns`].
    #[allow(clippy::too_many_arguments)]
    fn comm_ns(
        &self,
        traced: i64,
        envelope: Option<i64>,
        (c, broadcast): (&CommInfo, bool),
        src: usize,
        stage: (usize, u32),
        tag: Tag,
        place: Role,
    ) -> (f64, Source, bool) {
        let (base, target) = (self.base, self.target);
        let (old_ranks, new_ranks, bytes_ratio) =
            self.groups.comm_groups(c, src, stage, tag, place);
        // A transfer between stages or the reduction over all stages waited
        // for the other stages in the trace; in a single-stage pipeline
        // nothing is left to wait for.
        let waited_for_stages = matches!(c.class, GroupClass::Pipeline | GroupClass::ModelParallel)
            && base.config.pp > 1
            && target.config.pp == 1;
        match c.kind {
            Some(kind) if waited_for_stages => {
                let bytes = c.bytes.unwrap_or(0);
                let new_bytes = (bytes as f64 * bytes_ratio).round() as u64;
                let t = if new_ranks.len() < 2 {
                    0.0
                } else {
                    self.target_net.collective_ns(kind, new_bytes, &new_ranks)
                };
                (t, Source::Modelled, false)
            }
            kind if (kind.is_some() || broadcast)
                && (old_ranks.len() >= 2 || new_ranks.len() >= 2) =>
            {
                // The ring the network model knows, or a broadcast.
                let time = |net: &dyn CommModel, bytes: u64, ranks: &[i64]| match kind {
                    Some(kind) => net.collective_ns(kind, bytes, ranks),
                    None => broadcast_ns(net, bytes, ranks),
                };
                let bytes = c.bytes.unwrap_or_else(|| {
                    let ns = envelope.unwrap_or(traced);
                    match kind {
                        Some(kind) => invert(self.base_net, kind, ns, &old_ranks),
                        None => broadcast_bytes(self.base_net, ns, &old_ranks),
                    }
                });
                let new_bytes = (bytes as f64 * bytes_ratio).round() as u64;
                let same = new_bytes == bytes && new_ranks == old_ranks && target.network.is_none();
                if same {
                    (traced as f64, Source::Measured, false)
                } else if new_ranks.len() < 2 {
                    // A group of one: the collective is not issued (kept as
                    // an empty kernel), whatever its size.
                    (0.0, Source::Modelled, false)
                } else {
                    let old_t = time(self.base_net, bytes, &old_ranks);
                    let new_t = time(self.target_net, new_bytes, &new_ranks);
                    let d = (traced as f64 + new_t - old_t).max(0.0);
                    let src_tag = if c.bytes.is_some()
                        && (!base.models.calibrated || base.network.calibrated_for(&new_ranks))
                    {
                        Source::Scaled
                    } else {
                        Source::Modelled
                    };
                    (d, src_tag, c.bytes.is_none())
                }
            }
            // A kind the network model does not know (an all-to-all, a
            // gather): no time to model over a new group, but a group of
            // one issues none.
            None if old_ranks.len() >= 2 && new_ranks.len() < 2 => (0.0, Source::Modelled, false),
            _ => (traced as f64, Source::Measured, false),
        }
    }
}

/// PyTorch's reductions: operators whose result drops (or keeps as 1)
/// dimensions of their input, by their exact names. A name holding one of
/// these is not one (`aten::cumsum` keeps its input's size,
/// `aten::_weight_norm` and `aten::embedding_renorm_` work on weights).
const REDUCTION_OPS: &[&str] = &[
    "aten::sum",
    "aten::nansum",
    "aten::mean",
    "aten::nanmean",
    "aten::prod",
    "aten::logsumexp",
    "aten::amax",
    "aten::amin",
    "aten::aminmax",
    "aten::var",
    "aten::var_mean",
    "aten::std",
    "aten::std_mean",
    "aten::norm",
    "aten::native_norm",
    "aten::linalg_norm",
    "aten::linalg_vector_norm",
    "aten::frobenius_norm",
    "aten::_foreach_norm",
];

/// Whether an operator named `name` is a reduction ([`REDUCTION_OPS`]).
fn is_reduction_op(name: &str) -> bool {
    REDUCTION_OPS.contains(&name)
}

/// Whether an operator named `name` normalizes activations (a layer,
/// RMS, group or batch norm, forward or backward): not a reduction, as its
/// output has its input's size, but a weight is never its largest tensor;
/// its backward sums its weight's gradient over the tokens.
fn is_normalization_op(name: &str) -> bool {
    matches!(
        name,
        "aten::layer_norm"
            | "aten::native_layer_norm"
            | "aten::native_layer_norm_backward"
            | "aten::rms_norm"
            | "aten::_fused_rms_norm"
            | "aten::_fused_rms_norm_backward"
            | "aten::group_norm"
            | "aten::native_group_norm"
            | "aten::native_group_norm_backward"
            | "aten::batch_norm"
            | "aten::native_batch_norm"
            | "aten::native_batch_norm_backward"
            | "aten::_batch_norm_impl_index"
            | "aten::cudnn_batch_norm"
            | "aten::cudnn_batch_norm_backward"
            | "aten::miopen_batch_norm"
            | "aten::miopen_batch_norm_backward"
            | "aten::_native_batch_norm_legit"
            | "aten::_native_batch_norm_legit_no_training"
            | "aten::_native_batch_norm_legit_functional"
            | "aten::_batch_norm_with_update"
            | "aten::_batch_norm_no_update"
            | "aten::batch_norm_backward"
            | "aten::instance_norm"
    )
}

/// Whether task `t` of `s` scales a gradient bucket for its reduction:
/// launched by an in-place multiplication or division (Megatron's
/// `grad_data *= scaling_factor`, the synthesizer's `aten::mul_`) right
/// before, on its thread, an operator that launches a data-parallel
/// collective.
fn scales_a_reduction(s: &Structure, t: TaskId) -> bool {
    let u = s.units.unit_of[t.idx()];
    let Some(unit) = s.units.units.get(u as usize) else {
        return false;
    };
    if !matches!(s.units.token(u as usize), "aten::mul_" | "aten::div_") {
        return false;
    }
    let next = (s.units.units.iter().skip(u as usize + 1)).find(|n| n.thread == unit.thread);
    next.is_some_and(|n| {
        n.gpu().iter().any(|&g| {
            matches!(s.work[g.idx()], WorkClass::Comm(ci)
                if s.comms[ci as usize].class == GroupClass::Data)
        })
    })
}

/// Whether task `t` is launched by DDP's reducer moving gradients into or
/// out of its buckets (inside `torch::distributed::reducer::mul_out`, each
/// gradient's scaled copy into its bucket, or
/// `torch.distributed.ddp.reducer::copy_bucket_to_grad`, the copy back
/// after the all-reduce; or a bucket scaling a PyTorch recorded without
/// the reducer's scope, [`is_bare_bucket_scaling`]), work only a backward
/// that reduces the gradients runs.
fn fills_a_bucket(g: &Graph, t: TaskId) -> bool {
    (g.scope_chain(t)).any(|sc| {
        is_reducer_op(&g.names[g.scopes[sc.0 as usize].name.0 as usize])
            || is_bare_bucket_scaling(g, sc)
    })
}

/// Whether scope `sc` is DDP's reducer scaling a gradient into its bucket
/// where the PyTorch that recorded it named no reducer scope (the DLRM
/// corpus trace's): a bare `aten::mul` (`at::mul_out(bucket, grad,
/// 1/world)`) or `aten::copy_` (under a communication hook) right inside
/// the gradient's accumulation (`autograd::engine::evaluate_function:
/// torch::autograd::AccumulateGrad`), beside its node rather than in it:
/// only DDP's hook on the parameter runs work there. Never in a trace
/// that runs no collective: there is no DDP, and the work is another
/// hook's (a post-accumulation hook's optimizer step, say), which every
/// backward runs.
fn is_bare_bucket_scaling(g: &Graph, sc: ScopeId) -> bool {
    let scope = &g.scopes[sc.0 as usize];
    let named = |s: ScopeId| g.names[g.scopes[s.0 as usize].name.0 as usize].as_str();
    !g.collectives.is_empty()
        && matches!(named(sc), "aten::mul" | "aten::copy_")
        && scope
            .parent
            .is_some_and(|p| named(p) == crate::assemble::ACCUMULATION)
}

/// Whether an operator named `name` is DDP's reducer's own work.
fn is_reducer_op(name: &str) -> bool {
    name.starts_with("torch::distributed::reducer::")
        || name.starts_with("torch.distributed.ddp.reducer::")
}

/// Whether CPU task `t` is (or runs inside) DDP's reducer work (a bucket
/// scaling without the reducer's scope too, [`is_bare_bucket_scaling`]), or a
/// collective's launch (`c10d::...`, `record_param_comms`, `nccl:...`)
/// that reduces gradients: one inside a gradient's accumulation (where
/// DDP's and Megatron's hooks issue their reductions), or one of
/// `reductions` (the collective operators that launch a data-parallel
/// all-reduce or reduce-scatter, [`data_reduction_scopes`]). CPU work that
/// a backward under `no_sync` does not do; a tensor-parallel collective's
/// launch is not.
fn runs_a_reduction(g: &Graph, t: TaskId, reductions: &FxHashSet<ScopeId>) -> bool {
    let named = |sc: ScopeId| g.names[g.scopes[sc.0 as usize].name.0 as usize].as_str();
    let (mut comm, mut accumulation) = (is_collective_op(g.name(t)), false);
    for sc in g.scope_chain(t) {
        let name = named(sc);
        if is_reducer_op(name) || reductions.contains(&sc) || is_bare_bucket_scaling(g, sc) {
            return true;
        }
        comm |= is_collective_op(name);
        accumulation |= name == crate::assemble::ACCUMULATION;
    }
    comm && accumulation
}

/// The CPU time the traced collectives took to issue, ns: the median
/// over every collective kernel of any input of the measured span of the
/// outermost collective operator ([`is_collective_op`]: `c10d::...`,
/// `nccl:...`, `record_param_comms`) around its launch. `None` where no
/// collective's launch lies in one (no collective traced, a world of one).
pub(crate) fn collective_issue_ns(base: &Baseline) -> Option<f64> {
    collective_issue_spans(base).map(|spans| spans[spans.len() / 2] as f64)
}

/// The CPU time of issuing one collective (its outermost collective
/// operator, `record_param_comms` / `c10d::` / `nccl:`), ns, where the
/// trace issued none to measure it by: the median, over the corpus's jobs
/// that issue NCCL or RCCL collectives, of each job's median
/// (`collective_issue_ns`); docs/PREDICTION.md lists the traces, their
/// figures and the command that prints them. A kernel launch alone is
/// several times less: a process group's collective checks, records and
/// enqueues its work besides.
pub const DEFAULT_COLLECTIVE_ISSUE_NS: f64 = 92_000.0;

/// The sorted CPU times (ns) of the outermost collective operators of
/// `base` that launched a collective kernel, or `None` where it has none.
pub fn collective_issue_spans(base: &Baseline) -> Option<Vec<i64>> {
    let mut spans: Vec<i64> = Vec::new();
    for (inp, s) in base.inputs.iter().zip(&base.structures) {
        let g = &inp.graph;
        if inp.measured.scopes.len() != g.scopes.len() {
            continue;
        }
        for e in g.edges.iter().filter(|e| e.kind == DepKind::Launch) {
            if !matches!(s.work.get(e.to.idx()), Some(WorkClass::Comm(_))) {
                continue;
            }
            let outer = (g.scope_chain(e.from))
                .filter(|sc| is_collective_op(&g.names[g.scopes[sc.0 as usize].name.0 as usize]))
                .last();
            if let Some(sc) = outer {
                let span = inp.measured.scopes[sc.0 as usize];
                spans.push(span.end_ns - span.start_ns);
            }
        }
    }
    if spans.is_empty() {
        return None;
    }
    spans.sort_unstable();
    Some(spans)
}

/// Whether an operator named `name` issues a collective.
fn is_collective_op(name: &str) -> bool {
    name.starts_with("c10d::") || name.starts_with("nccl:") || name == "record_param_comms"
}

/// The collective operators of input `s` (graph `g`) that launch a
/// data-parallel all-reduce or reduce-scatter.
fn data_reduction_scopes(g: &Graph, s: &Structure) -> FxHashSet<ScopeId> {
    let mut out = FxHashSet::default();
    for e in g.edges.iter().filter(|e| e.kind == DepKind::Launch) {
        let WorkClass::Comm(ci) = s.work[e.to.idx()] else {
            continue;
        };
        let c = &s.comms[ci as usize];
        if c.class == GroupClass::Data
            && matches!(
                c.kind,
                Some(CollectiveKind::AllReduce | CollectiveKind::ReduceScatter)
            )
        {
            let named = |sc: &ScopeId| g.names[g.scopes[sc.0 as usize].name.0 as usize].as_str();
            out.extend(
                g.scope_chain(e.from)
                    .filter(|sc| is_collective_op(named(sc))),
            );
        }
    }
    out
}

/// Whether task `t` runs inside a gradient function of the autograd engine
/// (`autograd::engine::evaluate_function: ...`): one node's work,
/// including a parameter's gradient accumulation and the hooks DDP runs on
/// it.
fn in_gradient_function(g: &Graph, t: TaskId) -> bool {
    (g.scope_chain(t))
        .any(|sc| is_gradient_function(&g.names[g.scopes[sc.0 as usize].name.0 as usize]))
}

/// Whether task `t` is an `aten::add_` inside PyTorch's `AccumulateGrad`:
/// a micro-batch's gradient added into `.grad`.
fn adds_into_a_gradient(g: &Graph, t: TaskId) -> bool {
    let mut chain = g
        .scope_chain(t)
        .map(|sc| g.names[g.scopes[sc.0 as usize].name.0 as usize].as_str());
    chain.next() == Some("aten::add_") && chain.any(|n| n.contains("AccumulateGrad"))
}

/// Per input: the weights of its first forward layer after the edit over
/// before, from the layer's GEMMs (plus 4 h for layer norms); 1 where the
/// input has no parameters per layer. A router's weight (`routers`, per
/// input) is whole on every tensor-parallel rank.
fn layer_ratios(
    base: &Baseline,
    (dims, head_dim): (Dims, u64),
    r: &Ratios,
    routers: &[FxHashSet<(u64, u64)>],
) -> Vec<f64> {
    (base.params.iter().zip(routers))
        .map(|(pc, routers)| {
            let new = (pc.layer_gemms.iter())
                .map(|&(k, n)| {
                    let shard =
                        if !routers.contains(&(k, n)) && dims.layer_matrix_split(head_dim, k, n) {
                            r.tp_shard
                        } else {
                            1.0
                        };
                    (k * n) as f64 * dims.ratio(k, r) * dims.ratio(n, r) * shard
                })
                .sum::<f64>()
                + 4.0 * base.config.hidden as f64 * r.hidden;
            if pc.per_layer > 0.0 {
                new / pc.per_layer
            } else {
                1.0
            }
        })
        .collect()
}

/// Per input: its shortest memory-bound kernel. Kernels at that floor are
/// left alone: their true size is unknown.
fn memory_floors(base: &Baseline) -> Vec<i64> {
    base.inputs
        .iter()
        .zip(&base.structures)
        .map(|(i, s)| {
            s.work
                .iter()
                .enumerate()
                .filter(|(_, w)| matches!(w, WorkClass::Memory))
                .map(|(k, _)| i.graph.tasks[k].duration_ns)
                .min()
                .unwrap_or(0)
        })
        .collect()
}

/// Where the rank of `input` sits in the traced layout.
fn coord_of(base: &Baseline, input: usize) -> Coord {
    Layout::of(&base.config).coord(base.inputs[input].ctx.rank as i64)
}

fn nonempty(v: &[i64], or: impl FnOnce() -> Vec<i64>) -> Vec<i64> {
    if v.is_empty() {
        or()
    } else {
        v.to_vec()
    }
}

/// `traced` times `ratio`, measured when the ratio is 1.
fn scaled(traced: i64, ratio: f64) -> (f64, Source) {
    if ratio == 1.0 {
        (traced as f64, Source::Measured)
    } else {
        (traced as f64 * ratio, Source::Scaled)
    }
}

/// Whether a communication kernel's name is a broadcast's (NCCL's
/// `ncclKernel_Broadcast_RING_LL_...`, RCCL's `nccl:broadcast`).
pub(crate) fn is_broadcast(name: &str) -> bool {
    name.to_ascii_lowercase().contains("broadcast")
}

/// Whether a collective task runs a broadcast: the collective recorded
/// for it (or for the launched one it was taken for) is one, or its
/// kernel's name says so (RCCL's kernels are all `ncclDevKernel_Generic`,
/// so the recorded collective decides first).
pub(crate) fn runs_broadcast(c: &CommInfo, g: &lumos_graph::Graph) -> bool {
    let named = c.taken_for.unwrap_or(c.task);
    g.task(named)
        .collective
        .is_some_and(|k| is_broadcast(&g.collectives[k as usize].name))
        || is_broadcast(&g.names[g.task(c.task).name.0 as usize])
}

/// A broadcast of `bytes` from one member of `ranks` to the others under
/// `net`, ns. NCCL's broadcast (and RCCL's) pipelines the message in
/// chunks from the root along the ring: every rank receives all of it
/// once (bus bandwidth = algorithm bandwidth, bus factor 1) and the last
/// rank is `n - 1` hops from the root. A ring all-gather takes the same
/// `n - 1` steps and moves `(n - 1) / n` of its bytes per rank, so the
/// broadcast is the all-gather of `n / (n - 1)` times the bytes: the same
/// calibrated link, latencies and node crossings as the ring collectives.
/// A group of one costs nothing.
pub(crate) fn broadcast_ns(net: &dyn CommModel, bytes: u64, ranks: &[i64]) -> f64 {
    let n = ranks.len();
    if n < 2 {
        return 0.0;
    }
    let gathered = (bytes as f64 * n as f64 / (n - 1) as f64).round() as u64;
    net.collective_ns(CollectiveKind::AllGather, gathered, ranks)
}

/// The message size a broadcast of measured duration `ns` moves under
/// `net` ([`broadcast_ns`]'s inverse), for traces that do not record it.
fn broadcast_bytes(net: &dyn CommModel, ns: i64, ranks: &[i64]) -> u64 {
    let n = ranks.len().max(2) as f64;
    let gathered = invert(net, CollectiveKind::AllGather, ns, ranks);
    (gathered as f64 * (n - 1.0) / n).round() as u64
}

/// The message size a collective of measured duration `ns` moves under
/// `net`, for traces that do not record it.
fn invert(net: &dyn CommModel, kind: CollectiveKind, ns: i64, ranks: &[i64]) -> u64 {
    let zero = net.collective_ns(kind, 0, ranks);
    let per_byte = (net.collective_ns(kind, 1 << 30, ranks) - zero) / (1u64 << 30) as f64;
    if per_byte <= 0.0 {
        return 0;
    }
    ((ns as f64 - zero).max(0.0) / per_byte) as u64
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lumos_models::{GpuSpec, NetworkModel};

    use super::*;
    use crate::testutil::baseline;

    /// GEMM time proportional to FLOPs, so that ratios are exact.
    struct Linear;
    impl ComputeModel for Linear {
        fn gemm_ns(&self, flops: f64) -> f64 {
            flops / 100.0
        }
    }

    fn target(base: &Baseline, f: impl FnOnce(&mut Config)) -> Target {
        let mut config = base.config;
        f(&mut config);
        Target {
            config,
            scales: Vec::new(),
            network: None,
            heads: None,
        }
    }

    fn config(tp: u32, hidden: u64, ffn: u64) -> Config {
        Config {
            tp,
            dp: 4,
            pp: 1,
            microbatches: 1,
            layers: 1,
            hidden,
            ffn,
            virtual_stages: 1,
            micro_batch: 0,
        }
    }

    #[test]
    fn ratios_and_dimensions() {
        let r = Ratios::of(&config(2, 1024, 4096), &config(4, 2048, 4096));
        assert_eq!(
            (r.hidden, r.ffn, r.tp_shard, r.dp_shard),
            (2.0, 1.0, 0.5, 1.0)
        );
        // Unknown sizes do not change.
        assert_eq!(Ratios::of(&config(2, 0, 0), &config(2, 5, 5)).hidden, 1.0);
        let d = Dims::of(&config(2, 1024, 4096));
        for v in [1024, 512, 1536, 3072] {
            assert!(d.hidden_like(v), "{v}");
            assert_eq!(d.ratio(v, &r), 2.0);
        }
        for v in [4096, 2048] {
            assert!(d.ffn_like(v) && !d.hidden_like(v), "{v}");
            assert_eq!(d.ratio(v, &r), 1.0);
        }
        // Tokens and vocabulary stay.
        assert_eq!(d.ratio(51200, &r), 1.0);
        assert_eq!(scaled(10, 1.0), (10.0, Source::Measured));
        assert_eq!(scaled(10, 1.5), (15.0, Source::Scaled));
    }

    #[test]
    fn a_broadcast_moves_its_bytes_once_and_pays_a_hop_per_ring_member() {
        let net = GpuSpec::h100().network;
        let (link, base) = (net.intra_node, net.base_latency_us * 1e3);
        let rate = link.bandwidth_gbps * link.efficiency;
        let bytes = 64u64 << 20;
        for n in [2i64, 4, 8] {
            let ranks: Vec<i64> = (0..n).collect();
            let t = broadcast_ns(&net, bytes, &ranks);
            // Bus factor 1: the whole message per rank, whatever n; one
            // hop latency per ring member after the root.
            let want = base + (n - 1) as f64 * link.hop_latency_us * 1e3 + bytes as f64 / rate;
            assert!((t - want).abs() < 2.0, "n {n}: {t} against {want}");
            let back = broadcast_bytes(&net, t.round() as i64, &ranks);
            assert!(back.abs_diff(bytes) < bytes / 1000, "n {n}: {back}");
        }
        assert_eq!(broadcast_ns(&net, bytes, &[3]), 0.0);
        assert!(is_broadcast(
            "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclWorkElem)"
        ));
        assert!(is_broadcast("nccl:broadcast"));
        assert!(!is_broadcast(
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"
        ));
    }

    #[test]
    fn message_sizes_are_recovered_from_durations() {
        let net = GpuSpec::h100().network;
        let ranks = [0, 1, 2, 3];
        for bytes in [1u64 << 20, 1 << 26] {
            let ns = net.collective_ns(CollectiveKind::AllReduce, bytes, &ranks);
            let back = invert(&net, CollectiveKind::AllReduce, ns.round() as i64, &ranks);
            assert!(
                (back as f64 / bytes as f64 - 1.0).abs() < 1e-3,
                "{back} vs {bytes}"
            );
        }
        // Shorter than the fixed cost: nothing moved.
        assert_eq!(invert(&net, CollectiveKind::AllReduce, 1, &ranks), 0);
    }

    #[test]
    fn gemms_attention_and_memory_kernels_scale_with_their_sizes() {
        let base = baseline("gpt-tiny", None, [2, 1, 2, 2]);
        let comm = base.models.comm.clone();
        let base = base.with_models(Arc::new(Linear), comm);
        let t = target(&base, |c| c.hidden = 2048);
        let rt = Retimer::new(&base, &t);
        let sh = GemmShape {
            m: 2048,
            n: 1536,
            k: 1024,
        };
        // Both weight dimensions are hidden-like.
        assert_eq!(rt.gemm_ns(1000, sh, 1.0, false), (4000.0, Source::Scaled));
        let tokens_only = GemmShape {
            m: 2048,
            n: 51200,
            k: 77,
        };
        assert_eq!(
            rt.gemm_ns(1000, tokens_only, 1.0, false),
            (1000.0, Source::Measured)
        );
        // A weight gradient as a plain product, `[out, tokens] x [tokens,
        // in]`: both widths grow, the tokens (k) do not.
        let (b, seq) = rt.batch_and_seq;
        let wgrad = GemmShape {
            m: 1536,
            n: 1024,
            k: b * seq,
        };
        assert_eq!(
            rt.gemm_ns(1000, wgrad, 1.0, false),
            (4000.0, Source::Scaled)
        );
        assert_eq!(rt.attention_ns(1000, Some([1, 2048, 8, 64]), 1.0).0, 2000.0);
        assert_eq!(rt.attention_ns(1000, None, 1.0), (2000.0, Source::Scaled));
        let layer = Role::Pass {
            step: 0,
            pass: 0,
            part: Part::Layer(0),
        };
        let floor = rt.floors[0];
        let long = 100 * floor.max(1);
        // The floor is kept, the time above it scaled.
        let grown = |ratio: f64| floor as f64 + ratio * (long - floor) as f64;
        // Sequence parallel: element-wise work in a layer is h / tp.
        assert!(base.sequence_parallel);
        assert_eq!(
            rt.memory_ns(
                long,
                "vectorized_add",
                (layer, Tensor::Activations(1.0)),
                (3.0, 1.0),
                floor
            )
            .0,
            grown(2.0)
        );
        // Activation functions scale with the FFN size (unchanged here,
        // but it follows the hidden size's edit in `with_hidden`).
        assert_eq!(
            rt.memory_ns(
                long,
                "gelu_kernel",
                (layer, Tensor::Activations(1.0)),
                (3.0, 1.0),
                floor
            )
            .1,
            Source::Measured
        );
        let optimizer = Role::Epilogue { step: 0 };
        assert_eq!(
            rt.memory_ns(
                long,
                "adam",
                (optimizer, Tensor::Activations(1.0)),
                (3.0, 1.0),
                floor
            )
            .0,
            grown(3.0)
        );
        // A weight (a cast, a gradient's accumulation) grows with its
        // elements: hidden 1024 -> 2048 makes a [3h, h] weight 4x.
        let weight = |layer| Tensor::Weight { ratio: 4.0, layer };
        assert_eq!(
            rt.memory_ns(
                long,
                "copy_kernel",
                (layer, weight(true)),
                (3.0, 2.0),
                floor
            )
            .0,
            grown(4.0)
        );
        // Outside layers, a layer's parameter comes once per layer: twice
        // the layers, twice the time.
        let post = Role::Pass {
            step: 0,
            pass: 1,
            part: Part::Post,
        };
        assert_eq!(
            rt.memory_ns(long, "copy_kernel", (post, weight(true)), (3.0, 2.0), floor)
                .0,
            grown(8.0)
        );
        assert_eq!(
            rt.memory_ns(
                long,
                "copy_kernel",
                (post, weight(false)),
                (3.0, 2.0),
                floor
            )
            .0,
            grown(4.0)
        );
        // At the floor: left alone.
        assert_eq!(
            rt.memory_ns(
                floor,
                "vectorized_add",
                (layer, Tensor::Activations(1.0)),
                (3.0, 1.0),
                floor
            ),
            (floor as f64, Source::Measured)
        );
        assert_eq!(
            rt.memory_ns(
                long,
                "x",
                (Role::Outside, Tensor::Activations(1.0)),
                (3.0, 1.0),
                floor
            ),
            (long as f64, Source::Measured)
        );
    }

    /// The traced graph's first memory-bound kernel that runs under an
    /// operator, and its innermost operator.
    fn memory_kernel_scope(base: &Baseline) -> (TaskId, ScopeId) {
        let g = &base.inputs[0].graph;
        let work = &base.structures[0].work;
        let task = (0..g.tasks.len() as u32)
            .map(TaskId)
            .find(|&t| work[t.idx()] == WorkClass::Memory && g.scope_chain(t).next().is_some())
            .expect("a memory-bound kernel under an operator");
        (task, g.scope_chain(task).next().unwrap())
    }

    #[test]
    fn weights_are_told_from_activations_by_their_shapes() {
        // GPT tiny: hidden 1024, FFN 4096, TP 2; one sequence of 4096.
        let mut base = baseline("gpt-tiny", None, [2, 1, 2, 2]);
        let (task, scope) = memory_kernel_scope(&base);
        let scope = scope.0 as usize;
        for (dims, want) in [
            // A column-parallel [3h/tp, h] weight: (2048 / 1024)^2.
            ("[[1536, 1024]]", Some((4.0, true))),
            // Its bias, a layer norm's weight: with the hidden size.
            ("[[1536]]", Some((2.0, true))),
            ("[[1024], []]", Some((2.0, true))),
            // An FFN weight: the FFN size is not edited here.
            ("[[2048, 1024]]", Some((2.0, true))),
            // The embedding table: not a layer's.
            ("[[51200, 1024]]", Some((2.0, false))),
            // Activations [s, b, h]: not a weight.
            ("[[4096, 1, 1024]]", None),
            // A flattened [tokens, h / tp]: 4096 tokens are FFN wide too,
            // so nothing tells it from a weight; left to the old rule.
            ("[[4096, 512]]", None),
            // No hidden- or FFN-like dimension.
            ("[[77, 5]]", None),
            // The loss's logits, `[tokens, vocabulary]`: 4096 tokens are
            // FFN-wide, but no weight pairs that with the vocabulary.
            ("[[4096, 51200]]", None),
        ] {
            base.inputs[0].graph.scopes[scope].input_dims = InputDims::parse(dims);
            let t = target(&base, |c| c.hidden = 2048);
            let mut rt = Retimer::new(&base, &t);
            rt.batch_and_seq = (1, 4096);
            assert_eq!(rt.weight_ratio(0, task), want, "{dims}");
            let d = InputDims::parse(dims).unwrap();
            let tokens = (0..d.len()).any(|i| rt.has_tokens(crate::shapes::sizes(&d, i)));
            let want_tokens = matches!(dims, "[[4096, 1, 1024]]" | "[[4096, 51200]]");
            assert_eq!(tokens, want_tokens, "{dims}");
        }
        // 2048 tokens are the FFN shard's width: the FFN weight's shape is
        // still a weight, a flattened activation of another width not.
        for (dims, want) in [
            ("[[2048, 1024]]", Some((2.0, true))),
            ("[[2048, 1536]]", None),
        ] {
            base.inputs[0].graph.scopes[scope].input_dims = InputDims::parse(dims);
            let t = target(&base, |c| c.hidden = 2048);
            let mut rt = Retimer::new(&base, &t);
            rt.batch_and_seq = (1, 2048);
            assert_eq!(rt.weight_ratio(0, task), want, "{dims}");
        }
    }

    #[test]
    fn logits_outside_the_loss_are_told_by_the_vocabulary_shard() {
        // GPT tiny: hidden 1024, FFN 4096, vocabulary 51200, TP 2: the
        // output layer's GEMM is `[tokens, 1024] x [1024, 25600]`.
        let mut base = baseline("gpt-tiny", None, [2, 1, 2, 2]);
        let t = target(&base, |c| c.tp = 4);
        assert_eq!(
            Retimer::new(&base, &t).vocab_shards,
            FxHashSet::from_iter([25600])
        );
        let (task, scope) = memory_kernel_scope(&base);
        let scope = scope.0 as usize;
        for (dims, want) in [
            // The logits or their gradient, flat or `[s, b, v / tp]`.
            (Some("[[4096, 25600]]"), true),
            (Some("[[4096, 1, 25600]]"), true),
            (Some("[[4096, 1, 25600], [], []]"), true),
            // The embedding table's shard: no tokens.
            (Some("[[25600, 1024]]"), false),
            // Activations of the hidden or FFN shard's width, and of a
            // width that is not the vocabulary's shard.
            (Some("[[4096, 1, 1024]]"), false),
            (Some("[[4096, 2048]]"), false),
            (Some("[[4096, 51200]]"), false),
            (Some("[[4096, 25601]]"), false),
            // Per-token statistics, and no shapes at all.
            (Some("[[4096, 1]]"), false),
            (None, false),
        ] {
            base.inputs[0].graph.scopes[scope].input_dims = dims.and_then(InputDims::parse);
            let mut rt = Retimer::new(&base, &t);
            rt.batch_and_seq = (1, 4096);
            assert_eq!(rt.logits_sized(0, task), want, "{dims:?}");
        }
    }

    #[test]
    fn activations_outside_layers_are_told_hidden_wide_by_their_shapes() {
        // GPT tiny: hidden 1024, FFN 4096, vocabulary 51200, TP 2; one
        // sequence of 4096.
        let mut base = baseline("gpt-tiny", None, [2, 1, 2, 2]);
        let t = target(&base, |c| c.hidden = 2048);
        let (task, scope) = memory_kernel_scope(&base);
        let scope = scope.0 as usize;
        let traced_name = base.inputs[0].graph.scopes[scope].name;
        base.inputs[0].graph.names.push("aten::embedding".into());
        let lookup = lumos_graph::NameId(base.inputs[0].graph.names.len() as u32 - 1);
        for (dims, embedding, want) in [
            // The final norm's input `[s, b, h]`, the sequence whole or
            // split over tp; flattened, 4096 tokens are as wide as the
            // FFN, and nothing tells `[tokens, h]` from its weight.
            (Some("[[4096, 1, 1024], [], [1024], [1024]]"), false, true),
            (Some("[[2048, 1, 1024]]"), false, true),
            (Some("[[4096, 1024]]"), false, false),
            // Of the FFN's width, the logits, per-token statistics: not
            // the hidden size's.
            (Some("[[4096, 1, 2048]]"), false, false),
            (Some("[[4096, 25600]]"), false, false),
            (Some("[[4096, 1]]"), false, false),
            // The embedding table alone has no tokens; looked up with
            // the tokens' indices it gives `[tokens, h]`.
            (Some("[[25600, 1024]]"), false, false),
            (Some("[[25600, 1024], [1, 4096]]"), false, false),
            (Some("[[25600, 1024], [1, 4096]]"), true, true),
            (Some("[[25600, 2048], [1, 4096]]"), true, false),
            // No shapes: nothing tells.
            (None, false, false),
        ] {
            let g = &mut base.inputs[0].graph;
            g.scopes[scope].input_dims = dims.and_then(InputDims::parse);
            g.scopes[scope].name = if embedding { lookup } else { traced_name };
            let mut rt = Retimer::new(&base, &t);
            rt.batch_and_seq = (1, 4096);
            assert_eq!(rt.hidden_wide(0, task), want, "{dims:?} {embedding}");
        }
    }

    /// The retimer of `base` for `target`, its tokens set to `tokens`, and
    /// the first memory-bound kernel under an operator with its innermost
    /// scope's shapes set to `dims`: how that kernel's weight grows.
    fn weight_of(base: &mut Baseline, t: &Target, tokens: u64, dims: &str) -> Option<(f64, bool)> {
        let (task, scope) = memory_kernel_scope(base);
        let scope = scope.0 as usize;
        base.inputs[0].graph.scopes[scope].input_dims = InputDims::parse(dims);
        let mut rt = Retimer::new(base, t);
        rt.batch_and_seq = (1, tokens);
        rt.weight_ratio(0, task)
    }

    #[test]
    fn weights_are_split_over_tp_by_the_layer_s_structure_not_by_their_sizes() {
        // GPT tiny at TP 4: hidden 1024, FFN 4096 = 4h, so that the MLP's
        // matrices are `[h, h]` shards (and discovery leaves the FFN size
        // unknown). TP 4 -> 2: a shard grows 2x, a whole weight does not.
        let mut base = baseline("gpt-tiny", None, [4, 1, 1, 1]);
        let t = target(&base, |c| c.tp = 2);
        for (dims, want) in [
            // The first MLP matrix `[ffn/tp, h]` = `[h, h]`: a GEMM's
            // weight, so a shard, though both its sizes are h.
            ("[[1024, 1024]]", Some((2.0, true))),
            // A layer norm's weight or a row-parallel bias, `[h]`: whole.
            ("[[1024]]", Some((1.0, true))),
            // The projection `[h, h/tp]` and the QKV bias `[3h/tp]`.
            ("[[1024, 256]]", Some((2.0, true))),
            ("[[768]]", Some((2.0, true))),
            // The embedding table `[vocabulary, h]`: whole here.
            ("[[51200, 1024]]", Some((1.0, false))),
        ] {
            assert_eq!(weight_of(&mut base, &t, 4096, dims), want, "{dims}");
        }
        // Hidden 1536 at TP 3: a QKV shard `[3h/tp, h]` is `[h, h]`, and
        // `[h]` is 3h/tp wide. TP 3 -> 1: a shard grows 3x.
        let mut preset = lumos_synth::ModelPreset::gpt("tp3", 2, 1536, 12);
        preset.vocab = 50_304;
        preset.seq_len = 3072;
        let cfg = lumos_synth::SynthConfig::new(
            preset,
            lumos_synth::Parallelism::new(3, 1, 1, 1),
            GpuSpec::h100(),
        );
        let text = lumos_synth::synthesize_rank(&cfg, 0).unwrap();
        let trace =
            lumos_trace::read_bytes(std::path::Path::new("t.json"), text.as_bytes()).unwrap();
        let mut base = Baseline::new(vec![crate::testutil::input(&trace, "rank0")]).unwrap();
        assert_eq!(
            (base.config.tp, base.config.hidden, base.config.ffn),
            (3, 1536, 6144)
        );
        let t = target(&base, |c| c.tp = 1);
        for (dims, want) in [
            ("[[1536]]", Some((1.0, true))),
            ("[[1536, 1536]]", Some((3.0, true))),
            ("[[2048]]", Some((3.0, true))),
        ] {
            assert_eq!(weight_of(&mut base, &t, 4096, dims), want, "{dims}");
        }
        // Traced at TP 1 (GPT tiny, hidden 1024, FFN 4096), TP 2: the
        // projections, whole in the trace, are the weights split (before,
        // at TP 1 none was); a layer norm's `[h]` and the embedding table
        // are not; the column-parallel biases `[3h]` and `[ffn]` are.
        let mut base = baseline("gpt-tiny", None, [1, 1, 1, 1]);
        let t = target(&base, |c| c.tp = 2);
        for (dims, want) in [
            ("[[3072, 1024]]", Some((0.5, true))),
            ("[[1024, 1024]]", Some((0.5, true))),
            ("[[4096, 1024]]", Some((0.5, true))),
            ("[[1024, 4096]]", Some((0.5, true))),
            ("[[1024]]", Some((1.0, true))),
            ("[[3072]]", Some((0.5, true))),
            ("[[4096]]", Some((0.5, true))),
            ("[[51200, 1024]]", Some((1.0, false))),
        ] {
            assert_eq!(weight_of(&mut base, &t, 4096, dims), want, "tp 1: {dims}");
        }
        // So the data-parallel gradient bytes of a layer halve (the layer
        // norms' few stay whole); at TP 1 nothing was taken for a shard,
        // and they kept their size.
        let ratio = Regroup::new(&base, &t).layer_ratio[0];
        assert!((0.5..0.51).contains(&ratio), "{ratio}");
    }

    #[test]
    fn only_the_projections_are_tensor_parallel_shards_not_a_router() {
        // Megatron GPT, hidden 4096, FFN 16384, TP 4, heads of 128.
        let dims = Dims {
            hidden: 4096,
            ffn: 16384,
            tp: 4,
        };
        for ((x, y), want) in [
            // QKV `[3h/tp, h]`, the output projection `[h, h/tp]`.
            ((3072, 4096), true),
            ((4096, 1024), true),
            // The MLP's up `[ffn/tp, h]`, gated `[2 ffn/tp, h]`, and down.
            ((4096, 4096), true),
            ((8192, 4096), true),
            ((4096, 4096), true),
            // A grouped-query QKV, 32 heads and 8 of keys and values:
            // `(32 + 16) x 128 / 4`, a multiple of the head size only.
            ((1536, 4096), true),
            // MoE routers `[h, experts]`: replicated.
            ((4096, 8), false),
            ((4096, 64), false),
            ((256, 4096), false),
            // No hidden size: not one of the layer's projections.
            ((128, 2048), false),
            ((3072, 1024), false),
        ] {
            assert_eq!(dims.layer_matrix_split(128, x, y), want, "{x} x {y}");
        }
        // Without the head size the grouped-query QKV is not tied to h.
        assert!(!dims.layer_matrix_split(0, 1536, 4096));
        // A router of exactly a shard's width cannot be told from one.
        assert!(dims.layer_matrix_split(128, 4096, 1024));
        // Without a hidden size, every matrix.
        assert!(Dims { hidden: 0, ..dims }.layer_matrix_split(0, 4096, 8));
        // Traced at TP 1, the matrices a target tp splits are the whole
        // projections, told by the same rule: `[3h, h]`, `[h, h]`, `[ffn,
        // h]`, gated `[2 ffn, h]`, a grouped-query `(32 + 16) x 128`; not a
        // router, nor anything without a hidden size known.
        let one = Dims { tp: 1, ..dims };
        for ((x, y), want) in [
            ((12288, 4096), true),
            ((4096, 4096), true),
            ((16384, 4096), true),
            ((4096, 32768), true),
            ((6144, 4096), true),
            ((4096, 8), false),
            ((4096, 64), false),
            ((3072, 1024), false),
        ] {
            assert_eq!(one.layer_matrix_split(128, x, y), want, "tp 1: {x} x {y}");
        }
        assert!(!Dims { hidden: 0, ..one }.layer_matrix_split(0, 4096, 4096));

        // Through re-timing: GPT tiny at TP 4 (hidden 1024), a router
        // `[h, 8]` among the first layer's GEMM weights. TP 4 -> 2: the
        // router's gradient keeps its size (it was taken for a shard and
        // doubled); the output projection `[h, h/tp]` still doubles.
        let mut base = baseline("gpt-tiny", None, [4, 1, 1, 1]);
        let t = target(&base, |c| c.tp = 2);
        let (task, scope) = memory_kernel_scope(&base);
        let scope = scope.0 as usize;
        for (dims, want) in [
            ("[[1024, 8]]", Some((1.0, true))),
            ("[[8, 1024]]", Some((1.0, true))),
            ("[[1024, 256]]", Some((2.0, true))),
        ] {
            base.inputs[0].graph.scopes[scope].input_dims = InputDims::parse(dims);
            let mut rt = Retimer::new(&base, &t);
            rt.layer_weights.insert((8, 1024));
            rt.batch_and_seq = (1, 4096);
            assert_eq!(rt.weight_ratio(0, task), want, "{dims}");
        }
    }

    #[test]
    fn routers_are_named_by_their_modules_not_by_a_gated_mlp() {
        for (name, want) in [
            ("nn.Module: TopKRouter_0", true),
            ("router", true),
            ("model.layers.3.block_sparse_moe.gate", true),
            ("mlp.gate", true),
            ("mlp.shared_expert_gate", true),
            ("nn.Module: Gate_1", true),
            ("nn.Module: MoEGate_0", true),
            ("nn.Module: TopKGate_2", true),
            ("nn.Module: GatedMLP_0", false),
            ("mlp.gate_proj", false),
            ("mlp.gate_up_proj", false),
            ("aten::mm", false),
            ("layer3", false),
            ("gated", false),
        ] {
            assert_eq!(names_a_router(name), want, "{name}");
        }
    }

    /// An MoE router `[tokens, h] x [h, experts]` with as many experts as
    /// a shard's width (`h/tp`): named in its launching operator, it is
    /// kept whole under `--tp` (its GEMMs in both passes, its weight's
    /// kernels, its share of the layer's weights), where the shapes alone
    /// took it for a column-parallel shard and halved it at TP 4 -> 2.
    #[test]
    fn a_named_router_of_a_shard_s_width_is_whole_on_every_rank() {
        // GPT tiny at TP 4: hidden 1024, so h/tp = 256 experts.
        let mut base = baseline("gpt-tiny", None, [4, 1, 1, 1]);
        let (h, e) = (1024u64, 256u64);
        let s = &base.structures[0];
        let gemms_of = |kind: PassKind| -> Vec<TaskId> {
            let layer = (s.steps.iter().flat_map(|st| st.passes.iter()))
                .find(|p| p.kind == kind)
                .and_then(|p| p.layers.first())
                .unwrap();
            (layer.iter())
                .flat_map(|&u| s.units.units[u as usize].gpu().iter().copied())
                .filter(|t| matches!(s.work[t.idx()], WorkClass::Gemm(_)))
                .collect()
        };
        let (fwd, bwd) = (gemms_of(PassKind::Forward), gemms_of(PassKind::Backward));
        let WorkClass::Gemm(qkv) = s.work[fwd[0].idx()] else {
            unreachable!()
        };
        assert_eq!((qkv.k, qkv.n), (h, 768), "the first forward GEMM is QKV");
        let tokens = qkv.m;
        // The QKV product becomes the router's, under an operator named
        // for it; a backward GEMM becomes its input's gradient `[tokens,
        // E] x [E, h]`, another the output projection's `[tokens, h] x
        // [h, h/tp]`: the same sizes as the router's forward product.
        let (router, router_dgrad, proj_dgrad) = (fwd[0], bwd[0], bwd[1]);
        let sh = |m, k, n| GemmShape { m, k, n };
        let g = &mut base.inputs[0].graph;
        let sc = g.scope_chain(router).next().unwrap().0 as usize;
        g.names.push("nn.Module: TopKRouter_0".into());
        g.scopes[sc].name = lumos_graph::NameId(g.names.len() as u32 - 1);
        let s = &mut base.structures[0];
        s.work[router.idx()] = WorkClass::Gemm(sh(tokens, h, e));
        s.work[router_dgrad.idx()] = WorkClass::Gemm(sh(tokens, e, h));
        s.work[proj_dgrad.idx()] = WorkClass::Gemm(sh(tokens, h, e));
        base.params[0].layer_gemms[0] = (h, e);
        let t = target(&base, |c| c.tp = 2);
        let mut rt = Retimer::new(&base, &t);
        rt.gemm = &Linear;
        assert!(rt.groups.routers[0].contains(&(h, e)));
        for (task, whole) in [(router, true), (router_dgrad, true), (proj_dgrad, false)] {
            let WorkClass::Gemm(shape) = base.structures[0].work[task.idx()] else {
                unreachable!()
            };
            assert_eq!(rt.router_gemm(0, task, shape), whole, "{task:?}");
            let (ns, _) = rt.gemm_ns(1000, shape, 1.0, whole);
            assert_eq!(ns, if whole { 1000.0 } else { 2000.0 }, "{task:?}");
        }
        // Its weight `[E, h]` (`[out, in]`) keeps its size; the output
        // projection's `[h, h/tp]`, of the same two sizes, doubles.
        for (dims, want) in [("[[256, 1024]]", 1.0), ("[[1024, 256]]", 2.0)] {
            assert_eq!(
                weight_of(&mut base, &t, tokens, dims),
                Some((want, true)),
                "{dims}"
            );
        }
        // The layer's weights at TP 2: every projection twice, the
        // router once, the layer norms once.
        let pc = &base.params[0];
        let new: f64 = (pc.layer_gemms.iter())
            .map(|&(k, n)| (k * n) as f64 * if (k, n) == (h, e) { 1.0 } else { 2.0 })
            .sum::<f64>()
            + 4.0 * h as f64;
        let got = Regroup::new(&base, &t).layer_ratio[0];
        assert!((got - new / pc.per_layer).abs() < 1e-12, "{got}");
    }

    /// The shape-only router rule: where no name tells, a layer's matrix
    /// `[h, E]` is a router's only for `E` at most [`SMALL_DIM`] experts
    /// that is not a shard's size. Hidden 4096 at TP 2 with the head size
    /// unknown: a grouped-query QKV shard (32 query and 8 key-value heads
    /// of 128, `(32 + 16) x 128 / 2 = 3072`) is a multiple of neither
    /// `h/tp` nor `ffn/tp`, yet its GEMMs still shrink with tp (it was
    /// taken for a router once); a `[4096, 64]` router's do not.
    #[test]
    fn a_router_by_shape_has_few_experts_and_a_gqa_shard_is_no_router() {
        let mut base = baseline("gpt-tiny", None, [2, 1, 1, 1]);
        let (h, qkv, experts) = (4096u64, 3072u64, 64u64);
        base.config.hidden = h;
        base.config.ffn = 4 * h;
        let s = &mut base.structures[0];
        // The head size unknown: no attention query with a shape.
        for w in s.work.iter_mut() {
            if let WorkClass::Attention(d) = w {
                *d = None;
            }
        }
        let layer = (s.steps.iter().flat_map(|st| st.passes.iter()))
            .find(|p| p.kind == PassKind::Forward)
            .and_then(|p| p.layers.first())
            .unwrap();
        let fwd: Vec<TaskId> = (layer.iter())
            .flat_map(|&u| s.units.units[u as usize].gpu().iter().copied())
            .filter(|t| matches!(s.work[t.idx()], WorkClass::Gemm(_)))
            .collect();
        let WorkClass::Gemm(first) = s.work[fwd[0].idx()] else {
            unreachable!()
        };
        let sh = |n| GemmShape {
            m: first.m,
            k: h,
            n,
        };
        s.work[fwd[0].idx()] = WorkClass::Gemm(sh(qkv));
        s.work[fwd[1].idx()] = WorkClass::Gemm(sh(experts));
        let dims = Dims::of(&base.config);
        assert!(
            !dims.layer_matrix_split(0, h, qkv),
            "not a shard by its sizes"
        );
        let names = name_flags(&base, names_a_router);
        assert_eq!(
            router_weights(&base, dims, 0, &names)[0],
            FxHashSet::from_iter([(h, experts)])
        );
        let t = target(&base, |c| c.tp = 4);
        let mut rt = Retimer::new(&base, &t);
        rt.gemm = &Linear;
        for (task, n, whole) in [(fwd[0], qkv, false), (fwd[1], experts, true)] {
            assert_eq!(rt.router_gemm(0, task, sh(n)), whole, "[{h}, {n}]");
            let (ns, _) = rt.gemm_ns(1000, sh(n), 1.0, whole);
            assert_eq!(ns, if whole { 1000.0 } else { 500.0 }, "[{h}, {n}]");
        }
    }

    /// A gradient addition sized from its gradient's shape (no DDP
    /// scaling kernel, `assemble/additions.rs`) moves that gradient's
    /// bytes as the model's widths change them, as the weight's own
    /// kernels do; it kept the traced bytes under `--hidden` and `--tp`.
    #[test]
    fn a_gradient_sized_from_its_shape_grows_as_its_weight() {
        // GPT tiny at TP 2, hidden 1024: a memory-bound kernel of the
        // traced graph made an addition of a float gradient whose node is
        // the kernel's operator, at a bandwidth of one byte per ns.
        let mut base = baseline("gpt-tiny", None, [2, 1, 1, 1]);
        let (task, node) = memory_kernel_scope(&base);
        let floor = memory_floors(&base)[0] as f64;
        let above = |base: &Baseline, t: &Target, dims: &str| -> f64 {
            let mut p = base.identity();
            let st = &mut p.stages[0];
            let i = (0..st.origin.len())
                .find(|&i| st.origin[i] == (0, task))
                .unwrap();
            let d = InputDims::parse(dims).unwrap();
            let elements: i64 = crate::shapes::sizes(&d, 0).iter().product();
            st.tag[i] = Tag {
                addition: true,
                shaped_addition: Some(crate::assemble::ShapedAddition {
                    bytes: 4 * elements as u64,
                    node,
                }),
                ..st.tag[i]
            };
            let mut rt = Retimer::new(base, t);
            rt.bandwidths = vec![Some(1.0)];
            let (ns, source) = rt.addition_ns(st, i, (1.0, 1.0));
            assert_eq!(source, Source::Modelled);
            ns - floor
        };
        for (dims, hidden, tp) in [
            // A `[h, h]` weight, whole: 4x its elements at twice the
            // hidden size, as many at TP 4.
            ("[[1024, 1024]]", 4.0, 1.0),
            // The QKV shard `[3h/tp, h]`: 4x, and half at TP 4.
            ("[[1536, 1024]]", 4.0, 0.5),
            // A bias of the hidden size: 2x.
            ("[[1024]]", 2.0, 1.0),
            // No hidden- or FFN-like size: as traced.
            ("[[77, 5]]", 1.0, 1.0),
        ] {
            base.inputs[0].graph.scopes[node.0 as usize].input_dims = InputDims::parse(dims);
            let same = above(&base, &target(&base, |_| {}), dims);
            let d = InputDims::parse(dims).unwrap();
            let elements: i64 = crate::shapes::sizes(&d, 0).iter().product();
            assert_eq!(same, ADDITION_TENSORS * 4.0 * elements as f64, "{dims}");
            let wider = above(&base, &target(&base, |c| c.hidden = 2048), dims);
            assert!(
                (wider / same - hidden).abs() < 1e-9,
                "{dims}: {wider} / {same}"
            );
            let split = above(&base, &target(&base, |c| c.tp = 4), dims);
            assert!((split / same - tp).abs() < 1e-9, "{dims}: {split} / {same}");
        }
    }

    /// DLRM's DDP (an older PyTorch) scales each gradient into its bucket
    /// with a bare `aten::mul` right inside the gradient's accumulation,
    /// under no reducer scope. Under `--microbatches 2` only the last
    /// backward, which reduces, runs those 15 scalings (kernels and their
    /// CPU work); the first backward ran them too, at their traced time.
    #[test]
    fn a_bucket_scaling_without_the_reducer_s_scope_runs_in_the_reducing_backward_only() {
        let Some(corpus) = lumos_testkit::corpus() else {
            return;
        };
        let path = corpus.path("multi-rank/dlrm-8xv100/rank0.json.gz");
        let trace = lumos_trace::read_path(&path).unwrap();
        let base = Baseline::new(vec![crate::testutil::input(&trace, "rank0")]).unwrap();
        let g = &base.inputs[0].graph;
        let p = base.identity().with_microbatches(2).unwrap();
        let st = &p.stages[0];
        // Per backward: GPU kernels, CPU tasks, their predicted and traced
        // time.
        let mut seen = [[0i64; 4]; 2];
        let mut kernels = [0usize; 2];
        for i in 0..st.origin.len() {
            let (_, t) = st.origin[i];
            if st.tag[i].addition || !g.scope_chain(t).any(|sc| is_bare_bucket_scaling(g, sc)) {
                continue;
            }
            let Some((PassKind::Backward, k)) = st.tag[i].pass else {
                panic!("a bucket scaling outside a backward: {:?}", st.tag[i]);
            };
            let k = k as usize;
            let gpu = g.tasks[t.idx()].kind.is_gpu();
            kernels[k] += usize::from(gpu);
            let at = if gpu { 0 } else { 2 };
            seen[k][at] += st.durations[i];
            seen[k][at + 1] += g.tasks[t.idx()].duration_ns;
        }
        assert_eq!(kernels, [15, 15]);
        // The first backward runs none of them; the last as traced.
        assert_eq!((seen[0][0], seen[0][2]), (0, 0), "{seen:?}");
        assert!(seen[1][1] > 0 && seen[1][3] > 0, "{seen:?}");
        assert_eq!((seen[1][0], seen[1][2]), (seen[1][1], seen[1][3]));
        // Only those 15: the `aten::mul`s of the loss's and the
        // embeddings' gradient functions are not taken for one.
        let muls = (g.scopes.iter()).filter(|s| g.names[s.name.0 as usize] == "aten::mul");
        assert!(muls.count() > 15);
        let bare = (0..g.scopes.len() as u32).filter(|&s| is_bare_bucket_scaling(g, ScopeId(s)));
        assert_eq!(bare.count(), 15);
        // Without collectives there is no DDP: the same scopes are some
        // other hook's work (review).
        let mut alone = g.clone();
        alone.collectives.clear();
        let bare =
            (0..alone.scopes.len() as u32).filter(|&s| is_bare_bucket_scaling(&alone, ScopeId(s)));
        assert_eq!(bare.count(), 0);
    }

    #[test]
    fn reductions_are_told_by_their_exact_names() {
        for op in [
            "aten::sum",
            "aten::mean",
            "aten::norm",
            "aten::linalg_vector_norm",
        ] {
            assert!(is_reduction_op(op), "{op}");
        }
        for op in [
            "aten::layer_norm",
            "aten::native_layer_norm",
            "aten::native_layer_norm_backward",
            "aten::cumsum",
            "aten::_weight_norm_interface",
            "aten::embedding_renorm_",
            "aten::sum_backward",
        ] {
            assert!(!is_reduction_op(op), "{op}");
        }
        assert!(is_normalization_op("aten::native_layer_norm"));
        // ROCm's and torch.compile's batch norms, which the old substring
        // test caught.
        assert!(is_normalization_op("aten::miopen_batch_norm_backward"));
        assert!(is_normalization_op("aten::_native_batch_norm_legit"));
        assert!(!is_normalization_op("aten::_weight_norm_interface"));
        // GPT tiny at TP 2, 2048 tokens: as wide as the FFN shard, so that
        // the first MLP matrix's shape `[2048, 1024]` is ambiguous. Taken
        // for that weight unless its operator reduces it, or normalizes it.
        let mut base = baseline("gpt-tiny", None, [2, 1, 2, 2]);
        let (task, scope) = memory_kernel_scope(&base);
        let scope = scope.0 as usize;
        for (op, want) in [
            ("aten::sum", None),
            ("aten::native_layer_norm_backward", None),
            // A weight normalization's work on its weight.
            ("aten::_weight_norm_interface", Some((2.0, true))),
        ] {
            let g = &mut base.inputs[0].graph;
            g.names.push(op.into());
            g.scopes[scope].name = lumos_graph::NameId(g.names.len() as u32 - 1);
            g.scopes[scope].input_dims = InputDims::parse("[[2048, 1024]]");
            let t = target(&base, |c| c.hidden = 2048);
            let mut rt = Retimer::new(&base, &t);
            rt.batch_and_seq = (1, 2048);
            assert!(rt.reduces(0, task) == want.is_none(), "{op}");
            assert_eq!(rt.weight_ratio(0, task), want, "{op}");
        }
    }

    #[test]
    fn the_final_layer_norm_s_weight_comes_once_whatever_the_layers() {
        // GPT tiny, 4 layers -> 8. The final layer norm's weight gradient
        // is added into its `.grad` in the head's backward, outside the
        // layers, inside its gradient function: one parameter's, as long
        // with 8 layers as with 4, though `[h]` is a layer's size too.
        let mut base = baseline("gpt-tiny", None, [1, 1, 1, 1]);
        let s = &base.structures[0];
        let g = &base.inputs[0].graph;
        let named = |sc: ScopeId| g.names[g.scopes[sc.0 as usize].name.0 as usize].as_str();
        let task = (0..g.tasks.len() as u32)
            .map(TaskId)
            .find(|&t| {
                let chain: Vec<&str> = g.scope_chain(t).map(named).take(2).collect();
                s.work[t.idx()] == WorkClass::Memory
                    && chain == ["aten::add_", "torch::autograd::AccumulateGrad"]
                    && matches!(s.role_of_task(t), Role::Pass { step, pass, part: Part::Pre }
                        if s.steps[step as usize].passes[pass as usize].kind == PassKind::Backward)
            })
            .expect("a gradient accumulation in the head's backward");
        let scope = g.scope_chain(task).next().unwrap().0 as usize;
        let long = 100 * memory_floors(&base)[0].max(1);
        let g = &mut base.inputs[0].graph;
        g.scopes[scope].input_dims = InputDims::parse("[[1024], [1024], []]");
        g.tasks[task.idx()].duration_ns = long;
        assert_eq!(
            Retimer::new(&base, &target(&base, |_| {})).weight_ratio(0, task),
            Some((1.0, true))
        );
        let p = base.identity().with_layers(8).unwrap();
        let st = &p.stages[0];
        let copies: Vec<i64> = (0..st.origin.len())
            .filter(|&i| st.origin[i] == (0, task))
            .map(|i| st.durations[i])
            .collect();
        assert!(!copies.is_empty());
        assert!(
            copies.iter().all(|&d| d == long),
            "{copies:?} against {long}"
        );
    }

    #[test]
    fn the_optimizer_follows_the_parameters() {
        let base = baseline("gpt-tiny", None, [1, 1, 2, 2]);
        let id = base.identity();
        let st = &id.stages[0];
        let pc = &base.params[0];
        let t = target(&base, |c| c.layers = 8);
        let ratio = Retimer::new(&base, &t).optimizer_ratio(st);
        let want = (8.0 * pc.per_layer + pc.other) / pc.total();
        assert!((ratio - want).abs() < 1e-12, "{ratio} vs {want}");
        let t = target(&base, |_| {});
        assert_eq!(Retimer::new(&base, &t).optimizer_ratio(st), 1.0);
    }

    #[test]
    fn unsized_collectives_are_noted_by_how_they_were_sized() {
        assert!(unsized_notes(0, 0, 5).is_empty());
        let n = unsized_notes(404, 0, 5);
        assert_eq!(n.len(), 1);
        assert!(n[0].starts_with("404 re-timed") && n[0].contains("over the 5 steps"));
        let n = unsized_notes(0, 3, 1);
        assert_eq!(n.len(), 1);
        assert!(n[0].starts_with("3 re-timed") && n[0].contains("upper bound"));
        assert_eq!(unsized_notes(2, 3, 4).len(), 2);
    }

    #[test]
    fn collectives_move_by_the_model_s_difference() {
        let base = baseline("gpt-tiny", None, [2, 1, 2, 2]);
        let s = &base.structures[0];
        let c = s
            .comms
            .iter()
            .find(|c| c.class == GroupClass::Data && c.kind.is_some() && c.bytes.is_some())
            .unwrap();
        let task = c.task;
        let traced = base.inputs[0].graph.tasks[task.idx()].duration_ns;
        let tag = Tag {
            step: Some(0),
            pass: None,
            chunk: 0,
            setup: true,
            addition: false,
            layers_fitted: false,
            shaped_addition: None,
            tp_allreduce: None,
        };
        let place = s.role_of_task(task);
        let at = |t: &Target| {
            let (d, source, inferred) =
                Retimer::new(&base, t).comm_ns(traced, None, (c, false), 0, (0, 0), tag, place);
            // The collective records its size: nothing inferred.
            assert!(!inferred);
            (d, source)
        };
        // Unchanged group and bytes: as traced.
        assert_eq!(
            at(&target(&base, |_| {})),
            (traced as f64, Source::Measured)
        );
        // One data-parallel rank: not issued.
        assert_eq!(at(&target(&base, |c| c.dp = 1)), (0.0, Source::Modelled));
        // More ranks: traced plus the model's difference.
        let t = target(&base, |c| c.dp = 8);
        let (old, new, ratio) = Regroup::new(&base, &t).comm_groups(c, 0, (0, 0), tag, place);
        assert_eq!(
            (old.len(), new.as_slice(), ratio),
            (2, &[0, 2, 4, 6, 8, 10, 12, 14][..], 1.0)
        );
        let net = base.network.model();
        let kind = c.kind.unwrap();
        let bytes = c.bytes.unwrap();
        let want = traced as f64 + net.collective_ns(kind, bytes, &new)
            - net.collective_ns(kind, bytes, &old);
        let (d, _) = at(&t);
        assert!((d - want).abs() < 1e-6, "{d} vs {want}");
        // Another network changes even the unchanged group's time.
        let mut t = target(&base, |_| {});
        let slow = NetworkModel {
            base_latency_us: 1000.0,
            ..net
        };
        t.network = Some((slow, "slow".into()));
        assert!(at(&t).0 > traced as f64);
    }
}
