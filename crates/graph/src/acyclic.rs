//! Keeping the dependency network acyclic.
//!
//! A measured run has no cycles, but a trace with dropped events or repeated
//! correlation ids makes the builder's rules pair the wrong tasks (a launch
//! with a later call, a wait with work that ran after it), and a cycle makes
//! the replay stall. So every dependency that is found or inferred, rather
//! than given by processor order or a launch, is *optional*: it is kept only
//! if it closes no cycle with what is already kept.
//!
//! The check runs once, over the finished graph: a Kahn pass over every arc,
//! linear in tasks and edges, which is all a consistent trace costs. Only
//! when it finds a cycle does the repair run: a topological order of the
//! mandatory arcs (chains per processor, launches from CPU to GPU, which
//! cannot form a cycle), then the optional ones added group by group in a
//! fixed order, each through the incremental order maintenance of Pearce and
//! Kelly ("A dynamic topological sort algorithm for directed acyclic
//! graphs", 2006): an arc that agrees with the order costs O(1), one against
//! it searches only the tasks ordered between its ends, and one that would
//! close a cycle is left out, with the rest of its group.
//!
//! The network is finer than the task graph where the replay is: a blocking
//! call issues (and launches) before it waits, so it has an issue node ahead
//! of the task; a rendezvous task ends only after every participant starts,
//! so it has an end node behind the task, and each rendezvous is a node that
//! every participant's start leads to and every waiting participant's end
//! comes from.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::job::Rendezvous;
use crate::model::{Anchor, DepKind, Graph, ProcKind, TaskId, WaitTarget};

/// The group of an arc that is always kept.
pub(crate) const BASE: u64 = u64::MAX;
const NONE: u32 = u32::MAX;

/// Which optional group an arc belongs to, in the order groups are tried:
/// the phase, then the index within it.
pub(crate) fn group(phase: u8, index: usize) -> u64 {
    ((phase as u64) << 40) | index as u64
}

/// The phase and index of a group made by [`group`].
pub(crate) fn ungroup(g: u64) -> (u8, usize) {
    ((g >> 40) as u8, (g & ((1 << 40) - 1)) as usize)
}

/// A directed network given by its arcs.
pub(crate) trait Arcs {
    /// Number of nodes; arcs join nodes below it.
    fn nodes(&self) -> usize;
    /// Calls `f(from, to, group)` for every arc, in the same order each time;
    /// `group` is [`BASE`] for arcs that are always kept.
    fn each(&self, f: impl FnMut(u32, u32, u64));
    /// Where a node sits in measured time: the repair orders the mandatory
    /// arcs by it, so that optional arcs that agree with the measurement
    /// are cheap to add.
    fn key(&self, node: u32) -> i64;
    /// A rank per node that, if every arc goes from a lower rank to a
    /// higher one, proves the network acyclic without the full check (see
    /// [`ranks_increase`]). `None`, the default, where a node has none.
    fn rank(&self, _node: u32) -> Option<(i64, u64)> {
        None
    }
    /// Whether [`Arcs::rank`] is worth trying: false skips the walk.
    fn ranked(&self) -> bool {
        false
    }
}

/// Whether every arc of `a` joins two ranked nodes, the lower rank first:
/// then no path can come back to where it started. One walk over the arcs,
/// where the full check (a Kahn pass) needs a copy of them, its own
/// adjacency lists and a walk in random order.
fn ranks_increase(a: &impl Arcs) -> bool {
    if !a.ranked() {
        return false;
    }
    let mut increasing = true;
    a.each(|f, t, _| {
        if increasing {
            increasing = matches!((a.rank(f), a.rank(t)), (Some(x), Some(y)) if x < y);
        }
    });
    increasing
}

/// Out-arcs of every node, compressed.
struct Csr {
    off: Vec<u32>,
    to: Vec<u32>,
}

