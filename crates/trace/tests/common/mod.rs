//! Helpers shared by the reader's hostile-input tests: read a hand-made
//! input from memory and from a file, and compare, or build one.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};

use lumos_testkit::{gunzip_file, Corpus, TempDir};
use lumos_trace::{read_bytes, read_bytes_with_chunk, read_path, ReadError, SkipReason, Trace};

pub fn gz_bytes(corpus: &Corpus, rel: &str) -> Vec<u8> {
    std::fs::read(corpus.path(rel)).expect("corpus trace")
}

pub fn json_bytes(corpus: &Corpus, rel: &str) -> Vec<u8> {
    gunzip_file(&corpus.path(rel))
}

/// `data` written as `name` in a fresh temp dir (removed with the dir).
pub fn temp_file(name: &str, data: &[u8]) -> (TempDir, PathBuf) {
    let dir = TempDir::new("bad-input");
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    (dir, path)
}

/// Reads `data` both from memory and from a temp file called `name`, checks
/// the two agree, and returns the error.
pub fn read_err(name: &str, data: &[u8]) -> ReadError {
    let must_fail = |r: Result<Trace, ReadError>| match r {
        Ok(t) => panic!("{name}: read {} events, expected an error", t.events_total),
        Err(e) => e,
    };
    let in_memory = must_fail(read_bytes(Path::new(name), data));
    let (_dir, file) = temp_file(name, data);
    let on_disk = must_fail(read_path(&file));
    assert_eq!(
        in_memory.kind.to_string(),
        on_disk.kind.to_string(),
        "memory and file disagree"
    );
    let msg = on_disk.to_string();
    assert!(
        msg.contains(&file.display().to_string()),
        "message must name the file: {msg}"
    );
    in_memory
}

pub fn read_ok(name: &str, data: &[u8]) -> Trace {
    read_bytes(Path::new(name), data).unwrap_or_else(|e| panic!("{e}"))
}

/// Everything a read gives, in comparable form.
pub fn summary(r: &Result<Trace, ReadError>) -> String {
    match r {
        Err(e) => format!("error: {e}"),
        Ok(t) => format!(
            "{} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            t.gzipped,
            t.events_total,
            t.meta,
            t.strings,
            t.events,
            t.flows,
            t.track_names,
            t.skipped,
            t.warnings,
        ),
    }
}

/// [`read_ok`], checking that chunks of 1 and 7 bytes read the same.
pub fn read_ok_any_chunk(name: &str, data: &[u8]) -> Trace {
    let t = read_ok(name, data);
    let want = summary(&Ok(t.clone()));
    for chunk in [1, 7] {
        let got = read_bytes_with_chunk(Path::new(name), data, chunk);
        assert_eq!(summary(&got), want, "{name}: chunks of {chunk} bytes");
    }
    t
}

/// `{"traceEvents": [` + events + `]}`.
pub fn trace_of(events: &[&str]) -> String {
    format!("{{\"traceEvents\": [{}]}}", events.join(",\n"))
}

pub const KERNEL: &str =
    r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5}"#;

pub fn skipped(t: &Trace, cat: &str, reason: SkipReason) -> u64 {
    t.skipped
        .counts
        .get(&(cat.to_string(), reason))
        .copied()
        .unwrap_or(0)
}
