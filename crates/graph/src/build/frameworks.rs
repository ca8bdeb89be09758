//! Framework semantics for stream waits that the trace does not explain
//! (no `cuda_sync` event names the stream). PyTorch's NCCL process group,
//! which DDP, FSDP and Megatron all go through, makes the communication
//! stream wait for the issuing thread's current stream before every
//! collective (`syncStream`, inside the collective's own operator), and
//! the current stream wait for the collective at `Work::wait()`. Where the
//! stream is not recorded, the first launch after a wait call is not
//! always the work it guards (a `wait()` followed by the next collective's
//! own wait), so the role of the call is read from where it sits.

use rustc_hash::FxHashSet;

use super::*;

/// How far along a thread the launch that a wait call guards is looked
/// for, in tasks of the thread.
const GUARD_WINDOW: usize = 256;
/// How far back along a thread the work a wait call waits for is looked
/// for, in tasks of the thread.
const SOURCE_WINDOW: usize = 4096;
/// How many of a thread's latest compute launches decide its current
/// stream.
const CURRENT_STREAM_WINDOW: usize = 32;

/// What a stream-wait call is for, by the framework's pattern, with the
/// dependency it stands for.
#[derive(Clone, Copy)]
pub(super) struct FrameworkWait {
    /// The first task on the waiting stream launched after the call.
    pub(super) target: TaskId,
    /// The work waited for, if the pattern names it.
    pub(super) source: Option<TaskId>,
    /// Which pattern: [`Rule::CollectiveInput`] or
    /// [`Rule::CollectiveConsumer`].
    pub(super) rule: Rule,
}

impl Builder {
    /// The framework role of every wait call that no `cuda_sync` event
    /// explains (`explained` holds the correlations of those that one
    /// does), decided in time order so that each `wait()` consumes the
    /// collective it stands for before later waits look.
    #[inline(never)]
    pub(super) fn framework_waits(
        &self,
        waits: &[TaskId],
        explained: &ByCorr<(i64, i64)>,
    ) -> FxHashMap<TaskId, FrameworkWait> {
        let mut by_time: Vec<TaskId> = waits
            .iter()
            .copied()
            .filter(|&w| !explained.contains_key(&self.g.tasks[w.idx()].correlation))
            .collect();
        // Traces whose cuda_sync events explain every wait skip the two
        // passes over all tasks below.
        if by_time.is_empty() {
            return FxHashMap::default();
        }
        let comms = self.comms_by_launch();
        let comm_calls = self.comm_calls();
        by_time.sort_by_key(|&w| (self.raw[w.idx()].start, w));
        let mut consumed = FxHashSet::default();
        let mut out = FxHashMap::default();
        for w in by_time {
            if let Some(f) = self.framework_wait(w, &comms, &comm_calls, &consumed) {
                if f.rule == Rule::CollectiveConsumer {
                    consumed.extend(f.source);
                }
                out.insert(w, f);
            }
        }
        out
    }

