//! A Megatron-LM GPT training iteration on one rank, written through the
//! [`Gen`] timeline engine: data loading, embedding, transformer layers
//! with tensor parallelism (and sequence parallelism), the output layer and
//! vocabulary-parallel cross entropy, the 1F1B pipeline (interleaved or
//! not) with send/recv, backward on the autograd thread with activation
//! recomputation and data-parallel gradient reduction, and the optimizer
//! step.
//!
//! `layer.rs` holds the forward and backward of the model's pieces,
//! `attention.rs` the attention core, `step.rs` the pipeline passes and
//! the optimizer, in the phases [`crate::lockstep`] drives.

use lumos_models::CollectiveKind;

use crate::config::{GroupKind, SynthConfig};
use crate::gen::{Coll, Dtype, Ev, Gen, Gpu, GpuKind, InputShapes, OpArgs, Shape, COMPUTE, TP};
use crate::training::{Precision, Training};

mod attention;
mod kernels;
mod layer;
mod step;

use kernels::{Names, K_FP8_CAST, SH_GEMM};
pub(crate) use step::{PassNeed, MTA_CHUNK};

/// Sizes of one model chunk as this rank holds it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dims {
    s: u64,
    b: u64,
    h: u64,
    f: u64,
    v: u64,
    t: u64,
    /// Query heads on this rank.
    heads: u64,
    /// Key/value heads on this rank.
    kv_heads: u64,
    head_dim: u64,
    sp: bool,
    swiglu: bool,
    /// Tokens of a micro-batch.
    tokens: u64,
    /// Tokens in the sequence-parallel region (tokens / tp with SP).
    local: u64,
    /// Sequence length in that region.
    s_local: u64,
    layers: usize,
    /// The chunk holds the embedding (virtual stage 0).
    first: bool,
    /// The chunk holds the output layer and the loss (last virtual
    /// stage).
    last: bool,
}

impl Dims {
    /// Chunk `chunk` of `stage`: virtual stage `chunk * pp + stage`.
    fn new(cfg: &SynthConfig, stage: usize, chunk: usize) -> Dims {
        let (m, p) = (&cfg.model, &cfg.parallel);
        let t = p.tp as u64;
        let sp = p.sp();
        let (s, b) = (m.seq_len as u64, m.micro_batch as u64);
        let s_local = if sp { s / t } else { s };
        let vs = chunk * p.pp + stage;
        Dims {
            s,
            b,
            h: m.hidden as u64,
            f: m.ffn_hidden as u64,
            v: m.vocab as u64,
            t,
            heads: (m.heads / p.tp) as u64,
            kv_heads: (m.kv_heads / p.tp) as u64,
            head_dim: (m.hidden / m.heads) as u64,
            sp,
            swiglu: m.swiglu,
            tokens: s * b,
            local: s_local * b,
            s_local,
            layers: cfg.chunk_layers(vs),
            first: vs == 0,
            last: vs + 1 == p.pp * p.virtual_stages,
        }
    }

    /// Output width of the column-parallel QKV projection on this rank.
    fn qkv_out(&self) -> u64 {
        (self.heads + 2 * self.kv_heads) * self.head_dim
    }

    /// Input width of the row-parallel output projection on this rank.
    fn proj_in(&self) -> u64 {
        self.heads * self.head_dim
    }

    /// Output width of the first MLP matrix on this rank.
    fn fc1_out(&self) -> u64 {
        let f = self.f / self.t;
        if self.swiglu {
            2 * f
        } else {
            f
        }
    }

    /// Parameters of one layer on this rank, in the order backward
    /// produces their gradients: fc2, fc1, ln2, proj, qkv, ln1.
    fn layer_params(&self) -> [u64; 6] {
        let h = self.h;
        [
            self.f / self.t * h,
            h * self.fc1_out(),
            2 * h,
            self.proj_in() * h,
            h * self.qkv_out(),
            2 * h,
        ]
    }

