//! A corpus trace whose names (a kernel's, a step's, its file's) hold
//! terminal escapes, a carriage return, a newline, a right-to-left
//! override and HTML: every text output shows them escaped
//! (`\u{1b}`, lumos_report::text::shown) and never writes them raw to the
//! terminal, while `--json` and the written timelines keep the exact text.

mod common;

use std::path::PathBuf;

use common::{lumos, run_ok};
use lumos_report::text::{is_hidden, shown};
use lumos_testkit::TempDir;

/// The kernel renamed, as the trace's JSON spells it (the text before
/// its original name) and as it reads.
const KERNEL_JSON: &str = r"\u001b]0;pwned\u0007\u001b[31m\u202e<script>x</script>\r\n";
const KERNEL: &str = "\u{1b}]0;pwned\u{7}\u{1b}[31m\u{202e}<script>x</script>\r\n";
/// The same, as the text tables show it.
const KERNEL_SHOWN: &str = r"\u{1b}]0;pwned\u{7}\u{1b}[31m\u{202e}<script>x</script>\r\n";
/// The original kernel's name starts so (one kernel of the trace, and its
/// launch's `kernel` argument).
const ORIGINAL: &str = "Cijk_Alik_Bljk_SB_Bias";

/// mi250-toy-train with its GEMM kernel, its second step and an operator
/// renamed,
/// written under `dir` as `name`; None without the corpus.
fn hostile_trace(dir: &TempDir, name: &str) -> Option<PathBuf> {
    let corpus = lumos_testkit::corpus()?;
    let bytes = lumos_testkit::gunzip_file(&corpus.path("single-rank/mi250-toy-train.json.gz"));
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.contains(ORIGINAL));
    assert_eq!(text.matches("\"ProfilerStep#2\"").count(), 1);
    let text = text
        .replace(ORIGINAL, &format!("{KERNEL_JSON}{ORIGINAL}"))
        .replace("\"ProfilerStep#2\"", r#""ProfilerStep#\u001b[2J""#)
        // An operator on the critical path, with what JSON allows raw.
        .replace("\"aten::randn\"", r#""aten::randn\u2028\u202e""#);
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    Some(path)
}

/// `text` holds no character that acts on a terminal but its own newlines.
fn assert_shown(what: &str, text: &[u8]) {
    let text = String::from_utf8_lossy(text);
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| c != '\n' && is_hidden(c))
        .collect();
    assert!(raw.is_empty(), "{what}: raw {raw:?} in\n{text}");
}

/// The full name of the renamed kernel in a JSON list of kernel rows.
fn renamed(rows: &serde_json::Value) -> String {
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["name"].as_str())
        .filter(|n| n.contains(ORIGINAL))
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].to_owned()
}

#[test]
fn text_outputs_escape_what_would_act_on_the_terminal() {
    let dir = TempDir::new("hostile-text");
    // A file name with an escape and a newline: shown escaped too.
    let Some(path) = hostile_trace(&dir, "toy \u{1b}[31m\n.json") else {
        return;
    };
    let plain = hostile_trace(&dir, "plain.json").unwrap();
    let p = path.to_str().unwrap();
    for args in [
        vec!["replay", p],
        vec!["replay", "--top", "50", p],
        vec!["inspect", p],
        vec!["predict", p, "--scale-kernels", "class:compute=0.5"],
    ] {
        let out = run_ok(lumos().args(&args).env("LUMOS_NO_PROGRESS", "1"));
        assert_shown(&args[0..2].join(" "), &out.stdout);
        assert_shown(&args[0..2].join(" "), &out.stderr);
    }
    let out = run_ok(lumos().args(["replay", "--top", "50", p]));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains(r"toy \u{1b}[31m\n.json (rank"), "{stdout}");
    assert!(
        stdout.contains(r"\u{1b}]0;pwned\u{7}\u{1b}[31m"),
        "{stdout}"
    );
    assert!(stdout.contains(r"ProfilerStep#\u{1b}[2J"), "{stdout}");
    let out = run_ok(lumos().arg("inspect").arg(&path));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with(&format!("{}\n", shown(p))), "{stdout}");
    // diff names the kernel (and its change) in its table.
    let out = run_ok(lumos().arg("diff").arg(&plain).arg(&path));
    assert_shown("diff", &out.stdout);
    // An error naming the file.
    let missing = dir.path().join("gone\u{1b}]0;x\u{7}.json");
    let out = lumos().arg("replay").arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_shown("error", &out.stderr);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains(r"gone\u{1b}]0;x\u{7}.json"), "{stderr}");
}

