//! Writes Kineto / Chrome trace JSON: the counterpart of the reader, and the
//! only place lumos formats trace JSON.
//!
//! [`KinetoWriter`] streams a trace into any [`io::Write`]: top-level
//! members (`schemaVersion`, `deviceProperties`, `distributedInfo`, ...) and
//! `traceEvents` elements, each written as a typed call: complete events
//! with their args ([`Fields`]), launch flows, metadata rows, instants.
//! Times are integer nanoseconds, converted to Kineto's microseconds with
//! three decimals only here, so the reader turns them back into the same
//! integers; strings are escaped here, so any name is safe.
//!
//! It is built for multi-gigabyte traces: each call appends to one reused
//! buffer with hand-rolled number formatting, and the buffer goes to the
//! output in large blocks, so no event allocates. [`write_gz_atomic`] gives
//! the files that hold them their all-or-nothing semantics.
//!
//! ```
//! use lumos_trace::{Category, FlowKind, FlowPhase, KinetoWriter, Layout};
//!
//! let mut w = KinetoWriter::new(Vec::new(), Layout::Compact);
//! w.schema_version(1);
//! w.complete(Category::Runtime, "cudaLaunchKernel", 10, 10, 1_000, 4_500)
//!     .correlation(7);
//! w.flow(FlowKind::Launch, FlowPhase::Start, 7, 10, 10, 1_000);
//! w.complete(Category::Kernel, "gemm \"tn\"", 0, 7, 9_000, 20_250)
//!     .device(0)
//!     .stream(7)
//!     .correlation(7);
//! let text = String::from_utf8(w.finish().unwrap()).unwrap();
//! let trace = lumos_trace::read_bytes(std::path::Path::new("t.json"), text.as_bytes()).unwrap();
//! assert_eq!(trace.events[1].dur_ns, 20_250);
//! assert_eq!(trace.name(&trace.events[1]), "gemm \"tn\"");
//! ```

mod file;
mod json;
mod members;

use std::io::{self, Write};

use crate::model::{Category, FlowKind, FlowPhase};
use json::{push_f64, push_fixed, push_i64, push_str, push_u64, push_us};

pub use file::{
    create_output_dir, not_a_directory, output_words, write_atomic, write_gz_atomic, WriteError,
};
pub use members::{DeviceProperties, DistributedInfo, PgConfig};

/// Buffered bytes that trigger a write to the output.
const FLUSH_AT: usize = 1 << 16;

/// Where line breaks go. Both read the same; each keeps the text of the
/// files lumos wrote before the writer existed byte for byte (their digests
/// are checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Top-level members on one line, one event per line.
    Compact,
    /// Every top-level member and every array element on its own line,
    /// and a final newline.
    Lines,
}

/// Which part of the document the next bytes go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Nothing written yet.
    Start,
    /// Top-level members before `traceEvents`.
    Members,
    /// Inside `traceEvents`; members written now wait in the trailer.
    Events,
}

/// A streaming writer of one Kineto trace. Calls append to the document in
/// order; members given after the first event are written after the
/// `traceEvents` array. [`KinetoWriter::finish`] closes the document.
///
/// I/O errors do not interrupt the calls: the first one is kept, later
/// output is discarded, and `finish` returns it. Dropping the writer
/// without `finish` loses the buffered tail.
#[derive(Debug)]
pub struct KinetoWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    /// Members written while the events array is open.
    trailer: Vec<u8>,
    flush_at: usize,
    error: Option<io::Error>,
    layout: Layout,
    part: Part,
    /// Members written so far (before the events).
    members: u64,
    events: u64,
}

impl<W: Write> KinetoWriter<W> {
    /// A writer into `out`, which it writes in blocks of 64 KiB (no need
    /// to buffer it).
    pub fn new(out: W, layout: Layout) -> KinetoWriter<W> {
        Self::with_buffer(out, layout, Vec::with_capacity(FLUSH_AT + 4096), FLUSH_AT)
    }

