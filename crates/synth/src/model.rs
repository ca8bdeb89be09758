//! Duration models: how long a GEMM, a memory-bound kernel or an NCCL
//! collective takes on a given GPU, and the GPU presets they are built from.
//!
//! The models are deliberately small and analytic so that they can be
//! calibrated on a trace's own kernels (method.md section 6) and reused to
//! predict durations after a graph edit:
//!
//! - [`GemmModel`]: `time = flops / (peak * efficiency(flops))` with the
//!   saturating efficiency `efficiency(f) = max_eff * f / (f + half_flops)`.
//!   Small GEMMs cannot fill the GPU (tile quantization, launch and prologue
//!   cost), large ones approach `max_eff`. The curve is equivalent to
//!   `time = (flops + half_flops) / (peak * max_eff)`, a fixed cost plus a
//!   rate, which is why [`GemmModel::fit`] is a straight-line fit.
//! - [`MemoryModel`]: bytes over an effective HBM bandwidth, for
//!   element-wise, normalization and optimizer kernels.
//! - [`NetworkModel`]: alpha-beta model of NCCL ring algorithms. A
//!   collective over `n` ranks moves `traffic_factor * bytes` through the
//!   slowest link of the ring (all-reduce `2(n-1)/n`, all-gather and
//!   reduce-scatter `(n-1)/n`, send/recv `1`), and pays a per-hop latency
//!   for each of its `2(n-1)` or `n-1` ring steps plus a fixed launch cost.
//!   A group inside one node of [`NetworkModel::gpus_per_node`] GPUs uses
//!   NVLink; a group that spans nodes is bound by the per-GPU InfiniBand
//!   link.
//!
//! Every time is in nanoseconds as `f64`; callers round.

use std::fmt;
use std::str::FromStr;

/// Floating-point operations of a `[m, k] x [k, n]` matrix product (one
/// multiply and one add per term).
pub fn gemm_flops(m: u64, n: u64, k: u64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64
}

/// GEMM duration from FLOPs and a saturating efficiency curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmModel {
    /// Peak dense throughput in FLOP per ns (TFLOP/s x 1000).
    pub peak_flops_per_ns: f64,
    /// Fraction of peak that very large GEMMs reach.
    pub max_efficiency: f64,
    /// FLOPs at which a GEMM reaches half of `max_efficiency`.
    pub half_flops: f64,
    /// No kernel is shorter than this (launch, prologue, epilogue).
    pub min_ns: f64,
}

impl GemmModel {
    /// Achieved fraction of peak for a GEMM of `flops`.
    pub fn efficiency(&self, flops: f64) -> f64 {
        if flops <= 0.0 {
            return 0.0;
        }
        self.max_efficiency * flops / (flops + self.half_flops)
    }

    /// Duration in ns of a GEMM of `flops`.
    pub fn time_ns(&self, flops: f64) -> f64 {
        if flops <= 0.0 {
            return self.min_ns;
        }
        let t = flops / (self.peak_flops_per_ns * self.efficiency(flops));
        t.max(self.min_ns)
    }

    /// The model scaled to a kernel family that reaches only `factor` of
    /// the GEMM throughput (flash attention, for instance).
    pub fn derated(&self, factor: f64) -> GemmModel {
        GemmModel {
            max_efficiency: self.max_efficiency * factor,
            ..*self
        }
    }

