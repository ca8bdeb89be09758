//! The GPU breakdown of each step (time and % of the step), overlap and
//! idle time by cause, and the selection under HTA's definitions.

use lumos_graph::{Graph, ProcKind, Span, TaskId};
use lumos_sim::TaskTimes;
use serde::Serialize;

use super::idle::{Cause, Gaps, Launchers};
use super::intervals::InWindows;
use super::kernels::ScopeOperators;
use super::{SelectedStep, Side};
use crate::units::us;

/// One step's GPU time, and the same row for a whole selection.
///
/// The four parts `exposed_compute`, `overlapped`, `exposed_comm` and
/// `idle` add up to the step (`span_us`); the three idle causes add up to
/// `idle_us`. Compute is every GPU task that is not communication
/// (memory copies and sets included); communication is every task of a
/// collective or point-to-point operation.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepAnalysis {
    /// The step's name (`window` for a trace without steps, `selection`
    /// for the sum of the selected steps).
    pub step: String,
    /// Its position among the trace's steps (null for `window` and
    /// `selection`).
    pub index: Option<usize>,
    /// Its length (the step time), us.
    pub span_us: f64,
    /// Compute while no communication runs, us.
    pub exposed_compute_us: f64,
    /// Compute and communication at once, us.
    pub overlapped_us: f64,
    /// Communication while no compute runs, us.
    pub exposed_comm_us: f64,
    /// No GPU task running, us.
    pub idle_us: f64,
    /// `exposed_compute_us` in % of the step; null when the step has no
    /// length (no share of nothing exists: 0% would read as a measured
    /// share).
    pub exposed_compute_pct: Option<f64>,
    /// `overlapped_us` in % of the step; null when it has no length.
    pub overlapped_pct: Option<f64>,
    /// `exposed_comm_us` in % of the step; null when it has no length.
    pub exposed_comm_pct: Option<f64>,
    /// `idle_us` in % of the step; null when it has no length.
    pub idle_pct: Option<f64>,
    /// Time any compute runs (`exposed_compute_us + overlapped_us`), us.
    pub compute_us: f64,
    /// Time any communication runs (`exposed_comm_us + overlapped_us`), us.
    pub comm_us: f64,
    /// Share of communication time hidden under compute:
    /// `overlapped_us / comm_us`, %; null without communication.
    pub overlap_pct: Option<f64>,
    /// HTA's `comp_comm_overlap_pctg` in this step: the same ratio with
    /// HTA's kernel classes (communication by kernel name, compute
    /// without memory copies and sets), %; null without communication.
    pub hta_overlap_pct: Option<f64>,
    /// Idle because the work that ended the gap was launched after it
    /// began (the GPU waited for the host), us.
    pub idle_host_wait_us: f64,
    /// Idle in short gaps before work launched earlier (back-to-back
    /// kernels), us.
    pub idle_kernel_gap_us: f64,
    /// Other idle time, us.
    pub idle_other_us: f64,
    /// GPU tasks that belong to the step (launched from CPU work inside
    /// it).
    pub gpu_tasks: usize,
    /// Their summed durations (overlapping tasks counted in full), us.
    pub gpu_task_us: f64,
}

/// A step's times in ns, summable over a selection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StepNs {
    pub span: i64,
    pub compute: i64,
    pub comm: i64,
    pub overlapped: i64,
    pub busy: i64,
    pub hta_comm: i64,
    pub hta_overlapped: i64,
    pub host_wait: i64,
    pub kernel_gap: i64,
    pub other: i64,
    pub gpu_tasks: usize,
    pub gpu_task: i64,
}

/// `part` in % of `whole`; `None` when `whole` is not positive: a share
/// of nothing does not exist, and a 0% (or 100%) would read as measured.
pub(crate) fn pct(part: i64, whole: i64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64 * 100.0)
}

