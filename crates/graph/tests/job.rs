//! Multi-rank jobs: collective matching, clock alignment and merging, on
//! the 8-rank DLRM set and on fixtures built from it in code. About 800
//! lines in one file on purpose: the tests share the fixtures built here
//! (damaged ranks, foreign ranks, shifted clocks).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use lumos_graph::*;
use lumos_trace::{read_path, Category, Trace};

/// The 8 DLRM ranks, or `None` when the corpus is absent.
fn dlrm_traces() -> Option<Vec<Trace>> {
    let corpus = lumos_testkit::corpus()?;
    let rank = |r: u32| corpus.path(&format!("multi-rank/dlrm-8xv100/rank{r}.json.gz"));
    Some((0..8).map(|r| read_path(&rank(r)).unwrap()).collect())
}

fn ranks_of(traces: &[Trace]) -> Vec<RankGraph> {
    traces.iter().map(|t| rank_graph(t).0).collect()
}

/// Moves every event (and flow) of a trace by `shift_ns`, as if its host's
/// clock were off by that much.
fn shift_clock(t: &mut Trace, shift_ns: i64) {
    for e in &mut t.events {
        e.ts_ns += shift_ns;
    }
    for f in &mut t.flows {
        f.ts_ns += shift_ns;
    }
}

#[test]
fn dlrm_collectives_match_on_all_ranks() {
    let Some(traces) = dlrm_traces() else {
        return;
    };
    let ranks = ranks_of(&traces);
    let m = match_collectives(&ranks);
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(m.sets.len(), 8);
    assert_eq!(m.unmatched_tasks(), 0);
    for s in &m.sets {
        // No process-group arguments on these NCCL kernels: the fallback.
        assert_eq!(s.rule, MatchRule::KernelFamilyOrder);
        assert_eq!(s.members.len(), 8, "{}", s.label);
    }
    let names: Vec<&str> = m.sets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.iter().filter(|n| **n == "AllReduce").count(), 3);
    assert_eq!(names.iter().filter(|n| **n == "SendRecv").count(), 5);
}

#[test]
fn dlrm_shares_one_clock() {
    let Some(traces) = dlrm_traces() else {
        return;
    };
    let ranks = ranks_of(&traces);
    let m = match_collectives(&ranks);
    let c = align_clocks(&ranks, &m);
    assert!(c.unaligned.is_empty());
    for (p, o) in c.offsets_ns.iter().enumerate() {
        assert!(o.abs() <= 10_000, "rank {p} offset {o} ns");
    }
    for s in &c.end_spread_ns {
        assert!(*s <= 10_000, "aligned end spread {s} ns");
    }
}

#[test]
fn shifted_clocks_are_recovered() {
    let Some(plain) = dlrm_traces() else {
        return;
    };
    let mut shifted = plain.clone();
    // Rank 5's host runs 3.217 ms ahead, rank 2's 1.5 s behind.
    shift_clock(&mut shifted[5], 3_217_000);
    shift_clock(&mut shifted[2], -1_500_000_000);
    let base = {
        let r = ranks_of(&plain);
        let m = match_collectives(&r);
        let c = align_clocks(&r, &m);
        (r, m, c)
    };
    let r = ranks_of(&shifted);
    let m = match_collectives(&r);
    let c = align_clocks(&r, &m);
    assert!(m.problems.is_empty());
    let recovered = |p: usize| c.offsets_ns[p] - base.2.offsets_ns[p];
    assert!(
        (recovered(5) - 3_217_000).abs() <= 10_000,
        "{}",
        recovered(5)
    );
    assert!(
        (recovered(2) + 1_500_000_000).abs() <= 10_000,
        "{}",
        recovered(2)
    );
    assert!(c.raw_end_spread_ns.iter().all(|&s| s > 1_000_000_000));
    assert!(
        c.end_spread_ns.iter().all(|&s| s <= 10_000),
        "{:?}",
        c.end_spread_ns
    );

    // The merged job is the same as without the shift: same transfer
    // times, same releases on the job timeline.
    let (a, ma, wa) = merge(&base.0, &base.1, &base.2);
    let (b, mb, wb) = merge(&r, &m, &c);
    assert!(wa.is_empty() && wb.is_empty(), "{wa:?} {wb:?}");
    let durations = |j: &JobGraph| {
        j.graph
            .tasks
            .iter()
            .map(|t| t.duration_ns)
            .collect::<Vec<_>>()
    };
    let releases = |j: &JobGraph| {
        j.graph
            .tasks
            .iter()
            .map(|t| t.release_ns)
            .collect::<Vec<_>>()
    };
    let close = |x: Vec<i64>, y: Vec<i64>| x.iter().zip(&y).all(|(p, q)| (p - q).abs() <= 10_000);
    assert!(close(durations(&a), durations(&b)));
    assert!(close(releases(&a), releases(&b)));
    let starts = |m: &Measured| m.tasks.iter().map(|s| s.start_ns).collect::<Vec<_>>();
    assert!(close(starts(&ma), starts(&mb)));
}

#[test]
fn merge_owned_gives_what_merge_gives() {
    let Some(traces) = dlrm_traces() else {
        return;
    };
    let ranks = ranks_of(&traces);
    // Also with one rank's clock off, so that releases move on the job
    // timeline and transfers are timed across clocks.
    let mut shifted = traces.clone();
    shift_clock(&mut shifted[3], 2_000_000);
    for ranks in [ranks, ranks_of(&shifted)] {
        let m = match_collectives(&ranks);
        let c = align_clocks(&ranks, &m);
        let (a, ma, wa) = merge(&ranks, &m, &c);
        let (b, mb, wb) = merge_owned(ranks.clone(), &m, &c);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert_eq!(format!("{ma:?}"), format!("{mb:?}"));
        assert_eq!(wa, wb);
        assert!(!a.rendezvous.is_empty());
    }
}

