//! A Megatron-LM GPT training iteration on one rank, written through the
//! [`Gen`] timeline engine: data loading, embedding, transformer layers
//! with tensor parallelism (and sequence parallelism), the output layer and
//! vocabulary-parallel cross entropy, the 1F1B pipeline with send/recv,
//! backward on the autograd thread with bucketed data-parallel gradient
//! reduction, and the optimizer step.

use lumos_models::{one_f_one_b, CollectiveKind, Pass};

use crate::config::{GroupKind, RankCoord, SynthConfig};
use crate::gen::{
    Coll, Dtype, Ev, Gen, Gpu, GpuKind, InputShapes, OpArgs, P2p, Shape, Thread, COMPUTE, DP, MP,
    PP_NEXT, PP_PREV, TP,
};
use crate::schedule::{block_times, BlockTimes};

/// Elements one multi-tensor-apply launch covers (apex: 320 blocks of
/// 65536 elements for four tensor lists).
const MTA_CHUNK: u64 = 320 * 65_536;

/// Sizes of the model as this rank holds it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dims {
    s: u64,
    b: u64,
    h: u64,
    f: u64,
    v: u64,
    t: u64,
    /// Attention heads on this rank.
    heads: u64,
    head_dim: u64,
    sp: bool,
    /// Tokens of a micro-batch.
    tokens: u64,
    /// Tokens in the sequence-parallel region (tokens / tp with SP).
    local: u64,
    /// Sequence length in that region.
    s_local: u64,
    layers: usize,
    first: bool,
    last: bool,
}

impl Dims {
    fn new(cfg: &SynthConfig, stage: usize) -> Dims {
        let (m, p) = (&cfg.model, &cfg.parallel);
        let t = p.tp as u64;
        let sp = p.sp();
        let (s, b) = (m.seq_len as u64, m.micro_batch as u64);
        let s_local = if sp { s / t } else { s };
        Dims {
            s,
            b,
            h: m.hidden as u64,
            f: m.ffn_hidden as u64,
            v: m.vocab as u64,
            t,
            heads: (m.heads / p.tp) as u64,
            head_dim: (m.hidden / m.heads) as u64,
            sp,
            tokens: s * b,
            local: s_local * b,
            s_local,
            layers: cfg.stage_layers(stage),
            first: stage == 0,
            last: stage + 1 == p.pp,
        }
    }

    /// Parameters of one layer on this rank, in the order backward
    /// produces their gradients: fc2, fc1, ln2, proj, qkv, ln1.
    fn layer_params(&self) -> [u64; 6] {
        let (h, f, t) = (self.h, self.f, self.t);
        [f / t * h, h * f / t, 2 * h, h / t * h, h * 3 * h / t, 2 * h]
    }

