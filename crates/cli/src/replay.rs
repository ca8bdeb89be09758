//! `lumos replay`: simulate each trace's graph and compare with the
//! measurement.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use lumos_graph::{build, Graph, Measured, ProcKind, Span};
use lumos_sim::{
    annotation_spans, breakdown, critical_path_summary, gpu_busy_timeline, simulate, step_spans,
    whole_span, Breakdown, CriticalPathSummary, SimOptions, TaskTimes,
};
use lumos_trace::Trace;
use serde::Serialize;

#[derive(Serialize)]
pub struct TraceReplay {
    pub path: String,
    pub rank: u32,
    pub warnings: Vec<String>,
    /// True when the trace shows signs of events dropped by the profiler;
    /// such traces are reported apart in the summary.
    pub flagged: bool,
    pub tasks: usize,
    pub steps: Vec<StepReplay>,
    pub window: Compare,
    pub breakdown: BreakdownPair,
    /// Fraction of each 1 ms bin with at least one GPU stream busy.
    pub gpu_busy_timeline: TimelinePair,
    pub critical_path: Option<CriticalPath>,
}

#[derive(Serialize)]
pub struct StepReplay {
    pub name: String,
    pub measured_us: f64,
    pub replayed_us: f64,
    pub error_pct: f64,
}

#[derive(Serialize)]
pub struct Compare {
    pub measured_us: f64,
    pub replayed_us: f64,
    pub error_pct: f64,
}

#[derive(Serialize)]
pub struct BreakdownPair {
    pub measured: BreakdownUs,
    pub replayed: BreakdownUs,
}

#[derive(Serialize)]
pub struct BreakdownUs {
    pub exposed_compute_us: f64,
    pub overlapped_us: f64,
    pub exposed_comm_us: f64,
    pub idle_us: f64,
    pub total_us: f64,
}

#[derive(Serialize)]
pub struct TimelinePair {
    pub bin_us: f64,
    pub measured: Vec<f64>,
    pub replayed: Vec<f64>,
}

#[derive(Serialize)]
pub struct CriticalPath {
    pub hops: usize,
    pub by_bound: Vec<BoundShare>,
    pub top_tasks: Vec<PathTask>,
}

#[derive(Serialize)]
pub struct BoundShare {
    pub bound: String,
    pub hops: usize,
    pub wait_us: f64,
    pub busy_us: f64,
}

#[derive(Serialize)]
pub struct PathTask {
    pub name: String,
    pub us: f64,
}

#[derive(Serialize)]
pub struct Summary {
    /// Over every step of every unflagged trace (whole window where a trace
    /// has no steps).
    pub mean_abs_error_pct: f64,
    pub max_abs_error_pct: f64,
    pub steps: usize,
    /// The same over flagged traces.
    pub flagged_mean_abs_error_pct: Option<f64>,
}

pub(crate) fn us(ns: i64) -> f64 {
    ns as f64 / 1e3
}

pub(crate) fn err_pct(measured: i64, replayed: i64) -> f64 {
    if measured == 0 {
        0.0
    } else {
        (replayed - measured) as f64 / measured as f64 * 100.0
    }
}

fn bd(b: Breakdown) -> BreakdownUs {
    BreakdownUs {
        exposed_compute_us: us(b.exposed_compute_ns),
        overlapped_us: us(b.overlapped_ns),
        exposed_comm_us: us(b.exposed_comm_ns),
        idle_us: us(b.idle_ns),
        total_us: us(b.total_ns),
    }
}

/// Signs of dropped events, as counted by the graph builder.
pub(crate) fn flagged(report: &lumos_graph::BuildReport) -> bool {
    report.cpu_holes > 0
        || report.repeated_correlations > 0
        || (report.gpu_without_launch > 0
            && report.gpu_without_launch * 100 > report.tasks_by_kind.values().sum::<u64>())
}

