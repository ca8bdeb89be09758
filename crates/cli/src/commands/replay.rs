//! `lumos replay`: simulate each trace's graph (or the ranks of one job
//! together) and compare with the measurement.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::ValueEnum;
use lumos_graph::{assemble_with, DepKind, RankInput, Unreadable};
use lumos_report::{
    JobReport, RankScale, ReplayOutput, ReportError, Summary, Timeline, TraceReplay,
};
use lumos_sim::{GpuSelector, SimOptions};
use lumos_trace::write_gz_atomic;

use super::JobMode;
use crate::inputs::Loaded;
use crate::usage::usage;
use crate::{inputs, output};

/// `lumos replay` arguments.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// Trace files (.json or .json.gz), compact graphs (.lgraph, from
    /// `lumos ingest`), or directories of them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write each replayed timeline as <name>.replayed.json.gz here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Dependency kinds to drop (ablation), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub deps: Vec<DropDep>,
    /// Scale GPU task durations by this factor before replay (1e-6 to
    /// 1e6).
    #[arg(long, value_parser = crate::usage::factor)]
    pub scale_kernels: Option<f64>,
    /// Which GPU tasks --scale-kernels applies to.
    #[arg(long, default_value = "all")]
    pub scale_only: ScaleOnly,
    /// Restrict --scale-kernels to GPU tasks whose name contains this.
    #[arg(long)]
    pub scale_pattern: Option<String>,
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
    #[arg(long, conflicts_with_all = ["per_trace", "scale_rank", "out"])]
    pub representatives: bool,
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

/// The simulator's options for the ablation and scaling flags.
fn sim_options(a: &ReplayArgs) -> SimOptions {
    let mut opts = SimOptions::default();
    for d in &a.deps {
        opts = opts.drop_kind(match d {
            DropDep::NoInterStream => DepKind::InterStream,
            DropDep::NoSync => DepKind::Sync,
            DropDep::NoInterThread => DepKind::InterThread,
        });
    }
    if let Some(f) = a.scale_kernels {
        let select = match (&a.scale_pattern, a.scale_only) {
            (Some(p), _) => GpuSelector::NameContains(p.clone()),
            (None, ScaleOnly::All) => GpuSelector::All,
            (None, ScaleOnly::Compute) => GpuSelector::Compute,
            (None, ScaleOnly::Comm) => GpuSelector::Comm,
        };
        opts = opts.scale(select, f);
    }
    opts
}

/// Runs `lumos replay`; false when an input could not be read or replayed.
pub fn run(a: &ReplayArgs, out: &mut dyn Write) -> Result<bool> {
    let opts = sim_options(a);
    let files = inputs::expand(&a.paths)?;
    if a.representatives {
        let (r, read_ok) = inputs::load_representatives(&files);
        let report = lumos_report::replay_representatives(r.reps, &r.groups, &r.peers, &opts)?;
        write_output(out, &report, a.json)?;
        return Ok(read_ok);
    }
    if a.mode.job {
        // Stream: each trace is dropped once its graph is built.
        let (ranks, unreadable) = inputs::load_ranks(&files);
        return run_job(a, ranks, unreadable, &opts, out);
    }
    let read = inputs::read_all(&files);
    if a.mode.is_job(&read) {
        let (ranks, unreadable) = inputs::ranks_from_read(read);
        return run_job(a, ranks, unreadable, &opts, out);
    }
    if !a.scale_rank.is_empty() {
        return Err(usage(
            "--scale-rank needs the ranks of one job (several files with one world size, \
             or --job)",
        ));
    }
    let mut ok = true;
    let mut traces = Vec::new();
    for r in read {
        match r.and_then(|t| replay_one(&t, &opts, a.out.as_deref())) {
            Ok(x) => traces.push(x),
            Err(e) => {
                output::error(format_args!("{e:#}"));
                ok = false;
            }
        }
    }
    write_output(out, &ReplayOutput::of_traces(traces), a.json)?;
    Ok(ok)
}

/// Replays one trace (or compact graph), writing its timeline into
/// `out_dir` if given.
fn replay_one(input: &Loaded, opts: &SimOptions, out_dir: Option<&Path>) -> Result<TraceReplay> {
    match input {
        Loaded::Trace(trace) => {
            let replayed = lumos_report::replay(trace, opts)?;
            if let Some(dir) = out_dir {
                write_timeline(dir, &replayed.timeline())?;
            }
            Ok(replayed.report())
        }
        Loaded::Stored(stored) => {
            let replayed = lumos_report::replay_stored(stored, opts)?;
            if let Some(dir) = out_dir {
                write_timeline(dir, &replayed.timeline())?;
            }
            Ok(replayed.report())
        }
    }
}

