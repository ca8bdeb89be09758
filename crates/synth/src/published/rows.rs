//! The rows: every usable measurement of `shared/docs/published-runs.md`
//! and the Lumos paper's nine GPT-3 15B runs, each as the configuration
//! the source gives, with what it leaves out filled from Megatron's
//! defaults or the same source's other runs (written in `assumed`).

use lumos_models::Cluster;

use super::{Measure, Param, Row, Split};
use crate::config::{ModelPreset, Parallelism, SynthConfig};
use crate::training::{Attention, GradDtype, GradSync, Precision, Recompute, Training};

/// A GPT model of the SC21 / Korthikanti / BLOOM family: FFN 4h, the
/// given vocabulary, sequence 2048.
fn gpt(name: &str, layers: usize, hidden: usize, heads: usize, vocab: usize) -> ModelPreset {
    let mut m = ModelPreset::gpt(name, layers, hidden, heads);
    m.vocab = vocab;
    m
}

/// A Llama model: SwiGLU with FFN `ffn`, grouped-query attention with
/// `kv` heads.
fn llama(
    name: &str,
    layers: usize,
    hidden: usize,
    heads: usize,
    kv: usize,
    ffn: usize,
) -> ModelPreset {
    let mut m = ModelPreset::gpt(name, layers, hidden, heads);
    m.kv_heads = kv;
    m.ffn_hidden = ffn;
    m.swiglu = true;
    m
}

/// The layout and batch of one row.
#[derive(Clone, Copy)]
struct Layout {
    tp: usize,
    pp: usize,
    dp: usize,
    v: usize,
    mbs: usize,
    gbs: usize,
    seq: usize,
}

const fn layout(tp: usize, pp: usize, dp: usize, v: usize, mbs: usize, gbs: usize) -> Layout {
    Layout {
        tp,
        pp,
        dp,
        v,
        mbs,
        gbs,
        seq: 2048,
    }
}

/// Builds one row; panics on a layout the batch does not divide, which
/// the tests catch (the rows are fixed data).
#[allow(clippy::too_many_arguments)]
fn row(
    source: &'static str,
    label: &str,
    mut model: ModelPreset,
    l: Layout,
    cluster: &Cluster,
    training: Training,
    seconds: f64,
    assumed: &'static str,
) -> Row {
    model.micro_batch = l.mbs;
    model.seq_len = l.seq;
    let mut p = Parallelism::new(l.tp, l.pp, l.dp, 1);
    p.microbatches = p
        .microbatches_for(l.gbs, l.mbs)
        .unwrap_or_else(|| panic!("{source} {label}: batch {} does not divide", l.gbs));
    p.virtual_stages = l.v;
    p.sequence_parallel = false;
    let mut cfg = SynthConfig::on_cluster(model, p, cluster);
    cfg.training = training;
    cfg.noise = 0.0;
    Row {
        source,
        label: label.to_owned(),
        config: cfg,
        cluster: cluster.name,
        measure: Measure::Iteration,
        published_s: seconds,
        split: Split::Validation,
        assumed,
    }
}

/// SC21's runs: FP16, full recomputation of every layer, Megatron's 2021
/// unfused attention, scatter/gather, no sequence parallelism; PyTorch DDP
/// (overlapped) for PP = 1, Megatron's local DDP (after the backward)
/// otherwise, both on FP16 gradients; `torch.cuda.synchronize()` after
/// every pipeline transfer (the 2021 `_communicate`, unconditionally),
/// whose sends hold the compute stream (`overlap_p2p_comm` came in May
/// 2023).
fn sc21(pp: usize) -> Training {
    Training {
        precision: Precision::Fp16,
        recompute: Recompute::Full,
        attention: Attention::Unfused,
        grad_sync: if pp == 1 {
            GradSync::Overlapped
        } else {
            GradSync::AfterBackward
        },
        grad_dtype: GradDtype::Half,
        p2p_scatter_gather: true,
        p2p_overlap: false,
        p2p_sync: true,
        ..Training::default()
    }
}

