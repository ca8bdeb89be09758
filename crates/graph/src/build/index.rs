//! The builder's indexes as flat vectors instead of hash maps: a task's
//! launches and the runtime call of a correlation id. Hash maps keyed by
//! task or correlation touch one random cache line per lookup, which is what made the build slow down per task as traces
//! grew (docs/PERFORMANCE.md, "Graph build and replay"); these are read in
//! task order, so they stream through the caches.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::model::{NameId, TaskId};

/// Lists of items per key `0..n`, in one vector (compressed sparse rows):
/// the items of key `k` are `items[start[k]..start[k + 1]]`, in the order
/// they were given.
pub(super) struct Csr<T> {
    start: Vec<u32>,
    items: Vec<T>,
}

impl<T> Default for Csr<T> {
    fn default() -> Self {
        Csr {
            start: Vec::new(),
            items: Vec::new(),
        }
    }
}

impl<T: Copy> Csr<T> {
    /// Groups `pairs` (key, item) by key, keys below `n`, keeping the order
    /// of the pairs within each key.
    pub(super) fn group(n: usize, pairs: &[(u32, T)]) -> Self {
        let mut start = vec![0u32; n + 1];
        for &(k, _) in pairs {
            start[k as usize + 1] += 1;
        }
        for k in 0..n {
            start[k + 1] += start[k];
        }
        let mut next = start.clone();
        // Every slot is written below; the first item only fills them.
        let mut items = match pairs.first() {
            Some(&(_, fill)) => vec![fill; pairs.len()],
            None => Vec::new(),
        };
        for &(k, item) in pairs {
            let slot = &mut next[k as usize];
            items[*slot as usize] = item;
            *slot += 1;
        }
        Csr { start, items }
    }

    /// The items of key `k`; none for a key past the end.
    pub(super) fn of(&self, k: usize) -> &[T] {
        match (self.start.get(k), self.start.get(k + 1)) {
            (Some(&a), Some(&b)) => &self.items[a as usize..b as usize],
            _ => &[],
        }
    }
}

/// The GPU tasks each runtime call launched, in task order.
#[derive(Default)]
pub(super) struct Launched(Csr<TaskId>);

impl Launched {
    /// From (call, GPU task) pairs in GPU task order, over the first `n`
    /// tasks.
    pub(super) fn new(n: usize, pairs: &[(u32, TaskId)]) -> Self {
        Launched(Csr::group(n, pairs))
    }

    /// What `call` launched, `None` when nothing (like a map without the
    /// key). Calls split off later (`split_call`) launched nothing.
    pub(super) fn get(&self, call: &TaskId) -> Option<&[TaskId]> {
        Some(self.0.of(call.idx())).filter(|l| !l.is_empty())
    }

    /// The calls that launched more than one GPU task, each with how
    /// many, in call order: one pass over the offsets, no sort.
    pub(super) fn several(&self) -> impl Iterator<Item = (TaskId, usize)> + '_ {
        (self.0.start.windows(2).enumerate())
            .map(|(k, w)| (TaskId(k as u32), (w[1] - w[0]) as usize))
            .filter(|&(_, n)| n > 1)
    }
}

/// A runtime call by correlation id. Ids are mostly increasing integers
/// from one counter, so where they are dense enough a vector indexed by
/// `id - min` holds them; otherwise a sorted vector, searched.
#[derive(Default)]
pub(super) struct CorrIndex {
    min: u64,
    /// By `id - min`; [`NO_CALL`] where no call has the id.
    dense: Vec<TaskId>,
    /// Sorted by id, one entry per id, when `dense` would be too sparse.
    sorted: Vec<(u64, TaskId)>,
}

/// Slots a dense index may spend per call before a sorted one is used.
const DENSE_SLOTS_PER_CALL: u64 = 4;
/// An empty slot of the dense index (no trace has 2^32 tasks: ids are `u32`).
const NO_CALL: TaskId = TaskId(u32::MAX);

