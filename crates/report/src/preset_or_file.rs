//! Arguments that name a preset or a JSON file (`--network`, `--model`,
//! and the Python package's `network=` and `model=`): when one reads as
//! a path but names no file, both front ends say so alike.

use std::path::Path;

/// Why `arg`, given where a preset name or a JSON file goes, names
/// neither, when it reads as a path: it is there but not a file, or it
/// has a folder or a `.json` ending but nothing is there. `None` where it
/// reads as a preset name (the preset's own error says which names there
/// are).
pub fn not_a_file(arg: &str) -> Option<String> {
    let path = Path::new(arg);
    if path.is_dir() {
        return Some(format!("{arg}: a directory, not a file"));
    }
    if path.exists() && !path.is_file() {
        return Some(format!("{arg}: not a regular file"));
    }
    let looks_like_a_path = arg.contains(std::path::MAIN_SEPARATOR)
        || arg.contains('/')
        || arg.to_ascii_lowercase().ends_with(".json");
    (looks_like_a_path && !path.exists()).then(|| format!("{arg}: no such file"))
}
