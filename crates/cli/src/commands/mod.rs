//! One module per subcommand: its arguments, its file I/O and the text
//! form of its reports. The reports themselves come from lumos-report.

pub mod analysis;
pub mod demo;
pub mod diff;
pub mod ingest;
pub mod inspect;
pub mod job;
pub mod predict;
pub mod replay;
pub mod report;
pub mod synth;

use anyhow::Result;

use crate::inputs::Loaded;

/// Whether several inputs are the ranks of one job.
#[derive(clap::Args)]
pub struct JobMode {
    /// Treat all inputs as the ranks of one job: their collectives are
    /// matched across ranks and their clocks aligned (`replay` and `report`
    /// then replay the ranks together, each collective waiting for every
    /// participant). The default when there are several files and all
    /// record the same world size > 1.
    #[arg(long, conflicts_with = "per_trace")]
    pub job: bool,
    /// Take every input on its own, even the ranks of one job: no matching
    /// across ranks, no joint replay.
    #[arg(long)]
    pub per_trace: bool,
}

impl JobMode {
    /// Whether `read` (the inputs, read) are to be handled as one job.
    pub fn is_job(&self, read: &[Result<Loaded>]) -> bool {
        self.job
            || (!self.per_trace
                && lumos_graph::looks_like_job(
                    read.iter()
                        .filter_map(|r| r.as_ref().ok())
                        .map(Loaded::meta),
                ))
    }
}
