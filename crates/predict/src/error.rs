//! Why a prediction could not be made.

use lumos_sim::SimError;

/// Why a baseline, an edit, a network description or a replay failed.
///
/// The message of each variant is complete on its own (the command line
/// prints it as it is); [`PredictError::is_usage`] tells what the caller
/// asked for apart from what the traces cannot do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PredictError {
    /// No traced ranks were given.
    #[error("no inputs")]
    NoInputs,
    /// The traces do not support the edit asked for: the structure it
    /// needs was not found (no layers, no steps, passes that do not pair
    /// up, no GEMM shapes), a pipeline stage it copies from was not traced,
    /// or the traced model has nothing the edit changes (no data-parallel
    /// collectives to re-time, no tensor parallelism to re-shard).
    #[error("{0}")]
    Unsupported(String),
    /// The target configuration is invalid whatever the traces hold (a
    /// degree of zero, fewer layers than stages, heads or sizes that do not
    /// divide over the tensor-parallel ranks, more tasks than lumos can
    /// hold, a malformed kernel speed-up).
    #[error("{0}")]
    InvalidTarget(String),
    /// A traced input holds no CPU or GPU task: there is nothing to
    /// predict from.
    #[error(
        "{input}: nothing to predict from: no CPU or GPU task was read \
         (`lumos inspect` counts the events skipped)"
    )]
    NoTasks {
        /// The input, as the prediction names it.
        input: String,
    },
    /// The inputs are not the ranks of one job (their parallel degrees
    /// differ).
    #[error("{0}")]
    NotOneJob(String),
    /// A network description is invalid: an unknown preset, text that is
    /// not JSON, a value that is not a positive number.
    #[error("{}{problem}", name.as_deref().map(|n| format!("{n}: ")).unwrap_or_default())]
    InvalidNetwork {
        /// What the description came from (its file), when it came from
        /// one; the message starts with it.
        name: Option<String>,
        /// What is wrong.
        problem: String,
    },
    /// The replay of the predicted graphs failed. The simulator's message is
    /// part of this one's, so it is not given again as a source.
    #[error("{}{error}", if *joint { "replay of the predicted graph failed: " } else { "" })]
    Replay {
        /// True when the stages were replayed together (the message then
        /// says that the predicted graph failed); a stage replayed alone,
        /// as `lumos replay` replays a trace, reports the simulator's
        /// message as it is.
        joint: bool,
        /// Why the simulator gave no schedule.
        error: SimError,
    },
}

impl PredictError {
    /// True when the error is in what the caller asked for (the target, an
    /// edit these traces cannot support, the network, no inputs) rather
    /// than in the traces themselves or in their replay.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            PredictError::NoInputs
                | PredictError::Unsupported(_)
                | PredictError::InvalidTarget(_)
                | PredictError::InvalidNetwork { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_kinds() {
        let e = PredictError::InvalidNetwork {
            name: Some("net.json".into()),
            problem: "invalid JSON: x".into(),
        };
        assert_eq!(e.to_string(), "net.json: invalid JSON: x");
        assert!(e.is_usage());
        let e = PredictError::InvalidNetwork {
            name: None,
            problem: "unknown GPU".into(),
        };
        assert_eq!(e.to_string(), "unknown GPU");
        let e = PredictError::Replay {
            joint: true,
            error: SimError::InvalidGraph("edge".into()),
        };
        assert_eq!(
            e.to_string(),
            "replay of the predicted graph failed: invalid graph: edge"
        );
        let e = PredictError::Replay {
            joint: false,
            error: SimError::InvalidGraph("edge".into()),
        };
        assert_eq!(e.to_string(), "invalid graph: edge");
        assert!(!e.is_usage());
        assert!(std::error::Error::source(&e).is_none());
        assert!(PredictError::Unsupported("no layers".into()).is_usage());
        assert!(!PredictError::NotOneJob("degrees differ".into()).is_usage());
        assert!(PredictError::InvalidTarget("tp 0".into()).is_usage());
        assert!(PredictError::NoInputs.is_usage());
    }
}
