//! The events' records by track (the tasks are made from them in
//! `per_track`), launches by correlation, and collectives.

use std::collections::BinaryHeap;

use lumos_trace::{CollectiveArgs, EventExtra};
use rayon::prelude::*;

use crate::report::{counted, is_graph_launch};

use super::*;

/// How a task record holds its event's boxed extra arguments: moved out of
/// the event in an owned build (`Option<Box<EventExtra>>`, so that the event
/// can be freed), borrowed from it otherwise (`Option<&EventExtra>`). Both
/// are one pointer.
pub(super) trait ExtraRef: Default {
    /// The extra arguments, if the event had any.
    fn get(&self) -> Option<&EventExtra>;
}

impl ExtraRef for Option<Box<EventExtra>> {
    fn get(&self) -> Option<&EventExtra> {
        self.as_deref()
    }
}

impl ExtraRef for Option<&EventExtra> {
    fn get(&self) -> Option<&EventExtra> {
        *self
    }
}

/// "No parent" in a call tree's parent positions ([`Builder::call_tree`]).
pub(super) const NO_PARENT: u32 = u32::MAX;

/// "No id" in a record's packed ids, as in the reader's `Event` (which
/// cannot hold `u64::MAX` either).
const NO_ID: u64 = u64::MAX;

fn pack_id(v: Option<u64>) -> u64 {
    v.unwrap_or(NO_ID)
}

pub(super) fn unpack_id(v: u64) -> Option<u64> {
    (v != NO_ID).then_some(v)
}

/// What the CPU-task step reads of a CPU event (op, annotation, runtime or
/// driver call): 40 bytes where the event is 96, made in the one pass over
/// the events so that an owned build frees them before any task is made.
pub(super) struct CpuRecord<X> {
    pub(super) ts: i64,
    pub(super) dur: i64,
    /// Correlation id, [`NO_ID`] when absent; for an op or annotation
    /// without one (every op Kineto writes), its `External id` with
    /// [`OP_ID_TAG`] set: what orders the ops of one start and length
    /// ([`CpuRecord::tie`]). Read through [`CpuRecord::correlation`].
    pub(super) correlation: u64,
    /// The event's boxed extra arguments (`Input Dims` and `Input type`
    /// for the scope an op may become).
    pub(super) extra: X,
    pub(super) name: u32,
    pub(super) category: Category,
}

/// What the GPU-task and collective steps read of a kernel, memcpy or
/// memset: 48 bytes.
pub(super) struct GpuRecord<X> {
    pub(super) ts: i64,
    pub(super) dur: i64,
    /// Correlation id, [`NO_ID`] when absent.
    pub(super) correlation: u64,
    /// `External id`, [`NO_ID`] when absent.
    pub(super) external_id: u64,
    /// The event's boxed extra arguments (its own collective arguments).
    pub(super) extra: X,
    pub(super) name: u32,
    pub(super) category: Category,
}

// A regression in the records' size is memory on every event of a trace.
const _: () = assert!(std::mem::size_of::<CpuRecord<Option<Box<EventExtra>>>>() == 40);
const _: () = assert!(std::mem::size_of::<GpuRecord<Option<Box<EventExtra>>>>() == 48);

/// Marks an op's `External id` in [`CpuRecord::correlation`]: 8 bytes
/// more a record for a field of its own would be memory on every CPU
/// event. An op whose own correlation has this bit set (no exporter
/// writes one; ids count up from 1) is read as having none.
pub(super) const OP_ID_TAG: u64 = 1 << 63;

impl<X> CpuRecord<X> {
    pub(super) fn end(&self) -> i64 {
        self.ts.saturating_add(self.dur)
    }

    /// The correlation id, if any (not an op's `External id`).
    pub(super) fn correlation(&self) -> Option<u64> {
        let op = matches!(self.category, Category::CpuOp | Category::UserAnnotation);
        match unpack_id(self.correlation) {
            Some(id) if op && id & OP_ID_TAG != 0 => None,
            id => id,
        }
    }

