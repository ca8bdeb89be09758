//! Step 4 of discovery: which parallel group each communication task
//! serves. A process group's description (Megatron's `pg_desc`) decides
//! where the trace records one; otherwise the collective's name and where
//! it runs do. The name is what the operator says before what the kernel
//! says: an enclosing `nccl:<collective>` operator names the collective
//! (NCCL runs an all-to-all as `SendRecv` kernels, so the kernel's family
//! alone would call it a pipeline transfer). All-to-alls serve no group the
//! edits model (embedding or expert sharding), point-to-point transfers
//! serve the pipeline, collectives in
//! forward layers the tensor-parallel group, those in the last backward
//! pass the data-parallel gradient reduction, the world group data
//! parallelism, the epilogue's the model-parallel gradient norm.

use lumos_graph::{Graph, NcclOperators, TaskId};
use lumos_models::{CollectiveKind, GroupKind};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{Confidence, Part, PassKind, Role, StepStructure};
use crate::context::{GroupInfo, TraceContext};
use crate::units::{Units, NO_UNIT};

/// Which parallel group a collective serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupClass {
    /// Data parallel: gradient reduction, parameter gathering.
    Data,
    /// Tensor parallel: inside layers.
    Tensor,
    /// Pipeline parallel: send / receive between stages.
    Pipeline,
    /// Megatron's model-parallel group (tensor x pipeline): the gradient
    /// norm.
    ModelParallel,
    /// Something else (expert parallel, the world group used for barriers).
    Other,
}

impl GroupClass {
    /// The Megatron group of this class ([`GroupKind`]); `None` for
    /// [`GroupClass::Other`], which no layout places.
    pub fn kind(self) -> Option<GroupKind> {
        match self {
            GroupClass::Data => Some(GroupKind::DataParallel),
            GroupClass::Tensor => Some(GroupKind::TensorParallel),
            GroupClass::Pipeline => Some(GroupKind::PipelineParallel),
            GroupClass::ModelParallel => Some(GroupKind::ModelParallel),
            GroupClass::Other => None,
        }
    }

    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupClass::Data => "data",
            GroupClass::Tensor => "tensor",
            GroupClass::Pipeline => "pipeline",
            GroupClass::ModelParallel => "model_parallel",
            GroupClass::Other => "other",
        }
    }
}

/// Point-to-point direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum P2p {
    /// A send.
    Send,
    /// A receive.
    Recv,
}

/// One communication task, classified.
#[derive(Debug, Clone, PartialEq)]
pub struct CommInfo {
    /// The task.
    pub task: TaskId,
    /// Its group's role.
    pub class: GroupClass,
    /// How the class was found.
    pub confidence: Confidence,
    /// The rule that decided the class, in words (a low-confidence one is
    /// a guess: predictions that re-time the group say so).
    pub basis: &'static str,
    /// The ring pattern, when it is one the network model knows.
    pub kind: Option<CollectiveKind>,
    /// Send or receive.
    pub p2p: Option<P2p>,
    /// Message bytes, if recorded.
    pub bytes: Option<u64>,
    /// Message elements, if recorded.
    pub elements: Option<u64>,
    /// Global ranks of the group (for send/recv: the pipeline group), when
    /// known.
    pub ranks: Vec<i64>,
    /// Process group name, if recorded.
    pub group: Option<String>,
    /// False when the trace holds no launch for the task: it was launched
    /// before the capture began (a GPU lagging its CPU still runs the
    /// previous step's collectives when the profiler starts), or the
    /// profiler dropped the launch. Nothing in the trace then says which
    /// collective it runs or from where.
    pub launched: bool,
    /// For a task without a launch: the launched collective it was taken
    /// for (`attribute_unlaunched`), whose class, kind, size and group
    /// it carries. `None` for launched tasks and for those that could not
    /// be tied to one (they keep the class their own evidence gives).
    pub taken_for: Option<TaskId>,
}

/// The ring pattern of a collective name.
pub(super) fn collective_kind(name: &str) -> Option<CollectiveKind> {
    let l = name.to_ascii_lowercase().replace('_', "");
    if l.contains("allreduce") {
        Some(CollectiveKind::AllReduce)
    } else if l.contains("allgather") {
        Some(CollectiveKind::AllGather)
    } else if l.contains("reducescatter") {
        Some(CollectiveKind::ReduceScatter)
    } else if matches!(l.as_str(), "send" | "recv" | "isend" | "irecv" | "sendrecv") {
        Some(CollectiveKind::SendRecv)
    } else {
        None
    }
}

