//! `lumos predict`: predict another training configuration from traces by
//! editing their execution graphs (lumos-predict), and compare it with the
//! measured run and its replay.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lumos_models::NetworkModel;
use lumos_predict::{
    network_preset, Baseline, Candidates, Discovered, EditSet, Input, KernelScale, Outcome,
    PredictError, Prediction,
};
use lumos_report::{
    ConfidenceReport, InputWarnings, MergedTimeline, PredictReport, PredictedFrom, Timeline,
    TimelineSource,
};
use lumos_store::ReadFor;

use crate::output::{pct, shown, wrapped, wrapped_words};
use crate::usage::{count, refusal, size, usage};
use crate::{inputs, output, progress};

/// `lumos predict` arguments.
#[derive(clap::Args)]
pub struct PredictArgs {
    /// Trace files, compact graphs (.lgraph) or directories: one rank, or
    /// one rank per pipeline stage of the same job; `-` reads standard
    /// input.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write each predicted stage's timeline as rank<N>.predicted.json.gz
    /// here (opens in Perfetto), N being the stage's rank in the predicted
    /// job; the trace it was built from is in the file (`predictedFrom`)
    /// and on the list printed. The files state the predicted job (each
    /// stage's rank, its process groups, every collective's group), so
    /// `lumos replay` of them (or of the directory) replays it as the
    /// prediction did; where they cannot, they state none and a note says
    /// why. Predicted timelines of an earlier prediction in the directory
    /// are removed, so that it holds one predicted job.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Predict from the trace's graph re-timed with the durations measured
    /// in TRACE, another recording of the same program (as `lumos replay
    /// --durations-from`): the new configuration on TRACE's hardware or
    /// software. TRACE's GPU and node size are the prediction's (GPU
    /// preset, network presets, calibration on TRACE's durations); the
    /// trace predicted from gives the graph, configuration and ranks.
    /// Takes one trace to predict from.
    #[arg(long, value_name = "TRACE")]
    pub durations_from: Option<PathBuf>,
    /// With --out, write the stages as one timeline,
    /// job.predicted.json.gz, each stage's rank a process named "rank N";
    /// the traces the stages were built from are in the file
    /// (`predictedFrom`, a list of the stages).
    #[arg(long, requires = "out")]
    pub merge: bool,
}

/// The configuration to predict: `lumos predict`'s flags, which `lumos
/// report` takes too.
#[derive(clap::Args)]
pub struct TargetArgs {
    /// Data-parallel degree, weak scaling (1 to 65536; tp x dp x pp at
    /// most 1048576). Needs data-parallel collectives in the trace.
    #[arg(long, value_parser = count)]
    pub dp: Option<u32>,
    /// Pipeline-parallel degree (1 to 65536; needs the first and last
    /// stages' traces, and at least one layer per stage).
    #[arg(long, value_parser = count)]
    pub pp: Option<u32>,
    /// Micro-batches per step (1 to 65536; fewer than the stages is
    /// allowed).
    #[arg(long, value_parser = count)]
    pub microbatches: Option<u32>,
    /// Model chunks per pipeline stage (1 to 65536): Megatron's
    /// interleaved 1F1B schedule (virtual pipeline stages), as `lumos
    /// synth --virtual-stages`; 1 for plain 1F1B. Above 1 it needs more
    /// than 2 stages, micro-batches a multiple of the stages and layers a
    /// multiple of stages x virtual stages.
    #[arg(long, value_parser = count)]
    pub virtual_stages: Option<u32>,
    /// Transformer layers in the whole model (1 to 65536; stages may hold
    /// unequal numbers, earlier stages the remainder).
    #[arg(long, value_parser = count)]
    pub layers: Option<u32>,
    /// Hidden size (1 to 1048576; a multiple of the heads and of tp). The
    /// FFN size follows in proportion unless --ffn is given.
    #[arg(long, value_parser = size)]
    pub hidden: Option<u64>,
    /// FFN (MLP inner) size (1 to 1048576; a multiple of tp).
    #[arg(long, value_parser = size)]
    pub ffn: Option<u64>,
    /// Attention heads of the whole model (1 to 65536; a multiple of tp,
    /// and the hidden size a multiple of them). Without it a hidden-size
    /// edit keeps the traced heads, so the head size changes; attention is
    /// timed by its FLOPs (b s^2 h), which the heads do not change.
    #[arg(long, value_parser = count)]
    pub heads: Option<u32>,
    /// Sequences per micro-batch, the micro-batch size (1 to 65536), at
    /// the same sequence length. Needs the traced size: an attention
    /// kernel whose operator records the query's shape.
    #[arg(long, value_parser = count)]
    pub micro_batch: Option<u32>,
    /// Tensor-parallel degree (1 to 65536; must divide the heads, hidden
    /// and FFN sizes). Needs tensor-parallel collectives in the trace;
    /// from a trace at TP 1, Megatron-style dense layers whose projections
    /// their recorded shapes tell (their all-reduces are added, modelled;
    /// no sequence parallelism).
    #[arg(long, value_parser = count)]
    pub tp: Option<u32>,
    /// Kernel speed-up, PATTERN=FACTOR (durations multiplied by FACTOR,
    /// 1e-6 to 1e6). PATTERN is class:gemm, class:attention, class:memory,
    /// class:comm, class:compute (GEMMs and attention known by recorded
    /// shapes), or a case-sensitive substring of kernel names; one that
    /// selects no GPU task of the traces is refused. Repeatable, each
    /// pattern once.
    #[arg(long, value_name = "PATTERN=FACTOR", value_parser = lumos_report::range::kernel_scale)]
    pub scale_kernels: Vec<KernelScale>,
    /// Target network: a GPU preset (a100, h100, h200, b200) or a JSON
    /// file with link bandwidths and latencies.
    #[arg(long, value_name = "PRESET|FILE")]
    pub network: Option<String>,
}