/// The rank's graph and measured times as text, to compare exactly.
fn text(g: &Graph, m: &Measured) -> String {
    format!("{g:?}\n{m:?}")
}

#[test]
fn every_rank_reads_back_from_the_job_graph_as_it_was_merged() {
    let Some(traces) = dlrm_traces() else {
        return;
    };
    // With one rank's clock off too, so that its window (releases and
    // measured times) moves on the job timeline.
    let mut shifted = traces.clone();
    shift_clock(&mut shifted[3], 2_000_000);
    for ranks in [ranks_of(&traces), ranks_of(&shifted)] {
        let m = match_collectives(&ranks);
        let c = align_clocks(&ranks, &m);
        let (a, ma, wa) = merge(&ranks, &m, &c);
        let mut emptied = ranks.clone();
        let (mut b, mb, wb) = merge_emptying(&mut emptied, &m, &c);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert_eq!(format!("{ma:?}"), format!("{mb:?}"));
        assert_eq!(wa, wb);
        assert!(a.ranks.iter().any(|p| p.start_ns > 0));
        // Emptied ranks keep what the job's reports read of them.
        for (e, r) in emptied.iter().zip(&ranks) {
            assert!(e.graph.tasks.is_empty() && e.measured.tasks.is_empty());
            assert_eq!((e.rank, e.comms.len()), (r.rank, r.comms.len()));
        }
        // Rendezvous changed durations; what-ifs change more.
        b.scale_rank(2, 1.7, true);
        b.scale_rank(2, 0.5, false);
        let t = b.ranks[5].task(ranks[5].comms[0].task);
        b.set_duration(t, 123);
        for (pos, r) in ranks.iter().enumerate() {
            let (g, own) = b.rank_graph(pos, &mb).unwrap();
            assert_eq!(text(&g, &own), text(&r.graph, &r.measured), "rank {pos}");
        }
        assert!(b.rank_graph(ranks.len(), &mb).is_none());
        // Measured times of another merge (here, none) give nothing back
        // rather than a panic.
        let last = ranks.len() - 1;
        assert!(b
            .rank_graph(last, &lumos_graph::Measured::default())
            .is_none());
        // The job graph itself kept its changes.
        assert_eq!(b.graph.tasks[t.idx()].duration_ns, 123);
    }
}

#[test]
fn merged_dlrm_job_is_a_valid_graph_with_transfer_durations() {
    let Some(traces) = dlrm_traces() else {
        return;
    };
    let ranks = ranks_of(&traces);
    let m = match_collectives(&ranks);
    let c = align_clocks(&ranks, &m);
    let (job, measured, warnings) = merge(&ranks, &m, &c);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(check(&job.graph).is_empty());
    assert_eq!(job.ranks.len(), 8);
    assert_eq!(job.rendezvous.len(), 8);
    let total: usize = ranks.iter().map(|r| r.graph.tasks.len()).sum();
    assert_eq!(job.graph.tasks.len(), total);
    assert_eq!(measured.tasks.len(), total);
    // The first all-to-all: rank 7 arrives last and its kernel runs about
    // 10 us; on every rank the transfer time is about that, not the up to
    // 7.6 ms the kernels measured while waiting for rank 7.
    let first = &job.rendezvous[m
        .sets
        .iter()
        .position(|s| s.label == "SendRecv #0")
        .unwrap()];
    for &t in &first.tasks {
        let d = job.graph.tasks[t.idx()].duration_ns;
        assert!(d <= 20_000, "transfer {d} ns");
    }
    let longest = first
        .tasks
        .iter()
        .map(|t| measured.tasks[t.idx()].end_ns - measured.tasks[t.idx()].start_ns)
        .max()
        .unwrap();
    assert!(longest > 7_000_000, "{longest}");
    // Each rank's window starts where it started on the common clock.
    let starts: Vec<i64> = job.ranks.iter().map(|p| p.start_ns).collect();
    assert_eq!(starts.iter().min(), Some(&0));
    assert!(starts[7] > starts[1] + 7_000_000, "{starts:?}");
}

#[test]
fn collective_missing_on_one_rank_is_reported_not_paired() {
    let Some(mut traces) = dlrm_traces() else {
        return;
    };
    // Drop rank 3's second all-reduce kernel, as if the profiler lost it.
    let t = &mut traces[3];
    let idx: Vec<usize> = t
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.category == Category::Kernel && t.name(e).starts_with("ncclKernel_AllReduce")
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(idx.len(), 3);
    t.events.remove(idx[1]);
    let ranks = ranks_of(&traces);
    let m = match_collectives(&ranks);
    assert_eq!(m.problems.len(), 1, "{:?}", m.problems);
    let p = &m.problems[0];
    assert_eq!(p.kind, ProblemKind::CountMismatch);
    assert!(p.label.contains("AllReduce"), "{p}");
    assert!(p.detail.contains("rank 3 issued 2"), "{p}");
    assert!(p.detail.contains("rank 0-2, 4-7 issued 3"), "{p}");
    assert_eq!(p.unmatched_tasks, 23);
    // The all-to-alls still match.
    assert_eq!(m.sets.len(), 5);
    assert!(m.sets.iter().all(|s| s.name == "SendRecv"));
    assert_eq!(m.unmatched_tasks(), 23);
}

#[test]
fn missing_rank_leaves_the_others_matched() {
    let Some(traces) = dlrm_traces() else {
        return;
    };
    let seven: Vec<Trace> = traces.into_iter().filter(|t| t.meta.rank != 4).collect();
    let ranks = ranks_of(&seven);
    let m = match_collectives(&ranks);
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(m.sets.len(), 8);
    assert!(m.sets.iter().all(|s| s.members.len() == 7));
}

