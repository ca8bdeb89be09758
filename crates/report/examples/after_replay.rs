//! Times what `lumos replay` does to one rank after the replay itself:
//! `Replayed::report` (comparison, critical paths, analyses, memory
//! timeline) and the JSON of its result, run by run, with the CPU time
//! and the peak resident memory of each run.
//!
//! `cargo run --release -p lumos-report --example after_replay -- FILE [RUNS]`
//! prints one JSON line per run. The first run allocates the memory the
//! later ones reuse, so its peak is the one `lumos replay` sees.

#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::time::Instant;

use lumos_sim::SimOptions;
use lumos_testkit::{cpu_s, proc_status_kib, reset_peak_rss};

/// MB (10^6 bytes) of a `/proc/self/status` size, given in KiB.
fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let file = args.get(1).ok_or("usage: after_replay FILE [RUNS]")?;
    let runs: usize = args.get(2).map_or(Ok(1), |r| r.parse())?;
    let trace = lumos_trace::read_path(std::path::Path::new(file))?;
    let replayed = lumos_report::replay(&trace, &SimOptions::default())?;
    // With AFTER_REPLAY_PAUSE set, a profiler can attach now (`perf record
    // -p`) and see nothing of the read, the build or the replay.
    if std::env::var_os("AFTER_REPLAY_PAUSE").is_some() {
        println!("{{\"replayed\":true}}");
        std::io::Write::flush(&mut std::io::stdout())?;
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    for run in 0..runs {
        let before_kb = proc_status_kib("VmRSS:");
        let reset = reset_peak_rss();
        let (t, c) = (Instant::now(), cpu_s());
        let report = replayed.report();
        let report_s = t.elapsed().as_secs_f64();
        let json = serde_json::to_vec(&report)?;
        let total_s = t.elapsed().as_secs_f64();
        // With AFTER_REPLAY_JSON=PATH, the first run's JSON is written there,
        // to compare builds.
        if let (0, Some(path)) = (run, std::env::var_os("AFTER_REPLAY_JSON")) {
            std::fs::write(path, &json)?;
        }
        println!(
            "{{\"run\":{run},\"tasks\":{},\"report_s\":{report_s:.3},\"with_json_s\":{total_s:.3},\
             \"cpu_s\":{:.2},\"rss_before_mb\":{:.1},\"peak_mb\":{:.1},\"peak_reset\":{reset},\"json_bytes\":{}}}",
            replayed.graph.tasks.len(),
            cpu_s() - c,
            mb(before_kb),
            mb(proc_status_kib("VmHWM:")),
            json.len()
        );
    }
    Ok(())
}
