//! `lumos.replay`: one replay per trace, or the joint replay of a job, and
//! its tables.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use lumos_graph::{Graph, Job, JobGraph, Measured};
use lumos_report::{
    CollectiveReport, JobReplayed, JobReport, RankTables, ReplayOutput, Replayed, ReportError,
    TraceReplay,
};
use lumos_sim::Schedule;
use lumos_store::{JobChoice, Prepared, Sorted};
use lumos_trace::Trace;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rayon::prelude::*;

use crate::columns::{Builder, Table};
use crate::errors::{Error, Result};
use crate::options::ReplayOptions;
use crate::progress::Progress;

/// What a single-trace replay keeps for its tables.
struct TraceParts {
    rank: u32,
    graph: Graph,
    measured: Measured,
    schedule: Schedule,
}

/// What the tables beyond the report are computed from.
enum Parts {
    Traces(Vec<TraceParts>),
    Job(Box<JobParts>),
    /// A joint replay that owns its job, each rank read back for the
    /// tables.
    Replayed(Box<JobReplayed<'static>>),
}

/// What a joint replay keeps for its tables.
struct JobParts {
    job: Arc<Job>,
    graph: JobGraph,
    schedule: Schedule,
}

/// A replay: the report `lumos replay --json` prints, and its tables.
#[pyclass(frozen, module = "lumos._lumos")]
pub struct ReplayResult {
    output: ReplayOutput,
    parts: Parts,
    /// Computed on first use: most sessions never ask.
    tables: OnceLock<Vec<RankTables>>,
    /// For a replay from representatives: the graphs built or decoded.
    graphs_loaded: Option<usize>,
}

/// `scale_rank` (`opts.scales`) slows ranks of a job: an error for a
/// replay of traces one by one.
fn no_rank_scales(opts: &ReplayOptions) -> Result<()> {
    if !opts.scales.is_empty() {
        return Err(Error::config(
            "scale_rank needs the ranks of one job (several files with one world size, \
             or job=True)",
        ));
    }
    Ok(())
}

/// Replays every trace on its own (in parallel), as `lumos replay
/// --per-trace`; the first failure is raised.
pub fn replay_traces(traces: &[Arc<Trace>], opts: &ReplayOptions) -> Result<ReplayResult> {
    no_rank_scales(opts)?;
    let done: Vec<(TraceReplay, TraceParts)> = traces
        .par_iter()
        .map(|t| lumos_report::replay_scaled(t, &opts.sim, &opts.kernels).map(parts_of))
        .collect::<std::result::Result<_, ReportError>>()?;
    Ok(traces_result(done))
}

/// One trace's replay: its report, and what its tables read.
fn parts_of(r: Replayed) -> (TraceReplay, TraceParts) {
    let report = r.report();
    let parts = TraceParts {
        rank: r.meta.rank,
        graph: r.graph,
        measured: r.measured,
        schedule: r.schedule,
    };
    (report, parts)
}

/// Replays of traces one by one ([`parts_of`] each), as a result.
fn traces_result(done: Vec<(TraceReplay, TraceParts)>) -> ReplayResult {
    let (reports, parts): (Vec<_>, Vec<_>) = done.into_iter().unzip();
    ReplayResult {
        output: ReplayOutput::of_traces(reports),
        parts: Parts::Traces(parts),
        tables: OnceLock::new(),
        graphs_loaded: None,
    }
}

/// Replays several files as `lumos replay` does: as the ranks of one job
/// or one by one under `choice` ([`lumos_store::sort`]), each trace built
/// into its rank as it is read and dropped, so that no trace is held
/// beside the ranks. The first input that cannot be read is raised; the
/// line saying why inputs that looked like a job are not one comes back.
pub fn replay_files(
    files: &[PathBuf],
    opts: &ReplayOptions,
    choice: JobChoice,
    p: &Progress,
) -> Result<(ReplayResult, Option<String>)> {
    let guard = crate::inputs::guard(files, lumos_store::ReadFor::Job)?;
    let prepared = crate::inputs::prepare_every(files, p, &guard)?;
    match lumos_store::sort(prepared, choice) {
        Sorted::Job(ranks, read) => {
            drop(read);
            p.phase("assembling", 1);
            let job = lumos_graph::assemble(ranks)?;
            p.add(1);
            lumos_report::room_to_replay(&guard, &job)
                .map_err(|e| Error::new(crate::errors::Kind::Input, e.to_string()))?;
            p.phase("replaying", 1);
            let replayed = replay_job_owned(job, opts)?;
            p.add(1);
            Ok((replayed, None))
        }
        Sorted::Apart(read, d) => {
            let read: Vec<Prepared> = read.into_iter().flatten().collect();
            p.phase("replaying", read.len() as u64);
            Ok((replay_apart(read, opts, p)?, d.note()))
        }
    }
}

/// Replays every input on its own (in parallel), from the rank built of
/// its trace or read from its `.lgraph` file, as `lumos replay
/// --per-trace`; the first failure is raised.
fn replay_apart(read: Vec<Prepared>, opts: &ReplayOptions, p: &Progress) -> Result<ReplayResult> {
    no_rank_scales(opts)?;
    let analysis = lumos_report::AnalysisOptions::default();
    let done: Vec<(TraceReplay, TraceParts)> = read
        .into_par_iter()
        .map(|input| {
            let r = match input {
                Prepared::Built(built) => {
                    let rank = built.rank.expect("sort gives every rank back");
                    let sim = (&opts.sim, opts.kernels.as_slice());
                    lumos_report::replay_rank_alone(rank, built.memory, sim, &analysis)
                        .map(parts_of)
                }
                Prepared::Stored(stored) => replay_stored_apart(stored, opts),
            };
            p.add(1);
            r
        })
        .collect::<std::result::Result<_, ReportError>>()?;
    Ok(traces_result(done))
}

/// One `.lgraph` file's rank replayed alone, as `lumos replay RANK.lgraph`
/// does (`lumos_report::replay_stored`): its report, and the parts the
/// tables are computed from, taken from the stored rank.
fn replay_stored_apart(
    stored: lumos_store::StoredRank,
    opts: &ReplayOptions,
) -> std::result::Result<(TraceReplay, TraceParts), ReportError> {
    let what = stored.file().display().to_string();
    let sim =
        lumos_report::with_kernel_scales(&stored.graph.graph, &opts.sim, &opts.kernels, &what)?;
    let replayed = lumos_report::replay_stored(&stored, &sim)?;
    let report = replayed.report();
    let schedule = replayed.schedule;
    let lumos_graph::RankGraph {
        rank,
        graph,
        measured,
        ..
    } = stored.graph;
    Ok((
        report,
        TraceParts {
            rank,
            graph,
            measured,
            schedule,
        },
    ))
}

/// Replays one trace file as `lumos replay FILE` does: read straight into
/// the graph build ([`lumos_report::replay_path`]), so that the trace's
/// events are never all in memory (what [`replay_traces`] of the file read
/// first gives, with about a third of the peak on a large file).
pub fn replay_file(file: &Path, opts: &ReplayOptions, p: &Progress) -> Result<ReplayResult> {
    no_rank_scales(opts)?;
    let replayed = crate::inputs::reading_one(file, p, || {
        lumos_report::replay_path(file, &opts.sim, &opts.kernels, &|_| {})
    })?;
    Ok(traces_result(vec![parts_of(replayed)]))
}

/// A joint replay's error: a rank `scale_rank` names that the job lacks is
/// a `ConfigError` naming the option.
fn job_replay_error(e: ReportError, opts: &ReplayOptions) -> Error {
    match e {
        ReportError::RankNotInJob { rank, .. } => {
            let factor = opts.scales.iter().find(|s| s.rank == rank);
            Error::config(format!(
                "scale_rank {rank}={}: {e}",
                factor.map_or(0.0, |s| s.factor)
            ))
        }
        e => e.into(),
    }
}

/// Replays the ranks of `job` together, as `lumos replay --job`, giving the
/// job up (`lumos_report::replay_jointly_owned`): each rank's graph is
/// freed as it is merged and read back from the job graph for the tables,
/// so the job and its merged graph are not held together.
fn replay_job_owned(job: Job, opts: &ReplayOptions) -> Result<ReplayResult> {
    let (sim, kernels, scales) = (&opts.sim, &opts.kernels, &opts.scales);
    let replayed = lumos_report::replay_jointly_owned(job, sim, kernels, scales, opts.scale_cpu)
        .map_err(|e| job_replay_error(e, opts))?;
    Ok(ReplayResult {
        output: replayed.report(),
        parts: Parts::Replayed(Box::new(replayed)),
        tables: OnceLock::new(),
        graphs_loaded: None,
    })
}

/// Replays the ranks of `job` together, as `lumos replay --job`; the job
/// stays the caller's (a `lumos.Job` can be replayed again).
pub fn replay_job(job: Arc<Job>, opts: &ReplayOptions) -> Result<ReplayResult> {
    // A guard from now: the job was read earlier, maybe long ago.
    let guard = lumos_store::MemoryGuard::new(job.graphs.len(), lumos_store::ReadFor::HeldJob)
        .map_err(|e| Error::config(e.to_string()))?;
    lumos_report::room_to_replay_keeping_job(&guard, &job)
        .map_err(|e| Error::new(crate::errors::Kind::Input, e.to_string()))?;
    let replayed = lumos_report::replay_jointly_scaled(
        &job,
        &opts.sim,
        &opts.kernels,
        &opts.scales,
        opts.scale_cpu,
    )
    .map_err(|e| job_replay_error(e, opts))?;
    let output = replayed.report();
    let (graph, schedule) = (replayed.graph, replayed.schedule);
    Ok(ReplayResult {
        output,
        parts: Parts::Job(Box::new(JobParts {
            job,
            graph,
            schedule,
        })),
        tables: OnceLock::new(),
        graphs_loaded: None,
    })
}

/// Replays a job from one rank per group of ranks that run the same
/// communication program, as `lumos replay --representatives`
/// ([`lumos_store::load_representatives`], then
/// [`lumos_report::replay_representatives_kept`]). The first input that
/// cannot be read is raised (the CLI reports it and replays the rest,
/// unless two inputs claim one rank: then nothing is replayed).
pub fn replay_representatives(
    files: &[PathBuf],
    opts: &ReplayOptions,
    p: &Progress,
) -> Result<ReplayResult> {
    if !opts.scales.is_empty() {
        return Err(Error::config(
            "scale_rank cannot be used with representatives: the ranks it would slow \
             are not all replayed",
        ));
    }
    let sim = opts.bare_only("representatives")?;
    p.phase("loading", files.len() as u64);
    let r = lumos_store::load_representatives(files, &|| p.add(1));
    if let Some(e) = r.errors.into_iter().next() {
        return Err(e.into());
    }
    let graphs_loaded = r.graphs_loaded;
    p.phase("replaying", 1);
    // Every input was read (the first error is raised above).
    let job = r.job.map_err(lumos_report::ReportError::from)?;
    let done = lumos_report::replay_representatives_kept(job, &r.groups, &r.peers, &sim)?;
    p.add(1);
    Ok(ReplayResult {
        output: done.output,
        parts: Parts::Job(Box::new(JobParts {
            job: Arc::new(done.job),
            graph: done.graph,
            schedule: done.schedule,
        })),
        tables: OnceLock::new(),
        graphs_loaded: Some(graphs_loaded),
    })
}

/// Every table a replay has, by name.
const TABLES: &[&str] = &[
    "traces",
    "steps",
    "window",
    "breakdown",
    "step_breakdown",
    "kernels",
    "critical_path",
    "critical_path_tasks",
    "timeline",
    "warnings",
    "job_steps",
    "collectives",
    "collective_ranks",
    "waiting",
    "job_critical_path",
    "clock",
    "clock_hosts",
];

#[pymethods]
impl ReplayResult {
    /// The report as `lumos replay --json` prints it (keys sorted).
    fn json(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| {
            serde_json::to_value(&self.output)
                .and_then(|v| serde_json::to_string(&v))
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
        })
    }

