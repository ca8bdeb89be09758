//! One training iteration in the phases the lockstep driver runs every
//! stage through: [`Rank::begin_iteration`], one pipeline pass at a time
//! ([`Rank::next_need`], [`Rank::run_pass`]), [`Rank::before_barrier`]
//! and [`Rank::finish_iteration`] after the gradient-norm all-reduce that
//! every stage meets at.

use lumos_models::{interleaved_one_f_one_b, ChunkPass, CollectiveKind, Pass};

use super::kernels::*;
use super::Rank;
use crate::config::GroupKind;
use crate::gen::{Coll, Dtype, Gpu, GpuKind, OpArgs, P2p, COMPUTE, DP, MP};
use crate::training::GradSync;

/// Elements one multi-tensor-apply launch covers (apex: 320 blocks of
/// 65536 elements for four tensor lists).
pub(crate) const MTA_CHUNK: u64 = 320 * 65_536;

/// The pipeline of the current iteration on one stage.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pipe {
    passes: Vec<ChunkPass>,
    next: usize,
    /// GPU start of the send after forward `[chunk][micro-batch]` (the
    /// activation for the next virtual stage); -1 before it is issued.
    sent_fwd: Vec<Vec<i64>>,
    /// The same for the gradient sent back after each backward.
    sent_bwd: Vec<Vec<i64>>,
}

/// What the next pass of a stage waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PassNeed {
    /// Every pass of the iteration has run.
    Done,
    /// Nothing from another stage (the first virtual stage's forwards,
    /// the last one's backwards).
    Nothing,
    /// The transfer `stage` issues after its pass of `chunk` and
    /// micro-batch `mb`: a forward's activation (`forward`) or a
    /// backward's gradient.
    Send {
        stage: usize,
        forward: bool,
        chunk: usize,
        mb: usize,
    },
}

