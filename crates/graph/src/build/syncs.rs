//! GPU-to-CPU synchronization: named sync calls, blocking copies, and long
//! calls that return right after GPU work ends.

use rayon::prelude::*;

use super::*;

/// The most waits on a device's streams that device-wide synchronizations
/// (`cudaDeviceSynchronize`) make in one graph, each waiting on every
/// stream of its device: the build's cycle checks list them all, and the
/// replay walks them, so 50,000 syncs on a device of 50,000 streams (a
/// hostile file of 150,000 events) asked for 10 GB and were aborted.
/// Real traces make a few thousand.
pub(crate) const MAX_DEVICE_WAIT_ARCS: u64 = 1 << 24;

impl Builder {
    /// GPU-to-CPU synchronization: named sync calls, blocking copies, and
    /// calls that block without being named so.
    #[inline(never)]
    pub(super) fn syncs(&mut self) {
        // cuda_sync evidence by the call's correlation.
        let mut sync_stream: Vec<(u64, i64)> = Vec::new();
        // Event syncs naming the record call: (stream waited on, record correlation).
        let mut event_evidence: Vec<(u64, (i64, i64, i64))> = Vec::new();
        for r in &self.sync_events {
            if let (Some(c), Some((s, rec))) = (r.correlation, r.waits_on) {
                if s >= 0 && rec >= 0 {
                    event_evidence.push((c, (r.device, s, rec)));
                }
            }
            if let (Some(c), Some(s)) = (r.correlation, r.stream) {
                if s >= 0 {
                    sync_stream.push((c, s));
                }
            }
        }
        let (sync_stream, event_evidence) = (ByCorr::new(sync_stream), ByCorr::new(event_evidence));
        let mut gpu_by_end: Vec<(i64, TaskId)> = (0..self.g.tasks.len())
            .into_par_iter()
            .with_min_len(PAR_MIN)
            .filter(|&i| self.g.tasks[i].kind.is_gpu())
            .map(|i| (self.raw[i].end, TaskId(i as u32)))
            .collect();
        // Collected stream by stream, each already in order of end: a
        // stable sort merges those runs (the keys are distinct).
        gpu_by_end.par_sort();
        // Where the last search ended: a thread's calls end in order, so
        // the next search starts there.
        let mut cursor = 0;
        let mut kinds = PerName::new(self.g.names.len());
        // Streams per device, for the budget of device-wide waits.
        let mut streams_of: FxHashMap<i64, u64> = FxHashMap::default();
        for p in &self.g.processors {
            if let ProcKind::Stream { device, .. } = p.kind {
                *streams_of.entry(device).or_default() += 1;
            }
        }
        // The usual launch per name, found at the first launch long enough
        // to have waited for a queue slot (most traces have few or none).
        let mut typical_launch_ns = None;
        // The deepest queue of each stream with a candidate, found once.
        let mut deepest = FxHashMap::default();
        let (mut device_arcs, mut over_budget) = (0u64, 0u64);
        let n = self.g.tasks.len();
        for i in 0..n {
            let call = TaskId(i as u32);
            if self.g.tasks[i].kind != TaskKind::Runtime {
                continue;
            }
            let r = self.raw[i];
            // The GPU task that ended last before the call returned, if it
            // ended while the call ran.
            let k = partition_from(&gpu_by_end, cursor, |&(end, _)| end <= r.end);
            cursor = k;
            let ended_during = k
                .checked_sub(1)
                .map(|j| gpu_by_end[j])
                .filter(|&(end, _)| end >= r.start);
            let kind = kinds.get(self.g.tasks[i].name, &self.g.names, sync_kind);
            let (target, awaited, rule) = match kind {
                SyncKind::Device => {
                    let device = ended_during
                        .and_then(|(_, g)| self.device_of(self.g.tasks[g.idx()].proc))
                        .or_else(|| {
                            self.nearby_launch_stream(call, false)
                                .and_then(|s| self.device_of(s))
                        })
                        .unwrap_or(0);
                    let arcs = streams_of.get(&device).copied().unwrap_or(0);
                    if device_arcs.saturating_add(arcs) > MAX_DEVICE_WAIT_ARCS {
                        // Past the budget: the GPU work that ended as the
                        // call returned, the one the call waited for last.
                        over_budget += 1;
                        match ended_during {
                            Some((_, g)) => (WaitTarget::Task(g), Some(g), Rule::NamedCall),
                            None => continue,
                        }
                    } else {
                        device_arcs += arcs;
                        (
                            WaitTarget::DeviceTail(device),
                            ended_during.map(|x| x.1),
                            Rule::NamedCall,
                        )
                    }
                }
                SyncKind::Stream => {
                    let corr = self.g.tasks[i].correlation;
                    let evidence = sync_stream.get(&corr).and_then(|&s| {
                        let device = ended_during
                            .and_then(|(_, g)| self.device_of(self.g.tasks[g.idx()].proc))
                            .unwrap_or(0);
                        self.stream_proc(device, s)
                    });
                    let stream = evidence
                        .map(|s| (s, Rule::CudaSyncEvent))
                        .or_else(|| {
                            // The task that ended as the call returned names
                            // the stream only if it was that stream's tail.
                            ended_during
                                .map(|(_, g)| self.g.tasks[g.idx()].proc)
                                .filter(|&s| {
                                    self.last_launched_before(s, r.start)
                                        .is_some_and(|t| self.raw[t.idx()].end <= r.end)
                                })
                                .map(|s| (s, Rule::EndsBeforeReturn))
                        })
                        .or_else(|| {
                            // Nothing ended while the call ran, so it did not
                            // wait: it synchronized a stream that was already
                            // idle. Take the stream this thread launched onto
                            // most recently among the idle ones.
                            self.recent_launch_streams(call)
                                .into_iter()
                                .find(|&s| {
                                    self.last_launched_before(s, r.start)
                                        .is_none_or(|g| self.raw[g.idx()].end <= r.end)
                                })
                                .map(|s| (s, Rule::LaunchSequence))
                        });
                    let Some((s, rule)) = stream else {
                        self.report.unresolved_syncs += 1;
                        continue;
                    };
                    let awaited = self.last_launched_before(s, r.start);
                    (WaitTarget::StreamTail(s), awaited, rule)
                }
                SyncKind::Event => {
                    let corr = self.g.tasks[i].correlation;
                    let recorded = event_evidence.get(&corr).and_then(|&(d, s, rec)| {
                        let sp = self.stream_proc(d, s)?;
                        let rec = *self.call_by_corr.get(&(rec as u64))?;
                        self.last_launched_before(sp, self.raw[rec.idx()].start)
                    });
                    match (recorded, ended_during) {
                        (Some(g), _) => (WaitTarget::Task(g), Some(g), Rule::CudaSyncEvent),
                        (None, Some((_, g))) => {
                            (WaitTarget::Task(g), Some(g), Rule::EndsBeforeReturn)
                        }
                        (None, None) => continue,
                    }
                }
                SyncKind::BlockingCopy | SyncKind::None => {
                    // A synchronous copy waits for the copy it launched; any
                    // other long call that returns right after GPU work ends
                    // is blocked on it (full launch queue, pageable copy).
                    // Only a copy's own launches matter: other calls skip
                    // the look-up (most calls here are kernel launches).
                    let own_copy = match kind {
                        SyncKind::BlockingCopy => self.launched.get(&call).and_then(|own| {
                            own.iter().copied().max_by_key(|g| self.raw[g.idx()].end)
                        }),
                        _ => None,
                    };
                    let blocked = ended_during.filter(|&(end, _)| {
                        r.end.saturating_sub(r.start) >= BLOCKING_MIN_DUR_NS
                            && r.end.saturating_sub(end) <= BLOCKING_WINDOW_NS
                    });
                    match (kind, own_copy, blocked) {
                        (SyncKind::BlockingCopy, Some(g), _) => {
                            (WaitTarget::Task(g), Some(g), Rule::NamedCall)
                        }
                        (_, _, Some((_, g))) if self.polls.contains(&call) => {
                            (WaitTarget::Task(g), Some(g), Rule::PollingLoop)
                        }
                        (_, _, Some((_, g))) => {
                            (WaitTarget::Task(g), Some(g), Rule::LongCallEndsAfterGpu)
                        }
                        (SyncKind::None, _, None) => {
                            match self.queue_slot_awaited(
                                call,
                                &mut typical_launch_ns,
                                &mut deepest,
                            ) {
                                Some(g) => (WaitTarget::Task(g), Some(g), Rule::FullLaunchQueue),
                                None => continue,
                            }
                        }
                        _ => continue,
                    }
                }
            };
            self.add_sync(call, target, awaited, rule);
        }
        if over_budget > 0 {
            self.report.warnings.push(format!(
                "{} past {MAX_DEVICE_WAIT_ARCS} waits on a device's streams in all: each \
                 waits for the GPU work that ended as it returned, not for every stream \
                 (a device of thousands of streams synchronized thousands of times?)",
                crate::report::counted(
                    over_budget,
                    "device-wide synchronization comes",
                    "device-wide synchronizations come"
                )
            ));
        }
    }