impl StepNs {
    /// The sum of two rows.
    pub fn add(self, o: &StepNs) -> StepNs {
        let s = |a: i64, b: i64| a.saturating_add(b);
        StepNs {
            span: s(self.span, o.span),
            compute: s(self.compute, o.compute),
            comm: s(self.comm, o.comm),
            overlapped: s(self.overlapped, o.overlapped),
            busy: s(self.busy, o.busy),
            hta_comm: s(self.hta_comm, o.hta_comm),
            hta_overlapped: s(self.hta_overlapped, o.hta_overlapped),
            host_wait: s(self.host_wait, o.host_wait),
            kernel_gap: s(self.kernel_gap, o.kernel_gap),
            other: s(self.other, o.other),
            gpu_tasks: self.gpu_tasks + o.gpu_tasks,
            gpu_task: s(self.gpu_task, o.gpu_task),
        }
    }

    /// The report row.
    pub fn row(&self, step: String, index: Option<usize>) -> StepAnalysis {
        let exposed_compute = self.compute - self.overlapped;
        let exposed_comm = self.comm - self.overlapped;
        let idle = self.span - self.busy;
        StepAnalysis {
            step,
            index,
            span_us: us(self.span),
            exposed_compute_us: us(exposed_compute),
            overlapped_us: us(self.overlapped),
            exposed_comm_us: us(exposed_comm),
            idle_us: us(idle),
            exposed_compute_pct: pct(exposed_compute, self.span),
            overlapped_pct: pct(self.overlapped, self.span),
            exposed_comm_pct: pct(exposed_comm, self.span),
            idle_pct: pct(idle, self.span),
            compute_us: us(self.compute),
            comm_us: us(self.comm),
            overlap_pct: pct(self.overlapped, self.comm),
            hta_overlap_pct: pct(self.hta_overlapped, self.hta_comm),
            idle_host_wait_us: us(self.host_wait),
            idle_kernel_gap_us: us(self.kernel_gap),
            idle_other_us: us(self.other),
            gpu_tasks: self.gpu_tasks,
            gpu_task_us: us(self.gpu_task),
        }
    }
}

/// HTA's kernel classes, from the kernel name alone (HTA's
/// `get_kernel_type`, hta/common/types.py).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HtaClass {
    Communication,
    Memory,
    Computation,
    Other,
}

impl HtaClass {
    /// The class of every name of `graph`, indexed by name id: a graph has
    /// far fewer names than tasks, and the analyses ask for each GPU
    /// task's class several times, each a dozen substring searches.
    pub fn of_names(graph: &Graph) -> Vec<HtaClass> {
        graph.names.iter().map(|n| HtaClass::of(n)).collect()
    }

    pub fn of(name: &str) -> HtaClass {
        let starts = |p: &str| name.starts_with(p);
        if starts("nccl") || starts("hip") || starts("hccl") || name.contains("ncclKernel") {
            return HtaClass::Communication;
        }
        if ["Memcpy", "hipMemcpy", "Memset", "hipMemset", "dma"]
            .iter()
            .any(|p| starts(p))
        {
            return HtaClass::Memory;
        }
        let launch = starts("cuda") && name.find("LaunchKernel").is_some_and(|i| i >= "cuda".len());
        let not_compute = ["Memcpy", "Memset", "dma", "Sync"]
            .iter()
            .any(|p| name.contains(p))
            || [
                "nccl",
                "Stream Wait Event",
                "runFunction",
                "hip",
                "job_exe",
                "packet",
                "pe_exe",
                "cpum_exe_subgraph",
                "hccl",
                "collective_subgraph_execution",
            ]
            .iter()
            .any(|p| starts(p))
            || launch;
        if not_compute {
            HtaClass::Other
        } else {
            HtaClass::Computation
        }
    }
}

/// What the analyses of any times of one graph read about its tasks,
/// found once per graph and shared by the measured and the replayed side:
/// each task's launching call (a scan of every edge), each name's HTA
/// class (a dozen substring searches) and each task's operator (a walk up
/// its scopes).
pub(crate) struct GraphFacts {
    /// The HTA class of each name, by name id.
    classes: Vec<HtaClass>,
    /// The CPU task that launched each task.
    launcher: Launchers,
    /// Each task's operator.
    pub operators: ScopeOperators,
}

