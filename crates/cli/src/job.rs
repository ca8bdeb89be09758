//! Multi-rank jobs on the command line: telling the ranks apart, matching
//! their collectives, aligning their clocks, one joint replay, and the
//! straggler report.
//!
//! Inputs form a job when `--job` is given, or when there are at least two
//! files and every one records the same `distributedInfo.world_size` above
//! 1 (the ranks of one job). Anything else (a corpus of unrelated traces)
//! is replayed trace by trace, as before. A job with a rank missing is
//! simulated with the ranks present: their collectives rendezvous among
//! themselves, which is what the missing rank's files cannot tell us
//! otherwise; a warning names the missing ranks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use lumos_graph::{
    align_clocks, match_collectives, merge, rank_graph, rank_ranges, BuildReport, ClockAlignment,
    CollectiveMatch, JobGraph, Measured, RankGraph, TaskId,
};
use lumos_sim::{
    job_critical_path, rank_waits, rendezvous_times, simulate_job, step_spans, RankWait,
    RendezvousTimes, Schedule, SimOptions, SpanColumns,
};
use lumos_trace::{RankSource, Trace, TraceMeta};
use rayon::prelude::*;
use serde::Serialize;

use crate::replay::{self, us, TraceReplay};
use crate::usage::usage;

/// What the command line says about one rank's file.
pub struct RankFile {
    pub path: PathBuf,
    pub rank: u32,
    pub rank_source: RankSource,
    pub world_size: Option<u32>,
    pub base_time_ns: Option<i64>,
    pub warnings: Vec<String>,
}

/// One rank, read and built; its trace is dropped.
pub struct LoadedRank {
    pub file: RankFile,
    pub graph: RankGraph,
    pub report: BuildReport,
}