impl Csr {
    fn of(a: &impl Arcs) -> (Csr, Vec<u32>) {
        let n = a.nodes();
        // One walk over the arcs (the graph's own lists), then counting
        // passes over a flat copy, which are cheaper than a second walk.
        let mut arcs: Vec<(u32, u32)> = Vec::new();
        a.each(|f, t, _| arcs.push((f, t)));
        let mut off = vec![0u32; n + 1];
        let mut indeg = vec![0u32; n];
        for &(f, t) in &arcs {
            off[f as usize + 1] += 1;
            indeg[t as usize] += 1;
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        let mut to = vec![0u32; arcs.len()];
        // Fill with off[f] as the cursor, then shift back by one.
        for &(f, t) in &arcs {
            let c = &mut off[f as usize];
            to[*c as usize] = t;
            *c += 1;
        }
        off.copy_within(0..n, 1);
        off[0] = 0;
        (Csr { off, to }, indeg)
    }
}

/// How many of the nodes below `counted` no topological order reaches: 0
/// when the network is acyclic.
pub(crate) fn left_in_cycles(a: &impl Arcs, counted: usize) -> usize {
    if ranks_increase(a) {
        return 0;
    }
    let (csr, mut indeg) = Csr::of(a);
    let mut ready: Vec<u32> = (0..indeg.len() as u32)
        .filter(|&i| indeg[i as usize] == 0)
        .collect();
    let mut reached = 0;
    while let Some(v) = ready.pop() {
        reached += usize::from((v as usize) < counted);
        for &w in &csr.to[csr.off[v as usize] as usize..csr.off[v as usize + 1] as usize] {
            indeg[w as usize] -= 1;
            if indeg[w as usize] == 0 {
                ready.push(w);
            }
        }
    }
    counted.min(indeg.len()) - reached
}

/// The optional groups to leave out so that the rest is acyclic, in group
/// order: each group is kept unless one of its arcs would close a cycle with
/// the mandatory arcs and the groups kept before it. `None` when the
/// mandatory arcs alone form a cycle (no choice of groups helps).
pub(crate) fn rejected_groups(a: &impl Arcs) -> Option<Vec<u64>> {
    if left_in_cycles(a, a.nodes()) == 0 {
        return Some(Vec::new());
    }
    let mut arcs: Vec<(u32, u32, u64)> = Vec::new();
    a.each(|f, t, g| arcs.push((f, t, g)));
    let mut dag = Dag::new(a.nodes(), &arcs);
    if !dag.order_base(a) {
        return None;
    }
    let mut optional: Vec<u32> = (0..arcs.len() as u32)
        .filter(|&i| arcs[i as usize].2 != BASE)
        .collect();
    optional.sort_by_key(|&i| arcs[i as usize].2);
    let mut rejected = Vec::new();
    let mut k = 0;
    while k < optional.len() {
        let g = arcs[optional[k] as usize].2;
        let end = k + optional[k..]
            .iter()
            .position(|&i| arcs[i as usize].2 != g)
            .unwrap_or(optional.len() - k);
        let members = &optional[k..end];
        if let Some(bad) = members.iter().position(|&i| !dag.try_add(i)) {
            // Removing arcs keeps the order topological: no undo needed.
            for &i in &members[..bad] {
                dag.live[i as usize] = false;
            }
            rejected.push(g);
        }
        k = end;
    }
    Some(rejected)
}

/// A network whose live arcs are acyclic, with a topological order kept up
/// to date as arcs are added (Pearce-Kelly).
struct Dag<'a> {
    arcs: &'a [(u32, u32, u64)],
    live: Vec<bool>,
    out_off: Vec<u32>,
    out: Vec<u32>,
    in_off: Vec<u32>,
    inn: Vec<u32>,
    /// Position of each node in the order.
    ord: Vec<u32>,
    /// Visit marks: a node is marked in a search when its mark equals the
    /// search's epoch, so nothing is cleared between searches.
    mark: Vec<u32>,
    epoch: u32,
    stack: Vec<u32>,
}

