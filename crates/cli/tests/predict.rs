//! End-to-end tests of `lumos predict` and of the structure `lumos inspect`
//! reports.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::path::{Path, PathBuf};

use common::{lumos, lumos_json as json, run_ok, sentence};
use lumos_testkit::TempDir;

fn temp_dir(what: &str) -> TempDir {
    TempDir::new(&format!("cli-predict-{what}"))
}

/// One rank per stage of a synthesized GPT tiny at TP2 x PP2 x DP2.
fn synth_pipeline(dir: &Path) -> Vec<PathBuf> {
    let out = run_ok(
        lumos()
            .args([
                "synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "2", "--dp", "2",
            ])
            .args(["--microbatches", "4", "--out"])
            .arg(dir),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect()
}

#[test]
fn identity_prediction_is_the_replay() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let path = corpus.path("single-rank/mi300x-resnet-ddp-rank0of8.json.gz");
    let v = json(&["predict"], std::slice::from_ref(&path));
    for s in v["steps"].as_array().unwrap() {
        assert_eq!(s["replayed_ms"], s["predicted_ms"]);
    }
    // The traced configuration is the target's, and says whether its
    // degrees were guessed: this trace lists its process groups.
    let mut traced = v["traced"].clone();
    let guessed = traced.as_object_mut().unwrap().remove("degrees_guessed");
    assert_eq!(guessed, Some(false.into()), "{}", v["traced"]);
    assert_eq!(traced, v["target"]);
    // A ResNet has no transformer layers: the sizes the trace does not
    // tell are null (a 0 would read as a model of no layers).
    for size in ["layers", "hidden", "ffn"] {
        assert!(v["traced"][size].is_null(), "{size}: {}", v["traced"]);
    }
    assert_eq!(v["traced"]["dp"], 8);
    assert_eq!(v["coupled"], false);
    // A steady trace predicted as it is: every GPU time measured, high.
    assert_eq!(v["steadiness"]["drifting"], false, "{}", v["steadiness"]);
    let c = &v["confidence"];
    assert_eq!(c["verdict"], "high", "{c}");
    assert!(c["reasons"].as_array().unwrap().is_empty());
    assert_eq!(c["measured_gpu_pct"], 100.0);
    assert!(c["extrapolations"].as_array().unwrap().is_empty());
    assert_eq!(
        c["inferred_critical_path_pct"].as_array().unwrap().len(),
        v["steps"].as_array().unwrap().len()
    );
    assert!(c["models"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["used"] == false));
    // The replay it shows is `lumos replay`'s.
    let r = json(&["replay"], &[path]);
    let replayed: Vec<f64> = r["traces"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["replayed_us"].as_f64().unwrap() / 1e3)
        .collect();
    let predicted: Vec<f64> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["predicted_ms"].as_f64().unwrap())
        .collect();
    for (a, b) in replayed.iter().zip(&predicted) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }
}

/// The MI300X DDP trace's GPU lags its CPU: each step's CPU annotation
/// lasts about 16 ms, its GPU work ends 49 to 54 ms after the step began,
/// and when the capture starts the GPU still runs the previous step's
/// work, three all-reduces included, whose launches are not in the trace.
/// `--dp 1` removes every collective (all are the data-parallel group's),
/// those three included, and settles at the CPU's step; `--dp 8`, the
/// traced degree, is the replay. Before: 7.785 ms steady, the three
/// all-reduces kept at their DP-8 time, and a smaller gain than halving
/// every collective.
#[test]
fn dp_1_of_a_gpu_lagging_its_cpu_removes_every_collective_and_keeps_the_cpu_s_step() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let path = corpus.path("single-rank/mi300x-resnet-ddp-rank0of8.json.gz");
    let paths = std::slice::from_ref(&path);
    // The no-op edit is the prediction without edits, whose steps are the
    // replay's (`identity_prediction_is_the_replay`).
    let same = json(&["predict", "--dp", "8"], paths);
    let none = json(&["predict"], paths);
    assert_eq!(same["steps"], none["steps"]);
    assert_eq!(same["steadiness"], none["steadiness"]);
    let s = &same["steadiness"];
    assert_eq!(s["steady_step_ms"], s["replayed_steady_step_ms"], "{s}");
    assert_eq!(s["drifting"], false, "{s}");
    // The CPU's own step: no annotation is shorter than 15.8 ms.
    let inspect = json(&["inspect"], paths);
    let cpu_step = (inspect["traces"][0]["steps"].as_array().unwrap().iter())
        .map(|s| s["annotation_us"].as_f64().unwrap() / 1e3)
        .fold(f64::INFINITY, f64::min);
    assert!(cpu_step > 15.8, "{cpu_step}");
    let v = json(&["predict", "--dp", "1"], paths);
    let s = &v["steadiness"];
    let steady = s["steady_step_ms"].as_f64().unwrap();
    assert!(
        steady >= cpu_step,
        "steady {steady} ms < the CPU's {cpu_step} ms: {s}"
    );
    assert!(
        steady <= s["replayed_steady_step_ms"].as_f64().unwrap(),
        "{s}"
    );
    assert_eq!(s["drifting"], true, "the backlog drains: {s}");
    assert_eq!(v["confidence"]["verdict"], "low");
    // No communication left in the predicted window.
    let predicted = &v["stages"][0]["predicted"];
    assert_eq!(predicted["exposed_comm_ms"], 0.0, "{predicted}");
    assert_eq!(predicted["overlapped_ms"], 0.0, "{predicted}");
    let said = (v["assumptions"].as_array().unwrap().iter())
        .filter_map(|a| a.as_str())
        .any(|a| a.contains("launched before the capture began"));
    assert!(said, "{}", v["assumptions"]);
    // Removing data parallelism gains at least what halving every
    // collective does.
    let half = json(&["predict", "--scale-kernels", "class:comm=0.5"], paths);
    let mean = |v: &serde_json::Value| v["mean_predicted_ms"].as_f64().unwrap();
    assert!(mean(&v) <= mean(&half), "{} > {}", mean(&v), mean(&half));
}

#[test]
fn pipeline_prediction_with_timelines() {
    let dir = temp_dir("pp");
    let files = synth_pipeline(&dir.join("traces"));
    assert_eq!(files.len(), 2);
    let out_dir = dir.join("out");
    let v = json(
        &[
            "predict",
            "--pp",
            "4",
            "--microbatches",
            "8",
            "--layers",
            "8",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &files,
    );
    assert_eq!(v["target"]["pp"], 4);
    assert_eq!(v["stages"].as_array().unwrap().len(), 4);
    assert_eq!(v["coupled"], true);
    assert!(!v["assumptions"].as_array().unwrap().is_empty());
    let sources: Vec<&str> = v["gpu_ms_by_source"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[0].as_str().unwrap())
        .collect();
    assert!(sources.contains(&"modelled"));
    // Two synthesized steps: whether they are steady is unknown, which an
    // edited prediction's verdict counts.
    assert!(v["steadiness"].is_null(), "{}", v["steadiness"]);
    let c = &v["confidence"];
    assert_ne!(c["verdict"], "high", "{c}");
    assert!(c["modelled_gpu_pct"].as_f64().unwrap() > 0.0, "{c}");
    let total = ["measured_gpu_pct", "scaled_gpu_pct", "modelled_gpu_pct"]
        .iter()
        .map(|k| c[k].as_f64().unwrap())
        .sum::<f64>();
    assert!((total - 100.0).abs() < 1e-6, "{c}");
    assert!(["high", "medium", "low"].contains(&c["verdict"].as_str().unwrap()));
    // One Perfetto-readable timeline per stage, named after its rank in
    // the predicted job (4 ranks a stage), with the predicted steps.
    let written = files_in(&out_dir);
    assert_eq!(written.len(), 4, "{written:?}");
    let predicted: Vec<f64> = v["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step_ms"].as_f64().unwrap())
        .collect();
    for (k, want) in predicted.iter().enumerate() {
        let f = &out_dir.join(format!("rank{}.predicted.json.gz", 4 * k));
        assert!(written.contains(f), "{f:?} not in {written:?}");
        let t = json(&["inspect", "--per-trace"], std::slice::from_ref(f));
        let steps = t["traces"][0]["steps"].as_array().unwrap();
        let mean = steps
            .iter()
            .map(|s| s["measured_us"].as_f64().unwrap())
            .sum::<f64>()
            / steps.len() as f64
            / 1e3;
        assert!((mean - want).abs() / want < 0.01, "{mean} vs {want}");
    }
}

/// The files in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// The timelines `--out` writes are the predicted job: replayed together
/// (`lumos replay` of the files, which takes them as one job by itself),
/// every stage is a rank of it, every collective meets its partners, and
/// each job step is the step `lumos predict` printed. Before, they kept
/// the traced job's process groups (world 8) under the predicted ranks
/// and no collective arguments: at PP 4 the last stage shared no
/// collective with the others and was left out (the job replayed 4.5%
/// above the prediction on GPT small), and TP and DP edits matched the
/// tensor-parallel collectives across stages by kernel name (+27% to
/// +44%).
#[test]
fn predicted_timelines_replay_together_as_the_predicted_job() {
    let dir = temp_dir("as-job");
    let files = synth_pipeline(&dir.join("traces"));
    for (k, edit) in [
        &["--pp", "4"][..],
        &["--pp", "4", "--microbatches", "8", "--layers", "8"],
        &["--tp", "4"],
        &["--tp", "1"],
        &["--dp", "4"],
    ]
    .into_iter()
    .enumerate()
    {
        let out = dir.join(format!("out{k}"));
        let job = predicted_and_replayed(&files, edit, &out);
        // Each stage's tensor- and data-parallel peers were not written,
        // so their collectives have no partner here.
        assert!(
            job["matching"]["unmatched_tasks"].as_u64().unwrap() > 0,
            "{edit:?}"
        );
    }
}