impl TargetArgs {
    /// Whether any flag asks for another configuration.
    pub fn any(&self) -> bool {
        self.dp.is_some()
            || self.pp.is_some()
            || self.microbatches.is_some()
            || self.virtual_stages.is_some()
            || self.layers.is_some()
            || self.hidden.is_some()
            || self.ffn.is_some()
            || self.heads.is_some()
            || self.micro_batch.is_some()
            || self.tp.is_some()
            || !self.scale_kernels.is_empty()
            || self.network.is_some()
    }
}

/// A prediction's error, as a usage error (exit 2) when the target or an
/// edit these traces cannot support is at fault.
pub fn predict_error(e: PredictError) -> anyhow::Error {
    if matches!(
        e,
        PredictError::Unsupported(_) | PredictError::InvalidTarget(_)
    ) {
        refusal(e)
    } else if e.is_usage() {
        usage(e)
    } else {
        anyhow::Error::msg(e)
    }
}

/// Reads, builds and discovers every trace, a few at a time on every core
/// ([`lumos_report::prediction_input`], [`Discovered::new`]); a rank that
/// cannot stand for its pipeline stage gives up its graph as it comes
/// ([`Candidates`]), so a whole job's directory is held as one graph per
/// stage. What the predicted timelines need of each trace is kept, the
/// trace itself is not. Until the stages can be told apart every rank is
/// held, so a [`lumos_store::MemoryGuard`] stops the read (an error) once
/// they would outgrow the machine. Also what each file that warned
/// warned ([`lumos_report::PredictionFile::warnings`]), in the order given.
pub fn load(paths: &[PathBuf]) -> Result<(Candidates, Vec<TimelineSource>, Vec<InputWarnings>)> {
    let files = inputs::expand(paths)?;
    let guard = inputs::memory_guard(files.len(), ReadFor::Prediction)?;
    let started = std::sync::atomic::AtomicUsize::new(0);
    let mut candidates = Candidates::new();
    let mut sources = Vec::new();
    let mut warned = Vec::new();
    // The first file that failed, in the order given, is the error.
    inputs::each_file_then(
        &files,
        |f| {
            started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            guard.read(|| {
                lumos_report::prediction_input(f).map(|f| {
                    let (input, source, warned) = f.into_parts();
                    (Discovered::new(input), source, warned)
                })
            })
        },
        |r| {
            // No file after this window's is started.
            let not_started = files.len() - started.load(std::sync::atomic::Ordering::Relaxed);
            let r = r.ok_or_else(|| guard.not_read(not_started))?;
            let (discovered, source, warnings) = r.map_err(inputs::input_error)?;
            candidates.push(discovered);
            sources.push(source);
            warned.extend(warnings);
            Ok(())
        },
    )?;
    Ok((candidates, sources, warned))
}

/// Says on stderr what each file read warned, one line per warning
/// naming the file, in the words of `lumos replay` of it: a prediction
/// from a damaged trace is made, but not without a word. A refused
/// prediction says none, as a refused replay says none.
fn say_input_warnings(warned: &[InputWarnings]) {
    for w in warned {
        for text in &w.warnings {
            output::warning(format_args!("{}: {text}", w.path));
        }
    }
}

