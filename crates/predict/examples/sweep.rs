//! Synthetic validation: synthesize config A (one rank per stage), predict
//! config B from it, synthesize B and compare iteration times.
use std::path::Path;

use lumos_predict::{Baseline, Input, Prediction, TraceContext};
use lumos_synth::{GpuSpec, ModelPreset, Parallelism, SynthConfig};

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

/// Replayed step time of a synthesized config: slowest stage, mean over steps.
fn truth(cfg: &SynthConfig) -> f64 {
    let ins = inputs(cfg);
    let mut per_step: Vec<i64> = Vec::new();
    for i in &ins {
        let s = lumos_sim::simulate(&i.graph, &Default::default()).unwrap();
        let sp = lumos_sim::step_spans(&i.graph, &s, None);
        for (k, x) in sp.iter().enumerate() {
            let d = x.end_ns - x.start_ns;
            if per_step.len() <= k {
                per_step.push(d)
            } else {
                per_step[k] = per_step[k].max(d)
            }
        }
    }
    per_step.iter().sum::<i64>() as f64 / per_step.len() as f64
}

/// An edit from the base prediction to a target one.
type Edit = Box<dyn for<'a> Fn(&Prediction<'a>) -> Result<Prediction<'a>, String>>;

fn cfg(model: &ModelPreset, tp: usize, pp: usize, dp: usize, m: usize) -> SynthConfig {
    SynthConfig::new(
        model.clone(),
        Parallelism::new(tp, pp, dp, m),
        GpuSpec::h100(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let model = ModelPreset::preset(args.get(1).map(|s| s.as_str()).unwrap_or("gpt3-15b")).unwrap();
    let (tp, pp, dp, m) = (2, 2, 4, 4);
    let a = cfg(&model, tp, pp, dp, m);
    let t0 = std::time::Instant::now();
    let base = Baseline::new(inputs(&a)).unwrap();
    eprintln!("baseline in {:?}; config {}", t0.elapsed(), base.config);
    eprintln!("gemm {:?}", base.gemm);
    eprintln!("net {:?}", base.network.links);
    let which: Vec<String> = args.iter().skip(2).cloned().collect();
    let id = base.identity();
    let o = id.simulate().unwrap();
    let coupled = id.simulate_job(id.job_coupled(true)).unwrap();
    let ta = truth(&a);
    for (st, (a, b)) in o.stages.iter().zip(&coupled.stages).enumerate() {
        println!(
            "stage {st}: replay steps {:?} coupled {:?}",
            a.step_ns, b.step_ns
        );
    }
    if which.iter().any(|w| w == "none") {
        for (label, out) in [("replay", &o), ("coupled", &coupled)] {
            let g = &out.job.graph;
            for (i, t) in g.tasks.iter().enumerate() {
                if let Some(c) = t.collective {
                    let c = &g.collectives[c as usize];
                    if c.name == "send"
                        || c.name == "recv"
                        || (c.name == "allreduce" && c.bytes == Some(4))
                    {
                        let stage = out
                            .job
                            .parts
                            .iter()
                            .position(|p| p.contains(&(i as u32)))
                            .unwrap();
                        println!(
                            "{label} stage {stage} {} {:?} start {:.3} end {:.3} dur {:.3}",
                            c.name,
                            c.seq,
                            out.schedule.start_ns[i] as f64 / 1e6,
                            out.schedule.end_ns[i] as f64 / 1e6,
                            t.duration_ns as f64 / 1e6
                        );
                    }
                }
            }
        }
    }
    println!(
        "A {}: replay {:.1} ms, identity {:.1} ms, coupled identity {:.1} ms",
        base.config,
        ta / 1e6,
        o.mean_step_ns() / 1e6,
        coupled.mean_step_ns() / 1e6
    );
    let mut cases: Vec<(String, SynthConfig, Edit)> = Vec::new();
    for d in [8u32, 16, 32] {
        cases.push((
            format!("dp{d}"),
            cfg(&model, tp, pp, d as usize, m),
            Box::new(move |p| p.with_dp(d)),
        ));
    }
    for l in [64u32, 96] {
        let mut mm = model.clone();
        mm.layers = l as usize;
        cases.push((
            format!("layers{l}"),
            cfg(&mm, tp, pp, dp, m),
            Box::new(move |p| p.with_layers(l)),
        ));
    }
    for h in [9216u64, 12288] {
        let mut mm = model.clone();
        mm.hidden = h as usize;
        mm.ffn_hidden = 4 * h as usize;
        cases.push((
            format!("hidden{h}"),
            cfg(&mm, tp, pp, dp, m),
            Box::new(move |p| p.with_hidden(h)),
        ));
    }
    for p2 in [4u32, 8] {
        let mb = 2 * p2;
        cases.push((
            format!("pp{p2}"),
            cfg(&model, tp, p2 as usize, dp, mb as usize),
            Box::new(move |p| p.with_pp(p2)?.with_microbatches(mb)),
        ));
    }
    cases.push((
        "mb8".into(),
        cfg(&model, tp, pp, dp, 8),
        Box::new(|p| p.with_microbatches(8)),
    ));
    cases.push((
        "tp4".into(),
        cfg(&model, 4, pp, dp, m),
        Box::new(|p| p.with_tp(4)),
    ));
    let mut errs = Vec::new();
    for (name, b, f) in cases {
        if !which.is_empty() && !which.contains(&name) {
            continue;
        }
        let t0 = std::time::Instant::now();
        let pred = match f(&id) {
            Ok(p) => p,
            Err(e) => {
                println!("{name}: {e}");
                continue;
            }
        };
        let out = match pred.simulate() {
            Ok(o) => o,
            Err(e) => {
                println!("{name}: {e}");
                continue;
            }
        };
        let dt = t0.elapsed();
        let tb = truth(&b);
        let err = (out.mean_step_ns() - tb) / tb * 100.0;
        errs.push(err.abs());
        let dropped: usize = pred.stages.iter().map(|s| s.dropped_edges).sum();
        println!("{name:10} predicted {:8.1} ms  truth {:8.1} ms  error {:+6.2}%  (stages {:?}, dropped edges {dropped}, {:?})", out.mean_step_ns() / 1e6, tb / 1e6, err,
            out.stages.iter().map(|s| format!("{:.1}", s.step_ns.iter().sum::<i64>() as f64 / s.step_ns.len() as f64 / 1e6)).collect::<Vec<_>>(), dt);
    }
    if !errs.is_empty() {
        println!(
            "mean |error| {:.2}% over {}",
            errs.iter().sum::<f64>() / errs.len() as f64,
            errs.len()
        );
    }
}