    fn with_buffer(out: W, layout: Layout, buf: Vec<u8>, flush_at: usize) -> KinetoWriter<W> {
        KinetoWriter {
            out,
            buf,
            trailer: Vec::new(),
            flush_at,
            error: None,
            layout,
            part: Part::Start,
            members: 0,
            events: 0,
        }
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Closes the document, writes what is buffered, flushes `out` and
    /// returns it, or the first I/O error.
    pub fn finish(mut self) -> io::Result<W> {
        self.close();
        self.flush_buf();
        if self.error.is_none() {
            if let Err(e) = self.out.flush() {
                self.error = Some(e);
            }
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.out),
        }
    }

    fn flush_buf(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(&self.buf) {
                self.error = Some(e);
            }
        }
        self.buf.clear();
    }

    fn close(&mut self) {
        let lines = self.layout == Layout::Lines;
        if self.part != Part::Events {
            self.open_events();
        }
        if lines && self.events > 0 {
            self.buf.push(b'\n');
        }
        self.buf.push(b']');
        self.buf.append(&mut self.trailer);
        self.buf
            .extend_from_slice(if lines { b"\n}\n" } else { b"}" });
    }

    /// Between two members of the document (or array elements, in
    /// [`Layout::Lines`]).
    fn sep(&self) -> &'static [u8] {
        match self.layout {
            Layout::Compact => b",",
            Layout::Lines => b",\n",
        }
    }

    /// Starts a top-level member: its key is written, the value is next.
    /// Returns the buffer the value goes to.
    fn member(&mut self, key: &str) -> &mut Vec<u8> {
        let sep = self.sep();
        self.members += 1;
        let buf = match self.part {
            Part::Start => {
                self.start();
                &mut self.buf
            }
            Part::Members => {
                self.maybe_flush();
                self.buf.extend_from_slice(sep);
                &mut self.buf
            }
            Part::Events => {
                self.trailer.extend_from_slice(sep);
                &mut self.trailer
            }
        };
        push_str(buf, key);
        buf.push(b':');
        buf
    }

    fn start(&mut self) {
        self.buf.extend_from_slice(match self.layout {
            Layout::Compact => b"{",
            Layout::Lines => b"{\n",
        });
        self.part = Part::Members;
    }

    fn open_events(&mut self) {
        match self.part {
            Part::Start => self.start(),
            Part::Members if self.members > 0 => {
                let sep = self.sep();
                self.buf.extend_from_slice(sep);
            }
            _ => {}
        }
        self.buf.extend_from_slice(b"\"traceEvents\":[");
        self.part = Part::Events;
    }

    #[inline]
    fn maybe_flush(&mut self) {
        if self.buf.len() >= self.flush_at {
            self.flush_buf();
        }
    }

    /// Starts the next element of `traceEvents`.
    #[inline]
    fn event(&mut self) -> &mut Vec<u8> {
        if self.part != Part::Events {
            self.open_events();
        }
        self.maybe_flush();
        self.buf
            .extend_from_slice(if self.events == 0 { b"\n" } else { b",\n" });
        self.events += 1;
        &mut self.buf
    }

    // ---- top-level members -------------------------------------------------

    /// `schemaVersion`.
    pub fn schema_version(&mut self, v: i64) {
        self.member_int("schemaVersion", v);
    }

    /// `baseTimeNanoseconds`: the absolute time of `ts == 0`, in epoch ns.
    pub fn base_time_ns(&mut self, ns: i64) {
        self.member_int("baseTimeNanoseconds", ns);
    }

    /// `displayTimeUnit` (`"ms"`, `"ns"`).
    pub fn display_time_unit(&mut self, unit: &str) {
        self.member_str("displayTimeUnit", unit);
    }

    /// `traceName`.
    pub fn trace_name(&mut self, name: &str) {
        self.member_str("traceName", name);
    }

    /// `deviceProperties`: one entry per GPU.
    pub fn device_properties(&mut self, devices: &[DeviceProperties<'_>]) {
        let lines = self.layout == Layout::Lines;
        let sep = self.sep();
        let buf = self.member("deviceProperties");
        buf.push(b'[');
        for (i, d) in devices.iter().enumerate() {
            buf.extend_from_slice(match (i, lines) {
                (0, true) => b"\n",
                (0, false) => b"",
                _ => sep,
            });
            d.write(buf);
        }
        if lines && !devices.is_empty() {
            buf.push(b'\n');
        }
        buf.push(b']');
    }

    /// `distributedInfo`.
    pub fn distributed_info(&mut self, info: &DistributedInfo<'_>) {
        let buf = self.member("distributedInfo");
        info.write(buf);
    }

    /// A member holding an integer.
    pub fn member_int(&mut self, key: &str, v: i64) {
        push_i64(self.member(key), v);
    }

    /// A member holding a string.
    pub fn member_str(&mut self, key: &str, v: &str) {
        push_str(self.member(key), v);
    }

    /// A member holding an object; fill it through the returned [`Fields`],
    /// which closes it when dropped.
    pub fn member_object(&mut self, key: &str) -> Fields<'_> {
        Fields::new(self.member(key), b"{", b"}", b"{}")
    }

    // ---- events --------------------------------------------------------------

    /// A complete event (`ph: "X"`) of `category` from `ts_ns` for `dur_ns`
    /// (both ns). Add its args through the returned [`Fields`]; the event
    /// is closed when it is dropped (an event without args has no `args`).
    pub fn complete(
        &mut self,
        category: Category,
        name: &str,
        pid: i64,
        tid: i64,
        ts_ns: i64,
        dur_ns: i64,
    ) -> Fields<'_> {
        self.complete_in(category.as_str(), name, pid, tid, ts_ns, dur_ns)
    }

    /// A complete event of a category that is not Kineto's (a viewer's
    /// annotation track, say): the reader leaves such events out, counted
    /// as an unknown category, so a trace with them reads as one without.
    pub fn complete_in(
        &mut self,
        category: &str,
        name: &str,
        pid: i64,
        tid: i64,
        ts_ns: i64,
        dur_ns: i64,
    ) -> Fields<'_> {
        let buf = self.event();
        buf.extend_from_slice(b"{\"ph\":\"X\",\"cat\":");
        push_str(buf, category);
        buf.extend_from_slice(b",\"name\":");
        push_str(buf, name);
        buf.extend_from_slice(b",\"pid\":");
        push_i64(buf, pid);
        buf.extend_from_slice(b",\"tid\":");
        push_i64(buf, tid);
        buf.extend_from_slice(b",\"ts\":");
        push_us(buf, ts_ns);
        buf.extend_from_slice(b",\"dur\":");
        push_us(buf, dur_ns);
        Fields::new(buf, b",\"args\":{", b"}}", b"}")
    }

    /// A flow event: `phase` [`FlowPhase::Start`] on the launching call,
    /// [`FlowPhase::End`] on the GPU work (binding to the enclosing slice,
    /// `bp: "e"`). `id` is the correlation id for launch flows.
    pub fn flow(
        &mut self,
        kind: FlowKind,
        phase: FlowPhase,
        id: u64,
        pid: i64,
        tid: i64,
        ts_ns: i64,
    ) {
        let buf = flow_head(self.event(), phase, id, pid, tid, ts_ns);
        buf.extend_from_slice(match kind {
            FlowKind::Launch => b",\"cat\":\"ac2g\",\"name\":\"ac2g\"",
            FlowKind::FwdBwd => b",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\"",
        });
        flow_tail(buf, phase);
    }

    /// A flow event of a category that is not a launch or forward-backward
    /// flow (an arrow drawn for a viewer): `phase` [`FlowPhase::Start`]
    /// binds to the slice enclosing `ts_ns` on `pid`/`tid`, `End` to the
    /// slice enclosing it there (`bp: "e"`). The reader leaves such flows
    /// out.
    #[allow(clippy::too_many_arguments)] // one per field of the event
    pub fn flow_in(
        &mut self,
        category: &str,
        name: &str,
        phase: FlowPhase,
        id: u64,
        pid: i64,
        tid: i64,
        ts_ns: i64,
    ) {
        let buf = flow_head(self.event(), phase, id, pid, tid, ts_ns);
        buf.extend_from_slice(b",\"cat\":");
        push_str(buf, category);
        buf.extend_from_slice(b",\"name\":");
        push_str(buf, name);
        flow_tail(buf, phase);
    }

    /// A `process_name` metadata row.
    pub fn process_name(&mut self, pid: i64, name: &str) {
        self.metadata("process_name", pid, 0, "name", name);
    }

    /// A `process_labels` metadata row (`"CPU"`, a GPU's name).
    pub fn process_labels(&mut self, pid: i64, labels: &str) {
        self.metadata("process_labels", pid, 0, "labels", labels);
    }

    /// A `thread_name` metadata row (threads, and GPU streams).
    pub fn thread_name(&mut self, pid: i64, tid: i64, name: &str) {
        self.metadata("thread_name", pid, tid, "name", name);
    }

    /// A `process_sort_index` metadata row: viewers list processes by
    /// this index, lowest first.
    pub fn process_sort_index(&mut self, pid: i64, index: i64) {
        let buf = self.metadata_head("process_sort_index", pid, 0, "sort_index");
        push_i64(buf, index);
        buf.extend_from_slice(b"}}");
    }

    /// A `thread_sort_index` metadata row: the order of a process's
    /// threads (and streams), lowest first.
    pub fn thread_sort_index(&mut self, pid: i64, tid: i64, index: i64) {
        let buf = self.metadata_head("thread_sort_index", pid, tid, "sort_index");
        push_i64(buf, index);
        buf.extend_from_slice(b"}}");
    }

    fn metadata(&mut self, what: &str, pid: i64, tid: i64, key: &str, value: &str) {
        let buf = self.metadata_head(what, pid, tid, key);
        push_str(buf, value);
        buf.extend_from_slice(b"}}");
    }

    /// A metadata row up to its one argument's value.
    fn metadata_head(&mut self, what: &str, pid: i64, tid: i64, key: &str) -> &mut Vec<u8> {
        let buf = self.event();
        buf.extend_from_slice(b"{\"name\":");
        push_str(buf, what);
        buf.extend_from_slice(b",\"ph\":\"M\",\"ts\":0,\"pid\":");
        push_i64(buf, pid);
        buf.extend_from_slice(b",\"tid\":");
        push_i64(buf, tid);
        buf.extend_from_slice(b",\"args\":{");
        push_str(buf, key);
        buf.push(b':');
        buf
    }

    /// A global instant event (`ph: "i"`, `s: "g"`) with empty pid and tid,
    /// as Kineto writes `Record Window End`.
    pub fn global_instant(&mut self, name: &str, ts_ns: i64) {
        let buf = self.event();
        buf.extend_from_slice(b"{\"ph\":\"i\",\"s\":\"g\",\"name\":");
        push_str(buf, name);
        buf.extend_from_slice(b",\"pid\":\"\",\"tid\":\"\",\"ts\":");
        push_us(buf, ts_ns);
        buf.push(b'}');
    }
}