impl<'a> Dag<'a> {
    fn new(n: usize, arcs: &'a [(u32, u32, u64)]) -> Self {
        let index = |key: fn(&(u32, u32, u64)) -> u32| {
            let mut off = vec![0u32; n + 1];
            for a in arcs {
                off[key(a) as usize + 1] += 1;
            }
            for i in 0..n {
                off[i + 1] += off[i];
            }
            let mut cur = off.clone();
            let mut list = vec![0u32; arcs.len()];
            for (i, a) in arcs.iter().enumerate() {
                let c = &mut cur[key(a) as usize];
                list[*c as usize] = i as u32;
                *c += 1;
            }
            (off, list)
        };
        let (out_off, out) = index(|a| a.0);
        let (in_off, inn) = index(|a| a.1);
        Dag {
            arcs,
            live: arcs.iter().map(|a| a.2 == BASE).collect(),
            out_off,
            out,
            in_off,
            inn,
            ord: vec![NONE; n],
            mark: vec![0; n],
            epoch: 0,
            stack: Vec::new(),
        }
    }

    /// Orders the nodes by the live arcs, earliest key first among the
    /// ready ones. False when the live arcs have a cycle.
    fn order_base(&mut self, a: &impl Arcs) -> bool {
        let n = self.ord.len();
        let mut indeg = vec![0u32; n];
        for (i, arc) in self.arcs.iter().enumerate() {
            if self.live[i] {
                indeg[arc.1 as usize] += 1;
            }
        }
        let mut heap: BinaryHeap<Reverse<(i64, u32)>> = (0..n as u32)
            .filter(|&v| indeg[v as usize] == 0)
            .map(|v| Reverse((a.key(v), v)))
            .collect();
        let mut next = 0u32;
        while let Some(Reverse((_, v))) = heap.pop() {
            self.ord[v as usize] = next;
            next += 1;
            for k in self.out_off[v as usize]..self.out_off[v as usize + 1] {
                let i = self.out[k as usize] as usize;
                if !self.live[i] {
                    continue;
                }
                let w = self.arcs[i].1;
                indeg[w as usize] -= 1;
                if indeg[w as usize] == 0 {
                    heap.push(Reverse((a.key(w), w)));
                }
            }
        }
        next as usize == n
    }

    /// Adds arc `i` unless it closes a cycle; keeps the order topological.
    fn try_add(&mut self, i: u32) -> bool {
        let (x, y, _) = self.arcs[i as usize];
        if x == y {
            return false;
        }
        let (ox, oy) = (self.ord[x as usize], self.ord[y as usize]);
        if ox < oy {
            self.live[i as usize] = true;
            return true;
        }
        // Everything y reaches that is ordered no later than x; x among
        // them means a cycle.
        let Some(forward) = self.search(y, ox, true, x) else {
            return false;
        };
        let backward = self
            .search(x, oy, false, NONE)
            .expect("a backward search has no target");
        self.reorder(backward, forward);
        self.live[i as usize] = true;
        true
    }

    /// Depth-first search over live arcs from `start`, forward (out-arcs,
    /// nodes ordered at most `bound`) or backward (in-arcs, nodes ordered
    /// at least `bound`). None when it meets `target`.
    fn search(&mut self, start: u32, bound: u32, forward: bool, target: u32) -> Option<Vec<u32>> {
        self.epoch += 1;
        let epoch = self.epoch;
        let mut seen = vec![start];
        self.mark[start as usize] = epoch;
        self.stack.clear();
        self.stack.push(start);
        while let Some(v) = self.stack.pop() {
            let (off, list) = if forward {
                (&self.out_off, &self.out)
            } else {
                (&self.in_off, &self.inn)
            };
            for k in off[v as usize]..off[v as usize + 1] {
                let i = list[k as usize] as usize;
                if !self.live[i] {
                    continue;
                }
                let w = if forward {
                    self.arcs[i].1
                } else {
                    self.arcs[i].0
                };
                if w == target {
                    return None;
                }
                let o = self.ord[w as usize];
                let inside = if forward { o <= bound } else { o >= bound };
                if inside && self.mark[w as usize] != epoch {
                    self.mark[w as usize] = epoch;
                    seen.push(w);
                    self.stack.push(w);
                }
            }
        }
        Some(seen)
    }

