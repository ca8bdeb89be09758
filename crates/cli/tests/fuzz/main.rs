//! A seeded mutation fuzzer for the whole pipeline: small corpus traces,
//! damaged the ways files get damaged and hostile files are built
//! (`mutate.rs`: byte flips, truncation, deleted, duplicated and swapped
//! events, wrong types, huge and non-finite numbers, deep nesting, long
//! strings, invalid UTF-8, the array form, a BOM, zero padding, the
//! top-level members the reader reads added again or in another
//! spelling, gzip in several members, padded, truncated or damaged, gzip
//! of gzip, a tar archive), each
//! run through the real `lumos` binary (inspect, replay, predict, report,
//! ingest) as a subprocess, so that an abort or a stack overflow is a
//! failure like a panic. A file a command writes must appear whole on
//! success (a page to its closing tag, an `.lgraph` file that reads back)
//! and not at all on failure, with no temporary file left.
//!
//! Every run must exit 0 or 1 within [`TIME_LIMIT`] and [`MEMORY_LIMIT_KB`]
//! of address space, print nothing about a panic, print valid JSON when
//! `--json` succeeds, and explain a failure with an `error:` line naming
//! the file.
//!
//! Budget and reproduction, by environment variable:
//! - `LUMOS_FUZZ_RUNS`: how many runs ([`DEFAULT_RUNS`], a second or two,
//!   in a plain `cargo test`; `.ci/run` sets it for a few minutes);
//! - `LUMOS_FUZZ_SEED`: the seed (decimal or `0x` hex; [`DEFAULT_SEED`]
//!   otherwise, so CI is reproducible); `random` picks one from the clock;
//! - `LUMOS_FUZZ_ONLY`: run only this run number of the seed (what a
//!   failure report prints, with the rerun command);
//! - `LUMOS_FUZZ_BIN`: another `lumos` binary to fuzz (an older build, to
//!   see what the fuzzer finds in it).
//!
//! Each failing input is kept under `target/tmp/fuzz-failures/` to become
//! a named regression test: the case spelled out as an `issue_11_fuzz_*`
//! test here, and its class in the crate at fault (`issue_11_*` in
//! crates/trace/tests/hostile.rs for the reader).
#![cfg(unix)]
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod mutate;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use lumos_testkit::{gunzip_file, TempDir};
use mutate::{Case, Encoding, Mutation, Place, Rng};

/// The inputs: small, and between them every kind of trace the corpus has
/// (GPU and CPU only, CUDA and ROCm, graph launches, collectives, a rank
/// of a job).
const INPUTS: &[&str] = &[
    "micro/a100-event-sync.json.gz",
    "micro/a100-simple-add.json.gz",
    "micro/a100-stream-wait-event-3streams.json.gz",
    "micro/cpu-only-rank34.json.gz",
    "micro/h100-one-kernel.json.gz",
    "micro/two-events-large-integers.json.gz",
    "single-rank/a100-alexnet-cuda-sync.json.gz",
    "single-rank/mi250-toy-train.json.gz",
    "single-rank/gp100-train-gpu-annotations.json.gz",
    "single-rank/amd-vllm-decode-graph-launch.json.gz",
    "single-rank/mi210-gpu-only.json.gz",
    "multi-rank/dlrm-8xv100/rank0.json.gz",
];

/// The rank of a job that `predict --dp 2` and replays of the whole job
/// (the other ranks as recorded) run on.
const JOB_RANK: &str = "multi-rank/dlrm-8xv100/rank0.json.gz";

/// The job's folder.
const JOB: &str = "multi-rank/dlrm-8xv100";

/// Runs in a plain `cargo test`.
const DEFAULT_RUNS: u64 = 24;

/// The seed unless `LUMOS_FUZZ_SEED` says otherwise.
const DEFAULT_SEED: u64 = 0x11_f022;

/// Wall-clock limit of one run (the inputs take well under a second).
const TIME_LIMIT: Duration = Duration::from_secs(60);

/// Address-space limit of one run: the inputs need about 100 MB.
const MEMORY_LIMIT_KB: u64 = 2 << 20;

