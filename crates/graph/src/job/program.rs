//! Ranks that run the same communication program, and one representative
//! per group: in a Megatron job, every rank of a pipeline stage runs the
//! same program whatever its tensor- or data-parallel index, so a large job
//! can be replayed from one rank per stage.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::{CommPattern, RankGraph};

/// A digest of what a rank's communication program looks like,
/// independent of which rank runs it (see [`program_signature`]). Equal
/// signatures mean interchangeable ranks; the value itself means nothing
/// and may differ between builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProgramSignature(u64);

/// The signature of a rank's communication program: its number of steps
/// and, per communication task in issue order, the collective's name and
/// size, its group's size, and for point-to-point the direction and the
/// peer's offset from the rank. Ranks with the same signature run the same
/// program and are interchangeable up to timing noise.
pub fn program_signature(r: &RankGraph) -> ProgramSignature {
    let mut h = DefaultHasher::new();
    r.graph.steps.len().hash(&mut h);
    for c in &r.comms {
        let coll = &r.graph.collectives[c.collective as usize];
        coll.name.hash(&mut h);
        coll.bytes.hash(&mut h);
        c.group
            .and_then(|g| r.groups.get(g as usize))
            .map(Vec::len)
            .hash(&mut h);
        match c.pattern {
            CommPattern::Group => 0i64.hash(&mut h),
            CommPattern::Send { peer } => (1i64, peer - i64::from(r.rank)).hash(&mut h),
            CommPattern::Recv { peer } => (2i64, peer - i64::from(r.rank)).hash(&mut h),
        }
    }
    ProgramSignature(h.finish())
}

/// Ranks that run one communication program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankGroup {
    /// Their common signature.
    pub signature: ProgramSignature,
    /// The ranks, ascending; never empty.
    pub ranks: Vec<u32>,
}

impl RankGroup {
    /// The rank that stands for the group: its lowest.
    pub fn representative(&self) -> u32 {
        self.ranks[0]
    }
}

/// Groups ranks by signature (each rank with its [`program_signature`]),
/// ordered by representative.
pub fn group_by_program(
    ranks: impl IntoIterator<Item = (u32, ProgramSignature)>,
) -> Vec<RankGroup> {
    let mut by_signature: BTreeMap<ProgramSignature, Vec<u32>> = BTreeMap::new();
    for (rank, sig) in ranks {
        by_signature.entry(sig).or_default().push(rank);
    }
    let mut groups: Vec<RankGroup> = by_signature
        .into_iter()
        .map(|(signature, mut ranks)| {
            ranks.sort_unstable();
            RankGroup { signature, ranks }
        })
        .collect();
    groups.sort_by_key(RankGroup::representative);
    groups
}
