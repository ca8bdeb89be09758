//! The last steps: processor order, cycle removal, latencies by gap
//! attribution, releases, steps, and the builder's own checks.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use super::*;
use crate::report::{counted, LaunchTimes};

/// No incoming edge (gap attribution).
const NO_EDGE: u32 = u32::MAX;

impl Builder {
    /// Frees what only the steps that link tasks (launches to
    /// `inter_thread`) read, before the processor order adds an edge per
    /// task, where the build's memory peak is: the runtime calls by
    /// correlation, the streams' launch times, the tasks' positions, the
    /// polling loops, the `cuda_sync` records and the collective ops.
    #[inline(never)]
    pub(super) fn free_linking_indexes(&mut self) {
        self.call_by_corr = CorrIndex::default();
        self.launch_times = Vec::new();
        self.pos = Vec::new();
        self.polls = Default::default();
        self.sync_events = Vec::new();
        self.collective_ops = Vec::new();
        self.streams = FxHashMap::default();
    }

    /// Program order on threads and streams as explicit edges.
    #[inline(never)]
    pub(super) fn order_edges(&mut self) {
        let procs = &self.g.processors;
        // Where each processor's edges start among the new ones, so that
        // every edge is made on its own (on every core) in the order a
        // processor-by-processor loop would push them.
        let mut starts = Vec::with_capacity(procs.len() + 1);
        starts.push(0);
        for p in procs {
            starts.push(starts[starts.len() - 1] + p.tasks.len().saturating_sub(1));
        }
        let n = starts[procs.len()];
        let edge = |k: usize| {
            let p = starts.partition_point(|&s| s <= k) - 1;
            let (tasks, j) = (&procs[p].tasks, k - starts[p]);
            let kind = match procs[p].is_stream() {
                true => DepKind::IntraStream,
                false => DepKind::IntraThread,
            };
            new_edge(tasks[j], tasks[j + 1], kind, Anchor::End)
        };
        let order = (0..n).into_par_iter().with_min_len(PAR_MIN).map(edge);
        self.g.edges.par_extend(order);
    }

    /// The found or inferred dependencies that would close a cycle (see
    /// `acyclic`), as groups for [`Self::break_cycles`]: they are left out
    /// before latencies are attributed, so that latencies and releases only
    /// see what the graph keeps. Runtime dependencies wait, in this check,
    /// for what they waited for in the measured run: the stream tails as
    /// the replay resolves them, on measured times. The search reads the
    /// graph only, so it runs beside [`Self::task_facts`].
    #[inline(never)]
    pub(super) fn cycle_rejections(&self) -> Vec<u64> {
        let raw = &self.raw;
        let times = |t: TaskId| (raw[t.idx()].start, raw[t.idx()].end);
        let tails = StreamTails::new(&self.g, |t| raw[t.idx()].start);
        let g = &self.g;
        let optional = Optional {
            edges: true,
            runtime_deps: true,
            rendezvous: false,
            order_edges_repeat_processors: true,
        };
        let net = GraphNet::new(
            g,
            &[],
            |d| tails.targets(g, d, raw[g.runtime_deps[d].task.idx()].start),
            optional,
            &times,
        )
        .ranked_by_times();
        // The mandatory arcs (processor order, launches from CPU to GPU)
        // cannot form a cycle, so there is always an answer.
        rejected_groups(&net).unwrap_or_default()
    }

    /// Leaves out the dependencies [`Self::cycle_rejections`] rejected.
    #[inline(never)]
    pub(super) fn break_cycles(&mut self, rejected: Vec<u64>) {
        if rejected.is_empty() {
            return;
        }
        let mut drop_edge = vec![false; self.g.edges.len()];
        let mut drop_dep = vec![false; self.g.runtime_deps.len()];
        for grp in rejected {
            let kind = match ungroup(grp) {
                (PHASE_DEPS, d) => {
                    drop_dep[d] = true;
                    DepKind::Sync
                }
                (_, i) => {
                    drop_edge[i] = true;
                    self.g.edges[i].kind
                }
            };
            *self.report.rejected_cycles.entry(kind).or_insert(0) += 1;
        }
        for (d, dep) in self.g.runtime_deps.iter().enumerate() {
            if drop_dep[d] {
                // No longer blocking: the call runs for its measured span.
                let w = dep.task.idx();
                self.blocking.remove(&dep.task);
                self.g.tasks[w].duration_ns = self.raw[w].end.saturating_sub(self.raw[w].start);
            }
        }
        self.report.forget_dropped(&drop_edge, &drop_dep);
        let mut d = 0;
        self.g.runtime_deps.retain(|_| {
            d += 1;
            !drop_dep[d - 1]
        });
        let mut e = 0;
        self.g.edges.retain(|_| {
            e += 1;
            !drop_edge[e - 1]
        });
    }