    /// Parameters this rank holds (and updates, before sharding).
    fn local_params(&self, pp: usize) -> u64 {
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

/// Kernel names of this GPU generation.
struct Names {
    gemm_fwd: String,
    gemm_dgrad: String,
    gemm_wgrad: String,
    flash_fwd: String,
    flash_bwd_dot: String,
    flash_bwd: String,
    flash_bwd_dq: String,
}

impl Names {
    fn new(arch: &str, head_dim: u64) -> Names {
        let gemm = |layout: &str| {
            match arch {
            "sm80" => format!("ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_{layout}"),
            "sm100" => format!(
                "nvjet_tst_256x128_64x4_2x1_v_bz_coopB_{}T",
                layout.to_ascii_uppercase()
            ),
            _ => format!(
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_{layout}_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
            ),
        }
        };
        let d = head_dim;
        Names {
            gemm_fwd: gemm("tn"),
            gemm_dgrad: gemm("nn"),
            gemm_wgrad: gemm("nt"),
            flash_fwd: format!(
                "void flash_fwd_kernel<Flash_fwd_kernel_traits<{d}, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<{d}, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)"
            ),
            flash_bwd_dot: format!(
                "void flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<{d}, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<{d}, 64, 128, 8, cutlass::bfloat16_t> > >(Flash_bwd_params)"
            ),
            flash_bwd: format!(
                "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<{d}, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<{d}, 64, 128, 8, cutlass::bfloat16_t> >, true, true, false, false, false, true, false, false>(Flash_bwd_params)"
            ),
            flash_bwd_dq: format!(
                "void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<{d}, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<{d}, 64, 128, 8, cutlass::bfloat16_t> > >(Flash_bwd_params, int)"
            ),
        }
    }
}

const K_LN_FWD: &str = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)";
const K_LN_BWD_INPUT: &str = "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)";
const K_LN_BWD_GAMMA: &str = "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)";
const K_DROPOUT: &str = "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)";
const K_DROPOUT_BWD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1}, at::detail::Array<char*, 3>)";
const K_ADD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)";
const K_ADD_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)";
const K_MUL_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)";
const K_GELU: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)";
const K_GELU_BWD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)";
const K_FILL_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)";
const K_INDEX_SELECT: &str = "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)";
const K_MASK: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1}, at::detail::Array<char*, 3>)";
const K_EMB_BWD_SORT: &str = "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<long, long, int>::Policy800, false, long, long, int, int>(int*, int*, long*, long const*, long*, long const*, long*, long const*, int, int, int)";
const K_EMB_BWD_GRAD: &str = "void at::native::(anonymous namespace)::compute_grad_weight<c10::BFloat16, float, long>(long const*, c10::BFloat16 const*, long const*, long, long, long const*, long const*, at::AccumulateType<c10::BFloat16, true>::type*, long)";
const K_EMB_BWD_SUM: &str = "void at::native::(anonymous namespace)::sum_and_scatter<c10::BFloat16, float, long>(long const*, c10::BFloat16*, long, long const*, long const*, at::AccumulateType<c10::BFloat16, true>::type const*, long const*, long, long)";
const K_TO_F32: &str = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)";
const K_REDUCE_MAX: &str = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MaxOps<float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MaxOps<float>, unsigned int, float, 4>)";
const K_REDUCE_SUM: &str = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)";
const K_SUB_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, at::detail::Array<char*, 2> >(int, at::native::CUDAFunctorOnSelf_add<float>, at::detail::Array<char*, 2>)";
const K_EXP_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)";
const K_LOG_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::log_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::log_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)";
const K_L2NORM: &str = "void multi_tensor_apply_kernel<TensorListMetadata<1>, L2NormFunctor<float, 512, 512>, float*, float*, bool, int>(long, int volatile*, TensorListMetadata<1>&, L2NormFunctor<float, 512, 512>, float*, float*, bool, int)";
const K_L2NORM_CLEANUP: &str =
    "void cleanup<float, 512, 512>(float*, float*, float*, float*, bool, int)";
const K_SCALE: &str = "void multi_tensor_apply_kernel<TensorListMetadata<2>, ScaleFunctor<float, float>, float>(long, int volatile*, TensorListMetadata<2>&, ScaleFunctor<float, float>, float)";
const K_ADAM: &str = "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float, float, float>, float, float, float, float, float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>&, AdamFunctor<float, float, float>, float, float, float, float, float, float, adamMode_t, float)";
const K_COPY_BF16: &str = "void multi_tensor_apply_kernel<TensorListMetadata<2>, ScaleFunctor<float, c10::BFloat16>, float>(long, int volatile*, TensorListMetadata<2>&, ScaleFunctor<float, c10::BFloat16>, float)";

const SH_GEMM: Shape = Shape::new([0, 0, 0], [384, 1, 1], 168, 213_248);
const SH_LN: Shape = Shape::new([0, 1, 1], [128, 1, 1], 34, 0);
const SH_MTA: Shape = Shape::new([320, 1, 1], [512, 1, 1], 64, 0);
const SH_SMALL: Shape = Shape::new([1, 1, 1], [128, 1, 1], 16, 0);

/// `"Input Dims"` and `"Input type"` args for shapes of BF16 tensors.
fn dims_args(dims: &[&[u64]]) -> OpArgs {
    OpArgs::Dims(InputShapes::new(dims))
}

