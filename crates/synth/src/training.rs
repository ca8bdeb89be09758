//! How the framework trains: precision, activation recomputation, the
//! attention implementation, gradient reduction, pipeline transfers, and
//! what the profiler records. Defaults are a current Megatron-core recipe
//! (each default says which).

pub use lumos_models::Precision;

/// Activation recomputation (Korthikanti et al., "Reducing Activation
/// Recomputation in Large Transformer Models", section 4 and 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Recompute {
    /// Every activation is kept (Megatron's default).
    None,
    /// The attention core (scores, softmax, dropout, weighted values) is
    /// recomputed before its backward; with flash attention the kernel
    /// does that by itself, so it costs nothing more.
    Selective,
    /// Every transformer layer is run forward again before its backward
    /// (Megatron's `--recompute-granularity full --recompute-method
    /// uniform --recompute-num-layers 1`, SC21's
    /// `--activations-checkpoint-method uniform`).
    Full,
}

impl Recompute {
    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }

    /// Parses [`Recompute::name`].
    pub fn from_name(s: &str) -> Option<Recompute> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Some(Recompute::None),
            "selective" => Some(Recompute::Selective),
            "full" => Some(Recompute::Full),
            _ => None,
        }
    }
}

/// The self-attention core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Attention {
    /// One fused kernel forward and three backward (flash attention, or
    /// Transformer Engine's fused attention): the default since 2023.
    Flash,
    /// Megatron's 2021-2022 core attention: a batched GEMM for the scores,
    /// the fused scale-mask-softmax kernel, dropout on the probabilities
    /// and a batched GEMM with the values, each reading and writing the
    /// `heads x s x s` scores in HBM.
    Unfused,
}

/// When data-parallel gradients are reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GradSync {
    /// Bucket by bucket during the last micro-batch's backward, as buckets
    /// fill (Megatron-core `--overlap-grad-reduce`, PyTorch DDP).
    Overlapped,
    /// All buckets after the pipeline has drained, before the optimizer
    /// (Megatron's 2021 "local" DDP, the DeepSpeed pipeline engine,
    /// Korthikanti et al.'s DP runs: "we do not use any overlapping of
    /// gradient all-reduces with back-propagation").
    AfterBackward,
}

/// Numeric format of the data-parallel gradient reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GradDtype {
    /// Half-width gradients (BF16 or FP16, as the parameters).
    Half,
    /// FP32 main gradients (Megatron's
    /// `--accumulate-allreduce-grads-in-fp32`).
    Fp32,
}