/// Builds a rank's graph and keeps what the job needs from its trace.
pub fn load_rank(trace: &Trace) -> LoadedRank {
    let (graph, report) = rank_graph(trace);
    LoadedRank {
        file: RankFile {
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

/// A job: its ranks (sorted by rank), what is missing, and how their
/// collectives matched and clocks aligned.
pub struct Job {
    pub files: Vec<RankFile>,
    pub reports: Vec<BuildReport>,
    pub graphs: Vec<RankGraph>,
    pub world_size: Option<u32>,
    pub missing: Vec<u32>,
    pub warnings: Vec<String>,
    pub matching: CollectiveMatch,
    pub clock: ClockAlignment,
}

fn source_str(s: RankSource) -> &'static str {
    match s {
        RankSource::DistributedInfo => "distributedInfo",
        RankSource::FileName => "file_name",
        RankSource::Default => "default",
    }
}

/// Checks that the ranks are distinct and known, finds the missing ones,
/// then matches collectives and aligns clocks.
pub fn assemble(mut loaded: Vec<LoadedRank>) -> Result<Job> {
    if loaded.is_empty() {
        bail!("no rank of the job could be read");
    }
    for l in &loaded {
        if l.file.rank_source == RankSource::Default && loaded.len() > 1 {
            bail!(
                "{}: cannot tell which rank this file is (no distributedInfo.rank, no rank<N> in \
                 the file name)",
                l.file.path.display()
            );
        }
    }
    loaded.sort_by(|a, b| {
        a.file
            .rank
            .cmp(&b.file.rank)
            .then(a.file.path.cmp(&b.file.path))
    });
    for w in loaded.windows(2) {
        if w[0].file.rank == w[1].file.rank {
            bail!(
                "rank {} is claimed by two files: {} ({}) and {} ({}); give one file per rank",
                w[0].file.rank,
                w[0].file.path.display(),
                source_str(w[0].file.rank_source),
                w[1].file.path.display(),
                source_str(w[1].file.rank_source)
            );
        }
    }
    let mut warnings = Vec::new();
    let sizes: BTreeMap<u32, &Path> = loaded
        .iter()
        .filter_map(|l| l.file.world_size.map(|w| (w, l.file.path.as_path())))
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
    let world_size = sizes.keys().next_back().copied();
    if let Some(w) = world_size {
        if let Some(l) = loaded.iter().find(|l| l.file.rank >= w) {
            bail!(
                "{}: rank {} is outside world size {w}",
                l.file.path.display(),
                l.file.rank
            );
        }
    }
    let present: Vec<u32> = loaded.iter().map(|l| l.file.rank).collect();
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
    let mut files = Vec::with_capacity(loaded.len());
    let mut reports = Vec::with_capacity(loaded.len());
    let mut graphs = Vec::with_capacity(loaded.len());
    for l in loaded {
        files.push(l.file);
        reports.push(l.report);
        graphs.push(l.graph);
    }
    let matching = match_collectives(&graphs);
    let clock = align_clocks(&graphs, &matching);
    if !clock.unaligned.is_empty() {
        let ranks: Vec<u32> = clock
            .unaligned
            .iter()
            .map(|&p| files[p as usize].rank)
            .collect();
        warnings.push(format!(
            "rank {} shares no matched collective with rank {}: clock taken as recorded",
            rank_ranges(&ranks),
            files[clock.reference as usize].rank
        ));
    }
    Ok(Job {
        files,
        reports,
        graphs,
        world_size,
        missing,
        warnings,
        matching,
        clock,
    })
}

/// Reads and builds every file of a job in parallel, dropping each trace as
/// soon as its graph is built (memory: one trace per thread at a time).
/// Files that cannot be read are reported and left out (their ranks then
/// count as missing); the flag says whether all were read.
pub fn load_files(files: &[PathBuf]) -> (Vec<LoadedRank>, bool) {
    let results: Vec<Result<LoadedRank, lumos_trace::ReadError>> = files
        .par_iter()
        .map(|f| lumos_trace::read_path(f).map(|t| load_rank(&t)))
        .collect();
    let mut ok = true;
    let mut out = Vec::new();
    for r in results {
        match r {
            Ok(l) => out.push(l),
            Err(e) => {
                eprintln!("error: {e}");
                ok = false;
            }
        }
    }
    (out, ok)
}

/// `--scale-rank R=FACTOR`.
#[derive(Debug, Clone, Copy)]
pub struct RankScale {
    pub rank: u32,
    pub factor: f64,
}

impl std::str::FromStr for RankScale {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (r, f) = s
            .split_once('=')
            .ok_or_else(|| format!("expected RANK=FACTOR, got `{s}`"))?;
        let rank = r
            .trim()
            .parse()
            .map_err(|_| format!("`{r}` is not a rank number"))?;
        let factor: f64 = f
            .trim()
            .parse()
            .map_err(|_| format!("`{f}` is not a number"))?;
        if !(factor.is_finite() && factor > 0.0) {
            return Err(format!("factor must be a positive number, got {factor}"));
        }
        Ok(RankScale { rank, factor })
    }
}

// ---------------------------------------------------------------------------
// JSON shapes (the `job` object of `replay --json` and `inspect --json`).

#[derive(Serialize)]
pub struct JobReport {
    /// Ranks present, ascending.
    pub ranks: Vec<u32>,
    pub rank_sources: Vec<&'static str>,
    pub world_size: Option<u32>,
    pub missing_ranks: Vec<u32>,
    pub warnings: Vec<String>,
    pub matching: MatchingReport,
    pub clock: ClockReport,
    /// Replay only: the what-if edits applied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub what_if: Vec<String>,
    /// Replay only: each step across ranks; the job's step time is the
    /// slowest rank's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<JobStep>>,
    /// Replay only: per matched collective, who waited and the transfer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<Vec<CollectiveReport>>,
    /// Replay only: waiting per rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Vec<RankWaitReport>>,
    /// Replay only: the critical path of the slowest rank, across ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_path: Option<JobPathReport>,
}

#[derive(Serialize)]
pub struct MatchingReport {
    pub sets: usize,
    pub matched_tasks: usize,
    pub unmatched_tasks: usize,
    pub by_rule: BTreeMap<&'static str, usize>,
    pub problems: Vec<ProblemReport>,
    pub per_rank: Vec<RankCommReport>,
}

#[derive(Serialize)]
pub struct ProblemReport {
    pub kind: &'static str,
    pub label: String,
    pub detail: String,
    pub unmatched_tasks: usize,
}

#[derive(Serialize)]
pub struct RankCommReport {
    pub rank: u32,
    pub comm_tasks: usize,
    pub unmatched: usize,
}

#[derive(Serialize)]
pub struct ClockReport {
    pub reference_rank: u32,
    /// Per rank: how far its clock is ahead of the reference rank's.
    pub offsets: Vec<RankOffset>,
    pub unaligned_ranks: Vec<u32>,
    /// Over matched collectives: latest minus earliest measured end.
    pub end_spread_us: Spread,
    pub raw_end_spread_us: Spread,
}

#[derive(Serialize)]
pub struct RankOffset {
    pub rank: u32,
    pub offset_us: f64,
}

#[derive(Serialize, Default)]
pub struct Spread {
    pub median: f64,
    pub max: f64,
}

#[derive(Serialize)]
pub struct JobStep {
    pub index: usize,
    pub name: String,
    pub measured_us: f64,
    pub replayed_us: f64,
    pub error_pct: f64,
    pub slowest_rank_measured: u32,
    pub slowest_rank_replayed: u32,
}

#[derive(Serialize)]
pub struct CollectiveReport {
    pub label: String,
    pub rule: &'static str,
    pub name: String,
    pub bytes: Option<u64>,
    pub ranks: Vec<u32>,
    pub measured: RendezvousReport,
    pub replayed: RendezvousReport,
}

#[derive(Serialize)]
pub struct RendezvousReport {
    /// The rank that arrived last: the others waited for it.
    pub last_rank: u32,
    /// Last arrival minus first.
    pub skew_us: f64,
    /// Latest end minus earliest end (aligned clocks for measured).
    pub end_spread_us: f64,
    /// Per participant, in `ranks` order.
    pub wait_us: Vec<f64>,
    pub transfer_us: Vec<f64>,
    /// Per participant: its end on the job timeline (aligned clocks, 0 =
    /// the earliest rank's window start).
    pub end_us: Vec<f64>,
}

#[derive(Serialize)]
pub struct RankWaitReport {
    pub rank: u32,
    pub measured: WaitUs,
    pub replayed: WaitUs,
}

#[derive(Serialize)]
pub struct WaitUs {
    /// Time its collectives waited for peers.
    pub wait_us: f64,
    /// Time the other ranks waited in collectives it arrived at last.
    pub caused_us: f64,
    pub last_arrivals: usize,
}

#[derive(Serialize)]
pub struct JobPathReport {
    pub from_rank: u32,
    pub rank_changes: usize,
    pub per_rank_us: Vec<RankTime>,
    pub by_bound: Vec<replay::BoundShare>,
}

#[derive(Serialize)]
pub struct RankTime {
    pub rank: u32,
    pub us: f64,
}

fn spread(v: &[i64]) -> Spread {
    if v.is_empty() {
        return Spread::default();
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    Spread {
        median: us(s[s.len() / 2]),
        max: us(s[s.len() - 1]),
    }
}

/// The parts of the job report that need no replay.
pub fn report(job: &Job) -> JobReport {
    let m = &job.matching;
    let mut by_rule = BTreeMap::new();
    for s in &m.sets {
        *by_rule.entry(s.rule.as_str()).or_insert(0) += s.members.len();
    }
    JobReport {
        ranks: job.files.iter().map(|f| f.rank).collect(),
        rank_sources: job
            .files
            .iter()
            .map(|f| source_str(f.rank_source))
            .collect(),
        world_size: job.world_size,
        missing_ranks: job.missing.clone(),
        warnings: job.warnings.clone(),
        matching: MatchingReport {
            sets: m.sets.len(),
            matched_tasks: m.matched_tasks(),
            unmatched_tasks: m.unmatched_tasks(),
            by_rule,
            problems: m
                .problems
                .iter()
                .map(|p| ProblemReport {
                    kind: p.kind.as_str(),
                    label: p.label.clone(),
                    detail: p.detail.clone(),
                    unmatched_tasks: p.unmatched_tasks,
                })
                .collect(),
            per_rank: job
                .graphs
                .iter()
                .zip(&m.unmatched)
                .map(|(g, u)| RankCommReport {
                    rank: g.rank,
                    comm_tasks: g.comms.len(),
                    unmatched: u.len(),
                })
                .collect(),
        },
        clock: ClockReport {
            reference_rank: job.files[job.clock.reference as usize].rank,
            offsets: job
                .files
                .iter()
                .zip(&job.clock.offsets_ns)
                .map(|(f, &o)| RankOffset {
                    rank: f.rank,
                    offset_us: us(o),
                })
                .collect(),
            unaligned_ranks: job
                .clock
                .unaligned
                .iter()
                .map(|&p| job.files[p as usize].rank)
                .collect(),
            end_spread_us: spread(&job.clock.end_spread_ns),
            raw_end_spread_us: spread(&job.clock.raw_end_spread_ns),
        },
        what_if: Vec::new(),
        steps: None,
        collectives: None,
        waiting: None,
        critical_path: None,
    }
}

/// The replayed times of one rank's own tasks, moved back to its own
/// window origin (where its measured times are).
fn rank_times(job: &JobGraph, schedule: &Schedule, pos: usize) -> (Vec<i64>, Vec<i64>) {
    let part = &job.ranks[pos];
    let r = part.tasks.start as usize..part.tasks.end as usize;
    let shift = part.start_ns;
    (
        schedule.start_ns[r.clone()]
            .iter()
            .map(|t| t - shift)
            .collect(),
        schedule.end_ns[r].iter().map(|t| t - shift).collect(),
    )
}

fn rendezvous_report(job: &Job, jg: &JobGraph, i: usize, t: &RendezvousTimes) -> RendezvousReport {
    let rank_of = |task: TaskId| job.files[jg.rank_of(task)].rank;
    RendezvousReport {
        last_rank: jg.rendezvous[i]
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
            .map(|&w| us(t.last_start_ns + w))
            .collect(),
    }
}

fn wait_us(w: &RankWait) -> WaitUs {
    WaitUs {
        wait_us: us(w.wait_ns),
        caused_us: us(w.caused_ns),
        last_arrivals: w.last_arrivals,
    }
}

/// Replays the whole job at once and compares every rank with its
/// measurement. Returns one [`TraceReplay`] per rank (as a single-rank
/// replay would, but with the joint schedule) and the job report.
pub fn replay_job(
    job: &Job,
    opts: &SimOptions,
    scales: &[RankScale],
    scale_cpu: bool,
    out_dir: Option<&Path>,
) -> Result<(Vec<TraceReplay>, JobReport)> {
    let (mut jg, measured, merge_warnings) = merge(&job.graphs, &job.matching, &job.clock);
    let mut what_if = Vec::new();
    for s in scales {
        let Some(pos) = job.files.iter().position(|f| f.rank == s.rank) else {
            return Err(usage(format!(
                "--scale-rank {}={}: rank {} is not in the job (ranks {})",
                s.rank,
                s.factor,
                s.rank,
                rank_ranges(&job.files.iter().map(|f| f.rank).collect::<Vec<_>>())
            )));
        };
        jg.scale_rank(pos, s.factor, scale_cpu);
        what_if.push(format!(
            "rank {}: GPU compute{} x{}",
            s.rank,
            if scale_cpu { " and CPU" } else { "" },
            s.factor
        ));
    }
    let schedule = simulate_job(&jg, opts).context("joint replay of the job failed")?;

    let mut traces = Vec::with_capacity(job.files.len());
    let mut rank_steps: Vec<(Vec<i64>, Vec<i64>)> = Vec::new();
    for (pos, f) in job.files.iter().enumerate() {
        let g = &job.graphs[pos].graph;
        let m = &job.graphs[pos].measured;
        let (start, end) = rank_times(&jg, &schedule, pos);
        let times = SpanColumns {
            start_ns: &start,
            end_ns: &end,
        };
        let part = &jg.ranks[pos];
        let last = (part.tasks.start..part.tasks.end)
            .max_by_key(|&t| (schedule.end_ns[t as usize], std::cmp::Reverse(t)))
            .map(TaskId);
        let critical_path = last.map(|last| {
            let cp = job_critical_path(&jg, &schedule, last, 10);
            replay::critical_path_report(&jg.graph, &cp.summary)
        });
        if let Some(dir) = out_dir {
            let id = replay::TraceId {
                path: &f.path,
                base_time_ns: f.base_time_ns,
                rank: f.rank,
            };
            replay::write_replayed_trace(&id, g, m, &times, dir)?;
        }
        let spans = |mm: Option<&Measured>| -> Vec<i64> {
            match mm {
                Some(mm) => step_spans(g, &mm.tasks, Some(&mm.step_annotations)),
                None => step_spans(g, &times, None),
            }
            .iter()
            .map(|s| s.end_ns - s.start_ns)
            .collect()
        };
        rank_steps.push((spans(Some(m)), spans(None)));
        let mut warnings = f.warnings.clone();
        warnings.extend(job.reports[pos].warnings.iter().cloned());
        traces.push(replay::compare(
            f.path.display().to_string(),
            f.rank,
            warnings,
            replay::flagged(&job.reports[pos]),
            g,
            m,
            &times,
            critical_path,
        ));
    }

    // The job's step i is the slowest rank's step i.
    let n_steps = rank_steps.iter().map(|s| s.0.len()).min().unwrap_or(0);
    let mut warnings = job.warnings.clone();
    warnings.extend(merge_warnings);
    if rank_steps.iter().any(|s| s.0.len() != n_steps) {
        warnings.push(format!(
            "ranks recorded different numbers of steps; comparing the first {n_steps}"
        ));
    }
    let slowest = |k: usize, replayed: bool| -> (usize, i64) {
        rank_steps
            .iter()
            .enumerate()
            .map(|(p, s)| (p, if replayed { s.1[k] } else { s.0[k] }))
            .max_by_key(|&(p, d)| (d, std::cmp::Reverse(p)))
            .unwrap_or((0, 0))
    };
    let steps: Vec<JobStep> = (0..n_steps)
        .map(|k| {
            let (mp, md) = slowest(k, false);
            let (rp, rd) = slowest(k, true);
            JobStep {
                index: k,
                name: job.graphs[mp].graph.steps[k].name.clone(),
                measured_us: us(md),
                replayed_us: us(rd),
                error_pct: replay::err_pct(md, rd),
                slowest_rank_measured: job.files[mp].rank,
                slowest_rank_replayed: job.files[rp].rank,
            }
        })
        .collect();

    let m_rv = rendezvous_times(&jg, &measured.tasks);
    let r_rv = rendezvous_times(&jg, &schedule);
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
                .map(|m| job.files[m.rank_pos as usize].rank)
                .collect(),
            measured: rendezvous_report(job, &jg, i, &m_rv[i]),
            replayed: rendezvous_report(job, &jg, i, &r_rv[i]),
        })
        .collect();
    let m_wait = rank_waits(&jg, &m_rv);
    let r_wait = rank_waits(&jg, &r_rv);
    let waiting = job
        .files
        .iter()
        .enumerate()
        .map(|(p, f)| RankWaitReport {
            rank: f.rank,
            measured: wait_us(&m_wait[p]),
            replayed: wait_us(&r_wait[p]),
        })
        .collect();
    // The job's critical path: from the end of the rank that finishes last.
    let critical_path = schedule.last_task().map(|last| {
        let cp = job_critical_path(&jg, &schedule, last, 10);
        JobPathReport {
            from_rank: job.files[jg.rank_of(last)].rank,
            rank_changes: cp.rank_changes,
            per_rank_us: job
                .files
                .iter()
                .zip(&cp.per_rank_ns)
                .filter(|(_, &ns)| ns > 0)
                .map(|(f, &ns)| RankTime {
                    rank: f.rank,
                    us: us(ns),
                })
                .collect(),
            by_bound: replay::critical_path_report(&jg.graph, &cp.summary).by_bound,
        }
    });
    let mut rep = report(job);
    rep.warnings = warnings;
    rep.what_if = what_if;
    rep.steps = Some(steps);
    rep.collectives = Some(collectives);
    rep.waiting = Some(waiting);
    rep.critical_path = critical_path;
    Ok((traces, rep))
}

