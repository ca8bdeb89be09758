//! Metrics over a timeline of task spans: step spans, the compute /
//! communication breakdown and the GPU-busy timeline.
//!
//! Every function takes its times through [`TaskTimes`], so the measured
//! spans ([`Measured::tasks`](lumos_graph::Measured::tasks)) and a replayed
//! [`Schedule`] go through the same code and are comparable by construction.

use lumos_graph::{Graph, Span, TaskId};

use crate::scheduler::Schedule;

/// A start and end time for every task of a graph, in ns since the window
/// start.
pub trait TaskTimes {
    /// Number of tasks covered.
    fn task_count(&self) -> usize;
    /// Start of task `t`.
    fn start_of(&self, t: TaskId) -> i64;
    /// End of task `t`.
    fn end_of(&self, t: TaskId) -> i64;
}

/// A blocking call starts, as a profiler would record it, when it was issued,
/// not when its wait ended: metrics see the call's whole span, as on the
/// measured side.
impl TaskTimes for Schedule {
    #[inline]
    fn task_count(&self) -> usize {
        self.start_ns.len()
    }
    #[inline]
    fn start_of(&self, t: TaskId) -> i64 {
        let start = self.start_ns[t.idx()];
        self.wait(t).map_or(start, |w| w.issue_ns.min(start))
    }
    #[inline]
    fn end_of(&self, t: TaskId) -> i64 {
        self.end_ns[t.idx()]
    }
}

/// A run of consecutive tasks of a [`Schedule`], numbered from 0: one
/// stage's (or one rank's) tasks in a joint schedule, with a blocking call
/// starting when it was issued, as for the whole schedule.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleSlice<'a> {
    /// The joint schedule.
    pub schedule: &'a Schedule,
    /// The first task of the run in the joint schedule.
    pub offset: u32,
    /// How many tasks the run holds.
    pub len: usize,
}

impl TaskTimes for ScheduleSlice<'_> {
    #[inline]
    fn task_count(&self) -> usize {
        self.len
    }
    #[inline]
    fn start_of(&self, t: TaskId) -> i64 {
        self.schedule.start_of(TaskId(t.0 + self.offset))
    }
    #[inline]
    fn end_of(&self, t: TaskId) -> i64 {
        self.schedule.end_of(TaskId(t.0 + self.offset))
    }
}

impl TaskTimes for [Span] {
    #[inline]
    fn task_count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn start_of(&self, t: TaskId) -> i64 {
        self[t.idx()].start_ns
    }
    #[inline]
    fn end_of(&self, t: TaskId) -> i64 {
        self[t.idx()].end_ns
    }
}

impl TaskTimes for Vec<Span> {
    #[inline]
    fn task_count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn start_of(&self, t: TaskId) -> i64 {
        self[t.idx()].start_ns
    }
    #[inline]
    fn end_of(&self, t: TaskId) -> i64 {
        self[t.idx()].end_ns
    }
}

/// Task times held as two parallel slices.
#[derive(Debug, Clone, Copy)]
pub struct SpanColumns<'a> {
    /// Start of each task.
    pub start_ns: &'a [i64],
    /// End of each task.
    pub end_ns: &'a [i64],
}

impl TaskTimes for SpanColumns<'_> {
    #[inline]
    fn task_count(&self) -> usize {
        self.start_ns.len()
    }
    #[inline]
    fn start_of(&self, t: TaskId) -> i64 {
        self.start_ns[t.idx()]
    }
    #[inline]
    fn end_of(&self, t: TaskId) -> i64 {
        self.end_ns[t.idx()]
    }
}

/// From the earliest start to the latest end of any task; an empty
/// timeline gives the empty span at 0.
pub fn whole_span<T: TaskTimes + ?Sized>(times: &T) -> Span {
    let n = times.task_count();
    if n == 0 {
        return Span::default();
    }
    let mut span = Span {
        start_ns: i64::MAX,
        end_ns: i64::MIN,
    };
    for i in 0..n {
        let t = TaskId(i as u32);
        span.start_ns = span.start_ns.min(times.start_of(t));
        span.end_ns = span.end_ns.max(times.end_of(t));
    }
    span
}

