//! Step 6 of discovery: the report `lumos inspect` and `lumos predict`
//! show. It reads the finished structure and adds its own findings (the
//! pipeline schedule, the layer block, each process group) to those of the
//! earlier steps.

use std::collections::BTreeMap;

use lumos_graph::{Graph, TaskId};
use rustc_hash::FxHashMap;

use super::{
    finding, Confidence, DiscoveredConfig, GroupClass, LayerMethod, P2p, Part, PassKind,
    PassStructure, Role, Structure,
};
use crate::units::NO_UNIT;

/// One line of the discovery report.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// What was looked for.
    pub what: String,
    /// What was found.
    pub value: String,
    /// How sure.
    pub confidence: Confidence,
    /// Why.
    pub evidence: String,
}

/// One parallel group as discovered.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupReport {
    /// Process group name, or `-`.
    pub name: String,
    /// Its role.
    pub class: GroupClass,
    /// Ranks in it, when known.
    pub size: Option<usize>,
    /// Collective tasks in it.
    pub tasks: usize,
    /// Their names (`allreduce`, `send`, ...).
    pub collectives: Vec<String>,
    /// Their bytes, summed over one step.
    pub bytes_per_step: u64,
    /// How the role was found: the strongest evidence among a named
    /// process group's collectives, else the first collective's.
    pub confidence: Confidence,
    /// The rule that found it, in words (that collective's).
    pub basis: &'static str,
}

/// The discovery report, for `lumos inspect` and `lumos predict`.
#[derive(Debug, Clone, PartialEq)]
pub struct StructureReport {
    /// `first`, `middle`, `last` or `only` stage of the pipeline, or
    /// `unknown`.
    pub stage_role: String,
    /// Steps looked at.
    pub steps: usize,
    /// Pass order of the first step (`F1 F2 B1 ...`).
    pub pass_order: String,
    /// Whether that order is the 1F1B order of the discovered stage (the
    /// interleaved 1F1B order when it has virtual stages).
    pub one_f_one_b: Option<bool>,
    /// Layers per pass.
    pub layers_per_pass: Option<u32>,
    /// How layers were found.
    pub layer_method: LayerMethod,
    /// The repeated block (forward), as unit tokens.
    pub layer_block: Vec<String>,
    /// Measured time per phase, summed over steps and divided by steps, ms:
    /// CPU span of the phase's units and GPU busy time of their kernels.
    pub phases: BTreeMap<String, PhaseTime>,
    /// Parallel groups.
    pub groups: Vec<GroupReport>,
    /// The configuration.
    pub config: DiscoveredConfig,
    /// Every finding with its confidence.
    pub findings: Vec<Finding>,
    /// `None` when the graph can be edited structurally (layers,
    /// micro-batches, pipeline); else why not.
    pub structural_edits_blocked: Option<String>,
    /// The structural edits the graph takes all the same when
    /// `structural_edits_blocked` is set (the layers and micro-batches of
    /// a single stage of one micro-batch); empty when none are, or none
    /// are blocked. A reader tells "some possible" from "none" by it,
    /// not by the reason's words.
    pub structural_edits_possible: Vec<&'static str>,
}

/// Time spent in one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseTime {
    /// Sum of the phase's CPU task durations, ms per step.
    pub cpu_ms: f64,
    /// Sum of the phase's GPU task durations, ms per step.
    pub gpu_ms: f64,
}

/// The report that [`Structure::report`] holds until [`report`] has run.
pub(super) fn placeholder() -> StructureReport {
    StructureReport {
        stage_role: String::new(),
        steps: 0,
        pass_order: String::new(),
        one_f_one_b: None,
        layers_per_pass: None,
        layer_method: LayerMethod::None,
        layer_block: Vec::new(),
        phases: BTreeMap::new(),
        groups: Vec::new(),
        config: DiscoveredConfig::default(),
        findings: Vec::new(),
        structural_edits_blocked: None,
        structural_edits_possible: Vec::new(),
    }
}

