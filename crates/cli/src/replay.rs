//! `lumos replay`: simulate each trace's graph and compare with the
//! measurement.

use std::path::Path;

use anyhow::{Context, Result};
use lumos_graph::{build, Graph, Measured, ProcKind, Span, TaskId, TaskKind};
use lumos_sim::{
    annotation_spans, breakdown, critical_path_summary, gpu_busy_timeline, simulate, step_spans,
    whole_span, Breakdown, CriticalPathSummary, SimOptions, TaskTimes,
};
use lumos_trace::{
    write_gz_atomic, Category, DistributedInfo, Fields, KinetoWriter, Layout, Trace,
};
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
    let measured_dur = |i: usize, a: &mut Fields| {
        let m = &measured.tasks[i];
        a.float("measured_dur_us", us(m.end_ns - m.start_ns));
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
/// [`write_replayed_trace`]), atomically. Times in `schedule` count from
/// `origin_ns` on the trace's clock; `task_args(i, args)` adds arguments
/// to task `i`.
pub(crate) fn write_timeline<T: TaskTimes + ?Sized>(
    trace: &TraceId,
    graph: &Graph,
    origin_ns: i64,
    schedule: &T,
    task_args: &dyn Fn(usize, &mut Fields),
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
    write_gz_atomic(&path, |out| {
        let mut w = KinetoWriter::new(out, Layout::Compact);
        w.schema_version(1);
        if let Some(b) = trace.base_time_ns {
            w.base_time_ns(b);
        }
        w.distributed_info(&DistributedInfo {
            rank: u64::from(trace.rank),
            ..DistributedInfo::default()
        });
        w.trace_name(&format!("lumos {what}"));
        timeline_events(&mut w, graph, origin_ns, schedule, task_args);
        w.finish().map(drop)
    })?;
    Ok(())
}

/// The events of a timeline: every task at its scheduled time, then each
/// step's annotation.
fn timeline_events<W: std::io::Write, T: TaskTimes + ?Sized>(
    w: &mut KinetoWriter<W>,
    graph: &Graph,
    origin_ns: i64,
    schedule: &T,
    task_args: &dyn Fn(usize, &mut Fields),
) {
    for (i, t) in graph.tasks.iter().enumerate() {
        let (pid, tid, cat) = match graph.processors[t.proc.idx()].kind {
            ProcKind::Thread { pid, tid } => (
                pid,
                tid,
                match t.kind {
                    TaskKind::Runtime => Category::Runtime,
                    TaskKind::Annotation => Category::UserAnnotation,
                    _ => Category::CpuOp,
                },
            ),
            ProcKind::Stream { device, stream } => (
                device,
                stream,
                match t.kind {
                    TaskKind::Memcpy => Category::Memcpy,
                    TaskKind::Memset => Category::Memset,
                    _ => Category::Kernel,
                },
            ),
        };
        let id = TaskId(i as u32);
        let (s, e) = (schedule.start_of(id), schedule.end_of(id));
        let mut a = w.complete(cat, graph.name(id), pid, tid, origin_ns + s, e - s);
        a.correlation(t.correlation);
        if let ProcKind::Stream { device, stream } = graph.processors[t.proc.idx()].kind {
            a.stream(stream).device(device);
        }
        task_args(i, &mut a);
    }
    // The annotation itself (CPU side), as the profiler records it, so the
    // re-read trace defines its steps the same way.
    let spans: Vec<Span> = annotation_spans(graph, schedule);
    for (st, span) in graph.steps.iter().zip(spans) {
        let (pid, tid) = match graph.processors[graph.task(st.first_task).proc.idx()].kind {
            ProcKind::Thread { pid, tid } => (pid, tid),
            ProcKind::Stream { device, stream } => (device, stream),
        };
        let dur = span.end_ns - span.start_ns;
        w.complete(
            Category::UserAnnotation,
            &st.name,
            pid,
            tid,
            origin_ns + span.start_ns,
            dur,
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A task as a timeline places it: processor, kind, name, start from
    /// `origin_ns`, duration.
    type Placed = (String, String, String, i64, i64);

    fn placed<T: TaskTimes + ?Sized>(g: &Graph, times: &T, origin_ns: i64) -> Vec<Placed> {
        let mut v: Vec<Placed> = (0..g.tasks.len())
            .map(|i| {
                let id = TaskId(i as u32);
                let t = g.task(id);
                let (s, e) = (times.start_of(id), times.end_of(id));
                let proc = format!("{:?}", g.processors[t.proc.idx()].kind);
                let kind = t.kind.as_str().to_owned();
                (proc, kind, g.name(id).to_owned(), origin_ns + s, e - s)
            })
            .collect();
        v.sort();
        v
    }

    /// The elements of `a` (sorted) that `b` (sorted) lacks, counting
    /// repeats.
    fn minus(a: &[Placed], b: &[Placed]) -> Vec<Placed> {
        let mut rest = Vec::new();
        let mut j = 0;
        for x in a {
            while j < b.len() && b[j] < *x {
                j += 1;
            }
            if j < b.len() && b[j] == *x {
                j += 1;
            } else {
                rest.push(x.clone());
            }
        }
        rest
    }

    #[test]
    fn a_replayed_timeline_reads_back_to_the_same_tasks() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/traces/single-rank/a100-alexnet-cuda-sync.json.gz");
        let trace = lumos_trace::read_path(&path).unwrap();
        let (graph, measured, report) = build(&trace);
        let schedule = simulate(&graph, &SimOptions::default()).unwrap();
        let dir = std::env::temp_dir().join(format!("lumos-replay-unit-{}", std::process::id()));
        let id = TraceId {
            path: &trace.path,
            base_time_ns: trace.meta.base_time_ns,
            rank: trace.meta.rank,
        };
        write_replayed_trace(&id, &graph, &measured, &schedule, &dir).unwrap();
        let file = dir.join("a100-alexnet-cuda-sync.replayed.json.gz");
        let back = lumos_trace::read_path(&file);
        std::fs::remove_dir_all(&dir).unwrap();
        let back = back.unwrap();
        assert_eq!(back.skipped.total(), 0);
        assert_eq!(back.meta.base_time_ns, trace.meta.base_time_ns);
        assert_eq!(back.meta.rank, trace.meta.rank);

        // The file: one event per task, with its name, processor, times to
        // the ns and correlation, then one per step.
        assert_eq!(back.events.len(), graph.tasks.len() + graph.steps.len());
        for (i, e) in back.events.iter().take(graph.tasks.len()).enumerate() {
            let id = TaskId(i as u32);
            let t = graph.task(id);
            assert_eq!(back.name(e), graph.name(id));
            assert_eq!(e.correlation, Some(t.correlation));
            assert_eq!(e.ts_ns, measured.origin_ns + schedule.start_of(id));
            assert_eq!(e.end_ns(), measured.origin_ns + schedule.end_of(id));
        }

        // Its graph: the same tasks (names, kinds, processors, times),
        // except that the builder may now split a call that ends right
        // after the kernel it launched into a zero-length issuing part and
        // the wait (a 3 s first cudaLaunchKernel here): those extra tasks
        // are reported.
        let (g2, m2, report2) = build(&back);
        let orig = placed(&graph, &schedule, measured.origin_ns);
        let again = placed(&g2, &m2.tasks, m2.origin_ns);
        assert_eq!(minus(&orig, &again), []);
        let extra = minus(&again, &orig);
        assert_eq!(extra.len() as u64, report2.split_calls - report.split_calls);
        assert!(
            extra.iter().all(|x| x.1 == "runtime" && x.4 == 0),
            "{extra:?}"
        );
        assert_eq!(g2.steps.len(), graph.steps.len());
    }
}
