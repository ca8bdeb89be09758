//! `lumos replay`: simulate each trace's graph (or the ranks of one job
//! together) and compare with the measurement.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::ValueEnum;
use lumos_graph::{assemble_with, DepKind, RankInput, Unreadable};
use lumos_predict::{KernelScale, KernelSelector};
use lumos_report::text::shown;
use lumos_report::{
    merged_file_name, AnalysisOptions, CriticalPathExport, JobReplayed, MergedTimeline, RankScale,
    ReplayOutput, ReportError, StepSelection, Summary, Timeline, TraceReplay,
};
use lumos_sim::{GpuSelector, SimOptions};
use lumos_store::{MemoryGuard, Prepared, Sorted};
use lumos_trace::{write_atomic, write_gz_atomic};

use super::analysis::write_trace_analysis;
use super::job::{shown_ranks, write_job, write_stragglers, MIN_RANKS_SHOWN};
use super::transfer;
use super::JobMode;
use crate::output::{narrow, pct, wrapped, wrapped_words};
use crate::usage::usage;
use crate::{inputs, output, progress};

/// `lumos replay` arguments.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// Trace files (.json or .json.gz), compact graphs (.lgraph, from
    /// `lumos ingest`), or directories of them; `-` reads standard input.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write each replayed timeline as <name>.replayed.json.gz here
    /// (<name> is its trace's; a job's ranks as <name>.rank<N>.replayed.json.gz
    /// when two of their traces share a file name).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// With --out, write a job's ranks as one timeline,
    /// job.replayed.json.gz, each rank a process named "rank N".
    #[arg(long, requires = "out", conflicts_with = "per_trace")]
    pub merge: bool,
    /// Dependency kinds to drop (ablation), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub deps: Vec<DropDep>,
    /// Kernel speed-up, PATTERN=FACTOR (durations multiplied by FACTOR),
    /// as in `lumos predict`: PATTERN is class:gemm, class:attention,
    /// class:memory, class:comm, class:compute (GEMMs and attention known
    /// by recorded shapes), or a case-sensitive substring of kernel names;
    /// one that selects no GPU task is refused. Repeatable, each pattern
    /// once. A bare FACTOR
    /// (every GPU task, or those --scale-only / --scale-pattern pick) still
    /// works but is deprecated (with --scale-only compute|comm or
    /// --scale-pattern, checked as PATTERN=FACTOR is, except with
    /// --representatives or --durations-from).
    #[arg(long, value_name = "PATTERN=FACTOR", value_parser = parse_scale_kernels)]
    pub scale_kernels: Vec<ScaleArg>,
    /// Deprecated (use --scale-kernels class:compute=F or class:comm=F):
    /// which GPU tasks a bare --scale-kernels FACTOR applies to.
    #[arg(long, default_value = "all")]
    pub scale_only: ScaleOnly,
    /// Deprecated (use --scale-kernels NAME=F): restrict a bare
    /// --scale-kernels FACTOR to GPU tasks whose name contains this.
    #[arg(long)]
    pub scale_pattern: Option<String>,
    /// Analyse only these steps, comma-separated: positions (0-based, the
    /// `#` column) `3`, ranges `2..4` (4 excluded) or `2..=4`, or names
    /// `ProfilerStep#5`.
    #[arg(long, value_name = "STEPS")]
    pub steps: Option<StepSelection>,
    /// Rows of each table (kernels, operators, collectives) in the text
    /// output, and ranks of a job shown (at least 16: the straggler, the
    /// longest steps' ranks, then those that kept the others waiting
    /// longest); --json has every row and rank.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Write each trace's critical paths here: <name>.critical.json.gz
    /// (the replayed timeline with the path of each step marked, for
    /// Perfetto) and <name>.critical-path.json (every hop).
    #[arg(long, value_name = "DIR")]
    pub critical_path: Option<PathBuf>,
    #[command(flatten)]
    pub mode: JobMode,
    /// Multi-rank jobs: scale one rank's GPU compute durations (not its
    /// communication), e.g. `3=1.5` (factor 1e-6 to 1e6); repeat or
    /// comma-separate for more.
    #[arg(long, value_delimiter = ',', value_name = "RANK=FACTOR", value_parser = parse_rank_scale)]
    pub scale_rank: Vec<RankScale>,
    /// With --scale-rank: scale the rank's CPU tasks too.
    #[arg(long, requires = "scale_rank")]
    pub scale_rank_cpu: bool,
    /// Replay a large job from one rank per group of ranks that run the
    /// same communication program: every input is read (from .lgraph
    /// files, only their summaries), one graph per group is kept, and the
    /// collectives inside a group wait for peers modelled from the group's
    /// measured spread.
    #[arg(long, conflicts_with_all = ["per_trace", "scale_rank", "out", "critical_path", "steps"])]
    pub representatives: bool,
    /// Re-time the trace's graph with the durations measured in TRACE,
    /// another recording of the same program (other hardware, another
    /// software version), and compare with TRACE's steps. Operators are
    /// matched per thread by name, shapes and order; unmatched tasks keep
    /// their own durations.
    #[arg(long, value_name = "TRACE", conflicts_with_all = [
        "representatives", "job", "scale_rank", "critical_path", "steps", "out"
    ])]
    pub durations_from: Option<PathBuf>,
}

