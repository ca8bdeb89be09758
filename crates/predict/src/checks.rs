//! The checks a [`Target`] must pass before anything is built: a
//! configuration that can exist, edits the traces support, and a result
//! lumos can hold. Each check runs only for what the target changes, so the
//! traced configuration always passes (however odd the trace), and on the
//! whole target at once, so that edits given together are judged together
//! (`--tp 3 --hidden 3072` from a hidden size of 2048 is valid although
//! `--tp 3` alone is not).
//!
//! - Degrees and micro-batches are at least 1; a world (tp x dp x pp) an
//!   edit of a degree makes holds at most [`MAX_WORLD_SIZE`] GPUs.
//! - Data parallelism: an edit needs data-parallel collectives to re-time
//!   (weak scaling changes nothing else).
//! - Tensor parallelism: an edit needs tensor-parallel collectives in the
//!   trace (a model without tensor parallelism has nothing to re-shard),
//!   except from TP 1, where the hidden size must be known and every layer
//!   of every pass must show the projections the added all-reduces follow
//!   (`tp_sites.rs`); the attention heads, the hidden size and the FFN size must divide by
//!   it. Heads are known when an attention kernel recorded its shapes; when
//!   they are not, the check is skipped and a note says so.
//! - Kernel speed-ups: each must select a GPU task of the traces (a
//!   misspelt kernel name would otherwise change nothing, without a word).
//! - Network: the traces must hold a collective or send to re-time, or
//!   the target add pipeline stages (whose sends it times).
//! - Shapes: the hidden size must be a multiple of the heads (which a
//!   hidden-size edit keeps) and of tp; both sizes must have been found.
//! - Structure: every pipeline stage holds at least one layer; layers may
//!   split unevenly (earlier stages take the remainder, as Megatron's
//!   uneven split and the synthesizer do). Fewer micro-batches than stages
//!   is allowed: 1F1B then clips each stage's warm-up to the micro-batches,
//!   as Megatron's non-interleaved schedule does, and the pipeline idles.
//! - Interleaving (virtual stages above 1): more than two stages, or more
//!   than one where the traced pipeline sends overlap compute (Megatron-LM's
//!   rule; a prediction keeps the traced transfers' mode),
//!   micro-batches a multiple of the stages, layers a multiple of stages x
//!   virtual stages (Megatron's conditions, and equal chunks); at least 1.
//! - Size: the tasks of the predicted stages, estimated from the traced
//!   ones ([`estimated_tasks`]), at most [`MAX_PREDICTED_TASKS`].
//!
//! A configuration that cannot exist is [`PredictError::InvalidTarget`];
//! an edit the traces cannot support is [`PredictError::Unsupported`]. Both
//! are the caller's to fix ([`PredictError::is_usage`]).

use crate::baseline::Baseline;
use crate::config::{name_hits, selects_no_gpu_task, Config, KernelSelector};
use crate::discover::GroupClass;
use crate::edits::{tp_from_one, Target};
use crate::error::PredictError;
use crate::tp_sites::tp_sites;

/// Most GPUs (tp x dp x pp) a target may have: as many as a trace may
/// record ([`lumos_trace::MAX_WORLD_SIZE`]). Group lists and the rank
/// layout hold one entry per rank of a group; 2^20 GPUs is beyond any
/// training job run so far.
pub const MAX_WORLD_SIZE: u64 = lumos_trace::MAX_WORLD_SIZE as u64;

/// Memory a predicted task takes, all copies counted (its stage graph with
/// origin, duration source and tag, the coupled job graph built from the
/// stages, the schedule, the reports): measured at about 340 B (`lumos
/// predict --layers 800` on a synthesized gpt-tiny pipeline: 0.9 M tasks,
/// 319 MB peak against 33 MB at 40 layers), taken as 1 KB to leave room
/// for traces with more edges per task.
pub const BYTES_PER_PREDICTED_TASK: u64 = 1_000;

/// Most tasks the predicted stages may hold together: a 16 GB budget at
/// [`BYTES_PER_PREDICTED_TASK`].
pub const MAX_PREDICTED_TASKS: u64 = 16_000_000_000 / BYTES_PER_PREDICTED_TASK;

