//! The inputs of a prediction (`lumos predict`, `lumos report`'s what-if,
//! the Python package's `predict`), loaded from files: one function, so
//! that every front end reads a trace for a prediction the same way.

use std::path::Path;

use lumos_graph::{build_streamed, Graph, Measured, RankGraph, RankInput, TrackSink};
use lumos_predict::{discover_lent, held_to_the_end, Candidates, Input, LentInput, TraceContext};
use lumos_store::{is_lgraph_file, read_stored, InputError};
use lumos_trace::TraceMeta;
use rayon::prelude::*;

use crate::{trace_warnings, InputWarnings, Replayed, TimelineSource};

/// One file read as a prediction's input ([`prediction_input`]).
pub struct PredictionFile {
    /// The prediction's input: the file's graph and measured times.
    pub input: Input,
    /// What the predicted timeline needs of the file.
    pub source: TimelineSource,
    /// What the file's reader and its graph's build warned (a trace's
    /// skipped events, edges left out, repaired clocks; an `.lgraph`
    /// file's stored ones), worded as `lumos replay` of the file words
    /// them ([`crate::trace_warnings`]): a prediction from a damaged
    /// trace says so, as its replay does.
    pub warnings: Vec<String>,
}

impl PredictionFile {
    /// The input, what the timeline needs, and the file's warnings as a
    /// prediction's report lists them
    /// ([`crate::PredictReport::input_warnings`]), named by the input's
    /// name; `None` when it warned nothing.
    pub fn into_parts(self) -> (Input, TimelineSource, Option<InputWarnings>) {
        let warned = (!self.warnings.is_empty()).then(|| InputWarnings {
            path: self.input.name.clone(),
            warnings: self.warnings,
        });
        (self.input, self.source, warned)
    }
}

/// One file as a prediction's input, with what the predicted timeline
/// needs of it and its warnings. A trace is read straight into its
/// graph's build ([`lumos_graph::TrackSink`]), as [`crate::replay_path`]
/// reads one, so that its events and its graph are never in memory
/// together (the whole trace read first held a 1 GB rank's 0.4 GB of
/// events beside the graph); an `.lgraph` file gives its stored graph and
/// the warnings stored with it.
pub fn prediction_input(path: &Path) -> Result<PredictionFile, InputError> {
    if is_lgraph_file(path) {
        let s = read_stored(path).map_err(InputError::Store)?;
        let ctx = TraceContext::from_meta(&s.facts.meta, &s.graph.measured);
        let source = TimelineSource::of_rank(&s.facts.rank_meta());
        let warnings = trace_warnings(&s.facts.warnings, &s.report);
        let input = Input {
            name: s.facts.path.display().to_string(),
            graph: s.graph.graph,
            measured: s.graph.measured,
            ctx,
        };
        return Ok(PredictionFile {
            input,
            source,
            warnings,
        });
    }
    let mut sink = TrackSink::new();
    let mut trace =
        lumos_trace::read_path_into(path, &|_| {}, &mut sink).map_err(InputError::Trace)?;
    let source = TimelineSource::of(&trace);
    let name = trace.path.display().to_string();
    let meta = std::mem::take(&mut trace.meta);
    // The build reads none of the reader's warnings.
    let read_warnings = std::mem::take(&mut trace.warnings);
    let (graph, measured, build) = build_streamed(trace, sink);
    let ctx = TraceContext::from_meta(&meta, &measured);
    let input = Input {
        name,
        graph,
        measured,
        ctx,
    };
    Ok(PredictionFile {
        input,
        source,
        warnings: trace_warnings(&read_warnings, &build),
    })
}

/// The prediction input of a trace already replayed with
/// [`crate::replay_path_with_meta`], which gave `replayed` and `meta`: its
/// graph and measured times, the very input [`prediction_input`] reads
/// from the file (both build it with [`build_streamed`], and a replay
/// leaves the graph as built). The replay's schedule and analyses are
/// dropped, and its warnings with them: the page made of the replay
/// (`lumos report`) states them.
pub fn prediction_input_of_replay(replayed: Replayed, meta: &TraceMeta) -> Input {
    let ctx = TraceContext::from_meta(meta, &replayed.measured);
    Input {
        name: replayed.meta.path.display().to_string(),
        graph: replayed.graph,
        measured: replayed.measured,
        ctx,
    }
}

/// The prediction's ranks of a job already read for other work (the joint
/// replay of `lumos report`'s page), in the order given, `metas` being
/// each rank's trace metadata ([`lumos_store::Prepared::meta`]): each
/// discovered as lent ([`discover_lent`]; a window of one rank per rayon
/// thread at a time) and copied only where it stands for its stage
/// ([`Candidates::push_lent`]), so the files are not read again and at
/// most one graph per stage is copied. The same candidates as
/// [`prediction_input`] of each file pushed in order: both build the
/// graph as [`lumos_store::prepare`] does.
///
/// `None` as soon as a rank would be held whatever the ranks after it
/// ([`held_to_the_end`]): one that discovery cannot settle alone
/// (structural edits blocked: no repeated layer block, as in a model
/// without transformer layers, or one layer per pass, whose stage another
/// stage's blocks decide), or one whose pipeline stage was not found.
/// Lending would copy every such rank beside the page's replay; the
/// caller makes the prediction of the files read again after the page
/// instead, when the ranks are freed. The ranks discovered until then
/// (at least a window) are discovered again there.
pub fn prediction_candidates_of(ranks: &[RankInput], metas: &[&TraceMeta]) -> Option<Candidates> {
    let lent: Vec<(&Path, &RankGraph)> = (ranks.iter())
        .map(|r| (r.meta.path.as_path(), &r.graph))
        .collect();
    prediction_candidates_of_graphs(&lent, metas)
}

/// [`prediction_candidates_of`], each rank given as its trace's path and
/// its graph: the ranks a job kept once assembled ([`lumos_graph::Job`]
/// holds them so, without the ranks it left out), for a prediction of the
/// ranks `lumos report`'s page shows.
pub fn prediction_candidates_of_graphs(
    ranks: &[(&Path, &RankGraph)],
    metas: &[&TraceMeta],
) -> Option<Candidates> {
    assert_eq!(ranks.len(), metas.len(), "one trace's metadata per rank");
    let parts: Vec<RankParts<'_>> = (ranks.iter().zip(metas))
        .map(|(&(path, graph), meta)| RankParts::of(path, graph, meta))
        .collect();
    let mut candidates = Candidates::new();
    let window = rayon::current_num_threads().max(1);
    for ranks in parts.chunks(window) {
        let found: Vec<_> = (ranks.par_iter())
            .map(|p| discover_lent(&p.lent()))
            .collect();
        for (p, structure) in ranks.iter().zip(found) {
            if held_to_the_end(&structure) {
                return None;
            }
            let lent = p.lent();
            candidates.push_lent(&lent, structure, || lent.to_input());
        }
    }
    Some(candidates)
}

/// What a prediction reads of a rank, borrowed.
struct RankParts<'a> {
    name: String,
    graph: &'a Graph,
    measured: &'a Measured,
    ctx: TraceContext,
}

impl<'a> RankParts<'a> {
    fn of(path: &Path, rank: &'a RankGraph, meta: &TraceMeta) -> RankParts<'a> {
        let measured = &rank.measured;
        RankParts {
            name: path.display().to_string(),
            graph: &rank.graph,
            measured,
            ctx: TraceContext::from_meta(meta, measured),
        }
    }

    fn lent(&self) -> LentInput<'_> {
        LentInput {
            name: &self.name,
            graph: self.graph,
            measured: self.measured,
            ctx: &self.ctx,
        }
    }
}
