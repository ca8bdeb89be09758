//! Two runs compared (`lumos diff A B`): per step, per operator and per
//! kernel, what was added, removed, or got slower or faster beyond a
//! threshold, sorted by impact.
//!
//! A and B are traces: two captures, or a capture and its replay (`lumos
//! replay --out`) or prediction (`lumos predict --out`), which are traces
//! too. Steps are matched by position among the selected steps; operators
//! by name and, when both traces record `Input Dims`, shapes; GPU tasks by
//! name. Operators are the CPU tasks (the leaves of the call tree and
//! runtime calls) and, when both traces record them (replayed and
//! predicted timelines keep only the leaves), the operators and
//! annotations enclosing them, whose times include their children's
//! (`inclusive`). Times of operators and kernels are per step (the
//! selection's total over its number of steps), so captures of different
//! lengths compare.

use std::collections::HashMap;

use lumos_graph::{build, Graph, Measured, TaskId, TaskKind};
use lumos_trace::{Category, Input, InputDims, Trace};
use serde::Serialize;

use crate::analysis::{analyze, step_names, Analyses, AnalysisOptions, StepSelection};
use crate::units::us;
use crate::ReportError;

/// What a diff compares and what counts as a change.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffOptions {
    /// The steps of each run to compare (the same selection on both).
    pub steps: StepSelection,
    /// A change smaller than this (per step) is no change, ns.
    pub min_change_ns: i64,
    /// A change smaller than this (in % of A's time) is no change.
    pub min_change_pct: f64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            steps: StepSelection::all(),
            min_change_ns: 10_000,
            min_change_pct: 5.0,
        }
    }
}

/// One run of a diff: its graph, measured times, and the shapes of its
/// CPU operators.
#[derive(Debug)]
pub struct DiffInput {
    /// The trace, as given.
    pub path: String,
    /// Its graph.
    pub graph: Graph,
    /// Its measured times.
    pub measured: Measured,
    /// Per task, the `Input Dims` of a CPU operator, written out
    /// (`[2048, 1024], [1024]`).
    pub shapes: Vec<Option<String>>,
}

impl DiffInput {
    /// The run `trace` recorded.
    pub fn of(trace: &Trace) -> DiffInput {
        let (graph, measured, _) = build(trace);
        let shapes = task_shapes(trace, &graph, &measured);
        DiffInput {
            path: trace.path.display().to_string(),
            graph,
            measured,
            shapes,
        }
    }
}

/// `Input Dims` as PyTorch prints them, `?` for what is not a tensor.
fn shape_text(d: &InputDims) -> String {
    let inputs: Vec<String> = d
        .iter()
        .map(|i| match i {
            Input::Tensor(s) => format!("{s:?}"),
            Input::Other => "?".into(),
        })
        .collect();
    inputs.join(", ")
}

/// The shapes of the graph's CPU operator tasks, found by their event's
/// name and start.
fn task_shapes(trace: &Trace, graph: &Graph, measured: &Measured) -> Vec<Option<String>> {
    let mut by_start: HashMap<(i64, &str), &InputDims> = HashMap::new();
    for e in &trace.events {
        if e.category != Category::CpuOp {
            continue;
        }
        if let Some(d) = e.extra.as_ref().and_then(|x| x.input_dims.as_ref()) {
            by_start.insert((e.ts_ns, trace.name(e)), d);
        }
    }
    graph
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if t.kind != TaskKind::CpuOp || by_start.is_empty() {
                return None;
            }
            let ts = measured.tasks[i]
                .start_ns
                .saturating_add(measured.origin_ns);
            by_start
                .get(&(ts, graph.name(TaskId(i as u32))))
                .map(|d| shape_text(d))
        })
        .collect()
}

/// `lumos diff --json`.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    /// Run A.
    pub a: DiffSide,
    /// Run B.
    pub b: DiffSide,
    /// The threshold on a change per step, us.
    pub min_change_us: f64,
    /// The threshold on a change, % of A.
    pub min_change_pct: f64,
    /// Whether operators were matched by shape as well as name (both runs
    /// record `Input Dims`).
    pub by_shape: bool,
    /// Whether enclosing operators and annotations were compared (both
    /// runs record them).
    pub with_scopes: bool,
    /// Every step of either selection, matched by position.
    pub steps: Vec<StepDiff>,
    /// The GPU breakdown per step (means over each selection).
    pub breakdown: Vec<MetricDiff>,
    /// Operators added, removed, slower or faster, most impact first.
    pub operators: Vec<RowDiff>,
    /// GPU tasks (by name) added, removed, slower or faster, most impact
    /// first.
    pub kernels: Vec<RowDiff>,
    /// Operators present in both within the thresholds.
    pub unchanged_operators: usize,
    /// GPU task names present in both within the thresholds.
    pub unchanged_kernels: usize,
}

