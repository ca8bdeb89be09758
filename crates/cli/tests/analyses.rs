//! The analyses from the command line: `replay --steps`, `--critical-path`,
//! one `--scale-kernels` syntax with `predict`, `lumos diff`, progress
//! only on a terminal, a job's straggler summary first.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use common::{lumos, lumos_json, run_ok};
use lumos_testkit::TempDir;

fn window_us(v: &serde_json::Value) -> f64 {
    v["traces"][0]["window"]["replayed_us"].as_f64().unwrap()
}

#[test]
fn steps_select_what_is_analysed() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let f = [corpus.path("single-rank/a100-recsys-rank3of8.json.gz")];
    let all = lumos_json(&["replay"], &f);
    let names: Vec<String> = all["traces"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    let some = lumos_json(&["replay", "--steps", "1..3"], &f);
    let a = &some["traces"][0]["analysis"];
    assert_eq!(a["selected_steps"], serde_json::json!(names[1..3]));
    assert_eq!(a["measured"]["steps"].as_array().unwrap().len(), 2);
    assert_eq!(a["critical_path"].as_array().unwrap().len(), 2);
    let by_name = lumos_json(&["replay", "--steps", &names[2]], &f);
    assert_eq!(
        by_name["traces"][0]["analysis"]["measured"]["steps"][0]["index"],
        2
    );
    // The steps' own table is not cut: the summary still covers them all.
    assert_eq!(some["traces"][0]["steps"], all["traces"][0]["steps"]);
    for bad in ["99", "ProfilerStep#0", "3..1"] {
        let out = lumos()
            .args(["replay", "--steps", bad])
            .args(&f)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--steps {bad}");
    }
}

