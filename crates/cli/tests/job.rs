//! Multi-rank jobs end to end: the 8-rank DLRM set replayed jointly, and
//! job sets built from it in code (a rank missing, a rank twice, a shifted
//! clock, a collective lost on one rank).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{lumos, run_ok};
use lumos_testkit::TempDir;
use serde_json::Value;

/// The 8-rank DLRM set, or `None` when the corpus is absent.
fn dlrm() -> Option<PathBuf> {
    Some(lumos_testkit::corpus()?.path("multi-rank/dlrm-8xv100"))
}

fn rank_file(dlrm: &Path, r: u32) -> PathBuf {
    dlrm.join(format!("rank{r}.json.gz"))
}

fn temp_dir(name: &str) -> TempDir {
    TempDir::new(&format!("cli-job-{name}"))
}

fn run(args: &[&str], paths: &[&Path]) -> Output {
    lumos().args(args).args(paths).output().unwrap()
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "lumos failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn replay(extra: &[&str], dir: &Path) -> Value {
    let mut args = vec!["replay", "--json"];
    args.extend_from_slice(extra);
    json_of(&run(&args, &[dir]))
}

/// The trace's JSON document, decompressed.
fn load_json(path: &Path) -> Value {
    serde_json::from_slice(&lumos_testkit::gunzip_file(path)).unwrap()
}

fn write_json(path: &Path, v: &Value) {
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(serde_json::to_string(v).unwrap().as_bytes())
        .unwrap();
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// Every rank's replayed step within 5% of its measurement.
fn assert_steps_within_5pct(v: &Value) {
    for t in v["traces"].as_array().unwrap() {
        for s in t["steps"].as_array().unwrap() {
            let e = s["error_pct"].as_f64().unwrap();
            assert!(e.abs() < 5.0, "{} {}: {e}%", t["path"], s["name"]);
        }
    }
}

/// Per collective, the latest replayed end minus the earliest.
fn replayed_end_spreads(v: &Value) -> Vec<f64> {
    v["job"]["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let e = f64s(&c["replayed"]["end_us"]);
            e.iter().copied().fold(f64::MIN, f64::max) - e.iter().copied().fold(f64::MAX, f64::min)
        })
        .collect()
}

#[test]
fn dlrm_joint_replay_matches_every_rank() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let v = replay(&[], &dlrm);
    let job = &v["job"];
    assert_eq!(job["ranks"].as_array().unwrap().len(), 8);
    assert!(job["missing_ranks"].as_array().unwrap().is_empty());
    assert_eq!(v["traces"].as_array().unwrap().len(), 8);
    assert_steps_within_5pct(&v);
    // Every collective matched on all 8 ranks, none left over.
    let m = &job["matching"];
    assert_eq!(m["sets"], 8);
    assert_eq!(m["matched_tasks"], 64);
    assert_eq!(m["unmatched_tasks"], 0);
    assert!(m["problems"].as_array().unwrap().is_empty());
    for c in job["collectives"].as_array().unwrap() {
        assert_eq!(c["ranks"].as_array().unwrap().len(), 8);
    }
    // Replayed ends agree across ranks as the measured ones do (~10 us).
    for s in replayed_end_spreads(&v) {
        assert!(s <= 10.0, "replayed end spread {s} us");
    }
    // One host clock: offsets are noise.
    for o in job["clock"]["offsets"].as_array().unwrap() {
        assert!(o["offset_us"].as_f64().unwrap().abs() <= 10.0, "{o}");
    }
    // The job's step is its slowest rank's; rank 7 arrives last at the
    // first all-to-all and keeps the others waiting there.
    let step = &job["steps"][0];
    assert!(step["error_pct"].as_f64().unwrap().abs() < 5.0);
    let slowest = step["measured_us"].as_f64().unwrap();
    for t in v["traces"].as_array().unwrap() {
        assert!(t["steps"][0]["measured_us"].as_f64().unwrap() <= slowest);
    }
    let first = job["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["label"] == "SendRecv #0")
        .unwrap();
    assert_eq!(first["measured"]["last_rank"], 7);
    assert!(first["measured"]["skew_us"].as_f64().unwrap() > 7000.0);
    // Transfer, not the measured kernel time, is what each rank keeps.
    assert!(f64s(&first["replayed"]["transfer_us"])
        .iter()
        .all(|&t| t < 20.0));
    let waiting = job["waiting"].as_array().unwrap();
    let caused = |w: &Value| w["replayed"]["caused_us"].as_f64().unwrap();
    let top = waiting
        .iter()
        .max_by(|a, b| caused(a).total_cmp(&caused(b)))
        .unwrap();
    assert_eq!(top["rank"], 7);
}

/// Ends of every matched collective on every rank, by label.
fn ends(v: &Value) -> Vec<(String, Vec<f64>)> {
    v["job"]["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["label"].as_str().unwrap().to_owned(),
                f64s(&c["replayed"]["end_us"]),
            )
        })
        .collect()
}

#[test]
fn slowing_one_rank_delays_the_collectives_of_every_rank() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let base = replay(&[], &dlrm);
    // Rank 7 computes 1.5x slower, CPU and GPU: every collective after its
    // first one waits longer for it, on every rank.
    let slow = replay(&["--scale-rank", "7=1.5", "--scale-rank-cpu"], &dlrm);
    let (b, s) = (ends(&base), ends(&slow));
    let mut delayed = 0;
    for ((label, be), (_, se)) in b.iter().zip(&s) {
        for (x, y) in be.iter().zip(se) {
            assert!(y >= x, "{label}: ended earlier ({y} < {x})");
        }
        if be.iter().zip(se).all(|(x, y)| y - x > 50.0) {
            delayed += 1;
        }
    }
    assert!(
        delayed >= 6,
        "only {delayed} collectives delayed on every rank"
    );
    let step = |v: &Value| v["job"]["steps"][0]["replayed_us"].as_f64().unwrap();
    assert!(step(&slow) > step(&base) + 100.0);
    // Every rank's own step ends later: each waits for rank 7 at the
    // collectives and its work after them (the backward pass on the
    // autograd thread, the optimizer) follows.
    let rank_steps = |v: &Value| -> Vec<f64> {
        v["traces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["steps"][0]["replayed_us"].as_f64().unwrap())
            .collect()
    };
    for (r, (b, s)) in rank_steps(&base).iter().zip(rank_steps(&slow)).enumerate() {
        assert!(s > b + 100.0, "rank {r}: {b} -> {s} us");
    }
    assert_eq!(
        slow["job"]["what_if"][0],
        "rank 7: GPU compute and CPU x1.5"
    );

    // GPU compute alone: this DLRM step is CPU-bound, but what GPU time
    // rank 7 adds before a collective still reaches every rank.
    let gpu = replay(&["--scale-rank", "7=1.5"], &dlrm);
    let g = ends(&gpu);
    let later_everywhere = b
        .iter()
        .zip(&g)
        .filter(|((_, be), (_, ge))| be.iter().zip(ge).all(|(x, y)| y > x))
        .count();
    assert!(later_everywhere >= 1);
    for ((label, be), (_, ge)) in b.iter().zip(&g) {
        for (x, y) in be.iter().zip(ge) {
            assert!(y >= x, "{label}");
        }
    }
}