/// Checks `t` against what `base` holds; on success, notes on the checks
/// that could not be made.
pub(crate) fn check_target(base: &Baseline, t: &Target) -> Result<Vec<String>, PredictError> {
    let (b, c) = (&base.config, &t.config);
    let invalid = |s: String| Err(PredictError::InvalidTarget(s));
    if c.tp == 0 || c.dp == 0 || c.pp == 0 || c.microbatches == 0 {
        return invalid("tp, dp, pp and micro-batches must be at least 1".into());
    }
    if c.virtual_stages == 0 {
        return invalid("virtual stages must be at least 1 (1: the plain 1F1B schedule)".into());
    }
    let world = u64::from(c.tp) * u64::from(c.dp) * u64::from(c.pp);
    let degrees_edit = (c.tp, c.dp, c.pp) != (b.tp, b.dp, b.pp);
    if degrees_edit && world > MAX_WORLD_SIZE {
        return invalid(format!(
            "tp {} x dp {} x pp {} is {world} GPUs; lumos predicts jobs of at most \
             {MAX_WORLD_SIZE}",
            c.tp, c.dp, c.pp
        ));
    }
    // First: an inference trace's collectives are not taken for data
    // parallelism by a guess any more, so "no data-parallel collectives"
    // would hide the reason.
    if c.dp != b.dp && !shows_a_backward_pass(base) {
        let taken = class_names(base, GroupClass::Data);
        return Err(PredictError::Unsupported(format!(
            "no backward pass in {}: none of its CPU operators is an autograd backward function \
             or AccumulateGrad (an inference trace); data parallelism reduces gradients, so \
             {} a data-parallel edit has nothing to re-time",
            base.input_names(),
            if taken.is_empty() {
                "there are none to reduce and".to_string()
            } else {
                format!(
                    "the collectives of groups described as data-parallel ({}) serve something \
                     else and",
                    taken.join(", ")
                )
            }
        )));
    }
    if c.dp != b.dp && !has_class(base, GroupClass::Data) {
        let one_rank = base.inputs.iter().all(|i| i.ctx.world_size == Some(1));
        return Err(PredictError::Unsupported(format!(
            "no data-parallel collectives found in {}; nothing to re-time{}",
            base.input_names(),
            if one_rank {
                ": its world size is 1, and with one rank NCCL runs no collective kernel, so \
                 a gradient all-reduce leaves no GPU work to scale (trace two or more ranks)"
            } else {
                ""
            }
        )));
    }
    if tp_from_one(base, c) {
        // From TP 1 the edit is structural: every layer's projections
        // split and the all-reduces tensor parallelism runs added, which
        // needs the layers found and their projections told apart.
        check_tp_sites(base, c)?;
    } else if c.tp != b.tp && !has_class(base, GroupClass::Tensor) {
        return Err(PredictError::Unsupported(format!(
            "no tensor-parallel collectives found in {}: none of its collectives was taken for \
             tensor parallelism (`lumos inspect` lists their groups and why), so there is no \
             tensor-parallel communication to re-shard",
            base.input_names()
        )));
    }
    for (class, edited) in [
        (GroupClass::Tensor, c.tp != b.tp),
        (GroupClass::Data, c.dp != b.dp),
    ] {
        if edited && degree_unknown(base, class) {
            return Err(PredictError::Unsupported(format!(
                "the traced {}-parallel degree of {} is not known: its {}-parallel collectives \
                 record no group size (no process-group metadata){}, so an edit of that degree \
                 would start from a guess",
                class.as_str(),
                base.input_names(),
                class.as_str(),
                if class == GroupClass::Data {
                    " and the trace no world size"
                } else {
                    ""
                }
            )));
        }
    }
    if let Some(k) = t
        .scales
        .iter()
        .find(|k| !selects_a_gpu_task(base, &k.select))
    {
        return Err(selects_no_gpu_task(k, &base.input_names()));
    }
    // A network times communication only: where the target holds none (the
    // traces have none, or the edits remove all they have) and adds none
    // (a pipeline stage's sends, tensor parallelism's all-reduces added to
    // a TP 1 trace), it would change nothing, without a word (as a
    // speed-up that selects nothing).
    let adds_communication = (c.pp != b.pp && c.pp > 1) || tp_from_one(base, c);
    if t.network.is_some() && !adds_communication && !target_communicates(base, c) {
        let traced = base.structures.iter().all(|s| s.comms.is_empty());
        return Err(PredictError::Unsupported(if traced {
            format!(
                "no collective or send found in {}: a target network times communication \
                 only, so it has nothing to re-time",
                base.input_names()
            )
        } else {
            format!(
                "no collective or send of {} is left at tp {} dp {} pp {}: a target network \
                 times communication only, so it has nothing to re-time",
                base.input_names(),
                c.tp,
                c.dp,
                c.pp
            )
        }));
    }
    let notes = check_shapes(base, c, t.heads)?;
    check_micro_batch(base, c)?;
    check_weights_fit(base, c)?;
    if crate::edits::structural_change(base, t) {
        // Why the structure cannot be edited comes first: without layers
        // found, "0 layers cannot fill 2 pipeline stages" said too little.
        crate::edits::structural_edits_possible(base, c)?;
        check_structure(base, c)?;
    }
    Ok(notes)
}

