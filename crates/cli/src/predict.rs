//! `lumos predict`: predict another training configuration from traces by
//! editing their execution graphs (lumos-predict), and compare it with the
//! measured run and its replay. Also the discovery report that `lumos
//! inspect` shows.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lumos_graph::TaskId;
use lumos_graph::{build, Graph, Measured};
use lumos_models::NetworkModel;
use lumos_predict::{
    discover, network_from_json, network_preset, Baseline, Config, GemmCalibration, Input,
    KernelScale, LinkCalibration, PredictError, Prediction, Source, StructureReport, TraceContext,
};
use lumos_sim::{step_spans, Breakdown, Schedule, TaskTimes};
use lumos_trace::Trace;
use serde::Serialize;

use crate::replay::{us, write_timeline, TraceId};
use crate::usage::usage;

/// `lumos predict` arguments.
#[derive(clap::Args)]
pub struct PredictArgs {
    /// Trace files or directories: one rank, or one rank per pipeline
    /// stage of the same job.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Data-parallel degree (weak scaling).
    #[arg(long)]
    pub dp: Option<u32>,
    /// Pipeline-parallel degree (needs the first and last stages' traces).
    #[arg(long)]
    pub pp: Option<u32>,
    /// Micro-batches per step.
    #[arg(long)]
    pub microbatches: Option<u32>,
    /// Transformer layers in the whole model.
    #[arg(long)]
    pub layers: Option<u32>,
    /// Hidden size (the FFN size follows in proportion unless --ffn is
    /// given).
    #[arg(long)]
    pub hidden: Option<u64>,
    /// FFN (MLP inner) size.
    #[arg(long)]
    pub ffn: Option<u64>,
    /// Tensor-parallel degree.
    #[arg(long)]
    pub tp: Option<u32>,
    /// Kernel speed-up, PATTERN=FACTOR (durations multiplied by FACTOR).
    /// PATTERN is class:gemm, class:attention, class:memory, class:comm,
    /// class:compute, or a substring of kernel names. Repeatable.
    #[arg(long, value_name = "PATTERN=FACTOR")]
    pub scale_kernels: Vec<KernelScale>,
    /// Target network: a GPU preset (a100, h100, h200, b200) or a JSON
    /// file with link bandwidths and latencies.
    #[arg(long, value_name = "PRESET|FILE")]
    pub network: Option<String>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write each predicted stage's timeline as
    /// <name>.predicted.json.gz here (opens in Perfetto).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The discovery report of one trace, for `lumos inspect`.
pub fn structure_report(trace: &Trace, graph: &Graph, measured: &Measured) -> StructureReport {
    let ctx = TraceContext::from_trace(trace, measured);
    discover(graph, measured, &ctx).report
}

/// The human form of a discovery report (a few lines under `inspect`).
pub fn print_structure(r: &StructureReport) {
    let c = &r.config;
    let opt = |x: Option<u32>| x.map_or("?".into(), |v| v.to_string());
    println!(
        "  structure: {} stage (tp {}, pp {}, dp {}); {} micro-batches; {} layers per pass ({}); order {}{}",
        r.stage_role,
        opt(c.tp),
        opt(c.pp),
        opt(c.dp),
        opt(c.microbatches),
        opt(r.layers_per_pass),
        serde_json::to_value(r.layer_method)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        if r.pass_order.is_empty() { "-" } else { &r.pass_order },
        match r.one_f_one_b {
            Some(true) => " (1F1B)",
            Some(false) => " (not 1F1B)",
            None => "",
        }
    );
    if let (Some(h), Some(f)) = (c.hidden, c.ffn) {
        println!(
            "    shapes: hidden {h}, ffn {f}, tokens {}, sequence parallel {}",
            c.tokens.map_or("?".into(), |t| t.to_string()),
            c.sequence_parallel.map_or("?".into(), |b| b.to_string())
        );
    }
    for g in &r.groups {
        println!(
            "    group {:<6} {:<15} size {:<4} {:>6} tasks {:>10.1} MB/step  {:?} ({})",
            g.name,
            g.class.as_str(),
            g.size.map_or("?".into(), |s| s.to_string()),
            g.tasks,
            g.bytes_per_step as f64 / 1e6,
            g.collectives,
            serde_json::to_value(g.confidence)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        );
    }
    for (phase, t) in &r.phases {
        println!(
            "    phase {phase:<10} CPU {:>9.3} ms  GPU {:>9.3} ms per step",
            t.cpu_ms, t.gpu_ms
        );
    }
    if let Some(why) = &r.structural_edits_blocked {
        println!("    structural edits not possible: {why}");
    }
}

#[derive(Serialize)]
struct InputReport {
    path: String,
    rank: u32,
    stage: u32,
    role: String,
    structure: StructureReport,
}

#[derive(Serialize)]
struct StepRow {
    step: String,
    /// Slowest traced stage, measured.
    measured_ms: f64,
    /// Slowest traced stage, replayed.
    replayed_ms: f64,
    /// Slowest predicted stage.
    predicted_ms: f64,
    /// Predicted over replayed, %.
    change_pct: f64,
}

#[derive(Serialize)]
struct BreakdownMs {
    exposed_compute_ms: f64,
    overlapped_ms: f64,
    exposed_comm_ms: f64,
    idle_ms: f64,
    total_ms: f64,
}

impl From<Breakdown> for BreakdownMs {
    fn from(b: Breakdown) -> Self {
        let ms = |ns: i64| ns as f64 / 1e6;
        BreakdownMs {
            exposed_compute_ms: ms(b.exposed_compute_ns),
            overlapped_ms: ms(b.overlapped_ns),
            exposed_comm_ms: ms(b.exposed_comm_ns),
            idle_ms: ms(b.idle_ns),
            total_ms: ms(b.total_ns),
        }
    }
}

#[derive(Serialize)]
struct StageRow {
    stage: u32,
    /// Mean step time, ms.
    step_ms: f64,
    replayed: Option<BreakdownMs>,
    predicted: BreakdownMs,
    /// Edges that could not be re-attached when the stage was built.
    dropped_edges: usize,
}

#[derive(Serialize)]
struct Calibration {
    gemm: GemmCalibration,
    network: Vec<LinkCalibration>,
    network_start: String,
    target_network: Option<String>,
}

#[derive(Serialize)]
struct PredictReport {
    inputs: Vec<InputReport>,
    traced: Config,
    target: Config,
    kernel_scales: Vec<String>,
    steps: Vec<StepRow>,
    mean_measured_ms: f64,
    mean_replayed_ms: f64,
    mean_predicted_ms: f64,
    change_pct: f64,
    stages: Vec<StageRow>,
    /// GPU time per duration source, summed over stages and steps, ms.
    gpu_ms_by_source: Vec<(Source, f64)>,
    /// True when the stages were replayed together, coupled by their
    /// transfers.
    coupled: bool,
    calibration: Calibration,
    assumptions: Vec<String>,
}

fn load(paths: &[PathBuf]) -> Result<(Vec<Input>, Vec<Trace>)> {
    let files = crate::inputs::expand(paths)?;
    let mut inputs = Vec::new();
    let mut traces = Vec::new();
    for r in crate::inputs::read_all(&files) {
        let trace = r?;
        let (graph, measured, _) = build(&trace);
        let ctx = TraceContext::from_trace(&trace, &measured);
        inputs.push(Input {
            name: trace.path.display().to_string(),
            graph,
            measured,
            ctx,
        });
        traces.push(trace);
    }
    Ok((inputs, traces))
}

fn apply<'b>(base: &'b Baseline, a: &PredictArgs) -> Result<Prediction<'b>, PredictError> {
    let mut p = base.identity();
    if let Some(x) = a.pp {
        p = p.with_pp(x)?;
    }
    if let Some(x) = a.microbatches {
        p = p.with_microbatches(x)?;
    }
    if let Some(x) = a.layers {
        p = p.with_layers(x)?;
    }
    if let Some(x) = a.hidden {
        p = p.with_hidden(x)?;
    }
    if let Some(x) = a.ffn {
        p = p.with_ffn(x)?;
    }
    if let Some(x) = a.tp {
        p = p.with_tp(x)?;
    }
    if let Some(x) = a.dp {
        p = p.with_dp(x)?;
    }
    for k in &a.scale_kernels {
        p = p.with_kernel_scale(k.clone())?;
    }
    if let Some(n) = &a.network {
        let (net, what) = network_from_arg(n)?;
        p = p.with_network(net, what)?;
    }
    Ok(p)
}

