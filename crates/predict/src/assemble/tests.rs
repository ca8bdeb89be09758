//! Tests of each assembly step, on synthesized traces and small graphs.

use lumos_graph::{
    Anchor, DepKind, Edge, Graph, ProcId, ProcKind, Processor, RuntimeDep, Task, TaskId, TaskKind,
    WaitTarget,
};

use super::copy::{reattach_source, Emitted};
use super::finish::*;
use super::*;
use crate::testutil::{discovered, synth};

#[test]
fn identity_assembly_gives_back_the_graph() {
    for (tp, pp, dp, m, rank) in [(2, 2, 2, 4, 0), (2, 2, 2, 4, 4), (1, 1, 2, 2, 0)] {
        let (g, _, _, s) = discovered(&synth("gpt-tiny", tp, pp, dp, m, rank));
        assert!(
            s.report.structural_edits_blocked.is_none(),
            "{:?}",
            s.report.structural_edits_blocked
        );
        let t = [Template {
            graph: &g,
            structure: &s,
        }];
        let a = assemble(&t, 0, &identity_plan(0, &s), &[]);
        assert_eq!(a.dropped_edges, 0);
        assert_eq!(a.graph.tasks.len(), g.tasks.len());
        for (x, y) in a.graph.tasks.iter().zip(&g.tasks) {
            assert_eq!(x.duration_ns, y.duration_ns);
            assert_eq!(x.proc, y.proc);
            assert_eq!(x.name, y.name);
        }
        let mut e1: Vec<_> = g
            .edges
            .iter()
            .map(|e| (e.from, e.to, e.kind, e.latency_ns))
            .collect();
        let mut e2: Vec<_> = a
            .graph
            .edges
            .iter()
            .map(|e| (e.from, e.to, e.kind, e.latency_ns))
            .collect();
        e1.sort();
        e2.sort();
        assert_eq!(e1, e2);
        assert_eq!(a.graph.runtime_deps.len(), g.runtime_deps.len());
        for (p, q) in a.graph.processors.iter().zip(&g.processors) {
            assert_eq!(p.tasks, q.tasks);
        }
        assert_eq!(a.graph.scopes, g.scopes);
        assert_eq!(a.graph.task_scopes, g.task_scopes);
        let r1 = lumos_sim::simulate(&g, &Default::default()).unwrap();
        let r2 = lumos_sim::simulate(&a.graph, &Default::default()).unwrap();
        assert_eq!(r1.start_ns, r2.start_ns);
        assert_eq!(
            lumos_sim::step_spans(&g, &r1, None),
            lumos_sim::step_spans(&a.graph, &r2, None)
        );
    }
}

fn task(proc: u32, name: u32) -> Task {
    Task {
        kind: TaskKind::CpuOp,
        name: NameId(name),
        proc: ProcId(proc),
        duration_ns: 1,
        release_ns: 0,
        collective: None,
        correlation: 0,
    }
}

fn edge(from: u32, to: u32, kind: DepKind, latency_ns: i64) -> Edge {
    Edge {
        from: TaskId(from),
        to: TaskId(to),
        kind,
        anchor: Anchor::End,
        latency_ns,
        inferred: false,
    }
}

#[test]
fn processors_are_keyed_by_role() {
    let (g, _, _, s) = discovered(&synth("gpt-tiny", 1, 1, 1, 2, 0));
    let t = Template {
        graph: &g,
        structure: &s,
    };
    let keys: Vec<String> = (0..g.processors.len()).map(|p| proc_key(&t, p)).collect();
    assert_eq!(keys.iter().filter(|k| *k == "main").count(), 1);
    assert_eq!(keys.iter().filter(|k| *k == "backward").count(), 1);
    for (p, k) in g.processors.iter().zip(&keys) {
        assert_eq!(p.is_stream(), k.starts_with("stream "), "{k}");
    }
}

