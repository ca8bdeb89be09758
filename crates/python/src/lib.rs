//! `lumos._lumos`, the extension module of the `lumos` Python package:
//! the library itself, not a subprocess. Traces are read, graphs built and
//! replayed by the same lumos-report functions the CLI calls, with the GIL
//! released while Rust works and progress reported to a Python callable.
//!
//! What crosses into Python: reports as the CLI's `--json` text (parsed
//! once, on request), and tables as Arrow column buffers (`columns`) that
//! `lumos.frames` wraps into pyarrow tables and pandas frames. Errors
//! become the exceptions of `lumos.errors` with the CLI's messages
//! (`errors`). The pure-Python half (python/lumos) holds the documented
//! API; this module's names are its building blocks.

mod args;
mod columns;
mod errors;
mod ingest;
mod inputs;
mod model;
mod options;
mod predict;
mod progress;
mod recipe;
mod replay;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use rayon::prelude::*;

use crate::errors::Error;
use crate::options::ReplayOptions;
use crate::replay::ReplayResult;

/// A progress callback, `callback(phase, done, total)`.
type Callback = Option<Py<PyAny>>;

/// One trace file, read.
#[pyclass(frozen, module = "lumos._lumos")]
pub struct Trace {
    inner: Arc<lumos_trace::Trace>,
}

#[pymethods]
impl Trace {
    /// The file, as given (a name that is not UTF-8 comes back as
    /// `os.fsdecode` gives it, so that it opens the same file).
    #[getter]
    fn path(&self) -> OsString {
        self.inner.path.clone().into_os_string()
    }

    /// Its rank (`distributedInfo.rank`, else `rank<N>` in its name, else 0).
    #[getter]
    fn rank(&self) -> u32 {
        self.inner.meta.rank
    }

    /// `distributedInfo.world_size`, if recorded.
    #[getter]
    fn world_size(&self) -> Option<u32> {
        self.inner.meta.world_size
    }

    /// Complete events kept by the reader.
    #[getter]
    fn events(&self) -> usize {
        self.inner.events.len()
    }

    /// `lumos inspect --json` of this trace alone (one `traces` entry).
    fn inspect_json(&self, py: Python<'_>) -> PyResult<String> {
        let t = Arc::clone(&self.inner);
        let report = py.detach(move || lumos_report::inspect(&t));
        json(&report)
    }

    /// Replays it on its own (Ctrl-C stops it).
    fn replay(&self, py: Python<'_>, options: &ReplayOptions) -> PyResult<ReplayResult> {
        let t = [Arc::clone(&self.inner)];
        Ok(progress::run(py, None, |p| {
            replay::replay_traces(&t, &options.stoppable(p))
        })??)
    }

    fn __repr__(&self) -> String {
        format!(
            "Trace(path={:?}, rank={}, events={})",
            self.path(),
            self.rank(),
            self.events()
        )
    }
}

/// The ranks of one job, read, built and assembled: identities checked,
/// collectives matched, clocks aligned.
#[pyclass(frozen, module = "lumos._lumos")]
pub struct Job {
    inner: Arc<lumos_graph::Job>,
}

#[pymethods]
impl Job {
    /// Ranks present, ascending.
    #[getter]
    fn ranks(&self) -> Vec<u32> {
        self.inner.rank_numbers()
    }

    /// The world size, if any file records it.
    #[getter]
    fn world_size(&self) -> Option<u32> {
        self.inner.world_size
    }

    /// Ranks no file holds.
    #[getter]
    fn missing_ranks(&self) -> Vec<u32> {
        self.inner.missing.clone()
    }

    /// Each rank's file, in rank order.
    #[getter]
    fn paths(&self) -> Vec<OsString> {
        let r = &self.inner.ranks;
        r.iter().map(|m| m.path.clone().into_os_string()).collect()
    }

    /// Ranks grouped by communication program: one list per group, its
    /// representative first.
    fn programs(&self) -> Vec<Vec<u32>> {
        let sigs = self
            .inner
            .graphs
            .iter()
            .map(|g| (g.rank, lumos_graph::program_signature(g)));
        lumos_graph::group_by_program(sigs)
            .into_iter()
            .map(|g| g.ranks)
            .collect()
    }

