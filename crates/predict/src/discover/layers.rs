//! Step 3a of discovery: the layer blocks, the sequences of unit tokens
//! that one transformer layer runs forward and backward.
//!
//! The backward block is looked for first, inside the backward bursts (one
//! pass each, so no pass can repeat inside one): [`backward_block`]. Its
//! chain lengths give the layers per pass, and the forward block is the
//! block that repeats exactly that often on the main thread, preferably
//! one that shares names with the backward block ([`forward_block`]).
//! Where foreign work (gradient buckets) interrupts the layers too often
//! for any two to repeat untouched, the block is looked for again among
//! the operators run as often as layers
//! ([`backward_block_among_interruptions`]). A
//! trace that repeats nothing (one layer per pass) may take another
//! stage's blocks ([`blocks_from_hint`]), and offers its passes as a
//! candidate layer for the job ([`one_layer_per_pass`]); one with no CPU
//! operators at all
//! is looked at kernel by kernel, for the report only ([`kernel_pattern`]).

use lumos_graph::Graph;
use rustc_hash::{FxHashMap, FxHashSet};

use super::passes::StepThreads;
use super::{mode, tokens, LayerHint, LayerMethod};
use crate::pattern::{best_period, best_period_late, chains, longest_chain, period_with_repeats};
use crate::units::{is_layer_name, Units};

/// The layer blocks and how they were found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LayerBlocks {
    /// The forward block, as unit tokens (empty when not found).
    pub forward: Vec<u32>,
    /// The backward block, as unit tokens (empty when not found).
    pub backward: Vec<u32>,
    /// Layers per backward pass: the most common number of back-to-back
    /// backward blocks in a burst, at least 2 (at least 1 with another
    /// stage's blocks).
    pub per_pass: Option<usize>,
    /// How they were found ([`LayerMethod::KernelPattern`] is decided
    /// later, by the caller).
    pub method: LayerMethod,
}

/// Finds the layer blocks of the steps in `threads`; `hint` holds another
/// stage's blocks, taken when this trace repeats none of its own.
pub(super) fn layer_blocks(
    units: &Units,
    threads: &[StepThreads],
    hint: Option<&LayerHint>,
) -> LayerBlocks {
    let (burst_tokens, main_tokens) = thread_tokens(units, threads);
    let layers_of = |b: &[u32]| {
        mode(
            chain_counts(&burst_tokens, b)
                .into_iter()
                .filter(|&c| c >= 2),
        )
    };
    let mut bwd = backward_block(units, &burst_tokens);
    let mut per_pass = bwd.as_deref().and_then(layers_of);
    if per_pass.is_none() {
        if let Some((b, l)) = backward_block_among_interruptions(units, &burst_tokens, false) {
            bwd = Some(b);
            per_pass = Some(l);
        }
    }
    let mut fwd = None;
    if per_pass.is_none() {
        // Buckets as frequent as the layers: only the gradient functions
        // are searched, and what they show is taken only where the
        // forward confirms it (see `backward_block_among_interruptions`).
        if let Some((b, l)) = backward_block_among_interruptions(units, &burst_tokens, true) {
            if let Some(f) = forward_block_sharing_names(units, &main_tokens, l, &b) {
                bwd = Some(b);
                per_pass = Some(l);
                fwd = Some(f);
            }
        }
    }
    let fwd = fwd.or_else(|| forward_block(units, &main_tokens, per_pass, bwd.as_deref()));
    let annotated = |block: &[u32]| {
        block
            .iter()
            .any(|&t| is_layer_name(&units.tokens[t as usize]))
    };
    let mut method = match (&fwd, &bwd) {
        (Some(b), _) | (None, Some(b)) if annotated(b) => LayerMethod::Annotation,
        (Some(_), _) | (None, Some(_)) => LayerMethod::ScopePattern,
        (None, None) => LayerMethod::None,
    };
    let mut forward = fwd.unwrap_or_default();
    let mut backward = bwd.unwrap_or_default();
    // Nothing repeats (one layer per pass): the blocks another stage of
    // the job showed, if this trace runs them.
    if let (Some(h), true) = (hint, per_pass.is_none() || forward.is_empty()) {
        if let Some((l, f, b)) = blocks_from_hint(units, &burst_tokens, h) {
            per_pass = Some(l);
            forward = f;
            backward = b;
            method = LayerMethod::OtherStage;
        }
    }
    LayerBlocks {
        forward,
        backward,
        per_pass,
        method,
    }
}

