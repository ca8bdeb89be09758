//! Matching the same collective across ranks.
//!
//! Rules, best first, chosen per communication task by what its trace
//! records:
//!
//! 1. **Process group and `Seq`**: the key `(Process Group Name, Seq)` names
//!    one collective exactly.
//! 2. **Process group, order of appearance**: the k-th collective a rank
//!    issued in a process group matches the k-th of every other member.
//! 3. **Kernel family, order of appearance** (fallback for traces with no
//!    process-group information, such as NCCL kernels found only by name):
//!    the k-th `AllReduce` kernel of a rank matches the k-th of every other
//!    rank in the job. This assumes every such collective spans all ranks in
//!    the job, which holds for data-parallel and all-to-all traffic but not
//!    for jobs with several process groups: give such traces the collective
//!    arguments (`record_shapes=True` on a recent PyTorch).
//! 4. **Point-to-point**: the k-th send from rank A to rank B matches the
//!    k-th receive on B from A (per process group).
//!
//! Nothing is paired silently when the ranks disagree: a key whose ranks
//! issued different numbers of collectives, a position whose names or sizes
//! differ, a `Seq` missing on a member of its group, or a key seen twice on
//! one rank is reported as a [`MatchProblem`], and its tasks stay unmatched
//! (they keep their measured durations in the joint replay).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::comms::{CommPattern, CommTask, RankGraph};
use super::rank_ranges;

/// Which rule matched a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatchRule {
    /// `(Process Group Name, Seq)`.
    ProcessGroupSeq,
    /// Order of appearance within a process group.
    ProcessGroupOrder,
    /// Order of appearance per kernel family, every rank taking part.
    KernelFamilyOrder,
    /// A send and its receive, by order per (group, sender, receiver).
    PointToPoint,
}

impl MatchRule {
    /// Stable snake-case name, used in reports and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchRule::ProcessGroupSeq => "process_group_seq",
            MatchRule::ProcessGroupOrder => "process_group_order",
            MatchRule::KernelFamilyOrder => "kernel_family_order",
            MatchRule::PointToPoint => "point_to_point",
        }
    }
}

/// One participant of a matched set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Member {
    /// Position of its rank in the slice given to [`match_collectives`].
    pub rank_pos: u32,
    /// Index into that rank's [`RankGraph::comms`].
    pub comm: u32,
}

/// The same collective on every rank that takes part in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchedSet {
    /// What identifies it, for reports: `pg 0 seq 12`, `pg 0 #3`,
    /// `AllReduce #2`, `send 0->1 #0`.
    pub label: String,
    /// The rule that matched it.
    pub rule: MatchRule,
    /// Collective name (or kernel family).
    pub name: String,
    /// Message size in bytes, when recorded (the largest over members).
    pub bytes: Option<u64>,
    /// Participants, ordered by rank position (for point-to-point: the
    /// sender, then the receiver); at least two.
    pub members: Vec<Member>,
}

/// What kind of disagreement between ranks a [`MatchProblem`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProblemKind {
    /// Ranks issued different numbers of collectives under one key.
    CountMismatch,
    /// A collective is missing on a rank of its group that is in the job.
    Incomplete,
    /// Collectives at the same position have different names.
    NameMismatch,
    /// Collectives at the same position have different message sizes.
    SizeMismatch,
    /// One rank recorded the same `(group, Seq)` twice.
    Duplicate,
    /// A point-to-point peer is not among the job's ranks.
    PeerMissing,
}

impl ProblemKind {
    /// Stable snake-case name, used in reports and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::CountMismatch => "count_mismatch",
            ProblemKind::Incomplete => "incomplete",
            ProblemKind::NameMismatch => "name_mismatch",
            ProblemKind::SizeMismatch => "size_mismatch",
            ProblemKind::Duplicate => "duplicate",
            ProblemKind::PeerMissing => "peer_missing",
        }
    }
}

/// A disagreement between ranks that left communication tasks unmatched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchProblem {
    /// What kind.
    pub kind: ProblemKind,
    /// The key it concerns (`AllReduce`, `pg 0 seq 12`, ...).
    pub label: String,
    /// What differs, naming ranks.
    pub detail: String,
    /// How many communication tasks it left unmatched.
    pub unmatched_tasks: usize,
}

impl fmt::Display for MatchProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}; {} communication tasks left unmatched (measured durations kept)",
            self.label, self.detail, self.unmatched_tasks
        )
    }
}