    /// Gap attribution (see the module docs), in passes over the edges in
    /// index order instead of over each task's list of incoming edges:
    /// the ready time of every edge is read once, and the binding edge of
    /// each task is the first of its latest-ready edges, as before.
    #[inline(never)]
    pub(super) fn attribute_latencies(&mut self) {
        let n = self.g.tasks.len();
        // The measured ready time an edge imposes (zero latency), read
        // from the raw spans each time rather than kept per edge: at the
        // build's memory peak an array of them is 8 bytes an edge (tens
        // of MB on a 1 GB trace).
        let raw = &self.raw;
        let ready = |e: &Edge| match e.anchor {
            Anchor::End => raw[e.from.idx()].end,
            Anchor::Start => raw[e.from.idx()].start,
        };
        // Per task: its latest ready time and the first edge that has it,
        // as two arrays (12 bytes a task, where pairs pad to 16).
        let mut latest_at: Vec<i64> = vec![i64::MIN; n];
        let mut latest_edge: Vec<u32> = vec![NO_EDGE; n];
        for (i, e) in self.g.edges.iter().enumerate() {
            let (t, r) = (e.to.idx(), ready(e));
            if latest_edge[t] == NO_EDGE || r > latest_at[t] {
                latest_at[t] = r;
                latest_edge[t] = i as u32;
            }
        }
        // A blocking task's latest edge binds it too, however late the
        // work it awaits ended: that work holds the call's end, while its
        // start is when the host issued it, so the gap before it is host
        // work that a faster GPU does not shorten.
        // Typical latencies of the kinds that have one, from tasks where
        // that kind binds; every other kind's is zero.
        let (mut launch, mut stream) = (Vec::new(), Vec::new());
        for (t, (&at, &e)) in latest_at.iter().zip(&latest_edge).enumerate() {
            if e == NO_EDGE {
                continue;
            }
            let gap = raw[t].start.saturating_sub(at);
            // A task that started before its binding edge was ready is
            // clock skew (a kernel before its launch call), not a latency:
            // a negative median would let replayed kernels run ahead of
            // their launches, so such samples are left out.
            if gap < 0 {
                continue;
            }
            match self.g.edges[e as usize].kind {
                DepKind::Launch => launch.push(gap),
                DepKind::IntraStream => stream.push(gap),
                _ => {}
            }
        }
        let (launch, stream) = (median(launch), median(stream));
        let typ = |kind: DepKind| match kind {
            DepKind::Launch => launch,
            DepKind::IntraStream => stream,
            _ => 0,
        };
        self.report.typical_launch_latency_ns = launch;
        self.report.typical_stream_gap_ns = stream;
        drop(latest_at);
        // Each edge's latency on its own: on every core.
        (self.g.edges.par_iter_mut().enumerate())
            .with_min_len(PAR_MIN)
            .for_each(|(i, edge)| {
                let t = edge.to.idx();
                let slack = raw[t].start.saturating_sub(ready(edge)).max(0);
                edge.latency_ns = if latest_edge[t] == i as u32 {
                    slack
                } else {
                    typ(edge.kind).min(slack)
                };
            });
    }

    /// Tasks no edge explains get a release offset from the window start,
    /// blocking calls too: the offset is when the host issued the call,
    /// not when its wait ended.
    #[inline(never)]
    pub(super) fn releases(&mut self, origin: i64) {
        let explained = explained_by_edges(self.g.tasks.len(), &self.g.edges);
        for (t, explained) in explained.into_iter().enumerate() {
            if !explained {
                self.g.tasks[t].release_ns = self.raw[t].start.saturating_sub(origin);
                if self.g.tasks[t].kind.is_gpu() {
                    self.report.released_gpu_tasks += 1;
                }
            }
        }
    }

    /// What the last steps read of the finished tasks, their processors
    /// and launches, and of no edge: found beside the cycle search
    /// ([`Self::cycle_rejections`]), which reads the edges.
    pub(super) fn task_facts(&self, annotations: &[StepAnnotation], origin: i64) -> TaskFacts {
        let (steps, spans, step_warnings) = self.steps(annotations, origin);
        let (cpu_holes, longest_cpu_hole_ns) = self.cpu_holes();
        TaskFacts {
            steps,
            spans,
            step_warnings,
            cpu_holes,
            longest_cpu_hole_ns,
            stream_order_violations: self.stream_order_violations(),
        }
    }

