//! The tables of lumos-report (breakdown per step, kernels) on hand-made
//! traces, and a job of ranks without steps.

use std::path::Path;

const TRACE: &str = r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 3, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 6, "dur": 20, "args": {"correlation": 7, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 12, "dur": 4}
]}"#;

#[test]
fn kernels_are_grouped_by_name_and_operator() {
    let trace = lumos_trace::read_bytes(Path::new("t.json"), TRACE.as_bytes()).unwrap();
    let r = lumos_report::replay(&trace, &Default::default()).unwrap();
    let t = r.tables();
    assert_eq!(t.kernels.len(), 1);
    let k = &t.kernels[0];
    assert_eq!(
        (k.name.as_str(), k.operator.as_deref()),
        ("gemm", Some("aten::mm"))
    );
    assert_eq!((k.kind, k.comm, k.count), ("kernel", false, 1));
    assert_eq!(k.measured_us, 20.0);
    assert_eq!(k.replayed_us, 20.0);
}

#[test]
fn a_trace_without_steps_has_one_window_row_summing_to_its_length() {
    let trace = lumos_trace::read_bytes(Path::new("t.json"), TRACE.as_bytes()).unwrap();
    let r = lumos_report::replay(&trace, &Default::default()).unwrap();
    let t = r.tables();
    assert_eq!(t.steps.len(), 1);
    let s = &t.steps[0];
    assert_eq!(s.step, "window");
    let b = s.measured;
    let sum = b.exposed_compute_us + b.overlapped_us + b.exposed_comm_us + b.idle_us;
    assert_eq!(sum, b.total_us);
    assert_eq!(b.total_us, r.report().window.measured_us);
}

#[test]
fn a_job_of_one_rank_without_steps_replays_with_one_window_step() {
    let trace = lumos_trace::read_bytes(Path::new("t.json"), TRACE.as_bytes()).unwrap();
    let job = lumos_graph::assemble(vec![lumos_graph::RankInput::from_trace(&trace)]).unwrap();
    let r = lumos_report::replay_jointly(&job, &Default::default(), &[], false).unwrap();
    let steps = r.report().job.unwrap().steps.unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].name, "window");
    assert_eq!(r.tables()[0].kernels.len(), 1);
}
