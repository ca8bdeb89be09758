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
/// span the gaps will be measured in); `launched_after(gap_start, at)`
/// says whether GPU work starts at `at` and all of it was launched after
/// `gap_start`.
pub(crate) fn idle_causes(
    busy: &Intervals,
    launched_after: impl Fn(i64, i64) -> bool,
    domain: Span,
    kernel_gap_ns: i64,
) -> IdleCauses {
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
