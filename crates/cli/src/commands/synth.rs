//! `lumos synth`: write synthesized Kineto traces of a GPT training job.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use lumos_models::{Cluster, GpuSpec};
use lumos_synth::{Attention, ModelPreset, Parallelism, Precision, Ranks, Recompute, SynthConfig};

use crate::usage::{batch, count, range, steps, usage};

/// Which ranks `--ranks` selects.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum RankChoice {
    /// Every rank of the job.
    All,
    /// One rank per pipeline stage.
    OnePerStage,
}

/// A preset name, or a JSON file with `layers`, `hidden`, `heads` and
/// optionally `name`, `ffn_hidden`, `seq_len`, `micro_batch`, `vocab`,
/// `kv_heads` and `swiglu` (true or false). An unknown preset is a usage
/// error, a bad file bad input.
pub fn model_from_arg(arg: &str) -> Result<ModelPreset> {
    if !Path::new(arg).is_file() {
        return ModelPreset::preset(arg).map_err(|e| usage(format!("--model: {e}")));
    }
    let text = std::fs::read_to_string(arg).with_context(|| format!("{arg}: cannot read"))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{arg}: invalid JSON"))?;
    // Counts within the flags' ranges, sizes within --hidden's, so that
    // every product of them fits the synthesizer's arithmetic.
    let (count, size) = (u64::from(range::COUNT_MAX), range::SIZE_MAX);
    let field = |k: &str, max: u64| -> Result<Option<usize>> {
        match v.get(k) {
            None => Ok(None),
            Some(x) => x
                .as_u64()
                .filter(|n| (1..=max).contains(n))
                .map(|n| Some(n as usize))
                .with_context(|| format!("{arg}: \"{k}\" must be a whole number from 1 to {max}")),
        }
    };
    let (Some(layers), Some(hidden), Some(heads)) = (
        field("layers", count)?,
        field("hidden", size)?,
        field("heads", count)?,
    ) else {
        bail!("{arg}: a model file needs \"layers\", \"hidden\" and \"heads\"");
    };
    let name = v.get("name").and_then(|n| n.as_str()).unwrap_or("custom");
    let mut m = ModelPreset::gpt(name, layers, hidden, heads);
    if let Some(f) = field("ffn_hidden", size)? {
        m.ffn_hidden = f;
    }
    if let Some(s) = field("seq_len", size)? {
        m.seq_len = s;
    }
    if let Some(b) = field("micro_batch", count)? {
        m.micro_batch = b;
    }
    if let Some(b) = field("vocab", size)? {
        m.vocab = b;
    }
    m.kv_heads = field("kv_heads", count)?.unwrap_or(heads);
    match v.get("swiglu") {
        None => {}
        Some(serde_json::Value::Bool(b)) => m.swiglu = *b,
        Some(_) => bail!("{arg}: \"swiglu\" must be true or false"),
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
    /// Tensor-parallel degree (1 to 65536; must divide the heads, FFN
    /// size and vocabulary).
    #[arg(long, default_value_t = 1, value_parser = count)]
    pub tp: u32,
    /// Pipeline-parallel degree (1 to 65536, at most the layers).
    #[arg(long, default_value_t = 1, value_parser = count)]
    pub pp: u32,
    /// Data-parallel degree (1 to 65536; tp x pp x dp at most 1048576).
    #[arg(long, default_value_t = 1, value_parser = count)]
    pub dp: u32,
    /// Micro-batches per iteration (1 to 65536; default: 2 x pp, or from
    /// --global-batch).
    #[arg(long, conflicts_with = "global_batch", value_parser = count)]
    pub microbatches: Option<u32>,
    /// GPU preset: a100, h100, h200, b200 (on its usual cluster, see
    /// --cluster).
    #[arg(long, default_value = "h100")]
    pub gpu: String,
    #[command(flatten)]
    pub recipe: RecipeArgs,
    /// Which ranks to write.
    #[arg(long, value_enum, default_value = "one-per-stage")]
    pub ranks: RankChoice,
    /// Profiled iterations per trace (2 to 65536; each rank's trace must
    /// stay under 4 GB of JSON).
    #[arg(long, default_value_t = 2, value_parser = steps)]
    pub steps: u32,
    /// Seed of the timing noise.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
}

/// How the job trains and what the profiler writes, beyond the layout.
#[derive(clap::Args, Default)]
pub struct RecipeArgs {
    /// Cluster preset (GPU and network as published): selene, jean-zay,
    /// dgx-h100, dgx-h200, dgx-b200; replaces --gpu.
    #[arg(long)]
    pub cluster: Option<String>,
    /// Sequences in the whole iteration's batch (1 to 16777216);
    /// micro-batches are global-batch / (micro-batch x dp).
    #[arg(long, value_parser = batch)]
    pub global_batch: Option<u64>,
    /// Sequences per micro-batch (1 to 65536; default: the model's, 1 for
    /// presets).
    #[arg(long, value_parser = count)]
    pub micro_batch: Option<u32>,
    /// Model chunks per pipeline stage (1 to 65536, at most the layers per
    /// stage): the interleaved 1F1B schedule (Megatron's virtual pipeline
    /// stages); default 1, plain 1F1B.
    #[arg(long, value_parser = count)]
    pub virtual_stages: Option<u32>,
    /// Turn Megatron's sequence parallelism off (on by default with tp > 1).
    #[arg(long)]
    pub no_sequence_parallel: bool,
    /// Megatron's distributed optimizer: gradients reduce-scattered,
    /// parameters all-gathered.
    #[arg(long)]
    pub distributed_optimizer: bool,
    /// Activation recomputation: none (default), selective, full.
    #[arg(long)]
    pub recompute: Option<String>,
    /// GEMM precision: bf16 (default), fp16, fp8.
    #[arg(long)]
    pub precision: Option<String>,
    /// Megatron's 2021-2022 unfused attention instead of flash attention.
    #[arg(long)]
    pub unfused_attention: bool,
    /// Write no `cuda_sync` events, as most exporters do.
    #[arg(long)]
    pub no_cuda_sync_events: bool,
    /// Write no `cudaEventRecord` calls either (some exporters drop them).
    #[arg(long)]
    pub no_event_records: bool,
}

/// Applies the recipe flags to `cfg` (after the layout and GPU are set).
fn apply_recipe(r: &RecipeArgs, cfg: &mut SynthConfig) -> Result<()> {
    if let Some(c) = &r.cluster {
        let cluster = Cluster::preset(c).map_err(|e| usage(format!("--cluster: {e}")))?;
        cfg.gpu = cluster.gpu;
        cfg.network = Some(cluster.network);
    }
    if let Some(b) = r.micro_batch {
        cfg.model.micro_batch = b as usize;
    }
    if let Some(g) = r.global_batch.map(|g| g as usize) {
        let p = &mut cfg.parallel;
        p.microbatches = p
            .microbatches_for(g, cfg.model.micro_batch)
            .ok_or_else(|| {
                usage(format!(
                    "--global-batch {g} is not a multiple of micro-batch {} x dp {}",
                    cfg.model.micro_batch, p.dp
                ))
            })?;
    }
    if let Some(v) = r.virtual_stages {
        cfg.parallel.virtual_stages = v as usize;
    }
    cfg.parallel.sequence_parallel = !r.no_sequence_parallel;
    cfg.parallel.distributed_optimizer = r.distributed_optimizer;
    let t = &mut cfg.training;
    if let Some(name) = &r.recompute {
        t.recompute = Recompute::from_name(name).ok_or_else(|| {
            usage(format!(
                "--recompute: {name:?} is not none, selective or full"
            ))
        })?;
    }
    if let Some(name) = &r.precision {
        t.precision = Precision::from_name(name)
            .ok_or_else(|| usage(format!("--precision: {name:?} is not bf16, fp16 or fp8")))?;
    }
    if r.unfused_attention {
        t.attention = Attention::Unfused;
    }
    t.cuda_sync_events = !r.no_cuda_sync_events;
    t.event_records = !r.no_event_records;
    Ok(())
}

/// Most GPUs (tp x pp x dp) a synthesized job may have: each trace lists
/// its process groups, whose size grows with the world.
const MAX_WORLD_SIZE: u128 = 1 << 20;

/// Most bytes of JSON one synthesized rank may hold. A rank's trace is
/// rendered in memory before it is compressed (one per thread at a time),
/// and 4 GB is the largest trace lumos' reader was measured on
/// (docs/PERFORMANCE.md, Scale), so that what is written can be read.
const MAX_RANK_BYTES: u128 = 4_000_000_000;

/// What a synthesized rank holds, measured on gpt-tiny and gpt-small
/// traces and rounded up: about 290 events per layer and micro-batch (440
/// with tensor parallelism), 140 per step besides, 215 bytes per event,
/// and 36 bytes of process-group metadata per rank of the world.
const EVENTS_PER_LAYER_PASS: u128 = 500;
const EVENTS_PER_STEP: u128 = 200;
const BYTES_PER_EVENT: u128 = 250;
const BYTES_PER_WORLD_RANK: u128 = 64;

/// Refuses a configuration whose traces lumos could not hold (see
/// [`MAX_RANK_BYTES`]), before anything is allocated: a usage error that
/// gives the estimate and the limit.
fn check_size(cfg: &SynthConfig) -> Result<()> {
    let p = &cfg.parallel;
    let world = p.tp as u128 * p.pp as u128 * p.dp as u128;
    if world > MAX_WORLD_SIZE {
        return Err(usage(format!(
            "--tp x --pp x --dp is {world} GPUs; lumos synth writes jobs of at most \
             {MAX_WORLD_SIZE}"
        )));
    }
    // Every model chunk needs a layer; said here, before the
    // synthesizer's check walks every chunk.
    let chunks = p.pp as u128 * p.virtual_stages as u128;
    if chunks > cfg.model.layers as u128 {
        return Err(usage(format!(
            "invalid config: {} layers cannot fill {} pipeline stages of {} model chunks",
            cfg.model.layers, p.pp, p.virtual_stages
        )));
    }
    let layers = (cfg.model.layers as u128).div_ceil(p.pp.max(1) as u128);
    let events = cfg.steps as u128
        * (EVENTS_PER_STEP + p.microbatches as u128 * layers * EVENTS_PER_LAYER_PASS);
    let bytes = events * BYTES_PER_EVENT + world * BYTES_PER_WORLD_RANK;
    if bytes > MAX_RANK_BYTES {
        return Err(usage(format!(
            "each rank's trace would hold about {events} events, about {} GB of JSON \
             ({} steps of {} micro-batches over {layers} layers per stage); lumos synth writes at \
             most {} GB per rank",
            bytes / 1_000_000_000,
            cfg.steps,
            p.microbatches,
            MAX_RANK_BYTES / 1_000_000_000
        )));
    }
    Ok(())
}

/// The synthesizer's configuration for these arguments.
pub fn config(a: &SynthArgs) -> Result<SynthConfig> {
    let model = model_from_arg(&a.model)?;
    let gpu = GpuSpec::preset(&a.gpu).map_err(|e| usage(format!("--gpu: {e}")))?;
    let (tp, pp, dp) = (a.tp as usize, a.pp as usize, a.dp as usize);
    // Megatron's usual default: as many micro-batches as twice the stages.
    let m = a.microbatches.map_or(2 * pp, |m| m as usize);
    let mut cfg = SynthConfig::new(model, Parallelism::new(tp, pp, dp, m), gpu);
    apply_recipe(&a.recipe, &mut cfg)?;
    cfg.steps = a.steps as usize;
    cfg.seed = a.seed;
    cfg.ranks = match a.ranks {
        RankChoice::All => Ranks::All,
        RankChoice::OnePerStage => Ranks::OnePerStage,
    };
    check_size(&cfg)?;
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
