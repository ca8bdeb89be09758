//! Megatron's rank layout: which global rank holds which tensor, data and
//! pipeline index, and the process groups each rank belongs to, with the
//! names PyTorch gives them. The synthesizer writes its traces' groups
//! with it and the predictor places a predicted job's ranks and groups
//! with it, so a predicted job numbers its ranks and groups as a traced
//! one of the same degrees would.

/// Parallel degrees, ranks in Megatron's order: tensor index fastest, then
/// data, then pipeline stage (`rank = pp * dp_size * tp_size + dp *
/// tp_size + tp`). Nodes hold consecutive ranks, so the order decides
/// which groups cross nodes. A degree of 0 is taken as 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RankLayout {
    /// Tensor-parallel degree.
    pub tp: usize,
    /// Data-parallel degree.
    pub dp: usize,
    /// Pipeline-parallel degree (stages).
    pub pp: usize,
}

/// Where a rank sits in the 3-D layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RankCoord {
    /// Tensor-parallel index.
    pub tp: usize,
    /// Data-parallel index.
    pub dp: usize,
    /// Pipeline stage.
    pub pp: usize,
}

/// Which Megatron group a process group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupKind {
    /// Every rank (`default_pg`).
    World,
    /// Same tensor index and stage: gradient reduction.
    DataParallel,
    /// Same data index and stage: tensor-parallel collectives.
    TensorParallel,
    /// Same tensor and data index: pipeline send/recv.
    PipelineParallel,
    /// Same data index: tensor x pipeline (gradient-norm reduction).
    ModelParallel,
}

impl GroupKind {
    /// Every kind, in the order PyTorch creates the groups (and
    /// [`RankLayout::groups_of`] lists them).
    pub const ALL: [GroupKind; 5] = [
        GroupKind::World,
        GroupKind::DataParallel,
        GroupKind::TensorParallel,
        GroupKind::PipelineParallel,
        GroupKind::ModelParallel,
    ];

    /// The `Process Group Description` / `pg_desc` Megatron gives the group.
    pub fn description(self) -> &'static str {
        match self {
            GroupKind::World => "default_pg",
            GroupKind::DataParallel => "DATA_PARALLEL_GROUP",
            GroupKind::TensorParallel => "TENSOR_MODEL_PARALLEL_GROUP",
            GroupKind::PipelineParallel => "PIPELINE_MODEL_PARALLEL_GROUP",
            GroupKind::ModelParallel => "MODEL_PARALLEL_GROUP",
        }
    }
}

/// One process group as a rank sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessGroup {
    /// Which group.
    pub kind: GroupKind,
    /// `pg_name` (creation index as a string).
    pub name: String,
    /// Global ranks, in group order.
    pub ranks: Vec<usize>,
}

impl RankLayout {
    /// The layout of `tp x dp x pp` ranks.
    pub fn new(tp: usize, dp: usize, pp: usize) -> RankLayout {
        RankLayout { tp, dp, pp }
    }

    fn degrees(&self) -> (usize, usize, usize) {
        (self.tp.max(1), self.dp.max(1), self.pp.max(1))
    }

    /// Total ranks.
    pub fn world_size(&self) -> usize {
        let (tp, dp, pp) = self.degrees();
        tp.saturating_mul(dp).saturating_mul(pp)
    }

    /// The coordinates of global rank `rank` (a rank past the world gets a
    /// stage past the last).
    pub fn coord(&self, rank: usize) -> RankCoord {
        let (tp, dp, _) = self.degrees();
        RankCoord {
            tp: rank % tp,
            dp: (rank / tp) % dp,
            pp: rank / (tp * dp),
        }
    }

    /// The global rank at `c` (inverse of [`RankLayout::coord`]).
    pub fn rank_of(&self, c: RankCoord) -> usize {
        let (tp, dp, _) = self.degrees();
        (c.pp * dp + c.dp) * tp + c.tp
    }