    /// Gives the nodes that reach the new arc's source (`backward`) and the
    /// ones its target reaches (`forward`) the same positions as before,
    /// the first set ahead of the second, each in its old relative order.
    fn reorder(&mut self, mut backward: Vec<u32>, mut forward: Vec<u32>) {
        let ord = &self.ord;
        backward.sort_unstable_by_key(|&v| ord[v as usize]);
        forward.sort_unstable_by_key(|&v| ord[v as usize]);
        let mut slots: Vec<u32> = backward
            .iter()
            .chain(&forward)
            .map(|&v| ord[v as usize])
            .collect();
        slots.sort_unstable();
        for (v, slot) in backward.into_iter().chain(forward).zip(slots) {
            self.ord[v as usize] = slot;
        }
    }
}

/// Which dependencies of a [`Graph`] a [`GraphNet`] may leave out.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Optional {
    /// Edges other than launches and processor order.
    pub edges: bool,
    /// Runtime dependencies.
    pub runtime_deps: bool,
    /// Rendezvous.
    pub rendezvous: bool,
    /// The graph's intra-thread and intra-stream edges join exactly the
    /// neighbours of its processor order (as the builder makes them), so
    /// the network can leave them out: a third fewer arcs to check.
    pub order_edges_repeat_processors: bool,
}

/// Phases of optional groups: the order in which they are tried.
pub(crate) const PHASE_EDGES: u8 = 0;
pub(crate) const PHASE_DEPS: u8 = 1;
/// Inter-thread hand-offs, the most speculative edges, go last.
pub(crate) const PHASE_INTER_THREAD: u8 = 2;
pub(crate) const PHASE_RENDEZVOUS: u8 = 3;

/// The replay's dependency network of a graph (see the module docs):
/// task nodes, issue nodes for blocking calls, end nodes for rendezvous
/// tasks, one node per rendezvous.
pub(crate) struct GraphNet<'g> {
    g: &'g Graph,
    rendezvous: &'g [Rendezvous],
    /// Per task: its issue node, or NONE.
    issue: Vec<u32>,
    /// Per task: its end node, or NONE.
    end: Vec<u32>,
    /// The task of each extra node `n + k` (issue or end node).
    owner: Vec<u32>,
    /// Node of rendezvous `r`: `rv_base + r`.
    rv_base: u32,
    nodes: u32,
    /// The GPU tasks each runtime dependency waits for, in the measured run:
    /// `targets[target_off[d]..target_off[d + 1]]`.
    target_off: Vec<u32>,
    targets: Vec<TaskId>,
    optional: Optional,
    /// Measured start and end of each task, for [`Arcs::key`].
    times: &'g dyn Fn(TaskId) -> (i64, i64),
    /// Whether the cycle check first tries to prove the order by `times`
    /// (see [`GraphNet::ranked_by_times`]).
    ranked: bool,
}

impl<'g> GraphNet<'g> {
    /// The network of `g` (with `rendezvous`), runtime dependencies waiting
    /// for `targets(dep)`, measured times from `times`.
    pub(crate) fn new(
        g: &'g Graph,
        rendezvous: &'g [Rendezvous],
        targets: impl Fn(usize) -> Vec<TaskId>,
        optional: Optional,
        times: &'g dyn Fn(TaskId) -> (i64, i64),
    ) -> Self {
        let n = g.tasks.len();
        let mut next = n as u32;
        let mut owner = Vec::new();
        let mut extra = |slot: &mut u32, t: TaskId| {
            if *slot == NONE {
                *slot = next;
                next += 1;
                owner.push(t.0);
            }
        };
        let mut issue = vec![NONE; n];
        for d in &g.runtime_deps {
            if let Some(slot) = issue.get_mut(d.task.idx()) {
                extra(slot, d.task);
            }
        }
        let mut end = vec![NONE; n];
        for r in rendezvous {
            for &t in &r.tasks {
                if let Some(slot) = end.get_mut(t.idx()) {
                    extra(slot, t);
                }
            }
        }
        let rv_base = next;
        let nodes = next + rendezvous.len() as u32;
        let mut target_off = Vec::with_capacity(g.runtime_deps.len() + 1);
        let mut all = Vec::new();
        target_off.push(0);
        for d in 0..g.runtime_deps.len() {
            all.extend(targets(d).into_iter().filter(|t| t.idx() < n));
            target_off.push(all.len() as u32);
        }
        GraphNet {
            g,
            rendezvous,
            issue,
            end,
            owner,
            rv_base,
            nodes,
            target_off,
            targets: all,
            optional,
            times,
            ranked: false,
        }
    }

