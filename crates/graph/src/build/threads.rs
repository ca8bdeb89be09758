//! Inter-thread hand-offs: a long CPU gap that ends right after another
//! thread's task ends.

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
                v.extend(p.tasks.iter().map(|&t| (self.raw[t.idx()].end, t)));
            }
        }
        for v in by_pid.values_mut() {
            // Runs per thread, distinct keys: see `syncs`.
            v.sort();
        }
        // A thread's first task (an autograd thread woken by `backward()`
        // mid-window) is idle from the window start until then: a gap like
        // any other, or it would start at a fixed time whatever delays the
        // thread that wakes it. How long it slept is unknown (it may predate
        // the window), so it gets the longest wake-up window.
        let origin = self.raw.iter().map(|r| r.start).min().unwrap_or(0);
        let mut new_edges = Vec::new();
        for (i, p) in self.g.processors.iter().enumerate() {
            let Some(pid) = self.thread_pid.get(&ProcId(i as u32)) else {
                continue;
            };
            let ends = &by_pid[pid];
            for (k_in_thread, &task) in p.tasks.iter().enumerate() {
                let prev_end = match k_in_thread {
                    0 => origin,
                    _ => self.raw[p.tasks[k_in_thread - 1].idx()].end,
                };
                let t = self.raw[task.idx()];
                let gap = t.start.saturating_sub(prev_end);
                if gap < INTER_THREAD_MIN_GAP_NS {
                    continue;
                }
                let k = ends.partition_point(|&(end, _)| end <= t.start);
                let src = ends[..k]
                    .iter()
                    .rev()
                    .take_while(|&&(end, _)| {
                        let window = match k_in_thread {
                            0 => INTER_THREAD_MAX_WINDOW_NS,
                            _ => wake_window(gap),
                        };
                        end >= t.start.saturating_sub(window)
                    })
                    .find(|&&(end, s)| {
                        let sp = self.g.tasks[s.idx()].proc;
                        // A hand-off: the other thread goes quiet after the
                        // source until this task has started. A source whose
                        // thread carries straight on is a coincidence.
                        let next = self.g.processors[sp.idx()]
                            .tasks
                            .get(self.pos[s.idx()] as usize + 1);
                        let hands_off = next.is_none_or(|n| self.raw[n.idx()].start >= t.start);
                        sp != ProcId(i as u32) && end > prev_end && hands_off
                    });
                if let Some(&(_, s)) = src {
                    new_edges.push((s, task));
                }
            }
        }
        for (s, t) in new_edges {
            self.found_edge(s, t, DepKind::InterThread, Rule::GapAfterOtherThread);
        }
    }
}