/// The report of `s` (everything but its report found), ending with
/// `findings`, the earlier steps' findings, and its own.
pub(super) fn report(g: &Graph, s: &Structure, mut findings: Vec<Finding>) -> StructureReport {
    let first = s.steps.first();
    let config = &s.config;
    let one_f_one_b = one_f_one_b(s);
    if let (Some(st), Some(ok)) = (first, one_f_one_b) {
        findings.push(finding(
            "pipeline schedule",
            st.order(),
            if ok {
                Confidence::High
            } else {
                Confidence::Low
            },
            if ok {
                format!(
                    "the {}1F1B order of stage {} of {}",
                    match config.virtual_stages {
                        Some(v) => format!("interleaved ({v} model chunks) "),
                        None => String::new(),
                    },
                    config.stage.unwrap_or(0),
                    config.pp.unwrap_or(1)
                )
            } else {
                "not the 1F1B order of the discovered stage".into()
            },
        ));
    }
    let method = s.layer_method;
    if method != LayerMethod::None && method != LayerMethod::KernelPattern {
        findings.push(finding(
            "layer block",
            format!("{} operators", s.layer_block.len()),
            if method == LayerMethod::Annotation {
                Confidence::High
            } else {
                Confidence::Medium
            },
            match method {
                LayerMethod::Annotation => "scopes named like layers".into(),
                LayerMethod::OtherStage => "the layer block of another stage's trace of the job \
                                            (one layer per pass here)"
                    .into(),
                _ if s.own_pass_blocks => "each forward pass's own work, less the \
                                                     transfers between passes (one layer per \
                                                     pass: on an end stage it also holds the \
                                                     embedding or the loss)"
                    .into(),
                _ => "repeated block of top-level operators (backward bursts, then main thread)"
                    .into(),
            },
        ));
    }
    let groups = groups(g, s);
    for gr in &groups {
        findings.push(finding(
            &format!("process group {}", gr.name),
            gr.class.as_str().into(),
            gr.confidence,
            match gr.confidence {
                Confidence::High => "process group description".into(),
                Confidence::Medium if gr.class == GroupClass::Other => {
                    "all-to-all collectives (by operator or recorded name)".into()
                }
                Confidence::Medium => "point-to-point names or where its collectives run".into(),
                Confidence::Low => format!("weak: {}", gr.basis),
            },
        ));
    }
    StructureReport {
        stage_role: stage_role(s).into(),
        steps: s.steps.len(),
        pass_order: first.map(|st| st.order()).unwrap_or_default(),
        one_f_one_b,
        layers_per_pass: config
            .layers
            .map(|l| l / config.virtual_stages.unwrap_or(1).max(1)),
        layer_method: method,
        layer_block: s
            .layer_block
            .iter()
            .map(|&t| s.units.tokens[t as usize].clone())
            .collect(),
        phases: phases(g, s),
        groups,
        config: config.clone(),
        findings,
        structural_edits_blocked: edits_blocked(s),
        structural_edits_possible: if one_stage_of_one_micro_batch(s) {
            ONE_STAGE_EDITS.to_vec()
        } else {
            Vec::new()
        },
    }
}