    /// Fits `max_efficiency` and `half_flops` to measured `(flops, ns)`
    /// pairs for a GPU of the given peak, by least squares on
    /// `ns = (flops + half_flops) / (peak * max_eff)` (the curve is a
    /// straight line in these terms). Samples under `min_ns` are ignored
    /// since the floor, not the curve, explains them. Returns `None` with
    /// fewer than two usable samples or a fit that is not physical (negative
    /// slope or intercept).
    pub fn fit(peak_flops_per_ns: f64, min_ns: f64, samples: &[(f64, f64)]) -> Option<GemmModel> {
        let pts: Vec<(f64, f64)> = samples
            .iter()
            .copied()
            .filter(|&(f, t)| f > 0.0 && t > min_ns)
            .collect();
        if pts.len() < 2 {
            return None;
        }
        let n = pts.len() as f64;
        let (sx, sy) = pts
            .iter()
            .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x, b + y));
        let (mx, my) = (sx / n, sy / n);
        let (sxy, sxx) = pts.iter().fold((0.0, 0.0), |(a, b), &(x, y)| {
            (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
        });
        if sxx <= 0.0 {
            return None;
        }
        let slope = sxy / sxx;
        let intercept = my - slope * mx;
        if slope <= 0.0 || intercept < 0.0 {
            return None;
        }
        Some(GemmModel {
            peak_flops_per_ns,
            max_efficiency: 1.0 / (slope * peak_flops_per_ns),
            half_flops: intercept / slope,
            min_ns,
        })
    }
}

/// Duration of a memory-bound kernel from the bytes it reads and writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryModel {
    /// HBM bandwidth in bytes per ns (GB/s).
    pub bytes_per_ns: f64,
    /// Fraction of that bandwidth element-wise kernels reach.
    pub efficiency: f64,
    /// No kernel is shorter than this.
    pub min_ns: f64,
}

impl MemoryModel {
    /// Duration in ns of a kernel moving `bytes`.
    pub fn time_ns(&self, bytes: f64) -> f64 {
        (bytes / (self.bytes_per_ns * self.efficiency)).max(self.min_ns)
    }
}

/// A collective (or point-to-point) communication pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CollectiveKind {
    /// Ring all-reduce; `bytes` is the buffer size.
    AllReduce,
    /// Ring all-gather; `bytes` is the gathered (output) size.
    AllGather,
    /// Ring reduce-scatter; `bytes` is the input size.
    ReduceScatter,
    /// One point-to-point transfer (send or recv); `bytes` is the message.
    SendRecv,
}

impl CollectiveKind {
    /// Fraction of `bytes` each rank pushes through its link in a ring over
    /// `n` ranks: `2(n-1)/n` for all-reduce, `(n-1)/n` for all-gather and
    /// reduce-scatter, 1 for send/recv. Zero for a group of one.
    pub fn traffic_factor(self, n: usize) -> f64 {
        let n = n.max(1) as f64;
        match self {
            CollectiveKind::AllReduce => 2.0 * (n - 1.0) / n,
            CollectiveKind::AllGather | CollectiveKind::ReduceScatter => (n - 1.0) / n,
            CollectiveKind::SendRecv => {
                if n > 1.0 {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }

    /// Ring steps, each paying one hop latency.
    pub fn steps(self, n: usize) -> usize {
        let n = n.max(1);
        match self {
            CollectiveKind::AllReduce => 2 * (n - 1),
            CollectiveKind::AllGather | CollectiveKind::ReduceScatter => n - 1,
            CollectiveKind::SendRecv => usize::from(n > 1),
        }
    }
}

/// One class of link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Per-GPU, per-direction bandwidth in GB/s (= bytes per ns).
    pub bandwidth_gbps: f64,
    /// Fraction of that bandwidth NCCL reaches (bus bandwidth / link).
    pub efficiency: f64,
    /// Latency of one ring step, in us.
    pub hop_latency_us: f64,
}

/// Alpha-beta model of NCCL collectives on a cluster of identical nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkModel {
    /// Link between GPUs of one node (NVLink / NVSwitch).
    pub intra_node: Link,
    /// Link between nodes, per GPU (one InfiniBand NIC per GPU).
    pub inter_node: Link,
    /// GPUs per node; ranks `k * gpus_per_node ..` share node `k`.
    pub gpus_per_node: usize,
    /// Fixed cost of any collective kernel, in us (launch, setup, final
    /// synchronization).
    pub base_latency_us: f64,
}

impl NetworkModel {
    /// True when `ranks` (global ranks) do not all sit on one node.
    pub fn spans_nodes(&self, ranks: &[usize]) -> bool {
        let node = |r: usize| r / self.gpus_per_node.max(1);
        ranks.split_first().is_some_and(|(first, rest)| {
            let n0 = node(*first);
            rest.iter().any(|&r| node(r) != n0)
        })
    }

