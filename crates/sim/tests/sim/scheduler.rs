//! The scheduler on hand-built graphs: each kind of constraint delays a task
//! exactly as specified.

use lumos_graph::{Anchor, DepKind, TaskId, WaitTarget};
use lumos_sim::{Bound, Cancel, GpuSelector, SimError, SimOptions};

use crate::builder::{span, Builder};

#[test]
fn every_dep_kind_delays_by_end_anchor_and_latency() {
    for kind in DepKind::ALL {
        let mut b = Builder::new();
        let (p, q) = (b.thread(), b.thread());
        let a = b.cpu(p, 100);
        let c = b.cpu(q, 10);
        let e = b.edge(a, c, kind, Anchor::End, 7);
        let s = b.run();
        assert_eq!(span(&s, c), (107, 117), "{kind}");
        assert_eq!(s.bound_by[c.idx()], Bound::Edge(e), "{kind}");
    }
}

#[test]
fn every_dep_kind_delays_by_start_anchor_and_latency() {
    for kind in DepKind::ALL {
        let mut b = Builder::new();
        let (p, q) = (b.thread(), b.stream(0));
        let a = b.cpu(p, 100);
        let c = b.kernel(q, 10);
        b.release(a, 40);
        let e = b.edge(a, c, kind, Anchor::Start, 3);
        let s = b.run();
        assert_eq!(span(&s, c), (43, 53), "{kind}");
        assert_eq!(s.bound_by[c.idx()], Bound::Edge(e), "{kind}");
    }
}

#[test]
fn latest_of_several_edges_wins() {
    let mut b = Builder::new();
    let (p, q, r) = (b.thread(), b.thread(), b.thread());
    let a = b.cpu(p, 50);
    let c = b.cpu(q, 80);
    let d = b.cpu(r, 1);
    b.edge(a, d, DepKind::InterThread, Anchor::End, 40);
    let late = b.edge(c, d, DepKind::InterThread, Anchor::End, 20);
    let s = b.run();
    assert_eq!(span(&s, d), (100, 101));
    assert_eq!(s.bound_by[d.idx()], Bound::Edge(late));
}

#[test]
fn release_bounds_roots() {
    let mut b = Builder::new();
    let p = b.thread();
    let a = b.cpu(p, 5);
    b.release(a, 1_000);
    let s = b.run();
    assert_eq!(span(&s, a), (1_000, 1_005));
    assert_eq!(s.bound_by[a.idx()], Bound::Release);
}

#[test]
fn processor_runs_tasks_in_list_order_one_at_a_time() {
    let mut b = Builder::new();
    let p = b.thread();
    let first = b.cpu(p, 30);
    let second = b.cpu(p, 10);
    let third = b.cpu(p, 10);
    // The later task is ready long before; list order still holds.
    b.release(first, 100);
    // Reverse the list: `third` runs first, then `second`, then `first`.
    b.graph.processors[p.idx()].tasks = vec![third, second, first];
    let s = b.run();
    assert_eq!(span(&s, third), (0, 10));
    assert_eq!(span(&s, second), (10, 20));
    assert_eq!(span(&s, first), (100, 130));
    assert_eq!(s.bound_by[second.idx()], Bound::Processor { prev: third });
    assert_eq!(s.bound_by[first.idx()], Bound::Release);
}

#[test]
fn busy_stream_delays_a_launched_kernel() {
    let mut b = Builder::new();
    let (t, st) = (b.thread(), b.stream(0));
    let c1 = b.call(t, 5);
    let c2 = b.call(t, 5);
    let k1 = b.kernel(st, 100);
    let k2 = b.kernel(st, 100);
    b.launch(c1, k1, 2);
    b.launch(c2, k2, 2);
    let s = b.run();
    assert_eq!(span(&s, k1), (2, 102));
    assert_eq!(span(&s, k2), (102, 202));
    assert_eq!(s.bound_by[k2.idx()], Bound::Processor { prev: k1 });
}

