//! Pipeline schedules: the order of forward and backward passes on each
//! stage, for Megatron's 1F1B schedule without interleaving
//! ([`one_f_one_b`]) and with it ([`interleaved_one_f_one_b`]).

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

/// One pass of the interleaved schedule: a forward or backward pass of a
/// micro-batch through one of the stage's model chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPass {
    /// Model chunk (virtual pipeline stage index on this stage), 0-based:
    /// chunk `c` of stage `s` of `p` holds virtual stage `c * p + s`.
    pub chunk: usize,
    /// The pass and its micro-batch.
    pub pass: Pass,
}

/// The order of passes on `stage` of `stages` when each stage holds
/// `chunks` model chunks (Megatron's
/// `forward_backward_pipelining_with_interleaving`, Narayanan et al. SC21
/// section 2.2.2). Virtual micro-batches run in groups of `stages`: the
/// `k`-th forward is micro-batch `(k / (stages * chunks)) * stages + k %
/// stages` through chunk `(k % (stages * chunks)) / stages`; the `k`-th
/// backward is the same micro-batch through the chunks in reverse order.
/// Warm-up runs `(stages - stage - 1) * 2 + (chunks - 1) * stages`
/// forwards (every forward when `microbatches == stages`), then one
/// forward and one backward alternately, then the remaining backwards.
///
/// With one chunk this is [`one_f_one_b`] (Megatron runs the
/// non-interleaved schedule then). `None` when a count is zero or, with
/// several chunks, `microbatches` is not a multiple of `stages`, which
/// Megatron's interleaved schedule requires.
///
/// ```
/// use lumos_models::{interleaved_one_f_one_b, Pass};
/// let show = |stage| {
///     interleaved_one_f_one_b(stage, 2, 2, 4)
///         .unwrap()
///         .iter()
///         .map(|p| match p.pass {
///             Pass::Forward(k) => format!("F{}.{}", k + 1, p.chunk),
///             Pass::Backward(k) => format!("B{}.{}", k + 1, p.chunk),
///         })
///         .collect::<Vec<_>>()
///         .join(" ")
/// };
/// assert_eq!(
///     show(0),
///     "F1.0 F2.0 F1.1 F2.1 F3.0 B1.1 F4.0 B2.1 F3.1 B1.0 F4.1 B2.0 B3.1 B4.1 B3.0 B4.0"
/// );
/// ```
pub fn interleaved_one_f_one_b(
    stage: usize,
    stages: usize,
    chunks: usize,
    microbatches: usize,
) -> Option<Vec<ChunkPass>> {
    if stages == 0 || chunks == 0 || microbatches == 0 || stage >= stages {
        return None;
    }
    if chunks == 1 {
        let passes = one_f_one_b(stage, stages, microbatches);
        return Some(
            passes
                .into_iter()
                .map(|pass| ChunkPass { chunk: 0, pass })
                .collect(),
        );
    }
    if !microbatches.is_multiple_of(stages) {
        return None;
    }
    let total = microbatches * chunks;
    let warmup = if microbatches == stages {
        total
    } else {
        ((stages - stage - 1) * 2 + (chunks - 1) * stages).min(total)
    };
    let group = stages * chunks;
    let microbatch = |k: usize| (k / group) * stages + k % stages;
    let chunk = |k: usize, forward: bool| {
        let c = (k % group) / stages;
        if forward {
            c
        } else {
            chunks - 1 - c
        }
    };
    let fwd = |k: usize| ChunkPass {
        chunk: chunk(k, true),
        pass: Pass::Forward(microbatch(k)),
    };
    let bwd = |k: usize| ChunkPass {
        chunk: chunk(k, false),
        pass: Pass::Backward(microbatch(k)),
    };
    let mut out = Vec::with_capacity(2 * total);
    out.extend((0..warmup).map(fwd));
    for i in 0..total - warmup {
        out.push(fwd(warmup + i));
        out.push(bwd(i));
    }
    out.extend((total - warmup..total).map(bwd));
    Some(out)
}

