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

use crate::candidates::{Candidates, Kept};
use crate::config::Config;
use crate::config::{Coord, Layout};
use crate::context::TraceContext;
use crate::discover::CommInfo;
use crate::discover::{GroupClass, PassKind, Role, Structure, WorkClass};
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
#[derive(Debug, Clone, PartialEq)]
pub struct ParamCount {
    /// Per transformer layer (this rank's shard): the elements of
    /// [`ParamCount::layer_gemms`] plus 4 h for the layer norms, 0 where no
    /// forward layer was found.
    pub per_layer: f64,
    /// The weights the GEMMs of the stage's first forward layer multiply
    /// by, `(k, n)` of each GEMM in launch order (a weight once per GEMM
    /// that multiplies by it); empty where no forward layer was found.
    pub layer_gemms: Vec<(u64, u64)>,
    /// Layers on the stage.
    pub layers: u32,
    /// Outside layers (embedding, output layer copy).
    pub other: f64,
    /// How the total was found: `gradient_bytes` (the elements the
    /// data-parallel reduction moves, whatever its dtype),
    /// `layers_and_outside` (the GEMM weights and embedding tables outside
    /// layers added) or `layers_only`.
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
    /// How many traced ranks holding tasks were given (more than `inputs`
    /// when ranks of one stage were left out).
    pub given_count: usize,
    /// The traced ranks given that hold no task, left out of the
    /// prediction as a job's assembly leaves them out of the job (the
    /// others are predicted; every rank without a task is
    /// [`PredictError::NoTasks`]). `given` counts them among the ranks
    /// given, `given_count` does not.
    pub left_out: Vec<lumos_graph::LeftOut>,
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
    /// A flag that stops every replay of a prediction made from this
    /// baseline (the traced configuration's included) once set: the
    /// replay then fails with [`lumos_sim::SimError::Cancelled`]. `None`
    /// (the default) replays to the end; a front end that lets its user
    /// interrupt long work (Python's Ctrl-C) sets one with
    /// [`Baseline::stoppable`].
    pub cancel: Option<lumos_sim::Cancel>,
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

impl Baseline {
    /// Discovers structure in every input, calibrates the models and reads
    /// the configuration. Inputs are the ranks of one pipeline (one per
    /// stage), or a single rank.
    pub fn new(inputs: Vec<Input>) -> Result<Baseline, PredictError> {
        Baseline::of(Candidates::discover_all(inputs))
    }

