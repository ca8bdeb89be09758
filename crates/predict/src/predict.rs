//! Predictions: a baseline (the traced ranks, what discovery found in them,
//! the models calibrated on them), a target configuration, the edited
//! graphs that run it, and their replay.
//!
//! Every edit (`with_*`) returns a new [`Prediction`]. Edits do not stack
//! on each other's graphs: each sets a field of the [`Target`] and the
//! prediction is rebuilt from the traced graphs, structure first (stages,
//! micro-batches, layers: see the `plan` and `assemble` modules) and
//! durations second ([`retime`]), so the order of edits does not matter and
//! an edit to the traced value changes nothing at all.
//!
//! Durations are recomputed from each task's traced duration and the change
//! from the baseline configuration to the target one:
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
//! | transfer between coupled stages | `T_target(new)` | modelled |
//!
//! where `T_base` is the network model calibrated on the trace and
//! `T_target` the same model, or the one given with `--network`. Kernel
//! speed-ups multiply last.
//!
//! Several traced stages of one pipeline are replayed together when
//! anything changes: their transfers and the gradient-norm reduction become
//! rendezvous with modelled transfer times (a receive's traced duration
//! includes waiting for the other stage, which the joint replay now
//! computes). With nothing changed, each stage is replayed on its own, which
//! is exactly `lumos replay` of that trace.

use lumos_graph::{
    Graph, Measured, ProcKind, Rendezvous, RendezvousKind, Step, TaskId, WaitTarget,
};
use lumos_models::{CollectiveKind, NetworkModel};
use lumos_sim::{
    breakdown, simulate, simulate_with_rendezvous, step_spans, whole_span, Breakdown, Schedule,
    SimOptions,
};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::assemble::{assemble, identity_plan, Tag, Template};
use crate::config::{Config, Coord, KernelScale, Layout};
use crate::context::TraceContext;
use crate::discover::{
    discover, discover_with_hint, GroupClass, P2p, Part, PassKind, Role, Structure, WorkClass,
};
use crate::error::PredictError;
use crate::models::{
    gpu_for_device, CommModel, ComputeModel, GemmCalibration, NetworkCalibration, Source,
};
use crate::plan::{plan_stage, Source as PlanSource, StageRole, StageTarget};

/// One traced rank: its graph, ground truth and metadata.
pub struct Input {
    /// A name for reports (the file).
    pub name: String,
    /// Its graph.
    pub graph: Graph,
    /// Its measured times (discovery only).
    pub measured: Measured,
    /// Its metadata.
    pub ctx: TraceContext,
}

/// Parameters held by one traced stage, estimated from its GEMM shapes and
/// gradient reduction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ParamCount {
    /// Per transformer layer (this rank's shard).
    pub per_layer: f64,
    /// Layers on the stage.
    pub layers: u32,
    /// Outside layers (embedding, output layer copy).
    pub other: f64,
    /// How the total was found: `gradient_bytes` (the data-parallel
    /// reduction's bytes / 4) or `layers_only`.
    pub method: &'static str,
}

impl ParamCount {
    /// Every parameter on the stage.
    pub fn total(&self) -> f64 {
        self.per_layer * self.layers as f64 + self.other
    }
}

/// The traced ranks and everything derived from them.
pub struct Baseline {
    /// The traced ranks, one per pipeline stage (or one rank).
    pub inputs: Vec<Input>,
    /// What discovery found in each.
    pub structures: Vec<Structure>,
    /// Each input's graph as structural edits copy it: the main thread's
    /// waits for backward bursts made explicit (see the `assemble` module).
    pub templates: Vec<Graph>,
    /// Each input's role in its pipeline.
    pub roles: Vec<StageRole>,
    /// Each input's stage index.
    pub stages: Vec<u32>,
    /// The traced configuration.
    pub config: Config,
    /// True when every stage of the pipeline was traced.
    pub complete: bool,
    /// The GEMM curve fitted on the inputs.
    pub gemm: GemmCalibration,
    /// The network model calibrated on the inputs.
    pub network: NetworkCalibration,
    /// The models durations are recomputed with: by default the calibrated
    /// GEMM curve and network; replace them with [`Baseline::with_models`].
    pub models: Models,
    /// Parameters per input.
    pub params: Vec<ParamCount>,
    /// Sequence parallelism in the trace.
    pub sequence_parallel: bool,
    /// Distributed optimizer in the trace.
    pub distributed_optimizer: bool,
    /// What was assumed in reading the inputs.
    pub notes: Vec<String>,
}

/// The duration models a prediction uses.
#[derive(Clone)]
pub struct Models {
    /// GEMM (and attention) time from FLOPs.
    pub compute: Arc<dyn ComputeModel + Send + Sync>,
    /// Collective time of the traced system.
    pub comm: Arc<dyn CommModel + Send + Sync>,
    /// True when `comm` is the network calibrated on the trace (durations
    /// on links it never saw are then tagged as modelled).
    pub calibrated: bool,
}

/// What to predict: a configuration, kernel speed-ups, a network.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The configuration.
    pub config: Config,
    /// Kernel speed-ups, applied last.
    pub scales: Vec<KernelScale>,
    /// The target network (calibrated model of the trace when `None`),
    /// with a description.
    pub network: Option<(NetworkModel, String)>,
}

/// One predicted stage graph.
#[derive(Debug, Clone)]
pub struct PredictedStage {
    /// Its index in the new pipeline.
    pub stage: u32,
    /// The graph.
    pub graph: Graph,
    /// Input index and task each task was copied from.
    pub origin: Vec<(u32, TaskId)>,
    /// Where each task's duration came from.
    pub source: Vec<Source>,
    /// The input whose steps and processors it keeps.
    pub primary: usize,
    pub(crate) tag: Vec<Tag>,
    /// Edges that could not be re-attached when it was built.
    pub dropped_edges: usize,
}

/// A target configuration's edited graphs.
#[derive(Clone)]
pub struct Prediction<'b> {
    /// The baseline.
    pub base: &'b Baseline,
    /// The target.
    pub target: Target,
    /// One graph per stage of the new pipeline (one per traced input when
    /// the pipeline is unchanged).
    pub stages: Vec<PredictedStage>,
    /// What was assumed in building it.
    pub notes: Vec<String>,
}