    /// Parameters of the chunk (and updated by this rank, before
    /// sharding); the output layer of several stages is a copy of the
    /// embedding.
    fn params(&self, pp: usize) -> u64 {
        let per_layer: u64 = self.layer_params().iter().sum();
        let mut n = per_layer * self.layers as u64;
        if self.first {
            n += self.v / self.t * self.h + self.s * self.h;
        }
        if self.last {
            n += 2 * self.h;
            if pp > 1 {
                n += self.v / self.t * self.h;
            }
        }
        n
    }
}

/// `"Input Dims"` and `"Input type"` args for shapes of BF16 tensors.
fn dims_args(dims: &[&[u64]]) -> OpArgs {
    OpArgs::Dims(InputShapes::new(dims))
}

/// One rank's Megatron iteration on top of the timeline engine.
pub(crate) struct Rank<'c> {
    pub g: Gen<'c>,
    /// Model chunks of this stage, and the one now running.
    chunks: Vec<Dims>,
    d: Dims,
    k: Names,
    stage: usize,
    training: Training,
    /// Gradients accumulated in the open data-parallel bucket.
    bucket_fill: u64,
    bucket_size: u64,
    /// Bucket sizes, for parameter all-gather and deferred reduction.
    buckets: Vec<u64>,
    /// End events of this iteration's gradient reductions.
    grad_events: Vec<Ev>,
    /// End events of the last optimizer step's parameter all-gathers,
    /// waited for by the next iteration's forward.
    param_events: Vec<Ev>,
    /// Reduce gradients as they become ready (last micro-batch of a
    /// chunk).
    reduce_grads: bool,
    /// The iteration's pipeline, see `step.rs`.
    pipe: step::Pipe,
    /// `(start, end)` of every `ProfilerStep` annotation so far.
    pub steps: Vec<(i64, i64)>,
}

impl<'c> Rank<'c> {
    pub(crate) fn new(cfg: &'c SynthConfig, rank: usize, emit: bool, noise: f64) -> Rank<'c> {
        let g = Gen::new(cfg, rank, emit, noise);
        let stage = g.coord.pp;
        let chunks: Vec<Dims> = (0..cfg.parallel.virtual_stages)
            .map(|c| Dims::new(cfg, stage, c))
            .collect();
        let d = chunks[0];
        Rank {
            k: Names::new(cfg.gpu.arch, d.head_dim),
            g,
            d,
            chunks,
            stage,
            training: cfg.training,
            bucket_fill: 0,
            // Megatron's default bucket: 40M elements, at least 1M per
            // data-parallel rank.
            bucket_size: 40_000_000u64.max(1_000_000 * cfg.parallel.dp as u64),
            buckets: Vec::new(),
            grad_events: Vec::new(),
            param_events: Vec::new(),
            reduce_grads: false,
            pipe: step::Pipe::default(),
            steps: Vec::new(),
        }
    }

    /// A copy that writes nothing (see [`Gen::probe`]).
    pub(crate) fn probe(&self) -> Rank<'c> {
        Rank {
            g: self.g.probe(),
            chunks: self.chunks.clone(),
            d: self.d,
            k: Names::new(self.g.cfg.gpu.arch, self.d.head_dim),
            stage: self.stage,
            training: self.training,
            bucket_fill: self.bucket_fill,
            bucket_size: self.bucket_size,
            buckets: self.buckets.clone(),
            grad_events: self.grad_events.clone(),
            param_events: self.param_events.clone(),
            reduce_grads: self.reduce_grads,
            pipe: self.pipe.clone(),
            steps: self.steps.clone(),
        }
    }

    /// Parameters this rank holds over all its chunks.
    fn local_params(&self) -> u64 {
        let pp = self.g.cfg.parallel.pp;
        self.chunks.iter().map(|d| d.params(pp)).sum()
    }

    fn args(&self, f: impl FnOnce() -> OpArgs) -> OpArgs {
        if self.g.emit {
            f()
        } else {
            OpArgs::None
        }
    }