impl KinetoWriter<Vec<u8>> {
    /// A writer that keeps the whole trace in memory, starting with room
    /// for `capacity` bytes; [`KinetoWriter::into_bytes`] hands the text
    /// over without copying it.
    pub fn in_memory(layout: Layout, capacity: usize) -> KinetoWriter<Vec<u8>> {
        Self::with_buffer(Vec::new(), layout, Vec::with_capacity(capacity), usize::MAX)
    }

    /// Closes the document and returns its text (UTF-8).
    pub fn into_bytes(mut self) -> Vec<u8> {
        self.close();
        if self.out.is_empty() {
            std::mem::take(&mut self.buf)
        } else {
            self.out.append(&mut self.buf);
            std::mem::take(&mut self.out)
        }
    }
}

/// The fields of a JSON object being written: an event's `args` or a
/// top-level member object. Each call appends one field (keys are written
/// as given, escaped); the object is closed when this is dropped.
///
/// Lists are written as PyTorch writes shapes, `[2048, 1, 6144]`.
#[derive(Debug)]
pub struct Fields<'a> {
    buf: &'a mut Vec<u8>,
    any: bool,
    /// Before the first field.
    open: &'static [u8],
    /// After the last field.
    close: &'static [u8],
    /// Instead of both when there is no field.
    empty: &'static [u8],
}

