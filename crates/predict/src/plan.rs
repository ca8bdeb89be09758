//! Which units a new pipeline stage runs, in which order: its steps'
//! prologues and epilogues, and the passes of its 1F1B schedule, each built
//! from a template pass with its layers cloned or removed.
//!
//! A new stage takes its template by role. The first stage of the new
//! pipeline comes from the traced first stage, the last from the traced
//! last stage; a middle stage (none traced when the trace had two stages)
//! comes from the traced last stage without its loss head and data loading,
//! with the send to the next stage and the receive from it taken from the
//! traced first stage; a single stage (`pp = 1`) comes from the traced first
//! stage without its point-to-point transfers, with the loss head taken from
//! the traced last stage. Layers are cloned from (or removed around) the
//! middle layer of each pass, so that the first and last layers, whose
//! neighbours are not layers, stay as they were.
//!
//! With the interleaved schedule (virtual stages) every model chunk is a
//! stage of a pipeline of `pp x virtual_stages` virtual stages (chunk `c`
//! of stage `s` is virtual stage `c pp + s`): each chunk's passes take
//! their template by that virtual stage's role, by the rules above, and
//! the stage runs them in Megatron's interleaved order. An interleaved
//! trace stands for one template per traced chunk, so that a traced
//! chunk's passes are copied only as passes of the same role.

use lumos_models::{interleaved_one_f_one_b, Pass};

use crate::assemble::{Tag, UnitRef};
use crate::discover::{PassKind, PassStructure, Role, StepStructure, Structure};
use crate::error::PredictError;

/// A stage's place in its pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageRole {
    /// First of several: embedding, sends activations on.
    First,
    /// Between others: receives and sends both ways.
    Middle,
    /// Last of several: loss head, receives activations.
    Last,
    /// The only stage.
    Only,
}

impl StageRole {
    /// The role of `stage` of `stages`.
    pub fn of(stage: u32, stages: u32) -> StageRole {
        match (stage, stages) {
            (_, 0 | 1) => StageRole::Only,
            (0, _) => StageRole::First,
            (s, n) if s + 1 == n => StageRole::Last,
            _ => StageRole::Middle,
        }
    }

    /// The role discovery reported (`first`, `middle`, `last`, `only`).
    pub fn from_report(s: &str) -> Option<StageRole> {
        match s {
            "first" => Some(StageRole::First),
            "middle" => Some(StageRole::Middle),
            "last" => Some(StageRole::Last),
            "only" => Some(StageRole::Only),
            _ => None,
        }
    }
}

/// What one new stage runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StageTarget {
    /// Its index.
    pub stage: u32,
    /// Stages in the pipeline.
    pub stages: u32,
    /// Micro-batches per step.
    pub microbatches: u32,
    /// Layers on this stage.
    pub layers: u32,
    /// Model chunks on this stage (virtual stages; 1 for plain 1F1B).
    pub chunks: u32,
}

impl StageTarget {
    /// Chunk `chunk` of this stage as a stage of the pipeline of virtual
    /// stages, with its share of the layers.
    fn virtual_stage(self, chunk: u32) -> StageTarget {
        let v = self.chunks.max(1);
        StageTarget {
            stage: chunk * self.stages + self.stage,
            stages: self.stages * v,
            microbatches: self.microbatches,
            layers: self.layers / v,
            chunks: 1,
        }
    }
}

/// The unit sequence of one new stage.
pub(crate) struct StagePlan {
    /// The template whose processors, steps, prologues and epilogues the
    /// stage keeps.
    pub primary: usize,
    /// Units in order.
    pub units: Vec<(UnitRef, Tag)>,
    /// What was assumed in building it.
    pub notes: Vec<String>,
}

