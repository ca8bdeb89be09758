"""A generated stand-in for the traces of `shared/tools/record_gpt_traces.py`.

That script records a plain PyTorch GPT trained as a one-rank DDP job over
NCCL on a CUDA GPU (autocast bf16, SDPA flash attention, fused AdamW,
`.item()` each step, `record_shapes`, `cuda_sync` events, profiler schedule
wait=1 warmup=1 active=3). Without a GPU we cannot record it, so
`write_trace` writes the gzipped Kineto JSON that torch 2.5-2.7's
`export_chrome_trace` would write for it, operator by operator, with a
deterministic timing model: the CPU side has fixed overheads, every kernel
starts no earlier than 5 us after its launch and after the previous work on
its stream, event waits hold a stream until the recorded work is done, and
`.item()`'s `cudaStreamSynchronize` lasts until the GPU is idle. Durations
are roofline estimates (GEMMs at 70% of the bf16 peak, flash attention at
50%, memory-bound kernels at 75% of the memory bandwidth plus 2 us).

It is a stand-in, not ground truth: real H200 timings differ (fixed launch
costs, cuBLAS tile choices, clocks). What it gets right is the shape of the
trace (names, nesting, threads, streams, arguments, flows, syncs), and its
times follow from its own model, so lumos's replay of it should reproduce
its step time and a what-if prediction can be compared with the generated
trace of the target configuration.

Standard library only: `python3 record_gpt_like.py OUT.json.gz [--layers N
--hidden H --heads A --batch B --microbatches M --nccl-kernels]`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
from collections import deque
from contextlib import contextmanager
from typing import Dict, List, Tuple

PID = 2417  # the recording process
MAIN = 2417  # its main thread
AUTOGRAD = 2618  # pt_autograd_0, the CUDA device thread of the autograd engine
COMPUTE = 7  # the default stream
NCCL = 20  # ProcessGroupNCCL's stream
QUEUE = 1024  # launches CUDA queues per stream before a launch call blocks
T0 = 4_812_345_678.125  # us; where the trace's clock starts (arbitrary)

GPUS = {
    # name, SMs, memory bytes, bf16 dense peak (flop/us), memory bandwidth (bytes/us)
    "h200": ("NVIDIA H200", 132, 150754820096, 989e6, 4.8e6),
    "h100": ("NVIDIA H100 80GB HBM3", 132, 85018279936, 989e6, 3.35e6),
}

# cbid of the CUDA runtime/driver callbacks, as CUPTI numbers them
CBID = {
    "cudaLaunchKernel": 211,
    "cuLaunchKernelEx": 652,
    "cudaMemcpyAsync": 41,
    "cudaStreamSynchronize": 131,
    "cudaEventRecord": 135,
    "cudaStreamWaitEvent": 147,
    "cudaStreamIsCapturing": 317,
    "cudaStreamGetCaptureInfo_v2": 409,
    "cudaLaunchKernelExC": 430,
}

F32 = "float"
BF16 = "c10::BFloat16"
I64 = "long int"


def _contig(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return list(reversed(strides))


def T(shape, dtype=F32, strides=None):
    """A tensor input: (dims, type, strides, concrete)."""
    return (list(shape), dtype, list(strides) if strides is not None else _contig(shape), "")


def S(value, kind="Scalar"):
    """A scalar input, recorded by value (a double as C++ prints it, 17 digits)."""
    return ([], kind, [], "%.17g" % value if isinstance(value, float) else str(value))


N = ([], "", [], "")  # an absent optional input


def TL(shapes):
    """A tensor list input."""
    return ([list(s) for s in shapes], "TensorList", [_contig(s) for s in shapes], "")


def _r(x: float) -> float:
    return round(x, 3)


class _Gen:
    """Emits the events, keeping a clock per CPU thread and per stream."""

    def __init__(self, gpu: str, nccl_kernels: bool):
        self.gpu = GPUS[gpu]
        self.nccl_kernels = nccl_kernels
        self.events: List[dict] = []
        self.gpu_events: List[dict] = []
        self.ext = 0
        self.corr = 0
        self.ev_idx = 0
        self.seq = 0
        self.cuda_event = 0
        self.clock = {MAIN: T0 + 200.0, AUTOGRAD: T0 + 200.0}
        self.stream = {COMPUTE: T0, NCCL: T0}
        self.stack: Dict[int, List[dict]] = {MAIN: [], AUTOGRAD: []}
        self.recorded: Dict[int, Tuple[float, int, int]] = {}
        self.queued = {COMPUTE: deque(), NCCL: deque()}  # start times of the launches not yet started

    # -- timing model -------------------------------------------------
    def gemm_us(self, m, n, k):
        return 2.0 * m * n * k / (0.7 * self.gpu[3]) + 3.0

    def mem_us(self, nbytes):
        return nbytes / (0.75 * self.gpu[4]) + 2.0

    def flash_us(self, b, heads, s, d, backward=False):
        flops = 4.0 * b * heads * s * s * d / 2.0
        t = flops / (0.5 * self.gpu[3]) + 5.0
        return t * 2.5 if backward else t

    # -- CPU side -----------------------------------------------------
    def tick(self, tid, us):
        self.clock[tid] += us

    @contextmanager
    def op(self, tid, name, inputs=None, seq=None, pre=3.0, post=1.5, cat="cpu_op"):
        self.ext += 1
        args = {"External id": self.ext, "Record function id": 0}
        if seq is not None:
            args["Sequence number"] = seq
            args["Fwd thread id"] = 0 if tid == MAIN else 1
        if inputs is not None:
            args["Concrete Inputs"] = [i[3] for i in inputs]
            args["Input type"] = [i[1] for i in inputs]
            args["Input Strides"] = [i[2] for i in inputs]
            args["Input Dims"] = [i[0] for i in inputs]
        args["Ev Idx"] = self.ev_idx
        self.ev_idx += 1
        ts = self.clock[tid]
        e = {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": 0, "args": args}
        self.events.append(e)
        frame = {"ev": e, "kernels": []}
        self.stack[tid].append(frame)
        self.clock[tid] += pre
        try:
            yield frame
        finally:
            self.clock[tid] += post
            self.stack[tid].pop()
            e["dur"] = self.clock[tid] - ts
            if cat == "user_annotation" and frame["kernels"]:
                by_stream: Dict[int, List[Tuple[float, float]]] = {}
                for s, a, b in frame["kernels"]:
                    by_stream.setdefault(s, []).append((a, b))
                for s, spans in sorted(by_stream.items()):
                    a = min(x for x, _ in spans)
                    b = max(y for _, y in spans)
                    self.gpu_events.append(
                        {"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": 0, "tid": s,
                         "ts": a, "dur": b - a, "args": {"External id": args["External id"]}})

    def anno(self, tid, name, pre=3.0, post=1.5):
        """A record_function annotation."""
        return self.op(tid, name, cat="user_annotation", pre=pre, post=post)

    def leaf(self, tid, name, inputs=None, seq=None, us=4.0):
        """An operator that launches nothing."""
        with self.op(tid, name, inputs=inputs, seq=seq, pre=us * 0.7, post=us * 0.3):
            pass

    def node(self):
        """A forward operator created an autograd node: returns its sequence number."""
        s = self.seq
        self.seq += 1
        return s

    def _ext(self, tid):
        st = self.stack[tid]
        return st[-1]["ev"]["args"]["External id"] if st else 0

    def _runtime(self, tid, name, dur, cat="cuda_runtime"):
        self.corr += 1
        ts = self.clock[tid]
        e = {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur,
             "args": {"External id": self._ext(tid), "cbid": CBID[name], "correlation": self.corr}}
        self.events.append(e)
        return e

    def _flow(self, tid, ts, gpu_tid, gpu_ts, corr):
        self.gpu_events.append({"ph": "s", "id": corr, "pid": PID, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"})
        self.gpu_events.append({"ph": "f", "id": corr, "pid": 0, "tid": gpu_tid, "ts": gpu_ts, "cat": "ac2g",
                                "name": "ac2g", "bp": "e"})

    def kernel(self, tid, name, dur, grid, block, regs=32, smem=0, stream=COMPUTE, api="cudaLaunchKernel",
               extra=None):
        api_dur = 5.2 if api.startswith("cu") and api != "cudaLaunchKernel" else 4.1
        # CUDA queues at most QUEUE launches per stream: with that many not yet started, the launch
        # call blocks until the oldest starts (the CPU runs far ahead of this GPU-bound job)
        queue = self.queued[stream]
        while queue and queue[0] <= self.clock[tid]:
            queue.popleft()
        if len(queue) >= QUEUE:
            api_dur += queue[len(queue) - QUEUE] - self.clock[tid]
        rt = self._runtime(tid, api, api_dur, cat="cuda_driver" if api.startswith("cuLaunch") else "cuda_runtime")
        # times on the microsecond scale with three decimals, as exported: a kernel starts exactly where
        # the previous one on its stream ends, never a rounding error before
        dur = _r(dur)
        start = _r(max(rt["ts"] + 5.0, self.stream[stream]))
        self.stream[stream] = _r(start + dur)
        queue.append(start)
        nblocks = grid[0] * grid[1] * grid[2]
        threads = block[0] * block[1] * block[2]
        sms = self.gpu[1]
        args = {"External id": rt["args"]["External id"], "queued": 0, "device": 0, "context": 1,
                "stream": stream, "correlation": rt["args"]["correlation"], "registers per thread": regs,
                "shared memory": smem, "blocks per SM": round(nblocks / sms, 6),
                "warps per SM": round(nblocks * max(1, threads // 32) / sms, 6), "grid": list(grid),
                "block": list(block), "est. achieved occupancy %": min(100, max(1, int(100 * nblocks * threads / (sms * 2048))))}
        if extra:
            args.update(extra)
        self.gpu_events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": start,
                                "dur": dur, "args": args})
        self._flow(tid, rt["ts"], stream, start, rt["args"]["correlation"])
        for st in self.stack[tid]:
            st["kernels"].append((stream, start, start + dur))
        self.clock[tid] += api_dur + 0.6

    def elementwise(self, tid, name, numel, nbytes, vec=4):
        blocks = max(1, min(65535 * 8, math.ceil(numel / (128 * vec))))
        self.kernel(tid, name, self.mem_us(nbytes), (blocks, 1, 1), (128, 1, 1), regs=26)

    def gemm(self, tid, m, n, k, kind):
        # cuBLAS on sm90 picks nvjet (cuBLAS 12.4+) or xmma kernels; which one depends on the shape
        if (m * n) % 3 == 0:
            name = f"nvjet_tst_256x128_64x4_2x1_v_bz_coopA_{kind}"
            api = "cuLaunchKernelEx"
            grid, block, smem = (max(1, math.ceil(m / 256) * math.ceil(n / 128)), 1, 1), (384, 1, 1), 230400
        else:
            name = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_" + kind.lower() +
                    "_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas")
            api = "cudaLaunchKernel"
            grid, block, smem = (math.ceil(n / 256), math.ceil(m / 128), 1), (384, 1, 1), 213248
        self.kernel(tid, name, self.gemm_us(m, n, k), grid, block, regs=168, smem=smem, api=api)

    def runtime_call(self, tid, name, dur):
        e = self._runtime(tid, name, dur)
        self.clock[tid] += dur + 0.4
        return e

    def record_event(self, tid, stream):
        e = self.runtime_call(tid, "cudaEventRecord", 1.6)
        self.cuda_event += 1
        self.recorded[self.cuda_event] = (self.stream[stream], e["args"]["correlation"], stream)
        return self.cuda_event

    def wait_event(self, tid, stream, event):
        e = self.runtime_call(tid, "cudaStreamWaitEvent", 1.8)
        done, rec_corr, rec_stream = self.recorded[event]
        self.stream[stream] = max(self.stream[stream], done)
        c = e["args"]["correlation"]
        self.gpu_events.append(
            {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": stream,
             "ts": e["ts"] + 0.6, "dur": 0.9,
             "args": {"External id": e["args"]["External id"], "cuda_sync_kind": "Stream Wait Event",
                      "wait_on_stream": rec_stream, "wait_on_cuda_event_record_corr_id": rec_corr,
                      "wait_on_cuda_event_id": event, "stream": stream, "correlation": c, "device": 0,
                      "context": 1}})
        self._flow(tid, e["ts"], stream, e["ts"] + 0.6, c)


class _Param:
    def __init__(self, name, shape):
        self.name = name
        self.shape = list(shape)
        self.numel = 1
        for n in shape:
            self.numel *= n


def _params(layers, h, vocab, seq):
    f = 4 * h
    ps = [_Param("emb", (vocab, h)), _Param("pos", (1, seq, h))]
    for i in range(layers):
        for n, s in (("ln1.w", (h,)), ("ln1.b", (h,)), ("qkv.w", (3 * h, h)), ("qkv.b", (3 * h,)),
                     ("proj.w", (h, h)), ("proj.b", (h,)), ("ln2.w", (h,)), ("ln2.b", (h,)),
                     ("fc1.w", (f, h)), ("fc1.b", (f,)), ("fc2.w", (h, f)), ("fc2.b", (h,))):
            ps.append(_Param(f"blocks.{i}.{n}", s))
    ps += [_Param("ln.w", (h,)), _Param("ln.b", (h,)), _Param("head.w", (vocab, h))]
    return {p.name: p for p in ps}


K_COPY_BF16 = ("void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda("
               "at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
               "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, "
               "std::array<char*, 2ul>)")
K_COPY_F32 = ("void at::native::vectorized_elementwise_kernel<4, at::native::direct_copy_kernel_cuda("
              "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
              "{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::direct_copy_kernel_cuda("
              "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
              "{lambda(float)#1}, std::array<char*, 2ul>)")
K_UPCAST = ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
            "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
            "{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, "
            "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
            "at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda("
            "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
            "{lambda(float)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, "
            "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
            "at::native::memory::StoreWithCast<1>)")
K_COPY_I64 = ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
              "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
              "{lambda()#4}::operator()() const::{lambda(long)#1}>(at::TensorIteratorBase&, "
              "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
              "{lambda()#4}::operator()() const::{lambda(long)#1} const&)::{lambda(int)#1}>(int, "
              "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
              "{lambda()#3}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}>("
              "at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::"
              "operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1} const&)::{lambda(int)#1})")
K_ADD_F32 = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
             "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
K_ADD_MIXED = ("void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>, "
               "std::array<char*, 3ul>, 4, TrivialOffsetCalculator<2, unsigned int>, "
               "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<2>, "
               "at::native::memory::StoreWithCast<1> >(int, at::native::CUDAFunctor_add<float>, "
               "std::array<char*, 3ul>, TrivialOffsetCalculator<2, unsigned int>, TrivialOffsetCalculator<1, "
               "unsigned int>, at::native::memory::LoadWithCast<2>, at::native::memory::StoreWithCast<1>)")
K_LN = ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, "
        "float const*, float const*, float const*, float*, float*, float*)")
K_LN_BWD_IN = ("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, float>("
               "float const*, float const*, float const*, float const*, float const*, float*, int)")
K_LN_BWD_GB = ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<float, float>(long, "
               "long, float const*, float const*, float const*, float const*, float*, float*)")
K_GELU = ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl("
          "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::"
          "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, "
          "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
          "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)")
K_GELU_BWD = ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl("
              "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::"
              "operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul> >(int, "
              "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
              "{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, "
              "c10::BFloat16)#1}, std::array<char*, 3ul>)")
FLASH_T = ("Flash_fwd_kernel_traits<{d}, 128, 64, 4, false, false, cutlass::bfloat16_t, "
           "Flash_kernel_traits<{d}, 128, 64, 4, cutlass::bfloat16_t> >")
FLASH_BT = ("Flash_bwd_kernel_traits<{d}, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, "
            "Flash_kernel_traits<{d}, 64, 128, 8, cutlass::bfloat16_t> >")
K_INDEX_SELECT = ("void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, "
                  "-2, true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float "
                  "const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, "
                  "unsigned int, unsigned int, long)")
K_FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
          "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
K_SUM = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
         "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
         "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
         "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
         "unsigned int, float, 4, 4>)")
K_SUM_BF16 = K_SUM.replace("ReduceOp<float", "ReduceOp<c10::BFloat16").replace(
    "sum_functor<float, float, float>", "sum_functor<c10::BFloat16, float, c10::BFloat16>")
K_MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
         "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, "
         "at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
         "std::array<char*, 2ul>)")
K_CAT = ("void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<"
         "at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 128, 1>(at::native::(anonymous "
         "namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<"
         "at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 128, 1>, "
         "at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)")
K_ADAM = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
          "FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, "
          "(at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, float*, float*>("
          "at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous "
          "namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, "
          "double, double, double, bool, float*, float*)")
K_FOREACH_ADD = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                 "namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, "
                 "1, 1, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<1>, "
                 "at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float)")
K_NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


class _Model:
    """The GPT of record_gpt_traces.py, op by op."""

    def __init__(self, g: _Gen, layers, hidden, heads, batch, microbatches, seq, vocab):
        self.g = g
        self.L, self.h, self.H, self.b, self.m, self.s, self.V = layers, hidden, heads, batch, microbatches, seq, vocab
        self.d = hidden // heads
        self.T = batch * seq
        self.params = _params(layers, hidden, vocab, seq)
        self.bwd: List[tuple] = []  # autograd nodes of the current micro-batch, in creation order

    # ---- forward pieces (main thread) ----------------------------------------------------
    def to_copy(self, shape, src, dst, seq=True):
        """autocast's cast: aten::to -> aten::_to_copy -> aten::empty_strided + aten::copy_."""
        g, tid = self.g, MAIN
        n = math.prod(shape)
        sq = g.seq if seq else None
        with g.op(tid, "aten::to", [T(shape, src), S(15 if dst == BF16 else 6), S("False"), S("False"), N],
                  seq=sq, pre=3.0):
            with g.op(tid, "aten::_to_copy", [T(shape, src), S(15 if dst == BF16 else 6), N, N, N, S("False"), N],
                      seq=sq, pre=4.0):
                g.leaf(tid, "aten::empty_strided", [S(str(shape), "ScalarList"), S(str(_contig(shape)), "ScalarList"),
                                                    S(15 if dst == BF16 else 6), S(0), N, S("False")], us=3.0)
                with g.op(tid, "aten::copy_", [T(shape, dst), T(shape, src), S("False")], seq=sq):
                    k = K_COPY_BF16 if dst == BF16 else K_UPCAST
                    g.elementwise(tid, k, n, n * 6)
        if seq:
            self.fwd_node("ToCopyBackward0", shape=shape, src=src, dst=dst)

    def reshape_copy(self, shape, strides, to, seq=None):
        """reshape of a view that is not contiguous (a slice of the data): clone, then _unsafe_view."""
        g, tid = self.g, MAIN
        n = math.prod(shape)
        with g.op(tid, "aten::reshape", [T(shape, I64, strides), S(str(to), "ScalarList")], seq=seq):
            with g.op(tid, "aten::clone", [T(shape, I64, strides), N], seq=seq):
                g.leaf(tid, "aten::empty_like", [T(shape, I64, strides), N, N, N, N, N], us=2.5)
                with g.op(tid, "aten::copy_", [T(shape, I64), T(shape, I64, strides), S("False")], seq=seq):
                    g.kernel(tid, K_COPY_I64, g.mem_us(n * 16), (math.ceil(n / 512), 1, 1), (128, 1, 1), regs=28)
            g.leaf(tid, "aten::_unsafe_view", [T(shape, I64), S(str(to), "ScalarList")], seq=seq, us=2.5)

    def fwd_node(self, name, **kw):
        s = self.g.node()
        self.bwd.append((s, name, kw))
        return s

    def linear(self, x_shape, x_dtype, out_f, in_f, pname, bias=True):
        g, tid = self.g, MAIN
        w = [out_f, in_f]
        inputs = [T(x_shape, x_dtype), T(w), T([out_f]) if bias else N]
        with g.op(tid, "aten::linear", inputs, seq=g.seq, pre=4.0):
            if x_dtype != BF16:
                self.to_copy(x_shape, x_dtype, BF16)
                self.bwd[-1][2]["input_of"] = pname
            self.to_copy(w, F32, BF16)
            self.bwd[-1][2]["param"] = pname + ".w"
            if bias:
                self.to_copy([out_f], F32, BF16)
                self.bwd[-1][2]["param"] = pname + ".b"
            rows = math.prod(x_shape[:-1])
            if bias:
                g.leaf(tid, "aten::view", [T(x_shape, BF16), S(str([rows, in_f]), "ScalarList")], seq=g.seq)
                self.fwd_node("ViewBackward0", grad=[rows, in_f], to=x_shape)
                with g.op(tid, "aten::t", [T(w, BF16)], seq=g.seq):
                    g.leaf(tid, "aten::transpose", [T(w, BF16), S(0), S(1)], us=3.0)
                self.fwd_node("TBackward0", grad=[in_f, out_f])
                with g.op(tid, "aten::addmm", [T([out_f], BF16), T([rows, in_f], BF16), T([in_f, out_f], BF16, [1, in_f]),
                                                S(1), S(1)], seq=g.seq, pre=6.0):
                    g.gemm(tid, rows, out_f, in_f, "TN")
                self.fwd_node("AddmmBackward0", rows=rows, out_f=out_f, in_f=in_f, pname=pname)
                g.leaf(tid, "aten::view", [T([rows, out_f], BF16), S(str(x_shape[:-1] + [out_f]), "ScalarList")],
                       seq=g.seq)
                self.fwd_node("ViewBackward0", grad=x_shape[:-1] + [out_f], to=[rows, out_f])
            else:
                with g.op(tid, "aten::t", [T(w, BF16)], seq=g.seq):
                    g.leaf(tid, "aten::transpose", [T(w, BF16), S(0), S(1)], us=3.0)
                self.fwd_node("TBackward0", grad=[in_f, out_f])
                with g.op(tid, "aten::matmul", [T(x_shape, BF16), T([in_f, out_f], BF16, [1, in_f])], seq=g.seq):
                    with g.op(tid, "aten::reshape", [T(x_shape, BF16), S(str([rows, in_f]), "ScalarList")], seq=g.seq):
                        g.leaf(tid, "aten::view", [T(x_shape, BF16), S(str([rows, in_f]), "ScalarList")], seq=g.seq)
                    self.fwd_node("ViewBackward0", grad=[rows, in_f], to=x_shape)
                    with g.op(tid, "aten::mm", [T([rows, in_f], BF16), T([in_f, out_f], BF16, [1, in_f])], seq=g.seq,
                              pre=6.0):
                        g.gemm(tid, rows, out_f, in_f, "TN")
                    self.fwd_node("MmBackward0", rows=rows, out_f=out_f, in_f=in_f, pname=pname)
                    g.leaf(tid, "aten::_unsafe_view", [T([rows, out_f], BF16), S(str(x_shape[:-1] + [out_f]), "ScalarList")],
                           seq=g.seq)
                    self.fwd_node("UnsafeViewBackward0", grad=x_shape[:-1] + [out_f], to=[rows, out_f])

    def layer_norm(self, pname):
        g, tid, h = self.g, MAIN, self.h
        x = [self.b, self.s, h]
        with g.op(tid, "aten::layer_norm", [T(x), S(f"[{h}]", "ScalarList"), T([h]), T([h]), S(1e-05), S("True")],
                  seq=g.seq):
            with g.op(tid, "aten::native_layer_norm", [T(x), S(f"[{h}]", "ScalarList"), T([h]), T([h]), S(1e-05)],
                      seq=g.seq, pre=5.0):
                g.leaf(tid, "aten::empty", [S(str(x), "ScalarList"), S(6), S(0), N, S("False"), N], us=2.0)
                g.leaf(tid, "aten::empty", [S(str([self.T]), "ScalarList"), S(6), S(0), N, S("False"), N], us=2.0)
                g.leaf(tid, "aten::empty", [S(str([self.T]), "ScalarList"), S(6), S(0), N, S("False"), N], us=2.0)
                g.kernel(tid, K_LN, g.mem_us(self.T * h * 8), (self.T, 1, 1), (128, 1, 1), regs=30)
        self.fwd_node("NativeLayerNormBackward0", pname=pname)

    def residual_add(self):
        g, tid = self.g, MAIN
        x = [self.b, self.s, self.h]
        with g.op(tid, "aten::add", [T(x), T(x, BF16), S(1)], seq=g.seq):
            g.elementwise(tid, K_ADD_MIXED, self.T * self.h, self.T * self.h * 10)
        self.fwd_node("AddBackward0", mixed=True)

    def block(self, i):
        g, tid = self.g, MAIN
        b, s, h, H, d, f = self.b, self.s, self.h, self.H, self.d, 4 * self.h
        p = f"blocks.{i}"
        self.layer_norm(p + ".ln1")
        self.linear([b, s, h], F32, 3 * h, h, p + ".qkv")
        qkv = [b, s, 3 * h]
        with g.op(tid, "aten::split", [T(qkv, BF16), S(h), S(-1)], seq=g.seq):
            for j in range(3):
                with g.op(tid, "aten::narrow", [T(qkv, BF16), S(-1), S(j * h), S(h)], seq=g.seq, pre=1.5, post=0.5):
                    g.leaf(tid, "aten::slice", [T(qkv, BF16), S(2), S(j * h), S((j + 1) * h), S(1)], us=2.5)
        self.fwd_node("SplitBackward0")
        for _ in range(3):
            g.leaf(tid, "aten::view", [T([b, s, h], BF16, [s * 3 * h, 3 * h, 1]), S(str([b, s, H, d]), "ScalarList")],
                   seq=g.seq)
            self.fwd_node("ViewBackward0", grad=[b, s, H, d], to=[b, s, h])
            with g.op(tid, "aten::transpose", [T([b, s, H, d], BF16, [s * 3 * h, 3 * h, d, 1]), S(1), S(2)], seq=g.seq):
                g.leaf(tid, "aten::as_strided", [T([b, s, H, d], BF16, [s * 3 * h, 3 * h, d, 1]),
                                                 S(str([b, H, s, d]), "ScalarList"),
                                                 S(str([s * 3 * h, d, 3 * h, 1]), "ScalarList"), N], us=2.0)
            self.fwd_node("TransposeBackward0", grad=[b, H, s, d])
        qs = [b, H, s, d]
        qst = [s * 3 * h, d, 3 * h, 1]
        sdpa_in = [T(qs, BF16, qst), T(qs, BF16, qst), T(qs, BF16, qst), N, S(0.0), S("True"), N, S("False")]
        with g.op(tid, "aten::scaled_dot_product_attention", sdpa_in, seq=g.seq, pre=8.0):
            with g.op(tid, "aten::_scaled_dot_product_flash_attention",
                      [T(qs, BF16, qst), T(qs, BF16, qst), T(qs, BF16, qst), S(0.0), S("True"), S("False"), N],
                      seq=g.seq, pre=6.0):
                for _ in range(3):
                    g.leaf(tid, "aten::transpose", [T(qs, BF16, qst), S(1), S(2)], us=2.5)
                with g.op(tid, "aten::_flash_attention_forward",
                          [T([b, s, H, d], BF16, [s * 3 * h, 3 * h, d, 1])] * 3 + [N, N, S(s), S(s), S(0.0),
                                                                                    S("True"), S("False"), N, N, N, N],
                          pre=8.0):
                    g.leaf(tid, "aten::empty_like", [T([b, s, H, d], BF16, [s * 3 * h, 3 * h, d, 1]), N, N, N, N, N], us=3.0)
                    g.leaf(tid, "aten::empty", [S(str([b, H, s]), "ScalarList"), S(6), N, S(0), N, N], us=2.0)
                    g.kernel(tid, "void pytorch_flash::flash_fwd_kernel<" + FLASH_T.format(d=d) +
                             ", false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
                             g.flash_us(b, H, s, d), (math.ceil(s / 128), b, H), (128, 1, 1), regs=255, smem=49152)
                g.leaf(tid, "aten::transpose", [T([b, s, H, d], BF16), S(1), S(2)], us=2.5)
        self.fwd_node("ScaledDotProductFlashAttentionBackward0")
        ao = [b, H, s, d]
        with g.op(tid, "aten::transpose", [T(ao, BF16, [s * h, d, h, 1]), S(1), S(2)], seq=g.seq):
            g.leaf(tid, "aten::as_strided", [T(ao, BF16, [s * h, d, h, 1]), S(str([b, s, H, d]), "ScalarList"),
                                             S(str([s * h, h, d, 1]), "ScalarList"), N], us=2.0)
        self.fwd_node("TransposeBackward0", grad=[b, s, H, d])
        # flash attention's output is (b, s, heads, d) in memory, so this reshape is a view
        with g.op(tid, "aten::reshape", [T([b, s, H, d], BF16), S(str([b, s, h]), "ScalarList")], seq=g.seq):
            g.leaf(tid, "aten::view", [T([b, s, H, d], BF16), S(str([b, s, h]), "ScalarList")], seq=g.seq)
        self.fwd_node("ViewBackward0", grad=[b, s, h], to=[b, s, H, d])
        self.linear([b, s, h], BF16, h, h, p + ".proj")
        self.residual_add()
        self.layer_norm(p + ".ln2")
        self.linear([b, s, h], F32, f, h, p + ".fc1")
        with g.op(tid, "aten::gelu", [T([b, s, f], BF16), S("none", "")], seq=g.seq):
            g.elementwise(tid, K_GELU, self.T * f, self.T * f * 4)
        self.fwd_node("GeluBackward0")
        self.linear([b, s, f], BF16, h, f, p + ".fc2")
        self.residual_add()

    def forward(self):
        g, tid = self.g, MAIN
        b, s, h, V = self.b, self.s, self.h, self.V
        self.bwd = []
        with g.anno(tid, "DistributedDataParallel.forward", pre=45.0, post=12.0):
            with g.op(tid, "aten::embedding", [T([V, h]), T([b, s], I64, [s + 1, 1]), S(-1), S("False"), S("False")],
                      seq=g.seq):
                self.reshape_copy([b, s], [s + 1, 1], [-1], seq=g.seq)
                with g.op(tid, "aten::index_select", [T([V, h]), S(0), T([self.T], I64)], pre=5.0):
                    g.leaf(tid, "aten::empty", [S("[0]", "ScalarList"), S(6), S(0), N, S("False"), N], us=2.0)
                    g.kernel(tid, K_INDEX_SELECT, g.mem_us(self.T * h * 8), (min(65535, self.T * h // 512), 1, 1),
                             (128, 1, 1), regs=32)
                g.leaf(tid, "aten::view", [T([self.T, h]), S(str([b, s, h]), "ScalarList")], us=2.0)
            self.fwd_node("EmbeddingBackward0")
            with g.op(tid, "aten::slice", [T([1, s, h]), S(1), S(0), S(s), S(1)], seq=g.seq):
                g.leaf(tid, "aten::as_strided", [T([1, s, h]), S(str([1, s, h]), "ScalarList"),
                                                 S(str(_contig([1, s, h])), "ScalarList"), N], us=2.0)
            self.fwd_node("SliceBackward0")
            with g.op(tid, "aten::add", [T([b, s, h]), T([1, s, h]), S(1)], seq=g.seq):
                g.elementwise(tid, K_ADD_F32, self.T * h, self.T * h * 8)
            self.fwd_node("AddBackward0", pos=True)
            for i in range(self.L):
                with g.anno(tid, f"layer{i}", pre=6.0, post=2.0):
                    self.block(i)
            self.layer_norm("ln")
            self.linear([b, s, h], F32, V, h, "head", bias=False)
        with g.op(tid, "aten::flatten", [T([b, s, V], BF16), S(0), S(1)], seq=g.seq):
            g.leaf(tid, "aten::view", [T([b, s, V], BF16), S(str([self.T, V]), "ScalarList")], seq=g.seq)
        self.fwd_node("ViewBackward0", grad=[self.T, V], to=[b, s, V])
        with g.op(tid, "aten::flatten", [T([b, s], I64, [s + 1, 1]), S(0), S(-1)], seq=g.seq):
            self.reshape_copy([b, s], [s + 1, 1], [-1], seq=g.seq)
        tgt = T([self.T], I64)
        with g.op(tid, "aten::cross_entropy_loss", [T([self.T, V], BF16), tgt, N, S(1), S(-100), S(0.0)], seq=g.seq):
            self.to_copy([self.T, V], BF16, F32)
            self.bwd[-1][2]["logits"] = True
            with g.op(tid, "aten::log_softmax", [T([self.T, V]), S(1), N], seq=g.seq):
                with g.op(tid, "aten::_log_softmax", [T([self.T, V]), S(1), S("False")], seq=g.seq):
                    g.kernel(tid, "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
                             "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
                             g.mem_us(self.T * V * 8), (self.T, 1, 1), (1024, 1, 1), regs=40)
            self.fwd_node("LogSoftmaxBackward0")
            with g.op(tid, "aten::nll_loss_nd", [T([self.T, V]), tgt, N, S(1), S(-100)], seq=g.seq):
                with g.op(tid, "aten::nll_loss", [T([self.T, V]), tgt, N, S(1), S(-100)], seq=g.seq):
                    with g.op(tid, "aten::nll_loss_forward", [T([self.T, V]), tgt, N, S(1), S(-100)], seq=g.seq):
                        g.kernel(tid, "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d"
                                 "<float, float, long>(float*, float*, float const*, long const*, float const*, bool, "
                                 "long, long, long, long)", g.mem_us(self.T * 16), (1, 1, 1), (1024, 1, 1), regs=30)
            self.fwd_node("NllLossBackward0")
        # loss.backward(): the seed gradient, then the engine's device thread runs the graph
        with g.op(tid, "aten::ones_like", [T([]), S(6), N, N, N, S(1)], pre=3.0):
            g.leaf(tid, "aten::empty_like", [T([]), S(6), N, N, N, S(1)], us=3.0)
            with g.op(tid, "aten::fill_", [T([]), S(1)]):
                g.kernel(tid, K_FILL, 2.0, (1, 1, 1), (64, 1, 1), regs=16)


def _buckets(order, params, first_cap=1 << 20, cap=25 << 20):
    """DDP's buckets over parameters in gradient-ready order (rebuilt after the first iteration)."""
    out, cur, size, limit = [], [], 0, first_cap
    for name in order:
        cur.append(name)
        size += params[name].numel * 4
        if size >= limit:
            out.append(cur)
            cur, size, limit = [], 0, cap
    if cur:
        out.append(cur)
    return out


class _Backward:
    """Runs one micro-batch's backward on the autograd thread, with DDP's reducer hooks."""

    def __init__(self, model: _Model, sync: bool, first: bool, buckets, nodes):
        self.m = model
        self.g = model.g
        self.sync = sync
        self.first = first
        self.buckets = buckets
        self.bucket_of = {n: i for i, bk in enumerate(buckets or []) for n in bk}
        self.pending = [len(bk) for bk in (buckets or [])]
        self.next_bucket = 0
        self.ready_order: List[str] = []
        self.nodes = nodes
        self.works: List[int] = []

    def accumulate_grad(self, pname):
        g, tid = self.g, AUTOGRAD
        p = self.m.params[pname]
        self.ready_order.append(pname)
        with g.op(tid, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", pre=3.0, post=2.0):
            with g.op(tid, "torch::autograd::AccumulateGrad", [T(p.shape)], pre=3.0):
                if self.first:
                    with g.op(tid, "aten::detach", [T(p.shape)], pre=2.0):
                        g.leaf(tid, "detach", [T(p.shape)], us=1.5)
                else:
                    with g.op(tid, "aten::add_", [T(p.shape), T(p.shape), S(1)]):
                        g.elementwise(tid, K_ADD_F32, p.numel, p.numel * 12)
            if self.sync:
                with g.op(tid, "torch::distributed::reducer::mul_out", [T(p.shape)], pre=4.0):
                    with g.op(tid, "aten::mul", [T(p.shape), ([], "double", [], ""), T(p.shape)]):
                        g.elementwise(tid, K_MUL, p.numel, p.numel * 8)
                bi = self.bucket_of[pname]
                self.pending[bi] -= 1
                while self.next_bucket < len(self.buckets) and self.pending[self.next_bucket] == 0:
                    self.allreduce(self.next_bucket)
                    self.next_bucket += 1

    def allreduce(self, bi):
        g, tid = self.g, AUTOGRAD
        n = sum(self.m.params[x].numel for x in self.buckets[bi])
        g.tick(tid, 6.0)
        with g.op(tid, "c10d::allreduce_", [TL([[n]]), N, N, N, S(-1)], pre=8.0, post=4.0):
            rpc = [TL([[n]]), N, N, S(0), N, S("[]", "ScalarList"), S("[]", "ScalarList"), S(0), S(1), S(1)]
            with g.op(tid, "record_param_comms", rpc, pre=5.0, post=3.0) as fr:
                fr["ev"]["args"].update({
                    "Collective name": "allreduce", "dtype": "Float", "In msg nelems": n, "Out msg nelems": n,
                    "Group size": 1, "Process Group Name": "0", "Process Group Description": "default_pg",
                    "Process Group Ranks": "[0]", "Rank": 0, "Global rank start": 0, "Global rank stride": 1,
                    "In split size": "[]", "Out split size": "[]"})
                g.runtime_call(tid, "cudaStreamIsCapturing", 1.0)
                ev = g.record_event(tid, COMPUTE)
                g.wait_event(tid, NCCL, ev)
                with g.anno(tid, "nccl:all_reduce", pre=6.0, post=3.0) as fa:
                    fa["ev"]["args"].update({"Concrete Inputs": [""], "Input type": [F32], "Input Strides": [[1]],
                                             "Input Dims": [[n]]})
                    g.runtime_call(tid, "cudaStreamGetCaptureInfo_v2", 1.0)
                    if g.nccl_kernels:
                        g.kernel(tid, K_NCCL, g.mem_us(n * 8) * 0.5 + 4.0, (1, 1, 1), (640, 1, 1), regs=96,
                                 smem=55520, stream=NCCL, api="cudaLaunchKernelExC",
                                 extra={"Collective name": "allreduce", "In msg nelems": n, "Out msg nelems": n,
                                        "Group size": 1, "dtype": "Float", "In split size": "[]",
                                        "Out split size": "[]", "Process Group Name": "0",
                                        "Process Group Description": "default_pg", "Process Group Ranks": "[0]"})
                self.works.append(g.record_event(tid, NCCL))
        g.tick(tid, 5.0)

    def finalize(self):
        """DDP's finalize_backward: wait for each bucket's work, copy the bucket back into .grad."""
        g, tid = self.g, AUTOGRAD
        g.tick(tid, 15.0)
        for bi, bk in enumerate(self.buckets):
            g.wait_event(tid, COMPUTE, self.works[bi])
            for name in bk:
                p = self.m.params[name]
                # reducer.cpp's copy_bucket_to_grad records itself (RECORD_FUNCTION) around the copy
                with g.op(tid, "torch.distributed.ddp.reducer::copy_bucket_to_grad", [T(p.shape)], pre=2.0):
                    with g.op(tid, "aten::copy_", [T(p.shape), T(p.shape), S("False")], pre=3.0):
                        g.elementwise(tid, K_COPY_F32, p.numel, p.numel * 8)
        g.tick(tid, 10.0)

    def run(self):
        m, g, tid = self.m, self.g, AUTOGRAD
        T_, h, V, b, s, H, d = m.T, m.h, m.V, m.b, m.s, m.H, m.d
        for seq, name, kw in reversed(self.nodes):
            after = []
            with g.op(tid, f"autograd::engine::evaluate_function: {name}", seq=seq, pre=3.0, post=2.5):
                with g.op(tid, name, self.grads_in(name, kw), seq=seq, pre=3.0, post=1.5):
                    after = self.node_body(name, kw)
                for fn in after:
                    fn()
            if name == "ToCopyBackward0" and "param" in kw:
                self.accumulate_grad(kw["param"])
            elif name == "NativeLayerNormBackward0":
                self.accumulate_grad(kw["pname"] + ".w")
                self.accumulate_grad(kw["pname"] + ".b")
            elif name == "EmbeddingBackward0":
                self.accumulate_grad("emb")
            elif name == "SliceBackward0":
                self.accumulate_grad("pos")
        if self.sync:
            self.finalize()

    def grads_in(self, name, kw):
        """The gradients a node receives, which its record function records as its inputs."""
        m = self.m
        b, s, h, H, d = m.b, m.s, m.h, m.H, m.d
        x = [b, s, h]
        return {
            "ToCopyBackward0": lambda: [T(kw["shape"], kw["dst"])],
            "ViewBackward0": lambda: [T(kw["grad"], BF16)],
            "UnsafeViewBackward0": lambda: [T(kw["grad"], BF16)],
            "TBackward0": lambda: [T(kw["grad"], BF16)],
            "TransposeBackward0": lambda: [T(kw["grad"], BF16)],
            "AddmmBackward0": lambda: [T([kw["rows"], kw["out_f"]], BF16)],
            "MmBackward0": lambda: [T([kw["rows"], kw["out_f"]], BF16)],
            "SplitBackward0": lambda: [T(x, BF16)] * 3,
            "ScaledDotProductFlashAttentionBackward0": lambda: [T([b, H, s, d], BF16, [s * h, d, h, 1])] + [N] * 8,
            "GeluBackward0": lambda: [T([b, s, 4 * h], BF16)],
            "NativeLayerNormBackward0": lambda: [T(x), N, N],
            "AddBackward0": lambda: [T(x)],
            "LogSoftmaxBackward0": lambda: [T([m.T, m.V])],
            "NllLossBackward0": lambda: [T([]), N],
            "EmbeddingBackward0": lambda: [T(x)],
            "SliceBackward0": lambda: [T([1, s, h])],
        }[name]()

    def node_body(self, name, kw):
        """The node's own operators; returns what runs after it in its evaluate_function (sum_to, casts, buffer adds)."""
        m, g, tid = self.m, self.g, AUTOGRAD
        T_, h, V, b, s, H, d = m.T, m.h, m.V, m.b, m.s, m.H, m.d
        after = []
        if name == "NllLossBackward0":
            with g.op(tid, "aten::nll_loss_backward", [T([]), T([T_, V]), T([T_], I64), N, S(1), S(-100), T([])]):
                with g.op(tid, "aten::zero_", [T([T_, V])]):
                    with g.op(tid, "aten::fill_", [T([T_, V]), S(0)]):
                        g.elementwise(tid, K_FILL, T_ * V, T_ * V * 4)
                g.kernel(tid, "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, "
                         "long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)",
                         g.mem_us(T_ * 16), (1, 1, 1), (1024, 1, 1), regs=28)
        elif name == "LogSoftmaxBackward0":
            with g.op(tid, "aten::_log_softmax_backward_data", [T([T_, V]), T([T_, V]), S(1), S(6)]):
                g.kernel(tid, "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
                         "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, "
                         "float const*, long)", g.mem_us(T_ * V * 12), (T_, 1, 1), (1024, 1, 1), regs=38)
        elif name == "ToCopyBackward0":
            shape, src, dst = kw["shape"], kw["src"], kw["dst"]
            n = math.prod(shape)
            # the gradient goes back to the source dtype
            with g.op(tid, "aten::to", [T(shape, dst), S(15 if src == BF16 else 6), S("False"), S("False"), N]):
                with g.op(tid, "aten::_to_copy", [T(shape, dst), S(15 if src == BF16 else 6), N, N, N, S("False"), N]):
                    g.leaf(tid, "aten::empty_strided", [S(str(shape), "ScalarList"), S(str(_contig(shape)), "ScalarList"),
                                                        S(6), S(0), N, S("False")], us=3.0)
                    with g.op(tid, "aten::copy_", [T(shape, src), T(shape, dst), S("False")]):
                        g.elementwise(tid, K_UPCAST if src == F32 else K_COPY_BF16, n, n * 6)
        elif name in ("ViewBackward0", "UnsafeViewBackward0"):
            shape = S(str(kw["to"]), "ScalarList")
            with g.op(tid, "aten::reshape", [T(kw["grad"], BF16), shape], pre=2.0):
                g.leaf(tid, "aten::view", [T(kw["grad"], BF16), shape], us=2.0)
        elif name == "TBackward0":
            with g.op(tid, "aten::t", [T(kw["grad"], BF16)], pre=2.0):
                g.leaf(tid, "aten::transpose", [T(kw["grad"], BF16), S(0), S(1)], us=1.5)
        elif name == "TransposeBackward0":
            with g.op(tid, "aten::transpose", [T(kw["grad"], BF16), S(1), S(2)], pre=2.0):
                g.leaf(tid, "aten::as_strided", [T(kw["grad"], BF16), S("[]", "ScalarList"), S("[]", "ScalarList"), N],
                       us=1.5)
        elif name in ("MmBackward0", "AddmmBackward0"):
            rows, out_f, in_f = kw["rows"], kw["out_f"], kw["in_f"]
            with g.op(tid, "aten::t", [T([in_f, out_f], BF16, [1, in_f])]):
                g.leaf(tid, "aten::transpose", [T([in_f, out_f], BF16, [1, in_f]), S(0), S(1)], us=2.0)
            with g.op(tid, "aten::mm", [T([rows, out_f], BF16), T([out_f, in_f], BF16)], pre=6.0):
                g.gemm(tid, rows, in_f, out_f, "NN")
            with g.op(tid, "aten::t", [T([rows, in_f], BF16)]):
                g.leaf(tid, "aten::transpose", [T([rows, in_f], BF16), S(0), S(1)], us=2.0)
            with g.op(tid, "aten::mm", [T([in_f, rows], BF16, [1, in_f]), T([rows, out_f], BF16)], pre=6.0):
                g.gemm(tid, in_f, out_f, rows, "NT")
            if name == "AddmmBackward0":
                def bias_sum(rows=rows, out_f=out_f):
                    with g.op(tid, "aten::sum", [T([rows, out_f], BF16), S("[0]", "ScalarList"), S("True"), N],
                              pre=5.0):
                        g.kernel(tid, K_SUM_BF16, g.mem_us(rows * out_f * 2), (min(rows * out_f // 4096, 1024), 1, 1),
                                 (32, 16, 1), regs=32)
                    g.leaf(tid, "aten::view", [T([1, out_f], BF16), S(f"[{out_f}]", "ScalarList")], us=2.0)
                after.append(bias_sum)
        elif name == "NativeLayerNormBackward0":
            x = [b, s, h]
            with g.op(tid, "aten::native_layer_norm_backward", [T(x), T(x), S(f"[{h}]", "ScalarList"), T([T_, 1]),
                                                                  T([T_, 1]), T([h]), T([h]), S("[True, True, True]", "")],
                      pre=6.0):
                g.leaf(tid, "aten::empty_like", [T(x), N, N, N, N, N], us=2.5)
                g.kernel(tid, K_LN_BWD_IN, g.mem_us(T_ * h * 12), (T_, 1, 1), (128, 1, 1), regs=40)
                g.leaf(tid, "aten::empty", [S(f"[{h}]", "ScalarList"), S(6), N, S(0), N, N], us=2.0)
                g.leaf(tid, "aten::empty", [S(f"[{h}]", "ScalarList"), S(6), N, S(0), N, N], us=2.0)
                g.kernel(tid, K_LN_BWD_GB, g.mem_us(T_ * h * 8), (math.ceil(h / 32), 1, 1), (32, 32, 1), regs=64)
            if kw["pname"] != "ln":
                # the residual stream's gradient from the layer norm meets the one from the add
                def buffer_add():
                    with g.op(tid, "aten::add", [T(x), T(x), S(1)]):
                        g.elementwise(tid, K_ADD_F32, T_ * h, T_ * h * 12)
                after.append(buffer_add)
        elif name == "AddBackward0":
            x = [b, s, h]
            if kw.get("mixed"):
                # the bf16 operand's gradient is cast to its dtype by the engine
                def cast():
                    with g.op(tid, "aten::to", [T(x), S(15), S("False"), S("False"), N]):
                        with g.op(tid, "aten::_to_copy", [T(x), S(15), N, N, N, S("False"), N]):
                            g.leaf(tid, "aten::empty_strided", [S(str(x), "ScalarList"), S(str(_contig(x)), "ScalarList"),
                                                                S(15), S(0), N, S("False")], us=3.0)
                            with g.op(tid, "aten::copy_", [T(x, BF16), T(x), S("False")]):
                                g.elementwise(tid, K_COPY_BF16, T_ * h, T_ * h * 6)
                after.append(cast)
            if kw.get("pos"):
                def pos_sum():
                    with g.op(tid, "aten::sum", [T(x), S("[0]", "ScalarList"), S("True"), N], pre=5.0):
                        g.kernel(tid, K_SUM, g.mem_us(T_ * h * 4), (min(s * h // 512, 65535), 1, 1), (32, 16, 1), regs=32)
                after.append(pos_sum)
        elif name == "GeluBackward0":
            f = 4 * h
            with g.op(tid, "aten::gelu_backward", [T([b, s, f], BF16), T([b, s, f], BF16), S("none", "")]):
                g.elementwise(tid, K_GELU_BWD, T_ * f, T_ * f * 6)
        elif name == "SplitBackward0":
            with g.op(tid, "aten::cat", [TL([[b, s, h]] * 3), S(-1)], pre=8.0):
                g.kernel(tid, K_CAT, g.mem_us(T_ * 3 * h * 4), (min(T_ * 3 * h // 2048, 65535), 3, 1), (128, 1, 1), regs=32)
        elif name == "ScaledDotProductFlashAttentionBackward0":
            qs = [b, H, s, d]
            with g.op(tid, "aten::_scaled_dot_product_flash_attention_backward",
                      [T(qs, BF16)] * 5 + [T([b, H, s]), N, N, S(s), S(s), S(0.0), S("True"), T([2], I64), T([], I64), N],
                      pre=8.0):
                for _ in range(4):
                    g.leaf(tid, "aten::transpose", [T(qs, BF16), S(1), S(2)], us=2.0)
                with g.op(tid, "aten::_flash_attention_backward",
                          [T([b, s, H, d], BF16)] * 5 + [T([b, H, s]), N, N, S(s), S(s), S(0.0), S("True"), T([2], I64),
                                                         T([], I64), N, N, N], pre=10.0):
                    for _ in range(3):
                        g.leaf(tid, "aten::empty_like", [T([b, s, H, d], BF16), N, N, N, N, N], us=2.5)
                    g.leaf(tid, "aten::empty", [S(str([b, H, s]), "ScalarList"), S(6), N, S(0), N, N], us=2.0)
                    g.leaf(tid, "aten::empty", [S(str([b, s, H, d]), "ScalarList"), S(6), N, S(0), N, N], us=2.0)
                    bt = FLASH_BT.format(d=d)
                    t = g.flash_us(b, H, s, d, backward=True)
                    g.kernel(tid, f"void pytorch_flash::flash_bwd_dot_do_o_kernel<true, {bt} >(pytorch_flash::Flash_bwd_params)",
                             g.mem_us(T_ * h * 8), (math.ceil(s / 128), b, H), (256, 1, 1), regs=40)
                    g.kernel(tid, f"void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<{bt}, true, false, "
                             "false, false, false, true, false, false>(pytorch_flash::Flash_bwd_params)",
                             t, (math.ceil(s / 128), b, H), (256, 1, 1), regs=255, smem=98304)
                    g.kernel(tid, f"void pytorch_flash::flash_bwd_convert_dq_kernel<{bt} >(pytorch_flash::Flash_bwd_params, int)",
                             g.mem_us(T_ * h * 6), (math.ceil(s / 128), b, H), (256, 1, 1), regs=40)
                for _ in range(3):
                    g.leaf(tid, "aten::transpose", [T([b, s, H, d], BF16), S(1), S(2)], us=2.0)
        elif name == "SliceBackward0":
            with g.op(tid, "aten::slice_backward", [T([1, s, h]), S(str([1, s, h]), "ScalarList"), S(1), S(0), S(s), S(1)]):
                with g.op(tid, "aten::zeros", [S(str([1, s, h]), "ScalarList"), S(6), N, S(0), N]):
                    g.leaf(tid, "aten::empty", [S(str([1, s, h]), "ScalarList"), S(6), N, S(0), N, N], us=2.0)
                    with g.op(tid, "aten::zero_", [T([1, s, h])]):
                        with g.op(tid, "aten::fill_", [T([1, s, h]), S(0)]):
                            g.elementwise(tid, K_FILL, s * h, s * h * 4)
                g.leaf(tid, "aten::slice", [T([1, s, h]), S(1), S(0), S(s), S(1)], us=3.0)
                with g.op(tid, "aten::copy_", [T([1, s, h]), T([1, s, h]), S("False")]):
                    g.elementwise(tid, K_COPY_F32, s * h, s * h * 8)
        elif name == "EmbeddingBackward0":
            with g.op(tid, "aten::embedding_backward", [T([b, s, h]), T([b, s], I64, [s + 1, 1]), S(V), S(-1), S("False"),
                                                        S("False")]):
                with g.op(tid, "aten::embedding_dense_backward", [T([b, s, h]), T([b, s], I64, [s + 1, 1]), S(V), S(-1),
                                                                  S("False")], pre=10.0):
                    for kname, nbytes in (
                        ("void at::cuda::cub::(anonymous namespace)::transform_vals<long, long, "
                         "at::cuda::cub::(anonymous namespace)::sum_functor>(long const*, long*, long)", T_ * 16),
                        ("void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::"
                         "DeviceRadixSortPolicy<long, long, int>::Policy900, false, long, long, int, int, "
                         "at_cuda_detail::cub::detail::identity_decomposer_t>(int*, int*, long const*, long*, long "
                         "const*, long*, int, int, int, at_cuda_detail::cub::detail::identity_decomposer_t)", T_ * 32),
                        ("void at::native::(anonymous namespace)::krn_partials_per_segment<long>(long*, long const*, "
                         "long, long)", T_ * 8),
                        ("void at::native::(anonymous namespace)::compute_grad_weight<float, float, long>(long const*, "
                         "float const*, long const*, long, long, long const*, long const*, at::AccType<float>::type*, "
                         "long)", T_ * h * 4),
                    ):
                        g.kernel(tid, kname, g.mem_us(nbytes), (max(1, T_ // 256), 1, 1), (256, 1, 1), regs=40)
                    with g.op(tid, "aten::zeros", [S(str([V, h]), "ScalarList"), S(6), N, S(0), N]):
                        with g.op(tid, "aten::zero_", [T([V, h])]):
                            with g.op(tid, "aten::fill_", [T([V, h]), S(0)]):
                                g.elementwise(tid, K_FILL, V * h, V * h * 4)
                    g.kernel(tid, "void at::native::(anonymous namespace)::sum_and_scatter<float, float, long>(long "
                             "const*, float*, long, long const*, long const*, at::AccType<float>::type const*, long "
                             "const*, long const*, long, long)", g.mem_us(T_ * h * 8), (max(1, T_ // 8), 1, 1),
                             (32, 8, 1), regs=40)
        return after


def write_trace(path, layers, hidden, heads, batch, microbatches, seq=1024, vocab=32000, steps=3, gpu="h200",
                nccl_kernels=False):
    """Writes the gzipped Kineto trace of record_gpt_traces.py's job at this configuration.

    Deterministic: the same arguments give the same bytes. Returns the
    measured step times in microseconds (each `ProfilerStep#N` span)."""
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    g = _Gen(gpu, nccl_kernels)
    model = _Model(g, layers, hidden, heads, batch, microbatches, seq, vocab)
    buckets = None
    step_times = []
    # the job before the profiler's active steps created this many autograd nodes
    g.seq = 1000 + 5 * microbatches * (30 * layers + 20)
    for step in range(2, 2 + steps):
        with g.anno(MAIN, f"ProfilerStep#{step}", pre=30.0, post=4.0) as st:
            for mb in range(microbatches):
                sync = mb == microbatches - 1
                # x, y = data[m, :, :-1], data[m, :, 1:]
                dims = [microbatches, batch, seq + 1]
                for lo, hi in ((0, seq), (1, seq + 1)):
                    with g.op(MAIN, "aten::select", [T(dims, I64), S(0), S(mb)]):
                        g.leaf(MAIN, "aten::as_strided", [T(dims, I64), S(str([batch, seq + 1]), "ScalarList"),
                                                          S(str([seq + 1, 1]), "ScalarList"), N], us=1.5)
                    with g.op(MAIN, "aten::slice", [T([batch, seq + 1], I64), S(1), S(lo), S(hi), S(1)]):
                        g.leaf(MAIN, "aten::as_strided", [T([batch, seq + 1], I64), S(str([batch, seq]), "ScalarList"),
                                                          S(str([seq + 1, 1]), "ScalarList"), N], us=1.5)
                g.tick(MAIN, 18.0)  # entering no_sync and autocast
                with g.anno(MAIN, f"microbatch{mb}", pre=25.0, post=3.0):
                    model.forward()
                    # the main thread hands the graph to the device thread and blocks until it is done
                    g.clock[AUTOGRAD] = max(g.clock[AUTOGRAD], g.clock[MAIN] + 12.0)
                    if buckets is None and sync:
                        # DDP rebuilt its buckets in gradient-ready order after the first iteration
                        probe = _Backward(model, False, True, None, model.bwd)
                        # the probe leaves no trace: every piece of state it moves is put back, the launch
                        # queues too (their far-future starts made the first step's launches return mid-kernel)
                        saved = (list(g.events), list(g.gpu_events), dict(g.clock), dict(g.stream), g.ext, g.corr,
                                 g.ev_idx, g.cuda_event, g.seq, dict(g.recorded),
                                 {s: deque(q) for s, q in g.queued.items()})
                        probe.run()
                        order = probe.ready_order
                        (g.events, g.gpu_events, g.clock, g.stream, g.ext, g.corr, g.ev_idx, g.cuda_event, g.seq,
                         g.recorded, g.queued) = saved
                        buckets = _buckets(order, model.params)
                    bw = _Backward(model, sync, mb == 0, buckets if sync else None, model.bwd)
                    bw.run()
                    g.clock[MAIN] = max(g.clock[MAIN], g.clock[AUTOGRAD] + 8.0)
            with g.anno(MAIN, "optimizer", pre=8.0, post=3.0):
                optimizer_step(g, model)
                with g.anno(MAIN, "Optimizer.zero_grad#AdamW.zero_grad", pre=20.0, post=5.0):
                    g.tick(MAIN, 15.0 * len(model.params) / 10)
            g.tick(MAIN, 6.0)
            item(g)
            g.tick(MAIN, 10.0)
        step_times.append(st["ev"]["dur"])
        g.tick(MAIN, 2.0)  # prof.step() between the steps
    _write(path, g, gpu)
    return step_times


def optimizer_step(g: _Gen, model: _Model):
    ps = list(model.params.values())
    tid = MAIN
    with g.anno(tid, "Optimizer.step#AdamW.step", pre=60.0, post=8.0):
        g.tick(tid, 1.2 * len(ps))  # grouping tensors by device and dtype
        with g.op(tid, "aten::_foreach_add_", [TL([[]] * len(ps)), S(1)]):
            for i in range(0, len(ps), 110):
                g.kernel(tid, K_FOREACH_ADD, 3.0, (min(110, len(ps) - i), 1, 1), (512, 1, 1), regs=24)
        shapes = [p.shape for p in ps]
        args = [TL(shapes)] * 4 + [TL([[]] * len(ps)), S(0.0001), S(0.9), S(0.999), S(0.01), S(1e-08), S("False"),
                                   S("False"), N, N]
        with g.op(tid, "aten::_fused_adamw_", args, pre=20.0):
            # multi_tensor_apply: at most 36 tensors and 320 chunks of 65536 elements per launch
            launches, tensors, chunks, numel = [], 0, 0, 0
            for p in ps:
                c = math.ceil(p.numel / 65536)
                while c > 0:
                    take = min(c, 320 - chunks)
                    chunks += take
                    c -= take
                    numel += min(p.numel, take * 65536)
                    if chunks == 320:
                        launches.append((chunks, numel))
                        chunks, numel, tensors = 0, 0, 0
                if chunks:
                    tensors += 1
                    if tensors == 36:
                        launches.append((chunks, numel))
                        chunks, numel, tensors = 0, 0, 0
            if chunks:
                launches.append((chunks, numel))
            for chunks, numel in launches:
                g.kernel(tid, K_ADAM, g.mem_us(numel * 28), (chunks, 1, 1), (512, 1, 1), regs=96)
                g.tick(tid, 3.0)


def item(g: _Gen):
    tid = MAIN
    with g.op(tid, "aten::item", [T([])], pre=4.0):
        with g.op(tid, "aten::_local_scalar_dense", [T([])], pre=5.0):
            # a copy into pageable memory returns only once done: the host waits here for the GPU to drain
            rt = g._runtime(tid, "cudaMemcpyAsync", 0.0)
            c = rt["args"]["correlation"]
            start = _r(max(rt["ts"] + 5.0, g.stream[COMPUTE]))
            g.stream[COMPUTE] = _r(start + 1.5)
            rt["dur"] = g.stream[COMPUTE] + 3.5 - rt["ts"]
            g.clock[tid] = rt["ts"] + rt["dur"] + 0.5
            g.gpu_events.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0,
                                 "tid": COMPUTE, "ts": start, "dur": 1.5,
                                 "args": {"External id": rt["args"]["External id"], "device": 0, "context": 1,
                                          "stream": COMPUTE, "correlation": c, "bytes": 4,
                                          "memory bandwidth (GB/s)": 0.002667}})
            g._flow(tid, rt["ts"], COMPUTE, start, c)
            ts = g.clock[tid]
            end = max(ts + 3.0, g.stream[COMPUTE] + 2.5)
            sync = g._runtime(tid, "cudaStreamSynchronize", end - ts)
            g.clock[tid] = end + 0.5
            sc = sync["args"]["correlation"]
            g.gpu_events.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": COMPUTE,
                                 "ts": ts + 1.0, "dur": end - ts - 1.5,
                                 "args": {"External id": sync["args"]["External id"], "cuda_sync_kind": "Stream Sync",
                                          "stream": COMPUTE, "correlation": sc, "device": 0, "context": 1}})
            g._flow(tid, ts, COMPUTE, ts + 1.0, sc)


def _write(path, g: _Gen, gpu):
    name, sms, mem = GPUS[gpu][:3]
    meta = []
    mts = _r(T0 + 100.0)

    def m(name_, pid, tid, args):
        meta.append({"name": name_, "ph": "M", "ts": mts, "pid": pid, "tid": tid, "args": args})

    m("process_name", PID, 0, {"name": "python3"})
    m("process_labels", PID, 0, {"labels": "CPU"})
    m("process_sort_index", PID, 0, {"sort_index": PID})
    for dev in range(16):
        m("process_name", dev, 0, {"name": "python3"})
        m("process_labels", dev, 0, {"labels": f"GPU {dev}"})
        m("process_sort_index", dev, 0, {"sort_index": 5000000 + dev})
    for s in (COMPUTE, NCCL):
        m("thread_name", 0, s, {"name": f"stream {s} "})
        m("thread_sort_index", 0, s, {"sort_index": s})
    m("thread_name", PID, MAIN, {"name": f"thread {MAIN} (pt_main_thread)"})
    m("thread_sort_index", PID, MAIN, {"sort_index": MAIN})
    m("thread_name", PID, AUTOGRAD, {"name": f"thread {AUTOGRAD} (pt_autograd_0)"})
    m("thread_sort_index", PID, AUTOGRAD, {"sort_index": AUTOGRAD})
    events = []
    for e in g.events + g.gpu_events:
        e = dict(e)
        e["ts"] = _r(e["ts"])
        if "dur" in e:
            e["dur"] = _r(e["dur"])
        events.append(e)
    end = max(e["ts"] + e.get("dur", 0) for e in events)
    events += meta
    events.append({"ph": "X", "cat": "Trace", "ts": _r(T0), "dur": _r(end - T0 + 50.0), "pid": "Spans",
                   "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}})
    events.append({"name": "process_sort_index", "ph": "M", "ts": _r(T0), "pid": "Spans", "tid": 0,
                   "args": {"sort_index": 536870912}})
    events.append({"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
                   "tid": "Trace PyTorch Profiler", "ts": _r(T0)})
    events.append({"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": _r(end + 60.0)})
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": name, "totalGlobalMem": mem, "computeMajor": 9, "computeMinor": 0,
                              "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
                              "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": sms,
                              "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448,
                              "sharedMemPerMultiprocessor": 233472}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1, "pg_count": 1,
                            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                           "pg_size": 1, "ranks": [0]}], "nccl_version": "2.21.5"},
        "cuda_runtime_version": 12040,
        "cupti_version": 22,
        "record_shapes": 1,
        "cuda_driver_version": 12080,
        "trace_id": "5C0FFEE0D15EA5E0000000000000%04X" % (hash_config(g) & 0xFFFF),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1765000000000000000,
        "traceEvents": events,
        "traceName": str(path).rsplit("/", 1)[-1].replace(".gz", ""),
    }
    # no file name or time in the gzip header: the same configuration gives the same bytes
    with open(path, "wb") as raw, gzip.GzipFile("", "wb", compresslevel=6, fileobj=raw, mtime=0) as f:
        f.write(json.dumps(doc).encode())


def hash_config(g: _Gen) -> int:
    """A deterministic number from the trace's size (no randomness)."""
    return (len(g.events) * 2654435761 + len(g.gpu_events)) & 0xFFFFFFFF


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--microbatches", type=int, default=1)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--gpu", choices=sorted(GPUS), default="h200")
    ap.add_argument("--nccl-kernels", action="store_true")
    a = ap.parse_args()
    times = write_trace(a.out, a.layers, a.hidden, a.heads, a.batch, a.microbatches, a.seq, a.vocab, a.steps, a.gpu,
                        a.nccl_kernels)
    print(" ".join(f"{t / 1000:.3f}" for t in times), "ms per step")


if __name__ == "__main__":
    main()