struct Config {
    seed: u64,
    runs: Vec<u64>,
}

fn config() -> Config {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let number = |name: &str, v: &str| {
        let parsed = match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => v.parse(),
        };
        parsed.unwrap_or_else(|_| panic!("{name}={v}: not a number"))
    };
    let seed = match var("LUMOS_FUZZ_SEED").as_deref() {
        None => DEFAULT_SEED,
        Some("random") => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(DEFAULT_SEED, |d| d.as_nanos() as u64),
        Some(v) => number("LUMOS_FUZZ_SEED", v),
    };
    let runs = match var("LUMOS_FUZZ_ONLY") {
        Some(v) => vec![number("LUMOS_FUZZ_ONLY", &v)],
        None => {
            let n = var("LUMOS_FUZZ_RUNS").map_or(DEFAULT_RUNS, |v| number("LUMOS_FUZZ_RUNS", &v));
            (0..n).collect()
        }
    };
    Config { seed, runs }
}

/// The fuzzer's inputs, decompressed, and the job's other ranks as files.
struct Inputs {
    traces: Vec<(&'static str, Vec<u8>)>,
    job_rank: Option<usize>,
    others: Vec<(String, Vec<u8>)>,
}

impl Inputs {
    /// Reads them from the corpus (`None`, and the test skips, without one).
    fn load() -> Option<Inputs> {
        let corpus = lumos_testkit::corpus()?;
        let traces = INPUTS
            .iter()
            .map(|&rel| (rel, gunzip_file(&corpus.path(rel))))
            .collect();
        let others = corpus
            .traces(JOB)
            .into_iter()
            .filter(|p| !p.ends_with(Path::new(JOB_RANK).file_name().unwrap()))
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        Some(Inputs {
            traces,
            job_rank: INPUTS.iter().position(|&r| r == JOB_RANK),
            others,
        })
    }
}

/// Index of the input `rel` in [`INPUTS`].
fn input(rel: &str) -> usize {
    INPUTS.iter().position(|&r| r == rel).expect("an input")
}

/// Runs one spelled-out case (a crash the fuzzer once found) and fails
/// with the fuzzer's report if its outcome is wrong.
fn regression(name: &str, case: Case) {
    let Some(inputs) = Inputs::load() else {
        return;
    };
    let dir = TempDir::new(name);
    let (rel, json) = &inputs.traces[case.input];
    let bytes = case.bytes(json);
    if let Err(problem) = run_case(&case, &bytes, dir.path(), &inputs.others) {
        panic!("{name}: {rel}, {case:?}\n  problem: {problem}");
    }
}

// Crashes the fuzzer found, each a named test, spelled out rather than as
// a seed and run so that changes to the generator do not lose them. Both
// were stack overflows (an abort, no message) in the binary before issue
// 11 (seed 0x11f022, runs 30 and 246); the reader-level tests of the same
// class are `issue_11_deep_nesting_*` in crates/trace/tests/hostile.rs.

#[test]
fn issue_11_fuzz_deep_objects_in_device_properties() {
    regression(
        "fuzz-deep-device-properties",
        Case {
            input: input("micro/a100-stream-wait-event-3streams.json.gz"),
            command: mutate::Command::Inspect,
            mutations: vec![Mutation::DeepNesting {
                depth: 200_000,
                objects: true,
                place: Place::Member("deviceProperties"),
            }],
            encoding: Encoding::Plain,
        },
    );
}

#[test]
fn issue_11_fuzz_deep_arrays_in_distributed_info_of_a_damaged_trace() {
    regression(
        "fuzz-deep-distributed-info",
        Case {
            input: input("single-rank/mi250-toy-train.json.gz"),
            command: mutate::Command::InspectJson,
            mutations: vec![
                Mutation::InsertBytes {
                    at: 2_527_121_979_814_089_085,
                    bytes: b"[nullnull\0".to_vec(),
                },
                Mutation::CopyRange {
                    from: 2_682_140_632_873_810_162,
                    len: 1406,
                    to: 15_301_033_038_357_847_134,
                },
                Mutation::DeepNesting {
                    depth: 200_000,
                    objects: false,
                    place: Place::Member("distributedInfo"),
                },
            ],
            encoding: Encoding::Plain,
        },
    );
}

#[test]
fn fuzz_the_cli() {
    let Some(inputs) = Inputs::load() else {
        return;
    };
    let cfg = config();
    let started = Instant::now();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    println!(
        "fuzz: seed {:#x}, {} runs on {workers} workers (LUMOS_FUZZ_RUNS, LUMOS_FUZZ_SEED)",
        cfg.seed,
        cfg.runs.len()
    );
    let next = AtomicUsize::new(0);
    let rejected = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let dir = TempDir::new("fuzz");
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&run) = cfg.runs.get(k) else {
                        return;
                    };
                    let mut rng = Rng::for_run(cfg.seed, run);
                    let case = Case::generate(&mut rng, inputs.traces.len(), inputs.job_rank);
                    let (rel, json) = &inputs.traces[case.input];
                    let bytes = case.bytes(json);
                    match run_case(&case, &bytes, dir.path(), &inputs.others) {
                        Ok(true) => {}
                        Ok(false) => {
                            rejected.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(problem) => {
                            let report = report(cfg.seed, run, rel, &case, &bytes, &problem);
                            eprintln!("{report}");
                            failures.lock().unwrap().push((run, report));
                        }
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    println!(
        "fuzz: {} runs in {:.1} s: {} read and processed, {} rejected with an error, {} failed",
        cfg.runs.len(),
        started.elapsed().as_secs_f64(),
        cfg.runs.len() - rejected.load(Ordering::Relaxed) - failures.len(),
        rejected.load(Ordering::Relaxed),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} fuzz runs failed:\n\n{}",
        failures.len(),
        cfg.runs.len(),
        failures
            .iter()
            .map(|(_, r)| r.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

/// What a failure says: the case, the problem, where its input is kept and
/// how to rerun it.
fn report(seed: u64, run: u64, rel: &str, case: &Case, bytes: &[u8], problem: &str) -> String {
    let kept = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    let file = kept.join(format!("seed-{seed:x}-run-{run}-{}", case.file_name()));
    let saved = std::fs::create_dir_all(&kept).and_then(|()| std::fs::write(&file, bytes));
    format!(
        "fuzz failure: seed {seed:#x}, run {run}: {rel}, {:?}, {:?}\n  mutations: {:?}\n  \
         problem: {problem}\n  input: {}\n  rerun: LUMOS_FUZZ_SEED={seed:#x} LUMOS_FUZZ_ONLY={run} \
         cargo test --release -p lumos --test fuzz -- --nocapture",
        case.command,
        case.encoding,
        case.mutations,
        match saved {
            Ok(()) => file.display().to_string(),
            Err(e) => format!("not kept ({e})"),
        },
    )
}

/// Runs one case in `dir`: whether lumos accepted the input (exit 0) or
/// rejected it as it should (exit 1), or what is wrong with the outcome.
/// `others` are the other ranks of the job, as files, for job replays.
fn run_case(
    case: &Case,
    bytes: &[u8],
    dir: &Path,
    others: &[(String, Vec<u8>)],
) -> Result<bool, String> {
    let job_dir = dir.join("job");
    let _ = std::fs::remove_dir_all(&job_dir);
    let in_job = matches!(
        case.command,
        mutate::Command::ReplayJob | mutate::Command::ReportJobPredict
    );
    let file = if in_job {
        std::fs::create_dir_all(&job_dir).expect("job dir");
        for (name, data) in others {
            std::fs::write(job_dir.join(name), data).expect("write a rank");
        }
        job_dir.join(format!("rank0-{}", case.file_name()))
    } else {
        dir.join(case.file_name())
    };
    std::fs::write(&file, bytes).expect("write the case");
    let out_dir = dir.join("out");
    let file_arg = file.display().to_string();
    let mut args: Vec<String> = match case.command {
        mutate::Command::Inspect => vec!["inspect".into(), file_arg.clone()],
        mutate::Command::InspectJson => vec!["inspect".into(), "--json".into(), file_arg.clone()],
        mutate::Command::Replay => vec!["replay".into(), "--json".into(), file_arg.clone()],
        mutate::Command::ReplayOut => vec!["replay".into(), file_arg.clone(), "--out".into()],
        mutate::Command::Predict => {
            vec![
                "predict".into(),
                file_arg.clone(),
                "--dp".into(),
                "2".into(),
                "--json".into(),
            ]
        }
        mutate::Command::ReplayJob => {
            vec![
                "replay".into(),
                "--json".into(),
                job_dir.display().to_string(),
            ]
        }
        mutate::Command::ReportJobPredict => vec![
            "report".into(),
            "--dp".into(),
            "2".into(),
            job_dir.display().to_string(),
            "-o".into(),
        ],
        mutate::Command::Report => vec!["report".into(), file_arg.clone(), "-o".into()],
        mutate::Command::ReportPredict => {
            let dp = ["--dp".into(), "2".into()];
            [
                vec!["report".into(), file_arg.clone()],
                dp.to_vec(),
                vec!["-o".into()],
            ]
            .concat()
        }
        mutate::Command::Ingest => vec!["ingest".into(), file_arg.clone(), "-o".into()],
    };
    // What a command writes besides stdout, next to the case.
    let written = match case.command {
        mutate::Command::Report
        | mutate::Command::ReportPredict
        | mutate::Command::ReportJobPredict => Some(dir.join("page.html")),
        mutate::Command::Ingest => Some(dir.join("rank.lgraph")),
        _ => None,
    };
    if let Some(w) = &written {
        let _ = std::fs::remove_file(w);
        args.push(w.display().to_string());
    }
    if case.command == mutate::Command::ReplayOut {
        args.push(out_dir.display().to_string());
    }
    let stdout_path = dir.join("stdout");
    let stderr_path = dir.join("stderr");
    let started = Instant::now();
    let status = run_limited(&args, &stdout_path, &stderr_path)?;
    let elapsed = started.elapsed();
    let stdout = std::fs::read(&stdout_path).unwrap_or_default();
    let stderr =
        String::from_utf8_lossy(&std::fs::read(&stderr_path).unwrap_or_default()).into_owned();
    let _ = std::fs::remove_dir_all(&out_dir);
    let problem = check(case, status, &stdout, &stderr, &file_arg)
        .or_else(|| written_problem(written.as_deref()?, status.success(), &stderr));
    match problem {
        Some(p) => Err(format!(
            "{p} (after {:.2} s)\n  stderr: {}",
            elapsed.as_secs_f64(),
            tail(&stderr)
        )),
        None => Ok(status.success()),
    }
}

/// What is wrong with the file a command wrote (`w`, a page or an
/// `.lgraph` file): on success it must be whole (a page to its closing
/// tag, a compact graph that reads back), on failure absent, with no
/// temporary file left beside it. One failure writes its page: a job's
/// report that left a rank out (named on `stderr`) exits 1 with the page
/// of the others, which must be whole too.
fn written_problem(w: &Path, success: bool, stderr: &str) -> Option<String> {
    let shown = w.display();
    let page = w.extension().is_some_and(|e| e == "html");
    if !success && page && w.exists() && stderr.contains("left out") {
        return whole_page(w);
    }
    if !success {
        let dir = w.parent()?;
        let name = w.file_name()?.to_string_lossy().into_owned();
        let left = std::fs::read_dir(dir).ok()?.flatten().find(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(&format!(".{name}.")) && n.ends_with(".tmp")
        });
        return match (w.exists(), left) {
            (true, _) => Some(format!("failed but wrote {shown}")),
            (false, Some(e)) => Some(format!("failed and left {}", e.path().display())),
            (false, None) => None,
        };
    }
    if page {
        return whole_page(w);
    }
    lumos_store::read_stored(w)
        .err()
        .map(|e| format!("exit 0 but {shown} does not read back: {e}"))
}

/// What is wrong with the page `w`: not written to its closing tag.
fn whole_page(w: &Path) -> Option<String> {
    let page = std::fs::read_to_string(w).unwrap_or_default();
    (!page.trim_end().ends_with("</html>")).then(|| format!("{} is not a whole page", w.display()))
}

/// `lumos ARGS` with stdout and stderr to files, the address space limited
/// (through the shell's `ulimit -v`) and the time bounded.
fn run_limited(args: &[String], stdout: &Path, stderr: &Path) -> Result<ExitStatus, String> {
    let script = format!("ulimit -v {MEMORY_LIMIT_KB} && exec \"$0\" \"$@\"");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(std::env::var_os("LUMOS_FUZZ_BIN").unwrap_or(env!("CARGO_BIN_EXE_lumos").into()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(stdout).expect("stdout file"))
        .stderr(std::fs::File::create(stderr).expect("stderr file"))
        .spawn()
        .map_err(|e| format!("cannot start lumos: {e}"))?;
    let deadline = Instant::now() + TIME_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "still running after {} s: killed",
                    TIME_LIMIT.as_secs()
                ));
            }
            Err(e) => return Err(format!("cannot wait for lumos: {e}")),
        }
    }
}

