//! Inter-thread hand-offs: a long CPU gap that ends right after another
//! thread's task ends.

use rayon::prelude::*;

use super::*;

impl Builder {
    /// Inter-thread edges: a long gap on a thread that ends right after a
    /// task on another thread of the same process ends.
    #[inline(never)]
    pub(super) fn inter_thread(&mut self) {
        let mut by_pid: FxHashMap<Ident, Vec<(i64, TaskId)>> = FxHashMap::default();
        for (i, p) in self.g.processors.iter().enumerate() {
            if let Some(&pid) = self.thread_pid.get(&ProcId(i as u32)) {
                let v = by_pid.entry(pid).or_default();
                v.par_extend(
                    p.tasks
                        .par_iter()
                        .with_min_len(PAR_MIN)
                        .map(|&t| (self.raw[t.idx()].end, t)),
                );
            }
        }
        for v in by_pid.values_mut() {
            // Runs per thread, distinct keys: see `syncs`. (Stable, so the
            // same order as one thread's sort.)
            v.par_sort();
        }
        // A thread's first task (an autograd thread woken by `backward()`
        // mid-window) is idle from the window start until then: a gap like
        // any other, or it would start at a fixed time whatever delays the
        // thread that wakes it. How long it slept is unknown (it may predate
        // the window), so it gets the longest wake-up window.
        let origin = self.raw.iter().map(|r| r.start).min().unwrap_or(0);
        // Each task's hand-off is found on its own, on every core, in
        // task order.
        let mut found = Vec::new();
        for (i, p) in self.g.processors.iter().enumerate() {
            let Some(pid) = self.thread_pid.get(&ProcId(i as u32)) else {
                continue;
            };
            let (thread, ends) = (ProcId(i as u32), &by_pid[pid]);
            let tasks = &p.tasks;
            found.par_extend(
                (0..tasks.len())
                    .into_par_iter()
                    .with_min_len(PAR_MIN)
                    .filter_map(|k| self.hand_off(thread, tasks, k, ends, origin)),
            );
        }
        for (s, t) in found {
            self.found_edge(s, t, DepKind::InterThread, Rule::GapAfterOtherThread);
        }
    }

    /// The hand-off into the `k`th of `thread`'s tasks (`tasks`, in order)
    /// from another thread of its process (`ends`: their tasks by end
    /// time), as a (source, task) edge, if that task ends a long gap.
    fn hand_off(
        &self,
        thread: ProcId,
        tasks: &[TaskId],
        k: usize,
        ends: &[(i64, TaskId)],
        origin: i64,
    ) -> Option<(TaskId, TaskId)> {
        let task = tasks[k];
        let prev_end = match k {
            0 => origin,
            _ => self.raw[tasks[k - 1].idx()].end,
        };
        let t = self.raw[task.idx()];
        let gap = t.start.saturating_sub(prev_end);
        if gap < INTER_THREAD_MIN_GAP_NS {
            return None;
        }
        let window = match k {
            0 => INTER_THREAD_MAX_WINDOW_NS,
            _ => wake_window(gap),
        };
        let before = ends.partition_point(|&(end, _)| end <= t.start);
        let &(_, source) = ends[..before]
            .iter()
            .rev()
            .take_while(|&&(end, _)| end >= t.start.saturating_sub(window))
            .find(|&&(end, s)| {
                let sp = self.g.tasks[s.idx()].proc;
                // A hand-off: the other thread goes quiet after the source
                // until this task has started. A source whose thread
                // carries straight on is a coincidence.
                let next = self.g.processors[sp.idx()]
                    .tasks
                    .get(self.pos[s.idx()] as usize + 1);
                let hands_off = next.is_none_or(|n| self.raw[n.idx()].start >= t.start);
                sp != thread && end > prev_end && hands_off
            })?;
        Some((source, task))
    }
}