    /// True for the joint replay of a job.
    #[getter]
    fn is_job(&self) -> bool {
        self.output.job.is_some()
    }

    /// For a replay from representatives, the graphs built or decoded to
    /// make it (one per group when the inputs are `.lgraph` files); else
    /// `None`.
    #[getter]
    fn graphs_loaded(&self) -> Option<usize> {
        self.graphs_loaded
    }

    /// The names [`ReplayResult::table`] knows.
    #[staticmethod]
    fn table_names() -> Vec<&'static str> {
        TABLES.to_vec()
    }

    /// One table, as `(rows, columns)` for `lumos.frames`.
    fn table<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyTuple>> {
        let t = py.detach(|| self.build(name));
        match t {
            Some(t) => t.to_python(py),
            None => Err(pyo3::exceptions::PyKeyError::new_err(format!(
                "no table `{name}` (tables: {})",
                TABLES.join(", ")
            ))),
        }
    }
}

impl ReplayResult {
    fn rank_tables(&self) -> &[RankTables] {
        self.tables.get_or_init(|| match &self.parts {
            Parts::Traces(ts) => ts
                .par_iter()
                .map(|t| lumos_report::rank_tables(t.rank, &t.graph, &t.measured, &t.schedule))
                .collect(),
            Parts::Job(j) => lumos_report::job_tables(&j.job, &j.graph, &j.schedule),
            Parts::Replayed(j) => j.tables(),
        })
    }

