//! Tasks made track by track on every core: CPU leaves per thread (polling
//! loops folded, parents as scopes), GPU tasks per stream.
//!
//! Tracks are independent until their tasks are numbered: a thread's call
//! tree, its leaves and its scopes read its own records alone. So the step
//! runs in three phases. The call trees are found in parallel (they say how
//! many tasks and scopes each thread makes); the ids are then given out in
//! one short sequential pass (threads in key order, then streams, as one
//! thread at a time did), the task and scope vectors reserved once; and
//! the tracks then fill their own disjoint slices of them in parallel,
//! largest first. The graph is the one a single thread makes, to the task
//! number (tests/threads.rs builds it on 1 to 8 threads). A stream also
//! names its communication tasks' collectives as it makes them
//! ([`CommFinder`]): the GPU events' extra arguments are read and freed
//! there, on both cores, where a later single-threaded pass kept them all
//! (32 bytes a GPU task) and freed them one by one.
//!
//! Memory: tracks filled side by side hold their records at the same
//! time, so the slots are written in place as each track reaches them
//! (never zeroed ahead), the streams' sort keys are dropped before the
//! fill, and the per-track lists are sized from the call trees; the step's
//! peak on a 1 GB rank stays within the single-threaded one's spread
//! (docs/PERFORMANCE.md, "The task step on both cores").
//!
//! On a 1 GB rank this step was about 0.9 s of a single-threaded build
//! while the second core idled (docs/PERFORMANCE.md, "Where the 1 GB
//! replay's wall time goes"): a training process records its forward and
//! its backward (autograd) thread, and the streams, in comparable shares.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::tasks::{
    unpack_id, CommEvidence, CommFinder, CpuRecord, ExtraRef, GpuRecord, Tracks, NO_PARENT,
};
use super::*;

/// A thread's call tree ([`call_tree`]) and what the fill needs to know of
/// it before it starts.
struct ThreadTree {
    /// Record positions in tree order (parents before children).
    idx: Vec<u32>,
    /// Per tree position: whether it has a child (becomes a scope).
    has_child: Vec<bool>,
    /// Per tree position: its parent's position, [`NO_PARENT`] for none.
    parent: Vec<u32>,
    /// Polling loops: each run's first call (tree position) and its end.
    polls: Vec<(usize, i64)>,
    /// Per tree position: a call folded into the polling loop before it.
    absorbed: Vec<bool>,
    /// Parents a child overlapped without ending inside them.
    partial_overlaps: u64,
    /// Records nested deeper than [`MAX_SCOPE_DEPTH`], hung under their
    /// ancestor at that depth.
    too_deep: u64,
    /// The tasks the thread makes: leaves not folded into a loop.
    tasks: usize,
    /// The scopes the thread makes: one per parent.
    scopes: usize,
    /// The correlated runtime calls among its tasks.
    calls: usize,
}

impl ThreadTree {
    fn of<X>(list: &[CpuRecord<X>], names: &[String]) -> ThreadTree {
        let (idx, has_child, parent, (partial_overlaps, too_deep)) = call_tree(list);
        let (polls, absorbed) = polling_runs(list, names, &idx, &has_child, &parent);
        let scopes = has_child.iter().filter(|&&c| c).count();
        // Only leaves are folded into loops.
        let folded = absorbed.iter().filter(|&&a| a).count();
        let calls = (idx.iter().zip(has_child.iter().zip(&absorbed)))
            .filter(|&(&i, (&parent, &folded))| {
                let e = &list[i as usize];
                !parent && !folded && is_call(e.category) && e.correlation().is_some()
            })
            .count();
        ThreadTree {
            tasks: idx.len() - scopes - folded,
            scopes,
            calls,
            idx,
            has_child,
            parent,
            polls,
            absorbed,
            partial_overlaps,
            too_deep,
        }
    }
}

/// The most levels of scopes a thread's call tree keeps. A record nested
/// deeper is hung under its ancestor at this depth (its own leaves stay
/// tasks, their scope chains end there): every walk up a task's scopes
/// (the timelines, the critical path's tables, the predictor's discovery)
/// costs as much as the chain is long, once per task, so a hostile file
/// of 100,000 operators each inside the one before, with a leaf under the
/// innermost of each, was 10^10 steps (minutes). PyTorch's operators nest
/// a few dozen levels at most.
pub(crate) const MAX_SCOPE_DEPTH: usize = 256;