impl Baseline {
    /// Discovers structure in every input, calibrates the models and reads
    /// the configuration. Inputs are the ranks of one pipeline (one per
    /// stage), or a single rank.
    pub fn new(mut inputs: Vec<Input>) -> Result<Baseline, PredictError> {
        if inputs.is_empty() {
            return Err(PredictError::NoInputs);
        }
        let mut notes = Vec::new();
        let mut structures: Vec<Structure> = inputs
            .iter()
            .map(|i| discover(&i.graph, &i.measured, &i.ctx))
            .collect();
        // A stage with one layer per pass repeats no block of its own: the
        // blocks another stage showed are looked for instead.
        if let Some(hint) = structures.iter().find_map(|s| s.layer_hint()) {
            for (i, s) in structures.iter_mut().enumerate() {
                if s.report.structural_edits_blocked.is_some() {
                    let again = discover_with_hint(
                        &inputs[i].graph,
                        &inputs[i].measured,
                        &inputs[i].ctx,
                        Some(&hint),
                    );
                    if again.report.structural_edits_blocked.is_none() {
                        *s = again;
                    }
                }
            }
        }
        let d0 = structures[0].config.clone();
        let tp = d0.tp.unwrap_or(1);
        let dp = d0.dp.unwrap_or(1);
        let pp = d0.pp.unwrap_or(1);
        let mut roles = Vec::new();
        let mut stages = Vec::new();
        for (i, s) in structures.iter().enumerate() {
            let c = &s.config;
            if (c.tp.unwrap_or(1), c.dp.unwrap_or(1), c.pp.unwrap_or(1)) != (tp, dp, pp) {
                return Err(PredictError::Unsupported(format!(
                    "{}: parallel degrees differ from {}'s: are these ranks of one job?",
                    inputs[i].name, inputs[0].name
                )));
            }
            roles.push(
                StageRole::from_report(&s.report.stage_role)
                    .unwrap_or_else(|| StageRole::of(c.stage.unwrap_or(0), pp)),
            );
            stages.push(c.stage.unwrap_or(i as u32));
        }
        // One rank per stage: ranks that differ only by their tensor or
        // data index are taken to behave alike, so the first of each stage
        // (lowest rank) stands for it.
        let mut keep: Vec<usize> = (0..inputs.len()).collect();
        keep.sort_by_key(|&i| (stages[i], inputs[i].ctx.rank));
        keep.dedup_by_key(|i| stages[*i]);
        keep.sort_unstable();
        if keep.len() != inputs.len() {
            notes.push(format!(
                "{} of {} inputs left out: one rank per pipeline stage stands for its stage ({})",
                inputs.len() - keep.len(),
                inputs.len(),
                keep.iter()
                    .map(|&i| format!("rank {} for stage {}", inputs[i].ctx.rank, stages[i]))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            let mut taken: Vec<Option<Input>> = inputs.into_iter().map(Some).collect();
            let mut st: Vec<Option<Structure>> = structures.into_iter().map(Some).collect();
            inputs = keep
                .iter()
                .map(|&i| taken[i].take().expect("kept once"))
                .collect();
            structures = keep
                .iter()
                .map(|&i| st[i].take().expect("kept once"))
                .collect();
            roles = keep.iter().map(|&i| roles[i]).collect();
            stages = keep.iter().map(|&i| stages[i]).collect();
        }
        let seen = stages.clone();
        let complete = seen.len() as u32 == pp;
        let microbatches = d0.microbatches.unwrap_or(1);
        let layers = if complete {
            structures
                .iter()
                .map(|s| s.config.layers.unwrap_or(0))
                .sum()
        } else {
            if pp > 1 {
                notes.push(format!(
                    "only {} of {pp} pipeline stages traced: every stage assumed to hold {} layers",
                    stages.len(),
                    d0.layers.unwrap_or(0)
                ));
            }
            d0.layers.unwrap_or(0) * pp
        };
        let config = Config {
            tp,
            dp,
            pp,
            microbatches,
            layers,
            hidden: d0.hidden.unwrap_or(0),
            ffn: d0.ffn.unwrap_or(0),
        };
        let (gpu, known) = gpu_for_device(inputs[0].ctx.device_name.as_deref());
        if !known {
            notes.push(format!(
                "GPU {:?} not among the presets: H100 values used where no calibration applies \
                 (GEMM ratios do not depend on the peak)",
                inputs[0].ctx.device_name.as_deref().unwrap_or("unknown")
            ));
        }
        let gemm = {
            // One fit over every input's GEMMs.
            let mut best = GemmCalibration::fit(&inputs[0].graph, &structures[0], &gpu);
            for (i, s) in inputs.iter().zip(&structures).skip(1) {
                let c = GemmCalibration::fit(&i.graph, s, &gpu);
                if c.samples > best.samples {
                    best = c;
                }
            }
            best
        };
        if !gemm.fitted {
            notes.push(
                "GEMM curve could not be fitted (too few GEMMs with shapes): preset curve used"
                    .into(),
            );
        }
        let mut start = gpu.network;
        start.gpus_per_node = inputs[0].ctx.gpus_per_node.max(1);
        notes.push(format!(
            "{} GPUs per node (the devices the trace lists); groups within a node use the \
             intra-node link, others the inter-node one",
            start.gpus_per_node
        ));
        let pairs: Vec<(&Graph, &Structure)> =
            inputs.iter().map(|i| &i.graph).zip(&structures).collect();
        let network = NetworkCalibration::fit(&pairs, start, &format!("preset {}", gpu.name));
        let params = structures.iter().map(|s| param_count(s, &config)).collect();
        let templates: Vec<Graph> = inputs
            .iter()
            .zip(&structures)
            .map(|(i, st)| {
                let mut g = i.graph.clone();
                crate::assemble::repair_joins(&mut g, &i.measured, st);
                g
            })
            .collect();
        let models = Models {
            compute: Arc::new(gemm.model()),
            comm: Arc::new(network.model()),
            calibrated: true,
        };
        let sequence_parallel = d0.sequence_parallel.unwrap_or(false);
        let distributed_optimizer = d0.distributed_optimizer.unwrap_or(false);
        Ok(Baseline {
            inputs,
            structures,
            templates,
            roles,
            stages,
            config,
            complete,
            gemm,
            network,
            models,
            params,
            sequence_parallel,
            distributed_optimizer,
            notes,
        })
    }

    /// The baseline with other duration models: `compute` for GEMMs and
    /// attention, `comm` for collectives on the traced system (a target
    /// network given with [`Prediction::with_network`] still replaces it
    /// for the predicted side).
    pub fn with_models(
        mut self,
        compute: Arc<dyn ComputeModel + Send + Sync>,
        comm: Arc<dyn CommModel + Send + Sync>,
    ) -> Baseline {
        self.models = Models {
            compute,
            comm,
            calibrated: false,
        };
        self
    }

    /// The prediction for the traced configuration: the traced graphs,
    /// unchanged.
    pub fn identity(&self) -> Prediction<'_> {
        let target = Target {
            config: self.config,
            scales: Vec::new(),
            network: None,
        };
        realize(self, target).expect("the identity needs no structural edit")
    }

    /// The prediction for `target`.
    pub fn predict(&self, target: Target) -> Result<Prediction<'_>, PredictError> {
        realize(self, target)
    }
}

