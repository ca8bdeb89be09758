//! Output files that appear whole or not at all: written to a temporary
//! file next to the target and renamed into place once everything
//! succeeded.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::write::GzEncoder;
use flate2::Compression;

/// An output file (or the directory it goes into) that could not be
/// written. Display names the file: `<path>: cannot write: <reason>`, the
/// reason in words ([`output_words`]: the folder that is missing, not "No
/// such file or directory (os error 2)").
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write: {reason}", path.display())]
pub struct WriteError {
    /// The file that was to be written (not the temporary one).
    pub path: PathBuf,
    /// What went wrong.
    pub error: io::Error,
    /// `error` in words, worked out when the write failed: the file
    /// system may have changed by the time the error is shown.
    pub reason: String,
}

impl WriteError {
    /// The failure to write `path`, its reason in words as the file
    /// system stands now ([`output_words`]).
    pub fn new(path: &Path, error: io::Error) -> WriteError {
        WriteError {
            reason: output_words(path, &error),
            path: path.to_owned(),
            error,
        }
    }

    /// The failure to rename the temporary file `tmp`, written whole,
    /// onto `path`: where `tmp` is gone (another process emptied the
    /// folder, which a job's folder written into while it is read
    /// invites), that it vanished, named. [`output_words`] said the
    /// folder "takes no new files", since every folder was there.
    fn commit(path: &Path, tmp: &Path, error: io::Error) -> WriteError {
        let vanished = error.kind() == io::ErrorKind::NotFound
            && fs::symlink_metadata(tmp).is_err()
            && path
                .parent()
                .is_none_or(|d| d.as_os_str().is_empty() || d.is_dir());
        if !vanished {
            return WriteError::new(path, error);
        }
        WriteError {
            reason: format!(
                "the temporary file {} it was written to vanished before it could be renamed \
                 into place (removed by another process?); nothing was written",
                tmp.display()
            ),
            path: path.to_owned(),
            error,
        }
    }
}

/// Why `dir` cannot be the directory outputs are written into (created
/// if needed), or `None` when it can: the nearest part of the path that
/// is there decides, since a directory can hold what is missing below it
/// (a link to one is one). `Some("exists and is not a directory")` for
/// `dir` itself a file (or a device), `Some("<folder> is not a
/// directory")` for a folder above it. The front ends word their own
/// error around it (the CLI's usage error naming its flag, the Python
/// package's `ConfigError` naming its argument), checked before any work:
/// creating the directory failed with the bare "File exists (os error
/// 17)" once everything was read.
pub fn not_a_directory(dir: &Path) -> Option<String> {
    for p in dir.ancestors().filter(|p| !p.as_os_str().is_empty()) {
        match fs::metadata(p) {
            Ok(m) if m.is_dir() => return None,
            Ok(_) if p == dir => return Some("exists and is not a directory".to_owned()),
            Ok(_) => return Some(format!("{} is not a directory", p.display())),
            Err(_) => {}
        }
    }
    None
}

