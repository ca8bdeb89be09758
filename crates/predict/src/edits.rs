//! Edits: the [`Target`] a prediction is for, the checks an edit must
//! pass, what each edit assumes (its notes), and the stage graphs that run
//! the target.
//!
//! Every edit (`with_*`) returns a new [`Prediction`]. Edits do not stack
//! on each other's graphs: each sets a field of the [`Target`] and the
//! prediction is rebuilt from the traced graphs by [`realize`], structure
//! first (stages, micro-batches, layers: see the `plan` and `assemble`
//! modules) and durations second (the `retime` module), so the order of
//! edits does not matter and an edit to the traced value changes nothing
//! at all.

use std::borrow::Cow;
use std::sync::Arc;

use lumos_graph::{Graph, TaskId};
use lumos_models::NetworkModel;

use crate::assemble::{assemble, identity_plan, Tag, Template};
use crate::baseline::Baseline;
use crate::checks::{check_target, traced_sends_overlap};
use crate::config::{Config, Coord, KernelScale, Layout};
use crate::discover::GroupClass;
use crate::discover::Structure;
use crate::error::PredictError;
use crate::models::{not_calibrated, LinkCalibration, Source};
use crate::plan::{plan_stage, sources as plan_sources, StageRole, StageTarget};
use crate::retime::retime;
use crate::retime::DEFAULT_COLLECTIVE_ISSUE_NS;
use crate::tp_sites::{tp_sites, SiteKind, TpSites};

/// One edit of a target, for [`Prediction::with_edits`].
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// Data-parallel degree (weak scaling).
    Dp(u32),
    /// Tensor-parallel degree.
    Tp(u32),
    /// Pipeline-parallel degree.
    Pp(u32),
    /// Micro-batches per step.
    Microbatches(u32),
    /// Model chunks per stage (virtual pipeline stages): the interleaved
    /// 1F1B schedule above 1, the plain one at 1.
    VirtualStages(u32),
    /// Transformer layers in the whole model.
    Layers(u32),
    /// Hidden size; the FFN size follows in proportion unless an
    /// [`Edit::Ffn`] (before or after it) sets it.
    Hidden(u64),
    /// FFN size.
    Ffn(u64),
    /// Attention heads of the whole model: without this edit the traced
    /// heads stay, so a hidden-size edit changes the head size.
    Heads(u64),
    /// Sequences per micro-batch (the micro-batch size): the tokens each
    /// micro-batch carries, at the same sequence length.
    MicroBatch(u64),
    /// A kernel speed-up.
    KernelScale(KernelScale),
    /// Another network, with a description.
    Network(NetworkModel, String),
}

impl Edit {
    /// Applies the edit to `t`, whose traced configuration is `traced`.
    fn apply(self, traced: &Config, t: &mut Target) {
        let c = &mut t.config;
        match self {
            Edit::Dp(x) => c.dp = x,
            Edit::Tp(x) => c.tp = x,
            Edit::Pp(x) => c.pp = x,
            Edit::Microbatches(x) => c.microbatches = x,
            Edit::VirtualStages(x) => c.virtual_stages = x,
            Edit::Layers(x) => c.layers = x,
            Edit::Hidden(h) => {
                if c.ffn == traced.ffn && traced.hidden > 0 {
                    c.ffn = (traced.ffn as f64 * h as f64 / traced.hidden as f64).round() as u64;
                }
                c.hidden = h;
            }
            Edit::Ffn(x) => c.ffn = x,
            Edit::Heads(x) => t.heads = Some(x),
            Edit::MicroBatch(x) => c.micro_batch = x,
            Edit::KernelScale(k) => t.scales.push(k),
            Edit::Network(net, what) => t.network = Some((net, what)),
        }
    }
}

/// The edits a front end asks for, by kind (`None` or empty where not
/// asked). [`EditSet::into_edits`] lists them in the one order the CLI and
/// the Python package both apply them in, so a target is judged as a whole
/// and the same way everywhere.
#[derive(Debug, Clone, Default)]
pub struct EditSet {
    /// Pipeline stages.
    pub pp: Option<u32>,
    /// Micro-batches per step.
    pub microbatches: Option<u32>,
    /// Virtual pipeline stages (interleaved 1F1B).
    pub virtual_stages: Option<u32>,
    /// Transformer layers.
    pub layers: Option<u32>,
    /// Hidden size.
    pub hidden: Option<u64>,
    /// Feed-forward size.
    pub ffn: Option<u64>,
    /// Attention heads.
    pub heads: Option<u64>,
    /// Sequences per micro-batch.
    pub micro_batch: Option<u64>,
    /// Tensor-parallel degree.
    pub tp: Option<u32>,
    /// Data-parallel degree.
    pub dp: Option<u32>,
    /// Kernel speed-ups.
    pub scale_kernels: Vec<KernelScale>,
    /// The target network, with a description.
    pub network: Option<(NetworkModel, String)>,
}

impl EditSet {
    /// The edits in application order: structure first (pipeline,
    /// micro-batches, interleaving, layers, sizes, micro-batch size, tensor and data
    /// parallelism), then kernel speed-ups, then the network.
    pub fn into_edits(self) -> Vec<Edit> {
        let mut edits = Vec::new();
        edits.extend(self.pp.map(Edit::Pp));
        edits.extend(self.microbatches.map(Edit::Microbatches));
        edits.extend(self.virtual_stages.map(Edit::VirtualStages));
        edits.extend(self.layers.map(Edit::Layers));
        edits.extend(self.hidden.map(Edit::Hidden));
        edits.extend(self.ffn.map(Edit::Ffn));
        edits.extend(self.heads.map(Edit::Heads));
        edits.extend(self.micro_batch.map(Edit::MicroBatch));
        edits.extend(self.tp.map(Edit::Tp));
        edits.extend(self.dp.map(Edit::Dp));
        edits.extend(self.scale_kernels.into_iter().map(Edit::KernelScale));
        if let Some((net, what)) = self.network {
            edits.push(Edit::Network(net, what));
        }
        edits
    }
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
    /// The attention heads of the whole model, where an edit sets them
    /// (the traced heads otherwise). Only the checks and notes read them:
    /// attention is timed by `b s^2 h`, whatever the heads.
    pub heads: Option<u64>,
}

/// One predicted stage graph.
#[derive(Debug, Clone)]
pub struct PredictedStage<'b> {
    /// Its index in the new pipeline.
    pub stage: u32,
    /// The graph: a traced input's own until an edit changes its structure
    /// (re-timing copies no graph: the identity prediction, the traced
    /// replay every prediction is compared with, and a prediction that
    /// changes only durations borrow it), else the stage's. Its tasks'
    /// `duration_ns` are those it was built with; the predicted ones are
    /// in [`PredictedStage::durations`].
    pub graph: Cow<'b, Graph>,
    /// Each task's predicted duration, ns, indexed like the graph's tasks:
    /// what the replay runs it for. Kept beside the graph so that re-timing
    /// a borrowed traced graph does not copy it (the copy was 22 to 24% of
    /// `lumos predict`'s peak on a 1 GB rank); shared with the replay, which
    /// takes them as they are ([`lumos_sim::SimOptions::durations`]).
    pub durations: Arc<[i64]>,
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
    pub stages: Vec<PredictedStage<'b>>,
    /// What was assumed in building it.
    pub notes: Vec<String>,
    /// Re-timed collectives whose message size the trace does not record,
    /// sized from the lower envelope of their slot over the steps.
    pub sizes_from_envelope: usize,
    /// Re-timed collectives whose message size the trace does not record
    /// and that have no slot (outside steps, or steps that disagree on
    /// their count), sized from their own duration, waiting included.
    pub sizes_from_own_time: usize,
}

