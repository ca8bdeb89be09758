//! Times each stage of a multi-rank joint replay and estimates the memory
//! its graphs take, for docs/PERFORMANCE.md.
//!
//! `cargo run --release -p lumos-graph --example job_scaling -- DIR`
//! (DIR holds one trace per rank; scripts/replicate_ranks.py makes large
//! synthetic jobs from a real one).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::mem::size_of;
use std::path::Path;
use std::time::Instant;

use lumos_graph::*;

fn graph_bytes(g: &Graph) -> usize {
    let names: usize = g
        .names
        .iter()
        .map(|n| n.capacity() + size_of::<String>())
        .sum();
    let procs: usize = g
        .processors
        .iter()
        .map(|p| size_of::<Processor>() + p.tasks.capacity() * size_of::<TaskId>())
        .sum();
    let steps: usize = g
        .steps
        .iter()
        .map(|s| size_of::<Step>() + s.tasks.capacity() * size_of::<TaskId>())
        .sum();
    names
        + procs
        + steps
        + g.tasks.capacity() * size_of::<Task>()
        + g.edges.capacity() * size_of::<Edge>()
        + g.runtime_deps.capacity() * size_of::<RuntimeDep>()
        + g.collectives.capacity() * size_of::<Collective>()
        + g.scopes.capacity() * size_of::<Scope>()
        + g.task_scopes.capacity() * size_of::<Option<ScopeId>>()
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: job_scaling DIR");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".json"))
        .collect();
    files.sort();
    let t0 = Instant::now();
    // One file at a time, as `lumos replay --job` does per thread.
    let ranks: Vec<RankGraph> = files
        .iter()
        .map(|f| rank_graph(&lumos_trace::read_path(Path::new(f)).unwrap()).0)
        .collect();
    let t_load = t0.elapsed();
    let t1 = Instant::now();
    let m = match_collectives(&ranks);
    let t_match = t1.elapsed();
    let t2 = Instant::now();
    let c = align_clocks(&ranks, &m);
    let t_clock = t2.elapsed();
    let t3 = Instant::now();
    let (job, measured, _) = merge(&ranks, &m, &c);
    let t_merge = t3.elapsed();
    let t4 = Instant::now();
    let s = lumos_sim::simulate_job(&job, &lumos_sim::SimOptions::default()).unwrap();
    let t_sim = t4.elapsed();
    let t5 = Instant::now();
    let rv = lumos_sim::rendezvous_times(&job, &s);
    let _ = lumos_sim::rank_waits(&job, &rv);
    let t_waits = t5.elapsed();
    let per_rank: usize = ranks.iter().map(|r| graph_bytes(&r.graph)).sum();
    let tasks = job.graph.tasks.len();
    println!(
        "ranks {} tasks {} rendezvous {} | read+build {:.0} ms, match {:.2} ms, clocks {:.2} ms, merge {:.1} ms, simulate {:.1} ms, waits {:.2} ms | per-rank graphs {:.1} MB, job graph {:.1} MB ({:.0} B/task), measured {:.1} MB",
        ranks.len(),
        tasks,
        job.rendezvous.len(),
        t_load.as_secs_f64() * 1e3,
        t_match.as_secs_f64() * 1e3,
        t_clock.as_secs_f64() * 1e3,
        t_merge.as_secs_f64() * 1e3,
        t_sim.as_secs_f64() * 1e3,
        t_waits.as_secs_f64() * 1e3,
        per_rank as f64 / 1e6,
        graph_bytes(&job.graph) as f64 / 1e6,
        graph_bytes(&job.graph) as f64 / tasks as f64,
        (measured.tasks.len() * 16) as f64 / 1e6,
    );
}
