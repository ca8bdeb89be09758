//! `lumos demo`: the built-in example end to end. A small GPT job written
//! by the synthesizer (TP2 x PP2 x DP2, one rank per pipeline stage) is
//! inspected, replayed, and replayed with compute kernels twice as fast;
//! rank 0 is shown. The traces and the replayed timeline stay in a folder
//! (`--out`, default `lumos-demo`), and the output ends with what bounds
//! the job, what the what-if shows and the commands to type next.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use lumos_report::{DemoOutput, TraceReplay};
use lumos_sim::{GpuSelector, SimOptions};

use super::synth::{RankChoice, SynthArgs};
use super::{analysis, inspect, replay};
use crate::output;

/// `lumos demo` arguments.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Where the example's traces and replayed timeline are written (and
    /// kept).
    #[arg(short, long, default_value = "lumos-demo")]
    pub out: PathBuf,
}

/// Runs `lumos demo`, its text laid out for lines of `width` characters.
pub fn run(a: &DemoArgs, out: &mut dyn Write, width: usize) -> Result<bool> {
    let dir = &a.out;
    let files = super::synth::write(&SynthArgs {
        model: "gpt-tiny".into(),
        tp: 2,
        pp: 2,
        dp: 2,
        microbatches: Some(4),
        gpu: "h100".into(),
        ranks: RankChoice::OnePerStage,
        steps: 3,
        seed: 1,
        out: dir.clone(),
        recipe: Default::default(),
    })?;
    let trace = lumos_trace::read_path(&files[0])?;
    let replayed = lumos_report::replay(&trace, &SimOptions::default())?;
    let timeline = replayed.timeline();
    replay::write_timeline(dir, &timeline)?;
    let fast = SimOptions::default().scale(GpuSelector::Compute, 0.5);
    let fast = lumos_report::replay_trace(&trace, &fast)?;
    let report = DemoOutput {
        out_dir: dir.display().to_string(),
        traces: files.iter().map(|f| f.display().to_string()).collect(),
        timeline: dir.join(timeline.file_name()).display().to_string(),
        inspect: lumos_report::inspect(&trace),
        replay: replayed.report(),
        what_if: fast,
    };
    if a.json {
        return output::json_sorted(out, &report).map(|()| true);
    }
    writeln!(
        out,
        "== inspect (built-in example: synthesized gpt-tiny, TP2 PP2 DP2, rank 0)"
    )?;
    inspect::write_file(out, &report.inspect, width)?;
    writeln!(out, "\n== replay")?;
    replay::write_trace(out, &report.replay, 5, width)?;
    writeln!(out, "\n== what-if: compute kernels 2x faster")?;
    // What the what-if changes: the replay and its critical paths. The
    // tables of the measured trace are the baseline's (they were printed
    // again, the same, under the what-if).
    replay::write_replay(out, &report.what_if, width)?;
    analysis::write_paths(out, &report.what_if.analysis.critical_path, width)?;
    let note =
        "the tables of the measured trace are as above: the what-if changes the replay only)";
    writeln!(out, "{}", output::wrapped_words("  (", note, "   ", width))?;
    writeln!(out, "\n== what this shows")?;
    for line in verdict(&report.replay, &report.what_if) {
        // Sentences of up to 190 columns, folded at the words.
        writeln!(out, "{}", output::wrapped_words("", &line, "", width))?;
    }
    next_steps(out, dir, (&files, &report.timeline), width)?;
    Ok(true)
}

/// What bounds the replayed job and what the what-if changed, in words.
fn verdict(base: &TraceReplay, fast: &TraceReplay) -> Vec<String> {
    let b = &base.breakdown.replayed;
    let total = b.total_us.max(1e-9);
    let pct = |x: f64| x / total * 100.0;
    // The word `lumos report` of the trace opens with, from the same
    // measured breakdown and critical path: the demo said "idle-bound (the
    // GPU waits for the CPU)" where the tables above said CPU-bound.
    let path = base.critical_path.as_ref().map_or(&[][..], |c| &c.by_bound);
    let bound = match lumos_report::run_bound(&base.breakdown.measured, path) {
        "CPU/launch-bound" => {
            "CPU/launch-bound (its critical path runs mostly through the CPU and its launches)"
        }
        "waiting for peers" => "waiting for peers (the GPU idles in collectives)",
        "idle-bound" => "idle-bound (the GPU idles; neither the CPU nor peers explain most of it)",
        other => other,
    };
    let (before, after) = (base.window.replayed_us, fast.window.replayed_us);
    let saved = if before > 0.0 {
        (before - after) / before * 100.0
    } else {
        0.0
    };
    let why = if saved < 25.0 {
        "compute is not what holds the step back, so faster kernels help little".to_string()
    } else {
        "compute is most of the step, so faster kernels pay".to_string()
    };
    vec![
        format!(
            "This job is {bound}: of its {:.1} ms replayed window, {:.0}% is exposed compute, \
             {:.0}% compute overlapped with communication, {:.0}% exposed communication and \
             {:.0}% GPU idle.",
            total / 1e3,
            pct(b.exposed_compute_us),
            pct(b.overlapped_us),
            pct(b.exposed_comm_us),
            pct(b.idle_us)
        ),
        format!(
            "Making every compute kernel 2x faster shortens the window by {saved:.1}% \
             ({:.1} -> {:.1} ms): {why}.",
            before / 1e3,
            after / 1e3
        ),
    ]
}

/// Where the files are and the commands a user would type next. Paths
/// are shown as every command shows them ([`output::shown_path`]): the
/// folder is the user's `--out`, which can hold anything; in the
/// commands, each is one shell word ([`output::shell_path`]).
fn next_steps(
    out: &mut dyn Write,
    dir: &Path,
    (files, timeline): (&[PathBuf], &str),
    width: usize,
) -> Result<()> {
    let rank0 = files
        .first()
        .map_or(String::new(), |f| output::shown_path(f));
    writeln!(
        out,
        "The example's traces are in {} (one rank per pipeline stage).",
        output::shown_path(dir)
    )?;
    let open = format!(
        "Open {} in Perfetto (ui.perfetto.dev, Open trace file)",
        output::shown(timeline)
    );
    let see = format!("to see the replayed timeline; {rank0} is the trace it replays.");
    if width < output::WIDTH {
        let text = format!("{open} {see}");
        writeln!(out, "{}", output::wrapped_words("", &text, "", width))?;
    } else {
        writeln!(out, "{open}\n{see}")?;
    }
    // The commands to type: each path one shell word.
    let word = |p: &Path| output::shown(&output::shell_path(p)).into_owned();
    let rank0 = files.first().map_or(String::new(), |f| word(f));
    let stages: Vec<String> = files.iter().map(|f| word(f)).collect();
    writeln!(out, "\nNext:")?;
    writeln!(out, "  lumos replay {rank0}")?;
    writeln!(out, "  lumos predict {} --dp 4", stages.join(" "))?;
    writeln!(
        out,
        "  lumos report {rank0} -o {}",
        word(&dir.join("report.html"))
    )?;
    Ok(())
}