    /// What orders records of one start, length and kind, whatever the
    /// file's order: an op's `External id` (Kineto counts it up as ops
    /// start, so a parent's is below its child's: in all 1,720 corpus
    /// pairs of equal start and nonzero length whose names nest strictly
    /// elsewhere, the enclosing op has the lower), a call's
    /// correlation. `None` without one, and for an op that carries a
    /// correlation of its own rather than an `External id` (lumos's
    /// timelines write one on each task): a correlation tells nothing of
    /// which op started first, and compared with a scope's missing id it
    /// made the child the parent. Records of `None` keep their places in
    /// file order (`order_ties`).
    pub(super) fn tie(&self) -> Option<u64> {
        let op = matches!(self.category, Category::CpuOp | Category::UserAnnotation);
        if op && self.correlation & OP_ID_TAG == 0 {
            None
        } else {
            unpack_id(self.correlation)
        }
    }
}

impl<X> GpuRecord<X> {
    pub(super) fn end(&self) -> i64 {
        self.ts.saturating_add(self.dur)
    }
}

/// The events that become tasks, as records by track, from the one pass
/// over the trace's events that every step shares.
pub(super) struct Tracks<X> {
    /// CPU events (ops, annotations, runtime and driver calls) by
    /// (pid, tid), in file order.
    threads: FxHashMap<(Ident, Ident), Vec<CpuRecord<X>>>,
    /// GPU work by (device, stream), in file order.
    streams: FxHashMap<(i64, i64), Vec<GpuRecord<X>>>,
}

impl<X> Tracks<X> {
    /// The threads' and the streams' record lists, each in key order.
    #[allow(clippy::type_complexity)]
    pub(super) fn into_sorted(
        self,
    ) -> (
        Vec<((Ident, Ident), Vec<CpuRecord<X>>)>,
        Vec<((i64, i64), Vec<GpuRecord<X>>)>,
    ) {
        let mut threads: Vec<_> = self.threads.into_iter().collect();
        threads.sort_unstable_by_key(|(k, _)| *k);
        let mut streams: Vec<_> = self.streams.into_iter().collect();
        streams.sort_unstable_by_key(|(k, _)| *k);
        (threads, streams)
    }
}

/// Most threads, and most streams, whose records a build keeps. A trace
/// has tens of each; every track costs about a kilobyte of build state
/// however few its events, so a file that gave each event a thread of its
/// own would take 13 times its size without a bound.
pub const MAX_TRACKS: usize = 1 << 16;
// The build's warning spells it out.
const _: () = assert!(MAX_TRACKS == 65_536);

/// Records grouped by track while the events are read. Consecutive events
/// are mostly on one track, so the last track's list is kept at hand and
/// the map is only hashed into when the track changes.
///
/// At most `limit` tracks are kept: those with the smallest keys, so that
/// which ones does not depend on the order the events are read in (a
/// larger key kept so far gives its place, and its records, to a smaller
/// new one). Once `limit` are kept, the largest kept key only falls, so
/// every key left out is larger than it: no set of them is needed.
pub(super) struct ByTrack<K, R> {
    slot: FxHashMap<K, usize>,
    lists: Vec<(K, Vec<R>)>,
    last: Option<(K, usize)>,
    limit: usize,
    /// The kept keys, largest first out.
    kept: BinaryHeap<K>,
    /// Records of the tracks left out.
    records_left_out: u64,
}

impl<K: Copy + Ord + std::hash::Hash, R> ByTrack<K, R> {
    fn new(limit: usize) -> Self {
        ByTrack {
            slot: FxHashMap::default(),
            lists: Vec::new(),
            last: None,
            limit,
            kept: BinaryHeap::new(),
            records_left_out: 0,
        }
    }

