//! Alpha-beta model of NCCL ring collectives on a cluster of identical
//! nodes: NVLink inside a node, InfiniBand (or another NIC) across nodes,
//! either as one link per ring ([`NetworkModel::multi_rail`] off) or with a
//! ring's channels spread over the NICs of every group member in a node.

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
    /// How a ring that spans nodes uses the NICs. Off: the whole ring is
    /// bound by one [`inter_node`](Self::inter_node) link (nodes with fewer
    /// NICs than GPUs: the V100 and MI250X presets). On (nodes with one NIC
    /// per GPU: the A100, H100, H200, B200 and MI300X presets, and the
    /// cluster presets): NCCL runs one ring per channel and starts the channels'
    /// node crossings at different GPUs, so with `g` group members on a
    /// node the crossing traffic spreads over their `g` NICs while the
    /// other hops use NVLink: a ring of `T` bytes per rank takes
    /// `T * max((g - 1) / g / B_nvlink, 1 / g / B_nic)` (nccl-tests show
    /// it: two nodes of eight A100s with four 200 Gb/s NICs reach 86-96
    /// GB/s all-reduce bus bandwidth, four NICs' worth, NVIDIA/nccl#1048
    /// and NVIDIA/nccl-tests#119). `inter_node.bandwidth_gbps` is then
    /// each GPU's share of its node's NICs.
    pub multi_rail: bool,
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

    /// The most members of `ranks` that share one node.
    pub fn members_per_node(&self, ranks: &[usize]) -> usize {
        let per = self.gpus_per_node.max(1);
        let mut nodes: Vec<usize> = ranks.iter().map(|r| r / per).collect();
        nodes.sort_unstable();
        nodes
            .chunk_by(|a, b| a == b)
            .map(<[usize]>::len)
            .max()
            .unwrap_or(0)
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
        let traffic = kind.traffic_factor(n) * bytes as f64;
        let rate = |l: &Link| l.bandwidth_gbps * l.efficiency;
        let beta = if self.multi_rail && self.spans_nodes(ranks) {
            let g = self.members_per_node(ranks).max(1) as f64;
            let nvlink = (g - 1.0) / g / rate(&self.intra_node);
            let nic = 1.0 / g / rate(&self.inter_node);
            traffic * nvlink.max(nic)
        } else {
            traffic / rate(&link)
        };
        alpha * 1e3 + beta
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GpuSpec;

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
    fn multi_rail_rings_use_every_members_nic() {
        let mut net = GpuSpec::a100().network;
        // DGX A100 has a NIC per GPU.
        assert!(net.multi_rail);
        net.multi_rail = false;
        let b = 1 << 30;
        // Eight ranks, four on each of two nodes (TP 2 x DP 8 in
        // Megatron's order: the data-parallel group of TP rank 0).
        let ranks: Vec<usize> = (0..8).map(|i| 2 * i).collect();
        assert_eq!(net.members_per_node(&ranks), 4);
        let single = net.collective_time_ns(CollectiveKind::AllReduce, b, &ranks);
        net.multi_rail = true;
        let multi = net.collective_time_ns(CollectiveKind::AllReduce, b, &ranks);
        // Four NICs carry the crossings: four times the bandwidth.
        let ratio = single / multi;
        assert!((ratio - 4.0).abs() < 0.05, "{ratio}");
        // One member per node: every hop crosses, one NIC each, as before.
        let spread: Vec<usize> = (0..8).map(|i| 8 * i).collect();
        net.multi_rail = false;
        let a = net.collective_time_ns(CollectiveKind::AllReduce, b, &spread);
        net.multi_rail = true;
        assert_eq!(
            a,
            net.collective_time_ns(CollectiveKind::AllReduce, b, &spread)
        );
        // Eight members per node on a fast NIC: NVLink binds.
        let full: Vec<usize> = (0..16).collect();
        net.inter_node.bandwidth_gbps = 1e4;
        let t = net.collective_time_ns(CollectiveKind::AllReduce, b, &full);
        let nvlink = 2.0 * 15.0 / 16.0 * b as f64 * 7.0
            / 8.0
            / (net.intra_node.bandwidth_gbps * net.intra_node.efficiency);
        // Plus the alpha term: 30 ring steps of a few microseconds.
        assert!(
            (t - nvlink) > 0.0 && (t - nvlink) / nvlink < 0.02,
            "{t} {nvlink}"
        );
    }
}
