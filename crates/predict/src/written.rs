//! The predicted job as its timelines state it (`lumos predict --out`):
//! each stage's rank in the target job, that rank's process groups in the
//! target layout (Megatron's, lumos-models' [`RankLayout`], as the
//! synthesizer writes them), and for each communication task the group it
//! runs in, its sequence number in that group and, for a transfer, its
//! sender and receiver. Replayed together, the timelines must form the job
//! the prediction replayed: lumos-graph's matching of collectives across
//! ranks (by process group and `Seq`, a send with its receive by order per
//! sender and receiver) must pair exactly the tasks the prediction coupled
//! as rendezvous ([`Prediction::job`]). [`Prediction::written_job`] checks
//! that; where the stages cannot state the job so, they state none.
//!
//! The groups are those the collectives were re-timed over (the same
//! [`Regroup`] decides both), the sizes the re-timed ones, and a coupled
//! transfer's peers those the prediction paired it with.

use std::collections::{BTreeMap, BTreeSet};

use lumos_graph::{DepKind, RendezvousKind, TaskId};
use lumos_models::{GroupKind, ProcessGroup, RankLayout};
use rustc_hash::FxHashMap;

use crate::baseline::Baseline;
use crate::config::Layout;
use crate::discover::{CommInfo, P2p};
use crate::edits::Prediction;
use crate::outcome::Outcome;
use crate::retime::Regroup;

/// The predicted job as its timelines state it (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenJob {
    /// One per predicted stage, in the prediction's order.
    pub stages: Vec<WrittenStage>,
    /// False when the stages cannot state the predicted job: their
    /// collectives would pair otherwise than the prediction coupled them,
    /// or some, on a stage of several, have no group in the target job.
    /// Each timeline then states no job (no world size, process groups or
    /// collective arguments), so a reader takes each as a rank of its own.
    pub is_job: bool,
    /// What the timelines cannot say, for the user: collectives written
    /// without a process group, one line per stage and reason, and why
    /// they state no job where they do not.
    pub notes: Vec<String>,
}

/// One predicted stage as its timeline states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenStage {
    /// Its rank in the target job ([`Prediction::stage_rank`]).
    pub rank: u32,
    /// The target job's world size.
    pub world_size: u32,
    /// The process groups of its rank in the target layout, in the order
    /// PyTorch creates them ([`RankLayout::groups_of`]); empty when the
    /// stage has no place in that layout ([`Prediction::stage_coord`]).
    pub groups: Vec<ProcessGroup>,
    /// Its communication tasks placed in a group, by task. A
    /// communication task missing here is written without collective
    /// arguments (the notes say why).
    pub comms: Vec<WrittenComm>,
}

impl WrittenStage {
    /// The written collective of task `t` of the stage's graph, if any.
    pub fn comm(&self, t: TaskId) -> Option<&WrittenComm> {
        self.comms
            .binary_search_by_key(&t, |c| c.task)
            .ok()
            .map(|i| &self.comms[i])
    }
}

/// One communication task as its timeline states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenComm {
    /// The task, in the stage's graph.
    pub task: TaskId,
    /// Its process group: an index into [`WrittenStage::groups`].
    pub group: usize,
    /// Its sequence number: the collectives of its group (a transfer's:
    /// of its sender and receiver) before it on the stage, in the order
    /// the predicted replay issued them.
    pub seq: i64,
    /// Sender and receiver (global ranks) of a send or receive.
    pub peers: Option<(i64, i64)>,
    /// Message elements after the edit, when the trace recorded them.
    pub elements: Option<u64>,
    /// Message bytes after the edit, when the trace recorded them.
    pub bytes: Option<u64>,
}

/// A communication task placed in a group, before its sequence number.
struct Placed {
    task: TaskId,
    group: usize,
    peers: Option<(i64, i64)>,
    elements: Option<u64>,
    bytes: Option<u64>,
    /// When the predicted replay issued it: its launch call's start, else
    /// its own (what a reader of the timeline takes as issue order).
    issue_ns: i64,
}

// Why a communication task is written without a process group.
const UNCLASSIFIED: &str = "discovery did not classify them";
const NO_PLACE: &str = "the traced rank lies outside the layout discovery found, so the stage \
                        has no place in the predicted one";
const NO_GROUP: &str = "the trace records no process group for them, and discovery placed them \
                        in no group the layout holds";
const OTHER_GROUP: &str = "their traced process group is neither the world nor a Megatron group, \
                           so its place in the predicted layout is unknown";
