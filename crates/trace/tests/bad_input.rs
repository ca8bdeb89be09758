//! Malformed and hostile inputs: every one gives a clear error naming the
//! file and the problem (with the byte offset or event index where that
//! applies), or reads with the problem counted in `skipped`. Inputs are built
//! in code, from corpus traces where a real file is needed.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use common::*;
use lumos_testkit::{gzip, TempDir};
use lumos_trace::{read_path, ErrorKind, SkipReason};

#[test]
fn truncated_gzip() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let gz = gz_bytes(&corpus, "single-rank/a100-alexnet-cuda-sync.json.gz");
    let cut = &gz[..gz.len() / 2];
    let e = read_err("cut.json.gz", cut);
    let msg = e.to_string();
    assert!(
        matches!(e.kind, ErrorKind::Gzip { uncompressed, .. } if uncompressed > 0),
        "{msg}"
    );
    assert!(
        msg.contains("cut.json.gz") && msg.contains("truncated gzip"),
        "{msg}"
    );
    // Cut inside the 10-byte header.
    let e = read_err("header.json.gz", &gz[..5]);
    assert!(
        matches!(
            e.kind,
            ErrorKind::Gzip {
                uncompressed: 0,
                ..
            }
        ),
        "{e}"
    );
}

/// Offset of the deflate data in a gzip member (after the optional fields).
fn deflate_start(gz: &[u8]) -> usize {
    let flags = gz[3];
    let mut i = 10;
    if flags & 4 != 0 {
        i += 2 + u16::from_le_bytes([gz[i], gz[i + 1]]) as usize;
    }
    for bit in [8, 16] {
        if flags & bit != 0 {
            i += gz[i..].iter().position(|&b| b == 0).unwrap() + 1;
        }
    }
    if flags & 2 != 0 {
        i += 2;
    }
    i
}

#[test]
fn corrupt_gzip() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let gz = gz_bytes(&corpus, "single-rank/a100-alexnet-cuda-sync.json.gz");
    // A reserved deflate block type (BTYPE = 11) in the first block.
    let mut bad_block = gz.clone();
    bad_block[deflate_start(&gz)] = 0x07;
    let e = read_err("block.json.gz", &bad_block);
    assert!(
        matches!(
            e.kind,
            ErrorKind::Gzip {
                uncompressed: 0,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("invalid or truncated gzip"), "{e}");
    // A wrong CRC: every byte decompresses, the check at the end fails.
    let mut bad_crc = gz.clone();
    let n = bad_crc.len();
    bad_crc[n - 8] ^= 0xff;
    let e = read_err("crc.json.gz", &bad_crc);
    let total = json_bytes(&corpus, "single-rank/a100-alexnet-cuda-sync.json.gz").len() as u64;
    match e.kind {
        ErrorKind::Gzip { uncompressed, .. } => assert_eq!(uncompressed, total, "{e}"),
        _ => panic!("{e}"),
    }
}

#[test]
fn truncated_json_inside_trace_events() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let text = json_bytes(&corpus, "single-rank/a100-alexnet-cuda-sync.json.gz");
    let full = read_ok("full.json", &text);
    // Kineto writes one "ph" key per event, so the k-th "ph" is in event k:
    // cutting there leaves k complete events.
    let ph = ph_offsets(&text);
    assert_eq!(ph.len() as u64, full.events_total);
    let complete = ph.len() / 2;
    let cut = ph[complete] + 2;
    for (name, data) in [
        ("cut.json", text[..cut].to_vec()),
        ("cut.json.gz", gzip(&text[..cut])),
    ] {
        let e = read_err(name, &data);
        match &e.kind {
            ErrorKind::Truncated { offset, context } => {
                assert_eq!(*offset, cut as u64, "{e}");
                assert!(
                    context.contains(&format!("inside traceEvents after {complete} events")),
                    "{e}"
                );
            }
            _ => panic!("{e}"),
        }
        let msg = e.to_string();
        assert!(
            msg.contains("truncated JSON") && msg.contains(&format!("byte {cut}")),
            "{msg}"
        );
    }
}

