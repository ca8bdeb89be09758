//! A prediction compared with the measured run and its replay (`lumos
//! predict`): per step, per stage, where the predicted durations came from,
//! and the calibration of the models. The predictor's configuration and
//! calibration types are mirrored here as serializable values.

use std::fmt;

use lumos_predict as lp;
use lumos_predict::{Baseline, Outcome, Prediction};
use lumos_sim::{step_spans, Breakdown};
use serde::Serialize;

use crate::analysis::{analyze, Analyses, AnalysisOptions};
use crate::job::LeftOutReport;
use crate::structure::StructureReport;
use crate::units::{ms, pct_of};
use crate::ReportError;

/// `lumos predict --json`.
#[derive(Debug, Clone, Serialize)]
pub struct PredictReport {
    /// The traces predicted from, one per traced stage.
    pub inputs: Vec<InputReport>,
    /// How many traces were given: more than `inputs` when several ranks
    /// of a stage were, and the lowest stands for it.
    pub inputs_given: usize,
    /// Traces given that were left out of the prediction, and why, as
    /// `lumos replay --json`'s `job.left_out` says of a job's ranks: those
    /// holding no task (`no_tasks`), which `inputs_given` does not count;
    /// only when there are some.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOutReport>,
    /// What the reader and the graph's build warned of each file read
    /// that warned, in the order given, as `lumos replay` of the file
    /// warns ([`crate::PredictionFile::warnings`]); only when some did.
    /// Filled by the front end that read the files (`lumos predict`):
    /// [`predict`] sees graphs, not files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_warnings: Vec<InputWarnings>,
    /// The configuration traced, and whether its parallel degrees were
    /// guessed.
    pub traced: TracedConfig,
    /// The configuration predicted.
    pub target: Config,
    /// The kernel speed-ups asked for.
    pub kernel_scales: Vec<String>,
    /// Per step.
    pub steps: Vec<StepRow>,
    /// Mean over steps of the measured step (slowest traced stage).
    pub mean_measured_ms: f64,
    /// The same, replayed.
    pub mean_replayed_ms: f64,
    /// The same, predicted (slowest predicted stage).
    pub mean_predicted_ms: f64,
    /// Predicted over replayed, %; `None` (JSON null) when the mean
    /// replayed step has no length: no relative change exists.
    pub change_pct: Option<f64>,
    /// Whether the predicted steps are steady, and the step they settle
    /// to; `None` with fewer than three steps.
    pub steadiness: Option<SteadinessReport>,
    /// Per predicted stage.
    pub stages: Vec<StageRow>,
    /// GPU time per duration source (`measured`, `scaled`, `modelled`),
    /// summed over stages and steps, ms.
    pub gpu_ms_by_source: Vec<(&'static str, f64)>,
    /// True when the stages were replayed together, coupled by their
    /// transfers.
    pub coupled: bool,
    /// How the models were fitted to the traces.
    pub calibration: Calibration,
    /// What the prediction assumed.
    pub assumptions: Vec<String>,
    /// How far the prediction can be trusted.
    pub confidence: ConfidenceReport,
}

/// [`PredictionConfidence`](lumos_predict::PredictionConfidence) in report
/// units.
#[derive(Debug, Clone, Serialize)]
pub struct ConfidenceReport {
    /// `high`, `medium` or `low`.
    pub verdict: &'static str,
    /// Why it is not high, gravest first (empty for high).
    pub reasons: Vec<String>,
    /// Predicted GPU time from measured durations, %; null without
    /// predicted GPU time (as the next two: no share of nothing).
    pub measured_gpu_pct: Option<f64>,
    /// From measured durations scaled by a model or a factor, %.
    pub scaled_gpu_pct: Option<f64>,
    /// From a model alone, %.
    pub modelled_gpu_pct: Option<f64>,
    /// Every duration model of the traces, used by this prediction or not.
    pub models: Vec<ModelFitReport>,
    /// Per predicted step, the share of its critical path (the slowest
    /// stage's) placed by inferred dependencies, %; null for a step
    /// whose path has no length.
    pub inferred_critical_path_pct: Vec<Option<f64>>,
    /// The largest of them, %; null when none has a length.
    pub max_inferred_critical_path_pct: Option<f64>,
    /// What the prediction extrapolates to beyond the traces.
    pub extrapolations: Vec<String>,
    /// The re-timed process groups whose class discovery only guessed,
    /// each with the rule it rests on (each makes the verdict low).
    pub guessed_groups: Vec<String>,
    /// Communication kernels launched before the capture on a stream of a
    /// re-timed group that could not be tied to a collective, kept at
    /// their traced durations (each makes the verdict at most medium).
    pub untied_collectives: Vec<String>,
}

/// One duration model's fit (mirrors [`lumos_predict::ModelFit`]).
#[derive(Debug, Clone, Serialize)]
pub struct ModelFitReport {
    /// `gemm`, `network intra_node` or `network inter_node`.
    pub model: String,
    /// Whether the prediction re-timed work with it.
    pub used: bool,
    /// False when the traces could not calibrate it (preset values).
    pub calibrated: bool,
    /// Kernels or collectives it was fitted on.
    pub samples: usize,
    /// Mean |model - measured| / measured over them, %; null when it was
    /// fitted on none (no error to state).
    pub mean_abs_error_pct: Option<f64>,
}

impl From<&lp::PredictionConfidence> for ConfidenceReport {
    fn from(c: &lp::PredictionConfidence) -> ConfidenceReport {
        let gpu = c.gpu_time.of_time();
        ConfidenceReport {
            verdict: crate::structure::confidence(c.level),
            reasons: c.reasons.clone(),
            measured_gpu_pct: gpu.map(|g| g.measured * 100.0),
            scaled_gpu_pct: gpu.map(|g| g.scaled * 100.0),
            modelled_gpu_pct: gpu.map(|g| g.modelled * 100.0),
            models: c
                .models
                .iter()
                .map(|m| ModelFitReport {
                    model: m.model.clone(),
                    used: m.used,
                    calibrated: m.calibrated,
                    samples: m.samples,
                    mean_abs_error_pct: m.mean_abs_error_pct,
                })
                .collect(),
            inferred_critical_path_pct: c
                .inferred_path
                .iter()
                .map(|x| x.map(|x| x * 100.0))
                .collect(),
            max_inferred_critical_path_pct: c.worst_inferred_path().map(|x| x * 100.0),
            extrapolations: c.extrapolations.clone(),
            guessed_groups: c.guessed_groups.clone(),
            untied_collectives: c.untied_collectives.clone(),
        }
    }
}

/// [`Steadiness`](lumos_predict::Steadiness) in report units.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SteadinessReport {
    /// The step a longer run settles to, ms: the larger of the median
    /// periods between consecutive predicted step ends and between
    /// consecutive step starts (steps start as often as they end in a
    /// steady loop).
    pub steady_step_ms: f64,
    /// The same for the replay of the traces, ms (0 with fewer than three
    /// steps): what the steady state's change is measured against.
    pub replayed_steady_step_ms: f64,
    /// The largest deviation of a predicted step from the median step, in
    /// % of the steady-state step.
    pub worst_deviation_pct: f64,
    /// The same deviation in the replay of the traces, %: their noise;
    /// null when the replay has no steady-state step
    /// (`replayed_steady_step_ms` 0).
    pub noise_pct: Option<f64>,
    /// True when the predicted steps grow or shrink beyond noise: their
    /// mean is over a ramp, and `steady_step_ms` is the figure to use.
    pub drifting: bool,
}

