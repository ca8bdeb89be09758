//! The event parser on hand-written elements: fields, types, numbers,
//! escapes, nesting and the lenient cases.

use std::sync::Arc;

use super::*;
use crate::shapes::InputDims;

thread_local! {
    /// Set: `Parser::pass_over_left_out` passes over nothing, so events
    /// left out are read in full, as before it (the reference of
    /// `left_out_events_read_as_in_full`).
    pub(super) static READ_ALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `text` parsed in full, as if no event were left out by its category.
fn parse_in_full(text: &str) -> Parsed {
    READ_ALL.set(true);
    let parsed = parse_event(text.as_bytes());
    READ_ALL.set(false);
    parsed
}

fn complete(text: &str) -> Complete {
    match only_repeats_unwrapped(parse_event(text.as_bytes())) {
        Parsed::Complete(c) => c,
        other => panic!("{other:?}"),
    }
}

/// `p`, unwrapped if the one thing noted of it is a repeated member.
fn only_repeats_unwrapped(p: Parsed) -> Parsed {
    match p {
        Parsed::Repaired { parsed, repairs }
            if Repairs {
                repeated: 0,
                ..repairs
            }
            .is_empty() =>
        {
            *parsed
        }
        other => other,
    }
}

/// `p` without the repeated member noted, if it is an event left out for
/// its category: read only up to its `cat`, such an event's later
/// repeats are not seen (what the module documents), where a full read
/// sees them.
fn repeats_of_left_out_forgotten(p: Parsed) -> Parsed {
    let (parsed, mut repairs) = match p {
        Parsed::Repaired { parsed, repairs } => (*parsed, repairs),
        other => (other, Repairs::default()),
    };
    if matches!(
        parsed,
        Parsed::Skip {
            reason: SkipReason::NotModeled | SkipReason::UnknownCategory,
            ..
        }
    ) {
        repairs.repeated = 0;
    }
    parsed.with_repairs(repairs)
}

fn resolve<'b>(t: &'b Text, element: &'b str) -> &'b str {
    std::str::from_utf8(t.bytes(element.as_bytes())).unwrap()
}

#[test]
fn decimal_micros_are_exact() {
    assert_eq!(
        parse_decimal_micros("1712867402348256.123"),
        Micros::Ns(1_712_867_402_348_256_123)
    );
    assert_eq!(parse_decimal_micros("0.5"), Micros::Ns(500));
    assert_eq!(parse_decimal_micros("-2"), Micros::Ns(-2000));
    assert_eq!(parse_decimal_micros("x"), Micros::Invalid);
    // As the same text written as a number reads: an exponent, and a
    // fourth decimal rounding half away from zero.
    assert_eq!(parse_decimal_micros("1e3"), Micros::Ns(1_000_000));
    assert_eq!(parse_decimal_micros("2.5E-1"), Micros::Ns(250));
    assert_eq!(parse_decimal_micros("-1.5e0"), Micros::Ns(-1500));
    assert_eq!(parse_decimal_micros("1e999"), Micros::OutOfRange);
    assert_eq!(parse_decimal_micros("1e"), Micros::Invalid);
    assert_eq!(parse_decimal_micros("0.0005"), Micros::Ns(1));
    assert_eq!(parse_decimal_micros("0.0004999"), Micros::Ns(0));
    assert_eq!(parse_decimal_micros("-0.0005"), Micros::Ns(-1));
    assert_eq!(parse_decimal_micros("12.3456"), Micros::Ns(12_346));
    assert_eq!(
        parse_decimal_micros("99999999999999999999"),
        Micros::OutOfRange
    );
}

#[test]
fn numeric_times_are_exact() {
    let e = complete(
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,
            "ts":1712867402348256.123,"dur":1.0005}"#,
    );
    assert_eq!(e.ts_ns, 1_712_867_402_348_256_123);
    assert_eq!(e.dur_ns, 1001);
    let e = complete(r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5e3,"dur":2}"#);
    assert_eq!(e.ts_ns, 1_500_000);
    assert_eq!(e.dur_ns, 2000);
}

#[test]
fn strings_escapes_and_idents() {
    let text = r#"{"ph":"X","cat":"cpu_op","name":"a\"b\\c\u00e9\ud83d\ude00","pid":"Spans",
            "tid":" 12 ","ts":1,"dur":2,"args":{"External id":"0x10","stream":7.0,
            "Input Dims":[[1, 2], []],"Collective name":5}}"#;
    let e = complete(text);
    assert_eq!(resolve(&e.name, text), "a\"b\\c\u{e9}\u{1f600}");
    match &e.pid {
        PIdent::Name(t) => assert_eq!(resolve(t, text), "Spans"),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.tid, PIdent::Num(12));
    assert_eq!(e.ids.external_id(), Some(16));
    assert_eq!(e.ids.stream(), Some(7));
    assert!(e.extra.unwrap().collective.is_some());
    // The texts are converted by the fold (`read.rs`), once per distinct
    // text.
    let texts = e.texts.unwrap();
    assert_eq!(
        resolve(texts.input_dims.as_ref().unwrap(), text),
        "[[1, 2], []]"
    );
    assert_eq!(resolve(texts.collective_name.as_ref().unwrap(), text), "5");
}

