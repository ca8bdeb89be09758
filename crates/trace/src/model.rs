//! What the reader produces: a compact, Kineto-shaped but validated record of
//! one trace file.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::shapes::InputDims;

/// Index of an interned string in [`Trace::strings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrId(pub u32);

/// A `pid` or `tid` as written: a number, or a string that is not one
/// (`"Spans"`, `"stream 7"`). Numeric strings (`"25738"`) become numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ident {
    /// A number.
    Num(i64),
    /// A non-numeric string.
    Name(StrId),
}

/// Event categories the reader keeps, with legacy spellings folded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// `cpu_op`, legacy `Operator`.
    CpuOp,
    /// `user_annotation` (record_function ranges, `ProfilerStep#N`).
    UserAnnotation,
    /// `gpu_user_annotation`: GPU-side mirror of an annotation; not work.
    GpuUserAnnotation,
    /// `cuda_runtime`, legacy `Runtime`; HIP runtime calls too.
    Runtime,
    /// `cuda_driver`.
    Driver,
    /// `kernel`, legacy `Kernel`.
    Kernel,
    /// `gpu_memcpy`, legacy `Memcpy`.
    Memcpy,
    /// `gpu_memset`, legacy `Memset`.
    Memset,
    /// `cuda_sync`: evidence of synchronization, not GPU work.
    CudaSync,
    /// `cuda_event`: event record activity.
    CudaEvent,
}

impl Category {
    /// Maps a `cat` string to a kept category; `None` for everything else.
    pub fn parse(cat: &str) -> Option<Category> {
        Some(match cat {
            "cpu_op" | "Operator" | "operator" => Category::CpuOp,
            "user_annotation" => Category::UserAnnotation,
            "gpu_user_annotation" => Category::GpuUserAnnotation,
            "cuda_runtime" | "Runtime" | "runtime" => Category::Runtime,
            "cuda_driver" => Category::Driver,
            "kernel" | "Kernel" => Category::Kernel,
            "gpu_memcpy" | "Memcpy" | "memcpy" => Category::Memcpy,
            "gpu_memset" | "Memset" | "memset" => Category::Memset,
            "cuda_sync" => Category::CudaSync,
            "cuda_event" => Category::CudaEvent,
            _ => return None,
        })
    }

    /// True for kernels, memcpy and memset: the work that occupies a stream.
    pub fn is_gpu_work(self) -> bool {
        matches!(self, Category::Kernel | Category::Memcpy | Category::Memset)
    }

    /// True for runtime and driver calls.
    pub fn is_runtime(self) -> bool {
        matches!(self, Category::Runtime | Category::Driver)
    }

    /// The current Kineto spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::CpuOp => "cpu_op",
            Category::UserAnnotation => "user_annotation",
            Category::GpuUserAnnotation => "gpu_user_annotation",
            Category::Runtime => "cuda_runtime",
            Category::Driver => "cuda_driver",
            Category::Kernel => "kernel",
            Category::Memcpy => "gpu_memcpy",
            Category::Memset => "gpu_memset",
            Category::CudaSync => "cuda_sync",
            Category::CudaEvent => "cuda_event",
        }
    }
}

/// One complete (`ph: "X"`) event of a kept category.
///
/// 96 bytes: a trace holds millions, so the four optional ids are packed
/// in 8 bytes each (one value of each range stands for "absent"; the
/// reader drops and counts an argument that holds it) and read through
/// [`Event::correlation`], [`Event::external_id`], [`Event::stream`] and
/// [`Event::device`].
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Category.
    pub category: Category,
    /// Name.
    pub name: StrId,
    /// Process id (CPU) or device index (GPU).
    pub pid: Ident,
    /// Thread id (CPU) or stream row (GPU).
    pub tid: Ident,
    /// Start, in ns on the trace's own clock (relative to
    /// [`TraceMeta::base_time_ns`] when that is set).
    pub ts_ns: i64,
    /// Duration in ns.
    pub dur_ns: i64,
    correlation: OptU64,
    external_id: OptU64,
    stream: OptI64,
    device: OptI64,
    /// Rarer arguments, allocated only when present.
    pub extra: Option<Box<EventExtra>>,
}

