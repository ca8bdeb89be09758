//! The analyses on corpus traces: the relations that must hold between
//! their numbers (parts add up to the step, steps add up to the
//! selection, kernel tables add up to the steps' GPU time), agreement
//! with the simulator's own breakdown, and measured against replayed on
//! traces the replay reproduces exactly. docs/ANALYSES.md compares the
//! same numbers with HTA's.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::collections::HashMap;

use lumos_graph::build;
use lumos_report::{
    diff, replay, Analyses, AnalysisOptions, DiffInput, DiffOptions, StepAnalysis, TraceReplay,
};
use lumos_sim::{breakdown, step_spans, SimOptions};
use lumos_testkit::{Corpus, TempDir};

const TRACES: [&str; 6] = [
    "single-rank/v100-resnet50-2021-capture-a.json.gz",
    "single-rank/a100-ddp-rank0of2-event-record.json.gz",
    "single-rank/a100-recsys-rank3of8.json.gz",
    "single-rank/rtx2080ti-linear-train.json.gz",
    "single-rank/h100-vit-inference.json.gz",
    "single-rank/mi210-gpu-only.json.gz",
];

/// `a` and `b` equal up to float rounding of sums of us.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

fn check_row(what: &str, s: &StepAnalysis) {
    let parts = s.exposed_compute_us + s.overlapped_us + s.exposed_comm_us + s.idle_us;
    assert!(
        close(parts, s.span_us),
        "{what} {}: parts {parts} vs {}",
        s.step,
        s.span_us
    );
    let causes = s.idle_host_wait_us + s.idle_kernel_gap_us + s.idle_other_us;
    assert!(
        close(causes, s.idle_us),
        "{what} {}: idle {causes} vs {}",
        s.step,
        s.idle_us
    );
    let shares = [
        s.exposed_compute_pct,
        s.overlapped_pct,
        s.exposed_comm_pct,
        s.idle_pct,
    ];
    if s.span_us > 0.0 {
        let pct: f64 = shares.iter().map(|p| p.unwrap()).sum();
        assert!(close(pct, 100.0), "{what} {}: {pct}%", s.step);
    } else {
        // No share of a step of no length.
        assert_eq!(shares, [None; 4], "{what} {}", s.step);
    }
    assert!(close(s.compute_us, s.exposed_compute_us + s.overlapped_us));
    assert!(close(s.comm_us, s.exposed_comm_us + s.overlapped_us));
    assert!(s.idle_us >= -1e-6 && s.overlapped_us >= 0.0, "{what} {s:?}");
}

/// The relations inside one run's analyses.
fn check_analyses(what: &str, a: &Analyses) {
    for s in a.steps.iter().chain([&a.total]) {
        check_row(what, s);
    }
    let sum = |f: fn(&StepAnalysis) -> f64| a.steps.iter().map(f).sum::<f64>();
    assert!(close(sum(|s| s.span_us), a.total.span_us), "{what}");
    assert!(close(sum(|s| s.idle_us), a.total.idle_us), "{what}");
    assert!(close(sum(|s| s.gpu_task_us), a.total.gpu_task_us), "{what}");
    // The kernel and operator tables share out the steps' GPU time.
    let kernels: f64 = a.kernels.iter().map(|k| k.total_us).sum();
    let count: usize = a.kernels.iter().map(|k| k.count).sum();
    let ops: f64 = a.operators.iter().map(|o| o.total_us).sum();
    assert!(
        close(kernels, a.total.gpu_task_us),
        "{what}: {kernels} vs {}",
        a.total.gpu_task_us
    );
    assert!(close(ops, a.total.gpu_task_us), "{what}");
    assert_eq!(count, a.total.gpu_tasks, "{what}");
    if !a.kernels.is_empty() {
        let share: f64 = a.kernels.iter().map(|k| k.share_pct.unwrap()).sum();
        assert!(close(share, 100.0), "{what}: {share}%");
    }
    // Kernels summed in full cover at least the time some GPU task runs
    // in the steps they belong to (they may overlap, and other steps'
    // work may run in a step's span too, so no equality).
    let comm: f64 = a.collectives.iter().map(|c| c.total_us).sum();
    let comm_kernels: f64 = a
        .kernels
        .iter()
        .filter(|k| k.comm)
        .map(|k| k.total_us)
        .sum();
    assert!(
        close(comm, comm_kernels),
        "{what}: {comm} vs {comm_kernels}"
    );
    let h = &a.hta;
    assert!(
        close(
            h.idle_us + h.compute_us + h.non_compute_us,
            h.kernel_time_us
        ),
        "{what} {h:?}"
    );
}

