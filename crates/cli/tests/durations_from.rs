//! End-to-end tests of `--durations-from` (issue 10, item 6): one
//! recording's graph re-timed with another's durations, on the pairs and
//! with the bounds of docs/ACCURACY.md.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::path::{Path, PathBuf};

use common::{lumos, lumos_json as json, run_ok};
use lumos_testkit::TempDir;
use serde_json::Value;

/// `lumos replay A --durations-from B --json`.
fn transfer(a: &Path, b: &Path) -> Value {
    json(
        &["replay", "--durations-from", b.to_str().unwrap()],
        &[a.into()],
    )
}

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut v = v;
    for p in path {
        v = &v[*p];
    }
    v.as_f64()
        .unwrap_or_else(|| panic!("{path:?} is not a number: {v}"))
}

/// `lumos synth --model gpt-small` on `gpu` with `extra` flags: its rank 0.
fn synth(dir: &Path, gpu: &str, extra: &[&str]) -> PathBuf {
    run_ok(
        lumos()
            .args(["synth", "--model", "gpt-small", "--gpu", gpu])
            .args(extra)
            .arg("--out")
            .arg(dir),
    );
    dir.join("rank0.json.gz")
}

#[test]
fn issue_10_resnet50_capture_a_with_capture_b_durations_predicts_capture_b() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let a = corpus.path("single-rank/v100-resnet50-2021-capture-a.json.gz");
    let b = corpus.path("single-rank/v100-resnet50-2021-capture-b.json.gz");
    let r = transfer(&a, &b);
    assert!(num(&r, &["matched", "share"]) > 0.999, "{}", r["matched"]);
    assert!(num(&r, &["matched", "cpu_share"]) > 0.999);
    assert!(num(&r, &["matched", "gpu_share"]) > 0.999);
    assert_eq!(r["mean"]["steps"], 6);
    // A alone is 13.8% from B; with B's durations, within 0.01%.
    assert!(num(&r, &["mean", "a_error_pct"]) > 10.0);
    assert!(
        num(&r, &["mean", "error_pct"]).abs() < 0.01,
        "{}",
        r["mean"]
    );
    for s in r["steps"].as_array().unwrap() {
        assert!(num(s, &["b", "error_pct"]).abs() < 0.05, "{s}");
    }
    // The main thread pairs with the main thread.
    let threads = r["matched"]["threads"].as_array().unwrap();
    assert_eq!(threads[0]["a"], "25738/25738");
    assert_eq!(threads[0]["b"], "25738/25738");
}

#[test]
fn issue_10_dlrm_ranks_predict_each_other() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rank = |i: usize| corpus.path(&format!("multi-rank/dlrm-8xv100/rank{i}.json.gz"));
    for i in 0..8 {
        let j = (i + 1) % 8;
        let r = transfer(&rank(i), &rank(j));
        let share = num(&r, &["matched", "share"]);
        let error = num(&r, &["mean", "error_pct"]);
        // docs/ACCURACY.md: shares 95.7-97.7%, errors within 0.93%.
        assert!(share > 0.95, "rank{i} <- rank{j}: matched {share}");
        assert!(error.abs() < 1.5, "rank{i} <- rank{j}: error {error}%");
    }
    // The worst of the 56 ordered pairs (2.61%).
    let r = transfer(&rank(3), &rank(7));
    assert!(num(&r, &["mean", "error_pct"]).abs() < 3.5, "{}", r["mean"]);
}

#[test]
fn issue_10_a_synthesized_job_on_another_gpu_reproduces_its_replay() {
    let dir = TempDir::new("durations-from-synth");
    let a = synth(&dir.path().join("a100"), "a100", &[]);
    let b = synth(&dir.path().join("h100"), "h100", &[]);
    let stripped = synth(
        &dir.path().join("h100-stripped"),
        "h100",
        &["--no-cuda-sync-events", "--no-event-records"],
    );
    for b in [&b, &stripped] {
        let r = transfer(&a, b);
        assert_eq!(num(&r, &["matched", "share"]), 1.0, "{}", r["matched"]);
        assert!(
            num(&r, &["mean", "replay_error_pct"]).abs() < 0.01,
            "{}",
            r["mean"]
        );
        assert!(num(&r, &["mean", "a_error_pct"]) > 100.0, "{}", r["mean"]);
    }
    // `lumos predict` with no edit predicts what the transfer replays.
    let p = json(
        &["predict", "--durations-from", b.to_str().unwrap()],
        std::slice::from_ref(&a),
    );
    let predicted = num(&p, &["durations_from", "mean", "predicted_us"]) / 1e3;
    let mean = num(&p, &["mean_predicted_ms"]);
    assert!(
        (mean - predicted).abs() < 1e-3 * predicted,
        "{mean} vs {predicted}"
    );
    assert!(p["steps"].is_array());
}