/// The stage's place in its pipeline, from the point-to-point work of the
/// first forward pass: a receive before it and a send after it. An
/// interleaved stage receives and sends around most of its chunks, so its
/// place is its index in the pipeline.
pub(super) fn stage_role(s: &Structure) -> &'static str {
    if let (Some(_), Some(stage), Some(pp)) = (s.config.virtual_stages, s.config.stage, s.config.pp)
    {
        return match stage {
            0 => "first",
            s if s + 1 == pp => "last",
            _ => "middle",
        };
    }
    // The point-to-point tasks, looked up by task: every collective of a
    // large trace checked against every GPU task around the pass was
    // quadratic in the trace.
    let key = |t: TaskId, dir: P2p| (t, dir == P2p::Recv);
    let mut p2p: Vec<(TaskId, bool)> = (s.comms.iter())
        .filter_map(|c| Some(key(c.task, c.p2p?)))
        .collect();
    p2p.sort_unstable();
    let is_p2p = |t: TaskId, dir: P2p| p2p.binary_search(&key(t, dir)).is_ok();
    let p2p_in = |p: &PassStructure, dir: P2p, part: Part| -> bool {
        let us: &[u32] = match part {
            Part::Pre => &p.pre,
            _ => &p.post,
        };
        us.iter().any(|&u| {
            s.units.units[u as usize]
                .gpu()
                .iter()
                .any(|&t| is_p2p(t, dir))
        })
    };
    let first_forward = s
        .steps
        .first()
        .and_then(|st| st.passes.iter().find(|p| p.kind == PassKind::Forward));
    match first_forward {
        Some(f) => match (
            p2p_in(f, P2p::Recv, Part::Pre),
            p2p_in(f, P2p::Send, Part::Post),
        ) {
            (false, true) => "first",
            (true, true) => "middle",
            (true, false) => "last",
            (false, false) => "only",
        },
        None => "unknown",
    }
}

/// Whether the first step's pass order is the 1F1B order of the
/// discovered stage (the interleaved one with virtual stages); `None` when the stage, degree or micro-batches are
/// unknown or there are no passes.
pub(super) fn one_f_one_b(s: &Structure) -> Option<bool> {
    let c = &s.config;
    match (s.steps.first(), c.pp, c.stage, c.microbatches) {
        (Some(st), Some(pp), Some(stage), Some(m)) if !st.passes.is_empty() => {
            let v = c.virtual_stages.unwrap_or(1);
            let want: Vec<(PassKind, u32, u32)> = lumos_models::interleaved_one_f_one_b(
                stage as usize,
                pp as usize,
                v as usize,
                m as usize,
            )?
            .into_iter()
            .map(|p| match p.pass {
                lumos_models::Pass::Forward(k) => (PassKind::Forward, k as u32, p.chunk as u32),
                lumos_models::Pass::Backward(k) => (PassKind::Backward, k as u32, p.chunk as u32),
            })
            .collect();
            let got: Vec<(PassKind, u32, u32)> = st
                .passes
                .iter()
                .map(|p| (p.kind, p.microbatch, p.chunk))
                .collect();
            Some(want == got)
        }
        _ => None,
    }
}

/// Time per phase (`prologue`, `forward`, `backward`, `optimizer`,
/// `outside`), summed over the units of each and divided by the steps.
pub(super) fn phases(g: &Graph, s: &Structure) -> BTreeMap<String, PhaseTime> {
    const NAMES: [&str; 5] = ["outside", "prologue", "optimizer", "forward", "backward"];
    let nsteps = s.steps.len().max(1) as f64;
    // Summed by the phase's place in `NAMES` (a unit's phase named and
    // looked up in the map was most of the report's time), each in the
    // order the map summed it.
    let mut sums: [Option<PhaseTime>; NAMES.len()] = Default::default();
    for (u, unit) in s.units.units.iter().enumerate() {
        let phase = match s.roles[u] {
            Role::Outside => 0,
            Role::Prologue { .. } => 1,
            Role::Epilogue { .. } => 2,
            Role::Pass { step, pass, .. } => {
                match s.steps[step as usize].passes[pass as usize].kind {
                    PassKind::Forward => 3,
                    PassKind::Backward => 4,
                }
            }
        };
        let e = sums[phase].get_or_insert_with(PhaseTime::default);
        for &t in unit.cpu() {
            e.cpu_ms += g.task(t).duration_ns as f64 / 1e6 / nsteps;
        }
        for &t in unit.gpu() {
            e.gpu_ms += g.task(t).duration_ns as f64 / 1e6 / nsteps;
        }
    }
    (NAMES.iter().zip(sums))
        .filter_map(|(name, sum)| Some(((*name).to_owned(), sum?)))
        .collect()
}

