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
pub mod transfer;

use anyhow::Result;

use crate::inputs::Loaded;

/// Whether several inputs are the ranks of one job.
#[derive(clap::Args)]
pub struct JobMode {
    /// Treat all inputs as the ranks of one job: one joint replay in which
    /// matched collectives wait for every participant. The default when
    /// there are several files and all record the same world size > 1.
    #[arg(long, conflicts_with = "per_trace")]
    pub job: bool,
    /// Replay every input on its own, even the ranks of one job.
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
