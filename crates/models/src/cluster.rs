//! Cluster presets: a GPU and the network around it, as published for the
//! machines the validation rows ran on.
//!
//! Link efficiencies are NCCL's bus bandwidth over the line rate, cited
//! from nccl-tests results: A100 NVLink rings reach 232.5 GB/s of 300
//! (NVIDIA/nccl#1048, one DGX-class node of eight A100s); H100 NVLink rings
//! "370GB/s" of 450 (NVIDIA/nccl-tests#212, NCCL's author); HDR InfiniBand
//! 86 of 96-100 GB/s on four NICs (NVIDIA/nccl#1048, NVIDIA/nccl-tests#119);
//! NDR "46-48GB/s per NIC" of 50 (NVIDIA/nccl-tests#290). Latencies are
//! assumed, as in the GPU presets. Every cluster has eight GPUs per node
//! and is rail-optimized ([`NetworkModel::multi_rail`]).

use crate::{GpuSpec, Link, NetworkModel, UnknownPreset};

/// A GPU, its node and the network between nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Preset name (`selene`).
    pub name: &'static str,
    /// The GPU.
    pub gpu: GpuSpec,
    /// NVLink inside a node, NICs between nodes.
    pub network: NetworkModel,
    /// What the preset describes and where its numbers come from.
    pub about: &'static str,
}

/// NCCL bus bandwidth of an A100 NVLink ring over its 300 GB/s line rate
/// (cited, NVIDIA/nccl#1048: 232.54 GB/s).
const A100_NVLINK_EFFICIENCY: f64 = 0.775;
/// The same for H100 NVLink (cited, NVIDIA/nccl-tests#212: 370 GB/s of
/// 450).
const H100_NVLINK_EFFICIENCY: f64 = 0.82;
/// HDR InfiniBand (cited, NVIDIA/nccl#1048: 86 GB/s on four 200 Gb/s NICs
/// of 96-100 theoretical).
const HDR_EFFICIENCY: f64 = 0.88;
/// NDR InfiniBand and 400 Gb/s RoCE (cited, NVIDIA/nccl-tests#290: 46-48
/// GB/s per 400 Gb/s NIC).
const NDR_EFFICIENCY: f64 = 0.94;

fn link(bandwidth_gbps: f64, efficiency: f64, hop_latency_us: f64) -> Link {
    Link {
        bandwidth_gbps,
        efficiency,
        hop_latency_us,
    }
}

/// Eight GPUs per node on NVLink, `nic_gbps_per_node` of NICs per node
/// shared by the eight, rail-optimized.
fn network(
    nvlink: Link,
    nic_gbps_per_node: f64,
    nic_efficiency: f64,
    base_us: f64,
) -> NetworkModel {
    NetworkModel {
        intra_node: nvlink,
        // Each GPU's share of the node's NICs; the hop latency is assumed
        // (as in the GPU presets).
        inter_node: link(nic_gbps_per_node / 8.0, nic_efficiency, 3.0),
        gpus_per_node: 8,
        base_latency_us: base_us,
        multi_rail: true,
    }
}

