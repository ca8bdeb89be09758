//! Building the graph from a trace: tasks, then dependencies (found or
//! inferred), then latencies.
//!
//! Latencies come from *gap attribution*: for each task, the constraint whose
//! measured ready time is latest is the one that held it (its binding
//! dependency); that edge gets the full measured gap, every other incoming
//! edge gets `min(typical latency of its kind, its own measured slack)`. So a
//! replay with unchanged durations reproduces the measured schedule, while a
//! change to any duration moves every start that depends on it.

use lumos_trace::{Category, Ident, Trace};
use rustc_hash::FxHashMap;

use crate::acyclic::{rejected_groups, ungroup, GraphNet, Optional, StreamTails, PHASE_DEPS};
use crate::model::*;
use crate::report::{BuildReport, Rule};

/// A CPU gap at least this long may be a wait for another thread.
const INTER_THREAD_MIN_GAP_NS: i64 = 100_000;
/// How soon after another thread's task ends a waiting task must start: at
/// least this, and more for long gaps (see `wake_window`).
const INTER_THREAD_WINDOW_NS: i64 = 50_000;
/// The most a wake-up after a long wait may take.
const INTER_THREAD_MAX_WINDOW_NS: i64 = 1_000_000;
/// A runtime call at least this long that ends soon after a GPU task ends
/// is taken to have blocked on it (method.md section 8).
const BLOCKING_MIN_DUR_NS: i64 = 100_000;
/// How soon after the awaited GPU task ends a blocked call returns.
const BLOCKING_WINDOW_NS: i64 = 50_000;
/// A GPU task that starts this much later than its launch and stream allow
/// was held by something else (observed-wait inference).
const OBSERVED_WAIT_MIN_NS: i64 = 5_000;
/// Slack for clock rounding when checking an inferred edge against the
/// measured times.
const TIME_TOLERANCE_NS: i64 = 1_000;
/// A CPU-side window this long without any CPU event suggests dropped events.
pub(crate) const CPU_HOLE_NS: i64 = 40_000_000;

/// Builds the execution graph of one trace, with its ground truth and a
/// report of what was found and inferred. Differences of trace times
/// saturate: a trace spanning more than an `i64` of ns (292 years) gets
/// times as late as can be, never wrapped ones.
pub fn build(trace: &Trace) -> (Graph, Measured, BuildReport) {
    Builder::new(trace).run()
}

/// What one task is while building: its measured span (absolute trace ns)
/// and where it came from.
#[derive(Clone, Copy)]
struct Raw {
    start: i64,
    end: i64,
    /// Index of the task's event in `Trace::events`.
    event: u32,
}

struct Builder<'t> {
    trace: &'t Trace,
    g: Graph,
    raw: Vec<Raw>,
    report: BuildReport,
    streams: FxHashMap<(i64, i64), ProcId>,
    /// Runtime call by correlation.
    call_by_corr: FxHashMap<u64, TaskId>,
    /// GPU tasks each runtime call launched.
    launched: FxHashMap<TaskId, Vec<TaskId>>,
    /// The launching call of each GPU task.
    launcher: Vec<Option<TaskId>>,
    /// Position of each task in its processor's list.
    pos: Vec<u32>,
    /// Pid of each CPU thread processor.
    thread_pid: FxHashMap<ProcId, Ident>,
    /// Incoming edges of each task, as indices into g.edges, for attribution.
    incoming: Vec<Vec<u32>>,
    /// Measured span of each scope (absolute trace ns).
    scope_spans: Vec<Span>,
    /// Tasks that stand for a whole `cudaEventQuery` polling loop.
    polls: rustc_hash::FxHashSet<TaskId>,
    /// Runtime deps per blocking task, with the measured awaited task.
    blocking: FxHashMap<TaskId, TaskId>,
}

impl<'t> Builder<'t> {
    fn new(trace: &'t Trace) -> Self {
        Builder {
            trace,
            g: Graph {
                names: trace.strings.clone(),
                ..Graph::default()
            },
            raw: Vec::new(),
            report: BuildReport::default(),
            streams: FxHashMap::default(),
            call_by_corr: FxHashMap::default(),
            launched: FxHashMap::default(),
            launcher: Vec::new(),
            pos: Vec::new(),
            thread_pid: FxHashMap::default(),
            incoming: Vec::new(),
            blocking: FxHashMap::default(),
            scope_spans: Vec::new(),
            polls: Default::default(),
        }
    }

