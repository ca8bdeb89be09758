//! `lumos.predict`: another configuration predicted from traced ranks, as
//! `lumos predict` does.

use std::path::{Path, PathBuf};

use lumos_models::NetworkModel;
use lumos_predict::{
    network_preset, Baseline, Candidates, EditSet, Input, KernelScale, PredictError, Prediction,
};
use lumos_report::network_from_json;
use pyo3::prelude::*;

use crate::args;
use crate::errors::{Error, Kind, Result};
use crate::inputs;
use crate::progress::Progress;
use crate::Callback;

/// The target configuration, as the CLI's flags.
#[derive(Debug, Default)]
struct Target {
    dp: Option<u32>,
    pp: Option<u32>,
    microbatches: Option<u32>,
    virtual_stages: Option<u32>,
    layers: Option<u32>,
    hidden: Option<u64>,
    ffn: Option<u64>,
    heads: Option<u32>,
    micro_batch: Option<u32>,
    tp: Option<u32>,
    scale_kernels: Vec<KernelScale>,
    network: Option<String>,
}

fn predict_error(kind: Kind, e: PredictError) -> Error {
    // As the CLI's usage errors (exit 2): a target that cannot exist, or
    // an edit the traces cannot support (nothing to re-time or speed up).
    let kind = match e {
        PredictError::InvalidTarget(_) | PredictError::Unsupported(_) => Kind::Config,
        _ => kind,
    };
    Error::from_chain(kind, &e)
}

/// The checks `lumos predict` makes on its flags beyond their ranges
/// (checked as each is taken, [`crate::args`]).
fn check(t: &Target) -> Result<()> {
    if let Some(n) = t.network.as_deref().filter(|n| !Path::new(n).is_file()) {
        // A path with nothing there (or a folder) is a file that cannot be
        // read: bad input, as the CLI says; only a name is a preset's.
        if let Some(problem) = lumos_report::not_a_file(n) {
            return Err(Error::new(
                Kind::Input,
                format!("network {problem}; a network is a GPU preset or a JSON file"),
            ));
        }
        network(n).map_err(|e| Error::config(format!("network: {e}")))?;
    }
    Ok(())
}

/// A preset name or a JSON file, read here as the CLI reads it.
fn network(arg: &str) -> std::result::Result<(NetworkModel, String), PredictError> {
    let path = Path::new(arg);
    if !path.is_file() {
        return network_preset(arg);
    }
    let text = lumos_report::read_preset_file(path).map_err(|e| PredictError::InvalidNetwork {
        name: Some(arg.to_owned()),
        problem: e.to_string(),
    })?;
    network_from_json(&text, arg)
}

/// Every edit applied together, in the CLI's order (the target is judged
/// as a whole, so that e.g. `pp` and `virtual_stages` are checked jointly).
fn apply<'b>(base: &'b Baseline, t: &Target) -> std::result::Result<Prediction<'b>, PredictError> {
    let network = t.network.as_deref().map(network).transpose()?;
    let edits = EditSet {
        pp: t.pp,
        microbatches: t.microbatches,
        virtual_stages: t.virtual_stages,
        layers: t.layers,
        hidden: t.hidden,
        ffn: t.ffn,
        heads: t.heads.map(u64::from),
        micro_batch: t.micro_batch.map(u64::from),
        tp: t.tp,
        dp: t.dp,
        scale_kernels: t.scale_kernels.clone(),
        network,
    };
    base.identity().with_edits(edits.into_edits())
}

/// The prediction of `candidates` for target `t`, as `lumos predict
/// --json` writes it; with `transfer`, the report of the re-timing its
/// one input took first (`durations_from`). Its replays are `p`'s phase
/// `replaying` (1); each stops once `p` is cancelled, and the steps
/// before them do not begin.
fn run(
    (candidates, warned): (Candidates, Vec<lumos_report::InputWarnings>),
    t: &Target,
    transfer: Option<lumos_report::TransferReport>,
    p: &Progress,
) -> Result<String> {
    let base = Baseline::of(candidates)
        .map_err(|e| predict_error(Kind::Input, e))?
        .stoppable(p.stop_flag());
    stop_here(p)?;
    let pred = apply(&base, t).map_err(|e| predict_error(Kind::Input, e))?;
    stop_here(p)?;
    // The traced and the predicted replays, and the report of them.
    p.phase("replaying", 1);
    let (mut report, _) = lumos_report::predict(&base, &pred)?;
    // What the files read warned, for the package to warn of, as the CLI
    // says them once the prediction is made.
    report.input_warnings = warned;
    p.add(1);
    let text = match transfer {
        Some(t) => serde_json::to_string(&lumos_report::TransferPrediction {
            prediction: report,
            durations_from: t,
        }),
        None => serde_json::to_string(&report),
    };
    text.map_err(|e| Error::new(Kind::Input, e.to_string()))
}

/// An error once the caller cancelled (which [`crate::progress::run`]
/// replaces by the cancellation's own): the prediction's steps between
/// its replays are long (discovery, the edits), and only its replays
/// watch the flag as they go.
fn stop_here(p: &Progress) -> Result<()> {
    match p.cancelled() {
        true => Err(Error::new(Kind::Input, "cancelled")),
        false => Ok(()),
    }
}

