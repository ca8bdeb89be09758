//! Data-driven builder tests: each folder of `tests/data/build` pins one
//! inference rule of the builder with a tiny trace (`trace.json`, or
//! `corpus.txt` naming a corpus trace) and the graph dump it must give
//! (`expected.txt`, see `lumos_graph::dump`). A missing `expected.txt` is
//! written and the test fails once, so that it is read before it counts;
//! `UPDATE_EXPECT=1` rewrites them all; a mismatch prints both.
//! Each case's `about.txt` says what the rule should produce and why the
//! expected dump is that.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::io::Write;
use std::path::{Path, PathBuf};

use lumos_graph::{
    build, build_owned, build_streamed, check, dump, CommSink, RankInput, TraceAbout, TrackSink,
};
use lumos_trace::FlowKind;

/// The trace of one case, or `None` when it names a corpus trace and the
/// corpus is absent.
fn trace_of(case: &Path) -> Option<PathBuf> {
    let own = case.join("trace.json");
    if own.is_file() {
        return Some(own);
    }
    let named = case.join("corpus.txt");
    let rel = std::fs::read_to_string(&named)
        .unwrap_or_else(|e| panic!("{}: no trace.json, and {e}", named.display()));
    Some(lumos_testkit::corpus()?.path(rel.trim()))
}

/// The graph, measured times and report of `trace` built as `lumos replay`
/// builds one file: its events filed as the reader folds them
/// (`build_streamed`).
fn streamed(
    trace: &Path,
) -> (
    lumos_graph::Graph,
    lumos_graph::Measured,
    lumos_graph::BuildReport,
) {
    let mut sink = TrackSink::new();
    let t =
        lumos_trace::read_path_into(trace, &|_| {}, &mut sink).unwrap_or_else(|e| panic!("{e}"));
    build_streamed(t, sink)
}

/// The dump of one case's graph, after the graph's invariants are checked
/// and the builds that take the trace (`build_owned`, which frees its
/// events midway, and `build_streamed`, whose events never were in the
/// trace) are checked to give the same graph, measured times and report.
fn actual(case: &Path, trace: &Path) -> String {
    let t = lumos_trace::read_path(trace).unwrap_or_else(|e| panic!("{e}"));
    let (g, measured, report) = build(&t);
    let v = check(&g);
    assert!(v.is_empty(), "{}: {v:?}", case.display());
    assert_eq!(measured.tasks.len(), g.tasks.len());
    let got = dump(&g, Some(&report));
    let (g2, measured2, report2) = build_owned(t);
    assert_eq!(
        dump(&g2, Some(&report2)),
        got,
        "{}: build_owned",
        case.display()
    );
    assert_eq!(
        format!("{measured2:?}"),
        format!("{measured:?}"),
        "{}: build_owned's measured times",
        case.display()
    );
    assert_eq!(report2.warnings, report.warnings, "{}", case.display());
    let (g3, measured3, report3) = streamed(trace);
    assert_eq!(
        format!("{g3:?}"),
        format!("{g2:?}"),
        "{}: build_streamed",
        case.display()
    );
    assert_eq!(
        format!("{measured3:?}"),
        format!("{measured:?}"),
        "{}: build_streamed's measured times",
        case.display()
    );
    assert_eq!(
        format!("{report3:?}"),
        format!("{report2:?}"),
        "{}: build_streamed's report",
        case.display()
    );
    got
}

/// On every corpus trace, the build fed by the reader (`build_streamed`,
/// what `lumos replay FILE` runs) gives exactly what `build_owned` of the
/// trace read gives: the graph, the measured times and the report.
#[test]
fn the_streamed_build_equals_the_owned_build_on_every_corpus_trace() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let files = corpus.traces("");
    assert!(!files.is_empty());
    for path in files {
        let t = lumos_trace::read_path(&path).unwrap_or_else(|e| panic!("{e}"));
        let (g, measured, report) = build_owned(t);
        let (g2, measured2, report2) = streamed(&path);
        let name = path.display();
        assert_eq!(format!("{g2:?}"), format!("{g:?}"), "{name}: graph");
        assert_eq!(
            format!("{measured2:?}"),
            format!("{measured:?}"),
            "{name}: measured"
        );
        assert_eq!(
            format!("{report2:?}"),
            format!("{report:?}"),
            "{name}: report"
        );
    }
}

