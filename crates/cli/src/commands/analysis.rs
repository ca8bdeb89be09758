//! The text form of the analyses (lumos-report's `Analyses`): per-step
//! breakdown, top kernels and operators, collectives, memory and the
//! critical path per step. Shared by `replay` and `predict`.

use std::io::{self, Write};

use lumos_report::{Analyses, MemoryReport, StepAnalysis, StepCriticalPath, TraceAnalysis};

use crate::output::{name_width, pct, WIDTH};

// Every table's one way of shortening a name (escaped, a long C++ name
// compacted, cut with `…`), and of a column of names so that names that
// differ read apart.
pub use lumos_report::text::{short, short_all};

/// The measured analyses of a trace and its replay's critical paths, laid
/// out for lines of `width` characters.
pub fn write_trace_analysis(
    out: &mut dyn Write,
    a: &TraceAnalysis,
    top: usize,
    width: usize,
) -> io::Result<()> {
    write_analyses(out, &a.measured, ("measured", top), width)?;
    if let Some(m) = &a.memory {
        write_memory(out, m)?;
    }
    write_paths(out, &a.critical_path, width)
}

/// Per step, kernels, operators and collectives of one run (`what`:
/// measured, predicted; `top` rows a table), laid out for lines of
/// `width` characters.
pub fn write_analyses(
    out: &mut dyn Write,
    a: &Analyses,
    (what, top): (&str, usize),
    width: usize,
) -> io::Result<()> {
    write_steps(out, a, what, width)?;
    write_kernels(out, a, top, width)?;
    write_operators(out, a, top, width)?;
    write_collectives(out, a, top, width)
}

fn write_steps(out: &mut dyn Write, a: &Analyses, what: &str, width: usize) -> io::Result<()> {
    // Two tables, not one of 155 columns: the four shares that add up to
    // the step (and the share of communication hidden), then the idle
    // time by cause. Narrower than a row (94 columns), the step names
    // shrink and the title has a line of its own.
    let n = name_width(width, 63, 26, 12);
    if n == 26 {
        writeln!(
            out,
            "  per step ({what}, % of step)     #   step ms  compute  overlap     comm     idle | comm hidden"
        )?;
    } else {
        writeln!(
            out,
            "  per step ({what}, % of step; hidden: % of comm hidden)"
        )?;
        writeln!(
            out,
            "    {:<n$} {:>3} {:>9} {:>8} {:>8} {:>8} {:>8} | hidden",
            "step", "#", "step ms", "compute", "overlap", "comm", "idle"
        )?;
    }
    let total = (a.steps.len() > 1).then_some(&a.total);
    let rows: Vec<&StepAnalysis> = a.steps.iter().chain(total).collect();
    let names: Vec<&str> = rows.iter().map(|s| s.step.as_str()).collect();
    for (s, name) in rows.iter().zip(short_all(&names, n)) {
        write_step(out, s, &name, (n, if n == 26 { 11 } else { 6 }))?;
    }
    let names = short_all(&names, 26);
    let title = format!("idle per step ({what}, ms)");
    writeln!(
        out,
        "  {title:<28} {:>12} {:>12} {:>10}",
        "host wait", "kernel gaps", "other"
    )?;
    for (s, name) in rows.iter().zip(&names) {
        writeln!(
            out,
            "    {:<26} {:>12.3} {:>12.3} {:>10.3}",
            name,
            s.idle_host_wait_us / 1e3,
            s.idle_kernel_gap_us / 1e3,
            s.idle_other_us / 1e3
        )?;
    }
    if total.is_some() {
        // The selection's time is not the whole window's (465.150 against
        // 465.269 ms on the recsys rank): say what it adds and leaves out.
        writeln!(
            out,
            "{}",
            crate::output::wrapped_words(
                "    (",
                "selection: the selected steps' times added, not the whole window: time \
                 between the steps and before or after them is not in it, and GPU work of a step \
                 running into the next counts in both)",
                "     ",
                width
            )
        )?;
    }
    Ok(())
}

