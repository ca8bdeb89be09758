//! Simulated timelines as Kineto traces (open in Perfetto and
//! chrome://tracing): a graph at its replayed or predicted times, written
//! through lumos-trace's [`KinetoWriter`] on the clock of the trace it came
//! from, so that it lines up with the original and reads back as a trace.
//!
//! A written timeline holds what Perfetto users rely on: every task at its
//! time, every scope of the graph (operators with children and
//! annotations, nested as in the input, their spans derived from their
//! tasks' times: `scopes.rs`), launch flows, the input's process and
//! thread names and sort order, `deviceProperties` and
//! `distributedInfo`. [`MergedTimeline`] writes the ranks of a job into
//! one file, one process per rank.
//!
//! A [`Timeline`] only formats; the caller decides where the bytes go
//! ([`Timeline::write`] takes any `io::Write`) and names the file
//! [`Timeline::file_name`].

mod extras;
mod merge;
mod scopes;

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use lumos_graph::{
    DepKind, Graph, Measured, ProcKind, RankMeta, ScopeId, Span, TaskId, TaskKind, TraceAbout,
};
use lumos_predict::{Baseline, Outcome, PredictedStage, Prediction, Source, WrittenStage};
use lumos_sim::{annotation_spans, TaskTimes};
use lumos_trace::{
    Category, CollectiveFields, DeviceProperties, DistributedInfo, Fields, FlowKind, FlowPhase,
    KinetoWriter, Layout, PgConfig, Trace,
};

use crate::critical::CriticalPaths;
use crate::units::us;

use merge::RankHead;
pub use merge::{merged_file_name, predicted_job_under, MergedTimeline, MergedWriter};

/// The trace a timeline belongs to: its file (whose name the timeline's
/// takes), `baseTimeNanoseconds`, rank, and what it says about its tracks,
/// devices and job.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineSource {
    /// The trace file.
    pub path: PathBuf,
    /// Its `baseTimeNanoseconds`, if recorded.
    pub base_time_ns: Option<i64>,
    /// Its rank.
    pub rank: u32,
    /// Its `distributedInfo.world_size`, if recorded.
    pub world_size: Option<u32>,
    /// Its track names and order, devices and process groups.
    pub about: TraceAbout,
}

impl TimelineSource {
    /// The source `trace` is.
    pub fn of(trace: &Trace) -> TimelineSource {
        TimelineSource {
            path: trace.path.clone(),
            base_time_ns: trace.meta.base_time_ns,
            rank: trace.meta.rank,
            world_size: trace.meta.world_size,
            about: TraceAbout::of(trace),
        }
    }

    /// The source of one rank of a job.
    pub fn of_rank(meta: &RankMeta) -> TimelineSource {
        TimelineSource {
            path: meta.path.clone(),
            base_time_ns: meta.base_time_ns,
            rank: meta.rank,
            world_size: meta.world_size,
            about: meta.about.clone(),
        }
    }
}

/// The file name of `path` without `.json` or `.json.gz`: what the
/// timelines and critical paths written of the trace at `path` are named
/// after (`rank0.json.gz` gives `rank0.replayed.json.gz`). On Unix a name
/// that is not UTF-8 keeps its bytes ([`lumos_trace::edit_file_name`]:
/// it was `trace`, which every such trace shared).
pub fn output_stem(path: &Path) -> OsString {
    let name = path.file_name().unwrap_or("trace".as_ref());
    lumos_trace::edit_file_name(name, |mut stem| {
        for suffix in [&b".gz"[..], b".json"] {
            while let Some(s) = stem.strip_suffix(suffix) {
                stem = s;
            }
        }
        stem.to_vec()
    })
}

/// Arguments each task's event carries besides its times.
enum TaskArgs<'a> {
    /// `measured_dur_us`: the task's measured duration.
    Measured(&'a Measured),
    /// `source` (where the predicted duration came from: the job's,
    /// which marks the transfers coupling stages as modelled) and
    /// `traced_dur_us` (the duration of the traced task it was made from).
    /// A communication task placed in a group of the predicted job also
    /// carries its collective's arguments (`written`'s).
    Predicted {
        stage: &'a PredictedStage<'a>,
        source: &'a [Source],
        base: &'a Baseline,
        written: Option<WrittenStage>,
    },
}