/// A micro-batch size edit: refused where the traces do not show the
/// traced size (no attention with a recorded query shape).
fn check_micro_batch(base: &Baseline, c: &Config) -> Result<(), PredictError> {
    let traced = base.config.micro_batch;
    if c.micro_batch == traced {
        return Ok(());
    }
    if c.micro_batch == 0 {
        return Err(PredictError::InvalidTarget(
            "the micro-batch size must be at least 1".into(),
        ));
    }
    if traced == 0 {
        return Err(PredictError::Unsupported(format!(
            "the micro-batch size was not found in {} (no attention kernel whose operator \
             records the query's shape: record_shapes=True, and a fused attention kernel)",
            base.input_names()
        )));
    }
    Ok(())
}

/// Refuses a model that no GPU of the trace's kind can hold: its 16-bit
/// weights alone, at the least any sharding leaves on one GPU, past the
/// GPU's memory (`lumos predict --hidden 1048576` on a GPT small job gave
/// a step of 73 minutes for at least 40 TB of weights a GPU). Only an
/// edit that grows what a GPU holds is checked, so the traced
/// configuration, which ran, never is; and
/// nothing else (gradients, optimizer state, activations) is counted, so
/// a configuration that passes may still not fit.
fn check_weights_fit(base: &Baseline, c: &Config) -> Result<(), PredictError> {
    let (Some(want), Some(traced)) = (weight_bytes_per_gpu(c), weight_bytes_per_gpu(&base.config))
    else {
        return Ok(());
    };
    if want <= traced {
        return Ok(());
    }
    let ctx = &base.inputs[0].ctx;
    let memory = ctx.device_memory_bytes.or_else(|| {
        let gpu = crate::models::identify_gpu(
            ctx.device_name.as_deref(),
            ctx.device_sms,
            ctx.device_memory_bytes,
        );
        gpu.known.then_some(gpu.spec.memory_bytes)
    });
    match memory {
        Some(m) if want > m as f64 => Err(PredictError::InvalidTarget(format!(
            "the weights alone would take at least {:.1} GB on each GPU in 16 bits ({} layers \
             of hidden {} and FFN {} over tp {} x pp {} x dp {}, and never less than one \
             layer over tp {}), more than its {:.1} GB: no GPU of the trace's kind holds \
             this model",
            want / 1e9,
            c.layers,
            c.hidden,
            ffn_or_default(c),
            c.tp,
            c.pp,
            c.dp,
            c.tp,
            m as f64 / 1e9
        ))),
        _ => Ok(()),
    }
}

/// The FFN size `c` has, or GPT's `4 * hidden` where the trace told none.
fn ffn_or_default(c: &Config) -> u64 {
    if c.ffn > 0 {
        c.ffn
    } else {
        4 * c.hidden
    }
}

/// The least bytes of 16-bit weights one GPU holds under `c`, whatever
/// the sharding: a GPT layer's `4 h^2 + 2 h ffn` parameters (attention's
/// four projections, the FFN's two), all layers spread over every GPU
/// (weights sharded across data parallelism too), and never less than one
/// layer's tensor-parallel share, which must be whole while it computes.
/// `None` where the trace told no layers or hidden size.
pub(crate) fn weight_bytes_per_gpu(c: &Config) -> Option<f64> {
    if c.layers == 0 || c.hidden == 0 {
        return None;
    }
    let h = c.hidden as f64;
    let layer = 4.0 * h * h + 2.0 * h * ffn_or_default(c) as f64;
    let world = f64::from(c.tp) * f64::from(c.pp) * f64::from(c.dp);
    let spread = layer * f64::from(c.layers) / world;
    Some(2.0 * spread.max(layer / f64::from(c.tp)))
}