/// Parameters of a stage: per layer from the first forward layer's GEMM
/// weights (plus 4 h for layer norms), in total from the data-parallel
/// gradient reduction of one step (fp32 gradients) when there is one.
fn param_count(s: &Structure, c: &Config) -> ParamCount {
    let layers = s.config.layers.unwrap_or(0);
    let layer = s
        .steps
        .iter()
        .flat_map(|st| st.passes.iter())
        .find(|p| p.kind == PassKind::Forward)
        .and_then(|p| p.layers.first());
    let per_layer = layer
        .map(|us| {
            us.iter()
                .flat_map(|&u| s.units.units[u as usize].gpu().iter())
                .filter_map(|&t| match s.work[t.idx()] {
                    WorkClass::Gemm(sh) => Some((sh.k * sh.n) as f64),
                    _ => None,
                })
                .sum::<f64>()
                + 4.0 * c.hidden as f64
        })
        .unwrap_or(0.0);
    let grad_bytes: u64 = s
        .comms
        .iter()
        .filter(|x| x.class == GroupClass::Data)
        .filter(|x| {
            matches!(
                s.role_of_task(x.task),
                Role::Pass { step: 0, .. }
                    | Role::Epilogue { step: 0 }
                    | Role::Prologue { step: 0 }
            )
        })
        .filter(|x| x.kind != Some(CollectiveKind::AllGather))
        .filter_map(|x| x.bytes)
        .sum();
    if grad_bytes > 0 {
        let total = grad_bytes as f64 / 4.0;
        ParamCount {
            per_layer,
            layers,
            other: (total - per_layer * layers as f64).max(0.0),
            method: "gradient_bytes",
        }
    } else {
        ParamCount {
            per_layer,
            layers,
            other: 0.0,
            method: "layers_only",
        }
    }
}

/// Ratios from the baseline configuration to the target one.
#[derive(Debug, Clone, Copy)]
struct Ratios {
    hidden: f64,
    ffn: f64,
    /// Traced tp over target tp: how much a tensor-parallel shard grows.
    tp_shard: f64,
    /// Traced dp over target dp.
    dp_shard: f64,
}

impl Ratios {
    fn of(base: &Config, t: &Config) -> Ratios {
        let r = |a: u64, b: u64| if a == 0 { 1.0 } else { b as f64 / a as f64 };
        Ratios {
            hidden: r(base.hidden, t.hidden),
            ffn: r(base.ffn, t.ffn),
            tp_shard: base.tp as f64 / t.tp.max(1) as f64,
            dp_shard: base.dp as f64 / t.dp.max(1) as f64,
        }
    }
}

fn structural_change(base: &Baseline, t: &Target) -> bool {
    let (b, c) = (&base.config, &t.config);
    b.pp != c.pp || b.microbatches != c.microbatches || b.layers != c.layers
}

/// Builds the stage graphs of `target` and times them.
fn realize(base: &Baseline, target: Target) -> Result<Prediction<'_>, PredictError> {
    realize_with(base, target, false)
}

/// [`realize`]; `rebuild` goes through planning and assembly even when the
/// structure is unchanged.
fn realize_with(
    base: &Baseline,
    target: Target,
    rebuild: bool,
) -> Result<Prediction<'_>, PredictError> {
    let c = target.config;
    if c.tp == 0 || c.dp == 0 || c.pp == 0 || c.microbatches == 0 {
        return Err(PredictError::InvalidTarget(
            "tp, dp, pp and micro-batches must be at least 1".into(),
        ));
    }
    if structural_change(base, &target) && c.layers < c.pp {
        return Err(PredictError::InvalidTarget(format!(
            "{} layers cannot fill {} pipeline stages",
            c.layers, c.pp
        )));
    }
    let mut notes = base.notes.clone();
    let templates: Vec<Template> = base
        .templates
        .iter()
        .zip(&base.structures)
        .map(|(g, s)| Template {
            graph: g,
            structure: s,
        })
        .collect();
    let mut stages = Vec::new();
    if !rebuild && !structural_change(base, &target) {
        for (i, inp) in base.inputs.iter().enumerate() {
            let s = &base.structures[i];
            let tag = identity_plan(i as u32, s);
            // The traced graph as it is, with each task's unit tag.
            let mut task_tag = vec![
                Tag {
                    step: None,
                    pass: None,
                    setup: false
                };
                inp.graph.tasks.len()
            ];
            for (uref, t) in &tag {
                for &task in &s.units.units[uref.unit as usize].tasks {
                    task_tag[task.idx()] = *t;
                }
            }
            stages.push(PredictedStage {
                stage: base.stages[i],
                graph: inp.graph.clone(),
                origin: (0..inp.graph.tasks.len() as u32)
                    .map(|t| (i as u32, TaskId(t)))
                    .collect(),
                source: vec![Source::Measured; inp.graph.tasks.len()],
                primary: i,
                tag: task_tag,
                dropped_edges: 0,
            });
        }
    } else {
        for (i, s) in base.structures.iter().enumerate() {
            if let Some(why) = &s.report.structural_edits_blocked {
                return Err(PredictError::Unsupported(format!(
                    "{}: structural edits impossible: {why}",
                    base.inputs[i].name
                )));
            }
        }
        let sources: Vec<PlanSource> = base
            .structures
            .iter()
            .zip(&base.roles)
            .zip(&base.stages)
            .map(|((s, &role), &stage)| PlanSource {
                structure: s,
                role,
                stage,
            })
            .collect();
        let new_stages: Vec<u32> = if c.pp == base.config.pp {
            base.stages.clone()
        } else {
            if !base.complete {
                return Err(PredictError::Unsupported(
                    "changing the pipeline degree needs the traces of the first and last stages"
                        .into(),
                ));
            }
            (0..c.pp).collect()
        };
        if c.pp != base.config.pp {
            notes.push(format!(
                "pipeline rebuilt: {} stages of {:?} layers, 1F1B order per stage",
                c.pp,
                (0..c.pp).map(|s| c.stage_layers(s)).collect::<Vec<_>>()
            ));
        }
        for &stage in &new_stages {
            let keep = (c.pp == base.config.pp && c.microbatches == base.config.microbatches)
                .then(|| base.stages.iter().position(|&s| s == stage))
                .flatten();
            let t = StageTarget {
                stage,
                stages: c.pp,
                microbatches: c.microbatches,
                layers: c.stage_layers(stage),
            };
            let plan = plan_stage(&sources, t, keep)?;
            notes.extend(plan.notes.iter().cloned());
            let a = assemble(&templates, plan.primary, &plan.units);
            stages.push(PredictedStage {
                stage,
                source: vec![Source::Measured; a.graph.tasks.len()],
                graph: a.graph,
                origin: a.origin,
                primary: plan.primary,
                tag: a.tag,
                dropped_edges: a.dropped_edges,
            });
        }
        if c.layers != base.config.layers {
            notes.push(format!(
                "layers cloned from (or removed around) the middle layer of every pass, {} -> {} in all",
                base.config.layers, c.layers
            ));
        }
    }
    notes.extend(edit_notes(base, &target));
    let mut p = Prediction {
        base,
        target,
        stages,
        notes,
    };
    retime(&mut p);
    Ok(p)
}

