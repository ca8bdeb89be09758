//! Turning command-line paths into input files (traces, or compact
//! `.lgraph` graphs that `lumos ingest` made of them), and reading them
//! (and building the ranks of a job) in parallel.

use std::convert::Infallible;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::OnceLock;

use anyhow::{bail, Result};

use lumos_graph::{RankInput, Unreadable};
use lumos_store::{
    InputError, MemoryGuard, Prepared, ReadFor, Representatives, StoreError, StoredRank,
};
use lumos_trace::{ReadError, Trace};
use rayon::prelude::*;

use crate::{output, progress};

/// One input, read: a trace, or a rank read back from an `.lgraph` file,
/// which every command takes in place of the trace it was made from.
// Both are large, a few of them alive at a time: the size difference does
// not matter, and a boxed trace would only add a pointer hop.
#[allow(clippy::large_enum_variant)]
pub enum Loaded {
    /// A trace file.
    Trace(Trace),
    /// A compact graph file.
    Stored(StoredRank),
}

/// True when `f` is a compact graph: named `.lgraph`, or starting with its
/// magic bytes.
pub fn is_lgraph(f: &Path) -> bool {
    lumos_store::is_lgraph_file(f)
}

/// Reads one input file.
pub fn read_one(f: &Path) -> Result<Loaded> {
    if is_lgraph(f) {
        Ok(Loaded::Stored(lumos_store::read_stored(f)?))
    } else {
        Ok(Loaded::Trace(lumos_trace::read_path(f)?))
    }
}

/// Reads one input file as a rank of a job: a trace is built as it is
/// read ([`lumos_store::read_rank_input`]).
pub fn read_rank(f: &Path) -> Result<RankInput> {
    lumos_store::read_rank_input(f).map_err(input_error)
}

/// The file standard input is read through.
const STDIN_FILE: &str = "/dev/stdin";

/// What the reports and messages call standard input given as `-`: not
/// the `/dev/stdin` it is read through, which the user never typed (as
/// `gzip` and `zcat` name it).
pub const STDIN_NAME: &str = "stdin";

/// Set once an input argument is `-`: from then on [`STDIN_FILE`] in a
/// report or a message is standard input, shown as [`STDIN_NAME`].
static STDIN_GIVEN: AtomicBool = AtomicBool::new(false);

/// The file an input argument names: `-` is standard input
/// (`/dev/stdin`, which reports and errors then call [`STDIN_NAME`]:
/// [`named`]), as Unix tools take it.
pub fn input_path(p: &Path) -> PathBuf {
    match cfg!(unix) && p.as_os_str() == "-" {
        true => {
            STDIN_GIVEN.store(true, Ordering::Relaxed);
            PathBuf::from(STDIN_FILE)
        }
        false => p.to_owned(),
    }
}

/// `path` as reports name it: [`STDIN_NAME`] for standard input given as
/// `-`, else `path` (a `/dev/stdin` typed as such stays so).
pub fn named(path: &str) -> &str {
    if STDIN_GIVEN.load(Ordering::Relaxed) && path == STDIN_FILE {
        STDIN_NAME
    } else {
        path
    }
}

/// Renames a report's `path` as [`named`] names it.
pub fn rename_stdin(path: &mut String) {
    if named(path) != path {
        *path = STDIN_NAME.to_owned();
    }
}

/// `text` (a message: an error, a note, a progress line) with the path
/// standard input given as `-` is read through named [`STDIN_NAME`].
pub fn stdin_named_in(text: &str) -> std::borrow::Cow<'_, str> {
    if STDIN_GIVEN.load(Ordering::Relaxed) && text.contains(STDIN_FILE) {
        text.replace(STDIN_FILE, STDIN_NAME).into()
    } else {
        text.into()
    }
}