const NO_DIRECTION: &str = "they are pipeline transfers whose direction the trace does not record";
const UNPAIRED: &str = "they are transfers the prediction paired with no receive or send of \
                        another stage (replayed on their own, or not issued in the target)";

impl Prediction<'_> {
    /// The predicted job as its timelines state it, for the `outcome` of
    /// this prediction (whose replay gives the order in which each stage
    /// issues its collectives, and whose coupling the timelines must
    /// reproduce). With several stages, [`WrittenJob::is_job`] is false
    /// where they cannot state it: collectives whose group in the target
    /// job cannot be told (an expert or embedding group, say, which the
    /// prediction keeps as traced; a transfer the prediction paired with
    /// nothing), or collectives the matching would pair otherwise than
    /// the prediction coupled them.
    pub fn written_job(&self, outcome: &Outcome<'_>) -> WrittenJob {
        let layout = Layout::of(&self.target.config).ranks();
        let regroup = Regroup::new(self.base, &self.target);
        let ranks: Vec<u32> = (0..self.stages.len()).map(|k| self.stage_rank(k)).collect();
        let paired = paired_transfers(outcome, &ranks);
        let mut stages = Vec::with_capacity(self.stages.len());
        let at = Place {
            layout: &layout,
            regroup: &regroup,
            paired: outcome.job.coupled.then_some(&paired),
        };
        let mut unplaced: BTreeMap<(usize, &'static str), BTreeMap<String, usize>> =
            BTreeMap::new();
        for k in 0..self.stages.len() {
            let (stage, missed) = self.written_stage(k, outcome, at);
            for (why, name) in missed {
                *unplaced
                    .entry((k, why))
                    .or_default()
                    .entry(name)
                    .or_default() += 1;
            }
            stages.push(stage);
        }
        let mut notes: Vec<String> = unplaced
            .iter()
            .map(|(&(k, why), names)| {
                let listed: Vec<String> = names.iter().map(|(n, c)| format!("{c} {n}")).collect();
                format!(
                    "stage {k} (rank {}): {} written without a process group: {why}",
                    stages[k].rank,
                    listed.join(", ")
                )
            })
            .collect();
        let several = self.stages.len() > 1;
        let why_not = if !several {
            None
        } else if !notes.is_empty() {
            Some(
                "replayed together, they would pair the collectives written without a \
                 process group across stages by kernel name, which the prediction did not"
                    .to_owned(),
            )
        } else {
            check_pairs(&stages, outcome).err()
        };
        if let Some(why) = &why_not {
            notes.push(format!(
                "the timelines state no job ({why}): each is written as a rank of its own, \
                 without world size, process groups or collective arguments, so `lumos \
                 replay` takes them one by one"
            ));
        }
        WrittenJob {
            stages,
            is_job: why_not.is_none(),
            notes,
        }
    }

    /// Stage `k` as its timeline states it, and the communication tasks
    /// left without a group: why, and the collective's name.
    fn written_stage(
        &self,
        k: usize,
        outcome: &Outcome<'_>,
        at: Place<'_>,
    ) -> (WrittenStage, Vec<(&'static str, String)>) {
        let base = self.base;
        let st = &self.stages[k];
        let rank = self.stage_rank(k);
        let placed_in_layout = self.stage_coord(k).is_some();
        let groups = if placed_in_layout {
            at.layout.groups_of(rank as usize)
        } else {
            Vec::new()
        };
        let group_of = |kind: GroupKind| groups.iter().position(|g| g.kind == kind);
        let g = &*st.graph;
        let mut launcher: FxHashMap<TaskId, TaskId> = FxHashMap::default();
        for e in &g.edges {
            if e.kind == DepKind::Launch {
                launcher.insert(e.to, e.from);
            }
        }
        let part_start = outcome.job.parts[k].start;
        let issue_ns = |t: TaskId| {
            let issued_by = launcher.get(&t).copied().unwrap_or(t);
            outcome.schedule.start_ns[(part_start + issued_by.0) as usize]
        };
        let me = i64::from(rank);
        let mut placed = Vec::new();
        let mut missed = Vec::new();
        for (i, task) in g.tasks.iter().enumerate() {
            let Some(ci) = task.collective else { continue };
            let coll = &g.collectives[ci as usize];
            let t = TaskId(i as u32);
            let (src, tt) = st.origin[i];
            let s = &base.structures[src as usize];
            let Some(c) = s.comm(tt) else {
                missed.push((UNCLASSIFIED, coll.name.clone()));
                continue;
            };
            if !placed_in_layout {
                missed.push((NO_PLACE, coll.name.clone()));
                continue;
            }
            let kind = match c.class.kind() {
                Some(kind) => kind,
                None if spans_traced_world(base, src as usize, c, coll.group_size) => {
                    GroupKind::World
                }
                None if c.group.is_none() && c.ranks.is_empty() => {
                    missed.push((NO_GROUP, coll.name.clone()));
                    continue;
                }
                None => {
                    missed.push((OTHER_GROUP, coll.name.clone()));
                    continue;
                }
            };
            let Some(group) = group_of(kind) else {
                continue;
            };
            let (_, new_ranks, ratio) = at.regroup.comm_groups(
                c,
                src as usize,
                (st.primary, st.stage),
                st.tag[i],
                s.role_of_task(tt),
            );
            let transfer = kind == GroupKind::PipelineParallel;
            let peers = match (at.paired, transfer, c.p2p) {
                (_, false, _) => None,
                (_, true, None) => {
                    missed.push((NO_DIRECTION, coll.name.clone()));
                    continue;
                }
                // Coupled stages: the stages the prediction paired it with.
                (Some(paired), true, Some(_)) => match paired.get(&(part_start + t.0)) {
                    Some(&pair) => Some(pair),
                    None => {
                        missed.push((UNPAIRED, coll.name.clone()));
                        continue;
                    }
                },
                // Stages replayed alone: the neighbours it was re-timed
                // over; a transfer the target does not issue (no
                // neighbour) runs in the pipeline group alone.
                (None, true, Some(dir)) => new_ranks.get(1).map(|&peer| match dir {
                    P2p::Send => (me, peer),
                    P2p::Recv => (peer, me),
                }),
            };
            let scale = |v: u64| (v as f64 * ratio).round() as u64;
            placed.push(Placed {
                task: t,
                group,
                peers,
                elements: c.elements.map(scale),
                bytes: c.bytes.map(scale),
                issue_ns: issue_ns(t),
            });
        }
        let comms = numbered(placed);
        let stage = WrittenStage {
            rank,
            world_size: self.world_size(),
            groups,
            comms,
        };
        (stage, missed)
    }
}

/// What placing a stage's collectives reads besides the stage.
#[derive(Clone, Copy)]
struct Place<'a> {
    layout: &'a RankLayout,
    regroup: &'a Regroup<'a>,
    /// For coupled stages: each coupled transfer's sender and receiver
    /// ([`paired_transfers`]).
    paired: Option<&'a FxHashMap<u32, (i64, i64)>>,
}