/// `e`, the failure to write or create `path`, in words: where a folder
/// on the way is missing (the file's folder removed, a link to a file in
/// a folder that is not there), `the folder FOLDER does not exist`; where
/// one is a link to nothing, `LINK is a link to TARGET, which is
/// not there` (a folder cannot be created through it: the system says
/// "File exists"); where every folder is there and creating the file in
/// its own still found nothing (`/proc`, `/sys` and other pseudo-file
/// systems, which take no new files), `the folder FOLDER is there but
/// takes no new files`; else [`crate::io_words`]. The file system is looked
/// at when this is called, so call it where the failure happened.
pub fn output_words(path: &Path, e: &io::Error) -> String {
    use io::ErrorKind::{AlreadyExists, NotFound};
    if matches!(e.kind(), NotFound | AlreadyExists) {
        // A dangling link on the way, nearest first.
        for p in path.ancestors().filter(|p| !p.as_os_str().is_empty()) {
            let is_link = fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
            if !is_link || fs::metadata(p).is_ok() {
                continue;
            }
            let to = fs::read_link(p).unwrap_or_default();
            // A link to the file to write: its folder is what is missing.
            let to_abs = p.parent().map_or_else(|| to.clone(), |d| d.join(&to));
            let link = if p == path {
                "it".to_owned()
            } else {
                p.display().to_string()
            };
            if p == path && e.kind() == NotFound {
                if let Some(m) = first_missing_above(&to_abs) {
                    return format!(
                        "the folder {} does not exist ({link} is a link to {})",
                        m.display(),
                        to.display()
                    );
                }
            }
            return format!("{link} is a link to {}, which is not there", to.display());
        }
        if e.kind() == NotFound {
            if let Some(m) = first_missing_above(path) {
                return format!("the folder {} does not exist", m.display());
            }
            // Every folder is there, yet creating the file in its own
            // failed as "not found": a pseudo-file system (`/proc`,
            // `/sys`) that takes no new files. "No such file" read as
            // if the output were an input missing.
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                if fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
                    return format!(
                        "the folder {} is there but takes no new files (the system says \"no \
                         such file or directory\")",
                        dir.display()
                    );
                }
            }
        }
    }
    crate::io_words(e)
}

/// The highest folder above `path` that is not there (below the nearest
/// one that is), if any.
fn first_missing_above(path: &Path) -> Option<&Path> {
    let mut missing = None;
    for p in path
        .ancestors()
        .skip(1)
        .filter(|p| !p.as_os_str().is_empty())
    {
        if fs::symlink_metadata(p).is_ok() {
            break;
        }
        missing = Some(p);
    }
    missing
}

/// Creates the directory `dir` and the folders missing above it, as
/// [`fs::create_dir_all`], for outputs: a failure is a [`WriteError`]
/// naming `dir` in words ([`output_words`]): a link to nothing on the way
/// said "File exists".
pub fn create_output_dir(dir: &Path) -> Result<(), WriteError> {
    fs::create_dir_all(dir).map_err(|error| WriteError::new(dir, error))
}

/// Writes `path` atomically: `write` fills a temporary file in the same
/// directory, which is renamed to `path` when `write` and the flush
/// succeed. On any error, and if `write` panics, the temporary file is
/// removed, so no file appears under `path` (a file already there is left
/// as it was). An interrupted process can leave the temporary file
/// (`.<name>.<pid>.<n>.tmp`), never a partial `path`. Nothing is synced to
/// disk: this guards against failures and interrupts, not power loss.
///
/// A symbolic link is written through: the file it points to is
/// replaced, not the link. A path that names something other than a
/// regular file or a directory (`/dev/null`, a named pipe) is written to
/// in place, as a shell redirection would, since renaming onto it would
/// replace the device or pipe with a file.
///
/// `write` gets a buffered writer.
pub fn write_atomic<T>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> Result<T, WriteError> {
    let fail = |error| WriteError::new(path, error);
    let target = Target::of(path).map_err(fail)?;
    let (tmp, file) = target.open().map_err(fail)?;
    let mut w = BufWriter::with_capacity(1 << 16, file);
    let value = write(&mut w).map_err(fail)?;
    w.into_inner().map_err(|e| fail(e.into_error()))?;
    target.commit(tmp, path)?;
    Ok(value)
}

/// [`write_atomic`] of a gzip file, compressed at the fastest level: the
/// traces are large and repetitive, so even that shrinks them about
/// tenfold. `write` gets a buffered writer of the uncompressed text.
pub fn write_gz_atomic<T>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> Result<T, WriteError> {
    let fail = |error| WriteError::new(path, error);
    let target = Target::of(path).map_err(fail)?;
    let (tmp, file) = target.open().map_err(fail)?;
    let gz = GzEncoder::new(file, Compression::fast());
    let mut w = BufWriter::with_capacity(1 << 16, gz);
    let value = write(&mut w).map_err(fail)?;
    w.into_inner()
        .map_err(|e| fail(e.into_error()))?
        .finish()
        .map_err(fail)?;
    target.commit(tmp, path)?;
    Ok(value)
}

