//! Shared helpers: synthesized inputs, their replayed truth, and
//! rediscovery of a predicted stage's structure.
#![allow(dead_code)]

use std::path::Path;

use lumos_graph::{Measured, Span};
use lumos_models::GpuSpec;
use lumos_predict::{discover, Baseline, Input, Outcome, Prediction, Structure, TraceContext};
use lumos_synth::{ModelPreset, Parallelism, SynthConfig};

/// A synthesized job, one rank per stage.
pub fn config(model: &ModelPreset, tp: usize, pp: usize, dp: usize, m: usize) -> SynthConfig {
    SynthConfig::new(
        model.clone(),
        Parallelism::new(tp, pp, dp, m),
        GpuSpec::h100(),
    )
}

/// A preset with other layers, hidden size (FFN 4x) or both.
pub fn model(name: &str, layers: Option<usize>, hidden: Option<usize>) -> ModelPreset {
    let mut m = ModelPreset::preset(name).unwrap();
    if let Some(l) = layers {
        m.layers = l;
    }
    if let Some(h) = hidden {
        m.hidden = h;
        m.ffn_hidden = 4 * h;
    }
    m
}

/// The traced inputs of a synthesized job: one per selected rank.
pub fn inputs(cfg: &SynthConfig) -> Vec<Input> {
    cfg.selected_ranks()
        .into_iter()
        .map(|r| {
            let text = lumos_synth::synthesize_rank(cfg, r).unwrap();
            let name = format!("rank{r}.json");
            let trace = lumos_trace::read_bytes(Path::new(&name), text.as_bytes()).unwrap();
            input(&trace)
        })
        .collect()
}

/// One input from a read trace.
pub fn input(trace: &lumos_trace::Trace) -> Input {
    let (graph, measured, _) = lumos_graph::build(trace);
    let ctx = TraceContext::from_trace(trace, &measured);
    Input {
        name: trace.path.display().to_string(),
        graph,
        measured,
        ctx,
    }
}

/// Replayed step times of each input (replay of a synthesized trace
/// reproduces it), per step the slowest stage.
pub fn replayed_steps(inputs: &[Input]) -> Vec<i64> {
    let mut per_step: Vec<i64> = Vec::new();
    for i in inputs {
        let s = lumos_sim::simulate(&i.graph, &Default::default()).unwrap();
        for (k, x) in lumos_sim::step_spans(&i.graph, &s, None).iter().enumerate() {
            let d = x.end_ns - x.start_ns;
            match per_step.get_mut(k) {
                Some(v) => *v = (*v).max(d),
                None => per_step.push(d),
            }
        }
    }
    per_step
}

/// Mean of the slowest stage's replayed step times of a synthesized job.
pub fn truth_ms(cfg: &SynthConfig) -> f64 {
    let s = replayed_steps(&inputs(cfg));
    s.iter().sum::<i64>() as f64 / s.len() as f64 / 1e6
}

/// Discovery run again on predicted stage `k`, with its replayed times
/// standing in for measured ones.
pub fn rediscover(p: &Prediction, out: &Outcome, k: usize) -> Structure {
    let st = &p.stages[k];
    let part = out.job.parts[k].clone();
    let (lo, hi) = (part.start as usize, part.end as usize);
    let measured = Measured {
        origin_ns: 0,
        tasks: (lo..hi)
            .map(|i| Span {
                start_ns: out.schedule.start_ns[i],
                end_ns: out.schedule.end_ns[i],
            })
            .collect(),
        step_annotations: Vec::new(),
        scopes: Vec::new(),
    };
    let ctx = p.base.inputs[st.primary].ctx.clone();
    discover(&st.retimed_graph(), &measured, &ctx)
}

/// Mean step, ms.
pub fn mean_ms(steps: &[i64]) -> f64 {
    steps.iter().sum::<i64>() as f64 / steps.len().max(1) as f64 / 1e6
}

/// Builds the baseline of a synthesized job.
pub fn baseline(cfg: &SynthConfig) -> Baseline {
    Baseline::new(inputs(cfg)).unwrap()
}

/// The joint replay (stages coupled, as predictions are) of a synthesized
/// job's traces: slowest stage per step, mean over steps, ms.
pub fn joint_truth_ms(cfg: &SynthConfig) -> f64 {
    let base = baseline(cfg);
    let id = base.identity();
    mean_ms(&id.simulate_job(id.job_coupled(true)).unwrap().step_ns)
}

/// The same job written as most real exporters write it: no `cuda_sync`
/// events and no `cudaEventRecord` calls, so every inter-stream and sync
/// edge has to be inferred.
pub fn stripped(cfg: &SynthConfig) -> SynthConfig {
    let mut c = cfg.clone();
    c.training.cuda_sync_events = false;
    c.training.event_records = false;
    c
}

/// The same job with no cross-stream evidence at all: stripped, and no
/// `cudaStreamWaitEvent` calls either (many exporters and frameworks
/// record none), so the graph builder has only program order and the
/// streams' contents to go on.
pub fn blind(cfg: &SynthConfig) -> SynthConfig {
    let mut c = stripped(cfg);
    c.training.stream_waits = false;
    c
}
