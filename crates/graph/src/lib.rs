//! The execution graph of one rank: CPU tasks per thread, GPU tasks per
//! stream, and every dependency between them, each with an explicit
//! [`DepKind`].
//!
//! Data flows in from [`lumos_trace::Trace`] through [`build`], which returns
//! the [`Graph`] (durations, gaps, latencies), the [`Measured`] ground truth
//! kept apart from it, and a [`BuildReport`] counting every edge found or
//! inferred, by rule. [`check`] verifies the graph's invariants, and
//! [`dump`] writes a graph as deterministic text for tests and diffs.
//!
//! A multi-rank job goes through [`rank_graph`] per trace, then
//! [`match_collectives`], [`align_clocks`] and [`merge`], which gives one
//! [`JobGraph`] whose matched collectives are [`Rendezvous`] (see the `job`
//! module's documentation in the source for the matching rules).
//! [`detect_job`] tells whether files are one job (one world size, a
//! collective shared); [`assemble`] does the per-rank checks and the first stages for a front
//! end: which file is which rank, duplicates, missing ranks ([`Job`],
//! [`JobError`]); [`group_by_program`] groups ranks that run the same
//! communication program.
#![deny(missing_docs)]

mod about;
mod acyclic;
mod build;
mod check;
mod dump;
mod heap;
mod job;
mod model;
mod nccl;
mod report;

pub use about::{FlowEnd, FlowLink, GpuAnnotation, TraceAbout, Track};
pub use build::{build, build_owned, build_streamed, TrackSink, MAX_TRACKS};
pub use check::{check, check_measured, Violation};
pub use dump::dump;
pub use heap::trim_heap;
pub use job::{
    align_clocks, assemble, assemble_representatives, assemble_with, detect_job, group_by_program,
    looks_like_job, match_collectives, member_clock_ns, merge, merge_emptying, merge_owned,
    missing_ranks_warning, model_group_peers, program_signature, rank_graph, rank_graph_streamed,
    rank_program, rank_ranges, shares_collective, ClockAlignment, CollectiveMatch, CommPattern,
    CommSink, CommTask, CommTiming, Detected, HostClock, Job, JobError, JobGraph, LeftOut,
    LeftOutReason, MatchProblem, MatchRule, MatchedSet, Member, MemberFacts, PeerModel,
    ProblemKind, ProgramGroup, ProgramGroups, ProgramSignature, RankGraph, RankGroup, RankInput,
    RankMeta, RankPart, RankProgram, RankRestore, Rendezvous, RendezvousKind, Unreadable,
    FAR_CLOCK_NS, MISSING_RANKS_TAIL,
};
pub use model::*;
pub use nccl::NcclOperators;
pub use report::{
    BuildReport, Rule, GROSS_CLOCK_SKEW_NS, GROSS_LAUNCH_DELAY_NS, GROSS_SYNC_LEAD_NS,
};