/// Whether a leaf of this category becomes a runtime call task.
fn is_call(c: Category) -> bool {
    !matches!(c, Category::CpuOp | Category::UserAnnotation)
}

/// A thread's call tree: its records' positions in tree order, and per
/// position whether it has a child and its parent's position ([`NO_PARENT`]
/// for none); then the number of partial overlaps met and of records
/// nested deeper than [`MAX_SCOPE_DEPTH`] (whose parent is given as their
/// ancestor at that depth).
fn call_tree<X>(list: &[CpuRecord<X>]) -> (Vec<u32>, Vec<bool>, Vec<u32>, (u64, u64)) {
    // Parents before children: earlier start, then longer, then
    // annotations before ops before runtime calls. The keys are
    // taken once, so that sorting does not reach into the records.
    // The keys are distinct (the position is one of them), so every
    // way of sorting them gives this one order. Exporters write a
    // thread's calls and its ops in separate runs, each in tree
    // order, which `merge_nested` orders in linear time and merges
    // as it goes.
    // Each list sized exactly: grown by doubling, they were copied on
    // the way (a tenth of the build's instructions went to such copies).
    let rank_of = |c: Category| -> u8 {
        match c {
            Category::UserAnnotation => 0,
            Category::CpuOp => 1,
            _ => 2,
        }
    };
    let calls = list.iter().filter(|e| rank_of(e.category) == 2).count();
    let mut ops_k = Vec::with_capacity(list.len() - calls);
    let mut calls_k = Vec::with_capacity(calls);
    for (i, e) in list.iter().enumerate() {
        let rank = rank_of(e.category);
        // The position as `u32` (a thread has fewer than 2^32 events):
        // 24 bytes a key, not 32, over the three lists alive while they
        // are merged.
        let k = (e.ts, std::cmp::Reverse(e.dur), rank, i as u32);
        if rank == 2 {
            calls_k.push(k);
        } else {
            ops_k.push(k);
        }
    }
    let mut keyed = merge_nested(&ops_k, &calls_k);
    drop((ops_k, calls_k));
    order_ties(&mut keyed, list);
    let idx: Vec<u32> = keyed.iter().map(|k| k.3).collect();
    let mut has_child = vec![false; idx.len()];
    // Positions as `u32` ([`NO_PARENT`] for none: 4 bytes, not an
    // `Option`'s 8): these vectors are the build's largest while a long
    // thread's tasks are made.
    let mut parent: Vec<u32> = vec![NO_PARENT; idx.len()];
    let mut stack: Vec<usize> = Vec::new();
    let mut partial_overlaps = 0;
    let mut too_deep = 0;
    // The tree is built from the keys alone, without going back to
    // the records.
    for (k, &(ts, std::cmp::Reverse(dur), _, _)) in keyed.iter().enumerate() {
        let end = ts.saturating_add(dur);
        while let Some(&top) = stack.last() {
            let (p_ts, std::cmp::Reverse(p_dur), p_rank, _) = keyed[top];
            let p_end = p_ts.saturating_add(p_dur);
            // Runtime calls are never parents: a zero-length call at
            // the same timestamp is a sibling, not a child.
            let can_parent = p_rank != 2;
            if can_parent && ts < p_end && end <= p_end {
                break;
            }
            if can_parent && ts < p_end {
                partial_overlaps += 1;
            }
            stack.pop();
        }
        if let Some(&top) = stack.last() {
            has_child[top] = true;
            parent[k] = top as u32;
            if stack.len() > MAX_SCOPE_DEPTH {
                parent[k] = stack[MAX_SCOPE_DEPTH - 1] as u32;
                too_deep += 1;
            }
        }
        stack.push(k);
    }
    (idx, has_child, parent, (partial_overlaps, too_deep))
}

