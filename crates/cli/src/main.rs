//! The `lumos` command line: inspect traces, replay them, predict other
//! configurations, report on them in HTML, write synthetic ones, run the
//! demo.
//!
//! This crate parses arguments, reads and writes files, formats reports as
//! text and chooses the exit code; the reports come from lumos-report. One
//! module per subcommand under `commands/`; everything printed goes through
//! `output`.
//!
//! Exit codes: 0 success (also when stdout is closed early: whoever read it
//! has stopped reading); 1 at least one input could not be processed (the
//! others are still reported), or the inputs would outgrow the memory
//! lumos may use (`lumos_store::MemoryGuard`); 2 usage errors (from clap, or a
//! [`usage::UsageError`] from the checks made after parsing).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]
// the one crate that prints and exits

// The doc comments of the clap types are `--help` text, where a file name
// pattern like `<name>.replayed.json.gz` is meant literally, not as HTML.
#![allow(rustdoc::invalid_html_tags)]

mod commands;
mod inputs;
mod output;
mod progress;
mod sorted_json;
mod usage;

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::commands::{demo, diff, ingest, inspect, predict, replay, report, synth};

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  bad input: a trace (or model or network file) that cannot be read or
     processed (the other inputs are still reported), or inputs that would
     outgrow the memory lumos may use (LUMOS_MEMORY_LIMIT)
  2  bad usage: an unknown flag, an invalid value, or arguments that cannot
     go together

Environment:
  LUMOS_MEMORY_LIMIT  resident size past which reading a job's ranks (or the
                      traces to predict from), or their joint replay, stops
                      with an error (bytes, or 512M, 16G; `off`; default 85%
                      of the memory available at the start; Linux only)
  LUMOS_NO_PROGRESS   set: no progress bars
  COLUMNS             width the text output fits where stdout is no
                      terminal (at least 60; default 120)";

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
    /// Show what each trace holds: events, tasks, edges, steps, warnings.
    ///
    /// Events, tasks, edges (found and inferred), streams, steps,
    /// collectives, the structure found (parallel groups, passes, layers),
    /// and warnings.
    Inspect(inspect::InspectArgs),
    /// Replay each trace in the simulator and compare with the measurement.
    Replay(replay::ReplayArgs),
    /// Write one self-contained HTML report of a trace or a job.
    ///
    /// The page holds the verdict, steps, GPU-busy timeline, critical path,
    /// top kernels, waiting per rank, a what-if (with `lumos predict`'s
    /// flags) and the warnings.
    Report(report::ReportArgs),
    /// Write synthesized traces of a Megatron-style GPT training job.
    ///
    /// One Kineto trace per rank: 1F1B pipeline, TP/DP/PP collectives,
    /// optimizer.
    Synth(synth::SynthArgs),
    /// Predict another configuration (DP, TP, PP, layers, kernel speed-ups).
    ///
    /// Edits the traces' graphs to another data, tensor or pipeline degree,
    /// interleaved virtual stages, micro-batches, layers, hidden size,
    /// kernel speed-ups or network, replays them, and compares the result
    /// with the measured run and its replay.
    Predict(predict::PredictArgs),
    /// Write each trace's graph as a compact .lgraph file (for large jobs).
    ///
    /// Reads and builds each trace once and writes its graph as a compact
    /// .lgraph file, which every command takes in place of the trace (for
    /// jobs too large to read every trace where the job is replayed).
    Ingest(ingest::IngestArgs),
    /// Compare two runs per step, operator and kernel.
    ///
    /// Two traces, or a trace and its replayed or predicted timeline: per
    /// step, per operator and per kernel, what was added, removed, or got
    /// slower or faster.
    Diff(diff::DiffArgs),
    /// Run the built-in example end to end (no input files needed).
    ///
    /// Writes a small job's traces, inspects one, replays it, and replays a
    /// what-if with compute kernels 2x faster.
    Demo(demo::DemoArgs),
}

/// Runs the command, writing its report into `out`, its text laid out
/// for lines of `width` characters; false when an input could not be
/// processed.
fn run(cli: &Cli, out: &mut dyn Write, width: usize) -> Result<bool> {
    let ok = match &cli.command {
        Command::Inspect(a) => inspect::run(a, out, width)?,
        Command::Replay(a) => replay::run(a, out, width)?,
        Command::Predict(a) => predict::run(a, out, width)?,
        Command::Report(a) => report::run(a, out)?,
        Command::Synth(a) => synth::run(a, out)?,
        Command::Diff(a) => diff::run(a, out, width)?,
        Command::Demo(a) => demo::run(a, out, width)?,
        Command::Ingest(a) => ingest::run(a, out)?,
    };
    out.flush()?;
    Ok(ok)
}

/// True when the command writes data on stdout, which no width folds:
/// JSON, `report -o -`'s HTML, the paths `synth` lists one per line.
fn writes_data(command: &Command) -> bool {
    match command {
        Command::Inspect(a) => a.json,
        Command::Replay(a) => a.json,
        Command::Predict(a) => a.json,
        Command::Diff(a) => a.json,
        Command::Demo(a) => a.json,
        Command::Ingest(a) => a.json,
        Command::Report(_) | Command::Synth(_) => true,
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The terminal's width (or COLUMNS), for the text output only; none
    // said: the text as wide as it has always been, whatever reads it.
    let asked = output::asked_width().filter(|_| !writes_data(&cli.command));
    let width = asked.map_or(output::WIDTH, |w| w.min(output::WIDTH));
    // At the tables' full width or wider, lines are left as they always
    // were, a long one to the terminal's own wrapping.
    let asked = asked.filter(|&w| w < output::WIDTH);
    // Through `Shown`: a name in a trace must not drive the terminal.
    let ran = usage::memory_limit_readable().and_then(|()| {
        let stdout = output::Fit::new(output::Stdout(io::stdout().lock()), asked);
        run(&cli, &mut output::Shown::new(stdout), width)
    });
    match ran {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if usage::is_usage(&e) => {
            if usage::help_helps(&e) {
                output::error_with_help(output::message(&e));
            } else {
                output::error(output::message(&e));
            }
            ExitCode::from(2)
        }
        Err(e) => {
            output::error(output::message(&e));
            ExitCode::from(1)
        }
    }
}
