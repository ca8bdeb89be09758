//! Every edit, on a synthesized GPT-3 15B at TP2 x PP2 x DP4 (one rank per
//! stage): the edited graphs are sound (no invariant broken, every task on
//! its processor once, the replay finishes), the structure rediscovered from
//! the predicted timeline is the one asked for, and the effect goes the
//! right way by about the right amount.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::sync::OnceLock;

use common::*;
use lumos_graph::{check, DepKind};
use lumos_predict::{Baseline, Confidence, Outcome, Prediction, Source, Structure, WorkClass};

fn base() -> &'static Baseline {
    static BASE: OnceLock<Baseline> = OnceLock::new();
    BASE.get_or_init(|| baseline(&config(&model("gpt3-15b", None, None), 2, 2, 4, 4)))
}

/// Checks the prediction's graphs and replays it.
fn sound<'p>(p: &'p Prediction<'_>) -> Outcome<'p> {
    for st in &p.stages {
        let v = check(&st.graph);
        assert!(
            v.is_empty(),
            "stage {}: {:?}",
            st.stage,
            &v[..v.len().min(5)]
        );
        assert_eq!(st.origin.len(), st.graph.tasks.len());
        assert_eq!(st.source.len(), st.graph.tasks.len());
    }
    let job = p.job();
    assert!(check(&job.graph).is_empty());
    let out = p.simulate().unwrap();
    assert_eq!(out.schedule.start_ns.len(), out.job.graph.tasks.len());
    for (s, e) in out.schedule.start_ns.iter().zip(&out.schedule.end_ns) {
        assert!(e >= s);
    }
    out
}

/// The coupled replay of the traced configuration: the reference for
/// effects, so that coupling itself is not counted as the edit's.
fn coupled_identity() -> Outcome<'static> {
    let id = base().identity();
    id.simulate_job(id.job_coupled(true)).unwrap().into_owned()
}

fn order(p: &Prediction, out: &Outcome, k: usize) -> String {
    rediscover(p, out, k).steps[0].order()
}

#[test]
fn traced_orders_are_the_1f1b_orders_of_the_worked_example() {
    let b = base();
    assert_eq!(b.structures[0].steps[0].order(), "F1 F2 B1 F3 B2 F4 B3 B4");
    assert_eq!(b.structures[1].steps[0].order(), "F1 B1 F2 B2 F3 B3 F4 B4");
    assert_eq!(b.config.layers, 48);
    assert_eq!((b.config.hidden, b.config.ffn), (6144, 24576));
}

#[test]
fn data_parallel_adds_at_most_the_modelled_communication() {
    let id = base().identity();
    let reference = coupled_identity();
    for dp in [8, 16] {
        let p = id.with_dp(dp).unwrap();
        let out = sound(&p);
        // Only data-parallel collectives (and the coupled transfers)
        // change.
        let mut extra = 0i64;
        for (st, inp_stage) in p.stages.iter().zip(&base().inputs) {
            for (i, &ns) in st.durations.iter().enumerate() {
                let (src, tt) = st.origin[i];
                let s = &base().structures[src as usize];
                let traced = inp_stage.graph.tasks[tt.idx()].duration_ns;
                match s.comm(tt) {
                    Some(c) if c.class == lumos_predict::GroupClass::Data => {
                        assert!(ns > traced);
                        assert_ne!(st.source[i], Source::Measured);
                        extra += ns - traced;
                    }
                    Some(_) => {}
                    None => assert_eq!(ns, traced),
                }
            }
        }
        // Per step, both steps' worth over both stages bound the increase.
        let per_step_extra = extra / 2;
        for (k, &s) in out.step_ns.iter().enumerate() {
            let delta = s - reference.step_ns[k];
            assert!(delta > 0, "dp {dp}: no effect");
            assert!(
                delta <= per_step_extra,
                "dp {dp}: step {k} grew {delta} ns, more than the {per_step_extra} ns of added communication"
            );
        }
    }
}