/// `lumos predict EDIT --out OUT FILES`, then `lumos replay` of what it
/// wrote: the files are the predicted job (one rank per stage, taken as
/// one job by their names or their directory), every transfer between
/// stages and every gradient-norm reduction pairs up by the rule the
/// written job states (by group and `Seq`, never by kernel name), and
/// each replayed step is the predicted one within a microsecond. Returns
/// the replayed job.
fn predicted_and_replayed(files: &[PathBuf], edit: &[&str], out: &Path) -> serde_json::Value {
    let args = [&["predict"][..], edit, &["--out", out.to_str().unwrap()]].concat();
    let v = json(&args, files);
    let written = files_in(out);
    let stages = v["stages"].as_array().unwrap().len();
    assert_eq!(written.len(), stages, "{edit:?}");
    let r = json(&["replay"], &written);
    // Their directory is the same job.
    let by_dir = json(&["replay"], &[out.to_path_buf()]);
    assert_eq!(by_dir["job"], r["job"], "{edit:?}");
    let job = &r["job"];
    assert!(job.is_object(), "{edit:?}: not replayed as one job");
    assert_eq!(job["ranks"].as_array().unwrap().len(), stages, "{edit:?}");
    assert_eq!(job["missing_ranks"], serde_json::json!([]), "{edit:?}");
    let matching = &job["matching"];
    assert_eq!(matching["problems"], serde_json::json!([]), "{edit:?}");
    let rules = &matching["by_rule"];
    assert!(
        rules["point_to_point"].as_u64().unwrap() > 0,
        "{edit:?}: {rules}"
    );
    assert!(
        rules["process_group_seq"].as_u64().unwrap() > 0,
        "{edit:?}: {rules}"
    );
    assert!(
        rules.get("kernel_family_order").is_none(),
        "{edit:?}: {rules}"
    );
    let predicted = v["steps"].as_array().unwrap();
    let replayed = job["steps"].as_array().unwrap();
    assert_eq!(replayed.len(), predicted.len(), "{edit:?}");
    for (p, r) in predicted.iter().zip(replayed) {
        let want = p["predicted_ms"].as_f64().unwrap() * 1e3;
        let got = r["replayed_us"].as_f64().unwrap();
        assert!(
            (got - want).abs() <= 1.0,
            "{edit:?}: replayed together {got:.3} us, predicted {want:.3} us"
        );
    }
    job.clone()
}

/// Interleaved pipelines of three and four stages (`lumos synth
/// --virtual-stages 2`), predicted with schedule edits and written with
/// `--out`, replay together to the predicted steps with every transfer
/// paired. Before, the last stage's first forward receive (the last
/// chunk's forwards open with the loss head's data loading after theirs,
/// so the forwards shared no opening) was left in the step's prologue,
/// which the prediction paired with nothing: the files stated no job
/// ("2 recv written without a process group") and replayed one by one.
#[test]
fn predicted_interleaved_pipelines_replay_together_as_the_predicted_job() {
    let dir = temp_dir("interleaved-as-job");
    let synth = |name: &str, model: &str, pp: &str, m: &str| -> Vec<PathBuf> {
        let out = run_ok(
            lumos()
                .args(["synth", "--model", model, "--pp", pp, "--microbatches", m])
                .args(["--virtual-stages", "2", "--out"])
                .arg(dir.join(name)),
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(PathBuf::from)
            .collect()
    };
    // Four stages of two chunks need layers in eights: GPT tiny's width.
    let eight = dir.join("eight-layers.json");
    std::fs::write(
        &eight,
        r#"{"name": "gpt-8", "layers": 8, "hidden": 1024, "heads": 16}"#,
    )
    .unwrap();
    let jobs = [
        (synth("pp3", "gpt-small", "3", "6"), "pp3"),
        (synth("pp4", eight.to_str().unwrap(), "4", "4"), "pp4"),
    ];
    for (files, name) in &jobs {
        for (k, edit) in [&["--microbatches", "12"][..], &["--virtual-stages", "1"]]
            .into_iter()
            .enumerate()
        {
            let out = dir.join(format!("{name}-out{k}"));
            let job = predicted_and_replayed(files, edit, &out);
            // Tensor and data parallelism 1: every collective is written.
            assert_eq!(job["matching"]["unmatched_tasks"], 0, "{name} {edit:?}");
        }
    }
    // The traced pipeline's own shape, and three stages made two.
    let (three, _) = &jobs[0];
    for edit in [&["--pp", "3"][..], &["--pp", "2", "--microbatches", "4"]] {
        let out = dir.join(format!("pp3-{}", edit.join("")));
        let job = predicted_and_replayed(three, edit, &out);
        assert_eq!(job["matching"]["unmatched_tasks"], 0, "{edit:?}");
    }
}

/// A real job predicted at another scale (the corpus's DLRM, eight ranks
/// of one stage, at DP 16): its one timeline is rank 0 of the predicted
/// 16, with that rank's groups, its all-reduces in the data-parallel
/// group, and replays to the predicted step; its all-to-alls, whose
/// group the trace does not record, are written without one, and
/// `--out` says so.
#[test]
fn a_corpus_job_s_timeline_states_the_predicted_job() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = temp_dir("dlrm-as-job");
    let out = dir.join("out");
    let p = run_ok(
        lumos()
            .args(["predict", "--dp", "16", "--json", "--out"])
            .arg(&out)
            .arg(corpus.path("multi-rank/dlrm-8xv100")),
    );
    let v: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
    let note = String::from_utf8_lossy(&p.stderr);
    assert!(
        note.contains("SendRecv written without a process group"),
        "{note}"
    );
    let written = files_in(&out);
    assert_eq!(written.len(), 1);
    let t: serde_json::Value =
        serde_json::from_slice(&lumos_testkit::gunzip_file(&written[0])).unwrap();
    let info = &t["distributedInfo"];
    assert_eq!(
        (&info["rank"], &info["world_size"]),
        (&0.into(), &16.into())
    );
    let all: Vec<i64> = (0..16).collect();
    let groups = info["pg_config"].as_array().unwrap();
    let data = groups
        .iter()
        .find(|g| g["pg_desc"] == "DATA_PARALLEL_GROUP")
        .unwrap();
    assert_eq!(data["ranks"], serde_json::json!(all));
    let mut reduces = 0;
    for e in t["traceEvents"].as_array().unwrap() {
        let a = &e["args"];
        if a["Collective name"].is_null() {
            continue;
        }
        assert_eq!(a["Process Group Name"], data["pg_name"], "{e}");
        assert_eq!(a["Process Group Ranks"], format!("{all:?}"), "{e}");
        assert_eq!(a["Seq"], reduces, "{e}");
        reduces += 1;
    }
    assert_eq!(reduces, 3);
    let r = json(&["replay"], &written);
    let replayed = r["traces"][0]["steps"][0]["replayed_us"].as_f64().unwrap() / 1e3;
    let predicted = v["steps"][0]["predicted_ms"].as_f64().unwrap();
    assert!(
        (replayed - predicted).abs() / predicted < 1e-3,
        "{replayed} vs {predicted}"
    );
}

/// What a merged prediction (`--merge`'s `job.predicted.json.gz`) states it
/// was built from, `predictedFrom.stages`, is what the same prediction's
/// per-rank timelines `apart` each state (`predictedFrom`), with the
/// stage's rank in the predicted job (its `distributedInfo.rank` there,
/// its process `rank N` in the merged file) as `predicted_rank`, in stage
/// order. Before, the merged file stated none.
fn assert_merged_states_its_stages(merged: &Path, apart: &[PathBuf]) -> Vec<serde_json::Value> {
    let read = |f: &Path| -> serde_json::Value {
        serde_json::from_slice(&lumos_testkit::gunzip_file(f)).unwrap()
    };
    let mut want: Vec<serde_json::Value> = apart
        .iter()
        .map(|f| {
            let t = read(f);
            let mut from = t["predictedFrom"].clone();
            assert!(from.is_object(), "{}: {t:.200}", f.display());
            from["predicted_rank"] = t["distributedInfo"]["rank"].clone();
            from
        })
        .collect();
    want.sort_by_key(|f| f["predicted_stage"].as_u64());
    let m = read(merged);
    let stages = m["predictedFrom"]["stages"].as_array().cloned();
    assert_eq!(stages, Some(want.clone()), "{}", merged.display());
    // Each stage is a process of the file, `rank N`.
    let processes: Vec<&serde_json::Value> = (m["traceEvents"].as_array().unwrap().iter())
        .filter(|e| e["name"] == "process_name")
        .map(|e| &e["args"]["name"])
        .collect();
    for s in &want {
        let name = format!("rank {}", s["predicted_rank"]);
        assert!(
            processes.iter().any(|p| **p == *name),
            "{name}: {processes:?}"
        );
    }
    want
}

/// A corpus job predicted at another scale with `--merge` (DLRM, eight
/// ranks of one stage, at DP 16): the merged file states the trace its
/// stage was built from, the traced rank and stage, and the stage's rank
/// in the predicted job, as the stage's own timeline does.
#[test]
fn a_merged_prediction_states_what_it_was_built_from() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = temp_dir("merged-from");
    let job = corpus.path("multi-rank/dlrm-8xv100");
    let (merged, apart) = (dir.join("merged"), dir.join("apart"));
    for (out, merge) in [(&merged, true), (&apart, false)] {
        let mut cmd = lumos();
        cmd.args(["predict", "--dp", "16", "--out"]).arg(out);
        if merge {
            cmd.arg("--merge");
        }
        run_ok(cmd.arg(&job));
    }
    let stages =
        assert_merged_states_its_stages(&merged.join("job.predicted.json.gz"), &files_in(&apart));
    assert_eq!(stages.len(), 1, "{stages:?}");
    let s = &stages[0];
    let trace = s["trace"].as_str().unwrap();
    let traced_rank = s["rank"].as_u64().unwrap();
    assert!(
        Path::new(trace).is_absolute()
            && trace.ends_with(&format!("dlrm-8xv100/rank{traced_rank}.json.gz")),
        "{s}"
    );
    assert_eq!(
        (&s["stage"], &s["predicted_stage"], &s["predicted_rank"]),
        (&0.into(), &0.into(), &0.into()),
        "{s}"
    );
}