/// Each send and receive the prediction coupled, by its task in the job:
/// the sender's and the receiver's rank (`ranks`, per stage).
fn paired_transfers(outcome: &Outcome<'_>, ranks: &[u32]) -> FxHashMap<u32, (i64, i64)> {
    let job = &outcome.job;
    let stage_of = |t: TaskId| job.parts.iter().position(|p| p.contains(&t.0));
    let mut out = FxHashMap::default();
    for r in &job.rendezvous {
        let (RendezvousKind::PointToPoint, [send, recv]) = (r.kind, &r.tasks[..]) else {
            continue;
        };
        let (Some(a), Some(b)) = (stage_of(*send), stage_of(*recv)) else {
            continue;
        };
        let pair = (i64::from(ranks[a]), i64::from(ranks[b]));
        out.insert(send.0, pair);
        out.insert(recv.0, pair);
    }
    out
}

/// Whether collective `c` of input `src` (of `group_size` ranks, if
/// recorded) ran over every traced rank: the default group by its
/// description, or a group as large as the traced world.
fn spans_traced_world(base: &Baseline, src: usize, c: &CommInfo, group_size: Option<u32>) -> bool {
    let ctx = &base.inputs[src].ctx;
    let world = ctx
        .world_size
        .map(i64::from)
        .unwrap_or_else(|| Layout::of(&base.config).world_size());
    let desc = c
        .group
        .as_deref()
        .and_then(|n| ctx.group(n))
        .and_then(|g| g.desc.as_deref());
    desc == Some("default_pg")
        || (!c.ranks.is_empty() && c.ranks.len() as i64 == world)
        || group_size.is_some_and(|n| i64::from(n) == world && world > 1)
}

