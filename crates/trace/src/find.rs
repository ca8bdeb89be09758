//! Finding trace files under a folder: what the front ends expand a
//! directory argument into, the same way everywhere.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

/// How deep [`trace_files_under`] looks into sub-folders (runs kept in
/// sub-folders, as TensorBoard's profiler plugin keeps them, without
/// following a link loop forever).
pub const MAX_DIR_DEPTH: u32 = 8;

/// A folder that could not be listed, or a link in it with a trace file's
/// name whose target cannot be reached (a dangling `rank3.json`): left out
/// without a word, its rank was missing from the job with nothing said.
#[derive(Debug)]
pub struct DirError {
    /// The folder, or the link.
    pub path: PathBuf,
    /// Why.
    pub error: std::io::Error,
    /// For a link: where it points, and how many more such links the
    /// folders hold.
    pub link: Option<(PathBuf, usize)>,
}

impl fmt::Display for DirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some((target, more)) = &self.link else {
            return write!(
                f,
                "{}: cannot list directory: {}",
                self.path.display(),
                crate::io_words(&self.error)
            );
        };
        let why = match self.error.kind() {
            std::io::ErrorKind::NotFound => "which is not there".to_owned(),
            _ => format!("which cannot be reached: {}", crate::io_words(&self.error)),
        };
        write!(
            f,
            "{}: a link to {}, {why}; remove the link or restore its target",
            self.path.display(),
            target.display()
        )?;
        match more {
            0 => Ok(()),
            1 => write!(f, " (1 more such link in the input folders)"),
            n => write!(f, " ({n} more such links in the input folders)"),
        }
    }
}

impl std::error::Error for DirError {}

