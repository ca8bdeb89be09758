//! `lumos ingest` and compact graphs end to end: every command gives on an
//! `.lgraph` file byte for byte the output it gives on its trace.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::path::Path;
use std::process::Output;

use common::lumos;
use lumos_testkit::TempDir;

fn run(args: &[&str], paths: &[&Path]) -> Output {
    lumos().args(args).args(paths).output().unwrap()
}

fn ok(out: Output) -> Vec<u8> {
    assert!(
        out.status.success(),
        "lumos failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// What one file's `inspect --json` counts of events that end absurdly
/// late and of launch calls whose GPU task is missing.
fn damage_counts(file: &serde_json::Value) -> (u64, u64) {
    let count = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("{file}"));
    (
        count(&file["events"]["absurd_durations"]),
        count(&file["launches_without_gpu_task"]),
    )
}

/// The count a warning starts with (`"154 of 154 kernel launch..."`,
/// `"2 events end more than..."`), of the one warning containing `said`.
fn warned_count(file: &serde_json::Value, said: &str) -> u64 {
    let warnings = file["warnings"].as_array().unwrap();
    let w: Vec<&str> = (warnings.iter())
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains(said))
        .collect();
    assert_eq!(w.len(), 1, "{said:?} in {warnings:?}");
    w[0].split(' ').next().unwrap().parse().unwrap()
}

/// The same command on the trace and on its compact graph.
fn same_output(args: &[&str], trace: &Path, graph: &Path) {
    let a = ok(run(args, &[trace]));
    let b = ok(run(args, &[graph]));
    assert!(
        a == b,
        "{args:?} differs between {} and {}",
        trace.display(),
        graph.display()
    );
}

#[test]
fn single_ranks_report_the_same_from_their_compact_graphs() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-ingest-single");
    for rel in [
        "single-rank/a100-recsys-rank3of8.json.gz",
        "single-rank/b200-vllm-tp8-rank0.json.gz",
        "micro/a100-event-sync.json.gz",
    ] {
        let trace = c.path(rel);
        let graph = dir.join("one.lgraph");
        let out = ok(run(
            &["ingest", "-o", graph.to_str().unwrap()],
            &[trace.as_path()],
        ));
        assert!(String::from_utf8_lossy(&out).contains("one.lgraph"));
        same_output(&["replay", "--json"], &trace, &graph);
        same_output(
            &["replay", "--json", "--scale-kernels", "0.5"],
            &trace,
            &graph,
        );
        same_output(&["inspect", "--json"], &trace, &graph);
        // Neither count's warning is given on the corpus; the counts say 0.
        let report: serde_json::Value =
            serde_json::from_slice(&ok(run(&["inspect", "--json"], &[&graph]))).unwrap();
        assert_eq!(damage_counts(&report["traces"][0]), (0, 0), "{rel}");
        let text = String::from_utf8(ok(run(&["inspect"], &[&graph]))).unwrap();
        assert!(!text.contains("absurdly late"), "{rel}: {text}");
        assert!(!text.contains("without their GPU task"), "{rel}: {text}");
        // No wait of these is on an idle stream.
        assert_eq!(report["traces"][0]["idle_stream_waits"], 0, "{rel}");
        assert!(!text.contains("satisfied at once"), "{rel}: {text}");
    }
    let trace = c.path("single-rank/a100-recsys-rank3of8.json.gz");
    let graph = dir.join("recsys.lgraph");
    ok(run(
        &["ingest", "-o", graph.to_str().unwrap()],
        &[trace.as_path()],
    ));
    same_output(&["predict", "--json"], &trace, &graph);
}

