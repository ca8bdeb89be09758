//! Issue 15, names and units: what the text output calls things, read as
//! printed, on corpus traces (all-to-alls are no pipeline group, the
//! straggler apart from the longest step, one way to show an unknown value,
//! long lists folded, a step without passes named for what it is, help
//! texts true for each command).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::path::PathBuf;

use common::{lumos, lumos_json, sentence};

/// A corpus file, or `None` when the corpus is absent.
fn corpus(rel: &str) -> Option<PathBuf> {
    Some(lumos_testkit::corpus()?.path(rel))
}

const RECSYS: &str = "single-rank/a100-recsys-rank3of8.json.gz";
const DLRM: &str = "multi-rank/dlrm-8xv100";

/// `lumos ARGS` as printed on stdout; it must succeed.
fn text(args: &[&str]) -> String {
    let out = lumos().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "lumos {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn path_str(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn issue_15_all_to_all_groups_are_not_pipeline_groups() {
    let (Some(recsys), Some(dlrm)) = (corpus(RECSYS), corpus(DLRM)) else {
        return;
    };
    for p in [recsys.clone(), dlrm.join("rank0.json.gz")] {
        let v = lumos_json(&["inspect"], std::slice::from_ref(&p));
        let groups = v["traces"][0]["structure"]["groups"].as_array().unwrap();
        let a2a: Vec<_> = groups
            .iter()
            .filter(|g| {
                g["collectives"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c == "all_to_all")
            })
            .collect();
        assert_eq!(a2a.len(), 1, "{}: {groups:?}", p.display());
        assert_eq!(a2a[0]["class"], "other", "{}", p.display());
        assert!(
            groups.iter().all(|g| g["class"] != "pipeline"),
            "{}: no pipeline in a trace without pipeline stages: {groups:?}",
            p.display()
        );
        let t = text(&["inspect", path_str(&p)]);
        assert!(t.contains("other") && t.contains("all_to_all"), "{t}");
    }
    // A data-parallel edit re-times the all-reduces only; the all-to-alls
    // keep their traced time, and the prediction still runs.
    let v = lumos_json(&["predict", "--dp", "4"], std::slice::from_ref(&recsys));
    assert!(v["mean_predicted_ms"].as_f64().unwrap() > 0.0);
    // A pipeline edit is refused as before: no layers, whatever the groups.
    let out = lumos()
        .args(["predict", "--pp", "2"])
        .arg(&recsys)
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn issue_15_the_straggler_and_the_longest_step_are_told_apart() {
    let Some(dlrm) = corpus(DLRM) else { return };
    let t = text(&["replay", path_str(&dlrm)]);
    assert!(
        t.contains("  straggler: rank 7 kept the others waiting longest"),
        "{t}"
    );
    assert!(
        t.contains("longest step on rank (measured / replayed)"),
        "{t}"
    );
    assert!(!t.contains("slowest rank"), "{t}");
    assert!(
        t.contains("critical path: walked back from rank ")
            && t.contains("the last to finish (the job ends when it does)"),
        "{t}"
    );
}

#[test]
fn issue_15_unknown_values_print_as_a_dash_and_units_are_named() {
    let Some(recsys) = corpus(RECSYS) else { return };
    let p = path_str(&recsys);
    let inspect = text(&["inspect", p]);
    assert!(!inspect.contains('?'), "{inspect}");
    assert!(
        inspect.contains("(tp 1, pp 1, dp 8); - micro-batches; - layers per pass"),
        "{inspect}"
    );
    let predict = text(&["predict", p, "--dp", "4"]);
    assert!(!predict.contains('?'), "{predict}");
    assert!(
        !predict.contains(" 0 layers") && predict.contains("- layers, hidden -, ffn -"),
        "{predict}"
    );
    // The breakdown under the per-step table says it is the whole window.
    assert!(
        predict.contains("whole window, every step together (ms)"),
        "{predict}"
    );
    assert!(!predict.contains("breakdown per stage"), "{predict}");
}

#[test]
fn issue_15_long_lists_are_folded() {
    let Some(recsys) = corpus(RECSYS) else { return };
    let t = text(&["inspect", path_str(&recsys)]);
    let devices = t.lines().find(|l| l.contains("devices:")).unwrap();
    assert!(
        devices.ends_with("devices: NVIDIA A100-PG509-200 (0-7)"),
        "eight identical GPUs in one entry: {devices}"
    );
    let widest = t.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 160, "a line of {widest} characters:\n{t}");
}