#[test]
fn a_prediction_with_another_gpu_s_durations_is_on_that_gpu() {
    // The audit's pair: the same job on an H100 and an A100. The durations
    // come from the A100 recording, so its GPU (peak, efficiency) and its
    // network presets must be the prediction's too: predicting from the
    // H100 graph with the A100 durations is predicting from the A100
    // recording itself, the programs being the same to the operator.
    let dir = TempDir::new("durations-from-hardware");
    let job = ["--tp", "2", "--dp", "2", "--steps", "3"];
    let h100 = synth(&dir.path().join("h100"), "h100", &job);
    let a100 = synth(&dir.path().join("a100"), "a100", &job);
    let out = dir.path().join("out");
    let across = json(
        &[
            "predict",
            "--dp",
            "8",
            "--durations-from",
            a100.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        std::slice::from_ref(&h100),
    );
    let own = json(&["predict", "--dp", "8"], std::slice::from_ref(&a100));
    let (p, q) = (
        num(&across, &["mean_predicted_ms"]),
        num(&own, &["mean_predicted_ms"]),
    );
    assert!((p - q).abs() < 1e-6 * q, "{p} vs the A100's own {q}");
    let gemm = &across["calibration"]["gemm"];
    assert_eq!(gemm["gpu"], "a100", "{gemm}");
    assert_eq!(
        gemm["peak_tflops"],
        own["calibration"]["gemm"]["peak_tflops"]
    );
    assert_eq!(across["calibration"]["network_start"], "preset a100");
    assert_eq!(
        across["calibration"]["network"],
        own["calibration"]["network"]
    );
    // Said, with what A recorded.
    let notes = across["durations_from"]["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .filter_map(Value::as_str)
            .any(|n| n.contains("on B's hardware")
                && n.contains("GPU \"NVIDIA A100")
                && n.contains("A: GPU \"NVIDIA H100")),
        "{notes:?}"
    );
    // The predicted timeline lists the GPUs its durations ran on (its
    // tracks keep A's names and labels: display, not hardware).
    let timeline = lumos_testkit::gunzip_file(&out.join("rank0.predicted.json.gz"));
    let timeline: Value = serde_json::from_slice(&timeline).unwrap();
    let devices = timeline["deviceProperties"].as_array().unwrap();
    assert!(!devices.is_empty());
    for d in devices {
        assert_eq!(d["name"], "NVIDIA A100-SXM4-80GB", "{d}");
    }
}

/// Runs `lumos ARGS`, expecting a usage error; its stderr.
fn usage_error(args: &[&str]) -> String {
    let out = lumos().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "lumos {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn issue_10_another_program_is_refused_with_its_matched_share() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let b = corpus.path("single-rank/v100-resnet50-2021-capture-a.json.gz");
    let b = b.to_str().unwrap();
    for (a, share) in [
        (
            "single-rank/resnet50-2021-legacy-autograd-api.json.gz",
            "23.6%",
        ),
        ("single-rank/mi300x-resnet-ddp-rank0of8.json.gz", "0.0%"),
    ] {
        let a = corpus.path(a);
        let a = a.to_str().unwrap();
        for cmd in ["replay", "predict"] {
            let err = usage_error(&[cmd, a, "--durations-from", b]);
            assert!(
                err.contains(&format!("only {share} of the task time of {a}")),
                "{err}"
            );
            assert!(err.contains("not a recording of the same program"), "{err}");
        }
    }
    // Two traces (one file twice is refused before, as given twice).
    let other = corpus.path("single-rank/v100-resnet50-2021-capture-b.json.gz");
    let other = other.to_str().unwrap();
    for cmd in ["replay", "predict"] {
        let err = usage_error(&[cmd, b, other, "--durations-from", b]);
        assert!(err.contains("takes one trace"), "{err}");
        let err = usage_error(&[cmd, b, b, "--durations-from", b]);
        assert!(err.contains(&format!("{b} is given twice")), "{err}");
    }
    usage_error(&["replay", b, "--durations-from", b, "--job"]);
}

#[test]
fn issue_10_the_text_form_shows_shares_and_b_s_steps() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let a = corpus.path("multi-rank/dlrm-8xv100/rank0.json.gz");
    let b = corpus.path("multi-rank/dlrm-8xv100/rank1.json.gz");
    let out = lumos()
        .arg("replay")
        .arg(&a)
        .arg("--durations-from")
        .arg(&b)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "matched: ",
        "B measured ms",
        "mean of 1",
        "keep A's durations",
    ] {
        assert!(text.contains(want), "no `{want}` in\n{text}");
    }
}

#[test]
fn compact_graphs_on_either_side_give_the_traces_transfer() {
    // `.lgraph` files as A, as B, or both give the report of their traces
    // byte for byte: one reading of a recording for every front end
    // (lumos_report::transfer_files), which the Python package's
    // durations_from calls too.
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("durations-from-lgraph");
    let a = corpus.path("single-rank/v100-resnet50-2021-capture-a.json.gz");
    let b = corpus.path("single-rank/v100-resnet50-2021-capture-b.json.gz");
    run_ok(
        lumos()
            .arg("ingest")
            .arg(&a)
            .arg(&b)
            .arg("-o")
            .arg(dir.path()),
    );
    let (la, lb) = (
        dir.join("v100-resnet50-2021-capture-a.lgraph"),
        dir.join("v100-resnet50-2021-capture-b.lgraph"),
    );
    let traces = transfer(&a, &b);
    assert!(num(&traces, &["matched", "share"]) > 0.999);
    for (x, y) in [(&la, &b), (&a, &lb), (&la, &lb)] {
        assert_eq!(transfer(x, y), traces, "{} <- {}", x.display(), y.display());
    }
}
