//! Which files are ranks of the job: a folder of traces can hold one that
//! is not, a rank of another run of the same world size, whose collectives
//! would otherwise poison the matching of every other rank (order-based
//! matching expects every rank of the job) and whose steps would become the
//! job's. Each test names the rank in a warning; a rank that cannot belong
//! is left out ([`LeftOut`]) and the job is assembled from the others.
//!
//! - **World size.** The job's is the one most files record (ties: the
//!   largest). A rank recording another is named; it is left out only when
//!   its rank number does not fit the job's world size.
//! - **Collectives.** A rank in no matched set whose absence lets other
//!   ranks match among themselves, or their collectives disagree less, is
//!   left out ([`foreign_ranks`]). Every
//!   rank of a training job communicates with the others, so a rank that
//!   shares nothing with them, while they share collectives, is from
//!   another job (or lost its communication altogether); in neither case
//!   can it take part in a joint replay.
//! - **Clocks.** Ranks whose clock offsets, after alignment, lie more than
//!   [`FAR_CLOCK_NS`] (one hour) away from those of the job's ranks are
//!   left out ([`far_clocks`]): the hosts of one job keep their clocks
//!   within milliseconds of each other (NTP; Kineto records wall-clock
//!   time) and profile the same window of a few seconds, so an hour
//!   apart is another run of the same program, whose collectives match by
//!   order but did not happen together. The offsets are split into runs
//!   where two neighbours lie more than an hour apart, so that the ranks
//!   of one run, microseconds apart, go together even when the runs are
//!   about an hour apart. Closer than an hour nothing is left out (a job
//!   on hosts without a synchronized clock would lose ranks), but clocks
//!   more than [`CLOCKS_AGREE_NS`] apart are named in a warning
//!   ([`clock_spread_warning`]).
//! - **Process groups.** A rank that records a process group without
//!   itself in it, or with other members than its members present record,
//!   is named ([`group_disagreements`]); it stays unless its collectives
//!   leave it out.
//!
//! Left out means a minority: a test that would leave out half the ranks or
//! more cannot tell which side is the job, and only warns. Ranks are
//! counted with their weights: a rank that represents a group of ranks
//! running its communication program (`lumos replay --representatives`)
//! counts as the group's size, so that the representatives leave out what
//! the assembly of every rank would (one foreign rank against one group of
//! seven is one against seven, not one against one).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

use super::matching::{match_refs, CollectiveMatch};
use super::{program_signature, rank_ranges, RankGraph};

/// An offset between two ranks' clocks (after alignment) beyond which
/// they are not one job's: one hour (see the module documentation).
pub const FAR_CLOCK_NS: i64 = 3_600_000_000_000;

/// How far apart the aligned clocks of one job's ranks may lie before a
/// warning names them: one minute. NTP keeps hosts within milliseconds;
/// a minute apart is more likely two runs of the same program given as
/// one job (their collectives matched by order) than one job's hosts.
pub const CLOCKS_AGREE_NS: i64 = 60_000_000_000;

/// Most ranks (or groups of ranks with the same communication program)
/// tried per round when looking for ranks to leave out: each try matches
/// the job once more, so a large job whose every rank is unmatched is
/// searched in bounded time (the rarest programs are tried first).
const MAX_TRIES: usize = 64;

/// A file given as a rank of the job that was left out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The rank it records.
    pub rank: u32,
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: LeftOutReason,
}

/// Why a rank was left out of its job.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeftOutReason {
    /// It shares no matched collective with the other ranks, which match
    /// among themselves without it.
    NoSharedCollective {
        /// How many ranks the job kept.
        others: usize,
    },
    /// Its rank is not below the world size most files record (and it
    /// records another one, or none).
    OutsideWorld {
        /// The job's world size.
        world_size: u32,
        /// The one the file records.
        recorded: Option<u32>,
    },
    /// It holds no CPU or GPU task (no events, or none of a kind lumos
    /// models), so it shares no collective either.
    NoTasks,
    /// Its clock is more than [`FAR_CLOCK_NS`] away from the others'.
    FarClock {
        /// Its offset from the median of the others, ns.
        offset_ns: i64,
    },
}

