//! How far a CPU may run ahead of its GPU: the launch-queue depth a
//! prediction replays with, and the trace's own evidence for it.
//!
//! Without a limit a what-if that slows the GPU (a larger data-parallel
//! group, a slower link) lets the CPU run on unboundedly, and every step's
//! end drifts later than the last: a runaway no real run shows, because a
//! launch blocks once its stream holds a full queue of unfinished work.

use lumos_graph::{DepKind, Graph, Measured};
use lumos_sim::DEFAULT_LAUNCH_QUEUE;

use crate::baseline::Input;

/// The launch-queue depth of a prediction and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchQueue {
    /// GPU tasks a stream holds launched and unfinished before a launch
    /// blocks.
    pub depth: u32,
    /// The most a stream of the traces held at once (at a launch call's
    /// measured start, the tasks launched before it on its stream and not
    /// yet ended).
    pub deepest_measured: u32,
}

impl LaunchQueue {
    /// The depth for `inputs`: CUDA's usual queue ([`DEFAULT_LAUNCH_QUEUE`]),
    /// or the deepest queue a trace shows when it shows a deeper one (that
    /// runtime's queue is evidently longer).
    pub fn of(inputs: &[Input]) -> LaunchQueue {
        let deepest_measured = inputs
            .iter()
            .map(|i| deepest_queue(&i.graph, &i.measured))
            .max()
            .unwrap_or(0);
        LaunchQueue {
            depth: deepest_measured.max(DEFAULT_LAUNCH_QUEUE),
            deepest_measured,
        }
    }

    /// Where the depth comes from, for an assumption text.
    pub fn describe(&self) -> String {
        if self.deepest_measured > DEFAULT_LAUNCH_QUEUE {
            format!(
                "launch queue: {} GPU tasks per stream, the deepest the trace shows (more than \
                 CUDA's usual {DEFAULT_LAUNCH_QUEUE}); a CPU runs at most that far ahead of its GPU",
                self.depth
            )
        } else {
            format!(
                "launch queue: {} GPU tasks per stream (CUDA's usual queue; the trace held at \
                 most {}); a CPU runs at most that far ahead of its GPU",
                self.depth, self.deepest_measured
            )
        }
    }
}

/// The deepest launch queue of `graph`'s streams in the measured run.
fn deepest_queue(graph: &Graph, measured: &Measured) -> u32 {
    let n = graph.tasks.len();
    if measured.tasks.len() != n {
        return 0;
    }
    let mut launcher = vec![u32::MAX; n];
    for e in &graph.edges {
        if e.kind == DepKind::Launch && e.to.idx() < n && e.from.idx() < n {
            launcher[e.to.idx()] = e.from.0;
        }
    }
    let mut deepest = 0usize;
    for proc in graph.processors.iter().filter(|p| p.is_stream()) {
        // A stream runs in order, so its tasks' ends rise (or nearly): the
        // unfinished tasks before the k-th are those after the last one
        // that had ended when the k-th was launched.
        let ends: Vec<i64> = proc
            .tasks
            .iter()
            .map(|t| measured.tasks[t.idx()].end_ns)
            .collect();
        for (k, t) in proc.tasks.iter().enumerate() {
            let call = launcher[t.idx()];
            if call == u32::MAX {
                continue;
            }
            let at = measured.tasks[call as usize].start_ns;
            let ended = ends[..k].partition_point(|&e| e <= at);
            deepest = deepest.max(k - ended);
        }
    }
    deepest.min(u32::MAX as usize) as u32
}