#[test]
fn one_scale_syntax_in_replay_and_predict() {
    let dir = TempDir::new("scale");
    let out = lumos()
        .args(["synth", "--model", "gpt-tiny", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let f = [dir.join("rank0.json.gz")];
    let base = window_us(&lumos_json(&["replay"], &f));
    // The deprecated form and the new one are the same what-if.
    let old = window_us(&lumos_json(
        &[
            "replay",
            "--scale-kernels",
            "0.5",
            "--scale-only",
            "compute",
        ],
        &f,
    ));
    let new = window_us(&lumos_json(
        &["replay", "--scale-kernels", "class:compute=0.5"],
        &f,
    ));
    assert_eq!(old, new);
    assert!(new < base);
    // Classes found from shapes, as predict finds them; repeatable, the
    // factors of one kernel multiplied (gpt-tiny's GEMMs are the kernels
    // named `gemm`; one pattern twice is refused).
    let gemm = window_us(&lumos_json(
        &["replay", "--scale-kernels", "class:gemm=0.5"],
        &f,
    ));
    assert!(new < gemm && gemm < base, "{new} {gemm} {base}");
    let both = window_us(&lumos_json(
        &[
            "replay",
            "--scale-kernels",
            "class:gemm=0.5",
            "--scale-kernels",
            "gemm=2",
        ],
        &f,
    ));
    assert_eq!(both, base);
    // predict takes the same values.
    let p = lumos_json(&["predict", "--scale-kernels", "class:gemm=0.5"], &f);
    assert!(p["mean_predicted_ms"].as_f64().unwrap() < p["mean_replayed_ms"].as_f64().unwrap());
    for bad in [
        vec!["--scale-kernels", "class:nope=2"],
        vec!["--scale-kernels", "0"],
        vec!["--scale-kernels", "0.5", "--scale-kernels", "2"],
        vec![
            "--scale-kernels",
            "class:gemm=0.5",
            "--scale-kernels",
            "class:gemm=2",
        ],
        vec!["--scale-only", "comm"],
        vec!["--scale-kernels", "gemm=0.5", "--scale-pattern", "x"],
    ] {
        let out = lumos().arg("replay").args(&bad).args(&f).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn critical_paths_are_written_for_perfetto_and_as_json() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("critical");
    run_ok(
        lumos()
            .arg("replay")
            .arg(corpus.path("single-rank/a100-alexnet-cuda-sync.json.gz"))
            .arg("--critical-path")
            .arg(dir.path()),
    );
    let marked = dir.join("a100-alexnet-cuda-sync.critical.json.gz");
    let t = lumos_trace::read_path(&marked).unwrap();
    assert!(!t.events.is_empty());
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("a100-alexnet-cuda-sync.critical-path.json")).unwrap(),
    )
    .unwrap();
    assert!(json["trace"]
        .as_str()
        .unwrap()
        .ends_with("a100-alexnet-cuda-sync.json.gz"));
    assert!(!json["hops"].as_array().unwrap().is_empty());
    assert!(json["steps"][0]["verdict"].is_string());
    // A job's path crosses ranks; it is in the job report instead.
    let job = lumos()
        .arg("replay")
        .arg(corpus.path("multi-rank/dlrm-8xv100"))
        .arg("--critical-path")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(job.status.code(), Some(2));
}

#[test]
fn diff_of_captures_of_a_replay_and_of_a_prediction() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let a = corpus.path("single-rank/v100-resnet50-2021-capture-a.json.gz");
    let b = corpus.path("single-rank/v100-resnet50-2021-capture-b.json.gz");
    let d = lumos_json(&["diff"], &[a.clone(), b]);
    assert_eq!(d["steps"].as_array().unwrap().len(), 6);
    assert_eq!(d["operators"][0]["status"], "faster");
    // Thresholds: with a huge one nothing changed.
    let none = lumos_json(&["diff", "--min-change-us", "1e9"], &[a.clone(), a.clone()]);
    assert!(none["operators"].as_array().unwrap().is_empty());
    assert!(none["kernels"].as_array().unwrap().is_empty());
    // A what-if: the replay with compute kernels twice as fast.
    let dir = TempDir::new("diff");
    let out = lumos()
        .arg("replay")
        .arg(&a)
        .args(["--scale-kernels", "class:compute=0.5", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let fast = dir.join("v100-resnet50-2021-capture-a.replayed.json.gz");
    let d = lumos_json(&["diff"], &[a, fast]);
    let k = &d["kernels"][0];
    assert_eq!(k["status"], "faster");
    assert!((k["delta_pct"].as_f64().unwrap() + 50.0).abs() < 0.1, "{k}");
    // A prediction's timeline (predict --out) against its trace.
    let synth = TempDir::new("diff-synth");
    let ok = lumos()
        .args(["synth", "--model", "gpt-tiny", "--out"])
        .arg(synth.path())
        .output()
        .unwrap();
    assert!(ok.status.success());
    let pred = TempDir::new("diff-pred");
    let rank0 = synth.join("rank0.json.gz");
    let ok = lumos()
        .arg("predict")
        .arg(&rank0)
        .args(["--scale-kernels", "class:gemm=0.5", "--out"])
        .arg(pred.path())
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let d = lumos_json(&["diff"], &[rank0, pred.join("rank0.predicted.json.gz")]);
    assert!(d["b"]["mean_step_us"].as_f64() < d["a"]["mean_step_us"].as_f64());
    let text = lumos()
        .args(["diff", "--top", "3"])
        .arg(dir.join("v100-resnet50-2021-capture-a.replayed.json.gz"))
        .arg(dir.join("v100-resnet50-2021-capture-a.replayed.json.gz"))
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("mean step +0.00%"), "{text}");
}

#[test]
fn piped_stderr_has_no_progress_bars() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for args in [vec!["replay"], vec!["replay", "--json"], vec!["inspect"]] {
        let out = lumos()
            .args(&args)
            .arg(corpus.path("multi-rank/dlrm-8xv100"))
            .output()
            .unwrap();
        assert!(out.status.success());
        for stream in [&out.stderr, &out.stdout] {
            assert!(!stream.contains(&0x1b), "{args:?}: escape codes");
            assert!(!stream.contains(&b'\r'), "{args:?}: carriage returns");
        }
    }
}