    fn run(mut self) -> (Graph, Measured, BuildReport) {
        let annotations = self.cpu_tasks();
        self.gpu_tasks();
        self.streams = self.streams_lookup();
        self.launches();
        self.collectives();
        self.inter_stream();
        self.syncs();
        self.inter_thread();
        self.order_edges();
        self.break_cycles();
        self.attribute_latencies();
        let origin = self.raw.iter().map(|r| r.start).min().unwrap_or(0);
        let steps = self.steps(&annotations, origin);
        self.releases(origin);
        self.report.fill_counts(&self.g);
        self.checks();
        let rel = |start: i64, end: i64| Span {
            start_ns: start.saturating_sub(origin),
            end_ns: end.saturating_sub(origin),
        };
        let measured = Measured {
            origin_ns: origin,
            tasks: self.raw.iter().map(|r| rel(r.start, r.end)).collect(),
            step_annotations: steps,
            scopes: self
                .scope_spans
                .iter()
                .map(|s| rel(s.start_ns, s.end_ns))
                .collect(),
        };
        (self.g, measured, self.report)
    }

    fn add_task(
        &mut self,
        kind: TaskKind,
        event: usize,
        proc: ProcId,
        start: i64,
        end: i64,
    ) -> TaskId {
        let e = &self.trace.events[event];
        let id = TaskId(self.g.tasks.len() as u32);
        self.g.tasks.push(Task {
            kind,
            name: NameId(e.name.0),
            proc,
            duration_ns: end.saturating_sub(start),
            release_ns: 0,
            collective: None,
            correlation: e.correlation.unwrap_or(0),
        });
        self.raw.push(Raw {
            start,
            end,
            event: event as u32,
        });
        self.pos
            .push(self.g.processors[proc.idx()].tasks.len() as u32);
        self.g.processors[proc.idx()].tasks.push(id);
        self.incoming.push(Vec::new());
        self.g.task_scopes.push(None);
        id
    }

    fn processor(&mut self, kind: ProcKind) -> ProcId {
        let id = ProcId(self.g.processors.len() as u32);
        self.g.processors.push(Processor {
            kind,
            tasks: Vec::new(),
        });
        id
    }

    /// CPU leaves become tasks; annotations are returned for steps. Nesting
    /// policy: only leaves of each thread's call tree are scheduled; time a
    /// parent spends outside its children becomes the gap before the next
    /// leaf, so CPU overhead survives replay.
    fn cpu_tasks(&mut self) -> Vec<(usize, ProcId)> {
        let t = self.trace;
        let mut by_thread: FxHashMap<(Ident, Ident), Vec<usize>> = FxHashMap::default();
        for (i, e) in t.events.iter().enumerate() {
            if matches!(
                e.category,
                Category::CpuOp | Category::UserAnnotation | Category::Runtime | Category::Driver
            ) {
                by_thread.entry((e.pid, e.tid)).or_default().push(i);
            }
        }
        let mut keys: Vec<_> = by_thread.keys().copied().collect();
        keys.sort();
        let mut steps = Vec::new();
        for key in keys {
            let mut idx = by_thread.remove(&key).unwrap();
            // Parents before children: earlier start, then longer, then
            // annotations before ops before runtime calls.
            idx.sort_unstable_by_key(|&i| {
                let e = &t.events[i];
                let rank = match e.category {
                    Category::UserAnnotation => 0,
                    Category::CpuOp => 1,
                    _ => 2,
                };
                (e.ts_ns, std::cmp::Reverse(e.dur_ns), rank, i)
            });
            let mut has_child = vec![false; idx.len()];
            let mut parent: Vec<Option<usize>> = vec![None; idx.len()];
            let mut stack: Vec<usize> = Vec::new();
            for (k, &i) in idx.iter().enumerate() {
                let e = &t.events[i];
                while let Some(&top) = stack.last() {
                    let p = &t.events[idx[top]];
                    // Runtime calls are never parents: a zero-length call at
                    // the same timestamp is a sibling, not a child.
                    let can_parent = !p.category.is_runtime();
                    if can_parent && e.ts_ns < p.end_ns() && e.end_ns() <= p.end_ns() {
                        break;
                    }
                    if can_parent && e.ts_ns < p.end_ns() {
                        self.report.partial_overlaps += 1;
                    }
                    stack.pop();
                }
                if let Some(&top) = stack.last() {
                    has_child[top] = true;
                    parent[k] = Some(top);
                }
                stack.push(k);
            }
            let proc = self.processor(ProcKind::Thread {
                pid: ident_num(key.0),
                tid: ident_num(key.1),
            });
            self.thread_pid.insert(proc, key.0);
            let (poll_end, absorbed) = polling_runs(t, &idx, &has_child, &parent);
            let mut last_end = i64::MIN;
            let mut scope_of: Vec<Option<ScopeId>> = vec![None; idx.len()];
            for (k, &i) in idx.iter().enumerate() {
                if absorbed[k] {
                    continue;
                }
                let e = &t.events[i];
                let name = t.name(e);
                // Legacy traces record steps as `Operator` events.
                if name.starts_with("ProfilerStep#") && !e.category.is_runtime() {
                    steps.push((i, proc));
                }
                let enclosing = parent[k].and_then(|p| scope_of[p]);
                if has_child[k] {
                    // Parents come before their children in this order, so
                    // the enclosing scope already exists.
                    scope_of[k] = Some(ScopeId(self.g.scopes.len() as u32));
                    let extra = e.extra.as_deref();
                    self.g.scopes.push(Scope {
                        name: NameId(e.name.0),
                        parent: enclosing,
                        annotation: e.category == Category::UserAnnotation,
                        input_dims: extra.and_then(|x| x.input_dims.clone()),
                        input_type: extra.and_then(|x| x.input_type.clone()),
                    });
                    self.scope_spans.push(Span {
                        start_ns: e.ts_ns,
                        end_ns: e.end_ns(),
                    });
                    continue;
                }
                let kind = match e.category {
                    Category::CpuOp => TaskKind::CpuOp,
                    Category::UserAnnotation => TaskKind::Annotation,
                    _ => TaskKind::Runtime,
                };
                // Leaves that overlap a previous leaf (clock noise) are
                // clipped so the thread runs one thing at a time.
                let start = e.ts_ns.max(last_end);
                let end = poll_end[k].unwrap_or(e.end_ns()).max(start);
                last_end = end;
                let id = self.add_task(kind, i, proc, start, end);
                self.g.task_scopes[id.idx()] = enclosing;
                if poll_end[k].is_some() {
                    self.polls.insert(id);
                    self.report.polling_loops += 1;
                }
                if kind == TaskKind::Runtime {
                    if let Some(c) = e.correlation {
                        self.report.correlated_calls += 1;
                        if self.call_by_corr.insert(c, id).is_some() {
                            self.report.repeated_correlations += 1;
                        }
                    }
                }
            }
            if self.g.processors[proc.idx()].tasks.is_empty() {
                self.g.processors.pop();
            }
        }
        steps
    }

