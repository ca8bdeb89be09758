//! Traces with events dropped the way a profiler drops them still build an
//! acyclic graph that replays, are flagged, and say why; a job whose
//! matches cross still replays.
//!
//! Each corpus trace is damaged in code with a seeded generator: some
//! kernel launch calls removed (GPU tasks without a launch), every CPU event
//! of a 50 ms window removed (a hole), and correlation ids repeated, on
//! runtime calls and on GPU tasks.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::path::PathBuf;

use lumos_graph::{
    align_clocks, build, check, match_collectives, merge, rank_graph, BuildReport, DepKind, Graph,
    RankGraph, RendezvousKind, GROSS_CLOCK_SKEW_NS, GROSS_LAUNCH_DELAY_NS, GROSS_SYNC_LEAD_NS,
};
use lumos_sim::{simulate, simulate_job, step_spans, GpuSelector, SimOptions};
use lumos_trace::{read_path, Category, Trace};

/// A corpus file; each test first checks that the corpus is there
/// (`lumos_testkit::corpus`), so a missing file then fails.
fn corpus(rel: &str) -> PathBuf {
    let path = lumos_testkit::corpus_root().join(rel);
    assert!(path.exists(), "{}: missing from the corpus", path.display());
    path
}

/// SplitMix64: a seeded generator, so a failure names the seed that found it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn is_cpu(c: Category) -> bool {
    matches!(
        c,
        Category::CpuOp | Category::UserAnnotation | Category::Runtime | Category::Driver
    )
}

/// Removes a share of the launch calls, so their GPU tasks have no launch.
fn drop_launches(t: &mut Trace, rng: &mut Rng, share: f64) {
    let strings = t.strings.clone();
    t.events.retain(|e| {
        let name = &strings[e.name.0 as usize];
        let launch = e.category.is_runtime() && name.contains("LaunchKernel");
        !(launch && rng.chance(share))
    });
}

/// Removes every CPU event that overlaps a `len_ns` window placed at random
/// inside the CPU activity.
fn drop_cpu_window(t: &mut Trace, rng: &mut Rng, len_ns: i64) {
    let cpu = t.events.iter().filter(|e| is_cpu(e.category));
    let lo = cpu.clone().map(|e| e.ts_ns).min().unwrap_or(0);
    let hi = cpu.map(|e| e.end_ns()).max().unwrap_or(0);
    let span = (hi - lo - len_ns).max(1) as u64;
    let at = lo + rng.below(span) as i64;
    t.events
        .retain(|e| !(is_cpu(e.category) && e.ts_ns < at + len_ns && e.end_ns() > at));
}

/// Gives a share of the runtime calls a correlation id already used by a
/// nearby call, as when the profiler's id buffer wraps or merges.
fn repeat_correlations(t: &mut Trace, rng: &mut Rng, share: f64) {
    let calls: Vec<usize> = (0..t.events.len())
        .filter(|&i| t.events[i].category.is_runtime() && t.events[i].correlation().is_some())
        .collect();
    for w in 1..calls.len() {
        if rng.chance(share) {
            let back = 1 + rng.below(8.min(w as u64)) as usize;
            let c = t.events[calls[w - back]].correlation();
            t.events[calls[w]].set_correlation(c);
        }
    }
}

/// What a damaged trace must satisfy: the graph is acyclic (processor order
/// included), the replay succeeds, the trace is flagged and each reason for
/// the flag is a warning.
fn assert_replays_flagged(label: &str, trace: &Trace) -> Graph {
    let (g, _, report) = build(trace);
    let v = check(&g);
    assert!(v.is_empty(), "{label}: {v:?}");
    // The rule records follow the graph through the removal of edges that
    // would close a cycle.
    assert_eq!(
        report.runtime_dep_rules.len(),
        g.runtime_deps.len(),
        "{label}"
    );
    assert!(
        report.edge_rules.windows(2).all(|w| w[0].0 < w[1].0)
            && report
                .edge_rules
                .last()
                .is_none_or(|&(e, _)| (e as usize) < g.edges.len()),
        "{label}: edge rules out of step with the edges"
    );
    let _ = lumos_graph::dump(&g, Some(&report));
    if let Err(e) = simulate(&g, &SimOptions::default()) {
        panic!(
            "{label}: replay failed: {e}\nwarnings: {:?}",
            report.warnings
        );
    }
    let reasons = report.flag_reasons();
    assert!(
        !reasons.is_empty(),
        "{label}: not flagged: {:?}",
        report.warnings
    );
    for r in &reasons {
        assert!(
            report.warnings.contains(r),
            "{label}: reason `{r}` is not among the warnings {:?}",
            report.warnings
        );
    }
    g
}

const TRACES: [&str; 10] = [
    "single-rank/a100-recsys-rank3of8.json.gz",
    "single-rank/v100-ddp-rank1of2-allreduce.json.gz",
    "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
    "single-rank/v100-resnet50-2021-capture-a.json.gz",
    "single-rank/resnet50-2021-legacy-autograd-api.json.gz",
    "single-rank/a100-ddp-rank0of2-event-record.json.gz",
    "single-rank/b200-vllm-tp8-rank0.json.gz",
    "single-rank/rtx2080ti-linear-train.json.gz",
    "single-rank/h100-qwen-0.5b-inference.json.gz",
    "single-rank/a100-alexnet-cuda-sync.json.gz",
];

/// Repeats the correlation ids of some GPU tasks (a kernel taken for
/// another's launch).
fn repeat_gpu_correlations(t: &mut Trace, rng: &mut Rng, share: f64) {
    for e in &mut t.events {
        if e.category.is_gpu_work() && rng.chance(share) {
            if let Some(c) = e.correlation() {
                e.set_correlation(Some(c.saturating_sub(1 + rng.below(4))));
            }
        }
    }
}

#[test]
fn traces_with_dropped_events_replay_flagged() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    // Before cycles were broken, many of these replays stalled (56 of 320
    // in a first version of this test).
    let what_ifs = [
        SimOptions::default(),
        SimOptions::default().scale(GpuSelector::All, 0.5),
        SimOptions::default().scale(GpuSelector::All, 3.0),
        SimOptions::default().drop_kind(DepKind::InterStream),
    ];
    for rel in TRACES {
        let original = read_path(&corpus(rel)).unwrap();
        for seed in 1..=8u64 {
            let label = format!("{rel} seed {seed}");
            let mut rng = Rng(seed * 0x9876_5431 + rel.len() as u64);
            let mut t = original.clone();
            let share = [0.01, 0.05, 0.2, 0.5][seed as usize % 4];
            drop_launches(&mut t, &mut rng, share);
            if seed % 2 == 0 {
                drop_cpu_window(&mut t, &mut rng, 50_000_000);
            }
            if seed % 3 != 0 {
                repeat_correlations(&mut t, &mut rng, share / 2.0);
            }
            if seed % 4 == 1 {
                repeat_gpu_correlations(&mut t, &mut rng, share);
            }
            let g = assert_replays_flagged(&label, &t);
            for opts in &what_ifs[1..] {
                if let Err(e) = simulate(&g, opts) {
                    panic!("{label}: replay with {opts:?} failed: {e}");
                }
            }
        }
    }
}

