//! The joint graph of a prediction's stages ([`Job`]) and, when stages are
//! replayed together, the rendezvous that couple them: each send with its
//! receive on the neighbouring stage (a one-way rendezvous, the send eager)
//! and the stages' gradient-norm reductions, with modelled transfer times.
//! A receive's traced duration includes waiting for the other stage, which
//! the joint replay computes instead.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use lumos_graph::{Graph, ProcKind, Rendezvous, RendezvousKind, Step, TaskId, WaitTarget};
use lumos_models::CollectiveKind;
use rustc_hash::FxHashMap;

use crate::config::{Coord, Layout};
use crate::discover::{GroupClass, P2p, PassKind};
use crate::edits::Prediction;
use crate::models::{CommModel, Source};
use crate::retime::Ratios;

/// The joint graph of several stages and the rendezvous that couple them.
pub struct Job<'p> {
    /// Every stage's tasks: the one stage's own graph, borrowed from the
    /// prediction, when there is one stage to replay alone (a copy of it
    /// was a third graph in memory and a tenth of a large rank's
    /// prediction).
    pub graph: Cow<'p, Graph>,
    /// Transfers and reductions that couple stages.
    pub rendezvous: Vec<Rendezvous>,
    /// Each stage's tasks in `graph`.
    pub parts: Vec<std::ops::Range<u32>>,
    /// Each stage's steps in `graph`.
    pub step_parts: Vec<std::ops::Range<u32>>,
    /// Each task's duration, ns: what the replay runs it for (the graph's
    /// tasks keep the durations they were built with, see
    /// [`PredictedStage::durations`](crate::PredictedStage::durations)).
    pub durations: Arc<[i64]>,
    /// Where each task's duration came from.
    pub source: Cow<'p, [Source]>,
    /// Input and task each task came from.
    pub origin: Cow<'p, [(u32, TaskId)]>,
    /// True when stages are coupled.
    pub coupled: bool,
    /// Stage of each part.
    pub stage_of_part: Vec<u32>,
}

impl Job<'_> {
    /// GPU time per duration source, ns, summed over the job's tasks,
    /// saturating: durations as long as an `i64` allows do not wrap into a
    /// negative sum.
    pub fn gpu_time_by_source(&self) -> BTreeMap<Source, i64> {
        let mut by: BTreeMap<Source, i64> = BTreeMap::new();
        let each = self.graph.tasks.iter().zip(&*self.durations);
        for ((t, &ns), s) in each.zip(&*self.source) {
            if t.kind.is_gpu() {
                let sum = by.entry(*s).or_default();
                *sum = sum.saturating_add(ns);
            }
        }
        by
    }

    /// Each stage's GPU work per step, ns (parts in order): the summed
    /// [`Job::durations`] of the GPU tasks each step launched, saturating,
    /// overlapping ones counted in full. A stage without steps has one
    /// entry, every GPU task of its part (its whole window is its one
    /// step). A duration is what the replay runs a task for before it
    /// waits: a coupled transfer's is its modelled transfer time, which
    /// the joint replay stretches by the wait for its peer (a pipeline
    /// rebuilt deeper waits longer in its receives, and that waiting is
    /// not work); a measured communication kernel keeps its traced
    /// duration, the waits it had in the trace included.
    pub fn step_work_ns(&self) -> Vec<Vec<i64>> {
        (self.parts.iter().zip(&self.step_parts))
            .map(|(part, sp)| work_ns(&self.graph, part.clone(), sp.clone(), &self.durations))
            .collect()
    }

    /// The job with its graph, sources and origins its own (copies where it
    /// borrowed a stage's).
    pub fn into_owned(self) -> Job<'static> {
        Job {
            graph: Cow::Owned(self.graph.into_owned()),
            rendezvous: self.rendezvous,
            parts: self.parts,
            step_parts: self.step_parts,
            durations: self.durations,
            source: Cow::Owned(self.source.into_owned()),
            origin: Cow::Owned(self.origin.into_owned()),
            coupled: self.coupled,
            stage_of_part: self.stage_of_part,
        }
    }
}

