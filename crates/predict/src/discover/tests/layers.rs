//! Step 3a: layer blocks.

use super::super::layers::*;
use super::super::passes::step_threads;
use super::*;

#[test]
fn a_layer_block_launches_work_and_is_not_one_repeated_operator() {
    let us = units(
        vec![
            unit(0, 0, &[], &[5]),
            unit(0, 1, &[], &[]),
            unit(0, 2, &[], &[]),
            unit(0, 3, &[], &[]),
        ],
        &[
            "aten::mm",
            "aten::add",
            "AccumulateGrad",
            "ParallelTransformerLayer",
        ],
    );
    assert!(is_layer_block(&us, &[0, 1]));
    assert!(!is_layer_block(&us, &[1, 2]), "no GPU work");
    assert!(!is_layer_block(&us, &[0, 0]), "one operator repeated");
    assert!(is_layer_block(&us, &[3]), "named like a layer");
}

#[test]
fn the_backward_block_leaves_out_work_only_some_bursts_do() {
    // Tokens 0 and 1 make a layer; 2 (a gradient bucket) comes in the
    // last burst only, after every layer, so that "0 1 2" would repeat
    // as regularly there.
    let us = units(
        vec![
            unit(1, 0, &[], &[7]),
            unit(1, 1, &[], &[7]),
            unit(1, 2, &[], &[7]),
        ],
        &["a", "b", "bucket"],
    );
    let bursts = vec![vec![0, 1, 0, 1, 0, 1], vec![0, 1, 2, 0, 1, 2, 0, 1, 2]];
    assert_eq!(backward_block(&us, &bursts), Some(vec![0, 1]));
}

#[test]
fn kernel_blocks_are_counted_on_the_busiest_stream() {
    let stream = |tasks: Vec<u32>| Processor {
        kind: ProcKind::Stream {
            device: 0,
            stream: 7,
        },
        tasks: tasks.into_iter().map(TaskId).collect(),
    };
    let names = [0, 1, 2, 0, 1, 2, 0, 1, 2, 3];
    let g = Graph {
        names: vec!["a".into(), "b".into(), "c".into(), "d".into()],
        tasks: names
            .iter()
            .map(|&n| task(TaskKind::Kernel, n, None))
            .collect(),
        processors: vec![stream((0..10).collect())],
        ..Graph::default()
    };
    assert_eq!(kernel_pattern(&g), Some(3));
    // One kernel repeated is no block.
    let mut g = g;
    for t in &mut g.tasks {
        t.name = NameId(0);
    }
    assert_eq!(kernel_pattern(&g), None);
}

#[test]
fn blocks_of_a_synthesized_stage() {
    let (g, meas, _) = graph_of(&synth("gpt-tiny", 1, 1, 2, 2, 0));
    let us = Units::build(&g, &meas);
    let b = layer_blocks(&us, &step_threads(&g, &us), None);
    assert_eq!(b.method, LayerMethod::ScopePattern);
    assert_eq!(b.per_pass, Some(4));
    assert!(b.forward.len() > 2 && b.backward.len() > 2);
    // The backward block runs the gradients of the forward one.
    let text = |t: u32| us.tokens[t as usize].as_str();
    assert!(b.backward.iter().any(|&t| text(t).contains("Backward")));
    assert!(!b.forward.iter().any(|&t| text(t).contains("Backward")));
}