    fn gpu_tasks(&mut self) {
        let t = self.trace;
        let mut by_stream: FxHashMap<(i64, i64), Vec<usize>> = FxHashMap::default();
        for (i, e) in t.events.iter().enumerate() {
            if e.category.is_gpu_work() {
                let device = e.device.unwrap_or(ident_num(e.pid));
                let stream = e.stream.or_else(|| stream_from_tid(t, e.tid)).unwrap_or(0);
                by_stream.entry((device, stream)).or_default().push(i);
            }
        }
        let mut keys: Vec<_> = by_stream.keys().copied().collect();
        keys.sort();
        for key in keys {
            let mut idx = by_stream.remove(&key).unwrap();
            idx.sort_unstable_by_key(|&i| (t.events[i].ts_ns, t.events[i].correlation, i));
            let proc = self.processor(ProcKind::Stream {
                device: key.0,
                stream: key.1,
            });
            let mut last_end = i64::MIN;
            for &i in &idx {
                let e = &t.events[i];
                let kind = match e.category {
                    Category::Kernel => TaskKind::Kernel,
                    Category::Memcpy => TaskKind::Memcpy,
                    _ => TaskKind::Memset,
                };
                let start = e.ts_ns.max(last_end);
                if start > e.ts_ns {
                    self.report.clipped_gpu_overlaps += 1;
                }
                let end = e.end_ns().max(start);
                last_end = end;
                self.add_task(kind, i, proc, start, end);
            }
        }
    }

    fn launches(&mut self) {
        self.launcher = vec![None; self.g.tasks.len()];
        for id in 0..self.g.tasks.len() {
            let tid = TaskId(id as u32);
            let task = &self.g.tasks[id];
            if !task.kind.is_gpu() {
                continue;
            }
            if task.correlation == 0 {
                self.report.gpu_without_launch += 1;
                continue;
            }
            match self.call_by_corr.get(&task.correlation) {
                Some(&call) => {
                    self.g.task_scopes[id] = self.g.task_scopes[call.idx()];
                    self.launcher[id] = Some(call);
                    self.launched.entry(call).or_default().push(tid);
                    self.edge(call, tid, DepKind::Launch, Anchor::Start);
                }
                None => self.report.gpu_without_launch += 1,
            }
        }
    }