/// One template as the planner sees it: a traced stage, or one model
/// chunk of an interleaved traced stage.
pub(crate) struct Source<'a> {
    pub structure: &'a Structure,
    /// Its role in the traced pipeline (of virtual stages when
    /// interleaved).
    pub role: StageRole,
    /// Its stage index in the traced pipeline (its virtual stage when
    /// interleaved).
    pub stage: u32,
    /// The traced input (template) it is part of.
    pub input: usize,
    /// The model chunk whose passes it stands for (0 when not
    /// interleaved).
    pub chunk: u32,
}

/// Units `us` of source `src`, as references into its template.
fn refs(sources: &[Source], src: usize, us: &[u32]) -> Vec<UnitRef> {
    let input = sources[src].input as u32;
    us.iter()
        .map(|&u| UnitRef {
            src: input,
            unit: u,
        })
        .collect()
}

/// Splits units into point-to-point groups (a send or receive with the
/// stream waits and the device synchronization right after it) and the
/// rest, keeping order in each.
fn split_p2p(s: &Structure, us: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut p2p = Vec::new();
    let mut other = Vec::new();
    let mut in_group = false;
    for &u in us {
        if s.unit_p2p(u).is_some() {
            p2p.push(u);
            in_group = true;
        } else if in_group
            && (s.units.is_bare_wait(u as usize) || s.units.is_bare_device_sync(u as usize))
        {
            p2p.push(u);
        } else {
            other.push(u);
            in_group = false;
        }
    }
    (p2p, other)
}

/// The template pass of model chunk `chunk` to copy for micro-batch `k`
/// of `m_new`, coming after a pass of kind `prev` (`None` at the start of
/// the step). The last backward
/// comes from the traced last backward (it carries the gradient reduction);
/// any other pass from a traced pass of its kind that came after the same
/// kind of pass where there is one, since the gaps and waits a pass starts
/// with depend on what ran before it (after a backward, the main thread has
/// waited for the autograd thread), then the micro-batch closest to `k`.
fn pick(
    s: &Structure,
    (step, chunk): (usize, u32),
    kind: PassKind,
    k: u32,
    m_new: u32,
    prev: Option<PassKind>,
) -> Option<&PassStructure> {
    let step = &s.steps[step.min(s.steps.len().checked_sub(1)?)];
    let with_prev: Vec<(Option<PassKind>, &PassStructure)> = step
        .passes
        .iter()
        .enumerate()
        .map(|(i, p)| (i.checked_sub(1).map(|j| step.passes[j].kind), p))
        .filter(|(_, p)| p.kind == kind && p.chunk == chunk)
        .collect();
    let m = with_prev.len() as u32;
    if m == 0 {
        return None;
    }
    if kind == PassKind::Backward && k + 1 == m_new {
        return with_prev
            .iter()
            .map(|x| x.1)
            .find(|p| p.microbatch == m - 1);
    }
    // A later backward of PyTorch's gradient accumulation adds into
    // `.grad`, which the first (after `zero_grad(set_to_none=True)`) does
    // not, so the first is no template for it: of two traced backwards the
    // last is, its gradient reduction re-timed to nothing (`retime.rs`); of
    // more, a middle one.
    let keeps_first = kind == PassKind::Backward && k > 0 && first_backward_steals(s, step);
    if keeps_first && m == 2 {
        return with_prev.iter().map(|x| x.1).find(|p| p.microbatch == 1);
    }
    let want = match kind {
        PassKind::Forward => k.min(m - 1),
        PassKind::Backward => k.min(m.saturating_sub(2)),
    };
    // A backward other than the last must not carry the last one's
    // gradient reduction.
    let usable: Vec<&(Option<PassKind>, &PassStructure)> = with_prev
        .iter()
        .filter(|(_, p)| kind == PassKind::Forward || m == 1 || p.microbatch + 1 < m)
        .filter(|(_, p)| !keeps_first || p.microbatch > 0)
        .collect();
    fn closest<'a>(
        c: &[&(Option<PassKind>, &'a PassStructure)],
        want: u32,
    ) -> Option<&'a PassStructure> {
        c.iter()
            .min_by_key(|(_, p)| (p.microbatch as i64 - want as i64).abs())
            .map(|x| x.1)
    }
    let same: Vec<&(Option<PassKind>, &PassStructure)> = usable
        .iter()
        .copied()
        .filter(|(pk, _)| *pk == prev)
        .collect();
    closest(&same, want).or_else(|| closest(&usable, want))
}

