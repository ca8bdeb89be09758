//! Scale benchmark driver for docs/PERFORMANCE.md ("Scale"), run by
//! `scripts/scale_bench.sh`.
//!
//! ```text
//! scale synth-rank --out FILE.json [--gz] [--model M --tp T --pp P --dp D
//!                  --microbatches N --steps S --rank R --gpu G]
//!     one rank's synthesized trace as plain JSON (and FILE.json.gz)
//! scale single FILE
//!     read, build and simulate one trace, timing each stage
//! scale job DIR [--representatives]
//!     read and build every rank of a job, match, align, merge and replay
//!     them jointly, timing each stage; with --representatives, keep one
//!     graph per group of ranks with the same communication program
//!     (`lumos_graph::group_by_program`) and replay only those
//! ```
//!
//! Every command prints one JSON object on stdout. Peak memory per stage is
//! the process's resident high-water mark (`VmHWM`), reset before each stage
//! through `/proc/self/clear_refs` where the kernel allows it, so a stage's
//! peak includes what earlier stages left alive.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::mem::size_of;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use flate2::write::GzEncoder;
use flate2::Compression;
use lumos_graph::{
    align_clocks, build, group_by_program, match_collectives, merge_owned, program_signature,
    rank_graph, Collective, Edge, Graph, JobGraph, Measured, Processor, ProgramSignature,
    RankGraph, RuntimeDep, Scope, ScopeId, Span, Step, Task, TaskId,
};
use lumos_models::GpuSpec;
use lumos_report::slowest_rank_steps;
use lumos_sim::{simulate, simulate_job, step_spans, SimOptions};
use lumos_synth::{ModelPreset, Parallelism, SynthConfig};
use lumos_testkit::{proc_status_kib, reset_peak_rss};
use lumos_trace::{ActivityArgs, CollectiveArgs, Event, EventExtra, Flow, Trace};
use rayon::prelude::*;
use serde_json::{json, Value};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write one rank's synthesized trace as plain JSON (and gzip with --gz).
    SynthRank {
        #[arg(long, default_value = "gpt3-175b")]
        model: String,
        #[arg(long, default_value_t = 8)]
        tp: usize,
        #[arg(long, default_value_t = 4)]
        pp: usize,
        #[arg(long, default_value_t = 8)]
        dp: usize,
        #[arg(long, default_value_t = 8)]
        microbatches: usize,
        #[arg(long, default_value_t = 2)]
        steps: usize,
        #[arg(long, default_value_t = 0)]
        rank: usize,
        #[arg(long, default_value = "h100")]
        gpu: String,
        /// The plain JSON file; `--gz` also writes `<out>.gz`.
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        gz: bool,
    },
    /// Read, build and simulate one trace, timing each stage.
    Single { file: PathBuf },
    /// Read, build, match, align, merge and replay the ranks of a job.
    Job {
        dir: PathBuf,
        /// Keep and replay one rank per group of ranks with the same
        /// communication program (every rank is still read and built).
        #[arg(long)]
        representatives: bool,
    },
}

/// Resident high-water mark of this process, in bytes.
fn peak_rss() -> u64 {
    proc_status_kib("VmHWM:") * 1024
}

/// Times `f`, resetting the peak first; returns its result, seconds and
/// the peak resident bytes during it.
fn stage<T>(f: impl FnOnce() -> T) -> (T, f64, u64) {
    reset_peak_rss();
    let t = Instant::now();
    let out = f();
    (out, t.elapsed().as_secs_f64(), peak_rss())
}

fn mb(bytes: u64) -> f64 {
    (bytes as f64 / 1e6 * 10.0).round() / 10.0
}

fn secs(s: f64) -> f64 {
    (s * 1e3).round() / 1e3
}

fn main() -> Result<()> {
    let out = match Cli::parse().cmd {
        Cmd::SynthRank {
            model,
            tp,
            pp,
            dp,
            microbatches,
            steps,
            rank,
            gpu,
            out,
            gz,
        } => {
            let mut cfg = SynthConfig::new(
                ModelPreset::preset(&model)?,
                Parallelism::new(tp, pp, dp, microbatches),
                GpuSpec::preset(&gpu)?,
            );
            cfg.steps = steps;
            synth_rank(&cfg, rank, &out, gz)?
        }
        Cmd::Single { file } => single(&file)?,
        Cmd::Job {
            dir,
            representatives,
        } => job(&dir, representatives)?,
    };
    println!("{out}");
    Ok(())
}