/// A dependency kind `--deps` drops.
#[derive(Clone, Copy, ValueEnum)]
#[allow(clippy::enum_variant_names)] // the CLI values read `no-inter-stream`
pub enum DropDep {
    /// Drop inter-stream (event record / stream wait) edges, as dPRO did.
    NoInterStream,
    /// Drop GPU-to-CPU synchronization.
    NoSync,
    /// Drop inter-thread edges.
    NoInterThread,
}

/// Which GPU tasks `--scale-kernels` applies to. (No doc comments on the
/// values: `--help` lists them on one line.)
#[derive(Clone, Copy, ValueEnum)]
pub enum ScaleOnly {
    All,
    Compute,
    Comm,
}

/// One `--scale-kernels` value: `PATTERN=FACTOR`, or the deprecated bare
/// `FACTOR`.
#[derive(Clone, Debug)]
pub enum ScaleArg {
    /// A bare factor (with --scale-only / --scale-pattern).
    Factor(f64),
    /// The predictor's syntax.
    Pattern(KernelScale),
}

/// `--scale-kernels PATTERN=FACTOR` or `--scale-kernels FACTOR`: every
/// check of the value is here.
fn parse_scale_kernels(s: &str) -> Result<ScaleArg, String> {
    if !s.contains('=') {
        if s.trim().parse::<f64>().is_err() {
            return Err(format!("expected PATTERN=FACTOR or FACTOR, got `{s}`"));
        }
        return crate::usage::factor(s).map(ScaleArg::Factor);
    }
    lumos_report::range::kernel_scale(s).map(ScaleArg::Pattern)
}

/// `--scale-rank R=FACTOR`.
fn parse_rank_scale(s: &str) -> Result<RankScale, String> {
    let (r, f) = s
        .split_once('=')
        .ok_or_else(|| format!("expected RANK=FACTOR, got `{s}`"))?;
    let rank = r
        .trim()
        .parse()
        .map_err(|_| format!("`{r}` is not a rank number"))?;
    let factor = crate::usage::factor(f).map_err(|e| format!("factor {e}"))?;
    Ok(RankScale { rank, factor })
}

/// The simulator's options for the ablation and scaling flags, and the
/// kernel speed-ups to resolve on each graph.
fn sim_options(a: &ReplayArgs) -> Result<(SimOptions, Vec<KernelScale>)> {
    // One rank scaled twice would have its factors multiplied: a slip.
    lumos_report::distinct_ranks(&a.scale_rank, "--scale-rank").map_err(usage)?;
    let (opts, kernels) = scales(a)?;
    // So would one pattern's, the bare FACTOR's selection among them.
    distinct_patterns(&kernels, "--scale-kernels")?;
    Ok((opts, kernels))
}

/// Refuses a kernel pattern given twice to `flag`: its factors would be
/// multiplied (two of 1e6 make 1e12, past the range each is checked
/// against), a slip like a rank given twice to `--scale-rank`.
pub fn distinct_patterns(kernels: &[KernelScale], flag: &str) -> Result<()> {
    match lumos_predict::repeated_pattern(kernels) {
        Some(p) => Err(usage(format!(
            "{flag} names pattern {p} twice; give each pattern one factor"
        ))),
        None => Ok(()),
    }
}