impl GraphFacts {
    /// The facts of `graph`.
    pub fn of(graph: &Graph) -> GraphFacts {
        GraphFacts {
            classes: HtaClass::of_names(graph),
            launcher: Launchers::of(graph),
            operators: ScopeOperators::of(graph),
        }
    }

    fn class(&self, graph: &Graph, t: TaskId) -> HtaClass {
        self.classes[graph.task(t).name.0 as usize]
    }
}

/// Every GPU task of a timeline with its span, by start (ties by task):
/// sorted once, it gives each union of GPU time in one merging pass, the
/// tasks starting at any moment by binary search, and each stream's tasks
/// in order.
pub(crate) struct GpuOrder {
    tasks: Vec<(Span, TaskId)>,
}

impl GpuOrder {
    /// The GPU tasks of `graph` at `times`.
    pub fn new<T: TaskTimes + ?Sized>(graph: &Graph, times: &T) -> GpuOrder {
        let mut tasks =
            in_processor_order(graph, times).unwrap_or_else(|| in_task_order(graph, times));
        // Stable, so that it finds the processors' runs (a stream's tasks
        // start in its order) and merges them: a few passes instead of a
        // sort from scratch. The keys are unique, so the order is the
        // unstable sort's.
        tasks.sort_by_key(|&(s, t)| (s.start_ns, t));
        GpuOrder { tasks }
    }

    /// The lengths of the unions of the compute tasks' spans, of the
    /// communication tasks' and of both (busy time), in one pass; each
    /// span of the busy union, in order, is handed to `busy` as it is
    /// complete, so that no union is kept.
    pub fn comm_measures(&self, graph: &Graph, mut busy: impl FnMut(Span)) -> [i64; 3] {
        let mut lengths = [0i64; 3];
        self.merge_unions(
            graph,
            None,
            |_| true,
            |u, s| {
                // As `Intervals::from_disjoint` sums them.
                let len = &mut lengths[u as usize];
                *len = len.saturating_add(s.end_ns.saturating_sub(s.start_ns));
                if u == Union::Busy {
                    busy(s);
                }
            },
        );
        [
            lengths[Union::Compute as usize],
            lengths[Union::Comm as usize],
            lengths[Union::Busy as usize],
        ]
    }

    /// Merges the non-empty spans of the tasks `keep` keeps, by start,
    /// into the busy union, the compute or the communication union and,
    /// given the graph's `facts`, HTA's computation or communication union
    /// and the union of both; hands each merged span to `sink` once
    /// complete (each union's in order).
    fn merge_unions(
        &self,
        graph: &Graph,
        facts: Option<&GraphFacts>,
        keep: impl Fn(TaskId) -> bool,
        mut sink: impl FnMut(Union, Span),
    ) {
        let mut open: [Option<Span>; 6] = [None; 6];
        let mut add = |u: Union, s: Span| match &mut open[u as usize] {
            Some(last) if s.start_ns <= last.end_ns => last.end_ns = last.end_ns.max(s.end_ns),
            slot => {
                if let Some(done) = slot.replace(s) {
                    sink(u, done);
                }
            }
        };
        for &(s, t) in self.non_empty().filter(|&&(_, t)| keep(t)) {
            add(Union::Busy, s);
            let comm = graph.task(t).is_comm();
            add(if comm { Union::Comm } else { Union::Compute }, s);
            let hta = match facts.map(|f| f.class(graph, t)) {
                Some(HtaClass::Computation) => Some(Union::HtaCompute),
                Some(HtaClass::Communication) => Some(Union::HtaComm),
                _ => None,
            };
            if let Some(u) = hta {
                add(u, s);
                add(Union::HtaEither, s);
            }
        }
        for u in Union::ALL {
            if let Some(s) = open[u as usize] {
                sink(u, s);
            }
        }
    }

    /// The tasks whose span is not empty, by start.
    fn non_empty(&self) -> impl Iterator<Item = &(Span, TaskId)> {
        self.tasks.iter().filter(|(s, _)| s.start_ns < s.end_ns)
    }

