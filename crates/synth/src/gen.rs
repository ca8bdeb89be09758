//! The timeline engine of one rank: a CPU clock that walks through nested
//! operators, runtime calls that launch work onto GPU streams, CUDA events
//! between streams, host synchronization, and the Kineto JSON for each.
//!
//! Every GPU start is computed, never chosen: a kernel starts at the latest
//! of its launch call's start plus the launch latency, the end of the
//! previous work on its stream plus a small gap, and the time the last
//! event its stream was told to wait for completed. The CPU never waits for
//! the GPU except in named synchronization calls and when the launch queue
//! is full, which is exactly the set of dependencies `lumos-graph` looks
//! for, so a replay of the written trace reproduces it.
//!
//! Events go out through `lumos_trace`'s writer as each op closes.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use lumos_trace::{Category, FlowKind, FlowPhase, KinetoWriter, Layout, RankList};

use lumos_models::{CollectiveKind, Hardware, NetworkModel, Precision};

use crate::config::{GroupKind, RankCoord, SynthConfig};
use crate::rng::Noise;

mod args;
mod coll;

pub(crate) use args::{CollArgs, GroupArgs, InputShapes, OpArgs};
pub(crate) use coll::{Coll, P2p};

/// Stream ids as they appear in the trace. Megatron runs compute on the
/// default stream of its device context (7 in most traces); PyTorch's
/// ProcessGroupNCCL gives every communicator its own stream.
pub(crate) const STREAM_IDS: [i64; 6] = [7, 20, 24, 28, 32, 36];
/// Compute stream.
pub(crate) const COMPUTE: usize = 0;
/// Tensor-parallel communicator.
pub(crate) const TP: usize = 1;
/// Data-parallel communicator (gradients, parameter gather).
pub(crate) const DP: usize = 2;
/// Pipeline communicator with the previous stage.
pub(crate) const PP_PREV: usize = 3;
/// Pipeline communicator with the next stage.
pub(crate) const PP_NEXT: usize = 4;
/// Model-parallel communicator (gradient norm).
pub(crate) const MP: usize = 5;

/// How many launched, unfinished kernels the driver queues before
/// `cudaLaunchKernel` blocks (the size of the launch queue).
const LAUNCH_QUEUE_DEPTH: usize = 1024;

/// CUPTI callback ids of the runtime calls written.
const CBID_LAUNCH: u32 = 211;
const CBID_EVENT_RECORD: u32 = 135;
const CBID_STREAM_WAIT: u32 = 147;
const CBID_MEMCPY_ASYNC: u32 = 41;
const CBID_STREAM_SYNC: u32 = 131;
const CBID_DEVICE_SYNC: u32 = 165;

/// Element types of tensors and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dtype {
    Bf16,
    F16,
    F32,
}

impl Dtype {
    /// The `dtype` collective arg.
    pub(crate) fn torch_name(self) -> &'static str {
        match self {
            Dtype::Bf16 => "BFloat16",
            Dtype::F16 => "Half",
            Dtype::F32 => "Float",
        }
    }
    /// The NCCL kernel-name spelling.
    pub(crate) fn nccl_name(self) -> &'static str {
        match self {
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
            Dtype::F32 => "f32",
        }
    }
    pub(crate) fn bytes(self) -> u64 {
        match self {
            Dtype::Bf16 | Dtype::F16 => 2,
            Dtype::F32 => 4,
        }
    }
}

/// What a GPU task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GpuKind {
    Kernel,
    /// A copy of this many bytes (`Memcpy HtoD` / `DtoH`).
    Memcpy(u64),
}

/// Launch configuration written in the kernel's args.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub regs: u32,
    pub smem: u32,
}

impl Shape {
    pub(crate) const fn new(grid: [u32; 3], block: [u32; 3], regs: u32, smem: u32) -> Shape {
        Shape {
            grid,
            block,
            regs,
            smem,
        }
    }
    /// A 1-D element-wise launch over `n` elements (4 per thread).
    pub(crate) fn elementwise(n: u64) -> Shape {
        let blocks = (n / (128 * 4)).clamp(1, 1 << 20) as u32;
        Shape::new([blocks, 1, 1], [128, 1, 1], 26, 0)
    }
}

