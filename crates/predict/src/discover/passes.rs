//! Step 3 of discovery: each step cut into its prologue, its passes with
//! their layers, and its epilogue, and the role of every unit.
//!
//! [`passes_and_layers`] runs the sub-steps in order: [`step_threads`]
//! (each step's main thread, backward threads and backward bursts), the
//! layer blocks (the `layers` module), then per step [`cut_step`]: the
//! passes found as chains of the blocks ([`forward_chains`],
//! [`backward_chains`]), their layers ([`core_passes`]), the main-thread
//! units between them ([`between_passes`], [`first_pass_own`]), and
//! whatever is left ([`absorb_leftovers`]). Once the model chunks are
//! known (step 5), [`own_first_passes_per_chunk`] gives the first pass
//! what opens every pass of its chunk.

use lumos_graph::{Graph, ProcId, TaskKind};

use super::comms::p2p_of;
use super::layers::{kernel_pattern, layer_blocks, one_layer_per_pass, thread_tokens, LayerBlocks};
use super::lone::lone_pass_own;
use super::{
    finding, tokens, Confidence, Finding, LayerHint, LayerMethod, P2p, Part, PassKind,
    PassStructure, Role, StepStructure, Structure,
};
use crate::pattern::chains;
use crate::units::Units;

/// What cutting the steps found.
#[derive(Debug, Clone)]
pub(super) struct PassesAndLayers {
    /// The role of every unit.
    pub roles: Vec<Role>,
    /// Every step, cut.
    pub steps: Vec<StepStructure>,
    /// The forward layer block, as unit tokens.
    pub forward_block: Vec<u32>,
    /// The backward layer block, as unit tokens.
    pub backward_block: Vec<u32>,
    /// How the layers were found.
    pub method: LayerMethod,
    /// Whether the passes were cut with the stage's own pass blocks, one
    /// layer each ([`one_layer_per_pass`]).
    pub own_pass_blocks: bool,
}

/// Cuts each step of `g` into prologue, passes (with layers) and epilogue.
/// `hint` holds another stage's layer blocks; a kernel pattern found where
/// no operator block repeats is added to `findings`.
pub(super) fn passes_and_layers(
    g: &Graph,
    units: &Units,
    hint: Option<&LayerHint>,
    findings: &mut Vec<Finding>,
) -> PassesAndLayers {
    let threads = step_threads(g, units);
    let mut blocks = layer_blocks(units, &threads, hint);
    // A pipeline stage of one layer per pass repeats no block inside a
    // pass, so whatever repeats most on its main thread is a whole pass,
    // several forwards back to back taken for one pass of as many layers
    // (GPT tiny at PP 4: "5 layers per pass", order F1, a first stage
    // read as the only one). Its passes are cut with its own pass blocks
    // ([`one_layer_per_pass`]): one layer each, the count the verdict
    // gives. The backward block stays unknown: one stage's passes do not
    // tell the layer from the embedding or the loss, so the stage is
    // still refused alone and offers no blocks to another stage.
    let mut own_passes = false;
    if blocks.per_pass.is_none() && hint.is_none() {
        let (bursts, main) = thread_tokens(units, &threads);
        if let Some((f, b)) =
            one_layer_per_pass(units, &bursts, &main, &between_pass_tokens(g, units))
        {
            blocks = LayerBlocks {
                forward: f,
                backward: b,
                per_pass: Some(1),
                method: LayerMethod::ScopePattern,
            };
            own_passes = true;
        }
    }
    let mut roles = vec![Role::Outside; units.units.len()];
    let steps = threads
        .iter()
        .enumerate()
        .map(|(si, r)| cut_step(g, units, si as u32, r, &blocks, &mut roles))
        .collect();
    if own_passes {
        blocks.backward.clear();
    }
    let mut method = blocks.method;
    if method == LayerMethod::None {
        // No CPU operators to go by: look for the repeated block among
        // the kernels of the busiest stream (report only).
        if let Some(n) = kernel_pattern(g) {
            method = LayerMethod::KernelPattern;
            findings.push(finding(
                "layers (kernel pattern)",
                format!("{n} repeats of a kernel block"),
                Confidence::Low,
                "no repeated operator block; repeated kernel sequence on the busiest stream".into(),
            ));
        }
    }
    PassesAndLayers {
        roles,
        steps,
        forward_block: blocks.forward,
        backward_block: blocks.backward,
        method,
        own_pass_blocks: own_passes,
    }
}

