//! What a trace says about itself beyond its events (track names and
//! order, devices, the job's process groups), kept with a rank so that the
//! timelines written from its graph carry it again.

use lumos_trace::{Device, ProcessGroup, Trace, TraceMeta};

use crate::build::ident_num;

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
        // Processes first, so a viewer meets a process before its threads.
        about.tracks.sort_by_key(|t| t.tid.is_some());
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
