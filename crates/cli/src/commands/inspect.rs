//! `lumos inspect`: what the reader and the graph builder found in each
//! file, and for the ranks of one job their identities, matching and
//! clocks.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use lumos_graph::{assemble_with, rank_ranges, RankInput};
use lumos_report::{FileReport, InspectOutput, JobReport, SkipCount, StructureReport};
use lumos_store::{Prepared, Sorted};
use rayon::prelude::*;

use super::JobMode;
use crate::output::{
    counted, fold, narrow, or_unknown, shown, shown_all, wrapped, wrapped_words, LIST_WIDTH,
    UNKNOWN,
};
use crate::{inputs, output, progress};

/// `lumos inspect` arguments.
#[derive(clap::Args)]
pub struct InspectArgs {
    /// Trace files (.json or .json.gz), compact graphs (.lgraph, from
    /// `lumos ingest`), or directories of them; `-` reads standard input.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub mode: JobMode,
}

/// Runs `lumos inspect`; false when an input could not be read or the
/// files are not one job.
pub fn run(args: &InspectArgs, out: &mut dyn Write, width: usize) -> Result<bool> {
    let files = inputs::expand(&args.paths)?;
    if let [file] = &files[..] {
        if !args.mode.job && !inputs::is_lgraph(file) {
            return run_one_trace(args, file, out, width);
        }
    }
    // Each trace is built into its rank as it is read and dropped, so no
    // trace is held beside the ranks.
    let prepared = inputs::prepare_all(&files, &inputs::job_guard(&files)?)?;
    let (read, job_ranks) = match args.mode.sort(prepared) {
        Sorted::Job(ranks, read) => (read, Some(ranks)),
        Sorted::Apart(read, _) => (read, None),
    };
    let mut ok = true;
    let mut unreadable = Vec::new();
    for e in read.iter().filter_map(|r| r.as_ref().err()) {
        output::error(e);
        unreadable.extend(inputs::unreadable_of(e));
        ok = false;
    }
    let traces = match &job_ranks {
        Some(ranks) => {
            let reports = job_file_reports(&read, ranks);
            inputs::drop_in_background(read);
            reports
        }
        None => reports_apart(read),
    };
    let mut job = None;
    if let Some(ranks) = job_ranks {
        // Files that are not one job (two claiming one rank) are bad input;
        // the files are still reported.
        match assemble_with(ranks, unreadable) {
            Ok(j) => {
                ok &= super::replay::report_left_out(&j);
                job = Some(lumos_report::job_report(&j));
            }
            Err(e) => {
                output::error(e);
                ok = false;
            }
        }
    }
    write_output(out, InspectOutput { traces, job }, args, width)?;
    Ok(ok)
}

/// `lumos inspect FILE` of one trace file, not a job: what [`run`] does
/// with it, but read and built in one go (`lumos_report::inspect_path`),
/// the graph build's first pass done as the file is read.
fn run_one_trace(
    args: &InspectArgs,
    file: &Path,
    out: &mut dyn Write,
    width: usize,
) -> Result<bool> {
    let work = progress::FileWork::new(format!("inspecting {}", file.display()));
    // On one of rayon's threads, as `run` reports each input.
    let inspected = rayon::scope(|_| lumos_report::inspect_path(file, &|b| work.read(b)));
    work.finish();
    let (traces, ok) = match inspected {
        Ok((report, built)) => {
            // Freeing the graph of a 1 GB trace takes tens of
            // milliseconds; the report is written meanwhile.
            crate::inputs::drop_in_background(built);
            (vec![report], true)
        }
        Err(e) => {
            output::error(e);
            (Vec::new(), false)
        }
    };
    let report = InspectOutput { traces, job: None };
    write_output(out, report, args, width)?;
    Ok(ok)
}

/// The report, as tables (laid out for `width`) or as JSON.
fn write_output(
    out: &mut dyn Write,
    mut report: InspectOutput,
    args: &InspectArgs,
    width: usize,
) -> Result<()> {
    for t in &mut report.traces {
        inputs::rename_stdin(&mut t.path);
    }
    if args.json {
        output::json_sorted(out, &report)?;
    } else {
        for t in &report.traces {
            write_file(out, t, width)?;
        }
        if let Some(j) = &report.job {
            write_job(out, j, None, width)?;
        }
    }
    Ok(())
}

