//! The report's sections after the steps: GPU-busy timeline, critical
//! path, top kernels, per-rank waiting and the what-if comparison.

use std::fmt::{self, Write};

use super::charts;
use super::data::WaitGrid;
use super::page::{esc, esc_name};
use super::HtmlReport;
use crate::KernelRow;
use crate::PredictReport;

/// Whose trace a per-trace chart shows, for its caption.
fn whose(r: &HtmlReport) -> String {
    match (&r.replay.job, r.focus_trace()) {
        (Some(_), Some(t)) => format!("rank {} (the last to finish in the replay)", t.rank),
        _ => "the trace".to_owned(),
    }
}

/// The GPU-busy timeline of the focus trace, measured and replayed.
pub(super) fn busy(out: &mut String, r: &HtmlReport) -> fmt::Result {
    out.push_str("<h2 id=\"busy\">GPU-busy timeline</h2>\n");
    let Some(t) = r.focus_trace() else {
        return out.write_str("<p>No trace.</p>\n");
    };
    let tl = &t.gpu_busy_timeline;
    let bin_ms = tl.bin_us / 1e3;
    out.push_str(&charts::legend(&["measured", "replayed"]));
    out.push_str(&charts::busy(bin_ms, &[&tl.measured, &tl.replayed]));
    writeln!(
        out,
        "<p class=\"note\">Share of each {bin_ms} ms bin in which at least one GPU stream of {} \
         is busy.</p>",
        esc(&whose(r))
    )
}

/// Where the critical path's time went, and the tasks on it that cost
/// the most.
pub(super) fn critical_path(out: &mut String, r: &HtmlReport) -> fmt::Result {
    out.push_str("<h2 id=\"critical-path\">Critical path</h2>\n");
    let job_path = r.replay.job.as_ref().and_then(|j| j.critical_path.as_ref());
    let trace_path = r.focus_trace().and_then(|t| t.critical_path.as_ref());
    let by_bound = match (job_path, trace_path) {
        (Some(j), _) => &j.by_bound,
        (None, Some(t)) => &t.by_bound,
        (None, None) => return out.write_str("<p>No critical path (no tasks).</p>\n"),
    };
    let mut rows: Vec<(String, f64)> = by_bound
        .iter()
        .map(|b| (b.bound.clone(), (b.wait_us + b.busy_us) / 1e3))
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    out.push_str(&charts::shares(&rows));
    out.push_str(
        "<p class=\"note\">Time on the replay's critical path (waiting plus running), by what \
         each task on it waited for before it started: <b>intra_thread</b> the task before it \
         on its CPU thread, <b>inter_thread</b> a task on another thread, <b>launch</b> the CPU \
         call that launched it, <b>intra_stream</b> the task before it on its GPU stream, \
         <b>inter_stream</b> a task on another stream (event record and wait), <b>sync</b> \
         and <b>runtime_sync</b> the GPU work a blocking CPU call waited for, \
         <b>launch_queue</b> a full launch queue, <b>rendezvous</b> the last peer to arrive \
         at a collective, <b>processor</b> the task before it on its thread or stream, \
         <b>release</b> nothing the trace explains (the task starts where its trace placed \
         it: a thread's first task, a GPU task with no recorded launch).</p>\n",
    );
    if let Some(j) = job_path {
        write!(
            out,
            "<p>Walked back from rank {}, the last to finish the replay (the job ends when it \
             does), changing ranks {} {}; time on the path per rank: ",
            j.from_rank,
            j.rank_changes,
            if j.rank_changes == 1 { "time" } else { "times" }
        )?;
        let parts: Vec<String> = j
            .per_rank_us
            .iter()
            .map(|t| format!("rank {} {:.2} ms", t.rank, t.us / 1e3))
            .collect();
        writeln!(out, "{}.</p>", parts.join(", "))?;
    }
    if let Some(t) = trace_path.filter(|t| !t.top_tasks.is_empty()) {
        writeln!(
            out,
            "<table id=\"path-tasks\"><caption>Longest tasks on the path of {}</caption>\
             <tr><th class=\"l\">task</th><th>ms</th></tr>",
            esc(&whose(r))
        )?;
        let names: Vec<&str> = t.top_tasks.iter().map(|t| t.name.as_str()).collect();
        for (task, name) in t.top_tasks.iter().zip(shorten(&names)) {
            writeln!(
                out,
                "<tr><td class=\"l\" title=\"{}\">{}</td><td>{:.3}</td></tr>",
                esc_name(&task.name),
                esc_name(&name),
                task.us / 1e3
            )?;
        }
        out.push_str("</table>\n");
    }
    Ok(())
}