/// Whether `select` picks a GPU task of any traced input (by its work
/// class and name, as re-timing applies it).
fn selects_a_gpu_task(base: &Baseline, select: &KernelSelector) -> bool {
    base.inputs.iter().zip(&base.structures).any(|(inp, s)| {
        let g = &inp.graph;
        // A name pattern is matched once per distinct name.
        let hit = match select {
            KernelSelector::Name(p) => name_hits(g, p),
            _ => Vec::new(),
        };
        (g.tasks.iter().zip(&s.work)).any(|(t, w)| {
            t.kind.is_gpu()
                && match select {
                    KernelSelector::Name(_) => hit.get(t.name.0 as usize) == Some(&true),
                    class => class.matches(w, ""),
                }
        })
    })
}

/// Whether the traces show a backward pass
/// ([`crate::discover::Structure::shows_backward`]) in any input; traces
/// without CPU operators (GPU only) cannot tell, and pass.
fn shows_a_backward_pass(base: &Baseline) -> bool {
    let seen: Vec<_> = (base.structures.iter()).map(|s| s.shows_backward).collect();
    seen.contains(&Some(true)) || seen.iter().all(Option::is_none)
}

/// The distinct collective names of `class` in the traces, as their
/// groups report them.
fn class_names(base: &Baseline, class: GroupClass) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for gr in base.structures.iter().flat_map(|s| &s.report.groups) {
        if gr.class == class {
            for n in &gr.collectives {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
        }
    }
    out
}

/// Whether discovery could not tell `class`'s traced degree on some input:
/// its collectives record no group size
/// ([`crate::discover::DiscoveredConfig`]'s degree is `None`). An edit of
/// that degree would be from a guess.
/// Whether tensor parallelism `c.tp` can be added to `base`, traced at TP
/// 1: the hidden size known, and every layer of every pass showing the
/// two projections' GEMMs an all-reduce follows (`tp_sites.rs`); the
/// refusal says what is missing.
fn check_tp_sites(base: &Baseline, c: &Config) -> Result<(), PredictError> {
    let refuse = |why: String| {
        Err(PredictError::Unsupported(format!(
            "traced at TP 1, {} cannot be given tensor parallelism {}: {why}; lumos adds the \
             all-reduces of Megatron's dense transformer layers only (no sequence \
             parallelism), after the projections it tells by their shapes against the hidden \
             size",
            base.input_names(),
            c.tp
        )))
    };
    if base.config.hidden == 0 {
        return refuse(
            "its hidden size is not known (no layer GEMM with recorded shapes was found)".into(),
        );
    }
    for (inp, s) in base.inputs.iter().zip(&base.structures) {
        if !s
            .steps
            .iter()
            .flat_map(|st| &st.passes)
            .any(|p| !p.layers.is_empty())
        {
            return refuse(format!(
                "no repeated transformer layer was found in {}",
                inp.name
            ));
        }
        if let Err(why) = tp_sites(&inp.graph, s, base.config.hidden) {
            return refuse(match base.inputs.len() {
                1 => why,
                _ => format!("in {}, {why}", inp.name),
            });
        }
    }
    Ok(())
}

fn degree_unknown(base: &Baseline, class: GroupClass) -> bool {
    base.structures.iter().any(|s| match class {
        GroupClass::Tensor => s.config.tp.is_none(),
        GroupClass::Data => s.config.dp.is_none(),
        _ => false,
    })
}