#[test]
fn each_kind_of_damage_alone_is_flagged_with_its_reason() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let original = read_path(&corpus(TRACES[0])).unwrap();
    let mut rng = Rng(7);
    let mut t = original.clone();
    drop_launches(&mut t, &mut rng, 0.2);
    assert_replays_flagged("launches", &t);
    assert!(build(&t).2.gpu_without_launch > 0);

    let mut t = original.clone();
    drop_cpu_window(&mut t, &mut rng, 50_000_000);
    assert_replays_flagged("cpu window", &t);
    assert!(build(&t).2.cpu_holes > 0);

    let mut t = original.clone();
    repeat_correlations(&mut t, &mut rng, 0.05);
    assert_replays_flagged("correlations", &t);
    assert!(build(&t).2.repeated_correlations > 0);
}

#[test]
fn undamaged_corpus_traces_are_not_flagged() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    for rel in TRACES[..2].iter().chain(&TRACES[3..4]) {
        let (_, _, report) = build(&read_path(&corpus(rel)).unwrap());
        assert_eq!(report.flag_reasons(), Vec::<String>::new(), "{rel}");
        assert!(report.rejected_cycles.is_empty(), "{rel}");
    }
}

fn dlrm_ranks() -> Vec<RankGraph> {
    (0..8)
        .map(|r| {
            let path = corpus(&format!("multi-rank/dlrm-8xv100/rank{r}.json.gz"));
            rank_graph(&read_path(&path).unwrap()).0
        })
        .collect()
}

#[test]
fn crossed_matches_are_uncoupled_not_deadlocked() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let ranks = dlrm_ranks();
    let mut m = match_collectives(&ranks);
    let clock = align_clocks(&ranks, &m);
    let (job, _, warnings) = merge(&ranks, &m, &clock);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(simulate_job(&job, &SimOptions::default()).is_ok());
    // Rank 0's first two all-reduces swap partners: each waits, through
    // the other ranks' stream order, for the other's end.
    let ar: Vec<usize> = (0..m.sets.len())
        .filter(|&i| m.sets[i].name == "AllReduce")
        .collect();
    let (a, b) = (ar[0], ar[1]);
    let pos = |s: usize| {
        m.sets[s]
            .members
            .iter()
            .position(|x| x.rank_pos == 0)
            .unwrap()
    };
    let (pa, pb) = (pos(a), pos(b));
    let ca = m.sets[a].members[pa].comm;
    m.sets[a].members[pa].comm = m.sets[b].members[pb].comm;
    m.sets[b].members[pb].comm = ca;
    let (job, _, warnings) = merge(&ranks, &m, &clock);
    let uncoupled: Vec<usize> = (0..job.rendezvous.len())
        .filter(|&i| job.rendezvous[i].kind == RendezvousKind::Uncoupled)
        .collect();
    // The first of the two is kept; the second, and whatever else the
    // crossing entangles, is not.
    assert!(
        uncoupled.contains(&b) && !uncoupled.contains(&a),
        "{warnings:?}"
    );
    let line = format!("{} matched collectives would deadlock", uncoupled.len());
    assert!(warnings.iter().any(|w| w.contains(&line)), "{warnings:?}");
    // Coupled again, they stall the replay: the uncoupling was needed.
    let mut coupled = job.clone();
    for &i in &uncoupled {
        coupled.rendezvous[i].kind = RendezvousKind::Collective;
    }
    assert!(simulate_job(&coupled, &SimOptions::default()).is_err());
    let schedule = simulate_job(&job, &SimOptions::default()).unwrap();
    assert!(schedule.end_ns.iter().all(|&e| e >= 0));
}

/// Every task starts at or after 0 and ends no earlier than it starts.
fn assert_no_negative_times(label: &str, s: &lumos_sim::Schedule) {
    for (t, (&a, &b)) in s.start_ns.iter().zip(&s.end_ns).enumerate() {
        assert!(0 <= a && a <= b, "{label}: task {t} runs {a}..{b}");
    }
}

fn lengths(spans: &[lumos_graph::Span]) -> Vec<i64> {
    spans.iter().map(lumos_graph::Span::len_ns).collect()
}

/// Whether `r` is a replay refused for running past the clock's range.
fn past_the_clock<T: std::fmt::Debug>(r: Result<T, lumos_sim::SimError>) -> bool {
    matches!(r, Err(lumos_sim::SimError::ClockOverflow { .. }))
}

#[test]
fn huge_scale_factors_are_refused_never_replayed_shorter() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let trace = read_path(&corpus(TRACES[0])).unwrap();
    let (g, m, _) = build(&trace);
    let measured = lengths(&step_spans(&g, &m.tasks, Some(&m.step_annotations)));
    let plain = simulate(&g, &SimOptions::default()).unwrap();
    let plain = lengths(&step_spans(&g, &plain, None));
    // Times saturate, so a factor that takes them past the clock's range
    // would give steps of 292 years: refused instead.
    for factor in [1e18, 1e308, f64::MAX] {
        let opts = SimOptions::default().scale(GpuSelector::All, factor);
        assert!(past_the_clock(simulate(&g, &opts)), "x{factor}");
    }
    // Within the range, longer and never negative.
    let opts = SimOptions::default().scale(GpuSelector::All, 1e6);
    let slow = simulate(&g, &opts).unwrap();
    assert_no_negative_times("x1e6", &slow);
    let steps = lengths(&step_spans(&g, &slow, None));
    for (i, &len) in steps.iter().enumerate() {
        assert!(
            len >= measured[i] && len >= plain[i],
            "x1e6 step {i}: {len}"
        );
    }
}

