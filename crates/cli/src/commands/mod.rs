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

use crate::inputs::Prepared;
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

/// What [`JobMode::sort`] made of the inputs prepared.
pub enum Sorted {
    /// The ranks of one job, and the inputs they were lent from, in order
    /// (a trace's rank taken out, a compact file's copied; errors in
    /// place).
    Job(Vec<RankInput>, Vec<Result<Prepared>>),
    /// Inputs to take one by one, in the order given, errors in place.
    Apart(Vec<Result<Prepared>>),
}

impl JobMode {
    /// The ranks of one job when the inputs prepared
    /// ([`inputs::prepare_all`]: each trace built into its rank and
    /// dropped, so that no trace is held beside the ranks) are to be
    /// handled as one ([`lumos_graph::detect_job`] needs the ranks built),
    /// else the inputs, each trace's rank in place, to be taken one by one.
    /// Inputs that looked like a job but share no collective get one line
    /// on stderr saying so.
    pub fn sort(&self, mut prepared: Vec<Result<Prepared>>) -> Sorted {
        let looks_like_job = |p: &[Result<Prepared>]| {
            lumos_graph::looks_like_job(
                p.iter().filter_map(|r| r.as_ref().ok()).map(Prepared::meta),
            )
        };
        if self.per_trace || (!self.job && !looks_like_job(&prepared)) {
            return Sorted::Apart(prepared);
        }
        // A trace's rank is moved out (and back if the inputs are not one
        // job); a compact file's is a copy of its graph.
        let ranks: Vec<RankInput> = (prepared.iter_mut())
            .filter_map(|r| r.as_mut().ok())
            .map(|p| match p {
                Prepared::Built(b) => b.rank.take().expect("each rank is lent once"),
                Prepared::Stored(s) => RankInput {
                    meta: s.facts.rank_meta(),
                    graph: s.graph.clone(),
                    report: s.report.clone(),
                },
            })
            .collect();
        if !self.job {
            let d = lumos_graph::detect_job(&ranks);
            if !matches!(d, Detected::Job) {
                if let Some(note) = d.note() {
                    output::note(format_args!("{note} (--job replays them as one job)"));
                }
                give_back(&mut prepared, ranks);
                return Sorted::Apart(prepared);
            }
        }
        Sorted::Job(ranks, prepared)
    }
}

/// Puts the ranks [`JobMode::sort`] lent back into their traces, in order
/// (a compact file's copy is dropped).
fn give_back(prepared: &mut [Result<Prepared>], ranks: Vec<RankInput>) {
    let mut ranks = ranks.into_iter();
    for p in prepared.iter_mut().filter_map(|r| r.as_mut().ok()) {
        let rank = ranks.next();
        if let Prepared::Built(b) = p {
            b.rank = rank;
        }
    }
}
