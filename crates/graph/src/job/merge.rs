//! Merging the ranks of a job into one graph, with matched collectives as
//! rendezvous.

use std::ops::Range;

use rustc_hash::FxHashMap;

use super::clock::ClockAlignment;
use super::comms::RankGraph;
use super::matching::{CollectiveMatch, MatchRule};
use super::restore::RankRestore;
use crate::acyclic::{rejected_groups, ungroup, GraphNet, Optional, StreamTails};
use crate::model::*;
use crate::report::counted;

/// A transfer's measured end may precede its last participant's start by
/// this much (clock-alignment noise) before it is reported as suspect.
const END_BEFORE_START_TOLERANCE_NS: i64 = 50_000;

/// Who in a [`Rendezvous`] waits for whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RendezvousKind {
    /// A collective: every participant ends at the last participant's start
    /// plus its own duration.
    Collective,
    /// A send (`tasks[0]`) and its receive (`tasks[1]`). The receive ends at
    /// `max(its start, the send's start) + its duration`. The send is eager:
    /// NCCL's connection buffers let it complete before the receiver
    /// arrives (measured sends run ~10 us while their receives wait), so it
    /// ends at its own start plus its duration. Making it wait too would
    /// deadlock the usual pipeline order (stage 0: send, send, receive;
    /// stage 1: receive, send, receive on one stream each).
    PointToPoint,
    /// A matched set whose coupling would deadlock the joint replay: a
    /// participant waits, through its rank's dependencies, for another's
    /// end (crossed matches, or ids that disagree with the order of work).
    /// Nobody waits; each task runs for its measured duration, as if it
    /// were unmatched. [`merge`] warns about every one.
    Uncoupled,
}

/// Communication tasks on different ranks that complete together.
///
/// Each task starts as its own dependencies allow; a task that waits (every
/// one of a collective, the receive of a point-to-point pair) ends at
/// `max(start of every task in the rendezvous) + its own duration`: its
/// duration in the graph is its intrinsic transfer time, not the measured
/// kernel time, which includes waiting for the slowest peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendezvous {
    /// The participants, one per rank, at least two; for
    /// [`RendezvousKind::PointToPoint`], the send then the receive.
    pub tasks: Vec<TaskId>,
    /// Who waits for whom.
    pub kind: RendezvousKind,
}

impl Rendezvous {
    /// A collective over `tasks`.
    pub fn collective(tasks: Vec<TaskId>) -> Self {
        Rendezvous {
            tasks,
            kind: RendezvousKind::Collective,
        }
    }

    /// True when the participant at `pos` in [`Rendezvous::tasks`] waits
    /// for the others (all but an eager send).
    pub fn waits(&self, pos: usize) -> bool {
        match self.kind {
            RendezvousKind::Collective => true,
            RendezvousKind::PointToPoint => pos != 0,
            RendezvousKind::Uncoupled => false,
        }
    }
}

/// Where one rank's part sits in a [`JobGraph`]: every index range its
/// tasks, processors, edges, steps and collectives occupy. Task `t` of the
/// rank's own graph is task `tasks.start + t` of the job graph, and so on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankPart {
    /// The rank.
    pub rank: u32,
    /// Its tasks in [`Graph::tasks`].
    pub tasks: Range<u32>,
    /// Its processors in [`Graph::processors`].
    pub processors: Range<u32>,
    /// Its fixed edges in [`Graph::edges`].
    pub edges: Range<u32>,
    /// Its steps in [`Graph::steps`].
    pub steps: Range<u32>,
    /// Its collectives in [`Graph::collectives`].
    pub collectives: Range<u32>,
    /// Its scopes in [`Graph::scopes`].
    pub scopes: Range<u32>,
    /// Where its window starts on the job timeline, in ns: its measured
    /// window start on the aligned clock minus the earliest one. Its tasks'
    /// releases are offset by this.
    pub start_ns: i64,
    /// Its clock offset, from [`ClockAlignment::offsets_ns`].
    pub clock_offset_ns: i64,
}

impl RankPart {
    /// The job-graph id of the rank's own task `t`.
    pub fn task(&self, t: TaskId) -> TaskId {
        TaskId(self.tasks.start + t.0)
    }

    /// True when job-graph task `t` belongs to this rank.
    pub fn contains(&self, t: TaskId) -> bool {
        self.tasks.contains(&t.0)
    }
}

