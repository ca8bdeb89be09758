//! Stages that run one layer per pass: as many pipeline stages as layers,
//! or one layer per model chunk of the interleaved schedule. No block
//! repeats inside such a pass, so the layer is told from the job: a middle
//! stage's pass is the layer alone, an end stage's also holds the
//! embedding or the loss. Predictions from such jobs agree with the
//! synthesized target jobs within the 5% bound of `ground_truth.rs` (the
//! synthesizer's duration models are the prediction's, so this measures
//! the discovery and the graph edits, not the models).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use common::*;
use lumos_predict::{Baseline, Edit};
use lumos_synth::SynthConfig;

/// GPT small (12 layers, hidden 2048), TP 1 x PP `pp` x DP 1, `m`
/// micro-batches, `v` model chunks per stage, Megatron's defaults.
fn job(pp: usize, m: usize, v: usize) -> SynthConfig {
    let mut c = config(&model("gpt-small", None, None), 1, pp, 1, m);
    c.parallel.virtual_stages = v;
    c
}

/// Every stage's structure is editable, with one layer per pass and
/// `layers` layers in all.
fn assert_one_layer_per_pass(base: &Baseline, layers: u32) {
    for s in &base.structures {
        let r = &s.report;
        assert_eq!(r.structural_edits_blocked, None, "{}", r.pass_order);
        assert_eq!(r.layers_per_pass, Some(1), "{}", r.pass_order);
    }
    assert_eq!(base.config.layers, layers);
}

#[test]
fn one_layer_per_stage_and_per_chunk_is_found_and_predicted() {
    let cases: Vec<(&str, SynthConfig, Vec<Edit>, SynthConfig)> = vec![
        (
            "pp 12 -> pp 6",
            job(12, 12, 1),
            vec![Edit::Pp(6)],
            job(6, 12, 1),
        ),
        (
            "pp 6 v 2: 12 -> 24 micro-batches",
            job(6, 12, 2),
            vec![Edit::Microbatches(24)],
            job(6, 24, 2),
        ),
        (
            "pp 6 v 2 -> pp 4 v 3",
            job(6, 12, 2),
            vec![Edit::Pp(4), Edit::Microbatches(8), Edit::VirtualStages(3)],
            job(4, 8, 3),
        ),
        (
            "pp 3 v 4 -> v 2",
            job(3, 6, 4),
            vec![Edit::VirtualStages(2)],
            job(3, 6, 2),
        ),
    ];
    for (name, from, edits, to) in cases {
        let base = baseline(&from);
        assert_one_layer_per_pass(&base, 12);
        let p = base.identity().with_edits(edits).unwrap();
        let got = mean_ms(&p.simulate().unwrap().step_ns);
        let want = truth_ms(&to);
        let err = (got - want) / want * 100.0;
        println!("{name:<36} predicted {got:8.2} ms  truth {want:8.2} ms  error {err:+6.2}%");
        assert!(err.abs() < 5.0, "{name}: {err:+.2}%");
    }
}

#[test]
fn end_stages_without_a_middle_one_are_refused_with_the_reason() {
    // The first stage's pass holds the embedding and the layer, the last
    // stage's the layer and the loss: without a middle stage nothing tells
    // the layer apart, alone or together.
    for keep in [vec![0], vec![0, 11]] {
        let chosen: Vec<_> = inputs(&job(12, 12, 1))
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep.contains(i))
            .map(|(_, x)| x)
            .collect();
        let base = Baseline::new(chosen).unwrap();
        for s in &base.structures {
            let why = s.report.structural_edits_blocked.clone();
            assert!(
                why.as_deref()
                    .is_some_and(|w| w.contains("one layer per pass")),
                "stages {keep:?}: {why:?}"
            );
        }
        assert!(base.identity().with_edits([Edit::Pp(6)]).is_err());
    }
}