/// One GPU task to launch.
pub(crate) struct Gpu<'k> {
    pub name: &'k str,
    pub dur: i64,
    pub kind: GpuKind,
    pub shape: Shape,
    /// Collective args, for NCCL kernels.
    pub coll: Option<&'k CollArgs>,
    /// For receives and barriers: the kernel cannot end before this time
    /// plus `dur` (the peer's data arrives then); 0 for none.
    pub peer_ready: i64,
}

/// A CUDA event recorded on a stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ev {
    /// Correlation of the `cudaEventRecord` call.
    pub corr: u64,
    /// When the event completes on the GPU.
    pub time: i64,
    /// Stream index it was recorded on.
    pub stream: usize,
    /// False when nothing had run on the stream yet (waiting on it is a
    /// no-op, and is not written).
    pub valid: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct StreamState {
    /// End of the last task launched onto the stream.
    free: i64,
    /// Completion time of the latest event the stream was told to wait for.
    wait_until: i64,
    used: bool,
}

/// An open CPU operator or annotation.
#[derive(Clone)]
struct Frame {
    annotation: bool,
    name: String,
    start: i64,
    ext: u64,
    args: OpArgs,
}

/// Which CPU thread is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Thread {
    /// The Python main thread: forward, schedule, optimizer.
    Main,
    /// PyTorch's autograd device thread: backward and gradient hooks.
    Autograd,
}

/// The timeline of one rank, and its trace when `emit` is set.
pub(crate) struct Gen<'c> {
    pub cfg: &'c SynthConfig,
    pub rank: usize,
    pub coord: RankCoord,
    /// Write events (false while calibrating: timing only).
    pub emit: bool,
    pub out: KinetoWriter<Vec<u8>>,
    /// CPU-side noise.
    pub cpu: Noise,
    /// GPU-duration noise.
    pub gpu: Noise,
    /// The CPU clock, ns since `baseTimeNanoseconds`.
    pub t: i64,
    pub thread: Thread,
    pub pid: i64,
    pub device: i64,
    streams: [StreamState; STREAM_IDS.len()],
    /// End times of launched GPU tasks not yet known to have finished.
    pending: BinaryHeap<Reverse<i64>>,
    next_corr: u64,
    next_ext: u64,
    /// Open ops, per thread (main, autograd).
    stacks: [Vec<Frame>; 2],
    /// Per process group: collectives issued so far (`Seq`).
    seq: [i64; 5],
    /// Point-to-point ops per (peer, direction): receives from and sends
    /// to the previous stage, then the same for the next. Counting per
    /// direction makes the n-th send of one rank and the n-th receive of
    /// its peer the same transfer, so (`Src Rank`, `Dst Rank`, `Seq`)
    /// matches them across files.
    p2p_seq: [i64; 4],
    /// `Process Group ...` args per group kind.
    groups: Vec<GroupArgs>,
    /// Global ranks per group kind.
    pub group_ranks: Vec<Vec<usize>>,
    /// Kernel duration models.
    pub hw: Hardware,
    /// The network.
    pub net: NetworkModel,
    /// Modelled collective durations by (kind, bytes, group, peer).
    coll_cache: HashMap<(CollectiveKind, u64, usize, Option<usize>), f64>,
    num_sms: f64,
    /// Kernels launched that had to wait for a queue slot.
    pub blocked_launches: u64,
    /// GPU start of the last task launched.
    pub last_start: i64,
}

pub(crate) fn group_index(kind: GroupKind) -> usize {
    match kind {
        GroupKind::World => 0,
        GroupKind::DataParallel => 1,
        GroupKind::TensorParallel => 2,
        GroupKind::PipelineParallel => 3,
        GroupKind::ModelParallel => 4,
    }
}

