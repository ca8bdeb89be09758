//! The graph built from every corpus trace satisfies the invariants, and the
//! micro traces give exactly the edges their `cuda_sync` events imply.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use lumos_graph::{build, check, DepKind, Graph, ProcKind, TaskId, Violation, WaitTarget};
use lumos_trace::{read_path, Category};

fn stream_of(g: &Graph, t: TaskId) -> i64 {
    match g.processors[g.task(t).proc.idx()].kind {
        ProcKind::Stream { stream, .. } => stream,
        _ => panic!("not a GPU task"),
    }
}

#[test]
fn invariants_hold_on_every_corpus_trace() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for path in corpus.traces("") {
        let trace = read_path(&path).unwrap();
        let (g, measured, report) = build(&trace);
        let v = check(&g);
        assert!(v.is_empty(), "{}: {v:?}", path.display());
        assert_eq!(measured.tasks.len(), g.tasks.len());
        // Every GPU task whose correlation matches a runtime call has
        // exactly one launch edge, from that call.
        let calls: std::collections::HashMap<u64, usize> = trace
            .events
            .iter()
            .filter(|e| e.category.is_runtime())
            .filter_map(|e| e.correlation())
            .fold(Default::default(), |mut m, c| {
                *m.entry(c).or_insert(0) += 1;
                m
            });
        let mut launch_in = vec![0; g.tasks.len()];
        for e in &g.edges {
            if e.kind == DepKind::Launch {
                launch_in[e.to.idx()] += 1;
                assert_eq!(g.task(e.from).correlation, g.task(e.to).correlation);
            }
        }
        for (i, t) in g.tasks.iter().enumerate() {
            if t.kind.is_gpu() && calls.get(&t.correlation) == Some(&1) {
                assert_eq!(
                    launch_in[i],
                    1,
                    "{}: task {i} {} corr {}",
                    path.display(),
                    g.name(TaskId(i as u32)),
                    t.correlation
                );
            }
        }
        // Kernels in the graph equal kernels in the trace.
        let kernels = trace
            .events
            .iter()
            .filter(|e| e.category == Category::Kernel)
            .count() as u64;
        assert_eq!(
            report
                .tasks_by_kind
                .get(&lumos_graph::TaskKind::Kernel)
                .copied()
                .unwrap_or(0),
            kernels,
            "{}",
            path.display()
        );
        // Stream order matches launch order (the builder counts violations).
        assert_eq!(report.stream_order_violations, 0, "{}", path.display());
        // The graph never holds measured starts: releases are only on tasks
        // without incoming edges.
        let mut has_in = vec![false; g.tasks.len()];
        for e in &g.edges {
            has_in[e.to.idx()] = true;
        }
        for (i, t) in g.tasks.iter().enumerate() {
            if has_in[i] {
                assert_eq!(t.release_ns, 0, "{}: task {i}", path.display());
            }
        }
    }
}

#[test]
fn cpu_only_trace_reports_no_gpu_activity() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace = read_path(&corpus.path("micro/cpu-only-rank34.json.gz")).unwrap();
    let (g, _, report) = build(&trace);
    assert!(g.tasks.iter().all(|t| !t.kind.is_gpu()));
    assert!(report
        .warnings
        .iter()
        .any(|w| w.contains("no GPU activity")));
}

#[test]
fn stream_wait_event_gives_exactly_the_recorded_edge() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace = read_path(&corpus.path("micro/a100-stream-wait-event-3streams.json.gz")).unwrap();
    let (g, _, report) = build(&trace);
    let inter: Vec<_> = g
        .edges
        .iter()
        .filter(|e| e.kind == DepKind::InterStream)
        .collect();
    assert_eq!(inter.len(), 1, "{inter:?}");
    let e = inter[0];
    // The sgemm on stream 20 (correlation 27, the last launch onto stream
    // 20 before cudaEventRecord 1385) -> the memset on stream 24
    // (correlation 1411, the first launch onto stream 24 after
    // cudaStreamWaitEvent 1389).
    assert_eq!(g.name(e.from), "ampere_sgemm_128x64_nn");
    assert_eq!(g.task(e.from).correlation, 27);
    assert_eq!(stream_of(&g, e.from), 20);
    assert_eq!(g.name(e.to), "Memset (Device)");
    assert_eq!(g.task(e.to).correlation, 1411);
    assert_eq!(stream_of(&g, e.to), 24);
    assert_eq!(
        report
            .inferred
            .get(&(DepKind::InterStream, lumos_graph::Rule::CudaSyncEvent)),
        Some(&1)
    );
}