/// What [`sim_options`] gives, before its checks of a rank or a pattern
/// given twice.
fn scales(a: &ReplayArgs) -> Result<(SimOptions, Vec<KernelScale>)> {
    let mut opts = SimOptions::default();
    for d in &a.deps {
        opts = opts.drop_kind(match d {
            DropDep::NoInterStream => DepKind::InterStream,
            DropDep::NoSync => DepKind::Sync,
            DropDep::NoInterThread => DepKind::InterThread,
        });
    }
    let mut kernels = Vec::new();
    let mut bare = Vec::new();
    for s in &a.scale_kernels {
        match s {
            ScaleArg::Factor(f) => bare.push(*f),
            ScaleArg::Pattern(k) => kernels.push(k.clone()),
        }
    }
    match bare[..] {
        [] if a.scale_pattern.is_some() || !matches!(a.scale_only, ScaleOnly::All) => {
            return Err(usage(
                "--scale-only and --scale-pattern apply to a bare --scale-kernels FACTOR; \
                 use --scale-kernels PATTERN=FACTOR instead",
            ))
        }
        [] => {}
        [f] => {
            let select = match (&a.scale_pattern, a.scale_only) {
                (Some(p), _) => KernelSelector::Name(p.clone()),
                (None, ScaleOnly::All) => return Ok((opts.scale(GpuSelector::All, f), kernels)),
                (None, ScaleOnly::Compute) => KernelSelector::Compute,
                (None, ScaleOnly::Comm) => KernelSelector::Comm,
            };
            let unchecked = a.representatives || a.durations_from.is_some();
            match select.gpu_selector() {
                // These replays take no PATTERN=FACTOR (they have no one
                // graph to check it on): the selection is used unchecked.
                Some(gpu) if unchecked => opts = opts.scale(gpu, f),
                // Checked on each graph as PATTERN=FACTOR is: refused
                // where it selects no GPU task.
                _ => kernels.push(KernelScale { select, factor: f }),
            }
        }
        _ => {
            return Err(usage(
                "give at most one bare --scale-kernels FACTOR (repeat PATTERN=FACTOR instead)",
            ))
        }
    }
    Ok((opts, kernels))
}

/// Replays a compact graph: as a trace is, without step selections or
/// critical-path exports (they need the trace).
fn replay_stored(
    stored: &lumos_store::StoredRank,
    opts: &SimOptions,
    kernels: &[KernelScale],
    a: &ReplayArgs,
) -> Result<TraceReplay> {
    if a.steps.is_some() || a.critical_path.is_some() {
        return Err(usage(format!(
            "{}: --steps and --critical-path need the trace ({}), not its .lgraph file",
            stored.file().display(),
            stored.facts.path.display()
        )));
    }
    let what = stored.file().display().to_string();
    let opts = lumos_report::with_kernel_scales(&stored.graph.graph, opts, kernels, &what)?;
    let replayed = lumos_report::replay_stored(stored, &opts)?;
    if let Some(dir) = &a.out {
        write_timeline(dir, &replayed.timeline())?;
    }
    Ok(replayed.report())
}

/// The analysis options of the flags.
fn analysis_options(a: &ReplayArgs) -> AnalysisOptions {
    AnalysisOptions {
        steps: a.steps.clone().unwrap_or_default(),
        ..AnalysisOptions::default()
    }
}

/// A step selection a trace cannot satisfy is a usage error.
fn steps_usage(e: ReportError) -> anyhow::Error {
    match e {
        ReportError::Steps { .. } => usage(e),
        e => e.into(),
    }
}

/// `--merge` of inputs that are not one job: there are no ranks to merge
/// (it wrote each trace's timeline apart, without a word, before).
fn merge_needs_a_job() -> anyhow::Error {
    usage(
        "--merge writes the ranks of a job as one timeline; these inputs are not one job \
         (--job treats them as one)",
    )
}

/// The most characters of the "longest on path" line's task name: the
/// line names one task, so its name is kept whole where the tables cut
/// theirs (the corpus's longest there, an AMD GEMM kernel's, is 940), but
/// a name of 64 KiB (the reader's limit) is not one line of a terminal.
const LONGEST_ON_PATH_CHARS: usize = 1_000;