/// Orders each run of records with one start, length and kind: those
/// with a [`CpuRecord::tie`] by it, among the places they hold in file
/// order; those without keep their places. In file order, which of two
/// ops of equal start and length was the parent followed the file
/// (DLRM's events shuffled found other layers). An op without an id says
/// nothing of when it started against one with: sorted as the largest
/// id, such an op (a scope a writer adds without an id, as Kineto writes
/// `ProfilerStep#N`) always became the child of an op of its run with
/// one, whatever the file said. Runs are rare (a few dozen pairs a
/// trace), so they are found after the sort rather than widening its
/// keys (24 bytes each) by 8.
fn order_ties<X>(keyed: &mut [(i64, std::cmp::Reverse<i64>, u8, u32)], list: &[CpuRecord<X>]) {
    let mut start = 0;
    while start < keyed.len() {
        let head = &keyed[start];
        let same = |k: &(i64, std::cmp::Reverse<i64>, u8, u32)| {
            (k.0, k.1, k.2) == (head.0, head.1, head.2)
        };
        let end = start + keyed[start..].iter().take_while(|k| same(k)).count();
        if end - start > 1 {
            order_run(&mut keyed[start..end], list);
        }
        start = end;
    }
}

/// [`order_ties`] of one run of two or more records.
#[cold]
fn order_run<X>(run: &mut [(i64, std::cmp::Reverse<i64>, u8, u32)], list: &[CpuRecord<X>]) {
    let tie = |k: &(i64, std::cmp::Reverse<i64>, u8, u32)| list[k.3 as usize].tie();
    run.sort_unstable_by_key(|k| k.3);
    // Only the places of the records with an id are refilled, in order
    // of their ids.
    let mut with_id: Vec<_> = run.iter().copied().filter(|k| tie(k).is_some()).collect();
    with_id.sort_unstable_by_key(|k| (tie(k), k.3));
    let mut next = with_id.into_iter();
    for place in run.iter_mut() {
        if tie(place).is_some() {
            if let Some(k) = next.next() {
                *place = k;
            }
        }
    }
}

/// The slots of the builder's per-task vectors that one track fills: the
/// same range of each, reserved and not yet written (a page of them is
/// first touched when its track writes it, not all at once while every
/// record is still held: that kept the 1 GB rank's peak 40 MB higher).
struct TaskSlots<'a> {
    /// Id of the first slot's task.
    first: u32,
    tasks: &'a mut [MaybeUninit<Task>],
    raw: &'a mut [MaybeUninit<Raw>],
    pos: &'a mut [MaybeUninit<u32>],
    scopes: &'a mut [MaybeUninit<Option<ScopeId>>],
}

impl<'a> TaskSlots<'a> {
    /// The per-task vectors' spare slots, cut into one range per track of
    /// the given lengths, the first at task `first`.
    fn split(first: usize, lens: &[usize], (tasks, raw, pos, scopes): PerTask<'a>) -> Vec<Self> {
        let mut starts = lens.iter().scan(first, |next, &n| {
            let at = *next;
            *next += n;
            Some(at as u32)
        });
        (split_into(tasks, lens).into_iter())
            .zip(split_into(raw, lens))
            .zip(split_into(pos, lens))
            .zip(split_into(scopes, lens))
            .map(|(((tasks, raw), pos), scopes)| TaskSlots {
                first: starts.next().unwrap_or(u32::MAX),
                tasks,
                raw,
                pos,
                scopes,
            })
            .collect()
    }

    /// Writes slot `t` (the track's `t`-th task, so also its position on
    /// the processor) and returns the task's id.
    fn set(&mut self, t: usize, task: Task, raw: Raw, scope: Option<ScopeId>) -> TaskId {
        self.tasks[t].write(task);
        self.raw[t].write(raw);
        self.pos[t].write(t as u32);
        self.scopes[t].write(scope);
        TaskId(self.first + t as u32)
    }

    /// The ids of the track's tasks, in order: its processor's list.
    fn ids(&self) -> Vec<TaskId> {
        (0..self.tasks.len() as u32)
            .map(|t| TaskId(self.first + t))
            .collect()
    }
}

/// The spare slots of the builder's per-task vectors: tasks, raw spans,
/// positions on their processors, enclosing scopes.
type PerTask<'a> = (
    &'a mut [MaybeUninit<Task>],
    &'a mut [MaybeUninit<Raw>],
    &'a mut [MaybeUninit<u32>],
    &'a mut [MaybeUninit<Option<ScopeId>>],
);