#[test]
fn a_cloned_unit_gets_its_own_tasks_and_correlations() {
    let (g, _, _, s) = discovered(&synth("gpt-tiny", 1, 1, 1, 2, 0));
    let t = [Template {
        graph: &g,
        structure: &s,
    }];
    // A forward layer's first unit, which launched GPU work, twice.
    let layer = &s.steps[0].passes[0].layers[1];
    let u = *layer
        .iter()
        .find(|&&u| !s.units.units[u as usize].gpu().is_empty())
        .unwrap();
    let mut plan = identity_plan(0, &s);
    let at = plan.iter().position(|(r, _)| r.unit == u).unwrap();
    plan.insert(at + 1, plan[at]);
    let a = assemble(&t, 0, &plan, &[]);
    let unit = &s.units.units[u as usize];
    assert_eq!(a.graph.tasks.len(), g.tasks.len() + unit.tasks.len());
    // The copies come last in the numbering (copy 1 of their tasks) and
    // carry their origin and tag.
    let copies: Vec<usize> = (0..a.origin.len())
        .filter(|&i| unit.tasks.contains(&a.origin[i].1))
        .collect();
    assert_eq!(copies.len(), 2 * unit.tasks.len());
    assert!(copies.iter().all(|&i| a.tag[i] == plan[at].1));
    // A launch and its kernels keep one correlation id per copy, and the
    // two copies' ids differ.
    let corr = |i: usize| a.graph.tasks[i].correlation;
    let mut ids: Vec<u64> = copies
        .iter()
        .map(|&i| corr(i))
        .filter(|&c| c != 0)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let launches = unit
        .tasks
        .iter()
        .filter(|&&t| g.tasks[t.idx()].correlation != 0);
    let per_copy: std::collections::BTreeSet<u64> =
        launches.map(|&t| g.tasks[t.idx()].correlation).collect();
    assert_eq!(ids.len(), 2 * per_copy.len());
    // Each copy has scopes of its own, like the original's (names, Input
    // Dims); the step annotation around both is shared.
    let unit_scope = unit.scope.expect("a layer's unit is an operator");
    for &t in unit.cpu() {
        let both: Vec<usize> = (0..a.origin.len())
            .filter(|&i| a.origin[i] == (0, t))
            .collect();
        let [c0, c1] = [0, 1].map(|k| {
            a.graph
                .scope_chain(TaskId(both[k] as u32))
                .collect::<Vec<_>>()
        });
        assert_eq!(c0.len(), c1.len());
        for (x, y) in c0.iter().zip(&c1) {
            let (x, y) = (&a.graph.scopes[x.0 as usize], &a.graph.scopes[y.0 as usize]);
            assert_eq!((x.name, &x.input_dims), (y.name, &y.input_dims));
        }
        let at = g.scope_chain(t).position(|s| s == unit_scope).unwrap();
        assert_ne!(c0[at], c1[at], "the unit's scope is copied");
        assert_eq!(c0.last(), c1.last(), "the step annotation is shared");
    }
    // The copy runs: the graph replays.
    lumos_sim::simulate(&a.graph, &Default::default()).unwrap();
}

