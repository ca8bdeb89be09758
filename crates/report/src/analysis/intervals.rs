//! The time a union of GPU busy time covers within each step, measured
//! as the union is made ([`InWindows`]), and sorted, disjoint intervals
//! to check it against in tests.

use lumos_graph::Span;

/// The time a union covers inside each of some windows, from the union's
/// spans as they are made (sorted, disjoint): the analyses measure each
/// union only in the selected steps, so the union need not be kept (on a
/// 1 GB trace the unions of both sides were 85 MB at the report's peak).
#[derive(Debug, Clone)]
pub(crate) struct InWindows<'w> {
    windows: &'w [Span],
    /// Window positions by start.
    by_start: Vec<usize>,
    /// How many of `by_start` have started before the last span's end.
    next: usize,
    /// Started windows that may still overlap later spans.
    active: Vec<usize>,
    /// Per window, the time covered so far.
    sums: Vec<i64>,
}

impl<'w> InWindows<'w> {
    /// Measures in `windows`, none covered yet.
    pub(crate) fn new(windows: &'w [Span]) -> InWindows<'w> {
        let mut by_start: Vec<usize> = (0..windows.len()).collect();
        by_start.sort_by_key(|&w| (windows[w].start_ns, w));
        InWindows::sharing(windows, by_start)
    }

    fn sharing(windows: &'w [Span], by_start: Vec<usize>) -> InWindows<'w> {
        InWindows {
            windows,
            by_start,
            next: 0,
            active: Vec::new(),
            sums: vec![0; windows.len()],
        }
    }

    /// The same windows, measuring another union.
    pub(crate) fn another(&self) -> InWindows<'w> {
        InWindows::sharing(self.windows, self.by_start.clone())
    }

    /// Adds the union's next span: after every span added before, not
    /// touching them.
    pub(crate) fn add(&mut self, s: Span) {
        while let Some(&w) = self.by_start.get(self.next) {
            if self.windows[w].start_ns >= s.end_ns {
                break;
            }
            self.active.push(w);
            self.next += 1;
        }
        // Later spans start after this one: a window ended by its start
        // is done.
        let windows = self.windows;
        self.active.retain(|&w| windows[w].end_ns > s.start_ns);
        for &w in &self.active {
            let w_span = windows[w];
            let part = (s.end_ns.min(w_span.end_ns))
                .saturating_sub(s.start_ns.max(w_span.start_ns))
                .max(0);
            self.sums[w] = self.sums[w].saturating_add(part);
        }
    }

    /// Per window, in the order given, the time covered.
    pub(crate) fn sums(self) -> Vec<i64> {
        self.sums
    }
}

/// The reference the report's streamed measures are checked against
/// (the analyses kept these unions before [`InWindows`]).
#[cfg(test)]
/// A union of intervals, sorted and disjoint, with the running total of
/// their lengths so that the part inside any window is found in
/// O(log n).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Intervals {
    spans: Vec<Span>,
    /// `prefix[i]`: total length of `spans[..i]`.
    prefix: Vec<i64>,
}

#[cfg(test)]
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

    /// Measured as the spans come, each window gets what the kept union
    /// measures in it: windows overlapping, nested, empty, out of order,
    /// beyond every span.
    #[test]
    fn streamed_measures_are_the_kept_unions() {
        let spans = [sp(0, 5), sp(10, 30), sp(50, 60), sp(61, 90)];
        let windows = [
            sp(20, 70),
            sp(0, 100),
            sp(3, 12),
            sp(55, 55),
            sp(30, 50),
            sp(12, 13),
            sp(95, 120),
            sp(-10, 1),
            sp(40, 20),
        ];
        let mut streamed = InWindows::new(&windows);
        let mut other = streamed.another();
        for s in spans {
            streamed.add(s);
            other.add(s);
        }
        let kept = Intervals::from_disjoint(spans.to_vec());
        let expected: Vec<i64> = windows.iter().map(|&w| kept.measure_in(w)).collect();
        assert_eq!(streamed.sums(), expected);
        assert_eq!(other.sums(), expected);
    }

    #[test]
    fn intersection() {
        let a = Intervals::union([sp(0, 10), sp(20, 30)]);
        let b = Intervals::union([sp(5, 25)]);
        assert_eq!(a.intersect(&b).spans(), &[sp(5, 10), sp(20, 25)]);
        assert_eq!(a.intersect(&Intervals::default()).spans(), &[]);
    }
}