#[test]
fn layers_are_cloned_and_removed_in_every_pass() {
    let id = base().identity();
    let reference = coupled_identity();
    for layers in [64u32, 24] {
        let p = id.with_layers(layers).unwrap();
        let out = sound(&p);
        if layers > 48 {
            // Removing layers may leave a wait with nothing that far back
            // to wait for (fewer gradient buckets); cloning never does.
            assert!(p.stages.iter().all(|s| s.dropped_edges == 0));
        }
        for k in 0..2 {
            let s = rediscover(&p, &out, k);
            assert_eq!(s.config.layers, Some(layers / 2), "stage {k}");
            assert!(s.steps.iter().all(|st| st
                .passes
                .iter()
                .all(|x| x.layers.len() as u32 == layers / 2)));
            assert_eq!(s.steps[0].order(), base().structures[k].steps[0].order());
        }
        // Step time moves with the layer count, less than proportionally
        // (embedding, head and optimizer do not).
        let ratio = mean_ms(&out.step_ns) / mean_ms(&reference.step_ns);
        let want = layers as f64 / 48.0;
        if layers > 48 {
            assert!(ratio > 1.0 && ratio < want, "{ratio}");
        } else {
            assert!(ratio < 1.0 && ratio > want, "{ratio}");
        }
    }
}

#[test]
fn hidden_size_rescales_gemms_and_communication() {
    let id = base().identity();
    let p = id.with_hidden(9216).unwrap();
    assert_eq!(p.target.config.ffn, 4 * 9216);
    let out = sound(&p);
    let st = &p.stages[0];
    let s = &base().structures[0];
    let mut gemms = 0;
    for (i, &ns) in st.durations.iter().enumerate() {
        let tt = st.origin[i].1;
        let traced = base().inputs[0].graph.tasks[tt.idx()].duration_ns;
        match s.work[tt.idx()] {
            WorkClass::Gemm(sh) => {
                gemms += 1;
                let r = ns as f64 / traced as f64;
                // Weight GEMMs grow by (9216/6144)^2 at most (both weight
                // dimensions scale), the output layer's by 1.5.
                assert!(r > 1.3 && r < 2.3, "{sh:?}: x{r}");
                assert_eq!(st.source[i], Source::Scaled);
            }
            WorkClass::Attention(_) => assert!(ns > traced),
            WorkClass::Cpu => assert_eq!(ns, traced),
            _ => {}
        }
    }
    assert!(gemms > 1000);
    assert!(mean_ms(&out.step_ns) > 1.5 * mean_ms(&coupled_identity().step_ns));
}

#[test]
fn tensor_parallel_shards_gemms() {
    let id = base().identity();
    let p = id.with_tp(4).unwrap();
    sound(&p);
    let st = &p.stages[1];
    let s = &base().structures[1];
    for (i, &ns) in st.durations.iter().enumerate() {
        let tt = st.origin[i].1;
        let traced = base().inputs[1].graph.tasks[tt.idx()].duration_ns;
        if let WorkClass::Gemm(_) = s.work[tt.idx()] {
            let r = ns as f64 / traced as f64;
            assert!(r > 0.5 && r < 0.6, "x{r}");
        }
    }
    // TP 1: no tensor-parallel collectives left.
    let p = id.with_tp(1).unwrap();
    sound(&p);
    for st in &p.stages {
        for (i, &ns) in st.durations.iter().enumerate() {
            let (src, tt) = st.origin[i];
            if let Some(c) = base().structures[src as usize].comm(tt) {
                if c.class == lumos_predict::GroupClass::Tensor {
                    assert_eq!(ns, 0);
                }
            }
        }
    }
}

#[test]
fn kernel_speedups_by_class_and_name() {
    let id = base().identity();
    let reference = coupled_identity();
    let p = id
        .with_kernel_scale("class:gemm=0.5".parse().unwrap())
        .unwrap();
    let out = sound(&p);
    assert!(mean_ms(&out.step_ns) < 0.85 * mean_ms(&reference.step_ns));
    let p = id
        .with_kernel_scale("flash_fwd=2".parse().unwrap())
        .unwrap();
    sound(&p);
    let st = &p.stages[0];
    for (i, t) in st.graph.tasks.iter().enumerate() {
        let tt = st.origin[i].1;
        let traced = base().inputs[0].graph.tasks[tt.idx()].duration_ns;
        let name = st.graph.name(lumos_graph::TaskId(i as u32));
        if t.kind.is_gpu() && !t.is_comm() {
            if name.contains("flash_fwd") {
                assert_eq!(st.durations[i], 2 * traced);
            } else {
                assert_eq!(st.durations[i], traced);
            }
        }
    }
}

