//! A closed stdout ends the command quietly: `lumos inspect X | head -1`
//! exits 0 with nothing on stderr about it, never with a panic (issue 9).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::lumos;
use lumos_testkit::TempDir;

/// Runs `cmd` with stdout a pipe that is closed after `lines` lines have
/// been read (at once for 0), and asserts it exits 0 without panicking.
fn closed_after(mut cmd: Command, lines: usize, what: &str) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    for _ in 0..lines {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "{what}: output ended early");
    }
    drop(reader);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    assert!(!stderr.contains("Broken pipe"), "{what}: {stderr}");
    assert_eq!(out.status.code(), Some(0), "{what}: {stderr}");
}

/// `n` copies of one small trace, in the folder returned with them:
/// output longer than a pipe holds (64 KiB), so the command is still
/// writing when the reader goes away. Copies, not one path `n` times:
/// one file given twice is refused.
fn many(n: usize) -> Option<(TempDir, Vec<PathBuf>)> {
    let corpus = lumos_testkit::corpus()?;
    let dir = TempDir::new("closed-stdout-many");
    let src = corpus.path("micro/a100-event-sync.json.gz");
    let paths = (0..n)
        .map(|i| {
            let p = dir.join(format!("copy{i}.json.gz"));
            std::fs::copy(&src, &p).unwrap();
            p
        })
        .collect();
    Some((dir, paths))
}

#[test]
fn inspect_into_a_closed_pipe_exits_quietly() {
    let Some((_dir, paths)) = many(40) else {
        return;
    };
    for json in [false, true] {
        let mut cmd = lumos();
        cmd.arg("inspect").args(&paths);
        if json {
            cmd.arg("--json");
        }
        closed_after(cmd, 1, &format!("inspect, json {json}"));
    }
    let mut cmd = lumos();
    cmd.arg("inspect").args(&paths);
    closed_after(cmd, 0, "inspect, closed at once");
}

#[test]
fn replay_into_a_closed_pipe_exits_quietly() {
    let Some((_dir, paths)) = many(40) else {
        return;
    };
    for json in [false, true] {
        let mut cmd = lumos();
        cmd.arg("replay").args(&paths);
        if json {
            cmd.arg("--json");
        }
        closed_after(cmd, 1, &format!("replay, json {json}"));
    }
}

#[test]
fn synth_into_a_closed_pipe_exits_quietly() {
    let dir = TempDir::new("lumos-closed-stdout-synth");
    let mut cmd = lumos();
    cmd.args(["synth", "--model", "gpt-tiny", "--out"])
        .arg(dir.path());
    // Its file list is short: closed before the traces are written, so the
    // first line already meets the closed pipe.
    closed_after(cmd, 0, "synth");
}

/// A stdout that cannot be written (a full disk: `/dev/full`) is a
/// failure, said as one: "writing to stdout" and the system's words
/// without their code, where it was "No space left on device (os error
/// 28)", naming nothing.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_named_in_words() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace = corpus.path("micro/a100-event-sync.json.gz");
    for (cmd, json) in [("inspect", true), ("inspect", false), ("replay", true)] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut c = lumos();
        c.arg(cmd).arg(&trace);
        if json {
            c.arg("--json");
        }
        let out = c.stdout(full).stderr(Stdio::piped()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {stderr}");
        assert_eq!(
            stderr, "error: writing to stdout: no space left on device\n",
            "{cmd} json {json}"
        );
    }
}