impl<'c> Gen<'c> {
    pub(crate) fn new(cfg: &'c SynthConfig, rank: usize, emit: bool, noise_scale: f64) -> Gen<'c> {
        let p = &cfg.parallel;
        let groups = p.groups_of(rank);
        let mut group_args = vec![GroupArgs::default(); 5];
        let mut group_ranks = vec![Vec::new(); 5];
        for g in &groups {
            let ranks = RankList {
                ranks: g.ranks.iter().map(|&r| r as i64).collect(),
                truncated: false,
            };
            group_args[group_index(g.kind)] = GroupArgs {
                name: g.name.clone(),
                desc: g.kind.description(),
                ranks: ranks.to_string(),
            };
            group_ranks[group_index(g.kind)] = g.ranks.clone();
        }
        let net = cfg.network();
        let gpus_per_node = net.gpus_per_node.max(1);
        // Noise is drawn per pipeline stage, not per rank: every rank of a
        // stage runs the same timeline, so tensor- and data-parallel peers
        // reach their collectives together, as in a job timed in lockstep.
        let stage = p.coord(rank).pp as u64;
        // Process ids differ per rank and look like real ones.
        let pid = 2_000_000 + (cfg.seed % 1000) as i64 * 4_096 + rank as i64 * 17;
        Gen {
            cfg,
            rank,
            coord: p.coord(rank),
            emit,
            // Room for a small trace; calibration writes nothing.
            out: KinetoWriter::in_memory(Layout::Lines, if emit { 1 << 20 } else { 0 }),
            cpu: Noise::new(cfg.seed, 2 * stage, noise_scale),
            gpu: Noise::new(cfg.seed, 2 * stage + 1, noise_scale),
            t: 0,
            thread: Thread::Main,
            pid,
            device: (rank % gpus_per_node) as i64,
            streams: Default::default(),
            pending: BinaryHeap::new(),
            next_corr: 1_000_000 + rank as u64,
            next_ext: 1_000,
            stacks: [Vec::new(), Vec::new()],
            seq: [0; 5],
            p2p_seq: [0; 4],
            groups: group_args,
            group_ranks,
            hw: cfg.hardware(),
            net,
            coll_cache: HashMap::new(),
            num_sms: cfg.gpu.num_sms as f64,
            blocked_launches: 0,
            last_start: 0,
        }
    }

    /// A copy of this timeline that writes nothing: running it ahead
    /// shows when this rank will get somewhere, without changing it.
    pub(crate) fn probe(&self) -> Gen<'c> {
        Gen {
            cfg: self.cfg,
            rank: self.rank,
            coord: self.coord,
            emit: false,
            out: KinetoWriter::in_memory(Layout::Lines, 0),
            cpu: self.cpu.clone(),
            gpu: self.gpu.clone(),
            t: self.t,
            thread: self.thread,
            pid: self.pid,
            device: self.device,
            streams: self.streams,
            pending: self.pending.clone(),
            next_corr: self.next_corr,
            next_ext: self.next_ext,
            stacks: self.stacks.clone(),
            seq: self.seq,
            p2p_seq: self.p2p_seq,
            groups: self.groups.clone(),
            group_ranks: self.group_ranks.clone(),
            hw: self.hw.clone(),
            net: self.net,
            coll_cache: self.coll_cache.clone(),
            num_sms: self.num_sms,
            blocked_launches: self.blocked_launches,
            last_start: self.last_start,
        }
    }

    /// The OS thread id of `thread`: the main thread's id is the pid, as on
    /// Linux; the autograd thread is spawned a few ids later.
    pub(crate) fn tid_of(&self, thread: Thread) -> i64 {
        match thread {
            Thread::Main => self.pid,
            Thread::Autograd => self.pid + 3,
        }
    }

    fn tid(&self) -> i64 {
        self.tid_of(self.thread)
    }

    /// End of all work launched onto `stream` so far.
    pub(crate) fn stream_free(&self, stream: usize) -> i64 {
        self.streams[stream].free
    }

    // ---- CPU time -------------------------------------------------------