/// Whether the first backward of `step` leaves every gradient
/// accumulation (`AccumulateGrad`) without GPU work while a later backward
/// gives them some: PyTorch's first micro-batch after
/// `zero_grad(set_to_none=True)` keeps its gradients, later ones add into
/// them (and DDP's last copies them into its buckets).
pub(crate) fn first_backward_steals(s: &Structure, step: &StepStructure) -> bool {
    let busy = |p: &PassStructure| {
        p.units().any(|u| {
            s.units.token(u as usize).contains("AccumulateGrad")
                && !s.units.units[u as usize].gpu().is_empty()
        })
    };
    let mut backwards = step.passes.iter().filter(|p| p.kind == PassKind::Backward);
    let Some(first) = backwards.next() else {
        return false;
    };
    let accumulates = first
        .units()
        .any(|u| s.units.token(u as usize).contains("AccumulateGrad"));
    accumulates && !busy(first) && backwards.any(busy)
}

/// `want` layers from a pass's layers: the first half and the last half
/// kept, the middle one cloned or the middle ones removed.
fn layer_sequence(layers: &[Vec<u32>], want: usize) -> Vec<&Vec<u32>> {
    let have = layers.len();
    if have == 0 {
        return Vec::new();
    }
    if want <= have {
        let head = want.div_ceil(2);
        let tail = want - head;
        layers[..head]
            .iter()
            .chain(layers[have - tail..].iter())
            .collect()
    } else {
        let mid = have / 2;
        let extra = want - have;
        layers[..mid]
            .iter()
            .chain(std::iter::repeat_n(&layers[mid], extra + 1))
            .chain(layers[mid + 1..].iter())
            .collect()
    }
}

/// Where a new stage's units come from: its primary template, whose
/// processors, steps, prologues and epilogues it keeps, and for each part
/// of a pass that the primary lacks, another template with whether that
/// template's point-to-point groups (`true`) or the rest (`false`) are
/// taken (`None`: the primary's own part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Templates {
    primary: usize,
    fwd_pre: Option<(usize, bool)>,
    fwd_post: Option<(usize, bool)>,
    bwd_pre: Option<(usize, bool)>,
    bwd_post: Option<(usize, bool)>,
}