/// One step's threads and units, before its passes are cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StepThreads {
    /// The thread of the step annotation.
    pub main: ProcId,
    /// The threads that ran the step's backward passes.
    pub backward: Vec<ProcId>,
    /// The step's units, in global order.
    pub all: Vec<u32>,
    /// Those on the main thread.
    pub main_units: Vec<u32>,
    /// Runs of backward-thread units with no main-thread unit between
    /// them: one per backward pass.
    pub bursts: Vec<Vec<u32>>,
}

/// The threads, units and backward bursts of every step of `g`.
pub(super) fn step_threads(g: &Graph, units: &Units) -> Vec<StepThreads> {
    // Each step's units, in unit order, from one pass over the units: a
    // pass per step was steps x units (50,000 steps took a minute).
    let mut units_of_step: Vec<Vec<u32>> = vec![Vec::new(); g.steps.len()];
    for (u, step) in step_of_units(g, units).into_iter().enumerate() {
        if let Some(list) = step.and_then(|si| units_of_step.get_mut(si as usize)) {
            list.push(u as u32);
        }
    }
    g.steps
        .iter()
        .zip(units_of_step)
        .map(|(s, all)| {
            let main = g.task(s.first_task).proc;
            let backward = backward_threads(units, main, &all);
            let main_units = all
                .iter()
                .copied()
                .filter(|&u| units.units[u as usize].thread == main)
                .collect();
            let bursts = bursts(units, &all, main, &backward);
            StepThreads {
                main,
                backward,
                all,
                main_units,
                bursts,
            }
        })
        .collect()
}

/// The step of each unit: that of its first CPU task.
fn step_of_units(g: &Graph, units: &Units) -> Vec<Option<u32>> {
    // By task id, not hashed: steps hold most of a trace's tasks. A task
    // in two steps is the later one's.
    let mut step_of_task: Vec<Option<u32>> = vec![None; g.tasks.len()];
    for (si, s) in g.steps.iter().enumerate() {
        for &t in &s.tasks {
            if !g.task(t).kind.is_gpu() {
                step_of_task[t.idx()] = Some(si as u32);
            }
        }
    }
    units
        .units
        .iter()
        .map(|u| u.cpu().first().and_then(|t| step_of_task[t.idx()]))
        .collect()
}

/// The threads other than `main` that ran the backward passes of a step
/// with units `all`: those running autograd's `evaluate_function`, else the
/// other thread that launched the most GPU work.
pub(super) fn backward_threads(units: &Units, main: ProcId, all: &[u32]) -> Vec<ProcId> {
    let mut others: Vec<ProcId> = all
        .iter()
        .map(|&u| units.units[u as usize].thread)
        .filter(|&p| p != main)
        .collect();
    others.sort();
    others.dedup();
    let autograd_thread = |p: ProcId| -> bool {
        all.iter().any(|&u| {
            units.units[u as usize].thread == p
                && units
                    .token(u as usize)
                    .starts_with("autograd::engine::evaluate_function")
        })
    };
    let with_autograd: Vec<ProcId> = others
        .iter()
        .copied()
        .filter(|&p| autograd_thread(p))
        .collect();
    if !with_autograd.is_empty() {
        return with_autograd;
    }
    // No autograd names: the other thread that launched most.
    let mut best: Option<(usize, ProcId)> = None;
    for &p in &others {
        let launches: usize = all
            .iter()
            .filter(|&&u| units.units[u as usize].thread == p)
            .map(|&u| units.units[u as usize].gpu().len())
            .sum();
        if launches > 0 && best.is_none_or(|(b, _)| launches > b) {
            best = Some((launches, p));
        }
    }
    best.map(|(_, p)| vec![p]).unwrap_or_default()
}

/// The runs of `backward`-thread units in `all` that no `main`-thread unit
/// interrupts (units of other threads do not end a burst).
pub(super) fn bursts(
    units: &Units,
    all: &[u32],
    main: ProcId,
    backward: &[ProcId],
) -> Vec<Vec<u32>> {
    let mut bursts: Vec<Vec<u32>> = Vec::new();
    let mut open = false;
    for &u in all {
        let th = units.units[u as usize].thread;
        if backward.contains(&th) {
            match bursts.last_mut() {
                Some(b) if open => b.push(u),
                _ => bursts.push(vec![u]),
            }
            open = true;
        } else if th == main {
            open = false;
        }
    }
    bursts
}