/// One row of the steps' table, its step shown as `name` in `n` columns,
/// `h` columns for the share of communication hidden.
fn write_step(
    out: &mut dyn Write,
    s: &StepAnalysis,
    name: &str,
    (n, h): (usize, usize),
) -> io::Result<()> {
    // A step of no length has no shares: each is `-` (they were 0.0%).
    writeln!(
        out,
        "    {:<n$} {:>3} {:>9.3} {:>8} {:>8} {:>8} {:>8} | {:>h$}",
        name,
        s.index.map_or(String::new(), |i| i.to_string()),
        s.span_us / 1e3,
        pct(s.exposed_compute_pct, 1),
        pct(s.overlapped_pct, 1),
        pct(s.exposed_comm_pct, 1),
        pct(s.idle_pct, 1),
        pct(s.overlap_pct, 1)
    )
}

fn write_kernels(out: &mut dyn Write, a: &Analyses, top: usize, width: usize) -> io::Result<()> {
    // `--top 0` asks for no rows: no table (it printed the heading alone).
    if a.kernels.is_empty() || top == 0 {
        return Ok(());
    }
    let title = format!(
        "top GPU tasks ({} of {})",
        top.min(a.kernels.len()),
        a.kernels.len()
    );
    // Narrower than a row (104 columns), the names shrink.
    let n = name_width(width, 42, 62, 24);
    if n == 62 {
        writeln!(
            out,
            "  {title}                                          total ms    count    mean us   share"
        )?;
    } else {
        writeln!(
            out,
            "  {title:<w$} {:>9} {:>8} {:>10} {:>7}",
            "total ms",
            "count",
            "mean us",
            "share",
            w = n + 2
        )?;
    }
    let names: Vec<&str> = a
        .kernels
        .iter()
        .take(top)
        .map(|k| k.name.as_str())
        .collect();
    for (k, name) in a.kernels.iter().zip(short_all(&names, n)) {
        writeln!(
            out,
            "    {:<n$} {:>9.3} {:>8} {:>10.2} {:>7}",
            name,
            k.total_us / 1e3,
            k.count,
            k.mean_us,
            pct(k.share_pct, 1)
        )?;
    }
    Ok(())
}

fn write_operators(out: &mut dyn Write, a: &Analyses, top: usize, width: usize) -> io::Result<()> {
    if a.operators.is_empty() || top == 0 {
        return Ok(());
    }
    let title = format!(
        "GPU time by launching operator ({} of {})",
        top.min(a.operators.len()),
        a.operators.len()
    );
    // Narrower than a row (113 columns), both names shrink alike, and the
    // title has a line of its own.
    let names_room = width.saturating_sub(35).clamp(30, 78);
    let (n, k) = (names_room * 40 / 78, names_room - names_room * 40 / 78);
    if n == 40 {
        writeln!(
            out,
            "  {title:<42} {:>9} {:>10} {:>7}  top kernel",
            "total ms", "GPU tasks", "share"
        )?;
    } else {
        writeln!(out, "  {title}")?;
        writeln!(
            out,
            "    {:<n$} {:>9} {:>10} {:>7}  top kernel",
            "operator", "total ms", "GPU tasks", "share"
        )?;
    }
    let names: Vec<&str> = a
        .operators
        .iter()
        .take(top)
        .map(|o| o.operator.as_str())
        .collect();
    let kernels: Vec<&str> = a
        .operators
        .iter()
        .take(top)
        .map(|o| o.top_kernel.as_str())
        .collect();
    let kernels = short_all(&kernels, k);
    for ((o, name), kernel) in a.operators.iter().zip(short_all(&names, n)).zip(kernels) {
        writeln!(
            out,
            "    {:<n$} {:>9.3} {:>10} {:>7}  {}",
            name,
            o.total_us / 1e3,
            o.gpu_tasks,
            pct(o.share_pct, 1),
            kernel
        )?;
    }
    Ok(())
}

