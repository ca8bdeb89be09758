//! Finding trace files under a folder: what the front ends expand a
//! directory argument into, the same way everywhere.

use std::fmt;
use std::path::{Path, PathBuf};

/// How deep [`trace_files_under`] looks into sub-folders (runs kept in
/// sub-folders, as TensorBoard's profiler plugin keeps them, without
/// following a link loop forever).
pub const MAX_DIR_DEPTH: u32 = 8;

/// A folder that could not be listed.
#[derive(Debug)]
pub struct DirError {
    /// The folder.
    pub path: PathBuf,
    /// Why.
    pub error: std::io::Error,
}

impl fmt::Display for DirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: cannot list directory: {}",
            self.path.display(),
            self.error
        )
    }
}

impl std::error::Error for DirError {}

/// True for the names of Kineto trace files: `*.json`, `*.json.gz`,
/// `*.gz` (gzip is detected by content when read).
pub fn is_trace_file_name(name: &str) -> bool {
    name.ends_with(".json") || name.ends_with(".gz")
}

/// True for the names of the timelines and exports lumos writes
/// (`*.replayed.json.gz`, `*.predicted.json.gz`, `*.critical-path.json`).
pub fn is_lumos_output(name: &str) -> bool {
    [
        ".replayed.json.gz",
        ".predicted.json.gz",
        ".critical-path.json",
    ]
    .iter()
    .any(|s| name.ends_with(s))
}

/// The files under `dir` whose names `accepts`, sub-folders included down
/// to [`MAX_DIR_DEPTH`] levels, sorted; hidden folders and lumos's own
/// outputs ([`is_lumos_output`]) are left out.
pub fn trace_files_under(
    dir: &Path,
    accepts: &dyn Fn(&str) -> bool,
) -> Result<Vec<PathBuf>, DirError> {
    let mut out = Vec::new();
    collect(dir, MAX_DIR_DEPTH, accepts, &mut out)?;
    out.sort();
    Ok(out)
}

fn collect(
    dir: &Path,
    depth: u32,
    accepts: &dyn Fn(&str) -> bool,
    out: &mut Vec<PathBuf>,
) -> Result<(), DirError> {
    let entries = std::fs::read_dir(dir).map_err(|error| DirError {
        path: dir.to_owned(),
        error,
    })?;
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if depth > 0 && !name.starts_with('.') {
                collect(&path, depth - 1, accepts, out)?;
            }
        } else if path.is_file() && accepts(name) && !is_lumos_output(name) {
            out.push(path);
        }
    }
    Ok(())
}