#[test]
fn issue_15_a_step_without_passes_is_not_called_a_prologue() {
    let Some(recsys) = corpus(RECSYS) else { return };
    let t = text(&["inspect", path_str(&recsys)]);
    assert!(!t.contains("phase prologue"), "{t}");
    assert!(
        t.contains("phase whole step (no forward or backward pass found)"),
        "{t}"
    );
}

#[test]
fn issue_15_help_texts_speak_of_their_own_command() {
    let inspect = text(&["inspect", "--help"]);
    assert!(!inspect.contains("Replay every input"), "{inspect}");
    assert!(!inspect.contains("one joint replay in which"), "{inspect}");
    assert!(inspect.contains("matched across ranks"), "{inspect}");
    let report = text(&["report", "--help"]);
    assert!(report.contains("What-if (as `lumos predict`"), "{report}");
    for cmd in ["replay", "predict", "diff", "ingest", "synth", "demo"] {
        let h = text(&[cmd, "--help"]);
        assert!(h.contains(&format!("Usage: lumos {cmd}")), "{h}");
    }
}

/// `lumos --help` listed each command with its whole description, up to
/// 240 columns on one line, which a terminal of 80 broke mid-word. Each
/// command's line fits 80 columns now; its own `--help` keeps the details.
#[test]
fn the_command_list_fits_an_80_column_terminal() {
    let help = text(&["--help"]);
    let commands = help
        .split_once("Commands:\n")
        .and_then(|(_, rest)| rest.split_once("\n\n"))
        .expect("a Commands: section")
        .0;
    assert_eq!(commands.lines().count(), 9, "{commands}");
    for line in commands.lines() {
        assert!(line.chars().count() <= 80, "{} columns: {line}", line.len());
    }
    let inspect = text(&["inspect", "--help"]);
    assert!(inspect.contains("edges (found and inferred)"), "{inspect}");
    let predict = text(&["predict", "--help"]);
    assert!(predict.contains("interleaved virtual stages"), "{predict}");
}

/// Each command's own `--help` printed an option's description as one
/// line, up to 585 columns. Clap wraps it now to the terminal's width
/// (`COLUMNS` where there is no terminal, as here).
#[test]
fn every_help_text_wraps_to_the_terminal() {
    for cmd in [
        "inspect", "replay", "predict", "report", "synth", "diff", "demo", "ingest",
    ] {
        let out = lumos()
            .args([cmd, "--help"])
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        assert!(out.status.success());
        let h = String::from_utf8(out.stdout).unwrap();
        for line in h.lines() {
            assert!(line.chars().count() <= 80, "{cmd}: {line}");
        }
    }
}

/// The job's waiting table: its headings were narrower than their
/// `measured / replayed` pairs and each pair's second value was
/// left-aligned, so the columns drifted off their headings and rows ended
/// in spaces. Each pair now ends where its heading ends.
#[test]
fn the_waiting_table_lines_up_under_its_headings() {
    let Some(dlrm) = corpus(DLRM) else { return };
    let t = text(&["replay", path_str(&dlrm)]);
    let mut lines = t
        .lines()
        .skip_while(|l| !l.contains("waiting for peers, per rank"))
        .skip(1);
    let header = lines.next().unwrap();
    let ends: Vec<usize> = ["rank", "waited", "kept others waiting", "last to arrive"]
        .iter()
        .map(|h| header.find(h).unwrap() + h.len())
        .collect();
    let rows: Vec<&str> = lines.take_while(|l| l.contains(" / ")).collect();
    assert_eq!(rows.len(), 8, "{t}");
    for row in rows {
        assert_eq!(row.len(), header.len(), "{header}\n{row}");
        for &end in &ends {
            let b = row.as_bytes();
            assert!(b[end - 1] != b' ', "{header}\n{row}");
            assert!(end == b.len() || b[end] == b' ', "{header}\n{row}");
        }
    }
}