#[test]
fn sources_are_found_by_position_then_by_name() {
    // Template: one thread, tasks a b c (units 0 1 2), names 0 1 2.
    let tg = Graph {
        names: vec!["a".into(), "b".into(), "c".into()],
        tasks: vec![task(0, 0), task(0, 1), task(0, 2)],
        processors: vec![Processor {
            kind: ProcKind::Thread { pid: 1, tid: 1 },
            tasks: vec![TaskId(0), TaskId(1), TaskId(2)],
        }],
        ..Graph::default()
    };
    let mut s = discovered(&synth("gpt-tiny", 1, 1, 1, 2, 0)).3;
    s.units.unit_of = vec![0, 1, 2];
    let t = Template {
        graph: &tg,
        structure: &s,
    };
    let p = Prepared {
        t: &t,
        idx_in_proc: vec![0, 1, 2],
        proc_units: vec![vec![0, 1, 2]],
        incoming: vec![Vec::new(); 3],
        outgoing: vec![Vec::new(); 3],
        rt: FxHashMap::default(),
        proc_map: vec![ProcId(0)],
        name_map: vec![NameId(0), NameId(1), NameId(2)],
        scope_off: 0,
        scope_units: Vec::new(),
        additions: Default::default(),
        tp_sites: Default::default(),
        tp_launches: Default::default(),
        tp_waits: Default::default(),
    };
    // The new graph so far: b x a b (names 1 2 0 1), the copy of unit 2
    // about to start.
    let g = Graph {
        names: tg.names.clone(),
        tasks: vec![task(0, 1), task(0, 2), task(0, 0), task(0, 1)],
        processors: vec![Processor {
            kind: ProcKind::Thread { pid: 1, tid: 1 },
            tasks: (0..4).map(TaskId).collect(),
        }],
        ..Graph::default()
    };
    let unit2 = UnitRef { src: 0, unit: 2 };
    // Right before: whatever runs there.
    assert_eq!(
        reattach_source(&g, &p, unit2, &[4], TaskId(1), true),
        Some(TaskId(3))
    );
    // Two back: the task there has the name.
    assert_eq!(
        reattach_source(&g, &p, unit2, &[4], TaskId(0), true),
        Some(TaskId(2))
    );
    // Named elsewhere: the nearest task with the name; by position alone,
    // the task there.
    let shifted = [3];
    assert_eq!(
        reattach_source(&g, &p, unit2, &shifted, TaskId(0), false),
        Some(TaskId(1))
    );
    assert_eq!(
        reattach_source(&g, &p, unit2, &shifted, TaskId(0), true),
        Some(TaskId(2))
    );
    // Not before the unit, or further back than the new graph goes.
    let unit0 = UnitRef { src: 0, unit: 0 };
    assert_eq!(reattach_source(&g, &p, unit0, &[4], TaskId(1), true), None);
    assert_eq!(reattach_source(&g, &p, unit2, &[1], TaskId(0), false), None);
}

#[test]
fn backward_bursts_hand_over_to_the_main_thread() {
    let (main, bwd) = (ProcId(0), ProcId(1));
    let pass = |kind| Tag {
        step: Some(0),
        pass: Some((kind, 0)),
        chunk: 0,
        setup: false,
        addition: false,
        layers_fitted: false,
        shaped_addition: None,
        tp_allreduce: None,
    };
    let unit = |first: u32, last: u32, proc, kind, after_burst| Emitted {
        cpu: Some((TaskId(first), TaskId(last), proc)),
        tag: pass(kind),
        after_burst,
    };
    let emitted = [
        unit(0, 1, main, PassKind::Forward, false),
        unit(2, 3, bwd, PassKind::Backward, false),
        unit(4, 5, main, PassKind::Backward, false),
        unit(6, 7, bwd, PassKind::Backward, false),
        unit(8, 9, main, PassKind::Forward, true),
    ];
    let mut g = Graph::default();
    let mut have = FxHashSet::default();
    add_handovers(&mut g, &mut have, &emitted, (main, bwd), 70);
    // After the first burst only: the second unit after a burst came
    // after one in its template too.
    // The predictor's own hand-over: inferred, not read from a trace.
    let handover = Edge {
        inferred: true,
        ..edge(3, 4, DepKind::InterThread, 70)
    };
    assert_eq!(g.edges, vec![handover]);
    // Not twice.
    add_handovers(&mut g, &mut have, &emitted, (main, bwd), 70);
    assert_eq!(g.edges.len(), 1);
}