/// Every rank of a job in one [`Graph`], with the rendezvous that couple
/// them. Processors keep their per-rank [`ProcKind`] (two ranks may both
/// have `Stream { device: 0, stream: 7 }`); [`JobGraph::ranks`] says which
/// rank owns which range, so nothing in the graph collides: device-wide
/// waits are rewritten as waits on the rank's own streams.
#[derive(Debug, Clone, Default)]
pub struct JobGraph {
    /// The merged graph.
    pub graph: Graph,
    /// One part per rank, in the order given to [`merge`].
    pub ranks: Vec<RankPart>,
    /// One per matched set: `rendezvous[i]` is `CollectiveMatch::sets[i]`.
    pub rendezvous: Vec<Rendezvous>,
    /// One per rank, like [`JobGraph::ranks`]: what
    /// [`JobGraph::rank_graph`] needs to give the rank's own graph back.
    /// Empty in a job graph not made by [`merge`], [`merge_owned`] or
    /// [`merge_emptying`].
    pub restore: Vec<RankRestore>,
}

impl JobGraph {
    /// The position in [`JobGraph::ranks`] of the rank owning task `t`.
    pub fn rank_of(&self, t: TaskId) -> usize {
        self.ranks
            .partition_point(|p| p.tasks.end <= t.0)
            .min(self.ranks.len().saturating_sub(1))
    }

    /// For each task, the rendezvous it takes part in, if any.
    pub fn rendezvous_of_tasks(&self) -> Vec<Option<u32>> {
        let mut out = vec![None; self.graph.tasks.len()];
        for (i, r) in self.rendezvous.iter().enumerate() {
            for &t in &r.tasks {
                if let Some(slot) = out.get_mut(t.idx()) {
                    *slot = Some(i as u32);
                }
            }
        }
        out
    }

    /// What-if edit: multiplies the durations of one rank's GPU compute
    /// tasks (kernels, copies and sets that are not communication) by
    /// `factor`, and its CPU tasks too when `cpu` is set. Collective
    /// transfer times stay as they are: the point is to see how the other
    /// ranks wait for this one. Durations saturate ([`scaled_ns`]): a huge
    /// factor gives huge durations, a negative one zero.
    pub fn scale_rank(&mut self, rank_pos: usize, factor: f64, cpu: bool) {
        let Some(part) = self.ranks.get(rank_pos) else {
            return;
        };
        let range = part.tasks.start as usize..part.tasks.end as usize;
        let mut changed = Vec::new();
        for (i, task) in self.graph.tasks[range].iter_mut().enumerate() {
            let selected = if task.kind.is_gpu() {
                !task.is_comm()
            } else {
                cpu
            };
            if selected {
                changed.push((TaskId(i as u32), task.duration_ns));
                task.duration_ns = scaled_ns(task.duration_ns, factor);
            }
        }
        if let Some(restore) = self.restore.get_mut(rank_pos) {
            restore.durations.extend(changed);
        }
    }
}

/// Merges the ranks into one graph: tasks, processors, edges, runtime
/// dependencies, collectives and steps of each rank, renumbered; each
/// rank's releases moved to where its window starts on the aligned job
/// timeline; and each matched set made a [`Rendezvous`] whose tasks carry
/// their transfer times as durations.
///
/// Returns the job graph, the measured times on the job timeline (aligned
/// clocks, 0 = the earliest rank's window start; parallel to the job
/// graph's tasks and steps), and warnings about transfers that measured
/// inconsistent (a participant ended well before another started: a wrong
/// match or a bad clock offset).
///
/// The ranks stay as they are, so the job holds every task twice (once per
/// rank, once merged); a caller that needs the ranks' graphs no more
/// passes them to [`merge_owned`] or [`merge_emptying`] instead, and reads
/// each back with [`JobGraph::rank_graph`] when it needs it.
pub fn merge(
    ranks: &[RankGraph],
    m: &CollectiveMatch,
    clock: &ClockAlignment,
) -> (JobGraph, Measured, Vec<String>) {
    let mut list = ranks;
    merge_from(&mut list, m, clock)
}

/// [`merge`], taking the ranks: each rank's graph and measured times are
/// freed as soon as they are appended to the job graph, so the job never
/// holds every task twice (at 1,024 ranks that is the difference between
/// fitting in 24 GB and not). The result is exactly [`merge`]'s.
pub fn merge_owned(
    ranks: Vec<RankGraph>,
    m: &CollectiveMatch,
    clock: &ClockAlignment,
) -> (JobGraph, Measured, Vec<String>) {
    let mut ranks = ranks;
    merge_emptying(&mut ranks, m, clock)
}

