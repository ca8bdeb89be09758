//! The non-interleaved 1F1B pipeline schedule, and a block-level timing of
//! it over all stages that tells each rank when its peers' activations and
//! gradients arrive.

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
/// use lumos_synth::{one_f_one_b, Pass};
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

/// When each pass of each stage ends, from block durations alone, relative
/// to a common start of the iteration on every stage.
#[derive(Debug, Clone, Default)]
pub(crate) struct BlockTimes {
    /// `fwd_end[stage][k]`: end of forward `k` on `stage` (its activation
    /// send starts then).
    pub fwd_end: Vec<Vec<i64>>,
    /// `bwd_end[stage][k]`: end of backward `k` on `stage`.
    pub bwd_end: Vec<Vec<i64>>,
}

/// Times the 1F1B schedule of every stage at the level of whole passes: a
/// forward on stage `s` starts when stage `s` is free and the activation
/// from `s - 1` has arrived (its forward ended plus `act_xfer`); a backward
/// when the gradient from `s + 1` has arrived (or, on the last stage, its
/// own forward has ended).
pub(crate) fn block_times(
    fwd: &[i64],
    bwd: &[i64],
    act_xfer: i64,
    grad_xfer: i64,
    microbatches: usize,
) -> BlockTimes {
    let stages = fwd.len();
    let progs: Vec<Vec<Pass>> = (0..stages)
        .map(|s| one_f_one_b(s, stages, microbatches))
        .collect();
    let mut t = BlockTimes {
        fwd_end: vec![vec![-1; microbatches]; stages],
        bwd_end: vec![vec![-1; microbatches]; stages],
    };
    let mut idx = vec![0usize; stages];
    let mut free = vec![0i64; stages];
    // Sweep the stages until none can move; the 1F1B order never deadlocks,
    // so every pass gets a time.
    loop {
        let mut moved = false;
        for s in 0..stages {
            while let Some(&pass) = progs[s].get(idx[s]) {
                let ready = match pass {
                    Pass::Forward(k) if s > 0 => match t.fwd_end[s - 1][k] {
                        e if e < 0 => break,
                        e => e + act_xfer,
                    },
                    Pass::Forward(_) => 0,
                    Pass::Backward(k) if s + 1 < stages => match t.bwd_end[s + 1][k] {
                        e if e < 0 => break,
                        e => e + grad_xfer,
                    },
                    Pass::Backward(k) => t.fwd_end[s][k],
                };
                let start = free[s].max(ready);
                let end = match pass {
                    Pass::Forward(k) => {
                        t.fwd_end[s][k] = start + fwd[s];
                        t.fwd_end[s][k]
                    }
                    Pass::Backward(k) => {
                        t.bwd_end[s][k] = start + bwd[s];
                        t.bwd_end[s][k]
                    }
                };
                free[s] = end;
                idx[s] += 1;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    debug_assert!(idx.iter().zip(&progs).all(|(&i, p)| i == p.len()));
    t
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

    #[test]
    fn pipeline_bubble() {
        // Two equal stages, forward 1, backward 2, no transfer time: the
        // classic (p - 1) * (f + b) bubble on top of m * (f + b).
        let t = block_times(&[1, 1], &[2, 2], 0, 0, 4);
        assert_eq!(t.fwd_end[1][0], 2);
        assert_eq!(t.bwd_end[1][0], 4);
        assert_eq!(t.bwd_end[0][0], 6);
        let end = t.bwd_end[0][3];
        assert_eq!(end, 4 * 3 + 3);
    }
}