    /// The link that bounds a ring over `ranks`.
    pub fn link_for(&self, ranks: &[usize]) -> Link {
        if self.spans_nodes(ranks) {
            self.inter_node
        } else {
            self.intra_node
        }
    }

    /// Duration in ns of `kind` moving `bytes` over the group `ranks`
    /// (global ranks; for send/recv the two endpoints). A group of one costs
    /// nothing: Megatron skips such collectives.
    pub fn collective_time_ns(&self, kind: CollectiveKind, bytes: u64, ranks: &[usize]) -> f64 {
        let n = ranks.len();
        if n <= 1 {
            return 0.0;
        }
        let link = self.link_for(ranks);
        let alpha = self.base_latency_us + kind.steps(n) as f64 * link.hop_latency_us;
        let beta = kind.traffic_factor(n) * bytes as f64 / (link.bandwidth_gbps * link.efficiency);
        alpha * 1e3 + beta
    }
}

/// A GPU model and the system around it (one node of eight, one NIC per
/// GPU).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSpec {
    /// Short preset name (`h100`).
    pub name: &'static str,
    /// Name as `deviceProperties` writes it.
    pub device_name: &'static str,
    /// Kernel-name family for GEMMs: `sm80`, `sm90` or `sm100`.
    pub arch: &'static str,
    /// Dense BF16 tensor-core peak, TFLOP/s.
    pub peak_bf16_tflops: f64,
    /// HBM bandwidth, GB/s.
    pub hbm_gbps: f64,
    /// Host-to-device (PCIe) bandwidth, GB/s.
    pub pcie_gbps: f64,
    /// Network.
    pub network: NetworkModel,
    /// GEMM efficiency reached by very large GEMMs.
    pub gemm_max_efficiency: f64,
    /// GEMM size (GFLOP) at half of that efficiency; `half_flops / (peak *
    /// max_eff)` is the fixed cost of any GEMM (about 4 us on every
    /// preset).
    pub gemm_half_gflops: f64,
    /// Flash attention throughput relative to large GEMMs.
    pub attention_efficiency: f64,
    /// Streaming multiprocessors.
    pub num_sms: u32,
    /// Global memory, bytes.
    pub memory_bytes: u64,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
}

/// Why a GPU or model name was not recognized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPreset {
    /// What was asked for.
    pub name: String,
    /// What exists.
    pub known: &'static [&'static str],
}

impl fmt::Display for UnknownPreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown preset {:?} (known: {})",
            self.name,
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownPreset {}

