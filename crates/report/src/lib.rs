//! Reports of lumos: what a front end shows of a trace, a replay, a job or a
//! prediction, as plain serializable values, and the simulated timelines.
//!
//! Every `--json` output of the `lumos` command line is one of this crate's
//! types, and the command line's tables are formatted from the same values,
//! so any front end (the CLI, a Python package, an HTML report) gets the
//! same numbers by calling the same functions:
//!
//! - [`inspect`] a trace: what the reader kept and skipped, what the graph
//!   builder found, what structure discovery found ([`FileReport`]).
//! - [`replay_trace`] a trace: steps, window, breakdown, GPU-busy timeline
//!   and critical path, replayed against measured ([`TraceReplay`]), and
//!   [`summarize`] many. [`replay`] keeps the graph and schedule for the
//!   replayed [`Timeline`].
//! - A rank read back from a compact `.lgraph` file (lumos-store) gives the
//!   same reports as its trace: [`inspect_stored`], [`replay_stored`].
//! - A job ([`lumos_graph::Job`], from [`lumos_graph::assemble`]):
//!   [`job_report`] (identities, matching, clocks) and [`replay_job`] (the
//!   joint replay: every rank, the job's step as the slowest rank's, who
//!   waited for whom, the critical path across ranks). [`replay_jointly`]
//!   keeps the schedule for the ranks' timelines. [`replay_representatives`]
//!   replays a large job from one rank per group of ranks that run the same
//!   communication program, with modelled peers inside each group.
//! - [`rank_tables`]: the breakdown per step and the GPU time per kernel
//!   and launching operator, for front ends that show tables.
//! - [`predict`]: a prediction against the measured run and its replay
//!   ([`PredictReport`]), and [`Timeline::predicted`]; its inputs loaded
//!   from trace or `.lgraph` files by [`prediction_input`], or made of a
//!   trace's replay by [`prediction_input_of_replay`].
//! - [`transfer_replay`]: one recording's graph replayed with another's
//!   measured durations (`--durations-from`), against the other's steps
//!   ([`TransferReport`]); [`retime_input`], a prediction's one input
//!   re-timed so, and on the other's hardware.
//! - [`HtmlReport`]: all of it for one trace or job as one self-contained
//!   HTML page (`lumos report`), charts as inline SVG.
//! - [`text::shown`]: a trace's name as a person is shown it, what would
//!   act on a terminal or reorder the text escaped (the tables, the page).
//!
//! Data flows one way: traces, graphs, schedules and predictions come in
//! from lumos-trace, lumos-graph, lumos-sim and lumos-predict; reports and
//! timelines go out. The model types of those crates are not serializable;
//! the report types here mirror what is shown of them and convert by hand.
//! Nothing here prints or exits, and files are read only through the
//! readers of lumos-trace and lumos-store ([`replay_path`],
//! [`replay_path_with_meta`], [`inspect_path`], [`prediction_input`]): a
//! [`Timeline`] writes into any
//! `io::Write` the caller gives it.
//!
//! ```
//! use std::path::Path;
//!
//! let text = r#"{"traceEvents": [
//!   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10}
//! ]}"#;
//! let trace = lumos_trace::read_bytes(Path::new("t.json"), text.as_bytes()).unwrap();
//! let replay = lumos_report::replay_trace(&trace, &Default::default()).unwrap();
//! assert_eq!(replay.tasks, 1);
//! assert_eq!(replay.window.measured_us, 10.0);
//! assert_eq!(replay.window.replayed_us, 10.0);
//! ```
#![deny(missing_docs)]

mod analysis;
mod critical;
mod diff;
mod error;
mod html;
mod inspect;
mod job;
mod json_object;
mod model_file;
mod network;
mod predict;
mod predict_input;
mod preset_or_file;
pub mod range;
mod replay;
mod structure;
mod tables;
pub mod text;
mod timeline;
mod transfer;
mod units;

use serde::Serialize;

