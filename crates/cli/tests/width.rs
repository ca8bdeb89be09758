//! The text output fits the width asked for (`COLUMNS` here, where there
//! is no terminal), as `--help` does: every line of `demo`, `inspect`,
//! `replay` (one rank, `--job` and `--durations-from`), `predict` and
//! `diff` at 80 columns, with every measured value of the output at its
//! default width still there. Without a width the output is as it was,
//! and `--json` never changes.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::lumos;
use lumos_testkit::TempDir;

/// `lumos ARGS` on stdout with `COLUMNS` set to `columns` (or unset); it
/// must succeed.
fn text(args: &[String], columns: Option<&str>) -> String {
    let mut cmd = lumos();
    cmd.args(args);
    if let Some(c) = columns {
        cmd.env("COLUMNS", c);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "lumos {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The values a person reads in `text`: every decimal number (`22.252`,
/// `-1.79%`), as written. Names are left out: the narrow tables shorten
/// them as the wide ones do.
fn values(text: &str) -> BTreeSet<&str> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| "(),;:".contains(c)))
        .filter(|w| {
            let n = w.trim_start_matches(['+', '-']).trim_end_matches('%');
            n.split_once('.').is_some_and(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && a.chars().all(|c| c.is_ascii_digit())
                    && b.chars().all(|c| c.is_ascii_digit())
            })
        })
        .collect()
}

/// Asserts that no line of `narrow` is wider than `width` characters, and
/// that every value of `wide` (the same output at the default width) is in
/// it.
fn fits(args: &[String], width: usize) -> String {
    let wide = text(args, None);
    let narrow = text(args, Some(&width.to_string()));
    for line in narrow.lines() {
        assert!(
            line.chars().count() <= width,
            "{args:?} at {width}: {} columns:\n{line}\n\n{narrow}",
            line.chars().count()
        );
    }
    let (before, after) = (values(&wide), values(&narrow));
    let lost: Vec<_> = before.difference(&after).collect();
    assert!(
        lost.is_empty(),
        "{args:?} at {width} lost {lost:?}:\n{narrow}"
    );
    assert!(before.len() > 10, "{args:?}: too few values to compare");
    narrow
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// A corpus file, or `None` when the corpus is absent.
fn corpus(rel: &str) -> Option<String> {
    let p: PathBuf = lumos_testkit::corpus()?.path(rel);
    Some(p.to_str().unwrap().to_owned())
}

#[test]
fn the_demo_fits_80_columns_and_keeps_every_value() {
    let dir = TempDir::new("width-demo");
    let a = args(&["demo", "--out", dir.path().to_str().unwrap()]);
    let out = fits(&a, 80);
    // The collectives' table, two lines a collective: every bandwidth.
    assert!(out.contains("algorithm RING/LL, algbw 372.68 GB/s, busbw 186.34 GB/s"));
    for key in [
        "ncclDevKernel_SendRecv",
        "record_param_comms",
        "ProfilerStep#2",
        "_reduce_scatter_base",
        "runtime_sync 0.11",
        "idle.",
    ] {
        assert!(out.contains(key), "{key} missing:\n{out}");
    }
    // The critical path's heaviest cause stays on one line, its share
    // with it (the share itself moves with the synthesizer's models).
    assert!(
        out.lines().any(|l| {
            let l = l.trim();
            l.strip_prefix("most on it: (host time between ops) ")
                .and_then(|r| r.strip_suffix("% of path"))
                .is_some_and(|share| share.parse::<f64>().is_ok())
        }),
        "the path's heaviest cause is cut:\n{out}"
    );
    // Too narrow a width is taken as the narrowest the tables are laid
    // out for.
    for line in text(&a, Some("20")).lines() {
        assert!(line.chars().count() <= 60, "{line}");
    }
}

#[test]
fn without_a_width_the_demo_prints_as_before() {
    let dir = TempDir::new("width-default");
    let a = args(&["demo", "--out", dir.path().to_str().unwrap()]);
    let plain = text(&a, None);
    // The wide tables, one line a row, as they always were.
    assert!(plain.contains(
        "  collectives                 group      ranks  algorithm        calls   total ms    \
         mean us   algbw GB/s  busbw GB/s\n"
    ));
    assert!(plain.lines().any(|l| l.chars().count() > 110));
    // A width of 120 or more, or a COLUMNS that is no number, changes
    // nothing.
    for c in ["120", "200", "wide", ""] {
        assert_eq!(text(&a, Some(c)), plain, "COLUMNS={c}");
    }
    // Nor does any width change the JSON.
    let mut json = a.clone();
    json.push("--json".into());
    assert_eq!(text(&json, Some("80")), text(&json, None));
}

#[test]
fn inspect_and_replay_of_a_rank_fit_80_columns() {
    let Some(recsys) = corpus("single-rank/a100-recsys-rank3of8.json.gz") else {
        return;
    };
    fits(&args(&["inspect", &recsys]), 80);
    let out = fits(&args(&["replay", &recsys]), 80);
    assert!(out.contains("algorithm RING/SIMPLE, algbw - GB/s, busbw - GB/s"));
    assert!(out.contains("ProfilerStep#1009"));
}

#[test]
fn a_job_fits_80_columns() {
    let Some(dlrm) = corpus("multi-rank/dlrm-8xv100") else {
        return;
    };
    fits(&args(&["inspect", "--job", &dlrm]), 80);
    let out = fits(&args(&["replay", "--job", &dlrm]), 80);
    assert!(out.contains("transfer 86.0 / 86.0 us, end spread 4.5 / 4.5 us"));
    fits(&args(&["replay", "--job", &dlrm]), 60);
}

#[test]
fn predict_and_diff_fit_80_columns() {
    let (Some(ddp), Some(a), Some(b)) = (
        corpus("single-rank/a100-ddp-rank0of2-event-record.json.gz"),
        corpus("single-rank/v100-resnet50-2021-capture-a.json.gz"),
        corpus("single-rank/v100-resnet50-2021-capture-b.json.gz"),
    ) else {
        return;
    };
    fits(&args(&["predict", &ddp, "--dp", "4"]), 80);
    let out = fits(&args(&["diff", &a, &b]), 80);
    assert!(out.contains("ProfilerStep#5 / ProfilerStep#16"), "{out}");
    let out = fits(&args(&["replay", &a, "--durations-from", &b]), 80);
    assert!(
        out.contains("  ProfilerStep#10      180.497   167.125"),
        "{out}"
    );
}

/// Data on standard output is never folded: `report -o -`'s page (its CSS
/// was cut mid-word at 80 columns) and the paths `synth` lists, one per
/// line, however long.
#[test]
fn data_on_stdout_is_not_folded() {
    let Some(trace) = corpus("micro/a100-simple-add.json.gz") else {
        return;
    };
    let report = args(&["report", &trace, "-o", "-"]);
    assert_eq!(text(&report, Some("80")), text(&report, None));
    let tmp = TempDir::new("width-synth");
    let deep = tmp
        .path()
        .join("a_folder_name_long_enough_to_pass_eighty_columns_by_itself_here");
    let synth = vec![
        "synth".to_owned(),
        "--model".to_owned(),
        "gpt-tiny".to_owned(),
        "--out".to_owned(),
        deep.display().to_string(),
    ];
    let listed = text(&synth, Some("60"));
    for line in listed.lines() {
        assert!(std::path::Path::new(line).is_file(), "not a path: {line}");
    }
}
