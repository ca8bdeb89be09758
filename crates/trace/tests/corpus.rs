//! Every trace in ../shared/traces loads, and what the reader kept matches
//! counts computed independently with serde_json.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::collections::BTreeMap;
use std::path::Path;

use lumos_testkit::gunzip_file;
use lumos_trace::{read_path, Category, SkipReason};

fn load_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&gunzip_file(path)).unwrap()
}

/// Counts, per kept category, the complete events with a name, pid, tid,
/// numeric ts and non-negative numeric dur, from a plain serde_json parse.
fn independent_counts(doc: &serde_json::Value) -> (BTreeMap<&'static str, u64>, u64, u64) {
    let events = doc["traceEvents"].as_array().unwrap();
    let mut kept = BTreeMap::new();
    let mut flows = 0;
    for e in events {
        let ph = e["ph"].as_str().unwrap_or("");
        let cat = e["cat"].as_str().unwrap_or("");
        if ph == "s" || ph == "f" {
            if matches!(cat, "ac2g" | "async_cpu_to_gpu" | "async" | "fwdbwd") {
                flows += 1;
            }
            continue;
        }
        if ph != "X" {
            continue;
        }
        let Some(c) = Category::parse(cat) else {
            continue;
        };
        let ok = e["ts"].is_number()
            && e["dur"].as_f64().is_some_and(|d| d >= 0.0)
            && e["name"].is_string()
            && !e["pid"].is_null()
            && !e["tid"].is_null();
        if ok {
            *kept.entry(c.as_str()).or_insert(0) += 1;
        }
    }
    (kept, flows, events.len() as u64)
}

#[test]
fn every_corpus_trace_loads_with_independently_checked_counts() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let files = corpus.traces("");
    assert!(files.len() >= 20, "corpus looks incomplete: {files:?}");
    for path in files {
        let trace = read_path(&path).unwrap_or_else(|e| panic!("{e}"));
        let doc = load_json(&path);
        let (want, want_flows, total) = independent_counts(&doc);
        let mut got = BTreeMap::new();
        for e in &trace.events {
            *got.entry(e.category.as_str()).or_insert(0u64) += 1;
        }
        assert_eq!(got, want, "{}", path.display());
        assert_eq!(trace.flows.len() as u64, want_flows, "{}", path.display());
        assert_eq!(trace.events_total, total, "{}", path.display());
        // Everything not kept is accounted for as skipped or metadata.
        let meta = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "M")
            .count() as u64;
        assert_eq!(
            trace.events.len() as u64 + trace.flows.len() as u64 + trace.skipped.total() + meta,
            total,
            "{}: kept + flows + skipped + metadata must be every event",
            path.display()
        );
    }
}

#[test]
fn metadata_rank_and_devices() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let t = read_path(&corpus.path("single-rank/a100-recsys-rank3of8.json.gz")).unwrap();
    assert_eq!(t.meta.rank, 3);
    assert_eq!(t.meta.world_size, Some(8));
    assert!(!t.meta.devices.is_empty());
    let t = read_path(&corpus.path("micro/cpu-only-rank34.json.gz")).unwrap();
    assert_eq!(t.meta.rank, 34);
    assert_eq!(t.meta.world_size, Some(300));
    // pg_count says 10, but pg_config lists 11 groups; the list wins.
    assert_eq!(t.meta.process_groups.len(), 11);
    assert_eq!(t.meta.base_time_ns, Some(1719853884000000000));
    let t = read_path(&corpus.path("single-rank/a100-ddp-rank0of2-event-record.json.gz")).unwrap();
    assert_eq!(t.meta.process_groups[0].ranks, vec![0, 1]);
    // Python frames are counted as not modeled, not silently dropped.
    let t = read_path(&corpus.path("single-rank/h100-vit-inference.json.gz")).unwrap();
    assert!(t
        .skipped
        .counts
        .get(&("python_function".to_string(), SkipReason::NotModeled))
        .is_some_and(|&n| n > 0));
}

