//! Step 5b of discovery: whether the pipeline runs Megatron's interleaved
//! 1F1B schedule (virtual pipeline stages, Narayanan et al. SC21 section
//! 2.2.2), where each stage holds `v` model chunks and runs a forward and a
//! backward pass per chunk and micro-batch.
//!
//! The passes of an interleaved stage look like those of a plain stage
//! with `v` times the micro-batches and `1/v` of the layers: every chunk's
//! pass is cut at its sends and receives. What tells them apart is the
//! order of forwards and backwards: the interleaved schedule's warm-up runs
//! `2 (p - s - 1) + (v - 1) p` forwards where 1F1B runs `p - s - 1`. The
//! order of every step is matched against both; when the interleaved one
//! fits, each pass gets its chunk and micro-batch from the schedule (the
//! `k`-th forward is micro-batch `(k / (p v)) p + k % p` through chunk
//! `(k % (p v)) / p`), and the stage's micro-batches and layers are counted
//! per micro-batch and per stage, not per chunk.
//!
//! The order is also the plain order of a stage of a deeper pipeline with
//! as long a warm-up (stage 1 of two with 2 chunks: stage 1 of four), which
//! is what a predicted stage read with its traced job's groups runs. On
//! the first and the last stage the interleaved reading is taken only
//! when the stage's end work shows the chunks too (see
//! [`end_work_missing`]); otherwise the stage is read as plain with a
//! finding that says why.

use std::collections::BTreeSet;

use lumos_models::{interleaved_one_f_one_b, one_f_one_b, Pass};

use super::tails::opening;
use super::{finding, Confidence, Finding, PassKind, StepStructure, Structure};

/// The kinds of `passes`, forward `true`.
fn kinds_of(passes: impl Iterator<Item = Pass>) -> Vec<bool> {
    passes.map(|p| matches!(p, Pass::Forward(_))).collect()
}

/// The model chunks per stage whose interleaved order on `stage` of `pp`
/// the forward/backward order `kinds` (`n` of each) is, or `None` when it
/// is the plain 1F1B order or no interleaved order fits. Megatron
/// interleaves only with more than one stage and micro-batches in whole
/// groups of `pp`. The order alone does not decide: the interleaved order
/// of a stage is also the plain order of a stage of a deeper pipeline
/// whose warm-up is as long (stage 1 of two with 2 chunks: stage 1 of
/// four), which [`end_work_missing`] tells apart on the first and the last
/// stage.
#[allow(clippy::manual_is_multiple_of)] // `is_multiple_of` is newer than the MSRV (1.80)
pub(super) fn chunks_of_order(kinds: &[bool], stage: u32, pp: u32) -> Option<u32> {
    let n = kinds.iter().filter(|&&f| f).count();
    let (s, p) = (stage as usize, pp as usize);
    if p <= 1 || s >= p || n == 0 || 2 * n != kinds.len() {
        return None;
    }
    if kinds_of(one_f_one_b(s, p, n).into_iter()) == kinds {
        return None;
    }
    (2..=n)
        .filter(|v| n % v == 0 && (n / v) % p == 0)
        .find(|&v| {
            interleaved_one_f_one_b(s, p, v, n / v)
                .is_some_and(|o| kinds_of(o.into_iter().map(|c| c.pass)) == kinds)
        })
        .map(|v| v as u32)
}

/// What the interleaved reading (`v` model chunks on `stage` of `pp`)
/// says an end stage's forwards run and the trace does not show, or `None`
/// when it shows it, or the stage is a middle one (nothing to check).
///
/// Only the first virtual stage takes the model's input and only the last
/// one computes the loss: on the first stage the data loading and the
/// embedding run before the layers of the chunk-0 forwards alone, on the
/// last stage the loss head after those of the last chunk's forwards
/// alone, where a plain first or last stage runs them in every forward and
/// a middle stage in none. So some main-thread operator must run next to
/// every forward of that chunk (before it: its `pre`; after it: its
/// `post` and what the next pass opens with, see [`opening`]) and next to
/// no forward of another chunk, in every step. The step's first pass is
/// not looked at before it: what precedes it and not every other forward
/// is the step's prologue.
fn end_work_missing(s: &Structure, stage: u32, pp: u32, v: u32) -> Option<&'static str> {
    let (first, last) = (stage == 0, stage + 1 == pp);
    if !first && !last {
        return None;
    }
    let group = (pp * v) as usize;
    let p = pp as usize;
    let shown = |before: bool| {
        s.steps.iter().all(|st| {
            let main_tokens = |us: &[u32]| -> BTreeSet<u32> {
                us.iter()
                    .filter(|&&u| s.units.units[u as usize].thread == st.main)
                    .map(|&u| s.units.units[u as usize].token)
                    .collect()
            };
            let (mut own, mut others) = (Vec::new(), BTreeSet::new());
            let forwards = st
                .passes
                .iter()
                .enumerate()
                .filter(|(_, x)| x.kind == PassKind::Forward);
            for (k, (pi, f)) in forwards.enumerate() {
                let chunk = (k % group) / p;
                let work = if before {
                    if pi == 0 {
                        continue;
                    }
                    main_tokens(&f.pre)
                } else {
                    let mut w = main_tokens(&f.post);
                    if let Some(next) = st.passes.get(pi + 1) {
                        w.extend(opening(s, st.main, &next.pre));
                    }
                    w
                };
                if chunk == if before { 0 } else { v as usize - 1 } {
                    own.push(work);
                } else {
                    others.extend(work);
                }
            }
            let Some((a, rest)) = own.split_first() else {
                return false;
            };
            a.iter()
                .any(|t| !others.contains(t) && rest.iter().all(|w| w.contains(t)))
        })
    };
    if first && !shown(true) {
        Some("no operator runs before the first chunk's forwards only (the model's input: data loading, the embedding)")
    } else if last && !shown(false) {
        Some("no operator runs after the last chunk's forwards only (the loss head)")
    } else {
        None
    }
}

