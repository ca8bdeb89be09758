//! Synthetic validation of `lumos predict`, printed as the Markdown tables
//! of docs/PREDICTION.md: synthesize configuration A (one rank per pipeline
//! stage), predict each configuration B from it, synthesize B, and compare
//! the predicted iteration time with B's traces replayed one by one (the
//! traces' own times) and jointly (stages coupled, as predictions are).
//! The predictions are told the synthesized network (DGX H100), as the
//! ground-truth tests are.
//!
//! ```sh
//! cargo run --release -p lumos-predict --example sweep            # GPT-3 15B
//! cargo run --release -p lumos-predict --example sweep gpt-small
//! ```
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job
use std::path::Path;
use std::time::Instant;

use lumos_models::GpuSpec;
use lumos_predict::{Baseline, Input, PredictError, Prediction, TraceContext};
use lumos_synth::{ModelPreset, Parallelism, SynthConfig};

fn inputs(cfg: &SynthConfig) -> Vec<Input> {
    cfg.selected_ranks()
        .into_iter()
        .map(|r| {
            let text = lumos_synth::synthesize_rank(cfg, r).unwrap();
            let trace =
                lumos_trace::read_bytes(Path::new(&format!("rank{r}.json")), text.as_bytes())
                    .unwrap();
            let (graph, measured, _) = lumos_graph::build(&trace);
            let ctx = TraceContext::from_trace(&trace, &measured);
            Input {
                name: format!("rank{r}"),
                graph,
                measured,
                ctx,
            }
        })
        .collect()
}

fn mean_ms(v: &[i64]) -> f64 {
    v.iter().sum::<i64>() as f64 / v.len().max(1) as f64 / 1e6
}

/// B's traces replayed one by one (slowest stage per step) and jointly.
fn truths(cfg: &SynthConfig) -> (f64, f64) {
    let base = Baseline::new(inputs(cfg)).unwrap();
    let id = base.identity();
    let alone = mean_ms(&id.simulate().unwrap().step_ns);
    let joint = mean_ms(&id.simulate_job(id.job_coupled(true)).unwrap().step_ns);
    (alone, joint)
}

/// An edit from the base prediction to a target one.
type Edit = Box<dyn for<'a> Fn(&Prediction<'a>) -> Result<Prediction<'a>, PredictError>>;

struct Case {
    name: String,
    /// tp x pp x dp, as the paper writes it.
    layout: String,
    b: SynthConfig,
    edit: Edit,
}

