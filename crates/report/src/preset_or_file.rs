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

/// The most of a model or network file read: such a file is a few hundred
/// bytes; a larger one (a trace, or a disk image, given by mistake) was
/// read whole, gigabytes of memory before its first byte was parsed.
pub const MAX_PRESET_FILE_BYTES: u64 = 1 << 20;

/// The text of the model or network file at `path`, or why it cannot be
/// had: an I/O error as the system words it, or (as
/// `std::io::ErrorKind::InvalidData`) a file over
/// [`MAX_PRESET_FILE_BYTES`], not read.
pub fn read_preset_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    let file = std::fs::File::open(path)?;
    file.take(MAX_PRESET_FILE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_PRESET_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} MiB, which no model or network file is (they are a few \
                 hundred bytes of JSON): not read",
                MAX_PRESET_FILE_BYTES >> 20
            ),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file past the limit is refused before it is read whole: one of
    /// 1 MiB and a byte (sparse, so nothing is written) errs, one of 1 MiB
    /// of spaces reads.
    #[test]
    fn a_file_past_a_mebibyte_is_refused_unread() {
        let dir = lumos_testkit::TempDir::new("preset-file");
        let big = dir.path().join("big.json");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_PRESET_FILE_BYTES + 1).unwrap();
        let e = read_preset_file(&big).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().starts_with("larger than 1 MiB"), "{e}");
        let ok = dir.path().join("ok.json");
        std::fs::write(&ok, " ".repeat(MAX_PRESET_FILE_BYTES as usize)).unwrap();
        assert_eq!(
            read_preset_file(&ok).unwrap().len() as u64,
            MAX_PRESET_FILE_BYTES
        );
    }
}
