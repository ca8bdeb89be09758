//! The joint replay of a job and its report: every rank compared with its
//! measurement on the joint schedule, the job's step (the slowest rank's),
//! who waited for whom, and the critical path across ranks.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::io::{self, Write};

use lumos_graph::{
    merge, merge_emptying, rank_ranges, Graph, Job, JobGraph, Measured, RankInput, TaskId,
};
use lumos_sim::{
    job_critical_path, rank_waits, rendezvous_times, simulate_job, RankWait, RendezvousTimes,
    Schedule, SimOptions, TaskTimes,
};
use lumos_store::{MemoryGuard, NoRoomToReplay};
use lumos_trace::MemoryEvent;
use rayon::prelude::*;

use super::{
    job_report, CollectiveReport, JobPathReport, JobStep, RankTime, RankWaitReport,
    RendezvousReport, WaitUs,
};
use crate::analysis::{trace_analysis_with, AnalysisInputs, AnalysisOptions, Found};
use crate::replay::{
    critical_path_report, replay_built, with_kernel_scales, Compared, CriticalPath, ReplayOutput,
    Replayed, TraceInfo,
};
#[cfg(doc)]
use crate::timeline::merged_file_name;
use crate::timeline::{MergedWriter, Timeline};
use crate::units::{err_pct, us};
use crate::ReportError;
use lumos_predict::KernelScale;

/// A what-if for one rank of a job: its GPU compute durations (not its
/// communication) multiplied by `factor`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankScale {
    /// The rank.
    pub rank: u32,
    /// The factor.
    pub factor: f64,
}

/// Refuses a rank that `scales` names twice (`flag`, the option that
/// gave them, names it in the message): its factors would be multiplied,
/// two of 1e6 making 1e12, past the range each is checked against. Both
/// front ends check their rank scales here, before reading anything.
pub fn distinct_ranks(scales: &[RankScale], flag: &str) -> Result<(), String> {
    match (scales.iter().enumerate()).find(|(i, s)| scales[..*i].iter().any(|e| e.rank == s.rank)) {
        Some((_, s)) => Err(format!(
            "{flag} names rank {} twice; give each rank one factor",
            s.rank
        )),
        None => Ok(()),
    }
}

/// A job replayed jointly: its ranks merged into one graph, their measured
/// times on the job timeline, and the schedule; the report
/// ([`JobReplayed::report`]) and each rank's timeline
/// ([`JobReplayed::timeline`]) are made from it, reading each rank's own
/// graph back from the job graph ([`JobReplayed::rank`]) one at a time.
#[derive(Debug)]
pub struct JobReplayed<'j> {
    /// The job: borrowed as given to [`replay_jointly`], or owned, as
    /// [`replay_jointly_owned`] took it, with each rank's graph and
    /// measured times emptied once merged (their rank numbers,
    /// communication tasks and groups stay; [`JobReplayed::rank`] gives the
    /// rest back).
    pub job: Cow<'j, Job>,
    /// Its ranks merged, with the what-if edits applied.
    pub graph: JobGraph,
    /// The measured times on the job timeline.
    pub measured: Measured,
    /// The joint replay.
    pub schedule: Schedule,
    /// The what-if edits, as the report lists them.
    pub what_if: Vec<String>,
    /// The merge's warnings.
    pub merge_warnings: Vec<String>,
}

/// Merges the ranks of `job`, scales the ranks `scales` name (their CPU
/// tasks too with `scale_cpu`) and replays them together under `opts`.
pub fn replay_jointly<'j>(
    job: &'j Job,
    opts: &SimOptions,
    scales: &[RankScale],
    scale_cpu: bool,
) -> Result<JobReplayed<'j>, ReportError> {
    replay_jointly_scaled(job, opts, &[], scales, scale_cpu)
}

/// [`replay_jointly`] with the kernel speed-ups `kernels` (the predictor's
/// syntax) resolved on the merged graph and applied on every rank.
pub fn replay_jointly_scaled<'j>(
    job: &'j Job,
    opts: &SimOptions,
    kernels: &[KernelScale],
    scales: &[RankScale],
    scale_cpu: bool,
) -> Result<JobReplayed<'j>, ReportError> {
    let merged = merge(&job.graphs, &job.matching, &job.clock);
    replay_merged(Cow::Borrowed(job), merged, opts, kernels, scales, scale_cpu)
}

