//! The duration models the synthesizer times kernels with, per GPU:
//! tile-aware GEMMs at a fitted fraction of the datasheet peak, flash and
//! unfused attention, memory-bound kernels, host copies.
//!
//! Where each number comes from is written beside it: *datasheet* and
//! *corpus* as in [`GpuSpec`]; *cited* for a published measurement (the
//! source is named); *fitted* for the few free parameters, which
//! `crates/synth/tests/fit.rs` recomputes from the fit rows of
//! `docs/SYNTH-VALIDATION.md` and checks against the values here;
//! *assumed* for a modelling choice.
//!
//! [`GpuSpec`]'s own GEMM curve, attention ratio and links are left as
//! they were: they are what an uncalibrated `lumos predict` starts from,
//! and its outputs on real traces must not move with this calibration.

use crate::{gemm_flops, GpuSpec, MemoryModel};

/// Numeric format of a GEMM's inputs (mixed precision: FP32 accumulation
/// throughout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Precision {
    /// IEEE half precision (with loss scaling).
    Fp16,
    /// bfloat16.
    Bf16,
    /// FP8 (E4M3 forward, E5M2 gradients) through Transformer Engine.
    Fp8,
}

impl Precision {
    /// Bytes per element of a GEMM input.
    pub fn bytes(self) -> u64 {
        match self {
            Precision::Fp16 | Precision::Bf16 => 2,
            Precision::Fp8 => 1,
        }
    }

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
        }
    }

    /// Parses [`Precision::name`].
    pub fn from_name(s: &str) -> Option<Precision> {
        match s.to_ascii_lowercase().as_str() {
            "fp16" => Some(Precision::Fp16),
            "bf16" => Some(Precision::Bf16),
            "fp8" => Some(Precision::Fp8),
            _ => None,
        }
    }
}

/// A GEMM on tensor cores, timed from its shape: the output is cut into
/// `tile` tiles, one thread block each; a GEMM with fewer tiles than SMs
/// leaves SMs idle, partial tiles cost as much as full ones, and without
/// a persistent scheduler the last wave of tiles runs on part of the GPU
/// (tile and wave quantization, NVIDIA's "Matrix Multiplication
/// Background User's Guide", DU-09799-001, section 3). The rest
/// runs at `efficiency` of the peak, or at the HBM rate when the operands
/// outweigh the arithmetic (attention's batched products with a small
/// head dimension), plus a fixed cost per kernel.
///
/// On full tiles and a full GPU this is [`GemmModel`](crate::GemmModel)'s
/// curve with `half_flops = fixed_ns * peak * efficiency`, so a predictor
/// that fits that curve to a synthesized trace recovers it exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TiledGemm {
    /// Peak dense throughput, FLOP per ns.
    pub peak_flops_per_ns: f64,
    /// Fraction of the peak that large GEMMs on full tiles reach.
    pub efficiency: f64,
    /// Fixed cost of every GEMM kernel (launch, prologue, epilogue), ns.
    pub fixed_ns: f64,
    /// Output tile of one thread block, rows x columns.
    pub tile: [u64; 2],
    /// Streaming multiprocessors.
    pub sms: u64,
    /// Tiles run in whole waves of `sms` (a partial last wave costs a full
    /// one); off when a persistent (stream-K) scheduler spreads the
    /// remainder.
    pub discrete_waves: bool,
    /// Effective HBM bandwidth, bytes per ns.
    pub hbm_bytes_per_ns: f64,
}

impl TiledGemm {
    /// Fraction of the work a `[m, k] x [k, n]` GEMM (times `batch`)
    /// spends on useful output: padded tiles and idle SMs excluded.
    pub fn utilization(&self, m: u64, n: u64, batch: u64) -> f64 {
        let [tm, tn] = self.tile;
        let (rows, cols) = (m.div_ceil(tm), n.div_ceil(tn));
        if rows == 0 || cols == 0 || batch == 0 {
            return 1.0;
        }
        let padded = (rows * tm * cols * tn) as f64;
        let pad = (m * n) as f64 / padded;
        let tiles = rows * cols * batch;
        let sms = self.sms.max(1);
        let fill = if self.discrete_waves {
            tiles as f64 / (tiles.div_ceil(sms) * sms) as f64
        } else {
            (tiles as f64 / sms as f64).min(1.0)
        };
        pad * fill
    }