/// A pipeline's stages whose traces share a file name, in per-host
/// folders: each stage's timeline is named after its rank in the predicted
/// job (at first predict refused them: both would have been
/// `trace.predicted.json.gz`; then they were `trace.rank<N>` at the same
/// scale and `trace-stage<k>` at another, whatever their rank), and says
/// which trace it was built from, in the file (`predictedFrom`) and on
/// the list printed.
#[test]
fn stages_of_one_file_name_are_written_under_their_ranks() {
    let dir = temp_dir("one-name");
    let files = synth_pipeline(&dir.join("traces"));
    assert_eq!(files.len(), 2);
    let mut ranks = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        let rank: u32 = name
            .trim_start_matches("rank")
            .trim_end_matches(".json.gz")
            .parse()
            .unwrap();
        let host = dir.join(format!("host{rank}"));
        std::fs::create_dir_all(&host).unwrap();
        std::fs::copy(f, host.join("trace.json.gz")).unwrap();
        ranks.push(rank);
    }
    ranks.sort_unstable();
    let hosts: Vec<PathBuf> = ranks.iter().map(|r| dir.join(format!("host{r}"))).collect();
    let written = |out_dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let out_dir = dir.join("out");
    json(&["predict", "--out", out_dir.to_str().unwrap()], &hosts);
    let want: Vec<String> = ranks
        .iter()
        .map(|r| format!("rank{r}.predicted.json.gz"))
        .collect();
    assert_eq!(written(&out_dir), want);
    for (name, rank) in want.iter().zip(&ranks) {
        let t: serde_json::Value =
            serde_json::from_slice(&lumos_testkit::gunzip_file(&out_dir.join(name))).unwrap();
        assert_eq!(t["distributedInfo"]["rank"], *rank, "{name}");
    }
    let more = dir.join("more");
    let args = [
        "predict",
        "--pp",
        "4",
        "--microbatches",
        "8",
        "--layers",
        "8",
    ];
    let out = run_ok(lumos().args(args).arg("--out").arg(&more).args(&hosts));
    let text = String::from_utf8_lossy(&out.stdout);
    // Stage k is rank 4k of 16 (TP 2 x DP 2 a stage); stage 0 is built
    // from the first stage's trace, the others from the last stage's.
    let last = hosts[1].join("trace.json.gz");
    let mut want = Vec::new();
    for k in 0..4u32 {
        let name = format!("rank{}.predicted.json.gz", 4 * k);
        let (trace, traced_stage) = match k {
            0 => (hosts[0].join("trace.json.gz"), 0),
            _ => (last.clone(), 1),
        };
        let line = format!(
            "  wrote {}: stage {k}, built from {} (traced rank {}, stage {traced_stage})",
            more.join(&name).display(),
            trace.display(),
            ranks[traced_stage]
        );
        assert!(text.lines().any(|l| l == line), "{line:?} not in\n{text}");
        let t: serde_json::Value =
            serde_json::from_slice(&lumos_testkit::gunzip_file(&more.join(&name))).unwrap();
        assert_eq!(t["distributedInfo"]["rank"], 4 * k, "{name}");
        let from = &t["predictedFrom"];
        assert_eq!(from["trace"], trace.display().to_string(), "{name}");
        assert_eq!(from["rank"], ranks[traced_stage], "{name}");
        assert_eq!(from["stage"], traced_stage, "{name}");
        assert_eq!(from["predicted_stage"], k, "{name}");
        want.push(name);
    }
    want.sort();
    assert_eq!(written(&more), want);
}

/// The timelines `--merge` writes (`job.predicted.json.gz`,
/// `job.replayed.json.gz`) hold several ranks, each a process `rank N`:
/// read as one rank they made nonsense (+290% steps), so every command
/// refuses them as bad input, saying what they are and what to give
/// instead; the per-rank timelines read back.
#[test]
fn merged_timelines_are_refused_as_inputs() {
    let dir = temp_dir("merged-back");
    let traces = dir.join("traces");
    synth_pipeline(&traces);
    let predicted = dir.join("predicted");
    let replayed = dir.join("replayed");
    let run = |args: &[&str], out: &Path| {
        run_ok(lumos().args(args).arg("--out").arg(out).arg(&traces));
    };
    run(
        &["predict", "--pp", "4", "--layers", "8", "--merge"],
        &predicted,
    );
    run(&["replay", "--merge"], &replayed);
    for (file, ranks) in [
        (predicted.join("job.predicted.json.gz"), 4),
        (replayed.join("job.replayed.json.gz"), 2),
    ] {
        for cmd in ["replay", "predict", "inspect"] {
            let out = lumos().arg(cmd).arg(&file).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{cmd} {}: {err}",
                file.display()
            );
            for want in [
                &format!("merged of {ranks} ranks")[..],
                "one rank per file",
                "without --merge",
            ] {
                assert!(err.contains(want), "{cmd}: {err}");
            }
        }
    }
    // The same timelines written apart read back, each as its rank.
    let apart = dir.join("apart");
    run(&["predict", "--pp", "4", "--layers", "8"], &apart);
    let files: Vec<PathBuf> = std::fs::read_dir(&apart)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 4);
    let r = json(&["replay", "--per-trace"], &files);
    assert_eq!(r["traces"].as_array().unwrap().len(), 4, "{r}");
    // The merged file states its four stages as they state themselves.
    let merged = predicted.join("job.predicted.json.gz");
    let stages = assert_merged_states_its_stages(&merged, &files);
    let ranks: Vec<u64> = (stages.iter())
        .map(|s| s["predicted_rank"].as_u64().unwrap())
        .collect();
    // Stage k is rank 4k of 16 (TP 2 x DP 2 a stage).
    assert_eq!(ranks, [0, 4, 8, 12], "{stages:?}");
}

