//! Metrics on hand-made timelines, measured and replayed alike.

use lumos_graph::{Span, Step, TaskId};
use lumos_sim::{
    annotation_spans, breakdown, gpu_busy_timeline, step_spans, timeline_bin_ns, whole_span,
    window_span, Breakdown, BusyBins, SpanColumns, MAX_TIMELINE_BINS,
};

use crate::builder::Builder;

fn sp(start_ns: i64, end_ns: i64) -> Span {
    Span { start_ns, end_ns }
}

/// Two compute streams, one comm stream and a CPU op, with the replay
/// producing exactly the spans listed in `measured`.
fn overlap_example() -> (Builder, Vec<Span>) {
    let mut b = Builder::new();
    let (t, s0, s1, s2) = (b.thread(), b.stream(0), b.stream(0), b.stream(0));
    let cpu = b.cpu(t, 100);
    let k0 = b.kernel(s0, 30);
    let k1 = b.kernel(s1, 20);
    let c = b.comm(s2, 25);
    let k2 = b.kernel(s0, 30);
    for (task, at) in [(k0, 10), (k1, 30), (c, 45), (k2, 90)] {
        b.release(task, at);
    }
    let _ = cpu;
    let measured = vec![sp(0, 100), sp(10, 40), sp(30, 50), sp(45, 70), sp(90, 120)];
    (b, measured)
}

#[test]
fn breakdown_splits_compute_and_comm_overlap() {
    let (b, measured) = overlap_example();
    let window = sp(0, 100);
    // C = [10,50] + [90,100] (clipped), M = [45,70].
    let expected = Breakdown {
        exposed_compute_ns: 45,
        overlapped_ns: 5,
        exposed_comm_ns: 20,
        idle_ns: 30,
        total_ns: 100,
    };
    assert_eq!(breakdown(&b.graph, &measured, window), expected);
    assert_eq!(expected.busy_ns(), 70);
    // The replay reproduces the same spans, so the same numbers.
    let replayed = b.run();
    assert_eq!(breakdown(&b.graph, &replayed, window), expected);
    let start: Vec<i64> = measured.iter().map(|s| s.start_ns).collect();
    let end: Vec<i64> = measured.iter().map(|s| s.end_ns).collect();
    let columns = SpanColumns {
        start_ns: &start,
        end_ns: &end,
    };
    assert_eq!(breakdown(&b.graph, &columns, window), expected);
}

#[test]
fn breakdown_clips_to_the_window() {
    let (b, measured) = overlap_example();
    let got = breakdown(&b.graph, &measured, sp(40, 60));
    assert_eq!(
        got,
        Breakdown {
            exposed_compute_ns: 5,
            overlapped_ns: 5,
            exposed_comm_ns: 10,
            idle_ns: 0,
            total_ns: 20,
        }
    );
    assert_eq!(
        breakdown(&b.graph, &measured, sp(70, 70)),
        Breakdown::default()
    );
}

#[test]
fn busy_timeline_gives_the_busy_fraction_per_bin() {
    let (b, measured) = overlap_example();
    let window = sp(0, 100);
    let got = gpu_busy_timeline(&b.graph, &measured, window, 25);
    assert_eq!(got.bin_ns, 25);
    assert_eq!(got.busy, vec![0.6, 1.0, 0.8, 0.4]);
    // The last bin is 10 ns long and fully busy.
    let got = gpu_busy_timeline(&b.graph, &measured, window, 30);
    assert_eq!(got.busy, vec![20.0 / 30.0, 1.0, 10.0 / 30.0, 1.0]);
    assert!(gpu_busy_timeline(&b.graph, &measured, window, 0)
        .busy
        .is_empty());
}

#[test]
fn busy_timeline_bins_are_bounded_whatever_the_window() {
    const MS: i64 = 1_000_000;
    // Up to the bound, bins stay as asked; then 2, 5, 10, 20 ... times.
    assert_eq!(timeline_bin_ns(43_425 * MS, MS), MS);
    assert_eq!(timeline_bin_ns(MAX_TIMELINE_BINS * MS, MS), MS);
    assert_eq!(timeline_bin_ns(MAX_TIMELINE_BINS * MS + 1, MS), 2 * MS);
    assert_eq!(timeline_bin_ns(86_400_000 * MS, MS), 2_000 * MS);
    assert_eq!(timeline_bin_ns(i64::MAX, MS), 200_000_000 * MS);
    assert_eq!(timeline_bin_ns(i64::MAX, i64::MAX / 3), i64::MAX / 3);
    // Two tasks a day apart: a bounded timeline, busy only at its ends.
    let (b, _) = overlap_example();
    let day = 86_400_000 * MS;
    let times: Vec<Span> = (0..b.graph.tasks.len())
        .map(|i| if i == 1 { sp(0, MS) } else { sp(day - MS, day) })
        .collect();
    let got = gpu_busy_timeline(&b.graph, &times, sp(0, day), MS);
    assert_eq!(got.bin_ns, 2_000 * MS);
    assert_eq!(got.busy.len(), 43_200);
    assert!(got.busy[1..43_199].iter().all(|&f| f == 0.0));
    assert_eq!((got.busy[0], got.busy[43_199]), (0.0005, 0.0005));
    // A window as long as time itself still gets its bins.
    let got = gpu_busy_timeline(&b.graph, &times, sp(0, i64::MAX), MS);
    assert!(got.busy.len() as i64 <= MAX_TIMELINE_BINS);
}