#[test]
fn scaling_one_rank_hugely_is_refused_or_never_shortens_the_job_step() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let ranks = dlrm_ranks();
    let m = match_collectives(&ranks);
    let clock = align_clocks(&ranks, &m);
    let (job, _, _) = merge(&ranks, &m, &clock);
    // The job's step i is the slowest rank's step i.
    let job_steps = |job: &lumos_graph::JobGraph| -> Result<Vec<i64>, lumos_sim::SimError> {
        let s = simulate_job(job, &SimOptions::default())?;
        assert_no_negative_times("job", &s);
        let all = lengths(&step_spans(&job.graph, &s, None));
        let mut out: Vec<i64> = Vec::new();
        for part in &job.ranks {
            let mine = &all[part.steps.start as usize..part.steps.end as usize];
            for (i, &len) in mine.iter().enumerate() {
                match out.get_mut(i) {
                    Some(o) => *o = (*o).max(len),
                    None => out.push(len),
                }
            }
        }
        Ok(out)
    };
    let plain = job_steps(&job).unwrap();
    for (factor, cpu) in [(1e6, false), (1e6, true), (1e18, false), (f64::MAX, true)] {
        let mut scaled = job.clone();
        scaled.scale_rank(3, factor, cpu);
        assert!(scaled.graph.tasks.iter().all(|t| t.duration_ns >= 0));
        let huge = job_steps(&scaled);
        if factor > 1e6 {
            assert!(past_the_clock(huge), "x{factor} cpu {cpu}");
            continue;
        }
        for (i, (&h, &p)) in huge.unwrap().iter().zip(&plain).enumerate() {
            assert!(h >= p, "x{factor} cpu {cpu}: job step {i} {h} < {p}");
        }
    }
    let mut negative = job.clone();
    negative.scale_rank(3, -1.0, true);
    assert!(negative.graph.tasks.iter().all(|t| t.duration_ns >= 0));
}

#[test]
fn times_further_apart_than_an_i64_saturate_and_are_not_replayed() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    // One CPU event 158 years before the trace, one kernel 158 years after:
    // their distance does not fit in an i64 of ns.
    let mut t = read_path(&corpus(TRACES[0])).unwrap();
    let cpu = t.events.iter().position(|e| is_cpu(e.category)).unwrap();
    let gpu = t
        .events
        .iter()
        .rposition(|e| e.category.is_gpu_work())
        .unwrap();
    t.events[cpu].ts_ns = -5_000_000_000_000_000_000;
    t.events[gpu].ts_ns = 5_000_000_000_000_000_000;
    let (g, m, _) = build(&t);
    assert!(m
        .tasks
        .iter()
        .all(|s| 0 <= s.start_ns && s.start_ns <= s.end_ns));
    assert!(g
        .tasks
        .iter()
        .all(|t| t.duration_ns >= 0 && t.release_ns >= 0));
    assert_eq!(lumos_sim::whole_span(&m.tasks).len_ns(), i64::MAX);
    // The gap between them, replayed, runs past the clock's range.
    assert!(past_the_clock(simulate(&g, &SimOptions::default())));
}

#[test]
fn a_job_of_damaged_ranks_replays() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    for seed in 1..=6u64 {
        let mut rng = Rng(seed * 0x3141_5926);
        let ranks: Vec<RankGraph> = (0..8)
            .map(|r| {
                let path = corpus(&format!("multi-rank/dlrm-8xv100/rank{r}.json.gz"));
                let mut t = read_path(&path).unwrap();
                let share = [0.05, 0.2, 0.5][seed as usize % 3];
                drop_launches(&mut t, &mut rng, share);
                repeat_correlations(&mut t, &mut rng, share / 2.0);
                repeat_gpu_correlations(&mut t, &mut rng, share);
                rank_graph(&t).0
            })
            .collect();
        let m = match_collectives(&ranks);
        let clock = align_clocks(&ranks, &m);
        let (job, _, warnings) = merge(&ranks, &m, &clock);
        match simulate_job(&job, &SimOptions::default()) {
            Ok(s) => assert_no_negative_times(&format!("seed {seed}"), &s),
            Err(e) => panic!("seed {seed}: {e}\n{warnings:?}"),
        }
    }
}

/// The launch and sync facts a reader of a stored graph derives from its
/// launch edges, runtime dependencies and measured times are the ones the
/// build counted.
fn assert_launch_facts_derive(label: &str, g: &Graph, m: &lumos_graph::Measured, r: &BuildReport) {
    let mut derived = BuildReport::default();
    derived.derive_launch_facts(g, m);
    derived.derive_sync_facts(g, m);
    assert_eq!(
        (derived.syncs_returned_early, derived.longest_sync_lead_ns),
        (r.syncs_returned_early, r.longest_sync_lead_ns),
        "{label}"
    );
    assert_eq!(
        (
            derived.launched_early,
            derived.longest_launch_lead_ns,
            derived.shortest_launch_delay_ns,
            derived.shared_launches,
            derived.tasks_of_shared_launches
        ),
        (
            r.launched_early,
            r.longest_launch_lead_ns,
            r.shortest_launch_delay_ns,
            r.shared_launches,
            r.tasks_of_shared_launches
        ),
        "{label}"
    );
}

/// GPU tasks that start before the call that launched them (host and GPU
/// clocks a few ms apart, or hours after a bad merge) are warned about with
/// their lead, and give no negative latency: a negative typical launch
/// latency (the median over launches) was given to every launch edge that
/// did not bind, so replayed kernels could run ahead of their launches.
/// A lead of hours flags the trace (its measured window holds the skew),
/// a few ms do not.
#[test]
fn gpu_tasks_before_their_launch_warn_and_give_no_negative_latency() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    for rel in [TRACES[5], TRACES[7]] {
        let clean = read_path(&corpus(rel)).unwrap();
        let (_, _, report) = build(&clean);
        assert!(
            !report
                .warnings
                .iter()
                .any(|w| w.contains("before the call")),
            "{rel}: {:?}",
            report.warnings
        );
        for lead_ns in [5_000_000, 3 * 3_600_000_000_000] {
            let mut t = clean.clone();
            for e in &mut t.events {
                if e.category.is_gpu_work() {
                    e.ts_ns -= lead_ns;
                }
            }
            let label = format!("{rel} with GPU clocks {lead_ns} ns behind");
            let (g, m, report) = build(&t);
            assert_launch_facts_derive(&label, &g, &m, &report);
            // A GPU task starts after its launch, so it leads by less.
            let lead = report.longest_launch_lead_ns;
            assert!(lead > 0 && lead <= lead_ns, "{label}: {lead}");
            // Other reasons may come with it (a few ms of skew already
            // contradict a sync in one of them): the skew's is asked for.
            let reasons = report.flag_reasons();
            let skew = (reasons.iter()).find(|r| r.contains("before the call that launched"));
            if lead_ns >= GROSS_CLOCK_SKEW_NS {
                assert!(
                    skew.is_some_and(|r| report.warnings.contains(r)),
                    "{label}: {reasons:?}"
                );
                // The measured window opens at the first GPU task, hours
                // before the CPU work that launched it.
                let window = m.tasks.iter().map(|s| s.end_ns).max().unwrap();
                assert!(window >= lead_ns, "{label}: window {window} ns");
            } else {
                assert!(skew.is_none(), "{label}: {reasons:?}");
            }
            assert!(check(&g).is_empty(), "{label}");
            assert!(report.typical_launch_latency_ns >= 0, "{label}");
            assert!(report.typical_stream_gap_ns >= 0, "{label}");
            let bad: Vec<_> = g.edges.iter().filter(|e| e.latency_ns < 0).collect();
            assert!(bad.is_empty(), "{label}: {} edges, {:?}", bad.len(), bad[0]);
            assert!(
                report
                    .warnings
                    .iter()
                    .any(|w| w.contains("before the call that launched")),
                "{label}: {:?}",
                report.warnings
            );
        }
    }
}