#[test]
fn a_missing_rank_is_reported_and_the_others_replay() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = temp_dir("missing");
    for r in (0..8).filter(|&r| r != 4) {
        std::fs::copy(rank_file(&dlrm, r), dir.join(format!("rank{r}.json.gz"))).unwrap();
    }
    let v = replay(&[], &dir);
    let job = &v["job"];
    assert_eq!(job["missing_ranks"], serde_json::json!([4]));
    let warnings: Vec<&str> = job["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("rank 4 of world size 8 missing")),
        "{warnings:?}"
    );
    assert_eq!(v["traces"].as_array().unwrap().len(), 7);
    assert_eq!(job["matching"]["unmatched_tasks"], 0);
    assert!(job["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["ranks"].as_array().unwrap().len() == 7));
    assert_steps_within_5pct(&v);
    // The human report says it too.
    let out = run(&["replay"], &[dir.path()]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("missing rank 4"), "{text}");
}

#[test]
fn two_files_claiming_one_rank_is_an_error_naming_both() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = temp_dir("duplicate");
    for r in 0..8 {
        std::fs::copy(rank_file(&dlrm, r), dir.join(format!("rank{r}.json.gz"))).unwrap();
    }
    std::fs::copy(rank_file(&dlrm, 3), dir.join("again-rank3.json.gz")).unwrap();
    for cmd in ["replay", "inspect"] {
        let out = run(&[cmd], &[dir.path()]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("both claim rank 3 of world size 8"), "{err}");
        assert!(err.contains("`lumos replay --per-trace`"), "{err}");
        assert!(err.contains("again-rank3.json.gz"), "{err}");
        assert!(err.contains("rank3.json.gz ("), "{err}");
    }
}

/// Two copies of one rank's trace alone share no collective (a collective
/// pairs distinct ranks), but that is not why they are not one job: both
/// claim the rank. `inspect` and `replay` take them one by one and say so,
/// naming both files; `--job` is not offered, as it refuses them. Before,
/// the note read "2 traces record world size 8 but share no collective
/// (--job replays them as one job)".
#[test]
fn two_copies_of_one_rank_are_said_to_claim_it() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = temp_dir("copies");
    let (a, b) = (dir.join("a.json.gz"), dir.join("b.json.gz"));
    for copy in [&a, &b] {
        std::fs::copy(rank_file(&dlrm, 3), copy).unwrap();
    }
    for cmd in ["inspect", "replay"] {
        let out = run(&[cmd], &[dir.path()]);
        assert_eq!(out.status.code(), Some(0), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        let said = format!(
            "note: {} (distributedInfo) and {} (distributedInfo) both claim rank 3 (copies of \
             one rank's trace, or ranks of two runs): replayed one by one",
            a.display(),
            b.display()
        );
        assert!(err.contains(&said), "{cmd}: {err}");
        assert!(!err.contains("share no collective"), "{cmd}: {err}");
        assert!(!err.contains("--job"), "{cmd}: {err}");
    }
    let page = dir.join("page.html");
    let out = run(&["report", "-o", page.to_str().unwrap()], &[dir.path()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("or ranks of two runs), so they are not one job"),
        "{err}"
    );
    assert!(!err.contains("--job"), "{err}");
}

#[test]
fn a_shifted_clock_is_found_and_undone() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = temp_dir("shifted");
    for r in (0..8).filter(|&r| r != 5) {
        std::fs::copy(rank_file(&dlrm, r), dir.join(format!("rank{r}.json.gz"))).unwrap();
    }
    // Rank 5's host clock runs 3.217 ms ahead (timestamps are integer us).
    let mut doc = load_json(&rank_file(&dlrm, 5));
    for e in doc["traceEvents"].as_array_mut().unwrap() {
        if let Some(ts) = e.get("ts").and_then(Value::as_i64) {
            e["ts"] = Value::from(ts + 3217);
        }
    }
    write_json(&dir.join("rank5.json"), &doc);
    let v = replay(&[], &dir);
    let clock = &v["job"]["clock"];
    let offset = |r: u64| {
        clock["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["rank"] == r)
            .unwrap()["offset_us"]
            .as_f64()
            .unwrap()
    };
    assert!((offset(5) - 3217.0).abs() <= 10.0, "{}", offset(5));
    assert!(offset(3).abs() <= 10.0);
    assert!(clock["raw_end_spread_us"]["max"].as_f64().unwrap() > 3000.0);
    assert!(clock["end_spread_us"]["max"].as_f64().unwrap() <= 10.0);
    assert_steps_within_5pct(&v);
    for s in replayed_end_spreads(&v) {
        assert!(s <= 10.0, "replayed end spread {s} us");
    }
}

#[test]
fn a_collective_lost_on_one_rank_is_reported_not_paired() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = temp_dir("lost");
    for r in (0..8).filter(|&r| r != 3) {
        std::fs::copy(rank_file(&dlrm, r), dir.join(format!("rank{r}.json.gz"))).unwrap();
    }
    // Drop rank 3's second all-reduce kernel.
    let mut doc = load_json(&rank_file(&dlrm, 3));
    let events = doc["traceEvents"].as_array_mut().unwrap();
    let all_reduce: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e["cat"] == "kernel"
                && e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("ncclKernel_AllReduce"))
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(all_reduce.len(), 3);
    events.remove(all_reduce[1]);
    write_json(&dir.join("rank3.json"), &doc);
    let v = replay(&[], &dir);
    let m = &v["job"]["matching"];
    let problems = m["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["kind"], "count_mismatch");
    let detail = problems[0]["detail"].as_str().unwrap();
    assert!(detail.contains("rank 3 issued 2"), "{detail}");
    assert_eq!(m["unmatched_tasks"], 23);
    assert_eq!(m["sets"], 5);
    // The human report shows the mismatch.
    let out = run(&["replay"], &[dir.path()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mismatch: AllReduce"), "{text}");
}

#[test]
fn inspect_reports_ranks_matching_and_clocks() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let v = json_of(&run(&["inspect", "--json"], &[&dlrm]));
    assert_eq!(v["traces"].as_array().unwrap().len(), 8);
    let job = &v["job"];
    assert_eq!(job["ranks"], serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7]));
    assert!(job["rank_sources"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s == "distributedInfo"));
    assert_eq!(job["world_size"], 8);
    assert_eq!(job["matching"]["sets"], 8);
    assert_eq!(job["matching"]["by_rule"]["kernel_family_order"], 64);
    assert!(job.get("steps").is_none());
}

