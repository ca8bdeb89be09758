//! docs/TOUR.md stays true: every command of its console blocks is run with
//! the built binary on the corpus, and every output line the tour quotes
//! must be printed, in the order quoted.
//!
//! In a console block, a line `$ lumos ARGS` is a command (`../shared/traces`
//! in an argument is the corpus, wherever it is); the lines after it, up to
//! the next command or the block's end, are what it prints. A quoted line
//! matches a printed line that holds each of its `...`-separated pieces in
//! order, so a tour can elide numbers; a line that is only `...` stands for
//! lines left out. Commands run in a fresh folder, so files they write (a
//! report, timelines) land there.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::path::Path;

use common::lumos;
use lumos_testkit::TempDir;

/// Where the tour writes the corpus.
const CORPUS_IN_DOC: &str = "../shared/traces";

/// One command of the tour and the lines it is said to print.
#[derive(Debug, PartialEq)]
struct Step {
    /// Line of the command in the document (1-based), for messages.
    line: usize,
    /// The arguments after `lumos`.
    args: Vec<String>,
    /// The quoted output lines (`...` lines left out).
    expect: Vec<String>,
}

/// The commands of `doc`'s console blocks.
fn steps(doc: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut in_console = false;
    for (k, line) in doc.lines().enumerate() {
        let t = line.trim_end();
        if t.starts_with("```") {
            in_console = t == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        if let Some(cmd) = t.strip_prefix("$ ") {
            let mut words = cmd.split_whitespace().map(str::to_owned);
            assert_eq!(
                words.next().as_deref(),
                Some("lumos"),
                "TOUR.md line {}: a tour command runs lumos: {t}",
                k + 1
            );
            out.push(Step {
                line: k + 1,
                args: words.collect(),
                expect: Vec::new(),
            });
        } else if let Some(step) = out.last_mut() {
            if !t.trim().is_empty() && t.trim() != "..." {
                step.expect.push(t.to_owned());
            }
        }
    }
    out
}

/// Whether `printed` holds each `...`-separated piece of `quoted`, in order.
fn line_matches(quoted: &str, printed: &str) -> bool {
    let mut rest = printed;
    for piece in quoted.split("...").map(str::trim).filter(|p| !p.is_empty()) {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// The first quoted line not printed (in order), if any.
fn first_missing<'a>(expect: &'a [String], printed: &str) -> Option<&'a str> {
    let mut lines = printed.lines();
    expect
        .iter()
        .find(|q| !lines.any(|p| line_matches(q, p)))
        .map(String::as_str)
}

/// `text` with the tour's corpus folder replaced by `corpus`.
fn with_corpus(text: &str, corpus: &Path) -> String {
    text.replace(CORPUS_IN_DOC, &corpus.display().to_string())
}

#[test]
fn the_tour_reader_finds_commands_and_what_they_print() {
    let doc =
        "text\n```console\n$ lumos inspect a.json\n  step ... ms\n...\n\n$ lumos replay b\n```\n\
               ```rust\n$ lumos not-a-command\n```\n";
    assert_eq!(
        steps(doc),
        vec![
            Step {
                line: 3,
                args: vec!["inspect".into(), "a.json".into()],
                expect: vec!["  step ... ms".into()],
            },
            Step {
                line: 7,
                args: vec!["replay".into(), "b".into()],
                expect: Vec::new(),
            },
        ]
    );
    assert!(line_matches("  step ... ms", "  step 12.5 ms"));
    assert!(!line_matches("ms ... step", "  step 12.5 ms"));
    let expect = vec!["b".to_owned(), "a".to_owned()];
    assert_eq!(first_missing(&expect, "a\nb\n"), Some("a"));
    assert_eq!(first_missing(&expect, "b\na\n"), None);
}

#[test]
fn the_readme_links_the_tour() {
    let root = lumos_testkit::workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("docs/TOUR.md"),
        "README.md must link docs/TOUR.md"
    );
}

#[test]
fn every_tour_command_prints_what_the_tour_says() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let root = lumos_testkit::workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/TOUR.md")).unwrap();
    let steps = steps(&doc);
    assert!(steps.len() >= 4, "the tour has too few commands: {steps:?}");
    let dir = TempDir::new("cli-tour");
    for s in &steps {
        let args: Vec<String> = s
            .args
            .iter()
            .map(|a| with_corpus(a, corpus.root()))
            .collect();
        let out = lumos()
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "TOUR.md line {}: lumos {} failed:\n{stderr}",
            s.line,
            s.args.join(" ")
        );
        let printed = format!("{stdout}{stderr}");
        // Paths the tour quotes are printed as they were given.
        let expect: Vec<String> = s
            .expect
            .iter()
            .map(|q| with_corpus(q, corpus.root()))
            .collect();
        if let Some(q) = first_missing(&expect, &printed) {
            panic!(
                "TOUR.md line {}: lumos {} does not print (in the tour's order)\n  {q}\n\
                 It printed:\n{printed}",
                s.line,
                s.args.join(" ")
            );
        }
    }
}
