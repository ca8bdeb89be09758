//! `lumos diff A B`: two runs compared, per step, per operator and per
//! kernel (lumos-report's `diff`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use lumos_report::{diff, DiffInput, DiffOptions, DiffReport, RowDiff, StepSelection};

use super::analysis::short_all;
use crate::inputs::Loaded;
use crate::output::pct;
use crate::usage::usage;
use crate::{inputs, output, progress};

/// `lumos diff` arguments.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// Run A: a trace file (a capture, or a timeline written by `replay
    /// --out` or `predict --out`); `-` reads standard input.
    pub a: PathBuf,
    /// Run B, compared with A.
    pub b: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Compare only these steps of each run (as `replay --steps`): steps
    /// are matched by their position in the selection.
    #[arg(long, value_name = "STEPS")]
    pub steps: Option<StepSelection>,
    /// A change of less than this many us per step is no change.
    #[arg(long, default_value_t = 10.0, value_name = "US")]
    pub min_change_us: f64,
    /// A change of less than this % of A's time is no change.
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub min_change_pct: f64,
    /// Rows of the operator and kernel tables in the text output; --json
    /// has every change.
    #[arg(long, default_value_t = 15, value_name = "N")]
    pub top: usize,
}

/// The trace of an input: a diff compares operators and kernels by name,
/// which an `.lgraph` file does not keep apart from the graph.
fn trace_of(l: Loaded) -> Result<lumos_trace::Trace> {
    match l {
        Loaded::Trace(t) => Ok(t),
        Loaded::Stored(s) => Err(usage(format!(
            "{}: lumos diff needs traces, not .lgraph files",
            s.file().display()
        ))),
    }
}

/// Runs `lumos diff`.
/// Its text is laid out for lines of `width` characters.
pub fn run(a: &DiffArgs, out: &mut dyn Write, width: usize) -> Result<bool> {
    for (flag, v) in [
        ("--min-change-us", a.min_change_us),
        ("--min-change-pct", a.min_change_pct),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(usage(format!("{flag} must be a number >= 0, got {v}")));
        }
    }
    let opts = DiffOptions {
        steps: a.steps.clone().unwrap_or_default(),
        min_change_ns: (a.min_change_us * 1e3).round() as i64,
        min_change_pct: a.min_change_pct,
    };
    crate::usage::stdin_once([&a.a, &a.b])?;
    let files = [inputs::input_path(&a.a), inputs::input_path(&a.b)];
    // A directory was read as a file: "cannot read file: Is a directory
    // (os error 21)", bad input. It is bad usage, said as `lumos.diff`
    // and `--durations-from` say it.
    for (name, path) in ["A", "B"].iter().zip(&files) {
        if path.is_dir() {
            return Err(usage(format!(
                "{name} {}: give one trace file, not a directory (diff compares two runs \
                 file by file: for a job, one rank's trace of each)",
                path.display()
            )));
        }
    }
    let mut read = inputs::read_all(&files).into_iter();
    let (ta, tb) = match (read.next(), read.next()) {
        (Some(x), Some(y)) => (trace_of(x?)?, trace_of(y?)?),
        _ => anyhow::bail!("diff needs two traces"),
    };
    let bar = progress::spinner("building both graphs");
    let (ia, ib) = rayon::join(|| DiffInput::of(&ta), || DiffInput::of(&tb));
    drop((ta, tb));
    let mut report = diff(&ia, &ib, &opts).map_err(|e| match e {
        lumos_report::ReportError::Steps { .. } => usage(e),
        e => e.into(),
    })?;
    bar.finish_and_clear();
    crate::inputs::rename_stdin(&mut report.a.path);
    crate::inputs::rename_stdin(&mut report.b.path);
    if a.json {
        output::json(out, &report)?;
    } else {
        write_human(out, &report, a.top, width)?;
    }
    Ok(true)
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or(output::UNKNOWN.into(), |v| format!("{v:.prec$}"))
}

fn write_human(
    out: &mut dyn Write,
    r: &DiffReport,
    top: usize,
    width: usize,
) -> std::io::Result<()> {
    // A change from a mean step of no length has no percentage (it
    // printed +0.00% whatever B's was).
    let change = (r.a.mean_step_us > 0.0).then(|| {
        let c = (r.b.mean_step_us - r.a.mean_step_us) / r.a.mean_step_us * 100.0;
        format!("{c:+.2}%")
    });
    writeln!(
        out,
        "A: {} ({} steps, mean {:.3} ms)",
        crate::output::shown(&r.a.path),
        r.a.steps,
        r.a.mean_step_us / 1e3
    )?;
    writeln!(
        out,
        "B: {} ({} steps, mean {:.3} ms)",
        crate::output::shown(&r.b.path),
        r.b.steps,
        r.b.mean_step_us / 1e3
    )?;
    writeln!(
        out,
        "mean step {}; changes count from {} us and {}% per step",
        output::or_unknown(change),
        r.min_change_us,
        r.min_change_pct
    )?;
    write_steps(out, r, width)?;
    writeln!(
        out,
        "  per step (ms)          {:>11} {:>11} {:>11}",
        "A", "B", "change"
    )?;
    for m in &r.breakdown {
        writeln!(
            out,
            "    {:<20} {:>11.3} {:>11.3} {:>+11.3} {:>8}",
            m.metric,
            m.a_us / 1e3,
            m.b_us / 1e3,
            m.delta_us / 1e3,
            pct(m.delta_pct, 1)
        )?;
    }
    let by = if r.by_shape {
        "name and shapes"
    } else {
        "name"
    };
    write_rows(
        out,
        &format!("operators (CPU tasks, by {by})"),
        &r.operators,
        r.unchanged_operators,
        (top, width),
    )?;
    write_rows(
        out,
        "GPU tasks (by name)",
        &r.kernels,
        r.unchanged_kernels,
        (top, width),
    )
}