    /// Advances the CPU clock by a uniform gap.
    pub(crate) fn gap(&mut self, lo: i64, hi: i64) {
        self.t += self.cpu.between(lo, hi);
    }

    /// Python time between modules: tens of microseconds, and rarely a
    /// long stall (garbage collection, allocator, logging).
    pub(crate) fn python_gap(&mut self) {
        self.t += self.cpu.between(6_000, 30_000) + self.cpu.hiccup(0.003, 100_000, 600_000);
    }

    /// Hands control to another thread: the autograd engine wakes up (or
    /// the main thread resumes) a little after the other one stops.
    pub(crate) fn switch_thread(&mut self, to: Thread) {
        debug_assert!(
            self.thread == Thread::Main || self.stack().is_empty(),
            "leaving the autograd thread inside an op"
        );
        self.t += self.cpu.between(8_000, 22_000);
        self.thread = to;
    }

    /// Opens a `cpu_op` (or a `user_annotation` when `annotation`).
    pub(crate) fn begin(&mut self, name: &str, args: OpArgs, annotation: bool) {
        self.t += self.cpu.between(1_000, 3_500);
        let ext = self.next_ext;
        self.next_ext += 1;
        let frame = Frame {
            annotation,
            // Timing runs (no output) make millions of ops: no names.
            name: if self.emit {
                name.to_owned()
            } else {
                String::new()
            },
            start: self.t,
            ext,
            args,
        };
        self.stack_mut().push(frame);
        // Entering the op (dispatcher, argument parsing) takes time before
        // any child can start.
        self.t += self.cpu.between(1_500, 4_000);
    }

    /// Start of the innermost open op on this thread.
    pub(crate) fn open_start(&self) -> i64 {
        self.stack().last().map_or(self.t, |f| f.start)
    }

    /// Closes the innermost op and writes it.
    pub(crate) fn end(&mut self) {
        self.t += self.cpu.between(700, 2_500);
        let f = self.stack_mut().pop().expect("end without begin");
        if !self.emit {
            return;
        }
        let tid = self.tid();
        let cat = if f.annotation {
            Category::UserAnnotation
        } else {
            Category::CpuOp
        };
        let dur = (self.t - f.start).max(0);
        let mut a = self.out.complete(cat, &f.name, self.pid, tid, f.start, dur);
        a.external_id(f.ext);
        f.args.write(&mut a, &self.groups);
    }

    /// An op with no arguments around `body`.
    pub(crate) fn op<R>(&mut self, name: &str, body: impl FnOnce(&mut Self) -> R) -> R {
        self.begin(name, OpArgs::None, false);
        let r = body(self);
        self.end();
        r
    }

    /// An op with recorded shapes around `body`.
    pub(crate) fn op_args<R>(
        &mut self,
        name: &str,
        args: OpArgs,
        body: impl FnOnce(&mut Self) -> R,
    ) -> R {
        self.begin(name, args, false);
        let r = body(self);
        self.end();
        r
    }

    /// A leaf op that launches nothing (views, reshapes, Python-side
    /// bookkeeping): pure CPU time.
    pub(crate) fn cpu_only(&mut self, name: &str, work_ns: i64) {
        self.begin(name, OpArgs::None, false);
        self.t += self.cpu.around(work_ns as f64, 0.3);
        self.end();
    }

    fn stack(&self) -> &Vec<Frame> {
        &self.stacks[usize::from(self.thread == Thread::Autograd)]
    }

    fn stack_mut(&mut self) -> &mut Vec<Frame> {
        &mut self.stacks[usize::from(self.thread == Thread::Autograd)]
    }

    /// The External id of the innermost open op on this thread.
    fn ext(&self) -> Option<u64> {
        self.stack().last().map(|f| f.ext)
    }

    fn corr(&mut self) -> u64 {
        let c = self.next_corr;
        self.next_corr += 1;
        c
    }

    // ---- events -------------------------------------------------------------