fn cfg(model: &ModelPreset, tp: usize, pp: usize, dp: usize, m: usize) -> SynthConfig {
    SynthConfig::new(
        model.clone(),
        Parallelism::new(tp, pp, dp, m),
        GpuSpec::h100(),
    )
}

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "gpt3-15b".into());
    let model = ModelPreset::preset(&name).unwrap();
    let (tp, pp, dp, m) = if name == "gpt3-15b" {
        (2, 2, 4, 4)
    } else {
        (2, 2, 2, 4)
    };
    let a = cfg(&model, tp, pp, dp, m);
    let t0 = Instant::now();
    let base = Baseline::new(inputs(&a)).unwrap();
    let base_s = t0.elapsed().as_secs_f64();
    // The synthesized jobs run on a DGX H100 network whose rings use every
    // NIC of a node, which A's traces (data-parallel groups inside a node)
    // cannot show: the predictions are told it, as `lumos predict
    // --network` would be and as `tests/ground_truth.rs` does.
    let id = base
        .identity()
        .with_network(
            lumos_models::Cluster::dgx_h100().network,
            "synthesized (dgx-h100)".into(),
        )
        .unwrap();
    let (a_alone, a_joint) = truths(&a);
    println!(
        "A = {name} {tp}x{pp}x{dp} (tp x pp x dp), {m} micro-batches, H100 preset: traces {a_alone:.1} ms, \
         joint replay {a_joint:.1} ms ({:+.2}%); discovery and calibration {base_s:.2} s",
        (a_joint - a_alone) / a_alone * 100.0
    );
    println!("GEMM fit: {:?}", base.gemm);
    for l in &base.network.links {
        println!("network fit: {l:?}");
    }
    println!();
    let mut cases: Vec<Case> = Vec::new();
    let mut add = |n: &str, tp2: usize, pp2: usize, dp2: usize, layers: usize, hidden: usize| {
        let mut mm = model.clone();
        mm.layers = layers;
        mm.hidden = hidden;
        mm.ffn_hidden = 4 * hidden;
        let micro = if pp2 == pp { m } else { tp2 * pp2 };
        let (l0, h0) = (model.layers, model.hidden);
        cases.push(Case {
            name: n.into(),
            layout: format!("{tp2}x{pp2}x{dp2}"),
            b: cfg(&mm, tp2, pp2, dp2, micro),
            edit: Box::new(move |p| {
                let mut p = p.clone();
                if pp2 != pp {
                    p = p.with_pp(pp2 as u32)?.with_microbatches(micro as u32)?;
                }
                if dp2 != dp {
                    p = p.with_dp(dp2 as u32)?;
                }
                if layers != l0 {
                    p = p.with_layers(layers as u32)?;
                }
                if hidden != h0 {
                    p = p.with_hidden(hidden as u64)?;
                }
                if tp2 != tp {
                    p = p.with_tp(tp2 as u32)?;
                }
                Ok(p)
            }),
        });
    };
    let (l, h) = (model.layers, model.hidden);
    for d in [2 * dp, 4 * dp, 8 * dp] {
        add(&format!("dp {d}"), tp, pp, d, l, h);
    }
    for (x, y) in [(4, 3), (2, 1)] {
        add(&format!("layers {}", l * x / y), tp, pp, dp, l * x / y, h);
    }
    for (x, y) in [(3, 2), (2, 1)] {
        add(&format!("hidden {}", h * x / y), tp, pp, dp, l, h * x / y);
    }
    for p2 in [4, 8] {
        add(&format!("pp {p2}"), tp, p2, dp, l, h);
    }
    if l >= 16 {
        add("pp 16", tp, 16, dp, l, h);
    }
    add("pp 4, dp x2", tp, 4, 2 * dp, l, h);
    add("pp 8, dp x2", tp, 8, 2 * dp, l, h);
    add("pp 4, dp x4", tp, 4, 4 * dp, l, h);
    add("tp 4", 4, pp, dp, l, h);
    add("pp 1", tp, 1, dp, l, h);
    println!("| B | tp x pp x dp | traces (ms) | joint replay (ms) | predicted (ms) | error vs traces | error vs joint replay | prediction time (s) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    let (mut e1, mut e2) = (Vec::new(), Vec::new());
    for c in cases {
        let t0 = Instant::now();
        let out = (c.edit)(&id).and_then(|p| p.simulate().map(|o| o.mean_step_ns()));
        let secs = t0.elapsed().as_secs_f64();
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                println!("| {} | {} | | | | failed: {e} | | |", c.name, c.layout);
                continue;
            }
        };
        let got = out / 1e6;
        let (alone, joint) = truths(&c.b);
        let (x, y) = ((got - alone) / alone * 100.0, (got - joint) / joint * 100.0);
        e1.push(x.abs());
        e2.push(y.abs());
        println!(
            "| {} | {} | {alone:.1} | {joint:.1} | {got:.1} | {x:+.2}% | {y:+.2}% | {secs:.2} |",
            c.name, c.layout
        );
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    println!(
        "\nmean |error| {:.2}% (max {:.2}%) against the traces, {:.2}% (max {:.2}%) against their joint replay, {} configurations",
        mean(&e1),
        max(&e1),
        mean(&e2),
        max(&e2),
        e1.len()
    );
}