/// `lumos replay` on a job: one joint replay, per-rank tables, then the
/// job's own report. Returns whether every file was read and taken into
/// the job.
fn run_job(
    a: &ReplayArgs,
    ranks: Vec<RankInput>,
    unreadable: Vec<Unreadable>,
    opts: &SimOptions,
    out: &mut dyn Write,
) -> Result<bool> {
    let read_ok = unreadable.is_empty();
    let job = assemble_with(ranks, unreadable)?;
    let all_in = report_left_out(&job);
    let replayed = lumos_report::replay_jointly(&job, opts, &a.scale_rank, a.scale_rank_cpu)
        .map_err(|e| match e {
            // A rank the command line named: a usage error, naming the flag.
            ReportError::RankNotInJob { rank, .. } => {
                let factor = a.scale_rank.iter().find(|s| s.rank == rank);
                usage(format!(
                    "--scale-rank {rank}={}: {e}",
                    factor.map_or(0.0, |s| s.factor)
                ))
            }
            e => e.into(),
        })?;
    if let Some(dir) = &a.out {
        for t in replayed.timelines() {
            write_timeline(dir, &t)?;
        }
    }
    write_output(out, &replayed.report(), a.json)?;
    Ok(read_ok && all_in)
}

/// Prints an error for each file left out of `job` (it is an input that
/// could not be used: exit code 1); true when there are none.
pub fn report_left_out(job: &lumos_graph::Job) -> bool {
    for l in &job.left_out {
        output::error(l);
    }
    job.left_out.is_empty()
}

/// Writes `timeline` into `dir` (created if needed) under its own name,
/// atomically.
pub fn write_timeline(dir: &Path, timeline: &Timeline) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let path = dir.join(timeline.file_name());
    write_gz_atomic(&path, |w| timeline.write(w).map(drop))?;
    Ok(())
}

fn write_output(out: &mut dyn Write, r: &ReplayOutput, json: bool) -> Result<()> {
    if json {
        return output::json_sorted(out, r);
    }
    for t in &r.traces {
        write_trace(out, t)?;
    }
    if let Some(job) = &r.job {
        write_job(out, job)?;
    }
    if let Some(reps) = &r.representatives {
        write_representatives(out, reps)?;
    }
    write_summary(out, &r.summary)?;
    Ok(())
}

/// The groups of a replay from representatives.
fn write_representatives(
    out: &mut dyn Write,
    r: &lumos_report::RepresentativesReport,
) -> std::io::Result<()> {
    writeln!(
        out,
        "  representatives: {} ranks replayed for {} ({} collectives inside groups against modelled peers)",
        r.replayed_ranks, r.ranks, r.modelled_collectives
    )?;
    for g in &r.groups {
        let steps: Vec<String> = g
            .measured_steps_us
            .iter()
            .map(|s| format!("{:.3}-{:.3} ms", s.min / 1e3, s.max / 1e3))
            .collect();
        writeln!(
            out,
            "    rank {:>5} for {:>5} ranks ({}): measured steps {}",
            g.representative,
            g.size,
            g.ranks,
            steps.join(", ")
        )?;
    }
    Ok(())
}

/// The one-line summary under the tables.
fn write_summary(out: &mut dyn Write, summary: &Summary) -> std::io::Result<()> {
    let flagged = summary
        .flagged_mean_abs_error_pct
        .map(|f| format!("flagged traces apart: mean {f:.2}%"));
    match (summary.mean_abs_error_pct, summary.max_abs_error_pct) {
        (Some(mean), Some(max)) => writeln!(
            out,
            "summary: mean |error| {mean:.2}%, max {max:.2}% over {} steps{}",
            summary.steps,
            flagged.map(|f| format!("; {f}")).unwrap_or_default()
        ),
        _ => match flagged {
            Some(f) => writeln!(out, "summary: no unflagged trace replayed; {f}"),
            None => writeln!(out, "summary: nothing replayed"),
        },
    }
}