impl Prediction<'_> {
    /// One graph with every stage. With several stages and any change,
    /// their transfers and gradient-norm reductions are coupled as
    /// rendezvous with modelled transfer times; otherwise they are
    /// independent.
    pub fn job(&self) -> Job<'_> {
        self.job_coupled(self.stages.len() > 1 && !self.is_identity())
    }

    /// [`Prediction::job`] with the coupling decided by the caller (for
    /// measuring what coupling alone does to the traced configuration).
    pub fn job_coupled(&self, couple: bool) -> Job<'_> {
        let couple = couple && self.stages.len() > 1;
        if let [st] = &self.stages[..] {
            if distinct_names(&st.graph) {
                return Job {
                    graph: Cow::Borrowed(&*st.graph),
                    rendezvous: Vec::new(),
                    parts: std::iter::once(0..st.graph.tasks.len() as u32).collect(),
                    step_parts: std::iter::once(0..st.graph.steps.len() as u32).collect(),
                    durations: st.durations.clone(),
                    source: Cow::Borrowed(&st.source),
                    origin: Cow::Borrowed(&st.origin),
                    coupled: false,
                    stage_of_part: vec![st.stage],
                };
            }
        }
        let mut g = Graph::default();
        let mut parts = Vec::new();
        let mut step_parts = Vec::new();
        // Made at its full size and filled in place: collected into a
        // `Vec` and turned into the job's `Arc` it was copied once more.
        let total: usize = self.stages.iter().map(|st| st.durations.len()).sum();
        let mut durations: Arc<[i64]> = std::iter::repeat_n(0, total).collect();
        let filled = Arc::get_mut(&mut durations).expect("just made, not shared");
        let mut source = Vec::new();
        let mut origin = Vec::new();
        let mut names: FxHashMap<String, u32> = FxHashMap::default();
        let origin_min = self
            .base
            .inputs
            .iter()
            .map(|i| i.ctx.clock_origin_ns)
            .min()
            .unwrap_or(0);
        for (k, st) in self.stages.iter().enumerate() {
            // Coupled stages share one timeline: each starts where its
            // trace's clock puts it.
            let shift = if couple {
                self.base.inputs[st.primary].ctx.clock_origin_ns - origin_min
            } else {
                0
            };
            let (t0, s0) = (g.tasks.len() as u32, g.steps.len() as u32);
            append_stage(&mut g, &mut names, k, &st.graph, shift);
            debug_assert_eq!(g.tasks.len() - t0 as usize, st.durations.len());
            filled[t0 as usize..g.tasks.len()].copy_from_slice(&st.durations);
            source.extend(st.source.iter().copied());
            origin.extend(st.origin.iter().copied());
            parts.push(t0..g.tasks.len() as u32);
            step_parts.push(s0..g.steps.len() as u32);
        }
        if g.scopes.is_empty() {
            g.task_scopes.clear();
        }
        let mut rendezvous = Vec::new();
        if couple {
            for (t, ns) in self.couple(&parts, &mut rendezvous) {
                filled[t.idx()] = ns;
                source[t.idx()] = Source::Modelled;
            }
        }
        Job {
            graph: Cow::Owned(g),
            rendezvous,
            parts,
            step_parts,
            durations,
            source: Cow::Owned(source),
            origin: Cow::Owned(origin),
            coupled: couple,
            stage_of_part: self.stages.iter().map(|s| s.stage).collect(),
        }
    }

    /// [`Job::step_work_ns`] of [`Prediction::job_coupled`]`(true)`, without
    /// making the joint graph: each stage's own graph and durations, the
    /// coupled transfers' and reductions' replaced by their modelled times.
    /// The report counts the traced work with a joint prediction's
    /// yardstick; a joint graph made for that, a copy of every stage's,
    /// cost a 16-stage job 0.3 to 0.4 s and was used for nothing else.
    pub fn coupled_step_work_ns(&self) -> Vec<Vec<i64>> {
        if self.stages.len() <= 1 {
            return self.job_coupled(true).step_work_ns();
        }
        let parts = self.parts();
        let mut modelled = self.couple(&parts, &mut Vec::new());
        // In the order coupling set them: a task set twice keeps the last.
        modelled.reverse();
        modelled.sort_by_key(|m| m.0);
        modelled.dedup_by_key(|m| m.0);
        let mut next = modelled.iter().peekable();
        (self.stages.iter().zip(&parts))
            .map(|(st, part)| {
                let mut durations = st.durations.to_vec();
                while let Some((t, ns)) = next.next_if(|m| part.contains(&m.0 .0)) {
                    durations[(t.0 - part.start) as usize] = *ns;
                }
                let (tasks, steps) = (st.graph.tasks.len(), st.graph.steps.len());
                work_ns(&st.graph, 0..tasks as u32, 0..steps as u32, &durations)
            })
            .collect()
    }

    /// Each stage's tasks as the joint graph numbers them.
    fn parts(&self) -> Vec<std::ops::Range<u32>> {
        let mut t0 = 0u32;
        (self.stages.iter())
            .map(|st| {
                let n = st.graph.tasks.len() as u32;
                t0 += n;
                t0 - n..t0
            })
            .collect()
    }

    /// Pairs each send with its receive on the neighbouring (virtual)
    /// stage (same step, pass kind and micro-batch) and joins the stages'
    /// gradient-norm reductions, as rendezvous added to `rendezvous`; the
    /// tasks they couple (numbered as in the joint graph of `parts`) with
    /// their modelled transfer times, in the order they were set.
    fn couple(
        &self,
        parts: &[std::ops::Range<u32>],
        rendezvous: &mut Vec<Rendezvous>,
    ) -> Vec<(TaskId, i64)> {
        let mut times = Vec::new();
        // Where task `t` of the joint graph came from.
        let origin = |t: u32| {
            let k = parts.partition_point(|p| p.end <= t);
            self.stages[k].origin[(t - parts[k].start) as usize]
        };
        let base = self.base;
        let net: &dyn CommModel = match &self.target.network {
            Some((n, _)) => n,
            None => &*base.models.comm,
        };
        let layout = Layout::of(&self.target.config);
        let r = Ratios::of(&base.config, &self.target.config);
        // (stage, step, kind, microbatch, chunk, send?) -> task
        let mut p2p: FxHashMap<(u32, u32, PassKind, u32, u32, bool), TaskId> = FxHashMap::default();
        let mut mp: FxHashMap<u32, Vec<(u32, TaskId)>> = FxHashMap::default();
        for (k, part) in parts.iter().enumerate() {
            let stage = self.stages[k].stage;
            for t in part.clone() {
                let (src, tt) = self.stages[k].origin[(t - part.start) as usize];
                let s = &base.structures[src as usize];
                let Some(c) = s.comm(tt) else { continue };
                let tag = self.stages[k].tag[(t - part.start) as usize];
                match (c.class, c.p2p, tag.step, tag.pass) {
                    (GroupClass::Pipeline, Some(dir), Some(step), Some((kind, mb))) => {
                        let key = (stage, step, kind, mb, tag.chunk, dir == P2p::Send);
                        p2p.insert(key, TaskId(t));
                    }
                    (GroupClass::ModelParallel, _, Some(step), None) if tag.setup => {
                        mp.entry(step).or_default().push((stage, TaskId(t)));
                    }
                    _ => {}
                }
            }
        }
        let coord = |stage: u32| Coord {
            tp: 0,
            dp: 0,
            pp: stage,
        };
        let bytes_of = |t: TaskId| -> u64 {
            let (src, tt) = origin(t.0);
            let s = &base.structures[src as usize];
            let b = s.comm(tt).and_then(|c| c.bytes).unwrap_or(0) as f64;
            // Coupled transfers are the passes' sends and receives.
            (b * r.activations(base.sequence_parallel)).round() as u64
        };
        let mut keys: Vec<_> = p2p.keys().copied().filter(|k| k.5).collect();
        keys.sort_by_key(|k| (k.0, k.1, k.2 as u8, k.3, k.4));
        // Chunk `c` of stage `s` is virtual stage `c pp + s`: activations
        // go to the next virtual stage (from the last stage to the first
        // stage's next chunk), gradients to the one before.
        let pp = self.target.config.pp.max(1);
        for (stage, step, kind, mb, chunk, _) in keys {
            let vs = chunk * pp + stage;
            let to = match kind {
                PassKind::Forward => vs + 1,
                PassKind::Backward => match vs.checked_sub(1) {
                    Some(p) => p,
                    None => continue,
                },
            };
            let (peer, peer_chunk) = (to % pp, to / pp);
            let (Some(&send), Some(&recv)) = (
                p2p.get(&(stage, step, kind, mb, chunk, true)),
                p2p.get(&(peer, step, kind, mb, peer_chunk, false)),
            ) else {
                continue;
            };
            let ranks = [layout.rank(coord(stage)), layout.rank(coord(peer))];
            let d = net
                .collective_ns(CollectiveKind::SendRecv, bytes_of(send), &ranks)
                .round() as i64;
            for t in [send, recv] {
                times.push((t, d));
            }
            // The send is eager; the receive ends when the send has started
            // and the transfer is done.
            rendezvous.push(Rendezvous {
                tasks: vec![send, recv],
                kind: RendezvousKind::PointToPoint,
            });
        }
        let stages = self.stages.len();
        let mut steps: Vec<_> = mp.into_iter().collect();
        steps.sort_by_key(|x| x.0);
        for (_, members) in steps {
            if members.len() != stages {
                continue;
            }
            let ranks = layout.group(GroupClass::ModelParallel, coord(0));
            let d = net
                .collective_ns(CollectiveKind::AllReduce, 4, &ranks)
                .round() as i64;
            let tasks: Vec<TaskId> = members.iter().map(|m| m.1).collect();
            for &t in &tasks {
                times.push((t, d));
            }
            rendezvous.push(Rendezvous::collective(tasks));
        }
        times
    }
}