/// The one trace `--durations-from` re-times (before discovery), read and
/// built as [`load`] does, with its warnings; more than one is bad usage,
/// refused before any is read.
fn load_one(paths: &[PathBuf]) -> Result<(Input, TimelineSource, Option<InputWarnings>)> {
    let files = inputs::expand(paths)?;
    let [file] = &files[..] else {
        return Err(usage(format!(
            "--durations-from takes one trace to predict from, got {}",
            files.len()
        )));
    };
    let read = inputs::each_file(std::slice::from_ref(file), lumos_report::prediction_input);
    read.into_iter()
        .next()
        .expect("one file, one result")
        .map(lumos_report::PredictionFile::into_parts)
        .map_err(inputs::input_error)
}

/// The prediction the flags ask for, all edits applied together (the
/// target is judged as a whole).
pub fn apply<'b>(
    base: &'b Baseline,
    a: &TargetArgs,
    network: Option<(NetworkModel, String)>,
) -> Result<Prediction<'b>, PredictError> {
    let edits = EditSet {
        pp: a.pp,
        microbatches: a.microbatches,
        virtual_stages: a.virtual_stages,
        layers: a.layers,
        hidden: a.hidden,
        ffn: a.ffn,
        heads: a.heads.map(u64::from),
        micro_batch: a.micro_batch.map(u64::from),
        tp: a.tp,
        dp: a.dp,
        scale_kernels: a.scale_kernels.clone(),
        network,
    };
    base.identity().with_edits(edits.into_edits())
}

/// The `--network` argument: a GPU preset name, or a JSON file, read here
/// (the library does no file I/O) and named in its errors.
fn network_from_arg(arg: &str) -> Result<(NetworkModel, String), PredictError> {
    let path = Path::new(arg);
    if !path.is_file() {
        return network_preset(arg);
    }
    let text = lumos_report::read_preset_file(path).map_err(|e| PredictError::InvalidNetwork {
        name: Some(arg.to_owned()),
        problem: e.to_string(),
    })?;
    lumos_report::network_from_json(&text, arg)
}

/// The `--network` the flags name, read. A network file that cannot be
/// read or parsed is bad input (a preset name was checked with the
/// arguments).
pub fn target_network(a: &TargetArgs) -> Result<Option<(NetworkModel, String)>> {
    a.network
        .as_deref()
        .map(network_from_arg)
        .transpose()
        .map_err(anyhow::Error::msg)
}