/// The text form of one trace's replay.
pub fn write_trace(out: &mut dyn Write, t: &TraceReplay) -> std::io::Result<()> {
    writeln!(out, "{} (rank {}, {} tasks)", t.path, t.rank, t.tasks)?;
    writeln!(
        out,
        "  {:<18} {:>12} {:>12} {:>8}",
        "step", "measured ms", "replayed ms", "error"
    )?;
    for s in &t.steps {
        writeln!(
            out,
            "  {:<18} {:>12.3} {:>12.3} {:>7.2}%",
            s.name,
            s.measured_us / 1e3,
            s.replayed_us / 1e3,
            s.error_pct
        )?;
    }
    writeln!(
        out,
        "  {:<18} {:>12.3} {:>12.3} {:>7.2}%",
        "whole window",
        t.window.measured_us / 1e3,
        t.window.replayed_us / 1e3,
        t.window.error_pct
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
            .map(|b| format!("{} {:.2} ms", b.bound, (b.wait_us + b.busy_us) / 1e3))
            .collect();
        writeln!(
            out,
            "  critical path ({} hops): {}",
            cp.hops,
            parts.join(", ")
        )?;
        if let Some(top) = cp.top_tasks.first() {
            writeln!(
                out,
                "    longest on path: {} ({:.3} ms)",
                top.name,
                top.us / 1e3
            )?;
        }
    }
    if t.flagged {
        writeln!(
            out,
            "  flagged: signs of dropped events; reported apart in the summary"
        )?;
    }
    for w in &t.warnings {
        writeln!(out, "  warning: {w}")?;
    }
    Ok(())
}

/// Most collectives printed in the per-collective table; the JSON has all.
const MAX_COLLECTIVE_ROWS: usize = 40;

/// The text form of a job's joint replay: identities, then steps, waiting,
/// collectives and the critical path.
fn write_job(out: &mut dyn Write, r: &JobReport) -> std::io::Result<()> {
    writeln!(out)?;
    super::inspect::write_job(out, r)?;
    for w in &r.what_if {
        writeln!(out, "  what-if: {w}")?;
    }
    if let Some(steps) = &r.steps {
        writeln!(
            out,
            "  {:<18} {:>12} {:>12} {:>8}   slowest rank (measured / replayed)",
            "job step", "measured ms", "replayed ms", "error"
        )?;
        for s in steps {
            writeln!(
                out,
                "  {:<18} {:>12.3} {:>12.3} {:>7.2}%   {} / {}",
                s.name,
                s.measured_us / 1e3,
                s.replayed_us / 1e3,
                s.error_pct,
                s.slowest_rank_measured,
                s.slowest_rank_replayed
            )?;
        }
    }
    if let Some(waiting) = &r.waiting {
        writeln!(
            out,
            "  waiting for peers, per rank (ms, measured / replayed)"
        )?;
        writeln!(
            out,
            "    {:>4} {:>19} {:>22} {:>12}",
            "rank", "waited", "kept others waiting", "last to arrive"
        )?;
        for w in waiting {
            writeln!(
                out,
                "    {:>4} {:>9.3} / {:<9.3} {:>10.3} / {:<10.3} {:>5} / {:<5}",
                w.rank,
                w.measured.wait_us / 1e3,
                w.replayed.wait_us / 1e3,
                w.measured.caused_us / 1e3,
                w.replayed.caused_us / 1e3,
                w.measured.last_arrivals,
                w.replayed.last_arrivals
            )?;
        }
    }
    if let Some(cols) = &r.collectives {
        write_collectives(out, cols)?;
    }
    if let Some(cp) = &r.critical_path {
        let ranks: Vec<String> = cp
            .per_rank_us
            .iter()
            .map(|t| format!("rank {} {:.2} ms", t.rank, t.us / 1e3))
            .collect();
        writeln!(
            out,
            "  critical path from rank {} ({} rank changes): {}",
            cp.from_rank,
            cp.rank_changes,
            ranks.join(", ")
        )?;
    }
    Ok(())
}

/// The per-collective table: at most [`MAX_COLLECTIVE_ROWS`], those with
/// the largest replayed skew.
fn write_collectives(
    out: &mut dyn Write,
    cols: &[lumos_report::CollectiveReport],
) -> std::io::Result<()> {
    writeln!(
        out,
        "  per collective (replayed; measured in brackets): last rank, skew, transfer median, end spread"
    )?;
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
        writeln!(
            out,
            "    ({} of {} with the largest skew)",
            MAX_COLLECTIVE_ROWS,
            cols.len()
        )?;
    }
    let median = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s.get(s.len() / 2).copied().unwrap_or(0.0)
    };
    for &i in &order {
        let c = &cols[i];
        writeln!(
            out,
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
        )?;
    }
    Ok(())
}
