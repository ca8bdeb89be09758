//! Records of a [`Graph`] and its [`Measured`] times. Task, processor and
//! name ids are written as they are; every id read back is checked
//! against what it indexes, so a damaged file cannot give a graph that
//! panics later.

use std::sync::Arc;

use lumos_graph::{
    Collective, Edge, Graph, Measured, NameId, ProcId, ProcKind, Processor, RuntimeDep, Scope,
    ScopeId, Span, Step, Task, TaskId, WaitTarget,
};
use lumos_trace::{Input, InputDims, InputDimsSet};
use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};

use super::codes::{anchor, anchor_of, dep_kind, dep_kind_of, task_kind, task_kind_of};
use super::Bad;

#[derive(Serialize, Deserialize)]
pub(crate) struct GraphRec {
    names: Vec<String>,
    tasks: Vec<TaskRec>,
    processors: Vec<ProcRec>,
    edges: Vec<EdgeRec>,
    runtime_deps: Vec<DepRec>,
    collectives: Vec<CollRec>,
    steps: Vec<StepRec>,
    scopes: Vec<ScopeRec>,
    task_scopes: Vec<Option<u32>>,
}

#[derive(Serialize, Deserialize)]
struct TaskRec {
    kind: u8,
    name: u32,
    proc: u32,
    duration_ns: i64,
    release_ns: i64,
    collective: Option<u32>,
    correlation: u64,
}

#[derive(Serialize, Deserialize)]
struct ProcRec {
    /// 0: thread (pid, tid); 1: stream (device, stream).
    kind: u8,
    a: i64,
    b: i64,
    /// Task ids as differences from the previous one (mostly small).
    tasks: Vec<i64>,
}

#[derive(Serialize, Deserialize)]
struct EdgeRec {
    from: u32,
    to: u32,
    kind: u8,
    anchor: u8,
    latency_ns: i64,
}

#[derive(Serialize, Deserialize)]
struct DepRec {
    task: u32,
    /// 0: stream tail (processor id); 1: device tail (device); 2: task.
    target: u8,
    value: i64,
    latency_ns: i64,
}

#[derive(Serialize, Deserialize)]
struct CollRec {
    name: String,
    process_group: Option<String>,
    seq: Option<i64>,
    bytes: Option<u64>,
    group_size: Option<u32>,
    elements: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct StepRec {
    name: String,
    first_task: u32,
    lead_ns: i64,
    last_task: u32,
    tail_ns: i64,
    tasks: Vec<i64>,
}

#[derive(Serialize, Deserialize)]
struct ScopeRec {
    name: u32,
    parent: Option<u32>,
    annotation: bool,
    input_dims: Option<Vec<InputRec>>,
    input_type: Option<String>,
}

#[derive(Serialize, Deserialize)]
enum InputRec {
    Tensor(Vec<i64>),
    Other,
}

/// Ids as differences from the previous one, starting from 0.
fn deltas(ids: impl Iterator<Item = u32>) -> Vec<i64> {
    let mut prev = 0i64;
    ids.map(|t| {
        let d = i64::from(t) - prev;
        prev = i64::from(t);
        d
    })
    .collect()
}

/// The inverse of [`deltas`], each id checked to be below `n`.
fn undelta(d: &[i64], n: usize, what: &str) -> Result<Vec<TaskId>, Bad> {
    let mut prev = 0i64;
    d.iter()
        .map(|&x| {
            prev = prev.wrapping_add(x);
            id_below(prev, n, what).map(TaskId)
        })
        .collect()
}

fn id_below(v: i64, n: usize, what: &str) -> Result<u32, Bad> {
    match u32::try_from(v) {
        Ok(x) if (x as usize) < n => Ok(x),
        _ => Err(Bad(format!("{what} {v} out of range (of {n})"))),
    }
}

fn check(v: u32, n: usize, what: &str) -> Result<u32, Bad> {
    id_below(i64::from(v), n, what)
}

impl GraphRec {
    pub(crate) fn of(g: &Graph) -> GraphRec {
        let Graph {
            names,
            tasks,
            processors,
            edges,
            runtime_deps,
            collectives,
            steps,
            scopes,
            task_scopes,
        } = g;
        GraphRec {
            names: names.clone(),
            tasks: tasks.iter().map(task_rec).collect(),
            processors: processors.iter().map(proc_rec).collect(),
            edges: edges.iter().map(edge_rec).collect(),
            runtime_deps: runtime_deps.iter().map(dep_rec).collect(),
            collectives: collectives.iter().map(coll_rec).collect(),
            steps: steps.iter().map(step_rec).collect(),
            scopes: scopes.iter().map(scope_rec).collect(),
            task_scopes: task_scopes.iter().map(|s| s.map(|s| s.0)).collect(),
        }
    }