/// The reports on the files of one job: its ranks are the graphs of the
/// files read, in order, so each report comes from its rank's graph
/// instead of building the file again.
fn job_file_reports(read: &[Result<Prepared>], ranks: &[RankInput]) -> Vec<FileReport> {
    let loaded: Vec<&Prepared> = read.iter().filter_map(|r| r.as_ref().ok()).collect();
    debug_assert_eq!(loaded.len(), ranks.len(), "one rank per input read");
    (loaded.into_par_iter().zip(ranks))
        .map(|(p, rank)| lumos_report::inspect_prepared(p, Some(rank)))
        .collect()
}

/// The reports on the inputs read that could be read, in order, each from
/// its rank (built as the trace was read) or compact file, freed on the
/// worker that reported it: one dropper thread for every worker would
/// free them one at a time.
fn reports_apart(read: Vec<Result<Prepared>>) -> Vec<FileReport> {
    (read.into_par_iter())
        .filter_map(|r| Some(lumos_report::inspect_prepared(&r.ok()?, None)))
        .collect()
}

/// `m` as the items of a list (`kind 12`), or `none`.
fn items(m: &BTreeMap<&str, u64>) -> Vec<String> {
    if m.is_empty() {
        return vec!["none".to_owned()];
    }
    m.iter().map(|(k, v)| format!("{k} {v}")).collect()
}

/// Rows of the skipped-events table a person reads; the rest are summed
/// in one line (`--json` lists them all).
const MAX_SKIPPED_ROWS: usize = 20;

/// The skipped events by category and reason, in the report's order. A
/// file that makes up thousands of categories would print a row for each,
/// so past [`MAX_SKIPPED_ROWS`] only the largest counts get a row.
fn write_skipped(out: &mut dyn Write, skipped: &[SkipCount], width: usize) -> std::io::Result<()> {
    let mut order: Vec<usize> = (0..skipped.len()).collect();
    // Stable: of equal counts, the first in the report's order is shown.
    order.sort_by(|&a, &b| skipped[b].count.cmp(&skipped[a].count));
    let (rows, rest) = order.split_at(order.len().min(MAX_SKIPPED_ROWS));
    let mut rows = rows.to_vec();
    rows.sort_unstable();
    for s in rows.iter().map(|&i| &skipped[i]) {
        let row = format!("    skipped {:>8}  {:<24} ", s.count, shown(&s.category));
        // The reason folded under its column where the width asks.
        let under = row.chars().count();
        let indent = " ".repeat(if under + 20 <= width { under } else { 8 });
        writeln!(
            out,
            "{}",
            wrapped_words(&row, s.reason, &indent, narrow(width))
        )?;
    }
    if !rest.is_empty() {
        let events: u64 = rest.iter().map(|&i| skipped[i].count).sum();
        writeln!(
            out,
            "    skipped {events:>8}  in {} (--json lists them)",
            counted(
                rest.len() as u64,
                "more category or reason",
                "more categories or reasons"
            )
        )?;
    }
    Ok(())
}