/// `n` more slots of `v`, reserved and not yet written.
fn spare<T>(v: &mut Vec<T>, n: usize) -> &mut [MaybeUninit<T>] {
    v.reserve(n);
    &mut v.spare_capacity_mut()[..n]
}

/// What one track's fill hands back to the sequential end of the step.
struct TrackDone {
    /// The track's processor.
    proc: ProcId,
    /// Its tasks, in order.
    ids: Vec<TaskId>,
    steps: Vec<StepAnnotation>,
    /// Tasks standing for a polling loop.
    polls: Vec<TaskId>,
    partial_overlaps: u64,
    /// Records nested deeper than [`MAX_SCOPE_DEPTH`].
    too_deep: u64,
    clipped_gpu_overlaps: u64,
    /// A stream's communication tasks, in order, with their collectives
    /// and what named them.
    collectives: Vec<(TaskId, Collective, CommEvidence)>,
    /// Whether every slot of the track was written.
    filled: bool,
}

impl TrackDone {
    /// Nothing handed back yet by the track of `proc`.
    fn new(proc: ProcId) -> TrackDone {
        TrackDone {
            proc,
            ids: Vec::new(),
            steps: Vec::new(),
            polls: Vec::new(),
            partial_overlaps: 0,
            too_deep: 0,
            clipped_gpu_overlaps: 0,
            collectives: Vec::new(),
            filled: false,
        }
    }
}

/// A thread's share of the parallel fill.
struct ThreadWork<'a, X> {
    list: Vec<CpuRecord<X>>,
    tree: ThreadTree,
    proc: ProcId,
    slots: ThreadSlots<'a>,
}

/// How many records ahead a thread's fill asks for their boxed arguments.
const EXTRAS_AHEAD: usize = 8;

impl<X: ExtraRef> ThreadWork<'_, X> {
    /// The thread's leaves become tasks and its parents scopes, in tree
    /// order.
    fn fill(mut self, names: &[String]) -> TrackDone {
        let (list, tree, proc) = (&self.list, &self.tree, self.proc);
        let mut done = TrackDone {
            partial_overlaps: tree.partial_overlaps,
            too_deep: tree.too_deep,
            ..TrackDone::new(proc)
        };
        // The scope each tree position became, by id ([`NO_PARENT`] for
        // none: 4 bytes a record, where an `Option` takes 8).
        let mut scope_of: Vec<u32> = vec![NO_PARENT; tree.idx.len()];
        let (mut t, mut s, mut c) = (0, 0, 0);
        let mut next_poll = 0;
        let mut last_end = i64::MIN;
        for (k, &i) in tree.idx.iter().enumerate() {
            // A scope copies its record's boxed arguments: asked for ahead,
            // as they are wherever the reader put them.
            if let Some(x) =
                (tree.idx.get(k + EXTRAS_AHEAD)).and_then(|&a| list[a as usize].extra.get())
            {
                prefetch(x);
            }
            while tree.polls.get(next_poll).is_some_and(|p| p.0 < k) {
                next_poll += 1;
            }
            let poll_end = tree.polls.get(next_poll).filter(|p| p.0 == k).map(|p| p.1);
            if tree.absorbed[k] {
                continue;
            }
            let e = &list[i as usize];
            let name = &names[e.name as usize];
            // Legacy traces record steps as `Operator` events, and a
            // writer may file them under any CPU category (a runtime
            // one was left out, and the trace had no steps): the name
            // is the profiler's own, which no runtime call takes.
            if name.starts_with("ProfilerStep#") {
                done.steps.push(StepAnnotation {
                    name: NameId(e.name),
                    proc,
                    start: e.ts,
                    end: e.end(),
                });
            }
            let enclosing = (tree.parent[k] != NO_PARENT)
                .then(|| scope_of[tree.parent[k] as usize])
                .filter(|&p| p != NO_PARENT)
                .map(ScopeId);
            if tree.has_child[k] {
                // Parents come before their children in this order, so
                // the enclosing scope already exists.
                scope_of[k] = self.slots.first_scope + s as u32;
                let extra = e.extra.get();
                self.slots.scopes[s].write(Scope {
                    name: NameId(e.name),
                    parent: enclosing,
                    annotation: e.category == Category::UserAnnotation,
                    input_dims: extra.and_then(|x| x.input_dims.clone()),
                    input_type: extra.and_then(|x| x.input_type.clone()),
                });
                self.slots.scope_spans[s].write(Span {
                    start_ns: e.ts,
                    end_ns: e.end(),
                });
                s += 1;
                continue;
            }
            let kind = match e.category {
                Category::CpuOp => TaskKind::CpuOp,
                Category::UserAnnotation => TaskKind::Annotation,
                _ => TaskKind::Runtime,
            };
            debug_assert_eq!(kind == TaskKind::Runtime, is_call(e.category));
            // Leaves that overlap a previous leaf (clock noise) are
            // clipped so the thread runs one thing at a time.
            let start = e.ts.max(last_end);
            let end = poll_end.unwrap_or(e.end()).max(start);
            last_end = end;
            let correlation = e.correlation();
            let task = new_task(kind, e.name, correlation, proc, start, end);
            let id = self.slots.tasks.set(t, task, Raw { start, end }, enclosing);
            t += 1;
            if poll_end.is_some() {
                done.polls.push(id);
            }
            if kind == TaskKind::Runtime {
                if let Some(corr) = correlation {
                    self.slots.calls[c].write((corr, id));
                    c += 1;
                }
            }
        }
        let slots = &self.slots;
        done.filled =
            t == slots.tasks.tasks.len() && s == slots.scopes.len() && c == slots.calls.len();
        done.ids = slots.tasks.ids();
        done
    }
}