/// The parallel groups, by process group name and class, with the bytes
/// their collectives move in the first step.
pub(super) fn groups(g: &Graph, s: &Structure) -> Vec<GroupReport> {
    // By (name, class), looked up without making the name: a large
    // trace's collectives repeat a handful of groups.
    let mut slot: FxHashMap<(&str, GroupClass), usize> = FxHashMap::default();
    let mut groups: Vec<GroupReport> = Vec::new();
    let mut nccl = lumos_graph::NcclOperators::of(g);
    for c in &s.comms {
        let name = c.group.as_deref().unwrap_or("-");
        // One taken for a launched collective is classified by that
        // collective's rule: the tie (its own basis) says which collective
        // it is, not why that one's group has its class.
        let basis = (c.taken_for.and_then(|t| s.comm(t))).map_or(c.basis, |l| l.basis);
        let i = *slot.entry((name, c.class)).or_insert_with(|| {
            groups.push(GroupReport {
                name: name.to_owned(),
                class: c.class,
                size: (!c.ranks.is_empty()).then_some(c.ranks.len()),
                tasks: 0,
                collectives: Vec::new(),
                bytes_per_step: 0,
                confidence: c.confidence,
                basis,
            });
            groups.len() - 1
        });
        let e = &mut groups[i];
        e.tasks += 1;
        // One process group is one set of ranks: its strongest evidence
        // classifies it (DDP's bucket all-reduces, found in the gradient
        // hooks, vouch for the broadcast at its start, which only the
        // world group's size tells). Collectives that name no group
        // (`-`) need not share one: each keeps the first's.
        if c.group.is_some() && c.confidence > e.confidence {
            (e.confidence, e.basis) = (c.confidence, basis);
        }
        // An all-to-all by its operator's name, not by the `SendRecv`
        // family of the kernels NCCL runs it as; other names as recorded.
        // One taken for a launched collective is that collective (its own
        // name is the kernel's family: `Generic` for RCCL).
        let named = c.taken_for.unwrap_or(c.task);
        let recorded = &g.collectives[g.task(named).collective.unwrap_or(0) as usize].name;
        let cname = (nccl.collective(named))
            .filter(|n| super::comms::is_all_to_all(n))
            .unwrap_or(recorded);
        if !e.collectives.iter().any(|x| x == cname) {
            e.collectives.push(cname.to_owned());
        }
        // A collective launched before the capture ran for the step
        // before the first, whichever unit its kernel was filed with.
        let in_first_step = c.launched
            && match s.units.unit_of[c.task.idx()] {
                NO_UNIT => false,
                u => matches!(
                    s.roles[u as usize],
                    Role::Prologue { step: 0 }
                        | Role::Pass { step: 0, .. }
                        | Role::Epilogue { step: 0 }
                ),
            };
        if in_first_step {
            e.bytes_per_step += c.bytes.unwrap_or(0);
        }
    }
    // In (name, class) order, as reports list them.
    groups.sort_by(|a, b| (a.name.as_str(), a.class).cmp(&(b.name.as_str(), b.class)));
    groups
}

/// Whether `s` is a single pipeline stage of one micro-batch whose
/// structure is otherwise sound: structural edits that keep its one
/// pipeline stage and its virtual stages are taken
/// (`edits::stage_kept_of_one_micro_batch`), the only forward pass's own
/// work told from the step's prologue by its kind (`lone.rs`).
pub(crate) fn one_stage_of_one_micro_batch(s: &Structure) -> bool {
    s.config.microbatches == Some(1)
        && s.config.pp.unwrap_or(1) <= 1
        && structure_blocked(s).is_none()
}

/// The structural edits a single pipeline stage of one micro-batch takes
/// ([`ONE_STAGE`]).
const ONE_STAGE_EDITS: [&str; 2] = ["layers", "micro-batches"];