impl CorrIndex {
    /// Indexes `calls` (correlation, call) in the order they were seen; of
    /// several calls with one id the last seen is kept, as a map's
    /// `insert` would. Returns the index and how many calls repeated an id
    /// seen before.
    pub(super) fn new(calls: &[(u64, TaskId)]) -> (Self, u64) {
        let (Some(min), Some(max)) = (
            calls.iter().map(|c| c.0).min(),
            calls.iter().map(|c| c.0).max(),
        ) else {
            return (CorrIndex::default(), 0);
        };
        let n = calls.len() as u64;
        let span = max - min;
        if span < n.saturating_mul(DENSE_SLOTS_PER_CALL).saturating_add(1024) {
            let mut dense = vec![NO_CALL; span as usize + 1];
            let mut repeated = 0;
            for &(c, t) in calls {
                let slot = &mut dense[(c - min) as usize];
                repeated += u64::from(*slot != NO_CALL);
                *slot = t;
            }
            let index = CorrIndex {
                min,
                dense,
                sorted: Vec::new(),
            };
            return (index, repeated);
        }
        let mut sorted = calls.to_vec();
        // Stable: calls with one id stay in the order seen, the last kept.
        sorted.sort_by_key(|c| c.0);
        let mut kept: Vec<(u64, TaskId)> = Vec::with_capacity(sorted.len());
        for c in sorted {
            match kept.last_mut() {
                Some(last) if last.0 == c.0 => *last = c,
                _ => kept.push(c),
            }
        }
        let repeated = n - kept.len() as u64;
        let index = CorrIndex {
            min,
            dense: Vec::new(),
            sorted: kept,
        };
        (index, repeated)
    }

    /// The call with correlation `c`, if one was recorded.
    pub(super) fn get(&self, c: &u64) -> Option<&TaskId> {
        if !self.dense.is_empty() {
            let k = usize::try_from(c.checked_sub(self.min)?).ok()?;
            return self.dense.get(k).filter(|&&t| t != NO_CALL);
        }
        let k = self.sorted.binary_search_by_key(c, |x| x.0).ok()?;
        Some(&self.sorted[k].1)
    }
}

/// Values by correlation id, where a hash map's random probes into a table
/// larger than the caches were most of the inter-stream step on large
/// traces: ids sorted (they come nearly in order, which the stable sort
/// merges cheaply), each looked up from where the last lookup ended, since
/// callers ask in nearly increasing order too. Callers on several threads
/// each keep their own cursor ([`ByCorr::get_from`]); the shared one is
/// only a hint, so it is atomic for the map to be shared, not for order.
pub(super) struct ByCorr<V> {
    keys: Vec<u64>,
    values: Vec<V>,
    cursor: AtomicUsize,
}

impl<V: Copy> ByCorr<V> {
    /// From (id, value) pairs in the order seen; of several values for one
    /// id the last is kept, as a map's `insert` would.
    pub(super) fn new(mut pairs: Vec<(u64, V)>) -> Self {
        // Stable: pairs with one id stay in the order seen.
        pairs.sort_by_key(|p| p.0);
        let mut keys: Vec<u64> = Vec::with_capacity(pairs.len());
        let mut values: Vec<V> = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            match (keys.last(), values.last_mut()) {
                (Some(&last), Some(slot)) if last == k => *slot = v,
                _ => {
                    keys.push(k);
                    values.push(v);
                }
            }
        }
        ByCorr {
            keys,
            values,
            cursor: AtomicUsize::new(0),
        }
    }

    /// The value of id `c`, if one was given.
    pub(super) fn get(&self, c: &u64) -> Option<&V> {
        let mut cursor = self.cursor.load(Ordering::Relaxed);
        let v = self.get_from(c, &mut cursor);
        self.cursor.store(cursor, Ordering::Relaxed);
        v
    }

    /// [`ByCorr::get`], searched from the caller's own `cursor`, which is
    /// left where the search ended.
    pub(super) fn get_from(&self, c: &u64, cursor: &mut usize) -> Option<&V> {
        let k = partition_from(&self.keys, *cursor, |&x| x < *c);
        *cursor = k;
        (self.keys.get(k) == Some(c)).then(|| &self.values[k])
    }

    /// Whether id `c` has a value.
    pub(super) fn contains_key(&self, c: &u64) -> bool {
        self.get(c).is_some()
    }
}

