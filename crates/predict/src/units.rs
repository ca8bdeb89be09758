//! Units: the blocks that structure discovery names and graph edits copy.
//!
//! A unit is a run of consecutive CPU tasks on one thread that share their
//! outermost enclosing scope below the step annotation (one top-level
//! operator, with everything it called), together with the GPU tasks those
//! tasks launched. Its *token* is the scope's (or the lone task's) name with
//! digits blanked, so that `layers.3` and `layers.4` read alike.
//!
//! Units are put in one global order by their measured start. The order is
//! *consistent* when, on every thread and stream, the tasks of earlier units
//! come first; graph edits need that, since they rebuild each processor's
//! order from the units.

use lumos_graph::{DepKind, Graph, Measured, NameId, ProcId, ScopeId, TaskId};
use rustc_hash::FxHashMap;

/// One top-level operator (or lone task) on a thread and the GPU work it
/// launched.
#[derive(Debug, Clone)]
pub struct Unit {
    /// The thread.
    pub thread: ProcId,
    /// Its CPU tasks in thread order, then its GPU tasks in id order.
    pub tasks: Vec<TaskId>,
    /// How many of `tasks` are CPU tasks.
    pub cpu_len: usize,
    /// Interned token (see [`Units::tokens`]).
    pub token: u32,
    /// The enclosing scope that defines it, if any.
    pub scope: Option<ScopeId>,
    /// Measured start of its first CPU task (discovery only).
    pub start_ns: i64,
    /// Measured end of its last CPU task (discovery only).
    pub end_ns: i64,
}

impl Unit {
    /// Its CPU tasks.
    pub fn cpu(&self) -> &[TaskId] {
        &self.tasks[..self.cpu_len]
    }
    /// The GPU tasks it launched.
    pub fn gpu(&self) -> &[TaskId] {
        &self.tasks[self.cpu_len..]
    }
}

/// Every unit of a graph, in global order.
#[derive(Debug, Clone, Default)]
pub struct Units {
    /// Units, in global order (by measured start, then thread).
    pub units: Vec<Unit>,
    /// Unit of each task (`u32::MAX` for none: a GPU task on a stream no
    /// unit launched anything onto).
    pub unit_of: Vec<u32>,
    /// Token texts, indexed by [`Unit::token`].
    pub tokens: Vec<String>,
    /// `None` when the global order is consistent with every processor's
    /// order, else why not.
    pub inconsistency: Option<String>,
}

/// The scope right below `scope` among those enclosing task `t` (`None`
/// where `t` is directly inside it).
fn child_below(graph: &Graph, t: TaskId, scope: ScopeId) -> Option<ScopeId> {
    let mut below = None;
    for c in graph.scope_chain(t) {
        if c == scope {
            return below;
        }
        below = Some(c);
    }
    below
}

/// Operators (or lone calls) directly inside an annotation's units, on
/// average, from which it is taken for a wrapper around a pass
/// ([`Units::wrappers`]) rather than one operator among many.
pub(crate) const WRAPPER_CHILDREN: usize = 4;

/// Sentinel for "no unit".
pub const NO_UNIT: u32 = u32::MAX;

/// "No token yet" in [`Units::build`]'s token of each name.
const NO_TOKEN: u32 = u32::MAX;

/// Scope names that mark a transformer layer in annotated traces
/// (`ParallelTransformerLayer`, `model.layers.3`, `GPT2Block`, a
/// `record_function` per layer such as `layer3` or `layer_3`, ...), as
/// names or as tokens (digits blanked to `#`).
pub(crate) fn is_layer_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let numbered = lower.trim_end_matches(|c: char| c.is_ascii_digit() || c == '#');
    let stem = numbered.trim_end_matches(['.', '_', '-', ' ']);
    let layer_n = numbered.len() < lower.len()
        && (stem == "layer"
            || stem == "layers"
            || [".layer", "_layer", " layer"]
                .iter()
                .any(|e| stem.ends_with(e)));
    (layer_n
        || lower.contains("transformerlayer")
        || lower.contains("decoderlayer")
        || lower.contains("encoderlayer")
        || lower.contains(".layers.")
        || lower.contains(".layer.")
        || lower.contains(".h.")
        || lower.ends_with("block"))
        && !lower.starts_with("aten::")
}