/// One rank's Megatron iteration on top of the timeline engine.
pub(crate) struct Rank<'c> {
    pub g: Gen<'c>,
    d: Dims,
    k: Names,
    stage: usize,
    /// Block timing of the whole pipeline (absent while calibrating).
    plan: Option<&'c Plan>,
    /// GPU time the current iteration's pipeline started at on this rank.
    origin: i64,
    /// Write and time pipeline send/recv (off while calibrating).
    p2p: bool,
    /// Gradients accumulated in the open data-parallel bucket.
    bucket_fill: u64,
    bucket_size: u64,
    /// Bucket sizes, for parameter all-gather.
    buckets: Vec<u64>,
    /// End events of this iteration's gradient reductions.
    grad_events: Vec<Ev>,
    /// End events of the last optimizer step's parameter all-gathers,
    /// waited for by the next iteration's forward.
    param_events: Vec<Ev>,
    /// Reduce gradients as they become ready (last micro-batch only).
    reduce_grads: bool,
}

impl<'c> Rank<'c> {
    pub(crate) fn new(
        cfg: &'c SynthConfig,
        rank: usize,
        emit: bool,
        noise: f64,
        plan: Option<&'c Plan>,
    ) -> Rank<'c> {
        let g = Gen::new(cfg, rank, emit, noise);
        let stage = g.coord.pp;
        let d = Dims::new(cfg, stage);
        Rank {
            k: Names::new(cfg.gpu.arch, d.head_dim),
            g,
            d,
            stage,
            plan,
            origin: 0,
            p2p: plan.is_some(),
            bucket_fill: 0,
            // Megatron's default bucket: 40M elements, at least 1M per
            // data-parallel rank.
            bucket_size: 40_000_000u64.max(1_000_000 * cfg.parallel.dp as u64),
            buckets: Vec::new(),
            grad_events: Vec::new(),
            param_events: Vec::new(),
            reduce_grads: false,
        }
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

    /// `aten::matmul` of `[s, b, k] x [k, n]` via `aten::mm`.
    fn matmul(&mut self, k: u64, n: u64, name_of: fn(&Names) -> &String) {
        let (s, b, m) = (self.d.s, self.d.b, self.d.tokens);
        let a1 = self.args(|| dims_args(&[&[s, b, k], &[k, n]]));
        let a2 = self.args(|| dims_args(&[&[m, k], &[k, n]]));
        let dur = self.g.gemm_ns(m, n, k);
        self.g.begin("aten::matmul", a1, false);
        self.g.begin("aten::mm", a2, false);
        let name = name_of(&self.k);
        self.g.launch(
            COMPUTE,
            &Gpu {
                name,
                dur,
                kind: GpuKind::Kernel,
                shape: Self::gemm_shape(m, n),
                coll: None,
                peer_ready: 0,
            },
        );
        self.g.end();
        self.g.end();
    }

    /// Weight-gradient GEMM `[n, tokens] x [tokens, k]`, accumulated into
    /// the fp32 main gradient (Megatron's gradient-accumulation fusion).
    fn wgrad(&mut self, k: u64, n: u64) {
        let m = self.d.tokens;
        let a = self.args(|| dims_args(&[&[m, k], &[m, n], &[n, k]]));
        let dur = self.g.gemm_ns(n, k, m);
        self.g.begin(
            "fused_weight_gradient_mlp_cuda::wgrad_gemm_accum_fp32",
            a,
            false,
        );
        let name = &self.k.gemm_wgrad;
        self.g.launch(
            COMPUTE,
            &Gpu {
                name,
                dur,
                kind: GpuKind::Kernel,
                shape: Self::gemm_shape(n, k),
                coll: None,
                peer_ready: 0,
            },
        );
        self.g.end();
    }

