//! Where each scope (an operator with children, an annotation) goes on a
//! written timeline. The graph holds no scope times, so a scope spans its
//! CPU tasks at their written times, widened by the self time it measured
//! before its first and after its last task when that is known; then each
//! scope is fitted inside its parent and between its siblings, which is
//! the rule Perfetto's importer applies to one track (no partial
//! overlaps), whatever the replay did to the gaps.

use lumos_graph::{Graph, Measured, ProcId, ProcKind, ScopeId, Span, TaskId};
use lumos_sim::TaskTimes;
use std::collections::BTreeMap;

/// The CPU tasks a scope encloses: their thread, the position of the first
/// on it, and their hull.
#[derive(Debug, Clone, Copy)]
struct Core {
    proc: ProcId,
    first: u32,
    span: Span,
}

/// A scope's child on its thread: another scope or a task.
#[derive(Debug, Clone, Copy)]
enum Child {
    Scope(u32),
    Task(TaskId),
}

/// Each scope's span on the timeline (`None` for a scope without CPU
/// tasks, which is not written), and the order to write them in: every
/// scope before the scopes inside it, so that a reader breaking ties by
/// file order nests them as they were. `pinned` scopes (step annotations)
/// take the span given.
pub(super) fn scope_spans<T: TaskTimes + ?Sized>(
    graph: &Graph,
    times: &T,
    measured: Option<&Measured>,
    pinned: &[(ScopeId, Span)],
) -> (Vec<Option<Span>>, Vec<u32>) {
    let n = graph.scopes.len();
    if n == 0 || graph.task_scopes.len() != graph.tasks.len() {
        return (vec![None; n], Vec::new());
    }
    let mut pos = vec![0u32; graph.tasks.len()];
    for p in &graph.processors {
        for (k, t) in p.tasks.iter().enumerate() {
            pos[t.idx()] = k as u32;
        }
    }
    let cores = hulls(graph, &pos, |t| (times.start_of(t), times.end_of(t)));
    let mut wanted: Vec<Span> = cores
        .iter()
        .map(|c| c.map_or(Span::default(), |c| c.span))
        .collect();
    let measured = measured.filter(|m| m.scopes.len() == n && m.tasks.len() == pos.len());
    if measured.is_none() {
        // No self time known: one ns past the last task, so that a
        // zero-length last task still starts inside its scope (a reader
        // nests a slice that starts before its parent ends).
        for w in &mut wanted {
            w.end_ns = w.end_ns.saturating_add(1);
        }
    }
    if let Some(m) = measured {
        let measured_cores = hulls(graph, &pos, |t| {
            let s = m.tasks[t.idx()];
            (s.start_ns, s.end_ns)
        });
        for (s, (w, mc)) in wanted.iter_mut().zip(&measured_cores).enumerate() {
            let (Some(mc), whole) = (mc, m.scopes[s]) else {
                continue;
            };
            let lead = (mc.span.start_ns - whole.start_ns).max(0);
            let tail = (whole.end_ns - mc.span.end_ns).max(0);
            w.start_ns = w.start_ns.saturating_sub(lead);
            w.end_ns = w.end_ns.saturating_add(tail);
        }
    }
    for &(s, span) in pinned {
        wanted[s.0 as usize] = span;
    }
    let (children, roots) = children(graph, &pos, &cores);
    let mut out = vec![None; n];
    let mut order = Vec::with_capacity(n);
    let whole = Span {
        start_ns: i64::MIN,
        end_ns: i64::MAX,
    };
    let mut todo: Vec<(u32, Span)> = Vec::new();
    for list in roots.values() {
        fit(list, whole, &wanted, &cores, times, &mut out, &mut todo);
        while let Some((s, span)) = todo.pop() {
            order.push(s);
            fit(
                &children[s as usize],
                span,
                &wanted,
                &cores,
                times,
                &mut out,
                &mut todo,
            );
        }
    }
    (out, order)
}