    /// The steps `annotations` mark, their spans relative to `origin`, and
    /// a warning for each annotation with no CPU work inside or of zero
    /// length (neither is a step), and one counting overlapping ones.
    #[inline(never)]
    fn steps(
        &self,
        annotations: &[StepAnnotation],
        origin: i64,
    ) -> (Vec<Step>, Vec<Span>, Vec<String>) {
        let (mut steps, mut spans, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
        let mut anns: Vec<_> = annotations.to_vec();
        anns.sort_by_key(|a| a.start);
        // A thread's steps run one after another; annotations that overlap
        // on one thread (nested or hand-edited ones) make work count in two
        // steps, which is said. Threads of merged processes may overlap.
        let mut overlapping = 0u64;
        let mut zero_length: Option<(u64, &str)> = None;
        let mut last_end = vec![i64::MIN; self.g.processors.len()];
        for StepAnnotation {
            name,
            proc,
            start: a0,
            end: a1,
        } in anns
        {
            let name = &self.g.names[name.0 as usize];
            // A zero-length annotation marks no iteration: it would hold at
            // most itself (a leaf task) and report a 0 ms step whose 0%
            // error pulled the mean down.
            if a1 <= a0 {
                let (n, _) = zero_length.get_or_insert((0, name.as_str()));
                *n += 1;
                continue;
            }
            let end = &mut last_end[proc.idx()];
            if a0 < *end {
                overlapping += 1;
            }
            *end = (*end).max(a1);
            let on_thread = &self.g.processors[proc.idx()].tasks;
            // A thread's starts and ends never go back (leaves are clipped
            // to one at a time), so the tasks inside the annotation are one
            // run, found by two searches instead of a pass per step.
            let lo = on_thread.partition_point(|&x| self.raw[x.idx()].start < a0);
            let hi = on_thread.partition_point(|&x| self.raw[x.idx()].end <= a1);
            let inside = on_thread.get(lo..hi.max(lo)).unwrap_or_default();
            let (Some(&first), Some(&last)) = (inside.first(), inside.last()) else {
                warnings.push(format!("{name} has no CPU work inside"));
                continue;
            };
            let pid = self.thread_pid[&proc];
            let mut tasks = Vec::new();
            for (pi, p) in self.g.processors.iter().enumerate() {
                if self.thread_pid.get(&ProcId(pi as u32)) != Some(&pid) {
                    continue;
                }
                let lo = p.tasks.partition_point(|&x| self.raw[x.idx()].start < a0);
                let hi = p.tasks.partition_point(|&x| self.raw[x.idx()].start < a1);
                for &x in p.tasks.get(lo..hi.max(lo)).unwrap_or_default() {
                    tasks.push(x);
                    if let Some(gs) = self.launched.get(&x) {
                        tasks.extend(gs.iter().copied());
                    }
                }
            }
            // Distinct ids (each task is on one thread or launched by one
            // call), in runs that interleave: see `sorted_distinct`.
            let tasks = sorted_distinct(&tasks);
            steps.push(Step {
                name: name.clone(),
                first_task: first,
                lead_ns: self.raw[first.idx()].start.saturating_sub(a0),
                last_task: last,
                tail_ns: a1.saturating_sub(self.raw[last.idx()].end),
                tasks,
            });
            spans.push(Span {
                start_ns: a0.saturating_sub(origin),
                end_ns: a1.saturating_sub(origin),
            });
        }
        // Step names tell steps apart (per-step tables, `lumos diff`):
        // two of one name (a hand-edited or merged trace) are said.
        let mut names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        let repeated = names.windows(2).filter(|w| w[0] == w[1]).count() as u64;
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            warnings.push(format!(
                "{} the name of an earlier one (first: {}): the steps are kept, told apart by \
                 their order",
                counted(repeated, "step repeats", "steps repeat"),
                w[0]
            ));
        }
        if let Some((n, first)) = zero_length {
            warnings.push(format!(
                "{} zero length: not a step (first: {first})",
                counted(n, "step annotation has", "step annotations have")
            ));
        }
        if overlapping > 0 {
            warnings.push(format!(
                "{} an earlier one: work inside both counts in each",
                counted(
                    overlapping,
                    "step annotation overlaps",
                    "step annotations overlap"
                )
            ));
        }
        (steps, spans, warnings)
    }