/// Megatron-LM's condition on the pipeline stages of its interleaved
/// schedule (`validate_args`, `megatron/training/arguments.py`): more than
/// one stage when pipeline sends overlap compute (`overlap_p2p_comm`),
/// more than two when they do not, "to avoid having multiple p2p sends
/// and recvs between same 2 ranks per communication batch" (with two
/// stages the next and the previous stage are one rank, so one batched
/// transfer would carry an activation and a gradient between them).
/// `Err` says why, in Megatron's terms.
pub fn interleaved_stages_check(stages: usize, overlapped_sends: bool) -> Result<(), String> {
    if overlapped_sends && stages <= 1 {
        return Err(format!(
            "the interleaved schedule needs more than 1 pipeline stage, got {stages}"
        ));
    }
    if !overlapped_sends && stages <= 2 {
        return Err(format!(
            "the interleaved schedule without overlapped pipeline sends (Megatron-LM's \
             --no-overlap-p2p-communication) needs more than 2 pipeline stages, got {stages}: \
             Megatron-LM refuses it to avoid having multiple p2p sends and recvs between the \
             same 2 ranks per communication batch"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Times every stage's pass order with unit passes and free transfers,
    /// passing activations to the next virtual stage and gradients back;
    /// `None` when the orders deadlock.
    fn run(stages: usize, chunks: usize, m: usize) -> Option<i64> {
        let orders: Vec<Vec<ChunkPass>> = (0..stages)
            .map(|s| interleaved_one_f_one_b(s, stages, chunks, m).unwrap())
            .collect();
        let v = stages * chunks;
        // end[virtual stage][micro-batch] for forward and backward.
        let mut fend = vec![vec![-1i64; m]; v];
        let mut bend = vec![vec![-1i64; m]; v];
        let mut idx = vec![0usize; stages];
        let mut free = vec![0i64; stages];
        loop {
            let mut moved = false;
            for s in 0..stages {
                while let Some(p) = orders[s].get(idx[s]) {
                    let vs = p.chunk * stages + s;
                    let ready = match p.pass {
                        Pass::Forward(k) if vs > 0 => fend[vs - 1][k],
                        Pass::Forward(_) => 0,
                        Pass::Backward(k) if vs + 1 < v => bend[vs + 1][k],
                        Pass::Backward(k) => fend[vs][k],
                    };
                    if ready < 0 {
                        break;
                    }
                    let end = free[s].max(ready) + 1;
                    match p.pass {
                        Pass::Forward(k) => fend[vs][k] = end,
                        Pass::Backward(k) => bend[vs][k] = end,
                    }
                    free[s] = end;
                    idx[s] += 1;
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        idx.iter()
            .zip(&orders)
            .all(|(&i, o)| i == o.len())
            .then(|| *free.iter().max().unwrap())
    }

    #[test]
    fn interleaved_stages_follow_megatron() {
        for (stages, overlapped, ok) in [
            (1, true, false),
            (2, true, true),
            (3, true, true),
            (1, false, false),
            (2, false, false),
            (3, false, true),
        ] {
            let r = interleaved_stages_check(stages, overlapped);
            assert_eq!(
                r.is_ok(),
                ok,
                "{stages} stages, overlapped {overlapped}: {r:?}"
            );
            if let Err(why) = r {
                assert!(why.contains(&format!("got {stages}")), "{why}");
            }
        }
    }

    #[test]
    fn interleaved_orders_are_complete_and_never_deadlock() {
        for stages in 1..6 {
            for chunks in 1..4 {
                for groups in 1..4 {
                    let m = stages * groups;
                    for s in 0..stages {
                        let p = interleaved_one_f_one_b(s, stages, chunks, m).unwrap();
                        assert_eq!(p.len(), 2 * m * chunks);
                        for c in 0..chunks {
                            for k in 0..m {
                                let at = |pass| {
                                    let want = ChunkPass { chunk: c, pass };
                                    let n = p.iter().filter(|&&x| x == want).count();
                                    assert_eq!(n, 1, "{stages} {chunks} {m} {s} {want:?}");
                                    p.iter().position(|&x| x == want).unwrap()
                                };
                                assert!(at(Pass::Forward(k)) < at(Pass::Backward(k)));
                            }
                        }
                    }
                    assert!(run(stages, chunks, m).is_some(), "{stages} {chunks} {m}");
                }
            }
        }
        assert!(interleaved_one_f_one_b(0, 4, 2, 6).is_none());
        assert!(interleaved_one_f_one_b(4, 4, 2, 8).is_none());
        assert_eq!(
            interleaved_one_f_one_b(1, 4, 1, 6)
                .unwrap()
                .iter()
                .map(|p| p.pass)
                .collect::<Vec<_>>(),
            one_f_one_b(1, 4, 6)
        );
    }

    /// Interleaving shrinks the bubble: with unit passes on every virtual
    /// stage, 4 stages and 8 micro-batches take `2 m v + 2 (p - 1)` units
    /// per stage's `2 m v` units of work, instead of `2 m + 2 (p - 1)` per
    /// `2 m` without it (SC21 section 2.2.2: the bubble divides by `v`).
    #[test]
    fn interleaving_shrinks_the_bubble() {
        let (p, m) = (4, 8);
        let plain = run(p, 1, m).unwrap();
        assert_eq!(plain, (2 * m + 2 * (p - 1)) as i64);
        let v = 2;
        let inter = run(p, v, m).unwrap();
        let bubble = |t: i64, v: usize| (t - (2 * m * v) as i64) as f64 / (2 * m * v) as f64;
        assert!(bubble(inter, v) < 0.6 * bubble(plain, 1), "{inter} {plain}");
    }

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
