//! Property tests: random DAGs always schedule every task, and the schedule
//! satisfies every constraint, with each start explained by its bound.

use lumos_graph::*;
use lumos_sim::{simulate, Bound, Schedule, SimError, SimOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

/// Raw material for one random graph; ids are taken modulo the task count.
#[derive(Debug, Clone)]
struct Recipe {
    threads: usize,
    streams: usize,
    /// (processor choice, duration, release, is comm) per task.
    tasks: Vec<(usize, i64, i64, bool)>,
    /// (a, b, kind, start anchor, latency): an edge between the lower and
    /// the higher of a and b.
    edges: Vec<(usize, usize, usize, bool, i64)>,
    /// (call, target choice, target kind, latency).
    waits: Vec<(usize, usize, u8, i64)>,
}

fn recipe() -> impl Strategy<Value = Recipe> {
    (1usize..4, 1usize..4, 1usize..60).prop_flat_map(|(threads, streams, n)| {
        (
            Just(threads),
            Just(streams),
            prop::collection::vec(
                (
                    0..threads + streams,
                    0i64..100,
                    prop_oneof![Just(0i64), 0i64..500],
                    any::<bool>(),
                ),
                n,
            ),
            prop::collection::vec((0..n, 0..n, 0usize..7, any::<bool>(), 0i64..30), 0..3 * n),
            prop::collection::vec((0..n, 0..n, 0u8..3, 0i64..30), 0..n / 4 + 1),
        )
            .prop_map(|(threads, streams, tasks, edges, waits)| Recipe {
                threads,
                streams,
                tasks,
                edges,
                waits,
            })
    })
}

/// Builds the graph. Fixed edges and processor orders both follow task id
/// order, so the fixed part is acyclic. With `any_wait` false, runtime
/// waits only target lower-numbered GPU tasks, which keeps it acyclic too.
fn build(r: &Recipe, any_wait: bool) -> Graph {
    let mut g = Graph {
        names: vec!["op".into(), "kernel".into()],
        ..Graph::default()
    };
    for t in 0..r.threads {
        g.processors.push(Processor {
            kind: ProcKind::Thread {
                pid: 1,
                tid: t as i64,
            },
            tasks: Vec::new(),
        });
    }
    for s in 0..r.streams {
        g.processors.push(Processor {
            kind: ProcKind::Stream {
                device: (s % 2) as i64,
                stream: s as i64,
            },
            tasks: Vec::new(),
        });
    }
    for (i, &(proc, duration_ns, release_ns, comm)) in r.tasks.iter().enumerate() {
        let gpu = g.processors[proc].is_stream();
        if gpu && comm {
            g.collectives.push(Collective {
                name: "allreduce".into(),
                process_group: None,
                seq: None,
                bytes: None,
                elements: None,
                group_size: None,
            });
        }
        g.tasks.push(Task {
            kind: if gpu {
                TaskKind::Kernel
            } else {
                TaskKind::Runtime
            },
            name: NameId(gpu as u32),
            proc: ProcId(proc as u32),
            duration_ns,
            release_ns,
            collective: (gpu && comm).then(|| g.collectives.len() as u32 - 1),
            correlation: 0,
        });
        g.processors[proc].tasks.push(TaskId(i as u32));
    }
    for &(a, b, kind, start, latency_ns) in &r.edges {
        if a == b {
            continue;
        }
        g.edges.push(Edge {
            from: TaskId(a.min(b) as u32),
            to: TaskId(a.max(b) as u32),
            kind: DepKind::ALL[kind],
            anchor: if start { Anchor::Start } else { Anchor::End },
            latency_ns,
            inferred: false,
        });
    }
    let streams: Vec<ProcId> = (r.threads..r.threads + r.streams)
        .map(|p| ProcId(p as u32))
        .collect();
    for &(call, target, kind, latency_ns) in &r.waits {
        if g.tasks[call].kind.is_gpu() {
            continue;
        }
        let target = match (any_wait, kind) {
            (false, _) | (true, 0) => {
                if !any_wait && (target >= call || !g.tasks[target].kind.is_gpu()) {
                    continue;
                }
                WaitTarget::Task(TaskId(target as u32))
            }
            (true, 1) => WaitTarget::StreamTail(streams[target % streams.len()]),
            (true, _) => WaitTarget::DeviceTail((target % 2) as i64),
        };
        g.runtime_deps.push(RuntimeDep {
            task: TaskId(call as u32),
            target,
            latency_ns,
            inferred: false,
        });
    }
    g
}

/// The time a constraint puts on its successor.
fn bound_time(g: &Graph, s: &Schedule, bound: Bound, t: usize) -> i64 {
    match bound {
        Bound::Release => g.tasks[t].release_ns,
        Bound::Processor { prev } => s.end_ns[prev.idx()],
        Bound::Edge(i) => {
            let e = &g.edges[i as usize];
            anchor_time(s, e) + e.latency_ns
        }
        Bound::Runtime { dep, on } => s.end_ns[on.idx()] + g.runtime_deps[dep as usize].latency_ns,
        Bound::LaunchQueue { on } => s.end_ns[on.idx()],
    }
}

fn anchor_time(s: &Schedule, e: &Edge) -> i64 {
    match e.anchor {
        Anchor::End => s.end_ns[e.from.idx()],
        // A blocking call's launches count from its issue.
        Anchor::Start => s
            .wait(e.from)
            .map_or(s.start_ns[e.from.idx()], |w| w.issue_ns),
    }
}

/// Every constraint of the graph holds in `s`, and every start is exactly
/// the time its recorded bound implies.
fn check(g: &Graph, s: &Schedule) -> Result<(), TestCaseError> {
    let n = g.tasks.len();
    prop_assert_eq!(s.len(), n);
    // The latest fixed constraint per task, to check starts are as early as
    // the constraints allow.
    let mut tightest: Vec<i64> = g.tasks.iter().map(|t| t.release_ns).collect();
    for (t, task) in g.tasks.iter().enumerate() {
        prop_assert_eq!(s.end_ns[t] - s.start_ns[t], task.duration_ns);
        prop_assert!(s.start_ns[t] >= task.release_ns);
    }
    for p in &g.processors {
        for w in p.tasks.windows(2) {
            let (a, b) = (w[0].idx(), w[1].idx());
            prop_assert!(s.start_ns[b] >= s.end_ns[a], "processor order {a} -> {b}");
            tightest[b] = tightest[b].max(s.end_ns[a]);
        }
    }
    for (i, e) in g.edges.iter().enumerate() {
        let at = anchor_time(s, e) + e.latency_ns;
        let to = e.to.idx();
        // A blocking call's issue is bound by its fixed edges; its start
        // comes later still.
        let held = s.wait(e.to).map_or(s.start_ns[to], |w| w.issue_ns);
        prop_assert!(held >= at, "edge {i} {:?}: {} < {}", e, held, at);
        prop_assert!(s.start_ns[to] >= at);
        tightest[to] = tightest[to].max(at);
    }
    for dep in &g.runtime_deps {
        if let WaitTarget::Task(on) = dep.target {
            prop_assert!(s.start_ns[dep.task.idx()] >= s.end_ns[on.idx()] + dep.latency_ns);
        }
    }
    for (t, &tightest) in tightest.iter().enumerate() {
        let implied = bound_time(g, s, s.bound_by[t], t);
        if s.wait(TaskId(t as u32)).is_some_and(|w| w.abandoned) {
            // Went on when the replay got stuck: no earlier than its bound.
            prop_assert!(s.start_ns[t] >= implied, "task {} abandoned early", t);
        } else {
            prop_assert_eq!(
                implied,
                s.start_ns[t],
                "task {} bound {:?}",
                t,
                s.bound_by[t]
            );
        }
        match s.wait(TaskId(t as u32)) {
            Some(w) => {
                prop_assert_eq!(bound_time(g, s, w.issue_bound, t), w.issue_ns);
                prop_assert_eq!(w.issue_ns, tightest);
                prop_assert!(s.start_ns[t] >= w.issue_ns);
            }
            None => prop_assert_eq!(s.start_ns[t], tightest, "task {} starts late", t),
        }
    }
    Ok(())
}

fn config() -> Config {
    Config {
        cases: 512,
        rng_seed: RngSeed::Fixed(0x1u64 << 40 | 0x5e1),
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_dags_schedule_every_task_within_constraints(r in recipe()) {
        let g = build(&r, false);
        let s = simulate(&g, &SimOptions::default()).expect("acyclic graph schedules");
        check(&g, &s)?;
        prop_assert_eq!(simulate(&g, &SimOptions::default()).unwrap(), s);
    }

    #[test]
    fn random_runtime_waits_schedule_or_report_stuck(r in recipe()) {
        let g = build(&r, true);
        match simulate(&g, &SimOptions::default()) {
            Ok(s) => check(&g, &s)?,
            Err(SimError::Stuck { stuck, example, .. }) => {
                prop_assert!(stuck > 0 && stuck <= g.tasks.len());
                prop_assert!(example.idx() < g.tasks.len());
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}