    /// The usual duration of the calls that launched GPU work, per call
    /// name (a memset's call takes longer than a kernel's launch): the
    /// first quartile, which stays a launch that did not wait even where
    /// most of a GPU-bound run's launches waited for a full queue.
    fn typical_launch_ns(&self) -> FxHashMap<NameId, i64> {
        let mut d: Vec<(NameId, i64)> = (0..self.g.tasks.len())
            .filter(|&i| self.launched.get(&TaskId(i as u32)).is_some())
            .map(|i| {
                (
                    self.g.tasks[i].name,
                    self.raw[i].end.saturating_sub(self.raw[i].start),
                )
            })
            .collect();
        d.sort_unstable();
        (d.chunk_by(|a, b| a.0 == b.0))
            .map(|run| (run[0].0, run[run.len() / 4].1))
            .collect()
    }

    /// The least a launch call that waited for a queue slot lasts: at
    /// least `QUEUED_LAUNCH_MIN_DUR_NS` and `QUEUED_LAUNCH_TYPICAL_TIMES`
    /// the usual call of its name.
    fn queued_launch_min_ns(&self, call: TaskId, typical: &FxHashMap<NameId, i64>) -> i64 {
        let typical_ns = typical
            .get(&self.g.tasks[call.idx()].name)
            .copied()
            .unwrap_or(0);
        QUEUED_LAUNCH_MIN_DUR_NS.max(typical_ns.saturating_mul(QUEUED_LAUNCH_TYPICAL_TIMES))
    }