    /// Communication tasks: `Collective name` on the GPU task, else on the
    /// CPU op it was launched under (same `External id`), else a name
    /// pattern.
    fn collectives(&mut self) {
        let t = self.trace;
        let mut by_ext: FxHashMap<u64, &lumos_trace::CollectiveArgs> = FxHashMap::default();
        for e in &t.events {
            if e.category == Category::CpuOp {
                if let (Some(x), Some(c)) = (
                    e.external_id,
                    e.extra.as_ref().and_then(|x| x.collective.as_ref()),
                ) {
                    by_ext.entry(x).or_insert(c);
                }
            }
        }
        for id in 0..self.g.tasks.len() {
            let task = &self.g.tasks[id];
            if !task.kind.is_gpu() {
                continue;
            }
            let name = &self.g.names[task.name.0 as usize];
            let e = &t.events[self.raw[id].event as usize];
            let own = e.extra.as_ref().and_then(|x| x.collective.as_ref());
            let via_op = e.external_id.and_then(|x| by_ext.get(&x).copied());
            let args = own.filter(|c| c.name.is_some()).or(via_op);
            let by_name = is_comm_kernel_name(name);
            let coll = match args {
                Some(a) if by_name || own.is_some() => Collective {
                    name: a.name.clone().unwrap_or_else(|| comm_family(name)),
                    process_group: a.pg_name.clone(),
                    seq: a.seq,
                    bytes: a.bytes(),
                    group_size: a.group_size,
                },
                _ if by_name => Collective {
                    name: comm_family(name),
                    process_group: None,
                    seq: None,
                    bytes: None,
                    group_size: None,
                },
                _ => continue,
            };
            if args.is_some() {
                self.report.comm_by_args += 1;
            } else {
                self.report.comm_by_name += 1;
            }
            self.g.tasks[id].collective = Some(self.g.collectives.len() as u32);
            self.g.collectives.push(coll);
        }
    }

    /// The launch time of a GPU task: its call's start, or its own start
    /// when no call was recorded.
    /// The call that launched a GPU task, if recorded.
    fn launcher_of(&self, g: TaskId) -> Option<TaskId> {
        self.launcher.get(g.idx()).copied().flatten()
    }

    fn launch_time(&self, g: TaskId) -> i64 {
        match self.launcher_of(g) {
            Some(c) => self.raw[c.idx()].start,
            None => self.raw[g.idx()].start,
        }
    }

    /// Last GPU task on `stream` launched before `time`.
    fn last_launched_before(&self, stream: ProcId, time: i64) -> Option<TaskId> {
        let tasks = &self.g.processors[stream.idx()].tasks;
        let n = tasks.partition_point(|&g| self.launch_time(g) < time);
        n.checked_sub(1).map(|i| tasks[i])
    }

    /// First GPU task on `stream` launched after `time`.
    fn first_launched_after(&self, stream: ProcId, time: i64) -> Option<TaskId> {
        let tasks = &self.g.processors[stream.idx()].tasks;
        let n = tasks.partition_point(|&g| self.launch_time(g) <= time);
        tasks.get(n).copied()
    }