impl Event {
    /// An event without ids or extra arguments; the setters add them.
    pub fn new(
        category: Category,
        name: StrId,
        pid: Ident,
        tid: Ident,
        ts_ns: i64,
        dur_ns: i64,
    ) -> Event {
        Event {
            category,
            name,
            pid,
            tid,
            ts_ns,
            dur_ns,
            correlation: OptU64::NONE,
            external_id: OptU64::NONE,
            stream: OptI64::NONE,
            device: OptI64::NONE,
            extra: None,
        }
    }

    /// End time in ns, saturating at `i64::MAX` (the reader keeps only
    /// events whose end fits, but the fields are public).
    pub fn end_ns(&self) -> i64 {
        self.ts_ns.saturating_add(self.dur_ns)
    }

    /// CUPTI correlation id.
    pub fn correlation(&self) -> Option<u64> {
        self.correlation.get()
    }

    /// `External id`: ties a runtime call and its GPU work to a CPU op.
    pub fn external_id(&self) -> Option<u64> {
        self.external_id.get()
    }

    /// `stream` arg (GPU events and `cuda_sync`).
    pub fn stream(&self) -> Option<i64> {
        self.stream.get()
    }

    /// `device` arg.
    pub fn device(&self) -> Option<i64> {
        self.device.get()
    }

    /// Sets [`Event::correlation`]; false (and absent) for `u64::MAX`,
    /// the one value it cannot hold.
    pub fn set_correlation(&mut self, v: Option<u64>) -> bool {
        self.correlation.set(v)
    }

    /// Sets [`Event::external_id`]; false (and absent) for `u64::MAX`.
    pub fn set_external_id(&mut self, v: Option<u64>) -> bool {
        self.external_id.set(v)
    }

    /// Sets [`Event::stream`]; false (and absent) for `i64::MIN`.
    pub fn set_stream(&mut self, v: Option<i64>) -> bool {
        self.stream.set(v)
    }

    /// Sets [`Event::device`]; false (and absent) for `i64::MIN`.
    pub fn set_device(&mut self, v: Option<i64>) -> bool {
        self.device.set(v)
    }
}

// A trace holds millions of events, a quarter of them with an extra: a
// field that grows either is memory on every one (docs/PERFORMANCE.md,
// "Compact events"), so a change of size fails the build.
const _: () = assert!(std::mem::size_of::<Event>() == 96);
const _: () = assert!(std::mem::size_of::<EventExtra>() == 80);

/// An optional `u64` in 8 bytes: `u64::MAX` is "absent".
#[derive(Clone, Copy, PartialEq, Eq)]
struct OptU64(u64);

impl OptU64 {
    const NONE: OptU64 = OptU64(u64::MAX);

    fn get(self) -> Option<u64> {
        (self != Self::NONE).then_some(self.0)
    }

    fn set(&mut self, v: Option<u64>) -> bool {
        *self = v.map_or(Self::NONE, OptU64);
        v == self.get()
    }
}

impl fmt::Debug for OptU64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

/// An optional `i64` in 8 bytes: `i64::MIN` is "absent".
#[derive(Clone, Copy, PartialEq, Eq)]
struct OptI64(i64);

impl OptI64 {
    const NONE: OptI64 = OptI64(i64::MIN);

    fn get(self) -> Option<i64> {
        (self != Self::NONE).then_some(self.0)
    }

    fn set(&mut self, v: Option<i64>) -> bool {
        *self = v.map_or(Self::NONE, OptI64);
        v == self.get()
    }
}

impl fmt::Debug for OptI64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

/// Arguments most events lack, allocated only when one is present.
///
/// Kept small because about a quarter of the events of a trace recorded
/// with shapes have one (operators with `Input Dims`): the arguments of
/// CUDA activity records and the collective arguments, rarer still, are
/// boxed apart, and `Input Dims` / `Input type` are shared between the
/// events (and graph scopes) that carry equal values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventExtra {
    /// `Sequence number` (autograd).
    pub sequence_number: Option<i64>,
    /// `Fwd thread id` (autograd).
    pub fwd_thread_id: Option<i64>,
    /// `Input Dims`, parsed (shared: equal lists are one allocation).
    pub input_dims: Option<InputDims>,
    /// `Input type` as raw JSON text (shared: equal texts are one
    /// allocation).
    pub input_type: Option<Arc<str>>,
    /// Arguments of CUDA activity records (syncs, events, graph kernels,
    /// copies); see the accessors below.
    pub activity: Option<Box<ActivityArgs>>,
    /// Collective arguments (`record_param_comms`, NCCL kernels).
    pub collective: Option<Box<CollectiveArgs>>,
}