    /// The job object of `lumos inspect --json` (identities, matching,
    /// clocks).
    fn report_json(&self) -> PyResult<String> {
        json(&lumos_report::job_report(&self.inner))
    }

    /// Replays the ranks together (Ctrl-C stops it).
    fn replay(&self, py: Python<'_>, options: &ReplayOptions) -> PyResult<ReplayResult> {
        let job = Arc::clone(&self.inner);
        Ok(progress::run(py, None, |p| {
            replay::replay_job(job, &options.stoppable(p))
        })??)
    }

    fn __repr__(&self) -> String {
        format!(
            "Job(ranks={}, world_size={})",
            lumos_graph::rank_ranges(&self.ranks()),
            self.world_size().map_or("None".into(), |w| w.to_string())
        )
    }
}

/// A report as compact JSON; the Python side parses it.
fn json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_value(v)
        .and_then(|v| serde_json::to_string(&v))
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// The trace files `paths` name, directories expanded (sub-folders
/// included, sorted); with `lgraph`, compact graphs (`.lgraph`) too. Each
/// as an OS string (`os.fsdecode`'s `str`), not a display string: a name
/// that is not UTF-8 must open the same file when given back.
#[pyfunction]
#[pyo3(signature = (paths, lgraph = false))]
fn expand(py: Python<'_>, paths: Vec<PathBuf>, lgraph: bool) -> PyResult<Vec<OsString>> {
    let files = inputs::expand(py, &paths, lgraph)?;
    Ok(files.into_iter().map(PathBuf::into_os_string).collect())
}

/// Reads every trace `paths` name (in parallel); the first that cannot be
/// read is raised.
#[pyfunction]
#[pyo3(signature = (paths, progress = None))]
fn read_traces(py: Python<'_>, paths: Vec<PathBuf>, progress: Callback) -> PyResult<Vec<Trace>> {
    let files = inputs::expand(py, &paths, false)?;
    let traces = progress::run(py, progress, |p| inputs::read_all(&files, p))??;
    Ok(traces
        .into_iter()
        .map(|t| Trace { inner: Arc::new(t) })
        .collect())
}

/// Reads the two traces `diff` and `durations_from` compare, `a` and `b`
/// (each one file, checked by the caller), in parallel. Not
/// [`read_traces`]: these are two arguments, not a list of ranks, and a
/// file compared with itself is a legitimate question (no change), where
/// a list refuses one file given twice.
#[pyfunction]
#[pyo3(signature = (a, b, progress = None))]
fn read_pair(
    py: Python<'_>,
    a: PathBuf,
    b: PathBuf,
    progress: Callback,
) -> PyResult<(Trace, Trace)> {
    let traces = progress::run(py, progress, |p| inputs::read_all(&[a, b], p))??;
    let mut read = traces.into_iter().map(|t| Trace { inner: Arc::new(t) });
    match (read.next(), read.next()) {
        (Some(ta), Some(tb)) => Ok((ta, tb)),
        // Two files read give two traces, or the error of one.
        _ => Err(Error::new(errors::Kind::Input, "not read").into()),
    }
}

/// Reads the traces (or `.lgraph` files) `paths` name and assembles them
/// as the ranks of one job, dropping each trace once its graph is built.
#[pyfunction]
#[pyo3(signature = (paths, progress = None))]
fn load_job(py: Python<'_>, paths: Vec<PathBuf>, progress: Callback) -> PyResult<Job> {
    let files = inputs::expand(py, &paths, true)?;
    let job = progress::run(py, progress, |p| {
        let ranks = inputs::load_ranks(&files, p)?;
        p.phase("assembling", 1);
        let job = lumos_graph::assemble(ranks)?;
        p.add(1);
        Ok::<_, Error>(job)
    })??;
    Ok(Job {
        inner: Arc::new(job),
    })
}

/// True when `path` is a compact graph (`.lgraph`): named so, or a regular
/// file starting with its magic bytes, as the CLI tells.
#[pyfunction]
fn is_lgraph(path: PathBuf) -> bool {
    lumos_store::is_lgraph_file(&path)
}

