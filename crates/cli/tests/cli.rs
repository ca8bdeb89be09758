//! End-to-end tests of the `lumos` binary on the real corpus.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::path::{Path, PathBuf};

use common::{lumos, lumos_json, run_ok};
use lumos_testkit::TempDir;

fn replay_json(args: &[&str], paths: &[PathBuf]) -> serde_json::Value {
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    lumos_json(&all, paths)
}

fn mean_step_ms(t: &serde_json::Value) -> f64 {
    let steps = t["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    steps
        .iter()
        .map(|s| s["replayed_us"].as_f64().unwrap())
        .sum::<f64>()
        / steps.len() as f64
        / 1e3
}

#[test]
fn demo_runs_end_to_end() {
    let dir = TempDir::new("cli-demo");
    let out = lumos()
        .arg("demo")
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("== replay"), "{text}");
    assert!(text.contains("ProfilerStep#3"), "{text}");
    assert!(text.contains("synthesized gpt-tiny"), "{text}");
    // It ends with what bounds the job, the what-if's effect and what to
    // type next, and keeps the files it names.
    assert!(text.contains("This job is "), "{text}");
    assert!(text.contains("2x faster shortens the window by"), "{text}");
    // The what-if shows what it changes, not the measured trace's tables
    // again (they were printed twice, the same).
    let what_if = text
        .split("== what-if")
        .nth(1)
        .and_then(|s| s.split("== what this shows").next())
        .expect("a what-if section");
    assert!(what_if.contains("replayed ms"), "{what_if}");
    assert!(
        what_if.contains("critical path per step (replayed)"),
        "{what_if}"
    );
    assert!(
        what_if.contains("the what-if changes the replay only"),
        "{what_if}"
    );
    // Tables and sentences alike fit a terminal of 120 columns.
    for l in text.lines() {
        assert!(l.chars().count() <= 120, "{l}");
    }
    for measured in [
        "per step (measured",
        "top GPU tasks",
        "GPU time by launching",
    ] {
        assert!(text.contains(measured), "{text}");
        assert!(!what_if.contains(measured), "{measured}: {what_if}");
    }
    let timeline = text
        .lines()
        .find_map(|l| l.strip_prefix("Open ")?.split(" in Perfetto").next())
        .expect("names the timeline");
    assert!(Path::new(timeline).is_file(), "{timeline}");
    let replay_cmd = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("lumos replay "))
        .expect("suggests a replay");
    assert!(Path::new(replay_cmd).is_file(), "{replay_cmd}");
    let again = lumos().args(["replay", replay_cmd]).output().unwrap();
    assert!(again.status.success());
    let out = lumos()
        .args(["demo", "--json", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Halving compute must shorten the demo's steps.
    let base = v["replay"]["window"]["replayed_us"].as_f64().unwrap();
    let fast = v["what_if_compute_x0.5"]["window"]["replayed_us"]
        .as_f64()
        .unwrap();
    assert!(fast < 0.99 * base, "{fast} vs {base}");
}

/// Every corpus trace replays without deadlock, with and without each
/// ablation, and the JSON has the documented fields.
#[test]
fn every_corpus_trace_replays_under_every_ablation() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dirs = ["micro", "single-rank", "multi-rank/dlrm-8xv100"].map(|d| corpus.path(d));
    for deps in ["", "no-inter-stream", "no-sync", "no-inter-thread"] {
        let args: Vec<&str> = if deps.is_empty() {
            vec![]
        } else {
            vec!["--deps", deps]
        };
        let v = replay_json(&args, &dirs);
        let traces = v["traces"].as_array().unwrap();
        assert!(traces.len() >= 30, "{}", traces.len());
        for t in traces {
            for key in ["path", "rank", "warnings", "steps", "window", "breakdown"] {
                assert!(!t[key].is_null(), "missing {key}");
            }
            assert!(t["breakdown"]["measured"]["idle_us"].is_number());
        }
        assert!(v["summary"]["mean_abs_error_pct"].is_number());
        assert!(v["summary"]["max_abs_error_pct"].is_number());
    }
}