/// GPU tasks stacked on one stream (each starting before the previous one
/// ends) are moved to start at its end and shortened, so the measured
/// times read are no longer the trace's: a warning counts them (there was
/// none, and a trace whose kernels all overlapped read as 1% GPU-busy
/// instead of 15% without a word).
#[test]
fn overlapping_gpu_tasks_on_a_stream_are_counted_in_a_warning() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let rel = "single-rank/h100-vit-inference.json.gz";
    let clean = read_path(&corpus(rel)).unwrap();
    let said = |r: &BuildReport| {
        (r.warnings.iter())
            .find(|w| w.contains("before the previous task on"))
            .cloned()
    };
    let (_, _, report) = build(&clean);
    assert_eq!(report.clipped_gpu_overlaps, 0, "{rel}");
    assert_eq!(said(&report), None, "{rel}");
    let mut t = clean.clone();
    let first = (t.events.iter())
        .find(|e| e.category.is_gpu_work())
        .unwrap()
        .ts_ns;
    let gpu = t.events.iter_mut().filter(|e| e.category.is_gpu_work());
    for (n, e) in gpu.enumerate() {
        e.ts_ns = first + n as i64;
    }
    let (g, _, report) = build(&t);
    let clipped = report.clipped_gpu_overlaps;
    assert!(clipped > 100, "{clipped}");
    let w = said(&report).unwrap_or_else(|| panic!("{:?}", report.warnings));
    assert!(
        w.starts_with(&format!(
            "{clipped} GPU tasks start before the previous task on their stream ends"
        )),
        "{w}"
    );
    assert!(check(&g).is_empty());
}

/// GPU tasks that all start hours after the calls that launched them (the
/// GPU clock ahead of the host's) are warned about and flag the trace: the
/// replay took the skew for launch latency and matched the measured window,
/// skew and all (10,802 s for `rtx2080ti-linear-train` 3 hours ahead, at
/// 0.000002% error, unflagged), so any what-if kept the skew. Queued kernels
/// wait long in a measured run, so the statistic is the shortest delay;
/// in no clean corpus trace is it near the threshold, and a few ms ahead,
/// which queueing cannot be told from, flag nothing.
#[test]
fn gpu_clock_hours_ahead_warns_and_flags() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let said = "after the call that launched it";
    for rel in TRACES {
        let clean = read_path(&corpus(rel)).unwrap();
        let (g, m, report) = build(&clean);
        assert_launch_facts_derive(rel, &g, &m, &report);
        // Some kernel starts soon after its launch: microseconds in all
        // but the MI300X trace, whose GPU tasks all wait 21 ms or more.
        let delay = report.shortest_launch_delay_ns;
        assert!(
            (0..GROSS_LAUNCH_DELAY_NS / 1000).contains(&delay),
            "{rel}: {delay}"
        );
        assert!(!report.warnings.iter().any(|w| w.contains(said)), "{rel}");
        if rel != TRACES[5] && rel != TRACES[7] {
            continue;
        }
        for ahead_ns in [5_000_000, 3 * 3_600_000_000_000] {
            let mut t = clean.clone();
            for e in &mut t.events {
                if e.category.is_gpu_work() {
                    e.ts_ns += ahead_ns;
                }
            }
            let label = format!("{rel} with GPU clocks {ahead_ns} ns ahead");
            let (g, m, report) = build(&t);
            assert!(check(&g).is_empty(), "{label}");
            assert_launch_facts_derive(&label, &g, &m, &report);
            assert_eq!(report.launched_early, 0, "{label}");
            // Every launch is delayed by the skew on top of its own delay.
            let delay = report.shortest_launch_delay_ns;
            assert!(
                delay >= ahead_ns && delay < ahead_ns + 1_000_000_000,
                "{label}: {delay}"
            );
            let reasons = report.flag_reasons();
            let skew = (reasons.iter()).find(|r| r.contains(said));
            if ahead_ns >= GROSS_LAUNCH_DELAY_NS {
                assert!(
                    skew.is_some_and(|r| report.warnings.contains(r)),
                    "{label}: {reasons:?}"
                );
                // What the flag is for: the replay keeps the skew.
                let replayed = simulate(&g, &SimOptions::default()).unwrap();
                let end = replayed.makespan_ns();
                assert!(end >= ahead_ns, "{label}: replayed window {end} ns");
            } else {
                assert!(skew.is_none(), "{label}: {reasons:?}");
                assert!(!report.warnings.iter().any(|w| w.contains(said)), "{label}");
            }
        }
    }
}

/// `t` with its GPU clock `ahead_ns` ahead of the host's (negative:
/// behind).
fn gpu_clock_ahead(t: &Trace, ahead_ns: i64) -> Trace {
    let mut t = t.clone();
    for e in (t.events.iter_mut()).filter(|e| e.category.is_gpu_work()) {
        e.ts_ns += ahead_ns;
    }
    t
}

