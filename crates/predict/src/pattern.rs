//! Finding the repeated block in a sequence of tokens: the transformer
//! layer in the sequence of operators a thread runs, or in the sequence of
//! kernels a stream runs.
//!
//! A *run* of period `p` is a maximal stretch where every token equals the
//! one `p` further on; it holds `repeats` back-to-back copies of a block of
//! `p` tokens. Layers show up as one long run per pass; the passes of a
//! micro-batch may show up as a run too (warm-up forwards back to back), and
//! a layer may hold short runs of its own (two `AccumulateGrad` in a row),
//! which is why callers choose the period with what else they know (see
//! [`best_period`] and [`period_with_repeats`]).

use rayon::prelude::*;

/// A maximal periodic stretch of a token sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    /// Index of its first token.
    pub start: usize,
    /// Block length.
    pub period: usize,
    /// Whole blocks in it (at least 2).
    pub repeats: usize,
}

/// Periods longer than this are not considered: a layer is a few hundred
/// operators at most. (Each period costs `n / p` probes plus the stretches
/// found, see [`runs`].)
const MAX_PERIOD: usize = 1024;

/// The maximal runs of period `p` with at least two whole blocks.
///
/// A run of two blocks is a stretch of at least `p` positions where each
/// token equals the one `p` further on, so it holds a multiple of `p`:
/// only those positions are probed, and the stretch around a probe that
/// hits is measured. Callers try every period up to [`MAX_PERIOD`], so
/// this is most of discovery's time: probing costs `n / p` per period
/// plus the stretches found, where comparing at every position cost `n`
/// (on a synthesized GPT-3 rank of 100 MB, 0.2 G of discovery's 0.44 G
/// instructions).
pub(crate) fn runs(tokens: &[u32], p: usize) -> Vec<Run> {
    let mut out = Vec::new();
    if p == 0 || tokens.len() < 2 * p {
        return out;
    }
    let last = tokens.len() - p;
    let repeats_at = |i: usize| tokens[i] == tokens[i + p];
    let mut probe = 0;
    while probe < last {
        if !repeats_at(probe) {
            probe += p;
            continue;
        }
        // The stretch reaches back at most to the probe before, which
        // missed (or to the end of the stretch before, which is a miss).
        let mut start = probe;
        while start > 0 && repeats_at(start - 1) {
            start -= 1;
        }
        let mut end = probe + 1;
        while end < last && repeats_at(end) {
            end += 1;
        }
        // tokens[start .. end + p] has period p.
        let repeats = (end - start + p) / p;
        if repeats >= 2 {
            out.push(Run {
                start,
                period: p,
                repeats,
            });
        }
        // `end` is a miss (or the last position): the next stretch starts
        // after it.
        probe = (end / p + 1) * p;
    }
    out
}

/// Tokens covered by whole blocks of the runs of period `p`.
fn coverage(tokens: &[u32], p: usize) -> usize {
    runs(tokens, p).iter().map(|r| r.repeats * p).sum()
}

/// The period covering the most tokens over all `seqs` (each searched on its
/// own, so no run spans two sequences), the smallest on ties, with the
/// block of its first longest run. Use it where one sequence holds one pass
/// (a backward pass), so that passes cannot repeat inside it.
pub(crate) fn best_period(seqs: &[&[u32]]) -> Option<(usize, Vec<u32>)> {
    best_period_phased(seqs, false)
}

/// [`best_period`], with the block started as late in its run as it can
/// be without chaining fewer copies in `seqs`: where the run is periodic
/// over more than its whole copies, the tokens beyond them go before the
/// copies, not after. A backward pass's layers are preceded by the output
/// layer's and final norm's gradients, which end as a layer's gradients
/// end (its input projection's, its norm's, the norm's weight
/// accumulations), so the run reaches back into them; the layer starts
/// after them. (Forward, the same work follows the layers and starts as a
/// layer starts, so there the run's start is the layer's.)
pub(crate) fn best_period_late(seqs: &[&[u32]]) -> Option<(usize, Vec<u32>)> {
    best_period_phased(seqs, true)
}

fn best_period_phased(seqs: &[&[u32]], late: bool) -> Option<(usize, Vec<u32>)> {
    let longest = seqs.iter().map(|s| s.len()).max()?;
    // Each period's coverage on its own, on every core; the best is then
    // picked in period order, as one loop would.
    let covered: Vec<usize> = (1..=(longest / 2).min(MAX_PERIOD))
        .into_par_iter()
        .map(|p| seqs.iter().map(|s| coverage(s, p)).sum())
        .collect();
    let mut best: Option<(usize, usize)> = None;
    for (c, p) in covered.into_iter().zip(1..) {
        if c > 0 && best.is_none_or(|(bc, _)| c > bc) {
            best = Some((c, p));
        }
    }
    let (_, p) = best?;
    let (seq, run) = seqs
        .iter()
        .flat_map(|s| runs(s, p).into_iter().map(move |r| (s, r)))
        .max_by_key(|(_, r)| (r.repeats, std::cmp::Reverse(r.start)))?;
    let mut at = run.start;
    if late {
        // The run is periodic up to `end`: each start up to `end - repeats
        // * p` gives a block as regular as the first. Taken is the latest
        // whose chains hold as many copies as any: an earlier one starts
        // in the work before the layers, a later one may end where work
        // foreign to the layer (a bucket) cut the run, not where a layer
        // ends, and then chains fewer.
        let mut end = run.start + run.repeats * p;
        while end < seq.len() && seq[end] == seq[end - p] {
            end += 1;
        }
        let copies = |b: &[u32]| -> usize { seqs.iter().map(|s| longest_chain(s, b)).sum() };
        let mut most = 0;
        for s in run.start..=end - run.repeats * p {
            let c = copies(&seq[s..s + p]);
            if c >= most {
                (most, at) = (c, s);
            }
        }
    }
    Some((p, seq[at..at + p].to_vec()))
}