#[test]
fn process_group_order_on_a_real_trace_cloned_as_two_ranks() {
    // A rank of a 2-rank DDP job with `Process Group Name` but no `Seq`:
    // its clone as rank 1 matches it collective by collective.
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let t0 = read_path(&corpus.path("single-rank/a100-ddp-rank0of2-event-record.json.gz")).unwrap();
    let mut t1 = t0.clone();
    t1.meta.rank = 1;
    let ranks = ranks_of(&[t0, t1]);
    let m = match_collectives(&ranks);
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    assert!(!m.sets.is_empty());
    assert!(m
        .sets
        .iter()
        .all(|s| s.rule == MatchRule::ProcessGroupOrder && s.members.len() == 2));
    assert_eq!(m.unmatched_tasks(), 0);
    assert!(m.sets[0].label.starts_with("pg 0 #"), "{}", m.sets[0].label);
}

/// A hand-made rank whose communication tasks are described directly.
fn rank(rank: u32, comms: &[(&str, Option<i64>, CommPattern, Option<u64>)]) -> RankGraph {
    let mut g = Graph {
        names: vec!["nccl".into()],
        processors: vec![Processor {
            kind: ProcKind::Stream {
                device: 0,
                stream: 7,
            },
            tasks: Vec::new(),
        }],
        ..Graph::default()
    };
    let mut out = Vec::new();
    for (i, (name, seq, pattern, bytes)) in comms.iter().enumerate() {
        g.tasks.push(Task {
            kind: TaskKind::Kernel,
            name: NameId(0),
            proc: ProcId(0),
            duration_ns: 1_000,
            release_ns: i as i64 * 10_000,
            collective: Some(i as u32),
            correlation: 0,
        });
        g.processors[0].tasks.push(TaskId(i as u32));
        g.collectives.push(Collective {
            name: (*name).into(),
            process_group: Some("0".into()),
            seq: *seq,
            bytes: *bytes,
            elements: None,
            group_size: Some(4),
        });
        out.push(CommTask {
            task: TaskId(i as u32),
            collective: i as u32,
            pattern: *pattern,
            group: Some(0),
            issue_ns: i as i64 * 10_000,
        });
    }
    let n = g.tasks.len();
    RankGraph {
        rank,
        source: format!("rank{rank}.json"),
        clock_base_ns: 0,
        host: None,
        measured: Measured {
            origin_ns: 0,
            tasks: (0..n as i64)
                .map(|i| Span {
                    start_ns: i * 10_000,
                    end_ns: i * 10_000 + 1_000,
                })
                .collect(),
            step_annotations: Vec::new(),
            scopes: Vec::new(),
        },
        graph: g,
        comms: out,
        groups: vec![vec![0, 1, 2, 3]],
    }
}

#[test]
fn seq_matching_reports_incomplete_and_differing_sets() {
    use CommPattern::Group;
    let ar = |seq| ("allreduce", Some(seq), Group, Some(4096u64));
    let ranks = vec![
        rank(0, &[ar(1), ar(2), ar(3)]),
        rank(1, &[ar(1), ar(2), ar(3)]),
        // Rank 2 lacks seq 2; rank 3 has a different size for seq 3.
        rank(2, &[ar(1), ar(3)]),
        rank(
            3,
            &[ar(1), ar(2), ("allreduce", Some(3), Group, Some(8192))],
        ),
    ];
    let m = match_collectives(&ranks);
    assert_eq!(m.sets.len(), 1);
    assert_eq!(m.sets[0].label, "pg 0 seq 1");
    assert_eq!(m.sets[0].rule, MatchRule::ProcessGroupSeq);
    assert_eq!(m.problems.len(), 2, "{:?}", m.problems);
    let incomplete = &m.problems[0];
    assert_eq!(incomplete.kind, ProblemKind::Incomplete);
    assert_eq!(incomplete.label, "pg 0 seq 2");
    assert!(incomplete.detail.contains("not on rank 2"), "{incomplete}");
    let size = &m.problems[1];
    assert_eq!(size.kind, ProblemKind::SizeMismatch);
    assert!(size.detail.contains("8192 B on rank 3"), "{size}");
    assert_eq!(m.unmatched_tasks(), 3 + 4);
}

#[test]
fn seq_matching_with_a_missing_rank_file_matches_the_ranks_present() {
    use CommPattern::Group;
    let ar = |seq| ("allreduce", Some(seq), Group, Some(4096u64));
    let ranks = vec![rank(0, &[ar(1)]), rank(1, &[ar(1)]), rank(3, &[ar(1)])];
    let m = match_collectives(&ranks);
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(m.sets[0].members.len(), 3);
}

#[test]
fn sends_pair_with_receives() {
    let send = |peer| ("send", None, CommPattern::Send { peer }, Some(100u64));
    let recv = |peer| ("recv", None, CommPattern::Recv { peer }, Some(100u64));
    let ranks = vec![
        rank(0, &[send(1), send(1), recv(1)]),
        rank(1, &[recv(0), recv(0), send(0)]),
        // Rank 2 sends to rank 3 twice, rank 3 receives once.
        rank(2, &[send(3), send(3)]),
        rank(3, &[recv(2)]),
    ];
    let m = match_collectives(&ranks);
    let labels: Vec<&str> = m.sets.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "pg 0 send 0->1 #0",
            "pg 0 send 0->1 #1",
            "pg 0 send 1->0 #0"
        ]
    );
    assert!(m.sets.iter().all(|s| s.rule == MatchRule::PointToPoint));
    // The sender first: rank 0 for 0->1, rank 1 for 1->0.
    let first_rank = |s: &MatchedSet| ranks[s.members[0].rank_pos as usize].rank;
    assert_eq!(m.sets.iter().map(first_rank).collect::<Vec<_>>(), [0, 0, 1]);
    let c = align_clocks(&ranks, &m);
    let (job, _, _) = merge(&ranks, &m, &c);
    assert!(job
        .rendezvous
        .iter()
        .all(|r| r.kind == RendezvousKind::PointToPoint));
    assert_eq!(m.problems.len(), 1);
    assert_eq!(m.problems[0].kind, ProblemKind::CountMismatch);
    assert!(m.problems[0]
        .detail
        .contains("rank 2 sent 2 times, rank 3 received 1"));
}