    fn push(&mut self, key: K, r: R) {
        let s = match self.last {
            Some((k, s)) if k == key => s,
            _ => match self.slot.get(&key) {
                Some(&s) => {
                    self.last = Some((key, s));
                    s
                }
                None => match self.new_track(key) {
                    Some(s) => s,
                    None => {
                        self.records_left_out += 1;
                        return;
                    }
                },
            },
        };
        self.lists[s].1.push(r);
    }

    /// The slot of a key not seen before, or of one left out (`None`).
    #[cold]
    #[inline(never)]
    fn new_track(&mut self, key: K) -> Option<usize> {
        let s = if self.lists.len() < self.limit {
            // One slot: most tracks of a trace with very many have one
            // event, and four (the first growth) would be 160 bytes each.
            self.lists.push((key, Vec::with_capacity(1)));
            self.lists.len() - 1
        } else {
            let largest = *self.kept.peek()?;
            if key > largest {
                return None;
            }
            self.kept.pop();
            let s = self.slot.remove(&largest).expect("a kept key has a slot");
            let (_, records) = std::mem::replace(&mut self.lists[s], (key, Vec::with_capacity(1)));
            self.records_left_out += records.len() as u64;
            s
        };
        self.kept.push(key);
        self.slot.insert(key, s);
        self.last = Some((key, s));
        Some(s)
    }

    /// The lists by track; reversed first when the events were read last
    /// to first, so that each list is in file order.
    fn into_map(self, reversed: bool) -> FxHashMap<K, Vec<R>> {
        (self.lists.into_iter())
            .map(|(k, mut v)| {
                if reversed {
                    v.reverse();
                }
                (k, v)
            })
            .collect()
    }

    /// True if `key`'s track was left out (its records with it).
    fn is_left_out(&self, key: &K) -> bool {
        self.lists.len() == self.limit
            && !self.slot.contains_key(key)
            && self.kept.peek().is_some_and(|largest| key > largest)
    }
}

/// The one pass over the events, in either direction (see
/// [`Builder::tracks_owned`]), or as the reader folds them
/// ([`super::TrackSink`]): what every later step reads of the events.
pub(super) struct Sorter<X> {
    threads: ByTrack<(Ident, Ident), CpuRecord<X>>,
    streams: ByTrack<(i64, i64), GpuRecord<X>>,
    /// What the steps read of each `cuda_sync` event, in the order sorted.
    sync_events: Vec<SyncRecord>,
    /// The CPU ops with collective arguments and an `External id`, in the
    /// order sorted.
    collective_ops: Vec<(u64, CollectiveArgs)>,
}

impl<X: ExtraRef> Sorter<X> {
    pub(super) fn new() -> Self {
        Sorter {
            threads: ByTrack::new(MAX_TRACKS),
            streams: ByTrack::new(MAX_TRACKS),
            sync_events: Vec::new(),
            collective_ops: Vec::new(),
        }
    }