/// The text form of one file's report, laid out for lines of `width`
/// characters.
pub fn write_file(out: &mut dyn Write, r: &FileReport, width: usize) -> std::io::Result<()> {
    writeln!(out, "{}", shown(&r.path))?;
    writeln!(
        out,
        "  rank {} ({}), world size {}, {:.1} MB JSON{}",
        r.rank,
        r.rank_source,
        or_unknown(r.world_size),
        r.json_bytes as f64 / 1e6,
        if r.gzipped { " (gzip)" } else { "" }
    )?;
    // The reader counts metadata events (process and thread names, sort
    // order) in no bucket of their own; without them the parts did not add
    // up to the total (10840 total, 7947 kept, 2880 flows, 1 skipped).
    let e = &r.events;
    let metadata = (e.total)
        .saturating_sub(e.kept)
        .saturating_sub(e.flows)
        .saturating_sub(e.skipped);
    writeln!(
        out,
        "  events: {} total: {} kept, {} flows, {} metadata, {} skipped",
        e.total, e.kept, e.flows, metadata, e.skipped
    )?;
    write_skipped(out, &r.events.skipped_by_reason, width)?;
    // Damage counts, shown when there is damage (the warnings below say
    // more); `--json` always has them.
    if e.absurd_durations > 0 {
        writeln!(
            out,
            "    {} absurdly late (kept as written)",
            counted(e.absurd_durations, "event ends", "events end")
        )?;
    }
    let (tasks, edges) = (items(&r.tasks_by_kind), items(&r.edges_by_kind));
    let list = |head: &str, items: &[String]| wrapped(head, items, ", ", "    ", narrow(width));
    writeln!(out, "{}", list("  tasks: ", &tasks))?;
    if r.launches_without_gpu_task > 0 {
        writeln!(
            out,
            "    {} without {} GPU task",
            counted(
                r.launches_without_gpu_task,
                "launch or copy call",
                "launch and copy calls"
            ),
            if r.launches_without_gpu_task == 1 {
                "its"
            } else {
                "their"
            }
        )?;
    }
    writeln!(out, "{}", list("  edges: ", &edges))?;
    for i in &r.inferred {
        writeln!(
            out,
            "    {:<13} {:<26} {:>7} {}",
            i.kind,
            i.rule,
            i.count,
            if i.recorded { "recorded" } else { "inferred" }
        )?;
    }
    // Shown when there are any: such waits give no edge and no warning,
    // so this line is where a reader learns why.
    if r.idle_stream_waits > 0 {
        writeln!(
            out,
            "    {} at once (stream idle: no edge)",
            counted(
                r.idle_stream_waits,
                "stream wait satisfied",
                "stream waits satisfied"
            )
        )?;
    }
    let head = format!(
        "  {}, {}; devices: ",
        counted(r.threads, "thread", "threads"),
        counted(r.streams, "stream", "streams"),
    );
    let room = LIST_WIDTH.min(narrow(width).saturating_sub(head.chars().count()));
    writeln!(
        out,
        "{head}{}",
        if r.devices.is_empty() {
            "none listed".into()
        } else {
            fold(&shown_all(&devices(&r.devices)), "; ", room, "kinds of GPU")
        }
    )?;
    let c = &r.collectives;
    let head = format!(
        "  collectives: {} tasks ({} by Collective name, {} by kernel name){}",
        c.tasks,
        c.by_collective_name_arg,
        c.by_kernel_name,
        if c.by_name.is_empty() { "" } else { ": " }
    );
    // Every kind named, on as many lines as they take (the list ran to
    // 145 columns after its head).
    let names: Vec<String> = (c.by_name.iter())
        .map(|(k, v)| format!("{} {v}", shown(k)))
        .collect();
    writeln!(out, "{}", wrapped(&head, &names, ", ", "    ", width))?;
    writeln!(
        out,
        "  typical launch latency {:.1} us",
        r.typical_launch_latency_us
    )?;
    for s in &r.steps {
        writeln!(
            out,
            "  {:<16} {:>10.3} ms annotation, {:>10.3} ms with GPU tail",
            shown(&s.name),
            s.annotation_us / 1e3,
            s.measured_us / 1e3
        )?;
    }
    write_structure(out, &r.structure, !r.steps.is_empty(), width)?;
    for w in &r.warnings {
        writeln!(
            out,
            "{}",
            wrapped_words("  warning: ", &shown(w), "    ", width)
        )?;
    }
    Ok(())
}

/// A phase's name as the text shows it. Discovery calls everything before
/// a step's first forward pass its prologue; in a step where no pass was
/// found that is the whole step, which the name says.
fn phase_name(phase: &str, passes_found: bool) -> &str {
    match phase {
        "prologue" if !passes_found => "whole step (no forward or backward pass found)",
        "outside" => "outside steps",
        other => other,
    }
}

