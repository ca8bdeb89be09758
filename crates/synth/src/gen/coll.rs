//! Collectives and point-to-point transfers, issued the way PyTorch's
//! ProcessGroupNCCL issues them, with durations from the network model.

use lumos_models::CollectiveKind;

use super::{CollArgs, Dtype, Ev, Gen, Gpu, GpuKind, OpArgs, Shape, COMPUTE, PP_NEXT, PP_PREV};
use crate::config::{GroupKind, RankCoord};

/// A point-to-point transfer's other end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct P2p {
    /// Global rank of the peer.
    pub peer: usize,
    /// True for send, false for receive.
    pub send: bool,
}

/// One collective call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Coll {
    pub kind: CollectiveKind,
    pub group: GroupKind,
    pub stream: usize,
    pub in_nelems: u64,
    pub out_nelems: u64,
    pub dtype: Dtype,
    pub p2p: Option<P2p>,
    /// See [`Gpu::peer_ready`].
    pub peer_ready: i64,
    /// NCCL channels (grid size of the kernel).
    pub channels: u32,
}

impl Coll {
    /// A collective on `group` over `stream` with no peer timing.
    pub(crate) fn new(
        kind: CollectiveKind,
        group: GroupKind,
        stream: usize,
        in_nelems: u64,
        out_nelems: u64,
        dtype: Dtype,
    ) -> Coll {
        Coll {
            kind,
            group,
            stream,
            in_nelems,
            out_nelems,
            dtype,
            p2p: None,
            peer_ready: 0,
            channels: 16,
        }
    }
}

fn names(c: &Coll) -> (&'static str, &'static str) {
    match (c.kind, c.p2p) {
        (CollectiveKind::AllReduce, _) => ("allreduce", "c10d::allreduce_"),
        (CollectiveKind::AllGather, _) => ("_allgather_base", "c10d::_allgather_base_"),
        (CollectiveKind::ReduceScatter, _) => {
            ("_reduce_scatter_base", "c10d::_reduce_scatter_base_")
        }
        (CollectiveKind::SendRecv, Some(P2p { send: true, .. })) => ("send", "c10d::send"),
        (CollectiveKind::SendRecv, _) => ("recv", "c10d::recv_"),
    }
}

fn kernel_name(c: &Coll) -> String {
    match c.kind {
        CollectiveKind::AllReduce => format!(
            "ncclDevKernel_AllReduce_Sum_{}_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
            c.dtype.nccl_name()
        ),
        CollectiveKind::AllGather => {
            "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)".into()
        }
        CollectiveKind::ReduceScatter => format!(
            "ncclDevKernel_ReduceScatter_Sum_{}_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
            c.dtype.nccl_name()
        ),
        CollectiveKind::SendRecv => {
            "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)".into()
        }
    }
}

impl Gen<'_> {
    /// The global rank of the stage `delta` away in the pipeline (wrapping
    /// around, as the interleaved schedule's transfers do).
    pub(crate) fn pipeline_peer(&self, delta: isize) -> usize {
        let p = self.cfg.parallel.pp as isize;
        let pp = (self.coord.pp as isize + delta).rem_euclid(p) as usize;
        self.cfg.parallel.rank_of(RankCoord { pp, ..self.coord })
    }

    /// Which of the two pipeline communicators a transfer with `peer`
    /// uses: the next stage's (1) or the previous stage's (0). With two
    /// stages the next and the previous stage are one rank, hence one
    /// communicator.
    fn p2p_slot(&self, peer: usize) -> usize {
        usize::from(peer == self.pipeline_peer(1))
    }

    /// The stream of transfers with `peer`.
    pub(crate) fn p2p_stream(&self, peer: usize) -> usize {
        if self.p2p_slot(peer) == 1 {
            PP_NEXT
        } else {
            PP_PREV
        }
    }

    /// The modelled duration of `kind` moving `bytes` over `ranks`,
    /// remembered: the same few collectives repeat thousands of times.
    fn collective_model_ns(
        &mut self,
        kind: CollectiveKind,
        bytes: u64,
        gi: usize,
        p2p: Option<P2p>,
    ) -> f64 {
        let key = (kind, bytes, gi, p2p.map(|p| p.peer));
        if let Some(&t) = self.coll_cache.get(&key) {
            return t;
        }
        let t = match p2p {
            Some(p) => {
                let r = [self.rank.min(p.peer), self.rank.max(p.peer)];
                self.net.collective_time_ns(kind, bytes, &r)
            }
            None => self
                .net
                .collective_time_ns(kind, bytes, &self.group_ranks[gi]),
        };
        self.coll_cache.insert(key, t);
        t
    }

    /// Issues a collective the way ProcessGroupNCCL does: the
    /// communicator's stream first waits for the compute stream, the NCCL
    /// kernel runs on it, and an end event is recorded for `wait()`. The
    /// whole call sits in a `c10d::*` op with a `record_param_comms` child
    /// that carries the collective's args (the kernel carries them too).
    /// Returns the end event; a synchronous caller waits on it at once.
    pub(crate) fn collective(&mut self, c: &Coll) -> Ev {
        let gi = super::group_index(c.group);
        let (coll_name, op_name) = names(c);
        let kernel = if self.emit {
            kernel_name(c)
        } else {
            String::new()
        };
        let seq = match c.p2p {
            Some(p) => {
                let i = 2 * self.p2p_slot(p.peer) + usize::from(p.send);
                self.p2p_seq[i] += 1;
                self.p2p_seq[i]
            }
            None => {
                self.seq[gi] += 1;
                self.seq[gi]
            }
        };
        let bytes = c.in_nelems.max(c.out_nelems) * c.dtype.bytes();
        let model_ns = self.collective_model_ns(c.kind, bytes, gi, c.p2p);
        let dur = self.gpu.around(model_ns, 0.03);
        let args = CollArgs {
            name: coll_name,
            in_nelems: c.in_nelems,
            out_nelems: c.out_nelems,
            group_size: self.group_ranks[gi].len(),
            dtype: c.dtype,
            group: gi,
            seq,
            src_dst: c.p2p.map(|p| {
                if p.send {
                    (self.rank, p.peer)
                } else {
                    (p.peer, self.rank)
                }
            }),
        };
        let stream = c.stream;
        let nccl_shape = Shape::new([c.channels, 1, 1], [544, 1, 1], 96, 0);
        self.op(op_name, |g| {
            g.op_args("record_param_comms", OpArgs::Coll(args), |g| {
                let ready = g.record(COMPUTE);
                g.wait(stream, ready);
                g.launch(
                    stream,
                    &Gpu {
                        name: &kernel,
                        dur,
                        kind: GpuKind::Kernel,
                        shape: nccl_shape,
                        coll: Some(&args),
                        peer_ready: c.peer_ready,
                    },
                );
                g.record(stream)
            })
        })
    }
}
