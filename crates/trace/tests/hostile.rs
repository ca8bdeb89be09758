//! Hostile input and what writers really produce (issue 11): nesting is
//! bounded everywhere, the forms the format and common writers allow are
//! read (byte order mark, `NaN`, the unclosed array form, zero padding
//! after gzip, invalid UTF-8), other formats are named, and numbers out of
//! range are skipped with a reason. Crashes the CLI's fuzzer
//! (crates/cli/tests/fuzz/) finds become `issue_11_*` tests here.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use common::*;
use lumos_testkit::gzip;
use lumos_trace::{
    read_bytes_with_chunk, CollectiveArgs, ErrorKind, Event, Occurrences, RankList, RankSource,
    SkipReason, MAX_NESTING,
};

/// `depth` nested arrays, innermost empty.
fn nested(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

/// Checks that `e` says "nesting deeper than 128 levels" at `offset`.
fn assert_too_deep(e: &lumos_trace::ReadError, offset: usize, event: Option<u64>) {
    match &e.kind {
        ErrorKind::Syntax {
            offset: got,
            event: got_event,
            message,
        } => {
            assert_eq!((*got, *got_event), (offset as u64, event), "{e}");
            assert!(message.contains("nesting deeper than 128 levels"), "{e}");
        }
        _ => panic!("{e}"),
    }
}

#[test]
fn issue_11_deep_nesting_anywhere_is_an_error_not_an_abort() {
    assert_eq!(MAX_NESTING, 128);
    for depth in [MAX_NESTING + 1, 40_000] {
        for key in ["deviceProperties", "distributedInfo", "someUnknownKey"] {
            let head = format!("{{\"{key}\": ");
            let text = format!("{head}{}, \"traceEvents\": [{KERNEL}]}}", nested(depth));
            for (name, data) in [
                ("deep.json", text.clone().into_bytes()),
                ("deep.json.gz", gzip(text.as_bytes())),
            ] {
                let e = read_err(name, &data);
                assert_too_deep(&e, head.len() + MAX_NESTING, None);
                assert!(
                    e.to_string().contains(&format!("in top-level \"{key}\"")),
                    "{e}"
                );
            }
        }
        // In an event's args, and as an element of traceEvents.
        let head = format!("{{\"traceEvents\": [{KERNEL}, ");
        let event = format!("{{\"ph\": \"X\", \"args\": {{\"a\": {}}}}}", nested(depth));
        let e = read_err("deep.json", format!("{head}{event}]}}").as_bytes());
        // The event's own brace and args' are two of the levels.
        let offset = head.len() + event.find('[').unwrap() + MAX_NESTING - 2;
        assert_too_deep(&e, offset, Some(1));
        let e = read_err(
            "deep.json",
            format!("{head}{}]}}", nested(depth)).as_bytes(),
        );
        assert_too_deep(&e, head.len() + MAX_NESTING, Some(1));
    }
    // Objects count like arrays.
    let text = format!(
        "{{\"x\": {}1{}, \"traceEvents\": []}}",
        "{\"a\":".repeat(40_000),
        "}".repeat(40_000)
    );
    let e = read_err("deep.json", text.as_bytes());
    assert!(
        e.to_string().contains("nesting deeper than 128 levels"),
        "{e}"
    );
}

#[test]
fn issue_11_nesting_up_to_the_limit_reads() {
    let text = format!(
        "{{\"deviceProperties\": [{{\"id\": 3, \"x\": {}}}], \"other\": {}, \"traceEvents\": [{KERNEL}, \
         {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 20, \
         \"dur\": 5, \"args\": {{\"a\": {}}}}}]}}",
        nested(MAX_NESTING - 2),
        nested(MAX_NESTING),
        nested(MAX_NESTING - 2)
    );
    let t = read_ok_any_chunk("limit.json", text.as_bytes());
    assert_eq!(t.events.len(), 2);
    assert_eq!(t.meta.devices[0].id, 3);
}

#[test]
fn issue_11_distributed_info_string_holding_deep_json_is_a_warning() {
    let inner = nested(40_000);
    let text = format!("{{\"distributedInfo\": \"{inner}\", \"traceEvents\": [{KERNEL}]}}");
    let t = read_ok("deep-string.json", text.as_bytes());
    assert!(
        t.warnings.iter().any(
            |w| w.contains("distributedInfo is a string that is not JSON")
                && w.contains("nesting deeper than 128 levels")
        ),
        "{:?}",
        t.warnings
    );
    // And a well-formed one is read.
    let text = format!(
        "{{\"distributedInfo\": \"{{\\\"rank\\\": 5, \\\"world_size\\\": NaN}}\", \"traceEvents\": [{KERNEL}]}}"
    );
    let t = read_ok("string.json", text.as_bytes());
    assert_eq!(t.meta.rank, 5);
    assert_eq!(t.meta.world_size, None);
    assert_eq!(t.skipped.non_finite.count, 1);
}

/// A job's missing ranks are listed from its world size: one of billions
/// (a damaged value) asked for gigabytes, and the process was aborted.
#[test]
fn a_world_size_above_a_million_gpus_is_left_out_with_a_warning() {
    for (w, kept) in [
        (1u64 << 20, Some(1u32 << 20)),
        ((1 << 20) + 1, None),
        (4_294_967_295, None),
        (1 << 40, None),
    ] {
        let text = format!(
            "{{\"distributedInfo\": {{\"rank\": 0, \"world_size\": {w}}}, \"traceEvents\": [{KERNEL}]}}"
        );
        let t = read_ok("world.json", text.as_bytes());
        assert_eq!(t.meta.world_size, kept, "{w}");
        let warned = t.warnings.iter().any(|m| {
            m.contains(&format!(
                "distributedInfo.world_size {w} is above 1048576: ignored"
            ))
        });
        assert_eq!(warned, kept.is_none(), "{w}: {:?}", t.warnings);
    }
}

/// A rank or world size that is there but unusable (a string, a
/// fraction, a negative number, a world of 0) was taken silently for none:
/// rank 3 written as "3" became rank 0 without a word. A whole number
/// written as a float (2.0) is read as that number.
#[test]
fn an_unusable_rank_or_world_size_is_named_in_a_warning() {
    for (info, rank_warning, world_warning) in [
        (r#""rank": "3", "world_size": 8"#, Some(r#"rank "3""#), None),
        (r#""rank": 3.5, "world_size": 8"#, Some("rank 3.5"), None),
        (
            r#""rank": -1, "world_size": 0"#,
            Some("rank -1"),
            Some("world_size 0"),
        ),
        (
            r#""rank": 4294967296, "world_size": [8]"#,
            Some("rank 4294967296"),
            Some("world_size (an array)"),
        ),
        (
            r#""rank": 2, "world_size": "eight""#,
            None,
            Some(r#"world_size "eight""#),
        ),
        (r#""rank": 2, "world_size": 8"#, None, None),
        // Whole numbers written as floats are those numbers.
        (r#""rank": 2.0, "world_size": 8.0"#, None, None),
        (r#""rank": 2"#, None, None),
    ] {
        let text = format!("{{\"distributedInfo\": {{{info}}}, \"traceEvents\": [{KERNEL}]}}");
        let t = read_ok("rank7.json", text.as_bytes());
        let said = |what: Option<&str>, tail: &str| match what {
            Some(w) => t
                .warnings
                .iter()
                .any(|m| m.starts_with(&format!("distributedInfo.{w} is not a {tail}"))),
            None => !t.warnings.iter().any(|m| m.contains(tail)),
        };
        assert!(
            said(rank_warning, "rank number"),
            "{info}: {:?}",
            t.warnings
        );
        assert!(
            said(world_warning, "world size"),
            "{info}: {:?}",
            t.warnings
        );
        if rank_warning.is_some() {
            // The file name's rank, as when distributedInfo has none.
            assert_eq!(t.meta.rank, 7, "{info}");
            assert_eq!(t.meta.rank_source, RankSource::FileName, "{info}");
        } else {
            assert_eq!(t.meta.rank, 2, "{info}");
        }
        if world_warning.is_some() {
            assert_eq!(t.meta.world_size, None, "{info}");
        } else if info.contains("\"world_size\": 8") {
            assert_eq!(t.meta.world_size, Some(8), "{info}");
        }
    }
}

#[test]
fn issue_11_byte_order_mark_is_accepted() {
    let plain = trace_of(&[KERNEL, KERNEL]);
    let want = read_ok("plain.json", plain.as_bytes());
    let with_bom = [b"\xef\xbb\xbf".as_slice(), plain.as_bytes()].concat();
    for (name, data) in [
        ("bom.json", with_bom.clone()),
        ("bom.json.gz", gzip(&with_bom)),
    ] {
        let t = read_ok_any_chunk(name, &data);
        assert_eq!(t.events, want.events, "{name}");
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    }
    // A damaged one is not text.
    let e = read_err("half-bom.json", &with_bom[1..]);
    assert!(e.to_string().contains("is binary data"), "{e}");
}

#[test]
fn issue_11_nan_and_infinity_are_absent_values_counted_once() {
    let text = format!(
        r#"{{"deviceProperties": [{{"id": 0, "name": "A100", "totalGlobalMem": Infinity, "numSms": 108}}],
            "traceEvents": [{KERNEL},
            {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": NaN, "dur": 5}},
            {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 30, "dur": -Infinity}},
            {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 40, "dur": 1,
              "args": {{"correlation": NaN, "stream": 7, "x": [NaN, Infinity]}}}},
            NaN]}}"#
    );
    let t = read_ok_any_chunk("nan.json", text.as_bytes());
    assert_eq!(t.events.len(), 2);
    assert_eq!(t.events[1].correlation(), None);
    assert_eq!(t.events[1].stream(), Some(7));
    assert_eq!(t.meta.devices[0].total_global_mem, None);
    assert_eq!(t.meta.devices[0].num_sms, Some(108));
    assert_eq!(skipped(&t, "kernel", SkipReason::MissingTs), 1);
    assert_eq!(skipped(&t, "kernel", SkipReason::MissingDur), 1);
    assert_eq!(skipped(&t, "-", SkipReason::NotAnObject), 1);
    assert_eq!(
        t.skipped.non_finite,
        Occurrences {
            count: 7,
            first_index: Some(1)
        }
    );
    let warnings: Vec<_> = t.warnings.iter().filter(|w| w.contains("NaN")).collect();
    assert_eq!(warnings.len(), 1, "{:?}", t.warnings);
    assert!(
        warnings[0].contains("7 ") && warnings[0].contains("traceEvents[1]"),
        "{warnings:?}"
    );
    // Only in a member: no event index.
    let text = format!(r#"{{"schemaVersion": NaN, "traceEvents": [{KERNEL}]}}"#);
    let t = read_ok("member.json", text.as_bytes());
    assert_eq!(t.skipped.non_finite.first_index, None);
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("in top-level members")),
        "{:?}",
        t.warnings
    );
    // Look-alikes are still errors.
    for bad in ["nan", "Inf", "-NaN", "+Infinity", "NaNN"] {
        let text = trace_of(&[&KERNEL.replace("\"ts\": 10", &format!("\"ts\": {bad}"))]);
        let e = read_err("bad.json", text.as_bytes());
        assert!(
            matches!(e.kind, ErrorKind::Syntax { event: Some(0), .. }),
            "{bad}: {e}"
        );
    }
}

#[test]
fn issue_11_array_form_with_or_without_closing_bracket() {
    let want = read_ok(
        "object.json",
        trace_of(&[KERNEL, KERNEL, KERNEL]).as_bytes(),
    );
    for text in [
        format!("[{KERNEL}, {KERNEL}, {KERNEL}]"),
        format!("[{KERNEL}, {KERNEL}, {KERNEL},]"),
        format!("[{KERNEL}, {KERNEL}, {KERNEL}"),
        format!("[{KERNEL}, {KERNEL}, {KERNEL},\n"),
        format!("\u{feff}[{KERNEL},\n{KERNEL},\n{KERNEL},\n"),
    ] {
        for (name, data) in [
            ("array.json", text.clone().into_bytes()),
            ("array.json.gz", gzip(text.as_bytes())),
        ] {
            let t = read_ok_any_chunk(name, &data);
            assert_eq!(t.events, want.events, "{text}");
            assert_eq!(t.events_total, 3);
        }
    }
    // Ending inside an element is still truncation, in either form.
    for text in [
        format!("[{KERNEL}, {KERNEL}, {}", &KERNEL[..30]),
        format!("{{\"traceEvents\": [{KERNEL}, {KERNEL}]"),
        format!("{{\"traceEvents\": [{KERNEL}, {KERNEL}"),
    ] {
        let e = read_err("cut.json", text.as_bytes());
        assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{text}: {e}");
        assert!(e.to_string().contains("truncated"), "{e}");
    }
}

#[test]
fn issue_11_gzip_members_padding_and_trailing_bytes() {
    let text = trace_of(&[KERNEL, KERNEL, KERNEL, KERNEL]);
    let want = read_ok("plain.json", text.as_bytes());
    let b = text.as_bytes();
    let members = [
        gzip(&b[..10]),
        gzip(b""),
        gzip(&b[10..100]),
        gzip(&b[100..]),
    ]
    .concat();
    let mut padded = members.clone();
    padded.extend([0u8; 10_000]);
    for (name, data) in [("members.json.gz", &members), ("padded.json.gz", &padded)] {
        let t = read_ok_any_chunk(name, data);
        assert!(t.gzipped);
        assert_eq!(t.events, want.events, "{name}");
        assert!(t.warnings.is_empty(), "{name}: {:?}", t.warnings);
    }
    // Other bytes after the data: read, with a warning (as gzip does).
    let mut junk = padded.clone();
    junk.extend(b"garbage");
    let t = read_ok("junk.json.gz", &junk);
    assert_eq!(t.events, want.events);
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("ignored 10007 bytes after the end of the gzip data")),
        "{:?}",
        t.warnings
    );
    // The JSON must still be complete.
    let cut = [gzip(&b[..b.len() - 2]), vec![0; 100]].concat();
    let e = read_err("cut.json.gz", &cut);
    assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{e}");
}

/// A tar archive holding `data` as `name` (one 512-byte header, the data,
/// padding to a block, and the two zero blocks of the end).
fn tar_of(name: &str, data: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name.as_bytes());
    header[100..108].copy_from_slice(b"0000644\0");
    header[124..136].copy_from_slice(format!("{:011o}\0", data.len()).as_bytes());
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut out = header.to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512 + 1024, 0);
    out
}