fn synth_rank(cfg: &SynthConfig, rank: usize, out: &Path, gz: bool) -> Result<Value> {
    let t = Instant::now();
    let text = lumos_synth::synthesize_rank(cfg, rank)?;
    let t_synth = t.elapsed().as_secs_f64();
    let write = |path: &Path, compress: bool| -> Result<u64> {
        let f = BufWriter::with_capacity(1 << 20, File::create(path)?);
        if compress {
            let mut e = GzEncoder::new(f, Compression::fast());
            e.write_all(text.as_bytes())?;
            e.finish()?.flush()?;
        } else {
            let mut f = f;
            f.write_all(text.as_bytes())?;
            f.flush()?;
        }
        Ok(std::fs::metadata(path)?.len())
    };
    let json_bytes = write(out, false).with_context(|| out.display().to_string())?;
    let mut v = json!({
        "file": out, "json_bytes": json_bytes, "synth_s": secs(t_synth),
        "model": cfg.model.name, "tp": cfg.parallel.tp, "pp": cfg.parallel.pp,
        "dp": cfg.parallel.dp, "microbatches": cfg.parallel.microbatches,
        "steps": cfg.steps, "rank": rank,
    });
    if gz {
        let mut p = out.as_os_str().to_owned();
        p.push(".gz");
        let p = PathBuf::from(p);
        v["gz_bytes"] = json!(write(&p, true).with_context(|| p.display().to_string())?);
    }
    Ok(v)
}

/// The length of each step span, in step order.
fn step_durations(spans: &[Span]) -> Vec<i64> {
    spans.iter().map(|s| s.end_ns - s.start_ns).collect()
}

fn string_bytes(s: &String) -> usize {
    size_of::<String>() + s.capacity()
}

/// Heap and inline bytes of a trace's parts, in MB: what the reader's
/// result holds (allocator overhead and spare capacity of small vectors
/// not counted).
fn trace_bytes(t: &Trace) -> Value {
    let mut extras = 0usize;
    let mut with_extra = 0usize;
    for e in &t.events {
        if let Some(x) = &e.extra {
            with_extra += 1;
            // `Input Dims` lists and `Input type` texts are shared (one
            // copy per distinct value): not counted per event.
            extras += size_of::<EventExtra>();
            if x.activity.is_some() {
                extras += size_of::<ActivityArgs>();
            }
            if x.collective.is_some() {
                // Its texts and rank lists are shared too.
                extras += size_of::<CollectiveArgs>();
            }
        }
    }
    let events = t.events.capacity() * size_of::<Event>();
    let flows = t.flows.capacity() * size_of::<Flow>();
    let strings: usize = t.strings.iter().map(string_bytes).sum();
    json!({
        "event_size_b": size_of::<Event>(), "event_extra_size_b": size_of::<EventExtra>(),
        "events_with_extra": with_extra,
        "events_mb": mb(events as u64), "extras_mb": mb(extras as u64),
        "flows_mb": mb(flows as u64), "strings_mb": mb(strings as u64),
        "total_mb": mb((events + extras + flows + strings) as u64),
    })
}

/// The same for a graph and its measured times.
fn graph_bytes(g: &Graph, m: &Measured) -> Value {
    let tasks = g.tasks.capacity() * size_of::<Task>();
    let edges = g.edges.capacity() * size_of::<Edge>();
    let runtime = g.runtime_deps.capacity() * size_of::<RuntimeDep>();
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
    // `Input Dims` and `Input type` are shared with the trace's events:
    // not counted per scope.
    let scopes = g.scopes.capacity() * size_of::<Scope>()
        + g.task_scopes.capacity() * size_of::<Option<ScopeId>>();
    let other: usize = g.names.iter().map(string_bytes).sum::<usize>()
        + g.collectives.capacity() * size_of::<Collective>();
    let measured = (m.tasks.capacity() + m.step_annotations.capacity() + m.scopes.capacity())
        * size_of::<Span>();
    let total = tasks + edges + runtime + procs + steps + scopes + other + measured;
    json!({
        "task_size_b": size_of::<Task>(), "edge_size_b": size_of::<Edge>(),
        "scopes": g.scopes.len(),
        "tasks_mb": mb(tasks as u64), "edges_mb": mb(edges as u64),
        "runtime_deps_mb": mb(runtime as u64), "processors_mb": mb(procs as u64),
        "steps_mb": mb(steps as u64), "scopes_mb": mb(scopes as u64),
        "names_collectives_mb": mb(other as u64), "measured_mb": mb(measured as u64),
        "total_mb": mb(total as u64),
        "bytes_per_task": (total as f64 / g.tasks.len().max(1) as f64).round(),
    })
}

