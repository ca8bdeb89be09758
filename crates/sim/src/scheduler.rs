//! The discrete-event list scheduler behind [`simulate`].
//!
//! One file past 800 lines on purpose: the replay is one state machine
//! (`Replay`) whose parts (the edge arrays, the heap, runtime waits,
//! rendezvous, abandoned waits) all read and write the same per-task
//! arrays, and splitting them would only spread those arrays' invariants.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use lumos_graph::{Anchor, DepKind, Graph, ProcKind, Rendezvous, Span, TaskId, WaitTarget};

use crate::error::SimError;
use crate::options::{scaled_durations, Cancel, SimOptions};

/// Marks "no task" / "no entry" in the flat index arrays.
const NONE: u32 = u32::MAX;

/// How many tasks the replay takes from its heap between two looks at
/// [`SimOptions::cancel`]: a few milliseconds of work, so a stop comes
/// soon, and a check too rare to cost anything measurable.
const CANCEL_CHECK_EVERY: u32 = 1 << 16;

/// What decided a task's start: the constraint that reached the latest time.
/// When several constraints reach the same time, the one applied first in
/// simulated order is kept, so the choice is deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bound {
    /// Nothing but [`Task::release_ns`](lumos_graph::Task::release_ns).
    Release,
    /// The previous task on the same thread or stream ended.
    Processor {
        /// That previous task.
        prev: TaskId,
    },
    /// A fixed edge, by index into [`Graph::edges`].
    Edge(u32),
    /// A runtime dependency, resolved during the replay.
    Runtime {
        /// Index into [`Graph::runtime_deps`].
        dep: u32,
        /// The GPU task it resolved to and waited for.
        on: TaskId,
    },
    /// A launch call waited for room in its stream's launch queue
    /// ([`SimOptions::launch_queue`]): until this GPU task ended.
    LaunchQueue {
        /// The task whose end made room.
        on: TaskId,
    },
}

/// A blocking call's issue: the moment it reached the head of its thread,
/// before its runtime dependencies held it back.
///
/// A blocking call issues work before it blocks (a blocking `cudaMemcpy`
/// launches the copy it then waits for), so the call's launches and other
/// start-anchored edges count from `issue_ns`, not from its start. Its start
/// in [`Schedule::start_ns`] is when the wait is over and its intrinsic cost
/// begins; `start - issue` is the time it spent blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockingWait {
    /// The call (a task with runtime dependencies).
    pub task: TaskId,
    /// When it issued, in ns since the window start.
    pub issue_ns: i64,
    /// What decided `issue_ns`.
    pub issue_bound: Bound,
    /// True when the replay gave up this call's wait: the work it waited
    /// for could never end (it depended, through the replay, on this call
    /// or what follows it, a cycle only the replay's own order of launches
    /// creates), so the call went on when nothing else could run.
    pub abandoned: bool,
}

/// The replayed timeline: one start and end per task, indexed by
/// [`TaskId`], in ns since the window start.
///
/// Two schedules are equal when their times, bounds and waits are: the
/// index over the waits is a cache of them, and one built from waits
/// later changed through the public field must not make equal replays
/// differ.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    /// Start of each task.
    pub start_ns: Vec<i64>,
    /// End of each task (start plus its possibly scaled duration).
    pub end_ns: Vec<i64>,
    /// What decided each task's start.
    pub bound_by: Vec<Bound>,
    /// Every task that had runtime dependencies, sorted by task id.
    pub waits: Vec<BlockingWait>,
    /// Where each task's wait is in `waits`.
    wait_index: WaitIndex,
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Schedule) -> bool {
        self.start_ns == other.start_ns
            && self.end_ns == other.end_ns
            && self.bound_by == other.bound_by
            && self.waits == other.waits
    }
}

impl Eq for Schedule {}

impl Schedule {
    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.start_ns.len()
    }

    /// True when the graph had no tasks.
    pub fn is_empty(&self) -> bool {
        self.start_ns.is_empty()
    }

    /// The replayed span of one task.
    pub fn span(&self, t: TaskId) -> Span {
        Span {
            start_ns: self.start_ns[t.idx()],
            end_ns: self.end_ns[t.idx()],
        }
    }

    /// The latest end of any task (0 for an empty schedule).
    pub fn makespan_ns(&self) -> i64 {
        self.end_ns.iter().copied().max().unwrap_or(0)
    }

    /// The task that ends last (the lowest id among ties), where a critical
    /// path walk usually starts.
    pub fn last_task(&self) -> Option<TaskId> {
        let mut best: Option<(i64, u32)> = None;
        for (i, &end) in self.end_ns.iter().enumerate() {
            match best {
                Some((b, _)) if end <= b => {}
                _ => best = Some((end, i as u32)),
            }
        }
        best.map(|(_, i)| TaskId(i))
    }

    /// How many blocking calls the replay stopped waiting
    /// ([`BlockingWait::abandoned`]).
    pub fn abandoned_waits(&self) -> usize {
        self.waits.iter().filter(|w| w.abandoned).count()
    }

    /// What about the replay itself needs saying: one line when waits were
    /// abandoned, none otherwise.
    pub fn warnings(&self) -> Vec<String> {
        let n = self.abandoned_waits();
        if n == 0 {
            return Vec::new();
        }
        vec![format!(
            "{n} blocking calls stopped waiting for GPU work that, in this replay, could \
             never end before them (it waited for work launched after them): the replay \
             is not the measured schedule there"
        )]
    }

    /// The issue record of a task that had runtime dependencies.
    // Inlined into other crates: every metric asks it of every task
    // through `TaskTimes::start_of`.
    #[inline]
    pub fn wait(&self, t: TaskId) -> Option<&BlockingWait> {
        match self.wait_index.lookup(t, self.waits.len()) {
            Lookup::Absent => None,
            Lookup::At(i) if self.waits.get(i).is_some_and(|w| w.task == t) => Some(&self.waits[i]),
            _ => self
                .waits
                .binary_search_by_key(&t, |w| w.task)
                .ok()
                .map(|i| &self.waits[i]),
        }
    }

    /// The schedule of these columns, indexed for [`Schedule::wait`];
    /// `waits` sorted by task id, at most one per task.
    pub fn new(
        start_ns: Vec<i64>,
        end_ns: Vec<i64>,
        bound_by: Vec<Bound>,
        waits: Vec<BlockingWait>,
    ) -> Schedule {
        let wait_index = WaitIndex::of(&waits, start_ns.len());
        Schedule {
            start_ns,
            end_ns,
            bound_by,
            waits,
            wait_index,
        }
    }
}