/// On every corpus trace, the trace the streamed read leaves holds what
/// the replay's timeline reads of it (`TraceAbout`: tracks, GPU
/// annotations, forward-backward flows) as the trace `read_path` gives,
/// and the sink counts the launch flows it took instead of keeping them.
#[test]
fn the_streamed_read_keeps_what_the_timeline_reads() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let mut fwd_bwd = 0;
    for path in corpus.traces("") {
        let name = path.display();
        let t = lumos_trace::read_path(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut sink = TrackSink::new();
        let s = lumos_trace::read_path_into(&path, &|_| {}, &mut sink)
            .unwrap_or_else(|e| panic!("{e}"));
        let about = |t: &lumos_trace::Trace| format!("{:?}", TraceAbout::of(t));
        assert_eq!(about(&s), about(&t), "{name}");
        let is_launch = |f: &&lumos_trace::Flow| f.kind == FlowKind::Launch;
        let others: Vec<_> = t.flows.iter().filter(|f| !is_launch(f)).copied().collect();
        assert_eq!(s.flows, others, "{name}");
        let launches = t.flows.iter().filter(is_launch).count() as u64;
        assert_eq!(sink.launch_flows_taken(), launches, "{name}");
        fwd_bwd += others.len();
    }
    assert!(fwd_bwd > 0, "no forward-backward flows in the corpus");
}

#[test]
fn every_builder_rule_gives_its_expected_graph() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/build");
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| !v.is_empty());
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 10, "{cases:?}");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy();
        let Some(trace) = trace_of(case) else {
            continue;
        };
        let got = actual(case, &trace);
        let path = case.join("expected.txt");
        let want = std::fs::read_to_string(&path).ok();
        if want.as_deref() == Some(got.as_str()) {
            continue;
        }
        match want {
            Some(want) if !update => failures.push(format!(
                "{name}: the graph differs from expected.txt (UPDATE_EXPECT=1 rewrites it)\n\
                 --- expected\n{want}--- actual\n{got}"
            )),
            want => {
                std::fs::write(&path, &got).unwrap();
                // Past the harness's capture: a rewrite must be seen.
                let _ = writeln!(std::io::stderr(), "wrote {}", path.display());
                // A new case fails once, so no dump is taken unread.
                if want.is_none() && !update {
                    failures.push(format!(
                        "{name}: no expected.txt; wrote it, check it by hand\n{got}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// On every corpus trace, the rank built as the reader reads it
/// (`RankInput::from_sink`, what loading several files runs) is exactly
/// the rank built from the trace read whole (`RankInput::from_trace`): its
/// metadata, graph, measured times, communication tasks (arguments, peers,
/// process groups, issue order) and report.
#[test]
fn the_streamed_rank_equals_the_rank_of_the_trace_on_every_corpus_trace() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let mut comms = 0;
    for path in corpus.traces("") {
        let name = path.display();
        let t = lumos_trace::read_path(&path).unwrap_or_else(|e| panic!("{e}"));
        let whole = RankInput::from_trace(&t);
        drop(t);
        let mut sink = CommSink::new();
        let s = lumos_trace::read_path_into(&path, &|_| {}, &mut sink)
            .unwrap_or_else(|e| panic!("{e}"));
        let streamed = RankInput::from_sink(s, sink);
        assert_eq!(streamed.graph.comms, whole.graph.comms, "{name}: comms");
        assert_eq!(streamed.graph.groups, whole.graph.groups, "{name}: groups");
        assert_eq!(format!("{streamed:?}"), format!("{whole:?}"), "{name}");
        comms += whole.graph.comms.len();
    }
    assert!(comms > 0, "no communication tasks in the corpus");
}