/// A period whose runs holding exactly `want` blocks (the layer count a
/// backward pass showed) cover many tokens, among blocks that `accept`
/// takes: the smallest period covering at least half as much as the best.
/// Preferring the smaller one keeps a block of two short passes (two
/// layers each, back to back) from beating the layer. Returns the block of
/// its first such run; `None` when no accepted run holds `want` blocks.
pub(crate) fn period_with_repeats(
    tokens: &[u32],
    want: usize,
    accept: impl Fn(&[u32]) -> bool + Sync,
) -> Option<(usize, Vec<u32>)> {
    // Each period on its own, on every core, kept in period order (see
    // `best_period`).
    let cands: Vec<(usize, usize, Run)> = (1..=(tokens.len() / 2).min(MAX_PERIOD))
        .into_par_iter()
        .filter_map(|p| {
            let mut hits = runs(tokens, p)
                .into_iter()
                .filter(|r| r.repeats == want && accept(&tokens[r.start..r.start + p]));
            let first = hits.next()?;
            Some((p, (1 + hits.count()) * want * p, first))
        })
        .collect();
    let best = cands.iter().map(|c| c.1).max()?;
    let &(p, _, run) = cands.iter().find(|c| 2 * c.1 >= best)?;
    Some((p, tokens[run.start..run.start + p].to_vec()))
}

/// Back-to-back copies of a block in a sequence, tolerating tokens that do
/// not occur in the block at all (extra work between layers, such as a
/// gradient bucket's reduction, which belongs to the layer before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chain {
    /// Index (in the unfiltered sequence) of each copy's first token.
    pub starts: Vec<usize>,
    /// Index just past each copy's last token of the block.
    pub ends: Vec<usize>,
    /// Index just past the last copy's last token; tokens foreign to the
    /// block that follow it up to the next block token are included.
    pub end: usize,
}

/// The most back-to-back copies of `block` in `tokens` ([`chains`]; what
/// trails a chain does not change its copies).
pub(crate) fn longest_chain(tokens: &[u32], block: &[u32]) -> usize {
    (chains(tokens, block, false).iter())
        .map(|c| c.starts.len())
        .max()
        .unwrap_or(0)
}

