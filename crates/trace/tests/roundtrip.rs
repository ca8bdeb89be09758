//! What the writer writes, the reader reads back: the same events, times
//! (ns), names, args and flows, in both layouts, plain and gzipped.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::path::Path;

use lumos_trace::{
    read_bytes, read_path, write_gz_atomic, Category, DeviceProperties, DistributedInfo, ErrorKind,
    Event, FlowKind, FlowPhase, Ident, Input, InputDims, KinetoWriter, Layout, PgConfig, Trace,
};

/// One complete event as written.
struct Spec {
    cat: Category,
    name: &'static str,
    pid: i64,
    tid: i64,
    ts: i64,
    dur: i64,
    correlation: Option<u64>,
    external_id: Option<u64>,
    /// GPU work: `(device, stream)`.
    gpu: Option<(i64, i64)>,
}

const fn spec(cat: Category, name: &'static str, pid: i64, tid: i64, ts: i64, dur: i64) -> Spec {
    Spec {
        cat,
        name,
        pid,
        tid,
        ts,
        dur,
        correlation: None,
        external_id: None,
        gpu: None,
    }
}

const PID: i64 = 4242;
const MAIN: i64 = 4242;
const AUTOGRAD: i64 = 4245;
/// An absolute clock (no base time): ns since the epoch.
const T0: i64 = 1_717_171_717_123_456_789;

fn specs() -> Vec<Spec> {
    vec![
        spec(
            Category::UserAnnotation,
            "ProfilerStep#1 ✓ 步骤",
            PID,
            MAIN,
            T0,
            90_001,
        ),
        Spec {
            external_id: Some(5),
            ..spec(
                Category::CpuOp,
                r#"aten::mm "quoted" \ back\slash"#,
                PID,
                MAIN,
                T0 + 1,
                40_000,
            )
        },
        Spec {
            correlation: Some(11),
            external_id: Some(5),
            ..spec(
                Category::Runtime,
                "cudaLaunchKernel",
                PID,
                MAIN,
                T0 + 2_000,
                4_567,
            )
        },
        Spec {
            correlation: Some(11),
            external_id: Some(5),
            gpu: Some((0, 7)),
            ..spec(
                Category::Kernel,
                "ampere_gemm<\"tn\">\t{x}",
                0,
                7,
                T0 + 9_000,
                20_250,
            )
        },
        Spec {
            correlation: Some(12),
            ..spec(
                Category::Runtime,
                "cudaMemcpyAsync",
                PID,
                AUTOGRAD,
                T0 + 30_000,
                999,
            )
        },
        Spec {
            correlation: Some(12),
            gpu: Some((0, 20)),
            ..spec(
                Category::Memcpy,
                "Memcpy HtoD (Pinned -> Device)",
                0,
                20,
                T0 + 31_000,
                1,
            )
        },
        Spec {
            correlation: Some(13),
            gpu: Some((0, 24)),
            ..spec(
                Category::Kernel,
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                0,
                24,
                T0 + 32_000,
                0,
            )
        },
        Spec {
            correlation: Some(14),
            ..spec(
                Category::CudaSync,
                "Stream Wait Event",
                0,
                7,
                T0 + 40_000,
                600,
            )
        },
        spec(
            Category::CpuOp,
            "ctrl \u{1}\u{1f}\n\r end",
            PID,
            AUTOGRAD,
            // Among the others: a start of 0 in a trace of absolute
            // times is refused (outlying starts, tests/hostile.rs).
            T0 + 41_000,
            1,
        ),
    ]
}