#[test]
fn handover_latency_is_the_median_into_the_main_thread() {
    let (g, _, _, s) = discovered(&synth("gpt-tiny", 1, 1, 1, 2, 0));
    let mut g = g;
    let main = s.steps[0].main;
    let other = s.steps[0].backward[0];
    let on = |p: ProcId| g.processors[p.idx()].tasks[0];
    let (m, o) = (on(main), on(other));
    g.edges.retain(|e| e.kind != DepKind::InterThread);
    for lat in [5, 1, 9] {
        g.edges.push(edge(o.0, m.0, DepKind::InterThread, lat));
    }
    // Edges out of the main thread do not count.
    g.edges.push(edge(m.0, o.0, DepKind::InterThread, 1000));
    let t = Template {
        graph: &g,
        structure: &s,
    };
    assert_eq!(handover_latency(&t), 5);
}

#[test]
fn forward_edges_go_to_whatever_runs_there() {
    let mut g = Graph {
        tasks: vec![task(0, 0), task(1, 0), task(1, 0)],
        processors: vec![
            Processor {
                kind: ProcKind::Thread { pid: 1, tid: 1 },
                tasks: vec![TaskId(0)],
            },
            Processor {
                kind: ProcKind::Thread { pid: 1, tid: 2 },
                tasks: vec![TaskId(1), TaskId(2)],
            },
        ],
        ..Graph::default()
    };
    let e = edge(7, 8, DepKind::InterThread, 3);
    let mut have = FxHashSet::default();
    let forward = vec![(TaskId(0), ProcId(1), 1, e), (TaskId(0), ProcId(1), 2, e)];
    add_forward_edges(&mut g, &mut have, forward.clone());
    assert_eq!(g.edges, vec![edge(0, 2, DepKind::InterThread, 3)]);
    add_forward_edges(&mut g, &mut have, forward);
    assert_eq!(g.edges.len(), 1, "not twice");
}

#[test]
fn tasks_are_renumbered_primary_first() {
    // Three tasks copied in the order (template 1, task 0), (template 0,
    // task 1), (template 0, task 0).
    let mut g = Graph {
        tasks: vec![task(0, 0), task(0, 1), task(0, 2)],
        processors: vec![Processor {
            kind: ProcKind::Thread { pid: 1, tid: 1 },
            tasks: vec![TaskId(0), TaskId(1), TaskId(2)],
        }],
        edges: vec![edge(0, 1, DepKind::IntraThread, 0)],
        runtime_deps: vec![RuntimeDep {
            task: TaskId(2),
            target: WaitTarget::Task(TaskId(0)),
            latency_ns: 0,
            inferred: false,
        }],
        ..Graph::default()
    };
    let origin = [(1, TaskId(0)), (0, TaskId(1)), (0, TaskId(0))];
    let tag = Tag {
        step: None,
        pass: None,
        chunk: 0,
        setup: false,
        addition: false,
        layers_fitted: false,
        shaped_addition: None,
        tp_allreduce: None,
    };
    let (o, t) = renumber(&mut g, &origin, &[tag; 3], &[0, 0, 0], 0);
    assert_eq!(o, vec![(0, TaskId(0)), (0, TaskId(1)), (1, TaskId(0))]);
    assert_eq!(t.len(), 3);
    let names: Vec<u32> = g.tasks.iter().map(|t| t.name.0).collect();
    assert_eq!(names, vec![2, 1, 0]);
    assert_eq!(g.processors[0].tasks, vec![TaskId(2), TaskId(1), TaskId(0)]);
    assert_eq!(g.edges, vec![edge(2, 1, DepKind::IntraThread, 0)]);
    assert_eq!(g.runtime_deps[0].task, TaskId(0));
    assert_eq!(g.runtime_deps[0].target, WaitTarget::Task(TaskId(2)));
}