/// The trace whose `traceEvents` are `events` (JSON elements, comma
/// separated), as read.
fn read_one(events: &str) -> crate::Trace {
    let text = format!(r#"{{"traceEvents":[{events}]}}"#);
    crate::read_bytes(std::path::Path::new("t.json"), text.as_bytes()).unwrap()
}

#[test]
fn lone_surrogates_are_counted_and_warned_about_with_invalid_utf8() {
    let kernel = |name: &str| {
        format!(r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":1,"tid":1,"ts":1,"dur":2}}"#)
    };
    let trace = read_one(&[kernel("k"), kernel(r"a\ud83d\ude00"), kernel(r"b\ud800")].join(","));
    assert_eq!(trace.name(&trace.events[1]), "a\u{1f600}");
    assert_eq!(trace.name(&trace.events[2]), "b\u{fffd}");
    assert_eq!(
        trace.skipped.invalid_utf8,
        crate::Occurrences {
            count: 1,
            first_index: Some(2)
        }
    );
    assert_eq!(
        trace.warnings,
        [
            "1 event or member with invalid UTF-8 or lone surrogate escapes \
          (first at traceEvents[2]): read with U+FFFD in place of each"
        ]
    );
    // No repair, no warning.
    let trace = read_one(&kernel(r"a\ud83d\ude00"));
    assert_eq!(trace.skipped.invalid_utf8.count, 0);
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
}

#[test]
fn input_dims_and_collective_texts_are_converted_and_shared() {
    let event = r#"{"ph":"X","cat":"cpu_op","name":"c","pid":1,"tid":1,"ts":1,"dur":2,
        "args":{"Input Dims":[[1, 2], []],"Input type":["float", ""],
        "Collective name":5,"dtype":"Float","Process Group Ranks":"[0, 1]"}}"#;
    let trace = read_one(&[event, event].join(","));
    let [a, b] = &trace.events[..] else {
        panic!("{:?}", trace.events.len())
    };
    let (a, b) = (a.extra.as_deref().unwrap(), b.extra.as_deref().unwrap());
    assert_eq!(a.input_dims, InputDims::parse("[[1, 2], []]"));
    assert_eq!(a.input_type.as_deref(), Some(r#"["float", ""]"#));
    let (ca, cb) = (
        a.collective.as_deref().unwrap(),
        b.collective.as_deref().unwrap(),
    );
    assert_eq!(ca.name.as_deref(), Some("5"));
    assert_eq!(ca.dtype.as_deref(), Some("Float"));
    assert_eq!(
        ca.pg_ranks.as_deref().map(|r| r.ranks.clone()),
        Some(vec![0, 1])
    );
    // One allocation per distinct value.
    assert!(Arc::ptr_eq(
        a.input_type.as_ref().unwrap(),
        b.input_type.as_ref().unwrap()
    ));
    assert!(Arc::ptr_eq(
        ca.name.as_ref().unwrap(),
        cb.name.as_ref().unwrap()
    ));
    assert!(Arc::ptr_eq(
        ca.pg_ranks.as_ref().unwrap(),
        cb.pg_ranks.as_ref().unwrap()
    ));
    assert!(trace.skipped.bad_args.is_empty());
}

#[test]
fn malformed_input_dims_are_dropped_and_flagged() {
    let trace = read_one(
        r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2,
            "args":{"Input Dims":"[[1, 2]]","Sequence number":4}}"#,
    );
    assert_eq!(trace.skipped.bad_args["Input Dims"].count, 1);
    let extra = trace.events[0].extra.as_deref().unwrap();
    assert_eq!(extra.input_dims, None);
    assert_eq!(extra.sequence_number, Some(4));
    // Nothing else: no extras at all.
    let trace = read_one(
        r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2,
            "args":{"Input Dims":"[[1, 2]]"}}"#,
    );
    assert_eq!(trace.skipped.bad_args["Input Dims"].count, 1);
    assert!(trace.events[0].extra.is_none());
    let e = complete(
        r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2,
            "args":{"Input Dims":null}}"#,
    );
    assert!(e.texts.is_none() && e.extra.is_none());
}

#[test]
fn wrong_types_skip_the_event() {
    for text in [
        r#"{"ph":"X","cat":"kernel","name":5,"pid":0,"tid":7,"ts":1,"dur":2}"#,
        r#"{"ph":["X"],"cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":1.5,"tid":7,"ts":1,"dur":2}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":3}"#,
    ] {
        assert!(
            matches!(
                parse_event(text.as_bytes()),
                Parsed::Skip {
                    reason: SkipReason::BadFieldType,
                    ..
                }
            ),
            "{text}"
        );
    }
}