#[test]
fn per_trace_keeps_ranks_apart() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let v = replay(&["--per-trace"], &dlrm);
    assert!(v.get("job").is_none());
    assert_eq!(v["traces"].as_array().unwrap().len(), 8);
    let out = run(&["replay", "--per-trace", "--scale-rank", "1=2"], &[&dlrm]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--scale-rank needs"));
}

#[test]
fn bad_scale_rank_is_a_clear_error() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let out = run(&["replay", "--scale-rank", "9=2"], &[&dlrm]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rank 9 is not in the job"), "{err}");
    let out = run(&["replay", "--scale-rank", "1=-2"], &[&dlrm]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn ranks_from_file_names_need_job_and_gaps_are_reported() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = temp_dir("file-names");
    for r in [0u32, 1, 3] {
        let mut doc = load_json(&rank_file(&dlrm, r));
        doc.as_object_mut().unwrap().remove("distributedInfo");
        write_json(&dir.join(format!("trace_rank{r}.json")), &doc);
    }
    // Without a world size they are not taken for one job...
    assert!(replay(&[], &dir).get("job").is_none());
    // ...unless asked.
    let v = replay(&["--job"], &dir);
    let job = &v["job"];
    assert_eq!(job["ranks"], serde_json::json!([0, 1, 3]));
    assert!(job["rank_sources"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s == "file_name"));
    assert_eq!(job["missing_ranks"], serde_json::json!([2]));
    assert_eq!(job["matching"]["sets"], 8);
    assert_steps_within_5pct(&v);
}

/// A job whose ranks come as one file name in per-host folders
/// (`host0/trace.json.gz`, `host1/...`), as jobs often do: `--out` writes
/// every rank's timeline under a name with its rank,
/// `trace.rank<N>.replayed.json.gz`, where the job was refused (its
/// timelines would all have been `trace.replayed.json.gz`). The same
/// files replayed apart (`--per-trace`) are still refused: they are not
/// ranks of one job, so nothing tells their outputs apart.
#[test]
fn ranks_of_one_file_name_are_written_under_their_ranks() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = temp_dir("one-name");
    let job = dir.join("job");
    for r in 0..8 {
        let host = job.join(format!("host{r}"));
        std::fs::create_dir_all(&host).unwrap();
        std::fs::copy(rank_file(&dlrm, r), host.join("trace.json.gz")).unwrap();
    }
    let out_dir = dir.join("out");
    let o = out_dir.to_str().unwrap();
    let v = json_of(&run(&["replay", "--json", "--out", o], &[&job]));
    assert_eq!(
        v["job"]["ranks"],
        serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7])
    );
    let mut written: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    let want: Vec<String> = (0..8)
        .map(|r| format!("trace.rank{r}.replayed.json.gz"))
        .collect();
    assert_eq!(written, want);
    // Each is its own rank's timeline, not one written eight times.
    for (r, name) in want.iter().enumerate() {
        let t = load_json(&out_dir.join(name));
        assert_eq!(t["distributedInfo"]["rank"], r, "{name}");
    }
    let first = std::fs::read(out_dir.join(&want[0])).unwrap();
    assert_ne!(first, std::fs::read(out_dir.join(&want[1])).unwrap());
    // Apart, they are refused before anything is written.
    let apart = dir.join("apart");
    let out = run(
        &["replay", "--per-trace", "--out", apart.to_str().unwrap()],
        &[&job],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("would both be written as trace.*"), "{err}");
    assert!(!apart.exists());
}

/// A synthesized TP2 x PP2 x DP2 job has what the DLRM set lacks: process
/// groups with `Seq`, and pipeline sends and receives with their peers.
#[test]
fn synthesized_job_matches_by_seq_and_point_to_point() {
    let dir = temp_dir("synth");
    run_ok(
        lumos()
            .args([
                "synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "2", "--dp", "2", "--ranks",
                "all", "--out",
            ])
            .arg(dir.path()),
    );
    let v = replay(&[], &dir);
    let m = &v["job"]["matching"];
    assert!(
        m["problems"].as_array().unwrap().is_empty(),
        "{}",
        m["problems"]
    );
    assert_eq!(m["unmatched_tasks"], 0);
    assert!(m["by_rule"]["process_group_seq"].as_u64().unwrap() > 0);
    assert!(m["by_rule"]["point_to_point"].as_u64().unwrap() > 0);
    assert_steps_within_5pct(&v);
}

/// A synthesized TP2 x PP4 job (the DLRM set records no process groups)
/// whose rank 0 records its model-parallel group (process group 15, every
/// rank) without rank 7: `--job` names it, the six other members present
/// recording the group whole. From representatives only the
/// representatives' records are read (rank 0 is a group of its own, its
/// group size changed): the warning counted the four others as "4 of its
/// 4 other members present" in a job of eight ranks present; it says now
/// that it counts representatives.
#[test]
fn representatives_say_a_process_group_disagreement_counts_representatives() {
    let dir = temp_dir("reps-group-disagreement");
    run_ok(
        lumos()
            .args([
                "synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "4", "--dp", "1", "--ranks",
                "all", "--out",
            ])
            .arg(dir.path()),
    );
    let rank0 = dir.join("rank0.json.gz");
    let mut doc = load_json(&rank0);
    let mut edited = 0;
    for e in doc["traceEvents"].as_array_mut().unwrap() {
        let args = &mut e["args"];
        if args["Process Group Name"] == "15" {
            args["Process Group Ranks"] = Value::from("[0, 1, 2, 3, 4, 5, 6]");
            edited += 1;
        }
    }
    assert!(edited > 0, "no collective on process group 15");
    std::fs::remove_file(&rank0).unwrap();
    write_json(&dir.join("rank0.json"), &doc);
    let [job, reps] = job_and_representatives(&dir, 0);
    let start = format!(
        "rank 0 ({}) records process group 15 as rank 0-6; ",
        dir.join("rank0.json").display()
    );
    let said = |v: &Value| -> Vec<String> {
        let w = warnings(v);
        w.into_iter().filter(|w| w.starts_with(&start)).collect()
    };
    assert_eq!(
        said(&job),
        [format!(
            "{start}6 of its 6 other members present record it as rank 0-7"
        )]
    );
    let others = reps["representatives"]["replayed_ranks"].as_u64().unwrap() - 1;
    assert!((2..7).contains(&others), "{others}");
    assert_eq!(
        said(&reps),
        [format!(
            "{start}{others} of the {others} representatives among its other members (only \
             representatives' records are read) record it as rank 0-7"
        )]
    );
}

