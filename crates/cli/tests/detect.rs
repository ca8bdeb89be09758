//! Job detection end to end, output read as printed: files are one job
//! only when they record one world size and share a collective (or with
//! `--job`); unrelated traces are replayed one by one with one line
//! saying why; the synthesizer's subset of ranks is a job, quietly; two
//! files claiming one rank point to `--per-trace`.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::lumos;
use lumos_testkit::TempDir;
use serde_json::Value;

fn run(args: &[&str], paths: &[&Path]) -> Output {
    lumos().args(args).args(paths).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_of(out: &Output) -> Value {
    assert!(out.status.success(), "lumos failed: {}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Two single-rank corpus traces of different runs that both record
/// world size 8 (rank 3 of a recsys job, rank 0 of a ResNet DDP job).
fn unrelated() -> Option<[PathBuf; 2]> {
    let c = lumos_testkit::corpus()?;
    Some([
        c.path("single-rank/a100-recsys-rank3of8.json.gz"),
        c.path("single-rank/mi300x-resnet-ddp-rank0of8.json.gz"),
    ])
}

const NOTE: &str = "note: 2 traces record world size 8 but share no collective: replayed one \
                    by one (--job replays them as one job)\n";

#[test]
fn unrelated_traces_of_one_world_size_are_replayed_one_by_one() {
    let Some([a, b]) = unrelated() else {
        return;
    };
    let out = run(&["replay", "--json"], &[&a, &b]);
    let v = json_of(&out);
    assert!(v.get("job").is_none(), "{v}");
    assert_eq!(v["traces"].as_array().unwrap().len(), 2);
    // One line saying why, once.
    assert_eq!(stderr(&out), NOTE);
    // The text output and inspect say it the same way.
    let out = run(&["replay"], &[&a, &b]);
    assert!(out.status.success());
    assert_eq!(stderr(&out), NOTE);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("job:"));
    let out = run(&["inspect", "--json"], &[&a, &b]);
    assert!(json_of(&out).get("job").is_none());
    assert_eq!(stderr(&out), NOTE);
    // --job still forces one job; --per-trace needs no note.
    let v = json_of(&run(&["replay", "--json", "--job"], &[&a, &b]));
    assert_eq!(v["job"]["matching"]["sets"], 0);
    let out = run(&["replay", "--json", "--per-trace"], &[&a, &b]);
    let per_trace = json_of(&out);
    assert!(per_trace.get("job").is_none());
    assert_eq!(stderr(&out), "");
    // Replayed from the ranks built to tell (not built again), each trace
    // reports what its replay on its own does.
    let apart = json_of(&run(&["replay", "--json"], &[&a, &b]));
    assert_eq!(apart, per_trace);
    // So does inspect, from the same builds.
    let apart = json_of(&run(&["inspect", "--json"], &[&a, &b]));
    let per_trace = json_of(&run(&["inspect", "--json", "--per-trace"], &[&a, &b]));
    assert_eq!(apart, per_trace);
    assert_eq!(apart["traces"].as_array().unwrap().len(), 2);
}

#[test]
fn two_unrelated_rank0_files_are_replayed_one_by_one() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    // Both rank 0 of world size 8, from two runs: not an error, two
    // traces, replayed one by one. The note says that both claim rank 0
    // (which `--job` refuses, so it is not offered), not only that they
    // share no collective.
    let a = c.path("single-rank/mi300x-resnet-ddp-rank0of8.json.gz");
    let b = c.path("single-rank/b200-vllm-tp8-rank0.json.gz");
    let out = run(&["replay", "--json"], &[&a, &b]);
    assert!(json_of(&out).get("job").is_none());
    assert_eq!(
        stderr(&out),
        format!(
            "note: {} (distributedInfo) and {} (distributedInfo) both claim rank 0 (copies of \
             one rank's trace, or ranks of two runs): replayed one by one\n",
            b.display(),
            a.display()
        )
    );
}

#[test]
fn a_rank_claimed_by_two_runs_points_to_per_trace() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    // Two runs' folders of one job: rank 0 and 1 in each.
    let dir = TempDir::new("cli-detect-two-runs");
    for run in ["run-a", "run-b"] {
        std::fs::create_dir_all(dir.join(run)).unwrap();
        for r in [0, 1] {
            let f = format!("rank{r}.json.gz");
            std::fs::copy(
                c.path(&format!("multi-rank/dlrm-8xv100/{f}")),
                dir.join(run).join(&f),
            )
            .unwrap();
        }
    }
    let out = run(&["replay"], &[dir.path()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("both claim rank 0 of world size 8"), "{err}");
    assert!(
        err.contains("to compare two runs use `lumos replay --per-trace` or `lumos diff "),
        "{err}"
    );
    // Which is what the user can then do.
    let v = json_of(&run(&["replay", "--json", "--per-trace"], &[dir.path()]));
    assert_eq!(v["traces"].as_array().unwrap().len(), 4);
}

#[test]
fn a_real_job_is_still_one() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let out = run(&["replay", "--json"], &[&c.path("multi-rank/dlrm-8xv100")]);
    let v = json_of(&out);
    assert_eq!(v["job"]["matching"]["sets"], 8);
    assert!(!stderr(&out).contains("note:"));
}

