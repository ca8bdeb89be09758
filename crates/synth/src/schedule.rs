//! A block-level timing of the 1F1B pipeline schedule
//! ([`one_f_one_b`]) over all stages that tells each rank when its peers'
//! activations and gradients arrive.

use lumos_models::{one_f_one_b, Pass};

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
