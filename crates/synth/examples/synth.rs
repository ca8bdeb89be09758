//! Writes one rank's synthesized trace as JSON.
//!
//! `cargo run --release -p lumos-synth --example synth -- MODEL TP PP DP MICROBATCHES RANK OUT.json [GPU]`
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::time::Instant;

use lumos_models::GpuSpec;
use lumos_synth::{write_rank, ModelPreset, Parallelism, SynthConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 7 {
        return Err("usage: synth MODEL TP PP DP MICROBATCHES RANK OUT.json [GPU]".into());
    }
    let n = |i: usize| a[i].parse::<usize>();
    let gpu = GpuSpec::preset(a.get(7).map_or("h100", String::as_str))?;
    let cfg = SynthConfig::new(
        ModelPreset::preset(&a[0])?,
        Parallelism::new(n(1)?, n(2)?, n(3)?, n(4)?),
        gpu,
    );
    let t0 = Instant::now();
    let file = std::fs::File::create(&a[6])?;
    write_rank(&cfg, n(5)?, std::io::BufWriter::new(file))?;
    eprintln!("wrote {} in {:.2} s", a[6], t0.elapsed().as_secs_f64());
    Ok(())
}