/// Whether any traced input has a collective of `class`.
/// Whether a traced collective or send is left in the target `c`: a
/// group's communication is gone where the edits bring its degree to 1
/// (`--dp 1` removes the gradient reductions, `--pp 1` the sends and the
/// model-parallel group's, as their groups then hold one rank); a degree
/// left as traced keeps its group's, whatever its size, and a group of
/// another role is kept.
fn target_communicates(base: &Baseline, c: &Config) -> bool {
    let b = &base.config;
    let left = |degree: u64, traced: u64| degree > 1 || degree == traced;
    let (tp, dp, pp) = (u64::from(c.tp), u64::from(c.dp), u64::from(c.pp));
    let (btp, bdp, bpp) = (u64::from(b.tp), u64::from(b.dp), u64::from(b.pp));
    (base.structures.iter())
        .flat_map(|s| &s.comms)
        .any(|x| match x.class {
            GroupClass::Data => left(dp, bdp),
            GroupClass::Tensor => left(tp, btp),
            GroupClass::Pipeline => left(pp, bpp),
            GroupClass::ModelParallel => left(tp * pp, btp * bpp),
            GroupClass::Other => true,
        })
}

fn has_class(base: &Baseline, class: GroupClass) -> bool {
    base.structures
        .iter()
        .any(|s| s.comms.iter().any(|x| x.class == class))
}

/// The attention heads of the whole model: those of one rank's attention
/// kernel times the traced tensor-parallel degree.
pub(crate) fn heads(base: &Baseline) -> Option<u64> {
    let local = base.structures.iter().find_map(|s| s.config.heads_local)?;
    Some(local * u64::from(base.config.tp.max(1)))
}

/// Heads, hidden and FFN sizes against the tensor-parallel degree, for a
/// target that changes any of them.
#[allow(clippy::manual_is_multiple_of)] // `is_multiple_of` is newer than the MSRV (1.80)
fn check_shapes(
    base: &Baseline,
    c: &Config,
    target_heads: Option<u64>,
) -> Result<Vec<String>, PredictError> {
    let b = &base.config;
    let (tp_edit, hidden_edit, ffn_edit) = (c.tp != b.tp, c.hidden != b.hidden, c.ffn != b.ffn);
    if !(tp_edit || hidden_edit || ffn_edit || target_heads.is_some()) {
        return Ok(Vec::new());
    }
    // The file is named: it is the trace, not the flag, that cannot
    // answer (as every other refusal of an edit the trace cannot support).
    let unsupported = |what: &str| {
        Err(PredictError::Unsupported(format!(
            "the {what} was not found in {} (no GEMM shapes)",
            base.input_names()
        )))
    };
    if hidden_edit && b.hidden == 0 {
        return unsupported("hidden size");
    }
    if ffn_edit && b.ffn == 0 {
        return unsupported("FFN size");
    }
    let invalid = |s: String| Err(PredictError::InvalidTarget(s));
    let tp = u64::from(c.tp);
    let heads = target_heads.or_else(|| heads(base));
    if let Some(h) = heads.filter(|h| h % tp != 0) {
        return invalid(format!(
            "{h} attention heads do not divide over {} tensor-parallel ranks",
            c.tp
        ));
    }
    for (what, size) in [("hidden size", c.hidden), ("FFN size", c.ffn)] {
        if size > 0 && size % tp != 0 {
            return invalid(format!(
                "the {what} {size} does not divide over {} tensor-parallel ranks",
                c.tp
            ));
        }
    }
    let mut notes = Vec::new();
    match heads {
        Some(h) if c.hidden > 0 && c.hidden % h != 0 => {
            return invalid(format!(
                "the hidden size {} is not a multiple of the {h} attention heads ({})",
                c.hidden,
                if target_heads.is_some() {
                    "--heads sets them"
                } else {
                    "a hidden-size edit keeps the heads; --heads sets them"
                }
            ))
        }
        Some(_) => {}
        None => notes.push(format!(
            "attention heads not found in the trace (no attention kernel with shapes): not \
             checked that they divide over tp {}{}",
            c.tp,
            if hidden_edit {
                " or the hidden size over them"
            } else {
                ""
            }
        )),
    }
    Ok(notes)
}

/// Layers against stages, and the size of the stages a structural edit
/// builds.
fn check_structure(base: &Baseline, c: &Config) -> Result<(), PredictError> {
    if c.layers < c.pp {
        return Err(PredictError::InvalidTarget(format!(
            "{} layers cannot fill {} pipeline stages",
            c.layers, c.pp
        )));
    }
    if c.virtual_stages > 1 {
        check_interleaved(base, c)?;
    }
    let tasks = estimated_tasks(base, c);
    if tasks > MAX_PREDICTED_TASKS {
        return Err(PredictError::InvalidTarget(format!(
            "{} pipeline stages of {} micro-batches and up to {} layers would hold about {tasks} \
             tasks (about {} GB); lumos predicts at most {MAX_PREDICTED_TASKS} tasks (16 GB)",
            c.pp,
            c.microbatches,
            c.stage_layers(0),
            tasks.saturating_mul(BYTES_PER_PREDICTED_TASK) / 1_000_000_000
        )));
    }
    Ok(())
}

