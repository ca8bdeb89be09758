//! `lumos synth`: write synthesized Kineto traces of a GPT training job.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lumos_models::{Cluster, GpuSpec};
use lumos_synth::{Attention, ModelPreset, Parallelism, Precision, Ranks, Recompute, SynthConfig};

use crate::usage::{batch, count, steps, usage};

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
/// error, a bad file (any other key included) bad input.
pub fn model_from_arg(arg: &str) -> Result<ModelPreset> {
    if !Path::new(arg).is_file() {
        // A path with nothing there (or a folder) is a file that cannot be
        // read: bad input; only a name is a preset's.
        if let Some(problem) = crate::inputs::not_a_file(arg) {
            anyhow::bail!("--model {problem}; a model is a preset or a JSON file");
        }
        return ModelPreset::preset(arg).map_err(|e| usage(format!("--model: {e}")));
    }
    let text = lumos_report::read_preset_file(Path::new(arg))
        .with_context(|| format!("{arg}: cannot read"))?;
    lumos_report::model_from_json(arg, &text).map_err(anyhow::Error::msg)
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
    #[arg(short, long)]
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
    /// With --virtual-stages: pipeline sends hold the compute stream and a
    /// device synchronization follows each batched transfer (Megatron-LM's
    /// flag of that name; needs pp > 2). Plain 1F1B always does this.
    #[arg(long)]
    pub no_overlap_p2p_communication: bool,
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
    /// Write no `cudaStreamWaitEvent` calls either (many exporters record
    /// none): with the two above, no cross-stream evidence at all.
    #[arg(long)]
    pub no_stream_waits: bool,
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
    t.p2p_overlap = !r.no_overlap_p2p_communication;
    t.cuda_sync_events = !r.no_cuda_sync_events;
    t.event_records = !r.no_event_records;
    t.stream_waits = !r.no_stream_waits;
    Ok(())
}

/// Refuses, before anything is allocated, a configuration whose traces
/// lumos could not hold (`lumos_synth::check_size`): a usage error that
/// gives the estimate and the limit, in the flags' terms.
fn check_size(cfg: &SynthConfig) -> Result<()> {
    lumos_synth::check_size(cfg).map_err(|r| {
        let text = match r {
            lumos_synth::SizeRefusal::World { world } => format!(
                "--tp x --pp x --dp is {world} GPUs; lumos synth writes jobs of at most {}",
                lumos_synth::MAX_WORLD_SIZE
            ),
            other => other
                .to_string()
                .replace("synth writes", "lumos synth writes"),
        };
        usage(text)
    })
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
    crate::inputs::output_dir(&a.out, "--out")?;
    let bar = crate::progress::count(cfg.selected_ranks().len() as u64, "writing ranks");
    let files = lumos_synth::write_job_with(&cfg, &a.out, &|_| {
        bar.inc(1);
        true
    });
    bar.finish_and_clear();
    match files {
        // It names the file and what is wrong: "<out>: cannot write the
        // job: " before it named the directory twice.
        Err(e @ lumos_synth::SynthError::Write(_)) => Err(e.into()),
        files => files.with_context(|| format!("{}: cannot write the job", a.out.display())),
    }
}

/// Runs `lumos synth`: writes the job, lists its files, then says on
/// stderr what to type next (stdout stays the list of files, which
/// scripts read).
pub fn run(a: &SynthArgs, out: &mut dyn Write) -> Result<bool> {
    for f in write(a)? {
        writeln!(out, "{}", crate::output::shown_path(&f))?;
    }
    // Quoted for a shell where it needs it, so that the line can be typed
    // as it is.
    let dir = crate::output::shell_path(&a.out);
    let report = crate::output::shell_path(&a.out.join("report.html"));
    crate::output::next(format!("lumos replay {dir}"));
    crate::output::next(format!("lumos report {dir} -o {report}"));
    Ok(true)
}