    /// Long windows with no CPU event at all, inside the CPU activity.
    /// The threads' tasks are merged by start time without a copy of them
    /// (16 bytes a CPU task, which at the end of a 1 GB trace's build was
    /// its memory peak): each thread's tasks start in order, so a heap of
    /// one cursor per thread yields them all in start order. How ties are
    /// ordered does not change the holes found.
    /// Returns how many there are and the longest one's length.
    fn cpu_holes(&self) -> (u64, i64) {
        let raw = &self.raw;
        let start = |t: &TaskId| raw[t.idx()].start;
        // Always in order in a built graph; a sorted copy keeps the count
        // right if a step ever breaks that.
        let threads: Vec<Cow<[TaskId]>> = (self.g.processors.iter())
            .filter(|p| !p.is_stream())
            .map(|p| {
                if p.tasks.is_sorted_by_key(start) {
                    Cow::Borrowed(&p.tasks[..])
                } else {
                    let mut v = p.tasks.clone();
                    v.sort_by_key(start);
                    Cow::Owned(v)
                }
            })
            .collect();
        let mut next: BinaryHeap<Reverse<(i64, usize, usize)>> = (threads.iter().enumerate())
            .filter_map(|(l, ts)| Some(Reverse((start(ts.first()?), l, 0))))
            .collect();
        let (mut holes, mut longest) = (0, 0);
        let mut reach = i64::MIN;
        while let Some(Reverse((_, l, k))) = next.pop() {
            let x = raw[threads[l][k].idx()];
            if let Some(t) = threads[l].get(k + 1) {
                next.push(Reverse((start(t), l, k + 1)));
            }
            let gap = x.start.saturating_sub(reach);
            if reach != i64::MIN && gap > CPU_HOLE_NS {
                holes += 1;
                longest = gap.max(longest);
            }
            reach = reach.max(x.end);
        }
        (holes, longest)
    }

    /// GPU tasks that run on their stream after one launched later than
    /// them: stream order must follow launch order.
    fn stream_order_violations(&self) -> u64 {
        let mut misordered = 0u64;
        for p in &self.g.processors {
            if !p.is_stream() {
                continue;
            }
            let mut last = i64::MIN;
            for &g in &p.tasks {
                if let Some(c) = self.launcher.get(g.idx()).copied().flatten() {
                    let lt = self.raw[c.idx()].start;
                    if lt < last {
                        misordered += 1;
                    }
                    last = last.max(lt);
                }
            }
        }
        misordered
    }

    /// Signs of dropped events and invariant checks that feed warnings.
    /// Runs after `fill_counts`, so [`BuildReport::flag_reasons`] sees the
    /// task counts and every reason it gives is warned about here.
    /// `facts` are the holes and misordered tasks [`Self::task_facts`]
    /// counted.
    #[inline(never)]
    pub(super) fn checks(&mut self, facts: &TaskFacts) {
        self.launched_early();
        let raw = &self.raw;
        (self.report).set_sync_facts(&self.g, |t| (raw[t.idx()].start, raw[t.idx()].end));
        let r = &mut self.report;
        r.cpu_holes += facts.cpu_holes;
        r.longest_cpu_hole_ns = r.longest_cpu_hole_ns.max(facts.longest_cpu_hole_ns);
        let flag_reasons = r.flag_reasons();
        let missing = r.missing_launch_warning();
        // Without any recorded launch call, missing launches are a capture
        // mode, worth a word only when they flag the trace.
        if let Some(w) = missing.filter(|w| r.correlated_calls > 0 || flag_reasons.contains(w)) {
            r.warnings.push(w);
        }
        r.warnings.extend(r.repeated_correlation_warning());
        r.warnings.extend(r.cpu_hole_warning());
        r.warnings
            .extend(unsized_collectives_warning(&self.g.collectives));
        if self.g.tasks.iter().all(|t| !t.kind.is_gpu()) {
            r.warnings.push("no GPU activity in this trace".into());
        }
        let misordered = facts.stream_order_violations;
        r.stream_order_violations = misordered;
        if misordered > 0 {
            r.warnings.push(format!(
                "{} in a different order than {} launched",
                counted(misordered, "GPU task runs", "GPU tasks run"),
                if misordered == 1 {
                    "it was"
                } else {
                    "they were"
                }
            ));
        }
        // Each such task starts at the previous one's end and is shortened
        // by the overlap: the measured times read from here on are no
        // longer the trace's, which a word must say (kernels stacked on one
        // stream read as a fraction of their GPU time, silently).
        if r.clipped_gpu_overlaps > 0 {
            r.warnings.push(format!(
                "{} ends: moved to start at its end, shortened by the overlap (kernels allowed to \
                 overlap, or a damaged trace?)",
                counted(
                    r.clipped_gpu_overlaps,
                    "GPU task starts before the previous task on its stream",
                    "GPU tasks start before the previous task on their stream"
                )
            ));
        }
        if r.unresolved_waits > 0 {
            r.warnings.push(format!(
                "{} not be resolved to an edge",
                counted(
                    r.unresolved_waits,
                    "stream wait could",
                    "stream waits could"
                )
            ));
        }
        if r.unresolved_syncs > 0 {
            // Such a call waits for nothing in the replay: its measured
            // duration is all it costs.
            let one = r.unresolved_syncs == 1;
            r.warnings.push(format!(
                "{} not be tied to a stream (no `cuda_sync` event named one, the last GPU task \
                 to end during the call, if any, was not the last launched onto its stream, \
                 and no stream its thread launched onto was idle); replayed as {} for nothing",
                counted(
                    r.unresolved_syncs,
                    "stream synchronization could",
                    "stream synchronizations could"
                ),
                if one {
                    "a call that waits"
                } else {
                    "calls that wait"
                }
            ));
        }
        r.warnings.extend(r.rejected_cycle_warning());
        r.warnings.extend(r.launched_early_warning());
        r.warnings.extend(r.launched_late_warning());
        r.warnings.extend(r.returned_early_warning());
    }