    /// The stream of the nearest launch by the same thread after (or before)
    /// the call at `call`.
    fn nearby_launch_stream(&self, call: TaskId, forward: bool) -> Option<ProcId> {
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
    fn recent_launch_streams(&self, call: TaskId) -> Vec<ProcId> {
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

    fn stream_proc(&self, device: i64, stream: i64) -> Option<ProcId> {
        self.streams.get(&(device, stream)).copied()
    }

    fn streams_lookup(&self) -> FxHashMap<(i64, i64), ProcId> {
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

    fn device_of(&self, proc: ProcId) -> Option<i64> {
        match self.g.processors[proc.idx()].kind {
            ProcKind::Stream { device, .. } => Some(device),
            _ => None,
        }
    }

    /// Inter-stream edges: from `cuda_sync` "Stream Wait Event" where
    /// recorded, else inferred from the launch sequence, else from observed
    /// waiting.
    fn inter_stream(&mut self) {
        let t = self.trace;
        let mut evidence: FxHashMap<u64, (i64, i64)> = FxHashMap::default();
        // The stream a cuda_sync event acted on, by the call's correlation.
        let mut sync_streams: FxHashMap<u64, (i64, i64)> = FxHashMap::default();
        for e in &t.events {
            if let (Category::CudaSync, Some(c), Some(s)) = (e.category, e.correlation, e.stream) {
                if s >= 0 {
                    sync_streams.insert(c, (e.device.unwrap_or(ident_num(e.pid)), s));
                }
            }
            if e.category == Category::CudaSync && t.name(e) == "Stream Wait Event" {
                if let (Some(c), Some(x)) = (e.correlation, e.extra.as_ref()) {
                    if let (Some(s), Some(r)) =
                        (x.wait_on_stream, x.wait_on_event_record_correlation)
                    {
                        if s >= 0 && r >= 0 {
                            evidence.insert(c, (s, r));
                        }
                    }
                }
            }
            if e.category == Category::CudaSync {
                self.report.cuda_sync_events += 1;
            }
        }
        if self.report.cuda_sync_events == 0 {
            self.report
                .warnings
                .push("no cuda_sync events: inter-stream and sync edges inferred".into());
        }
        let waits: Vec<TaskId> = (0..self.g.tasks.len())
            .map(|i| TaskId(i as u32))
            .filter(|&c| {
                self.g.tasks[c.idx()].kind == TaskKind::Runtime && is_stream_wait(self.g.name(c))
            })
            .collect();
        for w in waits {
            let wait_start = self.raw[w.idx()].start;
            let corr = self.g.tasks[w.idx()].correlation;
            // Target: first task launched onto the waiting stream after the call.
            let evidence_here = evidence.get(&corr).copied();
            let wait_stream = sync_streams
                .get(&corr)
                .and_then(|&(d, s)| self.stream_proc(d, s))
                .or_else(|| self.nearby_launch_stream(w, true));
            let Some(ws) = wait_stream else {
                self.report.unresolved_waits += 1;
                continue;
            };
            let Some(target) = self.first_launched_after(ws, wait_start) else {
                self.report.unresolved_waits += 1;
                continue;
            };
            let device = self.device_of(ws).unwrap_or(0);
            // Source, best rule first.
            let mut found = None;
            if let Some((s, rec_corr)) = evidence_here {
                if let (Some(sp), Some(&rec)) = (
                    self.stream_proc(device, s),
                    self.call_by_corr.get(&(rec_corr as u64)),
                ) {
                    found = self
                        .last_launched_before(sp, self.raw[rec.idx()].start)
                        .map(|src| (src, Rule::CudaSyncEvent));
                }
            }
            if found.is_none() {
                found = self.record_source(w, ws).map(|s| (s, Rule::LaunchSequence));
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
                    self.report.rejected_waits += 1;
                }
                Some((src, rule)) if self.g.tasks[src.idx()].proc != ws => {
                    self.found_edge(src, target, DepKind::InterStream, rule);
                }
                Some(_) => self.report.same_stream_waits += 1,
                None => self.report.unresolved_waits += 1,
            }
        }
    }

    /// Launch-sequence rule: the latest `cudaEventRecord` on the wait's
    /// thread before it; its stream is the stream of the launch before it.
    fn record_source(&self, w: TaskId, wait_stream: ProcId) -> Option<TaskId> {
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
    fn observed_wait_source(&self, target: TaskId) -> Option<TaskId> {
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
    fn latest_other_stream_launch(&self, ws: ProcId, device: i64, time: i64) -> Option<TaskId> {
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

    /// GPU-to-CPU synchronization: named sync calls, blocking copies, and
    /// calls that block without being named so.
    fn syncs(&mut self) {
        let t = self.trace;
        // cuda_sync evidence by the call's correlation.
        let mut sync_stream: FxHashMap<u64, i64> = FxHashMap::default();
        // Event syncs naming the record call: (stream waited on, record correlation).
        let mut event_evidence: FxHashMap<u64, (i64, i64, i64)> = FxHashMap::default();
        for e in &t.events {
            if e.category == Category::CudaSync {
                if let (Some(c), Some(x)) = (e.correlation, e.extra.as_ref()) {
                    if let (Some(s), Some(r)) =
                        (x.wait_on_stream, x.wait_on_event_record_correlation)
                    {
                        if s >= 0 && r >= 0 {
                            let d = e.device.unwrap_or(ident_num(e.pid));
                            event_evidence.insert(c, (d, s, r));
                        }
                    }
                }
                if let (Some(c), Some(s)) = (e.correlation, e.stream) {
                    if s >= 0 {
                        sync_stream.insert(c, s);
                    }
                }
            }
        }
        let mut gpu_by_end: Vec<(i64, TaskId)> = (0..self.g.tasks.len())
            .filter(|&i| self.g.tasks[i].kind.is_gpu())
            .map(|i| (self.raw[i].end, TaskId(i as u32)))
            .collect();
        gpu_by_end.sort_unstable();
        let n = self.g.tasks.len();
        for i in 0..n {
            let call = TaskId(i as u32);
            if self.g.tasks[i].kind != TaskKind::Runtime {
                continue;
            }
            let name = self.g.name(call).to_owned();
            let r = self.raw[i];
            // The GPU task that ended last before the call returned, if it
            // ended while the call ran.
            let k = gpu_by_end.partition_point(|&(end, _)| end <= r.end);
            let ended_during = k
                .checked_sub(1)
                .map(|j| gpu_by_end[j])
                .filter(|&(end, _)| end >= r.start);
            let own = self.launched.get(&call).cloned().unwrap_or_default();
            let kind = sync_kind(&name);
            let (target, awaited, rule) = match kind {
                SyncKind::Device => {
                    let device = ended_during
                        .and_then(|(_, g)| self.device_of(self.g.tasks[g.idx()].proc))
                        .or_else(|| {
                            self.nearby_launch_stream(call, false)
                                .and_then(|s| self.device_of(s))
                        })
                        .unwrap_or(0);
                    (
                        WaitTarget::DeviceTail(device),
                        ended_during.map(|x| x.1),
                        Rule::NamedCall,
                    )
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
                    let own_copy = own.iter().copied().max_by_key(|g| self.raw[g.idx()].end);
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
                        _ => continue,
                    }
                }
            };
            self.add_sync(call, target, awaited, rule);
        }
    }

    /// Makes `call` a blocking call. If it waits for GPU work it launched
    /// itself, it is split in two: the issuing part (which launches) and a
    /// waiting part right after it on the thread.
    fn add_sync(&mut self, call: TaskId, target: WaitTarget, awaited: Option<TaskId>, rule: Rule) {
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
    fn split_call(&mut self, call: TaskId) -> TaskId {
        let proc = self.g.tasks[call.idx()].proc;
        let r = self.raw[call.idx()];
        let wait = TaskId(self.g.tasks.len() as u32);
        let mut task = self.g.tasks[call.idx()].clone();
        task.correlation = 0;
        self.g.tasks.push(task);
        self.raw.push(r);
        self.incoming.push(Vec::new());
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

    /// Inter-thread edges: a long gap on a thread that ends right after a
    /// task on another thread of the same process ends.
    fn inter_thread(&mut self) {
        let mut by_pid: FxHashMap<Ident, Vec<(i64, TaskId)>> = FxHashMap::default();
        for (i, p) in self.g.processors.iter().enumerate() {
            if let Some(&pid) = self.thread_pid.get(&ProcId(i as u32)) {
                let v = by_pid.entry(pid).or_default();
                v.extend(p.tasks.iter().map(|&t| (self.raw[t.idx()].end, t)));
            }
        }
        for v in by_pid.values_mut() {
            v.sort_unstable();
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

    /// Program order on threads and streams as explicit edges.
    fn order_edges(&mut self) {
        for p in 0..self.g.processors.len() {
            let kind = if self.g.processors[p].is_stream() {
                DepKind::IntraStream
            } else {
                DepKind::IntraThread
            };
            let tasks = self.g.processors[p].tasks.clone();
            for w in tasks.windows(2) {
                self.edge(w[0], w[1], kind, Anchor::End);
            }
        }
    }

    /// Leaves out every found or inferred dependency that would close a
    /// cycle (see `acyclic`), before latencies are attributed, so that they
    /// and the releases only see what the graph keeps. Runtime dependencies
    /// wait, in this check, for what they waited for in the measured run:
    /// the stream tails as the replay resolves them, on measured times.
    fn break_cycles(&mut self) {
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
        );
        // The mandatory arcs (processor order, launches from CPU to GPU)
        // cannot form a cycle, so there is always an answer.
        let rejected = rejected_groups(&net).unwrap_or_default();
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
        for list in &mut self.incoming {
            list.clear();
        }
        for (i, e) in self.g.edges.iter().enumerate() {
            self.incoming[e.to.idx()].push(i as u32);
        }
    }

    fn edge(&mut self, from: TaskId, to: TaskId, kind: DepKind, anchor: Anchor) {
        self.incoming[to.idx()].push(self.g.edges.len() as u32);
        self.g.edges.push(Edge {
            from,
            to,
            kind,
            anchor,
            latency_ns: 0,
        });
    }

    /// An end-anchored edge that had to be found, recorded with its rule.
    fn found_edge(&mut self, from: TaskId, to: TaskId, kind: DepKind, rule: Rule) {
        self.edge(from, to, kind, Anchor::End);
        self.report.record_edge(self.g.edges.len() - 1, kind, rule);
    }

    /// Measured ready time an edge imposes, with zero latency.
    fn ready(&self, e: &Edge) -> i64 {
        match e.anchor {
            Anchor::End => self.raw[e.from.idx()].end,
            Anchor::Start => self.raw[e.from.idx()].start,
        }
    }

    /// Gap attribution (see the module docs).
    fn attribute_latencies(&mut self) {
        // Typical latencies per kind, from tasks where that kind binds.
        let mut samples: FxHashMap<DepKind, Vec<i64>> = FxHashMap::default();
        let binding: Vec<Option<u32>> = (0..self.g.tasks.len())
            .map(|t| {
                let b = self.binding_edge(t);
                if let Some(e) = b {
                    let e = &self.g.edges[e as usize];
                    samples
                        .entry(e.kind)
                        .or_default()
                        .push(self.raw[t].start.saturating_sub(self.ready(e)));
                }
                b
            })
            .collect();
        let typical = |kind: DepKind| -> i64 {
            match kind {
                DepKind::Launch | DepKind::IntraStream => {
                    samples.get(&kind).map(|v| median(v.clone())).unwrap_or(0)
                }
                _ => 0,
            }
        };
        let typ: FxHashMap<DepKind, i64> = DepKind::ALL.iter().map(|&k| (k, typical(k))).collect();
        self.report.typical_launch_latency_ns = typ[&DepKind::Launch];
        self.report.typical_stream_gap_ns = typ[&DepKind::IntraStream];
        for (t, b) in binding.iter().enumerate() {
            let start = self.raw[t].start;
            for &e in &self.incoming[t] {
                let edge = self.g.edges[e as usize];
                let slack = start.saturating_sub(self.ready(&edge)).max(0);
                self.g.edges[e as usize].latency_ns = if Some(e) == *b {
                    slack
                } else {
                    typ[&edge.kind].min(slack)
                };
            }
        }
    }

    /// The incoming edge with the latest measured ready time.
    fn binding_edge(&self, t: usize) -> Option<u32> {
        let blocked = self
            .blocking
            .get(&TaskId(t as u32))
            .map(|a| self.raw[a.idx()].end);
        let best = self.incoming[t]
            .iter()
            .copied()
            .max_by_key(|&e| (self.ready(&self.g.edges[e as usize]), std::cmp::Reverse(e)))?;
        match blocked {
            Some(b) if b >= self.ready(&self.g.edges[best as usize]) => None,
            _ => Some(best),
        }
    }

    /// Tasks no edge explains get a release offset from the window start.
    fn releases(&mut self, origin: i64) {
        for t in 0..self.g.tasks.len() {
            if self.incoming[t].is_empty() && !self.blocking.contains_key(&TaskId(t as u32)) {
                self.g.tasks[t].release_ns = self.raw[t].start.saturating_sub(origin);
                if self.g.tasks[t].kind.is_gpu() {
                    self.report.released_gpu_tasks += 1;
                }
            }
        }
    }

    fn steps(&mut self, annotations: &[(usize, ProcId)], origin: i64) -> Vec<Span> {
        let t = self.trace;
        let mut spans = Vec::new();
        let mut anns: Vec<_> = annotations.to_vec();
        anns.sort_by_key(|&(i, _)| t.events[i].ts_ns);
        for (i, proc) in anns {
            let e = &t.events[i];
            let (a0, a1) = (e.ts_ns, e.end_ns());
            let on_thread = &self.g.processors[proc.idx()].tasks;
            let inside: Vec<TaskId> = on_thread
                .iter()
                .copied()
                .filter(|&x| self.raw[x.idx()].start >= a0 && self.raw[x.idx()].end <= a1)
                .collect();
            let (Some(&first), Some(&last)) = (inside.first(), inside.last()) else {
                self.report
                    .warnings
                    .push(format!("{} has no CPU work inside", t.name(e)));
                continue;
            };
            let pid = self.thread_pid[&proc];
            let mut tasks = Vec::new();
            for (pi, p) in self.g.processors.iter().enumerate() {
                if self.thread_pid.get(&ProcId(pi as u32)) != Some(&pid) {
                    continue;
                }
                for &x in &p.tasks {
                    let r = self.raw[x.idx()];
                    if r.start >= a0 && r.start < a1 {
                        tasks.push(x);
                        if let Some(gs) = self.launched.get(&x) {
                            tasks.extend(gs.iter().copied());
                        }
                    }
                }
            }
            tasks.sort_unstable();
            self.g.steps.push(Step {
                name: t.name(e).to_owned(),
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
        spans
    }

    /// Long windows with no CPU event at all, inside the CPU activity.
    fn count_cpu_holes(&mut self) {
        let mut cpu: Vec<Raw> = (0..self.g.tasks.len())
            .filter(|&i| !self.g.tasks[i].kind.is_gpu())
            .map(|i| self.raw[i])
            .collect();
        cpu.sort_unstable_by_key(|x| x.start);
        let mut reach = i64::MIN;
        for x in &cpu {
            let gap = x.start.saturating_sub(reach);
            if reach != i64::MIN && gap > CPU_HOLE_NS {
                self.report.cpu_holes += 1;
                self.report.longest_cpu_hole_ns = self.report.longest_cpu_hole_ns.max(gap);
            }
            reach = reach.max(x.end);
        }
    }

    /// Signs of dropped events and invariant checks that feed warnings.
    /// Runs after `fill_counts`, so [`BuildReport::flag_reasons`] sees the
    /// task counts and every reason it gives is warned about here.
    fn checks(&mut self) {
        self.count_cpu_holes();
        let r = &mut self.report;
        let flag_reasons = r.flag_reasons();
        let missing = r.missing_launch_warning();
        // Without any recorded launch call, missing launches are a capture
        // mode, worth a word only when they flag the trace.
        if let Some(w) = missing.filter(|w| r.correlated_calls > 0 || flag_reasons.contains(w)) {
            r.warnings.push(w);
        }
        r.warnings.extend(r.repeated_correlation_warning());
        r.warnings.extend(r.cpu_hole_warning());
        if self.g.tasks.iter().all(|t| !t.kind.is_gpu()) {
            r.warnings.push("no GPU activity in this trace".into());
        }
        // Stream order must follow launch order.
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
        r.stream_order_violations = misordered;
        if misordered > 0 {
            r.warnings.push(format!(
                "{misordered} GPU tasks run in a different order than they were launched"
            ));
        }
        if r.unresolved_waits > 0 {
            r.warnings.push(format!(
                "{} stream waits could not be resolved to an edge",
                r.unresolved_waits
            ));
        }
        r.warnings.extend(r.rejected_cycle_warning());
    }
}

/// Consecutive event queries on a thread, under one parent, that make a
/// host loop waiting for the GPU.
const POLL_MIN_RUN: usize = 8;

/// Finds polling loops among a thread's leaves (`idx` in call-tree order):
/// runs of at least [`POLL_MIN_RUN`] consecutive `cudaEventQuery` calls under
/// one parent. Kept call by call, such a loop is thousands of fixed-length
/// tasks that cannot end sooner when the GPU does (method.md section 3.1);
/// it becomes one task, its first call stretched to the last call's end,
/// which the sync inference then ties to the GPU work it waited for.
/// Returns each run's end at its first call, and which calls it absorbed.
fn polling_runs(
    t: &Trace,
    idx: &[usize],
    has_child: &[bool],
    parent: &[Option<usize>],
) -> (Vec<Option<i64>>, Vec<bool>) {
    let mut end = vec![None; idx.len()];
    let mut absorbed = vec![false; idx.len()];
    let is_query = |k: usize| {
        let e = &t.events[idx[k]];
        e.category.is_runtime() && matches!(t.name(e), "cudaEventQuery" | "hipEventQuery")
    };
    let leaves: Vec<usize> = (0..idx.len()).filter(|&k| !has_child[k]).collect();
    let mut a = 0;
    while a < leaves.len() {
        let mut b = a;
        while b < leaves.len() && is_query(leaves[b]) && parent[leaves[b]] == parent[leaves[a]] {
            b += 1;
        }
        if b - a >= POLL_MIN_RUN {
            let last = &t.events[idx[leaves[b - 1]]];
            end[leaves[a]] = Some(last.end_ns());
            for &k in &leaves[a + 1..b] {
                absorbed[k] = true;
            }
        }
        a = b.max(a + 1);
    }
    (end, absorbed)
}

/// A thread that slept long takes longer to wake (queue hand-off, thread
/// wake-up, allocator work before its first profiled op): allow 2% of the
/// gap, between 50 us and 1 ms.
fn wake_window(gap_ns: i64) -> i64 {
    (gap_ns / 50).clamp(INTER_THREAD_WINDOW_NS, INTER_THREAD_MAX_WINDOW_NS)
}

fn median(mut v: Vec<i64>) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let k = v.len() / 2;
    *v.select_nth_unstable(k).1
}

fn ident_num(i: Ident) -> i64 {
    match i {
        Ident::Num(n) => n,
        // Non-numeric ids get a stable negative stand-in.
        Ident::Name(s) => -(s.0 as i64) - 1,
    }
}

fn stream_from_tid(t: &Trace, tid: Ident) -> Option<i64> {
    match tid {
        Ident::Num(n) => Some(n),
        Ident::Name(s) => t.str(s).strip_prefix("stream ")?.trim().parse().ok(),
    }
}

fn is_stream_wait(name: &str) -> bool {
    matches!(name, "cudaStreamWaitEvent" | "hipStreamWaitEvent")
}

fn is_event_record(name: &str) -> bool {
    name.starts_with("cudaEventRecord") || name.starts_with("hipEventRecord")
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SyncKind {
    None,
    Stream,
    Device,
    Event,
    BlockingCopy,
}

fn sync_kind(name: &str) -> SyncKind {
    match name {
        "cudaStreamSynchronize" | "hipStreamSynchronize" | "cuStreamSynchronize" => {
            SyncKind::Stream
        }
        "cudaDeviceSynchronize" | "hipDeviceSynchronize" | "cuCtxSynchronize" => SyncKind::Device,
        "cudaEventSynchronize" | "hipEventSynchronize" | "cuEventSynchronize" => SyncKind::Event,
        "cudaMemcpy" | "hipMemcpy" | "cudaMemcpy2D" | "hipMemcpy2D" | "cudaMemset"
        | "hipMemset" => SyncKind::BlockingCopy,
        _ => SyncKind::None,
    }
}

/// Kernel names of collective libraries across versions.
pub(crate) fn is_comm_kernel_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("nccl")
        || lower.starts_with("rccl")
        || lower.contains("ncclkernel")
        || lower.contains("nccldevkernel")
        || lower.contains("cross_device_reduce")
        || lower.contains("all_reduce")
        || lower.contains("allreduce")
}

/// `ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)` -> `AllReduce`;
/// `void vllm::cross_device_reduce_1stage<...>(...)` ->
/// `vllm::cross_device_reduce_1stage`.
fn comm_family(name: &str) -> String {
    let cleaned = name
        .trim_start_matches("void ")
        .replace("(anonymous namespace)::", "");
    let base = cleaned.split(['(', '<']).next().unwrap_or(&cleaned).trim();
    let mut parts = base.split('_');
    let first = parts.next().unwrap_or("").to_ascii_lowercase();
    if first.starts_with("nccl") || first.starts_with("rccl") {
        if let Some(p) = parts.next() {
            return p.to_owned();
        }
    }
    base.to_owned()
}