pub fn replay(trace: &Trace, opts: &SimOptions, out_dir: Option<&Path>) -> Result<TraceReplay> {
    let (graph, measured, report) = build(trace);
    let schedule = simulate(&graph, opts)
        .with_context(|| format!("{}: replay failed", trace.path.display()))?;
    if let Some(dir) = out_dir {
        let id = TraceId {
            path: &trace.path,
            base_time_ns: trace.meta.base_time_ns,
            rank: trace.meta.rank,
        };
        write_replayed_trace(&id, &graph, &measured, &schedule, dir)?;
    }
    let critical_path = schedule.last_task().map(|last| {
        critical_path_report(&graph, &critical_path_summary(&graph, &schedule, last, 10))
    });
    let mut warnings = trace.warnings.clone();
    warnings.extend(report.warnings.iter().cloned());
    Ok(compare(
        trace.path.display().to_string(),
        trace.meta.rank,
        warnings,
        flagged(&report),
        &graph,
        &measured,
        &schedule,
        critical_path,
    ))
}

/// Compares replayed times with the measured ones for one rank's graph:
/// steps, window, breakdown and busy timeline. `times` are the replayed
/// times of `graph`'s tasks, on the same window origin as `measured`.
#[allow(clippy::too_many_arguments)] // one per field of TraceReplay
pub(crate) fn compare<T: TaskTimes + ?Sized>(
    path: String,
    rank: u32,
    warnings: Vec<String>,
    flagged: bool,
    graph: &Graph,
    measured: &Measured,
    times: &T,
    critical_path: Option<CriticalPath>,
) -> TraceReplay {
    let m_steps = step_spans(graph, &measured.tasks, Some(&measured.step_annotations));
    let r_steps = step_spans(graph, times, None);
    let steps = graph
        .steps
        .iter()
        .zip(m_steps.iter().zip(&r_steps))
        .map(|(s, (m, r))| {
            let (m, r) = (m.end_ns - m.start_ns, r.end_ns - r.start_ns);
            StepReplay {
                name: s.name.clone(),
                measured_us: us(m),
                replayed_us: us(r),
                error_pct: err_pct(m, r),
            }
        })
        .collect();
    let mw = whole_span(&measured.tasks);
    let rw = whole_span(times);
    let (ml, rl) = (mw.end_ns - mw.start_ns, rw.end_ns - rw.start_ns);
    let bin = 1_000_000;
    TraceReplay {
        path,
        rank,
        warnings,
        flagged,
        tasks: graph.tasks.len(),
        steps,
        window: Compare {
            measured_us: us(ml),
            replayed_us: us(rl),
            error_pct: err_pct(ml, rl),
        },
        breakdown: BreakdownPair {
            measured: bd(breakdown(graph, &measured.tasks, mw)),
            replayed: bd(breakdown(graph, times, rw)),
        },
        gpu_busy_timeline: TimelinePair {
            bin_us: us(bin),
            measured: gpu_busy_timeline(graph, &measured.tasks, mw, bin),
            replayed: gpu_busy_timeline(graph, times, rw, bin),
        },
        critical_path,
    }
}

/// The JSON form of a critical-path summary; task names come from `graph`.
pub(crate) fn critical_path_report(graph: &Graph, s: &CriticalPathSummary) -> CriticalPath {
    CriticalPath {
        hops: s.hops,
        by_bound: s
            .by_bound
            .iter()
            .map(|b| BoundShare {
                bound: b.kind.as_str().to_owned(),
                hops: b.hops,
                wait_us: us(b.wait_ns),
                busy_us: us(b.busy_ns),
            })
            .collect(),
        top_tasks: s
            .top_tasks
            .iter()
            .map(|&(t, ns)| PathTask {
                name: graph.name(t).to_owned(),
                us: us(ns),
            })
            .collect(),
    }
}

/// The one-line summary under the human tables.
pub fn print_summary(summary: &Summary) {
    println!(
        "summary: mean |error| {:.2}%, max {:.2}% over {} steps{}",
        summary.mean_abs_error_pct,
        summary.max_abs_error_pct,
        summary.steps,
        summary
            .flagged_mean_abs_error_pct
            .map(|f| format!("; flagged traces apart: mean {f:.2}%"))
            .unwrap_or_default()
    );
}