#[test]
fn order_matching_reports_differing_names() {
    use CommPattern::Group;
    let c = |n| (n, None, Group, None);
    let ranks = vec![
        rank(0, &[c("allreduce"), c("broadcast")]),
        rank(1, &[c("allreduce"), c("allgather")]),
        rank(2, &[c("allreduce"), c("broadcast")]),
        rank(3, &[c("allreduce"), c("broadcast")]),
    ];
    let m = match_collectives(&ranks);
    assert_eq!(m.sets.len(), 1);
    assert_eq!(m.sets[0].label, "pg 0 #0");
    assert_eq!(m.problems.len(), 1);
    assert_eq!(m.problems[0].kind, ProblemKind::NameMismatch);
    assert!(
        m.problems[0].detail.contains("allgather on rank 1")
            && m.problems[0].detail.contains("broadcast on rank 0, 2, 3")
            || m.problems[0].detail.contains("broadcast on rank 0, 2-3"),
        "{}",
        m.problems[0]
    );
}

#[test]
fn rank_ranges_are_compact() {
    assert_eq!(rank_ranges(&[0, 1, 2, 4, 6, 7]), "0-2, 4, 6, 7");
    assert_eq!(rank_ranges(&[3]), "3");
    assert_eq!(rank_ranges(&[]), "");
}

#[test]
fn ranks_running_one_program_group_together() {
    let all = |name| (name, None, CommPattern::Group, Some(64));
    let send = |peer| ("send", None, CommPattern::Send { peer }, Some(8));
    let mut ranks: Vec<RankGraph> = (0..4).map(|r| rank(r, &[all("allreduce")])).collect();
    // Each sends to the next rank: the same program on either.
    ranks.push(rank(4, &[all("allreduce"), send(5)]));
    ranks.push(rank(5, &[all("allreduce"), send(6)]));
    // Sends to a rank behind it: another program.
    ranks.push(rank(6, &[all("allreduce"), send(5)]));
    // Another message size.
    ranks.push(rank(
        7,
        &[("allreduce", None, CommPattern::Group, Some(32))],
    ));
    let sigs: Vec<_> = ranks.iter().map(program_signature).collect();
    assert_eq!(sigs[0], sigs[3]);
    assert_ne!(sigs[0], sigs[7]);
    // Given in any order, grouped and ordered by representative.
    let groups = group_by_program(ranks.iter().zip(&sigs).rev().map(|(r, &s)| (r.rank, s)));
    let found: Vec<(u32, Vec<u32>)> = groups
        .iter()
        .map(|g| (g.representative(), g.ranks.clone()))
        .collect();
    assert_eq!(
        found,
        [
            (0, vec![0, 1, 2, 3]),
            (4, vec![4, 5]),
            (6, vec![6]),
            (7, vec![7])
        ]
    );
    assert!(group_by_program([]).is_empty());
}

/// A hand-made rank as a job input: recorded rank, how it was found, world
/// size.
fn input(r: u32, source: lumos_trace::RankSource, world_size: Option<u32>) -> RankInput {
    let graph = rank(r, &[("allreduce", Some(1), CommPattern::Group, Some(64))]);
    RankInput {
        meta: RankMeta {
            path: format!("/t/rank{r}.json").into(),
            rank: r,
            rank_source: source,
            world_size,
            written_ranks: Vec::new(),
            base_time_ns: None,
            warnings: Vec::new(),
            about: Default::default(),
            compact: None,
        },
        graph,
        report: BuildReport::default(),
    }
}

#[test]
fn assemble_checks_which_file_is_which_rank() {
    use lumos_trace::RankSource::{Default, DistributedInfo, FileName};
    let err = |inputs: Vec<RankInput>| assemble(inputs).unwrap_err();
    assert_eq!(err(Vec::new()), JobError::NoRanks);
    assert_eq!(
        err(Vec::new()).to_string(),
        "no rank of the job could be read"
    );

    let e = err(vec![
        input(0, DistributedInfo, Some(2)),
        input(1, Default, None),
    ]);
    assert_eq!(
        e.to_string(),
        "/t/rank1.json: cannot tell which rank this file is (no distributedInfo.rank, no \
         rank<N> in the file name)"
    );
    // One file alone may have an assumed rank.
    assert!(assemble(vec![input(0, Default, None)]).is_ok());

    let mut twice = input(1, FileName, Some(4));
    twice.meta.path = "/t/again.json".into();
    let e = err(vec![input(1, DistributedInfo, Some(4)), twice]);
    assert_eq!(
        e.to_string(),
        "/t/again.json (file_name) and /t/rank1.json (distributedInfo) both claim rank 1 of \
         world size 4: a job takes one file per rank; to compare two runs use `lumos replay \
         --per-trace` or `lumos diff /t/again.json /t/rank1.json`"
    );

    let e = err(vec![
        input(0, DistributedInfo, Some(2)),
        input(3, DistributedInfo, Some(2)),
    ]);
    assert_eq!(
        e.to_string(),
        "/t/rank3.json: rank 3 is outside world size 2"
    );
}