/// The kernels with the most measured GPU time.
pub(super) fn kernels(out: &mut String, rows: &[KernelRow]) -> fmt::Result {
    out.push_str("<h2 id=\"kernels\">Top kernels</h2>\n");
    if rows.is_empty() {
        return out.write_str("<p>No GPU work in the trace.</p>\n");
    }
    out.push_str(
        "<table id=\"kernels-table\"><tr><th class=\"l\">kernel</th><th>kind</th><th>count</th>\
         <th>total ms</th><th>mean µs</th><th>share of GPU time</th></tr>\n",
    );
    let names: Vec<&str> = rows.iter().map(|k| k.name.as_str()).collect();
    for (k, name) in rows.iter().zip(shorten(&names)) {
        writeln!(
            out,
            "<tr><td class=\"l\" title=\"{}\">{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.1}</td><td>{}</td></tr>",
            esc_name(&k.name),
            esc_name(&name),
            if k.comm { "comm" } else { "compute" },
            k.count,
            k.total_us / 1e3,
            k.total_us / k.count.max(1) as f64,
            super::page::share_pct(k.share_pct)
        )?;
    }
    out.push_str(
        "</table><p class=\"note\">Measured in the analysed steps, summed over every rank.</p>\n",
    );
    Ok(())
}

/// Longest kernel name shown in full; the rest is in the cell's tooltip.
const MAX_NAME: usize = 110;

/// A column's names in at most [`MAX_NAME`] characters each, shortened as
/// the text tables shorten them, names that differ shown apart
/// ([`crate::text::short_all_raw`]; the cell escapes them).
fn shorten(names: &[&str]) -> Vec<String> {
    crate::text::short_all_raw(names, MAX_NAME)
}

/// Most rows of a waiting heat map. A row is 28 pixels: a job of 4,096
/// ranks would be a chart 115,000 pixels tall, so a larger job's ranks are
/// binned, each row the mean of consecutive ranks.
const MAX_HEAT_ROWS: usize = 64;

/// The heat map's rows of `grid` (a row per rank, in `ranks`' order): at
/// most [`MAX_HEAT_ROWS`], each the mean of consecutive ranks (as evenly
/// shared as they divide), with their labels. A cell a rank lacks is left
/// out of its row's mean.
fn heat_rows(ranks: &[u32], grid: &[Vec<f64>]) -> (Vec<String>, Vec<Vec<f64>>) {
    let n = ranks.len().min(grid.len());
    let bins = n.min(MAX_HEAT_ROWS);
    let bin = |b: usize| b * n / bins..(b + 1) * n / bins;
    let labels = (0..bins)
        .map(|b| match &ranks[bin(b)] {
            [r] => format!("rank {r}"),
            some => format!("ranks {}", lumos_graph::rank_ranges(some)),
        })
        .collect();
    let rows = (0..bins)
        .map(|b| {
            let rows = &grid[bin(b)];
            let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
            (0..columns)
                .map(|c| {
                    let cells: Vec<f64> = rows.iter().filter_map(|r| r.get(c).copied()).collect();
                    cells.iter().sum::<f64>() / cells.len() as f64
                })
                .collect()
        })
        .collect();
    (labels, rows)
}

