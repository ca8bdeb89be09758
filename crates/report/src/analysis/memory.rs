//! The memory timeline from the profiler's `[memory]` events
//! (`profile_memory=True`): per GPU, allocated and reserved bytes over
//! time, and their peak per step.

use lumos_graph::Span;
use lumos_sim::timeline_bin_ns;
use lumos_trace::MemoryEvent;
use serde::Serialize;

use super::SelectedStep;
use crate::units::us;

/// The memory of every GPU that has `[memory]` events.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemoryReport {
    /// Per device, in device order.
    pub devices: Vec<DeviceMemory>,
    /// Per device and selected step (device first).
    pub steps: Vec<StepMemory>,
}

/// One GPU's memory over the trace.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeviceMemory {
    /// The device index (`Device Id`).
    pub device: i64,
    /// Where allocated bytes come from: `total_allocated` (the allocator's
    /// total, recorded on every event) or `bytes_sum` (older profilers:
    /// the sum of every allocation and free since the trace began, so
    /// memory allocated before it is not counted and values may be
    /// negative).
    pub source: &'static str,
    /// `[memory]` events of the device.
    pub events: usize,
    /// The most allocated during the selected steps, bytes.
    pub peak_allocated_bytes: Option<i64>,
    /// The most reserved during the selected steps, bytes (null when the
    /// profiler did not record `Total Reserved`).
    pub peak_reserved_bytes: Option<i64>,
    /// Allocated and reserved bytes over the whole window.
    pub timeline: MemoryTimeline,
}

/// Memory per bin of the window, like the GPU-busy timeline: the most
/// bytes at any moment of the bin; null before the device's first event.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemoryTimeline {
    /// Bin width, us (1 ms, wider for windows over 65 s).
    pub bin_us: f64,
    /// Allocated bytes per bin.
    pub allocated_bytes: Vec<Option<i64>>,
    /// Reserved bytes per bin (empty when not recorded).
    pub reserved_bytes: Vec<Option<i64>>,
}

/// One GPU's memory during one step.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepMemory {
    /// The device.
    pub device: i64,
    /// The step's name.
    pub step: String,
    /// Its position among the trace's steps (null for `window`).
    pub index: Option<usize>,
    /// Allocated when the step began, bytes (null before the first event).
    pub start_allocated_bytes: Option<i64>,
    /// Allocated when it ended, bytes.
    pub end_allocated_bytes: Option<i64>,
    /// The most allocated at any moment of it, bytes.
    pub peak_allocated_bytes: Option<i64>,
    /// The most reserved at any moment of it, bytes.
    pub peak_reserved_bytes: Option<i64>,
    /// Allocations during it.
    pub allocations: usize,
    /// Bytes they allocated.
    pub allocated_bytes: i64,
    /// Bytes freed during it.
    pub freed_bytes: i64,
}

/// A device's memory as levels over time, window-relative.
struct Levels {
    /// Event times.
    at: Vec<i64>,
    allocated: Vec<i64>,
    /// Empty when not recorded.
    reserved: Vec<i64>,
    /// Signed bytes of each event.
    bytes: Vec<i64>,
}

impl Levels {
    fn of(events: &[&MemoryEvent], origin_ns: i64) -> (Levels, &'static str) {
        let totals = events.iter().all(|e| e.total_allocated.is_some());
        let mut running = 0i64;
        let allocated = events
            .iter()
            .map(|e| match (totals, e.total_allocated) {
                (true, Some(t)) => t,
                _ => {
                    running = running.saturating_add(e.bytes);
                    running
                }
            })
            .collect();
        let reserved = if events.iter().all(|e| e.total_reserved.is_some()) {
            events.iter().filter_map(|e| e.total_reserved).collect()
        } else {
            Vec::new()
        };
        let levels = Levels {
            at: events
                .iter()
                .map(|e| e.ts_ns.saturating_sub(origin_ns))
                .collect(),
            allocated,
            reserved,
            bytes: events.iter().map(|e| e.bytes).collect(),
        };
        let source = if totals {
            "total_allocated"
        } else {
            "bytes_sum"
        };
        (levels, source)
    }