#[test]
fn json_and_timelines_keep_the_exact_names() {
    let dir = TempDir::new("hostile-json");
    let Some(path) = hostile_trace(&dir, "toy.json") else {
        return;
    };
    let out = run_ok(lumos().args(["replay", "--json"]).arg(&path));
    // Escaped as \u001b, \u202e: nothing raw on a terminal either.
    assert_shown("replay --json", &out.stdout);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["traces"][0];
    let name = renamed(&t["analysis"]["measured"]["kernels"]);
    assert!(name.starts_with(&format!("{KERNEL}{ORIGINAL}")), "{name:?}");
    assert!(t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == "ProfilerStep#\u{1b}[2J"));

    // The replayed timeline for Perfetto: the same bytes in its names.
    let out_dir = dir.path().join("out");
    run_ok(lumos().arg("replay").arg(&path).arg("--out").arg(&out_dir));
    let written = lumos_testkit::gunzip_file(&out_dir.join("toy.replayed.json.gz"));
    let timeline: serde_json::Value = serde_json::from_slice(&written).unwrap();
    let events = timeline["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["name"].as_str() == Some(&name)));
    assert!(events
        .iter()
        .any(|e| e["name"].as_str() == Some("ProfilerStep#\u{1b}[2J")));

    // The critical path's hops as JSON: escaped as --json is.
    let cp_dir = dir.path().join("cp");
    run_ok(
        lumos()
            .arg("replay")
            .arg(&path)
            .arg("--critical-path")
            .arg(&cp_dir),
    );
    let hops = std::fs::read(cp_dir.join("toy.critical-path.json")).unwrap();
    assert_shown("critical-path.json", &hops);
    let hops: serde_json::Value = serde_json::from_slice(&hops).unwrap();
    assert!(hops.to_string().contains("aten::randn\u{2028}\u{202e}"));
}

#[test]
fn the_report_shows_the_names_escaped() {
    let dir = TempDir::new("hostile-html");
    let Some(path) = hostile_trace(&dir, "<i onclick=x>toy.json") else {
        return;
    };
    let html = dir.path().join("page.html");
    run_ok(lumos().arg("report").arg(&path).arg("-o").arg(&html));
    let page = std::fs::read(&html).unwrap();
    assert_shown("report", &page);
    let page = String::from_utf8(page).unwrap();
    assert!(!page.contains("<script>") && !page.contains("<i onclick"));
    assert!(page.contains("&lt;i onclick=x&gt;toy.json"));
    let shown = KERNEL_SHOWN.replace('<', "&lt;").replace('>', "&gt;");
    assert!(page.contains(&shown), "{page}");
    // The step's label in the chart's SVG.
    assert!(page.contains(r"#\u{1b}[2J"), "{page}");
}