/// The steps' table, each step of A beside its step of B. Narrower than
/// a row (about 110 columns), the step names shrink; where they would be
/// cut to less than a step's usual name (`ProfilerStep#123`), each row
/// takes two lines, the names on the first.
fn write_steps(out: &mut dyn Write, r: &DiffReport, width: usize) -> std::io::Result<()> {
    let one_line = (width.saturating_sub(64) / 2).min(22);
    let (n, two_lines) = if one_line >= 16 {
        (one_line, false)
    } else {
        ((width - 12) / 2, true)
    };
    if two_lines {
        writeln!(out, "  {:>3} step A / step B", "#")?;
        writeln!(
            out,
            "      {:>11} {:>11} {:>11} {:>8}  status",
            "A ms", "B ms", "change ms", "change"
        )?;
    } else {
        writeln!(
            out,
            "  {:>3} {:<n$} {:<n$} {:>11} {:>11} {:>11} {:>8}  status",
            "#", "step A", "step B", "A ms", "B ms", "change ms", "change"
        )?;
    }
    let a_steps: Vec<&str> = r
        .steps
        .iter()
        .map(|s| s.a_step.as_deref().unwrap_or("-"))
        .collect();
    let b_steps: Vec<&str> = r
        .steps
        .iter()
        .map(|s| s.b_step.as_deref().unwrap_or("-"))
        .collect();
    let a_steps = short_all(&a_steps, n);
    let b_steps = short_all(&b_steps, n);
    for ((s, a_step), b_step) in r.steps.iter().zip(&a_steps).zip(&b_steps) {
        let steps = if two_lines {
            format!("{a_step} / {b_step}\n     ")
        } else {
            format!("{a_step:<n$} {b_step:<n$}")
        };
        writeln!(
            out,
            "  {:>3} {steps} {:>11} {:>11} {:>11} {:>8}  {}",
            s.position,
            opt(s.a_us.map(|v| v / 1e3), 3),
            opt(s.b_us.map(|v| v / 1e3), 3),
            opt(s.delta_us.map(|v| v / 1e3), 3),
            pct(s.delta_pct, 2),
            s.status
        )?;
    }
    Ok(())
}

fn write_rows(
    out: &mut dyn Write,
    what: &str,
    rows: &[RowDiff],
    unchanged: usize,
    (top, width): (usize, usize),
) -> std::io::Result<()> {
    let head = format!(
        "{what}: {} changed, {unchanged} unchanged; most impact first (per step)",
        rows.len()
    );
    writeln!(
        out,
        "{}",
        output::wrapped_words("  ", &head, "    ", output::narrow(width))
    )?;
    // `--top 0` asks for no rows: no table (it printed the heading alone),
    // the line after it still counting them.
    if rows.is_empty() || top == 0 {
        return write_more(out, rows.len(), top);
    }
    // Narrower than a row (119 columns), each name has a line of its
    // own, its numbers on the next.
    let narrow = width < 119;
    let n = if narrow { width - 13 } else { NAME_CHARS };
    let numbers = format!(
        "{:>10} {:>10} {:>10} {:>8} {:>15}",
        "A ms", "B ms", "change ms", "change", "count A / B"
    );
    if narrow {
        writeln!(out, "    {:<8} name\n    {:<8} {numbers}", "", "")?;
    } else {
        writeln!(out, "    {:<8} {:<NAME_CHARS$} {numbers}", "", "name")?;
    }
    let names: Vec<String> = rows
        .iter()
        .take(top)
        .map(|d| match &d.shape {
            Some(s) => format!("{} [{s}]", d.name),
            None => d.name.clone(),
        })
        .collect();
    for (d, name) in rows.iter().zip(short_all(&names, n)) {
        let (name, gap) = if narrow {
            (format!("{name}\n"), " ".repeat(13))
        } else {
            (format!("{name:<NAME_CHARS$} "), String::new())
        };
        writeln!(
            out,
            "    {:<8} {name}{gap}{:>10.3} {:>10.3} {:>+10.3} {:>8} {:>15}",
            d.status,
            d.a_us / 1e3,
            d.b_us / 1e3,
            d.delta_us / 1e3,
            pct(d.delta_pct, 1),
            // The pair right-aligned whole under its heading (its second
            // value was left-aligned, off the heading, the row ending in
            // spaces).
            format!("{:.1} / {:.1}", d.a_count, d.b_count)
        )?;
    }
    write_more(out, rows.len(), top)
}

/// The most characters of a name (with its shapes) in the operator and
/// kernel tables: a row then ends by column 120 (it ran to 131).
const NAME_CHARS: usize = 48;

/// The line under a table cut to `top` of its `rows`, if it was.
fn write_more(out: &mut dyn Write, rows: usize, top: usize) -> std::io::Result<()> {
    if rows > top {
        writeln!(
            out,
            "    ... {} more (--top, or --json for all)",
            rows - top
        )?;
    }
    Ok(())
}