/// The name of an output made of an input's file name `name` by `edit`,
/// which works on its bytes (takes off `.json.gz`, adds `.lgraph`). On
/// Unix a file name is bytes, and those that are not UTF-8 are kept as
/// they are, so that the output of `tr\xff.json.gz` is named after that
/// trace, not after `tr\u{FFFD}` (which a second trace, `tr\xfe.json.gz`,
/// would share); elsewhere the name is taken lossily. `edit` should only
/// cut and add ASCII, which keeps a UTF-8 name UTF-8.
pub fn edit_file_name(name: &OsStr, edit: impl FnOnce(&[u8]) -> Vec<u8>) -> OsString {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        OsString::from_vec(edit(name.as_bytes()))
    }
    #[cfg(not(unix))]
    {
        let bytes = edit(name.to_string_lossy().as_bytes());
        OsString::from(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// True for the names of Kineto trace files a folder holds: `*.json` and
/// `*.json.gz` (Kineto writes `*.pt.trace.json[.gz]`), what the messages
/// about a folder list; any other `*.gz` (a `logs.tar.gz` beside the
/// traces) is not read. A file given by its path is read whatever its
/// name, gzip detected by content.
pub fn is_trace_file_name(name: &str) -> bool {
    name.ends_with(".json") || name.ends_with(".json.gz")
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
/// to [`MAX_DIR_DEPTH`] levels, in natural order (runs of digits by
/// value: `rank2` before `rank10`); hidden folders and lumos's own outputs
/// ([`is_lumos_output`]) are left out.
pub fn trace_files_under(
    dir: &Path,
    accepts: &dyn Fn(&str) -> bool,
) -> Result<Vec<PathBuf>, DirError> {
    Ok(listed_under(dir, accepts)?.files)
}

/// What [`listed_under`] found under a folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listed {
    /// The files read, as [`trace_files_under`] gives them.
    pub files: Vec<PathBuf>,
    /// Files left out whose names look like traces
    /// ([`looks_like_trace_name`]): `rank3.gz`, `rank3.JSON`,
    /// `trace.json.bz2`; and entries with a name the folder reads that are
    /// not regular files (a pipe, socket or device: `mkfifo rank1.json`).
    /// In natural order.
    pub left_out: Vec<PathBuf>,
}

/// [`trace_files_under`], and the files it left out whose names look
/// like traces, which a front end names in a warning
/// ([`left_out_warning`]): a `rank3.gz` beside `rank0.json.gz` was left
/// out without a word, its rank missing from the job unsaid.
pub fn listed_under(dir: &Path, accepts: &dyn Fn(&str) -> bool) -> Result<Listed, DirError> {
    let mut out = Vec::new();
    let mut left_out = Vec::new();
    let keep = |n: &str| accepts(n) && !is_lumos_output(n);
    collect_noting(dir, MAX_DIR_DEPTH, &keep, &mut out, Some(&mut left_out))?;
    out.sort_by(|a, b| natural_order(a, b));
    left_out.sort_by(|a, b| natural_order(a, b));
    note_listed(dir, &out);
    Ok(Listed {
        files: out,
        left_out,
    })
}

/// The files [`listed_under`] found in this process, each with its
/// folder as given: a read that finds one of them gone says it vanished
/// ([`ErrorKind::Vanished`](crate::ErrorKind::Vanished)), where "no such
/// file" read as a name mistyped. A few hundred bytes a file, for the
/// files of the folders given.
static LISTED: std::sync::Mutex<Vec<(PathBuf, PathBuf)>> = std::sync::Mutex::new(Vec::new());

fn note_listed(dir: &Path, files: &[PathBuf]) {
    let mut listed = LISTED.lock().unwrap_or_else(|e| e.into_inner());
    listed.extend(files.iter().map(|f| (f.clone(), dir.to_owned())));
}

/// The folder as given whose listing ([`listed_under`]) found `path`, if
/// one did in this process.
pub(crate) fn listed_in(path: &Path) -> Option<PathBuf> {
    let listed = LISTED.lock().unwrap_or_else(|e| e.into_inner());
    (listed.iter().rev())
        .find(|(f, _)| f == path)
        .map(|(_, d)| d.clone())
}

/// True for a file name that looks like a trace a folder does not read
/// by its name: any `*.gz` (`rank3.gz`; an archive, `logs.tar.gz`, too:
/// it may hold traces), a `.json` or `.lgraph` anywhere in it, in any
/// case (`rank3.JSON`, `trace.json.bz2`, `t.json.gz.1`). Other names
/// (`README`, `run.log`, `config.yaml`) are not named: a warning about
/// every file beside the traces would bury the ones that matter. Hidden
/// files and lumos's own outputs are not named either.
pub fn looks_like_trace_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    !name.starts_with('.')
        && !is_lumos_output(&lower)
        && (lower.ends_with(".gz") || lower.contains(".json") || lower.contains(".lgraph"))
}

/// Most names [`left_out_warning`] lists.
const LEFT_OUT_SHOWN: usize = 5;

/// The warning a front end gives about the files `left_out` of folder
/// `dir` ([`Listed::left_out`]), `kinds` naming what a folder reads
/// (`*.json, *.json.gz or *.lgraph`); `None` when none were.
pub fn left_out_warning(dir: &Path, left_out: &[PathBuf], kinds: &str) -> Option<String> {
    if left_out.is_empty() {
        return None;
    }
    let name = |p: &PathBuf| match p.strip_prefix(dir) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => p.display().to_string(),
    };
    let shown = |paths: &[&PathBuf]| {
        let mut shown: Vec<String> = paths.iter().take(LEFT_OUT_SHOWN).map(|p| name(p)).collect();
        if paths.len() > LEFT_OUT_SHOWN {
            shown.push(format!("and {} more", paths.len() - LEFT_OUT_SHOWN));
        }
        shown.join(", ")
    };
    let count = |n: usize, one: &str, many: &str| match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    };
    // Entries with a trace's name that are not files (a pipe, socket or
    // device, [`listed_under`]) are left out for that, not for their name.
    let (files, others): (Vec<&PathBuf>, Vec<&PathBuf>) =
        left_out.iter().partition(|p| p.is_file());
    let mut parts = Vec::new();
    if !files.is_empty() {
        parts.push(format!(
            "left out {} not named {kinds}: {}; a folder reads those names only (a trace \
             among them: rename it, or give it as a file, which is read whatever its name)",
            count(files.len(), "file", "files"),
            shown(&files)
        ));
    }
    if !others.is_empty() {
        parts.push(format!(
            "left out {} that {} not a regular file (a pipe, socket or device): {}; a folder \
             reads regular files only (a pipe given as a file is read)",
            count(others.len(), "entry", "entries"),
            if others.len() == 1 { "is" } else { "are" },
            shown(&others)
        ));
    }
    Some(format!("{}: {}", dir.display(), parts.join("; ")))
}