    fn runtime_event(&mut self, name: &str, start: i64, dur: i64, corr: u64, cbid: u32) {
        if !self.emit {
            return;
        }
        let (pid, tid, ext) = (self.pid, self.tid(), self.ext());
        let mut a = self
            .out
            .complete(Category::Runtime, name, pid, tid, start, dur.max(0));
        if let Some(e) = ext {
            a.external_id(e);
        }
        a.uint("cbid", u64::from(cbid)).correlation(corr);
    }

    /// A `cuda_sync` record; `wait` is the stream and the record call's
    /// correlation of the event a "Stream Wait Event" waits for.
    fn sync_event(
        &mut self,
        name: &str,
        stream: usize,
        ts: i64,
        dur: i64,
        corr: u64,
        wait: Option<(i64, u64)>,
    ) {
        if !self.emit || !self.cfg.training.cuda_sync_events {
            return;
        }
        let sid = STREAM_IDS[stream];
        let stream_arg = if name == "Context Sync" { -1 } else { sid };
        let dev = self.device;
        let mut a = self
            .out
            .complete(Category::CudaSync, name, dev, sid, ts, dur.max(0));
        a.str("cuda_sync_kind", name)
            .stream(stream_arg)
            .correlation(corr)
            .device(dev)
            .int("context", 1);
        if let Some((on_stream, record_corr)) = wait {
            a.int("wait_on_stream", on_stream)
                .uint("wait_on_cuda_event_record_corr_id", record_corr);
        }
    }

    // ---- GPU work ---------------------------------------------------------

    /// Launches `g` onto `stream` from the current CPU position (inside the
    /// current op).
    pub(crate) fn launch(&mut self, stream: usize, g: &Gpu) {
        self.t += self.cpu.between(1_000, 3_000);
        let call_start = self.t;
        let mut call_dur = self.cpu.around(4_500.0, 0.25);
        while self
            .pending
            .peek()
            .is_some_and(|&Reverse(e)| e <= call_start)
        {
            self.pending.pop();
        }
        // A full launch queue makes the call block until a queued task
        // finishes and frees a slot; the task then enters the queue.
        let mut submit = call_start;
        if self.pending.len() >= LAUNCH_QUEUE_DEPTH {
            if let Some(Reverse(e)) = self.pending.pop() {
                let ret = e + self.cpu.between(2_000, 6_000);
                call_dur = call_dur.max(ret - call_start);
                submit = ret - 1_500;
                self.blocked_launches += 1;
            }
        }
        let launch_lat = self.cpu.around(6_500.0, 0.2);
        let stream_gap = self.gpu.between(800, 2_400);
        let wait_lat = self.gpu.between(800, 2_000);
        let s = self.streams[stream];
        let mut start = submit + launch_lat;
        if s.used {
            start = start.max(s.free + stream_gap);
        }
        if s.wait_until > 0 {
            start = start.max(s.wait_until + wait_lat);
        }
        let end = start.max(g.peer_ready) + g.dur.max(0);
        self.last_start = start;
        self.streams[stream] = StreamState {
            free: end,
            wait_until: 0,
            used: true,
        };
        self.pending.push(Reverse(end));
        if self.cfg.training.launch_blocking {
            // CUDA_LAUNCH_BLOCKING: the call returns when the work is done.
            call_dur = call_dur.max(end - call_start + self.cpu.between(2_000, 6_000));
        }
        self.t = call_start + call_dur;
        let corr = self.corr();
        if self.emit {
            let name = match g.kind {
                GpuKind::Kernel => "cudaLaunchKernel",
                GpuKind::Memcpy(_) => "cudaMemcpyAsync",
            };
            let cbid = match g.kind {
                GpuKind::Kernel => CBID_LAUNCH,
                GpuKind::Memcpy(_) => CBID_MEMCPY_ASYNC,
            };
            self.runtime_event(name, call_start, call_dur, corr, cbid);
            self.gpu_event(stream, g, start, end, corr);
            let (pid, tid) = (self.pid, self.tid());
            let launch = FlowKind::Launch;
            self.out
                .flow(launch, FlowPhase::Start, corr, pid, tid, call_start);
            let (dev, sid) = (self.device, STREAM_IDS[stream]);
            self.out.flow(launch, FlowPhase::End, corr, dev, sid, start);
        }
    }

