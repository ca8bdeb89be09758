//! Prints what structure discovery finds in a trace: the report (as Rust
//! values; `lumos inspect --json` shows it as JSON), then each step's
//! prologue, passes (with their units' tokens) and epilogue.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job
use std::path::Path;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: discover TRACE [--time RUNS]");
    let trace = lumos_trace::read_path(Path::new(&path)).unwrap();
    let (g, meas, _) = lumos_graph::build(&trace);
    let ctx = lumos_predict::TraceContext::from_trace(&trace, &meas);
    // `--time RUNS`: how long discovery alone takes (wall), run after run.
    if std::env::args().nth(2).as_deref() == Some("--time") {
        let runs: usize = std::env::args()
            .nth(3)
            .and_then(|n| n.parse().ok())
            .unwrap_or(5);
        for _ in 0..runs {
            let t = std::time::Instant::now();
            let s = lumos_predict::discover(&g, &meas, &ctx);
            eprintln!(
                "discover: {:.3} s ({} steps)",
                t.elapsed().as_secs_f64(),
                s.steps.len()
            );
        }
        return;
    }
    let s = lumos_predict::discover(&g, &meas, &ctx);
    println!("{:#?}", s.report);
    let toks =
        |us: &[u32]| -> Vec<&str> { us.iter().map(|&u| s.units.token(u as usize)).collect() };
    for (i, st) in s.steps.iter().enumerate() {
        println!("step {i}: prologue {:?}", toks(&st.prologue));
        for p in &st.passes {
            println!(
                "  {:?} {}: pre {:?}, {} layers of {:?} units, post {:?}",
                p.kind,
                p.microbatch + 1,
                toks(&p.pre),
                p.layers.len(),
                p.layers.iter().map(|l| l.len()).collect::<Vec<_>>(),
                toks(&p.post)
            );
        }
        println!("  epilogue: {} units", st.epilogue.len());
        let main: Vec<u32> = st
            .units
            .clone()
            .filter(|&u| s.units.units[u as usize].thread == st.main)
            .collect();
        if std::env::var("SHOW_MAIN").is_ok() {
            for u in main.iter().take(200) {
                println!("    main {}", s.units.token(*u as usize));
            }
        }
    }
}