    /// The role of stream-wait call `w` by framework semantics, or `None`
    /// when it fits neither pattern (the caller then falls back on the
    /// launch-sequence and observed-wait rules).
    ///
    /// - The call sits in the same operator as the next launch, and that
    ///   launch is a collective: the collective's stream waits for its
    ///   input, the last task launched onto the thread's current stream
    ///   before the call.
    /// - Otherwise, when a collective was launched on the device before
    ///   the call that no earlier wait consumed: the current stream (where
    ///   the thread launched compute before the call) waits for the most
    ///   recent such collective, at the first task launched onto it after
    ///   the call (its consumer: the next layer, the optimizer step).
    fn framework_wait(
        &self,
        w: TaskId,
        comms: &[(i64, TaskId)],
        comm_calls: &[Vec<u32>],
        consumed: &FxHashSet<TaskId>,
    ) -> Option<FrameworkWait> {
        let mut after = self.launches_after(w);
        let (call, first) = after.next()?;
        let scope = self.g.task_scopes[w.idx()];
        if self.g.tasks[first.idx()].is_comm()
            && scope.is_some()
            && self.g.task_scopes[call.idx()] == scope
        {
            let stream = self.g.tasks[first.idx()].proc;
            let source = self
                .current_stream(w)
                .filter(|&c| c != stream)
                .and_then(|c| self.last_launched_before(c, self.raw[w.idx()].start));
            return Some(FrameworkWait {
                target: first,
                source,
                rule: Rule::CollectiveInput,
            });
        }
        let current = self.current_stream(w);
        // The consumer may be launched by another thread than the one that
        // waits (the backward pass runs on autograd's thread), so it is the
        // first launch onto the current stream after the call, by any thread.
        let target = match current {
            Some(s) => self.first_launched_after(s, self.raw[w.idx()].start)?,
            None => std::iter::once((call, first))
                .chain(after)
                .map(|(_, g)| g)
                .find(|&g| !self.g.tasks[g.idx()].is_comm())?,
        };
        let stream = self.g.tasks[target.idx()].proc;
        let source = self.unwaited_comm_before(w, stream, comms, comm_calls, consumed)?;
        Some(FrameworkWait {
            target,
            source: Some(source),
            rule: Rule::CollectiveConsumer,
        })
    }