/// Whether a collective name is an all-to-all (`all_to_all`,
/// `all_to_allv`, `alltoall_base`): a transfer between every pair of ranks
/// of its group, neither a pipeline send nor a ring the network model knows.
pub(crate) fn is_all_to_all(name: &str) -> bool {
    name.to_ascii_lowercase()
        .replace('_', "")
        .contains("alltoall")
}

/// The collective task `t` runs, by what the program said where that
/// corrects the recorded name: the enclosing `nccl:` operator's when it is
/// an all-to-all (NCCL runs those as `SendRecv` kernels) or when
/// `recorded` names no known collective (a kernel-family name); else
/// `recorded`, so that an operator name the kind table does not know (a
/// coalesced variant, say) never turns a known kind into none.
pub(super) fn program_collective<'g>(
    nccl: &mut NcclOperators<'g>,
    t: TaskId,
    recorded: &'g str,
) -> &'g str {
    match nccl.collective(t) {
        Some(op) if is_all_to_all(op) || collective_kind(recorded).is_none() => op,
        _ => recorded,
    }
}

/// The direction of a point-to-point collective name.
pub(super) fn p2p_of(name: &str) -> Option<P2p> {
    match name.to_ascii_lowercase().as_str() {
        "send" | "isend" => Some(P2p::Send),
        "recv" | "irecv" => Some(P2p::Recv),
        _ => None,
    }
}

/// The group class a process group description (Megatron's `pg_desc`)
/// names, if it names one.
pub(super) fn class_from_desc(desc: &str) -> Option<GroupClass> {
    let d = desc.to_ascii_uppercase();
    if d.contains("EXPERT") || d.contains("EMBEDDING") || d.contains("POSITION") {
        Some(GroupClass::Other)
    } else if d.contains("TENSOR_AND") || d.contains("DATA_PARALLEL") || d.contains("_DP") {
        Some(GroupClass::Data)
    } else if d.contains("TENSOR") {
        Some(GroupClass::Tensor)
    } else if d.contains("PIPELINE") {
        Some(GroupClass::Pipeline)
    } else if d.contains("MODEL_PARALLEL") {
        Some(GroupClass::ModelParallel)
    } else {
        None
    }
}

/// Where a communication task runs, as far as the structural rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Place {
    /// In a layer of a forward pass.
    ForwardLayer,
    /// Anywhere in the last backward pass of its step (gradient buckets).
    LastBackward,
    /// In its step's epilogue.
    Epilogue,
    /// Launched from the hook that runs once a parameter's gradient is
    /// accumulated (`autograd::engine::evaluate_function:
    /// torch::autograd::AccumulateGrad`): where DDP's reducer starts its
    /// bucket all-reduces, found even where no pass is.
    GradientHook,
    /// Anywhere else, or in no unit.
    Other,
}

/// The [`Place`] of a unit of role `role`.
#[cfg(test)]
pub(super) fn place_of(role: Role, steps: &[StepStructure]) -> Place {
    Places::new(steps).of(role)
}

/// [`Place`]s of the roles of `steps`, with each step's count of backward
/// passes found once: a step of many micro-batches has hundreds of
/// passes, and counting them again for each communication task made
/// classification take time in tasks times passes (about 45 ms of
/// `lumos inspect`'s CPU on a 1 GB rank of 256 micro-batches).
pub(super) struct Places<'s> {
    steps: &'s [StepStructure],
    backwards: Vec<u32>,
}