/// The verdict on a single pipeline stage of one micro-batch: what it
/// still refuses, and what the edits it takes rest on.
const ONE_STAGE: &str = "1 micro-batch traced: the pipeline and virtual stages cannot change; \
                         layers and micro-batches can, at lower confidence: with no second \
                         forward pass to compare with, the only one's own work is told from the \
                         step's prologue by its kind (data loading, host-to-device copies, the \
                         embedding, the user annotation around the pass), and copied backward \
                         passes leave the gradient reduction to the last";

/// Why the graph cannot be edited structurally (layers, micro-batches,
/// pipeline, virtual stages), if it cannot: the one verdict `lumos
/// inspect` shows (`structural_edits_blocked`) and a prediction refuses
/// structural edits on. The structure's own reasons
/// ([`structure_blocked`]) come first. Then a trace of one micro-batch:
/// the first forward's own work is told from the step's prologue by what
/// precedes every other forward too, and with one micro-batch there is no
/// other. A single pipeline stage is then cut by kind (`lone.rs`) and
/// refused only pipeline and virtual-stage edits ([`ONE_STAGE`]); a stage
/// of a longer pipeline is refused every structural edit: its prologue
/// holds a later stage's first receive, which no pass carries, so nothing
/// couples it to the stage before (docs/PREDICTION.md section 2).
pub(super) fn edits_blocked(s: &Structure) -> Option<String> {
    let traced = match s.config.microbatches {
        Some(m) if m >= 2 => return structure_blocked(s),
        Some(1) => "1 micro-batch traced",
        _ => "no micro-batch (backward pass) found",
    };
    structure_blocked(s).or_else(|| {
        Some(if one_stage_of_one_micro_batch(s) {
            ONE_STAGE.to_owned()
        } else if s.config.microbatches == Some(1) {
            format!(
                "{traced} on a stage of a pipeline of {} stages; structural edits need at least \
                 two there: a later stage's first receive opens its step's prologue, in no pass, \
                 so no copied or rebuilt pass is coupled to the stage before it",
                s.config.pp.unwrap_or(1)
            )
        } else {
            format!(
                "{traced}; they need at least two, to tell the first forward pass's own work \
                 from the step's prologue"
            )
        })
    })
}

/// Why the units found cannot be cut for structural edits (no steps, no
/// layer block, pass counts that differ), if they cannot: what the
/// search inside annotations and the holding of a rank until another
/// stage's layer blocks can be tried go by. A structure that passes may
/// still be refused edits for its one micro-batch ([`edits_blocked`]),
/// which neither of those changes.
pub(super) fn structure_blocked(s: &Structure) -> Option<String> {
    let count = |st: &super::StepStructure, kind: PassKind| {
        st.passes.iter().filter(|p| p.kind == kind).count()
    };
    s.units.inconsistency.clone().or_else(|| {
        if s.steps.is_empty() {
            Some("no ProfilerStep annotations".into())
        } else if !matches!(
            s.layer_method,
            LayerMethod::ScopePattern | LayerMethod::Annotation | LayerMethod::OtherStage
        ) {
            Some("no repeated layer block among the CPU operators".into())
        } else if s.backward_block.is_empty() && s.comms.iter().any(|c| c.p2p.is_some()) {
            Some(
                "no layer block repeats inside a backward pass (one layer per pass): the layer \
                 is told from the job's other pipeline stages, so give every stage's trace"
                    .into(),
            )
        } else if s.steps.iter().all(|st| count(st, PassKind::Backward) == 0)
            && s.steps.iter().any(|st| count(st, PassKind::Forward) > 0)
        {
            Some(
                "forward passes but no backward pass found in any step (an inference trace, or \
                 backward passes discovery did not find): the structural edits re-arrange a \
                 training step's forward and backward passes"
                    .into(),
            )
        } else if let Some((i, st)) = (s.steps.iter().enumerate())
            .find(|(_, st)| count(st, PassKind::Forward) != count(st, PassKind::Backward))
        {
            Some(format!(
                "forward and backward pass counts differ ({} forward, {} backward in step {})",
                count(st, PassKind::Forward),
                count(st, PassKind::Backward),
                i + 1
            ))
        } else {
            None
        }
    })
}
