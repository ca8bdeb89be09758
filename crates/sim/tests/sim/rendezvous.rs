//! Rendezvous: collectives coupled across ranks end together, no earlier
//! than the last participant's start plus their transfer time.

use lumos_graph::*;
use lumos_sim::{
    job_critical_path, rank_waits, rendezvous_times, simulate, simulate_job,
    simulate_with_rendezvous, BoundKind, SimError, SimOptions,
};

use crate::builder::{span, Builder};

/// Two "ranks" in one graph: each launches a compute kernel, then a
/// collective on a second stream, then a kernel after the collective.
/// Rank 0 computes for 10 us, rank 1 for 30 us; transfers take 5 us.
struct TwoRanks {
    b: Builder,
    comm: [TaskId; 2],
    after: [TaskId; 2],
    compute: [TaskId; 2],
}

fn two_ranks() -> TwoRanks {
    let mut b = Builder::new();
    let mut comm = [TaskId(0); 2];
    let mut after = [TaskId(0); 2];
    let mut compute = [TaskId(0); 2];
    for (r, work) in [10_000, 30_000].into_iter().enumerate() {
        let s = b.stream(r as i64);
        let k = b.kernel(s, work);
        let c = b.comm(s, 5_000);
        let a = b.kernel(s, 1_000);
        b.edge(k, c, DepKind::IntraStream, Anchor::End, 0);
        b.edge(c, a, DepKind::IntraStream, Anchor::End, 0);
        comm[r] = c;
        after[r] = a;
        compute[r] = k;
    }
    TwoRanks {
        b,
        comm,
        after,
        compute,
    }
}

fn job_of(x: &TwoRanks) -> JobGraph {
    let part = |rank: u32, tasks: std::ops::Range<u32>| RankPart {
        rank,
        tasks,
        processors: rank..rank + 1,
        edges: 2 * rank..2 * rank + 2,
        steps: 0..0,
        collectives: rank..rank + 1,
        scopes: 0..0,
        start_ns: 0,
        clock_offset_ns: 0,
    };
    JobGraph {
        graph: x.b.graph.clone(),
        ranks: vec![part(0, 0..3), part(1, 3..6)],
        rendezvous: vec![Rendezvous::collective(x.comm.to_vec())],
        restore: Vec::new(),
    }
}

#[test]
fn collective_ends_at_last_start_plus_transfer_on_every_rank() {
    let x = two_ranks();
    let rv = [Rendezvous::collective(x.comm.to_vec())];
    let s = simulate_with_rendezvous(&x.b.graph, &rv, &SimOptions::default()).unwrap();
    // Rank 0 arrives at 10 us and waits for rank 1, which arrives at 30 us.
    assert_eq!(span(&s, x.comm[0]), (10_000, 35_000));
    assert_eq!(span(&s, x.comm[1]), (30_000, 35_000));
    // What follows the collective waits for its end on both ranks.
    assert_eq!(span(&s, x.after[0]).0, 35_000);
    assert_eq!(span(&s, x.after[1]).0, 35_000);
    // Without the rendezvous each rank runs alone.
    let alone = simulate(&x.b.graph, &SimOptions::default()).unwrap();
    assert_eq!(span(&alone, x.comm[0]), (10_000, 15_000));
}

#[test]
fn slower_peer_delays_the_other_rank() {
    let mut x = two_ranks();
    x.b.graph.tasks[x.compute[1].idx()].duration_ns = 45_000;
    let rv = [Rendezvous::collective(x.comm.to_vec())];
    let s = simulate_with_rendezvous(&x.b.graph, &rv, &SimOptions::default()).unwrap();
    assert_eq!(span(&s, x.comm[0]).1, 50_000);
    assert_eq!(span(&s, x.after[0]).0, 50_000);
}

#[test]
fn blocking_call_waits_for_the_rendezvous_end() {
    let mut x = two_ranks();
    let th = x.b.thread();
    let sync =
        x.b.task(th, TaskKind::Runtime, "cudaStreamSynchronize", 1_000);
    x.b.release(sync, 12_000);
    x.b.wait(sync, WaitTarget::Task(x.comm[0]), 0);
    let rv = [Rendezvous::collective(x.comm.to_vec())];
    let s = simulate_with_rendezvous(&x.b.graph, &rv, &SimOptions::default()).unwrap();
    assert_eq!(span(&s, sync), (35_000, 36_000));
}

#[test]
fn transfer_scales_with_comm_scaling() {
    let x = two_ranks();
    let rv = [Rendezvous::collective(x.comm.to_vec())];
    let opts = SimOptions::default().scale(lumos_sim::GpuSelector::Comm, 2.0);
    let s = simulate_with_rendezvous(&x.b.graph, &rv, &opts).unwrap();
    assert_eq!(span(&s, x.comm[0]).1, 40_000);
}

