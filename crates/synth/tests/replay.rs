//! Synthesized traces go through the whole lumos pipeline: the reader keeps
//! every event, the graph has no violations, and a replay reproduces every
//! measured step within 2%.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::path::Path;
use std::time::Instant;

use lumos_graph::{DepKind, Rule};
use lumos_models::GpuSpec;
use lumos_sim::{breakdown, simulate, step_spans, whole_span, SimOptions};
use lumos_synth::{
    synthesize_rank, write_job, write_job_with, ModelPreset, Parallelism, Ranks, SynthConfig,
};
use lumos_trace::{read_bytes, SkipReason, Trace};

fn config(model: &str, tp: usize, pp: usize, dp: usize, m: usize) -> SynthConfig {
    SynthConfig::new(
        ModelPreset::preset(model).unwrap(),
        Parallelism::new(tp, pp, dp, m),
        GpuSpec::h100(),
    )
}

fn read(name: &str, text: &str) -> Trace {
    let t = read_bytes(Path::new(name), text.as_bytes()).unwrap();
    let malformed: u64 = t
        .skipped
        .counts
        .iter()
        .filter(|((_, r), _)| *r != SkipReason::NotATask)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(malformed, 0, "{name}: skipped {:?}", t.skipped.counts);
    assert!(t.warnings.is_empty(), "{name}: {:?}", t.warnings);
    t
}

/// Builds, checks and replays one trace; returns the worst step error (%).
fn replay_checked(name: &str, trace: &Trace, steps: usize) -> f64 {
    let (graph, measured, report) = lumos_graph::build(trace);
    let violations = lumos_graph::check(&graph);
    assert!(violations.is_empty(), "{name}: {violations:?}");
    assert_eq!(graph.steps.len(), steps, "{name}");
    assert!(
        report.warnings.is_empty(),
        "{name}: builder warnings {:?}",
        report.warnings
    );
    assert_eq!(report.unresolved_waits, 0, "{name}");
    assert_eq!(report.rejected_waits, 0, "{name}");
    // Stream waits are explained by their cuda_sync records (a single GPU
    // has no communication streams, hence no waits).
    let multi_gpu = trace.meta.world_size.unwrap_or(1) > 1;
    assert!(
        !multi_gpu
            || report
                .inferred
                .get(&(DepKind::InterStream, Rule::CudaSyncEvent))
                .copied()
                .unwrap_or(0)
                > 0,
        "{name}"
    );
    let schedule = simulate(&graph, &SimOptions::default()).unwrap();
    let m = step_spans(&graph, &measured.tasks, Some(&measured.step_annotations));
    let r = step_spans(&graph, &schedule, None);
    let mut worst = 0.0f64;
    for (i, (m, r)) in m.iter().zip(&r).enumerate() {
        let (ml, rl) = (m.end_ns - m.start_ns, r.end_ns - r.start_ns);
        let err = (rl - ml) as f64 / ml as f64 * 100.0;
        println!(
            "{name} step {i}: measured {:.3} ms, replayed {:.3} ms, error {err:+.3}%",
            ml as f64 / 1e6,
            rl as f64 / 1e6
        );
        worst = worst.max(err.abs());
    }
    assert!(worst < 2.0, "{name}: step error {worst:.3}%");
    worst
}

#[test]
fn gpt_tiny_tp2_pp2_dp2_every_rank_replays() {
    let mut cfg = config("gpt-tiny", 2, 2, 2, 4);
    cfg.ranks = Ranks::All;
    for rank in cfg.selected_ranks() {
        let text = synthesize_rank(&cfg, rank).unwrap();
        let name = format!("rank{rank}.json");
        let trace = read(&name, &text);
        assert_eq!(trace.meta.rank, rank as u32);
        assert_eq!(trace.meta.world_size, Some(8));
        assert_eq!(trace.meta.process_groups.len(), 5);
        replay_checked(&name, &trace, 2);
    }
}

