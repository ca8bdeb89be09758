//! Representatives' modelled peers: the transfer is the shortest duration
//! over the task's process group, and the representative waits for the
//! group's latest arrival after the previous collective.

use lumos_graph::{
    model_group_peers, Collective, CommPattern, CommTask, CommTiming, Graph, JobGraph, Measured,
    PeerModel, ProgramGroups, ProgramSignature, RankGraph, RankProgram, Span, Task, TaskId,
    TaskKind,
};

/// A rank with two all-reduces in process group "dp" of ranks 0-3.
fn rank(rank: u32) -> RankGraph {
    let task = |i: u32| Task {
        kind: TaskKind::Kernel,
        name: lumos_graph::NameId(0),
        proc: lumos_graph::ProcId(0),
        duration_ns: 100,
        release_ns: 0,
        collective: Some(i),
        correlation: 0,
    };
    let coll = Collective {
        name: "allreduce".into(),
        process_group: Some("dp".into()),
        seq: None,
        bytes: Some(64),
        group_size: Some(4),
        elements: None,
    };
    RankGraph {
        rank,
        source: format!("rank{rank}"),
        clock_base_ns: 0,
        host: None,
        graph: Graph {
            names: vec!["nccl".into()],
            tasks: vec![task(0), task(1)],
            collectives: vec![coll.clone(), coll],
            ..Graph::default()
        },
        measured: Measured {
            tasks: vec![Span::default(); 2],
            ..Measured::default()
        },
        comms: (0..2)
            .map(|i| CommTask {
                task: TaskId(i),
                collective: i,
                pattern: CommPattern::Group,
                group: Some(0),
                issue_ns: i64::from(i),
            })
            .collect(),
        groups: vec![vec![0, 1, 2, 3]],
    }
}

fn program(rank: u32, timings: &[(Option<i64>, i64, i64)]) -> RankProgram {
    RankProgram {
        rank,
        signature: ProgramSignature::from_u64(7),
        steps_ns: vec![1_000],
        comms: timings
            .iter()
            .map(|&(interval_ns, start_ns, end_ns)| CommTiming {
                interval_ns,
                start_ns,
                end_ns,
            })
            .collect(),
    }
}

#[test]
fn a_representative_waits_for_its_groups_latest_peer() {
    let mut groups = ProgramGroups::new();
    for r in [2, 0, 3, 1] {
        groups.add(r, ProgramSignature::from_u64(7), vec![1_000 + i64::from(r)]);
    }
    let groups = groups.finish();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].ranks, [0, 1, 2, 3]);
    assert_eq!(groups[0].steps_ns[3], [1_003]);

    let rep = rank(0);
    let mut model = PeerModel::new(&rep, &groups[0]);
    assert!(!model.is_empty());
    // Durations 50..80 (the shortest, 50, is the transfer); the second
    // task's intervals: rank 0 took 100 since the first ended, rank 2 took
    // 130, so rank 0 waits 30 more.
    model.add(&program(0, &[(None, 0, 60), (Some(100), 160, 240)]));
    model.add(&program(1, &[(None, 0, 50), (Some(110), 160, 230)]));
    model.add(&program(2, &[(None, 0, 70), (Some(130), 200, 260)]));
    model.add(&program(3, &[(None, 0, 80), (Some(90), 170, 250)]));
    // A rank outside the group changes nothing.
    model.add(&program(9, &[(None, 0, 1), (Some(1_000_000), 0, 1)]));
    assert_eq!(model.durations(), [Some(50), Some(60 + 30)]);

    // In a job of the representative alone, both tasks are unmatched and
    // take the modelled durations.
    let m = lumos_graph::match_collectives(std::slice::from_ref(&rep));
    let clock = lumos_graph::align_clocks(std::slice::from_ref(&rep), &m);
    let (mut job, _, _): (JobGraph, _, _) =
        lumos_graph::merge(std::slice::from_ref(&rep), &m, &clock);
    let n = model_group_peers(
        &mut job,
        std::slice::from_ref(&rep),
        &m,
        &[model.durations()],
    );
    assert_eq!(n, 2);
    assert_eq!(job.graph.tasks[1].duration_ns, 90);
}

#[test]
fn collectives_reaching_outside_the_group_are_not_modelled() {
    let mut groups = ProgramGroups::new();
    for r in [0, 1] {
        groups.add(r, ProgramSignature::from_u64(7), vec![]);
    }
    let groups = groups.finish();
    // Ranks 2 and 3 of the process group run another program.
    let model = PeerModel::new(&rank(0), &groups[0]);
    assert!(model.is_empty());
    assert_eq!(model.durations(), [None, None]);
}