/// Runs `lumos replay`; false when an input could not be read or replayed.
/// Its text is laid out for lines of `width` characters.
pub fn run(a: &ReplayArgs, out: &mut dyn Write, width: usize) -> Result<bool> {
    let opts = sim_options(a)?;
    for (dir, flag) in [(&a.out, "--out"), (&a.critical_path, "--critical-path")] {
        if let Some(dir) = dir {
            inputs::output_dir(dir, flag)?;
        }
    }
    if let Some(b) = &a.durations_from {
        return run_transfer(a, b, &opts, (out, width));
    }
    let files = inputs::expand(&a.paths)?;
    if a.representatives {
        if !opts.1.is_empty() {
            return Err(usage(
                "--representatives takes a bare --scale-kernels FACTOR, not PATTERN=FACTOR",
            ));
        }
        let (r, read_ok) = inputs::load_representatives(&files);
        if matches!(r.job, Err(lumos_graph::JobError::NoRanks)) && !read_ok {
            // Each input's error (or two claiming a rank) is printed, and
            // nothing is left to replay.
            return Ok(false);
        }
        let job = r.job.map_err(lumos_report::ReportError::from)?;
        let mut report = lumos_report::replay_representatives(job, &r.groups, &r.peers, &opts.0)?;
        // A representative left out of the job (with its group) is an input
        // that could not be used, as with --job: named, and exit code 1.
        let left_out = report.job.as_ref().map_or(&[][..], |j| &j.left_out[..]);
        for l in left_out {
            output::error(&l.detail);
        }
        let all_in = left_out.is_empty();
        write_output(out, &mut report, a, width)?;
        return Ok(read_ok && all_in);
    }
    if a.mode.job {
        // Stream: each trace is dropped once its graph is built.
        let guard = inputs::job_guard(&files)?;
        let (ranks, unreadable) = inputs::load_ranks(&files, &guard)?;
        return run_job(a, ranks, unreadable, &guard, &opts, (out, width));
    }
    if let [file] = &files[..] {
        if !inputs::is_lgraph(file) {
            if a.merge {
                return Err(merge_needs_a_job());
            }
            return run_one_trace(a, file, &opts, out, width);
        }
    }
    if a.mode.per_trace && !files.iter().any(|f| inputs::is_lgraph(f)) {
        // Traces taken apart are named after their files: a clash is
        // known before any is read (an `.lgraph` file names its trace
        // only once read, and a job's ranks take their rank numbers).
        check_output_names(a, files.iter().map(PathBuf::as_path))?;
    }
    // Each trace is built into its rank as it is read and dropped, so no
    // trace is held beside the ranks (all traces read first held a job's
    // traces and its ranks together: 2.7 against 1.7 GB for 8 ranks of
    // 380 MB).
    let guard = inputs::job_guard(&files)?;
    let prepared = inputs::prepare_all(&files, &guard)?;
    let apart = match a.mode.sort(prepared) {
        Sorted::Job(ranks, read) => {
            let unreadable = inputs::unreadable_in(read);
            return run_job(a, ranks, unreadable, &guard, &opts, (out, width));
        }
        Sorted::Apart(apart, _) => apart,
    };
    if !a.scale_rank.is_empty() {
        return Err(scale_rank_usage());
    }
    if a.merge {
        return Err(merge_needs_a_job());
    }
    // Before any is written: their outputs are named after their traces.
    check_output_names(a, apart.iter().flatten().map(Prepared::trace_path))?;
    let mut ok = true;
    let mut traces = Vec::new();
    for r in apart {
        // On one of rayon's threads, where the report's analyses run too
        // (side by side, `lumos_report::Replayed::report_with`), as for one
        // file (`run_one_trace`).
        let replayed = r.and_then(|p| rayon::scope(|_| replay_one(p, &opts, a)));
        match replayed {
            Ok(x) => traces.push(x),
            Err(e) if crate::usage::is_usage(&e) => return Err(e),
            Err(e) => {
                output::error(output::message(&e));
                ok = false;
            }
        }
    }
    write_output(out, &mut ReplayOutput::of_traces(traces), a, width)?;
    Ok(ok)
}

/// Refuses traces replayed apart whose `--out` or `--critical-path` files
/// would take one name.
fn check_output_names<'a>(
    a: &ReplayArgs,
    traces: impl Iterator<Item = &'a Path> + Clone,
) -> Result<()> {
    if a.out.is_some() {
        inputs::distinct_output_names(traces.clone(), "--out", inputs::timeline_names)?;
    }
    if a.critical_path.is_some() {
        inputs::distinct_output_names(traces, "--critical-path", inputs::timeline_names)?;
    }
    Ok(())
}

/// `--scale-rank` given for inputs that are not one job.
fn scale_rank_usage() -> anyhow::Error {
    usage(
        "--scale-rank needs the ranks of one job (several files with one world size that \
         share collectives, or --job)",
    )
}

/// `lumos replay FILE` of one trace file, not a job: what [`run`] does with
/// it, but read and replayed in one go (`lumos_report::replay_path`), the
/// graph build's first pass done as the file is read.
fn run_one_trace(
    a: &ReplayArgs,
    file: &Path,
    opts: &(SimOptions, Vec<KernelScale>),
    out: &mut dyn Write,
    width: usize,
) -> Result<bool> {
    // One file is never a job.
    if !a.scale_rank.is_empty() {
        return Err(scale_rank_usage());
    }
    // On one of rayon's threads, as `run` replays each input (see there).
    let (traces, ok) = match rayon::scope(|_| replay_file(file, opts, a)) {
        Ok(x) => (vec![x], true),
        Err(e) if crate::usage::is_usage(&e) => return Err(e),
        Err(e) => {
            output::error(output::message(&e));
            (Vec::new(), false)
        }
    };
    write_output(out, &mut ReplayOutput::of_traces(traces), a, width)?;
    Ok(ok)
}