/// The least a joint replay takes beyond the ranks it replays, per task:
/// the merged job graph, the simulation's state and the report's
/// analyses, less what the read freed and the replay reuses. Measured as
/// the peak resident size of `lumos replay --json` less the size after
/// the read (5 December 2026): 83 B on a synthesized GPT-3 175B job of 64
/// ranks (4.1 M tasks), 120 to 250 B on smaller jobs. A lower bound, so
/// that [`room_to_replay`] refuses no job that fits.
pub const JOINT_REPLAY_BYTES_PER_TASK: u64 = 80;

/// [`JOINT_REPLAY_BYTES_PER_TASK`] for a replay that keeps the job
/// ([`replay_jointly_scaled`], a `lumos.Job` replayed from Python): its
/// merged graph is a copy of every rank's. Measured likewise, in the
/// Python package (`load_job(DIR).replay()`, the peak less the size after
/// `load_job`, 5 December 2026): 251 B on synthesized GPT-3 175B jobs of
/// 16 and 64 ranks (1.0 and 4.1 M tasks), 277 and 291 B on smaller ones.
pub const JOINT_REPLAY_KEEPING_JOB_BYTES_PER_TASK: u64 = 240;

/// Refuses the joint replay of `job` that gives the job up
/// ([`replay_jointly_owned`]) where `guard`, the one its ranks were read
/// under, finds that it would pass the limit.
pub fn room_to_replay(guard: &MemoryGuard, job: &Job) -> Result<(), NoRoomToReplay> {
    room_at(guard, job, JOINT_REPLAY_BYTES_PER_TASK)
}

/// [`room_to_replay`] for a replay that keeps the job
/// ([`replay_jointly_scaled`]).
pub fn room_to_replay_keeping_job(guard: &MemoryGuard, job: &Job) -> Result<(), NoRoomToReplay> {
    room_at(guard, job, JOINT_REPLAY_KEEPING_JOB_BYTES_PER_TASK)
}

fn room_at(guard: &MemoryGuard, job: &Job, per_task: u64) -> Result<(), NoRoomToReplay> {
    let tasks: usize = job.graphs.iter().map(|g| g.graph.tasks.len()).sum();
    guard.room_to_replay(job.graphs.len(), tasks, tasks as u64 * per_task)
}

/// [`replay_jointly_scaled`], taking the job: each rank's graph and
/// measured times are freed as soon as they are merged
/// ([`merge_emptying`]), so the job never holds every task twice (about
/// 270 B per task at its peak instead of 455 to 485). The report and the
/// timelines are the same, byte for byte.
pub fn replay_jointly_owned(
    mut job: Job,
    opts: &SimOptions,
    kernels: &[KernelScale],
    scales: &[RankScale],
    scale_cpu: bool,
) -> Result<JobReplayed<'static>, ReportError> {
    let merged = merge_emptying(&mut job.graphs, &job.matching, &job.clock);
    replay_merged(Cow::Owned(job), merged, opts, kernels, scales, scale_cpu)
}

/// The error for the first rank `scales` names that `job` lacks, if any:
/// front ends check before they spend memory on the replay.
pub fn scaled_ranks_in(job: &Job, scales: &[RankScale]) -> Result<(), ReportError> {
    match scales.iter().find(|s| job.position(s.rank).is_none()) {
        Some(s) => Err(ReportError::RankNotInJob {
            rank: s.rank,
            ranks: rank_ranges(&job.rank_numbers()),
        }),
        None => Ok(()),
    }
}

/// Scales the ranks `scales` name in the job graph `merge` made of `job`,
/// then replays it.
fn replay_merged<'j>(
    job: Cow<'j, Job>,
    (mut graph, measured, merge_warnings): (JobGraph, Measured, Vec<String>),
    opts: &SimOptions,
    kernels: &[KernelScale],
    scales: &[RankScale],
    scale_cpu: bool,
) -> Result<JobReplayed<'j>, ReportError> {
    let what = format!("the job of {} ranks", job.rank_numbers().len());
    let opts = &with_kernel_scales(&graph.graph, opts, kernels, &what)?;
    scaled_ranks_in(&job, scales)?;
    let mut what_if = Vec::new();
    // Every one is in the job (checked above).
    for (s, pos) in scales
        .iter()
        .filter_map(|s| Some((s, job.position(s.rank)?)))
    {
        graph.scale_rank(pos, s.factor, scale_cpu);
        what_if.push(format!(
            "rank {}: GPU compute{} x{}",
            s.rank,
            if scale_cpu { " and CPU" } else { "" },
            s.factor
        ));
    }
    ReportError::refuse_empty(&graph.graph, || "the job".to_owned())?;
    let schedule =
        simulate_job(&graph, opts).map_err(|e| ReportError::job_replay(&job, &graph, e))?;
    Ok(JobReplayed {
        job,
        graph,
        measured,
        schedule,
        what_if,
        merge_warnings,
    })
}

