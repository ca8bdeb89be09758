//! Discrete-event replay of a lumos execution graph, and the metrics that
//! compare a replay with the measured run.
//!
//! # The scheduler
//!
//! [`simulate`] is a list scheduler over processors: every CPU thread and
//! GPU stream runs its tasks one at a time, in the order of
//! [`Processor::tasks`](lumos_graph::Processor::tasks). A task starts at the
//! latest of
//!
//! - its [`release_ns`](lumos_graph::Task::release_ns),
//! - the end of the previous task on its processor,
//! - for each fixed [`Edge`](lumos_graph::Edge) into it, the predecessor's
//!   end (anchor `End`) or start (anchor `Start`) plus the edge's latency,
//! - for a blocking call, the end of the GPU work its
//!   [`RuntimeDep`](lumos_graph::RuntimeDep)s resolve to, plus latency,
//!
//! and runs for its duration. Tasks are picked from a min-heap on their
//! start time (ties by task id), so simulated time only moves forward, and
//! runtime dependencies are resolved against what has happened by then: a
//! `StreamTail` wait resolves, once, to the last GPU task on that stream
//! whose launch call has already issued. A dependency that has already
//! finished is not waited on. A stream-tail wait that can never end (the
//! tail depends on work launched after the call, which CUDA would not wait
//! for) is abandoned when nothing else can run
//! ([`BlockingWait::abandoned`], [`Schedule::warnings`]); if tasks remain
//! that can never start (a cycle of fixed dependencies), [`simulate`]
//! returns [`SimError::Stuck`] rather than hang.
//!
//! Times saturate at `i64::MAX` instead of wrapping, and a replay in which
//! a task ends there is [`SimError::ClockOverflow`]: a duration scaled past
//! the range of an `i64` never gives earlier times, nor late ones that
//! would be reported as if they meant something.
//!
//! Blocking calls issue before they block: their launches count from the
//! moment they reach the head of their thread, so a blocking `cudaMemcpy`
//! can wait for the copy it launched itself (see [`BlockingWait`]).
//!
//! The scheduler only ever sees the [`Graph`](lumos_graph::Graph):
//! durations, latencies and releases, never a measured start time.
//!
//! # Multi-rank jobs
//!
//! [`simulate_job`] replays a [`JobGraph`](lumos_graph::JobGraph), every
//! rank in one simulation: each [`Rendezvous`](lumos_graph::Rendezvous)
//! couples a collective's tasks on its ranks, which start as usual and end
//! at `max(start of every participant) + duration`, the duration being the
//! transfer time. [`rendezvous_times`] and [`rank_waits`] tell, from
//! replayed or measured times, who waited for whom;
//! [`job_critical_path`] follows the critical path across ranks.
//!
//! # Metrics
//!
//! The metric functions take task times through [`TaskTimes`], implemented
//! for a replayed [`Schedule`] and for measured spans
//! ([`Measured::tasks`](lumos_graph::Measured::tasks)), so both sides of a
//! comparison use one definition: [`step_spans`], [`breakdown`],
//! [`gpu_busy_timeline`]. [`critical_path`] and [`critical_path_summary`]
//! read back the [`Bound`] recorded for each replayed task.
//!
//! # Example
//!
//! ```
//! use lumos_graph::*;
//! use lumos_sim::{simulate, SimOptions};
//!
//! // One thread launches one kernel; the launch takes 5 us, the kernel 20 us
//! // and starts 2 us after the launch call starts.
//! let task = |kind, proc, duration_ns| Task {
//!     kind, name: NameId(0), proc: ProcId(proc), duration_ns,
//!     release_ns: 0, collective: None, correlation: 0,
//! };
//! let graph = Graph {
//!     names: vec!["k".into()],
//!     tasks: vec![task(TaskKind::Runtime, 0, 5_000), task(TaskKind::Kernel, 1, 20_000)],
//!     processors: vec![
//!         Processor { kind: ProcKind::Thread { pid: 1, tid: 1 }, tasks: vec![TaskId(0)] },
//!         Processor { kind: ProcKind::Stream { device: 0, stream: 7 }, tasks: vec![TaskId(1)] },
//!     ],
//!     edges: vec![Edge {
//!         from: TaskId(0), to: TaskId(1), kind: DepKind::Launch,
//!         anchor: Anchor::Start, latency_ns: 2_000, inferred: false,
//!     }],
//!     ..Graph::default()
//! };
//! let schedule = simulate(&graph, &SimOptions::default()).unwrap();
//! assert_eq!(schedule.start_ns, vec![0, 2_000]);
//! assert_eq!(schedule.makespan_ns(), 22_000);
//! ```
#![deny(missing_docs)]

mod critical_path;
mod error;
mod job;
mod metrics;
mod options;
mod scheduler;

pub use critical_path::{
    critical_path, critical_path_hops, critical_path_hops_since, critical_path_summary, timed_hops,
    timed_hops_iter, BoundKind, BoundTotal, CriticalPathSummary, PathHop, TimedPathHop,
};
pub use error::SimError;
pub use job::{
    job_critical_path, job_critical_path_hops, rank_waits, rendezvous_times, simulate_job,
    JobBound, JobCriticalPath, JobHop, RankWait, RendezvousTimes,
};
pub use metrics::{
    annotation_spans, breakdown, busy_timeline, gpu_busy_intervals, gpu_busy_timeline, step_spans,
    timeline_bin_ns, whole_span, window_span, Breakdown, BusyBins, BusyTimeline, ScheduleSlice,
    SpanColumns, TaskTimes, MAX_TIMELINE_BINS,
};
pub use options::{Cancel, DurationScale, GpuSelector, SimOptions, DEFAULT_LAUNCH_QUEUE};
pub use scheduler::{simulate, simulate_with_rendezvous, BlockingWait, Bound, Schedule};