impl<'a> Fields<'a> {
    fn new(
        buf: &'a mut Vec<u8>,
        open: &'static [u8],
        close: &'static [u8],
        empty: &'static [u8],
    ) -> Fields<'a> {
        Fields {
            buf,
            any: false,
            open,
            close,
            empty,
        }
    }

    #[inline]
    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        self.buf
            .extend_from_slice(if self.any { b"," } else { self.open });
        self.any = true;
        push_str(self.buf, key);
        self.buf.push(b':');
        self.buf
    }

    /// An integer field.
    pub fn int(&mut self, key: &str, v: i64) -> &mut Self {
        push_i64(self.key(key), v);
        self
    }

    /// An unsigned integer field.
    pub fn uint(&mut self, key: &str, v: u64) -> &mut Self {
        push_u64(self.key(key), v);
        self
    }

    /// A string field.
    pub fn str(&mut self, key: &str, v: &str) -> &mut Self {
        push_str(self.key(key), v);
        self
    }

    /// A boolean field.
    pub fn bool(&mut self, key: &str, v: bool) -> &mut Self {
        let b: &[u8] = if v { b"true" } else { b"false" };
        self.key(key).extend_from_slice(b);
        self
    }

    /// A number field in the shortest form that reads back to `v`
    /// (`null` if it is not finite).
    pub fn float(&mut self, key: &str, v: f64) -> &mut Self {
        push_f64(self.key(key), v);
        self
    }

    /// A number field with exactly `decimals` digits after the point, as
    /// Kineto writes `blocks per SM` (`null` if it is not finite).
    pub fn fixed(&mut self, key: &str, v: f64, decimals: usize) -> &mut Self {
        push_fixed(self.key(key), v, decimals);
        self
    }

    /// A list of objects (`"stages":[{"rank":0},{"rank":4}]`): add each
    /// through the returned [`ObjectList`], which closes the list when
    /// dropped (an empty one is `[]`).
    pub fn objects(&mut self, key: &str) -> ObjectList<'_> {
        self.key(key).push(b'[');
        ObjectList {
            buf: self.buf,
            any: false,
        }
    }

    /// A list of integers (`"grid":[16, 1, 1]`).
    pub fn ints(&mut self, key: &str, v: &[i64]) -> &mut Self {
        let buf = self.key(key);
        push_list(buf, v);
        self
    }

    /// `correlation`: the CUPTI id tying a runtime call to its GPU work.
    pub fn correlation(&mut self, id: u64) -> &mut Self {
        self.uint("correlation", id)
    }

    /// `External id`: ties runtime calls and GPU work to their CPU op.
    pub fn external_id(&mut self, id: u64) -> &mut Self {
        self.uint("External id", id)
    }

    /// `stream` of GPU work and `cuda_sync` events.
    pub fn stream(&mut self, stream: i64) -> &mut Self {
        self.int("stream", stream)
    }

    /// `device` of GPU work.
    pub fn device(&mut self, device: i64) -> &mut Self {
        self.int("device", device)
    }

    /// `Input Dims`: one list of sizes per input (`[]` for an input with
    /// no shape), as `[[2048, 6144], [6144, 9216], []]`.
    pub fn input_dims<'d>(&mut self, inputs: impl IntoIterator<Item = &'d [i64]>) -> &mut Self {
        let buf = self.key("Input Dims");
        buf.push(b'[');
        for (i, sizes) in inputs.into_iter().enumerate() {
            if i > 0 {
                buf.extend_from_slice(b", ");
            }
            push_list(buf, sizes);
        }
        buf.push(b']');
        self
    }

    /// `Input type`: one type name per input (`""` for none), as
    /// `["c10::BFloat16", ""]`.
    pub fn input_types<'t>(&mut self, types: impl IntoIterator<Item = &'t str>) -> &mut Self {
        let buf = self.key("Input type");
        buf.push(b'[');
        for (i, t) in types.into_iter().enumerate() {
            if i > 0 {
                buf.extend_from_slice(b", ");
            }
            push_str(buf, t);
        }
        buf.push(b']');
        self
    }

    /// `Input type` from the JSON text the reader keeps of it
    /// ([`crate::EventExtra::input_type`]); nothing when that text is not
    /// a list of strings, so what is written is always valid JSON.
    pub fn input_type_text(&mut self, text: &str) -> &mut Self {
        let Ok((crate::tree::Json::Array(items), _)) = crate::tree::parse(text.as_bytes()) else {
            return self;
        };
        let types: Option<Vec<&str>> = items.iter().map(|x| x.as_str()).collect();
        match types {
            Some(types) => self.input_types(types),
            None => self,
        }
    }
}

