//! Which thread of one recording is which thread of the other.
//!
//! Thread ids change between recordings, so threads are paired by what
//! they run: the pair sharing the most operators (counted with
//! multiplicity) first, then the best of the rest, each thread used once.
//! The main (training-loop) thread runs by far the most operators in both
//! recordings, so it pairs with its counterpart first.

use lumos_graph::{Graph, ProcId};
use rustc_hash::FxHashMap;

/// A thread's operator keys counted.
fn key_counts(keys: &[u64]) -> FxHashMap<u64, usize> {
    let mut m = FxHashMap::default();
    for &k in keys {
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

/// How many operators two threads share, with multiplicity: an upper bound
/// on what their alignment can match.
fn overlap(a: &FxHashMap<u64, usize>, b: &FxHashMap<u64, usize>) -> usize {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    small
        .iter()
        .map(|(k, &n)| n.min(large.get(k).copied().unwrap_or(0)))
        .sum()
}

/// The CPU threads of a graph.
pub(super) fn threads(g: &Graph) -> Vec<ProcId> {
    (0..g.processors.len() as u32)
        .map(ProcId)
        .filter(|&p| !g.processors[p.idx()].is_stream())
        .collect()
}

/// Pairs A's threads with B's, greedily by shared operators; threads that
/// share nothing stay unpaired. `keys_*` are each thread's operator keys,
/// parallel to `threads_*`. Returns pairs of indices into those lists,
/// best first.
pub(super) fn pair_threads(keys_a: &[Vec<u64>], keys_b: &[Vec<u64>]) -> Vec<(usize, usize)> {
    let counts_a: Vec<_> = keys_a.iter().map(|k| key_counts(k)).collect();
    let counts_b: Vec<_> = keys_b.iter().map(|k| key_counts(k)).collect();
    let mut candidates = Vec::new();
    for (i, ca) in counts_a.iter().enumerate() {
        for (j, cb) in counts_b.iter().enumerate() {
            let n = overlap(ca, cb);
            if n > 0 {
                candidates.push((n, i, j));
            }
        }
    }
    // Most shared first; ties in thread order, so the pairing is stable.
    candidates.sort_by(|x, y| y.0.cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    let mut used_a = vec![false; keys_a.len()];
    let mut used_b = vec![false; keys_b.len()];
    let mut pairs = Vec::new();
    for (_, i, j) in candidates {
        if !used_a[i] && !used_b[j] {
            used_a[i] = true;
            used_b[j] = true;
            pairs.push((i, j));
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_pair_by_shared_operators() {
        let a = vec![vec![1, 2], vec![3, 3, 3, 4, 5]];
        let b = vec![vec![3, 4, 3, 5], vec![9], vec![2, 1, 1]];
        assert_eq!(pair_threads(&a, &b), [(1, 0), (0, 2)]);
        assert!(pair_threads(&a, &[]).is_empty());
    }
}