/// The window of a rank: from the earlier of its first task's start and
/// its first step's start to the later of its last task's end and its
/// last step's end, `steps` being [`step_spans`] of the same times.
///
/// This is the one "whole window" every report states (`lumos replay`'s
/// `whole window` row and breakdown, `lumos predict`'s breakdown of every
/// step together): the tasks alone ([`whole_span`]) missed a step
/// annotation's lead before its first CPU task (the DLRM rank 0's step
/// of 14.455 ms sat in a "window" of 14.428 ms), and the steps alone
/// (first step's start to last step's end) missed work before the first
/// step and after the last (the recsys rank: 465.171 ms against the tasks'
/// 465.269 ms). With both, every step lies inside the window, whatever the
/// trace; without steps it is [`whole_span`].
pub fn window_span<T: TaskTimes + ?Sized>(times: &T, steps: &[Span]) -> Span {
    let mut w = whole_span(times);
    let n = times.task_count();
    for (k, s) in steps.iter().enumerate() {
        if n == 0 && k == 0 {
            w = *s;
        }
        w.start_ns = w.start_ns.min(s.start_ns);
        w.end_ns = w.end_ns.max(s.end_ns);
    }
    w
}

/// The `ProfilerStep#N` annotation of each step, rebuilt from its tasks:
/// `start(first_task) - lead_ns` to `end(last_task) + tail_ns`. On measured
/// times this is the recorded annotation; on replayed times it is the same
/// annotation moved with its CPU tasks. It ignores GPU work still running
/// when the CPU leaves the step.
///
/// The one rule for a step annotation's place: [`step_spans`] starts from
/// it, and the written timeline (lumos-report's `Timeline`) pins each step
/// annotation here. The timeline then fits it between the slices of its
/// thread (slices must nest): it clips the end where the thread's next
/// task outside the annotation starts, and the start where the one before
/// it ends, never inside the annotation's own tasks. The two differ only
/// where that clip binds: (a) the measured annotation ended during a call
/// (the call starts inside the step, so it is one of its tasks, but ends
/// after it, so `last_task` is the task before and `tail_ns` runs into
/// the call; a nested timeline cannot hold that), or (b) a replay starts
/// the next task on the thread before `end(last_task) + tail_ns` (its
/// dependency's latency took less than the measured gap). No corpus
/// trace has (a) and no corpus what-if makes (b) (lumos-report's
/// `tests/timeline.rs` checks the written annotations against this rule).
/// Making the clip part of this rule needs each step to name the task
/// after it on its thread (a [`Step`](lumos_graph::Step) field, kept by
/// merges, predicted stages and `.lgraph` files: a predicted stage's
/// copy in lumos-predict's outcome holds no processors to find it by);
/// (a) cannot be written nested at all, and a call straddling the start
/// is not one of the step's tasks, so the graph cannot tell it from one
/// that ended before the step.
pub fn annotation_spans<T: TaskTimes + ?Sized>(graph: &Graph, times: &T) -> Vec<Span> {
    graph
        .steps
        .iter()
        .map(|step| Span {
            start_ns: times.start_of(step.first_task).saturating_sub(step.lead_ns),
            end_ns: times.end_of(step.last_task).saturating_add(step.tail_ns),
        })
        .collect()
}

