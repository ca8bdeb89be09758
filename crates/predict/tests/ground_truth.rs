//! Against ground truth: synthesize configuration A (GPT-3 15B, TP2 x PP2 x
//! DP4, 4 micro-batches, one rank per stage), predict configuration B from
//! it, synthesize B and compare with B's replay (which reproduces a
//! synthesized trace). The sweep is the paper's (Lumos, MLSys 2025,
//! Figure 7): DP 4 -> 8/16/32, layers 48 -> 64/96, hidden 6144 ->
//! 9216/12288, PP 2 -> 4/8/16 with micro-batches = TP x PP, and DP and PP
//! together; plus TP and micro-batch changes.
//!
//! The synthesizer's duration models are the ones the prediction calibrates
//! and uses, so this measures the graph edits, not the models (see
//! docs/PREDICTION.md). The synthesized jobs run on a DGX H100 network
//! whose rings use every NIC of a node; the traces (data-parallel groups
//! inside one node) cannot show that, so the predictions are told the
//! network, as `lumos predict --network` would be.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use common::*;
use lumos_predict::{PassKind, Prediction, WorkClass};

struct Case {
    name: &'static str,
    tp: usize,
    pp: usize,
    dp: usize,
    layers: usize,
    hidden: usize,
}

const fn case(
    name: &'static str,
    tp: usize,
    pp: usize,
    dp: usize,
    layers: usize,
    hidden: usize,
) -> Case {
    Case {
        name,
        tp,
        pp,
        dp,
        layers,
        hidden,
    }
}

const SWEEP: &[Case] = &[
    case("dp 8", 2, 2, 8, 48, 6144),
    case("dp 16", 2, 2, 16, 48, 6144),
    case("dp 32", 2, 2, 32, 48, 6144),
    case("layers 64", 2, 2, 4, 64, 6144),
    case("layers 96", 2, 2, 4, 96, 6144),
    case("hidden 9216", 2, 2, 4, 48, 9216),
    case("hidden 12288", 2, 2, 4, 48, 12288),
    case("pp 4", 2, 4, 4, 48, 6144),
    case("pp 8", 2, 8, 4, 48, 6144),
    case("pp 16", 2, 16, 4, 48, 6144),
    case("pp 4 dp 8", 2, 4, 8, 48, 6144),
    case("pp 8 dp 8", 2, 8, 8, 48, 6144),
    case("pp 4 dp 16", 2, 4, 16, 48, 6144),
    case("tp 4", 4, 2, 4, 48, 6144),
];

/// The network the synthesized jobs run on.
fn synth_network(p: Prediction<'_>) -> Prediction<'_> {
    let net = lumos_models::Cluster::dgx_h100().network;
    p.with_network(net, "synthesized (dgx-h100)".into())
        .unwrap()
}

fn predict<'b>(id: &Prediction<'b>, c: &Case) -> Prediction<'b> {
    let mut p = synth_network(id.clone());
    if c.pp != 2 {
        p = p.with_pp(c.pp as u32).unwrap();
        p = p.with_microbatches((c.tp * c.pp) as u32).unwrap();
    }
    if c.dp != 4 {
        p = p.with_dp(c.dp as u32).unwrap();
    }
    if c.layers != 48 {
        p = p.with_layers(c.layers as u32).unwrap();
    }
    if c.hidden != 6144 {
        p = p.with_hidden(c.hidden as u64).unwrap();
    }
    if c.tp != 2 {
        p = p.with_tp(c.tp as u32).unwrap();
    }
    p
}