/// The prediction the flags `target` ask for of the inputs `loaded` (with
/// a spinner: discovery, the edits and two replays take seconds on a
/// large rank), its report, and what `then` makes of the prediction and
/// its outcome while they live (the outcome borrows the prediction).
/// `check` sees the prediction once its graphs are made, before they are
/// replayed: what it refuses is refused before the replays.
pub fn predict_then<T>(
    loaded: Candidates,
    target: &TargetArgs,
    check: impl FnOnce(&Prediction<'_>) -> Result<()>,
    then: impl FnOnce(&Prediction<'_>, &Outcome<'_>) -> Result<T>,
) -> Result<(PredictReport, T)> {
    let network = target_network(target)?;
    let bar = progress::spinner("predicting");
    let base = Baseline::of(loaded).map_err(predict_error)?;
    let pred = apply(&base, target, network).map_err(predict_error)?;
    check(&pred)?;
    let (report, outcome) = lumos_report::predict(&base, &pred)?;
    bar.finish_and_clear();
    Ok((report, then(&pred, &outcome)?))
}

/// Runs `lumos predict`.
/// Its text is laid out for lines of `width` characters.
pub fn run(a: &PredictArgs, out: &mut dyn Write, width: usize) -> Result<bool> {
    check_args(&a.target)?;
    if let Some(dir) = &a.out {
        inputs::output_dir(dir, "--out")?;
    }
    // A timeline that would replace an input (a prediction made from
    // predicted timelines into their own directory) is refused before the
    // work, as the other commands refuse theirs: the merged one's name is
    // known now, before anything is read.
    if let (Some(dir), true) = (&a.out, a.merge) {
        let mut given = inputs::expand(&a.paths)?;
        given.extend(a.durations_from.as_deref().map(inputs::input_path));
        let name = dir.join(lumos_report::merged_file_name("predicted"));
        inputs::output_not_an_input(&name, &given, "--out")?;
    }
    let (loaded, sources, transfer, mut warned) = match &a.durations_from {
        Some(b) => {
            crate::usage::stdin_once(a.paths.iter().map(PathBuf::as_path).chain([b.as_path()]))?;
            let (mut input, mut source, warned) = load_one(&a.paths)?;
            let (transfer, b_warned) = retime_from(&mut input, &mut source, b)?;
            (
                Candidates::discover_all(vec![input]),
                vec![source],
                Some(transfer),
                Vec::from_iter(warned.into_iter().chain(b_warned)),
            )
        }
        None => {
            let (candidates, sources, warned) = load(&a.paths)?;
            (candidates, sources, None, warned)
        }
    };
    // Each file named as its replay names it.
    for w in &mut warned {
        inputs::rename_stdin(&mut w.path);
        for text in &mut w.warnings {
            *text = inputs::stdin_named_in(text).into_owned();
        }
    }
    // A rank without tasks is left out and the others predicted, as a
    // job's assembly leaves it out (`lumos replay --job`, `lumos
    // report`): named now, before the work, and the exit code is 1. When
    // no rank has a task, the prediction's refusal names the first.
    let left_out = loaded.left_out().len();
    if left_out < loaded.len() {
        for l in loaded.left_out() {
            output::error(l);
        }
    }
    // Every file read: the traces predicted from, and B, whose durations
    // they took.
    let read: Vec<PathBuf> = (sources.iter().map(|s| s.path.clone()))
        .chain(a.durations_from.as_deref().map(inputs::input_path))
        .collect();
    // The stages' timelines are named after their ranks in the predicted
    // job, known once the edits are made: checked then, before the
    // replays.
    let check = |pred: &Prediction<'_>| match (&a.out, a.merge) {
        (Some(dir), false) => (Timeline::predicted_file_names(pred).iter())
            .try_for_each(|name| inputs::output_not_an_input(&dir.join(name), &read, "--out")),
        _ => Ok(()),
    };
    let mut written = Vec::new();
    let (mut report, kept) = predict_then(loaded, &a.target, check, |pred, outcome| {
        if let Some(dir) = &a.out {
            let predicted = Timeline::predicted(pred, outcome, &sources);
            for n in &predicted.notes {
                output::note(format_args!("--out: {n}"));
            }
            let timelines = predicted.timelines;
            if a.merge {
                let name = dir.join(lumos_report::merged_file_name("predicted"));
                super::replay::write_merged(dir, &MergedTimeline::new(timelines))?;
                written.push((name, None));
            } else {
                // Named after their ranks in the predicted job, which are
                // distinct; two that were not would be refused.
                let timelines = super::replay::named_apart(timelines)?;
                for t in timelines {
                    super::replay::write_timeline(dir, &t)?;
                    written.push((dir.join(t.file_name()), t.predicted_from().cloned()));
                }
            }
            let now: Vec<&Path> = written.iter().map(|(p, _)| p.as_path()).collect();
            remove_earlier_predictions(dir, &now, &read)?;
        }
        Ok(pred
            .stages
            .iter()
            .map(|s| s.graph.edges.len() + s.graph.runtime_deps.len())
            .sum::<usize>())
    })?;
    for i in &mut report.inputs {
        inputs::rename_stdin(&mut i.path);
    }
    for l in &mut report.left_out {
        l.detail = inputs::stdin_named_in(&l.detail).into_owned();
        inputs::rename_stdin(&mut l.path);
    }
    // Said once there is a prediction, as a replay's are said with its
    // result: a refusal is the error alone.
    say_input_warnings(&warned);
    report.input_warnings = warned;
    let transfer = transfer.map(super::transfer::renamed);
    match (transfer, a.json) {
        (Some(t), true) => output::json(
            out,
            &lumos_report::TransferPrediction {
                prediction: report,
                durations_from: t,
            },
        )?,
        (Some(t), false) => {
            super::transfer::write_transfer(out, &t, width)?;
            write_human(out, &report, kept, width)?;
            write_written(out, &written)?;
        }
        (None, true) => output::json(out, &report)?,
        (None, false) => {
            write_human(out, &report, kept, width)?;
            write_written(out, &written)?;
        }
    }
    // Bad input, a partial result: as `lumos replay --job`'s.
    Ok(left_out == 0)
}