    /// Lets the cycle check first try ranks read from the measured times,
    /// for a network whose times are those of one measured run (the
    /// builder's): a task ranks by its start, or by its end where it
    /// blocks (it has an issue node, which ranks by the start); ties are
    /// broken by task number, a blocking task's issue node just before the
    /// task's own, so that a blocking call of zero length still ranks
    /// above its issue; rendezvous and their end nodes have no rank.
    /// In a measured run almost every arc then goes up, and a network
    /// where one does not gets the full check.
    pub(crate) fn ranked_by_times(mut self) -> Self {
        self.ranked = self.rendezvous.is_empty();
        self
    }

    /// Where a task's incoming constraints arrive.
    fn first(&self, t: TaskId) -> u32 {
        match self.issue[t.idx()] {
            NONE => t.0,
            i => i,
        }
    }

    /// What a task's end-anchored successors wait for.
    fn last(&self, t: TaskId) -> u32 {
        match self.end[t.idx()] {
            NONE => t.0,
            e => e,
        }
    }

    fn valid(&self, t: TaskId) -> bool {
        t.idx() < self.g.tasks.len()
    }

    /// The measured GPU tasks runtime dependency `d` waits for.
    pub(crate) fn dep_targets(&self, d: usize) -> &[TaskId] {
        &self.targets[self.target_off[d] as usize..self.target_off[d + 1] as usize]
    }
}

impl Arcs for GraphNet<'_> {
    fn nodes(&self) -> usize {
        self.nodes as usize
    }

    fn each(&self, mut f: impl FnMut(u32, u32, u64)) {
        let g = self.g;
        let n = g.tasks.len() as u32;
        for (k, &t) in self.owner.iter().enumerate() {
            let node = n + k as u32;
            if self.issue[t as usize] == node {
                f(node, t, BASE);
            } else {
                f(t, node, BASE);
            }
        }
        for p in &g.processors {
            for w in p.tasks.windows(2) {
                if self.valid(w[0]) && self.valid(w[1]) {
                    f(self.last(w[0]), self.first(w[1]), BASE);
                }
            }
        }
        for (i, e) in g.edges.iter().enumerate() {
            if !self.valid(e.from) || !self.valid(e.to) {
                continue;
            }
            let from = match e.anchor {
                // A blocking call's launches count from its issue.
                Anchor::Start => self.first(e.from),
                Anchor::End => self.last(e.from),
            };
            let order = matches!(e.kind, DepKind::IntraThread | DepKind::IntraStream);
            if order && self.optional.order_edges_repeat_processors {
                continue;
            }
            let group = match e.kind {
                _ if order => BASE,
                DepKind::Launch => BASE,
                _ if !self.optional.edges => BASE,
                DepKind::InterThread => group(PHASE_INTER_THREAD, i),
                _ => group(PHASE_EDGES, i),
            };
            f(from, self.first(e.to), group);
        }
        for (d, dep) in g.runtime_deps.iter().enumerate() {
            if !self.valid(dep.task) {
                continue;
            }
            let group = match self.optional.runtime_deps {
                true => group(PHASE_DEPS, d),
                false => BASE,
            };
            for &on in self.dep_targets(d) {
                f(self.last(on), dep.task.0, group);
            }
        }
        for (r, rv) in self.rendezvous.iter().enumerate() {
            let node = self.rv_base + r as u32;
            let group = match self.optional.rendezvous {
                true => group(PHASE_RENDEZVOUS, r),
                false => BASE,
            };
            for (pos, &t) in rv.tasks.iter().enumerate() {
                if !self.valid(t) {
                    continue;
                }
                f(t.0, node, group);
                if rv.waits(pos) {
                    f(node, self.last(t), group);
                }
            }
        }
    }

    fn ranked(&self) -> bool {
        self.ranked
    }

    fn rank(&self, node: u32) -> Option<(i64, u64)> {
        let n = self.g.tasks.len() as u32;
        if node < n {
            let (start, end) = (self.times)(TaskId(node));
            let tie = 2 * u64::from(node);
            // A blocking task's node is where its wait ends.
            return Some(match self.issue[node as usize] {
                NONE => (start, tie),
                _ => (end, tie + 1),
            });
        }
        if node >= self.rv_base {
            return None;
        }
        let t = TaskId(self.owner[(node - n) as usize]);
        match self.issue[t.idx()] == node {
            true => Some(((self.times)(t).0, 2 * u64::from(t.0))),
            false => None,
        }
    }

    fn key(&self, node: u32) -> i64 {
        let n = self.g.tasks.len() as u32;
        if node < n {
            return (self.times)(TaskId(node)).0;
        }
        if node >= self.rv_base {
            let r = &self.rendezvous[(node - self.rv_base) as usize];
            return r
                .tasks
                .iter()
                .filter(|t| self.valid(**t))
                .map(|&t| (self.times)(t).0)
                .max()
                .unwrap_or(0);
        }
        let t = TaskId(self.owner[(node - n) as usize]);
        let (start, end) = (self.times)(t);
        if self.issue[t.idx()] == node {
            start
        } else {
            end
        }
    }
}