impl EventExtra {
    /// True if no field is set.
    pub fn is_empty(&self) -> bool {
        *self == EventExtra::default()
    }

    /// `cuda_sync`: the stream waited on (`wait_on_stream`).
    pub fn wait_on_stream(&self) -> Option<i64> {
        self.activity.as_ref()?.wait_on_stream
    }

    /// `cuda_sync`: correlation of the `cudaEventRecord` call waited on.
    pub fn wait_on_event_record_correlation(&self) -> Option<i64> {
        self.activity.as_ref()?.wait_on_event_record_correlation
    }

    /// `cuda_sync` / `cuda_event`: the CUDA event id.
    pub fn event_id(&self) -> Option<i64> {
        self.activity.as_ref()?.event_id
    }

    /// `graph id` of a kernel launched through a CUDA graph.
    pub fn graph_id(&self) -> Option<i64> {
        self.activity.as_ref()?.graph_id
    }

    /// `graph node id` of such a kernel.
    pub fn graph_node_id(&self) -> Option<i64> {
        self.activity.as_ref()?.graph_node_id
    }

    /// `bytes` moved by a memcpy or memset.
    pub fn bytes(&self) -> Option<u64> {
        self.activity.as_ref()?.bytes
    }
}

/// The arguments CUPTI activity records carry: on `cuda_sync`,
/// `cuda_event`, CUDA-graph kernels and copies only, so boxed apart from
/// [`EventExtra`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActivityArgs {
    /// `cuda_sync`: the stream waited on (`wait_on_stream`).
    pub wait_on_stream: Option<i64>,
    /// `cuda_sync`: correlation of the `cudaEventRecord` call waited on.
    pub wait_on_event_record_correlation: Option<i64>,
    /// `cuda_sync` / `cuda_event`: the CUDA event id.
    pub event_id: Option<i64>,
    /// `graph id` of a kernel launched through a CUDA graph.
    pub graph_id: Option<i64>,
    /// `graph node id` of such a kernel.
    pub graph_node_id: Option<i64>,
    /// `bytes` moved by a memcpy or memset.
    pub bytes: Option<u64>,
}

impl ActivityArgs {
    /// True if no field is set.
    pub fn is_empty(&self) -> bool {
        *self == ActivityArgs::default()
    }
}

/// The collective keys PyTorch records on `record_param_comms` and copies to
/// NCCL kernels. Texts and rank lists repeat across a trace's collectives
/// and are shared between them, as [`EventExtra::input_type`] is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CollectiveArgs {
    /// `Collective name`.
    pub name: Option<Arc<str>>,
    /// `In msg nelems`.
    pub in_nelems: Option<u64>,
    /// `Out msg nelems`.
    pub out_nelems: Option<u64>,
    /// `Group size`.
    pub group_size: Option<u32>,
    /// `dtype`.
    pub dtype: Option<Arc<str>>,
    /// `Process Group Name`.
    pub pg_name: Option<Arc<str>>,
    /// `Process Group Description`.
    pub pg_desc: Option<Arc<str>>,
    /// `Process Group Ranks`, parsed; see [`RankList`].
    pub pg_ranks: Option<Arc<RankList>>,
    /// `Seq`.
    pub seq: Option<i64>,
    /// `Src Rank` (point-to-point).
    pub src_rank: Option<i64>,
    /// `Dst Rank` (point-to-point).
    pub dst_rank: Option<i64>,
}

impl CollectiveArgs {
    /// Message size in bytes: max(in, out) elements times the dtype size,
    /// as PARAM computes it. `None` if a part is missing or the dtype unknown.
    pub fn bytes(&self) -> Option<u64> {
        let n = self.in_nelems.max(self.out_nelems)?;
        // `None` rather than a wrapped size for absurd element counts.
        n.checked_mul(dtype_size(self.dtype.as_deref()?)?)
    }
}