/// Halving GPU time shortens GPU-bound steps clearly and leaves CPU-bound
/// ones alone. Picked by measuring (docs/ACCURACY.md): ResNet-50 capture-a
/// responds by about 7%, the V100 DDP trace by 0%.
#[test]
fn scale_kernels_moves_gpu_bound_steps_only() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let gpu_bound = corpus.path("single-rank/v100-resnet50-2021-capture-a.json.gz");
    let cpu_bound = corpus.path("single-rank/v100-ddp-rank1of2-allreduce.json.gz");
    let files = [gpu_bound, cpu_bound];
    let base = replay_json(&[], &files);
    let half = replay_json(&["--scale-kernels", "0.5"], &files);
    let change = |i: usize| {
        let b = mean_step_ms(&base["traces"][i]);
        let h = mean_step_ms(&half["traces"][i]);
        (h - b) / b
    };
    assert!(change(0) < -0.04, "GPU-bound trace changed {}", change(0));
    assert!(
        change(1).abs() < 0.01,
        "CPU-bound trace changed {}",
        change(1)
    );
    // Making kernels slower must not make a step faster.
    let slow = replay_json(&["--scale-kernels", "2"], &files);
    assert!(mean_step_ms(&slow["traces"][0]) > mean_step_ms(&base["traces"][0]));
}

#[test]
fn dropping_inter_stream_edges_changes_recsys() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let f = [corpus.path("single-rank/a100-recsys-rank3of8.json.gz")];
    let base = replay_json(&[], &f);
    let ablated = replay_json(&["--deps", "no-inter-stream"], &f);
    let b = mean_step_ms(&base["traces"][0]);
    let a = mean_step_ms(&ablated["traces"][0]);
    // Without them communication overlaps compute more than it did.
    assert!(a < b * 0.99, "{a} vs {b}");
}

#[test]
fn replayed_trace_rereads_with_the_replayed_times() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-replayed");
    let f = corpus.path("micro/a100-event-sync.json.gz");
    let v = replay_json(
        &["--out", dir.to_str().unwrap(), "--scale-kernels", "3"],
        &[f],
    );
    let out = dir.join("a100-event-sync.replayed.json.gz");
    let t = lumos_trace::read_path(&out).unwrap();
    assert_eq!(t.skipped.total(), 0);
    // The tasks and the step annotations of the re-read trace (not the
    // operators around them, whose self time reaches past them) span the
    // replayed window, which holds every task and every step.
    let (_, m, _) = lumos_graph::build(&t);
    let spans = || m.tasks.iter().chain(&m.step_annotations);
    let start = spans().map(|s| s.start_ns).min().unwrap();
    let end = spans().map(|s| s.end_ns).max().unwrap();
    let replayed_us = v["traces"][0]["window"]["replayed_us"].as_f64().unwrap();
    assert!(
        ((end - start) as f64 / 1e3 - replayed_us).abs() < 0.01,
        "{} vs {replayed_us}",
        (end - start) as f64 / 1e3
    );
    // And its graph replays to the same length again (a fixed point).
    let again = replay_json(&[], std::slice::from_ref(&out));
    let again_us = again["traces"][0]["window"]["measured_us"]
        .as_f64()
        .unwrap();
    assert!((again_us - replayed_us).abs() < 0.01);
}