#[test]
fn timestamps_are_integer_nanoseconds() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    // Fractional microseconds relative to baseTimeNanoseconds.
    let t = read_path(&corpus.path("micro/h100-one-kernel.json.gz")).unwrap();
    let k = t
        .events
        .iter()
        .find(|e| e.category == Category::Kernel)
        .unwrap();
    assert_eq!(k.ts_ns, 88_511_388_202_785);
    assert_eq!(k.dur_ns, 20);
    // Absolute integer microseconds keep full precision.
    let t = read_path(&corpus.path("single-rank/v100-resnet50-2021-capture-a.json.gz")).unwrap();
    assert!(t.events.iter().all(|e| e.ts_ns % 1000 == 0));
    assert!(t.events.iter().any(|e| e.ts_ns > 1_600_000_000_000_000_000));
}

/// A trace whose name is not UTF-8 takes its rank from its name as the
/// same trace named in UTF-8 does (the name was not read at all: rank 0,
/// `default`, where `n_rank3.json.gz` is rank 3 by its name).
#[cfg(unix)]
#[test]
fn a_name_that_is_not_utf8_gives_its_rank() {
    use std::os::unix::ffi::OsStrExt;
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let dir = lumos_testkit::TempDir::new("trace-rank-not-utf8");
    // It records no rank of its own (distributedInfo).
    let trace = c.path("single-rank/mi250-toy-train.json.gz");
    let mut got = Vec::new();
    for name in [&b"n_rank3.json.gz"[..], b"n\xff_rank3.json.gz"] {
        let path = dir.join(std::ffi::OsStr::from_bytes(name));
        std::fs::copy(&trace, &path).unwrap();
        let meta = read_path(&path).unwrap().meta;
        got.push((meta.rank, meta.rank_source));
    }
    assert_eq!(got, [(3, lumos_trace::RankSource::FileName); 2]);
}

/// The reader's warning about events that end absurdly far past the rest
/// of their trace.
fn absurd_end_warnings(t: &lumos_trace::Trace) -> Vec<&String> {
    (t.warnings.iter())
        .filter(|w| w.contains("after the trace's last event start"))
        .collect()
}

#[test]
fn no_corpus_trace_has_an_event_that_ends_absurdly_late() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for path in corpus.traces("") {
        let trace = read_path(&path).unwrap_or_else(|e| panic!("{e}"));
        let w = absurd_end_warnings(&trace);
        assert!(w.is_empty(), "{}: {w:?}", path.display());
        assert_eq!(trace.absurd_durations, 0, "{}", path.display());
    }
}

#[test]
fn a_profiler_step_of_1e12_us_is_warned_about_and_kept_as_written() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rel = "single-rank/mi250-toy-train.json.gz";
    let mut doc = load_json(&corpus.path(rel));
    let events = doc["traceEvents"].as_array_mut().unwrap();
    let (index, step) = (events.iter_mut().enumerate())
        .find(|(_, e)| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("ProfilerStep#"))
        })
        .unwrap();
    step["dur"] = serde_json::json!(1e12);
    let name = step["name"].as_str().unwrap().to_owned();
    let data = serde_json::to_vec(&doc).unwrap();
    let t = lumos_trace::read_bytes(Path::new("edited.json"), &data).unwrap();
    let w = absurd_end_warnings(&t);
    assert_eq!(w.len(), 1, "{:?}", t.warnings);
    // Counted where a program reads it, as the warning counts it.
    assert_eq!(t.absurd_durations, 1);
    let w = w[0];
    for part in [
        "1 event ends more than 1000.000 ms after the trace's last event start",
        &format!("first {name:?} at traceEvents[{index}]"),
        "dur 1000000000000.000 us",
        "kept as written",
    ] {
        assert!(w.contains(part), "{part:?} not in {w}");
    }
    // Kept as written: the step is that long.
    let kept = (t.events.iter()).find(|e| t.name(e) == name).unwrap();
    assert_eq!(kept.dur_ns, 1_000_000_000_000_000);
}
