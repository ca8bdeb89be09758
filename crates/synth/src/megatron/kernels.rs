//! Kernel names and launch shapes, as real traces of each GPU generation
//! show them.

use crate::gen::Shape;

/// Kernel names of this GPU generation.
pub(crate) struct Names {
    pub gemm_fwd: String,
    pub gemm_dgrad: String,
    pub gemm_wgrad: String,
    pub flash_fwd: String,
    pub flash_bwd_dot: String,
    pub flash_bwd: String,
    pub flash_bwd_dq: String,
}

impl Names {
    pub(crate) fn new(arch: &str, head_dim: u64) -> Names {
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

pub(crate) const K_LN_FWD: &str = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)";
pub(crate) const K_LN_BWD_INPUT: &str = "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)";
pub(crate) const K_LN_BWD_GAMMA: &str = "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)";
pub(crate) const K_DROPOUT: &str = "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)";
pub(crate) const K_DROPOUT_BWD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1}, at::detail::Array<char*, 3>)";
pub(crate) const K_ADD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)";
pub(crate) const K_ADD_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)";
pub(crate) const K_MUL_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)";
pub(crate) const K_GELU: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)";
pub(crate) const K_GELU_BWD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)";
pub(crate) const K_FILL_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)";
pub(crate) const K_INDEX_SELECT: &str = "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)";
pub(crate) const K_MASK: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1}, at::detail::Array<char*, 3>)";
pub(crate) const K_EMB_BWD_SORT: &str = "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<long, long, int>::Policy800, false, long, long, int, int>(int*, int*, long*, long const*, long*, long const*, long*, long const*, int, int, int)";
pub(crate) const K_EMB_BWD_GRAD: &str = "void at::native::(anonymous namespace)::compute_grad_weight<c10::BFloat16, float, long>(long const*, c10::BFloat16 const*, long const*, long, long, long const*, long const*, at::AccumulateType<c10::BFloat16, true>::type*, long)";
pub(crate) const K_EMB_BWD_SUM: &str = "void at::native::(anonymous namespace)::sum_and_scatter<c10::BFloat16, float, long>(long const*, c10::BFloat16*, long, long const*, long const*, at::AccumulateType<c10::BFloat16, true>::type const*, long const*, long, long)";
pub(crate) const K_TO_F32: &str = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)";
pub(crate) const K_REDUCE_MAX: &str = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MaxOps<float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MaxOps<float>, unsigned int, float, 4>)";
pub(crate) const K_REDUCE_SUM: &str = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)";
pub(crate) const K_SUB_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, at::detail::Array<char*, 2> >(int, at::native::CUDAFunctorOnSelf_add<float>, at::detail::Array<char*, 2>)";
pub(crate) const K_EXP_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)";
pub(crate) const K_LOG_F32: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::log_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::log_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)";
pub(crate) const K_L2NORM: &str = "void multi_tensor_apply_kernel<TensorListMetadata<1>, L2NormFunctor<float, 512, 512>, float*, float*, bool, int>(long, int volatile*, TensorListMetadata<1>&, L2NormFunctor<float, 512, 512>, float*, float*, bool, int)";
pub(crate) const K_L2NORM_CLEANUP: &str =
    "void cleanup<float, 512, 512>(float*, float*, float*, float*, bool, int)";
pub(crate) const K_SCALE: &str = "void multi_tensor_apply_kernel<TensorListMetadata<2>, ScaleFunctor<float, float>, float>(long, int volatile*, TensorListMetadata<2>&, ScaleFunctor<float, float>, float)";
pub(crate) const K_ADAM: &str = "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float, float, float>, float, float, float, float, float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>&, AdamFunctor<float, float, float>, float, float, float, float, float, float, adamMode_t, float)";
pub(crate) const K_COPY_BF16: &str = "void multi_tensor_apply_kernel<TensorListMetadata<2>, ScaleFunctor<float, c10::BFloat16>, float>(long, int volatile*, TensorListMetadata<2>&, ScaleFunctor<float, c10::BFloat16>, float)";

pub(crate) const SH_GEMM: Shape = Shape::new([0, 0, 0], [384, 1, 1], 168, 213_248);
pub(crate) const SH_LN: Shape = Shape::new([0, 1, 1], [128, 1, 1], 34, 0);
pub(crate) const SH_MTA: Shape = Shape::new([320, 1, 1], [512, 1, 1], 64, 0);
pub(crate) const SH_SMALL: Shape = Shape::new([1, 1, 1], [128, 1, 1], 16, 0);

pub(crate) const K_SOFTMAX_FWD: &str = "void (anonymous namespace)::scaled_upper_triang_masked_softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 11>(c10::BFloat16*, c10::BFloat16 const*, float, int, int, int)";
pub(crate) const K_SOFTMAX_BWD: &str = "void (anonymous namespace)::scaled_upper_triang_masked_softmax_warp_backward<c10::BFloat16, c10::BFloat16, float, 11>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int, int)";
pub(crate) const K_SILU: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)";
pub(crate) const K_SILU_BWD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)";
pub(crate) const K_MUL: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)";
pub(crate) const K_FP8_CAST: &str = "void transformer_engine::detail::cast_transpose_kernel<8, true, __nv_bfloat16, __nv_fp8_e4m3, float>(__nv_bfloat16 const*, float const*, __nv_fp8_e4m3*, __nv_fp8_e4m3*, float const*, float*, float*, unsigned long, unsigned long)";