/// What one file read for a prediction warned.
#[derive(Debug, Clone, Serialize)]
pub struct InputWarnings {
    /// The file, as given.
    pub path: String,
    /// Its warnings, as `lumos replay` of it states them.
    pub warnings: Vec<String>,
}

/// One trace predicted from.
#[derive(Debug, Clone, Serialize)]
pub struct InputReport {
    /// The trace, as given.
    pub path: String,
    /// Its rank.
    pub rank: u32,
    /// Its pipeline stage.
    pub stage: u32,
    /// `first`, `middle`, `last` or `only`.
    pub role: String,
    /// What discovery found in it.
    pub structure: StructureReport,
}

/// One step, measured, replayed and predicted.
#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    /// The step's name (or `step <k>` beyond the traced steps).
    pub step: String,
    /// Slowest traced stage, measured.
    pub measured_ms: f64,
    /// Slowest traced stage, replayed.
    pub replayed_ms: f64,
    /// Slowest predicted stage.
    pub predicted_ms: f64,
    /// Predicted over replayed, %; `None` (JSON null) when the replayed
    /// step has no length (or there is none: a step beyond the traced
    /// ones).
    pub change_pct: Option<f64>,
    /// How much the GPU work the step launched changed, ms: its GPU
    /// tasks' durations ([`Job::step_work_ns`](lumos_predict::Job::step_work_ns):
    /// what the replay runs each for before it waits, a coupled transfer
    /// its modelled transfer time) summed over every predicted stage, less
    /// the same over every traced stage (coupled alike when the prediction
    /// couples its stages); without steps, the window's, every GPU task;
    /// null for a step beyond the traced ones. A step changes by less
    /// than this where the work ran in slack (what set the step's end did
    /// not wait for it, or waited longer for something else), by as much
    /// where the work is on the step's critical path: `--dp 16` on the
    /// recsys rank adds 1.544 ms of all-reduce to each of its 6 steps,
    /// and 3 steps lengthen by it while 3 do not move. The time the
    /// replay makes a communication kernel wait for its peers is not
    /// work: a pipeline rebuilt deeper (the synthetic gpt-small at `--pp
    /// 4` from 2) adds waits to its receives and next to no work. A
    /// measured communication kernel counts its traced duration, the
    /// waits it had in the trace included, on both sides alike: they
    /// cancel where it is kept or re-timed (traced plus the modelled
    /// change), and leave with it where the prediction models it alone
    /// (a coupled transfer, a collective of a group of one).
    pub gpu_work_change_ms: Option<f64>,
}