    fn gpu_event(&mut self, stream: usize, g: &Gpu, start: i64, end: i64, corr: u64) {
        let sid = STREAM_IDS[stream];
        let cat = match g.kind {
            GpuKind::Kernel => Category::Kernel,
            GpuKind::Memcpy(_) => Category::Memcpy,
        };
        let (ext, dev, num_sms) = (self.ext(), self.device, self.num_sms);
        let mut a = self
            .out
            .complete(cat, g.name, dev, sid, start, (end - start).max(0));
        if let Some(e) = ext {
            a.external_id(e);
        }
        if let GpuKind::Kernel = g.kind {
            a.int("queued", 0);
        }
        a.device(dev)
            .int("context", 1)
            .stream(sid)
            .correlation(corr);
        match g.kind {
            GpuKind::Kernel => {
                let sh = g.shape;
                let blocks = (sh.grid[0] as u64 * sh.grid[1] as u64 * sh.grid[2] as u64) as f64;
                let threads = (sh.block[0] * sh.block[1] * sh.block[2]) as f64;
                let per_sm = blocks / num_sms;
                let warps = per_sm * (threads / 32.0).ceil();
                let occ = (warps.min(64.0) / 64.0 * 100.0).round() as i64;
                let dims = |d: [u32; 3]| d.map(i64::from);
                a.uint("registers per thread", u64::from(sh.regs))
                    .uint("shared memory", u64::from(sh.smem))
                    .fixed("blocks per SM", per_sm, 6)
                    .fixed("warps per SM", warps, 6)
                    .ints("grid", &dims(sh.grid))
                    .ints("block", &dims(sh.block))
                    .int("est. achieved occupancy %", occ);
            }
            GpuKind::Memcpy(bytes) => {
                let gbps = bytes as f64 / (end - start).max(1) as f64;
                a.uint("bytes", bytes)
                    .fixed("memory bandwidth (GB/s)", gbps, 6);
            }
        }
        if let Some(c) = g.coll {
            c.write(&mut a, &self.groups[c.group]);
        }
    }

    /// `cudaEventRecord` on `stream`: the event completes when everything
    /// queued on the stream so far (work and waits) has.
    pub(crate) fn record(&mut self, stream: usize) -> Ev {
        self.t += self.cpu.between(800, 2_000);
        let start = self.t;
        let dur = self.cpu.around(2_300.0, 0.3);
        let corr = self.corr();
        let s = self.streams[stream];
        if self.cfg.training.event_records {
            self.runtime_event("cudaEventRecord", start, dur, corr, CBID_EVENT_RECORD);
        }
        self.t = start + dur;
        Ev {
            corr,
            time: s.free.max(s.wait_until),
            stream,
            valid: s.used,
        }
    }

    /// `cudaStreamWaitEvent`: later work on `stream` waits for `ev`. Writes
    /// the `cuda_sync` "Stream Wait Event" record that names the event's
    /// stream and its record call, as the profiler does with
    /// `enable_cuda_sync_events`.
    pub(crate) fn wait(&mut self, stream: usize, ev: Ev) {
        if !ev.valid || ev.stream == stream {
            return;
        }
        self.t += self.cpu.between(800, 2_000);
        let start = self.t;
        let dur = self.cpu.around(2_500.0, 0.3);
        let corr = self.corr();
        if self.cfg.training.stream_waits {
            self.runtime_event("cudaStreamWaitEvent", start, dur, corr, CBID_STREAM_WAIT);
        }
        let s = &mut self.streams[stream];
        s.wait_until = s.wait_until.max(ev.time);
        let at = (start + 3_000).max(s.free);
        let wait = (STREAM_IDS[ev.stream], ev.corr);
        self.sync_event("Stream Wait Event", stream, at, 600, corr, Some(wait));
        self.t = start + dur;
    }