/// Which tasks have a [`BlockingWait`] and where it is in
/// [`Schedule::waits`]: metrics ask [`Schedule::wait`] of every task (a
/// blocking call starts at its issue), millions of times on a large trace,
/// and most tasks have no wait; a binary search over the waits for each
/// was 4% of `lumos replay` on a 1 GB trace. A bit per task and a count per
/// 64 tasks (3/16 of a byte per task) answer in O(1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct WaitIndex {
    /// Bit `t % 64` of word `t / 64` is set when task `t` has a wait.
    bits: Vec<u64>,
    /// Per word, how many waits the tasks before it have.
    before: Vec<u32>,
    /// How many waits the index was built from; a schedule whose waits
    /// were changed since (the field is public) is searched instead.
    waits: usize,
}

/// What [`WaitIndex::lookup`] says of a task.
enum Lookup {
    /// The task has no wait.
    Absent,
    /// Its wait is at this position of [`Schedule::waits`].
    At(usize),
    /// The index cannot tell: search.
    Unknown,
}

impl WaitIndex {
    /// The index of `waits` over `tasks` tasks; one that cannot tell
    /// anything (every lookup [`Lookup::Unknown`]) when the waits are not
    /// sorted by task, name a task twice or one out of range.
    fn of(waits: &[BlockingWait], tasks: usize) -> WaitIndex {
        let words = tasks.div_ceil(64);
        let mut bits = vec![0u64; words];
        let mut prev: Option<u32> = None;
        for w in waits {
            let t = w.task.0;
            if prev.is_some_and(|p| p >= t) || t as usize >= tasks {
                return WaitIndex {
                    waits: usize::MAX,
                    ..WaitIndex::default()
                };
            }
            prev = Some(t);
            bits[t as usize / 64] |= 1 << (t % 64);
        }
        let mut before = Vec::with_capacity(words);
        let mut count = 0u32;
        for &word in &bits {
            before.push(count);
            count += word.count_ones();
        }
        WaitIndex {
            bits,
            before,
            waits: waits.len(),
        }
    }

    /// Where task `t`'s wait is among `n_waits` waits.
    #[inline]
    fn lookup(&self, t: TaskId, n_waits: usize) -> Lookup {
        if n_waits != self.waits {
            return Lookup::Unknown;
        }
        let (word, bit) = (t.idx() / 64, t.0 % 64);
        let Some(&bits) = self.bits.get(word) else {
            return Lookup::Absent;
        };
        if bits & (1 << bit) == 0 {
            return Lookup::Absent;
        }
        let below = (bits & ((1u64 << bit) - 1)).count_ones();
        Lookup::At(self.before[word] as usize + below as usize)
    }
}

/// Replays `graph`: every task runs for its duration, as soon as its
/// dependencies and its processor allow, and never reads a measured time.
///
/// Returns [`SimError::Stuck`] instead of hanging when some tasks can never
/// start, and [`SimError::InvalidGraph`] when the graph's indices disagree.
/// A stream-tail wait that can never end is abandoned rather than stuck
/// ([`BlockingWait::abandoned`]).
pub fn simulate(graph: &Graph, opts: &SimOptions) -> Result<Schedule, SimError> {
    simulate_with_rendezvous(graph, &[], opts)
}

/// [`simulate`], with collective tasks coupled into rendezvous (multi-rank
/// jobs, see [`simulate_job`](crate::simulate_job)): each task of a
/// rendezvous starts as its own dependencies allow and ends at
/// `max(start of every task of the rendezvous) + its duration`, so it holds
/// its processor, its successors and any blocking call that waits for it
/// until the last participant has arrived.
///
/// A task may take part in at most one rendezvous. A rendezvous whose
/// participants can never all start (one waits, through the graph, for
/// another's end) leaves them unscheduled: [`SimError::Stuck`].
pub fn simulate_with_rendezvous(
    graph: &Graph,
    rendezvous: &[Rendezvous],
    opts: &SimOptions,
) -> Result<Schedule, SimError> {
    for scale in &opts.scales {
        if !scale.factor.is_finite() || scale.factor < 0.0 {
            return Err(SimError::InvalidOptions(format!(
                "duration factor {} for {:?} is not a finite non-negative number",
                scale.factor, scale.select
            )));
        }
    }
    if let Some(d) = opts
        .durations
        .as_deref()
        .filter(|d| d.len() != graph.tasks.len())
    {
        return Err(SimError::InvalidOptions(format!(
            "{} durations given for {} tasks",
            d.len(),
            graph.tasks.len()
        )));
    }
    let mut replay = Replay::new(graph, opts)?;
    replay.add_rendezvous(rendezvous)?;
    replay.run();
    replay.finish(opts)
}