/// [`merge_owned`] on ranks left in place: once appended, each rank's
/// graph and measured times are emptied (`Graph::default()`), while its
/// rank number, source, host, communication tasks and groups stay, for
/// the reports that read them ([`JobGraph::rank_graph`] gives the rest
/// back). The result is exactly [`merge`]'s.
pub fn merge_emptying(
    ranks: &mut [RankGraph],
    m: &CollectiveMatch,
    clock: &ClockAlignment,
) -> (JobGraph, Measured, Vec<String>) {
    let mut list = Owned {
        ranks,
        freed_tasks: 0,
    };
    merge_from(&mut list, m, clock)
}

/// The ranks [`merge_from`] appends one after another: borrowed, or owned
/// and emptied as it goes.
trait RankList {
    fn ranks(&self) -> &[RankGraph];
    /// Rank `p` has been appended: what only the job graph needs of it now
    /// may go. [`couple`] still reads its rank and communication tasks.
    fn appended(&mut self, p: usize);
}

impl RankList for &[RankGraph] {
    fn ranks(&self) -> &[RankGraph] {
        self
    }
    fn appended(&mut self, _: usize) {}
}

/// Owned ranks, and how many tasks' worth of them were freed since the
/// heap was last trimmed.
struct Owned<'r> {
    ranks: &'r mut [RankGraph],
    freed_tasks: usize,
}

/// Tasks' worth of rank graphs (about 200 B each) freed before the heap is
/// trimmed: often enough that the freed memory never piles up to more
/// than a few hundred MB, rarely enough that trimming costs nothing.
const TRIM_EVERY_TASKS: usize = 1 << 21;

impl RankList for Owned<'_> {
    fn ranks(&self) -> &[RankGraph] {
        self.ranks
    }
    fn appended(&mut self, p: usize) {
        if let Some(r) = self.ranks.get_mut(p) {
            self.freed_tasks += r.graph.tasks.len();
            r.graph = Graph::default();
            r.measured = Measured::default();
        }
        if self.freed_tasks >= TRIM_EVERY_TASKS || p + 1 == self.ranks.len() {
            self.freed_tasks = 0;
            // A rank's graph is thousands of vectors of a few MB at most,
            // which glibc serves from its heap and keeps there once freed:
            // the job graph's vectors are allocated apart (they are large),
            // so without this the ranks' memory would stay resident next to
            // the job graph that replaced it.
            crate::trim_heap();
        }
    }
}

fn merge_from(
    list: &mut impl RankList,
    m: &CollectiveMatch,
    clock: &ClockAlignment,
) -> (JobGraph, Measured, Vec<String>) {
    let ranks = list.ranks();
    let offset = |p: usize| clock.offsets_ns.get(p).copied().unwrap_or(0);
    let aligned_origin: Vec<i64> = ranks
        .iter()
        .enumerate()
        .map(|(p, r)| r.clock_origin_ns().saturating_sub(offset(p)))
        .collect();
    let job_origin = aligned_origin.iter().copied().min().unwrap_or(0);

    let mut job = Appender::with_room_for(ranks, job_origin);
    let mut parts = Vec::with_capacity(ranks.len());
    let mut restore = Vec::with_capacity(ranks.len());
    for (p, origin) in aligned_origin.iter().enumerate() {
        let shift = origin.saturating_sub(job_origin);
        let (part, r) = job.append(&list.ranks()[p], shift, offset(p));
        parts.push(part);
        restore.push(r);
        list.appended(p);
    }
    let ranks = list.ranks();
    let Appender {
        mut g, measured, ..
    } = job;
    // The graph's convention: no scopes, no per-task scope list.
    if g.scopes.is_empty() {
        g.task_scopes = Vec::new();
    }
    let mut job = JobGraph {
        graph: g,
        ranks: parts,
        rendezvous: Vec::new(),
        restore,
    };
    let early = couple(&mut job, ranks, &measured, m);
    let mut warnings = Vec::new();
    warnings.extend(uncouple_deadlocks(&mut job, &measured, m));
    warnings.extend(early);
    (job, measured, warnings)
}

