//! Replay throughput on a synthetic graph of about a million tasks, shaped
//! like a training step: a few CPU threads each issue op, launch call,
//! kernel, round after round, onto a few streams of one device, with
//! intra-thread, inter-thread, launch, intra-stream, inter-stream and sync
//! edges, and a stream synchronize now and then.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lumos_graph::*;
use lumos_sim::{simulate, SimOptions};

const THREADS: usize = 4;
const STREAMS: usize = 4;
/// Rounds per thread; each round adds an op, a launch call and a kernel.
const ROUNDS: usize = 83_000;
/// Every this many rounds a thread synchronizes a stream.
const SYNC_EVERY: usize = 500;

/// A fixed-seed xorshift, so every run benchmarks the same graph.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

struct Gen {
    g: Graph,
    rng: Rng,
}

impl Gen {
    fn task(&mut self, proc: usize, kind: TaskKind, name: u32, duration_ns: i64) -> TaskId {
        let id = TaskId(self.g.tasks.len() as u32);
        self.g.tasks.push(Task {
            kind,
            name: NameId(name),
            proc: ProcId(proc as u32),
            duration_ns,
            release_ns: 0,
            collective: None,
            correlation: 0,
        });
        self.g.processors[proc].tasks.push(id);
        id
    }

    fn edge(&mut self, from: Option<TaskId>, to: TaskId, kind: DepKind, anchor: Anchor, lat: i64) {
        if let Some(from) = from {
            self.g.edges.push(Edge {
                from,
                to,
                kind,
                anchor,
                latency_ns: lat,
                inferred: false,
            });
        }
    }
}

/// Builds the graph. Tasks are generated in one global program order and
/// every edge points forward in it, so the graph is acyclic.
fn synthetic_graph() -> Graph {
    let mut gen = Gen {
        g: Graph {
            names: vec![
                "aten::op".into(),
                "cudaLaunchKernel".into(),
                "kernel".into(),
                "cudaStreamSynchronize".into(),
            ],
            ..Graph::default()
        },
        rng: Rng(0x9e37_79b9_7f4a_7c15),
    };
    for t in 0..THREADS {
        gen.g.processors.push(Processor {
            kind: ProcKind::Thread {
                pid: 1,
                tid: t as i64,
            },
            tasks: Vec::new(),
        });
    }
    for s in 0..STREAMS {
        gen.g.processors.push(Processor {
            kind: ProcKind::Stream {
                device: 0,
                stream: s as i64,
            },
            tasks: Vec::new(),
        });
    }
    let mut last_cpu: Vec<Option<TaskId>> = vec![None; THREADS];
    let mut last_op: Vec<Option<TaskId>> = vec![None; THREADS];
    let mut last_kernel: Vec<Option<TaskId>> = vec![None; STREAMS];
    let mut thread_kernel: Vec<Option<TaskId>> = vec![None; THREADS];
    for round in 0..ROUNDS {
        for t in 0..THREADS {
            let op_ns = 2_000 + gen.rng.below(18_000) as i64;
            let op = gen.task(t, TaskKind::CpuOp, 0, op_ns);
            gen.edge(last_cpu[t], op, DepKind::IntraThread, Anchor::End, 1_000);
            let (a, b) = ((t + 1) % THREADS, (t + 2) % THREADS);
            gen.edge(last_op[a], op, DepKind::InterThread, Anchor::End, 500);
            gen.edge(last_op[b], op, DepKind::InterThread, Anchor::End, 500);
            if round % 4 == 0 {
                gen.edge(thread_kernel[t], op, DepKind::Sync, Anchor::End, 2_000);
            }
            last_op[t] = Some(op);

            let call = gen.task(t, TaskKind::Runtime, 1, 5_000);
            gen.edge(Some(op), call, DepKind::IntraThread, Anchor::End, 200);

            let s = (t + round / 16) % STREAMS;
            let kernel_ns = 10_000 + gen.rng.below(190_000) as i64;
            let kernel = gen.task(THREADS + s, TaskKind::Kernel, 2, kernel_ns);
            gen.edge(Some(call), kernel, DepKind::Launch, Anchor::Start, 5_000);
            gen.edge(
                last_kernel[s],
                kernel,
                DepKind::IntraStream,
                Anchor::End,
                1_000,
            );
            for other in [(s + 1) % STREAMS, (s + 2) % STREAMS] {
                gen.edge(
                    last_kernel[other],
                    kernel,
                    DepKind::InterStream,
                    Anchor::End,
                    0,
                );
            }
            last_kernel[s] = Some(kernel);
            thread_kernel[t] = Some(kernel);
            last_cpu[t] = Some(call);

            if round % SYNC_EVERY == SYNC_EVERY - 1 {
                let sync = gen.task(t, TaskKind::Runtime, 3, 3_000);
                gen.edge(Some(call), sync, DepKind::IntraThread, Anchor::End, 100);
                gen.g.runtime_deps.push(RuntimeDep {
                    task: sync,
                    target: WaitTarget::StreamTail(ProcId((THREADS + s) as u32)),
                    latency_ns: 2_000,
                    inferred: false,
                });
                last_cpu[t] = Some(sync);
            }
        }
    }
    gen.g
}

fn bench(c: &mut Criterion) {
    let graph = synthetic_graph();
    let opts = SimOptions::default();
    let schedule = simulate(&graph, &opts).expect("synthetic graph is acyclic");
    eprintln!(
        "synthetic graph: {} tasks, {} edges ({:.2} per task), {} runtime deps, makespan {:.1} ms",
        graph.tasks.len(),
        graph.edges.len(),
        graph.edges.len() as f64 / graph.tasks.len() as f64,
        graph.runtime_deps.len(),
        schedule.makespan_ns() as f64 / 1e6
    );
    let mut group = c.benchmark_group("simulate");
    group.throughput(Throughput::Elements(graph.tasks.len() as u64));
    group.sample_size(10);
    group.bench_function("synthetic_1m_tasks", |b| {
        b.iter(|| simulate(&graph, &opts).expect("schedules"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
