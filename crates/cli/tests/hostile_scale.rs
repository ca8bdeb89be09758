//! Inputs shaped to hit a cost per pair of things: 200,000 steps (each
//! annotation a name of its own), and operators nested 100,000 deep with
//! 100,000 leaves under the innermost. Every command must finish in
//! [`LIMIT`], well above what they take (a few seconds on two cores) and
//! far below what a pass per step or per level costs (minutes): the killed
//! run fails the test instead of hanging it.
//!
//! Hand-made: no corpus trace has more than a few dozen steps or nests
//! more than a few dozen levels.
#![cfg(unix)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::lumos;
use lumos_testkit::TempDir;

/// The most one command may take.
const LIMIT: Duration = Duration::from_secs(90);

/// Runs `cmd` to its end or [`LIMIT`], whichever comes first; asserts it
/// ended in time and succeeded, and returns its standard error.
fn run_in_time(what: &str, cmd: &mut Command) -> String {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            assert!(status.success(), "{what}: {err}");
            return err;
        }
        if start.elapsed() > LIMIT {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{what}: still running after {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every command that reads a trace, on `trace`, in time; returns
/// `lumos inspect`'s standard error and output.
fn every_command_in_time(dir: &Path, trace: &Path) -> String {
    let out = dir.join("out");
    let page = dir.join("page.html");
    let graph = dir.join("t.lgraph");
    let o = out.to_str().unwrap();
    let runs: [(&str, Vec<&str>); 5] = [
        ("inspect", vec!["inspect"]),
        ("replay", vec!["replay"]),
        ("replay -o", vec!["replay", "-o", o]),
        ("report", vec!["report", "-o", page.to_str().unwrap()]),
        ("ingest", vec!["ingest", "-o", graph.to_str().unwrap()]),
    ];
    for (what, args) in runs {
        run_in_time(
            &format!("{what} {}", trace.display()),
            lumos().args(args).arg(trace),
        );
    }
    let inspect = lumos().arg("inspect").arg(trace).output().unwrap();
    String::from_utf8_lossy(&inspect.stdout).into_owned()
}

/// A file of `{"traceEvents": [...]}` whose events `write_events` writes
/// (each followed by a comma).
fn trace_file(dir: &TempDir, name: &str, write_events: impl Fn(&mut dyn Write)) -> PathBuf {
    let path = dir.path().join(name);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    f.write_all(b"{\"traceEvents\": [").unwrap();
    write_events(&mut f);
    f.write_all(br#"{"ph": "i", "s": "g", "name": "end", "pid": 1, "tid": 1, "ts": 0}]}"#)
        .unwrap();
    f.flush().unwrap();
    path
}

/// 200,000 steps of one operator each: the predictor's discovery took each
/// step's units in a pass over all units, and the report's table of
/// operators looked each annotation's name up in every step (a minute and
/// more each); a few seconds now.
#[test]
fn two_hundred_thousand_steps_take_seconds() {
    let dir = TempDir::new("many-steps");
    let trace = trace_file(&dir, "steps.json", |f| {
        for i in 0..200_000u64 {
            write!(
                f,
                r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{i}", "pid": 1, "tid": 1, "ts": {}, "dur": 9}},
{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {}, "dur": 5}},
"#,
                10 * i,
                10 * i + 1
            )
            .unwrap();
        }
    });
    let text = every_command_in_time(dir.path(), &trace);
    assert!(text.contains("ProfilerStep#199999"), "{text}");
}

/// Operators nested 100,000 deep, 1 ns inside each other, with 100,000
/// leaves side by side under the innermost: each walk up a leaf's scopes
/// was 100,000 long (the replayed timeline's took 20 s at 30,000, minutes
/// here). Scopes are kept 256 levels deep, with a warning.
#[test]
fn operators_nested_a_hundred_thousand_deep_take_seconds() {
    let dir = TempDir::new("deep-nest");
    let (n, leaves) = (100_000u64, 100_000u64);
    let trace = trace_file(&dir, "nest.json", |f| {
        let whole = 2 * n + 2 * leaves + 10;
        for i in 0..n {
            writeln!(
                f,
                r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::op{}", "pid": 1, "tid": 1, "ts": {}.{:03}, "dur": {}.{:03}}},"#,
                i % 7,
                i / 1000,
                i % 1000,
                (whole - 2 * i) / 1000,
                (whole - 2 * i) % 1000
            )
            .unwrap();
        }
        for j in 0..leaves {
            let ts = n + 2 * j;
            writeln!(
                f,
                r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::leaf", "pid": 1, "tid": 1, "ts": {}.{:03}, "dur": 0.001}},"#,
                ts / 1000,
                ts % 1000
            )
            .unwrap();
        }
    });
    let text = every_command_in_time(dir.path(), &trace);
    assert!(text.contains("nest deeper than 256 levels"), "{text}");
}