/// Megatron's conditions for the interleaved schedule
/// (`forward_backward_pipelining_with_interleaving`): the stages
/// [`lumos_models::interleaved_stages_check`] asks for the traced
/// pipeline transfers' mode (a prediction keeps it), micro-batches in
/// whole groups of `pp`, and here layers that fill every model chunk
/// equally.
#[allow(clippy::manual_is_multiple_of)] // `is_multiple_of` is newer than the MSRV (1.80)
fn check_interleaved(base: &Baseline, c: &Config) -> Result<(), PredictError> {
    let invalid = |s: String| Err(PredictError::InvalidTarget(s));
    let v = c.virtual_stages;
    let overlapped = traced_sends_overlap(base);
    if let Err(why) = lumos_models::interleaved_stages_check(c.pp as usize, overlapped) {
        let kept = if overlapped || c.pp <= 1 {
            ""
        } else {
            "; a prediction keeps the traced pipeline transfers' mode, and the traced sends \
             hold the compute stream or are followed by a device synchronization (or the traces \
             show no transfers or stream waits to tell)"
        };
        return invalid(format!("{v} virtual stages: {why}{kept}"));
    }
    if c.microbatches % c.pp != 0 {
        return invalid(format!(
            "the interleaved schedule needs micro-batches ({}) to be a multiple of pp ({})",
            c.microbatches, c.pp
        ));
    }
    let chunks = u64::from(c.pp) * u64::from(v);
    if u64::from(c.layers) % chunks != 0 {
        return invalid(format!(
            "{} layers do not divide into {} pipeline stages x {v} virtual stages ({chunks} \
             model chunks of equal size)",
            c.layers, c.pp
        ));
    }
    Ok(())
}

/// Whether every traced stage's pipeline sends overlap compute
/// ([`crate::discover::Structure::p2p_overlapped`]); false without traced
/// transfers.
pub(crate) fn traced_sends_overlap(base: &Baseline) -> bool {
    let modes: Vec<bool> = base
        .structures
        .iter()
        .filter_map(|s| s.p2p_overlapped())
        .collect();
    !modes.is_empty() && modes.iter().all(|&o| o)
}