/// The arguments PyTorch records for a collective on its kernel (and on
/// its `record_param_comms` operator), which the reader takes back as a
/// [`CollectiveArgs`](crate::CollectiveArgs): what a reader of a job
/// matches the same collective across ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectiveFields<'a> {
    /// `Collective name` (`allreduce`, `send`, ...).
    pub name: &'a str,
    /// `In msg nelems` and `Out msg nelems` (written alike: the reader's
    /// message size is the larger), with the size of an element in bytes
    /// (`dtype`, as a PyTorch type of that size), when known.
    pub elements: Option<(u64, u64)>,
    /// `Process Group Name`.
    pub pg_name: &'a str,
    /// `Process Group Description`.
    pub pg_desc: &'a str,
    /// `Process Group Ranks` (written whole, never cut with `...`) and
    /// `Group size`, its length.
    pub pg_ranks: &'a [i64],
    /// `Seq`: the collective's number in its group.
    pub seq: i64,
    /// `Src Rank` and `Dst Rank` (global ranks) of a send or receive.
    pub src_dst: Option<(i64, i64)>,
}

impl Fields<'_> {
    /// A collective's arguments ([`CollectiveFields`]).
    pub fn collective(&mut self, c: &CollectiveFields<'_>) -> &mut Self {
        self.str("Collective name", c.name);
        if let Some((n, element_bytes)) = c.elements {
            self.uint("In msg nelems", n).uint("Out msg nelems", n);
            if let Some(d) = crate::model::dtype_of_size(element_bytes) {
                self.str("dtype", d);
            }
        }
        self.uint("Group size", c.pg_ranks.len() as u64)
            .str("Process Group Name", c.pg_name)
            .str("Process Group Description", c.pg_desc);
        // A string holding a list, as PyTorch writes it; digits, commas and
        // spaces need no escaping.
        let buf = self.key("Process Group Ranks");
        buf.push(b'"');
        push_list(buf, c.pg_ranks);
        buf.push(b'"');
        self.int("Seq", c.seq);
        if let Some((src, dst)) = c.src_dst {
            self.int("Src Rank", src).int("Dst Rank", dst);
        }
        self
    }
}