impl TaskArgs<'_> {
    fn add(&self, i: usize, a: &mut Fields) {
        match self {
            TaskArgs::Measured(m) => {
                let m = &m.tasks[i];
                a.float("measured_dur_us", us(m.end_ns - m.start_ns));
            }
            TaskArgs::Predicted {
                stage,
                source,
                base,
                written,
            } => {
                let (src, t) = stage.origin[i];
                let traced = base.inputs[src as usize].graph.tasks[t.idx()].duration_ns;
                a.str("source", source[i].as_str())
                    .float("traced_dur_us", us(traced));
                if let Some(w) = written {
                    collective_args(stage, w, TaskId(i as u32), a);
                }
            }
        }
    }
}

/// Borrowed times as a boxed [`TaskTimes`].
struct Borrowed<'a, T: ?Sized>(&'a T);

impl<T: TaskTimes + ?Sized> TaskTimes for Borrowed<'_, T> {
    fn task_count(&self) -> usize {
        self.0.task_count()
    }
    fn start_of(&self, t: TaskId) -> i64 {
        self.0.start_of(t)
    }
    fn end_of(&self, t: TaskId) -> i64 {
        self.0.end_of(t)
    }
}

/// A graph at simulated times, ready to be written as a Kineto trace.
pub struct Timeline<'a> {
    stem: OsString,
    base_time_ns: Option<i64>,
    rank: u32,
    world_size: Option<u32>,
    /// `distributedInfo.written_ranks`: the ranks written with this one,
    /// when a subset of the world on purpose (a prediction's stages).
    written_ranks: Option<Vec<u32>>,
    /// Borrowed from a job's rank where the job outlives the timeline.
    about: Cow<'a, TraceAbout>,
    what: &'static str,
    graph: &'a Graph,
    origin_ns: i64,
    times: Box<dyn TaskTimes + 'a>,
    args: TaskArgs<'a>,
    /// Critical paths to mark.
    paths: Option<&'a CriticalPaths>,
    /// For a predicted stage: the traced rank it was built from.
    predicted_from: Option<PredictedFrom>,
}

/// The traced rank a predicted stage's timeline was built from, which the
/// timeline states as `predictedFrom` (a member of its own beside
/// `distributedInfo`): its file is named after the rank it predicts
/// ([`Timeline::file_name`]), so this says where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PredictedFrom {
    /// The trace (or `.lgraph` file) it was built from, as given (the
    /// file states it made absolute).
    pub trace: PathBuf,
    /// That trace's rank.
    pub rank: u32,
    /// That trace's pipeline stage in the traced job.
    pub stage: u32,
    /// The stage it predicts in the target job.
    pub predicted_stage: u32,
}

impl PredictedFrom {
    /// Its fields (`trace`, `rank`, `stage`, `predicted_stage`), as a
    /// predicted stage's timeline states them and each stage of a merged
    /// one ([`MergedTimeline`]).
    pub(crate) fn write_fields(&self, o: &mut Fields<'_>) {
        // Absolute: the file is read from elsewhere than where the
        // prediction ran.
        let trace = std::path::absolute(&self.trace).unwrap_or_else(|_| self.trace.clone());
        o.str("trace", &trace.display().to_string())
            .uint("rank", u64::from(self.rank))
            .uint("stage", u64::from(self.stage))
            .uint("predicted_stage", u64::from(self.predicted_stage));
    }
}

