//! Idle GPU time by cause: every gap in the GPU's busy time (no stream
//! running anything) is classified by the GPU work that ends it.
//!
//! - `host_wait`: that work was launched only after the gap began (every
//!   task starting when the gap ends was launched after the GPU went
//!   idle): the GPU waited for the host to issue work;
//! - `kernel_gap`: it had been launched before, and the gap is shorter
//!   than the kernel-gap threshold: the delay between back-to-back kernels;
//! - `other`: it had been launched before and the gap is longer (it waited
//!   for something else: an event, a copy, another stream), or the gap has
//!   no GPU work after it, or that work's launch is not recorded.
//!
//! This is HTA's idle-time breakdown, applied to the GPU as a whole rather
//! than to each stream (HTA's own, per stream, is [`super::HtaView`]'s
//! `idle_by_stream`).

use lumos_graph::{DepKind, Graph, Span, TaskId};
use lumos_sim::TaskTimes;

use super::intervals::Intervals;

/// The CPU task that launched each task (by its launch edge), if any.
pub(crate) fn launchers(graph: &Graph) -> Vec<Option<TaskId>> {
    let mut out = vec![None; graph.tasks.len()];
    for e in &graph.edges {
        if e.kind == DepKind::Launch {
            if let Some(slot) = out.get_mut(e.to.idx()) {
                *slot = Some(e.from);
            }
        }
    }
    out
}

/// The idle gaps of a timeline, by cause.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdleCauses {
    pub host_wait: Intervals,
    pub kernel_gap: Intervals,
    pub other: Intervals,
}

/// Classifies every gap of `busy` inside `domain` (which covers every
/// span the gaps will be measured in).
pub(crate) fn idle_causes<T: TaskTimes + ?Sized>(
    graph: &Graph,
    times: &T,
    busy: &Intervals,
    launcher: &[Option<TaskId>],
    domain: Span,
    kernel_gap_ns: i64,
) -> IdleCauses {
    // GPU tasks by start, each with its launch time (None: unknown).
    let mut starts: Vec<(i64, Option<i64>)> = graph
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kind.is_gpu())
        .map(|(i, _)| TaskId(i as u32))
        .filter(|&t| times.start_of(t) < times.end_of(t))
        .map(|t| {
            let launched = launcher[t.idx()].map(|l| times.start_of(l));
            (times.start_of(t), launched)
        })
        .collect();
    starts.sort_unstable_by_key(|s| s.0);
    let launched_after = |gap_start: i64, at: i64| -> bool {
        let from = starts.partition_point(|s| s.0 < at);
        let upto = starts.partition_point(|s| s.0 <= at);
        from < upto
            && starts[from..upto]
                .iter()
                .all(|s| s.1.is_some_and(|l| l > gap_start))
    };
    let (mut host, mut gap, mut other) = (Vec::new(), Vec::new(), Vec::new());
    let mut prev_end = domain.start_ns;
    for b in busy.spans() {
        if b.start_ns > prev_end {
            let g = Span {
                start_ns: prev_end,
                end_ns: b.start_ns,
            };
            if launched_after(g.start_ns, b.start_ns) {
                host.push(g);
            } else if g.len_ns() < kernel_gap_ns {
                gap.push(g);
            } else {
                other.push(g);
            }
        }
        prev_end = prev_end.max(b.end_ns);
    }
    if domain.end_ns > prev_end {
        other.push(Span {
            start_ns: prev_end,
            end_ns: domain.end_ns,
        });
    }
    IdleCauses {
        host_wait: Intervals::union(host),
        kernel_gap: Intervals::union(gap),
        other: Intervals::union(other),
    }
}
