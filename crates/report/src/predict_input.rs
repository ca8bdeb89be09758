//! The inputs of a prediction (`lumos predict`, `lumos report`'s what-if,
//! the Python package's `predict`), loaded from files: one function, so
//! that every front end reads a trace for a prediction the same way.

use std::path::Path;

use lumos_graph::{build_streamed, TrackSink};
use lumos_predict::{Input, TraceContext};
use lumos_store::{is_lgraph_file, read_stored, InputError};

use crate::TimelineSource;

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