/// Size in bytes of a PyTorch dtype name as written in traces.
pub fn dtype_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "Float" | "Int" | "float" | "int" | "UInt32" => 4,
        "Double" | "Long" | "double" | "long" | "ComplexFloat" | "UInt64" => 8,
        "Half" | "BFloat16" | "Short" | "half" | "bfloat16" | "UInt16" => 2,
        "Byte" | "Char" | "Bool" | "bool" | "Float8_e4m3fn" | "Float8_e5m2" | "Float8_e4m3fnuz"
        | "Float8_e5m2fnuz" => 1,
        "ComplexDouble" => 16,
        _ => return None,
    })
}

/// A PyTorch dtype name whose elements take `bytes` bytes, for a writer
/// that knows a message's element size but not its type (a reader takes
/// back only the size, [`dtype_size`]); `None` for a size no type has.
pub fn dtype_of_size(bytes: u64) -> Option<&'static str> {
    Some(match bytes {
        1 => "Byte",
        2 => "BFloat16",
        4 => "Float",
        8 => "Double",
        16 => "ComplexDouble",
        _ => return None,
    })
}

/// A process group's ranks, possibly truncated with `...` by PyTorch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RankList {
    /// The ranks written out.
    pub ranks: Vec<i64>,
    /// True if the list ended in `...`.
    pub truncated: bool,
}

impl RankList {
    /// Parses `"[0, 1, 2]"` or `"[0, 8, 16, ...]"`. Returns `None` on
    /// anything else.
    pub fn parse(s: &str) -> Option<RankList> {
        let inner = s.trim().strip_prefix('[')?.strip_suffix(']')?;
        let mut out = RankList::default();
        for part in inner.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            if part == "..." {
                out.truncated = true;
                continue;
            }
            out.ranks.push(part.parse().ok()?);
        }
        Some(out)
    }

    /// The full list of `size` ranks, rebuilt from the first stride when the
    /// written list was truncated (as PARAM does). A `size` above
    /// [`RankList::MAX_EXPANDED`] (a damaged `Group size`) expands nothing:
    /// memory follows the input, not what a number in it claims.
    pub fn expand(&self, size: usize) -> Vec<i64> {
        if !self.truncated
            || self.ranks.len() >= size
            || self.ranks.is_empty()
            || size > Self::MAX_EXPANDED
        {
            return self.ranks.clone();
        }
        let start = self.ranks[0];
        let stride = if self.ranks.len() >= 2 {
            self.ranks[1].saturating_sub(self.ranks[0])
        } else {
            1
        };
        (0..size as i64)
            .map(|i| start.saturating_add(i.saturating_mul(stride)))
            .collect()
    }

    /// The largest group [`RankList::expand`] rebuilds: 2^20 ranks, more
    /// GPUs than any job has run on.
    pub const MAX_EXPANDED: usize = 1 << 20;
}

/// The text [`RankList::parse`] reads: `[0, 1, 2]`, or `[0, 8, ...]`
/// when truncated.
impl fmt::Display for RankList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, r) in self.ranks.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{r}")?;
        }
        if self.truncated {
            f.write_str(if self.ranks.is_empty() {
                "..."
            } else {
                ", ..."
            })?;
        }
        f.write_str("]")
    }
}

/// Whether a flow starts (`s`) or ends (`f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowPhase {
    /// `ph: "s"`, on the runtime call.
    Start,
    /// `ph: "f"`, on the GPU work.
    End,
}

/// What a flow links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowKind {
    /// CPU launch to GPU work: `ac2g`, `async_cpu_to_gpu`, legacy `async`.
    Launch,
    /// Forward op to backward op: `fwdbwd`.
    FwdBwd,
}

/// One flow event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// Launch or forward-backward.
    pub kind: FlowKind,
    /// Start or end.
    pub phase: FlowPhase,
    /// Flow id (the correlation id for launch flows).
    pub id: u64,
    /// Process id or device.
    pub pid: Ident,
    /// Thread id or stream row.
    pub tid: Ident,
    /// Time in ns.
    pub ts_ns: i64,
}