    /// Files one event: CPU and GPU work as records by track, and the few
    /// events later steps read (`cuda_sync` events, CPU ops with collective
    /// arguments) into `sync_events` and `collective_ops`, so that no step
    /// reads the events again. `names` are the trace's interned strings,
    /// those of the event's name and tid at least. Gives `extra` back when
    /// the event is not one the build reads.
    pub(super) fn sort(&mut self, e: &Event, extra: X, names: &[String]) -> Result<(), X> {
        match e.category {
            Category::CpuOp | Category::UserAnnotation | Category::Runtime | Category::Driver => {
                // The boxed extra is looked at last: reaching it is a
                // cache miss.
                if e.category == Category::CpuOp {
                    if let Some(x) = e.external_id() {
                        if let Some(c) = extra.get().and_then(|x| x.collective.as_deref()) {
                            self.collective_ops.push((x, c.clone()));
                        }
                    }
                }
                let id = match (e.correlation(), e.category) {
                    (Some(c), _) => c,
                    (None, Category::CpuOp | Category::UserAnnotation) => {
                        e.external_id().map_or(NO_ID, |x| x | OP_ID_TAG)
                    }
                    (None, _) => NO_ID,
                };
                let r = CpuRecord {
                    ts: e.ts_ns,
                    dur: e.dur_ns,
                    correlation: id,
                    extra,
                    name: e.name.0,
                    category: e.category,
                };
                self.threads.push((e.pid, e.tid), r);
            }
            Category::Kernel | Category::Memcpy | Category::Memset => {
                let device = e.device().unwrap_or(ident_num(e.pid));
                let stream = e
                    .stream()
                    .or_else(|| stream_of_tid(names, e.tid))
                    .unwrap_or(0);
                let r = GpuRecord {
                    ts: e.ts_ns,
                    dur: e.dur_ns,
                    correlation: pack_id(e.correlation()),
                    external_id: pack_id(e.external_id()),
                    extra,
                    name: e.name.0,
                    category: e.category,
                };
                self.streams.push((device, stream), r);
            }
            Category::CudaSync => self.sync_events.push(SyncRecord {
                correlation: e.correlation(),
                stream: e.stream(),
                device: e.device().unwrap_or(ident_num(e.pid)),
                stream_wait: names
                    .get(e.name.0 as usize)
                    .is_some_and(|n| n == "Stream Wait Event"),
                waits_on: extra.get().and_then(|x| {
                    Some((x.wait_on_stream()?, x.wait_on_event_record_correlation()?))
                }),
            }),
            _ => return Err(extra),
        }
        Ok(())
    }
}

/// How many events ahead [`prefetch_extras`] looks: enough for a load from
/// memory to finish while the events between are sorted.
const PREFETCH_AHEAD: usize = 16;

/// Starts loading what [`Sorter::sort`] will read behind the events' boxes:
/// the boxed extras of `far` (CPU ops with arguments, kernels, syncs), and
/// the activity arguments of `near`, a sync whose extra the call before
/// started loading. A box is wherever the reader's allocation put it, so
/// each is a cache miss on a large trace; both loops sort in event order,
/// where the addresses are known ahead.
#[inline(always)]
fn prefetch_extras(far: Option<&Event>, near: Option<&Event>) {
    if let Some(x) = far.and_then(|e| e.extra.as_deref()) {
        prefetch(x);
    }
    if let Some(e) = near.filter(|e| e.category == Category::CudaSync) {
        if let Some(a) = e.extra.as_deref().and_then(|x| x.activity.as_deref()) {
            prefetch(a);
        }
    }
}

