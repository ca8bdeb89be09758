//! Times each stage of a multi-rank joint replay and measures the memory
//! it holds, for docs/PERFORMANCE.md ("How jobs grow with ranks").
//!
//! `cargo run --release -p lumos-graph --example job_scaling -- DIR`
//!
//! DIR holds one file per rank: compact graphs (`.lgraph`, from `lumos
//! ingest`) or traces (`.json`, `.json.gz`; scripts/replicate_ranks.py
//! makes large synthetic jobs from a real one). The stages are those of
//! `lumos replay --job`: read every rank (one at a time), assemble (match
//! collectives, align clocks), merge, simulate, then the rendezvous
//! waits. Per stage it prints wall and CPU seconds (the machine is shared:
//! CPU time is the steadier figure) and the resident size after it and at
//! its peak (`VmHWM`, reset before each stage where the kernel allows).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::mem::size_of;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lumos_graph::*;
use lumos_testkit::{cpu_s, proc_status_kib, reset_peak_rss};

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

/// Runs one stage and prints its wall and CPU time, resident size after it
/// and peak during it.
fn stage<T>(name: &str, f: impl FnOnce() -> T) -> T {
    // Where not allowed, peaks are cumulative.
    reset_peak_rss();
    let (t, c) = (Instant::now(), cpu_s());
    let out = f();
    println!(
        "  {name:<10} wall {:>7.2} s  cpu {:>7.2} s  rss after {:>7.0} MB  peak {:>7.0} MB",
        t.elapsed().as_secs_f64(),
        cpu_s() - c,
        proc_status_kib("VmRSS:") as f64 / 1e3,
        proc_status_kib("VmHWM:") as f64 / 1e3,
    );
    out
}

fn load(f: &Path) -> RankInput {
    if lumos_store::is_lgraph_path(f) {
        lumos_store::read_rank(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()))
    } else {
        let trace = lumos_trace::read_path(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        RankInput::from_trace(&trace)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `--owned`: merge with `merge_owned`, each rank's graph freed once
    // appended, as a joint replay that needs no per-rank report can.
    let owned = args.iter().any(|a| a == "--owned");
    let dir = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .expect("usage: job_scaling [--owned] DIR")
        .clone();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".json") || lumos_store::is_lgraph_path(p))
        .collect();
    files.sort();
    println!(
        "{dir}: {} files, {}",
        files.len(),
        if owned { "merge_owned" } else { "merge" }
    );
    // One file at a time, as `lumos replay --job` does per thread.
    let inputs: Vec<RankInput> = stage("read", || files.iter().map(|f| load(f)).collect());
    let per_rank: usize = inputs.iter().map(|r| graph_bytes(&r.graph.graph)).sum();
    let mut job = stage("assemble", || assemble(inputs).expect("one job"));
    let (jg, measured, _) = if owned {
        let graphs = std::mem::take(&mut job.graphs);
        stage("merge", || merge_owned(graphs, &job.matching, &job.clock))
    } else {
        stage("merge", || merge(&job.graphs, &job.matching, &job.clock))
    };
    let s = stage("simulate", || {
        lumos_sim::simulate_job(&jg, &lumos_sim::SimOptions::default()).unwrap()
    });
    stage("waits", || {
        let rv = lumos_sim::rendezvous_times(&jg, &s);
        lumos_sim::rank_waits(&jg, &rv)
    });
    let tasks = jg.graph.tasks.len();
    let g = &jg.graph;
    println!(
        "job graph per task: tasks {} x {} B, edges {:.2} x {} B, runtime deps {:.3} x {} B, task scopes {} B, processors {}, steps {}, scopes {}, names {}",
        tasks,
        size_of::<Task>(),
        g.edges.len() as f64 / tasks as f64,
        size_of::<Edge>(),
        g.runtime_deps.len() as f64 / tasks as f64,
        size_of::<RuntimeDep>(),
        size_of::<Option<ScopeId>>(),
        g.processors.len(),
        g.steps.len(),
        g.scopes.len(),
        g.names.len(),
    );
    println!(
        "ranks {} tasks {} rendezvous {} makespan {} ns | per-rank graphs {:.1} MB ({:.0} B/task), job graph {:.1} MB ({:.0} B/task), measured {:.1} MB",
        job.ranks.len(),
        tasks,
        jg.rendezvous.len(),
        s.makespan_ns(),
        per_rank as f64 / 1e6,
        per_rank as f64 / tasks as f64,
        graph_bytes(&jg.graph) as f64 / 1e6,
        graph_bytes(&jg.graph) as f64 / tasks as f64,
        (measured.tasks.len() * 16) as f64 / 1e6,
    );
}
