//! `lumos replay --representatives` on a synthesized 64-rank job (GPT
//! small, TP8 PP2 DP4): within 0.5% of the joint replay of every rank, the
//! same from the traces and from their compact graphs. The GPT-3 175B jobs
//! of issue 12 (64 and 512 ranks) take minutes here, so they are checked
//! by `scripts/scale_ranks.sh --joint`, not by a test.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::path::Path;

use common::{lumos, run_ok};
use lumos_testkit::TempDir;
use serde_json::Value;

fn ok(args: &[&str], path: &Path) -> Vec<u8> {
    let out = lumos().args(args).arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "lumos {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Per job step, (measured, replayed) in us.
fn steps(json: &[u8]) -> Vec<(f64, f64)> {
    let v: Value = serde_json::from_slice(json).unwrap();
    v["job"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["measured_us"].as_f64().unwrap(),
                s["replayed_us"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn representatives_replay_a_64_rank_job_within_half_a_percent() {
    let dir = TempDir::new("cli-representatives-64");
    let traces = dir.join("traces");
    run_ok(
        lumos()
            .args([
                "synth",
                "--model",
                "gpt-small",
                "--tp",
                "8",
                "--pp",
                "2",
                "--dp",
                "4",
                "--microbatches",
                "4",
                "--ranks",
                "all",
                "--out",
            ])
            .arg(&traces),
    );

    // A what-if, so that the replay is not simply the measurement.
    let what_if = ["--json", "--scale-kernels", "0.7"];
    let joint = ok(&[&["replay", "--job"][..], &what_if].concat(), &traces);
    let reps_args = [&["replay", "--representatives"][..], &what_if].concat();
    let reps = ok(&reps_args, &traces);
    let (joint_steps, rep_steps) = (steps(&joint), steps(&reps));
    assert_eq!(joint_steps.len(), 2);
    assert_eq!(joint_steps.len(), rep_steps.len());
    for (j, r) in joint_steps.iter().zip(&rep_steps) {
        // Measured over every rank either way.
        assert_eq!(j.0, r.0);
        let gap = (r.1 - j.1).abs() / j.1;
        assert!(
            gap <= 0.005,
            "replayed {} us against {} us jointly",
            r.1,
            j.1
        );
        assert!(j.1 < j.0 * 0.99, "the what-if changed nothing");
    }
    let v: Value = serde_json::from_slice(&reps).unwrap();
    let r = &v["representatives"];
    assert_eq!(r["ranks"], 64);
    // One program per pipeline stage.
    assert_eq!(r["replayed_ranks"], 2);
    assert!(r["modelled_collectives"].as_u64().unwrap() > 0);

    // From compact graphs: byte for byte the same.
    let graphs = dir.join("graphs");
    run_ok(lumos().args(["ingest", "-o"]).arg(&graphs).arg(&traces));
    assert!(
        ok(&reps_args, &graphs) == reps,
        "representatives differ from .lgraph files"
    );
}