/// How the job trains and what its profiler writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Training {
    /// GEMM precision (default BF16).
    pub precision: Precision,
    /// Activation recomputation (default none, Megatron's default).
    pub recompute: Recompute,
    /// Attention implementation (default flash).
    pub attention: Attention,
    /// When gradients are reduced (default overlapped, as Megatron-core
    /// runs with `--overlap-grad-reduce`).
    pub grad_sync: GradSync,
    /// Format of the reduced gradients (default half width: Megatron-core
    /// and NeMo reduce in the parameter type unless told otherwise).
    pub grad_dtype: GradDtype,
    /// With the distributed optimizer, whether the parameter all-gathers
    /// overlap the next iteration's forward (default on,
    /// `--overlap-param-gather`) or finish inside the optimizer step.
    pub overlap_param_gather: bool,
    /// Pipeline partitioning counts the embedding and the output layer as
    /// one transformer layer each (Megatron-DeepSpeed's
    /// `--pp-partition-method type:transformer|embedding`); default off
    /// (Megatron: layers only).
    pub embedding_as_layer: bool,
    /// SC21's scatter/gather optimization: without sequence parallelism,
    /// each tensor-parallel rank sends 1/tp of the activation to the next
    /// stage, which all-gathers it over NVLink. Default off (it only
    /// applies without sequence parallelism).
    pub p2p_scatter_gather: bool,
    /// Tensor-parallel all-gathers and reduce-scatters run under the
    /// GEMMs next to them (Transformer Engine's userbuffers,
    /// `tp_comm_overlap` in NeMo's performance recipes), so compute does
    /// not wait for them; default off (Megatron's default).
    pub tp_comm_overlap: bool,
    /// Pipeline sends do not hold the compute stream, and no device
    /// synchronization follows them (Megatron's `overlap_p2p_comm`). It
    /// applies to the interleaved schedule only: Megatron-LM forces it off
    /// for the plain one ("non-interleaved schedule does not support
    /// overlapping p2p communication", `megatron/training/arguments.py`),
    /// and so does the synthesizer. Default on, as Megatron-LM's since
    /// October 2023 (the flag became `--no-overlap-p2p-communication`);
    /// from May to October 2023 it was opt-in, and before May 2023 it did
    /// not exist, so rows of older runs turn it off. Without it the
    /// interleaved schedule needs more than two stages, with it more than
    /// one ([`lumos_models::interleaved_stages_check`], Megatron-LM's rule).
    pub p2p_overlap: bool,
    /// `torch.cuda.synchronize()` after every batched pipeline transfer,
    /// "to protect against race condition when using
    /// batch_isend_irecv()": the CPU waits for every stream, the
    /// data-parallel one included, before it launches the next pass.
    /// Megatron-LM's `_communicate` did it unconditionally from February
    /// 2021 (`megatron/p2p_communication.py`) to May 2023; since then
    /// Megatron-core does it when `batch_p2p_comm and batch_p2p_sync`,
    /// where `batch_p2p_sync` defaults to True with no flag to turn it off
    /// and `batch_p2p_comm = not overlap_p2p_comm`
    /// (`megatron/training/argument_utils.py`), and the non-interleaved
    /// schedule forces `overlap_p2p_comm` off, so Megatron runs the plain
    /// 1F1B with it. It has no effect where [`Training::p2p_overlap`]
    /// applies (an interleaved schedule; Megatron-core refuses both: "Can not use both overlap_p2p_comm and
    /// batch_p2p_comm"), nor without pipeline parallelism; the DeepSpeed
    /// pipeline engine's blocking `send`/`recv` do not synchronize.
    /// Default on, as Megatron's (`lumos predict` copies the
    /// synchronization with the transfer it follows; docs/SYNTH.md,
    /// "Pipeline transfers").
    pub p2p_sync: bool,
    /// `CUDA_LAUNCH_BLOCKING=1`: every kernel launch returns only when its
    /// kernel has finished, so the CPU never runs ahead and no stream
    /// overlaps another (BLOOM's production script sets it: "do not
    /// remove or the training will hang"); default off.
    pub launch_blocking: bool,
    /// Write `cuda_sync` events (the profiler's
    /// `enable_cuda_sync_events`); default on. Most exporters do not.
    pub cuda_sync_events: bool,
    /// Write `cudaEventRecord` runtime events; default on. Some exporters
    /// drop them (method.md section 7).
    pub event_records: bool,
    /// Write `cudaStreamWaitEvent` runtime events; default on. Many
    /// exporters and frameworks record none, so with `cuda_sync_events`
    /// and `event_records` off nothing in the trace shows which stream
    /// waited for which (the stream still waits: only the record goes).
    pub stream_waits: bool,
}

impl Default for Training {
    fn default() -> Training {
        Training {
            precision: Precision::Bf16,
            recompute: Recompute::None,
            attention: Attention::Flash,
            grad_sync: GradSync::Overlapped,
            grad_dtype: GradDtype::Half,
            overlap_param_gather: true,
            embedding_as_layer: false,
            p2p_scatter_gather: false,
            tp_comm_overlap: false,
            p2p_overlap: true,
            p2p_sync: true,
            launch_blocking: false,
            cuda_sync_events: true,
            event_records: true,
            stream_waits: true,
        }
    }
}
