//! `lumos synth`: write synthesized Kineto traces of a GPT training job.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use lumos_models::GpuSpec;
use lumos_synth::{ModelPreset, Parallelism, Ranks, SynthConfig};

use crate::usage::usage;

/// Which ranks `--ranks` selects.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum RankChoice {
    /// Every rank of the job.
    All,
    /// One rank per pipeline stage.
    OnePerStage,
}

/// A preset name, or a JSON file with `layers`, `hidden`, `heads` and
/// optionally `name`, `ffn_hidden`, `seq_len`, `micro_batch`, `vocab`. An
/// unknown preset is a usage error, a bad file bad input.
pub fn model_from_arg(arg: &str) -> Result<ModelPreset> {
    if !Path::new(arg).is_file() {
        return ModelPreset::preset(arg).map_err(|e| usage(format!("--model: {e}")));
    }
    let text = std::fs::read_to_string(arg).with_context(|| format!("{arg}: cannot read"))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{arg}: invalid JSON"))?;
    let field = |k: &str| -> Result<Option<usize>> {
        match v.get(k) {
            None => Ok(None),
            Some(x) => x
                .as_u64()
                .map(|n| Some(n as usize))
                .with_context(|| format!("{arg}: \"{k}\" must be a positive integer")),
        }
    };
    let (Some(layers), Some(hidden), Some(heads)) =
        (field("layers")?, field("hidden")?, field("heads")?)
    else {
        bail!("{arg}: a model file needs \"layers\", \"hidden\" and \"heads\"");
    };
    let name = v.get("name").and_then(|n| n.as_str()).unwrap_or("custom");
    let mut m = ModelPreset::gpt(name, layers, hidden, heads);
    if let Some(f) = field("ffn_hidden")? {
        m.ffn_hidden = f;
    }
    if let Some(s) = field("seq_len")? {
        m.seq_len = s;
    }
    if let Some(b) = field("micro_batch")? {
        m.micro_batch = b;
    }
    if let Some(b) = field("vocab")? {
        m.vocab = b;
    }
    Ok(m)
}

/// Everything `lumos synth` needs.
#[derive(clap::Args)]
pub struct SynthArgs {
    /// Model preset (gpt-tiny, gpt-small, gpt3-15b, gpt3-44b, gpt3-117b,
    /// gpt3-175b) or a JSON file with layers/hidden/heads.
    #[arg(long)]
    pub model: String,
    /// Tensor-parallel degree.
    #[arg(long, default_value_t = 1)]
    pub tp: usize,
    /// Pipeline-parallel degree.
    #[arg(long, default_value_t = 1)]
    pub pp: usize,
    /// Data-parallel degree.
    #[arg(long, default_value_t = 1)]
    pub dp: usize,
    /// Micro-batches per iteration (default: 2 x pp).
    #[arg(long)]
    pub microbatches: Option<usize>,
    /// GPU and system preset: a100, h100, h200, b200.
    #[arg(long, default_value = "h100")]
    pub gpu: String,
    /// Which ranks to write.
    #[arg(long, value_enum, default_value = "one-per-stage")]
    pub ranks: RankChoice,
    /// Profiled iterations per trace.
    #[arg(long, default_value_t = 2)]
    pub steps: usize,
    /// Seed of the timing noise.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
}

/// The synthesizer's configuration for these arguments.
pub fn config(a: &SynthArgs) -> Result<SynthConfig> {
    let model = model_from_arg(&a.model)?;
    let gpu = GpuSpec::preset(&a.gpu).map_err(|e| usage(format!("--gpu: {e}")))?;
    // Megatron's usual default: as many micro-batches as twice the stages.
    let m = a.microbatches.unwrap_or(2 * a.pp);
    let mut cfg = SynthConfig::new(model, Parallelism::new(a.tp, a.pp, a.dp, m), gpu);
    cfg.steps = a.steps;
    cfg.seed = a.seed;
    cfg.ranks = match a.ranks {
        RankChoice::All => Ranks::All,
        RankChoice::OnePerStage => Ranks::OnePerStage,
    };
    // Degrees, steps and the model's shape that cannot make a job.
    cfg.validate().map_err(usage)?;
    Ok(cfg)
}

/// Writes the job and returns the files.
pub fn write(a: &SynthArgs) -> Result<Vec<PathBuf>> {
    let cfg = config(a)?;
    lumos_synth::write_job(&cfg, &a.out)
        .with_context(|| format!("{}: cannot write the job", a.out.display()))
}

/// Runs `lumos synth`: writes the job, then lists its files.
pub fn run(a: &SynthArgs, out: &mut dyn Write) -> Result<bool> {
    for f in write(a)? {
        writeln!(out, "{}", f.display())?;
    }
    Ok(true)
}
