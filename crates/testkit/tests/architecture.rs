//! The invariants of ARCHITECTURE.md that the tree itself can show, checked
//! on the tree: every dependency arrow points down the layers, only the
//! report and the command line know serde, only the trace crate knows
//! Kineto's JSON, only the command line prints or exits (the workspace
//! lints; here: no crate opts out of them), and every source file says what
//! it is in a `//!` line.
//!
//! A new crate fails the layering check until it is given a floor here and
//! in ARCHITECTURE.md: placing it is a decision, not an accident.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each crate's floor (ARCHITECTURE.md, "Layers"): a crate depends only on
/// crates of lower floors.
const FLOORS: &[(&str, u32)] = &[
    ("lumos-trace", 0),
    ("lumos-models", 0),
    ("lumos-graph", 1),
    ("lumos-sim", 2),
    ("lumos-synth", 2),
    ("lumos-predict", 3),
    ("lumos-store", 3),
    ("lumos-report", 4),
    ("lumos", 5),
    ("lumos-python", 5),
];

/// Crates whose normal dependencies may include serde or serde_json:
/// report, cli and python for JSON, store for the `.lgraph` sections (its
/// own mirror types, written with postcard).
const SERDE_ALLOWED: &[&str] = &["lumos-report", "lumos-store", "lumos", "lumos-python"];

/// JSON parsers only the reader may use.
const JSON_PARSERS: &[&str] = &["sonic-rs", "simd-json"];

/// The lumos-testkit crate: a dev-dependency only.
const TESTKIT: &str = "lumos-testkit";

struct Manifest {
    name: String,
    dir: PathBuf,
    /// Section name ("dependencies", "dev-dependencies", "lints", ...) to
    /// the keys it lists.
    sections: BTreeMap<String, Vec<String>>,
}

/// The keys of each `[section]` of a simple Cargo.toml (the workspace's
/// manifests use no inline tables spanning lines, and no dotted sections
/// other than `[[bench]]`-style arrays, which are skipped).
fn manifest(path: &Path) -> Manifest {
    let text = std::fs::read_to_string(path).unwrap();
    let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    let mut name = String::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            current = line.trim_matches(|c| c == '[' || c == ']').to_owned();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_end_matches(".workspace").to_owned();
        if current == "package" && key == "name" {
            name = value.trim().trim_matches('"').to_owned();
        }
        if !line.starts_with('#') {
            sections.entry(current.clone()).or_default().push(key);
        }
    }
    Manifest {
        name,
        dir: path.parent().unwrap().to_owned(),
        sections,
    }
}

fn manifests() -> Vec<Manifest> {
    let crates = lumos_testkit::workspace_root().join("crates");
    let mut out: Vec<Manifest> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path().join("Cargo.toml"))
        .filter(|p| p.exists())
        .map(|p| manifest(&p))
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(out.len() >= FLOORS.len(), "found only {} crates", out.len());
    out
}

fn deps<'m>(m: &'m Manifest, section: &str) -> &'m [String] {
    m.sections.get(section).map_or(&[], Vec::as_slice)
}

fn floor(name: &str) -> Option<u32> {
    FLOORS.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

#[test]
fn every_arrow_points_down() {
    for m in manifests() {
        if m.name == TESTKIT {
            continue;
        }
        let Some(own) = floor(&m.name) else {
            panic!(
                "{}: give the new crate a floor in FLOORS (crates/testkit/tests/architecture.rs) \
                 and in ARCHITECTURE.md's layers",
                m.name
            );
        };
        for d in deps(&m, "dependencies") {
            if d == TESTKIT {
                panic!("{}: {TESTKIT} may only be a dev-dependency", m.name);
            }
            if let Some(f) = floor(d) {
                assert!(
                    f < own,
                    "{} (floor {own}) depends on {d} (floor {f}): arrows point down only",
                    m.name
                );
            }
        }
    }
}

#[test]
fn only_report_store_and_cli_know_serde_and_only_trace_parses_json() {
    for m in manifests() {
        for d in deps(&m, "dependencies") {
            if d == "serde" || d == "serde_json" {
                assert!(
                    SERDE_ALLOWED.contains(&m.name.as_str()),
                    "{} depends on {d}: model types are not serializable, the report crate \
                     mirrors them",
                    m.name
                );
            }
            if JSON_PARSERS.contains(&d.as_str()) {
                assert_eq!(m.name, "lumos-trace", "{} parses JSON with {d}", m.name);
            }
        }
    }
}

#[test]
fn every_crate_keeps_the_workspace_lints() {
    for m in manifests() {
        assert!(
            deps(&m, "lints").iter().any(|k| k == "workspace"),
            "{}: add `[lints] workspace = true` (printing, exit and missing docs are checked)",
            m.name
        );
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_source_file_opens_with_a_doc_line() {
    for m in manifests() {
        let mut files = Vec::new();
        rust_files(&m.dir.join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(
                text.trim_start().starts_with("//!"),
                "{}: open the file with a `//!` line saying what it holds",
                f.display()
            );
        }
    }
}

#[test]
fn only_the_trace_crate_writes_kineto_events() {
    // A Kineto event is recognisable by its phase key; anything that spells
    // it out formats trace JSON by hand instead of through KinetoWriter.
    for m in manifests() {
        if m.name == "lumos-trace" {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&m.dir.join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            // Doc examples may hold a small trace for the reader to read.
            let code = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .any(|l| l.contains(r#"\"ph\""#) || l.contains(r#""ph":"#));
            assert!(
                !code,
                "{}: writes Kineto JSON by hand; use lumos_trace::KinetoWriter",
                f.display()
            );
        }
    }
}
