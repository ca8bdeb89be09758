//! The non-interleaved 1F1B pipeline schedule: the order of forward and
//! backward passes on each stage.

/// One forward or backward pass of a micro-batch (0-based) through a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Forward of micro-batch `k`.
    Forward(usize),
    /// Backward of micro-batch `k`.
    Backward(usize),
}

/// The order of passes on `stage` of `stages` with `microbatches`
/// micro-batches (Megatron's `forward_backward_pipelining_without_
/// interleaving`): `w = min(stages - stage - 1, microbatches)` warm-up
/// forwards, then one forward and one backward alternately until every
/// forward has run, then `w` cool-down backwards.
///
/// ```
/// use lumos_models::{one_f_one_b, Pass};
/// let show = |v: Vec<Pass>| {
///     v.iter()
///         .map(|p| match p {
///             Pass::Forward(k) => format!("F{}", k + 1),
///             Pass::Backward(k) => format!("B{}", k + 1),
///         })
///         .collect::<Vec<_>>()
///         .join(" ")
/// };
/// assert_eq!(show(one_f_one_b(0, 2, 4)), "F1 F2 B1 F3 B2 F4 B3 B4");
/// assert_eq!(
///     show(one_f_one_b(0, 4, 8)),
///     "F1 F2 F3 F4 B1 F5 B2 F6 B3 F7 B4 F8 B5 B6 B7 B8"
/// );
/// ```
pub fn one_f_one_b(stage: usize, stages: usize, microbatches: usize) -> Vec<Pass> {
    let warmup = (stages.saturating_sub(stage + 1)).min(microbatches);
    let mut out = Vec::with_capacity(2 * microbatches);
    out.extend((0..warmup).map(Pass::Forward));
    for i in 0..microbatches - warmup {
        out.push(Pass::Forward(warmup + i));
        out.push(Pass::Backward(i));
    }
    out.extend((microbatches - warmup..microbatches).map(Pass::Backward));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pass_once_and_backward_after_forward() {
        for stages in 1..6 {
            for m in 1..10 {
                for s in 0..stages {
                    let p = one_f_one_b(s, stages, m);
                    assert_eq!(p.len(), 2 * m);
                    for k in 0..m {
                        let f = p.iter().position(|&x| x == Pass::Forward(k)).unwrap();
                        let b = p.iter().position(|&x| x == Pass::Backward(k)).unwrap();
                        assert!(f < b);
                    }
                }
            }
        }
        // Fewer micro-batches than warm-up slots: all forwards, then all
        // backwards.
        assert_eq!(
            one_f_one_b(0, 4, 2),
            vec![
                Pass::Forward(0),
                Pass::Forward(1),
                Pass::Backward(0),
                Pass::Backward(1)
            ]
        );
    }
}
