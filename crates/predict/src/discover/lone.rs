//! The own work of a step's only forward pass (a trace of one
//! micro-batch), told from the step's prologue by its kind.
//!
//! With two passes or more, the first pass's own work is what also
//! precedes every other pass ([`super::passes::first_pass_own`]); with one
//! there is no other to compare with. The rule instead (docs/PREDICTION.md
//! section 2, "One traced micro-batch"): from the first unit before the
//! pass that is per-micro-batch in kind (data loading, a host-to-device
//! copy, an embedding, a pipeline receive, or work inside a user annotation that also wraps
//! the pass's first layer but not the step's epilogue, PyTorch loops'
//! `microbatch0` or DDP's forward) up to the first layer, the units are
//! the pass's own; what comes before that unit (gradient zeroing, other
//! step-level work) stays in the prologue, and so does everything up to a
//! gradient zeroing (`zero_grad`) that comes after it. A rule of names and kinds, not
//! of evidence, so predictions that copy such a pass say so and lose
//! confidence.

use lumos_graph::{Graph, ScopeId, TaskKind};

use super::comms::p2p_of;
use super::P2p;
use crate::units::Units;

/// How many of the units before a step's only forward pass (`pre`, on the
/// main thread, in order) are its own: those from the first that is
/// per-micro-batch in kind on (see the module docs). `first_layer` is the
/// pass's first layer unit, `epilogue` the step's units after its last
/// pass.
pub(super) fn lone_pass_own(
    g: &Graph,
    units: &Units,
    pre: &[u32],
    first_layer: u32,
    epilogue: &[u32],
) -> usize {
    let wrappers = pass_wrappers(g, units, first_layer, epilogue);
    let Some(first) = pre
        .iter()
        .position(|&u| per_micro_batch(g, units, u, &wrappers))
    else {
        return 0;
    };
    // Gradient zeroing is the step's, wherever it falls: a loop that
    // loads its batch before `optimizer.zero_grad()` keeps the zeroing in
    // the prologue (and the loading with it, the own work being the units
    // right before the pass).
    let after_zeroing = (pre.iter())
        .rposition(|&u| {
            units
                .token(u as usize)
                .to_ascii_lowercase()
                .contains("zero_grad")
        })
        .map_or(0, |i| i + 1);
    pre.len() - first.max(after_zeroing)
}

/// The user annotations that enclose unit `first_layer` but none of the
/// `epilogue`'s units: annotations around the pass, not around the step.
fn pass_wrappers(g: &Graph, units: &Units, first_layer: u32, epilogue: &[u32]) -> Vec<ScopeId> {
    let chain = |u: u32| -> Vec<ScopeId> {
        units.units[u as usize]
            .cpu()
            .first()
            .map(|&t| g.scope_chain(t).collect())
            .unwrap_or_default()
    };
    let after: Vec<ScopeId> = epilogue.iter().flat_map(|&u| chain(u)).collect();
    chain(first_layer)
        .into_iter()
        .filter(|&s| {
            let sc = &g.scopes[s.0 as usize];
            sc.annotation
                && !g.names[sc.name.0 as usize].starts_with("ProfilerStep")
                && !after.contains(&s)
        })
        .collect()
}

/// Whether unit `u` is work each micro-batch does for itself: data
/// loading, a host-to-device copy, an embedding, a pipeline receive (the
/// activations the stage before sent for this micro-batch), or anything
/// inside one of the pass's `wrappers`.
fn per_micro_batch(g: &Graph, units: &Units, u: u32, wrappers: &[ScopeId]) -> bool {
    let unit = &units.units[u as usize];
    let token = units.token(u as usize);
    let named = token.contains("DataLoader") || token.to_ascii_lowercase().contains("embedding");
    let received = unit.gpu().iter().any(|&t| {
        g.task(t)
            .collective
            .is_some_and(|c| p2p_of(&g.collectives[c as usize].name) == Some(P2p::Recv))
    });
    let h2d = unit.gpu().iter().any(|&t| {
        g.task(t).kind == TaskKind::Memcpy && {
            let n = g.name(t);
            n.contains("HtoD") || n.contains("Host to Device")
        }
    });
    let wrapped = unit
        .cpu()
        .first()
        .is_some_and(|&t| g.scope_chain(t).any(|s| wrappers.contains(&s)));
    named || received || h2d || wrapped
}