    /// Index range of the events inside `w`, and the last before it.
    fn range(&self, w: Span) -> (Option<usize>, std::ops::Range<usize>) {
        let from = self.at.partition_point(|&t| t < w.start_ns);
        let upto = self.at.partition_point(|&t| t < w.end_ns);
        (from.checked_sub(1), from..upto.max(from))
    }

    /// The most of `series` over `w`: the level entering it and every
    /// event inside.
    fn peak(&self, series: &[i64], w: Span) -> Option<i64> {
        if series.is_empty() {
            return None;
        }
        let (before, inside) = self.range(w);
        before
            .map(|i| series[i])
            .into_iter()
            .chain(series[inside].iter().copied())
            .max()
    }

    fn step(&self, device: i64, s: &SelectedStep) -> StepMemory {
        let (before, inside) = self.range(s.span);
        let end = inside.end.checked_sub(1).or(before);
        let bytes = &self.bytes[inside.clone()];
        StepMemory {
            device,
            step: s.name.clone(),
            index: s.index,
            start_allocated_bytes: before.map(|i| self.allocated[i]),
            end_allocated_bytes: end.map(|i| self.allocated[i]),
            peak_allocated_bytes: self.peak(&self.allocated, s.span),
            peak_reserved_bytes: self.peak(&self.reserved, s.span),
            allocations: bytes.iter().filter(|&&b| b > 0).count(),
            allocated_bytes: bytes.iter().filter(|&&b| b > 0).sum(),
            freed_bytes: -bytes.iter().filter(|&&b| b < 0).sum::<i64>(),
        }
    }

    fn timeline(&self, window: Span) -> MemoryTimeline {
        let len = window.len_ns();
        let bin = timeline_bin_ns(len, 1_000_000);
        let bins = if len <= 0 || bin <= 0 {
            0
        } else {
            len / bin + i64::from(len % bin != 0)
        };
        let per_bin = |series: &[i64]| -> Vec<Option<i64>> {
            if series.is_empty() {
                return Vec::new();
            }
            (0..bins)
                .map(|k| {
                    let start = window.start_ns.saturating_add(k.saturating_mul(bin));
                    let w = Span {
                        start_ns: start,
                        end_ns: start.saturating_add(bin).min(window.end_ns),
                    };
                    self.peak(series, w)
                })
                .collect()
        };
        MemoryTimeline {
            bin_us: us(bin),
            allocated_bytes: per_bin(&self.allocated),
            reserved_bytes: per_bin(&self.reserved),
        }
    }
}

/// The memory report of a trace's `[memory]` events on its GPUs (any
/// `Device Type` but the CPU's 0), over the measured `window` and the
/// selected `steps` (measured spans); `origin_ns` is the trace time of the
/// window's start. `None` when no GPU has memory events.
pub(crate) fn memory_report(
    events: &[MemoryEvent],
    origin_ns: i64,
    window: Span,
    steps: &[SelectedStep],
) -> Option<MemoryReport> {
    let mut devices: Vec<i64> = events
        .iter()
        .filter(|e| e.device_type > 0)
        .map(|e| e.device_id)
        .collect();
    devices.sort_unstable();
    devices.dedup();
    if devices.is_empty() {
        return None;
    }
    let mut report = MemoryReport {
        devices: Vec::new(),
        steps: Vec::new(),
    };
    for d in devices {
        let mut evs: Vec<&MemoryEvent> = events
            .iter()
            .filter(|e| e.device_type > 0 && e.device_id == d)
            .collect();
        evs.sort_by_key(|e| e.ts_ns);
        let (levels, source) = Levels::of(&evs, origin_ns);
        let rows: Vec<StepMemory> = steps.iter().map(|s| levels.step(d, s)).collect();
        report.devices.push(DeviceMemory {
            device: d,
            source,
            events: evs.len(),
            peak_allocated_bytes: rows.iter().filter_map(|r| r.peak_allocated_bytes).max(),
            peak_reserved_bytes: rows.iter().filter_map(|r| r.peak_reserved_bytes).max(),
            timeline: levels.timeline(window),
        });
        report.steps.extend(rows);
    }
    Some(report)
}
