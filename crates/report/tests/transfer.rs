//! `transfer_replay`: B's durations replace A's, B's steps stand beside
//! the prediction (the end-to-end checks on the corpus are the CLI's,
//! crates/cli/tests/durations_from.rs).

use lumos_report::{transfer_replay, Recording};
use lumos_sim::SimOptions;

/// Two steps of one operator on one thread, the second of B's twice as
/// long as A's.
fn trace(second_dur: u32) -> lumos_trace::Trace {
    let text = format!(
        r#"{{"traceEvents": [
  {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}},
  {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 80}},
  {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": {}}},
  {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 110, "dur": {second_dur}}}
]}}"#,
        second_dur + 20
    );
    lumos_trace::read_bytes(std::path::Path::new("t.json"), text.as_bytes()).unwrap()
}

#[test]
fn b_s_durations_replace_a_s_and_b_s_steps_stand_beside_them() {
    let (ta, tb) = (trace(80), trace(160));
    let (ga, ma, _) = lumos_graph::build(&ta);
    let (gb, mb, _) = lumos_graph::build(&tb);
    let rec = |path, graph, measured| Recording {
        path,
        graph,
        measured,
    };
    let (a, b) = (rec("a.json", &ga, &ma), rec("b.json", &gb, &mb));
    let (report, _) = transfer_replay(a, b, &SimOptions::default()).unwrap();
    assert_eq!(report.matched.share, Some(1.0));
    assert_eq!(report.steps.len(), 2);
    let second = &report.steps[1];
    assert_eq!(second.a_measured_us, 100.0);
    let b = second.b.as_ref().unwrap();
    assert_eq!(b.measured_us, 180.0);
    assert_eq!(second.predicted_us, b.replayed_us);
    let mean = report.mean.unwrap();
    assert_eq!(mean.steps, 2);
    assert_eq!(mean.replay_error_pct, Some(0.0));
    // Onto itself: the replay.
    let (same, _) = transfer_replay(a, a, &SimOptions::default()).unwrap();
    assert_eq!(same.mean.unwrap().a_error_pct, Some(0.0));
}