impl<'a> Timeline<'a> {
    /// The replayed timeline of `graph`: `times` are its replayed times on
    /// `measured`'s window origin; each task also carries its measured
    /// duration (`measured_dur_us`).
    pub fn replayed<T: TaskTimes + ?Sized>(
        source: &TimelineSource,
        graph: &'a Graph,
        measured: &'a Measured,
        times: &'a T,
    ) -> Timeline<'a> {
        let head = (source.path.as_path(), RankHead::of_source(source));
        let about = Cow::Owned(source.about.clone());
        Timeline::with_times(head, about, (graph, measured), Box::new(Borrowed(times)))
    }

    /// The replayed timeline of a job's rank `meta` (its own `graph` and
    /// `measured` times, replayed `times`), borrowing what `meta` says
    /// about the trace instead of copying it.
    pub(crate) fn of_rank(
        meta: &'a RankMeta,
        graph: &'a Graph,
        measured: &'a Measured,
        times: Box<dyn TaskTimes + 'a>,
    ) -> Timeline<'a> {
        let about = Cow::Borrowed(&meta.about);
        let head = (meta.path.as_path(), RankHead::of_meta(meta));
        Timeline::with_times(head, about, (graph, measured), times)
    }

    /// A replayed timeline of the trace file `head` describes (`about` is
    /// what it says of itself), with times the timeline keeps.
    fn with_times(
        (path, head): (&Path, RankHead<'_>),
        about: Cow<'a, TraceAbout>,
        (graph, measured): (&'a Graph, &'a Measured),
        times: Box<dyn TaskTimes + 'a>,
    ) -> Timeline<'a> {
        Timeline {
            stem: output_stem(path),
            base_time_ns: head.base_time_ns,
            rank: head.rank,
            world_size: head.world_size,
            written_ranks: None,
            about,
            what: "replayed",
            graph,
            origin_ns: measured.origin_ns,
            times,
            args: TaskArgs::Measured(measured),
            paths: None,
            predicted_from: None,
        }
    }

    /// The timeline of each predicted stage, on the clock of the trace it
    /// was built from; `sources` are indexed like the inputs given to
    /// [`Baseline::new`] (the baseline keeps one per stage: its `given`
    /// says which). Each task also carries where its duration came from
    /// (`source`) and its traced counterpart's duration (`traced_dur_us`).
    ///
    /// The timelines state the predicted job
    /// ([`Prediction::written_job`]): a stage is labelled with its own
    /// rank in the target job ([`Prediction::stage_rank`]), the target's
    /// world size, the stages' ranks as the ranks written
    /// (`written_ranks`) and its rank's process groups in the target
    /// layout; each communication task carries its collective's arguments
    /// in that job (group, `Seq`, sender and receiver), so the timelines
    /// replayed together form the job the prediction replayed. Where the
    /// stages cannot state it so ([`lumos_predict::WrittenJob::is_job`]),
    /// and for a stage whose trace recorded no world size, a timeline
    /// states no job: its rank, but no world size, process groups or
    /// collective arguments. The notes say what the timelines leave out.
    pub fn predicted(
        pred: &'a Prediction<'_>,
        outcome: &'a Outcome,
        sources: &[TimelineSource],
    ) -> PredictedTimelines<'a> {
        let written = pred.written_job(outcome);
        let is_job = written.is_job;
        let base: &'a Baseline = pred.base;
        let job = &outcome.job;
        let origin_min = base
            .inputs
            .iter()
            .map(|i| i.ctx.clock_origin_ns)
            .min()
            .unwrap_or(0);
        let mut ranks: Vec<u32> = written.stages.iter().map(|s| s.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        let subset = (ranks.len() as u64) < u64::from(pred.world_size());
        let timelines = pred
            .stages
            .iter()
            .zip(written.stages)
            .enumerate()
            .map(|(k, (st, w))| {
                let part = job.parts[k].clone();
                let times = lumos_sim::ScheduleSlice {
                    schedule: &outcome.schedule,
                    offset: part.start,
                    len: (part.end - part.start) as usize,
                };
                let source = &sources[base.given[st.primary]];
                let inp = &base.inputs[st.primary];
                // Coupled stages share the job timeline, which starts at the
                // earliest traced window; a stage replayed alone starts at
                // its own.
                let origin_ns = if job.coupled {
                    origin_min - source.base_time_ns.unwrap_or(0)
                } else {
                    inp.measured.origin_ns
                };
                // A trace that recorded no job gets none stated; where the
                // stages cannot state it, the traced groups are not kept
                // either (they were the traced job's).
                let in_job = is_job && source.world_size.is_some();
                let mut about = source.about.clone();
                about.process_groups = if in_job {
                    process_groups(&w.groups)
                } else {
                    Vec::new()
                };
                Timeline {
                    // Named after the rank it predicts: several stages may
                    // be built from one trace, and a stage's traced rank
                    // is not its rank in the target job.
                    stem: predicted_stem(w.rank).into(),
                    base_time_ns: source.base_time_ns,
                    rank: w.rank,
                    world_size: in_job.then_some(w.world_size),
                    written_ranks: (in_job && subset).then(|| ranks.clone()),
                    about: Cow::Owned(about),
                    what: "predicted",
                    graph: &st.graph,
                    origin_ns,
                    times: Box::new(times),
                    args: TaskArgs::Predicted {
                        stage: st,
                        source: &job.source[part.start as usize..part.end as usize],
                        base,
                        written: in_job.then_some(w),
                    },
                    paths: None,
                    predicted_from: Some(PredictedFrom {
                        trace: source.path.clone(),
                        rank: source.rank,
                        stage: base.stages[st.primary],
                        predicted_stage: st.stage,
                    }),
                }
            })
            .collect();
        PredictedTimelines {
            timelines,
            notes: written.notes,
        }
    }

    /// The file names [`Timeline::predicted`] gives the timelines of
    /// `pred`'s stages (`rank<N>.predicted.json.gz`, `N` each stage's
    /// rank in the target job, [`Prediction::stage_rank`]), known before
    /// the prediction is replayed: what a front end checks its output
    /// directory against before the work (an input the timelines would
    /// replace).
    pub fn predicted_file_names(pred: &Prediction<'_>) -> Vec<OsString> {
        (0..pred.stages.len())
            .map(|k| file_name_of(predicted_stem(pred.stage_rank(k)).as_ref(), "predicted"))
            .collect()
    }

    /// This timeline with `paths` (found on the same times) marked, for
    /// Perfetto: each task on a step's path carries `critical_path_step`
    /// (the step's name) in its args, and a process named `critical path`
    /// has one track per step holding each hop's wait (`wait: <bound>`)
    /// and time on the path (the task's name), with flow arrows where the
    /// path moves to another thread or stream. The extra events have a
    /// category of their own (`critical_path`), which readers of Kineto
    /// traces (lumos included) leave out. Its file is
    /// `<name>.critical.json.gz`.
    pub fn with_critical_path(mut self, paths: &'a CriticalPaths) -> Timeline<'a> {
        self.paths = Some(paths);
        self.what = "critical";
        self
    }

    /// This timeline named after its rank as well as its trace:
    /// `<name>.rank<N>.replayed.json.gz` (and so on), `N` being the rank
    /// its `distributedInfo` gives. For the ranks of a job whose traces
    /// share a file name (`host0/trace.json`, `host1/trace.json`), whose
    /// timelines would otherwise take one name.
    pub fn with_rank_in_name(mut self) -> Timeline<'a> {
        self.stem.push(format!(".rank{}", self.rank));
        self
    }

    /// The file name the timeline is meant for: `<name>.replayed.json.gz`
    /// or `<name>.critical.json.gz` (with a critical path marked), `<name>`
    /// being its trace's (and `.rank<N>` after
    /// [`Timeline::with_rank_in_name`]), or `rank<N>.predicted.json.gz` for
    /// a predicted stage, `N` its rank in the target job (the trace it was
    /// built from is [`Timeline::predicted_from`]).
    pub fn file_name(&self) -> OsString {
        file_name_of(&self.stem, self.what)
    }

    /// The file name of the critical paths `lumos replay --critical-path`
    /// exports beside this timeline: `<name>.critical-path.json`, `<name>`
    /// as in [`Timeline::file_name`].
    pub fn critical_path_file_name(&self) -> OsString {
        let mut name = self.stem.clone();
        name.push(".critical-path.json");
        name
    }

    /// For a predicted stage's timeline, the traced rank it was built from.
    pub fn predicted_from(&self) -> Option<&PredictedFrom> {
        self.predicted_from.as_ref()
    }

    /// Writes the timeline as Kineto JSON (uncompressed) into `out` and
    /// gives `out` back.
    pub fn write<W: Write>(&self, out: W) -> io::Result<W> {
        let mut w = KinetoWriter::new(out, Layout::Compact);
        w.schema_version(1);
        if let Some(b) = self.base_time_ns {
            w.base_time_ns(b);
        }
        write_devices(&mut w, &self.about.devices.iter().collect::<Vec<_>>());
        let job = (self.rank, self.world_size, self.written_ranks.as_deref());
        write_distributed(&mut w, job, &self.about);
        w.trace_name(&format!("lumos {}", self.what));
        if let Some(f) = &self.predicted_from {
            f.write_fields(&mut w.member_object("predictedFrom"));
        }
        for t in &self.about.tracks {
            match t.tid {
                None => {
                    if let Some(n) = &t.name {
                        w.process_name(t.pid, n);
                    }
                    if let Some(l) = &t.labels {
                        w.process_labels(t.pid, l);
                    }
                    if let Some(k) = t.sort_index {
                        w.process_sort_index(t.pid, k);
                    }
                }
                Some(tid) => {
                    if let Some(n) = &t.name {
                        w.thread_name(t.pid, tid, n);
                    }
                    if let Some(k) = t.sort_index {
                        w.thread_sort_index(t.pid, tid, k);
                    }
                }
            }
        }
        let places: Vec<(i64, i64)> = self
            .graph
            .processors
            .iter()
            .map(|p| place_of(&p.kind))
            .collect();
        self.events(&mut w, &places, 0);
        if let Some(p) = self.paths {
            self.path_track(&mut w, p);
        }
        w.finish()
    }

    /// The events, each processor's on the pid and tid `places` gives:
    /// every scope, steps that are not scopes, every task at its time,
    /// then the launch flows (ids from `flow_base` up, so that the ranks
    /// of a merged file keep theirs apart).
    fn events<W: Write>(&self, w: &mut KinetoWriter<W>, places: &[(i64, i64)], flow_base: u64) {
        let (graph, times) = (self.graph, &*self.times);
        let place = |t: TaskId| places[graph.task(t).proc.idx()];
        // The annotation itself (CPU side), as the profiler records it, so
        // the re-read trace defines its steps the same way.
        let steps: Vec<Span> = annotation_spans(graph, times);
        let measured = match &self.args {
            TaskArgs::Measured(m) => Some(*m),
            TaskArgs::Predicted { .. } => None,
        };
        let step_scopes: Vec<Option<ScopeId>> = graph
            .steps
            .iter()
            .map(|st| {
                graph
                    .scope_chain(st.first_task)
                    .find(|s| graph.names[graph.scopes[s.0 as usize].name.0 as usize] == st.name)
            })
            .collect();
        let pinned: Vec<(ScopeId, Span)> = step_scopes
            .iter()
            .zip(&steps)
            .filter_map(|(s, span)| s.map(|s| (s, *span)))
            .collect();
        let (spans, order) = scopes::scope_spans(graph, times, measured, &pinned);
        let scope_at = scope_places(graph, places);
        for s in order {
            let (Some(span), sc) = (spans[s as usize], &graph.scopes[s as usize]) else {
                continue;
            };
            let Some(&(pid, tid)) = scope_at.get(&s) else {
                continue;
            };
            let cat = if sc.annotation {
                Category::UserAnnotation
            } else {
                Category::CpuOp
            };
            let mut a = w.complete(
                cat,
                &graph.names[sc.name.0 as usize],
                pid,
                tid,
                self.origin_ns + span.start_ns,
                span.end_ns - span.start_ns,
            );
            // Input Dims with an input that is not a flat list of sizes (a
            // list of tensors) are left out: that input's text was not kept.
            let sizes: Option<Vec<&[i64]>> = sc.input_dims.as_ref().and_then(|d| {
                d.iter()
                    .map(|x| match x {
                        lumos_trace::Input::Tensor(sizes) => Some(sizes),
                        lumos_trace::Input::Other => None,
                    })
                    .collect()
            });
            if let Some(sizes) = sizes {
                a.input_dims(sizes);
            }
            if let Some(t) = &sc.input_type {
                a.input_type_text(t);
            }
        }
        for ((st, span), sc) in graph.steps.iter().zip(&steps).zip(&step_scopes) {
            // A step without children is a task of its own, already there.
            let first = st.first_task;
            let own =
                graph.task(first).kind == TaskKind::Annotation && graph.name(first) == st.name;
            if sc.is_some() || own {
                continue;
            }
            let (pid, tid) = place(st.first_task);
            w.complete(
                Category::UserAnnotation,
                &st.name,
                pid,
                tid,
                self.origin_ns + span.start_ns,
                span.end_ns - span.start_ns,
            );
        }
        let placed = measured.map(|m| extras::Placed {
            graph,
            measured: m,
            times,
            places,
            origin_ns: self.origin_ns,
        });
        if let Some(at) = &placed {
            extras::gpu_annotations(w, at, &self.about);
        }
        self.tasks(w, places);
        self.flows(w, places, flow_base);
        if let Some(at) = &placed {
            let starts: Vec<Option<i64>> = spans.iter().map(|s| s.map(|s| s.start_ns)).collect();
            extras::flows(w, at, &self.about, &starts, flow_base);
        }
    }

    /// Every task at its time, with its args.
    fn tasks<W: Write>(&self, w: &mut KinetoWriter<W>, places: &[(i64, i64)]) {
        let (graph, times) = (self.graph, &*self.times);
        // The first step whose path each task is on.
        let mut on_path: Vec<Option<u32>> = Vec::new();
        if let Some(p) = self.paths {
            on_path = vec![None; graph.tasks.len()];
            for m in &p.marks {
                if let Some(slot) = on_path.get_mut(m.task.idx()) {
                    slot.get_or_insert(m.step);
                }
            }
        }
        for (i, t) in graph.tasks.iter().enumerate() {
            let kind = &graph.processors[t.proc.idx()].kind;
            let cat = match (kind, t.kind) {
                (ProcKind::Thread { .. }, TaskKind::Runtime) => Category::Runtime,
                (ProcKind::Thread { .. }, TaskKind::Annotation) => Category::UserAnnotation,
                (ProcKind::Thread { .. }, _) => Category::CpuOp,
                (ProcKind::Stream { .. }, TaskKind::Memcpy) => Category::Memcpy,
                (ProcKind::Stream { .. }, TaskKind::Memset) => Category::Memset,
                (ProcKind::Stream { .. }, _) => Category::Kernel,
            };
            let (pid, tid) = places[t.proc.idx()];
            let id = TaskId(i as u32);
            let (s, e) = (times.start_of(id), times.end_of(id));
            let mut a = w.complete(cat, graph.name(id), pid, tid, self.origin_ns + s, e - s);
            a.correlation(t.correlation);
            if let ProcKind::Stream { device, stream } = *kind {
                a.stream(stream).device(device);
            }
            self.args.add(i, &mut a);
            if let (Some(p), Some(Some(k))) = (self.paths, on_path.get(i)) {
                a.str("critical_path_step", &p.steps[*k as usize].step);
            }
        }
    }

    /// An arrow from each launching call to the GPU work it launched, as
    /// the profiler draws them (`ac2g`): its id is the correlation where
    /// that is unique, else a fresh number above every correlation.
    fn flows<W: Write>(&self, w: &mut KinetoWriter<W>, places: &[(i64, i64)], base: u64) {
        let (graph, times) = (self.graph, &*self.times);
        let launches: Vec<(TaskId, TaskId)> = graph
            .edges
            .iter()
            .filter(|e| e.kind == DepKind::Launch)
            .map(|e| (e.from, e.to))
            .collect();
        let mut seen = std::collections::HashMap::<u64, u32>::new();
        for &(_, to) in &launches {
            *seen.entry(graph.task(to).correlation).or_default() += 1;
        }
        let mut fresh = seen.keys().copied().max().unwrap_or(0);
        for (from, to) in launches {
            let c = graph.task(to).correlation;
            let id = if c != 0 && seen[&c] == 1 {
                c
            } else {
                fresh += 1;
                fresh
            };
            let (fp, ft) = places[graph.task(from).proc.idx()];
            let (tp, tt) = places[graph.task(to).proc.idx()];
            let id = base.wrapping_add(id);
            let (s, e) = (times.start_of(from), times.start_of(to));
            w.flow(
                FlowKind::Launch,
                FlowPhase::Start,
                id,
                fp,
                ft,
                self.origin_ns + s,
            );
            w.flow(
                FlowKind::Launch,
                FlowPhase::End,
                id,
                tp,
                tt,
                self.origin_ns + e,
            );
        }
    }

    /// The `critical path` process: a track per step with each hop's
    /// wait and time on the path, and arrows between processors.
    fn path_track<W: Write>(&self, w: &mut KinetoWriter<W>, p: &CriticalPaths) {
        const CAT: &str = "critical_path";
        let graph = self.graph;
        let place = |t: TaskId| place_of(&graph.processors[graph.task(t).proc.idx()].kind);
        // A process id no thread or device of the trace uses.
        let pid = graph
            .processors
            .iter()
            .map(|pr| match pr.kind {
                ProcKind::Thread { pid, .. } => pid,
                ProcKind::Stream { device, .. } => device,
            })
            .max()
            .unwrap_or(0)
            .saturating_add(1);
        w.process_name(pid, "critical path");
        for (k, s) in p.steps.iter().enumerate() {
            w.thread_name(pid, k as i64, &s.step);
        }
        let mut flow = 0u64;
        for (i, (m, row)) in p.marks.iter().zip(&p.hops).enumerate() {
            let tid = i64::from(m.step);
            if m.at_ns > m.wait_from_ns {
                w.complete_in(
                    CAT,
                    &format!("wait: {}", row.bound),
                    pid,
                    tid,
                    self.origin_ns + m.wait_from_ns,
                    m.at_ns - m.wait_from_ns,
                )
                .str("task", &row.task);
            }
            if m.anchor_ns > m.at_ns {
                w.complete_in(
                    CAT,
                    graph.name(m.task),
                    pid,
                    tid,
                    self.origin_ns + m.at_ns,
                    m.anchor_ns - m.at_ns,
                )
                .str("category", row.category)
                .str("bound", row.bound)
                .str("operator", &row.operator);
            }
            // An arrow from the previous hop of the same step when the
            // path changes thread or stream.
            let Some(prev) = i.checked_sub(1).map(|j| p.marks[j]) else {
                continue;
            };
            if prev.step != m.step || place(prev.task) == place(m.task) {
                continue;
            }
            flow += 1;
            let (fp, ft) = place(prev.task);
            let from_ts = prev.at_ns.max(prev.anchor_ns - 1);
            w.flow_in(
                CAT,
                "critical path",
                FlowPhase::Start,
                flow,
                fp,
                ft,
                self.origin_ns + from_ts,
            );
            let (tp, tt) = place(m.task);
            w.flow_in(
                CAT,
                "critical path",
                FlowPhase::End,
                flow,
                tp,
                tt,
                self.origin_ns + m.at_ns,
            );
        }
    }
}