/// `durations_from=B`, as `lumos predict --durations-from B`: the one
/// input's graph re-timed with B's durations, in place, on B's hardware
/// ([`lumos_report::retime_input`]); the transfer's report. B sharing too
/// little with it is a `ConfigError`.
fn retime_from(
    inputs: &mut [Input],
    b: &Input,
    p: &Progress,
) -> Result<lumos_report::TransferReport> {
    let [input] = inputs else {
        return Err(Error::config(format!(
            "durations_from takes one trace to predict from, got {}",
            inputs.len()
        )));
    };
    lumos_report::retime_input(input, b, Some(p.stop_flag())).map_err(|e| match e {
        lumos_report::ReportError::Predict(ref p) if p.is_usage() => {
            Error::from_chain(Kind::Config, &e).naming("--durations-from", "durations_from")
        }
        e => e.into(),
    })
}

/// The checked target of a prediction (the CLI's flags), made before any
/// trace is read, as the CLI checks its flags first.
#[pyclass(frozen, module = "lumos._lumos")]
pub struct PredictOptions {
    target: Target,
}

#[pymethods]
impl PredictOptions {
    /// Checks the target; a bad value is a `ConfigError`.
    #[new]
    #[pyo3(signature = (dp = None, pp = None, microbatches = None, layers = None, hidden = None, ffn = None, tp = None, scale_kernels = Vec::new(), network = None, virtual_stages = None, micro_batch = None, heads = None))]
    #[allow(clippy::too_many_arguments)] // the CLI's flags, one argument each
    fn py_new(
        dp: Option<Bound<'_, PyAny>>,
        pp: Option<Bound<'_, PyAny>>,
        microbatches: Option<Bound<'_, PyAny>>,
        layers: Option<Bound<'_, PyAny>>,
        hidden: Option<Bound<'_, PyAny>>,
        ffn: Option<Bound<'_, PyAny>>,
        tp: Option<Bound<'_, PyAny>>,
        scale_kernels: Vec<String>,
        network: Option<String>,
        virtual_stages: Option<Bound<'_, PyAny>>,
        micro_batch: Option<Bound<'_, PyAny>>,
        heads: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PredictOptions> {
        // Each number in the range of its CLI flag, as clap checks them
        // before anything else.
        let count = |what, v: &Option<Bound<'_, PyAny>>| args::count(what, v.as_ref());
        let size = |what, v: &Option<Bound<'_, PyAny>>| args::size(what, v.as_ref());
        let (dp, pp, tp) = (count("dp", &dp)?, count("pp", &pp)?, count("tp", &tp)?);
        let microbatches = count("microbatches", &microbatches)?;
        let layers = count("layers", &layers)?;
        let (hidden, ffn) = (size("hidden", &hidden)?, size("ffn", &ffn)?);
        let virtual_stages = count("virtual_stages", &virtual_stages)?;
        let micro_batch = count("micro_batch", &micro_batch)?;
        let heads = count("heads", &heads)?;
        let scale_kernels = scale_kernels
            .iter()
            .map(|s| crate::options::kernel_scale(s))
            .collect::<Result<Vec<_>>>()?;
        crate::options::distinct_patterns(&scale_kernels)?;
        let target = Target {
            dp,
            pp,
            microbatches,
            virtual_stages,
            layers,
            hidden,
            ffn,
            heads,
            micro_batch,
            tp,
            scale_kernels,
            network,
        };
        check(&target)?;
        Ok(PredictOptions { target })
    }
}

/// `lumos predict --json` of trace or `.lgraph` files (directories
/// expanded), loaded in parallel as the CLI loads them; `durations_from`,
/// as `--durations-from`, another recording whose durations the one
/// input's graph takes first.
#[pyfunction]
#[pyo3(signature = (paths, options, durations_from = None, progress = None))]
pub fn predict_files(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    options: &PredictOptions,
    durations_from: Option<PathBuf>,
    progress: Callback,
) -> PyResult<String> {
    let files = inputs::expand(py, &paths, true)?;
    if let Some(b) = durations_from.as_deref().filter(|b| b.is_dir()) {
        return Err(Error::config(format!(
            "durations_from {}: give one trace file, not a directory",
            b.display()
        ))
        .into());
    }
    // Refused before anything is read, as the CLI refuses it.
    if durations_from.is_some() && files.len() != 1 {
        return Err(Error::config(format!(
            "durations_from takes one trace to predict from, got {}",
            files.len()
        ))
        .into());
    }
    // One run: Ctrl-C (or a failing callback) stops the reading at the
    // next file, and the prediction at its next step or within its
    // replay.
    Ok(crate::progress::run(py, progress, |p| {
        let Some(b) = durations_from else {
            let candidates = inputs::prediction_candidates(&files, p)?;
            p.phase("predicting", 1);
            return run(candidates, &options.target, None, p);
        };
        let (mut loaded, mut warned) = inputs::prediction_inputs(&files, p)?;
        // B as the CLI reads it: a trace into its build, or an `.lgraph`
        // file.
        let (b, b_warned) = inputs::prediction_inputs(&[b], p)?;
        warned.extend(b_warned);
        p.phase("predicting", 1);
        let transfer = (b.into_iter().next())
            .map(|b| retime_from(&mut loaded, &b, p))
            .transpose()?;
        run(
            (Candidates::discover_all(loaded), warned),
            &options.target,
            transfer,
            p,
        )
    })??)
}