/// The positions of a stream's records in start order (then correlation,
/// then file order).
fn stream_order<X>(list: &[GpuRecord<X>]) -> Vec<u32> {
    let mut keyed: Vec<_> = (list.iter().enumerate())
        .map(|(i, e)| (e.ts, unpack_id(e.correlation), i as u32))
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, _, i)| i).collect()
}

/// A stream's share of the parallel fill.
struct StreamWork<'a, X> {
    list: Vec<GpuRecord<X>>,
    /// [`stream_order`] of the list.
    order: Vec<u32>,
    proc: ProcId,
    slots: TaskSlots<'a>,
}

impl<X: ExtraRef> StreamWork<'_, X> {
    /// The stream's work becomes tasks in start order, its communication
    /// tasks found as they are made (`comms`).
    fn fill(mut self, comms: &CommFinder) -> TrackDone {
        let mut done = TrackDone::new(self.proc);
        let mut memo = comms.memo();
        let mut last_end = i64::MIN;
        let n = self.order.len();
        for (t, &i) in self.order.iter().enumerate() {
            let e = &self.list[i as usize];
            let correlation = unpack_id(e.correlation);
            let kind = match e.category {
                Category::Kernel => TaskKind::Kernel,
                Category::Memcpy => TaskKind::Memcpy,
                _ => TaskKind::Memset,
            };
            let start = e.ts.max(last_end);
            if start > e.ts {
                done.clipped_gpu_overlaps += 1;
            }
            let end = e.end().max(start);
            last_end = end;
            let task = new_task(kind, e.name, correlation, self.proc, start, end);
            let id = self.slots.set(t, task, Raw { start, end }, None);
            let own = e.extra.get().and_then(|x| x.collective.as_deref());
            let external_id = unpack_id(e.external_id);
            if let Some((c, how)) = comms.collective(e.name, own, external_id, &mut memo) {
                done.collectives.push((id, c, how));
            }
        }
        done.filled = n == self.slots.tasks.len();
        done.ids = self.slots.ids();
        done
    }
}

/// One track's share of the parallel fill.
enum TrackWork<'a, X> {
    Thread(ThreadWork<'a, X>),
    Stream(StreamWork<'a, X>),
}

impl<X: ExtraRef> TrackWork<'_, X> {
    /// How many records the track has: how long its fill takes.
    fn records(&self) -> usize {
        match self {
            TrackWork::Thread(w) => w.list.len(),
            TrackWork::Stream(w) => w.list.len(),
        }
    }

    /// The track's place in task order (its first task's id).
    fn order(&self) -> usize {
        match self {
            TrackWork::Thread(w) => w.slots.tasks.first as usize,
            TrackWork::Stream(w) => w.slots.first as usize,
        }
    }

    /// Fills the track's slots; its records (and the events' boxed extras
    /// they own) are freed here, on the core that filled them.
    fn fill(self, names: &[String], comms: &CommFinder) -> TrackDone {
        match self {
            TrackWork::Thread(w) => w.fill(names),
            TrackWork::Stream(w) => w.fill(comms),
        }
    }
}