/// Removes the predicted timelines an earlier prediction left in `dir`
/// that this one did not write (`now`): the directory stands for one
/// predicted job (`lumos replay DIR`), which they would join as ranks of
/// their own. Those read as this prediction's inputs are kept, and said.
fn remove_earlier_predictions(dir: &Path, now: &[&Path], read: &[PathBuf]) -> Result<()> {
    let (mut removed, mut kept) = (0usize, 0usize);
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("--out {}: cannot list the directory", dir.display()))?;
    for path in entries.flatten().map(|e| e.path()) {
        // Lossily, as `lumos replay DIR` lists them
        // (`predicted_timelines_under`): a name that is not UTF-8 was kept
        // here and read there as one more rank.
        let name = (path.file_name()).map_or_else(Default::default, |n| n.to_string_lossy());
        if !lumos_trace::is_predicted_timeline(&name) || !path.is_file() || now.contains(&&*path) {
            continue;
        }
        if inputs::output_not_an_input(&path, read, "--out").is_err() {
            kept += 1;
            continue;
        }
        std::fs::remove_file(&path)
            .with_context(|| format!("{}: cannot remove an earlier prediction", path.display()))?;
        removed += 1;
    }
    if removed > 0 {
        output::note(format_args!(
            "--out {}: removed {} of an earlier prediction (the directory holds one predicted job)",
            dir.display(),
            output::counted(removed as u64, "predicted timeline", "predicted timelines")
        ));
    }
    if kept > 0 {
        output::note(format_args!(
            "--out {}: {} of an earlier prediction kept, being this one's inputs: `lumos replay \
             {}` would take them as ranks of this prediction's job",
            dir.display(),
            output::counted(kept as u64, "predicted timeline", "predicted timelines"),
            dir.display()
        ));
    }
    Ok(())
}

/// The predicted timelines `--out` wrote, each with the traced rank it
/// was built from (its file is named after the rank it predicts).
fn write_written(
    out: &mut dyn Write,
    written: &[(PathBuf, Option<PredictedFrom>)],
) -> std::io::Result<()> {
    for (path, from) in written {
        match from {
            Some(f) => writeln!(
                out,
                "  wrote {}: stage {}, built from {} (traced rank {}, stage {})",
                output::shown_path(path),
                f.predicted_stage,
                output::shown_path(&f.trace),
                f.rank,
                f.stage
            )?,
            None => writeln!(out, "  wrote {}", output::shown_path(path))?,
        }
    }
    Ok(())
}

/// `--durations-from B`: the one input's graph re-timed with B's
/// durations, in place, on B's hardware ([`lumos_report::retime_input`]);
/// the transfer's report. The predicted timelines list B's devices, so a
/// timeline read back names the GPU its durations ran on.
fn retime_from(
    input: &mut Input,
    source: &mut TimelineSource,
    b: &Path,
) -> Result<(lumos_report::TransferReport, Option<InputWarnings>)> {
    let (b_input, b_source, b_warned) = super::transfer::read_input(b)?;
    source.about.devices = b_source.about.devices;
    let transfer =
        lumos_report::retime_input(input, &b_input, None).map_err(super::transfer::report_error)?;
    Ok((transfer, b_warned))
}

/// A configuration as the text shows it: sizes the traces do not tell
/// (held as 0) are [`output::UNKNOWN`], as in every other table; what
/// follows the sizes is the configuration's own
/// ([`lumos_predict::Config::extras`]).
fn config_text(c: &lumos_report::Config) -> String {
    let known = |v: u64| output::or_unknown((v > 0).then_some(v));
    format!(
        "tp{} pp{} dp{}, {}, {} layers, hidden {}, ffn {}{}",
        c.tp,
        c.pp,
        c.dp,
        output::counted(u64::from(c.microbatches), "micro-batch", "micro-batches"),
        known(u64::from(c.layers)),
        known(c.hidden),
        known(c.ffn),
        lumos_predict::Config::from(*c).extras()
    )
}