/// Per rank and step, the time spent waiting for peers; then the totals.
pub(super) fn waits(out: &mut String, r: &HtmlReport, w: &WaitGrid) -> fmt::Result {
    out.push_str("<h2 id=\"waiting\">Waiting for peers</h2>\n");
    let binned = w.ranks.len() > MAX_HEAT_ROWS;
    for (label, grid) in [("measured", &w.measured), ("replayed", &w.replayed)] {
        let (rows, grid) = heat_rows(&w.ranks, grid);
        let max = grid.iter().flatten().copied().fold(0.0, f64::max);
        let mean = match binned {
            true => ", the mean of the consecutive ranks of each row",
            false => "",
        };
        writeln!(
            out,
            "<h3>{label}</h3><p class=\"note\">ms each rank waited in collectives for its \
             peers, per step{mean} (darkest: {:.2} ms).</p>",
            max / 1e3
        )?;
        out.push_str(&charts::heat_map(&rows, &w.steps, &grid));
    }
    let Some(waiting) = r.replay.job.as_ref().and_then(|j| j.waiting.as_ref()) else {
        return Ok(());
    };
    out.push_str(
        "<table id=\"waiting-table\"><tr><th>rank</th><th>waited ms (measured)</th>\
         <th>replayed</th><th>kept others waiting ms (measured)</th><th>replayed</th>\
         <th>last to arrive (measured)</th><th>replayed</th></tr>\n",
    );
    for x in waiting {
        writeln!(
            out,
            "<tr><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td><td>{}</td></tr>",
            x.rank,
            x.measured.wait_us / 1e3,
            x.replayed.wait_us / 1e3,
            x.measured.caused_us / 1e3,
            x.replayed.caused_us / 1e3,
            x.measured.last_arrivals,
            x.replayed.last_arrivals
        )?;
    }
    out.push_str("</table>\n");
    if let Some(x) = r.replay.job.as_ref().and_then(|j| j.straggler()) {
        writeln!(
            out,
            "<p class=\"note\">The straggler is rank {}: it kept the others waiting longest \
             (measured). The ranks that waited most are the ones it held up; their steps are \
             the longest.</p>",
            x.rank
        )?;
    }
    Ok(())
}

/// The prediction against the measured run and its replay, with the
/// confidence of what it rests on and what it assumed.
pub(super) fn what_if(out: &mut String, p: &PredictReport) -> fmt::Result {
    out.push_str("<h2 id=\"what-if\">What-if</h2>\n");
    writeln!(
        out,
        "<p>Traced: {}<br>Predicted: {}</p>",
        esc(&p.traced.config.to_string()),
        esc(&p.target.to_string())
    )?;
    for k in &p.kernel_scales {
        writeln!(out, "<p>kernels {}</p>", esc(k))?;
    }
    writeln!(
        out,
        "<table id=\"what-if-table\"><tr><th class=\"l\">mean step</th><th>measured ms</th>\
         <th>replayed ms</th><th>predicted ms</th><th>change</th></tr>\
         <tr><td class=\"l\">slowest stage</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td></tr></table>",
        p.mean_measured_ms,
        p.mean_replayed_ms,
        p.mean_predicted_ms,
        super::page::signed_pct(p.change_pct)
    )?;
    stages(out, p)?;
    confidence(out, p)?;
    if !p.assumptions.is_empty() {
        out.push_str("<h3>Assumptions</h3><ul>");
        for a in &p.assumptions {
            write!(out, "<li>{}</li>", esc(a))?;
        }
        out.push_str("</ul>\n");
    }
    Ok(())
}

/// The predicted stages' breakdowns, beside the replayed ones.
fn stages(out: &mut String, p: &PredictReport) -> fmt::Result {
    out.push_str(
        "<table id=\"stages-table\"><tr><th>stage</th><th class=\"l\">of</th><th>step ms</th>\
         <th>compute ms</th><th>overlap ms</th><th>comm ms</th><th>idle ms</th></tr>\n",
    );
    for s in &p.stages {
        for (label, b) in [
            ("replayed", s.replayed.as_ref()),
            ("predicted", Some(&s.predicted)),
        ] {
            let Some(b) = b else { continue };
            writeln!(
                out,
                "<tr><td>{}</td><td class=\"l\">{label}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td></tr>",
                s.stage,
                if label == "predicted" { s.step_ms } else { b.total_ms },
                b.exposed_compute_ms,
                b.overlapped_ms,
                b.exposed_comm_ms,
                b.idle_ms
            )?;
        }
    }
    out.push_str("</table>\n");
    let parts: Vec<String> = p
        .gpu_ms_by_source
        .iter()
        .map(|(s, ms)| format!("{s} {ms:.1} ms"))
        .collect();
    writeln!(
        out,
        "<p class=\"note\">GPU time by where its duration came from: {}.</p>",
        parts.join(", ")
    )
}