const SC21_ASSUMED: &str = "MBS and v from the authors' script; FP16 grads (Megatron 2021 default); vocab 51,200 as stated";

fn sc21_table1(out: &mut Vec<Row>) {
    let s = Cluster::selene();
    let t1 = "SC21 Table 1";
    let rows: [(&str, usize, usize, usize, Layout, f64); 10] = [
        ("1.7B", 24, 2304, 24, layout(1, 1, 32, 1, 16, 512), 3.53),
        ("3.6B", 30, 3072, 32, layout(2, 1, 32, 1, 16, 512), 3.70),
        ("7.5B", 36, 4096, 32, layout(4, 1, 32, 1, 16, 512), 3.70),
        ("18.4B", 40, 6144, 48, layout(8, 1, 32, 1, 8, 1024), 9.40),
        ("39.1B", 48, 8192, 64, layout(8, 2, 32, 1, 4, 1536), 14.45),
        ("76.1B", 60, 10240, 80, layout(8, 4, 32, 3, 2, 1792), 16.06),
        ("145.6B", 80, 12288, 96, layout(8, 8, 24, 2, 2, 2304), 24.82),
        (
            "310.1B",
            96,
            16384,
            128,
            layout(8, 16, 15, 2, 1, 2160),
            37.61,
        ),
        (
            "529.6B",
            105,
            20480,
            128,
            layout(8, 35, 9, 3, 1, 2520),
            54.08,
        ),
        (
            "1008B",
            128,
            25600,
            160,
            layout(8, 64, 6, 1, 1, 3072),
            102.63,
        ),
    ];
    for (label, layers, h, heads, l, secs) in rows {
        let pp = l.pp;
        let m = gpt(label, layers, h, heads, 51_200);
        out.push(row(t1, label, m, l, &s, sc21(pp), secs, SC21_ASSUMED));
    }
}

fn sc21_table2(out: &mut Vec<Row>) {
    let s = Cluster::selene();
    let t2 = "SC21 Table 2 (PTD-P)";
    let a = "TP 8 x PP 12 for 175B (paper gives only 96); v = 2 for 175B, 3 for 530B as in Table 1 (paper: interleaved throughout)";
    for (dp, secs) in [(4, 76.8), (8, 39.4), (16, 20.8)] {
        let m = gpt("174.6B", 96, 12288, 96, 51_200);
        let label = format!("174.6B {} GPUs", 96 * dp);
        out.push(row(
            t2,
            &label,
            m,
            layout(8, 12, dp, 2, 1, 1536),
            &s,
            sc21(12),
            secs,
            a,
        ));
    }
    for (dp, secs) in [(2, 206.2), (4, 105.6), (8, 55.5)] {
        let m = gpt("529.6B", 105, 20480, 128, 51_200);
        let label = format!("529.6B {} GPUs", 280 * dp);
        out.push(row(
            t2,
            &label,
            m,
            layout(8, 35, dp, 3, 1, 2240),
            &s,
            sc21(35),
            secs,
            a,
        ));
    }
}

/// Korthikanti et al.'s runs: full recomputation without sequence
/// parallelism, or ("present work") selective recomputation with it;
/// Megatron's 2022 unfused attention; the 2022 `_communicate` still
/// synchronizes the device after every pipeline transfer and holds the
/// compute stream until its sends finish (no `overlap_p2p_comm` yet).
fn korthikanti(present: bool) -> Training {
    Training {
        recompute: if present {
            Recompute::Selective
        } else {
            Recompute::Full
        },
        attention: Attention::Unfused,
        grad_sync: GradSync::AfterBackward,
        p2p_scatter_gather: true,
        p2p_overlap: false,
        p2p_sync: true,
        ..Training::default()
    }
}

fn sp(mut r: Row, on: bool) -> Row {
    r.config.parallel.sequence_parallel = on;
    r
}