/// Offsets of the `"ph"` keys; Kineto writes one per event, so the k-th is
/// inside event k.
fn ph_offsets(text: &[u8]) -> Vec<usize> {
    text.windows(4)
        .enumerate()
        .filter(|(_, w)| w == b"\"ph\"")
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn invalid_json_inside_an_event_of_a_real_trace() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let mut text = json_bytes(&corpus, "single-rank/a100-alexnet-cuda-sync.json.gz");
    let full = read_ok("full.json", &text);
    let ph = ph_offsets(&text);
    assert_eq!(ph.len() as u64, full.events_total);
    let k = 100;
    let colon = ph[k] + 4 + text[ph[k] + 4..].iter().position(|&b| b == b':').unwrap();
    text[colon] = b'=';
    for (name, data) in [("bad.json", text.clone()), ("bad.json.gz", gzip(&text))] {
        let e = read_err(name, &data);
        match &e.kind {
            ErrorKind::Syntax { offset, event, .. } => {
                assert_eq!(*offset, colon as u64, "{e}");
                assert_eq!(*event, Some(k as u64), "{e}");
            }
            _ => panic!("{e}"),
        }
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("invalid JSON at byte {colon} (traceEvents[{k}])"))
                && msg.contains("expected ':'"),
            "{msg}"
        );
    }
}

#[test]
fn syntax_errors_report_exact_offsets() {
    // (text, offset, event index, words of the message)
    let bad_event = r#"{"ph": "X", "ts": 1.e5}"#;
    let cases: Vec<(String, u64, Option<u64>, &str)> = vec![
        // A bad number in the third event.
        (
            trace_of(&[KERNEL, KERNEL, bad_event]),
            (17 + 2 * (KERNEL.len() + 2) + bad_event.find(".e").unwrap() + 1) as u64,
            Some(2),
            "expected a digit",
        ),
        // Mismatched brackets, found by the splitter.
        (
            r#"{"traceEvents": [{"a": [1}]}"#.into(),
            25,
            Some(0),
            "mismatched '}'",
        ),
        // A control character in a string.
        (
            "{\"traceEvents\": [{\"name\": \"a\u{1}b\"}]}".into(),
            28,
            Some(0),
            "control character",
        ),
        // A bad value in a top-level member.
        (
            r#"{"schemaVersion": 1, "deviceProperties": [{"id": 0,}], "traceEvents": []}"#.into(),
            51,
            None,
            "deviceProperties",
        ),
        // Garbage after the root.
        (
            r#"{"traceEvents": []} x"#.into(),
            20,
            None,
            "after the top-level",
        ),
        // A stray value between events.
        (
            trace_of(&[KERNEL, "nul"]),
            (17 + KERNEL.len() + 2) as u64,
            Some(1),
            "literal",
        ),
    ];
    for (text, offset, event, words) in cases {
        let e = read_err("syntax.json", text.as_bytes());
        match &e.kind {
            ErrorKind::Syntax {
                offset: got,
                event: got_event,
                message,
            } => {
                assert_eq!((*got, *got_event), (offset, event), "{text}: {e}");
                assert!(message.contains(words), "{text}: {e}");
            }
            _ => panic!("{text}: {e}"),
        }
    }
    // After invalid UTF-8 (which is replaced, see tests/hostile.rs),
    // offsets are still the file's.
    let mut bytes = trace_of(&[KERNEL, r#"{"name": "ab", x}"#]).into_bytes();
    let x = bytes.iter().rposition(|&c| c == b'x').unwrap();
    bytes[x - 4] = 0xff;
    let e = read_err("utf8.json", &bytes);
    assert!(
        matches!(e.kind, ErrorKind::Syntax { offset, event: Some(1), .. } if offset == x as u64),
        "{e}"
    );
}

#[test]
fn not_a_trace() {
    let e = read_err(
        "no-events.json",
        br#"{"schemaVersion": 1, "traceName": "x"}"#,
    );
    assert!(matches!(e.kind, ErrorKind::NotATrace(_)), "{e}");
    assert!(e.to_string().contains("no traceEvents"), "{e}");
    // traceEvents that is not an array.
    let e = read_err("events-object.json", br#"{"traceEvents": {"a": 1}}"#);
    assert!(matches!(e.kind, ErrorKind::NotATrace(_)), "{e}");
    // The top level is a number, a string, a literal.
    for (text, what) in [("42", "'4'"), ("\"x\"", "'\"'"), ("null", "'n'")] {
        let e = read_err("scalar.json", text.as_bytes());
        match &e.kind {
            ErrorKind::Syntax {
                offset, message, ..
            } => {
                assert_eq!(*offset, 0, "{e}");
                assert!(
                    message.contains(&format!("the top level is {what}, not an object")),
                    "{e}"
                );
            }
            _ => panic!("{e}"),
        }
    }
}

#[test]
fn empty_and_whitespace_files() {
    for (name, data) in [("empty.json", &b""[..]), ("empty.json.gz", &gzip(b"")[..])] {
        let e = read_err(name, data);
        assert!(matches!(e.kind, ErrorKind::Empty), "{name}: {e}");
        assert!(e.to_string().ends_with(": file is empty"), "{e}");
    }
    // Whitespace alone is not "empty": the file has bytes, just no JSON.
    for (name, data, bytes) in [
        ("blank.json", &b"  \n\t\r\n  "[..], 8),
        ("blank.json.gz", &gzip(b" \n ")[..], 3),
    ] {
        let e = read_err(name, data);
        assert!(matches!(e.kind, ErrorKind::Blank { .. }), "{name}: {e}");
        let want = format!(": file holds only whitespace ({bytes} bytes), no JSON");
        assert!(e.to_string().ends_with(&want), "{e}");
    }
}

/// A file a folder's listing found, removed before it was opened (a job
/// folder emptied while its ranks were read): it said "no such file", as
/// for a name mistyped. It says that the file vanished, naming it and
/// the folder; a file given alone is still "no such file".
#[test]
fn a_listed_file_that_vanishes_is_named() {
    let dir = TempDir::new("bad-input-vanished");
    let trace = br#"{"traceEvents": []}"#;
    for r in 0..2 {
        std::fs::write(dir.join(format!("rank{r}.json")), trace).unwrap();
    }
    let listed = lumos_trace::listed_under(dir.path(), &lumos_trace::is_trace_file_name).unwrap();
    assert_eq!(listed.files.len(), 2);
    std::fs::remove_file(&listed.files[1]).unwrap();
    read_path(&listed.files[0]).unwrap();
    let e = read_path(&listed.files[1]).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Vanished { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: vanished: listed in the folder {} but gone when it was opened (removed or \
             renamed while lumos ran?)",
            listed.files[1].display(),
            dir.path().display()
        )
    );
    let alone = dir.join("rank7.json");
    let e = read_path(&alone).unwrap_err();
    assert!(e.to_string().ends_with(": no such file"), "{e}");
}

#[test]
fn nonexistent_path() {
    let dir = TempDir::new("bad-input-missing");
    let path = dir.join("no-such.json.gz");
    let e = read_path(&path).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Io(_)), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&path.display().to_string()) && msg.ends_with(": no such file"),
        "{msg}"
    );
}

