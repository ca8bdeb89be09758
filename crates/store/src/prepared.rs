//! Several inputs, read to be taken as the ranks of one job or one by one
//! (`lumos replay`, `inspect` and `report` of several files, and the
//! Python package's `replay` and `inspect`): each trace is built into its
//! rank as it is read (its events never all in memory) and dropped, so
//! that no trace is held beside the ranks, and the ranks are lent to [`lumos_graph::detect_job`] to tell
//! which. It lives here, beside the readers, so that every front end
//! decides the same way; errors are returned, notes given back, nothing
//! printed.

use std::path::Path;

use lumos_graph::{detect_job, looks_like_job, CommSink, Detected, RankInput};
use lumos_trace::{MemoryEvent, TraceMeta};

use crate::{is_lgraph_file, read_stored, InputError, StoredRank, TraceFacts};

/// A trace read and built into its rank, the trace itself dropped: what
/// the commands read of it, as a rank of a job or on its own.
pub struct BuiltTrace {
    /// The rank (its graph, measured times and build report); `None` once
    /// [`sort`] has given it to a job ([`Sorted::Job`]).
    pub rank: Option<RankInput>,
    /// What the reader said of the file.
    pub facts: TraceFacts,
    /// Its `[memory]` events.
    pub memory: Vec<MemoryEvent>,
}

/// One input of several, read by [`prepare`]: a trace built into its rank
/// (and dropped), or an `.lgraph` file read back.
// A few alive at a time: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Prepared {
    /// A trace file, built.
    Built(BuiltTrace),
    /// A compact graph file.
    Stored(StoredRank),
}

impl Prepared {
    /// The file's metadata.
    pub fn meta(&self) -> &TraceMeta {
        match self {
            Prepared::Built(b) => &b.facts.meta,
            Prepared::Stored(s) => &s.facts.meta,
        }
    }

    /// The trace it was read from (of an `.lgraph` file, the trace it was
    /// ingested from): what reports and timelines are named after.
    pub fn trace_path(&self) -> &std::path::Path {
        match self {
            Prepared::Built(b) => &b.facts.path,
            Prepared::Stored(s) => &s.facts.path,
        }
    }
}

/// Reads one input and, for a trace, builds its rank as the file is read
/// ([`CommSink`], [`RankInput::from_sink`]: the events are never all in
/// memory) and drops the trace (on this thread: run it on several for
/// several files).
pub fn prepare(path: &Path) -> Result<Prepared, InputError> {
    if is_lgraph_file(path) {
        return read_stored(path)
            .map(Prepared::Stored)
            .map_err(InputError::Store);
    }
    let mut sink = CommSink::new();
    let mut trace =
        lumos_trace::read_path_into(path, &|_| {}, &mut sink).map_err(InputError::Trace)?;
    let memory = std::mem::take(&mut trace.memory);
    let mut facts = TraceFacts::of(&trace);
    // The events and launch flows the sink took were kept by the reader
    // as much as those the trace holds.
    facts.events_kept += sink.tracks().events_taken();
    facts.flows += sink.tracks().launch_flows_taken();
    let rank = RankInput::from_sink(trace, sink);
    Ok(Prepared::Built(BuiltTrace {
        rank: Some(rank),
        facts,
        memory,
    }))
}

/// One input's rank, as the job functions take it: a trace built as it
/// is read ([`RankInput::from_sink`]: its events never all in memory), or
/// an `.lgraph` file's ([`crate::read_rank`]).
pub fn read_rank_input(path: &Path) -> Result<RankInput, InputError> {
    if is_lgraph_file(path) {
        return crate::read_rank(path).map_err(InputError::Store);
    }
    let mut sink = CommSink::new();
    let trace = lumos_trace::read_path_into(path, &|_| {}, &mut sink).map_err(InputError::Trace)?;
    Ok(RankInput::from_sink(trace, sink))
}

/// Whether several inputs are the ranks of one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobChoice {
    /// When there are several, most record one world size above 1 and they
    /// share a collective ([`lumos_graph::detect_job`]).
    Detect,
    /// Always (`--job`).
    Always,
    /// Never (`--per-trace`).
    Never,
}

/// What [`sort`] made of the inputs prepared.
pub enum Sorted<E> {
    /// The ranks of one job, and the inputs they were lent from, in order
    /// (a trace's rank taken out, a compact file's copied; errors in
    /// place).
    Job(Vec<RankInput>, Vec<Result<Prepared, E>>),
    /// Inputs to take one by one, in the order given, each trace's rank in
    /// place, errors in place; with what detection found, which says why
    /// inputs that looked like a job are not one, if they did
    /// ([`Detected::note`], [`Detected::reason`]).
    Apart(Vec<Result<Prepared, E>>, Detected),
}

/// The ranks of one job when the inputs prepared are to be handled as one
/// under `choice` ([`lumos_graph::detect_job`] needs the ranks built),
/// else the inputs, to be taken one by one.
pub fn sort<E>(mut prepared: Vec<Result<Prepared, E>>, choice: JobChoice) -> Sorted<E> {
    let ok = |p: &[Result<Prepared, E>]| {
        let metas = p.iter().filter_map(|r| r.as_ref().ok()).map(Prepared::meta);
        looks_like_job(metas)
    };
    if choice == JobChoice::Never || (choice == JobChoice::Detect && !ok(&prepared)) {
        return Sorted::Apart(prepared, Detected::Apart);
    }
    // A trace's rank is moved out (and back if the inputs are not one
    // job); a compact file's is a copy of its graph.
    let ranks: Vec<RankInput> = (prepared.iter_mut())
        .filter_map(|r| r.as_mut().ok())
        .map(|p| match p {
            Prepared::Built(b) => b.rank.take().expect("each rank is lent once"),
            Prepared::Stored(s) => RankInput {
                meta: s.rank_meta(),
                graph: s.graph.clone(),
                report: s.report.clone(),
            },
        })
        .collect();
    if choice == JobChoice::Detect {
        let d = detect_job(&ranks);
        if !matches!(d, Detected::Job) {
            give_back(&mut prepared, ranks);
            return Sorted::Apart(prepared, d);
        }
    }
    Sorted::Job(ranks, prepared)
}

/// Puts the ranks [`sort`] lent back into their traces, in order (a
/// compact file's copy is dropped).
fn give_back<E>(prepared: &mut [Result<Prepared, E>], ranks: Vec<RankInput>) {
    let mut ranks = ranks.into_iter();
    for p in prepared.iter_mut().filter_map(|r| r.as_mut().ok()) {
        let rank = ranks.next();
        if let Prepared::Built(b) = p {
            b.rank = rank;
        }
    }
}
