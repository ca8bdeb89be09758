//! `lumos report`: one self-contained HTML page of a trace or of the ranks
//! of one job, with a what-if prediction beside it when `lumos predict`'s
//! flags are given. The page itself comes from lumos-report
//! ([`HtmlReport`]); this reads the inputs and writes the file.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lumos_graph::assemble;
use lumos_predict::Baseline;
use lumos_report::HtmlReport;
use lumos_sim::SimOptions;
use lumos_store::{Prepared, Sorted};
use lumos_trace::write_atomic;

use super::predict::{self, TargetArgs};
use super::JobMode;
use crate::usage::usage;
use crate::{inputs, output, progress};

/// `lumos report` arguments.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// A trace file (.json or .json.gz), or the ranks of one job (files or
    /// a directory of them).
    #[arg(required = true, value_name = "TRACE_OR_DIR")]
    pub paths: Vec<PathBuf>,
    /// Where to write the page (one HTML file, nothing else needed to open
    /// it).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,
    // The page's what-if section: `lumos predict`'s flags, under their own
    // heading so that they do not read as this command's main options.
    #[command(
        flatten,
        next_help_heading = "What-if (as `lumos predict`; adds a section)"
    )]
    pub target: TargetArgs,
    #[command(flatten, next_help_heading = "Several inputs")]
    pub mode: JobMode,
}

/// Runs `lumos report`: the page appears whole at `--output`, or not at
/// all.
pub fn run(a: &ReportArgs, out: &mut dyn Write) -> Result<bool> {
    predict::check_args(&a.target)?;
    let files = inputs::expand(&a.paths)?;
    let page = match &files[..] {
        [file] if !a.mode.job && !inputs::is_lgraph(file) => file_page(file)?,
        _ => {
            let read = read_every(&files)?;
            match a.mode.sort(read.into_iter().map(Ok).collect()) {
                Sorted::Job(ranks, read) => {
                    // What the job does not need of the inputs.
                    drop(read);
                    job_page(ranks)?
                }
                Sorted::Apart(read, _) => {
                    trace_page(read.into_iter().filter_map(Result::ok).collect())?
                }
            }
        }
    };
    let page = if a.target.any() {
        page.with_prediction(prediction(a)?)
    } else {
        page
    };
    let html = page.render();
    write_atomic(&a.output, |w| w.write_all(html.as_bytes()))
        .with_context(|| format!("{}: cannot write the report", a.output.display()))?;
    writeln!(out, "wrote {}", a.output.display())?;
    Ok(true)
}

/// Every input read, each trace built into its rank and dropped
/// ([`inputs::prepare_all`]); a file that cannot be is bad input (all are
/// named on stderr, the first is the error).
fn read_every(files: &[PathBuf]) -> Result<Vec<Prepared>> {
    let mut traces = Vec::new();
    let mut first_error = None;
    for r in inputs::prepare_all(files) {
        match r {
            Ok(t) => traces.push(t),
            Err(e) if first_error.is_none() => first_error = Some(e),
            Err(e) => output::error(e),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(traces),
    }
}

/// The page of one trace (`--per-trace` or files that are not one job
/// leave nothing else to show on one page).
fn trace_page(read: Vec<Prepared>) -> Result<HtmlReport> {
    let [prepared] = <[Prepared; 1]>::try_from(read).map_err(|read| {
        usage(format!(
            "lumos report takes one trace or the ranks of one job; these {} traces are not \
             one job (--job treats them as one)",
            read.len()
        ))
    })?;
    let Prepared::Built(built) = prepared else {
        return Err(usage(
            "lumos report of one rank needs its trace: an .lgraph file keeps no timeline to \
             replay alone (it serves jobs, with --job)",
        ));
    };
    let rank = built.rank.expect("JobMode::sort gives every rank back");
    let sim = (&SimOptions::default(), &[][..]);
    let analysis = lumos_report::AnalysisOptions::default();
    let replayed = lumos_report::replay_rank_alone(rank, built.memory, sim, &analysis)?;
    Ok(HtmlReport::of_trace(&replayed))
}

/// The page of one trace file: what [`trace_page`] makes of it, but read
/// and replayed in one go (`lumos_report::replay_path`), the graph build's
/// first pass done as the file is read, so the trace's events are never
/// all in memory.
fn file_page(file: &Path) -> Result<HtmlReport> {
    let work = progress::FileWork::new(format!("replaying {}", file.display()));
    // On one of rayon's threads, as `lumos replay` replays a file.
    let replayed = rayon::scope(|_| {
        lumos_report::replay_path(file, &SimOptions::default(), &[], &|b| work.read(b))
    })?;
    work.read_done();
    let page = HtmlReport::of_trace(&replayed);
    work.finish();
    Ok(page)
}

/// The page of a job, replayed jointly. The job is given up, as `lumos
/// replay` gives it: each rank's graph is freed as it is merged and read
/// back from the job graph for the page.
fn job_page(ranks: Vec<lumos_graph::RankInput>) -> Result<HtmlReport> {
    let job = assemble(ranks)?;
    let replayed =
        lumos_report::replay_jointly_owned(job, &SimOptions::default(), &[], &[], false)?;
    Ok(HtmlReport::of_job(&replayed))
}

/// The prediction `lumos predict` would make with the same inputs and
/// flags.
fn prediction(a: &ReportArgs) -> Result<lumos_report::PredictReport> {
    let (loaded, _) = predict::load(&a.paths)?;
    let network = predict::target_network(&a.target)?;
    let base = Baseline::new(loaded).map_err(predict::predict_error)?;
    let pred = predict::apply(&base, &a.target, network).map_err(predict::predict_error)?;
    Ok(lumos_report::predict(&base, &pred)?.0)
}