impl GpuSpec {
    /// Names accepted by [`GpuSpec::preset`].
    pub const NAMES: &'static [&'static str] = &["a100", "h100", "h200", "b200"];

    /// NVIDIA A100 SXM4 80GB, NVLink 3 (300 GB/s per direction), HDR
    /// InfiniBand 200 Gb/s per GPU.
    pub fn a100() -> GpuSpec {
        GpuSpec {
            name: "a100",
            device_name: "NVIDIA A100-SXM4-80GB",
            arch: "sm80",
            peak_bf16_tflops: 312.0,
            hbm_gbps: 2039.0,
            pcie_gbps: 25.0,
            network: NetworkModel {
                intra_node: Link {
                    bandwidth_gbps: 300.0,
                    efficiency: 0.78,
                    hop_latency_us: 0.7,
                },
                inter_node: Link {
                    bandwidth_gbps: 25.0,
                    efficiency: 0.9,
                    hop_latency_us: 3.0,
                },
                gpus_per_node: 8,
                base_latency_us: 6.0,
            },
            gemm_max_efficiency: 0.82,
            gemm_half_gflops: 1.0,
            attention_efficiency: 0.6,
            num_sms: 108,
            memory_bytes: 85_899_345_920,
            compute_capability: (8, 0),
        }
    }

    /// NVIDIA H100 SXM5 80GB, NVLink 4 (450 GB/s per direction), NDR
    /// InfiniBand 400 Gb/s per GPU.
    pub fn h100() -> GpuSpec {
        GpuSpec {
            name: "h100",
            device_name: "NVIDIA H100 80GB HBM3",
            arch: "sm90",
            peak_bf16_tflops: 989.0,
            hbm_gbps: 3350.0,
            pcie_gbps: 50.0,
            network: NetworkModel {
                intra_node: Link {
                    bandwidth_gbps: 450.0,
                    efficiency: 0.8,
                    hop_latency_us: 0.6,
                },
                inter_node: Link {
                    bandwidth_gbps: 50.0,
                    efficiency: 0.9,
                    hop_latency_us: 2.5,
                },
                gpus_per_node: 8,
                base_latency_us: 5.0,
            },
            gemm_max_efficiency: 0.72,
            gemm_half_gflops: 3.0,
            attention_efficiency: 0.45,
            num_sms: 132,
            memory_bytes: 85_899_345_920,
            compute_capability: (9, 0),
        }
    }

    /// NVIDIA H200 SXM 141GB: H100 compute with faster, larger HBM3e.
    pub fn h200() -> GpuSpec {
        GpuSpec {
            name: "h200",
            device_name: "NVIDIA H200",
            hbm_gbps: 4800.0,
            gemm_max_efficiency: 0.75,
            memory_bytes: 150_754_820_096,
            ..GpuSpec::h100()
        }
    }

    /// NVIDIA B200, NVLink 5 (900 GB/s per direction), NDR InfiniBand
    /// 400 Gb/s per GPU.
    pub fn b200() -> GpuSpec {
        GpuSpec {
            name: "b200",
            device_name: "NVIDIA B200",
            arch: "sm100",
            peak_bf16_tflops: 2250.0,
            hbm_gbps: 8000.0,
            pcie_gbps: 50.0,
            network: NetworkModel {
                intra_node: Link {
                    bandwidth_gbps: 900.0,
                    efficiency: 0.8,
                    hop_latency_us: 0.5,
                },
                inter_node: Link {
                    bandwidth_gbps: 50.0,
                    efficiency: 0.9,
                    hop_latency_us: 2.5,
                },
                gpus_per_node: 8,
                base_latency_us: 5.0,
            },
            gemm_max_efficiency: 0.7,
            gemm_half_gflops: 6.5,
            attention_efficiency: 0.45,
            num_sms: 148,
            memory_bytes: 193_273_528_320,
            compute_capability: (10, 0),
        }
    }

    /// A preset by name (case-insensitive, `nvidia-` prefix allowed).
    pub fn preset(name: &str) -> Result<GpuSpec, UnknownPreset> {
        let lower = name.to_ascii_lowercase();
        let key = lower.strip_prefix("nvidia-").unwrap_or(&lower);
        match key {
            "a100" => Ok(GpuSpec::a100()),
            "h100" => Ok(GpuSpec::h100()),
            "h200" => Ok(GpuSpec::h200()),
            "b200" => Ok(GpuSpec::b200()),
            _ => Err(UnknownPreset {
                name: name.to_owned(),
                known: GpuSpec::NAMES,
            }),
        }
    }

    /// The GEMM model of this GPU (BF16 tensor cores).
    pub fn gemm(&self) -> GemmModel {
        GemmModel {
            peak_flops_per_ns: self.peak_bf16_tflops * 1e3,
            max_efficiency: self.gemm_max_efficiency,
            half_flops: self.gemm_half_gflops * 1e9,
            min_ns: 3_000.0,
        }
    }

    /// The flash-attention model: the GEMM curve at a lower ceiling.
    pub fn attention(&self) -> GemmModel {
        self.gemm().derated(self.attention_efficiency)
    }

    /// The memory-bound kernel model.
    pub fn memory(&self) -> MemoryModel {
        MemoryModel {
            bytes_per_ns: self.hbm_gbps,
            efficiency: 0.8,
            min_ns: 2_000.0,
        }
    }

    /// Host-to-device copies over PCIe.
    pub fn pcie(&self) -> MemoryModel {
        MemoryModel {
            bytes_per_ns: self.pcie_gbps,
            efficiency: 0.8,
            min_ns: 2_500.0,
        }
    }
}

