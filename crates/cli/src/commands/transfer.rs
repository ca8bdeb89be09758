//! `--durations-from B` on `lumos replay` and `lumos predict`: A's graph
//! re-timed with the durations measured in B, another recording of the
//! same program.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use lumos_predict::Input;
use lumos_report::{ReportError, TimelineSource, TransferReport};

use crate::inputs;
use crate::output::pct;
use crate::usage::usage;

/// The file `--durations-from` names (`-` is standard input): one file,
/// a directory being bad usage.
pub fn durations_path(path: &Path) -> Result<PathBuf> {
    let path = inputs::input_path(path);
    if path.is_dir() {
        return Err(usage(format!(
            "--durations-from {}: give one trace file, not a directory",
            path.display()
        )));
    }
    Ok(path)
}

/// The recording `--durations-from` names (a trace, straight into its
/// graph's build, or an `.lgraph` file:
/// [`lumos_report::prediction_input`]), whole: its graph, measured times,
/// hardware and the metadata a timeline copies. A directory is bad usage.
pub fn read_input(path: &Path) -> Result<(Input, TimelineSource)> {
    lumos_report::prediction_input(&durations_path(path)?).map_err(inputs::input_error)
}

/// A transfer's error: B sharing too little with A is a usage error.
pub fn report_error(e: ReportError) -> anyhow::Error {
    match e {
        ReportError::Predict(p) if p.is_usage() => usage(p),
        e => e.into(),
    }
}

/// `r` with standard input given as `-` named as the reports name it
/// ([`crate::inputs::named`]).
pub fn renamed(mut r: TransferReport) -> TransferReport {
    crate::inputs::rename_stdin(&mut r.path);
    crate::inputs::rename_stdin(&mut r.durations_from);
    r
}

/// The text form of a transfer.
pub fn write_transfer(out: &mut dyn Write, r: &TransferReport) -> std::io::Result<()> {
    writeln!(
        out,
        "{} with the durations of {}",
        crate::output::shown(&r.path),
        crate::output::shown(&r.durations_from)
    )?;
    let m = &r.matched;
    writeln!(
        out,
        "  matched: {} of A's task time; CPU {} ({} of {} tasks), GPU {} ({} of {} \
         tasks); {} of {} dependencies took B's latency",
        pct(m.share.map(|s| s * 100.0), 1),
        pct(m.cpu_share.map(|s| s * 100.0), 1),
        m.cpu_tasks_matched,
        m.cpu_tasks,
        pct(m.gpu_share.map(|s| s * 100.0), 1),
        m.gpu_tasks_matched,
        m.gpu_tasks,
        m.edges_retimed,
        m.edges
    )?;
    for t in &m.threads {
        writeln!(
            out,
            "  thread {} -> {}: {} of {} tasks aligned ({} in B)",
            t.a, t.b, t.matched, t.a_tasks, t.b_tasks
        )?;
    }
    write_steps(out, r)?;
    for n in &r.notes {
        writeln!(out, "  note: {n}")?;
    }
    Ok(())
}

/// A's steps measured and predicted, beside B's measured and replayed.
fn write_steps(out: &mut dyn Write, r: &TransferReport) -> std::io::Result<()> {
    writeln!(
        out,
        "  {:<18} {:>13} {:>13} {:>13} {:>13} {:>8} {:>10}",
        "step",
        "A measured ms",
        "predicted ms",
        "B measured ms",
        "B replay ms",
        "error",
        "vs replay"
    )?;
    for s in &r.steps {
        write!(
            out,
            "  {:<18} {:>13.3} {:>13.3}",
            crate::output::shown(&s.name),
            s.a_measured_us / 1e3,
            s.predicted_us / 1e3
        )?;
        match &s.b {
            Some(b) => writeln!(
                out,
                " {:>13.3} {:>13.3} {:>8} {:>10}",
                b.measured_us / 1e3,
                b.replayed_us / 1e3,
                pct(b.error_pct, 2),
                pct(b.replay_error_pct, 2)
            )?,
            None => writeln!(out, " {:>13} {:>13}", "-", "-")?,
        }
    }
    match &r.mean {
        Some(m) => {
            writeln!(
                out,
                "  {:<18} {:>13.3} {:>13.3} {:>13.3} {:>13.3} {:>8} {:>10}",
                format!("mean of {}", m.steps),
                m.a_measured_us / 1e3,
                m.predicted_us / 1e3,
                m.b_measured_us / 1e3,
                m.b_replayed_us / 1e3,
                pct(m.error_pct, 2),
                pct(m.replay_error_pct, 2)
            )?;
            match (m.a_error_pct, m.error_pct) {
                (Some(a), Some(e)) => writeln!(
                    out,
                    "  A's own step is {a:+.2}% from B's; with B's durations, {e:+.2}%"
                ),
                // B's steps measured at zero length: no error either way.
                _ => writeln!(out, "  B's steps have no measured length: no error to show"),
            }
        }
        None => writeln!(out, "  B has no steps to compare with"),
    }
}