/// The span of each step, used for step time, for measured and replayed
/// times alike (method section 8):
///
/// - start: the annotation's start, `start(first_task) - lead_ns`;
/// - end: the later of the annotation's end, `end(last_task) + tail_ns`, and
///   the end of every GPU task in [`Step::tasks`](lumos_graph::Step::tasks),
///   so a step owns the GPU work it launched even when the GPU lags the CPU.
///
/// `annotations`, when given (measured [`Measured::step_annotations`]), are
/// used as the annotation spans instead of rebuilding them; on measured
/// times both give the same result, since the graph's lead and tail are
/// measured from those annotations. A graph with no steps gives one span,
/// the whole timeline.
///
/// [`Measured::step_annotations`]: lumos_graph::Measured::step_annotations
pub fn step_spans<T: TaskTimes + ?Sized>(
    graph: &Graph,
    times: &T,
    annotations: Option<&[Span]>,
) -> Vec<Span> {
    if graph.steps.is_empty() {
        return vec![whole_span(times)];
    }
    let rebuilt = annotation_spans(graph, times);
    graph
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let mut span = annotations
                .and_then(|a| a.get(i).copied())
                .unwrap_or(rebuilt[i]);
            for &t in &step.tasks {
                if graph.tasks[t.idx()].kind.is_gpu() {
                    span.end_ns = span.end_ns.max(times.end_of(t));
                }
            }
            span
        })
        .collect()
}

/// How a window's time divides between GPU compute and communication
/// (method section 5), from the union of busy intervals over all streams.
/// The four parts add up to `total_ns`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// Compute running while no communication runs: |C \ M|.
    pub exposed_compute_ns: i64,
    /// Compute and communication running together: |C ∩ M|.
    pub overlapped_ns: i64,
    /// Communication running while no compute runs: |M \ C|.
    pub exposed_comm_ns: i64,
    /// No GPU task running: window − |C ∪ M|.
    pub idle_ns: i64,
    /// Length of the window.
    pub total_ns: i64,
}

impl Breakdown {
    /// The breakdown of a window `total_ns` long in which compute runs
    /// `compute_ns` (|C|), communication `comm_ns` (|M|) and either of
    /// them `busy_ns` (|C ∪ M|). Saturating: hostile spans near `i64`'s
    /// ends must not overflow.
    pub fn from_measures(compute_ns: i64, comm_ns: i64, busy_ns: i64, total_ns: i64) -> Breakdown {
        let overlapped = compute_ns.saturating_add(comm_ns).saturating_sub(busy_ns);
        Breakdown {
            exposed_compute_ns: compute_ns.saturating_sub(overlapped),
            overlapped_ns: overlapped,
            exposed_comm_ns: comm_ns.saturating_sub(overlapped),
            idle_ns: total_ns.saturating_sub(busy_ns),
            total_ns,
        }
    }

    /// Time at least one GPU task runs: |C ∪ M|.
    pub fn busy_ns(&self) -> i64 {
        self.exposed_compute_ns
            .saturating_add(self.overlapped_ns)
            .saturating_add(self.exposed_comm_ns)
    }
}

/// One end of a GPU task's interval, for the sweep.
#[derive(Debug, Clone, Copy)]
struct Boundary {
    at: i64,
    compute: i32,
    comm: i32,
}

/// Splits `window` into exposed compute, overlapped, exposed communication
/// and idle time. C is the union of non-communication GPU tasks
/// ([`Task::collective`](lumos_graph::Task::collective) is `None`), M the
/// union of communication tasks, over every stream; tasks are clipped to the
/// window. O(n log n) in the number of GPU tasks.
pub fn breakdown<T: TaskTimes + ?Sized>(graph: &Graph, times: &T, window: Span) -> Breakdown {
    let total_ns = window.end_ns.saturating_sub(window.start_ns).max(0);
    let mut bounds = Vec::new();
    for (i, task) in graph.tasks.iter().enumerate() {
        if !task.kind.is_gpu() {
            continue;
        }
        let t = TaskId(i as u32);
        let start = times.start_of(t).max(window.start_ns);
        let end = times.end_of(t).min(window.end_ns);
        if start >= end {
            continue;
        }
        let (compute, comm) = if task.is_comm() { (0, 1) } else { (1, 0) };
        bounds.push(Boundary {
            at: start,
            compute,
            comm,
        });
        bounds.push(Boundary {
            at: end,
            compute: -compute,
            comm: -comm,
        });
    }
    bounds.sort_unstable_by_key(|b| b.at);
    // Boundaries at the same instant leave zero-length segments between
    // them, so their order within an instant does not matter.
    let (mut compute, mut comm) = (0i32, 0i32);
    let (mut c, mut m, mut busy) = (0i64, 0i64, 0i64);
    let mut prev = window.start_ns;
    for b in &bounds {
        let len = b.at.saturating_sub(prev);
        if compute > 0 {
            c = c.saturating_add(len);
        }
        if comm > 0 {
            m = m.saturating_add(len);
        }
        if compute > 0 || comm > 0 {
            busy = busy.saturating_add(len);
        }
        compute += b.compute;
        comm += b.comm;
        prev = b.at;
    }
    Breakdown::from_measures(c, m, busy, total_ns)
}

