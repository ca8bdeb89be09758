//! Identity: predicting the traced configuration gives the replay's result
//! exactly, on synthesized pipelines and on real corpus traces; edits to
//! the traced value change nothing; the structural machinery rebuilding the
//! traced order (a forced rebuild of every stage) gives the same replay.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use common::*;
use lumos_predict::{Baseline, KernelScale};

#[test]
fn identity_is_the_replay_on_synthesized_pipelines() {
    for (name, layers, tp, pp, dp, m) in [
        ("gpt3-15b", None, 2, 2, 4, 4),
        ("gpt-tiny", Some(6), 2, 3, 2, 3),
        ("gpt-small", None, 1, 1, 2, 2),
    ] {
        let cfg = config(&model(name, layers, None), tp, pp, dp, m);
        let base = baseline(&cfg);
        let want = replayed_steps(&base.inputs);
        let id = base.identity();
        assert!(id.is_identity());
        let out = id.simulate().unwrap();
        assert!(!out.job.coupled);
        assert_eq!(out.step_ns, want, "{name}");
        // Every duration is the traced one.
        for (st, inp) in id.stages.iter().zip(&base.inputs) {
            assert_eq!(st.durations.len(), inp.graph.tasks.len());
            for (&a, b) in st.durations.iter().zip(&inp.graph.tasks) {
                assert_eq!(a, b.duration_ns);
            }
            assert!(st
                .source
                .iter()
                .all(|s| *s == lumos_predict::Source::Measured));
        }
    }
}

#[test]
fn edits_to_the_traced_value_change_nothing() {
    let cfg = config(&model("gpt-tiny", None, None), 2, 2, 2, 4);
    let base = baseline(&cfg);
    let c = base.config;
    let id = base.identity();
    let same = id
        .with_dp(c.dp)
        .unwrap()
        .with_tp(c.tp)
        .unwrap()
        .with_hidden(c.hidden)
        .unwrap()
        .with_ffn(c.ffn)
        .unwrap()
        .with_layers(c.layers)
        .unwrap()
        .with_microbatches(c.microbatches)
        .unwrap()
        .with_pp(c.pp)
        .unwrap()
        .with_kernel_scale("class:gemm=1".parse::<KernelScale>().unwrap())
        .unwrap();
    for (st, inp) in same.stages.iter().zip(&base.inputs) {
        assert_eq!(st.durations.len(), inp.graph.tasks.len());
        for (&a, b) in st.durations.iter().zip(&inp.graph.tasks) {
            assert_eq!(a, b.duration_ns);
        }
    }
    assert_eq!(
        same.simulate().unwrap().step_ns[0],
        id.simulate().unwrap().step_ns[0]
    );
}

/// Rebuilding every stage from its units in the traced order (what the
/// structural edits do: planning, copying units, re-attaching every edge by
/// position, the hand-over repair) replays as the trace does.
#[test]
fn rebuilt_stages_in_the_traced_order_replay_the_same() {
    for (name, layers, tp, pp, dp, m) in [
        ("gpt-tiny", Some(6), 2, 3, 2, 3),
        ("gpt-small", None, 2, 2, 2, 4),
        ("gpt3-15b", None, 2, 2, 4, 4),
    ] {
        let cfg = config(&model(name, layers, None), tp, pp, dp, m);
        let base = baseline(&cfg);
        let id = base.identity();
        let want = id.simulate().unwrap();
        let rebuilt = id.rebuilt().unwrap();
        assert!(
            rebuilt.stages.iter().all(|s| s.dropped_edges == 0),
            "{name}"
        );
        for (a, b) in rebuilt.stages.iter().zip(&base.inputs) {
            assert_eq!(a.graph.tasks.len(), b.graph.tasks.len(), "{name}");
        }
        let got = rebuilt.simulate().unwrap();
        for (g, w) in got.step_ns.iter().zip(&want.step_ns) {
            let err = (g - w).abs() as f64 / *w as f64;
            assert!(err < 1e-3, "{name}: rebuilt {g} vs replay {w}");
        }
    }
}

/// The template repair (the main thread's wait for each backward burst made
/// explicit) does not change the replay of the traced times.
#[test]
fn hand_over_repair_keeps_the_replay() {
    let cfg = config(&model("gpt-small", None, None), 2, 2, 2, 4);
    let base = baseline(&cfg);
    for (g, inp) in base.templates().iter().zip(&base.inputs) {
        assert!(g.edges.len() >= inp.graph.edges.len());
        let a = lumos_sim::simulate(g, &Default::default()).unwrap();
        let b = lumos_sim::simulate(&inp.graph, &Default::default()).unwrap();
        assert_eq!(
            lumos_sim::step_spans(g, &a, None),
            lumos_sim::step_spans(&inp.graph, &b, None)
        );
    }
}

#[test]
fn identity_is_the_replay_on_corpus_traces() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in [
        "single-rank/a100-ddp-rank0of2-event-record.json.gz",
        "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
        "single-rank/a100-recsys-rank3of8.json.gz",
        "single-rank/v100-resnet50-2021-capture-a.json.gz",
        "single-rank/h100-qwen-0.5b-inference.json.gz",
        "micro/a100-event-sync.json.gz",
    ] {
        let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
        let inp = input(&trace);
        let s = lumos_sim::simulate(&inp.graph, &Default::default()).unwrap();
        let want: Vec<i64> = if inp.graph.steps.is_empty() {
            let w = lumos_sim::whole_span(&s);
            vec![w.end_ns - w.start_ns]
        } else {
            lumos_sim::step_spans(&inp.graph, &s, None)
                .iter()
                .map(|x| x.end_ns - x.start_ns)
                .collect()
        };
        let base = Baseline::new(vec![inp]).unwrap();
        let identity = base.identity();
        let out = identity.simulate().unwrap();
        assert_eq!(out.step_ns, want, "{rel}");
    }
}