/// A `[memory]` instant event (`profile_memory=True`): one allocation or
/// free, and the caching allocator's totals after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryEvent {
    /// Time in ns on the trace's own clock.
    pub ts_ns: i64,
    /// `Device Type`: 0 for the CPU, 1 for a CUDA (or HIP) device; -1
    /// when not recorded.
    pub device_type: i64,
    /// `Device Id`: the device's index (-1 for the CPU, or not recorded).
    pub device_id: i64,
    /// `Bytes`: allocated (positive) or freed (negative).
    pub bytes: i64,
    /// `Total Allocated` after this event, in bytes, when recorded (older
    /// profilers write only `Bytes`).
    pub total_allocated: Option<i64>,
    /// `Total Reserved` (held by the caching allocator) after this event,
    /// in bytes, when recorded.
    pub total_reserved: Option<i64>,
}

/// A `deviceProperties` entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Device {
    /// Device index.
    pub id: i64,
    /// Marketing name, e.g. `NVIDIA A100-SXM4-80GB`.
    pub name: String,
    /// Global memory in bytes.
    pub total_global_mem: Option<u64>,
    /// Streaming multiprocessors (or compute units).
    pub num_sms: Option<u32>,
    /// Compute capability major.
    pub compute_major: Option<u32>,
    /// Compute capability minor.
    pub compute_minor: Option<u32>,
}

/// A process group from `distributedInfo.pg_config`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessGroup {
    /// `pg_name`.
    pub name: String,
    /// `pg_desc`.
    pub desc: Option<String>,
    /// `pg_size`.
    pub size: Option<u32>,
    /// `ranks`.
    pub ranks: Vec<i64>,
}

/// Where [`TraceMeta::rank`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankSource {
    /// `distributedInfo.rank`.
    DistributedInfo,
    /// A `rank<N>` part of the file name.
    FileName,
    /// Neither: assumed 0.
    Default,
}

impl RankSource {
    /// Stable name, as reports and messages show it: `distributedInfo`,
    /// `file_name` or `default`.
    pub fn as_str(self) -> &'static str {
        match self {
            RankSource::DistributedInfo => "distributedInfo",
            RankSource::FileName => "file_name",
            RankSource::Default => "default",
        }
    }
}

/// The largest world size a trace may record, 1,048,576 GPUs (as many as
/// `lumos synth` and `lumos predict` take): a job's missing ranks are
/// listed from it, so a damaged value must not ask for billions.
pub const MAX_WORLD_SIZE: u32 = 1 << 20;

/// File-level metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceMeta {
    /// `schemaVersion`.
    pub schema_version: Option<i64>,
    /// `baseTimeNanoseconds`: absolute epoch ns of `ts == 0`.
    pub base_time_ns: Option<i64>,
    /// `displayTimeUnit`.
    pub display_time_unit: Option<String>,
    /// This file's rank.
    pub rank: u32,
    /// Where the rank came from.
    pub rank_source: RankSource,
    /// `distributedInfo.world_size`: at most [`MAX_WORLD_SIZE`] (a larger
    /// one is left out with a warning).
    pub world_size: Option<u32>,
    /// `distributedInfo.backend`.
    pub backend: Option<String>,
    /// `distributedInfo.nccl_version`.
    pub nccl_version: Option<String>,
    /// `distributedInfo.pg_config`.
    pub process_groups: Vec<ProcessGroup>,
    /// `distributedInfo.written_ranks` (written by lumos, e.g. `lumos
    /// synth`): the ranks written together with this file when they are a
    /// subset of the world, ascending, without repeats; empty when not
    /// recorded (or when it was not a list of ranks below the world size).
    pub written_ranks: Vec<u32>,
    /// `deviceProperties`.
    pub devices: Vec<Device>,
    /// The host the rank ran on: a top-level `hostname` (also `hostName`,
    /// `host_name`) string member. Kineto does not write one itself; a
    /// user adds it (`prof.add_metadata("hostname", socket.gethostname())`)
    /// and `lumos synth` writes it when asked. Ranks naming one host share
    /// one clock (docs/JOBS.md, clock alignment).
    pub hostname: Option<String>,
}

impl Default for TraceMeta {
    fn default() -> Self {
        TraceMeta {
            schema_version: None,
            base_time_ns: None,
            display_time_unit: None,
            rank: 0,
            rank_source: RankSource::Default,
            world_size: None,
            backend: None,
            nccl_version: None,
            process_groups: Vec::new(),
            written_ranks: Vec::new(),
            devices: Vec::new(),
            hostname: None,
        }
    }
}