/// The job graph and measured times being built by [`merge`], one rank
/// appended after another.
struct Appender {
    g: Graph,
    measured: Measured,
    /// Interned names: the ranks of a job run the same program, so this
    /// keeps one copy per distinct name.
    names: FxHashMap<String, u32>,
}

impl Appender {
    /// An empty job graph with room for every rank's parts: each vector is
    /// allocated once at its final size, instead of doubling as ranks are
    /// appended (which copies it each time and leaves up to half of it
    /// unused).
    fn with_room_for(ranks: &[RankGraph], origin_ns: i64) -> Appender {
        let sum = |f: fn(&RankGraph) -> usize| ranks.iter().map(f).sum::<usize>();
        let g = Graph {
            tasks: Vec::with_capacity(sum(|r| r.graph.tasks.len())),
            task_scopes: Vec::with_capacity(sum(|r| r.graph.tasks.len())),
            processors: Vec::with_capacity(sum(|r| r.graph.processors.len())),
            edges: Vec::with_capacity(sum(|r| r.graph.edges.len())),
            // A device-wide wait may become several stream waits, so this
            // is a lower bound.
            runtime_deps: Vec::with_capacity(sum(|r| r.graph.runtime_deps.len())),
            collectives: Vec::with_capacity(sum(|r| r.graph.collectives.len())),
            steps: Vec::with_capacity(sum(|r| r.graph.steps.len())),
            scopes: Vec::with_capacity(sum(|r| r.graph.scopes.len())),
            ..Graph::default()
        };
        let measured = Measured {
            origin_ns,
            tasks: Vec::with_capacity(sum(|r| r.measured.tasks.len())),
            step_annotations: Vec::with_capacity(sum(|r| r.measured.step_annotations.len())),
            scopes: Vec::with_capacity(sum(|r| r.measured.scopes.len())),
        };
        Appender {
            g,
            measured,
            names: FxHashMap::default(),
        }
    }

    /// Appends rank `r`, its window starting `shift` ns into the job
    /// timeline, and says where its part sits and how to give it back.
    fn append(
        &mut self,
        r: &RankGraph,
        shift: i64,
        clock_offset_ns: i64,
    ) -> (RankPart, RankRestore) {
        let g = &self.g;
        let (t0, p0, e0) = (
            g.tasks.len() as u32,
            g.processors.len() as u32,
            g.edges.len() as u32,
        );
        let (s0, c0, sc0) = (
            g.steps.len() as u32,
            g.collectives.len() as u32,
            g.scopes.len() as u32,
        );
        let rg = &r.graph;
        let name_map = self.intern_names(&rg.names);
        self.append_tasks(rg, &name_map, shift);
        let restore = RankRestore::of(rg, &r.measured, name_map, shift);
        let g = &mut self.g;
        let tid = |t: TaskId| TaskId(t.0 + t0);
        for proc in &rg.processors {
            g.processors.push(Processor {
                kind: proc.kind.clone(),
                tasks: proc.tasks.iter().map(|&t| tid(t)).collect(),
            });
        }
        g.edges.extend(rg.edges.iter().map(|e| Edge {
            from: tid(e.from),
            to: tid(e.to),
            ..*e
        }));
        for d in &rg.runtime_deps {
            push_runtime_dep(&mut g.runtime_deps, rg, d, t0, p0);
        }
        g.collectives.extend(rg.collectives.iter().cloned());
        g.steps.extend(rg.steps.iter().map(|s| Step {
            name: s.name.clone(),
            first_task: tid(s.first_task),
            lead_ns: s.lead_ns,
            last_task: tid(s.last_task),
            tail_ns: s.tail_ns,
            tasks: s.tasks.iter().map(|&t| tid(t)).collect(),
        }));
        let moved = |s: &Span| Span {
            start_ns: s.start_ns.saturating_add(shift),
            end_ns: s.end_ns.saturating_add(shift),
        };
        let measured = &mut self.measured;
        measured.tasks.extend(r.measured.tasks.iter().map(moved));
        measured
            .step_annotations
            .extend(r.measured.step_annotations.iter().map(moved));
        measured.scopes.extend(r.measured.scopes.iter().map(moved));
        let part = RankPart {
            rank: r.rank,
            tasks: t0..g.tasks.len() as u32,
            processors: p0..g.processors.len() as u32,
            edges: e0..g.edges.len() as u32,
            steps: s0..g.steps.len() as u32,
            collectives: c0..g.collectives.len() as u32,
            scopes: sc0..g.scopes.len() as u32,
            start_ns: shift,
            clock_offset_ns,
        };
        (part, restore)
    }

