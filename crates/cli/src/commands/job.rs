//! The text form of a job's joint replay: the straggler summary (printed
//! before the ranks' tables) and the rest of the job report (after them).

use std::collections::BTreeSet;
use std::io::Write;

use lumos_report::{JobReport, RepresentativesReport};

use crate::output::{counted, narrow, pct, wrapped, wrapped_words, WIDTH};

/// Ranks of a job whose rows and sections the text output prints at
/// least (`--top` more if larger); `--json` has every rank. A job of
/// thousands of ranks would otherwise print tens of thousands of lines.
pub const MIN_RANKS_SHOWN: usize = 16;

/// The ranks a job's text output shows when it has more than `limit`;
/// `None` when it shows every rank. First the ranks the summary names (the
/// straggler, then the longest steps'), then those that kept the others
/// waiting longest (measured; of equal times, the lowest rank), then the
/// lowest ranks.
pub fn shown_ranks(r: &JobReport, limit: usize) -> Option<BTreeSet<u32>> {
    if r.ranks.len() <= limit {
        return None;
    }
    let longest = (r.steps.iter().flatten()).map(|s| s.slowest_rank_measured);
    let named = r.straggler().map(|w| w.rank).into_iter().chain(longest);
    let mut by_waiting: Vec<_> = r.waiting.iter().flatten().collect();
    by_waiting.sort_by(|a, b| {
        (b.measured.caused_us.total_cmp(&a.measured.caused_us)).then(a.rank.cmp(&b.rank))
    });
    let waiting = by_waiting.into_iter().map(|w| w.rank);
    let mut shown = BTreeSet::new();
    for rank in named.chain(waiting).chain(r.ranks.iter().copied()) {
        if shown.len() == limit {
            break;
        }
        shown.insert(rank);
    }
    Some(shown)
}

/// Who the job waited for: the straggler (the rank that kept the others
/// waiting longest), per step the rank whose step lasted longest (often the
/// one that waited most, not the straggler: waiting makes a step long), and
/// every rank's waiting (with `shown`, only those ranks' rows).
/// From representatives (`reps`), the ranks replayed are counted as
/// representatives of the job's ranks, not as its ranks.
pub fn write_stragglers(
    out: &mut dyn Write,
    r: &JobReport,
    (reps, shown): (Option<&RepresentativesReport>, Option<&BTreeSet<u32>>),
    width: usize,
) -> std::io::Result<()> {
    writeln!(
        out,
        "job: {}; who waited for whom (measured / replayed)",
        ranks_replayed(r.ranks.len(), reps)
    )?;
    if let Some(w) = r.straggler() {
        let line = format!(
            "rank {} kept the others waiting longest: {:.3} / {:.3} ms, last to arrive at {} / {} collectives",
            w.rank,
            w.measured.caused_us / 1e3,
            w.replayed.caused_us / 1e3,
            w.measured.last_arrivals,
            w.replayed.last_arrivals
        );
        writeln!(
            out,
            "{}",
            wrapped_words("  straggler: ", &line, "    ", narrow(width))
        )?;
    }
    if let Some(steps) = &r.steps {
        // Where the width asks, the last heading without what the job's
        // heading above says (measured / replayed).
        let last = if width < WIDTH {
            "longest step on rank"
        } else {
            "longest step on rank (measured / replayed)"
        };
        writeln!(
            out,
            "  {:<18} {:>12} {:>12} {:>8}   {last}",
            "job step", "measured ms", "replayed ms", "error"
        )?;
        for s in steps {
            writeln!(
                out,
                "  {:<18} {:>12.3} {:>12.3} {:>8}   {} / {}",
                crate::output::shown(&s.name),
                s.measured_us / 1e3,
                s.replayed_us / 1e3,
                pct(s.error_pct, 2),
                s.slowest_rank_measured,
                s.slowest_rank_replayed
            )?;
        }
        let note = "a job step lasts as long as its longest rank's: often the rank that waited \
                    most for its peers, not the straggler)";
        writeln!(out, "{}", wrapped_words("  (", note, "   ", narrow(width)))?;
    }
    if let Some(waiting) = &r.waiting {
        writeln!(
            out,
            "  waiting for peers, per rank (ms, measured / replayed)"
        )?;
        // Each cell is a pair, right-aligned whole under its heading: the
        // headings were narrower than their pairs, the second value of
        // each was left-aligned, and the columns drifted apart from them.
        writeln!(
            out,
            "    {:>4}  {:>19}  {:>21}  {:>16}",
            "rank", "waited", "kept others waiting", "last to arrive"
        )?;
        let is_shown = |rank: &u32| shown.is_none_or(|s| s.contains(rank));
        for w in waiting.iter().filter(|w| is_shown(&w.rank)) {
            let pair = |m: f64, r: f64| format!("{:.3} / {:.3}", m / 1e3, r / 1e3);
            writeln!(
                out,
                "    {:>4}  {:>19}  {:>21}  {:>16}",
                w.rank,
                pair(w.measured.wait_us, w.replayed.wait_us),
                pair(w.measured.caused_us, w.replayed.caused_us),
                format!(
                    "{} / {}",
                    w.measured.last_arrivals, w.replayed.last_arrivals
                )
            )?;
        }
        let hidden = waiting.iter().filter(|w| !is_shown(&w.rank)).count() as u64;
        if hidden > 0 {
            writeln!(
                out,
                "    ... {} (--top N shows more, --json every rank)",
                counted(hidden, "more rank", "more ranks")
            )?;
        }
    }
    writeln!(out)
}

