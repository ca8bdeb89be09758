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
use lumos_graph::{Detected, RankInput};

use crate::inputs::{self, Loaded};
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

/// What [`JobMode::take`] made of the inputs read.
pub enum Taken {
    /// The ranks of one job, built.
    Job(Vec<RankInput>),
    /// Inputs to take one by one: by position among the reads, the rank a
    /// trace was built into to tell whether they were one job (`None`
    /// where none was built, and for compact files, which need no build).
    Apart(Vec<Option<RankInput>>),
}

impl JobMode {
    /// The ranks of one job when `read` (the inputs, read) are to be
    /// handled as one, built from them ([`lumos_graph::detect_job`] needs
    /// the ranks built; the reads stay for a replay one by one); `None`
    /// otherwise. Inputs that looked like a job but share no collective
    /// get one line on stderr saying so.
    pub fn job_of(&self, read: &[Result<Loaded>]) -> Option<Vec<RankInput>> {
        match self.take(read) {
            Taken::Job(ranks) => Some(ranks),
            Taken::Apart(_) => None,
        }
    }

    /// [`JobMode::job_of`], giving back the ranks built to tell when the
    /// inputs are not one job, so that a replay one by one need not build
    /// each trace a second time.
    pub fn take(&self, read: &[Result<Loaded>]) -> Taken {
        let unbuilt = || Taken::Apart(read.iter().map(|_| None).collect());
        if self.per_trace {
            return unbuilt();
        }
        let loaded = || read.iter().filter_map(|r| r.as_ref().ok());
        if !self.job && !lumos_graph::looks_like_job(loaded().map(Loaded::meta)) {
            return unbuilt();
        }
        let ranks = inputs::ranks_of(read);
        if self.job {
            return Taken::Job(ranks);
        }
        match lumos_graph::detect_job(&ranks) {
            Detected::Job => Taken::Job(ranks),
            d => {
                if let Some(note) = d.note() {
                    output::note(format_args!("{note} (--job replays them as one job)"));
                }
                Taken::Apart(by_read(read, ranks))
            }
        }
    }
}

/// `ranks` (one per input read, in order) by position among `read`, kept
/// for the traces only: a compact file's rank is a copy of its graph,
/// which its own replay reads in place.
fn by_read(read: &[Result<Loaded>], ranks: Vec<RankInput>) -> Vec<Option<RankInput>> {
    let mut ranks = ranks.into_iter();
    read.iter()
        .map(|r| match r {
            Ok(Loaded::Trace(_)) => ranks.next(),
            Ok(Loaded::Stored(_)) => ranks.next().and(None),
            Err(_) => None,
        })
        .collect()
}