/// A fixed edge as the hot loop reads it: 16 bytes, next to the other
/// edges out of the same task. `edge` carries flags in its top bits.
#[derive(Debug, Clone, Copy)]
struct Link {
    latency_ns: i64,
    to: u32,
    edge: u32,
}

/// Counts from the predecessor's start, so it fires when the task issues.
const START_ANCHORED: u32 = 1 << 31;
/// A launch edge: marks `to` as launched when the task issues.
const LAUNCH: u32 = 1 << 30;
/// A launch edge of a dropped kind: kept only to track launches.
const DROPPED: u32 = 1 << 29;
/// Not an edge of the graph: a launch call waits for this GPU task's end
/// because its stream's launch queue is full.
const QUEUE_FULL: u32 = 1 << 28;
const EDGE_INDEX: u32 = QUEUE_FULL - 1;

impl Link {
    #[inline]
    fn index(self) -> u32 {
        self.edge & EDGE_INDEX
    }
    #[inline]
    fn has(self, flag: u32) -> bool {
        self.edge & flag != 0
    }
}

/// A blocking call waiting for a GPU task that has not been scheduled yet.
/// Waiters of one task form a linked list through `next` so that no task
/// needs its own allocation.
#[derive(Debug, Clone, Copy)]
struct Waiter {
    call: u32,
    dep: u32,
    next: u32,
}

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not yet popped from the heap.
    Waiting,
    /// A blocking call that has issued and resolved its runtime dependencies.
    Issued,
    /// A rendezvous task that has started; it ends when the last
    /// participant starts.
    Arrived,
    /// Start and end are fixed.
    Scheduled,
}

/// Per-task state of one replay. Memory per task is kept small because at
/// a million tasks, zeroing fresh pages costs as much as the replay itself.
struct Replay<'g> {
    graph: &'g Graph,

    /// Fixed edges out of each task (CSR): `links[link_off[t]..link_off[t+1]]`.
    link_off: Vec<u32>,
    links: Vec<Link>,
    /// Next task on the same processor, or NONE.
    proc_next: Vec<u32>,
    /// Whether a launch edge (dropped or not) points to the task and its
    /// launch call has not issued yet.
    has_launch: Vec<bool>,
    /// Per processor: how many of its tasks have been launched (streams only).
    launched: Vec<u32>,
    /// (device, stream processor) for every GPU stream.
    streams: Vec<(i64, u32)>,

    /// Indices into Graph::runtime_deps, grouped by task.
    rt_order: Vec<u32>,
    /// Where a task's group starts in `rt_order`, NONE for most tasks.
    rt_first: Vec<u32>,
    waiter_head: Vec<u32>,
    waiters: Vec<Waiter>,

    /// Unmet fixed dependencies (edges and processor order) per task.
    pending: Vec<u32>,
    /// The latest constraint so far; the start once scheduled.
    earliest: Vec<i64>,
    bound: Vec<Bound>,
    state: Vec<State>,
    /// The duration until scheduled, then the end.
    end: Vec<i64>,
    scheduled: usize,
    waits: Vec<BlockingWait>,
    /// Calls whose wait was abandoned (see `abandon_one_wait`); empty
    /// until the first, so a replay that never gets stuck pays nothing.
    abandoned: Vec<bool>,
    /// Index into `waits` before which no call is still blocked.
    blocked_from: usize,
    /// Simulated time of the last task taken from the heap.
    now: i64,
    heap: BinaryHeap<Reverse<(i64, u32)>>,

    /// Rendezvous, when any: the rendezvous of each task (NONE for most),
    /// empty when there are none so plain replays pay one length check.
    rv_of: Vec<u32>,
    rendezvous: &'g [Rendezvous],
    /// Per rendezvous: participants started so far, and the latest start.
    rv_arrived: Vec<u32>,
    rv_latest: Vec<i64>,

    /// Set by another thread to stop the replay ([`SimOptions::cancel`]).
    cancel: Option<Cancel>,
    /// Tasks taken from the heap until the next look at `cancel`.
    until_check: u32,
    /// True once the replay stopped because `cancel` was set.
    cancelled: bool,
}

impl<'g> Replay<'g> {
    fn new(graph: &'g Graph, opts: &SimOptions) -> Result<Self, SimError> {
        let n = graph.tasks.len();
        if n >= NONE as usize || graph.edges.len() > EDGE_INDEX as usize {
            return Err(SimError::InvalidGraph(format!(
                "{n} tasks and {} edges exceed the index range",
                graph.edges.len()
            )));
        }
        let n_procs = graph.processors.len();

        let (proc_next, mut pending, pos_in_proc) = processor_order(graph)?;
        check_task_processors(graph, &pos_in_proc)?;
        let queue = launch_queue_waits(graph, opts, &pos_in_proc);
        let (link_off, links, has_launch) = dependency_links(graph, opts, &queue, &mut pending)?;
        check_runtime_deps(graph)?;
        let (rt_order, rt_first) = runtime_order(graph, opts);
        let streams: Vec<(i64, u32)> = graph
            .processors
            .iter()
            .enumerate()
            .filter_map(|(p, proc)| match proc.kind {
                ProcKind::Stream { device, .. } => Some((device, p as u32)),
                ProcKind::Thread { .. } => None,
            })
            .collect();

        let mut replay = Replay {
            graph,
            link_off,
            links,
            proc_next,
            has_launch,
            launched: vec![0; n_procs],
            streams,
            rt_order,
            rt_first,
            waiter_head: vec![NONE; n],
            waiters: Vec::new(),
            earliest: graph.tasks.iter().map(|t| t.release_ns).collect(),
            bound: vec![Bound::Release; n],
            state: vec![State::Waiting; n],
            end: scaled_durations(graph, opts),
            scheduled: 0,
            waits: Vec::new(),
            abandoned: Vec::new(),
            blocked_from: 0,
            now: i64::MIN,
            heap: BinaryHeap::new(),
            pending,
            rv_of: Vec::new(),
            rendezvous: &[],
            rv_arrived: Vec::new(),
            rv_latest: Vec::new(),
            cancel: opts.cancel.clone(),
            until_check: CANCEL_CHECK_EVERY,
            cancelled: false,
        };
        // GPU tasks nobody launches count as launched from the start, up to
        // the first one that waits for a launch call.
        for s in 0..replay.streams.len() {
            let p = replay.streams[s].1 as usize;
            replay.advance_launched(p);
        }
        for t in 0..n {
            if replay.pending[t] == 0 {
                replay.heap.push(Reverse((replay.earliest[t], t as u32)));
            }
        }
        Ok(replay)
    }