    /// A tensor-parallel collective; `None` when there is no TP group.
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
            Dtype::Bf16,
        ));
        if sync {
            self.g.wait(COMPUTE, ev);
        }
        Some(ev)
    }

    fn autograd_begin(&mut self, node: &str) {
        self.g.begin(
            &format!("autograd::engine::evaluate_function: {node}"),
            OpArgs::None,
            false,
        );
        self.g.begin(node, OpArgs::None, false);
    }

    fn autograd_end(&mut self) {
        self.g.end();
        self.g.end();
    }

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

    fn attention_fwd(&mut self) {
        let d = self.d;
        self.g.cpu_only("aten::split_with_sizes", 6_000);
        self.g.cpu_only("aten::view", 3_000);
        self.g.cpu_only("aten::transpose", 3_000);
        let a = self.args(|| {
            let q = [d.b, d.s, d.heads, d.head_dim];
            dims_args(&[&q, &q, &q])
        });
        // Causal: half of the 4 s^2 d FLOPs per head.
        let flops = 2.0 * (d.b * d.s * d.s * d.heads * d.head_dim) as f64;
        let dur = self.g.attn_ns(flops);
        self.g.begin("FlashAttnFunc", OpArgs::None, false);
        self.g.begin("flash_attn::_flash_attn_forward", a, false);
        let grid = [(d.s / 128).max(1) as u32, d.b as u32, d.heads as u32];
        let name = &self.k.flash_fwd;
        self.g.launch(
            COMPUTE,
            &Gpu {
                name,
                dur,
                kind: GpuKind::Kernel,
                shape: Shape::new(grid, [128, 1, 1], 255, 49_152),
                coll: None,
                peer_ready: 0,
            },
        );
        self.g.end();
        self.g.end();
        self.g.cpu_only("aten::view", 3_000);
    }

    /// Dropout, then the residual add, on the sequence-parallel region.
    fn dropout_add_fwd(&mut self) {
        let n = self.d.local * self.d.h;
        self.g.begin("aten::dropout", OpArgs::None, false);
        self.eltwise_op("aten::native_dropout", K_DROPOUT, n, n * 5);
        self.g.end();
        self.eltwise_op("aten::add", K_ADD, n, n * 6);
    }

    fn layer_fwd(&mut self) {
        let (h, f, t) = (self.d.h, self.d.f, self.d.t);
        self.g.python_gap();
        self.layer_norm_fwd();
        self.g.python_gap();
        self.column_fwd(h, 3 * h / t);
        self.attention_fwd();
        self.row_fwd(h / t, h);
        self.dropout_add_fwd();
        self.g.python_gap();
        self.layer_norm_fwd();
        self.g.python_gap();
        self.column_fwd(h, f / t);
        let n = self.d.tokens * f / t;
        self.eltwise_op("aten::gelu", K_GELU, n, n * 4);
        self.row_fwd(f / t, h);
        self.dropout_add_fwd();
    }

    /// Host-to-device copy of an input tensor (pinned memory).
    fn h2d(&mut self, bytes: u64) {
        let dur = self.g.gpu.around(self.g.pcie.time_ns(bytes as f64), 0.05);
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

    /// Forward of one micro-batch through this stage, without send/recv.
    pub(crate) fn forward_step(&mut self) {
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

    /// Scales the bucket by 1/dp and launches its asynchronous reduction
    /// on the data-parallel stream.
    fn start_bucket(&mut self) {
        let n = std::mem::take(&mut self.bucket_fill);
        if n == 0 {
            return;
        }
        self.buckets.push(n);
        let dp = self.g.cfg.parallel.dp as u64;
        self.g.python_gap();
        self.eltwise_op("aten::mul_", K_MUL_F32, n, n * 8);
        let c = if self.g.cfg.parallel.distributed_optimizer {
            Coll::new(
                CollectiveKind::ReduceScatter,
                GroupKind::DataParallel,
                DP,
                n,
                n / dp,
                Dtype::F32,
            )
        } else {
            Coll::new(
                CollectiveKind::AllReduce,
                GroupKind::DataParallel,
                DP,
                n,
                n,
                Dtype::F32,
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
            Shape::new([(h / 32) as u32, 1, 1], [32, 32, 1], 64, 8_192),
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
        self.matmul(n, k, |n| &n.gemm_dgrad);
        if let Some(ev) = gathered {
            self.g.wait(COMPUTE, ev);
        }
        let reduced = if self.d.sp {
            self.tp_coll(CollectiveKind::ReduceScatter, t * k, l * k, false)
        } else {
            self.tp_coll(CollectiveKind::AllReduce, t * k, t * k, false)
        };
        self.wgrad(k, n);
        if let Some(ev) = reduced {
            self.g.wait(COMPUTE, ev);
        }
        self.autograd_end();
        if owns_weight {
            self.grad_ready(k * n);
        }
    }

    fn attention_bwd(&mut self) {
        let d = self.d;
        self.autograd_begin("FlashAttnFuncBackward");
        self.g
            .begin("flash_attn::_flash_attn_backward", OpArgs::None, false);
        let qkv = d.tokens * d.heads * d.head_dim;
        let d1 = self.g.mem_ns(qkv * 4 + d.tokens * d.heads * 4);
        let grid = [(d.s / 128).max(1) as u32, d.b as u32, d.heads as u32];
        let flops = 2.5 * 2.0 * (d.b * d.s * d.s * d.heads * d.head_dim) as f64;
        let d2 = self.g.attn_ns(flops);
        let d3 = self.g.mem_ns(qkv * 6);
        let names = [
            &self.k.flash_bwd_dot,
            &self.k.flash_bwd,
            &self.k.flash_bwd_dq,
        ];
        for (name, (dur, smem)) in names.into_iter().zip([(d1, 0), (d2, 98_304), (d3, 0)]) {
            self.g.launch(
                COMPUTE,
                &Gpu {
                    name,
                    dur,
                    kind: GpuKind::Kernel,
                    shape: Shape::new(grid, [256, 1, 1], 255, smem),
                    coll: None,
                    peer_ready: 0,
                },
            );
        }
        self.g.end();
        self.autograd_end();
        self.g.cpu_only("aten::view", 3_000);
    }

    /// The autograd engine sums the two gradients of a residual branch.
    fn residual_grad(&mut self) {
        let n = self.d.local * self.d.h;
        self.eltwise_op("aten::add", K_ADD, n, n * 6);
    }

    fn layer_bwd(&mut self) {
        let (h, f, t) = (self.d.h, self.d.f, self.d.t);
        self.dropout_add_bwd();
        self.row_bwd(f / t, h);
        self.autograd_begin("GeluBackward0");
        let n = self.d.tokens * f / t;
        self.eltwise_op("aten::gelu_backward", K_GELU_BWD, n, n * 6);
        self.autograd_end();
        self.column_bwd(h, f / t, true);
        self.layer_norm_bwd();
        self.residual_grad();
        self.dropout_add_bwd();
        self.row_bwd(h / t, h);
        self.attention_bwd();
        self.column_bwd(h, 3 * h / t, true);
        self.layer_norm_bwd();
        self.residual_grad();
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
        self.autograd_begin("ToCopyBackward0");
        self.eltwise_op("aten::to", K_TO_F32, logits, logits * 6);
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

    /// Backward of one micro-batch through this stage, on the autograd
    /// thread, without send/recv.
    pub(crate) fn backward_step(&mut self, reduce_grads: bool) {
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

    // ---- pipeline --------------------------------------------------------

    fn peer(&self, delta: isize) -> usize {
        let c = self.g.coord;
        let pp = (c.pp as isize + delta) as usize;
        self.g.cfg.parallel.rank_of(RankCoord { pp, ..c })
    }

    /// Elements of one activation (or its gradient) between stages.
    fn act_nelems(&self) -> u64 {
        self.d.local * self.d.h
    }

    fn p2p(&mut self, next: bool, send: bool, peer_ready: i64) {
        let peer = self.peer(if next { 1 } else { -1 });
        let n = self.act_nelems();
        let stream = if next { PP_NEXT } else { PP_PREV };
        let mut c = Coll::new(
            CollectiveKind::SendRecv,
            GroupKind::PipelineParallel,
            stream,
            n,
            n,
            Dtype::Bf16,
        );
        c.p2p = Some(P2p { peer, send, next });
        c.peer_ready = peer_ready;
        c.channels = 2;
        let ev = self.g.collective(&c);
        // Megatron waits on every request of the exchange.
        self.g.wait(COMPUTE, ev);
    }

    fn forward_pass(&mut self, k: usize) {
        self.g.gap(30_000, 90_000);
        if !self.d.first && self.p2p {
            let ready = self
                .plan
                .map_or(0, |p| self.origin + p.blocks.fwd_end[self.stage - 1][k]);
            self.p2p(false, false, ready);
        }
        self.forward_step();
        if !self.d.last && self.p2p {
            self.p2p(true, true, 0);
        }
    }

    fn backward_pass(&mut self, k: usize, reduce_grads: bool) {
        self.g.gap(30_000, 90_000);
        if !self.d.last && self.p2p {
            let ready = self
                .plan
                .map_or(0, |p| self.origin + p.blocks.bwd_end[self.stage + 1][k]);
            self.p2p(true, false, ready);
        }
        self.backward_step(reduce_grads);
        if !self.d.first && self.p2p {
            self.p2p(false, true, 0);
        }
    }

    // ---- iteration -------------------------------------------------------

    fn zero_grad(&mut self) {
        let n = self.d.local_params(self.g.cfg.parallel.pp);
        self.g.python_gap();
        self.g.begin("aten::zero_", OpArgs::None, false);
        self.eltwise_op("aten::fill_", K_FILL_F32, n, n * 4);
        self.g.end();
    }

    /// Megatron's `finish_grad_sync`: the compute stream waits for every
    /// bucket's reduction.
    fn finish_grad_sync(&mut self) {
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

    fn optimizer_step(&mut self) {
        let p = self.g.cfg.parallel;
        let local = self.d.local_params(p.pp);
        let shard = if p.distributed_optimizer {
            local.div_ceil(p.dp as u64)
        } else {
            local
        };
        self.g.python_gap();
        // Gradient norm for clipping: local squares, a model-parallel
        // all-reduce (which waits for the slowest stage), and `.item()`.
        self.multi_tensor(K_L2NORM, shard, 4);
        self.kernel(K_L2NORM_CLEANUP, 4_000, SH_SMALL);
        self.eltwise_op("aten::pow", K_MUL_F32, 1, 8);
        if self.g.group_size(GroupKind::ModelParallel) > 1 {
            let mut c = Coll::new(
                CollectiveKind::AllReduce,
                GroupKind::ModelParallel,
                MP,
                1,
                1,
                Dtype::F32,
            );
            if p.pp > 1 {
                c.peer_ready = self.plan.map_or(0, |pl| self.origin + pl.barrier);
            }
            let ev = self.g.collective(&c);
            self.g.wait(COMPUTE, ev);
        }
        self.eltwise_op("aten::pow", K_MUL_F32, 1, 8);
        self.g.begin("aten::item", OpArgs::None, false);
        self.g
            .begin("aten::_local_scalar_dense", OpArgs::None, false);
        self.g.launch(
            COMPUTE,
            &Gpu {
                name: "Memcpy DtoH (Device -> Pageable)",
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
        self.multi_tensor(K_SCALE, shard, 8);
        self.g
            .begin("Optimizer.step#FusedAdam.step", OpArgs::None, true);
        self.multi_tensor(K_ADAM, shard, 28);
        self.g.end();
        self.g.python_gap();
        self.multi_tensor(K_COPY_BF16, shard, 6);
        if p.distributed_optimizer && p.dp > 1 {
            // Updated parameter shards are all-gathered bucket by bucket,
            // asynchronously (Megatron's overlap_param_gather); the next
            // iteration's forward pre-hooks wait for them.
            let buckets = std::mem::take(&mut self.buckets);
            let dp = p.dp as u64;
            for n in buckets {
                let c = Coll::new(
                    CollectiveKind::AllGather,
                    GroupKind::DataParallel,
                    DP,
                    n / dp,
                    n,
                    Dtype::Bf16,
                );
                let ev = self.g.collective(&Coll { channels: 32, ..c });
                self.param_events.push(ev);
            }
        }
        self.buckets.clear();
    }

    /// One training iteration inside its `ProfilerStep#n` annotation.
    pub(crate) fn iteration(&mut self, n: usize) {
        self.g
            .begin(&format!("ProfilerStep#{n}"), OpArgs::None, true);
        self.zero_grad();
        for ev in std::mem::take(&mut self.param_events) {
            self.g.wait(COMPUTE, ev);
        }
        let p = self.g.cfg.parallel;
        // The pipeline of this iteration starts when this rank's GPU is
        // free and its CPU is here; every stage gets here at about the same
        // time, since the previous iteration ended in a barrier.
        self.origin = self.g.t.max(self.g.stream_free(COMPUTE));
        let passes = one_f_one_b(self.stage, p.pp, p.microbatches);
        let last = passes.len() - 1;
        for (i, pass) in passes.into_iter().enumerate() {
            match pass {
                Pass::Forward(k) => self.forward_pass(k),
                Pass::Backward(k) => self.backward_pass(k, i == last),
            }
        }
        self.g.python_gap();
        self.finish_grad_sync();
        self.optimizer_step();
        self.g.python_gap();
        self.g.device_sync();
        self.g.end();
        // Logging, timers and the profiler's own step bookkeeping.
        self.g.gap(300_000, 900_000);
    }
}

/// Block-level timing of the whole pipeline, shared by every rank of a job.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub blocks: BlockTimes,
    /// When the slowest stage reaches the gradient-norm all-reduce,
    /// relative to the pipeline start.
    pub barrier: i64,
}

impl Plan {
    /// Calibrates one forward and one backward pass per stage (noise off,
    /// timing only) and times the 1F1B schedule over all stages with them.
    pub(crate) fn new(cfg: &SynthConfig) -> Plan {
        let p = cfg.parallel;
        if p.pp == 1 {
            return Plan::default();
        }
        let mut fwd = Vec::with_capacity(p.pp);
        let mut bwd = Vec::with_capacity(p.pp);
        let mut tail = Vec::with_capacity(p.pp);
        let mut act_xfer = 0;
        for s in 0..p.pp {
            let rank = p.rank_of(RankCoord {
                tp: 0,
                dp: 0,
                pp: s,
            });
            let mut r = Rank::new(cfg, rank, false, 0.0, None);
            r.g.t = 1_000_000;
            let t0 = r.g.t;
            r.forward_step();
            let f = r.g.stream_free(COMPUTE).max(r.g.t) - t0;
            r.g.t = r.g.t.max(r.g.gpu_free());
            let t1 = r.g.t;
            r.backward_step(false);
            let b = r.g.stream_free(COMPUTE).max(r.g.t) - t1;
            fwd.push(f);
            bwd.push(b);
            // Data-parallel reduction still running after the last
            // backward: what does not fit under it, or at least the last
            // bucket.
            let net = &cfg.gpu.network;
            let dp_ranks = &r.g.group_ranks[1];
            let kind = if p.distributed_optimizer {
                CollectiveKind::ReduceScatter
            } else {
                CollectiveKind::AllReduce
            };
            let total = r.d.local_params(p.pp);
            let bucket = r.bucket_size.min(total);
            let per = |n: u64| net.collective_time_ns(kind, n * 4, dp_ranks) as i64;
            let all = per(bucket) * (total / bucket.max(1)) as i64 + per(total % bucket.max(1));
            tail.push((all - b).max(per(bucket)));
            if s + 1 < p.pp {
                let ranks = [
                    rank,
                    p.rank_of(RankCoord {
                        tp: 0,
                        dp: 0,
                        pp: s + 1,
                    }),
                ];
                let bytes = r.act_nelems() * 2;
                act_xfer =
                    act_xfer.max(
                        net.collective_time_ns(CollectiveKind::SendRecv, bytes, &ranks) as i64,
                    );
            }
        }
        let blocks = block_times(&fwd, &bwd, act_xfer, act_xfer, p.microbatches);
        let barrier = (0..p.pp)
            .map(|s| blocks.bwd_end[s][p.microbatches - 1] + tail[s])
            .max()
            .unwrap_or(0);
        Plan { blocks, barrier }
    }
}