    /// The task of its own stream that launch call `call` waited for, if
    /// it waited for a slot in that stream's full launch queue: it lasted
    /// at least [`Self::queued_launch_min_ns`], a task of that stream
    /// ended within `QUEUED_LAUNCH_WINDOW_NS` before it returned (the one
    /// awaited), and the tasks launched before it onto that stream and not
    /// started (those between the awaited one and its own) were at least
    /// `QUEUED_LAUNCH_MIN_PENDING` and nine tenths of the most the stream
    /// ever held (`deepest`, found once per stream). CUDA's launch returns
    /// once the queue takes it, so each such wait lasts one kernel, often
    /// well under `BLOCKING_MIN_DUR_NS`; kept as CPU work, the waits would
    /// stay in a prediction whose GPU no longer holds the CPU back. A
    /// launch slow for another reason that returns as a kernel ends while
    /// its CPU is far ahead is taken for one too: in a replay it changes
    /// nothing, and in a prediction it waits for that kernel instead of
    /// lasting as long.
    fn queue_slot_awaited(
        &self,
        call: TaskId,
        typical: &mut Option<FxHashMap<NameId, i64>>,
        deepest: &mut FxHashMap<ProcId, usize>,
    ) -> Option<TaskId> {
        let r = self.raw[call.idx()];
        let dur = r.end.saturating_sub(r.start);
        if dur < QUEUED_LAUNCH_MIN_DUR_NS {
            return None;
        }
        let typical = typical.get_or_insert_with(|| self.typical_launch_ns());
        if dur < self.queued_launch_min_ns(call, typical) {
            return None;
        }
        let &own = self.launched.get(&call)?.first()?;
        let stream = self.g.tasks[own.idx()].proc;
        let tasks = &self.g.processors[stream.idx()].tasks;
        let at = self.pos[own.idx()] as usize;
        // Its stream's tasks end in order: the last to end before the
        // call returned.
        let ended = tasks[..at].partition_point(|t| self.raw[t.idx()].end <= r.end);
        let g = tasks[ended.checked_sub(1)?];
        let end = self.raw[g.idx()].end;
        if end < r.start || r.end.saturating_sub(end) > QUEUED_LAUNCH_WINDOW_NS {
            return None;
        }
        let pending = at.saturating_sub(ended);
        let most = *deepest
            .entry(stream)
            .or_insert_with(|| self.deepest_queue(stream));
        (pending >= QUEUED_LAUNCH_MIN_PENDING && pending * 10 >= most * 9).then_some(g)
    }