/// The templates new stage `t` is built from (see the module docs), with
/// a note where parts come from another stage; `keep_order` names the
/// traced stage that is this very stage.
fn templates_for(
    sources: &[Source],
    t: StageTarget,
    keep_order: Option<usize>,
    notes: &mut Vec<String>,
) -> Result<Templates, PredictError> {
    let role = StageRole::of(t.stage, t.stages);
    let find = |r: StageRole| sources.iter().position(|s| s.role == r);
    let first = find(StageRole::First);
    let last = find(StageRole::Last);
    let same = keep_order.or_else(|| {
        // A traced stage of the same role close to this one.
        let cands: Vec<usize> = (0..sources.len())
            .filter(|&i| sources[i].role == role)
            .collect();
        cands
            .into_iter()
            .min_by_key(|&i| (sources[i].stage as i64 - t.stage as i64).abs())
    });
    let from = |primary, fwd_pre, fwd_post, bwd_pre, bwd_post| Templates {
        primary,
        fwd_pre,
        fwd_post,
        bwd_pre,
        bwd_post,
    };
    match (role, same) {
        (_, Some(p)) => Ok(from(p, None, None, None, None)),
        (StageRole::Middle, None) => {
            let (Some(f), Some(l)) = (first, last) else {
                return Err(PredictError::Unsupported(
                    "a middle stage needs the traces of the first and the last stage".into(),
                ));
            };
            notes.push(format!(
                "stage {}: built from the last stage's trace without its loss head and data \
                 loading, with the first stage's send and receive",
                t.stage
            ));
            Ok(from(
                l,
                Some((l, true)),
                Some((f, true)),
                Some((f, true)),
                None,
            ))
        }
        (StageRole::Only, None) => {
            let (Some(f), Some(l)) = (first, last) else {
                return Err(PredictError::Unsupported(
                    "a single-stage pipeline needs the traces of the first and the last stage"
                        .into(),
                ));
            };
            notes.push(
                "single stage: the first stage's trace without sends and receives, with the \
                 last stage's loss head"
                    .into(),
            );
            Ok(from(
                f,
                Some((f, false)),
                Some((l, false)),
                Some((l, false)),
                Some((f, false)),
            ))
        }
        (StageRole::First | StageRole::Last, None) => {
            Err(PredictError::Unsupported(format!(
            "no traced {} stage to build stage {} from (a pipeline needs the traces of its first \
             and last stages; from a single-stage trace there are no sends and receives to copy)",
            if role == StageRole::First { "first" } else { "last" },
            t.stage
        )))
        }
    }
}

/// A pass of a new stage: kind, micro-batch and model chunk.
type PassRef = (PassKind, u32, u32);

/// The passes of new stage `t`, in order: the traced order of
/// `keep_order`'s first step, else the 1F1B order (interleaved with
/// several chunks).
fn pass_order(
    sources: &[Source],
    t: StageTarget,
    keep_order: Option<usize>,
) -> Result<Vec<PassRef>, PredictError> {
    if let Some(k) = keep_order {
        return Ok(sources[k].structure.steps[0]
            .passes
            .iter()
            .map(|p| (p.kind, p.microbatch, p.chunk))
            .collect());
    }
    let order = interleaved_one_f_one_b(
        t.stage as usize,
        t.stages as usize,
        t.chunks.max(1) as usize,
        t.microbatches as usize,
    )
    .ok_or_else(|| {
        PredictError::InvalidTarget(format!(
            "no interleaved 1F1B schedule for stage {} of {} with {} virtual stages and {} \
             micro-batches",
            t.stage, t.stages, t.chunks, t.microbatches
        ))
    })?;
    Ok(order
        .into_iter()
        .map(|p| {
            let c = p.chunk as u32;
            match p.pass {
                Pass::Forward(k) => (PassKind::Forward, k as u32, c),
                Pass::Backward(k) => (PassKind::Backward, k as u32, c),
            }
        })
        .collect())
}