/// The GPU work of each of `g`'s steps `sp`, ns ([`Job::step_work_ns`]):
/// the summed `durations` (indexed like `g`'s tasks) of the GPU tasks each
/// launched, saturating; without steps, one entry, every GPU task of
/// `part`.
fn work_ns(
    g: &Graph,
    part: std::ops::Range<u32>,
    sp: std::ops::Range<u32>,
    durations: &[i64],
) -> Vec<i64> {
    let gpu = |t: u32| {
        let t = t as usize;
        if g.tasks[t].kind.is_gpu() {
            durations[t]
        } else {
            0
        }
    };
    let sum = |it: &mut dyn Iterator<Item = u32>| it.map(gpu).fold(0i64, i64::saturating_add);
    if sp.is_empty() {
        return vec![sum(&mut part.clone())];
    }
    g.steps[sp.start as usize..sp.end as usize]
        .iter()
        .map(|st| sum(&mut st.tasks.iter().map(|t| t.0)))
        .collect()
}

/// Whether no two of `g`'s names are equal, as a build interns them: then
/// a stage's graph is its own joint graph (appending renumbers nothing).
fn distinct_names(g: &Graph) -> bool {
    let mut seen = rustc_hash::FxHashSet::default();
    g.names.iter().all(|n| seen.insert(n.as_str()))
}