/// A task of a track, spanning `start..end` (trace ns).
fn new_task(
    kind: TaskKind,
    name: u32,
    correlation: Option<u64>,
    proc: ProcId,
    start: i64,
    end: i64,
) -> Task {
    Task {
        kind,
        name: NameId(name),
        proc,
        duration_ns: end.saturating_sub(start),
        release_ns: 0,
        collective: None,
        correlation: correlation.unwrap_or(0),
    }
}

/// `slice` cut into consecutive parts of the given lengths (which add up
/// to at most its length).
fn split_into<'a, T>(mut slice: &'a mut [T], lens: &[usize]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(lens.len());
    for &n in lens {
        let (part, rest) = std::mem::take(&mut slice).split_at_mut(n);
        parts.push(part);
        slice = rest;
    }
    parts
}

/// How many slots each track fills in each of the builder's vectors, and
/// where its tasks and scopes start: threads in key order, then streams,
/// each track's tasks consecutive (the numbering one thread at a time
/// gave).
struct Layout {
    first_task: usize,
    first_scope: usize,
    /// Tasks per track, threads then streams.
    tasks: Vec<usize>,
    /// Scopes per thread.
    scopes: Vec<usize>,
    /// Correlated runtime calls per thread.
    calls: Vec<usize>,
}

impl Layout {
    fn of<X>(trees: &[ThreadTree], streams: &[StreamList<X>], b: &Builder) -> Layout {
        let gpu = streams.iter().map(|(_, l)| l.len());
        Layout {
            first_task: b.g.tasks.len(),
            first_scope: b.g.scopes.len(),
            tasks: trees.iter().map(|t| t.tasks).chain(gpu).collect(),
            scopes: trees.iter().map(|t| t.scopes).collect(),
            calls: trees.iter().map(|t| t.calls).collect(),
        }
    }

    /// Each thread's first scope id.
    fn scope_starts(&self) -> impl Iterator<Item = u32> + '_ {
        self.scopes.iter().scan(self.first_scope, |next, &n| {
            let at = *next;
            *next += n;
            Some(at as u32)
        })
    }
}

type ThreadList<X> = ((Ident, Ident), Vec<CpuRecord<X>>);
type StreamList<X> = ((i64, i64), Vec<GpuRecord<X>>);

/// Each thread's call tree and each stream's order, found in parallel.
/// The streams' orders go beside the call trees: they are the smaller share
/// of this phase's work, and their sort keys are freed before the fill,
/// where the step's memory peaks.
fn shapes<X: Sync>(
    threads: &[ThreadList<X>],
    streams: &[StreamList<X>],
    names: &[String],
) -> (Vec<ThreadTree>, Vec<Vec<u32>>) {
    rayon::join(
        || {
            (threads.par_iter().with_max_len(1))
                .map(|(_, list)| ThreadTree::of(list, names))
                .collect()
        },
        || {
            (streams.par_iter().with_max_len(1))
                .map(|(_, list)| stream_order(list))
                .collect()
        },
    )
}

/// Fills every track's slots on the pool's threads, largest track first
/// (the two cores then start on the two largest and share out the rest as
/// they finish); returns what each track hands back, in task order.
fn fill_all<X: ExtraRef + Send>(
    mut work: Vec<TrackWork<'_, X>>,
    names: &[String],
    comms: &CommFinder,
) -> Vec<TrackDone> {
    work.sort_by_key(|w| std::cmp::Reverse(w.records()));
    let mut done: Vec<(usize, TrackDone)> = (work.into_par_iter().with_max_len(1))
        .map(|w| (w.order(), w.fill(names, comms)))
        .collect();
    done.sort_unstable_by_key(|(k, _)| *k);
    done.into_iter().map(|(_, d)| d).collect()
}