// ---------------------------------------------------------------------------
// Human output.

/// Most collectives printed in the per-collective table; the JSON has all.
const MAX_COLLECTIVE_ROWS: usize = 40;

pub fn print_identity(r: &JobReport) {
    println!(
        "job: {} ranks ({}), world size {}{}",
        r.ranks.len(),
        rank_ranges(&r.ranks),
        r.world_size.map_or("?".into(), |w| w.to_string()),
        if r.missing_ranks.is_empty() {
            String::new()
        } else {
            format!(", missing rank {}", rank_ranges(&r.missing_ranks))
        }
    );
    let mut sources: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &r.rank_sources {
        *sources.entry(s).or_default() += 1;
    }
    let sources: Vec<String> = sources.iter().map(|(s, n)| format!("{s} {n}")).collect();
    println!("  ranks identified by: {}", sources.join(", "));
    let m = &r.matching;
    let rules: Vec<String> = m
        .by_rule
        .iter()
        .map(|(k, v)| format!("{v} by {k}"))
        .collect();
    println!(
        "  collectives: {} matched sets, {} tasks matched ({}), {} left unmatched",
        m.sets,
        m.matched_tasks,
        if rules.is_empty() {
            "none".into()
        } else {
            rules.join(", ")
        },
        m.unmatched_tasks
    );
    for p in &m.problems {
        println!(
            "    mismatch: {}: {}; {} tasks left unmatched (measured durations kept)",
            p.label, p.detail, p.unmatched_tasks
        );
    }
    let c = &r.clock;
    let offsets: Vec<String> = c
        .offsets
        .iter()
        .map(|o| format!("{} {:+.1}", o.rank, o.offset_us))
        .collect();
    println!(
        "  clock offsets vs rank {} (us): {}",
        c.reference_rank,
        offsets.join(", ")
    );
    println!(
        "  collective end spread across ranks: {:.1} us median, {:.1} us max after alignment \
         ({:.1} us max as recorded)",
        c.end_spread_us.median, c.end_spread_us.max, c.raw_end_spread_us.max
    );
    for w in &r.warnings {
        println!("  warning: {w}");
    }
}