/// `lumos replay A --durations-from B`.
fn run_transfer(
    a: &ReplayArgs,
    b: &Path,
    (opts, kernels): &(SimOptions, Vec<KernelScale>),
    (out, width): (&mut dyn Write, usize),
) -> Result<bool> {
    crate::usage::stdin_once(a.paths.iter().map(PathBuf::as_path).chain([b]))?;
    let files = inputs::expand(&a.paths)?;
    let [file] = &files[..] else {
        return Err(usage(format!(
            "--durations-from takes one trace to re-time, got {}",
            files.len()
        )));
    };
    if !kernels.is_empty() {
        return Err(usage(
            "--durations-from takes no --scale-kernels PATTERN=FACTOR (B's durations are the what-if)",
        ));
    }
    let b = transfer::durations_path(b)?;
    let (report, _) =
        lumos_report::transfer_files(file, &b, opts, &|| {}).map_err(transfer::report_error)?;
    let report = transfer::renamed(report);
    if a.json {
        output::json_sorted(out, &report)?;
    } else {
        transfer::write_transfer(out, &report, width)?;
    }
    Ok(true)
}

/// Replays one trace (built into its rank, its trace dropped, by
/// [`inputs::prepare_all`]) or compact graph, writing its timeline and
/// critical paths where the flags ask. The rank is freed once the report
/// is made, here on the worker: handed to the one dropper thread, each
/// input would wait there behind the last (the dropper lets two wait), its
/// memory kept while the next is replayed.
fn replay_one(
    input: Prepared,
    (opts, kernels): &(SimOptions, Vec<KernelScale>),
    a: &ReplayArgs,
) -> Result<TraceReplay> {
    let built = match input {
        Prepared::Built(built) => built,
        Prepared::Stored(stored) => {
            return replay_stored(&stored, opts, kernels, a);
        }
    };
    let bar = progress::spinner(&format!("replaying {}", built.facts.path.display()));
    let analysis = analysis_options(a);
    let rank = built.rank.expect("JobMode::sort gives every rank back");
    let sim = (opts, kernels.as_slice());
    let replayed = lumos_report::replay_rank_alone(rank, built.memory, sim, &analysis)?;
    let report = report_replayed(&replayed, a)?;
    bar.finish_and_clear();
    Ok(report)
}

/// Reads the trace file `file` and replays it (`lumos_report::replay_path`),
/// writing its timeline and critical paths where the flags ask: what
/// [`replay_one`] does with the file read.
fn replay_file(
    file: &Path,
    (opts, kernels): &(SimOptions, Vec<KernelScale>),
    a: &ReplayArgs,
) -> Result<TraceReplay> {
    let work = progress::FileWork::new(format!("replaying {}", file.display()));
    let analysis = analysis_options(a);
    let sim = (opts, kernels.as_slice());
    let replayed = lumos_report::replay_path_for(file, sim, &analysis, &|b| work.read(b))?;
    work.read_done();
    let report = report_replayed(&replayed, a)?;
    // Freeing the graph and its analyses takes tens of milliseconds at
    // 1 GB; the report is written meanwhile.
    crate::inputs::drop_in_background(replayed);
    work.finish();
    Ok(report)
}

/// The report of a trace `replayed`, with its timeline and critical paths
/// written where the flags ask.
fn report_replayed(replayed: &lumos_report::Replayed, a: &ReplayArgs) -> Result<TraceReplay> {
    let analysis = analysis_options(a);
    let report = replayed.report_with(&analysis).map_err(steps_usage)?;
    if let Some(dir) = &a.out {
        write_timeline(dir, &replayed.timeline())?;
    }
    if let Some(dir) = &a.critical_path {
        let paths = replayed.critical_paths(&analysis).map_err(steps_usage)?;
        write_timeline(dir, &replayed.timeline().with_critical_path(&paths))?;
        let name = replayed.timeline().critical_path_file_name();
        let export = CriticalPathExport {
            trace: &report.path,
            paths: &paths,
        };
        let path = dir.join(name);
        write_atomic(&path, |w| {
            crate::output::to_writer_pretty(&mut *w, &export).map_err(std::io::Error::from)?;
            w.write_all(b"\n")
        })?;
    }
    Ok(report)
}

