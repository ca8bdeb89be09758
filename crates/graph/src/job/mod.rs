//! Multi-rank jobs: one graph per rank, communication matched across ranks,
//! clocks aligned, and the ranks merged into one graph in which every
//! matched collective is a [`Rendezvous`].
//!
//! Data flow, one function per stage:
//!
//! ```text
//! Trace per rank --rank_graph--> RankGraph (graph, measured, comm tasks)
//!   --match_collectives--> CollectiveMatch (matched sets, problems)
//!   --align_clocks-------> ClockAlignment (offset per rank)
//!   --merge--------------> JobGraph (one graph, rendezvous) + Measured on the job timeline
//! ```
//!
//! [`detect_job`] tells whether files are the ranks of one job at all (one
//! world size, a collective shared). [`assemble`] runs the first three for
//! a front end: it takes one
//! [`RankInput`] per file ([`RankInput::from_trace`]), checks that the files
//! are the distinct ranks of one job, leaves out the files that cannot be
//! ranks of it ([`LeftOut`]: another world size, no collective shared with
//! the others, a clock hours away), and returns a [`Job`] (or a
//! [`JobError`]). [`group_by_program`] finds ranks that run the same
//! communication program, so that a large job can be replayed from one
//! representative per group; [`ProgramGroups`] does so from a small
//! [`RankProgram`] per rank and models each representative's peers inside
//! its group ([`model_group_peers`]).
//!
//! Why a rendezvous: on each rank a collective kernel runs from its own start
//! until the transfer ends, and the transfer cannot end before the last
//! participant has started. Its measured duration therefore includes the
//! time spent waiting for the slowest peer, which must not be replayed as a
//! fixed duration, or the replay could not respond when a peer gets faster
//! or slower. [`merge`] gives each matched collective task its intrinsic
//! transfer time, `(its measured end) - (the last participant's measured
//! start)` on aligned clocks, as its duration, and the simulator ends it at
//! `max(start of every participant) + duration` (method.md section 4).
//!
//! Nothing here reads a measured start into the graph: measured times only
//! derive durations (transfer times), clock offsets and each rank's release
//! offset on the job timeline.

mod assemble;
mod belong;
mod clock;
mod comms;
mod detect;
mod matching;
mod merge;
mod peers;
mod program;
mod restore;

pub use assemble::{
    assemble, assemble_representatives, assemble_with, missing_ranks_warning, Job, JobError,
    RankInput, RankMeta, Unreadable, MISSING_RANKS_TAIL,
};
pub use belong::{LeftOut, LeftOutReason, FAR_CLOCK_NS};
pub use clock::{align_clocks, ClockAlignment, HostClock};
pub use comms::{rank_graph, rank_graph_streamed, CommPattern, CommSink, CommTask, RankGraph};
pub use detect::{detect_job, looks_like_job, shares_collective, Detected};
pub use matching::{
    match_collectives, CollectiveMatch, MatchProblem, MatchRule, MatchedSet, Member, ProblemKind,
};
pub use merge::{
    merge, merge_emptying, merge_owned, JobGraph, RankPart, Rendezvous, RendezvousKind,
};
pub use peers::{
    member_clock_ns, model_group_peers, rank_program, CommTiming, MemberFacts, PeerModel,
    ProgramGroup, ProgramGroups, RankProgram,
};
pub use program::{group_by_program, program_signature, ProgramSignature, RankGroup};
pub use restore::RankRestore;

/// Formats a sorted list of ranks compactly: `0-2, 5, 7`.
pub fn rank_ranges(ranks: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        out.push(match j - i {
            0 => ranks[i].to_string(),
            1 => format!("{}, {}", ranks[i], ranks[j]),
            _ => format!("{}-{}", ranks[i], ranks[j]),
        });
        i = j + 1;
    }
    out.join(", ")
}
