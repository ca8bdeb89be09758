//! Traces whose every pipeline transfer is followed by a device-wide
//! `cudaDeviceSynchronize` (Megatron's `batch_p2p_sync`, on in its plain
//! 1F1B): pipeline edits copy the synchronization with the transfer it
//! follows, so a predicted stage waits where the real one would. Before,
//! a middle stage built from the first and last stages' transfers lost
//! every synchronization and GPT small's PP 2 -> 4 came out at +33%.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use common::*;
use lumos_synth::SynthConfig;

/// The job with a device synchronization after every pipeline transfer.
fn synced(mut c: SynthConfig) -> SynthConfig {
    c.training.p2p_sync = true;
    c
}

#[test]
fn pipeline_edits_of_synced_transfers_match_the_joint_replay() {
    let small = model("gpt-small", None, None);
    let a = synced(config(&small, 2, 2, 2, 4));
    let base = baseline(&a);
    let id = base.identity();
    let net = lumos_models::Cluster::dgx_h100().network;
    for (pp, m, layers) in [(4u32, 8u32, 3u32), (8, 16, 1), (1, 2, 12)] {
        let p = id
            .with_pp(pp)
            .unwrap()
            .with_microbatches(m)
            .unwrap()
            .with_network(net, "synthesized (dgx-h100)".into())
            .unwrap();
        let out = p.simulate().unwrap();
        let got = mean_ms(&out.step_ns);
        let joint = joint_truth_ms(&synced(config(&small, 2, pp as usize, 2, m as usize)));
        let err = (got - joint) / joint * 100.0;
        println!("gpt-small synced pp {pp}: predicted {got:.2} ms, joint truth {joint:.2} ms ({err:+.2}%)");
        // PP 1 merges two CPU-bound stages (see ground_truth.rs).
        let bound = if pp == 1 { 6.0 } else { 5.0 };
        assert!(
            err.abs() < bound,
            "pp {pp}: {err:+.2}% against the joint replay"
        );
        if pp == 8 {
            // One layer per pass repeats nothing: rediscovery has no block.
            continue;
        }
        for k in 0..p.stages.len() {
            let s = rediscover(&p, &out, k);
            assert_eq!(s.config.layers, Some(layers), "pp {pp} stage {k}: layers");
            assert_eq!(
                s.config.microbatches,
                Some(m),
                "pp {pp} stage {k}: micro-batches"
            );
        }
    }
}