#[test]
fn waits_on_events_of_idle_streams_are_satisfied_at_once() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    // 20 "Stream Wait Event"s: 6 between streams 7 and 20, each after GPU
    // work on the recording stream, give their recorded edges; 14 make
    // stream 7 wait on events recorded on cuDNN's side streams 21 to 27,
    // which run no GPU task, so the events are complete when recorded.
    // They give no edge (the launch-sequence rule once guessed one from
    // stream 20 for each), no warning, and are counted.
    let trace = read_path(&corpus.path("single-rank/a100-alexnet-cuda-sync.json.gz")).unwrap();
    let (_, _, report) = build(&trace);
    assert_eq!(report.idle_stream_waits, 14);
    assert_eq!(report.unresolved_waits, 0);
    let rule = |r| {
        report
            .inferred
            .get(&(DepKind::InterStream, r))
            .copied()
            .unwrap_or(0)
    };
    assert_eq!(rule(lumos_graph::Rule::CudaSyncEvent), 6);
    assert_eq!(rule(lumos_graph::Rule::LaunchSequence), 0);
    assert!(!report.warnings.iter().any(|w| w.contains("stream wait")));
    // A trace whose waits have no `cuda_sync` evidence counts none.
    let trace = read_path(&corpus.path("single-rank/a100-recsys-rank3of8.json.gz")).unwrap();
    let (_, _, report) = build(&trace);
    assert_eq!(report.idle_stream_waits, 0);
    assert_eq!(report.unresolved_waits, 12);
}

#[test]
fn event_and_stream_syncs_point_at_the_right_kernels() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace = read_path(&corpus.path("micro/a100-event-sync.json.gz")).unwrap();
    let (g, _, _) = build(&trace);
    let find_call = |corr: u64| {
        g.runtime_deps
            .iter()
            .find(|d| {
                g.task(d.task).correlation == corr || {
                    // a split waiting part has correlation 0; match by name order
                    false
                }
            })
            .unwrap_or_else(|| panic!("no sync dep for correlation {corr}"))
    };
    // cudaStreamSynchronize (1512) waits for the tail of stream 7, which at
    // that point is the DtoH copy (correlation 1511).
    let d = find_call(1512);
    match d.target {
        WaitTarget::StreamTail(p) => assert!(matches!(
            g.processors[p.idx()].kind,
            ProcKind::Stream { stream: 7, .. }
        )),
        t => panic!("stream sync resolved to {t:?}"),
    }
    // cudaEventSynchronize (1536) waits for the spin kernel (1526), the last
    // launch on stream 7 before cudaEventRecord 1533.
    let d = find_call(1536);
    match d.target {
        WaitTarget::Task(t) => {
            assert_eq!(g.task(t).correlation, 1526);
            assert!(g.name(t).contains("spin_kernel"));
        }
        t => panic!("event sync resolved to {t:?}"),
    }
    // cudaDeviceSynchronize (1549) waits for every stream of device 0.
    assert!(matches!(find_call(1549).target, WaitTarget::DeviceTail(0)));
}