#[test]
fn bad_inputs_give_exit_code_1_and_name_the_file() {
    let dir = TempDir::new("cli-bad");
    let bad = dir.join("broken.json");
    std::fs::write(&bad, b"{\"traceEvents\": [{\"ph\": \"X\", ").unwrap();
    let out = lumos().arg("inspect").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("broken.json") && err.contains("truncated"),
        "{err}"
    );
    let empty_dir = dir.join("empty");
    std::fs::create_dir_all(&empty_dir).unwrap();
    let out = lumos().arg("replay").arg(&empty_dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no trace files"));
    let out = lumos().arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn inspect_json_counts_match_the_trace() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let f = corpus.path("single-rank/a100-recsys-rank3of8.json.gz");
    let out = lumos()
        .args(["inspect", "--json"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["traces"][0];
    let trace = lumos_trace::read_path(&f).unwrap();
    let kernels = trace
        .events
        .iter()
        .filter(|e| e.category == lumos_trace::Category::Kernel)
        .count() as u64;
    assert_eq!(t["tasks_by_kind"]["kernel"].as_u64(), Some(kernels));
    assert_eq!(t["steps"].as_array().unwrap().len(), 6);
    assert_eq!(t["rank"].as_u64(), Some(3));
    assert!(t["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("no cuda_sync events")));
    assert!(!t["inferred"].as_array().unwrap().is_empty());
}

/// The recipe flags make a job the graph builder and replay take as they
/// take the default one: interleaved, recomputed, FP8, without
/// `cuda_sync` events or `cudaEventRecord` calls.
#[test]
fn synth_recipe_flags_write_a_job_that_replays() {
    let dir = TempDir::new("cli-synth-recipe");
    let out = run_ok(
        lumos()
            .args(["synth", "--model", "gpt-small", "--tp", "2", "--pp", "4"])
            .args(["--dp", "2", "--global-batch", "16", "--virtual-stages", "3"])
            .args(["--recompute", "full", "--precision", "fp8"])
            .args(["--no-cuda-sync-events", "--no-event-records", "--out"])
            .arg(dir.path()),
    );
    let files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    assert_eq!(files.len(), 4);
    let text = String::from_utf8(lumos_testkit::gunzip_file(&files[0])).unwrap();
    assert!(text.contains("\"virtual_stages\": 3") || text.contains("\"virtual_stages\":3"));
    assert!(!text.contains("cuda_sync") && !text.contains("cudaEventRecord"));
    let v = replay_json(&["--per-trace"], &files);
    for t in v["traces"].as_array().unwrap() {
        for s in t["steps"].as_array().unwrap() {
            assert!(s["error_pct"].as_f64().unwrap().abs() < 2.0);
        }
    }
}

#[test]
fn synth_writes_a_job_that_replays_exactly() {
    let dir = TempDir::new("cli-synth");
    let out = run_ok(
        lumos()
            .args([
                "synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "2", "--dp", "1",
            ])
            .args(["--ranks", "all", "--out"])
            .arg(dir.path()),
    );
    let files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    assert_eq!(files.len(), 4);
    let v = replay_json(&["--per-trace"], &files);
    for t in v["traces"].as_array().unwrap() {
        for s in t["steps"].as_array().unwrap() {
            assert!(s["error_pct"].as_f64().unwrap().abs() < 2.0);
        }
    }
    let bad = lumos()
        .args(["synth", "--model", "gpt-nonexistent", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("gpt-nonexistent"));
}

/// A folder whose name a shell would split or end a quote in is quoted in
/// the commands `lumos synth` says to type, and the line runs as typed in
/// a POSIX shell. Before, `--out "syn dir"` said `lumos replay syn dir`.
#[test]
fn synth_quotes_a_folder_the_shell_would_split() {
    let dir = TempDir::new("cli-synth-quoted");
    let out_dir = dir.join("syn dir's");
    let out = run_ok(
        lumos()
            .args(["synth", "--model", "gpt-tiny", "--out"])
            .arg(&out_dir),
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    let next: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("next: lumos "))
        .collect();
    let d = out_dir.display().to_string().replace('\'', r"'\''");
    assert_eq!(
        next.first().copied(),
        Some(&*format!("replay '{d}'")),
        "{stderr}"
    );
    let bin = lumos().get_program().to_owned();
    let replay = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("\"$0\" {}", next[0]))
        .arg(bin)
        .output()
        .unwrap();
    assert!(replay.status.success(), "{replay:?}");
    assert!(!replay.stdout.is_empty(), "{replay:?}");
}

/// `lumos synth` says what to type next, on stderr (its stdout is the
/// list of files, which scripts read), and the commands it prints run.
#[test]
fn synth_prints_the_commands_that_replay_and_report_its_job() {
    let dir = TempDir::new("cli-synth-next");
    let out = run_ok(
        lumos()
            .args(["synth", "--model", "gpt-tiny", "--pp", "2", "--out"])
            .arg(dir.path()),
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.lines().all(|l| l.ends_with(".json.gz")), "{stdout}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    let next: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("next: lumos "))
        .collect();
    let d = dir.path().display();
    assert_eq!(
        next,
        [
            format!("replay {d}"),
            format!("report {d} -o {}", dir.join("report.html").display())
        ],
        "{stderr}"
    );
    // The folder's path has no spaces: each line splits as a shell would.
    let replay = run_ok(lumos().args(next[0].split(' ')));
    let replay = String::from_utf8(replay.stdout).unwrap();
    assert!(replay.starts_with("job: 2 ranks"), "{replay}");
    run_ok(lumos().args(next[1].split(' ')));
    assert!(dir.join("report.html").exists());
}

#[test]
fn synth_model_files_are_checked() {
    let dir = TempDir::new("cli-synth-model");
    let good = dir.join("model.json");
    std::fs::write(
        &good,
        r#"{"name": "mine", "layers": 2, "hidden": 512, "heads": 8}"#,
    )
    .unwrap();
    run_ok(
        lumos()
            .args(["synth", "--model"])
            .arg(&good)
            .arg("--out")
            .arg(dir.join("job")),
    );
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"layers": 2, "hidden": "wide"}"#).unwrap();
    let out = lumos()
        .args(["synth", "--model"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.join("job2"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.json") && err.contains("hidden"), "{err}");
}

/// A folder holding only lumos's own outputs that are not a predicted job
/// (which a directory argument leaves out: a run's outputs are not its
/// inputs) is refused as bad input, saying so, how many and one of them,
/// and that they can be given as files; an empty folder as before. A
/// folder of predicted timelines (`predict --out`'s) is the predicted job:
/// before, it was refused as the others.
#[test]
fn a_folder_of_lumos_outputs_says_so() {
    let dir = TempDir::new("cli-only-outputs");
    let job = dir.path().join("job");
    run_ok(
        lumos()
            .args(["synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "2"])
            .arg("--out")
            .arg(&job),
    );
    let out = dir.path().join("rt");
    run_ok(lumos().args(["replay", "--out"]).arg(&out).arg(&job));
    let refused = |cmd: &str, path: &Path| {
        let o = lumos().arg(cmd).arg(path).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    for cmd in ["replay", "predict", "inspect"] {
        let err = refused(cmd, &out);
        for want in [
            "holds only lumos's own outputs (2 files such as ",
            "rank0.replayed.json.gz), ",
            "give them as files",
        ] {
            assert!(err.contains(want), "{cmd}: {err}");
        }
    }
    // Given as files, they are read.
    let named = out.join("rank0.replayed.json.gz");
    assert!(named.is_file());
    lumos_json(&["inspect"], &[named]);
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = refused("replay", &empty);
    assert!(err.contains("has no trace files"), "{err}");
    // A prediction's directory is its job, replayed as its files are; a
    // replay written beside it is not read as more ranks.
    let predicted = dir.path().join("predicted");
    run_ok(
        lumos()
            .args(["predict", "--pp", "4", "--layers", "8", "--out"])
            .arg(&predicted)
            .arg(&job),
    );
    let files: Vec<PathBuf> = (0..4)
        .map(|k| predicted.join(format!("rank{}.predicted.json.gz", 2 * k)))
        .collect();
    let by_files = replay_json(&[], &files);
    let ranks = |r: &serde_json::Value| r["job"]["ranks"].as_array().unwrap().len();
    assert_eq!(ranks(&by_files), 4, "{by_files}");
    run_ok(
        lumos()
            .args(["replay", "--out"])
            .arg(&predicted)
            .arg(&predicted),
    );
    let by_dir = replay_json(&[], std::slice::from_ref(&predicted));
    assert_eq!(by_dir["job"]["steps"], by_files["job"]["steps"]);
    assert_eq!(ranks(&by_dir), 4, "{by_dir}");
    // Beside traces, predicted timelines are outputs, left out.
    run_ok(lumos().args(["predict", "--out"]).arg(&job).arg(&job));
    let traced = replay_json(&[], std::slice::from_ref(&job));
    assert_eq!(ranks(&traced), 2, "{traced}");
    // Predicting from them into their own directory would replace them.
    let o = (lumos()
        .args(["predict", "--out"])
        .arg(&predicted)
        .arg(&predicted))
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the output would replace it"), "{err}");
}

/// Runs kept in sub-folders (as TensorBoard's profiler plugin keeps them)
/// are found; hidden folders and the timelines lumos writes are not read as
/// traces.
#[test]
fn directories_are_searched_in_sub_folders_without_lumos_outputs() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-recursive");
    let runs = dir.path().join("runs");
    let src = corpus.path("micro/a100-simple-add.json.gz");
    for (sub, name) in [
        ("run-a/plugins/profile", "host_1.pt.trace.json.gz"),
        ("run-a/plugins/profile", "host_1.pt.trace.replayed.json.gz"),
        (".hidden", "host_2.pt.trace.json.gz"),
    ] {
        std::fs::create_dir_all(runs.join(sub)).unwrap();
        std::fs::copy(&src, runs.join(sub).join(name)).unwrap();
    }
    let v = lumos_json(&["inspect"], std::slice::from_ref(&runs));
    let traces = v["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 1, "{v}");
    assert!(traces[0]["path"]
        .as_str()
        .unwrap()
        .ends_with("run-a/plugins/profile/host_1.pt.trace.json.gz"));
    // Named on the command line, a lumos output is read like any trace.
    let named = runs.join("run-a/plugins/profile/host_1.pt.trace.replayed.json.gz");
    assert_eq!(
        lumos_json(&["inspect"], &[named])["traces"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let empty = dir.path().join("empty/deeper");
    std::fs::create_dir_all(&empty).unwrap();
    let out = lumos()
        .arg("inspect")
        .arg(dir.path().join("empty"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sub-folders included"));
}

#[test]
fn merge_writes_a_job_as_one_timeline_a_process_per_rank() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-merge");
    let out = dir.join("m");
    let st = lumos()
        .args(["replay", "--merge", "--out", out.to_str().unwrap()])
        .arg(c.path("multi-rank/dlrm-8xv100"))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let written: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(written, ["job.replayed.json.gz"]);
    let merged = out.join("job.replayed.json.gz");
    let t = lumos_trace::read_bytes_merged(&merged, &lumos_testkit::gunzip_file(&merged)).unwrap();
    let mut ranks: Vec<String> = t
        .track_names
        .iter()
        .filter(|n| n.tid.is_none())
        .map(|n| n.name.clone())
        .collect();
    ranks.sort();
    assert_eq!(
        ranks,
        (0..8).map(|r| format!("rank {r}")).collect::<Vec<_>>()
    );
    // --merge without --out is a usage error.
    let st = lumos()
        .args(["replay", "--merge"])
        .arg(c.path("multi-rank/dlrm-8xv100"))
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
}

/// `lumos ARGS` with `bytes` written to its standard input.
#[cfg(target_os = "linux")]
fn piped(args: &[&str], bytes: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = lumos()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let bytes = bytes.to_vec();
    // Written from another thread: the pipe holds less than a trace.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// A trace read from a pipe (`lumos replay <(zcat t.json.gz)`, `zcat ... |
/// lumos replay -` or `/dev/stdin`), gzip or plain, gives what the file
/// gives: nothing reads the input's first bytes before the reader does (a
/// compact graph is told by its magic bytes only in a regular file, and
/// one sent through a pipe is named as such).
#[cfg(target_os = "linux")]
#[test]
fn a_trace_read_from_a_pipe_replays_as_the_file() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let file = corpus.path("single-rank/a100-recsys-rank3of8.json.gz");
    let gz = std::fs::read(&file).unwrap();
    let plain = lumos_testkit::gunzip(&gz).unwrap();
    let replayed = replay_json(&[], std::slice::from_ref(&file));
    let predicted = lumos_json(&["predict", "--dp", "16"], std::slice::from_ref(&file));
    let dir = TempDir::new("cli-pipe");
    let page = dir.join("page.html");
    let page_arg = page.to_str().unwrap();
    for (what, bytes, path) in [("gzip", &gz, "/dev/stdin"), ("plain", &plain, "-")] {
        let json = |args: &[&str]| {
            let out = piped(&[args, &[path, "--json"]].concat(), bytes);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{what} {args:?}: {err}");
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
        };
        let got = json(&["replay"]);
        assert_eq!(
            got["traces"][0]["steps"], replayed["traces"][0]["steps"],
            "{what}"
        );
        // `-` is named `stdin`, not the `/dev/stdin` it is read through;
        // `/dev/stdin` typed is named as typed.
        let name = if path == "-" { "stdin" } else { "/dev/stdin" };
        assert_eq!(got["traces"][0]["path"], name, "{what}");
        let out = piped(&["inspect", path], bytes);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().next(), Some(name), "{what}: {text}");
        assert_eq!(got["summary"], replayed["summary"], "{what}");
        let got = json(&["predict", "--dp", "16"]);
        for key in ["steps", "stages", "confidence"] {
            assert_eq!(got[key], predicted[key], "{what} {key}");
        }
        // `-` wherever a trace is named: a run to diff, durations to take.
        let file_arg = file.to_str().unwrap();
        for args in [
            &["diff", "--json", path, file_arg][..],
            &["replay", "--json", "--durations-from", path, file_arg],
        ] {
            let out = piped(args, bytes);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{what} {args:?}: {err}");
        }
        // The page and its what-if share one read of the pipe.
        let out = piped(&["report", "--dp", "2", path, "-o", page_arg], bytes);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{what} report: {err}");
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(html.contains("id=\"what-if\""));
        assert!(
            html.contains(&format!("<title>lumos report: {name}</title>")),
            "{what}"
        );
        // Named `stdin` in the page's body too (its warnings name the trace).
        assert_eq!(html.contains("/dev/stdin"), name != "stdin", "{what}");
    }
    let lgraph = dir.join("rank.lgraph");
    run_ok(lumos().arg("ingest").arg(&file).arg("-o").arg(&lgraph));
    let out = piped(&["replay", "-"], &std::fs::read(&lgraph).unwrap());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error: stdin: is a compact graph (.lgraph) read as a trace"),
        "{err}"
    );
    // A broken trace on standard input: named so in the error.
    let out = piped(&["inspect", "-"], b"{\"traceEvents\": [");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err,
        "error: stdin: truncated JSON: input ends at byte 17 inside traceEvents after 0 events\n"
    );
}

/// A file that makes up many categories gets a table a person can read:
/// at most twenty rows of skipped events and one line summing the rest,
/// while `--json` lists them all.
#[test]
fn inspect_sums_skipped_rows_past_twenty() {
    let dir = TempDir::new("cli-categories");
    let path = dir.join("made_up.json");
    let mut events = vec![
        r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":10}"#
            .to_string(),
    ];
    // Category i has i + 1 events, so the largest counts are the last.
    for i in 0..30 {
        for _ in 0..=i {
            events.push(format!(
                r#"{{"ph":"X","cat":"made_up_{i:02}","name":"x","pid":1,"tid":1,"ts":1,"dur":1}}"#
            ));
        }
    }
    let text = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));
    std::fs::write(&path, text).unwrap();
    let out = run_ok(lumos().arg("inspect").arg(&path));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("skipped"))
        .collect();
    assert_eq!(rows.len(), 21, "{text}");
    // The twenty largest keep their order; the ten smallest are summed.
    assert!(rows[0].contains("made_up_10"), "{text}");
    assert!(rows[19].contains("made_up_29"), "{text}");
    assert!(
        rows[20].contains(&(1..=10).sum::<u32>().to_string())
            && rows[20].contains("in 10 more categories"),
        "{text}"
    );
    // The warning names the twenty most frequent too.
    let warnings = common::warnings(&text);
    let warning = (warnings.iter())
        .find(|l| l.contains("events of unknown categories skipped"))
        .unwrap();
    assert!(
        warning.contains("made_up_29 (30)")
            && !warning.contains("made_up_09")
            && warning.ends_with("and 10 more"),
        "{warning}"
    );
    assert!(text.contains("  1 thread, 0 streams;"), "{text}");
    let v = lumos_json(&["inspect"], &[path]);
    let listed = v["traces"][0]["events"]["skipped_by_reason"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(listed, 30);
}

/// One file given twice was read twice: `replay F F` counted its steps
/// twice in the summary's mean, and `predict F F` called it two files
/// claiming one rank. However it is given twice (one path twice, two
/// spellings, a folder and a file in it, a link beside it), every command
/// that takes a list of inputs refuses it as bad usage (exit 2), naming
/// the file and both ways; `diff` compares its two arguments, and a file
/// with itself is a legitimate comparison.
#[test]
fn one_file_given_twice_is_a_usage_error_naming_it() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("cli-given-twice");
    let job = dir.path().join("job");
    std::fs::create_dir_all(&job).unwrap();
    let f = job.join("rank0.json.gz");
    std::fs::copy(corpus.path("micro/a100-simple-add.json.gz"), &f).unwrap();
    std::fs::copy(
        corpus.path("micro/a100-event-sync.json.gz"),
        job.join("rank1.json.gz"),
    )
    .unwrap();
    let link = dir.path().join("link.json.gz");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&f, &link).unwrap();
    #[cfg(not(unix))]
    std::fs::copy(&f, &link).unwrap();
    let why = "; each trace is one rank, give it once";
    let (fs, js, ls) = (f.display(), job.display(), link.display());
    // (arguments, run in `job`?, the refusal)
    let cases: Vec<(Vec<String>, bool, String)> = vec![
        (
            vec![fs.to_string(), fs.to_string()],
            false,
            format!("error: {fs} is given twice{why}"),
        ),
        (
            vec!["./rank0.json.gz".into(), "rank0.json.gz".into()],
            true,
            format!("error: ./rank0.json.gz is given twice (as ./rank0.json.gz and as rank0.json.gz){why}"),
        ),
        (
            vec![js.to_string(), fs.to_string()],
            false,
            format!("error: {fs} is given twice (in {js} and as {fs}){why}"),
        ),
        (
            vec![fs.to_string(), ls.to_string()],
            false,
            format!("error: {fs} is given twice (as {fs} and as {ls}){why}"),
        ),
    ];
    let out_dir = dir.path().join("out");
    let html = dir.path().join("r.html");
    let commands: [&[&str]; 5] = [
        &["replay"],
        &["inspect"],
        &["predict", "--dp", "2"],
        &["report", "-o", html.to_str().unwrap()],
        &["ingest", "--out", out_dir.to_str().unwrap()],
    ];
    for (args, in_job, want) in &cases {
        for cmd in commands {
            let mut c = lumos();
            c.args(cmd).args(args);
            if *in_job {
                c.current_dir(&job);
            }
            let out = c.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd:?} {args:?}: {err}");
            assert!(err.starts_with(want.as_str()), "{cmd:?} {args:?}: {err}");
            assert!(out.stdout.is_empty(), "{cmd:?} {args:?}: printed a result");
        }
    }
    assert!(!html.exists() && !out_dir.exists(), "wrote before refusing");
    // The two files, each given once, are read; a file compared with
    // itself is a diff of no change.
    let v = replay_json(&[], std::slice::from_ref(&job));
    assert_eq!(v["traces"].as_array().unwrap().len(), 2, "{v}");
    run_ok(lumos().arg("diff").arg(&f).arg(&link));
}