    /// Launches a compute kernel.
    fn kernel(&mut self, name: &str, dur: i64, shape: Shape) {
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
        )
    }

    /// An element-wise kernel over `n` elements moving `bytes`.
    fn eltwise(&mut self, name: &str, n: u64, bytes: u64) {
        let dur = self.g.mem_ns(bytes);
        self.kernel(name, dur, Shape::elementwise(n))
    }

    /// An op holding one element-wise kernel.
    fn eltwise_op(&mut self, op: &str, kernel: &str, n: u64, bytes: u64) {
        self.g.begin(op, OpArgs::None, false);
        self.eltwise(kernel, n, bytes);
        self.g.end();
    }

    fn gemm_shape(m: u64, n: u64) -> Shape {
        let mut sh = SH_GEMM;
        sh.grid = [
            m.div_ceil(128).max(1) as u32,
            n.div_ceil(256).max(1) as u32,
            1,
        ];
        sh
    }

    fn precision(&self) -> Precision {
        self.training.precision
    }

    /// With FP8, Transformer Engine casts a GEMM input of `n` elements to
    /// FP8 (and its transpose, for the backward GEMMs): read two bytes,
    /// write two.
    fn fp8_cast(&mut self, n: u64) {
        if self.precision() == Precision::Fp8 {
            self.eltwise(K_FP8_CAST, n, n * 4);
        }
    }

    /// A GEMM kernel `[m, k] x [k, n]` on the compute stream.
    fn gemm_kernel(&mut self, name: &str, m: u64, n: u64, k: u64) {
        let dur = self.g.gemm_ns(m, n, k, 1, self.precision());
        self.kernel(name, dur, Self::gemm_shape(m, n));
    }

    /// `aten::matmul` of `[s, b, k] x [k, n]` via `aten::mm`.
    fn matmul(&mut self, k: u64, n: u64, name_of: fn(&Names) -> &String) {
        let (s, b, m) = (self.d.s, self.d.b, self.d.tokens);
        let a1 = self.args(|| dims_args(&[&[s, b, k], &[k, n]]));
        let a2 = self.args(|| dims_args(&[&[m, k], &[k, n]]));
        self.g.begin("aten::matmul", a1, false);
        self.g.begin("aten::mm", a2, false);
        self.fp8_cast(m * k);
        let name = name_of(&self.k).clone();
        self.gemm_kernel(&name, m, n, k);
        self.g.end();
        self.g.end();
    }

    /// Weight-gradient GEMM `[n, tokens] x [tokens, k]`, accumulated into
    /// the fp32 main gradient (Megatron's gradient-accumulation fusion).
    fn wgrad(&mut self, k: u64, n: u64) {
        let m = self.d.tokens;
        let a = self.args(|| dims_args(&[&[m, k], &[m, n], &[n, k]]));
        self.g.begin(
            "fused_weight_gradient_mlp_cuda::wgrad_gemm_accum_fp32",
            a,
            false,
        );
        let name = self.k.gemm_wgrad.clone();
        self.gemm_kernel(&name, n, k, m);
        self.g.end();
    }

    /// The dtype of tensor-parallel and pipeline messages.
    fn act_dtype(&self) -> Dtype {
        match self.precision() {
            Precision::Fp16 => Dtype::F16,
            _ => Dtype::Bf16,
        }
    }

    /// A tensor-parallel collective; `None` when there is no TP group.
    /// With `sync` the compute stream waits for it, unless its all-gather
    /// or reduce-scatter overlaps the GEMMs ([`Training::tp_comm_overlap`]).
    fn tp_coll(&mut self, kind: CollectiveKind, in_n: u64, out_n: u64, sync: bool) -> Option<Ev> {
        if self.d.t == 1 {
            return None;
        }
        let ev = self.g.collective(&Coll::new(
            kind,
            GroupKind::TensorParallel,
            TP,
            in_n,
            out_n,
            self.act_dtype(),
        ));
        let hidden = self.training.tp_comm_overlap && kind != CollectiveKind::AllReduce;
        if sync && !hidden {
            self.g.wait(COMPUTE, ev);
        }
        Some(ev)
    }

    fn autograd_begin(&mut self, node: &str) {
        if self.g.emit {
            let outer = format!("autograd::engine::evaluate_function: {node}");
            self.g.begin(&outer, OpArgs::None, false);
        } else {
            self.g.begin("", OpArgs::None, false);
        }
        self.g.begin(node, OpArgs::None, false);
    }

    fn autograd_end(&mut self) {
        self.g.end();
        self.g.end();
    }
}
