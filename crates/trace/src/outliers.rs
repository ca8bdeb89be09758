//! Events whose end lies absurdly far past the rest of their trace: a
//! `dur` damaged or edited (`1e12` us is 11 days), which would otherwise
//! read as a step or span that long, without a word.
//!
//! "Absurd" is judged against the trace itself, not a fixed length a long
//! real run could reach: an event is absurd when it ends more than
//! [`SPANS`] times the span of all the trace's event starts after the last
//! of them starts (and at least [`FLOOR_NS`] after it, so that a trace of a
//! handful of events starting together is not judged by a span of
//! nanoseconds). Starts are what the judgment is made of because a `dur`
//! does not move them: however many events carry an absurd `dur`, each is
//! found. A real event ends after the last start by at most its own
//! length, and real traces end within 1.5 spans of their last start (the
//! corpus: 1.5 for a one-kernel trace of microseconds, under 0.7 for every
//! other).
//!
//! Starts are watched too ([`Starts`]): one event whose `ts` is 0 or -1
//! in a trace of absolute microseconds (1.7e15) would make a window of 54
//! years. The starts are filed by day; the days whose starts lie within
//! [`GAP_NS`] of each other form a cluster, and the cluster of the most
//! events is the trace. Another cluster is outlying when it lies more than
//! [`GAP_NS`] (a day) and more than [`GAP_SPANS`] times the span of the
//! trace's own starts away from them. No profiler trace runs for a day,
//! let alone with a gap of a day in it (the corpus: every trace's starts
//! span 44 s at most, with no gap over 30 s), so the rule cannot take a real
//! event for an outlier, and a damaged `ts` (0, -1, a year off) is found
//! however many events carry it. The host's events and the device's are
//! watched apart (`read.rs`): a GPU clock days off its host's is clock
//! skew, which the graph build warns about and replays through, not a
//! damaged `ts` to refuse.

use rustc_hash::FxHashMap;

use crate::model::{Ident, StrId};

/// How many spans of the trace's starts past its last start an event must
/// end to be absurd.
pub(crate) const SPANS: i64 = 10;

/// The least an absurd event ends after the trace's last start, ns.
pub(crate) const FLOOR_NS: i64 = 1_000_000_000;

/// One event that may end absurdly late, kept until the trace is read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate {
    pub end: i64,
    pub index: u64,
    pub name: StrId,
    pub pid: Ident,
    pub tid: Ident,
    pub ts_ns: i64,
    pub dur_ns: i64,
}

/// Watches the kept complete events as the fold adds them, in bounded
/// work per event: their earliest and latest start, and the events that
/// end past the limit those give so far. The limit only grows as events
/// come (a later start raises it, an earlier one widens the span), so an
/// event past the final limit was past the limit of its time too: the
/// candidates kept hold every absurd event, and those that fell under
/// the limit since are dropped as the list grows.
#[derive(Debug)]
pub(crate) struct Outliers {
    first: i64,
    last: i64,
    limit: i64,
    candidates: Vec<Candidate>,
    prune_at: usize,
}

impl Default for Outliers {
    fn default() -> Self {
        Outliers {
            first: i64::MAX,
            last: i64::MIN,
            limit: i64::MAX,
            candidates: Vec::new(),
            prune_at: 64,
        }
    }
}

/// The latest end that is not absurd for a trace whose starts run from
/// `first` to `last`.
fn limit(first: i64, last: i64) -> i64 {
    let span = last.saturating_sub(first);
    last.saturating_add(span.saturating_mul(SPANS).max(FLOOR_NS))
}

impl Outliers {
    /// Notes one kept event.
    #[inline(always)]
    pub(crate) fn add(&mut self, ts_ns: i64, end: i64, candidate: impl FnOnce() -> Candidate) {
        if ts_ns < self.first || ts_ns > self.last {
            self.first = self.first.min(ts_ns);
            self.last = self.last.max(ts_ns);
            self.limit = limit(self.first, self.last);
        }
        if end > self.limit {
            self.keep(candidate());
        }
    }

    #[cold]
    fn keep(&mut self, c: Candidate) {
        self.candidates.push(c);
        if self.candidates.len() >= self.prune_at {
            let limit = self.limit;
            self.candidates.retain(|c| c.end > limit);
            self.prune_at = (2 * self.candidates.len()).max(64);
        }
    }

    /// The absurd events, in file order, and how long after the last
    /// start they ended, at least (ns).
    pub(crate) fn finish(mut self) -> (Vec<Candidate>, i64) {
        let limit = self.limit;
        self.candidates.retain(|c| c.end > limit);
        (self.candidates, limit.saturating_sub(self.last))
    }
}