pub fn print_replay(r: &JobReport) {
    println!();
    print_identity(r);
    for w in &r.what_if {
        println!("  what-if: {w}");
    }
    if let Some(steps) = &r.steps {
        println!(
            "  {:<18} {:>12} {:>12} {:>8}   slowest rank (measured / replayed)",
            "job step", "measured ms", "replayed ms", "error"
        );
        for s in steps {
            println!(
                "  {:<18} {:>12.3} {:>12.3} {:>7.2}%   {} / {}",
                s.name,
                s.measured_us / 1e3,
                s.replayed_us / 1e3,
                s.error_pct,
                s.slowest_rank_measured,
                s.slowest_rank_replayed
            );
        }
    }
    if let Some(waiting) = &r.waiting {
        println!("  waiting for peers, per rank (ms, measured / replayed)");
        println!(
            "    {:>4} {:>19} {:>22} {:>12}",
            "rank", "waited", "kept others waiting", "last to arrive"
        );
        for w in waiting {
            println!(
                "    {:>4} {:>9.3} / {:<9.3} {:>10.3} / {:<10.3} {:>5} / {:<5}",
                w.rank,
                w.measured.wait_us / 1e3,
                w.replayed.wait_us / 1e3,
                w.measured.caused_us / 1e3,
                w.replayed.caused_us / 1e3,
                w.measured.last_arrivals,
                w.replayed.last_arrivals
            );
        }
    }
    if let Some(cols) = &r.collectives {
        println!(
            "  per collective (replayed; measured in brackets): last rank, skew, transfer median, end spread"
        );
        let mut order: Vec<usize> = (0..cols.len()).collect();
        if cols.len() > MAX_COLLECTIVE_ROWS {
            // Show the ones with the most waiting.
            order.sort_by(|&a, &b| {
                cols[b]
                    .replayed
                    .skew_us
                    .total_cmp(&cols[a].replayed.skew_us)
            });
            order.truncate(MAX_COLLECTIVE_ROWS);
            order.sort_unstable();
            println!(
                "    ({} of {} with the largest skew)",
                MAX_COLLECTIVE_ROWS,
                cols.len()
            );
        }
        let median = |v: &[f64]| {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            s.get(s.len() / 2).copied().unwrap_or(0.0)
        };
        for &i in &order {
            let c = &cols[i];
            println!(
                "    {:<22} {:>10}  rank {:>3} [{:>3}]  skew {:>8.3} ms [{:>8.3}]  transfer {:>8.1} us [{:>8.1}]  end spread {:>6.1} us [{:>6.1}]",
                c.label,
                c.bytes.map_or("-".into(), |b| format!("{b} B")),
                c.replayed.last_rank,
                c.measured.last_rank,
                c.replayed.skew_us / 1e3,
                c.measured.skew_us / 1e3,
                median(&c.replayed.transfer_us),
                median(&c.measured.transfer_us),
                c.replayed.end_spread_us,
                c.measured.end_spread_us
            );
        }
    }
    if let Some(cp) = &r.critical_path {
        let ranks: Vec<String> = cp
            .per_rank_us
            .iter()
            .map(|t| format!("rank {} {:.2} ms", t.rank, t.us / 1e3))
            .collect();
        println!(
            "  critical path from rank {} ({} rank changes): {}",
            cp.from_rank,
            cp.rank_changes,
            ranks.join(", ")
        );
    }
}

