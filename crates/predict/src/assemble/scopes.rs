//! Scopes of the copied units: every copy of a unit gets scopes of its own,
//! so that in the new graph each scope is one contiguous range on one
//! thread, as in a trace.
//!
//! A template scope is either *inside* one unit (the unit's top-level
//! operator and everything under it) or *spans* several (the step
//! annotation and what encloses it). A scope inside a unit is copied once
//! per copy of the unit. A spanning scope is shared by consecutive tasks of
//! its thread in the new graph while they belong to the same new step and
//! want a scope of the same name at the same depth, whichever template
//! they came from; anything else on the thread in between closes it, and
//! the next task that wants it opens a fresh copy. Parents are those of the
//! new chain.
//!
//! The first use of a template scope keeps its id (the template's scopes
//! are in the new graph from the start, see `prepare`), so the identity
//! plan gives back the graph's scopes as they were; later copies are
//! appended with the same name, `Input Dims` and `Input type`, so no
//! shape-based model reads anything different.

use lumos_graph::{Graph, ProcId, ScopeId, TaskId};
use rustc_hash::FxHashMap;

use crate::units::NO_UNIT;

/// Marks a scope whose tasks lie in more than one unit.
const SPANS: u32 = u32::MAX - 1;

/// The unit each scope of `g` lies inside ([`SPANS`] when its tasks are in
/// several units, [`NO_UNIT`] when none of them is in a unit).
pub(super) fn scope_units(g: &Graph, unit_of: &[u32]) -> Vec<u32> {
    let mut out = vec![NO_UNIT; g.scopes.len()];
    if g.task_scopes.len() != g.tasks.len() {
        return out;
    }
    for (i, &u) in unit_of.iter().enumerate() {
        if u == NO_UNIT {
            continue;
        }
        for s in g.scope_chain(TaskId(i as u32)) {
            let slot = &mut out[s.0 as usize];
            *slot = match *slot {
                NO_UNIT => u,
                x if x == u => u,
                _ => SPANS,
            };
        }
    }
    out
}

/// One scope open on a thread of the new graph.
#[derive(Debug, Clone, Copy)]
struct Open {
    /// The template scope, as its id in the new graph (`scope_off` added).
    template: u32,
    /// Its copy.
    new: ScopeId,
    /// Whether the template scope lies inside one unit.
    inside: bool,
    /// The unit copy it was opened in.
    serial: u32,
    /// The new step it was opened in.
    step: Option<u32>,
}

/// The scopes copied so far and those open on each thread.
#[derive(Default)]
pub(super) struct ScopeCopier {
    /// Whether each scope the new graph started with has been used.
    used: Vec<bool>,
    /// Per new thread, its open scopes, outermost first.
    open: FxHashMap<ProcId, Vec<Open>>,
    /// The latest copy of each template scope.
    latest: FxHashMap<u32, ScopeId>,
    /// Copies made for the unit being copied.
    here: FxHashMap<u32, ScopeId>,
}

/// Where a unit copy is: its serial number, its new step, and for each
/// scope of its template whether it lies inside one unit.
pub(super) struct UnitCopy<'a> {
    pub(super) serial: u32,
    pub(super) step: Option<u32>,
    pub(super) scope_off: u32,
    pub(super) scope_units: &'a [u32],
}

impl ScopeCopier {
    /// A copier for a new graph that starts with `scopes` scopes (every
    /// template's, each at its template's offset).
    pub(super) fn new(scopes: usize) -> ScopeCopier {
        ScopeCopier {
            used: vec![false; scopes],
            ..ScopeCopier::default()
        }
    }

    /// Starts copying a unit.
    pub(super) fn begin_unit(&mut self) {
        self.here.clear();
    }

    /// The scope of a CPU task copied onto thread `q`, whose template
    /// chain (innermost first, ids in the new graph) is `chain`; opens and
    /// closes scopes on `q` to match, copying them into `g` as needed.
    pub(super) fn cpu_task(
        &mut self,
        g: &mut Graph,
        q: ProcId,
        chain: &[u32],
        at: &UnitCopy,
    ) -> Option<ScopeId> {
        let open = self.open.entry(q).or_default();
        let mut depth = 0;
        for &want in chain.iter().rev() {
            let inside = at.scope_units[(want - at.scope_off) as usize] != SPANS;
            let keep = open.get(depth).is_some_and(|o| {
                if inside {
                    o.inside && o.template == want && o.serial == at.serial
                } else {
                    !o.inside
                        && o.step == at.step
                        && (o.template == want
                            || g.scopes[o.new.0 as usize].name == g.scopes[want as usize].name)
                }
            });
            if !keep {
                open.truncate(depth);
                let parent = open.last().map(|o| o.new);
                let new = copy_scope(g, &mut self.used, want, parent);
                open.push(Open {
                    template: want,
                    new,
                    inside,
                    serial: at.serial,
                    step: at.step,
                });
            }
            self.here.insert(want, open[depth].new);
            self.latest.insert(want, open[depth].new);
            depth += 1;
        }
        open.truncate(depth);
        open.last().map(|o| o.new)
    }

    /// The scope of a GPU task whose template scope is `s`: its launch
    /// call's copy in this unit, else the latest copy, else `s` itself.
    pub(super) fn gpu_task(&self, s: u32) -> ScopeId {
        self.here
            .get(&s)
            .or_else(|| self.latest.get(&s))
            .copied()
            .unwrap_or(ScopeId(s))
    }
}

/// A copy of scope `s` of `g` under `parent`: `s` itself the first time
/// (when `parent` comes before it, as every scope's parent must), a new
/// scope like it, after every other, otherwise.
fn copy_scope(g: &mut Graph, used: &mut [bool], s: u32, parent: Option<ScopeId>) -> ScopeId {
    let first = parent.is_none_or(|p| p.0 < s)
        && used
            .get_mut(s as usize)
            .is_some_and(|u| !std::mem::replace(u, true));
    if first {
        g.scopes[s as usize].parent = parent;
        return ScopeId(s);
    }
    let mut copy = g.scopes[s as usize].clone();
    copy.parent = parent;
    g.scopes.push(copy);
    ScopeId(g.scopes.len() as u32 - 1)
}
