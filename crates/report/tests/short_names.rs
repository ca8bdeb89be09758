//! The shortened names of every name column of every corpus trace: two
//! rows whose names differ never read alike, and none is wider than its
//! column (`lumos_report::text::short_all`, docs/ANALYSES.md).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use lumos_report::replay;
use lumos_report::text::{short_all, short_all_raw};
use lumos_sim::SimOptions;

/// Every width a table gives a column of names, and a narrow one.
const WIDTHS: [usize; 8] = [12, 22, 25, 26, 38, 40, 62, 110];

/// Each row of `names` read as no other row of a different name, at
/// every width, in the text tables and the HTML report.
fn check_column(what: &str, names: &[&str]) {
    for n in WIDTHS {
        for (raw, shown) in [
            (false, short_all(names, n)),
            (true, short_all_raw(names, n)),
        ] {
            let mut seen: std::collections::HashMap<&str, &str> = Default::default();
            for (name, s) in names.iter().zip(&shown) {
                assert!(
                    s.chars().count() <= n,
                    "{what} at {n} (raw {raw}): {s:?} is wider, for {name:?}"
                );
                if let Some(other) = seen.insert(s.as_str(), name) {
                    assert_eq!(other, *name, "{what} at {n} (raw {raw}): both read {s:?}");
                }
            }
        }
    }
}

#[test]
fn names_that_differ_never_read_alike_in_any_column_of_the_corpus() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for path in corpus.traces("") {
        let what = path.display().to_string();
        let Ok(trace) = lumos_trace::read_path(&path) else {
            // Traces the reader refuses (the corpus keeps a few damaged
            // ones) have no tables.
            continue;
        };
        let Ok(r) = replay(&trace, &SimOptions::default()) else {
            continue;
        };
        let a = r.report().analysis;
        for an in [&a.measured, &a.replayed] {
            let kernels: Vec<&str> = an.kernels.iter().map(|k| k.name.as_str()).collect();
            check_column(&format!("{what} kernels"), &kernels);
            let ops: Vec<&str> = an.operators.iter().map(|o| o.operator.as_str()).collect();
            check_column(&format!("{what} operators"), &ops);
            let top: Vec<&str> = an.operators.iter().map(|o| o.top_kernel.as_str()).collect();
            check_column(&format!("{what} top kernels"), &top);
            // Every top-N of the kernels too: a column of fewer rows
            // shows its names by themselves.
            for k in [5, 10, 20, 50] {
                check_column(
                    &format!("{what} top {k} kernels"),
                    &kernels[..k.min(kernels.len())],
                );
            }
        }
    }
}