fn replayed(corpus: &Corpus, rel: &str) -> TraceReplay {
    let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
    replay(&trace, &SimOptions::default()).unwrap().report()
}

#[test]
fn analyses_add_up_on_corpus_traces() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in TRACES {
        let r = replayed(&corpus, rel);
        let a = &r.analysis;
        check_analyses(&format!("{rel} measured"), &a.measured);
        check_analyses(&format!("{rel} replayed"), &a.replayed);
        assert_eq!(a.measured.steps.len(), r.steps.len().max(1), "{rel}");
        for (s, p) in a.measured.steps.iter().zip(&r.steps) {
            assert!(
                close(s.span_us, p.measured_us),
                "{rel}: {} vs {}",
                s.span_us,
                p.measured_us
            );
        }
        for p in &a.critical_path {
            let sum = [p.cpu_pct, p.gpu_compute_pct, p.communication_pct]
                .into_iter()
                .map(|p| p.unwrap())
                .sum::<f64>();
            assert!(close(sum, 100.0), "{rel}: {p:?}");
            assert!(p.verdict.is_some(), "{rel}: {p:?}");
            assert!(p.hops > 0, "{rel}");
        }
    }
}

#[test]
fn step_rows_agree_with_the_simulators_breakdown() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in TRACES {
        let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
        let (graph, measured, _) = build(&trace);
        let spans = step_spans(&graph, &measured.tasks, Some(&measured.step_annotations));
        let all: Vec<usize> = (0..graph.steps.len()).collect();
        let a = lumos_report::analyze(
            &graph,
            &measured.tasks,
            Some(&measured.step_annotations),
            &all,
            &AnalysisOptions::default(),
        );
        for (row, span) in a.steps.iter().zip(&spans) {
            let b = breakdown(&graph, &measured.tasks, *span);
            let us = |ns: i64| ns as f64 / 1e3;
            assert_eq!(row.exposed_compute_us, us(b.exposed_compute_ns), "{rel}");
            assert_eq!(row.overlapped_us, us(b.overlapped_ns), "{rel}");
            assert_eq!(row.exposed_comm_us, us(b.exposed_comm_ns), "{rel}");
            assert_eq!(row.idle_us, us(b.idle_ns), "{rel}");
            assert_eq!(row.span_us, us(b.total_ns), "{rel}");
        }
    }
}

#[test]
fn a_replay_that_reproduces_the_measurement_has_the_same_analyses() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    // Both replay with 0.00% error on every step.
    for rel in [
        "single-rank/v100-resnet50-2021-capture-a.json.gz",
        "single-rank/a100-ddp-rank0of2-event-record.json.gz",
    ] {
        let r = replayed(&corpus, rel);
        assert!(r.steps.iter().all(|s| s.error_pct == Some(0.0)), "{rel}");
        let (m, p) = (&r.analysis.measured, &r.analysis.replayed);
        assert_eq!(m.steps, p.steps, "{rel}");
        assert_eq!(m.kernels, p.kernels, "{rel}");
        assert_eq!(m.collectives, p.collectives, "{rel}");
    }
}

/// A synchronizing call issues when the host called it, whatever it then
/// waits for: `v100-resnet50-2021-capture-b` spends 632 us of host time
/// after its last launch of `ProfilerStep#21` before calling
/// `cudaDeviceSynchronize`, which then waits 11 ms for the GPU. The gap was
/// taken for part of the wait (the call issued at the launch's end), so
/// the replayed timeline showed the call 632 us early and a faster GPU took
/// those 632 us of host work off the step; likewise 375 us at the start of
/// `h100-qwen-0.5b-inference`'s step (which replayed 0.76% long).
#[test]
fn blocking_calls_issue_at_their_measured_start() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in [
        "single-rank/v100-resnet50-2021-capture-b.json.gz",
        "single-rank/h100-qwen-0.5b-inference.json.gz",
    ] {
        let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
        let (graph, measured, _) = build(&trace);
        let s = lumos_sim::simulate(&graph, &SimOptions::default()).unwrap();
        assert!(!s.waits.is_empty(), "{rel}");
        for w in &s.waits {
            let early = measured.tasks[w.task.idx()].start_ns - w.issue_ns;
            assert!(
                early.abs() <= 10_000,
                "{rel}: {} issued {early} ns before its measured start",
                graph.name(w.task)
            );
        }
    }
}