    /// `cudaStreamSynchronize(stream)`: the host blocks until the stream's
    /// work is done.
    pub(crate) fn stream_sync(&mut self, stream: usize) {
        self.t += self.cpu.between(1_000, 3_000);
        let start = self.t;
        let s = self.streams[stream];
        let done = s.free.max(s.wait_until);
        let end =
            (start + self.cpu.around(3_000.0, 0.3)).max(done + self.cpu.between(3_000, 7_000));
        let corr = self.corr();
        self.runtime_event(
            "cudaStreamSynchronize",
            start,
            end - start,
            corr,
            CBID_STREAM_SYNC,
        );
        self.sync_event("Stream Sync", stream, start, end - start, corr, None);
        self.t = end;
    }

    /// `cudaDeviceSynchronize`: the host blocks until every stream is idle.
    pub(crate) fn device_sync(&mut self) {
        self.t += self.cpu.between(1_000, 3_000);
        let start = self.t;
        let done = self
            .streams
            .iter()
            .map(|s| s.free.max(s.wait_until))
            .max()
            .unwrap_or(0);
        let end =
            (start + self.cpu.around(3_000.0, 0.3)).max(done + self.cpu.between(3_000, 7_000));
        let corr = self.corr();
        self.runtime_event(
            "cudaDeviceSynchronize",
            start,
            end - start,
            corr,
            CBID_DEVICE_SYNC,
        );
        self.sync_event("Context Sync", COMPUTE, start, end - start, corr, None);
        self.pending.clear();
        self.t = end;
    }

    // ---- durations ----------------------------------------------------------

    /// `batch` GEMMs `[m, k] x [k, n]` with inputs in `precision` and
    /// 16-bit outputs, with noise.
    pub(crate) fn gemm_ns(
        &mut self,
        m: u64,
        n: u64,
        k: u64,
        batch: u64,
        precision: Precision,
    ) -> i64 {
        let g = self.hw.gemm(precision);
        let t = g.time_ns(m, n, k, batch, precision.bytes(), 2);
        self.gpu.around(t, 0.03)
    }

    /// A memory-bound kernel moving `bytes`, with noise.
    pub(crate) fn mem_ns(&mut self, bytes: u64) -> i64 {
        let t = self.hw.memory.time_ns(bytes as f64);
        self.gpu.around(t, 0.04)
    }

    /// A host-to-device copy of `bytes`, with noise.
    pub(crate) fn pcie_ns(&mut self, bytes: u64) -> i64 {
        let t = self.hw.pcie.time_ns(bytes as f64);
        self.gpu.around(t, 0.05)
    }

    /// Flash attention doing `flops` over `blocks` thread blocks, with
    /// noise.
    pub(crate) fn flash_ns(&mut self, flops: f64, blocks: u64, backward: bool) -> i64 {
        let t = self.hw.flash.time_ns(flops, blocks, backward);
        self.gpu.around(t, 0.03)
    }

    /// The group's ranks, for the network model.
    pub(crate) fn group_size(&self, kind: GroupKind) -> usize {
        self.group_ranks[group_index(kind)].len()
    }

    /// Writes the metadata rows (process and thread names).
    pub(crate) fn metadata(&mut self) {
        let pid = self.pid;
        let main = self.tid_of(Thread::Main);
        let autograd = self.tid_of(Thread::Autograd);
        let dev = self.device;
        let o = &mut self.out;
        o.process_name(pid, "python3");
        o.process_labels(pid, "CPU");
        o.thread_name(pid, main, &format!("thread {main} (python3)"));
        o.thread_name(
            pid,
            autograd,
            &format!("thread {autograd} (pt_autograd_{dev})"),
        );
        o.process_name(dev, &format!("GPU {dev}"));
        o.process_labels(dev, self.cfg.gpu.device_name);
        for sid in STREAM_IDS {
            o.thread_name(dev, sid, &format!("stream {sid}"));
        }
    }
}