/// One run of a diff, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct DiffSide {
    /// The trace.
    pub path: String,
    /// Its selected steps.
    pub steps: usize,
    /// Their mean length, us.
    pub mean_step_us: f64,
}

/// One step position of a diff.
#[derive(Debug, Clone, Serialize)]
pub struct StepDiff {
    /// Position among the selected steps.
    pub position: usize,
    /// A's step there (null past A's last).
    pub a_step: Option<String>,
    /// B's step there.
    pub b_step: Option<String>,
    /// A's length, us.
    pub a_us: Option<f64>,
    /// B's length, us.
    pub b_us: Option<f64>,
    /// `b_us - a_us`.
    pub delta_us: Option<f64>,
    /// `delta_us` in % of `a_us`.
    pub delta_pct: Option<f64>,
    /// `slower`, `faster`, `same` (within the thresholds), `added` (only
    /// in B) or `removed` (only in A).
    pub status: &'static str,
}

/// One quantity of the breakdown, per step, in both runs.
#[derive(Debug, Clone, Serialize)]
pub struct MetricDiff {
    /// `step`, `exposed_compute`, `overlapped`, `exposed_comm`, `idle`,
    /// `idle_host_wait`, `idle_kernel_gap`, `idle_other`.
    pub metric: &'static str,
    /// A's mean per step, us.
    pub a_us: f64,
    /// B's mean per step, us.
    pub b_us: f64,
    /// `b_us - a_us`.
    pub delta_us: f64,
    /// `delta_us` in % of `a_us` (null when `a_us` is 0).
    pub delta_pct: Option<f64>,
}

/// An operator or GPU task name that changed.
#[derive(Debug, Clone, Serialize)]
pub struct RowDiff {
    /// Its name.
    pub name: String,
    /// Its shapes (operators matched by shape).
    pub shape: Option<String>,
    /// Its task kind (`cpu_op`, `runtime`, `annotation`, `kernel`,
    /// `memcpy`, ...).
    pub kind: &'static str,
    /// True for an operator or annotation with children: its time
    /// includes theirs.
    pub inclusive: bool,
    /// `added`, `removed`, `slower` or `faster`.
    pub status: &'static str,
    /// Runs per step in A.
    pub a_count: f64,
    /// Runs per step in B.
    pub b_count: f64,
    /// Time per step in A, us.
    pub a_us: f64,
    /// Time per step in B, us.
    pub b_us: f64,
    /// `b_us - a_us`: the impact rows are sorted by (largest first).
    pub delta_us: f64,
    /// `delta_us` in % of `a_us` (null when added).
    pub delta_pct: Option<f64>,
}

/// Per step of one run: the analyses and the operator totals.
struct Side<'a> {
    input: &'a DiffInput,
    analyses: Analyses,
    /// Steps selected (at least 1).
    n: f64,
}