/// One thread: step 1 = [f1, l1, g1] launching a long kernel k1; step 2 =
/// [f2, g2] with no GPU work.
fn stepped() -> (Builder, [TaskId; 6]) {
    let mut b = Builder::new();
    let (t, st) = (b.thread(), b.stream(0));
    let f1 = b.cpu(t, 10);
    let l1 = b.call(t, 5);
    let g1 = b.cpu(t, 10);
    let f2 = b.cpu(t, 10);
    let g2 = b.cpu(t, 10);
    let k1 = b.kernel(st, 100);
    b.release(f1, 5);
    b.launch(l1, k1, 1);
    b.graph.steps = vec![
        Step {
            name: "ProfilerStep#1".into(),
            first_task: f1,
            lead_ns: 3,
            last_task: g1,
            tail_ns: 2,
            tasks: vec![f1, l1, g1, k1],
        },
        Step {
            name: "ProfilerStep#2".into(),
            first_task: f2,
            lead_ns: 1,
            last_task: g2,
            tail_ns: 4,
            tasks: vec![f2, g2],
        },
    ];
    (b, [f1, l1, g1, f2, g2, k1])
}

#[test]
fn step_span_runs_to_the_last_gpu_task_of_the_step() {
    let (b, _) = stepped();
    let s = b.run();
    // f1 5..15, l1 15..20, g1 20..30, k1 16..116, f2 30..40, g2 40..50.
    assert_eq!(annotation_spans(&b.graph, &s), vec![sp(2, 32), sp(29, 54)]);
    assert_eq!(step_spans(&b.graph, &s, None), vec![sp(2, 116), sp(29, 54)]);
}

#[test]
fn the_window_holds_every_step_and_every_task() {
    let (b, _) = stepped();
    let s = b.run();
    let steps = step_spans(&b.graph, &s, None);
    // The first step's annotation opens 3 ns before its first task (5):
    // the tasks alone made a window (5..116) shorter at its start than the
    // step it holds (2..116), as the DLRM rank 0's 14.455 ms step sat in a
    // window of 14.428 ms.
    assert_eq!(whole_span(&s), sp(5, 116));
    assert_eq!(window_span(&s, &steps), sp(2, 116));
    for st in &steps {
        let w = window_span(&s, &steps);
        assert!(w.start_ns <= st.start_ns && st.end_ns <= w.end_ns);
    }
    // Work after the last step (k1 ends at 116, past step 2's 54) stays in.
    assert_eq!(window_span(&s, &[sp(29, 54)]), sp(5, 116));
    // Without steps, the tasks' span; without tasks, the steps'.
    assert_eq!(window_span(&s, &[]), whole_span(&s));
    assert_eq!(
        window_span(&Vec::<Span>::new(), &[sp(3, 9), sp(8, 20)]),
        sp(3, 20)
    );
}

#[test]
fn step_span_from_annotations_matches_the_formula_on_measured_times() {
    let (b, _) = stepped();
    // A measured run with some extra CPU gaps; lead and tail come from it.
    let measured = vec![
        sp(7, 17),
        sp(18, 23),
        sp(25, 35),
        sp(36, 46),
        sp(50, 60),
        sp(20, 90),
    ];
    let annotations = [sp(4, 37), sp(35, 64)];
    let from_annotations = step_spans(&b.graph, &measured, Some(&annotations));
    let from_formula = step_spans(&b.graph, &measured, None);
    assert_eq!(from_annotations, vec![sp(4, 90), sp(35, 64)]);
    assert_eq!(from_formula, from_annotations);
}

#[test]
fn graph_without_steps_uses_the_whole_timeline() {
    let (b, measured) = overlap_example();
    assert_eq!(step_spans(&b.graph, &measured, None), vec![sp(0, 120)]);
    assert_eq!(whole_span(&measured), sp(0, 120));
}

#[test]
fn busy_bins_count_only_what_lies_inside_the_window() {
    // Window 100..200 in bins of 50: spans reaching outside it are clipped,
    // never counted into a wrong bin.
    let mut bins = BusyBins::new(sp(100, 200), 50);
    bins.add(sp(-1_000_000, 120));
    bins.add(sp(180, 10_000_000));
    bins.add(sp(300, 400));
    let t = bins.finish();
    assert_eq!(t.bin_ns, 50);
    assert_eq!(t.busy, vec![0.4, 0.4]);
}

#[test]
fn busy_bins_of_a_window_longer_than_the_clock_range_finish() {
    // A damaged input can make a window whose length does not fit in an
    // `i64`: its bins' edges saturate, and adding a span once never ended.
    let window = sp(-6_000_000_000_000_000_000, 6_000_000_000_000_000_000);
    let mut bins = BusyBins::new(window, 1_000);
    bins.add(sp(-5_000_000_000_000_000_000, -4_000_000_000_000_000_000));
    bins.add(sp(5_000_000_000_000_000_000, 5_500_000_000_000_000_000));
    let t = bins.finish();
    assert!(!t.busy.is_empty());
    let fraction = |b: &f64| (0.0..=1.0).contains(b);
    assert!(t.busy.iter().all(fraction), "{:?}", t.busy);
}