/// The text form of a prediction; `kept` is how many dependencies the
/// predicted stages hold (what the dropped ones are a share of).
fn write_human(
    out: &mut dyn Write,
    r: &PredictReport,
    kept: usize,
    width: usize,
) -> std::io::Result<()> {
    // The traces given, those left out among them (named on stderr
    // above), so that the count reads as the command line's.
    let given = r.inputs_given + r.left_out.len();
    let left_out = match r.left_out.len() {
        0 => String::new(),
        n => format!("; {n} left out, named above"),
    };
    match given {
        given if given > r.inputs.len() => writeln!(
            out,
            "predict from {} of {given} traces (the lowest rank of each pipeline stage{left_out}):",
            r.inputs.len()
        )?,
        _ => writeln!(out, "predict from {} trace(s):", r.inputs.len())?,
    }
    for i in &r.inputs {
        // The path whole, then the words, folded as the lines below.
        let about = format!(
            "(rank {}, {} stage {}; {} layers per pass, order {})",
            i.rank,
            i.role,
            i.stage,
            output::or_unknown(i.structure.layers_per_pass),
            if i.structure.pass_order.is_empty() {
                output::UNKNOWN
            } else {
                &i.structure.pass_order
            }
        );
        let mut items = vec![output::shown(&i.path).into_owned()];
        items.extend(about.split(' ').map(str::to_owned));
        writeln!(out, "{}", wrapped("  ", &items, " ", "    ", width))?;
    }
    writeln!(out, "  traced: {}", config_text(&r.traced.config))?;
    writeln!(out, "  target: {}", config_text(&r.target))?;
    for k in &r.kernel_scales {
        writeln!(out, "          kernels {k}")?;
    }
    if let Some(n) = &r.calibration.target_network {
        writeln!(out, "          network {n}")?;
    }
    write_steps(out, r, width)?;
    // The steps above are per step; these sums are over the whole window.
    // Narrower than its heading (98 columns), the title has a line of
    // its own.
    let lw = if width < 98 {
        writeln!(out, "  whole window, every step together (ms)")?;
        writeln!(
            out,
            "    {:<18} {:>15} {:>9} {:>14} {:>9}",
            "", "exposed compute", "overlap", "exposed comm", "idle"
        )?;
        9
    } else {
        writeln!(
            out,
            "  whole window, every step together (ms)   exposed compute   overlap   exposed comm      idle"
        )?;
        29
    };
    for s in &r.stages {
        for (label, b) in [
            ("replayed", s.replayed.as_ref()),
            ("predicted", Some(&s.predicted)),
        ] {
            if let Some(b) = b {
                writeln!(
                    out,
                    "    stage {:<2} {:<lw$} {:>15.3} {:>9.3} {:>14.3} {:>9.3}",
                    s.stage,
                    label,
                    b.exposed_compute_ms,
                    b.overlapped_ms,
                    b.exposed_comm_ms,
                    b.idle_ms
                )?;
            }
        }
    }
    let parts: Vec<String> = r
        .gpu_ms_by_source
        .iter()
        .map(|(s, ms)| format!("{s} {ms:.1} ms"))
        .collect();
    let head = "  GPU time by duration source: ";
    writeln!(
        out,
        "{}",
        wrapped(head, &parts, ", ", "    ", output::narrow(width))
    )?;
    if r.coupled {
        let text = "transfers and gradient-norm reductions as rendezvous";
        let head = "  stages replayed together: ";
        writeln!(
            out,
            "{}",
            wrapped_words(head, text, "    ", output::narrow(width))
        )?;
    }
    let g = &r.calibration.gemm;
    // No GEMM matched: no mean error to state (it said 0.0%).
    let gemms = match g.samples {
        0 => "no GEMM matched".to_owned(),
        n => format!("{n} GEMMs"),
    };
    let error = match g.mean_abs_error_pct {
        Some(e) => format!(", mean error {e:.1}%"),
        None if g.samples == 0 => String::new(),
        None => ", none measured with a length: no mean error".to_owned(),
    };
    // The calibration's and the confidence's sentences folded at the
    // words, as every command's warnings are: they ran to 259 columns.
    let curve = format!(
        "{gemms}, max efficiency {:.1}% of peak, half at {:.2} GFLOP{error}{}",
        g.max_efficiency * 100.0,
        g.half_gflops,
        match (g.method, g.fitted) {
            ("flop_ratio", _) => format!(
                " (over the {:.0}% limit: not used, FLOP ratios instead)",
                g.max_error_pct
            ),
            (_, true) => String::new(),
            _ => " (preset, not fitted)".into(),
        }
    );
    writeln!(
        out,
        "{}",
        wrapped_words("  GEMM curve: ", &curve, "    ", width)
    )?;
    for l in &r.calibration.network {
        let line = format!(
            "{} collectives ({} with a size), {}, {:.1} GB/s effective, latency x{:.2}, \
             mean error {}{}",
            l.collectives,
            l.collectives.saturating_sub(l.unsized_collectives),
            output::counted(l.samples as u64, "fit point", "fit points"),
            l.effective_gbps,
            l.latency_scale,
            pct(l.mean_abs_error_pct, 1),
            if l.calibrated {
                String::new()
            } else if l.method == "latency_only" {
                format!(
                    " (latency only: no message sizes; bandwidth: {} values)",
                    r.calibration.network_start
                )
            } else {
                format!(" (not calibrated: {} values)", r.calibration.network_start)
            }
        );
        let head = format!("  network {:<10} ", l.link);
        writeln!(out, "{}", wrapped_words(&head, &line, "    ", width))?;
    }
    write_dropped(
        out,
        r.stages.iter().map(|s| s.dropped_edges).sum(),
        kept,
        width,
    )?;
    for n in &r.assumptions {
        writeln!(
            out,
            "{}",
            wrapped_words("  assumption: ", &shown(n), "    ", width)
        )?;
    }
    write_confidence(out, &r.confidence, width)
}