    /// The global ranks of the group of `kind` that the rank at `c`
    /// belongs to, in group order.
    pub fn group_ranks(&self, kind: GroupKind, c: RankCoord) -> Vec<usize> {
        let (tp, dp, pp) = self.degrees();
        let at = |f: &dyn Fn(usize) -> RankCoord, n: usize| -> Vec<usize> {
            (0..n).map(|i| self.rank_of(f(i))).collect()
        };
        match kind {
            GroupKind::World => (0..self.world_size()).collect(),
            GroupKind::DataParallel => at(&|i| RankCoord { dp: i, ..c }, dp),
            GroupKind::TensorParallel => at(&|i| RankCoord { tp: i, ..c }, tp),
            GroupKind::PipelineParallel => at(&|i| RankCoord { pp: i, ..c }, pp),
            GroupKind::ModelParallel => (0..pp)
                .flat_map(|p| (0..tp).map(move |t| (p, t)))
                .map(|(p, t)| {
                    self.rank_of(RankCoord {
                        tp: t,
                        dp: c.dp,
                        pp: p,
                    })
                })
                .collect(),
        }
    }

    /// The `pg_name` of the group of `kind` that the rank at `c` belongs
    /// to: its creation index over all ranks (every rank creates every
    /// group, in the same order: the default group, then Megatron's data-,
    /// tensor-, pipeline- and model-parallel groups), so the same group
    /// has the same name in every rank's trace.
    pub fn group_name(&self, kind: GroupKind, c: RankCoord) -> String {
        let (tp, dp, pp) = self.degrees();
        let n_dp = tp * pp;
        let n_tp = dp * pp;
        let n_pp = tp * dp;
        let base_tp = 1 + n_dp;
        let base_pp = base_tp + n_tp;
        let base_mp = base_pp + n_pp;
        let index = match kind {
            GroupKind::World => 0,
            GroupKind::DataParallel => 1 + c.pp * tp + c.tp,
            GroupKind::TensorParallel => base_tp + c.pp * dp + c.dp,
            GroupKind::PipelineParallel => base_pp + c.dp * tp + c.tp,
            GroupKind::ModelParallel => base_mp + c.dp,
        };
        index.to_string()
    }

    /// The group of `kind` that the rank at `c` belongs to.
    pub fn group(&self, kind: GroupKind, c: RankCoord) -> ProcessGroup {
        ProcessGroup {
            kind,
            name: self.group_name(kind, c),
            ranks: self.group_ranks(kind, c),
        }
    }

    /// The process groups `rank` belongs to, in the order PyTorch would
    /// have created them ([`GroupKind::ALL`]).
    pub fn groups_of(&self, rank: usize) -> Vec<ProcessGroup> {
        let c = self.coord(rank);
        GroupKind::ALL.iter().map(|&k| self.group(k, c)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn megatron_order_and_groups() {
        // TP 2 x DP 2 x PP 2.
        let l = RankLayout::new(2, 2, 2);
        assert_eq!(l.world_size(), 8);
        // Tensor index fastest, then data-parallel, then stage.
        assert_eq!(
            l.coord(1),
            RankCoord {
                tp: 1,
                dp: 0,
                pp: 0
            }
        );
        assert_eq!(
            l.coord(2),
            RankCoord {
                tp: 0,
                dp: 1,
                pp: 0
            }
        );
        assert_eq!(
            l.coord(5),
            RankCoord {
                tp: 1,
                dp: 0,
                pp: 1
            }
        );
        for r in 0..8 {
            assert_eq!(l.rank_of(l.coord(r)), r);
        }
        let g = l.groups_of(5);
        let get = |k| g.iter().find(|x| x.kind == k).unwrap().ranks.clone();
        assert_eq!(get(GroupKind::World), (0..8).collect::<Vec<_>>());
        assert_eq!(get(GroupKind::TensorParallel), vec![4, 5]);
        assert_eq!(get(GroupKind::DataParallel), vec![5, 7]);
        assert_eq!(get(GroupKind::PipelineParallel), vec![1, 5]);
        assert_eq!(get(GroupKind::ModelParallel), vec![0, 1, 4, 5]);
        // Every group's members name it alike, and no two groups share a
        // name.
        let mut names = std::collections::BTreeMap::new();
        for r in 0..8 {
            for pg in l.groups_of(r) {
                assert!(pg.ranks.contains(&r));
                if let Some(was) = names.insert(pg.name.clone(), pg.ranks.clone()) {
                    assert_eq!(was, pg.ranks, "{}", pg.name);
                }
            }
        }
        // 1 world, 4 data-, 4 tensor-, 4 pipeline-, 2 model-parallel.
        assert_eq!(names.len(), 15);
        // Degrees of 0 count as 1.
        assert_eq!(RankLayout::new(0, 0, 0).world_size(), 1);
    }
}