/// How far, at least, outlying starts lie from the trace's (ns): a day.
pub(crate) const GAP_NS: i64 = 86_400 * 1_000_000_000;

/// How many times the span of the trace's own starts, at least, outlying
/// starts lie from them.
pub(crate) const GAP_SPANS: i64 = 100;

/// The most distinct days of starts filed: more is a trace spread over
/// eleven years, outlying whatever its bulk.
pub(crate) const MAX_DAYS: usize = 4096;

/// The starts of one day.
#[derive(Debug, Clone, Copy)]
struct Day {
    lo: i64,
    hi: i64,
    count: u64,
    /// The day's first event in file order.
    first: Candidate,
}

/// Watches the kept events' starts by day, in bounded memory
/// ([`MAX_DAYS`]) and two comparisons per event on the usual path (an
/// event of the same day as the one before). The day of that path is kept
/// as its range of nanoseconds and its counts beside it, not looked up:
/// a division and an indexed day per event cost about 1% of the reader's
/// instructions, on the fold's one thread.
#[derive(Debug)]
pub(crate) struct Starts {
    days: Vec<Day>,
    by_day: FxHashMap<i64, usize>,
    /// The day of the last event: its range `[from, to)`, its place in
    /// `days`, and its starts since it became the last day (written to
    /// `days` when another day comes, and by [`Starts::finish`]).
    from: i64,
    to: i64,
    at: usize,
    lo: i64,
    hi: i64,
    count: u64,
    /// Events of days past [`MAX_DAYS`], with the first of them.
    unfiled: u64,
    first_unfiled: Option<Candidate>,
}

impl Default for Starts {
    fn default() -> Self {
        Starts {
            days: Vec::new(),
            by_day: FxHashMap::default(),
            // An empty range: the first event files its day.
            from: i64::MAX,
            to: i64::MIN,
            at: 0,
            lo: i64::MAX,
            hi: i64::MIN,
            count: 0,
            unfiled: 0,
            first_unfiled: None,
        }
    }
}

/// Starts far from the trace's ([`Starts::finish`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outlying {
    /// How many events start there.
    pub count: u64,
    /// How many events the trace's own starts hold.
    pub kept: u64,
    /// The first outlying event in file order.
    pub first: Candidate,
    /// The least distance between the outlying starts and the trace's
    /// (ns): `None` when the starts are spread over more than
    /// [`MAX_DAYS`] days.
    pub gap_ns: Option<i64>,
    /// The span of the trace's own starts (ns).
    pub span_ns: i64,
    /// Whether the first outlying event starts before the trace's.
    pub before: bool,
}

impl Starts {
    /// Notes one kept event's start.
    #[inline(always)]
    pub(crate) fn add(&mut self, ts_ns: i64, candidate: impl FnOnce() -> Candidate) {
        if ts_ns >= self.from && ts_ns < self.to {
            self.lo = self.lo.min(ts_ns);
            self.hi = self.hi.max(ts_ns);
            self.count += 1;
        } else {
            self.other_day(ts_ns, candidate());
        }
    }

    /// Writes the last day's counts to its place in `days`.
    fn put_back(&mut self) {
        if self.count > 0 {
            let b = &mut self.days[self.at];
            b.lo = b.lo.min(self.lo);
            b.hi = b.hi.max(self.hi);
            b.count += self.count;
        }
        (self.lo, self.hi, self.count) = (i64::MAX, i64::MIN, 0);
    }

    #[cold]
    fn other_day(&mut self, ts_ns: i64, c: Candidate) {
        self.put_back();
        let day = ts_ns.div_euclid(GAP_NS);
        let at = match self.by_day.get(&day) {
            Some(&i) => i,
            None if self.days.len() < MAX_DAYS => {
                self.days.push(Day {
                    lo: ts_ns,
                    hi: ts_ns,
                    count: 0,
                    first: c,
                });
                self.by_day.insert(day, self.days.len() - 1);
                self.days.len() - 1
            }
            None => {
                self.unfiled += 1;
                self.first_unfiled.get_or_insert(c);
                // The range stays empty: every event of an unfiled day
                // comes back here to be counted.
                (self.from, self.to) = (i64::MAX, i64::MIN);
                return;
            }
        };
        self.at = at;
        self.from = day.saturating_mul(GAP_NS);
        // From the next day's start, not `from` + a day: `from` saturates
        // at the bottom of the clock, and the day after would overlap it.
        self.to = (day + 1).saturating_mul(GAP_NS);
        (self.lo, self.hi, self.count) = (ts_ns, ts_ns, 1);
    }