#[test]
fn paper_sweep_within_five_percent() {
    let a = config(&model("gpt3-15b", None, None), 2, 2, 4, 4);
    let base = baseline(&a);
    let truth_a = mean_ms(&replayed_steps(&base.inputs));
    let id = base.identity();
    let coupled_a = mean_ms(&id.simulate_job(id.job_coupled(true)).unwrap().step_ns);
    println!(
        "A: replay {truth_a:.1} ms, coupled replay {coupled_a:.1} ms ({:+.2}%)",
        (coupled_a - truth_a) / truth_a * 100.0
    );
    let mut errs = Vec::new();
    let mut rel = Vec::new();
    for c in SWEEP {
        let m = model("gpt3-15b", Some(c.layers), Some(c.hidden));
        let micro = if c.pp == 2 { 4 } else { c.tp * c.pp };
        let b = config(&m, c.tp, c.pp, c.dp, micro);
        let p = predict(&id, c);
        let got = mean_ms(&p.simulate().unwrap().step_ns);
        let want = truth_ms(&b);
        let err = (got - want) / want * 100.0;
        // The edits alone: against B's traces replayed jointly, as the
        // prediction is.
        let joint = joint_truth_ms(&b);
        let edit = (got - joint) / joint * 100.0;
        println!(
            "{:<14} predicted {got:8.1} ms  truth {want:8.1} ms  error {err:+6.2}%  joint truth {joint:8.1} ms  error {edit:+6.2}%",
            c.name
        );
        assert!(err.abs() < 5.0, "{}: {err:+.2}%", c.name);
        assert!(
            edit.abs() < 5.0,
            "{}: {edit:+.2}% against the joint replay",
            c.name
        );
        errs.push(err.abs());
        rel.push(edit.abs());
    }
    let mean = errs.iter().sum::<f64>() / errs.len() as f64;
    println!(
        "mean |error| {mean:.2}% against the traces, {:.2}% against their joint replay, over {} configurations",
        rel.iter().sum::<f64>() / rel.len() as f64,
        errs.len()
    );
    assert!(mean < 5.0);
}

/// A smaller model (GPT small, 12 layers, hidden 2048), whose passes are
/// short enough that CPU time matters (at PP 8 some stages hold one layer,
/// so discovery takes the layer block from another stage). The synthesizer
/// times its stages together (a lockstep plan), so B's traces and their
/// joint replay agree; the prediction is checked against the joint replay,
/// coupled as predictions are.
#[test]
fn small_model_edits_within_five_percent() {
    let small = model("gpt-small", None, None);
    let a = config(&small, 2, 2, 2, 4);
    let base = baseline(&a);
    let truth_a = mean_ms(&replayed_steps(&base.inputs));
    let id = base.identity();
    let coupled_a = mean_ms(&id.simulate_job(id.job_coupled(true)).unwrap().step_ns);
    println!(
        "gpt-small A: replay {truth_a:.2} ms, joint replay {coupled_a:.2} ms ({:+.2}%)",
        (coupled_a - truth_a) / truth_a * 100.0
    );
    for (name, p, b) in [
        (
            "layers 24",
            id.with_layers(24).unwrap(),
            config(&model("gpt-small", Some(24), None), 2, 2, 2, 4),
        ),
        (
            "dp 16",
            id.with_dp(16).unwrap(),
            config(&small, 2, 2, 16, 4),
        ),
        (
            "hidden 3072",
            id.with_hidden(3072).unwrap(),
            config(&model("gpt-small", None, Some(3072)), 2, 2, 2, 4),
        ),
        (
            "pp 4",
            id.with_pp(4).unwrap().with_microbatches(8).unwrap(),
            config(&small, 2, 4, 2, 8),
        ),
        (
            "pp 8",
            id.with_pp(8).unwrap().with_microbatches(16).unwrap(),
            config(&small, 2, 8, 2, 16),
        ),
        (
            "pp 1",
            id.with_pp(1).unwrap().with_microbatches(2).unwrap(),
            config(&small, 2, 1, 2, 2),
        ),
    ] {
        let p = synth_network(p);
        let got = mean_ms(&p.simulate().unwrap().step_ns);
        let want = truth_ms(&b);
        let err = (got - want) / want * 100.0;
        let joint = joint_truth_ms(&b);
        let edit = (got - joint) / joint * 100.0;
        println!(
            "gpt-small {name:<12} predicted {got:8.2} ms  truth {want:8.2} ms  error {err:+6.2}%  joint truth {joint:8.2} ms  error {edit:+6.2}%"
        );
        // PP 1 merges two CPU-bound stages into one; its error depends on
        // the synthesizer's noise draws (with the per-stage noise of the
        // lockstep plan and BF16 gradients it is +5.4%, +2.6% without
        // noise, +3.0% before), so it gets a little more room.
        let bound = if name == "pp 1" { 6.0 } else { 5.0 };
        assert!(
            edit.abs() < bound,
            "{name}: {edit:+.2}% against the joint replay"
        );
    }
}

