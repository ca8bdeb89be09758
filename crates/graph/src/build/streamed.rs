//! The build's one pass over the events, fed by the reader as it folds
//! them ([`TrackSink`], [`super::build_streamed`]) instead of after the
//! read: the events are never all in memory, and the pass runs beside the
//! parsing of the next chunk instead of alone after it.

use lumos_trace::{Event, EventExtra, EventSink, Flow, FlowKind};

use super::tasks::Sorter;

/// What the graph build reads of each event, filed as the reader hands the
/// events over ([`lumos_trace::read_path_into`]): compact per-track records
/// (40 bytes for a CPU event, 48 for GPU work, where an event is 96) and
/// the few events later steps read. It takes the events the build reads
/// and gives the others back (`gpu_user_annotation`, `cuda_event`), which
/// the trace then keeps for what reads them
/// ([`crate::TraceAbout::of`]). It takes the launch flows too and keeps
/// only their count: the build links launches by correlation ids, and a
/// trace's million launch flows were 56 bytes each in the trace until the
/// build dropped it (on a 1 GB rank 14,500 of the replay's 228,000 page
/// faults, though not its peak, which comes later). Other flows (forward
/// to backward) it gives back, for the timeline.
/// [`super::build_streamed`] finishes the build from it and the trace
/// read.
pub struct TrackSink {
    sorter: Sorter<Option<Box<EventExtra>>>,
    /// The events it took (not given back).
    taken: u64,
    /// The launch flows it took.
    launch_flows: u64,
}

impl TrackSink {
    /// An empty sink, for one trace file.
    pub fn new() -> TrackSink {
        TrackSink {
            sorter: Sorter::new(),
            taken: 0,
            launch_flows: 0,
        }
    }

    /// How many launch flows it took: with the flows the trace kept, the
    /// flows [`lumos_trace::read_path`] keeps.
    pub fn launch_flows_taken(&self) -> u64 {
        self.launch_flows
    }

    /// How many events it took: with the events the trace kept, the
    /// complete events the reader kept ([`lumos_trace::read_path`]'s
    /// `events.len()`).
    pub fn events_taken(&self) -> u64 {
        self.taken
    }

    /// What the sink filed, for the build.
    pub(super) fn into_sorter(self) -> Sorter<Option<Box<EventExtra>>> {
        self.sorter
    }
}

impl Default for TrackSink {
    fn default() -> TrackSink {
        TrackSink::new()
    }
}

impl std::fmt::Debug for TrackSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackSink").finish_non_exhaustive()
    }
}

impl EventSink for TrackSink {
    fn event(&mut self, mut event: Event, names: &[String]) -> Option<Event> {
        // Moved into the record, as an owned build does, so that freeing
        // the event frees nothing the record needs.
        let extra = event.extra.take();
        match self.sorter.sort(&event, extra, names) {
            Ok(()) => {
                self.taken += 1;
                None
            }
            Err(extra) => {
                event.extra = extra;
                Some(event)
            }
        }
    }

    fn flow(&mut self, flow: Flow) -> Option<Flow> {
        if flow.kind == FlowKind::Launch {
            self.launch_flows += 1;
            return None;
        }
        Some(flow)
    }
}