/// Where a stage's GPU time went, ms.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BreakdownMs {
    /// Compute not overlapped by communication.
    pub exposed_compute_ms: f64,
    /// Compute and communication at once.
    pub overlapped_ms: f64,
    /// Communication not overlapped by compute.
    pub exposed_comm_ms: f64,
    /// No GPU task at all.
    pub idle_ms: f64,
    /// The window.
    pub total_ms: f64,
}

impl From<Breakdown> for BreakdownMs {
    fn from(b: Breakdown) -> Self {
        BreakdownMs {
            exposed_compute_ms: ms(b.exposed_compute_ns),
            overlapped_ms: ms(b.overlapped_ns),
            exposed_comm_ms: ms(b.exposed_comm_ns),
            idle_ms: ms(b.idle_ns),
            total_ms: ms(b.total_ns),
        }
    }
}

/// One predicted stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageRow {
    /// Its index in the new pipeline.
    pub stage: u32,
    /// Mean step time, predicted, ms.
    pub step_ms: f64,
    /// The traced stage's mean step time, replayed, ms, when the pipeline
    /// keeps its stages (as `replayed`).
    pub replayed_step_ms: Option<f64>,
    /// The traced stage's replayed breakdown, when the pipeline keeps its
    /// stages.
    pub replayed: Option<BreakdownMs>,
    /// The predicted breakdown.
    pub predicted: BreakdownMs,
    /// Edges that could not be re-attached when the stage was built.
    pub dropped_edges: usize,
    /// The analyses of the predicted times, over every step of the stage.
    pub analysis: Analyses,
}

/// How the models were fitted to the traces.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// The GEMM efficiency curve.
    pub gemm: GemmCalibration,
    /// Per link class.
    pub network: Vec<LinkCalibration>,
    /// The preset or file the network model started from.
    pub network_start: String,
    /// The network predicted for (`--network`), if another.
    pub target_network: Option<String>,
}