    pub(crate) fn into_graph(self) -> Result<Graph, Bad> {
        let n = self.tasks.len();
        let (names, procs, colls) = (
            self.names.len(),
            self.processors.len(),
            self.collectives.len(),
        );
        let mut tasks = Vec::with_capacity(n);
        for t in self.tasks {
            tasks.push(Task {
                kind: task_kind_of(t.kind)?,
                name: NameId(check(t.name, names, "name id")?),
                proc: ProcId(check(t.proc, procs, "processor id")?),
                duration_ns: t.duration_ns,
                release_ns: t.release_ns,
                collective: t
                    .collective
                    .map(|c| check(c, colls, "collective id"))
                    .transpose()?,
                correlation: t.correlation,
            });
        }
        let processors = self
            .processors
            .into_iter()
            .map(|p| {
                let kind = match p.kind {
                    0 => ProcKind::Thread { pid: p.a, tid: p.b },
                    1 => ProcKind::Stream {
                        device: p.a,
                        stream: p.b,
                    },
                    k => return Err(Bad(format!("unknown processor kind {k}"))),
                };
                Ok(Processor {
                    kind,
                    tasks: undelta(&p.tasks, n, "task id")?,
                })
            })
            .collect::<Result<Vec<_>, Bad>>()?;
        let task = |v: u32| check(v, n, "task id").map(TaskId);
        let edges = self
            .edges
            .into_iter()
            .map(|e| {
                Ok(Edge {
                    from: task(e.from)?,
                    to: task(e.to)?,
                    kind: dep_kind_of(e.kind)?,
                    anchor: anchor_of(e.anchor)?,
                    latency_ns: e.latency_ns,
                    // Not stored: set from the report's rules on reading.
                    inferred: false,
                })
            })
            .collect::<Result<Vec<_>, Bad>>()?;
        let runtime_deps = self
            .runtime_deps
            .into_iter()
            .map(|d| {
                let target = match d.target {
                    0 => {
                        let p = id_below(d.value, procs, "processor id")?;
                        // The simulator refuses a stream tail on a thread;
                        // refused here, the error names the file.
                        if !processors[p as usize].is_stream() {
                            return Err(Bad(format!(
                                "a runtime dependency waits for processor {p}, which is not a \
                                 GPU stream"
                            )));
                        }
                        WaitTarget::StreamTail(ProcId(p))
                    }
                    1 => WaitTarget::DeviceTail(d.value),
                    2 => WaitTarget::Task(TaskId(id_below(d.value, n, "task id")?)),
                    k => return Err(Bad(format!("unknown wait target {k}"))),
                };
                Ok(RuntimeDep {
                    task: task(d.task)?,
                    target,
                    latency_ns: d.latency_ns,
                    inferred: false,
                })
            })
            .collect::<Result<Vec<_>, Bad>>()?;
        let steps = self
            .steps
            .into_iter()
            .map(|s| {
                // The annotation holds its first and last tasks.
                if s.lead_ns < 0 || s.tail_ns < 0 {
                    return Err(Bad(format!(
                        "step {:?} has a lead of {} ns and a tail of {} ns (its annotation \
                         holds its first and last tasks, so neither is below 0)",
                        s.name, s.lead_ns, s.tail_ns
                    )));
                }
                Ok(Step {
                    name: s.name,
                    first_task: task(s.first_task)?,
                    lead_ns: s.lead_ns,
                    last_task: task(s.last_task)?,
                    tail_ns: s.tail_ns,
                    tasks: undelta(&s.tasks, n, "task id")?,
                })
            })
            .collect::<Result<Vec<_>, Bad>>()?;
        let n_scopes = self.scopes.len();
        let mut shared = InputDimsSet::default();
        let mut types: FxHashSet<Arc<str>> = FxHashSet::default();
        let scopes = self
            .scopes
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                Ok(Scope {
                    name: NameId(check(s.name, names, "name id")?),
                    // A parent comes before its scope (the builder's order):
                    // so a damaged file cannot make the walks up a scope
                    // chain go round forever.
                    parent: s
                        .parent
                        .map(|p| check(p, i, "scope parent (before its scope)").map(ScopeId))
                        .transpose()?,
                    annotation: s.annotation,
                    input_dims: s.input_dims.map(|d| input_dims(&d, &mut shared)),
                    input_type: s.input_type.map(|t| input_type(t, &mut types)),
                })
            })
            .collect::<Result<Vec<_>, Bad>>()?;
        if !self.task_scopes.is_empty() && self.task_scopes.len() != n {
            return Err(Bad("task scopes do not cover the tasks".into()));
        }
        let task_scopes = self
            .task_scopes
            .into_iter()
            .map(|s| {
                s.map(|s| check(s, n_scopes, "scope id").map(ScopeId))
                    .transpose()
            })
            .collect::<Result<Vec<_>, Bad>>()?;
        Ok(Graph {
            names: self.names,
            tasks,
            processors,
            edges,
            runtime_deps,
            collectives: self.collectives.into_iter().map(collective).collect(),
            steps,
            scopes,
            task_scopes,
        })
    }
}