#[test]
fn issue_11_archives_and_other_formats_are_named() {
    let trace = trace_of(&[KERNEL]);
    let tar = tar_of("trace.json", trace.as_bytes());
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("t.tar", tar.clone(), "is a tar archive; extract the trace"),
        (
            "t.tar.gz",
            gzip(&tar),
            "is a tar archive (inside gzip); extract",
        ),
        (
            "t.zip",
            b"PK\x03\x04\x14\x00\x00\x00\x08\x00".to_vec(),
            "is a zip archive",
        ),
        (
            "t.json.zst",
            b"\x28\xb5\x2f\xfd\x24\x04\x21\x00".to_vec(),
            "is zstd-compressed; decompress it first",
        ),
        (
            "t.json.xz",
            b"\xfd7zXZ\x00\x00\x04\xe6\xd6".to_vec(),
            "is xz-compressed",
        ),
        (
            "t.json.bz2",
            b"BZh91AY&SY\x12\x34".to_vec(),
            "is bzip2-compressed",
        ),
        ("t.json", b"\xff\xfe{\x00\"\x00".to_vec(), "is UTF-16 text"),
        (
            "t.json",
            b"<!DOCTYPE html>\n<html><body>Not Found</body></html>".to_vec(),
            "is an HTML page",
        ),
        (
            "t.json",
            vec![0; 4096],
            "is zero-filled where the JSON should start",
        ),
        (
            "t.json",
            b"\x0a\x12\x08\x01\x10\xc8\x01\x1a\x00".to_vec(),
            "is binary data",
        ),
        (
            "t.pickle",
            b"\x80\x04\x95\x10\x00\x00".to_vec(),
            "is a Python pickle",
        ),
        // Compressed twice (said "binary data"), three times too.
        (
            "t.json.gz",
            gzip(&gzip(trace.as_bytes())),
            "is gzip-compressed again (compressed twice) (inside gzip); decompress it once first",
        ),
        (
            "t.json.gz",
            gzip(&gzip(&gzip(trace.as_bytes()))),
            "is gzip-compressed again (compressed twice) (inside gzip)",
        ),
    ];
    for (name, data, words) in cases {
        let e = read_err(name, &data);
        assert!(matches!(e.kind, ErrorKind::Format { .. }), "{name}: {e}");
        assert!(e.to_string().contains(words), "{name}: {e}");
        // However little is read at a time.
        let chunked = read_bytes_with_chunk(std::path::Path::new(name), &data, 1).unwrap_err();
        assert_eq!(chunked.to_string(), e.to_string());
    }
}