/// Missing ranks are listed from the world size, or without one from the
/// highest rank: a damaged rank of billions (the largest a `u32` holds,
/// too) must not ask for gigabytes. Past the most GPUs a trace may record
/// none are listed.
#[test]
fn a_rank_of_billions_lists_no_missing_ranks() {
    use lumos_trace::RankSource::DistributedInfo;
    for rank in [3_000_000_000, u32::MAX] {
        let job = assemble(vec![
            input(0, DistributedInfo, None),
            input(rank, DistributedInfo, None),
        ])
        .unwrap();
        assert_eq!(job.rank_numbers(), [0, rank]);
        assert!(job.missing.is_empty(), "{rank}");
    }
    // Below the bound they are listed as before.
    let job = assemble(vec![
        input(0, DistributedInfo, None),
        input(3, DistributedInfo, None),
    ])
    .unwrap();
    assert_eq!(job.missing, [1, 2]);
}

#[test]
fn assemble_sorts_ranks_and_warns_about_missing_ones() {
    use lumos_trace::RankSource::DistributedInfo;
    let job = assemble(vec![
        input(2, DistributedInfo, Some(4)),
        input(0, DistributedInfo, Some(4)),
    ])
    .unwrap();
    assert_eq!(job.rank_numbers(), [0, 2]);
    assert_eq!(job.position(2), Some(1));
    assert_eq!(job.position(1), None);
    assert_eq!(job.missing, [1, 3]);
    assert_eq!(job.world_size, Some(4));
    assert_eq!(
        job.warnings,
        [
            "rank 1, 3 of world size 4 missing (no file): simulating the 2 ranks present; their \
          collectives rendezvous among those present"
        ]
    );
    assert_eq!(job.matching.sets.len(), 1);

    // World sizes that disagree: the largest wins, with a warning.
    let job = assemble(vec![
        input(0, DistributedInfo, Some(2)),
        input(1, DistributedInfo, Some(3)),
    ])
    .unwrap();
    assert_eq!(job.world_size, Some(3));
    assert!(
        job.warnings[0].starts_with(
            "files disagree on the world size (2 in /t/rank0.json, 3 in /t/rank1.json)"
        ),
        "{:?}",
        job.warnings
    );
    assert_eq!(job.missing, [2]);
}

#[test]
fn looks_like_job_needs_two_files_of_one_world_size() {
    let metas = |sizes: &[Option<u32>]| -> Vec<lumos_trace::TraceMeta> {
        sizes
            .iter()
            .map(|&world_size| lumos_trace::TraceMeta {
                world_size,
                ..Default::default()
            })
            .collect()
    };
    let job = |sizes: &[Option<u32>]| looks_like_job(metas(sizes).iter());
    assert!(job(&[Some(8), Some(8)]));
    assert!(!job(&[Some(8)]));
    assert!(!job(&[Some(8), Some(4)]));
    assert!(!job(&[Some(8), None]));
    assert!(!job(&[Some(1), Some(1)]));
}

#[test]
fn files_are_one_job_only_when_they_share_a_collective() {
    // One world size and the same collectives: a job.
    let same = vec![
        member(0, Some(4), &[1, 2, 3], 0),
        member(1, Some(4), &[1, 2, 3], 0),
    ];
    assert_eq!(detect_job(&same), Detected::Job);
    assert_eq!(Detected::Job.note(), None);
    // One world size, nothing shared (two runs' traces): apart, with the
    // line saying why.
    let unrelated = vec![
        member(0, Some(4), &[1, 2, 3], 0),
        member(3, Some(4), &[101, 102], 0),
    ];
    let d = detect_job(&unrelated);
    assert!(!d.is_job());
    assert_eq!(
        d.note().unwrap(),
        "2 traces record world size 4 but share no collective: replayed one by one"
    );
    let three = vec![
        member(0, Some(4), &[1, 2, 3], 0),
        member(1, Some(4), &[101, 102], 0),
        member(2, None, &[201], 0),
    ];
    assert_eq!(
        detect_job(&three).note().unwrap(),
        "2 of 3 traces record world size 4, but they share no collective: replayed one by one"
    );
    // A stray file does not hide the job of the others.
    let stray = vec![
        member(0, Some(4), &[1, 2, 3], 0),
        member(1, Some(4), &[1, 2, 3], 0),
        member(2, Some(4), &[101, 102], 0),
        member(3, Some(4), &[1, 2, 3], 0),
    ];
    assert_eq!(detect_job(&stray), Detected::Job);
    // Two copies of one rank share no collective either, but the reason
    // is the rank both claim: said so, naming both files.
    let copies = vec![
        member(0, Some(4), &[1, 2, 3], 0),
        member(0, Some(4), &[1, 2, 3], 0),
    ];
    let d = detect_job(&copies);
    assert!(matches!(d, Detected::SameRank { rank: 0, .. }), "{d:?}");
    let note = d.note().unwrap();
    assert!(note.contains("both claim rank 0 (copies"), "{note}");
    assert!(!note.contains("share no collective"), "{note}");
    // No world size, or one file: apart, quietly.
    assert_eq!(detect_job(&[member(0, Some(4), &[1], 0)]), Detected::Apart);
    let none = vec![member(0, None, &[1], 0), member(1, None, &[1], 0)];
    assert_eq!(detect_job(&none), Detected::Apart);
    assert_eq!(Detected::Apart.note(), None);
}