/// The result of [`match_collectives`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectiveMatch {
    /// Matched sets, in key order (by rule, then group, then position).
    pub sets: Vec<MatchedSet>,
    /// Every disagreement found; empty when all communication matched.
    pub problems: Vec<MatchProblem>,
    /// Per rank position: indices into its [`RankGraph::comms`] that are in
    /// no set.
    pub unmatched: Vec<Vec<u32>>,
}

impl CollectiveMatch {
    /// Number of communication tasks in some set.
    pub fn matched_tasks(&self) -> usize {
        self.sets.iter().map(|s| s.members.len()).sum()
    }

    /// Number of communication tasks in no set.
    pub fn unmatched_tasks(&self) -> usize {
        self.unmatched.iter().map(Vec::len).sum()
    }
}

/// What a communication task is matched by.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Seq { group: String, seq: i64 },
    GroupOrder { group: String },
    FamilyOrder { family: String },
    P2p { group: String, src: i64, dst: i64 },
}

impl Key {
    fn label(&self) -> String {
        match self {
            Key::Seq { group, seq } => format!("pg {group} seq {seq}"),
            Key::GroupOrder { group } => format!("pg {group}"),
            Key::FamilyOrder { family } => family.clone(),
            Key::P2p { group, src, dst } if group.is_empty() => format!("send {src}->{dst}"),
            Key::P2p { group, src, dst } => format!("pg {group} send {src}->{dst}"),
        }
    }
}

/// Matches communication tasks across `ranks` (one entry per rank, any
/// order). See the module documentation for the rules.
pub fn match_collectives(ranks: &[RankGraph]) -> CollectiveMatch {
    let refs: Vec<&RankGraph> = ranks.iter().collect();
    match_refs(&refs)
}

/// [`match_collectives`] over borrowed ranks, so that a subset of a job's
/// ranks can be matched without copying their graphs (the search for ranks
/// that do not belong does that).
pub(super) fn match_refs(ranks: &[&RankGraph]) -> CollectiveMatch {
    let present: BTreeSet<i64> = ranks.iter().map(|r| r.rank as i64).collect();
    let pos_of: BTreeMap<i64, u32> = ranks
        .iter()
        .enumerate()
        .map(|(p, r)| (r.rank as i64, p as u32))
        .collect();
    let mut keyed: BTreeMap<Key, Vec<Member>> = BTreeMap::new();
    for (p, r) in ranks.iter().enumerate() {
        for (ci, c) in r.comms.iter().enumerate() {
            let coll = &r.graph.collectives[c.collective as usize];
            let group = coll.process_group.clone();
            let me = r.rank as i64;
            let key = match (c.pattern, group, coll.seq) {
                (CommPattern::Send { peer }, g, _) => Key::P2p {
                    group: g.unwrap_or_default(),
                    src: me,
                    dst: peer,
                },
                (CommPattern::Recv { peer }, g, _) => Key::P2p {
                    group: g.unwrap_or_default(),
                    src: peer,
                    dst: me,
                },
                (CommPattern::Group, Some(group), Some(seq)) => Key::Seq { group, seq },
                (CommPattern::Group, Some(group), None) => Key::GroupOrder { group },
                (CommPattern::Group, None, _) => Key::FamilyOrder {
                    family: coll.name.clone(),
                },
            };
            keyed.entry(key).or_default().push(Member {
                rank_pos: p as u32,
                comm: ci as u32,
            });
        }
    }
    let mut out = CollectiveMatch::default();
    let ctx = Ctx {
        ranks,
        present: &present,
        pos_of: &pos_of,
    };
    for (key, members) in keyed {
        match &key {
            Key::Seq { .. } => ctx.by_seq(&key, members, &mut out),
            Key::GroupOrder { .. } | Key::FamilyOrder { .. } => {
                ctx.by_order(&key, members, &mut out)
            }
            Key::P2p { .. } => ctx.point_to_point(&key, members, &mut out),
        }
    }
    let mut in_set: Vec<Vec<bool>> = ranks.iter().map(|r| vec![false; r.comms.len()]).collect();
    for s in &out.sets {
        for m in &s.members {
            in_set[m.rank_pos as usize][m.comm as usize] = true;
        }
    }
    out.unmatched = in_set
        .iter()
        .map(|v| {
            v.iter()
                .enumerate()
                .filter(|(_, &b)| !b)
                .map(|(i, _)| i as u32)
                .collect()
        })
        .collect();
    out
}

struct Ctx<'a> {
    ranks: &'a [&'a RankGraph],
    present: &'a BTreeSet<i64>,
    pos_of: &'a BTreeMap<i64, u32>,
}