    /// Registers the rendezvous, after checking that they name existing
    /// tasks, each at most once.
    fn add_rendezvous(&mut self, rendezvous: &'g [Rendezvous]) -> Result<(), SimError> {
        if rendezvous.is_empty() {
            return Ok(());
        }
        let n = self.graph.tasks.len();
        let mut rv_of = vec![NONE; n];
        for (i, r) in rendezvous.iter().enumerate() {
            if r.tasks.is_empty() {
                return Err(SimError::InvalidGraph(format!(
                    "rendezvous {i} has no tasks"
                )));
            }
            for &t in &r.tasks {
                match rv_of.get(t.idx()) {
                    None => {
                        return Err(SimError::InvalidGraph(format!(
                            "rendezvous {i} names missing task {}",
                            t.0
                        )))
                    }
                    Some(&other) if other != NONE => {
                        return Err(SimError::InvalidGraph(format!(
                            "task {} is in rendezvous {other} and {i}",
                            t.0
                        )))
                    }
                    Some(_) => rv_of[t.idx()] = i as u32,
                }
            }
        }
        self.rv_of = rv_of;
        self.rendezvous = rendezvous;
        self.rv_arrived = vec![0; rendezvous.len()];
        self.rv_latest = vec![i64::MIN; rendezvous.len()];
        Ok(())
    }

    /// A rendezvous task has started at `now`. A participant that does not
    /// wait (an eager send) ends at once; when the last one arrives, every
    /// waiting participant ends: the heap pops in time order, so `now` is
    /// the latest start.
    fn arrive(&mut self, t: usize, now: i64) {
        self.state[t] = State::Arrived;
        let rv = self.rv_of[t] as usize;
        self.rv_arrived[rv] += 1;
        self.rv_latest[rv] = self.rv_latest[rv].max(now);
        let r = &self.rendezvous[rv];
        if let Some(pos) = r.tasks.iter().position(|m| m.idx() == t) {
            if !r.waits(pos) {
                let end = now.saturating_add(self.end[t]);
                self.complete(t, end);
            }
        }
        let r = &self.rendezvous[rv];
        if self.rv_arrived[rv] as usize == r.tasks.len() {
            let latest = self.rv_latest[rv];
            for pos in 0..r.tasks.len() {
                let r = &self.rendezvous[rv];
                if r.waits(pos) {
                    let m = r.tasks[pos].idx();
                    let end = latest.saturating_add(self.end[m]);
                    self.complete(m, end);
                }
            }
        }
    }

    /// Moves a stream's launched count past tasks that have no launch edge
    /// left to wait for (never had one, or already issued): they count as
    /// launched once their predecessor is.
    fn advance_launched(&mut self, p: usize) {
        let tasks = &self.graph.processors[p].tasks;
        let mut k = self.launched[p] as usize;
        while k < tasks.len() && !self.has_launch[tasks[k].idx()] {
            k += 1;
        }
        self.launched[p] = k as u32;
    }

    /// Applies one constraint to `to` and releases it once none are left.
    #[inline]
    fn satisfy(&mut self, to: u32, at: i64, why: Bound) {
        let ti = to as usize;
        if at > self.earliest[ti] {
            self.earliest[ti] = at;
            self.bound[ti] = why;
        }
        self.pending[ti] -= 1;
        if self.pending[ti] == 0 {
            self.heap.push(Reverse((self.earliest[ti], to)));
        }
    }

    /// Everything that happens at the moment a task starts issuing: its
    /// launches become visible to stream-tail waits, and its start-anchored
    /// successors learn their earliest start.
    #[inline]
    fn issue(&mut self, t: usize, at: i64) {
        for k in self.link_off[t]..self.link_off[t + 1] {
            let link = self.links[k as usize];
            if link.has(LAUNCH) {
                // The tail only moves over a contiguous prefix of launched
                // tasks: a task launched early by another thread must not
                // make a wait resolve past an earlier task still unlaunched,
                // which would deadlock on the stream order.
                let g = link.to as usize;
                let p = self.graph.tasks[g].proc.idx();
                self.has_launch[g] = false;
                self.advance_launched(p);
            }
            if link.has(START_ANCHORED) && !link.has(DROPPED) {
                self.satisfy(
                    link.to,
                    at.saturating_add(link.latency_ns),
                    Bound::Edge(link.index()),
                );
            }
        }
    }