/// Where an output goes: the path given, or the file its symbolic link
/// names; and whether it is written in place.
struct Target {
    path: PathBuf,
    in_place: bool,
    /// The descriptor a process's own stream path names (`/dev/stdout`:
    /// 1, `/dev/fd/3`: 3), written through a duplicate of it.
    stream: Option<i32>,
}

impl Target {
    /// The target of `path`: links followed (a dangling link's target is
    /// created), and what is there looked at.
    fn of(path: &Path) -> io::Result<Target> {
        // What the path names, links followed by the system (which knows
        // `/dev/stdout` -> `/proc/self/fd/1` -> a pipe): a device or pipe
        // is written in place through the path as given. So are a
        // process's own streams, whatever they are (`-o /dev/stdout >
        // page.html` must not rename a file onto page.html under the
        // shell's open file).
        let stream = stream_fd(path);
        match fs::metadata(path) {
            Ok(m) if stream.is_some() || (!m.is_file() && !m.is_dir()) => {
                return Ok(Target {
                    path: path.to_owned(),
                    in_place: true,
                    stream,
                })
            }
            Ok(m) if m.is_file() => match fs::canonicalize(path) {
                Ok(path) => {
                    return Ok(Target {
                        path,
                        in_place: false,
                        stream: None,
                    })
                }
                // Removed since (by another process): made anew below, as
                // if it had not been there. Said "takes no new files".
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            },
            _ => {}
        }
        // A folder (the rename says so), nothing, or a dangling link whose
        // file is to be made: its links walked one by one.
        let mut path = path.to_owned();
        // Links to links: as many as the system follows, then an error.
        for _ in 0..40 {
            match fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    let to = fs::read_link(&path)?;
                    path = match path.parent() {
                        Some(dir) => dir.join(to),
                        None => to,
                    };
                }
                Ok(m) => {
                    let in_place = !m.is_file() && !m.is_dir();
                    return Ok(Target {
                        path,
                        in_place,
                        stream: None,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Ok(Target {
                        path,
                        in_place: false,
                        stream: None,
                    })
                }
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("too many levels of symbolic links"))
    }

    /// The file to write: the target itself when written in place, else
    /// a temporary file beside it, to be [`Target::commit`]ted.
    fn open(&self) -> io::Result<(Option<TempFile>, File)> {
        if let Some(fd) = self.stream {
            return Ok((None, duplicate(fd)?));
        }
        if self.in_place {
            let file = File::options().write(true).open(&self.path)?;
            return Ok((None, file));
        }
        let (tmp, file) = TempFile::create(&self.path)?;
        Ok((Some(tmp), file))
    }

    /// Moves the written (and closed) temporary file, if any, onto the
    /// target; a failure names `path`, the output as given.
    fn commit(&self, tmp: Option<TempFile>, path: &Path) -> Result<(), WriteError> {
        let Some(tmp) = tmp else {
            return Ok(());
        };
        let tmp_path = tmp.path.clone();
        (tmp.commit(&self.path)).map_err(|e| WriteError::commit(path, &tmp_path, e))
    }
}

/// The descriptor a path to one of the process's own streams names:
/// `/dev/stdout` 1, `/dev/stderr` 2, `/dev/fd/N` and `/proc/self/fd/N` N.
fn stream_fd(path: &Path) -> Option<i32> {
    let p = path.to_str()?;
    match p {
        "/dev/stdout" => Some(1),
        "/dev/stderr" => Some(2),
        _ => (p.strip_prefix("/dev/fd/"))
            .or_else(|| p.strip_prefix("/proc/self/fd/"))?
            .parse()
            .ok(),
    }
}

/// A new descriptor for the open file `fd` names, sharing its offset and
/// flags: opening the path again would start at offset 0 without the
/// shell's append flag, so `-o /dev/stdout > page.html` wrote over what
/// the process had printed there, and `>>` over the file's start.
#[cfg(unix)]
fn duplicate(fd: i32) -> io::Result<File> {
    use std::os::fd::BorrowedFd;
    // SAFETY: `fd` is open: the path naming it resolved just before
    // (`Target::of`), and nothing in this process closes its streams
    // while an output is written.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    Ok(File::from(fd.try_clone_to_owned()?))
}

#[cfg(not(unix))]
fn duplicate(fd: i32) -> io::Result<File> {
    File::options().write(true).open(format!("/dev/fd/{fd}"))
}

/// The path of a temporary file next to a target, removed when dropped
/// unless committed. Declared before the writer of the file, so that on an
/// early return the file is closed before it is removed.
struct TempFile {
    path: PathBuf,
    committed: bool,
}

impl TempFile {
    /// Creates a new temporary file for `target`.
    fn create(target: &Path) -> io::Result<(TempFile, File)> {
        // Unique within the process (parallel writers) and across processes.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = target
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy());
        let tmp = format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = target.with_file_name(tmp);
        let file = File::options().write(true).create_new(true).open(&path)?;
        let tmp = TempFile {
            path,
            committed: false,
        };
        Ok((tmp, file))
    }

