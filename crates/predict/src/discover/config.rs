//! Step 5 of discovery: the training configuration as far as one rank's
//! trace shows it, each value with a finding that says how it was found.
//! It reads the finished structure: the parallel degrees from the groups
//! of the classified collectives, the stage from the pipeline group,
//! micro-batches and layers from the passes, the model's shapes from the
//! GEMMs of the first forward layer.

use lumos_graph::Graph;
use lumos_models::CollectiveKind;

use super::comms::class_from_desc;
use super::layers::is_checkpoint_backward;
use super::{
    finding, mode, CommInfo, Confidence, Finding, GroupClass, PassKind, StepStructure, Structure,
    WorkClass,
};
use crate::context::TraceContext;
use crate::shapes::GemmShape;

/// The training configuration as far as one rank's trace shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiscoveredConfig {
    /// Tensor-parallel degree.
    pub tp: Option<u32>,
    /// Data-parallel degree.
    pub dp: Option<u32>,
    /// Pipeline-parallel degree.
    pub pp: Option<u32>,
    /// This rank's pipeline stage (0-based).
    pub stage: Option<u32>,
    /// Micro-batches per step.
    pub microbatches: Option<u32>,
    /// Transformer layers on this stage.
    pub layers: Option<u32>,
    /// Hidden size.
    pub hidden: Option<u64>,
    /// FFN (MLP inner) size, whole (not divided by `tp`).
    pub ffn: Option<u64>,
    /// Tokens per micro-batch (sequence x micro-batch size).
    pub tokens: Option<u64>,
    /// Attention heads on this rank.
    pub heads_local: Option<u64>,
    /// Sequences per micro-batch (the micro-batch size), from the query
    /// of a forward layer's attention.
    pub micro_batch: Option<u64>,
    /// Sequence parallelism: tensor-parallel all-gather / reduce-scatter
    /// inside layers rather than all-reduce.
    pub sequence_parallel: Option<bool>,
    /// Gradients reduce-scattered over the data-parallel group (ZeRO-1).
    pub distributed_optimizer: Option<bool>,
    /// Model chunks per stage when the stage runs the interleaved 1F1B
    /// schedule (Megatron's virtual pipeline stages, at least 2); `None`
    /// for the plain schedule or when it cannot be told.
    pub virtual_stages: Option<u32>,
    /// The assumption behind the parallel degrees that were guessed
    /// rather than read from the trace's process groups, naming them
    /// (`tp 2, dp 2, pp 2 guessed: ...`); `None` when none were. A trace
    /// stripped of its process-group configuration still records each
    /// collective's group size, but which parallelism a group serves is
    /// then told only by its collectives' names and where they run.
    pub degrees_guessed: Option<String>,
}

/// The configuration of `s` (everything but its configuration and report
/// found), with its findings added to `findings`.
pub(super) fn infer_config(
    g: &Graph,
    ctx: &TraceContext,
    s: &Structure,
    findings: &mut Vec<Finding>,
) -> DiscoveredConfig {
    let mut c = DiscoveredConfig::default();
    parallel_degrees(g, ctx, &s.comms, &mut c, findings);
    c.stage = pipeline_stage(ctx, &s.comms, c.pp);
    if let Some(first) = s.steps.first() {
        pass_counts(first, &mut c, findings);
    }
    recomputation(s, findings);
    layer_shapes(s, &mut c, findings);
    c.distributed_optimizer = distributed_optimizer(&s.comms);
    c
}

/// The size of the group of `class`: from a classified collective's
/// process group (or its recorded group size), else from a process group
/// whose description names the class.
/// The third value says whether the size was guessed: the group size a
/// collective records, in a group the trace's process groups do not
/// list, so that the group's parallelism was told by its collectives
/// alone.
fn group_size(
    g: &Graph,
    ctx: &TraceContext,
    comms: &[CommInfo],
    class: GroupClass,
) -> Option<(u32, Confidence, bool)> {
    comms
        .iter()
        .filter(|x| x.class == class)
        .find_map(|x| {
            if !x.ranks.is_empty() {
                Some((x.ranks.len() as u32, x.confidence, false))
            } else {
                g.collectives[g.task(x.task).collective? as usize]
                    .group_size
                    .map(|s| (s, Confidence::Low, true))
            }
        })
        .or_else(|| {
            ctx.groups.iter().find_map(|gr| {
                let cl = class_from_desc(gr.desc.as_deref()?)?;
                (cl == class && !gr.ranks.is_empty()).then_some((
                    gr.ranks.len() as u32,
                    Confidence::High,
                    false,
                ))
            })
        })
}