    /// Makes blocking call `call` wait for GPU task `on`: at once if `on` is
    /// already scheduled (its end is known, so it is never waited on as
    /// pending), otherwise when `on` gets scheduled.
    fn wait_for(&mut self, call: usize, dep: u32, on: u32) {
        let oi = on as usize;
        if self.state[oi] == State::Scheduled {
            let at = self.end[oi].saturating_add(self.graph.runtime_deps[dep as usize].latency_ns);
            if at > self.earliest[call] {
                self.earliest[call] = at;
                self.bound[call] = Bound::Runtime {
                    dep,
                    on: TaskId(on),
                };
            }
        } else {
            self.waiters.push(Waiter {
                call: call as u32,
                dep,
                next: self.waiter_head[oi],
            });
            self.waiter_head[oi] = (self.waiters.len() - 1) as u32;
            self.pending[call] += 1;
        }
    }

    /// The last task launched onto stream processor `p`, if any.
    fn stream_tail(&self, p: usize) -> Option<u32> {
        let launched = self.launched[p] as usize;
        (launched > 0).then(|| self.graph.processors[p].tasks[launched - 1].0)
    }

    /// Resolves a blocking call's runtime dependencies, once, against what
    /// has been launched by now.
    fn resolve(&mut self, call: usize) {
        let mut k = self.rt_first[call] as usize;
        while k < self.rt_order.len() {
            let dep = self.rt_order[k];
            let rt = self.graph.runtime_deps[dep as usize];
            if rt.task.idx() != call {
                break;
            }
            match rt.target {
                WaitTarget::Task(on) => self.wait_for(call, dep, on.0),
                WaitTarget::StreamTail(p) => {
                    if let Some(on) = self.stream_tail(p.idx()) {
                        self.wait_for(call, dep, on);
                    }
                }
                WaitTarget::DeviceTail(device) => {
                    for s in 0..self.streams.len() {
                        let (d, p) = self.streams[s];
                        if d != device {
                            continue;
                        }
                        if let Some(on) = self.stream_tail(p as usize) {
                            self.wait_for(call, dep, on);
                        }
                    }
                }
            }
            k += 1;
        }
    }

    /// Replays until every task is scheduled or nothing more can run.
    fn run(&mut self) {
        // A replay asked to stop before it began does none of its work.
        if self.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
            self.cancelled = true;
            return;
        }
        loop {
            self.drain();
            if self.cancelled
                || self.scheduled == self.graph.tasks.len()
                || !self.abandon_one_wait()
            {
                return;
            }
        }
    }

    /// The replay is stuck but a call still waits for a stream tail: frees
    /// the one that issued first from its waits, at the current time. The
    /// builder keeps waits acyclic on measured times; a tail the replay
    /// resolves differently (dropped events, what-ifs) can still depend on
    /// work launched after the call. CUDA would not stall there: a stream
    /// wait never waits for work not yet submitted. A wait that names its
    /// task is fixed, checkable before the replay, and never abandoned.
    fn abandon_one_wait(&mut self) -> bool {
        while let Some(w) = self.waits.get(self.blocked_from) {
            let c = w.task.idx();
            self.blocked_from += 1;
            // Issued calls pend only on their waits.
            if self.state[c] != State::Issued || self.pending[c] == 0 || self.names_its_task(c) {
                continue;
            }
            if self.abandoned.is_empty() {
                self.abandoned = vec![false; self.graph.tasks.len()];
            }
            self.abandoned[c] = true;
            self.waits[self.blocked_from - 1].abandoned = true;
            self.pending[c] = 0;
            self.earliest[c] = self.earliest[c].max(self.now);
            self.heap.push(Reverse((self.earliest[c], c as u32)));
            return true;
        }
        false
    }

    /// True when one of the call's runtime dependencies names its task.
    fn names_its_task(&self, call: usize) -> bool {
        let first = self.rt_first[call] as usize;
        self.rt_order[first..]
            .iter()
            .map(|&d| self.graph.runtime_deps[d as usize])
            .take_while(|d| d.task.idx() == call)
            .any(|d| matches!(d.target, WaitTarget::Task(_)))
    }

    fn drain(&mut self) {
        while let Some(Reverse((now, t))) = self.heap.pop() {
            if self.stop_asked() {
                return;
            }
            self.now = now;
            let ti = t as usize;
            if self.rt_first[ti] != NONE && self.state[ti] == State::Waiting {
                // Resolve at the moment the call would start, so a stream
                // tail sees exactly the launches issued before it.
                self.state[ti] = State::Issued;
                self.waits.push(BlockingWait {
                    task: TaskId(t),
                    issue_ns: now,
                    issue_bound: self.bound[ti],
                    abandoned: false,
                });
                self.issue(ti, now);
                self.resolve(ti);
                if self.pending[ti] > 0 {
                    continue;
                }
                if self.earliest[ti] > now {
                    // Other tasks may start while it is blocked.
                    self.heap.push(Reverse((self.earliest[ti], t)));
                    continue;
                }
            }
            let issued = self.state[ti] == State::Issued;
            // `earliest[ti]` is `now` and stays as the start.
            if !issued {
                self.issue(ti, now);
            }
            if !self.rv_of.is_empty() && self.rv_of[ti] != NONE {
                self.arrive(ti, now);
                continue;
            }
            let end = now.saturating_add(self.end[ti]);
            self.complete(ti, end);
        }
    }

    /// True, every [`CANCEL_CHECK_EVERY`] tasks, when the caller has set
    /// [`SimOptions::cancel`]; the replay then ends with
    /// [`SimError::Cancelled`].
    #[inline]
    fn stop_asked(&mut self) -> bool {
        self.until_check -= 1;
        if self.until_check > 0 {
            return false;
        }
        self.until_check = CANCEL_CHECK_EVERY;
        self.cancelled = self.cancel.as_ref().is_some_and(Cancel::is_cancelled);
        self.cancelled
    }

    /// Fixes a started task's end and releases what waits for it: its
    /// end-anchored successors, the next task on its processor, and
    /// blocking calls waiting on it.
    fn complete(&mut self, ti: usize, end: i64) {
        let t = ti as u32;
        self.end[ti] = end;
        self.state[ti] = State::Scheduled;
        self.scheduled += 1;
        for k in self.link_off[ti]..self.link_off[ti + 1] {
            let link = self.links[k as usize];
            if !link.has(START_ANCHORED | DROPPED) {
                let why = if link.has(QUEUE_FULL) {
                    Bound::LaunchQueue { on: TaskId(t) }
                } else {
                    Bound::Edge(link.index())
                };
                self.satisfy(link.to, end.saturating_add(link.latency_ns), why);
            }
        }
        let next = self.proc_next[ti];
        if next != NONE {
            self.satisfy(next, end, Bound::Processor { prev: TaskId(t) });
        }
        let mut w = self.waiter_head[ti];
        while w != NONE {
            let waiter = self.waiters[w as usize];
            w = waiter.next;
            if !self.abandoned.is_empty() && self.abandoned[waiter.call as usize] {
                continue;
            }
            let latency = self.graph.runtime_deps[waiter.dep as usize].latency_ns;
            self.satisfy(
                waiter.call,
                end.saturating_add(latency),
                Bound::Runtime {
                    dep: waiter.dep,
                    on: TaskId(t),
                },
            );
        }
    }

    /// A task that ended at the clock's last instant, if any (times
    /// saturate rather than wrap: it ran past it, and every time after it
    /// is meaningless). Preferably one whose own duration took it there
    /// (from a start within the range), rather than one that waited for
    /// it: the culprit, not the first of its waiters.
    fn past_the_clock(&self, opts: &SimOptions) -> Option<usize> {
        let n = self.graph.tasks.len();
        let first = (0..n).find(|&t| self.end[t] == i64::MAX)?;
        // The durations again, on this error's path only.
        let own = scaled_durations(self.graph, opts);
        let crossed = (0..n).find(|&t| {
            self.end[t] == i64::MAX
                && self.earliest[t] < i64::MAX
                && self.earliest[t].saturating_add(own[t]) == i64::MAX
        });
        Some(crossed.unwrap_or(first))
    }

    fn finish(mut self, opts: &SimOptions) -> Result<Schedule, SimError> {
        if self.cancelled {
            // Whoever set the flag learns that it cut this replay short.
            if let Some(c) = &self.cancel {
                c.mark_stopped();
            }
            return Err(SimError::Cancelled);
        }
        let n = self.graph.tasks.len();
        if self.scheduled < n {
            let example = self
                .state
                .iter()
                .position(|&s| s != State::Scheduled)
                .unwrap_or(0);
            let name_id = self.graph.tasks[example].name.0 as usize;
            return Err(SimError::Stuck {
                stuck: n - self.scheduled,
                example: TaskId(example as u32),
                example_name: self.graph.names.get(name_id).cloned().unwrap_or_default(),
            });
        }
        // Times saturate rather than wrap: a task that ends at the clock's
        // last instant ran past it (durations, waits or factors that add
        // up past 292 years), and every time after it is meaningless.
        if let Some(t) = self.past_the_clock(opts) {
            let name_id = self.graph.tasks[t].name.0 as usize;
            return Err(SimError::ClockOverflow {
                example: TaskId(t as u32),
                example_name: self.graph.names.get(name_id).cloned().unwrap_or_default(),
            });
        }
        self.waits.sort_unstable_by_key(|w| w.task);
        Ok(Schedule::new(
            self.earliest,
            self.end,
            self.bound,
            self.waits,
        ))
    }
}

