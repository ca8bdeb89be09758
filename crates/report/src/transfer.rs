//! `--durations-from`: one recording's graph replayed with the durations
//! measured in another, next to the other's measured steps.

use lumos_graph::{Graph, Measured, ProcId, ProcKind};
use lumos_predict::{transfer_durations, Input, MatchedTime, Transfer};
use lumos_sim::{simulate, step_spans, SimOptions};
use serde::Serialize;

use crate::units::{err_pct, pct_of, us};
use crate::ReportError;

/// `lumos replay A --durations-from B` (and the Python package's
/// `durations_from`) of two files, each a trace or an `.lgraph` file: both
/// read in parallel as a prediction reads its input
/// ([`crate::prediction_input`]: a trace straight into its graph's build,
/// an `.lgraph` file's stored graph), then [`transfer_replay`]. One
/// function for every front end, so that they accept the same files and
/// give the same report. `read` is called once both are read, before the
/// replays (a front end's progress). A file that cannot be read is
/// [`ReportError::Input`]; B sharing too little with A is a usage error,
/// as in [`transfer_replay`].
pub fn transfer_files(
    a: &std::path::Path,
    b: &std::path::Path,
    opts: &SimOptions,
    read: &(dyn Fn() + Sync),
) -> Result<(TransferReport, Transfer), ReportError> {
    let load = |p: &std::path::Path| crate::prediction_input(p).map(|f| f.input);
    let (ia, ib) = rayon::join(|| load(a), || load(b));
    let (ia, ib) = (ia?, ib?);
    read();
    transfer_replay(recording(&ia), recording(&ib), opts)
}

/// A prediction's input as a transfer's recording.
fn recording(i: &Input) -> Recording<'_> {
    Recording {
        path: &i.name,
        graph: &i.graph,
        measured: &i.measured,
    }
}

/// One recording: what it is called, its graph and its measured times.
#[derive(Debug, Clone, Copy)]
pub struct Recording<'a> {
    /// The file it came from, as given.
    pub path: &'a str,
    /// Its graph.
    pub graph: &'a Graph,
    /// Its measured times.
    pub measured: &'a Measured,
}

/// `lumos replay A --durations-from B --json`: A's graph re-timed with
/// B's measured durations and replayed, against B's measured (and
/// replayed) steps.
#[derive(Debug, Clone, Serialize)]
pub struct TransferReport {
    /// A: the recording whose graph is replayed.
    pub path: String,
    /// B: the recording whose durations are used.
    pub durations_from: String,
    /// What of A found a counterpart in B.
    pub matched: TransferMatch,
    /// A's steps, each paired by position with B's when B has steps.
    pub steps: Vec<TransferStep>,
    /// Means over the steps paired with B's; absent when B (or A) has no
    /// steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<TransferMean>,
    /// What the prediction kept of A.
    pub notes: Vec<String>,
}

/// `lumos predict A --durations-from B --json`: the prediction from A's
/// graph re-timed with B's durations, and the transfer itself (A's graph
/// replayed with B's durations beside B's steps).
#[derive(Debug, Clone, Serialize)]
pub struct TransferPrediction {
    /// The prediction, as without `--durations-from` (its replayed run is
    /// the re-timed graph's).
    #[serde(flatten)]
    pub prediction: crate::PredictReport,
    /// The transfer.
    pub durations_from: TransferReport,
}

/// How much of A was matched in B.
#[derive(Debug, Clone, Serialize)]
pub struct TransferMatch {
    /// A's CPU time (task durations) matched, fraction; null when A's CPU
    /// tasks have no time (none, or none with a duration).
    pub cpu_share: Option<f64>,
    /// A's GPU time matched, fraction; null when A's GPU tasks have no
    /// time.
    pub gpu_share: Option<f64>,
    /// A's CPU and GPU time together matched, fraction; below
    /// [`lumos_predict::MIN_MATCHED_SHARE`], or without any time (null),
    /// the transfer is refused.
    pub share: Option<f64>,
    /// A's CPU tasks matched.
    pub cpu_tasks_matched: usize,
    /// A's CPU tasks.
    pub cpu_tasks: usize,
    /// A's GPU tasks matched.
    pub gpu_tasks_matched: usize,
    /// A's GPU tasks.
    pub gpu_tasks: usize,
    /// A's edges that took the latency of B's edge.
    pub edges_retimed: usize,
    /// A's edges.
    pub edges: usize,
    /// A's threads and the B thread each was paired with.
    pub threads: Vec<ThreadPairReport>,
}

/// A thread of A paired with a thread of B.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadPairReport {
    /// A's thread, `pid/tid`.
    pub a: String,
    /// B's thread, `pid/tid`.
    pub b: String,
    /// Tasks on A's thread.
    pub a_tasks: usize,
    /// Tasks on B's thread.
    pub b_tasks: usize,
    /// Tasks aligned.
    pub matched: usize,
}