/// Where a processor's events go in a file of one rank: a thread on its
/// process and thread, a stream on its device and stream, as the profiler
/// writes them.
fn place_of(kind: &ProcKind) -> (i64, i64) {
    match *kind {
        ProcKind::Thread { pid, tid } => (pid, tid),
        ProcKind::Stream { device, stream } => (device, stream),
    }
}

/// The place of each scope that encloses a CPU task: its thread's.
fn scope_places(
    graph: &Graph,
    places: &[(i64, i64)],
) -> std::collections::HashMap<u32, (i64, i64)> {
    let mut out = std::collections::HashMap::new();
    for (i, t) in graph.tasks.iter().enumerate() {
        if !matches!(graph.processors[t.proc.idx()].kind, ProcKind::Thread { .. }) {
            continue;
        }
        for s in graph.scope_chain(TaskId(i as u32)) {
            out.entry(s.0).or_insert(places[t.proc.idx()]);
        }
    }
    out
}

/// `deviceProperties`, when the source recorded any.
fn write_devices<W: Write>(w: &mut KinetoWriter<W>, devices: &[&lumos_trace::Device]) {
    if devices.is_empty() {
        return;
    }
    let props: Vec<DeviceProperties<'_>> = devices
        .iter()
        .map(|d| DeviceProperties {
            id: d.id,
            name: &d.name,
            total_global_mem: d.total_global_mem.unwrap_or(0),
            compute_major: d.compute_major.unwrap_or(0),
            compute_minor: d.compute_minor.unwrap_or(0),
            num_sms: d.num_sms.unwrap_or(0),
            ..DeviceProperties::default()
        })
        .collect();
    w.device_properties(&props);
}