/// The forward/backward order of step `st`, forward `true`.
fn step_kinds(st: &StepStructure) -> Vec<bool> {
    st.passes
        .iter()
        .map(|p| p.kind == PassKind::Forward)
        .collect()
}

/// Detects the interleaved schedule in `s` (its configuration found):
/// when every step's order is the interleaved order of one chunk count,
/// sets each pass's chunk and micro-batch, the configuration's virtual
/// stages, micro-batches and layers on the stage, and adds a finding.
pub(super) fn detect(s: &mut Structure, findings: &mut Vec<Finding>) {
    let (Some(pp), Some(stage)) = (s.config.pp, s.config.stage) else {
        return;
    };
    let mut found: Option<u32> = None;
    for st in &s.steps {
        let v = chunks_of_order(&step_kinds(st), stage, pp);
        match (v, found) {
            (None, _) => return,
            (Some(v), Some(f)) if v != f => return,
            _ => found = v,
        }
    }
    let Some(v) = found else { return };
    let n = s.steps[0].passes.len() as u32 / 2;
    if let Some(missing) = end_work_missing(s, stage, pp, v) {
        findings.push(finding(
            "virtual pipeline stages",
            "1".into(),
            Confidence::Low,
            format!(
                "every step runs {n} forward and {n} backward passes in the interleaved 1F1B \
                 order of stage {stage} of {pp} with {v} model chunks, but {missing}; that order \
                 is also the plain 1F1B order of a stage of a deeper pipeline (a predicted \
                 stage read with its traced job's groups), so it is read as plain"
            ),
        ));
        return;
    }
    let group = (pp * v) as usize;
    let p = pp as usize;
    for st in &mut s.steps {
        let (mut nf, mut nb) = (0usize, 0usize);
        for pass in &mut st.passes {
            let k = match pass.kind {
                PassKind::Forward => &mut nf,
                PassKind::Backward => &mut nb,
            };
            let c = (*k % group) / p;
            pass.chunk = match pass.kind {
                PassKind::Forward => c as u32,
                PassKind::Backward => v - 1 - c as u32,
            };
            pass.microbatch = ((*k / group) * p + *k % p) as u32;
            *k += 1;
        }
    }
    let m = n / v;
    s.config.virtual_stages = Some(v);
    s.config.microbatches = Some(m);
    s.config.layers = s.config.layers.map(|l| l * v);
    for f in findings.iter_mut() {
        let per_chunk = match f.what.as_str() {
            "micro-batches" => m,
            "layers on this stage" => s.config.layers.unwrap_or(0),
            _ => continue,
        };
        f.value = per_chunk.to_string();
        f.evidence = format!("{} ({v} model chunks)", f.evidence);
    }
    findings.push(finding(
        "virtual pipeline stages",
        v.to_string(),
        Confidence::High,
        format!(
            "every step runs {n} forward and {n} backward passes in the interleaved 1F1B order \
             of stage {stage} of {pp} with {v} model chunks and {m} micro-batches (the plain 1F1B \
             order of {n} micro-batches would start with {} forwards)",
            (pp - stage - 1).min(n)
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use lumos_models::interleaved_one_f_one_b;

    fn kinds(stage: usize, pp: usize, v: usize, m: usize) -> Vec<bool> {
        kinds_of(
            interleaved_one_f_one_b(stage, pp, v, m)
                .unwrap()
                .into_iter()
                .map(|c| c.pass),
        )
    }

    #[test]
    fn interleaved_orders_are_told_from_plain_ones() {
        for stage in 0..4 {
            // Plain 1F1B of 8 micro-batches: not interleaved.
            assert_eq!(
                chunks_of_order(&kinds(stage, 4, 1, 8), stage as u32, 4),
                None
            );
            for (v, m) in [(2, 4), (2, 8), (3, 4), (4, 8)] {
                assert_eq!(
                    chunks_of_order(&kinds(stage, 4, v, m), stage as u32, 4),
                    Some(v as u32),
                    "stage {stage} v {v} m {m}"
                );
            }
        }
        // Two stages: plain stays plain, and the order of stage 1 with 2
        // chunks is found, although it is also the plain order of stage 1
        // of four (`end_work_missing` tells those apart).
        assert_eq!(chunks_of_order(&kinds(0, 2, 1, 8), 0, 2), None);
        assert_eq!(chunks_of_order(&kinds(1, 2, 2, 4), 1, 2), Some(2));
        assert_eq!(chunks_of_order(&kinds(1, 4, 1, 8), 1, 2), Some(2));
        // One stage never interleaves; an unequal count is no schedule.
        assert_eq!(chunks_of_order(&kinds(0, 1, 1, 8), 0, 1), None);
        assert_eq!(chunks_of_order(&[true, true, false], 0, 4), None);
    }
}