/// Replays `job` jointly ([`replay_jointly`]) and reports on it: one
/// [`TraceReplay`](crate::TraceReplay) per rank (as a single-rank replay would, but with the
/// joint schedule), their summary, and the job report.
pub fn replay_job(
    job: &Job,
    opts: &SimOptions,
    scales: &[RankScale],
    scale_cpu: bool,
) -> Result<ReplayOutput, ReportError> {
    Ok(replay_jointly(job, opts, scales, scale_cpu)?.report())
}

/// One rank's own graph and measured times ([`JobReplayed::rank`]):
/// borrowed from the job, or a copy read back from the job graph.
pub type OwnRank<'a> = (Cow<'a, Graph>, Cow<'a, Measured>);

/// Replays one of several inputs on its own, from the rank
/// [`RankInput::from_trace`] built of its trace (`lumos_store::prepare`
/// builds every input so, to tell with [`lumos_graph::detect_job`] whether
/// they are one job): the replay [`replay_owned`](crate::replay_owned)
/// makes of the trace, without building it a second time. `memory` is the trace's `[memory]` events;
/// the measured half of the report under `analysis` is found while the
/// simulation runs ([`replay_path_for`](crate::replay_path_for)).
pub fn replay_rank_alone(
    rank: RankInput,
    memory: Vec<MemoryEvent>,
    (opts, scales): (&SimOptions, &[KernelScale]),
    analysis: &crate::AnalysisOptions,
) -> Result<Replayed, ReportError> {
    let RankInput {
        meta,
        graph,
        report,
    } = rank;
    replay_built(
        meta,
        memory,
        (graph.graph, graph.measured, report),
        opts,
        scales,
        Some(analysis),
    )
    .map(crate::replay::trimmed)
}

/// The replayed times of one rank's own tasks, moved back to its own
/// window origin (where its measured times are).
pub(crate) struct RankTimes {
    pub(crate) start_ns: Vec<i64>,
    end_ns: Vec<i64>,
}

impl TaskTimes for RankTimes {
    fn task_count(&self) -> usize {
        self.start_ns.len()
    }
    fn start_of(&self, t: TaskId) -> i64 {
        self.start_ns[t.idx()]
    }
    fn end_of(&self, t: TaskId) -> i64 {
        self.end_ns[t.idx()]
    }
}

/// The step that sets the job's time: the slowest rank's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slowest {
    /// The rank's position among the job's ranks.
    pub pos: usize,
    /// Its step's length.
    pub ns: i64,
}

/// The job's step `k` is the slowest rank's step `k`: for each step every
/// rank has (`steps[p]` being position `p`'s step lengths), which rank that
/// is (the lowest position among equals) and how long.
pub fn slowest_rank_steps(steps: &[Vec<i64>]) -> Vec<Slowest> {
    let n = steps.iter().map(Vec::len).min().unwrap_or(0);
    (0..n)
        .map(|k| {
            steps
                .iter()
                .enumerate()
                .map(|(pos, s)| Slowest { pos, ns: s[k] })
                .max_by_key(|s| (s.ns, Reverse(s.pos)))
                .unwrap_or(Slowest { pos: 0, ns: 0 })
        })
        .collect()
}