pub fn summarize(traces: &[TraceReplay]) -> Summary {
    let errs = |flag: bool| -> Vec<f64> {
        traces
            .iter()
            .filter(|t| t.flagged == flag)
            .flat_map(|t| {
                if t.steps.is_empty() {
                    vec![t.window.error_pct.abs()]
                } else {
                    t.steps.iter().map(|s| s.error_pct.abs()).collect()
                }
            })
            .collect()
    };
    let ok = errs(false);
    let bad = errs(true);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    Summary {
        mean_abs_error_pct: mean(&ok),
        max_abs_error_pct: ok.iter().copied().fold(0.0, f64::max),
        steps: ok.len(),
        flagged_mean_abs_error_pct: (!bad.is_empty()).then(|| mean(&bad)),
    }
}

/// Which trace a replayed timeline belongs to.
pub(crate) struct TraceId<'a> {
    pub path: &'a Path,
    pub base_time_ns: Option<i64>,
    pub rank: u32,
}

/// Writes the replayed timeline as gzipped Chrome trace JSON (opens in
/// Perfetto and chrome://tracing), on the trace's own clock so it lines up
/// with the original. `schedule` holds the replayed times on `measured`'s
/// window origin.
pub(crate) fn write_replayed_trace<T: TaskTimes + ?Sized>(
    trace: &TraceId,
    graph: &Graph,
    measured: &Measured,
    schedule: &T,
    dir: &Path,
) -> Result<()> {
    let measured_dur = |i: usize| {
        format!(
            ",\"measured_dur_us\":{}",
            us(measured.tasks[i].end_ns - measured.tasks[i].start_ns)
        )
    };
    write_timeline(
        trace,
        graph,
        measured.origin_ns,
        schedule,
        &measured_dur,
        "replayed",
        dir,
    )
}