impl Builder {
    /// CPU leaves and GPU work become tasks (see the module's docs), the
    /// communication tasks among the GPU ones get their collectives;
    /// returns the step annotations, for `run`. Nesting policy: only leaves of each thread's call tree are
    /// scheduled; time a parent spends outside its children becomes the gap
    /// before the next leaf, so CPU overhead survives replay. Each track's
    /// records are freed once its tasks are made.
    #[inline(never)]
    pub(super) fn track_tasks<X>(&mut self, tracks: Tracks<X>) -> Vec<StepAnnotation>
    where
        X: ExtraRef + Send + Sync,
    {
        let (threads, streams) = tracks.into_sorted();
        let (trees, orders) = shapes(&threads, &streams, &self.g.names);
        let procs = self.track_processors(&threads, &streams);
        let layout = Layout::of(&trees, &streams, self);
        let mut calls = Vec::new();
        // Read by the streams' fills; not needed after them.
        let ops = std::mem::take(&mut self.collective_ops);
        let done = {
            let (b, names) = self.slots_and_names();
            let comms = CommFinder::new(&ops, names);
            let mut slots = b.split(&layout, &mut calls);
            let mut work = Vec::with_capacity(layout.tasks.len());
            let mut procs = procs.into_iter();
            let thread_parts = threads.into_iter().map(|(_, l)| l).zip(trees);
            for ((list, tree), (slots, proc)) in
                thread_parts.zip(slots.threads.by_ref().zip(procs.by_ref()))
            {
                work.push(TrackWork::Thread(ThreadWork {
                    list,
                    tree,
                    proc,
                    slots,
                }));
            }
            let stream_parts = streams.into_iter().map(|(_, l)| l).zip(orders);
            for (((list, order), task_slots), proc) in
                stream_parts.zip(slots.streams.by_ref()).zip(procs)
            {
                work.push(TrackWork::Stream(StreamWork {
                    list,
                    order,
                    proc,
                    slots: task_slots,
                }));
            }
            fill_all(work, names, &comms)
        };
        drop(ops);
        // Every track wrote each of its slots (a track that did not is a
        // bug here; its slots are left out, and leaked, rather than read).
        assert!(
            done.iter().all(|d| d.filled),
            "a track left task slots unwritten"
        );
        // SAFETY: the slots past each length were split among the tracks
        // (`split`: the layout's lengths add up to those added here), and
        // every track wrote every one of its slots (`filled`, checked just
        // above).
        unsafe { self.take_slots(&layout, &mut calls) };
        let steps = self.gather(done);
        self.report.correlated_calls += calls.len() as u64;
        let (index, repeated) = CorrIndex::new(&calls);
        self.call_by_corr = index;
        self.report.repeated_correlations += repeated;
        steps
    }

    /// A processor for each track: threads in key order, then streams. A
    /// thread always makes a task (the last record in tree order is a
    /// leaf, and a polling loop keeps its first call), so each gets one.
    fn track_processors<X>(
        &mut self,
        threads: &[ThreadList<X>],
        streams: &[StreamList<X>],
    ) -> Vec<ProcId> {
        let mut procs = Vec::with_capacity(threads.len() + streams.len());
        for &((pid, tid), _) in threads {
            let proc = self.processor(ProcKind::Thread {
                pid: ident_num(pid),
                tid: ident_num(tid),
            });
            self.thread_pid.insert(proc, pid);
            procs.push(proc);
        }
        for &((device, stream), _) in streams {
            procs.push(self.processor(ProcKind::Stream { device, stream }));
        }
        procs
    }

    /// The vectors the tracks fill, apart from the names they read.
    fn slots_and_names(&mut self) -> (Filled<'_>, &[String]) {
        let filled = Filled {
            tasks: &mut self.g.tasks,
            raw: &mut self.raw,
            pos: &mut self.pos,
            task_scopes: &mut self.g.task_scopes,
            scopes: &mut self.g.scopes,
            scope_spans: &mut self.scope_spans,
        };
        (filled, &self.g.names)
    }