fn single(file: &Path) -> Result<Value> {
    let base = peak_rss();
    let (trace, t_read, m_read) = stage(|| lumos_trace::read_path(file));
    let trace = trace?;
    let events = trace.events.len();
    let flows = trace.flows.len();
    let json_bytes = trace.json_bytes;
    let trace_mem = trace_bytes(&trace);
    let ((graph, measured, _report), t_build, m_build) = stage(|| build(&trace));
    // The trace is not needed once the graph is built.
    drop(trace);
    let rss_graph = proc_status_kib("VmRSS:") * 1024;
    let (schedule, t_sim, m_sim) = stage(|| simulate(&graph, &SimOptions::default()));
    let schedule = schedule?;
    let measured_steps = step_durations(&step_spans(
        &graph,
        &measured.tasks,
        Some(&measured.step_annotations),
    ));
    let replayed_steps = step_durations(&step_spans(&graph, &schedule, None));
    let tasks = graph.tasks.len();
    let graph_mem = graph_bytes(&graph, &measured);
    let schedule_mb = mb(
        ((schedule.start_ns.capacity() + schedule.end_ns.capacity()) * 8
            + schedule.bound_by.capacity() * size_of::<lumos_sim::Bound>()
            + schedule.waits.capacity() * size_of::<lumos_sim::BlockingWait>()) as u64,
    );
    Ok(json!({
        "trace_mem": trace_mem, "graph_mem": graph_mem, "schedule_mb": schedule_mb,
        "file": file, "json_bytes": json_bytes, "events": events, "flows": flows,
        "tasks": tasks, "edges": graph.edges.len(), "runtime_deps": graph.runtime_deps.len(),
        "read_s": secs(t_read), "build_s": secs(t_build), "simulate_s": secs(t_sim),
        "read_mb_per_s": (json_bytes as f64 / 1e6 / t_read).round(),
        "build_tasks_per_s": (tasks as f64 / t_build).round(),
        "simulate_tasks_per_s": (tasks as f64 / t_sim).round(),
        "peak_mb": { "start": mb(base), "read": mb(m_read), "build": mb(m_build),
                     "graph_alone": mb(rss_graph), "simulate": mb(m_sim) },
        "peak_reset_per_stage": reset_peak_rss(),
        "measured_steps_ms": measured_steps.iter().map(|&d| d as f64 / 1e6).collect::<Vec<_>>(),
        "replayed_steps_ms": replayed_steps.iter().map(|&d| d as f64 / 1e6).collect::<Vec<_>>(),
    }))
}

/// What is kept of every rank: its measured steps, size and signature.
struct RankSummary {
    rank: u32,
    json_bytes: u64,
    signature: ProgramSignature,
    tasks: usize,
    comms: usize,
    measured_steps: Vec<i64>,
}

fn summarize(r: &RankGraph, json_bytes: u64) -> RankSummary {
    RankSummary {
        rank: r.rank,
        json_bytes,
        signature: program_signature(r),
        tasks: r.graph.tasks.len(),
        comms: r.comms.len(),
        measured_steps: step_durations(&step_spans(
            &r.graph,
            &r.measured.tasks,
            Some(&r.measured.step_annotations),
        )),
    }
}

fn trace_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| dir.display().to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().contains(".json"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("{}: no trace files", dir.display());
    }
    Ok(files)
}

/// A rank's graph and the uncompressed size of its trace.
fn load(f: &Path) -> Result<(RankGraph, u64)> {
    let trace = lumos_trace::read_path(f)?;
    Ok((rank_graph(&trace).0, trace.json_bytes))
}

/// Per-rank step durations on the job timeline, indexed like `job.ranks`.
fn job_steps(job: &JobGraph, times: &dyn Fn(&Graph) -> Vec<Span>) -> Vec<Vec<i64>> {
    let all = times(&job.graph);
    job.ranks
        .iter()
        .map(|p| step_durations(&all[p.steps.start as usize..p.steps.end as usize]))
        .collect()
}

/// The job's step lengths: each the slowest rank's.
fn slowest(steps: &[Vec<i64>]) -> Vec<i64> {
    slowest_rank_steps(steps).iter().map(|s| s.ns).collect()
}

fn ms(ns: i64) -> f64 {
    (ns as f64 / 1e3).round() / 1e3
}

