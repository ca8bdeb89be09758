//! Telling the ranks of a job apart: which file is which rank, which ranks
//! are missing, then matching their collectives and aligning their clocks.
//!
//! Inputs form a job when a front end says so, or when there are at least
//! two and every one records the same `distributedInfo.world_size` above 1
//! ([`looks_like_job`]). A job with a rank missing is assembled from the
//! ranks present, with a warning naming the missing ones: their collectives
//! rendezvous among themselves, which is all the missing rank's absence
//! lets us model.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use lumos_trace::{RankSource, Trace, TraceMeta};

use super::{align_clocks, match_collectives, rank_graph, rank_ranges};
use super::{ClockAlignment, CollectiveMatch, RankGraph};
use crate::BuildReport;

/// What a rank's trace says about the rank itself: which one it is, how
/// that was found, and what the job's reports and timelines need of the
/// file once its events are gone.
#[derive(Debug, Clone, PartialEq)]
pub struct RankMeta {
    /// The trace file.
    pub path: PathBuf,
    /// The rank.
    pub rank: u32,
    /// How the rank was found.
    pub rank_source: RankSource,
    /// `distributedInfo.world_size`, if recorded.
    pub world_size: Option<u32>,
    /// `baseTimeNanoseconds`, if recorded.
    pub base_time_ns: Option<i64>,
    /// The reader's warnings about the file.
    pub warnings: Vec<String>,
}

/// One rank, read and built: its metadata, graph and build report. The
/// trace itself is not kept, so a job holds one trace at a time per
/// loading thread.
#[derive(Debug, Clone)]
pub struct RankInput {
    /// What the file says about the rank.
    pub meta: RankMeta,
    /// The rank's graph and communication tasks.
    pub graph: RankGraph,
    /// What the builder counted and warned about.
    pub report: BuildReport,
}

impl RankInput {
    /// Builds the rank's graph ([`rank_graph`]) and keeps what the job
    /// needs from `trace`.
    pub fn from_trace(trace: &Trace) -> RankInput {
        let (graph, report) = rank_graph(trace);
        RankInput {
            meta: RankMeta {
                path: trace.path.clone(),
                rank: trace.meta.rank,
                rank_source: trace.meta.rank_source,
                world_size: trace.meta.world_size,
                base_time_ns: trace.meta.base_time_ns,
                warnings: trace.warnings.clone(),
            },
            graph,
            report,
        }
    }
}

/// True when the traces look like the ranks of one job: at least two, all
/// recording the same world size, above 1.
pub fn looks_like_job<'a>(metas: impl Iterator<Item = &'a TraceMeta>) -> bool {
    let mut n = 0;
    let mut world = None;
    for m in metas {
        n += 1;
        match (world, m.world_size) {
            (_, None) | (_, Some(0 | 1)) => return false,
            (None, Some(w)) => world = Some(w),
            (Some(a), Some(b)) if a != b => return false,
            _ => {}
        }
    }
    n >= 2
}

/// The ranks of one job, checked: sorted by rank, with what is missing and
/// how their collectives matched and their clocks aligned. `ranks`,
/// `reports` and `graphs` are indexed alike (a rank's position).
#[derive(Debug, Clone)]
pub struct Job {
    /// Each rank's metadata, ascending by rank.
    pub ranks: Vec<RankMeta>,
    /// Each rank's build report.
    pub reports: Vec<BuildReport>,
    /// Each rank's graph.
    pub graphs: Vec<RankGraph>,
    /// The world size: the largest any file records.
    pub world_size: Option<u32>,
    /// Ranks below the world size (or below the highest rank present,
    /// without one) that no file holds.
    pub missing: Vec<u32>,
    /// Soft problems: world sizes that disagree, missing ranks, ranks whose
    /// clock could not be aligned.
    pub warnings: Vec<String>,
    /// The collectives matched across ranks.
    pub matching: CollectiveMatch,
    /// Each rank's clock offset.
    pub clock: ClockAlignment,
}

impl Job {
    /// The position of `rank` among [`Job::ranks`], if present.
    pub fn position(&self, rank: u32) -> Option<usize> {
        self.ranks.iter().position(|m| m.rank == rank)
    }

    /// The ranks present, ascending.
    pub fn rank_numbers(&self) -> Vec<u32> {
        self.ranks.iter().map(|m| m.rank).collect()
    }
}

