//! What an `.lgraph` file holds, as library values: the rank's summary,
//! what the trace said about itself, its graph and its program.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lumos_graph::{
    program_signature, rank_graph, rank_graph_streamed, rank_program, BuildReport, CommSink,
    ProgramSignature, RankGraph, RankInput, RankMeta, RankProgram,
};
use lumos_trace::{RankSource, SkipReason, Trace, TraceMeta};

/// The trace file a graph was made from, as it was when ingested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The path as given to the ingest (reports name it, as they would
    /// the trace).
    pub path: PathBuf,
    /// Its size in bytes on disk (compressed, for gzip).
    pub bytes: u64,
    /// Its modification time, ns since the Unix epoch, when known.
    pub modified_ns: Option<i64>,
}

impl Source {
    /// The source at `path`, from the file system; size 0 and no time
    /// where the file cannot be looked at.
    pub fn of_file(path: &Path) -> Source {
        let meta = std::fs::metadata(path).ok();
        let modified_ns = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_nanos()).ok());
        Source {
            path: path.to_owned(),
            bytes: meta.map_or(0, |m| m.len()),
            modified_ns,
        }
    }

    /// The file's name, without its folders.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    }
}

/// What a job needs to know of a rank before loading its graph: which rank
/// it is, which program it runs, how long its steps took. The first
/// section of every file, read alone by [`read_summary`](crate::read_summary).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankSummary {
    /// The rank.
    pub rank: u32,
    /// How the rank was found.
    pub rank_source: RankSource,
    /// `distributedInfo.world_size`, if recorded.
    pub world_size: Option<u32>,
    /// Its communication program ([`lumos_graph::program_signature`]).
    pub signature: ProgramSignature,
    /// Measured step lengths (`ProfilerStep#N` to the end of its GPU
    /// work), in step order.
    pub steps_ns: Vec<i64>,
    /// The steps' names (`ProfilerStep#10`), in the same order: a member
    /// of representatives read from this file has its steps compared
    /// with its representative's, as a trace's are.
    pub step_names: Vec<String>,
    /// Tasks in its graph.
    pub tasks: u64,
    /// Communication tasks.
    pub comm_tasks: u64,
    /// Devices its trace lists (`deviceProperties`): how many GPUs a host
    /// of the job has, where the profiler lists them all.
    pub devices: u32,
    /// Uncompressed JSON size of the trace.
    pub json_bytes: u64,
    /// The trace file.
    pub source: Source,
    /// The lumos version that wrote the file.
    pub lumos_version: String,
}

/// What a trace said about itself that reports show and its graph does
/// not hold: sizes, event counts, metadata, warnings. With it, `lumos
/// inspect` on an `.lgraph` file reports what it reports on the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceFacts {
    /// The trace file, as given.
    pub path: PathBuf,
    /// Uncompressed JSON size.
    pub json_bytes: u64,
    /// Whether the file was gzip-compressed.
    pub gzipped: bool,
    /// File-level metadata.
    pub meta: TraceMeta,
    /// Elements of `traceEvents`.
    pub events_total: u64,
    /// Complete events kept.
    pub events_kept: u64,
    /// Flow events kept.
    pub flows: u64,
    /// Skipped events per (category as written, reason).
    pub skipped: BTreeMap<(String, SkipReason), u64>,
    /// The reader's warnings.
    pub warnings: Vec<String>,
    /// Events that end absurdly far past the rest of the trace
    /// ([`Trace::absurd_durations`]).
    pub absurd_durations: u64,
}

impl TraceFacts {
    /// The facts of `trace`.
    pub fn of(trace: &Trace) -> TraceFacts {
        TraceFacts {
            path: trace.path.clone(),
            json_bytes: trace.json_bytes,
            gzipped: trace.gzipped,
            meta: trace.meta.clone(),
            events_total: trace.events_total,
            events_kept: trace.events.len() as u64,
            flows: trace.flows.len() as u64,
            skipped: trace.skipped.counts.clone(),
            warnings: trace.warnings.clone(),
            absurd_durations: trace.absurd_durations,
        }
    }