fn write_collectives(
    out: &mut dyn Write,
    a: &Analyses,
    top: usize,
    width: usize,
) -> io::Result<()> {
    if a.collectives.is_empty() || top == 0 {
        return Ok(());
    }
    // Its numbers alone take 92 columns: narrower than a row (117), each
    // collective takes two lines.
    if width < 117 {
        return write_collectives_narrow(out, a, top, width);
    }
    // The headings in the rows' own widths, so that each sits over its
    // column (they drifted by up to seven columns).
    writeln!(
        out,
        "  {:<27} {:<10} {:>5}  {:<15} {:>6} {:>10} {:>10} {:>12} {:>11}",
        "collectives",
        "group",
        "ranks",
        "algorithm",
        "calls",
        "total ms",
        "mean us",
        "algbw GB/s",
        "busbw GB/s"
    )?;
    let gbps = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
    let names: Vec<&str> = a
        .collectives
        .iter()
        .take(top)
        .map(|c| c.collective.as_str())
        .collect();
    for (c, name) in a.collectives.iter().zip(short_all(&names, 25)) {
        let algo = algorithm(c);
        writeln!(
            out,
            "    {:<25} {:<10} {:>5}  {:<15} {:>6} {:>10.3} {:>10.1} {:>12} {:>11}",
            name,
            short(c.process_group.as_deref().unwrap_or("-"), 10),
            c.group_size.map_or("-".into(), |n| n.to_string()),
            short(&algo, 15),
            c.count,
            c.total_us / 1e3,
            c.mean_us,
            gbps(c.algbw_gbps),
            gbps(c.busbw_gbps)
        )?;
    }
    Ok(())
}

/// The collectives' table in two lines a collective: its group, calls and
/// times on the first, its algorithm and bandwidths, labelled, on the
/// second; every value of the wide table kept.
fn write_collectives_narrow(
    out: &mut dyn Write,
    a: &Analyses,
    top: usize,
    width: usize,
) -> io::Result<()> {
    let n = name_width(width, 50, 25, 10);
    writeln!(
        out,
        "  {:<w$} {:<10} {:>5} {:>6} {:>10} {:>10}",
        "collectives",
        "group",
        "ranks",
        "calls",
        "total ms",
        "mean us",
        w = n + 2
    )?;
    let gbps = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
    let names: Vec<&str> = (a.collectives.iter().take(top))
        .map(|c| c.collective.as_str())
        .collect();
    for (c, name) in a.collectives.iter().zip(short_all(&names, n)) {
        writeln!(
            out,
            "    {:<n$} {:<10} {:>5} {:>6} {:>10.3} {:>10.1}",
            name,
            short(c.process_group.as_deref().unwrap_or("-"), 10),
            c.group_size.map_or("-".into(), |n| n.to_string()),
            c.count,
            c.total_us / 1e3,
            c.mean_us,
        )?;
        let line = format!(
            "algorithm {}, algbw {} GB/s, busbw {} GB/s",
            algorithm(c),
            gbps(c.algbw_gbps),
            gbps(c.busbw_gbps)
        );
        writeln!(
            out,
            "{}",
            crate::output::wrapped_words("      ", &line, "        ", width)
        )?;
    }
    Ok(())
}

/// A collective's algorithm and protocol (`RING/LL`), `-` when unknown.
fn algorithm(c: &lumos_report::CollectiveRow) -> String {
    match (&c.algorithm, &c.protocol) {
        (Some(a), Some(p)) => format!("{a}/{p}"),
        (Some(a), None) => a.clone(),
        _ => "-".into(),
    }
}

/// Bytes as GiB with two decimals, `-` when unknown.
fn gib(b: Option<i64>) -> String {
    b.map_or("-".into(), |b| {
        format!("{:.2}", b as f64 / (1u64 << 30) as f64)
    })
}

fn write_memory(out: &mut dyn Write, m: &MemoryReport) -> io::Result<()> {
    for d in &m.devices {
        writeln!(
            out,
            "  memory, GPU {} ({} events, {}): peak allocated {} GiB, reserved {} GiB",
            d.device,
            d.events,
            if d.source == "bytes_sum" {
                "allocated summed from the trace's start"
            } else {
                "allocator totals"
            },
            gib(d.peak_allocated_bytes),
            gib(d.peak_reserved_bytes)
        )?;
        let steps: Vec<_> = m.steps.iter().filter(|s| s.device == d.device).collect();
        if steps.is_empty() {
            continue;
        }
        writeln!(
            out,
            "    {:<26} {:>18} {:>17} {:>13} {:>11}",
            "step", "peak allocated GiB", "peak reserved GiB", "allocated GiB", "allocations"
        )?;
        let names: Vec<&str> = steps.iter().map(|s| s.step.as_str()).collect();
        for (s, name) in steps.iter().zip(short_all(&names, 26)) {
            writeln!(
                out,
                "    {:<26} {:>18} {:>17} {:>13.2} {:>11}",
                name,
                gib(s.peak_allocated_bytes),
                gib(s.peak_reserved_bytes),
                s.allocated_bytes as f64 / (1u64 << 30) as f64,
                s.allocations
            )?;
        }
    }
    Ok(())
}