    /// The non-empty spans starting at `at`, with their tasks.
    fn starting_at(&self, at: i64) -> impl Iterator<Item = &(Span, TaskId)> {
        let from = self.tasks.partition_point(|(s, _)| s.start_ns < at);
        self.tasks[from..]
            .iter()
            .take_while(move |(s, _)| s.start_ns == at)
            .filter(|(s, _)| s.start_ns < s.end_ns)
    }
}

/// Every GPU task with its span at `times`, processor by processor in
/// each one's order; `None` if the processors do not list every GPU task
/// exactly once (a graph the simulator has not checked).
fn in_processor_order<T: TaskTimes + ?Sized>(
    graph: &Graph,
    times: &T,
) -> Option<Vec<(Span, TaskId)>> {
    let gpu = graph.tasks.iter().filter(|t| t.kind.is_gpu()).count();
    let mut seen = vec![false; graph.tasks.len()];
    let mut tasks: Vec<(Span, TaskId)> = Vec::with_capacity(gpu);
    for &t in graph.processors.iter().flat_map(|p| &p.tasks) {
        let task = graph.tasks.get(t.idx())?;
        if task.kind.is_gpu() {
            if std::mem::replace(&mut seen[t.idx()], true) {
                return None;
            }
            tasks.push((span_of(times, t), t));
        }
    }
    (tasks.len() == gpu).then_some(tasks)
}

/// Every GPU task with its span at `times`, in task order.
fn in_task_order<T: TaskTimes + ?Sized>(graph: &Graph, times: &T) -> Vec<(Span, TaskId)> {
    // Sized exactly: collected through a filter, the vector would grow
    // by doubling, up to twice the tasks' 24 bytes each, and copy
    // itself on the way.
    let gpu = graph.tasks.iter().filter(|t| t.kind.is_gpu()).count();
    let mut tasks: Vec<(Span, TaskId)> = Vec::with_capacity(gpu);
    tasks.extend(
        graph
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.kind.is_gpu())
            .map(|(i, _)| {
                let t = TaskId(i as u32);
                (span_of(times, t), t)
            }),
    );
    tasks
}

/// The unions of GPU time [`GpuOrder::merge_unions`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Union {
    Busy,
    Compute,
    Comm,
    HtaCompute,
    HtaComm,
    /// HTA's computation and communication together.
    HtaEither,
}

impl Union {
    const ALL: [Union; 6] = [
        Union::Busy,
        Union::Compute,
        Union::Comm,
        Union::HtaCompute,
        Union::HtaComm,
        Union::HtaEither,
    ];
}

/// What a timeline's analyses measure of its GPU time in each selected
/// step: the unions of GPU time and the classified idle gaps, measured as
/// they are made, none kept.
pub(crate) struct GpuTime<'f> {
    /// Per step (in the order given), per [`Measure`], ns.
    in_steps: Vec<[i64; Measure::COUNT]>,
    order: &'f GpuOrder,
    facts: &'f GraphFacts,
}

// `Measure` numbers its idle causes after the unions.
const _: () = assert!(Union::ALL.len() == Measure::HostWait as usize);

/// What [`GpuTime`] measures in each step: the unions of
/// [`GpuOrder::merge_unions`] in their order, then the idle gaps by cause.
#[derive(Debug, Clone, Copy)]
enum Measure {
    HostWait = 6,
    KernelGap = 7,
    Other = 8,
}

impl Measure {
    const COUNT: usize = 9;

    fn of_cause(cause: Cause) -> Measure {
        match cause {
            Cause::HostWait => Measure::HostWait,
            Cause::KernelGap => Measure::KernelGap,
            Cause::Other => Measure::Other,
        }
    }
}

/// The time two unions `a` and `b` overlap, from their lengths and their
/// union's (saturating, as the rest).
fn overlap(a: i64, b: i64, either: i64) -> i64 {
    a.saturating_add(b).saturating_sub(either)
}