impl<'a> Side<'a> {
    fn new(input: &'a DiffInput, opts: &DiffOptions) -> Result<Side<'a>, ReportError> {
        let positions = opts
            .steps
            .resolve(&step_names(&input.graph))
            .map_err(|problem| ReportError::Steps {
                path: input.path.clone(),
                problem,
            })?;
        let m = &input.measured;
        let analyses = analyze(
            &input.graph,
            &m.tasks,
            Some(&m.step_annotations),
            &positions,
            &AnalysisOptions::default(),
        );
        let n = analyses.steps.len().max(1) as f64;
        Ok(Side { input, analyses, n })
    }

    /// The CPU tasks of the selected steps, and with `scopes` the
    /// operators and annotations starting in them.
    fn operators(&self, by_shape: bool, scopes: bool) -> Rows {
        let g = &self.input.graph;
        let m = &self.input.measured;
        let mut out = Rows::new();
        let mut add = |name: &str, shape: Option<String>, row: Row| {
            let e = out.entry((name.to_owned(), shape)).or_insert(Row {
                count: 0,
                ns: 0,
                ..row
            });
            e.count += row.count;
            e.ns = e.ns.saturating_add(row.ns);
        };
        let own: Vec<TaskId> = if g.steps.is_empty() {
            (0..g.tasks.len() as u32).map(TaskId).collect()
        } else {
            self.selected()
                .flat_map(|i| g.steps[i].tasks.iter().copied())
                .collect()
        };
        for t in own {
            let task = g.task(t);
            if task.kind.is_gpu() {
                continue;
            }
            let shape = by_shape
                .then(|| self.input.shapes[t.idx()].clone())
                .flatten();
            let row = Row {
                kind: task.kind.as_str(),
                inclusive: false,
                count: 1,
                ns: m.tasks[t.idx()].len_ns(),
            };
            add(g.name(t), shape, row);
        }
        if !scopes {
            return out;
        }
        let spans: Vec<lumos_graph::Span> = if g.steps.is_empty() {
            vec![lumos_sim::whole_span(&m.tasks)]
        } else {
            self.selected().map(|i| m.step_annotations[i]).collect()
        };
        for (sc, span) in g.scopes.iter().zip(&m.scopes) {
            let name = g.names[sc.name.0 as usize].as_str();
            // Step annotations are the steps themselves, numbered apart
            // in each run.
            if is_step(name)
                || !spans
                    .iter()
                    .any(|s| s.start_ns <= span.start_ns && span.start_ns < s.end_ns)
            {
                continue;
            }
            let shape = by_shape
                .then(|| sc.input_dims.as_ref().map(shape_text))
                .flatten();
            let row = Row {
                kind: if sc.annotation {
                    "annotation"
                } else {
                    "cpu_op"
                },
                inclusive: true,
                count: 1,
                ns: span.len_ns(),
            };
            add(name, shape, row);
        }
        out
    }

    /// The positions of the selected steps.
    fn selected(&self) -> impl Iterator<Item = usize> + '_ {
        self.analyses.steps.iter().filter_map(|s| s.index)
    }

    fn kernels(&self) -> Rows {
        self.analyses
            .kernels
            .iter()
            .map(|k| {
                let row = Row {
                    kind: k.kind,
                    inclusive: false,
                    count: k.count,
                    ns: (k.total_us * 1e3).round() as i64,
                };
                ((k.name.clone(), None), row)
            })
            .collect()
    }
}

/// Compares run `b` with run `a`.
pub fn diff(a: &DiffInput, b: &DiffInput, opts: &DiffOptions) -> Result<DiffReport, ReportError> {
    // A run of no task measures nothing: compared, it read as every step
    // and operator gone ("-100.00% faster"), with exit code 0.
    for i in [a, b] {
        ReportError::refuse_empty(&i.graph, || i.path.clone())?;
    }
    let (sa, sb) = (Side::new(a, opts)?, Side::new(b, opts)?);
    let has_shapes = |i: &DiffInput| i.shapes.iter().any(Option::is_some);
    let by_shape = has_shapes(a) && has_shapes(b);
    let with_scopes = has_scopes(&a.graph) && has_scopes(&b.graph);
    let (operators, unchanged_operators) = row_diffs(
        &sa,
        &sb,
        sa.operators(by_shape, with_scopes),
        sb.operators(by_shape, with_scopes),
        opts,
    );
    let (kernels, unchanged_kernels) = row_diffs(&sa, &sb, sa.kernels(), sb.kernels(), opts);
    Ok(DiffReport {
        a: side(&sa),
        b: side(&sb),
        min_change_us: us(opts.min_change_ns),
        min_change_pct: opts.min_change_pct,
        by_shape,
        with_scopes,
        steps: step_diffs(&sa.analyses, &sb.analyses, opts),
        breakdown: metric_diffs(&sa, &sb),
        operators,
        kernels,
        unchanged_operators,
        unchanged_kernels,
    })
}

/// Whether `g` records operators or annotations enclosing its tasks
/// besides its steps (a replayed timeline has only those).
fn has_scopes(g: &Graph) -> bool {
    g.scopes
        .iter()
        .any(|s| !is_step(&g.names[s.name.0 as usize]))
}

/// A step's annotation.
fn is_step(name: &str) -> bool {
    name.starts_with("ProfilerStep#")
}

fn side(s: &Side) -> DiffSide {
    DiffSide {
        path: s.input.path.clone(),
        steps: s.analyses.steps.len(),
        mean_step_us: s.analyses.total.span_us / s.n,
    }
}

/// Whether a change from `a` to `b` (us) passes both thresholds.
fn changed(a: f64, b: f64, opts: &DiffOptions) -> bool {
    let d = (b - a).abs();
    d >= us(opts.min_change_ns) && (a == 0.0 || d / a * 100.0 >= opts.min_change_pct)
}

fn delta_pct(a: f64, b: f64) -> Option<f64> {
    (a != 0.0).then(|| (b - a) / a * 100.0)
}

