//! Synthetic PyTorch profiler (Kineto) traces of a Megatron-LM GPT training
//! iteration, one file per rank, with durations from analytic models.
//!
//! The traces stand in for real ones where the corpus has none: large
//! models, many ranks, other GPUs. They are built to exercise every part of
//! the lumos pipeline (reader, graph builder, simulator, metrics) with the
//! structure a real Megatron job has, and they are consistent by
//! construction: every GPU start is derived from the dependencies the trace
//! records, so replaying a synthesized trace reproduces it.
//!
//! # Overview
//!
//! - The durations come from `lumos-models`: [`Hardware`] (GEMMs by shape
//!   at a fitted fraction of each GPU's peak, flash and unfused attention,
//!   memory-bound kernels), [`NetworkModel`] (alpha-beta NCCL rings over
//!   NVLink inside a node of eight and over every NIC of a node across
//!   nodes), [`GpuSpec`] and [`Cluster`] presets, and the pipeline
//!   schedules [`one_f_one_b`] and [`interleaved_one_f_one_b`]. Callers
//!   import them from there; this crate re-exports only [`Precision`].
//! - [`ModelPreset`], [`Parallelism`], [`Training`], [`SynthConfig`]: what
//!   to synthesize: the model's shape, the layout and batch, the recipe
//!   (precision, recomputation, attention, gradient reduction, what the
//!   profiler writes), the GPU and network.
//! - [`synthesize_rank`] / [`write_rank`]: one rank's trace as JSON text;
//!   [`write_job`]: the selected [`Ranks`] as `rank<N>.json.gz` files
//!   ([`write_job_with`] reports each file as it lands);
//!   [`step_times`]: the step times those files show, without writing
//!   them; [`layer_times`]: one layer's forward and backward.
//! - [`published`]: published training runs as configurations, the
//!   synthesized step of each, and the fit of the free parameters
//!   (docs/SYNTH-VALIDATION.md).
//!
//! [`Hardware`]: lumos_models::Hardware
//! [`NetworkModel`]: lumos_models::NetworkModel
//! [`GpuSpec`]: lumos_models::GpuSpec
//! [`Cluster`]: lumos_models::Cluster
//! [`one_f_one_b`]: lumos_models::one_f_one_b
//! [`interleaved_one_f_one_b`]: lumos_models::interleaved_one_f_one_b
//!
//! ```
//! use lumos_models::GpuSpec;
//! use lumos_synth::{synthesize_rank, ModelPreset, Parallelism, SynthConfig};
//!
//! let cfg = SynthConfig::new(
//!     ModelPreset::preset("gpt-tiny").unwrap(),
//!     Parallelism::new(2, 2, 2, 4),
//!     GpuSpec::h100(),
//! );
//! let json = synthesize_rank(&cfg, 0).unwrap();
//! assert!(json.contains("\"ProfilerStep#2\""));
//! assert!(json.contains("ncclDevKernel_AllGather_RING_LL"));
//! ```
//!
//! # What a rank's trace holds
//!
//! Each of `steps` iterations is a `ProfilerStep#N` annotation on the main
//! thread containing, in order:
//!
//! 1. zeroing of the gradient buffer;
//! 2. the 1F1B schedule of the rank's pipeline stage `s` of `P` with `M`
//!    micro-batches: `w = min(P - s - 1, M)` warm-up forwards, then one
//!    forward and one backward alternately, then `w` cool-down backwards
//!    (see [`one_f_one_b`]); with `v` model chunks per stage, Megatron's
//!    interleaved order over virtual stages (see
//!    [`interleaved_one_f_one_b`]). Before a forward, every virtual stage
//!    but the first receives the activation from the previous one; after
//!    it, every one but the last sends it on. Before a backward, the
//!    gradient comes back from the next virtual stage; after it, it goes to
//!    the previous one. Each transfer is a `c10d::send` / `c10d::recv_` on
//!    the communicator stream of that pair of stages, and the compute
//!    stream waits for it (Megatron waits on every request; in the
//!    interleaved schedule, with [`Training::p2p_overlap`] as Megatron-LM's
//!    default, only for receives). `Seq` counts per peer
//!    and direction, so the n-th send of a rank and the n-th receive of
//!    its peer carry the same (`Src Rank`, `Dst Rank`, `Seq`);
//! 3. per micro-batch forward (main thread): data loading and host-to-
//!    device copies on the first and last stage, the vocabulary-parallel
//!    embedding on the first, then per layer: layer norm, column-parallel
//!    QKV GEMM (grouped-query: fewer key/value heads), flash attention or
//!    Megatron's unfused core (batched score GEMM, fused masked softmax,
//!    dropout, batched GEMM with the values), row-parallel projection,
//!    dropout and residual add, layer norm, column-parallel FC1, GELU (or
//!    SwiGLU), row-parallel FC2, dropout and add; with FP8, Transformer
//!    Engine's cast of every GEMM input; on the last stage the final layer
//!    norm, the
//!    output layer and vocabulary-parallel cross entropy (with its three
//!    tensor-parallel all-reduces). GEMMs are `aten::matmul` / `aten::mm`
//!    with `Input Dims` and `Input type`;
//! 4. per micro-batch backward on PyTorch's autograd thread, the mirror
//!    image: `autograd::engine::evaluate_function: ...` nodes, data- and
//!    weight-gradient GEMMs, the attention backward; with full
//!    recomputation each layer's forward again first (in a
//!    `CheckpointFunctionBackward`), with selective recomputation the
//!    unfused attention core's; in each chunk's last micro-batch the
//!    data-parallel gradient reduction: parameters fill 40M-element buckets
//!    in backward order, and each full bucket is scaled and all-reduced (or
//!    reduce-scattered with the distributed optimizer) in BF16 (or FP32,
//!    [`GradDtype`]) on the data-parallel stream while backward goes on
//!    (or, with [`GradSync::AfterBackward`], all after the pipeline);
//! 5. `finish_grad_sync` (the compute stream waits for every bucket), the
//!    gradient norm (multi-tensor L2 norm, a model-parallel all-reduce that
//!    waits for the slowest stage, `.item()` with a `cudaStreamSynchronize`),
//!    clipping, FusedAdam and the copy to BF16 parameters as multi-tensor-
//!    apply kernels (with the distributed optimizer, asynchronous
//!    parameter all-gathers per bucket, which the next iteration waits for
//!    before its first forward);
//! 6. a `cudaDeviceSynchronize`, so the step ends when the GPU is done.
//!
//! Tensor parallelism follows Megatron: with sequence parallelism (the
//! default when `tp > 1`) each column-parallel GEMM is preceded by an
//! all-gather and each row-parallel GEMM followed by a reduce-scatter; in
//! backward the column-parallel input all-gather overlaps the data-gradient
//! GEMM and the gradient reduce-scatter overlaps the weight-gradient GEMM.
//! Without it, the row-parallel outputs are all-reduced. Every collective is
//! issued as ProcessGroupNCCL does: a `c10d::*` op with a
//! `record_param_comms` child carrying the collective args; a
//! `cudaEventRecord` on the compute stream and `cudaStreamWaitEvent` on the
//! communicator's stream (with the `cuda_sync` "Stream Wait Event" that
//! names them); the `ncclDevKernel_*` kernel with the same args; an end
//! event that the compute stream waits on when the result is needed.
//! [`Training::cuda_sync_events`] and [`Training::event_records`] leave
//! out the `cuda_sync` events and the `cudaEventRecord` calls, as most
//! exporters do, and [`Training::stream_waits`] the `cudaStreamWaitEvent`
//! calls too; timing is the same.
//!
//! Streams: compute 7, tensor-parallel 20, data-parallel 24, previous
//! stage 28, next stage 32, model-parallel 36. Every launch has a
//! `cudaLaunchKernel` (correlation, `External id` of the enclosing op) and
//! an `ac2g` flow to its kernel.
//!
//! File level: `deviceProperties` (the eight GPUs of a node),
//! `distributedInfo` (rank, world size, `pg_config` with the default,
//! data-, tensor-, pipeline- and model-parallel groups this rank belongs
//! to), `baseTimeNanoseconds`, times as microseconds with three decimals,
//! thread and stream names, a `lumos_synth` object with the parameters, and
//! the final `Record Window End` instant.
//!
//! # Timing, and what is assumed
//!
//! - Kernel durations come from `lumos-models` ([`SynthConfig::hardware`],
//!   [`SynthConfig::network`]) with seeded noise (3-4% on GPU work). CPU
//!   costs are fixed ranges with noise: a few microseconds per op and
//!   runtime call, tens between modules, rare long stalls. docs/SYNTH.md
//!   says where every number comes from and how the synthesized steps
//!   compare with published runs.
//! - A kernel starts at the latest of its launch call's start plus a launch
//!   latency (~6.5 us), the end of the previous work on its stream plus
//!   1-2 us, and the completion of the events its stream waits for. The
//!   CPU does not wait for the GPU, so with large models it runs ahead
//!   until the launch queue (1024 entries) is full; then
//!   `cudaLaunchKernel` blocks until a queued kernel finishes, and the
//!   step-end synchronization absorbs the rest. Small models are CPU-bound.
//! - Rank order is Megatron's: tensor-parallel index fastest, then data-
//!   parallel, then pipeline stage: `rank = pp * dp_size * tp_size +
//!   dp * tp_size + tp` ([`Parallelism::coord`]). Nodes hold eight
//!   consecutive ranks, so a group inside one node communicates over
//!   NVLink, any other over the nodes' NICs.
//! - The ranks of a job are timed together (a lockstep plan): every rank
//!   of a stage draws the same noise, so tensor- and data-parallel peers
//!   reach their collectives together, and the stages of a pipeline are
//!   run pass by pass, each receive ending when the matching send in the
//!   peer's own timeline started plus the transfer, and the gradient-norm
//!   all-reduce when the last stage reaches it. Replaying all the ranks
//!   of a job together therefore reproduces each rank's trace, and
//!   [`step_times`] is exactly what the files show.
//! - Linear layers have no biases; the embedding is shared with the output
//!   layer (the last stage holds a copy when `pp > 1`, whose gradient
//!   all-reduce between first and last stage is not written); data loading
//!   does not broadcast over the tensor-parallel group; ZeRO-2/3, FSDP,
//!   context and expert parallelism, MoE and CUDA graphs are not
//!   modelled.
#![deny(missing_docs)]

mod config;
mod gen;
mod job;
mod lockstep;
mod megatron;
pub mod published;
mod rng;
mod size;
mod training;

pub use config::{
    GroupKind, HostClocks, ModelPreset, Parallelism, ProcessGroup, RankCoord, Ranks, SynthConfig,
};
pub use job::{rank_file_name, synthesize_rank, write_job, write_job_with, write_rank, SynthError};
pub use lockstep::{layer_times, step_times, StepTimes};
pub use size::{check_size, SizeRefusal, MAX_RANK_BYTES, MAX_WORLD_SIZE};
pub use training::{Attention, GradDtype, GradSync, Precision, Recompute, Training};
