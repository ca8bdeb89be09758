//! Helpers shared by the CLI's end-to-end tests (the corpus and temp dirs
//! come from lumos-testkit).
#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::process::Command;

/// The `lumos` binary under test.
pub fn lumos() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lumos"))
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
