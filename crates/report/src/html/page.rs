//! The page around the charts: the layout, its style sheet, the verdict,
//! the steps table and the warnings; `sections` has the rest. Every text
//! that comes from a trace goes through [`esc`], which shows what would
//! act instead of being seen (controls, bidirectional overrides) escaped,
//! as the command line's tables do ([`crate::text::shown`]).

use std::fmt::{self, Write};

use super::data::StepRow;
use super::verdict::Verdict;
use super::{charts, sections, HtmlReport};
use crate::text::{is_hidden, push_escape};
use crate::units::pct_of;
use crate::BreakdownUs;

/// The style sheet, inline: the file must open without network.
const STYLE: &str = "\
body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;background:#fff}\
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:28px 0 8px;border-bottom:1px solid #ddd}\
.sub{color:#555;margin:0 0 16px;word-break:break-all}\
.verdict{background:#f3f6fb;border-left:6px solid #4c72b0;padding:12px 16px}\
.verdict b{font-size:22px}.note{color:#555;font-size:13px}\
table{border-collapse:collapse;font-size:13px;margin:8px 0}\
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}\
th{background:#f4f4f4}td.l,th.l{text-align:left;max-width:560px;word-break:break-all}\
td.n{white-space:nowrap;text-align:left}\
.warn{color:#8a4b00}.legend{font-size:14px;margin:4px 0 0 80px}\
.key{display:inline-block;width:14px;height:14px;margin:0 5px -2px 14px}\
svg{display:block;max-width:100%;height:auto}";

/// `s` with the characters HTML gives meaning to escaped, for text and
/// attribute values alike, and the [`is_hidden`] ones as visible escapes
/// (`\u{1b}`, a backslash doubled so that no name reads as an escape, as
/// [`crate::text::shown`] shows them): a NUL or an escape is invalid in the SVG's XML, and a
/// right-to-left override would turn the rest of a cell around.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c == '\\' || is_hidden(c) => push_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// A name from the trace (a step's, a kernel's, a task's) as a cell or
/// its tooltip shows it: [`esc`], and a name that is empty or only
/// spaces quoted, `""`, as the command line's tables show it
/// ([`crate::text::shown`]): a blank cell read as a value missing, and
/// two such names as one.
pub(crate) fn esc_name(s: &str) -> String {
    if s.chars().all(|c| c == ' ') {
        esc(&format!("\"{s}\""))
    } else {
        esc(s)
    }
}

/// The whole page.
pub(super) fn write(out: &mut String, r: &HtmlReport, v: &Verdict) -> fmt::Result {
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>lumos report: {}</title><style>{STYLE}</style></head><body>\n",
        esc(&r.title)
    )?;
    writeln!(
        out,
        "<h1>lumos report</h1><p class=\"sub\">{}</p>",
        esc(&r.title)
    )?;
    write_verdict(out, r, v)?;
    write_steps(out, r)?;
    sections::busy(out, r)?;
    sections::critical_path(out, r)?;
    sections::kernels(out, &r.kernels)?;
    if let Some(w) = &r.waits {
        sections::waits(out, r, w)?;
    }
    if let Some(p) = &r.prediction {
        sections::what_if(out, p)?;
    }
    write_warnings(out, r)?;
    out.push_str("</body></html>\n");
    Ok(())
}

fn write_verdict(out: &mut String, r: &HtmlReport, v: &Verdict) -> fmt::Result {
    let t = r.focus_trace();
    let who = match (&r.replay.job, t) {
        (Some(_), Some(t)) => format!("rank {}, the last to finish in the replay", t.rank),
        _ => "the trace".to_owned(),
    };
    write!(
        out,
        "<div class=\"verdict\" id=\"verdict\"><b>{}</b><p>{}.</p>\
         <p class=\"note\">From the measured GPU breakdown of {} and the replay's critical path \
         (a heuristic: a critical path half or more through CPU threads and launches names \
         the CPU; otherwise the largest share names the bound, and an idle GPU is blamed on \
         what the critical path runs through).",
        v.bound,
        esc(&v.detail),
        esc(&who)
    )?;
    // A step measured at zero length has no error: left out, and with
    // none left there is no mean (0% would read as agreement).
    let errors: Vec<f64> = r
        .steps
        .iter()
        .filter_map(|s| pct_of(s.replayed.total_us, s.measured.total_us))
        .map(f64::abs)
        .collect();
    if errors.is_empty() {
        return writeln!(
            out,
            " No step below has a measured length: the replay has no error to show.</p></div>"
        );
    }
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    let max = errors.iter().copied().fold(0.0, f64::max);
    writeln!(
        out,
        " Replay error of the steps below: mean |error| {:.2}%, max {:.2}%.</p></div>",
        mean + 0.0,
        max + 0.0
    )
}

