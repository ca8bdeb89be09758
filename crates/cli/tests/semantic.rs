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

/// A window of zero length has no shares: the per-step breakdown, the
/// HTA view and the kernel and operator shares are `null` in JSON and `-`
/// in the tables (each was 0.0%); its critical path, of no length, has no
/// verdict (it said "CPU-bound, CPU 0.0%" from three zeros); and the HTML
/// report names no bound (it said "idle-bound", GPU idle 0%).
#[test]
fn a_window_of_zero_length_has_no_shares_and_no_bound() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-semantic-zero-shares");
    let file = zero_times(&corpus, dir.path());
    let out = run_ok(lumos().args(["replay", "--json"]).arg(&file));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = &v["traces"][0]["analysis"];
    let step = &a["measured"]["steps"][0];
    assert_eq!(step["span_us"].as_f64(), Some(0.0), "{step}");
    for key in [
        "exposed_compute_pct",
        "overlapped_pct",
        "exposed_comm_pct",
        "idle_pct",
    ] {
        assert!(step[key].is_null(), "{key}: {step}");
    }
    let hta = &a["measured"]["hta"];
    for key in ["idle_pct", "compute_pct", "non_compute_pct"] {
        assert!(hta[key].is_null(), "{key}: {hta}");
    }
    let kernels = a["measured"]["kernels"].as_array().unwrap();
    assert!(!kernels.is_empty());
    assert!(
        kernels.iter().all(|k| k["share_pct"].is_null()),
        "{kernels:?}"
    );
    let ops = a["measured"]["operators"].as_array().unwrap();
    assert!(ops.iter().all(|o| o["share_pct"].is_null()), "{ops:?}");
    let path = &a["critical_path"][0];
    assert_eq!(path["length_us"].as_f64(), Some(0.0), "{path}");
    for key in ["verdict", "cpu_pct", "gpu_compute_pct", "communication_pct"] {
        assert!(path[key].is_null(), "{key}: {path}");
    }

    let out = run_ok(lumos().arg("replay").arg(&file));
    let text = String::from_utf8(out.stdout).unwrap();
    let row = |start: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start} in {text}"))
    };
    // The per-step row: the span, then four shares and the hidden share.
    let window = row("window ");
    let cells: Vec<&str> = window.split_whitespace().collect();
    assert_eq!(
        &cells[..7],
        ["window", "0.000", "-", "-", "-", "-", "|"],
        "{window}"
    );
    assert!(!text.contains("CPU-bound"), "{text}");
    let path = text
        .lines()
        .skip_while(|l| !l.contains("critical path per step"))
        .nth(2)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(path.contains("path of no length"), "{path}");
    assert!(!path.contains('%'), "{path}");
    // Shown compacted (lumos_report::text::short): no `void`, no namespaces.
    let kernel = row("vectorized_elementwise_kernel<");
    assert_eq!(kernel.split_whitespace().last(), Some("-"), "{kernel}");

    let html = dir.path().join("zero.html");
    run_ok(lumos().arg("report").arg(&file).arg("-o").arg(&html));
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains("id=\"verdict\"><b>no measured time</b>"),
        "{html}"
    );
    assert!(!html.contains("idle-bound"));
    // The step table's four shares of each side are `-` (they were 0.0%).
    assert!(
        html.contains("<td>0.000</td><td>0.000</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td></tr>"),
        "{html}"
    );
    assert!(!html.contains("<td>0.0%</td>"), "{html}");
}

/// A prediction from a trace with no GEMM and no collective states no
/// model error (it said "mean error 0.0%", a perfect fit of nothing), and
/// one from a window of no length no share of GPU time or of the critical
/// path (it said "GPU time 0.0% measured, ... up to 0.0% of a step").
#[test]
fn a_prediction_states_no_error_or_share_of_nothing() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    // The real trace: it has no GEMM and no collective.
    let real = corpus.path("micro/a100-simple-add.json.gz");
    let args = ["predict", "--scale-kernels", "add=0.5"];
    let out = run_ok(lumos().args(args).arg("--json").arg(&real));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let gemm = &v["calibration"]["gemm"];
    assert_eq!(gemm["samples"], 0, "{gemm}");
    assert!(gemm["mean_abs_error_pct"].is_null(), "{gemm}");
    let links = v["calibration"]["network"].as_array().unwrap();
    assert!(!links.is_empty());
    for l in links {
        assert_eq!(l["samples"], 0, "{l}");
        assert!(l["mean_abs_error_pct"].is_null(), "{l}");
    }
    let models = v["confidence"]["models"].as_array().unwrap();
    assert!(
        models.iter().all(|m| m["mean_abs_error_pct"].is_null()),
        "{models:?}"
    );
    // It has GPU time: those shares stay numbers.
    assert!(v["confidence"]["measured_gpu_pct"].is_number());

    let out = run_ok(lumos().args(args).arg(&real));
    let text = String::from_utf8(out.stdout).unwrap();
    let gemm = text
        .lines()
        .find(|l| l.trim_start().starts_with("GEMM curve:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        gemm.starts_with("  GEMM curve: no GEMM matched, max efficiency"),
        "{gemm}"
    );
    assert!(!gemm.contains("mean error"), "{gemm}");
    for l in text
        .lines()
        .filter(|l| l.trim_start().starts_with("network "))
    {
        assert!(l.contains("mean error - "), "{l}");
    }

    let dir = TempDir::new("cli-semantic-zero-predict-shares");
    let file = zero_times(&corpus, dir.path());
    let out = run_ok(lumos().args(args).arg("--json").arg(&file));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["confidence"];
    for key in [
        "measured_gpu_pct",
        "scaled_gpu_pct",
        "modelled_gpu_pct",
        "max_inferred_critical_path_pct",
    ] {
        assert!(c[key].is_null(), "{key}: {c}");
    }
    let per_step = c["inferred_critical_path_pct"].as_array().unwrap();
    assert!(
        !per_step.is_empty() && per_step.iter().all(Value::is_null),
        "{c}"
    );
    let out = run_ok(lumos().args(args).arg(&file));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("    no predicted GPU time; no critical path of any length\n"),
        "{text}"
    );
}

/// Two traces whose tasks have no duration: A has no task time, so no
/// share of it matched B; the refusal counts tasks (it said "only 0.0% of
/// the task time ... (CPU 100.0%, GPU 100.0%)").
#[test]
fn durations_from_a_trace_without_task_time_is_refused_in_counts() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-semantic-zero-durations-from");
    let file = zero_times(&corpus, dir.path());
    for cmd in ["replay", "predict"] {
        let out = lumos()
            .arg(cmd)
            .arg(&file)
            .arg("--durations-from")
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("have no duration, so no share of its task time"),
            "{err}"
        );
        assert!(
            err.contains("(CPU 51 of 51 tasks, GPU 4 of 4 tasks matched"),
            "{err}"
        );
        assert!(!err.contains('%'), "{err}");
    }
}