#[test]
fn network_bandwidth_moves_data_parallel_time() {
    let id = base().identity().with_dp(16).unwrap();
    let default = sound(&id);
    let fast_links = lumos_predict::NetworkOverrides {
        preset: Some("h100".into()),
        inter_node: lumos_predict::LinkOverrides {
            bandwidth_gbps: Some(100.0),
            ..Default::default()
        },
        ..Default::default()
    };
    let (net, what) = lumos_predict::network_with(&fast_links, "fast.json").unwrap();
    let fast_pred = id.with_network(net, what).unwrap();
    let fast = sound(&fast_pred);
    let (net, what) = lumos_predict::network_preset("a100").unwrap();
    let slow_pred = id.with_network(net, what).unwrap();
    let slow = sound(&slow_pred);
    let (d, f, s) = (
        mean_ms(&default.step_ns),
        mean_ms(&fast.step_ns),
        mean_ms(&slow.step_ns),
    );
    // H100 nodes have a NIC per GPU: the data-parallel rings' crossings
    // spread over the NICs of their members on a node (multi-rail), so
    // doubling each NIC moves the step by a few percent, not a fifth.
    assert!(f < 0.97 * d, "{f} vs {d}");
    assert!(s > d, "{s} vs {d}");
}

#[test]
fn micro_batches_rebuild_the_1f1b_order() {
    let id = base().identity();
    for m in [8u32, 2] {
        let p = id.with_microbatches(m).unwrap();
        let out = sound(&p);
        for k in 0..2 {
            let want: Vec<String> = lumos_models::one_f_one_b(k, 2, m as usize)
                .into_iter()
                .map(|x| match x {
                    lumos_models::Pass::Forward(i) => format!("F{}", i + 1),
                    lumos_models::Pass::Backward(i) => format!("B{}", i + 1),
                })
                .collect();
            assert_eq!(order(&p, &out, k), want.join(" "), "m {m} stage {k}");
        }
    }
}

/// The worked example of method.md section 6: PP 2 -> 4 with micro-batches
/// = TP x PP, rank 0.
#[test]
fn pipeline_parallel_2_to_4_gives_the_worked_example() {
    let id = base().identity();
    let p = id.with_pp(4).unwrap().with_microbatches(8).unwrap();
    assert_eq!(p.stages.len(), 4);
    let out = sound(&p);
    assert!(out.job.coupled);
    assert_eq!(
        order(&p, &out, 0),
        "F1 F2 F3 F4 B1 F5 B2 F6 B3 F7 B4 F8 B5 B6 B7 B8"
    );
    for k in 0..4 {
        let s = rediscover(&p, &out, k);
        assert_eq!(s.config.layers, Some(12), "stage {k}");
        assert_eq!(s.steps[0].order(), plain_order(k, 4, 8), "stage {k}");
        // Receives from the previous stage exactly where there is one.
        let roles = s.report.stage_role.clone();
        let want_role = match k {
            0 => "first",
            3 => "last",
            _ => "middle",
        };
        assert_eq!(roles, want_role, "stage {k}");
        // Read with the traced job's groups (two stages), stage 1 of four
        // runs the interleaved order of stage 1 of two with 2 chunks; no
        // loss head after only some of its forwards says it is not.
        if k == 1 {
            assert_read_as_plain(&s, "the loss head");
        }
    }
    // Every send meets its receive: 3 stage boundaries, 8 micro-batches,
    // both directions, 2 steps; and one gradient-norm rendezvous per step.
    let p2p = out
        .job
        .rendezvous
        .iter()
        .filter(|r| r.kind == lumos_graph::RendezvousKind::PointToPoint)
        .count();
    assert_eq!(p2p, 3 * 8 * 2 * 2);
    assert_eq!(out.job.rendezvous.len() - p2p, 2);
    // The middle stages hold inter-stream waits on both pipeline streams.
    let st = &p.stages[1];
    let waits = st
        .graph
        .edges
        .iter()
        .filter(|e| e.kind == DepKind::InterStream)
        .count();
    assert!(waits > 0);
}

