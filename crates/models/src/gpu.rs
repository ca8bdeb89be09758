//! GPU presets: one GPU model and the system around it, and the duration
//! models built from them.
//!
//! Where each number comes from is written beside it:
//!
//! - *datasheet*: NVIDIA's published specification of the SXM board (dense
//!   tensor-core throughput is half the "with sparsity" figure; NVLink is
//!   quoted as the total of both directions, halved here);
//! - *corpus*: the `deviceProperties` of a real trace in `shared/traces`;
//! - *assumed*: a modelling choice, not a measurement. The GEMM curve and
//!   the link efficiencies and latencies are the values that
//!   `lumos predict` refits to a trace's own kernels where the trace has
//!   them; the presets only decide what synthesized traces look like and
//!   what an uncalibrated prediction uses.

use std::fmt;
use std::str::FromStr;

use crate::{GemmModel, Link, MemoryModel, NetworkModel};

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
    /// Dense FP8 tensor-core peak, TFLOP/s; `None` without FP8 tensor
    /// cores.
    pub peak_fp8_tflops: Option<f64>,
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
    ///
    /// Sources (checked 2026-12-01): NVIDIA A100 Tensor Core GPU datasheet
    /// (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf, tabulated at
    /// <https://glennklockwood.com/garden/processors/A100>): BF16 312
    /// TFLOP/s dense (624 with sparsity), 80 GB HBM2e at 2,039 GB/s, NVLink
    /// 600 GB/s, PCIe Gen4 32 + 32 GB/s; DGX A100 with eight 200 Gb/s
    /// Mellanox NICs and NVLink 3 at 600 GB/s
    /// (<https://developer.nvidia.com/blog/defining-ai-innovation-with-dgx-a100>).
    pub fn a100() -> GpuSpec {
        GpuSpec {
            name: "a100",
            // The driver's name for the 80 GB SXM4 board, as nvidia-smi
            // prints it (the corpus has only the 40 GB "A100-PG509-200").
            device_name: "NVIDIA A100-SXM4-80GB",
            arch: "sm80",
            // Datasheet: 312 TFLOP/s BF16 dense (624 with sparsity).
            peak_bf16_tflops: 312.0,
            // Ampere has no FP8 tensor cores.
            peak_fp8_tflops: None,
            // Datasheet (80 GB SXM): 2,039 GB/s HBM2e.
            hbm_gbps: 2039.0,
            // Assumed: achievable host-to-device rate over PCIe Gen4 x16
            // (datasheet: 64 GB/s both directions, 32 each way).
            pcie_gbps: 25.0,
            network: NetworkModel {
                intra_node: Link {
                    // Datasheet: NVLink 3, 600 GB/s both directions.
                    bandwidth_gbps: 300.0,
                    // Assumed: NCCL bus bandwidth 0.78 x 300 = 234 GB/s.
                    efficiency: 0.78,
                    // Assumed.
                    hop_latency_us: 0.7,
                },
                inter_node: Link {
                    // HDR InfiniBand, 200 Gb/s per GPU (one NIC per GPU, as
                    // in DGX A100).
                    bandwidth_gbps: 25.0,
                    // Assumed.
                    efficiency: 0.9,
                    // Assumed.
                    hop_latency_us: 3.0,
                },
                // DGX / HGX A100: eight GPUs per node.
                gpus_per_node: 8,
                // Assumed.
                base_latency_us: 6.0,
                // One NIC per GPU: NCCL spreads a ring's node crossings over
                // the NICs of the group's members on a node.
                multi_rail: true,
            },
            // Assumed.
            gemm_max_efficiency: 0.82,
            // Assumed: a fixed GEMM cost of 1e9 / (312e3 x 0.82) ns, about
            // 3.9 us.
            gemm_half_gflops: 1.0,
            // Assumed.
            attention_efficiency: 0.6,
            // Datasheet and corpus (micro/a100-simple-add): 108 SMs.
            num_sms: 108,
            // Nominal 80 GiB (the driver reports somewhat less).
            memory_bytes: 85_899_345_920,
            // CUDA compute capability 8.0; corpus (micro/a100-simple-add).
            compute_capability: (8, 0),
        }
    }

    /// NVIDIA H100 SXM5 80GB, NVLink 4 (450 GB/s per direction), NDR
    /// InfiniBand 400 Gb/s per GPU.
    ///
    /// Sources (checked 2026-12-01): NVIDIA H100 datasheet, tabulated at
    /// <https://glennklockwood.com/garden/processors/h100>: BF16 989.4
    /// TFLOP/s dense (1,978.9 with sparsity), FP8 1,978.9 dense (3,957.8
    /// with sparsity), 80 GB HBM3 at 3.35 TB/s, NVLink 900 GB/s, PCIe Gen5
    /// 128 GB/s, 132 SMs; DGX H100 with eight single-port ConnectX-7 at 400
    /// Gb/s (NVIDIA DGX BasePOD reference architecture, core components,
    /// <https://docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-foundation-enterprise-ai/latest/core-components.html>).
    pub fn h100() -> GpuSpec {
        GpuSpec {
            name: "h100",
            // Corpus: single-rank/h100-vit-inference.
            device_name: "NVIDIA H100 80GB HBM3",
            arch: "sm90",
            // Datasheet (SXM): 989 TFLOP/s BF16 dense (1,979 with sparsity).
            peak_bf16_tflops: 989.0,
            // Datasheet (SXM): 3,958 TFLOP/s FP8 with sparsity, half dense.
            peak_fp8_tflops: Some(1979.0),
            // Datasheet (SXM): 3.35 TB/s HBM3.
            hbm_gbps: 3350.0,
            // Assumed: achievable host-to-device rate over PCIe Gen5 x16
            // (datasheet: 128 GB/s both directions, 64 each way).
            pcie_gbps: 50.0,
            network: NetworkModel {
                intra_node: Link {
                    // Datasheet: NVLink 4, 900 GB/s both directions.
                    bandwidth_gbps: 450.0,
                    // Assumed: NCCL bus bandwidth 0.8 x 450 = 360 GB/s.
                    efficiency: 0.8,
                    // Assumed.
                    hop_latency_us: 0.6,
                },
                inter_node: Link {
                    // NDR InfiniBand, 400 Gb/s per GPU (one NIC per GPU, as
                    // in DGX H100).
                    bandwidth_gbps: 50.0,
                    // Assumed.
                    efficiency: 0.9,
                    // Assumed.
                    hop_latency_us: 2.5,
                },
                // DGX / HGX H100: eight GPUs per node.
                gpus_per_node: 8,
                // Assumed.
                base_latency_us: 5.0,
                // One NIC per GPU: NCCL spreads a ring's node crossings over
                // the NICs of the group's members on a node.
                multi_rail: true,
            },
            // Assumed.
            gemm_max_efficiency: 0.72,
            // Assumed: a fixed GEMM cost of 3e9 / (989e3 x 0.72) ns, about
            // 4.2 us.
            gemm_half_gflops: 3.0,
            // Assumed.
            attention_efficiency: 0.45,
            // Datasheet (SXM5) and corpus (single-rank/h100-vit-inference):
            // 132 SMs.
            num_sms: 132,
            // Nominal 80 GiB (corpus, h100-vit-inference: the driver
            // reports 85,018,279,936).
            memory_bytes: 85_899_345_920,
            // CUDA compute capability 9.0; corpus (h100-vit-inference).
            compute_capability: (9, 0),
        }
    }

    /// NVIDIA H200 SXM 141GB: H100 compute with faster, larger HBM3e.
    ///
    /// Sources (checked 2026-12-01): NVIDIA H200 product page and datasheet
    /// figures, as compared with H100's at
    /// <https://lzwjava.github.io/nvidia-h200-gpu-specs-en>: 141 GB HBM3e at
    /// 4.8 TB/s, FP8 3,958 TFLOP/s with sparsity (as H100), NVLink 900 GB/s;
    /// DGX H200: 1,128 GB for eight GPUs, the same eight 400 Gb/s
    /// ConnectX-7 as DGX H100 (DGX BasePOD reference architecture, as for
    /// [`GpuSpec::h100`]).
    pub fn h200() -> GpuSpec {
        GpuSpec {
            name: "h200",
            // The driver's name for the board, as nvidia-smi prints it (the
            // corpus has no H200 trace).
            device_name: "NVIDIA H200",
            // Datasheet: 4.8 TB/s HBM3e.
            hbm_gbps: 4800.0,
            // Assumed (H100: 0.72).
            gemm_max_efficiency: 0.75,
            // 143,771 MiB, the total nvidia-smi reports for the datasheet's
            // 141 GB of HBM3e.
            memory_bytes: 150_754_820_096,
            ..GpuSpec::h100()
        }
    }

    /// NVIDIA B200, NVLink 5 (900 GB/s per direction), NDR InfiniBand
    /// 400 Gb/s per GPU.
    ///
    /// Sources (checked 2026-12-01): HGX B200 figures (1,000 W) tabulated
    /// at <https://glennklockwood.com/garden/processors/B200>: BF16 2,250
    /// TFLOP/s dense (4,500 with sparsity), FP8 4,500 dense (9,000 with
    /// sparsity), 8 TB/s, NVLink 5 at 1.8 TB/s; NVIDIA DGX B200 user guide
    /// (<https://docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-dgxb200.html>):
    /// eight GPUs with 1,440 GB in all (180 GB each), eight single-port
    /// ConnectX-7 at up to 400 Gb/s.
    pub fn b200() -> GpuSpec {
        GpuSpec {
            name: "b200",
            // Corpus: single-rank/b200-vllm-tp8-rank0.
            device_name: "NVIDIA B200",
            arch: "sm100",
            // Datasheet (HGX B200): 4.5 PFLOP/s BF16 per GPU with sparsity,
            // half of it dense.
            peak_bf16_tflops: 2250.0,
            // Datasheet (HGX B200): 9 PFLOP/s FP8 with sparsity, half dense.
            peak_fp8_tflops: Some(4500.0),
            // Datasheet: 8 TB/s HBM3e.
            hbm_gbps: 8000.0,
            // Assumed: achievable host-to-device rate over PCIe Gen5 x16
            // (64 GB/s each way).
            pcie_gbps: 50.0,
            network: NetworkModel {
                intra_node: Link {
                    // Datasheet: NVLink 5, 1.8 TB/s both directions.
                    bandwidth_gbps: 900.0,
                    // Assumed: NCCL bus bandwidth 0.8 x 900 = 720 GB/s.
                    efficiency: 0.8,
                    // Assumed.
                    hop_latency_us: 0.5,
                },
                inter_node: Link {
                    // NDR InfiniBand, 400 Gb/s per GPU (one NIC per GPU, as
                    // in DGX B200).
                    bandwidth_gbps: 50.0,
                    // Assumed.
                    efficiency: 0.9,
                    // Assumed.
                    hop_latency_us: 2.5,
                },
                // DGX / HGX B200: eight GPUs per node.
                gpus_per_node: 8,
                // Assumed.
                base_latency_us: 5.0,
                // One NIC per GPU: NCCL spreads a ring's node crossings over
                // the NICs of the group's members on a node.
                multi_rail: true,
            },
            // Assumed.
            gemm_max_efficiency: 0.7,
            // Assumed: a fixed GEMM cost of 6.5e9 / (2250e3 x 0.7) ns, about
            // 4.1 us.
            gemm_half_gflops: 6.5,
            // Assumed.
            attention_efficiency: 0.45,
            // Corpus (single-rank/b200-vllm-tp8-rank0): 148 SMs.
            num_sms: 148,
            // Nominal 180 GiB for the datasheet's 180 GB (corpus,
            // b200-vllm-tp8-rank0: the driver reports 191,503,138,816).
            memory_bytes: 193_273_528_320,
            // CUDA compute capability 10.0; corpus (b200-vllm-tp8-rank0).
            compute_capability: (10, 0),
        }
    }

    /// NVIDIA Tesla V100 SXM2 32GB, NVLink 2 (150 GB/s per direction),
    /// EDR InfiniBand 100 Gb/s NICs (DGX-1). Prediction
    /// recognises it in traces; the synthesizer does not offer it (not in
    /// [`GpuSpec::NAMES`]): it has no calibrated kernel tables for it.
    ///
    /// Sources (checked 2026-12-01): NVIDIA Tesla V100 datasheet (SXM2):
    /// 125 TFLOP/s tensor performance, 900 GB/s HBM2, NVLink 300 GB/s
    /// (restated with the DGX-1 figures at <https://www.iitr.ac.in/dgx>:
    /// six NVLinks of 25 GB/s in each direction, 300 GB/s aggregate per
    /// GPU); the GV100 table of NVIDIA's Volta announcement (80 SMs,
    /// <https://www.techrival.com/nvidia-volta-tesla-v100-cards-detailed-150w-single-slot-300w-dual-slot-gv100-powered-pcie-accelerators/>);
    /// NVIDIA DGX-1 with Tesla V100 system architecture white paper: eight
    /// V100s in a hybrid cube-mesh and four 100 Gb/s InfiniBand NICs
    /// (<https://leslivresblancs.fr/livre/informatique-et-logiciels/intelligence-artificielle/nvidia-dgx-1-tesla-v100-system>).
    pub fn v100() -> GpuSpec {
        GpuSpec {
            name: "v100",
            // Corpus: single-rank/v100-ddp-rank1of2-allreduce.
            device_name: "Tesla V100-SXM2-32GB",
            arch: "sm70",
            // Datasheet (NVIDIA V100, SXM2): 125 TFLOP/s tensor
            // performance (FP16 inputs, dense; Volta has no BF16, so this
            // is the 16-bit tensor-core peak).
            peak_bf16_tflops: 125.0,
            // Volta has no FP8 tensor cores.
            peak_fp8_tflops: None,
            // Datasheet (SXM2): 900 GB/s HBM2.
            hbm_gbps: 900.0,
            // Assumed: achievable host-to-device rate over PCIe Gen3 x16
            // (datasheet: 32 GB/s both directions, 16 each way).
            pcie_gbps: 12.0,
            network: NetworkModel {
                intra_node: Link {
                    // Datasheet (SXM2): NVLink 2, 300 GB/s both directions.
                    bandwidth_gbps: 150.0,
                    // Assumed, as for A100 (0.78).
                    efficiency: 0.78,
                    // Assumed.
                    hop_latency_us: 1.0,
                },
                inter_node: Link {
                    // EDR InfiniBand, 100 Gb/s per NIC (DGX-1 has four for
                    // eight GPUs; a ring that crosses nodes goes through
                    // one, which is what this link stands for).
                    bandwidth_gbps: 12.5,
                    // Assumed.
                    efficiency: 0.9,
                    // Assumed.
                    hop_latency_us: 3.5,
                },
                // DGX-1 / HGX-1: eight GPUs per node.
                gpus_per_node: 8,
                // Assumed.
                base_latency_us: 7.0,
                // Fewer NICs than GPUs: a crossing goes through one.
                multi_rail: false,
            },
            // Assumed (as A100).
            gemm_max_efficiency: 0.8,
            // Assumed: a fixed GEMM cost of 0.4e9 / (125e3 x 0.8) ns, about
            // 4 us.
            gemm_half_gflops: 0.4,
            // Assumed.
            attention_efficiency: 0.5,
            // Datasheet and corpus (v100-ddp-rank1of2-allreduce): 80 SMs.
            num_sms: 80,
            // Corpus (v100-ddp-rank1of2-allreduce): the driver reports
            // 34,089,730,048 bytes for the 32 GB board.
            memory_bytes: 34_089_730_048,
            // CUDA compute capability 7.0; corpus.
            compute_capability: (7, 0),
        }
    }

    /// One graphics compute die (GCD) of an AMD Instinct MI250 (OAM): the
    /// unit PyTorch sees as a device (two per package). Not offered by the
    /// synthesizer (not in [`GpuSpec::NAMES`]).
    ///
    /// Sources (checked 2026-12-01): AMD Instinct MI250 specifications, as
    /// tabulated at <https://zexron.com/amd-mi250-x-aldebaran-as-mcm-with-up-to-479-teraflop-s-and-560-watt-tdp>
    /// (AMD's launch table): 208 CUs, 362.1 TFLOP/s FP16 and BF16 matrix,
    /// 128 GB HBM2e at 3.2 TB/s per package, six Infinity Fabric links
    /// (MI250X: eight); ROCm's MI250 microarchitecture page
    /// (<https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi250.html>):
    /// 104 CUs and 1.6 TB/s HBM2e per GCD, 50 GB/s per 16-wide Infinity
    /// Fabric link between GPUs.
    pub fn mi250() -> GpuSpec {
        GpuSpec {
            name: "mi250",
            // Corpus (single-rank/mi250-toy-train): ROCm names the GCD
            // "AMD Radeon Graphics"; it is recognised by its 104 compute
            // units and 64 GiB.
            device_name: "AMD Instinct MI250",
            arch: "gfx90a",
            // Datasheet (AMD Instinct MI250): 362.1 TFLOP/s peak FP16 and
            // BF16 matrix per package of two GCDs; half per GCD.
            peak_bf16_tflops: 181.05,
            // CDNA 2 has no FP8.
            peak_fp8_tflops: None,
            // Datasheet: 3.2 TB/s HBM2e per package; half per GCD.
            hbm_gbps: 1600.0,
            // Assumed: achievable host-to-device rate over PCIe Gen4 x16.
            pcie_gbps: 25.0,
            network: NetworkModel {
                intra_node: Link {
                    // Datasheet: Infinity Fabric links of 100 GB/s peak
                    // (both directions); assumed one link's 50 GB/s per
                    // direction between ring neighbours.
                    bandwidth_gbps: 50.0,
                    // Assumed.
                    efficiency: 0.7,
                    // Assumed.
                    hop_latency_us: 1.0,
                },
                inter_node: Link {
                    // Assumed: 200 Gb/s NICs (Slingshot-11 or HDR
                    // InfiniBand), one per package; a ring that crosses
                    // nodes goes through one.
                    bandwidth_gbps: 25.0,
                    // Assumed.
                    efficiency: 0.9,
                    // Assumed.
                    hop_latency_us: 3.0,
                },
                // Assumed: four packages, eight GCDs per node (as in HPE
                // Cray EX235a nodes).
                gpus_per_node: 8,
                // Assumed.
                base_latency_us: 8.0,
                // Fewer NICs than GPUs: a crossing goes through one.
                multi_rail: false,
            },
            // Assumed.
            gemm_max_efficiency: 0.6,
            // Assumed: a fixed GEMM cost of 0.5e9 / (181e3 x 0.6) ns, about
            // 4.6 us.
            gemm_half_gflops: 0.5,
            // Assumed.
            attention_efficiency: 0.4,
            // Datasheet: 208 compute units per package, 104 per GCD;
            // corpus (mi250-toy-train): numSms 104.
            num_sms: 104,
            // Datasheet: 128 GB HBM2e per package, 64 GiB per GCD; corpus
            // (mi250-toy-train): 68,702,699,520 bytes.
            memory_bytes: 68_702_699_520,
            // gfx90a.
            compute_capability: (9, 0),
        }
    }

    /// AMD Instinct MI300X (OAM), seven Infinity Fabric links to the other
    /// GPUs of an eight-GPU platform. Not offered by the synthesizer (not
    /// in [`GpuSpec::NAMES`]).
    ///
    /// Sources (checked 2026-12-01): AMD Instinct MI300X data sheet
    /// figures, as restated at
    /// <https://raw.githubusercontent.com/alpharomercoma/MI300X-vs-H200/6077fdc7bfc215171c33435b7cd76ca4c5f2b236/METHODOLOGY.md>
    /// (BF16 1,307.4 TFLOP/s dense, FP8 2,614.9 dense, 5.3 TB/s, 192 GB)
    /// and at <https://gpu.blog/gpus/instinct-mi300x-mi300x> (304 CUs,
    /// Infinity Fabric 896 GB/s, eight GPUs per platform).
    pub fn mi300x() -> GpuSpec {
        GpuSpec {
            name: "mi300x",
            // Corpus: single-rank/mi300x-resnet-ddp-rank0of8.
            device_name: "AMD Instinct MI300X",
            arch: "gfx942",
            // Datasheet (AMD Instinct MI300X): 1,307.4 TFLOP/s peak FP16
            // and BF16 dense (2,614.9 with sparsity).
            peak_bf16_tflops: 1307.4,
            // Datasheet: 2,614.9 TFLOP/s FP8 dense.
            peak_fp8_tflops: Some(2614.9),
            // Datasheet: 5.3 TB/s HBM3.
            hbm_gbps: 5300.0,
            // Assumed: achievable host-to-device rate over PCIe Gen5 x16.
            pcie_gbps: 50.0,
            network: NetworkModel {
                intra_node: Link {
                    // Datasheet: seven Infinity Fabric links, 896 GB/s
                    // peak aggregate (both directions); 448 each way.
                    bandwidth_gbps: 448.0,
                    // Assumed: RCCL reaches less of a fully connected mesh
                    // than NCCL of NVSwitch.
                    efficiency: 0.7,
                    // Assumed.
                    hop_latency_us: 0.8,
                },
                inter_node: Link {
                    // Assumed: one 400 Gb/s NIC per GPU, as in the AMD
                    // Instinct MI300X platform reference designs.
                    bandwidth_gbps: 50.0,
                    // Assumed.
                    efficiency: 0.9,
                    // Assumed.
                    hop_latency_us: 2.5,
                },
                // Datasheet (AMD Instinct MI300X platform): eight GPUs.
                gpus_per_node: 8,
                // Assumed.
                base_latency_us: 6.0,
                // One NIC per GPU: NCCL spreads a ring's node crossings over
                // the NICs of the group's members on a node.
                multi_rail: true,
            },
            // Assumed.
            gemm_max_efficiency: 0.6,
            // Assumed: a fixed GEMM cost of 3.5e9 / (1307e3 x 0.6) ns, about
            // 4.5 us.
            gemm_half_gflops: 3.5,
            // Assumed.
            attention_efficiency: 0.4,
            // Datasheet and corpus (mi300x-resnet-ddp-rank0of8): 304
            // compute units.
            num_sms: 304,
            // Datasheet: 192 GB HBM3; corpus: 206,141,652,992 bytes.
            memory_bytes: 206_141_652_992,
            // gfx942.
            compute_capability: (9, 4),
        }
    }

    /// Every GPU the prediction recognises in a trace: the synthesizer's
    /// presets and those it has no kernel tables for.
    pub fn known() -> Vec<GpuSpec> {
        vec![
            GpuSpec::v100(),
            GpuSpec::a100(),
            GpuSpec::h100(),
            GpuSpec::h200(),
            GpuSpec::b200(),
            GpuSpec::mi250(),
            GpuSpec::mi300x(),
        ]
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
            // Assumed floor: launch, prologue and epilogue of the smallest
            // GEMM kernels.
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
            // Assumed: fraction of HBM bandwidth element-wise kernels reach.
            efficiency: 0.8,
            // Assumed fixed cost of an element-wise kernel (the corpus's
            // smallest run 1.5 us on H100, 2 to 3.5 us on B200).
            fixed_ns: 2_000.0,
        }
    }

    /// Host-to-device copies over PCIe.
    pub fn pcie(&self) -> MemoryModel {
        MemoryModel {
            bytes_per_ns: self.pcie_gbps,
            // Assumed.
            efficiency: 0.8,
            // Assumed fixed cost of a copy.
            fixed_ns: 2_500.0,
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
    fn presets_by_name() {
        for n in GpuSpec::NAMES {
            assert_eq!(GpuSpec::preset(n).unwrap().name, *n);
        }
        assert_eq!("NVIDIA-H200".parse::<GpuSpec>().unwrap().name, "h200");
        assert!(GpuSpec::preset("v100").is_err());
    }

    #[test]
    fn known_gpus_have_sane_numbers() {
        for g in GpuSpec::known() {
            assert!(
                g.peak_bf16_tflops > 100.0 && g.hbm_gbps > 800.0,
                "{}",
                g.name
            );
            assert!(g.network.intra_node.bandwidth_gbps > g.network.inter_node.bandwidth_gbps);
            assert!(g.num_sms > 0 && g.memory_bytes > 1 << 30, "{}", g.name);
        }
    }
}