impl LeftOut {
    /// A few words on why, for the list of missing ranks.
    pub fn short_reason(&self) -> &'static str {
        match self.reason {
            LeftOutReason::NoSharedCollective { .. } => "left out (shares no collective)",
            LeftOutReason::OutsideWorld { .. } => "left out (outside the world size)",
            LeftOutReason::NoTasks => "left out (no task)",
            LeftOutReason::FarClock { .. } => "left out (clock far off)",
        }
    }

    /// The reason's stable name, for JSON.
    pub fn reason_name(&self) -> &'static str {
        match self.reason {
            LeftOutReason::NoSharedCollective { .. } => "no_shared_collective",
            LeftOutReason::OutsideWorld { .. } => "outside_world",
            LeftOutReason::NoTasks => "no_tasks",
            LeftOutReason::FarClock { .. } => "far_clock",
        }
    }
}

/// A duration in the largest unit that keeps it readable: `3.0 days`,
/// `2.5 h`.
pub(super) fn long_duration(ns: i64) -> String {
    let s = ns.unsigned_abs() as f64 / 1e9;
    let h = s / 3600.0;
    if h >= 48.0 {
        format!("{:.1} days", h / 24.0)
    } else if h >= 1.0 {
        format!("{h:.1} h")
    } else if s >= 60.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.1} s")
    }
}

impl fmt::Display for LeftOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (rank, path) = (self.rank, self.path.display());
        match self.reason {
            LeftOutReason::NoSharedCollective { others } => write!(
                f,
                "rank {rank} ({path}) shares no collective with the other {others} ranks, which \
                 match among themselves; left out: is it from another run, or was its \
                 recording cut short?"
            ),
            LeftOutReason::NoTasks => write!(
                f,
                "rank {rank} ({path}) holds no CPU or GPU task (`lumos inspect` counts the \
                 events skipped); left out"
            ),
            LeftOutReason::OutsideWorld {
                world_size,
                recorded,
            } => write!(
                f,
                "rank {rank} ({path}) cannot be a rank of this job of {world_size} (it records \
                 {}); left out: is it from another run?",
                recorded.map_or("no world size".into(), |w| format!("world size {w}"))
            ),
            LeftOutReason::FarClock { offset_ns } => write!(
                f,
                "rank {rank} ({path}): its collectives end {} {} the other ranks' (the hosts of \
                 one job agree on the time within seconds); left out: is it from another run?",
                long_duration(offset_ns),
                if offset_ns > 0 { "after" } else { "before" }
            ),
        }
    }
}

/// Positions in `m` (over `n` ranks) that are in no matched set.
fn unmatched_ranks(m: &CollectiveMatch, n: usize) -> Vec<usize> {
    let mut in_set = vec![false; n];
    for s in &m.sets {
        for mb in &s.members {
            in_set[mb.rank_pos as usize] = true;
        }
    }
    (0..n).filter(|&p| !in_set[p]).collect()
}

