//! `lumos report`: one self-contained HTML page of a trace or of the ranks
//! of one job, with a what-if prediction beside it when `lumos predict`'s
//! flags are given. The page itself comes from lumos-report
//! ([`HtmlReport`]); this reads the inputs and writes the file.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use lumos_graph::{assemble, Detected};
use lumos_predict::{Candidates, Input};
use lumos_report::HtmlReport;
use lumos_sim::SimOptions;
use lumos_store::{MemoryGuard, Prepared, Sorted};
use lumos_trace::write_atomic;

use super::predict::{self, TargetArgs};
use super::JobMode;
use crate::usage::usage;
use crate::{inputs, output, progress};

/// `lumos report` arguments.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// A trace file (.json or .json.gz), or the ranks of one job (files or
    /// a directory of them); `-` reads standard input.
    #[arg(required = true, value_name = "TRACE_OR_DIR")]
    pub paths: Vec<PathBuf>,
    /// Where to write the page (one HTML file, nothing else needed to open
    /// it); `-` writes it to standard output.
    // `--out` too: every other command that writes takes `-o`/`--out`.
    #[arg(short = 'o', long, visible_alias = "out", value_name = "FILE")]
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
    // `-o -` is standard output, as Unix tools take it and as `-` is
    // standard input among the inputs (it wrote a file named `-`).
    let output = &a.output;
    let to_stdout = output.as_os_str() == "-";
    if !to_stdout {
        inputs::output_file(output, "-o", "report.html")?;
    }
    let files = inputs::expand(&a.paths)?;
    if !to_stdout {
        inputs::output_not_an_input(output, &files, "-o")?;
    }
    // The page and the prediction share one read of the inputs.
    let mut ranks_for_prediction = RanksForPrediction::NotAsked;
    // Whether every input is in the page: a rank the job leaves out is
    // named on stderr and makes the exit code 1, as `lumos replay --job`.
    let mut all_in = true;
    let page = match &files[..] {
        [file] if !a.mode.job && !inputs::is_lgraph(file) => {
            let (page, input) = file_page(file, a.target.any())?;
            if let Some(input) = input {
                let ready = Candidates::discover_all(vec![input]);
                ranks_for_prediction = RanksForPrediction::Ready(ready);
            }
            page
        }
        _ => {
            let guard = inputs::job_guard(&files)?;
            let read = read_every(&files, &guard)?;
            // Inputs that are not one job make no page: the line `lumos
            // replay` prints on taking them one by one would be untrue,
            // so the refusal says why instead.
            match a.mode.sort_unsaid(read.into_iter().map(Ok).collect()) {
                Sorted::Job(ranks, read) => {
                    let job = assemble(ranks)?;
                    // The prediction is of the ranks the page shows: the
                    // ranks the job's assembly left out (another run's, one
                    // without tasks, a clock hours away) are left out of it
                    // too, as they are of the page, not refused by it. Its
                    // ranks are lent from the job before the page's replay
                    // takes it, copied only where one stands for its stage;
                    // where ranks would be held whatever the others
                    // (discovery cannot settle them alone, or finds no
                    // stage), the files of the job's ranks are read again
                    // after the page instead.
                    if a.target.any() {
                        // By path: a job of thousands of ranks is not
                        // searched once per file.
                        let at_of: HashMap<&Path, usize> = (job.ranks.iter().enumerate())
                            .map(|(at, m)| (m.path.as_path(), at))
                            .collect();
                        let in_job: Vec<(&PathBuf, &Prepared, usize)> = (files.iter())
                            .zip(&read)
                            .filter_map(|(f, p)| {
                                let p = p.as_ref().ok()?;
                                Some((f, p, *at_of.get(p.trace_path())?))
                            })
                            .collect();
                        let metas: Vec<_> = in_job.iter().map(|(_, p, _)| p.meta()).collect();
                        let lent: Vec<_> = (in_job.iter())
                            .map(|&(_, _, at)| (job.ranks[at].path.as_path(), &job.graphs[at]))
                            .collect();
                        ranks_for_prediction =
                            match lumos_report::prediction_candidates_of_graphs(&lent, &metas) {
                                Some(ready) => RanksForPrediction::Ready(ready),
                                None => RanksForPrediction::ReadAgain(
                                    in_job.iter().map(|(f, _, _)| (*f).clone()).collect(),
                                ),
                            };
                    }
                    // What the job does not need of the inputs.
                    drop(read);
                    let (page, job_all_in) = job_page(job, &guard)?;
                    all_in = job_all_in;
                    page
                }
                Sorted::Apart(read, d) => {
                    return Err(no_page(
                        read.into_iter().filter_map(Result::ok).collect(),
                        &d,
                    ))
                }
            }
        }
    };
    let ranks = match ranks_for_prediction {
        RanksForPrediction::NotAsked => None,
        RanksForPrediction::Ready(ready) => Some(ready),
        RanksForPrediction::ReadAgain(files) => Some(predict::load(&files)?.0),
    };
    let page = match ranks {
        Some(ranks) => page.with_prediction(prediction(a, ranks)?),
        None => page,
    };
    // Standard input given as `-` is `stdin` on the page as everywhere:
    // in its title and wherever the page names the trace (its warnings).
    let html = inputs::stdin_named_in(&page.render()).into_owned();
    let wrote = if to_stdout {
        out.write_all(html.as_bytes())?;
        out.flush()?;
        "wrote the page to standard output".to_owned()
    } else {
        inputs::create_parent(output, "-o")?;
        // The error names the file and the reason: "r.html: cannot write: ...".
        write_atomic(output, |w| w.write_all(html.as_bytes()))?;
        format!(
            "wrote {}",
            lumos_report::text::shown(&output.display().to_string())
        )
    };
    if to_stdout || crate::inputs::is_standard_output(output) {
        // The page is on standard output: the line would end it.
        let _ = writeln!(
            crate::output::Shown::new(std::io::stderr().lock()),
            "{wrote}"
        );
    } else {
        writeln!(out, "{wrote}")?;
    }
    Ok(all_in)
}

