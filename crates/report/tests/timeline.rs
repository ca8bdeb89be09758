//! Timelines read back as traces with the times they were written with.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use lumos_graph::{build, Graph, TaskId};
use lumos_report::{Timeline, TimelineSource};
use lumos_sim::{simulate, SimOptions, TaskTimes};

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

/// The elements of `a` (sorted) that `b` (sorted) lacks, counting repeats.
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
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let path = corpus.path("single-rank/a100-alexnet-cuda-sync.json.gz");
    let trace = lumos_trace::read_path(&path).unwrap();
    let (graph, measured, report) = build(&trace);
    let schedule = simulate(&graph, &SimOptions::default()).unwrap();
    let source = TimelineSource::of(&trace);
    let timeline = Timeline::replayed(&source, &graph, &measured, &schedule);
    assert_eq!(
        timeline.file_name(),
        "a100-alexnet-cuda-sync.replayed.json.gz"
    );
    let bytes = timeline.write(Vec::new()).unwrap();
    let back = lumos_trace::read_bytes(&path, &bytes).unwrap();
    assert_eq!(back.skipped.total(), 0);
    assert_eq!(back.meta.base_time_ns, trace.meta.base_time_ns);
    assert_eq!(back.meta.rank, trace.meta.rank);

    // The file: one event per scope (operators with children and
    // annotations, steps among them), then one per task, with its name,
    // processor, times to the ns and correlation.
    let scopes = back.events.len() - graph.tasks.len();
    assert_eq!(scopes, graph.scopes.len());
    for (i, e) in back.events.iter().skip(scopes).enumerate() {
        let id = TaskId(i as u32);
        let t = graph.task(id);
        assert_eq!(back.name(e), graph.name(id));
        assert_eq!(e.correlation(), Some(t.correlation));
        assert_eq!(e.ts_ns, measured.origin_ns + schedule.start_of(id));
        assert_eq!(e.end_ns(), measured.origin_ns + schedule.end_of(id));
    }

    // Its graph: the same tasks (names, kinds, processors, times), except
    // that the builder may now split a call that ends right after the
    // kernel it launched into a zero-length issuing part and the wait (a
    // 3 s first cudaLaunchKernel here): those extra tasks are reported.
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

#[test]
fn a_replay_keeps_what_its_report_and_timeline_need() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace = lumos_trace::read_path(&corpus.path("micro/a100-event-sync.json.gz")).unwrap();
    let replayed = lumos_report::replay(&trace, &SimOptions::default()).unwrap();
    let report = replayed.report();
    assert_eq!(report.tasks, replayed.graph.tasks.len());
    assert_eq!(report.path, trace.path.display().to_string());
    let again = lumos_report::replay_trace(&trace, &SimOptions::default()).unwrap();
    assert_eq!(report.window.replayed_us, again.window.replayed_us);
    let bytes = replayed.timeline().write(Vec::new()).unwrap();
    let back = lumos_trace::read_bytes(&trace.path, &bytes).unwrap();
    assert_eq!(
        back.events.len(),
        replayed.graph.tasks.len() + replayed.graph.scopes.len()
    );
}

#[test]
fn a_replay_that_takes_the_trace_gives_the_same_report_and_timeline() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    // With `gpu_user_annotation` events and launch flows, which the
    // timeline writes again: taken out before the owned build frees them.
    for rel in [
        "micro/a100-event-sync.json.gz",
        "single-rank/gp100-train-gpu-annotations.json.gz",
    ] {
        let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
        let opts = SimOptions::default();
        let borrowed = lumos_report::replay(&trace, &opts).unwrap();
        let owned =
            lumos_report::replay_owned(trace.clone(), &opts, &[], &Default::default()).unwrap();
        let json = |r: &lumos_report::Replayed| serde_json::to_string(&r.report()).unwrap();
        assert_eq!(json(&owned), json(&borrowed), "{rel}");
        let timeline = |r: &lumos_report::Replayed| r.timeline().write(Vec::new()).unwrap();
        assert!(
            timeline(&owned) == timeline(&borrowed),
            "{rel}: timelines differ"
        );
    }
}

/// The step end rule and the written timeline's clip agree: a replayed
/// step annotation ends at its last CPU task's replayed end plus its
/// measured tail (`lumos_sim::annotation_spans`, what `lumos replay`'s
/// step times start from), and the written timeline pins the annotation
/// there, then clips it where the next task on its thread starts (a
/// timeline's slices must nest). The clip binds only where the replay
/// starts that next task before the rule's end, or where the measured
/// annotation ended during a call; neither happens in these what-ifs, so
/// a timeline read back holds every step annotation where the rule put it
/// (and with it the replayed step times). A change to either side alone
/// fails here.
#[test]
fn written_step_annotations_are_where_the_step_rule_puts_them() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in [
        "single-rank/v100-resnet50-2021-capture-a.json.gz",
        "single-rank/v100-resnet50-2021-capture-b.json.gz",
        "multi-rank/dlrm-8xv100/rank0.json.gz",
    ] {
        let path = corpus.path(rel);
        let trace = lumos_trace::read_path(&path).unwrap();
        let (graph, measured, _) = build(&trace);
        for opts in [
            SimOptions::default().scale(lumos_sim::GpuSelector::All, 0.5),
            SimOptions::default().scale(lumos_sim::GpuSelector::Compute, 3.0),
        ] {
            let schedule = simulate(&graph, &opts).unwrap();
            let rule = lumos_sim::annotation_spans(&graph, &schedule);
            let source = TimelineSource::of(&trace);
            let timeline = Timeline::replayed(&source, &graph, &measured, &schedule);
            let bytes = timeline.write(Vec::new()).unwrap();
            let back = lumos_trace::read_bytes(&path, &bytes).unwrap();
            let (g2, m2, _) = build(&back);
            assert_eq!(g2.steps.len(), graph.steps.len(), "{rel}");
            assert!(!rule.is_empty(), "{rel}");
            for (k, (r, w)) in rule.iter().zip(&m2.step_annotations).enumerate() {
                let shift = m2.origin_ns - measured.origin_ns;
                assert_eq!(
                    (r.start_ns, r.end_ns),
                    (w.start_ns + shift, w.end_ns + shift),
                    "{rel}: step {k}"
                );
            }
            let replayed = lumos_sim::step_spans(&graph, &schedule, None);
            let again = lumos_sim::step_spans(&g2, &m2.tasks, Some(&m2.step_annotations));
            let lens = |v: &[lumos_graph::Span]| v.iter().map(|s| s.len_ns()).collect::<Vec<_>>();
            assert_eq!(lens(&replayed), lens(&again), "{rel}");
        }
    }
}