fn task_rec(t: &Task) -> TaskRec {
    let Task {
        kind,
        name,
        proc,
        duration_ns,
        release_ns,
        collective,
        correlation,
    } = *t;
    TaskRec {
        kind: task_kind(kind),
        name: name.0,
        proc: proc.0,
        duration_ns,
        release_ns,
        collective,
        correlation,
    }
}

fn proc_rec(p: &Processor) -> ProcRec {
    let (kind, a, b) = match p.kind {
        ProcKind::Thread { pid, tid } => (0, pid, tid),
        ProcKind::Stream { device, stream } => (1, device, stream),
    };
    ProcRec {
        kind,
        a,
        b,
        tasks: deltas(p.tasks.iter().map(|t| t.0)),
    }
}

fn edge_rec(e: &Edge) -> EdgeRec {
    let Edge {
        from,
        to,
        kind,
        anchor: a,
        latency_ns,
        inferred: _,
    } = *e;
    EdgeRec {
        from: from.0,
        to: to.0,
        kind: dep_kind(kind),
        anchor: anchor(a),
        latency_ns,
    }
}

fn dep_rec(d: &RuntimeDep) -> DepRec {
    let (target, value) = match d.target {
        WaitTarget::StreamTail(p) => (0, i64::from(p.0)),
        WaitTarget::DeviceTail(dev) => (1, dev),
        WaitTarget::Task(t) => (2, i64::from(t.0)),
    };
    DepRec {
        task: d.task.0,
        target,
        value,
        latency_ns: d.latency_ns,
    }
}

fn coll_rec(c: &Collective) -> CollRec {
    let Collective {
        name,
        process_group,
        seq,
        bytes,
        group_size,
        elements,
    } = c;
    CollRec {
        name: name.clone(),
        process_group: process_group.clone(),
        seq: *seq,
        bytes: *bytes,
        group_size: *group_size,
        elements: *elements,
    }
}

fn collective(c: CollRec) -> Collective {
    Collective {
        name: c.name,
        process_group: c.process_group,
        seq: c.seq,
        bytes: c.bytes,
        group_size: c.group_size,
        elements: c.elements,
    }
}

fn step_rec(s: &Step) -> StepRec {
    let Step {
        name,
        first_task,
        lead_ns,
        last_task,
        tail_ns,
        tasks,
    } = s;
    StepRec {
        name: name.clone(),
        first_task: first_task.0,
        lead_ns: *lead_ns,
        last_task: last_task.0,
        tail_ns: *tail_ns,
        tasks: deltas(tasks.iter().map(|t| t.0)),
    }
}

fn scope_rec(s: &Scope) -> ScopeRec {
    let Scope {
        name,
        parent,
        annotation,
        input_dims,
        input_type,
    } = s;
    ScopeRec {
        name: name.0,
        parent: parent.map(|p| p.0),
        annotation: *annotation,
        input_dims: input_dims.as_ref().map(|d| {
            (0..d.len())
                .filter_map(|i| d.get(i))
                .map(|x| match x {
                    Input::Tensor(s) => InputRec::Tensor(s.to_vec()),
                    Input::Other => InputRec::Other,
                })
                .collect()
        }),
        input_type: input_type.as_deref().map(str::to_owned),
    }
}