/// The units of pass `(kind, k)` of step `si` of new stage `t`, after a
/// pass of kind `prev`: what comes before the layers and after them, from
/// the templates `from` names, and `t.layers` layers cloned or removed
/// from the primary's pass; with each unit, whether it is after the
/// layers of a pass whose per-parameter units were fitted to the new
/// layers ([`fit_per_layer_units`]).
fn pass_units(
    sources: &[Source],
    from: &Templates,
    t: StageTarget,
    si: usize,
    (kind, k): (PassKind, u32),
    prev: Option<PassKind>,
) -> Result<Vec<(UnitRef, bool)>, PredictError> {
    let primary = from.primary;
    let pass_in = |src: usize| {
        let s = &sources[src];
        pick(s.structure, (si, s.chunk), kind, k, t.microbatches, prev).ok_or_else(|| {
            PredictError::Unsupported(format!(
                "the trace of stage {} has no {kind:?} pass to copy",
                s.stage
            ))
        })
    };
    let own = pass_in(primary)?;
    // Part of another template's pass: all of it, or its point-to-point
    // groups (`true`) or the rest (`false`).
    let part = |from: Option<(usize, bool)>, pre: bool| -> Result<Vec<UnitRef>, PredictError> {
        match from {
            None => Ok(refs(
                sources,
                primary,
                if pre { &own.pre } else { &own.post },
            )),
            Some((src, p2p)) => {
                let p = pass_in(src)?;
                let us = if pre { &p.pre } else { &p.post };
                let (a, b) = split_p2p(sources[src].structure, us);
                Ok(refs(sources, src, if p2p { &a } else { &b }))
            }
        }
    };
    let (pre_from, post_from) = match kind {
        PassKind::Forward => (from.fwd_pre, from.fwd_post),
        PassKind::Backward => (from.bwd_pre, from.bwd_post),
    };
    let mut units: Vec<(UnitRef, bool)> = part(pre_from, true)?
        .into_iter()
        .map(|r| (r, false))
        .collect();
    let post = part(post_from, false)?;
    for layer in layer_sequence(&own.layers, t.layers as usize) {
        units.extend(
            refs(sources, primary, layer)
                .into_iter()
                .map(|r| (r, false)),
        );
    }
    // The post part's per-parameter units follow its own template's layers.
    let post_src = post_from.map_or(primary, |(src, _)| src);
    let post_pass = match post_from {
        None => own,
        Some((src, _)) => pass_in(src)?,
    };
    let s = sources[post_src].structure;
    let idx: Vec<u32> = post.iter().map(|r| r.unit).collect();
    match fit_per_layer_units(s, post_pass, &idx, t.layers as usize) {
        Some(fitted) => units.extend(fitted.into_iter().map(|u| {
            let r = UnitRef {
                src: sources[post_src].input as u32,
                unit: u,
            };
            (r, true)
        })),
        None => units.extend(post.into_iter().map(|r| (r, false))),
    }
    Ok(units)
}

/// The token of DDP's copy of one gradient back from its bucket after the
/// all-reduce (`gradient_as_bucket_view=False`, the default): one unit per
/// parameter, after the last layer of the backward pass that reduces the
/// gradients.
const COPY_BACK: &str = "torch.distributed.ddp.reducer::copy_bucket_to_grad";

/// `post` (the units after the layers of `pass`) with its per-parameter
/// units ([`COPY_BACK`]) fitted to `want` layers: a layer's gradients'
/// worth (its `AccumulateGrad` nodes) taken out of their middle or cloned
/// there per layer removed or added, as [`layer_sequence`] does with the
/// layers; `post` as it is when `pass` has `want` layers already. `None`
/// when `post` holds fewer of them than the traced layers' gradients (a
/// job that does not copy every gradient back): then the re-timing
/// stretches those it finds (`retime.rs`).
fn fit_per_layer_units(
    s: &Structure,
    pass: &PassStructure,
    post: &[u32],
    want: usize,
) -> Option<Vec<u32>> {
    let have = pass.layers.len();
    let per_layer = pass
        .layers
        .get(have / 2)?
        .iter()
        .filter(|&&u| s.units.token(u as usize).contains("AccumulateGrad"));
    let per_layer = per_layer.count();
    let at: Vec<usize> = (post.iter().enumerate())
        .filter(|&(_, &u)| s.units.token(u as usize) == COPY_BACK)
        .map(|(i, _)| i)
        .collect();
    if per_layer == 0 || at.len() < per_layer * have {
        return None;
    }
    if want == have {
        // As traced, which may differ from the stage's primary template
        // (the post part of another stage's pass): not stretched by its
        // layers either.
        return Some(post.to_vec());
    }
    let mut out = Vec::with_capacity(post.len() + per_layer * want);
    if want < have {
        let drop = per_layer * (have - want);
        let from = (at.len() - drop) / 2;
        let gone = &at[from..from + drop];
        out.extend(
            (0..post.len())
                .filter(|i| gone.binary_search(i).is_err())
                .map(|i| post[i]),
        );
    } else {
        let from = (at.len() - per_layer) / 2;
        let block: Vec<u32> = at[from..from + per_layer]
            .iter()
            .map(|&i| post[i])
            .collect();
        let after = at[from + per_layer - 1];
        for (i, &u) in post.iter().enumerate() {
            out.push(u);
            if i == after {
                for _ in have..want {
                    out.extend(&block);
                }
            }
        }
    }
    Some(out)
}