#[test]
fn waits_on_idle_streams_are_counted_from_the_trace_and_its_compact_graph() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    // 14 of its waits are on events recorded on cuDNN's side streams,
    // which run no GPU task: satisfied at once, counted, not warned about.
    let dir = TempDir::new("cli-ingest-idle-waits");
    let trace = c.path("single-rank/a100-alexnet-cuda-sync.json.gz");
    let graph = dir.join("alexnet.lgraph");
    ok(run(
        &["ingest", "-o", graph.to_str().unwrap()],
        &[trace.as_path()],
    ));
    same_output(&["inspect", "--json"], &trace, &graph);
    same_output(&["inspect"], &trace, &graph);
    let report: serde_json::Value =
        serde_json::from_slice(&ok(run(&["inspect", "--json"], &[&graph]))).unwrap();
    assert_eq!(report["traces"][0]["idle_stream_waits"], 14);
    let text = String::from_utf8(ok(run(&["inspect"], &[&graph]))).unwrap();
    assert!(
        text.contains("14 stream waits satisfied at once (stream idle: no edge)"),
        "{text}"
    );
    assert!(!text.contains("could not be resolved"), "{text}");
}

#[test]
fn a_job_replays_the_same_from_a_directory_of_compact_graphs() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let dlrm = c.path("multi-rank/dlrm-8xv100");
    let dir = TempDir::new("cli-ingest-job");
    let graphs = dir.join("graphs");
    let out = ok(run(
        &["ingest", "--json", "-o", graphs.to_str().unwrap()],
        &[dlrm.as_path()],
    ));
    let listed: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 8);
    assert!(graphs.join("rank7.lgraph").is_file());
    same_output(&["replay", "--json"], &dlrm, &graphs);
    same_output(&["replay", "--json", "--job"], &dlrm, &graphs);
    same_output(
        &["replay", "--json", "--scale-rank", "3=1.5"],
        &dlrm,
        &graphs,
    );
    same_output(&["inspect", "--json"], &dlrm, &graphs);
    same_output(&["predict", "--json", "--dp", "16"], &dlrm, &graphs);
    // Timelines carry the traces' names.
    let (t1, t2) = (dir.join("t1"), dir.join("t2"));
    ok(run(
        &["replay", "--out", t1.to_str().unwrap()],
        &[dlrm.as_path()],
    ));
    ok(run(
        &["replay", "--out", t2.to_str().unwrap()],
        &[graphs.as_path()],
    ));
    // The same but for the track names and sort order, which an .lgraph
    // file does not keep (metadata rows, one per line).
    let events = |p: &Path| -> Vec<String> {
        let text = String::from_utf8(lumos_testkit::gunzip_file(p)).unwrap();
        text.lines()
            .filter(|l| !l.contains("\"ph\":\"M\""))
            .map(|l| l.trim_end_matches(',').to_owned())
            .collect()
    };
    for r in 0..8 {
        let name = format!("rank{r}.replayed.json.gz");
        assert_eq!(events(&t1.join(&name)), events(&t2.join(&name)), "{name}");
    }
}

#[test]
fn bad_compact_graphs_and_arguments_are_reported() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-ingest-bad");
    let graph = dir.join("r.lgraph");
    let trace = c.path("micro/a100-event-sync.json.gz");
    ok(run(
        &["ingest", "-o", graph.to_str().unwrap()],
        &[trace.as_path()],
    ));
    let bytes = std::fs::read(&graph).unwrap();
    std::fs::write(&graph, &bytes[..bytes.len() / 2]).unwrap();
    let out = run(&["replay", "--json"], &[graph.as_path()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("r.lgraph") && err.contains("truncated"),
        "{err}"
    );
    // A compact graph is not ingested again.
    let out = run(
        &["ingest", "-o", dir.join("x").to_str().unwrap()],
        &[graph.as_path()],
    );
    assert_eq!(out.status.code(), Some(2));
    // Several traces need a directory.
    let file = dir.join("file");
    std::fs::write(&file, b"").unwrap();
    let dlrm = c.path("multi-rank/dlrm-8xv100");
    let out = run(&["ingest", "-o", file.to_str().unwrap()], &[dlrm.as_path()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("need a directory"));
}

/// A trace with more threads than a build keeps: `lumos inspect` counts
/// the events left out with them as skipped, not kept, on the trace and on
/// its compact graph alike.
#[test]
fn issue_12_events_left_out_with_their_threads_are_not_counted_kept() {
    const EXTRA: usize = 7;
    let threads = lumos_graph::MAX_TRACKS + EXTRA;
    let events: Vec<String> = (0..threads)
        .map(|tid| {
            format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"op","pid":1,"tid":{tid},"ts":{tid},"dur":1}}"#
            )
        })
        .collect();
    let dir = TempDir::new("cli-ingest-many-threads");
    let trace = dir.join("many_threads.json");
    std::fs::write(
        &trace,
        format!(r#"{{"traceEvents":[{}]}}"#, events.join(",")),
    )
    .unwrap();
    let graph = dir.join("many_threads.lgraph");
    ok(run(&["ingest", "-o", graph.to_str().unwrap()], &[&trace]));
    same_output(&["inspect", "--json"], &trace, &graph);
    let report: serde_json::Value =
        serde_json::from_slice(&ok(run(&["inspect", "--json"], &[&trace]))).unwrap();
    let counts = &report["traces"][0]["events"];
    assert_eq!(counts["total"], threads);
    assert_eq!(counts["kept"], lumos_graph::MAX_TRACKS);
    assert_eq!(counts["skipped"], EXTRA);
    let rows = counts["skipped_by_reason"].as_array().unwrap();
    assert!(
        rows.iter().any(|r| r["count"] == EXTRA
            && r["reason"]
                .as_str()
                .unwrap()
                .starts_with("on a thread past the 65,536")),
        "{rows:?}"
    );
}