/// The job choice of `job=`: `None` detects, `True` always, `False` never.
fn job_choice(job: Option<bool>) -> lumos_store::JobChoice {
    match job {
        None => lumos_store::JobChoice::Detect,
        Some(true) => lumos_store::JobChoice::Always,
        Some(false) => lumos_store::JobChoice::Never,
    }
}

/// Replays several trace files as `lumos replay` does: one job or one by
/// one (`job` as in `lumos.replay`), each trace built into its rank as it
/// is read and dropped. Also the line saying why files that looked like a
/// job are not one, for the caller to warn with.
#[pyfunction]
#[pyo3(signature = (paths, options, job = None, progress = None))]
fn replay_files(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    options: &ReplayOptions,
    job: Option<bool>,
    progress: Callback,
) -> PyResult<(ReplayResult, Option<String>)> {
    let files = inputs::expand(py, &paths, true)?;
    Ok(progress::run(py, progress, |p| {
        replay::replay_files(&files, &options.stoppable(p), job_choice(job), p)
    })??)
}

/// `lumos inspect --json` of several files (traces or `.lgraph` files), as
/// `lumos inspect` makes it: one job or one by one (`job` as in
/// `lumos.inspect`), each trace built into its rank as it is read and
/// dropped, each file reported from its rank. Also the line saying why
/// files that looked like a job are not one.
#[pyfunction]
#[pyo3(signature = (paths, job = None, progress = None))]
fn inspect_files(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    job: Option<bool>,
    progress: Callback,
) -> PyResult<(String, Option<String>)> {
    let files = inputs::expand(py, &paths, true)?;
    let (out, note) = progress::run(py, progress, |p| {
        let guard = inputs::guard(&files, lumos_store::ReadFor::Job)?;
        let prepared = inputs::prepare_every(&files, p, &guard)?;
        let (read, ranks, note) = match lumos_store::sort(prepared, job_choice(job)) {
            lumos_store::Sorted::Job(ranks, read) => (read, Some(ranks), None),
            lumos_store::Sorted::Apart(read, d) => (read, None, d.note()),
        };
        let read: Vec<_> = read.into_iter().flatten().collect();
        p.phase("reporting", 1);
        let traces = (read.par_iter().enumerate())
            .map(|(i, input)| {
                let lent = ranks.as_ref().map(|r| &r[i]);
                lumos_report::inspect_prepared(input, lent)
            })
            .collect();
        p.add(1);
        drop(read);
        let job = match ranks {
            Some(ranks) => {
                p.phase("assembling", 1);
                let job = lumos_report::job_report(&lumos_graph::assemble(ranks)?);
                p.add(1);
                Some(job)
            }
            None => None,
        };
        Ok::<_, errors::Error>((lumos_report::InspectOutput { traces, job }, note))
    })??;
    Ok((json(&out)?, note))
}

/// Replays one trace file, read straight into the graph build (the
/// trace is never all in memory), as `lumos replay FILE`.
#[pyfunction]
#[pyo3(signature = (path, options, progress = None))]
fn replay_file(
    py: Python<'_>,
    path: PathBuf,
    options: &ReplayOptions,
    progress: Callback,
) -> PyResult<ReplayResult> {
    Ok(progress::run(py, progress, |p| {
        replay::replay_file(&path, &options.stoppable(p), p)
    })??)
}

/// Replays the job `paths` name (traces or `.lgraph` files, or folders
/// of them) from one rank per communication program, as `lumos replay
/// --representatives`: of an `.lgraph` file only its summary and program
/// are read, and one graph is kept per group.
#[pyfunction]
#[pyo3(signature = (paths, options, progress = None))]
fn replay_representatives(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    options: &ReplayOptions,
    progress: Callback,
) -> PyResult<ReplayResult> {
    let files = inputs::expand(py, &paths, true)?;
    Ok(progress::run(py, progress, |p| {
        replay::replay_representatives(&files, &options.stoppable(p), p)
    })??)
}

/// `lumos inspect --json` of one trace file, read straight into the graph
/// build (the trace is never all in memory), as `lumos inspect FILE`.
#[pyfunction]
#[pyo3(signature = (path, progress = None))]
fn inspect_file(py: Python<'_>, path: PathBuf, progress: Callback) -> PyResult<String> {
    let report = progress::run(py, progress, |p| {
        // The graph is dropped here, without the GIL.
        inputs::reading_one(&path, p, || {
            lumos_report::inspect_path(&path, &|_| {}).map(|(report, _)| report)
        })
    })?
    .map_err(errors::Error::from)?;
    json(&lumos_report::InspectOutput {
        traces: vec![report],
        job: None,
    })
}

