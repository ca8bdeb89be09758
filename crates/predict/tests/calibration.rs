//! The duration models calibrated on real traces' own evidence: the
//! network on the trace's collectives (even on one rank, and even without
//! message sizes), the GPU recognised or flagged, and a GEMM curve that
//! fits badly not used.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use common::*;
use lumos_models::CollectiveKind;
use lumos_predict::{Baseline, GroupClass};

fn baseline(rel: &str) -> Option<Baseline> {
    let corpus = lumos_testkit::corpus()?;
    let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
    Some(Baseline::new(vec![input(&trace)]).unwrap())
}

/// The v100 DDP trace's 2,020 all-reduces record no message size: the
/// latency is calibrated on their lower envelope (the link they were
/// attributed to: inside the node), the bandwidth stays the V100
/// preset's, and the modelled all-reduce at that envelope is the measured
/// one.
#[test]
fn single_rank_collectives_without_sizes_calibrate_the_latency() {
    let Some(base) = baseline("single-rank/v100-ddp-rank1of2-allreduce.json.gz") else {
        return;
    };
    assert_eq!(base.gemm.gpu, "v100");
    assert!(base.gemm.gpu_known);
    let intra = &base.network.links[0];
    println!("{intra:?}");
    assert_eq!(intra.link, "intra_node");
    assert_eq!(intra.method, "latency_only");
    assert_eq!(intra.collectives, 2020);
    assert_eq!(intra.unsized_collectives, 2020);
    assert!(intra.latency_calibrated && !intra.calibrated);
    assert_eq!(base.network.links[1].collectives, 0);
    let mut measured: Vec<f64> = base.structures[0]
        .comms
        .iter()
        .filter(|c| c.class == GroupClass::Data)
        .map(|c| base.inputs[0].graph.tasks[c.task.idx()].duration_ns as f64)
        .collect();
    measured.sort_by(f64::total_cmp);
    let envelope = measured[(measured.len() - 1) / 10];
    let modelled = base
        .network
        .model()
        .collective_time_ns(CollectiveKind::AllReduce, 0, &[0, 1]);
    println!("envelope {envelope} ns, modelled {modelled} ns");
    assert!(
        (modelled - envelope).abs() / envelope < 0.1,
        "{modelled} {envelope}"
    );
    let note = base
        .notes
        .iter()
        .find(|n| n.starts_with("network intra_node"))
        .expect("a note on the calibration");
    assert!(
        note.contains("no message size") && note.contains("percentile"),
        "{note}"
    );
}

/// A DDP trace whose collectives record sizes (`In msg nelems`, dtype)
/// calibrates the bandwidth: its 26 MB all-reduces run at about 12 GB/s
/// (NCCL's LL protocol), far below NVLink's, and the model says so.
#[test]
fn sized_collectives_calibrate_the_bandwidth() {
    let Some(base) = baseline("single-rank/a100-ddp-rank0of2-event-record.json.gz") else {
        return;
    };
    let intra = &base.network.links[0];
    println!("{intra:?}");
    assert!(intra.collectives > 0, "{intra:?}");
    assert_eq!(intra.unsized_collectives, 0, "{intra:?}");
    assert!(intra.samples > 0);
    assert!(intra.calibrated, "{intra:?}");
    assert!((5.0..30.0).contains(&intra.effective_gbps), "{intra:?}");
    assert!(
        intra.mean_abs_error_pct.is_some_and(|e| e < 50.0),
        "{intra:?}"
    );
    assert_eq!(base.gemm.gpu, "a100");
}

#[test]
fn an_mi300x_is_recognised() {
    let Some(base) = baseline("single-rank/mi300x-resnet-ddp-rank0of8.json.gz") else {
        return;
    };
    assert_eq!(base.gemm.gpu, "mi300x");
    assert!(base.gemm.gpu_known, "{}", base.gemm.gpu_source);
    assert_eq!(base.gemm.peak_tflops, 1307.4);
    assert!(!base.notes.iter().any(|n| n.contains("low confidence")));
}

#[test]
fn an_unknown_gpu_is_a_low_confidence_assumption() {
    let Some(base) = baseline("single-rank/rtx2080ti-linear-train.json.gz") else {
        return;
    };
    assert!(!base.gemm.gpu_known);
    assert!(
        base.gemm.gpu_source.contains("RTX 2080 Ti"),
        "{}",
        base.gemm.gpu_source
    );
    assert!(
        base.notes
            .iter()
            .any(|n| n.starts_with("low confidence") && n.contains("not a known GPU")),
        "{:?}",
        base.notes
    );
}

/// The recsys trace's GEMMs follow no one curve (108% mean error): the
/// curve is not used, FLOP ratios are, and the assumptions say so.
#[test]
fn a_gemm_curve_with_a_large_error_is_not_used() {
    let Some(base) = baseline("single-rank/a100-recsys-rank3of8.json.gz") else {
        return;
    };
    let g = &base.gemm;
    assert!(
        g.mean_abs_error_pct.is_some_and(|e| e > g.max_error_pct),
        "{g:?}"
    );
    assert_eq!(g.method, "flop_ratio");
    let m = base.gemm.model();
    assert!((m.time_ns(8e9) / m.time_ns(1e9) - 8.0).abs() < 1e-9);
    assert!(
        base.notes.iter().any(|n| n.contains("over the 35% limit")),
        "{:?}",
        base.notes
    );
}

/// A trace with no GEMM has no GEMM curve error, and a link it ran no
/// collective over none either: `None`, not the 0% (a perfect fit) they
/// were, and no confidence rule reads a limit into them.
#[test]
fn a_model_fitted_on_nothing_states_no_error() {
    let Some(base) = baseline("micro/a100-simple-add.json.gz") else {
        return;
    };
    let g = &base.gemm;
    assert_eq!(g.samples, 0, "{g:?}");
    assert_eq!(g.mean_abs_error_pct, None, "{g:?}");
    assert!(!base.network.links.is_empty());
    for l in &base.network.links {
        assert_eq!(l.samples, 0, "{l:?}");
        assert_eq!(l.mean_abs_error_pct, None, "{l:?}");
    }
}