#[test]
fn a_subset_written_on_purpose_is_complete() {
    use lumos_trace::RankSource::DistributedInfo;
    let written = |r: u32| {
        let mut i = input(r, DistributedInfo, Some(8));
        i.meta.written_ranks = vec![0, 2];
        i
    };
    let job = assemble(vec![written(2), written(0)]).unwrap();
    assert_eq!(job.rank_numbers(), [0, 2]);
    assert!(job.missing.is_empty());
    assert!(job.warnings.is_empty(), "{:?}", job.warnings);
    // A written rank without its file is still missing.
    let job = assemble(vec![written(0)]).unwrap();
    assert_eq!(job.missing, [2]);
    assert!(has(
        &job.warnings,
        "rank 2 of world size 8 missing (no file)"
    ));
}

/// A hand-made rank of a 4-rank job issuing all-reduces with these `Seq`s,
/// its clock moved by `shift_ns`.
fn member(r: u32, world_size: Option<u32>, seqs: &[i64], shift_ns: i64) -> RankInput {
    let comms: Vec<_> = seqs
        .iter()
        .map(|&s| ("allreduce", Some(s), CommPattern::Group, Some(64)))
        .collect();
    let mut i = input(r, lumos_trace::RankSource::DistributedInfo, world_size);
    i.graph = rank(r, &comms);
    i.graph.clock_base_ns = shift_ns;
    i
}

fn has(warnings: &[String], text: &str) -> bool {
    warnings.iter().any(|w| w.contains(text))
}

#[test]
fn a_rank_sharing_no_collective_is_left_out() {
    // Rank 2 is from another run: its sequence numbers are not the job's,
    // so every collective of the others misses it (incomplete).
    let job = assemble(vec![
        member(0, Some(4), &[1, 2, 3], 0),
        member(1, Some(4), &[1, 2, 3], 0),
        member(2, Some(4), &[101, 102], 0),
        member(3, Some(4), &[1, 2, 3], 0),
    ])
    .unwrap();
    assert_eq!(job.rank_numbers(), [0, 1, 3]);
    assert_eq!(job.matching.sets.len(), 3);
    assert!(
        job.matching.problems.is_empty(),
        "{:?}",
        job.matching.problems
    );
    assert_eq!(job.left_out.len(), 1);
    assert_eq!(
        job.left_out[0].reason,
        LeftOutReason::NoSharedCollective { others: 3 }
    );
    assert!(has(
        &job.warnings,
        "rank 2 (/t/rank2.json) shares no collective with the other 3 ranks, which match \
         among themselves; left out: is it from another run, or was its recording cut short?"
    ));
    assert_eq!(job.missing, [2]);
    assert!(
        has(
            &job.warnings,
            "rank 2 of world size 4 left out (shares no collective): simulating the 3 ranks \
             present"
        ),
        "{:?}",
        job.warnings
    );
    // A rank that shares some collectives is kept, whatever else differs.
    let job = assemble(vec![
        member(0, Some(4), &[1, 2, 3], 0),
        member(1, Some(4), &[1, 2, 3], 0),
        member(2, Some(4), &[1, 2], 0),
        member(3, Some(4), &[1, 2, 3], 0),
    ])
    .unwrap();
    assert!(job.left_out.is_empty());
    assert_eq!(job.matching.sets.len(), 2);
    // Two ranks that match nothing: nobody can tell which is the job's.
    let job = assemble(vec![
        member(0, Some(2), &[1], 0),
        member(1, Some(2), &[7], 0),
    ])
    .unwrap();
    assert!(job.left_out.is_empty());
    assert!(job.matching.sets.is_empty());
}

/// From representatives (`lumos replay --representatives`) an input counts
/// as its group's ranks: a stray rank against one representative of three
/// is a minority and left out, where against the representative alone
/// nobody could tell which is the job's; and the world size is the one
/// most ranks record, not most inputs (a tie, before, chose the largest,
/// which kept a stray rank 5 of 8 in a job of 4).
#[test]
fn a_representative_counts_as_its_group() {
    let group = |rep: &RankInput| ProgramGroup {
        signature: program_signature(&rep.graph),
        ranks: vec![0, 1, 2],
        steps_ns: vec![Vec::new(); 3],
        facts: Vec::new(),
    };
    for (stray, stray_world, reason) in [
        (3, 4, LeftOutReason::NoSharedCollective { others: 3 }),
        (
            5,
            8,
            LeftOutReason::OutsideWorld {
                world_size: 4,
                recorded: Some(8),
            },
        ),
    ] {
        let inputs = || {
            vec![
                member(0, Some(4), &[1, 2, 3], 0),
                member(stray, Some(stray_world), &[101, 102], 0),
            ]
        };
        let job = assemble(inputs()).unwrap();
        assert!(job.left_out.is_empty(), "{:?}", job.left_out);
        assert_eq!(job.world_size, Some(stray_world));
        let g = group(&inputs()[0]);
        let job = assemble_representatives(inputs(), Vec::new(), &[g]).unwrap();
        assert_eq!(job.world_size, Some(4));
        assert_eq!(job.rank_numbers(), [0]);
        assert_eq!(job.left_out.len(), 1);
        assert_eq!(job.left_out[0].rank, stray);
        assert_eq!(job.left_out[0].reason, reason);
        if stray_world == 8 {
            assert!(
                has(
                    &job.warnings,
                    "files disagree on the world size (4 in 3 files (rank 0-2), 8 in \
                     /t/rank5.json); using 4, which most files record"
                ),
                "{:?}",
                job.warnings
            );
        }
    }
}

