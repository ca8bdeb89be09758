//! `lumos report`: one self-contained HTML page of a trace or a job.
//!
//! The page opens with the verdict (what bounds the run), then the steps
//! (measured, replayed and, with a prediction, predicted, side by side,
//! each with its breakdown), the GPU-busy timeline, the critical path's
//! shares, the top kernels, for a job the waiting for peers per rank and
//! step as a heat map, the what-if comparison with its confidence and
//! assumptions, and the warnings. It is built from the values the `--json`
//! outputs use ([`ReplayOutput`], [`PredictReport`]) plus a few computed
//! here from the graphs (the breakdown per step, the top kernels, waiting
//! per step).
//!
//! The file must open anywhere, offline, as it is: no scripts, fonts, style
//! sheets or images from elsewhere; the style sheet is inline and every
//! chart is inline SVG. The charts are drawn by
//! [plotters](https://crates.io/crates/plotters), the maintained plotting
//! crate of the Rust ecosystem, with only its SVG backend and line series
//! (default features off: no font loading, bitmap or GUI backends, so it
//! adds three small crates and no system library). Drawing SVG by hand
//! would mean writing axes, ticks and legends ourselves; a JavaScript
//! chart library would put a script in the file.
//!
//! Every text from a trace (file, operator and kernel names, warnings) is
//! HTML-escaped; chart labels are numbers and fixed words only.

mod charts;
mod data;
mod page;
mod sections;
mod verdict;

use crate::job::JobReplayed;
use crate::replay::Replayed;
use crate::{PredictReport, ReplayOutput, TraceReplay};

use crate::KernelRow;
use data::{StepRow, WaitGrid};

/// What bounds a run, as the report's verdict names it: `compute-bound`,
/// `communication-bound`, `CPU/launch-bound`, `waiting for peers`,
/// `idle-bound`, `no GPU work` or `no measured time`, from a window's GPU
/// breakdown and its critical path's shares (`lumos demo` says the same
/// word as the page it points to).
pub fn run_bound(breakdown: &crate::BreakdownUs, path: &[crate::BoundShare]) -> &'static str {
    verdict::verdict(breakdown, path).bound
}

/// The HTML report of one trace or one job, ready to render.
#[derive(Debug, Clone)]
pub struct HtmlReport {
    /// Shown under the heading: the trace, or the job's ranks.
    title: String,
    /// The replay against the measurement, as `lumos replay --json`.
    replay: ReplayOutput,
    /// The trace the per-trace charts show (a job: the last to finish).
    focus: usize,
    /// Per step, its breakdown.
    steps: Vec<StepRow>,
    /// The kernels with the most measured time.
    kernels: Vec<KernelRow>,
    /// A job's waiting per rank and step.
    waits: Option<WaitGrid>,
    /// The what-if, when asked.
    prediction: Option<PredictReport>,
}

impl HtmlReport {
    /// The report of one trace replayed.
    pub fn of_trace(r: &Replayed) -> HtmlReport {
        let trace = r.report();
        HtmlReport {
            title: r.meta.path.display().to_string(),
            steps: data::trace_steps(&trace),
            kernels: data::top_kernels(std::iter::once(&trace.analysis.measured)),
            replay: ReplayOutput::of_traces(vec![trace]),
            focus: 0,
            waits: None,
            prediction: None,
        }
    }

    /// The report of a job replayed jointly.
    pub fn of_job(j: &JobReplayed) -> HtmlReport {
        let replay = j.report();
        let ranks = &j.job.ranks;
        let title = match (ranks.first(), ranks.last()) {
            (Some(a), Some(b)) => format!(
                "job of {} ranks: {} ... {}",
                ranks.len(),
                a.path.display(),
                b.path.display()
            ),
            _ => "empty job".to_owned(),
        };
        let from = replay
            .job
            .as_ref()
            .and_then(|x| x.critical_path.as_ref())
            .map(|p| p.from_rank);
        let focus = from
            .and_then(|rank| replay.traces.iter().position(|t| t.rank == rank))
            .unwrap_or(0);
        HtmlReport {
            title,
            focus,
            steps: data::job_steps(&replay),
            kernels: data::top_kernels(replay.traces.iter().map(|t| &t.analysis.measured)),
            waits: Some(data::wait_grid(j)),
            prediction: None,
            replay,
        }
    }

    /// The same report with a what-if prediction (`lumos predict`'s) beside
    /// the measured run and its replay.
    pub fn with_prediction(mut self, p: PredictReport) -> HtmlReport {
        self.prediction = Some(p);
        self
    }

    /// The replay the report shows, as `lumos replay --json` has it.
    pub fn replay(&self) -> &ReplayOutput {
        &self.replay
    }

    /// The page: one self-contained HTML document.
    pub fn render(&self) -> String {
        let v = match self.focus_trace() {
            Some(t) => {
                let path = match self
                    .replay
                    .job
                    .as_ref()
                    .and_then(|j| j.critical_path.as_ref())
                {
                    Some(p) => p.by_bound.as_slice(),
                    None => t.critical_path.as_ref().map_or(&[][..], |c| &c.by_bound),
                };
                verdict::verdict(&t.breakdown.measured, path)
            }
            None => verdict::verdict(&verdict::NOTHING, &[]),
        };
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = page::write(&mut out, self, &v);
        out
    }

    /// The trace the per-trace sections show.
    fn focus_trace(&self) -> Option<&TraceReplay> {
        self.replay.traces.get(self.focus)
    }
}