/// The tasks the stages of `c` would hold together, from the traced
/// inputs: per new stage, the tasks outside passes (prologue, epilogue,
/// outside steps) as traced, the tasks of passes outside layers per
/// micro-batch, and the tasks of layers per micro-batch and layer, each
/// the largest over the traced inputs. An upper bound of the stages
/// `realize` builds.
pub fn estimated_tasks(base: &Baseline, c: &Config) -> u64 {
    let traced_m = f64::from(base.config.microbatches.max(1));
    let (mut fixed, mut per_mb, mut per_layer_mb) = (0f64, 0f64, 0f64);
    for (inp, s) in base.inputs.iter().zip(&base.structures) {
        let tasks = |units: &mut dyn Iterator<Item = u32>| -> usize {
            units.map(|u| s.units.units[u as usize].tasks.len()).sum()
        };
        let passes = || s.steps.iter().flat_map(|st| st.passes.iter());
        let in_passes = passes().map(|p| tasks(&mut p.units())).sum::<usize>() as f64;
        let in_layers = passes()
            .map(|p| tasks(&mut p.layers.iter().flatten().copied()))
            .sum::<usize>() as f64;
        let layers = f64::from(s.config.layers.unwrap_or(0));
        fixed = fixed.max(inp.graph.tasks.len() as f64 - in_passes);
        if layers > 0.0 {
            per_mb = per_mb.max((in_passes - in_layers) / traced_m);
            per_layer_mb = per_layer_mb.max(in_layers / traced_m / layers);
        } else {
            per_mb = per_mb.max(in_passes / traced_m);
        }
    }
    // Each model chunk runs its own passes: the work outside layers
    // comes once per chunk and micro-batch.
    let per_mb =
        per_mb * f64::from(c.virtual_stages.max(1)) / f64::from(base.config.virtual_stages.max(1));
    let m = f64::from(c.microbatches);
    let total: f64 = (0..c.pp)
        .map(|stage| fixed + m * (per_mb + per_layer_mb * f64::from(c.stage_layers(stage))))
        .sum();
    // `as` saturates.
    total.ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::baseline;

    fn target(base: &Baseline, f: impl FnOnce(&mut Config)) -> Target {
        let mut config = base.config;
        f(&mut config);
        Target {
            config,
            scales: Vec::new(),
            network: None,
            heads: None,
        }
    }

    fn refusal(base: &Baseline, f: impl FnOnce(&mut Config)) -> PredictError {
        check_target(base, &target(base, f)).unwrap_err()
    }

    #[test]
    fn degrees_and_stages() {
        let base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        let e = refusal(&base, |c| c.dp = 0);
        assert!(matches!(e, PredictError::InvalidTarget(_)) && e.is_usage());
        assert_eq!(
            e.to_string(),
            "tp, dp, pp and micro-batches must be at least 1"
        );
        let e = refusal(&base, |c| c.layers = 1);
        assert_eq!(e.to_string(), "1 layers cannot fill 2 pipeline stages");
        assert!(check_target(&base, &target(&base, |c| c.layers = 2)).is_ok());
        // Uneven splits and fewer micro-batches than stages are allowed.
        assert!(check_target(&base, &target(&base, |c| c.layers = 3)).is_ok());
        assert!(check_target(&base, &target(&base, |c| c.microbatches = 1)).is_ok());
        let e = refusal(&base, |c| {
            c.tp = 2048;
            c.pp = 1024;
            c.layers = 1024;
        });
        assert!(
            e.to_string()
                .contains("lumos predicts jobs of at most 1048576"),
            "{e}"
        );
        // The traced configuration always passes.
        assert_eq!(
            check_target(&base, &target(&base, |_| {})).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn heads_set_by_an_edit_are_checked_in_place_of_the_traced_ones() {
        // gpt-tiny: 16 heads, hidden 1024; traced at tp 2.
        let base = baseline("gpt-tiny", None, [2, 1, 1, 2]);
        let with_heads = |heads: u64, f: fn(&mut Config)| Target {
            heads: Some(heads),
            ..target(&base, f)
        };
        // 1176 is no multiple of 16 heads, but is of 12 (head size 98).
        let e = refusal(&base, |c| c.hidden = 1176);
        assert!(e.to_string().ends_with("--heads sets them)"), "{e}");
        assert!(check_target(&base, &with_heads(12, |c| c.hidden = 1176)).is_ok());
        let e = check_target(&base, &with_heads(12, |_| {})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the hidden size 1024 is not a multiple of the 12 attention heads (--heads sets them)"
        );
        let e = check_target(&base, &with_heads(3, |c| c.hidden = 1176)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "3 attention heads do not divide over 2 tensor-parallel ranks"
        );
        assert!(check_target(&base, &with_heads(8, |_| {})).is_ok());
    }

    #[test]
    fn shapes_divide_over_tensor_parallel_ranks() {
        // gpt-tiny: 16 heads, hidden 1024, ffn 4096; traced at tp 2.
        let base = baseline("gpt-tiny", None, [2, 1, 1, 2]);
        assert_eq!(heads(&base), Some(16));
        let e = refusal(&base, |c| c.tp = 3);
        assert_eq!(
            e.to_string(),
            "16 attention heads do not divide over 3 tensor-parallel ranks"
        );
        let e = refusal(&base, |c| c.tp = 32);
        assert_eq!(
            e.to_string(),
            "16 attention heads do not divide over 32 tensor-parallel ranks"
        );
        let e = refusal(&base, |c| c.hidden = 7);
        assert!(matches!(e, PredictError::InvalidTarget(_)));
        assert_eq!(
            e.to_string(),
            "the hidden size 7 does not divide over 2 tensor-parallel ranks"
        );
        let e = refusal(&base, |c| c.hidden = 1000);
        assert!(e
            .to_string()
            .starts_with("the hidden size 1000 is not a multiple of the 16"));
        // Judged together: tp 4 with a hidden size of 2048 is fine.
        assert!(check_target(
            &base,
            &target(&base, |c| {
                c.tp = 4;
                c.hidden = 2048;
            })
        )
        .is_ok());
        // Heads unknown: not checked, and said so.
        let mut blind = baseline("gpt-tiny", None, [2, 1, 1, 2]);
        for s in &mut blind.structures {
            s.config.heads_local = None;
        }
        let notes = check_target(&blind, &target(&blind, |c| c.tp = 4)).unwrap();
        assert_eq!(
            notes,
            [
                "attention heads not found in the trace (no attention kernel with shapes): not \
              checked that they divide over tp 4"
            ]
        );
    }

    #[test]
    fn edits_need_what_they_change_in_the_trace() {
        // No tensor parallelism, no data parallelism traced.
        let mut base = baseline("gpt-tiny", None, [1, 1, 1, 2]);
        // From TP 1 tensor parallelism is added: the layers' projections
        // are found by their shapes against the hidden size (before, the
        // edit was refused for want of tensor-parallel collectives).
        assert!(check_target(&base, &target(&base, |c| c.tp = 2))
            .unwrap()
            .is_empty());
        // Without the hidden size, or with one no GEMM of the layers has,
        // the projections cannot be told, and the refusal says so.
        let hidden = base.config.hidden;
        base.config.hidden = 0;
        let e = refusal(&base, |c| c.tp = 2);
        assert!(matches!(e, PredictError::Unsupported(_)) && e.is_usage());
        assert!(
            e.to_string().starts_with(
                "traced at TP 1, rank0 cannot be given tensor parallelism 2: its hidden size \
                 is not known"
            ),
            "{e}"
        );
        base.config.hidden = hidden + 8;
        let e = refusal(&base, |c| c.tp = 2).to_string();
        assert!(
            e.contains("shows 0 GEMM products with the hidden size as output width"),
            "{e}"
        );
        base.config.hidden = hidden;
        let e = refusal(&base, |c| c.dp = 4);
        assert_eq!(
            e.to_string(),
            "no data-parallel collectives found in rank0; nothing to re-time: its world size is \
             1, and with one rank NCCL runs no collective kernel, so a gradient all-reduce leaves \
             no GPU work to scale (trace two or more ranks)"
        );
    }

    #[test]
    fn a_kernel_speed_up_must_select_a_gpu_task() {
        // A one-GPU job: no communication kernel. Names are matched as
        // written (case-sensitive).
        let base = baseline("gpt-tiny", None, [1, 1, 1, 2]);
        let with = |k: &str| {
            let mut t = target(&base, |_| {});
            t.scales.push(k.parse().unwrap());
            check_target(&base, &t)
        };
        for k in [
            "class:gemm=0.5",
            "class:memory=2",
            "class:compute=0.9",
            "gemm=0.5",
        ] {
            assert!(with(k).is_ok(), "{k}");
        }
        for k in ["class:comm=0.5", "no_such_kernel=2", "GEMM=0.5"] {
            let e = with(k).unwrap_err();
            assert!(matches!(e, PredictError::Unsupported(_)) && e.is_usage());
            assert!(
                e.to_string().starts_with(&format!(
                    "kernel speed-up {k} selects no GPU task in rank0: nothing to speed up"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn sizes_are_estimated_before_anything_is_built() {
        let base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        let traced: usize = base.inputs.iter().map(|i| i.graph.tasks.len()).sum();
        let same = estimated_tasks(&base, &base.config);
        // The traced stages are estimated as they are, give or take the
        // difference between the two stages' passes.
        assert!(
            same as f64 >= 0.95 * traced as f64 && (same as f64) < 1.3 * traced as f64,
            "{same} vs {traced}"
        );
        let mut c = base.config;
        c.layers *= 10;
        let more = estimated_tasks(&base, &c);
        assert!(more > 5 * same, "{more} vs {same}");
        let e = refusal(&base, |c| c.microbatches = 100_000);
        assert!(matches!(e, PredictError::InvalidTarget(_)), "{e}");
        assert!(
            e.to_string()
                .contains("lumos predicts at most 16000000 tasks (16 GB)"),
            "{e}"
        );
        // So many layers that no GPU holds their weights: that comes first.
        let e = refusal(&base, |c| c.layers = 100_000);
        assert!(
            e.to_string()
                .contains("no GPU of the trace's kind holds this model"),
            "{e}"
        );
    }
}