/// The `Input type` text of a record, one allocation per distinct text
/// (as the reader shares them).
fn input_type(text: String, shared: &mut FxHashSet<Arc<str>>) -> Arc<str> {
    if let Some(seen) = shared.get(text.as_str()) {
        return seen.clone();
    }
    let text: Arc<str> = text.into();
    shared.insert(text.clone());
    text
}

/// The `Input Dims` of a record, one allocation per distinct list (as the
/// reader shares them).
fn input_dims(d: &[InputRec], shared: &mut InputDimsSet) -> InputDims {
    shared.shared(d.iter().map(|x| match x {
        InputRec::Tensor(s) => Input::Tensor(s),
        InputRec::Other => Input::Other,
    }))
}

/// Spans as (start minus the previous start, length): small numbers.
#[derive(Serialize, Deserialize)]
pub(crate) struct SpansRec(Vec<(i64, i64)>);

impl SpansRec {
    pub(crate) fn of(spans: &[Span]) -> SpansRec {
        let mut prev = 0i64;
        SpansRec(
            spans
                .iter()
                .map(|s| {
                    let d = s.start_ns.wrapping_sub(prev);
                    prev = s.start_ns;
                    (d, s.end_ns.wrapping_sub(s.start_ns))
                })
                .collect(),
        )
    }

    /// The spans, each start the sum of the deltas so far (wrapping, as
    /// [`SpansRec::of`] took them); a span that ends before it starts, or
    /// past the clock's range, no trace could have given.
    pub(crate) fn into_spans(self) -> Result<Vec<Span>, Bad> {
        let mut prev = 0i64;
        self.0
            .into_iter()
            .map(|(d, len)| {
                prev = prev.wrapping_add(d);
                match prev.checked_add(len) {
                    Some(end_ns) if len >= 0 => Ok(Span {
                        start_ns: prev,
                        end_ns,
                    }),
                    _ => Err(Bad(format!(
                        "a measured time starts at {prev} ns and lasts {len} ns"
                    ))),
                }
            })
            .collect()
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

#[derive(Serialize, Deserialize)]
pub(crate) struct MeasuredRec {
    origin_ns: i64,
    tasks: SpansRec,
    step_annotations: SpansRec,
    scopes: SpansRec,
}

impl MeasuredRec {
    pub(crate) fn of(m: &Measured) -> MeasuredRec {
        let Measured {
            origin_ns,
            tasks,
            step_annotations,
            scopes,
        } = m;
        MeasuredRec {
            origin_ns: *origin_ns,
            tasks: SpansRec::of(tasks),
            step_annotations: SpansRec::of(step_annotations),
            scopes: SpansRec::of(scopes),
        }
    }

    /// The measured times of `g`, checked to be parallel to it.
    pub(crate) fn into_measured(self, g: &Graph) -> Result<Measured, Bad> {
        if self.tasks.len() != g.tasks.len()
            || self.step_annotations.len() != g.steps.len()
            || self.scopes.len() != g.scopes.len()
        {
            return Err(Bad("measured times are not parallel to the graph".into()));
        }
        Ok(Measured {
            origin_ns: self.origin_ns,
            tasks: self.tasks.into_spans()?,
            step_annotations: self.step_annotations.into_spans()?,
            scopes: self.scopes.into_spans()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(parent: Option<ScopeId>) -> Scope {
        Scope {
            name: NameId(0),
            parent,
            annotation: true,
            input_dims: None,
            input_type: None,
        }
    }

    #[test]
    fn a_scope_whose_parent_does_not_come_first_is_refused() {
        let mut g = Graph {
            names: vec!["a".into()],
            ..Graph::default()
        };
        g.scopes = vec![scope(None), scope(Some(ScopeId(0)))];
        assert!(GraphRec::of(&g).into_graph().is_ok());
        // A cycle (0 -> 1 -> 0) and a scope that is its own parent.
        g.scopes = vec![scope(Some(ScopeId(1))), scope(Some(ScopeId(0)))];
        let e = GraphRec::of(&g).into_graph().unwrap_err();
        assert!(e.0.contains("scope parent"), "{}", e.0);
        g.scopes = vec![scope(Some(ScopeId(0)))];
        assert!(GraphRec::of(&g).into_graph().is_err());
    }
}