/// `lumos diff`'s options, checked as the CLI checks its flags; a bad one
/// is a `ConfigError`.
fn diff_options(
    steps: Option<&str>,
    min_change_us: f64,
    min_change_pct: f64,
) -> Result<lumos_report::DiffOptions, Error> {
    use lumos_report::StepSelection;
    for (name, v) in [
        ("min_change_us", min_change_us),
        ("min_change_pct", min_change_pct),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(Error::config(format!(
                "{name} must be a number >= 0, got {v}"
            )));
        }
    }
    let steps = match steps {
        Some(s) => s
            .parse::<StepSelection>()
            .map_err(|e| Error::config(format!("steps: {e}")))?,
        None => StepSelection::default(),
    };
    Ok(lumos_report::DiffOptions {
        steps,
        min_change_ns: (min_change_us * 1e3).round() as i64,
        min_change_pct,
    })
}

/// Checks `lumos.diff`'s options before any file is read, as the CLI
/// checks its flags first.
#[pyfunction]
#[pyo3(signature = (steps = None, min_change_us = 10.0, min_change_pct = 5.0))]
fn check_diff_options(
    steps: Option<&str>,
    min_change_us: f64,
    min_change_pct: f64,
) -> PyResult<()> {
    diff_options(steps, min_change_us, min_change_pct)?;
    Ok(())
}

/// `lumos diff A B --json`: two traces compared per step, operator and
/// kernel. `steps` is the CLI's `--steps` syntax.
#[pyfunction]
#[pyo3(signature = (a, b, steps = None, min_change_us = 10.0, min_change_pct = 5.0))]
fn diff_json(
    py: Python<'_>,
    a: PyRef<'_, Trace>,
    b: PyRef<'_, Trace>,
    steps: Option<&str>,
    min_change_us: f64,
    min_change_pct: f64,
) -> PyResult<String> {
    use lumos_report::{DiffInput, ReportError};
    let opts = diff_options(steps, min_change_us, min_change_pct)?;
    let (ta, tb) = (Arc::clone(&a.inner), Arc::clone(&b.inner));
    let report = py.detach(|| {
        let (ia, ib) = rayon::join(|| DiffInput::of(&ta), || DiffInput::of(&tb));
        lumos_report::diff(&ia, &ib, &opts).map_err(|e| match e {
            ReportError::Steps { .. } => Error::from_chain(errors::Kind::Config, &e),
            e => e.into(),
        })
    })?;
    json(&report)
}

/// `lumos replay A --durations-from B --json`: A's graph re-timed with
/// the durations measured in B (another recording of the same program)
/// and replayed, beside B's measured and replayed steps. `a` and `b` are
/// each one file (checked by the caller), a trace or an `.lgraph` file,
/// read as the CLI reads them ([`lumos_report::transfer_files`], one
/// function for both). B sharing too little with A is a configuration
/// error that gives the matched share. Its replays stop on Ctrl-C (or a
/// failing callback), as `replay`'s do.
#[pyfunction]
#[pyo3(signature = (a, b, progress = None))]
fn durations_from_json(
    py: Python<'_>,
    a: PathBuf,
    b: PathBuf,
    progress: Callback,
) -> PyResult<String> {
    use lumos_report::ReportError;
    let report = progress::run(py, progress, |p| {
        p.phase("building", 2);
        let sim = lumos_sim::SimOptions {
            cancel: Some(p.stop_flag()),
            ..Default::default()
        };
        let read = || {
            p.add(2);
            p.phase("replaying", 1);
        };
        let replayed = lumos_report::transfer_files(&a, &b, &sim, &read);
        p.add(1);
        replayed.map(|(report, _)| report).map_err(|e| match e {
            ReportError::Predict(ref p) if p.is_usage() => {
                Error::from_chain(errors::Kind::Config, &e).naming("--durations-from", "b")
            }
            e => e.into(),
        })
    })??;
    json(&report)
}

