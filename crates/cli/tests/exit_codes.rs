//! Exit codes as docs/CLI.md gives them: every argument check made after
//! clap's parsing is a usage error (2) with its own message, while a file
//! that cannot be read or processed is bad input (1). Inputs are
//! synthesized, so no test here needs the corpus.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{lumos, run_ok};
use lumos_testkit::TempDir;

/// One synthesized rank (gpt-tiny, no parallelism) in `dir`.
fn one_rank(dir: &Path) -> PathBuf {
    let out = run_ok(
        lumos()
            .args(["synth", "--model", "gpt-tiny", "--out"])
            .arg(dir),
    );
    let files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

/// A kernel speed-up that selects nothing would change nothing without a
/// word: `replay` and `predict` refuse it as bad usage, naming the file.
#[test]
fn a_kernel_speed_up_that_selects_nothing_is_a_usage_error() {
    let dir = TempDir::new("cli-exit-scale");
    let f = one_rank(&dir.join("job"));
    let name = f.file_name().unwrap().to_string_lossy().into_owned();
    for cmd in ["replay", "predict"] {
        // Names are matched as written: gpt-tiny's GEMM kernels say "gemm".
        let out = run(&[cmd, "--scale-kernels", "GEMM=0.5"], Some(&f));
        let want = "kernel speed-up GEMM=0.5 selects no GPU task in ";
        assert_fails(&out, 2, want, cmd);
        assert_fails(&out, 2, &name, cmd);
        // One GPU, no communication kernel.
        let out = run(&[cmd, "--scale-kernels", "class:comm=0.5"], Some(&f));
        assert_fails(&out, 2, "class:comm=0.5 selects no GPU task", cmd);
        let out = run(&[cmd, "--scale-kernels", "gemm=0.5", "--json"], Some(&f));
        assert_eq!(out.status.code(), Some(0), "{cmd}");
    }
    // The deprecated bare form picks the same kernels, and is checked too.
    for (flags, want) in [
        (["--scale-pattern", "GEMM"], "GEMM=0.5 selects no GPU task"),
        (
            ["--scale-only", "comm"],
            "class:comm=0.5 selects no GPU task",
        ),
    ] {
        let out = run(
            &[&["replay", "--scale-kernels", "0.5"], &flags[..]].concat(),
            Some(&f),
        );
        assert_fails(&out, 2, want, "bare");
    }
    let out = run(
        &[
            "replay",
            "--scale-kernels",
            "0.5",
            "--scale-pattern",
            "gemm",
        ],
        Some(&f),
    );
    assert_eq!(out.status.code(), Some(0), "bare");
    // The replays that take only the bare form apply it unchecked.
    let bare = ["--scale-kernels", "0.5", "--scale-pattern", "GEMM"];
    let from = f.to_str().unwrap();
    for flags in [&["--representatives"][..], &["--durations-from", from][..]] {
        let out = run(&[&["replay"], flags, &bare[..]].concat(), Some(&f));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {err}");
    }
}

fn run(args: &[&str], path: Option<&Path>) -> Output {
    lumos().args(args).args(path).output().unwrap()
}

/// Asserts the exit code, that stderr is an `error:` naming `message`, and
/// that a usage error printed no result.
fn assert_fails(out: &Output, code: i32, message: &str, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: {err}");
    assert!(
        err.starts_with("error: ") && err.contains(message),
        "{what}: wanted {message:?} in {err:?}"
    );
    if code == 2 {
        assert!(out.stdout.is_empty(), "{what}: printed a result");
    }
}

#[test]
fn replay_checks_are_usage_errors() {
    let dir = TempDir::new("cli-exit-replay");
    let f = one_rank(&dir.join("job"));
    for scale in ["0", "-1", "inf", "NaN", "1e18"] {
        let arg = format!("--scale-kernels={scale}");
        let out = run(&["replay", &arg], Some(&f));
        let want = format!(
            "invalid value '{scale}' for '--scale-kernels <PATTERN=FACTOR>': must be a number \
             from 1e-6 to 1e6, got {scale}"
        );
        assert_fails(&out, 2, &want, scale);
    }
    let out = run(&["replay", "--job", "--scale-rank", "0=1e18"], Some(&f));
    assert_fails(
        &out,
        2,
        "factor must be a number from 1e-6 to 1e6",
        "rank factor",
    );
    // One rank twice would multiply its factors.
    let out = run(
        &["replay", "--job", "--scale-rank", "0=1e6,0=1e6"],
        Some(&f),
    );
    assert_fails(&out, 2, "--scale-rank names rank 0 twice", "twice");
    // So would one kernel pattern twice, in each command that takes them,
    // whatever the factors; two patterns that overlap are two what-ifs.
    let report = dir.join("page.html");
    let twice = ["class:gemm=1e6", "gemm=2", "class:gemm=3"];
    let twice: Vec<&str> = twice.iter().flat_map(|k| ["--scale-kernels", k]).collect();
    let want = "--scale-kernels names pattern class:gemm twice; give each pattern one factor";
    for cmd in [
        &["replay"][..],
        &["predict"],
        &["report", "-o", report.to_str().unwrap()],
    ] {
        let out = run(&[cmd, &twice[..]].concat(), Some(&f));
        assert_fails(&out, 2, want, cmd[0]);
    }
    assert!(!report.exists(), "nothing is written");
    // The deprecated bare factor's selection is its pattern.
    let out = run(
        &[
            "replay",
            "--scale-kernels",
            "2",
            "--scale-pattern",
            "gemm",
            "--scale-kernels",
            "gemm=2",
        ],
        Some(&f),
    );
    assert_fails(&out, 2, "--scale-kernels names pattern gemm twice", "bare");
    // One trace is not a job...
    let out = run(&["replay", "--scale-rank", "0=2"], Some(&f));
    assert_fails(&out, 2, "--scale-rank needs the ranks of one job", "no job");
    // ...and with --job, the rank must be one of it.
    let out = run(&["replay", "--job", "--scale-rank", "5=2"], Some(&f));
    assert_fails(
        &out,
        2,
        "--scale-rank 5=2: rank 5 is not in the job",
        "rank",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("try '--help'"), "{err}");
}

#[test]
fn predict_checks_are_usage_errors() {
    let dir = TempDir::new("cli-exit-predict");
    let f = one_rank(&dir.join("job"));
    for flag in ["--dp", "--pp", "--tp", "--microbatches", "--layers"] {
        for bad in ["0", "100000", "-3", "2.5"] {
            let arg = format!("{flag}={bad}");
            let out = run(&["predict", &arg], Some(&f));
            let want = format!("for '{flag} <");
            assert_fails(&out, 2, &want, flag);
            assert_fails(
                &out,
                2,
                &format!("must be a whole number from 1 to 65536, got {bad}"),
                flag,
            );
        }
    }
    for flag in ["--hidden", "--ffn"] {
        let out = run(&["predict", flag, "0"], Some(&f));
        assert_fails(
            &out,
            2,
            "must be a whole number from 1 to 1048576, got 0",
            flag,
        );
    }
    for k in ["class:gemm=1e308", "class:gemm=0", "flash=NaN"] {
        let out = run(&["predict", "--scale-kernels", k], Some(&f));
        assert_fails(&out, 2, "factor must be a number from 1e-6 to 1e6", k);
    }
    let out = run(&["predict", "--network", "tpu-v9"], Some(&f));
    assert_fails(&out, 2, "--network: unknown preset \"tpu-v9\"", "preset");
    // A network file that exists but is malformed is bad input.
    let net = dir.join("net.json");
    std::fs::write(&net, "{\"inter_node\": ").unwrap();
    let out = run(&["predict", "--network", net.to_str().unwrap()], Some(&f));
    assert_fails(&out, 1, "net.json: invalid JSON", "network file");
    // So is one whose key is misspelt: the preset's value would be taken
    // without a word.
    std::fs::write(&net, r#"{"inter_node": {"bandwidth": 100}}"#).unwrap();
    let out = run(&["predict", "--network", net.to_str().unwrap()], Some(&f));
    let want = "net.json: unknown key \"bandwidth\" in \"inter_node\"";
    assert_fails(&out, 1, want, "misspelt network key");
}

/// `lumos predict` reads its files in parallel; a file it cannot read is
/// bad input (1), and the error names the first such file in the order
/// the files were given, whichever was read first.
#[test]
fn predict_names_the_first_unreadable_file_in_order() {
    let dir = TempDir::new("cli-exit-predict-files");
    let f = one_rank(&dir.join("job"));
    let truncated = dir.join("truncated.json");
    std::fs::write(&truncated, "{\"traceEvents\": [").unwrap();
    let missing = dir.join("missing.json");
    let run_files = |files: &[&Path]| {
        lumos()
            .args(["predict", "--dp", "4"])
            .args(files)
            .output()
            .unwrap()
    };
    let out = run_files(&[&f, &truncated, &missing]);
    assert_fails(&out, 1, "truncated.json: truncated JSON", "truncated first");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("missing.json"));
    let out = run_files(&[&missing, &f, &truncated]);
    assert_fails(&out, 1, "missing.json: no such file", "missing first");
    assert!(out.stdout.is_empty(), "printed a result");
}

#[test]
fn synth_checks_are_usage_errors() {
    let dir = TempDir::new("cli-exit-synth");
    let out_dir = dir.join("out");
    let synth = |args: &[&str]| {
        lumos()
            .arg("synth")
            .args(args)
            .arg("--out")
            .arg(&out_dir)
            .output()
            .unwrap()
    };
    for (args, message) in [
        (
            &["--model", "gpt-nonexistent"][..],
            "--model: unknown preset \"gpt-nonexistent\"",
        ),
        (
            &["--model", "gpt-tiny", "--gpu", "tpu-v9"][..],
            "--gpu: unknown preset \"tpu-v9\"",
        ),
        (
            &["--model", "gpt-tiny", "--tp", "3"][..],
            "invalid config: heads 16 is not a multiple of tp 3",
        ),
        (
            &["--model", "gpt-tiny", "--pp", "0"][..],
            "invalid value '0' for '--pp <PP>': must be a whole number from 1 to 65536, got 0",
        ),
        (
            &["--model", "gpt-tiny", "--steps", "1"][..],
            "invalid value '1' for '--steps <STEPS>': must be a whole number from 2 to 65536",
        ),
        (
            &["--model", "gpt-tiny", "--dp", "18446744073709551615"][..],
            "'--dp <DP>': must be a whole number from 1 to 65536",
        ),
        (
            &[
                "--model", "gpt-tiny", "--dp", "65536", "--tp", "16", "--pp", "4",
            ][..],
            "--tp x --pp x --dp is 4194304 GPUs; lumos synth writes jobs of at most 1048576",
        ),
        (
            &["--model", "gpt-tiny", "--steps", "20000"][..],
            "each rank's trace would hold about 84960000 events, about 21 GB of JSON (20000 \
             steps of 2 micro-batches over 4 layers per stage); lumos synth writes at most 4 GB \
             per rank",
        ),
        (
            &["--model", "gpt-tiny", "--microbatches", "60000"][..],
            "lumos synth writes at most 4 GB per rank",
        ),
        (
            &["--model", "gpt-tiny", "--cluster", "frontier"][..],
            "--cluster: unknown preset \"frontier\"",
        ),
        (
            &["--model", "gpt-tiny", "--dp", "2", "--global-batch", "7"][..],
            "--global-batch 7 is not a multiple of micro-batch 1 x dp 2",
        ),
        (
            &["--model", "gpt-tiny", "--recompute", "some"][..],
            "--recompute: \"some\" is not none, selective or full",
        ),
        (
            &["--model", "gpt-tiny", "--gpu", "a100", "--precision", "fp8"][..],
            "invalid config: a100 has no FP8 tensor cores",
        ),
        (
            &[
                "--model",
                "gpt-tiny",
                "--pp",
                "2",
                "--virtual-stages",
                "2",
                "--no-overlap-p2p-communication",
            ][..],
            "invalid config: the interleaved schedule without overlapped pipeline sends \
             (Megatron-LM's --no-overlap-p2p-communication) needs more than 2 pipeline stages, \
             got 2",
        ),
        (
            &["--model", "gpt-tiny", "--virtual-stages", "2"][..],
            "invalid config: the interleaved schedule needs more than 1 pipeline stage, got 1",
        ),
        (
            &["--model", "gpt-tiny", "--global-batch", "1e9"][..],
            "'--global-batch <GLOBAL_BATCH>': must be a whole number from 1 to 16777216, got 1e9",
        ),
        (
            &["--model", "gpt-tiny", "--micro-batch", "0"][..],
            "'--micro-batch <MICRO_BATCH>': must be a whole number from 1 to 65536, got 0",
        ),
        (
            &[
                "--model",
                "gpt-tiny",
                "--pp",
                "4",
                "--virtual-stages",
                "65536",
            ][..],
            "invalid config: 4 layers cannot fill 4 pipeline stages of 65536 model chunks",
        ),
    ] {
        assert_fails(&synth(args), 2, message, &format!("{args:?}"));
    }
    assert!(!out_dir.exists(), "nothing is written on a usage error");
}

/// A model file's numbers are bounded like the flags' (bad input, exit 1,
/// naming the file and the field).
#[test]
fn synth_model_files_are_bounded() {
    let dir = TempDir::new("cli-exit-model");
    let synth = |body: &str| {
        let model = dir.join("model.json");
        std::fs::write(&model, body).unwrap();
        lumos()
            .args(["synth", "--model"])
            .arg(&model)
            .arg("--out")
            .arg(dir.join("out"))
            .output()
            .unwrap()
    };
    for (body, field) in [
        (r#"{"layers": 4, "hidden": 1024, "heads": 0}"#, "heads"),
        (
            r#"{"layers": 18446744073709551615, "hidden": 1024, "heads": 16}"#,
            "layers",
        ),
        (
            r#"{"layers": 4, "hidden": 1024, "heads": 16, "vocab": 1e12}"#,
            "vocab",
        ),
    ] {
        let out = synth(body);
        let want = format!("model.json: \"{field}\" must be a whole number from 1 to");
        assert_fails(&out, 1, &want, field);
    }
    // Within every bound, but its optimizer's kernels alone would make a
    // trace of about 10 GB (it aborted on a 16 GiB allocation): refused
    // before anything is allocated.
    let out = synth(r#"{"layers": 4, "hidden": 1048576, "heads": 16}"#);
    assert_fails(&out, 2, "GB of JSON", "hidden 1048576");
    assert!(!dir.join("out").exists());
    // Small enough to write (a 100 MB gzip), but 7.4 TB of 16-bit weights on
    // one GPU: a configuration that cannot exist is refused, not written.
    let out = synth(r#"{"layers": 2, "hidden": 393216, "heads": 3072}"#);
    assert_fails(&out, 2, "no such GPU holds this model", "hidden 393216");
    assert!(!dir.join("out").exists());
}

#[test]
fn clap_errors_and_bad_files_keep_their_codes() {
    let out = run(&["replay", "--deps", "no-such-kind", "x.json"], None);
    assert_eq!(out.status.code(), Some(2));
    let dir = TempDir::new("cli-exit-bad");
    let bad = dir.join("broken.json");
    std::fs::write(&bad, "{\"traceEvents\": [").unwrap();
    assert_fails(&run(&["replay"], Some(&bad)), 1, "broken.json", "trace");
    let out = lumos().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for line in ["Exit codes:", "0  success", "1  bad input", "2  bad usage"] {
        assert!(help.contains(line), "{line} not in --help: {help}");
    }
}

/// JSON read outside lumos-trace (`--network` and `--model` files) goes
/// through serde_json, whose recursion limit stops deep nesting with an
/// error naming the file, not a stack overflow (issue 11, item 1).
#[test]
fn issue_11_deeply_nested_network_and_model_files_are_errors() {
    let dir = TempDir::new("cli-exit-deep");
    let f = one_rank(&dir.join("job"));
    let deep = dir.join("deep.json");
    let depth = 200_000;
    let text = format!("{{\"layers\": {}{}}}", "[".repeat(depth), "]".repeat(depth));
    std::fs::write(&deep, text).unwrap();
    let path = deep.to_str().unwrap();
    let out = run(&["predict", "--network", path], Some(&f));
    assert_fails(&out, 1, "deep.json: invalid JSON", "deep network file");
    let out = lumos()
        .args(["synth", "--model", path, "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert_fails(&out, 1, "deep.json: invalid JSON", "deep model file");
}

/// Times past the clock's range (292 years) are refused, never printed:
/// a network file's latency past any network's is a bad file, and speed-ups
/// that multiply past the range stop the replay, naming a task and its
/// file (for a job, its rank's; for a prediction, its inputs). Before, such a latency gave predicted steps of
/// -9.2e12 ms and such factors steps of 292 years, with exit 0.
#[test]
fn times_past_the_clock_are_refused_not_printed() {
    let dir = TempDir::new("cli-exit-clock");
    let f = one_rank(&dir.join("job"));
    let net = dir.join("net.json");
    std::fs::write(&net, r#"{"base_latency_us": 1e14}"#).unwrap();
    let out = run(&["predict", "--network", net.to_str().unwrap()], Some(&f));
    let want = "net.json: \"base_latency_us\" must be at most 1000000";
    assert_fails(&out, 1, want, "a latency of 1e14 us");
    // The first kernel takes 1e13 us, which one factor of 1e6 takes past
    // the range (a pattern given twice, whose factors would multiply, is
    // refused).
    with_a_long_kernel(&f);
    let slower = ["--scale-kernels", "class:compute=1e6"];
    let name = f.file_name().unwrap().to_string_lossy().into_owned();
    for cmd in ["replay", "predict"] {
        let out = run(&[&[cmd][..], &slower].concat(), Some(&f));
        assert_fails(&out, 1, "past the clock's range", cmd);
        // Each names the file whose replay it refused (the predicted one
        // did not).
        assert_fails(&out, 1, &name, cmd);
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(!printed.contains("ProfilerStep"), "{cmd}: {printed}");
    }
    let out = run(&[&["predict"][..], &slower].concat(), Some(&f));
    let want = format!("replay of the predicted graphs of {}: ", f.display());
    assert_fails(&out, 1, &want, "predicted");
    // So does the page's what-if, which is the same prediction.
    let page = dir.join("page.html");
    let page_args = ["report", "-o", page.to_str().unwrap()];
    let out = run(&[&page_args[..], &slower].concat(), Some(&f));
    assert_fails(&out, 1, &want, "report");
    assert!(!page.exists(), "nothing is written");
    let out = run(&[&["replay", "--job"][..], &slower].concat(), Some(&f));
    assert_fails(&out, 1, "joint replay of the job failed at rank 0 (", "job");
    assert_fails(&out, 1, &name, "job");
    // In a job of two, the rank whose times ran past the clock is named,
    // not the first rank that waited for it.
    let job = dir.join("two");
    run_ok(
        lumos()
            .args([
                "synth", "--model", "gpt-tiny", "--dp", "2", "--ranks", "all", "--out",
            ])
            .arg(&job),
    );
    for rank in ["0", "1"] {
        with_a_long_kernel(&job.join(format!("rank{rank}.json.gz")));
    }
    for rank in ["0", "1"] {
        let scale = format!("{rank}=1e6");
        let out = run(&["replay", "--job", "--scale-rank", &scale], Some(&job));
        let want = format!("failed at rank {rank} (");
        assert_fails(&out, 1, &want, &scale);
        assert_fails(&out, 1, &format!("rank{rank}.json.gz"), &scale);
    }
}

/// Rewrites the synthesized trace `path` (gzip) with its first kernel
/// taking 1e13 us.
fn with_a_long_kernel(path: &Path) {
    let text = String::from_utf8(lumos_testkit::gunzip_file(path)).unwrap();
    let kernel = text.find("\"cat\":\"kernel\"").unwrap();
    let dur = kernel + text[kernel..].find("\"dur\":").unwrap() + "\"dur\":".len();
    let end = dur + text[dur..].find([',', '}']).unwrap();
    let long = format!("{}10000000000000{}", &text[..dur], &text[end..]);
    std::fs::write(path, lumos_testkit::gzip(long.as_bytes())).unwrap();
}

/// An output that is one of the inputs is refused before anything is
/// read or written: `lumos report -o t.json.gz t.json.gz` replaced the
/// trace with the page, then said "wrote". Through a link too.
#[test]
fn an_output_that_is_an_input_is_refused() {
    let dir = TempDir::new("cli-exit-same-file");
    let f = one_rank(&dir.join("job"));
    let before = std::fs::read(&f).unwrap();
    let link = dir.join("link.json.gz");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&f, &link).unwrap();
    #[cfg(not(unix))]
    std::fs::copy(&f, &link).unwrap();
    for out_path in [&f, &link] {
        let out = lumos()
            .arg("report")
            .arg(&f)
            .arg("-o")
            .arg(out_path)
            .output()
            .unwrap();
        assert_fails(&out, 2, "the output would replace it", "report");
        let out = lumos()
            .arg("ingest")
            .arg(&f)
            .arg("-o")
            .arg(out_path)
            .output()
            .unwrap();
        assert_fails(&out, 2, "the output would replace it", "ingest");
    }
    assert_eq!(std::fs::read(&f).unwrap(), before);
}

/// `lumos predict --out DIR` refuses a timeline that would replace one of
/// its inputs before the work, as the other commands refuse theirs: the
/// merged one (`--merge`) before anything is read, the stages' (named
/// after their ranks in the predicted job) once the edits are made,
/// before the replays. Before, both were found out only as the timelines
/// were written, after the whole prediction: here, whose replay runs
/// past the clock's range, that failure (exit 1) came first. The trace
/// `--durations-from` names is one of the inputs too (it was not
/// checked: a stage's timeline replaced it).
#[test]
fn predict_refuses_an_output_that_is_an_input_before_the_work() {
    let dir = TempDir::new("cli-exit-predict-same-file");
    let f = one_rank(&dir.join("job"));
    with_a_long_kernel(&f);
    let slower = ["predict", "--scale-kernels", "class:compute=1e6"];
    let predicted = dir.join("predicted");
    // Predicted elsewhere, its replay fails: the work the refusal spares.
    let elsewhere = ["--out", predicted.to_str().unwrap()];
    let out = run(&[&slower[..], &elsewhere].concat(), Some(&f));
    assert_fails(&out, 1, "past the clock's range", "elsewhere");
    // The trace in the directory under the names the prediction writes
    // (the one rank, rank 0, predicted as itself).
    let stage = predicted.join("rank0.predicted.json.gz");
    let merged = predicted.join("job.predicted.json.gz");
    std::fs::create_dir_all(&predicted).unwrap();
    for to in [&stage, &merged] {
        std::fs::copy(&f, to).unwrap();
    }
    let before = std::fs::read(&f).unwrap();
    // A second input that is no trace: reading it would fail (exit 1).
    let unread = dir.join("not-a-trace.json");
    std::fs::write(&unread, "not a trace").unwrap();
    // The trace whose durations the one input takes (--durations-from)
    // is an input too.
    let from = [
        OsStr::new("--durations-from"),
        stage.as_os_str(),
        f.as_os_str(),
    ];
    let cases: [(&PathBuf, bool, Vec<&OsStr>); 3] = [
        (&stage, false, vec![stage.as_os_str()]),
        (&merged, true, vec![unread.as_os_str(), merged.as_os_str()]),
        (&stage, false, from.to_vec()),
    ];
    for (input, merge, args) in cases {
        let mut cmd = lumos();
        cmd.args(slower).args(elsewhere);
        if merge {
            cmd.arg("--merge");
        }
        let out = cmd.args(&args).output().unwrap();
        let what = format!("{args:?}");
        let want = format!(
            "--out {}: is the input {}; the output would replace it",
            input.display(),
            input.display()
        );
        // A usage error, the first thing said (no note of the prediction
        // before it) and nothing printed ("wrote", a table).
        assert_fails(&out, 2, &want, &what);
        assert_eq!(std::fs::read(input).unwrap(), before, "{what}");
    }
    let mut left: Vec<_> = std::fs::read_dir(&predicted)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["job.predicted.json.gz", "rank0.predicted.json.gz"]);
}

/// A directory-valued output naming a file (or a path under one) was
/// found out only after the work, as bad input ("cannot create: File
/// exists"): every such flag is a usage error now, said before any work,
/// and the file is left as it was.
#[test]
fn a_directory_output_that_is_a_file_is_a_usage_error() {
    let dir = TempDir::new("cli-exit-out-file");
    let f = one_rank(&dir.join("job"));
    let taken = dir.join("taken");
    std::fs::write(&taken, "mine").unwrap();
    let t = taken.to_str().unwrap();
    let under = taken.join("sub");
    let u = under.to_str().unwrap();
    let with_trace: [&[&str]; 5] = [
        &["predict", "--out", t],
        &["predict", "--out", u],
        &["replay", "--out", t],
        &["replay", "--out", u],
        &["replay", "--per-trace", "--critical-path", t],
    ];
    for args in with_trace {
        let out = run(args, Some(&f));
        let flag = args[args.len() - 2];
        assert_fails(&out, 2, &format!("{flag} {}: ", args[args.len() - 1]), flag);
        assert_fails(&out, 2, "names the directory to write into", flag);
    }
    let out = run(&["replay", "--out", u], Some(&f));
    assert_fails(&out, 2, &format!("{t} is not a directory"), "under a file");
    // Several traces ingest into a directory.
    let other = dir.join("other.json.gz");
    std::fs::copy(&f, &other).unwrap();
    let ingest = |o: &str| {
        (lumos().args(["ingest", "-o", o]).arg(&f).arg(&other))
            .output()
            .unwrap()
    };
    assert_fails(&ingest(u), 2, &format!("{t} is not a directory"), "ingest");
    assert_fails(&ingest(t), 2, "this is a file", "ingest");
    // One trace's file under a file: refused alike, before the trace is
    // read (one that cannot be read gets no further); it was refused as
    // bad input (exit 1) only after reading it.
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "not a trace").unwrap();
    for trace in [&f, &garbage] {
        let out = (lumos().args(["ingest", "-o", u]).arg(trace))
            .output()
            .unwrap();
        assert_fails(&out, 2, &format!("{t} is not a directory"), "ingest one");
    }
    // One trace's file in a folder to create: created.
    let fresh = dir.join("fresh/deeper/one.lgraph");
    let out = (lumos().arg("ingest").arg("-o").arg(&fresh).arg(&f))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(fresh.is_file());
    // A path ending in `/` names a directory, to create, for one trace too.
    let slash = format!("{}/", dir.join("slash/deeper").display());
    let out = (lumos().args(["ingest", "-o", &slash]).arg(&f))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let name = lumos_store::lgraph_name(&f);
    assert!(dir.join("slash/deeper").join(name).is_file(), "{out:?}");
    for args in [
        &["synth", "--model", "gpt-tiny", "--out", t][..],
        &["demo", "--out", t],
    ] {
        let out = run(args, None);
        assert_fails(&out, 2, "exists and is not a directory", args[0]);
    }
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "mine");
    // A directory that is there, or one to create, is written into.
    for out_dir in [dir.join("job"), dir.join("new/deeper")] {
        let o = out_dir.to_str().unwrap();
        let out = run(&["predict", "--out", o], Some(&f));
        assert_eq!(out.status.code(), Some(0), "{o}");
    }
}

/// `lumos report -o` names a file. A directory there, or a file where a
/// folder above it should be, was found out only after the work, as bad
/// input with the system's words ("Is a directory (os error 21)", the path
/// said twice): now a usage error before any work that says what `-o`
/// takes. Folders missing above it were "No such file or directory" after
/// the work; they are created, as `--out` creates its directory.
#[test]
fn a_report_output_that_cannot_be_a_file_is_a_usage_error() {
    let dir = TempDir::new("cli-exit-report-o");
    let f = one_rank(&dir.join("job"));
    let folder = dir.join("job");
    let o = folder.to_str().unwrap();
    let out = run(&["report", "-o", o], Some(&f));
    let hint = folder.join("report.html");
    let want = format!(
        "-o {o}: is a directory; -o names the file to write, such as {}",
        hint.display()
    );
    assert_fails(&out, 2, &want, "a directory");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("os error"));
    let taken = dir.join("taken");
    std::fs::write(&taken, "mine").unwrap();
    let under = taken.join("r.html");
    let out = run(&["report", "-o", under.to_str().unwrap()], Some(&f));
    let want = format!(
        "{}: {} is not a directory",
        under.display(),
        taken.display()
    );
    assert_fails(&out, 2, &want, "under a file");
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "mine");
    // Folders to create: created, and the page written.
    let fresh = dir.join("new/deeper/r.html");
    let out = run(&["report", "-o", fresh.to_str().unwrap()], Some(&f));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(fresh.is_file());
}

/// `-` is standard input among the inputs, so `-o -` reads as standard
/// output; it made a file or folder named `-` in the working directory,
/// without a word (`report -o -` then printed "wrote -"). The page goes
/// to standard output; the outputs that are folders or `.lgraph` files are
/// refused before any work, and nothing named `-` is made.
#[test]
fn a_dash_output_is_standard_output_or_refused() {
    let dir = TempDir::new("cli-exit-dash-o");
    let f = one_rank(&dir.join("job"));
    let cwd = dir.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let in_cwd = |args: &[&str]| {
        lumos()
            .current_dir(&cwd)
            .args(args)
            .arg(&f)
            .output()
            .unwrap()
    };
    let out = in_cwd(&["report", "-o", "-"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.starts_with(b"<!DOCTYPE html>"), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("wrote the page to standard output"), "{err}");
    for args in [
        &["replay", "--out", "-"][..],
        &["replay", "--critical-path", "-"],
        &["predict", "--dp", "2", "--out", "-"],
        &["ingest", "-o", "-"],
        &["synth", "--model", "gpt-tiny", "--out", "-"],
        &["demo", "--out", "-"],
    ] {
        let out = match args[0] {
            "synth" | "demo" => lumos().current_dir(&cwd).args(args).output().unwrap(),
            _ => in_cwd(args),
        };
        let flag = args[args.len() - 2];
        let want = format!("{flag} -: standard output cannot take what is written here");
        assert_fails(&out, 2, &want, &args.join(" "));
    }
    let made: Vec<_> = std::fs::read_dir(&cwd).unwrap().collect();
    assert!(made.is_empty(), "{made:?}");
}

/// `lumos diff A B` takes two files. A directory for either was read as a
/// file and failed as bad input with the system's words ("cannot read
/// file: Is a directory (os error 21)"): now bad usage before anything is
/// read, naming the argument, as `--durations-from` and `lumos.diff` say.
#[test]
fn diff_of_a_directory_is_a_usage_error() {
    let dir = TempDir::new("cli-exit-diff-dir");
    let f = one_rank(&dir.join("job"));
    let folder = dir.join("job");
    let (file, d) = (f.to_str().unwrap(), folder.to_str().unwrap());
    for (args, name) in [([file, d], "B"), ([d, file], "A")] {
        let out = run(&["diff", args[0], args[1]], None);
        let want = format!("{name} {d}: give one trace file, not a directory");
        assert_fails(&out, 2, &want, name);
        assert!(!String::from_utf8_lossy(&out.stderr).contains("os error"));
    }
}

/// Every command that writes takes `-o` and `--out`: `ingest` had both,
/// `report` only `-o`/`--output`, the others only `--out`, so `lumos
/// replay T -o DIR` was refused with clap's "to pass '-o' as a value, use
/// '-- -o'", and `report --out` with "unexpected argument".
#[test]
fn every_writing_command_takes_o_and_out() {
    let dir = TempDir::new("cli-exit-short-o");
    let job = dir.join("job");
    let out = run(
        &["synth", "--model", "gpt-tiny", "-o", job.to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "synth -o: {out:?}");
    let f = job.join("rank0.json.gz");
    assert!(f.is_file());
    for (cmd, written) in [
        ("replay", "rank0.replayed.json.gz"),
        ("predict", "rank0.predicted.json.gz"),
    ] {
        let to = dir.join(cmd);
        let out = run(&[cmd, "-o", to.to_str().unwrap()], Some(&f));
        assert_eq!(out.status.code(), Some(0), "{cmd} -o: {out:?}");
        assert!(to.join(written).is_file(), "{cmd} -o");
    }
    let page = dir.join("page.html");
    let out = run(&["report", "--out", page.to_str().unwrap()], Some(&f));
    assert_eq!(out.status.code(), Some(0), "report --out: {out:?}");
    assert!(page.is_file());
}

/// Command lines that did something other than asked without a word, or
/// said something else than what was wrong (a fuzz of flag values, 5
/// December 2026): each is now a usage error that says what is wrong.
#[test]
fn flags_that_were_ignored_or_misnamed_are_usage_errors_that_say_why() {
    let dir = TempDir::new("cli-exit-flags");
    let f = one_rank(&dir.join("job"));
    let file = |args: &[&str], path: &Path| run(args, Some(path));
    let out_dir = dir.join("out");
    let o = out_dir.to_str().unwrap();
    // Standard input read twice found it empty: "file is empty".
    let out = lumos()
        .args(["inspect", "-", "-"])
        .stdin(std::fs::File::open(&f).unwrap())
        .output()
        .unwrap();
    assert_fails(&out, 2, "standard input (-) is given 2 times", "stdin");
    // --merge of inputs that are not one job wrote them apart.
    let out = file(&["replay", "--merge", "--out", o], &f);
    assert_fails(&out, 2, "--merge writes the ranks of a job", "merge");
    let out = lumos()
        .args(["replay", "--merge", "--out", o])
        .arg(&f)
        .arg(one_rank(&dir.join("apart")))
        .output()
        .unwrap();
    assert_fails(&out, 2, "--merge writes the ranks of a job", "merge of two");
    let out = file(&["replay", "--merge", "--per-trace", "--out", o], &f);
    assert_fails(
        &out,
        2,
        "'--merge' cannot be used with '--per-trace'",
        "merge",
    );
    // --representatives wrote no critical path.
    let out = file(&["replay", "--representatives", "--critical-path", o], &f);
    assert_fails(&out, 2, "cannot be used with '--critical-path", "reps");
    // Two inputs of one name replaced each other's timelines.
    let twin = dir.join("twin");
    std::fs::create_dir_all(&twin).unwrap();
    std::fs::copy(&f, twin.join(f.file_name().unwrap())).unwrap();
    let out = lumos()
        .args(["replay", "--per-trace", "--out", o])
        .arg(&f)
        .arg(twin.join(f.file_name().unwrap()))
        .output()
        .unwrap();
    assert_fails(&out, 2, "would both be written as", "same names");
    assert!(!out_dir.exists(), "nothing is written");
    // Said before any trace is read: one that cannot be read is not
    // reached.
    let broken = dir.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join(f.file_name().unwrap()), "not gzip").unwrap();
    let out = lumos()
        .args(["replay", "--per-trace", "--out", o])
        .arg(&f)
        .arg(broken.join(f.file_name().unwrap()))
        .output()
        .unwrap();
    assert_fails(&out, 2, "would both be written as", "same names, unread");
    let out = lumos()
        .arg("ingest")
        .arg(&f)
        .arg(twin.join(f.file_name().unwrap()))
        .args(["-o", o])
        .output()
        .unwrap();
    assert_fails(&out, 2, "would both be written as", "ingest, same names");
    assert!(!out_dir.exists(), "nothing is written");
    // Names are the traces', also through compact files: two of one trace
    // name clash whatever the files' names, two of different trace names
    // do not (however the files are named).
    let (g0, g1) = (dir.join("g0"), dir.join("g1"));
    std::fs::create_dir_all(&g0).unwrap();
    std::fs::create_dir_all(&g1).unwrap();
    let ingest = |trace: &Path, out: &Path| {
        run_ok(lumos().arg("ingest").arg(trace).arg("-o").arg(out));
    };
    ingest(&f, &g0.join("a.lgraph"));
    ingest(&twin.join(f.file_name().unwrap()), &g1.join("b.lgraph"));
    let out = lumos()
        .args(["replay", "--per-trace", "--out", o])
        .arg(g0.join("a.lgraph"))
        .arg(g1.join("b.lgraph"))
        .output()
        .unwrap();
    assert_fails(&out, 2, "would both be written as", "compact, same traces");
    let other = one_rank(&dir.join("other"));
    let renamed = dir.join("renamed.json.gz");
    std::fs::copy(&other, &renamed).unwrap();
    ingest(&renamed, &g1.join("a.lgraph"));
    let out = lumos()
        .args(["replay", "--per-trace", "--out", o])
        .arg(g0.join("a.lgraph"))
        .arg(g1.join("a.lgraph"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    std::fs::remove_dir_all(&out_dir).unwrap();
    // A `-` that is another flag's value is no input.
    let out = lumos()
        .args([
            "replay",
            "-",
            "--scale-kernels",
            "2",
            "--scale-pattern",
            "-",
        ])
        .stdin(std::fs::File::open(&f).unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("standard input (-) is given"), "{err}");
    // Standard output is written to as it is, not renamed onto.
    let out = lumos()
        .arg("report")
        .arg(&f)
        .args(["-o", "/dev/stdout"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("<html"));
    // Standard output redirected to a file, appended to (`>>`): the page
    // follows what was there, whole, and the "wrote" line goes to stderr
    // (reopening the path started at offset 0, over the file's start).
    let page = dir.join("page.html");
    std::fs::write(&page, "before\n").unwrap();
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .open(&page)
        .unwrap();
    let out = lumos()
        .arg("report")
        .arg(&f)
        .args(["-o", "/dev/stdout"])
        .stdout(appended)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(
        text.starts_with("before\n<!DOCTYPE html>"),
        "{}",
        &text[..80]
    );
    assert!(text.trim_end().ends_with("</html>"), "the page's end");
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote /dev/stdout"));
    // A folder named like a preset beside the command is no file given.
    let cwd = dir.join("cwd");
    std::fs::create_dir_all(cwd.join("h100")).unwrap();
    let out = lumos()
        .current_dir(&cwd)
        .args(["predict", "--network", "h100"])
        .arg(&f)
        .output()
        .unwrap();
    // The preset is taken, and refused for this trace without
    // communication (the folder would be bad input, exit 1).
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a target network times communication only"),
        "{err}"
    );
    // A missing file or a folder given for a file was "an unknown preset"
    // (bad usage): it is a file that cannot be read (bad input).
    let missing = dir.join("none.json");
    let missing = missing.to_str().unwrap();
    let out = file(&["predict", "--network", missing], &f);
    assert_fails(&out, 1, "none.json: no such file", "network");
    let out = file(&["predict", "--network", o.trim_end_matches("out")], &f);
    assert_fails(&out, 1, "a directory, not a file", "network folder");
    let out = lumos()
        .args(["synth", "--model", missing, "--out", o])
        .output()
        .unwrap();
    assert_fails(&out, 1, "--model ", "model");
    assert_fails(&out, 1, "none.json: no such file", "model");
    // An unreadable memory limit was taken without a word by commands
    // that read no job.
    let out = lumos()
        .env("LUMOS_MEMORY_LIMIT", "abc")
        .args(["synth", "--model", "gpt-tiny", "--out", o])
        .output()
        .unwrap();
    assert_fails(&out, 2, "LUMOS_MEMORY_LIMIT=\"abc\"", "limit");
    assert!(!out_dir.exists(), "nothing is written");
}

/// A decompression bomb: about 1 MB of gzip (1,100 members of 1 MiB of
/// `a` each, which gzip readers take one after another) that inflates to
/// one event of 1.1 GiB. Each event is held whole while it is parsed, so
/// it stops at lumos-trace's limit (1 GiB) as bad input, naming the event,
/// instead of taking all memory (it took 7.3 GB for 3 GB before).
#[test]
fn issue_12_a_decompression_bomb_is_bad_input() {
    use std::io::Write;
    let member = |data: &[u8]| {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    };
    let mut gz = member(
        br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"x": ""#,
    );
    let block = member(&vec![b'a'; 1 << 20]);
    for _ in 0..1100 {
        gz.extend_from_slice(&block);
    }
    gz.extend_from_slice(&member(br#""}}]}"#));
    assert!(gz.len() < 2 << 20, "{} bytes of gzip", gz.len());
    let dir = TempDir::new("cli-exit-bomb");
    let bomb = dir.join("bomb.json.gz");
    std::fs::write(&bomb, &gz).unwrap();
    let out = run(&["inspect"], Some(&bomb));
    assert_fails(
        &out,
        1,
        "bomb.json.gz: traceEvents[0] at byte 17 is larger than 1 GiB, the most lumos reads of one \
         value (a damaged or hostile file: Kineto's events are a few KB)",
        "bomb",
    );
}

/// A job whose ranks would outgrow the machine stops reading with an error
/// that says what to do instead (exit 1), where the kernel would kill it
/// without a word; `LUMOS_MEMORY_LIMIT` stands for a small machine here.
/// Linux only: the guard reads `/proc`.
#[cfg(target_os = "linux")]
#[test]
fn issue_12_a_job_past_the_memory_limit_stops_with_a_way_out() {
    let dir = TempDir::new("memory-limit");
    let job = dir.join("job");
    run_ok(
        lumos()
            .args(["synth", "--model", "gpt-tiny", "--pp", "2", "--dp", "12"])
            .args(["--ranks", "all", "--out"])
            .arg(&job),
    );
    let commands = [
        &["replay"][..],
        &["replay", "--job"],
        &["inspect"],
        &["report", "-o"],
    ];
    let said = "of 24 inputs not read: lumos held";
    stopped_by_memory_limit(&dir, &job, &commands, "1M", said);
    // A prediction holds every rank until it can tell the stages apart;
    // its way out is fewer traces, not representatives.
    let predict = lumos()
        .args(["predict", "--dp", "6"])
        .arg(&job)
        .env("LUMOS_MEMORY_LIMIT", "1M")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&predict.stderr);
    assert_eq!(predict.status.code(), Some(1), "{err}");
    assert!(
        err.contains("inputs not read: lumos held") && err.contains("one trace per pipeline stage"),
        "{err}"
    );
    assert!(predict.stdout.is_empty());
    run_ok(lumos().args(["predict", "--dp", "6"]).arg(&job));
    // Representatives hold one graph per group, not every rank: not stopped.
    let reps = lumos()
        .args(["replay", "--representatives"])
        .arg(&job)
        .env("LUMOS_MEMORY_LIMIT", "1M")
        .output()
        .unwrap();
    assert!(
        reps.status.success(),
        "{}",
        String::from_utf8_lossy(&reps.stderr)
    );
    // Without the variable the machine's memory is the limit, and `off`
    // turns the guard off: the job reads.
    run_ok(lumos().arg("replay").arg(&job));
    // In any case: `OFF` in a shell script means the same.
    for off in ["off", "OFF", "Off"] {
        run_ok(
            lumos()
                .arg("inspect")
                .arg(&job)
                .env("LUMOS_MEMORY_LIMIT", off),
        );
    }
    // Not a size, or a size that would refuse every job (a slip for off).
    for value in ["lots", "0", "0G"] {
        let bad = lumos()
            .arg("inspect")
            .arg(&job)
            .env("LUMOS_MEMORY_LIMIT", value)
            .output()
            .unwrap();
        assert_fails(&bad, 2, "not a size from 1 byte to below 16 EiB", value);
    }
}

/// A job whose ranks read under the limit but whose joint replay would
/// pass it stops before the replay, where the kernel would kill it part
/// way. The 16 ranks hold about 208 MiB once read by two threads (more
/// threads hold more at once) and the replay needs at least 76 MiB more
/// (1 M tasks), so a limit of 250 MiB lets the read through and refuses
/// the replay, with about 35 MiB of margin each way.
#[test]
#[cfg(target_os = "linux")]
fn issue_12_a_joint_replay_past_the_memory_limit_is_refused_before_it_starts() {
    let dir = TempDir::new("memory-limit-replay");
    let job = dir.join("job");
    run_ok(
        lumos()
            .args(["synth", "--model", "gpt3-175b", "--tp", "8", "--pp", "2"])
            .args(["--microbatches", "4", "--ranks", "all", "--out"])
            .arg(&job),
    );
    let commands = [&["replay"][..], &["report", "-o"]];
    let said = "stopped before replaying 16 ranks together";
    stopped_by_memory_limit(&dir, &job, &commands, "250M", said);
}

/// Each of `commands` on `job` under `LUMOS_MEMORY_LIMIT=limit` exits 1
/// with an error that says `said` and names `--representatives`, prints
/// nothing and writes no page (`report -o` writes into `dir`). Two
/// threads read, whatever the machine, so the sizes are this test's.
#[cfg(target_os = "linux")]
fn stopped_by_memory_limit(dir: &Path, job: &Path, commands: &[&[&str]], limit: &str, said: &str) {
    for args in commands {
        let mut cmd = lumos();
        cmd.args(*args);
        if args[0] == "report" {
            cmd.arg(dir.join("job.html"));
        }
        let out = cmd
            .arg(job)
            .env("LUMOS_MEMORY_LIMIT", limit)
            .env("RAYON_NUM_THREADS", "2")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(said) && err.contains("--representatives"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!dir.join("job.html").exists());
}

/// A trace that holds no CPU or GPU task (no events, or only events of
/// kinds lumos does not model) has nothing to replay: a table of zeros
/// would read as measured and replayed times. Every command that replays
/// or predicts refuses it as bad input naming the file; `inspect` still
/// describes it. The corpus has no such trace: these are hand-made.
#[test]
fn a_trace_without_tasks_is_refused_not_replayed_as_zeros() {
    let dir = TempDir::new("cli-exit-no-tasks");
    let cases = [
        ("no-events.json", r#"{"traceEvents":[]}"#.to_owned()),
        (
            "metadata-only.json",
            concat!(
                r#"{"traceEvents":[{"name":"process_name","ph":"M","ts":0,"pid":1,"tid":0,"#,
                r#""args":{"name":"python3"}},{"ph":"X","cat":"made_up","name":"x","pid":1,"#,
                r#""tid":1,"ts":1,"dur":2}]}"#
            )
            .to_owned(),
        ),
    ];
    for (name, text) in cases {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        let said = format!("{name}: nothing to replay: no CPU or GPU task was read");
        for args in [&["replay"][..], &["replay", "--json"], &["report", "-o"]] {
            let mut args = args.to_vec();
            let page = dir.join("page.html");
            if args.last() == Some(&"-o") {
                args.push(page.to_str().unwrap());
            }
            let out = run(&args, Some(&f));
            assert_fails(&out, 1, &said, &format!("{args:?} {name}"));
            assert!(!page.exists(), "{name}: a page was written");
        }
        let predicted = format!("{name}: nothing to predict from: no CPU or GPU task was read");
        for edit in [["--dp", "2"], ["--layers", "4"]] {
            let out = run(&[&["predict"][..], &edit].concat(), Some(&f));
            assert_fails(&out, 1, &predicted, &format!("predict {edit:?} {name}"));
        }
        let stored = dir.join(format!("{name}.lgraph"));
        // Ingest writes the graph (a job names the rank and leaves it
        // out) but says now that nothing can be replayed from it.
        let out = run_ok(lumos().arg("ingest").arg(&f).arg("-o").arg(&stored));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{name}: no CPU or GPU task was read"))
                && err.contains("replaying it alone is refused"),
            "ingest {name}: {err}"
        );
        let out = run(&["replay"], Some(&stored));
        assert_fails(
            &out,
            1,
            "nothing to replay",
            &format!("replay {name}.lgraph"),
        );
        let out = run_ok(lumos().arg("inspect").arg(&f));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("  tasks: none\n  edges: none\n"), "{text}");
        // Compared with a run, either way round, it measured nothing: it
        // read as every step and operator gone, "-100.00%", exit 0.
        let other = one_rank(&dir.join(format!("{name}-other")));
        for pair in [[&other, &f], [&f, &other]] {
            let out = lumos().arg("diff").args(pair).output().unwrap();
            assert_fails(&out, 1, &said, &format!("diff {pair:?}"));
            assert!(out.stdout.is_empty(), "diff {pair:?}: printed a result");
        }
    }
}

/// A compact graph that is not there is bad input, its I/O error said
/// once, plainly ("no such file"). Before, `predict` and `replay` printed it twice ("x.lgraph: No
/// such file or directory (os error 2): No such file or directory (os
/// error 2)"): the store's message holds the I/O error and gave it as its
/// cause as well.
#[test]
fn a_missing_compact_graph_is_said_once() {
    let dir = TempDir::new("cli-exit-missing-lgraph");
    let missing = dir.join("missing.lgraph");
    for cmd in ["predict", "replay", "inspect"] {
        let out = run(&[cmd], Some(&missing));
        assert_fails(&out, 1, &format!("{}: ", missing.display()), cmd);
        // ENOENT said plainly, once, without the system's code.
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches("no such file").count(), 1, "{cmd}: {err}");
        assert!(!err.contains("os error"), "{cmd}: {err}");
    }
}

/// A folder's files are what its messages list (`*.json`, `*.json.gz`): a
/// `logs.tar.gz` beside a trace is not read as one; a link with a trace's
/// name that leads nowhere is named (exit 1), where it was skipped and its
/// rank was missing from the job without a word.
#[cfg(unix)]
#[test]
fn a_folder_reads_its_traces_and_names_a_dangling_link() {
    let dir = TempDir::new("cli-exit-folder");
    let job = dir.join("job");
    one_rank(&job);
    std::fs::write(job.join("logs.tar.gz"), b"not a trace").unwrap();
    run_ok(lumos().arg("inspect").arg(&job));
    let link = job.join("rank1.pt.trace.json");
    std::os::unix::fs::symlink(dir.join("gone.json"), &link).unwrap();
    let out = lumos().arg("inspect").arg(&job).output().unwrap();
    let want = format!("{}: a link to ", link.display());
    assert_fails(&out, 1, &want, "dangling link");
    assert_fails(&out, 1, "which is not there", "dangling link");
}

/// Files a folder leaves out whose names look like traces (`rank3.gz`, a
/// case variant, a compression lumos does not read) are named in a
/// warning, counted: they were left out without a word, a rank missing
/// from the job unsaid. Other files (a README, a log) are not named, nor
/// hidden ones; the run goes on with the traces the folder reads.
#[test]
fn files_a_folder_leaves_out_are_named_in_a_warning() {
    let dir = TempDir::new("cli-exit-left-out");
    let job = dir.join("job");
    let trace = one_rank(&job);
    let bytes = std::fs::read(&trace).unwrap();
    for name in ["rank3.gz", "rank4.JSON", "sub/trace.json.bz2", ".hidden.gz"] {
        let path = job.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &bytes).unwrap();
    }
    std::fs::write(job.join("README.md"), b"notes").unwrap();
    std::fs::write(job.join("run.log"), b"log").unwrap();
    let out = run_ok(lumos().arg("inspect").arg(&job));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "warning: {}: left out 3 files not named *.json, *.json.gz or *.lgraph: rank3.gz, \
         rank4.JSON, {}; a folder reads those names only",
        job.display(),
        Path::new("sub").join("trace.json.bz2").display()
    );
    assert!(err.contains(&want), "wanted {want:?} in {err:?}");
    assert_eq!(err.matches("warning: ").count(), 1, "{err}");
    for quiet in ["README", "run.log", ".hidden"] {
        assert!(!err.contains(quiet), "{quiet} named: {err}");
    }
    // A folder of only traces it reads says nothing.
    for name in ["rank3.gz", "rank4.JSON", "sub/trace.json.bz2"] {
        std::fs::remove_file(job.join(name)).unwrap();
    }
    let out = run_ok(lumos().arg("inspect").arg(&job));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("left out"), "{err}");
}

/// An output in a folder that takes no new files (`/proc`, a pseudo-file
/// system: creating in it fails as "not found") said "no such file", as
/// if an input were missing; it now says the folder is there and takes
/// no new files, whichever command writes.
#[test]
fn an_output_in_a_folder_that_takes_no_files_says_so() {
    if !Path::new("/proc/self").is_dir() {
        eprintln!("skipped: no /proc");
        return;
    }
    let dir = TempDir::new("cli-exit-proc");
    let trace = one_rank(&dir.join("in"));
    let t = trace.to_str().unwrap();
    let said = |o: &str| {
        format!(
            "{o}: cannot write: the folder /proc is there but takes no new files (the system \
             says \"no such file or directory\")"
        )
    };
    for (args, o) in [
        (
            vec!["replay", t, "--out", "/proc/lumos-out"],
            "/proc/lumos-out",
        ),
        (
            vec!["report", t, "-o", "/proc/lumos.html"],
            "/proc/lumos.html",
        ),
        (
            vec!["ingest", t, "-o", "/proc/lumos-out"],
            "/proc/lumos-out",
        ),
    ] {
        let out = run(&args, None);
        assert_fails(&out, 1, &said(o), &args.join(" "));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("no such file\n"), "{err}");
    }
}