/// A name Python's `json` wrote with a lone surrogate escape (`\ud800`,
/// what it writes for a byte decoded with `surrogateescape`) reads as
/// U+FFFD and is counted and warned about with invalid UTF-8, in
/// `inspect --json` and in what an `.lgraph` file keeps of the trace; a
/// surrogate pair is one character, and not counted. The escapes are
/// written into the text by hand: serde cannot write a lone surrogate.
#[test]
fn a_lone_surrogate_escape_is_replaced_and_warned_about() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let dir = TempDir::new("hostile-surrogate");
    let original = corpus.path("single-rank/mi250-toy-train.json.gz");
    let text = String::from_utf8(lumos_testkit::gunzip_file(&original)).unwrap();
    let trace: serde_json::Value = serde_json::from_str(&text).unwrap();
    let index = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e["name"] == "AddmmBackward0")
        .unwrap();
    for name in ["\"AddmmBackward0\"", "\"MseLossBackward0\""] {
        assert_eq!(text.matches(name).count(), 1, "{name}");
    }
    let text = text
        .replace("\"AddmmBackward0\"", r#""AddmmBackward0\ud800""#)
        .replace("\"MseLossBackward0\"", r#""MseLossBackward0\ud83d\ude00""#);
    let path = dir.path().join("toy.json");
    std::fs::write(&path, text).unwrap();

    let before = common::lumos_json(&["inspect"], &[original]);
    let after = common::lumos_json(&["inspect"], std::slice::from_ref(&path));
    let (before, after) = (&before["traces"][0], &after["traces"][0]);
    let mut want = before["warnings"].as_array().unwrap().clone();
    // The reader's warnings come before the graph build's.
    want.insert(
        0,
        format!(
            "1 event or member with invalid UTF-8 or lone surrogate escapes \
             (first at traceEvents[{index}]): read with U+FFFD in place of each"
        )
        .into(),
    );
    assert_eq!(after["warnings"].as_array().unwrap(), &want);
    // Read as before otherwise: the event kept, with its new name.
    assert_eq!(after["events"], before["events"]);
    assert_eq!(after["tasks_by_kind"], before["tasks_by_kind"]);

    // An `.lgraph` file keeps the warning (as text: no field of its own).
    let graph = dir.path().join("toy.lgraph");
    run_ok(lumos().arg("ingest").arg("-o").arg(&graph).arg(&path));
    let stored = common::lumos_json(&["inspect"], &[graph]);
    assert_eq!(stored["traces"][0]["warnings"], after["warnings"]);
}

/// The line naming the longest task on the critical path keeps a long
/// name whole up to 1,000 characters and cuts a longer one with an
/// ellipsis: a name of 5,000 characters was one line of 5,000.
#[test]
fn the_longest_task_on_the_path_is_named_on_one_short_line() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let bytes = lumos_testkit::gunzip_file(&corpus.path("single-rank/mi250-toy-train.json.gz"));
    let text = String::from_utf8(bytes).unwrap();
    let longest = "\"hipDeviceSynchronize\"";
    assert!(text.contains(longest));
    let dir = TempDir::new("hostile-longest");
    let line = |name_len: usize| {
        let name = format!("hipDeviceSynchronize{}", "x".repeat(name_len - 20));
        let path = dir.path().join(format!("long{name_len}.json"));
        std::fs::write(&path, text.replace(longest, &format!("\"{name}\""))).unwrap();
        let out = run_ok(lumos().arg("replay").arg(&path));
        let stdout = String::from_utf8(out.stdout).unwrap();
        let line = stdout
            .lines()
            .find(|l| l.contains("longest on path: hipDeviceSynchronize"));
        (
            line.expect("the line names the renamed call").to_owned(),
            name,
        )
    };
    let (whole, name) = line(1_000);
    assert!(whole.contains(&format!("{name} (")), "{whole}");
    let (cut, name) = line(5_000);
    assert!(!cut.contains(&name));
    // Cut in the middle (lumos_report::text::short): its start and end.
    let (head, tail) = (999 - 999 / 3, 999 / 3);
    assert!(
        cut.contains(&format!(
            "{}…{} (",
            &name[..head],
            &name[name.len() - tail..]
        )),
        "{cut}"
    );
    assert!(
        cut.chars().count() < 1_100,
        "{} characters",
        cut.chars().count()
    );
}