/// Expands directories (sub-folders included, in natural order) into
/// their trace files, and `-` into standard input ([`input_path`]). A
/// directory leaves lumos's own outputs out (a run's outputs are not its
/// inputs), but one that holds no trace and does hold predicted timelines
/// (`lumos predict --out`'s directory) stands for them: the predicted job
/// ([`lumos_report::predicted_job_under`]). Files a directory leaves out
/// whose names look like traces (`rank3.gz`, `rank3.JSON`) are named in a
/// warning on stderr ([`lumos_trace::left_out_warning`]). One file given
/// twice (two spellings, a link, a folder and a file in it) is a usage
/// error ([`lumos_trace::given_once`]): it would be read and counted twice.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    crate::usage::stdin_once(paths)?;
    // Each file, and the argument that named it.
    let mut out: Vec<(PathBuf, &Path)> = Vec::new();
    for arg in paths {
        let p = &input_path(arg);
        if p.is_dir() {
            let accepts = |n: &str| lumos_trace::is_trace_file_name(n) || n.ends_with(".lgraph");
            let listed = lumos_trace::listed_under(p, &accepts)?;
            let kinds = "*.json, *.json.gz or *.lgraph";
            if let Some(w) = lumos_trace::left_out_warning(p, &listed.left_out, kinds) {
                crate::output::warning(w);
            }
            let mut found = listed.files;
            if found.is_empty() {
                found = lumos_report::predicted_job_under(p)?;
            }
            if found.is_empty() {
                bail!(lumos_trace::no_trace_files(
                    p,
                    "*.json, *.json.gz, *.lgraph",
                    &accepts
                ));
            }
            out.extend(found.into_iter().map(|f| (f, arg.as_path())));
        } else {
            out.push((p.clone(), arg));
        }
    }
    if out.is_empty() {
        bail!("no input traces given");
    }
    lumos_trace::given_once(out.iter().map(|(f, arg)| (f.as_path(), *arg)))
        .map_err(crate::usage::usage)?;
    Ok(out.into_iter().map(|(f, _)| f).collect())
}

/// Why `arg`, given where a preset name or a JSON file goes (`--network`,
/// `--model`), names neither, when it reads as a path (lumos-report's,
/// which the Python package says too).
pub use lumos_report::not_a_file;

/// Refuses inputs whose outputs into one directory (given with `flag`)
/// would take one name (`name` of the trace each input was read from,
/// `traces`; of an `.lgraph` file, the trace it was ingested from), so
/// that two traces of one file name in different folders
/// (`a/rank0.json.gz`, `b/rank0.json.gz`) do not replace each other's.
pub fn distinct_output_names<'p>(
    traces: impl IntoIterator<Item = &'p Path>,
    flag: &str,
    name: impl Fn(&Path) -> OsString,
) -> Result<()> {
    match output_name_clash(traces, name) {
        Some((a, b, name)) => Err(crate::usage::usage(format!(
            "{} and {} would both be written as {} into {flag}'s directory: give \
             traces of different file names, or write them apart",
            a.display(),
            b.display(),
            Path::new(&name).display()
        ))),
        None => Ok(()),
    }
}

/// What a timeline or critical path of the trace at `path` is named
/// (`rank0.*`), for [`distinct_output_names`].
pub fn timeline_names(path: &Path) -> OsString {
    let mut name = lumos_report::output_stem(path);
    name.push(".*");
    name
}

/// The first two of `traces` whose outputs would take one name (`name`
/// of each), and that name.
pub fn output_name_clash<'p>(
    traces: impl IntoIterator<Item = &'p Path>,
    name: impl Fn(&Path) -> OsString,
) -> Option<(&'p Path, &'p Path, OsString)> {
    let mut seen: std::collections::HashMap<OsString, &Path> = std::collections::HashMap::new();
    for f in traces {
        let n = name(f);
        if let Some(other) = seen.get(&n) {
            return Some((other, f, n));
        }
        seen.insert(n, f);
    }
    None
}

/// Refuses `output` (given with `flag`) when it is one of `inputs`, links
/// followed: writing it would replace an input (`lumos report -o
/// t.json.gz t.json.gz` did, then said "wrote").
pub fn output_not_an_input(output: &Path, inputs: &[PathBuf], flag: &str) -> Result<()> {
    let Ok(written) = std::fs::metadata(output) else {
        return Ok(());
    };
    match inputs
        .iter()
        .find(|i| std::fs::metadata(i).is_ok_and(|read| same_file(&written, &read, output, i)))
    {
        Some(i) => Err(crate::usage::usage(format!(
            "{flag} {}: is the input {}; the output would replace it",
            output.display(),
            i.display()
        ))),
        None => Ok(()),
    }
}