/// Writes a simulated timeline of `graph` as `<name>.<what>.json.gz` (see
/// [`write_replayed_trace`]). Times in `schedule` count from `origin_ns` on
/// the trace's clock; `task_args(i)` adds arguments to task `i` (a JSON
/// fragment starting with a comma).
pub(crate) fn write_timeline<T: TaskTimes + ?Sized>(
    trace: &TraceId,
    graph: &Graph,
    origin_ns: i64,
    schedule: &T,
    task_args: &dyn Fn(usize) -> String,
    what: &str,
    dir: &Path,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let stem = trace
        .path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("trace")
        .trim_end_matches(".gz")
        .trim_end_matches(".json");
    let path = dir.join(format!("{stem}.{what}.json.gz"));
    let file = std::fs::File::create(&path)
        .with_context(|| format!("{}: cannot write", path.display()))?;
    let mut w = std::io::BufWriter::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::fast(),
    ));
    let ts = |ns: i64| {
        let abs = origin_ns + ns;
        format!("{}.{:03}", abs.div_euclid(1000), abs.rem_euclid(1000))
    };
    write!(w, "{{\"schemaVersion\":1,")?;
    if let Some(b) = trace.base_time_ns {
        write!(w, "\"baseTimeNanoseconds\":{b},")?;
    }
    write!(
        w,
        "\"distributedInfo\":{{\"rank\":{}}},\"traceName\":\"lumos {what}\",\"traceEvents\":[",
        trace.rank
    )?;
    let mut first = true;
    for (i, t) in graph.tasks.iter().enumerate() {
        let (pid, tid, cat) = match graph.processors[t.proc.idx()].kind {
            ProcKind::Thread { pid, tid } => (
                pid,
                tid,
                match t.kind {
                    lumos_graph::TaskKind::Runtime => "cuda_runtime",
                    lumos_graph::TaskKind::Annotation => "user_annotation",
                    _ => "cpu_op",
                },
            ),
            ProcKind::Stream { device, stream } => (
                device,
                stream,
                match t.kind {
                    lumos_graph::TaskKind::Memcpy => "gpu_memcpy",
                    lumos_graph::TaskKind::Memset => "gpu_memset",
                    _ => "kernel",
                },
            ),
        };
        let task_id = lumos_graph::TaskId(i as u32);
        let (s, e) = (schedule.start_of(task_id), schedule.end_of(task_id));
        if !first {
            w.write_all(b",")?;
        }
        first = false;
        let name = serde_json::to_string(graph.name(lumos_graph::TaskId(i as u32)))?;
        let stream_arg = match graph.processors[t.proc.idx()].kind {
            ProcKind::Stream { stream, device } => {
                format!(",\"stream\":{stream},\"device\":{device}")
            }
            _ => String::new(),
        };
        write!(
            w,
            "\n{{\"ph\":\"X\",\"cat\":\"{cat}\",\"name\":{name},\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{{\"correlation\":{}{stream_arg}{}}}}}",
            ts(s),
            format_args!("{}.{:03}", (e - s) / 1000, (e - s) % 1000),
            t.correlation,
            task_args(i),
        )?;
    }
    // The annotation itself (CPU side), as the profiler records it, so the
    // re-read trace defines its steps the same way.
    let spans: Vec<Span> = annotation_spans(graph, schedule);
    for (st, span) in graph.steps.iter().zip(spans) {
        let (pid, tid) = match graph.processors[graph.task(st.first_task).proc.idx()].kind {
            ProcKind::Thread { pid, tid } => (pid, tid),
            ProcKind::Stream { device, stream } => (device, stream),
        };
        write!(
            w,
            ",\n{{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{}}}",
            serde_json::to_string(&st.name)?,
            ts(span.start_ns),
            format_args!("{}.{:03}", (span.end_ns - span.start_ns) / 1000, (span.end_ns - span.start_ns) % 1000),
        )?;
    }
    write!(w, "]}}")?;
    w.into_inner()
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.error()))?
        .finish()?;
    Ok(())
}

pub fn print_human(t: &TraceReplay) {
    println!("{} (rank {}, {} tasks)", t.path, t.rank, t.tasks);
    println!(
        "  {:<18} {:>12} {:>12} {:>8}",
        "step", "measured ms", "replayed ms", "error"
    );
    for s in &t.steps {
        println!(
            "  {:<18} {:>12.3} {:>12.3} {:>7.2}%",
            s.name,
            s.measured_us / 1e3,
            s.replayed_us / 1e3,
            s.error_pct
        );
    }
    println!(
        "  {:<18} {:>12.3} {:>12.3} {:>7.2}%",
        "whole window",
        t.window.measured_us / 1e3,
        t.window.replayed_us / 1e3,
        t.window.error_pct
    );
    let (m, r) = (&t.breakdown.measured, &t.breakdown.replayed);
    println!("  breakdown (ms)      exposed compute   overlap   exposed comm      idle");
    for (label, b) in [("measured", m), ("replayed", r)] {
        println!(
            "    {:<16} {:>15.3} {:>9.3} {:>14.3} {:>9.3}",
            label,
            b.exposed_compute_us / 1e3,
            b.overlapped_us / 1e3,
            b.exposed_comm_us / 1e3,
            b.idle_us / 1e3
        );
    }
    if let Some(cp) = &t.critical_path {
        let parts: Vec<String> = cp
            .by_bound
            .iter()
            .map(|b| format!("{} {:.2} ms", b.bound, (b.wait_us + b.busy_us) / 1e3))
            .collect();
        println!("  critical path ({} hops): {}", cp.hops, parts.join(", "));
        if let Some(top) = cp.top_tasks.first() {
            println!("    longest on path: {} ({:.3} ms)", top.name, top.us / 1e3);
        }
    }
    if t.flagged {
        println!("  flagged: signs of dropped events; reported apart in the summary");
    }
    for w in &t.warnings {
        println!("  warning: {w}");
    }
}
