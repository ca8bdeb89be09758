//! The GPU breakdown of each step (time and % of the step), overlap and
//! idle time by cause, and the selection under HTA's definitions.

use std::collections::HashMap;

use lumos_graph::{Graph, ProcKind, Span, TaskId};
use lumos_sim::{whole_span, TaskTimes};
use serde::Serialize;

use super::idle::{idle_causes, launchers, IdleCauses};
use super::intervals::Intervals;
use super::SelectedStep;
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
    /// `exposed_compute_us` in % of the step.
    pub exposed_compute_pct: f64,
    /// `overlapped_us` in % of the step.
    pub overlapped_pct: f64,
    /// `exposed_comm_us` in % of the step.
    pub exposed_comm_pct: f64,
    /// `idle_us` in % of the step.
    pub idle_pct: f64,
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

/// `part` in % of `whole` (0 when `whole` is 0).
pub(crate) fn pct(part: i64, whole: i64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64 * 100.0
    }
}

fn opt_pct(part: i64, whole: i64) -> Option<f64> {
    (whole > 0).then(|| pct(part, whole))
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
            overlap_pct: opt_pct(self.overlapped, self.comm),
            hta_overlap_pct: opt_pct(self.hta_overlapped, self.hta_comm),
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

/// The unions of GPU time a timeline's analyses measure, and the
/// classified idle gaps.
pub(crate) struct GpuTime {
    compute: Intervals,
    comm: Intervals,
    overlapped: Intervals,
    busy: Intervals,
    hta_comm: Intervals,
    hta_overlapped: Intervals,
    idle: IdleCauses,
    launcher: Vec<Option<TaskId>>,
}

/// The span of GPU task `t`.
fn span_of<T: TaskTimes + ?Sized>(times: &T, t: TaskId) -> Span {
    Span {
        start_ns: times.start_of(t),
        end_ns: times.end_of(t),
    }
}

/// The spans of the GPU tasks `pick` selects.
fn gpu_spans<'a, T: TaskTimes + ?Sized>(
    graph: &'a Graph,
    times: &'a T,
    pick: impl Fn(TaskId) -> bool + 'a,
) -> impl Iterator<Item = Span> + 'a {
    graph
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kind.is_gpu())
        .map(|(i, _)| TaskId(i as u32))
        .filter(move |&t| pick(t))
        .map(move |t| span_of(times, t))
}

impl GpuTime {
    /// The unions of `graph` at `times`; idle gaps are classified over the
    /// whole timeline and every span of `steps`.
    pub fn new<T: TaskTimes + ?Sized>(
        graph: &Graph,
        times: &T,
        steps: &[SelectedStep],
        kernel_gap_ns: i64,
    ) -> GpuTime {
        let comm_task = |t: TaskId| graph.task(t).is_comm();
        let classes = HtaClass::of_names(graph);
        let hta = |t: TaskId| classes[graph.task(t).name.0 as usize];
        let compute = Intervals::union(gpu_spans(graph, times, |t| !comm_task(t)));
        let comm = Intervals::union(gpu_spans(graph, times, comm_task));
        let busy = Intervals::union(compute.spans().iter().chain(comm.spans()).copied());
        let hta_compute =
            Intervals::union(gpu_spans(graph, times, |t| hta(t) == HtaClass::Computation));
        let hta_comm = Intervals::union(gpu_spans(graph, times, |t| {
            hta(t) == HtaClass::Communication
        }));
        let mut domain = whole_span(times);
        for s in steps {
            domain.start_ns = domain.start_ns.min(s.span.start_ns);
            domain.end_ns = domain.end_ns.max(s.span.end_ns);
        }
        let launcher = launchers(graph);
        let idle = idle_causes(graph, times, &busy, &launcher, domain, kernel_gap_ns);
        GpuTime {
            overlapped: compute.intersect(&comm),
            hta_overlapped: hta_compute.intersect(&hta_comm),
            compute,
            comm,
            busy,
            hta_comm,
            idle,
            launcher,
        }
    }