/// Why a set of rank files is not one job.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobError {
    /// No rank was given (or none could be read).
    NoRanks,
    /// A file of a job of several says neither its rank nor, in its name,
    /// `rank<N>`.
    UnknownRank {
        /// The file.
        path: PathBuf,
    },
    /// Two files claim the same rank.
    DuplicateRank {
        /// The rank.
        rank: u32,
        /// The files and how each found the rank, in path order.
        files: [(PathBuf, RankSource); 2],
    },
    /// A file's rank is not below the job's world size.
    OutsideWorld {
        /// The file.
        path: PathBuf,
        /// Its rank.
        rank: u32,
        /// The world size.
        world_size: u32,
    },
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::NoRanks => f.write_str("no rank of the job could be read"),
            JobError::UnknownRank { path } => write!(
                f,
                "{}: cannot tell which rank this file is (no distributedInfo.rank, no rank<N> in \
                 the file name)",
                path.display()
            ),
            JobError::DuplicateRank { rank, files } => write!(
                f,
                "rank {rank} is claimed by two files: {} ({}) and {} ({}); give one file per rank",
                files[0].0.display(),
                files[0].1.as_str(),
                files[1].0.display(),
                files[1].1.as_str()
            ),
            JobError::OutsideWorld {
                path,
                rank,
                world_size,
            } => write!(
                f,
                "{}: rank {rank} is outside world size {world_size}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for JobError {}

/// Checks that the ranks are distinct and known, finds the missing ones,
/// then matches collectives and aligns clocks. Soft problems (world sizes
/// that disagree, missing ranks, unaligned clocks) become
/// [`Job::warnings`]; files that cannot be one job are a [`JobError`].
pub fn assemble(mut inputs: Vec<RankInput>) -> Result<Job, JobError> {
    if inputs.is_empty() {
        return Err(JobError::NoRanks);
    }
    if inputs.len() > 1 {
        if let Some(i) = inputs
            .iter()
            .find(|i| i.meta.rank_source == RankSource::Default)
        {
            return Err(JobError::UnknownRank {
                path: i.meta.path.clone(),
            });
        }
    }
    inputs.sort_by(|a, b| {
        a.meta
            .rank
            .cmp(&b.meta.rank)
            .then(a.meta.path.cmp(&b.meta.path))
    });
    if let Some(w) = inputs.windows(2).find(|w| w[0].meta.rank == w[1].meta.rank) {
        let file = |i: &RankInput| (i.meta.path.clone(), i.meta.rank_source);
        return Err(JobError::DuplicateRank {
            rank: w[0].meta.rank,
            files: [file(&w[0]), file(&w[1])],
        });
    }
    let mut warnings = Vec::new();
    let world_size = world_size(&inputs, &mut warnings);
    if let Some(w) = world_size {
        if let Some(i) = inputs.iter().find(|i| i.meta.rank >= w) {
            return Err(JobError::OutsideWorld {
                path: i.meta.path.clone(),
                rank: i.meta.rank,
                world_size: w,
            });
        }
    }
    let present: Vec<u32> = inputs.iter().map(|i| i.meta.rank).collect();
    let missing = missing_ranks(&present, world_size, &mut warnings);
    let mut ranks = Vec::with_capacity(inputs.len());
    let mut reports = Vec::with_capacity(inputs.len());
    let mut graphs = Vec::with_capacity(inputs.len());
    for i in inputs {
        ranks.push(i.meta);
        reports.push(i.report);
        graphs.push(i.graph);
    }
    let matching = match_collectives(&graphs);
    let clock = align_clocks(&graphs, &matching);
    if !clock.unaligned.is_empty() {
        let unaligned: Vec<u32> = clock
            .unaligned
            .iter()
            .map(|&p| ranks[p as usize].rank)
            .collect();
        warnings.push(format!(
            "rank {} shares no matched collective with rank {}: clock taken as recorded",
            rank_ranges(&unaligned),
            ranks[clock.reference as usize].rank
        ));
    }
    Ok(Job {
        ranks,
        reports,
        graphs,
        world_size,
        missing,
        warnings,
        matching,
        clock,
    })
}

/// The largest world size any file records, with a warning when they
/// disagree.
fn world_size(inputs: &[RankInput], warnings: &mut Vec<String>) -> Option<u32> {
    let sizes: BTreeMap<u32, &Path> = inputs
        .iter()
        .filter_map(|i| i.meta.world_size.map(|w| (w, i.meta.path.as_path())))
        .collect();
    if sizes.len() > 1 {
        let list: Vec<String> = sizes
            .iter()
            .map(|(w, p)| format!("{w} in {}", p.display()))
            .collect();
        warnings.push(format!(
            "files disagree on the world size ({}); using the largest",
            list.join(", ")
        ));
    }
    sizes.keys().next_back().copied()
}

/// The ranks no file holds among those expected (`present` sorted), with a
/// warning naming them.
fn missing_ranks(present: &[u32], world_size: Option<u32>, warnings: &mut Vec<String>) -> Vec<u32> {
    // Without a world size, ranks below the highest one present are
    // expected; ranks above it cannot be known.
    let expected = world_size.or_else(|| present.last().map(|&r| r + 1));
    let missing: Vec<u32> = match expected {
        Some(w) => (0..w)
            .filter(|r| present.binary_search(r).is_err())
            .collect(),
        None => Vec::new(),
    };
    if !missing.is_empty() {
        let which = match world_size {
            Some(w) => format!(
                "rank {} of world size {w} missing (no file)",
                rank_ranges(&missing)
            ),
            None => format!(
                "rank {} missing (no file; no world size recorded, so ranks above {} cannot be \
                 checked)",
                rank_ranges(&missing),
                present.last().copied().unwrap_or(0)
            ),
        };
        warnings.push(format!(
            "{which}: simulating the {} ranks present; their collectives rendezvous among those \
             present",
            present.len()
        ));
    }
    missing
}