#[test]
fn pipeline_parallel_to_one_and_to_eight() {
    let id = base().identity();
    let p = id.with_pp(1).unwrap();
    assert_eq!(p.stages.len(), 1);
    let out = sound(&p);
    let s = rediscover(&p, &out, 0);
    assert_eq!(s.config.layers, Some(48));
    assert_eq!(s.report.stage_role, "only");
    assert!(out.job.rendezvous.is_empty());
    let p = id.with_pp(8).unwrap().with_microbatches(16).unwrap();
    assert_eq!(p.stages.len(), 8);
    let out = sound(&p);
    for k in [0usize, 3, 7] {
        assert_eq!(rediscover(&p, &out, k).config.layers, Some(6));
    }
}

/// Stage 0 of five runs 4 warm-up forwards, as stage 0 of two does with
/// 2 chunks: read with the traced job's groups (two stages) its order is
/// the interleaved one, but its embedding runs before every forward, not
/// before the first chunk's only, so it is read as plain.
#[test]
fn a_deeper_first_stage_is_not_taken_for_an_interleaved_one() {
    let p = base().identity().with_pp(5).unwrap();
    let p = p.with_microbatches(8).unwrap();
    let out = sound(&p);
    let s = rediscover(&p, &out, 0);
    assert_eq!(s.steps[0].order(), plain_order(0, 5, 8));
    assert_read_as_plain(&s, "the embedding");
}

/// The 1F1B order of `stage` of `pp` with `m` micro-batches, as a
/// structure's report writes it.
fn plain_order(stage: usize, pp: usize, m: usize) -> String {
    let passes: Vec<String> = lumos_models::one_f_one_b(stage, pp, m)
        .into_iter()
        .map(|x| match x {
            lumos_models::Pass::Forward(i) => format!("F{}", i + 1),
            lumos_models::Pass::Backward(i) => format!("B{}", i + 1),
        })
        .collect();
    passes.join(" ")
}

/// `s` is read as plain 1F1B, with a low finding on the virtual stages
/// whose evidence names the end work (`missing`) the trace lacks.
fn assert_read_as_plain(s: &Structure, missing: &str) {
    assert_eq!(s.config.virtual_stages, None);
    let f = s
        .report
        .findings
        .iter()
        .find(|f| f.what == "virtual pipeline stages")
        .expect("a finding on the order read as plain");
    assert_eq!((f.value.as_str(), f.confidence), ("1", Confidence::Low));
    assert!(f.evidence.contains(missing), "{}", f.evidence);
}

/// A caller's own compute model replaces the fitted curve: with GEMM time
/// proportional to FLOPs, doubling the hidden size makes every weight GEMM
/// exactly as much longer as its FLOPs grow.
#[test]
fn compute_models_plug_in() {
    struct Linear;
    impl lumos_predict::ComputeModel for Linear {
        fn gemm_ns(&self, flops: f64) -> f64 {
            flops / 500.0
        }
    }
    let base = baseline(&config(&model("gpt-tiny", None, None), 2, 2, 2, 4));
    let comm = base.models.comm.clone();
    let base = base.with_models(std::sync::Arc::new(Linear), comm);
    let p = base.identity().with_hidden(2048).unwrap();
    sound(&p);
    let st = &p.stages[0];
    let mut checked = 0;
    for (i, &ns) in st.durations.iter().enumerate() {
        let tt = st.origin[i].1;
        if let WorkClass::Gemm(sh) = base.structures[0].work[tt.idx()] {
            let traced = base.inputs[0].graph.tasks[tt.idx()].duration_ns as f64;
            let r = ns as f64 / traced;
            // x2 per weight dimension that is hidden-like (h, h/tp, 3h/tp)
            // or FFN-like (ffn, ffn/tp); tokens and vocabulary do not grow.
            let grows = |d: u64| [1024, 512, 1536, 4096, 2048].contains(&d);
            let want = 2f64.powi(i32::from(grows(sh.k)) + i32::from(grows(sh.n)));
            assert!((r - want).abs() < 0.01, "{sh:?}: x{r}");
            checked += 1;
        }
    }
    assert!(checked > 0);
}