impl Builder {
    /// Sorts the borrowed events out in one pass: see [`Sorter::sort`].
    #[inline(never)]
    pub(super) fn tracks_borrowed<'e>(
        &mut self,
        events: &'e [Event],
    ) -> Tracks<Option<&'e EventExtra>> {
        let mut s = Sorter::new();
        for (i, e) in events.iter().enumerate() {
            prefetch_extras(
                events.get(i + PREFETCH_AHEAD),
                events.get(i + PREFETCH_AHEAD / 2),
            );
            // Events no step reads are left as they are.
            let _ = s.sort(e, e.extra.as_deref(), &self.g.names);
        }
        self.tracks_done(s, false)
    }

    /// [`Builder::tracks_borrowed`], consuming the events: they are read
    /// last to first, each one's boxed extra moved into its record, and the
    /// vector shrunk as it empties, so that the events and the records are
    /// never both whole in memory (with glibc a large vector shrinks in
    /// place, handing its tail's pages back). The records' lists are then
    /// reversed into file order.
    #[inline(never)]
    pub(super) fn tracks_owned(
        &mut self,
        mut events: Vec<Event>,
    ) -> Tracks<Option<Box<EventExtra>>> {
        let mut s = Sorter::new();
        // Shrinking by an eighth at a time bounds the copying where an
        // allocator moves the vector to shrink it (8 times its size in all).
        let step = |cap: usize| (cap / 8).max(1 << 12);
        let mut shrink_at = events.len().saturating_sub(step(events.len()));
        while let Some(mut e) = events.pop() {
            let n = events.len();
            prefetch_extras(
                n.checked_sub(PREFETCH_AHEAD).map(|k| &events[k]),
                n.checked_sub(PREFETCH_AHEAD / 2).map(|k| &events[k]),
            );
            let extra = e.extra.take();
            // Events no step reads are freed with the rest.
            let _ = s.sort(&e, extra, &self.g.names);
            if events.len() <= shrink_at {
                events.shrink_to_fit();
                shrink_at = events.len().saturating_sub(step(events.len()));
            }
        }
        drop(events);
        self.tracks_done(s, true)
    }

    /// The records by track, and the task vectors reserved for them;
    /// `reversed` when the events were sorted last to first.
    pub(super) fn tracks_done<X>(&mut self, mut s: Sorter<X>, reversed: bool) -> Tracks<X> {
        if reversed {
            s.sync_events.reverse();
            s.collective_ops.reverse();
        }
        // A sync on a stream left out, or waiting on one, would be tied to
        // another stream by the fallback rules: it goes with its stream.
        let syncs = s.sync_events.len();
        let streams = &s.streams;
        s.sync_events.retain(|e| {
            let on = |stream: i64| streams.is_left_out(&(e.device, stream));
            !(e.stream.is_some_and(on) || e.waits_on.is_some_and(|(w, _)| on(w)))
        });
        s.streams.records_left_out += (syncs - s.sync_events.len()) as u64;
        self.sync_events = s.sync_events;
        self.collective_ops = s.collective_ops;
        self.report.events_on_left_out_threads = s.threads.records_left_out;
        self.report.events_on_left_out_streams = s.streams.records_left_out;
        let left_out = [
            ("threads", "pid, then tid", s.threads.records_left_out),
            ("streams", "device, then stream", s.streams.records_left_out),
        ];
        for (what, ids, records) in left_out.into_iter().filter(|l| l.2 > 0) {
            self.report.warnings.push(format!(
                "{} left out with their {what}: a build keeps the 65,536 {what} with the \
                 smallest ids ({ids}), where a trace has tens; what the others launched, \
                 annotated or synchronized is missing, which warnings below may blame on \
                 the profiler",
                counted(records, "event", "events"),
            ));
        }
        let tracks = Tracks {
            threads: s.threads.into_map(reversed),
            streams: s.streams.into_map(reversed),
        };
        // At most one task per event (a few more where calls are split):
        // reserved once instead of grown, which copies them several times.
        let n = (tracks.threads.values().map(Vec::len).sum::<usize>())
            + tracks.streams.values().map(Vec::len).sum::<usize>();
        self.g.tasks.reserve(n);
        self.raw.reserve(n);
        self.pos.reserve(n);
        self.g.task_scopes.reserve(n);
        tracks
    }

    /// Launch edges: each GPU task's call, found by correlation, launches
    /// it and gives it its scope; what later steps read of the launches
    /// (`launcher`, `launched`, `launch_times`) is indexed here.
    #[inline(never)]
    pub(super) fn launches(&mut self) {
        // The look-ups and the scopes read one task at a time: on every
        // core, in task order.
        let (tasks, by_corr) = (&self.g.tasks, &self.call_by_corr);
        self.launcher = (tasks.par_iter().with_min_len(PAR_MIN))
            .map(|t| match t.kind.is_gpu() && t.correlation != 0 {
                true => by_corr.get(&t.correlation).copied(),
                false => None,
            })
            .collect();
        // (call, GPU task) in GPU task order: at most one per GPU task.
        let mut pairs: Vec<(u32, TaskId)> = Vec::new();
        for (id, (task, call)) in tasks.iter().zip(&self.launcher).enumerate() {
            match (task.kind.is_gpu(), call) {
                (true, Some(c)) => pairs.push((c.0, TaskId(id as u32))),
                (true, None) => self.report.gpu_without_launch += 1,
                (false, _) => {}
            }
        }
        // A GPU task runs in its launching call's scope (calls keep theirs).
        let (launcher, scopes) = (&self.launcher, &self.g.task_scopes);
        debug_assert_eq!(scopes.len(), launcher.len(), "a scope per task");
        let own_and_call = (scopes.par_iter().zip(launcher)).with_min_len(PAR_MIN);
        self.g.task_scopes = own_and_call
            .map(|(&own, call)| call.map_or(own, |c| scopes[c.idx()]))
            .collect();
        self.g.edges.par_extend(
            (pairs.par_iter().with_min_len(PAR_MIN))
                .map(|&(call, g)| new_edge(TaskId(call), g, DepKind::Launch, Anchor::Start)),
        );
        self.launched = Launched::new(self.g.tasks.len(), &pairs);
        self.shared_launch_warning();
        self.unlaunched_call_warning();
        // Fixed from here on: later steps split calls, which keeps their
        // start, and add no GPU task.
        self.launch_times = self.stream_launch_times();
    }
}

