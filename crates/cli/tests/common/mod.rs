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
    let out = lumos()
        .args(args)
        .arg("--json")
        .args(paths)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lumos {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