    /// The times of `step`.
    pub fn step<T: TaskTimes + ?Sized>(
        &self,
        graph: &Graph,
        times: &T,
        step: &SelectedStep,
    ) -> StepNs {
        let w = step.span;
        let (mut gpu_tasks, mut gpu_task) = (0, 0i64);
        for t in step.tasks(graph) {
            if graph.task(t).kind.is_gpu() {
                gpu_tasks += 1;
                gpu_task = gpu_task.saturating_add(span_of(times, t).len_ns());
            }
        }
        StepNs {
            span: w.len_ns(),
            compute: self.compute.measure_in(w),
            comm: self.comm.measure_in(w),
            overlapped: self.overlapped.measure_in(w),
            busy: self.busy.measure_in(w),
            hta_comm: self.hta_comm.measure_in(w),
            hta_overlapped: self.hta_overlapped.measure_in(w),
            host_wait: self.idle.host_wait.measure_in(w),
            kernel_gap: self.idle.kernel_gap.measure_in(w),
            other: self.idle.other.measure_in(w),
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
        let gpu: Vec<TaskId> = own
            .iter()
            .copied()
            .filter(|&t| graph.task(t).kind.is_gpu())
            .collect();
        let classes = HtaClass::of_names(graph);
        let class = |t: TaskId| classes[graph.task(t).name.0 as usize];
        let spans = |pick: &dyn Fn(TaskId) -> bool| {
            Intervals::union(
                gpu.iter()
                    .copied()
                    .filter(|&t| pick(t))
                    .map(|t| span_of(times, t)),
            )
        };
        let all = spans(&|_| true);
        let compute = spans(&|t| class(t) == HtaClass::Computation);
        let comm = spans(&|t| class(t) == HtaClass::Communication);
        let window = match (all.spans().first(), all.spans().last()) {
            (Some(a), Some(z)) => Span {
                start_ns: a.start_ns,
                end_ns: z.end_ns,
            },
            _ => Span::default(),
        };
        let kernel_time = window.len_ns();
        let busy = all.measure_in(window);
        let compute_ns = compute.measure_in(window);
        let comm_ns = comm.measure_in(window);
        let idle = kernel_time - busy;
        HtaView {
            kernel_time_us: us(kernel_time),
            idle_us: us(idle),
            compute_us: us(compute_ns),
            non_compute_us: us(busy - compute_ns),
            idle_pct: pct(idle, kernel_time),
            compute_pct: pct(compute_ns, kernel_time),
            non_compute_pct: pct(busy - compute_ns, kernel_time),
            comm_comp_overlap_pct: opt_pct(compute.intersect(&comm).measure_in(window), comm_ns),
            idle_by_stream: self.stream_idle(graph, times, &gpu, kernel_gap_ns),
        }
    }

    /// HTA's idle-time breakdown of each stream of `gpu` (tasks).
    fn stream_idle<T: TaskTimes + ?Sized>(
        &self,
        graph: &Graph,
        times: &T,
        gpu: &[TaskId],
        kernel_gap_ns: i64,
    ) -> Vec<StreamIdle> {
        let mut by_proc: HashMap<u32, Vec<TaskId>> = HashMap::new();
        for &t in gpu {
            by_proc.entry(graph.task(t).proc.0).or_default().push(t);
        }
        let mut out: Vec<StreamIdle> = by_proc
            .into_iter()
            .map(|(p, mut tasks)| {
                tasks.sort_unstable_by_key(|&t| (times.start_of(t), t));
                let (device, stream) = match graph.processors[p as usize].kind {
                    ProcKind::Stream { device, stream } => (device, stream),
                    ProcKind::Thread { pid, tid } => (pid, tid),
                };
                let mut row = StreamIdle {
                    device,
                    stream,
                    host_wait_us: 0.0,
                    kernel_wait_us: 0.0,
                    other_us: 0.0,
                };
                let (mut host, mut wait, mut other) = (0i64, 0i64, 0i64);
                for pair in tasks.windows(2) {
                    let prev_end = times.end_of(pair[0]);
                    let gap = (times.start_of(pair[1]) - prev_end).max(0);
                    let launched = self.launcher[pair[1].idx()].map(|l| times.start_of(l));
                    if launched.is_some_and(|l| l > prev_end) {
                        host += gap;
                    } else if gap < kernel_gap_ns {
                        wait += gap;
                    } else {
                        other += gap;
                    }
                }
                row.host_wait_us = us(host);
                row.kernel_wait_us = us(wait);
                row.other_us = us(other);
                row
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
    /// `idle_us` in % of `kernel_time_us`.
    pub idle_pct: f64,
    /// `compute_us` in % of `kernel_time_us`.
    pub compute_pct: f64,
    /// `non_compute_us` in % of `kernel_time_us`.
    pub non_compute_pct: f64,
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