/// The DLRM ranks in a temp dir, but for those `except` names.
fn dlrm_copy(dlrm: &Path, name: &str, except: &[u32]) -> TempDir {
    let dir = temp_dir(name);
    for r in (0..8).filter(|r| !except.contains(r)) {
        std::fs::copy(rank_file(dlrm, r), dir.join(format!("rank{r}.json.gz"))).unwrap();
    }
    dir
}

fn warnings(v: &Value) -> Vec<String> {
    v["job"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_owned())
        .collect()
}

/// `replay --json` on `dir`, which exits 1 (a file left out or unreadable)
/// but still reports the job; with stderr.
fn replay_partly(dir: &Path) -> (Value, String) {
    let out = run(&["replay", "--json"], &[dir]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    (serde_json::from_slice(&out.stdout).unwrap(), err)
}

/// A rank of another job (a synthesized GPT rank 0 of 8, data parallel) in
/// place of DLRM's rank 0: it shares no collective with the others, so it
/// is left out, and the job is DLRM's seven other ranks, matched as usual.
#[test]
fn a_rank_of_another_job_is_left_out() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_copy(&dlrm, "foreign", &[0]);
    let other = temp_dir("foreign-synth");
    let out = lumos()
        .args([
            "synth", "--model", "gpt-tiny", "--dp", "8", "--ranks", "all",
        ])
        .arg("--out")
        .arg(other.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::copy(other.join("rank0.json.gz"), dir.join("rank0.json.gz")).unwrap();
    let (v, err) = replay_partly(&dir);
    let job = &v["job"];
    assert_eq!(job["ranks"], serde_json::json!([1, 2, 3, 4, 5, 6, 7]));
    assert_eq!(job["left_out"][0]["rank"], 0);
    assert_eq!(job["left_out"][0]["reason"], "no_shared_collective");
    assert!(err.contains("rank 0 ("), "{err}");
    let w = warnings(&v);
    assert!(
        w.iter().any(|w| w.contains(
            "shares no collective with the other 7 ranks, which match among themselves; left \
             out: is it from another run, or was its recording cut short?"
        )),
        "{w:?}"
    );
    // No rank is blamed for sharing nothing with the foreign reference.
    assert!(
        !w.iter().any(|w| w.contains("clock taken as recorded")),
        "{w:?}"
    );
    assert_eq!(job["matching"]["sets"], 8);
    assert_eq!(job["matching"]["unmatched_tasks"], 0);
    // The job's step is DLRM's (about 20 ms), not the synthesized rank's.
    let full = replay(&[], &dlrm);
    assert_eq!(
        job["steps"][0]["measured_us"],
        full["job"]["steps"][0]["measured_us"]
    );
    assert_eq!(v["traces"].as_array().unwrap().len(), 7);
    assert_steps_within_5pct(&v);
}

/// DLRM's rank 7 with only its metadata events kept holds no task:
/// it is left out as such, not as "from another run", and the job is the
/// seven other ranks.
#[test]
fn a_rank_without_tasks_is_left_out_as_such() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_copy(&dlrm, "no-tasks", &[7]);
    let mut doc = load_json(&rank_file(&dlrm, 7));
    let events = doc["traceEvents"].as_array_mut().unwrap();
    events.retain(|e| e["ph"] == "M");
    assert!(!events.is_empty());
    write_json(&dir.join("rank7.json"), &doc);
    let (v, err) = replay_partly(&dir);
    let job = &v["job"];
    assert_eq!(job["ranks"], serde_json::json!([0, 1, 2, 3, 4, 5, 6]));
    assert_eq!(job["left_out"][0]["rank"], 7);
    assert_eq!(job["left_out"][0]["reason"], "no_tasks");
    assert!(
        err.contains("rank7.json) holds no CPU or GPU task") && !err.contains("another run"),
        "{err}"
    );
    // The page of the job is written, the rank named on stderr, and the
    // exit code is 1, as replay's.
    let pages = temp_dir("no-tasks-page");
    let html = pages.join("job.html");
    let out = lumos()
        .arg("report")
        .arg(dir.path())
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("rank7.json) holds no CPU or GPU task"),
        "{err}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("job of 7 ranks"),
        "the page names the job of the others"
    );
}

/// DLRM with rank 7 holding no task, from representatives: the job's text
/// counted the representatives as its ranks ("job: 1 ranks (0), world
/// size 8, missing rank 7" of a job of seven ranks present); it counts
/// them as representatives of the job's ranks now, and `--job`'s text is
/// as it was.
#[test]
fn representatives_are_counted_as_such_in_the_jobs_text() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_edited(&dlrm, "reps-counted", 7, |doc| {
        doc["traceEvents"]
            .as_array_mut()
            .unwrap()
            .retain(|e| e["ph"] == "M");
    });
    let text = |mode: &str| {
        let out = run(&["replay", mode], &[dir.path()]);
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let reps = text("--representatives");
    for line in [
        "job: 1 representative of 7 ranks; who waited for whom (measured / replayed)\n",
        "job: 1 representative of 7 ranks (0), world size 8, missing rank 7\n",
        "rank 7 of world size 8 left out (no task): simulating the 7 ranks present;",
    ] {
        assert!(reps.contains(line), "no {line:?} in {reps}");
    }
    assert!(!reps.contains("job: 1 ranks"), "{reps}");
    // The groups' line counts ranks as ranks: it said "1 ranks replayed
    // for 7".
    assert!(
        reps.contains(
            "  representatives: 1 rank replayed for the job's 7 ranks (0 collectives inside \
             groups against modelled peers)\n    rank     0 for     7 ranks (0-6): "
        ),
        "{reps}"
    );
    let job = text("--job");
    for line in [
        "job: 7 ranks; who waited for whom (measured / replayed)\n",
        "job: 7 ranks (0-6), world size 8, missing rank 7\n",
    ] {
        assert!(job.contains(line), "no {line:?} in {job}");
    }
}