impl Rank<'_> {
    /// Opens iteration `n`: its `ProfilerStep#n` annotation, zeroed
    /// gradients, the wait for the last step's parameter all-gathers.
    pub(crate) fn begin_iteration(&mut self, n: usize) {
        let name = if self.g.emit {
            format!("ProfilerStep#{n}")
        } else {
            String::new()
        };
        self.g.begin(&name, OpArgs::None, true);
        let start = self.g.open_start();
        self.steps.push((start, start));
        self.zero_grad();
        for ev in std::mem::take(&mut self.param_events) {
            self.g.wait(COMPUTE, ev);
        }
        let p = self.g.cfg.parallel;
        let passes = interleaved_one_f_one_b(self.stage, p.pp, p.virtual_stages, p.microbatches)
            .expect("validated: micro-batches fill the interleaved schedule");
        let grid = vec![vec![-1; p.microbatches]; p.virtual_stages];
        self.pipe = Pipe {
            passes,
            next: 0,
            sent_fwd: grid.clone(),
            sent_bwd: grid,
        };
    }

    /// Virtual stage of `chunk` on this stage.
    fn virtual_stage(&self, chunk: usize) -> usize {
        chunk * self.g.cfg.parallel.pp + self.stage
    }

    /// What the next pass waits for.
    pub(crate) fn next_need(&self) -> PassNeed {
        let Some(p) = self.pipe.passes.get(self.pipe.next) else {
            return PassNeed::Done;
        };
        let pp = self.g.cfg.parallel.pp;
        let last = pp * self.g.cfg.parallel.virtual_stages - 1;
        let vs = self.virtual_stage(p.chunk);
        let from = |v: usize, forward: bool, mb: usize| PassNeed::Send {
            stage: v % pp,
            forward,
            chunk: v / pp,
            mb,
        };
        match p.pass {
            Pass::Forward(_) if vs == 0 => PassNeed::Nothing,
            Pass::Forward(k) => from(vs - 1, true, k),
            Pass::Backward(_) if vs == last => PassNeed::Nothing,
            Pass::Backward(k) => from(vs + 1, false, k),
        }
    }

    /// The GPU start of this stage's send after pass (`forward`, `chunk`,
    /// `mb`) of the current iteration, once issued.
    pub(crate) fn sent(&self, forward: bool, chunk: usize, mb: usize) -> Option<i64> {
        let grid = if forward {
            &self.pipe.sent_fwd
        } else {
            &self.pipe.sent_bwd
        };
        grid.get(chunk)
            .and_then(|c| c.get(mb))
            .copied()
            .filter(|&t| t >= 0)
    }

    /// Runs the next pass; `peer_ready` is when the transfer it receives
    /// was sent (0 when it receives none).
    pub(crate) fn run_pass(&mut self, peer_ready: i64) {
        let p = self.pipe.passes[self.pipe.next];
        self.pipe.next += 1;
        let m = self.g.cfg.parallel.microbatches;
        match p.pass {
            Pass::Forward(k) => self.forward_pass(p.chunk, k, peer_ready),
            Pass::Backward(k) => self.backward_pass(p.chunk, k, k + 1 == m, peer_ready),
        }
    }

    /// Elements of one activation (or its gradient) between stages: the
    /// sequence-parallel shard, or with SC21's scatter/gather 1/tp of the
    /// activation.
    fn act_nelems(&self) -> u64 {
        let d = &self.d;
        if self.scattered() {
            d.tokens * d.h / d.t
        } else {
            d.local * d.h
        }
    }

    /// Whether activations travel scattered over the tensor-parallel
    /// ranks (SC21's scatter/gather, only without sequence parallelism).
    fn scattered(&self) -> bool {
        !self.d.sp && self.d.t > 1 && self.training.p2p_scatter_gather
    }

    /// Whether pipeline sends overlap compute: Megatron-LM turns
    /// `overlap_p2p_comm` off for the plain 1F1B schedule, whatever was
    /// asked, so [`crate::Training::p2p_overlap`] needs model chunks.
    fn p2p_overlapped(&self) -> bool {
        self.training.p2p_overlap && self.g.cfg.parallel.virtual_stages > 1
    }

    /// A pipeline transfer with the stage `delta` away (wrapping around).
    /// A receive cannot end before the matching send started plus the
    /// transfer; the compute stream waits for both (Megatron waits on
    /// every request), and a scattered activation is all-gathered over
    /// the tensor-parallel group.
    fn p2p(&mut self, delta: isize, send: bool, peer_ready: i64) -> i64 {
        let peer = self.g.pipeline_peer(delta);
        let n = self.act_nelems();
        let stream = self.g.p2p_stream(peer);
        let mut c = Coll::new(
            CollectiveKind::SendRecv,
            GroupKind::PipelineParallel,
            stream,
            n,
            n,
            self.act_dtype(),
        );
        c.p2p = Some(P2p { peer, send });
        c.peer_ready = peer_ready;
        c.channels = 2;
        let ev = self.g.collective(&c);
        let start = self.g.last_start;
        let overlapped = self.p2p_overlapped();
        if !(send && overlapped) {
            self.g.wait(COMPUTE, ev);
        }
        if self.training.p2p_sync && !overlapped {
            self.g.device_sync();
        }
        if !send && self.scattered() {
            self.tp_coll(CollectiveKind::AllGather, n, n * self.d.t, true);
        }
        start
    }

    fn forward_pass(&mut self, chunk: usize, k: usize, peer_ready: i64) {
        self.g.gap(30_000, 90_000);
        self.d = self.chunks[chunk];
        if !self.d.first {
            self.p2p(-1, false, peer_ready);
        }
        self.forward_step(chunk);
        if !self.d.last {
            let t = self.p2p(1, true, 0);
            self.pipe.sent_fwd[chunk][k] = t;
        }
    }

    fn backward_pass(&mut self, chunk: usize, k: usize, reduce_grads: bool, peer_ready: i64) {
        self.g.gap(30_000, 90_000);
        self.d = self.chunks[chunk];
        if !self.d.last {
            self.p2p(1, false, peer_ready);
        }
        self.backward_step(chunk, reduce_grads);
        if !self.d.first {
            let t = self.p2p(-1, true, 0);
            self.pipe.sent_bwd[chunk][k] = t;
        }
    }

    // ---- optimizer -------------------------------------------------------

    fn zero_grad(&mut self) {
        let n = self.local_params();
        self.g.python_gap();
        self.g.begin("aten::zero_", OpArgs::None, false);
        self.eltwise_op("aten::fill_", K_FILL_F32, n, n * 4);
        self.g.end();
    }

    /// Megatron's `finish_grad_sync`: reductions deferred to after the
    /// backward start now, then the compute stream waits for every
    /// bucket's reduction.
    fn finish_grad_sync(&mut self) {
        if self.training.grad_sync == GradSync::AfterBackward {
            for n in self.buckets.clone() {
                self.reduce_bucket(n);
            }
        }
        let events = std::mem::take(&mut self.grad_events);
        for ev in events {
            self.g.wait(COMPUTE, ev);
        }
    }

    /// `n` elements through multi-tensor-apply launches (apex kernels are
    /// called from Python bindings, so no `cpu_op` wraps them).
    fn multi_tensor(&mut self, name: &str, n: u64, bytes_per_elem: u64) {
        let mut left = n;
        while left > 0 {
            let chunk = left.min(MTA_CHUNK);
            left -= chunk;
            self.g.t += self.g.cpu.between(8_000, 20_000);
            let dur = self.g.mem_ns(chunk * bytes_per_elem);
            self.kernel(name, dur, SH_MTA);
        }
    }

    /// Parameters this rank's optimizer updates.
    fn shard(&self) -> u64 {
        let p = self.g.cfg.parallel;
        let local = self.local_params();
        if p.distributed_optimizer {
            local.div_ceil(p.dp as u64)
        } else {
            local
        }
    }

    /// After the last pass: gradient synchronization and the local part of
    /// the gradient norm, up to the model-parallel all-reduce.
    pub(crate) fn before_barrier(&mut self) {
        self.g.python_gap();
        self.finish_grad_sync();
        self.g.python_gap();
        let shard = self.shard();
        self.multi_tensor(K_L2NORM, shard, 4);
        self.kernel(K_L2NORM_CLEANUP, 4_000, SH_SMALL);
        self.eltwise_op("aten::pow", K_MUL_F32, 1, 8);
    }

    /// The gradient-norm all-reduce over the model-parallel group: every
    /// stage meets there, so with several stages it ends `peer_ready`
    /// (the last stage's arrival) plus its transfer at the earliest.
    /// Returns its kernel's GPU start (0 without a group).
    pub(crate) fn barrier_collective(&mut self, peer_ready: i64) -> i64 {
        if self.g.group_size(GroupKind::ModelParallel) <= 1 {
            return 0;
        }
        let mut c = Coll::new(
            CollectiveKind::AllReduce,
            GroupKind::ModelParallel,
            MP,
            1,
            1,
            Dtype::F32,
        );
        if self.g.cfg.parallel.pp > 1 {
            c.peer_ready = peer_ready;
        }
        let ev = self.g.collective(&c);
        let start = self.g.last_start;
        self.g.wait(COMPUTE, ev);
        start
    }

    /// The rest of the optimizer step after the barrier (`.item()` of the
    /// norm, clipping, Adam, the copy to 16-bit parameters, parameter
    /// all-gathers with the distributed optimizer), the step-end
    /// synchronization, and the annotation's end.
    pub(crate) fn finish_iteration(&mut self, peer_ready: i64) {
        self.barrier_collective(peer_ready);
        self.eltwise_op("aten::pow", K_MUL_F32, 1, 8);
        self.g.begin("aten::item", OpArgs::None, false);
        self.g
            .begin("aten::_local_scalar_dense", OpArgs::None, false);
        // Into pinned memory: the copy call returns at once and the
        // stream synchronize waits for it. A copy into pageable memory
        // would return only once done (CUDA's rule, which lumos reads a
        // GPU clock ahead by), so it could not end after its call.
        self.g.launch(
            COMPUTE,
            &Gpu {
                name: "Memcpy DtoH (Device -> Pinned)",
                dur: 1_500,
                kind: GpuKind::Memcpy(4),
                shape: SH_SMALL,
                coll: None,
                peer_ready: 0,
            },
        );
        self.g.stream_sync(COMPUTE);
        self.g.end();
        self.g.end();
        self.g.python_gap();
        let shard = self.shard();
        self.multi_tensor(K_SCALE, shard, 8);
        self.g
            .begin("Optimizer.step#FusedAdam.step", OpArgs::None, true);
        self.multi_tensor(K_ADAM, shard, 28);
        self.g.end();
        self.g.python_gap();
        self.multi_tensor(K_COPY_BF16, shard, 6);
        self.gather_params();
        self.buckets.clear();
        self.g.python_gap();
        self.g.device_sync();
        self.g.end();
        if let Some(s) = self.steps.last_mut() {
            s.1 = self.g.t;
        }
        // Logging, timers and the profiler's own step bookkeeping.
        self.g.gap(300_000, 900_000);
    }

    /// With the distributed optimizer, updated parameter shards are
    /// all-gathered bucket by bucket, asynchronously; the next iteration's
    /// forward waits for them (Megatron's overlap_param_gather), or the
    /// step does.
    fn gather_params(&mut self) {
        let p = self.g.cfg.parallel;
        if !(p.distributed_optimizer && p.dp > 1) {
            return;
        }
        let buckets = self.buckets.clone();
        let dp = p.dp as u64;
        let dtype = self.act_dtype();
        for n in buckets {
            let c = Coll::new(
                CollectiveKind::AllGather,
                GroupKind::DataParallel,
                DP,
                n / dp,
                n,
                dtype,
            );
            let ev = self.g.collective(&Coll { channels: 32, ..c });
            if self.training.overlap_param_gather {
                self.param_events.push(ev);
            } else {
                self.g.wait(COMPUTE, ev);
            }
        }
    }
}
