//! Clock offsets between ranks, from the ends of matched collectives.
//!
//! A collective ends at the same real moment on every participant (the
//! transfer completes for all of them; the measured DLRM set agrees within
//! about 10 us while starts differ by up to 7.6 ms), so the difference
//! between two ranks' recorded ends of the same collective is the
//! difference between their clocks, plus noise.
//!
//! Ranks on one host share a clock: Kineto stamps CPU and GPU activity of
//! every process on a host from the same system clock. So the unknown is
//! one offset per *clock domain*: a host, for the ranks whose traces name
//! it ([`RankGraph::host`]), else the rank alone. A domain's offset is the
//! median, over every collective end of all its ranks shared with ranks
//! already aligned, of (that end - the median aligned end of the aligned
//! members). Pooling a host's ranks gives the median several times the
//! evidence, and no rank of a host drifts from the others by its own
//! noise. The median ignores a few mismatched or noisy collectives.
//! Point-to-point pairs take no part: an eager send ends long before its
//! receive does.
//!
//! Each rank's residual ([`ClockAlignment::residual_ns`]) says how well the
//! domain's offset fits it: the median of its aligned end minus the other
//! members' median aligned end. On a host whose ranks really share a clock
//! it is the end noise (microseconds); a large one says the traces named
//! one host for ranks that did not share its clock.

use rustc_hash::FxHashMap;

use super::comms::RankGraph;
use super::matching::{CollectiveMatch, MatchRule};

/// One host's clock: the ranks that name it and the offset they share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostClock {
    /// The host, as the traces name it.
    pub host: String,
    /// Its ranks' positions, ascending.
    pub ranks: Vec<u32>,
    /// How far its clock is ahead of the reference rank's, in ns: every
    /// one of its ranks has it in [`ClockAlignment::offsets_ns`].
    pub offset_ns: i64,
    /// How many collective ends of its ranks the offset is the median of
    /// (0 for the reference rank's host, whose offset is 0 by definition,
    /// and for a host that shares no collective with the reference).
    pub evidence: usize,
}

/// Per-rank clock offsets, and how well the aligned ends agree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClockAlignment {
    /// Per rank position: how far its clock is ahead of the reference
    /// rank's, in ns. A time `t` on the rank's clock is `t - offset` on the
    /// reference clock. Ranks of one host have the same offset.
    pub offsets_ns: Vec<i64>,
    /// Rank position of the reference (offset 0): the first position.
    pub reference: u32,
    /// Rank positions that share no matched collective, directly or
    /// through other ranks (or ranks of their host), with the reference:
    /// their offset is 0 and their times are trusted as recorded.
    pub unaligned: Vec<u32>,
    /// Per matched set: the latest minus the earliest measured end over its
    /// members, on aligned clocks (0 for a point-to-point pair).
    pub end_spread_ns: Vec<i64>,
    /// The same before alignment, on the ranks' own clocks.
    pub raw_end_spread_ns: Vec<i64>,
    /// One per host some rank's trace names, in the order of its first
    /// rank; empty when no trace names its host (each rank then has an
    /// offset of its own).
    pub hosts: Vec<HostClock>,
    /// Per rank position: the median, over the collectives it shares with
    /// other ranks, of its aligned end minus the median aligned end of the
    /// other members (0 without any): how far its own clock sits from where
    /// its offset puts it.
    pub residual_ns: Vec<i64>,
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
/// collectives, one per host where the traces name their hosts (see the
/// module documentation).
///
/// Works in rounds: in each, every clock domain (host, or rank of unknown
/// host) not yet aligned whose ranks share collectives with aligned ranks
/// gets the median, over those collectives and its ranks, of (the rank's
/// end - the median aligned end of the aligned members). A job whose
/// collectives all span every rank is aligned in one round, each domain
/// against the reference's.
pub fn align_clocks(ranks: &[RankGraph], m: &CollectiveMatch) -> ClockAlignment {
    let refs: Vec<&RankGraph> = ranks.iter().collect();
    align_refs(&refs, m)
}

/// [`align_clocks`] over borrowed ranks (a subset of a job's, while
/// deciding which ranks belong).
pub(super) fn align_refs(ranks: &[&RankGraph], m: &CollectiveMatch) -> ClockAlignment {
    let n = ranks.len();
    let ends = collective_ends(ranks, m);
    let domains = Domains::of(ranks);
    let (by_domain, evidence) = domain_offsets(&ends, &domains);
    let unaligned = (0..n)
        .filter(|&p| by_domain[domains.of_rank[p]].is_none())
        .map(|p| p as u32)
        .collect();
    let offsets_ns: Vec<i64> = (0..n)
        .map(|p| by_domain[domains.of_rank[p]].unwrap_or(0))
        .collect();
    let hosts = domains
        .hosts
        .iter()
        .map(|(host, d)| HostClock {
            host: host.to_string(),
            ranks: (0..n)
                .filter(|&p| domains.of_rank[p] == *d)
                .map(|p| p as u32)
                .collect(),
            offset_ns: by_domain[*d].unwrap_or(0),
            evidence: evidence[*d],
        })
        .collect();
    ClockAlignment {
        end_spread_ns: spread(&ends, Some(&offsets_ns)),
        raw_end_spread_ns: spread(&ends, None),
        residual_ns: residuals(&ends, &offsets_ns, n),
        offsets_ns,
        reference: 0,
        unaligned,
        hosts,
    }
}