/// An output whose folder is missing on the way names it: a link to a
/// file in a folder that is not there said "No such file or directory
/// (os error 2)", a link to a folder that is not there "File exists"
/// (the directory named twice, for `synth`), whichever command wrote.
#[test]
fn an_output_through_a_link_to_nothing_names_what_is_missing() {
    let dir = TempDir::new("cli-exit-missing-folder");
    let trace = one_rank(&dir.join("in"));
    let gone = dir.join("gone");
    let page = dir.join("page.html");
    std::os::unix::fs::symlink(gone.join("page.html"), &page).unwrap();
    let out = run(&["report", "-o", page.to_str().unwrap()], Some(&trace));
    let want = format!(
        "error: {}: cannot write: the folder {} does not exist (it is a link to {})\n",
        page.display(),
        gone.display(),
        gone.join("page.html").display()
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), want);
    assert_eq!(out.status.code(), Some(1));
    let to_dir = dir.join("out");
    std::os::unix::fs::symlink(gone.join("deeper"), &to_dir).unwrap();
    let link_to_nothing = format!(
        "{} is a link to {}, which is not there",
        to_dir.display(),
        gone.join("deeper").display()
    );
    let o = to_dir.to_str().unwrap();
    let sub = to_dir.join("sub");
    let s = sub.to_str().unwrap();
    let t = trace.to_str().unwrap();
    for (args, said) in [
        (
            vec!["replay", t, "-o", o],
            format!(
                "{o}: cannot write: it is a link to {}, which is not there",
                gone.join("deeper").display()
            ),
        ),
        (
            vec!["replay", t, "-o", s],
            format!("{s}: cannot write: {link_to_nothing}"),
        ),
        (
            vec!["ingest", t, "-o", s],
            format!(
                "{o}: cannot write: it is a link to {}, which is not there",
                gone.join("deeper").display()
            ),
        ),
        (
            vec!["synth", "--model", "gpt-tiny", "--out", s],
            format!("{s}: cannot write: {link_to_nothing}"),
        ),
        (
            vec!["report", t, "-o", &format!("{s}/r.html")],
            format!("cannot create the folder {s}: {link_to_nothing}"),
        ),
    ] {
        let out = run(&args, None);
        assert_fails(&out, 1, &said, &args.join(" "));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.matches(": cannot write").count() + err.matches("cannot create").count(),
            1,
            "{err}"
        );
    }
    assert!(!gone.exists());
}

