//! Helpers shared by the CLI's end-to-end tests (the corpus and temp dirs
//! come from lumos-testkit).
#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::process::Command;

/// The `lumos` binary under test.
pub fn lumos() -> Command {
    // The text as wide as it is without a terminal: a `COLUMNS` in the
    // environment the tests run in would fold it (tests of the width set
    // their own).
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lumos"));
    cmd.env_remove("COLUMNS");
    cmd
}

/// Runs `lumos ARGS --json PATHS`, asserts success and parses stdout.
pub fn lumos_json(args: &[&str], paths: &[PathBuf]) -> serde_json::Value {
    let out = run_ok(lumos().args(args).arg("--json").args(paths));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `cmd`, asserts that it succeeded (showing its stderr if not) and
/// returns its output.
pub fn run_ok(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The warnings of a text output, each whole: a warning is folded at its
/// words into lines of 120 columns, its continuations indented by four.
pub fn warnings(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for l in text.lines() {
        if let Some(w) = l.trim_start().strip_prefix("warning: ") {
            out.push(format!("warning: {w}"));
            open = true;
        } else if open && l.starts_with("    ") && !l.trim_start().is_empty() {
            let last = out.last_mut().unwrap();
            last.push(' ');
            last.push_str(l.trim_start());
        } else {
            open = false;
        }
    }
    out
}

/// The line of `text` that starts with `head` after an indent of
/// `indent - 2` spaces, and the lines folded from it (indented by exactly
/// `indent` spaces) joined back with a space: a sentence the text output
/// folds at its words into lines of 120 columns, whole. None when no line
/// starts so.
pub fn sentence(text: &str, head: &str, indent: usize) -> Option<String> {
    let start = format!("{}{head}", " ".repeat(indent.saturating_sub(2)));
    let mut lines = text.lines().skip_while(|l| !l.starts_with(&start));
    let mut out = lines.next()?.to_owned();
    let margin = " ".repeat(indent);
    for l in lines {
        match l.strip_prefix(&margin) {
            Some(rest) if !rest.starts_with(' ') && !rest.is_empty() => {
                out.push(' ');
                out.push_str(rest);
            }
            _ => break,
        }
    }
    Some(out)
}