    /// The outlying starts, if any.
    #[cfg(test)]
    pub(crate) fn finish(self) -> Option<Outlying> {
        self.finish_near(None).0
    }

    /// The outlying starts, if any, and the middle of the trace's own
    /// (the most events within a gap of each other). Where two groups of
    /// starts hold as many events, the one nearer `near` (the middle of
    /// the other clock's, when known) is the trace's: a kernel of two
    /// with a `ts` 54 years early named the other, which agreed with
    /// every host event, as the one far off.
    pub(crate) fn finish_near(mut self, near: Option<i64>) -> (Option<Outlying>, Option<i64>) {
        self.put_back();
        self.days.sort_by_key(|d| d.lo);
        // Clusters: runs of days whose starts lie within a gap of each
        // other, as (first day, last day + 1, events).
        let mut clusters: Vec<(usize, usize, u64)> = Vec::new();
        for (i, d) in self.days.iter().enumerate() {
            match clusters.last_mut() {
                Some(c) if d.lo.saturating_sub(self.days[c.1 - 1].hi) <= GAP_NS => {
                    c.1 = i + 1;
                    c.2 += d.count;
                }
                _ => clusters.push((i, i + 1, d.count)),
            }
        }
        let distance = |c: &(usize, usize, u64)| match near {
            Some(t) => {
                let (lo, hi) = (self.days[c.0].lo, self.days[c.1 - 1].hi);
                lo.saturating_sub(t).max(t.saturating_sub(hi)).max(0)
            }
            None => 0,
        };
        let Some(&(b0, b1, kept)) = (clusters.iter())
            .max_by_key(|c| (c.2, std::cmp::Reverse(distance(c)), std::cmp::Reverse(c.0)))
        else {
            return (None, None);
        };
        let (lo, hi) = (self.days[b0].lo, self.days[b1 - 1].hi);
        let middle = Some(lo / 2 + hi / 2);
        let span_ns = hi.saturating_sub(lo);
        let far = GAP_NS.max(span_ns.saturating_mul(GAP_SPANS));
        let mut out: Option<Outlying> = None;
        for &(c0, c1, count) in &clusters {
            let gap = if c0 >= b1 {
                self.days[c0].lo.saturating_sub(hi)
            } else if c1 <= b0 {
                lo.saturating_sub(self.days[c1 - 1].hi)
            } else {
                continue;
            };
            if gap <= far {
                continue;
            }
            let first = (self.days[c0..c1].iter().map(|d| d.first))
                .min_by_key(|c| c.index)
                .expect("a cluster has a day");
            let o = out.get_or_insert(Outlying {
                count: 0,
                kept,
                first,
                gap_ns: Some(gap),
                span_ns,
                before: c1 <= b0,
            });
            o.count += count;
            o.gap_ns = o.gap_ns.min(Some(gap));
            if first.index < o.first.index {
                o.first = first;
                o.before = c1 <= b0;
            }
        }
        if let Some(c) = self.first_unfiled {
            let o = out.get_or_insert(Outlying {
                count: 0,
                kept,
                first: c,
                gap_ns: None,
                span_ns,
                before: c.ts_ns < lo,
            });
            o.count += self.unfiled;
            o.gap_ns = None;
            if c.index < o.first.index {
                o.first = c;
                o.before = c.ts_ns < lo;
            }
        }
        (out, middle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(o: &mut Outliers, index: u64, ts: i64, dur: i64) {
        o.add(ts, ts + dur, || Candidate {
            end: ts + dur,
            index,
            name: StrId(0),
            pid: Ident::Num(0),
            tid: Ident::Num(0),
            ts_ns: ts,
            dur_ns: dur,
        });
    }

    #[test]
    fn an_event_past_ten_spans_of_starts_is_absurd_wherever_it_comes() {
        let s = 1_000_000_000; // 1 s of starts
        let mut o = Outliers::default();
        // The absurd one first, when the limit is still low; then many
        // events that pass the early limits and fall under the final one.
        add(&mut o, 0, 0, 1_000_000_000_000_000);
        for i in 1..1000 {
            add(&mut o, i as u64, i * s / 1000, 5 * s);
        }
        add(&mut o, 1000, s, 11 * s);
        add(&mut o, 1001, s / 2, 10 * s);
        let (absurd, limit) = o.finish();
        assert_eq!(limit, 10 * s);
        let found: Vec<u64> = absurd.iter().map(|c| c.index).collect();
        assert_eq!(found, [0, 1000]);
    }

    fn start(s: &mut Starts, index: u64, ts: i64) {
        s.add(ts, || Candidate {
            end: ts,
            index,
            name: StrId(0),
            pid: Ident::Num(0),
            tid: Ident::Num(0),
            ts_ns: ts,
            dur_ns: 0,
        });
    }

    #[test]
    fn a_start_far_from_the_rest_is_outlying_whichever_side_and_place() {
        let abs = 1_700_000_000_000_000_000; // 1.7e15 us, in ns
        for (bad_at, bad_ts) in [(0, 0), (500, -1_000), (999, abs * 2), (0, abs + 2 * GAP_NS)] {
            let mut s = Starts::default();
            for i in 0..1000 {
                let ts = if i == bad_at {
                    bad_ts
                } else {
                    abs + i * 1_000_000
                };
                start(&mut s, i as u64, ts);
            }
            let o = s.finish().expect("outlying");
            assert_eq!((o.count, o.kept, o.first.index), (1, 999, bad_at as u64));
            assert_eq!(o.before, bad_ts < abs);
        }
        // Many events at 0: still the smaller cluster.
        let mut s = Starts::default();
        for i in 0..1000 {
            start(&mut s, i, if i % 10 == 3 { 0 } else { abs + i as i64 });
        }
        let o = s.finish().expect("outlying");
        assert_eq!((o.count, o.first.index), (100, 3));
    }

    #[test]
    fn starts_of_a_real_trace_are_not_outlying() {
        // Relative times from 0, an event at -1 us; a run of 20 hours
        // across a day's boundary; two events a day and a half apart.
        for starts in [
            vec![-1_000, 0, 5_000_000_000, 10_000_000_000],
            (0..200)
                .map(|i| GAP_NS - 10 * 3_600_000_000_000 + i * 360_000_000_000)
                .collect(),
        ] {
            let mut s = Starts::default();
            for (i, &ts) in starts.iter().enumerate() {
                start(&mut s, i as u64, ts);
            }
            assert!(s.finish().is_none(), "{starts:?}");
        }
        assert!(Starts::default().finish().is_none());
    }

    #[test]
    fn starts_at_the_ends_of_the_clock_are_counted_once_each() {
        let abs = 1_700_000_000_000_000_000;
        let mut s = Starts::default();
        let mut i = 0;
        for ts in [
            i64::MAX,
            abs,
            i64::MIN,
            abs + 1,
            i64::MAX,
            abs + 2,
            i64::MIN,
        ] {
            start(&mut s, i, ts);
            i += 1;
        }
        for _ in 0..10 {
            start(&mut s, i, abs + i as i64);
            i += 1;
        }
        let o = s.finish().expect("outlying");
        assert_eq!((o.count, o.kept, o.first.index), (4, 13, 0));
    }

    #[test]
    fn each_start_is_filed_under_its_own_day_at_the_bottom_of_the_clock() {
        // The lowest day's range starts at i64::MIN (saturated); the day
        // after must not overlap it (review).
        let next = (i64::MIN.div_euclid(GAP_NS) + 1) * GAP_NS;
        let starts = [i64::MIN, next + 5, i64::MIN + 7, next + 1, next - 1];
        let mut s = Starts::default();
        for (i, &ts) in starts.iter().enumerate() {
            start(&mut s, i as u64, ts);
        }
        s.put_back();
        let mut want: FxHashMap<i64, (i64, i64, u64)> = FxHashMap::default();
        for &ts in &starts {
            let d = want.entry(ts.div_euclid(GAP_NS)).or_insert((ts, ts, 0));
            *d = (d.0.min(ts), d.1.max(ts), d.2 + 1);
        }
        let got: FxHashMap<i64, (i64, i64, u64)> = (s.by_day.iter())
            .map(|(&day, &i)| (day, (s.days[i].lo, s.days[i].hi, s.days[i].count)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn starts_over_more_days_than_filed_are_outlying() {
        let mut s = Starts::default();
        for i in 0..(MAX_DAYS as i64 + 5) {
            start(&mut s, i as u64, i * 2 * GAP_NS);
        }
        let o = s.finish().expect("outlying");
        assert_eq!(o.gap_ns, None);
        assert!(o.count >= 5);
    }

    #[test]
    fn a_trace_of_starts_close_together_is_judged_by_the_floor() {
        let mut o = Outliers::default();
        add(&mut o, 0, 0, 900_000_000);
        add(&mut o, 1, 10, 5);
        assert!(o.finish().0.is_empty());
        let mut o = Outliers::default();
        add(&mut o, 0, 0, 2_000_000_000);
        add(&mut o, 1, 10, 5);
        assert_eq!(o.finish().0.len(), 1);
    }
}
