//! The analyses on tiny hand-made traces whose answers are known.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::path::Path;

use lumos_sim::SimOptions;
use lumos_trace::Trace;

use lumos_report::{replay, AnalysisOptions, StepSelection, TraceReplay};

/// A trace of `events` (JSON objects).
fn trace(events: &[String]) -> Trace {
    let text = format!("{{\"traceEvents\": [{}]}}", events.join(",\n"));
    lumos_trace::read_bytes(Path::new("t.json"), text.as_bytes()).unwrap()
}

fn step(n: u32, ts: f64, dur: f64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}}}"#
    )
}

fn op(name: &str, ts: f64, dur: f64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}}}"#
    )
}

fn runtime(name: &str, ts: f64, dur: f64, corr: u64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "cuda_runtime", "name": "{name}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}, "args": {{"correlation": {corr}}}}}"#
    )
}

fn kernel(name: &str, stream: i64, ts: f64, dur: f64, corr: u64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": {stream}, "ts": {ts}, "dur": {dur}, "args": {{"correlation": {corr}, "stream": {stream}, "device": 0}}}}"#
    )
}

fn memory(ts: f64, bytes: i64, total: i64) -> String {
    format!(
        r#"{{"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": {ts}, "args": {{"Device Type": 1, "Device Id": 0, "Bytes": {bytes}, "Total Allocated": {total}, "Total Reserved": 4096}}}}"#
    )
}

fn report(t: &Trace, steps: &str) -> TraceReplay {
    let opts = AnalysisOptions {
        steps: steps.parse().unwrap_or_else(|_| StepSelection::all()),
        ..AnalysisOptions::default()
    };
    replay(t, &SimOptions::default())
        .unwrap()
        .report_with(&opts)
        .unwrap()
}

/// Four kernels on two streams; the gaps between them are, in order: a
/// short one before work launched at its start, a wait for the host, a
/// short gap before work launched long before, a long one, and the idle
/// tail of the step.
fn idle_trace() -> Trace {
    trace(&[
        step(1, 0.0, 200.0),
        runtime("cudaLaunchKernel", 0.0, 5.0, 1),
        runtime("cudaLaunchKernel", 6.0, 5.0, 3),
        runtime("cudaLaunchKernel", 12.0, 5.0, 4),
        runtime("cudaLaunchKernel", 30.0, 5.0, 2),
        kernel("gemm_a", 7, 10.0, 10.0, 1),
        kernel("gemm_b", 7, 40.0, 10.0, 2),
        kernel("relu", 8, 55.0, 5.0, 3),
        kernel("relu", 8, 100.0, 10.0, 4),
    ])
}

#[test]
fn idle_time_by_cause() {
    let r = report(&idle_trace(), "");
    let s = &r.analysis.measured.steps[0];
    assert_eq!(s.span_us, 200.0);
    assert_eq!(s.exposed_compute_us, 35.0);
    assert_eq!(s.idle_us, 165.0);
    assert_eq!(s.idle_host_wait_us, 20.0);
    assert_eq!(s.idle_kernel_gap_us, 15.0);
    assert_eq!(s.idle_other_us, 130.0);
    assert_eq!(s.exposed_compute_pct.unwrap() + s.idle_pct.unwrap(), 100.0);
    assert_eq!((s.gpu_tasks, s.gpu_task_us), (4, 35.0));
    assert_eq!(s.overlap_pct, None);
    // The replay reproduces the measurement, and its analyses with it.
    assert_eq!(r.analysis.replayed.steps, r.analysis.measured.steps);
}

#[test]
fn hta_view_of_the_same_trace() {
    let r = report(&idle_trace(), "");
    let h = &r.analysis.measured.hta;
    // From the first kernel's start to the last one's end.
    assert_eq!(h.kernel_time_us, 100.0);
    assert_eq!(
        (h.idle_us, h.compute_us, h.non_compute_us),
        (65.0, 35.0, 0.0)
    );
    let by_stream: Vec<_> = h
        .idle_by_stream
        .iter()
        .map(|s| (s.stream, s.host_wait_us, s.kernel_wait_us, s.other_us))
        .collect();
    assert_eq!(by_stream, vec![(7, 20.0, 0.0, 0.0), (8, 0.0, 0.0, 40.0)]);
}

