//! Re-timing a graph with another recording's durations, on synthesized
//! traces of one job on two GPUs.

use lumos_graph::Graph;

use super::*;

fn synth_on(gpu: lumos_models::GpuSpec) -> Graph {
    let cfg = lumos_synth::SynthConfig::new(
        lumos_synth::ModelPreset::preset("gpt-small").unwrap(),
        lumos_synth::Parallelism::new(1, 1, 1, 2),
        gpu,
    );
    let text = lumos_synth::synthesize_rank(&cfg, 0).unwrap();
    let trace = lumos_trace::read_bytes(std::path::Path::new("t.json"), text.as_bytes()).unwrap();
    lumos_graph::build(&trace).0
}

#[test]
fn a_graph_re_timed_with_itself_is_unchanged() {
    let g = synth_on(lumos_models::GpuSpec::h100());
    let t = transfer_durations(&g, &g);
    assert_eq!(t.cpu.share(), Some(1.0));
    assert_eq!(t.gpu.share(), Some(1.0));
    assert_eq!(t.edges_retimed, t.edges);
    for (x, y) in t.graph.tasks.iter().zip(&g.tasks) {
        assert_eq!(x.duration_ns, y.duration_ns);
    }
    assert!(t.check("a", "a").is_ok());
}

#[test]
fn another_gpu_s_durations_replace_the_gpu_work() {
    let a = synth_on(lumos_models::GpuSpec::a100());
    let b = synth_on(lumos_models::GpuSpec::h100());
    let t = transfer_durations(&a, &b);
    assert!(t.gpu.share().is_some_and(|s| s > 0.99), "{:?}", t.gpu);
    assert!(t.cpu.share().is_some_and(|s| s > 0.99), "{:?}", t.cpu);
    let gpu = |g: &Graph| -> i64 {
        g.tasks
            .iter()
            .filter(|t| t.kind.is_gpu())
            .map(|t| t.duration_ns)
            .sum()
    };
    assert_eq!(gpu(&t.graph), gpu(&b));
    assert!(gpu(&a) > gpu(&b));
    // The structure is A's.
    assert_eq!(t.graph.edges.len(), a.edges.len());
    assert_eq!(t.graph.tasks.len(), a.tasks.len());
}

#[test]
fn an_unrelated_graph_is_refused_with_the_matched_share() {
    let a = synth_on(lumos_models::GpuSpec::h100());
    let t = transfer_durations(&a, &Graph::default());
    assert_eq!(t.matched_share(), Some(0.0));
    let e = t.check("a.json", "b.json").unwrap_err();
    assert!(e.is_usage());
    let msg = e.to_string();
    assert!(
        msg.contains("only 0.0% of the task time of a.json"),
        "{msg}"
    );
}

/// A graph whose tasks have no duration has no share of its task time to
/// match: the shares are `None` (they were 0 overall and 1, "100.0%", per
/// side), and the refusal counts tasks instead ("0 of 0" where there are
/// none).
#[test]
fn a_graph_without_task_time_has_no_matched_share() {
    let mut a = synth_on(lumos_models::GpuSpec::h100());
    for t in &mut a.tasks {
        t.duration_ns = 0;
    }
    let t = transfer_durations(&a, &a);
    assert_eq!(
        (t.cpu.share(), t.gpu.share(), t.matched_share()),
        (None, None, None)
    );
    let msg = t.check("a.json", "b.json").unwrap_err().to_string();
    let (n_cpu, n_gpu) = (t.cpu.tasks, t.gpu.tasks);
    assert!(n_cpu > 0 && n_gpu > 0);
    assert!(
        msg.contains(&format!(
            "(CPU {n_cpu} of {n_cpu} tasks, GPU {n_gpu} of {n_gpu} tasks matched"
        )),
        "{msg}"
    );
    assert!(!msg.contains('%'), "{msg}");

    let empty = transfer_durations(&Graph::default(), &a);
    let msg = empty.check("a.json", "b.json").unwrap_err().to_string();
    assert!(
        msg.contains("(CPU 0 of 0 tasks, GPU 0 of 0 tasks matched"),
        "{msg}"
    );
}
