//! The HTML report as text: built from a trace written in code whose names
//! carry HTML, and from a corpus trace. (crates/cli/tests/report.rs opens
//! it in a browser.)

use std::path::Path;

use lumos_report::HtmlReport;

/// A launch and its kernel, both named with characters HTML reads.
const TRACE: &str = r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::<script>alert(1)</script>", "pid": 1, "tid": 1, "ts": 0, "dur": 30},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "void k<float, \"x\">(a&b)", "pid": 0, "tid": 7, "ts": 12, "dur": 40, "args": {"correlation": 7, "stream": 7, "device": 0}}
]}"#;

#[test]
fn every_name_from_the_trace_is_escaped() {
    let trace = lumos_trace::read_bytes(Path::new("<t>.json"), TRACE.as_bytes()).unwrap();
    let replayed = lumos_report::replay(&trace, &Default::default()).unwrap();
    let page = HtmlReport::of_trace(&replayed).render();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("<t>"));
    assert!(
        page.contains("void k&lt;float, &quot;x&quot;&gt;(a&amp;b)"),
        "{page}"
    );
    assert!(page.contains("&lt;t&gt;.json"));
    // Verdict, steps, busy timeline and critical path at least.
    assert!(page.matches("<svg").count() >= 3);
}

#[test]
fn a_corpus_trace_has_every_section() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace =
        lumos_trace::read_path(&corpus.path("single-rank/a100-alexnet-cuda-sync.json.gz")).unwrap();
    let replayed = lumos_report::replay(&trace, &Default::default()).unwrap();
    let report = HtmlReport::of_trace(&replayed);
    assert_eq!(report.replay().traces.len(), 1);
    let page = report.render();
    for id in [
        "verdict",
        "steps-table",
        "busy",
        "critical-path",
        "kernels-table",
        "warnings",
    ] {
        assert!(page.contains(&format!("id=\"{id}\"")), "no #{id}");
    }
    assert!(!page.contains("id=\"waiting\"") && !page.contains("id=\"what-if\""));
    assert!(page.contains("-bound") || page.contains("waiting for peers"));
}

#[test]
fn control_characters_and_overrides_in_names_are_shown_escaped() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    // A kernel of the corpus's toy run, and one of its steps, renamed with
    // a terminal escape, a bell, NUL, a right-to-left override and a
    // carriage return (as the trace's JSON spells them).
    let text = lumos_testkit::gunzip_file(&corpus.path("single-rank/mi250-toy-train.json.gz"));
    let text = String::from_utf8(text)
        .unwrap()
        .replace(
            "Cijk_Alik_Bljk_SB_Bias",
            r"\u001b]0;t\u0007\u0000\u202e<i>\rCijk_Alik_Bljk_SB_Bias",
        )
        .replace("\"ProfilerStep#2\"", r#""ProfilerStep#\u001b[2J""#);
    let trace = lumos_trace::read_bytes(Path::new("toy.json"), text.as_bytes()).unwrap();
    let replayed = lumos_report::replay(&trace, &Default::default()).unwrap();
    let page = HtmlReport::of_trace(&replayed).render();
    let raw: Vec<char> = page
        .chars()
        .filter(|&c| c != '\n' && lumos_report::text::is_hidden(c))
        .collect();
    assert!(raw.is_empty(), "raw {raw:?}");
    // In the kernels table, and the step's label in the steps chart (SVG).
    assert!(page.contains(r"\u{1b}]0;t\u{7}\u{0}\u{202e}&lt;i&gt;\rCijk_"));
    assert!(page.contains(r"#\u{1b}[2J"));
}