    /// Duration in ns of `batch` products `[m, k] x [k, n]` with inputs of
    /// `in_bytes` and outputs of `out_bytes` per element.
    pub fn time_ns(
        &self,
        m: u64,
        n: u64,
        k: u64,
        batch: u64,
        in_bytes: u64,
        out_bytes: u64,
    ) -> f64 {
        let flops = gemm_flops(m, n, k) * batch as f64;
        if flops <= 0.0 {
            return self.fixed_ns;
        }
        let rate = self.peak_flops_per_ns * self.efficiency * self.utilization(m, n, batch);
        let compute = flops / rate;
        let bytes = batch as f64 * ((m * k + k * n) * in_bytes + m * n * out_bytes) as f64;
        let memory = bytes / self.hbm_bytes_per_ns;
        compute.max(memory) + self.fixed_ns
    }
}

/// Flash attention: the FLOPs of the attention products at a fraction of
/// the peak, with as many thread blocks as 128-query tiles times heads
/// times sequences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlashAttention {
    /// Peak dense throughput, FLOP per ns.
    pub peak_flops_per_ns: f64,
    /// Fraction of the peak the forward kernel reaches.
    pub forward_efficiency: f64,
    /// Fraction of the peak the backward kernel reaches.
    pub backward_efficiency: f64,
    /// Streaming multiprocessors.
    pub sms: u64,
    /// Fixed cost per kernel, ns.
    pub fixed_ns: f64,
}

impl FlashAttention {
    /// Duration in ns of `flops` of attention over `blocks` thread blocks,
    /// forward or backward.
    pub fn time_ns(&self, flops: f64, blocks: u64, backward: bool) -> f64 {
        let eff = if backward {
            self.backward_efficiency
        } else {
            self.forward_efficiency
        };
        let fill = (blocks as f64 / self.sms.max(1) as f64).clamp(1e-3, 1.0);
        flops / (self.peak_flops_per_ns * eff * fill) + self.fixed_ns
    }
}

/// Every duration model of one GPU, calibrated for synthesis.
#[derive(Debug, Clone, PartialEq)]
pub struct Hardware {
    /// The GPU.
    pub gpu: GpuSpec,
    /// FP16 / BF16 GEMMs.
    pub gemm16: TiledGemm,
    /// FP8 GEMMs; `None` on GPUs without FP8 tensor cores.
    pub gemm8: Option<TiledGemm>,
    /// Flash attention (BF16 / FP16).
    pub flash: FlashAttention,
    /// Element-wise, normalization, softmax and optimizer kernels.
    pub memory: MemoryModel,
    /// Host-to-device copies.
    pub pcie: MemoryModel,
}

/// Fraction of peak reached by large FP16 / BF16 GEMMs on A100. Fitted on
/// every second A100 row of `shared/docs/published-runs.md` (27 rows of
/// SC21, Korthikanti et al., BLOOM and MT-NLG; `crates/synth/tests/
/// validation.rs` recomputes it, docs/SYNTH-VALIDATION.md lists them).
pub const A100_GEMM_EFFICIENCY: f64 = 0.6585;
/// The same on H100 (and H200, which has the same tensor cores). Fitted on
/// the Lumos paper's GPT-3 15B run at TP 2 x PP 2 x DP 8, the only H100
/// BF16 row fitted (with Megatron-core's device synchronization after
/// every pipeline transfer, which that stack runs).
pub const H100_GEMM_EFFICIENCY: f64 = 0.6597;
/// Fraction of the FP8 peak reached by large FP8 GEMMs on H100. Fitted on
/// every second NeMo / Megatron-Bridge row (4 rows).
pub const H100_FP8_GEMM_EFFICIENCY: f64 = 0.6596;

/// Assumed fixed cost of a GEMM kernel, ns: launch, prologue and
/// epilogue (the GPU presets' curves put it at about 4 us).
const GEMM_FIXED_NS: f64 = 4_000.0;
/// Assumed: the fraction of HBM bandwidth streaming kernels reach.
const MEMORY_EFFICIENCY: f64 = 0.8;