/// Runs `lumos ARGS` on a pseudo-terminal (util-linux's `script`), as a
/// person at a terminal sees it: stdout and stderr together. None where
/// `script` is missing.
fn on_a_terminal(args: &[&str]) -> Option<String> {
    let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_lumos"))
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let out = std::process::Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .env_remove("LUMOS_NO_PROGRESS")
        .output()
        .ok()?;
    assert!(out.status.success(), "{args:?}: {out:?}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn synth_and_ingest_show_their_progress_on_a_terminal_and_clear_it() {
    let dir = TempDir::new("terminal-progress");
    let job = dir.join("job").display().to_string();
    let Some(shown) = on_a_terminal(&[
        "synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "2", "--dp", "2", "--ranks", "all",
        "--out", &job,
    ]) else {
        eprintln!("skipped: no `script` to run a pseudo-terminal");
        return;
    };
    assert!(
        shown.contains("writing ranks") && shown.contains("8/8"),
        "{shown:?}"
    );
    // The bar is cleared before the files are listed, then the commands
    // to type next.
    let listed = shown.rsplit("\x1b[2K").next().unwrap();
    let (next, files): (Vec<&str>, Vec<&str>) =
        listed.lines().partition(|l| l.starts_with("next: lumos "));
    assert_eq!((files.len(), next.len()), (8, 2), "{shown:?}");
    assert!(
        files.iter().all(|l| l.trim_end().ends_with(".json.gz")),
        "{listed:?}"
    );

    let out = dir.join("lgraph").display().to_string();
    let shown = on_a_terminal(&["ingest", &job, "-o", &out]).unwrap();
    assert!(
        shown.contains("ingesting") && shown.contains("8/8"),
        "{shown:?}"
    );
    let listed = shown.rsplit("\x1b[2K").next().unwrap();
    assert_eq!(listed.lines().count(), 8, "{shown:?}");
    assert!(
        listed.lines().all(|l| l.contains(".lgraph: rank")),
        "{listed:?}"
    );
}

#[test]
fn a_job_starts_with_its_stragglers() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let out = lumos()
        .arg("replay")
        .arg(corpus.path("multi-rank/dlrm-8xv100"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("job: 8 ranks; who waited for whom"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("kept the others waiting longest"),
        "{}",
        lines[1]
    );
    let first_rank = lines
        .iter()
        .position(|l| l.contains("rank0.json.gz"))
        .unwrap();
    let waiting = lines
        .iter()
        .position(|l| l.contains("waiting for peers"))
        .unwrap();
    assert!(
        waiting < first_rank && first_rank < 20,
        "{waiting} {first_rank}"
    );
}

#[test]
fn replay_prints_the_analyses_as_tables() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let out = lumos()
        .arg("replay")
        .arg(corpus.path("single-rank/v100-resnet50-2021-capture-a.json.gz"))
        .args(["--steps", "0..3", "--top", "4"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = |head: &str| {
        lines
            .iter()
            .position(|l| l.trim_start().starts_with(head))
            .unwrap_or_else(|| panic!("no `{head}` in\n{text}"))
    };
    // Three steps and the selection, each the four parts in % adding up
    // to 100 (to the rounding of the print).
    let steps = at("per step (measured, % of step)");
    let rows = &lines[steps + 1..steps + 5];
    let names: Vec<&str> = rows
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ProfilerStep#5",
            "ProfilerStep#6",
            "ProfilerStep#7",
            "selection"
        ]
    );
    for row in rows {
        let pcts: Vec<f64> = row
            .split_whitespace()
            .filter_map(|w| w.strip_suffix('%')?.parse().ok())
            .collect();
        let sum: f64 = pcts[..4].iter().sum();
        assert!((sum - 100.0).abs() <= 0.21, "{row}: {sum}");
    }
    // The idle time of the same rows by cause, in a table of its own
    // (one table ran to 155 columns): the causes add up to the idle share.
    let idle = at("idle per step (measured, ms)");
    assert_eq!(idle, steps + 5);
    for (row, idle_row) in rows.iter().zip(&lines[idle + 1..idle + 5]) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let span: f64 = cells[cells.len() - 7].parse().unwrap();
        let idle_pct: f64 = cells[cells.len() - 3]
            .trim_end_matches('%')
            .parse()
            .unwrap();
        let ms: Vec<f64> = idle_row
            .split_whitespace()
            .skip(1)
            .map(|w| w.parse().unwrap())
            .collect();
        let sum: f64 = ms.iter().sum();
        assert!(
            (sum - span * idle_pct / 100.0).abs() <= 0.01 * span,
            "{row} / {idle_row}"
        );
    }
    // Under them, what the selection is (the steps' times added, not the
    // whole window), on two lines; then --top cuts the tables.
    let note = at("(selection: the selected steps' times added");
    assert_eq!(note, idle + 5);
    let kernels = at("top GPU tasks (4 of ");
    assert_eq!(kernels, note + 2);
    let ops = at("GPU time by launching operator (4 of ");
    assert_eq!(ops, kernels + 5);
    assert!(
        lines[ops + 1].contains("aten::cudnn_convolution"),
        "{}",
        lines[ops + 1]
    );
    // This capture records the bytes of each allocation, not the totals.
    let memory = at("memory, GPU 0 (");
    assert!(lines[memory].contains("allocated summed from the trace's start"));
    assert!(lines[memory + 1].contains("peak allocated GiB"));
    assert!(lines[memory + 2].trim_start().starts_with("ProfilerStep#5"));
    // A verdict per step, with the operator that costs it most and its
    // share of the path.
    let paths = at("critical path per step (replayed)");
    assert!(lines[paths + 1].contains("most on it"));
    for l in &lines[paths + 2..paths + 5] {
        assert!(l.contains("CPU-bound") || l.contains("GPU-bound"), "{l}");
        assert!(l.ends_with('%') && l.matches('%').count() == 4, "{l}");
    }
}