/// The positions of ranks that share no collective with the others while
/// the others share collectives without them (see the module
/// documentation), ascending; `weights` gives how many ranks each one
/// counts as (see the module documentation), position by position. Matching is repeated without each candidate:
/// ranks in no matched set, the rarest communication programs first, then
/// each group of ranks running one rare program together (two ranks of one
/// other run). A rank is left out when the others then have fewer
/// unmatched ranks among them, or as many but fewer communication tasks in
/// a disagreement ([`MatchProblem`](super::MatchProblem)): a stray rank in
/// a job matched by process group and `Seq` spoils only the collectives of
/// its own groups, whose other members stay in other sets, so only the
/// disagreements tell that it is in their way (a rank whose peers are all
/// absent disagrees with nobody and stays). The search repeats while that
/// helps and the ranks left out stay a minority. Unmatched ranks are
/// counted with their weights.
pub fn foreign_ranks(ranks: &[&RankGraph], weights: &[usize]) -> Vec<usize> {
    /// The best candidate so far: its positions, the ranks in no matched
    /// set without it, and its score (those unmatched counting the
    /// candidate's own ranks, then the tasks in a disagreement).
    struct Try {
        cand: Vec<usize>,
        after: Vec<usize>,
        score: (usize, usize),
    }
    let n: usize = weights.iter().sum();
    let weight = |ps: &[usize]| -> usize { ps.iter().map(|&p| weights[p]).sum() };
    let mut kept: Vec<usize> = (0..ranks.len()).collect();
    // Per set of ranks kept: the positions in no matched set, and the
    // communication tasks in a disagreement.
    let outcome = |kept: &[usize]| -> (Vec<usize>, usize) {
        let sub: Vec<&RankGraph> = kept.iter().map(|&p| ranks[p]).collect();
        let m = match_refs(&sub);
        let unmatched = unmatched_ranks(&m, sub.len())
            .into_iter()
            .map(|i| kept[i])
            .collect();
        (
            unmatched,
            m.problems.iter().map(|p| p.unmatched_tasks).sum(),
        )
    };
    let (mut unmatched, mut disagreeing) = outcome(&kept);
    let mut out: Vec<usize> = Vec::new();
    while !unmatched.is_empty() {
        let mut best: Option<Try> = None;
        for cand in candidates(ranks, weights, &unmatched) {
            if (weight(&out) + weight(&cand)) * 2 >= n {
                continue;
            }
            let rest: Vec<usize> = kept.iter().copied().filter(|p| !cand.contains(p)).collect();
            let (after, tasks) = outcome(&rest);
            let score = (weight(&after) + weight(&cand), tasks);
            // Leaving the candidate out must help the other ranks match,
            // and more than the best candidate so far.
            let bound = best
                .as_ref()
                .map_or((weight(&unmatched), disagreeing), |b| b.score);
            if score < bound {
                let done = after.is_empty();
                best = Some(Try { cand, after, score });
                if done {
                    break;
                }
            }
        }
        let Some(Try { cand, after, score }) = best else {
            break;
        };
        kept.retain(|p| !cand.contains(p));
        out.extend(cand);
        unmatched = after;
        disagreeing = score.1;
    }
    out.sort_unstable();
    out
}

/// What to try leaving out: each unmatched rank alone, the rarest
/// communication program first (ranks counted with their `weights`), then
/// each program shared by several unmatched ranks, as a group; at most
/// [`MAX_TRIES`].
fn candidates(ranks: &[&RankGraph], weights: &[usize], unmatched: &[usize]) -> Vec<Vec<usize>> {
    let mut by_program: BTreeMap<_, Vec<usize>> = BTreeMap::new();
    for (p, r) in ranks.iter().enumerate() {
        by_program.entry(program_signature(r)).or_default().push(p);
    }
    let rarity = |p: usize| -> usize {
        by_program[&program_signature(ranks[p])]
            .iter()
            .map(|&q| weights[q])
            .sum()
    };
    let mut singles: Vec<usize> = unmatched.to_vec();
    singles.sort_by_key(|&p| (rarity(p), p));
    let mut out: Vec<Vec<usize>> = singles.into_iter().map(|p| vec![p]).collect();
    let mut groups: Vec<Vec<usize>> = by_program
        .into_values()
        .filter(|g| g.len() > 1 && g.iter().all(|p| unmatched.contains(p)))
        .collect();
    groups.sort_by_key(|g| (g.len(), g[0]));
    out.extend(groups);
    out.truncate(MAX_TRIES);
    out
}