/// A kernel named with a newline and another with a backslash and an `n`
/// (`a\nb` as typed) read as two names, not one: the escape doubles every
/// backslash. An operator named `""` is shown so, not as a blank cell.
#[test]
fn a_backslash_and_an_escape_read_apart_and_an_empty_name_is_quoted() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let bytes = lumos_testkit::gunzip_file(&corpus.path("single-rank/mi250-toy-train.json.gz"));
    let text = String::from_utf8(bytes).unwrap();
    // Two kernels of two launches each (named again in each launch's
    // arguments), and their launching operator.
    let fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, \
                at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, \
                at::detail::Array<char*, 1>)";
    let add =
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, \
               at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, \
               at::detail::Array<char*, 3>)";
    for n in [fill, add] {
        assert_eq!(text.matches(&format!("\"{n}\"")).count(), 4, "{n}");
    }
    assert_eq!(text.matches("\"aten::fill_\"").count(), 2);
    let text = text
        // A backslash and an `n`, then a newline, as JSON spells them.
        .replace(&format!("\"{fill}\""), r#""fill\\nkernel""#)
        .replace(&format!("\"{add}\""), r#""fill\nkernel""#)
        .replace("\"aten::fill_\"", "\"\"");
    let dir = TempDir::new("hostile-backslash");
    let path = dir.path().join("toy.json");
    std::fs::write(&path, text).unwrap();
    let out = run_ok(lumos().args(["replay", "--top", "20"]).arg(&path));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let rows = |name: &str| {
        stdout
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("{name} ")))
            .count()
    };
    // In the kernels' table, and beside their operators.
    assert_eq!(rows(r"fill\nkernel"), 1, "{stdout}");
    assert_eq!(rows(r"fill\\nkernel"), 1, "{stdout}");
    assert_eq!(rows(r#""""#), 1, "{stdout}");
    let row = (stdout.lines())
        .find(|l| l.trim_start().starts_with(r#""" "#))
        .unwrap();
    assert!(row.ends_with(r"fill\\nkernel"), "{row}");
    // --json has the exact names.
    let v = common::lumos_json(&["replay", "--top", "20"], std::slice::from_ref(&path));
    let ops = &v["traces"][0]["analysis"]["measured"]["operators"];
    assert!(
        ops.as_array()
            .unwrap()
            .iter()
            .any(|o| o["operator"] == "" && o["top_kernel"] == "fill\\nkernel"),
        "{ops}"
    );
}

/// An error naming a file whose name holds a newline stays one line, in
/// every command that reads traces: the newline is escaped. A message
/// keeps its backslashes (it quotes text as Rust does), so a name that
/// spells `\n` reads the same there; the tables tell them apart.
#[test]
fn an_error_naming_a_path_with_a_newline_is_one_line() {
    let dir = TempDir::new("hostile-error-path");
    let bad = dir.path().join("bad\nx.json");
    std::fs::write(&bad, "{\"traceEvents\": [").unwrap();
    let missing = dir.path().join(r"gone\n.json");
    let shown_dir = dir.path().to_str().unwrap();
    let want_bad = format!(
        "error: {shown_dir}/bad\\nx.json: truncated JSON: input ends at byte 17 inside \
         traceEvents after 0 events"
    );
    let want_missing = format!("error: {shown_dir}/gone\\n.json: no such file");
    let html = dir.path().join("page.html");
    let lgraph = dir.path().join("out");
    let (b, m) = (bad.to_str().unwrap(), missing.to_str().unwrap());
    for args in [
        vec!["replay", b, m],
        vec!["inspect", b, m],
        vec!["report", "-o", html.to_str().unwrap(), b, m],
        vec!["ingest", "-o", lgraph.to_str().unwrap(), b, m],
        vec!["predict", "--dp", "2", b, m],
    ] {
        let out = lumos().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        let lines: Vec<&str> = stderr.lines().collect();
        assert!(lines.contains(&want_bad.as_str()), "{args:?}: {stderr}");
        if args[0] != "predict" {
            // predict stops at its first input that cannot be read.
            assert!(lines.contains(&want_missing.as_str()), "{args:?}: {stderr}");
        }
        assert!(lines.iter().all(|l| l.starts_with("error: ")), "{stderr}");
    }
    let out = lumos().args(["diff", b, m]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("{want_bad}\n")
    );
}

/// `lumos demo --out` a folder whose name holds an escape and a newline:
/// the folder, the files in it and the commands to type next are shown
/// escaped, as every other command shows a path. Before, the folder was
/// printed raw (`dir.display()`): the escape acted on the terminal and
/// the newline split the line. Needs no corpus (the demo synthesizes).
#[test]
fn the_demo_shows_its_folder_escaped() {
    let dir = TempDir::new("hostile-demo");
    let folder = dir.path().join("demo \u{1b}[31m\n");
    let out = run_ok(lumos().arg("demo").arg("--out").arg(&folder));
    assert_shown("demo", &out.stdout);
    let text = String::from_utf8_lossy(&out.stdout);
    let shown_folder = shown(&folder.display().to_string()).into_owned();
    assert!(
        shown_folder.ends_with(r"demo \u{1b}[31m\n"),
        "{shown_folder}"
    );
    assert!(
        text.contains(&format!("The example's traces are in {shown_folder} (")),
        "{text}"
    );
    assert!(
        text.contains(&format!("-o '{shown_folder}/report.html'")),
        "{text}"
    );
    assert!(folder.is_dir());
}

/// A message that quotes what the user typed as Rust writes a string
/// keeps its escapes as they are: `--steps 'Foo"x'` is refused as
/// `"Foo\"x"`. Escaping the whole message as a name (backslashes
/// doubled) had made it `"Foo\\"x"`, another string.
#[test]
fn a_message_quoting_the_users_text_keeps_its_escapes() {
    let Some(c) = lumos_testkit::corpus() else {
        return;
    };
    let trace = c.path("single-rank/a100-ddp-rank0of2-event-record.json.gz");
    let out = lumos()
        .arg("replay")
        .arg(&trace)
        .args(["--steps", "Foo\"x"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains(r#"no step named "Foo\"x""#), "{stderr}");
    assert!(!stderr.contains(r#"\\"#), "{stderr}");
}