    /// The job-graph name of each of a rank's names, interning new ones.
    fn intern_names(&mut self, rank_names: &[String]) -> Vec<NameId> {
        let (names, g) = (&mut self.names, &mut self.g);
        rank_names
            .iter()
            .map(|n| {
                // Most names are known by now (the ranks run one program):
                // look them up without copying them.
                if let Some(&id) = names.get(n.as_str()) {
                    return NameId(id);
                }
                let id = g.names.len() as u32;
                names.insert(n.clone(), id);
                g.names.push(n.clone());
                NameId(id)
            })
            .collect()
    }

    /// Appends a rank's tasks and scopes, renumbered, with the releases of
    /// tasks that no edge explains moved to the rank's window start.
    fn append_tasks(&mut self, rg: &Graph, name_map: &[NameId], shift: i64) {
        let g = &mut self.g;
        let (p0, c0, sc0) = (
            g.processors.len() as u32,
            g.collectives.len() as u32,
            g.scopes.len() as u32,
        );
        let explained = explained_by_edges(rg.tasks.len(), &rg.edges);
        for (i, t) in rg.tasks.iter().enumerate() {
            let mut t = t.clone();
            t.name = name_map[t.name.0 as usize];
            t.proc = ProcId(t.proc.0 + p0);
            t.collective = t.collective.map(|c| c + c0);
            if release_moves(explained[i], t.release_ns) {
                t.release_ns = t.release_ns.saturating_add(shift);
            }
            g.tasks.push(t);
            let scope = rg.task_scopes.get(i).copied().flatten();
            g.task_scopes.push(scope.map(|s| ScopeId(s.0 + sc0)));
        }
        g.scopes.extend(rg.scopes.iter().map(|s| Scope {
            name: name_map[s.name.0 as usize],
            parent: s.parent.map(|p| ScopeId(p.0 + sc0)),
            ..s.clone()
        }));
    }
}

/// Whether merging moves a task's release (`release_ns`, as the rank had
/// it) by the rank's shift onto the job timeline: tasks that no edge
/// explains start at a fixed offset from the rank's window start, which
/// then sits at the shift, and so do tasks released after it. Other tasks
/// keep a release at or below 0: their dependencies place them. Merging
/// and [`JobGraph::rank_graph`], which undoes it, both ask this.
pub(super) fn release_moves(explained: bool, release_ns: i64) -> bool {
    !explained || release_ns > 0
}

/// Appends one of rank graph `rg`'s runtime dependencies, renumbered (its
/// tasks from `t0`, its processors from `p0`).
fn push_runtime_dep(out: &mut Vec<RuntimeDep>, rg: &Graph, d: &RuntimeDep, t0: u32, p0: u32) {
    let task = TaskId(d.task.0 + t0);
    let dep = |target| RuntimeDep {
        task,
        target,
        latency_ns: d.latency_ns,
        inferred: d.inferred,
    };
    match d.target {
        WaitTarget::StreamTail(s) => out.push(dep(WaitTarget::StreamTail(ProcId(s.0 + p0)))),
        WaitTarget::Task(on) => out.push(dep(WaitTarget::Task(TaskId(on.0 + t0)))),
        WaitTarget::DeviceTail(device) => {
            // Device numbers repeat across ranks (every host has a device
            // 0), so a device-wide wait becomes a wait on each of this
            // rank's streams of that device, which the scheduler resolves
            // the same way.
            let streams: Vec<ProcId> = rg
                .processors
                .iter()
                .enumerate()
                .filter(
                    |(_, pr)| matches!(pr.kind, ProcKind::Stream { device: d, .. } if d == device),
                )
                .map(|(i, _)| ProcId(i as u32 + p0))
                .collect();
            if streams.is_empty() {
                // No stream on that device: as in the rank's own replay,
                // the wait resolves to nothing.
                out.push(dep(WaitTarget::DeviceTail(i64::MIN)));
            }
            out.extend(streams.into_iter().map(|s| dep(WaitTarget::StreamTail(s))));
        }
    }
}