/// From representatives, each member of a group is tested on what its own
/// file says where the group carries it ([`ProgramGroup::facts`]), as the
/// assembly of every rank tests it: the world size is the one most
/// members record (rank 0 recording 16 against seven recording 8 chose
/// 16, each member taken to record its representative's); a member whose
/// clock is days from its representative's is left out alone, the group
/// kept (it was kept, only representatives' clocks being tested); a
/// member outside the world size is left out.
#[test]
fn a_member_is_tested_on_its_own_facts() {
    let days = 3 * 86_400_000_000_000;
    let rep = |w: u32| vec![member(0, Some(w), &[1, 2, 3], 0)];
    let group = |ranks: &[u32], facts: &dyn Fn(u32) -> (Option<u32>, i64)| ProgramGroup {
        signature: program_signature(&rep(8)[0].graph),
        ranks: ranks.to_vec(),
        steps_ns: vec![Vec::new(); ranks.len()],
        facts: ranks
            .iter()
            .map(|&r| {
                let (world_size, clock) = facts(r);
                MemberFacts {
                    path: format!("/t/rank{r}.json").into(),
                    world_size,
                    clock_ns: Some(clock),
                }
            })
            .collect(),
    };
    let eight: Vec<u32> = (0..8).collect();
    let ws = |r: u32| (Some(if r == 0 { 16 } else { 8 }), 0);
    let job = assemble_representatives(rep(16), Vec::new(), &[group(&eight, &ws)]).unwrap();
    assert_eq!(job.world_size, Some(8));
    assert!(job.left_out.is_empty());
    assert!(
        has(
            &job.warnings,
            "files disagree on the world size (8 in 7 files (rank 1-7), 16 in /t/rank0.json); \
             using 8, which most files record"
        ),
        "{:?}",
        job.warnings
    );
    // Without facts, every member counts as its representative.
    let mut g = group(&eight, &ws);
    g.facts.clear();
    let job = assemble_representatives(rep(16), Vec::new(), &[g]).unwrap();
    assert_eq!(job.world_size, Some(16));

    let far = |r: u32| (Some(8), if r == 5 { days } else { 0 });
    let job = assemble_representatives(rep(8), Vec::new(), &[group(&eight, &far)]).unwrap();
    assert_eq!(job.rank_numbers(), [0]);
    assert_eq!(job.left_out.len(), 1, "{:?}", job.warnings);
    assert_eq!(job.left_out[0].rank, 5);
    assert_eq!(
        job.left_out[0].reason,
        LeftOutReason::FarClock { offset_ns: days }
    );
    assert!(
        has(
            &job.warnings,
            "rank 5 (/t/rank5.json): its collectives end 3.0 days after the other ranks'"
        ),
        "{:?}",
        job.warnings
    );
    assert!(job.far_representatives.is_empty());
    // The representative days from ranks 1-7: kept, its graph the only
    // one at hand, and named for the loader to assemble again with
    // another member standing for the group.
    let rep_far = |r: u32| (Some(8), if r == 0 { 0 } else { -days });
    let job = assemble_representatives(rep(8), Vec::new(), &[group(&eight, &rep_far)]).unwrap();
    assert_eq!(job.rank_numbers(), [0]);
    assert!(job.left_out.is_empty(), "{:?}", job.left_out);
    assert_eq!(job.far_representatives, [0]);
    assert!(
        has(&job.warnings, "it represents rank 1-7, whose clocks agree"),
        "{:?}",
        job.warnings
    );
    // Half the ranks days away: nobody can tell which side is the job's.
    let half = |r: u32| (Some(8), if r >= 4 { days } else { 0 });
    let job = assemble_representatives(rep(8), Vec::new(), &[group(&eight, &half)]).unwrap();
    assert!(job.left_out.is_empty());
    assert!(
        has(&job.warnings, "are 3.0 days apart"),
        "{:?}",
        job.warnings
    );

    let outside = |r: u32| (Some(if r == 9 { 16 } else { 8 }), 0);
    let job =
        assemble_representatives(rep(8), Vec::new(), &[group(&[0, 1, 2, 9], &outside)]).unwrap();
    assert_eq!(job.left_out.len(), 1, "{:?}", job.warnings);
    assert_eq!(job.left_out[0].rank, 9);
    assert_eq!(
        job.left_out[0].reason,
        LeftOutReason::OutsideWorld {
            world_size: 8,
            recorded: Some(16)
        }
    );
}

#[test]
fn two_ranks_of_another_run_are_left_out_together() {
    let job = assemble(vec![
        member(0, Some(5), &[1, 2], 0),
        member(1, Some(5), &[1, 2], 0),
        member(2, Some(5), &[50, 51, 52], 0),
        member(3, Some(5), &[50, 51, 52], 0),
        member(4, Some(5), &[1, 2], 0),
    ]);
    // Two ranks of one other program: no single one helps, the two do.
    let job = job.unwrap();
    let out: Vec<u32> = job.left_out.iter().map(|l| l.rank).collect();
    assert_eq!(out, [2, 3], "{:?}", job.warnings);
}

#[test]
fn the_world_size_is_the_one_most_files_record() {
    // Rank 3 records another world size: named, kept (its collectives
    // match), and ranks 4-15 are not taken for missing.
    let job = assemble(vec![
        member(0, Some(4), &[1, 2], 0),
        member(1, Some(4), &[1, 2], 0),
        member(2, Some(4), &[1, 2], 0),
        member(3, Some(16), &[1, 2], 0),
    ])
    .unwrap();
    assert_eq!(job.world_size, Some(4));
    assert!(job.missing.is_empty());
    assert_eq!(job.rank_numbers(), [0, 1, 2, 3]);
    assert!(
        has(
            &job.warnings,
            "files disagree on the world size (4 in 3 files (rank 0-2), 16 in /t/rank3.json); \
             using 4, which most files record"
        ),
        "{:?}",
        job.warnings
    );
    // A rank that cannot fit the world most files record is left out.
    let job = assemble(vec![
        member(0, Some(4), &[1, 2], 0),
        member(1, Some(4), &[1, 2], 0),
        member(2, Some(4), &[1, 2], 0),
        member(9, Some(16), &[1, 2], 0),
    ])
    .unwrap();
    assert_eq!(job.rank_numbers(), [0, 1, 2]);
    assert_eq!(
        job.left_out[0].reason,
        LeftOutReason::OutsideWorld {
            world_size: 4,
            recorded: Some(16)
        }
    );
    assert_eq!(job.missing, [3]);
    // Most files record 8: one recording 4 does not turn job mode off.
    let metas: Vec<lumos_trace::TraceMeta> = [8, 8, 4]
        .iter()
        .map(|&w| lumos_trace::TraceMeta {
            world_size: Some(w),
            ..Default::default()
        })
        .collect();
    assert!(looks_like_job(metas.iter()));
}