/// One of A's steps: measured, predicted with B's durations, and B's step
/// in the same position.
#[derive(Debug, Clone, Serialize)]
pub struct TransferStep {
    /// A's step name (`whole window` when A has no steps).
    pub name: String,
    /// A's measured step.
    pub a_measured_us: f64,
    /// A's graph replayed with B's durations.
    pub predicted_us: f64,
    /// B's step in the same position, when B has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<BStep>,
}

/// B's step beside a prediction.
#[derive(Debug, Clone, Serialize)]
pub struct BStep {
    /// Its name.
    pub name: String,
    /// Measured.
    pub measured_us: f64,
    /// B's own graph replayed.
    pub replayed_us: f64,
    /// (predicted - B measured) / B measured, %; `None` when B's measured
    /// step has no length (no relative error exists).
    pub error_pct: Option<f64>,
    /// (predicted - B replayed) / B replayed, %: the transfer's error apart
    /// from the replay's own; `None` when B's replayed step has no length.
    pub replay_error_pct: Option<f64>,
}

/// Means over the paired steps.
#[derive(Debug, Clone, Serialize)]
pub struct TransferMean {
    /// Steps paired.
    pub steps: usize,
    /// A's measured step.
    pub a_measured_us: f64,
    /// The prediction.
    pub predicted_us: f64,
    /// B's measured step.
    pub b_measured_us: f64,
    /// B's replayed step.
    pub b_replayed_us: f64,
    /// (predicted - B measured) / B measured, %; `None` when B's mean
    /// measured step has no length.
    pub error_pct: Option<f64>,
    /// (predicted - B replayed) / B replayed, %; `None` when B's mean
    /// replayed step has no length.
    pub replay_error_pct: Option<f64>,
    /// (A measured - B measured) / B measured, %: how far A alone is from B,
    /// what the transfer has to close; `None` as `error_pct`.
    pub a_error_pct: Option<f64>,
}

/// Re-times A's graph with B's durations, replays it, and replays B for
/// comparison. A usage error ([`ReportError::Predict`] of an
/// [`lumos_predict::PredictError::is_usage`] error) when B shares too
/// little with A.
pub fn transfer_replay(
    a: Recording<'_>,
    b: Recording<'_>,
    opts: &SimOptions,
) -> Result<(TransferReport, Transfer), ReportError> {
    ReportError::refuse_empty(a.graph, || a.path.to_owned())?;
    ReportError::refuse_empty(b.graph, || b.path.to_owned())?;
    let t = transfer_durations(a.graph, b.graph);
    t.check(a.path, b.path).map_err(ReportError::Predict)?;
    let replay = |g: &Graph, path: &str| {
        simulate(g, opts).map_err(|source| ReportError::Replay {
            path: path.to_owned(),
            source,
        })
    };
    let predicted = step_spans(&t.graph, &replay(&t.graph, a.path)?, None);
    let a_measured = step_spans(
        a.graph,
        &a.measured.tasks,
        Some(&a.measured.step_annotations),
    );
    let b_steps = if b.graph.steps.is_empty() || a.graph.steps.is_empty() {
        Vec::new()
    } else {
        let measured = step_spans(
            b.graph,
            &b.measured.tasks,
            Some(&b.measured.step_annotations),
        );
        let replayed = step_spans(b.graph, &replay(b.graph, b.path)?, None);
        b.graph
            .steps
            .iter()
            .zip(measured.iter().zip(&replayed))
            .map(|(s, (m, r))| (s.name.clone(), m.len_ns(), r.len_ns()))
            .collect()
    };
    let steps: Vec<TransferStep> = (0..a_measured.len())
        .map(|i| TransferStep {
            name: a
                .graph
                .steps
                .get(i)
                .map_or("whole window".into(), |s| s.name.clone()),
            a_measured_us: us(a_measured[i].len_ns()),
            predicted_us: us(predicted[i].len_ns()),
            b: b_steps.get(i).map(|(name, m, r)| BStep {
                name: name.clone(),
                measured_us: us(*m),
                replayed_us: us(*r),
                error_pct: err_pct(*m, predicted[i].len_ns()),
                replay_error_pct: err_pct(*r, predicted[i].len_ns()),
            }),
        })
        .collect();
    let report = TransferReport {
        path: a.path.to_owned(),
        durations_from: b.path.to_owned(),
        matched: matched_report(&t, a.graph, b.graph),
        mean: mean(&steps),
        notes: notes(&t),
        steps,
    };
    Ok((report, t))
}