/// A forward pass on the main thread: where each of its layers starts and
/// where its last layer ends, as indices into the step's main-thread
/// units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ForwardChain {
    /// Start of each layer.
    pub starts: Vec<usize>,
    /// Just past the last layer.
    pub end: usize,
}

/// A backward pass in a burst: the burst, where each of its layers starts
/// and where its last layer ends, as indices into the burst.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BackwardChain {
    /// Index of the burst in the step's bursts.
    pub burst: usize,
    /// Start of each layer.
    pub starts: Vec<usize>,
    /// Just past the last layer (with the foreign work right after it).
    pub end: usize,
}

/// Forward passes: chains of the forward block in `main_tokens`, cut into
/// passes of the backward layer count where a chain holds several.
pub(super) fn forward_chains(main_tokens: &[u32], blocks: &LayerBlocks) -> Vec<ForwardChain> {
    let mut out = Vec::new();
    if blocks.forward.is_empty() {
        return out;
    }
    for c in chains(main_tokens, &blocks.forward, false) {
        let per = match blocks.per_pass {
            Some(l) if c.starts.len() > l && c.starts.len() % l == 0 => l,
            _ => c.starts.len(),
        };
        // A pass ends with its last layer's last operator of the block:
        // what follows (sends, receives, data loading of the next pass) is
        // between passes.
        for (grp, ends) in c.starts.chunks(per).zip(c.ends.chunks(per)) {
            out.push(ForwardChain {
                starts: grp.to_vec(),
                end: *ends.last().unwrap_or(&c.end),
            });
        }
    }
    out
}

/// Backward passes: the longest chain of the backward `block` in each
/// burst.
pub(super) fn backward_chains(
    units: &Units,
    bursts: &[Vec<u32>],
    block: &[u32],
) -> Vec<BackwardChain> {
    let mut out = Vec::new();
    if block.is_empty() {
        return out;
    }
    for (bi, b) in bursts.iter().enumerate() {
        if let Some(c) = chains(&tokens(units, b), block, true)
            .into_iter()
            .max_by_key(|c| c.starts.len())
        {
            out.push(BackwardChain {
                burst: bi,
                starts: c.starts,
                end: c.end,
            });
        }
    }
    out
}

/// Cuts step `si` (its threads in `r`) with the layer `blocks`, setting the
/// roles of its units.
fn cut_step(
    g: &Graph,
    units: &Units,
    si: u32,
    r: &StepThreads,
    blocks: &LayerBlocks,
    roles: &mut [Role],
) -> StepStructure {
    let fwd = forward_chains(&tokens(units, &r.main_units), blocks);
    let bwd = backward_chains(units, &r.bursts, &blocks.backward);
    let (mut passes, cores) = core_passes(si, r, &fwd, &bwd, roles);
    let Between {
        mut pre,
        post,
        mut epilogue,
    } = between_passes(g, units, r, roles, &cores);
    // The first pass: only what also precedes every other pass of its kind
    // is its own; the rest is the step's prologue. A step's only forward
    // has no other to compare with: its own work is told by its kind
    // (`lone.rs`).
    let mut prologue: Vec<u32> = if passes.is_empty() {
        std::mem::take(&mut epilogue)
    } else {
        let own = match only_forward_layer(&passes) {
            Some(first_layer) => lone_pass_own(g, units, &pre[0], first_layer, &epilogue),
            None => first_pass_own(units, &passes, &pre),
        };
        let split = pre[0].len() - own;
        pre[0].drain(..split).collect()
    };
    for (pi, p) in passes.iter_mut().enumerate() {
        let mut before = std::mem::take(&mut pre[pi]);
        before.append(&mut p.pre);
        p.pre = before;
        p.post.extend_from_slice(&post[pi]);
        let pass = pi as u32;
        set_roles(
            roles,
            &p.pre,
            Role::Pass {
                step: si,
                pass,
                part: Part::Pre,
            },
        );
        set_roles(
            roles,
            &p.post,
            Role::Pass {
                step: si,
                pass,
                part: Part::Post,
            },
        );
    }
    set_roles(roles, &prologue, Role::Prologue { step: si });
    set_roles(roles, &epilogue, Role::Epilogue { step: si });
    absorb_leftovers(si, &r.all, roles, &mut passes, &mut prologue, &mut epilogue);
    for p in &mut passes {
        p.pre.sort_unstable();
        p.post.sort_unstable();
        for l in &mut p.layers {
            l.sort_unstable();
        }
    }
    prologue.sort_unstable();
    epilogue.sort_unstable();
    let lo = r.all.first().copied().unwrap_or(0);
    let hi = r.all.last().map_or(0, |&u| u + 1);
    StepStructure {
        main: r.main,
        backward: r.backward.clone(),
        prologue,
        passes,
        epilogue,
        units: lo..hi,
    }
}