fn korthikanti_table5(out: &mut Vec<Row>) {
    let s = Cluster::selene();
    let t5 = "Korthikanti Table 5";
    let a = "BF16 (paper: mixed precision); 1T without interleaving (v not stated)";
    let models: [(&str, usize, usize, usize, Layout, f64, f64); 4] = [
        ("22B", 48, 6144, 64, layout(8, 1, 1, 1, 4, 4), 1.42, 1.10),
        (
            "175B",
            96,
            12288,
            96,
            layout(8, 8, 1, 3, 1, 64),
            18.13,
            13.75,
        ),
        (
            "530B",
            105,
            20480,
            128,
            layout(8, 35, 1, 3, 1, 280),
            49.05,
            37.83,
        ),
        (
            "1T",
            128,
            25600,
            160,
            layout(8, 64, 1, 1, 1, 512),
            94.42,
            71.49,
        ),
    ];
    for (name, layers, h, heads, l, full, present) in models {
        let m = gpt(name, layers, h, heads, 51_200);
        let l2 = l;
        let label = format!("{name} full recompute");
        out.push(row(
            t5,
            &label,
            m.clone(),
            l,
            &s,
            korthikanti(false),
            full,
            a,
        ));
        let label = format!("{name} selective + SP");
        let r = row(t5, &label, m, l2, &s, korthikanti(true), present, a);
        out.push(sp(r, true));
    }
    let m = gpt("530B", 105, 20480, 128, 51_200);
    let r = row(
        t5,
        "530B selective + SP, DP 8",
        m,
        layout(8, 35, 8, 3, 1, 2240),
        &s,
        korthikanti(true),
        39.15,
        "quoted in the text: no overlap of gradient all-reduces; v = 3 as in the DP 1 run",
    );
    out.push(sp(r, true));
}

fn korthikanti_table4(out: &mut Vec<Row>) {
    let s = Cluster::selene();
    let t4 = "Korthikanti Table 4 (one layer, fwd + bwd)";
    let cases: [(&str, bool, Recompute, f64, f64); 5] = [
        ("baseline, no recompute", false, Recompute::None, 7.7, 11.9),
        ("sequence parallelism", true, Recompute::None, 7.2, 11.8),
        ("full recompute", false, Recompute::Full, 7.7, 19.5),
        (
            "selective recompute",
            false,
            Recompute::Selective,
            7.7,
            13.2,
        ),
        (
            "selective + sequence",
            true,
            Recompute::Selective,
            7.2,
            13.1,
        ),
    ];
    for (label, on, recompute, fwd, bwd) in cases {
        let m = gpt("22B", 48, 6144, 64, 51_200);
        let t = Training {
            recompute,
            ..korthikanti(false)
        };
        let a = "the 22B layout of Table 3 (TP 8, MBS 4)";
        let mut r = sp(
            row(
                t4,
                label,
                m,
                layout(8, 1, 1, 1, 4, 4),
                &s,
                t,
                (fwd + bwd) / 1e3,
                a,
            ),
            on,
        );
        r.measure = Measure::Layer {
            forward_s: fwd / 1e3,
            backward_s: bwd / 1e3,
        };
        out.push(r);
    }
}

/// Megatron-DeepSpeed as BLOOM ran it: BF16, full recomputation, ZeRO-1
/// (the BF16 optimizer's own) on FP32 gradients reduced after the
/// pipeline, no sequence parallelism; the pipeline engine sends
/// activations and gradients partitioned over the tensor-parallel ranks
/// (`is_pipe_partitioned = is_model_parallel` in DeepSpeed's
/// `runtime/pipe/engine.py`), as SC21's scatter/gather, with blocking
/// `dist.send` / `dist.recv` and no device synchronization after them
/// (`runtime/pipe/p2p.py`: only its unused asynchronous path syncs).
fn deepspeed(embedding_as_layer: bool) -> Training {
    Training {
        recompute: Recompute::Full,
        attention: Attention::Unfused,
        grad_sync: GradSync::AfterBackward,
        grad_dtype: GradDtype::Fp32,
        overlap_param_gather: false,
        embedding_as_layer,
        p2p_scatter_gather: true,
        p2p_overlap: false,
        p2p_sync: false,
        ..Training::default()
    }
}

