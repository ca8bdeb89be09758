//! Helpers shared by the CLI's end-to-end tests.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `lumos` binary under test.
pub fn lumos() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lumos"))
}

/// A path in the shared trace corpus.
pub fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces")
        .join(rel)
}

/// A fresh, empty directory for one test, unique to this process.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lumos-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
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