#[test]
fn peer_waiting_for_the_collective_end_is_stuck_not_a_hang() {
    let mut x = two_ranks();
    // Rank 1's collective can only start after rank 0's ends: impossible.
    x.b.edge(x.comm[0], x.comm[1], DepKind::Collective, Anchor::End, 0);
    let rv = [Rendezvous::collective(x.comm.to_vec())];
    match simulate_with_rendezvous(&x.b.graph, &rv, &SimOptions::default()) {
        Err(SimError::Stuck { stuck, .. }) => assert!(stuck >= 2, "{stuck}"),
        other => panic!("expected Stuck, got {other:?}"),
    }
}

#[test]
fn bad_rendezvous_is_an_error() {
    let x = two_ranks();
    let twice = [
        Rendezvous::collective(x.comm.to_vec()),
        Rendezvous::collective(vec![x.comm[0]]),
    ];
    assert!(matches!(
        simulate_with_rendezvous(&x.b.graph, &twice, &SimOptions::default()),
        Err(SimError::InvalidGraph(_))
    ));
    let missing = [Rendezvous::collective(vec![TaskId(99)])];
    assert!(matches!(
        simulate_with_rendezvous(&x.b.graph, &missing, &SimOptions::default()),
        Err(SimError::InvalidGraph(_))
    ));
}

#[test]
fn waits_and_critical_path_cross_ranks() {
    let x = two_ranks();
    let job = job_of(&x);
    let s = simulate_job(&job, &SimOptions::default()).unwrap();
    let rt = rendezvous_times(&job, &s);
    assert_eq!(rt.len(), 1);
    assert_eq!(rt[0].last, 1, "rank 1 arrives last");
    assert_eq!(rt[0].wait_ns, vec![20_000, 0]);
    assert_eq!(rt[0].transfer_ns, vec![5_000, 5_000]);
    assert_eq!(rt[0].end_spread_ns, 0);
    let waits = rank_waits(&job, &rt);
    assert_eq!(waits[0].wait_ns, 20_000);
    assert_eq!(waits[1].caused_ns, 20_000);
    assert_eq!(waits[1].last_arrivals, 1);
    // Rank 0's last kernel is on a path that runs through rank 1's compute.
    let cp = job_critical_path(&job, &s, x.after[0], 5);
    assert_eq!(cp.rank_changes, 1);
    // Rank 1 computes 30 us; rank 0 runs the transfer (5 us) and its last kernel.
    assert_eq!(cp.per_rank_ns, vec![6_000, 30_000]);
    assert_eq!(cp.summary.end_ns, 36_000);
    assert!(cp
        .summary
        .by_bound
        .iter()
        .any(|b| b.kind == BoundKind::Rendezvous && b.busy_ns == 5_000));
    // Slowing rank 1 delays rank 0 through the rendezvous.
    let mut slow = job.clone();
    slow.scale_rank(1, 1.5, false);
    let s2 = simulate_job(&slow, &SimOptions::default()).unwrap();
    assert_eq!(s2.end_ns[x.after[0].idx()], 45_000 + 5_000 + 1_000);
}

/// Two pipeline stages on one stream each, in the order 1F1B warm-up
/// produces: stage 0 sends twice then receives; stage 1 receives, sends,
/// receives. With eager sends this replays; if sends waited for their
/// receives it would deadlock.
#[test]
fn point_to_point_sends_are_eager_and_receives_wait_for_the_send() {
    let mut b = Builder::new();
    let s0 = b.stream(0);
    let s1 = b.stream(1);
    let send_a = b.comm(s0, 10);
    let send_b = b.comm(s0, 10);
    let recv_c = b.comm(s0, 5);
    b.release(send_a, 100);
    let recv_a = b.comm(s1, 5);
    let send_c = b.comm(s1, 10);
    let recv_b = b.comm(s1, 5);
    b.release(recv_a, 0);
    for (x, y) in [
        (send_a, send_b),
        (send_b, recv_c),
        (recv_a, send_c),
        (send_c, recv_b),
    ] {
        b.edge(x, y, DepKind::IntraStream, Anchor::End, 0);
    }
    let pair = |send, recv| Rendezvous {
        tasks: vec![send, recv],
        kind: RendezvousKind::PointToPoint,
    };
    let rv = [
        pair(send_a, recv_a),
        pair(send_b, recv_b),
        pair(send_c, recv_c),
    ];
    let s = simulate_with_rendezvous(&b.graph, &rv, &SimOptions::default()).unwrap();
    // The send runs on its own; the receive, started at 0, ends 5 ns after
    // the send started at 100.
    assert_eq!(span(&s, send_a), (100, 110));
    assert_eq!(span(&s, recv_a), (0, 105));
    assert_eq!(span(&s, send_c), (105, 115));
    assert_eq!(span(&s, send_b), (110, 120));
    assert_eq!(span(&s, recv_b), (115, 120));
    assert_eq!(span(&s, recv_c), (120, 125));
    let mut symmetric = rv.clone();
    for r in &mut symmetric {
        r.kind = RendezvousKind::Collective;
    }
    assert!(matches!(
        simulate_with_rendezvous(&b.graph, &symmetric, &SimOptions::default()),
        Err(SimError::Stuck { .. })
    ));
}

mod props {
    //! Random multi-rank chains: each rank launches, per round, a compute
    //! kernel and a collective, and sometimes blocks on the collective; the
    //! k-th collectives of all ranks form a rendezvous.