#[test]
fn issue_11_json_that_is_not_a_kineto_trace_says_what_it_is() {
    let et = r#"{"schema": "1.0.1", "pid": 7, "time": "2024-01-01", "start_ts": 1,
        "nodes": [{"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "inputs": {"values": [[1, 2]]}}],
        "finish_ts": 2}"#;
    let e = read_err("et.json", et.as_bytes());
    assert!(matches!(e.kind, ErrorKind::NotATrace(_)), "{e}");
    assert!(e.to_string().contains("PyTorch execution trace"), "{e}");
    let e = read_err("lines.json", b"{\"ph\": \"X\"}\n{\"ph\": \"X\"}\n");
    assert!(e.to_string().contains("JSON Lines"), "{e}");
    for (name, data) in [("empty.json", vec![]), ("empty.json.gz", gzip(b""))] {
        let e = read_err(name, &data);
        assert!(e.to_string().ends_with(": file is empty"), "{e}");
    }
}

#[test]
fn issue_11_invalid_utf8_is_replaced_and_counted() {
    let bad_name = KERNEL
        .replace("\"k\"", "\"k\u{1}\"")
        .replace('\u{1}', "\u{fffd}");
    let mut text = trace_of(&[KERNEL, &bad_name, KERNEL]).into_bytes();
    // Replace the UTF-8 of U+FFFD by a lone continuation byte and a
    // truncated sequence: both invalid.
    let at = text
        .windows(3)
        .position(|w| w == "\u{fffd}".as_bytes())
        .unwrap();
    text.splice(at..at + 3, [0x80, 0xe2, 0x82]);
    let t = read_ok_any_chunk("utf8.json", &text);
    assert_eq!(t.events.len(), 3);
    assert_eq!(t.name(&t.events[1]), "k\u{fffd}\u{fffd}");
    assert_eq!(
        t.skipped.invalid_utf8,
        Occurrences {
            count: 1,
            first_index: Some(1)
        }
    );
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("invalid UTF-8") && w.contains("traceEvents[1]")),
        "{:?}",
        t.warnings
    );
    // In a member's string too.
    let text = [
        b"{\"deviceProperties\": [{\"id\": 1, \"name\": \"A1\xff\"}], \"traceEvents\": []}"
            .as_slice(),
    ]
    .concat();
    let t = read_ok("member.json", &text);
    assert_eq!(t.meta.devices[0].name, "A1\u{fffd}");
    assert_eq!(t.skipped.invalid_utf8.count, 1);
    // Control characters stay errors: JSON never allows them raw.
    let e = read_err(
        "ctl.json",
        trace_of(&[&KERNEL.replace("\"k\"", "\"k\u{7}\"")]).as_bytes(),
    );
    assert!(e.to_string().contains("control character"), "{e}");
}

#[test]
fn issue_11_unused_members_are_not_parsed() {
    // Whatever an unused member holds between balanced brackets is skipped
    // unread, as the model needs none of it: only the splitter's checks
    // (brackets, strings, depth) apply.
    let text = format!(
        "{{\"traceName\": [1,, x], \"deviceProperties\": [], \"traceEvents\": [{KERNEL}], \"zzz\": tru}}"
    );
    let t = read_ok_any_chunk("unused.json", text.as_bytes());
    assert_eq!(t.events.len(), 1);
    // Used ones are.
    let e = read_err(
        "used.json",
        b"{\"schemaVersion\": [1,,], \"traceEvents\": []}",
    );
    assert!(
        e.to_string().contains("in top-level \"schemaVersion\""),
        "{e}"
    );
}

#[test]
fn issue_11_zero_padding_after_plain_json() {
    let mut text = trace_of(&[KERNEL]).into_bytes();
    text.extend([0u8; 5000]);
    assert_eq!(read_ok_any_chunk("padded.json", &text).events.len(), 1);
    text.push(b'x');
    let e = read_err("padded.json", &text);
    assert!(e.to_string().contains("after the top-level value"), "{e}");
}

#[test]
fn issue_11_numbers_out_of_range_are_skipped_with_a_reason() {
    let ev = |ts: &str, dur: &str, pid: &str| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "k", "pid": {pid}, "tid": 7, "ts": {ts}, "dur": {dur}}}"#
        )
    };
    let events = [
        ev("1e999", "1", "0"),
        ev("\"9223372036854775.9\"", "1", "0"),
        ev("9223372036854775807", "1", "0"),
        ev("-9223372036854775809", "1", "0"),
        ev("9223372036854775", "9223372036854775", "0"),
        ev("10", "-1e300", "0"),
        ev("10", "-1", "0"),
        ev("10", "5", "1e30"),
        ev("10", "5", "1.5"),
        ev("10", "5", "18446744073709551616"),
        ev("10", "1e-999", "0"),
        KERNEL.replace("\"dur\": 5", "\"dur\": 5, \"args\": {\"correlation\": 1e400, \"External id\": -1, \"stream\": 99999999999999999999}"),
        r#"{"ph": "s", "cat": "ac2g", "name": "f", "pid": 0, "tid": 7, "ts": 1, "id": 18446744073709551616}"#.into(),
        r#"{"ph": "s", "cat": "ac2g", "name": "f", "pid": 0, "tid": 7, "ts": 1, "id": 1.5}"#.into(),
    ];
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_ok_any_chunk("huge.json", trace_of(&refs).as_bytes());
    assert_eq!(skipped(&t, "kernel", SkipReason::TimeOutOfRange), 6);
    assert_eq!(skipped(&t, "kernel", SkipReason::NegativeDur), 1);
    assert_eq!(skipped(&t, "-", SkipReason::BadFieldType), 3);
    assert_eq!(skipped(&t, "ac2g", SkipReason::BadFlow), 2);
    assert_eq!(t.events.len(), 2);
    assert_eq!(t.events[0].dur_ns, 0, "1e-999 us is 0 ns");
    let last = &t.events[1];
    assert_eq!(
        (last.correlation(), last.external_id(), last.stream()),
        (None, None, None)
    );
    // Kept without them, and counted.
    for key in ["correlation", "External id", "stream"] {
        assert_eq!(t.skipped.bad_args[key].count, 1, "{key}");
    }
}

#[test]
fn ids_at_the_packed_absent_value_are_dropped_and_counted() {
    // `Event` packs its optional ids in 8 bytes, `u64::MAX` and
    // `i64::MIN` standing for "absent": an argument holding that value
    // is dropped like a malformed one, never read as something else.
    let extreme = format!(
        r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1,"args":{{"correlation":{},"External id":{},"stream":{},"device":{}}}}}"#,
        u64::MAX,
        u64::MAX,
        i64::MIN,
        i64::MIN
    );
    let near = format!(
        r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":2,"dur":1,"args":{{"correlation":{},"External id":0,"stream":{},"device":{}}}}}"#,
        u64::MAX - 1,
        i64::MIN + 1,
        i64::MAX
    );
    let t = read_ok_any_chunk("ids.json", trace_of(&[&extreme, &near]).as_bytes());
    assert_eq!(t.events.len(), 2);
    let e = &t.events[0];
    assert_eq!(
        (e.correlation(), e.external_id(), e.stream(), e.device()),
        (None, None, None, None)
    );
    for key in ["correlation", "External id", "stream", "device"] {
        let bad = t.skipped.bad_args[key];
        assert_eq!((bad.count, bad.first_index), (1, 0), "{key}");
    }
    let e = &t.events[1];
    assert_eq!(
        (e.correlation(), e.external_id(), e.stream(), e.device()),
        (
            Some(u64::MAX - 1),
            Some(0),
            Some(i64::MIN + 1),
            Some(i64::MAX)
        )
    );
}

#[test]
fn hex_ids_are_read_whatever_the_case_of_their_prefix() {
    // `0X1F` is hex as much as `0x1F` (C's `%#X` writes it): an id written
    // so is read, not dropped and counted as malformed.
    let ev = |ts: u32, args: &str| {
        format!(
            r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{ts},"dur":1,"args":{{{args}}}}}"#
        )
    };
    let events = [
        ev(
            1,
            r#""correlation":"0x1F","External id":"0x1f","stream":"0x7","device":"0x0""#,
        ),
        ev(
            2,
            r#""correlation":"0X1F","External id":"0X1f","stream":" 0X7 ","device":"0X0""#,
        ),
    ];
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_ok_any_chunk("hex.json", trace_of(&refs).as_bytes());
    let ids = |e: &Event| (e.correlation(), e.external_id(), e.stream(), e.device());
    for e in &t.events {
        assert_eq!(ids(e), (Some(31), Some(31), Some(7), Some(0)), "{e:?}");
    }
    assert!(t.skipped.bad_args.is_empty(), "{:?}", t.skipped.bad_args);
}

#[test]
fn ids_that_are_not_integers_are_dropped_and_counted() {
    // A writer that puts a text, a fraction or a negative number where an
    // id goes: the event is kept without that id (its launch is not
    // linked, its stream unknown), and the reader says how many, per key,
    // like an id at the packed absent value. `null` is an absent id, not
    // a malformed one; a string holding an integer is read.
    let ev = |ts: u32, args: &str| {
        format!(
            r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{ts},"dur":1,"args":{{{args}}}}}"#
        )
    };
    let events = [
        ev(
            1,
            r#""correlation":7,"External id":8,"stream":7,"device":0"#,
        ),
        ev(
            2,
            r#""correlation":"abc","External id":1.5,"stream":"x","device":"cuda:0""#,
        ),
        ev(
            3,
            r#""correlation":-3,"External id":{"a":1},"stream":[7],"device":true"#,
        ),
        ev(
            4,
            r#""correlation":null,"External id":null,"stream":null,"device":null"#,
        ),
        ev(
            5,
            r#""correlation":"42","External id":"0x1F","stream":" 7 ","device":"-1""#,
        ),
        ev(
            6,
            r#""correlation":2.5e30,"External id":"","stream":1e3,"device":0"#,
        ),
    ];
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_ok_any_chunk("ids.json", trace_of(&refs).as_bytes());
    assert_eq!(t.events.len(), 6);
    let ids = |e: &Event| (e.correlation(), e.external_id(), e.stream(), e.device());
    assert_eq!(ids(&t.events[0]), (Some(7), Some(8), Some(7), Some(0)));
    for e in &t.events[1..4] {
        assert_eq!(ids(e), (None, None, None, None), "{e:?}");
    }
    assert_eq!(ids(&t.events[4]), (Some(42), Some(31), Some(7), Some(-1)));
    assert_eq!(ids(&t.events[5]), (None, None, Some(1000), Some(0)));
    for (key, count) in [
        ("correlation", 3),
        ("External id", 3),
        ("stream", 2),
        ("device", 2),
    ] {
        let bad = t.skipped.bad_args[key];
        assert_eq!((bad.count, bad.first_index), (count, 1), "{key}");
        let warning = format!("{count} events with a malformed {key:?} (first at traceEvents[1])");
        assert!(
            t.warnings.iter().any(|w| w.contains(&warning)),
            "{:?}",
            t.warnings
        );
    }
    assert_eq!(t.skipped.total(), 0, "the events are kept");
}