/// Whether `name` is a runtime call that waits for every stream of its
/// device (the names the graph builder gives a device-wide wait).
pub(crate) fn is_device_sync_name(name: &str) -> bool {
    matches!(
        name,
        "cudaDeviceSynchronize" | "hipDeviceSynchronize" | "cuCtxSynchronize"
    )
}

/// A name with every run of digits replaced by `#`.
pub(crate) fn token_text(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

impl Units {
    /// Cuts every thread of `graph` into units and orders them.
    pub fn build(graph: &Graph, measured: &Measured) -> Units {
        Units::build_below(graph, measured, &[])
    }

    /// [`Units::build`], with the scopes whose name `wrappers` marks (by
    /// [`NameId`]; a shorter slice marks none past its end) passed over as
    /// the step annotation is: their units are the operators inside them.
    pub fn build_below(graph: &Graph, measured: &Measured, wrappers: &[bool]) -> Units {
        let n = graph.tasks.len();
        let mut units: Vec<Unit> = Vec::new();
        let mut unit_of = vec![NO_UNIT; n];
        let mut token_ids: FxHashMap<String, u32> = FxHashMap::default();
        let mut tokens: Vec<String> = Vec::new();
        let mut intern = |s: String| -> u32 {
            let next = tokens.len() as u32;
            *token_ids.entry(s.clone()).or_insert_with(|| {
                tokens.push(s);
                next
            })
        };
        // Each name's token, made once per name: many units share a
        // name, and making the token allocates.
        let mut token_of_name: Vec<u32> = vec![NO_TOKEN; graph.names.len()];
        let mut token_of = |name: NameId| -> u32 {
            let slot = &mut token_of_name[name.0 as usize];
            if *slot == NO_TOKEN {
                *slot = intern(token_text(&graph.names[name.0 as usize]));
            }
            *slot
        };
        // What each name is, worked out once per name rather than once per
        // task and enclosing scope (`is_layer_name` lowercases the name).
        let (step_name, layer_name): (Vec<bool>, Vec<bool>) = graph
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let wrapper = wrappers.get(i).copied().unwrap_or(false);
                (n.starts_with("ProfilerStep#") || wrapper, is_layer_name(n))
            })
            .unzip();
        // The outermost scope below any step annotation; a layer
        // annotation, where there is one, wins (the outermost of them).
        let key_of = |inner: Option<ScopeId>| -> Option<ScopeId> {
            let (mut key, mut layer) = (None, None);
            for s in std::iter::successors(inner, |s| graph.scopes[s.0 as usize].parent) {
                let name = graph.scopes[s.0 as usize].name.0 as usize;
                if !step_name[name] {
                    key = Some(s);
                }
                if layer_name[name] {
                    layer = Some(s);
                }
            }
            layer.or(key)
        };
        // Each unit's tasks are gathered first and stored once, in a vector
        // of their number: pushed one by one, the vectors grew and moved
        // several times each (5 M of discovery's 144 M instructions on a
        // 100 MB trace). A unit's CPU tasks are a run of its thread's:
        // where the run starts.
        let mut cpu_from: Vec<usize> = Vec::new();
        for (pi, p) in graph.processors.iter().enumerate() {
            if p.is_stream() {
                continue;
            }
            let mut current: Option<(Option<ScopeId>, usize)> = None;
            // Consecutive tasks mostly share their innermost scope.
            let mut last: Option<(Option<ScopeId>, Option<ScopeId>)> = None;
            for (at, &t) in p.tasks.iter().enumerate() {
                let inner = graph.scope_of(t);
                let key = match last {
                    Some((i, k)) if i == inner => k,
                    _ => {
                        let k = key_of(inner);
                        last = Some((inner, k));
                        k
                    }
                };
                let same = matches!(current, Some((Some(k), _)) if key == Some(k));
                if !same {
                    let name = match key {
                        Some(s) => graph.scopes[s.0 as usize].name,
                        None => graph.tasks[t.idx()].name,
                    };
                    units.push(Unit {
                        thread: ProcId(pi as u32),
                        tasks: Vec::new(),
                        cpu_len: 0,
                        token: token_of(name),
                        scope: key,
                        start_ns: measured.tasks[t.idx()].start_ns,
                        end_ns: measured.tasks[t.idx()].end_ns,
                    });
                    current = Some((key, units.len() - 1));
                    cpu_from.push(at);
                }
                let u = units.len() - 1;
                units[u].cpu_len += 1;
                units[u].end_ns = units[u].end_ns.max(measured.tasks[t.idx()].end_ns);
                unit_of[t.idx()] = u as u32;
            }
        }
        // GPU tasks follow their launch call: (unit, task) as found.
        let mut gpu: Vec<(u32, TaskId)> = Vec::new();
        for e in &graph.edges {
            if e.kind == DepKind::Launch && graph.tasks[e.to.idx()].kind.is_gpu() {
                let u = unit_of[e.from.idx()];
                if u != NO_UNIT && unit_of[e.to.idx()] == NO_UNIT {
                    unit_of[e.to.idx()] = u;
                    gpu.push((u, e.to));
                }
            }
        }
        // GPU tasks with no recorded launch go with the task before them
        // on their stream (else the one after).
        for p in graph.processors.iter().filter(|p| p.is_stream()) {
            let mut prev = NO_UNIT;
            let mut orphans: Vec<TaskId> = Vec::new();
            for &t in &p.tasks {
                match unit_of[t.idx()] {
                    NO_UNIT if prev != NO_UNIT => {
                        unit_of[t.idx()] = prev;
                        gpu.push((prev, t));
                    }
                    NO_UNIT => orphans.push(t),
                    u => {
                        prev = u;
                        for o in orphans.drain(..) {
                            unit_of[o.idx()] = u;
                            gpu.push((u, o));
                        }
                    }
                }
            }
        }
        let mut gpu_len = vec![0usize; units.len()];
        for &(u, _) in &gpu {
            gpu_len[u as usize] += 1;
        }
        for ((u, from), gpu_len) in units.iter_mut().zip(cpu_from).zip(gpu_len) {
            let thread = &graph.processors[u.thread.0 as usize].tasks;
            u.tasks = Vec::with_capacity(u.cpu_len + gpu_len);
            u.tasks.extend_from_slice(&thread[from..from + u.cpu_len]);
        }
        for (u, t) in gpu {
            units[u as usize].tasks.push(t);
        }
        for u in &mut units {
            let cpu = u.cpu_len;
            u.tasks[cpu..].sort_unstable();
        }
        // Global order by measured start.
        let mut order: Vec<usize> = (0..units.len()).collect();
        order.sort_by_key(|&u| (units[u].start_ns, units[u].thread, u));
        let mut rank = vec![0u32; units.len()];
        for (k, &u) in order.iter().enumerate() {
            rank[u] = k as u32;
        }
        // Moved into their order, not copied (`order` is a permutation,
        // so each is taken once).
        let mut unordered: Vec<Option<Unit>> = units.into_iter().map(Some).collect();
        let units: Vec<Unit> = order.iter().filter_map(|&u| unordered[u].take()).collect();
        for x in unit_of.iter_mut() {
            if *x != NO_UNIT {
                *x = rank[*x as usize];
            }
        }
        let mut inconsistency = None;
        for p in &graph.processors {
            let mut last = 0u32;
            for &t in &p.tasks {
                let u = unit_of[t.idx()];
                if u == NO_UNIT {
                    continue;
                }
                if u < last {
                    inconsistency = Some(format!(
                        "`{}` runs after work of a later operator on its {} (units out of order)",
                        graph.name(t),
                        if p.is_stream() { "stream" } else { "thread" }
                    ));
                    break;
                }
                last = u;
            }
            if inconsistency.is_some() {
                break;
            }
        }
        Units {
            units,
            unit_of,
            tokens,
            inconsistency,
        }
    }

    /// The annotations (`record_function` scopes, by name) that wrap
    /// whole passes rather than being one operator among many: the units
    /// they make hold, on average, at least [`WRAPPER_CHILDREN`] operators
    /// or lone calls directly inside them, or each exactly one annotation
    /// and nothing else (`## forward ##` around
    /// `DistributedDataParallel.forward`). Operators and layer
    /// annotations never are. Indexed by [`NameId`]; `None` where there
    /// are none.
    pub(crate) fn wrappers(&self, graph: &Graph) -> Option<Vec<bool>> {
        // Per name: units, children in all, and units whose one child is
        // an annotation.
        let mut seen: FxHashMap<NameId, (usize, usize, usize)> = FxHashMap::default();
        for u in &self.units {
            let Some(scope) = u.scope else { continue };
            let wrapping = &graph.scopes[scope.0 as usize];
            let name = wrapping.name;
            if !wrapping.annotation || is_layer_name(&graph.names[name.0 as usize]) {
                continue;
            }
            // The units it would make, as `build_below` cuts them: a run
            // of tasks in one scope right below it, or one lone task.
            let (mut children, mut lone, mut last) = (0, 0, None);
            for &t in u.cpu() {
                match child_below(graph, t, scope) {
                    None => lone += 1,
                    Some(c) if last != Some(c) => {
                        children += 1;
                        last = Some(c);
                    }
                    Some(_) => {}
                }
            }
            let one_annotation = lone == 0
                && children == 1
                && last.is_some_and(|c| graph.scopes[c.0 as usize].annotation);
            let e = seen.entry(name).or_default();
            e.0 += 1;
            e.1 += children + lone;
            e.2 += usize::from(one_annotation);
        }
        let mut out = vec![false; graph.names.len()];
        let mut any = false;
        for (name, (units, children, one)) in seen {
            if children >= WRAPPER_CHILDREN * units || one == units {
                out[name.0 as usize] = true;
                any = true;
            }
        }
        any.then_some(out)
    }

    /// The token text of unit `u`.
    pub fn token(&self, u: usize) -> &str {
        &self.tokens[self.units[u].token as usize]
    }

    /// Whether unit `u` is a lone device-wide synchronization call
    /// (`torch.cuda.synchronize()`), in no operator and launching nothing:
    /// after a pipeline transfer (Megatron's `batch_p2p_sync`) it belongs
    /// to the transfer, so that a copied transfer brings the wait with it.
    pub(crate) fn is_bare_device_sync(&self, u: usize) -> bool {
        let unit = &self.units[u];
        unit.scope.is_none()
            && unit.cpu_len == 1
            && unit.gpu().is_empty()
            && is_device_sync_name(self.token(u))
    }

    /// Whether unit `u` is a lone `cudaStreamWaitEvent` call, in no
    /// operator and launching nothing: after a pipeline transfer it is the
    /// compute stream waiting for it, and it belongs to the transfer.
    pub(crate) fn is_bare_wait(&self, u: usize) -> bool {
        let unit = &self.units[u];
        unit.scope.is_none() && unit.gpu().is_empty() && self.token(u).contains("StreamWaitEvent")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_blank_digits_and_layer_names_are_recognized() {
        assert_eq!(token_text("model.layers.12.mlp"), "model.layers.#.mlp");
        assert_eq!(token_text("ProfilerStep#3"), "ProfilerStep##");
        assert!(is_layer_name("ParallelTransformerLayer"));
        assert!(is_layer_name("model.layers.3"));
        assert!(is_layer_name("GPT2Block"));
        assert!(!is_layer_name("aten::layer_norm"));
        for name in [
            "layer3",
            "layer#",
            "Layer_12",
            "decoder_layer 4",
            "layers.#",
        ] {
            assert!(is_layer_name(name), "{name}");
        }
        for name in ["layer", "layer_norm", "player1", "multilayer2x"] {
            assert!(!is_layer_name(name), "{name}");
        }
        assert!(!is_layer_name(
            "LinearWithGradAccumulationAndAsyncCommunication"
        ));
    }
}