/// The devices a trace lists, `id: name` each, as one entry per name with
/// its ids (`NVIDIA A100-SXM4-80GB (0-7)`): a node's eight identical GPUs
/// take one entry, not eight.
fn devices(listed: &[String]) -> Vec<String> {
    let mut by_name: Vec<(&str, Vec<u32>, Vec<&str>)> = Vec::new();
    for d in listed {
        let (id, name) = d.split_once(": ").unwrap_or(("", d));
        let k = match by_name.iter().position(|(n, ..)| *n == name) {
            Some(k) => k,
            None => {
                by_name.push((name, Vec::new(), Vec::new()));
                by_name.len() - 1
            }
        };
        match id.parse::<u32>() {
            Ok(n) => by_name[k].1.push(n),
            Err(_) => by_name[k].2.push(id),
        }
    }
    by_name
        .into_iter()
        .map(|(name, mut ids, other)| {
            ids.sort_unstable();
            ids.dedup();
            let mut all = vec![rank_ranges(&ids)];
            all.extend(other.into_iter().map(str::to_owned));
            all.retain(|s| !s.is_empty());
            if all.is_empty() {
                name.to_owned()
            } else {
                format!("{name} ({})", all.join(", "))
            }
        })
        .collect()
}

/// The text form of a discovery report (a few lines under each file).
fn write_structure(
    out: &mut dyn Write,
    r: &StructureReport,
    has_steps: bool,
    width: usize,
) -> std::io::Result<()> {
    let c = &r.config;
    let opt = or_unknown::<u32>;
    // Folded at the words: the pass order alone is two words a
    // micro-batch.
    let line = format!(
        "{} stage (tp {}, pp {}, dp {}); {} {}{}; {} layers per pass{}; order {}{}",
        r.stage_role,
        opt(c.tp),
        opt(c.pp),
        opt(c.dp),
        opt(c.microbatches),
        if c.microbatches == Some(1) {
            "micro-batch"
        } else {
            "micro-batches"
        },
        match c.virtual_stages {
            Some(v) => format!(", {v} virtual stages"),
            None => String::new(),
        },
        opt(r.layers_per_pass),
        // How the layers were found, when they were: "- layers per pass
        // (none)" read as a second, contradicting count.
        if r.layers_per_pass.is_none() || r.layer_method == "none" {
            String::new()
        } else {
            format!(" (found by {})", r.layer_method)
        },
        if r.pass_order.is_empty() {
            UNKNOWN
        } else {
            &r.pass_order
        },
        match (r.one_f_one_b, c.virtual_stages) {
            (Some(true), Some(_)) => " (interleaved 1F1B)",
            (Some(true), None) => " (1F1B)",
            (Some(false), _) => " (not 1F1B)",
            (None, _) => "",
        }
    );
    writeln!(
        out,
        "{}",
        wrapped_words("  structure: ", &line, "    ", width)
    )?;
    if let Some(why) = &c.degrees_guessed {
        writeln!(
            out,
            "{}",
            wrapped_words("    assumption: ", &shown(why), "      ", width)
        )?;
    }
    if let (Some(h), Some(f)) = (c.hidden, c.ffn) {
        writeln!(
            out,
            "    shapes: hidden {h}, ffn {f}, tokens {}, sequence parallel {}",
            or_unknown(c.tokens),
            or_unknown(c.sequence_parallel)
        )?;
    }
    // A table with its names and units in the heading, not in each row
    // (a row ran to 131 columns).
    if !r.groups.is_empty() {
        writeln!(
            out,
            "    {:<6} {:<14} {:>4} {:>6} {:>8}  collectives (confidence)",
            "group", "class", "size", "tasks", "MB/step"
        )?;
    }
    for g in &r.groups {
        let row = format!(
            "    {:<6} {:<14} {:>4} {:>6} {:>8.1}  ",
            shown(&g.name),
            g.class,
            or_unknown(g.size),
            g.tasks,
            g.bytes_per_step as f64 / 1e6,
        );
        let names = fold(&shown_all(&g.collectives), ", ", LIST_WIDTH / 2, "names");
        let text = format!("{names} ({} confidence)", g.confidence);
        // Under its column, folded at the words where the width asks.
        let indent = " ".repeat(row.chars().count());
        writeln!(
            out,
            "{}",
            wrapped_words(&row, &text, &indent, narrow(width))
        )?;
    }
    let passes_found = r.phases.contains_key("forward") || r.phases.contains_key("backward");
    // Discovery divides each phase's time by the steps, or by one where
    // there is none: a trace without steps has its whole time outside
    // them, not "per step" of steps it lacks.
    let per = if has_steps {
        "per step"
    } else {
        "in all (no steps)"
    };
    for (phase, t) in &r.phases {
        writeln!(
            out,
            "    phase {:<10} CPU {:>9.3} ms  GPU {:>9.3} ms {per}",
            phase_name(phase, passes_found),
            t.cpu_ms,
            t.gpu_ms
        )?;
    }
    if let Some(why) = &r.structural_edits_blocked {
        // One verdict: where some edits are taken all the same, the
        // heading says so and names them, and the reason says what still
        // cannot change ("not possible" above a reason saying that layers
        // can read as a contradiction).
        let head = if r.structural_edits_possible.is_empty() {
            "    structural edits not possible: ".to_owned()
        } else {
            format!(
                "    structural edits possible only of the {}: ",
                r.structural_edits_possible.join(" and ")
            )
        };
        writeln!(
            out,
            "{}",
            wrapped_words(&head, &shown(why), "      ", width)
        )?;
    }
    Ok(())
}

