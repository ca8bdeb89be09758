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
use lumos_graph::Detected;
use lumos_store::{JobChoice, Prepared, Sorted};

use crate::output;

/// Whether several inputs are the ranks of one job.
#[derive(clap::Args)]
pub struct JobMode {
    /// Treat all inputs as the ranks of one job: their collectives are
    /// matched across ranks and their clocks aligned (`replay` and `report`
    /// then replay the ranks together, each collective waiting for every
    /// participant). The default when there are several files, most record
    /// the same world size > 1 and they share at least one collective.
    #[arg(long, conflicts_with = "per_trace")]
    pub job: bool,
    /// Take every input on its own, even the ranks of one job: no matching
    /// across ranks, no joint replay.
    #[arg(long)]
    pub per_trace: bool,
}

impl JobMode {
    /// The inputs prepared ([`crate::inputs::prepare_all`]) as one job or one by
    /// one ([`lumos_store::sort`]); inputs that looked like a job but
    /// share no collective get one line on stderr saying so.
    pub fn sort(&self, prepared: Vec<Result<Prepared>>) -> Sorted<anyhow::Error> {
        let sorted = self.sort_unsaid(prepared);
        if let Sorted::Apart(_, d) = &sorted {
            match (d.note(), d) {
                // `--job` refuses files that claim one rank.
                (Some(note), Detected::SameRank { .. }) => output::note(note),
                (Some(note), _) => {
                    output::note(format_args!("{note} (--job replays them as one job)"));
                }
                (None, _) => {}
            }
        }
        sorted
    }

    /// [`JobMode::sort`] without the line on stderr, for a command that
    /// does not take inputs one by one and says why in its own words
    /// (`lumos report`).
    pub fn sort_unsaid(&self, prepared: Vec<Result<Prepared>>) -> Sorted<anyhow::Error> {
        let choice = match (self.job, self.per_trace) {
            (true, _) => JobChoice::Always,
            (_, true) => JobChoice::Never,
            _ => JobChoice::Detect,
        };
        lumos_store::sort(prepared, choice)
    }
}