/// The GPU tasks a runtime dependency of `g` is known to wait for without
/// measured times: the task it names, if any.
pub(crate) fn named_targets(g: &Graph, d: usize) -> Vec<TaskId> {
    match g.runtime_deps[d].target {
        WaitTarget::Task(t) => vec![t],
        _ => Vec::new(),
    }
}

/// Stream tails as the replay resolves them, on measured times: the tail of
/// a stream at time `at` is the last task of the longest prefix of its
/// tasks whose launch calls all started before `at` (tasks without a
/// launch count as launched with their predecessor).
pub(crate) struct StreamTails {
    /// Per processor: the start of its prefix in `latest`, or NONE.
    off: Vec<u32>,
    /// Per stream task, in stream order: the latest launch start up to it.
    latest: Vec<i64>,
}

impl StreamTails {
    /// Reads launches from `g`'s launch edges and launch times from
    /// `start_of`.
    pub(crate) fn new(g: &Graph, start_of: impl Fn(TaskId) -> i64) -> Self {
        let n = g.tasks.len();
        let mut launch = vec![i64::MIN; n];
        for e in &g.edges {
            if e.kind == DepKind::Launch && e.to.idx() < n && e.from.idx() < n {
                launch[e.to.idx()] = launch[e.to.idx()].max(start_of(e.from));
            }
        }
        let mut off = vec![NONE; g.processors.len()];
        let mut latest = Vec::new();
        for (p, proc) in g.processors.iter().enumerate() {
            if !proc.is_stream() {
                continue;
            }
            off[p] = latest.len() as u32;
            let mut acc = i64::MIN;
            for t in &proc.tasks {
                acc = acc.max(launch.get(t.idx()).copied().unwrap_or(i64::MIN));
                latest.push(acc);
            }
        }
        StreamTails { off, latest }
    }

    /// The tail of stream processor `p` when a call issues at `at`.
    pub(crate) fn tail(&self, g: &Graph, p: usize, at: i64) -> Option<TaskId> {
        let off = *self.off.get(p)?;
        if off == NONE {
            return None;
        }
        let tasks = &g.processors[p].tasks;
        let latest = &self.latest[off as usize..off as usize + tasks.len()];
        let k = latest.partition_point(|&l| l < at);
        k.checked_sub(1).map(|i| tasks[i])
    }