/// What the reader counts but does not keep (ids that are not integers,
/// begin/end events) is said by `inspect`, in its words, on the trace and
/// on its compact graph alike (format 4 stores begin/end events under
/// their own reason). The corpus has neither.
#[test]
fn ignored_ids_and_begin_end_events_are_reported_from_trace_and_graph() {
    let events = [
        r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":20}"#,
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2,"dur":5,"args":{"correlation":1,"External id":1}}"#,
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":8,"dur":5,"args":{"correlation":"n/a","External id":1.5}}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":5,"args":{"correlation":1,"stream":7,"device":0}}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":16,"dur":5,"args":{"correlation":-2,"stream":7,"device":0}}"#,
        r#"{"ph":"B","cat":"user_annotation","name":"span","pid":1,"tid":1,"ts":0}"#,
        r#"{"ph":"E","cat":"user_annotation","name":"span","pid":1,"tid":1,"ts":30}"#,
    ];
    let dir = TempDir::new("cli-ingest-ignored");
    let trace = dir.join("ignored.json");
    std::fs::write(
        &trace,
        format!(r#"{{"traceEvents":[{}]}}"#, events.join(",")),
    )
    .unwrap();
    let graph = dir.join("ignored.lgraph");
    ok(run(&["ingest", "-o", graph.to_str().unwrap()], &[&trace]));
    same_output(&["inspect", "--json"], &trace, &graph);
    let text = String::from_utf8(ok(run(&["inspect"], &[&graph]))).unwrap();
    for warning in [
        "warning: 2 events with a malformed \"correlation\" (first at traceEvents[2]): kept \
         without it",
        "warning: 1 event with a malformed \"External id\" (first at traceEvents[2])",
        "warning: 2 begin/end (\"B\"/\"E\") duration events skipped (first at traceEvents[5]): \
         valid trace events, which lumos does not read",
        "begin/end (B/E) duration event, not read",
    ] {
        let whole = common::warnings(&text).join("\n");
        assert!(
            text.contains(warning) || whole.contains(warning),
            "{warning}\n{text}"
        );
    }
    assert!(!text.contains("malformed event"), "{text}");
}