#[test]
fn kernels_network_and_human_output() {
    let dir = temp_dir("net");
    let files = synth_pipeline(&dir.join("traces"));
    std::fs::write(
        dir.join("net.json"),
        r#"{"preset": "h100", "inter_node": {"bandwidth_gbps": 25}}"#,
    )
    .unwrap();
    let v = json(
        &[
            "predict",
            "--dp",
            "16",
            "--network",
            dir.join("net.json").to_str().unwrap(),
        ],
        &files,
    );
    assert!(v["calibration"]["target_network"]
        .as_str()
        .unwrap()
        .contains("net.json"));
    let slow = v["mean_predicted_ms"].as_f64().unwrap();
    let v = json(&["predict", "--dp", "16"], &files);
    assert!(slow > v["mean_predicted_ms"].as_f64().unwrap());
    let v = json(
        &[
            "predict",
            "--scale-kernels",
            "class:gemm=0.5",
            "--scale-kernels",
            "flash=0.5",
        ],
        &files,
    );
    assert_eq!(v["kernel_scales"].as_array().unwrap().len(), 2);
    let out = run_ok(
        lumos()
            .args(["predict", "--hidden", "2048", "--tp", "1"])
            .args(&files),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // Each link's line counts the buckets fitted and the collectives in
    // them, as --json does (`samples`, `collectives`): it said
    // "N collectives" of the buckets.
    let v = json(&["predict", "--hidden", "2048", "--tp", "1"], &files);
    for l in v["calibration"]["network"].as_array().unwrap() {
        let buckets = l["samples"].as_u64().unwrap();
        let collectives = l["collectives"].as_u64().unwrap();
        assert!(l["link"] == "inter_node" || buckets < collectives, "{l}");
        let link = l["link"].as_str().unwrap();
        let sized = collectives - l["unsized_collectives"].as_u64().unwrap();
        let points = if buckets == 1 { "point" } else { "points" };
        let want =
            format!(" {collectives} collectives ({sized} with a size), {buckets} fit {points}, ");
        // The line and its folds (at 120 columns), whole.
        let line = sentence(&text, &format!("network {link} "), 4)
            .unwrap_or_else(|| panic!("no {link} line in\n{text}"));
        assert!(line.contains(&want), "{want:?} not in {line:?}");
    }
    let judged = sentence(&text, "GPU time ", 6).unwrap_or_else(|| panic!("{text}"));
    assert!(
        judged.contains("% modelled; critical path through inferred dependencies up to "),
        "{judged}"
    );
    for want in [
        "traced: tp2 pp2 dp2",
        "target: tp1 pp2 dp2",
        "predicted ms",
        "GEMM curve",
        "assumption: hidden 1024 -> 2048",
        "confidence: ",
        "models used: gemm",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
}

#[test]
fn bad_arguments_fail_with_a_message() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let path = corpus.path("single-rank/mi300x-resnet-ddp-rank0of8.json.gz");
    let run = |args: &[&str]| {
        lumos()
            .arg("predict")
            .args(args)
            .arg(&path)
            .output()
            .unwrap()
    };
    let out = run(&["--dp", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("invalid value '0' for '--dp <DP>': must be a whole number from 1 to 65536"));
    let out = run(&["--network", "tpu-v9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tpu-v9"));
    let out = run(&["--scale-kernels", "gemm"]);
    assert_eq!(out.status.code(), Some(2));
    // No layers found in a ResNet trace: layer edits are refused, not
    // faked, as an impossible request (usage).
    let out = run(&["--layers", "12"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("structural edits impossible"));
    // So are pipeline stages, for the same reason: "0 layers cannot fill
    // 2 pipeline stages" said what followed from it.
    let out = run(&["--pp", "2"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("structural edits impossible"), "{err}");
}

/// Runs `lumos predict ARGS PATHS` and asserts a usage error (exit 2, no
/// result) whose message contains `want`.
fn assert_refused(args: &[&str], paths: &[PathBuf], want: &str) {
    let out = lumos()
        .arg("predict")
        .args(args)
        .args(paths)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: printed a result");
    assert!(err.contains(want), "{args:?}: wanted {want:?} in {err}");
}

/// A `--network` whose target holds no communication is refused as on a
/// trace without any (fea3c3a), whatever `--pp` does: from a trace without
/// communication a pipeline cannot be built (refused for that), and an
/// edit that removes every collective and send (`--pp 1` of a pipeline,
/// `--dp 1` of data parallelism alone) leaves the network nothing to time.
/// Before, those two were predicted, the network changing nothing (the
/// same step times with a100 and h200), without a word.
#[test]
fn a_network_with_no_communication_left_is_refused_whatever_the_pipeline() {
    let dir = temp_dir("network-left");
    let synth = |name: &str, degrees: &[&str]| -> Vec<PathBuf> {
        let out = dir.join(name);
        run_ok(
            lumos()
                .args(["synth", "--model", "gpt-tiny"])
                .args(degrees)
                .arg("--out")
                .arg(&out),
        );
        vec![out]
    };
    let single = synth("single", &[]);
    for pp in ["1", "2"] {
        let out = lumos()
            .args(["predict", "--network", "h100", "--pp", pp])
            .args(&single)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--pp {pp}: {err}");
        assert!(out.stdout.is_empty(), "--pp {pp}: printed a result");
    }
    assert_refused(
        &["--network", "h100", "--pp", "1"],
        &single,
        "no collective or send found in",
    );
    for (name, degrees, edit, left) in [
        ("pp2", ["--pp", "2"], ["--pp", "1"], "tp 1 dp 1 pp 1"),
        ("dp2", ["--dp", "2"], ["--dp", "1"], "tp 1 dp 1 pp 1"),
    ] {
        let job = synth(name, &degrees);
        assert_refused(
            &[&edit[..], &["--network", "h200"]].concat(),
            &job,
            &format!(
                ".json.gz is left at {left}: a target network times communication only, so \
                 it has nothing to re-time"
            ),
        );
        // The edit alone, and the network with the communication kept,
        // are predicted.
        run_ok(lumos().arg("predict").args(edit).args(&job));
        run_ok(lumos().args(["predict", "--network", "h200"]).args(&job));
    }
}

/// Configurations that cannot exist, on a synthesized GPT tiny (16 heads,
/// hidden 1024, FFN 4096) at TP2 x PP2 x DP2: refused with the reason.
#[test]
fn impossible_targets_are_refused() {
    let dir = temp_dir("impossible");
    let files = synth_pipeline(&dir);
    for (args, want) in [
        (
            &["--tp", "3"][..],
            "16 attention heads do not divide over 3 tensor-parallel ranks",
        ),
        (
            &["--tp", "1024"][..],
            "16 attention heads do not divide over 1024 tensor-parallel ranks",
        ),
        (
            &["--hidden", "7"][..],
            "the hidden size 7 does not divide over 2 tensor-parallel ranks",
        ),
        (
            &["--hidden", "1000"][..],
            "the hidden size 1000 is not a multiple of the 16 attention heads",
        ),
        (&["--ffn", "4095"][..], "the FFN size 4095 does not divide"),
        (
            &["--layers", "1"][..],
            "1 layers cannot fill 2 pipeline stages",
        ),
        (
            &["--layers", "20000"][..],
            "tasks (about 22 GB); lumos predicts at most 16000000 tasks (16 GB)",
        ),
        (
            &["--tp", "64", "--dp", "65536", "--hidden", "4096"][..],
            "lumos predicts jobs of at most 1048576",
        ),
        // About 3e13 parameters: terabytes of weights on every GPU.
        (
            &["--hidden", "1048576"][..],
            "no GPU of the trace's kind holds this model",
        ),
    ] {
        assert_refused(args, &files, want);
    }
    // Judged together: four tensor-parallel ranks over a hidden size of
    // 2048 are fine, and fewer micro-batches than stages too.
    let v = json(&["predict", "--tp", "4", "--hidden", "2048"], &files);
    assert_eq!(v["target"]["tp"], 4);
    let v = json(&["predict", "--microbatches", "1"], &files);
    assert_eq!(v["target"]["microbatches"], 1);
}

/// Edits the traces hold nothing for: no tensor parallelism to re-shard,
/// no data-parallel collectives to re-time.
#[test]
fn edits_the_traces_cannot_support_are_refused() {
    let dir = temp_dir("unsupported");
    let out = lumos()
        .args(["synth", "--model", "gpt-tiny", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let single = vec![dir.join("rank0.json.gz")];
    assert_refused(
        &["--dp", "4"],
        &single,
        "no data-parallel collectives found in",
    );
    // From TP 1 tensor parallelism is predicted (the layers' all-reduces
    // added), and says what it assumed; before, it was refused for want of
    // tensor-parallel collectives.
    let out = lumos()
        .args(["predict", "--tp", "2"])
        .args(&single)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("assumption: tensor parallelism 2 from a trace at TP 1 (Megatron dense layers, no sequence parallelism)"),
        "{text}"
    );
    assert!(
        text.contains(
            "extrapolation: tensor-parallel all-reduces added where the trace, at TP 1, ran none"
        ),
        "{text}"
    );
    // A network has nothing to time in a trace without communication:
    // before, the prediction was the replay, 0.00%, without a word.
    assert_refused(
        &["--network", "h100"],
        &single,
        "rank0.json.gz: a target network times communication only, so it has nothing to \
         re-time",
    );
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let alexnet = corpus.path("single-rank/a100-alexnet-cuda-sync.json.gz");
    // A network without a transformer layer cannot be given tensor
    // parallelism from TP 1, and the refusal says what is missing.
    assert_refused(
        &["--tp", "2"],
        std::slice::from_ref(&alexnet),
        "cannot be given tensor parallelism 2: its hidden size is not known",
    );
    assert_refused(
        &["--network", "a100", "--scale-kernels", "class:compute=0.5"],
        std::slice::from_ref(&alexnet),
        &format!("no collective or send found in {}", alexnet.display()),
    );
    let rtx = corpus.path("single-rank/rtx2080ti-linear-train.json.gz");
    assert_refused(
        &["--dp", "4"],
        std::slice::from_ref(&rtx),
        &format!(
            "no data-parallel collectives found in {}; nothing to re-time",
            rtx.display()
        ),
    );
    // DLRM at TP 1: tensor parallelism would be added, but it has no
    // transformer layer whose projections tell where (before: refused for
    // want of tensor-parallel collectives).
    let dlrm = corpus.path("multi-rank/dlrm-8xv100");
    assert_refused(
        &["--tp", "2"],
        &[dlrm],
        "rank0.json.gz cannot be given tensor parallelism 2: its hidden size is not known",
    );
    // A size the trace holds no GEMM shape for: the refusal names the
    // trace that cannot answer (before: "the hidden size was not found in
    // the trace", no file named).
    let b200 = corpus.path("single-rank/b200-vllm-tp8-rank0.json.gz");
    for (flag, what) in [("--hidden", "hidden size"), ("--ffn", "FFN size")] {
        assert_refused(
            &[flag, "1024"],
            std::slice::from_ref(&b200),
            &format!("the {what} was not found in {}", b200.display()),
        );
    }
}

/// Ranks of two jobs are refused even where their degrees agree: the
/// DLRM job's rank 1 (8 V100s, DP 8) and the MI300X ResNet trace's rank 0
/// (DP 8) ran on different GPUs. Before, they were taken for one job and
/// the V100 rank left out for the MI300X one, exit 0.
#[test]
fn ranks_recorded_on_different_gpus_are_not_one_job() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dlrm = corpus.path("multi-rank/dlrm-8xv100/rank1.json.gz");
    let mi300x = corpus.path("single-rank/mi300x-resnet-ddp-rank0of8.json.gz");
    let out = lumos()
        .arg("predict")
        .args([&dlrm, &mi300x])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "printed a result");
    assert!(
        err.contains(&format!(
            "{}: recorded on \"AMD Instinct MI300X\", {} on \"Tesla V100-SXM2-32GB\": are these \
             ranks of one job?",
            mi300x.display(),
            dlrm.display()
        )),
        "{err}"
    );
}

/// A trace that recorded nothing has no step to predict, even with no
/// edit: it is bad input, exit 1, naming the file. Before, it was
/// predicted: a "window" step of 0 ms at high confidence. The corpus has
/// no such trace, so it is written here.
#[test]
fn a_trace_without_tasks_is_refused() {
    let dir = temp_dir("no-tasks");
    let path = dir.join("empty.json");
    std::fs::write(&path, r#"{"traceEvents": []}"#).unwrap();
    let out = lumos().arg("predict").arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "printed a result");
    assert!(
        err.contains(&format!(
            "{}: nothing to predict from: no CPU or GPU task was read",
            path.display()
        )),
        "{err}"
    );
}

/// A rank of a job that holds no task (the DLRM job with rank 7 stripped
/// to its metadata events) is left out, as `lumos replay --job` and
/// `lumos report` leave it out: named on stderr with the reason, the
/// other ranks predicted, exit 1 (bad input, a partial result), and
/// `--json` lists it under `left_out` as `replay --json`'s `job.left_out`
/// does. The prediction is, value for value, that of ranks 0-6 alone
/// (29.828 ms at `--dp 16`), given as the folder or as the files, rank 7
/// first or last. Before, the whole prediction was refused ("nothing to
/// predict from"), and before that the rank's degrees (none found)
/// differed from rank 0's: "are these ranks of one job?".
#[test]
fn a_rank_without_tasks_is_left_out_of_a_job_and_named() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dlrm = corpus.path("multi-rank/dlrm-8xv100");
    let dir = temp_dir("job-rank-no-tasks");
    let job = dir.join("dlrm");
    std::fs::create_dir_all(&job).unwrap();
    let mut others = Vec::new();
    for r in 0..7 {
        let f = job.join(format!("rank{r}.json.gz"));
        std::fs::copy(dlrm.join(format!("rank{r}.json.gz")), &f).unwrap();
        others.push(f);
    }
    let gz = std::fs::File::open(dlrm.join("rank7.json.gz")).unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_reader(flate2::read::GzDecoder::new(gz)).unwrap();
    let events = doc["traceEvents"].as_array_mut().unwrap();
    events.retain(|e| e["ph"] == "M");
    assert!(!events.is_empty());
    let rank7 = job.join("rank7.json");
    std::fs::write(&rank7, serde_json::to_vec(&doc).unwrap()).unwrap();
    let alone = json(&["predict", "--dp", "16"], &others);
    assert_eq!(alone["mean_predicted_ms"], 29.828);
    assert!(alone.get("left_out").is_none(), "{alone}");
    let named = format!(
        "error: rank 7 ({}) holds no CPU or GPU task (`lumos inspect` counts the events \
         skipped); left out",
        rank7.display()
    );
    let mut rank7_first = vec![rank7.clone()];
    rank7_first.extend(others.iter().cloned());
    for given in [vec![job.clone()], rank7_first] {
        let out = lumos()
            .arg("predict")
            .args(&given)
            .args(["--dp", "16", "--json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&named), "{err}");
        assert!(!err.contains("nothing to predict from"), "{err}");
        let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let left_out = v.as_object_mut().unwrap().remove("left_out").unwrap();
        assert_eq!(
            left_out,
            serde_json::json!([{
                "rank": 7,
                "path": rank7.display().to_string(),
                "reason": "no_tasks",
                "detail": named.trim_start_matches("error: "),
            }])
        );
        // What rank 7's read warned is said too (every file read is),
        // and the other ranks' warnings as without it.
        let warned = v.as_object_mut().unwrap().remove("input_warnings");
        let mut warned = warned.map_or_else(Vec::new, |w| w.as_array().unwrap().clone());
        let at = warned
            .iter()
            .position(|w| w["path"] == rank7.display().to_string());
        assert!(at.is_some(), "{warned:?}");
        warned.remove(at.unwrap());
        let mut alone = alone.clone();
        let alone_warned = alone.as_object_mut().unwrap().remove("input_warnings");
        let alone_warned = alone_warned.map_or_else(Vec::new, |w| w.as_array().unwrap().clone());
        assert_eq!(warned, alone_warned, "{given:?}");
        assert_eq!(v, alone, "{given:?}");
        // The text is the prediction of ranks 0-6 too, and exits 1.
        let text = lumos()
            .arg("predict")
            .args(&given)
            .args(["--dp", "16"])
            .output()
            .unwrap();
        let alone_text = run_ok(lumos().arg("predict").args(&others).args(["--dp", "16"]));
        assert_eq!(text.status.code(), Some(1));
        // Its first line counts the eight traces given, the one left out
        // among them, as the command line and the error above have it.
        let (text, alone_text) = (
            String::from_utf8(text.stdout).unwrap(),
            String::from_utf8(alone_text.stdout).unwrap(),
        );
        let (first, rest) = text.split_once('\n').unwrap();
        let (alone_first, alone_rest) = alone_text.split_once('\n').unwrap();
        assert_eq!(
            first,
            "predict from 1 of 8 traces (the lowest rank of each pipeline stage; \
             1 left out, named above):"
        );
        assert_eq!(
            alone_first,
            "predict from 1 of 7 traces (the lowest rank of each pipeline stage):"
        );
        assert_eq!(rest, alone_rest);
    }
    // Only ranks without tasks: nothing to predict from, the first named.
    std::fs::copy(&rank7, rank7.with_file_name("copy.json")).unwrap();
    let out = lumos()
        .arg("predict")
        .args([&rank7, &rank7.with_file_name("copy.json")])
        .args(["--dp", "16"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "printed a result");
    assert!(
        err.contains(&format!(
            "{}: nothing to predict from: no CPU or GPU task was read",
            rank7.display()
        )) && !err.contains("left out"),
        "{err}"
    );
}

/// A `--network` that names the traced GPU's own preset is no
/// extrapolation; another GPU's is. Before, every `--network` counted as
/// "not the traced system's": the device name was searched for the
/// description ("preset a100"), which none holds, so `--network a100` on
/// an A100 trace was one extrapolation (a100-recsys: low, with two).
#[test]
fn a_network_naming_the_traced_gpu_is_no_extrapolation() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let path = corpus.path("single-rank/a100-recsys-rank3of8.json.gz");
    let other = |preset: &str| -> Vec<String> {
        let v = json(
            &["predict", "--network", preset],
            std::slice::from_ref(&path),
        );
        (v["confidence"]["extrapolations"].as_array().unwrap().iter())
            .map(|e| e.as_str().unwrap().to_owned())
            .filter(|e| e.starts_with("target network"))
            .collect()
    };
    assert_eq!(other("a100"), Vec::<String>::new());
    let h100 = other("h100");
    assert_eq!(h100.len(), 1, "{h100:?}");
    assert!(
        h100[0].contains("preset h100, not the traced system's (NVIDIA A100-PG509-200)"),
        "{h100:?}"
    );
}

#[test]
fn inspect_reports_structure() {
    let dir = temp_dir("inspect");
    let files = synth_pipeline(&dir);
    let v = json(&["inspect", "--per-trace"], &files);
    let s = &v["traces"][0]["structure"];
    assert_eq!(s["stage_role"], "first");
    assert_eq!(s["pass_order"], "F1 F2 B1 F3 B2 F4 B3 B4");
    assert_eq!(s["one_f_one_b"], true);
    assert_eq!(s["layers_per_pass"], 2);
    assert_eq!(s["config"]["tp"], 2);
    let classes: Vec<&str> = s["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["class"].as_str().unwrap())
        .collect();
    for c in ["data", "tensor", "pipeline", "model_parallel"] {
        assert!(classes.contains(&c), "{c} not in {classes:?}");
    }
    let out = lumos()
        .args(["inspect", "--per-trace"])
        .arg(&files[1])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("structure: last stage"), "{text}");
}

/// A copy of the trace at `from`, gzipped or not, without the process
/// groups of its `distributedInfo` (`pg_config`, `pg_count`), written to
/// `to` as plain JSON.
fn without_process_groups(from: &Path, to: &Path) {
    let bytes = lumos_testkit::gunzip_file(from);
    let mut doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let info = doc["distributedInfo"].as_object_mut().unwrap();
    assert!(info.remove("pg_config").is_some(), "{}", from.display());
    info.remove("pg_count");
    std::fs::write(to, serde_json::to_vec(&doc).unwrap()).unwrap();
}

/// A trace stripped of its process groups still records each
/// collective's group size, but which parallelism a group serves is then
/// a guess from names and where its collectives run: the degrees found
/// so are stated as an assumption (in `inspect`, its JSON, and a
/// prediction's assumptions), their findings weak. Before, a stripped
/// stage of GPT tiny at TP2 x PP2 x DP2 read "tp 2, pp 2, dp 2" as if
/// known. With its process groups, nothing is guessed.
#[test]
fn degrees_of_a_trace_without_process_groups_are_stated_as_guessed() {
    let dir = temp_dir("no-pg-config");
    let files = synth_pipeline(&dir);
    let v = json(&["inspect", "--per-trace"], &files[..1]);
    assert!(
        v["traces"][0]["structure"]["config"]["degrees_guessed"].is_null(),
        "{v}"
    );
    let stripped = dir.join("stripped-rank0.json");
    without_process_groups(&files[0], &stripped);
    let v = json(&["inspect"], std::slice::from_ref(&stripped));
    let s = &v["traces"][0]["structure"];
    let c = &s["config"];
    assert_eq!(
        (&c["tp"], &c["dp"], &c["pp"]),
        (&2.into(), &2.into(), &2.into())
    );
    let guessed = c["degrees_guessed"].as_str().unwrap();
    assert!(
        guessed.starts_with("parallel degrees guessed: tp 2, dp 2, pp 2 from the group size")
            && guessed.contains("no pg_config"),
        "{guessed}"
    );
    for f in s["findings"].as_array().unwrap() {
        if f["what"].as_str().unwrap().ends_with("-parallel degree") {
            assert_eq!(f["confidence"], "low", "{f}");
            assert!(f["evidence"].as_str().unwrap().starts_with("weak: "), "{f}");
        }
    }
    let out = run_ok(lumos().arg("inspect").arg(&stripped));
    let text = (String::from_utf8_lossy(&out.stdout).split_whitespace())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains(&format!("assumption: {guessed}")), "{text}");
    let p = json(&["predict", "--dp", "4"], std::slice::from_ref(&stripped));
    assert_eq!(p["traced"]["degrees_guessed"], true, "{}", p["traced"]);
    assert!(
        (p["assumptions"].as_array().unwrap().iter()).any(|a| a == guessed),
        "{}",
        p["assumptions"]
    );
    // A real DDP rank: its data-parallel group is the one it lists.
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let ddp = corpus.path("single-rank/a100-ddp-rank0of2-event-record.json.gz");
    let v = json(&["inspect"], std::slice::from_ref(&ddp));
    assert!(
        v["traces"][0]["structure"]["config"]["degrees_guessed"].is_null(),
        "{v}"
    );
    let stripped = dir.join("stripped-ddp.json");
    without_process_groups(&ddp, &stripped);
    let v = json(&["inspect"], std::slice::from_ref(&stripped));
    let c = &v["traces"][0]["structure"]["config"];
    assert_eq!(c["dp"], 2);
    let guessed = c["degrees_guessed"].as_str().unwrap();
    assert!(guessed.contains("dp 2"), "{guessed}");
}

/// A prediction that changes a parallel degree discovery guessed (DLRM:
/// no `pg_config`, "dp 8 from the world size") is one level less
/// confident, and says why first; one that keeps the degrees is not
/// lowered. Before, DLRM rank 0 at `--dp 4` was "medium" like the rest.
#[test]
fn changing_a_guessed_degree_lowers_the_confidence_a_level() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rank0 = vec![corpus.path("multi-rank/dlrm-8xv100/rank0.json.gz")];
    let v = json(&["predict", "--dp", "4"], &rank0);
    // The traced degrees say they were guessed, as a key of their own
    // (before, only the verdict's reason and an assumption said so).
    assert_eq!(v["traced"]["degrees_guessed"], true, "{}", v["traced"]);
    assert_eq!(v["traced"]["dp"], 8, "{}", v["traced"]);
    assert!(
        v["target"].get("degrees_guessed").is_none(),
        "{}",
        v["target"]
    );
    let c = &v["confidence"];
    assert_eq!(c["verdict"], "low", "{c}");
    let first = c["reasons"][0].as_str().unwrap();
    assert!(
        first.starts_with("dp 8 -> 4 changed from traced degrees that were guessed, one level lower (parallel degrees guessed: dp 8 from the world size"),
        "{first}"
    );
    // Without the guessed degree the same criteria give medium.
    let rest: Vec<_> = c["reasons"].as_array().unwrap()[1..].to_vec();
    assert!(!rest.is_empty(), "{c}");
    let v = json(&["predict", "--microbatches", "2"], &rank0);
    let c = &v["confidence"];
    assert_eq!(c["verdict"], "medium", "{c}");
    let reasons = c["reasons"].as_array().unwrap();
    assert!(
        !reasons
            .iter()
            .any(|r| r.as_str().unwrap().contains("guessed")),
        "{c}"
    );
}

/// Under `--network`, the collectives the network model cannot re-time
/// (the recsys rank's all-to-alls, of a kind the ring model does not
/// know, in a group classified `other`) keep their traced durations, and
/// the prediction says so, counting them; before, they were kept without
/// a word.
#[test]
fn collectives_a_new_network_leaves_as_traced_are_named() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let path = vec![corpus.path("single-rank/a100-recsys-rank3of8.json.gz")];
    let v = json(&["predict", "--network", "h100"], &path);
    let kept: Vec<&str> = (v["assumptions"].as_array().unwrap().iter())
        .filter_map(|a| a.as_str())
        .filter(|a| a.contains("outside the data- and tensor-parallel groups"))
        .collect();
    assert_eq!(kept.len(), 1, "{}", v["assumptions"]);
    assert!(
        kept[0].starts_with(
            "42 collectives outside the data- and tensor-parallel groups (42 all_to_all; "
        ) && kept[0].ends_with(
            "of a kind the network model does not know, keep their traced durations: the \
                 preset h100 network does not change them"
        ),
        "{}",
        kept[0]
    );
    // Without another network nothing is said of them.
    let v = json(&["predict", "--dp", "4"], &path);
    let said = (v["assumptions"].as_array().unwrap().iter()).any(|a| {
        a.as_str()
            .unwrap()
            .contains("outside the data- and tensor-parallel")
    });
    assert!(!said, "{}", v["assumptions"]);
}

/// Every rank of a job: one rank per stage stands for its stage, and the
/// prediction says so.
#[test]
fn all_ranks_of_a_job_are_one_per_stage() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = corpus.path("multi-rank/dlrm-8xv100");
    let v = json(&["predict", "--dp", "16"], &[dir]);
    assert_eq!(v["inputs"].as_array().unwrap().len(), 1);
    assert_eq!(v["inputs_given"], 8);
    assert_eq!(v["inputs"][0]["rank"], 0);
    assert!(v["assumptions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a.as_str().unwrap().contains("7 of 8 inputs left out")));
    assert!(v["mean_predicted_ms"].as_f64().unwrap() >= v["mean_replayed_ms"].as_f64().unwrap());
}

/// Every rank of a pipeline given, highest first: each rank lower than the
/// one standing for its stage takes its place as it comes (the CLI holds
/// one graph per stage), and the prediction is the one of the lowest rank
/// of each stage alone, but for the note on those left out.
#[test]
fn all_ranks_of_a_pipeline_in_any_order() {
    let dir = temp_dir("all-ranks");
    let out = run_ok(
        lumos()
            .args([
                "synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "2", "--dp", "2",
            ])
            .args(["--microbatches", "4", "--ranks", "all", "--out"])
            .arg(dir.path()),
    );
    let mut files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    assert_eq!(files.len(), 8);
    let rank = |f: &PathBuf| -> u32 {
        let name = f.file_name().unwrap().to_str().unwrap();
        name.trim_start_matches("rank")
            .trim_end_matches(".json.gz")
            .parse()
            .unwrap()
    };
    files.sort_by_key(|f| std::cmp::Reverse(rank(f)));
    let args = ["predict", "--dp", "4", "--pp", "1", "--microbatches", "8"];
    let mut all = json(&args, &files);
    let lowest: Vec<PathBuf> = files.iter().filter(|f| rank(f) % 4 == 0).cloned().collect();
    let mut alone = json(&args, &lowest);
    let notes = all["assumptions"].as_array_mut().unwrap();
    let left_out = notes.remove(0);
    assert_eq!(
        left_out,
        "6 of 8 inputs left out: one rank per pipeline stage stands for its stage \
         (rank 4 for stage 1, rank 0 for stage 0)"
    );
    let ranks = |v: &serde_json::Value| -> Vec<u64> {
        let inputs = v["inputs"].as_array().unwrap();
        inputs.iter().map(|i| i["rank"].as_u64().unwrap()).collect()
    };
    assert_eq!(ranks(&all), [4, 0]);
    assert_eq!(
        (&all["inputs_given"], &alone["inputs_given"]),
        (&8.into(), &2.into())
    );
    // The inputs' file names and count aside, the rest is the same
    // prediction.
    for v in [&mut all, &mut alone] {
        v.as_object_mut().unwrap().remove("inputs");
        v.as_object_mut().unwrap().remove("inputs_given");
    }
    assert_eq!(all, alone);
    // The text says how many were given before it lists those kept.
    let out = run_ok(lumos().args(args).args(&files));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("predict from 2 of 8 traces (the lowest rank of each pipeline stage):\n"),
        "{text}"
    );
}

/// An interleaved job (`lumos synth --virtual-stages 2`): `lumos inspect`
/// reports its chunks, `lumos predict --virtual-stages` changes them, and
/// what Megatron cannot run is refused with the reason (exit 2).
#[test]
fn interleaved_pipelines_are_found_and_predicted() {
    let dir = temp_dir("interleaved");
    run_ok(
        lumos()
            .args(["synth", "--model", "gpt-small", "--pp", "3"])
            .args(["--microbatches", "6", "--virtual-stages", "2", "--out"])
            .arg(dir.path()),
    );
    let files: Vec<PathBuf> = (0..3)
        .map(|r| dir.join(format!("rank{r}.json.gz")))
        .collect();
    let v = json(&["inspect", "--per-trace"], &files);
    for (t, role) in v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["first", "middle", "last"])
    {
        let s = &t["structure"];
        assert_eq!(s["stage_role"], role);
        assert_eq!(s["config"]["virtual_stages"], 2);
        assert_eq!(s["config"]["microbatches"], 6);
        assert_eq!(s["one_f_one_b"], true, "{}", s["pass_order"]);
        assert_eq!(s["layers_per_pass"], 2);
    }
    let v = json(&["predict", "--virtual-stages", "1"], &files);
    assert_eq!(v["traced"]["virtual_stages"], 2);
    // The plain schedule leaves the field out, as every other prediction.
    assert!(
        v["target"].get("virtual_stages").is_none(),
        "{}",
        v["target"]
    );
    assert!(v["assumptions"].as_array().unwrap().iter().any(|a| a
        .as_str()
        .unwrap()
        .starts_with("virtual stages 2 -> 1: plain 1F1B")));
    for (args, want) in [
        (
            &["--virtual-stages", "5"][..],
            "12 layers do not divide into 3 pipeline stages x 5 virtual stages",
        ),
        (
            &["--microbatches", "4"][..],
            "the interleaved schedule needs micro-batches (4) to be a multiple of pp (3)",
        ),
        (
            &["--virtual-stages", "0"][..],
            "must be a whole number from 1",
        ),
    ] {
        assert_refused(args, &files, want);
    }
    // The traced sends overlap compute (the interleaved default), so two
    // stages may interleave (Megatron-LM's rule).
    let v = json(&["predict", "--pp", "2", "--microbatches", "4"], &files);
    assert_eq!(v["target"]["pp"], 2);
    assert_eq!(v["target"]["virtual_stages"], 2);
}