/// Most collectives printed in the per-collective table; the JSON has all.
const MAX_COLLECTIVE_ROWS: usize = 40;

/// How many ranks a job replayed: `N ranks`, or from representatives
/// (`reps`) `N representatives of M ranks`, the job's ranks they stand
/// for (a representative is one rank of the job, not the job's only one).
pub fn ranks_replayed(n: usize, reps: Option<&RepresentativesReport>) -> String {
    match reps {
        Some(reps) => format!(
            "{} of {}",
            counted(n as u64, "representative", "representatives"),
            counted(reps.ranks as u64, "rank", "ranks")
        ),
        None => format!("{n} ranks"),
    }
}

/// The rest of a job's joint replay: identities, matching, clocks, the
/// what-if, collectives and the critical path; `reps` as
/// [`write_stragglers`] takes it.
pub fn write_job(
    out: &mut dyn Write,
    r: &JobReport,
    reps: Option<&RepresentativesReport>,
    width: usize,
) -> std::io::Result<()> {
    writeln!(out)?;
    super::inspect::write_job(out, r, reps, width)?;
    for w in &r.what_if {
        writeln!(out, "  what-if: {w}")?;
    }
    if let Some(cols) = &r.collectives {
        write_collectives(out, cols, width)?;
    }
    if let Some(cp) = &r.critical_path {
        let ranks: Vec<String> = cp
            .per_rank_us
            .iter()
            .map(|t| format!("rank {} {:.2}", t.rank, t.us / 1e3))
            .collect();
        // "1 rank changes" read as a rank that changes; folded, as a
        // rank and a count of five digits each run past 120 columns.
        let line = format!(
            "walked back from rank {}, the last to finish (the job ends when it does); it \
             changes rank {}",
            cp.from_rank,
            crate::output::counted(cp.rank_changes as u64, "time", "times"),
        );
        writeln!(
            out,
            "{}",
            crate::output::wrapped_words("  critical path: ", &line, "    ", width)
        )?;
        // A line of its own, folded: eight ranks ran it to 169 columns.
        writeln!(
            out,
            "{}",
            wrapped(
                "    time on it per rank (ms): ",
                &ranks,
                ", ",
                "      ",
                width
            )
        )?;
    }
    Ok(())
}

/// The per-collective table: at most [`MAX_COLLECTIVE_ROWS`], those with
/// the largest replayed skew.
fn write_collectives(
    out: &mut dyn Write,
    cols: &[lumos_report::CollectiveReport],
    width: usize,
) -> std::io::Result<()> {
    let title = "per collective (measured / replayed): the last rank to arrive, its skew, the \
                 median transfer";
    writeln!(out, "{}", wrapped_words("  ", title, "    ", narrow(width)))?;
    let mut order: Vec<usize> = (0..cols.len()).collect();
    if cols.len() > MAX_COLLECTIVE_ROWS {
        // Show the ones with the most waiting.
        order.sort_by(|&a, &b| {
            cols[b]
                .replayed
                .skew_us
                .total_cmp(&cols[a].replayed.skew_us)
        });
        order.truncate(MAX_COLLECTIVE_ROWS);
        order.sort_unstable();
        writeln!(
            out,
            "    ({} of {} with the largest skew)",
            MAX_COLLECTIVE_ROWS,
            cols.len()
        )?;
    }
    let median = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s.get(s.len() / 2).copied().unwrap_or(0.0)
    };
    // Units and names in the heading, not in every cell (a row ran to 146
    // columns).
    // Narrower than a row (107 columns), the transfer and end spread go
    // on a second line under each, labelled.
    let two_lines = width < 107;
    let tail = if two_lines {
        String::new()
    } else {
        format!("  {:>19}  {:>15}", "transfer us", "end spread us")
    };
    writeln!(
        out,
        "    {:<22} {:>10}  {:>9}  {:>19}{tail}",
        "collective", "bytes", "last rank", "skew ms"
    )?;
    for &i in &order {
        let c = &cols[i];
        let transfer = (
            median(&c.measured.transfer_us),
            median(&c.replayed.transfer_us),
        );
        let spread = (c.measured.end_spread_us, c.replayed.end_spread_us);
        let tail = if two_lines {
            format!(
                "\n      transfer {:.1} / {:.1} us, end spread {:.1} / {:.1} us",
                transfer.0, transfer.1, spread.0, spread.1
            )
        } else {
            format!(
                "  {:>8.1} / {:>8.1}  {:>6.1} / {:>6.1}",
                transfer.0, transfer.1, spread.0, spread.1
            )
        };
        writeln!(
            out,
            "    {:<22} {:>10}  {:>3} / {:>3}  {:>8.3} / {:>8.3}{tail}",
            crate::output::shown(&c.label),
            c.bytes.map_or("-".into(), |b| format!("{b} B")),
            c.measured.last_rank,
            c.replayed.last_rank,
            c.measured.skew_us / 1e3,
            c.replayed.skew_us / 1e3,
        )?;
    }
    Ok(())
}