/// Positions whose clock offset lies more than [`FAR_CLOCK_NS`] from the
/// job's ranks, with their distance from the median offset of the job's
/// ranks. The aligned offsets (`unaligned` ranks, whose clocks are taken as
/// recorded, take no part) are split into runs where two neighbours lie
/// more than [`FAR_CLOCK_NS`] apart; the heaviest run is the job. Empty
/// when there is one run, or when the heaviest holds half the aligned
/// ranks or fewer (then nobody can tell which side is the job:
/// [`clock_spread_warning`] says so). Each position counts as its
/// `weights` ranks, in the median as in the runs.
pub fn far_clocks(offsets_ns: &[i64], unaligned: &[u32], weights: &[usize]) -> Vec<(usize, i64)> {
    let runs = clock_runs(offsets_ns, unaligned, FAR_CLOCK_NS);
    if runs.len() < 2 {
        return Vec::new();
    }
    let weight = |run: &[usize]| run.iter().map(|&p| weights[p]).sum::<usize>();
    let total: usize = runs.iter().map(|r| weight(r)).sum();
    let Some(job) = runs.iter().max_by_key(|r| weight(r)) else {
        return Vec::new();
    };
    if weight(job) * 2 <= total {
        return Vec::new();
    }
    // The upper median of the job's offsets, each repeated as often as it
    // weighs (a run is in the order of its offsets).
    let mut below = 0;
    let Some(median) = job.iter().find_map(|&p| {
        below += weights[p];
        (below > weight(job) / 2).then_some(offsets_ns[p])
    }) else {
        return Vec::new();
    };
    let mut far: Vec<(usize, i64)> = (runs.iter())
        .filter(|r| !std::ptr::eq(*r, job))
        .flatten()
        .map(|&p| (p, offsets_ns[p].saturating_sub(median)))
        .collect();
    far.sort_unstable();
    far
}

/// The aligned positions in order of their clock offsets, split where two
/// neighbours lie more than `gap_ns` apart.
fn clock_runs(offsets_ns: &[i64], unaligned: &[u32], gap_ns: i64) -> Vec<Vec<usize>> {
    let mut aligned: Vec<usize> = (0..offsets_ns.len())
        .filter(|&p| !unaligned.contains(&(p as u32)))
        .collect();
    aligned.sort_by_key(|&p| (offsets_ns[p], p));
    let mut runs: Vec<Vec<usize>> = Vec::new();
    let mut last: Option<i64> = None;
    for p in aligned {
        let o = offsets_ns[p];
        match (last, runs.last_mut()) {
            (Some(l), Some(run)) if o.saturating_sub(l) <= gap_ns => run.push(p),
            _ => runs.push(vec![p]),
        }
        last = Some(o);
    }
    runs
}

/// A warning when aligned clocks lie more than [`CLOCKS_AGREE_NS`] apart
/// (the caller gives the ranks kept, without those [`far_clocks`] left
/// out): two runs less than an hour apart, or two ranks or two halves of
/// runs farther apart. It names the ranks on each side of the widest gap
/// between neighbouring offsets.
pub fn clock_spread_warning(
    offsets_ns: &[i64],
    unaligned: &[u32],
    ranks: &[u32],
) -> Option<String> {
    let runs = clock_runs(offsets_ns, unaligned, CLOCKS_AGREE_NS);
    if runs.len() < 2 {
        return None;
    }
    let order: Vec<usize> = runs.concat();
    let lo = offsets_ns[*order.first()?];
    let hi = offsets_ns[*order.last()?];
    // The widest gap splits the sides: the ranks of one run differ by
    // microseconds, so naming only those at the very extremes would leave
    // out the rest of their run.
    let cut = (1..order.len())
        .max_by_key(|&k| offsets_ns[order[k]].saturating_sub(offsets_ns[order[k - 1]]))?;
    let side = |ps: &[usize]| -> Vec<u32> {
        let mut r: Vec<u32> = ps.iter().map(|&p| ranks[p]).collect();
        r.sort_unstable();
        r
    };
    let (low, high) = (side(&order[..cut]), side(&order[cut..]));
    Some(format!(
        "the clocks of rank {} and rank {} are {} apart after aligning their collectives (the \
         hosts of one job agree on the time within seconds): are these traces of different \
         runs? Their collectives were matched by order as one job's",
        rank_ranges(&low),
        rank_ranges(&high),
        long_duration(hi.saturating_sub(lo))
    ))
}