// ---------------------------------------------------------------------------
// Subcommand bodies.

/// Turns traces already read into loaded ranks, in parallel, dropping each
/// trace once its graph is built; read errors are printed.
pub fn from_read(read: Vec<Result<Trace, lumos_trace::ReadError>>) -> (Vec<LoadedRank>, bool) {
    let mut ok = true;
    let mut traces = Vec::new();
    for r in read {
        match r {
            Ok(t) => traces.push(t),
            Err(e) => {
                eprintln!("error: {e}");
                ok = false;
            }
        }
    }
    (traces.into_par_iter().map(|t| load_rank(&t)).collect(), ok)
}

/// `lumos replay` on a job: one joint replay, per-rank tables, then the
/// job's own report. Returns whether every file was read.
pub fn run_replay(
    loaded: Vec<LoadedRank>,
    read_ok: bool,
    opts: &SimOptions,
    scales: &[RankScale],
    scale_cpu: bool,
    out: Option<&Path>,
    json: bool,
) -> Result<bool> {
    let job = assemble(loaded)?;
    let (traces, rep) = replay_job(&job, opts, scales, scale_cpu, out)?;
    let summary = replay::summarize(&traces);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "traces": traces, "summary": summary, "job": rep })
            )?
        );
    } else {
        traces.iter().for_each(replay::print_human);
        print_replay(&rep);
        replay::print_summary(&summary);
    }
    Ok(read_ok)
}

/// The job part of `lumos inspect`: identities, matching and clocks. An
/// inconsistent set of files (two claiming one rank) is an error, printed.
pub fn inspect_job(traces: &[&Trace]) -> (Option<JobReport>, bool) {
    let loaded: Vec<LoadedRank> = traces.par_iter().map(|t| load_rank(t)).collect();
    match assemble(loaded) {
        Ok(job) => (Some(report(&job)), true),
        Err(e) => {
            eprintln!("error: {e:#}");
            (None, false)
        }
    }
}