/// How sure the prediction is of what it rests on: discovery's findings
/// and the models' fit.
fn confidence(out: &mut String, p: &PredictReport) -> fmt::Result {
    out.push_str("<h3>Confidence</h3>\n");
    let g = &p.calibration.gemm;
    // No GEMM matched: no mean error to state (it said 0.0%).
    let gemms = match g.mean_abs_error_pct {
        Some(e) => format!("{} GEMMs, mean error {e:.1}%", g.samples),
        None if g.samples == 0 => "no GEMM matched".to_owned(),
        None => format!("{} GEMMs, none with a measured length", g.samples),
    };
    writeln!(
        out,
        "<p>GEMM model: {gemms}{}.",
        if g.fitted {
            ""
        } else {
            " (preset, not fitted)"
        }
    )?;
    for l in &p.calibration.network {
        write!(
            out,
            " Network {}: {} collectives ({} with a size), {} fit point{}, mean error {}{}.",
            l.link,
            l.collectives,
            l.collectives.saturating_sub(l.unsized_collectives),
            l.samples,
            if l.samples == 1 { "" } else { "s" },
            super::page::share_pct(l.mean_abs_error_pct),
            if l.calibrated {
                ""
            } else {
                " (not calibrated)"
            }
        )?;
    }
    out.push_str("</p>\n<table id=\"findings-table\"><tr><th class=\"l\">trace</th><th class=\"l\">found</th>\
        <th class=\"l\">value</th><th>confidence</th><th class=\"l\">evidence</th></tr>\n");
    for i in &p.inputs {
        for f in &i.structure.findings {
            writeln!(
                out,
                "<tr><td class=\"l\">rank {}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                i.rank,
                esc(&f.what),
                esc(&f.value),
                f.confidence,
                esc(&f.evidence)
            )?;
        }
    }
    out.push_str("</table>\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_of_no_name_is_quoted_not_a_blank_cell() {
        let row = |name: &str| KernelRow {
            name: name.to_owned(),
            kind: "kernel",
            comm: false,
            count: 2,
            total_us: 4.0,
            mean_us: 2.0,
            min_us: 1.0,
            max_us: 3.0,
            share_pct: Some(50.0),
        };
        let mut page = String::new();
        kernels(&mut page, &[row(""), row("gemm")]).unwrap();
        // Its cell and tooltip read `""`, as `lumos replay`'s table shows
        // it; before, the cell was empty (`<td class="l" title=""></td>`).
        assert!(
            page.contains("<td class=\"l\" title=\"&quot;&quot;\">&quot;&quot;</td>"),
            "{page}"
        );
        assert!(
            page.contains("<td class=\"l\" title=\"gemm\">gemm</td>"),
            "{page}"
        );
    }

    #[test]
    fn heat_rows_bin_a_large_job_into_means() {
        // A job the chart holds rank by rank.
        let ranks: Vec<u32> = (0..3).collect();
        let grid = vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0]];
        let (labels, rows) = heat_rows(&ranks, &grid);
        assert_eq!(labels, ["rank 0", "rank 1", "rank 2"]);
        assert_eq!(rows, grid);
        // 130 ranks: 64 rows of two or three, as evenly as they divide.
        let ranks: Vec<u32> = (0..130).collect();
        let grid: Vec<Vec<f64>> = ranks.iter().map(|&r| vec![f64::from(r)]).collect();
        let (labels, rows) = heat_rows(&ranks, &grid);
        assert_eq!(labels.len(), MAX_HEAT_ROWS);
        assert_eq!(labels[0], "ranks 0, 1");
        assert_eq!(labels[63], "ranks 127-129");
        assert_eq!(rows[0], [0.5]);
        assert_eq!(rows[63], [128.0]);
        // 65 ranks: 64 rows, one of them two ranks.
        let (labels, _) = heat_rows(&ranks[..65], &grid[..65]);
        assert_eq!(labels.len(), MAX_HEAT_ROWS);
        // A rank missing from the job is not claimed by its row's label;
        // a cell a rank lacks is not counted as zero.
        let ranks: Vec<u32> = (0..130).filter(|r| *r != 1).collect();
        let mut grid: Vec<Vec<f64>> = ranks.iter().map(|&r| vec![f64::from(r), 1.0]).collect();
        grid[0].pop();
        let (labels, rows) = heat_rows(&ranks, &grid);
        assert_eq!(labels[0], "ranks 0, 2");
        assert_eq!(rows[0], [1.0, 1.0]);
    }
}