/// `lumos synth`'s default writes one rank per pipeline stage; replayed
/// the default way, they are that subset of one job, quietly, and replay
/// their own synthesized steps.
#[test]
fn synth_subset_is_one_job_quietly() {
    let dir = TempDir::new("cli-detect-synth");
    let out = lumos()
        .args([
            "synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "2", "--dp", "2",
        ])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    assert_eq!(files.len(), 2, "one rank per stage");
    // The synthesizer records which ranks it wrote.
    let text = String::from_utf8(lumos_testkit::gunzip_file(&files[1])).unwrap();
    assert!(
        text.contains("\"written_ranks\":[0,4]"),
        "{}",
        &text[..2000]
    );

    let out = run(&["replay", "--json"], &[dir.path()]);
    assert_eq!(stderr(&out), "");
    let v = json_of(&out);
    let job = &v["job"];
    assert_eq!(job["world_size"], 8);
    assert!(job["missing_ranks"].as_array().unwrap().is_empty(), "{job}");
    let warnings: Vec<&str> = job["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        !warnings.iter().any(|w| w.contains("missing")),
        "{warnings:?}"
    );
    // The lockstep synthesizer times both stages together: the joint
    // replay gives back the synthesized steps.
    for s in job["steps"].as_array().unwrap() {
        let e = s["error_pct"].as_f64().unwrap();
        assert!(e.abs() < 0.5, "{s}");
    }
    // As printed: no missing ranks, no warning.
    let out = run(&["replay"], &[dir.path()]);
    assert_eq!(stderr(&out), "");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("job: 2 ranks (0, 4), world size 8\n"),
        "{text}"
    );
    assert!(!text.contains("missing"), "{text}");
    assert!(!text.contains("warning"), "{text}");
}

/// `lumos report` of the two unrelated traces `lumos replay` replays one
/// by one: a page is of one trace or one job (`-o` one file), so it makes
/// none (exit 2, as before), but says detection's reason (they record world
/// size 8 and share no collective) and what to do, where it printed
/// replay's note ("replayed one by one", untrue of report) and "not one
/// job". `--per-trace` is refused the same way, without the reason.
#[test]
fn report_of_unrelated_traces_says_why_it_makes_no_page() {
    let Some([a, b]) = unrelated() else {
        return;
    };
    let dir = TempDir::new("cli-detect-report");
    let html = dir.join("page.html");
    let report = |extra: &[&str]| {
        lumos()
            .arg("report")
            .args(extra)
            .arg(&a)
            .arg(&b)
            .arg("-o")
            .arg(&html)
            .output()
            .unwrap()
    };
    let out = report(&[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!html.exists());
    assert!(
        !err.contains("note:") && !err.contains("replayed one by one"),
        "{err}"
    );
    assert!(
        err.contains(
            "lumos report makes one page, of one trace or of the ranks of one job; these 2 \
             traces record world size 8 but share no collective, so they are not one job: make \
             a page of each (`lumos report TRACE -o PAGE`), or take them as one job with --job"
        ),
        "{err}"
    );
    let out = report(&["--per-trace"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("these 2 traces are not one job: make a page of each"),
        "{err}"
    );
    assert!(!html.exists());
}