#[test]
fn corpus_collectives_and_memory() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let ddp = replayed(
        &corpus,
        "single-rank/a100-ddp-rank0of2-event-record.json.gz",
    );
    let c = &ddp.analysis.measured.collectives;
    let all_reduce = c.iter().find(|c| c.collective == "all_reduce").unwrap();
    assert_eq!(
        (all_reduce.group_size, all_reduce.algorithm.as_deref()),
        (Some(2), Some("RING"))
    );
    // Two ranks: the bus factor of an all-reduce is 2(n-1)/n = 1.
    assert_eq!(all_reduce.bus_factor, Some(1.0));
    assert!(all_reduce.busbw_gbps.unwrap() > 0.0);
    // recsys records no message sizes, and its all-to-all runs as
    // SendRecv kernels under `nccl:all_to_all`.
    let recsys = replayed(&corpus, "single-rank/a100-recsys-rank3of8.json.gz");
    let types: Vec<&str> = recsys
        .analysis
        .measured
        .collectives
        .iter()
        .map(|c| c.collective.as_str())
        .collect();
    assert!(
        types.contains(&"all_to_all") && types.contains(&"all_reduce"),
        "{types:?}"
    );
    assert!(recsys.analysis.memory.is_none());
    // The 2021 capture records only the bytes of each allocation.
    let a = replayed(&corpus, "single-rank/v100-resnet50-2021-capture-a.json.gz");
    let m = a.analysis.memory.as_ref().unwrap();
    assert_eq!(m.devices.len(), 1);
    assert_eq!(m.devices[0].source, "bytes_sum");
    assert_eq!(m.devices[0].peak_reserved_bytes, None);
    assert_eq!(m.steps.len(), 6);
    let peak = m.devices[0].peak_allocated_bytes.unwrap();
    assert!(m
        .steps
        .iter()
        .all(|s| s.peak_allocated_bytes.unwrap() <= peak));
    assert_eq!(
        m.devices[0].timeline.allocated_bytes.len(),
        a.gpu_busy_timeline.measured.len()
    );
    // A newer profiler records the allocator's totals.
    let vit = replayed(&corpus, "single-rank/h100-vit-inference.json.gz");
    let m = vit.analysis.memory.as_ref().unwrap();
    assert_eq!(m.devices[0].source, "total_allocated");
    assert!(m.devices[0].peak_reserved_bytes >= m.devices[0].peak_allocated_bytes);
}

#[test]
fn critical_path_export_marks_the_replayed_timeline() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let path = corpus.path("single-rank/a100-alexnet-cuda-sync.json.gz");
    let trace = lumos_trace::read_path(&path).unwrap();
    let r = replay(&trace, &SimOptions::default()).unwrap();
    let paths = r.critical_paths(&AnalysisOptions::default()).unwrap();
    assert!(!paths.hops.is_empty());
    let plain = r.timeline().write(Vec::new()).unwrap();
    let timeline = r.timeline().with_critical_path(&paths);
    assert_eq!(
        timeline.file_name(),
        "a100-alexnet-cuda-sync.critical.json.gz"
    );
    let marked = timeline.write(Vec::new()).unwrap();
    // The marks are extra events of their own category: the marked
    // timeline reads back to the same events as the plain one.
    let a = lumos_trace::read_bytes(&path, &plain).unwrap();
    let b = lumos_trace::read_bytes(&path, &marked).unwrap();
    assert_eq!(a.events.len(), b.events.len());
    let text = String::from_utf8(marked).unwrap();
    assert!(text.contains("\"critical path\""));
    assert!(text.contains("critical_path_step"));
    check_marks(&text);
    // Per step, the hops' waits and times tile the path.
    for (k, s) in paths.steps.iter().enumerate() {
        let hops = paths.hops.iter().filter(|h| h.step == s.step);
        let total: f64 = hops.map(|h| h.wait_us + h.busy_us).sum();
        assert!(
            close(total, s.length_us),
            "step {k}: {total} vs {}",
            s.length_us
        );
    }
}