/// An entry with a name a folder reads that is not a regular file (a
/// pipe, `mkfifo rank1.json`, or a socket) was left out without a word,
/// its rank missing from the job unsaid. It is still not read (a pipe
/// without a writer would wait for ever) but named in a warning, apart
/// from the files left out for their names; the run goes on.
#[cfg(unix)]
#[test]
fn entries_a_folder_reads_by_name_that_are_not_files_are_named() {
    let dir = TempDir::new("cli-exit-not-a-file");
    let job = dir.join("job");
    let trace = one_rank(&job);
    let _socket = std::os::unix::net::UnixListener::bind(job.join("rank1.json")).unwrap();
    let out = run_ok(lumos().arg("inspect").arg(&job));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "warning: {}: left out 1 entry that is not a regular file (a pipe, socket or device): \
         rank1.json; a folder reads regular files only",
        job.display()
    );
    assert!(err.contains(&want), "wanted {want:?} in {err:?}");
    // With a file left out for its name: one warning, both said.
    std::fs::write(job.join("rank3.gz"), std::fs::read(&trace).unwrap()).unwrap();
    let out = run_ok(lumos().arg("inspect").arg(&job));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = "left out 1 file not named *.json, *.json.gz or *.lgraph: rank3.gz; a folder \
                reads those names only (a trace among them: rename it, or give it as a file, \
                which is read whatever its name); left out 1 entry that is not a regular file";
    assert!(err.contains(want), "wanted {want:?} in {err:?}");
    assert_eq!(err.matches("warning: ").count(), 1, "{err}");
}