impl Ctx<'_> {
    fn comm(&self, m: Member) -> &CommTask {
        &self.ranks[m.rank_pos as usize].comms[m.comm as usize]
    }

    fn rank(&self, m: Member) -> u32 {
        self.ranks[m.rank_pos as usize].rank
    }

    fn name(&self, m: Member) -> &str {
        let r = &self.ranks[m.rank_pos as usize];
        &r.graph.collectives[self.comm(m).collective as usize].name
    }

    fn bytes(&self, m: Member) -> Option<u64> {
        let r = &self.ranks[m.rank_pos as usize];
        r.graph.collectives[self.comm(m).collective as usize].bytes
    }

    /// The job's ranks that should take part in a collective of `m`'s
    /// group: its recorded group ranks that are in the job, or every rank
    /// of the job when the group spans at least that many ranks; `None`
    /// when it cannot be told.
    fn expected(&self, m: Member) -> Option<BTreeSet<i64>> {
        let r = &self.ranks[m.rank_pos as usize];
        let c = self.comm(m);
        if let Some(g) = c.group {
            return Some(
                r.groups[g as usize]
                    .iter()
                    .copied()
                    .filter(|x| self.present.contains(x))
                    .collect(),
            );
        }
        let size = r.graph.collectives[c.collective as usize].group_size;
        match size {
            Some(n) if (n as usize) < self.present.len() => None,
            _ => Some(self.present.clone()),
        }
    }

    /// Names and sizes agree? Sizes are compared only where every
    /// participant moves the same amount (not all-to-all-v, whose splits
    /// differ per rank by design).
    fn disagreement(&self, members: &[Member]) -> Option<(ProblemKind, String)> {
        let names: BTreeSet<&str> = members.iter().map(|&m| self.name(m)).collect();
        if names.len() > 1 {
            let per: Vec<String> = names
                .iter()
                .map(|n| {
                    let ranks: Vec<u32> = members
                        .iter()
                        .filter(|&&m| self.name(m) == *n)
                        .map(|&m| self.rank(m))
                        .collect();
                    format!("{n} on rank {}", rank_ranges(&ranks))
                })
                .collect();
            return Some((
                ProblemKind::NameMismatch,
                format!("names differ: {}", per.join("; ")),
            ));
        }
        let name = names
            .iter()
            .next()
            .copied()
            .unwrap_or("")
            .to_ascii_lowercase();
        let uneven = name.contains("to_all") || name.contains("toall");
        if !uneven {
            let sizes: BTreeSet<u64> = members.iter().filter_map(|&m| self.bytes(m)).collect();
            if sizes.len() > 1 {
                let per: Vec<String> = sizes
                    .iter()
                    .map(|s| {
                        let ranks: Vec<u32> = members
                            .iter()
                            .filter(|&&m| self.bytes(m) == Some(*s))
                            .map(|&m| self.rank(m))
                            .collect();
                        format!("{s} B on rank {}", rank_ranges(&ranks))
                    })
                    .collect();
                return Some((
                    ProblemKind::SizeMismatch,
                    format!("sizes differ: {}", per.join("; ")),
                ));
            }
        }
        None
    }

    fn push_set(
        &self,
        label: String,
        rule: MatchRule,
        mut members: Vec<Member>,
        out: &mut CollectiveMatch,
    ) {
        if members.len() < 2 {
            // Only one participant in the job (the others' files are
            // missing): nothing to wait for.
            return;
        }
        if rule != MatchRule::PointToPoint {
            members.sort();
        }
        let name = self.name(members[0]).to_owned();
        let bytes = members.iter().filter_map(|&m| self.bytes(m)).max();
        out.sets.push(MatchedSet {
            label,
            rule,
            name,
            bytes,
            members,
        });
    }

    fn by_seq(&self, key: &Key, members: Vec<Member>, out: &mut CollectiveMatch) {
        let label = key.label();
        let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
        for m in &members {
            *seen.entry(self.rank(*m)).or_default() += 1;
        }
        let twice: Vec<u32> = seen
            .iter()
            .filter(|(_, &n)| n > 1)
            .map(|(&r, _)| r)
            .collect();
        if !twice.is_empty() {
            out.problems.push(MatchProblem {
                kind: ProblemKind::Duplicate,
                label,
                detail: format!("recorded more than once on rank {}", rank_ranges(&twice)),
                unmatched_tasks: members.len(),
            });
            return;
        }
        let have: BTreeSet<i64> = seen.keys().map(|&r| r as i64).collect();
        if let Some(expected) = self.expected(members[0]) {
            let missing: Vec<u32> = expected.difference(&have).map(|&r| r as u32).collect();
            if !missing.is_empty() {
                let on: Vec<u32> = seen.keys().copied().collect();
                out.problems.push(MatchProblem {
                    kind: ProblemKind::Incomplete,
                    label,
                    detail: format!(
                        "on rank {} but not on rank {} of its group",
                        rank_ranges(&on),
                        rank_ranges(&missing)
                    ),
                    unmatched_tasks: members.len(),
                });
                return;
            }
        }
        if let Some((kind, detail)) = self.disagreement(&members) {
            out.problems.push(MatchProblem {
                kind,
                label,
                detail,
                unmatched_tasks: members.len(),
            });
            return;
        }
        self.push_set(label, MatchRule::ProcessGroupSeq, members, out);
    }

    fn by_order(&self, key: &Key, members: Vec<Member>, out: &mut CollectiveMatch) {
        let label = key.label();
        let rule = match key {
            Key::GroupOrder { .. } => MatchRule::ProcessGroupOrder,
            _ => MatchRule::KernelFamilyOrder,
        };
        // Each rank's list, in issue order (comms are sorted by issue).
        let mut per_rank: BTreeMap<i64, Vec<Member>> = BTreeMap::new();
        for m in &members {
            per_rank.entry(self.rank(*m) as i64).or_default().push(*m);
        }
        let expected = match key {
            Key::FamilyOrder { .. } => Some(self.present.clone()),
            _ => self.expected(members[0]),
        };
        if let Some(expected) = expected {
            for r in expected {
                per_rank.entry(r).or_default();
            }
        }
        let counts: BTreeSet<usize> = per_rank.values().map(Vec::len).collect();
        if counts.len() > 1 {
            let per: Vec<String> = counts
                .iter()
                .rev()
                .map(|&n| {
                    let ranks: Vec<u32> = per_rank
                        .iter()
                        .filter(|(_, v)| v.len() == n)
                        .map(|(&r, _)| r as u32)
                        .collect();
                    format!("rank {} issued {n}", rank_ranges(&ranks))
                })
                .collect();
            out.problems.push(MatchProblem {
                kind: ProblemKind::CountMismatch,
                label: format!("{label} (order of appearance)"),
                detail: format!("ranks disagree on the count: {}", per.join("; ")),
                unmatched_tasks: members.len(),
            });
            return;
        }
        let n = counts.into_iter().next().unwrap_or(0);
        for k in 0..n {
            let set: Vec<Member> = per_rank.values().map(|v| v[k]).collect();
            let label = format!("{label} #{k}");
            if let Some((kind, detail)) = self.disagreement(&set) {
                out.problems.push(MatchProblem {
                    kind,
                    label,
                    detail,
                    unmatched_tasks: set.len(),
                });
                continue;
            }
            self.push_set(label, rule, set, out);
        }
    }

    fn point_to_point(&self, key: &Key, members: Vec<Member>, out: &mut CollectiveMatch) {
        let Key::P2p { src, dst, .. } = *key else {
            return;
        };
        let label = key.label();
        let (sends, recvs): (Vec<Member>, Vec<Member>) = members
            .iter()
            .partition(|&&m| matches!(self.comm(m).pattern, CommPattern::Send { .. }));
        let absent: Vec<u32> = [src, dst]
            .into_iter()
            .filter(|r| !self.pos_of.contains_key(r))
            .map(|r| r as u32)
            .collect();
        if !absent.is_empty() {
            out.problems.push(MatchProblem {
                kind: ProblemKind::PeerMissing,
                label,
                detail: format!("rank {} is not in the job", rank_ranges(&absent)),
                unmatched_tasks: members.len(),
            });
            return;
        }
        if sends.len() != recvs.len() {
            out.problems.push(MatchProblem {
                kind: ProblemKind::CountMismatch,
                label,
                detail: format!(
                    "rank {src} sent {} times, rank {dst} received {} times",
                    sends.len(),
                    recvs.len()
                ),
                unmatched_tasks: members.len(),
            });
            return;
        }
        for (k, (&s, &r)) in sends.iter().zip(&recvs).enumerate() {
            let label = format!("{label} #{k}");
            let (bs, br) = (self.bytes(s), self.bytes(r));
            if let (Some(a), Some(b)) = (bs, br) {
                if a != b {
                    out.problems.push(MatchProblem {
                        kind: ProblemKind::SizeMismatch,
                        label,
                        detail: format!("rank {src} sent {a} B, rank {dst} received {b} B"),
                        unmatched_tasks: 2,
                    });
                    continue;
                }
            }
            self.push_set(label, MatchRule::PointToPoint, vec![s, r], out);
        }
    }
}
