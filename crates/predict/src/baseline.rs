//! The baseline of a prediction: the traced ranks, what discovery found in
//! them, the configuration they ran, and the duration models calibrated on
//! them. [`Baseline::new`] runs in steps: discovery of every input (with
//! another stage's layer blocks where a stage repeats none), each input's
//! stage, one rank per stage, the traced configuration, the GEMM curve and
//! network fitted to the inputs, each stage's parameters, and the templates
//! structural edits copy.

use std::sync::{Arc, OnceLock};

use lumos_graph::{Graph, Measured};
use lumos_models::{CollectiveKind, GpuSpec};

use crate::config::Config;
use crate::config::{Coord, Layout};
use crate::context::TraceContext;
use crate::discover::CommInfo;
use crate::discover::{
    discover, discover_with_hint, one_layer_hint, GroupClass, LayerHint, PassKind, Role, Structure,
    WorkClass,
};
use crate::edits::{realize, Prediction, Target};
use crate::error::PredictError;
use crate::models::{
    identify_gpu, CommModel, ComputeModel, GemmCalibration, GpuMatch, LinkCalibration,
    NetworkCalibration, ENVELOPE_PERCENTILE, GEMM_MAX_FIT_ERROR_PCT,
};
use crate::plan::StageRole;

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
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamCount {
    /// Per transformer layer (this rank's shard).
    pub per_layer: f64,
    /// Layers on the stage.
    pub layers: u32,
    /// Outside layers (embedding, output layer copy).
    pub other: f64,
    /// How the total was found: `gradient_bytes` (the elements the
    /// data-parallel reduction moves, whatever its dtype) or `layers_only`.
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
    /// Each input's position among those given to [`Baseline::new`]:
    /// where several traced ranks share a stage only one is kept, so
    /// anything a front end keeps per given input (file names, trace
    /// metadata) is found through this.
    pub given: Vec<usize>,
    /// What discovery found in each.
    pub structures: Vec<Structure>,
    /// Each input's graph as structural edits copy it ([`Baseline::templates`]),
    /// made on first use: a prediction that edits no structure never
    /// needs this copy of every graph.
    templates: OnceLock<Vec<Graph>>,
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

/// The traced ranks kept, one per stage, with what was found in them.
struct Kept {
    inputs: Vec<Input>,
    given: Vec<usize>,
    structures: Vec<Structure>,
    roles: Vec<StageRole>,
    stages: Vec<u32>,
}

impl Baseline {
    /// Discovers structure in every input, calibrates the models and reads
    /// the configuration. Inputs are the ranks of one pipeline (one per
    /// stage), or a single rank.
    pub fn new(inputs: Vec<Input>) -> Result<Baseline, PredictError> {
        if inputs.is_empty() {
            return Err(PredictError::NoInputs);
        }
        let mut notes = Vec::new();
        let structures = discover_all(&inputs);
        let d0 = structures[0].config.clone();
        let (roles, stages) = stage_roles(&inputs, &structures)?;
        let Kept {
            inputs,
            given,
            structures,
            roles,
            stages,
        } = one_rank_per_stage(inputs, structures, roles, stages, &mut notes);
        let pp = at_least_one(d0.pp, "pipeline-parallel degree", &mut notes);
        let complete = stages.len() as u32 == pp;
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
            tp: at_least_one(d0.tp, "tensor-parallel degree", &mut notes),
            dp: at_least_one(d0.dp, "data-parallel degree", &mut notes),
            pp,
            microbatches: at_least_one(d0.microbatches, "micro-batch count", &mut notes),
            layers,
            hidden: d0.hidden.unwrap_or(0),
            ffn: d0.ffn.unwrap_or(0),
            virtual_stages: d0.virtual_stages.unwrap_or(1),
        };
        let ctx0 = &inputs[0].ctx;
        let gpu = identify_gpu(
            ctx0.device_name.as_deref(),
            ctx0.device_sms,
            ctx0.device_memory_bytes,
        );
        if !gpu.known {
            notes.push(format!(
                "low confidence: {}: H100 values used where no calibration applies \
                 (GEMM ratios do not depend on the peak)",
                gpu.how
            ));
        }
        let gemm = fit_gemm(&inputs, &structures, &gpu);
        notes.extend(gemm_note(&gemm));
        let network = fit_network(&inputs, &structures, &config, &gpu.spec, &mut notes);
        let params = structures.iter().map(|s| param_count(s, &config)).collect();
        let models = Models {
            compute: Arc::new(gemm.model()),
            comm: Arc::new(network.model()),
            calibrated: true,
        };
        Ok(Baseline {
            inputs,
            given,
            structures,
            templates: OnceLock::new(),
            roles,
            stages,
            config,
            complete,
            gemm,
            network,
            models,
            params,
            sequence_parallel: d0.sequence_parallel.unwrap_or(false),
            distributed_optimizer: d0.distributed_optimizer.unwrap_or(false),
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
    /// unchanged. It cannot fail: the traced configuration is not checked
    /// as a target (however odd the trace), and its degrees are at least 1
    /// ([`Baseline::new`] takes a degree of 0 found in a trace as 1).
    pub fn identity(&self) -> Prediction<'_> {
        let target = Target {
            config: self.config,
            scales: Vec::new(),
            network: None,
        };
        crate::edits::traced(self, target)
    }

    /// The prediction for `target`.
    pub fn predict(&self, target: Target) -> Result<Prediction<'_>, PredictError> {
        realize(self, target)
    }

    /// Each input's graph as structural edits copy it: the main thread's
    /// waits for backward bursts made explicit (see the `assemble`
    /// module). Made the first time it is asked for.
    pub fn templates(&self) -> &[Graph] {
        self.templates
            .get_or_init(|| templates(&self.inputs, &self.structures))
    }
}

/// Discovery on every input. A stage with one layer per pass repeats no
/// block of its own: the blocks another stage showed are looked for
/// instead, and where no stage repeats one (every stage runs one layer
/// per pass), the stages' own passes are the candidates
/// ([`one_layer_hint`]), shortest first: a middle stage's is the layer
/// alone, and it is taken when it unblocks every blocked stage, of at
/// least two distinct stages.
fn discover_all(inputs: &[Input]) -> Vec<Structure> {
    let mut structures: Vec<Structure> = inputs
        .iter()
        .map(|i| discover(&i.graph, &i.measured, &i.ctx))
        .collect();
    let todo: Vec<usize> = (0..structures.len())
        .filter(|&i| structures[i].report.structural_edits_blocked.is_some())
        .collect();
    if todo.is_empty() {
        return structures;
    }
    if let Some(hint) = structures.iter().find_map(|s| s.layer_hint()) {
        retry_with_hint(inputs, &mut structures, &todo, &hint, false);
        return structures;
    }
    // One stage's candidate may be an end stage's superset of the layer
    // (with the embedding or the loss), which its own trace cannot tell
    // apart; one that every blocked stage of two or more distinct stages
    // runs is the layer: the first stage's has the embedding the last
    // stage lacks, and the other way round.
    let mut stages: Vec<Option<u32>> = todo.iter().map(|&i| structures[i].config.stage).collect();
    stages.sort_unstable();
    stages.dedup();
    if stages.len() < 2 || stages.contains(&None) {
        return structures;
    }
    let mut candidates: Vec<LayerHint> = todo
        .iter()
        .filter_map(|&i| one_layer_hint(&inputs[i].graph, &inputs[i].measured))
        .collect();
    candidates.sort_by_key(|h| (h.backward.len() + h.forward.len(), h.backward.clone()));
    candidates.dedup();
    for hint in &candidates {
        if retry_with_hint(inputs, &mut structures, &todo, hint, true) {
            break;
        }
    }
    structures
}

/// Discovers the stages `todo` again with `hint`, keeping each result that
/// unblocks its stage; with `all_or_none`, keeps them only when every one
/// of `todo` is unblocked. Whether every one was.
fn retry_with_hint(
    inputs: &[Input],
    structures: &mut [Structure],
    todo: &[usize],
    hint: &LayerHint,
    all_or_none: bool,
) -> bool {
    let again: Vec<(usize, Structure)> = todo
        .iter()
        .map(|&i| {
            let s = discover_with_hint(
                &inputs[i].graph,
                &inputs[i].measured,
                &inputs[i].ctx,
                Some(hint),
            );
            (i, s)
        })
        .filter(|(_, s)| s.report.structural_edits_blocked.is_none())
        .collect();
    let every = again.len() == todo.len();
    if every || !all_or_none {
        for (i, s) in again {
            structures[i] = s;
        }
    }
    every
}

/// A degree or count found in the traces, 1 when none was found; a 0
/// (a group of no ranks, which no job has) is taken as 1 and noted, so
/// that every configuration a baseline holds can be predicted.
fn at_least_one(found: Option<u32>, what: &str, notes: &mut Vec<String>) -> u32 {
    match found {
        Some(0) => {
            notes.push(format!("the traces give a {what} of 0: taken as 1"));
            1
        }
        x => x.unwrap_or(1),
    }
}

/// Each input's role and stage in its pipeline; an error when the inputs'
/// parallel degrees differ (they are then not ranks of one job).
fn stage_roles(
    inputs: &[Input],
    structures: &[Structure],
) -> Result<(Vec<StageRole>, Vec<u32>), PredictError> {
    let degrees = |s: &Structure| {
        let c = &s.config;
        (c.tp.unwrap_or(1), c.dp.unwrap_or(1), c.pp.unwrap_or(1))
    };
    let first = degrees(&structures[0]);
    let mut roles = Vec::new();
    let mut stages = Vec::new();
    for (i, s) in structures.iter().enumerate() {
        if degrees(s) != first {
            return Err(PredictError::NotOneJob(format!(
                "{}: parallel degrees differ from {}'s: are these ranks of one job?",
                inputs[i].name, inputs[0].name
            )));
        }
        let c = &s.config;
        roles.push(
            StageRole::from_report(&s.report.stage_role)
                .unwrap_or_else(|| StageRole::of(c.stage.unwrap_or(0), first.2)),
        );
        stages.push(c.stage.unwrap_or(i as u32));
    }
    Ok((roles, stages))
}

/// One rank per stage: ranks that differ only by their tensor or data
/// index are taken to behave alike, so the first of each stage (lowest
/// rank) stands for it. Inputs keep their order.
fn one_rank_per_stage(
    inputs: Vec<Input>,
    structures: Vec<Structure>,
    roles: Vec<StageRole>,
    stages: Vec<u32>,
    notes: &mut Vec<String>,
) -> Kept {
    let mut keep: Vec<usize> = (0..inputs.len()).collect();
    keep.sort_by_key(|&i| (stages[i], inputs[i].ctx.rank));
    keep.dedup_by_key(|i| stages[*i]);
    keep.sort_unstable();
    if keep.len() == inputs.len() {
        return Kept {
            given: keep,
            inputs,
            structures,
            roles,
            stages,
        };
    }
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
    Kept {
        inputs: keep
            .iter()
            .map(|&i| taken[i].take().expect("kept once"))
            .collect(),
        structures: keep
            .iter()
            .map(|&i| st[i].take().expect("kept once"))
            .collect(),
        roles: keep.iter().map(|&i| roles[i]).collect(),
        stages: keep.iter().map(|&i| stages[i]).collect(),
        given: keep,
    }
}

/// One GEMM curve for every input: the fit over the input with the most
/// GEMMs with shapes, for the GPU `gpu`.
fn fit_gemm(inputs: &[Input], structures: &[Structure], gpu: &GpuMatch) -> GemmCalibration {
    let mut best = GemmCalibration::fit(&inputs[0].graph, &structures[0], &gpu.spec);
    for (i, s) in inputs.iter().zip(structures).skip(1) {
        let c = GemmCalibration::fit(&i.graph, s, &gpu.spec);
        if c.samples > best.samples {
            best = c;
        }
    }
    best.gpu_known = gpu.known;
    best.gpu_source = gpu.how.clone();
    best
}

/// What the GEMM calibration assumes, when it is not a plain fit.
fn gemm_note(g: &GemmCalibration) -> Option<String> {
    match g.method {
        "flop_ratio" => Some(format!(
            "GEMM curve ({}) errs by {:.0}% on the trace's {} GEMMs with shapes, over the \
             {GEMM_MAX_FIT_ERROR_PCT:.0}% limit: not used; a re-timed GEMM takes its measured \
             time x its change in FLOPs (the efficiency measured for its own shape)",
            if g.fitted { "fitted" } else { "preset" },
            g.mean_abs_error_pct,
            g.samples
        )),
        "preset_curve" => Some(
            "GEMM curve could not be fitted (too few GEMMs with shapes): preset curve used".into(),
        ),
        _ => None,
    }
}

/// The GPU preset's network, with the node size the trace shows,
/// calibrated on every input's collectives. A collective without recorded
/// group members is taken to use its class's group in the traced layout
/// (`config`).
fn fit_network(
    inputs: &[Input],
    structures: &[Structure],
    config: &Config,
    gpu: &GpuSpec,
    notes: &mut Vec<String>,
) -> NetworkCalibration {
    let mut start = gpu.network;
    start.gpus_per_node = inputs[0].ctx.gpus_per_node.max(1);
    notes.push(format!(
        "{} GPUs per node (the devices the trace lists); groups within a node use the \
         intra-node link, others the inter-node one",
        start.gpus_per_node
    ));
    let pairs: Vec<(&Graph, &Structure)> =
        inputs.iter().map(|i| &i.graph).zip(structures).collect();
    let layout = Layout::of(config);
    let ranks_of = |stage: usize, c: &CommInfo| -> Vec<i64> {
        if !c.ranks.is_empty() {
            return c.ranks.clone();
        }
        match c.class {
            GroupClass::Data | GroupClass::Tensor => {
                let at: Coord = layout.coord(inputs[stage].ctx.rank as i64);
                layout.group(c.class, at)
            }
            _ => Vec::new(),
        }
    };
    let net = NetworkCalibration::fit(&pairs, start, &format!("preset {}", gpu.name), &ranks_of);
    notes.extend(net.links.iter().filter_map(|l| link_note(l, gpu.name)));
    net
}

/// What was done to calibrate link `l` (on a GPU preset named `gpu`), for
/// the assumptions; `None` for a link the trace never used.
fn link_note(l: &LinkCalibration, gpu: &str) -> Option<String> {
    if l.collectives == 0 {
        return None;
    }
    let envelope = format!(
        "the {ENVELOPE_PERCENTILE:.0}th percentile of each bucket (a kernel's time includes \
         waiting for its peers)"
    );
    Some(match l.method {
        "alpha_beta" | "one_factor" | "bandwidth_only" => format!(
            "network {}: calibrated on {} collectives in {} (kind, size, group) buckets, on \
             {envelope}; {}: {:.1} GB/s effective, latency x{:.2}, mean error {:.1}%",
            l.link,
            l.collectives - l.unsized_collectives,
            l.samples,
            match l.method {
                "alpha_beta" => "bandwidth and latency fitted",
                "one_factor" => "one factor on the preset's times",
                _ => "bandwidth fitted, far below the preset's; latencies the preset's",
            },
            l.effective_gbps,
            l.latency_scale,
            l.mean_abs_error_pct
        ),
        "latency_only" => format!(
            "network {}: the trace's {} collectives on it record no message size: only the \
             latency calibrated (x{:.2}, on {envelope} of each of {} (kind, group) buckets, mean \
             error {:.1}%); bandwidth from preset {gpu} ({:.1} GB/s effective); a re-timed \
             collective without a size gets one inferred from its timing, its slot's lower \
             envelope over the steps where it has one (see the notes on re-timed collectives)",
            l.link,
            l.collectives,
            l.latency_scale,
            l.samples,
            l.mean_abs_error_pct,
            l.effective_gbps
        ),
        _ => format!(
            "network {}: its {} collectives ({} without a size) fit no ring model near preset \
             {gpu}: preset values kept ({:.1} GB/s effective)",
            l.link, l.collectives, l.unsized_collectives, l.effective_gbps
        ),
    })
}

/// Each input's graph as structural edits copy it: the main thread's
/// waits for backward bursts made explicit.
fn templates(inputs: &[Input], structures: &[Structure]) -> Vec<Graph> {
    inputs
        .iter()
        .zip(structures)
        .map(|(i, st)| {
            let mut g = i.graph.clone();
            crate::assemble::repair_joins(&mut g, &i.measured, st);
            g
        })
        .collect()
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
    let grad_elements: u64 = s
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
        .filter_map(|x| x.elements)
        .sum();
    if grad_elements > 0 {
        let total = grad_elements as f64;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{baseline, inputs, synth};

    #[test]
    fn a_degree_of_zero_is_taken_as_one_and_noted() {
        let mut notes = Vec::new();
        assert_eq!(at_least_one(None, "tensor-parallel degree", &mut notes), 1);
        assert_eq!(
            at_least_one(Some(4), "tensor-parallel degree", &mut notes),
            4
        );
        assert!(notes.is_empty());
        assert_eq!(at_least_one(Some(0), "data-parallel degree", &mut notes), 1);
        assert_eq!(
            notes,
            ["the traces give a data-parallel degree of 0: taken as 1"]
        );
    }

    #[test]
    fn the_identity_is_not_checked_as_a_target() {
        // A traced configuration no target may have (a world beyond
        // lumos' limit, no layers for the stages) still replays as traced.
        let mut base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        base.config.dp = 1 << 20;
        base.config.layers = 0;
        let p = base.identity();
        assert_eq!(p.stages.len(), base.inputs.len());
        // An edit of the degrees is checked, against the world it makes.
        let e = p.with_tp(2).err().unwrap();
        assert!(
            e.to_string().contains("lumos predicts jobs of at most"),
            "{e}"
        );
    }

    /// An input with nothing in it, of rank `rank`.
    fn empty(rank: u32) -> (Input, Structure) {
        let ctx = TraceContext {
            rank,
            ..TraceContext::default()
        };
        let s = discover(&Graph::default(), &Measured::default(), &ctx);
        let input = Input {
            name: format!("rank{rank}"),
            graph: Graph::default(),
            measured: Measured::default(),
            ctx,
        };
        (input, s)
    }

    #[test]
    fn one_rank_stands_for_each_stage() {
        let (inputs, structures): (Vec<Input>, Vec<Structure>) =
            [3, 2, 1, 0].into_iter().map(empty).unzip();
        let roles = vec![
            StageRole::Last,
            StageRole::First,
            StageRole::Last,
            StageRole::First,
        ];
        let mut notes = Vec::new();
        let k = one_rank_per_stage(inputs, structures, roles, vec![1, 0, 1, 0], &mut notes);
        // The lowest rank of each stage, in input order.
        let ranks: Vec<u32> = k.inputs.iter().map(|i| i.ctx.rank).collect();
        assert_eq!(ranks, vec![1, 0]);
        // Where each kept input was among those given.
        assert_eq!(k.given, vec![2, 3]);
        assert_eq!(k.stages, vec![1, 0]);
        assert_eq!(k.roles, vec![StageRole::Last, StageRole::First]);
        assert_eq!(k.structures.len(), 2);
        assert_eq!(
            notes,
            vec![
                "2 of 4 inputs left out: one rank per pipeline stage stands for its stage \
                 (rank 1 for stage 1, rank 0 for stage 0)"
            ]
        );
        // One per stage already: nothing left out, nothing noted.
        let (inputs, structures): (Vec<Input>, Vec<Structure>) =
            [0, 1].into_iter().map(empty).unzip();
        let mut notes = Vec::new();
        let roles = vec![StageRole::First, StageRole::Last];
        let k = one_rank_per_stage(inputs, structures, roles, vec![0, 1], &mut notes);
        assert_eq!(k.inputs.len(), 2);
        assert_eq!(k.given, vec![0, 1]);
        assert!(notes.is_empty());
    }

    #[test]
    fn ranks_of_other_jobs_are_refused() {
        let ins = [
            crate::testutil::input(&synth("gpt-tiny", 2, 1, 1, 2, 0), "a.json"),
            crate::testutil::input(&synth("gpt-tiny", 1, 1, 1, 2, 0), "b.json"),
        ];
        let structures = discover_all(&ins);
        let e = stage_roles(&ins, &structures).unwrap_err();
        assert!(matches!(e, PredictError::NotOneJob(_)));
        assert!(!e.is_usage());
        assert_eq!(
            e.to_string(),
            "b.json: parallel degrees differ from a.json's: are these ranks of one job?"
        );
        assert!(matches!(
            Baseline::new(Vec::new()),
            Err(PredictError::NoInputs)
        ));
    }

    #[test]
    fn stages_and_roles_of_a_pipeline() {
        let ins = inputs("gpt-tiny", Some(6), [1, 3, 1, 3]);
        let s = discover_all(&ins);
        let (roles, stages) = stage_roles(&ins, &s).unwrap();
        assert_eq!(
            roles,
            vec![StageRole::First, StageRole::Middle, StageRole::Last]
        );
        assert_eq!(stages, vec![0, 1, 2]);
    }

    #[test]
    fn a_stage_with_one_layer_is_discovered_with_another_s_blocks() {
        // Three layers over two stages: the second has one per pass.
        let ins = inputs("gpt-tiny", Some(3), [1, 2, 1, 3]);
        let alone = discover(&ins[1].graph, &ins[1].measured, &ins[1].ctx);
        assert!(alone.report.structural_edits_blocked.is_some());
        let s = discover_all(&ins);
        assert_eq!(s[0].layer_method, crate::LayerMethod::ScopePattern);
        assert_eq!(s[1].layer_method, crate::LayerMethod::OtherStage);
        assert_eq!(s[1].config.layers, Some(1));
        assert!(s[1].report.structural_edits_blocked.is_none());
    }

    #[test]
    fn the_gemm_curve_comes_from_the_input_with_most_gemms() {
        let (e, es) = empty(1);
        let ins = inputs("gpt-tiny", None, [1, 1, 1, 2]);
        let s = discover_all(&ins);
        let gpu = GpuSpec::h100();
        let alone = GemmCalibration::fit(&ins[0].graph, &s[0], &gpu);
        assert!(alone.samples > 0 && alone.fitted);
        let both = [e, ins.into_iter().next().unwrap()];
        let fit = fit_gemm(
            &both,
            &[es, s.into_iter().next().unwrap()],
            &identify_gpu(Some("H100"), None, None),
        );
        assert_eq!(fit.gpu_source, "device name \"H100\"");
        assert_eq!(
            fit,
            GemmCalibration {
                gpu_source: fit.gpu_source.clone(),
                ..alone
            }
        );
    }

    #[test]
    fn parameters_per_layer_and_in_all() {
        // gpt-tiny: h = 1024; a layer's weights are 12 h^2, plus 4 h of
        // layer norms.
        let per_layer = 12.0 * 1024.0 * 1024.0 + 4.0 * 1024.0;
        for (dp, method) in [(2, "gradient_bytes"), (1, "layers_only")] {
            let ins = inputs("gpt-tiny", None, [1, 1, dp, 2]);
            let s = discover_all(&ins);
            let config = Config {
                tp: 1,
                dp: dp as u32,
                pp: 1,
                microbatches: 2,
                layers: 4,
                hidden: 1024,
                ffn: 4096,
                virtual_stages: 1,
            };
            let pc = param_count(&s[0], &config);
            assert_eq!((pc.per_layer, pc.layers, pc.method), (per_layer, 4, method));
            if dp > 1 {
                // The embedding and output layer: at least the 51200 x 1024
                // vocabulary.
                assert!(pc.other >= 51200.0 * 1024.0, "{}", pc.other);
                assert_eq!(pc.total(), pc.per_layer * 4.0 + pc.other);
            } else {
                assert_eq!(pc.other, 0.0);
            }
        }
    }
}
