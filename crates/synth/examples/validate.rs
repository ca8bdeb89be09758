//! Regenerates docs/SYNTH-VALIDATION.md: every published row synthesized,
//! the fit of the free parameters recomputed.
//!
//! `cargo run --release -p lumos-synth --example validate [OUT.md]`
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::time::Instant;

use lumos_synth::published::{self, Param};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/SYNTH-VALIDATION.md"
        )
        .into()
    });
    let t0 = Instant::now();
    let rows = published::rows();
    let mut fitted = Vec::new();
    for p in Param::ALL {
        if let Some(v) = published::fit(p, &rows)? {
            eprintln!(
                "{}: fitted {v:.4}, committed {:.4}",
                p.name(),
                p.committed()
            );
            fitted.push((p, v));
        }
    }
    let outcomes = published::evaluate_all(&rows)?;
    for (r, o) in rows.iter().zip(&outcomes) {
        eprintln!(
            "{:<40} {:<36} published {:>9.3} s  synthesized {:>9.3} s  {:+6.1}%",
            r.source,
            r.label,
            r.published_s,
            o.synthesized_s,
            o.error_pct(r)
        );
    }
    std::fs::write(&out, published::report(&rows, &outcomes, &fitted))?;
    eprintln!("wrote {out} in {:.1} s", t0.elapsed().as_secs_f64());
    Ok(())
}