/// Where predicted stage `stage`, built on traced input `primary`, sits in
/// the layout of `target`: the traced rank's tensor and data indices,
/// wrapped into the target's degrees, at the stage; `None` when the traced
/// layout cannot hold the traced rank. One function for the stage's rank
/// ([`Prediction::stage_rank`]) and the groups its collectives are
/// re-timed over and written with, so the two cannot disagree.
pub(crate) fn stage_coord(
    base: &Baseline,
    target: &Config,
    primary: usize,
    stage: u32,
) -> Option<Coord> {
    let from = Layout::of(&base.config);
    let traced = i64::from(base.inputs[primary].ctx.rank);
    if traced >= from.world_size() {
        return None;
    }
    let c = from.coord(traced);
    Some(Coord {
        tp: c.tp % target.tp.max(1),
        dp: c.dp % target.dp.max(1),
        pp: stage,
    })
}

/// Whether `t` changes the structure of the traced graphs (pipeline,
/// micro-batches or layers, or tensor parallelism added to a trace at TP
/// 1, whose all-reduces the copies add), so that stages are planned and
/// assembled.
pub(crate) fn structural_change(base: &Baseline, t: &Target) -> bool {
    let (b, c) = (&base.config, &t.config);
    b.pp != c.pp
        || b.microbatches != c.microbatches
        || b.layers != c.layers
        || b.virtual_stages != c.virtual_stages
        || tp_from_one(base, c)
}

/// Whether target `c` runs tensor parallelism where `base` ran none: its
/// tensor-parallel degree known to be 1 and no collective of its taken
/// for tensor parallelism. The layers' all-reduces are then added
/// (`tp_sites.rs`). A trace with such collectives whose degree is unknown
/// is not taken for one at TP 1 (its degree would be a guess).
pub(crate) fn tp_from_one(base: &Baseline, c: &Config) -> bool {
    base.config.tp == 1
        && c.tp > 1
        && (base.structures.iter())
            .all(|s| s.config.tp.is_some() && s.comms.iter().all(|x| x.class != GroupClass::Tensor))
}

/// Builds the stage graphs of `target` and times them.
pub(crate) fn realize(base: &Baseline, target: Target) -> Result<Prediction<'_>, PredictError> {
    realize_with(base, target, false)
}

/// The traced configuration's prediction: the traced graphs as they are,
/// with no target checks (the traces are what they are), re-timed like any
/// other target.
pub(crate) fn traced(base: &Baseline, target: Target) -> Prediction<'_> {
    let mut notes = base.notes.clone();
    notes.extend(edit_notes(base, &target));
    let mut p = Prediction {
        base,
        target,
        stages: traced_stages(base),
        notes,
        sizes_from_envelope: 0,
        sizes_from_own_time: 0,
    };
    retime(&mut p);
    p
}

/// [`realize`]; `rebuild` goes through planning and assembly even when the
/// structure is unchanged.
fn realize_with(
    base: &Baseline,
    target: Target,
    rebuild: bool,
) -> Result<Prediction<'_>, PredictError> {
    let unchecked = check_target(base, &target)?;
    let mut notes = base.notes.clone();
    let stages = if !rebuild && !structural_change(base, &target) {
        traced_stages(base)
    } else {
        rebuilt_stages(base, &target.config, &mut notes)?
    };
    notes.extend(edit_notes(base, &target));
    notes.extend(unchecked);
    let mut p = Prediction {
        base,
        target,
        stages,
        notes,
        sizes_from_envelope: 0,
        sizes_from_own_time: 0,
    };
    retime(&mut p);
    Ok(p)
}

/// The traced graphs as they are, each task tagged with its unit's step
/// and pass.
fn traced_stages(base: &Baseline) -> Vec<PredictedStage<'_>> {
    let mut stages = Vec::new();
    for (i, inp) in base.inputs.iter().enumerate() {
        let s = &base.structures[i];
        let mut task_tag = vec![
            Tag {
                step: None,
                pass: None,
                chunk: 0,
                setup: false,
                addition: false,
                layers_fitted: false,
                shaped_addition: None,
                tp_allreduce: None,
            };
            inp.graph.tasks.len()
        ];
        for (uref, t) in &identity_plan(i as u32, s) {
            for &task in &s.units.units[uref.unit as usize].tasks {
                task_tag[task.idx()] = *t;
            }
        }
        stages.push(PredictedStage {
            stage: base.stages[i],
            durations: durations_of(&inp.graph),
            graph: Cow::Borrowed(&inp.graph),
            origin: (0..inp.graph.tasks.len() as u32)
                .map(|t| (i as u32, TaskId(t)))
                .collect(),
            source: vec![Source::Measured; inp.graph.tasks.len()],
            primary: i,
            tag: task_tag,
            dropped_edges: 0,
        });
    }
    stages
}

/// The durations `g`'s tasks were built with.
fn durations_of(g: &Graph) -> Arc<[i64]> {
    g.tasks.iter().map(|t| t.duration_ns).collect()
}

/// What the trace told of a link a re-timed group crosses: calibrated,
/// used but not calibrated (and why), or never used.
fn link_state(l: Option<&LinkCalibration>) -> String {
    match l {
        Some(l) if l.calibrated => "calibrated link".into(),
        Some(l) if l.seen() => format!(
            "a link used but {}",
            not_calibrated(l.why_uncalibrated().as_deref())
        ),
        _ => format!("a link not seen, so {}", not_calibrated(None)),
    }
}

/// Refuses structural edits of a trace whose structure does not allow them,
/// saying why (the first input's reason).
pub(crate) fn structural_edits_possible(base: &Baseline, c: &Config) -> Result<(), PredictError> {
    for (i, s) in base.structures.iter().enumerate() {
        if let Some(why) = &s.report.structural_edits_blocked {
            if stage_kept_of_one_micro_batch(base, s, c) {
                continue;
            }
            // The one-stage verdict says itself what cannot change.
            let what = if one_micro_batch_only(base, s) {
                "the other what-ifs can"
            } else {
                "so the pipeline stages, micro-batches, layers and virtual stages cannot change; \
                 the other what-ifs can"
            };
            return Err(PredictError::Unsupported(format!(
                "{}: structural edits impossible: {why} ({what})",
                base.inputs[i].name
            )));
        }
    }
    Ok(())
}

/// Whether `s`, refused structural edits only for its one micro-batch,
/// takes those of target `c` all the same: `c` keeps the one pipeline
/// stage and its virtual stages. A layer edit that keeps the one
/// micro-batch copies no pass; a micro-batch edit copies the only pass,
/// whose own work discovery told from the step's prologue by its kind
/// (`discover/lone.rs`), and re-times the gradient reduction of copies
/// that are not the last backward to nothing (`retime.rs`).
fn stage_kept_of_one_micro_batch(base: &Baseline, s: &Structure, c: &Config) -> bool {
    let b = &base.config;
    one_micro_batch_only(base, s) && (c.pp, c.virtual_stages) == (b.pp, b.virtual_stages)
}

