//! What a replayed timeline carries of its trace beyond tasks and scopes:
//! the GPU-side annotations (`gpu_user_annotation`), each over the
//! replayed GPU tasks it enclosed, and the flows that are not launches
//! (`fwdbwd`), each end on the task or scope it was bound to. Both are
//! placed from what they enclosed or were bound to in the measured run,
//! at those items' written times, never at their own measured times.
//! Predicted timelines carry neither: their tasks are copies, and which
//! copy an annotation or a flow would belong to is not known.

use std::io::Write;

use lumos_graph::{FlowEnd, Graph, Measured, ProcKind, Span, TaskId, TraceAbout};
use lumos_sim::TaskTimes;
use lumos_trace::{Category, FlowPhase, KinetoWriter};
use std::collections::HashMap as FxHashMap;

/// Where flow ids of non-launch flows start above a rank's base: launch
/// flows use correlation ids, which stay far below.
const FLOW_ID_BASE: u64 = 1 << 39;

/// How many earlier items are searched for one enclosing a flow's end that
/// no item starts at.
const ENCLOSING_SEARCH: usize = 64;

/// What the writers below need of the timeline.
pub(super) struct Placed<'a> {
    pub graph: &'a Graph,
    pub measured: &'a Measured,
    pub times: &'a dyn TaskTimes,
    /// Where each processor's events go.
    pub places: &'a [(i64, i64)],
    /// The written clock's origin.
    pub origin_ns: i64,
}

/// Each `gpu_user_annotation` of `about` over the GPU tasks of its stream
/// that it enclosed in the measured run, from the first one's written
/// start to the last one's written end; one that enclosed none is left
/// out. A stream runs one task at a time, so every task between the first
/// and the last lies inside, and annotations nest as they did.
pub(super) fn gpu_annotations<W: Write>(w: &mut KinetoWriter<W>, at: &Placed, about: &TraceAbout) {
    if about.gpu_annotations.is_empty() || at.measured.tasks.len() != at.graph.tasks.len() {
        return;
    }
    let streams: FxHashMap<(i64, i64), usize> = at
        .graph
        .processors
        .iter()
        .enumerate()
        .filter_map(|(k, p)| match p.kind {
            ProcKind::Stream { device, stream } => Some(((device, stream), k)),
            ProcKind::Thread { .. } => None,
        })
        .collect();
    let m = at.measured;
    for a in &about.gpu_annotations {
        let Some(&k) = streams.get(&(a.device, a.stream)) else {
            continue;
        };
        let list = &at.graph.processors[k].tasks;
        let (start, end) = (a.start_ns - m.origin_ns, a.end_ns - m.origin_ns);
        let first = list.partition_point(|t| m.tasks[t.idx()].start_ns < start);
        let past = list.partition_point(|t| m.tasks[t.idx()].end_ns <= end);
        if first >= past {
            continue;
        }
        let s = at.times.start_of(list[first]);
        let e = at.times.end_of(list[past - 1]).max(s);
        let (pid, tid) = at.places[k];
        w.complete(
            Category::GpuUserAnnotation,
            &a.name,
            pid,
            tid,
            at.origin_ns + s,
            e - s,
        );
    }
}

/// An item of a thread a flow can bind to: measured span, written start.
type Item = (Span, i64);

/// Each flow of `about` (those that are not launches) whose both ends
/// bind to an item written on this timeline: the task or scope that
/// started where the end was in the measured run (the outermost of
/// those), else the latest one enclosing it; each end written at its
/// item's written start. `scope_starts` are the scopes' written starts
/// (`None` for those not written). Ids count up from [`FLOW_ID_BASE`]
/// above `base`.
pub(super) fn flows<W: Write>(
    w: &mut KinetoWriter<W>,
    at: &Placed,
    about: &TraceAbout,
    scope_starts: &[Option<i64>],
    base: u64,
) {
    if about.flows.is_empty() || at.measured.tasks.len() != at.graph.tasks.len() {
        return;
    }
    let items = thread_items(at, scope_starts);
    let threads: FxHashMap<(i64, i64), usize> = at
        .graph
        .processors
        .iter()
        .enumerate()
        .filter_map(|(k, p)| match p.kind {
            ProcKind::Thread { pid, tid } => Some(((pid, tid), k)),
            ProcKind::Stream { .. } => None,
        })
        .collect();
    let origin = at.measured.origin_ns;
    let bind = |end: &FlowEnd| -> Option<(usize, i64)> {
        let &k = threads.get(&(end.pid, end.tid))?;
        let written = bind_in(items.get(&k)?, end.ts_ns - origin)?;
        Some((k, written))
    };
    let mut id = base.wrapping_add(FLOW_ID_BASE);
    for f in &about.flows {
        let (Some((kf, sf)), Some((kt, st))) = (bind(&f.from), bind(&f.to)) else {
            continue;
        };
        id = id.wrapping_add(1);
        let (fp, ft) = at.places[kf];
        let (tp, tt) = at.places[kt];
        w.flow(f.kind, FlowPhase::Start, id, fp, ft, at.origin_ns + sf);
        w.flow(f.kind, FlowPhase::End, id, tp, tt, at.origin_ns + st);
    }
}

/// Every written task and scope per thread (by processor index), sorted
/// by measured start, outermost first.
fn thread_items(at: &Placed, scope_starts: &[Option<i64>]) -> FxHashMap<usize, Vec<Item>> {
    let (g, m) = (at.graph, at.measured);
    let mut items: FxHashMap<usize, Vec<Item>> = FxHashMap::new();
    let mut scope_proc: Vec<Option<usize>> = vec![None; g.scopes.len()];
    for (i, t) in g.tasks.iter().enumerate() {
        if !matches!(g.processors[t.proc.idx()].kind, ProcKind::Thread { .. }) {
            continue;
        }
        let id = TaskId(i as u32);
        items
            .entry(t.proc.idx())
            .or_default()
            .push((m.tasks[i], at.times.start_of(id)));
        for s in g.scope_chain(id) {
            scope_proc[s.0 as usize].get_or_insert(t.proc.idx());
        }
    }
    if m.scopes.len() == g.scopes.len() {
        for (s, p) in scope_proc.iter().enumerate() {
            if let (Some(p), Some(Some(start))) = (p, scope_starts.get(s)) {
                items.entry(*p).or_default().push((m.scopes[s], *start));
            }
        }
    }
    for list in items.values_mut() {
        list.sort_by_key(|(s, _)| (s.start_ns, std::cmp::Reverse(s.end_ns)));
    }
    items
}

/// The written start of the item a flow end at measured time `ts` binds
/// to in `list` (see [`flows`]).
fn bind_in(list: &[Item], ts: i64) -> Option<i64> {
    let k = list.partition_point(|(s, _)| s.start_ns < ts);
    if let Some(&(s, w)) = list.get(k) {
        if s.start_ns == ts {
            return Some(w);
        }
    }
    list[..k]
        .iter()
        .rev()
        .take(ENCLOSING_SEARCH)
        .find(|(s, _)| s.end_ns > ts)
        .map(|&(_, w)| w)
}