/// The tokens of every backward burst, and of each step's main thread.
pub(super) fn thread_tokens(
    units: &Units,
    threads: &[StepThreads],
) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let bursts = threads
        .iter()
        .flat_map(|r| r.bursts.iter().map(|b| tokens(units, b)))
        .collect();
    let main = threads
        .iter()
        .map(|r| tokens(units, &r.main_units))
        .collect();
    (bursts, main)
}

/// A layer is a block of at least two operators (or one named like a
/// layer) that launches GPU work; a single operator repeated (a run of
/// gradient accumulations) is not one, unless it is a checkpointed
/// block's backward ([`is_checkpoint_backward`]) that launches work.
pub(super) fn is_layer_block(units: &Units, block: &[u32]) -> bool {
    let launches = |t: u32| {
        units
            .units
            .iter()
            .any(|u| u.token == t && !u.gpu().is_empty())
    };
    block
        .iter()
        .any(|&t| is_layer_name(&units.tokens[t as usize]))
        || (block.iter().any(|&t| t != block[0]) && block.iter().any(|&t| launches(t)))
        || (block
            .iter()
            .all(|&t| is_checkpoint_backward(&units.tokens[t as usize]))
            && block.iter().any(|&t| launches(t)))
}

/// Whether token text `t` is the gradient function of a checkpointed
/// block (full activation recomputation: Megatron's `CheckpointFunction`,
/// PyTorch's reentrant `torch.utils.checkpoint`). The engine runs it as
/// one operator that re-runs the block's forward and then its backward
/// (the block's own gradient functions nested inside), so one unit is a
/// whole layer's backward, recomputation included, and a run of them is
/// the layers of a backward pass.
pub(super) fn is_checkpoint_backward(t: &str) -> bool {
    is_gradient_function(t) && forward_name(t).ends_with("CheckpointFunction")
}

/// The tokens every burst holds (all of them when there is one burst).
/// Work that only some bursts do (the gradient buckets of the last
/// micro-batch) is left out of the search, or it would make a multiple of
/// the layer look more regular than the layer.
fn common_tokens(bursts: &[Vec<u32>]) -> FxHashSet<u32> {
    match bursts.split_first() {
        Some((first, rest)) if !rest.is_empty() => {
            let mut set: FxHashSet<u32> = first.iter().copied().collect();
            for b in rest {
                let here: FxHashSet<u32> = b.iter().copied().collect();
                set.retain(|t| here.contains(t));
            }
            set
        }
        _ => bursts.iter().flatten().copied().collect(),
    }
}

/// The block that repeats most inside the bursts, over the tokens every
/// burst holds, if it is a layer.
pub(super) fn backward_block(units: &Units, bursts: &[Vec<u32>]) -> Option<Vec<u32>> {
    backward_block_of(units, bursts, |_| true)
}

/// [`backward_block`] over the tokens `keep` takes only.
fn backward_block_of(
    units: &Units,
    bursts: &[Vec<u32>],
    keep: impl Fn(u32) -> bool,
) -> Option<Vec<u32>> {
    let mut common = common_tokens(bursts);
    common.retain(|&t| keep(t));
    let filtered: Vec<Vec<u32>> = bursts
        .iter()
        .map(|b| b.iter().copied().filter(|t| common.contains(t)).collect())
        .collect();
    let refs: Vec<&[u32]> = filtered.iter().map(|v| v.as_slice()).collect();
    // Late: the output layer's and final norm's gradients, before the
    // layers, end as a layer's do and are not the first layer's.
    best_period_late(&refs)
        .map(|(_, b)| b)
        .filter(|b| is_layer_block(units, b))
}

/// Per token, the most times one burst runs it.
fn most_per_burst(bursts: &[Vec<u32>]) -> FxHashMap<u32, usize> {
    let mut most: FxHashMap<u32, usize> = FxHashMap::default();
    for b in bursts {
        let mut here: FxHashMap<u32, usize> = FxHashMap::default();
        for &t in b {
            *here.entry(t).or_default() += 1;
        }
        for (t, n) in here {
            let m = most.entry(t).or_default();
            *m = (*m).max(n);
        }
    }
    most
}

/// Whether token text `t` is a gradient function the autograd engine ran.
pub(crate) fn is_gradient_function(t: &str) -> bool {
    t.starts_with("autograd::engine::evaluate_function")
}