/// `lumos diff`'s operator and kernel tables: the `count A / B` pair's
/// second value was left-aligned, off its heading, and every row (and the
/// per-step table's heading) ended in spaces.
#[test]
fn the_diff_tables_line_up_and_end_without_spaces() {
    let Some(a) = corpus("single-rank/v100-resnet50-2021-capture-a.json.gz") else {
        return;
    };
    let b = corpus("single-rank/v100-resnet50-2021-capture-b.json.gz").unwrap();
    let t = text(&["diff", path_str(&a), path_str(&b)]);
    assert!(t.lines().all(|l| !l.ends_with(' ')), "{t}");
    let header = t.lines().find(|l| l.ends_with("count A / B")).unwrap();
    let rows: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with("    faster ") || l.starts_with("    slower "))
        .collect();
    assert!(rows.len() > 10, "{t}");
    for row in rows {
        assert_eq!(
            row.chars().count(),
            header.chars().count(),
            "{header}\n{row}"
        );
    }
}

#[test]
fn issue_15_dependencies_not_reattached_say_what_they_mean() {
    let dir = lumos_testkit::TempDir::new("cli-words-dropped");
    let traces = dir.path().join("synth");
    text(&[
        "synth",
        "--model",
        "gpt-tiny",
        "--pp",
        "2",
        "--out",
        path_str(&traces),
    ]);
    let t = text(&["predict", path_str(&traces), "--pp", "4"]);
    // One sentence, folded at its words.
    let line = sentence(&t, "dependencies not re-attached: ", 4)
        .unwrap_or_else(|| panic!("a --pp 4 rebuild drops a few dependencies:\n{t}"));
    assert!(too_wide(&t).is_empty(), "{t}");
    // A share of all dependencies, and what it does to the prediction.
    let (count, rest) = line
        .split_once("dependencies not re-attached: ")
        .unwrap()
        .1
        .split_once(" of ")
        .unwrap();
    let all: usize = rest.split_whitespace().next().unwrap().parse().unwrap();
    assert!(count.parse::<usize>().unwrap() < all, "{line}");
    assert!(line.contains("%) in the rebuilt stages"), "{line}");
    assert!(
        line.contains("waits only for its other dependencies"),
        "{line}"
    );
    assert!(line.contains("optimistic"), "{line}");
}

#[test]
fn issue_15_a_change_from_nothing_has_no_percentage() {
    let Some(a) = corpus("single-rank/v100-resnet50-2021-capture-a.json.gz") else {
        return;
    };
    let b = corpus("single-rank/v100-resnet50-2021-capture-b.json.gz").unwrap();
    let t = text(&["diff", path_str(&a), path_str(&b)]);
    assert!(!t.contains("-%"), "{t}");
    let overlapped = t
        .lines()
        .find(|l| l.trim_start().starts_with("overlapped"))
        .unwrap();
    assert!(overlapped.trim_end().ends_with(" -"), "{overlapped}");
}

#[test]
fn issue_15_the_report_page_tells_the_straggler_from_the_longest_step() {
    let Some(dlrm) = corpus(DLRM) else { return };
    let dir = lumos_testkit::TempDir::new("cli-words-report");
    let page = dir.path().join("dlrm.html");
    text(&["report", path_str(&dlrm), "-o", path_str(&page)]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<th>longest step on rank</th>"));
    assert!(!html.contains("slowest rank"));
    assert!(html.contains("The straggler is rank 7: it kept the others waiting longest"));
    assert!(html.contains("Walked back from rank "));
    assert!(html.contains("the last to finish the replay"));
}

/// The lines of `text` wider than a terminal of 120 columns, in
/// characters, but the "longest on path" line: it names one task whole
/// (an AMD GEMM kernel's name is 940 characters), by design.
fn too_wide(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.chars().count() > 120)
        .filter(|l| !l.trim_start().starts_with("longest on path: "))
        .collect()
}

