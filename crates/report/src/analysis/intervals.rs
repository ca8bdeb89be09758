//! Sorted, disjoint time intervals: the unions of GPU busy time the
//! analyses measure within each step.

use lumos_graph::Span;

/// A union of intervals, sorted and disjoint, with the running total of
/// their lengths so that the part inside any window is found in
/// O(log n).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Intervals {
    spans: Vec<Span>,
    /// `prefix[i]`: total length of `spans[..i]`.
    prefix: Vec<i64>,
}

impl Intervals {
    /// The union of `spans` (empty and reversed ones are left out).
    pub(crate) fn union(spans: impl IntoIterator<Item = Span>) -> Intervals {
        let mut v: Vec<Span> = spans
            .into_iter()
            .filter(|s| s.start_ns < s.end_ns)
            .collect();
        v.sort_unstable_by_key(|s| s.start_ns);
        let mut merged: Vec<Span> = Vec::with_capacity(v.len());
        for s in v {
            match merged.last_mut() {
                Some(last) if s.start_ns <= last.end_ns => last.end_ns = last.end_ns.max(s.end_ns),
                _ => merged.push(s),
            }
        }
        Intervals::from_disjoint(merged)
    }

    /// The intervals `spans`, already sorted, disjoint and not touching.
    pub(crate) fn from_disjoint(spans: Vec<Span>) -> Intervals {
        let mut prefix = Vec::with_capacity(spans.len() + 1);
        let mut total = 0i64;
        prefix.push(0);
        for s in &spans {
            total = total.saturating_add(s.end_ns.saturating_sub(s.start_ns));
            prefix.push(total);
        }
        Intervals { spans, prefix }
    }

    /// The intervals, in order.
    pub(crate) fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// Time covered inside `w`.
    pub(crate) fn measure_in(&self, w: Span) -> i64 {
        if w.start_ns >= w.end_ns || self.spans.is_empty() {
            return 0;
        }
        // First interval ending after the window starts, first starting at
        // or after it ends.
        let i = self.spans.partition_point(|s| s.end_ns <= w.start_ns);
        let j = self.spans.partition_point(|s| s.start_ns < w.end_ns);
        if i >= j {
            return 0;
        }
        let mut total = self.prefix[j] - self.prefix[i];
        let first = self.spans[i];
        if first.start_ns < w.start_ns {
            total -= w.start_ns - first.start_ns;
        }
        let last = self.spans[j - 1];
        if last.end_ns > w.end_ns {
            total -= last.end_ns - w.end_ns;
        }
        total
    }

    /// Time covered by both `self` and `other`.
    pub(crate) fn intersect(&self, other: &Intervals) -> Intervals {
        let (a, b) = (&self.spans, &other.spans);
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < a.len() && j < b.len() {
            let start = a[i].start_ns.max(b[j].start_ns);
            let end = a[i].end_ns.min(b[j].end_ns);
            if start < end {
                out.push(Span {
                    start_ns: start,
                    end_ns: end,
                });
            }
            if a[i].end_ns < b[j].end_ns {
                i += 1;
            } else {
                j += 1;
            }
        }
        Intervals::from_disjoint(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(start_ns: i64, end_ns: i64) -> Span {
        Span { start_ns, end_ns }
    }

    #[test]
    fn union_merges_and_measures_clipped() {
        let u = Intervals::union([sp(10, 20), sp(0, 5), sp(15, 30), sp(40, 40), sp(50, 60)]);
        assert_eq!(u.spans(), &[sp(0, 5), sp(10, 30), sp(50, 60)]);
        assert_eq!(u.measure_in(sp(0, 100)), 35);
        assert_eq!(u.measure_in(sp(3, 12)), 4);
        assert_eq!(u.measure_in(sp(30, 50)), 0);
        assert_eq!(u.measure_in(sp(55, 55)), 0);
        assert_eq!(u.measure_in(sp(12, 13)), 1);
        assert_eq!(Intervals::default().measure_in(sp(0, 10)), 0);
    }

    #[test]
    fn intersection() {
        let a = Intervals::union([sp(0, 10), sp(20, 30)]);
        let b = Intervals::union([sp(5, 25)]);
        assert_eq!(a.intersect(&b).spans(), &[sp(5, 10), sp(20, 25)]);
        assert_eq!(a.intersect(&Intervals::default()).spans(), &[]);
    }
}
