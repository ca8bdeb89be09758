//! Step 5: the configuration.

use super::*;
use crate::context::GroupInfo;

#[test]
fn the_configuration_of_a_synthesized_stage() {
    for (rank, stage) in [(0, 0), (4, 1)] {
        let (.., s) = discovered(&synth("gpt-tiny", 2, 2, 2, 4, rank));
        let c = &s.config;
        assert_eq!(
            (c.tp, c.dp, c.pp, c.stage),
            (Some(2), Some(2), Some(2), Some(stage))
        );
        assert_eq!((c.microbatches, c.layers), (Some(4), Some(2)));
        assert_eq!(
            (c.hidden, c.ffn, c.tokens),
            (Some(1024), Some(4096), Some(2048))
        );
        assert_eq!(c.heads_local, Some(8));
        assert_eq!(c.sequence_parallel, Some(true));
        assert_eq!(c.distributed_optimizer, Some(false));
        let found = |what: &str| s.report.findings.iter().find(|f| f.what == what).unwrap();
        assert_eq!(found("micro-batches").confidence, Confidence::High);
        assert_eq!(found("layers on this stage").value, "2");
        assert_eq!(found("FFN size").value, "4096");
    }
}

#[test]
fn degrees_default_to_one_and_a_single_stage_is_stage_zero() {
    let (g, meas, mut ctx) = graph_of(&synth("gpt-tiny", 1, 1, 1, 2, 0));
    // Without the process groups (the trace lists a tensor-parallel
    // group of one) and the world size, nothing shows the degrees.
    ctx.groups.clear();
    ctx.world_size = None;
    let s = discover(&g, &meas, &ctx);
    let c = &s.config;
    assert_eq!(
        (c.tp, c.dp, c.pp, c.stage),
        (Some(1), Some(1), Some(1), Some(0))
    );
    // No tensor-parallel collectives with tp 1: no sequence parallelism.
    assert_eq!(c.sequence_parallel, Some(false));
    let f = s
        .report
        .findings
        .iter()
        .find(|f| f.what == "tensor-parallel degree")
        .unwrap();
    assert_eq!((f.value.as_str(), f.confidence), ("1", Confidence::Low));
    assert_eq!(f.evidence, "no tensor collectives");
    // A world of one rank: every degree is 1 for sure.
    ctx.world_size = Some(1);
    let s = discover(&g, &meas, &ctx);
    for f in (s.report.findings.iter()).filter(|f| f.what.ends_with("degree")) {
        assert_eq!((f.value.as_str(), f.confidence), ("1", Confidence::High));
        assert_eq!(
            f.evidence,
            "world size 1 (the trace's distributed information)"
        );
    }
}

#[test]
fn the_stage_is_the_rank_s_place_in_its_pipeline_group() {
    let trace = synth("gpt-tiny", 1, 2, 1, 2, 1);
    let (g, meas, mut ctx) = graph_of(&trace);
    ctx.groups = vec![GroupInfo {
        name: "9".into(),
        desc: Some("PIPELINE_MODEL_PARALLEL_GROUP".into()),
        ranks: vec![5, 1],
    }];
    ctx.rank = 5;
    assert_eq!(discover(&g, &meas, &ctx).config.stage, Some(1));
    ctx.rank = 2;
    assert_eq!(discover(&g, &meas, &ctx).config.stage, None);
}