/// `lumos predict A --durations-from B`: the one input `a` re-timed in
/// place with B's durations ([`transfer_replay`], replayed as is), and
/// given B's hardware: B's durations were measured on B's GPU and network,
/// so the GPU preset (peak, GEMM efficiency), the presets of links the
/// calibration cannot fit and the node size that decides which link a
/// group uses are B's too ([`lumos_predict::TraceContext::take_hardware_of`]).
/// A keeps its graph, configuration, ranks and groups. The report's notes
/// say which hardware the prediction took. Its replays stop once `cancel`
/// is set ([`SimOptions::cancel`]), as the prediction's own do
/// ([`lumos_predict::Baseline::cancel`]).
pub fn retime_input(
    a: &mut Input,
    b: &Input,
    cancel: Option<lumos_sim::Cancel>,
) -> Result<TransferReport, ReportError> {
    let (mut report, t) = transfer_replay(
        recording(a),
        recording(b),
        &SimOptions {
            cancel,
            ..SimOptions::default()
        },
    )?;
    a.graph = t.graph;
    report.notes.push(hardware_note(&a.ctx, &b.ctx));
    a.ctx.take_hardware_of(&b.ctx);
    Ok(report)
}

/// What [`retime_input`] takes of B's hardware, against what A recorded.
fn hardware_note(a: &lumos_predict::TraceContext, b: &lumos_predict::TraceContext) -> String {
    let gpu = |c: &lumos_predict::TraceContext| {
        format!(
            "GPU {}, {} GPUs per node",
            c.device_name
                .as_deref()
                .map_or("unrecorded".into(), |n| format!("{n:?}")),
            c.gpus_per_node
        )
    };
    let (a_hw, b_hw) = (gpu(a), gpu(b));
    let a_said = if a_hw == b_hw {
        "A's as well".to_owned()
    } else {
        format!("A: {a_hw}")
    };
    format!(
        "the prediction is on B's hardware, where its durations were measured: {b_hw} ({a_said}), \
         whose presets (peak, GEMM efficiency, links the calibration cannot fit) and node size \
         it uses, calibrated on B's durations; A gives the graph, the configuration, the ranks \
         and their groups"
    )
}

/// The matched shares and thread pairs.
fn matched_report(t: &Transfer, a: &Graph, b: &Graph) -> TransferMatch {
    let thread = |g: &Graph, p: ProcId| match g.processors[p.idx()].kind {
        ProcKind::Thread { pid, tid } => format!("{pid}/{tid}"),
        ProcKind::Stream { device, stream } => format!("stream {device}/{stream}"),
    };
    TransferMatch {
        cpu_share: t.cpu.share(),
        gpu_share: t.gpu.share(),
        share: t.matched_share(),
        cpu_tasks_matched: t.cpu.tasks_matched,
        cpu_tasks: t.cpu.tasks,
        gpu_tasks_matched: t.gpu.tasks_matched,
        gpu_tasks: t.gpu.tasks,
        edges_retimed: t.edges_retimed,
        edges: t.edges,
        threads: t
            .threads
            .iter()
            .map(|p| ThreadPairReport {
                a: thread(a, p.a),
                b: thread(b, p.b),
                a_tasks: p.a_tasks,
                b_tasks: p.b_tasks,
                matched: p.matched,
            })
            .collect(),
    }
}

/// Means over the steps that have a B step.
fn mean(steps: &[TransferStep]) -> Option<TransferMean> {
    let paired: Vec<(&TransferStep, &BStep)> = steps
        .iter()
        .filter_map(|s| s.b.as_ref().map(|b| (s, b)))
        .collect();
    if paired.is_empty() {
        return None;
    }
    let n = paired.len() as f64;
    let avg = |f: &dyn Fn(&(&TransferStep, &BStep)) -> f64| paired.iter().map(f).sum::<f64>() / n;
    let a = avg(&|(s, _)| s.a_measured_us);
    let p = avg(&|(s, _)| s.predicted_us);
    let bm = avg(&|(_, b)| b.measured_us);
    let br = avg(&|(_, b)| b.replayed_us);
    Some(TransferMean {
        steps: paired.len(),
        a_measured_us: a,
        predicted_us: p,
        b_measured_us: bm,
        b_replayed_us: br,
        error_pct: pct_of(p, bm),
        replay_error_pct: pct_of(p, br),
        a_error_pct: pct_of(a, bm),
    })
}

/// What the prediction kept of A, said plainly.
fn notes(t: &Transfer) -> Vec<String> {
    let unmatched = |m: &MatchedTime, what: &str| {
        let n = m.tasks - m.tasks_matched;
        // Tasks of no duration are no share of A's time (it said 0.0%).
        let share = m.share().map_or_else(
            || "none of them with a duration".to_owned(),
            |s| format!("{:.1}% of A's {what} time", (1.0 - s) * 100.0),
        );
        (n > 0).then(|| {
            format!("{n} {what} tasks ({share}) found no counterpart in B and keep A's durations")
        })
    };
    let mut notes: Vec<String> = [unmatched(&t.cpu, "CPU"), unmatched(&t.gpu, "GPU")]
        .into_iter()
        .flatten()
        .collect();
    notes.push(format!(
        "{} of A's {} dependencies took B's latency; the rest, GPU-to-CPU waits and the first \
         task of each thread keep A's",
        t.edges_retimed, t.edges
    ));
    notes.push(
        "steps are paired by position; B's steps beyond A's (or A's beyond B's) are not compared"
            .into(),
    );
    notes
}