/// The union of GPU busy intervals inside `window`, sorted and disjoint.
pub fn gpu_busy_intervals<T: TaskTimes + ?Sized>(
    graph: &Graph,
    times: &T,
    window: Span,
) -> Vec<Span> {
    let mut spans: Vec<Span> = graph
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, task)| task.kind.is_gpu())
        .filter_map(|(i, _)| {
            let t = TaskId(i as u32);
            let start = times.start_of(t).max(window.start_ns);
            let end = times.end_of(t).min(window.end_ns);
            (start < end).then_some(Span {
                start_ns: start,
                end_ns: end,
            })
        })
        .collect();
    spans.sort_unstable_by_key(|s| s.start_ns);
    let mut merged: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match merged.last_mut() {
            Some(last) if s.start_ns <= last.end_ns => last.end_ns = last.end_ns.max(s.end_ns),
            _ => merged.push(s),
        }
    }
    merged
}

/// The most bins a GPU-busy timeline has: a window of up to 65 s keeps
/// 1 ms bins (the longest corpus trace is 43 s), a day gets 2 s bins, and
/// no window costs more than about 1 MB.
pub const MAX_TIMELINE_BINS: i64 = 65_536;

/// A GPU-busy timeline and the bin width it was built with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BusyTimeline {
    /// Width of every bin but possibly the last, in ns.
    pub bin_ns: i64,
    /// Per bin, the fraction of it during which a GPU stream was busy.
    pub busy: Vec<f64>,
}

/// The bin width a timeline of a `window_ns` window gets: the smallest of
/// `min_bin_ns` times 1, 2, 5, 10, 20, 50 and so on that leaves at most
/// [`MAX_TIMELINE_BINS`] bins (all of `window_ns` in one bin when no
/// multiple fits in an `i64`). A non-positive `min_bin_ns` is returned as is.
pub fn timeline_bin_ns(window_ns: i64, min_bin_ns: i64) -> i64 {
    if min_bin_ns <= 0 {
        return min_bin_ns;
    }
    let mut decade = min_bin_ns;
    loop {
        for step in [1, 2, 5] {
            let Some(bin) = decade.checked_mul(step) else {
                return window_ns.max(min_bin_ns);
            };
            if bin_count(window_ns, bin) <= MAX_TIMELINE_BINS {
                return bin;
            }
        }
        let Some(next) = decade.checked_mul(10) else {
            return window_ns.max(min_bin_ns);
        };
        decade = next;
    }
}

/// Bins of `bin_ns` needed to cover `len_ns` (both positive), without
/// overflow.
fn bin_count(len_ns: i64, bin_ns: i64) -> i64 {
    len_ns / bin_ns + i64::from(len_ns % bin_ns != 0)
}