#[test]
fn a_rank_claiming_another_world_size_is_named_and_kept() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_copy(&dlrm, "world", &[3]);
    let mut doc = load_json(&rank_file(&dlrm, 3));
    doc["distributedInfo"]["world_size"] = Value::from(16);
    write_json(&dir.join("rank3.json"), &doc);
    // Still a job (most files record 8), of world size 8, nothing missing.
    let v = replay(&[], &dir);
    let job = &v["job"];
    assert_eq!(job["world_size"], 8);
    assert!(job["missing_ranks"].as_array().unwrap().is_empty());
    assert!(job.get("left_out").is_none());
    assert_eq!(job["matching"]["sets"], 8);
    let w = warnings(&v);
    assert!(
        w.iter().any(|w| w
            .starts_with("files disagree on the world size (8 in 7 files (rank 0-2, 4-7), 16 in ")
            && w.contains("rank3.json); using 8, which most files record")),
        "{w:?}"
    );
}

#[test]
fn a_rank_three_days_away_is_left_out() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_copy(&dlrm, "days", &[5]);
    let mut doc = load_json(&rank_file(&dlrm, 5));
    let days_us = 3 * 86_400 * 1_000_000i64;
    for e in doc["traceEvents"].as_array_mut().unwrap() {
        if let Some(ts) = e.get("ts").and_then(Value::as_i64) {
            e["ts"] = Value::from(ts + days_us);
        }
    }
    write_json(&dir.join("rank5.json"), &doc);
    let (v, _) = replay_partly(&dir);
    let job = &v["job"];
    assert_eq!(job["missing_ranks"], serde_json::json!([5]));
    assert_eq!(job["left_out"][0]["reason"], "far_clock");
    let w = warnings(&v);
    assert!(
        w.iter()
            .any(|w| w.contains("its collectives end 3.0 days after the other ranks'")),
        "{w:?}"
    );
    assert!(
        w.iter().any(|w| w.starts_with(
            "rank 5 of world size 8 left out (clock far off): simulating the 7 ranks present"
        )),
        "{w:?}"
    );
    for o in job["clock"]["offsets"].as_array().unwrap() {
        assert!(o["offset_us"].as_f64().unwrap().abs() <= 10.0, "{o}");
    }
    assert_steps_within_5pct(&v);
}

#[test]
fn an_unreadable_rank_is_named_as_unreadable() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_copy(&dlrm, "corrupt", &[2]);
    std::fs::write(dir.join("rank2.json"), "{\"traceEvents\": [").unwrap();
    for job_flag in [&[][..], &["--job"][..]] {
        let mut args = vec!["replay", "--json"];
        args.extend_from_slice(job_flag);
        let out = run(&args, &[dir.path()]);
        assert_eq!(out.status.code(), Some(1));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["job"]["missing_ranks"], serde_json::json!([2]));
        let w = warnings(&v);
        assert!(
            w.iter()
                .any(|w| w.starts_with("rank 2 of world size 8 unreadable (")
                    && w.contains("rank2.json: truncated JSON")
                    && !w.contains("no file")),
            "{w:?}"
        );
    }
}

#[test]
fn a_summary_over_nothing_says_so() {
    let dir = temp_dir("nothing");
    let bad = dir.join("broken.json");
    std::fs::write(&bad, "{\"traceEvents\": [").unwrap();
    let out = run(&["replay", "--json"], &[&bad]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["summary"]["mean_abs_error_pct"].is_null(), "{v}");
    assert!(v["summary"]["max_abs_error_pct"].is_null());
    assert_eq!(v["summary"]["steps"], 0);
    let out = run(&["replay"], &[&bad]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("summary: nothing replayed"), "{text}");
}

