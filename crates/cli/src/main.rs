//! The `lumos` command line: inspect traces, replay them, run the demo.
//!
//! Exit codes: 0 success; 1 at least one input could not be processed (the
//! others are still reported); 2 usage errors (from clap, or a
//! [`usage::UsageError`] from the checks made after parsing).

// The doc comments of the clap types are `--help` text, where a file name
// pattern like `<name>.replayed.json.gz` is meant literally, not as HTML.
#![allow(rustdoc::invalid_html_tags)]

mod inputs;
mod inspect;
mod job;
mod predict;
mod replay;
mod synth_cmd;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use lumos_graph::DepKind;
use lumos_sim::{GpuSelector, SimOptions};

use crate::usage::usage;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  bad input: a trace (or model or network file) that cannot be read or
     processed; the other inputs are still reported
  2  bad usage: an unknown flag, an invalid value, or arguments that cannot
     go together";

#[derive(Parser)]
#[command(
    name = "lumos",
    version,
    about = "Model distributed LLM training performance from PyTorch profiler traces",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what each trace holds: events, tasks, edges (found and
    /// inferred), streams, steps, collectives, and warnings.
    Inspect {
        /// Trace files (.json or .json.gz) or directories of them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        mode: JobMode,
    },
    /// Replay each trace in the simulator and compare with the measurement.
    Replay {
        /// Trace files (.json or .json.gz) or directories of them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Write each replayed timeline as <name>.replayed.json.gz here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Dependency kinds to drop (ablation), comma-separated.
        #[arg(long, value_delimiter = ',')]
        deps: Vec<DropDep>,
        /// Scale GPU task durations by this factor before replay.
        #[arg(long)]
        scale_kernels: Option<f64>,
        /// Which GPU tasks --scale-kernels applies to.
        #[arg(long, default_value = "all")]
        scale_only: ScaleOnly,
        /// Restrict --scale-kernels to GPU tasks whose name contains this.
        #[arg(long)]
        scale_pattern: Option<String>,
        #[command(flatten)]
        mode: JobMode,
        /// Multi-rank jobs: scale one rank's GPU compute durations (not its
        /// communication), e.g. `3=1.5`; repeat or comma-separate for more.
        #[arg(long, value_delimiter = ',', value_name = "RANK=FACTOR")]
        scale_rank: Vec<job::RankScale>,
        /// With --scale-rank: scale the rank's CPU tasks too.
        #[arg(long, requires = "scale_rank")]
        scale_rank_cpu: bool,
    },
    /// Write synthesized Kineto traces (one per rank) of a Megatron-style
    /// GPT training job: 1F1B pipeline, TP/DP/PP collectives, optimizer.
    Synth(synth_cmd::SynthArgs),
    /// Predict another configuration (data, tensor or pipeline degree,
    /// micro-batches, layers, hidden size, kernel speed-ups, network) by
    /// editing the traces' graphs, and compare it with the measured run and
    /// its replay.
    Predict(predict::PredictArgs),
    /// Run the built-in example end to end: write a small trace, inspect it,
    /// replay it, and replay a what-if with kernels 2x faster.
    Demo {
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
}

/// Whether several inputs are the ranks of one job.
#[derive(clap::Args)]
struct JobMode {
    /// Treat all inputs as the ranks of one job: one joint replay in which
    /// matched collectives wait for every participant. The default when
    /// there are several files and all record the same world size > 1.
    #[arg(long, conflicts_with = "per_trace")]
    job: bool,
    /// Replay every input on its own, even the ranks of one job.
    #[arg(long)]
    per_trace: bool,
}

impl JobMode {
    /// Whether `read` (the inputs, read) are to be handled as one job.
    fn is_job(&self, read: &[Result<lumos_trace::Trace, lumos_trace::ReadError>]) -> bool {
        self.job
            || (!self.per_trace
                && job::looks_like_job(
                    read.iter().filter_map(|r| r.as_ref().ok()).map(|t| &t.meta),
                ))
    }
}

#[derive(Clone, Copy, ValueEnum)]
#[allow(clippy::enum_variant_names)] // the CLI values read `no-inter-stream`
enum DropDep {
    /// Drop inter-stream (event record / stream wait) edges, as dPRO did.
    NoInterStream,
    /// Drop GPU-to-CPU synchronization.
    NoSync,
    /// Drop inter-thread edges.
    NoInterThread,
}

#[derive(Clone, Copy, ValueEnum)]
enum ScaleOnly {
    All,
    Compute,
    Comm,
}

fn sim_options(
    deps: &[DropDep],
    scale: Option<f64>,
    only: ScaleOnly,
    pattern: Option<String>,
) -> Result<SimOptions> {
    let mut opts = SimOptions::default();
    for d in deps {
        opts = opts.drop_kind(match d {
            DropDep::NoInterStream => DepKind::InterStream,
            DropDep::NoSync => DepKind::Sync,
            DropDep::NoInterThread => DepKind::InterThread,
        });
    }
    if let Some(f) = scale {
        if !(f.is_finite() && f > 0.0) {
            return Err(usage(format!(
                "--scale-kernels must be a positive number, got {f}"
            )));
        }
        let select = match (pattern, only) {
            (Some(p), _) => GpuSelector::NameContains(p),
            (None, ScaleOnly::All) => GpuSelector::All,
            (None, ScaleOnly::Compute) => GpuSelector::Compute,
            (None, ScaleOnly::Comm) => GpuSelector::Comm,
        };
        opts = opts.scale(select, f);
    }
    Ok(opts)
}

fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Command::Inspect { paths, json, mode } => {
            let files = inputs::expand(&paths)?;
            let read = inputs::read_all(&files);
            let as_job = mode.is_job(&read);
            let mut ok = true;
            let mut reports = Vec::new();
            for r in &read {
                match r {
                    Ok(t) => reports.push(inspect::inspect(t)),
                    Err(e) => {
                        eprintln!("error: {e}");
                        ok = false;
                    }
                }
            }
            let mut job_report = None;
            if as_job {
                let traces: Vec<&lumos_trace::Trace> =
                    read.iter().filter_map(|r| r.as_ref().ok()).collect();
                let (report, job_ok) = job::inspect_job(&traces);
                job_report = report;
                ok &= job_ok;
            }
            if json {
                let mut v = serde_json::json!({ "traces": reports });
                if let Some(j) = &job_report {
                    v["job"] = serde_json::to_value(j)?;
                }
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                reports.iter().for_each(inspect::print_human);
                if let Some(j) = &job_report {
                    job::print_identity(j);
                }
            }
            Ok(ok)
        }
        Command::Replay {
            paths,
            json,
            out,
            deps,
            scale_kernels,
            scale_only,
            scale_pattern,
            mode,
            scale_rank,
            scale_rank_cpu,
        } => {
            let opts = sim_options(&deps, scale_kernels, scale_only, scale_pattern)?;
            let files = inputs::expand(&paths)?;
            if mode.job {
                // Stream: each trace is dropped once its graph is built.
                let (loaded, read_ok) = job::load_files(&files);
                return job::run_replay(
                    loaded,
                    read_ok,
                    &opts,
                    &scale_rank,
                    scale_rank_cpu,
                    out.as_deref(),
                    json,
                );
            }
            let read = inputs::read_all(&files);
            if mode.is_job(&read) {
                let (loaded, read_ok) = job::from_read(read);
                return job::run_replay(
                    loaded,
                    read_ok,
                    &opts,
                    &scale_rank,
                    scale_rank_cpu,
                    out.as_deref(),
                    json,
                );
            }
            if !scale_rank.is_empty() {
                return Err(usage(
                    "--scale-rank needs the ranks of one job (several files with one world size, \
                     or --job)",
                ));
            }
            let mut ok = true;
            let mut results = Vec::new();
            for r in read {
                match r
                    .map_err(anyhow::Error::from)
                    .and_then(|t| replay::replay(&t, &opts, out.as_deref()))
                {
                    Ok(x) => results.push(x),
                    Err(e) => {
                        eprintln!("error: {e:#}");
                        ok = false;
                    }
                }
            }
            let summary = replay::summarize(&results);
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({ "traces": results, "summary": summary })
                    )?
                );
            } else {
                results.iter().for_each(replay::print_human);
                replay::print_summary(&summary);
            }
            Ok(ok)
        }
        Command::Predict(args) => {
            predict::check_args(&args)?;
            predict::run(&args)
        }
        Command::Synth(args) => {
            let files = synth_cmd::run(&args)?;
            for f in &files {
                println!("{}", f.display());
            }
            Ok(true)
        }
        Command::Demo { json } => {
            // A small GPT job written by the synthesizer: TP2 x PP2 x DP2,
            // one rank per pipeline stage; rank 0 is replayed.
            let dir = std::env::temp_dir().join(format!("lumos-demo-{}", std::process::id()));
            let files = synth_cmd::run(&synth_cmd::SynthArgs {
                model: "gpt-tiny".into(),
                tp: 2,
                pp: 2,
                dp: 2,
                microbatches: Some(4),
                gpu: "h100".into(),
                ranks: synth_cmd::RankChoice::OnePerStage,
                steps: 3,
                seed: 1,
                out: dir.clone(),
            })?;
            let trace = lumos_trace::read_path(&files[0])?;
            let base = replay::replay(&trace, &SimOptions::default(), None)?;
            let fast = replay::replay(
                &trace,
                &SimOptions::default().scale(GpuSelector::Compute, 0.5),
                None,
            )?;
            let report = inspect::inspect(&trace);
            let _ = std::fs::remove_dir_all(&dir);
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "inspect": report, "replay": base, "what_if_compute_x0.5": fast
                    }))?
                );
            } else {
                println!(
                    "== inspect (built-in example: synthesized gpt-tiny, TP2 PP2 DP2, rank 0)"
                );
                inspect::print_human(&report);
                println!("\n== replay");
                replay::print_human(&base);
                println!("\n== what-if: compute kernels 2x faster");
                replay::print_human(&fast);
            }
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) if usage::is_usage(&e) => {
            eprintln!("error: {e:#}\n\nFor more information, try '--help'.");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