/// Processor order as an implicit dependency on the previous task (which
/// also makes a processor's free time that task's end): each task's next
/// task on its processor, the count of its unmet dependencies so far, and
/// its position in its processor's list.
#[allow(clippy::type_complexity)] // three columns indexed by task
fn processor_order(graph: &Graph) -> Result<(Vec<u32>, Vec<u32>, Vec<u32>), SimError> {
    let n = graph.tasks.len();
    let bad = |why: String| Err(SimError::InvalidGraph(why));
    let mut pos_in_proc = vec![NONE; n];
    let mut proc_next = vec![NONE; n];
    let mut pending = vec![0u32; n];
    for (p, proc) in graph.processors.iter().enumerate() {
        let mut prev = NONE;
        for (pos, &t) in proc.tasks.iter().enumerate() {
            let ti = t.idx();
            if ti >= n {
                return bad(format!("processor {p} lists missing task {}", t.0));
            }
            if pos_in_proc[ti] != NONE {
                return bad(format!("task {} is listed twice on processors", t.0));
            }
            pos_in_proc[ti] = pos as u32;
            if prev != NONE {
                proc_next[prev as usize] = t.0;
                pending[ti] += 1;
            }
            prev = t.0;
        }
    }
    Ok((proc_next, pending, pos_in_proc))
}

/// Every task runs on a processor that lists it where `pos_in_proc` says.
fn check_task_processors(graph: &Graph, pos_in_proc: &[u32]) -> Result<(), SimError> {
    let bad = |why: String| Err(SimError::InvalidGraph(why));
    let n_procs = graph.processors.len();
    // Checked task by task rather than list by list: processor lists
    // interleave, so reading `Task::proc` in list order would jump
    // around the task array.
    for (t, task) in graph.tasks.iter().enumerate() {
        let p = task.proc.idx();
        let pos = pos_in_proc[t];
        let listed_here = graph
            .processors
            .get(p)
            .is_some_and(|proc| proc.tasks.get(pos as usize) == Some(&TaskId(t as u32)));
        if !listed_here {
            if p >= n_procs {
                return bad(format!("task {t} runs on missing processor {p}"));
            }
            return bad(format!(
                "task {t} is not in the task list of its processor {p}"
            ));
        }
    }

    Ok(())
}