/// What each edit assumes, in words.
fn edit_notes(base: &Baseline, t: &Target) -> Vec<String> {
    let (b, c) = (&base.config, &t.config);
    let mut out = Vec::new();
    let net = base.network.model();
    let spans = |class: GroupClass, cfg: &Config| {
        let l = Layout::of(cfg);
        let r: Vec<usize> = l
            .group(
                class,
                Coord {
                    tp: 0,
                    dp: 0,
                    pp: 0,
                },
            )
            .iter()
            .map(|&x| x as usize)
            .collect();
        if net.spans_nodes(&r) {
            "across nodes"
        } else {
            "inside a node"
        }
    };
    if c.dp != b.dp {
        out.push(format!(
            "data parallel {} -> {}: weak scaling (per-rank batch unchanged); only data-parallel              collectives re-timed, over ranks in Megatron order (tensor index fastest), {} of {} GPUs              ({}){}",
            b.dp,
            c.dp,
            spans(GroupClass::Data, c),
            net.gpus_per_node,
            if base.network.calibrated_for(
                &Layout::of(c).group(GroupClass::Data, Coord { tp: 0, dp: 0, pp: 0 })
            ) {
                "calibrated link"
            } else {
                "link not seen in the trace: preset values"
            },
            if base.distributed_optimizer {
                "; optimizer work per rank x traced dp / new dp (distributed optimizer)"
            } else {
                ""
            }
        ));
    }
    if c.tp != b.tp {
        out.push(format!(
            "tensor parallel {} -> {}: every GEMM and attention kernel sharded (FLOPs x {}/{}),              activation kernels in layers x {}/{}{}; tensor-parallel collectives keep their bytes              over the new group ({}); parameters per rank x {}/{}; a group of one issues no collectives              (kernels kept at zero length, their CPU launch cost stays)",
            b.tp,
            c.tp,
            b.tp,
            c.tp,
            b.tp,
            c.tp,
            if base.sequence_parallel {
                " (sequence parallel)"
            } else {
                " (GELU only: no sequence parallelism)"
            },
            spans(GroupClass::Tensor, c),
            b.tp,
            c.tp
        ));
    }
    if c.hidden != b.hidden || c.ffn != b.ffn {
        out.push(format!(
            "hidden {} -> {}, ffn {} -> {}: GEMM dimensions equal to h, 3h/tp, h/tp scale with the              hidden size and those equal to ffn, ffn/tp with the FFN size (heads unchanged, so head              size grows); attention x h ratio; element-wise kernels in layers x their tensor's ratio;              tensor-parallel, pipeline and gradient bytes scale with activations and parameters;              kernels outside layers other than GEMMs (embedding, loss) kept",
            b.hidden, c.hidden, b.ffn, c.ffn
        ));
        if c.ffn != b.ffn
            && base.config.ffn > 0
            && base.config.ffn / base.config.tp.max(1) as u64 == base.config.hidden
        {
            out.push("ffn/tp equals the hidden size in the trace: GEMM dimensions of that size are taken as hidden".into());
        }
    }
    if c.microbatches != b.microbatches {
        out.push(format!(
            "micro-batches {} -> {}: forward and backward passes copied (the last backward, which              carries the gradient reduction, stays last), 1F1B order rebuilt",
            b.microbatches, c.microbatches
        ));
    }
    if !t.scales.is_empty() {
        out.push(format!(
            "kernel speed-ups applied after every model: {}",
            t.scales
                .iter()
                .map(|k| format!("{:?} x{}", k.select, k.factor))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some((_, what)) = &t.network {
        out.push(format!(
            "collectives re-timed with the {what} network: traced + T_target(new) - T_calibrated(traced)"
        ));
    }
    if c.layers != b.layers || c.hidden != b.hidden || c.tp != b.tp || c.pp != b.pp {
        out.push(
            "optimizer and gradient-zeroing kernels scale with the stage's parameters (per layer from              the layer's GEMM weights, the rest from the traced gradient bytes)"
                .into(),
        );
    }
    if base.inputs.len() > 1 && (c != b || !t.scales.is_empty() || t.network.is_some()) {
        out.push(
            "stages replayed together: each send/receive pair a one-way rendezvous (eager send) and              the gradient-norm all-reduce a rendezvous, with modelled transfer times"
                .into(),
        );
    }
    out.into_iter()
        .map(|n| n.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// The layout of `c` and where the rank of `input` sits in it.
fn coord_of(base: &Baseline, input: usize) -> Coord {
    Layout::of(&base.config).coord(base.inputs[input].ctx.rank as i64)
}

/// Recomputes every task's duration from its traced one (see the module
/// docs for the rules). The identity keeps every traced duration as it is.
fn retime(p: &mut Prediction) {
    if p.is_identity() {
        return;
    }
    let base = p.base;
    let target = &p.target;
    let r = Ratios::of(&base.config, &target.config);
    let gemm = &*base.models.compute;
    let base_net = &*base.models.comm;
    let target_net: &dyn CommModel = match &target.network {
        Some((n, _)) => n,
        None => base_net,
    };
    let old_layout = Layout::of(&base.config);
    let new_layout = Layout::of(&target.config);
    let (h, f, t) = (base.config.hidden, base.config.ffn, base.config.tp as u64);
    let hidden_like = |v: u64| h > 0 && (v == h || v * t == h || v * t == 3 * h || v == 3 * h);
    let ffn_like = |v: u64| f > 0 && (v == f || v * t == f);
    // Per-layer weights after the edit, from one layer's GEMMs.
    let layer_ratio: Vec<f64> = base
        .structures
        .iter()
        .zip(&base.params)
        .map(|(s, pc)| {
            let layer = s
                .steps
                .iter()
                .flat_map(|st| st.passes.iter())
                .find(|p| p.kind == PassKind::Forward)
                .and_then(|p| p.layers.first());
            let new: f64 = layer
                .map(|us| {
                    us.iter()
                        .flat_map(|&u| s.units.units[u as usize].gpu().iter())
                        .filter_map(|&t| match s.work[t.idx()] {
                            WorkClass::Gemm(sh) => Some(
                                (sh.k * sh.n) as f64
                                    * dim_ratio(sh.k, &hidden_like, &ffn_like, &r)
                                    * dim_ratio(sh.n, &hidden_like, &ffn_like, &r)
                                    * r.tp_shard,
                            ),
                            _ => None,
                        })
                        .sum::<f64>()
                        + 4.0 * base.config.hidden as f64 * r.hidden
                })
                .unwrap_or(0.0);
            if pc.per_layer > 0.0 {
                new / pc.per_layer
            } else {
                1.0
            }
        })
        .collect();
    // Memory-bound kernels at the duration floor are left alone: their
    // true size is unknown.
    let floors: Vec<i64> = base
        .inputs
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
        .collect();
    for st in &mut p.stages {
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
        // Layers on the new stage: the traced count while the structure is
        // unchanged (discovery may miscount a stage's layers without that
        // mattering anywhere else), else the even split of the target.
        let layers_new = if structural_change(base, target) {
            target.config.stage_layers(st.stage)
        } else {
            pc.layers
        };
        let new_total = layers_new as f64 * pc.per_layer * layer_ratio[prim] + other_new;
        let params_ratio = if pc.total() > 0.0 {
            new_total / pc.total()
        } else {
            1.0
        };
        let optimizer_ratio = params_ratio
            * if base.distributed_optimizer {
                r.dp_shard
            } else {
                1.0
            };
        for (i, task) in st.graph.tasks.iter_mut().enumerate() {
            let (src, tt) = st.origin[i];
            let inp = &base.inputs[src as usize];
            let s = &base.structures[src as usize];
            let traced = inp.graph.tasks[tt.idx()].duration_ns;
            let name = &inp.graph.names[inp.graph.tasks[tt.idx()].name.0 as usize];
            let work = s.work[tt.idx()];
            let place = s.role_of_task(tt);
            let in_layer = matches!(
                place,
                Role::Pass {
                    part: Part::Layer(_),
                    ..
                }
            );
            let (mut dur, mut source) = match work {
                WorkClass::Cpu | WorkClass::Copy => (traced as f64, Source::Measured),
                WorkClass::Gemm(sh) => {
                    let ratio = dim_ratio(sh.k, &hidden_like, &ffn_like, &r)
                        * dim_ratio(sh.n, &hidden_like, &ffn_like, &r)
                        * r.tp_shard;
                    scaled(
                        traced,
                        gemm.gemm_ns(sh.flops() * ratio) / gemm.gemm_ns(sh.flops()),
                    )
                }
                WorkClass::Attention(dims) => {
                    let ratio = r.hidden * r.tp_shard;
                    match dims {
                        Some([b, sq, heads, hd]) => {
                            let fl = 2.0 * (b * sq * sq * heads * hd) as f64;
                            scaled(traced, gemm.gemm_ns(fl * ratio) / gemm.gemm_ns(fl))
                        }
                        None => scaled(traced, ratio),
                    }
                }
                WorkClass::Memory => {
                    let ratio = match place {
                        Role::Pass {
                            part: Part::Layer(_),
                            ..
                        } => {
                            let lower = name.to_ascii_lowercase();
                            if ["gelu", "silu", "swiglu", "relu"]
                                .iter()
                                .any(|a| lower.contains(a))
                            {
                                r.ffn * r.tp_shard
                            } else if base.sequence_parallel {
                                // The sequence-parallel region: tokens / tp.
                                r.hidden * r.tp_shard
                            } else {
                                r.hidden
                            }
                        }
                        Role::Prologue { .. } | Role::Epilogue { .. } => optimizer_ratio,
                        _ => 1.0,
                    };
                    let floor = floors[src as usize];
                    if ratio == 1.0 || (traced as f64) <= 1.1 * floor as f64 {
                        (traced as f64, Source::Measured)
                    } else {
                        let (d, s) = scaled(traced, ratio);
                        (d.max(floor as f64), s)
                    }
                }
                WorkClass::Comm(ci) => {
                    let c = &s.comms[ci as usize];
                    let coord_old = coord_of(base, src as usize);
                    let coord_new = Coord {
                        tp: coord_old.tp.min(target.config.tp - 1),
                        dp: coord_old.dp.min(target.config.dp - 1),
                        pp: st.stage,
                    };
                    let tag = st.tag[i];
                    let peer = |layout: &Layout, co: Coord, stages: u32| -> Vec<i64> {
                        // Forward receives and backward sends face the
                        // previous stage, the others the next.
                        let prev = matches!(
                            (tag.pass.map(|p| p.0), c.p2p),
                            (Some(PassKind::Forward), Some(P2p::Recv))
                                | (Some(PassKind::Backward), Some(P2p::Send))
                        );
                        let other = if prev {
                            co.pp.checked_sub(1)
                        } else {
                            Some(co.pp + 1).filter(|&x| x < stages)
                        };
                        let mut v = vec![layout.rank(co)];
                        if let Some(o) = other {
                            v.push(layout.rank(Coord { pp: o, ..co }));
                        }
                        v
                    };
                    let (old_ranks, new_ranks, bytes_ratio) = match c.class {
                        GroupClass::Data => (
                            nonempty(&c.ranks, || old_layout.group(GroupClass::Data, coord_old)),
                            new_layout.group(GroupClass::Data, coord_new),
                            if in_layer {
                                layer_ratio[src as usize]
                            } else {
                                r.hidden * r.tp_shard
                            },
                        ),
                        GroupClass::Tensor => (
                            nonempty(&c.ranks, || old_layout.group(GroupClass::Tensor, coord_old)),
                            new_layout.group(GroupClass::Tensor, coord_new),
                            if c.bytes.is_some_and(|b| h > 0 && b % h == 0) {
                                r.hidden
                            } else {
                                1.0
                            },
                        ),
                        GroupClass::Pipeline => (
                            peer(&old_layout, coord_old, base.config.pp),
                            peer(&new_layout, coord_new, target.config.pp),
                            r.hidden
                                * if base.sequence_parallel {
                                    r.tp_shard
                                } else {
                                    1.0
                                },
                        ),
                        GroupClass::ModelParallel => (
                            nonempty(&c.ranks, || {
                                old_layout.group(GroupClass::ModelParallel, coord_old)
                            }),
                            new_layout.group(GroupClass::ModelParallel, coord_new),
                            1.0,
                        ),
                        GroupClass::Other => (c.ranks.clone(), c.ranks.clone(), 1.0),
                    };
                    // A transfer between stages or the reduction over all
                    // stages waited for the other stages in the trace; in a
                    // single-stage pipeline nothing is left to wait for.
                    let waited_for_stages =
                        matches!(c.class, GroupClass::Pipeline | GroupClass::ModelParallel)
                            && base.config.pp > 1
                            && target.config.pp == 1;
                    match c.kind {
                        Some(kind) if waited_for_stages => {
                            let bytes = c.bytes.unwrap_or(0);
                            let new_bytes = (bytes as f64 * bytes_ratio).round() as u64;
                            let t = if new_ranks.len() < 2 {
                                0.0
                            } else {
                                target_net.collective_ns(kind, new_bytes, &new_ranks)
                            };
                            (t, Source::Modelled)
                        }
                        Some(kind) if old_ranks.len() >= 2 || new_ranks.len() >= 2 => {
                            let bytes = c
                                .bytes
                                .unwrap_or_else(|| invert(base_net, kind, traced, &old_ranks));
                            let new_bytes = (bytes as f64 * bytes_ratio).round() as u64;
                            let same = new_bytes == bytes
                                && new_ranks == old_ranks
                                && target.network.is_none();
                            if same {
                                (traced as f64, Source::Measured)
                            } else if new_ranks.len() < 2 {
                                // A group of one: the collective is not
                                // issued (kept as an empty kernel).
                                (0.0, Source::Modelled)
                            } else {
                                let old_t = base_net.collective_ns(kind, bytes, &old_ranks);
                                let new_t = target_net.collective_ns(kind, new_bytes, &new_ranks);
                                let d = (traced as f64 + new_t - old_t).max(0.0);
                                let src_tag = if !base.models.calibrated
                                    || base.network.calibrated_for(&new_ranks)
                                {
                                    Source::Scaled
                                } else {
                                    Source::Modelled
                                };
                                (d, src_tag)
                            }
                        }
                        _ => (traced as f64, Source::Measured),
                    }
                }
            };
            if task.kind.is_gpu() {
                for k in &target.scales {
                    if k.select.matches(&work, name) && k.factor != 1.0 {
                        dur *= k.factor;
                        if source == Source::Measured {
                            source = Source::Scaled;
                        }
                    }
                }
            }
            task.duration_ns = dur.round() as i64;
            st.source[i] = source;
        }
    }
}

fn nonempty(v: &[i64], or: impl FnOnce() -> Vec<i64>) -> Vec<i64> {
    if v.is_empty() {
        or()
    } else {
        v.to_vec()
    }
}

fn scaled(traced: i64, ratio: f64) -> (f64, Source) {
    if ratio == 1.0 {
        (traced as f64, Source::Measured)
    } else {
        (traced as f64 * ratio, Source::Scaled)
    }
}

/// How a GEMM dimension changes: hidden-like dimensions with the hidden
/// size, FFN-like with the FFN size, anything else (tokens, vocabulary) not
/// at all. Tensor-parallel sharding is applied once per GEMM by the caller.
fn dim_ratio(
    v: u64,
    hidden_like: &impl Fn(u64) -> bool,
    ffn_like: &impl Fn(u64) -> bool,
    r: &Ratios,
) -> f64 {
    if hidden_like(v) {
        r.hidden
    } else if ffn_like(v) {
        r.ffn
    } else {
        1.0
    }
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

/// The joint graph of several stages and the rendezvous that couple them.
pub struct Job {
    /// Every stage's tasks.
    pub graph: Graph,
    /// Transfers and reductions that couple stages.
    pub rendezvous: Vec<Rendezvous>,
    /// Each stage's tasks in `graph`.
    pub parts: Vec<std::ops::Range<u32>>,
    /// Each stage's steps in `graph`.
    pub step_parts: Vec<std::ops::Range<u32>>,
    /// Where each task's duration came from.
    pub source: Vec<Source>,
    /// Input and task each task came from.
    pub origin: Vec<(u32, TaskId)>,
    /// True when stages are coupled.
    pub coupled: bool,
    /// Stage of each part.
    pub stage_of_part: Vec<u32>,
}

impl Prediction<'_> {
    /// True when the target is the traced configuration with no speed-ups
    /// and no other network.
    pub fn is_identity(&self) -> bool {
        self.target.config == self.base.config
            && self.target.scales.iter().all(|k| k.factor == 1.0)
            && self.target.network.is_none()
    }

    /// One graph with every stage. With several stages and any change,
    /// their transfers and gradient-norm reductions are coupled as
    /// rendezvous with modelled transfer times; otherwise they are
    /// independent.
    pub fn job(&self) -> Job {
        self.job_coupled(self.stages.len() > 1 && !self.is_identity())
    }

    /// [`Prediction::job`] with the coupling decided by the caller (for
    /// measuring what coupling alone does to the traced configuration).
    pub fn job_coupled(&self, couple: bool) -> Job {
        let couple = couple && self.stages.len() > 1;
        let mut g = Graph::default();
        let mut parts = Vec::new();
        let mut step_parts = Vec::new();
        let mut source = Vec::new();
        let mut origin = Vec::new();
        let mut tags: Vec<Tag> = Vec::new();
        let mut names: FxHashMap<String, u32> = FxHashMap::default();
        let origin_min = self
            .base
            .inputs
            .iter()
            .map(|i| i.ctx.clock_origin_ns)
            .min()
            .unwrap_or(0);
        for (k, st) in self.stages.iter().enumerate() {
            let sg = &st.graph;
            let t0 = g.tasks.len() as u32;
            let p0 = g.processors.len() as u32;
            let s0 = g.steps.len() as u32;
            let c0 = g.collectives.len() as u32;
            let sc0 = g.scopes.len() as u32;
            let name_map: Vec<u32> = sg
                .names
                .iter()
                .map(|n| {
                    let next = g.names.len() as u32;
                    *names.entry(n.clone()).or_insert_with(|| {
                        g.names.push(n.clone());
                        next
                    })
                })
                .collect();
            // Each stage is its own process and device in the joint graph.
            let shift_kind = |kind: &ProcKind| match *kind {
                ProcKind::Thread { pid, tid } => ProcKind::Thread {
                    pid: pid + k as i64 * 1_000_000_000,
                    tid: tid + k as i64 * 1_000_000_000,
                },
                ProcKind::Stream { device, stream } => ProcKind::Stream {
                    device: device + k as i64 * 1000,
                    stream,
                },
            };
            let shift = if couple {
                self.base.inputs[st.primary].ctx.clock_origin_ns - origin_min
            } else {
                0
            };
            let mut has_in = vec![false; sg.tasks.len()];
            for e in &sg.edges {
                has_in[e.to.idx()] = true;
            }
            for (i, t) in sg.tasks.iter().enumerate() {
                let mut t = t.clone();
                t.name = lumos_graph::NameId(name_map[t.name.0 as usize]);
                t.proc = lumos_graph::ProcId(t.proc.0 + p0);
                t.collective = t.collective.map(|c| c + c0);
                if !has_in[i] || t.release_ns > 0 {
                    t.release_ns += shift;
                }
                g.tasks.push(t);
            }
            for p in &sg.processors {
                g.processors.push(lumos_graph::Processor {
                    kind: shift_kind(&p.kind),
                    tasks: p.tasks.iter().map(|t| TaskId(t.0 + t0)).collect(),
                });
            }
            g.edges.extend(sg.edges.iter().map(|e| lumos_graph::Edge {
                from: TaskId(e.from.0 + t0),
                to: TaskId(e.to.0 + t0),
                ..*e
            }));
            g.runtime_deps
                .extend(sg.runtime_deps.iter().map(|d| lumos_graph::RuntimeDep {
                    task: TaskId(d.task.0 + t0),
                    target: match d.target {
                        WaitTarget::StreamTail(s) => {
                            WaitTarget::StreamTail(lumos_graph::ProcId(s.0 + p0))
                        }
                        WaitTarget::DeviceTail(dev) => {
                            WaitTarget::DeviceTail(dev + k as i64 * 1000)
                        }
                        WaitTarget::Task(x) => WaitTarget::Task(TaskId(x.0 + t0)),
                    },
                    ..*d
                }));
            g.collectives.extend(sg.collectives.iter().cloned());
            g.scopes
                .extend(sg.scopes.iter().map(|s| lumos_graph::Scope {
                    name: lumos_graph::NameId(name_map[s.name.0 as usize]),
                    parent: s.parent.map(|p| lumos_graph::ScopeId(p.0 + sc0)),
                    ..s.clone()
                }));
            if !sg.scopes.is_empty() {
                g.task_scopes.extend((0..sg.tasks.len()).map(|i| {
                    sg.task_scopes
                        .get(i)
                        .copied()
                        .flatten()
                        .map(|s| lumos_graph::ScopeId(s.0 + sc0))
                }));
            } else {
                g.task_scopes
                    .extend(std::iter::repeat_n(None, sg.tasks.len()));
            }
            g.steps.extend(sg.steps.iter().map(|s| Step {
                name: s.name.clone(),
                first_task: TaskId(s.first_task.0 + t0),
                last_task: TaskId(s.last_task.0 + t0),
                tasks: s.tasks.iter().map(|t| TaskId(t.0 + t0)).collect(),
                ..s.clone()
            }));
            source.extend(st.source.iter().copied());
            origin.extend(st.origin.iter().copied());
            tags.extend(st.tag.iter().copied());
            parts.push(t0..g.tasks.len() as u32);
            step_parts.push(s0..g.steps.len() as u32);
        }
        if g.scopes.is_empty() {
            g.task_scopes.clear();
        }
        let mut rendezvous = Vec::new();
        if couple {
            self.couple(&mut g, &parts, &origin, &tags, &mut source, &mut rendezvous);
        }
        Job {
            graph: g,
            rendezvous,
            parts,
            step_parts,
            source,
            origin,
            coupled: couple,
            stage_of_part: self.stages.iter().map(|s| s.stage).collect(),
        }
    }

    /// Pairs each send with its receive on the neighbouring stage (same
    /// step, pass kind and micro-batch) and joins the stages' gradient-norm
    /// reductions, with modelled transfer times.
    fn couple(
        &self,
        g: &mut Graph,
        parts: &[std::ops::Range<u32>],
        origin: &[(u32, TaskId)],
        tags: &[Tag],
        source: &mut [Source],
        rendezvous: &mut Vec<Rendezvous>,
    ) {
        let base = self.base;
        let net: &dyn CommModel = match &self.target.network {
            Some((n, _)) => n,
            None => &*base.models.comm,
        };
        let layout = Layout::of(&self.target.config);
        let r = Ratios::of(&base.config, &self.target.config);
        // (stage, step, kind, microbatch, send?) -> task
        let mut p2p: FxHashMap<(u32, u32, PassKind, u32, bool), TaskId> = FxHashMap::default();
        let mut mp: FxHashMap<u32, Vec<(u32, TaskId)>> = FxHashMap::default();
        for (k, part) in parts.iter().enumerate() {
            let stage = self.stages[k].stage;
            for t in part.clone() {
                let (src, tt) = origin[t as usize];
                let s = &base.structures[src as usize];
                let Some(c) = s.comm(tt) else { continue };
                let tag = tags[t as usize];
                match (c.class, c.p2p, tag.step, tag.pass) {
                    (GroupClass::Pipeline, Some(dir), Some(step), Some((kind, mb))) => {
                        p2p.insert((stage, step, kind, mb, dir == P2p::Send), TaskId(t));
                    }
                    (GroupClass::ModelParallel, _, Some(step), None) if tag.setup => {
                        mp.entry(step).or_default().push((stage, TaskId(t)));
                    }
                    _ => {}
                }
            }
        }
        let coord = |stage: u32| Coord {
            tp: 0,
            dp: 0,
            pp: stage,
        };
        let bytes_of = |t: TaskId| -> u64 {
            let (src, tt) = origin[t.idx()];
            let s = &base.structures[src as usize];
            let b = s.comm(tt).and_then(|c| c.bytes).unwrap_or(0) as f64;
            let f = r.hidden
                * if base.sequence_parallel {
                    r.tp_shard
                } else {
                    1.0
                };
            (b * f).round() as u64
        };
        let mut keys: Vec<_> = p2p.keys().copied().filter(|k| k.4).collect();
        keys.sort_by_key(|k| (k.0, k.1, k.2 as u8, k.3));
        for (stage, step, kind, mb, _) in keys {
            let peer = match kind {
                PassKind::Forward => stage + 1,
                PassKind::Backward => match stage.checked_sub(1) {
                    Some(p) => p,
                    None => continue,
                },
            };
            let (Some(&send), Some(&recv)) = (
                p2p.get(&(stage, step, kind, mb, true)),
                p2p.get(&(peer, step, kind, mb, false)),
            ) else {
                continue;
            };
            let ranks = [layout.rank(coord(stage)), layout.rank(coord(peer))];
            let d = net
                .collective_ns(CollectiveKind::SendRecv, bytes_of(send), &ranks)
                .round() as i64;
            for t in [send, recv] {
                g.tasks[t.idx()].duration_ns = d;
                source[t.idx()] = Source::Modelled;
            }
            // The send is eager; the receive ends when the send has started
            // and the transfer is done.
            rendezvous.push(Rendezvous {
                tasks: vec![send, recv],
                kind: RendezvousKind::PointToPoint,
            });
        }
        let stages = self.stages.len();
        let mut steps: Vec<_> = mp.into_iter().collect();
        steps.sort_by_key(|x| x.0);
        for (_, members) in steps {
            if members.len() != stages {
                continue;
            }
            let ranks = layout.group(GroupClass::ModelParallel, coord(0));
            let d = net
                .collective_ns(CollectiveKind::AllReduce, 4, &ranks)
                .round() as i64;
            let tasks: Vec<TaskId> = members.iter().map(|m| m.1).collect();
            for &t in &tasks {
                g.tasks[t.idx()].duration_ns = d;
                source[t.idx()] = Source::Modelled;
            }
            rendezvous.push(Rendezvous::collective(tasks));
        }
    }

    /// Replays the prediction.
    pub fn simulate(&self) -> Result<Outcome, PredictError> {
        self.simulate_job(self.job())
    }

    /// Replays `job`, built from this prediction.
    pub fn simulate_job(&self, job: Job) -> Result<Outcome, PredictError> {
        let schedule = if job.coupled {
            simulate_with_rendezvous(&job.graph, &job.rendezvous, &SimOptions::default())
        } else {
            // Independent stages: each replayed alone (on its own window),
            // exactly as `lumos replay` does.
            let mut start = Vec::with_capacity(job.graph.tasks.len());
            let mut end = Vec::with_capacity(job.graph.tasks.len());
            let mut bound = Vec::new();
            let mut waits = Vec::new();
            for (st, part) in self.stages.iter().zip(&job.parts) {
                let s = simulate(&st.graph, &SimOptions::default()).map_err(|error| {
                    PredictError::Replay {
                        joint: false,
                        error,
                    }
                })?;
                start.extend(s.start_ns);
                end.extend(s.end_ns);
                bound.extend(s.bound_by);
                waits.extend(s.waits.into_iter().map(|mut w| {
                    w.task = TaskId(w.task.0 + part.start);
                    w
                }));
            }
            Ok(Schedule {
                start_ns: start,
                end_ns: end,
                bound_by: bound,
                waits,
            })
        }
        .map_err(|error| PredictError::Replay { joint: true, error })?;
        Ok(Outcome::of(self, job, schedule))
    }
}

/// One stage's tasks in a joint schedule, numbered from 0.
struct StageTimes<'a> {
    schedule: &'a Schedule,
    offset: u32,
    len: usize,
}

impl lumos_sim::TaskTimes for StageTimes<'_> {
    fn task_count(&self) -> usize {
        self.len
    }
    fn start_of(&self, t: TaskId) -> i64 {
        self.schedule.start_of(TaskId(t.0 + self.offset))
    }
    fn end_of(&self, t: TaskId) -> i64 {
        self.schedule.end_of(TaskId(t.0 + self.offset))
    }
}

/// One stage's replayed result.
#[derive(Debug, Clone, Serialize)]
pub struct StageOutcome {
    /// Its index in the new pipeline.
    pub stage: u32,
    /// Step times, ns.
    pub step_ns: Vec<i64>,
    /// Breakdown over the window of its steps.
    #[serde(skip)]
    pub breakdown: Breakdown,
}

/// A replayed prediction.
pub struct Outcome {
    /// Per stage.
    pub stages: Vec<StageOutcome>,
    /// Iteration time per step: the slowest stage's.
    pub step_ns: Vec<i64>,
    /// The joint graph.
    pub job: Job,
    /// Its schedule.
    pub schedule: Schedule,
}

impl Outcome {
    fn of(p: &Prediction, job: Job, schedule: Schedule) -> Outcome {
        let mut stages = Vec::new();
        for (k, part) in job.parts.iter().enumerate() {
            // This stage's tasks and steps alone, numbered from 0, with its
            // slice of the schedule (a blocking call counts from when it was
            // issued, as in `lumos replay`).
            let off = part.start;
            let sp = job.step_parts[k].clone();
            let local = |t: TaskId| TaskId(t.0 - off);
            let sub = Graph {
                tasks: job.graph.tasks[part.start as usize..part.end as usize].to_vec(),
                steps: job.graph.steps[sp.start as usize..sp.end as usize]
                    .iter()
                    .map(|st| Step {
                        first_task: local(st.first_task),
                        last_task: local(st.last_task),
                        tasks: st.tasks.iter().map(|&t| local(t)).collect(),
                        ..st.clone()
                    })
                    .collect(),
                ..Graph::default()
            };
            let times = StageTimes {
                schedule: &schedule,
                offset: off,
                len: sub.tasks.len(),
            };
            let spans = step_spans(&sub, &times, None);
            let step_ns: Vec<i64> = spans.iter().map(|s| s.end_ns - s.start_ns).collect();
            let window = if sub.steps.is_empty() {
                whole_span(&times)
            } else {
                lumos_graph::Span {
                    start_ns: spans[0].start_ns,
                    end_ns: spans.last().map_or(0, |s| s.end_ns),
                }
            };
            stages.push(StageOutcome {
                stage: p.stages[k].stage,
                step_ns,
                breakdown: breakdown(&sub, &times, window),
            });
        }
        let nsteps = stages.iter().map(|s| s.step_ns.len()).max().unwrap_or(0);
        let step_ns = (0..nsteps)
            .map(|i| {
                stages
                    .iter()
                    .filter_map(|s| s.step_ns.get(i))
                    .copied()
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        Outcome {
            stages,
            step_ns,
            job,
            schedule,
        }
    }

    /// Mean step time over steps, ns.
    pub fn mean_step_ns(&self) -> f64 {
        if self.step_ns.is_empty() {
            0.0
        } else {
            self.step_ns.iter().sum::<i64>() as f64 / self.step_ns.len() as f64
        }
    }
}

impl<'b> Prediction<'b> {
    fn with(&self, f: impl FnOnce(&mut Target)) -> Result<Prediction<'b>, PredictError> {
        let mut t = self.target.clone();
        f(&mut t);
        realize(self.base, t)
    }

    /// The same target with every stage rebuilt from its units (planning
    /// and assembly, as structural edits do) even where the structure is
    /// unchanged: on the traced configuration it replays as the trace does,
    /// which checks the machinery.
    pub fn rebuilt(&self) -> Result<Prediction<'b>, PredictError> {
        realize_with(self.base, self.target.clone(), true)
    }

    /// Data-parallel degree (weak scaling: the per-rank batch stays, only
    /// the data-parallel collectives change).
    pub fn with_dp(&self, dp: u32) -> Result<Prediction<'b>, PredictError> {
        self.with(|t| t.config.dp = dp)
    }

    /// Tensor-parallel degree: GEMMs and attention sharded over `tp`,
    /// tensor-parallel collectives over the new group.
    pub fn with_tp(&self, tp: u32) -> Result<Prediction<'b>, PredictError> {
        self.with(|t| t.config.tp = tp)
    }

    /// Pipeline-parallel degree: layers regrouped into `pp` stages, each
    /// with its 1F1B order.
    pub fn with_pp(&self, pp: u32) -> Result<Prediction<'b>, PredictError> {
        self.with(|t| t.config.pp = pp)
    }

    /// Micro-batches per step.
    pub fn with_microbatches(&self, m: u32) -> Result<Prediction<'b>, PredictError> {
        self.with(|t| t.config.microbatches = m)
    }

    /// Transformer layers in the whole model.
    pub fn with_layers(&self, layers: u32) -> Result<Prediction<'b>, PredictError> {
        self.with(|t| t.config.layers = layers)
    }

    /// Hidden size; the FFN size follows in proportion unless set too.
    pub fn with_hidden(&self, hidden: u64) -> Result<Prediction<'b>, PredictError> {
        let base = self.base.config;
        if base.hidden == 0 {
            return Err(PredictError::Unsupported(
                "the hidden size was not found in the trace (no GEMM shapes)".into(),
            ));
        }
        self.with(|t| {
            if t.config.ffn == base.ffn && base.hidden > 0 {
                t.config.ffn =
                    (base.ffn as f64 * hidden as f64 / base.hidden as f64).round() as u64;
            }
            t.config.hidden = hidden;
        })
    }

    /// FFN size.
    pub fn with_ffn(&self, ffn: u64) -> Result<Prediction<'b>, PredictError> {
        if self.base.config.ffn == 0 {
            return Err(PredictError::Unsupported(
                "the FFN size was not found in the trace (no GEMM shapes)".into(),
            ));
        }
        self.with(|t| t.config.ffn = ffn)
    }

    /// A kernel speed-up.
    pub fn with_kernel_scale(&self, k: KernelScale) -> Result<Prediction<'b>, PredictError> {
        self.with(|t| t.scales.push(k))
    }

    /// Another network.
    pub fn with_network(
        &self,
        net: NetworkModel,
        what: String,
    ) -> Result<Prediction<'b>, PredictError> {
        self.with(|t| t.network = Some((net, what)))
    }

    /// GPU time per duration source, ns, summed over stages.
    pub fn gpu_time_by_source(&self) -> Vec<(Source, i64)> {
        let mut m: std::collections::BTreeMap<Source, i64> = Default::default();
        for st in &self.stages {
            for (t, s) in st.graph.tasks.iter().zip(&st.source) {
                if t.kind.is_gpu() {
                    *m.entry(*s).or_default() += t.duration_ns;
                }
            }
        }
        m.into_iter().collect()
    }
}