/// The training configuration of a whole job (mirrors
/// [`lumos_predict::Config`]; displayed as it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Config {
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Data-parallel degree.
    pub dp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
    /// Micro-batches per step.
    pub microbatches: u32,
    /// Transformer layers in the whole model; 0 where the traces told
    /// none (`null` in JSON).
    #[serde(serialize_with = "unknown_as_null")]
    pub layers: u32,
    /// Hidden size; 0 where the traces told none (`null` in JSON).
    #[serde(serialize_with = "unknown_as_null")]
    pub hidden: u64,
    /// FFN (MLP inner) size; 0 where the traces told none (`null` in
    /// JSON).
    #[serde(serialize_with = "unknown_as_null")]
    pub ffn: u64,
    /// Model chunks per stage (virtual pipeline stages) of the interleaved
    /// 1F1B schedule; left out for the plain schedule (1).
    #[serde(skip_serializing_if = "plain_schedule")]
    pub virtual_stages: u32,
    /// Sequences per micro-batch; 0 where the traces told none (`null` in
    /// JSON).
    #[serde(serialize_with = "unknown_as_null")]
    pub micro_batch: u64,
}

/// The traced configuration of `lumos predict --json` (`traced`): the
/// configuration's keys, and `degrees_guessed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TracedConfig {
    /// The configuration traced.
    #[serde(flatten)]
    pub config: Config,
    /// Whether discovery guessed a traced input's parallel degrees (no
    /// process group the trace lists gives them: a trace without
    /// `pg_config`), each input's `structure.config.degrees_guessed`
    /// saying from what; an edit of a guessed degree lowers the
    /// prediction's confidence a level.
    pub degrees_guessed: bool,
}

/// A size the traces did not tell (0, as the text table's `-`) as `null`:
/// a 0 in JSON would read as a model of no layers.
fn unknown_as_null<T, S>(v: &T, s: S) -> Result<S::Ok, S::Error>
where
    T: Copy + Into<u64>,
    S: serde::Serializer,
{
    match (*v).into() {
        0 => s.serialize_none(),
        n => s.serialize_some(&n),
    }
}

/// Whether `v` model chunks per stage is the plain 1F1B schedule.
fn plain_schedule(v: &u32) -> bool {
    *v <= 1
}

impl From<lp::Config> for Config {
    fn from(c: lp::Config) -> Config {
        Config {
            tp: c.tp,
            dp: c.dp,
            pp: c.pp,
            microbatches: c.microbatches,
            layers: c.layers,
            hidden: c.hidden,
            ffn: c.ffn,
            virtual_stages: c.virtual_stages,
            micro_batch: c.micro_batch,
        }
    }
}

impl From<Config> for lp::Config {
    fn from(c: Config) -> lp::Config {
        lp::Config {
            tp: c.tp,
            dp: c.dp,
            pp: c.pp,
            microbatches: c.microbatches,
            layers: c.layers,
            hidden: c.hidden,
            ffn: c.ffn,
            virtual_stages: c.virtual_stages,
            micro_batch: c.micro_batch,
        }
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        lp::Config::from(*self).fmt(f)
    }
}

/// The GEMM curve fitted to a trace's GEMMs (mirrors
/// [`lumos_predict::GemmCalibration`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GemmCalibration {
    /// Peak used, TFLOP/s (only absolute times depend on it).
    pub peak_tflops: f64,
    /// Fitted fraction of peak that large GEMMs reach.
    pub max_efficiency: f64,
    /// Fitted FLOPs at half that efficiency.
    pub half_gflops: f64,
    /// GEMM kernels with shapes used.
    pub samples: usize,
    /// Mean |model - measured| / measured over those measured with a
    /// length, %; null when there is none (no GEMM matched: a 0% would
    /// read as a perfect fit).
    pub mean_abs_error_pct: Option<f64>,
    /// False when the fit failed and the preset curve is used.
    pub fitted: bool,
    /// GPU preset the peak came from.
    pub gpu: String,
    /// True when the trace's GPU is a known one; false when the preset is
    /// H100's for lack of a better one (low confidence).
    pub gpu_known: bool,
    /// How the GPU was recognised, or why not.
    pub gpu_source: String,
    /// How re-timed GEMMs get their durations: `fitted_curve`,
    /// `preset_curve` or `flop_ratio` (the curve errs by more than
    /// `max_error_pct`).
    pub method: &'static str,
    /// The fit error limit, %.
    pub max_error_pct: f64,
}

