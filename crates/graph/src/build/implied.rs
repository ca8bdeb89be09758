//! Framework semantics where the trace records no cross-stream evidence at
//! all: no stream-wait calls and no `cuda_sync` events (many exporters and
//! frameworks record neither). PyTorch's NCCL process group still made the
//! communication stream wait for the issuing thread's current stream before
//! each collective, and the current stream wait for it where the result is
//! used; only program order and the measured times are left to find them.
//! The edges are conservative: each must agree with the measured run, and a
//! consumer is only named where the collective was synchronous (the
//! thread's next compute task started after it ended) or where it bound
//! (the compute stream sat idle until it ended).

use rustc_hash::FxHashSet;

use super::*;

impl Builder {
    /// True when nothing in the trace says which stream waited for which:
    /// no stream-wait calls (`waits` is empty) and no `cuda_sync` events.
    pub(super) fn no_stream_evidence(&self, waits: &[TaskId]) -> bool {
        waits.is_empty() && self.report.cuda_sync_events == 0
    }

    /// For every collective on its own stream: its stream waits for the
    /// last task its thread launched onto the thread's current stream
    /// before it ([`Rule::ImpliedCollectiveInput`]), and the current
    /// stream's consumer waits for it ([`Rule::ImpliedCollectiveConsumer`]).
    /// Only for traces with no stream evidence (see
    /// [`Self::no_stream_evidence`]).
    #[inline(never)]
    pub(super) fn implied_collective_edges(&mut self) {
        let mut found = Vec::new();
        let mut seen = FxHashSet::default();
        for (_, g) in self.comms_by_launch() {
            let Some(call) = self.launcher_of(g) else {
                continue;
            };
            let stream = self.g.tasks[g.idx()].proc;
            let Some(current) = self
                .current_stream(call)
                .filter(|&c| c != stream && self.device_of(c) == self.device_of(stream))
            else {
                continue;
            };
            if let Some(src) = self.implied_input(call, g, current) {
                if seen.insert((src, g)) {
                    found.push((src, g, Rule::ImpliedCollectiveInput));
                }
            }
            if let Some(dst) = self.implied_consumer(call, g, current) {
                if seen.insert((g, dst)) {
                    found.push((g, dst, Rule::ImpliedCollectiveConsumer));
                }
            }
        }
        for (from, to, rule) in found {
            self.found_edge(from, to, DepKind::InterStream, rule);
        }
    }

    /// The last task the collective's thread launched onto `current`
    /// before `call`, if it ended before the collective started (a source
    /// the measured run contradicts is no dependency).
    fn implied_input(&self, call: TaskId, g: TaskId, current: ProcId) -> Option<TaskId> {
        let src = self
            .launched_before(call)
            .find(|&t| self.g.tasks[t.idx()].proc == current)?;
        self.fits(src, g).then_some(src)
    }

    /// The task on `current` that uses collective `g`'s result: the
    /// thread's next launch onto it, when that started after `g` ended (a
    /// synchronous collective: Megatron's tensor-parallel all-reduce, a
    /// pipeline receive); else (an asynchronous one, overlapped by the
    /// compute launched after it) the first task on `current` to start
    /// after `g` ended, only if it waited for `g` in the measured run (the
    /// optimizer step after the last gradient bucket). An asynchronous
    /// collective that never bound gets no consumer: its wait point left
    /// no trace.
    fn implied_consumer(&self, call: TaskId, g: TaskId, current: ProcId) -> Option<TaskId> {
        let next = self
            .launches_after(call)
            .map(|(_, t)| t)
            .find(|&t| self.g.tasks[t.idx()].proc == current)?;
        if self.fits(g, next) {
            return Some(next);
        }
        let tasks = &self.g.processors[current.idx()].tasks;
        let end = self.raw[g.idx()].end;
        let n = tasks.partition_point(|&t| self.raw[t.idx()].start < end);
        let first = *tasks.get(n)?;
        (self.observed_wait_source(first) == Some(g)).then_some(first)
    }

    /// True when `from` ended before `to` started in the measured run
    /// (within the clock's rounding).
    fn fits(&self, from: TaskId, to: TaskId) -> bool {
        self.raw[from.idx()].end <= self.raw[to.idx()].start.saturating_add(TIME_TOLERANCE_NS)
    }
}