/// Writes the test trace through `w`.
fn write_trace<W: std::io::Write>(w: &mut KinetoWriter<W>) {
    w.schema_version(1);
    w.device_properties(&[DeviceProperties {
        name: "NVIDIA H100 80GB HBM3",
        num_sms: 132,
        total_global_mem: 85_000_000_000,
        compute_major: 9,
        ..Default::default()
    }]);
    w.distributed_info(&DistributedInfo {
        backend: Some("nccl"),
        rank: Some(3),
        world_size: Some(4),
        process_groups: Some(&[PgConfig {
            name: "1",
            desc: "DATA_PARALLEL_GROUP",
            backend_config: "cuda:nccl",
            size: 2,
            ranks: &[1, 3],
        }]),
        nccl_version: Some("2.21.5"),
        written_ranks: Some(&[3, 1]),
        merged_ranks: None,
    });
    w.process_name(PID, "python3");
    w.thread_name(PID, MAIN, "thread 4242 (python3)");
    w.thread_name(PID, AUTOGRAD, "thread 4245 (pt_autograd_0)");
    w.thread_name(0, 7, "stream 7");
    for s in specs() {
        let mut a = w.complete(s.cat, s.name, s.pid, s.tid, s.ts, s.dur);
        if let Some(e) = s.external_id {
            a.external_id(e);
        }
        if let Some((device, stream)) = s.gpu {
            a.device(device).stream(stream);
        }
        if let Some(c) = s.correlation {
            a.correlation(c);
        }
        match s.cat {
            Category::CpuOp if s.external_id.is_some() => {
                a.input_dims([&[2048, 6144][..], &[6144, 9216], &[]])
                    .input_types(["c10::BFloat16", "c10::BFloat16", ""]);
            }
            Category::Memcpy => {
                a.uint("bytes", 1 << 20);
            }
            Category::Kernel if s.gpu == Some((0, 24)) => {
                a.str("Collective name", "allreduce")
                    .uint("In msg nelems", 1024)
                    .str("dtype", "BFloat16")
                    .str("Process Group Name", "1")
                    .str("Process Group Ranks", "[1, 3]")
                    .int("Seq", 7);
            }
            Category::CudaSync => {
                a.str("cuda_sync_kind", "Stream Wait Event")
                    .int("wait_on_stream", 20)
                    .int("wait_on_cuda_event_record_corr_id", 12);
            }
            _ => {}
        }
    }
    for (phase, pid, tid, ts) in [
        (FlowPhase::Start, PID, MAIN, T0 + 2_000),
        (FlowPhase::End, 0, 7, T0 + 9_000),
    ] {
        w.flow(FlowKind::Launch, phase, 11, pid, tid, ts);
    }
    w.global_instant("Record Window End", T0 + 100_000);
    w.trace_name("roundtrip");
}

fn written(layout: Layout) -> Vec<u8> {
    let mut w = KinetoWriter::new(Vec::new(), layout);
    write_trace(&mut w);
    w.finish().unwrap()
}

fn check(t: &Trace) {
    assert_eq!(t.skipped.total(), 1, "only the instant: {:?}", t.skipped);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(t.meta.schema_version, Some(1));
    assert_eq!((t.meta.rank, t.meta.world_size), (3, Some(4)));
    assert_eq!(t.meta.written_ranks, [1, 3]);
    assert_eq!(t.meta.process_groups[0].ranks, [1, 3]);
    assert_eq!(t.meta.devices[0].num_sms, Some(132));
    let specs = specs();
    assert_eq!(t.events.len(), specs.len());
    for (e, s) in t.events.iter().zip(&specs) {
        check_event(t, e, s);
    }
    let mm = t.events[1].extra.as_deref().unwrap();
    assert_eq!(
        mm.input_dims.as_ref().unwrap().iter().collect::<Vec<_>>(),
        [
            Input::Tensor(&[2048, 6144]),
            Input::Tensor(&[6144, 9216]),
            Input::Tensor(&[])
        ]
    );
    let coll = t.events[6].extra.as_deref().unwrap().collective.as_ref();
    let coll = coll.unwrap();
    assert_eq!(coll.name.as_deref(), Some("allreduce"));
    assert_eq!(coll.pg_ranks.as_ref().unwrap().ranks, [1, 3]);
    assert_eq!(coll.bytes(), Some(2048));
    let sync = t.events[7].extra.as_deref().unwrap();
    assert_eq!(sync.wait_on_stream(), Some(20));
    assert_eq!(sync.wait_on_event_record_correlation(), Some(12));
    assert_eq!(t.events[5].extra.as_deref().unwrap().bytes(), Some(1 << 20));
    // The launch flow links the runtime call to its kernel.
    assert_eq!(t.flows.len(), 2);
    let (s, f) = (&t.flows[0], &t.flows[1]);
    assert_eq!(
        (s.kind, s.phase, f.phase),
        (FlowKind::Launch, FlowPhase::Start, FlowPhase::End)
    );
    assert_eq!((s.id, f.id), (11, 11));
    assert_eq!(
        (s.pid, s.tid, s.ts_ns),
        (Ident::Num(PID), Ident::Num(MAIN), t.events[2].ts_ns)
    );
    assert_eq!(
        (f.pid, f.tid, f.ts_ns),
        (Ident::Num(0), Ident::Num(7), t.events[3].ts_ns)
    );
    assert_eq!(t.events[2].correlation(), t.events[3].correlation());
    let names: Vec<&str> = t.track_names.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "python3",
            "thread 4242 (python3)",
            "thread 4245 (pt_autograd_0)",
            "stream 7"
        ]
    );
}

