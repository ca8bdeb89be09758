//! `lumos demo`: the built-in example end to end. A small GPT job written
//! by the synthesizer (TP2 x PP2 x DP2, one rank per pipeline stage) is
//! inspected, replayed, and replayed with compute kernels twice as fast;
//! rank 0 is shown.

use std::io::Write;

use anyhow::Result;
use lumos_report::DemoOutput;
use lumos_sim::{GpuSelector, SimOptions};

use super::synth::{RankChoice, SynthArgs};
use super::{inspect, replay};
use crate::output;

/// `lumos demo` arguments.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Runs `lumos demo`.
pub fn run(a: &DemoArgs, out: &mut dyn Write) -> Result<bool> {
    let dir = std::env::temp_dir().join(format!("lumos-demo-{}", std::process::id()));
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
    let base = lumos_report::replay_trace(&trace, &SimOptions::default())?;
    let fast = SimOptions::default().scale(GpuSelector::Compute, 0.5);
    let fast = lumos_report::replay_trace(&trace, &fast)?;
    let report = DemoOutput {
        inspect: lumos_report::inspect(&trace),
        replay: base,
        what_if: fast,
    };
    let _ = std::fs::remove_dir_all(&dir);
    if a.json {
        return output::json_sorted(out, &report).map(|()| true);
    }
    writeln!(
        out,
        "== inspect (built-in example: synthesized gpt-tiny, TP2 PP2 DP2, rank 0)"
    )?;
    inspect::write_file(out, &report.inspect)?;
    writeln!(out, "\n== replay")?;
    replay::write_trace(out, &report.replay, 5)?;
    writeln!(out, "\n== what-if: compute kernels 2x faster")?;
    replay::write_trace(out, &report.what_if, 5)?;
    Ok(true)
}