/// The ranks a page's what-if prediction is made of.
// One per run: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
enum RanksForPrediction {
    /// No what-if flag was given.
    NotAsked,
    /// Made of the page's own read of the inputs.
    Ready(Candidates),
    /// These files, to be read again once the page is made: the job's
    /// ranks could not be lent
    /// ([`lumos_report::prediction_candidates_of_graphs`]). They are the
    /// job's ranks only, as the page's: not those its assembly left out.
    ReadAgain(Vec<PathBuf>),
}

/// Every input read, each trace built into its rank and dropped
/// ([`inputs::prepare_all`]); a file that cannot be is bad input (all are
/// named on stderr, the first is the error).
fn read_every(files: &[PathBuf], guard: &MemoryGuard) -> Result<Vec<Prepared>> {
    let mut traces = Vec::new();
    let mut first_error = None;
    for r in inputs::prepare_all(files, guard)? {
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

/// Why inputs that are not one job make no page: a page shows one trace
/// or the ranks of one job, and `-o` names one file (`lumos replay` takes
/// such inputs one by one, each its own report; a page of several
/// unrelated traces would have no one timeline, step table or verdict to
/// show). `detected` is job detection's verdict, whose reason is given
/// where the inputs looked like a job ([`Detected::reason`]); `--job` is
/// offered unless two claim one rank (it refuses them). An `.lgraph` file
/// alone keeps no
/// timeline to replay. A single trace file never comes here: [`file_page`]
/// reads and replays it.
fn no_page(read: Vec<Prepared>, detected: &Detected) -> anyhow::Error {
    debug_assert!(
        !matches!(&read[..], [Prepared::Built(_)]),
        "a single trace file is replayed by file_page"
    );
    match &read[..] {
        [Prepared::Stored(_)] => usage(
            "lumos report of one rank needs its trace: an .lgraph file keeps no timeline to \
             replay alone (it serves jobs, with --job)",
        ),
        _ => {
            let why = match (detected.reason(), detected) {
                (Some(r), Detected::SameRank { .. }) => format!("{r}, so they are not one job"),
                (Some(r), _) => format!("these {r}, so they are not one job"),
                (None, _) => format!("these {} traces are not one job", read.len()),
            };
            let job = match detected {
                Detected::SameRank { .. } => "",
                _ => ", or take them as one job with --job",
            };
            usage(format!(
                "lumos report makes one page, of one trace or of the ranks of one job; {why}: \
                 make a page of each (`lumos report TRACE -o PAGE`){job} (`lumos replay` \
                 replays them one by one)"
            ))
        }
    }
}

/// The page of one trace file, read and replayed in one go
/// (`lumos_report::replay_path_with_meta`), the graph build's first pass
/// done as the file is read, so the trace's events are never all in
/// memory. With `predicting`, also the file's
/// prediction input, made of the replayed graph
/// ([`lumos_report::prediction_input_of_replay`]) rather than of a second
/// read of the file.
fn file_page(file: &Path, predicting: bool) -> Result<(HtmlReport, Option<Input>)> {
    let work = progress::FileWork::new(format!("replaying {}", file.display()));
    let report = lumos_report::AnalysisOptions::default();
    // On one of rayon's threads, as `lumos replay` replays a file.
    let (replayed, meta) = rayon::scope(|_| {
        let sim = (&SimOptions::default(), &[][..]);
        lumos_report::replay_path_with_meta(file, sim, &report, &|b| work.read(b))
    })?;
    work.read_done();
    let page = HtmlReport::of_trace(&replayed);
    work.finish();
    let input = predicting.then(|| lumos_report::prediction_input_of_replay(replayed, &meta));
    Ok((page, input))
}

/// The page of a job, replayed jointly. The job is given up, as `lumos
/// replay` gives it: each rank's graph is freed as it is merged and read
/// back from the job graph for the page. Also whether every rank is in
/// the job: the ranks it leaves out are named on stderr (the page names
/// them too).
fn job_page(job: lumos_graph::Job, guard: &MemoryGuard) -> Result<(HtmlReport, bool)> {
    let all_in = super::replay::report_left_out(&job);
    lumos_report::room_to_replay(guard, &job)?;
    let replayed =
        lumos_report::replay_jointly_owned(job, &SimOptions::default(), &[], &[], false)?;
    Ok((HtmlReport::of_job(&replayed), all_in))
}

/// The prediction `lumos predict` would make with the same inputs and
/// flags, of `ranks`.
fn prediction(a: &ReportArgs, ranks: Candidates) -> Result<lumos_report::PredictReport> {
    Ok(predict::predict_then(ranks, &a.target, |_| Ok(()), |_, _| Ok(()))?.0)
}