/// Sequence numbers: per group (a transfer: per sender and receiver), in
/// issue order, from 0, as PyTorch counts a group's collectives.
fn numbered(mut placed: Vec<Placed>) -> Vec<WrittenComm> {
    placed.sort_by_key(|p| (p.issue_ns, p.task));
    let mut next: FxHashMap<(usize, Option<(i64, i64)>), i64> = FxHashMap::default();
    let mut out: Vec<WrittenComm> = placed
        .into_iter()
        .map(|p| {
            let n = next.entry((p.group, p.peers)).or_default();
            let seq = *n;
            *n += 1;
            WrittenComm {
                task: p.task,
                group: p.group,
                seq,
                peers: p.peers,
                elements: p.elements,
                bytes: p.bytes,
            }
        })
        .collect();
    out.sort_by_key(|c| c.task);
    out
}

/// Checks that matching the written collectives across the stages, as
/// lumos-graph's matching does (a group collective by group and `Seq`
/// among the stages in its group; the k-th send from a rank to another
/// with the k-th receive there from it, in issue order), leaves no
/// collective without its partners and, where the prediction coupled its
/// stages, pairs exactly the tasks its job couples as rendezvous. The
/// error says what differs.
fn check_pairs(stages: &[WrittenStage], outcome: &Outcome<'_>) -> Result<(), String> {
    let job = &outcome.job;
    let id = |k: usize, t: TaskId| job.parts[k].start + t.0;
    let issue = |k: usize, t: TaskId| outcome.schedule.start_ns[id(k, t) as usize];
    let stage_of: BTreeMap<i64, usize> = (stages.iter().enumerate())
        .map(|(k, s)| (i64::from(s.rank), k))
        .collect();
    let mut written: BTreeSet<Vec<u32>> = BTreeSet::new();
    let mut keyed: BTreeMap<(&str, i64), Vec<u32>> = BTreeMap::new();
    let mut sends: BTreeMap<(i64, i64), Vec<(i64, u32)>> = BTreeMap::new();
    let mut recvs: BTreeMap<(i64, i64), Vec<(i64, u32)>> = BTreeMap::new();
    for (k, s) in stages.iter().enumerate() {
        let me = i64::from(s.rank);
        for c in &s.comms {
            let at = (issue(k, c.task), id(k, c.task));
            match c.peers {
                Some((from, to)) if from == me => sends.entry((from, to)).or_default().push(at),
                Some(pair) => recvs.entry(pair).or_default().push(at),
                None => {
                    let g = &s.groups[c.group];
                    // Only groups with another written stage can pair.
                    let others = g
                        .ranks
                        .iter()
                        .any(|&r| r as i64 != me && stage_of.contains_key(&(r as i64)));
                    if others {
                        keyed.entry((&g.name, c.seq)).or_default().push(at.1);
                    }
                }
            }
        }
    }
    for (key, mut members) in keyed {
        if members.len() < 2 {
            return Err(format!(
                "collective {} of process group {} is on one stage only",
                key.1, key.0
            ));
        }
        members.sort_unstable();
        written.insert(members);
    }
    for (pair, mut sent) in sends {
        let mut got = recvs.remove(&pair).unwrap_or_default();
        if !stage_of.contains_key(&pair.1) {
            continue;
        }
        if sent.len() != got.len() {
            return Err(format!(
                "rank {} sends {} times to rank {}, which receives {} times from it",
                pair.0,
                sent.len(),
                pair.1,
                got.len()
            ));
        }
        sent.sort_unstable();
        got.sort_unstable();
        for (s, r) in sent.iter().zip(&got) {
            let mut set = vec![s.1, r.1];
            set.sort_unstable();
            written.insert(set);
        }
    }
    if let Some((pair, _)) = recvs.iter().find(|(p, _)| stage_of.contains_key(&p.0)) {
        return Err(format!(
            "rank {} receives from rank {}, which sends nothing to it",
            pair.1, pair.0
        ));
    }
    if !job.coupled {
        return Ok(());
    }
    let coupled: BTreeSet<Vec<u32>> = (job.rendezvous.iter())
        .map(|r| {
            let mut v: Vec<u32> = r.tasks.iter().map(|t| t.0).collect();
            v.sort_unstable();
            v
        })
        .collect();
    if written != coupled {
        let extra = written.difference(&coupled).count();
        let missing = coupled.difference(&written).count();
        return Err(format!(
            "matching their collectives would pair {extra} sets of tasks the prediction did \
             not couple and miss {missing} it coupled"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::GroupClass;
    use crate::testutil::baseline;

    /// GPT tiny at TP 2 x PP 2 x DP 2 predicted at PP 4: ranks 0, 4, 8
    /// and 12 of 16, each with its Megatron groups, every transfer
    /// between neighbours and the gradient-norm reductions numbered alike
    /// on every stage: the pairs the prediction coupled.
    #[test]
    fn the_stages_state_the_predicted_pipeline() {
        let base = baseline("gpt-tiny", None, [2, 2, 2, 4]);
        let pred = base.identity().with_pp(4).unwrap();
        let out = pred.simulate().unwrap();
        assert!(out.job.coupled);
        let w = pred.written_job(&out);
        assert!(w.is_job, "{:?}", w.notes);
        assert!(w.notes.is_empty(), "{:?}", w.notes);
        let layout = RankLayout::new(2, 2, 4);
        let ranks: Vec<u32> = w.stages.iter().map(|s| s.rank).collect();
        assert_eq!(ranks, vec![0, 4, 8, 12]);
        for (k, s) in w.stages.iter().enumerate() {
            assert_eq!(s.world_size, 16);
            assert_eq!(s.groups, layout.groups_of(s.rank as usize), "stage {k}");
            let g = &pred.stages[k].graph;
            let comms = g.tasks.iter().filter(|t| t.collective.is_some()).count();
            assert_eq!(s.comms.len(), comms, "stage {k}: every collective placed");
            for c in &s.comms {
                let group = &s.groups[c.group];
                assert!(group.ranks.contains(&(s.rank as usize)));
                if let Some((from, to)) = c.peers {
                    assert_eq!(group.kind, GroupKind::PipelineParallel);
                    // Neighbouring stages: 4 ranks apart.
                    assert_eq!((from - to).abs(), 4, "stage {k}: {from} -> {to}");
                    assert!(from == i64::from(s.rank) || to == i64::from(s.rank));
                }
            }
        }
        // Every stage numbers its model-parallel reductions alike.
        let mp = |s: &WrittenStage| -> Vec<(String, i64)> {
            (s.comms.iter())
                .filter(|c| s.groups[c.group].kind == GroupKind::ModelParallel)
                .map(|c| (s.groups[c.group].name.clone(), c.seq))
                .collect()
        };
        let first = mp(&w.stages[0]);
        assert!(!first.is_empty());
        for s in &w.stages[1..] {
            assert_eq!(mp(s), first);
        }
        assert_eq!(check_pairs(&w.stages, &out), Ok(()));
    }

    /// Stages whose collectives would pair otherwise than the prediction
    /// coupled them are told apart: a gradient-norm reduction numbered
    /// differently on one stage, a transfer left out.
    #[test]
    fn pairs_the_prediction_did_not_make_are_told() {
        let base = baseline("gpt-tiny", None, [2, 2, 2, 4]);
        let pred = base.identity().with_pp(4).unwrap();
        let out = pred.simulate().unwrap();
        let w = pred.written_job(&out);
        let mut renumbered = w.stages.clone();
        let s = &mut renumbered[2];
        let c = (s.comms.iter_mut())
            .find(|c| s.groups[c.group].kind == GroupKind::ModelParallel)
            .unwrap();
        c.seq = 99;
        let err = check_pairs(&renumbered, &out).unwrap_err();
        assert!(err.contains("on one stage only"), "{err}");
        let mut unsent = w.stages.clone();
        let s = &mut unsent[1];
        let at = s.comms.iter().position(|c| c.peers.is_some()).unwrap();
        s.comms.remove(at);
        assert!(check_pairs(&unsent, &out).is_err());
    }

    /// A collective whose traced group is no group the layout places (an
    /// expert or embedding group) cannot be stated in the predicted job:
    /// with several stages, the timelines state none and say why; a
    /// single stage states its job without that collective's group.
    #[test]
    fn collectives_of_unknown_groups_state_no_job_across_stages() {
        let mut base = baseline("gpt-tiny", None, [2, 2, 2, 4]);
        for s in &mut base.structures {
            for c in s.comms.iter_mut().filter(|c| c.class == GroupClass::Tensor) {
                c.class = GroupClass::Other;
            }
        }
        let pred = base.identity().with_pp(4).unwrap();
        let w = pred.written_job(&pred.simulate().unwrap());
        assert!(!w.is_job);
        assert!(
            w.notes.iter().any(|n| n.contains(OTHER_GROUP)),
            "{:?}",
            w.notes
        );
        assert!(w.notes.iter().any(|n| n.contains("state no job")));
        let one = base.identity().with_pp(1).unwrap();
        let w = one.written_job(&one.simulate().unwrap());
        assert!(w.is_job);
        assert!(w.notes.iter().any(|n| n.contains(OTHER_GROUP)));
        assert!(!w.notes.iter().any(|n| n.contains("state no job")));
    }
}