/// A GPU clock seconds ahead of the host's, which launch delays cannot
/// tell from queued kernels (under [`GROSS_LAUNCH_DELAY_NS`]), is told by
/// the synchronizing calls: they return before the GPU work they waited
/// for ends, which no measured run does. Past [`GROSS_SYNC_LEAD_NS`] that
/// is warned about and flags the trace; a skew below it, and every clean
/// corpus trace (whose work ends 4 us after its call returned at most),
/// do not. The data case `gpu_clock_seconds_ahead` (a device synchronize 2
/// s ahead, hand-made: no corpus trace is that small) and the corpus traces
/// with a sync on known work (a device synchronize, a blocking copy, a
/// `cuda_sync` event; their kernels moved), each also read back as a
/// stored graph derives it.
#[test]
fn gpu_clock_seconds_ahead_is_told_by_syncs_and_flags() {
    let said = "before the GPU work";
    let own = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/build/gpu_clock_seconds_ahead/trace.json");
    let data = read_path(&own).unwrap();
    let mut cases = vec![("gpu_clock_seconds_ahead".to_owned(), data, 2_000_000_000)];
    if lumos_testkit::corpus().is_some() {
        for rel in TRACES {
            let clean = read_path(&corpus(rel)).unwrap();
            let (g, m, report) = build(&clean);
            assert_launch_facts_derive(rel, &g, &m, &report);
            let lead = report.longest_sync_lead_ns;
            assert!(
                (0..GROSS_SYNC_LEAD_NS / 100).contains(&lead),
                "{rel}: {lead}"
            );
            assert_eq!(report.syncs_returned_early, 0, "{rel}");
            assert!(!report.warnings.iter().any(|w| w.contains(said)), "{rel}");
            // Its one sync is a launch call taken for blocked because GPU
            // work ended as it returned: what it waited for is known by
            // that end alone, so a skew moves it and nothing tells.
            if rel != TRACES[6] {
                cases.push((rel.to_owned(), clean, 0));
            }
        }
    }
    for (name, trace, skew_ns) in cases {
        // The data case comes 2 s ahead. A sync's lead of 1 ms is clock
        // noise (the threshold is 5 ms), one of 2 s is not.
        for (ahead_ns, flags) in [(2_000_000_000, true), (1_000_000, false)] {
            let t = gpu_clock_ahead(&trace, ahead_ns - skew_ns);
            let label = format!("{name} with GPU clocks {ahead_ns} ns ahead");
            let (g, m, report) = build(&t);
            assert!(check(&g).is_empty(), "{label}");
            assert_launch_facts_derive(&label, &g, &m, &report);
            // The work a call waited for ended before it returned (up to
            // 0.8 ms before, or microseconds after as above), and is now
            // moved by the skew: the lead is about the skew.
            let lead = report.longest_sync_lead_ns;
            let about = ahead_ns - 1_000_000..ahead_ns + GROSS_SYNC_LEAD_NS / 100;
            assert!(about.contains(&lead), "{label}: {lead}");
            assert_eq!(report.launched_early, 0, "{label}");
            let reasons = report.flag_reasons();
            let early = (reasons.iter()).find(|r| r.contains(said));
            assert_eq!(ahead_ns >= GROSS_SYNC_LEAD_NS, flags, "{label}");
            if flags {
                assert!(report.syncs_returned_early > 0, "{label}");
                assert!(
                    early.is_some_and(|r| report.warnings.contains(r)),
                    "{label}: {reasons:?}"
                );
                // Below a minute, launch delays say nothing, so the
                // syncs' is the only word on the clocks.
                let clocks = "clocks disagree";
                let n = (report.warnings.iter()).filter(|w| w.contains(clocks));
                assert_eq!(n.count(), 1, "{label}: {:?}", report.warnings);
            } else {
                assert_eq!(report.syncs_returned_early, 0, "{label}");
                assert!(early.is_none(), "{label}: {reasons:?}");
                assert!(!report.warnings.iter().any(|w| w.contains(said)), "{label}");
            }
        }
    }
}

/// A GPU clock hours ahead is told by both the launches and the syncs,
/// which say the same of the clocks; hours behind, by the launches alone
/// (the work ends earlier still before the syncs return).
#[test]
fn launches_and_syncs_agree_on_a_gpu_clock_hours_off() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let rel = TRACES[7];
    let clean = read_path(&corpus(rel)).unwrap();
    let hours = 3 * 3_600_000_000_000;
    for ahead_ns in [hours, -hours] {
        let (g, m, report) = build(&gpu_clock_ahead(&clean, ahead_ns));
        let label = format!("{rel} with GPU clocks {ahead_ns} ns ahead");
        assert_launch_facts_derive(&label, &g, &m, &report);
        let reasons = report.flag_reasons();
        let launches = [
            "after the call that launched it",
            "before the call that launched",
        ];
        let syncs = (reasons.iter()).filter(|r| r.contains("before the GPU work"));
        let launches = (reasons.iter()).filter(|r| launches.iter().any(|l| r.contains(l)));
        assert_eq!(launches.clone().count(), 1, "{label}: {reasons:?}");
        assert_eq!(
            syncs.clone().count(),
            usize::from(ahead_ns > 0),
            "{label}: {reasons:?}"
        );
        for r in launches.chain(syncs) {
            assert!(r.ends_with("host and GPU clocks disagree?"), "{label}: {r}");
        }
    }
}

/// A GPU clock seconds ahead in traces whose syncs are found by when GPU
/// work ended (moved with the clock, they resolve otherwise or not at
/// all) is told by the calls that must have waited all the same: a copy
/// into pageable memory returns only once its own copy is done
/// (`recsys-rank0of128-sampled-no-flows`), and a stream synchronize waited
/// for one stream, so for the earliest end of the work launched before it
/// on each (`gp100-train-gpu-annotations`, one stream). Both flag the
/// trace from 5 ms ahead, as a stored graph derives it; unshifted, and 1
/// ms ahead (clock noise to the threshold), they do not.
#[test]
fn gpu_clock_ahead_is_told_by_stream_syncs_and_pageable_copies() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let said = "before the GPU work";
    // (trace, its synchronizing calls so told)
    let cases = [
        ("single-rank/gp100-train-gpu-annotations.json.gz", 10),
        ("single-rank/recsys-rank0of128-sampled-no-flows.json.gz", 8),
    ];
    for (rel, calls) in cases {
        let clean = read_path(&corpus(rel)).unwrap();
        for ahead_ns in [0, 1_000_000, 100_000_000, 2_000_000_000, 30_000_000_000] {
            let label = format!("{rel} with GPU clocks {ahead_ns} ns ahead");
            let (g, m, report) = build(&gpu_clock_ahead(&clean, ahead_ns));
            assert_launch_facts_derive(&label, &g, &m, &report);
            // Each call's work ended microseconds before it returned: the
            // lead is the skew less those.
            let lead = report.longest_sync_lead_ns;
            assert!(
                (ahead_ns - 20_000..=ahead_ns).contains(&lead) || (ahead_ns == 0 && lead == 0),
                "{label}: {lead}"
            );
            let reasons = report.flag_reasons();
            let early = (reasons.iter()).find(|r| r.contains(said));
            if ahead_ns >= GROSS_SYNC_LEAD_NS {
                assert_eq!(report.syncs_returned_early, calls, "{label}");
                assert!(
                    early.is_some_and(|r| report.warnings.contains(r)),
                    "{label}: {reasons:?}"
                );
            } else {
                assert_eq!(report.syncs_returned_early, 0, "{label}");
                assert!(early.is_none(), "{label}: {reasons:?}");
            }
        }
    }
}

/// Sets the length of every `ProfilerStep#` annotation with `f`.
fn edit_steps(t: &mut Trace, f: impl Fn(i64) -> i64) {
    let strings = t.strings.clone();
    for e in &mut t.events {
        if strings[e.name.0 as usize].starts_with("ProfilerStep#") {
            e.dur_ns = f(e.dur_ns);
        }
    }
}

