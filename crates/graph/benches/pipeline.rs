//! Graph build and replay on the largest corpus traces, per stage.
//!
//! `cargo bench -p lumos-graph --bench pipeline`. Reading is benchmarked in
//! lumos-trace's own bench; here the trace is read once up front.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const TRACES: [&str; 2] = [
    "single-rank/v100-ddp-rank1of2-allreduce.json.gz",
    "single-rank/a100-recsys-rank3of8.json.gz",
];

fn stages(c: &mut Criterion) {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in TRACES {
        let path = corpus.path(rel);
        let trace = lumos_trace::read_path(&path).expect("corpus trace");
        let (graph, _, _) = lumos_graph::build(&trace);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut g = c.benchmark_group(name);
        g.measurement_time(Duration::from_secs(5)).sample_size(20);
        g.throughput(Throughput::Elements(graph.tasks.len() as u64));
        g.bench_function("build graph (tasks/s)", |b| {
            b.iter(|| lumos_graph::build(&trace))
        });
        let opts = lumos_sim::SimOptions::default();
        g.bench_function("simulate (tasks/s)", |b| {
            b.iter(|| lumos_sim::simulate(&graph, &opts).unwrap())
        });
        g.finish();
    }
}

criterion_group!(benches, stages);
criterion_main!(benches);