impl Builder {
    /// One warning counting the calls other than graph launches that
    /// launched several GPU tasks: a kernel launch starts one, so GPU tasks
    /// repeat a correlation id (events merged or ids reused) and all but
    /// one hang off the wrong call, which the build cannot tell apart.
    /// Read off [`Launched`], built just before: no sort of the launches
    /// (a stored graph's reader counts the same from its launch edges,
    /// [`BuildReport::derive_launch_facts`]).
    fn shared_launch_warning(&mut self) {
        let (mut shared, mut tasks) = (0u64, 0u64);
        for (call, n) in self.launched.several() {
            if !is_graph_launch(&self.g, call) {
                shared += 1;
                tasks += n as u64;
            }
        }
        self.report.shared_launches = shared;
        self.report.tasks_of_shared_launches = tasks;
        let w = self.report.shared_launch_warning();
        self.report.warnings.extend(w);
    }
}

/// Whether a runtime call named `name` puts work on a GPU stream that the
/// profiler records as a GPU event of the same correlation id: kernel
/// launches (`cudaLaunchKernel`, `cudaLaunchKernelExC`, `cuLaunchKernel`,
/// `hipLaunchKernel`, `hipExtModuleLaunchKernel`, cooperative launches),
/// graph launches and copies. Not memsets: CUPTI leaves the GPU event of
/// some `cudaMemsetAsync` calls out of real traces (49 of the h100 ViT
/// trace's calls, spread over its window), and not `cudaLaunchHostFunc`,
/// which runs no GPU work.
pub(crate) fn is_recorded_launch(name: &str) -> bool {
    [
        "LaunchKernel",
        "GraphLaunch",
        "LaunchCooperativeKernel",
        "Memcpy",
    ]
    .iter()
    .any(|p| name.contains(p))
}

/// The launch calls a trace may lose the GPU work of without a word: at
/// most this many, or this share of its launches (1 in ...), whichever is
/// more, besides those after the last launch whose work was recorded.
const UNLAUNCHED_ALLOWED: (u64, u64) = (2, 100);

/// The window's last part, where launches after the last one whose work
/// was recorded may have lost it to the end of profiling: 1 / this of the
/// window's span. A trace whose GPU work was removed past its first
/// launches loses it before there, and is warned about.
const TAIL_PART: i64 = 10;