/// A `ProfilerStep#` of zero length is no step (it held only itself and
/// gave a 0 ms step replayed at 0% error, pulling the mean down), and
/// steps that overlap on a thread are counted in a warning.
#[test]
fn zero_length_and_overlapping_steps_are_warned_not_reported() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let clean = read_path(&corpus(TRACES[1])).unwrap();
    let (g, _, report) = build(&clean);
    assert_eq!(g.steps.len(), 5);
    assert!(
        !report.warnings.iter().any(|w| w.contains("step")),
        "{:?}",
        report.warnings
    );

    let mut t = clean.clone();
    edit_steps(&mut t, |_| 0);
    let (g, _, report) = build(&t);
    assert!(
        g.steps.is_empty(),
        "{:?}",
        g.steps.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    // One warning, counted, as the build's others are.
    let zero: Vec<_> = (report.warnings.iter())
        .filter(|w| w.contains("zero length"))
        .collect();
    assert_eq!(zero.len(), 1, "{:?}", report.warnings);
    assert!(
        zero[0]
            .starts_with("5 step annotations have zero length: not a step (first: ProfilerStep#"),
        "{zero:?}"
    );
    // About the annotations, not the times the replay reads: no flag.
    assert_eq!(report.flag_reasons(), Vec::<String>::new());

    let mut t = clean;
    edit_steps(&mut t, |d| d * 5 / 2);
    let (g, _, report) = build(&t);
    assert_eq!(g.steps.len(), 5);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.starts_with("4 step annotations overlap")),
        "{:?}",
        report.warnings
    );
    assert_eq!(report.flag_reasons(), Vec::<String>::new());
}

/// Steps of one name (a hand-edited or merged trace) are kept, in order,
/// and said: per-step tables and `lumos diff` tell steps apart by name.
#[test]
fn steps_of_one_name_are_warned_about() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let mut t = read_path(&corpus(TRACES[1])).unwrap();
    let strings = t.strings.clone();
    let is_step = |e: &lumos_trace::Event| strings[e.name.0 as usize].starts_with("ProfilerStep#");
    let first = t.events.iter().find(|e| is_step(e)).unwrap().name;
    for e in t.events.iter_mut().filter(|e| is_step(e)) {
        e.name = first;
    }
    let (g, _, report) = build(&t);
    assert_eq!(g.steps.len(), 5);
    let said: Vec<_> = (report.warnings.iter())
        .filter(|w| w.contains("the name of an earlier one"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", report.warnings);
    assert!(
        said[0].starts_with("4 steps repeat the name of an earlier one (first: ProfilerStep#"),
        "{said:?}"
    );
    assert_eq!(report.flag_reasons(), Vec::<String>::new());
}

/// GPU tasks that repeat the correlation id of another's kernel launch hang
/// off that call, which launches one kernel: counted in one warning that
/// flags the trace (the corpus has such fan-outs only under graph
/// launches, which are exempt).
#[test]
fn gpu_tasks_sharing_a_kernel_launch_are_warned_about() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    for rel in TRACES {
        let (_, _, report) = build(&read_path(&corpus(rel)).unwrap());
        let w = &report.warnings;
        assert!(
            !w.iter().any(|w| w.contains("repeat a correlation")),
            "{rel}: {w:?}"
        );
        // Nor does a corpus trace's GPU start before its launch.
        assert!(
            !w.iter().any(|w| w.contains("before the call")),
            "{rel}: {w:?}"
        );
    }
    let mut t = read_path(&corpus(TRACES[7])).unwrap();
    let mut gpu = t.events.iter_mut().filter(|e| e.category.is_gpu_work());
    let first = gpu.next().unwrap().correlation().unwrap();
    for e in gpu.take(3) {
        e.set_correlation(Some(first));
    }
    let (g, m, report) = build(&t);
    assert!(check(&g).is_empty());
    assert_launch_facts_derive("shared launch", &g, &m, &report);
    let said = "1 launch call that is no graph launch has several GPU tasks (4 in all)";
    assert!(
        report.warnings.iter().any(|w| w.starts_with(said)),
        "{:?}",
        report.warnings
    );
    // Three of the four hang off a call that did not launch them: the
    // trace's ids are damaged, as with repeated runtime correlations.
    let reasons = report.flag_reasons();
    assert!(reasons.iter().any(|r| r.starts_with(said)), "{reasons:?}");
}

/// Kernel launch and copy calls whose GPU task is missing (the 154
/// kernels of a trace's 156 GPU tasks removed) are counted in a warning:
/// the trace read as 0.1% compute instead of 15.5% without a word, where
/// the opposite case (a GPU task without its launch) was warned about. No
/// clean corpus trace loses one (its memset calls may: CUPTI leaves some
/// out, and they are not counted).
#[test]
fn launch_calls_whose_gpu_work_is_missing_are_counted_in_a_warning() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let said = |r: &BuildReport| {
        (r.warnings.iter())
            .find(|w| w.contains("have no GPU task of their correlation id"))
            .cloned()
    };
    for path in c.traces("") {
        let (_, _, report) = build(&read_path(&path).unwrap());
        assert_eq!(said(&report), None, "{}", path.display());
        assert_eq!(report.launches_without_gpu_task, 0, "{}", path.display());
    }
    let rel = "single-rank/h100-vit-inference.json.gz";
    // One kernel lost (its window's first, so not taken for the window's
    // end): within the few a trace may lose without a warning, but counted.
    let mut t = read_path(&corpus(rel)).unwrap();
    let first_kernel = (t.events.iter().enumerate())
        .filter(|(_, e)| e.category == Category::Kernel)
        .min_by_key(|(_, e)| e.ts_ns)
        .map(|(i, _)| i)
        .unwrap();
    t.events.remove(first_kernel);
    let (_, _, report) = build(&t);
    assert_eq!(said(&report), None, "{:?}", report.warnings);
    assert_eq!(report.launches_without_gpu_task, 1);
    let mut t = read_path(&corpus(rel)).unwrap();
    let gpu = |t: &Trace| {
        (t.events.iter())
            .filter(|e| e.category.is_gpu_work())
            .count()
    };
    assert_eq!(gpu(&t), 156);
    let first = (t.events.iter())
        .filter(|e| e.category == Category::Kernel)
        .min_by_key(|e| e.ts_ns)
        .and_then(|e| e.correlation())
        .unwrap();
    t.events.retain(|e| e.category != Category::Kernel);
    assert_eq!(gpu(&t), 2);
    let (_, _, report) = build(&t);
    let w = said(&report).unwrap_or_else(|| panic!("{:?}", report.warnings));
    let (missing, rest) = w.split_once(" of ").unwrap();
    let missing: u64 = missing.parse().unwrap();
    // Those in the window's last tenth after the last recorded launch are
    // taken for its end.
    assert!((130..=154).contains(&missing), "{w}");
    // Counted where a program reads it, as the warning counts it.
    assert_eq!(report.launches_without_gpu_task, missing);
    assert!(
        rest.starts_with("154 kernel launch and copy calls have no GPU task"),
        "{w}"
    );
    assert!(
        w.contains(&format!("correlation {first})")),
        "the first kernel's launch is named: {w}"
    );
    assert!(w.contains("leave their GPU time out"), "{w}");
}