fn zero1(mut r: Row) -> Row {
    r.config.parallel.distributed_optimizer = true;
    r
}

fn bloom(out: &mut Vec<Row>) {
    let jz = Cluster::jean_zay();
    let m = gpt("BLOOM-176B", 70, 14336, 112, 250_880);
    let production = Training {
        launch_blocking: true,
        ..deepspeed(true)
    };
    out.push(zero1(row(
        "BLOOM-176B production",
        "TP4 PP12 DP8 MBS2",
        m,
        layout(4, 12, 8, 1, 2, 2048),
        &jz,
        production,
        104.70,
        "CUDA_LAUNCH_BLOCKING=1, BF16, ZeRO-1 from tr11-176B-ml.slurm; ALiBi costs nothing extra here",
    )));
    let pre = "BLOOM topology search (48 nodes)";
    let a = "64 heads, vocab 250,880, partitioning as the production run; FP16 with DeepSpeed ZeRO-1 and no CUDA_LAUNCH_BLOCKING as that month's tr11-200B-ml.slurm";
    let search = Training {
        precision: Precision::Fp16,
        grad_dtype: GradDtype::Half,
        ..deepspeed(true)
    };
    let rows: [(&str, usize, usize, usize, usize, usize, f64); 19] = [
        ("02-21 181B", 72, 14336, 4, 12, 1, 143.31),
        ("02-21 181B", 72, 14336, 4, 12, 2, 134.02),
        ("02-21 181B", 72, 14336, 4, 12, 4, 123.69),
        ("02-21 181B", 72, 14336, 4, 12, 8, 129.26),
        ("02-21 181B", 72, 14336, 8, 6, 1, 139.82),
        ("02-21 181B", 72, 14336, 8, 6, 2, 131.02),
        ("02-21 181B", 72, 14336, 8, 6, 4, 121.48),
        ("02-21 196B", 84, 13824, 4, 12, 2, 143.89),
        ("02-21 196B", 84, 13824, 4, 12, 4, 133.12),
        ("02-21 196B", 84, 13824, 8, 6, 2, 141.41),
        ("02-21 196B", 84, 13824, 8, 6, 4, 130.31),
        ("02-23 177B", 96, 12288, 8, 6, 2, 136.73),
        ("02-23 177B", 96, 12288, 8, 6, 4, 122.96),
        ("02-23 182B", 84, 13312, 4, 12, 4, 125.52),
        ("02-23 182B", 84, 13312, 8, 6, 2, 135.55),
        ("02-23 182B", 84, 13312, 8, 6, 4, 122.93),
        ("02-23 182B", 78, 13824, 8, 6, 4, 121.28),
        ("02-23 181B", 72, 14336, 4, 12, 4, 123.79),
        ("02-23 181B", 72, 14336, 8, 6, 4, 120.85),
    ];
    for (name, layers, h, dp, pp, mbs, secs) in rows {
        let m = gpt(name, layers, h, 64, 250_880);
        let label = format!("{name} L{layers} DP{dp} PP{pp} MBS{mbs}");
        let l = layout(8, pp, dp, 1, mbs, 2048);
        out.push(zero1(row(pre, &label, m, l, &jz, search, secs, a)));
    }
}

fn mt_nlg(out: &mut Vec<Row>) {
    let s = Cluster::selene();
    let a = "MBS 1, no interleaving (DeepSpeed pipeline), vocab 51,200, recompute, BF16 and ZeRO-1 as BLOOM's stack";
    for (dp, secs) in [(8, 60.1), (10, 50.2), (12, 44.4)] {
        let m = gpt("MT-NLG 530B", 105, 20480, 128, 51_200);
        let label = format!("TP8 PP35 DP{dp}");
        let l = layout(8, 35, dp, 1, 1, 1920);
        out.push(zero1(row(
            "MT-NLG",
            &label,
            m,
            l,
            &s,
            deepspeed(false),
            secs,
            a,
        )));
    }
}