/// The span of GPU task `t`.
fn span_of<T: TaskTimes + ?Sized>(times: &T, t: TaskId) -> Span {
    Span {
        start_ns: times.start_of(t),
        end_ns: times.end_of(t),
    }
}

impl<'f> GpuTime<'f> {
    /// The measures of `graph` at `times` in `steps`; idle gaps are
    /// classified over the whole timeline and every span of `steps`.
    pub fn new<T: TaskTimes + ?Sized>(
        graph: &Graph,
        times: &T,
        steps: &[SelectedStep],
        kernel_gap_ns: i64,
        (side, facts): (&'f Side, &'f GraphFacts),
    ) -> GpuTime<'f> {
        let order = &side.order;
        let windows: Vec<Span> = steps.iter().map(|s| s.span).collect();
        let first = InWindows::new(&windows);
        let mut measures: [InWindows<'_>; Measure::COUNT] =
            std::array::from_fn(|_| first.another());
        let mut domain = side.whole;
        for s in steps {
            domain.start_ns = domain.start_ns.min(s.span.start_ns);
            domain.end_ns = domain.end_ns.max(s.span.end_ns);
        }
        let launched_after = |gap_start: i64, at: i64| -> bool {
            let mut starting = order.starting_at(at).peekable();
            starting.peek().is_some()
                && starting.all(|&(_, t)| {
                    facts
                        .launcher
                        .of_task(t)
                        .is_some_and(|l| times.start_of(l) > gap_start)
                })
        };
        let mut gaps = Gaps::new(domain, kernel_gap_ns);
        order.merge_unions(
            graph,
            Some(facts),
            |_| true,
            |u, s| {
                if u == Union::Busy {
                    if let Some((cause, gap)) = gaps.before(s, launched_after) {
                        measures[Measure::of_cause(cause) as usize].add(gap);
                    }
                }
                measures[u as usize].add(s);
            },
        );
        if let Some(gap) = gaps.after() {
            measures[Measure::Other as usize].add(gap);
        }
        let sums = measures.map(InWindows::sums);
        let in_steps = (0..steps.len())
            .map(|i| std::array::from_fn(|m| sums[m][i]))
            .collect();
        GpuTime {
            in_steps,
            order,
            facts,
        }
    }

    /// The times of `step`, the `i`th of the steps given to
    /// [`GpuTime::new`].
    pub fn step<T: TaskTimes + ?Sized>(
        &self,
        graph: &Graph,
        times: &T,
        (i, step): (usize, &SelectedStep),
    ) -> StepNs {
        let (mut gpu_tasks, mut gpu_task) = (0, 0i64);
        for t in step.tasks(graph) {
            if graph.task(t).kind.is_gpu() {
                gpu_tasks += 1;
                gpu_task = gpu_task.saturating_add(span_of(times, t).len_ns());
            }
        }
        let m = &self.in_steps[i];
        let of = |u: Union| m[u as usize];
        StepNs {
            span: step.span.len_ns(),
            compute: of(Union::Compute),
            comm: of(Union::Comm),
            // |C ∩ M| = |C| + |M| - |C ∪ M|, in the step as anywhere.
            overlapped: overlap(of(Union::Compute), of(Union::Comm), of(Union::Busy)),
            busy: of(Union::Busy),
            hta_comm: of(Union::HtaComm),
            hta_overlapped: overlap(
                of(Union::HtaCompute),
                of(Union::HtaComm),
                of(Union::HtaEither),
            ),
            host_wait: m[Measure::HostWait as usize],
            kernel_gap: m[Measure::KernelGap as usize],
            other: m[Measure::Other as usize],
            gpu_tasks,
            gpu_task,
        }
    }

