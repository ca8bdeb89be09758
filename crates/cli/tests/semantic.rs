//! Well-formed traces whose content no run could have, end to end.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use common::{lumos, run_ok};
use lumos_testkit::TempDir;
use serde_json::Value;

/// A trace whose every `ts` and `dur` is zero measures a window of zero
/// length: it has no relative error, so the summary counts no step (it
/// gave "mean |error| 0.00% over 1 steps", an agreement nothing measured),
/// the window's error is `null` in JSON and `-` in the tables (it was
/// 0.00%, a number where the question has no answer).
#[test]
fn a_trace_of_zero_times_adds_no_error_to_the_summary() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-semantic-zero");
    let file = zero_times(&corpus, dir.path());
    let out = run_ok(lumos().args(["replay", "--json"]).arg(&file));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["traces"][0]["window"]["measured_us"].as_f64(), Some(0.0));
    let summary = &v["summary"];
    assert_eq!(summary["steps"], 0, "{summary}");
    assert!(summary["mean_abs_error_pct"].is_null(), "{summary}");
    assert!(summary["flagged_mean_abs_error_pct"].is_null(), "{summary}");
    let window = &v["traces"][0]["window"];
    assert!(window["error_pct"].is_null(), "{window}");

    let out = run_ok(lumos().arg("replay").arg(&file));
    let text = String::from_utf8(out.stdout).unwrap();
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("whole window"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(row.split_whitespace().last(), Some("-"), "{row}");
    assert!(!row.contains('%'), "{row}");
    assert!(
        text.contains("summary: no error: no unflagged step or window has a measured length"),
        "{text}"
    );

    // The HTML report's step table and verdict say the same.
    let html = dir.path().join("zero.html");
    run_ok(lumos().arg("report").arg(&file).arg("-o").arg(&html));
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains("<td>0.000</td><td>0.000</td><td>-</td>"),
        "{html}"
    );
    assert!(!html.contains("mean |error|"));
    assert!(html.contains("No step below has a measured length"));
}

/// A corpus trace with every `ts` and `dur` set to zero, written into
/// `dir`.
fn zero_times(corpus: &lumos_testkit::Corpus, dir: &std::path::Path) -> std::path::PathBuf {
    let path = corpus.path("micro/a100-simple-add.json.gz");
    let mut v: Value = serde_json::from_slice(&lumos_testkit::gunzip_file(&path)).unwrap();
    for e in v["traceEvents"].as_array_mut().unwrap() {
        for key in ["ts", "dur"] {
            if e.get(key).is_some() {
                e[key] = Value::from(0);
            }
        }
    }
    let file = dir.join("zero.json");
    std::fs::write(&file, serde_json::to_vec(&v).unwrap()).unwrap();
    file
}

/// A prediction from a window replayed at zero length has no change to
/// state: `null` in JSON, `-` in the table (it printed 0.00%, no change,
/// whatever was predicted).
#[test]
fn a_prediction_from_a_window_of_zero_length_states_no_change() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-semantic-zero-predict");
    let file = zero_times(&corpus, dir.path());
    let args = ["predict", "--scale-kernels", "add=0.5"];
    let out = run_ok(lumos().args(args).arg("--json").arg(&file));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["mean_replayed_ms"].as_f64(), Some(0.0), "{v}");
    assert!(v["change_pct"].is_null(), "{}", v["change_pct"]);
    let steps = v["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    assert!(steps.iter().all(|s| s["change_pct"].is_null()), "{steps:?}");

    let out = run_ok(lumos().args(args).arg(&file));
    let text = String::from_utf8(out.stdout).unwrap();
    let mean = text
        .lines()
        .find(|l| l.trim_start().starts_with("mean "))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(mean.split_whitespace().last(), Some("-"), "{mean}");
}