/// Writes a synthesized job as `lumos synth` does; returns the files.
/// `model` is a preset or a model file; `model_json`, when given, a
/// model dict as JSON instead (its messages say `model:`, and `model` is
/// not read).
#[pyfunction]
#[pyo3(signature = (model, out, tp, pp, dp, microbatches, gpu, ranks, steps, seed, recipe = None, model_json = None, progress = None))]
#[allow(clippy::too_many_arguments)] // the CLI's flags, one argument each
fn synth(
    py: Python<'_>,
    model: &str,
    out: PathBuf,
    tp: Bound<'_, PyAny>,
    pp: Bound<'_, PyAny>,
    dp: Bound<'_, PyAny>,
    microbatches: Option<Bound<'_, PyAny>>,
    gpu: &str,
    ranks: &str,
    steps: Bound<'_, PyAny>,
    seed: Bound<'_, PyAny>,
    recipe: Option<PyRef<'_, recipe::SynthRecipe>>,
    model_json: Option<&str>,
    progress: Callback,
) -> PyResult<Vec<OsString>> {
    use lumos_report::range;
    use lumos_synth::{Parallelism, Ranks, SynthConfig};
    // Each number in the range of its CLI flag, checked first as clap
    // checks them.
    let count = |what, v: &Bound<'_, PyAny>| {
        args::whole(what, v, 1, u64::from(range::COUNT_MAX)).map(|v| v as usize)
    };
    let (tp, pp, dp) = (count("tp", &tp)?, count("pp", &pp)?, count("dp", &dp)?);
    let microbatches = microbatches
        .as_ref()
        .map(|m| count("microbatches", m))
        .transpose()?;
    let max = u64::from(range::COUNT_MAX);
    let steps = args::whole("steps", &steps, u64::from(range::STEPS_MIN), max)? as usize;
    let seed = args::whole("seed", &seed, 0, u64::MAX)?;
    let model = match model_json {
        Some(text) => model::from_dict_json(text)?,
        None => model::from_arg(model)?,
    };
    let gpu = lumos_models::GpuSpec::preset(gpu).map_err(|e| Error::config(format!("gpu: {e}")))?;
    let recipe = recipe.map_or_else(recipe::SynthRecipe::default, |r| r.clone());
    if microbatches.is_some() && recipe.global_batch().is_some() {
        return Err(Error::config("microbatches and global_batch cannot both be given").into());
    }
    let m = microbatches.unwrap_or(2 * pp);
    let mut cfg = SynthConfig::new(model, Parallelism::new(tp, pp, dp, m), gpu);
    recipe.apply(&mut cfg)?;
    cfg.steps = steps;
    cfg.seed = seed;
    cfg.ranks = match ranks {
        "all" => Ranks::All,
        "one-per-stage" => Ranks::OnePerStage,
        other => {
            return Err(Error::config(format!(
                "ranks: unknown value `{other}` (expected all or one-per-stage)"
            ))
            .into())
        }
    };
    model::check_size(&cfg)?;
    cfg.validate()
        .map_err(|e| Error::from_chain(errors::Kind::Config, &e))?;
    inputs::output_dir(&out, "out")?;
    let files = progress::run(py, progress, |p| {
        p.phase("writing", cfg.selected_ranks().len() as u64);
        let r = lumos_synth::write_job_with(&cfg, &out, &|_| {
            p.add(1);
            !p.asked_to_stop()
        });
        // Asked after a file, the job stops before its next column: where
        // none was left, every file was written and nothing was cut short.
        if matches!(r, Err(lumos_synth::SynthError::Stopped)) {
            p.stopped();
        }
        r
    })?
    .map_err(|e| {
        Error::new(
            errors::Kind::Io,
            format!(
                "{}: cannot write the job: {}",
                out.display(),
                errors::chain(&e)
            ),
        )
    })?;
    Ok(files.into_iter().map(PathBuf::into_os_string).collect())
}

/// Ingests one trace into a per-rank file in `out_dir`; returns
/// `(path, rank, tasks, bytes)`.
#[pyfunction]
fn ingest_rank(
    py: Python<'_>,
    path: PathBuf,
    out_dir: PathBuf,
) -> PyResult<(OsString, u32, u64, u64)> {
    let done = py.detach(|| ingest::ingest(&path, &out_dir))?;
    Ok((done.out.into_os_string(), done.rank, done.tasks, done.bytes))
}