    /// The selection's own GPU tasks `own` under HTA's definitions.
    pub fn hta_view<T: TaskTimes + ?Sized>(
        &self,
        graph: &Graph,
        times: &T,
        own: &[TaskId],
        kernel_gap_ns: i64,
    ) -> HtaView {
        let mut is_own = vec![false; graph.tasks.len()];
        for &t in own {
            is_own[t.idx()] = true;
        }
        // The selection's GPU tasks by start, as the timeline's.
        let gpu = || self.order.tasks.iter().filter(|(_, t)| is_own[t.idx()]);
        // Every union lies in the window from the first busy span to the
        // last, so each one's part in it is its length.
        let mut lengths = [0i64; Union::ALL.len()];
        let mut window: Option<Span> = None;
        let keep = |t: TaskId| is_own[t.idx()];
        self.order
            .merge_unions(graph, Some(self.facts), keep, |u, s| {
                let len = &mut lengths[u as usize];
                *len = len.saturating_add(s.end_ns.saturating_sub(s.start_ns));
                if u == Union::Busy {
                    let w = window.get_or_insert(s);
                    w.end_ns = s.end_ns;
                }
            });
        let window = window.unwrap_or_default();
        let of = |u: Union| lengths[u as usize];
        let kernel_time = window.len_ns();
        let busy = of(Union::Busy);
        let compute_ns = of(Union::HtaCompute);
        let comm_ns = of(Union::HtaComm);
        let idle = kernel_time - busy;
        let overlapped = overlap(compute_ns, comm_ns, of(Union::HtaEither));
        HtaView {
            kernel_time_us: us(kernel_time),
            idle_us: us(idle),
            compute_us: us(compute_ns),
            non_compute_us: us(busy - compute_ns),
            idle_pct: pct(idle, kernel_time),
            compute_pct: pct(compute_ns, kernel_time),
            non_compute_pct: pct(busy - compute_ns, kernel_time),
            comm_comp_overlap_pct: pct(overlapped, comm_ns),
            idle_by_stream: self.stream_idle(graph, times, gpu().map(|&(_, t)| t), kernel_gap_ns),
        }
    }

    /// HTA's idle-time breakdown of each stream of the tasks `gpu`, given
    /// by start (ties by task): before each task, the gap since the
    /// previous one on its stream ended.
    fn stream_idle<T: TaskTimes + ?Sized>(
        &self,
        graph: &Graph,
        times: &T,
        gpu: impl Iterator<Item = TaskId>,
        kernel_gap_ns: i64,
    ) -> Vec<StreamIdle> {
        /// One stream's previous end and its gaps so far: host, kernel
        /// wait, other.
        #[derive(Clone, Copy)]
        struct Stream {
            prev_end: Option<i64>,
            gaps: [i64; 3],
        }
        let mut streams = vec![
            Stream {
                prev_end: None,
                gaps: [0; 3]
            };
            graph.processors.len()
        ];
        for t in gpu {
            let stream = &mut streams[graph.task(t).proc.idx()];
            if let Some(prev_end) = stream.prev_end {
                let gap = (times.start_of(t) - prev_end).max(0);
                let launched = self.facts.launcher.of_task(t).map(|l| times.start_of(l));
                let cause = if launched.is_some_and(|l| l > prev_end) {
                    0
                } else if gap < kernel_gap_ns {
                    1
                } else {
                    2
                };
                stream.gaps[cause] += gap;
            }
            stream.prev_end = Some(times.end_of(t));
        }
        let mut out: Vec<StreamIdle> = streams
            .iter()
            .enumerate()
            .filter(|(_, s)| s.prev_end.is_some())
            .map(|(p, s)| {
                let (device, stream) = match graph.processors[p].kind {
                    ProcKind::Stream { device, stream } => (device, stream),
                    ProcKind::Thread { pid, tid } => (pid, tid),
                };
                StreamIdle {
                    device,
                    stream,
                    host_wait_us: us(s.gaps[0]),
                    kernel_wait_us: us(s.gaps[1]),
                    other_us: us(s.gaps[2]),
                }
            })
            .collect();
        out.sort_by_key(|r| (r.device, r.stream));
        out
    }
}

