//! Ranks that run the same communication program, and one representative
//! per group: in a Megatron job, every rank of a pipeline stage runs the
//! same program whatever its tensor- or data-parallel index, so a large job
//! can be replayed from one rank per stage.

use std::collections::BTreeMap;

use super::{CommPattern, RankGraph};

/// A digest of what a rank's communication program looks like,
/// independent of which rank runs it (see [`program_signature`]). Equal
/// signatures mean interchangeable ranks. The value is stable: the same
/// program gives the same number on every machine and build (it is a
/// 64-bit FNV-1a hash over a fixed byte encoding), so signatures computed
/// where the traces are (`lumos ingest`) can be compared where the job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProgramSignature(u64);

impl ProgramSignature {
    /// The signature as a number, to store it.
    pub fn as_u64(self) -> u64 {
        self.0
    }

    /// A signature stored with [`ProgramSignature::as_u64`].
    pub fn from_u64(v: u64) -> ProgramSignature {
        ProgramSignature(v)
    }
}

/// 64-bit FNV-1a over explicitly encoded values: unlike `std`'s hashers
/// and `Hash` impls, whose output may change between Rust versions, this
/// is fixed, which stored signatures need.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            Some(v) => {
                self.bytes(&[1]);
                self.u64(v);
            }
            None => self.bytes(&[0]),
        }
    }
    fn str(&mut self, s: &str) {
        // Length first, so that ("ab", "c") and ("a", "bc") differ.
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }
}

/// The signature of a rank's communication program: its number of steps
/// and, per communication task in issue order, the collective's name and
/// size, its group's size, and for point-to-point the direction and the
/// peer's offset from the rank. Ranks with the same signature run the same
/// program and are interchangeable up to timing noise.
pub fn program_signature(r: &RankGraph) -> ProgramSignature {
    let mut h = Fnv::new();
    h.u64(r.graph.steps.len() as u64);
    for c in &r.comms {
        let coll = &r.graph.collectives[c.collective as usize];
        h.str(&coll.name);
        h.opt_u64(coll.bytes);
        h.opt_u64(
            c.group
                .and_then(|g| r.groups.get(g as usize))
                .map(|g| g.len() as u64),
        );
        let rank = i64::from(r.rank);
        let (kind, offset) = match c.pattern {
            CommPattern::Group => (0u8, 0),
            CommPattern::Send { peer } => (1, peer.wrapping_sub(rank)),
            CommPattern::Recv { peer } => (2, peer.wrapping_sub(rank)),
        };
        h.bytes(&[kind]);
        h.u64(offset as u64);
    }
    ProgramSignature(h.0)
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