/// The edges as outgoing links per task (CSR), counting each kept edge as
/// a dependency of its target in `pending`; launch edges are kept even
/// when dropped (marked so), since they tell which launch a GPU task waits
/// for. The launch-queue waits (`queue`: GPU task, then the call that
/// waits for its end) join them as links of their own kind. Also whether
/// each task has a launch edge.
#[allow(clippy::type_complexity)] // the CSR arrays and a column by task
fn dependency_links(
    graph: &Graph,
    opts: &SimOptions,
    queue: &[(u32, u32)],
    pending: &mut [u32],
) -> Result<(Vec<u32>, Vec<Link>, Vec<bool>), SimError> {
    let n = graph.tasks.len();
    let bad = |why: String| Err(SimError::InvalidGraph(why));
    // CSR in place: count into link_off[from + 1], prefix-sum, fill
    // using link_off[from] as the cursor, then shift back by one.
    let mut link_off = vec![0u32; n + 1];
    let mut has_launch = vec![false; n];
    for (i, e) in graph.edges.iter().enumerate() {
        if e.from.idx() >= n || e.to.idx() >= n {
            return bad(format!(
                "edge {i} joins task {} to task {}, but there are {n} tasks",
                e.from.0, e.to.0
            ));
        }
        let launch = e.kind == DepKind::Launch;
        has_launch[e.to.idx()] |= launch;
        let dropped = opts.drops(e.kind);
        if !dropped {
            pending[e.to.idx()] += 1;
        }
        if launch || !dropped {
            link_off[e.from.idx() + 1] += 1;
        }
    }
    for &(gpu, call) in queue {
        link_off[gpu as usize + 1] += 1;
        pending[call as usize] += 1;
    }
    for t in 0..n {
        link_off[t + 1] += link_off[t];
    }
    let mut links = vec![
        Link {
            latency_ns: 0,
            to: NONE,
            edge: 0,
        };
        link_off[n] as usize
    ];
    for (i, e) in graph.edges.iter().enumerate() {
        let launch = e.kind == DepKind::Launch;
        let dropped = opts.drops(e.kind);
        if !launch && dropped {
            continue;
        }
        let mut edge = i as u32;
        if e.anchor == Anchor::Start {
            edge |= START_ANCHORED;
        }
        if launch {
            edge |= LAUNCH;
        }
        if dropped {
            edge |= DROPPED;
        }
        let cursor = &mut link_off[e.from.idx()];
        links[*cursor as usize] = Link {
            latency_ns: e.latency_ns,
            to: e.to.0,
            edge,
        };
        *cursor += 1;
    }
    for &(gpu, call) in queue {
        let cursor = &mut link_off[gpu as usize];
        links[*cursor as usize] = Link {
            latency_ns: 0,
            to: call,
            edge: QUEUE_FULL,
        };
        *cursor += 1;
    }
    link_off.copy_within(0..n, 1);
    link_off[0] = 0;

    Ok((link_off, links, has_launch))
}

/// With a launch-queue depth `q`: for the `k`-th task of each stream
/// (`k >= q`), its launch call waits for the end of the stream's task
/// `k - q`. Pairs that would make a call wait for its own work (one call
/// launching more than `q` tasks, a CUDA graph) or for a task launched later
/// on the same thread are left out: a real queue never waits for work not
/// yet submitted. Returns (GPU task, call) pairs; none without a depth, or
/// when launch edges are dropped.
fn launch_queue_waits(graph: &Graph, opts: &SimOptions, pos_in_proc: &[u32]) -> Vec<(u32, u32)> {
    let Some(q) = opts.launch_queue.map(|q| q.max(1) as usize) else {
        return Vec::new();
    };
    let n = graph.tasks.len();
    if opts.drops(DepKind::Launch) {
        return Vec::new();
    }
    let mut launcher = vec![NONE; n];
    for e in &graph.edges {
        if e.kind == DepKind::Launch && e.to.idx() < n && e.from.idx() < n {
            launcher[e.to.idx()] = e.from.0;
        }
    }
    let mut out = Vec::new();
    for proc in graph.processors.iter().filter(|p| p.is_stream()) {
        for (k, &t) in proc.tasks.iter().enumerate().skip(q) {
            let call = launcher[t.idx()];
            if call == NONE {
                continue;
            }
            let earlier = proc.tasks[k - q];
            let earlier_call = launcher[earlier.idx()];
            let launched_after = earlier_call != NONE
                && (earlier_call == call
                    || graph.tasks[earlier_call as usize].proc == graph.tasks[call as usize].proc
                        && pos_in_proc[earlier_call as usize] > pos_in_proc[call as usize]);
            if !launched_after {
                out.push((earlier.0, call));
            }
        }
    }
    out
}