/// Whether `s` is refused structural edits only for its one micro-batch,
/// in a job of one pipeline stage: with more, a later stage's prologue
/// holds its first pipeline receive, which nothing couples to the stage
/// before (`--layers` of a two-stage synthesized job was +4.8%).
fn one_micro_batch_only(base: &Baseline, s: &Structure) -> bool {
    base.config.pp <= 1 && crate::discover::one_stage_of_one_micro_batch(s)
}

/// What the copies' gradient additions assumed (`assemble/additions.rs`):
/// `made` kernels modelled, `shaped` of them sized from their gradient's
/// shape, `left` gradients' additions with nothing to size them from.
/// Under FSDP (`fsdp`) the notes name what the additions assume there.
fn additions_notes((made, shaped, left): (usize, usize, usize), fsdp: bool) -> Vec<String> {
    let mut notes = Vec::new();
    let scaled = made - shaped.min(made);
    if made > 0 {
        let mut how = Vec::new();
        if scaled > 0 {
            how.push(format!(
                "{scaled} each {}x DDP's scaling of that gradient into its bucket above the \
                 shortest memory-bound kernel, its launch as long as that one's",
                crate::retime::ADDITION_OVER_SCALING
            ));
        }
        if shaped > 0 {
            how.push(format!(
                "{shaped} (no DDP scaling kernel) each the shortest memory-bound kernel plus \
                 {} times the gradient's bytes (its accumulation node's recorded shape and \
                 type) over the memory bandwidth the trace's memory-bound kernels achieved, \
                 launched as the kernel its thread launched before",
                crate::retime::ADDITION_TENSORS
            ));
        }
        notes.push(format!(
            "gradient accumulation modelled: the traced backward kept its gradients (the first \
             after `zero_grad(set_to_none=True)`), the backwards after the step's first add into \
             `.grad`; {made} `aten::add_` kernels added (one per gradient and backward): {}",
            how.join("; ")
        ));
    }
    if left > 0 {
        notes.push(format!(
            "gradient accumulation not modelled for {left} gradients (over all backwards after \
             the step's first): the traced backward kept its gradients, and neither a \
             per-gradient kernel (DDP's `mul_out`) nor the gradient's recorded shape and type \
             sizes the additions later backwards run; the step is predicted short by their time"
        ));
    }
    if fsdp && made + left > 0 {
        // DDP's reducer under `no_sync` is what the copies model; FSDP by
        // default reduce-scatters every backward's gradients and frees
        // the unsharded ones, so its later backwards add nothing into
        // `.grad` and a "predicted short" would be wrong there.
        notes.push(
            "FSDP: the backwards before the last are taken to run as under `no_sync` (unsharded \
             gradients added into `.grad` by their accumulation, one reduce-scatter in the last \
             backward); FSDP reducing every micro-batch (its default) would instead \
             reduce-scatter each backward's gradients and add the shards in its post-backward \
             hook, neither of which is modelled, so the additions above, or their absence, \
             stand for that work only under `no_sync`"
                .into(),
        );
    }
    notes
}

/// What a prediction of tensor parallelism from a trace at TP 1 measured,
/// scaled, modelled and assumed: `made` all-reduces added over the stages
/// at `sites` (per template); `issue_ns`, the CPU time the trace's own
/// collectives took to issue, which each added launch takes (`None`: the
/// trace issued none, and [`DEFAULT_COLLECTIVE_ISSUE_NS`] is taken).
fn tp_from_one_note(tp: u32, made: usize, sites: &[TpSites], issue_ns: Option<f64>) -> String {
    let all = || sites.iter().flat_map(|s| s.values());
    let untyped = all().any(|s| !s.typed);
    let has = |kind: SiteKind| all().any(|s| s.kind == kind);
    let outside = [
        (
            SiteKind::Embedding,
            "the vocabulary-parallel embedding's of its output (tokens x hidden) after the lookup in each forward",
            "the embedding's (no lookup into a table of hidden-wide rows, `aten::embedding` with recorded shapes, found before a forward's first layer)",
        ),
        (
            SiteKind::Loss,
            "the vocabulary-parallel cross entropy's three of per-token FP32 statistics after the output layer's GEMM in each forward",
            "the vocabulary-parallel loss's (no output-layer GEMM from the hidden size into a wider one found after a forward's last layer)",
        ),
        (
            SiteKind::OutputLayer,
            "the output layer's of its input gradient (tokens x hidden) in each backward, beside its weight gradient",
            "the output layer's input gradient's (no input-gradient GEMM into the hidden size found before a backward's first layer)",
        ),
    ];
    let added: Vec<&str> = (outside.iter())
        .filter(|(k, ..)| has(*k))
        .map(|(_, yes, _)| *yes)
        .collect();
    let missing: Vec<&str> = (outside.iter())
        .filter(|(k, ..)| !has(*k))
        .map(|(.., no)| *no)
        .collect();
    format!(
        "tensor parallelism {tp} from a trace at TP 1 (Megatron dense layers, no sequence \
         parallelism): every GEMM, attention kernel and GELU-class activation scaled to a 1/{tp} \
         shard, other element-wise work kept whole (per token on the full hidden size), the \
         projections' weights (and the data-parallel gradient bytes) split by {tp}; {made} \
         all-reduces added over the predicted steps, their kernels modelled from the network \
         model alone (no tensor-parallel collective was traced to measure): of the activations \
         (tokens x hidden{}) after the attention's output projection and the MLP's down \
         projection in each forward layer and after the QKV's and the MLP's up projection's \
         input gradients in each backward layer; a forward one on the GEMM's stream right \
         after it, blocking what follows, a backward one on a stream of its own beside the \
         weight-gradient GEMM that follows, the compute stream waiting for it after that GEMM \
         (Megatron's asynchronous all-reduce of the input gradient){}; each launched from the \
         GEMM's (or lookup's) thread right after its launch, {}{}",
        if untyped {
            ", 2-byte elements assumed where the GEMM records no type"
        } else {
            ""
        },
        match added.is_empty() {
            true => String::new(),
            false => format!("; outside the layers, {}", added.join("; ")),
        },
        match issue_ns {
            Some(ns) => format!(
                "taking the CPU time the trace's own collectives took to issue ({:.1} us, their \
                 operators' median)",
                ns / 1e3
            ),
            None => format!(
                "taking {:.0} us, the CPU time of issuing a collective measured on the corpus's \
                 traces (docs/PREDICTION.md), as the trace issued no collective of its own",
                DEFAULT_COLLECTIVE_ISSUE_NS / 1e3
            ),
        },
        match missing.is_empty() {
            true => String::new(),
            false => format!("; not added: {}", missing.join("; ")),
        }
    )
}

/// Whether a traced input ran PyTorch FSDP: its operators or annotations
/// name FSDP's hooks (`FullyShardedDataParallel._post_backward_hook`,
/// FSDP2's `FSDP::post_backward_reduce`).
fn runs_fsdp(base: &Baseline) -> bool {
    (base.inputs.iter()).any(|i| {
        (i.graph.names.iter())
            .any(|n| n.starts_with("FullyShardedDataParallel.") || n.starts_with("FSDP::"))
    })
}