/// `cpu_bound` as a person writes it.
pub fn verdict(v: &str) -> &str {
    match v {
        "cpu_bound" => "CPU-bound",
        "gpu_bound" => "GPU-bound",
        "communication_bound" => "communication-bound",
        other => other,
    }
}

/// The verdict of a critical path of no length.
const NO_VERDICT: &str = "path of no length";

/// The table of the critical path per step (replayed), if there is one,
/// laid out for lines of `width` characters.
pub fn write_paths(
    out: &mut dyn Write,
    paths: &[StepCriticalPath],
    width: usize,
) -> io::Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    writeln!(out, "  critical path per step (replayed)")?;
    if width < WIDTH {
        return write_paths_narrow(out, paths, width);
    }
    // The operator with the most time on each path, not three on one line
    // of 190 columns: `--json` has up to five (`top_operators`).
    writeln!(
        out,
        "    {:<26} {:<19} {:>6} {:>6} {:>6}  most on it (% of path)",
        "step", "verdict", "CPU", "GPU", "comm"
    )?;
    let steps: Vec<&str> = paths.iter().map(|p| p.step.as_str()).collect();
    let steps = short_all(&steps, 26);
    // Paths with no operator stand out of the column: the others are
    // shortened together.
    let with_most: Vec<&str> = paths
        .iter()
        .filter_map(|p| p.top_operators.first().map(|o| o.operator.as_str()))
        .collect();
    let mut most_names = short_all(&with_most, OPERATOR_ON_PATH_CHARS).into_iter();
    for (p, step) in paths.iter().zip(&steps) {
        let most = p.top_operators.first().map_or(String::new(), |o| {
            format!("{} {:.1}%", most_names.next().unwrap_or_default(), o.pct)
        });
        // A path of no length has no verdict and no shares (it read
        // "CPU-bound, CPU 0.0%" from nothing).
        writeln!(
            out,
            "    {:<26} {:<19} {:>6} {:>6} {:>6}  {}",
            step,
            p.verdict.map_or(NO_VERDICT, verdict),
            pct(p.cpu_pct, 1),
            pct(p.gpu_compute_pct, 1),
            pct(p.communication_pct, 1),
            most
        )?;
    }
    Ok(())
}

/// [`write_paths`] narrower than its rows (119 columns): the operator
/// with the most time on each path on a line of its own under its step.
fn write_paths_narrow(
    out: &mut dyn Write,
    paths: &[StepCriticalPath],
    width: usize,
) -> io::Result<()> {
    let n = name_width(width, 45, 26, 12);
    writeln!(
        out,
        "    {:<n$} {:<19} {:>6} {:>6} {:>6}",
        "step", "verdict", "CPU", "GPU", "comm"
    )?;
    let steps: Vec<&str> = paths.iter().map(|p| p.step.as_str()).collect();
    let with_most: Vec<&str> = paths
        .iter()
        .filter_map(|p| p.top_operators.first().map(|o| o.operator.as_str()))
        .collect();
    let head = "      most on it: ";
    // The name, then ` 100.0% of path`.
    let room = width.saturating_sub(head.len() + 15).max(20);
    let mut most_names = short_all(&with_most, room).into_iter();
    for (p, step) in paths.iter().zip(short_all(&steps, n)) {
        writeln!(
            out,
            "    {:<n$} {:<19} {:>6} {:>6} {:>6}",
            step,
            p.verdict.map_or(NO_VERDICT, verdict),
            pct(p.cpu_pct, 1),
            pct(p.gpu_compute_pct, 1),
            pct(p.communication_pct, 1),
        )?;
        if let Some(o) = p.top_operators.first() {
            let name = most_names.next().unwrap_or_default();
            writeln!(out, "{head}{name} {:.1}% of path", o.pct)?;
        }
    }
    Ok(())
}

/// The most characters of the operator named in the critical path table:
/// its row then ends by column 120 ("100.0%" included).
const OPERATOR_ON_PATH_CHARS: usize = 39;