    fn build(&self, name: &str) -> Option<Table> {
        let traces = &self.output.traces;
        let job = self.output.job.as_ref();
        Some(match name {
            "traces" => traces_table(traces),
            "steps" => steps_table(traces),
            "window" => Builder::new(traces)
                .int("rank", |t| t.rank.into())
                .f64("measured_us", |t| t.window.measured_us)
                .f64("replayed_us", |t| t.window.replayed_us)
                .opt_f64("error_pct", |t| t.window.error_pct)
                .build(),
            "breakdown" => breakdown_table(traces),
            "step_breakdown" => step_breakdown_table(self.rank_tables()),
            "kernels" => kernels_table(self.rank_tables()),
            "critical_path" => critical_path_table(traces),
            "critical_path_tasks" => path_tasks_table(traces),
            "timeline" => timeline_table(traces),
            "warnings" => warnings_table(traces, job),
            "job_steps" => job_steps_table(job),
            "collectives" => collectives_table(job),
            "collective_ranks" => collective_ranks_table(job),
            "waiting" => waiting_table(job),
            "job_critical_path" => job_path_table(job),
            "clock" => clock_table(job),
            "clock_hosts" => clock_hosts_table(job),
            _ => return None,
        })
    }
}

fn traces_table(traces: &[TraceReplay]) -> Table {
    Builder::new(traces)
        .int("rank", |t| t.rank.into())
        .str("path", |t| t.path.as_str())
        .int("tasks", |t| t.tasks as i64)
        .int("steps", |t| t.steps.len() as i64)
        .bool("flagged", |t| t.flagged)
        .int("warnings", |t| t.warnings.len() as i64)
        .build()
}

