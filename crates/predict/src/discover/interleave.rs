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

use lumos_models::{interleaved_one_f_one_b, one_f_one_b, Pass};

use super::{finding, Confidence, Finding, PassKind, StepStructure, Structure};

/// The kinds of `passes`, forward `true`.
fn kinds_of(passes: impl Iterator<Item = Pass>) -> Vec<bool> {
    passes.map(|p| matches!(p, Pass::Forward(_))).collect()
}

/// The model chunks per stage whose interleaved order on `stage` of `pp`
/// the forward/backward order `kinds` (`n` of each) is, or `None` when it
/// is the plain 1F1B order or no interleaved order fits. Megatron
/// interleaves only with more than one stage and micro-batches in whole
/// groups of `pp`; two stages are not looked at: the order of stage 1 of
/// two with 2 chunks is the plain order of stage 1 of four (found when a
/// predicted stage is discovered again), so it cannot tell them apart.
#[allow(clippy::manual_is_multiple_of)] // `is_multiple_of` is newer than the MSRV (1.80)
pub(super) fn chunks_of_order(kinds: &[bool], stage: u32, pp: u32) -> Option<u32> {
    let n = kinds.iter().filter(|&&f| f).count();
    let (s, p) = (stage as usize, pp as usize);
    if p <= 2 || s >= p || n == 0 || 2 * n != kinds.len() {
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
    let n = s.steps[0].passes.len() as u32 / 2;
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
        // Two stages never interleave; an unequal count is no schedule.
        assert_eq!(chunks_of_order(&kinds(0, 2, 1, 8), 0, 2), None);
        assert_eq!(chunks_of_order(&[true, true, false], 0, 4), None);
    }
}