/// Warnings naming ranks whose process groups disagree with their peers':
/// a group recorded without the rank itself, or with other members than
/// most of its members present (at least two) record for the same group
/// name. With `representatives` the ranks are one per group of ranks that
/// run the same program (`lumos replay --representatives`), whose other
/// members' records are not read: the count says it counts
/// representatives, not the job's ranks.
pub fn group_disagreements(ranks: &[&RankGraph], representatives: bool) -> Vec<String> {
    // Per group name, per rank number: the member lists it records.
    let mut lists: BTreeMap<&str, BTreeMap<u32, BTreeSet<&[i64]>>> = BTreeMap::new();
    for r in ranks {
        for c in &r.comms {
            let coll = &r.graph.collectives[c.collective as usize];
            if let (Some(name), Some(g)) = (coll.process_group.as_deref(), c.group) {
                let members = r.groups[g as usize].as_slice();
                lists
                    .entry(name)
                    .or_default()
                    .entry(r.rank)
                    .or_default()
                    .insert(members);
            }
        }
    }
    let mut out = Vec::new();
    let mut named: BTreeSet<u32> = BTreeSet::new();
    for r in ranks {
        for (name, per_rank) in &lists {
            let Some(own) = per_rank.get(&r.rank) else {
                continue;
            };
            if named.contains(&r.rank) {
                break;
            }
            let Some(&mine) = own.iter().next() else {
                continue;
            };
            let show = |l: &[i64]| {
                let v: Vec<u32> = l.iter().filter_map(|&x| u32::try_from(x).ok()).collect();
                rank_ranges(&v)
            };
            if !mine.contains(&i64::from(r.rank)) {
                out.push(format!(
                    "rank {} ({}) records process group {name} as rank {}, which does not \
                     include it",
                    r.rank,
                    r.source,
                    show(mine)
                ));
                named.insert(r.rank);
                continue;
            }
            // What the other members present record for the same group.
            let theirs: Vec<&[i64]> = mine
                .iter()
                .filter(|&&q| q != i64::from(r.rank))
                .filter_map(|&q| per_rank.get(&u32::try_from(q).ok()?))
                .filter_map(|l| l.iter().next().copied())
                .collect();
            let mut votes: BTreeMap<&[i64], usize> = BTreeMap::new();
            for &l in &theirs {
                *votes.entry(l).or_default() += 1;
            }
            let most = votes.iter().max_by_key(|(_, &n)| n);
            if let Some((&other, &n)) =
                most.filter(|(&l, &n)| n >= 2 && n * 2 > theirs.len() && l != mine)
            {
                let who = if representatives {
                    format!(
                        "{n} of the {} representatives among its other members (only \
                         representatives' records are read) record it",
                        theirs.len()
                    )
                } else {
                    format!(
                        "{n} of its {} other members present record it",
                        theirs.len()
                    )
                };
                out.push(format!(
                    "rank {} ({}) records process group {name} as rank {}; {who} as rank {}",
                    r.rank,
                    r.source,
                    show(mine),
                    show(other)
                ));
                named.insert(r.rank);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_clocks_are_a_minority_far_from_the_median() {
        let day = 86_400_000_000_000;
        assert_eq!(
            far_clocks(&[0, 5, -3, 3 * day], &[], &[1; 4]),
            vec![(3, 3 * day)]
        );
        // The reference itself can be the one far off.
        assert_eq!(
            far_clocks(&[0, -3 * day, -3 * day + 7, -3 * day - 2], &[], &[1; 4]),
            vec![(0, 3 * day)]
        );
        // Two ranks, or two halves: nobody to leave out.
        assert!(far_clocks(&[0, 3 * day], &[], &[1; 2]).is_empty());
        assert!(far_clocks(&[0, 0, day, day], &[], &[1; 4]).is_empty());
        let w = clock_spread_warning(&[0, 3 * day], &[], &[4, 5]).unwrap();
        assert!(
            w.starts_with("the clocks of rank 4 and rank 5 are 3.0 days apart"),
            "{w}"
        );
        assert!(clock_spread_warning(&[0, 1_000], &[], &[0, 1]).is_none());
        // Two halves of two runs, each a few microseconds apart within:
        // each side names all its ranks, not only the one at the extreme.
        let h = FAR_CLOCK_NS + 2_000_000_000;
        let offsets = [0, -500, -500, -1_500, h - 1_000, h - 1_000, h, h - 2_000];
        let w = clock_spread_warning(&offsets, &[], &[0, 1, 2, 3, 4, 5, 6, 7]).unwrap();
        assert!(
            w.starts_with("the clocks of rank 0-3 and rank 4-7 are 1.0 h apart"),
            "{w}"
        );
        // Unaligned ranks take no part.
        assert!(far_clocks(&[0, 0, 0, 0], &[3], &[1; 4]).is_empty());
        assert!(far_clocks(&[], &[], &[1; 0]).is_empty());
        // A position counts as its weight: one far rank against one
        // group of three is a minority, and a far group of three against
        // one rank is the job.
        assert_eq!(far_clocks(&[0, 3 * day], &[], &[3, 1]), vec![(1, 3 * day)]);
        assert_eq!(far_clocks(&[0, 3 * day], &[], &[1, 3]), vec![(0, -3 * day)]);
        assert!(far_clocks(&[0, 3 * day], &[], &[2, 2]).is_empty());
    }

    #[test]
    fn a_run_about_an_hour_away_goes_together() {
        // Ranks 5-7 of another run, about an hour after ranks 0-4. Two of
        // them lie more than an hour from the job's median offset, one
        // less; the runs' neighbouring ranks less than an hour apart. The
        // run stays whole (the test against the median left out two of
        // its three ranks and kept the third).
        let h = FAR_CLOCK_NS;
        let offsets = [0, -500, 500, -1_500, 1_000, h - 200, h + 300, h + 100];
        assert!(far_clocks(&offsets, &[], &[1; 8]).is_empty());
        let w = clock_spread_warning(&offsets, &[], &[0, 1, 2, 3, 4, 5, 6, 7]).unwrap();
        assert!(
            w.starts_with("the clocks of rank 0-4 and rank 5-7 are 1.0 h apart"),
            "{w}"
        );
        // The neighbours just over the hour apart: the whole run left out,
        // each rank with its distance from the job's median offset.
        let offsets = [0, -500, 500, -1_500, 1_000, h + 1_200, h + 1_700, h + 1_500];
        assert_eq!(
            far_clocks(&offsets, &[], &[1; 8]),
            vec![(5, h + 1_200), (6, h + 1_700), (7, h + 1_500)]
        );
    }

    #[test]
    fn runs_minutes_apart_are_named_not_left_out() {
        let min = 60_000_000_000;
        let offsets = [0, 2_000, -1_000, 10 * min, 10 * min + 500];
        assert!(far_clocks(&offsets, &[], &[1; 5]).is_empty());
        let w = clock_spread_warning(&offsets, &[], &[0, 1, 2, 3, 4]).unwrap();
        assert!(
            w.starts_with("the clocks of rank 0-2 and rank 3, 4 are 10.0 min apart"),
            "{w}"
        );
        // Hosts a few seconds apart are one job's, without a word.
        let offsets = [0, 3_000_000_000, -2_000_000_000, 9_000_000_000];
        assert!(clock_spread_warning(&offsets, &[], &[0, 1, 2, 3]).is_none());
        assert_eq!(long_duration(90_000_000_000), "1.5 min");
        assert_eq!(long_duration(-5_000_000_000), "5.0 s");
    }

    #[test]
    fn reasons_read_as_sentences() {
        let l = LeftOut {
            rank: 3,
            path: "/t/rank3.json".into(),
            reason: LeftOutReason::FarClock {
                offset_ns: -2 * 3_600_000_000_000,
            },
        };
        assert_eq!(
            l.to_string(),
            "rank 3 (/t/rank3.json): its collectives end 2.0 h before the other ranks' (the \
             hosts of one job agree on the time within seconds); left out: is it from another \
             run?"
        );
        let l = LeftOut {
            reason: LeftOutReason::OutsideWorld {
                world_size: 8,
                recorded: Some(16),
            },
            ..l
        };
        assert!(l
            .to_string()
            .contains("this job of 8 (it records world size 16)"));
        assert_eq!(l.reason_name(), "outside_world");
    }
}