#[test]
fn gpt3_15b_one_rank_per_stage_replays() {
    let cfg = config("gpt3-15b", 2, 2, 4, 4);
    for rank in cfg.selected_ranks() {
        let text = synthesize_rank(&cfg, rank).unwrap();
        let name = format!("15b-rank{rank}.json");
        let trace = read(&name, &text);
        replay_checked(&name, &trace, 2);
    }
}

#[test]
fn gpt3_175b_tp8_pp4_dp8_breakdown() {
    let cfg = config("gpt3-175b", 8, 4, 8, 32);
    let rank = 64; // stage 1
    let t0 = Instant::now();
    let text = synthesize_rank(&cfg, rank).unwrap();
    let gen_s = t0.elapsed().as_secs_f64();
    println!(
        "gpt3-175b tp8/pp4/dp8 rank {rank}: {:.1} MB of JSON in {gen_s:.2} s",
        text.len() as f64 / 1e6
    );
    let trace = read("175b.json", &text);
    let (graph, measured, _) = lumos_graph::build(&trace);
    assert!(lumos_graph::check(&graph).is_empty());
    let window = whole_span(&measured.tasks);
    let b = breakdown(&graph, &measured.tasks, window);
    let ms = |ns: i64| ns as f64 / 1e6;
    println!(
        "breakdown over {:.1} ms: exposed compute {:.1} ms, overlapped {:.1} ms, exposed comm {:.1} ms, idle {:.1} ms",
        ms(b.total_ns),
        ms(b.exposed_compute_ns),
        ms(b.overlapped_ns),
        ms(b.exposed_comm_ns),
        ms(b.idle_ns)
    );
    assert!(b.exposed_compute_ns > 0);
    assert!(b.overlapped_ns > 0);
    assert!(b.exposed_comm_ns > 0);
    assert!(b.idle_ns > 0);
    let _ = replay_checked("175b", &trace, 2);
}

#[test]
fn write_job_writes_gzip_files_that_read_back() {
    let mut cfg = config("gpt-tiny", 2, 2, 1, 2);
    cfg.ranks = Ranks::All;
    let dir = lumos_testkit::TempDir::new("synth-test");
    let paths = write_job(&cfg, &dir).unwrap();
    assert_eq!(paths.len(), 4);
    for (rank, p) in paths.iter().enumerate() {
        assert!(p.ends_with(format!("rank{rank}.json.gz")));
        let t = lumos_trace::read_path(p).unwrap();
        assert!(t.gzipped);
        assert_eq!(t.meta.rank, rank as u32);
    }
}

#[test]
fn write_job_with_reports_each_file_and_stops_when_asked() {
    use std::sync::Mutex;
    // Pipeline columns (tp, dp): 2 x 2, each of 2 stages.
    let mut cfg = config("gpt-tiny", 2, 2, 2, 2);
    cfg.ranks = Ranks::All;
    let dir = lumos_testkit::TempDir::new("synth-progress");
    let seen = Mutex::new(Vec::new());
    let paths = write_job_with(&cfg, &dir, &|p| {
        seen.lock().unwrap().push(p.to_owned());
        true
    })
    .unwrap();
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(seen, sorted, "one call per file written");

    // Asked to stop at the first file: no further column starts (rayon
    // may have begun the others already), and the caller hears so.
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| {
            let stopped = lumos_testkit::TempDir::new("synth-stop");
            let calls = Mutex::new(0);
            let r = write_job_with(&cfg, &stopped, &|_| {
                *calls.lock().unwrap() += 1;
                false
            });
            assert!(matches!(r, Err(lumos_synth::SynthError::Stopped)), "{r:?}");
            assert!(*calls.lock().unwrap() < paths.len());
        });

    // Asked to stop once the last column is under way, no column is left
    // to skip: every file is written, and the job ends as it would have
    // (before, it said `Stopped`, "before every rank was written").
    let mut one_column = config("gpt-tiny", 1, 2, 1, 2);
    one_column.ranks = Ranks::All;
    let last = lumos_testkit::TempDir::new("synth-stop-last");
    let calls = Mutex::new(0);
    let r = write_job_with(&one_column, &last, &|_| {
        *calls.lock().unwrap() += 1;
        false
    });
    let files = r.unwrap();
    assert_eq!(files.len(), 2);
    assert!(files.iter().all(|f| f.exists()));
    assert_eq!(*calls.lock().unwrap(), 2);
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let mut cfg = config("gpt-tiny", 2, 1, 2, 2);
    let a = synthesize_rank(&cfg, 1).unwrap();
    let b = synthesize_rank(&cfg, 1).unwrap();
    assert_eq!(a, b);
    cfg.seed = 9;
    let c = synthesize_rank(&cfg, 1).unwrap();
    assert_ne!(a, c);
}