impl Drop for Fields<'_> {
    fn drop(&mut self) {
        self.buf
            .extend_from_slice(if self.any { self.close } else { self.empty });
    }
}

/// A list of objects being written as a field's value
/// ([`Fields::objects`]): each added through [`ObjectList::object`], the
/// list closed when this is dropped.
#[derive(Debug)]
pub struct ObjectList<'a> {
    buf: &'a mut Vec<u8>,
    any: bool,
}

impl ObjectList<'_> {
    /// The next object of the list; fill it through the returned
    /// [`Fields`], which closes it when dropped.
    pub fn object(&mut self) -> Fields<'_> {
        if self.any {
            self.buf.push(b',');
        }
        self.any = true;
        Fields::new(self.buf, b"{", b"}", b"{}")
    }
}

impl Drop for ObjectList<'_> {
    fn drop(&mut self) {
        self.buf.push(b']');
    }
}

/// `[1, 2, 3]`.
/// The start of a flow event, up to its time: its phase, id, process and
/// thread. Returns `buf` for the caller's category and name.
fn flow_head(
    buf: &mut Vec<u8>,
    phase: FlowPhase,
    id: u64,
    pid: i64,
    tid: i64,
    ts_ns: i64,
) -> &mut Vec<u8> {
    buf.extend_from_slice(match phase {
        FlowPhase::Start => b"{\"ph\":\"s\",\"id\":",
        FlowPhase::End => b"{\"ph\":\"f\",\"id\":",
    });
    push_u64(buf, id);
    buf.extend_from_slice(b",\"pid\":");
    push_i64(buf, pid);
    buf.extend_from_slice(b",\"tid\":");
    push_i64(buf, tid);
    buf.extend_from_slice(b",\"ts\":");
    push_us(buf, ts_ns);
    buf
}