#[test]
fn a_stage_with_one_layer_takes_another_stages_blocks() {
    // Three layers over two stages: two, then one.
    let two = synth_layers("gpt-tiny", Some(3), [1, 2, 1, 3], 0);
    let one = synth_layers("gpt-tiny", Some(3), [1, 2, 1, 3], 1);
    let (.., s) = discovered(&two);
    let hint = s.layer_hint().expect("stage 0 repeats its layer");
    let (g, meas, _) = graph_of(&one);
    let us = Units::build(&g, &meas);
    let threads = step_threads(&g, &us);
    let alone = layer_blocks(&us, &threads, None);
    assert_eq!(alone.per_pass, None);
    let b = layer_blocks(&us, &threads, Some(&hint));
    assert_eq!(b.method, LayerMethod::OtherStage);
    assert_eq!(b.per_pass, Some(1));
    let text =
        |v: &[u32]| -> Vec<String> { v.iter().map(|&t| us.tokens[t as usize].clone()).collect() };
    assert_eq!(text(&b.forward), hint.forward);
    assert_eq!(text(&b.backward), hint.backward);
    // A hint this trace does not run is not taken.
    let foreign = LayerHint {
        forward: vec!["no such op".into()],
        backward: hint.backward.clone(),
    };
    assert_eq!(layer_blocks(&us, &threads, Some(&foreign)), alone);
}

/// A gradient bucket's reduction (`aten::mul_`, `c10d::allreduce_`)
/// launched inside three of four layers: no two layers run back to back
/// untouched, so the layer is found among the tokens run at least as
/// often as the pass has layers.
#[test]
fn the_backward_block_is_found_between_frequent_bucket_reductions() {
    let grad = |n: &str| format!("autograd::engine::evaluate_function: {n}Backward#");
    let names = [
        grad("Add"),
        grad("Linear"),
        grad("Gelu"),
        "aten::mul_".to_owned(),
        "c#d::allreduce_".to_owned(),
    ];
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let us = units((0..5).map(|t| unit(1, t, &[], &[7])).collect(), &names);
    // Layer "0 1 2", the reduction "3 4" at a different place in each.
    let burst = vec![0, 1, 2, 0, 3, 4, 1, 2, 0, 1, 3, 4, 2, 0, 1, 2, 3, 4];
    let bursts = vec![burst.clone(), burst];
    assert_eq!(
        backward_block(&us, &bursts).filter(|b| b.len() == 3),
        None,
        "the layer repeats untouched nowhere"
    );
    let (block, layers) = backward_block_among_interruptions(&us, &bursts, false).unwrap();
    assert_eq!(block, vec![0, 1, 2]);
    assert_eq!(layers, 4);
}

/// A pass of one layer whose attention and MLP halves share all but
/// their core gradient function: leaving those out would make each half
/// look like a layer, but the engine runs every layer's gradient
/// functions, so they cannot be foreign work.
#[test]
fn halves_of_a_layer_are_not_taken_for_layers() {
    let grad = |n: &str| format!("autograd::engine::evaluate_function: {n}Backward#");
    let names = [grad("Add"), grad("Linear"), grad("Gelu"), grad("FlashAttn")];
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let us = units((0..4).map(|t| unit(1, t, &[], &[7])).collect(), &names);
    let burst = vec![0, 1, 2, 1, 0, 1, 3, 1];
    let bursts = vec![burst.clone(), burst];
    assert_eq!(
        backward_block_among_interruptions(&us, &bursts, false),
        None
    );
}