#[test]
fn syntax_errors_have_offsets() {
    let cases: &[(&str, usize)] = &[
        (r#"{"ph":"X","cat":"kernel" "name":"k"}"#, 25),
        (r#"{"ph":"X","ts":01}"#, 16),
        (r#"{"ph":"X","ts":1.}"#, 17),
        (r#"{"ph":"X","ts":tru}"#, 15),
        (r#"{"ph":"X","name":"a\x"}"#, 19),
        ("{\"ph\":\"X\",\"name\":\"a\u{1}\"}", 19),
        (r#"{"ph":"X","args":{"a":[1,}}"#, 25),
        (r#"{"ph":"X"}}"#, 10),
        (r#"{"ph":"X","name":"abc"#, 17),
        // Separators are looked for before whitespace: the offsets are
        // still those of the first byte that is wrong, after any spaces.
        (r#"{"ph" "X"}"#, 6),
        (r#"{"ph":"X" , "cat":"kernel" x}"#, 27),
        (r#"{ "ph":"X",}"#, 11),
        // Arguments the model does not read are skipped in the members'
        // loop, and checked as before; read ones too.
        (r#"{"ph":"X","args":{"queued":01}}"#, 28),
        (r#"{"ph":"X","args":{"queued":[1,2] "x":1}}"#, 33),
        (r#"{"ph":"X","args":{"Sequence number":1x}}"#, 37),
    ];
    for &(text, offset) in cases {
        match parse_event(text.as_bytes()) {
            Parsed::Syntax {
                offset: got,
                message,
            } => {
                assert_eq!(got, offset, "{text}: {message}")
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(200), "]".repeat(200));
    assert!(matches!(
        parse_event(deep.as_bytes()),
        Parsed::Syntax { .. }
    ));
    // After invalid UTF-8, offsets are still the element's.
    assert!(matches!(
        parse_event(b"{\"name\":\"\xff\xfe\", x}"),
        Parsed::Syntax { offset: 14, .. }
    ));
}

#[test]
fn invalid_utf8_is_replaced() {
    let text = b"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\xff\",\"pid\":\"p\xc3\",\
                 \"tid\":1,\"ts\":1,\"dur\":2}";
    let Parsed::Repaired { parsed, repairs } = parse_event(text) else {
        panic!("not repaired");
    };
    assert_eq!(
        repairs,
        Repairs {
            non_finite: 0,
            invalid_utf8: true,
            lone_surrogate: false,
            repeated: 0
        }
    );
    let Parsed::Complete(c) = *parsed else {
        panic!("not kept");
    };
    // Owned: the repaired copy the spans would index is gone.
    assert_eq!(c.name, Text::owned("k\u{fffd}"));
    assert_eq!(c.pid, PIdent::Name(Text::owned("p\u{fffd}")));
}

/// `text`'s repairs and what it amounts to, if it needed any.
fn repaired(text: &str) -> Option<(Repairs, Parsed)> {
    match parse_event(text.as_bytes()) {
        Parsed::Repaired { parsed, repairs } => Some((repairs, *parsed)),
        _ => None,
    }
}

#[test]
fn lone_surrogate_escapes_are_replaced_and_noted() {
    let only = Repairs {
        lone_surrogate: true,
        ..Repairs::default()
    };
    // A high surrogate with nothing, a non-surrogate escape or another
    // high one after it, and a low one alone: each is one U+FFFD, the
    // character after it read as itself.
    for (escaped, want) in [
        (r"k\ud800", "k\u{fffd}"),
        (r"k\ud800x", "k\u{fffd}x"),
        (r"k\ud800\u0041", "k\u{fffd}A"),
        (r"k\ud800\ud800", "k\u{fffd}\u{fffd}"),
        (r"\udc00k", "\u{fffd}k"),
        (r"k\uDFFF\n", "k\u{fffd}\n"),
        (r"\ud83d\ude00\udbff", "\u{1f600}\u{fffd}"),
    ] {
        let text = format!(
            r#"{{"ph":"X","cat":"kernel","name":"{escaped}","pid":1,"tid":1,"ts":1,"dur":2}}"#
        );
        let Some((repairs, Parsed::Complete(c))) = repaired(&text) else {
            panic!("{escaped}: {:?}", parse_event(text.as_bytes()));
        };
        assert_eq!(repairs, only, "{escaped}");
        assert_eq!(c.name, Text::owned(want), "{escaped}");
    }
    // A pair is one character and no repair; so are the escapes of the
    // characters next to the surrogates.
    for escaped in [
        r"\ud83d\ude00",
        r"\uD83D\uDE00",
        r"\ud7ff\ue000",
        r"\udbff\udfff",
    ] {
        let text = format!(
            r#"{{"ph":"X","cat":"kernel","name":"{escaped}","pid":1,"tid":1,"ts":1,"dur":2}}"#
        );
        assert!(
            matches!(parse_event(text.as_bytes()), Parsed::Complete(_)),
            "{escaped}"
        );
    }
    // Wherever the string is read: a pid or tid, an argument the model
    // keeps, one it skips, a key, an object skipped whole, an array (not
    // the plain-array fast path, which takes no escape), an event of a
    // category left out (never passed over with an escape in it, so the
    // escape is read, however late), a metadata event's name, and an
    // element that is not an object.
    for text in [
        r#"{"ph":"X","cat":"kernel","name":"k","pid":"p\ud800","tid":1,"ts":1,"dur":2}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":"\udc00","ts":1,"dur":2}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":1,"ts":1,"dur":2,
            "args":{"Process Group Name":"g\ud800"}}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":1,"ts":1,"dur":2,
            "args":{"grid":[1,1,1],"note":"\ud800"}}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":1,"ts":1,"dur":2,
            "args":{"k\udc00":1}}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":1,"ts":1,"dur":2,
            "x":{"y":["\ud800"]}}"#,
        r#"{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":1,"ts":1,"dur":2,
            "args":{"Input Dims":[[1],["\ud800"]]}}"#,
        r#"{"ph":"X","cat":"python_function","name":"f","pid":1,"tid":1,"ts":1,"dur":2,
            "args":{"Python id":1,"x":"\ud800"}}"#,
        r#"{"ph":"X","cat":"quantum_op","name":"f\ud800","pid":1,"tid":1,"ts":1,"dur":2}"#,
        r#"{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"w\ud800"}}"#,
        r#"{"ph":"X","cat":"kernel","name":5,"pid":1,"tid":1,"x":"\ud800"}"#,
    ] {
        assert_eq!(repaired(text).map(|r| r.0), Some(only), "{text}");
    }
    assert!(matches!(
        parse_non_object(br#"["\ud800"]"#),
        Parsed::Repaired { repairs, .. } if repairs == only
    ));
    // With invalid UTF-8 and a NaN in the same element, all three noted.
    let text = b"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\\ud800\xff\",\"pid\":1,\
                 \"tid\":1,\"ts\":1,\"dur\":NaN}";
    let Parsed::Repaired { repairs, .. } = parse_event(text) else {
        panic!("not repaired");
    };
    assert_eq!(
        repairs,
        Repairs {
            non_finite: 1,
            invalid_utf8: true,
            lone_surrogate: true,
            repeated: 0
        }
    );
}

#[test]
fn non_finite_numbers_are_absent_and_counted() {
    let text = r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":NaN,"ts":1,"dur":2,
            "args":{"correlation":Infinity,"stream":-Infinity,"x":[NaN]}}"#;
    let Parsed::Repaired { parsed, repairs } = parse_event(text.as_bytes()) else {
        panic!("not repaired");
    };
    assert_eq!(repairs.non_finite, 4);
    assert!(matches!(
        *parsed,
        Parsed::Skip {
            reason: SkipReason::MissingPidTid,
            ..
        }
    ));
    let text = r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":1,"dur":NaN}"#;
    assert!(matches!(
        parse_event(text.as_bytes()),
        Parsed::Repaired { parsed, .. } if matches!(*parsed, Parsed::Skip {
            reason: SkipReason::MissingDur, ..
        })
    ));
    for (bad, offset) in [
        ("Nan", 15),
        ("Inf", 15),
        ("-Inf", 16),
        ("-x", 16),
        ("NaNa", 18),
    ] {
        let text = format!(r#"{{"ph":"X","ts":{bad}}}"#);
        match parse_event(text.as_bytes()) {
            Parsed::Syntax { offset: got, .. } => assert_eq!(got, offset, "{bad}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn huge_times_are_out_of_range() {
    for (t, want) in [
        ("1e999", Micros::OutOfRange),
        ("-1e999", Micros::OutOfRange),
        ("9223372036854775.807", Micros::Ns(i64::MAX)),
        ("9223372036854775.9", Micros::OutOfRange),
        ("99999999999999999999999", Micros::OutOfRange),
    ] {
        let text = format!(r#"{{"ph":"X","ts":{t}}}"#);
        let mut p = Parser::new(&text);
        let mut ev = RawEvent::default();
        p.event(&mut ev).unwrap();
        assert_eq!(ev.ts, Some(want), "{t}");
    }
    assert_eq!(
        parse_decimal_micros("9223372036854775.9"),
        Micros::OutOfRange
    );
}

#[test]
fn long_strings_with_specials_anywhere() {
    // A quote, escape, control byte or multi-byte character at every
    // position of a string longer than the 16- and 8-byte scans.
    for at in 0..40 {
        let plain = "é".repeat(at / 2) + &"x".repeat(at % 2);
        let name = format!("{plain}\\n{plain}é漢");
        let text = format!(
            r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":1,"ts":1,"dur":1}}"#
        );
        let e = complete(&text);
        assert_eq!(resolve(&e.name, &text), format!("{plain}\n{plain}é漢"));
        let bad = text.replace("\\n", "\u{1}");
        assert!(
            matches!(parse_event(bad.as_bytes()), Parsed::Syntax { offset, .. }
                if offset == bad.find('\u{1}').unwrap()),
            "{at}"
        );
    }
}

#[test]
fn swar_helpers_are_exact() {
    for c in 0..=255u8 {
        for pos in 0..8 {
            let mut bytes = [b'a'; 8];
            bytes[pos] = c;
            let w = u64::from_le_bytes(bytes);
            let hit = |m: u64| m == 0x80 << (8 * pos);
            assert_eq!(has_byte(w, b'"') != 0, c == b'"');
            if c == b'"' {
                assert!(hit(has_byte(w, b'"')));
            }
            assert_eq!(has_less_than(w, 0x20) != 0, c < 0x20, "{c}");
            if c < 0x20 {
                assert!(hit(has_less_than(w, 0x20)));
            }
        }
    }
}

/// The reference for [`digit_run`]: one digit at a time.
fn digit_run_reference(b: &[u8], mut i: usize) -> (usize, u64) {
    let mut v: u64 = 0;
    while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit()) {
        v = v.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
        i += 1;
    }
    (i, v)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// Eight-at-a-time digits match one at a time, for any run length,
    /// any byte after it and any distance from the end of the text.
    #[test]
    fn digit_run_matches_reference(bytes in proptest::collection::vec(
        proptest::sample::select(b"0123456789/:.e -\"\xb0\x00".to_vec()), 0..40), at in 0usize..40) {
        let at = at.min(bytes.len());
        proptest::prop_assert_eq!(digit_run(&bytes, at), digit_run_reference(&bytes, at));
    }

    /// The fast paths for plain integers (`int`, `micros`, `ident`,
    /// `skip_value`) agree with the general number path on any number-like
    /// text, valid or not, with or without eight bytes after it (the
    /// one-load path of `plain_int`).
    #[test]
    fn integer_fast_paths_match_general_path(text in "-?[0-9]{0,24}(\\.[0-9]{0,5})?([eE][-+]?[0-9]{0,3})?[,} x]?[ ,}x0]{0,9}") {
        let general = |text: &str| {
            let mut p = Parser::new(text);
            let v = p.value().map(|v| match v {
                Value::Num(n) => (n.micros(), Value::Num(n).int::<i64>(), Value::Num(n).int::<u64>()),
                _ => unreachable!("a number"),
            });
            v.map(|v| (v, p.i)).map_err(|e| e.offset)
        };
        let fast = |text: &str| {
            let mut p = Parser::new(text);
            let r = (|| {
                let m = p.micros()?.expect("a number");
                let mut q = Parser::new(text);
                let i = q.int::<i64>()?;
                let mut q = Parser::new(text);
                let u = q.int::<u64>()?;
                Ok((m, i, u))
            })();
            r.map(|v| (v, p.i)).map_err(|e: Box<SyntaxError>| e.offset)
        };
        proptest::prop_assert_eq!(fast(&text), general(&text));
        let mut skip = Parser::new(&text);
        let skipped = skip.skip_value().map(|()| skip.i).map_err(|e| e.offset);
        proptest::prop_assert_eq!(skipped, general(&text).map(|(_, i)| i));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// `skip_value`'s path for plain decimals ends where the general
    /// number parser does, and fails where it fails, for fractions of any
    /// length (past the eight digits of one load) and whatever follows.
    #[test]
    fn decimal_skip_matches_general_path(text in "[0-9]{0,21}(\\.[0-9]{0,20})?([eE.][-+]?[0-9]{0,2})?[,} x.]?[ ,}x0]{0,9}") {
        let mut general = Parser::new(&text);
        let want = general.number().map(|_| general.i).map_err(|e| e.offset);
        let mut skip = Parser::new(&text);
        let got = skip.skip_value().map(|()| skip.i).map_err(|e| e.offset);
        match text.as_bytes().first() {
            Some(b'0'..=b'9') => proptest::prop_assert_eq!(got, want),
            // Not a number: both fail (`skip_value` says what it expected).
            _ => proptest::prop_assert!(got.is_err() && want.is_err()),
        }
    }
}

#[test]
fn a_repeated_args_replaces_the_earlier_one() {
    let base = r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":1,"dur":1,"args":{"External id":5,"correlation":7}"#;
    let c = complete(&format!(r#"{base},"args":{{"correlation":3}}}}"#));
    assert_eq!((c.ids.external_id(), c.ids.correlation()), (None, Some(3)));
    let c = complete(&format!(r#"{base},"args":null}}"#));
    assert_eq!((c.ids.external_id(), c.ids.correlation()), (None, None));
    let c = complete(&format!(r#"{base}}}"#));
    assert_eq!(
        (c.ids.external_id(), c.ids.correlation()),
        (Some(5), Some(7))
    );
    // The extras too, which are made only once one of their keys is seen.
    let c = complete(&format!(
        r#"{base},"args":{{"Sequence number":4}},"args":{{"correlation":3}}}}"#
    ));
    assert!(c.extra.is_none() && c.texts.is_none());
    let c = complete(&format!(r#"{base},"args":{{"Sequence number":4}}}}"#));
    assert_eq!(c.extra.map(|x| x.sequence_number), Some(Some(4)));
    let c = complete(&format!(r#"{base},"args":{{"Sequence number":null}}}}"#));
    assert!(c.extra.is_none());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// The 16-byte scan (with its overlapping last load) finds the same
    /// first special byte as a byte-at-a-time scan, from any start.
    #[test]
    fn scan_plain_matches_reference(bytes in proptest::collection::vec(
        proptest::sample::select(b"ab\"\\\x01\x1f \n\t\xc3\xa9".to_vec()), 0..80), at in 0usize..80) {
        let at = at.min(bytes.len());
        let want = (at..bytes.len())
            .find(|&k| STRING_SPECIAL[bytes[k] as usize])
            .unwrap_or(bytes.len());
        proptest::prop_assert_eq!(scan_plain(&bytes, at), want);
        let ws = (at..bytes.len()).find(|&k| !b" \n\r\t".contains(&bytes[k])).unwrap_or(bytes.len());
        proptest::prop_assert_eq!(skip_ws(&bytes, at), ws);
    }
}

#[test]
fn all_ascii_finds_a_non_ascii_byte_anywhere() {
    for len in [0, 1, 63, 64, 65, 200] {
        let mut text = vec![b'a'; len];
        assert!(all_ascii(&text));
        for at in 0..len {
            text[at] = 0x80 | (at as u8);
            assert!(!all_ascii(&text), "{len} {at}");
            text[at] = b'a';
        }
    }
}

#[test]
fn parsed_elements_move_without_memcpy() {
    // LLVM moves up to 128 bytes with inline stores and calls `memcpy`
    // above; a parsed element is moved three times on its way to the fold.
    assert!(std::mem::size_of::<Option<Parsed>>() <= 128);
    assert_eq!(std::mem::size_of::<Text>(), 16);
    assert_eq!(std::mem::size_of::<PIdent>(), 16);
}

#[test]
fn spans_past_u32_are_copied() {
    assert_eq!(Text::span(7, "ab"), Text::Span(7, 9));
    let far = u32::MAX as usize - 1;
    assert_eq!(Text::span(far, "a"), Text::Span(u32::MAX - 1, u32::MAX));
    assert_eq!(Text::span(far, "ab"), Text::owned("ab"));
}

#[test]
fn event_ids_keep_every_value() {
    let ids = EventIds::new(Some(u64::MAX), None, Some(-1), Some(i64::MIN));
    assert_eq!(ids.correlation(), Some(u64::MAX));
    assert_eq!(ids.external_id(), None);
    assert_eq!(ids.stream(), Some(-1));
    assert_eq!(ids.device(), Some(i64::MIN));
    let none = EventIds::new(None, Some(0), None, None);
    assert_eq!((none.correlation(), none.external_id()), (None, Some(0)));
    assert_eq!((none.stream(), none.device()), (None, None));
}

#[test]
fn each_unescaped_string_keeps_its_own_text() {
    // Several strings with escapes in one element: each `RawStr` must
    // resolve to its own entry of the parser's list.
    let text = r#"{"ph":"X","cat":"kernel","name":"n\u0041","pid":"p\"1","tid":"t\\2",
        "ts":1,"dur":2,"args":{"Collective name":"c\u0042","Process Group Name":"g\/3",
        "In msg nelems":4}}"#;
    let e = complete(text);
    assert_eq!(e.name, Text::owned("nA"));
    assert_eq!(e.pid, PIdent::Name(Text::owned("p\"1")));
    assert_eq!(e.tid, PIdent::Name(Text::owned("t\\2")));
    let texts = e.texts.expect("collective texts");
    assert_eq!(texts.collective_name, Some(Text::owned("cB")));
    assert_eq!(texts.pg_name, Some(Text::owned("g/3")));
    let skipped = r#"{"ph":"X","cat":"c\u0061t","name":"k","pid":1,"tid":1,"ts":1,"dur":1}"#;
    match parse_event(skipped.as_bytes()) {
        Parsed::Skip { cat, reason } => {
            assert_eq!(cat, Text::owned("cat"));
            assert_eq!(reason, SkipReason::UnknownCategory);
        }
        other => panic!("{other:?}"),
    }
    let meta =
        r#"{"ph":"M","name":"thread_name","pid":"p\u0031","tid":2,"args":{"name":"w\u00e9"}}"#;
    match parse_event(meta.as_bytes()) {
        Parsed::TrackName { pid, tid, name } => {
            assert_eq!(pid, PIdent::Name(Text::owned("p1")));
            assert_eq!(tid, Some(PIdent::Num(2)));
            assert_eq!(name, "w\u{e9}");
        }
        other => panic!("{other:?}"),
    }
}

/// The category the element was skipped under, and why.
fn skipped(text: &str) -> (String, SkipReason) {
    match only_repeats_unwrapped(parse_event(text.as_bytes())) {
        Parsed::Skip { cat, reason } => (resolve(&cat, text).to_owned(), reason),
        other => panic!("{text}: {other:?}"),
    }
}

#[test]
fn a_left_out_category_is_not_read_past() {
    // What follows `ph` and `cat` is not parsed: neither its types nor
    // its numbers' syntax are checked, and a NaN in it is not counted.
    for rest in [
        r#""name":5,"pid":[],"ts":"x","dur":-1"#,
        r#""name":"f","ts":01,"args":{"a":[1,}}"#,
        r#""name":"f","ts":tru,"dur":NaN"#,
        r#""args":{"Python id":1} "name":"f""#,
    ] {
        for cat in ["python_function", "quantum_op"] {
            let text = format!(r#"{{"ph":"X","cat":"{cat}",{rest}}}"#);
            let reason = match cat {
                "python_function" => SkipReason::NotModeled,
                _ => SkipReason::UnknownCategory,
            };
            assert_eq!(skipped(&text), (cat.to_owned(), reason), "{text}");
        }
    }
    // Pretty-printed, as Kineto writes it, and `cat` before `ph`.
    let text = "{\n    \"cat\": \"python_function\",\n    \"ph\": \"X\",\n    \
        \"name\": \"torch/nn/modules/module.py(1736): _call_impl\",\n    \"pid\": 1,\n    \
        \"tid\": 1,\n    \"ts\": 1.5,\n    \"dur\": 2,\n    \"args\": {\n      \
        \"Python parent id\": 1,\n      \"Python id\": 2,\n      \"Ev Idx\": 3\n    }\n  }";
    assert_eq!(
        skipped(text),
        ("python_function".to_owned(), SkipReason::NotModeled)
    );
}

#[test]
fn what_could_change_a_left_out_event_is_read() {
    // A later `cat` or `ph` overrides the first, a key may be escaped, and
    // an earlier member of the wrong type skips the event as such: each is
    // read as the whole element says.
    let late_cat = r#"{"ph":"X","cat":"python_function","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"cat":"kernel"}"#;
    assert_eq!(complete(late_cat).category, Category::Kernel);
    let escaped = r#"{"ph":"X","cat":"python_function","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"c\u0061t":"kernel"}"#;
    assert_eq!(complete(escaped).category, Category::Kernel);
    let late_ph =
        r#"{"ph":"X","cat":"python_function","name":"k","pid":0,"tid":7,"ts":1,"ph":"i"}"#;
    assert_eq!(
        skipped(late_ph),
        ("python_function".to_owned(), SkipReason::NotATask)
    );
    let bad_before = r#"{"name":5,"ph":"X","cat":"python_function","ts":1}"#;
    assert_eq!(skipped(bad_before).1, SkipReason::BadFieldType);
    // An escape anywhere after the category: read in full, so its errors
    // are reported.
    let text = r#"{"ph":"X","cat":"python_function","name":"a\tb","ts":tru}"#;
    assert!(matches!(
        parse_event(text.as_bytes()),
        Parsed::Syntax { .. }
    ));
    // Every length around the 16-byte steps, with the later `cat` at the
    // very end.
    for pad in 0..40 {
        let name = "n".repeat(pad);
        let text = format!(
            r#"{{"ph":"X","cat":"python_function","name":"{name}","cat":"kernel","pid":0,"tid":1,"ts":1,"dur":1}}"#
        );
        assert_eq!(complete(&text).category, Category::Kernel, "{text}");
        let text = format!(r#"{{"ph":"X","cat":"python_function","name":"{name}","ph":"i"}}"#);
        assert_eq!(skipped(&text).1, SkipReason::NotATask, "{text}");
        let text = format!(r#"{{"ph":"X","cat":"python_function","name":"{name}","ts":"x"}}"#);
        assert_eq!(skipped(&text).1, SkipReason::NotModeled, "{text}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5000))]

    /// The 32- and 16-byte scans of what follows a left-out event's
    /// category agree with the byte at a time one, for any length and any
    /// place of a quote, `p`, `c` or backslash.
    #[test]
    fn inert_scans_match_bytes(rest in proptest::collection::vec(
        proptest::sample::select(b"\"phcat\\x :{}".to_vec()), 0..120)) {
        let bytes = inert_bytes(&rest);
        proptest::prop_assert_eq!(inert_sse2(&rest), bytes);
        proptest::prop_assert_eq!(cannot_change_the_event(&rest), bytes);
        #[cfg(target_arch = "x86_64")]
        if rest.len() > 32 && std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 was detected just above.
            proptest::prop_assert_eq!(unsafe { inert_avx2(&rest) }, bytes);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20000))]

    /// Where the one-loop array skip takes an array, it is JSON (as
    /// serde_json reads it) and ends where serde_json's value ends; where
    /// it does not, the general path reads it, errors included.
    #[test]
    fn plain_arrays_are_json(
        bytes in "\\[[\\[\\]0-9 ,\"a.e\\-\\\\\n]{0,40}",
        tokens in proptest::collection::vec(proptest::sample::select(vec![
            "[", "[", "]", "]", ",", ",", " ", "\n", "1", "23", "0", "\"x\"", "\"\"", "-", ".5",
        ]), 1..40),
    ) {
        for text in [bytes, format!("[{}", tokens.concat())] {
            check_plain_array(&text)?;
        }
    }
}

/// [`plain_arrays_are_json`] of one text.
fn check_plain_array(text: &str) -> std::result::Result<(), proptest::test_runner::TestCaseError> {
    if let Some(end) = Parser::new(text).plain_array_end() {
        let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
        let value = values.next();
        proptest::prop_assert!(
            matches!(value, Some(Ok(serde_json::Value::Array(_)))),
            "{text:?}"
        );
        proptest::prop_assert_eq!(values.byte_offset(), end, "{:?}", text);
    }
    Ok(())
}

#[test]
fn plain_arrays_take_the_common_lists() {
    for (text, end) in [
        ("[[2048, 12288], [12288, 1536], []]", 34),
        ("[16, 24, 1]}", 11),
        ("[\n  \"\",\n  \"[-1]\",\n  \"False\"\n],", 29),
        ("[ ]", 3),
        ("[0]", 3),
    ] {
        assert_eq!(Parser::new(text).plain_array_end(), Some(end), "{text}");
    }
    // Left to the general path: signs, fractions, exponents, escapes,
    // literals, objects, leading zeros, and arrays that do not end.
    for text in [
        "[-1]",
        "[1.5]",
        "[1e3]",
        "[\"a\\\"\"]",
        "[null]",
        "[{}]",
        "[01]",
        "[1,]",
        "[1",
        "[NaN]",
    ] {
        assert_eq!(Parser::new(text).plain_array_end(), None, "{text}");
    }
    // The nesting limit is the general path's to report.
    let deep = format!(
        "{}{}",
        "[".repeat(MAX_NESTING + 1),
        "]".repeat(MAX_NESTING + 1)
    );
    assert_eq!(Parser::new(&deep).plain_array_end(), None);
    let limit = format!("{}{}", "[".repeat(MAX_NESTING), "]".repeat(MAX_NESTING));
    assert_eq!(Parser::new(&limit).plain_array_end(), Some(limit.len()));
}

/// Members of generated events: the keys that decide whether an event is
/// left out, escaped, repeated and inside values, around other members.
const MEMBERS: &[&str] = &[
    r#""ph":"X""#,
    r#""ph":"X""#,
    r#""ph":"i""#,
    r#""ph":"s""#,
    r#""p\u0068":"X""#,
    r#""ph":"\u0058""#,
    r#""cat":"python_function""#,
    r#""cat":"python_function""#,
    r#""cat":"quantum_op""#,
    r#""cat":"kernel""#,
    r#""cat":"ac2g""#,
    r#""c\u0061t":"kernel""#,
    r#""cat":"py\u0074hon_function""#,
    r#""name":"f""#,
    r#""name":"[memory]""#,
    r#""name":"a\nb""#,
    r#""pid":1"#,
    r#""tid":"t""#,
    r#""ts":1.5"#,
    r#""dur":2"#,
    r#""id":7"#,
    r#""args":{"Python id":1,"x":["ph","cat"],"y":{"cat":"kernel"}}"#,
    r#""args":{"correlation":3,"stream":7,"device":0}"#,
    r#""x":"ph""#,
    r#""x":"cat""#,
    r#""x":"\"cat\"""#,
    r#""x":[1,2,[3]]"#,
    r#""x":"\ud800""#,
    r#""name":"\udc00\ud83d\ude00""#,
];

/// The same, of the wrong type or not finite.
const BAD_MEMBERS: &[&str] = &[
    r#""name":5"#,
    r#""ts":"x""#,
    r#""pid":[1]"#,
    r#""args":3"#,
    r#""dur":NaN"#,
    r#""x":Infinity"#,
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20000))]

    /// An event is read as in full whenever it is valid: the same result,
    /// whatever its members' order, repeats, escapes and spacing. With a
    /// member of the wrong type or a `NaN` after a left-out category, the
    /// only difference allowed is the documented one: the event skipped
    /// for its category where a full read skips it for the bad member or
    /// counts the `NaN`; a lone surrogate escape is noted by both.
    #[test]
    fn left_out_events_read_as_in_full(
        members in proptest::collection::vec(proptest::sample::select(MEMBERS), 0..9),
        bad in proptest::option::of((proptest::sample::select(BAD_MEMBERS), 0usize..9)),
        space in proptest::sample::select(&["", " ", "\n    "][..]),
    ) {
        let mut members = members;
        if let Some((member, at)) = bad {
            members.insert(at.min(members.len()), member);
        }
        let text = format!("{{{space}{}{space}}}", members.join(&format!(",{space}")));
        let (fast, full) = (parse_event(text.as_bytes()), parse_in_full(&text));
        let (fast, full) = (repeats_of_left_out_forgotten(fast), repeats_of_left_out_forgotten(full));
        let (fast_s, full_s) = (format!("{fast:?}"), format!("{full:?}"));
        if bad.is_none() {
            proptest::prop_assert_eq!(fast_s, full_s, "{}", text);
        } else if fast_s != full_s {
            let unwrap = |p: Parsed| match p {
                Parsed::Repaired { parsed, repairs } => (*parsed, repairs),
                other => (other, Repairs::default()),
            };
            let ((fast, fast_repairs), (full, full_repairs)) = (unwrap(fast), unwrap(full));
            let left_out = matches!(
                fast,
                Parsed::Skip { reason: SkipReason::NotModeled | SkipReason::UnknownCategory, .. }
            );
            let full_differs_by_the_bad_member =
                matches!(full, Parsed::Skip { reason: SkipReason::BadFieldType, .. })
                    || full_repairs.non_finite > fast_repairs.non_finite;
            proptest::prop_assert!(left_out && full_differs_by_the_bad_member, "{} {} {}", text, fast_s, full_s);
            // No event with an escape is passed over: a lone surrogate is
            // noted either way.
            proptest::prop_assert_eq!(fast_repairs.lone_surrogate, full_repairs.lone_surrogate, "{}", text);
        }
    }
}

/// A member written twice keeps its last value, as JSON readers do, and
/// the event is marked with the first key repeated among those read; a
/// repeat of a key not read, or the same key in `args` and at the top,
/// is none.
#[test]
fn repeated_members_keep_the_last_value_and_are_noted() {
    let base = r#""ph":"X","cat":"kernel","pid":0,"tid":7"#;
    for (members, key) in [
        (r#""name":"k","ts":1,"ts":5,"dur":2"#, Some("ts")),
        (
            r#""name":"j","name":"k","ts":5,"dur":3,"dur":2"#,
            Some("name"),
        ),
        (
            r#""name":"k","ts":5,"dur":2,"args":{},"args":{"stream":3}"#,
            Some("args"),
        ),
        (
            r#""name":"k","ts":5,"dur":2,"args":{"stream":1,"device":0,"stream":3}"#,
            Some("args.stream"),
        ),
        (
            r#""name":"k","ts":5,"dur":2,"args":{"External id":1,"external id":4}"#,
            Some("args.External id"),
        ),
        (
            r#""name":"k","ts":5,"dur":2,"x":1,"x":2,"args":{"y":1,"y":2}"#,
            None,
        ),
        (
            r#""name":"k","ts":5,"dur":2,"args":{"name":"n","ts":1}"#,
            None,
        ),
    ] {
        let text = format!("{{{base},{members}}}");
        let (repairs, parsed) = match parse_event(text.as_bytes()) {
            Parsed::Repaired { parsed, repairs } => (repairs, *parsed),
            other => (Repairs::default(), other),
        };
        let name = (repairs.repeated != 0).then(|| repeated_member_name(repairs.repeated));
        assert_eq!(name, key, "{text}");
        let Parsed::Complete(c) = parsed else {
            panic!("{text}: not kept");
        };
        assert_eq!((c.ts_ns, c.dur_ns), (5000, 2000), "{text}");
        assert_eq!(resolve(&c.name, &text), "k", "{text}");
        if text.contains("stream") {
            assert_eq!(c.ids.stream(), Some(3), "{text}");
        }
    }
}

/// The names the repeated-member warning gives are the keys the parser
/// reads: each of [`ARG_KEY_NAMES`] (and [`OTHER_SPELLINGS`]) is the
/// [`ArgKey`] of its position, and an event writing any of
/// [`EVENT_KEYS`] or of them twice is named by that key. Written apart
/// from [`ArgKey::of`] to keep it inlined in the hot loop, so tied to it
/// here.
#[test]
fn repeated_member_names_follow_the_parser_s_keys() {
    for (i, name) in ARG_KEY_NAMES.iter().enumerate() {
        let k = ArgKey::of(&name.as_bytes()["args.".len()..]).map(|k| k as usize);
        assert_eq!(k, Some(i), "{name}");
    }
    for (spelling, key) in OTHER_SPELLINGS {
        assert_eq!(
            ArgKey::of(spelling.as_bytes()).map(|k| k as usize),
            Some(key as usize),
            "{spelling}"
        );
    }
    let base = r#""ph":"X","cat":"kernel","pid":1,"tid":2,"id":3,"name":"k","ts":5,"dur":2"#;
    for key in EVENT_KEYS.iter().filter(|&&k| k != "args") {
        let value = if ["ph", "cat", "name"].contains(key) {
            r#""X""#
        } else {
            "7"
        };
        let text = format!(r#"{{{base},"{key}":{value},"args":{{}},"args":{{}}}}"#);
        let first = match parse_event(text.as_bytes()) {
            Parsed::Repaired { repairs, .. } => repeated_member_name(repairs.repeated),
            _ => "none",
        };
        assert_eq!(first, *key, "{text}");
    }
}