impl<'s> Places<'s> {
    pub(super) fn new(steps: &'s [StepStructure]) -> Places<'s> {
        let backwards = (steps.iter())
            .map(|st| st.backward_passes() as u32)
            .collect();
        Places { steps, backwards }
    }

    /// The place of a unit of role `role`.
    pub(super) fn of(&self, role: Role) -> Place {
        match role {
            Role::Pass { step, pass, part } => {
                let p = &self.steps[step as usize].passes[pass as usize];
                match (p.kind, part) {
                    (PassKind::Forward, Part::Layer(_)) => Place::ForwardLayer,
                    (PassKind::Backward, _)
                        if p.microbatch + 1 == self.backwards[step as usize] =>
                    {
                        Place::LastBackward
                    }
                    _ => Place::Other,
                }
            }
            Role::Epilogue { .. } => Place::Epilogue,
            _ => Place::Other,
        }
    }
}

/// Whether `g`'s CPU side shows a backward pass: an autograd operator
/// (`autograd::engine::evaluate_function: ...`, `MmBackward0`,
/// `AccumulateGrad`) among its CPU tasks or scopes. `None` for a trace
/// without CPU operators (GPU only), which cannot tell.
pub(super) fn shows_backward(g: &Graph) -> Option<bool> {
    let backward = |n: &str| {
        n.contains("Backward") || n.contains("AccumulateGrad") || n.starts_with("autograd::")
    };
    let cpu = g.tasks.iter().filter(|t| {
        matches!(
            t.kind,
            lumos_graph::TaskKind::CpuOp | lumos_graph::TaskKind::Annotation
        )
    });
    let mut any_cpu = false;
    // Names are interned: each is tested once.
    let mut seen = vec![false; g.names.len()];
    for t in cpu.map(|t| t.name).chain(g.scopes.iter().map(|s| s.name)) {
        any_cpu = true;
        let i = t.0 as usize;
        if !seen[i] {
            seen[i] = true;
            if backward(&g.names[i]) {
                return Some(true);
            }
        }
    }
    any_cpu.then_some(false)
}

/// The group class of a collective named `name` (the operator's name where
/// there is one, else the recorded one), in process group `group`
/// (as the trace describes it, if it does), with `group_size` ranks when
/// recorded, running at `place` on a rank of a world of `world` ranks,
/// with the rule that decided, in words; `inference` when the trace's CPU
/// operators show no backward pass ([`shows_backward`]). The rules are
/// tried in order; the first that applies decides.
pub(super) fn classify(
    name: &str,
    group_size: Option<u32>,
    group: Option<&GroupInfo>,
    place: Place,
    world: Option<u32>,
    inference: bool,
) -> (GroupClass, Confidence, &'static str) {
    if let Some(cl) = group
        .and_then(|gr| gr.desc.as_deref())
        .and_then(class_from_desc)
    {
        (cl, Confidence::High, "the process group's description")
    } else if is_all_to_all(name) {
        // Not a pipeline transfer even where NCCL runs it as `SendRecv`
        // kernels, and not tensor parallel in a forward layer (experts).
        (
            GroupClass::Other,
            Confidence::Medium,
            "an all-to-all (by operator or recorded name)",
        )
    } else if p2p_of(name).is_some() || name.eq_ignore_ascii_case("sendrecv") {
        (
            GroupClass::Pipeline,
            Confidence::Medium,
            "a point-to-point transfer, taken for the pipeline's",
        )
    } else if place == Place::ForwardLayer {
        (GroupClass::Tensor, Confidence::Medium, FORWARD_LAYER_BASIS)
    } else if place == Place::LastBackward {
        (GroupClass::Data, Confidence::Medium, LAST_BACKWARD_BASIS)
    } else if place == Place::GradientHook
        && matches!(
            collective_kind(name),
            Some(CollectiveKind::AllReduce | CollectiveKind::ReduceScatter)
        )
    {
        (
            GroupClass::Data,
            Confidence::Medium,
            "a reduction launched from a gradient's accumulation hook (DDP's bucket reducer)",
        )
    } else if inference {
        // What follows takes collectives for gradient reductions or the
        // optimizer's gradient norm; a trace without a backward pass has
        // neither (vLLM's tensor-parallel all-reduces ran in no layer
        // found, in the world group).
        (
            GroupClass::Tensor,
            Confidence::Low,
            "a collective in a trace without a backward pass (inference: no gradients to \
             reduce), taken for tensor parallelism",
        )
    } else if group.is_some_and(|gr| {
        gr.desc.as_deref() == Some("default_pg")
            || (!gr.ranks.is_empty() && gr.ranks.len() as u32 == world.unwrap_or(0))
    }) || group_size.is_some_and(|s| Some(s) == world)
    {
        // The world group: data parallel when nothing else is.
        (GroupClass::Data, Confidence::Low, WORLD_GROUP_BASIS)
    } else if place == Place::Epilogue {
        (GroupClass::ModelParallel, Confidence::Low, EPILOGUE_BASIS)
    } else if collective_kind(name) == Some(CollectiveKind::AllReduce) {
        (GroupClass::Data, Confidence::Low, ALL_REDUCE_BASIS)
    } else {
        (GroupClass::Other, Confidence::Low, NO_RULE_BASIS)
    }
}

const FORWARD_LAYER_BASIS: &str = "a collective inside a forward layer";
const LAST_BACKWARD_BASIS: &str = "a collective in the last backward pass (gradient buckets)";
const WORLD_GROUP_BASIS: &str = "the world group (by its description or size), taken for data \
                                 parallelism since no other rule applies";
const EPILOGUE_BASIS: &str =
    "a collective in the step's epilogue, taken for the model-parallel gradient norm";
const ALL_REDUCE_BASIS: &str = "an all-reduce outside every forward layer and last backward pass \
                                found, taken for a data-parallel gradient reduction by its kind \
                                alone";
const NO_RULE_BASIS: &str = "no rule applies";

/// The basis of a collective taken for tensor parallelism by the other
/// collectives of its process group ([`tensor_groups_whole`]).
pub(crate) const TENSOR_GROUP_BASIS: &str =
    "a collective in a process group whose collectives run inside forward layers (the \
     trace does not describe the group): tensor parallel, as they are";

/// Gives every collective of a process group that runs collectives
/// inside forward layers (tensor parallel by [`classify`]'s rule) the
/// tensor-parallel class, where only the place of the collective decided
/// its own: a group serves one parallelism. Without the group's
/// description (a trace stripped of its `pg_config`), a tensor-parallel
/// group's collectives in the backward passes and outside the layers
/// were classed by where they ran: data parallel in the last backward
/// (so its reduce-scatters read as a distributed optimizer), other in the
/// backwards before. Point-to-point transfers, all-to-alls and the
/// reductions a gradient's accumulation hook launches (DDP's reducer)
/// keep their class: those rules name what the collective is, not only
/// where it ran.
fn tensor_groups_whole(comms: &mut [CommInfo]) {
    let tensor: FxHashSet<String> = comms
        .iter()
        .filter(|c| c.basis == FORWARD_LAYER_BASIS)
        .filter_map(|c| c.group.clone())
        .collect();
    if tensor.is_empty() {
        return;
    }
    for c in comms.iter_mut() {
        let by_place_alone = matches!(
            c.basis,
            LAST_BACKWARD_BASIS
                | WORLD_GROUP_BASIS
                | EPILOGUE_BASIS
                | ALL_REDUCE_BASIS
                | NO_RULE_BASIS
        );
        if by_place_alone && c.group.as_ref().is_some_and(|n| tensor.contains(n)) {
            c.class = GroupClass::Tensor;
            c.confidence = Confidence::Medium;
            c.basis = TENSOR_GROUP_BASIS;
        }
    }
}

/// Classifies every communication task of `g`, whose units have `roles`
/// in `steps`; `backward` is whether `g` shows a backward pass
/// ([`shows_backward`]).
pub(super) fn classify_comms(
    g: &Graph,
    ctx: &TraceContext,
    units: &Units,
    roles: &[Role],
    steps: &[StepStructure],
    backward: Option<bool>,
) -> Vec<CommInfo> {
    // A step's many communication tasks repeat a few names, groups and
    // places: what those decide (lowercased name tests, the group's
    // description) is worked out once per combination.
    let mut classified: FxHashMap<ClassKey, Classified> = FxHashMap::default();
    let places = Places::new(steps);
    let mut nccl = NcclOperators::of(g);
    let mut hooks = GradientHooks::of(g);
    let inference = backward == Some(false);
    let mut out = Vec::new();
    for (i, t) in g.tasks.iter().enumerate() {
        let Some(ci) = t.collective else { continue };
        let (task, c) = (TaskId(i as u32), &g.collectives[ci as usize]);
        let group = c.process_group.as_deref().and_then(|n| ctx.group(n));
        let place = match units.unit_of[i] {
            NO_UNIT => Place::Other,
            u => places.of(roles[u as usize]),
        };
        let place = match place {
            Place::Other if hooks.launched_in(task) => Place::GradientHook,
            p => p,
        };
        let key = (
            c.name.as_str(),
            nccl.collective(task),
            c.group_size,
            c.process_group.as_deref(),
            place,
        );
        let (class, confidence, basis, kind, p2p) = *classified.entry(key).or_insert_with(|| {
            let name = program_collective(&mut nccl, task, &c.name);
            let (class, confidence, basis) =
                classify(name, c.group_size, group, place, ctx.world_size, inference);
            (
                class,
                confidence,
                basis,
                collective_kind(name),
                p2p_of(name),
            )
        });
        out.push(CommInfo {
            task,
            class,
            confidence,
            basis,
            kind,
            p2p,
            bytes: c.bytes,
            elements: c.elements,
            ranks: group.map(|gr| gr.ranks.clone()).unwrap_or_default(),
            group: c.process_group.clone(),
            launched: true,
            taken_for: None,
        });
    }
    tensor_groups_whole(&mut out);
    attribute_unlaunched(g, &mut out);
    out
}

/// The basis of a collective without a launch taken for the launched one
/// at its place in the stream's sequence a whole number of steps away.
pub(crate) const UNLAUNCHED_BASIS: &str =
    "a collective whose launch the trace does not hold (launched \
     before the capture began), taken for the launched one at its place in its stream's \
     sequence of collectives a whole number of steps away (same kernel; the stream runs the \
     same collectives in every step)";

/// Marks the collectives of `comms` whose launch the trace does not hold
/// ([`CommInfo::launched`]) and ties each to a launched one where its
/// stream's collectives repeat step by step ([`CommInfo::taken_for`]).
///
/// A GPU that lags its CPU is still running the previous step's work when
/// the profiler starts: those kernels are in the trace, their launches
/// are not, and neither is what the launch would have said (the
/// collective's name, size and group, the operator it ran under). Left
/// alone they are no group's, and an edit of their group keeps them at
/// their traced durations (the MI300X DDP trace's first three all-reduces
/// stayed at their DP-8 time under `--dp 1`). A training loop runs the
/// same collectives in the same order every step: where every step
/// launches the same number `P` of collectives onto the stream and the
/// launched ones repeat with that period (same kernel, kind, size and
/// group), the k-th collective of the stream is the same collective as
/// the (k + P)-th; an unlaunched one is taken for the nearest launched
/// one a multiple of `P` after it (else before it) with the same kernel,
/// unless the kernel records a collective of its own that differs (another
/// kind, size or group). Where the stream's collectives do not repeat so,
/// or the kernel contradicts its place, the unlaunched ones
/// stay as classified (a prediction that edits a group whose collectives
/// share their stream says it could not re-time them).
pub(super) fn attribute_unlaunched(g: &Graph, comms: &mut [CommInfo]) {
    // `comms` is in task order ([`classify_comms`] walks the tasks): a
    // task's collective is found by binary search, with no table as large
    // as the graph.
    debug_assert!(comms.windows(2).all(|w| w[0].task < w[1].task));
    let index = |comms: &[CommInfo], t: TaskId| comms.binary_search_by_key(&t, |c| c.task).ok();
    let mut launched = vec![false; comms.len()];
    for e in &g.edges {
        if e.kind == lumos_graph::DepKind::Launch {
            if let Some(i) = index(comms, e.to) {
                launched[i] = true;
            }
        }
    }
    for (c, &l) in comms.iter_mut().zip(&launched) {
        c.launched = l;
    }
    if launched.iter().all(|&l| l) {
        return;
    }
    // Per stream holding an unlaunched collective: its collectives in
    // stream order, and how many of them each step launched.
    let mut streams: Vec<u32> = (comms.iter())
        .filter(|c| !c.launched)
        .map(|c| g.task(c.task).proc.0)
        .collect();
    streams.sort_unstable();
    streams.dedup();
    for p in streams {
        let seq: Vec<u32> = g.processors[p as usize]
            .tasks
            .iter()
            .filter_map(|&t| index(comms, t).map(|i| i as u32))
            .collect();
        let Some(period) = step_period(g, comms, &seq) else {
            continue;
        };
        let same = |a: &CommInfo, b: &CommInfo| {
            g.task(a.task).name == g.task(b.task).name
                && (a.kind, a.p2p, a.bytes, &a.ranks, &a.group, a.class)
                    == (b.kind, b.p2p, b.bytes, &b.ranks, &b.group, b.class)
        };
        // The launched collectives must repeat with the period.
        let periodic = (0..seq.len().saturating_sub(period)).all(|k| {
            let (a, b) = (&comms[seq[k] as usize], &comms[seq[k + period] as usize]);
            !(a.launched && b.launched) || same(a, b)
        });
        if !periodic {
            continue;
        }
        for k in 0..seq.len() {
            let c = &comms[seq[k] as usize];
            if c.launched {
                continue;
            }
            let name = g.task(c.task).name;
            let later = (k + period..seq.len()).step_by(period);
            let earlier = (1..=k / period).map(|m| k - m * period);
            let found = (later.chain(earlier))
                .map(|j| seq[j] as usize)
                .find(|&j| comms[j].launched && g.task(comms[j].task).name == name);
            let Some(j) = found else { continue };
            // A kernel that records its own collective (`Collective name`
            // and sizes on the GPU event, as newer profilers write them)
            // is that collective: one the position names but the kernel
            // contradicts is not taken for it.
            if !agrees(c, &comms[j]) {
                continue;
            }
            let like = comms[j].clone();
            let c = &mut comms[seq[k] as usize];
            *c = CommInfo {
                task: c.task,
                basis: UNLAUNCHED_BASIS,
                launched: false,
                taken_for: Some(like.task),
                ..like
            };
        }
    }
}

/// Whether the unlaunched collective `own` is, by what its kernel records
/// of itself, the launched collective `like`. A kernel named by its family
/// alone (no size, no group: what a kernel without a launch usually gives)
/// says nothing the same kernel name does not; one that records its own
/// collective arguments must agree in kind, direction, size and group,
/// each where it records one.
fn agrees(own: &CommInfo, like: &CommInfo) -> bool {
    fn same<T: PartialEq>(own: &Option<T>, like: &Option<T>) -> bool {
        own.is_none() || own == like
    }
    let recorded = own.bytes.is_some() || own.group.is_some();
    !recorded
        || ((own.kind, own.p2p) == (like.kind, like.p2p)
            && same(&own.bytes, &like.bytes)
            && same(&own.group, &like.group))
}

/// How many of the collectives `seq` (indices into `comms`, one stream's
/// in stream order) every step of `g` launched, when every step launched
/// the same number, at least one, and there are two steps or more.
fn step_period(g: &Graph, comms: &[CommInfo], seq: &[u32]) -> Option<usize> {
    if g.steps.len() < 2 {
        return None;
    }
    let on_stream: rustc_hash::FxHashSet<TaskId> =
        seq.iter().map(|&i| comms[i as usize].task).collect();
    let counts: Vec<usize> = (g.steps.iter())
        .map(|st| st.tasks.iter().filter(|t| on_stream.contains(t)).count())
        .collect();
    let p = counts[0];
    (p > 0 && counts.iter().all(|&c| c == p)).then_some(p)
}

/// The scopes of one graph that run inside a gradient accumulation hook
/// ([`Place::GradientHook`]), each scope looked up once.
struct GradientHooks<'g> {
    g: &'g Graph,
    /// The hook's operator name, if the graph has it: most traces without
    /// DDP do not, and then no scope is walked.
    hook: Option<u32>,
    in_hook: FxHashMap<u32, bool>,
}