/// A synthesized TP2 x PP2 x DP2 job (matched by process group and `Seq`)
/// with one rank replaced: by DLRM's rank 3 (another job, another GPU), or
/// by its own trace with only the metadata kept. Such a rank spoils only
/// the collectives of its own groups, whose other members still match in
/// their other groups, so it was kept (clock "taken as recorded") and its
/// steps became the job's: DLRM's 20 ms step, or one step instead of two.
/// It is left out, and the job's steps are the other ranks', from every
/// rank or from representatives.
#[test]
fn a_stray_rank_of_a_seq_matched_job_is_left_out() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let whole = temp_dir("stray-whole");
    run_ok(
        lumos()
            .args([
                "synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "2", "--dp", "2", "--ranks",
                "all", "--out",
            ])
            .arg(whole.path()),
    );
    let full = replay(&[], &whole);
    let full_steps = f64s(
        &full["job"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["measured_us"].clone())
            .collect(),
    );
    assert_eq!(full_steps.len(), 2);
    for (name, rank, reason) in [
        ("stray-foreign", 3, "no_shared_collective"),
        ("stray-empty", 4, "no_tasks"),
    ] {
        let dir = temp_dir(name);
        for r in (0..8).filter(|&r| r != rank) {
            let f = format!("rank{r}.json.gz");
            std::fs::copy(whole.join(&f), dir.join(&f)).unwrap();
        }
        let stray = dir.join(format!("rank{rank}.json"));
        if reason == "no_tasks" {
            let mut doc = load_json(&whole.join(format!("rank{rank}.json.gz")));
            doc["traceEvents"]
                .as_array_mut()
                .unwrap()
                .retain(|e| e["ph"] == "M");
            write_json(&stray, &doc);
        } else {
            std::fs::copy(
                rank_file(&dlrm, rank),
                dir.join(format!("rank{rank}.json.gz")),
            )
            .unwrap();
        }
        let (v, err) = replay_partly(&dir);
        let job = &v["job"];
        let kept: Vec<u32> = (0..8).filter(|&r| r != rank).collect();
        assert_eq!(job["ranks"], serde_json::json!(kept), "{name}");
        assert_eq!(job["left_out"][0]["rank"], rank, "{name}");
        assert_eq!(job["left_out"][0]["reason"], reason, "{name}");
        assert!(err.contains(&format!("rank {rank} (")), "{name}: {err}");
        let w = warnings(&v);
        assert!(
            !w.iter().any(|w| w.contains("clock taken as recorded")),
            "{name}: {w:?}"
        );
        let steps = f64s(
            &job["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["measured_us"].clone())
                .collect(),
        );
        assert_eq!(steps, full_steps, "{name}");
        // From representatives: the stray rank is a group of its own, whose
        // measured steps were the job's (DLRM's 20 ms) with exit code 0.
        let out = run(&["replay", "--representatives", "--json"], &[dir.path()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(&format!("rank {rank} (")), "{name}: {err}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            v["job"]["missing_ranks"],
            serde_json::json!([rank]),
            "{name}"
        );
        assert_eq!(v["representatives"]["ranks"], 7, "{name}");
        let steps = f64s(
            &v["job"]["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["measured_us"].clone())
                .collect(),
        );
        assert_eq!(steps, full_steps, "{name}: representatives");
    }
}

/// DLRM with its rank 3 replaced by the corpus's recsys rank 3 of 8
/// (another job of eight). `--job` leaves it out: it shares no collective
/// with the other seven. From representatives it was one group against
/// DLRM's one, "half the job", so it stayed, and its 75.7 ms step became
/// the job's with exit code 0. Each representative counts as its group's
/// ranks now: rank 3 is left out alike, named on stderr with exit code 1,
/// and the job's steps are the other ranks', as from `--job` (measured)
/// and as from representatives of DLRM's seven ranks alone (replayed).
#[test]
fn a_foreign_rank_is_left_out_from_representatives_as_from_every_rank() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let recsys = lumos_testkit::corpus()
        .unwrap()
        .path("single-rank/a100-recsys-rank3of8.json.gz");
    let dir = dlrm_copy(&dlrm, "recsys-as-rank3", &[3]);
    std::fs::copy(&recsys, dir.join("rank3.json.gz")).unwrap();
    let [job, reps] = ["--job", "--representatives"].map(|mode| {
        let out = run(&["replay", "--json", mode], &[dir.path()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{mode}: {err}");
        assert!(
            err.contains("rank 3 (") && err.contains("shares no collective with the other 7"),
            "{mode}: {err}"
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["job"]["missing_ranks"], serde_json::json!([3]), "{mode}");
        assert_eq!(v["job"]["world_size"], 8, "{mode}");
        assert_eq!(v["job"]["left_out"][0]["reason"], "no_shared_collective");
        v
    });
    assert_eq!(reps["job"]["left_out"], job["job"]["left_out"]);
    assert_eq!(warnings(&reps), warnings(&job));
    assert_eq!(reps["representatives"]["ranks"], 7);
    let measured = |v: &Value| -> Vec<(Value, Value, Value)> {
        (v["job"]["steps"].as_array().unwrap().iter())
            .map(|s| {
                let m = |k: &str| s[k].clone();
                (m("name"), m("measured_us"), m("slowest_rank_measured"))
            })
            .collect()
    };
    assert_eq!(measured(&reps), measured(&job));
    assert_eq!(reps["job"]["steps"][0]["name"], "ProfilerStep#10");
    let seven = dlrm_copy(&dlrm, "seven", &[3]);
    let alone = replay(&["--representatives"], &seven);
    assert_eq!(reps["job"]["steps"], alone["job"]["steps"]);
}

/// DLRM with its rank 4's gzip stream cut in half: from representatives
/// the rank was said to be "missing (no file)"; it is unreadable, named
/// with its error as `--job` names it.
#[test]
fn representatives_name_an_unreadable_rank_unreadable() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_copy(&dlrm, "truncated-gz", &[4]);
    let gz = std::fs::read(rank_file(&dlrm, 4)).unwrap();
    std::fs::write(dir.join("rank4.json.gz"), &gz[..gz.len() / 2]).unwrap();
    let [job, reps] = ["--job", "--representatives"].map(|mode| {
        let out = run(&["replay", "--json", mode], &[dir.path()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{mode}: {err}");
        assert!(err.contains("rank4.json.gz: "), "{mode}: {err}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    });
    let w = warnings(&reps);
    assert!(
        w.iter()
            .any(|w| w.starts_with("rank 4 of world size 8 unreadable (")
                && w.contains("rank4.json.gz: ")),
        "{w:?}"
    );
    assert!(!w.iter().any(|w| w.contains("no file")), "{w:?}");
    assert_eq!(w, warnings(&job));
    assert_eq!(reps["job"]["missing_ranks"], serde_json::json!([4]));
}

/// DLRM with rank `r`'s trace rewritten by `edit`, in a folder `name`.
fn dlrm_edited(dlrm: &Path, name: &str, r: u32, edit: impl Fn(&mut Value)) -> TempDir {
    let dir = dlrm_copy(dlrm, name, &[r]);
    let mut doc = load_json(&rank_file(dlrm, r));
    edit(&mut doc);
    write_json(&dir.join(format!("rank{r}.json")), &doc);
    dir
}

/// `--job` and `--representatives` of `dir`, each with `code` for exit
/// code.
fn job_and_representatives(dir: &Path, code: i32) -> [Value; 2] {
    ["--job", "--representatives"].map(|mode| {
        let out = run(&["replay", "--json", mode], &[dir]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{mode}: {err}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    })
}

/// Per job step: its name, measured length and slowest measured rank.
fn measured_steps(v: &Value) -> Vec<(Value, Value, Value)> {
    (v["job"]["steps"].as_array().unwrap().iter())
        .map(|s| {
            let m = |k: &str| s[k].clone();
            (m("name"), m("measured_us"), m("slowest_rank_measured"))
        })
        .collect()
}

/// DLRM with rank 5's clock 3 hours ahead (every timestamp moved): `--job`
/// leaves it out (`far_clock`, exit 1). From representatives rank 5 is a
/// member of rank 0's group, whose clock only was tested: it was kept,
/// exit 0. Each member's clock is now tested against the others (its
/// representative's plus its own offset from it, from the ends of its
/// collectives): rank 5 is left out alone, with the warnings of `--job`,
/// from the traces and from their `.lgraph` files alike.
#[test]
fn a_member_hours_away_is_left_out_from_representatives_as_from_every_rank() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_edited(&dlrm, "member-far-clock", 5, |doc| {
        for e in doc["traceEvents"].as_array_mut().unwrap() {
            if let Some(ts) = e.get("ts").and_then(Value::as_i64) {
                e["ts"] = Value::from(ts + 3 * 3_600_000_000);
            }
        }
    });
    let [job, reps] = job_and_representatives(&dir, 1);
    for v in [&job, &reps] {
        assert_eq!(v["job"]["missing_ranks"], serde_json::json!([5]));
        assert_eq!(v["job"]["left_out"][0]["rank"], 5);
        assert_eq!(v["job"]["left_out"][0]["reason"], "far_clock");
    }
    assert_eq!(reps["job"]["left_out"], job["job"]["left_out"]);
    assert_eq!(warnings(&reps), warnings(&job));
    assert_eq!(measured_steps(&reps), measured_steps(&job));
    let r = &reps["representatives"];
    assert_eq!(r["ranks"], 7);
    assert_eq!(r["groups"][0]["ranks"], "0-4, 6, 7");
    let graphs = temp_dir("member-far-clock-lgraph");
    run_ok(
        lumos()
            .args(["ingest", "-o"])
            .arg(graphs.path())
            .arg(dir.path()),
    );
    let [_, from_graphs] = job_and_representatives(&graphs, 1);
    assert_eq!(from_graphs["job"], reps["job"]);
    assert_eq!(from_graphs["representatives"], reps["representatives"]);
}

/// DLRM with rank 0's clock 3 hours ahead: `--job` leaves it out (exit 1).
/// From representatives it represents ranks 1-7, whose clocks agree with
/// each other: it was kept, with a warning, exit 0, the group's numbers
/// replayed from its graph. It is left out now as `--job` leaves it out
/// (named, exit 1), rank 1 standing for the group, from the traces and
/// from their `.lgraph` files alike.
#[test]
fn a_representative_hours_away_from_its_members_is_left_out_as_from_every_rank() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_edited(&dlrm, "representative-far-clock", 0, |doc| {
        for e in doc["traceEvents"].as_array_mut().unwrap() {
            if let Some(ts) = e.get("ts").and_then(Value::as_i64) {
                e["ts"] = Value::from(ts + 3 * 3_600_000_000);
            }
        }
    });
    let [job, reps] = job_and_representatives(&dir, 1);
    for v in [&job, &reps] {
        assert_eq!(v["job"]["missing_ranks"], serde_json::json!([0]));
        assert_eq!(v["job"]["left_out"][0]["rank"], 0);
        assert_eq!(v["job"]["left_out"][0]["reason"], "far_clock");
    }
    assert_eq!(reps["job"]["left_out"], job["job"]["left_out"]);
    assert!(
        !warnings(&reps)
            .iter()
            .any(|w| w.contains("kept, replayed for them")),
        "{:?}",
        warnings(&reps)
    );
    assert_eq!(measured_steps(&reps), measured_steps(&job));
    let r = &reps["representatives"];
    assert_eq!(r["ranks"], 7);
    assert_eq!(r["groups"][0]["representative"], 1);
    assert_eq!(r["groups"][0]["ranks"], "1-7");
    // The group's numbers are rank 1's, as from the seven ranks alone.
    let seven = dlrm_copy(&dlrm, "representative-far-clock-seven", &[0]);
    let alone = run(&["replay", "--json", "--representatives"], &[seven.path()]);
    let alone: Value = serde_json::from_slice(&alone.stdout).unwrap();
    assert_eq!(r, &alone["representatives"]);
    assert_eq!(reps["job"]["steps"], alone["job"]["steps"]);
    let graphs = temp_dir("representative-far-clock-lgraph");
    run_ok(
        lumos()
            .args(["ingest", "-o"])
            .arg(graphs.path())
            .arg(dir.path()),
    );
    let [_, from_graphs] = job_and_representatives(&graphs, 1);
    assert_eq!(from_graphs["job"], reps["job"]);
    assert_eq!(from_graphs["representatives"], reps["representatives"]);
}

/// DLRM with rank 0 recording world size 16, the other seven 8: `--job`
/// takes 8, which most files record. From representatives the seven
/// were members of rank 0's group, each taken to record its
/// representative's 16: world size 16, ranks 8-15 missing. Each member's
/// own world size is counted now: 8, warned as `--job` warns.
#[test]
fn representatives_count_each_members_world_size() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_edited(&dlrm, "member-world-size", 0, |doc| {
        doc["distributedInfo"]["world_size"] = Value::from(16);
    });
    let [job, reps] = job_and_representatives(&dir, 0);
    for v in [&job, &reps] {
        assert_eq!(v["job"]["world_size"], 8);
        assert_eq!(v["job"]["missing_ranks"], serde_json::json!([]));
    }
    let w = warnings(&reps);
    assert!(
        w.iter().any(|w| w
            .starts_with("files disagree on the world size (8 in 7 files (rank 1-7), 16 in ")
            && w.ends_with("rank0.json); using 8, which most files record")),
        "{w:?}"
    );
    assert_eq!(w, warnings(&job));
    assert_eq!(reps["representatives"]["ranks"], 8);
}

/// DLRM with rank 3's `ProfilerStep#10` annotation removed: rank 3 is a
/// group of its own (one step, its whole window). The job's step is rank
/// 1's, named `ProfilerStep#10` by `--job`; from representatives it was
/// named after the slowest representative's step, rank 3's "window". It
/// is named after the slowest rank's now (its representative's step).
#[test]
fn representatives_name_the_job_step_after_the_slowest_rank() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_edited(&dlrm, "member-no-steps", 3, |doc| {
        doc["traceEvents"]
            .as_array_mut()
            .unwrap()
            .retain(|e| !e["name"].as_str().unwrap_or("").starts_with("ProfilerStep"));
    });
    let [job, reps] = job_and_representatives(&dir, 0);
    assert_eq!(measured_steps(&reps), measured_steps(&job));
    assert_eq!(reps["job"]["steps"][0]["name"], "ProfilerStep#10");
    assert_eq!(reps["job"]["steps"][0]["slowest_rank_measured"], 1);
    assert_eq!(reps["representatives"]["replayed_ranks"], 2);
}

/// DLRM's eight ranks and the corpus's DDP rank 1 of 2 (another job): two
/// files claim rank 1, an error naming both. They record world sizes 8 and
/// 2, so the error said "both claim rank 1 of world size 2", untrue of
/// DLRM's file; it names no world size now.
#[test]
fn two_files_claiming_one_rank_of_different_world_sizes_name_none() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let corpus = lumos_testkit::corpus().unwrap();
    let dir = dlrm_copy(&dlrm, "two-sizes", &[]);
    std::fs::copy(
        corpus.path("single-rank/v100-ddp-rank1of2-allreduce.json.gz"),
        dir.join("ddp.json.gz"),
    )
    .unwrap();
    let out = run(&["replay", "--job", "--json"], &[dir.path()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("ddp.json.gz (distributedInfo) and ")
            && err.contains("rank1.json.gz (distributedInfo) both claim rank 1: a job takes one"),
        "{err}"
    );
    assert!(!err.contains("of world size"), "{err}");
}

/// Job steps pair each rank's steps by position: a rank that recorded
/// another iteration (its step renamed) or no steps at all is named in a
/// warning, where before the job step took its length without a word.
#[test]
fn ranks_naming_their_steps_differently_are_named() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let rename = |to: &'static str| {
        move |doc: &mut Value| {
            for e in doc["traceEvents"].as_array_mut().unwrap() {
                if e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("ProfilerStep#"))
                {
                    e["name"] = Value::from(to);
                }
            }
        }
    };
    let dir = dlrm_edited(&dlrm, "step-renamed", 3, rename("ProfilerStep#11"));
    let v = replay(&["--job"], dir.path());
    let w = warnings(&v);
    assert!(
        w.iter().any(|w| w.starts_with("1 rank(s) name their steps differently from rank 0: ")
            && w.contains("rank3.json) calls its step 0 \"ProfilerStep#11\" where rank 0 calls it \"ProfilerStep#10\"")),
        "{w:?}"
    );
    let dir = dlrm_edited(&dlrm, "step-less", 3, |doc: &mut Value| {
        doc["traceEvents"].as_array_mut().unwrap().retain(|e| {
            !e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("ProfilerStep#"))
        });
    });
    let v = replay(&["--job"], dir.path());
    let w = warnings(&v);
    assert!(
        w.iter()
            .any(|w| w.contains("rank3.json) recorded no steps where rank 0 recorded 1")),
        "{w:?}"
    );
    // The corpus job names its steps alike: no such warning.
    let v = replay(&["--job"], &dlrm);
    assert!(!warnings(&v).iter().any(|w| w.contains("name their steps")));
}