/// Per matched set, each member's position and absolute measured end on
/// its own clock; empty for point-to-point pairs.
fn collective_ends(ranks: &[&RankGraph], m: &CollectiveMatch) -> Vec<Vec<(usize, i64)>> {
    m.sets
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
        .collect()
}

/// The clock domains of a job's ranks: one per named host, one per rank of
/// unknown host, numbered in the order of their first rank (so the
/// reference rank, position 0, is in domain 0).
struct Domains<'a> {
    /// Per rank position, its domain.
    of_rank: Vec<usize>,
    /// Named hosts and their domains, in domain order.
    hosts: Vec<(&'a str, usize)>,
    /// How many domains.
    count: usize,
}

impl<'a> Domains<'a> {
    fn of(ranks: &[&'a RankGraph]) -> Domains<'a> {
        let mut named: FxHashMap<&str, usize> = FxHashMap::default();
        let mut hosts = Vec::new();
        let mut count = 0;
        let of_rank = ranks
            .iter()
            .map(|r| {
                let fresh = |count: &mut usize| {
                    *count += 1;
                    *count - 1
                };
                match r.host.as_deref() {
                    Some(h) => *named.entry(h).or_insert_with(|| {
                        let d = fresh(&mut count);
                        hosts.push((h, d));
                        d
                    }),
                    None => fresh(&mut count),
                }
            })
            .collect();
        Domains {
            of_rank,
            hosts,
            count,
        }
    }
}

/// Each domain's offset (`None`: shares no collective with the reference's
/// domain) and how many ends it is the median of, solved in rounds from
/// domain 0 (offset 0).
fn domain_offsets(
    ends: &[Vec<(usize, i64)>],
    domains: &Domains<'_>,
) -> (Vec<Option<i64>>, Vec<usize>) {
    let d = &domains.of_rank;
    let mut offsets: Vec<Option<i64>> = vec![None; domains.count];
    let mut evidence = vec![0usize; domains.count];
    if let Some(first) = offsets.first_mut() {
        *first = Some(0);
    }
    loop {
        let mut diffs: Vec<Vec<i64>> = vec![Vec::new(); domains.count];
        for set in ends {
            let aligned: Vec<i64> = set
                .iter()
                .filter_map(|&(p, e)| offsets[d[p]].map(|o| e.saturating_sub(o)))
                .collect();
            if aligned.is_empty() {
                continue;
            }
            let reference_end = median(aligned);
            for &(p, e) in set {
                if offsets[d[p]].is_none() {
                    diffs[d[p]].push(e.saturating_sub(reference_end));
                }
            }
        }
        let mut progressed = false;
        for (k, v) in diffs.into_iter().enumerate() {
            if !v.is_empty() {
                evidence[k] = v.len();
                offsets[k] = Some(median(v));
                progressed = true;
            }
        }
        if !progressed {
            return (offsets, evidence);
        }
    }
}

/// Per matched set, the latest minus the earliest end, on the clocks
/// shifted by `offsets` (as recorded without).
fn spread(ends: &[Vec<(usize, i64)>], offsets: Option<&[i64]>) -> Vec<i64> {
    ends.iter()
        .map(|set| {
            let v = set.iter().map(|&(p, e)| match offsets {
                Some(o) => e.saturating_sub(o[p]),
                None => e,
            });
            let (lo, hi) = v.fold((i64::MAX, i64::MIN), |(lo, hi), e| (lo.min(e), hi.max(e)));
            if set.is_empty() {
                0
            } else {
                hi.saturating_sub(lo)
            }
        })
        .collect()
}

/// [`ClockAlignment::residual_ns`] of each of `n` ranks.
fn residuals(ends: &[Vec<(usize, i64)>], offsets: &[i64], n: usize) -> Vec<i64> {
    let mut per_rank: Vec<Vec<i64>> = vec![Vec::new(); n];
    for set in ends.iter().filter(|s| s.len() > 1) {
        // Sorted once, each member's "median of the others" is read off by
        // index: sets span up to every rank of a job.
        let mut aligned: Vec<(i64, usize)> = set
            .iter()
            .map(|&(p, e)| (e.saturating_sub(offsets[p]), p))
            .collect();
        aligned.sort_unstable();
        let sorted: Vec<i64> = aligned.iter().map(|&(e, _)| e).collect();
        for (i, &(e, p)) in aligned.iter().enumerate() {
            per_rank[p].push(e.saturating_sub(median_without(&sorted, i)));
        }
    }
    per_rank
        .into_iter()
        .map(|v| if v.is_empty() { 0 } else { median(v) })
        .collect()
}

/// The median (as [`median`] takes it) of `sorted` (at least two values)
/// without its value at `skip`.
fn median_without(sorted: &[i64], skip: usize) -> i64 {
    let at = |j: usize| if j < skip { sorted[j] } else { sorted[j + 1] };
    let m = sorted.len() - 1;
    if m % 2 == 1 {
        at(m / 2)
    } else {
        ((at(m / 2 - 1) as i128 + at(m / 2) as i128).div_euclid(2)) as i64
    }
}
