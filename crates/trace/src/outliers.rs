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