/// The confidence lines: the verdict with its reasons, then what it was
/// judged on (the models' errors are on the calibration lines above).
fn write_confidence(
    out: &mut dyn Write,
    c: &ConfidenceReport,
    width: usize,
) -> std::io::Result<()> {
    let verdict = if c.reasons.is_empty() {
        c.verdict.to_string()
    } else {
        format!("{} ({})", c.verdict, c.reasons.join("; "))
    };
    // Its folds indented past the lines under it (what it was judged on).
    writeln!(
        out,
        "{}",
        wrapped_words("  confidence: ", &verdict, "      ", width)
    )?;
    // Without predicted GPU time, or a path of some length, there are no
    // shares to state (they read 0.0%).
    let gpu = match (c.measured_gpu_pct, c.scaled_gpu_pct, c.modelled_gpu_pct) {
        (Some(m), Some(s), Some(o)) => {
            format!("GPU time {m:.1}% measured, {s:.1}% scaled, {o:.1}% modelled")
        }
        _ => "no predicted GPU time".to_owned(),
    };
    let path = match c.max_inferred_critical_path_pct {
        Some(p) => format!("critical path through inferred dependencies up to {p:.1}% of a step"),
        None => "no critical path of any length".to_owned(),
    };
    writeln!(
        out,
        "{}",
        wrapped_words("    ", &format!("{gpu}; {path}"), "      ", width)
    )?;
    let used: Vec<String> = c
        .models
        .iter()
        .filter(|m| m.used)
        .map(|m| {
            if m.calibrated {
                format!("{} {} error", m.model, pct(m.mean_abs_error_pct, 1))
            } else {
                format!("{} not calibrated", m.model)
            }
        })
        .collect();
    if !used.is_empty() {
        let head = "    models used: ";
        writeln!(out, "{}", wrapped(head, &used, ", ", "      ", width))?;
    }
    for e in &c.extrapolations {
        let e = shown(e);
        writeln!(
            out,
            "{}",
            wrapped_words("    extrapolation: ", &e, "      ", width)
        )?;
    }
    for g in &c.guessed_groups {
        let g = shown(g);
        writeln!(
            out,
            "{}",
            wrapped_words("    guessed group: ", &g, "      ", width)
        )?;
    }
    Ok(())
}

/// What the dependencies the rebuilt stages could not re-attach mean, with
/// their share of all dependencies.
fn write_dropped(
    out: &mut dyn Write,
    dropped: usize,
    kept: usize,
    width: usize,
) -> std::io::Result<()> {
    if dropped == 0 {
        return Ok(());
    }
    let all = dropped + kept;
    let text = format!(
        "{dropped} of {all} ({:.2}%) in the rebuilt stages; \
         their source task has no copy there, so the task each led to waits only for its other \
         dependencies and its thread's or stream's order. The prediction is optimistic where \
         those waits mattered: a share of a few per cent or more is worth a look in the \
         predicted timeline (--out)",
        dropped as f64 / all as f64 * 100.0
    );
    let head = "  dependencies not re-attached: ";
    writeln!(out, "{}", wrapped_words(head, &text, "    ", width))
}