/// The edits of the sweep from the two forms of the same traced job:
/// complete (`cuda_sync` events and `cudaEventRecord` calls, as the
/// synthesizer writes by default) and stripped of both (as most real
/// exporters write). Everything the stripped form lacks must be inferred;
/// the predictions must agree within 2%. The truth is the same job either
/// way, so only the two predictions are compared.
#[test]
fn stripped_traces_predict_as_complete_ones() {
    let a = config(&model("gpt3-15b", None, None), 2, 2, 4, 4);
    let full = baseline(&a);
    let bare = baseline(&stripped(&a));
    let (id_full, id_bare) = (full.identity(), bare.identity());
    let mut worst: f64 = 0.0;
    let identity = [case("identity", 2, 2, 4, 48, 6144)];
    for c in identity.iter().chain(SWEEP) {
        let got_full = mean_ms(&predict(&id_full, c).simulate().unwrap().step_ns);
        let got_bare = mean_ms(&predict(&id_bare, c).simulate().unwrap().step_ns);
        let diff = (got_bare - got_full) / got_full * 100.0;
        println!(
            "{:<14} complete {got_full:8.1} ms  stripped {got_bare:8.1} ms  difference {diff:+6.2}%",
            c.name
        );
        worst = worst.max(diff.abs());
    }
    println!("largest |difference| {worst:.2}%");
    // Before the framework rules (lumos_graph's `Rule::CollectiveInput`
    // and `Rule::CollectiveConsumer`) the stripped form was up to 5.5%
    // off (TP 4 +5.5%, hidden 12288 -4.6%, PP 8 -4.3%).
    assert!(
        worst < 2.0,
        "stripped traces {worst:.2}% from complete ones"
    );
}

