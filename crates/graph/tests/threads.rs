//! The build makes each thread's and each stream's tasks, and resolves
//! stream-wait calls, on every core it is given; the graph must not depend
//! on how many that is, nor on which track finishes first.

use lumos_graph::{build, build_owned, dump};

/// The dump, measured times and report of `trace`'s graph, built in a
/// pool of `threads` threads (owned or borrowed).
fn built_on(threads: usize, trace: &lumos_trace::Trace, owned: bool) -> (String, String) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let (g, measured, report) = match owned {
            true => build_owned(trace.clone()),
            false => build(trace),
        };
        (dump(&g, Some(&report)), format!("{measured:?}"))
    })
}

#[test]
fn the_graph_does_not_depend_on_the_number_of_threads() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    // Traces with several CPU threads and several streams each; the v100
    // one has enough stream waits (about 6,000) to resolve them in parallel.
    for rel in [
        "single-rank/a100-recsys-rank3of8.json.gz",
        "single-rank/v100-ddp-rank1of2-allreduce.json.gz",
        "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
    ] {
        let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
        let one = built_on(1, &trace, false);
        for (threads, owned) in [(2, false), (4, true), (8, false)] {
            assert!(
                built_on(threads, &trace, owned) == one,
                "{rel}: the graph built on {threads} threads (owned: {owned}) differs from one thread's"
            );
        }
    }
}