/// The `--network` argument: a GPU preset name, or a JSON file, read here
/// (the library does no file I/O) and named in its errors.
fn network_from_arg(arg: &str) -> Result<(NetworkModel, String), PredictError> {
    let path = Path::new(arg);
    if !path.is_file() {
        return network_preset(arg);
    }
    let text = std::fs::read_to_string(path).map_err(|e| PredictError::InvalidNetwork {
        name: Some(arg.to_owned()),
        problem: e.to_string(),
    })?;
    network_from_json(&text, arg)
}

/// Runs `lumos predict`.
pub fn run(a: &PredictArgs) -> Result<bool> {
    let (inputs, traces) = load(&a.paths)?;
    let base = Baseline::new(inputs).map_err(anyhow::Error::msg)?;
    let pred = apply(&base, a).map_err(anyhow::Error::msg)?;
    let identity = base.identity();
    let replayed = identity
        .simulate()
        .map_err(anyhow::Error::msg)
        .context("replay of the traced graphs")?;
    let outcome = pred.simulate().map_err(anyhow::Error::msg)?;

    // Measured step times, slowest traced stage per step.
    let mut measured_steps: Vec<i64> = Vec::new();
    let mut step_names: Vec<String> = Vec::new();
    for inp in &base.inputs {
        let spans = step_spans(
            &inp.graph,
            &inp.measured.tasks,
            Some(&inp.measured.step_annotations),
        );
        for (k, sp) in spans.iter().enumerate() {
            let d = sp.end_ns - sp.start_ns;
            match measured_steps.get_mut(k) {
                Some(x) => *x = (*x).max(d),
                None => {
                    measured_steps.push(d);
                    step_names.push(
                        inp.graph
                            .steps
                            .get(k)
                            .map_or("window".into(), |s| s.name.clone()),
                    );
                }
            }
        }
    }
    let ms = |ns: i64| ns as f64 / 1e6;
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
                change_pct: if r > 0 {
                    (p - r) as f64 / r as f64 * 100.0
                } else {
                    0.0
                },
            }
        })
        .collect();
    let mean = |v: &[i64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<i64>() as f64 / v.len() as f64 / 1e6
        }
    };
    let (mm, mr, mp) = (
        mean(&measured_steps),
        mean(&replayed.step_ns),
        mean(&outcome.step_ns),
    );
    let stages: Vec<StageRow> = outcome
        .stages
        .iter()
        .zip(&pred.stages)
        .map(|(o, st)| StageRow {
            stage: o.stage,
            step_ms: mean(&o.step_ns),
            replayed: replayed
                .stages
                .iter()
                .find(|r| r.stage == o.stage && pred.stages.len() == replayed.stages.len())
                .map(|r| r.breakdown.into()),
            predicted: o.breakdown.into(),
            dropped_edges: st.dropped_edges,
        })
        .collect();
    let mut gpu_by_source: std::collections::BTreeMap<Source, i64> = Default::default();
    for (t, s) in outcome.job.graph.tasks.iter().zip(&outcome.job.source) {
        if t.kind.is_gpu() {
            *gpu_by_source.entry(*s).or_default() += t.duration_ns;
        }
    }
    let report = PredictReport {
        inputs: base
            .inputs
            .iter()
            .zip(&base.structures)
            .zip(base.stages.iter().zip(&base.roles))
            .map(|((i, s), (&stage, role))| InputReport {
                path: i.name.clone(),
                rank: i.ctx.rank,
                stage,
                role: format!("{role:?}").to_ascii_lowercase(),
                structure: s.report.clone(),
            })
            .collect(),
        traced: base.config,
        target: pred.target.config,
        kernel_scales: a
            .scale_kernels
            .iter()
            .map(|k| format!("{:?} x{}", k.select, k.factor))
            .collect(),
        steps,
        mean_measured_ms: mm,
        mean_replayed_ms: mr,
        mean_predicted_ms: mp,
        change_pct: if mr > 0.0 {
            (mp - mr) / mr * 100.0
        } else {
            0.0
        },
        stages,
        gpu_ms_by_source: gpu_by_source
            .into_iter()
            .map(|(s, ns)| (s, ns as f64 / 1e6))
            .collect(),
        coupled: outcome.job.coupled,
        calibration: Calibration {
            gemm: base.gemm.clone(),
            network: base.network.links.clone(),
            network_start: base.network.start.clone(),
            target_network: pred.target.network.as_ref().map(|(_, w)| w.clone()),
        },
        assumptions: pred.notes.clone(),
    };
    if let Some(dir) = &a.out {
        write_predicted(&pred, &outcome, &traces, dir)?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_human(&report);
    }
    Ok(true)
}