/// The backward block and layers per pass where work foreign to the
/// layer interrupts the layers so often that no two of them run back to
/// back untouched: a data-parallel gradient reduction launched as its
/// buckets fill, from hooks on the autograd thread (a few buckets in a
/// pass of a few layers, or a large model's many buckets). The block is
/// looked for again with such work left out by how often it runs: a
/// token some layers lack runs fewer times in a burst than the pass has
/// layers, so for each count `k` the bursts' tokens show (smallest
/// first) the block is looked for among the tokens run at least `k`
/// times, and taken when its copies then run back to back at least `k`
/// times with nothing but the left-out work between them. (Buckets that
/// run as often as the layers stay in here.) With `gradients_only`, the
/// search is among the gradient functions alone, which leaves out
/// buckets however often they run (one per layer and one after them, on
/// a pipeline stage of few layers); the corpus's DDP traces, which repeat
/// no layer, show such blocks their forwards do not repeat, so the
/// caller takes one only where the forward repeats a block of the same
/// operators exactly as often ([`forward_block_sharing_names`]).
///
/// The work left out inside the chain must not be a gradient function:
/// the engine runs every layer's, so a gradient function missing from
/// some copies means the copies are parts of a layer (its attention and
/// MLP halves, on a stage of one layer per pass), not layers. Only blocks
/// that hold gradient functions are taken, where this can be told.
pub(super) fn backward_block_among_interruptions(
    units: &Units,
    bursts: &[Vec<u32>],
    gradients_only: bool,
) -> Option<(Vec<u32>, usize)> {
    let text = |t: u32| units.tokens[t as usize].as_str();
    let taken = |block: Vec<u32>, least: usize| -> Option<(Vec<u32>, usize)> {
        if !block.iter().any(|&t| is_gradient_function(text(t))) {
            return None;
        }
        let layers = mode(chain_counts(bursts, &block).into_iter().filter(|&c| c >= 2))?;
        let foreign_gradients = bursts.iter().any(|b| {
            chains(b, &block, false).iter().any(|c| {
                b[c.starts[0]..c.end]
                    .iter()
                    .any(|&t| !block.contains(&t) && is_gradient_function(text(t)))
            })
        });
        (layers >= least && !foreign_gradients).then_some((block, layers))
    };
    let most = most_per_burst(bursts);
    let mut counts: Vec<usize> = most.values().copied().filter(|&n| n >= 2).collect();
    counts.sort_unstable();
    counts.dedup();
    counts.into_iter().find_map(|k| {
        let block = backward_block_of(units, bursts, |t| {
            most.get(&t).is_some_and(|&n| n >= k)
                && (!gradients_only || is_gradient_function(text(t)))
        })?;
        taken(block, k)
    })
}

/// Per burst, the most back-to-back copies of `block` in it.
fn chain_counts(bursts: &[Vec<u32>], block: &[u32]) -> Vec<usize> {
    bursts.iter().map(|b| longest_chain(b, block)).collect()
}

/// The forward operator a backward token runs the gradient of:
/// `autograd::engine::evaluate_function: MulBackward#` gives `Mul`.
fn forward_name(t: &str) -> String {
    let t = t
        .strip_prefix("autograd::engine::evaluate_function: ")
        .unwrap_or(t);
    t.trim_end_matches('#')
        .trim_end_matches("Backward")
        .to_owned()
}

/// The forward block: with `per_pass` known, a block that repeats exactly
/// that often on the main thread of some step, preferably one sharing a
/// name with the backward block (the forward layer runs the operators
/// whose backward the backward layer runs); else the block that repeats
/// most on the main threads. Only a layer block is taken.
pub(super) fn forward_block(
    units: &Units,
    main_tokens: &[Vec<u32>],
    per_pass: Option<usize>,
    backward: Option<&[u32]>,
) -> Option<Vec<u32>> {
    let shares_names = names_shared_with(units, backward.unwrap_or_default());
    let layer = |b: &[u32]| is_layer_block(units, b);
    per_pass
        .and_then(|l| {
            main_tokens.iter().find_map(|m| {
                period_with_repeats(m, l, |b| layer(b) && shares_names(b))
                    .or_else(|| period_with_repeats(m, l, layer))
            })
        })
        .or_else(|| {
            let refs: Vec<&[u32]> = main_tokens.iter().map(|v| v.as_slice()).collect();
            best_period(&refs)
        })
        .map(|(_, b)| b)
        .filter(|b| layer(b))
}

/// Whether a forward block runs an operator whose gradient function
/// `backward` runs.
fn names_shared_with<'a>(units: &'a Units, backward: &[u32]) -> impl Fn(&[u32]) -> bool + 'a {
    let bwd_names: FxHashSet<String> = backward
        .iter()
        .map(|&t| forward_name(&units.tokens[t as usize]))
        .collect();
    move |block: &[u32]| {
        block
            .iter()
            .any(|&t| bwd_names.contains(units.tokens[t as usize].as_str()))
    }
}

