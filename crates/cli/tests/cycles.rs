//! Dependency cycles that ids and times in a trace make, through every
//! command that replays: launches and kernels whose correlation ids
//! cross (a call waits, through its stream and thread, on work launched
//! after it), and a job whose ranks run two collectives in opposite
//! orders (each rendezvous waits on the other). Each must end in a
//! counted warning and a replay (the edge that closes the cycle left
//! out, the collective replayed uncoupled), never a hang or a panic.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{lumos, warnings};
use lumos_testkit::TempDir;
use serde_json::{json, Value};

/// Far more than any of these small inputs takes: past it, a hang.
const LIMIT: Duration = Duration::from_secs(120);

/// Runs `cmd` to its end or [`LIMIT`], killing it there (a hang fails
/// the test, not the test run).
fn run_bounded(cmd: &mut Command) -> Output {
    let mut child = (cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))
        .spawn()
        .unwrap();
    let start = Instant::now();
    // Drained beside the wait: a full pipe would stop the child.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut b).unwrap();
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut b).unwrap();
        b
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > LIMIT {
            child.kill().unwrap();
            panic!("{cmd:?} ran past {LIMIT:?}: a hang");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Runs `lumos ARGS`, asserting exit 0 and no panic; its text.
fn ok(args: &[&str], paths: &[&Path]) -> String {
    let out = run_bounded(lumos().args(args).args(paths));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("panicked"),
        "{args:?}: {stderr}"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const T0: i64 = 1_700_000_000_000_000;

fn x(cat: &str, name: &str, pid: i64, tid: i64, ts: i64, dur: i64, args: Value) -> Value {
    json!({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": T0 + ts,
           "dur": dur, "args": args})
}

fn flow(ph: &str, id: i64, pid: i64, tid: i64, ts: i64) -> Value {
    json!({"ph": ph, "cat": "ac2g", "name": "ac2g", "id": id, "pid": pid, "tid": tid,
           "ts": T0 + ts, "bp": "e"})
}

/// Rank `rank` of two, running the all-reduces of `seqs` in that order
/// on one stream, each launched from one thread (with its launch flows).
fn crossed_rank(rank: u32, seqs: [u32; 2]) -> Value {
    let mut ev = vec![x(
        "user_annotation",
        "ProfilerStep#0",
        100,
        1,
        0,
        1999,
        json!({}),
    )];
    for (i, seq) in seqs.into_iter().enumerate() {
        let corr = 30 + i as i64;
        let ts = 100 + 400 * i as i64;
        ev.push(x(
            "cuda_runtime",
            "cudaLaunchKernel",
            100,
            1,
            10 + 20 * i as i64,
            5,
            json!({"correlation": corr}),
        ));
        ev.push(flow("s", corr, 100, 1, 10 + 20 * i as i64));
        ev.push(x(
            "kernel",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            0,
            20,
            ts,
            300,
            json!({"device": 0, "stream": 20, "correlation": corr,
                   "Collective name": "allreduce", "Process Group Name": "0",
                   "Process Group Ranks": "[0, 1]", "Group size": 2, "Seq": seq,
                   "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float"}),
        ));
        ev.push(flow("f", corr, 0, 20, ts));
    }
    json!({"schemaVersion": 1,
           "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
           "traceEvents": ev})
}

/// Two ranks whose collectives cross (rank 0 runs Seq 0 then 1, rank 1
/// Seq 1 then 0): before the job's check, each rendezvous waited on the
/// other through its rank's stream. One is replayed uncoupled, said.
#[test]
fn collectives_crossed_across_ranks_are_replayed_uncoupled_with_a_warning() {
    let dir = TempDir::new("cli-cycles-job");
    for (rank, seqs) in [(0, [0, 1]), (1, [1, 0])] {
        let path = dir.path().join(format!("rank{rank}.json"));
        std::fs::write(path, crossed_rank(rank, seqs).to_string()).unwrap();
    }
    let job = dir.path();
    let deadlock = "1 matched collective would deadlock the joint replay (first: pg 0 seq 1)";
    for args in [&["replay", "--job"][..], &["replay"]] {
        let text = ok(args, &[job]);
        let said: Vec<String> = (warnings(&text).into_iter())
            .filter(|w| w.contains(deadlock))
            .collect();
        assert_eq!(said.len(), 1, "{args:?}: {text}");
        assert!(said[0].contains("replayed uncoupled"), "{}", said[0]);
    }
    let v: Value = serde_json::from_str(&ok(&["replay", "--json"], &[job])).unwrap();
    let job_warnings = v["job"]["warnings"].as_array().unwrap();
    assert!(
        job_warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains(deadlock)),
        "{job_warnings:?}"
    );
    // Every step replayed, to a length.
    for s in v["job"]["steps"].as_array().unwrap() {
        assert!(s["replayed_us"].as_f64().unwrap() > 0.0, "{s}");
    }
    let page = dir.path().join("out/report.html");
    ok(&["report", "-o"], &[&page, job]);
    assert!(std::fs::read_to_string(&page).unwrap().contains(deadlock));
    ok(&["inspect"], &[job]);
}

/// A synthesized job of two pipeline stages whose kernels' correlation
/// ids are swapped in pairs across the trace: calls launch kernels that
/// ran long before or after them, on other streams, so the syncs and
/// hand-offs the build infers contradict each other. The edges that
/// would close a cycle are left out and counted, and every command that
/// replays ends.
#[test]
fn crossed_launches_leave_out_the_edges_closing_a_cycle() {
    let dir = TempDir::new("cli-cycles-synth");
    let synth = dir.path().join("synth");
    ok(
        &[
            "synth",
            "--model",
            "gpt-tiny",
            "--dp",
            "2",
            "--pp",
            "2",
            "--microbatches",
            "2",
            "--out",
        ],
        &[&synth],
    );
    let crossed = dir.path().join("crossed");
    std::fs::create_dir_all(&crossed).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&synth)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{files:?}");
    for f in &files {
        let mut v: Value = serde_json::from_slice(&lumos_testkit::gunzip_file(f)).unwrap();
        let events = v["traceEvents"].as_array_mut().unwrap();
        let gpu: Vec<usize> = (0..events.len())
            .filter(|&i| events[i]["cat"] == "kernel" && events[i]["args"]["correlation"].is_u64())
            .collect();
        // One kernel in five swaps ids with one far off (a fixed stride,
        // so the damage is the same every run).
        let n = gpu.len();
        for k in (0..n).step_by(5) {
            let (a, b) = (gpu[k], gpu[(k * 7919 + n / 2) % n]);
            let ca = events[a]["args"]["correlation"].clone();
            let cb = std::mem::replace(&mut events[b]["args"]["correlation"], ca);
            events[a]["args"]["correlation"] = cb;
        }
        let name = f.file_name().unwrap().to_string_lossy().replace(".gz", "");
        std::fs::write(crossed.join(name), v.to_string()).unwrap();
    }
    let left_out = |text: &str| {
        (warnings(text).into_iter())
            .filter(|w| {
                w.contains("because they would close a cycle")
                    || w.contains("because it would close a cycle")
            })
            .collect::<Vec<_>>()
    };
    for args in [&["replay"][..], &["replay", "--job"]] {
        let text = ok(args, &[&crossed]);
        let said = left_out(&text);
        assert!(!said.is_empty(), "{args:?}: {text}");
        // Counted by kind.
        assert!(said.iter().all(|w| w.contains("dependenc")), "{said:?}");
    }
    let inspect = ok(&["inspect"], &[&crossed]);
    assert!(!left_out(&inspect).is_empty(), "{inspect}");
    ok(&["predict", "--dp", "4"], &[&crossed]);
    let page = dir.path().join("report.html");
    ok(&["report", "-o"], &[&page, &crossed]);
}