/// Thread A launches k1, then synchronizes the stream; thread B launches k2
/// onto the same stream at time 50, after the sync has been issued.
fn stream_sync_graph(b_release: i64) -> (Builder, [TaskId; 5]) {
    let mut b = Builder::new();
    let (ta, tb, st) = (b.thread(), b.thread(), b.stream(0));
    let launch1 = b.call(ta, 5);
    let sync = b.task(
        ta,
        lumos_graph::TaskKind::Runtime,
        "cudaStreamSynchronize",
        4,
    );
    let launch2 = b.call(tb, 5);
    let k1 = b.kernel(st, 100);
    let k2 = b.kernel(st, 1_000);
    b.launch(launch1, k1, 2);
    b.launch(launch2, k2, 2);
    b.release(launch2, b_release);
    b.wait(sync, WaitTarget::StreamTail(st), 3);
    (b, [launch1, sync, launch2, k1, k2])
}

#[test]
fn stream_tail_is_the_last_kernel_launched_before_the_call() {
    let (b, [_, sync, _, k1, k2]) = stream_sync_graph(50);
    let s = b.run();
    assert_eq!(span(&s, k1), (2, 102));
    // k2 is launched after the sync issued at 5: the sync must not wait for it.
    assert_eq!(span(&s, sync), (105, 109));
    assert_eq!(s.bound_by[sync.idx()], Bound::Runtime { dep: 0, on: k1 });
    assert_eq!(span(&s, k2), (102, 1_102));
    let wait = s.wait(sync).expect("sync has a wait record");
    assert_eq!(wait.issue_ns, 5);
}

#[test]
fn stream_tail_includes_launches_from_other_threads_before_the_call() {
    // k2's launch starts at 1, before the sync issues at 5.
    let (b, [_, sync, _, _, k2]) = stream_sync_graph(1);
    let s = b.run();
    assert_eq!(span(&s, k2), (102, 1_102));
    assert_eq!(span(&s, sync), (1_105, 1_109));
    assert_eq!(s.bound_by[sync.idx()], Bound::Runtime { dep: 0, on: k2 });
}

#[test]
fn stream_tail_is_resolved_when_the_call_would_start() {
    // A fixed edge holds the sync until 200, after k2's launch at 50, so
    // k2 is the tail by then.
    let (mut b, [launch1, sync, _, _, k2]) = stream_sync_graph(50);
    b.edge(launch1, sync, DepKind::InterThread, Anchor::End, 195);
    let s = b.run();
    assert_eq!(s.bound_by[sync.idx()], Bound::Runtime { dep: 0, on: k2 });
    assert_eq!(s.wait(sync).unwrap().issue_ns, 200);
    assert_eq!(span(&s, sync), (1_105, 1_109));
}

#[test]
fn finished_runtime_dependency_is_not_waited_on() {
    let mut b = Builder::new();
    let (t, st) = (b.thread(), b.stream(0));
    let launch = b.call(t, 5);
    let busy = b.cpu(t, 500);
    let sync = b.call(t, 4);
    let k = b.kernel(st, 100);
    b.launch(launch, k, 2);
    b.wait(sync, WaitTarget::StreamTail(st), 3);
    let s = b.run();
    assert_eq!(span(&s, k), (2, 102));
    assert_eq!(span(&s, sync), (505, 509));
    assert_eq!(s.bound_by[sync.idx()], Bound::Processor { prev: busy });
}

#[test]
fn running_runtime_dependency_is_waited_on_to_its_end() {
    let mut b = Builder::new();
    let (t, st) = (b.thread(), b.stream(0));
    let launch = b.call(t, 5);
    b.cpu(t, 50);
    let sync = b.call(t, 4);
    let k = b.kernel(st, 100);
    b.launch(launch, k, 2);
    b.wait(sync, WaitTarget::Task(k), 0);
    let s = b.run();
    // The kernel already started (at 2) when the sync issued at 55.
    assert_eq!(span(&s, sync), (102, 106));
    assert_eq!(s.bound_by[sync.idx()], Bound::Runtime { dep: 0, on: k });
}