/// `v.partition_point(pred)`, searched from `from` outwards: forward by
/// doubling steps when the answer is at or after `from`, else in `v[..from]`.
/// The same answer from any `from`; fast when successive searches move
/// forward a little, as they do along a thread's calls, and without the
/// cache misses of a binary search over a vector larger than the caches.
pub(super) fn partition_from<T>(v: &[T], from: usize, pred: impl Fn(&T) -> bool) -> usize {
    let from = from.min(v.len());
    if from > 0 && !pred(&v[from - 1]) {
        return v[..from].partition_point(pred);
    }
    // Everything before `lo` satisfies `pred`.
    let mut lo = from;
    let mut step = 1;
    loop {
        let probe = lo + step - 1;
        if probe >= v.len() {
            return lo + v[lo..].partition_point(pred);
        }
        if !pred(&v[probe]) {
            return lo + v[lo..probe].partition_point(pred);
        }
        lo = probe + 1;
        step *= 2;
    }
}

/// A property of each interned name, worked out on a name's first use
/// rather than once per task that bears it.
pub(super) struct PerName<T>(Vec<Option<T>>);

impl<T: Copy> PerName<T> {
    /// No name worked out yet, among `count` names.
    pub(super) fn new(count: usize) -> Self {
        PerName(vec![None; count])
    }

    /// `of(names[name])`, from the memo after the first time.
    pub(super) fn get(&mut self, name: NameId, names: &[String], of: impl FnOnce(&str) -> T) -> T {
        let i = name.0 as usize;
        *self.0[i].get_or_insert_with(|| of(&names[i]))
    }
}

const END: u32 = u32::MAX;

/// The keys of `v` (distinct) in sorted order, as a chain: the first
/// position and each position's successor ([`END`] after the last). Linear
/// for the orders profilers write a thread's call tree in: parents before
/// children (pre-order, by start) or children before parents (post-order,
/// by end, as the synthesizer and some exporters do), where a comparison
/// sort would pay n log n. Each key is read once in file order: the
/// finished subtrees whose first key is greater than the new key's are its
/// descendants and follow it; what remains lists the subtrees in order.
/// Other orders give a chain that is not sorted, which [`merge_nested`]
/// checks. `v` is shorter than [`END`].
fn nested_chain<K: Ord>(v: &[K]) -> (u32, Vec<u32>) {
    let mut next = vec![END; v.len()];
    // Finished subtrees, (first, last) key positions, in the order found.
    let mut stack: Vec<(u32, u32)> = Vec::new();
    for i in 0..v.len() {
        let mut k = stack.len();
        while k > 0 && v[stack[k - 1].0 as usize] > v[i] {
            k -= 1;
        }
        let mut last = i as u32;
        for &(first, end) in &stack[k..] {
            next[last as usize] = first;
            last = end;
        }
        stack.truncate(k);
        stack.push((i as u32, last));
    }
    for w in stack.windows(2) {
        next[w[0].1 as usize] = w[1].0;
    }
    (stack.first().map_or(END, |s| s.0), next)
}