impl Builder {
    /// One warning counting the launch calls ([`is_recorded_launch`]) whose
    /// correlation id no GPU task has: the kernels or copies they started
    /// are missing (dropped by the profiler, or removed from the file), so
    /// the replay and every breakdown leave their GPU time out. Those in
    /// the window's last part ([`TAIL_PART`]) after the last launch whose
    /// GPU task was recorded are the window's end (work still running
    /// when profiling stopped) and are not counted; the others are warned
    /// about past a few ([`UNLAUNCHED_ALLOWED`]), and counted in
    /// [`BuildReport::launches_without_gpu_task`] either way. The corpus
    /// loses none: every launch call of its traces has its GPU task.
    fn unlaunched_call_warning(&mut self) {
        let g = &self.g;
        let mut is_launch = PerName::new(g.names.len());
        let (mut launches, mut last_launched) = (0u64, i64::MIN);
        let mut unlaunched: Vec<TaskId> = Vec::new();
        for (id, t) in g.tasks.iter().enumerate() {
            if t.kind != TaskKind::Runtime || t.correlation == 0 {
                continue;
            }
            if !is_launch.get(t.name, &g.names, is_recorded_launch) {
                continue;
            }
            launches += 1;
            let call = TaskId(id as u32);
            match self.launched.get(&call) {
                Some(_) => last_launched = last_launched.max(self.raw[id].start),
                None => unlaunched.push(call),
            }
        }
        let raw = &self.raw;
        let (first_start, last_end) = (raw.iter()).fold((i64::MAX, i64::MIN), |(a, b), r| {
            (a.min(r.start), b.max(r.end))
        });
        let tail = last_end.saturating_sub(last_end.saturating_sub(first_start) / TAIL_PART);
        unlaunched.retain(|c| raw[c.idx()].start <= last_launched.max(tail));
        let missing = unlaunched.len() as u64;
        self.report.launches_without_gpu_task = missing;
        let (few, share) = UNLAUNCHED_ALLOWED;
        if missing <= few.max(launches / share) {
            return;
        }
        let first = (unlaunched.iter())
            .min_by_key(|c| (raw[c.idx()].start, c.0))
            .copied()
            .expect("some are missing");
        let t = &g.tasks[first.idx()];
        let on = match g.processors[t.proc.idx()].kind {
            ProcKind::Thread { pid, tid } => format!("pid {pid}, tid {tid}"),
            ProcKind::Stream { device, stream } => format!("device {device}, stream {stream}"),
        };
        let w = format!(
            "{missing} of {launches} kernel launch and copy calls {} no GPU task of their \
             correlation id (first {:?} at ts {:.3} us, {on}, correlation {}): their kernels \
             or copies are missing (dropped by the profiler, or removed from the trace), so the \
             replay and the breakdowns leave their GPU time out",
            if missing == 1 { "has" } else { "have" },
            g.names[t.name.0 as usize],
            raw[first.idx()].start as f64 / 1e3,
            t.correlation,
        );
        self.report.warnings.push(w);
    }
}

/// Which GPU tasks are communication, and their collectives: read by each
/// stream as its tasks are made (`per_track`), so that the GPU events'
/// extra arguments are read and freed on the core that fills the stream,
/// not kept until a later pass.
pub(super) struct CommFinder<'a> {
    /// The CPU ops' collective arguments by `External id` (the first op
    /// with an id wins), sorted: a stream's kernels ask in nearly
    /// increasing order, where a hash map's probes were a cache miss each.
    by_ext: ByCorr<&'a CollectiveArgs>,
    names: &'a [String],
}

/// What one caller of [`CommFinder::collective`] remembers between calls:
/// per name, whether it is a collective library's kernel (worked out once
/// per name, not once per task), and where its last look-up of an
/// `External id` ended.
pub(super) struct CommMemo {
    comm_name: PerName<bool>,
    ops_cursor: usize,
}

/// Whether a collective was named by its arguments (`Collective name` on
/// the task or its CPU op) or by its kernel's name alone.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum CommEvidence {
    Args,
    Name,
}

impl<'a> CommFinder<'a> {
    /// A finder over the CPU ops with collective arguments (`ops`: their
    /// `External id`s and arguments, in file order) of a trace whose
    /// interned strings are `names`.
    pub(super) fn new(ops: &'a [(u64, CollectiveArgs)], names: &'a [String]) -> Self {
        // Last to first: `ByCorr` keeps the last value of an id.
        let by_ext = ByCorr::new(ops.iter().rev().map(|(x, c)| (*x, c)).collect());
        CommFinder { by_ext, names }
    }