    use lumos_graph::*;
    use lumos_sim::{simulate_with_rendezvous, SimOptions};
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed};

    /// Per rank, per round: (launch call ns, compute ns, transfer ns, block).
    type Recipe = Vec<Vec<(i64, i64, i64, bool)>>;

    fn recipe() -> impl Strategy<Value = Recipe> {
        (2usize..5, 1usize..6).prop_flat_map(|(ranks, rounds)| {
            prop::collection::vec(
                prop::collection::vec((1i64..50, 0i64..500, 0i64..100, any::<bool>()), rounds),
                ranks,
            )
        })
    }

    fn build(r: &Recipe, compute_factor: &[i64]) -> (Graph, Vec<Rendezvous>) {
        let mut g = Graph {
            names: vec!["x".into()],
            ..Graph::default()
        };
        let rounds = r[0].len();
        let mut comms = vec![Vec::new(); rounds];
        for (rank, plan) in r.iter().enumerate() {
            let thread = ProcId(g.processors.len() as u32);
            g.processors.push(Processor {
                kind: ProcKind::Thread { pid: 1, tid: 1 },
                tasks: Vec::new(),
            });
            let stream = ProcId(g.processors.len() as u32);
            g.processors.push(Processor {
                kind: ProcKind::Stream {
                    device: 0,
                    stream: 7,
                },
                tasks: Vec::new(),
            });
            let push = |g: &mut Graph, kind, proc: ProcId, duration_ns, comm: bool| {
                let id = TaskId(g.tasks.len() as u32);
                if comm {
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
                    kind,
                    name: NameId(0),
                    proc,
                    duration_ns,
                    release_ns: 0,
                    collective: comm.then(|| g.collectives.len() as u32 - 1),
                    correlation: 0,
                });
                g.processors[proc.idx()].tasks.push(id);
                id
            };
            for (k, &(call, compute, transfer, block)) in plan.iter().enumerate() {
                let c1 = push(&mut g, TaskKind::Runtime, thread, call, false);
                let kernel = push(
                    &mut g,
                    TaskKind::Kernel,
                    stream,
                    compute * compute_factor[rank],
                    false,
                );
                let c2 = push(&mut g, TaskKind::Runtime, thread, call, false);
                let comm = push(&mut g, TaskKind::Kernel, stream, transfer, true);
                for (from, to) in [(c1, kernel), (c2, comm)] {
                    g.edges.push(Edge {
                        from,
                        to,
                        kind: DepKind::Launch,
                        anchor: Anchor::Start,
                        latency_ns: 3,
                        inferred: false,
                    });
                }
                comms[k].push(comm);
                if block {
                    let sync = push(&mut g, TaskKind::Runtime, thread, 2, false);
                    g.runtime_deps.push(RuntimeDep {
                        task: sync,
                        target: WaitTarget::Task(comm),
                        latency_ns: 1,
                        inferred: false,
                    });
                }
            }
        }
        let rv = comms.into_iter().map(Rendezvous::collective).collect();
        (g, rv)
    }

    proptest! {
        #![proptest_config(Config {
            cases: 256,
            rng_seed: RngSeed::Fixed(4),
            failure_persistence: None,
            ..Config::default()
        })]

        /// Every rendezvous ends at its last start plus each duration; every
        /// other task runs for its duration; making one rank slower never
        /// makes any collective end earlier, on any rank.
        #[test]
        fn rendezvous_end_together_and_respond_monotonically(r in recipe(), slow in 0usize..4) {
            let ones = vec![1; r.len()];
            let (g, rv) = build(&r, &ones);
            let s = simulate_with_rendezvous(&g, &rv, &SimOptions::default()).unwrap();
            let mut in_rv = vec![false; g.tasks.len()];
            for r in &rv {
                let last = r.tasks.iter().map(|t| s.start_ns[t.idx()]).max().unwrap();
                for t in &r.tasks {
                    in_rv[t.idx()] = true;
                    prop_assert_eq!(s.end_ns[t.idx()], last + g.tasks[t.idx()].duration_ns);
                }
            }
            for (t, task) in g.tasks.iter().enumerate() {
                if !in_rv[t] {
                    prop_assert_eq!(s.end_ns[t] - s.start_ns[t], task.duration_ns);
                }
            }
            for p in &g.processors {
                for w in p.tasks.windows(2) {
                    prop_assert!(s.start_ns[w[1].idx()] >= s.end_ns[w[0].idx()]);
                }
            }
            for d in &g.runtime_deps {
                if let WaitTarget::Task(on) = d.target {
                    prop_assert!(s.start_ns[d.task.idx()] >= s.end_ns[on.idx()] + d.latency_ns);
                }
            }
            let mut factors = ones.clone();
            factors[slow % r.len()] = 3;
            let (g2, rv2) = build(&r, &factors);
            let s2 = simulate_with_rendezvous(&g2, &rv2, &SimOptions::default()).unwrap();
            for r in &rv {
                for t in &r.tasks {
                    prop_assert!(s2.end_ns[t.idx()] >= s.end_ns[t.idx()]);
                }
            }
        }
    }
}
