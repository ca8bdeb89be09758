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

/// The CPU task that launched each task (by its launch edge), if any:
/// 4 bytes a task where an `Option<TaskId>` takes 8, since it is alive
/// through the whole report.
pub(crate) struct Launchers {
    /// By task, its launcher's id, [`Launchers::NONE`] where there is none.
    of_task: Vec<u32>,
}

impl Launchers {
    const NONE: u32 = u32::MAX;

    /// The launchers of `graph`'s tasks.
    pub fn of(graph: &Graph) -> Launchers {
        let mut of_task = vec![Self::NONE; graph.tasks.len()];
        for e in &graph.edges {
            if e.kind == DepKind::Launch {
                if let Some(slot) = of_task.get_mut(e.to.idx()) {
                    *slot = e.from.0;
                }
            }
        }
        Launchers { of_task }
    }

    /// The task that launched `t`.
    pub fn of_task(&self, t: TaskId) -> Option<TaskId> {
        let l = self.of_task[t.idx()];
        (l != Self::NONE).then_some(TaskId(l))
    }
}

/// Why the GPU was idle in a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    HostWait,
    KernelGap,
    Other,
}

/// The idle gaps of a timeline, found from its busy spans in order: each
/// gap inside `domain` (which covers every span the gaps will be measured
/// in) before a busy span, then the one after the last.
pub(crate) struct Gaps {
    prev_end: i64,
    domain: Span,
    kernel_gap_ns: i64,
}

impl Gaps {
    /// No busy span seen yet.
    pub fn new(domain: Span, kernel_gap_ns: i64) -> Gaps {
        Gaps {
            prev_end: domain.start_ns,
            domain,
            kernel_gap_ns,
        }
    }

    /// The gap before the busy span `b`, the next of the union, if any,
    /// with its cause; `launched_after(gap_start, at)` says whether GPU
    /// work starts at `at` and all of it was launched after `gap_start`.
    /// Each cause's gaps come in order with busy time between them: a
    /// union as they are.
    pub fn before(
        &mut self,
        b: Span,
        launched_after: impl Fn(i64, i64) -> bool,
    ) -> Option<(Cause, Span)> {
        let gap = (b.start_ns > self.prev_end).then(|| {
            let g = Span {
                start_ns: self.prev_end,
                end_ns: b.start_ns,
            };
            let cause = if launched_after(g.start_ns, b.start_ns) {
                Cause::HostWait
            } else if g.len_ns() < self.kernel_gap_ns {
                Cause::KernelGap
            } else {
                Cause::Other
            };
            (cause, g)
        });
        self.prev_end = self.prev_end.max(b.end_ns);
        gap
    }

    /// The gap after the last busy span, to the domain's end (`other`).
    pub fn after(self) -> Option<Span> {
        (self.domain.end_ns > self.prev_end).then_some(Span {
            start_ns: self.prev_end,
            end_ns: self.domain.end_ns,
        })
    }
}
