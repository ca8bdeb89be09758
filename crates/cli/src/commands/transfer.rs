//! `--durations-from B` on `lumos replay` and `lumos predict`: A's graph
//! re-timed with the durations measured in B, another recording of the
//! same program.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use lumos_predict::Input;
use lumos_report::{InputWarnings, ReportError, TimelineSource, TransferReport};

use crate::inputs;
use crate::output::{narrow, pct, wrapped_words, WIDTH};
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
/// hardware and the metadata a timeline copies, and what it warned. A
/// directory is bad usage.
pub fn read_input(path: &Path) -> Result<(Input, TimelineSource, Option<InputWarnings>)> {
    lumos_report::prediction_input(&durations_path(path)?)
        .map(lumos_report::PredictionFile::into_parts)
        .map_err(inputs::input_error)
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

/// The text form of a transfer, laid out for lines of `width` characters.
pub fn write_transfer(
    out: &mut dyn Write,
    r: &TransferReport,
    width: usize,
) -> std::io::Result<()> {
    // Lines that ran past 120 columns fold at the words only where a
    // width narrower than that was asked.
    let fold = |head: &str, text: &str| wrapped_words(head, text, "    ", narrow(width));
    let paths = format!(
        "with the durations of {}",
        crate::output::shown(&r.durations_from)
    );
    writeln!(
        out,
        "{}",
        fold(&format!("{} ", crate::output::shown(&r.path)), &paths)
    )?;
    let m = &r.matched;
    let matched = format!(
        "{} of A's task time; CPU {} ({} of {} tasks), GPU {} ({} of {} \
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
    );
    writeln!(out, "{}", fold("  matched: ", &matched))?;
    for t in &m.threads {
        writeln!(
            out,
            "  thread {} -> {}: {} of {} tasks aligned ({} in B)",
            t.a, t.b, t.matched, t.a_tasks, t.b_tasks
        )?;
    }
    write_steps(out, r, width)?;
    for n in &r.notes {
        writeln!(out, "{}", fold("  note: ", n))?;
    }
    Ok(())
}

/// A's steps measured and predicted, beside B's measured and replayed.
/// Narrower than a row (96 columns), the headings take two lines, over
/// narrower columns, and the step names shrink.
fn write_steps(out: &mut dyn Write, r: &TransferReport, width: usize) -> std::io::Result<()> {
    let wide = width >= WIDTH;
    let (n, c) = if wide {
        (18, 13)
    } else {
        (crate::output::name_width(width, 61, 18, 12), 9)
    };
    if wide {
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
    } else {
        let heads = [
            ["step", "A ms", "predicted", "B ms", "B ms", "error", "vs"],
            ["", "measured", "ms", "measured", "replay", "", "replay"],
        ];
        for h in heads {
            writeln!(
                out,
                "  {:<n$} {:>c$} {:>c$} {:>c$} {:>c$} {:>8} {:>c$}",
                h[0], h[1], h[2], h[3], h[4], h[5], h[6]
            )?;
        }
    }
    let names: Vec<&str> = r.steps.iter().map(|s| s.name.as_str()).collect();
    let names = if wide {
        names
            .iter()
            .map(|s| crate::output::shown(s).into_owned())
            .collect()
    } else {
        super::analysis::short_all(&names, n)
    };
    for (s, name) in r.steps.iter().zip(names) {
        write!(
            out,
            "  {:<n$} {:>c$.3} {:>c$.3}",
            name,
            s.a_measured_us / 1e3,
            s.predicted_us / 1e3
        )?;
        match &s.b {
            Some(b) => writeln!(
                out,
                " {:>c$.3} {:>c$.3} {:>8} {:>v$}",
                b.measured_us / 1e3,
                b.replayed_us / 1e3,
                pct(b.error_pct, 2),
                pct(b.replay_error_pct, 2),
                v = if wide { 10 } else { c }
            )?,
            None => writeln!(out, " {:>c$} {:>c$}", "-", "-")?,
        }
    }
    match &r.mean {
        Some(m) => {
            writeln!(
                out,
                "  {:<n$} {:>c$.3} {:>c$.3} {:>c$.3} {:>c$.3} {:>8} {:>v$}",
                format!("mean of {}", m.steps),
                m.a_measured_us / 1e3,
                m.predicted_us / 1e3,
                m.b_measured_us / 1e3,
                m.b_replayed_us / 1e3,
                pct(m.error_pct, 2),
                pct(m.replay_error_pct, 2),
                v = if wide { 10 } else { c }
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
