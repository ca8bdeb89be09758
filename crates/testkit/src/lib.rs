//! Helpers shared by lumos's tests and benches (a dev-dependency only, never
//! published): where the real trace corpus is, skipping cleanly when it is
//! absent, throw-away directories, and gzip in memory.
//!
//! The corpus is `$LUMOS_CORPUS` when set (a relative path is taken from the
//! workspace root), else `../shared/traces` beside the workspace root. A test
//! that reads it starts with
//!
//! ```no_run
//! let Some(corpus) = lumos_testkit::corpus() else { return };
//! let trace = corpus.path("micro/a100-event-sync.json.gz");
//! ```
//!
//! Only a missing corpus folder skips, with one line on stderr per test
//! binary. A file missing from a corpus that is there panics, so a test
//! cannot pass by skipping what it was written to check; and with
//! `LUMOS_REQUIRE_CORPUS=1` (CI sets it) a missing folder panics too.
#![deny(missing_docs)]

use std::io::{Read, Write};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

/// The variable naming the corpus folder.
pub const CORPUS_ENV: &str = "LUMOS_CORPUS";

/// The variable that turns a missing corpus from a skip into a failure.
pub const REQUIRE_CORPUS_ENV: &str = "LUMOS_REQUIRE_CORPUS";

/// The workspace root (the folder of the top `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    // This crate sits at <root>/crates/testkit.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .expect("crates/testkit is two levels below the root")
        .to_owned()
}

/// Where the corpus is expected, whether or not it is there.
pub fn corpus_root() -> PathBuf {
    match std::env::var_os(CORPUS_ENV) {
        Some(p) if !p.is_empty() => workspace_root().join(p),
        _ => workspace_root().join("../shared/traces"),
    }
}

/// The corpus, or `None` (after saying so once on stderr) when its folder
/// is missing. Panics instead when `LUMOS_REQUIRE_CORPUS` is set.
#[track_caller]
pub fn corpus() -> Option<Corpus> {
    let root = corpus_root();
    if root.is_dir() {
        return Some(Corpus { root });
    }
    let required = std::env::var_os(REQUIRE_CORPUS_ENV).is_some_and(|v| !v.is_empty());
    assert!(
        !required,
        "corpus not found at {} ({REQUIRE_CORPUS_ENV} is set; set {CORPUS_ENV})",
        root.display()
    );
    static SAID: Once = Once::new();
    SAID.call_once(|| {
        // Straight to the process's stderr: the test harness captures
        // `eprintln!` of passing tests, and a skip must be seen.
        let _ = writeln!(
            std::io::stderr(),
            "skipping: corpus not found at {} (set {CORPUS_ENV})",
            root.display()
        );
    });
    None
}

/// The real trace corpus, known to be present.
#[derive(Debug, Clone)]
pub struct Corpus {
    root: PathBuf,
}

impl Corpus {
    /// The corpus folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A file or folder of the corpus, by its path inside it. Panics when it
    /// does not exist: the corpus is there, so the test is wrong or the
    /// corpus changed, and either must fail loudly.
    #[track_caller]
    pub fn path(&self, rel: &str) -> PathBuf {
        let p = self.root.join(rel);
        assert!(
            p.exists(),
            "{rel} is not in the corpus at {}",
            self.root.display()
        );
        p
    }

    /// Every `.json.gz` trace under `rel` (`""` for the whole corpus), at any
    /// depth, sorted. Panics when there is none.
    pub fn traces(&self, rel: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.path(rel)];
        while let Some(dir) = stack.pop() {
            let entries = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: cannot list: {e}", dir.display()));
            for entry in entries {
                let p = entry
                    .unwrap_or_else(|e| panic!("{}: cannot list: {e}", dir.display()))
                    .path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.to_string_lossy().ends_with(".json.gz") {
                    out.push(p);
                }
            }
        }
        out.sort();
        assert!(
            !out.is_empty(),
            "no .json.gz traces under {}",
            self.root.join(rel).display()
        );
        out
    }
}

/// A fresh, empty directory in the system temp dir, unique to this process
/// and call, removed when dropped, except while a panic unwinds, so a
/// failed test leaves its files to look at.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `<temp>/lumos-<name>-<pid>-<n>`.
    pub fn new(name: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("lumos-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("{}: cannot create: {e}", path.display()));
        TempDir { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// The decompressed bytes of a gzip file (several members are read as one).
pub fn gunzip_file(path: &Path) -> Vec<u8> {
    let gz = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    gunzip(&gz).unwrap_or_else(|e| panic!("{}: not gzip: {e}", path.display()))
}

/// `data` decompressed (several members are read as one).
pub fn gunzip(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data).read_to_end(&mut out)?;
    Ok(out)
}

/// `data` gzipped (fast level: tests want speed, not size).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).expect("writing to memory");
    enc.finish().expect("writing to memory")
}

/// A size from this process's `/proc/self/status` (`key` with its colon,
/// e.g. `"VmHWM:"` for the resident high-water mark), in KiB (which the
/// file calls kB); 0 where the file or the key is missing (not Linux).
/// For the benches' and examples' memory figures.
pub fn proc_status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// This process's CPU time so far, user and system, in seconds (from
/// `/proc/self/stat`, in clock ticks of 1/100 s as on Linux); 0 where the
/// file is missing. For the benches' and examples' CPU figures.
pub fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may
    // hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    ticks as f64 / 100.0
}

/// Resets this process's resident high-water mark (`VmHWM`) to its
/// current resident size, through `/proc/self/clear_refs` (Linux 4.0+),
/// so the next [`proc_status_kib`]`("VmHWM:")` is the peak since. False
/// where the kernel does not allow it: peaks are then cumulative.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_dirs_are_fresh_distinct_and_removed() {
        let a = TempDir::new("testkit");
        let b = TempDir::new("testkit");
        assert_ne!(a.path(), b.path());
        std::fs::write(a.join("f"), b"x").unwrap();
        let kept = a.path().to_owned();
        drop(a);
        assert!(!kept.exists());
    }

    #[test]
    fn gzip_round_trips() {
        let text = b"{\"traceEvents\": []}";
        assert_eq!(gunzip(&gzip(text)).unwrap(), text);
        assert!(gunzip(b"not gzip").is_err());
    }
}