#[test]
fn empty_stream_tail_does_not_wait() {
    let mut b = Builder::new();
    let (t, st) = (b.thread(), b.stream(0));
    let sync = b.call(t, 4);
    let late_launch = b.call(t, 5);
    let k = b.kernel(st, 100);
    b.launch(late_launch, k, 0);
    b.wait(sync, WaitTarget::StreamTail(st), 3);
    let s = b.run();
    assert_eq!(span(&s, sync), (0, 4));
}

#[test]
fn unlaunched_gpu_tasks_count_as_launched_with_their_predecessor() {
    let mut b = Builder::new();
    let (t, st) = (b.thread(), b.stream(0));
    let launch = b.call(t, 5);
    b.cpu(t, 10);
    let sync = b.call(t, 1);
    let k1 = b.kernel(st, 10);
    // No launch edge recorded for k2: it follows k1.
    let k2 = b.kernel(st, 300);
    b.launch(launch, k1, 0);
    b.wait(sync, WaitTarget::StreamTail(st), 0);
    let s = b.run();
    assert_eq!(s.bound_by[sync.idx()], Bound::Runtime { dep: 0, on: k2 });
    assert_eq!(span(&s, sync), (310, 311));
}

#[test]
fn device_tail_waits_for_every_stream_of_that_device_only() {
    let mut b = Builder::new();
    let t = b.thread();
    let (s0, s1, other) = (b.stream(0), b.stream(0), b.stream(1));
    let l0 = b.call(t, 1);
    let l1 = b.call(t, 1);
    let l2 = b.call(t, 1);
    let sync = b.task(
        t,
        lumos_graph::TaskKind::Runtime,
        "cudaDeviceSynchronize",
        2,
    );
    let k0 = b.kernel(s0, 100);
    let k1 = b.kernel(s1, 300);
    let k2 = b.kernel(other, 5_000);
    b.launch(l0, k0, 0);
    b.launch(l1, k1, 0);
    b.launch(l2, k2, 0);
    b.wait(sync, WaitTarget::DeviceTail(0), 10);
    let s = b.run();
    assert_eq!(span(&s, k0), (0, 100));
    assert_eq!(span(&s, k1), (1, 301));
    assert_eq!(span(&s, sync), (311, 313));
    assert_eq!(s.bound_by[sync.idx()], Bound::Runtime { dep: 0, on: k1 });
}

#[test]
fn blocking_call_waits_for_the_copy_it_launched() {
    // A blocking cudaMemcpy launches its copy, then waits for it: the launch
    // counts from the moment the call issues.
    let mut b = Builder::new();
    let (t, st) = (b.thread(), b.stream(0));
    let before = b.cpu(t, 10);
    let memcpy = b.task(t, lumos_graph::TaskKind::Runtime, "cudaMemcpy", 6);
    let after = b.cpu(t, 1);
    let copy = b.task(st, lumos_graph::TaskKind::Memcpy, "Memcpy DtoH", 200);
    let launch = b.launch(memcpy, copy, 4);
    b.wait(memcpy, WaitTarget::Task(copy), 2);
    let s = b.run();
    assert_eq!(span(&s, copy), (14, 214));
    assert_eq!(s.bound_by[copy.idx()], Bound::Edge(launch));
    assert_eq!(span(&s, memcpy), (216, 222));
    assert_eq!(span(&s, after), (222, 223));
    let wait = s.wait(memcpy).unwrap();
    assert_eq!(wait.issue_ns, 10);
    assert_eq!(wait.issue_bound, Bound::Processor { prev: before });
}

#[test]
fn drop_kinds_ignores_those_edges() {
    let mut b = Builder::new();
    let (s0, s1) = (b.stream(0), b.stream(0));
    let a = b.kernel(s0, 100);
    let c = b.kernel(s1, 10);
    b.edge(a, c, DepKind::InterStream, Anchor::End, 0);
    assert_eq!(span(&b.run(), c), (100, 110));
    let s = b.run_with(&SimOptions::default().drop_kind(DepKind::InterStream));
    assert_eq!(span(&s, c), (0, 10));
    assert_eq!(s.bound_by[c.idx()], Bound::Release);
}