/// The first layer unit of a training step whose first pass is its only
/// forward pass (one micro-batch traced). An inference step's forward
/// keeps the common rule: no edit copies it.
fn only_forward_layer(passes: &[PassStructure]) -> Option<u32> {
    let first = passes.first().filter(|p| p.kind == PassKind::Forward)?;
    let count = |k: PassKind| passes.iter().filter(|p| p.kind == k).count();
    (count(PassKind::Forward) == 1 && count(PassKind::Backward) >= 1).then_some(())?;
    first.layers.first()?.first().copied()
}

fn set_roles(roles: &mut [Role], us: &[u32], role: Role) {
    for &u in us {
        roles[u as usize] = role;
    }
}

/// The passes of step `si` in time order, built from the chains: a forward
/// pass is its layers, a backward pass its whole burst (before, in and
/// after its layers). Sets the roles of their units and returns, per pass,
/// its core: the first and last unit of its layers (forward) or burst
/// (backward), which the units between passes are placed by.
pub(super) fn core_passes(
    si: u32,
    r: &StepThreads,
    fwd: &[ForwardChain],
    bwd: &[BackwardChain],
    roles: &mut [Role],
) -> (Vec<PassStructure>, Vec<(u32, u32)>) {
    // Passes in time order: (first core unit, is forward, index).
    let mut order: Vec<(u32, bool, usize)> = fwd
        .iter()
        .enumerate()
        .map(|(i, c)| (r.main_units[c.starts[0]], true, i))
        .chain(
            bwd.iter()
                .enumerate()
                .map(|(i, c)| (r.bursts[c.burst][0], false, i)),
        )
        .collect();
    order.sort();
    let mut passes = Vec::with_capacity(order.len());
    let mut cores = Vec::with_capacity(order.len());
    let (mut nf, mut nb) = (0u32, 0u32);
    for (pi, &(_, is_fwd, i)) in order.iter().enumerate() {
        let role = |part: Part| Role::Pass {
            step: si,
            pass: pi as u32,
            part,
        };
        // Each layer runs from its start to the next one's, the last to
        // the chain's end.
        let layers_of = |us: &[u32], starts: &[usize], end: usize| -> Vec<Vec<u32>> {
            (0..starts.len())
                .map(|j| us[starts[j]..starts.get(j + 1).copied().unwrap_or(end)].to_vec())
                .collect()
        };
        let (kind, microbatch, pre, layers, post) = if is_fwd {
            let c = &fwd[i];
            cores.push((r.main_units[c.starts[0]], r.main_units[c.end - 1]));
            nf += 1;
            let layers = layers_of(&r.main_units, &c.starts, c.end);
            (PassKind::Forward, nf - 1, Vec::new(), layers, Vec::new())
        } else {
            let c = &bwd[i];
            let b = &r.bursts[c.burst];
            cores.push((b[0], *b.last().unwrap()));
            nb += 1;
            let layers = layers_of(b, &c.starts, c.end);
            let (pre, post) = (b[..c.starts[0]].to_vec(), b[c.end..].to_vec());
            (PassKind::Backward, nb - 1, pre, layers, post)
        };
        set_roles(roles, &pre, role(Part::Pre));
        for (j, l) in layers.iter().enumerate() {
            set_roles(roles, l, role(Part::Layer(j as u32)));
        }
        set_roles(roles, &post, role(Part::Post));
        passes.push(PassStructure {
            kind,
            microbatch,
            chunk: 0,
            pre,
            layers,
            post,
        });
    }
    (passes, cores)
}

/// Main-thread units outside every pass, shared out between the passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Between {
    /// Per pass, the units before it (after the pass before it).
    pub pre: Vec<Vec<u32>>,
    /// Per pass, the sends after it.
    pub post: Vec<Vec<u32>>,
    /// The units after the last pass.
    pub epilogue: Vec<u32>,
}