#[test]
fn issue_11_model_arithmetic_saturates() {
    let e = Event::new(
        lumos_trace::Category::Kernel,
        lumos_trace::StrId(0),
        lumos_trace::Ident::Num(0),
        lumos_trace::Ident::Num(0),
        i64::MAX - 5,
        100,
    );
    assert_eq!(e.end_ns(), i64::MAX);
    let huge = CollectiveArgs {
        in_nelems: Some(u64::MAX / 2),
        dtype: Some("Float".into()),
        ..CollectiveArgs::default()
    };
    assert_eq!(huge.bytes(), None);
    let ranks = RankList::parse(&format!("[0, {}, ...]", i64::MAX)).unwrap();
    let expanded = ranks.expand(4);
    assert_eq!(expanded, [0, i64::MAX, i64::MAX, i64::MAX]);
    // A damaged group size does not allocate what it claims.
    assert_eq!(ranks.expand(u32::MAX as usize).len(), 2);
    assert_eq!(
        RankList::parse("[0, 8, ...]")
            .unwrap()
            .expand(1 << 20)
            .len(),
        1 << 20
    );
}

#[test]
fn issue_11_a_huge_item_reads_in_linear_time() {
    // One 8 MB string read 1 KB at a time: the buffer grows geometrically,
    // so the item is rescanned a few times, not 8000.
    let long = "x".repeat(8 << 20);
    let text = format!(
        "{{\"junk\": \"{long}\", \"traceEvents\": [{}]}}",
        KERNEL.replace("\"k\"", &format!("\"{long}\""))
    );
    let start = std::time::Instant::now();
    let t =
        read_bytes_with_chunk(std::path::Path::new("long.json"), text.as_bytes(), 1024).unwrap();
    // Kept cut to its first 64 KiB (`issue_12_giant_texts_are_cut_and_counted`).
    assert_eq!(t.name(&t.events[0]).len(), lumos_trace::MAX_TEXT_BYTES);
    assert!(start.elapsed().as_secs() < 20, "took {:?}", start.elapsed());
}

/// A decompression bomb: a few MB of gzip that inflate to one giant value.
/// Each element or member is held whole while parsed, so one larger than
/// the limit is an error naming it, not all of memory.
#[test]
fn issue_12_a_value_over_the_size_limit_is_an_error_naming_it() {
    use lumos_trace::{read_bytes_with_limits, MAX_ITEM_BYTES};
    assert_eq!(MAX_ITEM_BYTES, 1 << 30);
    let limit = 4096;
    let big_event = KERNEL.replace(
        r#""name": "k""#,
        &format!(r#""name": "{}""#, "k".repeat(limit)),
    );
    assert_ne!(big_event, KERNEL, "the kernel's name was replaced");
    let events = trace_of(&[KERNEL, &big_event, KERNEL]);
    let member = format!(
        r#"{{"systemTraceEvents": "{}", "traceEvents": [{KERNEL}]}}"#,
        "x".repeat(limit)
    );
    for (name, text, event) in [
        ("event.json", &events, Some(1)),
        ("member.json", &member, None),
    ] {
        let offset = match event {
            Some(_) => text.find(&big_event).unwrap_or(0),
            None => text.find(": \"x").map_or(0, |i| i + 2),
        };
        for data in [text.as_bytes().to_vec(), gzip(text.as_bytes())] {
            // Whatever the chunks, the same error.
            for chunk in [1, 100, 1 << 20] {
                let e = read_bytes_with_limits(name.as_ref(), &data, chunk, limit).unwrap_err();
                match e.kind {
                    ErrorKind::TooLarge {
                        offset: got,
                        event: got_event,
                        limit: got_limit,
                    } => assert_eq!(
                        (got, got_event, got_limit),
                        (offset as u64, event, limit as u64),
                        "{name} {chunk}: {e}"
                    ),
                    _ => panic!("{name} {chunk}: {e}"),
                }
            }
        }
        // Under a larger limit, read as always.
        let t = read_bytes_with_limits(name.as_ref(), text.as_bytes(), 100, 2 * limit).unwrap();
        assert_eq!(
            t.events.len(),
            if event.is_some() { 3 } else { 1 },
            "{name}"
        );
    }
    // The first error in the file is the one reported.
    let bad = r#"{"ph": "X", "ts": 1x}"#;
    for (order, first_is_syntax) in [([bad, &big_event], true), ([&big_event, bad], false)] {
        let text = trace_of(&order);
        for chunk in [1, 100, 1 << 20] {
            let e = read_bytes_with_limits("o.json".as_ref(), text.as_bytes(), chunk, limit)
                .unwrap_err();
            let syntax = matches!(e.kind, ErrorKind::Syntax { .. });
            assert_eq!(syntax, first_is_syntax, "{chunk}: {e}");
        }
    }
    let e =
        read_bytes_with_limits("event.json".as_ref(), events.as_bytes(), 100, limit).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "event.json: traceEvents[1] at byte {} is larger than 4 KiB, the most lumos reads of \
             one value (a damaged or hostile file: Kineto's events are a few KB)",
            events.find(&big_event).unwrap()
        )
    );
}

/// Each distinct name, category or text is kept, so a little gzip could
/// inflate to many giant ones: past 64 KiB they are cut (at a character
/// boundary) and counted, and the warning naming unknown categories names
/// 20 of them.
#[test]
fn issue_12_giant_texts_are_cut_and_counted() {
    use lumos_trace::MAX_TEXT_BYTES;
    assert_eq!(MAX_TEXT_BYTES, 64 << 10);
    // `é` (two bytes) straddles the limit: the cut falls before it.
    let long = format!("{}é{}", "k".repeat(MAX_TEXT_BYTES - 1), "k".repeat(100));
    let kernel = |name: &str, cat: &str| {
        format!(
            r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 0, "tid": 7, "ts": 10, "dur": 5}}"#
        )
    };
    let mut events = vec![
        kernel(&long, "kernel"),
        kernel("k", &long),
        format!(
            r#"{{"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {{"name": "{long}"}}}}"#
        ),
    ];
    // Lists are not cut (a cut one is no list): kept whole up to 1 MiB
    // (an operator over every parameter of a large model lists thousands
    // of shapes), dropped as malformed over it.
    let op = |tid: u32, inputs: usize| {
        format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 0, "tid": {tid}, "ts": 1, "dur": 2,
                "args": {{"Input Dims": [{}[1]], "Input type": [{}"float"],
                          "Process Group Ranks": "[{}0]"}}}}"#,
            "[1], ".repeat(inputs),
            "\"float\", ".repeat(inputs),
            "0, ".repeat(inputs)
        )
    };
    events.push(op(1, 20_000));
    events.push(op(2, 300_000));
    for k in 0..25 {
        events.push(kernel("k", &format!("odd{k:02}")));
    }
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let t = read_ok_any_chunk("long.json", trace_of(&refs).as_bytes());
    let cut = &long[..MAX_TEXT_BYTES - 1];
    assert_eq!(t.strings[t.events[0].name.0 as usize], cut);
    assert_eq!(skipped(&t, cut, SkipReason::UnknownCategory), 1);
    assert_eq!(t.track_names[0].name, cut);
    let ops: Vec<_> = (t.events.iter())
        .filter(|e| e.category == lumos_trace::Category::CpuOp)
        .collect();
    let x = ops[0].extra.as_ref().unwrap();
    assert_eq!(x.input_dims.as_ref().unwrap().len(), 20_001);
    assert!(x.input_type.as_ref().unwrap().len() > MAX_TEXT_BYTES);
    assert!(ops[1]
        .extra
        .as_ref()
        .is_none_or(|x| x.input_dims.is_none() && x.input_type.is_none()));
    assert_eq!(t.skipped.bad_args["Input Dims"].count, 1);
    assert_eq!(t.skipped.bad_args["Input type"].count, 1);
    let warned = |what: &str| t.warnings.iter().filter(|w| w.contains(what)).count();
    assert_eq!(
        warned("names, categories or texts longer than 64 KiB cut to their first 64 KiB (3 times)"),
        1,
        "{:?}",
        t.warnings
    );
    let unknown = t
        .warnings
        .iter()
        .find(|w| w.starts_with("events of unknown categories"))
        .unwrap();
    assert!(
        unknown.ends_with("and 6 more"),
        "{}",
        &unknown[unknown.len() - 80..]
    );
}