#[test]
fn dropping_sync_drops_runtime_deps() {
    let (b, [_, sync, ..]) = stream_sync_graph(50);
    let s = b.run_with(&SimOptions::default().drop_kind(DepKind::Sync));
    assert_eq!(span(&s, sync), (5, 9));
    assert!(s.waits.is_empty());
}

#[test]
fn dropping_launch_frees_kernels_but_stream_tails_still_follow_launches() {
    let (b, [_, sync, _, k1, k2]) = stream_sync_graph(50);
    let s = b.run_with(&SimOptions::default().drop_kind(DepKind::Launch));
    assert_eq!(span(&s, k1), (0, 100));
    assert_eq!(span(&s, k2), (100, 1_100));
    assert_eq!(s.bound_by[sync.idx()], Bound::Runtime { dep: 0, on: k1 });
}

#[test]
fn duration_scaling_selects_gpu_tasks() {
    let mut b = Builder::new();
    let (t, s0, s1) = (b.thread(), b.stream(0), b.stream(0));
    let cpu = b.cpu(t, 100);
    let gemm = b.kernel(s0, 100);
    let nccl = b.comm(s1, 100);
    let dur = |opts: SimOptions| {
        let s = b.run_with(&opts);
        [cpu, gemm, nccl].map(|t| s.end_ns[t.idx()] - s.start_ns[t.idx()])
    };
    assert_eq!(dur(SimOptions::default()), [100, 100, 100]);
    assert_eq!(
        dur(SimOptions::default().scale(GpuSelector::All, 0.5)),
        [100, 50, 50]
    );
    assert_eq!(
        dur(SimOptions::default().scale(GpuSelector::Comm, 2.0)),
        [100, 100, 200]
    );
    assert_eq!(
        dur(SimOptions::default().scale(GpuSelector::Compute, 0.25)),
        [100, 25, 100]
    );
    let by_name = SimOptions::default().scale(GpuSelector::NameContains("gemm".into()), 3.0);
    assert_eq!(dur(by_name), [100, 300, 100]);
    let both = SimOptions::default()
        .scale(GpuSelector::All, 0.5)
        .scale(GpuSelector::Comm, 0.5);
    assert_eq!(dur(both), [100, 50, 25]);
    // CPU tasks never match, even by name.
    let cpu_name = SimOptions::default().scale(GpuSelector::NameContains("op".into()), 9.0);
    assert_eq!(dur(cpu_name), [100, 100, 100]);
    // A set chosen by the caller: GPU tasks only, missing indices unselected.
    let mut set = vec![false; 3];
    set[cpu.idx()] = true;
    set[nccl.idx()] = true;
    let tasks = SimOptions::default().scale(GpuSelector::Tasks(set.into()), 2.0);
    assert_eq!(dur(tasks), [100, 100, 200]);
    let short = SimOptions::default().scale(GpuSelector::Tasks(vec![].into()), 2.0);
    assert_eq!(dur(short), [100, 100, 100]);
}

#[test]
fn scaled_kernel_moves_its_successors() {
    let mut b = Builder::new();
    let (s0, s1) = (b.stream(0), b.stream(0));
    let a = b.kernel(s0, 100);
    let c = b.comm(s1, 10);
    b.edge(a, c, DepKind::InterStream, Anchor::End, 0);
    let s = b.run_with(&SimOptions::default().scale(GpuSelector::Compute, 0.5));
    assert_eq!(span(&s, c), (50, 60));
}

#[test]
fn given_durations_replace_the_graphs_and_are_scaled() {
    let mut b = Builder::new();
    let (t, s0) = (b.thread(), b.stream(0));
    let cpu = b.cpu(t, 100);
    let k = b.kernel(s0, 100);
    b.edge(cpu, k, DepKind::Launch, Anchor::End, 0);
    let given: std::sync::Arc<[i64]> = vec![30, 40].into();
    let s = b.run_with(&SimOptions::default().durations(given.clone()));
    assert_eq!((span(&s, cpu), span(&s, k)), ((0, 30), (30, 70)));
    // Scales multiply the given duration, not the graph's.
    let halved = SimOptions::default()
        .durations(given)
        .scale(GpuSelector::All, 0.5);
    assert_eq!(span(&b.run_with(&halved), k), (30, 50));
    // One duration for every task, or none.
    let short = SimOptions::default().durations(vec![30].into());
    let err = lumos_sim::simulate(&b.graph, &short).unwrap_err();
    assert_eq!(
        err,
        SimError::InvalidOptions("1 durations given for 2 tasks".into())
    );
}