/// Refuses `dir`, given with `flag` as the directory to write into
/// (created if needed), when it cannot be one: it, or a folder above it,
/// is there and is not a directory (a file, a device). A usage error,
/// checked before any work: the command would otherwise read and replay
/// everything, then fail to create the directory.
pub fn output_dir(dir: &Path, flag: &str) -> Result<()> {
    not_standard_output(dir, flag, "the directory to write into (created if needed)")?;
    match lumos_trace::not_a_directory(dir) {
        Some(what) => Err(crate::usage::usage(format!(
            "{flag} {}: {what}; {flag} names the directory to write into (created if needed)",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// Refuses `-` as an output that is a directory or a binary file
/// (`what` the flag names): among the inputs `-` is standard input, so
/// `--out -` reads as standard output, yet it made a folder (or file)
/// named `-` in the working directory, without a word.
pub fn not_standard_output(out: &Path, flag: &str, what: &str) -> Result<()> {
    match out.as_os_str() == "-" {
        true => Err(crate::usage::usage(format!(
            "{flag} -: standard output cannot take what is written here; {flag} names {what} \
             (./- for one named -)"
        ))),
        false => Ok(()),
    }
}

/// Refuses `file`, given with `flag` as the file to write, when it cannot
/// be one: it is a directory, or a folder above it is there and is not a
/// directory. A usage error, checked before any work, as [`output_dir`]:
/// `lumos report -o DIR` read and replayed everything, then failed with
/// the system's "Is a directory (os error 21)". Folders missing above it
/// are created when it is written ([`create_parent`]); `example` names a
/// file for the hint (`report.html`).
pub fn output_file(file: &Path, flag: &str, example: &str) -> Result<()> {
    if std::fs::metadata(file).is_ok_and(|m| m.is_dir()) {
        return Err(crate::usage::usage(format!(
            "{flag} {}: is a directory; {flag} names the file to write, such as {}",
            file.display(),
            file.join(example).display()
        )));
    }
    match folder_not_a_directory(file) {
        Some(p) => Err(crate::usage::usage(format!(
            "{flag} {}: {} is not a directory",
            file.display(),
            p.display()
        ))),
        None => Ok(()),
    }
}

/// The nearest folder above `file` that is there, when it is not a
/// directory (a file, a device), so that `file` cannot be written; what is
/// missing below it can be created.
pub fn folder_not_a_directory(file: &Path) -> Option<&Path> {
    let mut above = (file.ancestors().skip(1)).filter(|p| !p.as_os_str().is_empty());
    let there = above.find_map(|p| std::fs::metadata(p).ok().map(|m| (p, m)))?;
    (!there.1.is_dir()).then_some(there.0)
}

/// Creates the folders missing above `file` (given with `flag`), as
/// `--out` creates its directory: `lumos report -o new/r.html` failed
/// with "No such file or directory (os error 2)" after all its work.
pub fn create_parent(file: &Path, flag: &str) -> Result<()> {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => std::fs::create_dir_all(dir)
            .map_err(|e| {
                anyhow::anyhow!(
                    "{flag} {}: cannot create the folder {}: {}",
                    file.display(),
                    dir.display(),
                    lumos_trace::output_words(dir, &e)
                )
            }),
        _ => Ok(()),
    }
}

/// Whether `output` is where this process's standard output goes
/// (`-o /dev/stdout`, or the file the shell redirected it to).
pub fn is_standard_output(output: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (Ok(a), Ok(b)) = (std::fs::metadata(output), std::fs::metadata("/dev/stdout")) else {
            return false;
        };
        (a.dev(), a.ino()) == (b.dev(), b.ino())
    }
    #[cfg(not(unix))]
    {
        output == Path::new("/dev/stdout")
    }
}

/// Whether two paths, whose metadata are `a` and `b`, are one file.
#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata, _: &Path, _: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.is_file() && (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(a: &std::fs::Metadata, _: &std::fs::Metadata, x: &Path, y: &Path) -> bool {
    a.is_file() && std::fs::canonicalize(x).ok() == std::fs::canonicalize(y).ok()
}

/// `work` on every file in parallel, with a progress bar of the bytes
/// read on stderr (when it is a terminal); the results in the order given.
pub fn each_file<T: Send>(files: &[PathBuf], work: impl Fn(&Path) -> T + Sync) -> Vec<T> {
    let mut out = Vec::with_capacity(files.len());
    let all_at_once = files.len().max(1);
    let pushed = in_windows(files, all_at_once, work, |r| {
        out.push(r);
        Ok::<_, Infallible>(())
    });
    pushed.unwrap_or_else(|never| match never {});
    out
}

/// [`each_file`] for results used one at a time, in the order given, that
/// need not all be held: the files are worked on a window at a time (one
/// per thread), and each window's results go to `then` before the next
/// window starts. Stops at the first error of `then`, reading no more.
pub fn each_file_then<T: Send>(
    files: &[PathBuf],
    work: impl Fn(&Path) -> T + Sync,
    then: impl FnMut(T) -> Result<()>,
) -> Result<()> {
    in_windows(files, rayon::current_num_threads().max(1), work, then)
}

/// `work` on `window` files at a time in parallel, their results handed
/// to `then` in order, with a progress bar of the bytes read.
fn in_windows<T: Send, E>(
    files: &[PathBuf],
    window: usize,
    work: impl Fn(&Path) -> T + Sync,
    mut then: impl FnMut(T) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let lens: Vec<u64> = (files.iter())
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .collect();
    let bar = progress::bytes(lens.iter().sum(), "reading");
    for (files, lens) in files.chunks(window).zip(lens.chunks(window)) {
        let done: Vec<T> = (files.par_iter().zip(lens))
            .map(|(f, &len)| {
                let r = work(f);
                bar.inc(len);
                r
            })
            .collect();
        for r in done {
            then(r)?;
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// A [`MemoryGuard`] for reading `total` files for `purpose`; an
/// unreadable `LUMOS_MEMORY_LIMIT` is a usage error.
pub fn memory_guard(total: usize, purpose: ReadFor) -> Result<MemoryGuard> {
    MemoryGuard::new(total, purpose).map_err(|e| crate::usage::usage(e.to_string()))
}

/// The [`MemoryGuard`] for reading `files` as the ranks of a job, which a
/// joint replay then checks too ([`lumos_report::room_to_replay`]).
pub fn job_guard(files: &[PathBuf]) -> Result<MemoryGuard> {
    memory_guard(files.len(), ReadFor::Job)
}

/// Reads every file in parallel ([`each_file`]). Each result keeps its own
/// error so one bad file does not hide the others.
pub fn read_all(files: &[PathBuf]) -> Vec<Result<Loaded>> {
    each_file(files, read_one)
}

/// An input that could not be read, as the error its reader gave (a
/// [`ReadError`] or a [`StoreError`], which [`unreadable_of`] and the exit
/// codes recognise).
pub fn input_error(e: InputError) -> anyhow::Error {
    match e {
        InputError::Trace(e) => e.into(),
        InputError::Store(e) => e.into(),
        e @ (InputError::SameRank { .. } | InputError::UnknownRank(_)) => {
            anyhow::Error::msg(e.to_string())
        }
    }
}

/// Reads every file in parallel and builds each trace's rank, dropping the
/// trace as soon as its rank is built (memory: the ranks, and one trace
/// per thread at a time, where [`read_all`] holds every trace), with
/// [`each_file`]'s progress bar. Each result keeps its own error so one
/// bad file does not hide the others.
///
/// `guard` ([`job_guard`]) stops the read (an error) once the ranks would
/// outgrow the machine.
pub fn prepare_all(files: &[PathBuf], guard: &MemoryGuard) -> Result<Vec<Result<Prepared>>> {
    let prepared = each_file(files, |f| {
        let prepared = guard.read(|| lumos_store::prepare(f).map_err(input_error));
        prepared.unwrap_or_else(|| Err(anyhow::anyhow!("not read")))
    });
    guard.check()?;
    Ok(prepared)
}

/// Reads and builds every file of a job in parallel, dropping each trace as
/// soon as its graph is built (memory: one trace per thread at a time).
/// Files that cannot be read are reported and returned apart (the job
/// names their ranks as unreadable).
/// `guard` ([`job_guard`]) stops the read (an error) once the ranks would
/// outgrow the machine.
pub fn load_ranks(
    files: &[PathBuf],
    guard: &MemoryGuard,
) -> Result<(Vec<RankInput>, Vec<Unreadable>)> {
    let bar = progress::count(files.len() as u64, "reading ranks");
    let results: Vec<Result<RankInput>> = files
        .par_iter()
        .map(|f| {
            let r = guard.read(|| read_rank(f));
            bar.inc(1);
            r.unwrap_or_else(|| Err(anyhow::anyhow!("not read")))
        })
        .collect();
    bar.finish_and_clear();
    guard.check()?;
    let mut unreadable = Vec::new();
    let mut out = Vec::new();
    for r in results {
        match r {
            Ok(l) => out.push(l),
            Err(e) => {
                output::error(&e);
                unreadable.extend(unreadable_of(&e));
            }
        }
    }
    Ok((out, unreadable))
}

/// Prints the read errors among `read` and returns the files of the job
/// they name, dropping the inputs read.
pub fn unreadable_in<T>(read: Vec<Result<T>>) -> Vec<Unreadable> {
    let mut unreadable = Vec::new();
    for e in read.into_iter().filter_map(Result::err) {
        output::error(&e);
        unreadable.extend(unreadable_of(&e));
    }
    unreadable
}

/// The file an error of [`read_one`] or [`read_rank`] could not read, for
/// the job to name its rank as unreadable.
pub fn unreadable_of(e: &anyhow::Error) -> Option<Unreadable> {
    if let Some(e) = e.downcast_ref::<ReadError>() {
        return Some(Unreadable::of(e));
    }
    let e = e.downcast_ref::<StoreError>()?;
    Some(Unreadable {
        path: e.path.clone(),
        rank: lumos_trace::rank_from_file_name(&e.path),
        error: e.to_string(),
    })
}

/// Loads a job to replay from representatives
/// ([`lumos_store::load_representatives`]: of an `.lgraph` file its
/// summary only, one graph kept per group). Files that cannot be read are
/// reported and left out; the flag says whether all were read.
pub fn load_representatives(files: &[PathBuf]) -> (Representatives, bool) {
    let r = lumos_store::load_representatives(files, &|| {});
    for e in &r.errors {
        output::error(e);
    }
    let ok = r.errors.is_empty();
    (r, ok)
}

/// Frees `value` on the dropper thread, so the caller goes on (to its
/// report, its next input, or exit) while a large trace or graph is
/// freed: freeing a 1 GB trace's millions of allocations takes a tenth of
/// a second or more, which nothing needs to wait for. When the process
/// ends first, the operating system takes the memory back whole.
///
/// One thread frees everything, in the order given, and at most
/// [`DROPS_WAITING`] values wait for it: a caller that gives values
/// faster than they are freed waits instead of piling them up (each
/// waiting value is memory not yet returned). Where the thread cannot be
/// started, the value is freed here.
pub fn drop_in_background<T: Send + 'static>(value: T) {
    let value: Box<dyn Send> = Box::new(value);
    match dropper() {
        // A send fails only if the thread has gone, and gives the value
        // back, to be freed here.
        Some(tx) => drop(tx.send(value)),
        None => drop(value),
    }
}

/// How many values [`drop_in_background`] lets wait for the dropper
/// thread (besides the one it is freeing).
pub const DROPS_WAITING: usize = 2;

/// The channel to the dropper thread, started on first use; `None` where
/// it could not be started.
fn dropper() -> Option<&'static SyncSender<Box<dyn Send>>> {
    static DROPPER: OnceLock<Option<SyncSender<Box<dyn Send>>>> = OnceLock::new();
    DROPPER
        .get_or_init(|| {
            let (tx, rx) = sync_channel::<Box<dyn Send>>(DROPS_WAITING);
            std::thread::Builder::new()
                .name("lumos-drop".into())
                .spawn(move || rx.into_iter().for_each(drop))
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Counts its drops and the threads they ran on.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            assert_eq!(std::thread::current().name(), Some("lumos-drop"));
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn every_value_is_freed_on_the_one_dropper_thread() {
        let dropped = Arc::new(AtomicUsize::new(0));
        for _ in 0..50 {
            drop_in_background(Counted(dropped.clone()));
        }
        // The channel holds at most DROPS_WAITING: all but those (and
        // the one being freed) are gone by the time the last is sent.
        assert!(dropped.load(Ordering::SeqCst) >= 50 - DROPS_WAITING - 1);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while dropped.load(Ordering::SeqCst) < 50 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(dropped.load(Ordering::SeqCst), 50);
    }

    #[test]
    fn files_go_to_then_in_order_a_window_at_a_time() {
        let files: Vec<PathBuf> = (0..10).map(|i| PathBuf::from(format!("f{i}"))).collect();
        let window = rayon::current_num_threads().max(1);
        let worked = AtomicUsize::new(0);
        // Each result is its file; `then` sees them in order, and at most
        // a window of results has been made and not yet taken.
        let mut seen = Vec::new();
        let work = |f: &Path| {
            worked.fetch_add(1, Ordering::SeqCst);
            f.to_path_buf()
        };
        each_file_then(&files, work, |f| {
            let taken = seen.len() + 1;
            assert!(worked.load(Ordering::SeqCst) <= taken - 1 + window);
            seen.push(f);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, files);
        // An error stops the reading: no file after the failing one's
        // window is worked on.
        worked.store(0, Ordering::SeqCst);
        let e = each_file_then(&files, work, |f| match f.to_str() {
            Some("f0") => bail!("{}: bad", f.display()),
            _ => Ok(()),
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "f0: bad");
        assert_eq!(worked.load(Ordering::SeqCst), window.min(files.len()));
    }
}