/// Every stage of the pipeline of `c`, planned from the traced stages and
/// assembled from their templates.
fn rebuilt_stages<'b>(
    base: &'b Baseline,
    c: &Config,
    notes: &mut Vec<String>,
) -> Result<Vec<PredictedStage<'b>>, PredictError> {
    structural_edits_possible(base, c)?;
    let templates: Vec<Template> = base
        .templates()
        .iter()
        .zip(&base.structures)
        .map(|(g, s)| Template {
            graph: g,
            structure: s,
        })
        .collect();
    let traced: Vec<(&Structure, StageRole, u32)> = base
        .structures
        .iter()
        .zip(&base.roles)
        .zip(&base.stages)
        .map(|((s, &role), &stage)| (s, role, stage))
        .collect();
    let sources = plan_sources(&traced, base.config.pp, base.config.virtual_stages);
    let new_stages: Vec<u32> = if c.pp == base.config.pp {
        base.stages.clone()
    } else {
        if !base.complete {
            return Err(PredictError::Unsupported(
                "changing the pipeline degree needs the traces of the first and last stages".into(),
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
    if c.virtual_stages != base.config.virtual_stages {
        notes.push(interleave_note(base.config.virtual_stages, c));
    }
    // Traced at TP 1, every template's layers get the all-reduces tensor
    // parallelism runs (checked placeable by `check_target`).
    let sites: Vec<TpSites> = if tp_from_one(base, c) {
        (templates.iter())
            .map(|t| tp_sites(t.graph, t.structure, base.config.hidden))
            .collect::<Result<_, _>>()
            .map_err(PredictError::Unsupported)?
    } else {
        Vec::new()
    };
    let mut stages = Vec::new();
    let mut additions = (0usize, 0usize, 0usize);
    let mut tp_allreduces = 0usize;
    for &stage in &new_stages {
        // The traced stage itself, with its traced pass order, when the
        // pipeline and micro-batches are unchanged.
        let keep = (c.pp == base.config.pp
            && c.microbatches == base.config.microbatches
            && c.virtual_stages == base.config.virtual_stages)
            .then(|| base.stages.iter().position(|&s| s == stage))
            .flatten();
        let t = StageTarget {
            stage,
            stages: c.pp,
            microbatches: c.microbatches,
            layers: c.stage_layers(stage),
            chunks: c.virtual_stages.max(1),
        };
        let plan = plan_stage(&sources, t, keep)?;
        notes.extend(plan.notes.iter().cloned());
        let a = assemble(&templates, plan.primary, &plan.units, &sites);
        tp_allreduces += a.tp_allreduces;
        additions.0 += a.additions;
        additions.1 += a.shaped_additions;
        additions.2 += a.unsized_additions;
        stages.push(PredictedStage {
            stage,
            source: vec![Source::Measured; a.graph.tasks.len()],
            durations: durations_of(&a.graph),
            graph: Cow::Owned(a.graph),
            origin: a.origin,
            primary: plan.primary,
            tag: a.tag,
            dropped_edges: a.dropped_edges,
        });
    }
    notes.extend(additions_notes(additions, runs_fsdp(base)));
    if tp_from_one(base, c) {
        let issue = crate::retime::collective_issue_ns(base);
        notes.push(tp_from_one_note(c.tp, tp_allreduces, &sites, issue));
    }
    if base.config.microbatches == 1 && c.microbatches > 1 {
        notes.push(format!(
            "{} micro-batches copied from the only traced one: its forward's own work (data \
             loading, host-to-device copies, the embedding, the user annotation around the pass) \
             told from the step's prologue by its kind, with no second forward to compare with; \
             the traced backward's data-parallel gradient reduction kept in the last backward \
             only (in the {} before it its all-reduces and reduce-scatters, DDP's bucket work, \
             and the CPU work that issues them, with the gaps before it, take no time)",
            c.microbatches,
            c.microbatches - 1
        ));
    }
    if c.layers != base.config.layers {
        notes.push(format!(
            "layers cloned from (or removed around) the middle layer of every pass, {} -> {} in all",
            base.config.layers, c.layers
        ));
    }
    Ok(stages)
}

/// The groups whose collectives an edit of `t` re-times, each with its
/// name in words: the data-parallel group's under a new data-parallel,
/// tensor-parallel or pipeline degree or hidden or FFN size (its ranks in
/// the target layout, or its gradient bytes, change), the
/// tensor-parallel group's under a new tensor-parallel or pipeline degree
/// or hidden or FFN size, and both under a `--network`.
fn edited_groups(base: &Baseline, t: &Target) -> Vec<(GroupClass, &'static str)> {
    let (b, c) = (&base.config, &t.config);
    let common = b.tp != c.tp
        || b.pp != c.pp
        || b.hidden != c.hidden
        || b.ffn != c.ffn
        || t.network.is_some();
    let mut out = Vec::new();
    if common || b.dp != c.dp {
        out.push((GroupClass::Data, "data-parallel"));
    }
    if common || b.micro_batch != c.micro_batch {
        out.push((GroupClass::Tensor, "tensor-parallel"));
    }
    out
}

/// `n` collectives of each name in `names`, in words ("3 allreduce, 2
/// broadcast").
fn kinds_in_words(names: &[(String, usize)]) -> String {
    names
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Adds one to `name`'s count in `names`, in first-seen order.
fn tally(names: &mut Vec<(String, usize)>, name: &str) {
    match names.iter_mut().find(|(k, _)| k == name) {
        Some((_, n)) => *n += 1,
        None => names.push((name.to_string(), 1)),
    }
}

/// What re-timing the edited groups' collectives assumes beyond the
/// edit's own note: those launched before the capture began, each taken
/// for a launched one (`discover::comms::attribute_unlaunched`), those
/// of a kind the ring model does not know that are broadcasts, re-timed
/// as NCCL's ring broadcast (`retime::broadcast_ns`), and those of another
/// such kind, which keep their traced time unless the new group is one
/// rank.
fn edited_group_notes(base: &Baseline, t: &Target) -> Vec<String> {
    let mut out = Vec::new();
    for (class, name) in edited_groups(base, t) {
        let of_class = || {
            (base.structures.iter())
                .zip(&base.inputs)
                .flat_map(|(s, i)| s.comms.iter().map(move |c| (c, &i.graph)))
                .filter(move |(c, _)| c.class == class)
        };
        // The name of the collective a task runs (its own, or that of the
        // launched one it was taken for), "?" when unrecorded.
        let coll_name = |c: &crate::discover::CommInfo, g: &Graph| -> String {
            let named = c.taken_for.unwrap_or(c.task);
            g.task(named).collective.map_or_else(
                || "?".to_string(),
                |k| g.collectives[k as usize].name.clone(),
            )
        };
        let group_of_one = match class {
            GroupClass::Data => t.config.dp < 2,
            _ => t.config.tp < 2,
        };
        let (mut taken, mut taken_ns) = (Vec::new(), 0i64);
        for (c, g) in of_class().filter(|(c, _)| c.taken_for.is_some()) {
            tally(&mut taken, &coll_name(c, g));
            taken_ns += g.task(c.task).duration_ns;
        }
        if !taken.is_empty() {
            let n: usize = taken.iter().map(|(_, n)| n).sum();
            out.push(format!(
                "{n} {name} collectives ({}; {:.3} ms traced) were launched before the capture \
                 began (their launch is not in the trace): each is taken for the launched \
                 collective at its place in its stream's sequence a whole number of steps away \
                 (same kernel; the stream's collectives repeat step by step) and {}",
                kinds_in_words(&taken),
                taken_ns as f64 / 1e6,
                if group_of_one {
                    "like it, not issued by a group of one"
                } else if t.network.is_some() {
                    // A new network re-times every collective the link
                    // model knows, whatever its group and message.
                    "timed as it (re-timed with it over the target network's links)"
                } else {
                    "timed as it (re-timed with it where the edit changes its group or message)"
                }
            ));
        }
        let unknown_kind = |c: &&crate::discover::CommInfo| c.kind.is_none() && c.p2p.is_none();
        let (mut bcast, mut bcast_ns, mut bcast_taken) = (0usize, 0i64, 0usize);
        let (mut kept, mut kept_ns) = (Vec::new(), 0i64);
        for (c, g) in of_class().filter(|(c, _)| unknown_kind(c)) {
            if crate::retime::runs_broadcast(c, g) {
                bcast += 1;
                bcast_ns += g.task(c.task).duration_ns;
                bcast_taken += usize::from(c.taken_for.is_some());
            } else {
                tally(&mut kept, &coll_name(c, g));
                kept_ns += g.task(c.task).duration_ns;
            }
        }
        // Those launched before the capture are counted in the line above
        // too: say so, so that the counts are not added up.
        let among = (bcast_taken > 0)
            .then(|| format!("{bcast_taken} of them launched before the capture, above"));
        if bcast > 0 {
            out.push(if group_of_one {
                let among = among.map_or(String::new(), |a| format!(" ({a})"));
                format!(
                    "{bcast} {name} broadcasts{among}: not issued by a group of one (kept at zero \
                     length)"
                )
            } else {
                let among = among.map_or(String::new(), |a| format!("{a}; "));
                format!(
                    "{bcast} {name} broadcasts ({among}{:.3} ms traced) re-timed as NCCL's \
                     ring broadcast: \
                     traced + T(target group and network) - T(traced group), T the link's time \
                     for the message once per rank (bus factor 1) plus a hop latency per ring \
                     member after the root",
                    bcast_ns as f64 / 1e6
                )
            });
        }
        if !kept.is_empty() {
            let n: usize = kept.iter().map(|(_, n)| n).sum();
            out.push(if group_of_one {
                format!(
                    "{n} {name} collectives of a kind the network model does not know \
                     ({}): not issued by a group of one (kept at zero length)",
                    kinds_in_words(&kept)
                )
            } else {
                format!(
                    "{n} {name} collectives of a kind the network model does not know \
                     ({}; {:.3} ms traced): kept at their traced durations over the new group",
                    kinds_in_words(&kept),
                    kept_ns as f64 / 1e6
                )
            });
        }
    }
    out
}

/// The collectives outside the data- and tensor-parallel groups (whose
/// kept ones [`edited_group_notes`] names) that keep their traced
/// durations under another network, in words: those of a kind the
/// network model does not know (an all-to-all), and those of a group
/// classified `other` whose ranks the trace does not record, which give
/// the model no group to time. Before, they stayed as traced without a
/// word, which read as if the new network did not slow or speed them.
fn kept_under_network(base: &Baseline, what: &str) -> Option<String> {
    let (mut kept, mut kept_ns, mut no_group) = (Vec::new(), 0i64, 0usize);
    for (s, i) in base.structures.iter().zip(&base.inputs) {
        let g = &i.graph;
        let mut nccl = lumos_graph::NcclOperators::of(g);
        for c in &s.comms {
            if matches!(c.class, GroupClass::Data | GroupClass::Tensor) || c.p2p.is_some() {
                continue;
            }
            let unknown = c.kind.is_none() && !crate::retime::runs_broadcast(c, g);
            let groupless = !unknown && c.class == GroupClass::Other && c.ranks.len() < 2;
            if !(unknown || groupless) {
                continue;
            }
            no_group += usize::from(groupless);
            // An all-to-all by its operator's name, as `lumos inspect`
            // lists it, not by the `SendRecv` kernels NCCL runs it as.
            let named = c.taken_for.unwrap_or(c.task);
            let recorded = g
                .task(named)
                .collective
                .map(|k| &*g.collectives[k as usize].name);
            let name = (nccl.collective(named))
                .filter(|n| crate::discover::is_all_to_all(n))
                .or(recorded)
                .unwrap_or("?");
            tally(&mut kept, name);
            kept_ns += g.task(c.task).duration_ns;
        }
    }
    let n: usize = kept.iter().map(|(_, n)| n).sum();
    (n > 0).then(|| {
        let why = match (no_group, n - no_group) {
            (0, _) => "of a kind the network model does not know".to_string(),
            (_, 0) => "in a group whose ranks the trace does not record".to_string(),
            (g, k) => format!(
                "{k} of a kind the network model does not know, {g} in a group whose ranks the \
                 trace does not record"
            ),
        };
        format!(
            "{n} collectives outside the data- and tensor-parallel groups ({}; {:.3} ms traced), \
             {why}, keep their traced durations: the {what} network does not change them",
            kinds_in_words(&kept),
            kept_ns as f64 / 1e6
        )
    })
}

/// The collectives without a launch in the trace that share a stream with
/// a group the edit of `t` re-times but could not be tied to a launched
/// collective (their stream's collectives do not repeat step by step), in
/// words, one line per edited group: they keep their traced durations,
/// which may be the edited group's old time. A prediction with any is not
/// high (`Prediction::confidence`).
pub(crate) fn untied_unlaunched(base: &Baseline, t: &Target) -> Vec<String> {
    let mut out = Vec::new();
    for (class, name) in edited_groups(base, t) {
        let (mut n, mut ns) = (0usize, 0i64);
        for (s, inp) in base.structures.iter().zip(&base.inputs) {
            let g = &inp.graph;
            let mut streams: Vec<u32> = (s.comms.iter())
                .filter(|c| c.class == class)
                .map(|c| g.task(c.task).proc.0)
                .collect();
            streams.sort_unstable();
            streams.dedup();
            for c in s.comms.iter().filter(|c| {
                !c.launched
                    && c.taken_for.is_none()
                    && c.class != class
                    && streams.binary_search(&g.task(c.task).proc.0).is_ok()
            }) {
                n += 1;
                ns += g.task(c.task).duration_ns;
            }
        }
        if n > 0 {
            out.push(format!(
                "{n} communication kernels ({:.3} ms traced) were launched before the capture \
                 began on a stream the {name} collectives run on, and could not be tied to a \
                 collective (the stream's collectives do not repeat step by step): kept at their \
                 traced durations, which may be {name} time the edit should have changed",
                ns as f64 / 1e6
            ));
        }
    }
    out
}

/// What changing the virtual stages from `traced` to `c`'s assumes.
fn interleave_note(traced: u32, c: &Config) -> String {
    let v = c.virtual_stages.max(1);
    let schedule = if v > 1 {
        format!(
            "interleaved 1F1B with {v} model chunks of {} layers per stage (chunk k of stage s is \
             virtual stage k x {} + s; the last stage's activations go on to the first stage's \
             next chunk)",
            c.layers / (c.pp * v).max(1),
            c.pp
        )
    } else {
        "plain 1F1B".into()
    };
    format!(
        "virtual stages {traced} -> {v}: {schedule}; each chunk's passes copied from a traced \
         pass of the same role (first, middle or last virtual stage), with their sends and \
         receives"
    )
}

/// What each edit assumes, in words.
/// What a hidden-size edit does to the heads: kept, or set by an edit,
/// with the head size each gives.
fn heads_note(base: &Baseline, t: &Target) -> String {
    let traced = crate::checks::heads(base);
    let size = |h: u64| match h {
        0 => "-".to_string(),
        h => format!("{}", t.config.hidden / h),
    };
    match (traced, t.heads) {
        (Some(a), Some(b)) if a != b => format!("heads {a} -> {b}, head size {}", size(b)),
        (_, Some(b)) => format!("heads {b} unchanged, head size {}", size(b)),
        (Some(a), None) => format!("heads {a} unchanged, head size {}", size(a)),
        (None, None) => "heads unchanged, so the head size changes".into(),
    }
}

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
            "data parallel {} -> {}: weak scaling (per-rank batch unchanged); only data-parallel collectives re-timed, over ranks in Megatron order (tensor index fastest), {} of {} GPUs ({}){}",
            b.dp,
            c.dp,
            spans(GroupClass::Data, c),
            net.gpus_per_node,
            link_state(base.network.link_for(
                &Layout::of(c).group(GroupClass::Data, Coord { tp: 0, dp: 0, pp: 0 })
            )),
            if base.distributed_optimizer {
                "; optimizer work per rank x traced dp / new dp (distributed optimizer)"
            } else {
                ""
            }
        ));
    }
    if c.tp != b.tp {
        out.push(format!(
            "tensor parallel {} -> {}: every GEMM and attention kernel sharded (FLOPs x {}/{}), activation kernels in layers x {}/{}{}; {} ({}); parameters per rank x {}/{}{}",
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
            // From TP 1 there are none to keep: the added ones are the
            // line above's.
            if b.tp == 1 {
                "the added tensor-parallel all-reduces run over the new group"
            } else {
                "tensor-parallel collectives keep their bytes over the new group"
            },
            spans(GroupClass::Tensor, c),
            b.tp,
            c.tp,
            if c.tp == 1 {
                "; a group of one issues no collectives (kernels kept at zero length, their CPU launch cost stays)"
            } else {
                ""
            }
        ));
    }
    if c.hidden != b.hidden || c.ffn != b.ffn {
        out.push(format!(
            "hidden {} -> {}, ffn {} -> {}: GEMM dimensions equal to h, 3h/tp, h/tp scale with the hidden size and those equal to ffn, ffn/tp with the FFN size ({}); attention x h ratio; element-wise kernels in layers x their tensor's ratio; tensor-parallel, pipeline and gradient bytes scale with activations and parameters; kernels outside layers other than GEMMs (embedding, loss) kept",
            b.hidden,
            c.hidden,
            b.ffn,
            c.ffn,
            heads_note(base, t)
        ));
        if c.ffn != b.ffn
            && base.config.ffn > 0
            && base.config.ffn / base.config.tp.max(1) as u64 == base.config.hidden
        {
            out.push("ffn/tp equals the hidden size in the trace: GEMM dimensions of that size are taken as hidden".into());
        }
    }
    let traced_heads = crate::checks::heads(base);
    if c.hidden == b.hidden && c.ffn == b.ffn && t.heads.is_some() && t.heads != traced_heads {
        out.push(format!(
            "{} at hidden {}: attention's FLOPs (b s^2 h) do not depend on the heads, so its time \
             is kept; how the head size changes the kernel's efficiency is not modelled",
            heads_note(base, t),
            c.hidden
        ));
    }
    if c.micro_batch != b.micro_batch {
        out.push(format!(
            "micro-batch size {} -> {} (the traced size from the attention query's batch \
             dimension), same sequence length: GEMMs, attention and memory-bound kernels of the \
             forward and backward passes x the tokens' ratio, tensor-parallel collectives and \
             pipeline transfers carry the new tokens; memory-bound kernels whose operator records \
             shapes without a token dimension (weight casts, gradient accumulation), the \
             optimizer, data-parallel gradient reductions, copies and CPU work keep their traced \
             size",
            b.micro_batch, c.micro_batch
        ));
    }
    out.extend(edited_group_notes(base, t));
    out.extend(untied_unlaunched(base, t));
    if c.microbatches != b.microbatches {
        out.push(format!(
            "micro-batches {} -> {}: forward and backward passes copied (the last backward, which carries the gradient reduction, stays last), 1F1B order rebuilt",
            b.microbatches, c.microbatches
        ));
    }
    if b.virtual_stages > 1 && c.virtual_stages <= 1 && c.pp > 1 && traced_sends_overlap(base) {
        out.push(
            "plain 1F1B keeps the trace's overlapped pipeline transfers (a prediction keeps the \
             traced transfer mode); Megatron-LM overlaps them only in the interleaved schedule and \
             waits on each one in plain 1F1B, so for a Megatron-LM job this step time is a lower \
             bound"
                .into(),
        );
    }
    if !t.scales.is_empty() {
        out.push(format!(
            "kernel speed-ups applied after every model: {}",
            t.scales
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some((_, what)) = &t.network {
        out.push(format!(
            "collectives re-timed with the {what} network: traced + T_target(new) - T_calibrated(traced)"
        ));
        out.extend(kept_under_network(base, what));
    }
    if c.layers != b.layers || c.hidden != b.hidden || c.tp != b.tp || c.pp != b.pp {
        let rest = if base.params.iter().all(|p| p.method == "gradient_bytes") {
            "the rest from the traced gradient bytes"
        } else {
            "the rest from the traced gradient bytes, else from the GEMM weights and embedding \
             tables outside layers, an output layer apart from the embedding (a tied one counts \
             twice)"
        };
        out.push(format!(
            "optimizer and gradient-zeroing kernels scale with the stage's parameters (per layer \
             from the layer's GEMM weights, {rest})"
        ));
    }
    if base.inputs.len() > 1 && (c != b || !t.scales.is_empty() || t.network.is_some()) {
        out.push(
            "stages replayed together: each send/receive pair a one-way rendezvous (eager send) and the gradient-norm all-reduce a rendezvous, with modelled transfer times"
                .into(),
        );
    }
    out.into_iter()
        .map(|n| n.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

impl<'b> Prediction<'b> {
    /// True when the target is the traced configuration with no speed-ups
    /// and no other network.
    pub fn is_identity(&self) -> bool {
        self.target.config == self.base.config
            && self.target.scales.iter().all(|k| k.factor == 1.0)
            && self.target.network.is_none()
    }

    /// The prediction with `edits` applied to its target together: the
    /// target's checks (the `checks` module) judge the result, not each
    /// edit alone, and the stages are built once.
    pub fn with_edits(
        &self,
        edits: impl IntoIterator<Item = Edit>,
    ) -> Result<Prediction<'b>, PredictError> {
        let mut t = self.target.clone();
        for e in edits {
            e.apply(&self.base.config, &mut t);
        }
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
        self.with_edits([Edit::Dp(dp)])
    }

    /// Tensor-parallel degree: GEMMs and attention sharded over `tp`,
    /// tensor-parallel collectives over the new group.
    pub fn with_tp(&self, tp: u32) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::Tp(tp)])
    }

    /// Pipeline-parallel degree: layers regrouped into `pp` stages, each
    /// with its 1F1B order.
    pub fn with_pp(&self, pp: u32) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::Pp(pp)])
    }

    /// Model chunks per stage: Megatron's interleaved 1F1B schedule with
    /// `v` virtual stages per stage (`1`: the plain 1F1B schedule).
    pub fn with_virtual_stages(&self, v: u32) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::VirtualStages(v)])
    }

    /// Micro-batches per step.
    pub fn with_microbatches(&self, m: u32) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::Microbatches(m)])
    }

    /// Transformer layers in the whole model.
    pub fn with_layers(&self, layers: u32) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::Layers(layers)])
    }

    /// Hidden size; the FFN size follows in proportion unless set too.
    pub fn with_hidden(&self, hidden: u64) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::Hidden(hidden)])
    }

    /// FFN size.
    pub fn with_ffn(&self, ffn: u64) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::Ffn(ffn)])
    }

    /// Attention heads of the whole model.
    pub fn with_heads(&self, heads: u64) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::Heads(heads)])
    }

    /// Sequences per micro-batch.
    pub fn with_micro_batch(&self, micro_batch: u64) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::MicroBatch(micro_batch)])
    }

    /// A kernel speed-up.
    pub fn with_kernel_scale(&self, k: KernelScale) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::KernelScale(k)])
    }

    /// Another network.
    pub fn with_network(
        &self,
        net: NetworkModel,
        what: String,
    ) -> Result<Prediction<'b>, PredictError> {
        self.with_edits([Edit::Network(net, what)])
    }

    /// The global rank predicted stage `k` stands for in the target job:
    /// its template's tensor and data indices at the stage's place in the
    /// target layout (Megatron's order, [`Prediction::stage_coord`]), so a
    /// stage rebuilt from another stage's trace is not labelled with the
    /// traced rank. A traced rank its own layout cannot hold (degrees the
    /// trace did not show) keeps the traced rank.
    pub fn stage_rank(&self, k: usize) -> u32 {
        let traced = self.base.inputs[self.stages[k].primary].ctx.rank;
        self.stage_coord(k)
            .and_then(|at| u32::try_from(Layout::of(&self.target.config).rank(at)).ok())
            .unwrap_or(traced)
    }

    /// Where predicted stage `k` sits in the target layout: the tensor and
    /// data indices of the traced rank it is built on (wrapped into the
    /// target's degrees), at the stage. `None` when the traced layout
    /// cannot hold that rank (degrees the trace did not show): the stage
    /// has no place in the target layout then.
    pub fn stage_coord(&self, k: usize) -> Option<Coord> {
        let st = &self.stages[k];
        stage_coord(self.base, &self.target.config, st.primary, st.stage)
    }

    /// Ranks in the target job (tensor x data x pipeline degrees).
    pub fn world_size(&self) -> u32 {
        let c = &self.target.config;
        c.tp.saturating_mul(c.dp).saturating_mul(c.pp)
    }
}