/// The marks of a critical path keep to the rules Perfetto's importer
/// applies: on each track, slices nest or follow each other (no partial
/// overlap), and every flow has its start and its end.
fn check_marks(text: &str) {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let marks: Vec<&serde_json::Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "critical_path")
        .collect();
    let mut tracks: HashMap<(String, String), Vec<(f64, f64)>> = HashMap::new();
    let mut flows: HashMap<u64, (usize, usize)> = HashMap::new();
    for e in &marks {
        let key = (e["pid"].to_string(), e["tid"].to_string());
        match e["ph"].as_str().unwrap() {
            "X" => {
                let ts = e["ts"].as_f64().unwrap();
                tracks
                    .entry(key)
                    .or_default()
                    .push((ts, ts + e["dur"].as_f64().unwrap()));
            }
            "s" => flows.entry(e["id"].as_u64().unwrap()).or_default().0 += 1,
            "f" => flows.entry(e["id"].as_u64().unwrap()).or_default().1 += 1,
            ph => panic!("unexpected phase {ph} in {e}"),
        }
    }
    assert!(!tracks.is_empty());
    for (track, mut slices) in tracks {
        slices.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        // Times are us since the epoch (~1.7e15): f64 parsing of them is
        // only good to a fraction of a us, the writer's are whole ns.
        const EPS: f64 = 0.5;
        let mut open: Vec<f64> = Vec::new();
        for (start, end) in slices {
            while open.last().is_some_and(|&e| e <= start + EPS) {
                open.pop();
            }
            let inside = open.last().is_none_or(|&e| end <= e + EPS);
            assert!(
                inside,
                "{track:?}: [{start}, {end}] overlaps a slice ending at {open:?}"
            );
            open.push(end);
        }
    }
    assert!(flows.values().all(|&c| c == (1, 1)), "{flows:?}");
}

#[test]
fn diff_of_two_captures_and_of_a_trace_and_its_replay() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let read = |rel: &str| lumos_trace::read_path(&corpus.path(rel)).unwrap();
    let a = read("single-rank/v100-resnet50-2021-capture-a.json.gz");
    let b = read("single-rank/v100-resnet50-2021-capture-b.json.gz");
    let (ia, ib) = (DiffInput::of(&a), DiffInput::of(&b));
    let d = diff(&ia, &ib, &DiffOptions::default()).unwrap();
    assert_eq!((d.a.steps, d.b.steps), (6, 6));
    assert!(d.by_shape && d.with_scopes);
    assert!(d
        .steps
        .iter()
        .all(|s| s.status != "added" && s.status != "removed"));
    // Sorted by impact; capture b spends less time loading data.
    let impact: Vec<f64> = d.operators.iter().map(|r| r.delta_us.abs()).collect();
    assert!(impact.windows(2).all(|w| w[0] >= w[1]));
    assert!(
        d.operators[0].name.starts_with("enumerate(DataLoader)"),
        "{:?}",
        d.operators[0]
    );
    assert_eq!(d.operators[0].status, "faster");
    // A trace against its own replay, written and read back: nothing
    // changed (the replay reproduces this trace exactly).
    let r = replay(&a, &SimOptions::default()).unwrap();
    let dir = TempDir::new("diff");
    let out = dir.join("a.replayed.json");
    std::fs::write(&out, r.timeline().write(Vec::new()).unwrap()).unwrap();
    let back = lumos_trace::read_path(&out).unwrap();
    let d = diff(&ia, &DiffInput::of(&back), &DiffOptions::default()).unwrap();
    assert!(d.steps.iter().all(|s| s.status == "same"), "{:?}", d.steps);
    assert!(d.with_scopes, "a replayed timeline keeps its operators");
    assert!(d.operators.is_empty(), "{:?}", d.operators);
    assert!(d.kernels.is_empty(), "{:?}", d.kernels);
    assert!(d.breakdown.iter().all(|m| m.delta_us.abs() < 1e-6));
    // Steps that do not exist in one run are a named error.
    let opts = DiffOptions {
        steps: "9".parse().unwrap(),
        ..DiffOptions::default()
    };
    assert!(diff(&ia, &ib, &opts).is_err());
}