/// Makes each matched set a [`Rendezvous`] whose waiting tasks carry their
/// transfer times (measured end minus the last participant's measured
/// start) as durations. Returns them, and a warning when transfers ended
/// before their last participant started.
fn couple(
    job: &mut JobGraph,
    ranks: &[RankGraph],
    measured: &Measured,
    m: &CollectiveMatch,
) -> Option<String> {
    let mut all = Vec::with_capacity(m.sets.len());
    // Transfers whose measured end precedes their last participant's start:
    // how many, and the worst (gap, set label, rank that ended, last rank).
    let mut early = 0usize;
    let mut worst: Option<(i64, &str, u32, u32)> = None;
    for set in &m.sets {
        let tasks: Vec<TaskId> = set
            .members
            .iter()
            .map(|mb| {
                let part = &job.ranks[mb.rank_pos as usize];
                part.task(ranks[mb.rank_pos as usize].comms[mb.comm as usize].task)
            })
            .collect();
        let (last_pos, last_start) = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (i, measured.tasks[t.idx()].start_ns))
            .max_by_key(|&(i, s)| (s, std::cmp::Reverse(i)))
            .unwrap_or((0, 0));
        let rendezvous = Rendezvous {
            tasks,
            kind: match set.rule {
                MatchRule::PointToPoint => RendezvousKind::PointToPoint,
                _ => RendezvousKind::Collective,
            },
        };
        for (i, &t) in rendezvous.tasks.iter().enumerate() {
            if !rendezvous.waits(i) {
                // An eager send keeps its measured duration.
                continue;
            }
            let end = measured.tasks[t.idx()].end_ns;
            let early_by = last_start.saturating_sub(end);
            if early_by > END_BEFORE_START_TOLERANCE_NS {
                early += 1;
                let rank = |k: usize| ranks[set.members[k].rank_pos as usize].rank;
                if worst.is_none_or(|w| early_by > w.0) {
                    worst = Some((early_by, &set.label, rank(i), rank(last_pos)));
                }
            }
            job.set_duration(t, end.saturating_sub(last_start).max(0));
        }
        all.push(rendezvous);
    }
    job.rendezvous = all;
    worst.map(|(gap, label, rank, last)| {
        format!(
            "{early} collective tasks ended before their last participant started (worst: \
             {label}, rank {rank} ended {:.1} us before rank {last} started): wrong matches or \
             clocks that disagree beyond what collective ends could align; their transfer \
             times are taken as 0",
            gap as f64 / 1e3
        )
    })
}

/// Makes every rendezvous that would close a cycle [`RendezvousKind::Uncoupled`],
/// trying them in match order (see `acyclic`): the ranks' own dependencies
/// are kept as built, runtime waits resolved on the measured job times.
/// Returns the warning, if any was uncoupled.
fn uncouple_deadlocks(
    job: &mut JobGraph,
    measured: &Measured,
    m: &CollectiveMatch,
) -> Option<String> {
    let span = |t: TaskId| measured.tasks.get(t.idx()).copied().unwrap_or_default();
    let times = |t: TaskId| (span(t).start_ns, span(t).end_ns);
    let rejected = {
        let (graph, rendezvous) = (&job.graph, &job.rendezvous);
        let tails = StreamTails::new(graph, |t| span(t).start_ns);
        let optional = Optional {
            rendezvous: true,
            ..Optional::default()
        };
        let net = GraphNet::new(
            graph,
            rendezvous,
            |d| tails.targets(graph, d, span(graph.runtime_deps[d].task).start_ns),
            optional,
            &times,
        );
        // `None`: the ranks' graphs have a cycle of their own (not built by
        // `build`); no choice of rendezvous helps, and the replay says so.
        rejected_groups(&net)?
    };
    let first = rejected.first().map(|&grp| ungroup(grp).1)?;
    for &grp in &rejected {
        let r = &mut job.rendezvous[ungroup(grp).1];
        r.kind = RendezvousKind::Uncoupled;
        for t in r.tasks.clone() {
            let s = span(t);
            job.set_duration(t, s.end_ns.saturating_sub(s.start_ns).max(0));
        }
    }
    let label = m.sets.get(first).map_or("?", |s| s.label.as_str());
    Some(format!(
        "{} deadlock the joint replay (first: {label}): a \
         participant waits, through its rank's dependencies, for another's end; {} \
         replayed uncoupled, each task for its measured time",
        counted(
            rejected.len() as u64,
            "matched collective would",
            "matched collectives would"
        ),
        if rejected.len() == 1 {
            "it is"
        } else {
            "they are"
        }
    ))
}