/// The GPU-busy timeline: for each bin of `window`, the fraction of it
/// during which at least one stream runs a task (the paper's "SM
/// utilization"; not hardware occupancy). Bins are `min_bin_ns` wide, or
/// wider for a long window ([`timeline_bin_ns`]), so memory is bounded by
/// [`MAX_TIMELINE_BINS`] whatever the window. The last bin may be shorter
/// and is measured against its own length. Empty when the window is empty
/// or `min_bin_ns` is not positive.
pub fn gpu_busy_timeline<T: TaskTimes + ?Sized>(
    graph: &Graph,
    times: &T,
    window: Span,
    min_bin_ns: i64,
) -> BusyTimeline {
    busy_timeline(
        &gpu_busy_intervals(graph, times, window),
        window,
        min_bin_ns,
    )
}

/// [`gpu_busy_timeline`] from the busy intervals inside `window`, sorted
/// and disjoint ([`gpu_busy_intervals`]), for a caller that has them.
pub fn busy_timeline(busy_intervals: &[Span], window: Span, min_bin_ns: i64) -> BusyTimeline {
    let mut bins = BusyBins::new(window, min_bin_ns);
    for &span in busy_intervals {
        bins.add(span);
    }
    bins.finish()
}

/// A GPU-busy timeline being filled span by span: [`busy_timeline`] for
/// a caller that makes the busy intervals one at a time (merging tasks
/// by start) and need not keep them.
#[derive(Debug, Clone)]
pub struct BusyBins {
    window: Span,
    bin_ns: i64,
    /// Busy ns per bin; empty when the window or the width is.
    busy: Vec<i64>,
}

impl BusyBins {
    /// The empty timeline of `window`, in bins [`timeline_bin_ns`] gives
    /// for `min_bin_ns`.
    pub fn new(window: Span, min_bin_ns: i64) -> BusyBins {
        let len = window.end_ns.saturating_sub(window.start_ns);
        let bin_ns = timeline_bin_ns(len, min_bin_ns);
        let bins = if len <= 0 || bin_ns <= 0 {
            0
        } else {
            bin_count(len, bin_ns) as usize
        };
        BusyBins {
            window,
            bin_ns,
            busy: vec![0; bins],
        }
    }

    fn bin_start(&self, bin: usize) -> i64 {
        self.window
            .start_ns
            .saturating_add((bin as i64).saturating_mul(self.bin_ns))
    }

    /// The length of `bin` (the last may be shorter), ns.
    fn bin_len(&self, bin: usize) -> i64 {
        let start = self.bin_start(bin);
        (start.saturating_add(self.bin_ns).min(self.window.end_ns) - start).max(0)
    }

    /// Adds the busy interval `span`, clipped to the window; the spans
    /// added are sorted and disjoint, as [`busy_timeline`]'s.
    pub fn add(&mut self, span: Span) {
        let bins = self.busy.len();
        let (start, end) = (
            span.start_ns.max(self.window.start_ns),
            span.end_ns.min(self.window.end_ns),
        );
        if bins == 0 || start >= end {
            return;
        }
        let mut at = start;
        while at < end {
            let bin = (at.saturating_sub(self.window.start_ns) / self.bin_ns) as usize;
            let upto = self.bin_start(bin + 1).min(end);
            // The last bin takes the rest, also where a window as long as
            // the clock's range saturates the bins' edges (the loop made no
            // progress there, and never ended).
            if bin >= bins - 1 || upto <= at {
                let bin = bin.min(bins - 1);
                let rest = end.saturating_sub(at).min(self.bin_len(bin));
                let last = &mut self.busy[bin];
                *last = last.saturating_add(rest);
                return;
            }
            self.busy[bin] += upto - at;
            at = upto;
        }
    }

    /// The timeline of the spans added.
    pub fn finish(self) -> BusyTimeline {
        let busy = self
            .busy
            .iter()
            .enumerate()
            .map(|(bin, &b)| {
                // At most 1: only the bins of a window longer than the
                // clock's range (their edges saturated) could hold more.
                (b as f64 / self.bin_len(bin) as f64).min(1.0)
            })
            .collect();
        BusyTimeline {
            bin_ns: self.bin_ns,
            busy,
        }
    }
}