/// Two interleaved stages: synthesized with overlapped sends and replayed
/// exactly; without them refused by `lumos synth`, and a prediction from
/// synchronized transfers to two interleaved stages refused with
/// Megatron-LM's reason.
#[test]
fn two_interleaved_stages_need_overlapped_sends() {
    let dir = temp_dir("interleaved-pp2");
    let synth = |out: &Path, extra: &[&str]| {
        let mut c = lumos();
        c.args(["synth", "--model", "gpt-small", "--virtual-stages", "2"])
            .args(extra)
            .arg("--out")
            .arg(out);
        c
    };
    let out = run_ok(&mut synth(
        &dir.join("pp2"),
        &["--pp", "2", "--microbatches", "4"],
    ));
    let files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    assert_eq!(files.len(), 2);
    let r = lumos().arg("replay").arg(dir.join("pp2")).output().unwrap();
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(
        text.contains("summary: mean |error| 0.00%, max 0.00%"),
        "{text}"
    );
    let v = json(&["inspect", "--per-trace"], &files);
    for t in v["traces"].as_array().unwrap() {
        assert_eq!(t["structure"]["config"]["virtual_stages"], 2);
    }
    let no_overlap = ["--pp", "2", "--no-overlap-p2p-communication"];
    // (2 x pp micro-batches by default.)
    let refused = synth(&dir.join("refused"), &no_overlap).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("Megatron-LM refuses it"));
    let out = run_ok(&mut synth(
        &dir.join("pp3"),
        &[
            "--pp",
            "3",
            "--microbatches",
            "6",
            "--no-overlap-p2p-communication",
        ],
    ));
    let files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    assert_refused(
        &["--pp", "2", "--microbatches", "4"],
        &files,
        "a prediction keeps the traced pipeline transfers' mode",
    );
}