impl From<&lp::GemmCalibration> for GemmCalibration {
    fn from(g: &lp::GemmCalibration) -> GemmCalibration {
        GemmCalibration {
            peak_tflops: g.peak_tflops,
            max_efficiency: g.max_efficiency,
            half_gflops: g.half_gflops,
            samples: g.samples,
            mean_abs_error_pct: g.mean_abs_error_pct,
            fitted: g.fitted,
            gpu: g.gpu.clone(),
            gpu_known: g.gpu_known,
            gpu_source: g.gpu_source.clone(),
            method: g.method,
            max_error_pct: g.max_error_pct,
        }
    }
}

/// One link class's calibration (mirrors
/// [`lumos_predict::LinkCalibration`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkCalibration {
    /// `intra_node` or `inter_node`.
    pub link: &'static str,
    /// Points fitted: the (kind, bytes, group) buckets of the collectives
    /// fitted on (per (kind, group) for a latency-only fit), whose count
    /// is `collectives`; not a count of collectives.
    pub samples: usize,
    /// Effective bandwidth (bandwidth x efficiency), GB/s, after the fit.
    pub effective_gbps: f64,
    /// Factor applied to the preset's latencies.
    pub latency_scale: f64,
    /// Mean |model - measured| / measured over the samples, %; null
    /// without samples.
    pub mean_abs_error_pct: Option<f64>,
    /// True when the bandwidth was calibrated on the trace.
    pub calibrated: bool,
    /// How: `alpha_beta`, `one_factor`, `bandwidth_only`, `latency_only`
    /// (no message size recorded) or `preset`.
    pub method: &'static str,
    /// Collective kernels attributed to this link.
    pub collectives: usize,
    /// Of those, the ones without a recorded message size.
    pub unsized_collectives: usize,
    /// True when the trace's evidence changed this link's model.
    pub latency_calibrated: bool,
}

impl From<&lp::LinkCalibration> for LinkCalibration {
    fn from(l: &lp::LinkCalibration) -> LinkCalibration {
        LinkCalibration {
            link: l.link,
            samples: l.samples,
            effective_gbps: l.effective_gbps,
            latency_scale: l.latency_scale,
            mean_abs_error_pct: l.mean_abs_error_pct,
            calibrated: l.calibrated,
            method: l.method,
            collectives: l.collectives,
            unsized_collectives: l.unsized_collectives,
            latency_calibrated: l.latency_calibrated,
        }
    }
}