    /// An empty memo for one caller of [`Self::collective`].
    pub(super) fn memo(&self) -> CommMemo {
        CommMemo {
            comm_name: PerName::new(self.names.len()),
            ops_cursor: 0,
        }
    }

    /// The collective a GPU task named `name` runs, if it is communication:
    /// `Collective name` on the task (`own`), else on the CPU op it was
    /// launched under (same `External id`), else a name pattern. `memo`
    /// ([`Self::memo`]) is the caller's own.
    pub(super) fn collective(
        &self,
        name: u32,
        own: Option<&CollectiveArgs>,
        external_id: Option<u64>,
        memo: &mut CommMemo,
    ) -> Option<(Collective, CommEvidence)> {
        let by_name = (memo.comm_name).get(NameId(name), self.names, is_comm_kernel_name);
        // Neither a collective's kernel nor arguments of its own: not
        // communication, whatever its CPU op says, so the op (a look-up
        // in a table as large as the trace's collectives) is not needed.
        if !by_name && own.is_none() {
            return None;
        }
        let text = &self.names[name as usize];
        let via_op =
            external_id.and_then(|x| self.by_ext.get_from(&x, &mut memo.ops_cursor).copied());
        let args = own.filter(|c| c.name.is_some()).or(via_op);
        let coll = match args {
            Some(a) if by_name || own.is_some() => Collective {
                name: a
                    .name
                    .as_deref()
                    .map_or_else(|| comm_family(text), str::to_owned),
                process_group: a.pg_name.as_deref().map(str::to_owned),
                seq: a.seq,
                bytes: a.bytes(),
                elements: a.in_nelems.max(a.out_nelems),
                group_size: a.group_size,
            },
            _ if by_name => Collective {
                name: comm_family(text),
                process_group: None,
                seq: None,
                bytes: None,
                elements: None,
                group_size: None,
            },
            _ => return None,
        };
        let evidence = match args {
            Some(_) => CommEvidence::Args,
            None => CommEvidence::Name,
        };
        Some((coll, evidence))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, seq: i64) -> CollectiveArgs {
        CollectiveArgs {
            name: Some(name.into()),
            seq: Some(seq),
            ..CollectiveArgs::default()
        }
    }

    #[test]
    fn comm_finder_takes_the_first_op_of_an_external_id_and_skips_compute_kernels() {
        let names: Vec<String> = ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "gemm_kernel"]
            .map(String::from)
            .to_vec();
        // Ids out of order, one twice: the first op in file order wins.
        let ops = vec![
            (7, op("allreduce", 1)),
            (3, op("broadcast", 0)),
            (7, op("allgather", 2)),
        ];
        let finder = CommFinder::new(&ops, &names);
        let mut memo = finder.memo();
        let (c, how) = finder
            .collective(0, None, Some(7), &mut memo)
            .expect("a collective");
        assert_eq!((c.name.as_str(), c.seq), ("allreduce", Some(1)));
        assert!(how == CommEvidence::Args);
        // Looked up after a later id: the search goes back.
        let (c, _) = finder
            .collective(0, None, Some(3), &mut memo)
            .expect("a collective");
        assert_eq!(c.name, "broadcast");
        // An id with no op: the kernel's name alone.
        let (c, how) = finder
            .collective(0, None, Some(5), &mut memo)
            .expect("a collective");
        assert!(how == CommEvidence::Name && c.seq.is_none());
        // A compute kernel under a collective's CPU op is not communication.
        assert!(finder.collective(1, None, Some(7), &mut memo).is_none());
        // ... unless it carries collective arguments of its own.
        let own = op("alltoall", 9);
        let (c, _) = finder
            .collective(1, Some(&own), Some(7), &mut memo)
            .expect("own");
        assert_eq!(c.name, "alltoall");
    }
}