/// True for the names of predicted timelines (`*.predicted.json.gz`, what
/// `lumos predict --out` writes): lumos's own outputs, but Kineto traces
/// of the predicted job, one rank each, meant to be replayed together.
pub fn is_predicted_timeline(name: &str) -> bool {
    name.ends_with(".predicted.json.gz")
}

/// The predicted timelines ([`is_predicted_timeline`]) under `dir`, as
/// [`trace_files_under`] finds files: what a directory argument holding no
/// trace file stands for when it is a prediction's output directory (a
/// predicted job). Its other outputs (replayed timelines, critical paths)
/// are still left out, so that a replay written beside the prediction is
/// not read as more of its ranks.
pub fn predicted_timelines_under(dir: &Path) -> Result<Vec<PathBuf>, DirError> {
    let mut out = Vec::new();
    collect(dir, MAX_DIR_DEPTH, &is_predicted_timeline, &mut out)?;
    out.sort_by(|a, b| natural_order(a, b));
    Ok(out)
}

/// What to say of `dir` when [`trace_files_under`] found no file in it
/// that `accepts`, `kinds` naming those (`*.json, *.json.gz`): that it
/// holds only lumos's own outputs, how many and one of them, which can be
/// given as files (a directory leaves them out so that a run's outputs
/// are not read as its inputs), or else that it has none.
pub fn no_trace_files(dir: &Path, kinds: &str, accepts: &dyn Fn(&str) -> bool) -> String {
    let mut outputs = Vec::new();
    let keep = |n: &str| accepts(n) && is_lumos_output(n);
    // Listed again only on this path; a folder that cannot be listed now
    // gets the plain message.
    if collect(dir, MAX_DIR_DEPTH, &keep, &mut outputs).is_ok() {
        outputs.sort_by(|a, b| natural_order(a, b));
    }
    match &outputs[..] {
        [] => format!(
            "{}: directory has no trace files ({kinds}), sub-folders included",
            dir.display()
        ),
        [first, ..] => format!(
            "{}: directory holds only lumos's own outputs ({} such as {}), which a directory \
             argument leaves out; give them as files to read them",
            dir.display(),
            match outputs.len() {
                1 => "1 file".to_owned(),
                n => format!("{n} files"),
            },
            first.display()
        ),
    }
}

/// One input file named twice among a command's inputs: by one argument
/// given twice, by two spellings of its path (`./t.json`, `t.json`),
/// through a link or a hard link, or as a file and again inside a folder
/// given too (or two folders, one inside the other). Read twice, it would
/// be counted twice: its steps twice in a replay's mean, or two ranks
/// claiming one rank of a job. The front ends refuse it as bad usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenTwice {
    /// The file, as it was first found.
    pub file: PathBuf,
    /// The argument that first gave it: the file itself, or a folder
    /// above it.
    pub first: PathBuf,
    /// The file as it was found again (another spelling, a link).
    pub again: PathBuf,
    /// The argument that gave it again.
    pub second: PathBuf,
}

impl GivenTwice {
    /// How `arg` gave the file, found as `file`: as the argument itself,
    /// or inside it (a folder) under the first name or another.
    fn way(&self, file: &Path, arg: &Path) -> String {
        // Compared as written: `Path`'s `==` takes `a/./b` for `a/b`,
        // which the message tells apart.
        let same = |x: &Path, y: &Path| x.as_os_str() == y.as_os_str();
        let in_folder = !same(file, arg) && file.starts_with(arg);
        match (in_folder, same(file, &self.file)) {
            (false, _) => format!("as {}", arg.display()),
            (true, true) => format!("in {}", arg.display()),
            (true, false) => format!("as {} in {}", file.display(), arg.display()),
        }
    }
}