    /// Events skipped, all reasons.
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }

    /// What a job needs of the file ([`RankMeta`]).
    pub fn rank_meta(&self) -> RankMeta {
        RankMeta {
            path: self.path.clone(),
            rank: self.meta.rank,
            rank_source: self.meta.rank_source,
            world_size: self.meta.world_size,
            written_ranks: self.meta.written_ranks.clone(),
            base_time_ns: self.meta.base_time_ns,
            warnings: self.warnings.clone(),
            about: lumos_graph::TraceAbout::of_meta(&self.meta),
            compact: None,
        }
    }
}

/// What representatives need of a rank ([`lumos_graph::rank_program`] on
/// its measured step spans).
pub fn program_of(r: &RankGraph) -> RankProgram {
    let steps = lumos_sim::step_spans(
        &r.graph,
        &r.measured.tasks,
        Some(&r.measured.step_annotations),
    );
    rank_program(r, &steps)
}

/// Everything an `.lgraph` file holds: one rank's trace, ingested.
#[derive(Debug, Clone)]
pub struct StoredRank {
    /// The summary (also readable alone).
    pub summary: RankSummary,
    /// What the trace said about itself.
    pub facts: TraceFacts,
    /// The rank's graph, measured times and communication tasks, as
    /// [`lumos_graph::rank_graph`] built them.
    pub graph: RankGraph,
    /// What the builder counted and warned about.
    pub report: BuildReport,
    /// What representatives need of the rank.
    pub program: RankProgram,
    /// The `.lgraph` file it was read from; `None` when it was built from
    /// its trace. Errors name it; reports and timelines name the trace.
    pub compact: Option<PathBuf>,
}

impl StoredRank {
    /// Builds the graph of `trace` (read from `source`) and keeps what
    /// every command needs of it.
    pub fn from_trace(trace: &Trace, source: Source) -> StoredRank {
        let (graph, report) = rank_graph(trace);
        StoredRank::of(TraceFacts::of(trace), graph, report, source)
    }

    /// [`StoredRank::from_trace`] of a trace read with `sink`
    /// ([`lumos_trace::read_path_into`]): the rank built as the file was
    /// read ([`rank_graph_streamed`]), its events never all in memory. The
    /// same rank.
    pub fn from_sink(trace: Trace, sink: CommSink, source: Source) -> StoredRank {
        let mut facts = TraceFacts::of(&trace);
        // The events and launch flows the sink took were kept by the
        // reader as much as those the trace holds.
        facts.events_kept += sink.tracks().events_taken();
        facts.flows += sink.tracks().launch_flows_taken();
        let (graph, report) = rank_graph_streamed(trace, sink);
        StoredRank::of(facts, graph, report, source)
    }

    /// What every command needs of a rank built as `graph` and `report`,
    /// of a trace that said `facts`.
    fn of(facts: TraceFacts, graph: RankGraph, report: BuildReport, source: Source) -> StoredRank {
        let program = program_of(&graph);
        let summary = RankSummary {
            rank: graph.rank,
            rank_source: facts.meta.rank_source,
            world_size: facts.meta.world_size,
            signature: program_signature(&graph),
            steps_ns: program.steps_ns.clone(),
            step_names: step_names(&graph),
            tasks: graph.graph.tasks.len() as u64,
            comm_tasks: graph.comms.len() as u64,
            devices: facts.meta.devices.len() as u32,
            json_bytes: facts.json_bytes,
            source,
            lumos_version: env!("CARGO_PKG_VERSION").to_owned(),
        };
        StoredRank {
            summary,
            facts,
            graph,
            report,
            program,
            compact: None,
        }
    }

    /// What the job's functions need to know of the rank's file: its
    /// trace's [`TraceFacts::rank_meta`], and the `.lgraph` file it was
    /// read from.
    pub fn rank_meta(&self) -> RankMeta {
        RankMeta {
            compact: self.compact.clone(),
            ..self.facts.rank_meta()
        }
    }

    /// The file the rank was read from: its `.lgraph` file, else its
    /// trace.
    pub fn file(&self) -> &Path {
        self.compact.as_deref().unwrap_or(&self.facts.path)
    }

    /// The rank as the job functions take it.
    pub fn into_input(self) -> RankInput {
        RankInput {
            meta: self.rank_meta(),
            graph: self.graph,
            report: self.report,
        }
    }
}

/// The names of `graph`'s steps, in step order: what a summary holds of
/// them ([`RankSummary::step_names`]).
pub(crate) fn step_names(graph: &RankGraph) -> Vec<String> {
    (graph.graph.steps.iter()).map(|s| s.name.clone()).collect()
}
