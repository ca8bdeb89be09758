//! The self-attention core: flash attention (one kernel forward, three
//! backward), or Megatron's 2021-2022 unfused core (batched GEMMs around
//! a fused scale-mask-softmax and a dropout over the `heads x s x s`
//! scores), with selective recomputation of the latter.

use super::kernels::{K_DROPOUT, K_DROPOUT_BWD, K_SOFTMAX_BWD, K_SOFTMAX_FWD};
use super::{dims_args, Rank};
use crate::gen::{Gpu, GpuKind, OpArgs, Shape, COMPUTE};
use crate::training::{Attention, Recompute};

impl Rank<'_> {
    /// Thread blocks of a flash-attention kernel: 128 queries of one head
    /// of one sequence each.
    fn flash_blocks(&self) -> u64 {
        let d = self.d;
        d.s.div_ceil(128) * d.b * d.heads
    }

    /// Causal attention FLOPs forward: half of the `4 s^2 d` per head and
    /// sequence of dense attention.
    fn attention_flops(&self) -> f64 {
        let d = self.d;
        2.0 * (d.b * d.s * d.s * d.heads * d.head_dim) as f64
    }

    pub(super) fn attention_fwd(&mut self) {
        self.g.cpu_only("aten::split_with_sizes", 6_000);
        self.g.cpu_only("aten::view", 3_000);
        self.g.cpu_only("aten::transpose", 3_000);
        match self.training.attention {
            Attention::Flash => self.flash_fwd(),
            Attention::Unfused => self.core_fwd(),
        }
        self.g.cpu_only("aten::view", 3_000);
    }

    pub(super) fn attention_bwd(&mut self) {
        match self.training.attention {
            Attention::Flash => self.flash_bwd(),
            Attention::Unfused => self.core_bwd(),
        }
        self.g.cpu_only("aten::view", 3_000);
    }

    fn launch_shaped(&mut self, name: &str, dur: i64, shape: Shape) {
        self.g.launch(
            COMPUTE,
            &Gpu {
                name,
                dur,
                kind: GpuKind::Kernel,
                shape,
                coll: None,
                peer_ready: 0,
            },
        );
    }

    fn flash_fwd(&mut self) {
        let d = self.d;
        let a = self.args(|| {
            let q = [d.b, d.s, d.heads, d.head_dim];
            let kv = [d.b, d.s, d.kv_heads, d.head_dim];
            dims_args(&[&q, &kv, &kv])
        });
        let dur = self
            .g
            .flash_ns(self.attention_flops(), self.flash_blocks(), false);
        self.g.begin("FlashAttnFunc", OpArgs::None, false);
        self.g.begin("flash_attn::_flash_attn_forward", a, false);
        let grid = [(d.s / 128).max(1) as u32, d.b as u32, d.heads as u32];
        let name = self.k.flash_fwd.clone();
        self.launch_shaped(&name, dur, Shape::new(grid, [128, 1, 1], 255, 49_152));
        self.g.end();
        self.g.end();
    }

    fn flash_bwd(&mut self) {
        let d = self.d;
        self.autograd_begin("FlashAttnFuncBackward");
        self.g
            .begin("flash_attn::_flash_attn_backward", OpArgs::None, false);
        let qkv = d.tokens * d.heads * d.head_dim;
        let d1 = self.g.mem_ns(qkv * 4 + d.tokens * d.heads * 4);
        let grid = [(d.s / 128).max(1) as u32, d.b as u32, d.heads as u32];
        // The backward recomputes the scores and runs four products:
        // 2.5 times the forward's FLOPs.
        let d2 = self
            .g
            .flash_ns(2.5 * self.attention_flops(), self.flash_blocks(), true);
        let d3 = self.g.mem_ns(qkv * 6);
        let names = [
            self.k.flash_bwd_dot.clone(),
            self.k.flash_bwd.clone(),
            self.k.flash_bwd_dq.clone(),
        ];
        for (name, (dur, smem)) in names.iter().zip([(d1, 0), (d2, 98_304), (d3, 0)]) {
            self.launch_shaped(name, dur, Shape::new(grid, [256, 1, 1], 255, smem));
        }
        self.g.end();
        self.autograd_end();
    }

    /// A batched GEMM over the `b x heads` attention matrices of this rank.
    fn bmm(&mut self, op: &str, m: u64, n: u64, k: u64) {
        let batch = self.d.b * self.d.heads;
        let dur = self
            .g
            .gemm_ns(m, n, k, batch, lumos_models::Precision::Bf16);
        let a = self.args(|| dims_args(&[&[batch, m, k], &[batch, k, n]]));
        self.g.begin(op, a, false);
        let mut sh = Self::gemm_shape(m, n);
        sh.grid[2] = batch.min(u32::MAX as u64) as u32;
        let name = self.k.gemm_fwd.clone();
        self.launch_shaped(&name, dur, sh);
        self.g.end();
    }

    /// Elements of this rank's attention scores.
    fn scores(&self) -> u64 {
        let d = self.d;
        d.b * d.heads * d.s * d.s
    }

    /// Megatron's `CoreAttention` forward: scores `Q K^T` (batched, scaled),
    /// the fused upper-triangular masked softmax (read and write the
    /// scores once), dropout on the probabilities (and its mask), and the
    /// weighted values.
    fn core_fwd(&mut self) {
        let (s, hd) = (self.d.s, self.d.head_dim);
        let n = self.scores();
        self.g.begin("CoreAttention", OpArgs::None, false);
        self.bmm("aten::baddbmm", s, s, hd);
        self.g
            .begin("ScaledUpperTriangMaskedSoftmax", OpArgs::None, false);
        let dur = self.g.mem_ns(n * 4);
        self.kernel(K_SOFTMAX_FWD, dur, Shape::elementwise(n));
        self.g.end();
        self.g.begin("aten::dropout", OpArgs::None, false);
        self.eltwise_op("aten::native_dropout", K_DROPOUT, n, n * 5);
        self.g.end();
        self.bmm("aten::bmm", s, hd, s);
        self.g.end();
    }

    /// The unfused core's backward, mirror image of [`Self::core_fwd`];
    /// with selective recomputation its forward runs again first (the
    /// scores are not kept), inside Megatron's checkpoint function.
    fn core_bwd(&mut self) {
        let (s, hd) = (self.d.s, self.d.head_dim);
        let n = self.scores();
        let selective = self.training.recompute == Recompute::Selective;
        if selective {
            self.autograd_begin("CheckpointFunctionBackward");
            self.core_fwd();
        }
        self.autograd_begin("BmmBackward0");
        self.bmm("aten::bmm", s, s, hd);
        self.bmm("aten::bmm", s, hd, s);
        self.autograd_end();
        self.autograd_begin("NativeDropoutBackward0");
        self.eltwise_op("aten::native_dropout_backward", K_DROPOUT_BWD, n, n * 5);
        self.autograd_end();
        self.autograd_begin("ScaledUpperTriangMaskedSoftmaxBackward");
        let dur = self.g.mem_ns(n * 6);
        self.kernel(K_SOFTMAX_BWD, dur, Shape::elementwise(n));
        self.autograd_end();
        self.autograd_begin("BaddbmmBackward0");
        self.bmm("aten::bmm", s, hd, s);
        self.bmm("aten::bmm", s, hd, s);
        self.autograd_end();
        if selective {
            self.autograd_end();
        }
    }
}
