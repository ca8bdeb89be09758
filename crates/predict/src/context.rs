//! What a trace says about its rank beyond the graph: process groups with
//! their descriptions and member ranks, the node size and the GPU model.
//! Structure discovery and the communication models need it; the graph does
//! not carry it.

use lumos_graph::Measured;
use lumos_trace::{RankSource, Trace, TraceMeta};

/// One process group as the trace records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// `pg_name`, as the collectives' `Process Group Name` refers to it.
    pub name: String,
    /// `pg_desc` (Megatron: `DATA_PARALLEL_GROUP`, ...), if recorded.
    pub desc: Option<String>,
    /// Global ranks, in group order (empty when not recorded).
    pub ranks: Vec<i64>,
}

/// Per-rank facts from the trace's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceContext {
    /// Global rank.
    pub rank: u32,
    /// True when the trace states no rank (no `distributedInfo.rank`, no
    /// `rank<N>` in its file name) and [`Self::rank`] is the 0 taken for
    /// it: alone it is predicted, but it has no place among a job's ranks.
    pub rank_unstated: bool,
    /// World size, if recorded.
    pub world_size: Option<u32>,
    /// Process groups this rank belongs to.
    pub groups: Vec<GroupInfo>,
    /// GPUs per node: the devices the trace lists, else 8.
    pub gpus_per_node: usize,
    /// Whether [`Self::gpus_per_node`] is the devices the trace lists
    /// (false: none listed, 8 assumed).
    pub devices_listed: bool,
    /// Name of the rank's GPU (`NVIDIA H100 80GB HBM3`), if recorded.
    pub device_name: Option<String>,
    /// The GPU's streaming multiprocessors (compute units), if recorded.
    pub device_sms: Option<u32>,
    /// The GPU's memory in bytes, if recorded.
    pub device_memory_bytes: Option<u64>,
    /// Absolute time of the graph's window start (trace base time plus
    /// [`Measured::origin_ns`]), used to line up the stages of one job.
    pub clock_origin_ns: i64,
}

impl Default for TraceContext {
    fn default() -> Self {
        TraceContext {
            rank: 0,
            rank_unstated: false,
            world_size: None,
            groups: Vec::new(),
            gpus_per_node: 8,
            devices_listed: false,
            device_name: None,
            device_sms: None,
            device_memory_bytes: None,
            clock_origin_ns: 0,
        }
    }
}

impl TraceContext {
    /// The context of `trace`, whose graph was built with `measured`.
    pub fn from_trace(trace: &Trace, measured: &Measured) -> TraceContext {
        TraceContext::from_meta(&trace.meta, measured)
    }

    /// The context of a trace with metadata `meta`, whose graph was built
    /// with `measured` (for graphs read back from a compact file, whose
    /// trace is gone).
    pub fn from_meta(meta: &TraceMeta, measured: &Measured) -> TraceContext {
        TraceContext {
            rank: meta.rank,
            rank_unstated: meta.rank_source == RankSource::Default,
            world_size: meta.world_size,
            groups: meta
                .process_groups
                .iter()
                .map(|g| GroupInfo {
                    name: g.name.clone(),
                    desc: g.desc.clone(),
                    ranks: g.ranks.clone(),
                })
                .collect(),
            gpus_per_node: if meta.devices.is_empty() {
                8
            } else {
                meta.devices.len()
            },
            devices_listed: !meta.devices.is_empty(),
            device_name: meta.devices.first().map(|d| d.name.clone()),
            device_sms: meta.devices.first().and_then(|d| d.num_sms),
            device_memory_bytes: meta.devices.first().and_then(|d| d.total_global_mem),
            clock_origin_ns: meta.base_time_ns.unwrap_or(0) + measured.origin_ns,
        }
    }

    /// Takes the hardware `other` describes (its GPU and node size) in
    /// place of this rank's own, keeping the rank, its groups and its
    /// clock: the context of a graph re-timed with another recording's
    /// durations (`--durations-from`), whose GPU preset, network presets
    /// and calibration must be those of the recording the durations come
    /// from.
    pub fn take_hardware_of(&mut self, other: &TraceContext) {
        self.gpus_per_node = other.gpus_per_node;
        self.devices_listed = other.devices_listed;
        self.device_name = other.device_name.clone();
        self.device_sms = other.device_sms;
        self.device_memory_bytes = other.device_memory_bytes;
    }

    /// The group named `name`.
    pub fn group(&self, name: &str) -> Option<&GroupInfo> {
        self.groups.iter().find(|g| g.name == name)
    }
}