fn steps_table(traces: &[TraceReplay]) -> Table {
    let rows: Vec<_> = traces
        .iter()
        .flat_map(|t| t.steps.iter().map(move |s| (t.rank, s)))
        .collect();
    Builder::new(&rows)
        .int("rank", |r| r.0.into())
        .str("step", |r| r.1.name.as_str())
        .f64("measured_us", |r| r.1.measured_us)
        .f64("replayed_us", |r| r.1.replayed_us)
        .opt_f64("error_pct", |r| r.1.error_pct)
        .build()
}

/// Rows of `(rank, step, side, breakdown)`, as the breakdown columns.
fn breakdown_columns<'r>(
    rows: &'r [(u32, &'r str, &'static str, lumos_report::BreakdownUs)],
    with_step: bool,
) -> Table {
    let b = Builder::new(rows).int("rank", |r| r.0.into());
    let b = if with_step { b.str("step", |r| r.1) } else { b };
    b.str("side", |r| r.2)
        .f64("exposed_compute_us", |r| r.3.exposed_compute_us)
        .f64("overlapped_us", |r| r.3.overlapped_us)
        .f64("exposed_comm_us", |r| r.3.exposed_comm_us)
        .f64("idle_us", |r| r.3.idle_us)
        .f64("total_us", |r| r.3.total_us)
        .build()
}

fn breakdown_table(traces: &[TraceReplay]) -> Table {
    let rows: Vec<_> = traces
        .iter()
        .flat_map(|t| {
            [
                (t.rank, "", "measured", t.breakdown.measured),
                (t.rank, "", "replayed", t.breakdown.replayed),
            ]
        })
        .collect();
    breakdown_columns(&rows, false)
}

fn step_breakdown_table(tables: &[RankTables]) -> Table {
    let rows: Vec<_> = tables
        .iter()
        .flat_map(|t| {
            t.steps.iter().flat_map(move |s| {
                [
                    (t.rank, s.step.as_str(), "measured", s.measured),
                    (t.rank, s.step.as_str(), "replayed", s.replayed),
                ]
            })
        })
        .collect();
    breakdown_columns(&rows, true)
}