/// Replays the traced graphs (the identity prediction) and `pred`, and
/// compares them with the measurement. The prediction's outcome comes back
/// too, for its timelines ([`Timeline::predicted`](crate::Timeline::predicted)).
pub fn predict<'p>(
    base: &Baseline,
    pred: &'p Prediction<'_>,
) -> Result<(PredictReport, Outcome<'p>), ReportError> {
    // The report reads the traced replay's steps and stages only: its joint
    // graph and schedule (with several stages a copy of every traced graph,
    // and a time for each task) and the identity prediction's tags are
    // freed before the prediction, which holds its own, is simulated (on a
    // 1 GB rank, about a quarter of `lumos predict`'s peak before one
    // stage's joint graph was its own).
    // Either replay's failure names the inputs, as a replay names its
    // trace.
    let files = || {
        (base.inputs.iter().map(|i| i.name.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let identity = base.identity();
    let mut replayed = (identity.simulate())
        .map_err(|source| ReportError::TracedReplay {
            files: files(),
            source,
        })?
        .steps_only();
    // A prediction whose stages are replayed together runs its transfers
    // for modelled times, where the traced replay (stages apart) runs each
    // receive for its traced span, the wait for the other stage included:
    // the traced work is counted with the same yardstick, the traced
    // stages' coupled durations, summed over each stage's own graph (a
    // coupled joint graph of the traced job, a copy of every stage's, cost
    // a 16-stage job 0.3 to 0.4 s for these sums alone).
    if pred.stages.len() > 1 && !pred.is_identity() && identity.stages.len() > 1 {
        let work = identity.coupled_step_work_ns();
        for (stage, w) in replayed.stages.iter_mut().zip(work) {
            stage.step_gpu_ns = w;
        }
    }
    drop(identity);
    let outcome = pred
        .simulate()
        .map_err(|source| ReportError::PredictedReplay {
            files: files(),
            source,
        })?;
    let report = predict_report(base, pred, &replayed, &outcome);
    Ok((report, outcome))
}

/// The GPU work of step `k` over every stage of `outcome`, ns (0 where a
/// stage has no such step).
fn step_gpu_ns(outcome: &Outcome, k: usize) -> i64 {
    (outcome.stages.iter())
        .filter_map(|s| s.step_gpu_ns.get(k))
        .fold(0i64, |a, &b| a.saturating_add(b))
}

/// The report of `pred` replayed as `outcome`, `replayed` being the
/// identity prediction's outcome, of which only the steps and the stages
/// are read.
pub fn predict_report(
    base: &Baseline,
    pred: &Prediction,
    replayed: &Outcome,
    outcome: &Outcome,
) -> PredictReport {
    let (measured_steps, step_names) = measured_steps(base);
    let steps: Vec<StepRow> = (0..outcome.step_ns.len().max(measured_steps.len()))
        .map(|k| {
            let m = measured_steps.get(k).copied().unwrap_or(0);
            let r = replayed.step_ns.get(k).copied().unwrap_or(0);
            let p = outcome.step_ns.get(k).copied().unwrap_or(0);
            StepRow {
                step: step_names
                    .get(k)
                    .cloned()
                    .unwrap_or_else(|| format!("step {k}")),
                measured_ms: ms(m),
                replayed_ms: ms(r),
                predicted_ms: ms(p),
                // Nothing replayed to change from: no change (0% would
                // read as none).
                change_pct: (r > 0).then(|| (p - r) as f64 / r as f64 * 100.0),
                gpu_work_change_ms: (k < replayed.step_ns.len())
                    .then(|| ms(step_gpu_ns(outcome, k).saturating_sub(step_gpu_ns(replayed, k)))),
            }
        })
        .collect();
    let steadiness = outcome.steadiness(replayed);
    let (mm, mr, mp) = (
        mean_ms(&measured_steps),
        mean_ms(&replayed.step_ns),
        mean_ms(&outcome.step_ns),
    );
    PredictReport {
        inputs: input_reports(base),
        inputs_given: base.given_count,
        left_out: base.left_out.iter().map(LeftOutReport::of).collect(),
        input_warnings: Vec::new(),
        traced: TracedConfig {
            config: base.config.into(),
            degrees_guessed: (base.structures.iter()).any(|s| s.config.degrees_guessed.is_some()),
        },
        target: pred.target.config.into(),
        kernel_scales: pred.target.scales.iter().map(ToString::to_string).collect(),
        steps,
        mean_measured_ms: mm,
        mean_replayed_ms: mr,
        mean_predicted_ms: mp,
        change_pct: pct_of(mp, mr),
        steadiness: steadiness.map(|s| SteadinessReport {
            steady_step_ms: ms(s.steady_step_ns),
            replayed_steady_step_ms: ms(s.replayed_steady_step_ns),
            worst_deviation_pct: s.worst_deviation * 100.0,
            noise_pct: s.noise.map(|n| n * 100.0),
            drifting: s.drifting,
        }),
        stages: stage_rows(pred, replayed, outcome),
        gpu_ms_by_source: gpu_ms_by_source(outcome),
        coupled: outcome.job.coupled,
        calibration: Calibration {
            gemm: (&base.gemm).into(),
            network: base.network.links.iter().map(Into::into).collect(),
            network_start: base.network.start.clone(),
            target_network: pred.target.network.as_ref().map(|(_, w)| w.clone()),
        },
        assumptions: assumptions(pred, outcome, replayed),
        confidence: (&pred.confidence(outcome, steadiness)).into(),
    }
}

/// The prediction's notes, the launch queue it was replayed with, and
/// why the mean step and the steady-state step disagree where they do
/// (`Outcome::span_note`).
fn assumptions(pred: &Prediction, outcome: &Outcome, replayed: &Outcome) -> Vec<String> {
    let mut out = pred.notes.clone();
    out.push(match &outcome.launch_queue {
        Some(q) => q.describe(),
        None => "launch queue not modelled: its waits could not be honoured in this graph's \
                 launch order, so a CPU may run arbitrarily far ahead of its GPU"
            .to_string(),
    });
    out.extend(outcome.span_note(replayed));
    out
}

/// The mean of step lengths, ms (0 without steps).
fn mean_ms(v: &[i64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<i64>() as f64 / v.len() as f64 / 1e6
    }
}

/// Measured step lengths, the slowest traced stage's per step, and the
/// steps' names.
fn measured_steps(base: &Baseline) -> (Vec<i64>, Vec<String>) {
    let mut steps: Vec<i64> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for inp in &base.inputs {
        let spans = step_spans(
            &inp.graph,
            &inp.measured.tasks,
            Some(&inp.measured.step_annotations),
        );
        for (k, sp) in spans.iter().enumerate() {
            let d = sp.end_ns - sp.start_ns;
            match steps.get_mut(k) {
                Some(x) => *x = (*x).max(d),
                None => {
                    steps.push(d);
                    names.push(
                        inp.graph
                            .steps
                            .get(k)
                            .map_or("window".into(), |s| s.name.clone()),
                    );
                }
            }
        }
    }
    (steps, names)
}

fn input_reports(base: &Baseline) -> Vec<InputReport> {
    base.inputs
        .iter()
        .zip(&base.structures)
        .zip(base.stages.iter().zip(&base.roles))
        .map(|((i, s), (&stage, role))| InputReport {
            path: i.name.clone(),
            rank: i.ctx.rank,
            stage,
            role: format!("{role:?}").to_ascii_lowercase(),
            structure: (&s.report).into(),
        })
        .collect()
}

fn stage_rows(pred: &Prediction, replayed: &Outcome, outcome: &Outcome) -> Vec<StageRow> {
    outcome
        .stages
        .iter()
        .zip(&pred.stages)
        .enumerate()
        .map(|(k, (o, st))| {
            let traced = (replayed.stages.iter())
                .find(|r| r.stage == o.stage && pred.stages.len() == replayed.stages.len());
            StageRow {
                stage: o.stage,
                step_ms: mean_ms(&o.step_ns),
                replayed_step_ms: traced.map(|r| mean_ms(&r.step_ns)),
                replayed: traced.map(|r| r.breakdown.into()),
                predicted: o.breakdown.into(),
                dropped_edges: st.dropped_edges,
                analysis: stage_analysis(outcome, k, &st.graph),
            }
        })
        .collect()
}

/// The analyses of predicted stage `k` (its graph `graph`) at its times in
/// the joint schedule.
fn stage_analysis(outcome: &Outcome, k: usize, graph: &lumos_graph::Graph) -> Analyses {
    let part = &outcome.job.parts[k];
    let times = lumos_sim::ScheduleSlice {
        schedule: &outcome.schedule,
        offset: part.start,
        len: (part.end - part.start) as usize,
    };
    let all: Vec<usize> = (0..graph.steps.len()).collect();
    analyze(graph, &times, None, &all, &AnalysisOptions::default())
}

fn gpu_ms_by_source(outcome: &Outcome) -> Vec<(&'static str, f64)> {
    (outcome.job.gpu_time_by_source())
        .into_iter()
        .map(|(s, ns)| (s.as_str(), ns as f64 / 1e6))
        .collect()
}