/// Distinct argument lists are kept up to a budget (256 MiB; 40 bytes
/// here): a new list past it is left out of its event and counted in one
/// warning, a list seen before is still kept, and a malformed one is
/// counted as malformed.
#[test]
fn issue_12_distinct_argument_lists_past_the_budget_are_left_out_and_counted() {
    let op = |ts: u32, args: &str| {
        format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"op","pid":0,"tid":1,"ts":{ts},"dur":1,"args":{{{args}}}}}"#
        )
    };
    let events = [
        // 11 + 15 bytes kept: 14 left.
        op(
            1,
            r#""Input Dims":[[1,2],[3]],"Input type":["float","int"]"#,
        ),
        op(2, r#""Input Dims":[[4,5,6],[7,8,9]]"#),
        op(3, r#""Input Dims":[[1,2],[3]]"#),
        op(4, r#""Input Dims":"not a list, and long enough""#),
        op(
            5,
            r#""Collective name":"allreduce","Process Group Ranks":"[0, 1, 2, 3, 4, 5, 6, 7]""#,
        ),
        op(6, r#""Input Dims":[[1]]"#),
    ];
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let text = trace_of(&refs);
    let t = lumos_trace::read_bytes_with_list_budget("lists.json".as_ref(), text.as_bytes(), 40)
        .unwrap();
    let dims: Vec<Option<usize>> = (t.events.iter())
        .map(|e| e.extra.as_ref()?.input_dims.as_ref().map(|d| d.len()))
        .collect();
    assert_eq!(dims, [Some(2), None, Some(2), None, None, Some(1)]);
    let x = t.events[0].extra.as_ref().unwrap();
    assert_eq!(x.input_type.as_deref(), Some(r#"["float","int"]"#));
    let ranks = (t.events[4].extra.as_ref()).and_then(|x| x.collective.as_ref()?.pg_ranks.clone());
    assert_eq!(ranks, None);
    assert_eq!(t.skipped.bad_args["Input Dims"].count, 1);
    let warned: Vec<&String> = (t.warnings.iter())
        .filter(|w| w.starts_with("argument lists left out"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", t.warnings);
    assert!(
        warned[0].starts_with("argument lists left out 2 times"),
        "{}",
        warned[0]
    );
    // The default budget keeps them all.
    let t = lumos_trace::read_bytes("lists.json".as_ref(), text.as_bytes()).unwrap();
    assert!(t.warnings.iter().all(|w| !w.starts_with("argument lists")));
    assert!(t.events[4]
        .extra
        .as_ref()
        .unwrap()
        .collective
        .as_ref()
        .unwrap()
        .pg_ranks
        .is_some());
}

/// The size limit's edges: an item of exactly the limit reads, one byte
/// more does not; every kind of item and layout, and an error inside an
/// item already over the limit, give the same error whatever the chunks.
#[test]
fn issue_12_the_size_limit_holds_for_every_item_and_chunking() {
    use lumos_trace::read_bytes_with_limits;
    let limit = 200;
    // An event of `len` bytes.
    let event = |len: usize| {
        let e = KERNEL.replace(r#""name": "k""#, r#""name": """#);
        e.replace(
            r#""name": """#,
            &format!(r#""name": "{}""#, "k".repeat(len - e.len())),
        )
    };
    assert_eq!(event(limit).len(), limit);
    let err = |text: &str| {
        let mut seen = None;
        for data in [text.as_bytes().to_vec(), gzip(text.as_bytes())] {
            for chunk in [1, 7, 64, 199, 200, 201, 4096] {
                let r = read_bytes_with_limits("e.json".as_ref(), &data, chunk, limit);
                let got = match r {
                    Ok(t) => format!("ok {}", t.events.len()),
                    Err(e) => match e.kind {
                        ErrorKind::TooLarge { offset, event, .. } => {
                            format!("too large {offset} {event:?}")
                        }
                        ErrorKind::Syntax { offset, .. } => format!("syntax {offset}"),
                        other => format!("{other}"),
                    },
                };
                match &seen {
                    None => seen = Some(got),
                    Some(s) => assert_eq!(&got, s, "chunk {chunk}: {text}"),
                }
            }
        }
        seen.unwrap()
    };
    let at = |text: &str, part: &str| text.find(part).unwrap();
    // Exactly the limit, and one byte over.
    let text = trace_of(&[KERNEL, &event(limit)]);
    assert_eq!(err(&text), "ok 2");
    let text = trace_of(&[KERNEL, &event(limit + 1)]);
    assert_eq!(
        err(&text),
        format!("too large {} Some(1)", at(&text, &event(limit + 1)))
    );
    // A value that is not an object, in the array form of a trace.
    let long = format!("\"{}\"", "x".repeat(limit));
    let text = format!("[{KERNEL}, 7, {long}, {KERNEL}]");
    assert_eq!(
        err(&text),
        format!("too large {} Some(2)", at(&text, &long))
    );
    // A member after `traceEvents`.
    let text = format!(r#"{{"traceEvents": [{KERNEL}], "other": {long}}}"#);
    assert_eq!(err(&text), format!("too large {} None", at(&text, &long)));
    // A key: an error too, at the key or at its value (the key is gone
    // from the buffer once read whole).
    let text = format!(r#"{{{long}: 1, "traceEvents": [{KERNEL}]}}"#);
    for chunk in [1, 7, 64, 4096] {
        let e = read_bytes_with_limits("k.json".as_ref(), text.as_bytes(), chunk, limit);
        let e = e.unwrap_err();
        assert!(
            matches!(e.kind, ErrorKind::TooLarge { event: None, .. }),
            "{chunk}: {e}"
        );
    }
    // An error inside an item already over the limit: the limit.
    let bad = format!(r#"{{"ph": "X", "args": {{"a": {long}, "b": [}}}}"#);
    let text = trace_of(&[KERNEL, &bad]);
    assert_eq!(err(&text), format!("too large {} Some(1)", at(&text, &bad)));
    // Within the limit, the error itself.
    let bad = r#"{"ph": "X", "args": {"b": [}}"#;
    let text = trace_of(&[KERNEL, bad]);
    assert_eq!(err(&text), format!("syntax {}", at(&text, "}}]")));
}

/// A member the model reads is parsed into a tree that takes many times
/// its text: over 4 MiB it is ignored, with a warning, and the trace read.
#[test]
fn issue_12_a_giant_member_the_model_reads_is_ignored() {
    let zeros = vec!["0"; 3 << 20].join(",");
    let text = format!(r#"{{"deviceProperties": [{zeros}], "traceEvents": [{KERNEL}]}}"#);
    let t = read_ok("dev.json", text.as_bytes());
    assert!(t.meta.devices.is_empty());
    assert_eq!(t.events.len(), 1);
    assert!(
        t.warnings
            .iter()
            .any(|w| w == "top-level \"deviceProperties\" of 6 MB is over 4 MiB: ignored"),
        "{:?}",
        t.warnings
    );
    // Under it, the devices a host could have are kept, the rest ignored.
    let zeros = vec!["{}"; 5000].join(",");
    let text = format!(r#"{{"deviceProperties": [{zeros}], "traceEvents": [{KERNEL}]}}"#);
    assert_eq!(
        read_ok("dev.json", text.as_bytes()).meta.devices.len(),
        1024
    );
}

/// A real trace with a second `traceEvents` array appended (its own first
/// 50 events): both were read, one after the other, so those 50 events
/// were counted twice without a word. JSON readers keep one array or the
/// other, so which is the trace is unclear: an error naming the byte.
/// Put first, an empty one was read with the real one after it.
#[test]
fn a_second_trace_events_array_is_an_error() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let json = json_bytes(&c, "micro/a100-event-sync.json.gz");
    let text = String::from_utf8(json).unwrap();
    let whole = read_ok("t.json", text.as_bytes()).events_total;
    let body = text.trim_end().strip_suffix('}').unwrap();
    let events = &text[text.find("\"traceEvents\"").unwrap()..];
    let first_50: Vec<&str> = events.split("\n  {").skip(1).take(50).collect();
    assert_eq!(first_50.len(), 50);
    let second = format!(
        "[{{{}]",
        first_50.join("\n  {").trim_end().trim_end_matches(',')
    );
    let doubled = format!("{body}, \"traceEvents\": {second}}}");
    let at = body.len() + ", \"traceEvents\": ".len();
    // The appended array is itself a valid list of events.
    let alone = format!("{{\"traceEvents\": {second}}}");
    assert_eq!(read_ok("t.json", alone.as_bytes()).events_total, 50);
    for chunk in [1, 7, 1 << 20] {
        let e = read_bytes_with_chunk(std::path::Path::new("t.json"), doubled.as_bytes(), chunk)
            .unwrap_err();
        match &e.kind {
            ErrorKind::Syntax {
                offset, message, ..
            } => {
                assert_eq!(*offset, at as u64, "{e}");
                assert!(
                    message.contains(&format!(
                        "a second \"traceEvents\" array (the first held {whole} events): \
                         which of them is the trace is unclear (JSON readers keep the last; \
                         lumos reads events as they come and has read the first)"
                    )),
                    "{e}"
                );
            }
            _ => panic!("{e}"),
        }
    }
    let e = read_err("t.json", doubled.as_bytes());
    assert!(e.to_string().contains("second \"traceEvents\""), "{e}");
    let empty_first = format!("{{\"traceEvents\": [], {}", &text.trim_start()[1..]);
    let e = read_err("t.json", empty_first.as_bytes());
    assert!(e.to_string().contains("(the first held 0 events)"), "{e}");
}

/// A used top-level member written twice (two `distributedInfo` naming
/// different ranks): at first the second silently replaced the first's
/// fields it held (a `world_size` the second left out stayed the
/// first's), then the first was read with a warning, where a member an
/// event repeats keeps the last. Now the last is read, as JSON readers
/// do, the first forgotten with its warnings, and the repeat warned once.
#[test]
fn a_repeated_top_level_member_keeps_the_last_with_a_warning() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let json = json_bytes(&c, "single-rank/a100-ddp-rank0of2-event-record.json.gz");
    let text = String::from_utf8(json).unwrap();
    let once = read_ok("t.json", text.as_bytes());
    assert_eq!(once.meta.rank, 0);
    assert_eq!(once.meta.rank_source, RankSource::DistributedInfo);
    assert!(once.meta.world_size.is_some() && !once.meta.devices.is_empty());
    let body = text.trim_end().strip_suffix('}').unwrap();
    let repeated = |key: &str| {
        format!("top-level \"{key}\" appears twice or more: the last is read, as JSON readers do")
    };
    let twice = format!(
        "{body}, \"distributedInfo\": {{\"rank\": 1}}, \"schemaVersion\": 7, \
         \"deviceProperties\": [], \"hostname\": \"a\", \"hostname\": \"b\"}}"
    );
    let t = read_ok_any_chunk("t.json", twice.as_bytes());
    assert_eq!(
        (t.meta.rank, t.meta.rank_source),
        (1, RankSource::DistributedInfo)
    );
    assert_eq!(t.meta.world_size, None, "not kept from the first");
    assert!(t.meta.process_groups.is_empty());
    assert_eq!(t.meta.schema_version, Some(7));
    assert!(t.meta.devices.is_empty());
    assert_eq!(t.meta.hostname.as_deref(), Some("b"));
    assert_eq!(t.events_total, once.events_total);
    for key in [
        "distributedInfo",
        "schemaVersion",
        "deviceProperties",
        "hostname",
    ] {
        assert_eq!(
            t.warnings.iter().filter(|w| **w == repeated(key)).count(),
            1,
            "{key}: {:?}",
            t.warnings
        );
    }
    // Four times: one warning; an earlier value's warnings are taken back
    // with it, the last's kept.
    let bad_rank = |r: &str| format!("{{\"rank\": {r}, \"world_size\": 8}}");
    let thrice = format!(
        "{body}, \"distributedInfo\": {}, \"distributedInfo\": {}, \"distributedInfo\": {}}}",
        bad_rank("\"x\""),
        bad_rank("3"),
        bad_rank("9"),
    );
    let t = read_ok_any_chunk("t.json", thrice.as_bytes());
    assert_eq!((t.meta.rank, t.meta.world_size), (9, Some(8)));
    let repeats = t
        .warnings
        .iter()
        .filter(|w| **w == repeated("distributedInfo"));
    assert_eq!(repeats.count(), 1, "{:?}", t.warnings);
    assert!(
        !t.warnings
            .iter()
            .any(|w| w.contains("is not a rank number")),
        "{:?}",
        t.warnings
    );
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("distributedInfo.rank 9 is not below its world_size 8")),
        "{:?}",
        t.warnings
    );
    // An unused member may repeat: it is never read.
    let traced = format!("{body}, \"traceName\": \"x\"}}");
    assert_eq!(read_ok("t.json", traced.as_bytes()).warnings, once.warnings);
}

/// A real trace in UTF-32, or in UTF-16 without a byte order mark: the
/// first read as UTF-16 (its mark starts as UTF-16's), the second as
/// "invalid JSON at byte 1: expected a key, found byte 0x00" (little
/// endian) or binary data (big endian). Each is named, with the command
/// that converts it.
#[test]
fn wide_encodings_are_named_with_or_without_a_mark() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let json = json_bytes(&c, "micro/a100-simple-add.json.gz");
    let text = String::from_utf8(json).unwrap();
    let utf16 = |big: bool| -> Vec<u8> {
        text.encode_utf16()
            .flat_map(|u| match big {
                true => u.to_be_bytes(),
                false => u.to_le_bytes(),
            })
            .collect()
    };
    let utf32 = |big: bool, mark: bool| -> Vec<u8> {
        let chars = mark.then_some('\u{feff}').into_iter().chain(text.chars());
        chars
            .flat_map(|ch| match big {
                true => (ch as u32).to_be_bytes(),
                false => (ch as u32).to_le_bytes(),
            })
            .collect()
    };
    let cases = [
        (
            utf16(false),
            "UTF-16 text (little-endian, no byte order mark)",
            "UTF-16LE",
        ),
        (
            utf16(true),
            "UTF-16 text (big-endian, no byte order mark)",
            "UTF-16BE",
        ),
        (utf32(false, true), "UTF-32 text", "UTF-32"),
        (utf32(true, true), "UTF-32 text", "UTF-32"),
        (utf32(false, false), "UTF-32 text", "UTF-32"),
        (utf32(true, false), "UTF-32 text", "UTF-32"),
    ];
    for (data, what, from) in cases {
        let e = read_err("t.json", &data);
        assert!(e.to_string().contains(&format!("is {what}")), "{e}");
        assert!(
            e.to_string().contains(&format!("iconv -f {from} -t UTF-8")),
            "{e}"
        );
        let e = read_err("t.json.gz", &lumos_testkit::gzip(&data));
        assert!(e.to_string().contains(what), "{e}");
    }
}

/// `json`, a trace, with `event` added as the first of its
/// `traceEvents` or the last (the events' order in the file is what the
/// reader meets).
fn with_event(json: &[u8], event: &str, first: bool) -> Vec<u8> {
    let mut doc: serde_json::Value = serde_json::from_slice(json).expect("JSON");
    let events = doc["traceEvents"].as_array_mut().expect("traceEvents");
    let event = serde_json::from_str(event).expect("event");
    if first {
        events.insert(0, event);
    } else {
        events.push(event);
    }
    serde_json::to_vec(&doc).unwrap()
}

/// One event at `ts` 0 or -1 among a trace's absolute microsecond times
/// (1.7e15) made a window of 54 years, flagged only by a "window with no
/// CPU events": such starts are refused, naming the event, wherever it
/// is in the file; a real trace's starts never are.
#[test]
fn an_event_starting_far_from_the_rest_of_its_trace_is_refused() {
    let Some(corpus) = lumos_testkit::corpus() else {
        eprintln!("skipped: no corpus");
        return;
    };
    let rel = "single-rank/h100-qwen-0.5b-inference.json.gz";
    let json = json_bytes(&corpus, rel);
    let t = read_ok("t.json", &json);
    let first = t.events.iter().map(|e| e.ts_ns).min().unwrap();
    // Absolute times: 16 days from the clock's origin.
    assert!(first > 1_000_000_000_000_000, "absolute times: {first}");
    let op = |ts: &str| {
        format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "stray", "pid": 1, "tid": 1, "ts": {ts}, "dur": 1}}"#
        )
    };
    for (ts, at_first, when) in [
        ("0", true, "days before the other"),
        ("-1", false, "days before the other"),
        ("3400000000000000", true, "years after the other"),
    ] {
        let data = with_event(&json, &op(ts), at_first);
        let e = read_err("t.json", &data);
        assert!(
            matches!(e.kind, ErrorKind::OutlyingStarts { events: 1, .. }),
            "{e}"
        );
        let m = e.to_string();
        assert!(m.contains("1 event starts "), "{m}");
        assert!(m.contains(when), "{m}");
        assert!(m.contains(r#"first "stray" at traceEvents["#), "{m}");
        assert!(m.contains(&format!("(ts {ts}.000 us")), "{m}");
        if at_first {
            assert!(m.contains("traceEvents[0]"), "{m}");
        } else {
            assert!(m.contains("traceEvents[18221]"), "{m}");
        }
    }
    // Near the rest, a stray start is read as any other.
    let near = format!("{}", first / 1000 - 5_000_000);
    read_ok("t.json", &with_event(&json, &op(&near), true));
    // A kernel days from the host's events is a device clock off its
    // host's (the graph build warns), not a damaged ts; a kernel days from
    // the other kernels is.
    let kernel = |ts: i64| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "stray", "pid": 0, "tid": 7, "ts": {ts}, "dur": 1, "args": {{"correlation": 1, "device": 0, "stream": 7}}}}"#
        )
    };
    let days = 2 * 86_400 * 1_000_000;
    let gpu = (t.events.iter())
        .find(|e| e.category.is_gpu_work())
        .expect("a kernel")
        .ts_ns;
    read_err(
        "t.json",
        &with_event(&json, &kernel(gpu / 1000 + days), true),
    );
    let skewed = format!(
        "{{\"traceEvents\": [{}, {}, {}]}}",
        op("1700000000000000"),
        kernel(1_700_000_000_000_000 + days),
        kernel(1_700_000_000_000_010 + days)
    );
    read_ok("t.json", skewed.as_bytes());
    // Every corpus trace reads as it did.
    for path in corpus.traces("") {
        let t = lumos_trace::read_path(&path);
        assert!(t.is_ok(), "{}: {}", path.display(), summary(&t));
    }
}

/// A rank at or past its world size, and a `pg_config` whose groups leave
/// out the trace's own rank, were read without a word; each is warned
/// about, naming what is wrong, and kept as written.
#[test]
fn a_rank_outside_its_world_or_its_own_groups_is_warned_about() {
    let info = |s: &str| format!("{{\"distributedInfo\": {{{s}}}, \"traceEvents\": [{KERNEL}]}}");
    let t = read_ok("x.json", info(r#""rank": 8, "world_size": 8"#).as_bytes());
    assert_eq!((t.meta.rank, t.meta.world_size), (8, Some(8)));
    assert!(
        t.warnings.iter().any(|w| w.starts_with(
            "distributedInfo.rank 8 is not below its world_size 8: a job of 8 ranks has ranks 0 to 7"
        )),
        "{:?}",
        t.warnings
    );
    let groups = r#""rank": 3, "world_size": 8, "pg_config": [
        {"pg_name": "0", "pg_size": 8, "ranks": [0, 1, 2, 3, 4, 5, 6, 7]},
        {"pg_name": "1", "pg_size": 2, "ranks": [0, 1]},
        {"pg_name": "2", "pg_size": 2, "ranks": "[4, 5]"},
        {"pg_name": "3", "pg_size": 4, "ranks": "[0, 1, ...]"},
        {"pg_name": "4", "pg_size": 2, "ranks": [2, 3]}]"#;
    let t = read_ok("x.json", info(groups).as_bytes());
    let said: Vec<&String> = (t.warnings.iter())
        .filter(|w| w.contains("pg_config"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", t.warnings);
    assert!(
        said[0].starts_with(
            "distributedInfo.pg_config: 2 process groups (\"1\", \"2\") do not list this \
             trace's rank 3 among their ranks"
        ),
        "{}",
        said[0]
    );
    assert_eq!(t.meta.process_groups.len(), 5);
    // Within the world, in its groups: nothing said (as in the corpus).
    let t = read_ok(
        "x.json",
        info(r#""rank": 7, "world_size": 8, "pg_config": [{"pg_name": "0", "ranks": [6, 7]}]"#)
            .as_bytes(),
    );
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

/// Each distinct name is kept, and [`lumos_trace::MAX_TEXT_BYTES`] bounds
/// only one: 1 MB of gzip of 10,000 events named by a number and 60 KB of
/// `a` took 1.2 GB. Distinct names, categories and texts are kept up to a
/// budget (256 MiB; 1,000 bytes here), past which reading stops with an
/// error naming the event; names seen before spend none of it.
#[test]
fn distinct_names_past_the_budget_are_an_error_naming_the_event() {
    let op = |name: &str, ts: usize| {
        format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":0,"tid":1,"ts":{ts},"dur":1,"args":{{"Collective name":"{name}"}}}}"#
        )
    };
    let pad = "a".repeat(100);
    // One name repeated: within any budget.
    let same: Vec<String> = (0..100).map(|i| op(&pad, i)).collect();
    let refs: Vec<&str> = same.iter().map(String::as_str).collect();
    let text = trace_of(&refs);
    let t = lumos_trace::read_bytes_with_text_budget("same.json".as_ref(), text.as_bytes(), 1000)
        .unwrap();
    assert_eq!(t.events.len(), 100);
    // Distinct names: each takes 103 bytes as a name and again as a
    // collective's text, so the fifth passes 1,000 bytes.
    let distinct: Vec<String> = (0..100).map(|i| op(&format!("{i:03}{pad}"), i)).collect();
    let refs: Vec<&str> = distinct.iter().map(String::as_str).collect();
    let text = trace_of(&refs);
    let e = lumos_trace::read_bytes_with_text_budget("names.json".as_ref(), text.as_bytes(), 1000)
        .unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::TooManyTexts {
                event: 4,
                limit: 1000
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "names.json: its distinct names, categories and texts pass 1000 bytes by traceEvents[4], \
         the most lumos keeps (a damaged or hostile file: real traces hold a few hundred KB of them)"
    );
    // The default budget reads them.
    let t = lumos_trace::read_bytes("names.json".as_ref(), text.as_bytes()).unwrap();
    assert_eq!(t.events.len(), 100);
    // Tracks' names and processes' labels are kept one per event, so
    // they count however alike they are (review).
    for (what, meta) in [
        ("thread_name", r#""tid":{i},"args":{"name":"#),
        ("process_labels", r#""args":{"labels":"#),
    ] {
        let events: Vec<String> = (0..100)
            .map(|i| {
                let meta = meta.replace("{i}", &i.to_string());
                format!(r#"{{"ph":"M","name":"{what}","pid":0,{meta}"{pad}"}}}}"#)
            })
            .collect();
        let refs: Vec<&str> = events.iter().map(String::as_str).collect();
        let text = trace_of(&refs);
        let e = lumos_trace::read_bytes_with_text_budget("m.json".as_ref(), text.as_bytes(), 1000)
            .unwrap_err();
        assert!(
            matches!(e.kind, ErrorKind::TooManyTexts { .. }),
            "{what}: {e:?}"
        );
    }
}

/// JSON compares keys after their escapes: `"trace\u0045vents"` is
/// `traceEvents`. A top-level key spelled with an escape was taken as
/// written, so such a trace had "no traceEvents array" and its
/// `distributedInfo` and `deviceProperties` went unread; an event's keys
/// were decoded already. Escaped everywhere, a corpus trace reads as it
/// does plain.
#[test]
fn escaped_keys_name_the_members_they_spell() {
    let Some(corpus) = lumos_testkit::corpus() else {
        eprintln!("skipped: no corpus");
        return;
    };
    let json = json_bytes(&corpus, "single-rank/a100-alexnet-cuda-sync.json.gz");
    let text = String::from_utf8(json.clone()).unwrap();
    let plain = read_ok("t.json", &json);
    assert!(!plain.meta.devices.is_empty() && plain.meta.schema_version == Some(1));
    let escaped = text
        .replace(r#""traceEvents""#, r#""trace\u0045vents""#)
        .replace(r#""distributedInfo""#, r#""distributed\u0049nfo""#)
        .replace(r#""deviceProperties""#, r#""device\u0050roperties""#)
        .replace(r#""schemaVersion""#, r#""\u0073chemaVersion""#)
        .replace(r#""name":"#, r#""n\u0061me":"#)
        .replace(r#""ts":"#, r#""\u0074s":"#);
    assert_ne!(escaped, text);
    for (name, data) in [
        ("t.json", escaped.clone().into_bytes()),
        ("t.json.gz", gzip(escaped.as_bytes())),
    ] {
        let mut t = read_ok_any_chunk(name, &data);
        t.gzipped = false;
        assert_eq!(summary(&Ok(t)), summary(&Ok(plain.clone())), "{name}");
    }
    // A key whose escape is invalid names nothing: read as written.
    let bad = trace_of(&[KERNEL]).replace(r#""traceEvents""#, r#""trace\xEvents""#);
    let e = read_err("bad.json", bad.as_bytes());
    assert!(e.to_string().contains("no traceEvents array"), "{e}");
}

/// A member written twice in an event (two `"name"`s, two `"ts"`) kept
/// the last value without a word; it still does, as JSON readers do, but
/// the events are counted and warned about once, naming the first one
/// and its key.
#[test]
fn repeated_members_keep_the_last_value_and_are_counted() {
    let Some(corpus) = lumos_testkit::corpus() else {
        eprintln!("skipped: no corpus");
        return;
    };
    let json = json_bytes(&corpus, "single-rank/a100-alexnet-cuda-sync.json.gz");
    let text = String::from_utf8(json.clone()).unwrap();
    let plain = read_ok("t.json", &json);
    let kernel = r#""cat": "kernel", "name": ""#;
    let kernels = text.matches(kernel).count();
    assert!(kernels > 50, "{kernels}");
    assert_eq!(plain.skipped.repeated_members, Occurrences::default());
    let twice = text.replace(kernel, r#""cat": "kernel", "name": "first", "name": ""#);
    let mut t = read_ok_any_chunk("t.json", twice.as_bytes());
    let s = &t.skipped;
    assert_eq!(s.repeated_members.count, kernels as u64);
    let first = s.repeated_members.first_index.expect("an event");
    assert_eq!(s.first_repeated_member, Some("name"));
    let warning = format!(
        "{kernels} events write a member twice or more (first at traceEvents[{first}]: \
         \"name\"): the last value read, as JSON readers do"
    );
    assert_eq!(
        t.warnings.iter().filter(|w| **w == warning).count(),
        1,
        "{:?}",
        t.warnings
    );
    // The first event with one is the first kernel; the last name is read.
    let at = text[..text.find(kernel).unwrap()]
        .matches("\"ph\":")
        .count() as u64;
    assert_eq!(first, at - 1);
    t.warnings.retain(|w| *w != warning);
    t.skipped.repeated_members = Occurrences::default();
    t.skipped.first_repeated_member = None;
    assert_eq!(summary(&Ok(t)), summary(&Ok(plain)));
}

/// A collective's `In msg nelems` or `Out msg nelems` past 2^64, negative,
/// a fraction or a text, or a `Group size` past 2^32: read as absent
/// without a word, the collective lost its size silently (a dtype lumos
/// does not know is warned). Now each is counted per key, with the first
/// event, and the event kept without it; `null` is absent, not counted.
#[test]
fn malformed_collective_counts_are_dropped_and_counted() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let json = json_bytes(&c, "single-rank/b200-vllm-tp8-rank0.json.gz");
    let clean = read_ok("t.json", &json);
    assert!(clean.skipped.bad_args.is_empty(), "{:?}", clean.skipped);
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let at = (events.iter())
        .position(|e| e["args"].get("In msg nelems").is_some())
        .expect("a collective");
    let name = events[at]["name"].as_str().unwrap().to_owned();
    let ts = events[at]["ts"].as_f64().unwrap();
    let collective = |t: &lumos_trace::Trace| -> CollectiveArgs {
        let e = (t.events.iter())
            .find(|e| t.name(e) == name && (e.ts_ns as f64 - ts * 1e3).abs() < 2.0)
            .expect("the collective is kept");
        *e.extra.as_ref().unwrap().collective.clone().unwrap()
    };
    let good = collective(&clean);
    assert!(
        good.in_nelems.is_some() && good.bytes().is_some(),
        "{good:?}"
    );
    for (key, value, counted) in [
        ("In msg nelems", "18446744073709551616", true),
        ("In msg nelems", "-4", true),
        ("In msg nelems", "4.5", true),
        ("In msg nelems", "\"many\"", true),
        ("In msg nelems", "null", false),
        ("Out msg nelems", "1e30", true),
        ("Group size", "4294967296", true),
        ("Group size", "-1", true),
    ] {
        let mut doc = doc.clone();
        let args = &mut doc["traceEvents"][at]["args"];
        args[key] = serde_json::from_str(value).unwrap();
        let data = serde_json::to_vec(&doc).unwrap();
        let t = read_ok_any_chunk("t.json", &data);
        let c = collective(&t);
        match key {
            "In msg nelems" => assert_eq!(c.in_nelems, None, "{value}"),
            "Out msg nelems" => assert_eq!(c.out_nelems, None, "{value}"),
            _ => assert_eq!(c.group_size, None, "{value}"),
        }
        assert_eq!(c.name, good.name, "the rest of the collective is kept");
        assert_eq!(t.events.len(), clean.events.len());
        if !counted {
            assert!(t.skipped.bad_args.is_empty(), "{value}");
            continue;
        }
        let bad = t.skipped.bad_args[key];
        assert_eq!(
            (bad.count, bad.first_index),
            (1, at as u64),
            "{key} {value}"
        );
        let warning = format!(
            "1 event with a malformed {key:?} (first at traceEvents[{at}]): kept without it"
        );
        let w = (t.warnings.iter())
            .find(|w| w.starts_with(&warning))
            .unwrap_or_else(|| panic!("{key} {value}: {:?}", t.warnings));
        assert_eq!(w.contains("no size in bytes"), key != "Group size", "{w}");
    }
    // The last value written decides, as for every member.
    let mut doc = doc.clone();
    let ev = doc["traceEvents"][at].to_string();
    let n = good.in_nelems.unwrap();
    let twice = ev.replacen(
        "\"In msg nelems\":",
        "\"In msg nelems\":-1,\"In msg nelems\":",
        1,
    );
    doc["traceEvents"][at] = serde_json::Value::Null;
    let data = serde_json::to_string(&doc)
        .unwrap()
        .replacen("null", &twice, 1);
    let t = read_ok("t.json", data.as_bytes());
    assert_eq!(collective(&t).in_nelems, Some(n));
    assert!(t.skipped.bad_args.is_empty());
}

/// A trace whose `traceEvents` is not an array (an object keyed by id, a
/// string holding the array, `null`): "the top-level object has no
/// traceEvents array" hid that it has one of another type. The error now
/// names the type; an array after it is read.
#[test]
fn a_trace_events_member_that_is_not_an_array_is_named() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let json = json_bytes(&c, "micro/a100-event-sync.json.gz");
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let events = doc["traceEvents"].clone();
    let as_object: serde_json::Map<String, serde_json::Value> = (events.as_array().unwrap())
        .iter()
        .enumerate()
        .map(|(i, e)| (i.to_string(), e.clone()))
        .collect();
    for (value, kind) in [
        (serde_json::Value::Object(as_object), "an object"),
        (serde_json::Value::String(events.to_string()), "a string"),
        (serde_json::Value::Null, "null"),
        (serde_json::json!(92), "a number"),
        (serde_json::json!(true), "a boolean"),
    ] {
        let mut d = doc.clone();
        d["traceEvents"] = value;
        let e = read_err("t.json", &serde_json::to_vec(&d).unwrap());
        assert!(matches!(e.kind, ErrorKind::NotATrace(_)), "{e}");
        let want = format!(
            "t.json: not a Kineto/Chrome trace: the top-level object's traceEvents is {kind}, \
             not an array of events"
        );
        assert_eq!(e.to_string(), want);
    }
    // `null` first, then the array: read (the member written twice is
    // the repeated-member rule's).
    let text = String::from_utf8(json).unwrap();
    let with_null = format!("{{\"traceEvents\": null, {}", &text.trim_start()[1..]);
    let t = read_ok("t.json", with_null.as_bytes());
    assert_eq!(t.events_total, 92);
}

/// A `baseTimeNanoseconds` no clock gives (negative, or near the end of
/// `i64`): kept, it ran a job's clocks past their range and the joint
/// replay failed blaming "durations, latencies or scale factors". It is
/// ignored with a warning naming it; a real one is kept.
#[test]
fn a_base_time_out_of_range_is_ignored_with_a_warning() {
    let base = |v: &str| {
        let text = format!(r#"{{"baseTimeNanoseconds": {v}, "traceEvents": [{KERNEL}]}}"#);
        let t = read_ok("t.json", text.as_bytes());
        let said: Vec<&String> = (t.warnings.iter())
            .filter(|w| w.contains("baseTimeNanoseconds"))
            .collect();
        (t.meta.base_time_ns, said.first().map(|w| w.to_string()))
    };
    assert_eq!(
        base("1700000000000000000"),
        (Some(1_700_000_000_000_000_000), None)
    );
    assert_eq!(
        base("\"1700000000000000000\""),
        (Some(1_700_000_000_000_000_000), None)
    );
    for bad in ["9223372036854775807", "-1", "\"-9223372036854775808\""] {
        let (kept, said) = base(bad);
        assert_eq!(kept, None, "{bad}");
        let want = format!(
            "baseTimeNanoseconds {} is not a time between 1970 and 2191 in nanoseconds: \
             ignored (the events' times are read as written)",
            bad.trim_matches('"')
        );
        assert_eq!(said.as_deref(), Some(want.as_str()), "{bad}");
    }
}

/// Two kernels, one with a `ts` 54 years early, among host events that
/// agree with the other: the device's two groups of starts tied, and the
/// earlier was taken for the trace's, so the error named the good kernel
/// as the one far off. The host's starts break the tie.
#[test]
fn a_tie_of_device_starts_is_broken_by_the_host_clock() {
    let t0 = 1_700_000_000_000_000_i64;
    let event = |cat: &str, name: &str, tid: u32, ts: i64, args: &str| {
        format!(
            r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 1, "tid": {tid},
                "ts": {ts}, "dur": 5, "args": {{{args}}}}}"#
        )
    };
    for early_first in [true, false] {
        let mut kernels = vec![
            event("kernel", "early", 7, 1, r#""stream": 7, "device": 0"#),
            event("kernel", "good", 7, t0 + 200, r#""stream": 7, "device": 0"#),
        ];
        if !early_first {
            kernels.reverse();
        }
        let mut events = vec![
            event("cuda_runtime", "cudaLaunchKernel", 1, t0, ""),
            event("cuda_runtime", "cudaLaunchKernel", 1, t0 + 10, ""),
        ];
        events.extend(kernels);
        let text = format!(r#"{{"traceEvents": [{}]}}"#, events.join(", "));
        let e = read_err("t.json", text.as_bytes());
        let said = e.to_string();
        assert!(said.contains("first \"early\""), "{said}");
        assert!(said.contains("before the other 1 event"), "{said}");
    }
}