fn kernels_table(tables: &[RankTables]) -> Table {
    let rows: Vec<_> = tables
        .iter()
        .flat_map(|t| t.kernels.iter().map(move |k| (t.rank, k)))
        .collect();
    Builder::new(&rows)
        .int("rank", |r| r.0.into())
        .str("name", |r| r.1.name.as_str())
        .opt_str("operator", |r| r.1.operator.clone())
        .str("kind", |r| r.1.kind)
        .bool("comm", |r| r.1.comm)
        .int("count", |r| r.1.count as i64)
        .f64("measured_us", |r| r.1.measured_us)
        .f64("replayed_us", |r| r.1.replayed_us)
        .build()
}

fn critical_path_table(traces: &[TraceReplay]) -> Table {
    let rows: Vec<_> = traces
        .iter()
        .flat_map(|t| {
            let cp = t.critical_path.as_ref();
            cp.into_iter()
                .flat_map(move |cp| cp.by_bound.iter().map(move |b| (t.rank, cp.hops, b)))
        })
        .collect();
    Builder::new(&rows)
        .int("rank", |r| r.0.into())
        .int("path_hops", |r| r.1 as i64)
        .str("bound", |r| r.2.bound.as_str())
        .int("hops", |r| r.2.hops as i64)
        .f64("wait_us", |r| r.2.wait_us)
        .f64("busy_us", |r| r.2.busy_us)
        .build()
}

fn path_tasks_table(traces: &[TraceReplay]) -> Table {
    let rows: Vec<_> = traces
        .iter()
        .flat_map(|t| {
            let cp = t.critical_path.as_ref();
            cp.into_iter().flat_map(move |cp| {
                cp.top_tasks
                    .iter()
                    .enumerate()
                    .map(move |(i, p)| (t.rank, i, p))
            })
        })
        .collect();
    Builder::new(&rows)
        .int("rank", |r| r.0.into())
        .int("position", |r| r.1 as i64)
        .str("name", |r| r.2.name.as_str())
        .f64("us", |r| r.2.us)
        .build()
}

fn timeline_table(traces: &[TraceReplay]) -> Table {
    let mut rows = Vec::new();
    for t in traces {
        let tl = &t.gpu_busy_timeline;
        for (side, bins) in [("measured", &tl.measured), ("replayed", &tl.replayed)] {
            for (i, &busy) in bins.iter().enumerate() {
                rows.push((t.rank, side, i, tl.bin_us, busy));
            }
        }
    }
    Builder::new(&rows)
        .int("rank", |r| r.0.into())
        .str("side", |r| r.1)
        .int("bin", |r| r.2 as i64)
        .f64("start_us", |r| r.2 as f64 * r.3)
        .f64("bin_us", |r| r.3)
        .f64("busy", |r| r.4)
        .build()
}

fn warnings_table(traces: &[TraceReplay], job: Option<&JobReport>) -> Table {
    let mut rows: Vec<(Option<u32>, &str)> = traces
        .iter()
        .flat_map(|t| t.warnings.iter().map(move |w| (Some(t.rank), w.as_str())))
        .collect();
    if let Some(j) = job {
        rows.extend(j.warnings.iter().map(|w| (None, w.as_str())));
    }
    Builder::new(&rows)
        .opt_int("rank", |r| r.0.map(i64::from))
        .str("scope", |r| if r.0.is_some() { "trace" } else { "job" })
        .str("message", |r| r.1)
        .build()
}

fn job_steps_table(job: Option<&JobReport>) -> Table {
    let steps = job.and_then(|j| j.steps.as_deref()).unwrap_or_default();
    Builder::new(steps)
        .int("index", |s| s.index as i64)
        .str("step", |s| s.name.as_str())
        .f64("measured_us", |s| s.measured_us)
        .f64("replayed_us", |s| s.replayed_us)
        .opt_f64("error_pct", |s| s.error_pct)
        .int("slowest_rank_measured", |s| s.slowest_rank_measured.into())
        .int("slowest_rank_replayed", |s| s.slowest_rank_replayed.into())
        .build()
}

fn collectives(job: Option<&JobReport>) -> &[CollectiveReport] {
    job.and_then(|j| j.collectives.as_deref())
        .unwrap_or_default()
}

fn collectives_table(job: Option<&JobReport>) -> Table {
    let rows: Vec<_> = collectives(job).iter().enumerate().collect();
    Builder::new(&rows)
        .int("index", |r| r.0 as i64)
        .str("label", |r| r.1.label.as_str())
        .str("rule", |r| r.1.rule)
        .str("name", |r| r.1.name.as_str())
        .opt_int("bytes", |r| r.1.bytes.map(|b| b as i64))
        .int("ranks", |r| r.1.ranks.len() as i64)
        .int("measured_last_rank", |r| r.1.measured.last_rank.into())
        .int("replayed_last_rank", |r| r.1.replayed.last_rank.into())
        .f64("measured_skew_us", |r| r.1.measured.skew_us)
        .f64("replayed_skew_us", |r| r.1.replayed.skew_us)
        .f64("measured_end_spread_us", |r| r.1.measured.end_spread_us)
        .f64("replayed_end_spread_us", |r| r.1.replayed.end_spread_us)
        .build()
}