/// A file named `.gz` that is neither gzip nor JSON says so: the bare
/// "invalid JSON at byte 0" did not tell why a `.json.gz` was read as JSON.
/// Other names, and errors past the first byte, are left as they were.
#[test]
fn neither_gzip_nor_json_named_gz_says_it_is_not_gzip() {
    let note = "(nor is it gzip data, though its name ends in .gz)";
    let (_dir, file) = temp_file("trace.json.gz", b"hello");
    let e = read_path(&file).unwrap_err().to_string();
    assert!(e.contains("invalid JSON at byte 0"), "{e}");
    assert!(e.ends_with(note), "{e}");
    let (_dir, file) = temp_file("trace.json", b"hello");
    let e = read_path(&file).unwrap_err().to_string();
    assert!(
        e.contains("invalid JSON at byte 0") && !e.contains(note),
        "{e}"
    );
    let (_dir, file) = temp_file("late.json.gz", b"{\"traceEvents\": [}");
    let e = read_path(&file).unwrap_err().to_string();
    assert!(!e.contains(note), "{e}");
}

#[test]
fn plain_json_named_gz_reads_by_content() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let text = json_bytes(&corpus, "micro/a100-event-sync.json.gz");
    let (_dir, file) = temp_file("plain.json.gz", &text);
    let t = read_path(&file).unwrap();
    assert!(!t.gzipped);
    assert_eq!(t.json_bytes, text.len() as u64);
    let want = read_path(&corpus.path("micro/a100-event-sync.json.gz")).unwrap();
    assert!(want.gzipped);
    assert_eq!(t.events, want.events);
    assert_eq!(t.flows, want.flows);
    // And gzip data named .json is gzip.
    let (_dir, file) = temp_file("packed.json", &gzip(&text));
    assert!(read_path(&file).unwrap().gzipped);
}

