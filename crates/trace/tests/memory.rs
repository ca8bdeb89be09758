//! `[memory]` instant events: kept in `Trace::memory` with the allocator's
//! totals, and still counted as skipped instant events (they are not
//! tasks), so the reader's counts are what they were before they were kept.

use std::path::Path;

use lumos_trace::{read_bytes, read_path, MemoryEvent, SkipReason};

#[test]
fn memory_events_are_kept_with_their_totals() {
    let text = r#"{"traceEvents": [
      {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
       "ts": 10.5, "args": {"Total Reserved": 2048, "Total Allocated": 1024, "Bytes": 512,
       "Addr": 1, "Device Id": 0, "Device Type": 1}},
      {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 12,
       "args": {"Device Type": 0, "Device Id": -1, "Bytes": -4}},
      {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 13, "args": {}},
      {"ph": "i", "s": "t", "name": "other", "pid": 1, "tid": 1, "ts": 14, "args": {"Bytes": 4}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 20}
    ]}"#;
    let t = read_bytes(Path::new("m.json"), text.as_bytes()).unwrap();
    assert_eq!(
        t.memory,
        vec![
            MemoryEvent {
                ts_ns: 10_500,
                device_type: 1,
                device_id: 0,
                bytes: 512,
                total_allocated: Some(1024),
                total_reserved: Some(2048),
            },
            MemoryEvent {
                ts_ns: 12_000,
                device_type: 0,
                device_id: -1,
                bytes: -4,
                total_allocated: None,
                total_reserved: None,
            },
        ]
    );
    // Every instant event is still counted as skipped: not a task.
    let instants: u64 = t
        .skipped
        .counts
        .iter()
        .filter(|((_, r), _)| *r == SkipReason::NotATask)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(instants, 4);
    assert_eq!(t.events.len(), 1);
}

#[test]
fn corpus_memory_events() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    // Newer profilers record the allocator's totals; the 2021 capture only
    // the bytes of each allocation and free.
    let vit = read_path(&corpus.path("single-rank/h100-vit-inference.json.gz")).unwrap();
    assert_eq!(vit.memory.len(), 620);
    assert!(vit.memory.iter().all(|m| m.total_allocated.is_some()));
    let a = read_path(&corpus.path("single-rank/v100-resnet50-2021-capture-a.json.gz")).unwrap();
    assert_eq!(a.memory.len(), 12838);
    assert!(a.memory.iter().all(|m| m.total_allocated.is_none()));
    assert_eq!(a.memory.iter().filter(|m| m.device_type == 1).count(), 8220);
}