/// Tensor-, data- and pipeline-parallel degrees: the size of the group
/// their collectives use, 1 where there are none, unknown where they
/// record no group (and, for data parallelism, the trace no world size).
fn parallel_degrees(
    g: &Graph,
    ctx: &TraceContext,
    comms: &[CommInfo],
    c: &mut DiscoveredConfig,
    findings: &mut Vec<Finding>,
) {
    // The degrees guessed (`tp 2`), and from what: a recorded group size
    // or the world size.
    let mut guessed: Vec<String> = Vec::new();
    let mut by_world = None;
    for (class, slot, what, short) in [
        (
            GroupClass::Tensor,
            &mut c.tp,
            "tensor-parallel degree",
            "tp",
        ),
        (GroupClass::Data, &mut c.dp, "data-parallel degree", "dp"),
        (
            GroupClass::Pipeline,
            &mut c.pp,
            "pipeline-parallel degree",
            "pp",
        ),
    ] {
        // Data-parallel collectives with no group recorded: the world,
        // over the model-parallel ranks.
        let size =
            group_size(g, ctx, comms, class)
                .map(|(n, conf, guess)| (n, conf, guess, false))
                .or_else(|| {
                    let world = ctx.world_size?;
                    (class == GroupClass::Data && comms.iter().any(|x| x.class == class))
                        .then_some((world, Confidence::Low, true, true))
                });
        match size {
            Some((n, conf, guess, world)) => {
                *slot = Some(n);
                if world {
                    by_world = Some(n);
                } else if guess {
                    guessed.push(format!("{short} {n}"));
                }
                findings.push(finding(
                    what,
                    n.to_string(),
                    conf,
                    if !guess {
                        "size of the group its collectives use".into()
                    } else if world {
                        "weak: the world size, its collectives recording no group".into()
                    } else {
                        format!(
                            "weak: the group size its collectives record, in a group the trace's \
                             process groups do not list: taken for {} parallelism by its \
                             collectives' names and where they run",
                            class.as_str()
                        )
                    },
                ));
            }
            // Collectives of the class that name no group (an inference
            // trace's all-reduces without process-group metadata): the
            // degree is not 1, and not known.
            // (The pipeline's degree keeps 1: the stages found decide it.)
            None if class != GroupClass::Pipeline && comms.iter().any(|x| x.class == class) => {
                *slot = None;
                findings.push(finding(
                    what,
                    "unknown".into(),
                    Confidence::Low,
                    format!(
                        "its {} collectives record no group size{}",
                        class.as_str(),
                        if class == GroupClass::Data {
                            " and the trace no world size"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            // A world of one rank has no other to share work with.
            None if ctx.world_size == Some(1) => {
                *slot = Some(1);
                findings.push(finding(
                    what,
                    "1".into(),
                    Confidence::High,
                    "world size 1 (the trace's distributed information)".into(),
                ));
            }
            None => {
                *slot = Some(1);
                findings.push(finding(
                    what,
                    "1".into(),
                    Confidence::Low,
                    format!("no {} collectives", class.as_str()),
                ));
            }
        }
    }
    let mut parts = Vec::new();
    if !guessed.is_empty() {
        parts.push(format!(
            "{} from the group size their collectives record, in groups the trace's process \
             groups do not list (no pg_config in its distributedInfo): which parallelism a \
             group serves is told by its collectives' names and where they run",
            guessed.join(", ")
        ));
    }
    if let Some(n) = by_world {
        parts.push(format!(
            "dp {n} from the world size, its data-parallel collectives recording no group"
        ));
    }
    if !parts.is_empty() {
        c.degrees_guessed = Some(format!("parallel degrees guessed: {}", parts.join("; ")));
    }
}

/// This rank's position in its pipeline group; stage 0 of a pipeline of
/// one.
fn pipeline_stage(ctx: &TraceContext, comms: &[CommInfo], pp: Option<u32>) -> Option<u32> {
    let pp_ranks = ctx
        .groups
        .iter()
        .find(|gr| gr.desc.as_deref().and_then(class_from_desc) == Some(GroupClass::Pipeline))
        .map(|gr| gr.ranks.clone())
        .or_else(|| {
            comms
                .iter()
                .find(|x| x.class == GroupClass::Pipeline && !x.ranks.is_empty())
                .map(|x| x.ranks.clone())
        });
    if let Some(mut r) = pp_ranks {
        r.sort_unstable();
        r.iter()
            .position(|&x| x == ctx.rank as i64)
            .map(|p| p as u32)
    } else if pp == Some(1) {
        Some(0)
    } else {
        None
    }
}

/// Micro-batches (backward passes) and layers per pass (the most common
/// count) of the first step.
fn pass_counts(first: &StepStructure, c: &mut DiscoveredConfig, findings: &mut Vec<Finding>) {
    let nb = first.backward_passes();
    let nf = first.passes.len() - nb;
    if nb > 0 {
        c.microbatches = Some(nb as u32);
        let conf = if nb == nf {
            Confidence::High
        } else {
            Confidence::Low
        };
        findings.push(finding(
            "micro-batches",
            nb.to_string(),
            conf,
            format!("{nb} backward bursts on the autograd thread, {nf} forward layer runs"),
        ));
    }
    let counts: Vec<usize> = first.passes.iter().map(|p| p.layers.len()).collect();
    if let Some(l) = mode(counts.iter().copied()) {
        c.layers = Some(l as u32);
        let all_same = counts.iter().all(|&x| x == l);
        findings.push(finding(
            "layers on this stage",
            l.to_string(),
            if all_same {
                Confidence::High
            } else {
                Confidence::Low
            },
            format!("layers per pass: {counts:?}"),
        ));
    }
}

/// Full activation recomputation, where each backward layer is a
/// checkpointed block's gradient function: its units re-run the layer's
/// forward before its gradients, so that work is the backward layer's
/// (recomputation), not more layers.
fn recomputation(s: &Structure, findings: &mut Vec<Finding>) {
    let text = |t: u32| s.units.tokens[t as usize].as_str();
    if s.backward_block.is_empty()
        || !(s.backward_block.iter()).all(|&t| is_checkpoint_backward(text(t)))
    {
        return;
    }
    let names: Vec<&str> = s.backward_block.iter().map(|&t| text(t)).collect();
    findings.push(finding(
        "activation recomputation",
        "full".into(),
        Confidence::High,
        format!(
            "each backward layer is one `{}`, which re-runs the layer's forward before its \
             gradients: that forward is counted as the backward layer's work, not as layers",
            names.join(" ")
        ),
    ));
}

/// Shapes from the first forward layer: tokens, hidden and FFN sizes from
/// its GEMMs (the FFN size is the other repeated dimension, times `tp`),
/// local heads from its attention, sequence parallelism from its
/// tensor-parallel collectives.
fn layer_shapes(s: &Structure, c: &mut DiscoveredConfig, findings: &mut Vec<Finding>) {
    let Some(layer) = s
        .steps
        .iter()
        .flat_map(|st| st.passes.iter())
        .find(|p| p.kind == PassKind::Forward)
        .and_then(|p| p.layers.first())
    else {
        return;
    };
    let work = || {
        layer
            .iter()
            .flat_map(|&u| s.units.units[u as usize].gpu().iter())
            .map(|&t| s.work[t.idx()])
    };
    let shapes: Vec<GemmShape> = work()
        .filter_map(|w| match w {
            WorkClass::Gemm(s) => Some(s),
            _ => None,
        })
        .collect();
    if !shapes.is_empty() {
        c.tokens = mode(shapes.iter().map(|s| s.m));
        let dims: Vec<u64> = shapes.iter().flat_map(|s| [s.n, s.k]).collect();
        c.hidden = mode(dims.iter().copied());
        let h = c.hidden.unwrap_or(0);
        let tp = c.tp.unwrap_or(1) as u64;
        c.ffn = mode(
            dims.iter()
                .copied()
                .filter(|&d| d != h && d * tp != 3 * h && d * tp != h),
        )
        .map(|f| f * tp);
        findings.push(finding(
            "hidden size",
            h.to_string(),
            Confidence::Medium,
            format!(
                "most common GEMM dimension in a forward layer ({} GEMMs)",
                shapes.len()
            ),
        ));
        if let Some(f) = c.ffn {
            findings.push(finding(
                "FFN size",
                f.to_string(),
                Confidence::Medium,
                "the other repeated GEMM dimension in a forward layer, times tp".into(),
            ));
        }
    }
    let attention = work().find_map(|w| match w {
        WorkClass::Attention(Some(s)) => Some(s),
        _ => None,
    });
    c.heads_local = attention.map(|s| s[2]);
    c.micro_batch = attention.map(|s| s[0]).filter(|&b| b > 0);
    if let Some(b) = c.micro_batch {
        findings.push(finding(
            "micro-batch size",
            b.to_string(),
            Confidence::Medium,
            "the batch dimension of a forward layer's attention query".into(),
        ));
    }
    // Sequence parallelism: tensor-parallel all-gather or reduce-scatter
    // inside layers.
    let tp_kinds: Vec<CollectiveKind> = work()
        .filter_map(|w| match w {
            WorkClass::Comm(i) if s.comms[i as usize].class == GroupClass::Tensor => {
                s.comms[i as usize].kind
            }
            _ => None,
        })
        .collect();
    if !tp_kinds.is_empty() {
        c.sequence_parallel = Some(
            tp_kinds
                .iter()
                .any(|k| matches!(k, CollectiveKind::AllGather | CollectiveKind::ReduceScatter)),
        );
    } else if c.tp == Some(1) {
        c.sequence_parallel = Some(false);
    }
}

/// Whether gradients are reduce-scattered over the data-parallel group;
/// `None` without data-parallel collectives of a known kind.
fn distributed_optimizer(comms: &[CommInfo]) -> Option<bool> {
    let dp_kinds: Vec<CollectiveKind> = comms
        .iter()
        .filter(|x| x.class == GroupClass::Data)
        .filter_map(|x| x.kind)
        .collect();
    (!dp_kinds.is_empty()).then(|| dp_kinds.contains(&CollectiveKind::ReduceScatter))
}