/// A job of more ranks than a person reads prints sixteen ranks' rows and
/// tables, those the summary names among them, and says how many it left
/// out; `--top` shows more and `--json` every rank.
#[test]
fn a_large_job_prints_the_ranks_that_matter() {
    let job = TempDir::new("large-job");
    run_ok(
        lumos()
            .args(["synth", "--model", "gpt-tiny", "--pp", "2", "--dp", "12"])
            .args(["--ranks", "all", "--out"])
            .arg(job.path()),
    );
    let replay = |top: &str| {
        let out = run_ok(lumos().args(["replay", "--top", top]).arg(job.path()));
        String::from_utf8(out.stdout).unwrap()
    };
    let sections = |text: &str| -> Vec<u32> {
        (text.lines())
            .filter_map(|l| {
                l.split_once(".json.gz (rank ")?
                    .1
                    .split_once(',')?
                    .0
                    .parse()
                    .ok()
            })
            .collect()
    };
    let text = replay("10");
    let shown = sections(&text);
    assert_eq!(shown.len(), 16, "{text}");
    let rows = (text.lines())
        .skip_while(|l| !l.contains("kept others waiting"))
        .skip(1)
        .take_while(|l| !l.contains("more ranks"))
        .count();
    assert_eq!(rows, 16, "{text}");
    assert!(
        text.contains("    ... 8 more ranks (--top N shows more"),
        "{text}"
    );
    assert!(
        text.contains("(the tables of 8 more ranks left out"),
        "{text}"
    );
    // The ranks the summary names have their tables.
    let straggler = (text.lines())
        .find_map(|l| {
            l.split_once("straggler: rank ")?
                .1
                .split_once(' ')?
                .0
                .parse()
                .ok()
        })
        .unwrap();
    assert!(shown.contains(&straggler), "{straggler} {shown:?}");
    let job_steps = (text.lines())
        .skip_while(|l| !l.contains("longest step on rank"))
        .skip(1)
        .take_while(|l| !l.contains("(a job step lasts"));
    let mut named = vec![straggler];
    for line in job_steps {
        let ranks = line.split_once("%   ").unwrap().1;
        let longest: u32 = ranks.split(" / ").next().unwrap().parse().unwrap();
        assert!(shown.contains(&longest), "{line}: {shown:?}");
        named.push(longest);
    }
    let all = replay("30");
    assert_eq!(sections(&all).len(), 24);
    assert!(
        !all.contains("more ranks (--top") && !all.contains("tables of"),
        "{all}"
    );
    let v = lumos_json(&["replay"], &[job.path().to_path_buf()]);
    assert_eq!(v["traces"].as_array().unwrap().len(), 24);
    let waiting = v["job"]["waiting"].as_array().unwrap();
    assert_eq!(waiting.len(), 24);
    // The rest of those shown kept the others waiting at least as long as
    // any rank left out.
    let caused = |w: &serde_json::Value| w["measured"]["caused_us"].as_f64().unwrap();
    let rank = |w: &serde_json::Value| w["rank"].as_u64().unwrap() as u32;
    let least_shown = (waiting.iter())
        .filter(|w| shown.contains(&rank(w)) && !named.contains(&rank(w)))
        .map(caused)
        .fold(f64::INFINITY, f64::min);
    let most_hidden = (waiting.iter())
        .filter(|w| !shown.contains(&rank(w)))
        .map(caused)
        .fold(0.0, f64::max);
    assert!(least_shown >= most_hidden, "{least_shown} {most_hidden}");
}

