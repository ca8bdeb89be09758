//! Why a report could not be made.

use lumos_predict::PredictError;
use lumos_sim::SimError;

/// Why a report could not be made: the trace could not be read, the
/// replay behind it failed, or the request does not fit the job.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A trace's graph could not be replayed.
    #[error("{path}: replay failed")]
    Replay {
        /// The trace.
        path: String,
        /// Why.
        #[source]
        source: SimError,
    },
    /// A trace, or every rank of a job, holds no CPU or GPU task: there is
    /// nothing to replay, and a replay of nothing would report zeros as
    /// if they were times.
    #[error(
        "{what}: nothing to replay: no CPU or GPU task was read \
         (`lumos inspect` counts the events skipped)"
    )]
    NothingToReplay {
        /// The trace, or `the job`.
        what: String,
    },
    /// The joint replay of a job's ranks failed.
    #[error("joint replay of the job failed{at}")]
    JobReplay {
        /// Where the task the error names comes from (` at rank N
        /// (FILE)`), or empty.
        at: String,
        /// Why.
        #[source]
        source: SimError,
    },
    /// A what-if names a rank the job does not have.
    #[error("rank {rank} is not in the job (ranks {ranks})")]
    RankNotInJob {
        /// The rank asked for.
        rank: u32,
        /// The ranks present, as [`lumos_graph::rank_ranges`] writes them.
        ranks: String,
    },
    /// The traced graphs of a prediction could not be replayed.
    #[error("replay of the traced graphs of {files}")]
    TracedReplay {
        /// The inputs, as the prediction names them, comma-separated.
        files: String,
        /// Why.
        #[source]
        source: PredictError,
    },
    /// The predicted graphs could not be replayed (their times ran past
    /// the clock, say).
    #[error("replay of the predicted graphs of {files}")]
    PredictedReplay {
        /// The inputs, as the prediction names them, comma-separated.
        files: String,
        /// Why.
        #[source]
        source: PredictError,
    },
    /// A prediction could not be made, or a what-if not applied.
    #[error(transparent)]
    Predict(PredictError),
    /// The ranks given are not one job.
    #[error(transparent)]
    Job(#[from] lumos_graph::JobError),
    /// The trace file could not be read ([`crate::replay_path`]).
    #[error(transparent)]
    Read(#[from] lumos_trace::ReadError),
    /// An input file (a trace or an `.lgraph` file) could not be read
    /// ([`crate::transfer_files`]).
    #[error(transparent)]
    Input(#[from] lumos_store::InputError),
    /// A step selection names steps a trace does not have.
    #[error("{path}: step selection: {problem}")]
    Steps {
        /// The trace.
        path: String,
        /// What is wrong.
        problem: String,
    },
}

impl ReportError {
    /// [`ReportError::NothingToReplay`] of `what` where `graph` has no
    /// task.
    pub(crate) fn refuse_empty(
        graph: &lumos_graph::Graph,
        what: impl FnOnce() -> String,
    ) -> Result<(), ReportError> {
        if graph.tasks.is_empty() {
            return Err(ReportError::NothingToReplay { what: what() });
        }
        Ok(())
    }

    /// The failed joint replay of `graph`, merged from `job`: the rank and
    /// file of the task `source` names, where it names one, so that a
    /// replay refused for one rank's times says which file gave them.
    pub(crate) fn job_replay(
        job: &lumos_graph::Job,
        graph: &lumos_graph::JobGraph,
        source: SimError,
    ) -> ReportError {
        let at = (source.example())
            .filter(|t| t.idx() < graph.graph.tasks.len())
            .and_then(|t| job.ranks.get(graph.rank_of(t)))
            .map_or_else(String::new, |m| {
                format!(" at rank {} ({})", m.rank, m.file().display())
            });
        ReportError::JobReplay { at, source }
    }
}