/// A trace of one micro-batch has no second forward to tell the first
/// forward's own work from the step's prologue by (docs/PREDICTION.md
/// section 2): a single pipeline stage takes layer and micro-batch edits
/// all the same, the pass's own work told by its kind, at lower
/// confidence (the prediction says so), and is refused pipeline edits; a
/// stage of a longer pipeline is refused every structural edit (its
/// prologue holds its first receive). `lumos inspect` gives the same
/// verdict. Synthesized and real (DLRM: one micro-batch, one step; once
/// `--microbatches 2` gave +46% at exit 0, with its data loading and
/// forward-input copy left in the prologue).
#[test]
fn one_micro_batch_traces_take_micro_batch_edits_on_one_stage_only() {
    let synth = |name: &str, pp: &str| -> (TempDir, Vec<PathBuf>) {
        let dir = temp_dir(name);
        let out = run_ok(
            lumos()
                .args(["synth", "--model", "gpt-tiny", "--dp", "2", "--pp", pp])
                .args(["--microbatches", "1", "--steps", "3", "--out"])
                .arg(dir.path()),
        );
        let files = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(PathBuf::from)
            .collect();
        (dir, files)
    };
    let (_dir, files) = synth("one-micro-batch", "1");
    let why = "1 micro-batch traced: the pipeline and virtual stages cannot change; layers and \
               micro-batches can, at lower confidence";
    assert_refused(
        &["--layers", "8", "--pp", "2"],
        &files,
        &format!("structural edits impossible: {why}"),
    );
    let v = json(&["predict", "--layers", "8"], &files);
    assert_eq!(v["target"]["layers"], 8);
    assert!(
        v["change_pct"].as_f64().unwrap() > 0.0,
        "{}",
        v["change_pct"]
    );
    let copied = |v: &serde_json::Value| -> bool {
        (v["confidence"]["extrapolations"].as_array().unwrap().iter())
            .any(|e| e.as_str().unwrap().contains("copied from a trace of one"))
    };
    assert!(!copied(&v), "{}", v["confidence"]);
    // Four micro-batches of the same size: four passes where there was
    // one, the step's prologue and optimizer once.
    let v = json(&["predict", "--microbatches", "4"], &files);
    assert_eq!(v["target"]["microbatches"], 4);
    let change = v["change_pct"].as_f64().unwrap();
    assert!(change > 150.0 && change < 300.0, "{change}");
    assert!(copied(&v), "{}", v["confidence"]);
    assert_ne!(v["confidence"]["verdict"], "high");
    // `lumos inspect` gives the same verdict (it called these traces
    // editable while predict refused them).
    let inspected = |paths: &[PathBuf]| -> Vec<String> {
        let v = json(&["inspect", "--per-trace"], paths);
        (v["traces"].as_array().unwrap().iter())
            .map(|t| {
                t["structure"]["structural_edits_blocked"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    for got in inspected(&files) {
        assert!(got.starts_with(why), "{got}");
    }
    let v = json(&["predict", "--dp", "4"], &files);
    assert_eq!(v["target"]["dp"], 4);
    // Two stages: refused every structural edit, for the receive.
    let (_dir2, two) = synth("one-micro-batch-pp2", "2");
    let refused = "structural edits impossible: 1 micro-batch traced on a stage of a pipeline of \
                   2 stages";
    for args in [&["--microbatches", "2"][..], &["--layers", "8"][..]] {
        assert_refused(args, &two, refused);
    }
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dlrm = vec![corpus.path("multi-rank/dlrm-8xv100")];
    let v = json(&["predict", "--microbatches", "2"], &dlrm);
    let change = v["change_pct"].as_f64().unwrap();
    // Two passes where there was one: more, and at most twice the step.
    assert!(change > 50.0 && change < 100.0, "{change}");
    assert!(copied(&v), "{}", v["confidence"]);
    // Rank 0 is the one DLRM rank whose layer block was found (the
    // others repeat none): inspected alone it was called editable.
    let rank0 = vec![corpus.path("multi-rank/dlrm-8xv100/rank0.json.gz")];
    assert!(inspected(&rank0)[0].starts_with(why));
    // One verdict, in the JSON and the text: the edits taken are named,
    // and the text no longer heads a reason saying that layers and
    // micro-batches can change with "structural edits not possible".
    let v = json(&["inspect"], &rank0);
    let s = &v["traces"][0]["structure"];
    assert_eq!(
        s["structural_edits_possible"],
        serde_json::json!(["layers", "micro-batches"]),
        "{s}"
    );
    let out = run_ok(lumos().arg("inspect").args(&rank0));
    // Folded lines read as one.
    let text = (String::from_utf8_lossy(&out.stdout).split_whitespace())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(!text.contains("structural edits not possible"), "{text}");
    assert!(
        text.contains(&format!(
            "structural edits possible only of the layers and micro-batches: {why}"
        )),
        "{text}"
    );
    // A stage of a longer pipeline takes none, and says so.
    let v = json(&["inspect", "--per-trace"], &two);
    for t in v["traces"].as_array().unwrap() {
        let s = &t["structure"];
        assert_eq!(s["structural_edits_possible"], serde_json::json!([]), "{s}");
    }
}

/// DLRM's rank 0 (one micro-batch) keeps its gradients in its backward
/// with no DDP `mul_out` to size the additions later backwards run: each
/// is sized from its accumulation node's recorded shape and type at the
/// trace's memory bandwidth (before: 16 gradients "not modelled", no
/// modelled GPU time, 1.519 ms predicted; now 15 modelled, 2 to 5 us
/// each on this V100 trace of small gradients, 1.557 ms).
#[test]
fn gradients_kept_without_ddp_scaling_are_added_by_their_shape() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rank0 = vec![corpus.path("multi-rank/dlrm-8xv100/rank0.json.gz")];
    let v = json(&["predict", "--microbatches", "2"], &rank0);
    let notes: Vec<&str> = (v["assumptions"].as_array().unwrap().iter())
        .map(|a| a.as_str().unwrap())
        .collect();
    let modelled = notes
        .iter()
        .find(|a| a.starts_with("gradient accumulation modelled"))
        .unwrap_or_else(|| panic!("{notes:?}"));
    assert!(
        modelled.contains("15 (no DDP scaling kernel) each the shortest memory-bound kernel plus 3 times the gradient's bytes"),
        "{modelled}"
    );
    let left = notes
        .iter()
        .find(|a| a.starts_with("gradient accumulation not modelled"));
    assert!(
        left.is_some_and(|a| a.contains("for 1 gradients")),
        "{notes:?}"
    );
    let by_source = v["gpu_ms_by_source"].as_array().unwrap();
    let modelled_ms = (by_source.iter())
        .find(|s| s[0] == "modelled")
        .and_then(|s| s[1].as_f64())
        .unwrap_or(0.0);
    // In the written timeline each modelled kernel's launch runs inside
    // an `aten::add_` inside the gradient's accumulation, as in a trace
    // (the launch sat right under the node before).
    let dir = temp_dir("dlrm-additions");
    run_ok(
        lumos()
            .args(["predict", "--microbatches", "2", "--out"])
            .arg(dir.path())
            .args(&rank0),
    );
    let file = files_in(dir.path()).pop().unwrap();
    let t: serde_json::Value = serde_json::from_reader(flate2::read::GzDecoder::new(
        std::fs::File::open(&file).unwrap(),
    ))
    .unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    let corr = |e: &serde_json::Value| e["args"]["correlation"].as_i64();
    let kernels: Vec<_> = (events.iter())
        .filter(|e| e["name"] == "aten::add_ into .grad (modelled by lumos)")
        .collect();
    assert_eq!(kernels.len(), 15);
    for k in kernels {
        let launch = (events.iter())
            .find(|e| e["cat"] == "cuda_runtime" && corr(e) == corr(k))
            .unwrap_or_else(|| panic!("no launch of {k}"));
        let (ts, end) = (
            launch["ts"].as_f64().unwrap(),
            launch["dur"].as_f64().unwrap(),
        );
        let mut around: Vec<_> = (events.iter())
            .filter(|e| e["cat"] == "cpu_op" && e["tid"] == launch["tid"])
            .filter(|e| {
                let (s, d) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
                s <= ts && s + d >= ts + end
            })
            .map(|e| (e["dur"].as_f64().unwrap(), e["name"].as_str().unwrap()))
            .collect();
        around.sort_by(|a, b| a.0.total_cmp(&b.0));
        let names: Vec<_> = around.iter().map(|a| a.1).collect();
        assert_eq!(names[0], "aten::add_", "{names:?}");
        assert!(
            names[1].ends_with("torch::autograd::AccumulateGrad"),
            "{names:?}"
        );
    }
    // 15 kernels at least the trace's shortest memory-bound one (2 us);
    // the largest gradient, [512, 512] floats, 3 MiB moved at the about
    // 1 TB/s its element-wise kernels achieved: 2 + 3.2 us.
    assert!(modelled_ms > 0.034 && modelled_ms < 0.042, "{modelled_ms}");
}

/// A data-parallel edit of an inference trace (no backward pass) is
/// refused: its all-reduces (vLLM's tensor-parallel `multimem_all_reduce`)
/// reduce no gradients. They are taken for tensor parallelism (by a
/// guess: no layer or group description says so), so a tensor-parallel
/// edit runs, at low confidence, naming that guess; it was refused as "the
/// traced model has no tensor parallelism" while `inspect` read the world
/// group of this TP 8 trace as data-parallel.
#[test]
fn data_parallel_edits_of_an_inference_trace_are_refused() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let path = vec![corpus.path("single-rank/b200-vllm-tp8-rank0.json.gz")];
    assert_refused(
        &["--dp", "2"],
        &path,
        "(an inference trace); data parallelism reduces gradients, so there are none to reduce",
    );
    // What the traces cannot support is answered in the message: `--help`
    // would not help, so it is not offered.
    let out = lumos()
        .args(["predict", "--dp", "2"])
        .args(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("--help"), "{err}");
    let inspected =
        String::from_utf8_lossy(&run_ok(lumos().arg("inspect").args(&path)).stdout).to_string();
    assert!(inspected.contains("(tp 8, pp 1, dp 1)"), "{inspected}");
    let v = json(&["predict", "--tp", "4"], &path);
    let c = &v["confidence"];
    assert_eq!(c["verdict"], "low", "{c}");
    let g = c["guessed_groups"][0].as_str().unwrap();
    assert!(
        g.starts_with("tensor-parallel edit 8 -> 4")
            && g.contains("a collective in a trace without a backward pass"),
        "{g}"
    );
    // The two-event trace's one all-reduce records no group and the trace
    // no world size: its tensor-parallel degree is unknown, not 1 (it was
    // predicted as TP 1 -> 2 from that guess).
    let path = vec![corpus.path("micro/two-events-large-integers.json.gz")];
    assert_refused(
        &["--tp", "2"],
        &path,
        "the traced tensor-parallel degree of",
    );
    let inspected =
        String::from_utf8_lossy(&run_ok(lumos().arg("inspect").args(&path)).stdout).to_string();
    assert!(inspected.contains("(tp -, pp 1, dp 1)"), "{inspected}");
    // DDP's bucket all-reduces, launched from the gradient accumulation
    // hooks: data parallel from that evidence (medium), which also
    // classifies the broadcast of the same process group.
    let path = vec![corpus.path("single-rank/a100-ddp-rank0of2-event-record.json.gz")];
    let v = json(&["predict", "--dp", "4"], &path);
    let c = &v["confidence"];
    assert_eq!(c["verdict"], "medium", "{c}");
    assert_eq!(c["guessed_groups"].as_array().map(Vec::len), Some(0), "{c}");
    let inspected =
        String::from_utf8_lossy(&run_ok(lumos().arg("inspect").args(&path)).stdout).to_string();
    assert!(
        inspected.contains("broadcast, allreduce (medium confidence)"),
        "{inspected}"
    );
    // All-reduces found nowhere telling (a compiled model's backward, no
    // pass found), taken for data parallel by their kind alone: the edit
    // runs, low, and the output names the rule it rests on.
    let path = vec![corpus.path("single-rank/v100-ddp-rank1of2-allreduce.json.gz")];
    let v = json(&["predict", "--dp", "4"], &path);
    let c = &v["confidence"];
    assert_eq!(c["verdict"], "low", "{c}");
    let g = c["guessed_groups"][0].as_str().unwrap();
    assert!(g.contains("by its kind alone"), "{g}");
    let text =
        String::from_utf8_lossy(&run_ok(lumos().args(["predict", "--dp", "4"]).args(&path)).stdout)
            .to_string();
    assert!(
        text.contains("    guessed group: data-parallel edit 2 -> 4"),
        "{text}"
    );
}

/// Every field of `lumos predict --json` that a reader meets first (the
/// top level, `confidence`, `steadiness`, `calibration`, `stages[]`) is
/// named in docs/json-output.md's section on it: `steadiness`,
/// `replayed_steady_step_ms` and `untied_collectives` were added to the
/// output without a word there.
#[test]
fn every_predict_json_field_is_documented() {
    let root = lumos_testkit::workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/json-output.md")).unwrap();
    let start = doc.find("## `lumos predict --json`").unwrap();
    let section = &doc[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    // Three steps, so that `steadiness` is not null.
    let dir = temp_dir("documented");
    let out = run_ok(
        lumos()
            .args(["synth", "--model", "gpt-tiny", "--dp", "2", "--steps", "3"])
            .args(["--out"])
            .arg(dir.path()),
    );
    let files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    let v = json(&["predict", "--dp", "4"], &files);
    assert!(v["steadiness"].is_object(), "{}", v["steadiness"]);
    let keys =
        |o: &serde_json::Value| -> Vec<String> { o.as_object().unwrap().keys().cloned().collect() };
    let mut fields = keys(&v);
    for part in [
        &v["confidence"],
        &v["steadiness"],
        &v["calibration"],
        &v["calibration"]["gemm"],
        &v["calibration"]["network"][0],
        &v["stages"][0],
    ] {
        fields.extend(keys(part));
    }
    // Named as a whole word: `stage` in `{stage, step_ms, ...}`.
    let words: std::collections::HashSet<&str> = section
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    let missing: Vec<&String> = (fields.iter())
        .filter(|f| !words.contains(f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "undocumented in json-output.md: {missing:?}"
    );
}

#[test]
fn files_that_are_not_one_job_are_refused_as_the_joint_replay_refuses_them() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    // Two captures of one rank: `lumos replay` refuses them as one job,
    // and a prediction took one of them for the stage without a word.
    let dir = temp_dir("not-one-job");
    let trace = corpus.path("single-rank/a100-ddp-rank0of2-event-record.json.gz");
    let (a, b) = (dir.join("a.json.gz"), dir.join("b.json.gz"));
    for copy in [&a, &b] {
        std::fs::copy(&trace, copy).unwrap();
    }
    for cmd in [&["predict", "--dp", "2"][..], &["replay", "--job"][..]] {
        let out = lumos().args(cmd).arg(&a).arg(&b).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(err.contains("both claim rank 0"), "{cmd:?}: {err}");
    }
}

/// Traces that state no rank (no `distributedInfo.rank`, no `rank<N>` in
/// the file name) are predicted one at a time, and refused together with
/// the reason `lumos replay --job` gives: which rank each is cannot be
/// told. Before, two of them were refused as "both claim rank 0", a rank
/// neither states.
#[test]
fn traces_that_state_no_rank_are_predicted_alone_not_as_one_job() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = temp_dir("no-rank");
    let trace = corpus.path("single-rank/mi250-toy-train.json.gz");
    let (a, b) = (dir.join("a.json.gz"), dir.join("b.json.gz"));
    for copy in [&a, &b] {
        std::fs::copy(&trace, copy).unwrap();
    }
    let edit = ["predict", "--scale-kernels", "class:memory=0.5"];
    run_ok(lumos().args(edit).arg(&a));
    for cmd in [&edit[..], &["replay", "--job"][..]] {
        for given in [vec![a.clone(), b.clone()], vec![dir.to_path_buf()]] {
            let out = lumos().args(cmd).args(&given).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
            assert!(
                err.contains(&format!(
                    "{}: cannot tell which rank this file is (no distributedInfo.rank, no \
                     rank<N> in the file name)",
                    a.display()
                )),
                "{cmd:?}: {err}"
            );
            assert!(!err.contains("both claim"), "{cmd:?}: {err}");
        }
    }
}

#[test]
fn a_prediction_into_a_directory_replaces_an_earlier_one_whole() {
    let dir = temp_dir("earlier");
    let traces = dir.join("traces");
    synth_pipeline(&traces);
    let out = dir.join("predicted");
    let predict = |edit: &[&str]| {
        let o = run_ok(
            lumos()
                .arg("predict")
                .args(edit)
                .arg("--out")
                .arg(&out)
                .arg(&traces),
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    predict(&["--pp", "4", "--layers", "8"]);
    assert_eq!(files_in(&out).len(), 4);
    // One of them copied under a name that is not UTF-8, which `replay
    // DIR` lists (lossily) as it lists the others: it was kept, and read
    // as its rank a second time.
    let mut earlier = 2;
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let renamed = out.join(std::ffi::OsStr::from_bytes(b"r\xff.predicted.json.gz"));
        std::fs::copy(&files_in(&out)[0], renamed).unwrap();
        earlier += 1;
    }
    // The identity writes two stages: the other two of the earlier
    // prediction would join them as ranks of the job `replay DIR` reads.
    let err = predict(&[]);
    assert!(
        err.contains(&format!(
            "removed {earlier} predicted timelines of an earlier prediction"
        )),
        "{err}"
    );
    let names: Vec<String> = (files_in(&out).iter())
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["rank0.predicted.json.gz", "rank4.predicted.json.gz"],
        "{names:?}"
    );
    let r = json(&["replay"], &[out]);
    assert_eq!(r["traces"].as_array().unwrap().len(), 2, "{r}");
}

/// A trace without steps has one row, the window, and its GPU work is
/// every GPU task's: halving the MI210's compute kernels takes 2.671 ms
/// of work out of a window that shortens by 1.227 ms. Before, the work
/// was summed over the steps, none, and read +0.000.
#[test]
fn the_window_of_a_trace_without_steps_says_its_gpu_work() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let f = [corpus.path("single-rank/mi210-gpu-only.json.gz")];
    let v = json(&["predict", "--scale-kernels", "class:compute=0.5"], &f);
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0]["step"], "window");
    let work = steps[0]["gpu_work_change_ms"].as_f64().unwrap();
    // Half the window's compute (5.343 ms, all of it exposed).
    assert!((work + 2.671).abs() < 0.01, "{work}");
}