    /// [`Baseline::new`] of ranks given one at a time ([`Candidates`]),
    /// each already discovered: the ranks that cannot stand for their
    /// stage were left out as they came.
    pub fn of(candidates: Candidates) -> Result<Baseline, PredictError> {
        if candidates.is_empty() {
            return Err(PredictError::NoInputs);
        }
        let mut notes = Vec::new();
        let Kept {
            inputs,
            given,
            structures,
            roles,
            stages,
            first_config: d0,
            given_count,
            left_out,
        } = candidates.keep(&mut notes)?;
        let pp = at_least_one(d0.pp, "pipeline-parallel degree", &mut notes);
        let complete = stages.len() as u32 == pp;
        let layers = if complete {
            structures
                .iter()
                .map(|s| s.config.layers.unwrap_or(0))
                .sum()
        } else {
            if pp > 1 {
                // What the untraced stages send keeps its measured times,
                // which damps any edit (a GEMM speed-up moved a gpt-tiny
                // 2-stage step -0.28% from one stage, -13.6% from both):
                // the reader should know why it moved so little.
                notes.push(format!(
                    "only {} of {pp} pipeline stages traced: every stage assumed to hold {} \
                     layers; what comes from the untraced stages (the pipeline transfers they \
                     send, their timing) keeps its measured times, so an edit moves the step \
                     less than it would with one trace per stage",
                    stages.len(),
                    d0.layers.unwrap_or(0)
                ));
            }
            d0.layers.unwrap_or(0) * pp
        };
        // Degrees read from no process group (a trace stripped of its
        // pg_config): every edit of the job's shape rests on them.
        notes.extend(d0.degrees_guessed.clone());
        for (found, what) in [(d0.tp, "tensor-parallel"), (d0.dp, "data-parallel")] {
            if found.is_none() {
                // Discovery leaves a degree unknown where its collectives
                // record no group size; an edit of it is refused
                // (`checks.rs`), the others take it as 1.
                notes.push(format!(
                    "{what} degree unknown (its collectives record no group size): taken as 1"
                ));
            }
        }
        let config = Config {
            tp: at_least_one(d0.tp, "tensor-parallel degree", &mut notes),
            dp: at_least_one(d0.dp, "data-parallel degree", &mut notes),
            pp,
            microbatches: at_least_one(d0.microbatches, "micro-batch count", &mut notes),
            layers,
            hidden: d0.hidden.unwrap_or(0),
            ffn: d0.ffn.unwrap_or(0),
            virtual_stages: d0.virtual_stages.unwrap_or(1),
            micro_batch: (structures.iter())
                .find_map(|s| s.config.micro_batch)
                .unwrap_or(0),
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
        let params = (structures.iter().zip(&inputs))
            .map(|(s, i)| param_count(s, &i.graph, &config))
            .collect();
        let models = Models {
            compute: Arc::new(gemm.model()),
            comm: Arc::new(network.model()),
            calibrated: true,
        };
        Ok(Baseline {
            inputs,
            given,
            given_count,
            left_out,
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
            cancel: None,
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

    /// The baseline with every prediction's replays stopped once `cancel`
    /// is set (see [`Baseline::cancel`]).
    pub fn stoppable(mut self, cancel: lumos_sim::Cancel) -> Baseline {
        self.cancel = Some(cancel);
        self
    }

    /// The options every replay of a prediction starts from: the defaults,
    /// with [`Baseline::cancel`].
    pub(crate) fn sim_options(&self) -> lumos_sim::SimOptions {
        lumos_sim::SimOptions {
            cancel: self.cancel.clone(),
            ..lumos_sim::SimOptions::default()
        }
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
            heads: None,
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

    /// The inputs' names, in order, for the messages that name the
    /// traces an edit was refused for.
    pub(crate) fn input_names(&self) -> String {
        (self.inputs.iter())
            .map(|i| i.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
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

/// A mean error with no decimals, or `-` where there is none.
fn pct0(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.0}%"))
}

/// A mean error with one decimal, or `-` where there is none (a fit on
/// no points; the calibrated methods have points, so not there).
fn pct1(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}%"))
}

/// What the GEMM calibration assumes, when it is not a plain fit.
fn gemm_note(g: &GemmCalibration) -> Option<String> {
    match g.method {
        "flop_ratio" => Some(format!(
            "GEMM curve ({}) errs by {} on the trace's {} GEMMs with shapes, over the \
             {GEMM_MAX_FIT_ERROR_PCT:.0}% limit: not used; a re-timed GEMM takes its measured \
             time x its change in FLOPs (the efficiency measured for its own shape)",
            if g.fitted { "fitted" } else { "preset" },
            // Some: the method is chosen for an error over the limit.
            pct0(g.mean_abs_error_pct),
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
        "{} GPUs per node ({}); groups within a node use the intra-node link, others the \
         inter-node one",
        start.gpus_per_node,
        if inputs[0].ctx.devices_listed {
            "the devices the trace lists"
        } else {
            "assumed: the trace lists no devices"
        }
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
             {envelope}; {}: {:.1} GB/s effective, latency x{:.2}, mean error {}",
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
            pct1(l.mean_abs_error_pct)
        ),
        "latency_only" => format!(
            "network {}: the trace's {} collectives on it record no message size: only the \
             latency calibrated (x{:.2}, on {envelope} of each of {} (kind, group) buckets, mean \
             error {}); bandwidth from preset {gpu} ({:.1} GB/s effective); a re-timed \
             collective without a size gets one inferred from its timing, its slot's lower \
             envelope over the steps where it has one (see the notes on re-timed collectives)",
            l.link,
            l.collectives,
            l.latency_scale,
            l.samples,
            pct1(l.mean_abs_error_pct),
            l.effective_gbps
        ),
        _ => format!(
            "network {}: {} (preset {gpu}, {:.1} GB/s effective)",
            l.link,
            crate::models::not_calibrated(l.why_uncalibrated().as_deref()),
            l.effective_gbps
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
/// gradient reduction of one step (fp32 gradients) when there is one,
/// else with the first forward pass's weights outside layers (its GEMMs'
/// and embedding tables).
fn param_count(s: &Structure, graph: &Graph, c: &Config) -> ParamCount {
    let layers = s.config.layers.unwrap_or(0);
    let layer = first_layer_gemms(s);
    let per_layer = layer
        .as_ref()
        .map(|w| w.iter().map(|&(k, n)| (k * n) as f64).sum::<f64>() + 4.0 * c.hidden as f64)
        .unwrap_or(0.0);
    let layer_gemms = layer.unwrap_or_default();
    let grad_elements: u64 = s
        .comms
        .iter()
        // Launched in step 0: one launched before the capture is the step
        // before's, whichever unit its kernel was filed with.
        .filter(|x| x.class == GroupClass::Data && x.launched)
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
            layer_gemms,
            layers,
            other: (total - per_layer * layers as f64).max(0.0),
            method: "gradient_bytes",
        }
    } else {
        // The first step's prologue and first micro-batch's passes: the
        // output layer's GEMMs may sit in the backward pass (units after
        // the last forward layer belong to the next pass), the embedding in
        // the prologue (one micro-batch cannot tell it from the step's).
        let outside: Vec<u32> = (s.steps.iter().take(1))
            .flat_map(|st| {
                let passes = st.passes.iter().filter(|p| p.microbatch == 0);
                st.prologue
                    .iter()
                    .chain(passes.flat_map(|p| p.pre.iter().chain(&p.post)))
            })
            .copied()
            .collect();
        let other = outside_gemm_weights(s, &outside) + embedding_tables(s, graph, &outside);
        ParamCount {
            per_layer,
            layer_gemms,
            layers,
            other,
            method: if other > 0.0 {
                "layers_and_outside"
            } else {
                "layers_only"
            },
        }
    }
}

/// The `(k, n)` of each GEMM of the first forward layer of `s`, in launch
/// order, or `None` without a forward layer: the one walk that the
/// parameter count ([`ParamCount::per_layer`]) and re-timing (the layer's
/// weight shapes, its weights after an edit) share.
fn first_layer_gemms(s: &Structure) -> Option<Vec<(u64, u64)>> {
    let layer = (s.steps.iter().flat_map(|st| st.passes.iter()))
        .find(|p| p.kind == PassKind::Forward)
        .and_then(|p| p.layers.first())?;
    Some(
        (layer.iter())
            .flat_map(|&u| s.units.units[u as usize].gpu().iter())
            .filter_map(|&t| match s.work[t.idx()] {
                WorkClass::Gemm(sh) => Some((sh.k, sh.n)),
                _ => None,
            })
            .collect(),
    )
}

/// The elements of the weights that the GEMMs of `units` multiply by,
/// each distinct shape once: a weight's forward product and its input
/// gradient share its two sizes, and its weight gradient shows them beside
/// the tokens (`[out, tokens] x [tokens, in]`). An output layer is
/// counted apart from the embedding table even where the two are one
/// tied weight (GPT-2's, Megatron's default): the shapes cannot tell.
fn outside_gemm_weights(s: &Structure, units: &[u32]) -> f64 {
    let tokens = s.config.tokens.unwrap_or(0);
    let mut shapes = rustc_hash::FxHashSet::default();
    for &t in units
        .iter()
        .flat_map(|&u| s.units.units[u as usize].gpu().iter())
    {
        if let WorkClass::Gemm(sh) = s.work[t.idx()] {
            let (x, y) = sh.weight_dims(|v| tokens > 0 && v == tokens);
            shapes.insert((x.min(y), x.max(y)));
        }
    }
    shapes.iter().map(|&(x, y)| x as f64 * y as f64).sum()
}

/// The elements of the embedding tables that `units` look up (the first
/// input of `aten::embedding`, as recorded).
fn embedding_tables(s: &Structure, graph: &Graph, units: &[u32]) -> f64 {
    let mut seen = rustc_hash::FxHashSet::default();
    units
        .iter()
        .flat_map(|&u| s.units.units[u as usize].cpu().iter())
        .flat_map(|&t| graph.scope_chain(t))
        .filter(|&sc| seen.insert(sc))
        .filter_map(|sc| {
            let scope = &graph.scopes[sc.0 as usize];
            (graph.names[scope.name.0 as usize] == "aten::embedding")
                .then_some(scope.input_dims.as_ref())
                .flatten()
        })
        .map(|dims| {
            let table = crate::shapes::sizes(dims, 0);
            if table.len() == 2 {
                (table[0] as f64) * (table[1] as f64)
            } else {
                0.0
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{baseline, inputs, synth};
    use crate::Discovered;

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
        let s = crate::discover(&Graph::default(), &Measured::default(), &ctx);
        let input = Input {
            name: format!("rank{rank}"),
            graph: Graph::default(),
            measured: Measured::default(),
            ctx,
        };
        (input, s)
    }

    /// The ranks kept of `inputs`, given in order.
    fn kept(inputs: Vec<Input>) -> Result<Kept, PredictError> {
        Candidates::discover_all(inputs).keep(&mut Vec::new())
    }

    #[test]
    fn one_rank_stands_for_each_stage() {
        use crate::candidates::{one_rank_per_stage, Summary};
        let entries = |ranks: &[u32]| -> Vec<Option<Discovered>> {
            (ranks.iter())
                .map(|&r| {
                    let (input, structure) = empty(r);
                    Some(Discovered { input, structure })
                })
                .collect()
        };
        let summaries = |ranks: &[u32], stages: &[u32], roles: &[StageRole]| -> Vec<Summary> {
            (ranks.iter().zip(stages).zip(roles))
                .map(|((&rank, &stage), &role)| Summary {
                    name: format!("rank{rank}"),
                    rank,
                    world_size: None,
                    rank_unstated: false,
                    degrees: (1, 1, 2),
                    stage,
                    role,
                    device: None,
                })
                .collect()
        };
        let ranks = [3, 2, 1, 0];
        let roles = [
            StageRole::Last,
            StageRole::First,
            StageRole::Last,
            StageRole::First,
        ];
        let mut notes = Vec::new();
        let k = one_rank_per_stage(
            entries(&ranks),
            &summaries(&ranks, &[1, 0, 1, 0], &roles),
            Default::default(),
            &mut notes,
        );
        // The lowest rank of each stage, in input order.
        let kept_ranks: Vec<u32> = k.inputs.iter().map(|i| i.ctx.rank).collect();
        assert_eq!(kept_ranks, vec![1, 0]);
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
        let mut notes = Vec::new();
        let roles = [StageRole::First, StageRole::Last];
        let k = one_rank_per_stage(
            entries(&[0, 1]),
            &summaries(&[0, 1], &[0, 1], &roles),
            Default::default(),
            &mut notes,
        );
        assert_eq!(k.inputs.len(), 2);
        assert_eq!(k.given, vec![0, 1]);
        assert!(notes.is_empty());
    }

    /// Rank `rank` of the synthesized gpt-tiny job on `layout`, named
    /// after it.
    fn rank_of_job(layout: [usize; 4], rank: usize) -> Input {
        let t = crate::testutil::synth_layers("gpt-tiny", Some(4), layout, rank);
        crate::testutil::input(&t, &format!("rank{rank}"))
    }

    #[test]
    fn ranks_left_out_give_up_their_graph_as_they_come() {
        // TP2 PP2 DP2: ranks 0-3 are stage 0, 4-7 stage 1. Given from the
        // highest rank down, each rank is lower than the one standing for
        // its stage: that one is left out, and one graph per stage is held.
        let layout = [2, 2, 2, 2];
        let mut c = Candidates::new();
        for rank in (0..8).rev() {
            c.push(Discovered::new(rank_of_job(layout, rank)));
            assert!(c.held() <= 2, "{} held after rank {rank}", c.held());
        }
        assert_eq!((c.len(), c.held()), (8, 2));
        let mut notes = Vec::new();
        let k = c.keep(&mut notes).unwrap();
        let names: Vec<&str> = k.inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["rank4", "rank0"]);
        assert_eq!(k.given, vec![3, 7]);
        assert_eq!(k.stages, vec![1, 0]);
        assert_eq!(k.roles, vec![StageRole::Last, StageRole::First]);
        assert_eq!(
            notes,
            vec![
                "6 of 8 inputs left out: one rank per pipeline stage stands for its stage \
                 (rank 4 for stage 1, rank 0 for stage 0)"
            ]
        );
        // The same baseline as of only the two ranks that stand.
        let all = Baseline::new((0..8).rev().map(|r| rank_of_job(layout, r)).collect()).unwrap();
        let two = Baseline::new(vec![rank_of_job(layout, 4), rank_of_job(layout, 0)]).unwrap();
        assert_eq!(all.config, two.config);
        assert_eq!(all.stages, two.stages);
        assert_eq!(all.params, two.params);
        assert_eq!(all.notes[1..], two.notes[..]);
    }

    #[test]
    fn ranks_without_tasks_are_left_out_and_only_they_are_refused() {
        // TP2 PP2 DP2 with rank 0 (given first) and rank 7 (given last)
        // holding no task: the others are predicted, as if only they had
        // been given, and the two are named. Before, the first refused
        // the whole prediction ("nothing to predict from").
        let layout = [2, 2, 2, 2];
        let given = |r: usize| match r {
            0 | 7 => empty(r as u32).0,
            _ => rank_of_job(layout, r),
        };
        let with = Baseline::new((0..8).map(given).collect()).unwrap();
        let without = Baseline::new((1..7).map(|r| rank_of_job(layout, r)).collect()).unwrap();
        let left: Vec<(u32, String)> = (with.left_out.iter())
            .map(|l| (l.rank, l.path.display().to_string()))
            .collect();
        assert_eq!(left, [(0, "rank0".into()), (7, "rank7".into())]);
        assert!(without.left_out.is_empty());
        assert_eq!(with.config, without.config);
        assert_eq!(with.stages, without.stages);
        assert_eq!(with.params, without.params);
        assert_eq!(with.notes, without.notes);
        assert_eq!((with.given_count, without.given_count), (6, 6));
        let names: Vec<&str> = with.inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["rank1", "rank4"]);
        // Positions among every rank given, rank 0 included: a front
        // end's per-file lists are indexed by them.
        assert_eq!(
            (&with.given[..], &without.given[..]),
            (&[1, 4][..], &[0, 3][..])
        );
        // Only ranks without tasks: nothing to predict from, the first
        // named.
        let e = Baseline::new(vec![empty(3).0, empty(5).0]).err().unwrap();
        assert!(
            matches!(&e, PredictError::NoTasks { input } if input == "rank3"),
            "{e}"
        );
    }

    #[test]
    fn lent_ranks_are_copied_only_where_they_stand_for_their_stage() {
        // TP2 PP2 DP2, given lowest first: ranks 0 and 4 stand for the two
        // stages, the six others are left out as they come, never copied.
        let layout = [2, 2, 2, 2];
        let ranks: Vec<Input> = (0..8).map(|r| rank_of_job(layout, r)).collect();
        let mut c = Candidates::new();
        let mut copied = Vec::new();
        for r in &ranks {
            let lent = crate::LentInput {
                name: &r.name,
                graph: &r.graph,
                measured: &r.measured,
                ctx: &r.ctx,
            };
            let structure = crate::discover_lent(&lent);
            c.push_lent(&lent, structure, || {
                copied.push(r.name.clone());
                lent.to_input()
            });
        }
        assert_eq!(copied, ["rank0", "rank4"]);
        assert_eq!((c.len(), c.held()), (8, 2));
        // The baseline of the ranks given whole.
        let lent = Baseline::of(c).unwrap();
        let given = Baseline::new(ranks).unwrap();
        assert_eq!(lent.config, given.config);
        assert_eq!(lent.stages, given.stages);
        assert_eq!(lent.given, given.given);
        assert_eq!(lent.params, given.params);
        assert_eq!(lent.notes, given.notes);
    }

    #[test]
    fn unsettled_ranks_are_held_and_the_lowest_of_each_stage_stands() {
        // PP4 DP2 over four layers: every stage runs one layer per pass,
        // which its own trace cannot tell from the embedding or the loss,
        // so no rank is settled alone and all are held until the end;
        // then the lowest rank of each stage stands for it, as if only
        // those had been given.
        let layout = [1, 4, 2, 2];
        let rank = |r: usize| {
            let t = crate::testutil::synth_layers("gpt-tiny", Some(4), layout, r);
            crate::testutil::input(&t, &format!("rank{r}"))
        };
        let mut c = Candidates::new();
        for r in (0..8).rev() {
            c.push(Discovered::new(rank(r)));
        }
        assert_eq!(c.held(), 8);
        let all = Baseline::of(c).unwrap();
        let names: Vec<&str> = all.inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["rank6", "rank4", "rank2", "rank0"]);
        assert_eq!(all.given, vec![1, 3, 5, 7]);
        assert_eq!(all.stages, vec![3, 2, 1, 0]);
        let lowest = Baseline::new([6, 4, 2, 0].into_iter().map(rank).collect()).unwrap();
        assert_eq!(all.config, lowest.config);
        assert_eq!(all.params, lowest.params);
        assert_eq!(all.roles, lowest.roles);
        let methods = |b: &Baseline| -> Vec<crate::LayerMethod> {
            b.structures.iter().map(|s| s.layer_method).collect()
        };
        assert_eq!(methods(&all), methods(&lowest));
        assert!(all
            .structures
            .iter()
            .all(|s| s.report.structural_edits_blocked.is_none()));
        assert_eq!(all.notes[1..], lowest.notes[..]);
        assert!(
            all.notes[0].starts_with("4 of 8 inputs left out"),
            "{}",
            all.notes[0]
        );
    }

    #[test]
    fn ranks_of_other_jobs_are_refused() {
        let ins = vec![
            crate::testutil::input(&synth("gpt-tiny", 2, 1, 1, 2, 0), "a.json"),
            crate::testutil::input(&synth("gpt-tiny", 1, 1, 1, 2, 0), "b.json"),
        ];
        let e = kept(ins).err().unwrap();
        assert!(matches!(e, PredictError::NotOneJob(_)));
        assert!(!e.is_usage());
        assert_eq!(
            e.to_string(),
            "b.json: parallel degrees tp1 dp1 pp1 differ from a.json's tp2 dp1 pp1 (as found \
             in their collectives): are these ranks of one job?"
        );
        // Also when the first rank was left out: b.json (rank 0 of its
        // stage) stands for the stage a.json (rank 1) is of.
        let ins = vec![
            crate::testutil::input(&synth("gpt-tiny", 1, 1, 2, 2, 1), "a.json"),
            crate::testutil::input(&synth("gpt-tiny", 1, 1, 2, 2, 0), "b.json"),
            crate::testutil::input(&synth("gpt-tiny", 2, 1, 1, 2, 0), "c.json"),
        ];
        let e = kept(ins).err().unwrap();
        assert_eq!(
            e.to_string(),
            "c.json: parallel degrees tp2 dp1 pp1 differ from a.json's tp1 dp2 pp1 (as found \
             in their collectives): are these ranks of one job?"
        );
        assert!(matches!(
            Baseline::new(Vec::new()),
            Err(PredictError::NoInputs)
        ));
    }

    #[test]
    fn two_files_of_one_rank_or_a_rank_outside_the_world_are_refused() {
        // Two runs' rank 0 (the same synthesized rank twice, as two
        // captures of one job would be).
        let ins = vec![
            crate::testutil::input(&synth("gpt-tiny", 1, 1, 2, 2, 0), "a.json"),
            crate::testutil::input(&synth("gpt-tiny", 1, 1, 2, 2, 0), "b.json"),
        ];
        let e = kept(ins).err().unwrap();
        assert!(matches!(e, PredictError::NotOneJob(_)));
        assert!(!e.is_usage());
        assert_eq!(
            e.to_string(),
            "a.json and b.json both claim rank 0: a job takes one file per rank; to compare two \
             runs use `lumos diff a.json b.json`"
        );
        // A rank that records itself outside its world.
        let mut outside = crate::testutil::input(&synth("gpt-tiny", 1, 1, 2, 2, 1), "b.json");
        outside.ctx.rank = 9;
        let ins = vec![
            crate::testutil::input(&synth("gpt-tiny", 1, 1, 2, 2, 0), "a.json"),
            outside,
        ];
        let e = kept(ins).err().unwrap();
        assert_eq!(e.to_string(), "b.json: rank 9 is outside world size 2");
        // One file alone is a job of its own, whatever rank it records.
        let mut alone = crate::testutil::input(&synth("gpt-tiny", 1, 1, 2, 2, 1), "b.json");
        alone.ctx.rank = 9;
        assert!(kept(vec![alone]).is_ok());
    }

    #[test]
    fn stages_and_roles_of_a_pipeline() {
        let k = kept(inputs("gpt-tiny", Some(6), [1, 3, 1, 3])).unwrap();
        assert_eq!(
            k.roles,
            vec![StageRole::First, StageRole::Middle, StageRole::Last]
        );
        assert_eq!(k.stages, vec![0, 1, 2]);
    }

    #[test]
    fn a_stage_with_one_layer_is_discovered_with_another_s_blocks() {
        // Three layers over two stages: the second has one per pass.
        let ins = inputs("gpt-tiny", Some(3), [1, 2, 1, 3]);
        let alone = crate::discover(&ins[1].graph, &ins[1].measured, &ins[1].ctx);
        assert!(alone.report.structural_edits_blocked.is_some());
        let s = kept(ins).unwrap().structures;
        assert_eq!(s[0].layer_method, crate::LayerMethod::ScopePattern);
        assert_eq!(s[1].layer_method, crate::LayerMethod::OtherStage);
        assert_eq!(s[1].config.layers, Some(1));
        assert!(s[1].report.structural_edits_blocked.is_none());
    }

    #[test]
    fn the_gemm_curve_comes_from_the_input_with_most_gemms() {
        let (e, es) = empty(1);
        let Kept {
            inputs: ins,
            structures: s,
            ..
        } = kept(inputs("gpt-tiny", None, [1, 1, 1, 2])).unwrap();
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
        for (dp, method) in [(2, "gradient_bytes"), (1, "layers_and_outside")] {
            let k = kept(inputs("gpt-tiny", None, [1, 1, dp, 2])).unwrap();
            let s = k.structures;
            let graphs: Vec<&Graph> = k.inputs.iter().map(|i| &i.graph).collect();
            let config = Config {
                tp: 1,
                dp: dp as u32,
                pp: 1,
                microbatches: 2,
                layers: 4,
                hidden: 1024,
                ffn: 4096,
                virtual_stages: 1,
                micro_batch: 0,
            };
            let pc = param_count(&s[0], graphs[0], &config);
            assert_eq!((pc.per_layer, pc.layers, pc.method), (per_layer, 4, method));
            // What it counts: the forward layer's QKV, projection and MLP
            // weights, `(k, n)` in launch order, which re-timing reads too.
            assert_eq!(
                pc.layer_gemms,
                [(1024, 3072), (1024, 1024), (1024, 4096), (4096, 1024)]
            );
            if dp > 1 {
                // The embedding and output layer: at least the 51200 x 1024
                // vocabulary.
                assert!(pc.other >= 51200.0 * 1024.0, "{}", pc.other);
                assert_eq!(pc.total(), pc.per_layer * 4.0 + pc.other);
            } else {
                // No gradient reduction: the output layer's GEMM weight and
                // the embedding table the forward pass looks up (tied in
                // the synthesized job, which the shapes cannot tell: counted
                // twice).
                assert_eq!(pc.other, 2.0 * 51200.0 * 1024.0);
            }
        }
    }
}