/// The problem with an outcome, if any.
fn check(
    case: &Case,
    status: ExitStatus,
    stdout: &[u8],
    stderr: &str,
    file: &str,
) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    for sign in [
        "panicked",
        "stack overflow",
        "fatal runtime error",
        "memory allocation of",
    ] {
        if stderr.contains(sign) {
            return Some(format!("stderr says {sign:?} ({status})"));
        }
    }
    match status.code() {
        Some(0) => {
            let json = matches!(
                case.command,
                mutate::Command::InspectJson
                    | mutate::Command::Replay
                    | mutate::Command::Predict
                    | mutate::Command::ReplayJob
            );
            if json {
                if let Err(e) = serde_json::from_slice::<serde_json::Value>(stdout) {
                    return Some(format!("exit 0 but stdout is not JSON: {e}"));
                }
            }
            None
        }
        Some(1) => {
            let named = stderr
                .lines()
                .any(|l| l.starts_with("error: ") && l.contains(file));
            (!named).then(|| "exit 1 without an `error:` line naming the file".to_owned())
        }
        // A prediction the damaged trace cannot support (its collectives
        // gone, its layers unrecognisable) is refused as a usage error,
        // naming the file, as issue 10 asks: the flags were fine, the
        // question is not one this input can answer.
        Some(2)
            if matches!(
                case.command,
                mutate::Command::Predict | mutate::Command::ReportPredict
            ) =>
        {
            let named = stderr
                .lines()
                .any(|l| l.starts_with("error: ") && l.contains(file));
            (!named).then(|| "exit 2 without an `error:` line naming the file".to_owned())
        }
        // A job's prediction may be refused for what another rank lacks
        // beside the damaged one (degrees that differ from it): the line
        // names a rank of the job.
        Some(2) if case.command == mutate::Command::ReportJobPredict => {
            let job = Path::new(file).parent().map(|d| d.display().to_string());
            let named = stderr
                .lines()
                .any(|l| l.starts_with("error: ") && job.as_deref().is_some_and(|j| l.contains(j)));
            (!named).then(|| "exit 2 without an `error:` line naming a rank of the job".to_owned())
        }
        Some(code) => Some(format!("exit code {code}")),
        None => Some(format!(
            "killed by signal {}{}",
            status.signal().unwrap_or(0),
            if status.signal() == Some(6) {
                " (an abort: out of memory, or a stack overflow?)"
            } else {
                ""
            }
        )),
    }
}

/// The last lines of `s`, indented, for a report.
fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let start = lines.len().saturating_sub(8);
    let text = lines[start..].join("\n    ");
    match (0..=2000).rev().find(|&i| text.is_char_boundary(i)) {
        Some(cut) if text.len() > 2000 => format!("{}...", &text[..cut]),
        _ => text,
    }
}