#[test]
fn layout_and_optimizer_variants_replay() {
    let cases: Vec<(&str, SynthConfig)> = vec![
        ("single gpu h200", {
            let mut c = config("gpt-small", 1, 1, 1, 2);
            c.gpu = GpuSpec::h200();
            c
        }),
        ("tp4 no sequence parallel a100", {
            let mut c = config("gpt-small", 4, 1, 2, 2);
            c.parallel.sequence_parallel = false;
            c.gpu = GpuSpec::a100();
            c
        }),
        ("pp3 uneven layers distributed optimizer b200", {
            let mut c = config("gpt-tiny", 2, 3, 2, 5);
            c.parallel.distributed_optimizer = true;
            c.gpu = GpuSpec::b200();
            c
        }),
        ("44b tp8 pp2 dp2, three steps", {
            let mut c = config("gpt3-44b", 8, 2, 2, 3);
            c.steps = 3;
            c
        }),
        ("no noise", {
            let mut c = config("gpt-tiny", 2, 2, 2, 3);
            c.noise = 0.0;
            c
        }),
    ];
    for (name, cfg) in cases {
        for rank in cfg.selected_ranks() {
            let text = synthesize_rank(&cfg, rank).unwrap();
            let label = format!("{name} rank {rank}");
            let trace = read(&label, &text);
            replay_checked(&label, &trace, cfg.steps);
        }
    }
}

/// The n-th send of a rank to its next stage and the n-th receive of that
/// stage from it are one transfer: same `Seq`, same size.
#[test]
fn pipeline_transfers_match_across_ranks() {
    let cfg = config("gpt-tiny", 1, 2, 1, 4);
    let p2p = |rank: usize| -> Vec<(String, i64, i64, i64, u64)> {
        let text = synthesize_rank(&cfg, rank).unwrap();
        let t = read("p2p", &text);
        let mut v: Vec<_> = t
            .events
            .iter()
            .filter(|e| e.category == lumos_trace::Category::Kernel)
            .filter_map(|e| e.extra.as_ref()?.collective.clone())
            .filter(|c| matches!(c.name.as_deref(), Some("send" | "recv")))
            .map(|c| {
                (
                    c.name.as_deref().unwrap().to_owned(),
                    c.src_rank.unwrap(),
                    c.dst_rank.unwrap(),
                    c.seq.unwrap(),
                    c.bytes().unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let (a, b) = (p2p(0), p2p(1));
    // 4 micro-batches x 2 steps, activations one way and gradients back.
    assert_eq!(a.len(), 16);
    let flip = |v: &[(String, i64, i64, i64, u64)]| -> Vec<(i64, i64, i64, u64)> {
        let mut w: Vec<_> = v.iter().map(|x| (x.1, x.2, x.3, x.4)).collect();
        w.sort();
        w
    };
    assert_eq!(flip(&a), flip(&b));
    let sends = a.iter().filter(|x| x.0 == "send").count();
    assert_eq!(sends, 8);
}

#[test]
fn every_preset_loads_builds_and_replays() {
    for name in [
        "gpt-tiny",
        "gpt-small",
        "gpt3-15b",
        "gpt3-44b",
        "gpt3-117b",
        "gpt3-175b",
    ] {
        let cfg = config(name, 8, 4, 1, 4);
        for rank in [0, 8 * 3] {
            let label = format!("{name} rank {rank}");
            let text = synthesize_rank(&cfg, rank).unwrap();
            let trace = read(&label, &text);
            replay_checked(&label, &trace, cfg.steps);
        }
    }
}