/// Plans new stage `t` from `sources`. `keep_order` names the traced
/// input that is this very stage with the same micro-batches and chunks:
/// its traced pass order is kept (it may differ from 1F1B); otherwise the
/// 1F1B order (interleaved with several chunks) is built.
pub(crate) fn plan_stage(
    sources: &[Source],
    t: StageTarget,
    keep_order: Option<usize>,
) -> Result<StagePlan, PredictError> {
    let mut notes = Vec::new();
    // One set of templates per model chunk, by its virtual stage's role.
    let chunks = t.chunks.max(1);
    let mut from = Vec::with_capacity(chunks as usize);
    for c in 0..chunks {
        let same =
            keep_order.and_then(|k| sources.iter().position(|s| s.input == k && s.chunk == c));
        from.push(templates_for(
            sources,
            t.virtual_stage(c),
            same,
            &mut notes,
        )?);
    }
    // The stage keeps the steps of its first chunk's template (the last
    // stage: of its last chunk's, which holds the loss head).
    let main = if t.stage + 1 == t.stages {
        chunks - 1
    } else {
        0
    };
    let primary_src = from[main as usize].primary;
    let primary = sources[primary_src].input;
    let ps = sources[primary_src].structure;
    let kept = keep_order.and_then(|k| sources.iter().position(|s| s.input == k));
    let passes = pass_order(sources, t, kept)?;
    let mut units: Vec<(UnitRef, Tag)> = Vec::new();
    let untagged = Tag {
        step: None,
        pass: None,
        chunk: 0,
        setup: false,
        addition: false,
        layers_fitted: false,
        shaped_addition: None,
        tp_allreduce: None,
    };
    let outside = |units: &mut Vec<(UnitRef, Tag)>, lo: u32, hi: u32| {
        for u in lo..hi {
            if ps.roles[u as usize] == Role::Outside {
                let r = UnitRef {
                    src: primary as u32,
                    unit: u,
                };
                units.push((r, untagged));
            }
        }
    };
    let mut cursor = 0u32;
    for (si, step) in ps.steps.iter().enumerate() {
        outside(&mut units, cursor, step.units.start);
        cursor = step.units.end;
        let setup = Tag {
            step: Some(si as u32),
            setup: true,
            ..untagged
        };
        for r in refs(sources, primary_src, &step.prologue) {
            units.push((r, setup));
        }
        for (pi, &(kind, k, c)) in passes.iter().enumerate() {
            let prev = pi.checked_sub(1).map(|j| passes[j].0);
            let tag = Tag {
                step: Some(si as u32),
                pass: Some((kind, k)),
                chunk: c,
                setup: false,
                addition: false,
                layers_fitted: false,
                shaped_addition: None,
                tp_allreduce: None,
            };
            let vt = t.virtual_stage(c);
            for (r, layers_fitted) in
                pass_units(sources, &from[c as usize], vt, si, (kind, k), prev)?
            {
                units.push((
                    r,
                    Tag {
                        layers_fitted,
                        ..tag
                    },
                ));
            }
        }
        for r in refs(sources, primary_src, &step.epilogue) {
            units.push((r, setup));
        }
    }
    outside(&mut units, cursor, ps.units.units.len() as u32);
    Ok(StagePlan {
        primary,
        units,
        notes,
    })
}

