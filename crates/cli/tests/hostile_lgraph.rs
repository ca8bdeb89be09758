//! Compact graph files that are well formed (magic, version, checksums,
//! ids in range) but whose graph no builder makes: a cycle, a task on two
//! processors or on none, durations that are negative or overflow, a
//! launch edge into a CPU task, steps whose ends are out of order. Such a
//! file is hostile input like a damaged trace: every command must exit 0
//! or 1 (or 2 for a prediction the file cannot support), naming the file
//! in its error, and never panic, hang or abort; a graph that breaks a
//! build's invariants (a cycle, a task not exactly once on its processor)
//! is refused as a corrupt file when read.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a test: printing is its job

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::lumos;
use lumos_graph::{Anchor, DepKind, Edge, Graph, TaskId};
use lumos_store::{Source, StoredRank};
use lumos_testkit::TempDir;

/// Each command is given this long; a hang is a failure.
const TIME_LIMIT: Duration = Duration::from_secs(60);

/// One way to make a well-formed graph hostile: what it does, whether
/// reading the file must refuse it (a graph no build makes), and the edit.
type Mutation = (&'static str, bool, fn(&mut Graph));

fn last_on_first_processor(g: &Graph) -> (TaskId, TaskId) {
    let p = g.processors.iter().find(|p| p.tasks.len() >= 2).unwrap();
    (p.tasks[0], *p.tasks.last().unwrap())
}

/// An edge of `kind` from `from` to `to`, found by no rule.
fn push_edge(g: &mut Graph, (from, to): (TaskId, TaskId), kind: DepKind, anchor: Anchor) {
    g.edges.push(Edge {
        from,
        to,
        kind,
        anchor,
        latency_ns: 0,
        inferred: false,
    });
}

const MUTATIONS: &[Mutation] = &[
    ("an edge back to the processor's first task", true, |g| {
        let (first, last) = last_on_first_processor(g);
        push_edge(g, (last, first), DepKind::InterThread, Anchor::End);
    }),
    (
        "a launch edge back to the processor's first task",
        true,
        |g| {
            let (first, last) = last_on_first_processor(g);
            push_edge(g, (last, first), DepKind::Launch, Anchor::Start);
        },
    ),
    ("a task that waits for itself", true, |g| {
        let (first, _) = last_on_first_processor(g);
        push_edge(g, (first, first), DepKind::InterStream, Anchor::End);
    }),
    ("the processors' order reversed", true, |g| {
        for p in &mut g.processors {
            p.tasks.reverse();
        }
    }),
    ("a task on two processors", true, |g| {
        let t = g.processors[0].tasks[0];
        let last = g.processors.len() - 1;
        g.processors[last].tasks.push(t);
    }),
    ("every task on no processor", true, |g| {
        for p in &mut g.processors {
            p.tasks.clear();
        }
    }),
    ("no processors at all", true, |g| g.processors.clear()),
    ("negative durations, latencies and releases", false, |g| {
        for t in &mut g.tasks {
            t.duration_ns = -1_000_000_000;
            t.release_ns = -5;
        }
        for e in &mut g.edges {
            e.latency_ns = -1;
        }
    }),
    ("durations at the largest integer", false, |g| {
        for t in &mut g.tasks {
            t.duration_ns = i64::MAX;
        }
        for e in &mut g.edges {
            e.latency_ns = i64::MAX;
        }
    }),
    ("durations at the smallest integer", false, |g| {
        for t in &mut g.tasks {
            t.duration_ns = i64::MIN;
            t.release_ns = i64::MIN;
        }
    }),
    ("steps out of order, their ends swapped", false, |g| {
        for s in &mut g.steps {
            std::mem::swap(&mut s.first_task, &mut s.last_task);
            // As large as they come: a negative one is refused on reading.
            s.lead_ns = i64::MAX;
            s.tail_ns = i64::MAX;
            s.tasks.reverse();
        }
        g.steps.reverse();
    }),
    ("every edge and dependency dropped", false, |g| {
        g.edges.clear();
        g.runtime_deps.clear();
    }),
    ("every task a collective of the first one", false, |g| {
        if !g.collectives.is_empty() {
            for t in &mut g.tasks {
                t.collective = Some(0);
            }
        }
    }),
    ("every task in the first scope, made a root", false, |g| {
        if !g.scopes.is_empty() {
            g.scopes[0].parent = None;
            for s in &mut g.task_scopes {
                *s = Some(lumos_graph::ScopeId(0));
            }
        }
    }),
];

/// The commands every file goes through.
fn commands(file: &Path, out: &Path) -> Vec<Vec<String>> {
    let f = file.display().to_string();
    let o = out.display().to_string();
    vec![
        vec!["inspect".into(), "--json".into(), f.clone()],
        vec!["replay".into(), "--json".into(), f.clone()],
        vec!["replay".into(), "--job".into(), "--json".into(), f.clone()],
        vec!["replay".into(), f.clone(), "--out".into(), o.clone()],
        vec!["predict".into(), "--dp".into(), "2".into(), f.clone()],
        vec![
            "predict".into(),
            "--scale-kernels".into(),
            "class:compute=0.5".into(),
            f.clone(),
        ],
        vec![
            "report".into(),
            "--job".into(),
            f.clone(),
            "-o".into(),
            format!("{o}.html"),
        ],
    ]
}

/// What is wrong with one run, if anything. An error must name `file`;
/// a prediction's refusal or error may name `source` instead, the trace the file
/// was ingested from, as every report of the rank names it (a refusal is
/// about the rank, not about the file). A file whose graph no build makes
/// (`refused`) must be refused when read, as a corrupt file. Stderr goes to
/// `err`, so that a full pipe cannot stall the command.
fn problem(
    args: &[String],
    (file, source): (&str, &str),
    refused: bool,
    err: &Path,
) -> Option<String> {
    let started = Instant::now();
    let mut child = lumos()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            return Some(format!("no answer within {TIME_LIMIT:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr = std::fs::read_to_string(err).unwrap_or_default();
    if stderr.contains("panicked") || stderr.contains("stack overflow") {
        return Some(format!("panicked: {stderr}"));
    }
    let names = |f: &str| {
        stderr
            .lines()
            .any(|l| l.starts_with("error: ") && l.contains(f))
    };
    if refused {
        let corrupt = stderr.lines().any(|l| {
            l.starts_with("error: ") && l.contains(file) && l.contains("corrupt .lgraph file")
        });
        return (!(status.code() == Some(1) && corrupt))
            .then(|| format!("not refused as a corrupt file: {status}: {stderr}"));
    }
    match status.code() {
        Some(0) => None,
        Some(1) if names(file) || (args[0] == "predict" && names(source)) => None,
        Some(2) if args[0] == "predict" && (names(file) || names(source)) => None,
        _ => Some(format!("{status}: {stderr}")),
    }
}

#[test]
fn well_formed_but_hostile_compact_files_are_refused_or_read() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-hostile-lgraph");
    let traces: Vec<PathBuf> = [
        "single-rank/v100-ddp-rank1of2-allreduce.json.gz",
        "micro/a100-stream-wait-event-3streams.json.gz",
        "multi-rank/dlrm-8xv100",
    ]
    .iter()
    .flat_map(|rel| {
        let p = corpus.path(rel);
        if p.is_dir() {
            corpus.traces(rel).into_iter().take(1).collect()
        } else {
            vec![p]
        }
    })
    .collect();
    let mut failures = Vec::new();
    let mut runs = 0;
    for trace in &traces {
        let t = lumos_trace::read_path(trace).unwrap();
        let clean = StoredRank::from_trace(&t, Source::of_file(trace));
        for (k, (what, refused, mutate)) in MUTATIONS.iter().enumerate() {
            let mut rank = clean.clone();
            mutate(&mut rank.graph.graph);
            let file = dir.join(format!("case{k}.lgraph"));
            lumos_store::write_stored_file(&rank, &file).unwrap();
            for args in commands(&file, &dir.join(format!("out{k}"))) {
                runs += 1;
                let (f, source) = (file.display().to_string(), trace.display().to_string());
                let err = dir.join("stderr");
                if let Some(p) = problem(&args, (&f, &source), *refused, &err) {
                    failures.push(format!(
                        "{}: {what}: lumos {}: {p}",
                        trace.display(),
                        args.join(" ")
                    ));
                }
            }
        }
    }
    println!("{runs} runs, {} failed", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