/// `lumos replay` on a job: one joint replay, per-rank tables, then the
/// job's own report. Returns whether every file was read and taken into
/// the job.
fn run_job(
    a: &ReplayArgs,
    ranks: Vec<RankInput>,
    unreadable: Vec<Unreadable>,
    guard: &MemoryGuard,
    (opts, kernels): &(SimOptions, Vec<KernelScale>),
    (out, width): (&mut dyn Write, usize),
) -> Result<bool> {
    if a.critical_path.is_some() {
        return Err(usage(
            "--critical-path needs traces replayed one by one (add --per-trace); \
             a job's critical path across ranks is in its report",
        ));
    }
    // Each rank's timeline is named after its trace; where two traces
    // share a file name (`host0/trace.json`, `host1/trace.json`, as jobs
    // often come), every rank's is named after its rank too, which is
    // the job's own (no two of its ranks have one), so none replaces
    // another's. Every rank's, not only the two that clash, so that the
    // files of one job are named alike.
    let by_rank = a.out.is_some()
        && !a.merge
        && inputs::output_name_clash(
            ranks.iter().map(|r| r.meta.path.as_path()),
            inputs::timeline_names,
        )
        .is_some();
    let read_ok = unreadable.is_empty();
    let job = assemble_with(ranks, unreadable)?;
    let all_in = report_left_out(&job);
    // A rank the command line named that the job lacks: a usage error,
    // naming the flag, before the memory is checked.
    let job_replay_error = |e: ReportError| match e {
        ReportError::RankNotInJob { rank, .. } => {
            let factor = a.scale_rank.iter().find(|s| s.rank == rank);
            usage(format!(
                "--scale-rank {rank}={}: {e}",
                factor.map_or(0.0, |s| s.factor)
            ))
        }
        e => e.into(),
    };
    lumos_report::scaled_ranks_in(&job, &a.scale_rank).map_err(job_replay_error)?;
    lumos_report::room_to_replay(guard, &job)?;
    let bar = progress::spinner(&format!("replaying {} ranks together", job.ranks.len()));
    // The job is given up: each rank's graph is freed as it is merged, and
    // read back from the job graph, one at a time, for its report.
    let replayed =
        lumos_report::replay_jointly_owned(job, opts, kernels, &a.scale_rank, a.scale_rank_cpu)
            .map_err(job_replay_error)?;
    let mut report = replayed
        .report_with(&analysis_options(a))
        .map_err(steps_usage)?;
    if let Some(dir) = &a.out {
        write_job_timelines(dir, &replayed, a.merge, by_rank)?;
    }
    bar.finish_and_clear();
    // The job graph and schedule (most of the memory) are done with: freed
    // here, before the report is written, they are not held while it is.
    drop(replayed);
    write_output(out, &mut report, a, width)?;
    Ok(read_ok && all_in)
}

/// Writes each rank's replayed timeline into `dir` (named after its rank
/// too with `by_rank`: [`Timeline::with_rank_in_name`]), or all of them as
/// one file with `merge`; either way one rank's graph is read back from
/// the job graph at a time.
fn write_job_timelines(
    dir: &Path,
    replayed: &JobReplayed,
    merge: bool,
    by_rank: bool,
) -> Result<()> {
    if merge {
        return write_gz_into(dir, &merged_file_name("replayed"), |w| {
            replayed.write_merged_timeline(w).map(drop)
        });
    }
    for pos in 0..replayed.rank_count() {
        let rank = replayed.rank(pos);
        let timeline = replayed.timeline(pos, &rank);
        match by_rank {
            true => write_timeline(dir, &timeline.with_rank_in_name())?,
            false => write_timeline(dir, &timeline)?,
        }
    }
    Ok(())
}