/// A launch outside every operator counts under the annotation a user
/// wrote around it (the optimizer's), not the step's own and not
/// `(no operator)`; one inside the step's annotation alone still has none.
#[test]
fn a_launch_outside_operators_counts_under_its_annotation() {
    let events = vec![
        step(1, 0.0, 100.0),
        r#"{"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 1, "tid": 1, "ts": 1, "dur": 20}"#
            .to_owned(),
        runtime("cudaLaunchKernel", 2.0, 5.0, 1),
        kernel("multi_tensor_apply", 7, 10.0, 30.0, 1),
        runtime("cudaLaunchKernel", 30.0, 5.0, 2),
        kernel("relu", 7, 50.0, 20.0, 2),
    ];
    let r = report(&trace(&events), "");
    let o: Vec<_> = r
        .analysis
        .measured
        .operators
        .iter()
        .map(|o| (o.operator.as_str(), o.gpu_tasks))
        .collect();
    assert_eq!(
        o,
        vec![("Optimizer.step#SGD.step", 1), ("(no operator)", 1)]
    );
}

#[test]
fn kernels_and_operators_of_a_step() {
    let mut events = vec![
        step(1, 0.0, 100.0),
        r#"{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 1, "dur": 20}"#
            .to_owned(),
        runtime("cudaLaunchKernel", 2.0, 5.0, 1),
        runtime("cudaLaunchKernel", 10.0, 5.0, 2),
        kernel("gemm", 7, 10.0, 30.0, 1),
        kernel("gemm", 7, 40.0, 10.0, 2),
        runtime("cudaLaunchKernel", 30.0, 5.0, 3),
        kernel("relu", 7, 50.0, 20.0, 3),
    ];
    events.push(op("aten::empty", 40.0, 1.0));
    let r = report(&trace(&events), "");
    let a = &r.analysis.measured;
    let k: Vec<_> = a
        .kernels
        .iter()
        .map(|k| (k.name.as_str(), k.count, k.total_us, k.mean_us, k.share_pct))
        .collect();
    assert_eq!(
        k,
        vec![
            ("gemm", 2, 40.0, 20.0, Some(66.66666666666666)),
            ("relu", 1, 20.0, 20.0, Some(33.33333333333333))
        ]
    );
    let o: Vec<_> = a
        .operators
        .iter()
        .map(|o| {
            (
                o.operator.as_str(),
                o.gpu_tasks,
                o.total_us,
                o.top_kernel.as_str(),
            )
        })
        .collect();
    assert_eq!(
        o,
        vec![
            ("aten::linear", 2, 40.0, "gemm"),
            ("(no operator)", 1, 20.0, "relu")
        ]
    );
}

#[test]
fn overlap_with_communication() {
    let t = trace(&[
        step(1, 0.0, 100.0),
        runtime("cudaLaunchKernel", 0.0, 5.0, 1),
        runtime("cudaLaunchKernel", 6.0, 5.0, 2),
        runtime("cudaLaunchKernel", 12.0, 5.0, 3),
        kernel("gemm", 7, 40.0, 10.0, 1),
        kernel("gemm", 7, 55.0, 5.0, 2),
        kernel(
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
            9,
            45.0,
            25.0,
            3,
        ),
    ]);
    let r = report(&t, "");
    let s = &r.analysis.measured.steps[0];
    assert_eq!(
        (s.compute_us, s.comm_us, s.overlapped_us),
        (15.0, 25.0, 10.0)
    );
    assert_eq!(s.overlap_pct, Some(40.0));
    assert_eq!(s.hta_overlap_pct, Some(40.0));
    assert_eq!(s.exposed_comm_us, 15.0);
    let c = &r.analysis.measured.collectives[0];
    assert_eq!(c.collective, "all_reduce");
    assert_eq!(
        (c.algorithm.as_deref(), c.protocol.as_deref()),
        (Some("RING"), Some("LL"))
    );
    assert_eq!((c.count, c.total_us), (1, 25.0));
    assert_eq!(c.algbw_gbps, None);
}