/// Operators nested 20,000 deep, with a leaf under each of the innermost
/// 20,000 levels' last one, as a hostile file can write them: every walk
/// up a task's scopes (timelines, the critical path, the predictor's
/// discovery) cost the chain's length per task, 4 * 10^8 steps here and
/// minutes at 100,000. The nesting is kept to 256 levels, the deeper
/// events counted in a warning, and the leaves are tasks as before.
#[test]
fn operators_nested_thousands_deep_keep_256_levels_and_warn() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let mut t = read_path(&corpus("micro/a100-event-sync.json.gz")).unwrap();
    let step = t
        .events
        .iter()
        .find(|e| e.category == Category::UserAnnotation)
        .cloned()
        .unwrap();
    // Named as an operator, not as the step.
    let op = (t.events.iter())
        .find(|e| e.category == Category::CpuOp)
        .unwrap()
        .name;
    let tasks_before = build(&t).0.tasks.len();
    let (n, leaves) = (20_000i64, 20_000i64);
    // On a thread of their own, during the step, each op 1 ns inside the
    // one before, then the leaves side by side in the innermost.
    let tid = lumos_trace::Ident::Num(424_242);
    for i in 0..n {
        let mut e = step.clone();
        e.tid = tid;
        e.name = op;
        e.category = Category::CpuOp;
        e.ts_ns = step.ts_ns + 1 + i;
        e.dur_ns = step.dur_ns - 2 - 2 * i;
        e.extra = None;
        t.events.push(e);
    }
    let first_leaf = step.ts_ns + 1 + n;
    for j in 0..leaves {
        let mut e = step.clone();
        e.tid = tid;
        e.name = op;
        e.category = Category::CpuOp;
        e.ts_ns = first_leaf + 2 * j;
        e.dur_ns = 1;
        e.extra = None;
        t.events.push(e);
    }
    assert!(
        step.dur_ns > 2 * n + 2 * leaves,
        "the nest fits in the step"
    );
    let (g, m, report) = build(&t);
    let v = check(&g);
    assert!(v.is_empty(), "{v:?}");
    let v = lumos_graph::check_measured(&g, &m);
    assert!(v.is_empty(), "{v:?}");
    let deepest = (0..g.tasks.len())
        .map(|i| g.scope_chain(lumos_graph::TaskId(i as u32)).count())
        .max()
        .unwrap();
    assert_eq!(deepest, 256);
    // Every leaf is a task; the step annotation and the ops are scopes.
    assert_eq!(g.tasks.len(), tasks_before + leaves as usize);
    // The first 256 ops keep their nesting; the others and the leaves
    // are hung under the 256th.
    let w = (report.warnings.iter())
        .find(|w| w.contains("deeper than 256 levels"))
        .unwrap_or_else(|| panic!("{:?}", report.warnings));
    let deeper = n - 257 + leaves;
    assert!(
        w.starts_with(&format!("{deeper} CPU events nest deeper")),
        "{w}"
    );
    simulate(&g, &SimOptions::default()).unwrap();
}

/// 5,000 streams of one kernel each, every launch followed by a
/// `cudaDeviceSynchronize`: each device-wide sync waits on every stream of
/// the device, so the build's cycle checks listed 25,000,000 waits (at
/// 50,000 streams, 10 GB asked for and the process aborted) and the
/// replay walked them. Past 2^24 waits in all, a device-wide sync waits
/// for the GPU work that ended as it returned, with a warning.
#[test]
fn device_syncs_over_thousands_of_streams_keep_to_a_budget() {
    let n = 5_000u64;
    let mut json = String::from("{\"traceEvents\": [");
    for i in 0..n {
        let t = 10 * i;
        json += &format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {t}, "dur": 1, "args": {{"correlation": {}}}}},
{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": {}, "ts": {}, "dur": 2, "args": {{"correlation": {}, "stream": {}, "device": 0}}}},
{{"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": {}, "dur": 4, "args": {{"correlation": {}}}}},
"#,
            2 * i,
            i + 10,
            t + 2,
            2 * i,
            i + 10,
            t + 1,
            2 * i + 1
        );
    }
    json += r#"{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]}"#;
    let t = lumos_trace::read_bytes(std::path::Path::new("t.json"), json.as_bytes()).unwrap();
    let (g, m, report) = build(&t);
    let v = check(&g);
    assert!(v.is_empty(), "{v:?}");
    let v = lumos_graph::check_measured(&g, &m);
    assert!(v.is_empty(), "{v:?}");
    let streams = n as usize;
    let device_wide = (g.runtime_deps.iter())
        .filter(|d| matches!(d.target, lumos_graph::WaitTarget::DeviceTail(_)))
        .count();
    // Within the budget: 3,355 syncs of 5,000 streams each.
    assert_eq!(device_wide, (1usize << 24) / streams);
    let past = n as usize - device_wide;
    let w = (report.warnings.iter())
        .find(|w| w.contains("device-wide synchronizations come past 16777216 waits"))
        .unwrap_or_else(|| panic!("{:?}", report.warnings));
    assert!(w.starts_with(&format!("{past} device-wide")), "{w}");
    // The others wait for their kernel, which ended as they returned.
    let on_tasks = (g.runtime_deps.iter())
        .filter(|d| matches!(d.target, lumos_graph::WaitTarget::Task(_)))
        .count();
    assert_eq!(on_tasks, past);
    simulate(&g, &SimOptions::default()).unwrap();
}