    /// Counts the GPU tasks that started before the call that launched
    /// them, and their longest lead, into the report
    /// ([`BuildReport::launched_early`]). A measured run cannot do that, so
    /// the host's and the device's clocks disagree (or the trace was
    /// edited). With them the shortest delay of a GPU task after its
    /// launch ([`BuildReport::shortest_launch_delay_ns`]), which is hours
    /// when the disagreement is the other way round. Read off the
    /// launchers, where a stored graph's reader finds the same from its
    /// launch edges ([`BuildReport::derive_launch_facts`]; a build never
    /// leaves a launch edge out).
    fn launched_early(&mut self) {
        let mut times = LaunchTimes::default();
        for (g, c) in self.launcher.iter().enumerate() {
            if let Some(c) = c {
                times.add(self.raw[c.idx()].start, self.raw[g].start);
            }
        }
        times.set(&mut self.report);
    }
}

/// What [`Builder::task_facts`] finds.
pub(super) struct TaskFacts {
    /// The steps, in start order.
    pub steps: Vec<Step>,
    /// Their measured spans (relative to the window's origin).
    pub spans: Vec<Span>,
    /// One per step annotation with no CPU work inside.
    pub step_warnings: Vec<String>,
    /// Long windows with no CPU event.
    pub cpu_holes: u64,
    /// The longest such window's length.
    pub longest_cpu_hole_ns: i64,
    /// GPU tasks that ran in a different order than they were launched.
    pub stream_order_violations: u64,
}

/// The warning about collectives that record their element count but get
/// no size in bytes: a dtype lumos does not know
/// ([`lumos_trace::dtype_size`]) or none, or elements times its size past
/// 2^64 bytes (a damaged `In msg nelems`). Such a collective is kept
/// without a size, as in a trace that records none, where it was so
/// without a word; each kind is named with its count.
pub(crate) fn unsized_collectives_warning(collectives: &[Collective]) -> Option<String> {
    let mut by_kind: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for c in collectives
        .iter()
        .filter(|c| c.elements.is_some() && c.bytes.is_none())
    {
        *by_kind.entry(&c.name).or_default() += 1;
    }
    let n: u64 = by_kind.values().sum();
    if n == 0 {
        return None;
    }
    const SHOWN: usize = 8;
    let mut kinds: Vec<String> = (by_kind.iter().take(SHOWN))
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if by_kind.len() > SHOWN {
        kinds.push(format!("{} more kinds", by_kind.len() - SHOWN));
    }
    Some(format!(
        "{} an element count but no size in bytes ({}): a dtype lumos does not know, or none, \
         or a size past 2^64 bytes; kept without a size, as in a trace that records none \
         (replays take {} measured duration; predictions infer a size from it over the traced \
         network)",
        counted(n, "collective records", "collectives record"),
        kinds.join(", "),
        if n == 1 { "its" } else { "their" },
    ))
}