fn step_diffs(a: &Analyses, b: &Analyses, opts: &DiffOptions) -> Vec<StepDiff> {
    (0..a.steps.len().max(b.steps.len()))
        .map(|k| {
            let (x, y) = (a.steps.get(k), b.steps.get(k));
            let (au, bu) = (x.map(|s| s.span_us), y.map(|s| s.span_us));
            let status = match (au, bu) {
                (Some(p), Some(q)) if changed(p, q, opts) => {
                    if q > p {
                        "slower"
                    } else {
                        "faster"
                    }
                }
                (Some(_), Some(_)) => "same",
                (None, _) => "added",
                (_, None) => "removed",
            };
            StepDiff {
                position: k,
                a_step: x.map(|s| s.step.clone()),
                b_step: y.map(|s| s.step.clone()),
                a_us: au,
                b_us: bu,
                delta_us: au.zip(bu).map(|(p, q)| q - p),
                delta_pct: au.zip(bu).and_then(|(p, q)| delta_pct(p, q)),
                status,
            }
        })
        .collect()
}

fn metric_diffs(a: &Side, b: &Side) -> Vec<MetricDiff> {
    let (ta, tb) = (&a.analyses.total, &b.analyses.total);
    [
        ("step", ta.span_us, tb.span_us),
        (
            "exposed_compute",
            ta.exposed_compute_us,
            tb.exposed_compute_us,
        ),
        ("overlapped", ta.overlapped_us, tb.overlapped_us),
        ("exposed_comm", ta.exposed_comm_us, tb.exposed_comm_us),
        ("idle", ta.idle_us, tb.idle_us),
        ("idle_host_wait", ta.idle_host_wait_us, tb.idle_host_wait_us),
        (
            "idle_kernel_gap",
            ta.idle_kernel_gap_us,
            tb.idle_kernel_gap_us,
        ),
        ("idle_other", ta.idle_other_us, tb.idle_other_us),
    ]
    .into_iter()
    .map(|(metric, x, y)| {
        let (x, y) = (x / a.n, y / b.n);
        MetricDiff {
            metric,
            a_us: x,
            b_us: y,
            delta_us: y - x,
            delta_pct: delta_pct(x, y),
        }
    })
    .collect()
}

/// One operator or kernel of one run: its kind, runs and summed time.
#[derive(Debug, Clone, Copy)]
struct Row {
    kind: &'static str,
    inclusive: bool,
    count: usize,
    ns: i64,
}

type Rows = HashMap<(String, Option<String>), Row>;

/// The rows that changed, most impact first, and how many did not.
fn row_diffs(
    a: &Side,
    b: &Side,
    ra: Rows,
    mut rb: Rows,
    opts: &DiffOptions,
) -> (Vec<RowDiff>, usize) {
    let mut out = Vec::new();
    let mut unchanged = 0;
    let mut push = |key: (String, Option<String>), x: Option<Row>, y: Option<Row>| {
        let Some(first) = x.or(y) else {
            return;
        };
        let per_step =
            |r: Option<Row>, n: f64| r.map_or((0.0, 0.0), |r| (r.count as f64 / n, us(r.ns) / n));
        let (ac, au) = per_step(x, a.n);
        let (bc, bu) = per_step(y, b.n);
        let status = match (x, y) {
            (None, _) => "added",
            (_, None) => "removed",
            _ if bu > au => "slower",
            _ => "faster",
        };
        let significant = match (x, y) {
            (Some(_), Some(_)) => changed(au, bu, opts),
            _ => (bu - au).abs() >= us(opts.min_change_ns),
        };
        if !significant {
            if x.is_some() && y.is_some() {
                unchanged += 1;
            }
            return;
        }
        out.push(RowDiff {
            name: key.0,
            shape: key.1,
            kind: first.kind,
            inclusive: first.inclusive,
            status,
            a_count: ac,
            b_count: bc,
            a_us: au,
            b_us: bu,
            delta_us: bu - au,
            delta_pct: delta_pct(au, bu),
        });
    };
    for (key, x) in ra {
        let y = rb.remove(&key);
        push(key, Some(x), y);
    }
    for (key, y) in rb {
        push(key, None, Some(y));
    }
    out.sort_by(|p, q| {
        q.delta_us
            .abs()
            .total_cmp(&p.delta_us.abs())
            .then_with(|| p.name.cmp(&q.name))
            .then_with(|| p.shape.cmp(&q.shape))
    });
    (out, unchanged)
}