impl Hardware {
    /// The calibrated models of `gpu` (one of [`GpuSpec::NAMES`]; another
    /// GPU gets the H100 fractions of its own peaks).
    pub fn for_gpu(gpu: &GpuSpec) -> Hardware {
        let (e16, e8, tile, waves, flash) = match gpu.name {
            // Ampere cuBLAS kernels: 256x128 tiles (the synthesizer's
            // kernel names), in whole waves (the guide's A100 examples).
            // Flash attention 2 reaches "50-73% of the theoretical
            // maximum FLOPs/s on A100" (Dao 2023, abstract): the top of
            // the range forward, lower backward (cited).
            "a100" => (A100_GEMM_EFFICIENCY, None, [256, 128], true, (0.65, 0.5)),
            // Hopper: 128x256 tiles, scheduled persistently (cuBLAS 12's
            // stream-K kernels; assumed). "FlashAttention-2 achieves only
            // 35% utilization on the H100" (Shah et al. 2024,
            // FlashAttention-3 abstract), backward lower as on A100
            // (cited, then assumed). B200: no published rows; the H100
            // fractions of its own peaks (assumed).
            _ => (
                H100_GEMM_EFFICIENCY,
                Some(H100_FP8_GEMM_EFFICIENCY),
                [128, 256],
                false,
                (0.35, 0.28),
            ),
        };
        let hbm = gpu.hbm_gbps * MEMORY_EFFICIENCY;
        let sms = u64::from(gpu.num_sms);
        let gemm = |peak_tflops: f64, efficiency: f64| TiledGemm {
            peak_flops_per_ns: peak_tflops * 1e3,
            efficiency,
            fixed_ns: GEMM_FIXED_NS,
            tile,
            sms,
            discrete_waves: waves,
            hbm_bytes_per_ns: hbm,
        };
        Hardware {
            gemm16: gemm(gpu.peak_bf16_tflops, e16),
            gemm8: gpu.peak_fp8_tflops.zip(e8).map(|(p, e)| gemm(p, e)),
            flash: FlashAttention {
                peak_flops_per_ns: gpu.peak_bf16_tflops * 1e3,
                forward_efficiency: flash.0,
                backward_efficiency: flash.1,
                sms,
                fixed_ns: GEMM_FIXED_NS,
            },
            memory: gpu.memory(),
            pcie: gpu.pcie(),
            gpu: gpu.clone(),
        }
    }

    /// The GEMM model of `precision`: FP8 falls back to the 16-bit one on
    /// a GPU without FP8 tensor cores.
    pub fn gemm(&self, precision: Precision) -> &TiledGemm {
        match precision {
            Precision::Fp8 => self.gemm8.as_ref().unwrap_or(&self.gemm16),
            _ => &self.gemm16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_and_idle_sms_cost_time() {
        let hw = Hardware::for_gpu(&GpuSpec::h100());
        let g = hw.gemm16;
        assert_eq!(g.utilization(4096, 4096, 1), 1.0);
        // Half a tile of columns wasted.
        assert!((g.utilization(4096, 128, 1) - 0.5 * (32.0 / 132.0)).abs() < 1e-9);
        // A100: 336 tiles make 3.1 waves of 108 SMs, run as 4.
        let a = Hardware::for_gpu(&GpuSpec::a100()).gemm16;
        assert!((a.utilization(2048, 5376, 1) - 336.0 / 432.0).abs() < 1e-9);
        // A big square GEMM runs at the fitted fraction of peak.
        let t = g.time_ns(8192, 8192, 8192, 1, 2, 2);
        let tflops = gemm_flops(8192, 8192, 8192) / t / 1e3;
        let want = 989.0 * H100_GEMM_EFFICIENCY;
        assert!((tflops - want).abs() / want < 0.01, "{tflops}");
        // Attention scores with head dimension 64 are bound by HBM.
        let scores = g.time_ns(2048, 2048, 64, 32, 2, 2);
        let bytes = 32.0 * (2.0 * 2048.0 * 64.0 * 2.0 + 2048.0 * 2048.0 * 2.0);
        assert!(scores >= bytes / g.hbm_bytes_per_ns);
        // FP8 doubles the peak; A100 has none and falls back.
        assert!(hw.gemm(Precision::Fp8).peak_flops_per_ns > 1.9e6);
        let a100 = Hardware::for_gpu(&GpuSpec::a100());
        assert_eq!(a100.gemm(Precision::Fp8), &a100.gemm16);
        assert_eq!(Precision::from_name("BF16"), Some(Precision::Bf16));
        assert_eq!(Precision::from_name("int8"), None);
    }

    #[test]
    fn flash_attention_fills_the_gpu_or_not() {
        let f = Hardware::for_gpu(&GpuSpec::h100()).flash;
        let full = f.time_ns(1e12, 1000, false);
        let half = f.time_ns(1e12, 66, false);
        assert!((half - f.fixed_ns) / (full - f.fixed_ns) > 1.99);
        assert!(f.time_ns(1e12, 1000, true) > full);
    }
}