/// A `thread_name` or `process_name` metadata event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackName {
    /// Process id.
    pub pid: Ident,
    /// Thread id; `None` for a process name.
    pub tid: Option<Ident>,
    /// The name.
    pub name: String,
}

/// A `process_labels` metadata event: what a viewer shows beside the
/// process's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessLabels {
    /// Process id.
    pub pid: Ident,
    /// The labels, as one string (`"CPU"`, `"GPU 0"`).
    pub labels: String,
}

/// A `thread_sort_index` or `process_sort_index` metadata event: where a
/// viewer lists the track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrackSort {
    /// Process id.
    pub pid: Ident,
    /// Thread id; `None` for a process's index.
    pub tid: Option<Ident>,
    /// The index (lower first).
    pub index: i64,
}

/// Why an event was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkipReason {
    /// The array element was not a JSON object.
    NotAnObject,
    /// A field had the wrong JSON type (`name` a number, ...).
    BadFieldType,
    /// No `ph`.
    MissingPhase,
    /// A complete event without `ts`.
    MissingTs,
    /// A complete event without `dur`.
    MissingDur,
    /// A negative `dur`.
    NegativeDur,
    /// A `ts`/`dur` too large for i64 nanoseconds.
    TimeOutOfRange,
    /// No `name`.
    MissingName,
    /// No `pid` or `tid`.
    MissingPidTid,
    /// A `cat` the reader does not know.
    UnknownCategory,
    /// A category the model does not use (Python frames, profiler spans,
    /// overhead rows, memory events).
    NotModeled,
    /// Instant (`i`) and counter (`C`) events: not tasks.
    NotATask,
    /// A phase the Chrome trace format does not have.
    UnsupportedPhase,
    /// A flow without an id, or of an unknown flow category.
    BadFlow,
    /// A begin (`B`) or end (`E`) duration event: valid in the Chrome
    /// trace format, not malformed, but not read (a task is one complete
    /// `X` event), so the span such a pair marks is not in the graph.
    BeginEnd,
    /// A phase of the Chrome trace format other than those read or
    /// counted above: async spans (`b`/`n`/`e`, `S`/`T`/`p`/`F`), objects
    /// (`N`/`O`/`D`), samples (`P`), marks (`R`), clock syncs (`c`),
    /// memory dumps (`v`/`V`), contexts (`(`/`)`). Valid, not read.
    OtherPhase,
}

impl SkipReason {
    /// Human explanation.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::NotAnObject => "element of traceEvents is not a JSON object",
            SkipReason::BadFieldType => "a field has the wrong JSON type",
            SkipReason::MissingPhase => "no ph",
            SkipReason::MissingTs => "complete event without ts",
            SkipReason::MissingDur => "complete event without dur",
            SkipReason::NegativeDur => "negative dur",
            SkipReason::TimeOutOfRange => "ts or dur out of range",
            SkipReason::MissingName => "no name",
            SkipReason::MissingPidTid => "no pid or tid",
            SkipReason::UnknownCategory => "unknown category",
            SkipReason::NotModeled => "category not modeled",
            SkipReason::NotATask => "instant or counter event, not a task",
            SkipReason::UnsupportedPhase => "unsupported ph",
            SkipReason::BadFlow => "flow without id or of unknown kind",
            SkipReason::BeginEnd => "begin/end (B/E) duration event, not read",
            SkipReason::OtherPhase => {
                "async, object, sample, mark, clock-sync, memory-dump or context event, not read"
            }
        }
    }
}