#[test]
fn memory_per_step() {
    let t = trace(&[
        step(1, 0.0, 20.0),
        step(2, 20.0, 20.0),
        op("a", 1.0, 10.0),
        op("b", 21.0, 10.0),
        memory(5.0, 100, 100),
        memory(15.0, 200, 300),
        memory(25.0, -100, 200),
    ]);
    let r = report(&t, "");
    let m = r.analysis.memory.as_ref().unwrap();
    assert_eq!(m.devices[0].source, "total_allocated");
    assert_eq!(m.devices[0].peak_allocated_bytes, Some(300));
    assert_eq!(m.devices[0].peak_reserved_bytes, Some(4096));
    let rows: Vec<_> = m
        .steps
        .iter()
        .map(|s| {
            (
                s.start_allocated_bytes,
                s.peak_allocated_bytes,
                s.end_allocated_bytes,
                s.allocations,
                s.freed_bytes,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (None, Some(300), Some(300), 2, 0),
            (Some(300), Some(300), Some(200), 0, 100)
        ]
    );
    // One bin (the window is 30 us): the most at any moment of it.
    assert_eq!(m.devices[0].timeline.allocated_bytes, vec![Some(300)]);
    // Step selection reaches the memory rows too.
    let second = report(&t, "1");
    let m = second.analysis.memory.unwrap();
    assert_eq!(m.steps.len(), 1);
    assert_eq!(m.steps[0].step, "ProfilerStep#2");
    assert_eq!(second.analysis.selected_steps, vec!["ProfilerStep#2"]);
}

#[test]
fn critical_path_verdicts() {
    // A long kernel the thread waits for: GPU-bound.
    let gpu = trace(&[
        step(1, 0.0, 1020.0),
        runtime("cudaLaunchKernel", 0.0, 5.0, 1),
        kernel("gemm", 7, 10.0, 1000.0, 1),
        runtime("cudaDeviceSynchronize", 6.0, 1006.0, 2),
    ]);
    let p = &report(&gpu, "").analysis.critical_path[0];
    assert_eq!(p.verdict, Some("gpu_bound"), "{p:?}");
    assert!(p.gpu_compute_pct.unwrap() > 95.0, "{p:?}");
    // Launched outside every operator: the kernel itself, not
    // `(no operator)`.
    assert_eq!(p.top_operators[0].operator, "gemm");
    let sum = p.cpu_pct.unwrap() + p.gpu_compute_pct.unwrap() + p.communication_pct.unwrap();
    assert!((sum - 100.0).abs() < 1e-9, "{sum}");
    // Long CPU work, then a short kernel: CPU-bound.
    let cpu = trace(&[
        step(1, 0.0, 520.0),
        op("aten::slow", 0.0, 500.0),
        runtime("cudaLaunchKernel", 500.0, 5.0, 1),
        kernel("gemm", 7, 505.0, 5.0, 1),
    ]);
    let p = &report(&cpu, "").analysis.critical_path[0];
    assert_eq!(p.verdict, Some("cpu_bound"), "{p:?}");
    assert_eq!(p.top_operators[0].operator, "aten::slow");
    assert_eq!(p.length_us, 510.0);
    // The host's time between two operators, in the step's annotation
    // alone: its own row, not the step's name.
    let gap = trace(&[
        step(1, 0.0, 520.0),
        op("aten::a", 0.0, 100.0),
        op("aten::b", 400.0, 100.0),
    ]);
    let p = &report(&gap, "").analysis.critical_path[0];
    let ops: Vec<(&str, f64)> = p
        .top_operators
        .iter()
        .map(|o| (o.operator.as_str(), o.us))
        .collect();
    assert_eq!(
        ops,
        vec![
            (lumos_report::HOST_GAP, 300.0),
            ("aten::a", 100.0),
            ("aten::b", 100.0)
        ]
    );
}

#[test]
fn a_selection_the_trace_lacks_is_an_error() {
    let t = idle_trace();
    let replayed = replay(&t, &SimOptions::default()).unwrap();
    let opts = AnalysisOptions {
        steps: "3".parse().unwrap(),
        ..AnalysisOptions::default()
    };
    let e = replayed.report_with(&opts).unwrap_err().to_string();
    assert!(e.contains("t.json") && e.contains("out of range"), "{e}");
}

/// A window whose events all sit at one time has no length: no share of
/// it exists, so the breakdown, the HTA view, the kernel and operator
/// shares and the critical path's shares are `None` (each was 0%, and the
/// path's verdict `cpu_bound` from three zeros), the path has no verdict.
#[test]
fn a_window_of_no_length_has_no_shares() {
    let t = trace(&[
        op("aten::add", 5.0, 0.0),
        runtime("cudaLaunchKernel", 5.0, 0.0, 1),
        kernel("add", 7, 5.0, 0.0, 1),
    ]);
    let r = report(&t, "");
    let a = &r.analysis.measured;
    let s = &a.steps[0];
    assert_eq!(
        (s.step.as_str(), s.span_us, s.gpu_tasks),
        ("window", 0.0, 1)
    );
    let shares = [
        s.exposed_compute_pct,
        s.overlapped_pct,
        s.exposed_comm_pct,
        s.idle_pct,
    ];
    assert_eq!(shares, [None; 4], "{s:?}");
    assert_eq!(a.total.idle_pct, None);
    let h = &a.hta;
    assert_eq!(h.kernel_time_us, 0.0);
    assert_eq!(
        (h.idle_pct, h.compute_pct, h.non_compute_pct),
        (None, None, None)
    );
    assert_eq!(a.kernels.len(), 1);
    assert_eq!(a.kernels[0].share_pct, None);
    assert_eq!(a.operators[0].share_pct, None);
    let p = &r.analysis.critical_path[0];
    assert_eq!(p.length_us, 0.0);
    assert_eq!(p.verdict, None, "{p:?}");
    assert_eq!(
        (p.cpu_pct, p.gpu_compute_pct, p.communication_pct),
        (None, None, None)
    );
    assert!(p.top_operators.is_empty());
}