/// The edits of the GPT-small check from three forms of the same job:
/// complete, stripped (no `cuda_sync` events, no `cudaEventRecord`) and
/// blind (no `cudaStreamWaitEvent` calls either: nothing in the trace says
/// which stream waited for which, so the inter-stream edges come from
/// lumos_graph's `Rule::ImpliedCollectiveInput` and
/// `Rule::ImpliedCollectiveConsumer` alone). Stripped must agree with
/// complete within 2%, as for GPT-3 15B; blind within the bound below.
#[test]
fn small_model_stripped_and_blind_predict_as_complete_ones() {
    let a = config(&model("gpt-small", None, None), 2, 2, 2, 4);
    let forms = [baseline(&a), baseline(&stripped(&a)), baseline(&blind(&a))];
    let ids: Vec<Prediction<'_>> = forms.iter().map(|b| b.identity()).collect();
    type Edit = fn(Prediction<'_>) -> Prediction<'_>;
    let edits: [(&str, Edit); 7] = [
        ("identity", |p| p),
        ("layers 24", |p| p.with_layers(24).unwrap()),
        ("dp 16", |p| p.with_dp(16).unwrap()),
        ("hidden 3072", |p| p.with_hidden(3072).unwrap()),
        ("pp 4", |p| {
            p.with_pp(4).unwrap().with_microbatches(8).unwrap()
        }),
        ("pp 8", |p| {
            p.with_pp(8).unwrap().with_microbatches(16).unwrap()
        }),
        ("pp 1", |p| {
            p.with_pp(1).unwrap().with_microbatches(2).unwrap()
        }),
    ];
    let (mut worst_stripped, mut worst_blind): (f64, f64) = (0.0, 0.0);
    for (name, edit) in edits {
        let ms: Vec<f64> = ids
            .iter()
            .map(|id| mean_ms(&synth_network(edit(id.clone())).simulate().unwrap().step_ns))
            .collect();
        let diff = |x: f64| (x - ms[0]) / ms[0] * 100.0;
        let (s, b) = (diff(ms[1]), diff(ms[2]));
        println!(
            "gpt-small {name:<12} complete {:8.2} ms  stripped {:8.2} ms ({s:+6.2}%)  blind {:8.2} ms ({b:+6.2}%)",
            ms[0], ms[1], ms[2]
        );
        worst_stripped = worst_stripped.max(s.abs());
        worst_blind = worst_blind.max(b.abs());
    }
    println!("largest |difference|: stripped {worst_stripped:.2}%, blind {worst_blind:.2}%");
    assert!(
        worst_stripped < 2.0,
        "stripped traces {worst_stripped:.2}% from complete ones"
    );
    assert!(
        worst_blind < BLIND_BOUND_PCT,
        "blind traces {worst_blind:.2}% from complete ones"
    );
}

/// How far predictions from traces with no cross-stream evidence may be
/// from those of complete traces (see
/// `small_model_stripped_and_blind_predict_as_complete_ones`): measured
/// 12.1% at most when set (PP 1 +12.1%, hidden 3072 -11.2%), 5.68% on 8
/// December 2026 (hidden 3072; docs/PREDICTION.md
/// section 3.6), with room for the synthesizer's noise. The gap is what
/// the blind form cannot show: the consumers of asynchronous collectives
/// that never bound (the sequence-parallel backward all-gathers and
/// reduce-scatters, the data-parallel buckets: 199 of the job's 522
/// collectives per rank get no consumer edge). A guard against losing the
/// rules, not an accuracy claim.
const BLIND_BOUND_PCT: f64 = 15.0;

/// The micro-batch size, 1 -> 2 and 4 sequences (and back from 4), on
/// the sweep's configuration A: the tokens of every pass grow, the
/// optimizer and the gradient reductions do not.
#[test]
fn micro_batch_size_against_ground_truth() {
    let with_micro_batch = |b: usize| {
        let mut m = model("gpt3-15b", None, None);
        m.micro_batch = b;
        config(&m, 2, 2, 4, 4)
    };
    let mut worst: f64 = 0.0;
    for (from, to) in [(1, 2), (1, 4), (4, 1), (4, 2)] {
        let base = baseline(&with_micro_batch(from));
        assert_eq!(base.config.micro_batch, from as u64, "traced size found");
        let p = synth_network(base.identity())
            .with_micro_batch(to as u64)
            .unwrap();
        let got = mean_ms(&p.simulate().unwrap().step_ns);
        let want = joint_truth_ms(&with_micro_batch(to));
        let err = (got - want) / want * 100.0;
        println!(
            "micro-batch {from} -> {to}: predicted {got:8.1} ms  joint truth {want:8.1} ms  error {err:+6.2}%"
        );
        worst = worst.max(err.abs());
    }
    assert!(worst < 5.0, "worst {worst:.2}%");
}

/// A trace of one micro-batch (a DDP job without gradient accumulation)
/// of one pipeline stage takes a layer edit, which copies no pass, and a
/// micro-batch edit (`one_micro_batch_to_several_against_ground_truth`);
/// a pipeline of two such stages takes neither.
#[test]
fn one_micro_batch_takes_a_layer_edit() {
    let job = |layers: usize| config(&model("gpt-tiny", Some(layers), Some(2048)), 1, 1, 2, 1);
    for (from, to) in [(4, 8), (8, 4)] {
        let base = baseline(&job(from));
        let p = base.identity().with_layers(to as u32).unwrap();
        let got = mean_ms(&p.simulate().unwrap().step_ns);
        let want = truth_ms(&job(to));
        let err = (got - want) / want * 100.0;
        println!("layers {from} -> {to}: predicted {got:.2} ms, truth {want:.2} ms, {err:+.2}%");
        assert!(err.abs() < 2.0, "{from} -> {to}: {err:+.2}%");
    }
    // Two stages: the second's prologue holds its first receive, which
    // nothing couples to the first stage, so the layers and micro-batches
    // stay as traced.
    let two = config(&model("gpt-tiny", Some(4), Some(2048)), 1, 2, 1, 1);
    let base = baseline(&two);
    for e in [
        base.identity().with_layers(8).err(),
        base.identity().with_microbatches(2).err(),
    ] {
        let e = e.expect("a structural edit of two stages of one micro-batch was taken");
        let e = e.to_string();
        assert!(
            e.contains("1 micro-batch traced on a stage of a pipeline of 2 stages"),
            "{e}"
        );
    }
}

/// Two pipeline stages of one micro-batch each (gpt-tiny at hidden 2048,
/// 4 layers, micro-batches of 8 sequences, TP 2 x PP 2 x DP 2): on each
/// stage one gradient bucket fills inside its two layers and one after
/// them, as often as the layers, so the backward layers were found only
/// among the gradient functions (before, no stage had a backward pass,
/// and the hidden size and tensor-parallel edits, which re-time the
/// layers, were 40% long). The pipeline and micro-batches cannot change
/// here (`one_micro_batch_takes_a_layer_edit`), the other edits are taken.
#[test]
fn one_micro_batch_on_two_stages_against_ground_truth() {
    let job = |tp: usize, dp: usize, hidden: usize| {
        let mut preset = model("gpt-tiny", Some(4), Some(hidden));
        preset.micro_batch = 8;
        config(&preset, tp, 2, dp, 1)
    };
    let base = baseline(&job(2, 2, 2048));
    for s in &base.structures {
        assert_eq!(s.report.pass_order, "F1 B1");
        assert_eq!(s.report.layers_per_pass, Some(2));
    }
    // The output layer's backward GEMMs (`[tokens, h] x [h, vocab / tp]`)
    // are the last stage's backward pass's own, before its first layer:
    // they end as a layer's input projection ends (then the final norm
    // and its weights' accumulations), and the layer block was taken from
    // where its repeats began, in the head, until it was taken from where
    // they end (docs/PREDICTION.md, 1.1).
    let vocab_shard: u64 = 51_200 / 2;
    let last = base.structures.last().unwrap();
    let vocab_gemms = |us: &[u32]| {
        us.iter()
            .flat_map(|&u| last.units.units[u as usize].gpu())
            .filter(|&&t| {
                matches!(last.work[t.idx()], WorkClass::Gemm(g) if g.n == vocab_shard || g.k == vocab_shard)
            })
            .count()
    };
    for p in last.steps[0]
        .passes
        .iter()
        .filter(|p| p.kind == PassKind::Backward)
    {
        // (The forward's logits, on the main thread after the forward
        // pass's last layer, are this pass's too.)
        let backward_pre: Vec<u32> = p
            .pre
            .iter()
            .copied()
            .filter(|&u| last.units.units[u as usize].thread != last.steps[0].main)
            .collect();
        assert_eq!(
            vocab_gemms(&backward_pre),
            2,
            "the head's dgrad and wgrad before the layers"
        );
        for l in &p.layers {
            assert_eq!(vocab_gemms(l), 0, "a layer holds the head's GEMMs");
        }
    }
    let id = base.identity();
    // Bounds a little above one run's errors (-2.6%, -0.1%, +0.05%). The
    // tensor-parallel edit was +16.4% while the last stage's receive was
    // left in its prologue and the vocabulary-parallel loss's kernels kept
    // their traced size, +1.5% while the logits' gradient cast outside the
    // loss (`ToCopyBackward0`) did (docs/PREDICTION.md, 3.4). The hidden
    // size's error is the synthesizer's weight-gradient GEMMs, whose
    // `[out, in]` outputs fill 12 to 48% of the SMs at hidden 1024 (its
    // tiles, no split of the tokens' reduction), which the FLOP curve
    // does not see; under it the prediction is 3.6% long (docs, 3.4).
    for (name, p, (tp, dp, hidden), bound) in [
        (
            "hidden 1024",
            id.clone().with_hidden(1024).unwrap(),
            (2, 2, 1024),
            3.0,
        ),
        ("tp 4", id.clone().with_tp(4).unwrap(), (4, 2, 2048), 1.0),
        ("dp 4", id.clone().with_dp(4).unwrap(), (2, 4, 2048), 2.0),
    ] {
        let got = mean_ms(&p.simulate().unwrap().step_ns);
        let want = truth_ms(&job(tp, dp, hidden));
        let err = (got - want) / want * 100.0;
        println!("tp 2 pp 2 dp 2, 1 micro-batch -> {name}: predicted {got:.2} ms, truth {want:.2} ms ({err:+.2}%)");
        assert!(err.abs() < bound, "{name}: {err:+.2}%");
    }
}

/// The question a data-parallel job of one micro-batch asks most: the
/// same global batch over more micro-batches (gradient accumulation), or
/// more micro-batches of the same size. From one micro-batch of 8
/// sequences to 2 x 4, 4 x 2 and 4 x 8 (micro-batches x size), and from
/// 1 x 4 to 2 x 4, with data parallelism (DP 2) and with tensor
/// parallelism (TP 2), against the synthesized jobs at the target. The
/// only forward's own work is told from the step's prologue by its kind
/// (the synthesizer's data loading, host-to-device copies and embedding),
/// and the backward passes before the last carry no gradient reduction
/// (the synthesizer, like Megatron-core with `--overlap-grad-reduce` and
/// PyTorch DDP under `no_sync`, reduces in the last backward only).
/// Tensor-parallel collectives in the backward copies before the last keep
/// their CPU work and the gaps before it: only the data-parallel gradient
/// reduction waits for the last backward (a rule that took every
/// collective's launch for the reduction's made this -8.5%).
#[test]
fn one_micro_batch_to_three_keeps_the_tensor_parallel_launches() {
    for tp in [2, 1] {
        let job = |m| config(&model("gpt-tiny", None, None), tp, 1, 2, m);
        let base = baseline(&job(1));
        let p = base.identity().with_microbatches(3).unwrap();
        let got = mean_ms(&p.simulate().unwrap().step_ns);
        let want = truth_ms(&job(3));
        let err = (got - want) / want * 100.0;
        println!("tp {tp} dp 2: 1 -> 3 micro-batches: predicted {got:.2} ms, truth {want:.2} ms ({err:+.2}%)");
        assert!(err.abs() < 3.0, "tp {tp}: {err:+.2}%");
    }
}

#[test]
fn one_micro_batch_to_several_against_ground_truth() {
    // `after`: the gradients reduced after the backward passes, in the
    // epilogue (Megatron's 2021 DDP), which no copy carries.
    let job = |(tp, dp, after): (usize, usize, bool), m: usize, b: usize| {
        let mut preset = model("gpt-tiny", Some(4), Some(2048));
        preset.micro_batch = b;
        let mut c = config(&preset, tp, 1, dp, m);
        if after {
            c.training.grad_sync = lumos_synth::GradSync::AfterBackward;
        }
        c
    };
    let (mut worst, mut worst_added): (f64, f64) = (0.0, 0.0);
    for (tp, dp, after) in [(1, 2, false), (2, 1, false), (2, 2, false), (1, 2, true)] {
        let job = |m, b| job((tp, dp, after), m, b);
        for ((m0, b0), (m1, b1)) in [
            ((1, 8), (2, 4)),
            ((1, 8), (4, 2)),
            ((1, 8), (4, 8)),
            ((1, 4), (2, 4)),
        ] {
            let base = baseline(&job(m0, b0));
            assert_eq!(base.config.microbatches, 1);
            let mut p = base.identity().with_microbatches(m1 as u32).unwrap();
            if b1 != b0 {
                p = p.with_micro_batch(b1 as u64).unwrap();
            }
            let got = mean_ms(&p.simulate().unwrap().step_ns);
            let want = truth_ms(&job(m1, b1));
            let err = (got - want) / want * 100.0;
            println!(
                "tp {tp} dp {dp}{}: {m0} x {b0} -> {m1} x {b1}: predicted {got:8.2} ms  truth \
                 {want:8.2} ms  error {err:+6.2}%",
                if after { " (reduced after)" } else { "" }
            );
            worst = worst.max(err.abs());
            // The micro-batch size edit alone: where the size changes,
            // most of the error is its own (TP 2, 8 -> 2 sequences:
            // +4.15% of +5.01% on 8 December 2026); what copying the
            // pass adds is bounded apart.
            let alone = if b1 != b0 {
                let p = base.identity().with_micro_batch(b1 as u64).unwrap();
                let got = mean_ms(&p.simulate().unwrap().step_ns);
                let want = truth_ms(&job(m0, b1));
                let alone = (got - want) / want * 100.0;
                println!("    (size alone, {m0} x {b0} -> {m0} x {b1}: error {alone:+6.2}%)");
                alone
            } else {
                0.0
            };
            worst_added = worst_added.max((err - alone).abs());
        }
    }
    assert!(worst < 6.0, "worst {worst:.2}%");
    assert!(
        worst_added < 2.0,
        "copying the pass adds {worst_added:.2}% to the size edit's error"
    );
}

/// The tensor parallelism a run profiled at TP 1 asks about most: TP 2
/// and TP 4 (and 8) from a trace at TP 1, against the synthesized jobs at
/// the target without sequence parallelism (which the prediction does not
/// model). The prediction splits every GEMM, attention kernel and GELU,
/// the projections' weights and the data-parallel gradient bytes, and adds
/// the layers' all-reduces (two a layer in each pass), the embedding's,
/// the loss's three and the output layer's input gradient's from the
/// network model alone, the backward's beside the weight-gradient GEMM,
/// their launches at the CPU cost of the trace's own collectives. Where
/// the trace issued none (GPT small at DP 1) each launch takes
/// `DEFAULT_COLLECTIVE_ISSUE_NS`, measured on the corpus's real traces
/// (92 us, their jobs' median), about three times what the synthesizer's
/// collectives take to issue (29 us, as the DP 2 traces measure): that
/// case is over by 15-20% against the synthesizer, where with a kernel
/// launch per collective it was under by 4-11%; the figure is the real
/// traces', not the synthesizer's. Each bound is a little above its
/// error. Still left out: the vocabulary-parallel embedding's input mask
/// (four small element-wise kernels and a `masked_fill_` at TP > 1). With
/// the backward all-reduces blocking the stream after the input gradient
/// (as first built), GPT-3 15B's layers were +3.61%, +9.61% and +5.99% at
/// TP 2, 4 and 8: the synthesizer, as Megatron, overlaps them.
#[test]
fn tensor_parallelism_from_tp_one_against_ground_truth() {
    struct TpCase {
        name: &'static str,
        layers: Option<usize>,
        dp: usize,
        swiglu: bool,
        /// Bound on |error| (%) at TP 2, 4 and 8.
        bounds: [f64; 3],
    }
    let cases = [
        TpCase {
            name: "gpt-small",
            layers: None,
            dp: 2,
            swiglu: false,
            bounds: [2.0, 2.0, 3.5],
        },
        TpCase {
            name: "gpt-small",
            layers: None,
            dp: 1,
            swiglu: false,
            bounds: [16.0, 21.0, 21.0],
        },
        TpCase {
            name: "gpt-small",
            layers: None,
            dp: 2,
            swiglu: true,
            bounds: [2.0, 2.5, 2.5],
        },
        TpCase {
            name: "gpt-tiny",
            layers: None,
            dp: 2,
            swiglu: false,
            bounds: [6.0, 5.0, 6.0],
        },
        TpCase {
            name: "gpt3-15b",
            layers: Some(6),
            dp: 2,
            swiglu: false,
            bounds: [2.5, 5.0, 2.5],
        },
    ];
    for c in &cases {
        let mut preset = model(c.name, c.layers, None);
        preset.swiglu = c.swiglu;
        let job = |tp: usize| {
            let mut cfg = config(&preset, tp, 1, c.dp, 4);
            cfg.parallel.sequence_parallel = false;
            cfg
        };
        let base = baseline(&job(1));
        let id = base.identity();
        let steps = base.structures[0].steps.len();
        let layers = preset.layers;
        for (tp, bound) in [2u32, 4, 8].into_iter().zip(c.bounds) {
            let p = synth_network(id.clone().with_tp(tp).unwrap());
            let gpu = |st: &lumos_predict::PredictedStage<'_>| {
                st.graph.tasks.iter().filter(|t| t.kind.is_gpu()).count()
            };
            let added = gpu(&p.stages[0]) - gpu(&id.stages[0]);
            // Two all-reduces per layer in each of the 4 forwards and 4
            // backwards of every step; outside the layers, the embedding's
            // and the loss's three in each forward, the output layer's in
            // each backward (the loss's as one kernel).
            let outside = (1 + 1) * 4 + 4;
            assert_eq!(
                added,
                (layers * 4 * 2 * 2 + outside) * steps,
                "{} tp {tp}",
                c.name
            );
            let got = mean_ms(&p.simulate().unwrap().step_ns);
            let joint = joint_truth_ms(&job(tp as usize));
            let err = (got - joint) / joint * 100.0;
            println!(
                "{:<9} {:>2} layers dp {} {:<6} tp 1 -> {tp}: predicted {got:8.2} ms  truth \
                 {joint:8.2} ms  error {err:+6.2}%",
                c.name,
                layers,
                c.dp,
                if c.swiglu { "swiglu" } else { "gelu" }
            );
            assert!(
                err.abs() < bound,
                "{} dp {} tp {tp}: {err:+.2}%",
                c.name,
                c.dp
            );
        }
    }
}
