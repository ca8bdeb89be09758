//! Arguments that name a preset or a JSON file (`--network`, `--model`,
//! and the Python package's `network=` and `model=`): when one reads as
//! a path but names no file, both front ends say so alike.

use std::path::Path;

/// Why `arg`, given where a preset name or a JSON file goes, names
/// neither, when it reads as a path (a folder in it, or a `.json`
/// ending): nothing is there, or it is not a file. `None` where it reads
/// as a preset name, even where a folder of that name is in the working
/// directory (`lumos synth --model gpt-small --out gpt-small` makes one):
/// the preset's own error says which names there are.
pub fn not_a_file(arg: &str) -> Option<String> {
    let path = Path::new(arg);
    let looks_like_a_path = arg.contains(std::path::MAIN_SEPARATOR)
        || arg.contains('/')
        || arg.to_ascii_lowercase().ends_with(".json");
    if path.is_file() || !looks_like_a_path {
        return None;
    }
    Some(if path.is_dir() {
        format!("{arg}: a directory, not a file")
    } else if path.exists() {
        format!("{arg}: not a regular file")
    } else {
        format!("{arg}: no such file")
    })
}