/// The planner's sources for the traced inputs: one per input, or with
/// `virtual_stages` model chunks per traced stage one per input and chunk,
/// each with the role and index of its virtual stage in the traced
/// pipeline of `pp` stages.
pub(crate) fn sources<'a>(
    inputs: &[(&'a Structure, StageRole, u32)],
    pp: u32,
    virtual_stages: u32,
) -> Vec<Source<'a>> {
    let v = virtual_stages.max(1);
    let mut out = Vec::new();
    for (input, &(structure, role, stage)) in inputs.iter().enumerate() {
        for chunk in 0..v {
            let (role, stage) = if v == 1 {
                (role, stage)
            } else {
                let vs = chunk * pp + stage;
                (StageRole::of(vs, pp * v), vs)
            };
            out.push(Source {
                structure,
                role,
                stage,
                input,
                chunk,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::P2p;

    #[test]
    fn layers_are_cloned_and_removed_in_the_middle() {
        let layers: Vec<Vec<u32>> = (0..4).map(|i| vec![i]).collect();
        let ids = |v: Vec<&Vec<u32>>| v.iter().map(|l| l[0]).collect::<Vec<_>>();
        assert_eq!(ids(layer_sequence(&layers, 4)), vec![0, 1, 2, 3]);
        assert_eq!(ids(layer_sequence(&layers, 6)), vec![0, 1, 2, 2, 2, 3]);
        assert_eq!(ids(layer_sequence(&layers, 3)), vec![0, 1, 3]);
        assert_eq!(ids(layer_sequence(&layers, 1)), vec![0]);
        assert_eq!(ids(layer_sequence(&layers[..1], 3)), vec![0, 0, 0]);
    }

    #[test]
    fn roles() {
        assert_eq!(StageRole::of(0, 1), StageRole::Only);
        assert_eq!(StageRole::of(0, 4), StageRole::First);
        assert_eq!(StageRole::of(2, 4), StageRole::Middle);
        assert_eq!(StageRole::of(3, 4), StageRole::Last);
    }

    /// The structures of a synthesized two-stage pipeline.
    fn pipeline() -> Vec<Structure> {
        (0..2)
            .map(|stage| {
                let trace = crate::testutil::synth("gpt-tiny", 1, 2, 1, 4, stage);
                crate::testutil::discovered(&trace).3
            })
            .collect()
    }

    fn sources(s: &[Structure]) -> Vec<Source<'_>> {
        s.iter()
            .enumerate()
            .map(|(i, structure)| Source {
                structure,
                role: StageRole::of(i as u32, s.len() as u32),
                stage: i as u32,
                input: i,
                chunk: 0,
            })
            .collect()
    }

    fn target(stage: u32, stages: u32) -> StageTarget {
        StageTarget {
            stage,
            stages,
            microbatches: 4,
            layers: 3,
            chunks: 1,
        }
    }

    #[test]
    fn stages_take_their_parts_by_role() {
        let s = pipeline();
        let src = sources(&s);
        let mut notes = Vec::new();
        let first = templates_for(&src, target(0, 4), None, &mut notes).unwrap();
        assert_eq!(
            (first.primary, first.fwd_pre, first.bwd_post),
            (0, None, None)
        );
        let last = templates_for(&src, target(3, 4), None, &mut notes).unwrap();
        assert_eq!(last.primary, 1);
        assert!(notes.is_empty());
        // A middle stage: the last stage's trace with the first stage's
        // transfers.
        let mid = templates_for(&src, target(1, 4), None, &mut notes).unwrap();
        assert_eq!(
            mid,
            Templates {
                primary: 1,
                fwd_pre: Some((1, true)),
                fwd_post: Some((0, true)),
                bwd_pre: Some((0, true)),
                bwd_post: None,
            }
        );
        assert!(notes[0].starts_with("stage 1: built from the last stage's trace"));
        // A single stage: the first stage without transfers, the last
        // stage's loss head.
        let only = templates_for(&src, target(0, 1), None, &mut notes).unwrap();
        assert_eq!(
            (only.primary, only.fwd_post, only.bwd_pre),
            (0, Some((1, false)), Some((1, false)))
        );
        // From the first stage alone no last stage can be built.
        let e = templates_for(&src[..1], target(1, 2), None, &mut notes).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("no traced last stage to build stage 1 from"));
        let e = templates_for(&src[..1], target(1, 3), None, &mut notes).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a middle stage needs the traces of the first and the last stage"
        );
    }

    #[test]
    fn pass_orders_are_kept_or_rebuilt() {
        let s = pipeline();
        let src = sources(&s);
        let order = |o: Result<Vec<PassRef>, PredictError>| -> String {
            o.unwrap()
                .iter()
                .map(|(k, m, _)| {
                    format!(
                        "{}{}",
                        if *k == PassKind::Forward { 'F' } else { 'B' },
                        m + 1
                    )
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            order(pass_order(&src, target(0, 2), Some(0))),
            s[0].steps[0].order()
        );
        assert_eq!(
            order(pass_order(&src, target(1, 4), None)),
            "F1 F2 F3 B1 F4 B2 B3 B4"
        );
    }

    #[test]
    fn passes_are_picked_by_kind_neighbour_and_micro_batch() {
        let s = pipeline();
        let st = &s[0].steps[0];
        let index = |p: &PassStructure| st.passes.iter().position(|q| q == p).unwrap();
        // The last backward carries the gradient reduction: it stays last.
        let last = pick(
            &s[0],
            (0, 0),
            PassKind::Backward,
            5,
            6,
            Some(PassKind::Backward),
        )
        .unwrap();
        assert_eq!(last.microbatch, 3);
        // Another backward: never the last traced one.
        let b = pick(
            &s[0],
            (0, 0),
            PassKind::Backward,
            4,
            6,
            Some(PassKind::Backward),
        )
        .unwrap();
        assert!(b.microbatch < 3);
        // A forward after a forward is copied from one that followed a
        // forward (F2 in F1 F2 B1 F3 ...).
        let f = pick(
            &s[0],
            (0, 0),
            PassKind::Forward,
            0,
            4,
            Some(PassKind::Forward),
        )
        .unwrap();
        assert_eq!(st.passes[index(f) - 1].kind, PassKind::Forward);
        // A later step than traced: the last traced one.
        assert!(pick(&s[0], (9, 0), PassKind::Forward, 0, 4, None).is_some());
    }

    #[test]
    fn point_to_point_groups_are_told_apart() {
        let s = pipeline();
        // The first stage's first forward ends with its send.
        let f = &s[0].steps[0].passes[0];
        let (p2p, other) = split_p2p(&s[0], &f.post);
        assert!(!p2p.is_empty());
        assert!(p2p.iter().any(|&u| s[0].unit_p2p(u) == Some(P2p::Send)));
        assert!(other.iter().all(|&u| s[0].unit_p2p(u).is_none()));
        assert_eq!(p2p.len() + other.len(), f.post.len());
    }

    #[test]
    fn a_stage_plan_runs_every_step_with_its_layers() {
        let s = pipeline();
        let src = sources(&s);
        let plan = plan_stage(&src, target(1, 4), None).unwrap();
        assert_eq!(plan.primary, 1);
        assert_eq!(plan.notes.len(), 1);
        for step in 0..2 {
            let tags: Vec<(PassKind, u32)> = plan
                .units
                .iter()
                .filter(|(_, t)| t.step == Some(step))
                .filter_map(|(_, t)| t.pass)
                .collect();
            let mut passes = tags.clone();
            passes.dedup();
            assert_eq!(passes.len(), 8, "four micro-batches, forward and backward");
        }
        // Units from both templates.
        assert!(plan.units.iter().any(|(r, _)| r.src == 0));
        assert!(plan.units.iter().any(|(r, _)| r.src == 1));
    }
}