impl fmt::Display for GivenTwice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const WHY: &str = "each trace is one rank, give it once";
        if self.first.as_os_str() == self.second.as_os_str()
            && self.file.as_os_str() == self.again.as_os_str()
        {
            // One argument twice (`t.json t.json`, `job job`): it is
            // what to name.
            return write!(f, "{} is given twice; {WHY}", self.second.display());
        }
        write!(
            f,
            "{} is given twice ({} and {}); {WHY}",
            self.file.display(),
            self.way(&self.file, &self.first),
            self.way(&self.again, &self.second)
        )
    }
}

impl std::error::Error for GivenTwice {}

/// Refuses `inputs` (each a file, and the argument that named it: the
/// file itself, or a folder it was found in) when two are one file
/// ([`GivenTwice`], the first such pair): one device and inode on Unix,
/// links followed; elsewhere one canonical path. A file that cannot be
/// looked at is left to its reader, which names what is wrong with it.
pub fn given_once<'a>(
    inputs: impl IntoIterator<Item = (&'a Path, &'a Path)>,
) -> Result<(), GivenTwice> {
    let mut seen = std::collections::HashMap::new();
    for (file, arg) in inputs {
        let Some(id) = file_id(file) else { continue };
        if let Some((first_file, first_arg)) = seen.insert(id, (file, arg)) {
            return Err(GivenTwice {
                file: first_file.to_owned(),
                first: first_arg.to_owned(),
                again: file.to_owned(),
                second: arg.to_owned(),
            });
        }
    }
    Ok(())
}

/// What makes a file itself whatever path names it.
#[cfg(unix)]
fn file_id(file: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(file).ok()?;
    Some((m.dev(), m.ino()))
}

/// What makes a file itself whatever path names it.
#[cfg(not(unix))]
fn file_id(file: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(file).ok()
}

/// Paths compared as people number files: component by component, runs of
/// digits by their value (`rank2` < `rank10`), the rest byte by byte; two
/// paths equal so (`r01`, `r1`) keep their byte order.
fn natural_order(a: &Path, b: &Path) -> Ordering {
    let by_component = a.components().zip(b.components()).find_map(|(x, y)| {
        let o = natural_text_order(
            x.as_os_str().as_encoded_bytes(),
            y.as_os_str().as_encoded_bytes(),
        );
        o.is_ne().then_some(o)
    });
    by_component
        .unwrap_or_else(|| a.components().count().cmp(&b.components().count()))
        .then_with(|| a.cmp(b))
}

/// [`natural_order`] of one component's bytes.
fn natural_text_order(mut a: &[u8], mut b: &[u8]) -> Ordering {
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let (da, ra) = split_digits(a);
                let (db, rb) = split_digits(b);
                let o = digits_value_order(da, db);
                if o.is_ne() {
                    return o;
                }
                (a, b) = (ra, rb);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                (a, b) = (&a[1..], &b[1..]);
            }
        }
    }
}

/// The leading run of ASCII digits of `s`, and the rest.
fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    s.split_at(n)
}