impl<'j> JobReplayed<'j> {
    /// Rank `pos`'s own graph and measured times (its window origin), as
    /// they were before merging: borrowed from the job where it still
    /// holds them (a job [`replay_jointly`] borrowed), else read back from
    /// the job graph ([`JobGraph::rank_graph`]: one copy of the rank).
    ///
    /// # Panics
    ///
    /// When `pos` is not a rank's position, or the job graph was not made
    /// by merging (every `JobReplayed` of this crate's functions is).
    pub fn rank(&self, pos: usize) -> OwnRank<'_> {
        if let Cow::Borrowed(job) = &self.job {
            let r = &job.graphs[pos];
            return (Cow::Borrowed(&r.graph), Cow::Borrowed(&r.measured));
        }
        let (graph, measured) = self
            .graph
            .rank_graph(pos, &self.measured)
            .expect("a merged job graph gives back each of its ranks");
        (Cow::Owned(graph), Cow::Owned(measured))
    }

    /// Writes every rank's replayed timeline into `out` as one Kineto
    /// trace (uncompressed; [`MergedTimeline`](crate::MergedTimeline)'s
    /// file, named [`merged_file_name`]`("replayed")`) and gives `out`
    /// back. One rank's graph is read back at a time and freed once
    /// written, so the job's ranks are never all copied at once.
    pub fn write_merged_timeline<W: Write>(&self, out: W) -> io::Result<W> {
        let mut w = MergedWriter::of_ranks(out, &self.job.ranks, "replayed");
        for pos in 0..self.rank_count() {
            let rank = self.rank(pos);
            w.rank(&mut self.timeline(pos, &rank));
        }
        w.finish()
    }

    /// The number of ranks replayed.
    pub fn rank_count(&self) -> usize {
        self.job.ranks.len()
    }

    /// Rank `pos`'s replayed times on its own window origin.
    pub(crate) fn rank_times(&self, pos: usize) -> RankTimes {
        let part = &self.graph.ranks[pos];
        let r = part.tasks.start as usize..part.tasks.end as usize;
        let shift = part.start_ns;
        let schedule = &self.schedule;
        RankTimes {
            start_ns: schedule.start_ns[r.clone()]
                .iter()
                .map(|t| t.saturating_sub(shift))
                .collect(),
            end_ns: schedule.end_ns[r]
                .iter()
                .map(|t| t.saturating_sub(shift))
                .collect(),
        }
    }

    /// Rank `pos`'s replayed timeline on its own clock; `rank` is its own
    /// graph and measured times ([`JobReplayed::rank`]), which the
    /// timeline borrows.
    pub fn timeline<'a>(&'a self, pos: usize, rank: &'a OwnRank<'_>) -> Timeline<'a> {
        Timeline::of_rank(
            &self.job.ranks[pos],
            &rank.0,
            &rank.1,
            Box::new(self.rank_times(pos)),
        )
    }

    /// The names of rank `pos`'s steps, from the job graph.
    fn step_names_of(&self, pos: usize) -> Vec<String> {
        let steps = &self.graph.ranks[pos].steps;
        self.graph.graph.steps[steps.start as usize..steps.end as usize]
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    /// A warning where ranks name their steps differently, or some record
    /// steps and others none: the job's steps pair each rank's k-th step
    /// (a rank without steps has its whole window), which is only right
    /// where every rank recorded the same iterations.
    fn step_name_disagreement(&self) -> Option<String> {
        let job = &*self.job;
        let names: Vec<Vec<String>> = (0..job.ranks.len())
            .map(|p| self.step_names_of(p))
            .collect();
        let first = names.iter().position(|n| !n.is_empty())?;
        let differs =
            |n: &[String]| n.is_empty() || n.iter().zip(&names[first]).any(|(a, b)| a != b);
        let odd: Vec<usize> = (0..names.len()).filter(|&p| differs(&names[p])).collect();
        let &p = odd.first()?;
        let (r, f) = (&job.ranks[p], &job.ranks[first]);
        let what = match names[p].iter().zip(&names[first]).position(|(a, b)| a != b) {
            Some(k) => format!(
                "rank {} ({}) calls its step {k} {:?} where rank {} calls it {:?}",
                r.rank,
                r.file().display(),
                names[p][k],
                f.rank,
                names[first][k]
            ),
            None => format!(
                "rank {} ({}) recorded no steps where rank {} recorded {} (its whole window \
                 stands for its steps)",
                r.rank,
                r.file().display(),
                f.rank,
                names[first].len()
            ),
        };
        Some(format!(
            "{} rank(s) name their steps differently from rank {}: {what}; the job's steps \
             pair each rank's steps by position, right only if the ranks recorded the same \
             iterations",
            odd.len(),
            f.rank
        ))
    }

    /// Every rank compared with its measurement, their summary, and the
    /// job report; every step analysed.
    pub fn report(&self) -> ReplayOutput {
        let all: Vec<Vec<usize>> = self
            .graph
            .ranks
            .iter()
            .map(|part| (0..part.steps.len()).collect())
            .collect();
        self.report_on(&all, &AnalysisOptions::default())
    }

    /// [`JobReplayed::report`] with each rank's analyses over the steps
    /// `opts` selects; an error names a rank that lacks one of them.
    pub fn report_with(&self, opts: &AnalysisOptions) -> Result<ReplayOutput, ReportError> {
        let positions = self
            .job
            .ranks
            .iter()
            .enumerate()
            .map(|(pos, meta)| {
                opts.steps
                    .resolve(&self.step_names_of(pos))
                    .map_err(|problem| ReportError::Steps {
                        path: meta.file().display().to_string(),
                        problem,
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.report_on(&positions, opts))
    }

    fn report_on(&self, positions: &[Vec<usize>], opts: &AnalysisOptions) -> ReplayOutput {
        let job = &*self.job;
        // One rank at a time per thread: each reads its graph back from the
        // job graph, reports and frees it, so memory holds at most one
        // rank's copy per thread.
        let per_rank: Vec<RankReport> = (0..job.ranks.len())
            .into_par_iter()
            .map(|pos| self.rank_report(pos, &positions[pos], opts))
            .collect();
        let mut traces = Vec::with_capacity(per_rank.len());
        let mut measured_steps = Vec::with_capacity(per_rank.len());
        let mut replayed_steps = Vec::with_capacity(per_rank.len());
        for r in per_rank {
            traces.push(r.trace);
            measured_steps.push(r.measured_steps);
            replayed_steps.push(r.replayed_steps);
        }
        let mut report = job_report(job);
        report.warnings.extend(self.merge_warnings.iter().cloned());
        report.warnings.extend(self.schedule.warnings());
        let n_steps = measured_steps.iter().map(Vec::len).min().unwrap_or(0);
        if measured_steps.iter().any(|s| s.len() != n_steps) {
            report.warnings.push(format!(
                "ranks recorded different numbers of steps; comparing the first {n_steps}"
            ));
        }
        report.warnings.extend(self.step_name_disagreement());
        report.what_if = self.what_if.clone();
        report.steps = Some(self.job_steps(&measured_steps, &replayed_steps));
        let (collectives, waiting) = self.rendezvous_reports();
        report.collectives = Some(collectives);
        report.waiting = Some(waiting);
        report.critical_path = self.job_critical_path();
        let mut out = ReplayOutput::of_traces(traces);
        out.job = Some(report);
        out
    }

    /// Rank `pos` compared with its measurement, and its step lengths,
    /// measured and replayed.
    fn rank_report(&self, pos: usize, steps: &[usize], opts: &AnalysisOptions) -> RankReport {
        let job = &*self.job;
        let meta = &job.ranks[pos];
        let (g, m) = self.rank(pos);
        let times = self.rank_times(pos);
        let found = Found::of(&g, &m, &times);
        let shared = found.shared();
        let lengths = |spans: &[lumos_graph::Span]| -> Vec<i64> {
            spans.iter().map(lumos_graph::Span::len_ns).collect()
        };
        let measured_steps = lengths(&shared.measured.steps);
        let replayed_steps = lengths(&shared.replayed.steps);
        let info = TraceInfo::of_rank(meta, &job.reports[pos]);
        let inputs = AnalysisInputs {
            memory: None,
            schedule: None,
        };
        let analysis = trace_analysis_with(&g, &m, &times, steps, opts, inputs, shared);
        let sides = [shared.measured, shared.replayed];
        let compared = Compared::of_sides(&g, sides);
        let path = self.rank_critical_path(pos);
        RankReport {
            trace: compared.report(info, &g, path, analysis),
            measured_steps,
            replayed_steps,
        }
    }

    /// The critical path from rank `pos`'s last task, across ranks.
    fn rank_critical_path(&self, pos: usize) -> Option<CriticalPath> {
        let part = &self.graph.ranks[pos];
        let last = (part.tasks.start..part.tasks.end)
            .max_by_key(|&t| (self.schedule.end_ns[t as usize], Reverse(t)))
            .map(TaskId)?;
        let cp = job_critical_path(&self.graph, &self.schedule, last, 10);
        Some(critical_path_report(&self.graph.graph, &cp.summary))
    }

    /// The job's steps: each the slowest rank's, measured and replayed
    /// apart.
    fn job_steps(&self, measured: &[Vec<i64>], replayed: &[Vec<i64>]) -> Vec<JobStep> {
        let job = &*self.job;
        slowest_rank_steps(measured)
            .into_iter()
            .zip(slowest_rank_steps(replayed))
            .enumerate()
            .map(|(k, (m, r))| JobStep {
                index: k,
                // Ranks without steps have one: the whole window.
                name: self.graph.ranks[m.pos].steps.clone().nth(k).map_or_else(
                    || "window".to_owned(),
                    |s| self.graph.graph.steps[s as usize].name.clone(),
                ),
                measured_us: us(m.ns),
                replayed_us: us(r.ns),
                error_pct: err_pct(m.ns, r.ns),
                slowest_rank_measured: job.ranks[m.pos].rank,
                slowest_rank_replayed: job.ranks[r.pos].rank,
            })
            .collect()
    }

    /// Per matched collective, who waited and the transfer; per rank, its
    /// waiting: measured and replayed.
    fn rendezvous_reports(&self) -> (Vec<CollectiveReport>, Vec<RankWaitReport>) {
        let job = &*self.job;
        let m_rv = rendezvous_times(&self.graph, &self.measured.tasks);
        let r_rv = rendezvous_times(&self.graph, &self.schedule);
        let collectives = job
            .matching
            .sets
            .iter()
            .enumerate()
            .map(|(i, s)| CollectiveReport {
                label: s.label.clone(),
                rule: s.rule.as_str(),
                name: s.name.clone(),
                bytes: s.bytes,
                ranks: s
                    .members
                    .iter()
                    .map(|m| job.ranks[m.rank_pos as usize].rank)
                    .collect(),
                measured: self.rendezvous_report(i, &m_rv[i]),
                replayed: self.rendezvous_report(i, &r_rv[i]),
            })
            .collect();
        let m_wait = rank_waits(&self.graph, &m_rv);
        let r_wait = rank_waits(&self.graph, &r_rv);
        let waiting = job
            .ranks
            .iter()
            .enumerate()
            .map(|(p, meta)| RankWaitReport {
                rank: meta.rank,
                measured: wait_us(&m_wait[p]),
                replayed: wait_us(&r_wait[p]),
            })
            .collect();
        (collectives, waiting)
    }

    fn rendezvous_report(&self, i: usize, t: &RendezvousTimes) -> RendezvousReport {
        let rank_of = |task: TaskId| self.job.ranks[self.graph.rank_of(task)].rank;
        RendezvousReport {
            last_rank: self.graph.rendezvous[i]
                .tasks
                .get(t.last)
                .map(|&x| rank_of(x))
                .unwrap_or(0),
            skew_us: us(t.skew_ns()),
            end_spread_us: us(t.end_spread_ns),
            wait_us: t.wait_ns.iter().map(|&w| us(w)).collect(),
            transfer_us: t.transfer_ns.iter().map(|&w| us(w)).collect(),
            end_us: t
                .transfer_ns
                .iter()
                .map(|&w| us(t.last_start_ns.saturating_add(w)))
                .collect(),
        }
    }

    /// The job's critical path: from the end of the rank that finishes
    /// last.
    fn job_critical_path(&self) -> Option<JobPathReport> {
        let job = &*self.job;
        let last = self.schedule.last_task()?;
        let cp = job_critical_path(&self.graph, &self.schedule, last, 10);
        Some(JobPathReport {
            from_rank: job.ranks[self.graph.rank_of(last)].rank,
            rank_changes: cp.rank_changes,
            per_rank_us: job
                .ranks
                .iter()
                .zip(&cp.per_rank_ns)
                .filter(|(_, &ns)| ns > 0)
                .map(|(m, &ns)| RankTime {
                    rank: m.rank,
                    us: us(ns),
                })
                .collect(),
            by_bound: critical_path_report(&self.graph.graph, &cp.summary).by_bound,
        })
    }
}

/// What one rank adds to a job's report.
struct RankReport {
    /// The rank against its measurement.
    trace: crate::TraceReplay,
    /// Its measured step lengths.
    measured_steps: Vec<i64>,
    /// Its replayed step lengths.
    replayed_steps: Vec<i64>,
}

fn wait_us(w: &RankWait) -> WaitUs {
    WaitUs {
        wait_us: us(w.wait_ns),
        caused_us: us(w.caused_ns),
        last_arrivals: w.last_arrivals,
    }
}