/// HTA's kernel classes by name (`get_kernel_type`), as far as the GPU
/// tasks of the corpus need them.
#[derive(PartialEq)]
enum Class {
    Comm,
    Memory,
    Compute,
}

fn hta_class(name: &str) -> Class {
    let starts = |p: &str| name.starts_with(p);
    if starts("nccl") || starts("hip") || starts("hccl") || name.contains("ncclKernel") {
        Class::Comm
    } else if starts("Memcpy") || starts("Memset") || starts("dma") {
        Class::Memory
    } else {
        Class::Compute
    }
}

/// The total length of the union of `spans` (ns).
fn union_ns(mut spans: Vec<(i64, i64)>) -> i64 {
    spans.sort_unstable();
    let (mut total, mut cur) = (0, None::<(i64, i64)>);
    for (s, e) in spans {
        cur = match cur {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

/// The length of `a ∩ b` for two sets of spans (ns), as union(a) +
/// union(b) - union(a ∪ b).
fn intersection_ns(a: Vec<(i64, i64)>, b: Vec<(i64, i64)>) -> i64 {
    let both: Vec<_> = a.iter().chain(&b).copied().collect();
    union_ns(a) + union_ns(b) - union_ns(both)
}

/// HTA's numbers (`kernel_time`, idle, compute, non-compute in us; the
/// overlap %; per stream host wait, kernel wait, other in us) computed
/// again from a trace's raw events as HTA computes them: every event on a
/// stream that `keep` keeps, the launch of each by its runtime call's
/// correlation id.
struct HtaNumbers {
    temporal: [f64; 4],
    overlap_pct: Option<f64>,
    streams: Vec<(i64, f64, f64, f64)>,
}

fn hta_numbers(
    trace: &lumos_trace::Trace,
    keep: &dyn Fn(&lumos_trace::Event) -> bool,
) -> HtaNumbers {
    let gpu: Vec<_> = trace
        .events
        .iter()
        .filter(|e| e.category.is_gpu_work() && keep(e))
        .collect();
    let spans = |pick: &dyn Fn(&str) -> bool| -> Vec<(i64, i64)> {
        gpu.iter()
            .filter(|e| pick(trace.name(e)))
            .map(|e| (e.ts_ns, e.end_ns()))
            .collect()
    };
    let first = gpu.iter().map(|e| e.ts_ns).min().unwrap();
    let last = gpu.iter().map(|e| e.end_ns()).max().unwrap();
    let kernel_time = last - first;
    let busy = union_ns(spans(&|_| true));
    let compute = union_ns(spans(&|n| hta_class(n) == Class::Compute));
    let comm = union_ns(spans(&|n| hta_class(n) == Class::Comm));
    let overlap = intersection_ns(
        spans(&|n| hta_class(n) == Class::Compute),
        spans(&|n| hta_class(n) == Class::Comm),
    );
    let us = |ns: i64| ns as f64 / 1e3;
    // Idle time per stream: the gap before each task, by when its runtime
    // call began.
    let launch = launches(trace);
    let mut streams: std::collections::BTreeMap<(String, i64), Vec<_>> = Default::default();
    for e in &gpu {
        let stream = e.stream().unwrap_or(-1);
        streams
            .entry((trace.ident(e.pid), stream))
            .or_default()
            .push(*e);
    }
    let mut rows = Vec::new();
    for ((_, stream), mut es) in streams {
        es.sort_by_key(|e| e.ts_ns);
        let (mut host, mut wait, mut other) = (0, 0, 0);
        for w in es.windows(2) {
            let prev_end = w[0].end_ns();
            let gap = (w[1].ts_ns - prev_end).max(0);
            let launched = w[1].correlation().and_then(|c| launch.get(&c));
            if launched.is_some_and(|&l| l > prev_end) {
                host += gap;
            } else if gap < 30_000 {
                wait += gap;
            } else {
                other += gap;
            }
        }
        rows.push((stream, us(host), us(wait), us(other)));
    }
    rows.sort_by_key(|r| r.0);
    HtaNumbers {
        temporal: [
            us(kernel_time),
            us(kernel_time - busy),
            us(compute),
            us(busy - compute),
        ],
        overlap_pct: (comm > 0).then(|| overlap as f64 / comm as f64 * 100.0),
        streams: rows,
    }
}

/// When each runtime call began, by correlation id.
fn launches(trace: &lumos_trace::Trace) -> std::collections::HashMap<u64, i64> {
    trace
        .events
        .iter()
        .filter(|e| e.category.is_runtime())
        .filter_map(|e| Some((e.correlation()?, e.ts_ns)))
        .collect()
}

fn assert_hta_view(rel: &str, h: &lumos_report::HtaView, n: &HtaNumbers) {
    let ours = [h.kernel_time_us, h.idle_us, h.compute_us, h.non_compute_us];
    assert!(
        ours.iter().zip(&n.temporal).all(|(a, b)| close(*a, *b)),
        "{rel}: {ours:?} vs {:?}",
        n.temporal
    );
    match (h.comm_comp_overlap_pct, n.overlap_pct) {
        (Some(a), Some(b)) => assert!(close(a, b), "{rel}: {a} vs {b}"),
        (a, b) => assert_eq!(a, b, "{rel}"),
    }
    let mut ours: Vec<_> = h
        .idle_by_stream
        .iter()
        .map(|s| (s.stream, s.host_wait_us, s.kernel_wait_us, s.other_us))
        .collect();
    ours.sort_by_key(|r| r.0);
    assert_eq!(
        ours.len(),
        n.streams.len(),
        "{rel}: {ours:?} vs {:?}",
        n.streams
    );
    for (a, b) in ours.iter().zip(&n.streams) {
        let same = a.0 == b.0 && close(a.1, b.1) && close(a.2, b.2) && close(a.3, b.3);
        assert!(same, "{rel}: {a:?} vs {b:?}");
    }
}

/// On traces without steps lumos's `hta` view covers the whole trace, as
/// HTA does: it is HTA's numbers, computed again here from the raw events.
#[test]
fn the_hta_view_is_htas_numbers_on_corpus_traces() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in [
        "single-rank/rtx2080ti-linear-train.json.gz",
        "single-rank/mi210-gpu-only.json.gz",
        "single-rank/a100-alexnet-cuda-sync.json.gz",
        "single-rank/amd-vllm-decode-graph-launch.json.gz",
    ] {
        let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
        let r = replayed(&corpus, rel);
        assert_eq!(r.analysis.selected_steps, vec!["window"], "{rel}");
        assert_hta_view(
            rel,
            &r.analysis.measured.hta,
            &hta_numbers(&trace, &|_| true),
        );
    }
}

/// On traces with steps (and communication) the view covers the GPU work
/// launched inside the steps: HTA's numbers over the events whose runtime
/// call began inside a `ProfilerStep#N` annotation.
#[test]
fn the_hta_view_of_steps_is_htas_numbers_on_their_work() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in [
        "single-rank/a100-ddp-rank0of2-event-record.json.gz",
        "single-rank/a100-recsys-rank3of8.json.gz",
    ] {
        let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
        let steps: Vec<(i64, i64)> = trace
            .events
            .iter()
            .filter(|e| trace.name(e).starts_with("ProfilerStep#"))
            .map(|e| (e.ts_ns, e.end_ns()))
            .collect();
        let launch = launches(&trace);
        let in_step = |e: &lumos_trace::Event| {
            e.correlation()
                .and_then(|c| launch.get(&c))
                .is_some_and(|&l| steps.iter().any(|&(s, z)| s <= l && l < z))
        };
        let r = replayed(&corpus, rel);
        let n = hta_numbers(&trace, &in_step);
        assert!(n.overlap_pct.is_some(), "{rel}");
        assert_hta_view(rel, &r.analysis.measured.hta, &n);
    }
}