    /// The launching calls after `call` on its thread, each with the first
    /// GPU task it launched.
    pub(super) fn launches_after(
        &self,
        call: TaskId,
    ) -> impl Iterator<Item = (TaskId, TaskId)> + '_ {
        let proc = &self.g.processors[self.g.tasks[call.idx()].proc.idx()];
        let p = self.pos[call.idx()] as usize;
        proc.tasks[p + 1..]
            .iter()
            .take(GUARD_WINDOW)
            .filter_map(|&c| Some((c, *self.launched.get(&c)?.first()?)))
    }

    /// The GPU tasks launched before `call` on its thread, latest first.
    pub(super) fn launched_before(&self, call: TaskId) -> impl Iterator<Item = TaskId> + '_ {
        let proc = &self.g.processors[self.g.tasks[call.idx()].proc.idx()];
        let p = self.pos[call.idx()] as usize;
        proc.tasks[..p]
            .iter()
            .rev()
            .take(SOURCE_WINDOW)
            .filter_map(|c| self.launched.get(c))
            .flat_map(|g| g.iter().rev().copied())
    }

    /// The thread's current stream at `call`: where most of the last
    /// [`CURRENT_STREAM_WINDOW`] non-communication tasks it launched went
    /// (the latest wins a tie), so that an occasional copy on a side
    /// stream does not stand for it.
    pub(super) fn current_stream(&self, call: TaskId) -> Option<ProcId> {
        let mut counts: Vec<(ProcId, usize)> = Vec::new();
        for g in self
            .launched_before(call)
            .filter(|&g| !self.g.tasks[g.idx()].is_comm())
            .take(CURRENT_STREAM_WINDOW)
        {
            let s = self.g.tasks[g.idx()].proc;
            match counts.iter_mut().find(|(p, _)| *p == s) {
                Some((_, n)) => *n += 1,
                None => counts.push((s, 1)),
            }
        }
        // `max_by_key` keeps the last maximum; the first seen is the latest.
        counts
            .iter()
            .rev()
            .max_by_key(|&&(_, n)| n)
            .map(|&(s, _)| s)
    }

    /// The latest collective launched before `call` onto another stream
    /// than `not_on` that no earlier wait consumed: by the call's own
    /// thread, else by any thread on the device (the backward pass may run
    /// on another thread than the one that waits). `comms` holds every
    /// collective by launch time, `comm_calls` the calls that launched one
    /// ([`Self::comm_calls`]).
    fn unwaited_comm_before(
        &self,
        call: TaskId,
        not_on: ProcId,
        comms: &[(i64, TaskId)],
        comm_calls: &[Vec<u32>],
        consumed: &FxHashSet<TaskId>,
    ) -> Option<TaskId> {
        let free = |g: TaskId| {
            let proc = self.g.tasks[g.idx()].proc;
            proc != not_on && !consumed.contains(&g)
        };
        // A `wait()` in the operator that launched the collective (a
        // tensor-parallel linear's backward) is for that collective, even
        // when an asynchronous one (a gradient bucket) was launched since.
        let mine = || {
            self.comms_launched_before(call, comm_calls)
                .filter(|&g| free(g))
        };
        let scope = self.g.task_scopes[call.idx()];
        let inside = scope.and_then(|s| {
            mine().find(|&g| {
                self.launcher_of(g)
                    .is_some_and(|c| self.scope_within(self.g.task_scopes[c.idx()], s))
            })
        });
        if let Some(g) = inside.or_else(|| mine().next()) {
            return Some(g);
        }
        let time = self.raw[call.idx()].start;
        let device = self.device_of(not_on);
        let n = comms.partition_point(|&(t, _)| t < time);
        comms[..n]
            .iter()
            .rev()
            .take(SOURCE_WINDOW)
            .map(|&(_, g)| g)
            .find(|&g| {
                let proc = self.g.tasks[g.idx()].proc;
                proc != not_on && self.device_of(proc) == device && !consumed.contains(&g)
            })
    }

    /// The collectives launched before `call` on its thread, latest first,
    /// within the same [`SOURCE_WINDOW`] tasks as [`Self::launched_before`]
    /// (its collectives, in its order), found through `comm_calls` so that
    /// the calls in between that launched none are not walked.
    fn comms_launched_before<'a>(
        &'a self,
        call: TaskId,
        comm_calls: &'a [Vec<u32>],
    ) -> impl Iterator<Item = TaskId> + 'a {
        let proc_id = self.g.tasks[call.idx()].proc;
        let proc = &self.g.processors[proc_id.idx()];
        let calls = &comm_calls[proc_id.idx()];
        let p = self.pos[call.idx()];
        let lo = p.saturating_sub(SOURCE_WINDOW as u32);
        let (a, b) = (
            calls.partition_point(|&q| q < lo),
            calls.partition_point(|&q| q < p),
        );
        calls[a..b]
            .iter()
            .rev()
            .filter_map(|&q| self.launched.get(&proc.tasks[q as usize]))
            .flat_map(|g| g.iter().rev().copied())
            .filter(|&g| self.g.tasks[g.idx()].is_comm())
    }

    /// For each processor, the positions in its task list of the calls
    /// that launched a collective, in order.
    fn comm_calls(&self) -> Vec<Vec<u32>> {
        self.g
            .processors
            .iter()
            .map(|proc| {
                (0..proc.tasks.len() as u32)
                    .filter(|&q| {
                        self.launched
                            .get(&proc.tasks[q as usize])
                            .is_some_and(|g| g.iter().any(|t| self.g.tasks[t.idx()].is_comm()))
                    })
                    .collect()
            })
            .collect()
    }

    /// True when `scope` is `outer` or lies inside it.
    fn scope_within(&self, scope: Option<ScopeId>, outer: ScopeId) -> bool {
        let mut s = scope;
        // Call trees are shallow; the bound only guards a malformed tree.
        for _ in 0..256 {
            match s {
                Some(x) if x == outer => return true,
                Some(x) => s = self.g.scopes[x.0 as usize].parent,
                None => return false,
            }
        }
        false
    }

    /// Every communication task with its launch time, in launch order.
    pub(super) fn comms_by_launch(&self) -> Vec<(i64, TaskId)> {
        let mut out: Vec<(i64, TaskId)> = (0..self.g.tasks.len())
            .map(|i| TaskId(i as u32))
            .filter(|&g| self.g.tasks[g.idx()].is_comm())
            .map(|g| (self.launch_time(g), g))
            .collect();
        out.sort_unstable();
        out
    }
}
