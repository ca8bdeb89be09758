//! The `nccl:<collective>` operators PyTorch records around a collective's
//! launch (`nccl:all_to_all`): what the program asked for, where the
//! collective's recorded name may be only its kernels' family (NCCL runs
//! an all-to-all as `SendRecv` kernels). The predictor's discovery and the
//! report's collectives table both read them.

use rustc_hash::FxHashMap;

use crate::model::{Graph, ScopeId, TaskId};

/// The `nccl:<collective>` operators of one graph, by the tasks they
/// enclose; each scope's operator is looked for once.
pub struct NcclOperators<'g> {
    g: &'g Graph,
    /// Whether the graph names any such operator: most traces name none,
    /// and then no task's scopes are walked to the root (on a large trace,
    /// a cache miss at every scope, for every collective).
    any: bool,
    /// The operator each scope asked about so far is in: the tasks of one
    /// operator share its scope.
    of_scope: FxHashMap<ScopeId, Option<&'g str>>,
}

impl<'g> NcclOperators<'g> {
    /// The operators of `g`.
    pub fn of(g: &'g Graph) -> Self {
        let any = (g.names.iter()).any(|n| n.strip_prefix("nccl:").is_some_and(|c| !c.is_empty()));
        NcclOperators {
            g,
            any,
            of_scope: FxHashMap::default(),
        }
    }

    /// The collective the innermost `nccl:<collective>` operator enclosing
    /// task `t` names (`all_to_all` for `nccl:all_to_all`), if one does.
    pub fn collective(&mut self, t: TaskId) -> Option<&'g str> {
        if !self.any {
            return None;
        }
        let g = self.g;
        let scope = g.scope_of(t)?;
        *self.of_scope.entry(scope).or_insert_with(|| {
            std::iter::successors(Some(scope), |s| g.scopes.get(s.0 as usize)?.parent).find_map(
                |s| {
                    let name = g.names.get(g.scopes.get(s.0 as usize)?.name.0 as usize)?;
                    name.strip_prefix("nccl:").filter(|c| !c.is_empty())
                },
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NameId, ProcId, Scope, Task, TaskKind};

    fn scope(name: u32, parent: Option<u32>) -> Scope {
        Scope {
            name: NameId(name),
            parent: parent.map(ScopeId),
            annotation: false,
            input_dims: None,
            input_type: None,
        }
    }

    fn task() -> Task {
        Task {
            kind: TaskKind::Kernel,
            name: NameId(0),
            proc: ProcId(0),
            duration_ns: 1,
            release_ns: 0,
            collective: Some(0),
            correlation: 0,
        }
    }

    /// Scopes: 0 `nccl:all_to_all` > 1 `nccl:` > 2 `record_param_comms`;
    /// 3 `aten::mm` alone. Tasks: in 2, in 3, in none.
    fn graph(names: &[&str]) -> Graph {
        Graph {
            names: names.iter().map(|n| n.to_string()).collect(),
            tasks: vec![task(), task(), task()],
            scopes: vec![
                scope(1, None),
                scope(2, Some(0)),
                scope(3, Some(1)),
                scope(4, None),
            ],
            task_scopes: vec![Some(ScopeId(2)), Some(ScopeId(3)), None],
            ..Graph::default()
        }
    }

    #[test]
    fn the_innermost_named_operator_encloses_a_task() {
        let names = [
            "SendRecv",
            "nccl:all_to_all",
            "nccl:",
            "record_param_comms",
            "aten::mm",
        ];
        let g = graph(&names);
        let mut ops = NcclOperators::of(&g);
        // `nccl:` names no collective: the walk goes on to its parent.
        assert_eq!(ops.collective(TaskId(0)), Some("all_to_all"));
        assert_eq!(ops.collective(TaskId(0)), Some("all_to_all"));
        assert_eq!(ops.collective(TaskId(1)), None);
        assert_eq!(ops.collective(TaskId(2)), None);
    }

    #[test]
    fn a_graph_without_operators_walks_no_scope() {
        let names = ["SendRecv", "a", "nccl:", "b", "c"];
        let g = graph(&names);
        let mut ops = NcclOperators::of(&g);
        assert!(!ops.any);
        assert_eq!(ops.collective(TaskId(0)), None);
        assert!(ops.of_scope.is_empty());
    }
}