    /// What runtime dependency `d` of `g` waits for when its call issues at
    /// `at`: the task it names, or the tail of each stream it names.
    pub(crate) fn targets(&self, g: &Graph, d: usize, at: i64) -> Vec<TaskId> {
        match g.runtime_deps[d].target {
            WaitTarget::Task(t) => vec![t],
            WaitTarget::StreamTail(p) => self.tail(g, p.idx(), at).into_iter().collect(),
            WaitTarget::DeviceTail(device) => g
                .processors
                .iter()
                .enumerate()
                .filter(|(_, pr)| {
                    matches!(pr.kind, ProcKind::Stream { device: dv, .. } if dv == device)
                })
                .filter_map(|(p, _)| self.tail(g, p, at))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A network given as a list of arcs, keyed by node number.
    struct List {
        nodes: usize,
        arcs: Vec<(u32, u32, u64)>,
    }

    impl Arcs for List {
        fn nodes(&self) -> usize {
            self.nodes
        }
        fn each(&self, mut f: impl FnMut(u32, u32, u64)) {
            for &(a, b, g) in &self.arcs {
                f(a, b, g);
            }
        }
        fn key(&self, node: u32) -> i64 {
            // Against the node order, so the repair has to reorder.
            -(node as i64)
        }
    }

    /// The same greedy choice, by brute force: a group is kept when, after
    /// adding it, no node reaches itself.
    fn brute_force(l: &List) -> Vec<u64> {
        let reaches_itself = |arcs: &[(u32, u32)]| {
            (0..l.nodes as u32).any(|s| {
                let mut seen = vec![false; l.nodes];
                let mut stack = vec![s];
                while let Some(v) = stack.pop() {
                    for &(a, b) in arcs {
                        if a == v && !seen[b as usize] {
                            if b == s {
                                return true;
                            }
                            seen[b as usize] = true;
                            stack.push(b);
                        }
                    }
                }
                false
            })
        };
        let mut kept: Vec<(u32, u32)> = l
            .arcs
            .iter()
            .filter(|a| a.2 == BASE)
            .map(|a| (a.0, a.1))
            .collect();
        let mut groups: Vec<u64> = l.arcs.iter().map(|a| a.2).filter(|&g| g != BASE).collect();
        groups.sort_unstable();
        groups.dedup();
        let mut rejected = Vec::new();
        for g in groups {
            let mut with = kept.clone();
            with.extend(l.arcs.iter().filter(|a| a.2 == g).map(|a| (a.0, a.1)));
            if reaches_itself(&with) {
                rejected.push(g);
            } else {
                kept = with;
            }
        }
        rejected
    }

    /// A [`List`] whose nodes rank by their number.
    struct Ranked(List);

    impl Arcs for Ranked {
        fn nodes(&self) -> usize {
            self.0.nodes
        }
        fn each(&self, f: impl FnMut(u32, u32, u64)) {
            self.0.each(f)
        }
        fn key(&self, node: u32) -> i64 {
            self.0.key(node)
        }
        fn rank(&self, node: u32) -> Option<(i64, u64)> {
            Some((0, u64::from(node)))
        }
        fn ranked(&self) -> bool {
            true
        }
    }

    #[test]
    fn ranks_prove_acyclic_only_when_every_arc_goes_up() {
        let up = Ranked(List {
            nodes: 3,
            arcs: vec![(0, 1, BASE), (1, 2, BASE), (0, 2, group(0, 0))],
        });
        assert!(ranks_increase(&up));
        assert_eq!(left_in_cycles(&up, 3), 0);
        // One arc going down: no proof, and the full check decides, both
        // when it closes no cycle and when it does.
        let down = Ranked(List {
            nodes: 3,
            arcs: vec![(0, 1, BASE), (2, 1, BASE)],
        });
        assert!(!ranks_increase(&down));
        assert_eq!(left_in_cycles(&down, 3), 0);
        let cycle = Ranked(List {
            nodes: 3,
            arcs: vec![(0, 1, BASE), (1, 2, BASE), (2, 0, BASE)],
        });
        assert!(!ranks_increase(&cycle));
        assert_eq!(left_in_cycles(&cycle, 3), 3);
        // Without ranks there is nothing to try.
        assert!(!ranks_increase(&up.0));
    }

    /// A kernel (task 0) and a blocking call (task 1) that waits for it,
    /// both ranked by
    /// their measured times `t`: whether the ranks prove it acyclic.
    fn blocking_call(t: &dyn Fn(TaskId) -> (i64, i64)) -> bool {
        use crate::model::{NameId, ProcId, RuntimeDep, Task, TaskKind};
        let task = |proc| Task {
            kind: TaskKind::Runtime,
            name: NameId(0),
            proc: ProcId(proc),
            duration_ns: 0,
            release_ns: 0,
            collective: None,
            correlation: 0,
        };
        let g = Graph {
            tasks: vec![task(0), task(1)],
            runtime_deps: vec![RuntimeDep {
                task: TaskId(1),
                target: WaitTarget::Task(TaskId(0)),
                latency_ns: 0,
                inferred: false,
            }],
            ..Graph::default()
        };
        let net =
            GraphNet::new(&g, &[], |_| vec![TaskId(0)], Optional::default(), t).ranked_by_times();
        ranks_increase(&net)
    }

    #[test]
    fn a_blocking_call_of_zero_length_is_ranked_above_its_issue() {
        // The kernel runs 0-10; the call is issued at 5 and returns at 12,
        // or is issued and returns at 12 (zero length): its issue node and
        // its own node then have the same time, and only the tie-break
        // (issue first) keeps the ranks rising.
        let long = |t: TaskId| if t.0 == 0 { (0, 10) } else { (5, 12) };
        let zero = |t: TaskId| if t.0 == 0 { (0, 10) } else { (12, 12) };
        assert!(blocking_call(&long));
        assert!(blocking_call(&zero));
        // A kernel that starts after the call returned: no proof (the
        // full check decides).
        let late = |t: TaskId| if t.0 == 0 { (20, 30) } else { (12, 12) };
        assert!(!blocking_call(&late));
    }

    #[test]
    fn an_acyclic_network_keeps_everything() {
        let l = List {
            nodes: 3,
            arcs: vec![(0, 1, BASE), (1, 2, group(0, 0)), (0, 2, group(0, 1))],
        };
        assert_eq!(left_in_cycles(&l, 3), 0);
        assert_eq!(rejected_groups(&l), Some(vec![]));
    }

    #[test]
    fn the_arc_that_closes_a_cycle_is_left_out_with_its_group() {
        // 0 -> 1 -> 2 mandatory; 2 -> 0 closes a cycle, and so does the
        // second arc of group (1, 0), whose first arc is fine alone.
        let l = List {
            nodes: 4,
            arcs: vec![
                (0, 1, BASE),
                (1, 2, BASE),
                (2, 0, group(0, 0)),
                (0, 3, group(1, 0)),
                (3, 0, group(1, 0)),
                (2, 3, group(2, 0)),
            ],
        };
        assert_eq!(left_in_cycles(&l, 4), 4);
        assert_eq!(rejected_groups(&l), Some(vec![group(0, 0), group(1, 0)]));
    }

    #[test]
    fn a_cyclic_base_has_no_answer() {
        let l = List {
            nodes: 2,
            arcs: vec![(0, 1, BASE), (1, 0, BASE)],
        };
        assert_eq!(rejected_groups(&l), None);
    }

    #[test]
    fn repair_agrees_with_brute_force() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..300 {
            let nodes = 2 + next(9) as usize;
            let mut arcs = Vec::new();
            // Mandatory arcs go forward in node order: acyclic.
            for _ in 0..next(12) {
                let a = next(nodes as u64 - 1) as u32;
                let b = a + 1 + next(nodes as u64 - 1 - a as u64) as u32;
                arcs.push((a, b, BASE));
            }
            for i in 0..next(14) {
                let g = group((i % 3) as u8, next(4) as usize);
                arcs.push((next(nodes as u64) as u32, next(nodes as u64) as u32, g));
            }
            let l = List { nodes, arcs };
            assert_eq!(rejected_groups(&l), Some(brute_force(&l)), "{:?}", l.arcs);
        }
    }
}
