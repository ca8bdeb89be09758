//! Clock offsets between ranks, from the ends of matched collectives.
//!
//! A collective ends at the same real moment on every participant (the
//! transfer completes for all of them; the measured DLRM set agrees within
//! about 10 us while starts differ by up to 7.6 ms), so the difference
//! between two ranks' recorded ends of the same collective is the
//! difference between their clocks, plus noise. Each rank's offset is the
//! median of that difference over every collective it shares with ranks
//! already aligned, which ignores a few mismatched or noisy collectives.
//! Ranks on one host share a clock and simply get the same offset.
//! Point-to-point pairs take no part: an eager send ends long before its
//! receive does.

use super::comms::RankGraph;
use super::matching::{CollectiveMatch, MatchRule};

/// Per-rank clock offsets, and how well the aligned ends agree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClockAlignment {
    /// Per rank position: how far its clock is ahead of the reference
    /// rank's, in ns. A time `t` on the rank's clock is `t - offset` on the
    /// reference clock.
    pub offsets_ns: Vec<i64>,
    /// Rank position of the reference (offset 0): the first position.
    pub reference: u32,
    /// Rank positions that share no matched collective, directly or
    /// through other ranks, with the reference: their offset is 0 and
    /// their times are trusted as recorded.
    pub unaligned: Vec<u32>,
    /// Per matched set: the latest minus the earliest measured end over its
    /// members, on aligned clocks (0 for a point-to-point pair).
    pub end_spread_ns: Vec<i64>,
    /// The same before alignment, on the ranks' own clocks.
    pub raw_end_spread_ns: Vec<i64>,
}

fn median(mut v: Vec<i64>) -> i64 {
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        // Mean of the two middle values, rounded towards negative infinity.
        // In i128: the sum of two extreme times overflows an i64.
        ((v[n / 2 - 1] as i128 + v[n / 2] as i128).div_euclid(2)) as i64
    }
}

/// Estimates each rank's clock offset from the measured ends of the matched
/// collectives (see the module documentation).
///
/// Works in rounds: in each, every rank not yet aligned that shares
/// collectives with aligned ranks gets the median, over those collectives,
/// of (its end - the median aligned end of the aligned members). A job whose
/// collectives all span every rank is aligned in one round, each rank
/// against the reference.
pub fn align_clocks(ranks: &[RankGraph], m: &CollectiveMatch) -> ClockAlignment {
    let refs: Vec<&RankGraph> = ranks.iter().collect();
    align_refs(&refs, m)
}

/// [`align_clocks`] over borrowed ranks (a subset of a job's, while
/// deciding which ranks belong).
pub(super) fn align_refs(ranks: &[&RankGraph], m: &CollectiveMatch) -> ClockAlignment {
    let n = ranks.len();
    let ends: Vec<Vec<(usize, i64)>> = m
        .sets
        .iter()
        .map(|s| {
            if s.rule == MatchRule::PointToPoint {
                return Vec::new();
            }
            s.members
                .iter()
                .map(|mb| {
                    let r = &ranks[mb.rank_pos as usize];
                    let t = r.comms[mb.comm as usize].task;
                    (mb.rank_pos as usize, r.clock_end_ns(t))
                })
                .collect()
        })
        .collect();
    let mut offsets: Vec<Option<i64>> = vec![None; n];
    if n > 0 {
        offsets[0] = Some(0);
    }
    loop {
        let mut diffs: Vec<Vec<i64>> = vec![Vec::new(); n];
        for set in &ends {
            let aligned: Vec<i64> = set
                .iter()
                .filter_map(|&(p, e)| offsets[p].map(|o| e.saturating_sub(o)))
                .collect();
            if aligned.is_empty() {
                continue;
            }
            let reference_end = median(aligned);
            for &(p, e) in set {
                if offsets[p].is_none() {
                    diffs[p].push(e.saturating_sub(reference_end));
                }
            }
        }
        let mut progressed = false;
        for (p, d) in diffs.into_iter().enumerate() {
            if !d.is_empty() {
                offsets[p] = Some(median(d));
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    let unaligned = (0..n)
        .filter(|&p| offsets[p].is_none())
        .map(|p| p as u32)
        .collect();
    let offsets_ns: Vec<i64> = offsets.into_iter().map(|o| o.unwrap_or(0)).collect();
    let spread = |shift: bool| -> Vec<i64> {
        ends.iter()
            .map(|set| {
                let v = set.iter().map(|&(p, e)| {
                    if shift {
                        e.saturating_sub(offsets_ns[p])
                    } else {
                        e
                    }
                });
                let (lo, hi) = v.fold((i64::MAX, i64::MIN), |(lo, hi), e| (lo.min(e), hi.max(e)));
                if set.is_empty() {
                    0
                } else {
                    hi.saturating_sub(lo)
                }
            })
            .collect()
    };
    ClockAlignment {
        end_spread_ns: spread(true),
        raw_end_spread_ns: spread(false),
        offsets_ns,
        reference: 0,
        unaligned,
    }
}