/// A collective whose size overflows (elements times its dtype's size
/// past 2^64 bytes) or whose dtype lumos does not know got no size
/// without a word: now a warning counts them by kind. The corpus's DDP
/// trace, its collectives' arguments damaged in memory.
#[test]
fn collectives_without_a_size_are_counted_by_kind() {
    let path = corpus("single-rank/a100-ddp-rank0of2-event-record.json.gz");
    let trace = read_path(&path).unwrap();
    let said = |t: &Trace| -> Vec<String> {
        (build(t).2.warnings.into_iter())
            .filter(|w| w.contains("but no size in bytes"))
            .collect()
    };
    assert!(said(&trace).is_empty(), "{:?}", said(&trace));
    let sized = build(&trace)
        .0
        .collectives
        .iter()
        .filter(|c| c.bytes.is_some())
        .count();
    assert!(sized > 0);
    for damage in ["dtype", "overflow"] {
        let mut t = trace.clone();
        let mut damaged = 0;
        for e in &mut t.events {
            let Some(c) = e.extra.as_mut().and_then(|x| x.collective.as_mut()) else {
                continue;
            };
            if c.in_nelems.is_none() {
                continue;
            }
            damaged += 1;
            match damage {
                "dtype" => c.dtype = Some("Float4_e9m9".into()),
                _ => c.in_nelems = Some(u64::MAX / 2),
            }
        }
        assert!(damaged > 0);
        let w = said(&t);
        assert_eq!(w.len(), 1, "{damage}: {w:?}");
        let (g, _, _) = build(&t);
        let unsized_ = g
            .collectives
            .iter()
            .filter(|c| c.elements.is_some() && c.bytes.is_none());
        let n = unsized_.count();
        assert!(
            n > 0 && w[0].starts_with(&format!("{n} collectives record an element count")),
            "{damage}: {}",
            w[0]
        );
        assert!(w[0].contains("allreduce "), "{damage}: {}", w[0]);
    }
}

/// `ProfilerStep#N` filed under `cuda_runtime` (a writer's choice; legacy
/// traces use `Operator`) gave a trace no steps: a step is the
/// profiler's annotation whatever CPU category it comes under.
#[test]
fn steps_under_a_runtime_category_are_steps() {
    let path = corpus("single-rank/v100-ddp-rank1of2-allreduce.json.gz");
    let trace = read_path(&path).unwrap();
    let (g, m, _) = build(&trace);
    assert!(!g.steps.is_empty());
    for cat in [Category::Runtime, Category::Driver, Category::CpuOp] {
        let mut t = trace.clone();
        for e in &mut t.events {
            if t.strings[e.name.0 as usize].starts_with("ProfilerStep#") && is_cpu(e.category) {
                e.category = cat;
            }
        }
        let (g2, m2, _) = build(&t);
        assert_eq!(g2.steps.len(), g.steps.len(), "{cat:?}");
        assert_eq!(
            lengths(&m2.step_annotations),
            lengths(&m.step_annotations),
            "{cat:?}"
        );
    }
}

/// Each thread's call tree as names: every scope by the chain of names
/// from its thread's root, and every task by its name, duration,
/// processor and scope.
fn call_tree(g: &Graph) -> Vec<String> {
    let path = |mut s: Option<lumos_graph::ScopeId>| {
        let mut names = Vec::new();
        while let Some(id) = s {
            let scope = &g.scopes[id.0 as usize];
            names.push(g.names[scope.name.0 as usize].clone());
            s = scope.parent;
        }
        names.reverse();
        names.join(" > ")
    };
    let mut tree: Vec<String> = (g.tasks.iter().zip(&g.task_scopes))
        .map(|(t, &s)| {
            let name = &g.names[t.name.0 as usize];
            format!("{name} {} on {:?} in {}", t.duration_ns, t.proc, path(s))
        })
        .collect();
    tree.extend((0..g.scopes.len()).map(|k| path(Some(lumos_graph::ScopeId(k as u32)))));
    tree.sort();
    tree
}

/// Two CPU ops of one start and length on one thread (`aten::item` and
/// the `aten::_local_scalar_dense` it calls, about 60 such pairs a DLRM
/// rank): which was the parent followed the file's order, so DLRM's
/// events shuffled found other layers (3 a pass -> none). Their
/// `External id`s, counted up as ops start, now decide: shuffled, every
/// rank's call tree and graph are the ones its file gives.
#[test]
fn ops_of_one_start_and_length_nest_whatever_the_file_order() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    for rank in [0, 3] {
        let trace = read_path(&corpus(&format!(
            "multi-rank/dlrm-8xv100/rank{rank}.json.gz"
        )))
        .unwrap();
        let (g, _, report) = build(&trace);
        let want = (call_tree(&g), lumos_graph::dump(&g, Some(&report)));
        for seed in 1..=4u64 {
            let mut shuffled = trace.clone();
            let mut rng = Rng(seed);
            let n = shuffled.events.len();
            for i in (1..n).rev() {
                shuffled.events.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let (g, _, report) = build(&shuffled);
            assert!(
                want.0 == call_tree(&g),
                "rank {rank}, seed {seed}: another call tree"
            );
            assert!(
                want.1 == lumos_graph::dump(&g, Some(&report)),
                "rank {rank}, seed {seed}: another graph"
            );
        }
    }
}

/// Ops of one start and length of which only some carry an `External
/// id`: sorted as the largest id, an op without one always became the
/// child of one with, whatever the file said (DLRM's `aten::item` without
/// its id became the child of the `aten::_local_scalar_dense` it calls).
/// The ops with an id are ordered by it among the places they hold in
/// file order; the others keep theirs: so without the parent's id, or
/// the child's, the call tree is the file's.
#[test]
fn ops_of_one_start_and_length_nest_in_file_order_where_one_has_no_id() {
    if lumos_testkit::corpus().is_none() {
        return;
    }
    let trace = read_path(&corpus("multi-rank/dlrm-8xv100/rank0.json.gz")).unwrap();
    let (g, _, report) = build(&trace);
    let want = (call_tree(&g), lumos_graph::dump(&g, Some(&report)));
    // The ops of each run of one thread, start, length and kind.
    let mut runs: std::collections::BTreeMap<_, Vec<usize>> = Default::default();
    for (i, e) in trace.events.iter().enumerate() {
        if matches!(e.category, Category::CpuOp | Category::UserAnnotation) {
            let key = (e.pid, e.tid, e.ts_ns, e.dur_ns, e.category as u8);
            runs.entry(key).or_default().push(i);
        }
    }
    let pairs: Vec<&Vec<usize>> = runs.values().filter(|r| r.len() == 2).collect();
    assert!(pairs.len() >= 50, "{} pairs", pairs.len());
    for (which, label) in [(0, "parent"), (1, "child")] {
        let mut t = trace.clone();
        for pair in &pairs {
            // The parent is the one with the lower id (and first in the
            // file: the test is of the file's order).
            let mut by_id = [pair[0], pair[1]];
            by_id.sort_by_key(|&i| trace.events[i].external_id());
            assert_eq!(by_id[0], pair[0], "the parent comes first in the file");
            assert!(t.events[by_id[which]].set_external_id(None));
        }
        let (g, _, report) = build(&t);
        assert!(
            want.0 == call_tree(&g),
            "without the {label}'s id: another call tree"
        );
        assert!(
            want.1 == lumos_graph::dump(&g, Some(&report)),
            "without the {label}'s id: another graph"
        );
    }
}