fn collective_ranks_table(job: Option<&JobReport>) -> Table {
    let rows: Vec<_> = collectives(job)
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.ranks.iter().enumerate().map(move |(k, &r)| (i, c, k, r)))
        .collect();
    let at = |v: &[f64], k: usize| v.get(k).copied();
    Builder::new(&rows)
        .int("index", |r| r.0 as i64)
        .str("label", |r| r.1.label.as_str())
        .str("name", |r| r.1.name.as_str())
        .int("rank", |r| r.3.into())
        .int("measured_waited_for", |r| r.1.measured.last_rank.into())
        .opt_f64("measured_wait_us", |r| at(&r.1.measured.wait_us, r.2))
        .opt_f64("measured_transfer_us", |r| {
            at(&r.1.measured.transfer_us, r.2)
        })
        .opt_f64("measured_end_us", |r| at(&r.1.measured.end_us, r.2))
        .int("replayed_waited_for", |r| r.1.replayed.last_rank.into())
        .opt_f64("replayed_wait_us", |r| at(&r.1.replayed.wait_us, r.2))
        .opt_f64("replayed_transfer_us", |r| {
            at(&r.1.replayed.transfer_us, r.2)
        })
        .opt_f64("replayed_end_us", |r| at(&r.1.replayed.end_us, r.2))
        .build()
}

fn waiting_table(job: Option<&JobReport>) -> Table {
    let rows = job.and_then(|j| j.waiting.as_deref()).unwrap_or_default();
    Builder::new(rows)
        .int("rank", |w| w.rank.into())
        .f64("measured_wait_us", |w| w.measured.wait_us)
        .f64("measured_caused_us", |w| w.measured.caused_us)
        .int("measured_last_arrivals", |w| {
            w.measured.last_arrivals as i64
        })
        .f64("replayed_wait_us", |w| w.replayed.wait_us)
        .f64("replayed_caused_us", |w| w.replayed.caused_us)
        .int("replayed_last_arrivals", |w| {
            w.replayed.last_arrivals as i64
        })
        .build()
}

fn job_path_table(job: Option<&JobReport>) -> Table {
    let rows: Vec<_> = job
        .and_then(|j| j.critical_path.as_ref())
        .into_iter()
        .flat_map(|cp| cp.per_rank_us.iter().map(move |t| (cp, t)))
        .collect();
    Builder::new(&rows)
        .int("from_rank", |r| r.0.from_rank.into())
        .int("rank_changes", |r| r.0.rank_changes as i64)
        .int("rank", |r| r.1.rank.into())
        .f64("us", |r| r.1.us)
        .build()
}

fn clock_table(job: Option<&JobReport>) -> Table {
    let rows: Vec<_> = job
        .into_iter()
        .flat_map(|j| j.clock.offsets.iter().map(move |o| (j, o)))
        .collect();
    Builder::new(&rows)
        .int("rank", |r| r.1.rank.into())
        .f64("offset_us", |r| r.1.offset_us)
        .bool("reference", |r| r.1.rank == r.0.clock.reference_rank)
        .bool("aligned", |r| {
            !r.0.clock.unaligned_ranks.contains(&r.1.rank)
        })
        .build()
}

/// One row per rank of each host the traces name (none when no trace
/// names its host): the host's shared offset and the rank's residual.
fn clock_hosts_table(job: Option<&JobReport>) -> Table {
    let rows: Vec<_> = job
        .into_iter()
        .flat_map(|j| &j.clock.hosts)
        .flat_map(|h| (0..h.ranks.len()).map(move |i| (h, i)))
        .collect();
    Builder::new(&rows)
        .str("host", |r| r.0.host.as_str())
        .int("rank", |r| r.0.ranks[r.1].into())
        .f64("offset_us", |r| r.0.offset_us)
        .int("collective_ends", |r| r.0.collective_ends as i64)
        .opt_f64("residual_us", |r| r.0.residual_us.get(r.1).copied())
        .build()
}