/// Appends stage graph `sg`, the `k`-th, to the joint graph `g`: its tasks,
/// processors (each stage its own process and device), edges, waits,
/// collectives, scopes and steps, renumbered; names interned in `names`.
/// Tasks released at the window start (or later) are released `shift`
/// later.
fn append_stage(
    g: &mut Graph,
    names: &mut FxHashMap<String, u32>,
    k: usize,
    sg: &Graph,
    shift: i64,
) {
    // The first stage, not shifted, its names distinct (as a build interns
    // them), is appended as it is: one copy of the graph rather than one
    // task, edge and scope at a time with their ids mapped (a large rank's
    // prediction makes two such joint graphs, its own and the identity's).
    if k == 0 && shift == 0 && g.tasks.is_empty() && g.names.is_empty() {
        names.extend(
            sg.names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i as u32)),
        );
        if names.len() == sg.names.len() {
            *g = sg.clone();
            // As `append_mapped`: a scope or none for every task.
            let n = g.tasks.len();
            g.task_scopes.resize(n, None);
            return;
        }
        names.clear();
    }
    append_mapped(g, names, k, sg, shift);
}

/// [`append_stage`], one task, edge and scope at a time, their ids mapped.
fn append_mapped(
    g: &mut Graph,
    names: &mut FxHashMap<String, u32>,
    k: usize,
    sg: &Graph,
    shift: i64,
) {
    let t0 = g.tasks.len() as u32;
    let p0 = g.processors.len() as u32;
    let c0 = g.collectives.len() as u32;
    let sc0 = g.scopes.len() as u32;
    let name_map: Vec<u32> = sg
        .names
        .iter()
        .map(|n| {
            let next = g.names.len() as u32;
            *names.entry(n.clone()).or_insert_with(|| {
                g.names.push(n.clone());
                next
            })
        })
        .collect();
    // Each stage is its own process and device in the joint graph.
    let shift_kind = |kind: &ProcKind| match *kind {
        ProcKind::Thread { pid, tid } => ProcKind::Thread {
            pid: pid + k as i64 * 1_000_000_000,
            tid: tid + k as i64 * 1_000_000_000,
        },
        ProcKind::Stream { device, stream } => ProcKind::Stream {
            device: device + k as i64 * 1000,
            stream,
        },
    };
    let mut has_in = vec![false; sg.tasks.len()];
    for e in &sg.edges {
        has_in[e.to.idx()] = true;
    }
    for (i, t) in sg.tasks.iter().enumerate() {
        let mut t = t.clone();
        t.name = lumos_graph::NameId(name_map[t.name.0 as usize]);
        t.proc = lumos_graph::ProcId(t.proc.0 + p0);
        t.collective = t.collective.map(|c| c + c0);
        if !has_in[i] || t.release_ns > 0 {
            t.release_ns += shift;
        }
        g.tasks.push(t);
    }
    for p in &sg.processors {
        g.processors.push(lumos_graph::Processor {
            kind: shift_kind(&p.kind),
            tasks: p.tasks.iter().map(|t| TaskId(t.0 + t0)).collect(),
        });
    }
    g.edges.extend(sg.edges.iter().map(|e| lumos_graph::Edge {
        from: TaskId(e.from.0 + t0),
        to: TaskId(e.to.0 + t0),
        ..*e
    }));
    g.runtime_deps
        .extend(sg.runtime_deps.iter().map(|d| lumos_graph::RuntimeDep {
            task: TaskId(d.task.0 + t0),
            target: match d.target {
                WaitTarget::StreamTail(s) => WaitTarget::StreamTail(lumos_graph::ProcId(s.0 + p0)),
                WaitTarget::DeviceTail(dev) => WaitTarget::DeviceTail(dev + k as i64 * 1000),
                WaitTarget::Task(x) => WaitTarget::Task(TaskId(x.0 + t0)),
            },
            ..*d
        }));
    g.collectives.extend(sg.collectives.iter().cloned());
    g.scopes
        .extend(sg.scopes.iter().map(|s| lumos_graph::Scope {
            name: lumos_graph::NameId(name_map[s.name.0 as usize]),
            parent: s.parent.map(|p| lumos_graph::ScopeId(p.0 + sc0)),
            ..s.clone()
        }));
    if !sg.scopes.is_empty() {
        g.task_scopes.extend((0..sg.tasks.len()).map(|i| {
            sg.task_scopes
                .get(i)
                .copied()
                .flatten()
                .map(|s| lumos_graph::ScopeId(s.0 + sc0))
        }));
    } else {
        g.task_scopes
            .extend(std::iter::repeat_n(None, sg.tasks.len()));
    }
    g.steps.extend(sg.steps.iter().map(|s| Step {
        name: s.name.clone(),
        first_task: TaskId(s.first_task.0 + t0),
        last_task: TaskId(s.last_task.0 + t0),
        tasks: s.tasks.iter().map(|t| TaskId(t.0 + t0)).collect(),
        ..s.clone()
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::baseline;

    #[test]
    fn the_first_stage_is_copied_as_mapping_would_append_it() {
        let base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        for input in &base.inputs {
            // As built; without scopes; with a name twice (which only the
            // mapped path handles: the copy must not be taken).
            let mut unscoped = input.graph.clone();
            unscoped.scopes.clear();
            unscoped.task_scopes.clear();
            let mut twice = input.graph.clone();
            twice.names.push(twice.names[0].clone());
            for sg in [&input.graph, &unscoped, &twice] {
                let (mut copied, mut mapped) = (Graph::default(), Graph::default());
                let (mut a, mut b) = (FxHashMap::default(), FxHashMap::default());
                append_stage(&mut copied, &mut a, 0, sg, 0);
                append_mapped(&mut mapped, &mut b, 0, sg, 0);
                assert_eq!(format!("{copied:?}"), format!("{mapped:?}"));
                assert_eq!(a, b);
            }
            assert!(distinct_names(&input.graph) && !distinct_names(&twice));
        }
    }

    #[test]
    fn gpu_time_by_source_saturates() {
        let base = baseline("gpt-tiny", None, [1, 1, 1, 2]);
        let id = base.identity();
        let mut job = id.job();
        job.durations = vec![i64::MAX; job.graph.tasks.len()].into();
        let by = job.gpu_time_by_source();
        assert!(!by.is_empty() && by.values().all(|&ns| ns == i64::MAX));
    }

    #[test]
    fn a_one_stage_job_is_the_stage_itself() {
        let base = baseline("gpt-tiny", None, [1, 1, 1, 2]);
        let id = base.identity();
        let job = id.job();
        assert!(matches!(job.graph, Cow::Borrowed(_)));
        let (mut mapped, mut names) = (Graph::default(), FxHashMap::default());
        append_mapped(&mut mapped, &mut names, 0, &id.stages[0].graph, 0);
        assert_eq!(format!("{:?}", *job.graph), format!("{mapped:?}"));
        assert_eq!(job.parts.len(), 1);
        assert_eq!(job.parts[0], 0..mapped.tasks.len() as u32);
        assert_eq!(job.step_parts.len(), 1);
        assert_eq!(job.step_parts[0], 0..mapped.steps.len() as u32);
    }

    #[test]
    fn stages_are_appended_on_their_own_processors() {
        let base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        let (a, b) = (&base.inputs[0].graph, &base.inputs[1].graph);
        let mut g = Graph::default();
        let mut names = FxHashMap::default();
        append_stage(&mut g, &mut names, 0, a, 0);
        append_stage(&mut g, &mut names, 1, b, 500);
        let n = a.tasks.len();
        assert_eq!(g.tasks.len(), n + b.tasks.len());
        assert_eq!(g.processors.len(), a.processors.len() + b.processors.len());
        assert_eq!(g.edges.len(), a.edges.len() + b.edges.len());
        assert_eq!(g.steps.len(), a.steps.len() + b.steps.len());
        // Names interned once.
        let mut unique = g.names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), g.names.len());
        for (i, t) in b.tasks.iter().enumerate() {
            let u = &g.tasks[n + i];
            assert_eq!(g.names[u.name.0 as usize], b.names[t.name.0 as usize]);
            assert_eq!(u.proc.0 as usize, t.proc.0 as usize + a.processors.len());
            assert_eq!(u.duration_ns, t.duration_ns);
        }
        // The second stage's first task is released later, on a processor
        // that does not repeat the first stage's.
        let first = &g.tasks[n + b.processors[0].tasks[0].idx()];
        assert_eq!(
            first.release_ns,
            b.task(b.processors[0].tasks[0]).release_ns + 500
        );
        let kinds: Vec<&ProcKind> = g.processors.iter().map(|p| &p.kind).collect();
        for (i, k) in kinds.iter().enumerate() {
            assert!(!kinds[..i].contains(k), "{k:?} twice");
        }
    }

    #[test]
    fn coupling_pairs_transfers_and_joins_the_norm_reductions() {
        // Two stages, four micro-batches, two steps.
        let base = baseline("gpt-tiny", None, [1, 2, 1, 4]);
        let id = base.identity();
        let alone = id.job();
        assert!(!alone.coupled && alone.rendezvous.is_empty());
        let job = id.job_coupled(true);
        assert!(job.coupled);
        assert_eq!(
            job.parts,
            vec![0..alone.parts[0].end, alone.parts[1].clone()]
        );
        let count = |k: RendezvousKind| job.rendezvous.iter().filter(|r| r.kind == k).count();
        // Per step and micro-batch: activations forward, gradients back.
        assert_eq!(count(RendezvousKind::PointToPoint), 2 * 4 * 2);
        assert_eq!(
            job.rendezvous.len(),
            2 * 4 * 2 + 2,
            "one norm reduction per step"
        );
        for r in &job.rendezvous {
            let stages: Vec<usize> = r
                .tasks
                .iter()
                .map(|t| job.parts.iter().position(|p| p.contains(&t.0)).unwrap())
                .collect();
            assert_eq!(stages.len(), 2);
            assert_ne!(stages[0], stages[1], "across stages");
            let d = job.durations[r.tasks[0].idx()];
            for t in &r.tasks {
                assert_eq!(job.source[t.idx()], Source::Modelled);
                assert_eq!(job.durations[t.idx()], d);
            }
        }
        // A single stage couples nothing.
        let one = baseline("gpt-tiny", None, [1, 1, 1, 2]);
        assert!(!one.identity().job_coupled(true).coupled);
    }

    #[test]
    fn coupled_work_without_the_joint_graph_is_the_joint_graph_s() {
        // The traced job of two and four stages, and predictions of it
        // (new degrees, a deeper pipeline, interleaved): the work counted
        // from each stage's own graph is the coupled joint graph's, and
        // coupling changed it (the receives' traced waits are gone).
        let two = baseline("gpt-tiny", None, [1, 2, 1, 4]);
        let four = baseline("gpt-tiny", Some(8), [1, 4, 1, 8]);
        fn target(base: &crate::Baseline, f: fn(&mut crate::Config)) -> Prediction<'_> {
            let mut config = base.config;
            f(&mut config);
            let t = crate::Target {
                config,
                scales: Vec::new(),
                network: None,
                heads: None,
            };
            base.predict(t).unwrap()
        }
        let preds = [
            two.identity(),
            four.identity(),
            target(&two, |c| c.microbatches = 8),
            target(&two, |c| (c.pp, c.microbatches) = (4, 8)),
            target(&four, |c| c.virtual_stages = 2),
        ];
        for p in &preds {
            let joint = p.job_coupled(true).step_work_ns();
            assert_eq!(p.coupled_step_work_ns(), joint);
            assert_ne!(joint, p.job_coupled(false).step_work_ns());
        }
        // One stage has nothing to couple.
        let one = baseline("gpt-tiny", None, [1, 1, 1, 2]);
        let id1 = one.identity();
        assert_eq!(id1.coupled_step_work_ns(), id1.job().step_work_ns());
    }
}