/// NeMo's performance recipes: FP8, flash attention, sequence
/// parallelism, the distributed optimizer with overlapped gradient
/// reduction and parameter gathering, tensor-parallel communication under
/// the GEMMs, asynchronous pipeline sends, no recomputation.
fn nemo() -> Training {
    Training {
        precision: Precision::Fp8,
        tp_comm_overlap: true,
        p2p_overlap: true,
        ..Training::default()
    }
}

fn nemo_row(
    source: &'static str,
    label: &str,
    m: ModelPreset,
    l: Layout,
    secs: f64,
    a: &'static str,
) -> Row {
    let mut r = row(source, label, m, l, &Cluster::dgx_h100(), nemo(), secs, a);
    r.config.parallel.sequence_parallel = true;
    r.config.parallel.distributed_optimizer = true;
    r
}

fn nemo_rows(out: &mut Vec<Row>) {
    let n = "NeMo 24.07 (H100 FP8)";
    let a = "public model shapes; DGX H100 network; no recomputation (not stated)";
    let gpt3 = |name: &str, layers, h, heads, tp: usize| {
        // NeMo pads GPT-2's 50,257 tokens to a multiple of 128 x tp.
        let pad = 128 * tp;
        gpt(name, layers, h, heads, 50_257usize.div_ceil(pad) * pad)
    };
    let r = nemo_row(
        n,
        "GPT3-5B",
        gpt3("GPT3-5B", 24, 4096, 32, 1),
        layout(1, 1, 64, 1, 4, 2048),
        2.80,
        a,
    );
    out.push(r);
    out.push(nemo_row(
        n,
        "GPT3-20B",
        gpt3("GPT3-20B", 44, 6144, 48, 2),
        layout(2, 1, 32, 1, 2, 256),
        1.40,
        a,
    ));
    out.push(nemo_row(
        n,
        "GPT3-175B 128 GPUs",
        gpt3("GPT3-175B", 96, 12288, 96, 4),
        layout(4, 8, 4, 6, 1, 256),
        5.72,
        a,
    ));
    out.push(nemo_row(
        n,
        "GPT3-175B 512 GPUs",
        gpt3("GPT3-175B", 96, 12288, 96, 4),
        layout(4, 8, 16, 6, 2, 2048),
        9.93,
        a,
    ));
    let seq = |mut l: Layout, s: usize| {
        l.seq = s;
        l
    };
    let mut l7 = llama("LLAMA2-7B", 32, 4096, 32, 32, 11008);
    l7.vocab = 32_000;
    out.push(nemo_row(
        n,
        "LLAMA2-7B",
        l7,
        seq(layout(1, 1, 8, 1, 1, 128), 4096),
        3.87,
        a,
    ));
    let mut l13 = llama("LLAMA2-13B", 40, 5120, 40, 40, 13824);
    l13.vocab = 32_000;
    out.push(nemo_row(
        n,
        "LLAMA2-13B",
        l13,
        seq(layout(1, 4, 4, 10, 1, 128), 4096),
        3.76,
        a,
    ));
    let mut l70 = llama("LLAMA2-70B", 80, 8192, 64, 8, 28672);
    l70.vocab = 32_000;
    out.push(nemo_row(
        n,
        "LLAMA2-70B",
        l70,
        seq(layout(4, 4, 4, 20, 1, 128), 4096),
        4.74,
        a,
    ));
    let mut l3 = llama("LLAMA3-70B", 80, 8192, 64, 8, 28672);
    l3.vocab = 128_256;
    let b = "Megatron-Bridge 25.11 (H100 FP8)";
    out.push(nemo_row(
        b,
        "LLAMA3_70B",
        l3,
        seq(layout(4, 8, 2, 5, 1, 128), 8192),
        10.23,
        a,
    ));
}

/// The Lumos paper's stack: NVIDIA's MLPerf GPT-3 on NeMo (the paper's
/// setup section) runs the non-interleaved 1F1B through Megatron-core with
/// NeMo's `batch_p2p_comm` default (`self.cfg.get('batch_p2p_comm',
/// True)`) and Megatron-core's `batch_p2p_sync = True`: a device
/// synchronization after every pipeline transfer (Megatron's default, not
/// yet the synthesizer's: docs/SYNTH.md, "Pipeline transfers"). The rest
/// is the synthesizer's defaults.
fn lumos_training() -> Training {
    Training {
        p2p_sync: true,
        ..Training::default()
    }
}