/// A trace whose kernels were removed (their launch calls left without a
/// GPU task) and two of whose events end absurdly late: `inspect --json`
/// counts both, as the warnings count them, on the trace and on its
/// compact graph alike, and the text says them.
#[test]
fn launches_without_gpu_tasks_and_absurd_durations_are_counted() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let src = c.path("single-rank/h100-vit-inference.json.gz");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&lumos_testkit::gunzip_file(&src)).unwrap();
    let events = doc["traceEvents"].as_array_mut().unwrap();
    events.retain(|e| e["cat"] != "kernel");
    let mut late = 0;
    for e in events.iter_mut() {
        if late < 2 && (e["cat"] == "user_annotation" || e["cat"] == "cpu_op") {
            e["dur"] = serde_json::json!(1e12);
            late += 1;
        }
    }
    assert_eq!(late, 2);
    let dir = TempDir::new("cli-ingest-damage-counts");
    let trace = dir.join("damaged.json");
    std::fs::write(&trace, serde_json::to_vec(&doc).unwrap()).unwrap();
    let graph = dir.join("damaged.lgraph");
    ok(run(&["ingest", "-o", graph.to_str().unwrap()], &[&trace]));
    same_output(&["inspect", "--json"], &trace, &graph);
    same_output(&["inspect"], &trace, &graph);
    let report: serde_json::Value =
        serde_json::from_slice(&ok(run(&["inspect", "--json"], &[&graph]))).unwrap();
    let file = &report["traces"][0];
    let (absurd, unlaunched) = damage_counts(file);
    assert_eq!(absurd, 2);
    assert_eq!(
        absurd,
        warned_count(file, "after the trace's last event start")
    );
    assert_eq!(
        unlaunched,
        warned_count(file, "have no GPU task of their correlation id")
    );
    // Of the 154 kernels' calls, those in the window's last tenth after
    // the last recorded launch are taken for its end.
    assert!((130..=154).contains(&unlaunched), "{unlaunched}");
    let text = String::from_utf8(ok(run(&["inspect"], &[&graph]))).unwrap();
    for line in [
        "    2 events end absurdly late (kept as written)\n".to_owned(),
        format!("    {unlaunched} launch and copy calls without their GPU task\n"),
    ] {
        assert!(text.contains(&line), "{line:?} not in\n{text}");
    }
}

/// Outputs named after traces whose names are not UTF-8 keep their bytes:
/// `tr\xff.json.gz` and `tr\xfe.json.gz` were both `tr\u{FFFD}.lgraph`
/// (refused as one name) and both `trace.replayed.json.gz`, and a
/// directory holding only them had "no trace files".
#[cfg(unix)]
#[test]
fn names_that_are_not_utf8_keep_their_bytes() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-ingest-not-utf8");
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    let trace = c.path("single-rank/a100-alexnet-cuda-sync.json.gz");
    let name =
        |stem: &[u8], rest: &str| OsStr::from_bytes(&[stem, rest.as_bytes()].concat()).to_owned();
    for stem in [b"tr\xff", b"tr\xfe"] {
        // Copies: two links to one file are one input given twice.
        std::fs::copy(&trace, traces.join(name(stem, ".json.gz"))).unwrap();
    }
    let listed = |d: &Path| {
        let mut names: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let out = dir.join("lg");
    ok(run(
        &["ingest", "-o", out.to_str().unwrap()],
        &[traces.as_path()],
    ));
    assert_eq!(
        listed(&out),
        [name(b"tr\xfe", ".lgraph"), name(b"tr\xff", ".lgraph")]
    );
    let out = dir.join("timelines");
    let o = out.to_str().unwrap();
    let args = ["replay", "--per-trace", "--out", o, "--critical-path", o];
    ok(run(&args, &[traces.as_path()]));
    let mut want = Vec::new();
    for stem in [b"tr\xfe", b"tr\xff"] {
        for rest in [
            ".critical-path.json",
            ".critical.json.gz",
            ".replayed.json.gz",
        ] {
            want.push(name(stem, rest));
        }
    }
    assert_eq!(listed(&out), want);
    // The compact graph reports as its trace.
    let lg = dir.join("lg").join(name(b"tr\xff", ".lgraph"));
    same_output(
        &["replay", "--json"],
        &traces.join(name(b"tr\xff", ".json.gz")),
        &lg,
    );
    // And names its outputs after it: format 4 kept the trace's path as
    // UTF-8 text, so they were `tr\u{FFFD}.replayed.json.gz` (format 5
    // keeps its bytes).
    let out = dir.join("from-lgraph");
    let o = out.to_str().unwrap();
    ok(run(&["replay", "--out", o], &[lg.as_path()]));
    assert_eq!(listed(&out), [name(b"tr\xff", ".replayed.json.gz")]);
}