    /// Takes the slots the tracks wrote into the vectors' lengths.
    ///
    /// # Safety
    /// Every slot the layout gives a track was written.
    unsafe fn take_slots(&mut self, layout: &Layout, calls: &mut Vec<(u64, TaskId)>) {
        let tasks = layout.first_task + layout.tasks.iter().sum::<usize>();
        let scopes = layout.first_scope + layout.scopes.iter().sum::<usize>();
        self.g.tasks.set_len(tasks);
        self.raw.set_len(tasks);
        self.pos.set_len(tasks);
        self.g.task_scopes.set_len(tasks);
        self.g.scopes.set_len(scopes);
        self.scope_spans.set_len(scopes);
        calls.set_len(layout.calls.iter().sum());
    }

    /// What the tracks handed back, in task order, into the builder;
    /// returns the step annotations.
    fn gather(&mut self, done: Vec<TrackDone>) -> Vec<StepAnnotation> {
        let mut steps = Vec::new();
        let mut too_deep = 0;
        for d in done {
            too_deep += d.too_deep;
            self.g.processors[d.proc.idx()].tasks = d.ids;
            steps.extend(d.steps);
            self.report.polling_loops += d.polls.len() as u64;
            self.polls.extend(d.polls);
            self.report.partial_overlaps += d.partial_overlaps;
            self.report.clipped_gpu_overlaps += d.clipped_gpu_overlaps;
            // Numbered in task order, as the tracks are.
            for (id, c, how) in d.collectives {
                match how {
                    CommEvidence::Args => self.report.comm_by_args += 1,
                    CommEvidence::Name => self.report.comm_by_name += 1,
                }
                self.g.tasks[id.idx()].collective = Some(self.g.collectives.len() as u32);
                self.g.collectives.push(c);
            }
        }
        if too_deep > 0 {
            self.report.warnings.push(format!(
                "{} deeper than {MAX_SCOPE_DEPTH} levels inside others: hung under their \
                 enclosing one at that depth (their own nesting is not kept; their leaves are \
                 tasks as usual)",
                crate::report::counted(too_deep, "CPU event nests", "CPU events nest")
            ));
        }
        steps
    }
}

/// The builder's vectors the tracks fill.
struct Filled<'a> {
    tasks: &'a mut Vec<Task>,
    raw: &'a mut Vec<Raw>,
    pos: &'a mut Vec<u32>,
    task_scopes: &'a mut Vec<Option<ScopeId>>,
    scopes: &'a mut Vec<Scope>,
    scope_spans: &'a mut Vec<Span>,
}

/// A thread's slots: its tasks', its scopes', its calls'.
struct ThreadSlots<'a> {
    tasks: TaskSlots<'a>,
    first_scope: u32,
    scopes: &'a mut [MaybeUninit<Scope>],
    scope_spans: &'a mut [MaybeUninit<Span>],
    calls: &'a mut [MaybeUninit<(u64, TaskId)>],
}

/// Every track's slots, in task order.
struct Split<'a> {
    threads: std::vec::IntoIter<ThreadSlots<'a>>,
    streams: std::vec::IntoIter<TaskSlots<'a>>,
}

impl<'a> Filled<'a> {
    /// The spare slots the layout calls for, reserved and cut into one
    /// range per track.
    fn split(self, layout: &Layout, calls: &'a mut Vec<(u64, TaskId)>) -> Split<'a> {
        let n = layout.tasks.iter().sum();
        let per_task = (
            spare(self.tasks, n),
            spare(self.raw, n),
            spare(self.pos, n),
            spare(self.task_scopes, n),
        );
        let mut tasks = TaskSlots::split(layout.first_task, &layout.tasks, per_task).into_iter();
        let scopes_n = layout.scopes.iter().sum();
        let scopes = split_into(spare(self.scopes, scopes_n), &layout.scopes);
        let spans = split_into(spare(self.scope_spans, scopes_n), &layout.scopes);
        let calls_n = layout.calls.iter().sum();
        let calls = split_into(spare(calls, calls_n), &layout.calls);
        let threads: Vec<ThreadSlots> = (scopes.into_iter().zip(spans))
            .zip(calls)
            .zip(layout.scope_starts())
            .zip(tasks.by_ref())
            .map(
                |((((scopes, scope_spans), calls), first_scope), tasks)| ThreadSlots {
                    tasks,
                    first_scope,
                    scopes,
                    scope_spans,
                    calls,
                },
            )
            .collect();
        Split {
            threads: threads.into_iter(),
            streams: tasks.collect::<Vec<_>>().into_iter(),
        }
    }
}