fn job(dir: &Path, representatives: bool) -> Result<Value> {
    let files = trace_files(dir)?;
    let base = peak_rss();
    let disk: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();

    // Read and build every rank in parallel, each trace dropped once its
    // graph is built (as `lumos replay --job` does). With representatives,
    // only the lowest rank of each signature keeps its graph.
    let kept: Mutex<HashMap<ProgramSignature, RankGraph>> = Mutex::new(HashMap::new());
    let (loaded, t_load, m_load) = stage(|| {
        files
            .par_iter()
            .map(|f| -> Result<(RankSummary, Option<RankGraph>)> {
                let (r, json_bytes) = load(f)?;
                let s = summarize(&r, json_bytes);
                if !representatives {
                    return Ok((s, Some(r)));
                }
                let mut k = kept.lock().unwrap_or_else(|e| e.into_inner());
                match k.get(&s.signature) {
                    Some(have) if have.rank < r.rank => {}
                    _ => {
                        k.insert(s.signature, r);
                    }
                }
                Ok((s, None))
            })
            .collect::<Result<Vec<_>>>()
    });
    let mut summaries = Vec::with_capacity(files.len());
    let mut graphs = Vec::new();
    for (s, g) in loaded? {
        summaries.push(s);
        graphs.extend(g);
    }
    graphs.extend(kept.into_inner().unwrap_or_default().into_values());
    graphs.sort_by_key(|g| g.rank);
    summaries.sort_by_key(|s| s.rank);
    let all_tasks: usize = summaries.iter().map(|s| s.tasks).sum();
    let all_comms: usize = summaries.iter().map(|s| s.comms).sum();
    let json_bytes: u64 = summaries.iter().map(|s| s.json_bytes).sum();

    let (m, t_match, _) = stage(|| match_collectives(&graphs));
    let (clock, t_clock, _) = stage(|| align_clocks(&graphs, &m));
    let replayed_ranks: Vec<u32> = graphs.iter().map(|g| g.rank).collect();
    // The per-rank graphs are not needed by the joint replay: each is freed
    // once merged.
    let ((jg, _measured, merge_warnings), t_merge, m_merge) =
        stage(|| merge_owned(graphs, &m, &clock));
    let (schedule, t_sim, m_sim) = stage(|| simulate_job(&jg, &SimOptions::default()));
    let schedule = schedule.context("joint replay failed")?;
    let replayed = job_steps(&jg, &|g| step_spans(g, &schedule, None));

    // Group every rank by signature. The job's measured step is the slowest
    // rank's (every rank was read); its replayed step the slowest replayed
    // rank's (with representatives, a group's replayed step is its
    // representative's).
    let groups = group_by_program(summaries.iter().map(|s| (s.rank, s.signature)));
    let measured_steps: Vec<Vec<i64>> =
        summaries.iter().map(|s| s.measured_steps.clone()).collect();
    let job_measured = slowest(&measured_steps);
    let job_replayed = slowest(&replayed);
    let n_steps = job_measured.len();
    let by_rank: HashMap<u32, &RankSummary> = summaries.iter().map(|s| (s.rank, s)).collect();
    let mut group_rows = Vec::new();
    for g in &groups {
        let members: Vec<&RankSummary> = g.ranks.iter().map(|r| by_rank[r]).collect();
        let rep = g.representative();
        let rep_steps: Vec<f64> = replayed_ranks
            .iter()
            .position(|&r| r == rep)
            .map(|p| replayed[p].iter().map(|&d| ms(d)).collect())
            .unwrap_or_default();
        let spread: Vec<Value> = (0..n_steps)
            .map(|k| {
                let mut v: Vec<i64> = members.iter().map(|s| s.measured_steps[k]).collect();
                v.sort_unstable();
                json!([ms(v[0]), ms(v[v.len() / 2]), ms(v[v.len() - 1])])
            })
            .collect();
        group_rows.push(json!({
            "ranks": members.len(), "representative": rep,
            "measured_steps_ms_min_median_max": spread,
            "representative_replayed_steps_ms": rep_steps,
        }));
    }
    let tasks = jg.graph.tasks.len();
    Ok(json!({
        "dir": dir, "ranks": summaries.len(), "files_bytes": disk, "json_bytes": json_bytes,
        "representatives": representatives, "replayed_ranks": replayed_ranks.len(),
        "groups": groups.len(), "tasks_read": all_tasks, "comm_tasks_read": all_comms,
        "tasks_replayed": tasks, "rendezvous": jg.rendezvous.len(),
        "matched_sets": m.sets.len(), "match_problems": m.problems.len(),
        "merge_warnings": merge_warnings.len(),
        "load_s": secs(t_load), "match_s": secs(t_match), "clock_s": secs(t_clock),
        "merge_s": secs(t_merge), "simulate_s": secs(t_sim),
        "simulate_tasks_per_s": (tasks as f64 / t_sim).round(),
        "peak_mb": { "start": mb(base), "load": mb(m_load), "merge": mb(m_merge),
                     "simulate": mb(m_sim) },
        "job_steps_ms": { "measured": job_measured.iter().map(|&d| ms(d)).collect::<Vec<_>>(),
                          "replayed": job_replayed.iter().map(|&d| ms(d)).collect::<Vec<_>>() },
        "group_table": group_rows,
    }))
}
