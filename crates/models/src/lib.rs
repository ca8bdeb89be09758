//! Duration models for lumos: how long a GEMM, a memory-bound kernel or an
//! NCCL collective takes on a given GPU, the GPU presets they are built
//! from, and the 1F1B pipeline schedule.
//!
//! The models are deliberately small and analytic so that they can be
//! calibrated on a trace's own kernels (method.md section 6) and reused to
//! predict durations after a graph edit. `lumos-synth` uses them to write
//! synthetic traces and `lumos-predict` to re-time edited graphs; this
//! crate knows nothing of traces or graphs: numbers in, nanoseconds out.
//!
//! # Overview
//!
//! - [`GemmModel`]: `time = flops / (peak * efficiency(flops))` with the
//!   saturating efficiency `efficiency(f) = max_eff * f / (f + half_flops)`
//!   ([`gemm_flops`] counts a matrix product's FLOPs). Small GEMMs cannot
//!   fill the GPU (tile quantization, launch and prologue cost), large ones
//!   approach `max_eff`. The curve is equivalent to
//!   `time = (flops + half_flops) / (peak * max_eff)`, a fixed cost plus a
//!   rate, which is why [`GemmModel::fit`] is a straight-line fit.
//! - [`MemoryModel`]: a fixed cost plus bytes over an effective HBM
//!   bandwidth, for element-wise, normalization and optimizer kernels.
//! - [`NetworkModel`]: alpha-beta model of NCCL ring algorithms. A
//!   collective ([`CollectiveKind`]) over `n` ranks moves
//!   `traffic_factor * bytes` through the slowest [`Link`] of the ring
//!   (all-reduce `2(n-1)/n`, all-gather and reduce-scatter `(n-1)/n`,
//!   send/recv `1`), and pays a per-hop latency for each of its `2(n-1)` or
//!   `n-1` ring steps plus a fixed launch cost. A group inside one node of
//!   [`NetworkModel::gpus_per_node`] GPUs uses NVLink; a group that spans
//!   nodes is bound by the per-GPU InfiniBand link.
//! - [`GpuSpec`]: presets for A100, H100, H200 and B200, and V100, MI250
//!   and MI300X for recognising traces (each number says
//!   where it comes from), and the three models above for each;
//!   [`UnknownPreset`] when a name is not one of them.
//! - [`Hardware`]: the calibrated models the synthesizer times kernels
//!   with ([`TiledGemm`]: GEMMs by shape at a fitted fraction of the peak
//!   of each [`Precision`]; [`FlashAttention`]), and [`Cluster`] presets:
//!   a GPU with the network of a published machine (Selene, Jean Zay,
//!   DGX H100/H200/B200), whose rings spread over every NIC of a node.
//! - [`one_f_one_b`]: the order of forward and backward [`Pass`]es on one
//!   stage of a 1F1B pipeline; [`interleaved_one_f_one_b`] the same with
//!   several model chunks per stage ([`ChunkPass`]).
//! - [`RankLayout`]: Megatron's rank order and process groups
//!   ([`RankLayout::groups_of`], named as PyTorch creates them), which
//!   the synthesizer writes and the predictor places a predicted job in.
//!
//! Every time is in nanoseconds as `f64`; callers round.
//!
//! ```
//! use lumos_models::{gemm_flops, CollectiveKind, GpuSpec};
//!
//! let h100 = GpuSpec::preset("h100").unwrap();
//! // A 4096^3 BF16 GEMM: a few hundred microseconds.
//! let gemm_ns = h100.gemm().time_ns(gemm_flops(4096, 4096, 4096));
//! assert!((100_000.0..500_000.0).contains(&gemm_ns));
//! // All-reducing 64 MiB over the eight GPUs of a node beats doing it over
//! // eight nodes.
//! let node: Vec<usize> = (0..8).collect();
//! let nodes: Vec<usize> = (0..8).map(|i| i * 8).collect();
//! let net = h100.network;
//! let inside = net.collective_time_ns(CollectiveKind::AllReduce, 64 << 20, &node);
//! let across = net.collective_time_ns(CollectiveKind::AllReduce, 64 << 20, &nodes);
//! assert!(inside < across);
//! ```
#![deny(missing_docs)]

mod cluster;
mod gemm;
mod gpu;
mod hardware;
mod layout;
mod memory;
mod network;
mod schedule;

pub use cluster::Cluster;
pub use gemm::{gemm_flops, GemmModel};
pub use gpu::{GpuSpec, UnknownPreset};
pub use hardware::{
    FlashAttention, Hardware, Precision, TiledGemm, A100_GEMM_EFFICIENCY, H100_FP8_GEMM_EFFICIENCY,
    H100_GEMM_EFFICIENCY,
};
pub use layout::{GroupKind, ProcessGroup, RankCoord, RankLayout};
pub use memory::MemoryModel;
pub use network::{CollectiveKind, Link, NetworkModel};
pub use schedule::{
    interleaved_one_f_one_b, interleaved_stages_check, one_f_one_b, ChunkPass, Pass,
};