/// `distributedInfo`: the rank, world size and ranks written with it
/// (`job`), and what the source said of its job.
fn write_distributed<W: Write>(
    w: &mut KinetoWriter<W>,
    (rank, world_size, written_ranks): (u32, Option<u32>, Option<&[u32]>),
    about: &TraceAbout,
) {
    let pgs: Vec<PgConfig<'_>> = about
        .process_groups
        .iter()
        .map(|g| PgConfig {
            name: &g.name,
            desc: g.desc.as_deref().unwrap_or(""),
            // Not kept by the reader: the backend stands in for it.
            backend_config: about.backend.as_deref().unwrap_or(""),
            size: u64::from(g.size.unwrap_or(g.ranks.len() as u32)),
            ranks: &g.ranks,
        })
        .collect();
    w.distributed_info(&DistributedInfo {
        backend: about.backend.as_deref(),
        rank: Some(u64::from(rank)),
        world_size: world_size.map(u64::from),
        process_groups: (!pgs.is_empty()).then_some(&pgs[..]),
        nccl_version: about.nccl_version.as_deref(),
        // A replayed timeline is one rank's, whatever subset its source
        // belonged to; a prediction's stages are a subset on purpose.
        written_ranks,
        merged_ranks: None,
    });
}

/// A predicted job's process groups as a trace records them.
fn process_groups(groups: &[lumos_models::ProcessGroup]) -> Vec<lumos_trace::ProcessGroup> {
    groups
        .iter()
        .map(|g| lumos_trace::ProcessGroup {
            name: g.name.clone(),
            desc: Some(g.kind.description().to_owned()),
            size: u32::try_from(g.ranks.len()).ok(),
            ranks: g.ranks.iter().map(|&r| r as i64).collect(),
        })
        .collect()
}