/// Counts of skipped events by (category as written, reason), and of
/// arguments dropped from kept events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Count per (category or `-` if none, reason).
    pub counts: BTreeMap<(String, SkipReason), u64>,
    /// Index in `traceEvents` of the first skipped event per reason, for
    /// error reports.
    pub first_index: BTreeMap<SkipReason, u64>,
    /// Arguments whose value was malformed, by key: an `Input Dims` that
    /// is not a list of shapes, or an id (`correlation`, `External id`,
    /// `stream`, `device`) that is not an integer in range (a fraction, a
    /// string holding no integer, a negative `correlation`, an object) or
    /// that holds the value the compact event uses for "absent", or a
    /// collective's count (`In msg nelems`, `Out msg nelems`, `Group size`)
    /// that is negative, a fraction, 2^64 - 1 or more (2^32 for `Group
    /// size`) or a string holding no integer. The event
    /// is kept without them (`null` is an absent id, not counted). Not
    /// counted in [`Skipped::total`].
    pub bad_args: BTreeMap<&'static str, BadArg>,
    /// Numbers written `NaN`, `Infinity` or `-Infinity` (not JSON, but
    /// what Python's `json.dump` writes), read as absent values: a `ts`
    /// of `NaN` is a missing `ts`. Not counted in [`Skipped::total`].
    pub non_finite: Occurrences,
    /// Events and top-level members holding invalid UTF-8 or a `\uXXXX`
    /// escape of a lone surrogate (`\ud800` with no low surrogate after
    /// it, `\udc00` alone: what Python's `json` writes for text decoded
    /// with `surrogateescape`), read with each invalid sequence or escape
    /// replaced by U+FFFD. A surrogate pair is one character, not counted.
    /// Not counted in [`Skipped::total`].
    pub invalid_utf8: Occurrences,
    /// Events that write a member twice or more (two `"ts"`, two
    /// `"name"`s in `args`), among the members the reader reads: the last
    /// value is read, as JSON readers (Python's `json`, serde_json) do.
    /// A repeat inside an event left out for its category is not seen
    /// past its `cat`. Not counted in [`Skipped::total`].
    pub repeated_members: Occurrences,
    /// The key the first of those events repeats (`ts`, `args.name`), for
    /// the warning.
    pub first_repeated_member: Option<&'static str>,
}

/// How often the reader accepted something JSON does not allow, and where
/// first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Occurrences {
    /// How many.
    pub count: u64,
    /// Index in `traceEvents` of the first event with one; `None` when
    /// they were all in top-level members.
    pub first_index: Option<u64>,
}

/// How often an argument was malformed, and where first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BadArg {
    /// Events whose argument was dropped.
    pub count: u64,
    /// Index in `traceEvents` of the first of them.
    pub first_index: u64,
}

impl Skipped {
    /// Total number of skipped events.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

/// One trace file, read.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The file it came from.
    pub path: PathBuf,
    /// Uncompressed JSON size in bytes.
    pub json_bytes: u64,
    /// Whether the file was gzip-compressed.
    pub gzipped: bool,
    /// File-level metadata.
    pub meta: TraceMeta,
    /// Interned strings (names, string pids/tids).
    pub strings: Vec<String>,
    /// Kept complete events, in file order.
    pub events: Vec<Event>,
    /// Flow events, in file order.
    pub flows: Vec<Flow>,
    /// Thread and process names.
    pub track_names: Vec<TrackName>,
    /// Thread and process sort indices (the order viewers list them in).
    pub track_sorts: Vec<TrackSort>,
    /// Process labels (`process_labels`: `"CPU"`, a GPU's name), in file
    /// order.
    pub process_labels: Vec<ProcessLabels>,
    /// `[memory]` instant events, in file order. Like every instant
    /// event they are not tasks, and are counted in [`Trace::skipped`]
    /// too.
    pub memory: Vec<MemoryEvent>,
    /// Number of elements in `traceEvents`.
    pub events_total: u64,
    /// What was not kept, and why.
    pub skipped: Skipped,
    /// Kept events that end absurdly far past the rest of the trace
    /// (more than ten times the span of all the events' starts after the
    /// last of them, 1 s at least): a damaged or edited `dur`, kept as
    /// written. The count of the warning that names the first of them;
    /// 0 when there is none.
    pub absurd_durations: u64,
    /// Problems that did not stop reading.
    pub warnings: Vec<String>,
}

impl Trace {
    /// The string behind an id.
    pub fn str(&self, id: StrId) -> &str {
        &self.strings[id.0 as usize]
    }

    /// The name of an event.
    pub fn name(&self, e: &Event) -> &str {
        self.str(e.name)
    }

    /// Renders an [`Ident`] as text.
    pub fn ident(&self, id: Ident) -> String {
        match id {
            Ident::Num(n) => n.to_string(),
            Ident::Name(s) => self.str(s).to_owned(),
        }
    }
}