/// The text form of a job's identities, matching and clocks (also the head
/// of `lumos replay`'s job report).
///
/// From representatives (`reps`) the ranks listed are the
/// representatives, counted as such against the job's ranks.
pub fn write_job(
    out: &mut dyn Write,
    r: &JobReport,
    reps: Option<&lumos_report::RepresentativesReport>,
    width: usize,
) -> std::io::Result<()> {
    writeln!(
        out,
        "job: {} ({}), world size {}{}",
        super::job::ranks_replayed(r.ranks.len(), reps),
        rank_ranges(&r.ranks),
        or_unknown(r.world_size),
        if r.missing_ranks.is_empty() {
            String::new()
        } else {
            format!(", missing rank {}", rank_ranges(&r.missing_ranks))
        }
    )?;
    let mut sources: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &r.rank_sources {
        *sources.entry(s).or_default() += 1;
    }
    let sources: Vec<String> = sources.iter().map(|(s, n)| format!("{s} {n}")).collect();
    writeln!(out, "  ranks identified by: {}", sources.join(", "))?;
    let m = &r.matching;
    let rules: Vec<String> = m
        .by_rule
        .iter()
        .map(|(k, v)| format!("{v} by {k}"))
        .collect();
    writeln!(
        out,
        "  collectives: {} matched sets, {} tasks matched ({}), {} left unmatched",
        m.sets,
        m.matched_tasks,
        if rules.is_empty() {
            "none".into()
        } else {
            rules.join(", ")
        },
        m.unmatched_tasks
    )?;
    for p in &m.problems {
        writeln!(
            out,
            "    mismatch: {}: {}; {} tasks left unmatched (measured durations kept)",
            p.label, p.detail, p.unmatched_tasks
        )?;
    }
    let c = &r.clock;
    let offsets: Vec<String> = c
        .offsets
        .iter()
        .map(|o| format!("{} {:+.1}", o.rank, o.offset_us))
        .collect();
    writeln!(
        out,
        "  clock offsets vs rank {} (us): {}",
        c.reference_rank,
        fold(&offsets, ", ", LIST_WIDTH, "ranks")
    )?;
    let spread = format!(
        "{:.1} us median, {:.1} us max after alignment ({:.1} us max as recorded)",
        c.end_spread_us.median, c.end_spread_us.max, c.raw_end_spread_us.max
    );
    let head = "  collective end spread across ranks: ";
    writeln!(
        out,
        "{}",
        wrapped_words(head, &spread, "    ", narrow(width))
    )?;
    for h in &c.hosts {
        let worst = h.residual_us.iter().fold(0.0f64, |w, r| w.max(r.abs()));
        let line = format!(
            "host {} (rank {}): one clock, offset {:+.1} us from {} collective ends; residual \
             per rank up to {:.1} us",
            h.host,
            rank_ranges(&h.ranks),
            h.offset_us,
            h.collective_ends,
            worst
        );
        writeln!(out, "{}", wrapped_words("  ", &line, "    ", narrow(width)))?;
    }
    for w in &r.warnings {
        writeln!(
            out,
            "{}",
            wrapped_words("  warning: ", &shown(w), "    ", width)
        )?;
    }
    Ok(())
}