#[test]
fn elements_of_the_wrong_type_are_skipped() {
    let text = trace_of(&[
        KERNEL,
        "1",
        "\"a string\"",
        "[1, 2]",
        "null",
        r#"{"ph": "X", "cat": "kernel", "name": 5, "pid": 0, "tid": 7, "ts": 10, "dur": 5}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": [0], "tid": 7, "ts": 10, "dur": 5}"#,
        r#"{"ph": 1, "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5}"#,
        KERNEL,
    ]);
    let t = read_ok("types.json", text.as_bytes());
    assert_eq!(t.events_total, 9);
    assert_eq!(t.events.len(), 2);
    assert_eq!(skipped(&t, "-", SkipReason::NotAnObject), 4);
    assert_eq!(skipped(&t, "-", SkipReason::BadFieldType), 3);
    assert_eq!(t.skipped.first_index[&SkipReason::NotAnObject], 1);
    assert_eq!(t.skipped.first_index[&SkipReason::BadFieldType], 5);
    let warning = t.warnings.join("\n");
    assert!(
        warning.contains("7 malformed events skipped (first at traceEvents[1])"),
        "{warning}"
    );
}

#[test]
fn the_first_malformed_event_is_named_past_events_left_out_on_purpose() {
    // An unknown category and an instant event are skipped before the
    // malformed one, but they are not malformed: the warning names [3].
    let text = trace_of(&[
        KERNEL,
        r#"{"ph": "X", "cat": "made_up", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5}"#,
        r#"{"ph": "i", "cat": "cpu_op", "name": "k", "pid": 0, "tid": 7, "ts": 10}"#,
        r#"{"ph": "X", "cat": "cpu_op", "name": "k", "pid": 0, "tid": 7, "ts": "zz", "dur": 5}"#,
    ]);
    let t = read_ok("first.json", text.as_bytes());
    let warning = t.warnings.join("\n");
    assert!(
        warning.contains("1 malformed event skipped (first at traceEvents[3])"),
        "{warning}"
    );
}

#[test]
fn begin_end_events_are_skipped_as_valid_events_lumos_does_not_read() {
    // `B`/`E` pairs are valid Chrome trace events: the warning says they
    // are not read and what that leaves out, and does not call them
    // malformed; a phase no trace format has still is.
    let text = trace_of(&[
        KERNEL,
        r#"{"ph": "B", "cat": "cpu_op", "name": "span", "pid": 0, "tid": 7, "ts": 10}"#,
        r#"{"ph": "E", "cat": "cpu_op", "name": "span", "pid": 0, "tid": 7, "ts": 20}"#,
        r#"{"ph": "Z", "cat": "cpu_op", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5}"#,
        r#"{"ph": "B", "name": "other", "pid": 0, "tid": 8, "ts": 30}"#,
        r#"{"ph": "b", "cat": "user", "name": "a", "id": 1, "pid": 0, "tid": 8, "ts": 30}"#,
        r#"{"ph": "e", "cat": "user", "name": "a", "id": 1, "pid": 0, "tid": 8, "ts": 40}"#,
        r#"{"ph": "N", "name": "obj", "id": 2, "pid": 0, "tid": 8, "ts": 30}"#,
    ]);
    let t = read_ok("begin_end.json", text.as_bytes());
    assert_eq!(t.events.len(), 1);
    assert_eq!(skipped(&t, "cpu_op", SkipReason::BeginEnd), 2);
    assert_eq!(skipped(&t, "-", SkipReason::BeginEnd), 1);
    assert_eq!(skipped(&t, "cpu_op", SkipReason::UnsupportedPhase), 1);
    // Async spans and objects: valid, not read, not malformed either.
    assert_eq!(skipped(&t, "user", SkipReason::OtherPhase), 2);
    assert_eq!(skipped(&t, "-", SkipReason::OtherPhase), 1);
    let other = (t.warnings.iter())
        .find(|w| w.contains("other trace-event phases"))
        .unwrap_or_else(|| panic!("{:?}", t.warnings));
    assert!(
        other.starts_with(
            "3 events of other trace-event phases skipped (first at traceEvents[5]): valid \
             trace events"
        ) && other.contains("memory dumps, contexts"),
        "{other}"
    );
    let begin_end = (t.warnings.iter())
        .find(|w| w.contains("begin/end"))
        .unwrap_or_else(|| panic!("{:?}", t.warnings));
    assert!(
        begin_end.starts_with(
            "3 begin/end (\"B\"/\"E\") duration events skipped (first at traceEvents[1]): \
             valid trace events, which lumos does not read"
        ) && begin_end.contains("not in the graph")
            && !begin_end.contains("malformed"),
        "{begin_end}"
    );
    let malformed = (t.warnings.iter())
        .filter(|w| w.contains("malformed"))
        .collect::<Vec<_>>();
    assert_eq!(
        malformed,
        ["1 malformed event skipped (first at traceEvents[3])"],
        "{:?}",
        t.warnings
    );
}