/// Every maximal chain of back-to-back copies of `block` in `tokens`,
/// left to right, ignoring tokens that `block` does not contain. With
/// `absorb_trailing`, foreign tokens right after a chain belong to its last
/// copy (a gradient bucket launched by the last layer of a backward pass);
/// without, the chain ends with the last copy's last token.
pub(crate) fn chains(tokens: &[u32], block: &[u32], absorb_trailing: bool) -> Vec<Chain> {
    let p = block.len();
    if p == 0 {
        return Vec::new();
    }
    let mut set: Vec<u32> = block.to_vec();
    set.sort_unstable();
    set.dedup();
    let kept: Vec<usize> = (0..tokens.len())
        .filter(|&i| set.binary_search(&tokens[i]).is_ok())
        .collect();
    let filtered: Vec<u32> = kept.iter().map(|&i| tokens[i]).collect();
    let matches = |j: usize| j + p <= filtered.len() && filtered[j..j + p] == *block;
    let mut out = Vec::new();
    let mut j = 0;
    while j < filtered.len() {
        if !matches(j) {
            j += 1;
            continue;
        }
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        while matches(j) {
            starts.push(kept[j]);
            ends.push(kept[j + p - 1] + 1);
            j += p;
        }
        // Foreign tokens right after the last copy belong to it.
        let mut end = kept[j - 1] + 1;
        while absorb_trailing && end < tokens.len() && set.binary_search(&tokens[end]).is_err() {
            end += 1;
        }
        out.push(Chain { starts, ends, end });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<u32> {
        s.bytes().map(u32::from).collect()
    }

    #[test]
    fn runs_find_maximal_periodic_stretches() {
        let t = toks("xabcabcabcy");
        let r = runs(&t, 3);
        assert_eq!(
            r,
            vec![Run {
                start: 1,
                period: 3,
                repeats: 3
            }]
        );
        assert!(runs(&t, 4).is_empty());
        // A partial block at the end is not a whole repeat.
        assert_eq!(runs(&toks("abab a"), 2)[0].repeats, 2);
    }

    /// [`runs`] by comparing at every position: what the probes must
    /// find.
    fn runs_by_scan(tokens: &[u32], p: usize) -> Vec<Run> {
        let mut out = Vec::new();
        if p == 0 || tokens.len() < 2 * p {
            return out;
        }
        let last = tokens.len() - p;
        let mut i = 0;
        while i < last {
            if tokens[i] != tokens[i + p] {
                i += 1;
                continue;
            }
            let a = i;
            while i < last && tokens[i] == tokens[i + p] {
                i += 1;
            }
            let repeats = (i - a + p) / p;
            if repeats >= 2 {
                out.push(Run {
                    start: a,
                    period: p,
                    repeats,
                });
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn probing_finds_what_comparing_everywhere_finds(
            // Few distinct tokens, so that stretches of every length occur,
            // and blocks repeated with damage, as layers are.
            block in proptest::collection::vec(0u32..4, 1..12),
            copies in 0usize..8,
            noise in proptest::collection::vec((0usize..200, 0u32..6), 0..12),
            head in proptest::collection::vec(0u32..4, 0..20),
        ) {
            let mut t = head;
            for _ in 0..copies {
                t.extend_from_slice(&block);
            }
            for (at, tok) in noise {
                if !t.is_empty() {
                    let at = at % t.len();
                    t[at] = tok;
                }
            }
            for p in 0..=t.len() / 2 + 1 {
                proptest::prop_assert_eq!(runs(&t, p), runs_by_scan(&t, p), "period {}", p);
            }
        }
    }

    #[test]
    fn best_period_prefers_the_layer_over_inner_repeats() {
        // Layer `pqqr` (with an inner `qq`), three layers per pass, two
        // passes given separately: the layer period covers most.
        let a = toks("hpqqrpqqrpqqre");
        let b = toks("pqqrpqqrpqqr");
        let (p, block) = best_period(&[&a, &b]).unwrap();
        assert_eq!(p, 4);
        assert_eq!(block, toks("pqqr"));
    }

    #[test]
    fn best_period_late_leaves_a_matching_head_before_the_layers() {
        // Layers `abcd` preceded by a head `xcd` that ends as a layer
        // ends: the run of period 4 reaches back into the head.
        let t = toks("xcdabcdabcdy");
        assert_eq!(best_period(&[&t]).unwrap().1, toks("cdab"));
        assert_eq!(best_period_late(&[&t]).unwrap().1, toks("abcd"));
        // Without such a head both take the run's start.
        let t = toks("xabcdabcdy");
        assert_eq!(best_period_late(&[&t]).unwrap().1, toks("abcd"));
        // A run cut by foreign work (`Z`, a bucket) inside the last
        // layer: starting late (`bcda`) would chain fewer copies than
        // the run's start, so the start stands.
        let t = toks("xabcdabcdabZcdy");
        assert_eq!(best_period_late(&[&t]).unwrap().1, toks("abcd"));
        // Chained, the late block leaves the head's `cd` before the
        // first layer and the last layer whole.
        let t = toks("xcdabcdabcdy");
        let c = chains(&t, &best_period_late(&[&t]).unwrap().1, true);
        assert_eq!(c[0].starts, vec![3, 7]);
        assert_eq!(c[0].ends, vec![7, 11]);
    }

    #[test]
    fn period_with_repeats_skips_pass_level_repeats() {
        // Seven passes of six layers back to back: the pass period covers
        // more, but only the layer period repeats six times.
        let pass = format!("e{}s", "lmn".repeat(6));
        let t = toks(&pass.repeat(7));
        let (p, block) = period_with_repeats(&t, 6, |_| true).unwrap();
        assert_eq!(p, 3);
        assert_eq!(block, toks("lmn"));
        assert!(period_with_repeats(&t, 5, |_| true).is_none());
        // Two short passes of two layers back to back: the layer, not the
        // pair of passes, although the pair covers more.
        let pass = format!("e{}s", "lmn".repeat(2));
        let t = toks(&pass.repeat(4));
        assert_eq!(period_with_repeats(&t, 2, |_| true).unwrap().1, toks("lmn"));
        // What the caller does not accept is not a block.
        let t = toks("xxeabab");
        assert_eq!(
            period_with_repeats(&t, 2, |b| b.len() > 1).unwrap().1,
            toks("ab")
        );
    }

    #[test]
    fn chains_tolerate_foreign_tokens() {
        // Layers `abc`; `X` (a bucket reduction) after the second layer and
        // inside the third; a head `ab` that is not a whole layer.
        let t = toks("hhabcabcXaXbcabZ");
        let c = chains(&t, &toks("abc"), true);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].starts, vec![2, 5, 9]);
        assert_eq!(c[0].ends, vec![5, 8, 13]);
        // Ends after the last `c`; `a` of the head stops it.
        assert_eq!(c[0].end, 13);
        assert!(chains(&t, &[], true).is_empty());
        // Trailing foreign tokens go with the last copy only when asked.
        let t = toks("abcabcXYab");
        assert_eq!(chains(&t, &toks("abc"), true)[0].end, 8);
        assert_eq!(chains(&t, &toks("abc"), false)[0].end, 6);
    }
}
