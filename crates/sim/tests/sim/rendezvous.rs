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
        rendezvous: vec![Rendezvous {
            tasks: x.comm.to_vec(),
        }],
    }
}

#[test]
fn collective_ends_at_last_start_plus_transfer_on_every_rank() {
    let x = two_ranks();
    let rv = [Rendezvous {
        tasks: x.comm.to_vec(),
    }];
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
    let rv = [Rendezvous {
        tasks: x.comm.to_vec(),
    }];
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
    let rv = [Rendezvous {
        tasks: x.comm.to_vec(),
    }];
    let s = simulate_with_rendezvous(&x.b.graph, &rv, &SimOptions::default()).unwrap();
    assert_eq!(span(&s, sync), (35_000, 36_000));
}

#[test]
fn transfer_scales_with_comm_scaling() {
    let x = two_ranks();
    let rv = [Rendezvous {
        tasks: x.comm.to_vec(),
    }];
    let opts = SimOptions::default().scale(lumos_sim::GpuSelector::Comm, 2.0);
    let s = simulate_with_rendezvous(&x.b.graph, &rv, &opts).unwrap();
    assert_eq!(span(&s, x.comm[0]).1, 40_000);
}

#[test]
fn peer_waiting_for_the_collective_end_is_stuck_not_a_hang() {
    let mut x = two_ranks();
    // Rank 1's collective can only start after rank 0's ends: impossible.
    x.b.edge(x.comm[0], x.comm[1], DepKind::Collective, Anchor::End, 0);
    let rv = [Rendezvous {
        tasks: x.comm.to_vec(),
    }];
    match simulate_with_rendezvous(&x.b.graph, &rv, &SimOptions::default()) {
        Err(SimError::Stuck { stuck, .. }) => assert!(stuck >= 2, "{stuck}"),
        other => panic!("expected Stuck, got {other:?}"),
    }
}

#[test]
fn bad_rendezvous_is_an_error() {
    let x = two_ranks();
    let twice = [
        Rendezvous {
            tasks: x.comm.to_vec(),
        },
        Rendezvous {
            tasks: vec![x.comm[0]],
        },
    ];
    assert!(matches!(
        simulate_with_rendezvous(&x.b.graph, &twice, &SimOptions::default()),
        Err(SimError::InvalidGraph(_))
    ));
    let missing = [Rendezvous {
        tasks: vec![TaskId(99)],
    }];
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