/// The operator PyTorch records around a parameter's gradient
/// accumulation, whose post-hooks DDP's reducer uses.
const ACCUMULATE_GRAD: &str =
    "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad";

impl<'g> GradientHooks<'g> {
    fn of(g: &'g Graph) -> Self {
        let hook = g.names.iter().position(|n| n == ACCUMULATE_GRAD);
        GradientHooks {
            g,
            hook: hook.map(|h| h as u32),
            in_hook: FxHashMap::default(),
        }
    }

    /// Whether task `t` was launched inside a gradient accumulation hook.
    fn launched_in(&mut self, t: TaskId) -> bool {
        let (g, Some(hook)) = (self.g, self.hook) else {
            return false;
        };
        let Some(scope) = g.scope_of(t) else {
            return false;
        };
        // Cached by the innermost scope: the tasks of one scope share
        // its chain.
        *self.in_hook.entry(scope.0).or_insert_with(|| {
            g.scope_chain(t)
                .any(|s| g.scopes[s.0 as usize].name.0 == hook)
        })
    }
}

/// What decides a communication task's class ([`classify_comms`]): its
/// recorded collective, the enclosing `nccl:` operator's, its group size
/// and process group name, and its place.
type ClassKey<'g> = (
    &'g str,
    Option<&'g str>,
    Option<u32>,
    Option<&'g str>,
    Place,
);

/// What [`classify_comms`] finds for one [`ClassKey`].
type Classified = (
    GroupClass,
    Confidence,
    &'static str,
    Option<CollectiveKind>,
    Option<P2p>,
);