/// A pipeline rebuilt deeper waits longer in its receives, and that
/// waiting is no work: gpt-small at `--pp 4` from 2 shortens every step
/// by about 22% with next to no change of GPU work (compute unchanged,
/// the transfers' modelled times), so no note says the difference ran
/// in slack. Before, the receives' replayed spans, their waits included,
/// were counted: +74.9 ms of "work" a step, and the note.
#[test]
fn waits_for_peers_are_not_gpu_work() {
    let dir = temp_dir("pp-work");
    let out = run_ok(
        lumos()
            .args(["synth", "--model", "gpt-small", "--pp", "2"])
            .args(["--microbatches", "4", "--steps", "3", "--out"])
            .arg(dir.path()),
    );
    assert!(!out.stdout.is_empty());
    let v = json(&["predict", "--pp", "4"], &[dir.path().to_path_buf()]);
    for s in v["steps"].as_array().unwrap() {
        let work = s["gpu_work_change_ms"].as_f64().unwrap();
        let step = s["predicted_ms"].as_f64().unwrap() - s["replayed_ms"].as_f64().unwrap();
        assert!(step < -10.0, "{s}");
        assert!(work.abs() < 2.0, "{s}");
    }
    let out = run_ok(lumos().args(["predict", "--pp", "4"]).arg(dir.path()));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("GPU work ms"), "{text}");
    assert!(!text.contains("(GPU work ms: "), "{text}");
}