/// Refuses `out_dir`, given as argument `arg`, when it cannot be the
/// directory to write into (it, or a folder above it, is not a
/// directory): the `ConfigError` [`ingest_rank`] gives, checked before
/// any work is handed out.
#[pyfunction]
fn check_output_dir(out_dir: PathBuf, arg: &str) -> PyResult<()> {
    Ok(inputs::output_dir(&out_dir, arg)?)
}

/// The name of the per-rank file [`ingest_rank`] writes for `path`.
#[pyfunction]
fn ingest_name(path: PathBuf) -> OsString {
    lumos_store::lgraph_name(&path)
}

/// Assembles per-rank files (of [`ingest_rank`]) as the ranks of one job,
/// under a [`lumos_store::MemoryGuard`] as every read of a job's ranks.
#[pyfunction]
#[pyo3(signature = (paths, progress = None))]
fn load_ingested(py: Python<'_>, paths: Vec<PathBuf>, progress: Callback) -> PyResult<Job> {
    // As `lumos.replay([])`: an empty list is the caller's mistake.
    if paths.is_empty() {
        return Err(Error::config("no input traces given").into());
    }
    // One file twice is refused as `inputs::expand` refuses it (these are
    // files, never folders): it would be two ranks claiming one.
    lumos_trace::given_once(paths.iter().map(|f| (f.as_path(), f.as_path())))
        .map_err(|e| Error::config(e.to_string()))?;
    let job = progress::run(py, progress, |p| {
        let guard = inputs::guard(&paths, lumos_store::ReadFor::Job)?;
        p.phase("loading", paths.len() as u64);
        let read: Vec<Option<errors::Result<_>>> = (paths.par_iter())
            .map(|f| {
                let r = guard.read(|| ingest::read_rank(f));
                p.add(1);
                r
            })
            .collect();
        // The guard's error first: the files it kept from being read have
        // no error of their own.
        guard
            .check()
            .map_err(|e| Error::new(errors::Kind::Input, e.to_string()))?;
        let ranks = (read.into_iter().flatten()).collect::<errors::Result<Vec<_>>>()?;
        Ok::<_, Error>(lumos_graph::assemble(ranks)?)
    })??;
    Ok(Job {
        inner: Arc::new(job),
    })
}

/// The version of the lumos crates this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _lumos(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Trace>()?;
    m.add_class::<Job>()?;
    m.add_class::<ReplayOptions>()?;
    m.add_class::<ReplayResult>()?;
    m.add_class::<predict::PredictOptions>()?;
    m.add_function(wrap_pyfunction!(expand, m)?)?;
    m.add_function(wrap_pyfunction!(read_traces, m)?)?;
    m.add_function(wrap_pyfunction!(read_pair, m)?)?;
    m.add_function(wrap_pyfunction!(load_job, m)?)?;
    m.add_function(wrap_pyfunction!(replay_file, m)?)?;
    m.add_function(wrap_pyfunction!(replay_files, m)?)?;
    m.add_function(wrap_pyfunction!(is_lgraph, m)?)?;
    m.add_function(wrap_pyfunction!(inspect_files, m)?)?;
    m.add_function(wrap_pyfunction!(replay_representatives, m)?)?;
    m.add_function(wrap_pyfunction!(inspect_file, m)?)?;
    m.add_function(wrap_pyfunction!(predict::predict_files, m)?)?;
    m.add_function(wrap_pyfunction!(diff_json, m)?)?;
    m.add_function(wrap_pyfunction!(check_diff_options, m)?)?;
    m.add_function(wrap_pyfunction!(durations_from_json, m)?)?;
    m.add_class::<recipe::SynthRecipe>()?;
    m.add_function(wrap_pyfunction!(synth, m)?)?;
    m.add_function(wrap_pyfunction!(ingest_rank, m)?)?;
    m.add_function(wrap_pyfunction!(ingest_name, m)?)?;
    m.add_function(wrap_pyfunction!(check_output_dir, m)?)?;
    m.add_function(wrap_pyfunction!(load_ingested, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