/// gpt-tiny at hidden size 2048 with TP 2 and DP 2, one micro-batch: the
/// data-parallel buckets fill inside the backward pass, two of them
/// within its four layers. Before, no backward block was found and the
/// step had no backward pass. On either of two pipeline stages (TP 2 PP 2
/// DP 2), one bucket inside its two layers and one after them, as many
/// as the layers, so the block is found among the gradient functions
/// alone and confirmed by the forward (before, no backward pass either).
#[test]
fn a_backward_pass_interrupted_by_gradient_buckets_has_its_layers() {
    for (pp, rank, layers) in [(1, 0, 4), (2, 0, 2), (2, 4, 2)] {
        let mut preset = lumos_synth::ModelPreset::preset("gpt-tiny").unwrap();
        preset.hidden = 2048;
        preset.ffn_hidden = 4 * 2048;
        let cfg = lumos_synth::SynthConfig::new(
            preset,
            lumos_synth::Parallelism::new(2, pp, 2, 1),
            lumos_models::GpuSpec::h100(),
        );
        let text = lumos_synth::synthesize_rank(&cfg, rank).unwrap();
        let trace =
            lumos_trace::read_bytes(std::path::Path::new("t.json"), text.as_bytes()).unwrap();
        let (g, meas, _) = graph_of(&trace);
        let us = crate::units::Units::build(&g, &meas);
        let threads = step_threads(&g, &us);
        let (bursts, _) = thread_tokens(&us, &threads);
        // What the test is about: a reduction inside the layers.
        let reduction = us
            .tokens
            .iter()
            .position(|t| t == "c#d::allreduce_")
            .unwrap() as u32;
        assert!(bursts[0][..bursts[0].len() - 1].contains(&reduction));
        let blocks = layer_blocks(&us, &threads, None);
        assert_eq!(blocks.per_pass, Some(layers), "pp {pp} rank {rank}");
        let (_, _, _, s) = discovered(&trace);
        for st in &s.steps {
            let kinds: Vec<PassKind> = st.passes.iter().map(|p| p.kind).collect();
            assert_eq!(
                kinds,
                [PassKind::Forward, PassKind::Backward],
                "pp {pp} rank {rank}"
            );
            assert!(
                st.passes.iter().all(|p| p.layers.len() == layers),
                "pp {pp} rank {rank}"
            );
        }
    }
}

/// GPT small (12 layers) on two pipeline stages with full activation
/// recomputation: each layer's backward is one
/// `CheckpointFunctionBackward`, which re-runs the layer's forward before
/// its gradients. Before, that one operator repeated was no layer block,
/// and each stage was refused as "one layer per pass" though it holds
/// six; now each backward layer is one such unit (its recomputed forward
/// inside it, not more layers) and every pass has the stage's six.
#[test]
fn full_recomputation_has_a_checkpointed_block_per_layer() {
    for rank in [0, 1] {
        let mut cfg = lumos_synth::SynthConfig::new(
            lumos_synth::ModelPreset::preset("gpt-small").unwrap(),
            lumos_synth::Parallelism::new(1, 2, 1, 4),
            lumos_models::GpuSpec::h100(),
        );
        cfg.training.recompute = lumos_synth::Recompute::Full;
        let text = lumos_synth::synthesize_rank(&cfg, rank).unwrap();
        let trace =
            lumos_trace::read_bytes(std::path::Path::new("t.json"), text.as_bytes()).unwrap();
        let (.., s) = discovered(&trace);
        assert_eq!(
            super::super::report::structure_blocked(&s),
            None,
            "rank {rank}"
        );
        assert_eq!(s.layer_method, LayerMethod::ScopePattern, "rank {rank}");
        let text = |t: u32| s.units.tokens[t as usize].as_str();
        assert_eq!(
            (s.backward_block.iter().map(|&t| text(t))).collect::<Vec<_>>(),
            ["autograd::engine::evaluate_function: CheckpointFunctionBackward"]
        );
        assert_eq!(s.config.layers, Some(6), "rank {rank}");
        assert_eq!(s.config.microbatches, Some(4), "rank {rank}");
        for st in &s.steps {
            assert_eq!(st.backward_passes(), 4, "rank {rank}");
            assert!(st.passes.iter().all(|p| p.layers.len() == 6), "rank {rank}");
        }
        // The recomputed forward is the backward layer's: no forward
        // layer unit runs on the autograd thread.
        let main = s.steps[0].main;
        for p in s.steps.iter().flat_map(|st| st.passes.iter()) {
            let on_main = p
                .layers
                .iter()
                .flatten()
                .all(|&u| s.units.units[u as usize].thread == main);
            assert_eq!(on_main, p.kind == PassKind::Forward, "rank {rank}");
        }
        let f = (s.report.findings.iter())
            .find(|f| f.what == "activation recomputation")
            .expect("a finding says so");
        assert_eq!((f.value.as_str(), f.confidence), ("full", Confidence::High));
    }
}