/// Every line of `replay`, `inspect` and `predict` fits 120 columns on
/// every corpus trace, and so do `replay` and `predict` of a job and
/// `diff`: the per-step table ran to 155
/// columns, the critical path per step to 190 (206 on
/// v100-ddp-rank1of2-allreduce), the critical path's hop kinds to 186,
/// the job's per-collective table to 146, diff's to 131, inspect's
/// refusal of structural edits to 231, and predict's assumptions to 490,
/// its warning that the steps are not steady to 461, its confidence to
/// 412, a guessed group to 275, a network's calibration to 186, an
/// extrapolation to 180, the GEMM curve to 145 and an input's line to
/// 134.
#[test]
fn tables_fit_120_columns_on_every_corpus_trace() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let mut files = Vec::new();
    for dir in ["micro", "single-rank"] {
        for e in std::fs::read_dir(corpus.path(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.to_str().is_some_and(|s| s.ends_with(".json.gz")) {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    let mut wide = Vec::new();
    for f in &files {
        for cmd in ["replay", "inspect"] {
            let t = text(&[cmd, path_str(f)]);
            wide.extend(
                too_wide(&t)
                    .iter()
                    .map(|l| format!("{cmd} {}: {l}", f.display())),
            );
        }
    }
    let dlrm = corpus.path(DLRM);
    let job = text(&["replay", "--job", path_str(&dlrm)]);
    assert!(job.contains("per collective"), "{job}");
    wide.extend(too_wide(&job).iter().map(|l| format!("job: {l}")));
    let a = corpus.path("single-rank/v100-resnet50-2021-capture-a.json.gz");
    let b = corpus.path("single-rank/v100-resnet50-2021-capture-b.json.gz");
    let diff = text(&["diff", path_str(&a), path_str(&b)]);
    wide.extend(too_wide(&diff).iter().map(|l| format!("diff: {l}")));
    // predict of each trace to another data or tensor degree, or onto
    // another network, where the trace allows the edit (a refusal prints
    // nothing on stdout), and of the DLRM job.
    let mut predicted = 0;
    for f in &files {
        for flags in [["--dp", "4"], ["--tp", "2"], ["--network", "h100"]] {
            let out = lumos().arg("predict").args(flags).arg(f).output().unwrap();
            let t = String::from_utf8(out.stdout).unwrap();
            if out.status.success() {
                assert!(t.contains("\n  confidence: "), "{t}");
                predicted += 1;
            }
            wide.extend(
                too_wide(&t)
                    .iter()
                    .map(|l| format!("predict {} {}: {l}", flags.join(" "), f.display())),
            );
        }
    }
    // The DDP, recsys and ResNet traces, each onto an H100 network at least.
    assert!(predicted >= 12, "{predicted} predictions");
    for flags in [["--dp", "16"], ["--network", "h100"]] {
        let t = text(&["predict", flags[0], flags[1], path_str(&dlrm)]);
        wide.extend(too_wide(&t).iter().map(|l| format!("predict job: {l}")));
    }
    assert!(
        wide.is_empty(),
        "lines over 120 columns:\n{}",
        wide.join("\n")
    );
}

/// The collectives table's headings sat up to seven columns off their
/// values (`ranks` over the algorithm, `RING/SIMPLE` pushing the counts
/// right); each now ends where its right-aligned column ends.
#[test]
fn the_collectives_table_lines_up_under_its_headings() {
    let Some(dlrm) = corpus(DLRM) else { return };
    let t = text(&["replay", path_str(&dlrm.join("rank0.json.gz"))]);
    let mut lines = t.lines().skip_while(|l| !l.starts_with("  collectives "));
    let heading = lines.next().expect("a collectives table");
    let rows: Vec<&str> = lines.take_while(|l| l.starts_with("    ")).collect();
    assert!(rows.len() >= 2, "{t}");
    let end_of = |line: &str, word: &str| line.find(word).map(|i| i + word.len());
    for row in rows {
        // Where each field of the row ends: name, group, ranks, algorithm,
        // calls, ...
        let ends: Vec<usize> = (row.char_indices().zip(row.chars().skip(1)))
            .filter(|&((_, c), next)| c != ' ' && next == ' ')
            .map(|((i, _), _)| i + 1)
            .collect();
        assert_eq!(Some(ends[2]), end_of(heading, "ranks"), "{heading}\n{row}");
        assert_eq!(Some(ends[4]), end_of(heading, "calls"), "{heading}\n{row}");
    }
}

/// `--top 0` asks for no rows: no table of top rows, not their headings
/// alone; the tables that are not cut by `--top` stay.
#[test]
fn top_zero_prints_no_empty_table() {
    let Some(a) = corpus("single-rank/v100-resnet50-2021-capture-a.json.gz") else {
        return;
    };
    let ddp = corpus("single-rank/v100-ddp-rank1of2-allreduce.json.gz").unwrap();
    let headings = [
        "  top GPU tasks (",
        "  GPU time by launching operator (",
        "  collectives                 group",
    ];
    let t = text(&["replay", path_str(&ddp)]);
    for heading in headings {
        assert!(t.contains(heading), "{heading}: {t}");
    }
    let t = text(&["replay", path_str(&ddp), "--top", "0"]);
    for heading in headings {
        assert!(!t.contains(heading), "{heading}: {t}");
    }
    assert!(t.contains("per step (measured, % of step)"), "{t}");
    assert!(t.contains("critical path per step (replayed)"), "{t}");
    let b = corpus("single-rank/v100-resnet50-2021-capture-b.json.gz").unwrap();
    let d = text(&["diff", path_str(&a), path_str(&b), "--top", "0"]);
    assert!(!d.contains("count A / B"), "{d}");
    assert!(d.contains("more (--top, or --json for all)"), "{d}");
}

/// A trace without steps has its phases' time in all, not "per step" of
/// steps it does not have.
#[test]
fn phases_of_a_trace_without_steps_are_not_per_step() {
    let Some(add) = corpus("micro/a100-simple-add.json.gz") else {
        return;
    };
    let t = text(&["inspect", path_str(&add)]);
    let phase = t
        .lines()
        .find(|l| l.contains("phase outside steps"))
        .unwrap();
    assert!(phase.ends_with(" ms in all (no steps)"), "{phase}");
    let Some(a) = corpus("single-rank/v100-resnet50-2021-capture-a.json.gz") else {
        return;
    };
    let t = text(&["inspect", path_str(&a)]);
    assert!(
        t.lines()
            .filter(|l| l.contains("    phase "))
            .all(|l| l.ends_with(" ms per step")),
        "{t}"
    );
}

/// A prediction from one stage of a pipeline job says that what the
/// untraced stages send keeps its measured times: a GEMM speed-up moved
/// this step -0.28% from one stage, -13.6% from both, and the assumption
/// named only the layers.
#[test]
fn a_prediction_from_one_pipeline_stage_says_the_others_keep_their_times() {
    let dir = lumos_testkit::TempDir::new("cli-words-one-stage");
    let traces = dir.path().join("synth");
    text(&[
        "synth",
        "--model",
        "gpt-tiny",
        "--pp",
        "2",
        "--out",
        path_str(&traces),
    ]);
    let rank0 = traces.join("rank0.json.gz");
    let t = text(&[
        "predict",
        "--scale-kernels",
        "class:gemm=0.5",
        path_str(&rank0),
    ]);
    let line = sentence(&t, "assumption: only 1 of 2 pipeline stages traced: ", 4)
        .unwrap_or_else(|| panic!("one stage of two:\n{t}"));
    assert!(
        line.contains(
            "what comes from the untraced stages (the pipeline transfers they send, their \
             timing) keeps its measured times, so an edit moves the step less than it would \
             with one trace per stage"
        ),
        "{line}"
    );
    assert!(too_wide(&t).is_empty(), "{t}");
}

/// The rows of the table under the heading that starts with `heading`
/// (its lines indented four spaces), each cut to its first `width`
/// characters (the name column), trimmed.
fn name_column<'t>(text: &'t str, heading: &str, width: usize) -> Vec<Vec<String>> {
    let lines: Vec<&'t str> = text.lines().collect();
    let mut tables = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !l.starts_with(heading) {
            continue;
        }
        let rows = lines[i + 1..]
            .iter()
            .take_while(|r| r.starts_with("    "))
            .map(|r| {
                r.chars()
                    .skip(4)
                    .take(width)
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect();
        tables.push(rows);
    }
    tables
}

/// Long kernel and operator names cut at the end read alike (five rows
/// of `void at::native::vectorized_elementwise_kernel<4, at::native:…` on
/// DLRM): each row of the top GPU tasks and operators tables names its
/// own kernel, on the corpus traces whose names collided, and a long C++
/// name is shown without its `void` and namespaces.
#[test]
fn long_names_in_the_top_tables_stay_apart() {
    let Some(dlrm) = corpus(DLRM) else {
        return;
    };
    let mut files = vec![dlrm.join("rank0.json.gz"), dlrm.join("rank1.json.gz")];
    for rel in [
        RECSYS,
        "single-rank/rtx2080ti-linear-train.json.gz",
        "single-rank/amd-vllm-decode-graph-launch.json.gz",
        "single-rank/h100-vit-inference.json.gz",
        "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
    ] {
        files.push(corpus(rel).unwrap());
    }
    for f in &files {
        let t = text(&["replay", "--top", "20", path_str(f)]);
        for (heading, width) in [
            ("  top GPU tasks (", 62),
            ("  GPU time by launching operator (", 40),
        ] {
            let tables = name_column(&t, heading, width);
            assert_eq!(tables.len(), 1, "{}: {heading}\n{t}", f.display());
            let rows = &tables[0];
            assert!(rows.len() >= 5, "{}: {rows:?}", f.display());
            let mut seen = std::collections::HashSet::new();
            for r in rows {
                assert!(seen.insert(r), "{}: {r} twice in {rows:?}", f.display());
                assert!(!r.starts_with("void "), "{}: {r}", f.display());
                assert!(r.chars().count() <= width, "{}: {r}", f.display());
            }
        }
    }
    let t = text(&["replay", path_str(&files[0])]);
    let kernels = &name_column(&t, "  top GPU tasks (", 62)[0];
    assert!(
        kernels
            .contains(&"vectorized_elementwise_kernel<4, sqrt_kernel_cuda, Array<char…".to_owned()),
        "{kernels:?}"
    );
}

/// The critical path's "most on it" names what a user can act on: the
/// host's time between operators in the step's own annotation is
/// `(host time between ops)`, never the step (`ProfilerStep#4 47.0%` on
/// this trace, `ProfilerStep#2 100.0%` on the MI250 one).
#[test]
fn the_critical_path_never_names_the_step_as_most_on_it() {
    let (Some(ddp), Some(mi250)) = (
        corpus("single-rank/a100-ddp-rank0of2-event-record.json.gz"),
        corpus("single-rank/mi250-toy-train.json.gz"),
    ) else {
        return;
    };
    for f in [ddp, mi250] {
        let t = text(&["replay", "--top", "0", path_str(&f)]);
        let rows = name_column(&t, "  critical path per step (replayed)", 200);
        let rows = &rows[0][1..];
        assert!(!rows.is_empty(), "{t}");
        for r in rows {
            let step = r.split_whitespace().next().unwrap();
            // After the three shares: the name and its share.
            let most = &r[r.match_indices('%').nth(2).unwrap().0 + 1..];
            assert!(!most.contains(step), "{}: {r}", f.display());
            assert!(!most.contains("(no operator)"), "{}: {r}", f.display());
        }
        assert!(
            rows.iter().any(|r| r.contains("(host time between ops) ")),
            "{}: {rows:?}",
            f.display()
        );
    }
}

/// Every table of a job's replay that shows both runs says
/// `measured / replayed`, and its cells follow (the per-collective table
/// said `replayed [measured]`).
#[test]
fn a_job_shows_measured_then_replayed_everywhere() {
    let Some(dlrm) = corpus(DLRM) else {
        return;
    };
    // Rank 0 five times slower: the replay differs from the measurement.
    let what_if = ["--scale-rank", "0=5", "--scale-rank-cpu"];
    let mut args = vec!["replay", "--job"];
    args.extend(what_if);
    args.push(path_str(&dlrm));
    let t = text(&args);
    assert!(!t.contains('['), "{t}");
    assert!(!t.contains("replayed / measured"), "{t}");
    let at = t
        .lines()
        .position(|l| l.starts_with("  per collective (measured / replayed): "))
        .unwrap_or_else(|| panic!("{t}"));
    let rows: Vec<&str> = t
        .lines()
        .skip(at + 2)
        .take_while(|l| l.starts_with("    "))
        .collect();
    let mut json_args = vec!["replay", "--job"];
    json_args.extend(what_if);
    let v = lumos_json(&json_args, std::slice::from_ref(&dlrm));
    let cols = v["job"]["collectives"].as_array().unwrap();
    assert_eq!(rows.len(), cols.len(), "{t}");
    let mut differ = 0;
    for (row, c) in rows.iter().zip(cols) {
        let (m, r) = (&c["measured"], &c["replayed"]);
        let pair = |k: &str| {
            format!(
                "{:>3} / {:>3}",
                m[k].as_i64().unwrap(),
                r[k].as_i64().unwrap()
            )
        };
        let skew = format!(
            "{:>8.3} / {:>8.3}",
            m["skew_us"].as_f64().unwrap() / 1e3,
            r["skew_us"].as_f64().unwrap() / 1e3
        );
        assert!(row.contains(&pair("last_rank")), "{row}");
        assert!(row.contains(&skew), "{skew:?} in {row}");
        differ += usize::from(m["skew_us"] != r["skew_us"]);
    }
    assert!(differ > 0, "{t}");
}