/// The hull of each scope's CPU tasks at the times `at` gives.
fn hulls(graph: &Graph, pos: &[u32], at: impl Fn(TaskId) -> (i64, i64)) -> Vec<Option<Core>> {
    let mut cores: Vec<Option<Core>> = vec![None; graph.scopes.len()];
    for (i, t) in graph.tasks.iter().enumerate() {
        if !matches!(graph.processors[t.proc.idx()].kind, ProcKind::Thread { .. }) {
            continue;
        }
        let id = TaskId(i as u32);
        let (s, e) = at(id);
        for sc in graph.scope_chain(id) {
            let c = cores[sc.0 as usize].get_or_insert(Core {
                proc: t.proc,
                first: pos[i],
                span: Span {
                    start_ns: s,
                    end_ns: e,
                },
            });
            if c.proc == t.proc {
                c.first = c.first.min(pos[i]);
                c.span.start_ns = c.span.start_ns.min(s);
                c.span.end_ns = c.span.end_ns.max(e);
            }
        }
    }
    cores
}

type Children = Vec<Vec<(u32, Child)>>;

/// Each scope's children and each thread's top-level items, in the order
/// the thread runs them.
fn children(
    graph: &Graph,
    pos: &[u32],
    cores: &[Option<Core>],
) -> (Children, BTreeMap<ProcId, Vec<(u32, Child)>>) {
    let mut children: Children = vec![Vec::new(); graph.scopes.len()];
    let mut roots: BTreeMap<ProcId, Vec<(u32, Child)>> = BTreeMap::new();
    for (s, sc) in graph.scopes.iter().enumerate() {
        let Some(c) = cores[s] else { continue };
        let parent = sc
            .parent
            .filter(|p| cores[p.0 as usize].is_some_and(|pc| pc.proc == c.proc));
        let item = (c.first, Child::Scope(s as u32));
        match parent {
            Some(p) => children[p.0 as usize].push(item),
            None => roots.entry(c.proc).or_default().push(item),
        }
    }
    for (i, t) in graph.tasks.iter().enumerate() {
        if !matches!(graph.processors[t.proc.idx()].kind, ProcKind::Thread { .. }) {
            continue;
        }
        let item = (pos[i], Child::Task(TaskId(i as u32)));
        let parent = graph
            .scope_of(TaskId(i as u32))
            .filter(|s| cores[s.0 as usize].is_some_and(|c| c.proc == t.proc));
        match parent {
            Some(s) => children[s.0 as usize].push(item),
            None => roots.entry(t.proc).or_default().push(item),
        }
    }
    // A scope's first task comes at the same position as the scope: the
    // scope goes first, as it encloses the task.
    let key = |&(p, c): &(u32, Child)| (p, matches!(c, Child::Task(_)));
    for list in children.iter_mut().chain(roots.values_mut()) {
        list.sort_by_key(key);
    }
    (children, roots)
}

/// Places the scopes of one list of siblings inside `bound`: each as wide
/// as wanted, but never before the previous sibling's end or after the
/// next one's first task, and never narrower than its own tasks. Placed
/// scopes go to `todo`, for their own children.
///
/// A step annotation is wanted where `lumos_sim::annotation_spans` puts
/// it, the end `lumos replay`'s step times start from; this clip moves it
/// only where that end falls after the next task on its thread starts (a
/// measured annotation that ended during a call, or a replay that starts
/// the next task earlier than the measured gap), and a timeline read
/// back then has a shorter step than the replay reported. Where and why
/// the two rules differ, and what making them one would take, is on
/// `annotation_spans`; `tests/timeline.rs` checks that they agree on the
/// corpus what-ifs.
fn fit<T: TaskTimes + ?Sized>(
    list: &[(u32, Child)],
    bound: Span,
    wanted: &[Span],
    cores: &[Option<Core>],
    times: &T,
    out: &mut [Option<Span>],
    todo: &mut Vec<(u32, Span)>,
) {
    let core_start = |c: &Child| match *c {
        Child::Scope(s) => cores[s as usize].map_or(bound.end_ns, |c| c.span.start_ns),
        Child::Task(t) => times.start_of(t),
    };
    let mut prev_end = bound.start_ns;
    for (k, (_, c)) in list.iter().enumerate() {
        match *c {
            Child::Task(t) => prev_end = prev_end.max(times.end_of(t)),
            Child::Scope(s) => {
                let Some(core) = cores[s as usize] else {
                    continue;
                };
                let next = list.get(k + 1).map_or(bound.end_ns, |(_, c)| core_start(c));
                let w = wanted[s as usize];
                let span = Span {
                    start_ns: w.start_ns.max(prev_end).min(core.span.start_ns),
                    end_ns: w.end_ns.min(next).min(bound.end_ns).max(core.span.end_ns),
                };
                out[s as usize] = Some(span);
                prev_end = span.end_ns;
                todo.push((s, span));
            }
        }
    }
}
