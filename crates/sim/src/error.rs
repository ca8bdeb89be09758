//! Why a replay could not produce a schedule.

use std::fmt;

use lumos_graph::TaskId;

/// Why [`simulate`](crate::simulate) returned no schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimError {
    /// Tasks were left that can never start: their fixed dependencies,
    /// processor order or waits that name their task form a cycle, or wait
    /// on a task that is itself stuck. In a rendezvous, a task that started
    /// but whose peers never do cannot end either, and counts here. (A
    /// stream-tail wait that can never end is abandoned instead:
    /// [`BlockingWait::abandoned`](crate::BlockingWait::abandoned).)
    Stuck {
        /// How many tasks never ran.
        stuck: usize,
        /// The lowest-numbered of them.
        example: TaskId,
        /// Its name.
        example_name: String,
    },
    /// The graph refers to something that does not exist or contradicts
    /// itself (an edge to a missing task, a task listed on the wrong
    /// processor, a stream wait on a CPU thread).
    InvalidGraph(String),
    /// A [`SimOptions`](crate::SimOptions) value cannot be applied.
    InvalidOptions(String),
    /// The simulated clock ran past its range (about 292 years of
    /// nanoseconds): durations, latencies or scale factors far out of any
    /// real range. No time of such a replay means anything.
    ClockOverflow {
        /// The first task (by id) that ended past the range.
        example: TaskId,
        /// Its name.
        example_name: String,
    },
    /// The replay was stopped through [`SimOptions::cancel`](crate::SimOptions::cancel)
    /// before it ended.
    Cancelled,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Stuck {
                stuck,
                example,
                example_name,
            } => write!(
                f,
                "{stuck} tasks can never start or end (a dependency cycle, or a collective \
                 whose peers wait for its end); e.g. task {} `{example_name}`",
                example.0
            ),
            SimError::InvalidGraph(why) => write!(f, "invalid graph: {why}"),
            SimError::InvalidOptions(why) => write!(f, "invalid simulation options: {why}"),
            SimError::Cancelled => write!(f, "the replay was cancelled before it ended"),
            SimError::ClockOverflow {
                example,
                example_name,
            } => write!(
                f,
                "the simulated times run past the clock's range (292 years): durations, \
                 latencies or scale factors far beyond any real run; e.g. task {} \
                 `{example_name}`",
                example.0
            ),
        }
    }
}

impl SimError {
    /// The task the error names as an example, if it names one.
    pub fn example(&self) -> Option<TaskId> {
        match self {
            SimError::Stuck { example, .. } | SimError::ClockOverflow { example, .. } => {
                Some(*example)
            }
            SimError::InvalidGraph(_) | SimError::InvalidOptions(_) | SimError::Cancelled => None,
        }
    }
}

impl std::error::Error for SimError {}
