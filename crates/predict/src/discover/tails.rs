//! Step 5c of discovery: the work a forward pass leaves behind it on the
//! main thread (the last virtual stage's loss head) given back to that
//! forward.
//!
//! Units between passes go to the pass after them (sends excepted,
//! `passes::between_passes`), since what precedes a pass is mostly its
//! own: a receive, data loading. The loss head is the exception: it runs
//! after the last stage's layers, so it lands in the next pass's first
//! units. That is harmless while the forward is always followed by the
//! same kind of pass (plain 1F1B's last stage runs each backward right
//! after its forward), but the interleaved schedule's last chunk is also
//! followed by forwards: in the warm-up, and throughout when the
//! micro-batches are as many as the stages (Megatron runs every forward
//! first then). A prediction that copies such a forward after a backward
//! would bring the loss of the forward before it a second time, and one
//! that copies a backward without it would drop a loss.
//!
//! This runs on interleaved stages only (see [`give_forwards_their_tails`]).
//! Only what follows *every* forward of a model chunk, whatever the pass
//! after it, can be told to be the forward's own: the longest common run
//! of main-thread units opening the next passes' `pre`, up to the first
//! pipeline transfer, lone stream wait or device synchronization (the next
//! pass's receive). Where every forward of a chunk is followed by the same
//! kind of pass of the same chunk, nothing is moved: the trace cannot tell
//! the forward's tail from the next pass's head, and a copy keeps them
//! together as traced.

use lumos_graph::ProcId;

use super::{Part, PassKind, PassStructure, Role, Structure};

/// Moves each forward's tail (see the module docs) from the `pre` of the
/// pass after it to the forward's `post`, in every step of `s`, and sets
/// the moved units' roles. Only on a stage found to run the interleaved
/// schedule: on a plain 1F1B stage the last stage's forwards are always
/// followed by their backwards, and a stage whose forwards are followed
/// by several kinds of pass either sends after them (every stage but the
/// last) or is not a pipeline whose passes discovery cut as Megatron's
/// (a single-stage trace whose one forward was cut into several), where
/// moving a common opening would change what was found for no prediction
/// that needs it.
pub(super) fn give_forwards_their_tails(s: &mut Structure) {
    if s.config.virtual_stages.is_none() {
        return;
    }
    for si in 0..s.steps.len() {
        let chunks = s.steps[si]
            .passes
            .iter()
            .map(|p| p.chunk)
            .max()
            .map_or(0, |c| c + 1);
        for chunk in 0..chunks {
            let moved = tail_len(s, si, chunk);
            if moved == 0 {
                continue;
            }
            let main = s.steps[si].main;
            let step = &mut s.steps[si];
            for pi in 0..step.passes.len().saturating_sub(1) {
                let p = &step.passes[pi];
                if p.kind != PassKind::Forward || p.chunk != chunk {
                    continue;
                }
                let tail: Vec<u32> = step.passes[pi + 1].pre.drain(..moved).collect();
                debug_assert!(tail
                    .iter()
                    .all(|&u| s.units.units[u as usize].thread == main));
                for &u in &tail {
                    s.roles[u as usize] = Role::Pass {
                        step: si as u32,
                        pass: pi as u32,
                        part: Part::Post,
                    };
                }
                let post = &mut step.passes[pi].post;
                post.extend(tail);
                post.sort_unstable();
            }
        }
    }
}

/// How many units open the `pre` of the pass after every forward of
/// `chunk` in step `si` and are the same on all of them (by token), up to
/// the first one that is not the forward's (see the module docs); 0 when
/// the passes after them are all of one kind and chunk, or fewer than two
/// forwards of the chunk have a pass after them.
fn tail_len(s: &Structure, si: usize, chunk: u32) -> usize {
    let step = &s.steps[si];
    let followers: Vec<&PassStructure> = step
        .passes
        .windows(2)
        .filter(|w| w[0].kind == PassKind::Forward && w[0].chunk == chunk)
        .map(|w| &w[1])
        .collect();
    if followers.len() < 2
        || followers
            .iter()
            .all(|f| (f.kind, f.chunk) == (followers[0].kind, followers[0].chunk))
    {
        return 0;
    }
    let first = opening(s, step.main, &followers[0].pre);
    followers[1..].iter().fold(first.len(), |n, f| {
        let other = opening(s, step.main, &f.pre);
        first
            .iter()
            .zip(&other)
            .take(n)
            .take_while(|(a, b)| a == b)
            .count()
    })
}

/// The tokens of the units that `pre` (the `pre` of the pass after a
/// forward) opens with that may be the forward's own: on the `main`
/// thread, before the next pass's receive (the first pipeline transfer,
/// lone stream wait or device synchronization).
pub(super) fn opening(s: &Structure, main: ProcId, pre: &[u32]) -> Vec<u32> {
    pre.iter()
        .take_while(|&&u| {
            let i = u as usize;
            s.units.units[i].thread == main
                && s.unit_p2p(u).is_none()
                && !s.units.is_bare_wait(i)
                && !s.units.is_bare_device_sync(i)
        })
        .map(|&u| s.units.units[u as usize].token)
        .collect()
}