/// The end of a flow event: an end binds to the slice enclosing it.
fn flow_tail(buf: &mut Vec<u8>, phase: FlowPhase) {
    if phase == FlowPhase::End {
        buf.extend_from_slice(b",\"bp\":\"e\"");
    }
    buf.push(b'}');
}

fn push_list(buf: &mut Vec<u8>, v: &[i64]) {
    buf.push(b'[');
    for (i, &x) in v.iter().enumerate() {
        if i > 0 {
            buf.extend_from_slice(b", ");
        }
        push_i64(buf, x);
    }
    buf.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(layout: Layout, f: impl FnOnce(&mut KinetoWriter<Vec<u8>>)) -> String {
        let mut w = KinetoWriter::new(Vec::new(), layout);
        f(&mut w);
        String::from_utf8(w.finish().unwrap()).unwrap()
    }

    #[test]
    fn documents_in_both_layouts() {
        let body = |w: &mut KinetoWriter<Vec<u8>>| {
            w.schema_version(1);
            w.complete(Category::CpuOp, "op", 1, 2, 1_500, 250)
                .external_id(3);
            w.complete(Category::UserAnnotation, "step", 1, 2, 1_000, 1_000);
            w.trace_name("t");
        };
        assert_eq!(
            text(Layout::Compact, body),
            "{\"schemaVersion\":1,\"traceEvents\":[\n\
             {\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"pid\":1,\"tid\":2,\"ts\":1.500,\"dur\":0.250,\"args\":{\"External id\":3}},\n\
             {\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"step\",\"pid\":1,\"tid\":2,\"ts\":1.000,\"dur\":1.000}],\"traceName\":\"t\"}"
        );
        assert_eq!(
            text(Layout::Lines, body),
            "{\n\"schemaVersion\":1,\n\"traceEvents\":[\n\
             {\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"pid\":1,\"tid\":2,\"ts\":1.500,\"dur\":0.250,\"args\":{\"External id\":3}},\n\
             {\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"step\",\"pid\":1,\"tid\":2,\"ts\":1.000,\"dur\":1.000}\n],\n\"traceName\":\"t\"\n}\n"
        );
        assert_eq!(text(Layout::Compact, |_| {}), "{\"traceEvents\":[]}");
        assert_eq!(text(Layout::Lines, |_| {}), "{\n\"traceEvents\":[]\n}\n");
    }

    /// A collective's arguments read back as the reader's collective: the
    /// same name, group, ranks, sequence number, peers and message size.
    #[test]
    fn collective_arguments_read_back() {
        let t = text(Layout::Compact, |w| {
            w.complete(Category::Kernel, "ncclDevKernel_SendRecv", 4, 32, 0, 10)
                .device(4)
                .stream(32)
                .correlation(1)
                .collective(&CollectiveFields {
                    name: "send",
                    elements: Some((1024, 2)),
                    pg_name: "17",
                    pg_desc: "PIPELINE_MODEL_PARALLEL_GROUP",
                    pg_ranks: &[0, 4, 8, 12],
                    seq: 3,
                    src_dst: Some((4, 8)),
                });
            w.complete(Category::Kernel, "ncclDevKernel_AllReduce", 4, 33, 20, 10)
                .device(4)
                .stream(33)
                .correlation(2)
                .collective(&CollectiveFields {
                    name: "allreduce",
                    elements: Some((7, 3)),
                    pg_name: "21",
                    pg_desc: "MODEL_PARALLEL_GROUP",
                    pg_ranks: &[0, 1, 4, 5],
                    seq: 0,
                    src_dst: None,
                });
        });
        let trace = crate::read_bytes(std::path::Path::new("t.json"), t.as_bytes()).unwrap();
        let args: Vec<&crate::CollectiveArgs> = (trace.events.iter())
            .map(|e| e.extra.as_ref().unwrap().collective.as_deref().unwrap())
            .collect();
        let send = args[0];
        assert_eq!(send.name.as_deref(), Some("send"));
        assert_eq!(send.pg_name.as_deref(), Some("17"));
        assert_eq!(
            send.pg_desc.as_deref(),
            Some("PIPELINE_MODEL_PARALLEL_GROUP")
        );
        assert_eq!(send.pg_ranks.as_ref().unwrap().expand(4), vec![0, 4, 8, 12]);
        assert_eq!(send.group_size, Some(4));
        assert_eq!(send.seq, Some(3));
        assert_eq!((send.src_rank, send.dst_rank), (Some(4), Some(8)));
        assert_eq!(send.bytes(), Some(2048));
        // No type takes 3 bytes an element: the count, without a size.
        let reduce = args[1];
        assert_eq!((reduce.in_nelems, reduce.dtype.as_deref()), (Some(7), None));
        assert_eq!(reduce.bytes(), None);
        assert_eq!((reduce.src_rank, reduce.dst_rank), (None, None));
    }

    #[test]
    fn members_and_args_are_valid_json() {
        let t = text(Layout::Lines, |w| {
            w.device_properties(&[
                DeviceProperties {
                    name: "GPU \"0\"",
                    ..Default::default()
                },
                DeviceProperties {
                    id: 1,
                    ..Default::default()
                },
            ]);
            w.distributed_info(&DistributedInfo {
                backend: Some("nccl"),
                rank: Some(1),
                world_size: Some(2),
                process_groups: Some(&[PgConfig {
                    name: "0",
                    desc: "default_pg",
                    backend_config: "cuda:nccl",
                    size: 2,
                    ranks: &[0, 1],
                }]),
                nccl_version: None,
                written_ranks: None,
                merged_ranks: None,
            });
            w.member_object("empty");
            w.member_object("o")
                .bool("b", true)
                .float("f", 0.25)
                .fixed("x", 1.0, 2)
                .ints("l", &[1, -2]);
            {
                let mut o = w.member_object("lists");
                o.objects("none");
                let mut two = o.objects("two");
                two.object().uint("rank", 0).str("t", "a");
                two.object();
            }
            w.complete(Category::Kernel, "k\n", 0, 7, 0, 1)
                .input_dims([&[2, 3][..], &[]])
                .input_types(["float", ""]);
            w.flow(FlowKind::FwdBwd, FlowPhase::End, 9, 1, 1, 5);
            w.thread_name(0, 7, "stream 7");
            w.global_instant("Record Window End", 10);
        });
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        assert_eq!(v["deviceProperties"][0]["name"], "GPU \"0\"");
        assert_eq!(v["distributedInfo"]["pg_config"][0]["ranks"][1], 1);
        assert_eq!(v["distributedInfo"]["pg_count"], 1);
        assert_eq!(v["empty"], serde_json::json!({}));
        assert_eq!(v["o"]["x"], 1.0);
        assert_eq!(
            v["lists"],
            serde_json::json!({"none": [], "two": [{"rank": 0, "t": "a"}, {}]})
        );
        assert_eq!(v["traceEvents"][0]["args"]["Input Dims"][0][1], 3);
        assert_eq!(v["traceEvents"][1]["bp"], "e");
        assert!(t.contains("\"ranks\":[0,1]") && t.contains("\"l\":[1, -2]"));
    }

    #[test]
    fn write_errors_come_back_from_finish() {
        #[derive(Debug)]
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.0 < b.len() {
                    return Err(io::Error::other("full"));
                }
                self.0 -= b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = KinetoWriter::new(Full(100_000), Layout::Compact);
        for i in 0..10_000 {
            w.complete(Category::Kernel, "kernel", 0, 7, i, 1)
                .correlation(1);
        }
        assert_eq!(w.events(), 10_000);
        assert_eq!(w.finish().unwrap_err().to_string(), "full");
        let mut w = KinetoWriter::new(Full(100), Layout::Compact);
        w.trace_name("t");
        assert!(w.finish().is_ok());
    }

    #[test]
    fn in_memory_output_equals_streamed_output() {
        let body = |w: &mut KinetoWriter<Vec<u8>>| {
            for i in 0..5_000 {
                w.complete(Category::Runtime, "cudaLaunchKernel", 1, 1, i * 10, 5)
                    .correlation(i as u64);
            }
        };
        let mut m = KinetoWriter::in_memory(Layout::Lines, 0);
        body(&mut m);
        assert_eq!(
            String::from_utf8(m.into_bytes()).unwrap(),
            text(Layout::Lines, body)
        );
    }
}