/// The Lumos paper's GPT-3 15B runs on H100 (method.md section 6):
/// micro-batches = TP x PP of one sequence each, the synthesizer's
/// defaults otherwise.
fn lumos(out: &mut Vec<Row>) {
    let src = "Lumos GPT-3 15B (H100)";
    let a = "MBS 1, seq 2048, BF16 and the rest of the synthesizer's defaults (the paper gives the layout only)";
    let runs: [(usize, usize, usize, f64); 9] = [
        (2, 2, 8, 0.797),
        (2, 2, 16, 0.813),
        (2, 2, 32, 0.864),
        (2, 4, 4, 0.872),
        (2, 8, 4, 1.446),
        (2, 16, 4, 1.785),
        (2, 4, 8, 0.888),
        (2, 8, 8, 1.010),
        (2, 4, 16, 1.336),
    ];
    for (tp, pp, dp, secs) in runs {
        let m = ModelPreset::preset("gpt3-15b").expect("a preset");
        let label = format!("{tp}x{pp}x{dp}");
        let mut r = row(
            src,
            &label,
            m,
            layout(tp, pp, dp, 1, 1, tp * pp * dp),
            &Cluster::dgx_h100(),
            lumos_training(),
            secs,
            a,
        );
        r.config.parallel.sequence_parallel = true;
        if (tp, pp, dp) == (2, 2, 8) {
            r.split = Split::Fit(Param::H100Gemm);
        }
        out.push(r);
    }
}

/// The parameter a published-runs.md row's time depends on.
fn param_of(r: &Row) -> Param {
    match (r.config.gpu.name, r.config.training.precision) {
        ("a100", _) => Param::A100Gemm,
        (_, Precision::Fp8) => Param::H100Fp8Gemm,
        _ => Param::H100Gemm,
    }
}

/// Every row, in the order of the sources. Of the published-runs.md rows
/// of each parameter, every second one (the 2nd, 4th, ...) fits it and the
/// others validate; the Lumos runs, the only H100 BF16 rows, fit it with
/// their base-like configuration only (2x2x8), so that eight of nine
/// remain a test.
pub(super) fn all() -> Vec<Row> {
    let mut out = Vec::new();
    sc21_table1(&mut out);
    sc21_table2(&mut out);
    korthikanti_table4(&mut out);
    korthikanti_table5(&mut out);
    bloom(&mut out);
    mt_nlg(&mut out);
    nemo_rows(&mut out);
    let mut seen = std::collections::HashMap::new();
    for r in &mut out {
        let p = param_of(r);
        let n = seen.entry(p).or_insert(0usize);
        if *n % 2 == 1 {
            r.split = Split::Fit(p);
        }
        *n += 1;
    }
    lumos(&mut out);
    out
}

/// Published measurements left out, and why.
pub(super) const EXCLUDED: &[(&str, &str)] = &[
    (
        "SC21 Table 2, ZeRO-3 rows",
        "DeepSpeed ZeRO-3 (parameters sharded and gathered per layer) is not modelled",
    ),
    (
        "SC21 section 5.8 and 5.1 quotes",
        "GPU count, batch or TP/PP not given",
    ),
    (
        "Korthikanti Appendix C (micro-batch-level recompute)",
        "no iteration times",
    ),
    (
        "Llama 3 405B, Table 4",
        "FSDP and context parallelism are not modelled, and the FLOP convention (hence the iteration time) is unknown",
    ),
    (
        "NeMo 24.07 LLAMA3-8B and LLAMA3-70B; Megatron-Bridge LLAMA3.1_405B",
        "context parallelism (CP 2) is not modelled",
    ),
    (
        "BLOOM 02-20 topology tables",
        "left out of published-runs.md itself (TFLOP/s on another basis)",
    ),
];