    /// Moves the (closed) file to `target`.
    fn commit(mut self, target: &Path) -> io::Result<()> {
        fs::rename(&self.path, target)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lumos-trace-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_directory_to_write_into_is_judged_by_the_nearest_part_there() {
        let dir = temp_dir("not-a-dir");
        let file = dir.join("f");
        fs::write(&file, b"x").unwrap();
        assert_eq!(not_a_directory(&dir), None);
        assert_eq!(not_a_directory(&dir.join("new/deeper")), None);
        assert_eq!(
            not_a_directory(&file).as_deref(),
            Some("exists and is not a directory")
        );
        assert_eq!(
            not_a_directory(&file.join("below/more")),
            Some(format!("{} is not a directory", file.display()))
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_appear_when_complete() {
        let dir = temp_dir("atomic-ok");
        let plain = dir.join("a.json");
        let n = write_atomic(&plain, |w| w.write_all(b"{}").map(|()| 2)).unwrap();
        assert_eq!(n, 2);
        assert_eq!(fs::read(&plain).unwrap(), b"{}");
        let gz = dir.join("b.json.gz");
        write_gz_atomic(&gz, |w| w.write_all(b"[1, 2]")).unwrap();
        let mut text = String::new();
        flate2::read::GzDecoder::new(File::open(&gz).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "[1, 2]");
        // Replacing an existing file works too.
        write_atomic(&plain, |w| w.write_all(b"[]")).unwrap();
        assert_eq!(fs::read(&plain).unwrap(), b"[]");
        assert_eq!(entries(&dir), ["a.json", "b.json.gz"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A link is written through, and a device written in place: renamed
    /// onto, `-o /dev/null` replaced the device with a file (as root).
    #[cfg(unix)]
    #[test]
    fn links_are_followed_and_devices_written_in_place() {
        let dir = temp_dir("atomic-link");
        let real = dir.join("real.json");
        fs::write(&real, b"old").unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomic(&link, |w| w.write_all(b"new")).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
        // A dangling link makes the file it names.
        let dangling = dir.join("dangling.json.gz");
        std::os::unix::fs::symlink("made.json.gz", &dangling).unwrap();
        write_gz_atomic(&dangling, |w| w.write_all(b"[]")).unwrap();
        assert!(dir.join("made.json.gz").is_file());
        // A character device stays one.
        let null = Path::new("/dev/null");
        write_atomic(null, |w| w.write_all(b"{}")).unwrap();
        write_gz_atomic(null, |w| w.write_all(b"{}")).unwrap();
        let kind = fs::symlink_metadata(null).unwrap().file_type();
        assert!(!kind.is_file() && !kind.is_symlink());
        // Links that loop are an error naming the path given.
        let a = dir.join("a.json");
        std::os::unix::fs::symlink("b.json", &a).unwrap();
        std::os::unix::fs::symlink("a.json", dir.join("b.json")).unwrap();
        let err = write_atomic(&a, |w| w.write_all(b"{}")).unwrap_err();
        assert!(
            err.to_string()
                .contains("a.json: cannot write: too many levels"),
            "{err}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A folder missing on the way, or a link to nothing, is named: the
    /// system said "No such file or directory" or, creating a folder
    /// through a link to nothing, "File exists".
    #[test]
    fn a_missing_folder_or_a_link_to_nothing_is_named() {
        let dir = temp_dir("missing-folder");
        let gone = dir.join("gone");
        // A link to a file in a folder that is not there.
        let to_file = dir.join("r.html");
        std::os::unix::fs::symlink(gone.join("r.html"), &to_file).unwrap();
        let err = write_atomic(&to_file, |w| w.write_all(b"x")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: cannot write: the folder {} does not exist (it is a link to {})",
                to_file.display(),
                gone.display(),
                gone.join("r.html").display()
            )
        );
        // A link to a folder that is not there, as the directory to
        // write into or a folder on the way.
        let to_dir = dir.join("out");
        std::os::unix::fs::symlink(gone.join("deeper"), &to_dir).unwrap();
        for (target, said) in [
            (to_dir.clone(), "it".to_owned()),
            (to_dir.join("sub"), to_dir.display().to_string()),
        ] {
            let err = create_output_dir(&target).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "{}: cannot write: {said} is a link to {}, which is not there",
                    target.display(),
                    gone.join("deeper").display()
                )
            );
        }
        assert!(!gone.exists());
        // Other failures in the system's words.
        let e = io::Error::from(io::ErrorKind::PermissionDenied);
        assert_eq!(output_words(&dir, &e), "permission denied");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The temporary file removed while it was written (a folder
    /// emptied by another process while lumos wrote into it): the rename
    /// found nothing, and every folder being there, the error said the
    /// folder "takes no new files". It names the file that vanished.
    #[test]
    fn a_temporary_file_that_vanishes_is_named() {
        let dir = temp_dir("vanished-tmp");
        for gz in [false, true] {
            let path = dir.join(if gz { "r.json.gz" } else { "r.html" });
            let empty_the_folder = |w: &mut dyn Write| -> io::Result<()> {
                w.write_all(b"x")?;
                for e in fs::read_dir(&dir)? {
                    fs::remove_file(e?.path())?;
                }
                Ok(())
            };
            let err = if gz {
                write_gz_atomic(&path, empty_the_folder)
            } else {
                write_atomic(&path, empty_the_folder)
            }
            .unwrap_err();
            let text = err.to_string();
            let name = path.file_name().unwrap().to_string_lossy();
            assert!(
                text.starts_with(&format!(
                    "{}: cannot write: the temporary file ",
                    path.display()
                )) && text.contains(&format!("/.{name}."))
                    && text.ends_with(
                        "vanished before it could be renamed into place (removed by another \
                         process?); nothing was written"
                    ),
                "{text}"
            );
            assert!(!text.contains("takes no new files"), "{text}");
            assert!(!path.exists());
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_nothing_and_names_the_file() {
        let dir = temp_dir("atomic-fail");
        for gz in [false, true] {
            let path = dir.join(if gz { "t.json.gz" } else { "t.json" });
            let write = |w: &mut dyn Write| -> io::Result<()> {
                w.write_all(&[b'x'; 100_000])?;
                Err(io::Error::other("No space left on device"))
            };
            let err = if gz {
                write_gz_atomic(&path, write)
            } else {
                write_atomic(&path, write)
            }
            .unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{}: cannot write: no space left on device", path.display())
            );
            assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
        }
        // A panicking writer cleans up too.
        let path = dir.join("p.json");
        let r = std::panic::catch_unwind(|| {
            write_atomic(&path, |w| -> io::Result<()> {
                w.write_all(b"partial")?;
                panic!("writer bug")
            })
        });
        assert!(r.is_err());
        assert!(entries(&dir).is_empty());
        // A missing directory is an error naming the target and the
        // folder missing.
        let missing = dir.join("no/such/dir/t.json");
        let err = write_atomic(&missing, |w| w.write_all(b"{}")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: cannot write: the folder {} does not exist",
                missing.display(),
                dir.join("no").display()
            )
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