/// One stage's tasks in a joint schedule (a blocking call starts when it
/// was issued, as in `lumos replay`).
struct StageTimes<'a> {
    schedule: &'a Schedule,
    offset: u32,
    len: usize,
}

impl TaskTimes for StageTimes<'_> {
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

/// Writes each predicted stage's timeline next to where its trace would
/// be, on the clock of the trace it was built from.
fn write_predicted(
    pred: &Prediction,
    outcome: &lumos_predict::Outcome,
    traces: &[Trace],
    dir: &Path,
) -> Result<()> {
    let base = pred.base;
    let job = &outcome.job;
    let origin_min = base
        .inputs
        .iter()
        .map(|i| i.ctx.clock_origin_ns)
        .min()
        .unwrap_or(0);
    for (k, st) in pred.stages.iter().enumerate() {
        let part = job.parts[k].clone();
        let times = StageTimes {
            schedule: &outcome.schedule,
            offset: part.start,
            len: (part.end - part.start) as usize,
        };
        let trace = &traces[st.primary];
        let inp = &base.inputs[st.primary];
        let base_time = trace.meta.base_time_ns;
        // Coupled stages share the job timeline, which starts at the
        // earliest traced window; a stage replayed alone starts at its own.
        let origin = if job.coupled {
            origin_min - base_time.unwrap_or(0)
        } else {
            inp.measured.origin_ns
        };
        let stem = format!(
            "{}{}",
            trace
                .path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("trace")
                .trim_end_matches(".gz")
                .trim_end_matches(".json"),
            if pred.stages.len() != base.inputs.len() || st.stage != base.stages[st.primary] {
                format!("-stage{}", st.stage)
            } else {
                String::new()
            }
        );
        let path = PathBuf::from(format!("{stem}.json"));
        let id = TraceId {
            path: &path,
            base_time_ns: base_time,
            rank: trace.meta.rank,
        };
        let args = |i: usize, a: &mut lumos_trace::Fields| {
            let (src, t) = st.origin[i];
            let traced = base.inputs[src as usize].graph.tasks[t.idx()].duration_ns;
            a.str("source", st.source[i].as_str())
                .float("traced_dur_us", us(traced));
        };
        write_timeline(&id, &st.graph, origin, &times, &args, "predicted", dir)?;
    }
    Ok(())
}