/// `--representatives` replays a member as its representative, pairing
/// their steps by position: a member whose steps are named otherwise (or
/// that recorded none) is named in a warning, as `--job` names a rank
/// whose names differ from rank 0's. Before, it was not compared: DLRM's
/// rank 3 renamed to another iteration replayed without a word.
#[test]
fn members_naming_their_steps_differently_from_their_representative_are_named() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let steps_named = |to: Option<&'static str>| {
        move |doc: &mut Value| {
            let events = doc["traceEvents"].as_array_mut().unwrap();
            let step =
                |e: &Value| (e["name"].as_str()).is_some_and(|n| n.starts_with("ProfilerStep#"));
            match to {
                Some(to) => events
                    .iter_mut()
                    .filter(|e| step(e))
                    .for_each(|e| e["name"] = Value::from(to)),
                None => events.retain(|e| !step(e)),
            }
        }
    };
    let warned = |dir: &Path| {
        let v = replay(&["--representatives"], dir);
        (warnings(&v), v["representatives"]["replayed_ranks"].clone())
    };
    let dir = dlrm_edited(
        &dlrm,
        "rep-step-renamed",
        3,
        steps_named(Some("ProfilerStep#11")),
    );
    let (w, replayed) = warned(dir.path());
    // One program: rank 3 is a member of rank 0's group.
    assert_eq!(replayed, 1);
    assert!(
        w.iter().any(|w| w.starts_with(
            "1 member rank(s) name their steps differently from their representatives: rank 3 ("
        ) && w.contains(
            "rank3.json) calls its step 0 \"ProfilerStep#11\" where its representative, rank \
             0, calls it \"ProfilerStep#10\""
        )),
        "{w:?}"
    );
    // The same ranks ingested: a member read from an `.lgraph` file is
    // compared as its trace is (before, its summary held no step names
    // and the member replayed without a word).
    let graphs = temp_dir("rep-step-renamed-lgraph");
    run_ok(
        lumos()
            .args(["ingest", "-o"])
            .arg(graphs.path())
            .arg(dir.path()),
    );
    let (from_graphs, replayed) = warned(graphs.path());
    assert_eq!(replayed, 1);
    assert_eq!(from_graphs, w);
    // A rank without steps runs a program of its own (it represents its
    // own group): the representatives' warning names it, as --job's does.
    let dir = dlrm_edited(&dlrm, "rep-step-less", 3, steps_named(None));
    let (w, replayed) = warned(dir.path());
    assert_eq!(replayed, 2);
    assert!(
        w.iter()
            .any(|w| w.contains("rank3.json) recorded no steps where rank 0 recorded 1")),
        "{w:?}"
    );
    // The corpus job names its steps alike: no such warning.
    let (w, _) = warned(&dlrm);
    assert!(!w.iter().any(|w| w.contains("name their steps")), "{w:?}");
}