#[test]
fn missing_times_and_negative_durations_are_skipped() {
    let text = trace_of(&[
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "dur": 5}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": null, "dur": 5}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": "x"}"#,
        r#"{"ph": "X", "cat": "cpu_op", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": -1}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 9.3e18, "dur": 1}"#,
        r#"{"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 10, "dur": 1}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "k", "tid": 7, "ts": 10, "dur": 1}"#,
        r#"{"cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 1}"#,
        KERNEL,
    ]);
    let t = read_ok("times.json", text.as_bytes());
    assert_eq!(t.events.len(), 1);
    assert_eq!(t.events[0].ts_ns, 10_000);
    assert_eq!(skipped(&t, "kernel", SkipReason::MissingTs), 2);
    assert_eq!(skipped(&t, "kernel", SkipReason::MissingDur), 2);
    assert_eq!(skipped(&t, "cpu_op", SkipReason::NegativeDur), 1);
    assert_eq!(skipped(&t, "kernel", SkipReason::TimeOutOfRange), 1);
    assert_eq!(skipped(&t, "kernel", SkipReason::MissingName), 1);
    assert_eq!(skipped(&t, "kernel", SkipReason::MissingPidTid), 1);
    assert_eq!(skipped(&t, "kernel", SkipReason::MissingPhase), 1);
    assert_eq!(t.skipped.first_index[&SkipReason::MissingTs], 0);
    assert_eq!(t.skipped.first_index[&SkipReason::MissingDur], 2);
    assert_eq!(t.skipped.first_index[&SkipReason::NegativeDur], 4);
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("9 malformed events skipped (first at traceEvents[0])")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn unknown_categories_are_counted_and_warned_about() {
    let text = trace_of(&[
        r#"{"ph": "X", "cat": "quantum_op", "name": "q", "pid": 0, "tid": 1, "ts": 1, "dur": 1}"#,
        r#"{"ph": "X", "cat": "quantum_op", "name": "q", "pid": 0, "tid": 1, "ts": 2, "dur": 1}"#,
        r#"{"ph": "X", "name": "no category", "pid": 0, "tid": 1, "ts": 3, "dur": 1}"#,
        r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 0, "tid": 1, "ts": 3, "dur": 1}"#,
        KERNEL,
    ]);
    let t = read_ok("unknown.json", text.as_bytes());
    assert_eq!(t.events.len(), 1);
    assert_eq!(skipped(&t, "quantum_op", SkipReason::UnknownCategory), 2);
    assert_eq!(skipped(&t, "-", SkipReason::UnknownCategory), 1);
    assert_eq!(skipped(&t, "python_function", SkipReason::NotModeled), 1);
    assert_eq!(t.skipped.first_index[&SkipReason::UnknownCategory], 0);
    let warning = t
        .warnings
        .iter()
        .find(|w| w.contains("unknown categories"))
        .expect("a warning about unknown categories");
    assert!(
        warning.contains("quantum_op (2)") && warning.contains("- (1)"),
        "{warning}"
    );
    // Categories the model leaves out on purpose are not warned about.
    assert!(!warning.contains("python_function"), "{warning}");
}