/// Two runs of digits by value, of any length (no overflow).
fn digits_value_order(a: &[u8], b: &[u8]) -> Ordering {
    let strip = |d: &[u8]| -> usize { d.iter().take_while(|&&c| c == b'0').count() };
    let (a, b) = (&a[strip(a)..], &b[strip(b)..]);
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// The files under `dir` (down to `depth` more levels of sub-folders, not
/// hidden ones) whose names `keep`, into `out`, in no particular order. A
/// link with such a name whose target cannot be reached is an error naming
/// the first, counting the others.
///
/// Each folder is listed once (by its canonical path): the depth alone did
/// not bound links to a folder above, since each level multiplies the paths
/// by the links (five links to `.` listed the folder 5^8 times: a minute,
/// then "given twice"). Level by level, so that a folder is listed where it
/// is met first, at its shallowest: reached first through a deeper link, it
/// ran out of depth there, and its own, shallower path was then skipped as
/// seen, with the traces the limit allowed under it.
fn collect(
    dir: &Path,
    depth: u32,
    keep: &dyn Fn(&str) -> bool,
    out: &mut Vec<PathBuf>,
) -> Result<(), DirError> {
    collect_noting(dir, depth, keep, out, None)
}

/// [`collect`], and into `left_out` (when given) the files not kept
/// whose names [`looks_like_trace_name`], and the entries kept by name
/// that are not regular files ([`Listed::left_out`]).
fn collect_noting(
    dir: &Path,
    depth: u32,
    keep: &dyn Fn(&str) -> bool,
    out: &mut Vec<PathBuf>,
    mut left_out: Option<&mut Vec<PathBuf>>,
) -> Result<(), DirError> {
    let mut seen = HashSet::new();
    // A link that leads nowhere, its error and target, and how many more
    // were found.
    let mut dangling: Option<(PathBuf, std::io::Error, PathBuf, usize)> = None;
    let (mut level, mut depth) = (vec![dir.to_owned()], depth);
    while !level.is_empty() {
        let mut next = Vec::new();
        for dir in level {
            if let Ok(real) = std::fs::canonicalize(&dir) {
                if !seen.insert(real) {
                    continue;
                }
            }
            let entries = std::fs::read_dir(&dir).map_err(|error| DirError {
                path: dir.clone(),
                error,
                link: None,
            })?;
            // In natural order, so that of two ways to one folder at one
            // depth the same is kept whatever order the file system lists
            // them in.
            let mut paths: Vec<PathBuf> =
                entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            paths.sort_by(|a, b| natural_order(a, b));
            for path in paths {
                // Read lossily: the suffixes and the leading dot asked
                // about are ASCII, so a name that is not UTF-8
                // (`tr\xff.json.gz`) is still a trace, as the same file
                // given by its path is (to_str left it out without a word).
                let name = path
                    .file_name()
                    .map_or_else(Default::default, OsStr::to_string_lossy);
                if path.is_dir() {
                    if depth > 0 && !name.starts_with('.') {
                        next.push(path);
                    }
                } else if path.is_file() && keep(&name) {
                    out.push(path);
                } else if path.is_file() {
                    if let Some(left) = left_out.as_deref_mut() {
                        if looks_like_trace_name(&name) {
                            left.push(path);
                        }
                    }
                } else if keep(&name) {
                    // Neither a file nor a folder: a link that leads
                    // nowhere is named, not skipped (its rank would be
                    // missing unsaid).
                    if let (Ok(target), Err(error)) =
                        (std::fs::read_link(&path), std::fs::metadata(&path))
                    {
                        match &mut dangling {
                            Some(first) => first.3 += 1,
                            None => dangling = Some((path, error, target, 0)),
                        }
                    } else if let Some(left) = left_out.as_deref_mut() {
                        // A pipe, socket or device with a trace's name:
                        // not read (a pipe without a writer would wait
                        // for ever), but named, as it was not (its rank
                        // missing from the job unsaid).
                        left.push(path);
                    }
                }
            }
        }
        level = next;
        depth = depth.saturating_sub(1);
    }
    match dangling {
        None => Ok(()),
        Some((path, error, target, more)) => Err(DirError {
            path,
            error,
            link: Some((target, more)),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_in_natural_order() {
        let mut v: Vec<PathBuf> = [
            "job/rank10.json.gz",
            "job/rank2.json.gz",
            "job/rank1.json.gz",
            "job/rank02.json.gz",
            "job/rank100.json.gz",
            "job/a/rank3.json",
            "job/rank2.json",
            "job2/rank0.json",
            "job/Rank9.json",
            "job/rank18446744073709551616999.json",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        v.sort_by(|a, b| natural_order(a, b));
        let got: Vec<&str> = v.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(
            got,
            [
                "job/Rank9.json",
                "job/a/rank3.json",
                "job/rank1.json.gz",
                "job/rank2.json",
                "job/rank02.json.gz",
                "job/rank2.json.gz",
                "job/rank10.json.gz",
                "job/rank100.json.gz",
                "job/rank18446744073709551616999.json",
                "job2/rank0.json",
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_name_that_is_not_utf8_is_listed_and_kept() {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        let dir = lumos_testkit::TempDir::new("not-utf8");
        let name = OsStr::from_bytes(b"tr\xff.json.gz");
        std::fs::write(dir.join(name), b"").unwrap();
        // It was read as "" and left out: "directory has no trace files".
        let found = trace_files_under(&dir, &is_trace_file_name).unwrap();
        assert_eq!(found, [dir.join(name)]);
        let edited = edit_file_name(name, |b| [&b[..2], b".lgraph"].concat());
        assert_eq!(edited.into_vec(), b"tr.lgraph");
        let kept = edit_file_name(name, |b| {
            [b.strip_suffix(b".json.gz").unwrap(), b".x"].concat()
        });
        assert_eq!(kept.into_vec(), b"tr\xff.x");
    }

    /// Links to a folder above are followed once: five links to `.`
    /// listed the folder 5^8 times (a minute's work, then the one file
    /// "given twice"); three gave 3^8 copies of it.
    #[cfg(unix)]
    #[test]
    fn links_to_a_folder_above_list_it_once() {
        let dir = lumos_testkit::TempDir::new("link-loop");
        let sub = dir.join("runs").join("a");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(dir.join("rank0.json"), "[]").unwrap();
        std::fs::write(sub.join("rank1.json"), "[]").unwrap();
        for (i, to) in ["..", "../..", "."].iter().enumerate() {
            std::os::unix::fs::symlink(to, sub.join(format!("l{i}"))).unwrap();
        }
        let started = std::time::Instant::now();
        let found = trace_files_under(&dir, &is_trace_file_name).unwrap();
        assert_eq!(found, [dir.join("rank0.json"), sub.join("rank1.json")]);
        assert!(started.elapsed().as_secs() < 5);
    }

    /// A folder reached first through a link deeper down is still walked
    /// from its own path, as deep as the limit allows, and its traces named
    /// by that path (walked depth first, the link's visit ran out of depth
    /// and the folder's own path was skipped as seen: "no trace files").
    #[test]
    fn a_folder_is_walked_from_its_shallowest_path() {
        let dir = lumos_testkit::TempDir::new("link-deeper");
        let mut deep = dir.join("z");
        for level in 1..MAX_DIR_DEPTH {
            deep = deep.join(level.to_string());
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("t.json"), "[]").unwrap();
        let x = dir.join("a").join("x");
        std::fs::create_dir_all(&x).unwrap();
        std::os::unix::fs::symlink("../../z", x.join("link")).unwrap();
        let found = trace_files_under(&dir, &is_trace_file_name).unwrap();
        assert_eq!(found, [deep.join("t.json")]);
    }

    /// A folder reads what its message lists (`*.json, *.json.gz`): a
    /// `logs.tar.gz` beside the traces was read as one, and failed.
    #[test]
    fn a_folder_reads_json_and_json_gz_only() {
        let dir = lumos_testkit::TempDir::new("find-kinds");
        for n in [
            "a.pt.trace.json",
            "b.pt.trace.json.gz",
            "logs.tar.gz",
            "c.gz",
            "d.txt",
        ] {
            std::fs::write(dir.join(n), "x").unwrap();
        }
        let found = trace_files_under(&dir, &is_trace_file_name).unwrap();
        let want = [dir.join("a.pt.trace.json"), dir.join("b.pt.trace.json.gz")];
        assert_eq!(found, want);
    }

    /// A link with a trace's name that leads nowhere is named, and the
    /// others like it counted: it was skipped without a word, its rank
    /// missing from the job.
    #[cfg(unix)]
    #[test]
    fn a_dangling_trace_link_in_a_folder_is_named() {
        let dir = lumos_testkit::TempDir::new("find-dangling");
        let sub = dir.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(dir.join("rank0.json"), "[]").unwrap();
        // Not a trace's name: no concern of a trace folder.
        std::os::unix::fs::symlink(dir.join("gone.txt"), dir.join("notes.txt")).unwrap();
        let found = trace_files_under(&dir, &is_trace_file_name).unwrap();
        assert_eq!(found, [dir.join("rank0.json")]);
        let gone = dir.join("gone.json");
        std::os::unix::fs::symlink(&gone, dir.join("rank1.json")).unwrap();
        let e = trace_files_under(&dir, &is_trace_file_name).unwrap_err();
        let want = format!(
            "{}: a link to {}, which is not there; remove the link or restore its target",
            dir.join("rank1.json").display(),
            gone.display()
        );
        assert_eq!(e.to_string(), want);
        std::os::unix::fs::symlink(&gone, sub.join("rank2.json.gz")).unwrap();
        let e = trace_files_under(&dir, &is_trace_file_name).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("target (1 more such link in the input folders)"),
            "{e}"
        );
    }

    /// A folder that cannot be listed is named with the system's reason
    /// in words: `lumos inspect /` said "Permission denied (os error 13)".
    #[test]
    fn a_folder_that_cannot_be_listed_is_named_in_words() {
        let e = DirError {
            path: "/proc/1/fdinfo".into(),
            error: std::io::Error::from_raw_os_error(13),
            link: None,
        };
        assert_eq!(
            e.to_string(),
            "/proc/1/fdinfo: cannot list directory: permission denied"
        );
    }

    /// [`given_once`] of `(file, argument)` pairs, its refusal as the
    /// front ends print it.
    fn refusal(inputs: &[(&Path, &Path)]) -> Option<String> {
        given_once(inputs.iter().copied())
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn one_file_given_twice_is_refused_naming_it_and_both_ways() {
        let dir = lumos_testkit::TempDir::new("given-twice");
        let (a, b) = (dir.join("a.json"), dir.join("b.json"));
        std::fs::write(&a, "[]").unwrap();
        std::fs::write(&b, "[]").unwrap();
        let why = "; each trace is one rank, give it once";
        // Two files, and one that is not there (left to its reader).
        let missing = dir.join("missing.json");
        let ok: [(&Path, &Path); 4] = [
            (&a, &a),
            (&b, &b),
            (&missing, &missing),
            (&missing, &missing),
        ];
        assert_eq!(refusal(&ok), None);
        // One argument twice.
        assert_eq!(
            refusal(&[(&a, &a), (&b, &b), (&a, &a)]),
            Some(format!("{} is given twice{why}", a.display()))
        );
        // Two spellings of one path.
        let dotted = dir.join(".").join("a.json");
        assert_eq!(
            refusal(&[(&a, &a), (&dotted, &dotted)]),
            Some(format!(
                "{} is given twice (as {} and as {}){why}",
                a.display(),
                a.display(),
                dotted.display()
            ))
        );
        // A folder, and a file inside it; the other way round.
        let folder: &Path = &dir;
        assert_eq!(
            refusal(&[(&a, folder), (&b, folder), (&a, &a)]),
            Some(format!(
                "{} is given twice (in {} and as {}){why}",
                a.display(),
                folder.display(),
                a.display()
            ))
        );
        assert_eq!(
            refusal(&[(&b, &b), (&a, folder), (&b, folder)]),
            Some(format!(
                "{} is given twice (as {} and in {}){why}",
                b.display(),
                b.display(),
                folder.display()
            ))
        );
        // One folder twice.
        assert_eq!(
            refusal(&[(&a, folder), (&a, folder)]),
            Some(format!("{} is given twice{why}", folder.display()))
        );
        // A hard link, and (on Unix) a symbolic one found in a folder.
        let hard = dir.join("hard.json");
        std::fs::hard_link(&a, &hard).unwrap();
        assert_eq!(
            refusal(&[(&a, &a), (&hard, &hard)]),
            Some(format!(
                "{} is given twice (as {} and as {}){why}",
                a.display(),
                a.display(),
                hard.display()
            ))
        );
        #[cfg(unix)]
        {
            let sub = dir.join("sub");
            std::fs::create_dir(&sub).unwrap();
            let link = sub.join("link.json");
            std::os::unix::fs::symlink(&b, &link).unwrap();
            assert_eq!(
                refusal(&[(&b, &b), (&link, &sub)]),
                Some(format!(
                    "{} is given twice (as {} and as {} in {}){why}",
                    b.display(),
                    b.display(),
                    link.display(),
                    sub.display()
                ))
            );
        }
    }
}