#[test]
fn a_rank_hours_away_is_left_out() {
    let days = 3 * 86_400_000_000_000;
    for far in [0, 2] {
        let job = assemble(
            (0..4)
                .map(|r| member(r, Some(4), &[1, 2, 3], if r == far { days } else { 0 }))
                .collect(),
        )
        .unwrap();
        assert_eq!(job.left_out.len(), 1, "{:?}", job.warnings);
        assert_eq!(job.left_out[0].rank, far);
        assert!(matches!(
            job.left_out[0].reason,
            LeftOutReason::FarClock { offset_ns } if offset_ns == days
        ));
        assert!(
            has(
                &job.warnings,
                "its collectives end 3.0 days after the other ranks'"
            ),
            "{:?}",
            job.warnings
        );
        assert_eq!(job.ranks.len(), 3);
        assert!(job.clock.offsets_ns.iter().all(|&o| o == 0));
    }
    // Two ranks days apart: warned, nobody left out.
    let job = assemble(vec![
        member(0, Some(2), &[1], 0),
        member(1, Some(2), &[1], days),
    ])
    .unwrap();
    assert!(job.left_out.is_empty());
    assert!(
        has(&job.warnings, "are 3.0 days apart"),
        "{:?}",
        job.warnings
    );
}

/// Two runs of the same program minutes apart, given as one job: nothing
/// is left out (hosts without a synchronized clock would lose ranks), but
/// the warning names both runs; ranks seconds apart are one job's, without
/// a word.
#[test]
fn runs_minutes_apart_are_named() {
    let minutes = 10 * 60_000_000_000;
    let job = assemble(
        (0..8)
            .map(|r| member(r, Some(8), &[1, 2, 3], if r >= 5 { minutes } else { 0 }))
            .collect(),
    )
    .unwrap();
    assert!(job.left_out.is_empty());
    assert_eq!(job.ranks.len(), 8);
    assert!(
        has(
            &job.warnings,
            "the clocks of rank 0-4 and rank 5-7 are 10.0 min apart"
        ),
        "{:?}",
        job.warnings
    );
    let job = assemble(
        (0..8)
            .map(|r| member(r, Some(8), &[1, 2, 3], i64::from(r) * 2_000_000_000))
            .collect(),
    )
    .unwrap();
    assert!(
        job.warnings.iter().all(|w| !w.contains("apart")),
        "{:?}",
        job.warnings
    );
    // A run minutes away is named even when a rank hours away is left out
    // beside it.
    let hours = 3 * 3_600_000_000_000;
    let job = assemble(
        (0..8)
            .map(|r| {
                let shift = match r {
                    4..=6 => minutes,
                    7 => hours,
                    _ => 0,
                };
                member(r, Some(8), &[1, 2, 3], shift)
            })
            .collect(),
    )
    .unwrap();
    assert_eq!(job.left_out.len(), 1, "{:?}", job.warnings);
    assert_eq!(job.left_out[0].rank, 7);
    assert!(
        has(
            &job.warnings,
            "the clocks of rank 0-3 and rank 4-6 are 10.0 min apart"
        ),
        "{:?}",
        job.warnings
    );
}

#[test]
fn unreadable_files_are_named_among_the_missing() {
    let unreadable = vec![
        Unreadable {
            path: "/t/rank1.json".into(),
            rank: Some(1),
            error: "/t/rank1.json: truncated JSON".into(),
        },
        Unreadable {
            path: "/t/trace.json".into(),
            rank: None,
            error: "/t/trace.json: file is empty".into(),
        },
    ];
    let job = assemble_with(
        vec![member(0, Some(4), &[1], 0), member(2, Some(4), &[1], 0)],
        unreadable,
    )
    .unwrap();
    assert_eq!(job.missing, [1, 3]);
    assert!(
        has(
            &job.warnings,
            "rank 3 of world size 4 missing (no file), rank 1 unreadable (/t/rank1.json: \
             truncated JSON): simulating the 2 ranks present"
        ),
        "{:?}",
        job.warnings
    );
    assert!(has(
        &job.warnings,
        "a file of the job could not be read (/t/trace.json: file is empty)"
    ));
    assert_eq!(job.unreadable.len(), 2);
}

#[test]
fn process_groups_that_disagree_are_named() {
    let mut odd = member(3, Some(4), &[1, 2], 0);
    odd.graph.groups = vec![vec![0, 1, 2, 3, 4, 5, 6, 7]];
    let mut lost = member(2, Some(4), &[1, 2], 0);
    lost.graph.groups = vec![vec![0, 1, 3]];
    let job = assemble(vec![
        member(0, Some(4), &[1, 2], 0),
        member(1, Some(4), &[1, 2], 0),
        lost,
        odd,
    ])
    .unwrap();
    assert!(
        has(
            &job.warnings,
            "rank 3 (rank3.json) records process group 0 as rank 0-7; 2 of its 3 other members \
             present record it as rank 0-3"
        ),
        "{:?}",
        job.warnings
    );
    assert!(has(
        &job.warnings,
        "rank 2 (rank2.json) records process group 0 as rank 0, 1, 3, which does not include it"
    ));
}