/// `--dp 16` on the recsys rank: three steps changed 0.00% and three
/// about +2%, unexplained. Every step gains the same GPU work (its three
/// all-reduces re-timed for 16 ranks, +1.544 ms each step); where the
/// step did not move the work ran in slack. The per-step table says so:
/// each step's change of GPU work beside its change of time, and a note
/// when a step changed by less. The identity prediction changes no work.
#[test]
fn each_step_says_how_much_gpu_work_changed_beside_its_time() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let f = [corpus.path("single-rank/a100-recsys-rank3of8.json.gz")];
    let identity = json(&["predict"], &f);
    for s in identity["steps"].as_array().unwrap() {
        assert_eq!(s["gpu_work_change_ms"].as_f64(), Some(0.0), "{s}");
    }
    let v = json(&["predict", "--dp", "16"], &f);
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 6);
    let (mut hid, mut moved) = (0, 0);
    for s in steps {
        let work = s["gpu_work_change_ms"].as_f64().unwrap();
        let step = s["predicted_ms"].as_f64().unwrap() - s["replayed_ms"].as_f64().unwrap();
        // The same collectives in every step, re-timed alike.
        assert!((work - 1.544).abs() < 0.01, "{s}");
        assert!(step <= work + 0.001, "{s}");
        if step.abs() < 0.001 {
            hid += 1;
        } else if (step - work).abs() < 0.05 {
            moved += 1;
        }
    }
    assert_eq!((hid, moved), (3, 3), "{steps:?}");
    let out = run_ok(lumos().args(["predict", "--dp", "16"]).args(&f));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("GPU work ms"), "{text}");
    let note = sentence(&text, "(GPU work ms: ", 4).unwrap_or_else(|| panic!("{text}"));
    assert!(note.contains("had the difference in slack"), "{note}");
    // The all-reduces are measured: their traced durations, waits for the
    // other ranks included, are in the work on both sides, and the change
    // is the modelled one alone (the same in every step above, while what
    // the all-reduces waited differs from step to step).
    assert!(
        note.contains("a measured communication kernel counts its traced duration"),
        "{note}"
    );
    // Nothing hidden, no note: the identity's table has the column alone.
    let out = run_ok(lumos().arg("predict").args(&f));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("(GPU work ms: "), "{text}");
}

/// `--micro-batch`: the traced size comes from the attention query
/// (h100-qwen: 16 sequences of 559 tokens), halving it halves the GPU
/// work of the passes; a trace without attention shapes is refused
/// (exit 2), not answered.
#[test]
fn micro_batch_size_edit_and_its_refusal() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let qwen = corpus.path("single-rank/h100-qwen-0.5b-inference.json.gz");
    let v = json(
        &["predict", "--micro-batch", "8"],
        std::slice::from_ref(&qwen),
    );
    assert_eq!(v["traced"]["micro_batch"], 16, "{}", v["traced"]);
    assert_eq!(v["target"]["micro_batch"], 8, "{}", v["target"]);
    let said = v["assumptions"].as_array().unwrap();
    assert!(
        said.iter()
            .any(|a| a.as_str().unwrap().starts_with("micro-batch size 16 -> 8")),
        "{said:?}"
    );
    for s in v["steps"].as_array().unwrap() {
        assert!(s["gpu_work_change_ms"].as_f64().unwrap() < 0.0, "{s}");
        let (p, r) = (&s["predicted_ms"], &s["replayed_ms"]);
        assert!(p.as_f64().unwrap() < r.as_f64().unwrap(), "{s}");
    }
    // The text's configurations end with the size, as the library's
    // `Config` text does (`Config::extras`, one formatting for both).
    let out = run_ok(lumos().args(["predict", "--micro-batch", "8"]).arg(&qwen));
    let text = String::from_utf8_lossy(&out.stdout);
    for (line, size) in [("  traced: ", 16), ("  target: ", 8)] {
        let l = (text.lines().find(|l| l.starts_with(line)))
            .unwrap_or_else(|| panic!("no {line:?} in {text}"));
        assert!(l.ends_with(&format!(", micro-batch size {size}")), "{l}");
    }
    let resnet = corpus.path("single-rank/a100-ddp-rank0of2-event-record.json.gz");
    let out = lumos()
        .args(["predict", "--micro-batch", "2"])
        .arg(&resnet)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the micro-batch size was not found in"),
        "{err}"
    );
}

/// The warnings `lumos predict` printed on stderr for the file `path`,
/// each without the file's name.
fn predict_warnings_of(stderr: &str, path: &Path) -> Vec<String> {
    let head = format!("warning: {}: ", path.display());
    (stderr.lines())
        .filter_map(|l| l.strip_prefix(&head).map(|w| format!("warning: {w}")))
        .collect()
}

#[test]
fn a_prediction_says_what_the_reader_and_the_build_warned_as_the_replay_does() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    // Stream waits without the events that resolve them: the build
    // leaves edges out and says so.
    let path = corpus.path("single-rank/a100-ddp-rank0of2-event-record.json.gz");
    let replay = run_ok(lumos().arg("replay").arg(&path));
    let replayed = common::warnings(&String::from_utf8_lossy(&replay.stdout));
    assert!(
        replayed.iter().any(|w| w.contains("could not be resolved")),
        "{replayed:?}"
    );
    let predict = run_ok(lumos().args(["predict", "--dp", "4"]).arg(&path));
    let stderr = String::from_utf8_lossy(&predict.stderr);
    assert_eq!(predict_warnings_of(&stderr, &path), replayed, "{stderr}");
    // The JSON carries them, as the replay's JSON does.
    let json_replay = json(&["replay"], std::slice::from_ref(&path));
    let v = json(&["predict", "--dp", "4"], std::slice::from_ref(&path));
    let carried = &v["input_warnings"];
    assert_eq!(carried.as_array().map(Vec::len), Some(1), "{carried}");
    assert_eq!(carried[0]["path"], path.display().to_string());
    assert_eq!(
        carried[0]["warnings"], json_replay["traces"][0]["warnings"],
        "{carried}"
    );
    // An `.lgraph` file of it keeps them.
    let dir = temp_dir("warned-lgraph");
    let lgraph = dir.path().join("rank.lgraph");
    run_ok(lumos().arg("ingest").arg(&path).arg("-o").arg(&lgraph));
    let v = json(&["predict", "--dp", "4"], std::slice::from_ref(&lgraph));
    assert_eq!(
        v["input_warnings"][0]["warnings"], json_replay["traces"][0]["warnings"],
        "{}",
        v["input_warnings"]
    );
    // A trace without warnings adds none.
    let dir = temp_dir("unwarned");
    let clean = synth_pipeline(dir.path()).swap_remove(0);
    let replay = json(&["replay"], std::slice::from_ref(&clean));
    assert_eq!(replay["traces"][0]["warnings"], serde_json::json!([]));
    let predict = run_ok(lumos().args(["predict", "--dp", "4"]).arg(&clean));
    let stderr = String::from_utf8_lossy(&predict.stderr);
    assert!(!stderr.contains("warning:"), "{stderr}");
    let v = json(&["predict", "--dp", "4"], std::slice::from_ref(&clean));
    assert!(v.get("input_warnings").is_none(), "{v}");
}