/// Per step: the chart, then the table (lengths, then the breakdown as %
/// of the step).
fn write_steps(out: &mut String, r: &HtmlReport) -> fmt::Result {
    out.push_str("<h2 id=\"steps\">Steps</h2>\n");
    let labels: Vec<String> = r.steps.iter().map(|s| s.name.clone()).collect();
    let mut series: Vec<Vec<f64>> = vec![
        r.steps.iter().map(|s| s.measured.total_us / 1e3).collect(),
        r.steps.iter().map(|s| s.replayed.total_us / 1e3).collect(),
    ];
    let predicted = r.prediction.as_ref().map(|p| &p.steps);
    if let Some(p) = predicted {
        series.push(
            p.iter()
                .take(labels.len())
                .map(|s| s.predicted_ms)
                .collect(),
        );
    }
    let names = ["measured", "replayed", "predicted"];
    out.push_str(&charts::legend(&names[..series.len()]));
    out.push_str(&charts::steps(&labels, &series));
    let job = r.replay.job.is_some();
    out.push_str("<table id=\"steps-table\"><tr><th class=\"l\">step</th>");
    if job {
        out.push_str("<th>longest step on rank</th>");
    }
    out.push_str("<th>measured ms</th><th>replayed ms</th><th>error</th>");
    if predicted.is_some() {
        out.push_str("<th>predicted ms</th><th>change</th>");
    }
    for side in ["measured", "replayed"] {
        write!(
            out,
            "<th>{side}: compute</th><th>overlap</th><th>comm</th><th>idle</th>"
        )?;
    }
    out.push_str("</tr>\n");
    for (k, s) in r.steps.iter().enumerate() {
        write_step_row(out, s, job, predicted.map(|p| p.get(k)))?;
    }
    out.push_str(
        "</table><p class=\"note\">compute: GPU compute not overlapped with \
        communication; overlap: both at once; comm: communication alone; idle: no GPU work; \
        each in % of the step. A job's step lasts as long as its longest rank's \
        (often the rank that waited most for its peers; the straggler, who kept them \
        waiting, is under Waiting for peers).",
    );
    if predicted.is_some() {
        out.push_str(
            " Predicted: the slowest predicted stage, from the traced ranks the prediction \
             uses (see What-if); its change is against its own replay of those ranks.",
        );
    }
    out.push_str("</p>\n");
    Ok(())
}

fn write_step_row(
    out: &mut String,
    s: &StepRow,
    job: bool,
    predicted: Option<Option<&crate::StepRow>>,
) -> fmt::Result {
    let (m, r) = (s.measured.total_us / 1e3, s.replayed.total_us / 1e3);
    write!(out, "<tr><td class=\"n\">{}</td>", esc_name(&s.name))?;
    if job {
        let rank = s.rank.map_or("-".to_owned(), |r| r.to_string());
        write!(out, "<td>{rank}</td>")?;
    }
    // No error for a step measured at zero length: a dash, as every
    // value the trace does not tell.
    let err = signed_pct(pct_of(r, m));
    write!(out, "<td>{m:.3}</td><td>{r:.3}</td><td>{err}</td>")?;
    match predicted {
        Some(Some(p)) => write!(
            out,
            "<td>{:.3}</td><td>{}</td>",
            p.predicted_ms,
            signed_pct(p.change_pct)
        )?,
        Some(None) => out.push_str("<td>-</td><td>-</td>"),
        None => {}
    }
    for b in [&s.measured, &s.replayed] {
        write_shares(out, b)?;
    }
    out.push_str("</tr>\n");
    Ok(())
}

/// A signed percentage, or `-` where there is none (a span of no length
/// to compare with: `-%` would read as a number).
pub(super) fn signed_pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:+.2}%"))
}

/// A share with one decimal, or `-` where there is none (a share of a
/// total of no length: 0% would read as measured).
pub(super) fn share_pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}%"))
}

fn write_shares(out: &mut String, b: &BreakdownUs) -> fmt::Result {
    for x in [
        b.exposed_compute_us,
        b.overlapped_us,
        b.exposed_comm_us,
        b.idle_us,
    ] {
        // A step of no length has no shares (each was 0.0%).
        let share = (b.total_us > 0.0).then(|| x / b.total_us * 100.0);
        write!(out, "<td>{}</td>", share_pct(share))?;
    }
    Ok(())
}

/// Most warnings listed; the `--json` outputs have all.
const MAX_WARNINGS: usize = 60;

fn write_warnings(out: &mut String, r: &HtmlReport) -> fmt::Result {
    let mut all: Vec<String> = Vec::new();
    for t in &r.replay.traces {
        if t.flagged {
            all.push(format!("{}: signs of a damaged trace (flagged)", t.path));
        }
        all.extend(t.warnings.iter().map(|w| format!("{}: {w}", t.path)));
    }
    if let Some(j) = &r.replay.job {
        all.extend(j.warnings.iter().map(|w| format!("job: {w}")));
    }
    writeln!(out, "<h2 id=\"warnings\">Warnings ({})</h2>", all.len())?;
    if all.is_empty() {
        out.push_str("<p>None.</p>\n");
        return Ok(());
    }
    out.push_str("<ul class=\"warn\">");
    for w in all.iter().take(MAX_WARNINGS) {
        write!(out, "<li>{}</li>", esc(w))?;
    }
    out.push_str("</ul>\n");
    if all.len() > MAX_WARNINGS {
        writeln!(
            out,
            "<p class=\"note\">{} more in <code>lumos replay --json</code>.</p>",
            all.len() - MAX_WARNINGS
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{esc, esc_name};
    use crate::text::shown;

    #[test]
    fn an_empty_name_is_quoted_as_the_terminal_shows_it() {
        // Before, an empty name was a blank cell where the tables show
        // `""`; the page shows what `shown` shows, HTML-escaped.
        for name in ["", " ", "   "] {
            assert_eq!(esc_name(name), esc(&shown(name)), "{name:?}");
        }
        assert_eq!(esc_name(""), "&quot;&quot;");
        // Any other name is shown as `esc` shows it.
        for name in [" a ", "k<1>", "\u{1b}"] {
            assert_eq!(esc_name(name), esc(name), "{name:?}");
        }
    }

    #[test]
    fn escapes_what_html_reads() {
        assert_eq!(
            esc(r#"void k<float, 4>(a&b) "x" 'y'"#),
            "void k&lt;float, 4&gt;(a&amp;b) &quot;x&quot; &#39;y&#39;"
        );
        assert_eq!(
            esc("<\u{1b}[31m\u{202e}>\n"),
            "&lt;\\u{1b}[31m\\u{202e}&gt;\\n"
        );
    }
}