impl Cluster {
    /// Names accepted by [`Cluster::preset`].
    pub const NAMES: &'static [&'static str] =
        &["selene", "jean-zay", "dgx-h100", "dgx-h200", "dgx-b200"];

    /// NVIDIA Selene (SC21 section 5, Korthikanti et al. section 6): DGX
    /// A100 80GB nodes, NVLink and NVSwitch, eight 200 Gb/s HDR InfiniBand
    /// HCAs per node for application traffic.
    pub fn selene() -> Cluster {
        Cluster {
            name: "selene",
            gpu: GpuSpec::a100(),
            network: network(
                link(300.0, A100_NVLINK_EFFICIENCY, 0.7),
                8.0 * 25.0,
                HDR_EFFICIENCY,
                6.0,
            ),
            about: "DGX A100 80GB, NVSwitch, 8 x 200 Gb/s HDR per node (SC21 section 5)",
        }
    }

    /// Jean Zay, where BLOOM was trained (bigscience tr11-176B-ml README):
    /// eight A100 80GB per node on NVLink, "4 OmniPath links" of 100 Gb/s
    /// per node, so two GPUs share each NIC. Omni-Path efficiency is
    /// assumed equal to HDR's.
    pub fn jean_zay() -> Cluster {
        Cluster {
            name: "jean-zay",
            gpu: GpuSpec::a100(),
            network: network(
                link(300.0, A100_NVLINK_EFFICIENCY, 0.7),
                4.0 * 12.5,
                HDR_EFFICIENCY,
                6.0,
            ),
            about: "A100 80GB nodes, NVLink, 4 x 100 Gb/s Omni-Path per node (BLOOM README)",
        }
    }

    /// DGX H100 (and Eos, and the 400 Gb/s-per-GPU RoCE clusters of the
    /// Llama 3 paper): NVLink 4 with NVSwitch, eight 400 Gb/s NICs per
    /// node.
    pub fn dgx_h100() -> Cluster {
        Cluster {
            name: "dgx-h100",
            gpu: GpuSpec::h100(),
            network: network(
                link(450.0, H100_NVLINK_EFFICIENCY, 0.6),
                8.0 * 50.0,
                NDR_EFFICIENCY,
                5.0,
            ),
            about: "DGX H100, NVLink 4 / NVSwitch, 8 x 400 Gb/s NDR per node (datasheet)",
        }
    }

    /// HGX H200: the H100 system with H200 GPUs (datasheet).
    pub fn dgx_h200() -> Cluster {
        Cluster {
            name: "dgx-h200",
            gpu: GpuSpec::h200(),
            about: "HGX H200, NVLink 4 / NVSwitch, 8 x 400 Gb/s per node (datasheet)",
            ..Cluster::dgx_h100()
        }
    }

    /// DGX B200: NVLink 5 (900 GB/s per direction), eight 400 Gb/s NICs
    /// per node (datasheet). NVLink 5 efficiency assumed equal to NVLink
    /// 4's.
    pub fn dgx_b200() -> Cluster {
        Cluster {
            name: "dgx-b200",
            gpu: GpuSpec::b200(),
            network: network(
                link(900.0, H100_NVLINK_EFFICIENCY, 0.5),
                8.0 * 50.0,
                NDR_EFFICIENCY,
                5.0,
            ),
            about: "DGX B200, NVLink 5 / NVSwitch, 8 x 400 Gb/s per node (datasheet)",
        }
    }

    /// A preset by name (case-insensitive).
    pub fn preset(name: &str) -> Result<Cluster, UnknownPreset> {
        match name.to_ascii_lowercase().as_str() {
            "selene" => Ok(Cluster::selene()),
            "jean-zay" => Ok(Cluster::jean_zay()),
            "dgx-h100" => Ok(Cluster::dgx_h100()),
            "dgx-h200" => Ok(Cluster::dgx_h200()),
            "dgx-b200" => Ok(Cluster::dgx_b200()),
            _ => Err(UnknownPreset {
                name: name.to_owned(),
                known: Cluster::NAMES,
            }),
        }
    }

    /// The cluster a GPU preset is usually found in: Selene for A100, the
    /// DGX systems for the others.
    pub fn default_for(gpu: &GpuSpec) -> Cluster {
        let mut c = match gpu.name {
            "a100" => Cluster::selene(),
            "h200" => Cluster::dgx_h200(),
            "b200" => Cluster::dgx_b200(),
            _ => Cluster::dgx_h100(),
        };
        c.gpu = gpu.clone();
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CollectiveKind;

    #[test]
    fn presets_and_their_links() {
        for n in Cluster::NAMES {
            let c = Cluster::preset(n).unwrap();
            assert_eq!(c.name, *n);
            assert!(c.network.multi_rail);
        }
        assert!(Cluster::preset("frontier").is_err());
        // Jean Zay's GPUs share half a 100 Gb/s NIC each.
        assert_eq!(Cluster::jean_zay().network.inter_node.bandwidth_gbps, 6.25);
        assert_eq!(Cluster::default_for(&GpuSpec::a100()).name, "selene");
        // A 1 GiB gradient all-reduce over 32 Selene nodes, one GPU each:
        // 2 * 31/32 GiB at 22 GB/s, about 95 ms.
        let net = Cluster::selene().network;
        let ranks: Vec<usize> = (0..32).map(|i| 8 * i).collect();
        let t = net.collective_time_ns(CollectiveKind::AllReduce, 1 << 30, &ranks);
        assert!((t / 1e6 - 95.0).abs() < 5.0, "{t}");
    }
}
