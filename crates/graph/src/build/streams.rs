//! Inter-stream dependencies: from `cuda_sync` evidence, else inferred from
//! the launch sequence, observed waiting, or the last other stream.

use rayon::prelude::*;

use super::frameworks::FrameworkWait;
use super::*;

impl Builder {
    /// The call that launched a GPU task, if recorded.
    pub(super) fn launcher_of(&self, g: TaskId) -> Option<TaskId> {
        self.launcher.get(g.idx()).copied().flatten()
    }

    /// The launch time of a GPU task: its call's start, or its own start
    /// when no call was recorded.
    pub(super) fn launch_time(&self, g: TaskId) -> i64 {
        match self.launcher_of(g) {
            Some(c) => self.raw[c.idx()].start,
            None => self.raw[g.idx()].start,
        }
    }

    /// The launch time of every task of every stream, in the stream's
    /// order (empty for threads): searched by the two functions below, one
    /// read per probe where `launch_time` takes three dependent ones.
    pub(super) fn stream_launch_times(&self) -> Vec<Vec<i64>> {
        (self.g.processors.par_iter())
            .map(|p| match p.kind {
                ProcKind::Stream { .. } => p.tasks.iter().map(|&g| self.launch_time(g)).collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// Last GPU task on `stream` launched before `time`.
    pub(super) fn last_launched_before(&self, stream: ProcId, time: i64) -> Option<TaskId> {
        let tasks = &self.g.processors[stream.idx()].tasks;
        let n = self.launched_at(stream).partition_point(|&t| t < time);
        n.checked_sub(1).map(|i| tasks[i])
    }

    /// First GPU task on `stream` launched after `time`.
    pub(super) fn first_launched_after(&self, stream: ProcId, time: i64) -> Option<TaskId> {
        let tasks = &self.g.processors[stream.idx()].tasks;
        let n = self.launched_at(stream).partition_point(|&t| t <= time);
        tasks.get(n).copied()
    }

    /// [`Self::first_launched_after`], searched from where the thread's
    /// last search of `stream` ended (`at`): the same answer, without a
    /// binary search's cache misses when successive times are close.
    fn first_launched_after_near(
        &self,
        stream: ProcId,
        time: i64,
        at: &mut Cursors,
    ) -> Option<TaskId> {
        let n = self.launched_while(stream, at, |t| t <= time);
        self.g.processors[stream.idx()].tasks.get(n).copied()
    }

    /// [`Self::last_launched_before`], searched as the one above.
    fn last_launched_before_near(
        &self,
        stream: ProcId,
        time: i64,
        at: &mut Cursors,
    ) -> Option<TaskId> {
        let n = self.launched_while(stream, at, |t| t < time);
        n.checked_sub(1)
            .map(|i| self.g.processors[stream.idx()].tasks[i])
    }

    /// How many of `stream`'s tasks have launch times that `holds` (true
    /// of a prefix of them), searched from `at`'s place for `stream`,
    /// which is left at the answer.
    fn launched_while(
        &self,
        stream: ProcId,
        at: &mut Cursors,
        holds: impl Fn(i64) -> bool,
    ) -> usize {
        let at = at.launches(stream);
        *at = partition_from(self.launched_at(stream), *at, |&t| holds(t));
        *at
    }

    /// The launch times of `stream`'s tasks ([`Self::stream_launch_times`]).
    pub(super) fn launched_at(&self, stream: ProcId) -> &[i64] {
        let times = self
            .launch_times
            .get(stream.idx())
            .map_or(&[][..], Vec::as_slice);
        debug_assert_eq!(times.len(), self.g.processors[stream.idx()].tasks.len());
        times
    }

    /// The stream of the nearest launch by the same thread after (or before)
    /// the call at `call`.
    pub(super) fn nearby_launch_stream(&self, call: TaskId, forward: bool) -> Option<ProcId> {
        let proc = &self.g.processors[self.g.tasks[call.idx()].proc.idx()];
        let p = self.pos[call.idx()] as usize;
        let window = 64;
        let pick = |&t: &TaskId| {
            self.launched
                .get(&t)
                .and_then(|g| g.first())
                .map(|g| self.g.tasks[g.idx()].proc)
        };
        if forward {
            proc.tasks[p + 1..].iter().take(window).find_map(pick)
        } else {
            proc.tasks[..p].iter().rev().take(window).find_map(pick)
        }
    }

    /// The distinct streams this thread launched onto before `call`, most
    /// recent first.
    pub(super) fn recent_launch_streams(&self, call: TaskId) -> Vec<ProcId> {
        let proc = &self.g.processors[self.g.tasks[call.idx()].proc.idx()];
        let p = self.pos[call.idx()] as usize;
        let mut out: Vec<ProcId> = Vec::new();
        for t in proc.tasks[..p].iter().rev().take(4096) {
            if let Some(g) = self.launched.get(t).and_then(|g| g.first()) {
                let s = self.g.tasks[g.idx()].proc;
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    pub(super) fn stream_proc(&self, device: i64, stream: i64) -> Option<ProcId> {
        self.streams.get(&(device, stream)).copied()
    }

    #[inline(never)]
    pub(super) fn streams_lookup(&self) -> FxHashMap<(i64, i64), ProcId> {
        self.g
            .processors
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p.kind {
                ProcKind::Stream { device, stream } => Some(((device, stream), ProcId(i as u32))),
                _ => None,
            })
            .collect()
    }

    pub(super) fn device_of(&self, proc: ProcId) -> Option<i64> {
        match self.g.processors[proc.idx()].kind {
            ProcKind::Stream { device, .. } => Some(device),
            _ => None,
        }
    }

    /// Inter-stream edges: from `cuda_sync` "Stream Wait Event" where
    /// recorded, else inferred from the launch sequence, else from observed
    /// waiting.
    #[inline(never)]
    pub(super) fn inter_stream(&mut self) {
        let mut evidence: Vec<(u64, (i64, i64))> = Vec::new();
        // The stream a cuda_sync event acted on, by the call's correlation.
        let mut sync_streams: Vec<(u64, (i64, i64))> = Vec::new();
        for r in &self.sync_events {
            if let (Some(c), Some(s)) = (r.correlation, r.stream) {
                if s >= 0 {
                    sync_streams.push((c, (r.device, s)));
                }
            }
            if let (true, Some(c), Some((s, rec))) = (r.stream_wait, r.correlation, r.waits_on) {
                if s >= 0 && rec >= 0 {
                    evidence.push((c, (s, rec)));
                }
            }
        }
        self.report.cuda_sync_events += self.sync_events.len() as u64;
        let (evidence, sync_streams) = (ByCorr::new(evidence), ByCorr::new(sync_streams));
        if self.report.cuda_sync_events == 0 {
            self.report
                .warnings
                .push("no cuda_sync events: inter-stream and sync edges inferred".into());
        }
        let mut wait_names = PerName::new(self.g.names.len());
        let waits: Vec<TaskId> = (0..self.g.tasks.len())
            .map(|i| TaskId(i as u32))
            .filter(|&c| {
                let task = &self.g.tasks[c.idx()];
                task.kind == TaskKind::Runtime
                    && wait_names.get(task.name, &self.g.names, is_stream_wait)
            })
            .collect();
        if self.no_stream_evidence(&waits) {
            self.implied_collective_edges();
        }
        let frameworks = self.framework_waits(&waits, &sync_streams);
        let known = WaitEvidence {
            evidence: &evidence,
            sync_streams: &sync_streams,
            frameworks: &frameworks,
        };
        // Each wait is resolved on its own (reads only), on every core: a
        // trace can hold one per collective and per pipeline transfer.
        // In chunks, so that each wait's call is asked for ahead: the
        // calls are far apart in the task arrays (a cache miss each).
        let this = &*self;
        let resolved: Vec<WaitOutcome> = (waits.par_chunks(1024))
            .flat_map_iter(|chunk| {
                let mut at = Cursors::default();
                let known = &known;
                chunk.iter().enumerate().map(move |(k, &w)| {
                    if let Some(ahead) = chunk.get(k + WAITS_AHEAD) {
                        prefetch(&this.raw[ahead.idx()]);
                        prefetch(&this.g.tasks[ahead.idx()]);
                    }
                    this.resolve_wait(w, known, &mut at)
                })
            })
            .collect();
        for outcome in resolved {
            match outcome {
                WaitOutcome::Edge(src, target, rule) => {
                    self.found_edge(src, target, DepKind::InterStream, rule);
                }
                WaitOutcome::Rejected => self.report.rejected_waits += 1,
                WaitOutcome::SameStream => self.report.same_stream_waits += 1,
                WaitOutcome::Unresolved => self.report.unresolved_waits += 1,
                WaitOutcome::Idle => self.report.idle_stream_waits += 1,
            }
        }
    }

    /// What wait call `w` makes its stream wait for: the first task launched
    /// onto the waiting stream after the call waits for a source found by
    /// the best rule that applies.
    /// `at` is the calling thread's place in the evidence's indexes.
    fn resolve_wait(&self, w: TaskId, known: &WaitEvidence, at: &mut Cursors) -> WaitOutcome {
        let wait_start = self.raw[w.idx()].start;
        let corr = self.g.tasks[w.idx()].correlation;
        // Target: first task launched onto the waiting stream after the call.
        let evidence_here = known.evidence.get_from(&corr, &mut at.evidence).copied();
        let framework = known.frameworks.get(&w).copied();
        let synced = known
            .sync_streams
            .get_from(&corr, &mut at.sync_streams)
            .copied();
        // A stream the `cuda_sync` event names but that ran no GPU task in
        // the trace has no processor: it waits for nothing (one-rank DDP's
        // NCCL stream, whose all-reduce launches no kernel).
        if synced.is_some_and(|(d, s)| self.stream_proc(d, s).is_none()) {
            return WaitOutcome::Idle;
        }
        let wait_stream = (synced.and_then(|(d, s)| self.stream_proc(d, s)))
            .or_else(|| framework.map(|f| self.g.tasks[f.target.idx()].proc))
            .or_else(|| self.nearby_launch_stream(w, true));
        let Some(ws) = wait_stream else {
            return WaitOutcome::Unresolved;
        };
        let target = match framework {
            Some(f) => Some(f.target),
            None => self.first_launched_after_near(ws, wait_start, at),
        };
        let Some(target) = target else {
            // A stream a `cuda_sync` event names runs nothing after the
            // call, so nothing waits; a stream found by a launch after the
            // call (at the same instant, so not after it) is a guess.
            return match synced {
                Some(_) => WaitOutcome::Idle,
                None => WaitOutcome::Unresolved,
            };
        };
        let device = self.device_of(ws).unwrap_or(0);
        // Source, best rule first.
        let mut found = None;
        if let Some((s, rec_corr)) = evidence_here {
            let rec = self.call_by_corr.get(&(rec_corr as u64));
            match (self.stream_proc(device, s), rec) {
                // The event was recorded on a stream that ran no GPU task
                // in the trace, or none before the record: it is complete
                // when recorded, and the other rules would only guess at
                // a source the evidence rules out.
                (None, _) => return WaitOutcome::Idle,
                (Some(sp), Some(&rec)) => {
                    found = self
                        .last_launched_before_near(sp, self.raw[rec.idx()].start, at)
                        .map(|src| (src, Rule::CudaSyncEvent));
                    if found.is_none() {
                        return WaitOutcome::Idle;
                    }
                }
                // Without the record call, when it was recorded is unknown.
                (_, None) => {}
            }
        }
        if found.is_none() {
            found = self.record_source(w, ws).map(|s| (s, Rule::LaunchSequence));
        }
        if found.is_none() {
            found = framework.and_then(|f| f.source.map(|s| (s, f.rule)));
        }
        if found.is_none() {
            found = self
                .observed_wait_source(target)
                .map(|s| (s, Rule::ObservedWait));
        }
        if found.is_none() {
            found = self
                .latest_other_stream_launch(ws, device, wait_start)
                .map(|s| (s, Rule::LastOtherStream));
        }
        match found {
            // A real dependency cannot be violated by the measured run: an
            // inferred source that ends after its target starts is wrong.
            Some((src, _))
                if self.raw[src.idx()].end
                    > self.raw[target.idx()]
                        .start
                        .saturating_add(TIME_TOLERANCE_NS) =>
            {
                WaitOutcome::Rejected
            }
            Some((src, rule)) if self.g.tasks[src.idx()].proc != ws => {
                WaitOutcome::Edge(src, target, rule)
            }
            Some(_) => WaitOutcome::SameStream,
            None => WaitOutcome::Unresolved,
        }
    }

    /// Launch-sequence rule: the latest `cudaEventRecord` on the wait's
    /// thread before it; its stream is the stream of the launch before it.
    pub(super) fn record_source(&self, w: TaskId, wait_stream: ProcId) -> Option<TaskId> {
        let proc = &self.g.processors[self.g.tasks[w.idx()].proc.idx()];
        let p = self.pos[w.idx()] as usize;
        let rec = proc.tasks[..p]
            .iter()
            .rev()
            .take(64)
            .find(|&&t| is_event_record(self.g.name(t)))?;
        let s = self.nearby_launch_stream(*rec, false)?;
        if s == wait_stream {
            return None;
        }
        self.last_launched_before(s, self.raw[rec.idx()].start)
    }

    /// Observed-wait rule: the target started clearly later than its launch
    /// and stream allowed; the task on another stream of the device that
    /// ended last before it is the source.
    pub(super) fn observed_wait_source(&self, target: TaskId) -> Option<TaskId> {
        let r = self.raw[target.idx()];
        let proc = self.g.tasks[target.idx()].proc;
        let p = self.pos[target.idx()] as usize;
        let mut ready = self.launch_time(target);
        if p > 0 {
            let prev = self.g.processors[proc.idx()].tasks[p - 1];
            ready = ready.max(self.raw[prev.idx()].end);
        }
        if r.start.saturating_sub(ready) < OBSERVED_WAIT_MIN_NS {
            return None;
        }
        let device = self.device_of(proc)?;
        let mut best: Option<TaskId> = None;
        for (i, sp) in self.g.processors.iter().enumerate() {
            if ProcId(i as u32) == proc
                || !matches!(sp.kind, ProcKind::Stream { device: d, .. } if d == device)
            {
                continue;
            }
            let n = sp
                .tasks
                .partition_point(|&g| self.raw[g.idx()].end <= r.start);
            if let Some(&cand) = n.checked_sub(1).map(|k| &sp.tasks[k]) {
                let end = self.raw[cand.idx()].end;
                if end >= ready && best.is_none_or(|b| end > self.raw[b.idx()].end) {
                    best = Some(cand);
                }
            }
        }
        best
    }

    /// Fallback: the last task launched onto another stream of the device
    /// before the wait call.
    pub(super) fn latest_other_stream_launch(
        &self,
        ws: ProcId,
        device: i64,
        time: i64,
    ) -> Option<TaskId> {
        let mut best: Option<(i64, TaskId)> = None;
        for (i, sp) in self.g.processors.iter().enumerate() {
            let pid = ProcId(i as u32);
            if pid == ws || !matches!(sp.kind, ProcKind::Stream { device: d, .. } if d == device) {
                continue;
            }
            if let Some(t) = self.last_launched_before(pid, time) {
                let lt = self.launch_time(t);
                if best.is_none_or(|(b, _)| lt > b) {
                    best = Some((lt, t));
                }
            }
        }
        best.map(|(_, t)| t)
    }
}

/// How many wait calls ahead [`Builder::inter_stream`] asks for.
const WAITS_AHEAD: usize = 8;

/// What the trace says about wait calls, by the call's correlation or id:
/// what [`Builder::resolve_wait`] reads besides the graph.
struct WaitEvidence<'a> {
    /// `cuda_sync` "Stream Wait Event": the stream and the record call's
    /// correlation.
    evidence: &'a ByCorr<(i64, i64)>,
    /// The stream a `cuda_sync` event acted on.
    sync_streams: &'a ByCorr<(i64, i64)>,
    /// The framework role of the waits no `cuda_sync` event explains.
    frameworks: &'a FxHashMap<TaskId, FrameworkWait>,
}

/// What became of one wait call.
enum WaitOutcome {
    /// An inter-stream edge from the source to the target, by a rule.
    Edge(TaskId, TaskId, Rule),
    /// The source found ended after the target started.
    Rejected,
    /// The source found is on the waiting stream itself.
    SameStream,
    /// No waiting stream, target or source.
    Unresolved,
    /// Satisfied at once: the `cuda_sync` evidence shows that the waiting
    /// stream runs no GPU task after the call, or that the event's stream
    /// ran none before its record.
    Idle,
}

/// Where one thread's last lookups in [`WaitEvidence`]'s indexes and in
/// each stream's launch times ended: successive waits search near the last.
#[derive(Default)]
struct Cursors {
    evidence: usize,
    sync_streams: usize,
    /// By stream (the [`ProcId`]'s index); grown as streams are searched.
    launches: Vec<usize>,
}

impl Cursors {
    /// Where the last search of `stream`'s launch times ended.
    fn launches(&mut self, stream: ProcId) -> &mut usize {
        if self.launches.len() <= stream.idx() {
            self.launches.resize(stream.idx() + 1, 0);
        }
        &mut self.launches[stream.idx()]
    }
}