/// The arguments of task `t`'s collective in the predicted job, if
/// `written` placed it in a group: its traced collective's name, the
/// predicted message size, and the group, `Seq` and peers `written`
/// gives.
fn collective_args(stage: &PredictedStage<'_>, written: &WrittenStage, t: TaskId, a: &mut Fields) {
    let Some(c) = written.comm(t) else { return };
    let g = &stage.graph;
    let Some(coll) = g.task(t).collective.map(|ci| &g.collectives[ci as usize]) else {
        return;
    };
    let group = &written.groups[c.group];
    let ranks: Vec<i64> = group.ranks.iter().map(|&r| r as i64).collect();
    // The element size is the traced one (bytes over elements).
    let element = match (coll.bytes, coll.elements) {
        (Some(b), Some(n)) if n > 0 && b % n == 0 => Some(b / n),
        _ => None,
    };
    a.collective(&CollectiveFields {
        name: &coll.name,
        elements: c.elements.zip(element),
        pg_name: &group.name,
        pg_desc: group.kind.description(),
        pg_ranks: &ranks,
        seq: c.seq,
        src_dst: c.peers,
    });
}

/// `<stem>.<what>.json.gz`: the name of a timeline file (a rank's, or
/// with stem `job` a merged one, [`merged_file_name`]).
pub(crate) fn file_name_of(stem: &OsStr, what: &str) -> OsString {
    let mut name = stem.to_owned();
    name.push(format!(".{what}.json.gz"));
    name
}