/// The keys of `a` and `b` (distinct over both) in one sorted list: each
/// list ordered by [`nested_chain`] and the two chains merged as they are
/// walked, so that neither list is copied in order before the merge. The
/// answer is checked and sorted (adaptively: it is mostly ordered) if an
/// order the chains do not handle left it unsorted, so it is always the
/// sorted order.
pub(super) fn merge_nested<K: Ord + Copy>(a: &[K], b: &[K]) -> Vec<K> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    if a.len() >= END as usize || b.len() >= END as usize {
        out.extend_from_slice(a);
        out.extend_from_slice(b);
        out.sort();
        return out;
    }
    let (mut i, next_a) = nested_chain(a);
    let (mut j, next_b) = nested_chain(b);
    while i != END && j != END {
        if b[j as usize] < a[i as usize] {
            out.push(b[j as usize]);
            j = next_b[j as usize];
        } else {
            out.push(a[i as usize]);
            i = next_a[i as usize];
        }
    }
    while i != END {
        out.push(a[i as usize]);
        i = next_a[i as usize];
    }
    while j != END {
        out.push(b[j as usize]);
        j = next_b[j as usize];
    }
    if !out.windows(2).all(|w| w[0] < w[1]) {
        out.sort();
    }
    out
}

/// Distinct task ids in increasing order, through a bit per id over their
/// range: linear where a comparison sort of ids gathered in interleaved
/// runs (a thread's calls and the GPU tasks each launched) is n log n.
/// Few ids spread over a wide range are sorted instead, so the bits never
/// cost more than the ids.
pub(super) fn sorted_distinct(ids: &[TaskId]) -> Vec<TaskId> {
    let (Some(lo), Some(hi)) = (ids.iter().map(|t| t.0).min(), ids.iter().map(|t| t.0).max())
    else {
        return Vec::new();
    };
    // A few ids spread over a wide range (a step of a few tasks among
    // millions, many steps): sorting them is cheaper than the bits, and
    // keeps many tiny steps from costing steps x tasks.
    if ((hi - lo) as usize >> 6) > ids.len() {
        let mut out = ids.to_vec();
        out.sort_unstable();
        out.dedup();
        return out;
    }
    let mut bits = vec![0u64; ((hi - lo) as usize >> 6) + 1];
    for t in ids {
        let k = (t.0 - lo) as usize;
        bits[k >> 6] |= 1 << (k & 63);
    }
    let mut out = Vec::with_capacity(ids.len());
    for (w, &word) in bits.iter().enumerate() {
        let mut x = word;
        while x != 0 {
            let b = x.trailing_zeros();
            out.push(TaskId(lo + (w as u32) * 64 + b));
            x &= x - 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_from_agrees_with_partition_point_from_anywhere() {
        let v: Vec<i64> = vec![1, 1, 2, 3, 5, 5, 5, 8, 13, 21, 34, 34, 55];
        for x in -1..60 {
            let want = v.partition_point(|&y| y <= x);
            for from in 0..=v.len() + 2 {
                assert_eq!(
                    partition_from(&v, from, |&y| y <= x),
                    want,
                    "x={x} from={from}"
                );
            }
        }
        assert_eq!(partition_from(&[] as &[i64], 3, |&y| y < 0), 0);
    }

    #[test]
    fn csr_keeps_order_within_a_key() {
        let c = Csr::group(4, &[(2, 'a'), (0, 'b'), (2, 'c'), (3, 'd'), (2, 'e')]);
        assert_eq!(c.of(0), &['b']);
        assert_eq!(c.of(1), &[] as &[char]);
        assert_eq!(c.of(2), &['a', 'c', 'e']);
        assert_eq!(c.of(3), &['d']);
        assert_eq!(c.of(9), &[] as &[char]);
    }

    #[test]
    fn corr_index_keeps_the_last_call_of_an_id_dense_or_sorted() {
        let calls = [
            (10, TaskId(0)),
            (12, TaskId(1)),
            (10, TaskId(2)),
            (11, TaskId(3)),
        ];
        let (dense, repeated) = CorrIndex::new(&calls);
        assert_eq!(repeated, 1);
        assert!(!dense.dense.is_empty());
        let sparse_calls = [
            (10, TaskId(0)),
            (u64::MAX - 1, TaskId(1)),
            (10, TaskId(2)),
            (1 << 40, TaskId(3)),
        ];
        let (sparse, repeated) = CorrIndex::new(&sparse_calls);
        assert_eq!(repeated, 1);
        assert!(sparse.dense.is_empty());
        assert_eq!(dense.get(&10), Some(&TaskId(2)));
        assert_eq!(dense.get(&11), Some(&TaskId(3)));
        assert_eq!(dense.get(&9), None);
        assert_eq!(dense.get(&13), None);
        assert_eq!(sparse.get(&10), Some(&TaskId(2)));
        assert_eq!(sparse.get(&(u64::MAX - 1)), Some(&TaskId(1)));
        assert_eq!(sparse.get(&11), None);
        assert_eq!(CorrIndex::new(&[]).0.get(&0), None);
    }

    #[test]
    fn merge_nested_sorts_any_order() {
        // Pre-order, post-order (children first), interleaved leaves, and
        // orders the linear pass gets wrong (checked and sorted).
        let cases: Vec<Vec<i32>> = vec![
            vec![],
            vec![5],
            vec![1, 2, 3, 4, 5],
            vec![3, 4, 2, 6, 7, 5, 1, 9, 8],
            vec![1, 2, 5, 3, 4],
            vec![9, 8, 7, 6, 5, 4, 3, 2, 1],
            vec![4, 1, 3, 9, 2, 8, 5, 7, 6, 0],
        ];
        for c in &cases {
            let mut want = c.clone();
            want.sort();
            assert_eq!(merge_nested(c, &[]), want);
            assert_eq!(merge_nested(&[], c), want);
            // Split into two lists every way: both orders merged.
            for cut in 0..=c.len() {
                let (even, odd): (Vec<i32>, Vec<i32>) = c
                    .iter()
                    .partition(|&&x| x.rem_euclid(2) == 0 || x < cut as i32);
                assert_eq!(merge_nested(&even, &odd), want);
                assert_eq!(merge_nested(&odd, &even), want);
            }
        }
    }

    #[test]
    fn merge_and_sorted_distinct() {
        assert_eq!(
            merge_nested(&[1, 4, 6], &[2, 3, 7, 8]),
            vec![1, 2, 3, 4, 6, 7, 8]
        );
        assert_eq!(merge_nested::<i32>(&[], &[2]), vec![2]);
        let ids = [TaskId(70), TaskId(3), TaskId(200), TaskId(4), TaskId(64)];
        let got: Vec<u32> = sorted_distinct(&ids).iter().map(|t| t.0).collect();
        assert_eq!(got, vec![3, 4, 64, 70, 200]);
        // Repeats; and a few ids over a wide range (sorted, not bits).
        let ids = [TaskId(70), TaskId(3), TaskId(70), TaskId(4), TaskId(3)];
        let got: Vec<u32> = sorted_distinct(&ids).iter().map(|t| t.0).collect();
        assert_eq!(got, vec![3, 4, 70]);
        let ids = [
            TaskId(u32::MAX - 1),
            TaskId(5),
            TaskId(u32::MAX - 1),
            TaskId(9),
        ];
        let got: Vec<u32> = sorted_distinct(&ids).iter().map(|t| t.0).collect();
        assert_eq!(got, vec![5, 9, u32::MAX - 1]);
        assert!(sorted_distinct(&[]).is_empty());
    }

    #[test]
    fn by_corr_keeps_the_last_value_and_finds_from_anywhere() {
        let m = ByCorr::new(vec![(7, 'a'), (3, 'b'), (7, 'c'), (9, 'd'), (1, 'e')]);
        for c in [9, 1, 7, 3, 8, 0, 10, 7, 1] {
            let want = match c {
                1 => Some('e'),
                3 => Some('b'),
                7 => Some('c'),
                9 => Some('d'),
                _ => None,
            };
            assert_eq!(m.get(&c).copied(), want, "id {c}");
            assert_eq!(m.contains_key(&c), want.is_some());
        }
        assert_eq!(ByCorr::<u8>::new(Vec::new()).get(&0), None);
    }
}