/// The timelines of a job's ranks or a prediction's stages, to be written
/// into one directory: under their own names, or, where two would take
/// one (their traces share a file name: `host0/trace.json`,
/// `host1/trace.json`), every one named after its rank too
/// ([`Timeline::with_rank_in_name`]). Two that would still take one name
/// (one rank twice) are refused, as inputs apart of one file name are.
pub fn named_apart(timelines: Vec<Timeline<'_>>) -> Result<Vec<Timeline<'_>>> {
    let clash = |ts: &[Timeline]| {
        let mut seen = std::collections::HashSet::new();
        ts.iter()
            .map(Timeline::file_name)
            .find(|n| !seen.insert(n.clone()))
    };
    if clash(&timelines).is_none() {
        return Ok(timelines);
    }
    let renamed: Vec<Timeline> = timelines
        .into_iter()
        .map(Timeline::with_rank_in_name)
        .collect();
    match clash(&renamed) {
        Some(name) => Err(usage(format!(
            "two timelines would both be written as {} into --out's directory: give \
             traces of different file names, or write them apart",
            Path::new(&name).display()
        ))),
        None => Ok(renamed),
    }
}

/// Prints an error for each file left out of `job` (it is an input that
/// could not be used: exit code 1); true when there are none.
pub fn report_left_out(job: &lumos_graph::Job) -> bool {
    for l in &job.left_out {
        output::error(l);
    }
    job.left_out.is_empty()
}

/// Writes a job's merged timeline into `dir` (created if needed) under
/// its own name.
pub fn write_merged(dir: &Path, timeline: &MergedTimeline) -> Result<()> {
    write_gz_into(dir, &timeline.file_name(), |w| timeline.write(w).map(drop))
}

/// Writes `timeline` into `dir` (created if needed) under its own name,
/// atomically.
pub fn write_timeline(dir: &Path, timeline: &Timeline) -> Result<()> {
    write_gz_into(dir, &timeline.file_name(), |w| timeline.write(w).map(drop))
}

/// Writes file `name` of `dir` (created if needed), gzip-compressed and
/// atomically, with what `write` writes.
fn write_gz_into(
    dir: &Path,
    name: &std::ffi::OsStr,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    lumos_trace::create_output_dir(dir)?;
    write_gz_atomic(&dir.join(name), write)?;
    Ok(())
}

/// The report, as tables laid out for lines of `width` characters or as
/// JSON.
fn write_output(
    out: &mut dyn Write,
    r: &mut ReplayOutput,
    a: &ReplayArgs,
    width: usize,
) -> Result<()> {
    for t in &mut r.traces {
        inputs::rename_stdin(&mut t.path);
    }
    let r = &*r;
    if a.json {
        return output::json_sorted(out, r);
    }
    // A job: who waited for whom first, then each rank, then the rest.
    let shown = (r.job.as_ref()).and_then(|j| shown_ranks(j, a.top.max(MIN_RANKS_SHOWN)));
    if let Some(job) = &r.job {
        write_stragglers(
            out,
            job,
            (r.representatives.as_ref(), shown.as_ref()),
            width,
        )?;
    }
    let in_job = |t: &TraceReplay| r.job.as_ref().is_some_and(|j| j.ranks.contains(&t.rank));
    let mut hidden = 0u64;
    for t in &r.traces {
        match &shown {
            Some(s) if in_job(t) && !s.contains(&t.rank) => hidden += 1,
            _ => write_trace(out, t, a.top, width)?,
        }
    }
    if hidden > 0 {
        let note = format!(
            "the tables of {} left out, as in the waiting table above; --top N shows more, \
             --json every rank)",
            output::counted(hidden, "more rank", "more ranks")
        );
        writeln!(out, "{}", wrapped_words("(", &note, " ", narrow(width)))?;
    }
    if let Some(job) = &r.job {
        write_job(out, job, r.representatives.as_ref(), width)?;
    }
    if let Some(reps) = &r.representatives {
        write_representatives(out, reps)?;
    }
    let replayed = r.traces.iter().any(|t| !t.flagged);
    let flagged = r.traces.iter().filter(|t| t.flagged).count();
    write_summary(out, &r.summary, (replayed, flagged), width)?;
    Ok(())
}

/// The groups of a replay from representatives.
fn write_representatives(
    out: &mut dyn Write,
    r: &lumos_report::RepresentativesReport,
) -> std::io::Result<()> {
    // Ranks of the job, each counted once: a representative is one of
    // the ranks it is replayed for.
    let n = |n: usize, one: &str, many: &str| crate::output::counted(n as u64, one, many);
    writeln!(
        out,
        "  representatives: {} replayed for the job's {} ({} inside groups against \
         modelled peers)",
        n(r.replayed_ranks, "rank", "ranks"),
        n(r.ranks, "rank", "ranks"),
        n(r.modelled_collectives, "collective", "collectives"),
    )?;
    for g in &r.groups {
        let steps: Vec<String> = g
            .measured_steps_us
            .iter()
            .map(|s| format!("{:.3}-{:.3} ms", s.min / 1e3, s.max / 1e3))
            .collect();
        writeln!(
            out,
            "    rank {:>5} for {:>5} {} ({}): measured steps {}",
            g.representative,
            g.size,
            if g.size == 1 { "rank " } else { "ranks" },
            g.ranks,
            steps.join(", ")
        )?;
    }
    Ok(())
}

/// The one-line summary under the tables; `replayed`: whether any
/// unflagged trace was replayed (its spans may all have no error);
/// `flagged`: how many traces were flagged. Their count is said, as the
/// steps of the mean leave them out ("over 6 steps" of a job of 8 ranks,
/// "flagged traces apart", read as a contradiction).
fn write_summary(
    out: &mut dyn Write,
    summary: &Summary,
    (replayed, flagged): (bool, usize),
    width: usize,
) -> std::io::Result<()> {
    let flagged = summary.flagged_mean_abs_error_pct.map(|f| {
        format!(
            "{} apart (signs of damage, above): mean {f:.2}%",
            crate::output::counted(flagged as u64, "flagged trace", "flagged traces")
        )
    });
    let text = match (summary.mean_abs_error_pct, summary.max_abs_error_pct) {
        (Some(mean), Some(max)) => format!(
            "mean |error| {mean:.2}%, max {max:.2}% over {} steps{}",
            summary.steps,
            flagged.map(|f| format!("; {f}")).unwrap_or_default()
        ),
        // Every unflagged span was measured at zero length: replayed, but
        // with no error to average.
        _ if replayed => format!(
            "no error: no unflagged step or window has a measured length{}",
            flagged.map(|f| format!("; {f}")).unwrap_or_default()
        ),
        _ => match flagged {
            Some(f) => format!("no unflagged trace replayed; {f}"),
            None => "nothing replayed".to_owned(),
        },
    };
    // Folded: with flagged traces the line ran past 120 columns.
    writeln!(
        out,
        "{}",
        crate::output::wrapped_words("summary: ", &text, "  ", width)
    )
}

/// The text form of one trace's replay, with the analyses (`top` rows per
/// table), laid out for lines of `width` characters.
pub fn write_trace(
    out: &mut dyn Write,
    t: &TraceReplay,
    top: usize,
    width: usize,
) -> std::io::Result<()> {
    write_replay(out, t, width)?;
    write_trace_analysis(out, &t.analysis, top, width)?;
    if t.flagged {
        writeln!(
            out,
            "  flagged: signs of a damaged trace; reported apart in the summary"
        )?;
    }
    for w in &t.warnings {
        // Folded at the words: a warning ran to 125 columns.
        writeln!(
            out,
            "{}",
            wrapped_words("  warning: ", &shown(w), "    ", width)
        )?;
    }
    Ok(())
}

/// What a replay of one trace gave, before the tables of the measured
/// trace: the steps measured and replayed, the breakdown of both, and the
/// whole window's critical path. All a what-if changes but the critical
/// path per step (`lumos demo` shows those alone for its what-if).
pub fn write_replay(out: &mut dyn Write, t: &TraceReplay, width: usize) -> std::io::Result<()> {
    writeln!(
        out,
        "{} (rank {}, {} tasks)",
        shown(&t.path),
        t.rank,
        t.tasks
    )?;
    writeln!(
        out,
        "  {:<18} {:>12} {:>12} {:>8}",
        "step", "measured ms", "replayed ms", "error"
    )?;
    for s in &t.steps {
        writeln!(
            out,
            "  {:<18} {:>12.3} {:>12.3} {:>8}",
            shown(&s.name),
            s.measured_us / 1e3,
            s.replayed_us / 1e3,
            pct(s.error_pct, 2)
        )?;
    }
    writeln!(
        out,
        "  {:<18} {:>12.3} {:>12.3} {:>8}",
        "whole window",
        t.window.measured_us / 1e3,
        t.window.replayed_us / 1e3,
        pct(t.window.error_pct, 2)
    )?;
    let (m, r) = (&t.breakdown.measured, &t.breakdown.replayed);
    writeln!(
        out,
        "  breakdown (ms)      exposed compute   overlap   exposed comm      idle"
    )?;
    for (label, b) in [("measured", m), ("replayed", r)] {
        writeln!(
            out,
            "    {:<16} {:>15.3} {:>9.3} {:>14.3} {:>9.3}",
            label,
            b.exposed_compute_us / 1e3,
            b.overlapped_us / 1e3,
            b.exposed_comm_us / 1e3,
            b.idle_us / 1e3
        )?;
    }
    if let Some(cp) = &t.critical_path {
        let parts: Vec<String> = cp
            .by_bound
            .iter()
            .map(|b| format!("{} {:.2}", b.bound, (b.wait_us + b.busy_us) / 1e3))
            .collect();
        // Every kind of hop, on as many lines as it takes (one ran to 186
        // columns).
        let head = format!("  critical path ({} hops), ms by hop kind: ", cp.hops);
        writeln!(out, "{}", wrapped(&head, &parts, ", ", "    ", width))?;
        if let Some(top) = cp.top_tasks.first() {
            // Whole at the default width (the one line let past it);
            // shortened as the tables shorten names where a width is
            // asked.
            let time = format!(" ({:.3} ms)", top.us / 1e3);
            let head = "    longest on path: ";
            let room = narrow(width).saturating_sub(head.len() + time.len());
            let name = super::analysis::short(&top.name, room.clamp(20, LONGEST_ON_PATH_CHARS));
            writeln!(out, "{head}{name}{time}")?;
        }
    }
    Ok(())
}