/// What a predicted stage's timeline is named after: the rank it stands
/// for in the target job (one function for [`Timeline::predicted`] and
/// [`Timeline::predicted_file_names`], so the names checked before a
/// prediction are those written after it).
fn predicted_stem(rank: u32) -> String {
    format!("rank{rank}")
}

/// A prediction's stage timelines ([`Timeline::predicted`]) and what they
/// leave out.
pub struct PredictedTimelines<'a> {
    /// One per predicted stage.
    pub timelines: Vec<Timeline<'a>>,
    /// What the timelines cannot state, for the user (collectives written
    /// without a process group).
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_named_after_their_trace() {
        for (trace, stem) in [
            ("a/rank0.json.gz", "rank0"),
            ("rank0.json", "rank0"),
            ("run.v2.pt.trace.json", "run.v2.pt.trace"),
        ] {
            assert_eq!(output_stem(Path::new(trace)), stem);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_trace_name_that_is_not_utf8_keeps_its_bytes() {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        // It was `trace`, for `tr\xfe.json.gz` too.
        let stem = |b: &[u8]| output_stem(Path::new(OsStr::from_bytes(b)));
        assert_eq!(stem(b"d/tr\xff.json.gz").into_vec(), b"tr\xff");
        assert_ne!(stem(b"tr\xff.json.gz"), stem(b"tr\xfe.json.gz"));
        assert_eq!(
            file_name_of(&stem(b"tr\xff.json"), "replayed").into_vec(),
            b"tr\xff.replayed.json.gz"
        );
    }
}
