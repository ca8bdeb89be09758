//! Critical path walks and their summaries.

use lumos_graph::{DepKind, TaskId, TaskKind, WaitTarget};
use lumos_sim::{
    critical_path, critical_path_hops, critical_path_hops_since, critical_path_summary, timed_hops,
    BoundKind, BoundTotal, Schedule,
};

use crate::builder::Builder;

/// Two calls of 5 ns on a thread, each launching a kernel of 100 ns (2 ns
/// later) on one stream: the path is the first call, its kernel, and the
/// second kernel, which waits for the first on the stream. Gives the
/// builder, its replay and the path's tasks.
fn two_launches() -> (Builder, Schedule, [TaskId; 3]) {
    let mut b = Builder::new();
    let (t, st) = (b.thread(), b.stream(0));
    let c1 = b.call(t, 5);
    let c2 = b.call(t, 5);
    let k1 = b.kernel(st, 100);
    let k2 = b.kernel(st, 100);
    b.launch(c1, k1, 2);
    b.launch(c2, k2, 2);
    let s = b.run();
    (b, s, [c1, k1, k2])
}

#[test]
fn path_follows_launch_and_stream_order() {
    let (b, s, [c1, k1, k2]) = two_launches();
    assert_eq!(s.last_task(), Some(k2));
    assert_eq!(critical_path(&b.graph, &s, k2), vec![c1, k1, k2]);
    let summary = critical_path_summary(&b.graph, &s, k2, 1);
    assert_eq!(summary.end_ns, 202);
    assert_eq!(
        summary.by_bound,
        vec![
            BoundTotal {
                kind: BoundKind::Release,
                hops: 1,
                wait_ns: 0,
                busy_ns: 0
            },
            BoundTotal {
                kind: BoundKind::Processor,
                hops: 1,
                wait_ns: 0,
                busy_ns: 100
            },
            BoundTotal {
                kind: BoundKind::Edge(DepKind::Launch),
                hops: 1,
                wait_ns: 2,
                busy_ns: 100
            },
        ]
    );
    assert_eq!(summary.top_tasks, vec![(k1, 100)]);
}

#[test]
fn path_through_a_blocking_copy_visits_the_call_twice() {
    let mut b = Builder::new();
    let (t, st) = (b.thread(), b.stream(0));
    let before = b.cpu(t, 10);
    let memcpy = b.task(t, TaskKind::Runtime, "cudaMemcpy", 6);
    let after = b.cpu(t, 1);
    let copy = b.task(st, TaskKind::Memcpy, "Memcpy DtoH", 200);
    b.launch(memcpy, copy, 4);
    b.wait(memcpy, WaitTarget::Task(copy), 2);
    let s = b.run();
    let hops = critical_path_hops(&b.graph, &s, after);
    let tasks: Vec<_> = hops.iter().map(|h| (h.task, h.at_issue)).collect();
    assert_eq!(
        tasks,
        vec![
            (before, false),
            (memcpy, true),
            (copy, false),
            (memcpy, false),
            (after, false)
        ]
    );
    let summary = critical_path_summary(&b.graph, &s, after, 10);
    assert_eq!(summary.end_ns, 223);
    let total: i64 = summary.by_bound.iter().map(|t| t.wait_ns + t.busy_ns).sum();
    assert_eq!(total, 223);
    let runtime = summary
        .by_bound
        .iter()
        .find(|t| t.kind == BoundKind::Runtime)
        .unwrap();
    assert_eq!((runtime.wait_ns, runtime.busy_ns), (2, 6));
    assert_eq!(
        summary.top_tasks,
        vec![(copy, 200), (before, 10), (memcpy, 6), (after, 1)]
    );
}

#[test]
fn a_path_cut_at_a_time_keeps_the_hops_after_it_and_the_one_across_it() {
    let (b, s, [_, k1, k2]) = two_launches();
    let whole = critical_path_hops(&b.graph, &s, k2);
    assert_eq!(critical_path_hops_since(&b.graph, &s, k2, i64::MIN), whole);
    // k1 runs from 2 to 102, k2 from 102: a cut at 50 keeps k1 (across it).
    let cut = critical_path_hops_since(&b.graph, &s, k2, 50);
    assert_eq!(cut.iter().map(|h| h.task).collect::<Vec<_>>(), vec![k1, k2]);
    let timed = timed_hops(&b.graph, &s, &whole);
    let spans: Vec<_> = timed.iter().map(|h| (h.at_ns, h.anchor_ns)).collect();
    // The launch only needs c1 to have started: c1's anchor is its start.
    assert_eq!(spans, vec![(0, 0), (2, 102), (102, 202)]);
}

#[test]
fn the_summary_walked_back_counts_a_launch_as_the_timed_hops_do() {
    // c1 launches k1 (start-anchored: c1 has no time on the path), k2
    // follows k1 on the stream (its own launch long done): the summary, walked back hop by hop, must
    // give each hop the anchor the forward timed hops give it.
    let (b, s, [_, k1, k2]) = two_launches();
    let timed = timed_hops(&b.graph, &s, &critical_path_hops(&b.graph, &s, k2));
    let summary = critical_path_summary(&b.graph, &s, k2, 10);
    let mut expected: Vec<BoundTotal> = Vec::new();
    let mut prev_anchor = 0;
    for h in &timed {
        let (wait_ns, busy_ns) = (h.at_ns - prev_anchor, h.anchor_ns - h.at_ns);
        match expected.iter_mut().find(|t| t.kind == h.kind) {
            Some(t) => {
                (t.hops, t.wait_ns, t.busy_ns) =
                    (t.hops + 1, t.wait_ns + wait_ns, t.busy_ns + busy_ns)
            }
            None => expected.push(BoundTotal {
                kind: h.kind,
                hops: 1,
                wait_ns,
                busy_ns,
            }),
        }
        prev_anchor = h.anchor_ns;
    }
    expected.sort_by_key(|t| t.kind);
    assert_eq!(summary.by_bound, expected);
    assert_eq!((summary.hops, summary.end_ns), (3, 202));
    assert_eq!(summary.top_tasks, vec![(k1, 100), (k2, 100)]);
}

#[test]
fn a_long_path_keeps_the_same_top_tasks_as_sorting_every_hop() {
    // Longer than the summary keeps before pruning, with many equal
    // durations, so the pruning and its ties by id are exercised.
    let mut b = Builder::new();
    let t = b.thread();
    let tasks: Vec<_> = (0..5000u64)
        .map(|i| b.cpu(t, (i * 7919 % 97 + 1) as i64))
        .collect();
    let s = b.run();
    let last = *tasks.last().unwrap();
    let hops = critical_path_hops(&b.graph, &s, last);
    let mut expected: Vec<_> = timed_hops(&b.graph, &s, &hops)
        .iter()
        .map(|h| (h.hop.task, h.anchor_ns - h.at_ns))
        .filter(|&(_, busy)| busy > 0)
        .collect();
    expected.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    expected.truncate(7);
    let summary = critical_path_summary(&b.graph, &s, last, 7);
    assert_eq!(summary.hops, hops.len());
    assert_eq!(summary.top_tasks, expected);
    let total: i64 = summary.by_bound.iter().map(|t| t.wait_ns + t.busy_ns).sum();
    assert_eq!(total, summary.end_ns);
}