#[test]
fn bad_duration_factor_is_an_error() {
    let b = Builder::new();
    let opts = SimOptions::default().scale(GpuSelector::All, f64::NAN);
    let err = lumos_sim::simulate(&b.graph, &opts).unwrap_err();
    assert!(matches!(err, SimError::InvalidOptions(_)), "{err}");
}

#[test]
fn fixed_cycle_is_an_error_not_a_hang() {
    let mut b = Builder::new();
    let (p, q) = (b.thread(), b.thread());
    let root = b.cpu(p, 1);
    let a = b.cpu(p, 1);
    let c = b.cpu(q, 1);
    b.edge(a, c, DepKind::InterThread, Anchor::End, 0);
    b.edge(c, a, DepKind::InterThread, Anchor::End, 0);
    let err = b.try_run().unwrap_err();
    assert_eq!(
        err,
        SimError::Stuck {
            stuck: 2,
            example: a,
            example_name: "op".into()
        }
    );
    assert!(err.to_string().contains("2 tasks can never start"), "{err}");
    let _ = root;
}

#[test]
fn processor_order_against_an_edge_is_a_cycle() {
    let mut b = Builder::new();
    let p = b.thread();
    let first = b.cpu(p, 1);
    let second = b.cpu(p, 1);
    b.edge(second, first, DepKind::IntraThread, Anchor::End, 0);
    let err = b.try_run().unwrap_err();
    assert!(matches!(err, SimError::Stuck { stuck: 2, .. }), "{err}");
}

#[test]
fn runtime_wait_cycle_is_an_error_not_a_hang() {
    // The sync waits for k, but k is launched by the task after the sync.
    let mut b = Builder::new();
    let (t, st) = (b.thread(), b.stream(0));
    let sync = b.call(t, 1);
    let after = b.cpu(t, 1);
    let k = b.kernel(st, 1);
    b.edge(after, k, DepKind::Launch, Anchor::Start, 0);
    b.wait(sync, WaitTarget::Task(k), 0);
    let err = b.try_run().unwrap_err();
    assert!(matches!(err, SimError::Stuck { stuck: 3, .. }), "{err}");
}

#[test]
fn inconsistent_graph_is_an_error() {
    let mut b = Builder::new();
    let (p, q) = (b.thread(), b.thread());
    let a = b.cpu(p, 1);
    b.graph.processors[q.idx()].tasks.push(a);
    assert!(matches!(b.try_run(), Err(SimError::InvalidGraph(_))));

    let mut b = Builder::new();
    let p = b.thread();
    let a = b.cpu(p, 1);
    b.edge(a, TaskId(9), DepKind::IntraThread, Anchor::End, 0);
    assert!(matches!(b.try_run(), Err(SimError::InvalidGraph(_))));

    let mut b = Builder::new();
    let p = b.thread();
    let a = b.cpu(p, 1);
    b.wait(a, WaitTarget::StreamTail(p), 0);
    assert!(matches!(b.try_run(), Err(SimError::InvalidGraph(_))));

    let mut b = Builder::new();
    let p = b.thread();
    b.cpu(p, 1);
    b.graph.processors[p.idx()].tasks.clear();
    assert!(matches!(b.try_run(), Err(SimError::InvalidGraph(_))));
}

#[test]
fn empty_graph_gives_empty_schedule() {
    let s = Builder::new().run();
    assert!(s.is_empty());
    assert_eq!(s.makespan_ns(), 0);
    assert_eq!(s.last_task(), None);
}

#[test]
fn ties_are_broken_by_task_id_deterministically() {
    let (b, _) = stream_sync_graph(5);
    let first = b.run();
    for _ in 0..3 {
        assert_eq!(b.run(), first);
    }
}