#[test]
fn kernels_know_the_operators_that_launched_them() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace = read_path(&corpus.path("single-rank/a100-recsys-rank3of8.json.gz")).unwrap();
    let (g, m, _) = build(&trace);
    assert_eq!(g.task_scopes.len(), g.tasks.len());
    assert_eq!(m.scopes.len(), g.scopes.len());
    for (i, s) in g.scopes.iter().enumerate() {
        if let Some(p) = s.parent {
            assert!((p.0 as usize) < i, "parents are created first");
            // A scope lies inside its parent.
            let (c, pp) = (m.scopes[i], m.scopes[p.0 as usize]);
            assert!(pp.start_ns <= c.start_ns && c.end_ns <= pp.end_ns);
        }
    }
    // A GEMM kernel sits under an aten::mm / addmm op with recorded shapes,
    // under a ProfilerStep annotation.
    let gemm = g
        .tasks
        .iter()
        .enumerate()
        .find(|(i, t)| {
            t.kind == lumos_graph::TaskKind::Kernel
                && g.scope_chain(TaskId(*i as u32))
                    .any(|s| g.names[g.scopes[s.0 as usize].name.0 as usize] == "aten::addmm")
        })
        .map(|(i, _)| TaskId(i as u32))
        .expect("an addmm kernel");
    let chain: Vec<&str> = g
        .scope_chain(gemm)
        .map(|s| g.names[g.scopes[s.0 as usize].name.0 as usize].as_str())
        .collect();
    assert!(
        chain.iter().any(|n| n.starts_with("ProfilerStep#")),
        "{chain:?}"
    );
    let addmm = g
        .scope_chain(gemm)
        .find(|s| g.names[g.scopes[s.0 as usize].name.0 as usize] == "aten::addmm")
        .unwrap();
    assert!(g.scopes[addmm.0 as usize].input_dims.is_some());
}

#[test]
fn event_query_runs_become_one_task() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace = read_path(&corpus.path("single-rank/v100-ddp-rank1of2-allreduce.json.gz")).unwrap();
    let queries = trace
        .events
        .iter()
        .filter(|e| trace.name(e) == "cudaEventQuery")
        .count();
    let (g, _, report) = build(&trace);
    let tasks = (0..g.tasks.len())
        .filter(|&i| g.name(TaskId(i as u32)) == "cudaEventQuery")
        .count();
    assert!(report.polling_loops > 0);
    assert!(tasks < queries / 10, "{tasks} of {queries}");
    assert!(check(&g).is_empty());
}

/// PyTorch's NCCL watchdog thread queries its events in bursts, 100 ms
/// apart (42 calls over 601 ms on this trace, none over 11 us): a thread
/// that sleeps between queries is not a host loop waiting for the GPU, and
/// collapsing the run made one 601 ms `cudaEventQuery` task that the
/// replay ran and the critical path went through.
#[test]
fn event_queries_with_sleeps_between_are_no_polling_loop() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace =
        read_path(&corpus.path("single-rank/a100-ddp-rank0of2-event-record.json.gz")).unwrap();
    let (g, measured, _) = build(&trace);
    let longest = (0..g.tasks.len())
        .filter(|&i| g.name(TaskId(i as u32)) == "cudaEventQuery")
        .map(|i| measured.tasks[i].end_ns - measured.tasks[i].start_ns)
        .max()
        .expect("event queries");
    // Two bursts of eight queries each (under 60 us) still make a loop.
    assert!(longest < 100_000, "a {longest} ns cudaEventQuery task");
    assert!(check(&g).is_empty());
}

/// A scope whose parent comes after it (as a predicted graph's copied
/// scopes once could) is named by `check`, which walks up scope chains
/// that go strictly down rely on.
#[test]
fn a_parent_after_its_scope_is_a_violation() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace = read_path(&corpus.path("single-rank/v100-ddp-rank1of2-allreduce.json.gz")).unwrap();
    let (mut g, _, _) = build(&trace);
    assert!(check(&g).is_empty());
    let child = (0..g.scopes.len())
        .find(|&i| g.scopes[i].parent.is_some())
        .expect("a nested scope");
    let later = lumos_graph::ScopeId(g.scopes.len() as u32 - 1);
    assert!(later.0 as usize > child);
    g.scopes[child].parent = Some(later);
    assert_eq!(
        check(&g),
        vec![Violation::ScopeOrder(lumos_graph::ScopeId(child as u32))]
    );
}