/// One whole window for one rank, whatever the command: `lumos replay`'s
/// `whole window` holds every step (the DLRM rank 0's step of 14.455 ms
/// sat in a window of 14.428 ms: the window was its tasks' alone and the
/// step annotation opens 76 us before its first task), and `lumos
/// predict`'s breakdown of every step together is over that same window
/// (465.171 ms, the steps' hull, against the replay's 465.269 ms on the
/// recsys rank, whose tasks run before its first step and after its
/// last). The selection (the steps' times added, 465.150 ms) is said to
/// be a sum, not the window.
#[test]
fn one_whole_window_holds_every_step_in_replay_and_predict() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in [
        "single-rank/a100-recsys-rank3of8.json.gz",
        "multi-rank/dlrm-8xv100/rank0.json.gz",
        "single-rank/v100-resnet50-2021-capture-a.json.gz",
    ] {
        let f = [corpus.path(rel)];
        let r = lumos_json(&["replay"], &f);
        let t = &r["traces"][0];
        let window = &t["window"];
        for side in ["measured_us", "replayed_us"] {
            let w = window[side].as_f64().unwrap();
            for s in t["steps"].as_array().unwrap() {
                assert!(
                    s[side].as_f64().unwrap() <= w,
                    "{rel}: {s} longer than {window}"
                );
            }
            // Breakdowns add up to the window.
            let b = &t["breakdown"][&side[..side.len() - 3]];
            assert_eq!(b["total_us"].as_f64().unwrap(), w, "{rel}: {b}");
        }
        let p = lumos_json(&["predict"], &f);
        let stage = &p["stages"][0];
        for side in ["replayed", "predicted"] {
            let total_ms = stage[side]["total_ms"].as_f64().unwrap();
            assert!(
                (total_ms * 1e3 - window["replayed_us"].as_f64().unwrap()).abs() < 0.5,
                "{rel}: predict's {side} window {total_ms} ms, replay's {window}"
            );
        }
    }
    let f = [corpus.path("single-rank/a100-recsys-rank3of8.json.gz")];
    let out = run_ok(lumos().arg("replay").args(&f));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(selection: the selected steps' times added, not the whole window"),
        "{text}"
    );
}

/// A collective over a group of one rank (a DDP run on one GPU still calls
/// its all-reduce) moves nothing across links: its bus bandwidth is not
/// applicable, `-` in text and null in JSON, and nothing of its row is NaN
/// or infinite. Before, it read busbw 0.00 (bus factor 2(n-1)/n = 0). The
/// corpus has no such group: its DDP rank of two is made one of one.
#[test]
fn a_group_of_one_has_no_bus_bandwidth() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let gz =
        std::fs::read(corpus.path("single-rank/a100-ddp-rank0of2-event-record.json.gz")).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    let alone = [
        ("\"Group size\": 2", "\"Group size\": 1"),
        (
            "\"Process Group Ranks\": \"[0, 1]\"",
            "\"Process Group Ranks\": \"[0]\"",
        ),
        ("\"pg_size\": 2", "\"pg_size\": 1"),
        ("\"ranks\": [0, 1]", "\"ranks\": [0]"),
        ("\"world_size\": 2", "\"world_size\": 1"),
    ];
    for (two, one) in alone {
        assert!(text.contains(two), "{two}");
        text = text.replace(two, one);
    }
    let dir = TempDir::new("cli-group-of-one");
    let file = dir.join("rank0.json");
    std::fs::write(&file, text).unwrap();
    let v = lumos_json(&["replay"], std::slice::from_ref(&file));
    let rows = v["traces"][0]["analysis"]["measured"]["collectives"]
        .as_array()
        .unwrap();
    let all_reduce = (rows.iter())
        .find(|r| r["collective"] == "all_reduce")
        .unwrap();
    assert_eq!(all_reduce["group_size"], 1);
    assert!(all_reduce["algbw_gbps"].as_f64().unwrap() > 0.0);
    for r in rows.iter().filter(|r| r["group_size"] == 1) {
        assert!(r["bus_factor"].is_null(), "{r}");
        assert!(r["busbw_gbps"].is_null(), "{r}");
    }
    // No NaN or infinity anywhere: serde_json writes them as null, so every
    // number left must be finite, and every null one the rows document.
    for r in rows {
        for (k, x) in r.as_object().unwrap() {
            if let Some(f) = x.as_f64() {
                assert!(f.is_finite(), "{k}: {f}");
            }
        }
    }
    let out = run_ok(lumos().arg("replay").arg(&file));
    let text = String::from_utf8(out.stdout).unwrap();
    let row = (text.lines())
        .find(|l| l.trim_start().starts_with("all_reduce"))
        .unwrap_or_else(|| panic!("no all_reduce row in\n{text}"));
    assert!(row.trim_end().ends_with(" -"), "{row}");
    assert!(!row.contains("0.00 "), "{row}");
}