fn check_event(t: &Trace, e: &Event, s: &Spec) {
    assert_eq!(t.name(e), s.name);
    assert_eq!(e.category, s.cat, "{}", s.name);
    assert_eq!(
        (e.pid, e.tid),
        (Ident::Num(s.pid), Ident::Num(s.tid)),
        "{}",
        s.name
    );
    assert_eq!((e.ts_ns, e.dur_ns), (s.ts, s.dur), "{}", s.name);
    assert_eq!(e.correlation(), s.correlation, "{}", s.name);
    assert_eq!(e.external_id(), s.external_id, "{}", s.name);
    assert_eq!(e.device(), s.gpu.map(|g| g.0), "{}", s.name);
    assert_eq!(e.stream(), s.gpu.map(|g| g.1), "{}", s.name);
}

#[test]
fn written_traces_read_back_the_same() {
    for layout in [Layout::Compact, Layout::Lines] {
        let text = written(layout);
        let t = read_bytes(Path::new("roundtrip.json"), &text).unwrap();
        check(&t);
        // Small chunks split the text anywhere: still the same trace.
        let chunked = lumos_trace::read_bytes_with_chunk(Path::new("r.json"), &text, 97).unwrap();
        assert_eq!(chunked.events, t.events);
    }
}

#[test]
fn gzipped_files_read_back_the_same() {
    let dir = std::env::temp_dir().join(format!("lumos-trace-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rank3.json.gz");
    write_gz_atomic(&path, |out| {
        let mut w = KinetoWriter::new(out, Layout::Lines);
        write_trace(&mut w);
        w.finish().map(drop)
    })
    .unwrap();
    let t = read_path(&path).unwrap();
    check(&t);
    assert!(t.gzipped);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn input_dims_are_shared_and_malformed_ones_counted() {
    let op = |dims: &str| {
        format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":1,"args":{{"Input Dims":{dims}}}}}"#
        )
    };
    let text = format!(
        r#"{{"traceEvents":[{},{},{},{}]}}"#,
        op("[[2, 3], [3, 4]]"),
        op("\"[[2, 3]]\""),
        op("[[2,3],[3,4]]"),
        op("{}"),
    );
    let t = read_bytes(Path::new("dims.json"), text.as_bytes()).unwrap();
    assert_eq!(t.events.len(), 4);
    let dims: Vec<Option<&InputDims>> = t
        .events
        .iter()
        .map(|e| e.extra.as_deref().and_then(|x| x.input_dims.as_ref()))
        .collect();
    assert_eq!(dims[0], dims[2]);
    assert_eq!((dims[1], dims[3]), (None, None));
    let bad = t.skipped.bad_args["Input Dims"];
    assert_eq!((bad.count, bad.first_index), (2, 1));
    assert_eq!(t.skipped.total(), 0);
    assert_eq!(
        t.warnings,
        ["2 events with a malformed \"Input Dims\" (first at traceEvents[1]): kept without it"]
    );
}

#[test]
fn sort_indices_read_back() {
    let mut w = KinetoWriter::new(Vec::new(), Layout::Compact);
    w.process_name(5, "rank 5");
    w.process_sort_index(5, 2);
    w.thread_sort_index(5, 7, -1);
    let bytes = w.finish().unwrap();
    let t = read_bytes(Path::new("sorts.json"), &bytes).unwrap();
    let got: Vec<_> = t
        .track_sorts
        .iter()
        .map(|s| (s.pid, s.tid, s.index))
        .collect();
    assert_eq!(
        got,
        [
            (Ident::Num(5), None, 2),
            (Ident::Num(5), Some(Ident::Num(7)), -1)
        ]
    );
    assert_eq!(t.track_names.len(), 1);
    assert_eq!(t.skipped.total(), 0);
}

#[test]
fn equal_input_types_share_one_text() {
    let op = |ty: &str| {
        format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":1,"args":{{"Input type":{ty}}}}}"#
        )
    };
    let text = format!(
        r#"{{"traceEvents":[{},{},{}]}}"#,
        op(r#"["float", "float"]"#),
        op(r#"["c10::BFloat16"]"#),
        op(r#"["float", "float"]"#),
    );
    let t = read_bytes(Path::new("types.json"), text.as_bytes()).unwrap();
    let types: Vec<&std::sync::Arc<str>> = t
        .events
        .iter()
        .map(|e| e.extra.as_deref().unwrap().input_type.as_ref().unwrap())
        .collect();
    assert_eq!(&**types[0], r#"["float", "float"]"#);
    assert_eq!(&**types[1], r#"["c10::BFloat16"]"#);
    assert!(std::sync::Arc::ptr_eq(types[0], types[2]));
    assert!(!std::sync::Arc::ptr_eq(types[0], types[1]));
    // Only what an operator with shapes carries stays inline; the rest is
    // boxed apart (see `EventExtra`).
    assert!(std::mem::size_of::<lumos_trace::EventExtra>() <= 80);
}

#[test]
fn process_labels_and_input_types_from_text_read_back() {
    let mut w = KinetoWriter::new(Vec::new(), Layout::Compact);
    w.process_name(0, "python3");
    w.process_labels(0, "CPU");
    w.process_labels(1, "GPU 1");
    w.complete(Category::CpuOp, "aten::cat", 0, 1, 10, 5)
        .input_type_text(r#"["TensorList", "Scalar"]"#);
    // Not a list of strings: left out rather than written as it is.
    w.complete(Category::CpuOp, "aten::add", 0, 1, 20, 5)
        .input_type_text(r#"["float", 3]"#);
    let bytes = w.finish().unwrap();
    let t = read_bytes(Path::new("labels.json"), &bytes).unwrap();
    let got: Vec<_> = t
        .process_labels
        .iter()
        .map(|l| (l.pid, l.labels.as_str()))
        .collect();
    assert_eq!(got, [(Ident::Num(0), "CPU"), (Ident::Num(1), "GPU 1")]);
    assert_eq!(t.track_names.len(), 1);
    let types: Vec<Option<&str>> = t
        .events
        .iter()
        .map(|e| e.extra.as_deref().and_then(|x| x.input_type.as_deref()))
        .collect();
    assert_eq!(types, [Some(r#"["TensorList", "Scalar"]"#), None]);
    assert_eq!(t.skipped.total(), 0);
}

/// A small trace of one kernel, its `distributedInfo` `info` and its
/// `traceName` `name`.
fn one_kernel(info: &DistributedInfo<'_>, name: &str) -> Vec<u8> {
    let mut w = KinetoWriter::new(Vec::new(), Layout::Compact);
    w.schema_version(1);
    w.distributed_info(info);
    w.trace_name(name);
    w.complete(Category::Kernel, "k", 0, 7, 1_000, 2_000)
        .device(0)
        .stream(7);
    w.finish().unwrap()
}

#[test]
fn a_merged_timeline_is_refused_by_what_lumos_wrote_into_it() {
    let path = Path::new("job.replayed.json");
    let merged = DistributedInfo {
        world_size: Some(4),
        merged_ranks: Some(&[0, 1, 2, 3]),
        ..Default::default()
    };
    let refused = |bytes: &[u8]| read_bytes(path, bytes).unwrap_err();
    // Marked by its `merged_ranks`, whatever its name.
    let e = refused(&one_kernel(&merged, "anything"));
    assert!(
        matches!(e.kind, ErrorKind::MergedTimeline { ranks: Some(4) }),
        "{e}"
    );
    let text = e.to_string();
    for want in ["merged of 4 ranks", "one rank per file", "without --merge"] {
        assert!(text.contains(want), "{text}");
    }
    // Or by the trace name lumos gave merged timelines before.
    for name in ["lumos replayed job", "lumos predicted job"] {
        let e = refused(&one_kernel(&DistributedInfo::default(), name));
        assert!(
            matches!(e.kind, ErrorKind::MergedTimeline { ranks: None }),
            "{name}: {e}"
        );
        assert!(e.to_string().contains("merged of several ranks"), "{e}");
    }
    // One rank's timeline, and a trace Kineto named after its file, are
    // read; so is a merged one where asked for.
    for name in [
        "lumos replayed",
        "/tmp/job.predicted.json",
        "lumos replayed job ",
    ] {
        let t = read_bytes(path, &one_kernel(&DistributedInfo::default(), name)).unwrap();
        assert_eq!(t.events.len(), 1, "{name}");
    }
    let t = lumos_trace::read_bytes_merged(path, &one_kernel(&merged, "lumos replayed job"));
    assert_eq!(t.unwrap().events.len(), 1);
}

/// A merged timeline's mark in a `distributedInfo` that a later one
/// replaces: the file was refused by the first, where the rank, world
/// size and groups were the last's (a repeated top-level member keeps
/// the last). Only the member kept decides now, for the `traceName`
/// mark too, wherever the repeat is (before or after the events).
#[test]
fn only_the_last_merged_mark_decides() {
    let path = Path::new("job.replayed.json");
    let merged = DistributedInfo {
        world_size: Some(4),
        merged_ranks: Some(&[0, 1, 2, 3]),
        ..Default::default()
    };
    let text = String::from_utf8(one_kernel(&merged, "anything")).unwrap();
    let body = text.trim_end().strip_suffix('}').unwrap();
    let rank = r#""distributedInfo": {"rank": 2, "world_size": 4}"#;
    let mark = r#""distributedInfo": {"world_size": 4, "merged_ranks": [0, 1]}"#;
    // The events come first here: a repeat after them replaces the mark.
    let replaced = format!("{body}, {rank}}}");
    let t = read_bytes(path, replaced.as_bytes()).unwrap();
    assert_eq!((t.meta.rank, t.meta.world_size), (2, Some(4)));
    assert_eq!(t.events.len(), 1);
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("\"distributedInfo\" appears twice")),
        "{:?}",
        t.warnings
    );
    // Marked last: refused, with the last mark's ranks.
    let marked = format!("{body}, {rank}, {mark}}}");
    let e = read_bytes(path, marked.as_bytes()).unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::MergedTimeline { ranks: Some(2) }),
        "{e}"
    );
    assert!(e.to_string().contains("job.replayed.json"), "{e}");
    // Before the events, replaced before them.
    let events = r#""traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0,
        "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0, "stream": 7}}]"#;
    let first = format!("{{{mark}, {rank}, {events}}}");
    let t = read_bytes(path, first.as_bytes()).unwrap();
    assert_eq!((t.meta.rank, t.events.len()), (2, 1));
    // The trace name: the last written decides.
    let named = |names: &[&str]| {
        let names: Vec<String> = names
            .iter()
            .map(|n| format!("\"traceName\": {n:?}"))
            .collect();
        format!("{{{}, {events}}}", names.join(", "))
    };
    let e = read_bytes(path, named(&["x", "lumos replayed job"]).as_bytes()).unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::MergedTimeline { ranks: None }),
        "{e}"
    );
    let t = read_bytes(path, named(&["lumos predicted job", "x"]).as_bytes()).unwrap();
    assert_eq!(t.events.len(), 1);
}