#[test]
fn times_past_the_clock_are_an_error_not_wrapped_or_saturated_times() {
    // A launch, then two kernels a factor of 1e18 makes longer than time
    // itself, then a CPU call waiting for the stream: the first kernel
    // would end at i64::MAX (times saturate, never wrap) and every time
    // after it would mean nothing, so the replay is refused, naming it.
    let mut b = Builder::new();
    let (t, s) = (b.thread(), b.stream(0));
    let call = b.call(t, 1_000);
    let k1 = b.kernel(s, 10_000);
    let k2 = b.kernel(s, 10_000);
    b.launch(call, k1, 500);
    let sync = b.call(t, 100);
    b.wait(sync, WaitTarget::StreamTail(s), 7);
    let after = b.cpu(t, 50);
    b.edge(k2, after, DepKind::Sync, Anchor::End, 3);
    for factor in [1e18, f64::MAX] {
        let opts = SimOptions::default().scale(GpuSelector::All, factor);
        let err = lumos_sim::simulate(&b.graph, &opts).unwrap_err();
        assert!(
            matches!(err, SimError::ClockOverflow { example, .. } if example == k1),
            "{err}"
        );
        assert!(err.to_string().contains("past the clock's range"), "{err}");
    }
    // Long, but within the range: replayed.
    let sch = b.run_with(&SimOptions::default().scale(GpuSelector::All, 1e12));
    assert_eq!(span(&sch, k1), (500, 500 + 10_000 * 1_000_000_000_000));
}

#[test]
fn a_stream_tail_wait_that_can_never_end_is_abandoned() {
    // The sync resolves to g, which waits (inter-stream) for h, which is
    // launched only after the sync: CUDA would not stall, and neither does
    // the replay; the sync goes on when nothing else can run.
    let mut b = Builder::new();
    let (t, s1, s2) = (b.thread(), b.stream(0), b.stream(0));
    let l0 = b.call(t, 10);
    let sync = b.call(t, 5);
    let l1 = b.call(t, 10);
    let g = b.kernel(s1, 100);
    let h = b.kernel(s2, 50);
    b.launch(l0, g, 0);
    b.launch(l1, h, 0);
    b.wait(sync, WaitTarget::StreamTail(s1), 0);
    b.edge(h, g, DepKind::InterStream, Anchor::End, 0);
    let s = b.run();
    assert_eq!(span(&s, sync), (10, 15));
    assert_eq!(span(&s, l1), (15, 25));
    assert_eq!(span(&s, h), (15, 65));
    assert_eq!(span(&s, g), (65, 165));
    assert!(s.wait(sync).unwrap().abandoned);
    assert_eq!(s.abandoned_waits(), 1);
    assert_eq!(s.warnings().len(), 1);
}

#[test]
fn a_replay_whose_cancel_flag_is_set_returns_cancelled_and_others_replay() {
    let mut b = Builder::new();
    let (t, s) = (b.thread(), b.stream(0));
    let c = b.call(t, 10);
    let k = b.kernel(s, 100);
    b.launch(c, k, 0);
    b.call(t, 10);
    let cancel = Cancel::new();
    let opts = SimOptions::default().cancel_with(cancel.clone());
    assert_eq!(
        b.run_with(&opts).end_ns,
        b.run().end_ns,
        "not set: replayed as without a flag"
    );
    assert!(
        !cancel.stopped_work(),
        "a replay to its end stopped nothing"
    );
    cancel.cancel();
    assert!(!cancel.stopped_work(), "set, but no replay has seen it yet");
    assert_eq!(b.try_run_with(&opts).err(), Some(SimError::Cancelled));
    assert!(cancel.stopped_work(), "the replay it stopped says so");
    // Another flag, or none, is not stopped by this one.
    let other_flag = Cancel::new();
    let other = SimOptions::default().cancel_with(other_flag.clone());
    assert_ne!(opts, other);
    assert!(b.try_run_with(&other).is_ok());
    assert!(!other_flag.stopped_work());
}
