//! Forward and backward of the model's pieces on one rank: layer norms,
//! tensor-parallel linear layers, the MLP, whole transformer layers (with
//! full recomputation), the embedding, the output layer and the loss.

use lumos_models::CollectiveKind;

use super::kernels::*;
use super::{dims_args, Rank};
use crate::config::GroupKind;
use crate::gen::{Coll, Dtype, Gpu, GpuKind, InputShapes, OpArgs, Thread, COMPUTE, DP, TP};
use crate::training::{GradDtype, GradSync, Recompute};

impl Rank<'_> {
    // ---- forward -------------------------------------------------------

    fn layer_norm_fwd(&mut self) {
        let (sl, b, h, n) = (self.d.s_local, self.d.b, self.d.h, self.d.local);
        let a = self.args(|| dims_args(&[&[sl, b, h], &[], &[h], &[h], &[], &[]]));
        let a2 = self.args(|| dims_args(&[&[sl, b, h], &[], &[h], &[h], &[]]));
        self.g.begin("aten::layer_norm", a, false);
        self.g.begin("aten::native_layer_norm", a2, false);
        let dur = self.g.mem_ns(n * h * 4 + n * 8);
        let mut sh = SH_LN;
        sh.grid[0] = n.min(u32::MAX as u64) as u32;
        self.kernel(K_LN_FWD, dur, sh);
        self.g.end();
        self.g.end();
    }

    /// Column-parallel linear `[.., k] -> [.., n]` (n already split):
    /// with sequence parallelism the input is first all-gathered.
    fn column_fwd(&mut self, k: u64, n: u64) {
        self.g.begin(
            "LinearWithGradAccumulationAndAsyncCommunication",
            OpArgs::None,
            false,
        );
        if self.d.sp {
            let (l, t) = (self.d.local, self.d.tokens);
            self.tp_coll(CollectiveKind::AllGather, l * k, t * k, true);
        }
        self.matmul(k, n, |n| &n.gemm_fwd);
        self.g.end();
    }

    /// Row-parallel linear `[.., k] -> [.., n]` (k already split), then the
    /// reduction over the tensor-parallel group.
    fn row_fwd(&mut self, k: u64, n: u64) {
        self.g.begin(
            "LinearWithGradAccumulationAndAsyncCommunication",
            OpArgs::None,
            false,
        );
        self.matmul(k, n, |n| &n.gemm_fwd);
        self.g.end();
        let (l, t) = (self.d.local, self.d.tokens);
        if self.d.sp {
            self.g.begin(
                "_ReduceScatterToSequenceParallelRegion",
                OpArgs::None,
                false,
            );
            self.tp_coll(CollectiveKind::ReduceScatter, t * n, l * n, true);
            self.g.end();
        } else if self.d.t > 1 {
            self.g
                .begin("_ReduceFromModelParallelRegion", OpArgs::None, false);
            self.tp_coll(CollectiveKind::AllReduce, t * n, t * n, true);
            self.g.end();
        }
    }

    /// Dropout, then the residual add, on the sequence-parallel region.
    fn dropout_add_fwd(&mut self) {
        let n = self.d.local * self.d.h;
        self.g.begin("aten::dropout", OpArgs::None, false);
        self.eltwise_op("aten::native_dropout", K_DROPOUT, n, n * 5);
        self.g.end();
        self.eltwise_op("aten::add", K_ADD, n, n * 6);
    }

    /// The activation between the MLP's matrices: GELU, or SwiGLU's
    /// SiLU of one half times the other.
    fn activation_fwd(&mut self) {
        let n = self.d.tokens * self.d.f / self.d.t;
        if self.d.swiglu {
            self.eltwise_op("aten::silu", K_SILU, n, n * 4);
            self.eltwise_op("aten::mul", K_MUL, n, n * 6);
        } else {
            self.eltwise_op("aten::gelu", K_GELU, n, n * 4);
        }
    }

    /// One transformer layer forward.
    pub(super) fn layer_fwd(&mut self) {
        let (h, f, t) = (self.d.h, self.d.f, self.d.t);
        let (qkv, proj, fc1) = (self.d.qkv_out(), self.d.proj_in(), self.d.fc1_out());
        self.g.python_gap();
        self.layer_norm_fwd();
        self.g.python_gap();
        self.column_fwd(h, qkv);
        self.attention_fwd();
        self.row_fwd(proj, h);
        self.dropout_add_fwd();
        self.g.python_gap();
        self.layer_norm_fwd();
        self.g.python_gap();
        self.column_fwd(h, fc1);
        self.activation_fwd();
        self.row_fwd(f / t, h);
        self.dropout_add_fwd();
    }

    /// Host-to-device copy of an input tensor (pinned memory).
    fn h2d(&mut self, bytes: u64) {
        let dur = self.g.pcie_ns(bytes);
        self.g.begin("aten::to", OpArgs::None, false);
        self.g.begin("aten::_to_copy", OpArgs::None, false);
        self.g.begin("aten::copy_", OpArgs::None, false);
        self.g.launch(
            COMPUTE,
            &Gpu {
                name: "Memcpy HtoD (Pinned -> Device)",
                dur,
                kind: GpuKind::Memcpy(bytes),
                shape: SH_SMALL,
                coll: None,
                peer_ready: 0,
            },
        );
        self.g.end();
        self.g.end();
        self.g.end();
    }

    fn get_batch(&mut self) {
        if !(self.d.first || self.d.last) {
            return;
        }
        let cost = self.g.cpu.between(250_000, 700_000);
        self.g.begin(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            OpArgs::None,
            true,
        );
        self.g.t += cost;
        self.g.end();
        let tok = self.d.tokens;
        if self.d.first {
            self.h2d(tok * 8);
            self.h2d(tok * 8);
        }
        if self.d.last {
            self.h2d(tok * 8);
            self.h2d(tok * 4);
        }
    }

    fn embedding_fwd(&mut self) {
        let d = self.d;
        let (tok, h) = (d.tokens, d.h);
        if d.t > 1 {
            // Vocabulary-parallel input mask.
            for op in ["aten::lt", "aten::ge", "aten::bitwise_or", "aten::sub"] {
                self.eltwise_op(op, K_ADD, tok, tok * 17);
            }
        }
        let a = self.args(|| dims_args(&[&[d.v / d.t, h], &[d.b, d.s]]));
        self.g.begin("aten::embedding", a, false);
        self.g.begin("aten::index_select", OpArgs::None, false);
        self.eltwise(K_INDEX_SELECT, tok * h, tok * h * 4 + tok * 8);
        self.g.end();
        self.g.end();
        if d.t > 1 {
            self.eltwise_op("aten::masked_fill_", K_MASK, tok * h, tok * h * 5);
            if d.sp {
                self.g.begin(
                    "_ReduceScatterToSequenceParallelRegion",
                    OpArgs::None,
                    false,
                );
                self.tp_coll(CollectiveKind::ReduceScatter, tok * h, d.local * h, true);
            } else {
                self.g
                    .begin("_ReduceFromModelParallelRegion", OpArgs::None, false);
                self.tp_coll(CollectiveKind::AllReduce, tok * h, tok * h, true);
            }
            self.g.end();
        }
        let n = d.local * h;
        self.g.begin("aten::embedding", OpArgs::None, false);
        self.g.begin("aten::index_select", OpArgs::None, false);
        self.eltwise(K_INDEX_SELECT, n, n * 4);
        self.g.end();
        self.g.end();
        self.eltwise_op("aten::add", K_ADD, n, n * 6);
        self.g.begin("aten::dropout", OpArgs::None, false);
        self.eltwise_op("aten::native_dropout", K_DROPOUT, n, n * 5);
        self.g.end();
    }

    /// Final layer norm, output layer and vocabulary-parallel cross entropy.
    fn head_fwd(&mut self) {
        let d = self.d;
        self.g.python_gap();
        self.layer_norm_fwd();
        self.g.python_gap();
        self.column_fwd(d.h, d.v / d.t);
        let (tok, vl) = (d.tokens, d.v / d.t);
        let logits = tok * vl;
        self.g
            .begin("_VocabParallelCrossEntropy", OpArgs::None, false);
        self.eltwise_op("aten::to", K_TO_F32, logits, logits * 6);
        self.eltwise_op("aten::max", K_REDUCE_MAX, logits, logits * 4);
        self.tp_coll_f32(tok);
        self.eltwise_op("aten::sub_", K_SUB_F32, logits, logits * 8);
        self.eltwise_op("aten::exp", K_EXP_F32, logits, logits * 8);
        self.eltwise_op("aten::sum", K_REDUCE_SUM, logits, logits * 4);
        self.eltwise_op("aten::masked_fill_", K_MASK, tok, tok * 12);
        self.tp_coll_f32(tok);
        self.tp_coll_f32(tok);
        self.eltwise_op("aten::log", K_LOG_F32, tok, tok * 8);
        self.eltwise_op("aten::sub", K_SUB_F32, tok, tok * 12);
        self.g.end();
        self.g.python_gap();
        self.eltwise_op("aten::mul", K_MUL_F32, tok, tok * 12);
        self.eltwise_op("aten::sum", K_REDUCE_SUM, tok, tok * 4);
        self.eltwise_op("aten::div", K_MUL_F32, 1, 8);
    }

    /// A small FP32 all-reduce over the tensor-parallel group (cross
    /// entropy statistics).
    fn tp_coll_f32(&mut self, n: u64) {
        if self.d.t == 1 {
            return;
        }
        let c = Coll::new(
            CollectiveKind::AllReduce,
            GroupKind::TensorParallel,
            TP,
            n,
            n,
            Dtype::F32,
        );
        let ev = self.g.collective(&c);
        self.g.wait(COMPUTE, ev);
    }

    /// Forward of one micro-batch through model chunk `chunk` of this
    /// stage, without send/recv.
    pub(crate) fn forward_step(&mut self, chunk: usize) {
        self.d = self.chunks[chunk];
        self.get_batch();
        if self.d.first {
            self.embedding_fwd();
        }
        for _ in 0..self.d.layers {
            self.layer_fwd();
        }
        if self.d.last {
            self.head_fwd();
        }
    }

    // ---- backward ------------------------------------------------------

    /// The gradient of `numel` parameters is in the main-gradient buffer:
    /// Megatron's hook adds it to the open bucket and starts the bucket's
    /// reduction once the bucket is full.
    fn grad_ready(&mut self, numel: u64) {
        if !self.reduce_grads {
            return;
        }
        self.bucket_fill += numel;
        if self.bucket_fill >= self.bucket_size {
            self.start_bucket();
        }
    }

    /// Closes the open bucket: with overlapped reduction, scales it by
    /// 1/dp and launches its reduction on the data-parallel stream; else
    /// keeps it for after the backward.
    pub(super) fn start_bucket(&mut self) {
        let n = std::mem::take(&mut self.bucket_fill);
        if n == 0 {
            return;
        }
        self.buckets.push(n);
        if self.training.grad_sync == GradSync::Overlapped {
            self.reduce_bucket(n);
        }
    }

    /// Scales a bucket of `n` gradients by 1/dp and launches its
    /// reduction: an all-reduce, or a reduce-scatter with the distributed
    /// optimizer.
    pub(super) fn reduce_bucket(&mut self, n: u64) {
        let dp = self.g.cfg.parallel.dp as u64;
        let dtype = match self.training.grad_dtype {
            GradDtype::Fp32 => Dtype::F32,
            GradDtype::Half => self.act_dtype(),
        };
        self.g.python_gap();
        self.eltwise_op("aten::mul_", K_MUL_F32, n, n * 2 * dtype.bytes());
        let c = if self.g.cfg.parallel.distributed_optimizer {
            Coll::new(
                CollectiveKind::ReduceScatter,
                GroupKind::DataParallel,
                DP,
                n,
                n / dp,
                dtype,
            )
        } else {
            Coll::new(
                CollectiveKind::AllReduce,
                GroupKind::DataParallel,
                DP,
                n,
                n,
                dtype,
            )
        };
        let ev = self.g.collective(&Coll { channels: 32, ..c });
        self.grad_events.push(ev);
    }

    fn layer_norm_bwd(&mut self) {
        let (n, h) = (self.d.local, self.d.h);
        self.autograd_begin("NativeLayerNormBackward0");
        self.g
            .begin("aten::native_layer_norm_backward", OpArgs::None, false);
        let mut sh = SH_LN;
        sh.grid[0] = n.min(u32::MAX as u64) as u32;
        let d1 = self.g.mem_ns(n * h * 6 + n * 8);
        self.kernel(K_LN_BWD_INPUT, d1, sh);
        let d2 = self.g.mem_ns(n * h * 4);
        self.kernel(
            K_LN_BWD_GAMMA,
            d2,
            crate::gen::Shape::new([(h / 32) as u32, 1, 1], [32, 32, 1], 64, 8_192),
        );
        self.g.end();
        self.autograd_end();
        // Megatron's hooks add weight and bias gradients into main_grad.
        for _ in 0..2 {
            self.autograd_begin("torch::autograd::AccumulateGrad");
            self.eltwise_op("aten::add_", K_ADD_F32, h, h * 12);
            self.autograd_end();
        }
        self.grad_ready(2 * h);
    }

    fn dropout_add_bwd(&mut self) {
        let n = self.d.local * self.d.h;
        self.autograd_begin("AddBackward0");
        self.g.t += self.g.cpu.between(2_000, 5_000);
        self.autograd_end();
        self.autograd_begin("NativeDropoutBackward0");
        self.eltwise_op("aten::native_dropout_backward", K_DROPOUT_BWD, n, n * 5);
        self.autograd_end();
    }

    /// With FP8, the incoming gradient of `n` elements is cast (and
    /// transposed) before the data- and weight-gradient GEMMs.
    fn grad_cast(&mut self, n: u64) {
        self.fp8_cast(self.d.tokens * n);
    }

    /// Backward of a row-parallel linear (`k` split): with sequence
    /// parallelism the reduce-scatter's backward all-gathers the gradient
    /// first; then data and weight gradients.
    fn row_bwd(&mut self, k: u64, n: u64) {
        let (l, t) = (self.d.local, self.d.tokens);
        if self.d.sp {
            self.autograd_begin("_ReduceScatterToSequenceParallelRegionBackward");
            self.tp_coll(CollectiveKind::AllGather, l * n, t * n, true);
            self.autograd_end();
        }
        self.autograd_begin("LinearWithGradAccumulationAndAsyncCommunicationBackward");
        self.grad_cast(n);
        self.matmul(n, k, |n| &n.gemm_dgrad);
        self.wgrad(k, n);
        self.autograd_end();
        self.grad_ready(k * n);
    }

    /// Backward of a column-parallel linear (`n` split), overlapping
    /// communication with compute as Megatron does: the input all-gather
    /// (sequence parallel) runs under the data-gradient GEMM, and the
    /// gradient's reduce-scatter (or all-reduce) under the weight-gradient
    /// GEMM.
    fn column_bwd(&mut self, k: u64, n: u64, owns_weight: bool) {
        let (l, t) = (self.d.local, self.d.tokens);
        self.autograd_begin("LinearWithGradAccumulationAndAsyncCommunicationBackward");
        let gathered = if self.d.sp {
            self.tp_coll(CollectiveKind::AllGather, l * k, t * k, false)
        } else {
            None
        };
        self.grad_cast(n);
        self.matmul(n, k, |n| &n.gemm_dgrad);
        let overlap = self.training.tp_comm_overlap;
        if let Some(ev) = gathered.filter(|_| !overlap) {
            self.g.wait(COMPUTE, ev);
        }
        let reduced = if self.d.sp {
            self.tp_coll(CollectiveKind::ReduceScatter, t * k, l * k, false)
        } else {
            self.tp_coll(CollectiveKind::AllReduce, t * k, t * k, false)
        };
        self.wgrad(k, n);
        if let Some(ev) = reduced.filter(|_| !(overlap && self.d.sp)) {
            self.g.wait(COMPUTE, ev);
        }
        self.autograd_end();
        if owns_weight {
            self.grad_ready(k * n);
        }
    }

    /// The autograd engine sums the two gradients of a residual branch.
    fn residual_grad(&mut self) {
        let n = self.d.local * self.d.h;
        self.eltwise_op("aten::add", K_ADD, n, n * 6);
    }

    fn activation_bwd(&mut self) {
        let n = self.d.tokens * self.d.f / self.d.t;
        if self.d.swiglu {
            self.autograd_begin("MulBackward0");
            self.eltwise_op("aten::mul", K_MUL, n, n * 8);
            self.autograd_end();
            self.autograd_begin("SiluBackward0");
            self.eltwise_op("aten::silu_backward", K_SILU_BWD, n, n * 6);
            self.autograd_end();
        } else {
            self.autograd_begin("GeluBackward0");
            self.eltwise_op("aten::gelu_backward", K_GELU_BWD, n, n * 6);
            self.autograd_end();
        }
    }

    /// One transformer layer backward; with full recomputation its forward
    /// runs again first, inside Megatron's checkpoint function.
    fn layer_bwd(&mut self) {
        let full = self.training.recompute == Recompute::Full;
        if full {
            self.autograd_begin("CheckpointFunctionBackward");
            self.layer_fwd();
        }
        let (h, f, t) = (self.d.h, self.d.f, self.d.t);
        let (qkv, proj, fc1) = (self.d.qkv_out(), self.d.proj_in(), self.d.fc1_out());
        self.dropout_add_bwd();
        self.row_bwd(f / t, h);
        self.activation_bwd();
        self.column_bwd(h, fc1, true);
        self.layer_norm_bwd();
        self.residual_grad();
        self.dropout_add_bwd();
        self.row_bwd(proj, h);
        self.attention_bwd();
        self.column_bwd(h, qkv, true);
        self.layer_norm_bwd();
        self.residual_grad();
        if full {
            self.autograd_end();
        }
    }

    fn head_bwd(&mut self) {
        let d = self.d;
        let (tok, vl) = (d.tokens, d.v / d.t);
        let logits = tok * vl;
        self.autograd_begin("DivBackward0");
        self.eltwise_op("aten::div", K_MUL_F32, 1, 8);
        self.autograd_end();
        self.autograd_begin("SumBackward0");
        self.eltwise_op("aten::expand", K_FILL_F32, tok, tok * 4);
        self.autograd_end();
        self.autograd_begin("MulBackward0");
        self.eltwise_op("aten::mul", K_MUL_F32, tok, tok * 12);
        self.autograd_end();
        self.autograd_begin("_VocabParallelCrossEntropyBackward");
        self.eltwise_op("aten::sub_", K_SUB_F32, logits, logits * 8);
        self.eltwise_op("aten::mul_", K_MUL_F32, logits, logits * 8);
        self.autograd_end();
        // The logits' gradient cast back to BF16, outside the loss: only
        // its recorded shape `[s, b, vocabulary / tp]` tells that it is a
        // vocabulary shard.
        self.autograd_begin("ToCopyBackward0");
        let a = self.args(|| OpArgs::Dims(InputShapes::new(&[&[d.s, d.b, vl]]).float()));
        self.g.begin("aten::to", a, false);
        self.eltwise(K_TO_F32, logits, logits * 6);
        self.g.end();
        self.autograd_end();
        // The output layer's weight is the word embedding: on a single
        // stage its gradient is complete only after the embedding backward;
        // on the last of several stages it is this stage's own copy.
        let own_copy = self.g.cfg.parallel.pp > 1;
        self.column_bwd(d.h, vl, own_copy);
        self.layer_norm_bwd();
    }

    fn embedding_bwd(&mut self) {
        let d = self.d;
        let (tok, h) = (d.tokens, d.h);
        let n = d.local * h;
        self.autograd_begin("NativeDropoutBackward0");
        self.eltwise_op("aten::native_dropout_backward", K_DROPOUT_BWD, n, n * 5);
        self.autograd_end();
        self.autograd_begin("AddBackward0");
        self.g.t += self.g.cpu.between(2_000, 5_000);
        self.autograd_end();
        // Position embedding.
        self.embedding_dense_bwd(d.local, d.s * h);
        self.grad_ready(d.s * h);
        if d.t > 1 && d.sp {
            self.autograd_begin("_ReduceScatterToSequenceParallelRegionBackward");
            self.tp_coll(CollectiveKind::AllGather, d.local * h, tok * h, true);
            self.autograd_end();
        }
        self.embedding_dense_bwd(tok, d.v / d.t * h);
        self.grad_ready(d.v / d.t * h);
    }

    fn embedding_dense_bwd(&mut self, tokens: u64, weight: u64) {
        let h = self.d.h;
        self.autograd_begin("EmbeddingBackward0");
        self.g
            .begin("aten::embedding_backward", OpArgs::None, false);
        self.g
            .begin("aten::embedding_dense_backward", OpArgs::None, false);
        self.eltwise(K_FILL_F32, weight, weight * 4);
        self.eltwise(K_EMB_BWD_SORT, tokens, tokens * 32);
        self.eltwise(K_EMB_BWD_GRAD, tokens * h, tokens * h * 6);
        self.eltwise(K_EMB_BWD_SUM, weight.min(tokens * h), tokens * h * 8);
        self.g.end();
        self.g.end();
        self.autograd_end();
    }

    /// Backward of one micro-batch through model chunk `chunk`, on the
    /// autograd thread, without send/recv; `reduce_grads` in the chunk's
    /// last micro-batch, when its gradients are complete.
    pub(crate) fn backward_step(&mut self, chunk: usize, reduce_grads: bool) {
        self.d = self.chunks[chunk];
        self.reduce_grads = reduce_grads && self.g.cfg.parallel.dp > 1;
        if self.d.last {
            let tok = self.d.tokens;
            self.g.begin("aten::ones_like", OpArgs::None, false);
            self.eltwise_op("aten::fill_", K_FILL_F32, tok.min(1), 4);
            self.g.end();
        }
        self.g.switch_thread(Thread::Autograd);
        if self.d.last {
            self.head_bwd();
        }
        for _ in 0..self.d.layers {
            self.layer_bwd();
        }
        if self.d.first {
            self.embedding_bwd();
        }
        if self.reduce_grads {
            self.start_bucket();
        }
        self.reduce_grads = false;
        self.g.switch_thread(Thread::Main);
    }

    /// GPU time of one transformer layer forward and backward (with its
    /// recomputation), ns: three layers run back to back on an idle rank
    /// and the middle one is measured, from the end of the previous
    /// layer's work on the compute stream to the end of its own.
    pub(crate) fn time_layer(&mut self) -> (i64, i64) {
        self.d = self.chunks[0];
        self.g.t = 1_000_000;
        let mut ends = [0i64; 3];
        for e in &mut ends {
            self.layer_fwd();
            *e = self.g.stream_free(COMPUTE);
        }
        let fwd = ends[2] - ends[1];
        self.g.switch_thread(Thread::Autograd);
        for e in &mut ends {
            self.layer_bwd();
            *e = self.g.stream_free(COMPUTE);
        }
        self.g.switch_thread(Thread::Main);
        (fwd, ends[2] - ends[1])
    }
}
