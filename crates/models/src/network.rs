//! Alpha-beta model of NCCL ring collectives on a cluster of identical
//! nodes: NVLink inside a node, one InfiniBand link per GPU across nodes.

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
}