fn print_human(r: &PredictReport) {
    println!("predict from {} trace(s):", r.inputs.len());
    for i in &r.inputs {
        println!(
            "  {} (rank {}, {} stage {}; {} layers per pass, order {})",
            i.path,
            i.rank,
            i.role,
            i.stage,
            i.structure
                .layers_per_pass
                .map_or("?".into(), |l| l.to_string()),
            if i.structure.pass_order.is_empty() {
                "-"
            } else {
                &i.structure.pass_order
            }
        );
    }
    println!("  traced: {}", r.traced);
    println!("  target: {}", r.target);
    for k in &r.kernel_scales {
        println!("          kernels {k}");
    }
    if let Some(n) = &r.calibration.target_network {
        println!("          network {n}");
    }
    println!(
        "  {:<18} {:>12} {:>12} {:>12} {:>9}",
        "step", "measured ms", "replayed ms", "predicted ms", "change"
    );
    for s in &r.steps {
        println!(
            "  {:<18} {:>12.3} {:>12.3} {:>12.3} {:>8.2}%",
            s.step, s.measured_ms, s.replayed_ms, s.predicted_ms, s.change_pct
        );
    }
    println!(
        "  {:<18} {:>12.3} {:>12.3} {:>12.3} {:>8.2}%",
        "mean", r.mean_measured_ms, r.mean_replayed_ms, r.mean_predicted_ms, r.change_pct
    );
    println!("  breakdown per stage (ms)   exposed compute   overlap   exposed comm      idle");
    for s in &r.stages {
        for (label, b) in [
            ("replayed", s.replayed.as_ref()),
            ("predicted", Some(&s.predicted)),
        ] {
            if let Some(b) = b {
                println!(
                    "    stage {:<2} {:<10} {:>15.3} {:>9.3} {:>14.3} {:>9.3}",
                    s.stage,
                    label,
                    b.exposed_compute_ms,
                    b.overlapped_ms,
                    b.exposed_comm_ms,
                    b.idle_ms
                );
            }
        }
    }
    let parts: Vec<String> = r
        .gpu_ms_by_source
        .iter()
        .map(|(s, ms)| format!("{} {ms:.1} ms", s.as_str()))
        .collect();
    println!("  GPU time by duration source: {}", parts.join(", "));
    if r.coupled {
        println!(
            "  stages replayed together: transfers and gradient-norm reductions as rendezvous"
        );
    }
    let g = &r.calibration.gemm;
    println!(
        "  GEMM curve: {} GEMMs, max efficiency {:.3}, half at {:.2} GFLOP, mean error {:.1}%{}",
        g.samples,
        g.max_efficiency,
        g.half_gflops,
        g.mean_abs_error_pct,
        if g.fitted {
            ""
        } else {
            " (preset, not fitted)"
        }
    );
    for l in &r.calibration.network {
        println!(
            "  network {:<10} {:>3} collectives, {:>7.1} GB/s effective, latency x{:.2}, mean error {:.1}%{}",
            l.link,
            l.samples,
            l.effective_gbps,
            l.latency_scale,
            l.mean_abs_error_pct,
            if l.calibrated {
                String::new()
            } else {
                format!(" (not calibrated: {} values)", r.calibration.network_start)
            }
        );
    }
    let dropped: usize = r.stages.iter().map(|s| s.dropped_edges).sum();
    if dropped > 0 {
        println!("  {dropped} dependencies could not be re-attached in rebuilt stages");
    }
    for n in &r.assumptions {
        println!("  assumption: {n}");
    }
}

/// Rejects flag combinations that cannot mean anything.
pub fn check_args(a: &PredictArgs) -> Result<()> {
    for (what, v) in [
        ("--dp", a.dp),
        ("--pp", a.pp),
        ("--tp", a.tp),
        ("--microbatches", a.microbatches),
        ("--layers", a.layers),
    ] {
        if v == Some(0) {
            return Err(usage(format!("{what} must be at least 1")));
        }
    }
    if a.hidden == Some(0) || a.ffn == Some(0) {
        return Err(usage("--hidden and --ffn must be at least 1"));
    }
    // A name that is not a file must be a preset; a file's problems are
    // bad input, found when it is read.
    if let Some(n) = a.network.as_deref().filter(|n| !Path::new(n).is_file()) {
        network_from_arg(n).map_err(|e| usage(format!("--network: {e}")))?;
    }
    Ok(())
}