/// A rank whose recording stops part-way through the step (its events
/// after its fifth collective lost) matches none of its peers' collectives
/// by order: it is left out, and the warning says it may be cut short
/// rather than only from another run.
#[test]
fn a_rank_cut_short_is_left_out_as_possibly_cut_short() {
    let Some(dlrm) = dlrm() else {
        return;
    };
    let dir = dlrm_edited(&dlrm, "cut-short", 3, |doc: &mut Value| {
        let events = doc["traceEvents"].as_array_mut().unwrap();
        let mut nccl: Vec<f64> = (events.iter())
            .filter(|e| {
                e["cat"] == "kernel" && e["name"].as_str().is_some_and(|n| n.contains("nccl"))
            })
            .map(|e| e["ts"].as_f64().unwrap())
            .collect();
        nccl.sort_by(f64::total_cmp);
        let cut = nccl[4];
        events.retain(|e| !e["ts"].as_f64().is_some_and(|t| t >= cut));
    });
    let (v, err) = replay_partly(dir.path());
    assert_eq!(v["job"]["left_out"][0]["rank"], 3, "{err}");
    assert_eq!(v["job"]["left_out"][0]["reason"], "no_shared_collective");
    assert!(
        err.contains("left out: is it from another run, or was its recording cut short?"),
        "{err}"
    );
}