/// Shares out the main-thread units of `r` that are in no pass yet, by the
/// pass `cores`: sends right after a pass (each with the stream wait that
/// follows it: the compute stream waiting for the send) end that pass; the
/// rest goes to the pass after them, or after the last pass to the
/// epilogue.
pub(super) fn between_passes(
    g: &Graph,
    units: &Units,
    r: &StepThreads,
    roles: &[Role],
    cores: &[(u32, u32)],
) -> Between {
    let mut gaps: Vec<Vec<u32>> = vec![Vec::new(); cores.len() + 1];
    for &u in &r.main_units {
        if matches!(roles[u as usize], Role::Pass { .. }) {
            continue;
        }
        let k = cores.partition_point(|&(s, _)| s < u);
        gaps[k].push(u);
    }
    let mut out = Between {
        pre: vec![Vec::new(); cores.len()],
        post: vec![Vec::new(); cores.len()],
        epilogue: Vec::new(),
    };
    for (k, gap) in gaps.iter().enumerate() {
        let mut rest = gap.as_slice();
        if k > 0 {
            let mut sends = 0;
            while sends < rest.len() && is_send(g, units, rest[sends]) {
                sends += 1;
                if sends < rest.len() && is_bare_wait(g, units, rest[sends]) {
                    sends += 1;
                }
                // Megatron's `batch_p2p_sync`: the device synchronization
                // right after the transfer belongs to it, so that a copied
                // send brings the wait it caused.
                if sends < rest.len() && units.is_bare_device_sync(rest[sends] as usize) {
                    sends += 1;
                }
            }
            out.post[k - 1].extend_from_slice(&rest[..sends]);
            rest = &rest[sends..];
        }
        if k < cores.len() {
            out.pre[k].extend_from_slice(rest);
        } else {
            out.epilogue.extend_from_slice(rest);
        }
    }
    out
}

/// Whether unit `u` launched a point-to-point send.
fn is_send(g: &Graph, units: &Units, u: u32) -> bool {
    units.units[u as usize].gpu().iter().any(|&t| {
        g.task(t)
            .collective
            .is_some_and(|c| p2p_of(&g.collectives[c as usize].name) == Some(P2p::Send))
    })
}

/// The tokens of the units that run between the passes of a pipeline
/// stage (sorted): its sends and receives, and the lone stream waits and
/// device synchronizations around them. Empty when the trace sends or
/// receives nothing between stages.
fn between_pass_tokens(g: &Graph, units: &Units) -> Vec<u32> {
    let p2p = |u: &crate::units::Unit| {
        u.gpu().iter().any(|&t| {
            g.task(t)
                .collective
                .is_some_and(|c| p2p_of(&g.collectives[c as usize].name).is_some())
        })
    };
    if !units.units.iter().any(p2p) {
        return Vec::new();
    }
    let mut out: Vec<u32> = (0..units.units.len())
        .filter(|&u| {
            p2p(&units.units[u]) || is_bare_wait(g, units, u as u32) || units.is_bare_device_sync(u)
        })
        .map(|u| units.units[u].token)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// A pipeline stage's candidate layer blocks when it runs one layer per
/// pass ([`one_layer_per_pass`]): (forward, backward) tokens.
pub(super) fn one_layer_candidate(g: &Graph, units: &Units) -> Option<(Vec<u32>, Vec<u32>)> {
    let (bursts, main) = thread_tokens(units, &step_threads(g, units));
    one_layer_per_pass(units, &bursts, &main, &between_pass_tokens(g, units))
}

/// Whether unit `u` is a lone `cudaStreamWaitEvent` call, in no operator.
fn is_bare_wait(g: &Graph, units: &Units, u: u32) -> bool {
    let unit = &units.units[u as usize];
    unit.scope.is_none()
        && unit
            .cpu()
            .iter()
            .all(|&t| g.task(t).kind == TaskKind::Runtime && g.name(t).contains("StreamWaitEvent"))
}

/// How many of the units before the first pass (`pre[0]`) are its own:
/// the longest tail of them whose tokens also end what precedes every
/// other pass of its kind and model chunk (data loading, a receive); 0
/// when it is the only such pass. Before the chunks are known every pass
/// is of chunk 0; [`own_first_passes_per_chunk`] asks again once they
/// are.
pub(super) fn first_pass_own(units: &Units, passes: &[PassStructure], pre: &[Vec<u32>]) -> usize {
    let first = &passes[0];
    let common_suffix = |a: &[u32], b: &[u32]| {
        a.iter()
            .rev()
            .zip(b.iter().rev())
            .take_while(|(x, y)| x == y)
            .count()
    };
    let others: Vec<Vec<u32>> = passes
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, p)| (p.kind, p.chunk) == (first.kind, first.chunk))
        .map(|(i, _)| tokens(units, &pre[i]))
        .collect();
    let common = others.iter().fold(None::<Vec<u32>>, |acc, t| match acc {
        None => Some(t.clone()),
        Some(a) => {
            let n = common_suffix(&a, t);
            Some(a[a.len() - n..].to_vec())
        }
    });
    match common {
        Some(c) => common_suffix(&tokens(units, &pre[0]), &c),
        None => 0,
    }
}