pub use analysis::{
    analyze, bus_factor, collective_type, nccl_algorithm, operator_of, Analyses, AnalysisOptions,
    CollectiveRow, DeviceMemory, HtaView, KernelRow, MemoryReport, MemoryTimeline, OperatorRow,
    StepAnalysis, StepMemory, StepSelection, StepSelectionError, StreamIdle, TraceAnalysis,
    NO_OPERATOR,
};
pub use critical::{
    CriticalPathExport, CriticalPaths, PathHopRow, PathOperator, StepCriticalPath, HOST_GAP,
};
pub use diff::{diff, DiffInput, DiffOptions, DiffReport, DiffSide, MetricDiff, RowDiff, StepDiff};
pub use error::ReportError;
pub use html::{run_bound, HtmlReport};
pub use inspect::{
    file_report, file_report_of, inspect, inspect_owned, inspect_path, inspect_prepared,
    inspect_stored, structure_report, structure_report_of, CollectiveCounts, EventCounts,
    FileReport, InferredCount, InspectOutput, SkipCount, StepReport,
};
pub use job::{
    distinct_ranks, job_report, replay_job, replay_jointly, replay_jointly_owned,
    replay_jointly_scaled, replay_rank_alone, replay_representatives, replay_representatives_kept,
    room_to_replay, room_to_replay_keeping_job, scaled_ranks_in, slowest_rank_steps, ClockReport,
    CollectiveReport, HostOffset, JobPathReport, JobReplayed, JobReport, JobStep, LeftOutReport,
    MatchingReport, OwnRank, ProblemReport, ProgramGroupReport, RankCommReport, RankOffset,
    RankScale, RankTime, RankWaitReport, RendezvousReport, RepresentativesReplayed,
    RepresentativesReport, Slowest, Spread, StepSpread, WaitUs, JOINT_REPLAY_BYTES_PER_TASK,
    JOINT_REPLAY_KEEPING_JOB_BYTES_PER_TASK,
};
pub use model_file::model_from_json;
pub use network::network_from_json;
pub use predict::{
    predict, predict_report, BreakdownMs, Calibration, ConfidenceReport, Config, GemmCalibration,
    InputReport, InputWarnings, LinkCalibration, ModelFitReport, PredictReport, StageRow,
    SteadinessReport, StepRow, TracedConfig,
};
pub use predict_input::{
    prediction_candidates_of, prediction_candidates_of_graphs, prediction_input,
    prediction_input_of_replay, PredictionFile,
};
pub use preset_or_file::{not_a_file, read_preset_file, MAX_PRESET_FILE_BYTES};
pub use replay::{
    compare, critical_path_report, replay, replay_owned, replay_path, replay_path_for,
    replay_path_with_meta, replay_scaled, replay_stored, replay_trace, summarize, trace_warnings,
    with_kernel_scales, BoundShare, BreakdownPair, BreakdownUs, Compare, CriticalPath, PathTask,
    ReplayOutput, Replayed, ReplayedStored, StepReplay, Summary, TimelinePair, TraceInfo,
    TraceReplay,
};
pub use structure::{DiscoveredConfig, Finding, GroupReport, PhaseTime, StructureReport};
pub use tables::{
    job_tables, kernel_rows, rank_tables, step_breakdowns, KernelLaunchRow, RankTables,
    StepBreakdown,
};
pub use timeline::{
    merged_file_name, output_stem, predicted_job_under, MergedTimeline, MergedWriter,
    PredictedFrom, PredictedTimelines, Timeline, TimelineSource,
};
pub use transfer::{
    retime_input, transfer_files, transfer_replay, BStep, Recording, ThreadPairReport,
    TransferMatch, TransferMean, TransferPrediction, TransferReport, TransferStep,
};

/// `lumos demo --json`: the built-in example inspected, replayed, and
/// replayed with compute kernels twice as fast.
#[derive(Debug, Clone, Serialize)]
pub struct DemoOutput {
    /// The folder the example was written to.
    pub out_dir: String,
    /// The example's traces, one per pipeline stage (the first is shown).
    pub traces: Vec<String>,
    /// The replayed timeline of the first, written for Perfetto.
    pub timeline: String,
    /// The example trace inspected.
    pub inspect: FileReport,
    /// Replayed as traced.
    pub replay: TraceReplay,
    /// Replayed with compute kernels 2x faster.
    #[serde(rename = "what_if_compute_x0.5")]
    pub what_if: TraceReplay,
}
