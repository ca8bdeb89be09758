//! The synthesizer against published runs (docs/SYNTH-VALIDATION.md):
//! the fit of the free parameters, the targets on the validation rows, the
//! Lumos GPT-3 15B runs, and that the committed report is current. One
//! test, so that the fit (about a minute) runs once.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use lumos_synth::published::{self, Outcome, Param, Row, Split};

const REPORT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/SYNTH-VALIDATION.md"
);

fn errors(rows: &[Row], outcomes: &[Outcome], keep: impl Fn(&Row) -> bool) -> Vec<f64> {
    rows.iter()
        .zip(outcomes)
        .filter(|(r, _)| keep(r))
        .map(|(r, o)| o.error_pct(r))
        .collect()
}

/// At most half of the rows fit anything.
#[test]
fn at_most_half_of_the_rows_fit() {
    let rows = published::rows();
    let half = |keep: &dyn Fn(&Row) -> bool| {
        let all = rows.iter().filter(|r| keep(r)).count();
        let fit = rows
            .iter()
            .filter(|r| keep(r) && r.split != Split::Validation)
            .count();
        assert!(fit > 0 && 2 * fit <= all, "{fit} of {all}");
    };
    half(&|_| true);
    half(&|r| !r.is_lumos());
    half(&|r| r.is_lumos());
    assert!(rows.len() >= 60);
}

#[test]
fn fit_targets_and_report() {
    let rows = published::rows();
    // Every committed constant is what the fit recomputes from its rows.
    let fitted: Vec<(Param, f64)> = Param::ALL
        .into_iter()
        .map(|p| (p, published::fit(p, &rows).unwrap().expect("fit rows")))
        .collect();
    for &(p, v) in &fitted {
        assert!(
            (v - p.committed()).abs() < 0.002,
            "{}: the fit gives {v:.4}, committed {:.4}",
            p.name(),
            p.committed()
        );
    }
    let outcomes = published::evaluate_all(&rows).unwrap();
    for (r, o) in rows.iter().zip(&outcomes) {
        println!(
            "{:<44} {:<34} {:>9.3} s {:>9.3} s {:+6.1}%",
            r.source,
            r.label,
            r.published_s,
            o.synthesized_s,
            o.error_pct(r)
        );
    }
    // Issue 16's targets on the validation rows of published-runs.md.
    let val = errors(&rows, &outcomes, |r| {
        r.split == Split::Validation && !r.is_lumos()
    });
    let (mean, max) = published::summary(&val);
    println!(
        "validation rows: {} rows, mean |error| {mean:.1}%, max {max:.1}%",
        val.len()
    );
    assert!(
        mean <= 10.0,
        "mean |error| {mean:.1}% on the validation rows"
    );
    assert!(max <= 25.0, "max |error| {max:.1}% on the validation rows");
    // The fit rows are no better than the others: no overfitting.
    let fit = errors(&rows, &outcomes, |r| {
        r.split != Split::Validation && !r.is_lumos()
    });
    let (fmean, _) = published::summary(&fit);
    assert!(
        fmean > 0.5 * mean,
        "fit rows {fmean:.1}%, validation {mean:.1}%"
    );

    // The Lumos runs miss the target (docs/SYNTH-VALIDATION.md, "Why the
    // Lumos runs miss"): PP 8 and 16 at DP 4 and 2x4x16 run 1.5-1.9x
    // longer than any sourced mechanism explains. Checked here: the runs
    // at PP 2 and at PP 4 with DP 4 and 8 within 10%, and no regression
    // past today's errors (mean 19.7%, max 46.1% since memory-bound
    // kernels take a fixed cost plus their bytes, 7 December 2026; 19.5%
    // and 45.9% before, when they took the larger of the two).
    let lumos = |label: &str| {
        let i = rows
            .iter()
            .position(|r| r.is_lumos() && r.label == label)
            .unwrap();
        outcomes[i].error_pct(&rows[i])
    };
    for l in ["2x2x16", "2x2x32", "2x4x4", "2x4x8"] {
        assert!(lumos(l).abs() <= 10.0, "Lumos {l}: {:+.1}%", lumos(l));
    }
    let lv = errors(&rows, &outcomes, |r| {
        r.is_lumos() && r.split == Split::Validation
    });
    let (lmean, lmax) = published::summary(&lv);
    println!("Lumos runs not fitted: mean |error| {lmean:.1}%, max {lmax:.1}%");
    assert!(lmean <= 19.8 && lmax <= 46.2, "{lmean:.1}% {lmax:.1}%");

    let text = published::report(&rows, &outcomes, &fitted);
    let committed = std::fs::read_to_string(REPORT).unwrap_or_default();
    assert!(
        committed == text,
        "{REPORT} is out of date: run `cargo run --release -p lumos-synth --example validate`"
    );
}