/// Every runtime dependency belongs to a task and waits for a task or a
/// GPU stream that exist.
fn check_runtime_deps(graph: &Graph) -> Result<(), SimError> {
    let n = graph.tasks.len();
    let bad = |why: String| Err(SimError::InvalidGraph(why));
    for (i, dep) in graph.runtime_deps.iter().enumerate() {
        if dep.task.idx() >= n {
            return bad(format!(
                "runtime dep {i} belongs to missing task {}",
                dep.task.0
            ));
        }
        match dep.target {
            WaitTarget::StreamTail(p)
                if !graph.processors.get(p.idx()).is_some_and(|p| p.is_stream()) =>
            {
                return bad(format!(
                    "runtime dep {i} waits for processor {}, which is not a GPU stream",
                    p.0
                ));
            }
            WaitTarget::Task(t) if t.idx() >= n => {
                return bad(format!("runtime dep {i} waits for missing task {}", t.0));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Runtime dependencies ordered by their task (none when syncs are
/// dropped), and each task's first one in that order.
fn runtime_order(graph: &Graph, opts: &SimOptions) -> (Vec<u32>, Vec<u32>) {
    let n = graph.tasks.len();
    let mut rt_order: Vec<u32> = if opts.drops(DepKind::Sync) {
        Vec::new()
    } else {
        (0..graph.runtime_deps.len() as u32).collect()
    };
    rt_order.sort_by_key(|&i| graph.runtime_deps[i as usize].task);
    let mut rt_first = vec![NONE; n];
    for (k, &i) in rt_order.iter().enumerate().rev() {
        rt_first[graph.runtime_deps[i as usize].task.idx()] = k as u32;
    }

    (rt_order, rt_first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_cancel_flag_is_seen_within_one_check_interval() {
        let mut graph = Graph::default();
        graph.processors.push(lumos_graph::Processor {
            kind: ProcKind::Thread { pid: 1, tid: 1 },
            tasks: Vec::new(),
        });
        let cancel = Cancel::new();
        let opts = SimOptions::default().cancel_with(cancel.clone());
        let mut replay = Replay::new(&graph, &opts).expect("an empty graph replays");
        for _ in 0..3 * CANCEL_CHECK_EVERY {
            assert!(!replay.stop_asked(), "no stop before the flag is set");
        }
        cancel.cancel();
        let asked = (1..=CANCEL_CHECK_EVERY).find(|_| replay.stop_asked());
        assert!(
            asked.is_some(),
            "the flag is seen within {CANCEL_CHECK_EVERY} tasks"
        );
        assert!(replay.cancelled);
        assert!(!cancel.stopped_work(), "not stopped until the replay ends");
        assert_eq!(replay.finish(&opts).err(), Some(SimError::Cancelled));
        assert!(cancel.stopped_work(), "the replay says it stopped early");
    }

    fn wait_of(t: u32) -> BlockingWait {
        BlockingWait {
            task: TaskId(t),
            issue_ns: i64::from(t),
            issue_bound: Bound::Release,
            abandoned: false,
        }
    }

    /// A schedule of `tasks` tasks whose waits are at `with_wait`.
    fn schedule_with_waits(tasks: u32, with_wait: &[u32]) -> Schedule {
        let n = tasks as usize;
        Schedule::new(
            vec![0; n],
            vec![0; n],
            vec![Bound::Release; n],
            with_wait.iter().map(|&t| wait_of(t)).collect(),
        )
    }

    /// What a plain binary search over the waits finds.
    fn searched(s: &Schedule, t: u32) -> Option<&BlockingWait> {
        s.waits
            .binary_search_by_key(&TaskId(t), |w| w.task)
            .ok()
            .map(|i| &s.waits[i])
    }

    /// The index finds exactly the waits a binary search finds, wherever
    /// the waits sit: spread, bunched at either end, in runs across word
    /// boundaries, one alone, none, every task.
    #[test]
    fn wait_lookup_agrees_with_a_binary_search_however_waits_are_spread() {
        for n in [1u32, 63, 64, 65, 1000] {
            let layouts: Vec<Vec<u32>> = vec![
                vec![],
                vec![0],
                vec![n - 1],
                vec![n / 2],
                (0..n).collect(),
                (0..n).step_by(7).collect(),
                (0..n.min(40)).collect(),
                (n.saturating_sub(40)..n).collect(),
                (0..n).filter(|t| (t * t) % 13 == 1).collect(),
                (0..n).filter(|t| t % 64 == 63 || t % 64 == 0).collect(),
            ];
            for with_wait in layouts {
                let s = schedule_with_waits(n, &with_wait);
                for t in 0..n + 70 {
                    assert_eq!(
                        s.wait(TaskId(t)),
                        searched(&s, t),
                        "task {t} of {with_wait:?}"
                    );
                }
            }
        }
    }

    /// Waits the index cannot describe (unsorted, a task twice, out of
    /// range), or waits changed after the schedule was made, are searched
    /// rather than trusted to the index.
    #[test]
    fn wait_lookup_searches_when_the_index_cannot_tell() {
        let mut s = schedule_with_waits(100, &[3, 50, 99]);
        s.waits.push(wait_of(120));
        assert_eq!(s.wait(TaskId(120)).map(|w| w.task), Some(TaskId(120)));
        assert_eq!(s.wait(TaskId(50)).map(|w| w.task), Some(TaskId(50)));
        let out_of_range = schedule_with_waits(10, &[2, 12]);
        assert_eq!(
            out_of_range.wait(TaskId(12)).map(|w| w.task),
            Some(TaskId(12))
        );
        let twice = schedule_with_waits(10, &[2, 2, 5]);
        assert!(twice.wait(TaskId(5)).is_some());
        assert!(twice.wait(TaskId(4)).is_none());
        let mut empty = Schedule::default();
        empty.waits.push(wait_of(0));
        assert!(empty.wait(TaskId(0)).is_some());
    }

    /// Equality is that of what the schedule says: one whose waits were
    /// set after it was made equals one made with them.
    #[test]
    fn schedules_compare_their_times_and_waits_not_their_index() {
        let made = schedule_with_waits(10, &[2, 5]);
        let mut edited = schedule_with_waits(10, &[2]);
        assert_ne!(made, edited);
        edited.waits.push(wait_of(5));
        assert_eq!(made, edited);
        edited.end_ns[3] += 1;
        assert_ne!(made, edited);
    }
}