/// The step table: each step measured, replayed and predicted, their
/// means, and, when the predicted steps drift, the step they settle to.
fn write_steps(out: &mut dyn Write, r: &PredictReport, width: usize) -> std::io::Result<()> {
    // Narrower than a row (82 columns), the step names shrink.
    let n = output::name_width(width, 64, 18, 12);
    let names: Vec<&str> = r.steps.iter().map(|s| s.step.as_str()).collect();
    let names = if n == 18 {
        names.iter().map(|s| shown(s).into_owned()).collect()
    } else {
        super::analysis::short_all(&names, n)
    };
    writeln!(
        out,
        "  {:<n$} {:>12} {:>12} {:>12} {:>9} {:>12}",
        "step", "measured ms", "replayed ms", "predicted ms", "change", "GPU work ms"
    )?;
    for (s, name) in r.steps.iter().zip(names) {
        writeln!(
            out,
            "  {:<n$} {:>12.3} {:>12.3} {:>12.3} {:>9} {:>12}",
            name,
            s.measured_ms,
            s.replayed_ms,
            s.predicted_ms,
            pct(s.change_pct, 2),
            s.gpu_work_change_ms
                .map_or_else(|| output::UNKNOWN.to_owned(), |w| format!("{w:+.3}"))
        )?;
    }
    writeln!(
        out,
        "  {:<n$} {:>12.3} {:>12.3} {:>12.3} {:>9}",
        "mean",
        r.mean_measured_ms,
        r.mean_replayed_ms,
        r.mean_predicted_ms,
        pct(r.change_pct, 2)
    )?;
    if r.steps.iter().any(hid_work) {
        writeln!(
            out,
            "{}",
            wrapped_words(
                "  (",
                "GPU work ms: the change of the summed durations of the GPU tasks each step \
                 launched (without steps, the window's), every stage, the time the replay's \
                 communication waits for peers left out; a measured communication kernel counts \
                 its traced duration, its waits in the trace included, alike on both sides; a \
                 step whose time changed by less had the difference in slack: what set the \
                 step's end did not wait for that work, or waited longer for something else)",
                "    ",
                width
            )
        )?;
    }
    if let Some(s) = r.steadiness.filter(|s| s.drifting) {
        // A period against a period: the replay's steady step, not its
        // mean span (which, where the GPU lags its CPU, holds the lag).
        let (replayed, change) = if s.replayed_steady_step_ms > 0.0 {
            (
                format!("{:.3}", s.replayed_steady_step_ms),
                format!(
                    "{:.2}%",
                    (s.steady_step_ms - s.replayed_steady_step_ms) / s.replayed_steady_step_ms
                        * 100.0
                ),
            )
        } else {
            (String::new(), String::new())
        };
        writeln!(
            out,
            "  {:<n$} {:>12} {:>12} {:>12.3} {:>9}",
            "steady state", "", replayed, s.steady_step_ms, change
        )?;
        // A replay without a steady-state step has no noise to state.
        let noise = s.noise_pct.map_or_else(
            || "the replay has no steady-state step".to_owned(),
            |n| format!("the replay varies {n:.1}%"),
        );
        let warning = format!(
            "the predicted steps are not steady (up to {:.1}% of the steady-state \
             step from the median step; {noise}): the GPU falls behind its CPU \
             (which runs at most a full launch queue ahead) and the last step drains the \
             backlog, or a GPU that lagged its CPU when the capture began catches up. The mean \
             is over that ramp; the steady-state step (the median time between steps, step \
             ends or starts, whichever is longer) is what a longer run repeats",
            s.worst_deviation_pct
        );
        writeln!(
            out,
            "{}",
            wrapped_words("  warning: ", &warning, "    ", width)
        )?;
    }
    Ok(())
}

/// Whether step `s` changed by less than its GPU work did (by more than
/// a microsecond, the table's precision): work it hid.
fn hid_work(s: &lumos_report::StepRow) -> bool {
    let step_ms = s.predicted_ms - s.replayed_ms;
    s.gpu_work_change_ms
        .is_some_and(|w| step_ms.abs() + 0.001 < w.abs())
}

/// Rejects arguments that cannot mean anything, before any trace is read
/// (the numbers' ranges are clap's; what the traces must hold is checked
/// with the target).
pub fn check_args(a: &TargetArgs) -> Result<()> {
    super::replay::distinct_patterns(&a.scale_kernels, "--scale-kernels")?;
    // A name that is not a file must be a preset; a file's problems are
    // bad input, found when it is read.
    if let Some(n) = a.network.as_deref().filter(|n| !Path::new(n).is_file()) {
        // A path with nothing there (or a folder) is a file that cannot be
        // read: bad input, as a trace's is; only a name is a preset's.
        if let Some(problem) = crate::inputs::not_a_file(n) {
            anyhow::bail!("--network {problem}; a network is a GPU preset or a JSON file");
        }
        network_from_arg(n).map_err(|e| usage(format!("--network: {e}")))?;
    }
    Ok(())
}
