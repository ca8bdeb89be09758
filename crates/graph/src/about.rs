//! What a trace says about itself beyond its events (track names, labels
//! and order, devices, the job's process groups), and the few events of it
//! that are not tasks but that a written timeline shows again (GPU-side
//! annotations, forward-to-backward flows), kept with a rank so that the
//! timelines written from its graph carry them.

use lumos_trace::{Category, Device, FlowKind, FlowPhase, ProcessGroup, Trace, TraceMeta};
use rustc_hash::FxHashMap;

use crate::build::{ident_num, stream_from_tid};

/// A process or thread (or GPU stream) of a trace, with the pid and tid
/// the graph's processors use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Track {
    /// Process id.
    pub pid: i64,
    /// Thread id; `None` for the process itself.
    pub tid: Option<i64>,
    /// Its `process_name` / `thread_name`, if recorded.
    pub name: Option<String>,
    /// Its `process_sort_index` / `thread_sort_index`, if recorded.
    pub sort_index: Option<i64>,
    /// Its `process_labels`, if recorded (processes only).
    pub labels: Option<String>,
}

/// A `gpu_user_annotation` event: the GPU-side range of a
/// `record_function` annotation on one stream, on the trace's own clock.
/// Its span is measured; a written timeline places it over the GPU tasks
/// it enclosed instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuAnnotation {
    /// The annotation's name.
    pub name: String,
    /// The device of the stream it is on (as the graph's processors).
    pub device: i64,
    /// The stream.
    pub stream: i64,
    /// Start, in ns on the trace's clock.
    pub start_ns: i64,
    /// End, in ns on the trace's clock.
    pub end_ns: i64,
}

/// One end of a flow: the track and time it binds to (the slice there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowEnd {
    /// Process id.
    pub pid: i64,
    /// Thread id.
    pub tid: i64,
    /// Time, in ns on the trace's clock.
    pub ts_ns: i64,
}

/// A flow that is not a launch (`fwdbwd`: a forward operator to its
/// backward one), with both ends recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowLink {
    /// What it links.
    pub kind: FlowKind,
    /// Its start (`s`).
    pub from: FlowEnd,
    /// Its end (`f`).
    pub to: FlowEnd,
}

/// The file-level facts of a trace that its graph does not hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceAbout {
    /// Named or ordered tracks, processes before their threads, in the
    /// order the trace first mentions them.
    pub tracks: Vec<Track>,
    /// `deviceProperties`.
    pub devices: Vec<Device>,
    /// `distributedInfo.backend`.
    pub backend: Option<String>,
    /// `distributedInfo.nccl_version`.
    pub nccl_version: Option<String>,
    /// `distributedInfo.pg_config`.
    pub process_groups: Vec<ProcessGroup>,
    /// Its `gpu_user_annotation` events, in file order.
    pub gpu_annotations: Vec<GpuAnnotation>,
    /// Its flows other than launches whose both ends it recorded, by the
    /// order of their start in the file.
    pub flows: Vec<FlowLink>,
}

impl TraceAbout {
    /// What `trace` says about itself.
    pub fn of(trace: &Trace) -> TraceAbout {
        let mut about = TraceAbout::of_meta(&trace.meta);
        for n in &trace.track_names {
            about.track(ident_num(n.pid), n.tid.map(ident_num)).name = Some(n.name.clone());
        }
        for s in &trace.track_sorts {
            about
                .track(ident_num(s.pid), s.tid.map(ident_num))
                .sort_index = Some(s.index);
        }
        for l in &trace.process_labels {
            about.track(ident_num(l.pid), None).labels = Some(l.labels.clone());
        }
        // Processes first, so a viewer meets a process before its threads.
        about.tracks.sort_by_key(|t| t.tid.is_some());
        about.gpu_annotations = gpu_annotations(trace);
        about.flows = flow_links(trace);
        about
    }

    /// What the metadata members say (no tracks: those are events).
    pub fn of_meta(meta: &TraceMeta) -> TraceAbout {
        TraceAbout {
            tracks: Vec::new(),
            devices: meta.devices.clone(),
            backend: meta.backend.clone(),
            nccl_version: meta.nccl_version.clone(),
            process_groups: meta.process_groups.clone(),
            gpu_annotations: Vec::new(),
            flows: Vec::new(),
        }
    }

    fn track(&mut self, pid: i64, tid: Option<i64>) -> &mut Track {
        // Traces name a few dozen tracks at most: a scan is enough.
        let k = match self
            .tracks
            .iter()
            .position(|t| t.pid == pid && t.tid == tid)
        {
            Some(k) => k,
            None => {
                self.tracks.push(Track {
                    pid,
                    tid,
                    ..Track::default()
                });
                self.tracks.len() - 1
            }
        };
        &mut self.tracks[k]
    }
}

/// The `gpu_user_annotation` events of `trace`, on the streams the graph's
/// processors name.
fn gpu_annotations(trace: &Trace) -> Vec<GpuAnnotation> {
    trace
        .events
        .iter()
        .filter(|e| e.category == Category::GpuUserAnnotation)
        .map(|e| GpuAnnotation {
            name: trace.name(e).to_owned(),
            device: e.device().unwrap_or(ident_num(e.pid)),
            stream: e
                .stream()
                .or_else(|| stream_from_tid(trace, e.tid))
                .unwrap_or(0),
            start_ns: e.ts_ns,
            end_ns: e.end_ns(),
        })
        .collect()
}

/// The flows of `trace` that are not launches, each whose id has exactly
/// one start and one end (ids reused or half-recorded are left out: which
/// end goes with which is not known).
fn flow_links(trace: &Trace) -> Vec<FlowLink> {
    let mut ends: FxHashMap<(u64, bool), (u32, Option<FlowEnd>)> = FxHashMap::default();
    let mut order = Vec::new();
    for f in trace.flows.iter().filter(|f| f.kind != FlowKind::Launch) {
        let start = f.phase == FlowPhase::Start;
        let slot = ends.entry((f.id, start)).or_insert((0, None));
        slot.0 += 1;
        slot.1 = Some(FlowEnd {
            pid: ident_num(f.pid),
            tid: ident_num(f.tid),
            ts_ns: f.ts_ns,
        });
        if start && slot.0 == 1 {
            order.push((f.id, f.kind));
        }
    }
    order
        .into_iter()
        .filter_map(
            |(id, kind)| match (ends.get(&(id, true)), ends.get(&(id, false))) {
                (Some(&(1, Some(from))), Some(&(1, Some(to)))) => Some(FlowLink { kind, from, to }),
                _ => None,
            },
        )
        .collect()
}
