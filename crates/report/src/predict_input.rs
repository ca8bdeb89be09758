//! The inputs of a prediction (`lumos predict`, `lumos report`'s what-if,
//! the Python package's `predict`), loaded from files: one function, so
//! that every front end reads a trace for a prediction the same way.

use std::path::Path;

use lumos_graph::{build_streamed, TrackSink};
use lumos_predict::{Input, TraceContext};
use lumos_store::{is_lgraph_file, read_stored, InputError};
use lumos_trace::TraceMeta;

use crate::{Replayed, TimelineSource};

/// One file as a prediction's input, with what the predicted timeline
/// needs of it. A trace is read straight into its graph's build
/// ([`lumos_graph::TrackSink`]), as [`crate::replay_path`] reads one, so
/// that its events and its graph are never in memory together (the whole
/// trace read first held a 1 GB rank's 0.4 GB of events beside the
/// graph); an `.lgraph` file gives its stored graph.
pub fn prediction_input(path: &Path) -> Result<(Input, TimelineSource), InputError> {
    if is_lgraph_file(path) {
        let s = read_stored(path).map_err(InputError::Store)?;
        let ctx = TraceContext::from_meta(&s.facts.meta, &s.graph.measured);
        let source = TimelineSource::of_rank(&s.facts.rank_meta());
        let input = Input {
            name: s.facts.path.display().to_string(),
            graph: s.graph.graph,
            measured: s.graph.measured,
            ctx,
        };
        return Ok((input, source));
    }
    let mut sink = TrackSink::new();
    let mut trace =
        lumos_trace::read_path_into(path, &|_| {}, &mut sink).map_err(InputError::Trace)?;
    let source = TimelineSource::of(&trace);
    let name = trace.path.display().to_string();
    let meta = std::mem::take(&mut trace.meta);
    let (graph, measured, _) = build_streamed(trace, sink);
    let ctx = TraceContext::from_meta(&meta, &measured);
    let input = Input {
        name,
        graph,
        measured,
        ctx,
    };
    Ok((input, source))
}

/// The prediction input of a trace already replayed with
/// [`crate::replay_path_with_meta`], which gave `replayed` and `meta`: its
/// graph and measured times, the very input [`prediction_input`] reads
/// from the file (both build it with [`build_streamed`], and a replay
/// leaves the graph as built). The replay's schedule and analyses are
/// dropped.
pub fn prediction_input_of_replay(replayed: Replayed, meta: &TraceMeta) -> Input {
    let ctx = TraceContext::from_meta(meta, &replayed.measured);
    Input {
        name: replayed.meta.path.display().to_string(),
        graph: replayed.graph,
        measured: replayed.measured,
        ctx,
    }
}