impl FromStr for GpuSpec {
    type Err = UnknownPreset;
    fn from_str(s: &str) -> Result<GpuSpec, UnknownPreset> {
        GpuSpec::preset(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_traffic_factors() {
        assert_eq!(CollectiveKind::AllReduce.traffic_factor(8), 2.0 * 7.0 / 8.0);
        assert_eq!(CollectiveKind::AllGather.traffic_factor(4), 0.75);
        assert_eq!(CollectiveKind::ReduceScatter.traffic_factor(2), 0.5);
        assert_eq!(CollectiveKind::SendRecv.traffic_factor(2), 1.0);
        assert_eq!(CollectiveKind::AllReduce.traffic_factor(1), 0.0);
        assert_eq!(CollectiveKind::AllReduce.steps(8), 14);
    }

    #[test]
    fn collectives_cost_more_across_nodes_and_for_more_bytes() {
        let net = GpuSpec::h100().network;
        let inside: Vec<usize> = (0..8).collect();
        let across: Vec<usize> = (0..8).map(|i| i * 8).collect();
        let b = 256 << 20;
        let t_in = net.collective_time_ns(CollectiveKind::AllReduce, b, &inside);
        let t_out = net.collective_time_ns(CollectiveKind::AllReduce, b, &across);
        assert!(t_out > 5.0 * t_in, "{t_in} {t_out}");
        let small = net.collective_time_ns(CollectiveKind::AllReduce, 1024, &inside);
        assert!(small > 5_000.0 && small < 20_000.0, "{small}");
        assert_eq!(
            net.collective_time_ns(CollectiveKind::AllReduce, b, &[3]),
            0.0
        );
        // 256 MiB all-reduce on 8 H100s: 2*7/8*256MiB / 360 GB/s ~ 1.3 ms.
        assert!((t_in - 1.3e6).abs() < 0.2e6, "{t_in}");
    }

    #[test]
    fn gemm_efficiency_saturates() {
        let g = GpuSpec::h100().gemm();
        let e1 = g.efficiency(1e9);
        let e2 = g.efficiency(1e11);
        let e3 = g.efficiency(1e13);
        assert!(e1 < e2 && e2 < e3 && e3 < g.max_efficiency);
        assert!(e3 > 0.99 * g.max_efficiency);
        // An 8192^3 GEMM on H100 at ~700 TFLOP/s: ~1.6 ms.
        let t = g.time_ns(gemm_flops(8192, 8192, 8192));
        assert!((t - 1.55e6).abs() < 0.2e6, "{t}");
        // Tiny GEMMs cost the curve's fixed part, half_flops / (peak *
        // max_eff): about 4 us on every preset.
        for gpu in GpuSpec::NAMES {
            let g = GpuSpec::preset(gpu).unwrap().gemm();
            let t = g.time_ns(10.0);
            assert!((3_500.0..5_000.0).contains(&t), "{gpu}: {t}");
        }
    }

    #[test]
    fn gemm_fit_recovers_the_curve() {
        let truth = GpuSpec::a100().gemm();
        let samples: Vec<(f64, f64)> = [1e10, 3e10, 1e11, 5e11, 2e12]
            .iter()
            .map(|&f| (f, truth.time_ns(f)))
            .collect();
        let fit = GemmModel::fit(truth.peak_flops_per_ns, truth.min_ns, &samples).unwrap();
        assert!((fit.max_efficiency - truth.max_efficiency).abs() < 1e-6);
        assert!((fit.half_flops - truth.half_flops).abs() / truth.half_flops < 1e-6);
        assert!(GemmModel::fit(1.0, 0.0, &[(1.0, 2.0)]).is_none());
    }

    #[test]
    fn presets_by_name() {
        for n in GpuSpec::NAMES {
            assert_eq!(GpuSpec::preset(n).unwrap().name, *n);
        }
        assert_eq!("NVIDIA-H200".parse::<GpuSpec>().unwrap().name, "h200");
        assert!(GpuSpec::preset("v100").is_err());
    }
}