/// With the model chunks known (an interleaved stage), gives the first
/// pass of each step of `s` what precedes every other pass of its kind
/// *and chunk* ([`first_pass_own`]), moving it out of the step's
/// prologue, where [`cut_step`] left what the passes of other chunks do
/// not share. The last stage's first forward (chunk 0) opens with its
/// receive alone, while the last chunk's forwards also load the loss
/// head's data after theirs; the first stage's first forward loads data
/// and embeds, which the other chunks' forwards (a receive) do not. Left
/// in the prologue, such a receive has no pass, so a prediction couples
/// it (and the send before it on the stage before) with nothing. Only
/// moves units into the pass: its chunk's passes share at least what all
/// passes of its kind share. The moved units' roles are set; those of
/// other threads that the prologue had taken after a moved one (see
/// [`absorb_leftovers`]) follow it into the pass.
pub(super) fn own_first_passes_per_chunk(s: &mut Structure) {
    for (si, st) in s.steps.iter_mut().enumerate() {
        let Some(first) = st.passes.first() else {
            continue;
        };
        if st.passes.iter().all(|p| p.chunk == first.chunk) {
            continue;
        }
        let main = st.main;
        let on_main = |us: &[u32]| -> Vec<u32> {
            us.iter()
                .copied()
                .filter(|&u| s.units.units[u as usize].thread == main)
                .collect()
        };
        // What [`cut_step`] shared out between the passes: the main
        // thread's units before each (the other threads' are leftovers).
        let in_prologue = on_main(&st.prologue);
        let owned = on_main(&first.pre);
        let mut pre: Vec<Vec<u32>> = st.passes.iter().map(|p| on_main(&p.pre)).collect();
        pre[0] = [in_prologue.as_slice(), owned.as_slice()].concat();
        let own = first_pass_own(&s.units, &st.passes, &pre);
        let Some(more) = own.checked_sub(owned.len()).filter(|&n| n > 0) else {
            continue;
        };
        let from = in_prologue[in_prologue.len() - more];
        let (kept, moved): (Vec<u32>, Vec<u32>) = st.prologue.iter().partition(|&&u| u < from);
        for &u in &moved {
            s.roles[u as usize] = Role::Pass {
                step: si as u32,
                pass: 0,
                part: Part::Pre,
            };
        }
        st.prologue = kept;
        let p = &mut st.passes[0];
        p.pre.extend(moved);
        p.pre.sort_unstable();
    }
}

/// Gives every unit of the step (`all`) still in no role the role of the
/// unit before it (other threads' work, bursts with no layers), and puts
/// it in that pass part, prologue or epilogue.
pub(super) fn absorb_leftovers(
    si: u32,
    all: &[u32],
    roles: &mut [Role],
    passes: &mut [PassStructure],
    prologue: &mut Vec<u32>,
    epilogue: &mut Vec<u32>,
) {
    let mut last = Role::Prologue { step: si };
    for &u in all {
        match roles[u as usize] {
            Role::Outside => {
                roles[u as usize] = last;
                match last {
                    Role::Pass { pass, part, .. } => {
                        let p = &mut passes[pass as usize];
                        match part {
                            Part::Pre => p.pre.push(u),
                            Part::Post => p.post.push(u),
                            Part::Layer(j) => p.layers[j as usize].push(u),
                        }
                    }
                    Role::Epilogue { .. } => epilogue.push(u),
                    _ => prologue.push(u),
                }
            }
            role => last = role,
        }
    }
}
