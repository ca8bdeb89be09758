//! Whether several inputs are the ranks of one job, decided from what the
//! reader and the builder already hold, in two steps a front end takes in
//! turn:
//!
//! 1. **Metadata** ([`looks_like_job`], before any graph is built): at
//!    least two files, most of them recording one world size above 1.
//!    Anything else is replayed one by one without a word: a single trace,
//!    or traces that say nothing of a job.
//! 2. **Collectives** ([`detect_job`], on the ranks built): the files must
//!    also share at least one collective, as the job's own matcher finds it
//!    (the same `(process group, Seq)`, order, kernel family or send and
//!    receive). Two unrelated traces that both record world size 8 (rank 3
//!    of one run, rank 0 of another) share none: they are
//!    [`Detected::Unrelated`], and the front end replays them one by one
//!    with [`Detected::note`] as the one line saying why; where two of
//!    them claim one rank (copies of one rank's trace), that is the
//!    reason given ([`Detected::SameRank`]).
//!
//! A user's `--job` (`job=True` in Python) skips both; `--per-trace` skips
//! both the other way.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lumos_trace::{RankSource, TraceMeta};

use super::assemble::RankInput;
use super::belong::foreign_ranks;
use super::matching::match_refs;
use super::RankGraph;

/// What [`detect_job`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detected {
    /// The ranks of one job: one world size and a collective shared.
    Job,
    /// Not a job by their metadata (fewer than two files, or no world size
    /// above 1 most of them record): replayed one by one, quietly.
    Apart,
    /// Most files record one world size above 1 but no collective is
    /// shared across them: traces of different runs, replayed one by one
    /// with a note ([`Detected::note`]).
    Unrelated {
        /// How many files were given.
        files: usize,
        /// How many of them record `world_size`.
        recording: usize,
        /// The world size most of them record.
        world_size: u32,
    },
    /// Inputs that looked like a job, share no collective, and two of
    /// which claim one rank (two copies of one rank's trace, or one rank
    /// of two runs): that, not the collectives, is why they are not one
    /// job, and a joint replay refuses them for it.
    SameRank {
        /// The rank both claim.
        rank: u32,
        /// The two files and how each found its rank, in path order.
        files: [(PathBuf, RankSource); 2],
    },
}

impl Detected {
    /// True for [`Detected::Job`].
    pub fn is_job(&self) -> bool {
        matches!(self, Detected::Job)
    }

    /// The one line a front end prints when the inputs looked like a job
    /// but are not one and it replays them one by one; `None` otherwise.
    /// Front ends add how to force a joint replay in their own words
    /// (`--job`, `job=True`).
    pub fn note(&self) -> Option<String> {
        self.reason().map(|r| format!("{r}: replayed one by one"))
    }

    /// Why inputs that looked like a job are not one ("2 traces record
    /// world size 8 but share no collective"), for a front end that does
    /// something else with them than [`Detected::note`] says (`lumos
    /// report` refuses them); `None` where they did not look like one.
    pub fn reason(&self) -> Option<String> {
        let (files, recording, world_size) = match self {
            Detected::Unrelated {
                files,
                recording,
                world_size,
            } => (*files, *recording, *world_size),
            Detected::SameRank { rank, files } => {
                let [(a, sa), (b, sb)] = files;
                return Some(format!(
                    "{} ({}) and {} ({}) both claim rank {rank} (copies of one rank's trace, \
                     or ranks of two runs)",
                    a.display(),
                    sa.as_str(),
                    b.display(),
                    sb.as_str()
                ));
            }
            Detected::Job | Detected::Apart => return None,
        };
        Some(if recording == files {
            format!("{files} traces record world size {world_size} but share no collective")
        } else {
            format!(
                "{recording} of {files} traces record world size {world_size}, but they share \
                 no collective"
            )
        })
    }
}

/// The world size above 1 that more than half of `sizes` record, with how
/// many do; `None` for fewer than two files.
fn job_world_size(sizes: impl Iterator<Item = Option<u32>>) -> Option<(u32, usize, usize)> {
    let mut n = 0;
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for w in sizes {
        n += 1;
        if let Some(w) = w.filter(|&w| w > 1) {
            *counts.entry(w).or_default() += 1;
        }
    }
    if n < 2 {
        return None;
    }
    counts
        .into_iter()
        .find(|&(_, c)| c * 2 > n)
        .map(|(w, c)| (w, c, n))
}

/// True when the traces' metadata says they may be the ranks of one job:
/// at least two, and more than half of them recording one world size
/// above one. A file that records another world size (or none) does not
/// turn job mode off: the job's assembly names it. This is the first step
/// only: [`detect_job`] also wants a collective shared.
pub fn looks_like_job<'a>(metas: impl Iterator<Item = &'a TraceMeta>) -> bool {
    job_world_size(metas.map(|m| m.world_size)).is_some()
}

/// Whether `inputs` (the files, read and built) are the ranks of one job:
/// [`looks_like_job`] on their metadata, then at least one collective
/// matched across them ([`shares_collective`]).
pub fn detect_job(inputs: &[RankInput]) -> Detected {
    let Some((world_size, recording, files)) =
        job_world_size(inputs.iter().map(|i| i.meta.world_size))
    else {
        return Detected::Apart;
    };
    let graphs: Vec<&RankGraph> = inputs.iter().map(|i| &i.graph).collect();
    if shares_collective(&graphs) {
        return Detected::Job;
    }
    // Copies of one rank share no collective with each other (a collective
    // pairs distinct ranks): the rank they both claim is what to say.
    let mut by_rank: Vec<&RankInput> = inputs.iter().collect();
    by_rank.sort_by(|a, b| (a.meta.rank, a.meta.file()).cmp(&(b.meta.rank, b.meta.file())));
    if let Some(w) = by_rank
        .windows(2)
        .find(|w| w[0].meta.rank == w[1].meta.rank)
    {
        let file = |i: &RankInput| (i.meta.file().to_owned(), i.meta.rank_source);
        return Detected::SameRank {
            rank: w[0].meta.rank,
            files: [file(w[0]), file(w[1])],
        };
    }
    Detected::Unrelated {
        files,
        recording,
        world_size,
    }
}

/// True when the job matcher pairs at least one collective across
/// `ranks`: first over all of them, then, when that pairs none, without
/// the ranks the job's assembly would leave out for sharing nothing (so
/// that one stray file cannot hide a job whose order-based matching it
/// spoils).
pub fn shares_collective(ranks: &[&RankGraph]) -> bool {
    if !match_refs(ranks).sets.is_empty() {
        return true;
    }
    if ranks.len() < 3 {
        return false;
    }
    let foreign = foreign_ranks(ranks, &vec![1; ranks.len()]);
    if foreign.is_empty() {
        return false;
    }
    let rest: Vec<&RankGraph> = (0..ranks.len())
        .filter(|p| foreign.binary_search(p).is_err())
        .map(|p| ranks[p])
        .collect();
    !match_refs(&rest).sets.is_empty()
}