/// The forward block that confirms a backward block found among the
/// gradient functions alone: a layer block repeating exactly `per_pass`
/// times on the main thread of some step and sharing names with
/// `backward` (no fallback, unlike [`forward_block`]).
fn forward_block_sharing_names(
    units: &Units,
    main_tokens: &[Vec<u32>],
    per_pass: usize,
    backward: &[u32],
) -> Option<Vec<u32>> {
    let shares_names = names_shared_with(units, backward);
    main_tokens
        .iter()
        .find_map(|m| {
            period_with_repeats(m, per_pass, |b| is_layer_block(units, b) && shares_names(b))
        })
        .map(|(_, b)| b)
}

/// The candidate blocks of a pipeline stage that runs one layer per pass
/// (as many stages as layers, or one layer per model chunk of the
/// interleaved schedule), where no block repeats inside a pass: every
/// backward burst holds the same tokens once (over the tokens every burst
/// holds), which is the backward candidate; the forward candidate is the
/// block that repeats most on the main thread once `between` (the tokens
/// of the units that run between passes: pipeline sends and receives,
/// their stream waits and device synchronizations) is left out, and it
/// must share a name with the backward one. On a middle stage they are
/// the layer; on an end stage they also hold the embedding or the loss,
/// which one trace cannot tell apart, so the job picks among its stages'
/// candidates (`lumos_predict::one_layer_hint`). `None` on a
/// trace with no pipeline transfers (there a backward pass with nothing
/// repeated is a whole model) or with fewer than two bursts.
pub(super) fn one_layer_per_pass(
    units: &Units,
    bursts: &[Vec<u32>],
    main_tokens: &[Vec<u32>],
    between: &[u32],
) -> Option<(Vec<u32>, Vec<u32>)> {
    if between.is_empty() || bursts.len() < 2 {
        return None;
    }
    let common = common_tokens(bursts);
    let mut kept = bursts.iter().map(|b| {
        b.iter()
            .copied()
            .filter(|t| common.contains(t))
            .collect::<Vec<u32>>()
    });
    let backward = kept.next()?;
    if !kept.all(|b| b == backward) || !is_layer_block(units, &backward) {
        return None;
    }
    let main: Vec<Vec<u32>> = main_tokens
        .iter()
        .map(|m| {
            m.iter()
                .copied()
                .filter(|t| between.binary_search(t).is_err())
                .collect()
        })
        .collect();
    let refs: Vec<&[u32]> = main.iter().map(|v| v.as_slice()).collect();
    let (_, forward) = best_period(&refs)?;
    let bwd_names: FxHashSet<String> = backward
        .iter()
        .map(|&t| forward_name(&units.tokens[t as usize]))
        .collect();
    let shares = forward
        .iter()
        .any(|&t| bwd_names.contains(units.tokens[t as usize].as_str()));
    (shares && is_layer_block(units, &forward)).then_some((forward, backward))
}

/// Another stage's blocks, when this trace has every token of both and
/// the backward block occurs in its bursts: (layers per pass, forward
/// block, backward block).
pub(super) fn blocks_from_hint(
    units: &Units,
    bursts: &[Vec<u32>],
    hint: &LayerHint,
) -> Option<(usize, Vec<u32>, Vec<u32>)> {
    let id_of: FxHashMap<&str, u32> = units
        .tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.as_str(), i as u32))
        .collect();
    let map = |v: &[String]| -> Option<Vec<u32>> {
        v.iter().map(|t| id_of.get(t.as_str()).copied()).collect()
    };
    let (f, b) = (map(&hint.forward)?, map(&hint.backward)?);
    let l = mode(chain_counts(bursts, &b).into_iter().filter(|&c| c >= 1))?;
    Some((l, f, b))
}

/// Repeats of the most repeated kernel block on the busiest stream: the
/// layers of a trace with no CPU operators to go by (report only).
pub(super) fn kernel_pattern(g: &Graph) -> Option<usize> {
    let stream = g
        .processors
        .iter()
        .filter(|p| p.is_stream())
        .max_by_key(|p| p.tasks.len())?;
    let toks: Vec<u32> = stream.tasks.iter().map(|&t| g.task(t).name.0).collect();
    let toks = &toks[..toks.len().min(20_000)];
    let (p, block) = best_period(&[toks])?;
    let n = chains(toks, &block, false)
        .iter()
        .map(|c| c.starts.len())
        .max()?;
    (p > 1 && n >= 2).then_some(n)
}