impl PredictedStage<'_> {
    /// A copy of the graph with the predicted durations written into its
    /// tasks, for a reader that takes durations from a graph (discovery
    /// run again on a predicted stage).
    pub fn retimed_graph(&self) -> Graph {
        let mut g = self.graph.clone().into_owned();
        for (t, &ns) in g.tasks.iter_mut().zip(self.durations.iter()) {
            t.duration_ns = ns;
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble::identity_plan;
    use crate::testutil::{baseline, inputs};

    /// Under FSDP the additions' notes say they assume `no_sync` (FSDP's
    /// default reduces every backward and adds into its shards, which a
    /// "predicted short" would misstate); without FSDP nothing is added.
    /// No corpus trace runs FSDP: a synthesized one is given FSDP2's name.
    #[test]
    fn fsdp_additions_notes_state_the_no_sync_assumption() {
        let mut base = baseline("gpt-tiny", None, [1, 1, 2, 1]);
        assert!(!runs_fsdp(&base));
        let plain = additions_notes((0, 0, 16), false);
        assert_eq!(plain.len(), 1);
        assert!(plain[0].ends_with("the step is predicted short by their time"));
        base.inputs[0].graph.names[0] = "FSDP::post_backward_reduce".into();
        assert!(runs_fsdp(&base));
        let notes = additions_notes((0, 0, 16), true);
        assert_eq!(notes.len(), 2);
        assert!(notes[1].starts_with(
            "FSDP: the backwards before the last are taken to run as under `no_sync`"
        ));
        assert_eq!(additions_notes((4, 4, 0), true).len(), 2);
        // Nothing about additions, nothing about FSDP.
        assert!(additions_notes((0, 0, 0), true).is_empty());
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

    /// Predicted stages are labelled with their own rank in the target
    /// job, not the rank of the trace they were built from.
    #[test]
    fn predicted_stages_take_their_ranks_in_the_target_job() {
        // TP 2 x PP 2 x DP 2, traced on ranks 1 (stage 0) and 5 (stage 1).
        let layout = [2, 2, 2, 4];
        let traces = [1, 5].map(|r| {
            crate::testutil::input(
                &crate::testutil::synth_layers("gpt-tiny", None, layout, r),
                &format!("rank{r}"),
            )
        });
        let base = Baseline::new(traces.into()).unwrap();
        let ranks =
            |p: &Prediction| -> Vec<u32> { (0..p.stages.len()).map(|k| p.stage_rank(k)).collect() };
        let id = base.identity();
        assert_eq!(ranks(&id), vec![1, 5]);
        assert_eq!(id.world_size(), 8);
        // Four stages: the middle ones are copies of traced stages, but
        // stand for ranks 5 and 9 of a 16-rank job.
        let pp4 = id.with_pp(4).unwrap();
        let stages: Vec<u32> = pp4.stages.iter().map(|s| s.stage).collect();
        assert_eq!(stages, vec![0, 1, 2, 3]);
        assert_eq!(ranks(&pp4), vec![1, 5, 9, 13]);
        assert_eq!(pp4.world_size(), 16);
        // More replicas move the later stage's ranks up.
        assert_eq!(ranks(&id.with_dp(4).unwrap()), vec![1, 9]);
        // Fewer tensor-parallel ranks: the tensor index wraps.
        assert_eq!(ranks(&id.with_tp(1).unwrap()), vec![0, 2]);
    }

    #[test]
    fn tensor_parallelism_from_tp_one_adds_all_reduces_launched_and_waited_for() {
        use lumos_graph::{DepKind, ProcKind};
        let base = baseline("gpt-tiny", None, [1, 1, 1, 2]);
        let p = base.identity().with_tp(2).unwrap();
        let st = &p.stages[0];
        let g = &*st.graph;
        let traced_streams: Vec<&ProcKind> = (base.inputs[0].graph.processors.iter())
            .map(|pr| &pr.kind)
            .filter(|k| matches!(k, ProcKind::Stream { .. }))
            .collect();
        let added: Vec<TaskId> = (0..g.tasks.len() as u32)
            .map(TaskId)
            .filter(|&t| g.name(t) == crate::assemble::TP_ALLREDUCE_KERNEL)
            .collect();
        assert!(!added.is_empty());
        let mut beside = 0;
        for &k in &added {
            assert!(st.tag[k.idx()].tp_allreduce.is_some());
            assert!(st.durations[k.idx()] > 0 && st.source[k.idx()] == Source::Modelled);
            let launch = (g.edges.iter())
                .find(|e| e.kind == DepKind::Launch && e.to == k)
                .map(|e| e.from)
                .expect("a launch");
            assert!(!g.tasks[launch.idx()].kind.is_gpu());
            assert!(st.tag[launch.idx()].tp_allreduce.is_some());
            let on_own_stream =
                !traced_streams.contains(&&g.processors[g.tasks[k.idx()].proc.idx()].kind);
            if on_own_stream {
                // A backward all-reduce: after the input gradient's GEMM,
                // and waited for by the compute stream after the next.
                beside += 1;
                let inter = |into: bool| {
                    (g.edges.iter()).any(|e| {
                        e.kind == DepKind::InterStream && if into { e.to == k } else { e.from == k }
                    })
                };
                assert!(inter(true) && inter(false), "{k:?}");
            }
        }
        // Per forward, the layers' two and, on this one stage, the
        // embedding's and the loss's (one kernel for its three); per
        // backward, the layers' two and the output layer's, all beside.
        let s = &base.structures[0];
        let (passes, layers) = (s.steps.iter().flat_map(|st| &st.passes))
            .fold((0, 0), |(n, l), p| (n + 1, l + p.layers.len()));
        let forwards = passes / 2;
        assert_eq!(beside, layers + forwards);
        assert_eq!(added.len(), 2 * layers + 3 * forwards);
    }

    #[test]
    fn structural_changes_are_pipeline_micro_batches_and_layers() {
        let base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        // Tensor parallelism added to a TP 1 trace adds its all-reduces.
        assert!(structural_change(&base, &target(&base, |c| c.tp = 4)));
        let at_two = baseline("gpt-tiny", None, [2, 1, 1, 2]);
        assert!(!structural_change(&at_two, &target(&at_two, |c| c.tp = 4)));
        assert!(structural_change(
            &base,
            &target(&base, |c| c.microbatches = 3)
        ));
    }

    #[test]
    fn edits_apply_together_and_the_ffn_follows_the_hidden_size() {
        let base = baseline("gpt-tiny", None, [2, 1, 1, 2]);
        let id = base.identity();
        // 3 tensor-parallel ranks do not divide 1024, but do 3072.
        assert!(id.with_tp(3).is_err());
        let p = id.with_edits([Edit::Tp(3), Edit::Hidden(3072)]);
        assert!(matches!(p, Err(PredictError::InvalidTarget(ref m)) if m.contains("heads")));
        let p = id.with_edits([Edit::Tp(4), Edit::Hidden(2048)]).unwrap();
        assert_eq!((p.target.config.hidden, p.target.config.ffn), (2048, 8192));
        let p = id
            .with_edits([Edit::Ffn(2048), Edit::Hidden(2048)])
            .unwrap();
        assert_eq!(p.target.config.ffn, 2048);
    }

    #[test]
    fn traced_stages_are_the_traced_graphs_tagged_by_unit() {
        let base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        let stages = traced_stages(&base);
        assert_eq!(stages.len(), 2);
        for (i, st) in stages.iter().enumerate() {
            let inp = &base.inputs[i];
            assert_eq!((st.stage, st.primary), (base.stages[i], i));
            assert_eq!(st.graph.tasks.len(), inp.graph.tasks.len());
            assert!(st
                .origin
                .iter()
                .enumerate()
                .all(|(t, o)| *o == (i as u32, TaskId(t as u32))));
            let s = &base.structures[i];
            for (uref, tag) in identity_plan(i as u32, s) {
                for &t in &s.units.units[uref.unit as usize].tasks {
                    assert_eq!(st.tag[t.idx()], tag);
                }
            }
            // Some tasks are in passes, some in prologues or epilogues.
            assert!(st.tag.iter().any(|t| t.pass.is_some()));
            assert!(st.tag.iter().any(|t| t.setup));
        }
    }

    #[test]
    fn rebuilt_stages_need_editable_traces_of_every_stage() {
        let mut base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        let mut notes = Vec::new();
        let c = target(&base, |c| c.pp = 4).config;
        let stages = rebuilt_stages(&base, &c, &mut notes).unwrap();
        assert_eq!(
            stages.iter().map(|s| s.stage).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        // Each with the traced steps.
        assert!(stages.iter().all(|s| s.graph.steps.len() == 2));
        assert_eq!(
            notes[0],
            "pipeline rebuilt: 4 stages of [1, 1, 1, 1] layers, 1F1B order per stage"
        );
        base.structures[1].report.structural_edits_blocked = Some("no layers".into());
        let e = rebuilt_stages(&base, &c, &mut notes).unwrap_err();
        assert_eq!(
            e.to_string(),
            "rank1: structural edits impossible: no layers (so the pipeline stages, \
             micro-batches, layers and virtual stages cannot change; the other what-ifs can)"
        );
        // Only the first stage of two: the pipeline cannot be rebuilt.
        let first = inputs("gpt-tiny", None, [1, 2, 1, 2]).remove(0);
        let half = Baseline::new(vec![first]).unwrap();
        assert!(!half.complete);
        let e = rebuilt_stages(&half, &c, &mut notes).unwrap_err();
        assert!(matches!(e, PredictError::Unsupported(_)));
        assert_eq!(
            e.to_string(),
            "changing the pipeline degree needs the traces of the first and last stages"
        );
    }

    #[test]
    fn notes_say_what_each_edit_assumes() {
        let base = baseline("gpt-tiny", None, [2, 2, 2, 2]);
        assert!(edit_notes(&base, &target(&base, |_| {})).is_empty());
        let notes = edit_notes(&base, &target(&base, |c| c.dp = 8));
        assert!(
            notes[0].starts_with("data parallel 2 -> 8: weak scaling"),
            "{}",
            notes[0]
        );
        // Several traced stages replayed together.
        assert!(notes
            .last()
            .unwrap()
            .starts_with("stages replayed together"));
        // Whitespace is collapsed.
        assert!(notes.iter().all(|n| !n.contains("  ")));
        let notes = edit_notes(&base, &target(&base, |c| c.layers = 8));
        assert!(notes[0].starts_with("optimizer and gradient-zeroing kernels scale"));
        let mut t = target(&base, |_| {});
        t.scales.push("class:gemm=0.5".parse().unwrap());
        assert_eq!(
            edit_notes(&base, &t)[0],
            "kernel speed-ups applied after every model: class:gemm=0.5"
        );
    }

    #[test]
    fn shape_edits_need_the_shapes() {
        let mut base = baseline("gpt-tiny", None, [1, 1, 1, 2]);
        base.config.hidden = 0;
        base.config.ffn = 0;
        let id = base.identity();
        for e in [id.with_hidden(2048).err(), id.with_ffn(2048).err()] {
            assert!(matches!(e, Some(PredictError::Unsupported(_))));
        }
    }

    #[test]
    fn a_retimed_graph_holds_the_predicted_durations() {
        let base = baseline("gpt-tiny", None, [1, 1, 1, 2]);
        let mut p = base.identity();
        Arc::make_mut(&mut p.stages[0].durations).fill(7);
        let g = p.stages[0].retimed_graph();
        assert!(g.tasks.iter().all(|t| t.duration_ns == 7));
        assert_eq!(g.edges, p.stages[0].graph.edges);
        // The traced graph keeps its own.
        assert!(p.stages[0].graph.tasks.iter().any(|t| t.duration_ns != 7));
    }
}
