//! Helpers for the unit tests: synthesized traces (the ground truth the
//! synthesizer writes) and what discovery finds in them.

use lumos_graph::{Graph, Measured};

use crate::{discover, Structure, TraceContext};

/// Rank `rank` of a synthesized job of `model` (with `layers` in all, when
/// given) on `tp x pp x dp` ranks with `m` micro-batches per step.
pub(crate) fn synth_layers(
    model: &str,
    layers: Option<usize>,
    [tp, pp, dp, m]: [usize; 4],
    rank: usize,
) -> lumos_trace::Trace {
    let mut preset = lumos_synth::ModelPreset::preset(model).unwrap();
    if let Some(l) = layers {
        preset.layers = l;
    }
    let cfg = lumos_synth::SynthConfig::new(
        preset,
        lumos_synth::Parallelism::new(tp, pp, dp, m),
        lumos_models::GpuSpec::h100(),
    );
    let text = lumos_synth::synthesize_rank(&cfg, rank).unwrap();
    lumos_trace::read_bytes(std::path::Path::new("t.json"), text.as_bytes()).unwrap()
}

/// [`synth_layers`] with the preset's layers.
pub(crate) fn synth(
    model: &str,
    tp: usize,
    pp: usize,
    dp: usize,
    m: usize,
    rank: usize,
) -> lumos_trace::Trace {
    synth_layers(model, None, [tp, pp, dp, m], rank)
}

/// A trace's graph, measured times and context.
pub(crate) fn graph_of(trace: &lumos_trace::Trace) -> (Graph, Measured, TraceContext) {
    let (g, meas, _) = lumos_graph::build(trace);
    let ctx = TraceContext::from_trace(trace, &meas);
    (g, meas, ctx)
}

/// A trace's graph and what discovery finds in it.
pub(crate) fn discovered(trace: &lumos_trace::Trace) -> (Graph, Measured, TraceContext, Structure) {
    let (g, meas, ctx) = graph_of(trace);
    let s = discover(&g, &meas, &ctx);
    (g, meas, ctx, s)
}

/// One input from a trace.
pub(crate) fn input(trace: &lumos_trace::Trace, name: &str) -> crate::Input {
    let (graph, measured, ctx) = graph_of(trace);
    crate::Input {
        name: name.into(),
        graph,
        measured,
        ctx,
    }
}

/// The inputs of a synthesized job: one rank per stage, named `rankN`.
pub(crate) fn inputs(model: &str, layers: Option<usize>, layout: [usize; 4]) -> Vec<crate::Input> {
    let [tp, _, dp, _] = layout;
    (0..layout[1])
        .map(|stage| {
            let rank = stage * tp * dp;
            input(
                &synth_layers(model, layers, layout, rank),
                &format!("rank{rank}"),
            )
        })
        .collect()
}

/// The baseline of a synthesized job, one rank per stage.
pub(crate) fn baseline(model: &str, layers: Option<usize>, layout: [usize; 4]) -> crate::Baseline {
    crate::Baseline::new(inputs(model, layers, layout)).unwrap()
}