/// A selection under HTA's definitions (`get_temporal_breakdown`,
/// `get_comm_comp_overlap`, `get_idle_time_breakdown`), from the GPU
/// tasks of the selected steps only, classified by name as HTA does:
/// communication (`nccl...`), memory (`Memcpy`, `Memset`), computation
/// (other kernels), other.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HtaView {
    /// HTA's `kernel_time`: from the first of these tasks' start to the
    /// last one's end, us.
    pub kernel_time_us: f64,
    /// `kernel_time` with no task running, us.
    pub idle_us: f64,
    /// Computation kernels running, us.
    pub compute_us: f64,
    /// Other tasks running without computation, us.
    pub non_compute_us: f64,
    /// `idle_us` in % of `kernel_time_us`; null when `kernel_time_us` is
    /// zero (no GPU task, or none with a length).
    pub idle_pct: Option<f64>,
    /// `compute_us` in % of `kernel_time_us`; null when it is zero.
    pub compute_pct: Option<f64>,
    /// `non_compute_us` in % of `kernel_time_us`; null when it is zero.
    pub non_compute_pct: Option<f64>,
    /// Time computation and communication run together, in % of the time
    /// communication runs; null without communication.
    pub comm_comp_overlap_pct: Option<f64>,
    /// Per stream, HTA's idle-time breakdown.
    pub idle_by_stream: Vec<StreamIdle>,
}

/// One stream's idle time as HTA breaks it down: before each task, the
/// gap since the previous task on the stream ended is `host_wait` when the
/// task was launched after that end, else `kernel_wait` when shorter than
/// the kernel-gap threshold, else `other`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StreamIdle {
    /// The device.
    pub device: i64,
    /// The stream.
    pub stream: i64,
    /// us.
    pub host_wait_us: f64,
    /// us.
    pub kernel_wait_us: f64,
    /// us.
    pub other_us: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use lumos_sim::SimOptions;

    /// A share of nothing does not exist (it was 0%).
    #[test]
    fn a_share_of_no_length_is_none() {
        assert_eq!(pct(0, 0), None);
        assert_eq!(pct(5, 0), None);
        assert_eq!(pct(1, 4), Some(25.0));
        assert_eq!(pct(0, 4), Some(0.0));
    }

    /// The order taken processor by processor is the order of every GPU
    /// task sorted from scratch; a graph whose processors leave a GPU
    /// task out, or list one twice, falls back to task order.
    #[test]
    fn gpu_order_from_the_processors_is_the_sorted_order() {
        let Some(corpus) = lumos_testkit::corpus() else {
            return;
        };
        let path = corpus.path("single-rank/a100-recsys-rank3of8.json.gz");
        let trace = lumos_trace::read_path(&path).unwrap();
        let r = crate::replay(&trace, &SimOptions::default()).unwrap();
        let (graph, schedule) = (&r.graph, &r.schedule);
        let mut sorted = in_task_order(graph, schedule);
        sorted.sort_unstable_by_key(|&(s, t)| (s.start_ns, t));
        assert!(sorted.len() > 1000);
        assert_eq!(GpuOrder::new(graph, schedule).tasks, sorted);
        assert!(in_processor_order(graph, schedule).is_some());

        // A stream and the positions of two of its GPU tasks.
        let is_gpu = |t: &TaskId| graph.task(*t).kind.is_gpu();
        let (stream, a, b) = (graph.processors.iter().enumerate())
            .find_map(|(p, proc)| {
                let mut gpu = (proc.tasks.iter().enumerate())
                    .filter(|(_, t)| is_gpu(t))
                    .map(|(k, _)| k);
                Some((p, gpu.next()?, gpu.next()?))
            })
            .unwrap();
        let mut left_out = graph.clone();
        left_out.processors[stream].tasks.remove(b);
        assert!(in_processor_order(&left_out, schedule).is_none());
        assert_eq!(GpuOrder::new(&left_out, schedule).tasks, sorted);
        let mut twice = graph.clone();
        let first = twice.processors[stream].tasks[a];
        twice.processors[stream].tasks[b] = first;
        assert!(in_processor_order(&twice, schedule).is_none());
        assert_eq!(GpuOrder::new(&twice, schedule).tasks, sorted);
    }
}