    /// The most tasks `stream` held launched and not ended at one of its
    /// launches (its tasks end in order, so those ended are a prefix).
    fn deepest_queue(&self, stream: ProcId) -> usize {
        let tasks = &self.g.processors[stream.idx()].tasks;
        let launched = self.launched_at(stream);
        let (mut ended, mut most) = (0, 0);
        for (k, &at) in launched.iter().enumerate() {
            // Searched from the last answer: launch times mostly grow.
            ended = partition_from(&tasks[..k], ended, |t| self.raw[t.idx()].end <= at);
            most = most.max(k - ended);
        }
        most
    }

    /// Makes `call` a blocking call. If it waits for GPU work it launched
    /// itself, it is split in two: the issuing part (which launches) and a
    /// waiting part right after it on the thread.
    pub(super) fn add_sync(
        &mut self,
        call: TaskId,
        target: WaitTarget,
        awaited: Option<TaskId>,
        rule: Rule,
    ) {
        let launches_awaited = awaited.is_some_and(|a| self.launcher_of(a) == Some(call));
        let waiter = if launches_awaited {
            self.split_call(call)
        } else {
            call
        };
        self.g.runtime_deps.push(RuntimeDep {
            task: waiter,
            target,
            latency_ns: 0,
            inferred: false,
        });
        if let Some(a) = awaited {
            self.blocking.insert(waiter, a);
            // Intrinsic cost: the part of the call after the awaited work ended.
            let r = self.raw[waiter.idx()];
            let a_end = self.raw[a.idx()].end;
            if a_end > r.start {
                self.g.tasks[waiter.idx()].duration_ns = r
                    .end
                    .saturating_sub(a_end)
                    .clamp(0, r.end.saturating_sub(r.start));
            }
        }
        self.report.record_runtime_dep(rule);
    }

    /// Splits a call into an issuing part of zero length and a waiting part
    /// holding the call's measured span; returns the waiting part.
    pub(super) fn split_call(&mut self, call: TaskId) -> TaskId {
        let proc = self.g.tasks[call.idx()].proc;
        let r = self.raw[call.idx()];
        let wait = TaskId(self.g.tasks.len() as u32);
        let mut task = self.g.tasks[call.idx()].clone();
        task.correlation = 0;
        self.g.tasks.push(task);
        self.raw.push(r);
        self.g.task_scopes.push(self.g.task_scopes[call.idx()]);
        self.launcher.push(None);
        self.g.tasks[call.idx()].duration_ns = 0;
        self.raw[call.idx()].end = r.start;
        let p = self.pos[call.idx()] as usize + 1;
        self.g.processors[proc.idx()].tasks.insert(p, wait);
        self.pos.push(0);
        for (k, &t) in self.g.processors[proc.idx()]
            .tasks
            .iter()
            .enumerate()
            .skip(p)
        {
            self.pos[t.idx()] = k as u32;
        }
        self.report.split_calls += 1;
        wait
    }
}