#[test]
fn unused_processors_are_dropped() {
    let stream = |stream| Processor {
        kind: ProcKind::Stream { device: 0, stream },
        tasks: Vec::new(),
    };
    let mut g = Graph {
        tasks: vec![task(2, 0)],
        processors: vec![stream(1), stream(2), stream(3)],
        runtime_deps: vec![RuntimeDep {
            task: TaskId(0),
            target: WaitTarget::StreamTail(ProcId(2)),
            latency_ns: 0,
            inferred: false,
        }],
        ..Graph::default()
    };
    g.processors[2].tasks.push(TaskId(0));
    drop_unused_processors(&mut g);
    assert_eq!(g.processors.len(), 1);
    assert_eq!(
        g.processors[0].kind,
        ProcKind::Stream {
            device: 0,
            stream: 3
        }
    );
    assert_eq!(g.tasks[0].proc, ProcId(0));
    assert_eq!(g.runtime_deps[0].target, WaitTarget::StreamTail(ProcId(0)));
}

#[test]
fn joins_make_every_wait_for_a_burst_explicit() {
    let (g, meas, _, s) = discovered(&synth("gpt-tiny", 1, 1, 1, 2, 0));
    let mut g = g;
    let backward: Vec<ProcId> = s.steps.iter().flat_map(|st| st.backward.clone()).collect();
    // Take away the hand-overs the builder found.
    g.edges.retain(|e| {
        !(e.kind == DepKind::InterThread && backward.contains(&g.tasks[e.from.idx()].proc))
    });
    let added = repair_joins(&mut g, &meas, &s);
    assert!(added >= 2, "{added}");
    // The first main-thread unit after each burst is held by its end.
    let units = &s.units.units;
    let mut held = 0;
    for u in 1..units.len() {
        if backward.contains(&units[u - 1].thread) && units[u].thread == s.steps[0].main {
            let first = units[u].cpu()[0];
            let last = *units[u - 1].cpu().last().unwrap();
            assert!(g
                .edges
                .iter()
                .any(|e| e.from == last && e.to == first && e.kind == DepKind::InterThread));
            held += 1;
        }
    }
    assert_eq!(held, added);
    // Once is enough.
    assert_eq!(repair_joins(&mut g, &meas, &s), 0);
}

#[test]
fn the_identity_plan_tags_units_by_role() {
    let (_, _, _, s) = discovered(&synth("gpt-tiny", 1, 1, 1, 2, 0));
    let plan = identity_plan(3, &s);
    assert_eq!(plan.len(), s.units.units.len());
    for (k, (r, tag)) in plan.iter().enumerate() {
        assert_eq!((r.src, r.unit), (3, k as u32));
        match s.roles[k] {
            Role::Outside => assert_eq!(tag.step, None),
            Role::Prologue { step } | Role::Epilogue { step } => {
                assert_eq!((tag.step, tag.pass, tag.setup), (Some(step), None, true))
            }
            Role::Pass { step, pass, .. } => {
                let p = &s.steps[step as usize].passes[pass as usize];
                assert_eq!(tag.pass, Some((p.kind, p.microbatch)));
                assert!(!tag.setup);
            }
        }
    }
}

/// A middle stage copies the first stage's transfers with the device-wide
/// synchronizations after them: each waits for the stage's own device,
/// not the device the first stage was traced on (before, it waited for
/// nothing there, and the stage ran on past transfers still in flight).
#[test]
fn copied_synchronizations_wait_for_the_stage_s_device() {
    let base = crate::testutil::baseline("gpt-tiny", None, [2, 2, 2, 4]);
    let pred = base.identity().with_pp(4).unwrap();
    for st in &pred.stages {
        let g = &*st.graph;
        let devices: Vec<i64> = (g.processors.iter())
            .filter_map(|p| match p.kind {
                ProcKind::Stream { device, .. } => Some(device),
                ProcKind::Thread { .. } => None,
            })
            .collect();
        let mut syncs = 0;
        for d in &g.runtime_deps {
            if let WaitTarget::DeviceTail(dev) = d.target {
                assert!(devices.contains(&dev), "stage {}: device {dev}", st.stage);
                syncs += 1;
            }
        }
        assert!(syncs > 0, "stage {}", st.stage);
    }
}
