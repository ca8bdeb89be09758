//! HTA's kernel classes, and the shortcuts the analyses take against the
//! plain definitions they replace, on corpus traces (the analyses on
//! hand-made traces are in tests/analysis_small.rs: traces are written
//! there, not in src/).

use lumos_graph::TaskId;
use lumos_sim::{breakdown, gpu_busy_timeline, whole_span, SimOptions};

use super::breakdown::{GpuOrder, HtaClass};
use super::intervals::Intervals;
use super::kernels::{operator_of, ScopeOperators};
use super::selected_steps;
use crate::critical::{critical_paths, step_critical_paths};

/// Corpus traces of different shapes: annotations, several streams,
/// collectives, an AMD trace.
const TRACES: [&str; 4] = [
    "single-rank/a100-recsys-rank3of8.json.gz",
    "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
    "single-rank/v100-ddp-rank1of2-allreduce.json.gz",
    "single-rank/gp100-train-gpu-annotations.json.gz",
];

#[test]
fn shortcuts_agree_with_the_definitions_on_corpus_traces() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in TRACES {
        let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
        let r = crate::replay(&trace, &SimOptions::default()).unwrap();
        let (graph, schedule) = (&r.graph, &r.schedule);
        // Each task's operator, looked up per scope, is the one found by
        // walking its scope chain.
        let operators = ScopeOperators::of(graph);
        for i in 0..graph.tasks.len() {
            let t = TaskId(i as u32);
            assert_eq!(operators.operator(graph, t), operator_of(graph, t), "{rel}");
        }
        // The unions from the tasks sorted once are the unions of the
        // tasks' spans, and give the simulator's breakdown and busy
        // timeline of the whole window.
        let order = GpuOrder::new(graph, schedule);
        let mut merged = Vec::new();
        let [c, m, b] = order.comm_measures(graph, |s| merged.push(s));
        let gpu = |comm_task: Option<bool>| {
            Intervals::union(
                (0..graph.tasks.len())
                    .map(|i| TaskId(i as u32))
                    .filter(|&t| graph.task(t).kind.is_gpu())
                    .filter(|&t| comm_task.is_none_or(|c| graph.task(t).is_comm() == c))
                    .map(|t| lumos_graph::Span {
                        start_ns: lumos_sim::TaskTimes::start_of(schedule, t),
                        end_ns: lumos_sim::TaskTimes::end_of(schedule, t),
                    }),
            )
        };
        let window = whole_span(schedule);
        let (compute, comm, busy) = (gpu(Some(false)), gpu(Some(true)), gpu(None));
        assert_eq!(merged, busy.spans(), "{rel}");
        assert_eq!(c, compute.measure_in(window), "{rel}");
        assert_eq!(m, comm.measure_in(window), "{rel}");
        assert_eq!(b, busy.measure_in(window), "{rel}");
        let expected = breakdown(graph, schedule, window);
        assert_eq!(
            expected,
            lumos_sim::Breakdown::from_measures(c, m, b, window.len_ns()),
            "{rel}"
        );
        assert_eq!(
            lumos_sim::busy_timeline(&merged, window, 1_000_000),
            gpu_busy_timeline(graph, schedule, window, 1_000_000),
            "{rel}"
        );
        // The report's step paths are the export's, less the hops.
        let all: Vec<usize> = (0..graph.steps.len()).collect();
        let steps = selected_steps(graph, schedule, None, &all);
        assert_eq!(
            step_critical_paths(graph, schedule, &steps, 5, &operators),
            critical_paths(graph, schedule, &steps, 5).steps,
            "{rel}"
        );
    }
}

#[test]
fn hta_kernel_classes() {
    assert_eq!(
        HtaClass::of("ncclKernel_AllReduce"),
        HtaClass::Communication
    );
    assert_eq!(
        HtaClass::of("ncclDevKernel_Generic"),
        HtaClass::Communication
    );
    assert_eq!(
        HtaClass::of("Memcpy HtoD (Pageable -> Device)"),
        HtaClass::Memory
    );
    assert_eq!(HtaClass::of("Memset (Device)"), HtaClass::Memory);
    assert_eq!(
        HtaClass::of("void at::native::vectorized_elementwise_kernel"),
        HtaClass::Computation
    );
    assert_eq!(HtaClass::of("Event Sync"), HtaClass::Other);
    assert_eq!(HtaClass::of("cudaLaunchKernel"), HtaClass::Other);
}
